/* test_sim.c: the latency simulator on hand-computed schedules. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "partition/part.h"

#define NMAX 8

/* A small case: edges as pairs, vertices listed on their SM in vertex order. */
struct sc {
	int n;
	int64_t xadj[NMAX + 1];
	int adj[NMAX * NMAX];
	double flops[NMAX], bytes[NMAX];
	uint8_t tc[NMAX];
	int sm[NMAX], pos[NMAX], begin[NMAX + 1], list[NMAX];
	struct part_dag dag;
	struct part_placement pl;
};

static void sc_init(struct sc *c, int n, int sms, const int *sm, int nedges, const int (*edges)[2])
{
	memset(c, 0, sizeof *c);
	c->n = n;
	int64_t m = 0;
	for (int u = 0; u < n; u++) {
		c->xadj[u] = m;
		for (int v = u + 1; v < n; v++)
			for (int i = 0; i < nedges; i++)
				if (edges[i][0] == u && edges[i][1] == v)
					c->adj[m++] = v;
	}
	c->xadj[n] = m;
	int cnt[NMAX + 1] = { 0 };
	for (int v = 0; v < n; v++)
		c->sm[v] = sm[v], cnt[sm[v] + 1]++;
	for (int s = 0; s < sms; s++)
		cnt[s + 1] += cnt[s];
	memcpy(c->begin, cnt, sizeof(int) * (size_t)(sms + 1));
	for (int v = 0; v < n; v++) {
		c->pos[v] = cnt[sm[v]] - c->begin[sm[v]];
		c->list[cnt[sm[v]]++] = v;
	}
	c->dag = (struct part_dag){ .n = n, .xadj = c->xadj, .adj = c->adj, .flops = c->flops,
				    .bytes = c->bytes, .tc = c->tc };
	c->pl = (struct part_placement){ .sms = sms, .sm = c->sm, .pos = c->pos, .begin = c->begin,
					 .list = c->list };
}

/* 2 SMs; fp32 0.1 TFLOP/s per SM (1e5 flop = 1 us), tensor cores 1 TFLOP/s per SM (1e6 flop = 1 us),
 * 100 GB/s of device memory, 100 GB/s per SM, hop 0.5, task 0.1, doorbell 3, barrier 1. */
static void gpu_small(struct part_gpu *g)
{
	*g = (struct part_gpu){ .sms = 2, .dram_gbps = 100, .sm_gbps = 100, .tc_tflops = 2,
				.fp32_tflops = 0.2, .hop_us = 0.5, .task_us = 0.1, .doorbell_us = 3,
				.barrier_us = 1 };
}

static void check_breakdown(const struct part_sim *s, const struct part_gpu *g)
{
	double sum = s->compute_us + s->memory_us + s->hop_us + s->wait_us + s->dispatch_us;
	assert_true(fabs(sum - (s->latency_us - g->doorbell_us)) < 1e-6);
}

#define near(a, b) assert_true(fabs((a) - (b)) < 1e-6)

static void test_chain_one_sm(void **state)
{
	(void)state;
	struct part_gpu g;
	gpu_small(&g);
	const int e[][2] = { { 0, 1 }, { 1, 2 } }, sm[] = { 0, 0, 0 };
	struct sc c;
	sc_init(&c, 3, 2, sm, 2, e);
	c.flops[0] = 1e5, c.flops[1] = 2e5, c.flops[2] = 3e5; /* 1, 2, 3 us */
	struct part_sim s;
	assert_int_equal(part_simulate(&c.dag, NULL, &c.pl, &g, 0, &s), 0);
	near(s.latency_us, 3 * 0.1 + 6 + 3);
	near(s.critical_us, 6.3);
	near(s.compute_us, 6);
	near(s.dispatch_us, 0.3);
	near(s.hop_us, 0);
	assert_int_equal(s.critical_len, 3);
	near(s.utilisation, 6.3 / (2 * 9.3));
	check_breakdown(&s, &g);
}

static void test_chain_two_sms(void **state)
{
	(void)state;
	struct part_gpu g;
	gpu_small(&g);
	const int e[][2] = { { 0, 1 }, { 1, 2 } }, sm[] = { 0, 1, 0 };
	struct sc c;
	sc_init(&c, 3, 2, sm, 2, e);
	c.flops[0] = 1e5, c.flops[1] = 2e5, c.flops[2] = 3e5;
	struct part_sim s;
	assert_int_equal(part_simulate(&c.dag, NULL, &c.pl, &g, 0, &s), 0);
	near(s.latency_us, 6.3 + 2 * 0.5 + 3);
	near(s.hop_us, 1.0);
	near(s.critical_us, 6.3); /* hops are not part of the cost-only path */
	check_breakdown(&s, &g);
}

static void test_fork_join(void **state)
{
	(void)state;
	struct part_gpu g;
	gpu_small(&g);
	/* 0 (1 us) -> 1 (2 us, SM 0), 2 (2 us, SM 1) -> 3 (1 us, SM 0) */
	const int e[][2] = { { 0, 1 }, { 0, 2 }, { 1, 3 }, { 2, 3 } }, sm[] = { 0, 0, 1, 0 };
	struct sc c;
	sc_init(&c, 4, 2, sm, 4, e);
	c.flops[0] = 1e5, c.flops[1] = 2e5, c.flops[2] = 2e5, c.flops[3] = 1e5;
	struct part_sim s;
	assert_int_equal(part_simulate(&c.dag, NULL, &c.pl, &g, 0, &s), 0);
	/* 0: [0, 1.1]; 1: [1.1, 3.2]; 2: [1.6, 3.7]; 3 waits for 3.7 + 0.5: [4.2, 5.3] */
	near(s.latency_us, 5.3 + 3);
	assert_int_equal(s.critical_len, 3); /* 3 <- 2 <- 0 */
	near(s.hop_us, 1.0);
	near(s.compute_us, 4.0);
	near(s.critical_us, 0.1 + 1 + 0.1 + 2 + 0.1 + 1);
	check_breakdown(&s, &g);
	/* the same with 0 -> 3 added: the extra wait changes nothing */
	const int e2[][2] = { { 0, 1 }, { 0, 2 }, { 1, 3 }, { 2, 3 }, { 0, 3 } };
	sc_init(&c, 4, 2, sm, 5, e2);
	c.flops[0] = 1e5, c.flops[1] = 2e5, c.flops[2] = 2e5, c.flops[3] = 1e5;
	assert_int_equal(part_simulate(&c.dag, NULL, &c.pl, &g, 0, &s), 0);
	near(s.latency_us, 8.3);
}

static void test_barrier_two_levels(void **state)
{
	(void)state;
	struct part_gpu g;
	gpu_small(&g);
	/* level 0: 0 (1 us, SM 0), 1 (2 us, SM 1); level 1: 2 (1 us, SM 0) reads both */
	const int e[][2] = { { 0, 2 }, { 1, 2 } }, sm[] = { 0, 1, 0 };
	struct sc c;
	sc_init(&c, 3, 2, sm, 2, e);
	c.flops[0] = 1e5, c.flops[1] = 2e5, c.flops[2] = 1e5;
	struct part_sim s;
	/* per-edge waits: 2 starts at 2.1 + 0.5 hop, ends at 3.7 */
	assert_int_equal(part_simulate(&c.dag, NULL, &c.pl, &g, 0, &s), 0);
	near(s.latency_us, 3.7 + 3);
	/* barrier: level 0 ends at 2.1, barrier 1 us, 2 runs [3.1, 4.2] */
	assert_int_equal(part_simulate(&c.dag, NULL, &c.pl, &g, 1, &s), 0);
	near(s.latency_us, 4.2 + 3);
	near(s.hop_us, 0);
	near(s.wait_us, 1.0);
	check_breakdown(&s, &g);
}

static void test_memory_sharing(void **state)
{
	(void)state;
	struct part_gpu g;
	gpu_small(&g);
	g.sm_gbps = 80;
	const int sm[] = { 0, 1 };
	struct sc c;
	sc_init(&c, 2, 2, sm, 0, NULL);
	/* two SMs stream 1e5 bytes each at the same time: 50 GB/s each, 2 us */
	c.bytes[0] = c.bytes[1] = 1e5;
	struct part_sim s;
	assert_int_equal(part_simulate(&c.dag, NULL, &c.pl, &g, 0, &s), 0);
	near(s.latency_us, 0.1 + 2 + 3);
	near(s.memory_us, 2);
	/* one alone: 80 GB/s, 1.25 us */
	c.bytes[1] = 0;
	assert_int_equal(part_simulate(&c.dag, NULL, &c.pl, &g, 0, &s), 0);
	near(s.latency_us, 0.1 + 1.25 + 3);
	/* 1e5 and 2e5 bytes: both at 50 GB/s until 2.1 us, then the second alone at 80 GB/s for its
	 * last 1e5 bytes: 1.25 us more */
	c.bytes[1] = 2e5;
	assert_int_equal(part_simulate(&c.dag, NULL, &c.pl, &g, 0, &s), 0);
	near(s.latency_us, 2.1 + 1.25 + 3);
	near(s.utilisation, (2.1 + 3.35) / (2 * 6.35));
	check_breakdown(&s, &g);
	/* memory against arithmetic: 1e5 bytes (2 us shared) and 3e5 fp32 flop (3 us) take 3 us */
	c.bytes[1] = 1e5;
	c.flops[0] = 3e5;
	assert_int_equal(part_simulate(&c.dag, NULL, &c.pl, &g, 0, &s), 0);
	near(s.latency_us, 0.1 + 3 + 3);
	near(s.compute_us, 3);
}

static void test_tensor_core(void **state)
{
	(void)state;
	struct part_gpu g;
	gpu_small(&g);
	const int sm[] = { 0 };
	struct sc c;
	sc_init(&c, 1, 1, sm, 0, NULL);
	c.flops[0] = 1e6;
	c.tc[0] = 1;
	struct part_sim s;
	assert_int_equal(part_simulate(&c.dag, NULL, &c.pl, &g, 0, &s), 0);
	near(s.latency_us, 0.1 + 1 + 3);
	c.tc[0] = 0; /* the same arithmetic on CUDA cores: 10x slower */
	assert_int_equal(part_simulate(&c.dag, NULL, &c.pl, &g, 0, &s), 0);
	near(s.latency_us, 0.1 + 10 + 3);
	near(s.compute_us, 10);
}

/* On a placed random DAG: pruned waits change nothing, the breakdown adds up, nothing beats the
 * cost-only critical path. */
static void test_random_consistency(void **state)
{
	(void)state;
	uint64_t r = 5;
	int n = 300;
	int64_t *xadj = calloc((size_t)n + 1, sizeof *xadj);
	int *adj = malloc((size_t)n * 12 * sizeof *adj);
	double *fl = malloc((size_t)n * sizeof *fl), *by = malloc((size_t)n * sizeof *by);
	int64_t m = 0;
	for (int u = 0; u < n; u++) {
		xadj[u] = m;
		for (int v = u + 1; v < n && v < u + 40; v++) {
			r ^= r << 13, r ^= r >> 7, r ^= r << 17;
			if (r % 10 == 0)
				adj[m++] = v;
		}
		fl[u] = 1e6 * (1 + (double)(u % 7));
		by[u] = 2e4 * (1 + (double)(u % 5));
	}
	xadj[n] = m;
	struct part_dag d = { .n = n, .xadj = xadj, .adj = adj, .flops = fl, .bytes = by };
	struct part_gpu g;
	part_gpu_default(&g, 8);
	char err[256];
	for (int p = 0; p < PART__COUNT; p++) {
		struct part_placement pl;
		assert_int_equal(part_place(&d, &g, p, &pl, err, sizeof err), 0);
		uint8_t *keep = malloc((size_t)m + 1), *need = malloc((size_t)m + 1);
		struct part_sim all, red, nd, bar;
		assert_int_equal(part_simulate(&d, NULL, &pl, &g, 0, &all), 0);
		assert_true(part_transitive_reduce(&d, keep) >= 0);
		assert_true(part_needed_waits(&d, &pl, need) >= 0);
		assert_int_equal(part_simulate(&d, keep, &pl, &g, 0, &red), 0);
		assert_int_equal(part_simulate(&d, need, &pl, &g, 0, &nd), 0);
		assert_int_equal(part_simulate(&d, NULL, &pl, &g, 1, &bar), 0);
		near(all.latency_us, nd.latency_us);
		near(all.latency_us, red.latency_us);
		check_breakdown(&all, &g);
		check_breakdown(&bar, &g);
		assert_true(all.latency_us - g.doorbell_us >= all.critical_us - 1e-6);
		assert_true(all.utilisation > 0 && all.utilisation <= 1);
		assert_true(all.critical_len >= 1);
		free(keep), free(need);
		part_placement_free(&pl);
	}
	free(xadj), free(adj), free(fl), free(by);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chain_one_sm),
		cmocka_unit_test(test_chain_two_sms),
		cmocka_unit_test(test_fork_join),
		cmocka_unit_test(test_barrier_two_levels),
		cmocka_unit_test(test_memory_sharing),
		cmocka_unit_test(test_tensor_core),
		cmocka_unit_test(test_random_consistency),
	};
	cmocka_set_message_output(CM_OUTPUT_TAP);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
