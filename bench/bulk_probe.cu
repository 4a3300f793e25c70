// bulk_probe.cu: how fast one CTA an SM streams weights from DRAM (cold, as a decode step reads them),
// by the streaming tile's way (a ring of 16-byte cp.async slots a thread, ARK_MM_RING_BYTES of them
// with a quarter free, each thread waiting for its own copies) against one-dimensional bulk copies
// (cp.async.bulk: one thread issues a piece of PIECE bytes a ring slot, completing on the slot's
// mbarrier, every thread waiting on it) with rings of 64 to 192 KB. Each CTA reads one contiguous
// range (a task's rows of b [N, K] over all of K are one range), every thread adding what it reads
// (a stand-in for the tile's arithmetic); each launch reads a part of a 2 GB buffer no launch before
// it read, so that nothing is in L2. Prints us a launch (median), TB/s over the GPU and GB/s an SM.
//
//   build/bench/bulk_probe   (make bench-probe)
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>

#include <vector>

#include "bench_async.cuh"
#include "bench_cuda.h"

enum { T = 256 };

__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void waitg() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

/* the cp.async ring: S slots of 16 bytes a thread (S - 1 in flight, 4 KB a slot over the CTA); each CTA
 * reads per bytes from base + blockIdx.x * per */
template <int S> __global__ void __launch_bounds__(T, 1) ring16(const char *base, int64_t per, float *sink)
{
	extern __shared__ __align__(128) char smem[];
	const uint32_t s0 = (uint32_t)__cvta_generic_to_shared(smem);
	const char *src = base + (int64_t)blockIdx.x * per;
	const int steps = (int)(per / (16 * T));
	uint32_t acc = 0;
	for (int s = 0; s < S - 1; s++) {
		if (s < steps)
			cpa16(s0 + (s * T + threadIdx.x) * 16, src + ((int64_t)s * T + threadIdx.x) * 16);
		commit();
	}
	for (int i = 0; i < steps; i++) {
		waitg<S - 2>();
		const int j = i + S - 1;
		if (j < steps)
			cpa16(s0 + ((j % S) * T + threadIdx.x) * 16, src + ((int64_t)j * T + threadIdx.x) * 16);
		commit();
		const uint4 v = *reinterpret_cast<const uint4 *>(smem + ((i % S) * T + threadIdx.x) * 16);
		acc += v.x ^ v.y ^ v.z ^ v.w;
	}
	waitg<0>();
	if (acc == 0x12345678u)
		sink[0] = (float)acc;
}

/* bulk pieces of P bytes into NS slots, all in flight; a slot is reissued once every thread has read it
 * (a CTA barrier) */
__global__ void __launch_bounds__(T, 1) bulkring(const char *base, int64_t per, int P, int NS, float *sink)
{
	extern __shared__ __align__(128) char smem[];
	__shared__ __align__(8) uint64_t bar[32];
	const uint32_t s0 = (uint32_t)__cvta_generic_to_shared(smem), b0 = (uint32_t)__cvta_generic_to_shared(bar);
	const char *src = base + (int64_t)blockIdx.x * per;
	const int pieces = (int)(per / P);
	if (threadIdx.x == 0) {
		for (int s = 0; s < NS; s++)
			mb_init(b0 + 8 * s, 1);
		asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
	}
	__syncthreads();
	if (threadIdx.x == 0)
		for (int s = 0; s < NS && s < pieces; s++) {
			mb_expect(b0 + 8 * s, P);
			bulk(s0 + s * P, src + (int64_t)s * P, P, b0 + 8 * s);
		}
	uint32_t acc = 0;
	for (int i = 0; i < pieces; i++) {
		const int s = i % NS;
		mb_wait(b0 + 8 * s, (uint32_t)((i / NS) & 1));
		for (int o = threadIdx.x * 16; o < P; o += T * 16) {
			const uint4 v = *reinterpret_cast<const uint4 *>(smem + s * P + o);
			acc += v.x ^ v.y ^ v.z ^ v.w;
		}
		__syncthreads(); /* slot s read by all */
		if (threadIdx.x == 0 && i + NS < pieces) {
			mb_expect(b0 + 8 * s, P);
			bulk(s0 + s * P, src + (int64_t)(i + NS) * P, P, b0 + 8 * s);
		}
	}
	if (acc == 0x12345678u)
		sink[0] = (float)acc;
}

/* the ceiling: plain 16-byte loads by many CTAs, four in flight a thread, over all of the bytes */
__global__ void __launch_bounds__(T) plain(const uint4 *base, int64_t n, float *sink)
{
	uint32_t acc = 0;
	const int64_t st = (int64_t)gridDim.x * T;
	for (int64_t i = (int64_t)blockIdx.x * T + threadIdx.x; i < n; i += 4 * st) {
		uint4 v[4];
#pragma unroll
		for (int u = 0; u < 4; u++)
			v[u] = i + u * st < n ? base[i + u * st] : make_uint4(0, 0, 0, 0);
#pragma unroll
		for (int u = 0; u < 4; u++)
			acc += v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
	}
	if (acc == 0x12345678u)
		sink[0] = (float)acc;
}

int main()
{
	int dev = 0, sms = 0;
	CK(cudaGetDevice(&dev));
	CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
	cudaDeviceProp prop;
	CK(cudaGetDeviceProperties(&prop, dev));
	const int64_t total = 2048 * MiB;
	char *buf;
	float *sink;
	CK(cudaMalloc(&buf, total));
	CK(cudaMalloc(&sink, 4));
	CK(cudaMemset(buf, 1, total));
	const int smem_max = 200 * 1024;
	CK(cudaFuncSetAttribute(ring16<13>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_max));
	CK(cudaFuncSetAttribute(ring16<29>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_max));
	CK(cudaFuncSetAttribute(ring16<48>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_max));
	CK(cudaFuncSetAttribute(bulkring, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_max));
	printf("# bulk_probe on %s (%d SMs): one CTA of %d threads an SM, each reading its own range of cold "
	       "bytes; us a launch (median of 9), TB/s over the GPU, GB/s an SM\n",
	       prop.name, sms, T);
	printf("%-34s %9s %8s %8s %8s\n", "how", "KB a CTA", "us", "TB/s", "GB/s/SM");
	const int64_t pers[] = {64 * KiB, 256 * KiB, 512 * KiB};
	for (int64_t per : pers) {
		int64_t off = 0;
		auto next = [&]() { /* a part of the buffer no launch read last */
			off += per * sms;
			if (off + per * sms > total)
				off = 0;
			return buf + off;
		};
		auto report = [&](const char *how, double us) {
			printf("%-34s %9lld %8.2f %8.2f %8.1f\n", how, (long long)(per / KiB), us, per * sms / us * 1e-6,
			       per / us * 1e-3);
		};
		report("plain loads, 8 CTAs an SM", bench_time_us(9, [&] {
			       plain<<<sms * 8, T>>>(reinterpret_cast<const uint4 *>(next()), per * sms / 16, sink);
		       }));
		report("cp.async 16 B, 48 KB in flight", bench_time_us(9, [&] { ring16<13><<<sms, T, 13 * 16 * T>>>(next(), per, sink); }));
		report("cp.async 16 B, 112 KB in flight", bench_time_us(9, [&] { ring16<29><<<sms, T, 29 * 16 * T>>>(next(), per, sink); }));
		report("cp.async 16 B, 188 KB in flight", bench_time_us(9, [&] { ring16<48><<<sms, T, 48 * 16 * T>>>(next(), per, sink); }));
		const int cfg[][2] = {{4096, 16}, {8192, 8}, {8192, 16}, {16384, 4}, {16384, 8}, {16384, 12}, {32768, 4}};
		for (auto &c : cfg) {
			if (per % c[0] || (int64_t)c[0] * c[1] > smem_max)
				continue;
			char how[64];
			snprintf(how, sizeof how, "bulk %d KB x %d slots", c[0] / 1024, c[1]);
			report(how, bench_time_us(9, [&] { bulkring<<<sms, T, c[0] * c[1]>>>(next(), per, c[0], c[1], sink); }));
		}
	}
	CK(cudaFree(buf));
	CK(cudaFree(sink));
	return 0;
}
