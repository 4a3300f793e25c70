/* test_calib.c: calibration tables (codegen/calib.c): the parser on good and bad tables with located
 * errors, the model's interpolation (exact at points, monotone, sane beyond the grid; odd rows below
 * the least K measured), the built-in
 * tables, and the costs a table gives a compiled model's vCTAs and its predicted latency. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "codegen/calib.h"
#include "codegen/diag.h"
#include "harness.h"

#define HEAD "gpu Test GPU 9000\nsms 4\nthreads 256\ndate 2026-01-01\nsource measured\n"

static struct calib_table *parse(const char *text)
{
	harness_capture_begin();
	struct calib_table *t = calib_parse("t.txt", text);
	harness_capture_end();
	return t;
}

/* text is rejected with exactly one error, which contains want. */
static void rejects(const char *text, const char *want)
{
	struct calib_table *t = parse(text);
	if (t || !strstr(harness_diag(), want))
		fail_msg("expected an error containing '%s', got %s:\n%s", want, t ? "a table" : "", harness_diag());
}

static void near(double got, double want, double rel)
{
	if (!(fabs(got - want) <= rel * fabs(want)))
		fail_msg("got %g, want %g (relative %g)", got, want, rel);
}

static void test_parse_good(void **state)
{
	struct calib_table *t = parse("# a comment\n" HEAD "proto task_us 0.25  # trailing comment\nproto hop_us 0.5\n"
				      "\n   \t\nmatmul bf16 kn 1 128 4096 20 60\ncopy fp32 - 1 4096 1 1.5 2.5\n"
				      "elementwise fp16 bcast 8 1024 2 3 4\n");
	assert_non_null(t);
	assert_string_equal(t->gpu, "Test GPU 9000");
	assert_int_equal(t->sms, 4);
	assert_int_equal(t->threads, 256);
	assert_string_equal(t->date, "2026-01-01");
	assert_int_equal(t->measured, 1);
	assert_int_equal(t->n_points, 3);
	assert_true(t->proto[CALIB_P_task_us] == 0.25 && t->proto[CALIB_P_hop_us] == 0.5);
	assert_true(isnan(t->proto[CALIB_P_doorbell_us]));
	assert_int_equal(t->pt[0].line, 11);
	assert_int_equal(t->pt[2].q.tmpl, ARK_T_ELEMENTWISE);
	assert_int_equal(t->pt[2].q.layout, CALIB_L_BCAST);
	struct part_gpu g;
	part_gpu_default(&g, 132);
	double door = g.doorbell_us;
	calib_gpu(t, &g);
	assert_true(g.task_us == 0.25 && g.hop_us == 0.5 && g.doorbell_us == door);
	calib_free(t);
	t = parse(HEAD "source analytic\n" "copy fp16 - 1 8 1 1 1\n");
	assert_null(t); /* source twice */
	t = parse("gpu G\nsms 4\nthreads 256\ndate -\nsource analytic\ncopy fp16 - 1 8 1 1 1\n");
	assert_non_null(t);
	assert_int_equal(t->measured, 0);
	calib_free(t);
}

static void test_parse_bad(void **state)
{
	rejects(HEAD "matmul bf16 kn 1 128 4096 20\n", "t.txt:6: error: a point has 8 fields");
	rejects(HEAD "matmul bf17 kn 1 128 4096 20 60\n", "t.txt:6: error: unknown dtype 'bf17'");
	rejects(HEAD "matmul bf16 same 1 128 4096 20 60\n", "t.txt:6: error: layout 'same' of matmul");
	rejects(HEAD "copy fp16 kn 1 128 1 20 60\n", "t.txt:6: error: layout 'kn' of copy");
	rejects(HEAD "matmul bf16 kn 0 128 4096 20 60\n", "t.txt:6: error: m must be a number > 0, not '0'");
	rejects(HEAD "matmul bf16 kn 1 128 4096 -2 60\n", "t.txt:6: error: alone_us must be a number > 0");
	rejects(HEAD "matmul bf16 kn 1 128 4096 2 nan\n", "t.txt:6: error: busy_us must be a number > 0");
	rejects(HEAD "matmul bf16 kn 1 12x8 4096 2 3\n", "t.txt:6: error: n must be a number > 0, not '12x8'");
	rejects(HEAD "mutmul bf16 kn 1 128 4096 2 3\n", "t.txt:6: error: unknown item 'mutmul'");
	rejects(HEAD "sum fp32 - 1 128 1 2 3\n", "t.txt:6: error: unknown item 'sum'");
	rejects(HEAD "proto task_us\n", "t.txt:6: error: 'proto' takes a name and a value");
	rejects(HEAD "proto warp_us 1\n", "t.txt:6: error: unknown protocol cost 'warp_us'");
	rejects(HEAD "proto dram_gbps 0\n", "t.txt:6: error: dram_gbps must be a number > 0");
	rejects(HEAD "proto hop_us 1\nproto hop_us 2\n", "t.txt:7: error: protocol cost 'hop_us' given twice");
	rejects(HEAD "sms 8\n", "t.txt:6: error: 'sms' given twice (first at line 2)");
	rejects("gpu G\nsms 4.5\nthreads 256\ndate -\nsource measured\ncopy fp16 - 1 8 1 1 1\n",
		"t.txt:2: error: sms must be a whole number");
	rejects("gpu G\nsms 4\nthreads 256\ndate -\nsource guessed\ncopy fp16 - 1 8 1 1 1\n",
		"t.txt:5: error: source is 'measured' or 'analytic', not 'guessed'");
	rejects("gpu G\nthreads 256\ndate -\nsource measured\ncopy fp16 - 1 8 1 1 1\n",
		"t.txt: error: the table has no 'sms' line");
	rejects(HEAD, "t.txt: error: the table has no measured point");
	rejects("gpu\n", "t.txt:1: error: 'gpu' takes the GPU's name");
	/* every error is reported, each at its line */
	struct calib_table *t = parse(HEAD "copy fp16 - 1 8\ncopy fp99 - 1 8 1 1 1\n");
	assert_null(t);
	assert_non_null(strstr(harness_diag(), "t.txt:6: error:"));
	assert_non_null(strstr(harness_diag(), "t.txt:7: error:"));
	/* a file */
	harness_capture_begin();
	assert_null(calib_load("tests/no-such-table.txt"));
	harness_capture_end();
	assert_non_null(strstr(harness_diag(), "tests/no-such-table.txt: error: cannot open calibration table"));
}

/* Times along k of one matmul key, measured on a log-log line t = 2 + k / 100 with a bend. */
static const char *const grid_table = HEAD
	"matmul bf16 kn 1 128 256 4 8\n"
	"matmul bf16 kn 1 128 1024 12 30\n"
	"matmul bf16 kn 1 128 4096 40 120\n"
	"matmul bf16 kn 4 128 256 5 9\n"
	"matmul bf16 kn 4 128 1024 14 33\n"
	"matmul bf16 kn 4 128 4096 44 125\n"
	"matmul bf16 kn 1 32 256 2 3\n"
	"matmul bf16 kn 1 32 1024 4 9\n"
	"matmul bf16 kn 1 32 4096 11 31\n"
	"matmul bf16 kn 64 128 4096 200 210\n";

/* q's times from k0 to k1 in steps of a factor f: never less than the step before, in either column,
 * and busy never below alone. */
static void monotone_in_k(const struct calib_table *t, struct calib_query q, double k0, double k1, double f)
{
	double us[2], prev[2] = {0, 0};
	for (double k = k0; k <= k1; k *= f) {
		q.k = k;
		assert_int_equal(calib_lookup(t, &q, us), 0);
		assert_true(us[CALIB_ALONE] >= prev[0] * (1 - 1e-12) && us[CALIB_BUSY] >= prev[1] * (1 - 1e-12));
		assert_true(us[CALIB_BUSY] >= us[CALIB_ALONE]);
		prev[0] = us[0], prev[1] = us[1];
	}
}

static void test_interpolation(void **state)
{
	struct calib_table *t = parse(grid_table);
	assert_non_null(t);
	double us[2];
	/* exact at every measured point */
	for (int i = 0; i < t->n_points; i++) {
		assert_int_equal(calib_lookup(t, &t->pt[i].q, us), 0);
		near(us[CALIB_ALONE], t->pt[i].us[CALIB_ALONE], 1e-9);
		near(us[CALIB_BUSY], t->pt[i].us[CALIB_BUSY], 1e-9);
	}
	/* between points: on the log-log segment, monotone in k, n and m */
	struct calib_query q = {ARK_T_MATMUL, ARK_BF16, CALIB_L_KN, 1, 128, 2048};
	assert_int_equal(calib_lookup(t, &q, us), 0);
	near(us[CALIB_ALONE], sqrt(12.0 * 40.0), 1e-9);
	monotone_in_k(t, q, 64, 65536, 1.3);
	double prev[2];
	/* beyond the largest k the fitted trend goes on growing: 16x the work costs clearly more */
	q.k = 4096;
	calib_lookup(t, &q, prev);
	q.k = 65536;
	calib_lookup(t, &q, us);
	assert_true(us[CALIB_ALONE] > 4 * prev[CALIB_ALONE] && us[CALIB_ALONE] < 32 * prev[CALIB_ALONE]);
	q.k = 1000;
	prev[0] = 0;
	for (double n = 8; n <= 512; n *= 1.5) {
		q.n = n;
		assert_int_equal(calib_lookup(t, &q, us), 0);
		assert_true(us[CALIB_ALONE] >= prev[0] * (1 - 1e-12));
		prev[0] = us[0];
	}
	q.n = 128;
	prev[0] = 0;
	for (double m = 1; m <= 16; m++) {
		q.m = m;
		assert_int_equal(calib_lookup(t, &q, us), 0);
		assert_true(us[CALIB_ALONE] >= prev[0] * (1 - 1e-12));
		prev[0] = us[0];
	}
	/* rows > 16 are the other regime: its one point, scaled by the analytic model's shape */
	q.m = 64, q.k = 4096;
	assert_int_equal(calib_lookup(t, &q, us), 0);
	near(us[CALIB_ALONE], 200, 1e-9);
	q.m = 128;
	assert_int_equal(calib_lookup(t, &q, us), 0);
	assert_true(us[CALIB_ALONE] >= 200);
	/* what the table lacks */
	q = (struct calib_query){ARK_T_MATMUL, ARK_FP16, CALIB_L_KN, 1, 128, 1024};
	assert_int_equal(calib_lookup(t, &q, us), -1);
	q = (struct calib_query){ARK_T_MATMUL, ARK_BF16, CALIB_L_NK, 1, 128, 1024};
	assert_int_equal(calib_lookup(t, &q, us), -1);
	q = (struct calib_query){ARK_T_COPY, ARK_BF16, CALIB_L_NONE, 1, 128, 1};
	assert_int_equal(calib_lookup(t, &q, us), -1);
	calib_free(t);
}

/* A matmul of odd rows below the least K measured: the aligned tile's time plus the odd rows' extra
 * at that K, in proportion to K; continuous and monotone across that K; a layout without its aligned
 * key keeps the fitted trend. */
static const char odd_table[] = HEAD "matmul bf16 kn 64 16 256 5.85 8.04\n"
				     "matmul bf16 kn 64 16 1024 9.65 11.29\n"
				     "matmul bf16 kn 64 16 4096 27.68 29.95\n"
				     "matmul bf16 kn-odd 64 16 255 20.54 22.08\n"
				     "matmul bf16 kn-odd 64 16 1023 40.32 42.91\n"
				     "matmul bf16 kn-odd 64 16 4095 103.6 107.5\n"
				     "matmul bf16 nk-odd 64 16 255 20.54 22.08\n"
				     "matmul bf16 nk-odd 64 16 1023 40.32 42.91\n"
				     "matmul bf16 nk-odd 64 16 4095 103.6 107.5\n";

static void test_odd_small_k(void **state)
{
	struct calib_table *t = parse(odd_table);
	assert_non_null(t);
	double us[2], a[2], a0[2];
	struct calib_query q = {ARK_T_MATMUL, ARK_BF16, CALIB_L_KN_ODD, 64, 16, 45};
	struct calib_query qa = q;
	qa.layout = CALIB_L_KN;
	assert_int_equal(calib_lookup(t, &qa, a), 0);
	qa.k = 255;
	assert_int_equal(calib_lookup(t, &qa, a0), 0);
	assert_int_equal(calib_lookup(t, &q, us), 0);
	near(us[CALIB_ALONE], a[CALIB_ALONE] + (20.54 - a0[CALIB_ALONE]) * 45 / 255, 1e-9);
	assert_true(us[CALIB_ALONE] < 0.5 * 20.54);
	monotone_in_k(t, q, 4, 8192, 1.25);
	q.k = 255 * (1 - 1e-9);
	assert_int_equal(calib_lookup(t, &q, us), 0);
	near(us[CALIB_ALONE], 20.54, 1e-6);
	/* nk-odd has no nk key here: the fitted trend, most of the time at K 255 kept */
	q = (struct calib_query){ARK_T_MATMUL, ARK_BF16, CALIB_L_NK_ODD, 64, 16, 45};
	assert_int_equal(calib_lookup(t, &q, us), 0);
	assert_true(us[CALIB_ALONE] > 0.5 * 20.54 && us[CALIB_ALONE] <= 20.54);
	calib_free(t);
}

/* The built-in tables parse; the analytic one is monotone along every axis of every key. */
static void check_builtin(const struct calib_table *t);

static void test_builtin(void **state)
{
	const char *const *names = calib_builtin_names();
	assert_non_null(names[0]);
	for (const char *const *n = names; *n; n++) {
		const struct calib_table *t = calib_builtin(*n);
		assert_non_null(t);
		assert_string_equal(t->name, *n);
		assert_true(t->n_points > 100 && t->sms > 0);
	}
	assert_null(calib_builtin("no-such-gpu"));
	for (const char *const *n = names; *n; n++)
		check_builtin(calib_builtin(*n));
}

/* Every template, dtype and axis of a built-in table gives finite, positive times, busy >= alone,
 * growing with the tile: exactly (never smaller) for a table made from the analytic model; within
 * the noise of a measurement (never below half the previous point) for a measured one, whose points
 * it passes through. */
static void check_builtin(const struct calib_table *t)
{
	assert_non_null(t);
	const double drop = t->measured ? 0.5 : 1 - 1e-9;
	static const int tmpls[] = {ARK_T_MATMUL, ARK_T_MATMUL_PARTIAL, ARK_T_ELEMENTWISE, ARK_T_SOFTMAX, ARK_T_COPY};
	for (size_t i = 0; i < sizeof tmpls / sizeof tmpls[0]; i++)
		for (int dt = 0; dt < ARK_FLOAT_DTYPES; dt++)
			for (int axis = 0; axis < 3; axis++) {
				int tm = tmpls[i];
				int mm = tm <= ARK_T_MATMUL_PARTIAL;
				struct calib_query q = {tm, dt, tm == ARK_T_ELEMENTWISE ? CALIB_L_SAME : mm ? CALIB_L_NK : CALIB_L_NONE,
							mm ? 8 : 4, 100, mm ? 1000 : 1};
				double prev = 0, us[2];
				for (double x = 1; x <= 1e5; x *= 1.7) {
					if (axis == 0 && (x > 16 || tm == ARK_T_COPY))
						break;
					if (axis == 2 && tm > ARK_T_MATMUL_PARTIAL)
						break;
					*(axis == 0 ? &q.m : axis == 1 ? &q.n : &q.k) = x;
					assert_int_equal(calib_lookup(t, &q, us), 0);
					assert_true(isfinite(us[0]) && us[0] > 0 && us[1] >= us[0]);
					assert_true(us[0] >= prev * drop);
					prev = us[0];
				}
			}
}

/* relu of [1, 1024] fp16: one ELEMENTWISE vCTA (same shape, 1 input); the table's point gives its
 * time, the protocol lines the dispatch and the doorbell: 5 + 1 + 10 us. */
static const char *const relu_model = "version = 1; name = \"r\"; dtype = \"fp16\";\n"
				      "tensors = ({ name = \"x\"; shape = [1, 1024]; role = \"input\"; },\n"
				      "           { name = \"y\"; role = \"output\"; });\n"
				      "ops = ({ name = \"r\"; op = \"relu\"; in = [\"x\"]; out = \"y\"; });\n";

static void test_compile(void **state)
{
	struct calib_table *t = parse(HEAD "proto task_us 1\nproto doorbell_us 5\n"
					   "elementwise fp16 same 1 1024 1 10 12\n");
	assert_non_null(t);
	struct arkgen_options opt = arkgen_options_default();
	struct arkgen_result r;
	opt.calib = t;
	assert_int_equal(harness_compile(relu_model, &opt, &r), 0);
	assert_int_equal(r.tiling.n_vcta, 1);
	assert_int_equal(r.tiling.n_calibrated, 1);
	near(r.schedule[0].sim.latency_us, 5 + 1 + 10, 1e-9);
	arkgen_result_free(&r);
	/* without the table: the analytic model's own figures */
	opt.calib = NULL;
	assert_int_equal(harness_compile(relu_model, &opt, &r), 0);
	assert_int_equal(r.tiling.n_calibrated, 0);
	assert_true(r.schedule[0].sim.latency_us < 5);
	arkgen_result_free(&r);
	/* a table without the tile: the analytic cost, the table's protocol */
	struct calib_table *t2 = parse(HEAD "proto task_us 1\nproto doorbell_us 5\ncopy fp16 - 1 1024 1 10 12\n");
	opt.calib = t2;
	assert_int_equal(harness_compile(relu_model, &opt, &r), 0);
	assert_int_equal(r.tiling.n_calibrated, 0);
	assert_true(r.tiling.calib_missing == 1u << ARK_T_ELEMENTWISE);
	assert_true(r.schedule[0].sim.latency_us > 6 && r.schedule[0].sim.latency_us < 7);
	arkgen_result_free(&r);
	calib_free(t);
	calib_free(t2);
}

/* 8 SMs streaming a calibrated tile at once: alone 10 us, busy 40 us on the table's 4 SMs; the
 * simulator's contention makes the layer take busy * 8 / 4. */
static void test_contention(void **state)
{
	struct calib_table *t = parse(HEAD "proto task_us 0\nproto doorbell_us 0\nproto hop_us 0\n"
					   "copy fp16 - 1 4096 1 10 40\n");
	assert_non_null(t);
	const char *model = "version = 1; name = \"c\"; dtype = \"fp16\";\n"
			    "tensors = ({ name = \"x\"; shape = [32768]; role = \"input\"; },\n"
			    "           { name = \"y\"; role = \"output\"; });\n"
			    "ops = ({ name = \"c\"; op = \"copy\"; in = [\"x\"]; out = \"y\"; });\n";
	struct arkgen_options opt = arkgen_options_default();
	struct arkgen_result r;
	opt.calib = t;
	opt.sms = 8;
	assert_int_equal(harness_compile(model, &opt, &r), 0);
	assert_int_equal(r.tiling.n_vcta, 8);
	assert_int_equal(r.tiling.n_calibrated, 8);
	near(r.schedule[0].sim.latency_us, 40 * 8 / 4, 1e-6);
	arkgen_result_free(&r);
	/* one SM alone: its floor */
	opt.sms = 1;
	assert_int_equal(harness_compile(model, &opt, &r), 0);
	assert_int_equal(r.tiling.n_vcta, 1);
	/* 32768 elements in one tile: 8 times the point's, by the scaled analytic trend */
	assert_true(r.schedule[0].sim.latency_us >= 10 * 8 * 0.99);
	arkgen_result_free(&r);
	calib_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_good), cmocka_unit_test(test_parse_bad),
		cmocka_unit_test(test_interpolation), cmocka_unit_test(test_odd_small_k), cmocka_unit_test(test_builtin),
		cmocka_unit_test(test_compile), cmocka_unit_test(test_contention),
	};
	cmocka_set_message_output(CM_OUTPUT_TAP);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
