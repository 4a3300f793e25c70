// op_state.cuh: the in-place updates of state tensors: ASSIGN tiles (assign copies a value into a state, advance adds to an int32 one) and KV_APPEND tiles (rows written into a cache at a position read on the GPU).
#ifndef OP_STATE_CUH
#define OP_STATE_CUH

#include "ark_dtype.cuh"
#include "op_copy.cuh" /* ark_copy_bytes */

/* ASSIGN: elements k0:k1 of the state at out (= in[0]). assign: out[e] = in[1][e], the bytes as they are (any
 * dtype, int32 included); advance: out[e] += K (int32, wrapping). The state's readers of this
 * iteration ran before (the tables order them), and the next iteration reads the new value. */
__device__ __forceinline__ void ark_assign_tile(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
{
	const size_t es = ark_elem_bytes(p.dtype);
	if (p.kind == ARK_OP_ADVANCE) {
		int32_t *s = reinterpret_cast<int32_t *>(e.arena + p.out);
		for (uint64_t i = t.k0 + threadIdx.x; i < t.k1; i += ARK_THREADS)
			s[i] = (int32_t)((uint32_t)s[i] + (uint32_t)p.K);
		return;
	}
	ark_copy_bytes(e.arena + p.in[1], e.arena + p.out, t.k0 * es, t.k1 * es);
}

/* Bytes c0 .. c0 + w of rows m0:m1 of src to the same places of dst (rows `row` bytes apart), in
 * chunks of U (which divides row, c0, w and both addresses). All threads. */
template <typename U>
__device__ __forceinline__ void ark_copy_block(const char *src, char *dst, uint32_t m0, uint32_t m1, size_t row, size_t c0,
					       size_t w)
{
	const uint32_t n = (uint32_t)(w / sizeof(U)), cnt = (m1 - m0) * n;
	for (uint32_t i = threadIdx.x; i < cnt; i += ARK_THREADS) {
		const uint32_t r = i / n, c = i - r * n;
		const size_t o = (size_t)(m0 + r) * row + c0 + (size_t)c * sizeof(U);
		*reinterpret_cast<U *>(dst + o) = *reinterpret_cast<const U *>(src + o);
	}
}

/* KV_APPEND: rows m0:m1, columns n0:n1 of x (in[1], [T, N]) into rows pos + m0 .. pos + m1 - 1 of
 * the cache at out (= in[0], [M = L, N]), pos the int32 at in[2]. Positions 0 .. K - 1 are valid (K = L - T + 1);
 * another one writes nothing and records the fault (row 0, the position) for the loop, which aborts
 * the iteration naming the task and the position. */
__device__ __forceinline__ void ark_kv_append_tile(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
{
	const size_t es = ark_elem_bytes(p.dtype), row = (size_t)p.N * es;
	const int32_t pos = *reinterpret_cast<const int32_t *>(e.arena + p.in[2]); /* the same for every thread */
	if (pos < 0 || (int64_t)pos >= p.K) {
		ark_tile_fault(e, 1, pos);
		return;
	}
	const char *x = e.arena + p.in[1];
	char *cache = e.arena + p.out + (size_t)pos * row;
	if (t.n0 == 0 && (int64_t)t.n1 == p.N) { /* whole rows: one run of bytes */
		ark_copy_bytes(x, cache, (size_t)t.m0 * row, (size_t)t.m1 * row);
		return;
	}
	/* columns n0:n1 of rows m0:m1: every thread takes chunks of the whole block, of the widest size
	 * that the rows, the columns and both tensors' alignment allow (one call of the byte copy per
	 * row left 472 rows of 48 bytes to one thread group after another: 232 us) */
	const size_t c0 = t.n0 * es, w = (t.n1 - t.n0) * es;
	const uintptr_t al = (uintptr_t)x | (uintptr_t)cache | c0 | w | row;
	if ((al & 15) == 0)
		ark_copy_block<uint4>(x, cache, t.m0, t.m1, row, c0, w);
	else if ((al & 7) == 0)
		ark_copy_block<uint2>(x, cache, t.m0, t.m1, row, c0, w);
	else if ((al & 3) == 0)
		ark_copy_block<uint32_t>(x, cache, t.m0, t.m1, row, c0, w);
	else
		ark_copy_block<uint16_t>(x, cache, t.m0, t.m1, row, c0, w);
}

/* The templates of this file, as TMPL_CATALOG names them: bytes, not values, so one for every dtype. */
struct ark_tile_assign {
	static constexpr bool per_dtype = false;
	static __device__ __forceinline__ void run(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
	{
		ark_assign_tile(p, t, e);
	}
};
struct ark_tile_kv_append {
	static constexpr bool per_dtype = false;
	static __device__ __forceinline__ void run(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
	{
		ark_kv_append_tile(p, t, e);
	}
};

#endif
