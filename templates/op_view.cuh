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

/* STRIDED: elements k0:k1 of the index space oshape (ndim dimensions, row-major); element i, of
 * indices i_0..i_{ndim-1}, is the input element K + sum_d i_d * istride[0][d], stored to out element
 * sum_d i_d * istride[1][d], or to out element i where istride[1] is all 0. Element by element (2 or
 * 4 bytes): a slice, transpose (out: the index space) or concat (one entry per input: its index
 * space, placed in out) that has to copy, asked for with copy = true. */
template <typename E>
__device__ __forceinline__ void ark_strided_elems(const ark_opp &p, const ark_task &t, const char *in, char *out)
{
	/* U elements a thread at a time, every load issued before the first store: one element at a time
	 * left each thread waiting out a memory round trip per element (a transpose of [1993, 32] in 16
	 * ranges took 10 us a range, bench/NOTES.md). Indices in 32 bits: a task's elements are. */
	constexpr int U = 8;
	const E *src = reinterpret_cast<const E *>(in);
	E *dst = reinterpret_cast<E *>(out);
	const bool placed = p.istride[1][p.ndim - 1] != 0; /* the same for every thread */
	for (uint32_t i0 = t.k0 + threadIdx.x; i0 < t.k1; i0 += U * ARK_THREADS) {
		E v[U];
		int64_t to[U];
#pragma unroll
		for (int u = 0; u < U; u++) {
			const uint32_t i = i0 + u * ARK_THREADS;
			to[u] = -1;
			if (i >= t.k1)
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

__device__ __forceinline__ void ark_strided_tile(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
{
	if (ark_elem_bytes(p.dtype) == 4)
		ark_strided_elems<uint32_t>(p, t, e.arena + p.in[0], e.arena + p.out);
	else
		ark_strided_elems<uint16_t>(p, t, e.arena + p.in[0], e.arena + p.out);
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
