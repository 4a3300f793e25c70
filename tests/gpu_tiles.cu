// gpu_tiles.cu: every tile template x dtype on the GPU against the CPU reference (TAP); skips without a GPU.
// Built once a float dtype (the Makefile's gpu_tiles_fp16, _bf16, _fp32: ARK_TILES_* leave the other
// two out), so that the three builds of this large kernel run side by side; each runs its dtype's
// cases. Built without those macros, one binary runs them all.
#include <math.h>

#include "ark.h"
#define ARK_TILES_ATTENTION 1 /* every template, attention included (off unless asked for) */
#define ARK_TILES_DECODE 1    /* and rope, decode attention, argmax */
#define ARK_TILES_QUANT 1     /* and the q4_1 / q8_0 paths */
#include "ark_tiles.cuh"

/* Whether this build has the tiles of float dtype dt (ark_tiles.cuh's ARK_TILES_*): its cases run. */
static bool built(int dt)
{
	return (dt == ARK_FP16 && ARK_TILES_FP16) || (dt == ARK_BF16 && ARK_TILES_BF16) || (dt == ARK_FP32 && ARK_TILES_FP32);
}

/* Every template, through ark_tile's dispatch, with the most shared memory any of them needs. */
struct harness_tiles {
	static constexpr int smem = ARK_TILES_SMEM_BYTES;
	static __device__ __forceinline__ bool run(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
	{
		return ark_tile(p, t, e);
	}
};
#include "gpu_harness.cuh"

#define ARENA_BYTES (192u << 20)

/* Compares output tensor `o` (GPU result in c.host[o]) with want: relative L2 error <= tol, no NaN
 * (every element written), and every element within tol * max|want| (a single wrong element fails).
 * floor > max|want|: every element within tol * floor instead, and no L2 test (outputs that are all
 * far smaller than what they were computed from, see verdict_matmul). */
static void verdict(tcase &c, int o, const void *want, double tol, bool guards_ok, const std::string &why,
		    double floor = 0)
{
	const ark_tensor &T = c.t[o];
	const int64_t n = ark_tensor_elems(&T);
	double rel = 0, maxw = 0, maxd = 0;
	int64_t bad = 0, worst = 0;
	ark_compare(c.host[o].data(), want, T.dtype, n, &rel, &bad);
	for (int64_t i = 0; i < n; i++)
		maxw = fmax(maxw, fabs(ark_get(want, T.dtype, i)));
	for (int64_t i = 0; i < n; i++) {
		double d = fabs(ark_get(c.host[o].data(), T.dtype, i) - ark_get(want, T.dtype, i));
		if (!(d <= maxd)) {
			maxd = d;
			worst = i;
		}
	}
	const bool pass = guards_ok && bad == 0 && (rel <= tol || maxw < floor) && maxd <= tol * fmax(maxw, floor);
	ok(pass, c.desc, pass ? "" : "rel %.2e max|diff| %.2e at %lld (got %g want %g) max|want| %.2e tol %.0e, %lld NaN %s",
	   rel, maxd, (long long)worst, ark_get(c.host[o].data(), T.dtype, worst), ark_get(want, T.dtype, worst), maxw,
	   tol, (long long)bad, why.c_str());
}

static ark_op op_base(int kind, std::vector<int> in, int out)
{
	ark_op op;
	memset(&op, 0, sizeof op);
	op.name = "op";
	op.kind = (uint16_t)kind;
	op.n_in = (uint8_t)in.size();
	op.n_out = 1;
	for (size_t i = 0; i < in.size(); i++)
		op.in[i] = in[i];
	op.out[0] = out;
	op.eps = 1e-5f;
	return op;
}

/* Op names from the catalog. */
static const char *const op_names[] = {
#define X(id, name, min_in, max_in, n_out, attrs, flags) name,
	OP_LIST(X)
#undef X
};

static const char *act_name(int act)
{
	if (act == ARK_OP_GELU_TANH) /* a variant row: the catalog names it "gelu" too */
		return "gelu(tanh)";
	return act >= 0 && act < ARK_OP__COUNT ? op_names[act] : "none";
}

/* ---- matmul ----------------------------------------------------------------------------------- */

/* The verdict of a matmul (ia, ib, ibias or -1, io of c, out [M, N] in dt; b [N, K] if tb, quantized
 * or not) with activation act and residual ires (-1: none): the reference (on the dequantised b), then
 * act, then the add of ires, each its own op as in a model. */
static void verdict_matmul(tcase &c, int dt, int64_t M, int64_t N, int ia, int ib, int ibias, int io, bool tb, int act,
			   bool guards, const std::string &why, int ires = -1)
{
	std::vector<unsigned char> want(c.t[io].bytes), want2(c.t[io].bytes), want3(c.t[io].bytes);
	const int itmp = c.add("act_out", dt, {M, N}, true), isum = c.add("sum_out", dt, {M, N}, true);
	std::vector<void *> bufs;
	for (auto &h : c.host)
		bufs.push_back(h.data());
	bufs[io] = want.data();
	bufs[itmp] = want2.data();
	bufs[isum] = want3.data();
	std::vector<int> ins = {ia, ib};
	if (ibias >= 0)
		ins.push_back(ibias);
	ark_op op = op_base(ARK_OP_MATMUL, ins, io);
	op.transpose_b = tb;
	ref_or_bail(op, c, bufs);
	int last = io;
	if (act != ARK_ACT_NONE) {
		ref_or_bail(op_base(act, {last}, itmp), c, bufs);
		last = itmp;
	}
	if (ires >= 0) {
		ref_or_bail(op_base(ARK_OP_ADD, {last, ires}, isum), c, bufs);
		last = isum;
	}
	/* bf16: the reference rounds the product and the activation's output each to bf16 where the tile
	 * rounds once, two ulps (2^-6 of the value) apart at worst; where N is 1 the largest output is
	 * that value itself. fp32: two orders of a sum of K products differ by up to ~K 2^-24 of the sum of
	 * the terms' sizes, which cancellation can make far larger than the output (most where N is 1:
	 * 4.8e-5 was seen at K = 8192), so the tolerance grows with K past 1024 */
	const double K = (double)c.t[ia].shape[1];
	/* 16-bit with an activation: the reference rounds the product to the dtype before the activation,
	 * which in the exponential tail of silu, gelu or sigmoid (x near -18: outputs near 1e-7) moves
	 * the output by several percent; where every output lies there (N = 1 and M = 1 can draw that) the
	 * largest output is no scale to judge by, and 1e-3 of the largest product is */
	double floor = 0;
	if (dt != ARK_FP32 && act != ARK_ACT_NONE)
		for (int64_t i = 0; i < ark_tensor_elems(&c.t[io]); i++)
			floor = fmax(floor, 1e-3 * fabs(ark_get(bufs[io], dt, i)));
	/* fp32 with an activation: the sums' rounding is on the scale of the product, which a saturating
	 * activation (tanh, sigmoid) can leave far larger than any output (tanh of sums up to ~8: outputs
	 * at most 1, 1.2e-5 apart from the reference's at K = 518, a rounding of the sums); no
	 * activation's slope passes 1.13 (gelu's), so 1.13 times the largest product is the scale */
	if (dt == ARK_FP32 && act != ARK_ACT_NONE)
		for (int64_t i = 0; i < ark_tensor_elems(&c.t[io]); i++)
			floor = fmax(floor, 1.13 * fabs(ark_get(bufs[io], dt, i)));
	verdict(c, io, bufs[last], dt == ARK_FP32 ? 1e-5 * fmax(1.0, K / 1024) : dt == ARK_BF16 ? 2e-2 : 1e-2, guards, why,
		floor);
}

/* A fused rmsnorm on a (ARK_PRE_RMSNORM, the streaming paths): the op params name gamma (tensor ig of
 * c, [K]) and eps; after the run, the reference norm of a into a new tensor of c, which stands for a
 * in the matmul's reference. */
static void pre_norm_params(ark_opp &p, const tcase &c, int ig)
{
	p.pre = ARK_PRE_RMSNORM;
	p.pre_in = c.t[ig].offset;
	p.f = 1e-5f; /* op_base's eps, which the reference uses */
}
/* The op fused on a (ark_opp.pre) by the reference: rmsnorm(a, gamma) or swiglu(a, y), into a new
 * tensor of c that stands for a in the matmul's reference. */
static int pre_ref(tcase &c, int dt, int pre, int64_t M, int64_t K, int ia, int ig)
{
	const int ih = c.add("a_staged", dt, {M, K}, true);
	std::vector<void *> bufs;
	for (auto &h : c.host)
		bufs.push_back(h.data());
	ref_or_bail(op_base(pre == ARK_PRE_RMSNORM ? ARK_OP_RMSNORM : ARK_OP_SWIGLU, {ia, ig}, ih), c, bufs);
	return ih;
}
/* A fused swiglu on a (ARK_PRE_SWIGLU): the op params name y (tensor iy of c, [M, K] at a's pitch). */
static void pre_glu_params(ark_opp &p, const tcase &c, int iy)
{
	p.pre = ARK_PRE_SWIGLU;
	p.pre_in = c.t[iy].offset;
}
static const char *pre_name(int pre)
{
	return pre == ARK_PRE_RMSNORM ? " rmsnorm(a)" : pre == ARK_PRE_SWIGLU ? " swiglu(a, y)" : "";
}

/* out [M, N] = act(a [M, K] . b + bias) in tiles (tm, tn); splits > 1: MATMUL_PARTIAL over equal K
 * ranges (a multiple of kalign), then REDUCE in a second launch. pad: rows padded to whole 16-byte
 * vectors and one more (codegen/lower_pad.c), the padding poisoned (NaN) and, in out, checked
 * untouched: b's (PAD_B), a's (PAD_A), out's (PAD_OUT). */
enum { PAD_B = 1, PAD_A = 2, PAD_OUT = 4 };
static void case_matmul(int dt, int64_t M, int64_t N, int64_t K, bool tb, bool bias, int act, int tm, int tn,
			int splits = 1, int skew = 0, int64_t kalign = 8, bool residual = false, int pre = ARK_PRE_NONE,
			int pad = 0)
{
	char d[256], pd[32] = "";
	if (pad)
		snprintf(pd, sizeof pd, " padded%s%s%s", pad & PAD_A ? " a" : "", pad & PAD_B ? " b" : "",
			 pad & PAD_OUT ? " out" : "");
	snprintf(d, sizeof d, "matmul %s%s M=%lld N=%lld K=%lld%s%s act=%s%s tile %dx%d%s%s%s", dt_name[dt],
		 pre_name(pre), (long long)M, (long long)N, (long long)K, tb ? " transpose_b" : "",
		 bias ? " bias" : "", act_name(act), residual ? " + residual" : "", tm, tn, splits > 1 ? " split-K" : "",
		 skew ? " misaligned" : "", pd);
	tcase c;
	c.desc = d;
	const int64_t es = ark_dtype_size(dt), brow = (tb ? K : N) * es;
	auto padded = [](int64_t row) { return (uint64_t)(row / 16 + 1) * 16; };
	int ia = c.add("a", dt, {M, K}, false, skew, pad & PAD_A ? padded(K * es) : 0);
	int ib = c.add("b", dt, tb ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}, false, 0,
		       pad & PAD_B ? padded(brow) : 0);
	int ibias = bias ? c.add("bias", dt, {N}, false) : -1;
	int ires = residual ? c.add("residual", dt, {M, N}, false) : -1;
	int ig = pre == ARK_PRE_RMSNORM ? c.add("gamma", dt, {K}, false)
		 : pre == ARK_PRE_SWIGLU ? c.add("y", dt, {M, K}, false, skew, pad & PAD_A ? padded(K * es) : 0)
					 : -1;
	int io = c.add("out", dt, {M, N}, true, 0, pad & PAD_OUT ? padded(N * es) : 0);
	uint64_t ws = splits > 1 ? c.reserve((uint64_t)splits * M * N * 4) : 0;
	upload(c, 1.0f);

	ark_opp p = opp_base(ARK_OP_MATMUL, dt);
	p.flags = (tb ? ARK_OPP_TRANSPOSE_B : 0) | (bias ? ARK_OPP_BIAS : 0) | (residual ? ARK_OPP_RESIDUAL : 0);
	p.act = (uint16_t)act;
	p.splits = (uint32_t)splits;
	p.in[0] = c.t[ia].offset, p.in[1] = c.t[ib].offset, p.in[2] = bias ? c.t[ibias].offset : 0;
	p.in[3] = residual ? c.t[ires].offset : 0;
	if (pre == ARK_PRE_RMSNORM)
		pre_norm_params(p, c, ig);
	else if (pre == ARK_PRE_SWIGLU)
		pre_glu_params(p, c, ig);
	p.out = c.t[io].offset;
	p.ws = ws;
	p.M = M, p.N = N, p.K = K;
	p.istride[0][0] = (int64_t)c.t[ib].pitch / es;
	p.istride[0][1] = (int64_t)c.t[ia].pitch / es;
	p.istride[0][2] = (int64_t)c.t[io].pitch / es;
	std::vector<ark_task> tasks, red;
	const int64_t kstep = splits > 1 ? ((K + splits - 1) / splits + kalign - 1) / kalign * kalign : K;
	for (int64_t m0 = 0; m0 < M; m0 += tm)
		for (int64_t n0 = 0; n0 < N; n0 += tn) {
			const int64_t m1 = m0 + tm < M ? m0 + tm : M, n1 = n0 + tn < N ? n0 + tn : N;
			if (splits == 1) {
				tasks.push_back(task(ARK_T_MATMUL, m0, m1, n0, n1, 0, K));
				continue;
			}
			for (int s = 0; s < splits; s++) {
				const int64_t k0 = s * kstep < K ? s * kstep : K;
				const int64_t k1 = k0 + kstep < K ? k0 + kstep : K;
				tasks.push_back(task(ARK_T_MATMUL_PARTIAL, m0, m1, n0, n1, k0, k1, (uint32_t)s));
			}
			red.push_back(task(ARK_T_REDUCE, m0, m1, n0, n1, 0, K));
		}
	launch(p, tasks, d);
	launch(p, red, splits > 1 ? "  reduce" : "");
	std::string why;
	bool guards = download(c, why);

	/* reference: (the fused op,) matmul (+ bias), then the activation and the residual add, ops of their own */
	const int ia_ref = pre ? pre_ref(c, dt, pre, M, K, ia, ig) : ia;
	verdict_matmul(c, dt, M, N, ia_ref, ib, ibias, io, tb, act, guards, why, ires);
}

/* ---- elementwise ------------------------------------------------------------------------------ */

/* Element strides of input shape `in` broadcast to `out` (right-aligned, 0 where broadcast). */
static void bcast_strides(const std::vector<int64_t> &in, const std::vector<int64_t> &out, int64_t *st)
{
	int64_t stride = 1;
	const int off = (int)(out.size() - in.size());
	for (int d = (int)out.size() - 1; d >= 0; d--) {
		const int td = d - off;
		st[d] = 0;
		if (td < 0)
			continue;
		st[d] = in[td] == 1 ? 0 : stride;
		stride *= in[td];
	}
}

/* out = kind(a, b) with out viewed as [rows, N] (N = last dim), tiles of (tm rows, tn cols). */
static void case_ew(int dt, int kind, std::vector<int64_t> sa, std::vector<int64_t> sb, int tm, int tn, int skew = 0)
{
	const bool two = kind == ARK_OP_ADD || kind == ARK_OP_MUL || kind == ARK_OP_SWIGLU;
	const bool copy = kind == ARK_OP_COPY;
	std::vector<int64_t> so = sa;
	if (two) { /* broadcast shape */
		so.assign(sa.size() > sb.size() ? sa.size() : sb.size(), 1);
		for (size_t d = 0; d < so.size(); d++) {
			const int64_t x = d + sa.size() >= so.size() ? sa[d + sa.size() - so.size()] : 1;
			const int64_t y = d + sb.size() >= so.size() ? sb[d + sb.size() - so.size()] : 1;
			so[d] = x > y ? x : y;
		}
	}

	auto shp = [](const std::vector<int64_t> &s) {
		std::string r = "[";
		for (size_t i = 0; i < s.size(); i++)
			r += (i ? "," : "") + std::to_string(s[i]);
		return r + "]";
	};
	const bool same = !two || sa == sb;
	tcase c;
	c.desc = std::string("elementwise ") + act_name(kind) + " " + dt_name[dt] + " " + shp(sa) + (two ? "+" + shp(sb) : "") +
		 (same ? " same-shape" : " broadcast") + " tile " + std::to_string(tm) + "x" + std::to_string(tn) +
		 (skew ? " misaligned" : "");
	const int ia = c.add("a", dt, sa, false, skew);
	const int ib = two ? c.add("b", dt, sb, false, skew) : -1;
	const int io = c.add("out", dt, so, true, skew);
	upload(c, 3.0f);

	ark_opp p = opp_base(kind, dt);
	p.flags = same ? ARK_OPP_SAME_SHAPE : 0;
	p.f = 0.37f;
	p.in[0] = c.t[ia].offset;
	p.in[1] = two ? c.t[ib].offset : 0;
	p.out = c.t[io].offset;
	const int64_t N = so.back(), M = ark_tensor_elems(&c.t[io]) / N;
	p.M = M, p.N = N;
	p.ndim = (int32_t)so.size();
	for (size_t d = 0; d < so.size(); d++)
		p.oshape[d] = so[d];
	bcast_strides(sa, so, p.istride[0]);
	if (two)
		bcast_strides(sb, so, p.istride[1]);
	std::vector<ark_task> tasks;
	for (int64_t m0 = 0; m0 < M; m0 += tm)
		for (int64_t n0 = 0; n0 < N; n0 += tn)
			tasks.push_back(task(ARK_T_ELEMENTWISE, m0, m0 + tm < M ? m0 + tm : M, n0, n0 + tn < N ? n0 + tn : N, 0, 0));
	launch(p, tasks);
	std::string why;
	bool guards = download(c, why);

	std::vector<unsigned char> want(c.t[io].bytes);
	if (copy) {
		memcpy(want.data(), c.host[ia].data(), want.size());
	} else {
		std::vector<void *> bufs;
		for (auto &h : c.host)
			bufs.push_back(h.data());
		bufs[io] = want.data();
		ark_op op = op_base(kind, two ? std::vector<int>{ia, ib} : std::vector<int>{ia}, io);
		op.factor = p.f;
		ref_or_bail(op, c, bufs);
	}
	verdict(c, io, want.data(), dt == ARK_FP32 ? 1e-5 : 1e-2, guards, why);
}

/* ---- softmax, layernorm, rmsnorm, l2_normalize ----------------------------------------------- */

static void case_rows(int dt, int tmpl, int64_t M, int64_t N, int rows_per_task, float eps = 1e-5f)
{
	const int kind = tmpl == ARK_T_SOFTMAX ? ARK_OP_SOFTMAX : tmpl == ARK_T_LAYERNORM ? ARK_OP_LAYERNORM
			 : tmpl == ARK_T_L2NORM ? ARK_OP_L2_NORMALIZE : ARK_OP_RMSNORM;
	const char *name = op_names[kind];
	char d[160];
	snprintf(d, sizeof d, "%s %s [%lld, %lld] %d rows per task eps %g", name, dt_name[dt], (long long)M, (long long)N,
		 rows_per_task, eps);
	tcase c;
	c.desc = d;
	const int ia = c.add("a", dt, {M, N}, false);
	const int ig = tmpl == ARK_T_LAYERNORM || tmpl == ARK_T_RMSNORM ? c.add("gamma", dt, {N}, false) : -1;
	const int ibeta = tmpl == ARK_T_LAYERNORM ? c.add("beta", dt, {N}, false) : -1;
	const int io = c.add("out", dt, {M, N}, true);
	upload(c, 4.0f);
	ark_opp p = opp_base(kind, dt);
	p.in[0] = c.t[ia].offset;
	p.in[1] = ig >= 0 ? c.t[ig].offset : 0;
	p.in[2] = ibeta >= 0 ? c.t[ibeta].offset : 0;
	p.out = c.t[io].offset;
	p.M = M, p.N = N;
	p.f = eps;
	std::vector<ark_task> tasks;
	for (int64_t m0 = 0; m0 < M; m0 += rows_per_task)
		tasks.push_back(task(tmpl, m0, m0 + rows_per_task < M ? m0 + rows_per_task : M, 0, N, 0, 0));
	launch(p, tasks);
	std::string why;
	bool guards = download(c, why);

	std::vector<unsigned char> want(c.t[io].bytes);
	std::vector<void *> bufs;
	for (auto &h : c.host)
		bufs.push_back(h.data());
	bufs[io] = want.data();
	std::vector<int> ins = {ia};
	if (ig >= 0)
		ins.push_back(ig);
	if (ibeta >= 0)
		ins.push_back(ibeta);
	ark_op op = op_base(kind, ins, io);
	op.eps = p.f;
	ref_or_bail(op, c, bufs);
	verdict(c, io, want.data(), dt == ARK_FP32 ? 1e-5 : 1e-2, guards, why);
}

/* ---- reduce_mean ------------------------------------------------------------------------------ */

/* out = reduce_mean(x, [mask]) over `axis`, tiled as codegen/tile.c cuts it: with Q = D = 1 (the
 * reduced elements contiguous) ranges of `tr` outputs, else tiles of (tr rows, tc columns) of out
 * viewed as [P * Q, D]. mask_dt < 0: no mask; else a mask of that dtype with zeros, ones and halves,
 * row 0 of it all zeros (its outputs must be zeros, not NaN). */
static void case_reduce_mean(int dt, std::vector<int64_t> sx, int axis, int mask_dt, int64_t tr, int64_t tc,
			     int skew = 0)
{
	const int nd = (int)sx.size();
	int64_t P = 1, S = sx[axis], Q = 1, D = axis < nd - 1 ? sx[nd - 1] : 1;
	for (int d = 0; d < axis; d++)
		P *= sx[d];
	for (int d = axis + 1; d < nd - 1; d++)
		Q *= sx[d];
	std::vector<int64_t> so, sm(sx.begin(), sx.end() - 1);
	for (int d = 0; d < nd; d++)
		if (d != axis)
			so.push_back(sx[d]);
	if (so.empty())
		so.push_back(1);
	std::string shp = "[";
	for (int d = 0; d < nd; d++)
		shp += (d ? "," : "") + std::to_string(sx[d]);
	char desc[256];
	snprintf(desc, sizeof desc, "reduce_mean %s %s] axis %d %s%s tile %lldx%lld%s", dt_name[dt], shp.c_str(), axis,
		 mask_dt >= 0 ? "mask " : "no mask", mask_dt >= 0 ? dt_name[mask_dt] : "", (long long)tr, (long long)tc,
		 skew ? " misaligned" : "");
	tcase c;
	c.desc = desc;
	const int ix = c.add("x", dt, sx, false, skew);
	const int im = mask_dt >= 0 ? c.add("mask", mask_dt, sm, false) : -1;
	const int io = c.add("out", dt, so, true, skew);
	upload(c, 3.0f);
	if (im >= 0) { /* a mask of zeros, ones and halves, from the case's seed; its first row all zeros */
		const int64_t n = ark_tensor_elems(&c.t[im]), row = sm.back();
		uint64_t h = ++g_seed * 0x9e3779b97f4a7c15ull;
		for (int64_t i = 0; i < n; i++) {
			h ^= h >> 29, h *= 0xbf58476d1ce4e5b9ull, h ^= h >> 32;
			const float v = i < row ? 0.0f : h % 5 == 0 ? 0.0f : h % 5 == 1 ? 0.5f : 1.0f;
			ark_set(c.host[im].data(), mask_dt, i, v);
		}
		put(c, im);
	}
	ark_opp p = opp_base(ARK_OP_REDUCE_MEAN, dt);
	p.flags = im >= 0 ? ARK_OPP_MASK : 0;
	p.mask_dtype = (uint8_t)(im >= 0 ? mask_dt : 0);
	p.in[0] = c.t[ix].offset;
	p.in[1] = im >= 0 ? c.t[im].offset : 0;
	p.out = c.t[io].offset;
	p.M = P * Q, p.N = D, p.K = S;
	p.oshape[0] = P, p.oshape[1] = S, p.oshape[2] = Q, p.oshape[3] = D;
	std::vector<ark_task> tasks;
	for (int64_t r0 = 0; r0 < P * Q; r0 += tr)
		for (int64_t c0 = 0; c0 < D; c0 += tc)
			tasks.push_back(task(ARK_T_REDUCE_MEAN, r0, std::min(P * Q, r0 + tr), c0, std::min(D, c0 + tc), 0, 0));
	launch(p, tasks, desc);
	std::string why;
	bool guards = download(c, why);

	std::vector<unsigned char> want(c.t[io].bytes);
	std::vector<void *> bufs;
	for (auto &h : c.host)
		bufs.push_back(h.data());
	bufs[io] = want.data();
	ark_op op = op_base(ARK_OP_REDUCE_MEAN, im >= 0 ? std::vector<int>{ix, im} : std::vector<int>{ix}, io);
	op.axis = (int8_t)axis;
	ref_or_bail(op, c, bufs);
	/* relative to the largest output, but never to less than 0.01 (the inputs are of magnitude ~1.5):
	 * the mean of 4097 values of [-3, 3] can be ~1e-4, where fp32 sums in another order than the
	 * reference's differ by more than 1e-5 of it (seen once in 13 runs); a value of the inputs'
	 * magnitude left out or counted twice moves such a mean by ~4e-4, thousands of times 1e-7 */
	verdict(c, io, want.data(), dt == ARK_FP32 ? 1e-5 : 1e-2, guards, why, 0.01);
	if (im >= 0 && nd == 3 && axis == 1) { /* [B, S, D]: batch 0's mask is all zeros, its D outputs zeros */
		bool zero = true;
		for (int64_t e = 0; e < D; e++)
			zero &= ark_get(c.host[io].data(), dt, e) == 0.0f;
		ok(zero, c.desc + ": the batch with an all-zero mask is zeros");
	}
}

/* ---- embedding and the strided copy ------------------------------------------------------------ */

/* The embedding's reference rows in want (dt [n, D]) plus a fused add's x [n, D] (ARK_OPP_RESIDUAL),
 * summed in fp32 and rounded once, as the add computes it. */
static void add_rows(int dt, void *want, const void *x, int64_t n, int64_t D)
{
	for (int64_t e = 0; e < n * D; e++)
		ark_set(want, dt, e, ark_get(want, dt, e) + ark_get(x, dt, e));
}

/* out [n, D] = table [V, D] rows ids[n], rows_per task: fresh random ids in 0..V-1 with 0 and V - 1
 * among them; skew misaligns the table (no 16-byte vectors). bad >= 0: id `bad` written at row
 * n / 2, which must come out as zeros, with the fault recorded by that row's task and no other.
 * res >= 0: with a fused add of x [n, D] (ARK_OPP_RESIDUAL) misaligned by res bytes. */
static void case_embedding(int dt, int64_t n, int64_t V, int64_t D, int64_t rows_per, int skew, int64_t bad = -1,
			   int res = -1)
{
	char d[200];
	snprintf(d, sizeof d, "embedding %s %lld ids, table [%lld, %lld], %lld rows a task%s%s%s", dt_name[dt], (long long)n,
		 (long long)V, (long long)D, (long long)rows_per, skew ? ", misaligned table" : "",
		 bad >= 0 ? ", one id out of range" : "", res < 0 ? "" : res ? ", + misaligned x" : ", + x");
	tcase c;
	c.desc = d;
	const int ii = c.add("ids", ARK_INT32, {n}, false);
	const int it = c.add("table", dt, {V, D}, false, skew);
	const int ix = res >= 0 ? c.add("x", dt, {n, D}, false, res) : -1;
	const int io = c.add("out", dt, {n, D}, true);
	upload(c, 1.0f);
	int32_t *ids = reinterpret_cast<int32_t *>(c.host[ii].data());
	ark_fill_random_ints(ids, n, ++g_seed, (int32_t)V);
	ids[0] = 0;
	ids[n - 1] = (int32_t)(V - 1);
	if (bad >= 0)
		ids[n / 2] = (int32_t)bad;
	CUDA_CHECK(cudaMemcpy(g_arena + c.t[ii].offset, ids, c.t[ii].bytes, cudaMemcpyHostToDevice));
	ark_opp p = opp_base(ARK_OP_EMBEDDING, dt);
	p.in[0] = c.t[ii].offset, p.in[1] = c.t[it].offset, p.out = c.t[io].offset;
	p.M = n, p.N = D, p.K = V;
	if (ix >= 0)
		p.flags |= ARK_OPP_RESIDUAL, p.in[3] = c.t[ix].offset;
	std::vector<ark_task> tasks;
	for (int64_t r0 = 0; r0 < n; r0 += rows_per)
		tasks.push_back(task(ARK_T_EMBEDDING, r0, r0 + rows_per < n ? r0 + rows_per : n, 0, D, 0, 0));
	launch(p, tasks, d);
	std::string why;
	bool guards = download(c, why);
	std::vector<std::vector<uint32_t>> faults = faults_of(tasks.size());
	if (bad >= 0) { /* the reference refuses the id: compare with a valid id there, zeros in that row */
		const uint32_t want[3] = {(uint32_t)(n / 2 / rows_per), (uint32_t)(n / 2), (uint32_t)bad};
		if (faults.size() != 1 || faults[0] != std::vector<uint32_t>(want, want + 3))
			why += "fault not recorded as (task, row, id) ", guards = false;
		ids[n / 2] = 0;
	} else if (!faults.empty()) {
		why += "a fault recorded for valid ids ", guards = false;
	}
	std::vector<unsigned char> want(c.t[io].bytes);
	std::vector<void *> bufs;
	for (auto &h : c.host)
		bufs.push_back(h.data());
	bufs[io] = want.data();
	ref_or_bail(op_base(ARK_OP_EMBEDDING, {ii, it}, io), c, bufs);
	if (bad >= 0)
		memset(want.data() + (size_t)(n / 2) * D * ark_dtype_size(dt), 0, (size_t)D * ark_dtype_size(dt));
	if (ix >= 0)
		add_rows(dt, want.data(), c.host[ix].data(), n, D);
	/* rows copied as they are, or summed once as the add sums them */
	const bool same = memcmp(c.host[io].data(), want.data(), want.size()) == 0;
	if (!same)
		why += "bytes differ ";
	verdict(c, io, want.data(), 0.0, guards && same, why);
}

/* ---- block-quantized weights (q4_1, q8_0) ------------------------------------------------------ */

static const char *qname(int qdt) { return qdt == ARK_Q4_1 ? "q4_1" : "q8_0"; }

/* out [M, N] = act(a [M, K] (dt) . b^T + bias) with b [N, K] in qdt blocks (fresh random valid blocks),
 * tiles (tm, tn); splits > 1: MATMUL_PARTIAL over K ranges of a multiple of 64, then REDUCE. Against
 * the reference on the dequantised b, outputs poisoned. */
static void case_matmul_q(int dt, int qdt, int64_t M, int64_t N, int64_t K, bool bias, int act, int tm, int tn,
			  int splits = 1, int skew = 0, int pre = ARK_PRE_NONE)
{
	char d[256];
	snprintf(d, sizeof d, "matmul %s%s x %s M=%lld N=%lld K=%lld transpose_b%s act=%s tile %dx%d%s%s", dt_name[dt],
		 pre_name(pre), qname(qdt), (long long)M, (long long)N, (long long)K, bias ? " bias" : "",
		 act_name(act), tm, tn, splits > 1 ? " split-K" : "", skew ? " misaligned a" : "");
	tcase c;
	c.desc = d;
	const int ia = c.add("a", dt, {M, K}, false, skew);
	const int ib = c.add("b", qdt, {N, K}, false);
	const int ibias = bias ? c.add("bias", dt, {N}, false) : -1;
	const int ig = pre == ARK_PRE_RMSNORM ? c.add("gamma", dt, {K}, false)
		       : pre == ARK_PRE_SWIGLU ? c.add("y", dt, {M, K}, false, skew)
					       : -1;
	const int io = c.add("out", dt, {M, N}, true);
	const uint64_t ws = splits > 1 ? c.reserve((uint64_t)splits * M * N * 4) : 0;
	upload(c, 1.0f);

	ark_opp p = opp_base(ARK_OP_MATMUL, dt);
	if (pre == ARK_PRE_RMSNORM)
		pre_norm_params(p, c, ig);
	else if (pre == ARK_PRE_SWIGLU)
		pre_glu_params(p, c, ig);
	p.wdtype = (uint8_t)qdt;
	p.flags = ARK_OPP_TRANSPOSE_B | (bias ? ARK_OPP_BIAS : 0);
	p.act = (uint16_t)act;
	p.splits = (uint32_t)splits;
	p.in[0] = c.t[ia].offset, p.in[1] = c.t[ib].offset, p.in[2] = bias ? c.t[ibias].offset : 0;
	p.out = c.t[io].offset;
	p.ws = ws;
	p.M = M, p.N = N, p.K = K;
	std::vector<ark_task> tasks, red;
	const int64_t kstep = splits > 1 ? ((K + splits - 1) / splits + 63) / 64 * 64 : K;
	for (int64_t m0 = 0; m0 < M; m0 += tm)
		for (int64_t n0 = 0; n0 < N; n0 += tn) {
			const int64_t m1 = m0 + tm < M ? m0 + tm : M, n1 = n0 + tn < N ? n0 + tn : N;
			if (splits == 1) {
				tasks.push_back(task(ARK_T_MATMUL, m0, m1, n0, n1, 0, K));
				continue;
			}
			for (int s = 0; s < splits; s++) {
				const int64_t k0 = s * kstep < K ? s * kstep : K;
				const int64_t k1 = k0 + kstep < K ? k0 + kstep : K;
				tasks.push_back(task(ARK_T_MATMUL_PARTIAL, m0, m1, n0, n1, k0, k1, (uint32_t)s));
			}
			red.push_back(task(ARK_T_REDUCE, m0, m1, n0, n1, 0, K));
		}
	launch(p, tasks, d);
	launch(p, red, splits > 1 ? "  reduce" : "");
	std::string why;
	bool guards = download(c, why);

	const int ia_ref = pre ? pre_ref(c, dt, pre, M, K, ia, ig) : ia;
	verdict_matmul(c, dt, M, N, ia_ref, ib, ibias, io, true, act, guards, why);
}

/* out [n, D] (dt) = the rows ids[n] of a qdt table [V, D], dequantised; ids 0 and V - 1 always drawn;
 * bad >= 0: id `bad` at row n / 2, which must come out as zeros with the fault recorded. */
static void case_embedding_q(int dt, int qdt, int64_t n, int64_t V, int64_t D, int64_t rows_per, int64_t bad = -1,
			     int res = -1)
{
	char d[200];
	snprintf(d, sizeof d, "embedding %s table [%lld, %lld] -> %s, %lld ids, %lld rows a task%s%s", qname(qdt),
		 (long long)V, (long long)D, dt_name[dt], (long long)n, (long long)rows_per,
		 bad >= 0 ? ", one id out of range" : "", res < 0 ? "" : res ? ", + misaligned x" : ", + x");
	tcase c;
	c.desc = d;
	const int ii = c.add("ids", ARK_INT32, {n}, false);
	const int it = c.add("table", qdt, {V, D}, false);
	const int ix = res >= 0 ? c.add("x", dt, {n, D}, false, res) : -1;
	const int io = c.add("out", dt, {n, D}, true);
	upload(c, 1.0f);
	int32_t *ids = reinterpret_cast<int32_t *>(c.host[ii].data());
	ark_fill_random_ints(ids, n, ++g_seed, (int32_t)V);
	ids[0] = 0;
	ids[n - 1] = (int32_t)(V - 1);
	if (bad >= 0)
		ids[n / 2] = (int32_t)bad;
	CUDA_CHECK(cudaMemcpy(g_arena + c.t[ii].offset, ids, c.t[ii].bytes, cudaMemcpyHostToDevice));
	ark_opp p = opp_base(ARK_OP_EMBEDDING, dt);
	p.wdtype = (uint8_t)qdt;
	p.in[0] = c.t[ii].offset, p.in[1] = c.t[it].offset, p.out = c.t[io].offset;
	p.M = n, p.N = D, p.K = V;
	if (ix >= 0)
		p.flags |= ARK_OPP_RESIDUAL, p.in[3] = c.t[ix].offset;
	std::vector<ark_task> tasks;
	for (int64_t r0 = 0; r0 < n; r0 += rows_per)
		tasks.push_back(task(ARK_T_EMBEDDING, r0, r0 + rows_per < n ? r0 + rows_per : n, 0, D, 0, 0));
	launch(p, tasks, d);
	std::string why;
	bool guards = download(c, why);
	std::vector<std::vector<uint32_t>> faults = faults_of(tasks.size());
	if (bad >= 0) {
		const uint32_t want[3] = {(uint32_t)(n / 2 / rows_per), (uint32_t)(n / 2), (uint32_t)bad};
		if (faults.size() != 1 || faults[0] != std::vector<uint32_t>(want, want + 3))
			why += "fault not recorded as (task, row, id) ", guards = false;
		ids[n / 2] = 0;
	} else if (!faults.empty()) {
		why += "a fault recorded for valid ids ", guards = false;
	}
	std::vector<unsigned char> want(c.t[io].bytes);
	std::vector<void *> bufs;
	for (auto &h : c.host)
		bufs.push_back(h.data());
	bufs[io] = want.data();
	ref_or_bail(op_base(ARK_OP_EMBEDDING, {ii, it}, io), c, bufs);
	if (bad >= 0)
		memset(want.data() + (size_t)(n / 2) * D * ark_dtype_size(dt), 0, (size_t)D * ark_dtype_size(dt));
	if (ix >= 0)
		add_rows(dt, want.data(), c.host[ix].data(), n, D);
	verdict(c, io, want.data(), dt == ARK_FP32 ? 1e-6 : 1e-2, guards, why);
}

/* DEQUANT of w [R, N] (qdt blocks at arena offset w) into out (dt at offset out): its op params, and
 * tasks of rows_per rows each. */
static ark_opp dequant_opp(int dt, int qdt, uint64_t w, uint64_t out, int64_t R, int64_t N)
{
	ark_opp p = opp_base(ARK_OP_DEQUANTIZE, dt);
	p.wdtype = (uint8_t)qdt;
	p.in[0] = w, p.out = out;
	p.M = R, p.N = N;
	return p;
}
static std::vector<ark_task> dequant_tasks(int64_t R, int64_t N, int64_t rows_per)
{
	std::vector<ark_task> tasks;
	for (int64_t r0 = 0; r0 < R; r0 += rows_per)
		tasks.push_back(task(ARK_T_DEQUANT, r0, r0 + rows_per < R ? r0 + rows_per : R, 0, N, 0, 0));
	return tasks;
}

/* out [R, N] (dt) = w [R, N] in qdt blocks, dequantised by DEQUANT tasks of rows_per rows each (fresh
 * random blocks, out poisoned; skew: out off a 16-byte boundary, element stores). Against the reference
 * dequantize: each value d * q + m in fp32, rounded once. */
static void case_dequant(int dt, int qdt, int64_t R, int64_t N, int64_t rows_per, int skew = 0)
{
	char d[200];
	snprintf(d, sizeof d, "dequantize %s [%lld, %lld] -> %s, %lld rows a task%s", qname(qdt), (long long)R,
		 (long long)N, dt_name[dt], (long long)rows_per, skew ? ", out misaligned" : "");
	tcase c;
	c.desc = d;
	const int iw = c.add("w", qdt, {R, N}, false);
	const int io = c.add("out", dt, {R, N}, true, skew);
	upload(c, 1.0f);
	launch(dequant_opp(dt, qdt, c.t[iw].offset, c.t[io].offset, R, N), dequant_tasks(R, N, rows_per), d);
	std::string why;
	bool guards = download(c, why);
	std::vector<unsigned char> want(c.t[io].bytes);
	std::vector<void *> bufs;
	for (auto &h : c.host)
		bufs.push_back(h.data());
	bufs[io] = want.data();
	ref_or_bail(op_base(ARK_OP_DEQUANTIZE, {iw}, io), c, bufs);
	/* the same fp32 arithmetic rounded once: at most an ulp of the output's dtype apart (a host compiler
	 * that fuses d * q + m into one rounding) */
	verdict(c, io, want.data(), dt == ARK_FP32 ? 1e-6 : dt == ARK_BF16 ? 8e-3 : 1e-3, guards, why);
}

/* A quantized matmul of M > ARK_MM_SMALL_M rows as arkgen lowers it (codegen/lower_quant.c): DEQUANT
 * tasks of b [N, K] into a buffer of a's dtype, then MATMUL tiles (tm, tn) of out = a . buffer^T (+ bias,
 * act) on the ordinary paths (tensor cores for fp16/bf16). Against the reference of the one quantized
 * matmul (b dequantised exactly), outputs and buffer poisoned. */
static void case_matmul_q_lowered(int dt, int qdt, int64_t M, int64_t N, int64_t K, bool bias, int act, int tm, int tn,
				  int64_t dq_rows)
{
	char d[256];
	snprintf(d, sizeof d, "matmul %s x %s M=%lld N=%lld K=%lld lowered: dequantize (%lld rows a task) + matmul "
		 "tile %dx%d%s act=%s", dt_name[dt], qname(qdt), (long long)M, (long long)N, (long long)K,
		 (long long)dq_rows, tm, tn, bias ? " bias" : "", act_name(act));
	tcase c;
	c.desc = d;
	const int ia = c.add("a", dt, {M, K}, false);
	const int ib = c.add("b", qdt, {N, K}, false);
	const int ibias = bias ? c.add("bias", dt, {N}, false) : -1;
	const int ibd = c.add("b_dequant", dt, {N, K}, true);
	const int io = c.add("out", dt, {M, N}, true);
	upload(c, 1.0f);

	launch(dequant_opp(dt, qdt, c.t[ib].offset, c.t[ibd].offset, N, K), dequant_tasks(N, K, dq_rows), "  dequantize");

	ark_opp p = opp_base(ARK_OP_MATMUL, dt);
	p.flags = ARK_OPP_TRANSPOSE_B | (bias ? ARK_OPP_BIAS : 0);
	p.act = (uint16_t)act;
	p.in[0] = c.t[ia].offset, p.in[1] = c.t[ibd].offset, p.in[2] = bias ? c.t[ibias].offset : 0;
	p.out = c.t[io].offset;
	p.M = M, p.N = N, p.K = K;
	std::vector<ark_task> tasks;
	for (int64_t m0 = 0; m0 < M; m0 += tm)
		for (int64_t n0 = 0; n0 < N; n0 += tn)
			tasks.push_back(task(ARK_T_MATMUL, m0, m0 + tm < M ? m0 + tm : M, n0, n0 + tn < N ? n0 + tn : N, 0, K));
	launch(p, tasks, d);
	std::string why;
	bool guards = download(c, why);

	verdict_matmul(c, dt, M, N, ia, ib, ibias, io, true, act, guards, why);
}

/* Every quantized case: matmul M = 1, 3, 16, 40 x N = 1, 7, 576, 1536 x K = 32, 576, 1536, 8192 for
 * both dtypes, the activation dtype, bias, activation and tile width drawn in turn; split-K; a
 * misaligned a (a view); embeddings; dequantize tiles and quantized matmuls of more rows lowered to
 * dequantize + matmul. */
static void cases_quant(void)
{
	int i = 0;
	for (int qdt : {ARK_Q4_1, ARK_Q8_0})
		for (int64_t M : {1, 3, 16, 40})
			for (int64_t N : {1, 7, 576, 1536})
				for (int64_t K : {32, 576, 1536, 8192}) {
					const int dt = i % ARK_FLOAT_DTYPES;
					if (!built(dt)) {
						i++;
						continue;
					}
					const int act = i % 5 == 1 ? ARK_OP_SILU : i % 5 == 3 ? ARK_OP_GELU : ARK_ACT_NONE;
					const int tm = M <= 16 ? (int)M : i % 2 ? 40 : 16;
					const int tn = i % 3 == 0 ? 128 : i % 3 == 1 ? 16 : 100;
					case_matmul_q(dt, qdt, M, N, K, i % 2 == 0, act, tm, tn);
					i++;
				}
	for (int qdt : {ARK_Q4_1, ARK_Q8_0})
		for (int dt = 0; dt < ARK_FLOAT_DTYPES; dt++) {
			if (!built(dt))
				continue;
			case_matmul_q(dt, qdt, 1, 576, 8192, true, ARK_ACT_NONE, 1, 64, 4);
			case_matmul_q(dt, qdt, 3, 1536, 1536, false, ARK_OP_SILU, 3, 128, 3);
			case_matmul_q(dt, qdt, 40, 7, 8192, true, ARK_ACT_NONE, 40, 7, 5);
			case_matmul_q(dt, qdt, 2, 100, 576, true, ARK_ACT_NONE, 2, 100, 1, dt == ARK_FP32 ? 4 : 2);
			case_matmul_q(dt, qdt, 128, 96, 4096, false, ARK_OP_GELU, 128, 96);
			/* an rmsnorm fused on a: one row, rows of a 16-row block, split-K, a off 16 bytes */
			case_matmul_q(dt, qdt, 1, 576, 2048, false, ARK_ACT_NONE, 1, 64, 1, 0, ARK_PRE_RMSNORM);
			case_matmul_q(dt, qdt, 5, 100, 1536, true, ARK_OP_SILU, 5, 100, 2, 0, ARK_PRE_RMSNORM);
			case_matmul_q(dt, qdt, 16, 7, 8192, false, ARK_ACT_NONE, 16, 7, 4, 0, ARK_PRE_RMSNORM);
			case_matmul_q(dt, qdt, 2, 64, 576, true, ARK_ACT_NONE, 2, 64, 1, dt == ARK_FP32 ? 4 : 2, ARK_PRE_RMSNORM);
			/* a swiglu fused on a: one row, split-K, 16 rows, a and y off 16 bytes */
			case_matmul_q(dt, qdt, 1, 576, 1536, false, ARK_ACT_NONE, 1, 64, 1, 0, ARK_PRE_SWIGLU);
			case_matmul_q(dt, qdt, 3, 100, 8192, true, ARK_ACT_NONE, 3, 100, 4, 0, ARK_PRE_SWIGLU);
			case_matmul_q(dt, qdt, 16, 7, 2048, false, ARK_OP_SILU, 16, 7, 1, 0, ARK_PRE_SWIGLU);
			case_matmul_q(dt, qdt, 2, 64, 576, true, ARK_ACT_NONE, 2, 64, 1, dt == ARK_FP32 ? 4 : 2, ARK_PRE_SWIGLU);
			case_embedding_q(dt, qdt, 37, 500, 96, 4);
			case_embedding_q(dt, qdt, 9, 3, 32, 2);
			case_embedding_q(dt, qdt, 64, 49152, 576, 16);
			case_embedding_q(dt, qdt, 6, 40, 4128, 4); /* rows of many passes of the threads */
			case_embedding_q(dt, qdt, 33, 50, 64, 5, 50);
			case_embedding_q(dt, qdt, 33, 50, 64, 4, -7);
			case_embedding_q(dt, qdt, 37, 500, 96, 4, -1, 0); /* with a fused add */
			case_embedding_q(dt, qdt, 6, 40, 4128, 4, -1, dt == ARK_FP32 ? 4 : 2); /* x off its 16-byte vectors */
			case_embedding_q(dt, qdt, 33, 50, 64, 5, 50, 0);
			case_embedding_q(dt, qdt, 600, 50, 64, 600, 77);
			/* dequantize: odd row counts, one block a row, rows split unevenly, chunks of more than
			 * ARK_DQ_BLOCKS blocks, an output off its 16-byte boundary */
			case_dequant(dt, qdt, 1, 32, 1);
			case_dequant(dt, qdt, 77, 160, 20);
			case_dequant(dt, qdt, 7, 96, 3);
			case_dequant(dt, qdt, 397, 576, 13);
			case_dequant(dt, qdt, 129, 4096, 129);
			case_dequant(dt, qdt, 33, 8192, 5);
			case_dequant(dt, qdt, 61, 224, 8, dt == ARK_FP32 ? 4 : 2);
			/* a quantized matmul of more than 16 rows, lowered: 17, 100 and 397 rows */
			case_matmul_q_lowered(dt, qdt, 17, 77, 160, true, ARK_ACT_NONE, 17, 64, 20);
			case_matmul_q_lowered(dt, qdt, 100, 576, 1536, false, ARK_OP_SILU, 64, 128, 9);
			case_matmul_q_lowered(dt, qdt, 397, 448, 2048, true, ARK_OP_GELU, 128, 128, 7);
		}
}

/* A slice (axis, start, len) or a transpose (dims a, b) of x [shape] that has to copy: STRIDED over
 * out's elements in chunks, against the reference op. */
static void case_strided(int dt, std::vector<int64_t> shape, int kind, int a, int64_t b, int64_t len, int64_t chunk)
{
	const int nd = (int)shape.size();
	std::vector<int64_t> oshape = shape;
	int64_t st[ARK_MAX_DIMS], n = 1;
	for (int d = nd - 1; d >= 0; d--)
		st[d] = n, n *= shape[d];
	ark_opp p = opp_base(kind, dt);
	memset(p.istride, 0, sizeof p.istride);
	for (int d = 0; d < nd; d++)
		p.istride[0][d] = st[d];
	if (kind == ARK_OP_SLICE) {
		oshape[a] = len;
		p.K = b * st[a];
	} else {
		std::swap(oshape[a], oshape[b]);
		std::swap(p.istride[0][a], p.istride[0][b]);
	}
	std::string sh;
	for (int d = 0; d < nd; d++)
		sh += (d ? ", " : "[") + std::to_string(shape[d]);
	char d[200];
	if (kind == ARK_OP_SLICE)
		snprintf(d, sizeof d, "strided copy %s: slice of %s], axis %d, %lld..%lld, chunks of %lld", dt_name[dt],
			 sh.c_str(), a, (long long)b, (long long)(b + len), (long long)chunk);
	else
		snprintf(d, sizeof d, "strided copy %s: transpose of %s], axes %d and %lld, chunks of %lld", dt_name[dt],
			 sh.c_str(), a, (long long)b, (long long)chunk);
	tcase c;
	c.desc = d;
	const int ix = c.add("x", dt, shape, false);
	const int io = c.add("out", dt, oshape, true);
	upload(c, 1.0f);
	p.in[0] = c.t[ix].offset, p.out = c.t[io].offset;
	p.ndim = nd;
	for (int k = 0; k < nd; k++)
		p.oshape[k] = oshape[k];
	const int64_t E = ark_tensor_elems(&c.t[io]);
	p.M = E / oshape[nd - 1], p.N = oshape[nd - 1];
	std::vector<ark_task> tasks;
	for (int64_t k0 = 0; k0 < E; k0 += chunk)
		tasks.push_back(task(ARK_T_STRIDED, 0, 1, 0, 1, k0, k0 + chunk < E ? k0 + chunk : E));
	launch(p, tasks, d);
	std::string why;
	bool guards = download(c, why);
	std::vector<unsigned char> want(c.t[io].bytes);
	std::vector<void *> bufs;
	for (auto &h : c.host)
		bufs.push_back(h.data());
	bufs[io] = want.data();
	ark_op op = op_base(kind, {ix}, io);
	op.axis = (int8_t)a;
	op.start = b;
	op.dims[0] = a, op.dims[1] = (int32_t)b;
	ref_or_bail(op, c, bufs);
	const bool same = memcmp(c.host[io].data(), want.data(), want.size()) == 0;
	if (!same)
		why += "bytes differ ";
	verdict(c, io, want.data(), 0.0, guards && same, why);
}

/* A concat of inputs [.., n_j, ..] along `axis` that has to copy: one STRIDED entry per input (its
 * elements, placed in out through out's strides), chunks of `chunk`, against the reference. */
static void case_concat_copy(int dt, std::vector<int64_t> shape, int axis, std::vector<int64_t> lens, int64_t chunk)
{
	const int nd = (int)shape.size();
	std::vector<int64_t> oshape = shape;
	oshape[axis] = 0;
	for (int64_t l : lens)
		oshape[axis] += l;
	char d[200];
	snprintf(d, sizeof d, "strided copy %s: concat of %zu inputs along axis %d of %d, chunks of %lld", dt_name[dt],
		 lens.size(), axis, nd, (long long)chunk);
	tcase c;
	c.desc = d;
	std::vector<int> ins;
	static const char *const names[] = {"x0", "x1", "x2", "x3"};
	for (size_t j = 0; j < lens.size(); j++) {
		std::vector<int64_t> s = shape;
		s[axis] = lens[j];
		ins.push_back(c.add(names[j], dt, s, false, j % 2 ? (dt == ARK_FP32 ? 4 : 2) : 0));
	}
	const int io = c.add("out", dt, oshape, true);
	upload(c, 1.0f);
	int64_t ost[ARK_MAX_DIMS], n = 1, at = 0;
	for (int k = nd - 1; k >= 0; k--)
		ost[k] = n, n *= oshape[k];
	for (size_t j = 0; j < lens.size(); j++) { /* one launch per entry: the harness has one op params */
		const ark_tensor &X = c.t[ins[j]];
		ark_opp p = opp_base(ARK_OP_CONCAT, dt);
		p.in[0] = X.offset;
		p.out = c.t[io].offset + (uint64_t)(at * ost[axis] * ark_dtype_size(dt));
		p.ndim = nd;
		n = 1;
		for (int k = nd - 1; k >= 0; k--) {
			p.oshape[k] = X.shape[k];
			p.istride[0][k] = n, n *= X.shape[k];
			p.istride[1][k] = ost[k];
		}
		std::vector<ark_task> tasks;
		for (int64_t k0 = 0; k0 < n; k0 += chunk)
			tasks.push_back(task(ARK_T_STRIDED, 0, 1, 0, 1, k0, k0 + chunk < n ? k0 + chunk : n));
		launch(p, tasks, j ? "" : d);
		at += lens[j];
	}
	std::string why;
	bool guards = download(c, why);
	std::vector<unsigned char> want(c.t[io].bytes);
	std::vector<void *> bufs;
	for (auto &h : c.host)
		bufs.push_back(h.data());
	bufs[io] = want.data();
	ark_op op = op_base(ARK_OP_CONCAT, ins, io);
	op.axis = (int8_t)axis;
	ref_or_bail(op, c, bufs);
	const bool same = memcmp(c.host[io].data(), want.data(), want.size()) == 0;
	if (!same)
		why += "bytes differ ";
	verdict(c, io, want.data(), 0.0, guards && same, why);
}

/* ---- copy ------------------------------------------------------------------------------------- */

static void case_copy(int dt, int64_t n, int64_t chunk, int peer, int skew_in, int skew_out)
{
	char d[160];
	snprintf(d, sizeof d, "copy %s %lld elements in chunks of %lld, %s%s", dt_name[dt], (long long)n,
		 (long long)chunk, peer >= 0 ? "from peers[0]" : "local", skew_in != skew_out ? " misaligned" : "");
	tcase c;
	c.desc = d;
	const int ia = c.add("a", dt, {n}, false, skew_in);
	const int io = c.add("out", dt, {n}, true, skew_out);
	upload(c, 1.0f);
	ark_opp p = opp_base(ARK_OP_COPY, dt);
	p.in[0] = c.t[ia].offset;
	p.out = c.t[io].offset;
	p.M = 1, p.N = n;
	p.peer = peer;
	std::vector<ark_task> tasks;
	for (int64_t k0 = 0; k0 < n; k0 += chunk)
		tasks.push_back(task(ARK_T_COPY, 0, 1, 0, 1, k0, k0 + chunk < n ? k0 + chunk : n));
	launch(p, tasks);
	std::string why;
	bool guards = download(c, why);
	const bool same = memcmp(c.host[io].data(), c.host[ia].data(), c.t[io].bytes) == 0;
	if (!same)
		why += "bytes differ ";
	verdict(c, io, c.host[ia].data(), 0.0, guards && same, why);
}

/* ---- streaming rate (diagnostic, not a test) ---------------------------------------------------- */

/* Runs tasks[s] of op p on SM s, every SM at once, three times; the last run's tile times (ns), sorted. */
static std::vector<unsigned long long> time_per_sm(const ark_opp &p, const std::vector<ark_task> &tasks)
{
	const int sms = (int)tasks.size();
	CUDA_CHECK(cudaMemcpy(g_opp, &p, sizeof p, cudaMemcpyHostToDevice));
	CUDA_CHECK(cudaMemcpy(g_tasks, tasks.data(), tasks.size() * sizeof(ark_task), cudaMemcpyHostToDevice));
	unsigned long long *ns;
	CUDA_CHECK(cudaMalloc(&ns, sms * sizeof *ns));
	std::vector<unsigned long long> h(sms);
	for (int rep = 0; rep < 3; rep++) { /* the last one counts */
		harness_kernel<<<sms, ARK_THREADS, ARK_TILES_SMEM_BYTES>>>(g_opp, g_tasks, g_arena, g_peers, ns, nullptr);
		CUDA_CHECK(cudaGetLastError());
		CUDA_CHECK(cudaDeviceSynchronize());
	}
	CUDA_CHECK(cudaMemcpy(h.data(), ns, sms * sizeof *ns, cudaMemcpyDeviceToHost));
	CUDA_CHECK(cudaFree(ns));
	std::sort(h.begin(), h.end());
	return h;
}

/* Batch 1: one task per SM, each streaming a (K x 128) tile of b; prints the median per-SM rate. */
static void stream_rate(int dt, bool tb, int64_t K, int qdt = -1)
{
	int sms = 0;
	CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	const int64_t N = 128 * (int64_t)sms, es = ark_dtype_size(dt);
	const int64_t rowb = qdt >= 0 ? ark_row_bytes(qdt, K) : K * es; /* bytes of a row of b (zeros: valid blocks) */
	const uint64_t boff = 1u << 20, bbytes = (uint64_t)N * rowb;
	if (boff + bbytes + (1u << 20) > ARENA_BYTES)
		return;
	ark_opp p = opp_base(ARK_OP_MATMUL, dt);
	p.flags = tb ? ARK_OPP_TRANSPOSE_B : 0;
	p.wdtype = (uint8_t)(qdt >= 0 ? qdt : 0);
	p.in[0] = 0;                   /* a [1, K] */
	p.in[1] = boff;                /* b */
	p.out = boff + bbytes;         /* out [1, N] */
	p.M = 1, p.N = N, p.K = K;
	CUDA_CHECK(cudaMemset(g_arena, 0, boff + bbytes + N * es));
	std::vector<ark_task> tasks;
	for (int s = 0; s < sms; s++)
		tasks.push_back(task(ARK_T_MATMUL, 0, 1, 128 * s, 128 * s + 128, 0, K));
	const std::vector<unsigned long long> h = time_per_sm(p, tasks);
	const double tile = (double)rowb * 128, med = (double)h[sms / 2], worst = (double)h[sms - 1];
	printf("# stream %s %s%s%s M=1, tile 1x128, K=%lld (%.0f KiB per SM): median %.1f us = %.1f GB/s per SM, "
	       "slowest %.1f us: %.2f TB/s over %d SMs\n",
	       dt_name[dt], tb ? "[N,K]" : "[K,N]", qdt >= 0 ? " of " : "", qdt >= 0 ? qname(qdt) : "", (long long)K,
	       tile / 1024, med / 1e3, tile / med, worst / 1e3, tile * sms / worst / 1e3, sms);
}

/* DEQUANT's rate: one task per SM of `rows` rows of a qdt weight [rows * SMs, K] into dt, every SM at
 * once (zero blocks: valid), timed per tile; bytes of blocks read plus bytes of out written. */
static void dequant_rate(int dt, int qdt, int64_t K, int64_t rows)
{
	int sms = 0;
	CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	const int64_t R = rows * sms, es = ark_dtype_size(dt), rowb = ark_row_bytes(qdt, K);
	const uint64_t woff = 1u << 20, wbytes = (uint64_t)R * rowb, obytes = (uint64_t)R * K * es;
	if (woff + wbytes + obytes + 256 > ARENA_BYTES)
		return;
	const ark_opp p = dequant_opp(dt, qdt, woff, (woff + wbytes + 255) / 256 * 256, R, K);
	CUDA_CHECK(cudaMemset(g_arena, 0, p.out + obytes));
	const std::vector<unsigned long long> h = time_per_sm(p, dequant_tasks(R, K, rows));
	const double tile = (double)rows * (rowb + K * es), med = (double)h[sms / 2], worst = (double)h[sms - 1];
	printf("# dequantize %s -> %s, %lld rows of K=%lld per SM (%.0f KiB read + written): median %.1f us = %.1f GB/s "
	       "per SM, slowest %.1f us: %.2f TB/s over %d SMs\n",
	       qname(qdt), dt_name[dt], (long long)rows, (long long)K, tile / 1024, med / 1e3, tile / med, worst / 1e3,
	       tile * sms / worst / 1e3, sms);
}

/* ---- attention -------------------------------------------------------------------------------- */

/* out [B, Sq, H*Dh] = attention(q, k [B, Skv, Hkv*Dh], v, mask [B, Skv] of mask_dt (-1: none)) in
 * tasks of bq query rows per (batch, head), as tile.c cuts it (causal: each block's keys up to its
 * last row's diagonal). With a mask, about a quarter of the keys are masked out; all_masked: every
 * key of the last batch, whose rows must come out as zeros. */
static void case_attention(int dt, int64_t B, int64_t Sq, int64_t Skv, int H, int Hkv, int64_t Dh, bool causal,
			   int mask_dt, int bq, bool all_masked = false, bool timed = false)
{
	char d[256];
	snprintf(d, sizeof d, "attention %s B=%lld Sq=%lld Skv=%lld heads=%d kv_heads=%d Dh=%lld%s mask=%s%s, %d rows per task",
		 dt_name[dt], (long long)B, (long long)Sq, (long long)Skv, H, Hkv, (long long)Dh, causal ? " causal" : "",
		 mask_dt < 0 ? "none" : dt_name[mask_dt], all_masked ? " (last batch all masked)" : "", bq);
	tcase c;
	c.desc = d;
	const int iq = c.add("q", dt, {B, Sq, H * Dh}, false);
	const int ik = c.add("k", dt, {B, Skv, Hkv * Dh}, false);
	const int iv = c.add("v", dt, {B, Skv, Hkv * Dh}, false);
	const int im = mask_dt >= 0 ? c.add("mask", mask_dt, {B, Skv}, false) : -1;
	const int io = c.add("out", dt, {B, Sq, H * Dh}, true);
	upload(c, 2.0f);
	if (im >= 0) { /* flags: 0 for about a quarter of the keys (every key of the last batch if all_masked) */
		uint64_t x = g_seed * 6364136223846793005ull + 1442695040888963407ull;
		for (int64_t i = 0; i < B * Skv; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			const bool off = (all_masked && i >= (B - 1) * Skv) || (x >> 33) % 4 == 0;
			ark_set(c.host[im].data(), mask_dt, i, off ? 0.0f : (float)(1 + (x >> 40) % 3));
		}
		put(c, im);
	}
	const float scale = (float)(1.0 / sqrt((double)Dh)) * (Dh == 64 ? 1.5f : 1.0f);
	ark_opp p = opp_base(ARK_OP_ATTENTION, dt);
	p.flags = (uint8_t)((im >= 0 ? ARK_OPP_MASK : 0) | (causal ? ARK_OPP_CAUSAL : 0));
	p.in[0] = c.t[iq].offset, p.in[1] = c.t[ik].offset, p.in[2] = c.t[iv].offset;
	p.ws = im >= 0 ? c.t[im].offset : 0;
	p.istride[0][0] = im >= 0 ? mask_dt : 0;
	p.out = c.t[io].offset;
	p.M = Sq, p.N = H * Dh, p.K = Skv;
	p.f = scale;
	p.oshape[0] = B, p.oshape[1] = H, p.oshape[2] = Hkv, p.oshape[3] = Dh;
	std::vector<ark_task> tasks;
	for (int64_t b = 0; b < B; b++)
		for (int64_t h = 0; h < H; h++)
			for (int64_t q0 = 0; q0 < Sq; q0 += bq) {
				const int64_t q1 = q0 + bq < Sq ? q0 + bq : Sq;
				int64_t kend = causal ? q1 - 1 + Skv - Sq + 1 : Skv;
				kend = kend < 0 ? 0 : kend > Skv ? Skv : kend;
				tasks.push_back(task(ARK_T_ATTENTION, b * Sq + q0, b * Sq + q1, h * Dh, (h + 1) * Dh, 0, kend));
			}
	launch(p, tasks, timed ? d : "");
	std::string why;
	bool guards = download(c, why);

	std::vector<unsigned char> want(c.t[io].bytes);
	std::vector<void *> bufs;
	for (auto &h : c.host)
		bufs.push_back(h.data());
	bufs[io] = want.data();
	std::vector<int> ins = {iq, ik, iv};
	if (im >= 0)
		ins.push_back(im);
	ark_op op = op_base(ARK_OP_ATTENTION, ins, io);
	op.heads = H, op.kv_heads = Hkv, op.causal = causal, op.scale = scale;
	ref_or_bail(op, c, bufs);
	if (all_masked) { /* the reference's zeros, checked on their own: a wrong value there is no small error */
		const int64_t row = H * Dh, n = Sq * row;
		int64_t nz = 0;
		for (int64_t i = (B - 1) * n; i < B * n; i++)
			nz += ark_get(c.host[io].data(), dt, i) != 0.0f || ark_get(want.data(), dt, i) != 0.0f;
		if (nz)
			why += std::to_string(nz) + " nonzero outputs in the masked batch ";
		guards = guards && !nz;
	}
	verdict(c, io, want.data(), dt == ARK_FP32 ? 1e-4 : dt == ARK_BF16 ? 2e-2 : 1e-2, guards, why);
}

/* ---- rope, decode attention, argmax ------------------------------------------------------------- */

/* Writes the int32 position of tensor ip (after upload, which drew a 0/1 there). */
/* out = rope(x, pos): x [B, T, H*Dh] (B = 0: [T, H*Dh]), rows_per rows a task. */
static void case_rope(int dt, int64_t B, int64_t T, int64_t H, int Dh, int rd, int style, float base, int32_t pos,
		      int64_t rows_per)
{
	char d[256];
	snprintf(d, sizeof d, "rope %s x [%s%lld, %lld x %d], rotary_dim %d, %s, base %g, pos %d, %lld rows a task",
		 dt_name[dt], B ? (std::to_string(B) + ", ").c_str() : "", (long long)T, (long long)H, Dh, rd,
		 style ? "interleaved" : "half", base, pos, (long long)rows_per);
	tcase c;
	c.desc = d;
	std::vector<int64_t> xs = B ? std::vector<int64_t>{B, T, H * Dh} : std::vector<int64_t>{T, H * Dh};
	const int ix = c.add("x", dt, xs, false), ip = c.add("pos", ARK_INT32, {1}, false);
	const int io = c.add("out", dt, xs, true);
	upload(c, 2.0f);
	set_pos(c, ip, pos);
	const int64_t M = (B ? B : 1) * T, E = H * Dh;
	ark_opp p = opp_base(ARK_OP_ROPE, dt);
	p.in[0] = c.t[ix].offset, p.in[1] = c.t[ip].offset, p.out = c.t[io].offset;
	p.M = M, p.N = E, p.K = T, p.f = base;
	p.oshape[0] = Dh, p.oshape[1] = rd, p.oshape[2] = style;
	p.istride[0][0] = (int64_t)c.t[ip].offset;
	std::vector<ark_task> tasks;
	for (int64_t r0 = 0; r0 < M; r0 += rows_per)
		tasks.push_back(task(ARK_T_ROPE, r0, r0 + rows_per < M ? r0 + rows_per : M, 0, E, 0, 0));
	launch(p, tasks, d);
	std::string why;
	const bool guards = download(c, why);
	std::vector<unsigned char> want(c.t[io].bytes);
	std::vector<void *> bufs;
	for (auto &h : c.host)
		bufs.push_back(h.data());
	bufs[io] = want.data();
	ark_op op = op_base(ARK_OP_ROPE, {ix, ip}, io);
	op.head_dim = Dh, op.rotary_dim = rd, op.style = style, op.base = base;
	ref_or_bail(op, c, bufs);
	/* the angles are fp32 as the contract says (position times 1 / base^(2i/rd), both rounded): an
	 * error of a few ulps of the position in radians, which the double reference does not make */
	const double angle = 6.0 * (double)(pos + T) / (double)(1 << 24);
	verdict(c, io, want.data(), dt == ARK_FP32 ? 1e-4 + angle : dt == ARK_BF16 ? 2e-2 : 1e-2 + angle, guards, why);
}

/* out [T, H*Dh] = decode_attention(q, caches [L, Hkv*Dh], pos) with S splits of the cache rows, the
 * tasks as codegen/tile.c cuts them (a kv head's query rows in blocks of at most ARK_DEC_ROWS), then
 * the combine in a second launch. pos past L - T: every task records the fault and out is zeros. */
static void case_decode(int dt, int64_t T, int64_t H, int64_t Hkv, int64_t Dh, int64_t L, int32_t pos, int64_t S,
			int64_t bq = 0)
{
	const bool bad = pos < 0 || pos > L - T;
	char d[256];
	snprintf(d, sizeof d, "decode_attention %s T=%lld heads %lld/%lld Dh=%lld L=%lld pos=%d, %lld split%s%s%s", dt_name[dt],
		 (long long)T, (long long)H, (long long)Hkv, (long long)Dh, (long long)L, pos, (long long)S, S > 1 ? "s" : "",
		 bq ? (", one head's " + std::to_string(bq) + " rows a task (the attention tile)").c_str() : "",
		 bad ? " (position outside the cache)" : "");
	tcase c;
	c.desc = d;
	const int iq = c.add("q", dt, {T, H * Dh}, false), ik = c.add("kc", dt, {L, Hkv * Dh}, false);
	const int iv = c.add("vc", dt, {L, Hkv * Dh}, false), ip = c.add("pos", ARK_INT32, {1}, false);
	const int io = c.add("out", dt, {T, H * Dh}, true);
	const int64_t G = H / Hkv, W = Dh + 2, chunk = (L + S - 1) / S;
	S = (L + chunk - 1) / chunk;
	const uint64_t ws = S > 1 ? c.reserve((uint64_t)(H * T * S * W) * 4) : 0;
	upload(c, 2.0f);
	set_pos(c, ip, pos);
	const float scale = (float)(1.0 / sqrt((double)Dh)) * 1.5f;
	ark_opp p = opp_base(ARK_OP_DECODE_ATTENTION, dt);
	p.in[0] = c.t[iq].offset, p.in[1] = c.t[ik].offset, p.in[2] = c.t[iv].offset, p.out = c.t[io].offset;
	p.ws = ws;
	p.M = T, p.N = H * Dh, p.K = L - T + 1, p.f = scale, p.splits = (uint32_t)S;
	p.oshape[0] = L, p.oshape[1] = H, p.oshape[2] = Hkv, p.oshape[3] = Dh;
	p.istride[0][0] = (int64_t)c.t[ip].offset, p.istride[0][1] = chunk, p.istride[0][2] = bq ? 1 : 0;
	/* as codegen/tile.c cuts it: a kv head's rows in blocks of at most ARK_DEC_ROWS, or (bq: many rows of
	 * 16 bits, one split) one head's blocks of bq rows on the attention tile */
	const int64_t tb = bq ? bq : G <= ARK_DEC_ROWS ? std::max<int64_t>(1, std::min<int64_t>(T, ARK_DEC_ROWS / G)) : 1;
	const int64_t gb = bq ? 1 : G <= ARK_DEC_ROWS ? G : ARK_DEC_ROWS;
	std::vector<ark_task> split, comb;
	for (int64_t kvh = 0; kvh < Hkv; kvh++)
		for (int64_t t0 = 0; t0 < T; t0 += tb)
			for (int64_t g0 = 0; g0 < G; g0 += gb) {
				const int64_t t1 = std::min(T, t0 + tb), h0 = kvh * G + g0, h1 = kvh * G + std::min(G, g0 + gb);
				for (int64_t s = 0; s < S; s++)
					split.push_back(task(ARK_T_DECODE, t0, t1, h0 * Dh, h1 * Dh, s * chunk,
							     std::min(L, (s + 1) * chunk), (uint32_t)s));
				comb.push_back(task(ARK_T_DECODE_COMBINE, t0, t1, h0 * Dh, h1 * Dh, 0, L));
			}
	launch(p, split, d);
	std::vector<std::vector<uint32_t>> faults = faults_of(split.size());
	size_t n_faults = faults.size();
	if (S > 1) {
		launch(p, comb);
		std::vector<std::vector<uint32_t>> f2 = faults_of(comb.size());
		n_faults += f2.size();
		faults.insert(faults.end(), f2.begin(), f2.end());
	}
	std::string why;
	bool guards = download(c, why);
	std::vector<unsigned char> want(c.t[io].bytes);
	if (bad) { /* every task records (row 0, pos); out is zeros where one split writes it, or the combine */
		const size_t want_faults = split.size() + (S > 1 ? comb.size() : 0);
		bool right = n_faults == want_faults;
		for (auto &f : faults)
			right = right && f[1] == 0 && f[2] == (uint32_t)pos;
		if (!right)
			why += "faults: " + std::to_string(n_faults) + " recorded, expected " + std::to_string(want_faults) +
			       " of (row 0, the position) ",
				guards = false;
		memset(want.data(), 0, want.size());
		verdict(c, io, want.data(), 0.0, guards, why);
		return;
	}
	if (n_faults)
		why += "a fault recorded for a valid position ", guards = false;
	std::vector<void *> bufs;
	for (auto &h : c.host)
		bufs.push_back(h.data());
	bufs[io] = want.data();
	ark_op op = op_base(ARK_OP_DECODE_ATTENTION, {iq, ik, iv, ip}, io);
	op.heads = (int)H, op.kv_heads = (int)Hkv, op.scale = scale;
	ref_or_bail(op, c, bufs);
	verdict(c, io, want.data(), dt == ARK_FP32 ? 1e-4 : dt == ARK_BF16 ? 2e-2 : 1e-2, guards, why);
}

/* out int32 [M] = argmax over x [M, N]'s rows: S column splits (tasks per row and split, then the
 * combine over blocks of 64 rows) or, with S = 1, blocks of rows_per rows. Fresh random rows, then:
 * every third row has its largest value twice (a tie: the first must win), every fifth row its
 * largest in the last column, NaN at a few columns of every row (never the answer), and the last
 * row NaN only when nan_row (0). */
static void case_argmax(int dt, int64_t M, int64_t N, int64_t S, int64_t rows_per, bool nan_row)
{
	char d[256];
	snprintf(d, sizeof d, "argmax %s x [%lld, %lld], %lld split%s, ties, the max in the last column, NaN%s", dt_name[dt],
		 (long long)M, (long long)N, (long long)S, S > 1 ? "s" : "", nan_row ? ", a row of NaN" : "");
	tcase c;
	c.desc = d;
	const int ix = c.add("x", dt, {M, N}, false), io = c.add("out", ARK_INT32, {M}, true);
	int64_t chunk = (N + S - 1) / S;
	chunk = std::min(N, (chunk + 7) / 8 * 8);
	S = (N + chunk - 1) / chunk;
	const uint64_t ws = S > 1 ? c.reserve((uint64_t)(M * 2 * S) * 4) : 0;
	upload(c, 1.0f);
	void *x = c.host[ix].data();
	uint64_t rnd = g_seed * 6364136223846793005ull + 1;
	for (int64_t r = 0; r < M; r++) {
		int64_t best = 0;
		for (int64_t j = 1; j < N; j++)
			if (ark_get(x, dt, r * N + j) > ark_get(x, dt, r * N + best))
				best = j;
		rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
		if (r % 3 == 0 && N > 1) { /* the largest again at an earlier column (or a later one) */
			const int64_t j = (int64_t)((rnd >> 33) % (uint64_t)N);
			ark_set(x, dt, r * N + j, ark_get(x, dt, r * N + best));
		}
		if (r % 5 == 0)
			ark_set(x, dt, r * N + N - 1, 4.0f);
		for (int k = 0; k < 3 && N > 2; k++) { /* NaN at three columns, the last one's neighbour among them */
			rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
			const int64_t j = k == 0 ? N - 2 : (int64_t)((rnd >> 33) % (uint64_t)(N - 1));
			ark_set(x, dt, r * N + j, NAN);
		}
		if (nan_row && r == M - 1)
			for (int64_t j = 0; j < N; j++)
				ark_set(x, dt, r * N + j, NAN);
	}
	CUDA_CHECK(cudaMemcpy(g_arena + c.t[ix].offset, x, c.t[ix].bytes, cudaMemcpyHostToDevice));
	ark_opp p = opp_base(ARK_OP_ARGMAX, dt);
	p.in[0] = c.t[ix].offset, p.out = c.t[io].offset, p.ws = ws;
	p.M = M, p.N = N, p.splits = (uint32_t)S;
	std::vector<ark_task> tasks, comb;
	if (S == 1)
		for (int64_t r0 = 0; r0 < M; r0 += rows_per)
			tasks.push_back(task(ARK_T_ARGMAX, r0, std::min(M, r0 + rows_per), 0, 1, 0, N));
	else {
		for (int64_t r = 0; r < M; r++)
			for (int64_t s = 0; s < S; s++)
				tasks.push_back(task(ARK_T_ARGMAX, r, r + 1, 0, 1, s * chunk, std::min(N, (s + 1) * chunk), (uint32_t)s));
		for (int64_t r0 = 0; r0 < M; r0 += 64)
			comb.push_back(task(ARK_T_ARGMAX_COMBINE, r0, std::min(M, r0 + 64), 0, 1, 0, N));
	}
	launch(p, tasks, d);
	launch(p, comb);
	std::string why;
	const bool guards = download(c, why);
	std::vector<unsigned char> want(c.t[io].bytes);
	std::vector<void *> bufs;
	for (auto &h : c.host)
		bufs.push_back(h.data());
	bufs[io] = want.data();
	ref_or_bail(op_base(ARK_OP_ARGMAX, {ix}, io), c, bufs);
	verdict(c, io, want.data(), 0.0, guards, why);
}

/* ---- main ------------------------------------------------------------------------------------- */

/* Every case of the float dtypes (matmul, elementwise, rows, attention, decode, ...). */
static void cases_float(void)
{
	for (int dt = 0; dt < ARK_FLOAT_DTYPES; dt++) {
		if (!built(dt))
			continue;
		const int skew = dt == ARK_FP32 ? 4 : 2;
		/* batch 1 and small M: weight streaming ([K,N] and [N,K]), a chunked over K, edge tiles */
		case_matmul(dt, 1, 1000, 777, false, false, ARK_ACT_NONE, 128, 128);
		case_matmul(dt, 1, 1000, 1024, true, true, ARK_OP_GELU, 128, 128);
		/* tiles one wave wide (codegen/tile.c, balanced_tn): widths of 16-byte multiples that are
		 * not powers of two, the last tile narrower, both layouts, 1 to 16 rows */
		case_matmul(dt, 16, 2624, 2048, false, true, ARK_OP_SILU, 16, dt == ARK_FP32 ? 20 : 24);
		case_matmul(dt, 1, 2624, 1000, true, false, ARK_ACT_NONE, 1, dt == ARK_FP32 ? 20 : 24);
		case_matmul(dt, 5, 3001, 691, false, false, ARK_ACT_NONE, 5, 40);
		case_matmul(dt, 8, 3001, 1024, true, true, ARK_OP_GELU, 8, dt == ARK_FP32 ? 44 : 40);
		case_matmul(dt, 1, 256, 5000, false, true, ARK_OP_SILU, 1, 64);
		case_matmul(dt, 1, 200, 9000, true, false, ARK_ACT_NONE, 1, 8);
		case_matmul(dt, 3, 1000, 777, true, false, ARK_ACT_NONE, 128, 128);
		case_matmul(dt, 3, 1000, 1024, false, true, ARK_OP_RELU, 128, 100);
		case_matmul(dt, 3, 512, 1024, true, true, ARK_OP_RELU, 3, 128);
		case_matmul(dt, 8, 384, 2048, false, false, ARK_OP_GELU, 8, 128);
		case_matmul(dt, 16, 512, 2048, false, true, ARK_OP_SILU, 16, 128);
		case_matmul(dt, 16, 512, 2048, true, true, ARK_OP_SILU, 16, 128);
		case_matmul(dt, 5, 777, 100, false, true, ARK_ACT_NONE, 128, 128);
		case_matmul(dt, 5, 777, 100, true, true, ARK_ACT_NONE, 128, 128);
		case_matmul(dt, 2, 256, 512, true, false, ARK_ACT_NONE, 128, 128, 1, skew);
		/* 16-bit b [N, K] of 2-16 rows on the tensor cores (ark_mm_stream_nkt): groups of 16
		 * columns 1, 3 and 7 to a tile and a short last one, a last batch of k cut mid-way (K 4104,
		 * 1000), a split starting off a batch, a chunked over K */
		case_matmul(dt, 2, 1000, 4104, true, true, ARK_OP_SILU, 2, 16);
		case_matmul(dt, 4, 1000, 1000, true, false, ARK_ACT_NONE, 4, 48);
		case_matmul(dt, 3, 1000, 3000, true, true, ARK_OP_GELU, 3, 112, 3, 0, 8, true);
		case_matmul(dt, 4, 200, 13000, true, false, ARK_ACT_NONE, 4, 40);
		/* larger M: tensor cores (fp16/bf16) or FMA tiles, edges in M, N, K */
		case_matmul(dt, 64, 1000, 777, false, true, ARK_ACT_NONE, 128, 128);
		case_matmul(dt, 64, 1000, 768, false, true, ARK_OP_GELU, 128, 128);
		case_matmul(dt, 64, 1000, 768, true, false, ARK_ACT_NONE, 64, 128);
		case_matmul(dt, 135, 1000, 777, false, false, ARK_ACT_NONE, 128, 128);
		case_matmul(dt, 135, 1000, 777, true, true, ARK_OP_RELU, 128, 128);
		case_matmul(dt, 135, 384, 512, false, true, ARK_OP_GELU, 128, 128);
		/* with the one above, fp32's whole 128 x 128 tiles of constant strides, both layouts aligned */
		case_matmul(dt, 135, 384, 512, true, false, ARK_ACT_NONE, 128, 128);
		case_matmul(dt, 135, 384, 520, true, true, ARK_OP_SILU, 128, 96);
		case_matmul(dt, 100, 256, 512, false, false, ARK_ACT_NONE, 128, 128, 1, skew);
		/* b [K, N] aligned, on the warpgroup MMA (fp16/bf16): 128 x 64 (a tile of 48 rows as one of 128),
		 * 64 x 128, 128 x 128, k cut mid-stage, a split's k range, columns past a padded N */
		case_matmul(dt, 48, 136, 264, false, false, ARK_ACT_NONE, 48, 64);
		case_matmul(dt, 100, 200, 520, false, true, ARK_OP_RELU, 128, 64);
		case_matmul(dt, 40, 328, 1000, false, true, ARK_OP_GELU, 40, 128, 2);
		case_matmul(dt, 129, 264, 392, false, true, ARK_ACT_NONE, 128, 128, 1, 0, 8, true);
		case_matmul(dt, 72, 195, 256, false, false, ARK_ACT_NONE, 72, 128, 1, 0, 8, false, ARK_PRE_NONE, PAD_B);
		/* split K: partials then reduce */
		case_matmul(dt, 1, 1024, 4096, false, true, ARK_OP_SILU, 1, 128, 4);
		case_matmul(dt, 1, 1000, 3000, true, false, ARK_ACT_NONE, 1, 128, 3);
		case_matmul(dt, 64, 256, 1000, true, true, ARK_OP_GELU, 64, 128, 3);
		case_matmul(dt, 135, 200, 777, false, false, ARK_ACT_NONE, 128, 128, 2);
		case_matmul(dt, 5, 77, 200, false, true, ARK_OP_SIGMOID, 5, 77);
		case_matmul(dt, 64, 384, 512, true, true, ARK_OP_SIGMOID, 64, 128);
		/* REDUCE reading several splits at once: 1, 2 and 4 groups of columns a thread, more splits
		 * than one pass of each reads (16, 8, 4), and odd N (columns past a group's whole vectors) */
		case_matmul(dt, 1, 520, 4352, true, false, ARK_OP_SILU, 1, 128, 17);
		case_matmul(dt, 16, 384, 4608, true, true, ARK_ACT_NONE, 16, 128, 9, 0, 8, true);
		case_matmul(dt, 64, 256, 3072, false, true, ARK_OP_GELU, 64, 128, 6);
		case_matmul(dt, 3, 77, 2000, false, true, ARK_OP_SIGMOID, 3, 77, 5);
		/* odd K and N, misaligned rows: small tiles on the FMA path, larger ones on tensor cores
		 * (fp16/bf16, operands staged through registers) or the FMA path (fp32) */
		case_matmul(dt, 64, 777, 2481, false, true, ARK_ACT_NONE, 64, 128);
		case_matmul(dt, 64, 129, 2481, true, false, ARK_OP_GELU, 64, 128);
		case_matmul(dt, 3, 777, 1949, false, false, ARK_ACT_NONE, 3, 16);
		case_matmul(dt, 3, 129, 1949, true, true, ARK_OP_SILU, 3, 16);
		case_matmul(dt, 16, 777, 1000, false, false, ARK_ACT_NONE, 16, 128);
		case_matmul(dt, 17, 129, 743, false, true, ARK_OP_RELU, 17, 128);
		/* 16-bit b [K, N] tiles of 3-8 rows on the tensor-core steps: a copied as it is over
		 * several chunks with a short last step, a staged as fp32 (rows of odd K) over several
		 * chunks with 8-column tiles, and split-K partials starting past k 0 */
		case_matmul(dt, 8, 1024, 4500, false, true, ARK_OP_GELU, 8, 32);
		case_matmul(dt, 6, 264, 5003, false, false, ARK_ACT_NONE, 6, 64, 2);
		case_matmul(dt, 5, 2056, 3000, false, false, ARK_OP_SILU, 5, 16, 3, 0, 8, true);
		/* tiles of little k: no more k-groups than the k has steps for (a power of two of them:
		 * K 72 and 200 cover 3 and 7 steps of 32), odd K, a split-K slice of 72 */
		case_matmul(dt, 64, 533, 72, false, false, ARK_OP_RELU, 64, 32);
		case_matmul(dt, 64, 533, 72, true, true, ARK_OP_SILU, 48, 64);
		case_matmul(dt, 40, 96, 200, false, true, ARK_ACT_NONE, 40, 32);
		case_matmul(dt, 25, 96, 41, false, false, ARK_OP_SILU, 25, 32);
		case_matmul(dt, 64, 128, 144, true, false, ARK_ACT_NONE, 64, 32, 2);
		/* a fused residual add (a transformer block's x + W o): every path, odd N, after split-K */
		case_matmul(dt, 1, 2048, 2048, true, false, ARK_ACT_NONE, 1, 16, 1, 0, 8, true);
		case_matmul(dt, 3, 777, 1000, false, true, ARK_OP_GELU, 3, 128, 1, 0, 8, true);
		case_matmul(dt, 1, 1000, 3000, true, false, ARK_ACT_NONE, 1, 128, 3, 0, 8, true);
		case_matmul(dt, 64, 768, 768, true, true, ARK_ACT_NONE, 64, 64, 1, 0, 8, true);
		case_matmul(dt, 135, 129, 743, true, true, ARK_OP_SILU, 128, 128, 1, 0, 8, true);
		case_matmul(dt, 128, 768, 3072, true, true, ARK_ACT_NONE, 64, 32, 2, 0, 8, true);
		case_matmul(dt, 3, 129, 1949, true, false, ARK_ACT_NONE, 3, 16, 1, 0, 8, true);
		/* an rmsnorm fused on a, on both streaming paths ([N, K] needs K a multiple of the vector,
		 * [K, N] N), with split-K and a residual */
		case_matmul(dt, 1, 2048, 2048, true, false, ARK_ACT_NONE, 1, 16, 1, 0, 8, false, ARK_PRE_RMSNORM);
		case_matmul(dt, 3, 776, 1000, false, true, ARK_OP_GELU, 3, 128, 1, 0, 8, false, ARK_PRE_RMSNORM);
		case_matmul(dt, 1, 1000, 3000, true, false, ARK_ACT_NONE, 1, 128, 3, 0, 8, true, ARK_PRE_RMSNORM);
		case_matmul(dt, 16, 512, 2048, true, true, ARK_OP_SILU, 16, 128, 1, 0, 8, false, ARK_PRE_RMSNORM);
		case_matmul(dt, 7, 96, 4096, false, false, ARK_ACT_NONE, 7, 96, 2, 0, 8, true, ARK_PRE_RMSNORM);
		/* a swiglu fused on a, on both streaming paths, with split-K, a residual, a and y off 16
		 * bytes and padded rows */
		case_matmul(dt, 1, 2048, 8192, true, false, ARK_ACT_NONE, 1, 16, 1, 0, 8, true, ARK_PRE_SWIGLU);
		case_matmul(dt, 3, 776, 1000, false, true, ARK_OP_GELU, 3, 128, 1, 0, 8, false, ARK_PRE_SWIGLU);
		case_matmul(dt, 1, 1000, 3000, true, false, ARK_ACT_NONE, 1, 128, 3, skew, 8, false, ARK_PRE_SWIGLU);
		case_matmul(dt, 16, 512, 2048, true, true, ARK_OP_SILU, 16, 128, 1, 0, 8, false, ARK_PRE_SWIGLU);
		case_matmul(dt, 7, 96, 4096, false, false, ARK_ACT_NONE, 7, 96, 2, 0, 8, true, ARK_PRE_SWIGLU);
		case_matmul(dt, 5, 300, 1000, true, false, ARK_ACT_NONE, 5, 64, 1, 0, 8, false, ARK_PRE_SWIGLU, PAD_A | PAD_B);
		case_matmul(dt, 17, 777, 743, true, false, ARK_ACT_NONE, 17, 64);
		case_matmul(dt, 135, 777, 743, true, true, ARK_OP_GELU, 128, 128);
		case_matmul(dt, 135, 777, 743, false, false, ARK_ACT_NONE, 135, 100);
		case_matmul(dt, 256, 129, 743, false, false, ARK_ACT_NONE, 256, 128);
		case_matmul(dt, 256, 512, 512, false, true, ARK_ACT_NONE, 128, 128, 1, skew);
		case_matmul(dt, 64, 100, 5, true, false, ARK_ACT_NONE, 64, 128);
		case_matmul(dt, 40, 9, 3, false, true, ARK_OP_RELU, 40, 9);
		/* small mma tiles (warps splitting k, deep stages): 16-128 rows by 16-64 columns, both
		 * layouts, aligned and odd K and N */
		case_matmul(dt, 211, 640, 640, false, true, ARK_OP_GELU, 64, 16);
		case_matmul(dt, 211, 640, 640, true, false, ARK_ACT_NONE, 128, 16);
		case_matmul(dt, 29, 300, 1000, true, true, ARK_ACT_NONE, 29, 48);
		case_matmul(dt, 29, 301, 999, false, false, ARK_OP_RELU, 29, 32);
		case_matmul(dt, 97, 131, 517, true, false, ARK_ACT_NONE, 97, 16);
		case_matmul(dt, 97, 130, 518, false, true, ARK_ACT_NONE, 64, 64);
		case_matmul(dt, 461, 200, 333, true, true, ARK_OP_SILU, 128, 32);
		case_matmul(dt, 257, 512, 512, true, false, ARK_ACT_NONE, 128, 16);
		case_matmul(dt, 397, 331, 1024, false, false, ARK_ACT_NONE, 128, 64);
		/* split K with slices starting at odd k */
		case_matmul(dt, 64, 777, 2481, true, false, ARK_ACT_NONE, 64, 128, 3, 0, 1);
		case_matmul(dt, 3, 129, 1949, false, true, ARK_OP_SILU, 3, 64, 4, 0, 1);
		case_matmul(dt, 135, 129, 743, false, false, ARK_ACT_NONE, 128, 128, 2, 0, 1);
		case_matmul(dt, 256, 777, 743, true, true, ARK_ACT_NONE, 128, 128, 5, skew, 1);
		/* gelu's tanh form and tanh in the epilogues: streaming, mma/FMA tiles, split-K sums */
		case_matmul(dt, 1, 1000, 1024, true, true, ARK_OP_GELU_TANH, 128, 128);
		case_matmul(dt, 8, 384, 2048, false, false, ARK_OP_GELU_TANH, 8, 128);
		case_matmul(dt, 135, 777, 743, true, true, ARK_OP_GELU_TANH, 128, 128);
		case_matmul(dt, 64, 256, 1000, true, true, ARK_OP_GELU_TANH, 64, 128, 3);
		case_matmul(dt, 3, 1000, 1024, false, true, ARK_OP_TANH, 128, 100);
		case_matmul(dt, 97, 130, 518, false, true, ARK_OP_TANH, 64, 64);
		/* b's rows padded (codegen/lower_pad.c): few rows stream b beside a's odd rows, mma and FMA
		 * tiles take b as aligned rows (a odd, or aligned: the tile of whole vectors), split-K */
		case_matmul(dt, 1, 777, 1001, true, false, ARK_ACT_NONE, 1, 64, 1, 0, 8, false, false, PAD_B);
		case_matmul(dt, 8, 1001, 777, false, true, ARK_OP_SILU, 8, 64, 1, 0, 8, false, false, PAD_B);
		case_matmul(dt, 5, 1993, 4049, true, true, ARK_OP_GELU, 5, 128, 3, 0, 8, false, false, PAD_B);
		case_matmul(dt, 16, 331, 2049, false, false, ARK_ACT_NONE, 16, 128, 2, 0, 1, false, false, PAD_B);
		case_matmul(dt, 32, 1993, 4049, true, false, ARK_ACT_NONE, 32, 32, 1, 0, 8, false, false, PAD_B);
		case_matmul(dt, 64, 777, 1000, false, true, ARK_ACT_NONE, 64, 64, 1, 0, 8, false, false, PAD_B);
		case_matmul(dt, 135, 129, 743, false, false, ARK_OP_RELU, 128, 128, 1, 0, 8, false, false, PAD_B);
		case_matmul(dt, 97, 131, 517, true, true, ARK_ACT_NONE, 97, 16, 1, 0, 8, false, false, PAD_B);
		case_matmul(dt, 296, 1453, 1453, true, false, ARK_ACT_NONE, 128, 64, 3, 0, 8, false, false, PAD_B);
		case_matmul(dt, 64, 768, 768, true, true, ARK_ACT_NONE, 64, 64, 1, 0, 8, false, false, PAD_B);
		/* an activation of odd rows between two matmuls, padded (codegen/lower_pad.c): the first
		 * writes it at its pitch (streaming, mma and FMA epilogues, split-K sums), the second reads it
		 * as a (streaming, mma, FMA, the tile of whole vectors where every row is one) */
		case_matmul(dt, 1, 1001, 777, false, true, ARK_OP_GELU, 1, 64, 1, 0, 8, false, false, PAD_OUT);
		case_matmul(dt, 3, 777, 1001, true, false, ARK_ACT_NONE, 3, 64, 1, 0, 8, false, false, PAD_A | PAD_B);
		case_matmul(dt, 8, 1001, 777, false, false, ARK_ACT_NONE, 8, 64, 1, 0, 8, false, false, PAD_A | PAD_B | PAD_OUT);
		case_matmul(dt, 5, 1993, 4049, true, true, ARK_OP_SILU, 5, 128, 3, 0, 8, true, false, PAD_A | PAD_B | PAD_OUT);
		case_matmul(dt, 135, 129, 743, false, false, ARK_OP_RELU, 128, 128, 1, 0, 8, false, false, PAD_A | PAD_OUT);
		case_matmul(dt, 97, 131, 517, true, true, ARK_ACT_NONE, 97, 16, 1, 0, 8, true, false, PAD_A | PAD_B | PAD_OUT);
		case_matmul(dt, 296, 1453, 1453, true, false, ARK_ACT_NONE, 128, 64, 3, 0, 8, false, false, PAD_A | PAD_B | PAD_OUT);
		case_matmul(dt, 268, 89, 997, false, true, ARK_ACT_NONE, 128, 32, 1, 0, 8, false, false, PAD_B | PAD_OUT);
		case_matmul(dt, 268, 1777, 89, false, false, ARK_ACT_NONE, 128, 128, 1, 0, 8, false, false, PAD_A | PAD_B);
		case_matmul(dt, 40, 7, 8192, false, true, ARK_ACT_NONE, 40, 7, 5, 0, 8, false, false, PAD_A);

		/* elementwise */
		case_ew(dt, ARK_OP_ADD, {37, 1000}, {37, 1000}, 8, 1000);
		case_ew(dt, ARK_OP_MUL, {33, 999}, {33, 999}, 5, 500);
		case_ew(dt, ARK_OP_SCALE, {7, 4097}, {}, 2, 4097);
		case_ew(dt, ARK_OP_RELU, {7, 4097}, {}, 3, 1500);
		case_ew(dt, ARK_OP_GELU, {7, 4097}, {}, 7, 4097);
		case_ew(dt, ARK_OP_GELU_TANH, {7, 4097}, {}, 3, 1000);
		case_ew(dt, ARK_OP_TANH, {13, 1001}, {}, 5, 1001);
		case_ew(dt, ARK_OP_TANH, {3, 77}, {}, 3, 77, skew);
		case_ew(dt, ARK_OP_SILU, {1, 3}, {}, 1, 3);
		case_ew(dt, ARK_OP_SIGMOID, {13, 1001}, {}, 5, 1001);
		case_ew(dt, ARK_OP_SWIGLU, {9, 2048}, {9, 2048}, 4, 2048);
		case_ew(dt, ARK_OP_COPY, {5, 777}, {}, 2, 700);
		case_ew(dt, ARK_OP_ADD, {4, 3, 5}, {3, 1}, 5, 3);
		case_ew(dt, ARK_OP_MUL, {64, 100}, {100}, 16, 64);
		case_ew(dt, ARK_OP_ADD, {2, 1, 6}, {3, 1}, 2, 6);
		/* broadcasting in 16-byte vectors (bias rows, a column, both inputs, 4-D) and element by element */
		case_ew(dt, ARK_OP_ADD, {64, 1168}, {1168}, 2, 1168);
		case_ew(dt, ARK_OP_MUL, {1, 72}, {5, 3, 72}, 4, 72);
		case_ew(dt, ARK_OP_ADD, {7, 1, 64}, {1, 5, 64}, 3, 32);
		case_ew(dt, ARK_OP_ADD, {2, 3, 4, 48}, {3, 1, 48}, 5, 48);
		case_ew(dt, ARK_OP_MUL, {9, 40}, {9, 1}, 4, 16);
		case_ew(dt, ARK_OP_ADD, {37, 123}, {123}, 8, 123, skew);
		case_ew(dt, ARK_OP_MUL, {6, 5, 3}, {5, 1}, 7, 3);
		case_ew(dt, ARK_OP_SWIGLU, {3, 1001}, {3, 1001}, 3, 1001, skew);
		case_ew(dt, ARK_OP_ADD, {16, 64}, {16, 64}, 16, 40, skew);
		case_ew(dt, ARK_OP_SWIGLU, {16, 256}, {16, 256}, 4, 64);

		/* row ops */
		const int64_t ns[] = {1, 7, 1024, 4097};
		for (int tmpl : {ARK_T_SOFTMAX, ARK_T_LAYERNORM, ARK_T_RMSNORM})
			for (int64_t n : ns)
				case_rows(dt, tmpl, 9, n, n >= 1024 ? 2 : 4);
		case_rows(dt, ARK_T_RMSNORM, 64, 256, 64);
		case_rows(dt, ARK_T_LAYERNORM, 16, 1024, 16);
		case_rows(dt, ARK_T_SOFTMAX, 12, 1000, 12);
		case_rows(dt, ARK_T_SOFTMAX, 1, 2048, 1);
		/* tasks of 2 to 9 rows of 2-80 KB, whole vectors and element by element (N not a whole
		 * number of vectors: rows at every alignment) */
		case_rows(dt, ARK_T_SOFTMAX, 6, 3079, 2);
		case_rows(dt, ARK_T_LAYERNORM, 12, 4096, 3);
		case_rows(dt, ARK_T_RMSNORM, 10, 2048, 5);
		case_rows(dt, ARK_T_LAYERNORM, 8, 4100, 4);
		case_rows(dt, ARK_T_RMSNORM, 27, 2500, 9);
		case_rows(dt, ARK_T_SOFTMAX, 8, 12000, 4);
		case_rows(dt, ARK_T_LAYERNORM, 4, 20000, 2);
		case_rows(dt, ARK_T_L2NORM, 7, 6001, 7, 1e-12f);
		/* one row a task, and short rows */
		case_rows(dt, ARK_T_LAYERNORM, 7, 768, 1);
		case_rows(dt, ARK_T_LAYERNORM, 9, 1151, 3);
		case_rows(dt, ARK_T_RMSNORM, 4, 17, 4);
		for (int64_t n : ns)
			case_rows(dt, ARK_T_L2NORM, 9, n, n >= 1024 ? 2 : 4, 1e-12f);
		case_rows(dt, ARK_T_L2NORM, 64, 384, 64, 1e-12f);
		case_rows(dt, ARK_T_L2NORM, 5, 3, 5, 100.0f); /* every norm below eps */

		/* reduce_mean: mean pooling [B, S, D] axis 1 with masks of every dtype, odd sizes; the last
		 * axis (contiguous); a middle axis with Q > 1; the first axis */
		for (int mdt = 0; mdt <= ARK_INT32; mdt++) /* every dtype a mask may have */
			case_reduce_mean(dt, {3, 37, 200}, 1, mdt, 1, 32);
		case_reduce_mean(dt, {1, 128, 768}, 1, ARK_FP32, 1, 32);
		case_reduce_mean(dt, {2, 5, 1000}, 1, dt, 2, 1000, skew);
		case_reduce_mean(dt, {2, 300, 40}, 1, -1, 1, 40);
		case_reduce_mean(dt, {3, 37, 200}, 2, -1, 7, 1);
		case_reduce_mean(dt, {5, 1001}, 1, -1, 2, 1);
		case_reduce_mean(dt, {2, 7, 3, 65}, 1, ARK_FP16, 2, 64);
		case_reduce_mean(dt, {2, 7, 3, 65}, 2, -1, 4, 32);
		case_reduce_mean(dt, {33, 100}, 0, -1, 1, 64);
		case_reduce_mean(dt, {4097}, 0, -1, 1, 1);
		/* contiguous rows by 16-byte vectors: rows of odd length, each starting off the 16-byte grid
		 * (and the base too), past a batch of 8 vectors a lane; the same with a mask (element by
		 * element) */
		case_reduce_mean(dt, {6, 3313}, 1, -1, 4, 1, skew);
		case_reduce_mean(dt, {5, 2999, 1}, 1, dt, 2, 1, skew);

		/* attention: Sq and Skv over 1, 7, 128, 300, head sizes 32, 64, 128, causal or not, no mask
		 * or one of each dtype, GQA (4 heads on 4, 2 or 1 kv heads), blocks of 16 to 128 rows */
		const int64_t lens[] = {1, 7, 128, 300};
		int ai = 0;
		for (int64_t sq : lens)
			for (int64_t skv : lens)
				for (int64_t dh : {32, 64, 128}) {
					const int hkv = ai % 3 == 0 ? 4 : ai % 3 == 1 ? 2 : 1, mdt = ai % 4 - 1;
					const int bq = sq <= 16 && ai % 2 ? 16 : 32 << (ai % 3);
					case_attention(dt, 2, sq, skv, 4, hkv, dh, ai % 2 == 1, mdt, bq, mdt >= 0 && ai % 5 == 0);
					ai++;
				}
		/* head sizes of the general path (multiples of 8 padded to 32, 64, 128), masked rows */
		case_attention(dt, 1, 37, 45, 2, 1, 8, true, ARK_FP32, 32);
		case_attention(dt, 3, 100, 77, 3, 3, 40, false, ARK_BF16, 64, true);
		case_attention(dt, 1, 129, 200, 2, 2, 72, true, -1, 128);
		case_attention(dt, 2, 16, 16, 8, 2, 120, false, ARK_FP16, 16);
		if (dt == ARK_FP32) { /* blocks of 8 rows, a row a warp (the tiler's first choice in fp32) */
			case_attention(dt, 1, 347, 347, 3, 3, 128, true, -1, 8);
			case_attention(dt, 2, 19, 45, 4, 2, 64, false, ARK_FP32, 8);
		}
		/* the target shape: [1, 12 heads, 128, 64], 48 tasks of 32 rows (ARK_TILES_TIME=1 times it) */
		case_attention(dt, 1, 128, 128, 12, 12, 64, false, -1, 32, false, true);
		case_attention(dt, 1, 128, 128, 12, 12, 64, false, ARK_FP32, 64, false, true);

		/* copy */
		case_copy(dt, 100003, 4099, -1, 0, 0);
		case_copy(dt, 100003, 65536, 0, 0, 0);
		case_copy(dt, 9999, 1000, 0, skew, 0);
		/* embedding: 16-byte rows and odd ones (D = 75, 1), misaligned tables, ids 0 and V - 1
		 * always drawn, an id past the table and a negative one */
		case_embedding(dt, 37, 50257, 768, 4, 0);
		case_embedding(dt, 513, 1000, 75, 8, 0);
		case_embedding(dt, 9, 3, 1, 2, 0);
		case_embedding(dt, 100, 777, 129, 7, skew);
		case_embedding(dt, 64, 30522, 384, 64, 0);
		case_embedding(dt, 33, 50, 40, 4, 0, 50);
		case_embedding(dt, 33, 50, 33, 5, skew, -7);
		case_embedding(dt, 37, 50257, 768, 4, 0, -1, 0); /* with a fused add */
		case_embedding(dt, 100, 777, 129, 7, skew, -1, 0);
		case_embedding(dt, 64, 1000, 384, 64, 0, -1, skew);
		case_embedding(dt, 33, 50, 40, 4, 0, 50, 0);
		case_embedding(dt, 700, 1000, 75, 700, 0, 1000); /* ids in chunks of the threads, the bad one in the second */
		/* the copies of a slice and a transpose that cannot be views */
		case_strided(dt, {7, 130}, ARK_OP_SLICE, 1, 3, 100, 97);
		case_strided(dt, {2, 9, 33}, ARK_OP_SLICE, 2, 5, 21, 4096);
		case_strided(dt, {64, 96}, ARK_OP_TRANSPOSE, 0, 1, 0, 1000);
		case_strided(dt, {3, 5, 7, 11}, ARK_OP_TRANSPOSE, 1, 3, 0, 333);
		case_strided(dt, {2, 7, 12, 64}, ARK_OP_TRANSPOSE, 1, 2, 0, 2048);
		case_concat_copy(dt, {5, 1, 7}, 2, {7, 3, 11}, 13);
		case_concat_copy(dt, {3, 4, 33}, 1, {4, 1}, 4096);
		case_concat_copy(dt, {2, 3, 5, 6}, 0, {2, 1, 3, 2}, 50);
		/* rope: both pair orders, part of each head, 2-D and 3-D, positions 0 to 2047; heads of more
		 * pairs than a row's table of angles holds (ARK_ROPE_TABLE), which make their own */
		case_rope(dt, 0, 1, 9, 64, 64, 0, 100000.0f, 0, 1);
		case_rope(dt, 0, 3, 2, 640, 2 * ARK_ROPE_TABLE + 88, 0, 10000.0f, 301, 2);
		case_rope(dt, 0, 2, 3, 2 * ARK_ROPE_TABLE + 2, 2 * ARK_ROPE_TABLE + 2, 1, 500000.0f, 7, 1);
		case_rope(dt, 0, 3, 32, 64, 64, 1, 500000.0f, 2045, 2);
		case_rope(dt, 0, 7, 4, 128, 32, 0, 10000.0f, 511, 3);
		case_rope(dt, 0, 5, 3, 96, 40, 1, 10000.0f, 17, 5);
		case_rope(dt, 2, 3, 2, 128, 128, 0, 10000.0f, 1000, 4);
		/* decode attention: cache lengths 1, 7, 511, 2048; pos at 0, mid and L - T; head groups 1, 3,
		 * 4 and 32 (query heads in two blocks); head sizes 64 and 128; T = 1 and 3; one split and
		 * several (splits past the position do nothing; the combine reads the others) */
		for (int64_t T : {1, 3})
			for (int64_t L : {1, 7, 511, 2048}) {
				if (T > L)
					continue;
				const int32_t last = (int32_t)(L - T), mid = (int32_t)((L - T) / 2);
				const int64_t S = L >= 256 ? 8 : L >= 7 ? 3 : 1;
				case_decode(dt, T, 9, 3, 64, L, 0, S);
				case_decode(dt, T, 8, 2, 128, L, mid, S);
				case_decode(dt, T, 4, 4, 64, L, last, S);
				case_decode(dt, T, 4, 1, 128, L, last, 1);
			}
		case_decode(dt, 1, 32, 8, 64, 512, 300, 8);
		case_decode(dt, 3, 32, 1, 64, 300, 100, 5);
		case_decode(dt, 1, 6, 2, 8, 100, 99, 4);
		/* many query rows of 16 bits: one head's blocks of 16-128 rows on the attention tile, the
		 * last block shorter; odd T, GQA, every head size, the position mid-cache */
		if (dt != ARK_FP32) {
			case_decode(dt, 77, 6, 2, 64, 300, 100, 1, 32);
			case_decode(dt, 40, 4, 4, 128, 41, 1, 1, 16);
			case_decode(dt, 300, 3, 1, 32, 511, 211, 1, 64);
			case_decode(dt, 130, 2, 2, 80, 2048, 1918, 1, 128);
			case_decode(dt, 33, 9, 3, 64, 64, 31, 1, 32);
			case_decode(dt, 20, 4, 2, 64, 100, 90, 1, 32); /* past L - T: faults and zeros */
		}
		case_decode(dt, 3, 9, 3, 64, 2048, 2046, 16); /* past L - T: faults and zeros */
		case_decode(dt, 1, 9, 3, 64, 64, -1, 1);
		/* argmax: N = 1, 7, 49152, 128256; ties, the max in the last column, NaN */
		case_argmax(dt, 1, 1, 1, 1, false);
		case_argmax(dt, 5, 7, 1, 2, true);
		case_argmax(dt, 1, 49152, 24, 1, false);
		case_argmax(dt, 1, 128256, 62, 1, false);
		case_argmax(dt, 3, 128256, 40, 1, true);
		case_argmax(dt, 130, 49152, 1, 1, false);
		case_argmax(dt, 200, 1000, 1, 3, true);
	}
}

int main(void)
{
	if (!harness_init(ARENA_BYTES, 1 << 16))
		return 0;
	printf("# %d threads, %d bytes of shared memory\n", ARK_THREADS, (int)ARK_TILES_SMEM_BYTES);
	static const char *const tmpl_names[] = {
#define X(id) #id,
		TMPL_LIST(X)
#undef X
	};
	printf("# shared memory per template (TMPL_CATALOG):");
	for (int t = 0; t < ARK_T__COUNT; t++)
		printf(" %s %d", tmpl_names[t], ark_tmpl_smem_bytes(t));
	printf("\n");

	/* ARK_TILES_QUANT_ONLY=1: the quantized cases and rates alone (a quick check of op_quant.cuh) */
	const char *qo = getenv("ARK_TILES_QUANT_ONLY");
	if (!qo || !*qo || *qo == '0')
		cases_float();
	cases_quant();
	for (int qdt : {ARK_Q4_1, ARK_Q8_0}) /* the quantized stream's rate in bytes of blocks */
		if (built(ARK_BF16))
			stream_rate(ARK_BF16, true, 4096, qdt);
	for (int qdt : {ARK_Q4_1, ARK_Q8_0}) /* DEQUANT's rate, blocks in and values out */
		for (int dt : {ARK_BF16, ARK_FP32})
			if (built(dt))
				dequant_rate(dt, qdt, 4096, 16);
	for (int dt = 0; dt < ARK_FLOAT_DTYPES; dt++)
		for (bool tb : {false, true})
			if (built(dt))
				stream_rate(dt, tb, dt == ARK_FP32 ? 2048 : 4096);
	printf("1..%d\n", g_n);
	return g_failed ? 1 : 0;
}
