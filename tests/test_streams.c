/* test_streams.c: the stream policies of the multi-stream backends (codegen/streams.c) on hand-made
 * DAGs against streams and events derived by hand; the checker against a brute-force one (reachability
 * through stream order and events) on random programs and mutations of the policies' programs; and
 * the stream program of compiled models (codegen/emit_streams.c): one launch per level inside an op,
 * costs, byte ranges, the generated text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/emit.h"
#include "codegen/emit_streams.h"
#include "codegen/streams.h"
#include "ark_dynamic.h"
#include "harness.h"

/* ---- DAGs ------------------------------------------------------------------------------------- */

struct tdag {
	int64_t xadj[65];
	int adj[64 * 64];
	double cost[64];
	struct sdag d;
};

/* From edges "u>v" pairs in e[0..2k): u < v, sorted by u then v. */
static void tdag_make(struct tdag *t, int n, const int *e, int k, const double *cost)
{
	memset(t, 0, sizeof *t);
	int m = 0;
	for (int u = 0; u < n; u++) {
		t->xadj[u] = m;
		for (int v = u + 1; v < n; v++)
			for (int i = 0; i < k; i++)
				if (e[2 * i] == u && e[2 * i + 1] == v) {
					t->adj[m++] = v;
					break;
				}
		t->cost[u] = cost ? cost[u] : 1.0;
	}
	t->xadj[n] = m;
	struct part_gpu g;
	part_gpu_default(&g, 132); /* the program's costs the simulator adds: the defaults' */
	t->d = (struct sdag){.n = n, .xadj = t->xadj, .adj = t->adj, .cost_us = t->cost,
			     .costs = {g.launch_us, g.kernel_gap_us, g.event_us, g.event_host_us, g.sync_us}};
}

static uint64_t rs = 88172645463325252ull;
static uint64_t rng(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static void tdag_random(struct tdag *t, int n, int per_mille)
{
	int e[2 * 64 * 64], k = 0;
	double cost[64];
	for (int u = 0; u < n; u++) {
		cost[u] = 1 + (double)(rng() % 20);
		for (int v = u + 1; v < n; v++)
			if ((int)(rng() % 1000) < per_mille)
				e[2 * k] = u, e[2 * k + 1] = v, k++;
	}
	tdag_make(t, n, e, k, cost);
}

static void expect_plan(const struct splan *p, const int *order, const int *stream, const int *ev, int n_ev)
{
	for (int i = 0; i < p->n; i++) {
		assert_int_equal(p->order[i], order[i]);
		assert_int_equal(p->stream[i], stream[i]);
	}
	assert_int_equal(p->n_events, n_ev);
	for (int k = 0; k < n_ev; k++) {
		assert_int_equal(p->ev[k].from, ev[2 * k]);
		assert_int_equal(p->ev[k].to, ev[2 * k + 1]);
	}
}

/* ---- hand-made DAGs ----------------------------------------------------------------------------- */

/* A diamond 0 -> {1, 2} -> 3 with 1 the costlier branch: every multi-stream policy puts the branch
 * 2 on a second stream: an event 0 -> 2 to fork, one 2 -> 3 to join. */
static void test_diamond(void **state)
{
	(void)state;
	static const int e[] = {0, 1, 0, 2, 1, 3, 2, 3};
	static const double cost[] = {1, 10, 5, 1};
	struct tdag t;
	struct splan p;
	tdag_make(&t, 4, e, 4, cost);
	assert_int_equal(streams_assign(&t.d, SP_SINGLE, 4, &p, NULL, 0), 0);
	expect_plan(&p, (int[]){0, 1, 2, 3}, (int[]){0, 0, 0, 0}, NULL, 0);
	assert_int_equal(p.n_streams, 1);
	splan_free(&p);
	for (int pol = 0; pol < SP__COUNT; pol++) {
		if (pol == SP_SINGLE || pol == SP_IOS)
			continue;
		assert_int_equal(streams_assign(&t.d, pol, 4, &p, NULL, 0), 0);
		expect_plan(&p, (int[]){0, 1, 2, 3}, (int[]){0, 0, 1, 0}, (int[]){0, 2, 2, 3}, 2);
		assert_int_equal(p.n_streams, 2);
		splan_free(&p);
	}
	/* ios: one stage of all four, one group (connected) on one stream: 17 + 4 launches = 21 us beats
	 * every cut ({0} | {1, 2, 3}: 2 + 19 + 1.5; {0} | {1, 2} | {3}: 2 + 15 (the work) + 2 + 2 syncs) */
	assert_int_equal(streams_assign(&t.d, SP_IOS, 4, &p, NULL, 0), 0);
	expect_plan(&p, (int[]){0, 1, 2, 3}, (int[]){0, 0, 0, 0}, NULL, 0);
	splan_free(&p);
	/* on one stream every policy is the single stream */
	for (int pol = 0; pol < SP__COUNT; pol++) {
		assert_int_equal(streams_assign(&t.d, pol, 1, &p, NULL, 0), 0);
		assert_int_equal(p.n_streams, 1);
		assert_int_equal(p.n_events, 0);
		splan_free(&p);
	}
}

/* 0 -> 1 -> 2, 0 -> 2 (implied), 0 -> 3 with 3 the costliest: the policies differ.
 *   asap: 0's heavy edge goes to 3 (costliest), so 0, 3 share stream 0 and the chain 1, 2 is stream 1:
 *         one event 0 -> 1 (2 waits on 1 on its own stream; 0 -> 2 is implied by 0 -> 1).
 *   xla:  on the reduced DAG (0 -> 2 dropped) 1 takes 0's stream, 2 takes 1's, 3 finds 0's stream
 *         handed on and opens stream 1: one event 0 -> 3.
 *   nnc:  ranks 0 | 1, 3 | 2; 1 continues 0's chain, 3 starts one, 2 continues 1's: event 0 -> 3,
 *         issue order 0, 1, 3, 2.
 *   wavefront: waves {0}, {1, 3}, {2}, 3 on stream 1, and the sync between waves 2 and 3 adds 3 -> 2.
 *   ios:  stages {0} | {1, 3, 2} (2 + max(1 + 1 + 1 + 1, 10 + 1, work 12) + 1.5 sync = 15.5 us, less
 *         than one stage, 17, or any other cut): groups {1, 2} on stream 0, {3} on stream 1: event 0 -> 3. */
static void test_policies_differ(void **state)
{
	(void)state;
	static const int e[] = {0, 1, 0, 2, 0, 3, 1, 2};
	static const double cost[] = {1, 1, 1, 10};
	struct tdag t;
	struct splan p;
	tdag_make(&t, 4, e, 4, cost);
	assert_int_equal(streams_assign(&t.d, SP_ASAP, 4, &p, NULL, 0), 0);
	expect_plan(&p, (int[]){0, 1, 2, 3}, (int[]){0, 1, 1, 0}, (int[]){0, 1}, 1);
	splan_free(&p);
	assert_int_equal(streams_assign(&t.d, SP_XLA, 4, &p, NULL, 0), 0);
	expect_plan(&p, (int[]){0, 1, 2, 3}, (int[]){0, 0, 0, 1}, (int[]){0, 3}, 1);
	splan_free(&p);
	assert_int_equal(streams_assign(&t.d, SP_NNC, 4, &p, NULL, 0), 0);
	expect_plan(&p, (int[]){0, 1, 3, 2}, (int[]){0, 0, 0, 1}, (int[]){0, 3}, 1);
	splan_free(&p);
	assert_int_equal(streams_assign(&t.d, SP_WAVEFRONT, 4, &p, NULL, 0), 0);
	expect_plan(&p, (int[]){0, 1, 3, 2}, (int[]){0, 0, 0, 1}, (int[]){0, 3, 3, 2}, 2);
	assert_int_equal(p.n_sync, 4); /* 0 -> 1, 0 -> 3, 1 -> 2, 3 -> 2 */
	splan_free(&p);
	assert_int_equal(streams_assign(&t.d, SP_IOS, 4, &p, NULL, 0), 0);
	expect_plan(&p, (int[]){0, 1, 3, 2}, (int[]){0, 0, 0, 1}, (int[]){0, 3}, 1);
	splan_free(&p);
}

/* Independent ops: wavefront spreads one wave over the streams round robin; xla gives each source a
 * stream of its own until N are used, then the least loaded; no events either way. */
static void test_independent(void **state)
{
	(void)state;
	struct tdag t;
	struct splan p;
	tdag_make(&t, 6, NULL, 0, NULL);
	assert_int_equal(streams_assign(&t.d, SP_WAVEFRONT, 4, &p, NULL, 0), 0);
	expect_plan(&p, (int[]){0, 1, 2, 3, 4, 5}, (int[]){0, 1, 2, 3, 0, 1}, NULL, 0);
	assert_int_equal(p.n_streams, 4);
	splan_free(&p);
	assert_int_equal(streams_assign(&t.d, SP_XLA, 4, &p, NULL, 0), 0);
	expect_plan(&p, (int[]){0, 1, 2, 3, 4, 5}, (int[]){0, 1, 2, 3, 0, 1}, NULL, 0);
	splan_free(&p);
	assert_int_equal(streams_assign(&t.d, SP_XLA, 2, &p, NULL, 0), 0);
	expect_plan(&p, (int[]){0, 1, 2, 3, 4, 5}, (int[]){0, 1, 0, 1, 0, 1}, NULL, 0);
	splan_free(&p);
}

/* ---- the checker against brute force ---------------------------------------------------------- */

/* Whether every edge is ordered, by search: u before v iff v is reachable from u through "next on
 * the same stream" and "event recorded by a, waited by b" steps, each event issued record first. */
static int brute_ordered(const struct sdag *d, const struct splan *p)
{
	int n = d->n, ipos[64];
	for (int i = 0; i < n; i++)
		ipos[p->order[i]] = i;
	for (int k = 0; k < p->n_events; k++)
		if (ipos[p->ev[k].from] >= ipos[p->ev[k].to])
			return 0;
	for (int u = 0; u < n; u++)
		for (int64_t e = d->xadj[u]; e < d->xadj[u + 1]; e++) {
			int v = d->adj[e];
			if (ipos[u] >= ipos[v])
				return 0;
			uint8_t seen[64] = {0};
			int stack[64], top = 0, found = 0;
			stack[top++] = u;
			seen[u] = 1;
			while (top && !found) {
				int a = stack[--top];
				found = a == v;
				for (int b = 0; b < n; b++) {
					int step = p->stream[b] == p->stream[a] && ipos[b] > ipos[a];
					for (int k = 0; k < p->n_events && !step; k++)
						step = p->ev[k].from == a && p->ev[k].to == b;
					if (step && !seen[b])
						seen[b] = 1, stack[top++] = b;
				}
			}
			if (!found)
				return 0;
		}
	return 1;
}

static struct splan plan_copy(const struct splan *p)
{
	struct splan c = *p;
	c.order = malloc(((size_t)p->n + 1) * sizeof *c.order);
	c.stream = malloc(((size_t)p->n + 1) * sizeof *c.stream);
	c.ev = malloc(((size_t)p->n_events + 1) * sizeof *c.ev);
	c.sync = NULL;
	c.n_sync = 0;
	memcpy(c.order, p->order, (size_t)p->n * sizeof *c.order);
	memcpy(c.stream, p->stream, (size_t)p->n * sizeof *c.stream);
	if (p->n_events) /* p->ev may be NULL without events, which memcpy must not be given */
		memcpy(c.ev, p->ev, (size_t)p->n_events * sizeof *c.ev);
	return c;
}

/* Every policy's program is proved and brute force agrees; every mutation (an event dropped,
 * redirected or reversed, a node moved to another stream, two nodes swapped in the issue order) is
 * judged the same by both; for the policies without syncs, dropping any one event breaks a
 * dependency (no event is implied by the others). */
static void test_checker_mutations(void **state)
{
	(void)state;
	int judged = 0, rejected = 0;
	for (int round = 0; round < 60; round++) {
		struct tdag t;
		int n = 4 + (int)(rng() % 20);
		tdag_random(&t, n, 100 + (int)(rng() % 300));
		for (int pol = 0; pol < SP__COUNT; pol++) {
			struct splan p;
			char err[256];
			int N = 1 + (int)(rng() % 5);
			assert_int_equal(streams_assign(&t.d, pol, N, &p, err, sizeof err), 0);
			assert_int_equal(streams_check(&t.d, &p, err, sizeof err), 0);
			assert_true(brute_ordered(&t.d, &p));
			for (int mut = 0; mut < 40; mut++) {
				struct splan c = plan_copy(&p);
				int kind = (int)(rng() % 5);
				if (kind == 0 && c.n_events) { /* drop an event */
					int k = (int)(rng() % c.n_events);
					c.ev[k] = c.ev[--c.n_events];
				} else if (kind == 1 && c.n_events) { /* redirect its recorder */
					c.ev[rng() % c.n_events].from = (int)(rng() % n);
				} else if (kind == 2 && c.n_events) { /* reverse it */
					int k = (int)(rng() % c.n_events), x = c.ev[k].from;
					c.ev[k].from = c.ev[k].to;
					c.ev[k].to = x;
				} else if (kind == 3) { /* another stream */
					c.stream[rng() % n] = (int)(rng() % c.n_streams);
				} else { /* swap two in the issue order */
					int i = (int)(rng() % n), j = (int)(rng() % n), x = c.order[i];
					c.order[i] = c.order[j];
					c.order[j] = x;
				}
				int ok = streams_check(&t.d, &c, err, sizeof err) == 0;
				assert_int_equal(ok, brute_ordered(&t.d, &c));
				judged++;
				rejected += !ok;
				free(c.order);
				free(c.stream);
				free(c.ev);
			}
			if (pol == SP_ASAP || pol == SP_XLA || pol == SP_NNC)
				for (int k = 0; k < p.n_events; k++) {
					struct splan c = plan_copy(&p);
					c.ev[k] = c.ev[--c.n_events];
					assert_int_not_equal(streams_check(&t.d, &c, err, sizeof err), 0);
					assert_false(brute_ordered(&t.d, &c));
					free(c.order);
					free(c.stream);
					free(c.ev);
				}
			splan_free(&p);
		}
	}
	printf("# %d mutations judged, %d rejected by both checkers\n", judged, rejected);
	assert_true(rejected > judged / 10);
}

/* The checker's messages name the unordered edge. */
static void test_checker_message(void **state)
{
	(void)state;
	static const int e[] = {0, 1};
	struct tdag t;
	struct splan p;
	char err[256];
	tdag_make(&t, 2, e, 1, NULL);
	assert_int_equal(streams_assign(&t.d, SP_SINGLE, 1, &p, NULL, 0), 0);
	p.n_streams = 2;
	p.stream[1] = 1;
	assert_int_equal(streams_check(&t.d, &p, err, sizeof err), -1);
	assert_non_null(strstr(err, "edge 0 -> 1 is not ordered"));
	p.order[0] = 1;
	p.order[1] = 0;
	p.stream[1] = 0;
	assert_int_equal(streams_check(&t.d, &p, err, sizeof err), -1);
	assert_non_null(strstr(err, "issued at 1, after node 1 at 0"));
	splan_free(&p);
}

/* Prediction: more streams never predict slower than one on independent ops of equal cost, and a
 * graph (no host launch per kernel) predicts faster than streams. */
static void test_predict(void **state)
{
	(void)state;
	struct tdag t;
	struct splan one, four;
	double cost[8] = {20, 20, 20, 20, 20, 20, 20, 20};
	tdag_make(&t, 8, NULL, 0, cost);
	double work[8] = {2, 2, 2, 2, 2, 2, 2, 2};
	t.d.work_us = work;
	assert_int_equal(streams_assign(&t.d, SP_SINGLE, 1, &one, NULL, 0), 0);
	assert_int_equal(streams_assign(&t.d, SP_WAVEFRONT, 4, &four, NULL, 0), 0);
	double a = streams_predict(&t.d, &one, 0);
	double b = streams_predict(&t.d, &four, 0);
	double c = streams_predict(&t.d, &four, 1);
	assert_true(a > 8 * 20);
	assert_true(b < a / 2);
	assert_true(c < b);
	splan_free(&one);
	splan_free(&four);
}

/* ---- programs of compiled models ------------------------------------------------------------- */

static const char *branchy =
	"version = 1;\nname = \"br\";\n"
	"tensors = (\n"
	"  { name = \"x\"; shape = [4, 256]; role = \"input\"; },\n"
	"  { name = \"w1\"; shape = [256, 256]; role = \"weight\"; },\n"
	"  { name = \"w2\"; shape = [256, 256]; role = \"weight\"; },\n"
	"  { name = \"w3\"; shape = [256, 8192]; role = \"weight\"; },\n"
	"  { name = \"y\"; role = \"output\"; }\n"
	");\n"
	"ops = (\n"
	"  { name = \"a\"; op = \"matmul\"; in = [\"x\", \"w1\"]; out = [\"ha\"]; },\n"
	"  { name = \"b\"; op = \"matmul\"; in = [\"x\", \"w2\"]; out = [\"hb\"]; },\n"
	"  { name = \"s\"; op = \"add\"; in = [\"ha\", \"hb\"]; out = [\"hs\"]; },\n"
	"  { name = \"c\"; op = \"matmul\"; in = [\"hs\", \"w3\"]; out = [\"y\"]; }\n"
	");\n";

static void test_compiled_program(void **state)
{
	(void)state;
	struct arkgen_options o = arkgen_options_default();
	struct arkgen_result r;
	o.calib = NULL;
	int rc = harness_compile(branchy, &o, &r);
	if (rc)
		printf("# %s", harness_diag());
	assert_int_equal(rc, 0);
	const struct graph *g = &r.graph;
	for (int b = ARK_BACKEND_STREAMS; b < ARK_BACKEND__COUNT; b++)
		for (int pol = 0; pol < SP__COUNT; pol++) {
			struct stream_prog sp;
			assert_int_equal(stream_prog_build(&r.tiling, &r.schedule[0], &r.gpu, b, pol, 4, &sp), 0);
			assert_int_equal(streams_check(&sp.dag, &sp.plan, NULL, 0), 0);
			int na = sp.node_of_op[harness_op(g, "a")], nb = sp.node_of_op[harness_op(g, "b")];
			int ns = sp.node_of_op[harness_op(g, "s")], nc = sp.node_of_op[harness_op(g, "c")];
			assert_true(na >= 0 && nb >= 0 && nc >= 0);
			int tasks = 0;
			for (int a = 0; a < sp.n; a++) {
				assert_true(sp.cost_us[a] > 0);
				for (int l = sp.launch0[a]; l < sp.launch0[a + 1]; l++)
					tasks += (int)sp.launches[l].n;
			}
			assert_int_equal(tasks, r.tiling.n_vcta); /* every vCTA in exactly one launch */
			/* every task index is distinct */
			uint8_t *seen = calloc((size_t)r.schedule[0].tab.gpu[0].n_tasks, 1);
			for (int i = 0; i < sp.n_ti; i++) {
				assert_false(seen[sp.task_index[i]]);
				seen[sp.task_index[i]] = 1;
			}
			free(seen);
			/* c's split-K (a K of 256 over few rows: see below) is two launches when it has partials */
			int parts = 0;
			for (int v = 0; v < r.tiling.n_vcta; v++)
				parts += r.tiling.v[v].tmpl == ARK_T_MATMUL_PARTIAL && r.tiling.v[v].op == sp.node_op[nc];
			assert_int_equal(sp.n_launch[nc], parts ? 2 : 1);
			/* a and b are independent: two streams, but for single, and ios, which finds a sync
			 * costlier than these tiny ops side by side and makes one stage of them */
			if (ns >= 0 && pol != SP_SINGLE && pol != SP_IOS)
				assert_int_not_equal(sp.plan.stream[na], sp.plan.stream[nb]);
			/* ranges: a reads x and w1, writes ha */
			int reads = 0, writes = 0;
			for (int k = sp.range0[na]; k < sp.range0[na + 1]; k++) {
				reads += !sp.ranges[k].write;
				writes += sp.ranges[k].write;
				assert_true(sp.ranges[k].bytes > 0);
			}
			assert_true(reads >= 2 && writes == 1);
			assert_true(sp.predicted_us > 0);
			/* the generated text holds the program */
			char *buf = NULL;
			size_t len = 0;
			FILE *f = open_memstream(&buf, &len);
			struct emit_info info = {.options = "", .threads = o.threads, .smem = o.smem, .streams = &sp};
			assert_int_equal(emit_loop(&r.tiling, &r.schedule[0], &info, f), 0);
			fclose(f);
			assert_non_null(strstr(buf, "ARK_DEFINE_STREAMS()"));
			assert_non_null(strstr(buf, ".streams = &ark_streams_def"));
			free(buf);
			stream_prog_free(&sp);
		}
	arkgen_result_free(&r);
}

/* Whether two nodes' byte ranges conflict (one writes what the other touches), as runtime/streams.c's
 * dynamic backend decides. */
static int ranges_conflict(const struct stream_prog *sp, int a, int b)
{
	for (int x = sp->range0[a]; x < sp->range0[a + 1]; x++)
		for (int y = sp->range0[b]; y < sp->range0[b + 1]; y++) {
			const struct ark_srange *u = &sp->ranges[x], *v = &sp->ranges[y];
			if ((u->write || v->write) && u->off < v->off + v->bytes && v->off < u->off + u->bytes)
				return 1;
		}
	return 0;
}

/* On every one-GPU model of models/ and tests/models/: every dependency between two ops (their vCTAs'
 * hazards, memory reuse included) shows as a conflict of their byte ranges, so the dynamic backend,
 * which sees only the ranges, orders it; and independent ops whose bytes do not meet exist (the
 * ranges are not all one block). */
static void test_ranges_cover_deps(void **state)
{
	(void)state;
	static const char *const files[] = {"models/branchy.cfg", "models/chain64.cfg", "models/mlp.cfg",
					    "models/mlp8.cfg", "tests/models/chains.cfg", "tests/models/gates.cfg",
					    "tests/models/reuse.cfg", "tests/models/splitk_chain.cfg"};
	int free_pairs = 0;
	for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
		struct arkgen_options o = arkgen_options_default();
		struct arkgen_result r;
		struct stream_prog sp;
		o.calib = NULL;
		assert_int_equal(arkgen_compile(files[i], NULL, &o, &r), 0);
		assert_int_equal(stream_prog_build(&r.tiling, &r.schedule[0], &r.gpu, ARK_BACKEND_DYNAMIC, SP_XLA, 4, &sp), 0);
		for (int a = 0; a < sp.n; a++)
			for (int64_t e = sp.xadj[a]; e < sp.xadj[a + 1]; e++) {
				if (!ranges_conflict(&sp, a, sp.adj[e]))
					printf("# %s: ops %s -> %s depend, their bytes do not meet\n", files[i],
					       r.graph.ops[sp.node_op[a]].name, r.graph.ops[sp.node_op[sp.adj[e]]].name);
				assert_true(ranges_conflict(&sp, a, sp.adj[e]));
			}
		for (int a = 0; a < sp.n; a++)
			for (int b = a + 1; b < sp.n; b++)
				free_pairs += !ranges_conflict(&sp, a, b);
		stream_prog_free(&sp);
		arkgen_result_free(&r);
	}
	assert_true(free_pairs > 0);
}

static int random_idle(void *ctx, int node)
{
	(void)ctx;
	(void)node;
	return (int)(rng() % 3) == 0;
}

/* The dynamic backend's decisions (runtime/dynamic.c), on the programs of every one-GPU model with
 * 1 to 6 streams and streams found finished at random: the streams and waits it picks, as a program,
 * pass the checker (every dependency ordered); ops that only read the same bytes (branchy's first
 * matmuls all read x) neither wait nor share a stream while the pool has an empty one. */
static void test_dynamic_decisions(void **state)
{
	(void)state;
	static const char *const files[] = {"models/branchy.cfg", "models/mlp.cfg", "models/mlp8.cfg",
					    "tests/models/gates.cfg", "tests/models/reuse.cfg",
					    "tests/models/splitk_chain.cfg"};
	for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
		struct arkgen_options o = arkgen_options_default();
		struct arkgen_result r;
		struct stream_prog sp;
		o.calib = NULL;
		assert_int_equal(arkgen_compile(files[f], NULL, &o, &r), 0);
		assert_int_equal(stream_prog_build(&r.tiling, &r.schedule[0], &r.gpu, ARK_BACKEND_DYNAMIC, SP_XLA, 4, &sp), 0);
		int n = sp.n;
		struct ark_snode *nodes = calloc((size_t)n + 1, sizeof *nodes);
		for (int i = 0; i < n; i++) { /* as emit_streams writes them: in issue order */
			int a = sp.plan.order[i];
			nodes[i].range0 = (uint32_t)sp.range0[a];
			nodes[i].n_range = (uint32_t)(sp.range0[a + 1] - sp.range0[a]);
		}
		struct ark_streams prog = {.backend = ARK_BACKEND_DYNAMIC, .n_nodes = n, .nodes = nodes,
					   .n_ranges = sp.n_ranges, .ranges = sp.ranges};
		for (int S = 1; S <= 6; S++)
			for (int round = 0; round < 20; round++) {
				struct ark_dyn d;
				struct splan pl = {.n = n, .n_streams = S};
				int *waits = malloc(((size_t)n + 1) * sizeof *waits), cap = 0;
				pl.order = malloc(((size_t)n + 1) * sizeof *pl.order);
				pl.stream = malloc(((size_t)n + 1) * sizeof *pl.stream);
				assert_int_equal(ark_dyn_init(&d, n, S), 0);
				int sources = 0;
				for (int i = 0; i < n; i++) {
					int st, nw = ark_dyn_issue(&d, &prog, i, random_idle, NULL, &st, waits);
					assert_true(st >= 0 && st < S);
					pl.order[i] = sp.plan.order[i];
					pl.stream[pl.order[i]] = st;
					for (int k = 0; k < nw; k++) {
						assert_true(waits[k] < i);
						if (pl.n_events == cap) {
							cap = cap ? 2 * cap : 16;
							pl.ev = realloc(pl.ev, (size_t)cap * sizeof *pl.ev);
						}
						pl.ev[pl.n_events++] = (struct sevent){pl.order[waits[k]], pl.order[i]};
					}
					int src = 1; /* no earlier node touches its bytes with a write (branchy: the branches' first matmuls, which read x) */
					for (int j = 0; j < i; j++)
						src &= !ark_dyn_conflict(&prog, i, j);
					if (src) {
						assert_int_equal(nw, 0);
						if (sources < S) /* an empty stream of its own */
							assert_int_equal(st, sources);
						sources++;
					}
				}
				if (f == 0)
					assert_int_equal(sources, 8);
				char err[256];
				int rc = streams_check(&sp.dag, &pl, err, sizeof err);
				if (rc)
					printf("# %s, %d streams: %s\n", files[f], S, err);
				assert_int_equal(rc, 0);
				ark_dyn_free(&d);
				free(waits);
				splan_free(&pl);
			}
		free(nodes);
		stream_prog_free(&sp);
		arkgen_result_free(&r);
	}
}

/* Models these backends cannot run are refused with a located error. */
static void test_refused(void **state)
{
	(void)state;
	struct arkgen_options o = arkgen_options_default();
	struct arkgen_result r;
	struct stream_prog sp;
	o.calib = NULL;
	assert_int_equal(arkgen_compile("models/comm2.cfg", NULL, &o, &r), 0);
	harness_capture_begin();
	assert_int_equal(stream_prog_build(&r.tiling, &r.schedule[0], &r.gpu, ARK_BACKEND_STREAMS, SP_XLA, 4, &sp), -1);
	harness_capture_end();
	assert_non_null(strstr(harness_diag(), "models/comm2.cfg: error: --backend streams runs a model on one GPU"));
	stream_prog_free(&sp);
	arkgen_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_diamond),
		cmocka_unit_test(test_policies_differ),
		cmocka_unit_test(test_independent),
		cmocka_unit_test(test_checker_mutations),
		cmocka_unit_test(test_checker_message),
		cmocka_unit_test(test_predict),
		cmocka_unit_test(test_compiled_program),
		cmocka_unit_test(test_ranges_cover_deps),
		cmocka_unit_test(test_dynamic_decisions),
		cmocka_unit_test(test_refused),
	};
	cmocka_set_message_output(CM_OUTPUT_TAP);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
