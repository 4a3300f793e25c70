/* bench_async.cuh: what the probes of Hopper's asynchronous copies share: 16-byte cp.async, mbarriers
 * (init, expected bytes, wait for a phase, arrive), one-dimensional bulk copies, two-dimensional
 * bulk tensor copies, and on the host a bf16 tensor map of a row-major matrix in boxes of 64 columns
 * with the 128-byte swizzle that the warpgroup MMA reads (the driver's encoder reached through the
 * runtime: no -lcuda). */
#ifndef BENCH_ASYNC_CUH
#define BENCH_ASYNC_CUH

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

__device__ __forceinline__ void cpa16(uint32_t d, const void *s)
{
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(s) : "memory");
}
__device__ __forceinline__ void mb_init(uint32_t b, int count)
{
	asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(b), "r"(count) : "memory");
}
__device__ __forceinline__ void mb_expect(uint32_t b, uint32_t bytes)
{
	asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(b), "r"(bytes) : "memory");
}
/* until the phase of this parity has completed (the one before the first, parity 1, has) */
__device__ __forceinline__ void mb_wait(uint32_t b, uint32_t parity)
{
	asm volatile("{\n.reg .pred p;\nW: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@!p bra W;\n}\n" ::"r"(b),
		     "r"(parity)
		     : "memory");
}
__device__ __forceinline__ void mb_arrive(uint32_t b)
{
	asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(b) : "memory");
}
__device__ __forceinline__ void bulk(uint32_t d, const void *s, uint32_t bytes, uint32_t b)
{
	asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(d),
		     "l"(s), "r"(bytes), "r"(b)
		     : "memory");
}
/* the box at column x, row y of the tensor map into shared memory at dst, completing on mbarrier b */
__device__ __forceinline__ void tma2d(uint32_t dst, const CUtensorMap *map, int x, int y, uint32_t b)
{
	asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
		     "l"(map), "r"(x), "r"(y), "r"(b)
		     : "memory");
}

/* A bf16 matrix [rows][cols] (rows cols * 2 bytes apart, a multiple of 16) in boxes of 64 columns by
 * box_rows rows, swizzled by 128 bytes; zeros past its edges. Exits with FAIL on an error. */
static inline CUtensorMap bench_tmap_bf16(const void *base, uint64_t rows, uint64_t cols, uint32_t box_rows)
{
	static PFN_cuTensorMapEncodeTiled_v12000 enc = nullptr;
	if (!enc) {
		cudaDriverEntryPointQueryResult q;
		if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", (void **)&enc, 12000, cudaEnableDefault, &q) !=
			    cudaSuccess ||
		    !enc || q != cudaDriverEntryPointSuccess) {
			fprintf(stderr, "FAIL: no cuTensorMapEncodeTiled\n");
			exit(1);
		}
	}
	CUtensorMap map;
	const cuuint64_t dims[2] = {cols, rows}, strides[1] = {cols * 2};
	const cuuint32_t box[2] = {64, box_rows}, es[2] = {1, 1};
	const CUresult r = enc(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, (void *)base, dims, strides, box, es,
			       CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
			       CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
	if (r != CUDA_SUCCESS) {
		fprintf(stderr, "FAIL: cuTensorMapEncodeTiled: %d (a row must be a multiple of 16 bytes)\n", (int)r);
		exit(1);
	}
	return map;
}

#endif
