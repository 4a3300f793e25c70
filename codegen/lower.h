/* lower.h: what the passes that lower ops to vCTAs share (fuse.c, tile.c, lower_comm.c): the lowering
 * functions the tiler's table names, the fusion facts the tilers ask for, and integer helpers. */
#ifndef LOWER_H
#define LOWER_H

#include "tiling.h"

static inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

/* Bytes of one element of tensor t. */
static inline int64_t esize(const struct tiling *s, int t) { return ark_dtype_size(s->g->tensors[t].dtype); }

/* fuse.c: the op reading tensor t when it is an activation that can run on t where t is computed
 * (t's only reader, on t's GPU, same dtype, t no output); else -1. */
int fuse_sole_activation(const struct graph *g, int t);
/* fuse.c: whether ops of kind k (softmax and the norms) take an activation after them in their tiles. */
int fuse_row_op(enum ark_op_kind k);
/* fuse.c: the distinct tensors the chain headed by `head` reads, into reads[VCTA_MAX_READS]; their number. */
int fuse_chain_reads(const struct tiling *s, int head, int *reads);
/* fuse.c: whether out's element e reads element (e / div) % mod of tensor I broadcast to T's shape:
 * I's dimensions, right-aligned on T's, are 1 (or absent) along T's last dimensions, then T's own,
 * then 1 again (a row repeated: bias, per-channel scale; a column; a tensor of T's trailing
 * dimensions; the same shape). The one broadcast a chain step takes: the chain template reads the
 * same runs from the strides (templates/op_elementwise.cuh, ark_chain_repeat). */
int fuse_chain_repeats(const struct tensor *I, const struct tensor *T);

/* lower_comm.c: communication ops to communication vCTAs. lower_copy: a copy from another GPU. */
void lower_copy(struct tiling *s, int oi);
void lower_all_reduce(struct tiling *s, int oi);
void lower_all_gather(struct tiling *s, int oi);

#endif
