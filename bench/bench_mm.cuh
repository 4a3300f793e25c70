/* bench_mm.cuh: a matmul's params for the tile probes (mm_probe, wgmma_probe), filled as arkgen
 * fills them, and the operands the tiles build from them on the GPU. Included after the templates
 * (ark_mm_of, templates/op_matmul.cuh). */
#ifndef BENCH_MM_CUH
#define BENCH_MM_CUH

#include <string.h>

/* out [M, N] = a [M, K] . b ([K, N], or [N, K] with tb), every row packed, no bias or activation:
 * the params of such a matmul whose arena starts at address 0, so that its offsets are the
 * operands' device addresses. */
static inline ark_opp bench_mm_opp(const void *a, const void *b, void *out, int M, int N, int K, bool tb)
{
	ark_opp p;
	memset(&p, 0, sizeof p);
	p.kind = ARK_OP_MATMUL;
	p.flags = tb ? ARK_OPP_TRANSPOSE_B : 0;
	p.act = ARK_ACT_NONE;
	p.splits = 1;
	p.in[0] = (uint64_t)(uintptr_t)a, p.in[1] = (uint64_t)(uintptr_t)b, p.out = (uint64_t)(uintptr_t)out;
	p.M = M, p.N = N, p.K = K;
	return p;
}

/* The tile's operands from params passed by value to the kernel: copied to shared memory first,
 * where the loop kernel keeps them. All threads. */
__device__ __forceinline__ ark_mm bench_mm_of(const ark_opp &p)
{
	__shared__ ark_opp s;
	if (threadIdx.x == 0)
		s = p;
	__syncthreads();
	return ark_mm_of({&s, nullptr, 0, false});
}

#endif
