// op_rows.cuh: SOFTMAX, LAYERNORM, RMSNORM and L2NORM tiles: whole rows over the last dim, fp32 math.
#ifndef OP_ROWS_CUH
#define OP_ROWS_CUH

#include "ark_dtype.cuh"

#include "ark_smem.h" /* ARK_SMEM_* */

/* A row is handled by a group of G threads: one warp (G = 32, rows spread over the warps) when rows
 * are short, or the whole CTA (G = ARK_THREADS). gl = thread's index in its group. */
template <int G> __device__ __forceinline__ float ark_grp_sum(float v, float *scratch)
{
	if constexpr (G == 32)
		return ark_warp_sum(v);
	else
		return ark_block_sum(v, scratch);
}
template <int G> __device__ __forceinline__ float ark_grp_max(float v, float *scratch)
{
	if constexpr (G == 32)
		return ark_warp_max(v);
	else
		return ark_block_max(v, scratch);
}

/* Calls f(value) for every element of row x [N]; 16-byte vectors when vec. */
template <typename T, int G, typename F>
__device__ __forceinline__ void ark_row_scan(const T *x, int N, int gl, bool vec, F f)
{
	constexpr int VEC = ark_dt<T>::vec;
	int i0 = 0;
	if (vec) {
		const int nv = N / VEC;
		for (int v = gl; v < nv; v += G) {
			float a[VEC];
			ark_unpack<T>(ark_ld16(x + v * VEC), a);
#pragma unroll
			for (int j = 0; j < VEC; j++)
				f(a[j]);
		}
		i0 = nv * VEC;
	}
	for (int i = i0 + gl; i < N; i += G)
		f(ark_to_f(x[i]));
}

/* y[i] = f(i, x[i]) for the row; 16-byte vectors when vec. */
template <typename T, int G, typename F>
__device__ __forceinline__ void ark_row_write(const T *x, T *y, int N, int gl, bool vec, F f)
{
	constexpr int VEC = ark_dt<T>::vec;
	int i0 = 0;
	if (vec) {
		const int nv = N / VEC;
		for (int v = gl; v < nv; v += G) {
			float a[VEC];
			ark_unpack<T>(ark_ld16(x + v * VEC), a);
#pragma unroll
			for (int j = 0; j < VEC; j++)
				a[j] = f(v * VEC + j, a[j]);
			ark_st16(y + v * VEC, ark_pack<T>(a));
		}
		i0 = nv * VEC;
	}
	for (int i = i0 + gl; i < N; i += G)
		y[i] = ark_from_f<T>(f(i, ark_to_f(x[i])));
}

/* One row x [N] -> y [N], every value through act (a fused activation, ark_act_k) as it is stored. */
template <typename T, int TMPL, int G, typename A>
__device__ __forceinline__ void ark_row(const T *x, T *y, const T *gamma, const T *beta, int N, float eps, int gl,
					bool vec, float *scratch, A act)
{
	if constexpr (TMPL == ARK_T_SOFTMAX) {
		float mx = -INFINITY;
		ark_row_scan<T, G>(x, N, gl, vec, [&](float v) { mx = fmaxf(mx, v); });
		mx = ark_grp_max<G>(mx, scratch);
		float s = 0.0f;
		ark_row_scan<T, G>(x, N, gl, vec, [&](float v) { s += expf(v - mx); });
		const float inv = 1.0f / ark_grp_sum<G>(s, scratch);
		ark_row_write<T, G>(x, y, N, gl, vec, [&](int, float v) { return act(expf(v - mx) * inv); });
	} else if constexpr (TMPL == ARK_T_LAYERNORM) {
		float s = 0.0f;
		ark_row_scan<T, G>(x, N, gl, vec, [&](float v) { s += v; });
		const float mean = ark_grp_sum<G>(s, scratch) / N;
		float q = 0.0f;
		ark_row_scan<T, G>(x, N, gl, vec, [&](float v) { q += (v - mean) * (v - mean); });
		const float rstd = rsqrtf(ark_grp_sum<G>(q, scratch) / N + eps);
		ark_row_write<T, G>(x, y, N, gl, vec, [&](int i, float v) {
			return act((v - mean) * rstd * ark_to_f(gamma[i]) + ark_to_f(beta[i]));
		});
	} else if constexpr (TMPL == ARK_T_L2NORM) { /* x / max(||x||_2, eps) */
		float q = 0.0f;
		ark_row_scan<T, G>(x, N, gl, vec, [&](float v) { q += v * v; });
		const float r = 1.0f / fmaxf(sqrtf(ark_grp_sum<G>(q, scratch)), eps);
		ark_row_write<T, G>(x, y, N, gl, vec, [&](int, float v) { return act(v * r); });
	} else { /* RMSNORM */
		constexpr int VEC = ark_dt<T>::vec;
		if (vec && N <= G * VEC && ark_aligned16(gamma)) {
			/* a vector of the row per thread: x and gamma loaded together, before the sum, and
			 * kept in registers (one round trip to memory instead of three) */
			const bool mine = gl < N / VEC;
			float a[VEC], g[VEC];
			float q = 0.0f;
			if (mine) {
				const uint4 xv = ark_ld16(x + gl * VEC), gv = ark_ld16(gamma + gl * VEC);
				ark_unpack<T>(xv, a);
				ark_unpack<T>(gv, g);
#pragma unroll
				for (int j = 0; j < VEC; j++)
					q += a[j] * a[j];
			}
			const float r = rsqrtf(ark_grp_sum<G>(q, scratch) / N + eps);
			if (mine) {
#pragma unroll
				for (int j = 0; j < VEC; j++)
					a[j] = act(a[j] * r * g[j]);
				ark_st16(y + gl * VEC, ark_pack<T>(a));
			}
			return;
		}
		float q = 0.0f;
		ark_row_scan<T, G>(x, N, gl, vec, [&](float v) { q += v * v; });
		const float r = rsqrtf(ark_grp_sum<G>(q, scratch) / N + eps);
		ark_row_write<T, G>(x, y, N, gl, vec, [&](int i, float v) { return act(v * r * ark_to_f(gamma[i])); });
	}
}

/* rows m0:m1 of in[0] / out viewed as [M, N], each row whole; p.act: an activation fused after it
 * (codegen/fuse.c, fuse_act_into). */
template <typename T, int TMPL>
__device__ __noinline__ void ark_rows_tile(const ark_opp &p, int m0, int m1, char *arena, char *smem)
{
	constexpr int VEC = ark_dt<T>::vec;
	const T *x = reinterpret_cast<const T *>(arena + p.in[0]);
	T *y = reinterpret_cast<T *>(arena + p.out);
	const T *gamma = TMPL == ARK_T_LAYERNORM || TMPL == ARK_T_RMSNORM ? reinterpret_cast<const T *>(arena + p.in[1])
									    : nullptr;
	const T *beta = TMPL == ARK_T_LAYERNORM ? reinterpret_cast<const T *>(arena + p.in[2]) : nullptr;
	const int N = (int)p.N, rows = m1 - m0;
	const float eps = p.f;
	const bool vec = N % VEC == 0 && ark_aligned16(x) && ark_aligned16(y);
	float *scratch = reinterpret_cast<float *>(smem);
	ark_with_act(p.act, [&](auto act) {
		if (N <= 1024 && (rows >= ARK_WARPS / 2 || N <= 128)) { /* a warp per row */
			const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
			for (int r = warp; r < rows; r += ARK_WARPS) {
				const size_t off = (size_t)(m0 + r) * N;
				ark_row<T, TMPL, 32>(x + off, y + off, gamma, beta, N, eps, lane, vec, scratch, act);
			}
		} else {
			for (int r = 0; r < rows; r++) {
				const size_t off = (size_t)(m0 + r) * N;
				ark_row<T, TMPL, ARK_THREADS>(x + off, y + off, gamma, beta, N, eps, threadIdx.x, vec, scratch, act);
			}
			__syncthreads(); /* scratch free for the next task */
		}
	});
}

/* The templates of this file, as TMPL_CATALOG names them. */
template <int TMPL> struct ark_tile_rows {
	static constexpr bool per_dtype = true;
	template <typename T>
	static __device__ __forceinline__ void run(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
	{
		ark_rows_tile<T, TMPL>(p, t.m0, t.m1, e.arena, e.smem);
	}
};
typedef ark_tile_rows<ARK_T_SOFTMAX> ark_tile_softmax;
typedef ark_tile_rows<ARK_T_LAYERNORM> ark_tile_layernorm;
typedef ark_tile_rows<ARK_T_RMSNORM> ark_tile_rmsnorm;
typedef ark_tile_rows<ARK_T_L2NORM> ark_tile_l2norm;

#endif
