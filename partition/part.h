/* part.h: placement and ordering of a weighted DAG on K SMs, its verifier and its latency simulator.
 * This module sees a DAG in CSR form, never ops. */
#ifndef PART_H
#define PART_H

#include <stdint.h>
#include <stdio.h>

/* A DAG whose vertices are numbered in a topological order: every edge u -> v has u < v. */
struct part_dag {
	int n;
	const int64_t *xadj;   /* successors of v: adj[xadj[v] .. xadj[v + 1]), ascending */
	const int *adj;
	const int64_t *ebytes; /* bytes carried by each edge (may be NULL: all 1) */
	const double *flops;   /* per vertex: arithmetic */
	const double *bytes;   /* per vertex: bytes moved to or from device memory */
	const uint8_t *tc;     /* per vertex: 1 if the arithmetic runs on tensor cores (may be NULL) */
	const double *lat_us;  /* per vertex: latency floor of its arithmetic, us, e.g. a chain of dependent
				* steps, whatever its size (may be NULL: none) */
	const int *group;      /* per vertex: vertices of one group (one op) may share a counter (may be NULL) */
	const double *sm_gbps; /* per vertex: the most device-memory bandwidth its SM pulls alone, GB/s, where
				* it is not the GPU's sm_gbps (a calibrated tile's: its bytes take its time
				* alone), 0: the GPU's (may be NULL: all the GPU's) */
};

/* The machine the simulator models (figures from DESIGN.md by default). */
struct part_gpu {
	int sms;
	double dram_gbps;      /* whole-GPU device memory bandwidth, GB/s */
	double sm_gbps;        /* most one SM can pull alone, GB/s */
	double tc_tflops;      /* whole-GPU tensor-core rate (bf16/fp16, fp32 accumulate), TFLOP/s */
	double fp32_tflops;    /* whole-GPU CUDA-core fp32 rate, TFLOP/s */
	double hop_us;         /* store -> flag -> load between SMs (half the measured round trip) */
	double task_us;        /* fixed cost of dispatching one task on an SM */
	double doorbell_us;    /* host doorbell -> loop kernel -> host round trip */
	double barrier_us;     /* one grid-wide barrier (for --sync barrier) */
	/* the one-kernel-per-op backends (codegen/streams.c) */
	double launch_us;      /* host: one kernel launch issued (cudaLaunchKernel) */
	double kernel_gap_us;  /* device: from a kernel's end to the next dependent kernel's start, or a graph node */
	double event_us;       /* device: more for a dependency across streams (an event) */
	double event_host_us;  /* host: one cudaEventRecord + cudaStreamWaitEvent issued */
	double sync_us;        /* host: a stream synchronise after the last kernel ends */
	int launch_measured;   /* the five above come from a measured table, not the defaults */
};
void part_gpu_default(struct part_gpu *g, int sms); /* H100/H200 figures */

enum part_policy { PART_METIS, PART_ROUNDROBIN, PART_WAVEFRONT, PART_CRITICAL, PART__COUNT };
extern const char *const part_policy_name[PART__COUNT];
int part_policy_parse(const char *s); /* -1 if unknown */

/* Where every vertex runs: sm[v] in 0..sms-1 and its position on that SM's list; the lists
 * themselves as CSR: SM s runs list[begin[s] .. begin[s + 1]) in order. */
struct part_placement {
	int sms;
	int *sm, *pos;
	int *begin, *list;
};
/* Places dag on gpu->sms SMs with a policy. Deterministic. 0, or -1 with a message in err. */
int part_place(const struct part_dag *dag, const struct part_gpu *gpu, enum part_policy policy,
	       struct part_placement *pl, char *err, size_t errlen);
void part_placement_free(struct part_placement *pl);

/* Exact transitive reduction: keep[e] = 1 for each edge (index into adj) not implied by a longer
 * path. Returns the number of edges kept. */
int64_t part_transitive_reduce(const struct part_dag *dag, uint8_t *keep);

/* Edges still needed at run time once a placement is known: an edge u -> v is dropped when u is
 * ordered before v anyway (program order on one SM, or another kept edge). need[e] = 1 for kept. */
int64_t part_needed_waits(const struct part_dag *dag, const struct part_placement *pl, uint8_t *need);

/* Verifier. Every hazard (hu[i], hv[i]) must be ordered: a path of edges (only those with
 * keep[e] != 0, or all edges if keep is NULL) and program-order steps from hu to hv; and the
 * per-SM lists together with the edges must be acyclic (no deadlock). 0 if proven; otherwise -1 and
 * a description of the first violation in err. */
int part_verify(const struct part_dag *dag, const uint8_t *keep, const struct part_placement *pl,
		int64_t n_hazards, const int *hu, const int *hv, char *err, size_t errlen);

/* Simulator: discrete-event run of the per-SM lists under the cost model. */
struct part_sim {
	double latency_us;     /* predicted iteration latency, doorbell included */
	double critical_us;    /* longest path through the DAG by cost alone */
	double utilisation;    /* busy SM time / (sms * latency) */
	double compute_us, memory_us, hop_us, wait_us; /* sums over vertices on the critical chain */
	int critical_len;      /* vertices on the critical chain */
	double dispatch_us;    /* task_us summed over the critical chain: compute + memory + hop + wait +
	                        * dispatch = latency_us - doorbell_us */
};
int part_simulate(const struct part_dag *dag, const uint8_t *keep, const struct part_placement *pl,
		  const struct part_gpu *gpu, int barrier_sync, struct part_sim *out);


/* ---- helpers shared by the files of this module, usable by callers too ---------------------- */

/* 0 if dag is well formed (n >= 0, xadj monotone from 0, 0 <= u < v < n for every edge u -> v,
 * successors strictly ascending, costs finite and >= 0); otherwise -1 and a message. */
int part_check_dag(const struct part_dag *dag, char *err, size_t errlen);
/* 0 if pl places every vertex of dag exactly once with sm/pos matching the lists; else -1. */
int part_check_placement(const struct part_dag *dag, const struct part_placement *pl, char *err,
			 size_t errlen);
/* Dependency level of every vertex (longest path from a source, in edges; sources are level 0).
 * level: n ints. Returns the number of levels (0 for an empty DAG), -1 if dag is malformed. */
int part_levels(const struct part_dag *dag, int *level);
/* Duration of vertex v on one SM offered gbps of device-memory bandwidth (the device's share, which
 * the SM's own limit, gpu->sm_gbps or dag->sm_gbps[v], caps): task_us + max(compute, memory) in
 * microseconds. */
double part_vertex_us(const struct part_dag *dag, const struct part_gpu *gpu, int v, double gbps);
/* The most device-memory bandwidth vertex v's SM pulls alone, GB/s. */
double part_sm_gbps(const struct part_dag *dag, const struct part_gpu *gpu, int v);
/* Predecessors as CSR: the predecessors of v are padj[pxadj[v] .. pxadj[v + 1]), ascending, and
 * peid[k] is the index into dag->adj of edge padj[k] -> v (peid may be NULL). Arrays are malloc'd;
 * 0, or -1 when out of memory. */
int part_preds(const struct part_dag *dag, int64_t **pxadj, int **padj, int64_t **peid);
/* Vertices in an order consistent with the edges (only those with keep[e] != 0 when keep is given)
 * and with every SM's list. Returns how many vertices it could order: fewer than n means the union has
 * a cycle, i.e. the placement deadlocks; indeg[v] is then the number of v's unresolved waits.
 * order, indeg: n ints. */
int part_hb_order(const struct part_dag *dag, const uint8_t *keep, const struct part_placement *pl,
		  int *order, int *indeg);

/* Vector clocks (lanes words each) held only while some vertex still has to read them: ref[v] is
 * the number of reads of v's clock still to come (its successor on its SM, its successors through
 * edges), set by the caller; part_clock_release drops one and frees the clock at the last. Memory:
 * the most clocks alive at once (peak) times lanes words, instead of every vertex's (part_clock.c). */
struct part_clocks {
	int lanes;
	int32_t *pool;      /* cap clocks of lanes words */
	int cap, live, peak;
	int *free_list;     /* n_free free slots of the pool */
	int n_free;
	int *slot;          /* per vertex: its clock's slot, -1 none */
	int *ref;           /* per vertex: reads of its clock still to come */
};
int part_clocks_init(struct part_clocks *c, int n, int lanes);      /* 0, or -1 out of memory */
int32_t *part_clock_new(struct part_clocks *c, int v);             /* v's clock (uninitialised), NULL: out of memory; moves the others */
const int32_t *part_clock(const struct part_clocks *c, int v);
void part_clock_release(struct part_clocks *c, int v);             /* one read of v's clock done */
void part_clocks_free(struct part_clocks *c);
/* ref[v] for part_clocks: v's successor on its SM, plus its successors through edges kept (every
 * edge when keep is NULL). */
void part_clock_refs(const struct part_dag *dag, const uint8_t *keep, const struct part_placement *pl, int *ref);

/* Writes a printf-style message into err (when err and errlen are set) and returns -1. */
int part_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Always-on check of internal invariants (never of user input). */
#define PART_ASSERT(c) ((c) ? (void)0 : part_assert_fail(#c, __FILE__, __LINE__))
_Noreturn void part_assert_fail(const char *what, const char *file, int line);

#endif
