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

/* Compiles the model at path (to the dependencies) and checks every hazard is ordered. */
static void check_model(const char *path, int fuse, int reuse, int sms)
{
	struct arkgen_options opt = arkgen_options_default();
	opt.fuse = fuse;
	opt.reuse = reuse;
	opt.sms = sms;
	opt.until = ARKGEN_PASS_DEPS;
	struct arkgen_result r;
	harness_capture_begin();
	int rc = arkgen_compile(path, NULL, &opt, &r);
	harness_capture_end();
	if (rc < 0)
		fail_msg("%s: %s", path, harness_diag());
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
};

static void test_every_hazard_ordered(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof models / sizeof models[0]; i++)
		for (int fuse = 0; fuse < 2; fuse++)
			for (int reuse = 0; reuse < 2; reuse++)
				check_model(models[i], fuse, reuse, 16);
}

/* The reuse model really shares bytes, and finds fewer hazards than every pair of its accesses
 * that share bytes across tensors (the point of comparing against the last users only). */
static void test_reuse_shares(void **state)
{
	(void)state;
	struct arkgen_options opt = arkgen_options_default();
	opt.sms = 16;
	opt.fuse = 0;
	opt.until = ARKGEN_PASS_DEPS;
	struct arkgen_result r;
	harness_capture_begin();
	int rc = arkgen_compile("tests/models/reuse.cfg", NULL, &opt, &r);
	harness_capture_end();
	assert_int_equal(rc, 0);
	assert_true(r.tiling.arena[0] < r.tiling.arena_noreuse[0]);
	arkgen_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_hazard_ordered),
		cmocka_unit_test(test_reuse_shares),
	};
	cmocka_set_message_output(CM_OUTPUT_TAP);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
