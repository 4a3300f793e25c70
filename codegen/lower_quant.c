/* lower_quant.c: a matmul whose b is block-quantized (q4_1, q8_0) and whose a has more than
 * ARK_MM_SMALL_M rows, rewritten as a dequantize of b into an activation of a's dtype and the
 * ordinary matmul reading it (the tensor-core path), before tiling. */
#include <string.h>

#include "ark_model.h"
#include "ark_smem.h" /* ARK_MM_SMALL_M */
#include "diag.h"
#include "graph.h"

/* A name for the new op and tensor, `<matmul>.b_dequant`, made unique against both name spaces
 * (`.b_dequant2`, ... where a model already uses it). */
static char *fresh_name(const struct graph *g, const char *op)
{
	size_t n = strlen(op) + 32;
	char *s = xmalloc(n);
	snprintf(s, n, "%s.b_dequant", op);
	for (int k = 2; graph_find_tensor(g, s) >= 0 || graph_find_op(g, s) >= 0; k++)
		snprintf(s, n, "%s.b_dequant%d", op, k);
	return s;
}

/* Matmul oi reads b through a new activation [N, K] of a's dtype that a new dequantize op, placed
 * right before it in g->order, computes from b (b keeps its number of readers: one for another). */
static void split_matmul(struct graph *g, int oi, int at)
{
	const struct op *mm = &g->ops[oi];
	const int b = mm->in[1], a = mm->in[0];
	char *name = fresh_name(g, mm->name);

	int t = g->n_tensors;
	g->tensors = xrealloc(g->tensors, (size_t)(t + 1) * sizeof *g->tensors);
	struct tensor *T = &g->tensors[t];
	memset(T, 0, sizeof *T);
	T->name = name;
	T->line = mm->line;
	T->file = mm->file;
	T->ndim = g->tensors[b].ndim;
	memcpy(T->shape, g->tensors[b].shape, sizeof T->shape);
	T->dtype = g->tensors[a].dtype;
	T->role = ARK_ROLE_ACTIVATION;
	T->gpu = mm->gpu;
	T->producer = g->n_ops;
	T->n_readers = 1;
	T->view_of = -1;
	g->n_tensors++;

	int d = g->n_ops;
	g->ops = xrealloc(g->ops, (size_t)(d + 1) * sizeof *g->ops);
	mm = &g->ops[oi];
	struct op *D = &g->ops[d];
	memset(D, 0, sizeof *D);
	D->name = xstrdup(name);
	D->line = mm->line;
	D->file = mm->file;
	D->kind = ARK_OP_DEQUANTIZE;
	D->gpu = mm->gpu;
	D->n_in = 1, D->in[0] = b;
	D->n_out = 1, D->out[0] = t;
	g->n_ops++;
	g->ops[oi].in[1] = t; /* b's readers: one less (the matmul), one more (the dequantize) */

	g->order = xrealloc(g->order, sizeof(int) * (size_t)(g->n_ops + 1));
	memmove(&g->order[at + 1], &g->order[at], sizeof(int) * (size_t)(g->n_ops - 1 - at));
	g->order[at] = d;
}

/* The activation an earlier dequantize of this pass (op index from first on) made of weight b in
 * dtype dt, or -1. */
static int made_before(const struct graph *g, int first, int b, enum ark_dtype dt)
{
	for (int d = first; d < g->n_ops; d++)
		if (g->ops[d].in[0] == b && g->tensors[g->ops[d].out[0]].dtype == dt)
			return g->ops[d].out[0];
	return -1;
}

int graph_lower_quant(struct graph *g)
{
	const int first = g->n_ops; /* the dequantize ops this pass adds */
	for (int k = 0; k < g->n_ops; k++) {
		const int oi = g->order[k];
		struct op *o = &g->ops[oi];
		if (o->kind != ARK_OP_MATMUL || !ark_dtype_quantized(g->tensors[o->in[1]].dtype))
			continue;
		const struct tensor *a = &g->tensors[o->in[0]];
		if (tensor_elems(a) / (uint64_t)a->shape[a->ndim - 1] <= ARK_MM_SMALL_M)
			continue; /* batch-1 decoding: b streamed and dequantised inside the matmul's tiles */
		/* a weight that several such matmuls read in one dtype is dequantised once, before the first */
		const int t = made_before(g, first, o->in[1], a->dtype);
		if (t >= 0) {
			g->tensors[o->in[1]].n_readers--;
			g->tensors[t].n_readers++;
			o->in[1] = t;
			continue;
		}
		split_matmul(g, oi, k);
		k++; /* the matmul, now after its dequantize */
	}
	return 0;
}
