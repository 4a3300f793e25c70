/* part_reduce.c: exact transitive reduction of the DAG, and the waits a placement still needs. */
#include "partition/part.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK_BITS 4096                    /* targets per pass: reach sets are n x 512 bytes */
#define CHUNK_MEM ((size_t)64 << 20)       /* at most this much for the reach sets */

/* Makes words [a, b] part of the live range [*rlo, *rhi] of a reach set, zeroing the words added. */
static void widen(uint64_t *r, int *rlo, int *rhi, int a, int b)
{
	if (*rhi < *rlo) {
		for (int j = a; j <= b; j++)
			r[j] = 0;
		*rlo = a, *rhi = b;
		return;
	}
	for (int j = a; j < *rlo; j++)
		r[j] = 0;
	for (int j = *rhi + 1; j <= b; j++)
		r[j] = 0;
	if (a < *rlo)
		*rlo = a;
	if (b > *rhi)
		*rhi = b;
}

/* Edge u -> w is implied by a longer path iff w is reachable from another successor of u; such a
 * successor precedes w, so scanning the successors of u in ascending order and collecting their reach
 * sets decides every edge of u on the way: w already collected = redundant. Reach sets are bitsets over
 * a chunk of target vertices [c0, c1); one pass per chunk, over the vertices from which an edge into
 * the chunk starts and their descendants below c1. An edge found redundant in an earlier chunk adds
 * nothing (its reach is inside an earlier sibling's), so it is skipped in later chunks. */
int64_t part_transitive_reduce(const struct part_dag *dag, uint8_t *keep)
{
	if (part_check_dag(dag, NULL, 0) < 0)
		return -1;
	int n = dag->n;
	int64_t m = n > 0 ? dag->xadj[n] : 0;
	if (m == 0)
		return 0;
	size_t wbits = CHUNK_BITS;
	while (wbits > 64 && (size_t)n * (wbits / 8) > CHUNK_MEM)
		wbits /= 2;
	int words = (int)(wbits / 64);
	uint64_t *bits = malloc((size_t)n * words * sizeof *bits); /* (n, words): reach of u in chunk */
	int *lo = malloc((size_t)n * sizeof *lo), *hi = malloc((size_t)n * sizeof *hi);
	uint8_t *needed = calloc((size_t)n, 1);
	int64_t *px = NULL;
	int *pa = NULL;
	int64_t kept = -1;
	if (!bits || !lo || !hi || !needed || part_preds(dag, &px, &pa, NULL) < 0)
		goto out;
	memset(keep, 1, (size_t)m);
	for (int c0 = 0; c0 < n; c0 += (int)wbits) {
		int c1 = c0 + (int)wbits < n ? c0 + (int)wbits : n;
		int umin = c1;
		for (int v = c0; v < c1; v++)
			for (int64_t i = px[v]; i < px[v + 1]; i++) {
				needed[pa[i]] = 1;
				if (pa[i] < umin)
					umin = pa[i];
			}
		for (int u = umin; u < c1; u++) {
			if (!needed[u])
				continue;
			for (int64_t e = dag->xadj[u]; e < dag->xadj[u + 1] && dag->adj[e] < c1; e++)
				needed[dag->adj[e]] = 1;
		}
		for (int u = c1 - 1; u >= umin; u--) {
			if (!needed[u])
				continue;
			uint64_t *r = bits + (size_t)u * words;
			int rlo = words, rhi = -1;
			for (int64_t e = dag->xadj[u]; e < dag->xadj[u + 1]; e++) {
				int w = dag->adj[e];
				if (w >= c1)
					break;
				if (!keep[e])
					continue;
				if (w >= c0) {
					int b = w - c0, k = b / 64;
					uint64_t bit = (uint64_t)1 << (b % 64);
					if (k >= rlo && k <= rhi && (r[k] & bit)) {
						keep[e] = 0;
						continue;
					}
					widen(r, &rlo, &rhi, k, k);
					r[k] |= bit;
				}
				PART_ASSERT(needed[w]);
				if (lo[w] > hi[w])
					continue;
				const uint64_t *src = bits + (size_t)w * words;
				widen(r, &rlo, &rhi, lo[w], hi[w]);
				for (int j = lo[w]; j <= hi[w]; j++)
					r[j] |= src[j];
			}
			lo[u] = rlo, hi[u] = rhi;
		}
		for (int u = umin; u < c1; u++)
			needed[u] = 0;
	}
	kept = 0;
	for (int64_t e = 0; e < m; e++)
		kept += keep[e];
out:
	free(bits), free(lo), free(hi), free(needed), free(px), free(pa);
	return kept;
}

/* ---- waits needed once the placement is known ------------------------------------------------------ */

struct pitem {
	int ord;     /* position of the predecessor in the processing order */
	int u;
	int64_t e;   /* edge index, or -1 for the program-order predecessor */
};

static int pitem_cmp(const void *a, const void *b)
{
	const struct pitem *x = a, *y = b;
	if (x->ord != y->ord)
		return x->ord > y->ord ? -1 : 1;  /* latest first */
	return (x->e >= 0) - (y->e >= 0);         /* program order before an edge from the same vertex */
}

/* Kahn's algorithm on the union of the edges and the program order of every SM's list. */
int part_hb_order(const struct part_dag *dag, const uint8_t *keep, const struct part_placement *pl,
		  int *order, int *indeg)
{
	int n = dag->n, head = 0, tail = 0;
	for (int v = 0; v < n; v++)
		indeg[v] = pl->pos[v] > 0;
	for (int64_t e = 0; e < (n > 0 ? dag->xadj[n] : 0); e++)
		if (!keep || keep[e])
			indeg[dag->adj[e]]++;
	for (int v = 0; v < n; v++)
		if (indeg[v] == 0)
			order[tail++] = v;
	while (head < tail) {
		int u = order[head++], s = pl->sm[u];
		for (int64_t e = dag->xadj[u]; e < dag->xadj[u + 1]; e++)
			if ((!keep || keep[e]) && --indeg[dag->adj[e]] == 0)
				order[tail++] = dag->adj[e];
		int k = pl->begin[s] + pl->pos[u] + 1;
		if (k < pl->begin[s + 1] && --indeg[pl->list[k]] == 0)
			order[tail++] = pl->list[k];
	}
	return tail;
}

/* Vector clocks: vc[v][s] = the highest position on SM s that happens before or at v. An edge u -> v
 * is needed iff u does not happen before another immediate predecessor of v (edge or program order).
 * Predecessors are visited latest first: any w that u happens before comes later in the processing
 * order, so u is redundant iff the clock accumulated so far already covers (sm(u), pos(u)). */
int64_t part_needed_waits(const struct part_dag *dag, const struct part_placement *pl, uint8_t *need)
{
	if (part_check_dag(dag, NULL, 0) < 0 || part_check_placement(dag, pl, NULL, 0) < 0)
		return -1;
	int n = dag->n, sms = pl->sms;
	int64_t kept = -1;
	int *order = malloc(((size_t)n + 1) * sizeof *order), *rank = malloc(((size_t)n + 1) * sizeof *rank);
	int *indeg = malloc(((size_t)n + 1) * sizeof *indeg);
	int64_t *px = NULL, *pe = NULL;
	int *pa = NULL;
	struct pitem *it = NULL;
	struct part_clocks c; /* each clock until its last reader: memory for the vertices in flight only */
	int have_clocks = part_clocks_init(&c, n, sms) == 0;
	if (!order || !rank || !indeg || !have_clocks || part_preds(dag, &px, &pa, &pe) < 0)
		goto out;
	if (part_hb_order(dag, NULL, pl, order, indeg) < n)
		goto out;
	int64_t maxin = 0;
	for (int v = 0; v < n; v++)
		if (px[v + 1] - px[v] > maxin)
			maxin = px[v + 1] - px[v];
	it = malloc((size_t)(maxin + 1) * sizeof *it);
	if (!it)
		goto out;
	for (int k = 0; k < n; k++)
		rank[order[k]] = k;
	part_clock_refs(dag, NULL, pl, c.ref);
	int64_t count = 0;
	for (int k = 0; k < n; k++) {
		int v = order[k], s = pl->sm[v], ni = 0;
		int32_t *acc = part_clock_new(&c, v);
		if (!acc)
			goto out;
		for (int q = 0; q < sms; q++)
			acc[q] = -1;
		if (pl->pos[v] > 0) {
			int p = pl->list[pl->begin[s] + pl->pos[v] - 1];
			it[ni++] = (struct pitem){ rank[p], p, -1 };
		}
		for (int64_t i = px[v]; i < px[v + 1]; i++)
			it[ni++] = (struct pitem){ rank[pa[i]], pa[i], pe[i] };
		qsort(it, (size_t)ni, sizeof *it, pitem_cmp);
		for (int i = 0; i < ni; i++) {
			int u = it[i].u;
			int covered = acc[pl->sm[u]] >= pl->pos[u];
			if (it[i].e >= 0) {
				need[it[i].e] = !covered;
				count += !covered;
			}
			if (!covered) {
				const int32_t *src = part_clock(&c, u);
				for (int q = 0; q < sms; q++)
					acc[q] = src[q] > acc[q] ? src[q] : acc[q];
			}
			part_clock_release(&c, u);
		}
		acc[s] = pl->pos[v];
		if (!c.ref[v])
			part_clock_release(&c, v);
	}
	PART_ASSERT(c.live == 0);
	kept = count;
out:
	if (have_clocks)
		part_clocks_free(&c);
	free(order), free(rank), free(indeg), free(px), free(pa), free(pe), free(it);
	return kept;
}
