/* test_ref.c: errors, fp16/bf16 conversions, random fill, comparison, and the CPU reference of every
 * op of libarkrt against values computed by hand. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ark.h"

/* ---- helpers ---------------------------------------------------------------------------------- */

static struct ark_tensor tens(const char *name, int dtype, int ndim, const int64_t *shape)
{
	struct ark_tensor t = {.name = name, .dtype = (uint8_t)dtype, .ndim = (uint8_t)ndim};
	for (int i = 0; i < ndim; i++)
		t.shape[i] = shape[i];
	t.bytes = ark_tensor_bytes(&t);
	return t;
}
#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})
#define NDIM(...) ((int)(sizeof(int64_t[]){__VA_ARGS__} / sizeof(int64_t)))
#define T32(name, ...) tens(name, ARK_FP32, NDIM(__VA_ARGS__), SHAPE(__VA_ARGS__))

static void assert_near(const float *got, const double *want, int n, double tol)
{
	for (int i = 0; i < n; i++) {
		double err = fabs(got[i] - want[i]);
		if (!(err <= tol * (1 + fabs(want[i]))))
			fail_msg("element %d: got %.9g, want %.9g", i, (double)got[i], want[i]);
	}
}


static float bitsf(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* ---- errors ----------------------------------------------------------------------------------- */

static void test_error(void **state)
{
	assert_int_equal(ark_error("bad %s %d", "thing", 42), ARK_ERR);
	assert_string_equal(ark_last_error(), "bad thing 42");
	/* the message may quote the previous one */
	ark_error("outer: %s", ark_last_error());
	assert_string_equal(ark_last_error(), "outer: bad thing 42");
}

/* ---- conversions ------------------------------------------------------------------------------ */

static void test_half_known(void **state)
{
	assert_int_equal(ark_float_to_half(1.0f), 0x3c00);
	assert_int_equal(ark_float_to_half(-2.0f), 0xc000);
	assert_int_equal(ark_float_to_half(0.5f), 0x3800);
	assert_int_equal(ark_float_to_half(65504.0f), 0x7bff);
	assert_int_equal(ark_float_to_half(65519.0f), 0x7bff);
	assert_int_equal(ark_float_to_half(65520.0f), 0x7c00);
	assert_int_equal(ark_float_to_half(-1e6f), 0xfc00);
	assert_int_equal(ark_float_to_half(INFINITY), 0x7c00);
	assert_int_equal(ark_float_to_half(-0.0f), 0x8000);
	/* subnormals: units of 2^-24 */
	assert_int_equal(ark_float_to_half(ldexpf(1, -24)), 0x0001);
	assert_int_equal(ark_float_to_half(ldexpf(1, -25)), 0x0000);           /* tie to even: 0 */
	assert_int_equal(ark_float_to_half(ldexpf(1.5f, -25)), 0x0001);
	assert_int_equal(ark_float_to_half(ldexpf(3, -25)), 0x0002);           /* 1.5 units: tie to 2 */
	assert_int_equal(ark_float_to_half(ldexpf(5, -25)), 0x0002);           /* 2.5 units: tie to 2 */
	assert_int_equal(ark_float_to_half(ldexpf(1023, -24)), 0x03ff);
	assert_int_equal(ark_float_to_half(ldexpf(1, -14) - ldexpf(1, -26)), 0x0400); /* rounds up to normal */
	assert_int_equal(ark_float_to_half(ldexpf(1, -14)), 0x0400);
	assert_int_equal(ark_float_to_half(1e-30f), 0x0000);
	/* normal ties: 1 + 2^-11 is halfway between 0x3c00 and 0x3c01 */
	assert_int_equal(ark_float_to_half(1.0f + ldexpf(1, -11)), 0x3c00);
	assert_int_equal(ark_float_to_half(1.0f + ldexpf(3, -11)), 0x3c02);
	assert_int_equal(ark_float_to_half(1.0f + ldexpf(1, -11) + ldexpf(1, -20)), 0x3c01);
	assert_int_equal(ark_float_to_half(0.1f), 0x2e66);

	assert_true(ark_half_to_float(0x3c00) == 1.0f);
	assert_true(ark_half_to_float(0xc000) == -2.0f);
	assert_true(ark_half_to_float(0x7bff) == 65504.0f);
	assert_true(ark_half_to_float(0x0001) == ldexpf(1, -24));
	assert_true(ark_half_to_float(0x03ff) == ldexpf(1023, -24));
	assert_true(ark_half_to_float(0x8000) == 0.0f && signbit(ark_half_to_float(0x8000)));
	assert_true(isinf(ark_half_to_float(0x7c00)) && ark_half_to_float(0x7c00) > 0);
	assert_true(isinf(ark_half_to_float(0xfc00)) && ark_half_to_float(0xfc00) < 0);
	assert_true(isnan(ark_half_to_float(0x7e00)));
	assert_true(isnan(ark_half_to_float(0x7c01)));
	/* NaN stays NaN both ways, including a NaN whose payload sits only in the low bits */
	assert_true(isnan(ark_half_to_float(ark_float_to_half(NAN))));
	assert_true(isnan(ark_half_to_float(ark_float_to_half(bitsf(0x7f800001u)))));
	assert_true(isnan(ark_half_to_float(ark_float_to_half(-NAN))));
}

/* Every non-NaN half survives half -> float -> half unchanged. */
static void test_half_roundtrip_all(void **state)
{
	int checked = 0;
	for (uint32_t h = 0; h < 0x10000; h++) {
		if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
			continue;
		if (ark_float_to_half(ark_half_to_float((uint16_t)h)) != h)
			fail_msg("half 0x%04x does not round-trip", h);
		checked++;
	}
	assert_int_equal(checked, 65536 - 2 * 1023);
}

#ifdef __FLT16_MAX__
/* Against the compiler's own float -> _Float16 conversion (round to nearest even) on many floats. */
static void test_half_vs_compiler(void **state)
{
	uint64_t s = 0x1234567u;
	for (int i = 0; i < 200000; i++) {
		s = s * 6364136223846793005ull + 1442695040888963407ull;
		uint32_t u = (uint32_t)(s >> 32);
		/* mostly values near the fp16 range, some anywhere */
		if (i & 1)
			u = (u & 0x80000000u) | (0x33000000u + (u % (0x47800000u - 0x33000000u)));
		float f = bitsf(u);
		if (isnan(f))
			continue;
		_Float16 c = (_Float16)f;
		uint16_t cb;
		memcpy(&cb, &c, 2);
		if (ark_float_to_half(f) != cb)
			fail_msg("float 0x%08x: got 0x%04x, compiler 0x%04x", u, ark_float_to_half(f), cb);
	}
}
#endif

static void test_bf16_known(void **state)
{
	assert_int_equal(ark_float_to_bf16(1.0f), 0x3f80);
	assert_int_equal(ark_float_to_bf16(-2.0f), 0xc000);
	assert_int_equal(ark_float_to_bf16(bitsf(0x3f808000u)), 0x3f80); /* tie, even stays */
	assert_int_equal(ark_float_to_bf16(bitsf(0x3f818000u)), 0x3f82); /* tie, odd rounds up */
	assert_int_equal(ark_float_to_bf16(bitsf(0x3f808001u)), 0x3f81);
	assert_int_equal(ark_float_to_bf16(bitsf(0x3f807fffu)), 0x3f80);
	assert_int_equal(ark_float_to_bf16(3.4028235e38f), 0x7f80);      /* FLT_MAX overflows to Inf */
	assert_int_equal(ark_float_to_bf16(-INFINITY), 0xff80);
	assert_int_equal(ark_float_to_bf16(bitsf(0x00000001u)), 0x0000); /* smallest float subnormal */
	assert_int_equal(ark_float_to_bf16(bitsf(0x00018000u)), 0x0002); /* subnormal tie to even */
	assert_true(isnan(ark_bf16_to_float(ark_float_to_bf16(NAN))));
	assert_true(isnan(ark_bf16_to_float(ark_float_to_bf16(bitsf(0x7f800001u)))));
	assert_true(ark_bf16_to_float(0x3f80) == 1.0f);
	assert_true(ark_bf16_to_float(0x4049) == 3.140625f);
	assert_true(isinf(ark_bf16_to_float(0x7f80)));
	for (uint32_t h = 0; h < 0x10000; h++)
		if (!((h & 0x7f80) == 0x7f80 && (h & 0x7f)))
			assert_int_equal(ark_float_to_bf16(ark_bf16_to_float((uint16_t)h)), h);
}

static void test_get_set(void **state)
{
	uint16_t h[3];
	float f[2];
	ark_set(h, ARK_FP16, 1, 0.1f);
	assert_int_equal(h[1], 0x2e66);
	assert_true(ark_get(h, ARK_FP16, 1) == 0.0999755859375f);
	ark_set(h, ARK_BF16, 2, 3.14159f);
	assert_int_equal(h[2], 0x4049);
	assert_true(ark_get(h, ARK_BF16, 2) == 3.140625f);
	ark_set(f, ARK_FP32, 1, 0.1f);
	assert_true(ark_get(f, ARK_FP32, 1) == 0.1f);
	assert_string_equal(ark_dtype_name(ARK_FP16), "fp16");
	assert_string_equal(ark_dtype_name(ARK_BF16), "bf16");
	assert_string_equal(ark_dtype_name(ARK_FP32), "fp32");
	assert_string_equal(ark_dtype_name(ARK_DTYPE__COUNT), "unknown");
}

/* ---- random fill, compare --------------------------------------------------------------------- */

static void test_fill_random(void **state)
{
	enum { N = 4096 };
	static float a[N], b[N], c[N];
	static uint16_t h[N];
	double sum = 0, sumsq = 0;
	int distinct = 0;

	ark_fill_random(a, ARK_FP32, N, 42, 0.5f);
	ark_fill_random(b, ARK_FP32, N, 42, 0.5f);
	ark_fill_random(c, ARK_FP32, N, 43, 0.5f);
	assert_memory_equal(a, b, sizeof a);
	for (int i = 0; i < N; i++) {
		assert_true(a[i] >= -0.5f && a[i] < 0.5f);
		sum += a[i];
		sumsq += (double)a[i] * a[i];
		distinct += a[i] != c[i];
	}
	assert_true(distinct > N - 10);
	assert_true(fabs(sum / N) < 0.03);                  /* mean 0 */
	assert_true(fabs(sumsq / N - 0.25 / 3) < 0.01);     /* variance of U(-0.5, 0.5) = 1/12 */

	/* fp16: stored rounded, still in range, same stream as fp32 */
	ark_fill_random(h, ARK_FP16, N, 42, 0.5f);
	for (int i = 0; i < N; i++) {
		float v = ark_get(h, ARK_FP16, i);
		assert_true(v >= -0.5f && v < 0.5f);
		assert_int_equal(h[i], ark_float_to_half(a[i]) == 0x3800 ? 0x37ff : ark_float_to_half(a[i]));
	}
}

static void test_compare(void **state)
{
	float want[4] = {1, 2, 3, 4}, got[4] = {1, 2, 3, 5}, nan_got[4] = {1, 2, NAN, INFINITY};
	double rel;
	int64_t bad;

	ark_compare(got, want, ARK_FP32, 4, &rel, &bad);
	assert_true(fabs(rel - 1 / sqrt(30.0)) < 1e-12);
	assert_int_equal(bad, 0);
	ark_compare(want, want, ARK_FP32, 4, &rel, &bad);
	assert_true(rel == 0);
	ark_compare(nan_got, want, ARK_FP32, 4, &rel, &bad);
	assert_int_equal(bad, 2);
	assert_true(rel == 0); /* the finite part matches */

	uint16_t hw[2] = {ark_float_to_half(1.0f), ark_float_to_half(-2.0f)};
	uint16_t hg[2] = {ark_float_to_half(1.0f), ark_float_to_half(-1.0f)};
	ark_compare(hg, hw, ARK_FP16, 2, &rel, &bad);
	assert_true(fabs(rel - 1 / sqrt(5.0)) < 1e-12);
	assert_int_equal(bad, 0);
}

/* ---- ops -------------------------------------------------------------------------------------- */

/* matmul a [2, 3] . b [3, 2] + bias [2] */
static const float mm_a[6] = {1.5f, -2, 0.25f, 3, 0.5f, -1};
static const float mm_b[6] = {2, -1, 0.5f, 4, -3, 1.5f};
static const float mm_bt[6] = {2, 0.5f, -3, -1, 4, 1.5f}; /* b transposed, [2, 3] */
static const float mm_bias[2] = {0.1f, -0.2f};

static void test_matmul(void **state)
{
	struct ark_tensor t[4] = {T32("a", 2, 3), T32("b", 3, 2), T32("bias", 2), T32("c", 2, 2)};
	float c[4];
	void *bufs[4] = {(void *)mm_a, (void *)mm_b, (void *)mm_bias, c};
	struct ark_op op = {.name = "fc", .kind = ARK_OP_MATMUL, .n_in = 3, .n_out = 1, .in = {0, 1, 2}, .out = {3}};

	assert_int_equal(ark_ref_op(&op, t, bufs), ARK_OK);
	assert_near(c, (const double[]){1.35, -9.325, 9.35, -2.7}, 4, 1e-6);

	op.n_in = 2; /* no bias */
	assert_int_equal(ark_ref_op(&op, t, bufs), ARK_OK);
	assert_near(c, (const double[]){1.25, -9.125, 9.25, -2.5}, 4, 1e-6);

	/* transpose_b: b given as [N, K] */
	t[1] = T32("bt", 2, 3);
	bufs[1] = (void *)mm_bt;
	op.transpose_b = 1;
	op.n_in = 3;
	memset(c, 0, sizeof c);
	assert_int_equal(ark_ref_op(&op, t, bufs), ARK_OK);
	assert_near(c, (const double[]){1.35, -9.325, 9.35, -2.7}, 4, 1e-6);

	/* K mismatch is an error naming the op */
	op.transpose_b = 0;
	assert_int_equal(ark_ref_op(&op, t, bufs), ARK_ERR);
	assert_non_null(strstr(ark_last_error(), "'fc'"));
	assert_non_null(strstr(ark_last_error(), "do not agree on K"));
}

/* a [2, 2, 3]: the batch dimension is folded into M */
static void test_matmul_batch(void **state)
{
	static const float a[12] = {1.5f, -2, 0.25f, 3, 0.5f, -1, 0, 1, 2, -1, -1, 1};
	struct ark_tensor t[3] = {T32("a", 2, 2, 3), T32("b", 3, 2), T32("c", 2, 2, 2)};
	float c[8];
	void *bufs[3] = {(void *)a, (void *)mm_b, c};
	struct ark_op op = {.name = "bmm", .kind = ARK_OP_MATMUL, .n_in = 2, .n_out = 1, .in = {0, 1}, .out = {2}};

	assert_int_equal(ark_ref_op(&op, t, bufs), ARK_OK);
	assert_near(c, (const double[]){1.25, -9.125, 9.25, -2.5, -5.5, 7, -5.5, -1.5}, 8, 1e-6);
}

/* a [3, 64] . b [64, 70000] and b^T [70000, 64]: b is larger than the block of rows the reference
 * converts at a time (both layouts take two blocks); checked against a plain triple loop */
static void test_matmul_large(void **state)
{
	enum { M = 3, K = 64, N = 70000 };
	float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * K * N);
	float *c = malloc(sizeof(float) * M * N);
	double *want = malloc(sizeof(double) * M * N);
	assert_true(a && b && c && want);
	ark_fill_random(a, ARK_FP32, M * K, 1, 1.0f);
	ark_fill_random(b, ARK_FP32, (int64_t)K * N, 2, 1.0f);
	for (int tr = 0; tr < 2; tr++) {
		struct ark_tensor t[3] = {T32("a", M, K), tr ? T32("b", N, K) : T32("b", K, N), T32("c", M, N)};
		struct ark_op op = {.name = "big", .kind = ARK_OP_MATMUL, .n_in = 2, .n_out = 1, .in = {0, 1},
				    .out = {2}, .transpose_b = (uint8_t)tr};
		for (int m = 0; m < M; m++)
			for (int n = 0; n < N; n++) {
				double d = 0;
				for (int k = 0; k < K; k++)
					d += (double)a[m * K + k] * (tr ? b[(size_t)n * K + k] : b[(size_t)k * N + n]);
				want[(size_t)m * N + n] = d;
			}
		assert_int_equal(ark_ref_op(&op, t, (void *[]){a, b, c}), ARK_OK);
		assert_near(c, want, M * N, 1e-6);
	}
	free(a);
	free(b);
	free(c);
	free(want);
}

/* fp16 and bf16 outputs are the double result rounded once */
static void test_matmul_lowp_out(void **state)
{
	uint16_t a16[6], b16[6], bias16[2], c16[4];
	for (int i = 0; i < 6; i++) {
		a16[i] = ark_float_to_half(mm_a[i]);
		b16[i] = ark_float_to_half(mm_b[i]);
	}
	for (int i = 0; i < 2; i++)
		bias16[i] = ark_float_to_half(mm_bias[i]);
	struct ark_tensor t[4] = {tens("a", ARK_FP16, 2, SHAPE(2, 3)), tens("b", ARK_FP16, 2, SHAPE(3, 2)),
				  tens("bias", ARK_FP16, 1, SHAPE(2)), tens("c", ARK_FP16, 2, SHAPE(2, 2))};
	void *bufs[4] = {a16, b16, bias16, c16};
	struct ark_op op = {.name = "fc", .kind = ARK_OP_MATMUL, .n_in = 3, .n_out = 1, .in = {0, 1, 2}, .out = {3}};
	/* the bias in fp16 is 0.0999755859375 and -0.199951171875 */
	const double want[4] = {1.25 + 0.0999755859375, -9.125 - 0.199951171875, 9.25 + 0.0999755859375,
				-2.5 - 0.199951171875};

	assert_int_equal(ark_ref_op(&op, t, bufs), ARK_OK);
	for (int i = 0; i < 4; i++)
		assert_int_equal(c16[i], ark_float_to_half((float)want[i]));
	assert_int_equal(c16[0], 0x3d66); /* 1.3499755859375 -> 1.349609375 */

	t[3].dtype = ARK_BF16;
	assert_int_equal(ark_ref_op(&op, t, bufs), ARK_OK);
	for (int i = 0; i < 4; i++)
		assert_int_equal(c16[i], ark_float_to_bf16((float)want[i]));
	assert_int_equal(c16[1], 0xc115); /* -9.3249511... -> -9.3125 */
}

static void run1(int kind, struct ark_tensor *t, void **bufs, int n_in, float factor, float eps)
{
	struct ark_op op = {.name = "op", .kind = (uint16_t)kind, .n_in = (uint8_t)n_in, .n_out = 1,
			    .factor = factor, .eps = eps};
	for (int i = 0; i < n_in; i++)
		op.in[i] = i;
	op.out[0] = n_in;
	if (ark_ref_op(&op, t, bufs))
		fail_msg("%s", ark_last_error());
}

static void test_add_mul_broadcast(void **state)
{
	static const float a[6] = {1.25f, -2, 3.5f, 0.75f, 4, -6}, b3[3] = {0.5f, -1, 2};
	static const float col[2] = {2, -3}, row[3] = {1, 0.5f, -4}, colm[2] = {2, -0.5f};
	float c[6];

	struct ark_tensor t1[3] = {T32("a", 2, 3), T32("b", 3), T32("c", 2, 3)};
	run1(ARK_OP_ADD, t1, (void *[]){(void *)a, (void *)b3, c}, 2, 0, 0);
	assert_near(c, (const double[]){1.75, -3, 5.5, 1.25, 3, -4}, 6, 0);

	struct ark_tensor t2[3] = {T32("a", 2, 1), T32("b", 1, 3), T32("c", 2, 3)};
	run1(ARK_OP_ADD, t2, (void *[]){(void *)col, (void *)row, c}, 2, 0, 0);
	assert_near(c, (const double[]){3, 2.5, -2, -2, -2.5, -7}, 6, 0);

	struct ark_tensor t3[3] = {T32("a", 2, 3), T32("b", 2, 1), T32("c", 2, 3)};
	run1(ARK_OP_MUL, t3, (void *[]){(void *)a, (void *)colm, c}, 2, 0, 0);
	assert_near(c, (const double[]){2.5, -4, 7, -0.375, -2, 3}, 6, 0);

	/* b broadcast from the left operand's side: [3] * [2, 3] */
	struct ark_tensor t4[3] = {T32("b", 3), T32("a", 2, 3), T32("c", 2, 3)};
	run1(ARK_OP_MUL, t4, (void *[]){(void *)b3, (void *)a, c}, 2, 0, 0);
	assert_near(c, (const double[]){0.625, 2, 7, 0.375, -4, -12}, 6, 0);

	/* 4-d: a [2, 1, 1, 2] + b [3, 1] -> [2, 1, 3, 2]: out[i][0][j][k] = a[i][k] + b[j] */
	static const float a4[4] = {1.5f, -0.25f, 7, 3}, b31[3] = {10, -20, 0.5f};
	float c4[12];
	double want[12];
	struct ark_tensor t5[3] = {T32("a", 2, 1, 1, 2), T32("b", 3, 1), T32("c", 2, 1, 3, 2)};
	run1(ARK_OP_ADD, t5, (void *[]){(void *)a4, (void *)b31, c4}, 2, 0, 0);
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 3; j++)
			for (int k = 0; k < 2; k++)
				want[(i * 3 + j) * 2 + k] = a4[i * 2 + k] + b31[j];
	assert_near(c4, want, 12, 0);
	assert_true(c4[3] == -20.25f);

	/* shapes that do not broadcast */
	struct ark_tensor t6[3] = {T32("a", 2, 3), T32("b", 2), T32("c", 2, 3)};
	struct ark_op op = {.name = "bad_add", .kind = ARK_OP_ADD, .n_in = 2, .n_out = 1, .in = {0, 1}, .out = {2}};
	assert_int_equal(ark_ref_op(&op, t6, (void *[]){(void *)a, (void *)b3, c}), ARK_ERR);
	assert_non_null(strstr(ark_last_error(), "'b' [2] does not broadcast"));
}

static void test_unary(void **state)
{
	static const float x[5] = {-2, -0.5f, 0.3f, 1.7f, 1};
	float y[5];
	struct ark_tensor t[2] = {T32("x", 5), T32("y", 5)};
	void *bufs[2] = {(void *)x, y};

	run1(ARK_OP_SCALE, t, bufs, 1, 0.5f, 0);
	assert_near(y, (const double[]){-1, -0.25, 0.15, 0.85, 0.5}, 5, 1e-7);
	run1(ARK_OP_RELU, t, bufs, 1, 0, 0);
	assert_near(y, (const double[]){0, 0, 0.3, 1.7, 1}, 5, 1e-7);
	run1(ARK_OP_GELU, t, bufs, 1, 0, 0);
	/* approximate = "none" (the default): 0.5 x (1 + erf(x / sqrt(2))), evaluated separately */
	assert_near(y, (const double[]){-0.04550026389635842, -0.15426876936299344, 0.1853734353867131,
					1.6242387664929818, 0.8413447460685429}, 5, 1e-6);
	run1(ARK_OP_GELU_TANH, t, bufs, 1, 0, 0);
	/* approximate = "tanh": 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), evaluated separately */
	assert_near(y, (const double[]){-0.04540230591222494, -0.15428599017485606, 0.18537092354275922,
					1.624105895551156, 0.8411919906082768}, 5, 1e-6);
	for (int i = 0; i < 5; i++) {
		double v = x[i], g = 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
		assert_true(fabs(y[i] - g) < 1e-6);
	}
	/* the two forms differ by more than the tolerance at -2 (1e-4) */
	assert_true(fabs(-0.04550026389635842 - -0.04540230591222494) > 5e-5);
	run1(ARK_OP_TANH, t, bufs, 1, 0, 0);
	assert_near(y, (const double[]){-0.9640275800758169, -0.46211715726000974, 0.29131262336087355,
					0.9354090765640338, 0.7615941559557649}, 5, 1e-6);
	static const float xs[4] = {1, -2, 0.5f, -0.25f};
	float ys[4];
	struct ark_tensor ts[2] = {T32("x", 2, 2), T32("y", 2, 2)};
	run1(ARK_OP_SILU, ts, (void *[]){(void *)xs, ys}, 1, 0, 0);
	assert_near(ys, (const double[]){0.7310585786300049, -0.2384058440442351, 0.3112296656009273,
					 -0.10945587477855048}, 4, 1e-6);
	/* 1 / (1 + e^-x), evaluated separately */
	run1(ARK_OP_SIGMOID, ts, (void *[]){(void *)xs, ys}, 1, 0, 0);
	assert_near(ys, (const double[]){0.7310585786300049, 0.11920292202211755, 0.6224593312018546,
					 0.43782349911420193}, 4, 1e-6);
}

static void test_swiglu(void **state)
{
	static const float gate[2] = {1, -2}, up[2] = {2, 0.5f};
	float y[2];
	struct ark_tensor t[3] = {T32("gate", 2), T32("up", 2), T32("y", 2)};
	run1(ARK_OP_SWIGLU, t, (void *[]){(void *)gate, (void *)up, y}, 2, 0, 0);
	assert_near(y, (const double[]){2 * 0.7310585786300049, 0.5 * -0.2384058440442351}, 2, 1e-6);

	/* the two halves must have the same size: no broadcasting */
	static const float up1[1] = {2};
	struct ark_tensor tb[3] = {T32("gate", 2), T32("up", 1), T32("y", 2)};
	struct ark_op op = {.name = "sw", .kind = ARK_OP_SWIGLU, .n_in = 2, .n_out = 1, .in = {0, 1}, .out = {2}};
	assert_int_equal(ark_ref_op(&op, tb, (void *[]){(void *)gate, (void *)up1, y}), ARK_ERR);
	assert_non_null(strstr(ark_last_error(), "'gate' [2] and 'up' [1] differ in size"));
	/* a kind outside the catalog */
	op.kind = ARK_OP__COUNT;
	assert_int_equal(ark_ref_op(&op, t, (void *[]){(void *)gate, (void *)up, y}), ARK_ERR);
	assert_non_null(strstr(ark_last_error(), "unknown op kind"));
}

static void test_softmax(void **state)
{
	static const float x[6] = {1, 2, 3, -1, 0, 1000};
	float y[6];
	struct ark_tensor t[2] = {T32("x", 2, 3), T32("y", 2, 3)};
	run1(ARK_OP_SOFTMAX, t, (void *[]){(void *)x, y}, 1, 0, 0);
	assert_near(y, (const double[]){0.09003057317038046, 0.24472847105479767, 0.6652409557748219, 0, 0, 1}, 6,
		    1e-6);
	for (int r = 0; r < 2; r++)
		assert_true(fabs(y[3 * r] + y[3 * r + 1] + y[3 * r + 2] - 1.0) < 1e-6);
	assert_false(isnan(y[5])); /* large inputs do not overflow */
}

static void test_layernorm(void **state)
{
	static const float x[8] = {1, 2, 3, 4, -0.5f, 0.5f, 1.5f, 2.5f};
	static const float gamma[4] = {1, 0.5f, 2, -1}, beta[4] = {0, 1, -1, 0.5f};
	float y[8];
	struct ark_tensor t[4] = {T32("x", 2, 4), T32("gamma", 4), T32("beta", 4), T32("y", 2, 4)};
	run1(ARK_OP_LAYERNORM, t, (void *[]){(void *)x, (void *)gamma, (void *)beta, y}, 3, 0, 1e-5f);
	/* row 0: mean 2.5, biased variance 1.25; row 1 is row 0 shifted by -1.5: same result */
	const double want[4] = {-1.3416354199689269, 0.7763940966718454, -0.105576386687382, -0.8416354199689269};
	assert_near(y, want, 4, 1e-6);
	assert_near(y + 4, want, 4, 1e-6);

	/* gamma of the wrong length */
	struct ark_tensor tb[4] = {T32("x", 2, 4), T32("gamma", 3), T32("beta", 4), T32("y", 2, 4)};
	struct ark_op op = {.name = "ln", .kind = ARK_OP_LAYERNORM, .n_in = 3, .n_out = 1, .in = {0, 1, 2}, .out = {3},
			    .eps = 1e-5f};
	assert_int_equal(ark_ref_op(&op, tb, (void *[]){(void *)x, (void *)gamma, (void *)beta, y}), ARK_ERR);
	assert_non_null(strstr(ark_last_error(), "'gamma' [3], expected [4]"));
}

static void test_rmsnorm(void **state)
{
	static const float x[3] = {1, -2, 3}, gamma[3] = {0.5f, 1, 2};
	float y[3];
	struct ark_tensor t[3] = {T32("x", 1, 3), T32("gamma", 3), T32("y", 1, 3)};
	run1(ARK_OP_RMSNORM, t, (void *[]){(void *)x, (void *)gamma, y}, 2, 0, 1e-6f);
	assert_near(y, (const double[]){0.23145500014438916, -0.9258200005775566, 2.77746000173267}, 3, 1e-6);
}

static void test_l2_normalize(void **state)
{
	static const float x[6] = {3, 4, 0, 0, 0, 0}, xs[3] = {1e-3f, 0, -2e-3f};
	float y[6];
	struct ark_tensor t[2] = {T32("x", 2, 3), T32("y", 2, 3)};
	run1(ARK_OP_L2_NORMALIZE, t, (void *[]){(void *)x, y}, 1, 0, 1e-12f);
	assert_near(y, (const double[]){0.6, 0.8, 0, 0, 0, 0}, 6, 1e-7); /* a zero row stays zero */
	/* a norm (0.00223...) below eps: divided by eps */
	struct ark_tensor ts[2] = {T32("x", 3), T32("y", 3)};
	run1(ARK_OP_L2_NORMALIZE, ts, (void *[]){(void *)xs, y}, 1, 0, 0.1f);
	assert_near(y, (const double[]){0.01, 0, -0.02}, 3, 1e-6);
}

static void run_mean(struct ark_tensor *t, void **bufs, int n_in, int axis)
{
	struct ark_op op = {.name = "mean", .kind = ARK_OP_REDUCE_MEAN, .n_in = (uint8_t)n_in, .n_out = 1,
			    .axis = (int8_t)axis, .in = {0, 1}, .out = {n_in}};
	if (ark_ref_op(&op, t, bufs))
		fail_msg("%s", ark_last_error());
}

static void test_reduce_mean(void **state)
{
	static const float x[6] = {1, 2, 3, 5, 7, -1};
	float y[6];
	struct ark_tensor t0[2] = {T32("x", 2, 3), T32("y", 3)};
	run_mean(t0, (void *[]){(void *)x, y}, 1, 0);
	assert_near(y, (const double[]){3, 4.5, 1}, 3, 1e-7);
	struct ark_tensor t1[2] = {T32("x", 2, 3), T32("y", 2)};
	run_mean(t1, (void *[]){(void *)x, y}, 1, 1);
	assert_near(y, (const double[]){2, 11.0 / 3}, 2, 1e-7);
	struct ark_tensor t2[2] = {T32("x", 6), T32("y", 1)}; /* 1-D: one mean, shape [1] */
	run_mean(t2, (void *[]){(void *)x, y}, 1, 0);
	assert_near(y, (const double[]){17.0 / 6}, 1, 1e-7);

	/* mean pooling: h [B = 2, S = 3, D = 2], a fp16 mask [2, 3] (its dtype need not be h's) */
	static const float h[12] = {1, 2, 3, 4, 100, 200, 5, 6, 7, 8, 9, 10};
	uint16_t m[6];
	static const float mv[2][6] = {{1, 1, 0, 0, 0, 0}, {1, 0, 1, 0, 1, 1}};
	struct ark_tensor tm[3] = {T32("h", 2, 3, 2), tens("m", ARK_FP16, 2, SHAPE(2, 3)), T32("y", 2, 2)};
	for (int i = 0; i < 6; i++)
		m[i] = ark_float_to_half(mv[0][i]);
	y[2] = y[3] = -1;
	run_mean(tm, (void *[]){(void *)h, m, y}, 2, 1);
	/* row 1's mask is all zeros: zeros, not NaN */
	assert_near(y, (const double[]){2, 3, 0, 0}, 4, 1e-7);
	for (int i = 0; i < 6; i++)
		m[i] = ark_float_to_half(mv[1][i]);
	run_mean(tm, (void *[]){(void *)h, m, y}, 2, 1);
	assert_near(y, (const double[]){50.5, 101, 8, 9}, 4, 1e-7);

	/* x [1, 2, 2, 2] = 0..7, axis 1, mask [1, 2, 2]: the mask weights (s, q), the same for every d */
	float x4[8], m4[4] = {1, 0, 1, 1};
	for (int i = 0; i < 8; i++)
		x4[i] = (float)i;
	struct ark_tensor t4[3] = {T32("x", 1, 2, 2, 2), T32("m", 1, 2, 2), T32("y", 1, 2, 2)};
	run_mean(t4, (void *[]){x4, m4, y}, 2, 1);
	assert_near(y, (const double[]){2, 3, 6, 7}, 4, 1e-7);
	/* the same without the mask */
	run_mean(t4, (void *[]){x4, y}, 1, 1);
	assert_near(y, (const double[]){2, 3, 4, 5}, 4, 1e-7);

	/* a mask over the last axis is refused */
	struct ark_op op = {.name = "mean", .kind = ARK_OP_REDUCE_MEAN, .n_in = 2, .n_out = 1, .axis = 3, .in = {0, 1},
			    .out = {2}};
	assert_int_equal(ark_ref_op(&op, t4, (void *[]){x4, m4, y}), ARK_ERR);
	assert_non_null(strstr(ark_last_error(), "without its last dimension"));
}

static void test_copy(void **state)
{
	static const float x[3] = {0.1f, -7.25f, 70000};
	uint16_t y[3];
	struct ark_tensor t[2] = {T32("x", 3), tens("y", ARK_FP16, 1, SHAPE(3))};
	run1(ARK_OP_COPY, t, (void *[]){(void *)x, y}, 1, 0, 0);
	assert_int_equal(y[0], 0x2e66);
	assert_int_equal(y[1], 0xc740);
	assert_int_equal(y[2], 0x7c00);
	/* same dtype: bit-exact, NaN payload included */
	uint16_t h[2] = {0x7d01, 0x1234}, g[2];
	struct ark_tensor th[2] = {tens("x", ARK_FP16, 1, SHAPE(2)), tens("y", ARK_FP16, 1, SHAPE(2))};
	run1(ARK_OP_COPY, th, (void *[]){h, g}, 1, 0, 0);
	assert_memory_equal(h, g, sizeof h);
}

static void test_all_reduce(void **state)
{
	static const float a[4] = {1, -2, 0.5f, 3}, b[4] = {0.25f, 4, -1, 2}, c[4] = {-3, 1.5f, 2, -0.125f};
	float o[3][4];
	struct ark_tensor t[6] = {T32("a", 2, 2), T32("b", 2, 2), T32("c", 2, 2),
				  T32("s0", 2, 2), T32("s1", 2, 2), T32("s2", 2, 2)};
	void *bufs[6] = {(void *)a, (void *)b, (void *)c, o[0], o[1], o[2]};
	struct ark_op op = {.name = "ar", .kind = ARK_OP_ALL_REDUCE, .n_in = 3, .n_out = 3, .in = {0, 1, 2},
			    .out = {3, 4, 5}};
	assert_int_equal(ark_ref_op(&op, t, bufs), ARK_OK);
	for (int i = 0; i < 3; i++)
		assert_near(o[i], (const double[]){-1.75, 3.5, 1.5, 4.875}, 4, 0);

	op.n_out = 2; /* one output per input */
	assert_int_equal(ark_ref_op(&op, t, bufs), ARK_ERR);
	assert_non_null(strstr(ark_last_error(), "'ar'"));
}

static void test_all_gather(void **state)
{
	static const float a[4] = {1, 2, 3, 4}, b[4] = {-5, -6, -7, -8};
	float g0[8], g1[8];
	struct ark_tensor t[4] = {T32("a", 2, 2), T32("b", 2, 2), T32("g0", 4, 2), T32("g1", 4, 2)};
	void *bufs[4] = {(void *)a, (void *)b, g0, g1};
	struct ark_op op = {.name = "ag", .kind = ARK_OP_ALL_GATHER, .n_in = 2, .n_out = 2, .in = {0, 1}, .out = {2, 3},
			    .axis = 0};
	assert_int_equal(ark_ref_op(&op, t, bufs), ARK_OK);
	assert_near(g0, (const double[]){1, 2, 3, 4, -5, -6, -7, -8}, 8, 0);
	assert_memory_equal(g0, g1, sizeof g0);

	/* last axis */
	t[2] = T32("g0", 2, 4);
	t[3] = T32("g1", 2, 4);
	op.axis = 1;
	assert_int_equal(ark_ref_op(&op, t, bufs), ARK_OK);
	assert_near(g0, (const double[]){1, 2, -5, -6, 3, 4, -7, -8}, 8, 0);
	assert_memory_equal(g0, g1, sizeof g0);

	/* three inputs [2, 1, 2] along the middle axis -> [2, 3, 2] */
	static const float c[4] = {9, 10, 11, 12};
	float h[3][12];
	struct ark_tensor t3[6] = {T32("a", 2, 1, 2), T32("b", 2, 1, 2), T32("c", 2, 1, 2),
				   T32("h0", 2, 3, 2), T32("h1", 2, 3, 2), T32("h2", 2, 3, 2)};
	struct ark_op op3 = {.name = "ag3", .kind = ARK_OP_ALL_GATHER, .n_in = 3, .n_out = 3, .in = {0, 1, 2},
			     .out = {3, 4, 5}, .axis = 1};
	assert_int_equal(ark_ref_op(&op3, t3, (void *[]){(void *)a, (void *)b, (void *)c, h[0], h[1], h[2]}), ARK_OK);
	for (int i = 0; i < 3; i++)
		assert_near(h[i], (const double[]){1, 2, -5, -6, 9, 10, 3, 4, -7, -8, 11, 12}, 12, 0);

	/* wrong output shape */
	t[2] = T32("g0", 2, 2);
	assert_int_equal(ark_ref_op(&op, t, bufs), ARK_ERR);
	assert_non_null(strstr(ark_last_error(), "output 'g0' [2, 2]"));
}

/* ---- int32, embedding and the views ------------------------------------------------------------ */

static void test_int32(void **state)
{
	int32_t v[4];
	ark_set(v, ARK_INT32, 0, 7.0f);
	ark_set(v, ARK_INT32, 1, -2.6f);
	ark_set(v, ARK_INT32, 2, 3e10f);
	assert_int_equal(v[0], 7);
	assert_int_equal(v[1], -3);
	assert_int_equal(v[2], INT32_MAX);
	assert_true(ark_get(v, ARK_INT32, 1) == -3.0f);
	assert_int_equal(ark_dtype_size(ARK_INT32), 4);
	assert_string_equal(ark_dtype_name(ARK_INT32), "int32");
	/* random ids in [0, hi), masks 0/1, every value drawn */
	int32_t ids[4000];
	int seen[7] = {0};
	ark_fill_random_ints(ids, 4000, 5, 7);
	for (int i = 0; i < 4000; i++) {
		assert_true(ids[i] >= 0 && ids[i] < 7);
		seen[ids[i]] = 1;
	}
	for (int k = 0; k < 7; k++)
		assert_true(seen[k]);
	ark_fill_random(ids, ARK_INT32, 4000, 6, 1.0f);
	int ones = 0;
	for (int i = 0; i < 4000; i++) {
		assert_true(ids[i] == 0 || ids[i] == 1);
		ones += ids[i];
	}
	assert_true(ones > 1000 && ones < 3000);
}

/* ids [2, 2] into a table [3, 2]: rows picked by hand; an id outside the table is an error */
/* ---- block-quantized weights (q4_1, q8_0) ------------------------------------------------------- */

/* Hand-made blocks. q4_1: d = 0.5, m = -2, element j < 16 has q = j, element j + 16 has q = 15 - j.
 * q8_0: d = 0.25, element e has q = e - 16, except q = -128 at 0 and 127 at 31. */
static void q41_block(unsigned char *b)
{
	b[0] = 0x00, b[1] = 0x38; /* fp16 0.5 */
	b[2] = 0x00, b[3] = 0xc0; /* fp16 -2 */
	for (int j = 0; j < 16; j++)
		b[4 + j] = (unsigned char)(j | (15 - j) << 4);
}
static double q41_value(int e) { return 0.5 * (e < 16 ? e : 15 - (e - 16)) - 2; }
static void q80_block(unsigned char *b)
{
	b[0] = 0x00, b[1] = 0x34; /* fp16 0.25 */
	for (int e = 0; e < 32; e++)
		b[2 + e] = (unsigned char)(signed char)(e == 0 ? -128 : e == 31 ? 127 : e - 16);
}
static double q80_value(int e) { return 0.25 * (e == 0 ? -128 : e == 31 ? 127 : e - 16); }

static void test_quant_blocks(void **state)
{
	assert_int_equal(ark_qblock_bytes(ARK_Q4_1), 20);
	assert_int_equal(ark_qblock_bytes(ARK_Q8_0), 34);
	assert_int_equal(ark_row_bytes(ARK_Q4_1, 4096), 2560);
	assert_int_equal(ark_row_bytes(ARK_Q8_0, 96), 102);
	assert_int_equal(ark_row_bytes(ARK_BF16, 96), 192);
	assert_string_equal(ark_dtype_name(ARK_Q4_1), "q4_1");
	assert_string_equal(ark_dtype_name(ARK_Q8_0), "q8_0");
	struct ark_tensor t = tens("w", ARK_Q4_1, 2, SHAPE(3, 64));
	assert_int_equal(ark_tensor_bytes(&t), 3 * 2 * 20);
	/* two blocks a row: the second block's bytes follow the first's */
	unsigned char b[2 * 34];
	float f[64];
	double want[64];
	q41_block(b), q41_block(b + 20);
	b[20 + 1] = 0x3c; /* second block: d = 1 */
	assert_int_equal(ark_dequant_row(b, ARK_Q4_1, 64, f), ARK_OK);
	for (int e = 0; e < 64; e++)
		want[e] = e < 32 ? q41_value(e) : 2 * (q41_value(e - 32) + 2) - 2;
	assert_near(f, want, 64, 0);
	q80_block(b), q80_block(b + 34);
	b[34 + 1] = 0xbc; /* second block: d = -1 */
	assert_int_equal(ark_dequant_row(b, ARK_Q8_0, 64, f), ARK_OK);
	for (int e = 0; e < 64; e++)
		want[e] = e < 32 ? q80_value(e) : -4 * q80_value(e - 32);
	assert_near(f, want, 64, 0);
	assert_true(f[0] == -32.0f && f[31] == 31.75f);
	/* rows that are not whole blocks, and dtypes that have none */
	assert_int_equal(ark_dequant_row(b, ARK_Q8_0, 33, f), ARK_ERR);
	assert_int_equal(ark_dequant_row(b, ARK_FP16, 32, f), ARK_ERR);
	assert_int_equal(ark_quantize_row(f, ARK_INT32, 32, b), ARK_ERR);
	/* quantising values a block can hold gives them back exactly */
	for (int e = 0; e < 32; e++)
		f[e] = (float)q41_value(e);
	assert_int_equal(ark_quantize_row(f, ARK_Q4_1, 32, b), ARK_OK);
	unsigned char hand[34];
	q41_block(hand);
	assert_memory_equal(b, hand, 20);
	for (int e = 0; e < 32; e++)
		f[e] = (float)(e == 0 ? -127 * 0.25 : q80_value(e)); /* max |x| = 127 d */
	assert_int_equal(ark_quantize_row(f, ARK_Q8_0, 32, b), ARK_OK);
	q80_block(hand);
	hand[2] = (unsigned char)(signed char)-127;
	assert_memory_equal(b, hand, 34);
}

static void test_quant_random(void **state)
{
	enum { R = 7, K = 96 };
	for (int dt = ARK_Q4_1; dt <= ARK_Q8_0; dt++) {
		unsigned char b1[R * 3 * 34], b2[R * 3 * 34];
		float f[K];
		ark_fill_random_quant(b1, dt, R, K, 99, 0.5f);
		ark_fill_random_quant(b2, dt, R, K, 99, 0.5f);
		assert_memory_equal(b1, b2, (size_t)ark_row_bytes(dt, K) * R); /* seeded */
		ark_fill_random_quant(b2, dt, R, K, 100, 0.5f);
		assert_memory_not_equal(b1, b2, (size_t)ark_row_bytes(dt, K) * R);
		double lo = 1, hi = -1;
		for (int r = 0; r < R; r++) {
			assert_int_equal(ark_dequant_row(b1 + r * ark_row_bytes(dt, K), dt, K, f), ARK_OK);
			for (int e = 0; e < K; e++) {
				assert_true(isfinite(f[e]));
				assert_true(fabsf(f[e]) <= 0.51f); /* the values' range, d and m rounded to fp16 */
				lo = fmin(lo, f[e]), hi = fmax(hi, f[e]);
			}
		}
		assert_true(lo < -0.3 && hi > 0.3); /* spread over the range, not constant */
	}
}

static void test_quant_ops(void **state)
{
	/* out [2, 2] = a [2, 64] . b^T, b [2, 64] in blocks: row 0 the hand-made block twice, row 1 the
	 * same with d doubled in its second block */
	for (int dt = ARK_Q4_1; dt <= ARK_Q8_0; dt++) {
		const int bb = ark_qblock_bytes(dt);
		unsigned char b[2 * 2 * 34];
		for (int k = 0; k < 4; k++)
			dt == ARK_Q4_1 ? q41_block(b + k * bb) : q80_block(b + k * bb);
		b[3 * bb + 1] += 4; /* fp16 exponent + 1: d doubled */
		float a[2 * 64], out[4];
		double want[4] = {0};
		for (int i = 0; i < 128; i++)
			a[i] = (float)((i * 37) % 11 - 5) / 4;
		for (int m = 0; m < 2; m++)
			for (int n = 0; n < 2; n++)
				for (int k = 0; k < 64; k++) {
					double v = dt == ARK_Q4_1 ? q41_value(k % 32) : q80_value(k % 32);
					if (n == 1 && k >= 32)
						v = dt == ARK_Q4_1 ? 2 * (v + 2) - 2 : 2 * v;
					want[m * 2 + n] += a[m * 64 + k] * v;
				}
		struct ark_tensor t[3] = {T32("a", 2, 64), tens("b", dt, 2, SHAPE(2, 64)), T32("out", 2, 2)};
		struct ark_op op = {.name = "mm", .kind = ARK_OP_MATMUL, .n_in = 2, .n_out = 1, .in = {0, 1}, .out = {2},
				    .transpose_b = 1};
		assert_int_equal(ark_ref_op(&op, t, (void *[]){a, b, out}), ARK_OK);
		assert_near(out, want, 4, 1e-6);
		op.transpose_b = 0; /* [K, N] blocks are not a layout */
		assert_int_equal(ark_ref_op(&op, t, (void *[]){a, b, out}), ARK_ERR);
		assert_non_null(strstr(ark_last_error(), "needs transpose_b"));
		/* a quantized a, or a quantized input of another op */
		op.transpose_b = 1;
		struct ark_tensor t2[3] = {tens("a", dt, 2, SHAPE(2, 64)), tens("b", dt, 2, SHAPE(2, 64)), T32("out", 2, 2)};
		assert_int_equal(ark_ref_op(&op, t2, (void *[]){b, b, out}), ARK_ERR);
		struct ark_op add = {.name = "s", .kind = ARK_OP_ADD, .n_in = 2, .n_out = 1, .in = {0, 1}, .out = {2}};
		struct ark_tensor t3[3] = {tens("x", dt, 1, SHAPE(64)), T32("y", 64), T32("z", 64)};
		assert_int_equal(ark_ref_op(&add, t3, (void *[]){b, a, a + 64}), ARK_ERR);
		assert_non_null(strstr(ark_last_error(), "only b of a matmul, the table of an embedding and the input of a "
							 "dequantize"));

		/* embedding of the table [2, 64] into fp32 and bf16: rows dequantised, rounded once */
		int32_t ids[3] = {1, 0, 1};
		float e32[3 * 64];
		uint16_t e16[3 * 64];
		struct ark_tensor te[3] = {tens("ids", ARK_INT32, 1, SHAPE(3)), tens("tab", dt, 2, SHAPE(2, 64)),
					   T32("out", 3, 64)};
		struct ark_op emb = {.name = "emb", .kind = ARK_OP_EMBEDDING, .n_in = 2, .n_out = 1, .in = {0, 1}, .out = {2}};
		assert_int_equal(ark_ref_op(&emb, te, (void *[]){ids, b, e32}), ARK_OK);
		double row[2][64];
		for (int r = 0; r < 2; r++)
			for (int k = 0; k < 64; k++) {
				double v = dt == ARK_Q4_1 ? q41_value(k % 32) : q80_value(k % 32);
				row[r][k] = r == 1 && k >= 32 ? (dt == ARK_Q4_1 ? 2 * (v + 2) - 2 : 2 * v) : v;
			}
		assert_near(e32, row[1], 64, 0);
		assert_near(e32 + 64, row[0], 64, 0);
		assert_near(e32 + 128, row[1], 64, 0);
		te[2] = tens("out", ARK_BF16, 2, SHAPE(3, 64));
		assert_int_equal(ark_ref_op(&emb, te, (void *[]){ids, b, e16}), ARK_OK);
		for (int k = 0; k < 64; k++)
			assert_true(e16[64 + k] == ark_float_to_bf16((float)row[0][k]));
		ids[2] = 2;
		assert_int_equal(ark_ref_op(&emb, te, (void *[]){ids, b, e16}), ARK_ERR);

		/* dequantize of the same [2, 64] blocks: into fp32 the values exactly, into bf16 and fp16
		 * each rounded once; a float input, or an output of another shape, is an error */
		struct ark_tensor td[2] = {tens("w", dt, 2, SHAPE(2, 64)), T32("out", 2, 64)};
		struct ark_op dq = {.name = "dq", .kind = ARK_OP_DEQUANTIZE, .n_in = 1, .n_out = 1, .in = {0}, .out = {1}};
		memset(e32, 0xff, sizeof e32);
		assert_int_equal(ark_ref_op(&dq, td, (void *[]){b, e32}), ARK_OK);
		assert_near(e32, row[0], 64, 0);
		assert_near(e32 + 64, row[1], 64, 0);
		td[1] = tens("out", ARK_BF16, 2, SHAPE(2, 64));
		assert_int_equal(ark_ref_op(&dq, td, (void *[]){b, e16}), ARK_OK);
		for (int k = 0; k < 128; k++)
			assert_true(e16[k] == ark_float_to_bf16((float)row[k / 64][k % 64]));
		td[1] = tens("out", ARK_FP16, 2, SHAPE(2, 64));
		assert_int_equal(ark_ref_op(&dq, td, (void *[]){b, e16}), ARK_OK);
		for (int k = 0; k < 128; k++)
			assert_true(e16[k] == ark_float_to_half((float)row[k / 64][k % 64]));
		td[1] = tens("out", ARK_FP16, 2, SHAPE(64, 2));
		assert_int_equal(ark_ref_op(&dq, td, (void *[]){b, e16}), ARK_ERR);
		assert_non_null(strstr(ark_last_error(), "do not fit"));
		struct ark_tensor tf[2] = {T32("w", 2, 64), T32("out", 2, 64)};
		assert_int_equal(ark_ref_op(&dq, tf, (void *[]){a, e32}), ARK_ERR);
	}
}

static void test_embedding(void **state)
{
	int32_t ids[4] = {2, 0, 2, 1};
	static const float tab[6] = {1, 2, 3, 4, 5, 6};
	float out[8];
	struct ark_tensor t[3] = {tens("ids", ARK_INT32, 2, SHAPE(2, 2)), T32("tab", 3, 2), T32("out", 2, 2, 2)};
	struct ark_op op = {.name = "emb", .kind = ARK_OP_EMBEDDING, .n_in = 2, .n_out = 1, .in = {0, 1}, .out = {2}};
	assert_int_equal(ark_ref_op(&op, t, (void *[]){ids, (void *)tab, out}), ARK_OK);
	assert_near(out, (const double[]){5, 6, 1, 2, 5, 6, 3, 4}, 8, 0);
	/* fp16 table: the rows as they are */
	uint16_t h[6], ho[8];
	for (int i = 0; i < 6; i++)
		ark_set(h, ARK_FP16, i, tab[i] / 8);
	t[1] = tens("tab", ARK_FP16, 2, SHAPE(3, 2));
	t[2] = tens("out", ARK_FP16, 3, SHAPE(2, 2, 2));
	assert_int_equal(ark_ref_op(&op, t, (void *[]){ids, h, ho}), ARK_OK);
	assert_int_equal(ho[0], h[4]);
	assert_int_equal(ho[7], h[3]);
	ids[3] = 3;
	assert_int_equal(ark_ref_op(&op, t, (void *[]){ids, h, ho}), ARK_ERR);
	assert_non_null(strstr(ark_last_error(), "op 'emb' (embedding): element 3 of ids 'ids' is 3, outside the 3 rows of 'tab'"));
	ids[3] = -1;
	assert_int_equal(ark_ref_op(&op, t, (void *[]){ids, h, ho}), ARK_ERR);
	/* ids must be int32 */
	t[0] = T32("ids", 2, 2);
	assert_int_equal(ark_ref_op(&op, t, (void *[]){ids, h, ho}), ARK_ERR);
}

/* State: assign copies the value into the state (int32 too), advance adds `by` (int32, wrapping),
 * kv_append writes rows at the position and its output is the whole cache after the write. */
static void test_state(void **state)
{
	(void)state;
	float st[4] = {9, 9, 9, 9};
	static const float v[4] = {1, -2, 3.5f, 4};
	struct ark_tensor t[3] = {T32("s", 2, 2), T32("v", 2, 2), T32("o", 2, 2)};
	struct ark_op op = {.name = "a", .kind = ARK_OP_ASSIGN, .n_in = 2, .n_out = 0, .in = {0, 1}, .out = {0}};
	assert_int_equal(ark_ref_op(&op, t, (void *[]){st, (void *)v}), ARK_OK);
	assert_near(st, (const double[]){1, -2, 3.5, 4}, 4, 0);
	int32_t is[3] = {0, 7, -1}, iv[3] = {2147483647, -5, 12};
	t[0] = tens("s", ARK_INT32, 1, SHAPE(3));
	t[1] = tens("v", ARK_INT32, 1, SHAPE(3));
	assert_int_equal(ark_ref_op(&op, t, (void *[]){is, iv}), ARK_OK);
	assert_int_equal(is[0], 2147483647);
	assert_int_equal(is[1], -5);
	assert_int_equal(is[2], 12);
	t[1] = T32("v", 3); /* another dtype */
	assert_int_equal(ark_ref_op(&op, t, (void *[]){is, (void *)v}), ARK_ERR);
	op.n_out = 1; /* assign has no output */
	assert_int_equal(ark_ref_op(&op, t, (void *[]){is, iv, is}), ARK_ERR);

	/* advance: by 3, and by 1 across the int32 wrap */
	struct ark_op adv = {.name = "n", .kind = ARK_OP_ADVANCE, .n_in = 1, .n_out = 0, .in = {0}, .out = {0}, .start = 3};
	assert_int_equal(ark_ref_op(&adv, t, (void *[]){is}), ARK_OK);
	assert_int_equal(is[0], INT32_MIN + 2);
	assert_int_equal(is[1], -2);
	assert_int_equal(is[2], 15);
	t[0] = T32("s", 3); /* a float state */
	assert_int_equal(ark_ref_op(&adv, t, (void *[]){st}), ARK_ERR);

	/* kv_append: cache [5, 2] fp16, x [2, 2] at position 3 (rows 3 and 4, the last that fit) */
	uint16_t cache[10], x[4], out[10];
	int32_t pos = 3;
	for (int i = 0; i < 10; i++)
		ark_set(cache, ARK_FP16, i, (float)i);
	for (int i = 0; i < 4; i++)
		ark_set(x, ARK_FP16, i, -1.0f - (float)i);
	struct ark_tensor k[4] = {tens("c", ARK_FP16, 2, SHAPE(5, 2)), tens("x", ARK_FP16, 2, SHAPE(2, 2)),
				  tens("p", ARK_INT32, 1, SHAPE(1)), tens("c2", ARK_FP16, 2, SHAPE(5, 2))};
	struct ark_op kv = {.name = "k", .kind = ARK_OP_KV_APPEND, .n_in = 3, .n_out = 1, .in = {0, 1, 2}, .out = {3}};
	assert_int_equal(ark_ref_op(&kv, k, (void *[]){cache, x, &pos, out}), ARK_OK);
	static const float want[10] = {0, 1, 2, 3, 4, 5, -1, -2, -3, -4};
	for (int i = 0; i < 10; i++) {
		assert_true(ark_get(cache, ARK_FP16, i) == want[i]);
		assert_true(ark_get(out, ARK_FP16, i) == want[i]);
	}
	/* position 0; then 4 and -1: the rows would not fit */
	pos = 0;
	assert_int_equal(ark_ref_op(&kv, k, (void *[]){cache, x, &pos, out}), ARK_OK);
	assert_true(ark_get(cache, ARK_FP16, 0) == -1 && ark_get(cache, ARK_FP16, 3) == -4 && ark_get(cache, ARK_FP16, 4) == 4);
	pos = 4;
	assert_int_equal(ark_ref_op(&kv, k, (void *[]){cache, x, &pos, out}), ARK_ERR);
	assert_non_null(strstr(ark_last_error(), "op 'k' (kv_append): position 4: rows 4..5 do not fit in the 5 rows of cache 'c'"));
	pos = -1;
	assert_int_equal(ark_ref_op(&kv, k, (void *[]){cache, x, &pos, out}), ARK_ERR);
	/* x in another dtype */
	k[1] = T32("x", 2, 2);
	pos = 0;
	assert_int_equal(ark_ref_op(&kv, k, (void *[]){cache, x, &pos, out}), ARK_ERR);
}

static void test_views(void **state)
{
	static const float x[6] = {1, 2, 3, 4, 5, 6}; /* [2, 3] */
	float o[6];
	/* reshape [2, 3] -> [3, 2]: the same elements in order */
	struct ark_tensor t[2] = {T32("x", 2, 3), T32("o", 3, 2)};
	struct ark_op op = {.name = "r", .kind = ARK_OP_RESHAPE, .n_in = 1, .n_out = 1, .in = {0}, .out = {1}};
	assert_int_equal(ark_ref_op(&op, t, (void *[]){(void *)x, o}), ARK_OK);
	assert_near(o, (const double[]){1, 2, 3, 4, 5, 6}, 6, 0);
	/* slice axis 1, 1..3 -> [[2, 3], [5, 6]]; axis 0, 1..2 -> [[4, 5, 6]] */
	op.kind = ARK_OP_SLICE;
	op.axis = 1;
	op.start = 1;
	t[1] = T32("o", 2, 2);
	assert_int_equal(ark_ref_op(&op, t, (void *[]){(void *)x, o}), ARK_OK);
	assert_near(o, (const double[]){2, 3, 5, 6}, 4, 0);
	op.axis = 0;
	t[1] = T32("o", 1, 3);
	assert_int_equal(ark_ref_op(&op, t, (void *[]){(void *)x, o}), ARK_OK);
	assert_near(o, (const double[]){4, 5, 6}, 3, 0);
	op.start = 2; /* past the end */
	assert_int_equal(ark_ref_op(&op, t, (void *[]){(void *)x, o}), ARK_ERR);
	/* transpose [2, 3] -> [3, 2] */
	op.kind = ARK_OP_TRANSPOSE;
	op.dims[0] = 1;
	op.dims[1] = 0;
	t[1] = T32("o", 3, 2);
	assert_int_equal(ark_ref_op(&op, t, (void *[]){(void *)x, o}), ARK_OK);
	assert_near(o, (const double[]){1, 4, 2, 5, 3, 6}, 6, 0);
	/* transpose [2, 1, 3] axes 0 and 2 -> [3, 1, 2] */
	struct ark_tensor t3[2] = {T32("x", 2, 1, 3), T32("o", 3, 1, 2)};
	op.dims[0] = 0;
	op.dims[1] = 2;
	assert_int_equal(ark_ref_op(&op, t3, (void *[]){(void *)x, o}), ARK_OK);
	assert_near(o, (const double[]){1, 4, 2, 5, 3, 6}, 6, 0);
	t[1] = T32("o", 2, 3); /* not transposed */
	op.dims[1] = 1;
	assert_int_equal(ark_ref_op(&op, t, (void *[]){(void *)x, o}), ARK_ERR);
	/* concat [2, 1] and [2, 2] along axis 1 -> [[7, 1, 2], [8, 3, 4]] */
	static const float a[2] = {7, 8}, b[4] = {1, 2, 3, 4};
	struct ark_tensor tc[3] = {T32("a", 2, 1), T32("b", 2, 2), T32("o", 2, 3)};
	struct ark_op cat = {.name = "c", .kind = ARK_OP_CONCAT, .n_in = 2, .n_out = 1, .in = {0, 1}, .out = {2}, .axis = 1};
	assert_int_equal(ark_ref_op(&cat, tc, (void *[]){(void *)a, (void *)b, o}), ARK_OK);
	assert_near(o, (const double[]){7, 1, 2, 8, 3, 4}, 6, 0);
	/* along axis 0: [1, 2] and [2, 2] -> [3, 2] */
	struct ark_tensor t0[3] = {T32("a", 1, 2), T32("b", 2, 2), T32("o", 3, 2)};
	cat.axis = 0;
	assert_int_equal(ark_ref_op(&cat, t0, (void *[]){(void *)a, (void *)b, o}), ARK_OK);
	assert_near(o, (const double[]){7, 8, 1, 2, 3, 4}, 6, 0);
	t0[2] = T32("o", 4, 2); /* the inputs do not fill it */
	assert_int_equal(ark_ref_op(&cat, t0, (void *[]){(void *)a, (void *)b, o}), ARK_ERR);
}

/* x [2, 3] -> h = x . w [3, 2] -> y = relu(h) */
static void test_ref_run(void **state)
{
	struct ark_tensor t[4] = {T32("x", 2, 3), T32("w", 3, 2), T32("h", 2, 2), T32("y", 2, 2)};
	t[0].role = ARK_ROLE_INPUT;
	t[1].role = ARK_ROLE_WEIGHT;
	t[3].role = ARK_ROLE_OUTPUT;
	struct ark_op ops[2] = {
		{.name = "fc", .kind = ARK_OP_MATMUL, .n_in = 2, .n_out = 1, .in = {0, 1}, .out = {2}},
		{.name = "act", .kind = ARK_OP_RELU, .n_in = 1, .n_out = 1, .in = {2}, .out = {3}},
	};
	struct ark_model m = {.name = "tiny", .n_tensors = 4, .tensors = t, .n_ops = 2, .ops = ops};
	float h[4], y[4];
	void *bufs[4] = {(void *)mm_a, (void *)mm_b, h, y};

	assert_int_equal(ark_ref_run(&m, bufs), ARK_OK);
	assert_near(h, (const double[]){1.25, -9.125, 9.25, -2.5}, 4, 1e-6);
	assert_near(y, (const double[]){1.25, 0, 9.25, 0}, 4, 1e-6);

	ops[1].in[0] = 7; /* out of range */
	assert_int_equal(ark_ref_run(&m, bufs), ARK_ERR);
	assert_non_null(strstr(ark_last_error(), "'act'"));
	ops[1].in[0] = 2;
	bufs[2] = NULL;
	assert_int_equal(ark_ref_run(&m, bufs), ARK_ERR);
	assert_non_null(strstr(ark_last_error(), "no host buffer for tensor 'h'"));
}

/* attention by hand: softmax of q.k^T * scale over the keys that count, times v. */
static int att(struct ark_tensor *t, void **bufs, int n_in, int heads, int kv_heads, int causal, float scale)
{
	struct ark_op op = {.name = "att", .kind = ARK_OP_ATTENTION, .n_in = (uint8_t)n_in, .n_out = 1,
			    .heads = heads, .kv_heads = kv_heads, .causal = causal, .scale = scale};
	for (int i = 0; i < n_in; i++)
		op.in[i] = i;
	op.out[0] = n_in;
	return ark_ref_op(&op, t, bufs);
}

static void test_attention(void **state)
{
	/* one head of size 2, two queries, two keys: e / (e + 1) = 0.7310585786300049 */
	static const float q[4] = {1, 0, 0, 1}, k[4] = {1, 0, 0, 1}, v[4] = {1, 2, 3, 4};
	float o[4];
	struct ark_tensor t[4] = {T32("q", 1, 2, 2), T32("k", 1, 2, 2), T32("v", 1, 2, 2), T32("o", 1, 2, 2)};
	assert_int_equal(att(t, (void *[]){(void *)q, (void *)k, (void *)v, o}, 3, 1, 1, 0, 1), ARK_OK);
	assert_near(o, (const double[]){1.5378828427399902, 2.5378828427399902, 2.4621171572600098, 3.4621171572600098},
		    4, 1e-6);

	/* causal: query 0 sees key 0 only */
	assert_int_equal(att(t, (void *[]){(void *)q, (void *)k, (void *)v, o}, 3, 1, 1, 1, 1), ARK_OK);
	assert_near(o, (const double[]){1, 2, 2.4621171572600098, 3.4621171572600098}, 4, 1e-6);

	/* key padding mask [1, 2] (bf16 flags): key 1 may not be attended */
	uint16_t mask[2] = {0x3f80 /* 1.0 */, 0};
	struct ark_tensor tm[5] = {T32("q", 1, 2, 2), T32("k", 1, 2, 2), T32("v", 1, 2, 2),
				   tens("m", ARK_BF16, 2, SHAPE(1, 2)), T32("o", 1, 2, 2)};
	assert_int_equal(att(tm, (void *[]){(void *)q, (void *)k, (void *)v, mask, o}, 4, 1, 1, 0, 1), ARK_OK);
	assert_near(o, (const double[]){1, 2, 1, 2}, 4, 0);
	/* every key masked: zeros, not NaN */
	mask[0] = 0;
	for (int i = 0; i < 4; i++)
		o[i] = NAN;
	assert_int_equal(att(tm, (void *[]){(void *)q, (void *)k, (void *)v, mask, o}, 4, 1, 1, 0, 1), ARK_OK);
	assert_near(o, (const double[]){0, 0, 0, 0}, 4, 0);

	/* more queries than keys, causal: query i sees key j iff j <= i + Skv - Sq, so query 0 sees
	 * nothing (zeros) and query 1 key 0; 2-D tensors are batch 1 */
	static const float k1[2] = {1, 0}, v1[2] = {5, 6};
	struct ark_tensor tc[4] = {T32("q", 2, 2), T32("k", 1, 2), T32("v", 1, 2), T32("o", 2, 2)};
	assert_int_equal(att(tc, (void *[]){(void *)q, (void *)k1, (void *)v1, o}, 3, 1, 1, 1, 1), ARK_OK);
	assert_near(o, (const double[]){0, 0, 5, 6}, 4, 0);

	/* grouped-query: two query heads of size 1 share one kv head, scale 2: head 0 scores [0, 2],
	 * head 1 [0, -2]; e^2 / (1 + e^2) = 0.8807970779778823 */
	static const float qg[2] = {1, -1}, kg[2] = {0, 1}, vg[2] = {10, 20};
	float og[2];
	struct ark_tensor tg[4] = {T32("q", 1, 1, 2), T32("k", 1, 2, 1), T32("v", 1, 2, 1), T32("o", 1, 1, 2)};
	assert_int_equal(att(tg, (void *[]){(void *)qg, (void *)kg, (void *)vg, og}, 3, 2, 1, 0, 2), ARK_OK);
	assert_near(og, (const double[]){18.807970779778823, 11.192029220221176}, 2, 1e-6);

	/* heads that do not divide the rows */
	assert_int_equal(att(tg, (void *[]){(void *)qg, (void *)kg, (void *)vg, og}, 3, 3, 1, 0, 1), ARK_ERR);
	assert_non_null(strstr(ark_last_error(), "heads 3, kv_heads 1 do not fit"));
}

/* rope by hand: cos and sin of the angles computed apart (python's math module) */
static void test_rope(void **state)
{
	int32_t pos = 1;
	float o[8];
	/* half, head_dim = rotary_dim = 4, base 10000: pairs (0, 2) at angle p and (1, 3) at p / 100; two
	 * rows of one head, at positions 1 and 2 */
	static const float x[8] = {1, 2, 3, 4, -1, 0.5f, 2, 1};
	struct ark_tensor t[3] = {T32("x", 2, 4), tens("pos", ARK_INT32, 1, SHAPE(1)), T32("o", 2, 4)};
	struct ark_op op = {.name = "r", .kind = ARK_OP_ROPE, .n_in = 2, .n_out = 1, .in = {0, 1}, .out = {2},
			    .head_dim = 4, .rotary_dim = 4, .style = 0, .base = 10000};
	assert_int_equal(ark_ref_op(&op, t, (void *[]){(void *)x, &pos, o}), ARK_OK);
	assert_near(o, (const double[]){-1.9841106485555495, 1.959900667496664, 2.4623779024123156, 4.019799668334994,
					-1.402448017104221, 0.4799013366399558, -1.7415910999199666, 1.0097993400132443},
		    8, 1e-6);
	/* [B = 2, T = 1, 4]: every batch's row 0 is at pos */
	struct ark_tensor t3[3] = {T32("x", 2, 1, 4), tens("pos", ARK_INT32, 1, SHAPE(1)), T32("o", 2, 1, 4)};
	assert_int_equal(ark_ref_op(&op, t3, (void *[]){(void *)x, &pos, o}), ARK_OK);
	assert_near(o + 4, (const double[]){-2.2232442754839328, 0.489975166874166, 0.23913362692838303, 1.0049499170837486},
		    4, 1e-6);
	/* interleaved, rotary_dim 2 of head_dim 4, base 100, position 3: the pair (0, 1) turns by 3 rad,
	 * columns 2 and 3 are copied */
	pos = 3;
	op.head_dim = 4, op.rotary_dim = 2, op.style = 1, op.base = 100;
	assert_int_equal(ark_ref_op(&op, t, (void *[]){(void *)x, &pos, o}), ARK_OK);
	assert_near(o, (const double[]){-1.27223251272018, -1.8388649851410237, 3, 4}, 4, 1e-6);
	/* an odd rotary_dim, a position that is not int32 [1] */
	op.rotary_dim = 3;
	assert_int_equal(ark_ref_op(&op, t, (void *[]){(void *)x, &pos, o}), ARK_ERR);
	op.rotary_dim = 2;
	t[1] = tens("pos", ARK_INT32, 1, SHAPE(2));
	assert_int_equal(ark_ref_op(&op, t, (void *[]){(void *)x, &pos, o}), ARK_ERR);
	assert_non_null(strstr(ark_last_error(), "expected int32 [1]"));
}

/* decode attention by hand: 2 query heads of size 1 on one kv head, T = 2 rows, a cache of 3 keys
 * [0, 1, 5] with values [10, 20, 1000], scale 1; row t sees keys 0..pos+t. */
static void test_decode_attention(void **state)
{
	static const float q[4] = {1, -1, 1, 2}, k[3] = {0, 1, 5}, v[3] = {10, 20, 1000};
	int32_t pos = 0;
	float o[4];
	struct ark_tensor t[5] = {T32("q", 2, 2), T32("kc", 3, 1), T32("vc", 3, 1), tens("pos", ARK_INT32, 1, SHAPE(1)),
				  T32("o", 2, 2)};
	struct ark_op op = {.name = "d", .kind = ARK_OP_DECODE_ATTENTION, .n_in = 4, .n_out = 1, .in = {0, 1, 2, 3},
			    .out = {4}, .heads = 2, .kv_heads = 1, .scale = 1};
	void *bufs[5] = {(void *)q, (void *)k, (void *)v, &pos, o};
	/* pos 0: row 0 sees key 0 (10); row 1 keys 0 and 1: 10 + 10 e^s / (1 + e^s), s = q */
	assert_int_equal(ark_ref_op(&op, t, bufs), ARK_OK);
	assert_near(o, (const double[]){10, 10, 17.31058578630005, 18.807970779778827}, 4, 1e-5);
	/* pos 1: row 0 keys 0, 1; row 1 keys 0..2 (the value 1000 counts at last) */
	pos = 1;
	assert_int_equal(ark_ref_op(&op, t, bufs), ARK_OK);
	assert_near(o, (const double[]){17.31058578630005, 12.689414213699951, 975.9818472136457, 999.6264429680774}, 4,
		    1e-4);
	/* pos + T > L: an error naming the position */
	pos = 2;
	assert_int_equal(ark_ref_op(&op, t, bufs), ARK_ERR);
	assert_non_null(strstr(ark_last_error(), "position 'pos' is 2"));
	pos = -1;
	assert_int_equal(ark_ref_op(&op, t, bufs), ARK_ERR);
	/* two kv heads, one query head each (kv_heads = heads): head 1 reads column 1 of the caches */
	static const float k2[6] = {0, 0, 0, 1, 0, 5}, v2[6] = {1, 10, 2, 20, 3, 1000};
	pos = 1;
	op.kv_heads = 2;
	struct ark_tensor t2[5] = {T32("q", 2, 2), T32("kc", 3, 2), T32("vc", 3, 2), tens("pos", ARK_INT32, 1, SHAPE(1)),
				   T32("o", 2, 2)};
	assert_int_equal(ark_ref_op(&op, t2, (void *[]){(void *)q, (void *)k2, (void *)v2, &pos, o}), ARK_OK);
	/* head 0: keys all 0, mean of its values seen (1.5, then 2); head 1 as before */
	assert_near(o, (const double[]){1.5, 12.689414213699951, 2, 999.6264429680774}, 4, 1e-4);
	op.heads = 3; /* does not divide the rows */
	assert_int_equal(ark_ref_op(&op, t2, (void *[]){(void *)q, (void *)k2, (void *)v2, &pos, o}), ARK_ERR);
}

/* argmax: the first of equal values, NaN never wins, a row of NaN gives 0, the last column can win */
static void test_argmax(void **state)
{
	const float x[12] = {1, 3, 3, 2, NAN, -1, NAN, -0.5f, NAN, NAN, NAN, NAN};
	int32_t o[3] = {-7, -7, -7};
	struct ark_tensor t[2] = {T32("x", 3, 4), tens("o", ARK_INT32, 1, SHAPE(3))};
	struct ark_op op = {.name = "a", .kind = ARK_OP_ARGMAX, .n_in = 1, .n_out = 1, .in = {0}, .out = {1}};
	assert_int_equal(ark_ref_op(&op, t, (void *[]){(void *)x, o}), ARK_OK);
	assert_int_equal(o[0], 1);
	assert_int_equal(o[1], 3);
	assert_int_equal(o[2], 0);
	/* -inf can win over NaN; bf16 input */
	uint16_t xb[3] = {0x7fc0 /* NaN */, 0xff80 /* -inf */, 0x7fc0};
	int32_t o1 = -7;
	struct ark_tensor tb[2] = {tens("x", ARK_BF16, 1, SHAPE(3)), tens("o", ARK_INT32, 1, SHAPE(1))};
	assert_int_equal(ark_ref_op(&op, tb, (void *[]){xb, &o1}), ARK_OK);
	assert_int_equal(o1, 1);
	/* a float output */
	t[1] = T32("o", 3);
	assert_int_equal(ark_ref_op(&op, t, (void *[]){(void *)x, o}), ARK_ERR);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_error),
		cmocka_unit_test(test_half_known),
		cmocka_unit_test(test_half_roundtrip_all),
#ifdef __FLT16_MAX__
		cmocka_unit_test(test_half_vs_compiler),
#endif
		cmocka_unit_test(test_bf16_known),
		cmocka_unit_test(test_get_set),
		cmocka_unit_test(test_fill_random),
		cmocka_unit_test(test_compare),
		cmocka_unit_test(test_matmul),
		cmocka_unit_test(test_matmul_batch),
		cmocka_unit_test(test_matmul_large),
		cmocka_unit_test(test_matmul_lowp_out),
		cmocka_unit_test(test_add_mul_broadcast),
		cmocka_unit_test(test_unary),
		cmocka_unit_test(test_swiglu),
		cmocka_unit_test(test_softmax),
		cmocka_unit_test(test_layernorm),
		cmocka_unit_test(test_rmsnorm),
		cmocka_unit_test(test_l2_normalize),
		cmocka_unit_test(test_reduce_mean),
		cmocka_unit_test(test_copy),
		cmocka_unit_test(test_all_reduce),
		cmocka_unit_test(test_all_gather),
		cmocka_unit_test(test_attention),
		cmocka_unit_test(test_int32),
		cmocka_unit_test(test_embedding),
		cmocka_unit_test(test_state),
		cmocka_unit_test(test_quant_blocks),
		cmocka_unit_test(test_quant_random),
		cmocka_unit_test(test_quant_ops),
		cmocka_unit_test(test_views),
		cmocka_unit_test(test_ref_run),
		cmocka_unit_test(test_rope),
		cmocka_unit_test(test_decode_attention),
		cmocka_unit_test(test_argmax),
	};
	cmocka_set_message_output(CM_OUTPUT_TAP);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
