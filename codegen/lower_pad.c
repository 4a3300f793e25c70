/* lower_pad.c: weights whose rows are not whole 16-byte vectors, laid out with rows padded to whole
 * vectors. A matmul's tiles read b as 16-byte vectors only where its rows start on 16 bytes: with b
 * [N, K] of K = 4049 fp16 elements (8098 bytes) or b [K, N] of odd N, few-row tiles cannot stream b
 * and the tensor cores' tiles shift every vector into place in shared memory (templates/op_matmul.cuh,
 * ark_mm_kloop), 2-3x the time of aligned rows (bench/NOTES.md). A weight is the matmul's to lay out:
 * the runtime writes it into the arena row by row (runtime/session.c), so padding its rows costs
 * nothing per iteration. */
#include <stdlib.h>

#include "ark_model.h"
#include "diag.h"
#include "graph.h"

/* Rows shorter than this many bytes stay packed: their padding would add more than 1/8 of the bytes
 * a tile streams, and such a weight is small. */
#define PAD_MIN_ROW 128

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
		if (T->role != ARK_ROLE_WEIGHT || T->view_of >= 0 || T->ndim < 2 || ark_dtype_quantized(T->dtype) ||
		    only_b[t] != 1)
			continue;
		const int64_t es = ark_dtype_size(T->dtype), cols = T->shape[T->ndim - 1];
		if ((es != 2 && es != 4) || (cols * es) % 16 == 0 || cols * es < PAD_MIN_ROW)
			continue;
		T->pitch = (cols * es + 15) / 16 * 16 / es;
		n++;
	}
	free(only_b);
	return n;
}
