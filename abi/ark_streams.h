/* ark_streams.h: the stream program of a model generated with arkgen --backend streams|graph|dynamic:
 * one kernel launch per dependency level of an op's vCTAs (its tasks as the kernel's CTAs), the
 * stream of every op and the events between streams. Emitted as data, read by runtime/streams.c.
 * Plain C, host and device. */
#ifndef ARK_STREAMS_H
#define ARK_STREAMS_H

#include <stdint.h>

/* Backends of arkgen --backend (ARK_BACKEND_LOOP files have no stream program). */
#define ARK_BACKEND_LIST(X)                                                                       \
	X(LOOP, "loop")       /* one persistent loop kernel, counters between SMs (the default) */ \
	X(STREAMS, "streams") /* one kernel per op on CUDA streams, events between them */         \
	X(GRAPH, "graph")     /* the streams program captured once into a CUDA graph, replayed */  \
	X(DYNAMIC, "dynamic") /* the DAG built at issue time from the bytes each op reads/writes */

enum ark_backend {
#define X(id, name) ARK_BACKEND_##id,
	ARK_BACKEND_LIST(X)
#undef X
	ARK_BACKEND__COUNT
};

/* One kernel launch: CTA i runs task task_index[first + i] of the model's task table (GPU 0's). */
struct ark_slaunch {
	uint32_t first, n;
};

/* One node of the program: an op (with the ops fused into it), in issue order. Its launches run one
 * after the other on its stream; before the first, the stream waits on the events
 * waits[wait0 .. wait0 + n_wait); after the last it records event `record` (-1: none). Its bytes
 * (dynamic backend): ranges[range0 .. range0 + n_range) of the arena. */
struct ark_snode {
	uint32_t launch0, n_launch;
	uint32_t wait0, n_wait;
	uint32_t range0, n_range;
	uint16_t op;       /* index into the model's ops */
	uint16_t stream;
	int32_t record;
};

/* Bytes [off, off + bytes) of the arena that a node reads (write 0) or writes (write 1). */
struct ark_srange {
	uint64_t off, bytes;
	uint32_t write;
	uint32_t pad_;
};

/* Arguments of every op kernel: the tables in device memory. */
struct ark_op_args {
	char *arena;
	const struct ark_task *tasks;
	const uint32_t *task_index;
	const struct ark_opp *opp;
	unsigned long long *trace; /* [n_tasks][2] start, end (%globaltimer ns), or NULL */
};

struct ark_streams {
	int backend;         /* enum ark_backend */
	const char *policy;  /* the stream policy's name */
	int n_streams;       /* streams the program uses (dynamic: the pool) */
	int n_events;        /* events recorded per iteration (the nodes with record >= 0) */
	int n_nodes;
	const struct ark_snode *nodes;
	int n_launches;
	const struct ark_slaunch *launches;
	int n_task_index;
	const uint32_t *task_index;
	int n_waits;
	const uint32_t *waits; /* event indices */
	int n_ranges;
	const struct ark_srange *ranges;
	double predicted_us;
	/* defined by templates/ark_streams.cuh in the generated file */
	int (*prepare)(void);  /* kernel attributes, once per device: 0 or a cudaError_t */
	int (*launch)(const struct ark_slaunch *l, int smem, const struct ark_op_args *a, void *stream);
	int (*tmpl_smem)(int tmpl); /* dynamic shared memory template tmpl needs */
};

#endif
