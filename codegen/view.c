/* view.c: views in the middle of arkgen. A view (graph_check decides which ops are: reshape always,
 * slice, transpose and concat where the layout allows) is a tensor that aliases another's bytes: its
 * base, from its first element on (struct tensor: view_of, view_off). View ops make no vCTA; the
 * regions vCTAs read and write of a view are rewritten here as regions of its base, so that the
 * memory plan sees one tensor and the dependency analysis the base's producers and consumers, and
 * the memory plan then places every view inside its base. A view op that copies (copy = true) is
 * tiled by tile_strided (tile.c). */
#include <string.h>

#include "diag.h"
#include "lower.h"

/* Region r of view t as a region of its base b (t's 2-D view [*, Cv] from element off of b's
 * [*, Cb]): the same box where rows line up, else the box of b that holds the elements r spans
 * (exact for one row or whole rows of t that stay in one row or whole rows of b; a superset, which
 * only adds hazards, otherwise). */
static struct region to_base(const struct tiling *s, const struct region *r)
{
	const struct graph *g = s->g;
	int64_t off;
	int b = graph_view_base(g, r->tensor, &off);
	int64_t Cv = s->cols[r->tensor], Cb = s->cols[b];
	if (Cv == Cb && off % Cb == 0)
		return (struct region){b, r->r0 + off / Cb, r->r1 + off / Cb, r->c0, r->c1};
	int64_t lo = off + r->r0 * Cv + r->c0, hi = off + (r->r1 - 1) * Cv + r->c1; /* elements [lo, hi) */
	int64_t rb0 = lo / Cb, rb1 = (hi + Cb - 1) / Cb;
	if (rb1 - rb0 == 1)
		return (struct region){b, rb0, rb1, lo - rb0 * Cb, hi - rb0 * Cb};
	if (lo % Cb == 0 && hi % Cb == 0 && (r->r1 - r->r0 == 1 || (r->c0 == 0 && r->c1 == Cv)))
		return (struct region){b, rb0, rb1, 0, Cb}; /* whole rows of b, exactly */
	return (struct region){b, rb0, rb1, 0, Cb};
}

void view_regions(struct tiling *s)
{
	const struct graph *g = s->g;
	for (int i = 0; i < s->n_vcta; i++) {
		struct vcta *v = &s->v[i];
		for (int k = 0; k < v->n_reads; k++)
			if (g->tensors[v->reads[k].tensor].view_of >= 0)
				v->reads[k] = to_base(s, &v->reads[k]);
		if (g->tensors[v->write.tensor].view_of >= 0)
			v->write = to_base(s, &v->write);
	}
}

void view_offsets(struct tiling *s)
{
	const struct graph *g = s->g;
	for (int t = 0; t < g->n_tensors; t++) {
		int64_t off;
		int b = graph_view_base(g, t, &off);
		if (b == t)
			continue;
		ARK_ASSERT(s->offset[b] != UINT64_MAX);
		s->offset[t] = s->offset[b] + (uint64_t)off * (uint64_t)ark_dtype_size(g->tensors[t].dtype);
	}
}

int view_copy_params(const struct graph *g, const struct op *o, int part, int64_t oshape[4], int64_t ist[2][4],
		     int64_t *k, int64_t *at)
{
	const struct tensor *T = &g->tensors[o->out[0]];
	const struct tensor *X = &g->tensors[o->in[o->kind == ARK_OP_CONCAT ? part : 0]];
	int64_t xs[ARK_MAX_DIMS], os[ARK_MAX_DIMS], n = 1;
	for (int d = X->ndim - 1; d >= 0; d--)
		xs[d] = n, n *= X->shape[d];
	n = 1;
	for (int d = T->ndim - 1; d >= 0; d--)
		os[d] = n, n *= T->shape[d];
	memset(oshape, 0, 4 * sizeof *oshape);
	memset(ist, 0, 2 * sizeof *ist);
	*k = 0, *at = 0;
	if (o->kind == ARK_OP_CONCAT) { /* input part's own index space, placed in out */
		for (int j = 0; j < part; j++)
			*at += g->tensors[o->in[j]].shape[o->axis] * os[o->axis];
		for (int d = 0; d < X->ndim; d++)
			oshape[d] = X->shape[d], ist[0][d] = xs[d], ist[1][d] = os[d];
		return X->ndim;
	}
	for (int d = 0; d < T->ndim; d++)
		oshape[d] = T->shape[d], ist[0][d] = xs[d];
	if (o->kind == ARK_OP_TRANSPOSE) {
		ist[0][o->dims[0]] = xs[o->dims[1]];
		ist[0][o->dims[1]] = xs[o->dims[0]];
	} else {
		ARK_ASSERT(o->kind == ARK_OP_SLICE);
		*k = o->start * xs[o->axis];
	}
	return T->ndim;
}

int view_copy_unit(const struct graph *g, const struct op *o, int part)
{
	int64_t sh[4], ist[2][4], k, at, xoff, ooff;
	const int nd = view_copy_params(g, o, part, sh, ist, &k, &at);
	const int x = o->in[o->kind == ARK_OP_CONCAT ? part : 0];
	graph_view_base(g, x, &xoff);
	graph_view_base(g, o->out[0], &ooff);
	const int64_t es = ark_dtype_size(g->tensors[o->out[0]].dtype);
	if (ist[0][nd - 1] != 1 || (ist[1][nd - 1] != 0 && ist[1][nd - 1] != 1))
		return 1; /* the last dimension moves: element by element */
	for (int w = (int)(16 / es); w > 1; w /= 2) {
		int ok = sh[nd - 1] % w == 0 && (xoff + k) % w == 0 && (ooff + at) % w == 0;
		for (int d = 0; d < nd - 1; d++)
			ok &= sh[d] == 1 || (ist[0][d] % w == 0 && ist[1][d] % w == 0);
		if (ok)
			return w;
	}
	return 1;
}

int view_copy_boxed(const struct graph *g, const struct op *o)
{
	const struct tensor *T = &g->tensors[o->out[0]];
	const int nd = T->ndim;
	return o->kind == ARK_OP_TRANSPOSE && nd >= 2 && ark_dtype_size(T->dtype) <= 4 &&
	       ((o->dims[0] == nd - 2 && o->dims[1] == nd - 1) || (o->dims[0] == nd - 1 && o->dims[1] == nd - 2));
}
