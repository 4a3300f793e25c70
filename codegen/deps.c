/* deps.c: dependencies between vCTAs. Every pair whose regions overlap, one of them writing, is a
 * hazard: read-after-write within a tensor, and read/write-before-write where the memory plan lets
 * two tensors share bytes. Hazards become edges, and the edges are transitively reduced. */
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "tiling.h"

struct access {
	int v;       /* vCTA */
	int r;       /* index into its reads, or -1 for its write */
};

struct pair {
	int u, v;
	int64_t bytes;
};

struct pairs {
	struct pair *p;
	int64_t n, cap;
};

static void push(struct pairs *ps, int u, int v, int64_t bytes)
{
	if (ps->n == ps->cap) {
		ps->cap = ps->cap ? 2 * ps->cap : 4096;
		ps->p = xrealloc(ps->p, (size_t)ps->cap * sizeof *ps->p);
	}
	ps->p[ps->n++] = (struct pair){u, v, bytes};
}

static const struct region *reg(const struct tiling *s, struct access a)
{
	return a.r < 0 ? &s->v[a.v].write : &s->v[a.v].reads[a.r];
}

/* Elements shared by two regions of one tensor (0 if disjoint). */
static int64_t overlap(const struct region *a, const struct region *b)
{
	int64_t r0 = a->r0 > b->r0 ? a->r0 : b->r0, r1 = a->r1 < b->r1 ? a->r1 : b->r1;
	int64_t c0 = a->c0 > b->c0 ? a->c0 : b->c0, c1 = a->c1 < b->c1 ? a->c1 : b->c1;
	return r0 < r1 && c0 < c1 ? (r1 - r0) * (c1 - c0) : 0;
}

/* Byte span [lo, hi) of a region inside its GPU's arena. */
static void span(const struct tiling *s, const struct region *r, uint64_t *lo, uint64_t *hi)
{
	int64_t cols = s->cols[r->tensor], es = ark_dtype_size(s->g->tensors[r->tensor].dtype);
	*lo = s->offset[r->tensor] + (uint64_t)((r->r0 * cols + r->c0) * es);
	*hi = s->offset[r->tensor] + (uint64_t)(((r->r1 - 1) * cols + r->c1) * es);
}

static int cmp_pair(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;
	if (x->u != y->u)
		return x->u < y->u ? -1 : 1;
	return x->v < y->v ? -1 : x->v > y->v;
}

struct index {
	int64_t *start;      /* per tensor: accesses [start[t], start[t + 1]) */
	struct access *acc;
};

/* Per tensor, its writers (want_write) or readers, in vCTA order. */
static void build_index(const struct tiling *s, int want_write, struct index *ix)
{
	int nt = s->g->n_tensors;
	ix->start = xcalloc((size_t)nt + 1, sizeof *ix->start);
	for (int i = 0; i < s->n_vcta; i++) {
		const struct vcta *v = &s->v[i];
		if (want_write)
			ix->start[v->write.tensor + 1]++;
		else
			for (int r = 0; r < v->n_reads; r++)
				ix->start[v->reads[r].tensor + 1]++;
	}
	for (int t = 0; t < nt; t++)
		ix->start[t + 1] += ix->start[t];
	ix->acc = xmalloc((size_t)ix->start[nt] * sizeof *ix->acc + 1);
	int64_t *fill = xmalloc((size_t)nt * sizeof *fill);
	memcpy(fill, ix->start, (size_t)nt * sizeof *fill);
	for (int i = 0; i < s->n_vcta; i++) {
		const struct vcta *v = &s->v[i];
		if (want_write)
			ix->acc[fill[v->write.tensor]++] = (struct access){i, -1};
		else
			for (int r = 0; r < v->n_reads; r++)
				ix->acc[fill[v->reads[r].tensor]++] = (struct access){i, r};
	}
	free(fill);
}

static void free_index(struct index *ix)
{
	free(ix->start);
	free(ix->acc);
}

/* Hazards inside tensors: every read (and write) against the earlier writes of that tensor. */
static void tensor_hazards(const struct tiling *s, const struct index *wr, const struct index *rd,
			   struct pairs *ps)
{
	int nt = s->g->n_tensors;
	for (int t = 0; t < nt; t++) {
		int64_t es = ark_dtype_size(s->g->tensors[t].dtype);
		for (int64_t j = rd->start[t]; j < rd->start[t + 1]; j++)
			for (int64_t k = wr->start[t]; k < wr->start[t + 1]; k++) {
				struct access a = rd->acc[j], w = wr->acc[k];
				if (w.v >= a.v) {
					/* vCTAs are in a topological order and a tensor is written once: no
					 * write at or after a read may overlap it */
					for (; k < wr->start[t + 1]; k++)
						ARK_ASSERT(!overlap(reg(s, a), reg(s, wr->acc[k])));
					break;
				}
				int64_t n = overlap(reg(s, a), reg(s, w));
				if (n)
					push(ps, w.v, a.v, n * es);
			}
		for (int64_t j = wr->start[t]; j < wr->start[t + 1]; j++)
			for (int64_t k = wr->start[t]; k < j; k++)
				if (overlap(reg(s, wr->acc[j]), reg(s, wr->acc[k])))
					push(ps, wr->acc[k].v, wr->acc[j].v, 0);
	}
}

/* Hazards between tensors that share bytes: every access of the earlier tensor before every write
 * of the later one that touches the same bytes. */
static void reuse_hazards(const struct tiling *s, const struct index *wr, const struct index *rd,
			  struct pairs *ps)
{
	const struct graph *g = s->g;
	int nt = g->n_tensors;
	for (int a = 0; a < nt; a++) {
		if (s->offset[a] == UINT64_MAX || wr->start[a] == wr->start[a + 1])
			continue;
		uint64_t alo = s->offset[a], ahi = alo + tensor_bytes(&g->tensors[a]);
		for (int b = 0; b < nt; b++) {
			if (b == a || s->offset[b] == UINT64_MAX || g->tensors[b].gpu != g->tensors[a].gpu)
				continue;
			uint64_t blo = s->offset[b], bhi = blo + tensor_bytes(&g->tensors[b]);
			if (!(alo < bhi && blo < ahi) || wr->start[b] == wr->start[b + 1])
				continue;
			/* a before b: a's first writer precedes b's first writer. */
			if (wr->acc[wr->start[a]].v >= wr->acc[wr->start[b]].v)
				continue;
			for (int pass = 0; pass < 2; pass++) {
				const struct index *ix = pass ? rd : wr;
				for (int64_t j = ix->start[a]; j < ix->start[a + 1]; j++) {
					uint64_t xl, xh;
					span(s, reg(s, ix->acc[j]), &xl, &xh);
					for (int64_t k = wr->start[b]; k < wr->start[b + 1]; k++) {
						uint64_t yl, yh;
						span(s, reg(s, wr->acc[k]), &yl, &yh);
						if (xl < yh && yl < xh) {
							ARK_ASSERT(ix->acc[j].v < wr->acc[k].v);
							push(ps, ix->acc[j].v, wr->acc[k].v, 0);
						}
					}
				}
			}
		}
	}
}

int deps_build(struct tiling *s)
{
	struct index wr, rd;
	struct pairs ps = {0};
	build_index(s, 1, &wr);
	build_index(s, 0, &rd);
	tensor_hazards(s, &wr, &rd, &ps);
	reuse_hazards(s, &wr, &rd, &ps);
	free_index(&wr);
	free_index(&rd);

	/* Hazards, deduplicated: they are both the edges and what the verifier must see ordered. */
	if (ps.n)
		qsort(ps.p, (size_t)ps.n, sizeof *ps.p, cmp_pair);
	int64_t n = 0;
	for (int64_t i = 0; i < ps.n; i++) {
		if (n && ps.p[n - 1].u == ps.p[i].u && ps.p[n - 1].v == ps.p[i].v)
			ps.p[n - 1].bytes += ps.p[i].bytes;
		else
			ps.p[n++] = ps.p[i];
	}
	s->n_edges = s->n_hazards = n;
	s->xadj = xcalloc((size_t)s->n_vcta + 1, sizeof *s->xadj);
	s->adj = xmalloc((size_t)n * sizeof *s->adj + 1);
	s->ebytes = xmalloc((size_t)n * sizeof *s->ebytes + 1);
	s->hu = xmalloc((size_t)n * sizeof *s->hu + 1);
	s->hv = xmalloc((size_t)n * sizeof *s->hv + 1);
	for (int64_t i = 0; i < n; i++) {
		ARK_ASSERT(ps.p[i].u < ps.p[i].v);
		s->xadj[ps.p[i].u + 1]++;
		s->adj[i] = ps.p[i].v;
		s->ebytes[i] = ps.p[i].bytes;
		s->hu[i] = ps.p[i].u;
		s->hv[i] = ps.p[i].v;
	}
	for (int i = 0; i < s->n_vcta; i++)
		s->xadj[i + 1] += s->xadj[i];
	free(ps.p);

	struct part_dag dag;
	tiling_dag(s, &dag);
	s->keep = xmalloc((size_t)n + 1);
	s->n_kept = part_transitive_reduce(&dag, s->keep);
	return 0;
}
