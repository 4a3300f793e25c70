// ring_probe.cu: how fast one SM takes in weights held in L2, read the ways the streaming matmul tile
// of b [K, N] reads them (templates/op_matmul.cuh, ark_mm_stream_kn): each CTA reads a 64 KB block of an
// 8 MB set (so L2 holds it) REPS times, as plain 16-byte loads (8 in flight a thread), through a ring
// of 16 cp.async slots a thread waited for a step at a time, and through that ring with 8 rows of FMA a
// thread a step (the tile's steps for 8 rows); blocks contiguous or as rows of 64-256 bytes of a
// matrix 8 KB wide. Prints ns a block (the median CTA's), GB/s an SM and over the CTAs.
//
//   build/bench/ring_probe   (make bench-probe)
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <stdio.h>
#include <stdint.h>
#include <algorithm>
#include <vector>
#include "bench_cuda.h"
__device__ __forceinline__ uint64_t gt()
{
	uint64_t t;
	asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
	return t;
}
__device__ __forceinline__ void cpa(void *d, const void *s)
{
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"((uint32_t)__cvta_generic_to_shared(d)), "l"(s)
		     : "memory");
}
__device__ __forceinline__ void cpa_ef(void *d, const void *s, uint64_t p)
{
	asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, 16, %2;\n" ::"r"(
			 (uint32_t)__cvta_generic_to_shared(d)),
		     "l"(s), "l"(p)
		     : "memory");
}
__device__ __forceinline__ void commit()
{
	asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N> __device__ __forceinline__ void waitg()
{
	asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ uint4 ldcg(const void *p)
{
	uint4 r;
	asm volatile("ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
	return r;
}

enum { REPS = 64, BLK = 65536, NBLK = 128, T = 256, S = 16 };
// mode: 0 plain contiguous, 1 plain kn (64-B rows at stride rowb), 2 cp.async ring kn, 3 ring kn evict_first,
// 4 ring kn + 64 FMAs per step, 5 ring contiguous
__global__ void __launch_bounds__(T, 1)
    k(const char *buf, int mode, int rowb, int colb, unsigned long long *out, float *sink)
{
	extern __shared__ __align__(16) char smem[];
	uint4 *ring = (uint4 *)smem;
	const int tid = threadIdx.x;
	float acc[64];
	for (int i = 0; i < 64; i++)
		acc[i] = 0.f;
	uint64_t pol;
	asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
	float s = 0;
	uint64_t t0 = 0;
	for (int r = 0; r < REPS + 4; r++) {
		if (r == 4) {
			__syncthreads();
			t0 = gt();
		}
		const int blk = (blockIdx.x + r * 37) % NBLK;
		// block = region of the matrix: columns [cb*colb, +colb) bytes, all 'rows' rows where rows*colb = BLK
		const int ncb = rowb / colb, rows = BLK / colb;
		const char *base = buf + (size_t)(blk / ncb) * rows * rowb + (size_t)(blk % ncb) * colb;
		const int nv = colb / 16, KL = T / nv, kl = tid / nv, cv = tid % nv;
		const int nsteps = rows / KL;
		if (mode == 0 || mode == 1) {
			for (int i = 0; i < nsteps; i += 8) {
				uint4 q[8];
#pragma unroll
				for (int u = 0; u < 8; u++) {
					const char *p = mode == 0
							    ? buf + (size_t)blk * BLK + ((size_t)(i + u) * T + tid) * 16
							    : base + (size_t)((i + u) * KL + kl) * rowb + cv * 16;
					q[u] = ldcg(p);
				}
#pragma unroll
				for (int u = 0; u < 8; u++)
					s += __uint_as_float(q[u].x ^ q[u].w);
			}
		} else {
			auto src = [&](int i) {
				return mode == 5 ? buf + (size_t)blk * BLK + ((size_t)i * T + tid) * 16
						 : base + (size_t)(i * KL + kl) * rowb + cv * 16;
			};
			for (int i = 0; i < S - 1; i++) {
				if (i < nsteps) {
					if (mode == 3)
						cpa_ef(&ring[i * T + tid], src(i), pol);
					else
						cpa(&ring[i * T + tid], src(i));
				}
				commit();
			}
			for (int i = 0; i < nsteps; i++) {
				waitg<S - 2>();
				const int j = i + S - 1;
				if (j < nsteps) {
					if (mode == 3)
						cpa_ef(&ring[(j % S) * T + tid], src(j), pol);
					else
						cpa(&ring[(j % S) * T + tid], src(j));
				}
				commit();
				uint4 q = ring[(i % S) * T + tid];
				if (mode == 4) {
					float b[8];
					const __nv_bfloat162 *h = (const __nv_bfloat162 *)&q;
					for (int j2 = 0; j2 < 4; j2++) {
						float2 f = __bfloat1622float2(h[j2]);
						b[2 * j2] = f.x;
						b[2 * j2 + 1] = f.y;
					}
					float a[8];
					const float4 *ap =
					    (const float4 *)(smem + S * T * 16 + ((i * KL + kl) % 1024) * 32);
					float4 a0 = ap[0], a1 = ap[1];
					a[0] = a0.x;
					a[1] = a0.y;
					a[2] = a0.z;
					a[3] = a0.w;
					a[4] = a1.x;
					a[5] = a1.y;
					a[6] = a1.z;
					a[7] = a1.w;
#pragma unroll
					for (int m = 0; m < 8; m++)
#pragma unroll
						for (int j2 = 0; j2 < 8; j2++)
							acc[m * 8 + j2] = fmaf(a[m], b[j2], acc[m * 8 + j2]);
				} else
					s += __uint_as_float(q.x ^ q.w);
			}
			waitg<0>();
		}
		__syncthreads();
	}
	const uint64_t t1 = gt();
	for (int i = 0; i < 64; i++)
		s += acc[i];
	if (s == 1.2345f)
		sink[0] = s;
	if (tid == 0)
		out[blockIdx.x] = t1 - t0;
}
/* a's staging: each CTA reads 16 KB (4 loads of 16 bytes a thread, all in flight) REPS times, the same
 * 16 KB for every CTA (same != 0: as every task of a matmul reads the same rows of a) or a block of its
 * own, then stores them to shared memory, as the streaming tile stages a's first chunk. */
__global__ void __launch_bounds__(T, 1) a_kernel(const char *buf, int same, unsigned long long *out)
{
	extern __shared__ __align__(16) char smem[];
	uint64_t t0 = 0;
	for (int r = 0; r < REPS + 4; r++) {
		if (r == 4) {
			__syncthreads();
			t0 = gt();
		}
		const int blk = same ? r % 8 : (blockIdx.x + r * 37) % NBLK;
		const uint4 *p = (const uint4 *)(buf + (size_t)blk * BLK);
		uint4 q[4];
#pragma unroll
		for (int u = 0; u < 4; u++)
			q[u] = ldcg(p + u * T + threadIdx.x);
#pragma unroll
		for (int u = 0; u < 4; u++)
			((uint4 *)smem)[u * T + threadIdx.x] = q[u];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		out[blockIdx.x] = gt() - t0;
}

/* ns a rep of the median CTA (its stamps in d_out), the median of 5 launches */
static unsigned long long *d_out;
template <typename F> static double median_ns(int ctas, F launch)
{
	std::vector<double> med;
	for (int rr = 0; rr < 5; rr++) {
		launch();
		CK(cudaGetLastError());
		CK(cudaDeviceSynchronize());
		std::vector<unsigned long long> o(ctas);
		CK(cudaMemcpy(o.data(), d_out, 8 * ctas, cudaMemcpyDeviceToHost));
		std::sort(o.begin(), o.end());
		med.push_back(o[ctas / 2] / (double)REPS);
	}
	std::sort(med.begin(), med.end());
	return med[2];
}

int main()
{
	char *buf;
	float *sink;
	const size_t bytes = (size_t)BLK * NBLK;
	CK(cudaMalloc(&buf, bytes));
	CK(cudaMalloc(&sink, 4));
	CK(cudaMalloc(&d_out, 8 * 1024));
	CK(cudaMemset(buf, 0x3c, bytes));
	const int smem = S * T * 16 + 32 * 1024 + 1024;
	CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
	cudaDeviceProp pr;
	CK(cudaGetDeviceProperties(&pr, 0));
	printf("# %s, %d SMs; 64 KB a CTA a rep, %d reps, 8 MB set (L2)\n", pr.name, pr.multiProcessorCount, REPS);
	const char *names[] = {"plain contiguous",	"plain rows",	      "ring rows",
			       "ring rows evict_first", "ring rows + 64 FMA", "ring contiguous"};
	for (int ctas : {128, 132, 32})
		for (int colb : {64, 128, 256})
			for (int mode = 0; mode < 6; mode++) {
				if ((mode == 0 || mode == 5) && colb != 64)
					continue;
				const int rowb = 8192;
				const double ns =
					median_ns(ctas, [&] { k<<<ctas, T, smem>>>(buf, mode, rowb, colb, d_out, sink); });
				printf("%4d CTAs  %-24s row %3d B: %7.0f ns a 64 KB block, %5.1f GB/s an SM, %6.0f "
				       "GB/s total\n",
				       ctas, names[mode], colb, ns, 65536.0 / ns, 65536.0 / ns * ctas);
			}
	printf("# a's staging: 16 KB a CTA a rep (4 x 16-byte loads a thread), %d reps\n", REPS);
	for (int ctas : {128, 32})
		for (int same = 0; same < 2; same++) {
			const double ns = median_ns(ctas, [&] { a_kernel<<<ctas, T, 4 * T * 16>>>(buf, same, d_out); });
			printf("%4d CTAs  16 KB %-22s: %7.0f ns a rep\n", ctas, same ? "the same for every CTA" : "a block of its own",
			       ns);
		}
	return 0;
}
