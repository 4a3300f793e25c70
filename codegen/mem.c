/* mem.c: the memory plan. Inputs, weights and outputs get space of their own; activations and
 * workspaces share the rest of the arena, two tensors sharing bytes only when the first is dead
 * (its last vCTA comes before the second's first). The hazards that sharing creates are added by
 * deps_build. Views get no bytes of their own: they lie inside their base (view.c). */
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "tiling.h"

#define MEM_ALIGN 256
/* Tensors smaller than this keep space of their own: sharing it would save little and every
 * sharing pair adds hazards between all their tiles. */
#define MEM_REUSE_MIN (64u << 10)

static uint64_t align_up(uint64_t x) { return (x + MEM_ALIGN - 1) / MEM_ALIGN * MEM_ALIGN; }

/* ---- placement ----------------------------------------------------------------------------------
 * Greedy by size: each tensor, largest first, at the lowest MEM_ALIGN-aligned offset where its bytes
 * meet none of the tensors already placed whose lifetimes overlap its own; tensors below reuse_min
 * get space of their own above everything placed before them. Finding the overlapping lifetimes is
 * an interval query: the reusable tensors sorted by birth form an implicit balanced tree (node of
 * [lo, hi) at mid), each node keeping the latest death and the number of tensors placed in its
 * range, so a query visits O(log n) nodes per tensor it reports. The lowest clear offset is then a
 * sweep over those tensors in offset order. Cost: O(n log n + P log n) for P pairs of overlapping
 * lifetimes (the pairs the result depends on), where comparing every pair until nothing moved was
 * O(n^2) per pass. */

struct mem_tree {
	int n;
	const struct mem_life *lv;
	int *ord;          /* reusable tensors (indices into lv) by birth */
	int *pos;          /* per lv index: its place in ord, -1 if not reusable */
	int *maxd;         /* per node (mid of its range): latest death in the range */
	int *placed;       /* per node: tensors of its range already placed */
	char *is_placed;   /* per place in ord */
};

static int mem_build_max(struct mem_tree *T, int lo, int hi)
{
	if (lo >= hi)
		return -1;
	int mid = lo + (hi - lo) / 2, a = mem_build_max(T, lo, mid), b = mem_build_max(T, mid + 1, hi);
	int d = T->lv[T->ord[mid]].death;
	T->maxd[mid] = d > a ? (d > b ? d : b) : (a > b ? a : b);
	return T->maxd[mid];
}

static void mem_tree_place(struct mem_tree *T, int at)
{
	int lo = 0, hi = T->n;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		T->placed[mid]++;
		if (at == mid)
			break;
		if (at < mid)
			hi = mid;
		else
			lo = mid + 1;
	}
	T->is_placed[at] = 1;
}

struct mem_span {
	uint64_t off, bytes;
};

struct mem_hits {
	struct mem_span *v;
	int n, cap;
};

/* Appends the placed tensors of ord[lo, hi) whose lifetimes meet [b, d]. */
static void mem_tree_query(const struct mem_tree *T, int lo, int hi, int b, int d, const uint64_t *off,
			   struct mem_hits *h)
{
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (!T->placed[mid] || T->maxd[mid] < b)
			return;
		mem_tree_query(T, lo, mid, b, d, off, h);
		const struct mem_life *o = &T->lv[T->ord[mid]];
		if (o->birth > d)
			return; /* and every later one */
		if (T->is_placed[mid] && o->death >= b) {
			if (h->n == h->cap) {
				h->cap = h->cap ? 2 * h->cap : 64;
				struct mem_span *nv = xmalloc((size_t)h->cap * sizeof *nv);
				if (h->n)
					memcpy(nv, h->v, (size_t)h->n * sizeof *nv);
				free(h->v);
				h->v = nv;
			}
			h->v[h->n++] = (struct mem_span){off[T->ord[mid]], o->bytes};
		}
		lo = mid + 1;
	}
}

static int by_off(const void *a, const void *b)
{
	const struct mem_span *x = a, *y = b;
	return x->off < y->off ? -1 : x->off > y->off;
}

static int by_size_desc(const void *a, const void *b)
{
	const struct mem_life *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return x->t - y->t;
}

struct mem_key {
	int birth, t, i;
};

static int by_birth(const void *a, const void *b)
{
	const struct mem_key *x = a, *y = b;
	if (x->birth != y->birth)
		return x->birth < y->birth ? -1 : 1;
	return x->t - y->t;
}

uint64_t mem_place(struct mem_life *lv, int n, uint64_t reuse_min, uint64_t *off)
{
	qsort(lv, (size_t)n, sizeof *lv, by_size_desc);
	struct mem_tree T = {.lv = lv};
	T.ord = xmalloc(((size_t)n + 1) * sizeof *T.ord);
	T.pos = xmalloc(((size_t)n + 1) * sizeof *T.pos);
	struct mem_key *key = xmalloc(((size_t)n + 1) * sizeof *key);
	for (int i = 0; i < n; i++) {
		T.pos[i] = -1;
		if (lv[i].bytes >= reuse_min)
			key[T.n++] = (struct mem_key){lv[i].birth, lv[i].t, i};
	}
	qsort(key, (size_t)T.n, sizeof *key, by_birth);
	for (int k = 0; k < T.n; k++)
		T.ord[k] = key[k].i, T.pos[key[k].i] = k;
	free(key);
	T.maxd = xmalloc(((size_t)T.n + 1) * sizeof *T.maxd);
	T.placed = xcalloc((size_t)T.n + 1, sizeof *T.placed);
	T.is_placed = xcalloc((size_t)T.n + 1, 1);
	mem_build_max(&T, 0, T.n);
	struct mem_hits h = {0};
	uint64_t end = 0;
	for (int i = 0; i < n; i++) {
		uint64_t o = end; /* space of its own, above everything placed so far */
		if (T.pos[i] >= 0) {
			h.n = 0;
			mem_tree_query(&T, 0, T.n, lv[i].birth, lv[i].death, off, &h);
			if (h.n > 1)
				qsort(h.v, (size_t)h.n, sizeof *h.v, by_off);
			o = 0;
			for (int k = 0; k < h.n && h.v[k].off < o + lv[i].bytes; k++)
				if (align_up(h.v[k].off + h.v[k].bytes) > o)
					o = align_up(h.v[k].off + h.v[k].bytes);
			mem_tree_place(&T, T.pos[i]);
		}
		off[i] = o;
		if (align_up(o + lv[i].bytes) > end)
			end = align_up(o + lv[i].bytes);
	}
	free(h.v);
	free(T.ord);
	free(T.pos);
	free(T.maxd);
	free(T.placed);
	free(T.is_placed);
	return end;
}

/* Lifetimes of the tensors vCTAs touch, in vCTA indices; birth = -1 for tensors no vCTA touches. With
 * MEM_REUSE_ORDER a tensor lives from its first toucher to its last. With MEM_REUSE_LEVELS a toucher
 * counts as its whole dependency level (the level's first vCTA to its last): two tensors that ops of
 * one level touch never share bytes. Sharing them orders those ops, which nothing else orders, one
 * after the other (three independent matmuls of one level whose split-K workspaces shared bytes ran
 * one after another: 75 of a model's 108 us, bench/NOTES.md). Returns whether some level holds the
 * vCTAs of more than one op: where none does, nothing is kept apart that the order would not keep
 * apart, and compile.c makes the one plan. */
static int lifetimes(const struct tiling *s, int *birth, int *death)
{
	const struct graph *g = s->g;
	int nt = g->n_tensors;
	int *level = xcalloc((size_t)(g->n_ops ? g->n_ops : 1), sizeof *level);
	int nl = graph_levels(g, level) + 1;
	/* per level: its first and last vCTA, and the op of its first */
	int *lo = xmalloc((size_t)nl * sizeof *lo), *hi = xmalloc((size_t)nl * sizeof *hi);
	int *op0 = xmalloc((size_t)nl * sizeof *op0);
	for (int l = 0; l < nl; l++)
		lo[l] = s->n_vcta, hi[l] = -1, op0[l] = -1;
	int apart = 0;
	for (int i = 0; i < s->n_vcta; i++) {
		const int op = s->v[i].op, l = level[op];
		lo[l] = i < lo[l] ? i : lo[l];
		hi[l] = i;
		if (op0[l] < 0)
			op0[l] = op;
		apart |= op0[l] != op;
	}
	const int by_level = s->opt.reuse == MEM_REUSE_LEVELS;
	for (int t = 0; t < nt; t++)
		birth[t] = -1, death[t] = -1;
	for (int i = 0; i < s->n_vcta; i++) {
		const struct vcta *v = &s->v[i];
		const int l = level[v->op], b = by_level ? lo[l] : i, d = by_level ? hi[l] : i;
		for (int r = 0; r <= v->n_reads; r++) {
			int t = r < v->n_reads ? v->reads[r].tensor : v->write.tensor;
			if (birth[t] < 0 || b < birth[t])
				birth[t] = b;
			if (d > death[t])
				death[t] = d;
		}
	}
	free(level);
	free(lo);
	free(hi);
	free(op0);
	return apart;
}

int mem_plan(struct tiling *s)
{
	struct graph *g = s->g;
	int nt = g->n_tensors;
	s->offset = xmalloc((size_t)nt * sizeof *s->offset);
	int *birth = xmalloc((size_t)nt * sizeof *birth), *death = xmalloc((size_t)nt * sizeof *death);
	s->mem_levels_apart = lifetimes(s, birth, death) && s->opt.reuse;
	/* Tensors a transfer between GPUs touches keep bytes of their own all iteration long: the DMA
	 * engine reads its sources after the sending vCTA has finished, and sharing a destination's
	 * bytes would order vCTAs of one GPU after those of another. */
	for (int i = 0; i < s->n_vcta; i++) {
		const struct vcta *v = &s->v[i];
		if (v->tmpl != ARK_T_DMA && v->tmpl != ARK_T_SEND_LL &&
		    !(v->tmpl == ARK_T_COPY && g->tensors[v->write.tensor].gpu != v->gpu))
			continue;
		for (int r = 0; r <= v->n_reads; r++) {
			int t = r < v->n_reads ? v->reads[r].tensor : v->write.tensor;
			birth[t] = 0;
			death[t] = s->n_vcta;
		}
	}
	/* A model output that is a view (or a concat's input) keeps its base's bytes all iteration: the
	 * host reads it after the iteration. */
	for (int t = 0; t < nt; t++) {
		int b = graph_view_base(g, t, NULL);
		if (b != t && g->tensors[t].role == ARK_ROLE_OUTPUT && birth[b] >= 0) {
			birth[b] = 0;
			death[b] = s->n_vcta;
		}
	}
	struct mem_life *lv = xmalloc((size_t)nt * sizeof *lv);
	uint64_t *off = xmalloc((size_t)nt * sizeof *off);
	for (int gpu = 0; gpu < g->gpus; gpu++) {
		uint64_t top = 0, flat = 0;
		int n = 0;
		for (int t = 0; t < nt; t++) {
			const struct tensor *T = &g->tensors[t];
			if (T->gpu != gpu || T->view_of >= 0) /* a view: inside its base (view_offsets) */
				continue;
			uint64_t bytes = tensor_arena_bytes(T);
			/* inputs, weights, outputs and state: bytes of their own, never shared (a state keeps
			 * its value from one iteration to the next) */
			if (T->role != ARK_ROLE_ACTIVATION && T->role != ARK_ROLE_INTERNAL) {
				s->offset[t] = top;
				top = align_up(top + bytes);
				continue;
			}
			if (birth[t] < 0) { /* computed inside a fused vCTA: never stored */
				s->offset[t] = UINT64_MAX;
				continue;
			}
			flat = align_up(flat + bytes);
			lv[n++] = (struct mem_life){t, birth[t], death[t], bytes};
		}
		s->arena_noreuse[gpu] = top + flat;
		s->arena[gpu] = top + mem_place(lv, n, s->opt.reuse ? MEM_REUSE_MIN : UINT64_MAX, off);
		for (int i = 0; i < n; i++)
			s->offset[lv[i].t] = top + off[i];
	}
	free(off);
	free(lv);
	free(birth);
	free(death);
	view_offsets(s);
	return 0;
}
