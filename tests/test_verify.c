/* test_verify.c: the schedule verifier accepts real schedules and catches every mutation that breaks
 * one (a dropped needed wait, two dependent tasks swapped on an SM, an unordered hazard). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "partition/part.h"

struct tg {
	int n;
	int64_t m;
	int64_t *xadj; /* (n + 1) */
	int *adj;      /* (m) */
	double *flops, *bytes;
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

/* Random DAG: edge u -> v (u < v) with probability pct %, mostly between nearby vertices. */
static void tg_random(struct tg *g, int n, int pct, uint64_t seed)
{
	rs = seed * 0x9e3779b97f4a7c15ull + 4242;
	g->n = n;
	g->xadj = calloc((size_t)n + 1, sizeof *g->xadj);
	g->adj = malloc(((size_t)n * n + 1) * sizeof *g->adj);
	g->flops = malloc(((size_t)n + 1) * sizeof *g->flops);
	g->bytes = malloc(((size_t)n + 1) * sizeof *g->bytes);
	int64_t m = 0;
	for (int u = 0; u < n; u++) {
		g->xadj[u] = m;
		for (int v = u + 1; v < n; v++)
			if ((int)(rng() % 100) < (v - u < 8 ? pct : pct / 4))
				g->adj[m++] = v;
		g->flops[u] = 1e6 + (double)(rng() % 1000000);
		g->bytes[u] = 1e4 + (double)(rng() % 100000);
	}
	g->xadj[n] = m;
	g->m = m;
	g->dag = (struct part_dag){ .n = n, .xadj = g->xadj, .adj = g->adj, .flops = g->flops,
				    .bytes = g->bytes };
}

static void tg_free(struct tg *g)
{
	free(g->xadj), free(g->adj), free(g->flops), free(g->bytes);
}

/* Hazards = every edge of the DAG. */
static void edge_hazards(const struct tg *g, int **hu, int **hv)
{
	*hu = malloc((size_t)(g->m + 1) * sizeof **hu);
	*hv = malloc((size_t)(g->m + 1) * sizeof **hv);
	for (int u = 0; u < g->n; u++)
		for (int64_t e = g->xadj[u]; e < g->xadj[u + 1]; e++)
			(*hu)[e] = u, (*hv)[e] = g->adj[e];
}

static void test_accepts_real_schedules(void **state)
{
	(void)state;
	char err[512];
	for (uint64_t seed = 0; seed < 12; seed++)
		for (int p = 0; p < PART__COUNT; p++) {
			struct tg g;
			int n = 20 + (int)(seed * 37 % 400), sms = 2 + (int)(seed % 9);
			tg_random(&g, n, 30, seed);
			struct part_gpu gpu;
			part_gpu_default(&gpu, sms);
			struct part_placement pl;
			assert_int_equal(part_place(&g.dag, &gpu, p, &pl, err, sizeof err), 0);
			int *hu, *hv;
			edge_hazards(&g, &hu, &hv);
			uint8_t *keep = malloc((size_t)g.m + 1), *need = malloc((size_t)g.m + 1);
			/* all edges, the transitive reduction, and the waits the placement needs */
			err[0] = 0;
			if (part_verify(&g.dag, NULL, &pl, g.m, hu, hv, err, sizeof err) != 0)
				fail_msg("%s", err);
			assert_true(part_transitive_reduce(&g.dag, keep) >= 0);
			assert_int_equal(part_verify(&g.dag, keep, &pl, g.m, hu, hv, err, sizeof err), 0);
			int64_t nn = part_needed_waits(&g.dag, &pl, need);
			assert_true(nn >= 0 && nn <= g.m);
			if (part_verify(&g.dag, need, &pl, g.m, hu, hv, err, sizeof err) != 0)
				fail_msg("%s: %s", part_policy_name[p], err);
			/* every reachable pair is a hazard the schedule orders, too (a few hundred of them) */
			int64_t nh = 0;
			int *pu = malloc(400 * sizeof *pu), *pv = malloc(400 * sizeof *pv);
			for (int u = 0; u < g.n && nh < 400; u++)
				for (int64_t e = g.xadj[u]; e < g.xadj[u + 1] && nh < 400; e++)
					for (int64_t f = g.xadj[g.adj[e]]; f < g.xadj[g.adj[e] + 1] && nh < 400; f++)
						pu[nh] = u, pv[nh++] = g.adj[f];
			assert_int_equal(part_verify(&g.dag, need, &pl, nh, pu, pv, err, sizeof err), 0);
			free(pu), free(pv), free(keep), free(need), free(hu), free(hv);
			part_placement_free(&pl);
			tg_free(&g);
		}
}

/* Dropping any one needed wait is caught (that edge is a hazard nothing else orders); dropping a wait
 * that is not needed is harmless. Every edge of small graphs, in turn. */
static void test_drop_each_edge(void **state)
{
	(void)state;
	char err[512];
	int caught = 0, harmless = 0;
	for (uint64_t seed = 0; seed < 6; seed++)
		for (int p = 0; p < PART__COUNT; p++) {
			struct tg g;
			tg_random(&g, 24, 35, seed + 100);
			struct part_gpu gpu;
			part_gpu_default(&gpu, 3);
			struct part_placement pl;
			assert_int_equal(part_place(&g.dag, &gpu, p, &pl, err, sizeof err), 0);
			int *hu, *hv;
			edge_hazards(&g, &hu, &hv);
			uint8_t *need = malloc((size_t)g.m + 1);
			assert_true(part_needed_waits(&g.dag, &pl, need) >= 0);
			for (int64_t e = 0; e < g.m; e++) {
				uint8_t was = need[e];
				need[e] = 0;
				err[0] = 0;
				int rc = part_verify(&g.dag, need, &pl, g.m, hu, hv, err, sizeof err);
				if (was) {
					assert_int_equal(rc, -1);
					assert_non_null(strstr(err, "is not ordered"));
					/* the first violation reported is this edge or an earlier one */
					int ru, rv;
					assert_int_equal(sscanf(err, "hazard vCTA %d -> vCTA %d", &ru, &rv), 2);
					assert_true(ru < hu[e] || (ru == hu[e] && rv <= hv[e]));
					caught++;
				} else {
					assert_int_equal(rc, 0);
					harmless++;
				}
				need[e] = was;
			}
			free(need), free(hu), free(hv);
			part_placement_free(&pl);
			tg_free(&g);
		}
	assert_true(caught > 50);
	assert_true(harmless > 10);
}

static void test_swap_dependent_is_deadlock(void **state)
{
	(void)state;
	char err[512];
	/* chain 0 -> 1 -> 2 -> 3, all on SM 0 of 2 SMs, plus 4 on SM 1 */
	int64_t xadj[6] = { 0, 1, 2, 3, 3, 3 };
	int adj[3] = { 1, 2, 3 };
	struct part_dag d = { .n = 5, .xadj = xadj, .adj = adj };
	int sm[5] = { 0, 0, 0, 0, 1 }, pos[5] = { 0, 1, 2, 3, 0 }, begin[3] = { 0, 4, 5 };
	int list[5] = { 0, 1, 2, 3, 4 };
	struct part_placement pl = { .sms = 2, .sm = sm, .pos = pos, .begin = begin, .list = list };
	int hu[3] = { 0, 1, 2 }, hv[3] = { 1, 2, 3 };
	assert_int_equal(part_verify(&d, NULL, &pl, 3, hu, hv, err, sizeof err), 0);
	/* swap 1 and 2 on SM 0: 2 waits for 1, which runs after 2 */
	list[1] = 2, list[2] = 1, pos[1] = 2, pos[2] = 1;
	err[0] = 0;
	assert_int_equal(part_verify(&d, NULL, &pl, 3, hu, hv, err, sizeof err), -1);
	assert_non_null(strstr(err, "deadlock"));
	assert_non_null(strstr(err, "vCTA 2 (SM 0 pos 1) waits for vCTA 1 (SM 0 pos 2)"));
	assert_non_null(strstr(err, "vCTA 1 (SM 0 pos 2) runs after vCTA 2 on its SM"));
	/* swapped back: accepted again */
	list[1] = 1, list[2] = 2, pos[1] = 1, pos[2] = 2;
	assert_int_equal(part_verify(&d, NULL, &pl, 3, hu, hv, err, sizeof err), 0);
	/* SM 0: 1 2; SM 1: 3 0 4 -> 3 waits for 2 waits for 1 waits for 0, which runs after 3 */
	int sm2[5] = { 1, 0, 0, 1, 1 }, pos2[5] = { 1, 0, 1, 0, 2 }, begin2[3] = { 0, 2, 5 };
	int list2[5] = { 1, 2, 3, 0, 4 };
	struct part_placement p2 = { .sms = 2, .sm = sm2, .pos = pos2, .begin = begin2, .list = list2 };
	err[0] = 0;
	assert_int_equal(part_verify(&d, NULL, &p2, 3, hu, hv, err, sizeof err), -1);
	assert_non_null(strstr(err, "deadlock: cycle of 4 waits"));
	uint8_t need[3];
	assert_int_equal(part_needed_waits(&d, &p2, need), -1);
	struct part_gpu gpu;
	struct part_sim sim;
	part_gpu_default(&gpu, 2);
	assert_int_equal(part_simulate(&d, NULL, &p2, &gpu, 0, &sim), -1);
}

static void test_unordered_hazard(void **state)
{
	(void)state;
	char err[512];
	/* two independent vertices on two SMs */
	int64_t xadj[3] = { 0, 0, 0 };
	struct part_dag d = { .n = 2, .xadj = xadj };
	struct part_gpu gpu;
	part_gpu_default(&gpu, 2);
	struct part_placement pl;
	assert_int_equal(part_place(&d, &gpu, PART_ROUNDROBIN, &pl, err, sizeof err), 0);
	int hu[1] = { 0 }, hv[1] = { 1 };
	assert_int_equal(part_verify(&d, NULL, &pl, 1, hu, hv, err, sizeof err), -1);
	assert_string_equal(err, "hazard vCTA 0 -> vCTA 1 is not ordered (vCTA 0 on SM 0 pos 0, vCTA 1 on "
				 "SM 1 pos 0)");
	/* on one SM, program order orders them */
	gpu.sms = 1;
	part_placement_free(&pl);
	assert_int_equal(part_place(&d, &gpu, PART_ROUNDROBIN, &pl, err, sizeof err), 0);
	assert_int_equal(part_verify(&d, NULL, &pl, 1, hu, hv, err, sizeof err), 0);
	/* ...but not backwards */
	hu[0] = 1, hv[0] = 0;
	assert_int_equal(part_verify(&d, NULL, &pl, 1, hu, hv, err, sizeof err), -1);
	hu[0] = 7;
	assert_int_equal(part_verify(&d, NULL, &pl, 1, hu, hv, err, sizeof err), -1);
	assert_non_null(strstr(err, "out of range"));
	part_placement_free(&pl);
}

static void test_bad_placement(void **state)
{
	(void)state;
	char err[512];
	int64_t xadj[3] = { 0, 0, 0 };
	struct part_dag d = { .n = 2, .xadj = xadj };
	/* vertex 0 listed twice, vertex 1 missing */
	int sm[2] = { 0, 0 }, pos[2] = { 0, 1 }, begin[2] = { 0, 2 }, list[2] = { 0, 0 };
	struct part_placement pl = { .sms = 1, .sm = sm, .pos = pos, .begin = begin, .list = list };
	err[0] = 0;
	assert_int_equal(part_verify(&d, NULL, &pl, 0, NULL, NULL, err, sizeof err), -1);
	assert_non_null(strstr(err, "vCTA 0"));
	list[1] = 1;
	assert_int_equal(part_verify(&d, NULL, &pl, 0, NULL, NULL, err, sizeof err), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accepts_real_schedules),
		cmocka_unit_test(test_drop_each_edge),
		cmocka_unit_test(test_swap_dependent_is_deadlock),
		cmocka_unit_test(test_unordered_hazard),
		cmocka_unit_test(test_bad_placement),
	};
	cmocka_set_message_output(CM_OUTPUT_TAP);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
