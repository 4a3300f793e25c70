/* test_deps.c: the dependency edges deps.c finds are enough. For small models, with and without
 * fusion and memory reuse, every pair of accesses by two vCTAs that touch a common byte of a GPU's
 * arena, one of them writing, is found by comparing every pair, and the later vCTA must be reachable
 * from the earlier one through the edges; and through the edges kept by the transitive reduction. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* A region as rows of bytes of its GPU's arena: row r covers [base + r * pitch, + len). */
struct rows {
	int gpu;
	int64_t base, pitch, len, r0, r1;
	int write, v;
};

static struct rows rows_of(const struct tiling *s, const struct region *r, int v, int write)
{
	const struct tensor *t = &s->g->tensors[r->tensor];
	int64_t es = ark_dtype_size(t->dtype), pitch = s->cols[r->tensor] * es;
	return (struct rows){t->gpu, (int64_t)s->offset[r->tensor] + r->c0 * es, pitch, (r->c1 - r->c0) * es, r->r0, r->r1,
			     write, v};
}

static int64_t floor_div(int64_t a, int64_t b)
{
	return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* Do two regions share a byte? Each row of x against the rows of y it can reach. */
static int share_byte(const struct rows *x, const struct rows *y)
{
	if (x->gpu != y->gpu || x->len == 0 || y->len == 0)
		return 0;
	int64_t xlo = x->base + x->r0 * x->pitch, xhi = x->base + (x->r1 - 1) * x->pitch + x->len;
	int64_t ylo = y->base + y->r0 * y->pitch, yhi = y->base + (y->r1 - 1) * y->pitch + y->len;
	if (xhi <= ylo || yhi <= xlo)
		return 0;
	for (int64_t r = x->r0; r < x->r1; r++) {
		int64_t lo = x->base + r * x->pitch, hi = lo + x->len;
		/* rows q of y with base + q * pitch < hi and base + q * pitch + len > lo */
		int64_t qmin = floor_div(lo - y->base - y->len, y->pitch) + 1;
		int64_t qmax = floor_div(hi - y->base - 1, y->pitch);
		if (qmin < y->r0)
			qmin = y->r0;
		if (qmax > y->r1 - 1)
			qmax = y->r1 - 1;
		if (qmin <= qmax)
			return 1;
	}
	return 0;
}

/* reach[u]: bitset of the vCTAs reachable from u (through kept edges only when keep is set). */
static uint64_t *reach_sets(const struct tiling *s, const uint8_t *keep, int words)
{
	uint64_t *reach = calloc((size_t)s->n_vcta * words + 1, sizeof *reach);
	assert_non_null(reach);
	for (int u = s->n_vcta - 1; u >= 0; u--)
		for (int64_t e = s->xadj[u]; e < s->xadj[u + 1]; e++) {
			if (keep && !keep[e])
				continue;
			int w = s->adj[e];
			reach[(size_t)u * words + w / 64] |= (uint64_t)1 << (w % 64);
			for (int k = 0; k < words; k++)
				reach[(size_t)u * words + k] |= reach[(size_t)w * words + k];
		}
	return reach;
}

/* The options of these tests: 16 SMs, the passes up to `until`, arkgen's defaults otherwise. */
static struct arkgen_options opts_until(enum arkgen_pass until)
{
	struct arkgen_options opt = arkgen_options_default();
	opt.sms = 16;
	opt.until = until;
	return opt;
}

/* Compiles the model at path into *r (arkgen_result_free releases it); an error fails the test with
 * the diagnostics. */
static void compile_or_fail(const char *path, const struct arkgen_options *opt, struct arkgen_result *r)
{
	harness_capture_begin();
	int rc = arkgen_compile(path, NULL, opt, r);
	harness_capture_end();
	if (rc < 0)
		fail_msg("%s: %s", path, harness_diag());
}

/* Compiles the model at path (to the dependencies) and checks every hazard is ordered. */
static void check_model(const char *path, int fuse, int reuse)
{
	struct arkgen_options opt = opts_until(ARKGEN_PASS_DEPS);
	opt.fuse = fuse;
	opt.reuse = reuse;
	struct arkgen_result r;
	compile_or_fail(path, &opt, &r);
	const struct tiling *s = &r.tiling;
	int n = s->n_vcta, words = (n + 63) / 64, na = 0;
	struct rows *a = malloc(((size_t)n * VCTA_MAX_READS + n + 1) * sizeof *a);
	assert_non_null(a);
	for (int v = 0; v < n; v++) {
		a[na++] = rows_of(s, &s->v[v].write, v, 1);
		for (int i = 0; i < s->v[v].n_reads; i++)
			a[na++] = rows_of(s, &s->v[v].reads[i], v, 0);
	}
	uint64_t *all = reach_sets(s, NULL, words), *kept = reach_sets(s, s->keep, words);
	int64_t hazards = 0;
	for (int i = 0; i < na; i++)
		for (int j = 0; j < na; j++) {
			const struct rows *x = &a[i], *y = &a[j];
			if (x->v >= y->v || !(x->write || y->write) || !share_byte(x, y))
				continue;
			hazards++;
			uint64_t bit = (uint64_t)1 << (y->v % 64);
			if (!(all[(size_t)x->v * words + y->v / 64] & bit) || !(kept[(size_t)x->v * words + y->v / 64] & bit))
				fail_msg("%s (fuse %d, reuse %d): vCTA %d and vCTA %d share a byte, one writing, but no path "
					 "orders them", path, fuse, reuse, x->v, y->v);
		}
	assert_true(hazards > 0 || s->n_edges == 0);
	free(a), free(all), free(kept);
	arkgen_result_free(&r);
}

static const char *const models[] = {
	"models/mlp.cfg", "models/branchy.cfg", "models/chain64.cfg", "models/comm2.cfg",
	"tests/models/chains.cfg", "tests/models/gates.cfg", "tests/models/reuse.cfg",
	"tests/models/embed_views.cfg", "tests/models/embed_reuse.cfg", "tests/models/state.cfg",
	"tests/models/decode.cfg",
};

static void test_every_hazard_ordered(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof models / sizeof models[0]; i++)
		for (int fuse = 0; fuse < 2; fuse++)
			for (int reuse = 0; reuse < 2; reuse++)
				check_model(models[i], fuse, reuse);
}

/* The reuse model really shares bytes, and finds fewer hazards than every pair of its accesses
 * that share bytes across tensors (the point of comparing against the last users only). */
static void test_reuse_shares(void **state)
{
	(void)state;
	struct arkgen_options opt = opts_until(ARKGEN_PASS_DEPS);
	opt.fuse = 0;
	struct arkgen_result r;
	compile_or_fail("tests/models/reuse.cfg", &opt, &r);
	assert_true(r.tiling.arena[0] < r.tiling.arena_noreuse[0]);
	arkgen_result_free(&r);
}

/* Views: a view's readers wait for its base's producers, and a concat's readers for the producers
 * of its inputs, which write inside it. Checked on the paths of the kept edges, op by op. */
static int op_of(const struct arkgen_result *r, const char *name)
{
	int oi = graph_find_op(&r->graph, name);
	assert_true(oi >= 0);
	return oi;
}

/* Does a read of vCTA `reader` share a byte with the write of vCTA `writer`? */
static int reads_write_of(const struct tiling *s, int reader, int writer)
{
	struct rows w = rows_of(s, &s->v[writer].write, writer, 1);
	for (int i = 0; i < s->v[reader].n_reads; i++) {
		struct rows x = rows_of(s, &s->v[reader].reads[i], reader, 0);
		if (share_byte(&x, &w))
			return 1;
	}
	return 0;
}

/* Every vCTA of op `to` is reachable from every vCTA of op `from` whose write its reads overlap
 * (through the kept edges), and at least one such pair exists. */
static void assert_waits_for(const struct arkgen_result *r, const char *to, const char *from)
{
	const struct tiling *s = &r->tiling;
	int words = (s->n_vcta + 63) / 64, pairs = 0;
	uint64_t *kept = reach_sets(s, s->keep, words);
	const struct op_tiling *pt = &s->per_op[op_of(r, to)], *pf = &s->per_op[op_of(r, from)];
	for (int v = pt->first_vcta; v < pt->first_vcta + pt->n_vcta; v++)
		for (int u = pf->first_vcta; u < pf->first_vcta + pf->n_vcta; u++) {
			if (!reads_write_of(s, v, u))
				continue;
			pairs++;
			if (!(kept[(size_t)u * words + v / 64] >> (v % 64) & 1))
				fail_msg("vCTA %d of op '%s' reads what vCTA %d of op '%s' writes, but does not wait for it", v,
					 to, u, from);
		}
	if (!pairs)
		fail_msg("no vCTA of op '%s' reads what op '%s' writes", to, from);
	free(kept);
}

static void test_views_wait_for_bases(void **state)
{
	(void)state;
	struct arkgen_options opt = opts_until(ARKGEN_PASS_DEPS);
	struct arkgen_result r;
	compile_or_fail("tests/models/embed_views.cfg", &opt, &r);
	const struct graph *g = &r.graph;
	/* the view ops have no vCTAs; no region names a view */
	assert_int_equal(r.tiling.per_op[op_of(&r, "r")].n_vcta, 0);
	assert_int_equal(r.tiling.per_op[op_of(&r, "c")].n_vcta, 0);
	for (int v = 0; v < r.tiling.n_vcta; v++) {
		assert_int_equal(g->tensors[r.tiling.v[v].write.tensor].view_of, -1);
		for (int i = 0; i < r.tiling.v[v].n_reads; i++)
			assert_int_equal(g->tensors[r.tiling.v[v].reads[i].tensor].view_of, -1);
	}
	/* the matmuls read h2 = reshape(h): they wait for the add that writes h */
	assert_waits_for(&r, "m1", "a");
	assert_waits_for(&r, "m2", "a");
	/* the copy of cat's columns waits for both matmuls, which write cat through u and v1 */
	assert_waits_for(&r, "sc", "m1");
	assert_waits_for(&r, "sc", "m2");
	/* the copied concat reads u and v1, views of cat: it waits for the matmuls too */
	assert_waits_for(&r, "cc", "m1");
	assert_waits_for(&r, "cc", "m2");
	/* views inside their bases: u and v1 back to back in cat, row inside h */
	int64_t es = 2;
	const uint64_t *off = r.tiling.offset;
	assert_int_equal(off[graph_find_tensor(g, "u")], off[graph_find_tensor(g, "cat")]);
	assert_int_equal(off[graph_find_tensor(g, "v1")], off[graph_find_tensor(g, "cat")] + 18 * 40 * es);
	assert_int_equal(off[graph_find_tensor(g, "row")], off[graph_find_tensor(g, "h")] + 4 * 75 * es);
	assert_int_equal(off[graph_find_tensor(g, "p9")], off[graph_find_tensor(g, "pos")]);
	arkgen_result_free(&r);
}

/* The reads of tensor `from` by op's vCTAs moved to tensor `to` (a view with the same bytes and the
 * same box), after the regions were put on their bases; how many. */
static int move_reads(struct arkgen_result *r, const char *op, const char *from, const char *to)
{
	struct tiling *s = &r->tiling;
	int f = graph_find_tensor(&r->graph, from), t = graph_find_tensor(&r->graph, to), moved = 0;
	const struct op_tiling *p = &s->per_op[op_of(r, op)];
	for (int v = p->first_vcta; v < p->first_vcta + p->n_vcta; v++)
		for (int i = 0; i < s->v[v].n_reads; i++)
			if (s->v[v].reads[i].tensor == f) {
				s->v[v].reads[i].tensor = t;
				moved++;
			}
	return moved;
}

/* The rest of the passes on r's tiling, reads moved: deps.c sees no hazard where they moved, so the
 * verifier, which sees bytes, must reject the schedule (policy) with a message naming both `what`s. */
static void assert_schedule_rejected(struct arkgen_result *r, enum part_policy policy, const char *what,
				     const char *what2)
{
	struct tiling *s = &r->tiling;
	assert_int_equal(mem_plan(s), 0);
	assert_int_equal(deps_build(s), 0);
	harness_capture_begin();
	int rc = schedule_build(s, &r->gpu, policy, 0, &r->schedule[0]);
	harness_capture_end();
	r->n_schedules = 1;
	assert_int_equal(rc, -1);
	if (!strstr(harness_diag(), what) || !strstr(harness_diag(), what2))
		fail_msg("the verifier's message names no '%s' and '%s': %s", what, what2, harness_diag());
}

/* Without the views' regions on their bases the matmuls would not wait for the add (their reads
 * of h2 meet no write of h2): the verifier, which sees bytes, rejects that schedule. */
static void test_view_unaware_schedule_rejected(void **state)
{
	(void)state;
	struct arkgen_options opt = opts_until(ARKGEN_PASS_TILE);
	struct arkgen_result r;
	compile_or_fail("tests/models/embed_views.cfg", &opt, &r);
	/* h2 has h's rows: the same box */
	assert_true(move_reads(&r, "m1", "h", "h2") + move_reads(&r, "m2", "h", "h2") > 0);
	assert_schedule_rejected(&r, PART_METIS, "read after write", "(tensor 'h' then 'h2') is not ordered");
	arkgen_result_free(&r);
}

/* Every vCTA of op `reader` that reads bytes op `writer` writes comes before the writer's vCTAs and
 * reaches each of them through the kept edges (it reads the old value: write after read), and at
 * least one such pair exists. */
static void assert_reads_before(const struct arkgen_result *r, const char *reader, const char *writer)
{
	const struct tiling *s = &r->tiling;
	int words = (s->n_vcta + 63) / 64, pairs = 0;
	uint64_t *kept = reach_sets(s, s->keep, words);
	const struct op_tiling *pr = &s->per_op[op_of(r, reader)], *pw = &s->per_op[op_of(r, writer)];
	const struct op_tiling *pc = pr->fused_into >= 0 ? &s->per_op[pr->fused_into] : pr; /* who computes it */
	for (int u = pc->first_vcta; u < pc->first_vcta + pc->n_vcta; u++)
		for (int v = pw->first_vcta; v < pw->first_vcta + pw->n_vcta; v++) {
			if (!reads_write_of(s, u, v))
				continue;
			pairs++;
			if (u >= v || !(kept[(size_t)u * words + v / 64] >> (v % 64) & 1))
				fail_msg("vCTA %d of op '%s' reads the old value of what vCTA %d of op '%s' updates, but is not "
					 "ordered before it", u, reader, v, writer);
		}
	if (!pairs)
		fail_msg("no vCTA of op '%s' reads what op '%s' updates", reader, writer);
	free(kept);
}

/* State: the readers of a state's old value run before its update (an edge from each), the readers
 * of kv_append's result after it; an op that reads a state is not put into a chain that would run
 * after the update (ha, whose chain with tail would end after keep2); with and without fusion. */
static void test_state_readers_before_update(void **state)
{
	(void)state;
	for (int fuse = 0; fuse < 2; fuse++) {
		struct arkgen_options opt = opts_until(ARKGEN_PASS_DEPS);
		opt.fuse = fuse;
		struct arkgen_result r;
		compile_or_fail("tests/models/state.cfg", &opt, &r);
		assert_reads_before(&r, "ha", "keep2");
		assert_reads_before(&r, "read", "keep");
		assert_reads_before(&r, "half", "keep");
		assert_reads_before(&r, "old", "append");
		assert_waits_for(&r, "pool", "append");
		assert_waits_for(&r, "keep", "next");
		/* state has bytes of its own; kv_append's result is the cache's */
		const struct graph *g = &r.graph;
		const uint64_t *off = r.tiling.offset;
		assert_int_equal(off[graph_find_tensor(g, "cache2")], off[graph_find_tensor(g, "cache")]);
		assert_int_equal(r.tiling.per_op[op_of(&r, "ha")].fused_into, -1);
		arkgen_result_free(&r);
	}
}

/* Without the write-after-read edges (old's reads of the cache moved to cache2, a view with the same
 * bytes, after the regions were put on their bases, so that deps.c sees no hazard) nothing orders
 * old's reads before append's write: the verifier, which sees bytes, rejects the schedule. */
static void test_state_unordered_schedule_rejected(void **state)
{
	(void)state;
	struct arkgen_options opt = opts_until(ARKGEN_PASS_TILE);
	struct arkgen_result r;
	compile_or_fail("tests/models/state.cfg", &opt, &r);
	assert_true(move_reads(&r, "old", "cache", "cache2") > 0);
	assert_schedule_rejected(&r, PART_ROUNDROBIN, "write after read", "'cache");
	arkgen_result_free(&r);
}

/* --policy auto: every policy placed and simulated, the least predicted kept (the first of them on a
 * tie), alone in schedule[0]; the same placement as that policy's own. At least one of the models
 * must be one where METIS's is not the least, or the test would not tell auto from metis. */
static void test_auto_policy_least_predicted(void **state)
{
	(void)state;
	static const char *const some[] = {"tests/models/pooling.cfg", "models/branchy.cfg", "tests/models/reuse.cfg",
					   "models/mlp.cfg"};
	int not_metis = 0;
	for (size_t i = 0; i < sizeof some / sizeof some[0]; i++) {
		struct arkgen_options opt = opts_until(ARKGEN_PASS_SCHEDULE);
		struct arkgen_result all, aut;
		opt.reuse = 0; /* one memory plan: the policies alone decide */
		opt.policy = ARKGEN_POLICY_ALL;
		compile_or_fail(some[i], &opt, &all);
		opt.policy = ARKGEN_POLICY_AUTO;
		compile_or_fail(some[i], &opt, &aut);
		assert_int_equal(all.n_schedules, PART__COUNT);
		int best = 0;
		for (int p = 0; p < PART__COUNT; p++) {
			if (all.schedule[p].sim.latency_us < all.schedule[best].sim.latency_us)
				best = p;
			if (aut.policy_us[p] != all.schedule[p].sim.latency_us)
				fail_msg("%s: auto has %s at %g us, all at %g", some[i], part_policy_name[p], aut.policy_us[p],
					 all.schedule[p].sim.latency_us);
		}
		assert_int_equal(aut.n_schedules, 1);
		if ((int)aut.schedule[0].policy != (int)all.schedule[best].policy ||
		    aut.schedule[0].sim.latency_us != all.schedule[best].sim.latency_us)
			fail_msg("%s: auto kept %s (%g us), the least predicted is %s (%g us)", some[i],
				 part_policy_name[aut.schedule[0].policy], aut.schedule[0].sim.latency_us,
				 part_policy_name[all.schedule[best].policy], all.schedule[best].sim.latency_us);
		for (int v = 0; v < aut.tiling.n_vcta; v++)
			assert_int_equal(aut.schedule[0].pl.sm[v], all.schedule[best].pl.sm[v]);
		not_metis += best != PART_METIS;
		arkgen_result_free(&all);
		arkgen_result_free(&aut);
	}
	assert_true(not_metis > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_hazard_ordered),
		cmocka_unit_test(test_reuse_shares),
		cmocka_unit_test(test_views_wait_for_bases),
		cmocka_unit_test(test_view_unaware_schedule_rejected),
		cmocka_unit_test(test_state_readers_before_update),
		cmocka_unit_test(test_state_unordered_schedule_rejected),
		cmocka_unit_test(test_auto_policy_least_predicted),
	};
	cmocka_set_message_output(CM_OUTPUT_TAP);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
