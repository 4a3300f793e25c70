// wgmma_probe.cu: where the time of the 16-bit warpgroup-MMA matmul tile goes (templates/op_wgmma.cuh).
//
// For each case (M, N, K, tile rows, tile columns; bf16, b [N, K], rows packed) every CTA runs one
// tile over all of K through ark_mm_wgmma, the tile's own entry, and thread 0 stamps the SM clock at
// the points ARK_MM_TSTAMP marks: entry, each stage's compute (the stage has landed for all threads),
// the ring's end, the sums in shared memory, the epilogue's end. Prints the median time between
// consecutive stamps over every CTA of 20 launches (us at the SM clock the GPU reports), and the time
// per launch of 50 back-to-back launches.
//
// The tile is called inline from the kernel (ARK_WGMMA_FN) with each stage's MMAs left in flight
// (ARK_WGMMA_LAG 1), as a kernel of its own would run it; the loop kernel calls it as a function,
// which ptxas serializes (C7510), and waits for each stage: build with -DWGMMA_PROBE_CALL
// -DARK_WGMMA_LAG=0 to time that form.
//
//   build/bench/wgmma_probe [M,N,K,TM,TN ...]   (make bench-probe; default: BERT-base's shapes)
#include <algorithm>
#include <cstdio>
#include <vector>

#define ARK_THREADS 256
#ifndef ARK_SMEM_BYTES
#define ARK_SMEM_BYTES 131072
#endif
#ifdef WGMMA_PROBE_CALL
#define ARK_WGMMA_FN __noinline__
#else
#define ARK_WGMMA_FN __forceinline__
#endif
#ifndef ARK_WGMMA_LAG
#define ARK_WGMMA_LAG 1 /* -DARK_WGMMA_LAG=0: each stage's MMAs waited for, as in the loop kernel */
#endif
__device__ long long *probe_stamps; /* [CTAs][16], null: no stamps */
#define ARK_MM_TSTAMP(i)                                                                                  \
	do {                                                                                              \
		if (probe_stamps && threadIdx.x == 0)                                                       \
			probe_stamps[(blockIdx.y * gridDim.x + blockIdx.x) * 16 + (i)] = clock64();           \
	} while (0)
#include "ark_tiles.cuh"
#include "bench_cuda.h"
#include "bench_fill.cuh"
#include "bench_mm.cuh"

template <typename T> __global__ void __launch_bounds__(ARK_THREADS, 1) tile_kernel(ark_opp p, int tm, int tn)
{
	extern __shared__ __align__(16) char smem[];
#if ARK_MM_WGMMA
	const ark_mm g = bench_mm_of(p);
	const int m0 = blockIdx.y * tm, n0 = blockIdx.x * tn;
	ark_mm_wgmma<T, true>(g, m0, min(m0 + tm, (int)g.M), n0, min(n0 + tn, (int)g.N), 0, (int)g.K, smem);
#endif
}

static const char *const phase[16] = {"", "first stage landed", "stage 2", "stage 3", "stage 4", "stage 5",
				      "stage 6", "stage 7", "stage 8", "stage 9", "stage 10", "stage 11",
				      "stages 12 and on", "ring drained", "sums to shared", "epilogue"};

static void probe(int M, int N, int K, int tm, int tn, double mhz)
{
	__nv_bfloat16 *a, *b, *c;
	CK(cudaMalloc(&a, (size_t)M * K * 2));
	CK(cudaMalloc(&b, (size_t)N * K * 2));
	CK(cudaMalloc(&c, (size_t)M * N * 2));
	bench_fill_kernel<<<256, 256>>>(a, (size_t)M * K, 1);
	bench_fill_kernel<<<256, 256>>>(b, (size_t)N * K, 2);
	const ark_opp p = bench_mm_opp(a, b, c, M, N, K, true);
	const dim3 grid((N + tn - 1) / tn, (M + tm - 1) / tm);
	const int ctas = grid.x * grid.y;
	long long *d_st, *null_st = nullptr;
	CK(cudaMalloc(&d_st, (size_t)ctas * 16 * sizeof(long long)));
	auto launch = [&] { tile_kernel<__nv_bfloat16><<<grid, ARK_THREADS, ARK_SMEM_BYTES>>>(p, tm, tn); };
	for (int w = 0; w < 5; w++)
		launch();
	CK(cudaMemcpyToSymbol(probe_stamps, &d_st, sizeof d_st));
	std::vector<std::vector<double>> us(16);
	std::vector<long long> st((size_t)ctas * 16);
	for (int r = 0; r < 20; r++) {
		CK(cudaMemset(d_st, 0, st.size() * sizeof st[0]));
		launch();
		CK(cudaDeviceSynchronize());
		CK(cudaGetLastError());
		CK(cudaMemcpy(st.data(), d_st, st.size() * sizeof st[0], cudaMemcpyDeviceToHost));
		for (int x = 0; x < ctas; x++)
			for (int i = 1; i < 16; i++)
				if (st[x * 16 + i] && st[x * 16 + i - 1]) /* both stamped: K may have fewer stages */
					us[i].push_back((double)(st[x * 16 + i] - st[x * 16 + i - 1]) / mhz);
	}
	CK(cudaMemcpyToSymbol(probe_stamps, &null_st, sizeof null_st));
	const double per = bench_time_us(50, launch);
	printf("%dx%dx%d, tile %dx%d, %d CTAs: %.2f us a launch; us from the stamp before:\n", M, N, K, tm, tn, ctas, per);
	for (int i = 1; i < 16; i++)
		if (!us[i].empty())
			printf("  %-20s %7.3f\n", phase[i], bench_median(us[i]));
	CK(cudaFree(a));
	CK(cudaFree(b));
	CK(cudaFree(c));
	CK(cudaFree(d_st));
}

int main(int argc, char **argv)
{
	cudaDeviceProp prop;
	CK(cudaGetDeviceProperties(&prop, 0));
	int khz = 0;
	CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
	CK(cudaFuncSetAttribute(tile_kernel<__nv_bfloat16>, cudaFuncAttributeMaxDynamicSharedMemorySize, ARK_SMEM_BYTES));
	printf("# wgmma_probe on %s (%d SMs, SM clock %d MHz), tile %s\n", prop.name, prop.multiProcessorCount,
	       khz / 1000,
#ifdef WGMMA_PROBE_CALL
	       "called as a function (serialized wgmma)"
#else
	       "inline in the kernel"
#endif
	);
	int shapes[][5] = {{128, 768, 768, 64, 64}, {128, 3072, 768, 64, 64}, {128, 768, 3072, 64, 64},
			   {128, 768, 768, 128, 128}, {512, 1024, 1024, 128, 128}};
	if (argc > 1) {
		for (int i = 1; i < argc; i++) {
			int s[5];
			if (sscanf(argv[i], "%d,%d,%d,%d,%d", &s[0], &s[1], &s[2], &s[3], &s[4]) != 5 || s[0] <= 0 ||
			    s[1] <= 0 || s[2] <= 0 || s[3] <= 32 || s[4] <= 32 || s[3] > 128 || s[4] > 128) {
				fprintf(stderr, "usage: wgmma_probe [M,N,K,TM,TN ...]  (tiles of 33 to 128 rows and columns)\n");
				return 2;
			}
			probe(s[0], s[1], s[2], s[3], s[4], khz / 1e3);
		}
		return 0;
	}
	for (auto &s : shapes)
		probe(s[0], s[1], s[2], s[3], s[4], khz / 1e3);
	return 0;
}
