// op_copy.cuh: COPY tiles: elements k0:k1 of in[0] (this GPU's arena or a peer's) to out, 16-byte vectors when aligned.
#ifndef OP_COPY_CUH
#define OP_COPY_CUH

#include "ark_dtype.cuh"

#include "ark_smem.h" /* ARK_SMEM_* */

/* n units of U from s to d (both U-aligned), B loads in flight a thread: 4 of 16 bytes, 8 of the
 * narrower units (rows of 2-byte units, an embedding's rows of odd length, are a dozen units a thread:
 * four in flight made that four round trips to memory; eight of 16 bytes made the function save and
 * restore 72 registers a call instead of 56). */
template <typename U> __device__ __forceinline__ void ark_copy_units(const U *s, U *d, size_t n)
{
	constexpr int B = sizeof(U) >= 16 ? 4 : 8;
	size_t i = threadIdx.x;
	for (; i + (B - 1) * ARK_THREADS < n; i += B * ARK_THREADS) {
		U q[B];
#pragma unroll
		for (int u = 0; u < B; u++)
			q[u] = s[i + u * ARK_THREADS];
#pragma unroll
		for (int u = 0; u < B; u++)
			d[i + u * ARK_THREADS] = q[u];
	}
	/* the rest (fewer than B a thread) loaded before any store */
	U q[B];
	const int r = i < n ? (int)((n - i + ARK_THREADS - 1) / ARK_THREADS) : 0;
#pragma unroll
	for (int u = 0; u < B; u++)
		if (u < r)
			q[u] = s[i + u * ARK_THREADS];
#pragma unroll
	for (int u = 0; u < B; u++)
		if (u < r)
			d[i + u * ARK_THREADS] = q[u];
}

/* Copies bytes [b0, b1) of src to the same byte offsets of dst, in the widest unit (16, 8, 4, 2 or 1
 * bytes) that src and dst share the alignment of: rows of an odd length (an embedding's rows of 3877
 * fp32 land 4 bytes off their table's) go as words, not bytes, whose one load at a time each
 * thread waited on took ~45 us for 15 KB. */
__device__ __noinline__ void ark_copy_bytes(const char *src, char *dst, size_t b0, size_t b1)
{
	const uintptr_t mis = (((uintptr_t)src ^ (uintptr_t)dst) & 15) | 16;
	const size_t w = mis & (~mis + 1); /* the unit: the lowest bit where the addresses differ */
	const uintptr_t s0 = (uintptr_t)src + b0;
	const size_t vb = min(b1, b0 + ((w - (s0 & (w - 1))) & (w - 1))), ve = vb + (b1 - vb) / w * w;
	/* head and tail: elements of at least 2 bytes never straddle, but bytes keep this dtype-free */
	const size_t nh = vb - b0, nt = b1 - ve;
	for (size_t i = threadIdx.x; i < nh + nt; i += ARK_THREADS) {
		const size_t o = i < nh ? b0 + i : ve + (i - nh);
		dst[o] = src[o];
	}
	const char *s = src + vb; /* w-aligned, and so is dst + vb */
	char *d = dst + vb;
	const size_t n = (ve - vb) / w;
	switch (w) {
	case 16: ark_copy_units(reinterpret_cast<const uint4 *>(s), reinterpret_cast<uint4 *>(d), n); break;
	case 8: ark_copy_units(reinterpret_cast<const uint2 *>(s), reinterpret_cast<uint2 *>(d), n); break;
	case 4: ark_copy_units(reinterpret_cast<const uint32_t *>(s), reinterpret_cast<uint32_t *>(d), n); break;
	case 2: ark_copy_units(reinterpret_cast<const uint16_t *>(s), reinterpret_cast<uint16_t *>(d), n); break;
	default: ark_copy_units(reinterpret_cast<const uint8_t *>(s), reinterpret_cast<uint8_t *>(d), n); break;
	}
}

/* COPY: out[e] = in[0][e] for e in k0:k1; in[0] in peers[p.peer] when p.peer >= 0, or with
 * ARK_OPP_PUSH out in peers[p.peer] (a p2p send). A p2p send's stores are published by the signal
 * that follows the tile: the CTA barrier orders every thread's stores before thread 0's system-scope
 * fence and release on the peer's counter, and that fence is cumulative (PTX memory model), so the
 * threads do not each fence. */
__device__ __forceinline__ void ark_copy_tile(const ark_opp &p, const ark_task &t, char *arena, char *const *peers)
{
	const size_t es = p.dtype == ARK_FP32 ? 4 : 2;
	if (p.flags & ARK_OPP_PUSH) {
		ark_copy_bytes(arena + p.in[0], peers[p.peer] + p.out, t.k0 * es, t.k1 * es);
		return;
	}
	const char *src = (p.peer >= 0 ? peers[p.peer] : arena) + p.in[0];
	ark_copy_bytes(src, arena + p.out, t.k0 * es, t.k1 * es);
}

/* The templates of this file, as TMPL_CATALOG names them. */
struct ark_tile_copy {
	static constexpr bool per_dtype = false;
	static __device__ __forceinline__ void run(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
	{
		ark_copy_tile(p, t, e.arena, e.peers);
	}
};

#endif
