// op_view.cuh: EMBEDDING tiles (rows of a table picked by int32 ids) and STRIDED tiles (the copy of a slice or transpose that cannot be a view).
#ifndef OP_VIEW_CUH
#define OP_VIEW_CUH

#include "ark_dtype.cuh"
#include "op_copy.cuh" /* ark_copy_bytes */
#include "op_matmul.cuh" /* op_quant.cuh: ark_embedding_q_tile */

/* EMBEDDING with a fused add (ARK_OPP_RESIDUAL: in[3] [M, N], fuse.c) of a table of T: rows r0 :
 * r0 + rows of out, row r = row ids[r - r0] of the table (zeros where the id is outside 0..K-1) plus
 * row r of in[3], summed in fp32 and rounded once to T, as the add computes it. Units of a 16-byte
 * vector where the table, in[3], out and the rows are 16-byte aligned, else of one element; the
 * (row, unit) pairs over the threads, the loads of B units in flight a thread, each pair's row
 * and unit stepped without a division. */
template <typename T, bool V>
__device__ __forceinline__ void ark_embedding_add_units(const T *tab, const T *res, T *out, const int32_t *ids, uint32_t rows,
							uint32_t upr, int64_t K)
{
	constexpr int E = V ? ark_dt<T>::vec : 1, B = V ? 4 : 8; /* elements a unit, units in flight */
	const uint32_t n = rows * upr;
	ark_row_units w(upr); /* pair i's row and unit */
	for (uint32_t i = threadIdx.x; i < n; i += B * ARK_THREADS) {
		uint4 q[V ? B : 1], x[V ? B : 1];
		T qs[V ? 1 : B], xs[V ? 1 : B];
		uint32_t at[B];
#pragma unroll
		for (int u = 0; u < B; u++) {
			const uint32_t r = w.r, c = w.c;
			at[u] = r * upr + c;
			if (i + u * ARK_THREADS < n) {
				const int32_t id = ids[r];
				const bool ok = id >= 0 && id < K;
				if constexpr (V) {
					q[u] = ok ? ark_ld16(tab + ((size_t)id * upr + c) * E) : make_uint4(0, 0, 0, 0);
					x[u] = ark_ld16(res + (size_t)at[u] * E);
				} else {
					qs[u] = ok ? tab[(size_t)id * upr + c] : ark_from_f<T>(0.0f);
					xs[u] = res[at[u]];
				}
			}
			w.next();
		}
#pragma unroll
		for (int u = 0; u < B; u++) {
			if (i + u * ARK_THREADS >= n)
				continue;
			if constexpr (V) {
				float a[E], b[E];
				ark_unpack<T>(q[u], a);
				ark_unpack<T>(x[u], b);
#pragma unroll
				for (int k = 0; k < E; k++)
					a[k] += b[k];
				ark_st16(out + (size_t)at[u] * E, ark_pack<T>(a));
			} else {
				out[at[u]] = ark_from_f<T>(ark_to_f(qs[u]) + ark_to_f(xs[u]));
			}
		}
	}
}

#ifndef ARK_EMB_RESIDUAL
#define ARK_EMB_RESIDUAL 1 /* 0: no embedding of the file has a fused add (arkgen says which) */
#endif

/* An embedding of a plain table with a fused add: a function of its own, compiled only where arkgen
 * fused such an add (ARK_EMB_RESIDUAL), so that the other models' loop kernels keep the code, and
 * the registers, they had. The task's ids go to shared memory first (ark_emb_chunks). */
template <typename T>
__device__ __noinline__ void ark_embedding_add_rows(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
{
	constexpr int VEC = ark_dt<T>::vec;
	const T *tab = reinterpret_cast<const T *>(e.arena + p.in[1]);
	ark_emb_chunks(p, t.m0, t.m1, e, [&](const int32_t *sid, uint32_t c0, uint32_t nr) {
		const T *res = reinterpret_cast<const T *>(e.arena + p.in[3]) + (size_t)c0 * p.N;
		T *out = reinterpret_cast<T *>(e.arena + p.out) + (size_t)c0 * p.N;
		if (ark_aligned16(tab) && ark_aligned16(res) && ark_aligned16(out) && p.N % VEC == 0)
			ark_embedding_add_units<T, true>(tab, res, out, sid, nr, (uint32_t)(p.N / VEC), p.K);
		else
			ark_embedding_add_units<T, false>(tab, res, out, sid, nr, (uint32_t)p.N, p.K);
	});
}

#if ARK_EMB_RESIDUAL
__device__ __forceinline__ void ark_embedding_add_tile(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
{
	ark_built_dtype(p.dtype, [&](auto *x) { ark_embedding_add_rows<ARK_DT_OF(x)>(p, t, e); });
}
#endif

/* EMBEDDING: rows m0:m1 of out [M, N]; row r is row ids[r] of the table [K, N] (K = V rows), copied
 * as bytes (16-byte vectors where the rows allow), plus a fused add's row where arkgen fused one
 * (ARK_OPP_RESIDUAL). An id outside 0..K-1 never reads outside the table: its row is written as
 * zeros (plus the fused add's row) and the fault is recorded for the loop, which aborts the
 * iteration naming the task, the row and the id. A plain table's rows without an add are copied a
 * row at a time here in the loop kernel, by ark_copy_bytes, which every model with a copy has: the
 * rows all at once by a function of its own, or by ark_copy_bytes, raised the spills of other
 * functions of the loop kernel (its matmul tiles', bench/NOTES.md). */
__device__ __forceinline__ void ark_embedding_tile(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
{
	if (p.wdtype == ARK_Q4_1 || p.wdtype == ARK_Q8_0) { /* a quantized table, dequantised into p.dtype */
		ark_embedding_q_tile(p, t, e);
		return;
	}
#if ARK_EMB_RESIDUAL
	if (p.flags & ARK_OPP_RESIDUAL) {
		ark_embedding_add_tile(p, t, e);
		return;
	}
#endif
	const size_t es = ark_elem_bytes(p.dtype), row = (size_t)p.N * es;
	const int32_t *ids = reinterpret_cast<const int32_t *>(e.arena + p.in[0]);
	const char *tab = e.arena + p.in[1];
	char *out = e.arena + p.out;
	for (uint32_t r = t.m0; r < t.m1; r++) {
		const int32_t id = ids[r]; /* the same for every thread */
		char *dst = out + (size_t)r * row;
		if (id < 0 || (int64_t)id >= p.K) {
			for (size_t b = threadIdx.x; b < row; b += ARK_THREADS)
				dst[b] = 0;
			ark_tile_fault(e, r + 1, id);
			continue;
		}
		/* ark_copy_bytes copies bytes [0, row) of src to the same offsets of dst */
		ark_copy_bytes(tab + (size_t)id * row, dst, 0, row);
	}
}

/* STRIDED: copies k0:k1 of the index space oshape (ndim dimensions, row-major); copy i, of indices
 * i_0..i_{ndim-1}, is the input's copy K + sum_d i_d * istride[0][d], stored to out's copy sum_d i_d *
 * istride[1][d], or to out's copy i where istride[1] is all 0. A copy is one element (2 or 4 bytes),
 * or p.unit of them (up to 16 bytes) where the last dimension stays contiguous on both sides
 * (arkgen then counts oshape's last dimension, the strides and K in copies, codegen/view.c): a
 * slice, transpose (out: the index space) or concat (one entry per input: its index space, placed
 * in out) that has to copy, asked for with copy = true. */
template <typename E>
__device__ __forceinline__ void ark_strided_copies(const ark_opp &p, uint32_t k0, uint32_t k1, const char *in, char *out)
{
	/* U copies a thread at a time, every load issued before the first store: one at a time left
	 * each thread waiting out a memory round trip per element (a transpose of [1993, 32] in 16
	 * ranges took 10 us a range, bench/NOTES.md). Indices in 32 bits: a task's copies are. */
	constexpr int U = 8;
	const E *src = reinterpret_cast<const E *>(in);
	E *dst = reinterpret_cast<E *>(out);
	const bool placed = p.istride[1][p.ndim - 1] != 0; /* the same for every thread */
	for (uint32_t i0 = k0 + threadIdx.x; i0 < k1; i0 += U * ARK_THREADS) {
		E v[U];
		int64_t to[U];
#pragma unroll
		for (int u = 0; u < U; u++) {
			const uint32_t i = i0 + u * ARK_THREADS;
			to[u] = -1;
			if (i >= k1)
				continue;
			uint32_t rest = i;
			int64_t at = p.K, o = 0;
			for (int d = p.ndim - 1; d >= 0; d--) {
				const uint32_t n = (uint32_t)p.oshape[d], q = rest / n, k = rest - q * n;
				at += (int64_t)k * p.istride[0][d];
				o += (int64_t)k * p.istride[1][d];
				rest = q;
			}
			v[u] = src[at];
			to[u] = placed ? o : (int64_t)i;
		}
#pragma unroll
		for (int u = 0; u < U; u++)
			if (to[u] >= 0)
				dst[to[u]] = v[u];
	}
}

/* STRIDED with p.boxed: the box (m0:m1, n0:n1) of out's 2-D view [rows, L], rows m0:m1 within one of
 * its matrices (indices j0.. of dimension ndim - 2, whose stride in the input is 1), out[r][l] =
 * in[... l, j]. Staged through shared memory so that a warp reads 32 consecutive elements of an input
 * row and writes 32 consecutive elements of an output row (element by element, each thread's stores
 * went to a different 32-byte sector: 13 us a task for 10 KB, bench/NOTES.md). */
template <typename E>
__device__ __forceinline__ void ark_strided_box(const ark_opp &p, const ark_task &t, const char *in, char *out, char *smem)
{
	constexpr int B = ARK_STRIDED_BOX, LD = B + 1, W = 32, Y = ARK_THREADS / 32;
	const E *src = reinterpret_cast<const E *>(in);
	E *dst = reinterpret_cast<E *>(out);
	E *s = reinterpret_cast<E *>(smem); /* [l][j], LD apart */
	const int nd = p.ndim, R = (int)(t.m1 - t.m0), C = (int)(t.n1 - t.n0);
	const int64_t L = p.oshape[nd - 1], J = p.oshape[nd - 2], sl = p.istride[0][nd - 1];
	/* the input element of (m0, n0): the matrix's offset (dimensions before the last two), j0, n0 */
	int64_t rest = t.m0 / J, at = p.K + (int64_t)(t.m0 % J) + (int64_t)t.n0 * sl;
	for (int d = nd - 3; d >= 0; d--) {
		const int64_t n = p.oshape[d], q = rest / n;
		at += (rest - q * n) * p.istride[0][d];
		rest = q;
	}
	const int lane = threadIdx.x & 31, wy = threadIdx.x >> 5;
	static_assert(B % Y == 0 && B % W == 0, "ARK_STRIDED_BOX: whole warps and rows of warps");
	/* a warp: 32 consecutive j of input row l; all of a thread's loads in flight at once */
	E v[B / Y][B / W];
#pragma unroll
	for (int a = 0; a < B / Y; a++)
#pragma unroll
		for (int b = 0; b < B / W; b++) {
			const int l = wy + a * Y, j = lane + b * W;
			if (l < C && j < R)
				v[a][b] = src[at + (int64_t)l * sl + j];
		}
#pragma unroll
	for (int a = 0; a < B / Y; a++)
#pragma unroll
		for (int b = 0; b < B / W; b++) {
			const int l = wy + a * Y, j = lane + b * W;
			if (l < C && j < R)
				s[l * LD + j] = v[a][b];
		}
	__syncthreads();
	E *o = dst + (size_t)t.m0 * L + t.n0;
	for (int j = wy; j < R; j += Y) /* a warp: 32 consecutive l of output row j */
		for (int l = lane; l < C; l += W)
			o[(size_t)j * L + l] = s[l * LD + j];
	__syncthreads(); /* shared memory free for the next task */
}

__device__ __forceinline__ void ark_strided_tile(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
{
	if (p.boxed) {
		if (ark_elem_bytes(p.dtype) == 4)
			ark_strided_box<uint32_t>(p, t, e.arena + p.in[0], e.arena + p.out, e.smem);
		else
			ark_strided_box<uint16_t>(p, t, e.arena + p.in[0], e.arena + p.out, e.smem);
		return;
	}
	const uint32_t w = p.unit > 1 ? p.unit : 1, k0 = t.k0 / w, k1 = t.k1 / w;
	const char *in = e.arena + p.in[0];
	char *out = e.arena + p.out;
	switch (ark_elem_bytes(p.dtype) * w) {
	case 16: ark_strided_copies<uint4>(p, k0, k1, in, out); break;
	case 8: ark_strided_copies<uint2>(p, k0, k1, in, out); break;
	case 4: ark_strided_copies<uint32_t>(p, k0, k1, in, out); break;
	default: ark_strided_copies<uint16_t>(p, k0, k1, in, out); break;
	}
}

/* The templates of this file, as TMPL_CATALOG names them. */
struct ark_tile_embedding {
	static constexpr bool per_dtype = false;
	static __device__ __forceinline__ void run(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
	{
		ark_embedding_tile(p, t, e);
	}
};
struct ark_tile_strided {
	static constexpr bool per_dtype = false;
	static __device__ __forceinline__ void run(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
	{
		ark_strided_tile(p, t, e);
	}
};

#endif
