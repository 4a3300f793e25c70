/* schedule.c: from the vCTA DAG to a schedule: placement on SMs (partition/), the waits still needed
 * once program order is known, counters shared by producers that signal the same consumers, the
 * verifier's proof and the simulator's prediction. */
#define _GNU_SOURCE /* qsort_r */
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "schedule.h"
#include "ark_dma.h"

/* Chunks (flag raises) of a DMA request of b bytes, as the engine that runtime/session.c starts cuts
 * it. */
static uint32_t dma_chunks(uint64_t b)
{
	uint64_t n = dma_chunk_count(b, ARK_DMA_CHUNK_BYTES, ARK_DMA_CHUNK_MAX_BYTES);
	ARK_ASSERT(n <= UINT32_MAX);
	return (uint32_t)n;
}

/* Edge e from u to a vCTA on another GPU that u sends packets to: the receiver polls the packets
 * (op_comm.cuh), so the edge needs no counter (it stays in the verified DAG). */
static int ll_edge(const struct tiling *s, int u, int64_t e)
{
	return s->v[u].tmpl == ARK_T_SEND_LL && s->v[s->adj[e]].gpu != s->v[u].gpu;
}

/* Producers with the same set of consumers share a counter: hash the sets. */
struct cset {
	uint64_t hash;
	int u;         /* representative producer */
	int counter;
};

static uint64_t hash_consumers(const struct tiling *s, const uint8_t *need, int u)
{
	uint64_t h = 1469598103934665603ull;
	for (int64_t e = s->xadj[u]; e < s->xadj[u + 1]; e++)
		if (need[e]) {
			h ^= (uint64_t)s->adj[e] + 0x9e3779b97f4a7c15ull;
			h *= 1099511628211ull;
		}
	return h;
}

static int same_consumers(const struct tiling *s, const uint8_t *need, int a, int b)
{
	int64_t i = s->xadj[a], j = s->xadj[b];
	for (;;) {
		while (i < s->xadj[a + 1] && !need[i])
			i++;
		while (j < s->xadj[b + 1] && !need[j])
			j++;
		int ea = i == s->xadj[a + 1], eb = j == s->xadj[b + 1];
		if (ea || eb)
			return ea && eb;
		if (s->adj[i] != s->adj[j])
			return 0;
		i++, j++;
	}
}

/* Producers of one op with the same successors in the reduced DAG share a counter: a layer whose
 * tiles all feed the next layer's tiles gets one counter, whatever placement later prunes. A
 * consumer then waits on the whole group of each producer it still needs, which are all its
 * predecessors in the reduced DAG, so the wait cannot deadlock a placement that respects the DAG. */
static void assign_counters(const struct tiling *s, struct schedule *p)
{
	int n = s->n_vcta;
	const uint8_t *grp = p->barrier ? p->need : s->keep; /* barrier mode: no counters at all */
	p->signal = xmalloc((size_t)n * sizeof *p->signal + 1);
	p->per_iter = xmalloc((size_t)n * sizeof *p->per_iter + 1);
	p->n_counters = 0;
	/* Open-addressing table of successor sets. */
	size_t cap = 16;
	while (cap < 2 * (size_t)n)
		cap *= 2;
	struct cset *tab = xcalloc(cap, sizeof *tab);
	for (size_t i = 0; i < cap; i++)
		tab[i].u = -1;
	for (int u = 0; u < n; u++) {
		/* Signal only when some consumer still waits on this producer's group. */
		int waited = 0;
		for (int64_t e = s->xadj[u]; e < s->xadj[u + 1] && !waited; e++)
			waited = grp[e] && !ll_edge(s, u, e);
		if (!waited) {
			p->signal[u] = -1;
			continue;
		}
		if (s->v[u].tmpl == ARK_T_DMA) {
			/* The DMA engine stores absolute values into its flag: a counter of its own, raised
			 * once per chunk of the request (the engine's schedule, dma.h). */
			uint64_t b = (uint64_t)(s->v[u].k1 - s->v[u].k0) *
				     (uint64_t)ark_dtype_size(s->g->tensors[s->v[u].reads[0].tensor].dtype);
			p->signal[u] = p->n_counters;
			p->per_iter[p->n_counters++] = dma_chunks(b);
			continue;
		}
		uint64_t h = hash_consumers(s, grp, u) ^ (uint64_t)s->v[u].op * 0xff51afd7ed558ccdull;
		size_t i = h & (cap - 1);
		while (tab[i].u >= 0 && !(tab[i].hash == h && s->v[tab[i].u].op == s->v[u].op &&
					   same_consumers(s, grp, tab[i].u, u)))
			i = (i + 1) & (cap - 1);
		if (tab[i].u < 0) {
			tab[i] = (struct cset){h, u, p->n_counters};
			p->per_iter[p->n_counters++] = 0;
		}
		p->signal[u] = tab[i].counter;
		p->per_iter[tab[i].counter]++;
	}
	free(tab);
	/* Drop counters nobody waits on (program order covers all their consumers), renumbering. */
	int *waited = xcalloc((size_t)p->n_counters + 1, sizeof *waited);
	for (int u = 0; u < n; u++)
		for (int64_t e = s->xadj[u]; e < s->xadj[u + 1]; e++)
			if (p->need[e] && !ll_edge(s, u, e))
				waited[p->signal[u]] = 1;
	int nc = 0;
	for (int c = 0; c < p->n_counters; c++) {
		p->per_iter[nc] = p->per_iter[c];
		waited[c] = waited[c] ? nc++ : -1;
	}
	for (int u = 0; u < n; u++)
		if (p->signal[u] >= 0)
			p->signal[u] = waited[p->signal[u]];
	p->n_counters = nc;
	free(waited);
}

/* Every counter lives on the GPU of the vCTAs that wait on it (one GPU: a producer's consumers are
 * all on one GPU, which the tiler guarantees) and is numbered there from 0. A counter some producer
 * raises from another GPU, or the DMA engine raises, is waited on at system scope. */
static void map_counters(const struct tiling *s, struct schedule *p)
{
	int nc = p->n_counters;
	p->ctr_gpu = xmalloc((size_t)nc * sizeof *p->ctr_gpu + 1);
	p->ctr_index = xmalloc((size_t)nc * sizeof *p->ctr_index + 1);
	p->ctr_sys = xcalloc((size_t)nc + 1, 1);
	for (int c = 0; c < nc; c++)
		p->ctr_gpu[c] = -1;
	for (int u = 0; u < s->n_vcta; u++)
		for (int64_t e = s->xadj[u]; e < s->xadj[u + 1]; e++)
			if (p->need[e] && !ll_edge(s, u, e)) {
				int c = p->signal[u], gv = s->v[s->adj[e]].gpu;
				ARK_ASSERT(c >= 0 && (p->ctr_gpu[c] < 0 || p->ctr_gpu[c] == gv));
				p->ctr_gpu[c] = gv;
			}
	memset(p->gpu_counters, 0, sizeof p->gpu_counters);
	for (int c = 0; c < nc; c++) {
		ARK_ASSERT(p->ctr_gpu[c] >= 0);
		p->ctr_index[c] = p->gpu_counters[p->ctr_gpu[c]]++;
	}
	for (int u = 0; u < s->n_vcta; u++)
		if (p->signal[u] >= 0 && (s->v[u].tmpl == ARK_T_DMA || s->v[u].gpu != p->ctr_gpu[p->signal[u]]))
			p->ctr_sys[p->signal[u]] = 1;
}

/* Placement of a model on several GPUs: each GPU's vCTAs placed by the policy on that GPU's SMs as
 * a DAG of their own, SM s of GPU g numbered g * sms + s. Every SM's list is then ordered by vCTA
 * number, a topological order of the whole DAG: paths through other GPUs (a send, the peer's sum,
 * the send back) are invisible to a per-GPU placement, and an order that ignored them could
 * deadlock. */
static int place_multi(const struct tiling *s, const struct part_gpu *gpu, enum part_policy policy,
		       struct part_placement *pl, char *err, size_t errlen)
{
	int n = s->n_vcta, G = s->g->gpus, sms = gpu->sms, rc = 0;
	int *loc = xmalloc((size_t)n * sizeof *loc + 1), *glob = xmalloc((size_t)n * sizeof *glob + 1);
	int64_t *xadj = xmalloc(((size_t)n + 1) * sizeof *xadj);
	int *adj = xmalloc((size_t)s->n_edges * sizeof *adj + 1);
	int64_t *eb = xmalloc((size_t)s->n_edges * sizeof *eb + 1);
	double *fl = xmalloc((size_t)n * sizeof *fl + 1), *by = xmalloc((size_t)n * sizeof *by + 1);
	uint8_t *tc = xmalloc((size_t)n + 1);
	int *grp = xmalloc((size_t)n * sizeof *grp + 1);
	pl->sms = G * sms;
	pl->sm = xmalloc((size_t)n * sizeof *pl->sm + 1);
	pl->pos = xmalloc((size_t)n * sizeof *pl->pos + 1);
	pl->begin = xcalloc((size_t)pl->sms + 1, sizeof *pl->begin);
	pl->list = xmalloc((size_t)n * sizeof *pl->list + 1);
	for (int g = 0; g < G && rc == 0; g++) {
		int m = 0;
		for (int v = 0; v < n; v++)
			if (s->v[v].gpu == g)
				loc[v] = m, glob[m++] = v;
		if (!m)
			continue;
		int64_t ne = 0;
		for (int k = 0; k < m; k++) {
			int v = glob[k];
			xadj[k] = ne;
			for (int64_t e = s->xadj[v]; e < s->xadj[v + 1]; e++)
				if (s->v[s->adj[e]].gpu == g) {
					adj[ne] = loc[s->adj[e]];
					eb[ne++] = s->ebytes[e];
				}
			fl[k] = s->flops[v], by[k] = s->bytes[v], tc[k] = s->tc[v], grp[k] = s->group[v];
		}
		xadj[m] = ne;
		struct part_dag sub = {.n = m, .xadj = xadj, .adj = adj, .ebytes = eb, .flops = fl, .bytes = by,
				       .tc = tc, .group = grp};
		struct part_placement sp;
		if (part_place(&sub, gpu, policy, &sp, err, errlen) < 0) {
			rc = -1;
			break;
		}
		for (int k = 0; k < m; k++)
			pl->sm[glob[k]] = g * sms + sp.sm[k];
		part_placement_free(&sp);
	}
	if (rc == 0) {
		for (int v = 0; v < n; v++)
			pl->begin[pl->sm[v] + 1]++;
		for (int q = 0; q < pl->sms; q++)
			pl->begin[q + 1] += pl->begin[q];
		int *fill = xmalloc((size_t)pl->sms * sizeof *fill);
		memcpy(fill, pl->begin, (size_t)pl->sms * sizeof *fill);
		for (int v = 0; v < n; v++) {
			pl->pos[v] = fill[pl->sm[v]] - pl->begin[pl->sm[v]];
			pl->list[fill[pl->sm[v]]++] = v;
		}
		free(fill);
	}
	free(loc), free(glob), free(xadj), free(adj), free(eb), free(fl), free(by), free(tc), free(grp);
	return rc;
}

static int cmp_wait(const void *a, const void *b)
{
	const struct ark_wait *x = a, *y = b;
	return x->counter < y->counter ? -1 : x->counter > y->counter;
}

/* A consumer of a DMA vCTA may start once the chunks it touches arrived, when every vCTA that
 * depends on the transfer waits on its flag directly: all of them are on the receiving GPU (then
 * schedule_build makes every edge of the transfer a wait). Otherwise a consumer may stand for others
 * that depend on the transfer through it, and it waits for all of it. */
static int dma_partial(const struct tiling *s, int u)
{
	int g = s->g->tensors[s->v[u].write.tensor].gpu;
	for (int64_t e = s->xadj[u]; e < s->xadj[u + 1]; e++)
		if (s->v[s->adj[e]].gpu != g)
			return 0;
	return 1;
}

/* Flag raises of DMA vCTA u (per_iter of its counter) that consumer v waits for: 1 + the chunk that
 * holds the last byte of u's transfer v reads or writes. The engine copies the write box as one
 * contiguous range: element (r, c) of the box is at (r - r0) * cols + (c - c0) from its start. */
static uint32_t dma_need(const struct tiling *s, int u, int v, uint32_t per_iter)
{
	const struct vcta *U = &s->v[u], *V = &s->v[v];
	const struct region *w = &U->write;
	int64_t cols = s->cols[w->tensor], last = -1;
	for (int i = 0; i <= V->n_reads; i++) {
		const struct region *r = i < V->n_reads ? &V->reads[i] : &V->write;
		if (r->tensor != w->tensor)
			continue;
		int64_t r1 = r->r1 < w->r1 ? r->r1 : w->r1, c1 = r->c1 < w->c1 ? r->c1 : w->c1;
		if ((r->r0 > w->r0 ? r->r0 : w->r0) >= r1 || (r->c0 > w->c0 ? r->c0 : w->c0) >= c1)
			continue;
		int64_t idx = (r1 - 1 - w->r0) * cols + (c1 - 1 - w->c0);
		if (idx > last)
			last = idx;
	}
	if (last < 0) /* a dependency through other memory (reuse): all of it */
		return per_iter;
	uint64_t end = (uint64_t)(last + 1) * (uint64_t)ark_dtype_size(s->g->tensors[w->tensor].dtype);
	uint32_t need = (uint32_t)dma_chunk_of(end - 1, ARK_DMA_CHUNK_BYTES, ARK_DMA_CHUNK_MAX_BYTES) + 1;
	ARK_ASSERT(need >= 1 && need <= per_iter);
	return need;
}

/* Each consumer waits on the counters of its needed producers, once per counter (for the largest
 * need). */
static void build_waits(const struct tiling *s, struct schedule *p)
{
	int n = s->n_vcta;
	int64_t *cnt = xcalloc((size_t)n + 1, sizeof *cnt);
	for (int u = 0; u < n; u++)
		for (int64_t e = s->xadj[u]; e < s->xadj[u + 1]; e++)
			if (p->need[e] && !ll_edge(s, u, e))
				cnt[s->adj[e] + 1]++;
	for (int v = 0; v < n; v++)
		cnt[v + 1] += cnt[v];
	struct ark_wait *w = xmalloc((size_t)cnt[n] * sizeof *w + 1);
	int64_t *fill = xmalloc((size_t)n * sizeof *fill + 1);
	memcpy(fill, cnt, (size_t)n * sizeof *fill);
	for (int u = 0; u < n; u++) {
		int partial = s->v[u].tmpl == ARK_T_DMA && dma_partial(s, u);
		for (int64_t e = s->xadj[u]; e < s->xadj[u + 1]; e++)
			if (p->need[e] && !ll_edge(s, u, e)) {
				int c = p->signal[u];
				uint32_t need = partial ? dma_need(s, u, s->adj[e], p->per_iter[c]) : p->per_iter[c];
				w[fill[s->adj[e]]++] = (struct ark_wait){(uint32_t)c, p->per_iter[c], need, 0};
			}
	}
	/* Sort and deduplicate each consumer's waits. */
	p->wait0 = xmalloc(((size_t)n + 1) * sizeof *p->wait0);
	int64_t out = 0;
	for (int v = 0; v < n; v++) {
		qsort(w + cnt[v], (size_t)(cnt[v + 1] - cnt[v]), sizeof *w, cmp_wait);
		p->wait0[v] = out;
		for (int64_t i = cnt[v]; i < cnt[v + 1]; i++)
			if (out == p->wait0[v] || w[out - 1].counter != w[i].counter)
				w[out++] = w[i];
			else if (w[i].need > w[out - 1].need)
				w[out - 1].need = w[i].need;
	}
	p->wait0[n] = out;
	p->waits = w;
	free(cnt);
	free(fill);
}

/* Dependency levels: longest path from a source over the kept edges. */
static void levels(const struct tiling *s, struct schedule *p)
{
	p->level = xcalloc((size_t)s->n_vcta + 1, sizeof *p->level);
	p->n_levels = s->n_vcta ? 1 : 0;
	for (int u = 0; u < s->n_vcta; u++)
		for (int64_t e = s->xadj[u]; e < s->xadj[u + 1]; e++)
			if (s->keep[e] && p->level[s->adj[e]] < p->level[u] + 1) {
				p->level[s->adj[e]] = p->level[u] + 1;
				if (p->level[u] + 2 > p->n_levels)
					p->n_levels = p->level[u] + 2;
			}
}

static int by_level_then_pos(const void *a, const void *b, void *ctx)
{
	const struct schedule *p = ctx;
	int x = *(const int *)a, y = *(const int *)b;
	if (p->level[x] != p->level[y])
		return p->level[x] - p->level[y];
	return p->pl.pos[x] - p->pl.pos[y];
}

int schedule_build(struct tiling *s, const struct part_gpu *gpu, enum part_policy policy, int barrier,
		   struct schedule *p)
{
	return schedule_place(s, gpu, policy, barrier, p) < 0 ? -1 : schedule_check(s, p);
}

int schedule_place(struct tiling *s, const struct part_gpu *gpu, enum part_policy policy, int barrier,
		   struct schedule *p)
{
	char err[512];
	struct part_dag dag;
	tiling_dag(s, &dag);
	memset(p, 0, sizeof *p);
	p->policy = policy;
	p->barrier = barrier;
	int multi = s->g->gpus > 1;
	if (multi && barrier) {
		diag_error(s->g->file, 0, "--sync barrier handles single-GPU models only; this one runs on %d GPUs",
			   s->g->gpus);
		diag_hint("use the default --sync counters");
		return -1;
	}
	if (multi ? place_multi(s, gpu, policy, &p->pl, err, sizeof err) < 0
		  : part_place(&dag, gpu, policy, &p->pl, err, sizeof err) < 0) {
		diag_error(s->g->file, 0, "placement (%s) failed: %s", part_policy_name[policy], err);
		return -1;
	}
	levels(s, p);
	if (barrier) {
		/* ARK's scheme: every SM runs its tasks level by level; no waits between tasks. */
		for (int sm = 0; sm < p->pl.sms; sm++) {
			int *l = p->pl.list + p->pl.begin[sm];
			qsort_r(l, (size_t)(p->pl.begin[sm + 1] - p->pl.begin[sm]), sizeof *l, by_level_then_pos, p);
			for (int i = p->pl.begin[sm]; i < p->pl.begin[sm + 1]; i++)
				p->pl.pos[p->pl.list[i]] = i - p->pl.begin[sm];
		}
		p->need = xcalloc((size_t)s->n_edges + 1, 1);
		p->n_need = 0;
	} else {
		p->need = xmalloc((size_t)s->n_edges + 1);
		p->n_need = part_needed_waits(&dag, &p->pl, p->need);
		if (p->n_need < 0) {
			diag_error(s->g->file, 0, "placement (%s) orders the SM lists against the dependencies",
				   part_policy_name[policy]);
			return -1;
		}
		/* A DMA vCTA is finished before its data arrives: program order after it proves nothing,
		 * so every consumer in the reduced DAG waits on its flag. A consumer waits only for the
		 * chunks it touches (build_waits) when every vCTA that depends on the transfer is on the
		 * receiving GPU: then each of them waits on the flag itself, none relies on another.
		 * part_verify cannot tell a push from an arrival, but tables_verify can: it models every
		 * chunk, and rejects the tables when this is missing (a consumer after a task of its SM
		 * that waited for the first chunks only). */
		for (int u = 0; u < s->n_vcta; u++)
			if (s->v[u].tmpl == ARK_T_DMA) {
				int all = dma_partial(s, u);
				for (int64_t e = s->xadj[u]; e < s->xadj[u + 1]; e++)
					if ((all || s->keep[e]) && !p->need[e]) {
						p->need[e] = 1;
						p->n_need++;
					}
			}
	}
	assign_counters(s, p);
	map_counters(s, p);
	build_waits(s, p);
	struct part_gpu all = *gpu; /* several GPUs: one machine with all their SMs and bandwidth */
	all.sms = p->pl.sms;
	all.dram_gbps *= s->g->gpus;
	all.tc_tflops *= s->g->gpus;
	all.fp32_tflops *= s->g->gpus;
	part_simulate(&dag, barrier ? s->keep : p->need, &p->pl, multi ? &all : gpu, barrier, &p->sim);
	return 0;
}

int schedule_check(struct tiling *s, struct schedule *p)
{
	char err[512];
	struct part_dag dag;
	tiling_dag(s, &dag);
	if (!p->barrier && part_verify(&dag, p->need, &p->pl, s->n_hazards, s->hu, s->hv, err, sizeof err) < 0) {
		diag_error(s->g->file, 0, "schedule verification failed (%s): %s", part_policy_name[p->policy], err);
		return -1;
	}
	if (tables_build(s, p, &p->tab) < 0)
		return -1;
	char terr[1024];
	if (tables_verify(s, &p->tab, terr, sizeof terr) < 0) {
		diag_error(s->g->file, 0, "the tables of the schedule (%s) are not safe: %s", part_policy_name[p->policy],
			   terr);
		return -1;
	}
	return 0;
}

void schedule_free(struct schedule *p)
{
	part_placement_free(&p->pl);
	free(p->need);
	free(p->signal);
	free(p->per_iter);
	free(p->wait0);
	free(p->waits);
	free(p->level);
	free(p->ctr_gpu);
	free(p->ctr_index);
	free(p->ctr_sys);
	tables_free(&p->tab);
	memset(p, 0, sizeof *p);
}

void schedule_dump(const struct tiling *s, const struct schedule *p, FILE *f)
{
	const struct graph *g = s->g;
	fprintf(f, "# placement of %s (%s%s): %d vCTAs on %d SMs, %d counters, %lld waits\n", g->name,
		part_policy_name[p->policy], p->barrier ? ", barrier" : "", s->n_vcta, p->pl.sms, p->n_counters,
		(long long)p->wait0[s->n_vcta]);
	for (int sm = 0; sm < p->pl.sms; sm++) {
		fprintf(f, "SM %d:", sm);
		for (int i = p->pl.begin[sm]; i < p->pl.begin[sm + 1]; i++) {
			int v = p->pl.list[i];
			fprintf(f, " v%d(%s", v, g->ops[s->v[v].op].name);
			for (int64_t w = p->wait0[v]; w < p->wait0[v + 1]; w++)
				fprintf(f, " w:c%u/%u", p->waits[w].counter, p->waits[w].need);
			if (p->signal[v] >= 0)
				fprintf(f, " s:c%d", p->signal[v]);
			fprintf(f, ")");
		}
		fprintf(f, "\n");
	}
}
