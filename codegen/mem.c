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

struct live {
	int t;
	int birth, death;  /* first and last vCTA touching it */
	uint64_t bytes;
};

static int by_size_desc(const void *a, const void *b)
{
	const struct live *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return x->t - y->t;
}

/* Lifetimes of the tensors vCTAs touch; birth = -1 for tensors no vCTA touches. */
static void lifetimes(const struct tiling *s, int *birth, int *death)
{
	int nt = s->g->n_tensors;
	for (int t = 0; t < nt; t++)
		birth[t] = -1, death[t] = -1;
	for (int i = 0; i < s->n_vcta; i++) {
		const struct vcta *v = &s->v[i];
		for (int r = 0; r <= v->n_reads; r++) {
			int t = r < v->n_reads ? v->reads[r].tensor : v->write.tensor;
			if (birth[t] < 0)
				birth[t] = i;
			death[t] = i;
		}
	}
}

int mem_plan(struct tiling *s)
{
	struct graph *g = s->g;
	int nt = g->n_tensors;
	s->offset = xmalloc((size_t)nt * sizeof *s->offset);
	int *birth = xmalloc((size_t)nt * sizeof *birth), *death = xmalloc((size_t)nt * sizeof *death);
	lifetimes(s, birth, death);
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
	struct live *lv = xmalloc((size_t)nt * sizeof *lv);
	for (int gpu = 0; gpu < g->gpus; gpu++) {
		uint64_t top = 0, flat = 0;
		int n = 0;
		for (int t = 0; t < nt; t++) {
			const struct tensor *T = &g->tensors[t];
			if (T->gpu != gpu || T->view_of >= 0) /* a view: inside its base (view_offsets) */
				continue;
			uint64_t bytes = tensor_bytes(T);
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
			lv[n++] = (struct live){t, birth[t], death[t], bytes};
		}
		s->arena_noreuse[gpu] = top + flat;
		/* Greedy by size: each tensor at the lowest offset clear of the live tensors already placed. */
		qsort(lv, (size_t)n, sizeof *lv, by_size_desc);
		uint64_t end = 0;
		for (int i = 0; i < n; i++) {
			uint64_t off = 0;
			if (s->opt.reuse && lv[i].bytes >= MEM_REUSE_MIN) {
				int moved = 1;
				while (moved) {
					moved = 0;
					for (int j = 0; j < i; j++) {
						const struct live *o = &lv[j];
						if (o->bytes < MEM_REUSE_MIN)
							continue;
						int overlap_life = !(o->death < lv[i].birth || lv[i].death < o->birth);
						uint64_t ob = s->offset[o->t] - top;
						if (overlap_life && off < ob + o->bytes && ob < off + lv[i].bytes) {
							off = align_up(ob + o->bytes);
							moved = 1;
						}
					}
				}
			} else {
				off = end; /* space of its own, above everything placed so far */
			}
			s->offset[lv[i].t] = top + off;
			if (align_up(off + lv[i].bytes) > end)
				end = align_up(off + lv[i].bytes);
		}
		s->arena[gpu] = top + end;
	}
	free(lv);
	free(birth);
	free(death);
	view_offsets(s);
	return 0;
}
