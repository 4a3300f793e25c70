/* deps.c: dependencies between vCTAs. vCTAs are numbered in a topological order, which is also the
 * order in which the memory plan assumes they touch memory. Two kinds of hazards become edges:
 *  - inside a tensor: every read against the writes of that tensor whose 2-D boxes overlap it
 *    (read after write), and overlapping writes (write after write), found per tensor through an
 *    index of its writes sorted by rows and columns, not by comparing every pair;
 *  - between tensors that the memory plan lets share bytes: a write against the accesses of the
 *    tensor that touched those bytes last before it (byte spans), not against every earlier tensor:
 *    those are ordered before the last one through the same rule (see reuse_hazards).
 * The edges are then transitively reduced. */
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "tiling.h"

/* One access: a vCTA's box of a tensor (rows r0..r1, columns c0..c1), or a byte span [c0, c1) of
 * an arena with r0 = 0, r1 = 1. */
struct acc {
	int64_t r0, r1, c0, c1;
	int v;
	int write;
};

/* Accesses sorted by (r0, r1, c0) for overlap queries: a band is a run of equal (r0, r1), the bands
 * are in ascending r0 with the running maximum of r1, and inside a band the running maximum of c1
 * from its start. Both maxima are monotone, so a binary search finds the first entry that can
 * overlap a box and the scan stops at the first that starts past it: a query costs a logarithm plus
 * the entries of the bands it meets. */
struct band {
	int64_t r0, r1, maxr1;
	int64_t lo, hi; /* its entries */
};

struct box_index {
	struct acc *a;
	int64_t n;
	int64_t *maxc1;  /* per entry */
	struct band *b;
	int64_t nb;
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

static int cmp_acc(const void *x, const void *y)
{
	const struct acc *a = x, *b = y;
	if (a->r0 != b->r0)
		return a->r0 < b->r0 ? -1 : 1;
	if (a->r1 != b->r1)
		return a->r1 < b->r1 ? -1 : 1;
	if (a->c0 != b->c0)
		return a->c0 < b->c0 ? -1 : 1;
	return a->v - b->v;
}

/* Sorts a[0..n) and indexes it (ix keeps a). */
static void index_build(struct box_index *ix, struct acc *a, int64_t n)
{
	qsort(a, (size_t)n, sizeof *a, cmp_acc);
	ix->a = a;
	ix->n = n;
	ix->maxc1 = xmalloc((size_t)n * sizeof *ix->maxc1 + 1);
	ix->b = xmalloc((size_t)n * sizeof *ix->b + 1);
	ix->nb = 0;
	for (int64_t i = 0; i < n; i++) {
		struct band *last = ix->nb ? &ix->b[ix->nb - 1] : NULL;
		if (!last || last->r0 != a[i].r0 || last->r1 != a[i].r1) {
			int64_t m = last && last->maxr1 > a[i].r1 ? last->maxr1 : a[i].r1;
			ix->b[ix->nb++] = (struct band){a[i].r0, a[i].r1, m, i, i};
			last = &ix->b[ix->nb - 1];
			ix->maxc1[i] = a[i].c1;
		} else {
			ix->maxc1[i] = ix->maxc1[i - 1] > a[i].c1 ? ix->maxc1[i - 1] : a[i].c1;
		}
		last->hi = i + 1;
	}
}

static void index_free(struct box_index *ix)
{
	free(ix->maxc1);
	free(ix->b);
}

/* Calls f(ctx, entry) for every entry of ix whose box overlaps q. */
static void index_query(const struct box_index *ix, const struct acc *q,
			void (*f)(void *ctx, const struct acc *q, const struct acc *hit), void *ctx)
{
	int64_t lo = 0, hi = ix->nb;
	while (lo < hi) { /* first band whose running maximum of r1 passes q->r0 */
		int64_t mid = lo + (hi - lo) / 2;
		if (ix->b[mid].maxr1 > q->r0)
			hi = mid;
		else
			lo = mid + 1;
	}
	for (int64_t k = lo; k < ix->nb && ix->b[k].r0 < q->r1; k++) {
		const struct band *b = &ix->b[k];
		if (b->r1 <= q->r0)
			continue;
		int64_t i = b->lo, j = b->hi;
		while (i < j) {
			int64_t mid = i + (j - i) / 2;
			if (ix->maxc1[mid] > q->c0)
				j = mid;
			else
				i = mid + 1;
		}
		for (; i < b->hi && ix->a[i].c0 < q->c1; i++)
			if (ix->a[i].c1 > q->c0)
				f(ctx, q, &ix->a[i]);
	}
}

/* Elements shared by two boxes (0 if disjoint). */
static int64_t overlap(const struct acc *a, const struct acc *b)
{
	int64_t r0 = a->r0 > b->r0 ? a->r0 : b->r0, r1 = a->r1 < b->r1 ? a->r1 : b->r1;
	int64_t c0 = a->c0 > b->c0 ? a->c0 : b->c0, c1 = a->c1 < b->c1 ? a->c1 : b->c1;
	return r0 < r1 && c0 < c1 ? (r1 - r0) * (c1 - c0) : 0;
}

static struct acc box_of(const struct region *r, int v, int write)
{
	return (struct acc){r->r0, r->r1, r->c0, r->c1, v, write};
}

/* ---- hazards inside tensors ------------------------------------------------------------------- */

struct tctx {
	struct pairs *ps;
	int64_t es;
};

/* A read meets a write of its tensor: vCTAs are in a topological order and a tensor's elements are
 * written once, so the write comes first. A read that meets a later write is one whose box, or the
 * write's, is larger than what it touches (a view's region on its base, view.c): they touch other
 * elements, and the edge keeps the order they have anyway. */
static void raw_hit(void *ctx, const struct acc *rd, const struct acc *w)
{
	struct tctx *c = ctx;
	if (w->v == rd->v) /* boxes of one base that only overlap as boxes (a concat's inputs) */
		return;
	if (w->v < rd->v)
		push(c->ps, w->v, rd->v, overlap(rd, w) * c->es);
	else
		push(c->ps, rd->v, w->v, 0);
}

static void waw_hit(void *ctx, const struct acc *w, const struct acc *other)
{
	struct tctx *c = ctx;
	if (other->v < w->v)
		push(c->ps, other->v, w->v, 0);
}

/* Per tensor, its accesses (writes or reads) in vCTA order: acc[start[t] .. start[t + 1]). */
struct by_tensor {
	int64_t *start;
	struct acc *acc;
};

static void by_tensor_build(const struct tiling *s, int want_write, struct by_tensor *bt)
{
	int nt = s->g->n_tensors;
	bt->start = xcalloc((size_t)nt + 1, sizeof *bt->start);
	for (int i = 0; i < s->n_vcta; i++) {
		const struct vcta *v = &s->v[i];
		if (want_write)
			bt->start[v->write.tensor + 1]++;
		else
			for (int r = 0; r < v->n_reads; r++)
				bt->start[v->reads[r].tensor + 1]++;
	}
	for (int t = 0; t < nt; t++)
		bt->start[t + 1] += bt->start[t];
	bt->acc = xmalloc((size_t)bt->start[nt] * sizeof *bt->acc + 1);
	int64_t *fill = xmalloc((size_t)nt * sizeof *fill + 1);
	memcpy(fill, bt->start, (size_t)nt * sizeof *fill);
	for (int i = 0; i < s->n_vcta; i++) {
		const struct vcta *v = &s->v[i];
		if (want_write)
			bt->acc[fill[v->write.tensor]++] = box_of(&v->write, i, 1);
		else
			for (int r = 0; r < v->n_reads; r++)
				bt->acc[fill[v->reads[r].tensor]++] = box_of(&v->reads[r], i, 0);
	}
	free(fill);
}

static void by_tensor_free(struct by_tensor *bt)
{
	free(bt->start);
	free(bt->acc);
}

/* Every read against the overlapping writes of its tensor, every write against the overlapping
 * earlier writes; the bytes a read shares with a write weigh the edge. */
static void tensor_hazards(const struct tiling *s, struct pairs *ps)
{
	struct by_tensor wr, rd;
	by_tensor_build(s, 1, &wr);
	by_tensor_build(s, 0, &rd);
	for (int t = 0; t < s->g->n_tensors; t++) {
		int64_t nw = wr.start[t + 1] - wr.start[t];
		if (!nw)
			continue;
		struct tctx c = {ps, ark_dtype_size(s->g->tensors[t].dtype)};
		/* the index sorts its own copy: queries need the writes in vCTA order too */
		struct acc *w = xmalloc((size_t)nw * sizeof *w);
		memcpy(w, wr.acc + wr.start[t], (size_t)nw * sizeof *w);
		struct box_index ix;
		index_build(&ix, w, nw);
		for (int64_t j = rd.start[t]; j < rd.start[t + 1]; j++)
			index_query(&ix, &rd.acc[j], raw_hit, &c);
		for (int64_t j = wr.start[t]; j < wr.start[t + 1]; j++)
			index_query(&ix, &wr.acc[j], waw_hit, &c);
		index_free(&ix);
		free(w);
	}
	by_tensor_free(&wr);
	by_tensor_free(&rd);
}

/* ---- hazards between tensors that share bytes ------------------------------------------------- */

/* Which tensor touched the bytes [lo, hi) of an arena last: the pieces of one GPU's arena, sorted and
 * disjoint. */
struct piece {
	uint64_t lo, hi;
	int t;
};

struct arena_map {
	struct piece *p;
	int64_t n, cap;
};

/* First piece that ends after lo. */
static int64_t map_find(const struct arena_map *m, uint64_t lo)
{
	int64_t i = 0, j = m->n;
	while (i < j) {
		int64_t mid = i + (j - i) / 2;
		if (m->p[mid].hi > lo)
			j = mid;
		else
			i = mid + 1;
	}
	return i;
}

/* The bytes [lo, hi) were last touched by tensor t. */
static void map_assign(struct arena_map *m, uint64_t lo, uint64_t hi, int t)
{
	int64_t i = map_find(m, lo), j = i;
	while (j < m->n && m->p[j].lo < hi)
		j++;
	struct piece add[3];
	int na = 0;
	if (i < j && m->p[i].lo < lo)
		add[na++] = (struct piece){m->p[i].lo, lo, m->p[i].t};
	add[na++] = (struct piece){lo, hi, t};
	if (i < j && m->p[j - 1].hi > hi)
		add[na++] = (struct piece){hi, m->p[j - 1].hi, m->p[j - 1].t};
	int64_t n = m->n - (j - i) + na;
	if (n > m->cap) {
		m->cap = n > 2 * m->cap ? n : 2 * m->cap;
		m->p = xrealloc(m->p, (size_t)m->cap * sizeof *m->p);
	}
	memmove(m->p + i + na, m->p + j, (size_t)(m->n - j) * sizeof *m->p);
	memcpy(m->p + i, add, (size_t)na * sizeof *add);
	m->n = n;
}

/* Per tensor that shares bytes: the byte spans of its accesses, indexed. */
struct shared {
	int t;
	int birth;               /* its first vCTA */
	struct acc *a;           /* spans, reads and write; in ix's order after index_build */
	int64_t n;
	struct box_index ix;
};

static int by_birth(const void *x, const void *y)
{
	const struct shared *a = x, *b = y;
	return a->birth != b->birth ? (a->birth < b->birth ? -1 : 1) : a->t - b->t;
}

/* Byte span [lo, hi) of a region inside its GPU's arena. */
static struct acc span(const struct tiling *s, const struct region *r, int v, int write)
{
	int64_t cols = tiling_mem_cols(s, r->tensor), es = ark_dtype_size(s->g->tensors[r->tensor].dtype);
	int64_t base = (int64_t)s->offset[r->tensor];
	return (struct acc){0, 1, base + (r->r0 * cols + r->c0) * es, base + ((r->r1 - 1) * cols + r->c1) * es, v,
			    write};
}

struct rctx {
	struct pairs *ps;
};

static void reuse_hit(void *ctx, const struct acc *q, const struct acc *u)
{
	struct rctx *c = ctx;
	ARK_ASSERT(u->v < q->v); /* the memory plan shares bytes only between disjoint lifetimes */
	push(c->ps, u->v, q->v, 0);
}

/* Edges from every access of the tensors that last touched the bytes [lo, hi) to vCTA v. */
static void against_last(const struct arena_map *m, const struct shared *sh, const int *slot, uint64_t lo,
			 uint64_t hi, int v, struct pairs *ps)
{
	struct rctx c = {ps};
	for (int64_t i = map_find(m, lo); i < m->n && m->p[i].lo < hi; i++) {
		uint64_t a = m->p[i].lo > lo ? m->p[i].lo : lo, b = m->p[i].hi < hi ? m->p[i].hi : hi;
		struct acc q = {0, 1, (int64_t)a, (int64_t)b, v, 1};
		index_query(&sh[slot[m->p[i].t]].ix, &q, reuse_hit, &c);
	}
}

/* Sorted spans merged into disjoint intervals, in place; returns how many. */
static int64_t merge_spans(struct acc *a, int64_t n)
{
	int64_t k = 0;
	for (int64_t i = 0; i < n; i++) {
		if (k && a[i].c0 <= a[k - 1].c1) {
			if (a[i].c1 > a[k - 1].c1)
				a[k - 1].c1 = a[i].c1;
		} else {
			a[k++] = a[i];
		}
	}
	return k;
}

/* Tensor b, after every tensor that shared its bytes before it: each write of b against the
 * accesses of the tensor that touched its bytes last (by byte spans, which contain the elements a
 * box touches); then b touched them last. Per byte, the tensors that touched it form a sequence in
 * which each one's accesses precede a write of the next (a read of the next where it writes none
 * of that byte), so every earlier access is ordered before b's write through the sequence. */
static void reuse_tensor(struct arena_map *m, const struct shared *sh, const int *slot, const struct shared *b,
			 struct pairs *ps)
{
	struct acc *w = xmalloc((size_t)b->n * sizeof *w + 1), *all = xmalloc((size_t)b->n * sizeof *all + 1);
	int64_t nw = 0;
	for (int64_t i = 0; i < b->n; i++) /* b->a is sorted by span start */
		if (b->a[i].write)
			w[nw++] = b->a[i];
	memcpy(all, b->a, (size_t)b->n * sizeof *all);
	for (int64_t i = 0; i < nw; i++)
		against_last(m, sh, slot, (uint64_t)w[i].c0, (uint64_t)w[i].c1, w[i].v, ps);
	int64_t nu = merge_spans(w, nw);
	/* reads of bytes none of b's writes spans: against the last tensor too (the sequence above) */
	for (int64_t i = 0; i < b->n; i++) {
		const struct acc *r = &b->a[i];
		if (r->write)
			continue;
		int64_t lo = r->c0, k = 0, j = nu;
		while (k < j) { /* first interval that ends after the read starts */
			int64_t mid = k + (j - k) / 2;
			if (w[mid].c1 > lo)
				j = mid;
			else
				k = mid + 1;
		}
		for (; k < nu && lo < r->c1; k++) {
			if (w[k].c0 > lo)
				against_last(m, sh, slot, (uint64_t)lo,
					     (uint64_t)(w[k].c0 < r->c1 ? w[k].c0 : r->c1), r->v, ps);
			lo = w[k].c1;
		}
		if (lo < r->c1)
			against_last(m, sh, slot, (uint64_t)lo, (uint64_t)r->c1, r->v, ps);
	}
	int64_t na = merge_spans(all, b->n);
	for (int64_t i = 0; i < na; i++)
		map_assign(m, (uint64_t)all[i].c0, (uint64_t)all[i].c1, b->t);
	free(w);
	free(all);
}

struct tspan {
	int t;
	uint64_t lo, hi;
};

static int by_place(const void *x, const void *y)
{
	const struct tspan *a = x, *b = y;
	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	return a->t - b->t;
}

/* Marks the tensors of list[0..n) (one GPU's) whose bytes overlap another's: sorted by offset, a
 * tensor overlaps an earlier one iff it starts below the highest end so far, and then it and the
 * tensor holding that end are marked (any other earlier tensor it overlaps was marked when the
 * holder passed to it or beyond it). */
static void mark_sharing(struct tspan *list, int n, uint8_t *shared)
{
	qsort(list, (size_t)n, sizeof *list, by_place);
	uint64_t top = 0;
	int holder = -1;
	for (int i = 0; i < n; i++) {
		if (holder >= 0 && list[i].lo < top)
			shared[list[i].t] = shared[holder] = 1;
		if (holder < 0 || list[i].hi > top)
			top = list[i].hi, holder = list[i].t;
	}
}

/* Hazards between tensors that the memory plan lets share bytes, one GPU's arena at a time, the
 * tensors in the order of their first vCTA (tensors that share bytes have disjoint lifetimes). */
static void reuse_hazards(const struct tiling *s, struct pairs *ps)
{
	const struct graph *g = s->g;
	int nt = g->n_tensors;
	int *birth = xmalloc((size_t)nt * sizeof *birth + 1), *slot = xmalloc((size_t)nt * sizeof *slot + 1);
	uint8_t *written = xcalloc((size_t)nt + 1, 1), *shared = xcalloc((size_t)nt + 1, 1);
	for (int t = 0; t < nt; t++)
		birth[t] = -1, slot[t] = -1;
	for (int i = s->n_vcta - 1; i >= 0; i--) {
		const struct vcta *v = &s->v[i];
		written[v->write.tensor] = 1;
		for (int r = 0; r <= v->n_reads; r++)
			birth[r < v->n_reads ? v->reads[r].tensor : v->write.tensor] = i;
	}
	struct tspan *list = xmalloc((size_t)nt * sizeof *list + 1);
	for (int gpu = 0; gpu < g->gpus; gpu++) {
		int n = 0;
		for (int t = 0; t < nt; t++)
			if (g->tensors[t].gpu == gpu && s->offset[t] != UINT64_MAX && written[t])
				list[n++] = (struct tspan){t, s->offset[t], s->offset[t] + tensor_arena_bytes(&g->tensors[t])};
		mark_sharing(list, n, shared);
	}
	free(list);
	int nsh = 0;
	for (int t = 0; t < nt; t++)
		if (shared[t])
			slot[t] = nsh++;
	struct shared *sh = xcalloc((size_t)nsh + 1, sizeof *sh);
	for (int t = 0; t < nt; t++)
		if (shared[t])
			sh[slot[t]] = (struct shared){.t = t, .birth = birth[t]};
	for (int i = 0; i < s->n_vcta; i++) {
		const struct vcta *v = &s->v[i];
		for (int r = 0; r <= v->n_reads; r++) {
			int t = r < v->n_reads ? v->reads[r].tensor : v->write.tensor;
			if (shared[t])
				sh[slot[t]].n++;
		}
	}
	for (int k = 0; k < nsh; k++) {
		sh[k].a = xmalloc((size_t)sh[k].n * sizeof *sh[k].a + 1);
		sh[k].n = 0;
	}
	for (int i = 0; i < s->n_vcta; i++) {
		const struct vcta *v = &s->v[i];
		for (int r = 0; r <= v->n_reads; r++) {
			const struct region *reg = r < v->n_reads ? &v->reads[r] : &v->write;
			if (shared[reg->tensor]) {
				struct shared *x = &sh[slot[reg->tensor]];
				x->a[x->n++] = span(s, reg, i, r == v->n_reads);
			}
		}
	}
	for (int k = 0; k < nsh; k++)
		index_build(&sh[k].ix, sh[k].a, sh[k].n);
	/* process in birth order through a permutation, slots stay */
	int *order = xmalloc((size_t)nsh * sizeof *order + 1);
	struct shared *tmp = xmalloc((size_t)nsh * sizeof *tmp + 1);
	memcpy(tmp, sh, (size_t)nsh * sizeof *tmp);
	qsort(tmp, (size_t)nsh, sizeof *tmp, by_birth);
	for (int k = 0; k < nsh; k++)
		order[k] = slot[tmp[k].t];
	free(tmp);
	struct arena_map *map = xcalloc(ARK_MAX_GPUS, sizeof *map);
	for (int k = 0; k < nsh; k++) {
		const struct shared *b = &sh[order[k]];
		reuse_tensor(&map[g->tensors[b->t].gpu], sh, slot, b, ps);
	}
	for (int gpu = 0; gpu < ARK_MAX_GPUS; gpu++)
		free(map[gpu].p);
	free(map);
	for (int k = 0; k < nsh; k++) {
		index_free(&sh[k].ix);
		free(sh[k].a);
	}
	free(sh), free(order), free(birth), free(slot), free(written), free(shared);
}

/* ---- edges ----------------------------------------------------------------------------------------- */

/* The hazards, deduplicated (bytes summed), as CSR by producer with ascending consumers: they are both
 * the edges and what the verifier must see ordered. A counting sort by producer, then each producer's
 * few consumers sorted. */
static int cmp_consumer(const void *a, const void *b)
{
	const struct pair *x = a, *y = b;
	return x->v < y->v ? -1 : x->v > y->v;
}

static void build_edges(struct tiling *s, struct pairs *ps)
{
	int n = s->n_vcta;
	int64_t *start = xcalloc((size_t)n + 1, sizeof *start);
	for (int64_t i = 0; i < ps->n; i++)
		start[ps->p[i].u + 1]++;
	for (int u = 0; u < n; u++)
		start[u + 1] += start[u];
	struct pair *sorted = xmalloc((size_t)ps->n * sizeof *sorted + 1);
	int64_t *fill = xmalloc((size_t)n * sizeof *fill + 1);
	memcpy(fill, start, (size_t)n * sizeof *fill);
	for (int64_t i = 0; i < ps->n; i++)
		sorted[fill[ps->p[i].u]++] = ps->p[i];
	free(fill);
	free(ps->p);
	int64_t m = 0;
	s->xadj = xcalloc((size_t)n + 1, sizeof *s->xadj);
	for (int u = 0; u < n; u++) {
		struct pair *p = sorted + start[u];
		int64_t k = start[u + 1] - start[u];
		qsort(p, (size_t)k, sizeof *p, cmp_consumer);
		for (int64_t i = 0; i < k; i++) {
			ARK_ASSERT(p[i].u < p[i].v);
			if (m > s->xadj[u] && sorted[m - 1].v == p[i].v)
				sorted[m - 1].bytes += p[i].bytes;
			else
				sorted[m++] = p[i];
		}
		s->xadj[u + 1] = m;
	}
	s->n_edges = s->n_hazards = m;
	s->adj = xmalloc((size_t)m * sizeof *s->adj + 1);
	s->ebytes = xmalloc((size_t)m * sizeof *s->ebytes + 1);
	s->hu = xmalloc((size_t)m * sizeof *s->hu + 1);
	s->hv = xmalloc((size_t)m * sizeof *s->hv + 1);
	for (int64_t i = 0; i < m; i++) {
		s->adj[i] = sorted[i].v;
		s->ebytes[i] = sorted[i].bytes;
		s->hu[i] = sorted[i].u;
		s->hv[i] = sorted[i].v;
	}
	free(sorted);
	free(start);
}

int deps_build(struct tiling *s)
{
	struct pairs ps = {0};
	tensor_hazards(s, &ps);
	reuse_hazards(s, &ps);
	build_edges(s, &ps);
	struct part_dag dag;
	tiling_dag(s, &dag);
	s->keep = xmalloc((size_t)s->n_edges + 1);
	s->n_kept = part_transitive_reduce(&dag, s->keep);
	return 0;
}
