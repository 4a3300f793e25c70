/* test_partition.c: placement policies, transitive reduction and needed waits against brute force. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "partition/part.h"

/* ---- test graphs -------------------------------------------------------------------------------- */

struct tg {
	int n;
	int64_t m;
	int64_t *xadj;   /* (n + 1) */
	int *adj;        /* (m) */
	int64_t *ebytes; /* (m) */
	double *flops, *bytes;
	uint8_t *tc;
	struct part_dag dag;
};

static uint64_t rs;
static uint64_t rng(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

/* From an adjacency matrix a[u * n + v] (only u < v used). */
static void tg_from_matrix(struct tg *g, int n, const uint8_t *a)
{
	memset(g, 0, sizeof *g);
	g->n = n;
	g->xadj = calloc((size_t)n + 1, sizeof *g->xadj);
	int64_t m = 0;
	for (int u = 0; u < n; u++)
		for (int v = u + 1; v < n; v++)
			m += a[(size_t)u * n + v] != 0;
	g->adj = malloc((size_t)(m + 1) * sizeof *g->adj);
	g->ebytes = malloc((size_t)(m + 1) * sizeof *g->ebytes);
	g->flops = malloc(((size_t)n + 1) * sizeof *g->flops);
	g->bytes = malloc(((size_t)n + 1) * sizeof *g->bytes);
	g->tc = malloc((size_t)n + 1);
	m = 0;
	for (int u = 0; u < n; u++) {
		g->xadj[u] = m;
		for (int v = u + 1; v < n; v++)
			if (a[(size_t)u * n + v]) {
				g->adj[m] = v;
				g->ebytes[m++] = 256 + (int64_t)(rng() % 4096);
			}
		g->flops[u] = 1e5 + (double)(rng() % 1000000);
		g->bytes[u] = 4096 + (double)(rng() % 100000);
		g->tc[u] = rng() % 2;
	}
	g->xadj[n] = m;
	g->m = m;
	g->dag = (struct part_dag){ .n = n, .xadj = g->xadj, .adj = g->adj, .ebytes = g->ebytes,
				    .flops = g->flops, .bytes = g->bytes, .tc = g->tc };
}

static void tg_random(struct tg *g, int n, int pct, uint64_t seed)
{
	rs = seed * 0x9e3779b97f4a7c15ull + 12345;
	uint8_t *a = calloc((size_t)n * n + 1, 1);
	for (int u = 0; u < n; u++)
		for (int v = u + 1; v < n; v++)
			a[(size_t)u * n + v] = (int)(rng() % 100) < pct;
	tg_from_matrix(g, n, a);
	free(a);
}

/* Layered: `layers` layers of `w` vertices, each reading 1..3 vertices of the previous layer, and now
 * and then one of two layers back (so some edges are transitive). */
static void tg_layered(struct tg *g, int layers, int w, uint64_t seed)
{
	rs = seed * 0x9e3779b97f4a7c15ull + 777;
	int n = layers * w;
	uint8_t *a = calloc((size_t)n * n + 1, 1);
	for (int l = 1; l < layers; l++)
		for (int i = 0; i < w; i++) {
			int v = l * w + i, k = 1 + (int)(rng() % 3);
			for (int j = 0; j < k; j++)
				a[(size_t)((l - 1) * w + (int)(rng() % w)) * n + v] = 1;
			if (l >= 2 && rng() % 3 == 0)
				a[(size_t)((l - 2) * w + (int)(rng() % w)) * n + v] = 1;
		}
	tg_from_matrix(g, n, a);
	free(a);
}

static void tg_free(struct tg *g)
{
	free(g->xadj), free(g->adj), free(g->ebytes), free(g->flops), free(g->bytes), free(g->tc);
}

/* reach[u * n + v] = 1 iff a path u -> v of one or more edges exists (Floyd-Warshall). */
static uint8_t *closure(const struct tg *g)
{
	int n = g->n;
	uint8_t *r = calloc((size_t)n * n + 1, 1);
	for (int u = 0; u < n; u++)
		for (int64_t e = g->xadj[u]; e < g->xadj[u + 1]; e++)
			r[(size_t)u * n + g->adj[e]] = 1;
	for (int k = 0; k < n; k++)
		for (int i = 0; i < n; i++)
			if (r[(size_t)i * n + k])
				for (int j = 0; j < n; j++)
					r[(size_t)i * n + j] |= r[(size_t)k * n + j];
	return r;
}

/* ---- placement checks ------------------------------------------------------------------------------ */

static void check_placement(const struct tg *g, const struct part_placement *pl, int sms)
{
	char err[256] = "";
	assert_int_equal(pl->sms, sms);
	assert_int_equal(part_check_placement(&g->dag, pl, err, sizeof err), 0);
	int *seen = calloc((size_t)g->n + 1, sizeof *seen);
	for (int i = 0; i < g->n; i++)
		seen[pl->list[i]]++;
	for (int v = 0; v < g->n; v++) {
		assert_int_equal(seen[v], 1);
		assert_true(pl->sm[v] >= 0 && pl->sm[v] < sms);
		assert_int_equal(pl->list[pl->begin[pl->sm[v]] + pl->pos[v]], v);
	}
	/* topologically consistent on every SM: a producer on the consumer's SM comes first */
	for (int u = 0; u < g->n; u++)
		for (int64_t e = g->xadj[u]; e < g->xadj[u + 1]; e++)
			if (pl->sm[u] == pl->sm[g->adj[e]])
				assert_true(pl->pos[u] < pl->pos[g->adj[e]]);
	int *order = malloc(((size_t)g->n + 1) * sizeof *order), *indeg = malloc(((size_t)g->n + 1) * sizeof *indeg);
	assert_int_equal(part_hb_order(&g->dag, NULL, pl, order, indeg), g->n);
	free(order), free(indeg), free(seen);
}

static void place_ok(const struct tg *g, int sms, enum part_policy p, struct part_placement *pl)
{
	struct part_gpu gpu;
	char err[256] = "";
	part_gpu_default(&gpu, sms);
	int rc = part_place(&g->dag, &gpu, p, pl, err, sizeof err);
	if (rc != 0)
		fail_msg("%s on %d SMs: %s", part_policy_name[p], sms, err);
	check_placement(g, pl, sms);
	/* same input, same output */
	struct part_placement again;
	assert_int_equal(part_place(&g->dag, &gpu, p, &again, err, sizeof err), 0);
	assert_memory_equal(pl->sm, again.sm, (size_t)g->n * sizeof(int));
	assert_memory_equal(pl->list, again.list, (size_t)g->n * sizeof(int));
	assert_memory_equal(pl->begin, again.begin, ((size_t)sms + 1) * sizeof(int));
	part_placement_free(&again);
}

static void test_policies_random(void **state)
{
	(void)state;
	const int ns[] = { 1, 2, 7, 40, 300 }, smss[] = { 1, 3, 8, 132 };
	for (int i = 0; i < 5; i++)
		for (int j = 0; j < 4; j++)
			for (int p = 0; p < PART__COUNT; p++) {
				struct tg g;
				tg_random(&g, ns[i], 300 / (ns[i] + 5) + 2, (uint64_t)(i * 10 + j));
				struct part_placement pl;
				place_ok(&g, smss[j], p, &pl);
				part_placement_free(&pl);
				tg_free(&g);
			}
}

static void test_policies_layered(void **state)
{
	(void)state;
	for (int p = 0; p < PART__COUNT; p++)
		for (int sms = 2; sms <= 16; sms *= 2) {
			struct tg g;
			tg_layered(&g, 12, 20, (uint64_t)sms);
			struct part_placement pl;
			place_ok(&g, sms, p, &pl);
			/* every SM gets work: the graph is wide enough */
			for (int s = 0; s < sms; s++)
				assert_true(pl.begin[s + 1] > pl.begin[s]);
			part_placement_free(&pl);
			tg_free(&g);
		}
}

static void test_roundrobin_wavefront(void **state)
{
	(void)state;
	/* diamond 0 -> {1, 2} -> 3 plus 4 independent */
	uint8_t a[25] = { 0 };
	a[0 * 5 + 1] = a[0 * 5 + 2] = a[1 * 5 + 3] = a[2 * 5 + 3] = 1;
	struct tg g;
	tg_from_matrix(&g, 5, a);
	struct part_placement pl;
	place_ok(&g, 2, PART_ROUNDROBIN, &pl);
	for (int v = 0; v < 5; v++)
		assert_int_equal(pl.sm[v], v % 2);
	assert_int_equal(pl.list[0], 0);
	assert_int_equal(pl.list[1], 2);
	assert_int_equal(pl.list[2], 4);
	part_placement_free(&pl);
	/* levels: {0, 4}, {1, 2}, {3}: dealt from SM 0 at each level */
	place_ok(&g, 2, PART_WAVEFRONT, &pl);
	assert_int_equal(pl.sm[0], 0);
	assert_int_equal(pl.sm[4], 1);
	assert_int_equal(pl.sm[1], 0);
	assert_int_equal(pl.sm[2], 1);
	assert_int_equal(pl.sm[3], 0);
	assert_int_equal(pl.pos[4], 0);
	assert_int_equal(pl.pos[2], 1);
	int lev[5];
	assert_int_equal(part_levels(&g.dag, lev), 3);
	assert_int_equal(lev[3], 2);
	assert_int_equal(lev[4], 0);
	part_placement_free(&pl);
	tg_free(&g);
}

static void test_small_graphs(void **state)
{
	(void)state;
	struct tg g;
	struct part_placement pl;
	/* a chain of 6 on 8 SMs: a hop costs more than it saves, so it stays on one SM */
	uint8_t chain[36] = { 0 };
	for (int i = 0; i < 5; i++)
		chain[i * 6 + i + 1] = 1;
	tg_from_matrix(&g, 6, chain);
	for (int p = 0; p < PART__COUNT; p++) {
		place_ok(&g, 8, p, &pl);
		if (p == PART_METIS || p == PART_CRITICAL)
			for (int v = 0; v < 6; v++)
				assert_int_equal(pl.sm[v], pl.sm[0]);
		part_placement_free(&pl);
	}
	/* same chain, one SM */
	for (int p = 0; p < PART__COUNT; p++) {
		place_ok(&g, 1, p, &pl);
		for (int v = 0; v < 6; v++)
			assert_int_equal(pl.pos[v], v);
		part_placement_free(&pl);
	}
	tg_free(&g);
	/* wide fork-join 0 -> 1..24 -> 25 on 4 SMs: the middle is spread over all four */
	int n = 26;
	uint8_t *a = calloc((size_t)n * n, 1);
	for (int i = 1; i <= 24; i++)
		a[0 * n + i] = a[(size_t)i * n + 25] = 1;
	tg_from_matrix(&g, n, a);
	for (int p = 0; p < PART__COUNT; p++) {
		place_ok(&g, 4, p, &pl);
		int cnt[4] = { 0 };
		for (int i = 1; i <= 24; i++)
			cnt[pl.sm[i]]++;
		for (int s = 0; s < 4; s++)
			assert_true(cnt[s] >= 4);
		part_placement_free(&pl);
	}
	tg_free(&g);
	free(a);
	/* n = 1 and an empty graph */
	uint8_t one = 0;
	tg_from_matrix(&g, 1, &one);
	for (int p = 0; p < PART__COUNT; p++) {
		place_ok(&g, 132, p, &pl);
		part_placement_free(&pl);
	}
	tg_free(&g);
	tg_from_matrix(&g, 0, &one);
	place_ok(&g, 4, PART_METIS, &pl);
	assert_int_equal(pl.begin[4], 0);
	part_placement_free(&pl);
	tg_free(&g);
	/* n < sms: every vertex of an antichain on its own SM */
	uint8_t none[25] = { 0 };
	tg_from_matrix(&g, 5, none);
	place_ok(&g, 8, PART_METIS, &pl);
	for (int u = 0; u < 5; u++)
		for (int v = u + 1; v < 5; v++)
			assert_int_not_equal(pl.sm[u], pl.sm[v]);
	part_placement_free(&pl);
	tg_free(&g);
}

static void test_bad_input(void **state)
{
	(void)state;
	struct part_gpu gpu;
	struct part_placement pl;
	char err[256];
	part_gpu_default(&gpu, 4);
	assert_true(gpu.dram_gbps == 2900.0 && gpu.hop_us == 0.54 && gpu.doorbell_us == 3.0);
	int64_t xadj[3] = { 0, 1, 1 };
	int adj[1] = { 0 }; /* edge 0 -> 0 */
	struct part_dag d = { .n = 2, .xadj = xadj, .adj = adj };
	err[0] = 0;
	assert_int_equal(part_place(&d, &gpu, PART_METIS, &pl, err, sizeof err), -1);
	assert_non_null(strstr(err, "edge 0 -> 0"));
	adj[0] = 5; /* out of range */
	assert_int_equal(part_place(&d, &gpu, PART_CRITICAL, &pl, err, sizeof err), -1);
	adj[0] = 1;
	d.n = -1;
	assert_int_equal(part_place(&d, &gpu, PART_METIS, &pl, err, sizeof err), -1);
	assert_non_null(strstr(err, "negative"));
	d.n = 2;
	gpu.sms = 0;
	err[0] = 0;
	assert_int_equal(part_place(&d, &gpu, PART_METIS, &pl, err, sizeof err), -1);
	assert_non_null(strstr(err, "SM"));
	gpu.sms = 4;
	assert_int_equal(part_place(&d, &gpu, PART_METIS, &pl, err, sizeof err), 0);
	part_placement_free(&pl);
	uint8_t keep[1];
	adj[0] = 0;
	assert_int_equal(part_transitive_reduce(&d, keep), -1);
	assert_int_equal(part_policy_parse("metis"), PART_METIS);
	assert_int_equal(part_policy_parse("critical"), PART_CRITICAL);
	assert_int_equal(part_policy_parse("random"), -1);
}

/* ---- transitive reduction ---------------------------------------------------------------------------- */

static void check_reduction(const struct tg *g)
{
	uint8_t *keep = malloc((size_t)g->m + 1), *r = closure(g);
	int64_t kept = part_transitive_reduce(&g->dag, keep), want = 0;
	assert_true(kept >= 0);
	int n = g->n;
	for (int u = 0; u < n; u++)
		for (int64_t e = g->xadj[u]; e < g->xadj[u + 1]; e++) {
			int v = g->adj[e], implied = 0;
			for (int64_t f = g->xadj[u]; f < g->xadj[u + 1] && !implied; f++)
				implied = g->adj[f] != v && r[(size_t)g->adj[f] * n + v];
			assert_int_equal(keep[e], !implied);
			want += !implied;
		}
	assert_int_equal(kept, want);
	free(keep), free(r);
}

static void test_reduce_brute(void **state)
{
	(void)state;
	for (uint64_t seed = 0; seed < 200; seed++) {
		struct tg g;
		int n = 2 + (int)(seed % 60);
		tg_random(&g, n, 5 + (int)(seed % 7) * 10, seed);
		check_reduction(&g);
		tg_free(&g);
	}
	for (uint64_t seed = 0; seed < 20; seed++) {
		struct tg g;
		tg_layered(&g, 8, 10, seed);
		check_reduction(&g);
		tg_free(&g);
	}
}

/* Several chunks of targets: 9000 vertices, short edges plus long ones that are mostly implied. */
static void test_reduce_chunks(void **state)
{
	(void)state;
	int n = 9000;
	rs = 99;
	int64_t *xadj = calloc((size_t)n + 1, sizeof *xadj);
	int *adj = malloc((size_t)n * 8 * sizeof *adj);
	int64_t m = 0;
	for (int u = 0; u < n; u++) {
		xadj[u] = m;
		int last = u;
		for (int k = 0; k < 6; k++) {
			int step = k < 4 ? 1 + (int)(rng() % 5) : 1 + (int)(rng() % 6000);
			int v = last + step;
			if (v >= n)
				break;
			adj[m++] = v;
			last = v;
		}
	}
	xadj[n] = m;
	struct part_dag d = { .n = n, .xadj = xadj, .adj = adj };
	uint8_t *keep = malloc((size_t)m);
	int64_t kept = part_transitive_reduce(&d, keep);
	/* brute force: reach sets as full bitsets, successors in ascending order */
	int words = (n + 63) / 64;
	uint64_t *reach = calloc((size_t)n * words, sizeof *reach);
	int64_t want = 0;
	for (int u = n - 1; u >= 0; u--) {
		uint64_t *r = reach + (size_t)u * words;
		for (int64_t e = xadj[u]; e < xadj[u + 1]; e++) {
			int v = adj[e], implied = 0;
			for (int64_t f = xadj[u]; f < xadj[u + 1]; f++)
				if (adj[f] != v && (reach[(size_t)adj[f] * words + v / 64] >> (v % 64) & 1))
					implied = 1;
			assert_int_equal(keep[e], !implied);
			want += !implied;
			r[v / 64] |= (uint64_t)1 << (v % 64);
			for (int j = 0; j < words; j++)
				r[j] |= reach[(size_t)v * words + j];
		}
	}
	assert_int_equal(kept, want);
	assert_true(want < m); /* the test graph does have transitive edges */
	assert_true(want > m / 4);
	print_message("# %lld of %lld edges kept\n", (long long)want, (long long)m);
	free(xadj), free(adj), free(keep), free(reach);
}

/* ---- needed waits ---------------------------------------------------------------------------------- */

/* Is there a path u -> v in edges (minus edge `skip`) plus program order? */
static int hb_path(const struct tg *g, const struct part_placement *pl, int u, int v, int64_t skip)
{
	int n = g->n, *stack = malloc(((size_t)n + 1) * sizeof *stack), sp = 0, found = 0;
	uint8_t *seen = calloc((size_t)n + 1, 1);
	stack[sp++] = u;
	seen[u] = 1;
	while (sp > 0 && !found) {
		int x = stack[--sp];
		int nexts[1] = { -1 };
		int k = pl->begin[pl->sm[x]] + pl->pos[x] + 1;
		if (k < pl->begin[pl->sm[x] + 1])
			nexts[0] = pl->list[k];
		if (nexts[0] == v)
			found = 1;
		if (nexts[0] >= 0 && !seen[nexts[0]])
			seen[nexts[0]] = 1, stack[sp++] = nexts[0];
		for (int64_t e = g->xadj[x]; e < g->xadj[x + 1]; e++) {
			if (e == skip)
				continue;
			int w = g->adj[e];
			if (w == v)
				found = 1;
			if (!seen[w])
				seen[w] = 1, stack[sp++] = w;
		}
	}
	free(stack), free(seen);
	return found;
}

static void test_needed_brute(void **state)
{
	(void)state;
	for (uint64_t seed = 0; seed < 60; seed++)
		for (int p = 0; p < PART__COUNT; p++) {
			struct tg g;
			int n = 3 + (int)(seed % 35), sms = 1 + (int)(seed % 5);
			tg_random(&g, n, 10 + (int)(seed % 4) * 15, seed + 1000);
			struct part_placement pl;
			place_ok(&g, sms, p, &pl);
			uint8_t *need = malloc((size_t)g.m + 1);
			int64_t cnt = part_needed_waits(&g.dag, &pl, need), want = 0;
			for (int u = 0; u < n; u++)
				for (int64_t e = g.xadj[u]; e < g.xadj[u + 1]; e++) {
					int w = !hb_path(&g, &pl, u, g.adj[e], e);
					assert_int_equal(need[e], w);
					want += w;
				}
			assert_int_equal(cnt, want);
			part_placement_free(&pl);
			free(need);
			tg_free(&g);
		}
}

static void test_needed_deadlock(void **state)
{
	(void)state;
	/* 0 -> 1 with both on SM 0, listed 1 then 0: the SM waits for a vertex it has not run */
	int64_t xadj[3] = { 0, 1, 1 };
	int adj[1] = { 1 };
	struct part_dag d = { .n = 2, .xadj = xadj, .adj = adj };
	int sm[2] = { 0, 0 }, pos[2] = { 1, 0 }, begin[2] = { 0, 2 }, list[2] = { 1, 0 };
	struct part_placement pl = { .sms = 1, .sm = sm, .pos = pos, .begin = begin, .list = list };
	uint8_t need[1];
	assert_int_equal(part_needed_waits(&d, &pl, need), -1);
	pos[0] = 0, pos[1] = 1, list[0] = 0, list[1] = 1;
	need[0] = 7;
	assert_int_equal(part_needed_waits(&d, &pl, need), 0);
	assert_int_equal(need[0], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_policies_random),
		cmocka_unit_test(test_policies_layered),
		cmocka_unit_test(test_roundrobin_wavefront),
		cmocka_unit_test(test_small_graphs),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_reduce_brute),
		cmocka_unit_test(test_reduce_chunks),
		cmocka_unit_test(test_needed_brute),
		cmocka_unit_test(test_needed_deadlock),
	};
	cmocka_set_message_output(CM_OUTPUT_TAP);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
