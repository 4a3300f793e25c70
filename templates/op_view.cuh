// op_view.cuh: EMBEDDING tiles (rows of a table picked by int32 ids) and STRIDED tiles (the copy of a slice or transpose that cannot be a view).
#ifndef OP_VIEW_CUH
#define OP_VIEW_CUH

#include "ark_dtype.cuh"
#include "op_copy.cuh" /* ark_copy_bytes */
#include "op_matmul.cuh" /* op_quant.cuh: ark_embedding_q_tile */

/* EMBEDDING: rows m0:m1 of out [M, N]; row r is row ids[r] of the table [K, N] (K = V rows), copied
 * as bytes (16-byte vectors where the rows allow). An id outside 0..K-1 never reads outside the
 * table: its row is written as zeros and the fault is recorded for the loop, which aborts the
 * iteration naming the task, the row and the id. */
__device__ __forceinline__ void ark_embedding_tile(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
{
	if (p.wdtype == ARK_Q4_1 || p.wdtype == ARK_Q8_0) { /* a quantized table, dequantised into p.dtype */
		ark_embedding_q_tile(p, t, e);
		return;
	}
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
