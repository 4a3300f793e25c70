/* ark_dynamic.h: the decisions of the dynamic backend (GrCUDA's dynamic DAG), without CUDA, so that the
 * CPU tests run them: for each op as it is issued, its dependencies on the earlier ops of the
 * iteration (conflicting arena bytes), the stream it goes to and the events it must wait on. */
#ifndef ARK_DYNAMIC_H
#define ARK_DYNAMIC_H

#include "ark_streams.h"

struct ark_dyn {
	int n, S;          /* nodes of the program, streams of the pool */
	int *tail;         /* per stream: node issued last in this iteration, -1 */
	int *slen;         /* per stream: nodes issued on it in this iteration */
	int *node_stream;  /* per node issued: its stream */
	int *spos;         /* per node issued: its position on its stream */
	int *clock;        /* per node issued: [S] the last position on every stream ordered before it ends */
};

/* 0, or ARK_ERR (out of memory). */
int ark_dyn_init(struct ark_dyn *d, int n_nodes, int n_streams);
void ark_dyn_free(struct ark_dyn *d);
/* A new iteration: every stream empty. */
void ark_dyn_begin(struct ark_dyn *d);
/* Whether nodes a and b of p touch overlapping bytes, one of them writing. */
int ark_dyn_conflict(const struct ark_streams *p, int a, int b);
/* Node i, issued after nodes 0 .. i - 1 of this iteration: its stream (a parent's whose last node it
 * is; else an empty stream; else one whose last node has finished, idle(ctx, node) says; else the one
 * whose last node is the oldest) into *stream, and the earlier nodes it must wait for on other
 * streams, not implied by stream order and the waits before, into waits[] (at most i). Returns how
 * many waits. */
int ark_dyn_issue(struct ark_dyn *d, const struct ark_streams *p, int i, int (*idle)(void *ctx, int node), void *ctx,
		  int *stream, int *waits);

#endif
