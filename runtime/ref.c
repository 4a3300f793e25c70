/* ref.c: the CPU reference of every op (ark_ref_op, ark_ref_run): one function per op, which
 * OP_CATALOG names (abi/ark_ops.h). Inputs are read as float, accumulation is in double, every output
 * element is rounded once to its dtype. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ark.h"

static const char *const ref_op_names[] = {
#define X(id, name, min_in, max_in, n_out, attrs, flags) name,
	OP_LIST(X)
#undef X
};
static const int ref_op_min_in[] = {
#define X(id, name, min_in, max_in, n_out, attrs, flags) min_in,
	OP_LIST(X)
#undef X
};
static const int ref_op_max_in[] = {
#define X(id, name, min_in, max_in, n_out, attrs, flags) max_in,
	OP_LIST(X)
#undef X
};
static const int ref_op_n_out[] = {
#define X(id, name, min_in, max_in, n_out, attrs, flags) n_out,
	OP_LIST(X)
#undef X
};
_Static_assert(sizeof ref_op_names / sizeof ref_op_names[0] == ARK_OP__COUNT, "op table size");

struct ref_ctx {
	const struct ark_op *op;
	const struct ark_tensor *tensors;
	void *const *bufs;
};

static const char *op_name(const struct ark_op *op)
{
	return op->name ? op->name : "?";
}

static const char *tname(const struct ark_tensor *t)
{
	return t->name ? t->name : "?";
}

/* "[8, 1024]" into buf. */
static const char *shape_str(char *buf, size_t n, const struct ark_tensor *t)
{
	size_t k = 0;
	k += (size_t)snprintf(buf + k, n - k, "[");
	for (int i = 0; i < t->ndim && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
	if (k < n)
		snprintf(buf + k, n - k, "]");
	return buf;
}

#define REF_ERR(c, ...) ref_err(c, __VA_ARGS__)
__attribute__((format(printf, 2, 3))) static int ref_err(const struct ref_ctx *c, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return ark_error("reference of op '%s' (%s): %s", op_name(c->op), ref_op_names[c->op->kind], msg);
}

static const struct ark_tensor *in_t(const struct ref_ctx *c, int i)
{
	return &c->tensors[c->op->in[i]];
}
static const struct ark_tensor *out_t(const struct ref_ctx *c, int i)
{
	return &c->tensors[c->op->out[i]];
}
static const void *in_b(const struct ref_ctx *c, int i)
{
	return c->bufs[c->op->in[i]];
}
static void *out_b(const struct ref_ctx *c, int i)
{
	return c->bufs[c->op->out[i]];
}

static int64_t last_dim(const struct ark_tensor *t)
{
	return t->shape[t->ndim - 1];
}

/* Input i read into a new float array (n elements); NULL with an error set when out of memory. */
static float *load_f32(const struct ref_ctx *c, int i, int64_t n)
{
	const struct ark_tensor *t = in_t(c, i);
	const void *b = in_b(c, i);
	float *f = malloc((size_t)(n > 0 ? n : 1) * sizeof *f);
	if (!f) {
		REF_ERR(c, "out of memory reading input '%s'", tname(t));
		return NULL;
	}
	for (int64_t k = 0; k < n; k++)
		f[k] = ark_get(b, t->dtype, k);
	return f;
}

static int same_elems(const struct ref_ctx *c, const struct ark_tensor *a, const struct ark_tensor *b)
{
	char s1[96], s2[96];
	if (ark_tensor_elems(a) == ark_tensor_elems(b))
		return ARK_OK;
	return REF_ERR(c, "'%s' %s and '%s' %s differ in size", tname(a), shape_str(s1, sizeof s1, a),
		       tname(b), shape_str(s2, sizeof s2, b));
}

/* ---- matmul: out [..., M, N] = a [..., M, K] . b [K, N] (or b [N, K] transposed) + bias [N] ---- */
static int ref_matmul(const struct ref_ctx *c)
{
	const struct ark_tensor *a = in_t(c, 0), *b = in_t(c, 1), *o = out_t(c, 0);
	char s1[96], s2[96];
	int64_t K = last_dim(a), M = K ? ark_tensor_elems(a) / K : 0, N, bk;
	float *fa = NULL, *fb = NULL, *fbias = NULL; /* fa [M, K], fb [rows, N or K], fbias [N] */
	double *acc = NULL;                          /* acc [M, N] */
	int64_t rows;
	int rc = ARK_ERR;

	if (b->ndim != 2)
		return REF_ERR(c, "b '%s' has %d dimensions, expected 2", tname(b), b->ndim);
	N = c->op->transpose_b ? b->shape[0] : b->shape[1];
	bk = c->op->transpose_b ? b->shape[1] : b->shape[0];
	if (ark_dtype_quantized(b->dtype) && (!c->op->transpose_b || K % ARK_QBLOCK))
		return REF_ERR(c, "b '%s' is %s: it needs transpose_b and K a multiple of 32", tname(b),
			       ark_dtype_name(b->dtype));
	if (bk != K)
		return REF_ERR(c, "a '%s' %s and b '%s' %s%s do not agree on K", tname(a),
			       shape_str(s1, sizeof s1, a), tname(b), shape_str(s2, sizeof s2, b),
			       c->op->transpose_b ? " (transposed)" : "");
	if (last_dim(o) != N || ark_tensor_elems(o) != M * N)
		return REF_ERR(c, "output '%s' %s, expected %lld rows of %lld", tname(o),
			       shape_str(s1, sizeof s1, o), (long long)M, (long long)N);
	if (c->op->n_in == 3 && (in_t(c, 2)->ndim != 1 || in_t(c, 2)->shape[0] != N))
		return REF_ERR(c, "bias '%s' %s, expected [%lld]", tname(in_t(c, 2)),
			       shape_str(s1, sizeof s1, in_t(c, 2)), (long long)N);

	if (!(fa = load_f32(c, 0, M * K)))
		goto out;
	if (c->op->n_in == 3 && !(fbias = load_f32(c, 2, N)))
		goto out;
	/* acc [M, N] in double; b is converted to float a block of its rows at a time (about 16 MiB), so
	 * a large weight is never copied whole, and every inner loop runs over contiguous memory */
	rows = N * K > 0 ? (int64_t)((16u << 20) / sizeof(float)) / (c->op->transpose_b ? K : N) : 1;
	rows = rows < 1 ? 1 : rows;
	if (!(acc = malloc((size_t)(M * N > 0 ? M * N : 1) * sizeof *acc)) ||
	    !(fb = malloc((size_t)(rows * (c->op->transpose_b ? K : N)) * sizeof *fb))) {
		REF_ERR(c, "out of memory");
		goto out;
	}
	for (int64_t m = 0; m < M; m++)
		for (int64_t n = 0; n < N; n++)
			acc[m * N + n] = fbias ? fbias[n] : 0.0;
	if (c->op->transpose_b) {
		/* b [N, K]: out[m][n] += dot(a[m][:], b[n][:]) over blocks of n */
		for (int64_t n0 = 0; n0 < N; n0 += rows) {
			int64_t n1 = n0 + rows < N ? n0 + rows : N;
			if (ark_dtype_quantized(b->dtype)) { /* blocks of 32 along K, dequantised row by row */
				const size_t rb = (size_t)ark_row_bytes(b->dtype, K);
				for (int64_t n = n0; n < n1; n++)
					if (ark_dequant_row((const char *)in_b(c, 1) + (size_t)n * rb, b->dtype, K, fb + (n - n0) * K))
						goto out;
			} else {
				for (int64_t e = n0 * K; e < n1 * K; e++)
					fb[e - n0 * K] = ark_get(in_b(c, 1), b->dtype, e);
			}
			for (int64_t m = 0; m < M; m++)
				for (int64_t n = n0; n < n1; n++) {
					const float *ar = fa + m * K, *br = fb + (n - n0) * K;
					double d = 0;
					for (int64_t k = 0; k < K; k++)
						d += (double)ar[k] * br[k];
					acc[m * N + n] += d;
				}
		}
	} else {
		/* b [K, N]: out[m][:] += a[m][k] * b[k][:] over blocks of k */
		for (int64_t k0 = 0; k0 < K; k0 += rows) {
			int64_t k1 = k0 + rows < K ? k0 + rows : K;
			for (int64_t e = k0 * N; e < k1 * N; e++)
				fb[e - k0 * N] = ark_get(in_b(c, 1), b->dtype, e);
			for (int64_t m = 0; m < M; m++) {
				double *cr = acc + m * N;
				for (int64_t k = k0; k < k1; k++) {
					const float *br = fb + (k - k0) * N;
					double av = fa[m * K + k];
					for (int64_t n = 0; n < N; n++)
						cr[n] += av * br[n];
				}
			}
		}
	}
	for (int64_t e = 0; e < M * N; e++)
		ark_set(out_b(c, 0), o->dtype, e, (float)acc[e]);
	rc = ARK_OK;
out:
	free(fa);
	free(fb);
	free(fbias);
	free(acc);
	return rc;
}

/* ---- elementwise ops with numpy broadcasting (inputs right-aligned to the output's shape) ---- */
static int bcast_strides(const struct ref_ctx *c, const struct ark_tensor *t, const struct ark_tensor *o,
			 int64_t st[ARK_MAX_DIMS])
{
	char s1[96], s2[96];
	int64_t stride = 1;
	int off = o->ndim - t->ndim;

	if (off < 0)
		return REF_ERR(c, "input '%s' %s has more dimensions than output '%s' %s", tname(t),
			       shape_str(s1, sizeof s1, t), tname(o), shape_str(s2, sizeof s2, o));
	for (int d = o->ndim - 1; d >= 0; d--) {
		int td = d - off;
		st[d] = 0;
		if (td < 0)
			continue;
		if (t->shape[td] != o->shape[d] && t->shape[td] != 1)
			return REF_ERR(c, "input '%s' %s does not broadcast to output '%s' %s", tname(t),
				       shape_str(s1, sizeof s1, t), tname(o), shape_str(s2, sizeof s2, o));
		st[d] = t->shape[td] == 1 ? 0 : stride;
		stride *= t->shape[td];
	}
	return ARK_OK;
}

/* out = f(x, y, factor) over out's elements, x and y read from the broadcast inputs (y = 0 for the
 * one-input ops). */
typedef double ew_fn(double x, double y, double factor);

static int ref_elementwise(const struct ref_ctx *c, ew_fn *f)
{
	const struct ark_tensor *o = out_t(c, 0);
	int nin = c->op->n_in, nd = o->ndim;
	int64_t st[2][ARK_MAX_DIMS], idx[ARK_MAX_DIMS] = {0}, n = ark_tensor_elems(o);
	int64_t pos[2] = {0, 0};

	for (int i = 0; i < nin; i++)
		if (bcast_strides(c, in_t(c, i), o, st[i]))
			return ARK_ERR;
	for (int64_t e = 0; e < n; e++) {
		double x = ark_get(in_b(c, 0), in_t(c, 0)->dtype, pos[0]);
		double y = nin > 1 ? ark_get(in_b(c, 1), in_t(c, 1)->dtype, pos[1]) : 0.0;
		ark_set(out_b(c, 0), o->dtype, e, (float)f(x, y, c->op->factor));
		/* next output index, carrying from the last dimension; pos[i] follows with its strides */
		for (int d = nd - 1; d >= 0; d--) {
			idx[d]++;
			for (int i = 0; i < nin; i++)
				pos[i] += st[i][d];
			if (idx[d] < o->shape[d])
				break;
			for (int i = 0; i < nin; i++)
				pos[i] -= st[i][d] * idx[d];
			idx[d] = 0;
		}
	}
	return ARK_OK;
}

static double ew_add(double x, double y, double factor) { return x + y; }
static double ew_mul(double x, double y, double factor) { return x * y; }
static double ew_scale(double x, double y, double factor) { return x * factor; }
static double ew_relu(double x, double y, double factor) { return x > 0 ? x : 0.0 * x; /* keeps NaN */ }
static double ew_gelu(double x, double y, double factor) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }
static double ew_gelu_tanh(double x, double y, double factor)
{
	return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}
static double ew_tanh(double x, double y, double factor) { return tanh(x); }
static double ew_silu(double x, double y, double factor) { return x / (1.0 + exp(-x)); }
static double ew_sigmoid(double x, double y, double factor) { return 1.0 / (1.0 + exp(-x)); }
static double ew_swiglu(double x, double y, double factor) { return x / (1.0 + exp(-x)) * y; }

static int ref_add(const struct ref_ctx *c) { return ref_elementwise(c, ew_add); }
static int ref_mul(const struct ref_ctx *c) { return ref_elementwise(c, ew_mul); }
static int ref_scale(const struct ref_ctx *c) { return ref_elementwise(c, ew_scale); }
static int ref_relu(const struct ref_ctx *c) { return ref_elementwise(c, ew_relu); }
static int ref_gelu(const struct ref_ctx *c) { return ref_elementwise(c, ew_gelu); }
static int ref_silu(const struct ref_ctx *c) { return ref_elementwise(c, ew_silu); }
static int ref_sigmoid(const struct ref_ctx *c) { return ref_elementwise(c, ew_sigmoid); }
static int ref_gelu_tanh(const struct ref_ctx *c) { return ref_elementwise(c, ew_gelu_tanh); }
static int ref_tanh(const struct ref_ctx *c) { return ref_elementwise(c, ew_tanh); }

static int ref_swiglu(const struct ref_ctx *c)
{
	if (same_elems(c, in_t(c, 0), in_t(c, 1))) /* both halves of the gate, no broadcasting */
		return ARK_ERR;
	return ref_elementwise(c, ew_swiglu);
}

/* ---- row ops over the last dimension N: softmax, layernorm, rmsnorm ---- */

/* Checks that out has in[0]'s elements and every other input is [N]; *N and *rows of in[0]. */
static int rows_check(const struct ref_ctx *c, int64_t *N, int64_t *rows)
{
	const struct ark_tensor *a = in_t(c, 0);
	char s1[96];

	*N = last_dim(a);
	*rows = *N ? ark_tensor_elems(a) / *N : 0;
	if (same_elems(c, a, out_t(c, 0)))
		return ARK_ERR;
	for (int i = 1; i < c->op->n_in; i++)
		if (in_t(c, i)->ndim != 1 || in_t(c, i)->shape[0] != *N)
			return REF_ERR(c, "'%s' %s, expected [%lld]", tname(in_t(c, i)),
				       shape_str(s1, sizeof s1, in_t(c, i)), (long long)*N);
	return ARK_OK;
}

static int ref_softmax(const struct ref_ctx *c)
{
	const struct ark_tensor *a = in_t(c, 0), *o = out_t(c, 0);
	const void *ab = in_b(c, 0);
	void *ob = out_b(c, 0);
	int64_t N, rows;

	if (rows_check(c, &N, &rows))
		return ARK_ERR;
	for (int64_t base = 0; base < rows * N; base += N) {
		double mx = -INFINITY, sum = 0;
		for (int64_t j = 0; j < N; j++) {
			double x = ark_get(ab, a->dtype, base + j);
			mx = x > mx ? x : mx;
		}
		for (int64_t j = 0; j < N; j++)
			sum += exp(ark_get(ab, a->dtype, base + j) - mx);
		for (int64_t j = 0; j < N; j++)
			ark_set(ob, o->dtype, base + j, (float)(exp(ark_get(ab, a->dtype, base + j) - mx) / sum));
	}
	return ARK_OK;
}

static int ref_layernorm(const struct ref_ctx *c)
{
	const struct ark_tensor *a = in_t(c, 0), *o = out_t(c, 0), *g = in_t(c, 1), *b = in_t(c, 2);
	const void *ab = in_b(c, 0);
	void *ob = out_b(c, 0);
	int64_t N, rows;

	if (rows_check(c, &N, &rows))
		return ARK_ERR;
	for (int64_t base = 0; base < rows * N; base += N) {
		double mean = 0, var = 0, inv;
		for (int64_t j = 0; j < N; j++)
			mean += ark_get(ab, a->dtype, base + j);
		mean /= (double)N;
		for (int64_t j = 0; j < N; j++) {
			double d = ark_get(ab, a->dtype, base + j) - mean;
			var += d * d;
		}
		var /= (double)N;
		inv = 1.0 / sqrt(var + c->op->eps);
		for (int64_t j = 0; j < N; j++) {
			double y = (ark_get(ab, a->dtype, base + j) - mean) * inv * ark_get(in_b(c, 1), g->dtype, j) +
				   ark_get(in_b(c, 2), b->dtype, j);
			ark_set(ob, o->dtype, base + j, (float)y);
		}
	}
	return ARK_OK;
}

/* The sum of the squares of elements base .. base + n of a buffer, in double. */
static double sum_squares(const void *b, int dtype, int64_t base, int64_t n)
{
	double ss = 0;
	for (int64_t j = 0; j < n; j++) {
		double x = ark_get(b, dtype, base + j);
		ss += x * x;
	}
	return ss;
}

static int ref_rmsnorm(const struct ref_ctx *c)
{
	const struct ark_tensor *a = in_t(c, 0), *o = out_t(c, 0), *g = in_t(c, 1);
	const void *ab = in_b(c, 0);
	void *ob = out_b(c, 0);
	int64_t N, rows;

	if (rows_check(c, &N, &rows))
		return ARK_ERR;
	for (int64_t base = 0; base < rows * N; base += N) {
		double inv = 1.0 / sqrt(sum_squares(ab, a->dtype, base, N) / (double)N + c->op->eps);
		for (int64_t j = 0; j < N; j++) {
			double y = ark_get(ab, a->dtype, base + j) * inv * ark_get(in_b(c, 1), g->dtype, j);
			ark_set(ob, o->dtype, base + j, (float)y);
		}
	}
	return ARK_OK;
}

/* x / max(||x||_2, eps) over the last dimension. */
static int ref_l2_normalize(const struct ref_ctx *c)
{
	const struct ark_tensor *a = in_t(c, 0), *o = out_t(c, 0);
	const void *ab = in_b(c, 0);
	void *ob = out_b(c, 0);
	int64_t N, rows;

	if (rows_check(c, &N, &rows))
		return ARK_ERR;
	for (int64_t base = 0; base < rows * N; base += N) {
		double norm = sqrt(sum_squares(ab, a->dtype, base, N));
		norm = norm > c->op->eps ? norm : c->op->eps;
		for (int64_t j = 0; j < N; j++)
			ark_set(ob, o->dtype, base + j, (float)(ark_get(ab, a->dtype, base + j) / norm));
	}
	return ARK_OK;
}

/* ---- reduce_mean: the mean over `axis`, x viewed as [P, S, Q] (S the axis), out as [P, Q]; with a
 * mask [P, S, Q / D] (x's shape without its last dimension D): sum_s x * m / max(sum_s m, 1e-9) ---- */
static int ref_reduce_mean(const struct ref_ctx *c)
{
	const struct ark_tensor *a = in_t(c, 0), *o = out_t(c, 0);
	const struct ark_tensor *m = c->op->n_in > 1 ? in_t(c, 1) : NULL;
	const void *ab = in_b(c, 0), *mb = m ? in_b(c, 1) : NULL;
	int ax = c->op->axis;
	int64_t P = 1, S, Q = 1, D = last_dim(a);
	char s1[96], s2[96];

	if (ax < 0 || ax >= a->ndim)
		return REF_ERR(c, "axis %d out of range for '%s' with %d dimensions", ax, tname(a), a->ndim);
	for (int d = 0; d < ax; d++)
		P *= a->shape[d];
	S = a->shape[ax];
	for (int d = ax + 1; d < a->ndim; d++)
		Q *= a->shape[d];
	if (ark_tensor_elems(o) != P * Q)
		return REF_ERR(c, "output '%s' %s, expected %lld elements", tname(o), shape_str(s1, sizeof s1, o),
			       (long long)(P * Q));
	if (m && (m->ndim != a->ndim - 1 || ax == a->ndim - 1 ||
		  memcmp(m->shape, a->shape, sizeof(int64_t) * (size_t)m->ndim)))
		return REF_ERR(c, "mask '%s' %s is not the shape of '%s' %s without its last dimension, or the axis is "
			       "the last", tname(m), shape_str(s1, sizeof s1, m), tname(a), shape_str(s2, sizeof s2, a));
	for (int64_t p = 0; p < P; p++)
		for (int64_t q = 0; q < Q; q++) {
			double sum = 0, cnt = 0;
			for (int64_t sx = 0; sx < S; sx++) {
				double w = m ? ark_get(mb, m->dtype, (p * S + sx) * (Q / D) + q / D) : 1.0;
				sum += ark_get(ab, a->dtype, (p * S + sx) * Q + q) * w;
				cnt += w;
			}
			ark_set(out_b(c, 0), o->dtype, p * Q + q, (float)(m ? sum / (cnt > 1e-9 ? cnt : 1e-9) : sum / (double)S));
		}
	return ARK_OK;
}

/* Copies n elements from (src, sdt) at si to (dst, ddt) at di: bytes when the dtypes agree. */
static void copy_elems(void *dst, int ddt, int64_t di, const void *src, int sdt, int64_t si, int64_t n)
{
	if (ddt == sdt) {
		size_t es = (size_t)ark_dtype_size(sdt);
		memmove((char *)dst + (size_t)di * es, (const char *)src + (size_t)si * es, (size_t)n * es);
		return;
	}
	for (int64_t k = 0; k < n; k++)
		ark_set(dst, ddt, di + k, ark_get(src, sdt, si + k));
}

static int ref_copy(const struct ref_ctx *c)
{
	const struct ark_tensor *a = in_t(c, 0), *o = out_t(c, 0);
	if (same_elems(c, a, o))
		return ARK_ERR;
	copy_elems(out_b(c, 0), o->dtype, 0, in_b(c, 0), a->dtype, 0, ark_tensor_elems(a));
	return ARK_OK;
}

static int ref_all_reduce(const struct ref_ctx *c)
{
	int nin = c->op->n_in;
	int64_t n = ark_tensor_elems(in_t(c, 0));
	double *sum;

	for (int i = 1; i < nin; i++)
		if (same_elems(c, in_t(c, 0), in_t(c, i)))
			return ARK_ERR;
	for (int i = 0; i < c->op->n_out; i++)
		if (same_elems(c, in_t(c, 0), out_t(c, i)))
			return ARK_ERR;
	if (!(sum = calloc((size_t)(n > 0 ? n : 1), sizeof *sum)))
		return REF_ERR(c, "out of memory");
	for (int i = 0; i < nin; i++)
		for (int64_t k = 0; k < n; k++)
			sum[k] += ark_get(in_b(c, i), in_t(c, i)->dtype, k);
	/* every input is read before any output is written, so outputs may share inputs' buffers */
	for (int i = 0; i < c->op->n_out; i++)
		for (int64_t k = 0; k < n; k++)
			ark_set(out_b(c, i), out_t(c, i)->dtype, k, (float)sum[k]);
	free(sum);
	return ARK_OK;
}

static int ref_all_gather(const struct ref_ctx *c)
{
	const struct ark_tensor *t0 = in_t(c, 0);
	int nin = c->op->n_in, ax = c->op->axis;
	int64_t outer = 1, chunk = 1;
	char s1[96], s2[96];

	if (ax < 0 || ax >= t0->ndim)
		return REF_ERR(c, "axis %d out of range for '%s' with %d dimensions", ax, tname(t0), t0->ndim);
	for (int i = 1; i < nin; i++) {
		const struct ark_tensor *t = in_t(c, i);
		if (t->ndim != t0->ndim || memcmp(t->shape, t0->shape, sizeof(int64_t) * t0->ndim))
			return REF_ERR(c, "inputs '%s' %s and '%s' %s differ in shape", tname(t0),
				       shape_str(s1, sizeof s1, t0), tname(t), shape_str(s2, sizeof s2, t));
	}
	for (int d = 0; d < ax; d++)
		outer *= t0->shape[d];
	for (int d = ax; d < t0->ndim; d++)
		chunk *= t0->shape[d];
	for (int i = 0; i < c->op->n_out; i++) {
		const struct ark_tensor *o = out_t(c, i);
		int ok = o->ndim == t0->ndim;
		for (int d = 0; ok && d < o->ndim; d++)
			ok = o->shape[d] == (d == ax ? t0->shape[d] * nin : t0->shape[d]);
		if (!ok)
			return REF_ERR(c, "output '%s' %s is not %d inputs %s gathered along axis %d", tname(o),
				       shape_str(s1, sizeof s1, o), nin, shape_str(s2, sizeof s2, t0), ax);
	}
	for (int i = 0; i < c->op->n_out; i++)
		for (int64_t r = 0; r < outer; r++)
			for (int j = 0; j < nin; j++)
				copy_elems(out_b(c, i), out_t(c, i)->dtype, (r * nin + j) * chunk, in_b(c, j),
					   in_t(c, j)->dtype, r * chunk, chunk);
	return ARK_OK;
}

/* ---- attention: out [B, Sq, H*Dh] = softmax(q.k^T * scale + mask) v per head, in double ---- */
static int ref_attention(const struct ref_ctx *c)
{
	const struct ark_tensor *q = in_t(c, 0), *k = in_t(c, 1), *v = in_t(c, 2), *o = out_t(c, 0);
	const struct ark_tensor *mk = c->op->n_in > 3 ? in_t(c, 3) : NULL;
	const void *qb = in_b(c, 0), *kb = in_b(c, 1), *vb = in_b(c, 2), *mb = mk ? in_b(c, 3) : NULL;
	void *ob = out_b(c, 0);
	int H = c->op->heads, Hkv = c->op->kv_heads, causal = c->op->causal;
	double scale = c->op->scale;
	char s1[96], s2[96];

	if ((q->ndim != 2 && q->ndim != 3) || k->ndim != q->ndim || v->ndim != q->ndim)
		return REF_ERR(c, "q %s, k %s: expected [B, S, E] or [S, E] for each", shape_str(s1, sizeof s1, q),
			       shape_str(s2, sizeof s2, k));
	int64_t B = q->ndim == 3 ? q->shape[0] : 1, Sq = q->shape[q->ndim - 2], E = q->shape[q->ndim - 1];
	int64_t Skv = k->shape[k->ndim - 2], Ekv = k->shape[k->ndim - 1];
	if (H < 1 || Hkv < 1 || H % Hkv || E % H || Ekv != (E / H) * Hkv)
		return REF_ERR(c, "heads %d, kv_heads %d do not fit q %s and k %s", H, Hkv, shape_str(s1, sizeof s1, q),
			       shape_str(s2, sizeof s2, k));
	if (ark_tensor_elems(v) != ark_tensor_elems(k) || (q->ndim == 3 && k->shape[0] != B))
		return REF_ERR(c, "k %s and v %s do not match q", shape_str(s1, sizeof s1, k), shape_str(s2, sizeof s2, v));
	if (mk && ark_tensor_elems(mk) != B * Skv)
		return REF_ERR(c, "mask %s, expected [%lld, %lld]", shape_str(s1, sizeof s1, mk), (long long)B,
			       (long long)Skv);
	if (same_elems(c, q, o))
		return ARK_ERR;
	int64_t Dh = E / H;
	double *p = malloc((size_t)(Skv > 0 ? Skv : 1) * sizeof *p);
	if (!p)
		return REF_ERR(c, "out of memory");
	for (int64_t b = 0; b < B; b++)
		for (int64_t h = 0; h < H; h++) {
			int64_t kvh = h / (H / Hkv);
			for (int64_t i = 0; i < Sq; i++) {
				int64_t qrow = (b * Sq + i) * E + h * Dh;
				double mx = -INFINITY, sum = 0;
				for (int64_t j = 0; j < Skv; j++) {
					int64_t krow = (b * Skv + j) * Ekv + kvh * Dh;
					int ok = !causal || j <= i + Skv - Sq;
					if (mk && ark_get(mb, mk->dtype, b * Skv + j) == 0)
						ok = 0;
					double d = 0;
					for (int64_t x = 0; ok && x < Dh; x++)
						d += (double)ark_get(qb, q->dtype, qrow + x) * ark_get(kb, k->dtype, krow + x);
					p[j] = ok ? d * scale : -INFINITY;
					mx = p[j] > mx ? p[j] : mx;
				}
				for (int64_t j = 0; j < Skv; j++) {
					p[j] = mx == -INFINITY ? 0 : exp(p[j] - mx);
					sum += p[j];
				}
				for (int64_t x = 0; x < Dh; x++) {
					double acc = 0;
					for (int64_t j = 0; sum > 0 && j < Skv; j++)
						if (p[j] != 0)
							acc += p[j] * ark_get(vb, v->dtype, (b * Skv + j) * Ekv + kvh * Dh + x);
					/* a row that may attend to no key: zeros */
					ark_set(ob, o->dtype, qrow + x, (float)(sum > 0 ? acc / sum : 0));
				}
			}
		}
	free(p);
	return ARK_OK;
}

/* ---- embedding and the views ------------------------------------------------------------------- */

/* embedding: out [..., D] row r = table [V, D] row ids[r]; an id outside 0..V-1 is an error that
 * names the op, the row and the id (the GPU aborts its iteration on the same ids). */
static int ref_embedding(const struct ref_ctx *c)
{
	const struct ark_tensor *ids = in_t(c, 0), *tab = in_t(c, 1), *o = out_t(c, 0);
	char s1[96];
	const int quant = ark_dtype_quantized(tab->dtype);
	if (ids->dtype != ARK_INT32 || tab->ndim != 2 || (quant ? tab->shape[1] % ARK_QBLOCK : o->dtype != tab->dtype) ||
	    o->ndim != ids->ndim + 1 ||
	    last_dim(o) != tab->shape[1] || ark_tensor_elems(o) != ark_tensor_elems(ids) * tab->shape[1])
		return REF_ERR(c, "ids '%s' (%s), table '%s' %s and output '%s' do not fit", tname(ids),
			       ark_dtype_name(ids->dtype), tname(tab), shape_str(s1, sizeof s1, tab), tname(o));
	int64_t n = ark_tensor_elems(ids), V = tab->shape[0], D = tab->shape[1];
	const int32_t *id = in_b(c, 0);
	for (int64_t r = 0; r < n; r++) {
		if (id[r] < 0 || id[r] >= V)
			return REF_ERR(c, "element %lld of ids '%s' is %d, outside the %lld rows of '%s'", (long long)r,
				       tname(ids), id[r], (long long)V, tname(tab));
		if (quant) { /* the row's blocks dequantised, rounded once to the output's dtype */
			float *row = malloc((size_t)D * sizeof *row);
			if (!row)
				return REF_ERR(c, "out of memory");
			int rc = ark_dequant_row((const char *)in_b(c, 1) + (size_t)id[r] * (size_t)ark_row_bytes(tab->dtype, D),
						 tab->dtype, D, row);
			for (int64_t e = 0; e < D && !rc; e++)
				ark_set(out_b(c, 0), o->dtype, r * D + e, row[e]);
			free(row);
			if (rc)
				return ARK_ERR;
			continue;
		}
		copy_elems(out_b(c, 0), o->dtype, r * D, in_b(c, 1), tab->dtype, id[r] * D, D);
	}
	return ARK_OK;
}

/* reshape (and any view that keeps the element order): the elements, in order */
static int ref_view(const struct ref_ctx *c)
{
	const struct ark_tensor *a = in_t(c, 0), *o = out_t(c, 0);
	if (same_elems(c, a, o))
		return ARK_ERR;
	copy_elems(out_b(c, 0), o->dtype, 0, in_b(c, 0), a->dtype, 0, ark_tensor_elems(a));
	return ARK_OK;
}

/* Elements of t before dimension d (outer) and from d + 1 on (inner). */
static int64_t elems_before(const struct ark_tensor *t, int d)
{
	int64_t n = 1;
	for (int i = 0; i < d; i++)
		n *= t->shape[i];
	return n;
}
static int64_t elems_after(const struct ark_tensor *t, int d)
{
	int64_t n = 1;
	for (int i = d + 1; i < t->ndim; i++)
		n *= t->shape[i];
	return n;
}

/* slice: elements start..start + out's length of `axis` */
static int ref_slice(const struct ref_ctx *c)
{
	const struct ark_tensor *a = in_t(c, 0), *o = out_t(c, 0);
	int ax = c->op->axis;
	char s1[96], s2[96];
	int ok = ax >= 0 && ax < a->ndim && o->ndim == a->ndim && c->op->start >= 0 &&
		 c->op->start + (ax < o->ndim ? o->shape[ax] : 0) <= a->shape[ax];
	for (int d = 0; ok && d < a->ndim; d++)
		ok = d == ax || o->shape[d] == a->shape[d];
	if (!ok)
		return REF_ERR(c, "'%s' %s is not elements %lld.. of axis %d of '%s' %s", tname(o),
			       shape_str(s1, sizeof s1, o), (long long)c->op->start, ax, tname(a), shape_str(s2, sizeof s2, a));
	int64_t outer = elems_before(a, ax), inner = elems_after(a, ax), len = o->shape[ax];
	for (int64_t r = 0; r < outer; r++)
		copy_elems(out_b(c, 0), o->dtype, r * len * inner, in_b(c, 0), a->dtype,
			   (r * a->shape[ax] + c->op->start) * inner, len * inner);
	return ARK_OK;
}

/* transpose: axes dims[0] and dims[1] swapped */
static int ref_transpose(const struct ref_ctx *c)
{
	const struct ark_tensor *a = in_t(c, 0), *o = out_t(c, 0);
	int d0 = c->op->dims[0], d1 = c->op->dims[1];
	char s1[96], s2[96];
	int ok = d0 >= 0 && d0 < a->ndim && d1 >= 0 && d1 < a->ndim && d0 != d1 && o->ndim == a->ndim;
	for (int d = 0; ok && d < a->ndim; d++)
		ok = o->shape[d] == a->shape[d == d0 ? d1 : d == d1 ? d0 : d];
	if (!ok)
		return REF_ERR(c, "'%s' %s is not '%s' %s with axes %d and %d swapped", tname(o),
			       shape_str(s1, sizeof s1, o), tname(a), shape_str(s2, sizeof s2, a), d0, d1);
	int64_t st[ARK_MAX_DIMS], n = ark_tensor_elems(o);
	for (int d = 0; d < a->ndim; d++)
		st[d] = elems_after(a, d);
	int64_t tmp = st[d0];
	st[d0] = st[d1];
	st[d1] = tmp; /* the input stride of each output dimension */
	for (int64_t i = 0; i < n; i++) {
		int64_t rest = i, at = 0;
		for (int d = o->ndim - 1; d >= 0; d--) {
			at += rest % o->shape[d] * st[d];
			rest /= o->shape[d];
		}
		copy_elems(out_b(c, 0), o->dtype, i, in_b(c, 0), a->dtype, at, 1);
	}
	return ARK_OK;
}

/* concat: the inputs, in the order of `in`, along `axis` */
static int ref_concat(const struct ref_ctx *c)
{
	const struct ark_tensor *o = out_t(c, 0);
	int ax = c->op->axis;
	int64_t at = 0;
	char s1[96], s2[96];
	if (ax < 0 || ax >= o->ndim)
		return REF_ERR(c, "axis %d out of range for '%s' with %d dimensions", ax, tname(o), o->ndim);
	for (int j = 0; j < c->op->n_in; j++) {
		const struct ark_tensor *x = in_t(c, j);
		int ok = x->ndim == o->ndim;
		for (int d = 0; ok && d < o->ndim; d++)
			ok = d == ax || x->shape[d] == o->shape[d];
		if (!ok || at + x->shape[ax] > o->shape[ax])
			return REF_ERR(c, "input '%s' %s does not fit '%s' %s along axis %d", tname(x),
				       shape_str(s1, sizeof s1, x), tname(o), shape_str(s2, sizeof s2, o), ax);
		int64_t outer = elems_before(o, ax), inner = elems_after(o, ax), len = x->shape[ax];
		for (int64_t r = 0; r < outer; r++)
			copy_elems(out_b(c, 0), o->dtype, (r * o->shape[ax] + at) * inner, in_b(c, j), x->dtype,
				   r * len * inner, len * inner);
		at += len;
	}
	if (at != o->shape[ax])
		return REF_ERR(c, "the inputs fill %lld of the %lld elements of axis %d of '%s'", (long long)at,
			       (long long)o->shape[ax], ax, tname(o));
	return ARK_OK;
}

/* ---- state: updates in place (the ops run in an order where every other reader of the state's old
 * value comes first, so the buffer of the state itself is updated) ---- */

/* assign: the state in[0] takes the value in[1] (same shape and dtype), bytes as they are */
static int ref_assign(const struct ref_ctx *c)
{
	const struct ark_tensor *st = in_t(c, 0), *v = in_t(c, 1);
	if (st->dtype != v->dtype || ark_tensor_elems(st) != ark_tensor_elems(v))
		return REF_ERR(c, "value '%s' does not fit state '%s'", tname(v), tname(st));
	memmove(c->bufs[c->op->in[0]], in_b(c, 1), (size_t)ark_tensor_elems(st) * (size_t)ark_dtype_size(st->dtype));
	return ARK_OK;
}

/* advance: every element of the int32 state in[0] plus `by` (struct ark_op.start), wrapping */
static int ref_advance(const struct ref_ctx *c)
{
	const struct ark_tensor *st = in_t(c, 0);
	if (st->dtype != ARK_INT32)
		return REF_ERR(c, "state '%s' is %s, expected int32", tname(st), ark_dtype_name(st->dtype));
	int32_t *p = c->bufs[c->op->in[0]];
	for (int64_t i = 0; i < ark_tensor_elems(st); i++)
		p[i] = (int32_t)((uint32_t)p[i] + (uint32_t)c->op->start);
	return ARK_OK;
}

/* kv_append: rows pos .. pos + T - 1 of the cache in[0] [L, D] take the rows of x in[1] [T, D]
 * (pos: int32 in[2]); the output is the cache after the write. */
static int ref_kv_append(const struct ref_ctx *c)
{
	const struct ark_tensor *ca = in_t(c, 0), *x = in_t(c, 1), *p = in_t(c, 2), *o = out_t(c, 0);
	char s1[96], s2[96];
	if (ca->ndim != 2 || x->ndim != 2 || x->shape[1] != ca->shape[1] || x->dtype != ca->dtype ||
	    p->dtype != ARK_INT32 || ark_tensor_elems(p) != 1 || o->dtype != ca->dtype ||
	    ark_tensor_elems(o) != ark_tensor_elems(ca))
		return REF_ERR(c, "cache '%s' %s, rows '%s' %s and position '%s' do not fit", tname(ca),
			       shape_str(s1, sizeof s1, ca), tname(x), shape_str(s2, sizeof s2, x), tname(p));
	int64_t L = ca->shape[0], T = x->shape[0], D = ca->shape[1];
	int32_t pos = *(const int32_t *)in_b(c, 2);
	if (pos < 0 || pos + T > L)
		return REF_ERR(c, "position %d: rows %d..%lld do not fit in the %lld rows of cache '%s'", pos, pos,
			       (long long)pos + T - 1, (long long)L, tname(ca));
	copy_elems(c->bufs[c->op->in[0]], ca->dtype, pos * D, in_b(c, 1), x->dtype, 0, T * D);
	copy_elems(out_b(c, 0), o->dtype, 0, in_b(c, 0), ca->dtype, 0, L * D);
	return ARK_OK;
}

/* ---- decoding: rope, decode_attention, argmax ---------------------------------------------------- */

/* The position operand: int32 [1]. */
static int ref_pos(const struct ref_ctx *c, int j, int64_t *pos)
{
	const struct ark_tensor *p = in_t(c, j);
	if (p->dtype != ARK_INT32 || ark_tensor_elems(p) != 1)
		return REF_ERR(c, "position '%s' is %s with %lld elements, expected int32 [1]", tname(p),
			       ark_dtype_name(p->dtype), (long long)ark_tensor_elems(p));
	*pos = ((const int32_t *)in_b(c, j))[0];
	return ARK_OK;
}

/* rope: x [T, H*Dh] or [B, T, H*Dh]; row t of a batch is at position pos + t; in every head the pairs
 * (i, i + rd/2) ("half") or (2i, 2i + 1) ("interleaved"), i < rd/2, turn by (pos + t) * base^(-2i/rd);
 * the columns from rd on are copied. */
static int ref_rope(const struct ref_ctx *c)
{
	const struct ark_tensor *x = in_t(c, 0), *o = out_t(c, 0);
	int64_t Dh = c->op->head_dim, rd = c->op->rotary_dim, pos;
	int style = c->op->style;
	double base = c->op->base;
	char s1[96];
	if (x->ndim < 2 || Dh < 1 || rd < 2 || rd % 2 || rd > Dh || last_dim(x) % Dh || !(base > 0))
		return REF_ERR(c, "x %s does not fit head_dim %lld, rotary_dim %lld, base %g", shape_str(s1, sizeof s1, x),
			       (long long)Dh, (long long)rd, base);
	if (same_elems(c, x, o) || ref_pos(c, 1, &pos))
		return ARK_ERR;
	const void *xb = in_b(c, 0);
	void *ob = out_b(c, 0);
	int64_t E = last_dim(x), T = x->shape[x->ndim - 2], rows = ark_tensor_elems(x) / E, half = rd / 2;
	for (int64_t r = 0; r < rows; r++) {
		double p = (double)(pos + r % T);
		for (int64_t h0 = r * E; h0 < (r + 1) * E; h0 += Dh) {
			for (int64_t i = 0; i < half; i++) {
				double ang = p * pow(base, -2.0 * (double)i / (double)rd);
				int64_t a = style ? 2 * i : i, b = style ? 2 * i + 1 : i + half;
				double xa = ark_get(xb, x->dtype, h0 + a), xb2 = ark_get(xb, x->dtype, h0 + b);
				ark_set(ob, o->dtype, h0 + a, (float)(xa * cos(ang) - xb2 * sin(ang)));
				ark_set(ob, o->dtype, h0 + b, (float)(xb2 * cos(ang) + xa * sin(ang)));
			}
			copy_elems(ob, o->dtype, h0 + rd, xb, x->dtype, h0 + rd, Dh - rd);
		}
	}
	return ARK_OK;
}

/* decode_attention: out [T, H*Dh]; query row t of head h attends keys 0..pos+t of kv head
 * h / (H/Hkv) of the caches [L, Hkv*Dh]: softmax(q.k * scale) v, in double. pos + T > L or pos < 0 is
 * an error naming the position (the GPU aborts its iteration on it). */
static int ref_decode_attention(const struct ref_ctx *c)
{
	const struct ark_tensor *q = in_t(c, 0), *k = in_t(c, 1), *v = in_t(c, 2), *o = out_t(c, 0);
	int H = c->op->heads, Hkv = c->op->kv_heads;
	double scale = c->op->scale;
	int64_t pos;
	char s1[96], s2[96];
	if (q->ndim != 2 || k->ndim != 2 || v->ndim != 2 || H < 1 || Hkv < 1 || H % Hkv || q->shape[1] % H ||
	    k->shape[1] != q->shape[1] / H * Hkv || ark_tensor_elems(v) != ark_tensor_elems(k))
		return REF_ERR(c, "heads %d, kv_heads %d do not fit q %s and the caches %s", H, Hkv,
			       shape_str(s1, sizeof s1, q), shape_str(s2, sizeof s2, k));
	if (same_elems(c, q, o) || ref_pos(c, 3, &pos))
		return ARK_ERR;
	int64_t T = q->shape[0], E = q->shape[1], L = k->shape[0], Ekv = k->shape[1], Dh = E / H, G = H / Hkv;
	if (pos < 0 || pos + T > L)
		return REF_ERR(c, "position '%s' is %lld: rows pos..pos+%lld are outside the %lld rows of the cache '%s'",
			       tname(in_t(c, 3)), (long long)pos, (long long)(T - 1), (long long)L, tname(k));
	const void *qb = in_b(c, 0), *kb = in_b(c, 1), *vb = in_b(c, 2);
	void *ob = out_b(c, 0);
	double *p = malloc((size_t)L * sizeof *p);
	if (!p)
		return REF_ERR(c, "out of memory");
	for (int64_t t = 0; t < T; t++)
		for (int64_t h = 0; h < H; h++) {
			int64_t kvh = h / G, n = pos + t + 1, qrow = t * E + h * Dh;
			double mx = -INFINITY, sum = 0;
			for (int64_t j = 0; j < n; j++) {
				double d = 0;
				for (int64_t x = 0; x < Dh; x++)
					d += (double)ark_get(qb, q->dtype, qrow + x) * ark_get(kb, k->dtype, j * Ekv + kvh * Dh + x);
				p[j] = d * scale;
				mx = p[j] > mx ? p[j] : mx;
			}
			for (int64_t j = 0; j < n; j++) {
				p[j] = exp(p[j] - mx);
				sum += p[j];
			}
			for (int64_t x = 0; x < Dh; x++) {
				double acc = 0;
				for (int64_t j = 0; j < n; j++)
					acc += p[j] * ark_get(vb, v->dtype, j * Ekv + kvh * Dh + x);
				ark_set(ob, o->dtype, qrow + x, (float)(acc / sum));
			}
		}
	free(p);
	return ARK_OK;
}

/* argmax over the last axis: out int32 [...], the index of the largest value, the smallest index on
 * ties; NaN never wins (a row of NaN only: 0). */
static int ref_argmax(const struct ref_ctx *c)
{
	const struct ark_tensor *x = in_t(c, 0), *o = out_t(c, 0);
	int64_t N = last_dim(x), M = N ? ark_tensor_elems(x) / N : 0;
	if (o->dtype != ARK_INT32 || ark_tensor_elems(o) != M || N < 1 || N > INT32_MAX)
		return REF_ERR(c, "output '%s' is %s with %lld elements, expected int32 with %lld", tname(o),
			       ark_dtype_name(o->dtype), (long long)ark_tensor_elems(o), (long long)M);
	const void *xb = in_b(c, 0);
	int32_t *ob = out_b(c, 0);
	for (int64_t r = 0; r < M; r++) {
		int64_t best = -1;
		float bv = 0;
		for (int64_t j = 0; j < N; j++) {
			float y = ark_get(xb, x->dtype, r * N + j);
			if (!isnan(y) && (best < 0 || y > bv))
				best = j, bv = y;
		}
		ob[r] = (int32_t)(best < 0 ? 0 : best);
	}
	return ARK_OK;
}

/* dequantize: out (fp16, bf16, fp32) = w's blocks dequantised, the same shape, each value rounded once
 * to out's dtype. */
static int ref_dequantize(const struct ref_ctx *c)
{
	const struct ark_tensor *w = in_t(c, 0), *o = out_t(c, 0);
	char s1[96], s2[96];
	int64_t N = last_dim(w), M = N ? ark_tensor_elems(w) / N : 0;
	if (!ark_dtype_quantized(w->dtype) || N % ARK_QBLOCK || ark_dtype_quantized(o->dtype) || o->dtype == ARK_INT32 ||
	    o->ndim != w->ndim || memcmp(o->shape, w->shape, sizeof(int64_t) * (size_t)w->ndim))
		return REF_ERR(c, "input '%s' (%s %s) and output '%s' (%s %s) do not fit", tname(w),
			       ark_dtype_name(w->dtype), shape_str(s1, sizeof s1, w), tname(o), ark_dtype_name(o->dtype),
			       shape_str(s2, sizeof s2, o));
	float *row = malloc((size_t)N * sizeof *row);
	if (!row)
		return REF_ERR(c, "out of memory");
	const size_t rb = (size_t)ark_row_bytes(w->dtype, N);
	int rc = ARK_OK;
	for (int64_t r = 0; r < M && !rc; r++) {
		rc = ark_dequant_row((const char *)in_b(c, 0) + (size_t)r * rb, w->dtype, N, row);
		for (int64_t e = 0; e < N && !rc; e++)
			ark_set(out_b(c, 0), o->dtype, r * N + e, row[e]);
	}
	free(row);
	return rc ? ARK_ERR : ARK_OK;
}

/* The reference of every op, from OP_CATALOG: an op without one does not compile. */
static int (*const ref_of[ARK_OP__COUNT])(const struct ref_ctx *c) = {
#define X(id, name, min_in, max_in, n_out, attrs, flags, ref) [ARK_OP_##id] = ref,
	OP_CATALOG(X)
#undef X
};

int ark_ref_op(const struct ark_op *op, const struct ark_tensor *tensors, void *const *bufs)
{
	struct ref_ctx c = {op, tensors, bufs};
	int n_out;

	if (op->kind >= ARK_OP__COUNT)
		return ark_error("reference of op '%s': unknown op kind %d", op_name(op), op->kind);
	n_out = ref_op_n_out[op->kind] == ARK_NO_OUT ? 0 : ref_op_n_out[op->kind] ? ref_op_n_out[op->kind] : op->n_in;
	if (op->n_in < ref_op_min_in[op->kind] || op->n_in > ref_op_max_in[op->kind] || op->n_out != n_out)
		return REF_ERR(&c, "has %d inputs and %d outputs", op->n_in, op->n_out);
	for (int i = 0; i < op->n_in + op->n_out; i++) {
		int t = i < op->n_in ? op->in[i] : op->out[i - op->n_in];
		if (t < 0)
			return REF_ERR(&c, "tensor index %d", t);
		if (!bufs[t])
			return REF_ERR(&c, "no host buffer for tensor '%s'", tname(&tensors[t]));
		if (tensors[t].ndim < 1 || tensors[t].ndim > ARK_MAX_DIMS || tensors[t].dtype >= ARK_DTYPE__COUNT)
			return REF_ERR(&c, "tensor '%s' has %d dimensions and dtype %d", tname(&tensors[t]),
				       tensors[t].ndim, tensors[t].dtype);
		/* block-quantized: only matmul's b, embedding's table and dequantize's input */
		if (ark_dtype_quantized(tensors[t].dtype) &&
		    !(i == 1 && (op->kind == ARK_OP_MATMUL || op->kind == ARK_OP_EMBEDDING)) &&
		    !(i == 0 && op->kind == ARK_OP_DEQUANTIZE))
			return REF_ERR(&c, "tensor '%s' is %s, which only b of a matmul, the table of an embedding and the "
				       "input of a dequantize may be",
				       tname(&tensors[t]), ark_dtype_name(tensors[t].dtype));
	}
	return ref_of[op->kind](&c);
}

int ark_ref_run(const struct ark_model *m, void *const *bufs)
{
	for (int i = 0; i < m->n_ops; i++) {
		const struct ark_op *op = &m->ops[i];
		if (op->n_in > ARK_MAX_IO || op->n_out > ARK_MAX_IO)
			return ark_error("reference of op '%s': %d inputs and %d outputs", op_name(op), op->n_in,
					 op->n_out);
		for (int j = 0; j < op->n_in + op->n_out; j++) {
			int t = j < op->n_in ? op->in[j] : op->out[j - op->n_in];
			if (t < 0 || t >= m->n_tensors)
				return ark_error("reference of op '%s': tensor index %d out of range (model has %d)",
						 op_name(op), t, m->n_tensors);
		}
		if (ark_ref_op(op, m->tensors, bufs))
			return ARK_ERR;
	}
	return ARK_OK;
}
