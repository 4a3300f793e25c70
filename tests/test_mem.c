/* test_mem.c: the memory plan (codegen/mem.c). mem_place on random lifetimes and sizes gives the
 * offsets of the quadratic first-fit it replaced (written out below as the reference) and never
 * puts two tensors whose lifetimes overlap on common bytes; the plans of model files, with reuse,
 * are checked the same way from their vCTAs: every pair of stored activations whose first-to-last
 * vCTA spans meet must have disjoint bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#define ALIGN 256

static uint64_t align_up(uint64_t x) { return (x + ALIGN - 1) / ALIGN * ALIGN; }

static uint64_t rng_state;

static uint64_t rnd(void)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return rng_state >> 33;
}

static int lives_overlap(const struct mem_life *a, const struct mem_life *b)
{
	return a->birth <= b->death && b->birth <= a->death;
}

static int by_size_desc(const void *a, const void *b)
{
	const struct mem_life *x = a, *y = b;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	return x->t - y->t;
}

/* The placement as mem.c made it before: largest first, each tensor moved above every placed
 * reusable tensor it meets until none is met. lv sorted as mem_place sorts it. */
static uint64_t reference(const struct mem_life *lv, int n, uint64_t reuse_min, uint64_t *off)
{
	uint64_t end = 0;
	for (int i = 0; i < n; i++) {
		uint64_t o = 0;
		if (lv[i].bytes >= reuse_min) {
			for (int moved = 1; moved;) {
				moved = 0;
				for (int j = 0; j < i; j++)
					if (lv[j].bytes >= reuse_min && lives_overlap(&lv[i], &lv[j]) && o < off[j] + lv[j].bytes &&
					    off[j] < o + lv[i].bytes) {
						o = align_up(off[j] + lv[j].bytes);
						moved = 1;
					}
			}
		} else {
			o = end;
		}
		off[i] = o;
		if (align_up(o + lv[i].bytes) > end)
			end = align_up(o + lv[i].bytes);
	}
	return end;
}

/* Pairs of tensors live at once that share a byte, tensors unaligned or beyond end (the first
 * printed). */
static int violations(const struct mem_life *lv, int n, const uint64_t *off, uint64_t end)
{
	int bad = 0;
	for (int i = 0; i < n; i++) {
		if (off[i] % ALIGN || off[i] + lv[i].bytes > end) {
			if (!bad++)
				printf("# tensor %d at %llu+%llu: unaligned or beyond %llu\n", lv[i].t, (unsigned long long)off[i],
				       (unsigned long long)lv[i].bytes, (unsigned long long)end);
		}
		for (int j = i + 1; j < n; j++)
			if (lives_overlap(&lv[i], &lv[j]) && lv[i].bytes && lv[j].bytes && off[i] < off[j] + lv[j].bytes &&
			    off[j] < off[i] + lv[i].bytes && !bad++)
				printf("# tensors %d [%d, %d] at %llu+%llu and %d [%d, %d] at %llu+%llu are live at once and share bytes\n",
					 lv[i].t, lv[i].birth, lv[i].death, (unsigned long long)off[i],
					 (unsigned long long)lv[i].bytes, lv[j].t, lv[j].birth, lv[j].death,
					 (unsigned long long)off[j], (unsigned long long)lv[j].bytes);
	}
	return bad;
}

/* Random lifetimes (short, long, every one at once) and sizes (a few repeated sizes, so that ties
 * in size are ordered by tensor; some below reuse_min), with and without reuse. */
static void test_random(void **state)
{
	(void)state;
	int cases = 0, shared = 0;
	for (int seed = 1; seed <= 400; seed++) {
		rng_state = (uint64_t)seed * 0x9e3779b97f4a7c15ull;
		int n = 1 + (int)(rnd() % 300), span = 1 + (int)(rnd() % 400), kind = seed % 4;
		uint64_t reuse_min = seed % 7 == 0 ? UINT64_MAX : 64u << 10;
		struct mem_life *lv = malloc((size_t)n * sizeof *lv), *ref = malloc((size_t)n * sizeof *ref);
		uint64_t *off = malloc((size_t)n * sizeof *off), *roff = malloc((size_t)n * sizeof *roff);
		for (int i = 0; i < n; i++) {
			int b = (int)(rnd() % (uint64_t)span), len = kind == 0 ? 1 + (int)(rnd() % 8)
								     : kind == 1 ? (int)(rnd() % (uint64_t)span)
								     : kind == 2 ? span : (int)(rnd() % 40);
			uint64_t bytes = rnd() % 3 == 0 ? (uint64_t)(1 + rnd() % 4) << 16 : 1 + rnd() % (1u << 20);
			if (rnd() % 5 == 0)
				bytes = 1 + rnd() % 4096; /* below reuse_min: space of its own */
			lv[i] = (struct mem_life){i, b, b + len, bytes};
		}
		memcpy(ref, lv, (size_t)n * sizeof *lv);
		qsort(ref, (size_t)n, sizeof *ref, by_size_desc);
		uint64_t rend = reference(ref, n, reuse_min, roff);
		uint64_t end = mem_place(lv, n, reuse_min, off);
		assert_int_equal(end, rend);
		for (int i = 0; i < n; i++) {
			assert_int_equal(lv[i].t, ref[i].t);
			if (off[i] != roff[i])
				fail_msg("seed %d: tensor %d at %llu, the quadratic placement put it at %llu", seed, lv[i].t,
					 (unsigned long long)off[i], (unsigned long long)roff[i]);
		}
		assert_int_equal(violations(lv, n, off, end), 0);
		uint64_t flat = 0;
		for (int i = 0; i < n; i++)
			flat = align_up(flat + lv[i].bytes);
		shared += end < flat;
		cases++;
		free(lv), free(ref), free(off), free(roff);
	}
	printf("# %d random plans, %d of them sharing bytes, the same offsets as the quadratic placement\n", cases,
	       shared);
	assert_true(shared > 100);
}

/* The checker fails on a plan that puts two live tensors on common bytes (so that it can fail). */
static void test_checker_fails(void **state)
{
	(void)state;
	const struct mem_life lv[2] = {{0, 0, 5, 1 << 20}, {1, 5, 9, 1 << 20}};
	const uint64_t off[2] = {0, 1 << 19};
	assert_true(lives_overlap(&lv[0], &lv[1]));
	assert_int_equal(violations(lv, 2, off, 3 << 19), 1);
	const uint64_t apart[2] = {0, 1 << 20};
	assert_int_equal(violations(lv, 2, apart, 2 << 20), 0);
	const uint64_t beyond[2] = {0, 1 << 20};
	assert_int_equal(violations(lv, 2, beyond, 3 << 19), 1);
}

/* A plan compiled from a model: its stored activations and workspaces, pairwise. */
static int check_model(const char *text, int reuse, int fuse)
{
	struct arkgen_options o = arkgen_options_default();
	o.sms = 8;
	o.reuse = reuse;
	o.fuse = fuse;
	struct arkgen_result r;
	if (harness_compile(text, &o, &r))
		fail_msg("compile failed: %s", harness_diag());
	const struct tiling *s = &r.tiling;
	const struct graph *g = s->g;
	int nt = g->n_tensors, shared = 0;
	struct mem_life *lv = calloc((size_t)nt, sizeof *lv);
	for (int t = 0; t < nt; t++)
		lv[t] = (struct mem_life){t, -1, -1, 0};
	for (int i = 0; i < s->n_vcta; i++)
		for (int k = 0; k <= s->v[i].n_reads; k++) {
			int t = k < s->v[i].n_reads ? s->v[i].reads[k].tensor : s->v[i].write.tensor;
			if (lv[t].birth < 0)
				lv[t].birth = i;
			lv[t].death = i;
		}
	for (int a = 0; a < nt; a++)
		for (int b = a + 1; b < nt; b++) {
			const struct tensor *A = &g->tensors[a], *B = &g->tensors[b];
			if (A->gpu != B->gpu || s->offset[a] == UINT64_MAX || s->offset[b] == UINT64_MAX || lv[a].birth < 0 ||
			    lv[b].birth < 0)
				continue;
			uint64_t ea = s->offset[a] + tensor_bytes(A), eb = s->offset[b] + tensor_bytes(B);
			int meet = s->offset[a] < eb && s->offset[b] < ea;
			shared += meet;
			if (meet && lives_overlap(&lv[a], &lv[b]))
				fail_msg("'%s' (vCTAs %d..%d) and '%s' (vCTAs %d..%d) share bytes", A->name, lv[a].birth,
					 lv[a].death, B->name, lv[b].birth, lv[b].death);
		}
	for (int gpu = 0; gpu < g->gpus; gpu++)
		assert_true(s->arena[gpu] <= s->arena_noreuse[gpu]);
	free(lv);
	arkgen_result_free(&r);
	return shared;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char *text = calloc(1, 1 << 20);
	size_t n = fread(text, 1, (1 << 20) - 1, f);
	fclose(f);
	assert_true(n > 0);
	return text;
}

static void test_models(void **state)
{
	(void)state;
	static const char *const files[] = {"models/mlp8.cfg", "models/branchy.cfg", "models/chain64.cfg",
					    "models/mlp.cfg", "tests/models/chains.cfg", "tests/models/splitk_chain.cfg"};
	int shared = 0;
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		char *text = slurp(files[i]);
		for (int k = 0; k < 4; k++)
			shared += check_model(text, k & 1, k >> 1);
		free(text);
	}
	/* a chain of activations of 256 KiB, each dead two ops later: space reused over and over */
	char text[8192];
	int n = snprintf(text, sizeof text,
			 "version = 1; name = \"c\"; dtype = \"fp32\";\n"
			 "tensors = ( { name = \"t0\"; shape = [64, 1024]; role = \"input\"; }, { name = \"t24\"; role = \"output\"; } );\n"
			 "ops = (");
	for (int i = 0; i < 24; i++)
		n += snprintf(text + n, sizeof text - (size_t)n, "%s { name = \"o%d\"; op = \"%s\"; in = [\"t%d\"%s]; out = \"t%d\"; }",
			      i ? "," : "", i, i % 3 == 2 ? "add" : "relu", i, i % 3 == 2 ? ", \"t0\"" : "", i + 1);
	snprintf(text + n, sizeof text - (size_t)n, " );\n");
	int c = check_model(text, 1, 0);
	printf("# %d pairs of tensors sharing bytes checked (%d in the chain of 24)\n", shared + c, c);
	assert_true(c > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random),
		cmocka_unit_test(test_checker_fails),
		cmocka_unit_test(test_models),
	};
	cmocka_set_message_output(CM_OUTPUT_TAP);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
