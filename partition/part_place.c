/* part_place.c: placement policies (METIS, round robin, wavefront, critical-path list scheduling) and
 * the ordering of every SM's list. */
#include "partition/part.h"

#include <limits.h>
#include <math.h>
#include <metis.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define METIS_SEED 7     /* fixed: placement is deterministic */
#define METIS_MIN_PER_PART 4 /* fewer vertices than this per SM: no METIS */
/* METIS sees only the edges into vertices with at most this many predecessors: a consumer fed by
 * more SMs than that waits on a hop whatever happens, and those edges (most of a matmul's) would only
 * slow METIS down. */
#define AFFINITY_FANIN 8
#define MAX_CON 8        /* dependency waves are grouped into at most this many METIS constraints */

/* ---- a binary min-heap of (key, id), ties broken by the smaller id ----------------------------- */

struct hitem {
	double key;
	int id;
};
struct heap {
	int n, cap;
	struct hitem *a;
};

static int hless(struct hitem x, struct hitem y)
{
	return x.key < y.key || (x.key == y.key && x.id < y.id);
}

static int heap_push(struct heap *h, double key, int id)
{
	if (h->n == h->cap) {
		int cap = h->cap ? 2 * h->cap : 16;
		struct hitem *a = realloc(h->a, (size_t)cap * sizeof *a);
		if (!a)
			return -1;
		h->a = a, h->cap = cap;
	}
	int i = h->n++;
	struct hitem it = { key, id };
	while (i > 0 && hless(it, h->a[(i - 1) / 2])) {
		h->a[i] = h->a[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->a[i] = it;
	return 0;
}

static struct hitem heap_pop(struct heap *h)
{
	PART_ASSERT(h->n > 0);
	struct hitem top = h->a[0], last = h->a[--h->n];
	int i = 0;
	for (;;) {
		int c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && hless(h->a[c + 1], h->a[c]))
			c++;
		if (!hless(h->a[c], last))
			break;
		h->a[i] = h->a[c];
		i = c;
	}
	if (h->n > 0)
		h->a[i] = last;
	return top;
}

/* ---- shared pieces ------------------------------------------------------------------------------ */

/* Bandwidth the device offers one SM when every SM streams: the share the static cost model assumes
 * (part_vertex_us caps it at what the SM pulls alone). */
static double busy_share(const struct part_gpu *gpu)
{
	return gpu->dram_gbps / gpu->sms;
}

/* Static cost of every vertex (us) and its bottom level: cost + hop + bottom level of the costliest
 * successor, so the exit vertices have their own cost. c, b: n doubles. */
static void costs(const struct part_dag *dag, const struct part_gpu *gpu, double *c, double *b)
{
	double share = busy_share(gpu);
	for (int v = 0; v < dag->n; v++)
		c[v] = part_vertex_us(dag, gpu, v, share);
	for (int u = dag->n - 1; u >= 0; u--) {
		double m = 0;
		for (int64_t e = dag->xadj[u]; e < dag->xadj[u + 1]; e++) {
			double t = gpu->hop_us + b[dag->adj[e]];
			if (t > m)
				m = t;
		}
		b[u] = c[u] + m;
	}
}

/* Fills pl from sm[] and a global order (a permutation of the vertices): every SM's list holds its
 * vertices in that order. */
static int build_lists(int n, int sms, int *sm, const int *order, struct part_placement *pl)
{
	pl->sms = sms;
	pl->sm = sm;
	pl->pos = malloc(((size_t)n + 1) * sizeof(int));
	pl->begin = calloc((size_t)sms + 1, sizeof(int));
	pl->list = malloc(((size_t)n + 1) * sizeof(int));
	if (!pl->pos || !pl->begin || !pl->list) {
		part_placement_free(pl);
		return -1;
	}
	for (int v = 0; v < n; v++)
		pl->begin[sm[v] + 1]++;
	for (int s = 0; s < sms; s++)
		pl->begin[s + 1] += pl->begin[s];
	int *fill = malloc(((size_t)sms + 1) * sizeof(int));
	if (!fill) {
		part_placement_free(pl);
		return -1;
	}
	memcpy(fill, pl->begin, (size_t)sms * sizeof(int));
	for (int i = 0; i < n; i++) {
		int v = order[i], s = sm[v];
		pl->pos[v] = fill[s] - pl->begin[s];
		pl->list[fill[s]++] = v;
	}
	free(fill);
	return 0;
}

/* ---- round robin and wavefront ------------------------------------------------------------------ */

static int place_roundrobin(const struct part_dag *dag, int sms, int *sm, int *order)
{
	for (int v = 0; v < dag->n; v++)
		sm[v] = v % sms, order[v] = v;
	return 0;
}

static int place_wavefront(const struct part_dag *dag, int sms, int *sm, int *order)
{
	int n = dag->n;
	int *level = malloc(((size_t)n + 1) * sizeof *level);
	if (!level)
		return -1;
	int nlev = part_levels(dag, level);
	int *cnt = calloc((size_t)nlev + 1, sizeof *cnt);
	if (!cnt) {
		free(level);
		return -1;
	}
	for (int v = 0; v < n; v++)
		cnt[level[v] + 1]++;
	for (int l = 0; l < nlev; l++)
		cnt[l + 1] += cnt[l];
	for (int v = 0; v < n; v++) { /* ascending v: level-major, vertex order inside a level */
		int k = cnt[level[v]]++;
		order[k] = v;
	}
	/* cnt[l] is now the end of level l, i.e. the start of level l + 1 */
	for (int k = 0; k < n; k++) {
		int v = order[k], l = level[v];
		int start = l > 0 ? cnt[l - 1] : 0;
		sm[v] = (k - start) % sms;
	}
	free(cnt);
	free(level);
	return 0;
}

/* ---- critical-path list scheduling ---------------------------------------------------------------- */

/* Ready vertices by bottom level (longest first); each goes to the SM where it can start earliest,
 * counting a hop from every predecessor on another SM. Ties: the SM of the latest predecessor,
 * then the lowest SM. order receives the scheduling order (a topological order). */
static int place_critical(const struct part_dag *dag, const struct part_gpu *gpu, int *sm, int *order)
{
	int n = dag->n, sms = gpu->sms, rc = -1;
	double hop = gpu->hop_us;
	double *c = malloc(((size_t)n + 1) * sizeof *c), *b = malloc(((size_t)n + 1) * sizeof *b);
	double *fin = malloc(((size_t)n + 1) * sizeof *fin), *freet = calloc((size_t)sms, sizeof *freet);
	int *npend = calloc((size_t)n + 1, sizeof *npend);
	int64_t *px = NULL;
	int *pa = NULL;
	struct heap ready = { 0 };
	if (!c || !b || !fin || !freet || !npend || part_preds(dag, &px, &pa, NULL) < 0)
		goto out;
	costs(dag, gpu, c, b);
	for (int v = 0; v < n; v++) {
		npend[v] = (int)(px[v + 1] - px[v]);
		if (npend[v] == 0 && heap_push(&ready, -b[v], v) < 0)
			goto out;
	}
	for (int k = 0; k < n; k++) {
		PART_ASSERT(ready.n > 0);
		int v = heap_pop(&ready).id;
		/* m1: latest arrival (finish + hop) over all predecessors, from SM a; on SM a itself the
		 * data is ready at max(arrival from other SMs, finish of predecessors on a). */
		double m1 = 0, other = 0, local = 0;
		int a = -1;
		for (int64_t i = px[v]; i < px[v + 1]; i++) {
			int u = pa[i];
			if (fin[u] + hop > m1 || a < 0)
				m1 = fin[u] + hop, a = sm[u];
		}
		for (int64_t i = px[v]; i < px[v + 1]; i++) {
			int u = pa[i];
			if (sm[u] == a) {
				if (fin[u] > local)
					local = fin[u];
			} else if (fin[u] + hop > other) {
				other = fin[u] + hop;
			}
		}
		int best = -1;
		double bt = 0;
		for (int s = 0; s < sms; s++) {
			double d = s == a ? (other > local ? other : local) : m1;
			double t = freet[s] > d ? freet[s] : d;
			if (best < 0 || t < bt || (t == bt && s == a)) {
				best = s, bt = t;
			}
		}
		sm[v] = best;
		fin[v] = bt + c[v];
		freet[best] = fin[v];
		order[k] = v;
		for (int64_t e = dag->xadj[v]; e < dag->xadj[v + 1]; e++) {
			int w = dag->adj[e];
			if (--npend[w] == 0 && heap_push(&ready, -b[w], w) < 0)
				goto out;
		}
	}
	rc = 0;
out:
	free(c), free(b), free(fin), free(freet), free(npend), free(px), free(pa), free(ready.a);
	return rc;
}

/* ---- ordering a fixed assignment ---------------------------------------------------------------- */

/* Given sm[], a list-scheduling pass decides each SM's order: an SM that falls free takes, among its
 * vertices whose inputs have arrived, the one with the longest bottom level; if none has arrived, the
 * one whose inputs arrive first. The pass always advances the SM that can start earliest, so the
 * global order is topological and no list can deadlock. */
static int order_fixed(const struct part_dag *dag, const struct part_gpu *gpu, const int *sm, int *order)
{
	int n = dag->n, sms = gpu->sms, rc = -1;
	double hop = gpu->hop_us;
	double *c = malloc(((size_t)n + 1) * sizeof *c), *b = malloc(((size_t)n + 1) * sizeof *b);
	double *dr = calloc((size_t)n + 1, sizeof *dr), *freet = calloc((size_t)sms, sizeof *freet);
	int *npend = calloc((size_t)n + 1, sizeof *npend);
	struct heap *pend = calloc((size_t)sms, sizeof *pend), *avail = calloc((size_t)sms, sizeof *avail);
	if (!c || !b || !dr || !freet || !npend || !pend || !avail)
		goto out;
	costs(dag, gpu, c, b);
	for (int64_t e = 0; e < dag->xadj[n]; e++)
		npend[dag->adj[e]]++;
	for (int v = 0; v < n; v++)
		if (npend[v] == 0 && heap_push(&pend[sm[v]], 0.0, v) < 0)
			goto out;
	for (int k = 0; k < n; k++) {
		int s = -1;
		double t = 0;
		for (int q = 0; q < sms; q++) {
			double tq;
			if (avail[q].n > 0 || (pend[q].n > 0 && pend[q].a[0].key <= freet[q]))
				tq = freet[q];
			else if (pend[q].n > 0)
				tq = pend[q].a[0].key;
			else
				continue;
			if (s < 0 || tq < t)
				s = q, t = tq;
		}
		PART_ASSERT(s >= 0);
		while (pend[s].n > 0 && pend[s].a[0].key <= t) {
			int w = heap_pop(&pend[s]).id;
			if (heap_push(&avail[s], -b[w], w) < 0)
				goto out;
		}
		int v = heap_pop(&avail[s]).id;
		double f = t + c[v];
		freet[s] = f;
		order[k] = v;
		for (int64_t e = dag->xadj[v]; e < dag->xadj[v + 1]; e++) {
			int w = dag->adj[e];
			double a = f + (sm[w] != s ? hop : 0.0);
			if (a > dr[w])
				dr[w] = a;
			if (--npend[w] == 0 && heap_push(&pend[sm[w]], dr[w], w) < 0)
				goto out;
		}
	}
	rc = 0;
out:
	for (int s = 0; pend && avail && s < sms; s++)
		free(pend[s].a), free(avail[s].a);
	free(c), free(b), free(dr), free(freet), free(npend), free(pend), free(avail);
	return rc;
}

/* ---- METIS ------------------------------------------------------------------------------------------ */

/* Shared by the METIS windows. */
struct mctx {
	const struct part_dag *dag;
	int sms;
	const int64_t *px, *pe;  /* predecessors with edge ids */
	const int *pa;
	const int *level;
	const double *c;         /* static vertex cost */
	double cmax, vmax;       /* vertex weights: 1 + c / cmax * (vmax - 1) */
	int64_t maxb;            /* edge weights: 1 + bytes / maxb * (wmax - 1) */
	double wmax;
	int *local;              /* n: index inside the current window, -1 outside */
};

static idx_t mweight(const struct mctx *x, int64_t e)
{
	if (x->maxb <= 0)
		return 1;
	return 1 + (idx_t)((double)x->dag->ebytes[e] / x->maxb * (x->wmax - 1));
}

/* Partitions the window vs[0..nw) (dependency levels l0..l1-1) into sms parts with one constraint per
 * level (levels grouped when narrow), edge weights = bytes. Recursive bisection: on these small
 * many-constraint graphs it is several times faster than k-way for about the same cut. part: nw.
 * 0, or -1 out of memory. */
static int metis_window(const struct mctx *x, const int *vs, int nw, int l0, int l1, idx_t *part)
{
	const struct part_dag *dag = x->dag;
	int rc = -1;
	int64_t deg = 0;
	for (int i = 0; i < nw; i++)
		x->local[vs[i]] = i;
	for (int i = 0; i < nw; i++)
		deg += (x->px[vs[i] + 1] - x->px[vs[i]]) + (dag->xadj[vs[i] + 1] - dag->xadj[vs[i]]);
	idx_t *xadj = malloc(((size_t)nw + 1) * sizeof *xadj);
	idx_t *adjncy = malloc((size_t)(deg + 1) * sizeof *adjncy);
	idx_t *adjwgt = malloc((size_t)(deg + 1) * sizeof *adjwgt);
	idx_t *vwgt = malloc((size_t)nw * MAX_CON * sizeof *vwgt);
	if (!xadj || !adjncy || !adjwgt || !vwgt)
		goto out;
	idx_t k = 0;
	for (int i = 0; i < nw; i++) {
		int v = vs[i];
		xadj[i] = k;
		for (int64_t j = x->px[v]; j < x->px[v + 1]; j++)
			if (x->local[x->pa[j]] >= 0 && x->px[v + 1] - x->px[v] <= AFFINITY_FANIN)
				adjncy[k] = x->local[x->pa[j]], adjwgt[k++] = mweight(x, x->pe[j]);
		for (int64_t e = dag->xadj[v]; e < dag->xadj[v + 1]; e++)
			if (x->local[dag->adj[e]] >= 0 &&
			    x->px[dag->adj[e] + 1] - x->px[dag->adj[e]] <= AFFINITY_FANIN)
				adjncy[k] = x->local[dag->adj[e]], adjwgt[k++] = mweight(x, e);
	}
	xadj[nw] = k;
	/* Buckets of consecutive levels, each with at least 2 * sms vertices (METIS cannot spread a
	 * constraint held by fewer vertices than parts), at most MAX_CON of them; per level when the
	 * levels are wide enough. */
	int nl = l1 - l0, status = METIS_ERROR, nb = 0, target = 2 * x->sms;
	if (target < nw / MAX_CON)
		target = nw / MAX_CON;
	int *lb = malloc((size_t)nl * sizeof *lb);
	if (!lb)
		goto out;
	for (int l = 0, i = 0, acc = 0; l < nl; l++) {
		int cnt = 0;
		while (i < nw && x->level[vs[i]] == l0 + l)
			i++, cnt++;
		lb[l] = nb;
		acc += cnt;
		if (acc >= target && nb + 1 < MAX_CON)
			nb++, acc = 0;
		else if (l == nl - 1)
			nb++;
		if (l == nl - 1 && acc > 0 && acc < target && nb > 1) { /* merge a small tail */
			for (int j = l; j >= 0 && lb[j] == nb - 1; j--)
				lb[j] = nb - 2;
			nb--;
		}
	}
	for (int ncon = nb; ncon >= 1 && nw > x->sms; ncon = ncon > 1 ? 1 : 0) {
		for (int i = 0; i < nw; i++) {
			int v = vs[i], bucket = ncon > 1 ? lb[x->level[v] - l0] : 0;
			for (int j = 0; j < ncon; j++)
				vwgt[(size_t)i * ncon + j] = 0;
			vwgt[(size_t)i * ncon + bucket] = 1 + (idx_t)(x->c[v] / x->cmax * (x->vmax - 1));
		}
		idx_t nv = nw, nc = ncon, np = x->sms, objval = 0;
		idx_t options[METIS_NOPTIONS];
		real_t ubvec[MAX_CON];
		for (int j = 0; j < ncon; j++)
			ubvec[j] = 1.05f;
		METIS_SetDefaultOptions(options);
		options[METIS_OPTION_SEED] = METIS_SEED;
		options[METIS_OPTION_NUMBERING] = 0;
		status = METIS_PartGraphRecursive(&nv, &nc, xadj, adjncy, vwgt, NULL, adjwgt, &np, NULL, ubvec,
					     options, &objval, part);
		if (status == METIS_OK)
			break;
	}
	free(lb);
	if (status != METIS_OK) /* too small or too hard for METIS: deal the window out in order */
		for (int i = 0; i < nw; i++)
			part[i] = i % x->sms;
	rc = 0;
out:
	for (int i = 0; i < nw; i++)
		x->local[vs[i]] = -1;
	free(xadj), free(adjncy), free(adjwgt), free(vwgt);
	return rc;
}

struct aff {
	int64_t w;
	int p, s;
};

static int aff_by_pair(const void *a, const void *b)
{
	const struct aff *x = a, *y = b;
	if (x->p != y->p)
		return x->p < y->p ? -1 : 1;
	return (x->s > y->s) - (x->s < y->s);
}

static int aff_by_weight(const void *a, const void *b)
{
	const struct aff *x = a, *y = b;
	if (x->w != y->w)
		return x->w > y->w ? -1 : 1;
	return aff_by_pair(a, b);
}

/* Maps the parts of a window onto SMs so that the bytes arriving from earlier windows stay on one SM
 * as much as possible: a greedy matching on (part, SM) affinity, heaviest pair first; parts left over
 * take the SMs left over in order. The window's vertices are level-sorted and every earlier window
 * holds exactly the lower levels. */
static int relabel(const struct mctx *x, const int *vs, int nw, const idx_t *part, int *sm)
{
	int sms = x->sms, na = 0, rc = -1, l0 = x->level[vs[0]];
	int64_t cross = 0;
	for (int i = 0; i < nw; i++)
		for (int64_t j = x->px[vs[i]]; j < x->px[vs[i] + 1]; j++)
			cross += x->level[x->pa[j]] < l0;
	struct aff *a = malloc((size_t)(cross + 1) * sizeof *a);
	int *map = malloc((size_t)sms * sizeof *map), *taken = calloc((size_t)sms, sizeof *taken);
	if (!a || !map || !taken)
		goto out;
	for (int i = 0; i < nw; i++)
		for (int64_t j = x->px[vs[i]]; j < x->px[vs[i] + 1]; j++)
			if (x->level[x->pa[j]] < l0)
				a[na++] = (struct aff){ mweight(x, x->pe[j]), (int)part[i], sm[x->pa[j]] };
	qsort(a, (size_t)na, sizeof *a, aff_by_pair);
	int nm = 0;
	for (int i = 0; i < na; i++) {
		if (nm > 0 && a[nm - 1].p == a[i].p && a[nm - 1].s == a[i].s)
			a[nm - 1].w += a[i].w;
		else
			a[nm++] = a[i];
	}
	qsort(a, (size_t)nm, sizeof *a, aff_by_weight);
	for (int p = 0; p < sms; p++)
		map[p] = -1;
	for (int i = 0; i < nm; i++)
		if (map[a[i].p] < 0 && !taken[a[i].s])
			map[a[i].p] = a[i].s, taken[a[i].s] = 1;
	for (int p = 0, s = 0; p < sms; p++) {
		if (map[p] >= 0)
			continue;
		while (taken[s])
			s++;
		map[p] = s, taken[s] = 1;
	}
	for (int i = 0; i < nw; i++)
		sm[vs[i]] = map[part[i]];
	rc = 0;
out:
	free(a), free(map), free(taken);
	return rc;
}

/* METIS balances each constraint only within a tolerance, and a level of a few vertices per SM
 * cannot meet it: an SM holding one vertex more than the others stretches the whole wave. Caps every
 * SM at ceil(level size / sms) vertices per level; the overflow goes to the SM, below its cap, that
 * sends the vertex the most bytes, else to the next SM below its cap in round-robin order. */
static int level_balance(const struct mctx *x, const int *vs, const int *lstart, int nlev, int *sm)
{
	int sms = x->sms;
	int *load = calloc((size_t)sms, sizeof *load), *over = malloc((size_t)(lstart[nlev] + 1) * sizeof *over);
	int64_t *aff = calloc((size_t)sms, sizeof *aff);
	if (!load || !over || !aff) {
		free(load), free(over), free(aff);
		return -1;
	}
	int rr = 0;
	for (int l = 0; l < nlev; l++) {
		int a = lstart[l], b = lstart[l + 1], cap = (b - a + sms - 1) / sms, no = 0;
		for (int i = a; i < b; i++) {
			int v = vs[i];
			if (load[sm[v]] < cap)
				load[sm[v]]++;
			else
				over[no++] = v;
		}
		for (int i = 0; i < no; i++) {
			int v = over[i], best = -1;
			for (int64_t j = x->px[v]; j < x->px[v + 1]; j++) {
				int s = sm[x->pa[j]];
				if (load[s] >= cap)
					continue;
				aff[s] += mweight(x, x->pe[j]);
				if (best < 0 || aff[s] > aff[best] || (aff[s] == aff[best] && s < best))
					best = s;
			}
			for (int64_t j = x->px[v]; j < x->px[v + 1]; j++)
				aff[sm[x->pa[j]]] = 0;
			if (best < 0) {
				while (load[rr] >= cap)
					rr = (rr + 1) % sms;
				best = rr;
			}
			sm[v] = best;
			load[best]++;
		}
		for (int i = a; i < b; i++)
			load[sm[vs[i]]] = 0;
	}
	free(load), free(over), free(aff);
	return 0;
}

/* Windows of consecutive dependency levels (MAX_CON levels, more while a window is small), each
 * partitioned by METIS with one balance constraint per level, so every wave is spread over all SMs
 * while producer/consumer pairs inside the window share an SM; windows are then stitched together by
 * relabel() and every level's balance is made exact by level_balance(). One METIS call on the whole
 * DAG with its levels grouped into MAX_CON constraints only balances groups of levels: on the
 * 50,000-vCTA benchmark an SM then takes whole stretches of levels while the others idle (4x the
 * latency of round robin) and METIS takes 9 s. 0, or -1 out of memory. */
static int metis_assign(const struct part_dag *dag, const struct part_gpu *gpu, int *sm)
{
	int n = dag->n, sms = gpu->sms, rc = -1;
	int64_t m = dag->xadj[n];
	struct mctx x = { .dag = dag, .sms = sms };
	int *level = malloc((size_t)n * sizeof *level), *vs = malloc((size_t)n * sizeof *vs);
	int *local = malloc((size_t)n * sizeof *local), *lstart = NULL;
	int64_t *px = NULL, *pe = NULL;
	int *pa = NULL;
	idx_t *part = malloc((size_t)n * sizeof *part);
	double *c = malloc((size_t)n * sizeof *c), *b = malloc((size_t)n * sizeof *b);
	if (!level || !vs || !local || !part || !c || !b || part_preds(dag, &px, &pa, &pe) < 0)
		goto out;
	int nlev = part_levels(dag, level);
	lstart = calloc((size_t)nlev + 2, sizeof *lstart);
	if (!lstart)
		goto out;
	costs(dag, gpu, c, b);
	x.px = px, x.pa = pa, x.pe = pe, x.level = level, x.c = c, x.local = local;
	for (int v = 0; v < n; v++) {
		local[v] = -1;
		if (c[v] > x.cmax)
			x.cmax = c[v];
	}
	for (int64_t e = 0; e < m; e++)
		if (dag->ebytes && dag->ebytes[e] > x.maxb)
			x.maxb = dag->ebytes[e];
	x.wmax = 1000;
	if (x.wmax > (double)(1 << 30) / (double)(2 * m + 1))
		x.wmax = (double)(1 << 30) / (double)(2 * m + 1);
	if (x.wmax < 1)
		x.wmax = 1;
	x.vmax = (double)(1 << 28) / n;
	if (x.vmax > 10000)
		x.vmax = 10000;
	if (x.vmax < 1)
		x.vmax = 1;
	/* vertices sorted by level (ascending ids inside a level) */
	for (int v = 0; v < n; v++)
		lstart[level[v] + 1]++;
	for (int l = 0; l < nlev; l++)
		lstart[l + 1] += lstart[l];
	{
		int *fill = malloc(((size_t)nlev + 1) * sizeof *fill);
		if (!fill)
			goto out;
		memcpy(fill, lstart, ((size_t)nlev + 1) * sizeof *fill);
		for (int v = 0; v < n; v++)
			vs[fill[level[v]]++] = v;
		free(fill);
	}
	int minw = METIS_MIN_PER_PART * sms;
	for (int l0 = 0; l0 < nlev;) {
		int l1 = l0 + 1;
		while (l1 < nlev && (l1 - l0 < MAX_CON || lstart[l1] - lstart[l0] < minw))
			l1++;
		if (l1 < nlev && lstart[nlev] - lstart[l1] < minw)
			l1 = nlev; /* the rest is too small for a window of its own */
		int nw = lstart[l1] - lstart[l0];
		if (metis_window(&x, vs + lstart[l0], nw, l0, l1, part) < 0 ||
		    relabel(&x, vs + lstart[l0], nw, part, sm) < 0)
			goto out;
		l0 = l1;
	}
	if (level_balance(&x, vs, lstart, nlev, sm) < 0)
		goto out;
	rc = 0;
out:
	free(level), free(vs), free(local), free(lstart), free(px), free(pa), free(pe), free(part);
	free(c), free(b);
	return rc;
}

/* ---- entry point -------------------------------------------------------------------------------------- */

int part_place(const struct part_dag *dag, const struct part_gpu *gpu, enum part_policy policy,
	       struct part_placement *pl, char *err, size_t errlen)
{
	if (!pl)
		return part_fail(err, errlen, "no placement to fill");
	memset(pl, 0, sizeof *pl);
	if (!gpu || gpu->sms < 1)
		return part_fail(err, errlen, "the GPU must have at least one SM (sms = %d)", gpu ? gpu->sms : 0);
	if (part_check_dag(dag, err, errlen) < 0)
		return -1;
	if ((int)policy < 0 || policy >= PART__COUNT)
		return part_fail(err, errlen, "unknown placement policy %d", (int)policy);
	int n = dag->n, sms = gpu->sms, rc = -1;
	int *sm = malloc(((size_t)n + 1) * sizeof *sm), *order = malloc(((size_t)n + 1) * sizeof *order);
	if (!sm || !order)
		goto oom;
	switch (policy) {
	case PART_ROUNDROBIN:
		rc = place_roundrobin(dag, sms, sm, order);
		break;
	case PART_WAVEFRONT:
		rc = place_wavefront(dag, sms, sm, order);
		break;
	case PART_CRITICAL:
		rc = place_critical(dag, gpu, sm, order);
		break;
	default:
		if (sms == 1) {
			rc = place_roundrobin(dag, sms, sm, order);
		} else if (n < METIS_MIN_PER_PART * sms) {
			/* Too small to partition (METIS fails or leaves parts empty with a handful of
			 * vertices per part): list scheduling spreads independent vertices over SMs and
			 * keeps chains on one SM, where a hop would cost more than it saves. */
			rc = place_critical(dag, gpu, sm, order);
		} else {
			rc = metis_assign(dag, gpu, sm);
			if (rc == 0)
				rc = order_fixed(dag, gpu, sm, order);
		}
		break;
	}
	if (rc < 0)
		goto oom;
	if (build_lists(n, sms, sm, order, pl) < 0) { /* frees sm */
		sm = NULL;
		goto oom;
	}
	free(order);
	return 0;
oom:
	free(sm);
	free(order);
	return part_fail(err, errlen, "out of memory placing %d vCTAs on %d SMs", n, sms);
}
