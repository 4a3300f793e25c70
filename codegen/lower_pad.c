/* lower_pad.c: weights, model inputs that only matmuls read, and activations only matmuls write and
 * read, whose rows are not whole 16-byte vectors, laid out with rows padded to whole vectors. A
 * matmul's tiles read an operand as 16-byte vectors only where its rows start on 16 bytes: with b
 * [N, K] of K = 4049 fp16 elements (8098 bytes) or b [K, N] of odd N, few-row tiles cannot stream b
 * and the tensor cores' tiles shift every vector into place in shared memory
 * (templates/op_matmul.cuh, ark_mm_kloop), 2-3x the time of aligned rows (bench/NOTES.md). A weight
 * or an input is the matmul's to lay out: the runtime spaces its rows out as it copies it into the
 * arena (runtime/session.c, tensor_copy), so padding them costs nothing per iteration. */
#include <stdlib.h>

#include "ark_model.h"
#include "diag.h"
#include "graph.h"
#include "tiling.h"

/* Rows shorter than this many bytes stay packed: their padding would add more than 1/8 of the bytes
 * a tile streams, and such a weight is small. */
#define PAD_MIN_ROW 128

/* Pads T's rows (its last dimension) to whole 16-byte vectors (pitch) where that is worth it: 2- or
 * 4-byte elements, rows not whole vectors, at least PAD_MIN_ROW bytes. Returns whether it did. */
static int pad_rows(struct tensor *T)
{
	const int64_t es = ark_dtype_size(T->dtype), cols = T->ndim ? T->shape[T->ndim - 1] : 0;
	if (T->ndim < 2 || ark_dtype_quantized(T->dtype) || (es != 2 && es != 4) || (cols * es) % 16 == 0 ||
	    cols * es < PAD_MIN_ROW)
		return 0;
	T->pitch = (cols * es + 15) / 16 * 16 / es;
	return 1;
}

int graph_pad_weights(struct graph *g)
{
	/* per tensor, in one pass over the tensors and one over the ops: 1 where only matmuls read it,
	 * as their b (the matmul's templates take b's pitch), and no view aliases it; 0 otherwise */
	int8_t *only_b = xcalloc((size_t)g->n_tensors + 1, 1);
	for (int oi = 0; oi < g->n_ops; oi++) {
		const struct op *o = &g->ops[oi];
		for (int i = 0; i < o->n_in; i++)
			if (only_b[o->in[i]] >= 0)
				only_b[o->in[i]] = o->kind == ARK_OP_MATMUL && i == 1 ? 1 : -1;
	}
	for (int u = 0; u < g->n_tensors; u++)
		if (g->tensors[u].view_of >= 0)
			only_b[g->tensors[u].view_of] = -1;
	int n = 0;
	for (int t = 0; t < g->n_tensors; t++) {
		struct tensor *T = &g->tensors[t];
		if (T->role == ARK_ROLE_WEIGHT && T->view_of < 0 && only_b[t] == 1)
			n += pad_rows(T);
	}
	free(only_b);
	return n;
}

int tiling_pad_activations(struct tiling *s)
{
	struct graph *g = s->g;
	const int nt = g->n_tensors;
	/* per tensor: -1 where some op other than a matmul reads it, or reads it other than as a, or a
	 * view aliases it; else the matmuls reading it as their a */
	int *readers = xcalloc((size_t)nt + 1, sizeof *readers), *writer = xmalloc(((size_t)nt + 1) * sizeof *writer);
	for (int t = 0; t < nt; t++)
		writer[t] = -1;
	for (int oi = 0; oi < g->n_ops; oi++) {
		const struct op *o = &g->ops[oi];
		const struct op_tiling *pl = &s->per_op[oi];
		for (int i = 0; i < o->n_in; i++)
			if (readers[o->in[i]] >= 0)
				readers[o->in[i]] = o->kind == ARK_OP_MATMUL && i == 0 && pl->fused_into < 0 && pl->pre_op < 0
							    ? readers[o->in[i]] + 1
							    : -1;
		/* a matmul's tiles write its out_tensor (its fused activation's output) */
		if (o->kind == ARK_OP_MATMUL && pl->fused_into < 0 && pl->out_tensor >= 0)
			writer[pl->out_tensor] = writer[pl->out_tensor] == -1 ? oi : -2;
	}
	for (int u = 0; u < nt; u++)
		if (g->tensors[u].view_of >= 0)
			readers[g->tensors[u].view_of] = -1;
	int n = 0;
	for (int t = 0; t < nt; t++) {
		struct tensor *T = &g->tensors[t];
		/* a model input too: the runtime spaces its rows out as it copies it in, as a weight's */
		if (((T->role == ARK_ROLE_ACTIVATION && writer[t] >= 0) || T->role == ARK_ROLE_INPUT) && T->view_of < 0 &&
		    readers[t] > 0)
			n += pad_rows(T);
	}
	free(readers);
	free(writer);
	return n;
}
