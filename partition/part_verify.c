/* part_verify.c: proof that a placement cannot deadlock and orders every hazard (vector clocks, each
 * kept only until the last vertex that reads it). */
#include "partition/part.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Appends to err (bounded). */
static void append(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	size_t used = strlen(err);
	if (used + 1 >= errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err + used, errlen - used, fmt, ap);
	va_end(ap);
}

/* The waits left unresolved by Kahn's algorithm contain a cycle: walk back from the smallest stuck
 * vertex through stuck predecessors until a vertex repeats, then describe the cycle forwards. */
static void report_cycle(const struct part_dag *dag, const uint8_t *keep, const struct part_placement *pl,
			 const int64_t *px, const int *pa, const int64_t *pe, const int *indeg,
			 char *err, size_t errlen)
{
	int n = dag->n;
	int *seen = calloc((size_t)n, sizeof *seen);      /* step index + 1 on the walk */
	int *walk = malloc((size_t)n * sizeof *walk);
	uint8_t *how = malloc((size_t)n);                 /* 1: reached through program order */
	if (!seen || !walk || !how) {
		free(seen), free(walk), free(how);
		part_fail(err, errlen, "deadlock: the SM lists and the waits form a cycle");
		return;
	}
	int x = 0;
	while (x < n && indeg[x] == 0)
		x++;
	PART_ASSERT(x < n);
	int len = 0;
	while (!seen[x]) {
		seen[x] = ++len;
		walk[len - 1] = x;
		int s = pl->sm[x], next = -1;
		if (pl->pos[x] > 0) {
			int p = pl->list[pl->begin[s] + pl->pos[x] - 1];
			if (indeg[p] > 0)
				next = p, how[len - 1] = 1;
		}
		for (int64_t i = px[x]; next < 0 && i < px[x + 1]; i++)
			if ((!keep || keep[pe[i]]) && indeg[pa[i]] > 0)
				next = pa[i], how[len - 1] = 0;
		PART_ASSERT(next >= 0);
		x = next;
	}
	/* walk[seen[x] - 1 .. len - 1] is the cycle; walk[i] waits for walk[i + 1]. */
	int first = seen[x] - 1;
	part_fail(err, errlen, "deadlock: cycle of %d waits:", len - first);
	for (int i = first; i < len; i++) {
		int v = walk[i], u = i + 1 < len ? walk[i + 1] : walk[first];
		if (how[i])
			append(err, errlen, " vCTA %d (SM %d pos %d) runs after vCTA %d on its SM%s", v,
			       pl->sm[v], pl->pos[v], u, i + 1 < len ? ";" : "");
		else
			append(err, errlen, " vCTA %d (SM %d pos %d) waits for vCTA %d (SM %d pos %d)%s", v,
			       pl->sm[v], pl->pos[v], u, pl->sm[u], pl->pos[u], i + 1 < len ? ";" : "");
	}
	free(seen), free(walk), free(how);
}

/* References to each vertex's clock: its successor on its SM, and its successors through the edges
 * kept (all with keep NULL). */
void part_clock_refs(const struct part_dag *dag, const uint8_t *keep, const struct part_placement *pl, int *ref)
{
	for (int u = 0; u < dag->n; u++) {
		int s = pl->sm[u];
		ref[u] = pl->begin[s] + pl->pos[u] + 1 < pl->begin[s + 1];
		for (int64_t e = dag->xadj[u]; e < dag->xadj[u + 1]; e++)
			ref[u] += !keep || keep[e];
	}
}

int part_verify(const struct part_dag *dag, const uint8_t *keep, const struct part_placement *pl,
		int64_t n_hazards, const int *hu, const int *hv, char *err, size_t errlen)
{
	if (part_check_dag(dag, err, errlen) < 0 || part_check_placement(dag, pl, err, errlen) < 0)
		return -1;
	if (n_hazards < 0 || (n_hazards > 0 && (!hu || !hv)))
		return part_fail(err, errlen, "invalid hazard list");
	int n = dag->n, sms = pl->sms, rc = -1;
	int *order = malloc(((size_t)n + 1) * sizeof *order), *indeg = malloc(((size_t)n + 1) * sizeof *indeg);
	int64_t *hx = calloc((size_t)n + 2, sizeof *hx);  /* hazards by their later vCTA (CSR) */
	int *hs = malloc(((size_t)n_hazards + 1) * sizeof *hs);
	int64_t *px = NULL, *pe = NULL;
	int *pa = NULL;
	struct part_clocks c;
	int have_clocks = part_clocks_init(&c, n, sms) == 0;
	if (!order || !indeg || !hx || !hs || !have_clocks || part_preds(dag, &px, &pa, &pe) < 0) {
		part_fail(err, errlen, "out of memory verifying %d vCTAs", n);
		goto out;
	}
	for (int64_t i = 0; i < n_hazards; i++) {
		int u = hu[i], v = hv[i];
		if (u < 0 || u >= n || v < 0 || v >= n) {
			part_fail(err, errlen, "hazard %lld names vCTA %d -> vCTA %d, out of range (%d vCTAs)",
			     (long long)i, u, v, n);
			goto out;
		}
		hx[v + 2]++;
	}
	for (int v = 0; v < n; v++)
		hx[v + 2] += hx[v + 1];
	for (int64_t i = 0; i < n_hazards; i++)
		hs[hx[hv[i] + 1]++] = hu[i];
	if (part_hb_order(dag, keep, pl, order, indeg) < n) {
		report_cycle(dag, keep, pl, px, pa, pe, indeg, err, errlen);
		goto out;
	}
	/* clock(v)[s]: highest position on SM s that happens before or at v; a clock lives until the
	 * last vertex that reads it, and the hazards ending at v are checked against v's clock at once. */
	part_clock_refs(dag, keep, pl, c.ref);
	for (int k = 0; k < n; k++) {
		int v = order[k], s = pl->sm[v];
		int32_t *acc = part_clock_new(&c, v);
		if (!acc) {
			part_fail(err, errlen, "out of memory verifying %d vCTAs", n);
			goto out;
		}
		if (pl->pos[v] > 0) {
			int p = pl->list[pl->begin[s] + pl->pos[v] - 1];
			memcpy(acc, part_clock(&c, p), (size_t)sms * sizeof *acc);
			part_clock_release(&c, p);
		} else {
			for (int q = 0; q < sms; q++)
				acc[q] = -1;
		}
		for (int64_t i = px[v]; i < px[v + 1]; i++) {
			if (keep && !keep[pe[i]])
				continue;
			int u = pa[i];
			if (acc[pl->sm[u]] < pl->pos[u]) { /* else u's clock is already included */
				const int32_t *src = part_clock(&c, u);
				for (int q = 0; q < sms; q++)
					acc[q] = src[q] > acc[q] ? src[q] : acc[q];
			}
			part_clock_release(&c, u);
		}
		acc[s] = pl->pos[v];
		for (int64_t i = hx[v]; i < hx[v + 1]; i++) {
			int u = hs[i];
			if (u != v && acc[pl->sm[u]] < pl->pos[u]) {
				part_fail(err, errlen, "hazard vCTA %d -> vCTA %d is not ordered (vCTA %d on SM %d pos %d, "
				     "vCTA %d on SM %d pos %d)", u, v, u, pl->sm[u], pl->pos[u], v, pl->sm[v], pl->pos[v]);
				goto out;
			}
		}
		if (!c.ref[v])
			part_clock_release(&c, v);
	}
	PART_ASSERT(c.live == 0);
	rc = 0;
out:
	if (have_clocks)
		part_clocks_free(&c);
	free(order), free(indeg), free(hx), free(hs), free(px), free(pa), free(pe);
	return rc;
}
