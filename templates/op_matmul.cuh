// op_matmul.cuh: MATMUL, MATMUL_PARTIAL and REDUCE tiles: weight streaming for small M, mma.sync tensor cores for large M.
#ifndef OP_MATMUL_CUH
#define OP_MATMUL_CUH

#include "ark_dtype.cuh"

/* Paths, chosen per tile (mm_sub below):
 *  stream_kn / stream_nk  rows <= ARK_MM_SMALL_M, b 16-byte aligned: b's tile is streamed once with
 *                         16-byte cp.async into a per-thread ring in shared memory (many loads in
 *                         flight, no barrier in the loop), a's rows staged in shared memory, fp32 FMA;
 *                         16-bit stream_kn tiles of 3-8 rows and 8-128 columns (a power of two of
 *                         vectors) take their k steps on mma.sync instead, a warp waiting only for
 *                         its own copies.
 *  stream_nkt             fp16/bf16 b [N, K] tiles of 2-16 rows: b's rows loaded straight into
 *                         registers as the A operand of mma.sync (out^T = b a^T), no ring.
 *  wgmma                  fp16/bf16 on sm_90a, b [N, K], 16-byte aligned rows, tiles of more than 32
 *                         rows and columns: swizzled cp.async stages, Hopper's warpgroup MMA
 *                         (op_wgmma.cuh).
 *  mma                    fp16/bf16, rows > ARK_MM_SMALL_M, any K, N, alignment: stages shaped to the
 *                         tile (up to 128 x 128), as many as shared memory holds (up to 8), warps
 *                         splitting k when the tile is small (rows not 16-byte aligned copied 4
 *                         bytes at a time, and realigned in shared memory where their length is
 *                         odd),
 *                         ldmatrix + mma.sync.m16n8k16, fp32 sums.
 *  ffma                   fp32 matmuls of more than ARK_MM_STREAM32 rows, every tile, and fp32 tiles
 *                         of fewer rows the streaming path cannot take (odd N or K, misaligned): the
 *                         mma path's stages and k loop, 8 x 8 sums a thread, 16-byte shared-memory
 *                         reads, FMA. */

/* The sizes behind the shared memory of each path (ARK_MM_*, ARK_SMEM_MATMUL) are in abi/ark_smem.h,
 * which arkgen evaluates too. */
#include "ark_smem.h"

/* ARK_TILES_MMA 0: a generated file whose fp16/bf16 matmul tiles all stream b leaves the mma path
 * out (arkgen turns it on for any tile that does not, codegen/emit.c; a tile that would need it stops
 * the kernel with a message naming the switch): its code made mlp8's loop kernel keep 1152 bytes of
 * stack instead of 464 and cost it 175 us per iteration instead of 149. */
#ifndef ARK_TILES_MMA
#define ARK_TILES_MMA 1
#endif
/* ARK_TILES_FFMA 0: the same for the fp32 FMA tile of stages (ark_mm_ffma). */
#ifndef ARK_TILES_FFMA
#define ARK_TILES_FFMA 1
#endif
#ifndef ARK_MM_KSTEPS
#define ARK_MM_KSTEPS 2 /* k16 steps each warp takes per stage (more: fewer barriers, larger stages) */
#endif

static_assert(ARK_THREADS >= 32 * ARK_MM_WARPS, "the matmul templates need at least 256 threads");
/* the sums of the k-groups, kg x rp x (cp + 4) fp32 with kg <= 8 / (ceil(rp / 64) ceil(cp / 32)): at most
 * 4 x 128 x 36 or 8 x 64 x 36 floats */
static_assert(ARK_SMEM_MATMUL >= 8 * 64 * 36 * 4 && ARK_SMEM_MATMUL >= 128 * 132 * 4, "mma: no room for the sums");
/* ffma: the sums of the k-groups, G rp (cp + 4) fp32 with G TY TX <= ARK_THREADS, G, TY <= 16 */
static_assert(ARK_SMEM_MATMUL >= (64 * ARK_THREADS + 32 * 16 * 16) * 4, "ffma: no room for the sums");
static_assert(ARK_MM_STG_CH * ARK_THREADS >= 32 * 128 / 4, "ffma: a 128-row tile needs stages 32 deep");
static_assert(ARK_MM_RING_BYTES / (16 * ARK_MM_TC * ARK_THREADS) >= 2, "ARK_MM_RING_BYTES too small");
static_assert(ARK_MM_RING_BYTES >= ARK_THREADS * 8 * 4, "ARK_MM_RING_BYTES too small for the reduction");

/* Where a matmul tile's operands come from: its op's params (in the loop kernel, a copy in shared
 * memory), the arena their offsets count from, and with partial (MATMUL_PARTIAL) the split-K slice
 * of the workspace it writes. */
struct ark_mm_at {
	const ark_opp *p;
	char *arena;
	uint32_t split;
	bool partial;
};

/* One matmul tile's operands. */
struct ark_mm {
	const char *a, *b;  /* a [M, K]; b [K, N], or [N, K] if tb */
	const char *bias;   /* [N] or null */
	const char *res;    /* [M, N] added last (ARK_OPP_RESIDUAL) or null */
	const char *pre_w;  /* pre == ARK_PRE_RMSNORM: gamma [K]; ARK_PRE_SWIGLU: y [M, K] at a's stride; a is
			     * the fused op's (first) input */
	float pre_eps;
	int pre;            /* enum ark_pre: applied to a's rows as the streaming paths stage them */
	char *out;          /* [M, N] */
	float *ws;          /* partial: fp32 [M, N] slice of this split, else null */
	int64_t M, N, K;
	int64_t bstride;    /* elements from a row of b to the next: K if tb, else N, or more where arkgen
			     * pads b's rows to whole 16-byte vectors (lower_pad.c) */
	int64_t astride;    /* elements from a row of a to the next: K, or more where padded */
	int64_t ostride;    /* elements from a row of out to the next: N, or more where padded (the
			     * residual and the split-K workspace keep N) */
	int act;
	bool tb;
	int qdt;            /* b's dtype when it is block-quantized (ARK_Q4_1, ARK_Q8_0; op_quant.cuh), else 0 */
	ark_mm_at at;       /* what it was built from */
};

/* A tile's operands as the op's params give them (ark_mm_of): the tile functions out of line take
 * this, which travels in registers, and build their ark_mm themselves. An ark_mm passed by value
 * went through the stack (the callers stored it, the callees reloaded its fields), and the dispatch
 * that kept one live across its calls spilled: a 64 x 16 tile spent ~1.9k cycles between the entry
 * of ark_matmul_tile and that of its mma tile (bench/NOTES.md). */
__device__ __forceinline__ ark_mm ark_mm_of(const ark_mm_at &w)
{
	/* every field read first, whatever the op uses: the reads then go out together instead of
	 * one after another behind the flags' branches (~30 cycles each from shared memory) */
	const ark_opp &p = *w.p;
	const uint32_t flags = p.flags, act = p.act, wdtype = p.wdtype, pre = p.pre;
	const uint64_t in0 = p.in[0], in1 = p.in[1], in2 = p.in[2], in3 = p.in[3], out = p.out, ws = p.ws, pre_in = p.pre_in;
	const int64_t M = p.M, N = p.N, K = p.K, bs = p.istride[0][0], as = p.istride[0][1], os = p.istride[0][2];
	const float f = p.f;
	char *arena = w.arena;
	const bool partial = w.partial, tb = (flags & ARK_OPP_TRANSPOSE_B) != 0;
	ark_mm g;
	g.a = arena + in0;
	g.b = arena + in1;
	g.bias = !partial && (flags & ARK_OPP_BIAS) ? arena + in2 : nullptr;
	g.res = !partial && (flags & ARK_OPP_RESIDUAL) ? arena + in3 : nullptr;
	g.pre = (int)pre, g.pre_w = arena + pre_in, g.pre_eps = f;
	g.out = arena + out;
	g.ws = partial ? reinterpret_cast<float *>(arena + ws) + (size_t)w.split * M * N : nullptr;
	g.M = M, g.N = N, g.K = K;
	g.bstride = bs ? bs : tb ? K : N;
	g.astride = as ? as : K;
	g.ostride = os ? os : N;
	g.act = partial ? ARK_ACT_NONE : (int)act;
	g.tb = tb;
	g.qdt = wdtype == ARK_Q4_1 || wdtype == ARK_Q8_0 ? (int)wdtype : 0;
	g.at = w;
	return g;
}

/* A fused residual add: v, the matmul's result, rounded to T as the add would have read it, plus r
 * (the residual's value, as fp32). */
template <typename T> __device__ __forceinline__ float ark_mm_residual(float v, float r)
{
	return ark_to_f(ark_from_f<T>(v)) + r;
}

/* ---- an op fused on a (ark_opp.pre): the streaming paths stage a = x * inv * gamma (ARK_PRE_RMSNORM,
 * from x and the rows' 1 / rms) or silu(x) * y (ARK_PRE_SWIGLU), rounded to T as the op's output
 * would be ------------------------------------------------------------------------------------------ */
/* inv[m] = 1 / rms of row m0 + m of x (all of K) for m < m1 - m0; the warps' partial sums go to
 * inv[ARK_MM_SMALL_M ..] (ARK_MM_PRE_BYTES in all). All threads; inv is ready when it returns. */
template <typename T>
__device__ __noinline__ void ark_mm_pre_stats(const ark_mm &g, int m0, int m1, float *inv)
{
	const T *a = reinterpret_cast<const T *>(g.a);
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, rows = m1 - m0, K = (int)g.K;
	float *part = inv + ARK_MM_SMALL_M; /* [warps][ARK_MM_SMALL_M] */
	constexpr int VEC = ark_dt<T>::vec;
	for (int m = 0; m < rows; m++) {
		const T *x = a + (size_t)(m0 + m) * g.astride;
		float q = 0.0f;
		if (K % VEC == 0 && ark_aligned16(x)) { /* 16-byte loads, all of a thread's in flight */
			for (int v = tid; v < K / VEC; v += ARK_THREADS) {
				float f[VEC];
				ark_unpack<T>(ark_ld16(x + v * VEC), f);
#pragma unroll
				for (int j = 0; j < VEC; j++)
					q += f[j] * f[j];
			}
		} else {
			for (int k = tid; k < K; k += ARK_THREADS) {
				const float v = ark_to_f(x[k]);
				q += v * v;
			}
		}
		q = ark_warp_sum(q);
		if (lane == 0)
			part[warp * ARK_MM_SMALL_M + m] = q;
	}
	__syncthreads();
	if (tid < rows) {
		float q = 0.0f;
		for (int w = 0; w < ARK_THREADS / 32; w++)
			q += part[w * ARK_MM_SMALL_M + tid];
		inv[tid] = rsqrtf(q / K + g.pre_eps); /* as the RMSNORM tile (op_rows.cuh) */
	}
	__syncthreads();
}
/* A fused swiglu's value, silu(x) * y, with the fast exponential and division: every tile of the
 * matmul stages all of its k of a, so the tiles of a down projection make the swiglu once each
 * (128 times over for llama1b's), where the ELEMENTWISE tile's precise expf and division cost more
 * than the dependency level the fusion saves (bench/NOTES.md). It may differ from the op's value in
 * the last bit. */
__device__ __forceinline__ float ark_mm_glu(float x, float y) { return __fdividef(x, 1.0f + __expf(-x)) * y; }

/* y's elements (row, k:k+VEC) under a fused swiglu (zero past kend, and with no swiglu), which the
 * staging loads where it loads x's, so that both reads are in flight together (read after x's use,
 * behind the staging's stores to shared memory, they made a round trip of their own each). */
template <typename T>
__device__ __forceinline__ uint4 ark_mm_glu_y(const ark_mm &g, int row, int k, int kend)
{
	constexpr int VEC = ark_dt<T>::vec;
	if (g.pre != ARK_PRE_SWIGLU)
		return make_uint4(0, 0, 0, 0);
	const T *y = reinterpret_cast<const T *>(g.pre_w) + (size_t)row * g.astride + k;
	if (k + VEC <= kend && ark_aligned16(y))
		return ark_ld16(y);
	T e[VEC];
#pragma unroll
	for (int j = 0; j < VEC; j++)
		e[j] = k + j < kend ? y[j] : ark_from_f<T>(0.0f);
	uint4 v;
	memcpy(&v, e, 16);
	return v;
}
/* Elements (m, k:k+VEC) of a as staged (m: the tile's row), from x's 16-byte vector and, with a
 * swiglu, y's (ark_mm_glu_y): with a norm fused, x * inv[m] * gamma[k + j] in T, gamma read as one
 * vector where it is aligned; with a swiglu, ark_mm_glu(x, y) in T. */
template <typename T>
__device__ __forceinline__ uint4 ark_mm_pre_vec(const ark_mm &g, const float *inv, int m, int k, uint4 xv, uint4 yv)
{
	constexpr int VEC = ark_dt<T>::vec;
	float x[VEC], w[VEC];
	ark_unpack<T>(xv, x);
	if (g.pre == ARK_PRE_SWIGLU) {
		ark_unpack<T>(yv, w);
#pragma unroll
		for (int j = 0; j < VEC; j++)
			x[j] = ark_to_f(ark_from_f<T>(ark_mm_glu(x[j], w[j])));
		return ark_pack<T>(x);
	}
	const T *gamma = reinterpret_cast<const T *>(g.pre_w) + k;
	if (ark_aligned16(gamma)) {
		ark_unpack<T>(ark_ld16(gamma), w);
	} else {
#pragma unroll
		for (int j = 0; j < VEC; j++)
			w[j] = ark_to_f(gamma[j]);
	}
#pragma unroll
	for (int j = 0; j < VEC; j++)
		x[j] = ark_to_f(ark_from_f<T>(x[j] * inv[m] * w[j]));
	return ark_pack<T>(x);
}
/* Element (m, k) of a as staged: x itself, or with a norm fused, x * inv[m] * gamma[k] in T, or with a
 * swiglu, ark_mm_glu(x, y) in T (y loaded by the caller with x: ark_mm_glu_y). */
template <typename T>
__device__ __forceinline__ float ark_mm_pre1(const ark_mm &g, const float *inv, int m, int k, float x, float y)
{
	if (g.pre == ARK_PRE_RMSNORM)
		return ark_to_f(ark_from_f<T>(x * inv[m] * ark_to_f(reinterpret_cast<const T *>(g.pre_w)[k])));
	if (g.pre == ARK_PRE_SWIGLU)
		return ark_to_f(ark_from_f<T>(ark_mm_glu(x, y)));
	return x;
}

/* Epilogue of one output element (global m, n): partial store, or bias + activation (+ residual) +
 * convert. The streaming paths, whose threads hold one or a few elements each, use it; tiles with
 * many elements per thread use ark_mm_epilogue. */
template <typename T> __device__ __forceinline__ void ark_mm_store(const ark_mm &g, int m, int n, float v)
{
	const size_t i = (size_t)m * g.N + n;
	if (g.ws) {
		g.ws[i] = v;
		return;
	}
	if (g.bias)
		v += ark_to_f(reinterpret_cast<const T *>(g.bias)[n]);
	v = ark_act(v, g.act);
	if (g.res)
		v = ark_mm_residual<T>(v, ark_to_f(reinterpret_cast<const T *>(g.res)[i]));
	reinterpret_cast<T *>(g.out)[(size_t)m * g.ostride + n] = ark_from_f<T>(v);
}

/* Epilogue of the tile (m0:m1, n0:n1) whose fp32 sums lie in shared memory, t [m1 - m0][ldt] (or the sum
 * of nsl such slices sl floats apart): fp32 into the split-K workspace, or bias + activation +
 * conversion into out. A lane takes four adjacent columns of a row (C <= 128: one group of four per
 * lane), a warp a row at a time, or several where a row has fewer than 32 such groups, so a lane's
 * columns, and its bias values, are fixed for the whole tile: no division per element, 16-byte reads
 * of t where its rows allow, and 8- or 16-byte stores where the output allows. The activation is
 * switched on once per tile (ark_with_act). All threads. */
__device__ __forceinline__ float4 ark_lds_f32x4(uint32_t a)
{
	float4 v;
	asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(a) : "memory");
	return v;
}
template <typename T>
__device__ __forceinline__ void ark_mm_store4(T *p, const float (&v)[4], int nc, bool vec)
{
	if (vec && nc == 4) {
		if constexpr (sizeof(T) == 4) {
			*reinterpret_cast<float4 *>(p) = make_float4(v[0], v[1], v[2], v[3]);
		} else {
			T h[4];
#pragma unroll
			for (int j = 0; j < 4; j++)
				h[j] = ark_from_f<T>(v[j]);
			*reinterpret_cast<uint2 *>(p) = *reinterpret_cast<const uint2 *>(h);
		}
		return;
	}
#pragma unroll
	for (int j = 0; j < 4; j++)
		if (j < nc)
			p[j] = ark_from_f<T>(v[j]);
}
/* The residual p[j] (j < nc; 0 past nc) as fp32, one 8- or 16-byte load where vec. */
template <typename T>
__device__ __forceinline__ void ark_mm_load4(const T *p, float (&r)[4], int nc, bool vec)
{
	if (vec && nc == 4) { /* unpacked in registers: a T[4] written through a cast lived in local memory */
		if constexpr (sizeof(T) == 4) {
			const float4 x = *reinterpret_cast<const float4 *>(p);
			r[0] = x.x, r[1] = x.y, r[2] = x.z, r[3] = x.w;
		} else {
			const uint2 x = *reinterpret_cast<const uint2 *>(p);
			float f[8];
			ark_unpack<T>(make_uint4(x.x, x.y, 0u, 0u), f);
#pragma unroll
			for (int j = 0; j < 4; j++)
				r[j] = f[j];
		}
		return;
	}
#pragma unroll
	for (int j = 0; j < 4; j++)
		r[j] = j < nc ? ark_to_f(p[j]) : 0.0f;
}
/* v[j] plus the residual r[j] (ark_mm_load4), as ark_mm_residual. */
template <typename T> __device__ __forceinline__ void ark_mm_add4(float (&v)[4], const float (&r)[4])
{
#pragma unroll
	for (int j = 0; j < 4; j++)
		v[j] = ark_mm_residual<T>(v[j], r[j]);
}
template <typename T>
__device__ __forceinline__ void ark_mm_epilogue(const ark_mm &g, const float *t, int ldt, int m0, int m1, int n0, int n1,
						int nsl = 1, int sl = 0)
{
	constexpr int NW = ARK_THREADS / 32;
	const int R = m1 - m0, C = n1 - n0, cw = (C + 3) >> 2;
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const size_t N = (size_t)g.N;
	const uint32_t ts = (uint32_t)__cvta_generic_to_shared(t);
	const bool tv = (ldt & 3) == 0 && (sl & 3) == 0 && (ts & 15) == 0; /* t's rows take 16-byte reads */
	const T *bias = g.bias && !g.ws ? reinterpret_cast<const T *>(g.bias) + n0 : nullptr;
	/* lw lanes a row (a power of two covering the row's groups of four, at most 32), so a warp takes
	 * 32 / lw rows at once and no lane idles on a narrow tile */
	const int lw = min(32, ark_pow2_ceil(cw)), rw = 32 / lw;
	const int r0 = warp * rw + (lane >> (__ffs(lw) - 1)), rstep = NW * rw;
	for (int c4 = lane & (lw - 1); c4 < cw; c4 += lw) {
		const int c = 4 * c4, nc = min(4, C - c);
		float b[4] = {0.0f, 0.0f, 0.0f, 0.0f};
		if (bias)
#pragma unroll
			for (int j = 0; j < 4; j++)
				if (j < nc)
					b[j] = ark_to_f(bias[c + j]);
		/* the sums of row r, columns c .. c + 3, plus the bias */
		auto row = [&](int r, float (&v)[4]) {
#pragma unroll
			for (int j = 0; j < 4; j++)
				v[j] = b[j];
			for (int q = 0; q < nsl; q++) {
				const uint32_t a = ts + 4u * (uint32_t)(q * sl + r * ldt + c);
				if (tv) {
					const float4 x = ark_lds_f32x4(a);
					v[0] += x.x, v[1] += x.y, v[2] += x.z, v[3] += x.w;
				} else {
#pragma unroll
					for (int j = 0; j < 4; j++)
						if (j < nc)
							v[j] += ark_lds_f32(a + 4u * j);
				}
			}
		};
		if (g.ws) {
			float *ws = g.ws + (size_t)m0 * N + n0 + c;
			const bool vec = ((uintptr_t)ws & 15) == 0 && (N & 3) == 0;
			for (int r = r0; r < R; r += rstep) {
				float v[4];
				row(r, v);
				ark_mm_store4<float>(ws + r * N, v, nc, vec);
			}
			continue;
		}
		const size_t O = (size_t)g.ostride;
		T *out = reinterpret_cast<T *>(g.out) + (size_t)m0 * O + n0 + c;
		const bool vec = ((uintptr_t)out & (4 * sizeof(T) - 1)) == 0 && (O & 3) == 0;
		const T *res = g.res ? reinterpret_cast<const T *>(g.res) + (size_t)m0 * N + n0 + c : nullptr;
		const bool rvec = ((uintptr_t)res & (4 * sizeof(T) - 1)) == 0 && (N & 3) == 0;
		ark_with_act(g.act, [&](auto f) {
			/* the residual rows requested at once before the first is read (prefetches: no
			 * registers held): a load after a store to out waits for it (out and res may alias,
			 * for all the compiler knows), so a row at a time waited a memory round trip each,
			 * 16 a thread in a 128 x 128 tile */
			if (res)
				for (int r = r0; r < R; r += rstep)
					asm volatile("prefetch.global.L1 [%0];\n" ::"l"(res + r * N));
			for (int r = r0; r < R; r += rstep) {
				float v[4];
				row(r, v);
#pragma unroll
				for (int j = 0; j < 4; j++)
					v[j] = f(v[j]);
				if (res) {
					float rv[4];
					ark_mm_load4<T>(res + r * N, rv, nc, rvec);
					ark_mm_add4<T>(v, rv);
				}
				ark_mm_store4<T>(out + r * O, v, nc, vec);
			}
		});
	}
}

/* stream_kn: stages a[m0:m1, kc0:kc0+kcn] into a_s as fp32 [kcn][MB], rows past m1 zero; issued()
 * runs once a's loads are in flight, before their values are used (the first chunk issues b's first
 * steps there: inline, as a call would take the address of the tile's state). All threads. */
template <typename T, int MB, typename F>
__device__ __forceinline__ void ark_mm_stage_a_kn_at(const ark_mm &g, int m0, int m1, int kc0, int kcn, float *a_s,
						     bool avec, const float *inv, F &&issued)
{
	const T *a = reinterpret_cast<const T *>(g.a);
	const int64_t K = g.astride; /* a's rows */
	constexpr int VEC = ark_dt<T>::vec;
	const int tid = threadIdx.x;
	if (avec) { /* every 16-byte vector of the chunk in flight at once */
		constexpr int AV = (ARK_MM_A_BYTES / 4 + VEC * ARK_THREADS - 1) / (VEC * ARK_THREADS);
		const int rows = m1 - m0, rv = (kcn + VEC - 1) / VEC, nv_a = rows * rv; /* vectors per row, all */
		/* vector e is row m = e % rows, k-vector kv = e / rows: neighbouring threads take neighbouring
		 * rows, so their stores to a_s [k][MB] land in different banks (by k-vector they would all
		 * hit one bank when MB * VEC is a multiple of 32) */
		uint4 q[AV], qy[AV]; /* qy: a fused swiglu's y */
#pragma unroll
		for (int u = 0; u < AV; u++) {
			const int e = u * ARK_THREADS + tid, kv = e / rows, m = e - kv * rows;
			q[u] = e < nv_a ? ark_ld16(a + (size_t)(m0 + m) * K + kc0 + kv * VEC) : make_uint4(0, 0, 0, 0);
			qy[u] = e < nv_a ? ark_mm_glu_y<T>(g, m0 + m, kc0 + kv * VEC, kc0 + kcn) : make_uint4(0, 0, 0, 0);
		}
		issued();
#pragma unroll
		for (int u = 0; u < AV; u++) {
			const int e = u * ARK_THREADS + tid, kv = e / rows, m = e - kv * rows;
			if (e < nv_a) {
				float x[VEC], y[VEC];
				ark_unpack<T>(q[u], x);
				ark_unpack<T>(qy[u], y);
#pragma unroll
				for (int j = 0; j < VEC; j++)
					if (kv * VEC + j < kcn)
						a_s[(kv * VEC + j) * MB + m] = ark_mm_pre1<T>(g, inv, m, kc0 + kv * VEC + j, x[j], y[j]);
			}
		}
		/* rows m1 - m0 .. MB - 1 are read but not used: zero them once per chunk */
		for (int e = tid; e < kcn * (MB - (m1 - m0)); e += ARK_THREADS) {
			const int kk = e / (MB - (m1 - m0)), m = (m1 - m0) + e % (MB - (m1 - m0));
			a_s[kk * MB + m] = 0.0f;
		}
	} else {
		issued();
		const T *y = reinterpret_cast<const T *>(g.pre_w); /* a fused swiglu's y */
		const bool glu = g.pre == ARK_PRE_SWIGLU;
		for (int e0 = 0; e0 < kcn * MB; e0 += 8 * ARK_THREADS) { /* 8 loads in flight (and 8 of y) */
			float x[8], yv[8];
#pragma unroll
			for (int u = 0; u < 8; u++) {
				const int e = e0 + u * ARK_THREADS + tid, kk = e / MB, m = e % MB;
				const bool on = e < kcn * MB && m0 + m < m1;
				x[u] = on ? ark_to_f(a[(size_t)(m0 + m) * K + kc0 + kk]) : 0.0f;
				yv[u] = on && glu ? ark_to_f(y[(size_t)(m0 + m) * K + kc0 + kk]) : 0.0f;
			}
#pragma unroll
			for (int u = 0; u < 8; u++) {
				const int e = e0 + u * ARK_THREADS + tid, kk = e / MB, m = e % MB;
				if (e < kcn * MB && m0 + m < m1)
					x[u] = ark_mm_pre1<T>(g, inv, m, kc0 + kk, x[u], yv[u]);
			}
#pragma unroll
			for (int u = 0; u < 8; u++)
				if (e0 + u * ARK_THREADS + tid < kcn * MB)
					a_s[e0 + u * ARK_THREADS + tid] = x[u];
		}
	}
}

/* The chunks of a after the first: out of line, as each runs once a chunk. */
template <typename T, int MB>
__device__ __noinline__ void ark_mm_stage_a_kn(const ark_mm &g, int m0, int m1, int kc0, int kcn, float *a_s, bool avec,
						const float *inv)
{
	ark_mm_stage_a_kn_at<T, MB>(g, m0, m1, kc0, kcn, a_s, avec, inv, [] {});
}

/* ldmatrix x4 (and transposed) at a shared-window address s, or at a generic pointer into shared memory */
__device__ __forceinline__ void ark_ldsm_x4a(uint32_t *r, uint32_t s)
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
		     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
		     : "r"(s)
		     : "memory");
}
__device__ __forceinline__ void ark_ldsm_x4a_t(uint32_t *r, uint32_t s)
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
		     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
		     : "r"(s)
		     : "memory");
}
__device__ __forceinline__ void ark_ldsm_x4(uint32_t *r, const void *p)
{
	ark_ldsm_x4a(r, (uint32_t)__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void ark_ldsm_x4_t(uint32_t *r, const void *p)
{
	ark_ldsm_x4a_t(r, (uint32_t)__cvta_generic_to_shared(p));
}
template <typename T> __device__ __forceinline__ void ark_mma16816(float *d, const uint32_t *a, const uint32_t *b);
template <> __device__ __forceinline__ void ark_mma16816<__half>(float *d, const uint32_t *a, const uint32_t *b)
{
	asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
		     "{%8, %9}, {%0, %1, %2, %3};\n"
		     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <>
__device__ __forceinline__ void ark_mma16816<__nv_bfloat16>(float *d, const uint32_t *a, const uint32_t *b)
{
	asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
		     "{%8, %9}, {%0, %1, %2, %3};\n"
		     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* ---- streaming, b [K, N] ------------------------------------------------------------------------
 * tile (m1-m0 <= MB, n1-n0 <= 128) of out over k0:k1. Thread = (k-lane kl, column vector cv): at step i
 * it reads the 16-byte vector of b row k0 + i*KL + kl at columns n0 + cv*VEC, so a step reads KL whole
 * rows of the tile, coalesced; the step's slots of the ring are then b[KL][nv * VEC], row-major.
 * Needs bstride % VEC == 0, n0 % VEC == 0, b 16-byte aligned.
 * TC == 0: partial sums [MB][VEC] per thread, reduced over the k-lanes in smem.
 * TC == 1, 2 (16-bit, nv a power of two, so KL a multiple of 16): a's chunks staged as fp32 [k][MB]
 * (TC 1: a fused norm on the way, or rows not of whole 16-byte vectors) or copied as they are (TC 2,
 * the first chunk by cp.async ahead of b's steps); the step's b is 16 jobs of 16 rows x 8 columns (k-group, column vector), two a warp, each one mma.sync
 * m16n8k16 on a's pairs of k and b's rows by ldmatrix .trans; a warp copies its own jobs' rows, so a
 * step waits for the warp's copies only; sums [16 / nv k-groups][MB][tn], reduced in smem. Where MB
 * rows of FMA a weight bound the tile (8 rows: 64 FMAs a thread a step, the step's copies landed long
 * before), the tensor cores leave it bound by its copies (bench/NOTES.md). */
template <typename T, int MB, int TC>
__device__ __forceinline__ void ark_mm_stream_kn_t(const ark_mm &g, int m0, int m1, int n0, int n1, int k0, int k1,
						   char *smem)
{
	constexpr int VEC = ark_dt<T>::vec;
	constexpr int S = ARK_MM_RING_BYTES / (16 * ARK_THREADS); /* ring slots per thread */
	static_assert(!TC || (sizeof(T) == 2 && MB <= 16), "the tensor-core steps take 16-bit a of at most 16 rows");
	uint4 *ring = reinterpret_cast<uint4 *>(smem);            /* [S][ARK_THREADS] */
	float *a_s = reinterpret_cast<float *>(smem + ARK_MM_RING_BYTES); /* [KC][MB] chunk of a, fp32 */
	const T *b = reinterpret_cast<const T *>(g.b);
	const int tid = threadIdx.x;
	const int tn = n1 - n0, nv = (tn + VEC - 1) / VEC;
	const int KL = ARK_THREADS / nv; /* k-lanes */
	const int kl = tid / nv, cv = tid - kl * nv;
	const bool active = kl < KL;
	const int nsteps = (k1 - k0 + KL - 1) / KL;
	/* TC 2: a's chunk is [MB][KCH] in its own type (the k of a chunk a multiple of 64, KL's too) */
	constexpr int KCH = ARK_MM_A_BYTES / (MB * 2);
	const int spc = TC == 2 ? KCH / KL : (ARK_MM_A_BYTES / (4 * MB)) / KL; /* steps per chunk of a (>= 1) */
	const T *bcol = b + n0 + cv * VEC;
	/* a's chunks start at k0 + a multiple of spc * KL: 16-byte vectors when those are aligned */
	const bool avec = ark_aligned16(g.a) && g.astride % VEC == 0 && k0 % VEC == 0 && (spc * KL) % VEC == 0;
	float *inv = reinterpret_cast<float *>(smem + ARK_MM_RING_BYTES + ARK_MM_A_BYTES + ARK_MM_SACC_BYTES);
	if (g.pre == ARK_PRE_RMSNORM)
		ark_mm_pre_stats<T>(g, m0, m1, inv);
	const uint64_t pol = ark_l2_once(); /* b is read once */

	/* TC: warp w's jobs q = 2w, 2w + 1 of a step are k-group q / nv (rows 16 (q / nv) of the step)
	 * and column vector q % nv; lane l gives ldmatrix the row l & 15 of job l >> 4 */
	const int lane = tid & 31, warp = tid >> 5, gq = lane >> 2, tq = lane & 3;
	const int kg0 = (2 * warp) / nv, kg1 = (2 * warp + 1) / nv;
	/* TC: a step's row r keeps its column vector c at slot r nv + (c ^ swz(r)), so the 8 rows an
	 * ldmatrix phase reads (8 consecutive rows, 16 bytes each) fall in 8 distinct groups of banks */
	auto swz = [nv](int r) { return nv >= 8 ? r & 7 : ((r * nv) >> 3) & (nv - 1); };
	const int ld_job = 2 * warp + (lane >> 4), ld_row = (ld_job / nv) * 16 + (lane & 15);
	const int ld_off = ld_row * nv + ((ld_job % nv) ^ swz(ld_row)); /* uint4 in a step's slots */
	const T *ld_col = b + n0 + (ld_job % nv) * VEC;
	constexpr int MB_ACC = TC ? 1 : MB, VEC_ACC = TC ? 8 : VEC;
	float acc[MB_ACC][VEC_ACC]; /* TC: the two jobs' m16n8 sums, 4 + 4 */
#pragma unroll
	for (int m = 0; m < MB_ACC; m++)
#pragma unroll
		for (int j = 0; j < VEC_ACC; j++)
			acc[m][j] = 0.0f;

	/* TC 2: a's element (m, k) of a chunk sits at a_h[m KCH + ((k / 8) ^ (m & 7)) 8 + k % 8], so the
	 * fragments' 32-bit loads (8 rows, 4 pairs of k) fall in 32 distinct banks; rows past m1 and k
	 * past k1 are never read (the fragments mask them) */
	T *a_h = reinterpret_cast<T *>(smem + ARK_MM_RING_BYTES);
	const int rows = m1 - m0;
	const T *a_g = reinterpret_cast<const T *>(g.a) + (size_t)m0 * g.astride;
	auto a_chunk = [&](int kc0, bool async) { /* a[m0:m1, kc0:kc0 + KCH] (to k1), 16-byte vectors */
		const int nvk = (min(KCH, k1 - kc0) + 7) / 8, n = rows * nvk;
#pragma unroll 1
		for (int e0 = 0; e0 < n; e0 += 8 * ARK_THREADS) {
			uint4 q[8];
#pragma unroll
			for (int u = 0; u < 8; u++) {
				const int e = e0 + u * ARK_THREADS + tid, m = e / nvk, v = e - m * nvk;
				T *d = a_h + m * KCH + ((v ^ (m & 7)) * 8);
				if (e < n) {
					if (async)
						ark_cp_async16(d, a_g + (size_t)m * g.astride + kc0 + v * 8, 16);
					else
						q[u] = ark_ld16(a_g + (size_t)m * g.astride + kc0 + v * 8);
				}
			}
			if (!async)
#pragma unroll
				for (int u = 0; u < 8; u++) {
					const int e = e0 + u * ARK_THREADS + tid, m = e / nvk, v = e - m * nvk;
					if (e < n)
						*reinterpret_cast<uint4 *>(a_h + m * KCH + ((v ^ (m & 7)) * 8)) = q[u];
				}
		}
	};

	auto issue = [&](int i) {
		if constexpr (TC) { /* a lane copies the vector it gives ldmatrix: a warp's jobs are its own
				     * copies; rows past k1 of the last step zero (0 bytes read) */
			const int k = k0 + i * KL + ld_row;
			if (i < nsteps)
				ark_cp_async16_once(&ring[(i % S) * ARK_THREADS + ld_off],
						    k < k1 ? ld_col + (size_t)k * g.bstride : ld_col, k < k1 ? 16 : 0, pol);
		} else {
			const int k = k0 + i * KL + kl;
			if (active && k < k1)
				ark_cp_async16_once(&ring[(i % S) * ARK_THREADS + tid], bcol + (size_t)k * g.bstride, 16,
						    pol);
		}
		ark_cp_commit();
	};
	/* a's first chunk is loaded before b's first S - 1 steps are issued: loaded after them (~60 KB
	 * of requests an SM), it arrived 3-4 us into the task, after most of them (bench/NOTES.md) */
	__syncthreads();
	if constexpr (TC == 2) { /* a's first chunk by cp.async, its own group ahead of b's: waited for
				  * with b's first step */
		a_chunk(k0, true);
		ark_cp_commit();
#pragma unroll 1
		for (int s = 0; s < S - 1; s++)
			issue(s);
	} else {
		ark_mm_stage_a_kn_at<T, MB>(g, m0, m1, k0, min(spc * KL, k1 - k0), a_s, avec, inv, [&] {
#pragma unroll 1 /* once a tile: a loop, not S - 1 copies of the code to fetch */
			for (int s = 0; s < S - 1; s++)
				issue(s);
		});
		__syncthreads();
	}

	int chunk0 = 0, chunk_end = spc; /* steps [chunk0, chunk_end) use the staged chunk of a */
	for (int i = 0; i < nsteps; i++) {
		if (i == chunk_end) { /* uniform: stage a[m0:m1, kc0:kc0+kcn] (TC 2: as it is, else as fp32 [kk][m]) */
			const int kc0 = k0 + i * KL;
			const int kcn = min(spc * KL, k1 - kc0);
			__syncthreads();
			if constexpr (TC == 2)
				a_chunk(kc0, false);
			else
				ark_mm_stage_a_kn<T, MB>(g, m0, m1, kc0, kcn, a_s, avec, inv);
			__syncthreads();
			chunk0 = i;
			chunk_end = i + spc;
		}
		ark_cp_wait<S - 2>(); /* this thread's step i has landed */
		if constexpr (TC) {
			if (TC == 2 && i == 0)
				__syncthreads(); /* every thread's copies of a's first chunk */
			else
				__syncwarp(); /* and the warp's other lanes': its jobs read only the warp's copies */
			uint32_t bf[4];
			ark_ldsm_x4_t(bf, &ring[(i % S) * ARK_THREADS + ld_off]);
			/* a's fragment of k-group kg: rows gq (and gq + 8), k 2 tq, 2 tq + 1 (and + 8): pairs
			 * of k as they sit in a_h (TC 2) or rounded from a_s (TC 1), rows past m1 and k past k1
			 * zero */
			auto afrag = [&](int kg, uint32_t *af) {
				if constexpr (TC == 1) {
					const int kk = (i - chunk0) * KL + kg * 16 + 2 * tq, kq = k0 + i * KL + kg * 16 + 2 * tq;
					float v[2][4];
#pragma unroll
					for (int h = 0; h < 2; h++) /* rows gq, gq + 8 */
#pragma unroll
						for (int e = 0; e < 4; e++) { /* k: +0, +1, +8, +9 */
							const int dk = (e & 1) + (e >> 1) * 8, m = gq + 8 * h;
							v[h][e] = m < MB && kq + dk < k1 ? a_s[(kk + dk) * MB + m] : 0.0f;
						}
					af[0] = ark_pack2<T>(v[0][0], v[0][1]), af[1] = ark_pack2<T>(v[1][0], v[1][1]);
					af[2] = ark_pack2<T>(v[0][2], v[0][3]), af[3] = ark_pack2<T>(v[1][2], v[1][3]);
				} else {
					const int v0 = ((i - chunk0) * KL + kg * 16) / 8, kq = k0 + i * KL + kg * 16 + 2 * tq;
#pragma unroll
					for (int h = 0; h < 2; h++) { /* rows gq, gq + 8 */
						const int m = gq + 8 * h;
#pragma unroll
						for (int e = 0; e < 2; e++) { /* k + 8 e */
							uint32_t w = 0;
							if ((h == 0 || MB > 8) && m < rows && kq + 8 * e < k1) {
								w = *reinterpret_cast<const uint32_t *>(
									a_h + m * KCH + (((v0 + e) ^ (m & 7)) * 8) + 2 * tq);
								if (kq + 8 * e + 1 >= k1) /* the pair's second k past k1 */
									w &= 0xffffu;
							}
							af[h + 2 * e] = w;
						}
					}
				}
			};
			uint32_t af[4];
			afrag(kg0, af);
			ark_mma16816<T>(&acc[0][0], af, &bf[0]);
			if (kg1 != kg0) /* nv == 1: the warp's two jobs are two k-groups */
				afrag(kg1, af);
			ark_mma16816<T>(&acc[0][4], af, &bf[2]);
			issue(i + S - 1); /* refills the slot the warp read at step i - 1 */
		} else {
			issue(i + S - 1); /* refills the slot read at step i - 1 */
			const int k = k0 + i * KL + kl;
			if (!active || k >= k1)
				continue;
			float bf[VEC];
			ark_unpack<T>(ring[(i % S) * ARK_THREADS + tid], bf);
			const float *ap = a_s + ((i - chunk0) * KL + kl) * MB;
			float av[MB];
			if constexpr (MB % 4 == 0) {
#pragma unroll
				for (int m = 0; m < MB; m += 4) {
					const float4 q = *reinterpret_cast<const float4 *>(ap + m);
					av[m] = q.x, av[m + 1] = q.y, av[m + 2] = q.z, av[m + 3] = q.w;
				}
			} else {
#pragma unroll
				for (int m = 0; m < MB; m++)
					av[m] = ap[m];
			}
#pragma unroll
			for (int m = 0; m < MB_ACC; m++)
#pragma unroll
				for (int j = 0; j < VEC_ACC; j++)
					acc[m][j] = fmaf(av[m], bf[j], acc[m][j]);
		}
	}
	ark_cp_wait<0>();
	__syncthreads();

	float *red = reinterpret_cast<float *>(smem); /* aliases the ring */
	if constexpr (TC) { /* red [16 / nv][MB][nv * 8]: a k-group's sums of every row and column */
		const int G = 16 / nv, W = nv * 8;
#pragma unroll
		for (int u = 0; u < 2; u++) {
			const int q = 2 * warp + u, kg = q / nv, c = (q % nv) * 8 + 2 * tq;
#pragma unroll
			for (int h = 0; h < 2; h++)
				if (gq + 8 * h < MB)
					*reinterpret_cast<float2 *>(red + (kg * MB + gq + 8 * h) * W + c) =
						make_float2(acc[0][4 * u + 2 * h], acc[0][4 * u + 2 * h + 1]);
		}
		__syncthreads();
		/* the G k-groups' slices summed four columns a lane, the bias read once a tile */
		ark_mm_epilogue<T>(g, red, W, m0, m1, n0, n1, G, MB * W);
		__syncthreads();
		return;
	} else {
		/* Reduction over the k-lanes: red [mc][KL][nv * VEC] fp32. */
		const int rowf = KL * nv * VEC;
		const int mc = min(MB, (ARK_MM_RING_BYTES / 4) / rowf);
		for (int mr = 0; mr < rows; mr += mc) {
			if (active) {
#pragma unroll
				for (int m = 0; m < MB_ACC; m++) {
					if (m >= mr && m < mr + mc) {
						float4 *d = reinterpret_cast<float4 *>(red + ((m - mr) * KL + kl) * nv * VEC + cv * VEC);
#pragma unroll
						for (int j = 0; j < VEC_ACC; j += 4)
							d[j / 4] = make_float4(acc[m][j], acc[m][j + 1], acc[m][j + 2], acc[m][j + 3]);
					}
				}
			}
			__syncthreads();
			const int cnt = min(mc, rows - mr) * tn, ls = nv * VEC;
			for (int o = tid; o < cnt; o += ARK_THREADS) {
				const int mm = o / tn, c = o - mm * tn;
				const float *r = red + mm * rowf + c;
				/* four sums, eight loads in flight, where one sum waited a shared-memory round trip a
				 * k-lane (the phase's time is mostly its barriers and stores: bench/NOTES.md) */
				float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
				int q = 0;
#pragma unroll 2
				for (; q + 4 <= KL; q += 4)
#pragma unroll
					for (int j = 0; j < 4; j++)
						s[j] += r[(q + j) * ls];
				for (; q < KL; q++)
					s[0] += r[q * ls];
				ark_mm_store<T>(g, m0 + mr + mm, n0 + c, (s[0] + s[1]) + (s[2] + s[3]));
			}
			__syncthreads();
		}
	}
}

/* ARK_MM_KN_TC_ROWS: the fewest rows (the tile's MB) of a 16-bit b [K, N] streaming tile that takes
 * the tensor-core steps. At MB 2 the FMA steps (16 FMAs a thread a step) measured 8% faster on weights
 * from DRAM, at MB 4 and 8 the tensor-core steps 3-13% faster (bench/NOTES.md). */
#ifndef ARK_MM_KN_TC_ROWS
#define ARK_MM_KN_TC_ROWS 4
#endif

template <typename T, int MB>
__device__ __noinline__ void ark_mm_stream_kn(const ark_mm_at at, int m0, int m1, int n0, int n1, int k0, int k1, char *smem)
{
	const ark_mm g = ark_mm_of(at);
	if constexpr (sizeof(T) == 2 && MB >= ARK_MM_KN_TC_ROWS) {
		const int nv = (n1 - n0 + ark_dt<T>::vec - 1) / ark_dt<T>::vec;
		if ((nv & (nv - 1)) == 0) {
			/* a as it is, by 16-byte cp.async, where its rows are whole vectors and no norm is
			 * applied on the way: 11-25% faster than a staged as fp32 (bench/NOTES.md) */
			if (!g.pre && ark_aligned16(g.a) && g.astride % 8 == 0 && k0 % 8 == 0)
				ark_mm_stream_kn_t<T, MB, 2>(g, m0, m1, n0, n1, k0, k1, smem);
			else
				ark_mm_stream_kn_t<T, MB, 1>(g, m0, m1, n0, n1, k0, k1, smem);
			return;
		}
	}
	ark_mm_stream_kn_t<T, MB, 0>(g, m0, m1, n0, n1, k0, k1, smem);
}

/* ARK_MM_STAMP(i): where a probe times the phases of a streaming tile (bench/stream_probe.cu defines
 * it to stamp the globaltimer); nothing otherwise. */
#ifndef ARK_MM_STAMP
#define ARK_MM_STAMP(i) ((void)0)
#endif

/* ---- streaming, b [N, K] ------------------------------------------------------------------------
 * tile (m1-m0 <= MB, n1-n0 <= 128) of out over k0:k1. A work item is (group of TC columns, k-slice);
 * warps take items, lanes take consecutive 16-byte vectors along K (one warp step = 32 vectors of each
 * of TC rows of b, coalesced); per-lane sums [TC][MB] are reduced with shuffles and added into
 * sacc [MB][tn] in smem. a is staged as [MB][KC] in its own type. Needs b's rows to be whole 16-byte
 * vectors (b 16-byte aligned, bstride % VEC == 0, k0 % VEC == 0); a's are loaded element by element
 * where they are not. */
template <typename T, int MB>
__device__ __noinline__ void ark_mm_stream_nk(const ark_mm_at at, int m0, int m1, int n0, int n1, int k0, int k1, char *smem)
{
	const ark_mm g = ark_mm_of(at);
	constexpr int VEC = ark_dt<T>::vec, C = ARK_MM_TC;
	constexpr int S = ARK_MM_RING_BYTES / (16 * C * ARK_THREADS);    /* ring slots per thread */
	constexpr int KC = (ARK_MM_A_BYTES / (MB * (int)sizeof(T))) / (32 * VEC) * (32 * VEC); /* k per chunk */
	static_assert(KC >= 32 * VEC, "ARK_MM_A_BYTES too small");
	uint4 *ring = reinterpret_cast<uint4 *>(smem);                   /* [S][C][ARK_THREADS] */
	T *a_s = reinterpret_cast<T *>(smem + ARK_MM_RING_BYTES);        /* [MB][KC] */
	float *sacc = reinterpret_cast<float *>(smem + ARK_MM_RING_BYTES + ARK_MM_A_BYTES); /* [MB][tn] */
	float *inv = reinterpret_cast<float *>(smem + ARK_MM_RING_BYTES + ARK_MM_A_BYTES + ARK_MM_SACC_BYTES);
	const T *a = reinterpret_cast<const T *>(g.a);
	const T *b = reinterpret_cast<const T *>(g.b);
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	const int tn = n1 - n0, rows = m1 - m0;
	const int groups = (tn + C - 1) / C;
	/* a's chunks start at k0 + multiples of KC: 16-byte vectors where a's rows are */
	const bool avec = ark_aligned16(g.a) && g.astride % VEC == 0 && k0 % VEC == 0;
	ARK_MM_STAMP(0);
	if (g.pre == ARK_PRE_RMSNORM)
		ark_mm_pre_stats<T>(g, m0, m1, inv);
	const uint64_t pol = ark_l2_once(); /* b is read once */

	for (int e = tid; e < MB * tn; e += ARK_THREADS)
		sacc[e] = 0.0f;
	for (int kc0 = k0; kc0 < k1; kc0 += KC) { /* uniform */
		const int kce = min(kc0 + KC, k1);
		const int kvn = (kce - kc0 + VEC - 1) / VEC; /* vectors per row in this chunk */
		const int nks = (kvn + 31) / 32;             /* warp steps per row */
		__syncthreads();                             /* a_s of the previous chunk read by all */
		/* items: (group, k-slice); enough slices that every warp has work when groups are few */
		int ks_n = 1;
		if (groups < 2 * ARK_WARPS)
			ks_n = min(nks, (2 * ARK_WARPS + groups - 1) / groups);
		const int spi = (nks + ks_n - 1) / ks_n; /* steps per item */
		const int items = groups * ks_n;
		const int my_items = warp < items ? (items - warp + ARK_WARPS - 1) / ARK_WARPS : 0;
		const int nflat = my_items * spi;

		/* a warp walks its items' steps in order: (item it, step s of spi), it = warp + j * ARK_WARPS;
		 * item it is column group it % groups, steps (it / groups) * spi + [0, spi) */
		struct cursor {
			int f, s, it, grp, step0;
		};
		auto start = [&](cursor &c) {
			c.f = 0, c.s = 0, c.it = warp, c.grp = warp % groups, c.step0 = warp / groups * spi;
		};
		auto advance = [&](cursor &c) {
			c.f++;
			if (++c.s == spi) {
				c.s = 0;
				c.it += ARK_WARPS;
				c.grp = c.it % groups;
				c.step0 = c.it / groups * spi;
			}
		};
		cursor ic, cc; /* issue and compute cursors */
		start(ic);
		start(cc);
		auto issue = [&]() {
			const int step = ic.step0 + ic.s;
			const int k = kc0 + (step * 32 + lane) * VEC;
			if (ic.f < nflat && step < nks && k < kce) {
				const int nb = (kce - k) * (int)sizeof(T);
#pragma unroll
				for (int c = 0; c < C; c++) {
					const int n = n0 + ic.grp * C + c;
					uint4 *dst = &ring[((ic.f % S) * C + c) * ARK_THREADS + tid];
					if (n < n1)
						ark_cp_async16_once(dst, b + (size_t)n * g.bstride + k, nb < 16 ? nb : 16, pol);
					else
						ark_cp_async16(dst, b, 0);
				}
			}
			ark_cp_commit();
			advance(ic);
		};
		/* stage a[m0:m1, kc0:kce], 4 vectors per thread at a time: the first four are loaded before the
		 * first steps of b are issued (issued after b's 48 KB of requests, they came ~2 us later; first,
		 * a tile of llama1b's phases takes 0.3-0.8 us less), the others while b's steps are in flight */
		auto load_a = [&](int e0, uint4 (&q)[4], uint4 (&qy)[4]) { /* qy: a fused swiglu's y */
#pragma unroll
			for (int u = 0; u < 4; u++) {
				const int e = e0 + u * ARK_THREADS + tid;
				const int m = e / (nks * 32), v = e - m * (nks * 32);
				const int k = kc0 + v * VEC;
				q[u] = qy[u] = make_uint4(0, 0, 0, 0);
				if (m < rows && k < kce) {
					qy[u] = ark_mm_glu_y<T>(g, m0 + m, k, kce);
					const T *x = a + (size_t)(m0 + m) * g.astride + k;
					if (avec) {
						q[u] = ark_ld16(x);
					} else { /* a's rows not 16-byte vectors (b's padded): element by element */
						T e[VEC];
#pragma unroll
						for (int j = 0; j < VEC; j++)
							e[j] = k + j < kce ? x[j] : ark_from_f<T>(0.0f);
						memcpy(&q[u], e, 16);
					}
				}
			}
		};
		uint4 q[4], qy[4];
		load_a(0, q, qy);
#pragma unroll 1 /* once a chunk: a loop, not S - 1 copies of the C-wide issue to fetch (bench/NOTES.md) */
		for (int s = 0; s < S - 1; s++)
			issue();
		ARK_MM_STAMP(1);

		for (int e0 = 0; e0 < MB * nks * 32; e0 += 4 * ARK_THREADS) {
			if (e0 > 0)
				load_a(e0, q, qy);
#pragma unroll
			for (int u = 0; u < 4; u++) {
				const int e = e0 + u * ARK_THREADS + tid;
				const int m = e / (nks * 32), v = e - m * (nks * 32);
				const int k = kc0 + v * VEC;
				if (m < MB) {
					if (g.pre && m < rows && k + VEC <= kce) {
						q[u] = ark_mm_pre_vec<T>(g, inv, m, k, q[u], qy[u]);
					} else if (k + VEC > kce) { /* zero what lies past the chunk */
						float x[VEC], y[VEC];
						ark_unpack<T>(q[u], x);
						ark_unpack<T>(qy[u], y);
#pragma unroll
						for (int j = 0; j < VEC; j++)
							x[j] = k + j >= kce ? 0.0f : m < rows ? ark_mm_pre1<T>(g, inv, m, k + j, x[j], y[j]) : x[j];
						q[u] = ark_pack<T>(x);
					}
					*reinterpret_cast<uint4 *>(a_s + m * KC + v * VEC) = q[u];
				}
			}
		}
		__syncthreads();
		ARK_MM_STAMP(2);

		float acc[C][MB];
#pragma unroll
		for (int c = 0; c < C; c++)
#pragma unroll
			for (int m = 0; m < MB; m++)
				acc[c][m] = 0.0f;
		for (; cc.f < nflat; advance(cc)) { /* uniform within the warp */
			ark_cp_wait<S - 2>();
			if (cc.f == 0)
				ARK_MM_STAMP(3);
			issue();
			const int f = cc.f, s = cc.s, grp = cc.grp, step = cc.step0 + cc.s;
			const int v = step * 32 + lane;
			if (step < nks && v < kvn) {
				float bf[C][VEC];
#pragma unroll
				for (int c = 0; c < C; c++)
					ark_unpack<T>(ring[((f % S) * C + c) * ARK_THREADS + tid], bf[c]);
#pragma unroll
				for (int m = 0; m < MB; m++) {
					float av[VEC];
					ark_unpack<T>(*reinterpret_cast<const uint4 *>(a_s + m * KC + v * VEC), av);
#pragma unroll
					for (int c = 0; c < C; c++)
#pragma unroll
						for (int j = 0; j < VEC; j++)
							acc[c][m] = fmaf(av[j], bf[c][j], acc[c][m]);
				}
			}
			if (s == spi - 1) { /* item done: the warp's C x MB sums (halving) into sacc */
				constexpr int NV = C * MB, PER = NV >= 32 ? NV / 32 : 1, GRP = NV >= 32 ? 1 : 32 / NV;
				float v[NV];
#pragma unroll
				for (int c = 0; c < C; c++)
#pragma unroll
					for (int m = 0; m < MB; m++)
						v[c * MB + m] = acc[c][m], acc[c][m] = 0.0f;
				ark_warp_sums<NV, 16>(v, lane);
				if (lane % GRP == 0) {
#pragma unroll
					for (int j = 0; j < PER; j++) {
						const int i = NV >= 32 ? lane * PER + j : lane / GRP, c = i / MB, m = i % MB;
						const int nl = grp * C + c;
						if (m < rows && nl < tn)
							atomicAdd(&sacc[m * tn + nl], v[j]);
					}
				}
			}
		}
		ark_cp_wait<0>(); /* no copy may land in the ring after the next chunk's */
	}
	ARK_MM_STAMP(4);
	__syncthreads();
	ARK_MM_STAMP(5);
	for (int o = tid; o < rows * tn; o += ARK_THREADS) {
		const int m = o / tn, c = o - m * tn;
		ark_mm_store<T>(g, m0 + m, n0 + c, sacc[o]);
	}
	__syncthreads();
	ARK_MM_STAMP(6);
}

/* ---- streaming on the tensor cores, b [N, K] (fp16 / bf16) ----------------------------------------
 * tile (m1-m0 <= MB <= 16, n1-n0 <= 128) of out over k0:k1, computed as out^T = b a^T by mma.sync
 * m16n8k16 with b's rows as the A operand (16 columns of out an mma) and a's rows as B (8 rows of out,
 * two mmas where MB > 8). b goes from memory straight into registers, no shared-memory ring: lane
 * (gq, tq) of a warp loads the 16-byte vectors k + 32 s + 8 tq (s = 0, 1) of b's rows gq and gq + 8 of
 * its group of 16, a batch of 64 k a row (128 contiguous bytes), and a batch's four vectors are the A
 * fragments of four mmas as they are: the order of k inside a product is free, so element j of the
 * vector at 32 s + 8 tq takes mma 2 s + j / 4, k slot 2 tq + 8 ((j / 2) & 1) + (j & 1), and a's B
 * fragments, the same k of a row of a, are one 16-byte read of the row staged in shared memory
 * (rows padded by 64 bytes: the 8 rows' reads fall in distinct banks). A warp takes a group of 16
 * columns and every KS-th batch (KS = 8 / groups): ARK_MM_NKT_DEPTH batches of loads in flight a warp,
 * 64 KB an SM at the depth of 4 (8 measured no faster: bench/NOTES.md). Per 2 KB of b a
 * warp issues 4 loads, 2 shared reads and 4 mmas, where the FMA path (stream_nk) issued ~40
 * instructions per 16 bytes at 4 rows. The warps' sums meet in sacc [MB][tn] (shared atomics). Needs
 * what stream_nk needs: b 16-byte aligned, bstride % 8 == 0, k0 % 8 == 0. */
#ifndef ARK_MM_NKT_DEPTH
#define ARK_MM_NKT_DEPTH 4
#endif
/* ARK_MM_NK_TC_ROWS: the fewest rows (the tile's MB) of a 16-bit b [N, K] streaming tile that takes
 * ark_mm_stream_nkt instead of stream_nk's FMA steps. One row stays on the FMA steps: alone the new
 * tile did [1, 4096] x [16896, 4096]^T in 0.81-0.94x their time, but llama1b_decode, whose every
 * matmul is of one row, ran 12.8% slower on it (bench/NOTES.md). */
#ifndef ARK_MM_NK_TC_ROWS
#define ARK_MM_NK_TC_ROWS 2
#endif
__device__ __forceinline__ uint4 ark_lds_u32x4(uint32_t a);
/* A 16-byte load of bytes read once: not kept in L1, evict-first in L2, and L2 asked for the 256-byte
 * block around it (the next batch of the same row: 0.92-0.94x the time without the hint on b [N, K]
 * tiles of 128 columns, bench/NOTES.md). A coherent load, not ld.global.nc (ark_ld16): b may be an
 * activation another SM of the kernel wrote. */
__device__ __forceinline__ uint4 ark_ld16_once(const void *p, uint64_t pol)
{
	uint4 v;
#if ARK_L2_EVICT_FIRST
	asm volatile("ld.global.L1::no_allocate.L2::cache_hint.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4], %5;\n"
		     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
		     : "l"(p), "l"(pol));
#else
	(void)pol;
	asm volatile("ld.global.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];\n"
		     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
		     : "l"(p));
#endif
	return v;
}
/* The 16-bit elements of v at k + j >= kend zeroed (j < 8). */
__device__ __forceinline__ uint4 ark_mask16(uint4 v, int k, int kend)
{
	uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
	for (int i = 0; i < 4; i++) {
		const uint32_t lo = k + 2 * i < kend ? 0xffffu : 0u, hi = k + 2 * i + 1 < kend ? 0xffff0000u : 0u;
		w[i] &= lo | hi;
	}
	return make_uint4(w[0], w[1], w[2], w[3]);
}

template <typename T, int MB>
__device__ __noinline__ void ark_mm_stream_nkt(const ark_mm_at at, int m0, int m1, int n0, int n1, int k0, int k1, char *smem)
{
	static_assert(sizeof(T) == 2 && MB <= 16, "16-bit a of at most 16 rows");
	const ark_mm g = ark_mm_of(at);
	constexpr int D = ARK_MM_NKT_DEPTH;
	constexpr int A_AVAIL = ARK_MM_RING_BYTES + ARK_MM_A_BYTES;
	/* k of a staged a chunk: a multiple of 64 with MB rows of KC + 32 elements in A_AVAIL */
	constexpr int KC = ((A_AVAIL / (MB * 2) - 32) / 64) * 64;
	constexpr int LDA = KC + 32;
	static_assert(KC >= 64, "shared memory for a");
	T *a_s = reinterpret_cast<T *>(smem);                                /* [MB][LDA] */
	float *sacc = reinterpret_cast<float *>(smem + A_AVAIL);             /* [MB][tn] */
	float *inv = reinterpret_cast<float *>(smem + A_AVAIL + ARK_MM_SACC_BYTES);
	const T *a = reinterpret_cast<const T *>(g.a);
	const T *b = reinterpret_cast<const T *>(g.b);
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, gq = lane >> 2, tq = lane & 3;
	const int tn = n1 - n0, rows = m1 - m0;
	const int groups = (tn + 15) >> 4, ks = max(1, ARK_WARPS / groups);
	const bool worker = warp < groups * ks;
	const int grp = warp % groups, slice = warp / groups;
	const int na = n0 + grp * 16 + gq, nb_ = na + 8; /* this lane's rows of b */
	const T *ba = b + (size_t)(na < n1 ? na : n0) * g.bstride;
	const T *bb = b + (size_t)(nb_ < n1 ? nb_ : n0) * g.bstride;
	const bool has_a = worker && na < n1, has_b = worker && nb_ < n1;
	const bool avec = ark_aligned16(g.a) && g.astride % 8 == 0 && k0 % 8 == 0;
	const bool acp = avec && !g.pre; /* a copied as it is, by cp.async */
	if (g.pre == ARK_PRE_RMSNORM)
		ark_mm_pre_stats<T>(g, m0, m1, inv);
	const uint64_t pol = ark_l2_once(); /* b is read once */
	for (int e = tid; e < MB * tn; e += ARK_THREADS)
		sacc[e] = 0.0f;

	float acc[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
	uint4 buf[D][4]; /* a batch: rows na (s 0, 1), nb_ (s 0, 1) */
	for (int kc0 = k0; kc0 < k1; kc0 += KC) { /* uniform */
		const int kce = min(kc0 + KC, k1);
		const int nbat = (kce - kc0 + 63) >> 6;
		/* batch j of the chunk into v: vectors past kce zero, the one across it masked */
		auto load = [&](uint4 (&v)[4], int j) {
			const int kb = kc0 + 64 * j;
#pragma unroll
			for (int s = 0; s < 2; s++) {
				const int k = kb + 32 * s + 8 * tq;
				uint4 x = make_uint4(0u, 0u, 0u, 0u), y = x;
				if (j < nbat && k < kce) {
					if (has_a)
						x = ark_ld16_once(ba + k, pol);
					if (has_b)
						y = ark_ld16_once(bb + k, pol);
					if (k + 8 > kce)
						x = ark_mask16(x, k, kce), y = ark_mask16(y, k, kce);
				}
				v[s] = x, v[2 + s] = y;
			}
		};
		/* the first batches are asked for before a is staged: neither waits for the other */
#pragma unroll
		for (int d = 0; d < D; d++)
			load(buf[d], slice + d * ks);

		/* stage a[m0:m1, kc0:kce] as [rows][LDA] in its own type, zero from kce to the last batch's end */
		const int nvk = nbat * 8;
		__syncthreads(); /* the previous chunk's a read by every warp */
		if (acp) {
			for (int e = tid; e < rows * nvk; e += ARK_THREADS) {
				const int m = e / nvk, v = e - m * nvk, k = kc0 + 8 * v;
				const int nbytes = k < kce ? min(16, 2 * (kce - k)) : 0;
				ark_cp_async16(a_s + m * LDA + 8 * v, nbytes ? a + (size_t)(m0 + m) * g.astride + k : a, nbytes);
			}
			ark_cp_commit();
			ark_cp_wait<0>();
		} else {
			for (int e0 = 0; e0 < rows * nvk; e0 += 4 * ARK_THREADS) {
				uint4 q[4], qy[4];
#pragma unroll
				for (int u = 0; u < 4; u++) {
					const int e = e0 + u * ARK_THREADS + tid, m = e / nvk, v = e - m * nvk, k = kc0 + 8 * v;
					q[u] = qy[u] = make_uint4(0u, 0u, 0u, 0u);
					if (e < rows * nvk && k < kce) {
						qy[u] = ark_mm_glu_y<T>(g, m0 + m, k, kce);
						const T *x = a + (size_t)(m0 + m) * g.astride + k;
						if (avec) {
							q[u] = ark_ld16(x);
						} else { /* a's rows not 16-byte vectors: element by element */
							T t[8];
#pragma unroll
							for (int j = 0; j < 8; j++)
								t[j] = k + j < kce ? x[j] : ark_from_f<T>(0.0f);
							memcpy(&q[u], t, 16);
						}
					}
				}
#pragma unroll
				for (int u = 0; u < 4; u++) {
					const int e = e0 + u * ARK_THREADS + tid, m = e / nvk, v = e - m * nvk, k = kc0 + 8 * v;
					if (e >= rows * nvk)
						continue;
					if (k < kce && g.pre && k + 8 <= kce) {
						q[u] = ark_mm_pre_vec<T>(g, inv, m, k, q[u], qy[u]);
					} else if (k < kce && k + 8 > kce) { /* zero what lies past the chunk */
						float x[8], y[8];
						ark_unpack<T>(q[u], x);
						ark_unpack<T>(qy[u], y);
#pragma unroll
						for (int j = 0; j < 8; j++)
							x[j] = k + j >= kce ? 0.0f : g.pre ? ark_mm_pre1<T>(g, inv, m, k + j, x[j], y[j]) : x[j];
						q[u] = ark_pack<T>(x);
					}
					*reinterpret_cast<uint4 *>(a_s + m * LDA + 8 * v) = q[u];
				}
			}
		}
		__syncthreads();

		/* batches slice, slice + ks, ...: D in flight, each refilled with the batch D * ks on */
		const uint32_t xa = (uint32_t)__cvta_generic_to_shared(a_s + gq * LDA + 8 * tq);
		const uint32_t xb = xa + 8u * LDA * 2u; /* row gq + 8 */
		for (int j0 = slice; j0 < nbat; j0 += D * ks) { /* uniform within the warp */
#pragma unroll
			for (int d = 0; d < D; d++) {
				const int j = j0 + d * ks;
				if (j < nbat && worker) {
#pragma unroll
					for (int s = 0; s < 2; s++) {
						const uint32_t off = 2u * (64u * j + 32u * s);
						const uint4 x = gq < rows ? ark_lds_u32x4(xa + off) : make_uint4(0u, 0u, 0u, 0u);
						uint4 x8 = make_uint4(0u, 0u, 0u, 0u);
						if (MB > 8 && gq + 8 < rows)
							x8 = ark_lds_u32x4(xb + off);
						const uint4 va = buf[d][s], vb = buf[d][2 + s];
						const uint32_t af0[4] = {va.x, vb.x, va.y, vb.y}, af1[4] = {va.z, vb.z, va.w, vb.w};
						const uint32_t bf0[2] = {x.x, x.y}, bf1[2] = {x.z, x.w};
						ark_mma16816<T>(acc[0], af0, bf0);
						ark_mma16816<T>(acc[0], af1, bf1);
						if (MB > 8) {
							const uint32_t cf0[2] = {x8.x, x8.y}, cf1[2] = {x8.z, x8.w};
							ark_mma16816<T>(acc[1], af0, cf0);
							ark_mma16816<T>(acc[1], af1, cf1);
						}
					}
				}
				load(buf[d], j + D * ks);
			}
		}
	}
	/* d0, d1: b's row na, a's rows 2 tq, 2 tq + 1; d2, d3: row nb_ (and 8 rows on in acc[1]) */
	if (worker) {
#pragma unroll
		for (int h = 0; h < (MB > 8 ? 2 : 1); h++)
#pragma unroll
			for (int e = 0; e < 4; e++) {
				const int m = 8 * h + 2 * tq + (e & 1), n = (e < 2 ? na : nb_) - n0;
				if (m < rows && n < tn)
					atomicAdd(&sacc[m * tn + n], acc[h][e]);
			}
	}
	__syncthreads();
	/* four columns a lane, the bias read once a tile (an element a thread at a time waited on each
	 * element's loads: 16 x 128 tiles over K 256 took 1.5-1.9x the mma tile's time) */
	ark_mm_epilogue<T>(g, sacc, tn, m0, m1, n0, n1);
	__syncthreads();
}

/* ---- tensor cores (fp16 / bf16) -----------------------------------------------------------------
 * ark_mm_mma below: a tile of up to (128, 128), warp tiles of up to (64, 32) = 4 x 4 mma m16n8k16,
 * stages shaped to the tile. STG == false: both operands' rows 16-byte aligned (K % 8 == 0, k0 % 8 == 0, and N % 8 == 0,
 * n0 % 8 == 0 if !TB), 16-byte cp.async only. STG == true: any K, N, k0 and alignment, an operand whose
 * rows are not 16-byte aligned comes by 4-byte cp.async, or where their length is odd as the aligned
 * chunks that hold them, realigned in shared memory (see ark_mm_kloop below). */
/* One 16-deep step of a warp's tile: its ldmatrix addresses (shared window) for this stage and step,
 * a_ld for the first 16-row sub-tile (mt steps of a_mt bytes) and b_ld for the first 16-column pair
 * (np steps of b_np bytes). FULL: all 4 x 4 sub-tiles inside the tile (no guards), else only the
 * first mts 16-row and nts 8-column ones (warp-uniform). */
template <typename T, bool TB, bool FULL>
__device__ __forceinline__ void ark_mm_mma_k16(float (&acc)[4][4][4], uint32_t a_ld, uint32_t a_mt, uint32_t b_ld,
					       uint32_t b_np, int mts, int nts)
{
	uint32_t af[4][4], bfr[4][2];
#pragma unroll
	for (int mt = 0; mt < 4; mt++)
		if (FULL || mt < mts)
			ark_ldsm_x4a(af[mt], a_ld + mt * a_mt);
#pragma unroll
	for (int np = 0; np < 2; np++) {
		if (!FULL && 2 * np >= nts)
			continue;
		uint32_t r[4];
		if (!TB)
			ark_ldsm_x4a_t(r, b_ld + np * b_np);
		else
			ark_ldsm_x4a(r, b_ld + np * b_np);
		bfr[2 * np][0] = r[0], bfr[2 * np][1] = r[1];
		bfr[2 * np + 1][0] = r[2], bfr[2 * np + 1][1] = r[3];
	}
#pragma unroll
	for (int mt = 0; mt < 4; mt++)
#pragma unroll
		for (int nt = 0; nt < 4; nt++)
			if (FULL || (mt < mts && nt < nts))
				ark_mma16816<T>(acc[mt][nt], af[mt], bfr[nt]);
}

/* cp.async.wait_group with a count known at run time (n <= ARK_MM_MAX_STAGES - 2). */
__device__ __forceinline__ void ark_cp_wait_n(int n)
{
	switch (n) {
	case 6: ark_cp_wait<6>(); break;
	case 5: ark_cp_wait<5>(); break;
	case 4: ark_cp_wait<4>(); break;
	case 3: ark_cp_wait<3>(); break;
	case 2: ark_cp_wait<2>(); break;
	case 1: ark_cp_wait<1>(); break;
	default: ark_cp_wait<0>(); break;
	}
}

/* 16 bytes of shared memory at a shared address, and 16 bytes into it. */
__device__ __forceinline__ uint4 ark_lds_u32x4(uint32_t a)
{
	uint4 v;
	asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(a) : "memory");
	return v;
}
__device__ __forceinline__ void ark_sts_u32x4(uint32_t a, const uint4 &v)
{
	asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(a), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

/* The 16-byte vectors (VE = 16 / sizeof(T) elements) one thread moves into each stage of one operand:
 * vector c is v = tid + c ARK_THREADS of the stage, c < used (the same count for every thread:
 * ceil(vectors / threads)), worked out once per tile so that the k loop only steps a pointer. A vector
 * lies along k (a, and b if TB: rows of the tile, k-runs of VE) or along n (b if !TB: rows of k,
 * n-runs of VE).
 *   p    its first element at the current stage (advanced by the stage's elements after each, a
 *        multiple of 16 bytes); it may point past the operand where the copy takes no bytes, and
 *        such a copy gets z instead (the tile's first element rounded down to 16 bytes: memory of
 *        the operand, as cp.async wants a valid address even for no bytes);
 *   s    its byte offset in the operand's stage (-1: v is past the stage);
 *   nb   the bytes it takes from p while the stage lies inside k0:k1 (16, or 0 outside the tile, or
 *        the columns left at the tile's right edge);
 *   rem  the elements of k from its first one at the first stage to k1;
 *   cl   along n, the columns from its first one to the tile's right edge (negative past it);
 *   x    (rows not 16-byte aligned, copy_raw) the byte offset from the stage of the 16 bytes after
 *        the vector's where this thread copies them: the row's padding where the vector is the last
 *        of its row, a slot of its warp's where the last of its warp; else -1 (the next lane's
 *        vector is the next of the row).
 * At the last stage, which may reach past k1, kd elements of k past the first: along k
 * min(nb / ES, rem - kd) elements (>= 0), along n rem - kd > 0 ? nb / ES : 0. */
template <typename T> struct ark_mm_vecs {
	static constexpr int ES = sizeof(T), VE = 16 / ES;
	const T *p[ARK_MM_STG_CH];
	const char *z; /* where a copy of no bytes points: 16-byte aligned, inside the operand's memory */
	int s[ARK_MM_STG_CH], nb[ARK_MM_STG_CH], rem[ARK_MM_STG_CH], cl[ARK_MM_STG_CH], x[ARK_MM_STG_CH];
	int used;
	/* the bytes vector c takes at the stage kd elements of k past the first */
	__device__ __forceinline__ int bytes_at(int c, int kd, bool along_k) const
	{
		const int r = rem[c] - kd;
		return ES * (along_k ? max(0, min(nb[c] / ES, r)) : r > 0 ? nb[c] / ES : 0);
	}
	/* copies the stage kd elements of k past the first to the stage at shared address sdst, whole
	 * (inside k0:k1) or clipped at k1; then steps to the next stage (elems further) */
	__device__ __forceinline__ void copy(uint32_t sdst, int kd, bool inside, bool along_k, int64_t elems)
	{
		if (inside) {
#pragma unroll
			for (int c = 0; c < ARK_MM_STG_CH; c++)
				if (c < used && s[c] >= 0)
					ark_cp_async16s(sdst + s[c], nb[c] ? (const char *)p[c] : z, nb[c]);
		} else {
#pragma unroll
			for (int c = 0; c < ARK_MM_STG_CH; c++)
				if (c < used && s[c] >= 0) {
					const int b = bytes_at(c, kd, along_k);
					ark_cp_async16s(sdst + s[c], b ? (const char *)p[c] : z, b);
				}
		}
		step(elems);
	}
	/* the same stage for operands whose rows are 4-byte aligned but not 16-byte (fp32 always; 2-byte
	 * types with an even row length and start): four 4-byte cp.async a vector, each taking what
	 * bytes_at allows of its word (4, 2 or 0 bytes, zeros after), so that they ride the ring of
	 * stages as aligned ones do */
	__device__ __forceinline__ void copy4(uint32_t sdst, int kd, bool along_k, int64_t elems)
	{
#pragma unroll
		for (int c = 0; c < ARK_MM_STG_CH; c++)
			if (c < used && s[c] >= 0) {
				const int nb4 = bytes_at(c, kd, along_k);
				const char *src = reinterpret_cast<const char *>(p[c]);
#pragma unroll
				for (int j = 0; j < 4; j++) {
					const int w = min(4, max(0, nb4 - 4 * j));
					ark_cp_async4s(sdst + s[c] + 4 * j, w ? src + 4 * j : z, w);
				}
			}
		step(elems);
	}
	/* The same stage for 2-byte operands whose rows are not 4-byte aligned (odd lengths): each
	 * vector's 16-byte aligned chunk of memory (the one holding its first element, o = p & 15 bytes
	 * into it) into the vector's own 16 bytes of the stage, by 16-byte cp.async as aligned rows,
	 * and where o > 0 and this thread is the last of its run, the chunk after it to x; realign()
	 * shifts them into place once they have landed. A chunk takes the bytes up to the row's last element at the
	 * stage (zeros after): those before the vector's, the tail of the vector before, feed that one. */
	__device__ __forceinline__ int run(int c, int kd, bool along_k) const /* elements left from p */
	{
		return along_k ? (nb[c] ? rem[c] - kd : -VE) : (rem[c] - kd > 0 ? cl[c] : -VE);
	}
	__device__ __forceinline__ void copy_raw(uint32_t sdst, int kd, bool along_k, int64_t elems)
	{
#pragma unroll
		for (int c = 0; c < ARK_MM_STG_CH; c++)
			if (c < used && s[c] >= 0) {
				const int o = (int)((uintptr_t)p[c] & 15), r = run(c, kd, along_k);
				const char *ch = reinterpret_cast<const char *>(p[c]) - o;
				const int b0 = min(16, max(0, o + ES * r));
				ark_cp_async16s(sdst + s[c], b0 ? ch : z, b0);
				if (o && x[c] >= 0) {
					const int b1 = min(16, max(0, o - 16 + ES * r));
					ark_cp_async16s(sdst + x[c], b1 ? ch + 16 : z, b1);
				}
			}
		step(elems);
	}
	/* the vectors copy_raw brought into the stage at sdst, once this thread's copies have landed:
	 * each (o > 0) the 16 bytes from o of its chunk and the next (from x, or the next lane's
	 * chunk). Every thread reads and writes only its own bytes. All threads of a warp (shuffles). */
	__device__ __forceinline__ void realign(uint32_t sdst) const
	{
		/* all loads first, then the shuffles, then the shifts: independent chains in flight */
		uint4 w[ARK_MM_STG_CH], u[ARK_MM_STG_CH];
#pragma unroll
		for (int c = 0; c < ARK_MM_STG_CH; c++) {
			w[c] = make_uint4(0u, 0u, 0u, 0u);
			if (c < used && s[c] >= 0)
				w[c] = ark_lds_u32x4(sdst + s[c]);
		}
#pragma unroll
		for (int c = 0; c < ARK_MM_STG_CH; c++)
			if (c < used) {
				u[c].x = __shfl_down_sync(0xffffffffu, w[c].x, 1);
				u[c].y = __shfl_down_sync(0xffffffffu, w[c].y, 1);
				u[c].z = __shfl_down_sync(0xffffffffu, w[c].z, 1);
				u[c].w = __shfl_down_sync(0xffffffffu, w[c].w, 1);
				if (s[c] >= 0 && x[c] >= 0 && ((uintptr_t)p[c] & 15))
					u[c] = ark_lds_u32x4(sdst + x[c]);
			}
#pragma unroll
		for (int c = 0; c < ARK_MM_STG_CH; c++) {
			const int o = (int)((uintptr_t)p[c] & 15);
			if (c < used && s[c] >= 0 && o) {
				/* words q.. of the 8, then bytes o & 3 into each: a shift by o bytes */
				const int q = o >> 2;
				const uint32_t sel = 0x3210u + 0x1111u * (uint32_t)(o & 3);
				uint32_t y[6], t[5];
#pragma unroll
				for (int j = 0; j < 6; j++) {
					const uint32_t lo = j < 4 ? (&w[c].x)[j] : (&u[c].x)[j - 4], hi = j + 2 < 4 ? (&w[c].x)[j + 2] : (&u[c].x)[j - 2];
					y[j] = q & 2 ? hi : lo;
				}
#pragma unroll
				for (int j = 0; j < 5; j++)
					t[j] = q & 1 ? y[j + 1] : y[j];
				ark_sts_u32x4(sdst + s[c], make_uint4(__byte_perm(t[0], t[1], sel), __byte_perm(t[1], t[2], sel),
								      __byte_perm(t[2], t[3], sel), __byte_perm(t[3], t[4], sel)));
			}
		}
	}
	__device__ __forceinline__ void step(int64_t elems)
	{
#pragma unroll
		for (int c = 0; c < ARK_MM_STG_CH; c++)
			if (c < used)
				p[c] += elems;
	}
};
/* Vectors along k of a [rows][ld] stage (kvn = bk / VE vectors a row, a power of two: 4 to 32, so a
 * row's vectors lie in consecutive lanes of one warp; ld >= bk + VE) from base (the tile's first row
 * at its first k), rows gstride elements apart, rin of them inside the tile, kn elements of k in all. */
template <typename T>
__device__ __forceinline__ void ark_mm_vecs_k(ark_mm_vecs<T> &q, const T *base, int rows, int kvn, int ld, int64_t gstride,
					      int rin, int kn)
{
	constexpr int VE = ark_mm_vecs<T>::VE;
	const int lk = __ffs(kvn) - 1, rstep = ARK_THREADS >> lk;
	const int r0 = threadIdx.x >> lk, kv = (threadIdx.x & (kvn - 1)) * VE;
	q.used = (rows * kvn + ARK_THREADS - 1) / ARK_THREADS;
	q.z = reinterpret_cast<const char *>((uintptr_t)base & ~(uintptr_t)15);
#pragma unroll
	for (int c = 0; c < ARK_MM_STG_CH; c++) {
		const int r = r0 + c * rstep;
		q.p[c] = base + (r < rin ? r * gstride : 0) + kv;
		q.s[c] = r < rows ? (int)sizeof(T) * (r * ld + kv) : -1;
		q.nb[c] = r < rin ? 16 : 0;
		q.rem[c] = kn - kv;
		q.cl[c] = 0;
		q.x[c] = kv + VE == kvn * VE ? q.s[c] + 16 : -1;
	}
}
/* Vectors along n of a [bk][ld] stage of cvn = cp / VE vectors a row (any count up to 32, so that a
 * row crosses at most one warp boundary; ld >= cp + VE), from base (the tile's first column at its
 * first k), rows of k gstride elements apart, cin columns inside the tile, kn elements of k in all;
 * xw: the byte offset from the stage of 16 bytes for each warp and vector (copy_raw). */
template <typename T>
__device__ __forceinline__ void ark_mm_vecs_n(ark_mm_vecs<T> &q, const T *base, int bk, int cvn, int ld, int64_t gstride,
					      int cin, int kn, int xw)
{
	constexpr int VE = ark_mm_vecs<T>::VE;
	q.used = (bk * cvn + ARK_THREADS - 1) / ARK_THREADS;
	q.z = reinterpret_cast<const char *>((uintptr_t)base & ~(uintptr_t)15);
#pragma unroll
	for (int c = 0; c < ARK_MM_STG_CH; c++) {
		const int v = threadIdx.x + c * ARK_THREADS, r = v / cvn, nv = (v - r * cvn) * VE;
		q.p[c] = base + r * gstride + nv;
		q.s[c] = r < bk ? (int)sizeof(T) * (r * ld + nv) : -1;
		q.nb[c] = (int)sizeof(T) * max(0, min(VE, cin - nv));
		q.rem[c] = kn - r;
		q.cl[c] = cin - nv;
		const int warp = (int)(threadIdx.x >> 5), last = (int)(threadIdx.x & 31) == 31;
		q.x[c] = nv + VE == cvn * VE ? q.s[c] + 16 : last ? xw + 16 * (warp * ARK_MM_STG_CH + c) : -1;
	}
}

/* The 16-byte vectors one thread copies into each whole stage of an operand whose rows are 16-byte
 * aligned, where they fall on a regular grid: rows r0 + c rstep (c < n) of one column vector of the
 * stage, so that a copy is an address and a cp.async and a stage steps one pointer (ark_mm_vecs keeps
 * each vector's own pointer, bytes and bounds, which the last stage, cut by k1, and unaligned rows
 * need: about three times the instructions a stage). Vectors of rows past the tile are not copied:
 * those rows of the stage keep what they held, and their sums are never stored. */
struct ark_mm_grid {
	const char *g; /* the first vector at the current stage */
	const char *z; /* the first vector at the first stage: where a copy of no bytes points */
	uint32_t s;    /* its byte offset in the operand's stage */
	int n;         /* vectors inside the tile: 0 to ARK_MM_STG_CH */
	int gs;        /* bytes between two vectors in memory */
	uint32_t ss;   /* and in the stage */
	int kf, ks;    /* the first vector's k in the stage, and the k from one vector to the next */
	/* rows r0, r0 + rstep, ... of the stage's rows (rin of them inside the tile; vpr vectors a row),
	 * col bytes into each, from base (the stage's first row, rows gstride bytes apart), ld bytes a
	 * stage row; the vectors' k kf, kf + ks, ... (ark_mm_on_grid checked that their span fits gs) */
	__device__ __forceinline__ void init(const char *base, int64_t gstride, int r0, int rstep, int vpr, int rows, int rin,
					     int col, int ld, int kf_, int ks_)
	{
		const int used = (rows * vpr + ARK_THREADS - 1) / ARK_THREADS;
		n = 0;
#pragma unroll
		for (int c = 0; c < ARK_MM_STG_CH; c++)
			n += c < used && r0 + c * rstep < rin;
		g = z = base + r0 * gstride + col;
		s = (uint32_t)(r0 * ld + col);
		ss = (uint32_t)(rstep * ld);
		gs = (int)(rstep * gstride);
		kf = kf_, ks = ks_;
	}
	__device__ __forceinline__ void copy(uint32_t sdst) const
	{
#pragma unroll
		for (int c = 0; c < ARK_MM_STG_CH; c++)
			if (c < n)
				ark_cp_async16s(sdst + s + c * ss, g + c * gs, 16);
	}
	/* the stage k1 cuts, kl elements of k left in it (a multiple of a vector's): the vectors from k1
	 * on are zeros (16-byte copies of no bytes), so that they add nothing to the tile's sums */
	__device__ __forceinline__ void copy_cut(uint32_t sdst, int kl) const
	{
#pragma unroll
		for (int c = 0; c < ARK_MM_STG_CH; c++)
			if (c < n) {
				const bool in = kf + c * ks < kl;
				ark_cp_async16s(sdst + s + c * ss, in ? g + c * gs : z, in ? 16 : 0);
			}
	}
};

/* The ring of stages of ark_mm_kloop: st - 1 - lag k-tiles in flight; load(s, kt) copies k-tile kt
 * into stage s (cp.async, committed here), landed(s) runs once this thread's copies of stage s have
 * landed (before the barrier that publishes it), compute(so) once the stage at byte offset so has
 * landed for all threads. lag: k-tiles whose compute may still read their stage after compute
 * returns (an asynchronous MMA left in flight, 0 or 1): a stage is loaded again only once the
 * compute of lag k-tiles after it has returned in every thread. On return every copy has landed and
 * the stages are free of copies (of readers, once the caller waited for its last compute).
 * All threads. */
template <typename L, typename D, typename F>
__device__ __forceinline__ void ark_mm_ring(int st, int ktiles, int sstep, L &&load, D &&landed, F &&compute, int lag = 0)
{
	const int ahead = st - 1 - lag; /* k-tiles in flight */
#pragma unroll 1 /* code that runs once a tile costs its fetch: kept as a loop */
	for (int s = 0; s < ahead; s++) {
		if (s < ktiles)
			load(s, s);
		ark_cp_commit();
	}
	int cur = 0, nxt = ahead; /* stages of k-tiles kt and kt + ahead */
	for (int kt = 0; kt < ktiles; kt++) {
		ark_cp_wait_n(ahead - 1); /* this thread's copies of stage kt landed */
		landed(cur);
		__syncthreads(); /* stage kt landed for all; stage kt - 1 - lag free */
		if (kt + ahead < ktiles)
			load(nxt, kt + ahead);
		ark_cp_commit();
		compute((uint32_t)(cur * sstep));
		cur = cur + 1 == st ? 0 : cur + 1;
		nxt = nxt + 1 == st ? 0 : nxt + 1;
	}
	ark_cp_wait<0>();
	__syncthreads(); /* the stages are free */
}

/* Whether ark_mm_kloop can copy both aligned operands' stages on a grid (ark_mm_grid), for a tile of
 * cp columns (rounded as the stages round them) in stages bk deep: b [K, N]'s rows of cp / VE vectors
 * must divide the threads, and a grid's steps between the vectors of a thread must fit in 31 bits. The
 * tiles call their STG instance where not (ark_mm_mma, ark_mm_ffma), so that the aligned instance
 * holds only the grid's copies: the vectors' per-copy state beside the grid made it spill (bench/NOTES.md). */
template <typename T, bool TB>
__device__ __forceinline__ bool ark_mm_on_grid(const ark_mm &g, int cp, int bk)
{
	constexpr int VE = ark_mm_vecs<T>::VE, ES = sizeof(T);
	constexpr int64_t LIM = ((int64_t)1 << 31) / (ARK_MM_STG_CH > 1 ? ARK_MM_STG_CH - 1 : 1);
	const int64_t kr = ARK_THREADS / (bk / VE); /* rows between a thread's vectors along k */
	if (kr * g.astride * ES >= LIM)
		return false;
	if (TB)
		return kr * g.bstride * ES < LIM;
	const int cvn = cp / VE;
	return (cvn & (cvn - 1)) == 0 && ARK_THREADS % cvn == 0 && (int64_t)(ARK_THREADS / cvn) * g.bstride * ES < LIM;
}

/* The k loop of the tiles that stage both operands in shared memory (ark_mm_mma, ark_mm_ffma): a
 * ring of stages, each bk deep, of a [rp][lda] (a_stage bytes) then b [cp][lda] (TB) or [bk][ldb],
 * stage bytes in all (and where b's rows along n have odd lengths, 16 bytes for each warp and
 * vector after them), as many as ARK_SMEM_MATMUL holds (at most ARK_MM_MAX_STAGES), st - 1 of them
 * in flight; a stage's rows end in at least 16 bytes of padding. Every operand comes by cp.async into
 * the ring: 16 bytes a copy where its rows are 16-byte aligned; otherwise (STG) 4 bytes a copy where
 * they are 4-byte aligned (fp32 always, 2-byte types of even lengths), and for 2-byte rows of odd
 * length the 16-byte aligned chunks that hold them, each shifted into place by the thread that
 * copied it once its copies have landed (ark_mm_vecs::copy_raw, realign; loading them through
 * registers took 1.3x as long, and the same chunks and shifts for even rows 1.35x the 4-byte
 * copies': bench/NOTES.md); aligned operands (!STG, where ark_mm_on_grid holds) copy every stage on
 * a grid (ark_mm_grid), the one k1 cuts with copies of no bytes past k1 (the per-vector state of
 * ark_mm_vecs out of line cost that stage ~2k cycles, bench/NOTES.md). k past k1 is zero in the
 * stages, and so are rows and columns past the tile except in stages copied on a grid (their sums are
 * never stored).
 * compute(so) runs once per stage, so the byte offset of the stage it may read (between barriers);
 * on return every copy has landed and the stages are free (ark_mm_ring). All threads. */
template <typename T, bool TB, bool STG, typename F>
__device__ __forceinline__ void ark_mm_kloop(const ark_mm &g, int m0, int m1, int n0, int n1, int k0, int k1, char *smem,
					     int rp, int cp, int bk, int lda, int ldb, int a_stage, int stage, F &&compute)
{
	constexpr int VE = ark_mm_vecs<T>::VE, ES = sizeof(T);
	const T *a = reinterpret_cast<const T *>(g.a);
	const T *b = reinterpret_cast<const T *>(g.b);
	const bool avec = !STG || (ark_aligned16(g.a) && g.astride % VE == 0 && k0 % VE == 0);
	const bool bvec = !STG || (ark_aligned16(g.b) && g.bstride % VE == 0 && (TB ? k0 : n0) % VE == 0);
	/* rows not 16-byte aligned but 4-byte aligned: 4-byte copies (fp32 always; 2-byte types with even
	 * lengths and starts); the others (odd 2-byte rows) as aligned chunks, realigned */
	constexpr int W = 4 / sizeof(T); /* elements a 4-byte word */
	const bool aw = !avec && ((uintptr_t)g.a & 3) == 0 && g.astride % W == 0 && k0 % W == 0;
	const bool bw = !bvec && ((uintptr_t)g.b & 3) == 0 && g.bstride % W == 0 && (TB ? k0 : n0) % W == 0;
	const bool araw = !avec && !aw, braw = !bvec && !bw;
	/* the ring's stride: a stage, and the warps' slots of b's raw rows along n */
	const int sstep = stage + (!TB && braw ? ARK_THREADS / 32 * ARK_MM_STG_CH * 16 : 0);
	/* stages: ARK_SMEM_MATMUL / sstep, by the float reciprocal and one correction (no integer division) */
	int st = (int)__fdividef((float)ARK_SMEM_MATMUL, (float)sstep);
	st -= st * sstep > ARK_SMEM_MATMUL;
	st += (st + 1) * sstep <= ARK_SMEM_MATMUL;
	st = min(st, ARK_MM_MAX_STAGES);
	const int lbk = __ffs(bk) - 1; /* bk is a power of two */
	const int ktiles = (k1 - k0 + bk - 1) >> lbk;
	const int64_t AS = g.astride, BS = g.bstride;

	const int rin = m1 - m0, cin = n1 - n0;
	const int64_t b_kstep = TB ? (int64_t)bk : (int64_t)bk * BS; /* b's elements from a stage to the next */

	/* Aligned operands (!STG) copy every stage on a grid (ark_mm_grid): a's rows and b's (TB) take
	 * kvn = bk / VE vectors a row in consecutive threads; b [K, N]'s rows of k cvn = cp / VE, a power
	 * of two (ark_mm_on_grid). */
	const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(smem);
	if constexpr (!STG) { /* the caller made sure the grid fits (ark_mm_on_grid) */
		ark_mm_grid ga, gb;
		const int kvn = bk / VE, lk = __ffs(kvn) - 1, kr = ARK_THREADS >> lk, kc = (int)(threadIdx.x & (kvn - 1)) * VE * ES;
		ga.init(reinterpret_cast<const char *>(a + (size_t)m0 * AS + k0), AS * ES, threadIdx.x >> lk, kr, kvn, rp, rin, kc,
			lda * ES, kc / ES, 0);
		if (TB) {
			gb.init(reinterpret_cast<const char *>(b + (size_t)n0 * BS + k0), BS * ES, threadIdx.x >> lk, kr, kvn, cp, cin,
				kc, lda * ES, kc / ES, 0);
		} else {
			const int cvn = cp / VE, lc = __ffs(cvn) - 1, nc = (int)(threadIdx.x & (cvn - 1)) * VE;
			gb.init(reinterpret_cast<const char *>(b + (size_t)k0 * BS + n0), BS * ES, threadIdx.x >> lc, ARK_THREADS >> lc,
				cvn, bk, nc < cin ? bk : 0, nc * ES, ldb * ES, threadIdx.x >> lc, ARK_THREADS >> lc);
		}
		/* the k-tiles copied whole, then the one k1 cuts (k1 - k0 is a multiple of VE: ark_mm_staged) */
		const int whole = (k1 - k0) >> lbk;
		ark_mm_ring(
			st, ktiles, sstep,
			[&](int s, int kt) {
				const uint32_t sa = sbase + s * sstep;
				if (kt < whole) {
					ga.copy(sa);
					gb.copy(sa + a_stage);
					ga.g += bk * ES;
					gb.g += b_kstep * ES;
				} else {
					ga.copy_cut(sa, k1 - k0 - kt * bk);
					gb.copy_cut(sa + a_stage, k1 - k0 - kt * bk);
				}
			},
			[](int) {}, compute);
		return;
	}

	/* the vectors of both operands, and the elements of each per stage */
	ark_mm_vecs<T> va, vb;
	ark_mm_vecs_k(va, a + (size_t)m0 * AS + k0, rp, bk / VE, lda, AS, rin, k1 - k0);
	if (TB)
		ark_mm_vecs_k(vb, b + (size_t)n0 * BS + k0, cp, bk / VE, lda, BS, cin, k1 - k0);
	else
		ark_mm_vecs_n(vb, b + (size_t)k0 * BS + n0, bk, cp / VE, ldb, BS, cin, k1 - k0, stage - a_stage);

	/* stage s <- k-tile kt of both operands; their vectors step to the next */
	auto load = [&](int s, int kt) {
		const uint32_t sa = sbase + s * sstep;
		const bool inside = (kt + 1) * bk <= k1 - k0;
		if (avec)
			va.copy(sa, kt * bk, inside, true, bk);
		else if (aw)
			va.copy4(sa, kt * bk, true, bk);
		else
			va.copy_raw(sa, kt * bk, true, bk);
		if (bvec)
			vb.copy(sa + a_stage, kt * bk, inside, TB, b_kstep);
		else if (bw)
			vb.copy4(sa + a_stage, kt * bk, TB, b_kstep);
		else
			vb.copy_raw(sa + a_stage, kt * bk, TB, b_kstep);
	};
	ark_mm_ring(
		st, ktiles, sstep, load,
		[&](int cur) {
			if (araw)
				va.realign(sbase + cur * sstep);
			if (braw)
				vb.realign(sbase + cur * sstep + a_stage);
		},
		compute);
}

/* The mma tile (R, C) = (m1 - m0, n1 - n0) <= (128, 128) over k0:k1, shaped at run time:
 *  - rows and columns rounded up to rp, cp (multiples of 16); warps of 64 x 32 over them, wm x wn,
 *    and the ARK_MM_WARPS / (wm wn) = kg warps of each place split every stage's 16-deep steps among
 *    them (a 64 x 16 tile keeps all eight warps busy, not one), but no more warps than the tile's k
 *    has steps of 16 ARK_MM_KSTEPS for; each group's sums go to shared memory, added and stored by
 *    ark_mm_epilogue;
 *  - a stage is bk = 16 kg ARK_MM_KSTEPS deep (32 to 128; 64 at most for tiles of more than 64 rows
 *    or columns) and holds only the tile's own rows and columns, so a small tile has up to
 *    ARK_MM_MAX_STAGES stages in the same shared memory and st - 1 of them in flight; each warp takes
 *    ARK_MM_KSTEPS 16-deep steps of a stage between barriers (one step per barrier cost more than
 *    the steps: bench/NOTES.md).
 * The k loop (ark_mm_kloop) does only what each stage needs: the vectors every thread copies are
 * worked out once (ark_mm_vecs), the ldmatrix addresses once per warp, and a warp whose 64 x 32 tile
 * is whole runs the mma steps without guards. */
template <typename T, bool TB, bool STG>
__device__ __noinline__ void ark_mm_mma(const ark_mm_at at, int m0, int m1, int n0, int n1, int k0, int k1, char *smem)
{
	const ark_mm g = ark_mm_of(at);
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int rp = (m1 - m0 + 15) & ~15, cp = (n1 - n0 + 15) & ~15;
	const int nwm = (rp + 63) / 64, nwn = (cp + 31) / 32, wmn = nwm * nwn;
	/* k-groups: the warps a place has (1, 2, 4 or 8), but no more than the power of two of steps
	 * of 16 ARK_MM_KSTEPS that covers the tile's k (a 64 x 16 tile over K 64 in 8 groups had half
	 * its warps summing zeros, a stage twice its k, copied by the out-of-line cut stage, and 8
	 * slices to add: 1.15x the time of 2 groups, bench/NOTES.md). A power of two: the stage's
	 * vectors a row (bk / 8) must be one (ark_mm_vecs_k, ark_mm_grid). */
	const int ksteps = (k1 - k0 + 16 * ARK_MM_KSTEPS - 1) / (16 * ARK_MM_KSTEPS);
	const int kg = min(ark_div_small(ARK_MM_WARPS, wmn), ark_pow2_ceil(ksteps));
	/* 16 kg ARK_MM_KSTEPS deep, 32 to 32 ARK_MM_STG_CH (128), at most ARK_MM_STG_CH vectors a thread of either operand */
	const int bk = min(max(rp, cp) > 64 ? 16 * ARK_MM_STG_CH : 32 * ARK_MM_STG_CH, max(32, kg * 16 * ARK_MM_KSTEPS)), lda = bk + 8, ldb = cp + 8;
	if constexpr (!STG) {
		if (!ark_mm_on_grid<T, TB>(g, cp, bk)) {
			ark_mm_mma<T, TB, true>(at, m0, m1, n0, n1, k0, k1, smem);
			return;
		}
	}
	const int a_stage = rp * lda * 2, stage = a_stage + (TB ? cp * lda : bk * ldb) * 2;
	const int wk = ark_div_small(warp, wmn), wi = warp - wk * wmn, wm = ark_div_small(wi, nwn), wn = wi - wm * nwn;
	const bool computes = warp < wmn * kg;
	const int mts = min(4, (rp - wm * 64) / 16), nts = min(4, (cp - wn * 32) / 8);
	const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(smem);

	/* this warp's ldmatrix addresses in stage 0, step 0 (see ark_mm_mma_k16) */
	const uint32_t a_ld = sbase + 2u * ((wm * 64 + (lane & 15)) * lda + (lane >> 4) * 8), a_mt = 2u * 16 * lda;
	uint32_t b_ld, b_np, b_kk; /* b_kk: bytes per 16 of k */
	if (TB)
		b_ld = sbase + a_stage + 2u * ((wn * 32 + (lane & 7) + (lane >> 4) * 8) * lda + ((lane >> 3) & 1) * 8),
		b_np = 2u * 16 * lda, b_kk = 32;
	else
		b_ld = sbase + a_stage + 2u * (((lane & 7) + ((lane >> 3) & 1) * 8) * ldb + wn * 32 + (lane >> 4) * 8),
		b_np = 32, b_kk = 2u * 16 * ldb;
	const bool full = mts == 4 && nts == 4;

	float acc[4][4][4];
#pragma unroll
	for (int i = 0; i < 4; i++)
#pragma unroll
		for (int j = 0; j < 4; j++)
#pragma unroll
			for (int e = 0; e < 4; e++)
				acc[i][j][e] = 0.0f;

	ark_mm_kloop<T, TB, STG>(g, m0, m1, n0, n1, k0, k1, smem, rp, cp, bk, lda, ldb, a_stage, stage, [&](uint32_t so) {
		if (!computes)
			return;
		if (full)
			for (int s = wk; s < bk / 16; s += kg)
				ark_mm_mma_k16<T, TB, true>(acc, a_ld + so + 32u * s, a_mt, b_ld + so + b_kk * s, b_np, 4, 4);
		else
			for (int s = wk; s < bk / 16; s += kg)
				ark_mm_mma_k16<T, TB, false>(acc, a_ld + so + 32u * s, a_mt, b_ld + so + b_kk * s, b_np, mts, nts);
	});
	/* each k-group's sums go to its slice of t [kg][rp][cp + 4] */
	const int ldt = cp + 4, sl = rp * ldt;
	float *t = reinterpret_cast<float *>(smem);
	if (computes) {
		float *tw = t + wk * sl;
#pragma unroll
		for (int mt = 0; mt < 4; mt++)
#pragma unroll
			for (int nt = 0; nt < 4; nt++)
#pragma unroll
				for (int h = 0; h < 2; h++) {
					if (mt >= mts || nt >= nts)
						continue;
					float *q = tw + (wm * 64 + mt * 16 + (lane >> 2) + h * 8) * ldt + wn * 32 + nt * 8 + (lane & 3) * 2;
					*reinterpret_cast<float2 *>(q) = make_float2(acc[mt][nt][2 * h], acc[mt][nt][2 * h + 1]);
				}
	}
	__syncthreads();
	ark_mm_epilogue<T>(g, t, ldt, m0, m1, n0, n1, kg, sl);
}

/* ---- fp32 tiles of many rows: FMA from shared memory --------------------------------------------
 * The tile (R, C) <= (128, 128) over k0:k1 through the same k loop as the mma tile (ark_mm_kloop:
 * a ring of cp.async stages, 16 bytes a copy, or 4 where rows are not aligned), a [rp][bk + 4] and b
 * [cp][bk + 4] (TB) or [bk][cp + 4] per stage. Threads (grp, ty, tx) of G x TY x TX, TY = rp / 8,
 * TX = cp / 8: each computes 8 x 8 sums, rows ty + TY i and columns tx + TX j (TB) or, with b
 * [K, N], columns 4 tx + j and 4 TX + 4 tx + j (j < 4), over the 4-deep chunks grp, grp + G, ... of
 * every stage. Every shared-memory read is 16 bytes (4 elements of k of a row of a or of b [N, K], 4
 * columns of b [K, N]): 16 reads per 256 FMA, and a warp's reads of a hit at most 8 rows (one
 * wavefront: rows bk + 4 floats apart fall in distinct 16-byte bank groups). The G groups' sums
 * are added in shared memory by ark_mm_epilogue, as the mma tile's k-groups. */
__device__ __forceinline__ void ark_fma4x8(float (&acc)[8][8], const float4 (&a)[8], const float (&b)[8], int q)
{
#pragma unroll
	for (int i = 0; i < 8; i++) {
		const float x = q == 0 ? a[i].x : q == 1 ? a[i].y : q == 2 ? a[i].z : a[i].w;
#pragma unroll
		for (int j = 0; j < 8; j++)
			acc[i][j] = fmaf(x, b[j], acc[i][j]);
	}
}
/* The 4-deep chunks kc = kc0, kc0 + kstep, ... < bk of a stage: a_rd, b_rd this thread's first row of a
 * and of b (TB) or column (!TB) at the stage's k 0; a_ri, b_ri the bytes from one of its rows (columns)
 * to the next, ldb4 b [K, N]'s bytes a row of k. FIX: the strides of a whole 128 x 128 tile in stages
 * 32 deep (TY = TX = 16, lda = 36, ldb = 132), as constants: the 16 reads of a chunk then take
 * immediate offsets from two addresses, where run-time strides had ptxas recompute the 16
 * addresses every chunk (33 integer instructions beside 256 FFMA, bench/NOTES.md). */
template <bool TB, bool FIX>
__device__ __forceinline__ void ark_fma_chunks(float (&acc)[8][8], uint32_t a_rd, uint32_t b_rd, uint32_t a_ri, uint32_t b_ri,
					       uint32_t ldb4, int kc0, int kstep, int bk)
{
	if constexpr (FIX) {
		a_ri = 4u * 16 * 36, ldb4 = 4u * 132;
		b_ri = TB ? 4u * 16 * 36 : 16u * 16;
	}
#pragma unroll 1 /* a chunk is ~280 instructions already */
	for (int kc = kc0; kc < bk; kc += kstep) {
		const uint32_t a = a_rd + 4u * kc;
		float4 av[8];
#pragma unroll
		for (int i = 0; i < 8; i++)
			av[i] = ark_lds_f32x4(a + i * a_ri);
		if (TB) {
			const uint32_t b = b_rd + 4u * kc;
			float4 bv[8];
#pragma unroll
			for (int j = 0; j < 8; j++)
				bv[j] = ark_lds_f32x4(b + j * b_ri);
#pragma unroll
			for (int q = 0; q < 4; q++) {
				float br[8];
#pragma unroll
				for (int j = 0; j < 8; j++)
					br[j] = q == 0 ? bv[j].x : q == 1 ? bv[j].y : q == 2 ? bv[j].z : bv[j].w;
				ark_fma4x8(acc, av, br, q);
			}
		} else {
#pragma unroll
			for (int q = 0; q < 4; q++) {
				const uint32_t r = b_rd + (kc + q) * ldb4;
				const float4 b0 = ark_lds_f32x4(r), b1 = ark_lds_f32x4(r + b_ri);
				const float br[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
				ark_fma4x8(acc, av, br, q);
			}
		}
	}
}
template <bool TB, bool STG>
__device__ __noinline__ void ark_mm_ffma(const ark_mm_at at, int m0, int m1, int n0, int n1, int k0, int k1, char *smem)
{
	const ark_mm g = ark_mm_of(at);
	const int tid = threadIdx.x;
	const int TY = (m1 - m0 + 7) / 8, TX = (n1 - n0 + 7) / 8, rp = 8 * TY, cp = 8 * TX, tyx = TY * TX;
	/* a stage holds at most ARK_MM_STG_CH vectors of either operand a thread: rp bk, cp bk <= 4096;
	 * and no more k than the tile has, rounded up to 32 */
	int bk = 32;
	while (bk < 128 && bk < k1 - k0 && 2 * bk * max(rp, cp) <= 4 * ARK_MM_STG_CH * ARK_THREADS)
		bk *= 2;
	int G = 1; /* k-groups: every thread busy where the tile is small, each with a chunk a stage */
	while (G < 16 && 2 * G * tyx <= ARK_THREADS && 2 * G * 4 <= bk)
		G *= 2;
	if constexpr (!STG) {
		if (!ark_mm_on_grid<float, TB>(g, cp, bk)) {
			ark_mm_ffma<TB, true>(at, m0, m1, n0, n1, k0, k1, smem);
			return;
		}
	}
	const int lda = bk + 4, ldb = cp + 4;
	const int a_stage = rp * lda * 4, stage = a_stage + (TB ? cp * lda : bk * ldb) * 4;
	const int grp = tid / tyx, rem = tid - grp * tyx, ty = rem / TX, tx = rem - ty * TX;
	const bool computes = grp < G;
	const uint32_t sbase = (uint32_t)__cvta_generic_to_shared(smem);
	/* this thread's first row of a and of b (TB) or column (!TB), at k 0 of stage 0 */
	const uint32_t a_rd = sbase + 4u * (ty * lda), a_ri = 4u * TY * lda;
	const uint32_t b_rd = sbase + a_stage + 4u * (TB ? tx * lda : 4 * tx), b_ri = TB ? 4u * TX * lda : 16u * TX;

	float acc[8][8];
#pragma unroll
	for (int i = 0; i < 8; i++)
#pragma unroll
		for (int j = 0; j < 8; j++)
			acc[i][j] = 0.0f;

	const bool fix = TY == 16 && TX == 16 && bk == 32; /* then G = 1 */
	ark_mm_kloop<float, TB, STG>(g, m0, m1, n0, n1, k0, k1, smem, rp, cp, bk, lda, ldb, a_stage, stage, [&](uint32_t so) {
		if (!computes)
			return;
		if (fix)
			ark_fma_chunks<TB, true>(acc, a_rd + so, b_rd + so, 0, 0, 0, 0, 4, 32);
		else
			ark_fma_chunks<TB, false>(acc, a_rd + so, b_rd + so, a_ri, b_ri, 4u * ldb, 4 * grp, 4 * G, bk);
	});
	/* each k-group's sums go to its slice of t [G][rp][cp + 4] */
	const int ldt = cp + 4, sl = rp * ldt;
	float *t = reinterpret_cast<float *>(smem);
	if (computes) {
		float *tw = t + grp * sl;
#pragma unroll
		for (int i = 0; i < 8; i++) {
			float *row = tw + (ty + TY * i) * ldt;
			if (TB) {
#pragma unroll
				for (int j = 0; j < 8; j++)
					row[tx + TX * j] = acc[i][j];
			} else {
				*reinterpret_cast<float4 *>(row + 4 * tx) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
				*reinterpret_cast<float4 *>(row + 4 * TX + 4 * tx) = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
			}
		}
	}
	__syncthreads();
	ark_mm_epilogue<float>(g, t, ldt, m0, m1, n0, n1, G, sl);
}

/* The tile of shared-memory stages of T (the tensor cores for 2-byte types, ark_mm_ffma for fp32),
 * built for b's layout and for whether both operands' rows are 16-byte aligned (STG false: 16-byte
 * cp.async only; the k loop checks the same per operand, ark_mm_kloop). */
#include "op_wgmma.cuh" /* ark_mm_wgmma: needs ark_mm_ring and ark_mm_epilogue above */

template <typename T, bool TB, bool STG>
__device__ __forceinline__ void ark_mm_staged_t(const ark_mm &g, int m0, int m1, int n0, int n1, int k0, int k1, char *smem)
{
#if ARK_MM_WGMMA
	/* aligned 16-bit operands, a tile of more than 32 rows and columns and two stages of k at least:
	 * Hopper's warpgroup MMA (op_wgmma.cuh) */
	if constexpr (sizeof(T) == 2 && !STG && ARK_THREADS == 256) {
		if (m1 - m0 > 32 && n1 - n0 > 32 && k1 - k0 >= 128) {
			ark_mm_wgmma<T, TB>(g, m0, m1, n0, n1, k0, k1, smem);
			return;
		}
	}
#endif
	if constexpr (sizeof(T) == 2)
		ark_mm_mma<T, TB, STG>(g.at, m0, m1, n0, n1, k0, k1, smem);
	else
		ark_mm_ffma<TB, STG>(g.at, m0, m1, n0, n1, k0, k1, smem);
}
/* ARK_MM_STAGED: the instances of the tiles of stages compiled, as bits 2 * TB + STG; arkgen says
 * which its tiles take (codegen/emit.c, staged_instance), every one by default. Each is a function of
 * its own under ark_matmul_tile, and one compiled for nothing raises the spills of those the model
 * runs (bench/NOTES.md). An aligned tile whose instance was left out takes the one of any alignment. */
#ifndef ARK_MM_STAGED
#define ARK_MM_STAGED 0xf
#endif

static __device__ __noinline__ void ark_mm_staged_missing(const ark_mm &g)
{
	if (threadIdx.x == 0)
		printf("ark: a matmul tile of stages (b %s, unaligned) that the generated file did not compile "
		       "(ARK_MM_STAGED)\n",
		       g.tb ? "[N, K]" : "[K, N]");
	__trap();
}

template <typename T, bool TB>
__device__ __forceinline__ void ark_mm_staged_l(const ark_mm &g, bool al, int m0, int m1, int n0, int n1, int k0, int k1,
						char *smem)
{
	constexpr unsigned AL = 1u << 2 * TB, ANY = 2u << 2 * TB;
	if constexpr ((ARK_MM_STAGED & AL) != 0) {
		if (al) {
			ark_mm_staged_t<T, TB, false>(g, m0, m1, n0, n1, k0, k1, smem);
			return;
		}
	}
	if constexpr ((ARK_MM_STAGED & ANY) != 0)
		ark_mm_staged_t<T, TB, true>(g, m0, m1, n0, n1, k0, k1, smem);
	else
		ark_mm_staged_missing(g);
}

template <typename T>
__device__ __forceinline__ void ark_mm_staged(const ark_mm &g, int m0, int m1, int n0, int n1, int k0, int k1, char *smem)
{
	constexpr int VE = ark_mm_vecs<T>::VE;
	const bool al = ark_aligned16(g.a) && ark_aligned16(g.b) && k0 % VE == 0 && g.K % VE == 0 && g.astride % VE == 0 &&
			g.bstride % VE == 0 && (g.tb || n0 % VE == 0);
	if (g.tb)
		ark_mm_staged_l<T, true>(g, al, m0, m1, n0, n1, k0, k1, smem);
	else
		ark_mm_staged_l<T, false>(g, al, m0, m1, n0, n1, k0, k1, smem);
}

#include "op_quant.cuh" /* ark_mmq_sub: b in q4_1 or q8_0 blocks */

/* ---- dispatch ----------------------------------------------------------------------------------- */
/* ARK_MM_STREAM_MB_KN, _NK: the row classes (MB: 1, 2, 4, 8, ARK_MM_SMALL_M, as bits) of the streaming tiles compiled, b
 * [K, N] and b [N, K]; arkgen says which its tiles take (codegen/emit.c), every one by default. */
#ifndef ARK_MM_STREAM_MB_KN
#define ARK_MM_STREAM_MB_KN 0x7fffffff
#endif
#ifndef ARK_MM_STREAM_MB_NK
#define ARK_MM_STREAM_MB_NK 0x7fffffff
#endif

/* A streaming tile whose row class the generated file left out: arkgen and the tile dispatch
 * disagree, and running on would leave the tile unwritten. */
static __device__ __noinline__ void ark_mm_stream_missing(const ark_mm &g, int rows)
{
	if (threadIdx.x == 0)
		printf("ark: a streaming matmul tile of %d rows (b %s) that the generated file did not compile "
		       "(ARK_MM_STREAM_MB_%s)\n",
		       rows, g.tb ? "[N, K]" : "[K, N]", g.tb ? "NK" : "KN");
	__trap();
}

template <typename T, int MB>
__device__ void ark_mm_stream(const ark_mm &g, int m0, int m1, int n0, int n1, int k0, int k1, char *smem)
{
	if (g.tb) {
		if constexpr ((ARK_MM_STREAM_MB_NK & MB) != 0) {
			if constexpr (sizeof(T) == 2 && MB >= ARK_MM_NK_TC_ROWS)
				ark_mm_stream_nkt<T, MB>(g.at, m0, m1, n0, n1, k0, k1, smem);
			else
				ark_mm_stream_nk<T, MB>(g.at, m0, m1, n0, n1, k0, k1, smem);
		} else
			ark_mm_stream_missing(g, m1 - m0);
	} else {
		if constexpr ((ARK_MM_STREAM_MB_KN & MB) != 0)
			ark_mm_stream_kn<T, MB>(g.at, m0, m1, n0, n1, k0, k1, smem);
		else
			ark_mm_stream_missing(g, m1 - m0);
	}
}

/* One sub-tile of at most 128 x 128. */
template <typename T>
__device__ void ark_mm_sub(const ark_mm &g, int m0, int m1, int n0, int n1, int k0, int k1, char *smem)
{
	constexpr int VEC = ark_dt<T>::vec;
	const int rows = m1 - m0;
	if (rows <= 0 || n1 <= n0)
		return;
	if (g.qdt == ARK_Q4_1 || g.qdt == ARK_Q8_0) {
		ark_mmq_sub<T>(g, m0, m1, n0, n1, k0, k1, smem);
		return;
	}
	/* A tile of few rows streams b when the whole matmul has few rows (batch-1 decode; 16-bit: at
	 * most ARK_MM_STREAM_KN / _NK rows, abi/ark_smem.h). The last tile of a matmul of many rows (M =
	 * 397 in tiles of 128: 13 rows) stays on the tensor cores: streaming it costs 16 rows of FMA per
	 * weight, and that one tile took 3x as long as a whole 64 x 64 mma tile (bench/NOTES.md),
	 * bounding the op. arkgen costs such tiles the same way (codegen/cost.c, query_of). */
	constexpr bool mma = sizeof(T) == 2 && ARK_TILES_MMA;
	/* fp32 matmuls of more rows than streaming takes run every tile on ark_mm_ffma, the last of few
	 * rows too (ARK_MM_FFMA, abi/ark_smem.h) */
	const bool ffma = sizeof(T) == 4 && ARK_TILES_FFMA && ARK_MM_FFMA(g.M);
	if (rows <= ARK_MM_SMALL_M && (!(mma || ffma) || (mma && ARK_MM_STREAMS16(g.M, g.K, g.tb)) || g.pre)) {
		const bool ok = ark_aligned16(g.b) && g.bstride % VEC == 0 && (g.tb ? k0 : n0) % VEC == 0;
		if (!ok && g.pre) { /* arkgen fuses an op on a only where the tiles stream (fuse.c) */
			if (threadIdx.x == 0)
				printf("ark: a matmul tile with an op fused on a off the streaming paths\n");
			__trap();
		}
		/* rows that cannot stream (odd or unaligned lengths) go to the tiles of shared-memory stages,
		 * which take any alignment: 16-bit to the tensor cores, fp32 to the FMA tile; arkgen compiles
		 * them for such tiles too (codegen/emit.c, staged_instance) */
		if constexpr (mma || (sizeof(T) == 4 && ARK_TILES_FFMA)) {
			if (!ok && !g.pre) {
				ark_mm_staged<T>(g, m0, m1, n0, n1, k0, k1, smem);
				return;
			}
		}
		if (ok) {
			if (rows <= 1)
				ark_mm_stream<T, 1>(g, m0, m1, n0, n1, k0, k1, smem);
			else if (rows <= 2)
				ark_mm_stream<T, 2>(g, m0, m1, n0, n1, k0, k1, smem);
			else if (rows <= 4)
				ark_mm_stream<T, 4>(g, m0, m1, n0, n1, k0, k1, smem);
			else if (rows <= 8)
				ark_mm_stream<T, 8>(g, m0, m1, n0, n1, k0, k1, smem);
			else
				ark_mm_stream<T, ARK_MM_SMALL_M>(g, m0, m1, n0, n1, k0, k1, smem);
			return;
		}
	} else if (g.pre) { /* more rows than streaming takes: arkgen never fuses an op on a there */
		if (threadIdx.x == 0)
			printf("ark: a matmul tile of %d rows with an op fused on a\n", rows);
		__trap();
	} else if constexpr (mma || (sizeof(T) == 4 && ARK_TILES_FFMA)) {
		if (mma || ffma) {
			ark_mm_staged<T>(g, m0, m1, n0, n1, k0, k1, smem);
			return;
		}
	}
	/* every tile takes one of the paths above where arkgen compiled it (codegen/emit.c: the tensor
	 * cores or the FMA tile wherever a tile does not stream) */
	if (threadIdx.x == 0)
		printf("ark: a matmul tile of %d rows (b %s) that no compiled path takes (ARK_TILES_MMA, ARK_TILES_FFMA)\n",
		       rows, g.tb ? "[N, K]" : "[K, N]");
	__trap();
}

/* MATMUL (partial == false: k over 0:K, bias, activation) and MATMUL_PARTIAL (k0:k1, fp32 into the
 * workspace slice `split`). tile (m0:m1, n0:n1) of out, cut into 128 x 128 sub-tiles if larger. */
template <typename T>
__device__ __noinline__ void ark_matmul_tile(const ark_opp &p, int m0, int m1, int n0, int n1, int k0, int k1,
					     uint32_t split, char *arena, char *smem, bool partial)
{
	if (!partial)
		k0 = 0, k1 = (int)p.K;
	/* the operands' fields read again for every sub-tile: held across the calls, they stayed live
	 * through every path of ark_mm_sub and the function spilled them */
	for (int mb = m0; mb < m1; mb += 128)
		for (int nb = n0; nb < n1; nb += 128) {
			const ark_mm g = ark_mm_of({&p, arena, split, partial});
			ark_mm_sub<T>(g, mb, min(mb + 128, m1), nb, min(nb + 128, n1), k0, k1, smem);
		}
}

/* REDUCE: tile (m0:m1, n0:n1) of out = act(sum over s < splits of ws[s] + bias) (+ the residual in[3]
 * with ARK_OPP_RESIDUAL). A thread takes four adjacent columns of a row (a group) at a time, U groups
 * together, and reads 16 / U splits of them at once: all 16 of its 16-byte workspace loads are in
 * flight before any is added. One split at a time left the tile waiting one L2 round trip a split
 * (a 64 x 128 tile of four splits, 2 x 4 trips: 9.3 us; 1 x 128 of eight: 4.3), as one group at a
 * time did before that (~6 us for 64 x 32 of two splits). U is the least of 1, 2, 4 that gives
 * every thread its groups in one pass, so that a small tile reads many splits at once. */
__device__ __forceinline__ float4 ark_ws_load4(const float *w, int nc, bool vec)
{
	if (vec && nc == 4)
		return *reinterpret_cast<const float4 *>(w);
	float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
	if (nc > 0)
		x.x = w[0];
	if (nc > 1)
		x.y = w[1];
	if (nc > 2)
		x.z = w[2];
	if (nc > 3)
		x.w = w[3];
	return x;
}
template <typename T, int U>
__device__ __forceinline__ void ark_reduce_groups(const ark_opp &p, int m0, int m1, int n0, int n1, char *arena)
{
	constexpr int QU = 16 / U; /* splits read at once */
	const float *ws = reinterpret_cast<const float *>(arena + p.ws); /* [splits, M, N] */
	const T *bias = p.flags & ARK_OPP_BIAS ? reinterpret_cast<const T *>(arena + p.in[2]) : nullptr;
	const T *res = p.flags & ARK_OPP_RESIDUAL ? reinterpret_cast<const T *>(arena + p.in[3]) : nullptr;
	T *out = reinterpret_cast<T *>(arena + p.out);
	const size_t mn = (size_t)p.M * p.N, N = p.N;
	const size_t O = p.istride[0][2] ? (size_t)p.istride[0][2] : N; /* out's rows (ark_mm.ostride) */
	const int splits = (int)p.splits;
	const int C = n1 - n0, cw = (C + 3) >> 2, cnt = (m1 - m0) * cw;
	/* 16-byte workspace reads and 4-element output stores where every row allows them */
	const bool wv = (N & 3) == 0 && (n0 & 3) == 0 && ((uintptr_t)ws & 15) == 0 && (mn & 3) == 0;
	const bool ov = (O & 3) == 0 && (n0 & 3) == 0 && ((uintptr_t)out & (4 * sizeof(T) - 1)) == 0;
	const bool rv = (N & 3) == 0 && (n0 & 3) == 0 && ((uintptr_t)res & (4 * sizeof(T) - 1)) == 0;
	for (int e0 = threadIdx.x; e0 < cnt; e0 += U * ARK_THREADS) {
		size_t off[U], oo[U]; /* in the workspace and the residual, in out */
		int nc[U];
		float v[U][4];
#pragma unroll
		for (int u = 0; u < U; u++) {
			const int e = e0 + u * ARK_THREADS, r = e / cw, c = 4 * (e - r * cw);
			nc[u] = e < cnt ? min(4, C - c) : 0;
			off[u] = (size_t)(m0 + r) * N + n0 + c;
			oo[u] = (size_t)(m0 + r) * O + n0 + c;
			/* the residual requested with the workspace's loads (no registers held): read
			 * after the first store, a group at a time waited a round trip each */
			if (res && nc[u] > 0)
				asm volatile("prefetch.global.L1 [%0];\n" ::"l"(res + off[u]));
#pragma unroll
			for (int j = 0; j < 4; j++)
				v[u][j] = bias && j < nc[u] ? ark_to_f(bias[n0 + c + j]) : 0.0f;
		}
		for (int q0 = 0; q0 < splits; q0 += QU) {
			float4 x[QU][U];
#pragma unroll
			for (int q = 0; q < QU; q++)
#pragma unroll
				for (int u = 0; u < U; u++)
					x[q][u] = ark_ws_load4(ws + (q0 + q) * mn + off[u], q0 + q < splits ? nc[u] : 0, wv);
#pragma unroll
			for (int q = 0; q < QU; q++)
#pragma unroll
				for (int u = 0; u < U; u++)
					v[u][0] += x[q][u].x, v[u][1] += x[q][u].y, v[u][2] += x[q][u].z, v[u][3] += x[q][u].w;
		}
		ark_with_act(p.act, [&](auto f) {
#pragma unroll
			for (int u = 0; u < U; u++) {
				if (nc[u] == 0)
					continue;
#pragma unroll
				for (int j = 0; j < 4; j++)
					v[u][j] = f(v[u][j]);
				if (res) {
					float rs[4];
					ark_mm_load4<T>(res + off[u], rs, nc[u], rv);
					ark_mm_add4<T>(v[u], rs);
				}
				ark_mm_store4<T>(out + oo[u], v[u], nc[u], ov);
			}
		});
	}
}
template <typename T>
__device__ __noinline__ void ark_reduce_tile(const ark_opp &p, int m0, int m1, int n0, int n1, char *arena)
{
	const int cnt = (m1 - m0) * ((n1 - n0 + 3) >> 2);
	if (cnt <= ARK_THREADS)
		ark_reduce_groups<T, 1>(p, m0, m1, n0, n1, arena);
	else if (cnt <= 2 * ARK_THREADS)
		ark_reduce_groups<T, 2>(p, m0, m1, n0, n1, arena);
	else
		ark_reduce_groups<T, 4>(p, m0, m1, n0, n1, arena);
}

/* The templates of this file, as TMPL_CATALOG names them. */
struct ark_tile_matmul {
	static constexpr bool per_dtype = true;
	template <typename T>
	static __device__ __forceinline__ void run(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
	{
		ark_matmul_tile<T>(p, t.m0, t.m1, t.n0, t.n1, t.k0, t.k1, t.split, e.arena, e.smem, false);
	}
};
struct ark_tile_matmul_partial {
	static constexpr bool per_dtype = true;
	template <typename T>
	static __device__ __forceinline__ void run(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
	{
		ark_matmul_tile<T>(p, t.m0, t.m1, t.n0, t.n1, t.k0, t.k1, t.split, e.arena, e.smem, true);
	}
};
struct ark_tile_reduce {
	static constexpr bool per_dtype = true;
	template <typename T>
	static __device__ __forceinline__ void run(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
	{
		ark_reduce_tile<T>(p, t.m0, t.m1, t.n0, t.n1, e.arena);
	}
};

#endif
