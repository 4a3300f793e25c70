// op_reduce.cuh: REDUCE_MEAN tiles: the mean of in[0] over one axis, optionally weighted by a mask (mean pooling).
#ifndef OP_REDUCE_CUH
#define OP_REDUCE_CUH

#include "ark_dtype.cuh"

#include "ark_smem.h" /* ARK_SMEM_REDUCE_MEAN, ARK_RM_BATCH */

/* Calls body(m) with m the mask pointer as its element type: the mask's dtype (ark_opp.mask_dtype)
 * may differ from the tensor's, and is read through ark_dt<MT>::to_f like any other. A dtype joins
 * here with a case once ark_dt has its traits. */
template <typename F> __device__ __forceinline__ void ark_with_mask(const ark_opp &p, const char *arena, F &&body)
{
	const void *m = arena + p.in[1];
	switch (p.mask_dtype) {
	case ARK_FP16: body(static_cast<const __half *>(m)); break;
	case ARK_BF16: body(static_cast<const __nv_bfloat16 *>(m)); break;
	case ARK_INT32: body(static_cast<const int32_t *>(m)); break;
	default: body(static_cast<const float *>(m)); break;
	}
}

/* acc += sum of xs[s * q * d] * ms[s * q] (ms null: 1), cnt += the weights, over s = s0, s0 + ds, ...
 * < S; ARK_RM_BATCH elements in flight (independent sums, added at the end): one load at a time
 * left each thread waiting a memory round trip per element (a mean over 178 rows took ~6 us a tile),
 * four still took 3.6-8.8 us for tiles of 7-55 KB. */
template <typename T, typename MT>
__device__ __forceinline__ void ark_reduce_sum(const T *xs, const MT *ms, int64_t q, int64_t s0, int64_t S, int64_t ds,
					       float &acc, float &cnt, int64_t d = 1)
{
	float a[ARK_RM_BATCH], c[ARK_RM_BATCH];
#pragma unroll
	for (int u = 0; u < ARK_RM_BATCH; u++)
		a[u] = 0.0f, c[u] = 0.0f;
	int64_t s = s0;
	for (; s + (ARK_RM_BATCH - 1) * ds < S; s += ARK_RM_BATCH * ds) {
#pragma unroll
		for (int u = 0; u < ARK_RM_BATCH; u++) {
			const int64_t i = (s + u * ds) * q;
			const float w = ms ? ark_to_f(ms[i]) : 1.0f;
			a[u] += ark_to_f(xs[i * d]) * w;
			c[u] += w;
		}
	}
	for (; s < S; s += ds) {
		const int64_t i = s * q;
		const float w = ms ? ark_to_f(ms[i]) : 1.0f;
		a[0] += ark_to_f(xs[i * d]) * w;
		c[0] += w;
	}
#pragma unroll
	for (int h = ARK_RM_BATCH / 2; h > 0; h /= 2) /* pairwise, as the four were */
#pragma unroll
		for (int u = 0; u < h; u++)
			a[u] += a[u + h], c[u] += c[u + h];
	acc += a[0];
	cnt += c[0];
}

/* The sum of the S contiguous elements at row, by a warp: 16-byte vectors, ARK_RM_BATCH of them a lane
 * in flight, and the elements before the first 16-byte boundary and after the last whole vector one
 * a lane. One round trip a batch: a row of 3313 bf16 takes 2 where elements one at a time took 13.
 * Returns the lane's part; the warp adds them. */
template <typename T> __device__ __forceinline__ float ark_reduce_row_vec(const T *row, int64_t S, int lane)
{
	constexpr int V = 16 / (int)sizeof(T);
	int64_t h = (int64_t)(((16u - ((uint32_t)(uintptr_t)row & 15u)) & 15u) / sizeof(T));
	if (h > S)
		h = S;
	const int64_t nv = (S - h) / V, t0 = h + nv * V; /* whole vectors from h; the tail from t0 */
	float a[ARK_RM_BATCH];
#pragma unroll
	for (int u = 0; u < ARK_RM_BATCH; u++)
		a[u] = 0.0f;
	if (lane < h)
		a[0] += ark_to_f(row[lane]);
	if (t0 + lane < S)
		a[1] += ark_to_f(row[t0 + lane]);
	const uint4 *vp = reinterpret_cast<const uint4 *>(row + h);
	int64_t i = lane;
	for (; i + (ARK_RM_BATCH - 1) * 32 < nv; i += ARK_RM_BATCH * 32) {
		uint4 v[ARK_RM_BATCH];
#pragma unroll
		for (int u = 0; u < ARK_RM_BATCH; u++)
			v[u] = ark_ld16(vp + i + u * 32);
#pragma unroll
		for (int u = 0; u < ARK_RM_BATCH; u++) {
			float f[V];
			ark_unpack<T>(v[u], f);
#pragma unroll
			for (int j = 0; j < V; j++)
				a[u] += f[j];
		}
	}
	for (; i < nv; i += 32) {
		float f[V];
		ark_unpack<T>(ark_ld16(vp + i), f);
#pragma unroll
		for (int j = 0; j < V; j++)
			a[0] += f[j];
	}
#pragma unroll
	for (int hh = ARK_RM_BATCH / 2; hh > 0; hh /= 2)
#pragma unroll
		for (int u = 0; u < hh; u++)
			a[u] += a[u + hh];
	return a[0];
}

/* x viewed as [P, S, Q, D] (p.oshape), out as [P * Q, D], mask (ARK_OPP_MASK) as [P, S, Q]:
 *   out[p * Q + q, d] = sum_s x[p, s, q, d] * m[p, s, q] / max(sum_s m[p, s, q], 1e-9)
 * and without a mask, sum_s x[p, s, q, d] / S. Sums in fp32. */
template <typename T, typename MT>
__device__ __noinline__ void ark_reduce_mean_tile(const ark_opp &p, const ark_task &t, const T *x, const MT *mask,
						  T *y, float *smem)
{
	const int64_t S = p.oshape[1], Q = p.oshape[2], D = p.oshape[3];
	const int m0 = (int)t.m0, m1 = (int)t.m1;
	if (Q == 1 && D == 1) {
		/* the reduced elements of an output are contiguous: a warp per output element, rows
		 * m0:m1 of out [P, 1] */
		const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
		for (int r = m0 + warp; r < m1; r += ARK_WARPS) {
			float acc = 0.0f, cnt = 0.0f;
			if (mask)
				ark_reduce_sum(x + (size_t)r * S, mask + (size_t)r * S, 1, lane, S, 32, acc, cnt);
			else
				acc = ark_reduce_row_vec(x + (size_t)r * S, S, lane);
			acc = ark_warp_sum(acc);
			cnt = ark_warp_sum(cnt);
			if (lane == 0)
				y[r] = ark_from_f<T>(mask ? acc / fmaxf(cnt, 1e-9f) : acc / (float)S);
		}
		return;
	}
	/* tile (m0:m1, n0:n1) of out [P * Q, D]: W threads over columns, G groups of them over S, whose
	 * partial sums meet in shared memory ([G][W] sums, then [G][W] counts) */
	const int ncols = (int)(t.n1 - t.n0);
	int W = 32;
	while (W < ncols && W * 2 <= ARK_THREADS)
		W *= 2;
	const int G = ARK_THREADS / W, tid = threadIdx.x, w = tid % W, g = tid / W;
	const bool active = g < G;
	float *sums = smem, *cnts = smem + ARK_THREADS;
	for (int r = m0; r < m1; r++) {
		const int64_t pi = r / Q, q = r % Q;
		for (int c0 = (int)t.n0; c0 < (int)t.n1; c0 += W) {
			const int c = c0 + w;
			float acc = 0.0f, cnt = 0.0f;
			if (active && c < (int)t.n1) /* element s of the sum: x[(pi S + s) Q + q][c], mask [P, S, Q] */
				ark_reduce_sum(x + (size_t)(pi * S * Q + q) * D + c, mask ? mask + (size_t)(pi * S * Q + q) : nullptr,
					       Q, g, S, G, acc, cnt, D);
			__syncthreads(); /* the previous column block has read smem */
			if (active) {
				sums[g * W + w] = acc;
				cnts[g * W + w] = cnt;
			}
			__syncthreads();
			if (g == 0 && c < (int)t.n1) {
				for (int k = 1; k < G; k++) {
					acc += sums[k * W + w];
					cnt += cnts[k * W + w];
				}
				y[(size_t)r * D + c] = ark_from_f<T>(mask ? acc / fmaxf(cnt, 1e-9f) : acc / (float)S);
			}
		}
	}
	__syncthreads(); /* smem free for the next task */
}

/* The template of this file, as TMPL_CATALOG names it. */
struct ark_tile_reduce_mean {
	static constexpr bool per_dtype = true;
	template <typename T>
	static __device__ __forceinline__ void run(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
	{
		const T *x = reinterpret_cast<const T *>(e.arena + p.in[0]);
		T *y = reinterpret_cast<T *>(e.arena + p.out);
		float *smem = reinterpret_cast<float *>(e.smem);
		if (p.flags & ARK_OPP_MASK)
			ark_with_mask(p, e.arena, [&](auto mask) { ark_reduce_mean_tile<T>(p, t, x, mask, y, smem); });
		else
			ark_reduce_mean_tile<T, T>(p, t, x, static_cast<const T *>(nullptr), y, smem);
	}
};

#endif
