// op_comm.cuh: the local halves of the collectives: SUM (all_reduce: own part plus the slots received) and GATHER (all_gather: own input and the slots received, interleaved into the output).
#ifndef OP_COMM_CUH
#define OP_COMM_CUH

#include "ark_dtype.cuh"

/* SUM: out[e] = in[0][e] + sum over s < K of slot s [e], for e in k0:k1; slot s starts at in[1] +
 * s * in[2] bytes. Sums in fp32 in slot order (the same on every GPU), rounded once. */
template <typename T> __device__ void ark_sum_tile(const ark_opp &p, const ark_task &t, char *arena)
{
	const T *own = reinterpret_cast<const T *>(arena + p.in[0]);
	const char *slots = arena + p.in[1];
	T *out = reinterpret_cast<T *>(arena + p.out);
	const int K = (int)p.K;
	for (size_t e = t.k0 + threadIdx.x; e < t.k1; e += ARK_THREADS) {
		float acc = ark_to_f(own[e]);
		for (int s = 0; s < K; s++)
			acc += ark_to_f(reinterpret_cast<const T *>(slots + (size_t)s * p.in[2])[e]);
		out[e] = ark_from_f<T>(acc);
	}
}

/* GATHER: elements k0:k1 of out, viewed as [outer, K, N] (K = GPUs, N = elements of one input after
 * the gathered axis' outer dimensions): out[o][j][w] = (j == splits ? in[0] : slot(j))[o][w], where
 * the slots (one per other GPU, in GPU order, in[2] bytes apart) start at in[1]. Units of 16 bytes
 * when every row segment and base allows it, else of one element. */
__device__ __noinline__ void ark_gather_tile(const ark_opp &p, const ark_task &t, char *arena)
{
	const size_t es = p.dtype == ARK_FP32 ? 4 : 2;
	const size_t seg = (size_t)p.N * es, K = (size_t)p.K, own = p.splits;
	const uintptr_t bases = (uintptr_t)(arena + p.in[0]) | (uintptr_t)(arena + p.in[1]) | (uintptr_t)p.in[2] |
				(uintptr_t)(arena + p.out);
	const size_t u = (seg % 16 == 0 && (bases & 15) == 0 && (t.k0 * es) % 16 == 0 && (t.k1 * es) % 16 == 0)
				 ? 16 : es;
	const size_t b0 = t.k0 * es, b1 = t.k1 * es;
	for (size_t b = b0 + threadIdx.x * u; b < b1; b += (size_t)ARK_THREADS * u) {
		const size_t o = b / (K * seg), r = b % (K * seg), j = r / seg, w = r % seg;
		const char *src = j == own ? arena + p.in[0] : arena + p.in[1] + (j - (j > own)) * p.in[2];
		src += o * seg + w;
		char *dst = arena + p.out + b;
		if (u == 16)
			*reinterpret_cast<uint4 *>(dst) = *reinterpret_cast<const uint4 *>(src);
		else if (u == 4)
			*reinterpret_cast<uint32_t *>(dst) = *reinterpret_cast<const uint32_t *>(src);
		else
			*reinterpret_cast<uint16_t *>(dst) = *reinterpret_cast<const uint16_t *>(src);
	}
}

#endif
