// icache_probe.cu: what an SM pays to fetch code it runs once. A tile template's set-up and epilogue
// are straight-line code run once a task, by the CTA's 8 warps together; this probe times such code
// of 4 KB to 256 KB (IMADs in four interleaved chains, 16 bytes an instruction), run by one CTA of 256
// threads on every SM, against the same instructions run as a loop over 4 KB of code. Each kernel
// runs its code twice in a row: the first pass fetches it, the second finds what the caches kept.
// Prints cycles per instruction (a warp's), the median SM's.
//
//   build/bench/icache_probe   (make bench-probe)
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdint.h>
#include <algorithm>
#include <vector>
#include "bench_cuda.h"

#define STEP4(i)                                                                                      \
	asm volatile("mad.lo.u32 %0, %0, %4, %5;\n\tmad.lo.u32 %1, %1, %4, %5;\n\t"                  \
		     "mad.lo.u32 %2, %2, %4, %5;\n\tmad.lo.u32 %3, %3, %4, %5;"                       \
		     : "+r"(a), "+r"(b), "+r"(c), "+r"(d)                                              \
		     : "r"(m), "r"(q))

/* n instructions of straight-line code */
template <int N> __device__ __forceinline__ void straight(uint32_t &a, uint32_t &b, uint32_t &c, uint32_t &d, uint32_t m, uint32_t q)
{
#pragma unroll
	for (int i = 0; i < N / 4; i++)
		STEP4(i);
}

/* mode 0: N instructions straight; mode 1: the same count as a loop over 256 of them */
template <int N, int MODE>
__global__ void __launch_bounds__(256, 1) code_kernel(uint32_t m, uint32_t q, long long *cyc, uint32_t *sink)
{
	uint32_t a = threadIdx.x, b = a + 1, c = a + 2, d = a + 3;
	long long t[3];
#pragma unroll 1
	for (int pass = 0; pass < 2; pass++) {
		__syncthreads();
		t[pass] = clock64();
		if (MODE == 0) {
			straight<N>(a, b, c, d, m, q);
		} else {
#pragma unroll 1
			for (int r = 0; r < N / 256; r++)
				straight<256>(a, b, c, d, m, q + r);
		}
		__syncthreads();
	}
	t[2] = clock64();
	if (threadIdx.x == 0) {
		cyc[2 * blockIdx.x] = t[1] - t[0];
		cyc[2 * blockIdx.x + 1] = t[2] - t[1];
	}
	if (a + b + c + d == 0x12345678u)
		sink[0] = a;
}

template <int N, int MODE> static void run(int sms, long long *d_cyc, uint32_t *d_sink)
{
	std::vector<long long> h(2 * sms);
	double med[2][5];
	for (int rep = 0; rep < 5; rep++) {
		code_kernel<N, MODE><<<sms, 256>>>(3, rep, d_cyc, d_sink);
		CK(cudaDeviceSynchronize());
		CK(cudaMemcpy(h.data(), d_cyc, h.size() * sizeof(long long), cudaMemcpyDeviceToHost));
		for (int p = 0; p < 2; p++) {
			std::vector<long long> v(sms);
			for (int s = 0; s < sms; s++)
				v[s] = h[2 * s + p];
			std::sort(v.begin(), v.end());
			med[p][rep] = (double)v[sms / 2];
		}
	}
	for (int p = 0; p < 2; p++)
		std::sort(med[p], med[p] + 5);
	printf("| %s | %d KB | %d | %.2f | %.2f |\n", MODE ? "loop over 4 KB" : "straight-line", MODE ? 4 : N * 16 / 1024, N,
	       med[0][2] / N, med[1][2] / N);
}

int main()
{
	int sms = 0;
	CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	cudaDeviceProp prop;
	CK(cudaGetDeviceProperties(&prop, 0));
	long long *d_cyc;
	uint32_t *d_sink;
	CK(cudaMalloc(&d_cyc, 2 * sms * sizeof(long long)));
	CK(cudaMalloc(&d_sink, 4));
	printf("%s, %d SMs: one CTA of 256 threads an SM; cycles per instruction of a warp (median SM, median of 5 launches)\n\n",
	       prop.name, sms);
	printf("| code | size | instructions | first pass | second pass |\n|---|---|---|---|---|\n");
	run<256, 0>(sms, d_cyc, d_sink);
	run<1024, 0>(sms, d_cyc, d_sink);
	run<4096, 0>(sms, d_cyc, d_sink);
	run<8192, 0>(sms, d_cyc, d_sink);
	run<16384, 0>(sms, d_cyc, d_sink);
	run<1024, 1>(sms, d_cyc, d_sink);
	run<16384, 1>(sms, d_cyc, d_sink);
	return 0;
}
