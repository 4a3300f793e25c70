/* streams.h: stream assignment of an op DAG for the multi-stream backends (--backend streams|graph|
 * dynamic): every policy of --stream-policy, the events a program needs, the checker that proves a
 * program orders every dependency, and the prediction of its latency. Pure functions over a DAG. */
#ifndef STREAMS_H
#define STREAMS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The first is the default of --stream-policy. */
#define STREAM_POLICY_LIST(X)                                                                      \
	X(XLA, "xla")             /* producer's stream, or the busiest of several, on the reduction */ \
	X(SINGLE, "single")       /* one stream */                                                   \
	X(WAVEFRONT, "wavefront") /* waves of ready ops, one stream each, a sync between waves */   \
	X(ASAP, "asap")           /* chains along heavy edges share a stream, events on light ones */ \
	X(IOS, "ios")             /* stages by dynamic programming on the cost model */              \
	X(NNC, "nnc")             /* chains of dependent ops by depth rank */

enum stream_policy {
#define X(id, name) SP_##id,
	STREAM_POLICY_LIST(X)
#undef X
	SP__COUNT
};
extern const char *const stream_policy_name[SP__COUNT];

#define STREAMS_MAX 64          /* --streams */
#define STREAMS_DEFAULT 4
/* Costs of the program the simulator adds to the ops' own, from the calibration table (struct
 * part_gpu's fields of the same names; bench/loop_probe measures them). */
struct stream_costs {
	double launch_us;     /* host: one kernel launch issued (cudaLaunchKernel) */
	double kernel_gap_us; /* device: gap between two dependent kernels, or a graph node */
	double event_us;      /* device: more for a dependency across streams (a recorded event) */
	double event_host_us; /* host: one event recorded and waited for, issued */
	double sync_us;       /* host: the wait for the last stream (a stream synchronise) */
	int measured;         /* from a measured calibration table (else typical figures) */
};

/* A DAG whose nodes are numbered in a topological order (u < v on every edge u -> v). */
struct sdag {
	int n;
	const int64_t *xadj; /* successors of v: adj[xadj[v] .. xadj[v + 1]) */
	const int *adj;
	const double *cost_us; /* per node: its time alone on the GPU (may be NULL: all 1) */
	const double *work_us; /* per node: its SM time / SMs, what it takes from ops beside it (NULL: cost) */
	const int *launches;   /* per node: kernel launches (may be NULL: 1 each) */
	struct stream_costs costs;
};

struct sevent {
	int from, to;        /* node `to` waits (on its stream) for node `from`'s record */
};

/* A stream program: nodes issued in `order`, each on stream[v]; events from -> to where a
 * dependency crosses streams and is not implied by stream order and other events. */
struct splan {
	int n, n_streams;    /* n_streams: streams used, numbered 0.. */
	int *order;          /* issue order, a topological order */
	int *stream;         /* per node */
	int n_sync;          /* ordering the policy adds beyond the DAG (the syncs between waves and stages) */
	struct sevent *sync;
	int n_events;
	struct sevent *ev;   /* sorted by the waiter's issue position, then the recorder's */
};

/* Assigns streams with policy p on at most max_streams streams and derives the events. 0, or -1
 * with a message in err (a malformed DAG). The plan is checked (streams_check) before it returns. */
int streams_assign(const struct sdag *d, enum stream_policy p, int max_streams, struct splan *out, char *err,
		   size_t errlen);
/* The events of a plan whose order, stream and sync are set: only where an edge (or a sync) crosses
 * streams and is not already ordered. */
void streams_events(const struct sdag *d, struct splan *pl);
/* Proof that every edge u -> v of d is ordered: by stream order (same stream, u issued first) or a
 * chain of stream order and events (each event recorded before it is waited on); and that the
 * issue order is a topological order. 0, or -1 with the first unordered edge in err. */
int streams_check(const struct sdag *d, const struct splan *pl, char *err, size_t errlen);
/* Predicted latency of one iteration with d->costs: the host issues launches (launch_us each, and
 * event_host_us per event; graph: one launch, the device replays the nodes, kernel_gap_us each), each op
 * starts once issued, after its stream's previous op (kernel_gap_us) and the events it waits on
 * (event_us more), and lasts its cost, stretched while ops run side by side beyond the GPU (their work
 * adds up); then the host's sync. */
double streams_predict(const struct sdag *d, const struct splan *pl, int graph);
void splan_free(struct splan *pl);

#endif
