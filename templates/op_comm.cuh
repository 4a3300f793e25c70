// op_comm.cuh: the local halves of the collectives: SUM (all_reduce: the inputs of every GPU, own and received, in GPU order) and GATHER (all_gather: own input and the slots received, interleaved into the output).
#ifndef OP_COMM_CUH
#define OP_COMM_CUH

#include "ark_dtype.cuh"
#include "ark_memorder.cuh"

#include "ark_smem.h" /* ARK_SMEM_* */

/* SUM: out[e] = the sum over GPUs j = 0 .. K of term j [e], for e in k0:k1, where term splits (this
 * GPU) is in[0] and the others are the K slots received, in GPU order, in[2] bytes apart from in[1].
 * Sums in fp32 in GPU order (so every GPU rounds the same sum the same way), applies the fused
 * activation p.act (ARK_ACT_NONE: none) and rounds once. 16-byte
 * vectors, ARK_SUM_U of them in flight per thread, when every base and the range allow it. */
#define ARK_SUM_U 4

/* A sum's operands, read from the op params once: the compiler cannot keep fields of p in registers
 * across the stores to out (they might alias), and reloading them per element costs more than the
 * sum itself. */
struct ark_sum_args {
	const char *own, *slots; /* this GPU's input; the first slot */
	size_t stride;           /* bytes from one slot to the next */
	int me, n, act;          /* own position in the GPU order; GPUs; fused activation */
};

static __device__ __forceinline__ ark_sum_args ark_sum_args_of(const ark_opp &p, const char *arena)
{
	return {arena + p.in[0], arena + p.in[1], (size_t)p.in[2], (int)p.splits, (int)p.K + 1, (int)p.act};
}

/* Term j of the sum (GPU j's input): own, or slot j (j < me) or j - 1 (j > me). */
static __device__ __forceinline__ const char *ark_sum_term(const ark_sum_args &s, int j)
{
	return j == s.me ? s.own : s.slots + (size_t)(j - (j > s.me)) * s.stride;
}

template <typename T> __device__ void ark_sum_tile(const ark_opp &p, const ark_task &t, char *arena)
{
	constexpr int V = 16 / sizeof(T); /* elements per vector */
	const ark_sum_args s = ark_sum_args_of(p, arena);
	const int n = s.n;
	T *out = reinterpret_cast<T *>(arena + p.out);
	const uintptr_t bases = (uintptr_t)s.own | (uintptr_t)s.slots | (uintptr_t)s.stride | (uintptr_t)out;
	const size_t e0 = t.k0, e1 = t.k1;
	size_t v0 = e1, v1 = e1; /* the vector part [v0, v1) */
	if ((bases & 15) == 0) {
		v0 = min(e1, (e0 + V - 1) / V * V);
		v1 = v0 + (e1 - v0) / V * V;
	}
	const size_t nh = v0 - e0, nt = e1 - v1;
	for (size_t i = threadIdx.x; i < nh + nt; i += ARK_THREADS) {
		const size_t e = i < nh ? e0 + i : v1 + (i - nh);
		float acc = ark_to_f(reinterpret_cast<const T *>(ark_sum_term(s, 0))[e]);
		for (int j = 1; j < n; j++)
			acc += ark_to_f(reinterpret_cast<const T *>(ark_sum_term(s, j))[e]);
		out[e] = ark_from_f<T>(ark_act(acc, s.act));
	}
	const size_t nv = (v1 - v0) / V; /* vectors */
	for (size_t b = threadIdx.x; b < nv; b += (size_t)ARK_SUM_U * ARK_THREADS) {
		float acc[ARK_SUM_U][V];
		for (int j = 0; j < n; j++) {
			const uint4 *src = reinterpret_cast<const uint4 *>(reinterpret_cast<const T *>(ark_sum_term(s, j)) + v0);
			uint4 q[ARK_SUM_U];
#pragma unroll
			for (int u = 0; u < ARK_SUM_U; u++) /* every load first: ARK_SUM_U in flight */
				q[u] = b + (size_t)u * ARK_THREADS < nv ? src[b + (size_t)u * ARK_THREADS]
									: make_uint4(0, 0, 0, 0);
#pragma unroll
			for (int u = 0; u < ARK_SUM_U; u++) {
				T x[V];
				memcpy(x, &q[u], sizeof x);
#pragma unroll
				for (int k = 0; k < V; k++)
					acc[u][k] = j ? acc[u][k] + ark_to_f(x[k]) : ark_to_f(x[k]);
			}
		}
		uint4 *dst = reinterpret_cast<uint4 *>(out + v0);
#pragma unroll
		for (int u = 0; u < ARK_SUM_U; u++)
			if (b + (size_t)u * ARK_THREADS < nv) {
				T x[V];
#pragma unroll
				for (int k = 0; k < V; k++)
					x[k] = ark_from_f<T>(ark_act(acc[u][k], s.act));
				uint4 q;
				memcpy(&q, x, sizeof q);
				dst[b + (size_t)u * ARK_THREADS] = q;
			}
	}
}

/* ---- packets (LL) -----------------------------------------------------------------------------
 * A small transfer can carry its own flags: word w (4 bytes) of the message goes to the receiver as
 * one 8-byte store {word, run} (run: the counters' iteration, never 0), which is single-copy atomic,
 * so the receiver polls the packets themselves: no fence, no counter, no separate flag. Packet w of
 * a slot is at byte 8 w: the packets of element e start at byte 2 e es. Every piece starts on a word
 * (arkgen only picks packets when it can); the last word of a 16-bit message may hold one element.
 * A packet carries its own data; for what happened before it (a consumer of the sum may rely on a
 * path through the sender), each sending thread fences before its stores and each summing thread
 * right after its polls, before its stores (release and acquire patterns of the PTX memory model,
 * at system scope). Neither fence waits for remote stores, which is what made the fence of a p2p
 * send expensive. */

/* Word w of the message at src whose last byte is b1 - 1 (a partial last word is read by halves). */
static __device__ __forceinline__ uint32_t ark_ll_word(const char *src, size_t w, size_t b1)
{
	if (4 * w + 4 <= b1)
		return *reinterpret_cast<const uint32_t *>(src + 4 * w);
	return *reinterpret_cast<const uint16_t *>(src + 4 * w);
}

/* Words per thread handled together: their loads are all issued before the first is used (the
 * compiler cannot hoist a load above a store that might alias it). */
#define ARK_LL_U 8

/* SEND_LL: elements k0:k1 of in[0] as packets into peers[peer] + out. */
__device__ __noinline__ void ark_send_ll_tile(const ark_opp &p, const ark_task &t, char *arena, char *const *peers,
					      uint32_t run)
{
	const size_t es = p.dtype == ARK_FP32 ? 4 : 2, b1 = t.k1 * es, w1 = (b1 + 3) / 4;
	const char *src = arena + p.in[0];
	unsigned long long *dst = reinterpret_cast<unsigned long long *>(peers[p.peer] + p.out);
	ark_fence_acq_rel_sys();
	for (size_t w0 = t.k0 * es / 4 + threadIdx.x; w0 < w1; w0 += (size_t)ARK_LL_U * ARK_THREADS) {
		uint32_t v[ARK_LL_U];
#pragma unroll
		for (int u = 0; u < ARK_LL_U; u++)
			v[u] = w0 + (size_t)u * ARK_THREADS < w1 ? ark_ll_word(src, w0 + (size_t)u * ARK_THREADS, b1) : 0;
#pragma unroll
		for (int u = 0; u < ARK_LL_U; u++)
			if (w0 + (size_t)u * ARK_THREADS < w1)
				ark_st_relaxed_sys_u64(dst + w0 + (size_t)u * ARK_THREADS,
						       (unsigned long long)v[u] | (unsigned long long)run << 32);
	}
}

/* SUM_LL: SUM (above) whose K slots are packet buffers (slot s at in[1] + s * in[2]). Each thread
 * waits for the packets of its words only. On abort (*abort_flag set while waiting) it returns; the
 * loop's next wait reports it. */
template <typename T>
__device__ void ark_sum_ll_tile(const ark_opp &p, const ark_task &t, char *arena, uint32_t run,
				const volatile uint32_t *abort_flag)
{
	constexpr int E = 4 / sizeof(T); /* elements per word */
	const ark_sum_args s = ark_sum_args_of(p, arena);
	const size_t b1 = t.k1 * sizeof(T), w1 = (b1 + 3) / 4;
	const unsigned long long ready = (unsigned long long)run << 32; /* what a missing word reads as */
	T *out = reinterpret_cast<T *>(arena + p.out);
	for (size_t w0 = t.k0 * sizeof(T) / 4 + threadIdx.x; w0 < w1; w0 += (size_t)ARK_LL_U * ARK_THREADS) {
		float acc[ARK_LL_U][E];
		for (int j = 0; j < s.n; j++) {
			uint32_t word[ARK_LL_U];
			if (j == s.me) {
#pragma unroll
				for (int u = 0; u < ARK_LL_U; u++) {
					const size_t w = w0 + (size_t)u * ARK_THREADS;
					word[u] = w < w1 ? ark_ll_word(s.own, w, b1) : 0;
				}
			} else { /* every packet's first look issued at once, then the late ones polled */
				const unsigned long long *q = reinterpret_cast<const unsigned long long *>(ark_sum_term(s, j));
				unsigned long long v[ARK_LL_U];
#pragma unroll
				for (int u = 0; u < ARK_LL_U; u++) {
					const size_t w = w0 + (size_t)u * ARK_THREADS;
					v[u] = w < w1 ? ark_ld_relaxed_sys_u64(q + w) : ready;
				}
#pragma unroll
				for (int u = 0; u < ARK_LL_U; u++) {
					for (uint32_t spins = 1; (uint32_t)(v[u] >> 32) != run; spins++) {
						if (spins % 4096 == 0 && *abort_flag)
							return;
						v[u] = ark_ld_relaxed_sys_u64(q + w0 + (size_t)u * ARK_THREADS);
					}
					word[u] = (uint32_t)v[u];
				}
			}
			if (j != s.me)
				ark_fence_acq_rel_sys(); /* after the polls, before anything that depends on them */
#pragma unroll
			for (int u = 0; u < ARK_LL_U; u++) {
				T x[E];
				memcpy(x, &word[u], sizeof x);
#pragma unroll
				for (int k = 0; k < E; k++)
					acc[u][k] = j ? acc[u][k] + ark_to_f(x[k]) : ark_to_f(x[k]);
			}
		}
#pragma unroll
		for (int u = 0; u < ARK_LL_U; u++) {
			const size_t w = w0 + (size_t)u * ARK_THREADS;
#pragma unroll
			for (int k = 0; k < E; k++)
				if ((w * E + k) * sizeof(T) < b1)
					out[w * E + k] = ark_from_f<T>(ark_act(acc[u][k], s.act));
		}
	}
}

/* GATHER: elements k0:k1 of out, viewed as [outer, K, N] (K = GPUs, N = elements of one input after
 * the gathered axis' outer dimensions): out[o][j][w] = (j == splits ? in[0] : slot(j))[o][w], where
 * the slots (one per other GPU, in GPU order, in[2] bytes apart) start at in[1]. Units of 16 bytes
 * when every row segment and base allows it, else of one element. */
__device__ __noinline__ void ark_gather_tile(const ark_opp &p, const ark_task &t, char *arena)
{
	const size_t es = p.dtype == ARK_FP32 ? 4 : 2;
	const size_t seg = (size_t)p.N * es, K = (size_t)p.K, own = p.splits, stride = p.in[2];
	const char *in0 = arena + p.in[0], *in1 = arena + p.in[1];
	char *const out = arena + p.out; /* the fields of p read once: stores to out might alias them */
	const uintptr_t bases = (uintptr_t)in0 | (uintptr_t)in1 | (uintptr_t)stride | (uintptr_t)out;
	const size_t u = (seg % 16 == 0 && (bases & 15) == 0 && (t.k0 * es) % 16 == 0 && (t.k1 * es) % 16 == 0)
				 ? 16 : es;
	const size_t b0 = t.k0 * es, b1 = t.k1 * es;
	for (size_t b = b0 + threadIdx.x * u; b < b1; b += (size_t)ARK_THREADS * u) {
		const size_t o = b / (K * seg), r = b % (K * seg), j = r / seg, w = r % seg;
		const char *src = j == own ? in0 : in1 + (j - (j > own)) * stride;
		src += o * seg + w;
		char *dst = out + b;
		if (u == 16)
			*reinterpret_cast<uint4 *>(dst) = *reinterpret_cast<const uint4 *>(src);
		else if (u == 4)
			*reinterpret_cast<uint32_t *>(dst) = *reinterpret_cast<const uint32_t *>(src);
		else
			*reinterpret_cast<uint16_t *>(dst) = *reinterpret_cast<const uint16_t *>(src);
	}
}

/* The templates of this file, as TMPL_CATALOG names them. */
struct ark_tile_sum {
	static constexpr bool per_dtype = true;
	template <typename T>
	static __device__ __forceinline__ void run(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
	{
		ark_sum_tile<T>(p, t, e.arena);
	}
};
struct ark_tile_gather {
	static constexpr bool per_dtype = false;
	static __device__ __forceinline__ void run(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
	{
		ark_gather_tile(p, t, e.arena);
	}
};
struct ark_tile_send_ll {
	static constexpr bool per_dtype = false;
	static __device__ __forceinline__ void run(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
	{
		ark_send_ll_tile(p, t, e.arena, e.peers, e.run);
	}
};
struct ark_tile_sum_ll {
	static constexpr bool per_dtype = true;
	template <typename T>
	static __device__ __forceinline__ void run(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
	{
		ark_sum_ll_tile<T>(p, t, e.arena, e.run, e.abort_flag);
	}
};

#endif
