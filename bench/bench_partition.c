/* bench_partition.c: times reduction, placement, needed waits, verification and simulation on a
 * synthetic transformer-like DAG of >= 50,000 vCTAs, then compares the placement policies. */
#include "partition/part.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TARGET_N 50000
#define SMS 132

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}
static int rnd(int lo, int hi) /* inclusive */
{
	return lo + (int)(rng() % (uint64_t)(hi - lo + 1));
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct graph {
	int n;
	int64_t m, cap;
	int64_t *xadj;  /* (n + 1) */
	int *adj;       /* (m) */
	int64_t *ebytes;
	double *flops, *bytes;
	uint8_t *tc;
};

static void add_edge(struct graph *g, int u, int64_t eb)
{
	if (g->m == g->cap) {
		g->cap = g->cap ? 2 * g->cap : 1 << 20;
		g->adj = realloc(g->adj, (size_t)g->cap * sizeof *g->adj);
		g->ebytes = realloc(g->ebytes, (size_t)g->cap * sizeof *g->ebytes);
		if (!g->adj || !g->ebytes) {
			fprintf(stderr, "out of memory\n");
			exit(1);
		}
	}
	g->adj[g->m] = u;       /* stored as (consumer-major) predecessor lists, transposed below */
	g->ebytes[g->m++] = eb;
}

/* Layers of 132..264 tiles. Each layer reads the previous one: elementwise ops one tile (plus, now and
 * then, a residual tile from a few layers back), blocked ops a window of 2..32 tiles, matmuls reading
 * the whole activation vector all of it. Built as predecessor lists, then transposed to successors. */
static void build(struct graph *g, int target)
{
	int cap = target + 512;
	int *lstart = malloc((size_t)cap * sizeof *lstart), *lwidth = malloc((size_t)cap * sizeof *lwidth);
	int64_t *pxadj = calloc((size_t)cap + 1, sizeof *pxadj);
	g->flops = malloc((size_t)cap * sizeof *g->flops);
	g->bytes = malloc((size_t)cap * sizeof *g->bytes);
	g->tc = malloc((size_t)cap);
	int n = 0, nl = 0;
	while (n < target) {
		int w = rnd(132, 264), kind = nl == 0 ? -1 : rnd(0, 99);
		lstart[nl] = n, lwidth[nl] = w;
		for (int i = 0; i < w; i++, n++) {
			pxadj[n] = g->m;
			if (kind < 0) {                 /* inputs */
				g->flops[n] = 0, g->bytes[n] = 8192, g->tc[n] = 0;
				continue;
			}
			int ps = lstart[nl - 1], pw = lwidth[nl - 1];
			if (kind < 48) {                /* elementwise */
				add_edge(g, ps + (int)((int64_t)i * pw / w), 4096);
				if (nl >= 4 && rnd(0, 99) < 30) {
					int back = nl - rnd(2, 4);
					int u = lstart[back] + (int)((int64_t)i * lwidth[back] / w);
					if (u < ps)
						add_edge(g, u, 4096);
				}
				g->flops[n] = 4096, g->bytes[n] = 16384, g->tc[n] = 0;
			} else if (kind < 88) {         /* blocked: a window of the previous layer */
				int k = rnd(2, 32), c = (int)((int64_t)i * pw / w) - k / 2;
				if (c < 0)
					c = 0;
				if (c + k > pw)
					c = pw - k > 0 ? pw - k : 0;
				for (int j = c; j < c + k && j < pw; j++)
					add_edge(g, ps + j, 2048);
				g->flops[n] = 1 << 20, g->bytes[n] = 65536, g->tc[n] = 1;
			} else {                        /* matmul tile: whole activation in, weights streamed */
				for (int j = 0; j < pw; j++)
					add_edge(g, ps + j, 512);
				g->flops[n] = 1 << 19, g->bytes[n] = 524288, g->tc[n] = 1;
			}
		}
		nl++;
	}
	pxadj[n] = g->m;
	/* transpose predecessor lists (ascending within a vertex) into successor lists */
	g->n = n;
	g->xadj = calloc((size_t)n + 1, sizeof *g->xadj);
	int *adj = malloc((size_t)g->m * sizeof *adj);
	int64_t *eb = malloc((size_t)g->m * sizeof *eb), *fill = malloc((size_t)(n + 1) * sizeof *fill);
	for (int64_t e = 0; e < g->m; e++)
		g->xadj[g->adj[e] + 1]++;
	for (int v = 0; v < n; v++)
		g->xadj[v + 1] += g->xadj[v];
	memcpy(fill, g->xadj, (size_t)(n + 1) * sizeof *fill);
	for (int v = 0; v < n; v++) {
		/* predecessors of v in ascending order so each successor list comes out ascending; the
		 * residual edge was appended last but is the smallest: sort the short list */
		int64_t a = pxadj[v], b = pxadj[v + 1];
		for (int64_t i = a + 1; i < b; i++)
			for (int64_t j = i; j > a && g->adj[j - 1] > g->adj[j]; j--) {
				int t = g->adj[j];
				g->adj[j] = g->adj[j - 1], g->adj[j - 1] = t;
				int64_t te = g->ebytes[j];
				g->ebytes[j] = g->ebytes[j - 1], g->ebytes[j - 1] = te;
			}
	}
	for (int v = 0; v < n; v++)
		for (int64_t i = pxadj[v]; i < pxadj[v + 1]; i++) {
			int64_t k = fill[g->adj[i]]++;
			adj[k] = v;
			eb[k] = g->ebytes[i];
		}
	free(g->adj), free(g->ebytes), free(fill), free(pxadj), free(lstart), free(lwidth);
	g->adj = adj, g->ebytes = eb;
	double tb = 0;
	for (int v = 0; v < n; v++)
		tb += g->bytes[v];
	printf("synthetic DAG: %d vCTAs in %d layers, %lld edges, %.2f GB moved (%.0f us at 2900 GB/s)\n",
	       n, nl, (long long)g->m, tb * 1e-9, tb / 2900e3);
}

static struct part_dag as_dag(const struct graph *g)
{
	return (struct part_dag){ .n = g->n, .xadj = g->xadj, .adj = g->adj, .ebytes = g->ebytes,
				  .flops = g->flops, .bytes = g->bytes, .tc = g->tc };
}

int main(void)
{
	struct graph g = { 0 };
	build(&g, TARGET_N);
	struct part_dag full = as_dag(&g);
	struct part_gpu gpu;
	part_gpu_default(&gpu, SMS);
	char err[512];
	double t0 = now(), t;

	/* 1. transitive reduction */
	uint8_t *keep = malloc((size_t)g.m);
	t = now();
	int64_t kept = part_transitive_reduce(&full, keep);
	double t_reduce = now() - t;
	if (kept < 0) {
		fprintf(stderr, "transitive reduction failed\n");
		return 1;
	}
	/* the reduced DAG, compacted */
	struct graph r = g;
	r.m = kept;
	r.xadj = malloc((size_t)(g.n + 1) * sizeof *r.xadj);
	r.adj = malloc((size_t)(kept + 1) * sizeof *r.adj);
	r.ebytes = malloc((size_t)(kept + 1) * sizeof *r.ebytes);
	int64_t k = 0;
	for (int u = 0; u < g.n; u++) {
		r.xadj[u] = k;
		for (int64_t e = g.xadj[u]; e < g.xadj[u + 1]; e++)
			if (keep[e])
				r.adj[k] = g.adj[e], r.ebytes[k++] = g.ebytes[e];
	}
	r.xadj[g.n] = k;
	struct part_dag red = as_dag(&r);

	/* 2. placement */
	struct part_placement pl;
	t = now();
	if (part_place(&red, &gpu, PART_METIS, &pl, err, sizeof err) < 0) {
		fprintf(stderr, "placement failed: %s\n", err);
		return 1;
	}
	double t_place = now() - t;

	/* 3. waits still needed */
	uint8_t *need = malloc((size_t)kept + 1);
	t = now();
	int64_t needed = part_needed_waits(&red, &pl, need);
	double t_needed = now() - t;
	if (needed < 0) {
		fprintf(stderr, "needed waits failed\n");
		return 1;
	}

	/* 4. verification: every original edge is a hazard */
	int *hu = malloc((size_t)g.m * sizeof *hu), *hv = malloc((size_t)g.m * sizeof *hv);
	for (int u = 0; u < g.n; u++)
		for (int64_t e = g.xadj[u]; e < g.xadj[u + 1]; e++)
			hu[e] = u, hv[e] = g.adj[e];
	t = now();
	int vrc = part_verify(&red, need, &pl, g.m, hu, hv, err, sizeof err);
	double t_verify = now() - t;
	if (vrc < 0) {
		fprintf(stderr, "verification failed: %s\n", err);
		return 1;
	}

	/* 5. simulation */
	struct part_sim sim;
	t = now();
	if (part_simulate(&red, need, &pl, &gpu, 0, &sim) < 0) {
		fprintf(stderr, "simulation failed\n");
		return 1;
	}
	double t_sim = now() - t, total = now() - t0;

	printf("transitive reduction  %8.3f s  (%lld of %lld edges kept)\n", t_reduce, (long long)kept,
	       (long long)g.m);
	printf("placement (metis)     %8.3f s\n", t_place);
	printf("needed waits          %8.3f s  (%lld of %lld waits needed)\n", t_needed, (long long)needed,
	       (long long)kept);
	printf("verification          %8.3f s  (%lld hazards)\n", t_verify, (long long)g.m);
	printf("simulation            %8.3f s\n", t_sim);
	printf("total                 %8.3f s\n", total);
	part_placement_free(&pl);

	/* policies side by side (not timed in the total) */
	printf("\npolicy       place s   waits   latency us  critical us  util   hop us  (chain: compute memory hop wait dispatch, len)\n");
	for (int p = 0; p < PART__COUNT; p++) {
		t = now();
		if (part_place(&red, &gpu, p, &pl, err, sizeof err) < 0) {
			fprintf(stderr, "%s: %s\n", part_policy_name[p], err);
			return 1;
		}
		double tp = now() - t;
		int64_t nw = part_needed_waits(&red, &pl, need);
		if (nw < 0 || part_verify(&red, need, &pl, g.m, hu, hv, err, sizeof err) < 0 ||
		    part_simulate(&red, need, &pl, &gpu, 0, &sim) < 0) {
			fprintf(stderr, "%s: check failed: %s\n", part_policy_name[p], err);
			return 1;
		}
		int64_t cut = 0;
		for (int u = 0; u < r.n; u++)
			for (int64_t e = r.xadj[u]; e < r.xadj[u + 1]; e++)
				cut += pl.sm[u] != pl.sm[r.adj[e]];
		printf("%-11s %7.3f %8lld %12.1f %12.1f %5.2f %8.1f  (%.1f %.1f %.1f %.1f %.1f, %d)  cut %lld\n",
		       part_policy_name[p], tp, (long long)nw, sim.latency_us, sim.critical_us,
		       sim.utilisation, sim.hop_us, sim.compute_us, sim.memory_us, sim.hop_us, sim.wait_us,
		       sim.dispatch_us, sim.critical_len, (long long)cut);
		if (p == PART_WAVEFRONT) {
			struct part_sim bs;
			if (part_simulate(&red, need, &pl, &gpu, 1, &bs) == 0)
				printf("%-11s %7s %8s %12.1f %12.1f %5.2f  (grid barrier per level)\n", "  +barrier",
				       "", "", bs.latency_us, bs.critical_us, bs.utilisation);
		}
		part_placement_free(&pl);
	}
	free(keep), free(need), free(hu), free(hv);
	free(r.xadj), free(r.adj), free(r.ebytes);
	free(g.xadj), free(g.adj), free(g.ebytes), free(g.flops), free(g.bytes), free(g.tc);
	return 0;
}
