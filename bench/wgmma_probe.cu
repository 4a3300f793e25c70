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
// Cases of 128 x 128 tiles (K a multiple of 8) run again with a producer warp (ws_kernel below: bulk
// tensor copies, full and empty mbarriers; two consumer warpgroups in 288 threads, or one in the loop
// kernel's 256; or one consumer warpgroup and a producer warpgroup of cp.async), the output compared
// with the tile's.
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
#ifdef WGMMA_PROBE_NOSTAMP /* the tile exactly as the loop kernel's: no stamps, no check for them */
#define ARK_MM_TSTAMP(i) ((void)0)
#endif
__device__ long long *probe_stamps; /* [CTAs][16], null: no stamps */
#ifndef ARK_MM_TSTAMP
#define ARK_MM_TSTAMP(i)                                                                                  \
	do {                                                                                              \
		if (probe_stamps && threadIdx.x == 0)                                                       \
			probe_stamps[(blockIdx.y * gridDim.x + blockIdx.x) * 16 + (i)] = clock64();           \
	} while (0)
#endif
#include "ark_tiles.cuh"
#include "bench_async.cuh"
#include "bench_cuda.h"
#include "bench_fill.cuh"
#include "bench_mm.cuh"

template <typename T> __global__ void __launch_bounds__(ARK_THREADS, 1) tile_kernel(ark_opp p, int tm, int tn)
{
	extern __shared__ __align__(1024) char smem[]; /* the tile aligns its ring itself; ws_kernel's declaration */
#if ARK_MM_WGMMA
	const ark_mm g = bench_mm_of(p);
	const int m0 = blockIdx.y * tm, n0 = blockIdx.x * tn;
	ark_mm_wgmma<T, true>(g, m0, min(m0 + tm, (int)g.M), n0, min(n0 + tn, (int)g.N), 0, (int)g.K, smem);
#endif
}

/* ---- the same 128 x 128 tile with a producer warp (bench/NOTES.md: only a producer warp overlaps a
 * ring's copies with their consumer) -----------------------------------------------------------------
 * NWG 2: 288 threads, warps 0-7 two consumer warpgroups, each 64 rows x 128 columns as
 * ark_mm_wgmma_t's, warp 8 the producer; NWG 1: the loop kernel's 256 threads, warps 0-3 one consumer
 * warpgroup doing both halves of 64 rows (eight MMAs a stage), warp 4 the producer, warps 5-7 idle.
 * The producer's lane 0 issues a stage (a's 128 rows and b's 128 rows by 64 of k: two 2-D bulk tensor
 * copies, the 128-byte swizzle the tile's ring writes, zeros past the operands) into a ring of WS_ST
 * stages once the stage's empty mbarrier has every consumer warp's arrival; a consumer warp waits on
 * the stage's full mbarrier, runs its warpgroup's MMAs, waits for them and arrives on the empty one.
 * CPA (NWG 1 only): warps 4-7 produce instead, by 16-byte cp.async (16 a thread a stage, the same
 * swizzle, zeros past the operands), each thread's copies arriving on the full mbarrier when they land
 * (cp.async.mbarrier.arrive.noinc: no tensor map); a consumer fences the async proxy after its wait.
 * The consumers' k loop is ARK_WGMMA_FN, as the tile: a function (serialized MMAs) with
 * -DWGMMA_PROBE_CALL. The sums go straight from the registers to c (bf16). */
enum { WS_ST = 4, WS_STAGE = 2 * 128 * 128 };
template <int NWG> struct ws_shape {
	static constexpr int threads = NWG == 2 ? 288 : 256, producer = 4 * NWG, halves = 3 - NWG;
};
template <typename T, int NWG, bool CPA>
__device__ ARK_WGMMA_FN void ws_consume(uint32_t sbase, uint32_t full, uint32_t empty, int ktiles, T *c, int M, int N, int m0, int n0)
{
#if ARK_MM_WGMMA /* the device pass for sm_90a */
	constexpr int H = ws_shape<NWG>::halves;
	const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, wg = warp >> 2, w = warp & 3;
	float acc[H][64];
#pragma unroll
	for (int h = 0; h < H; h++)
#pragma unroll
		for (int i = 0; i < 64; i++)
			acc[h][i] = 0.0f;
	for (int kt = 0; kt < ktiles; kt++) {
		const int s = kt % WS_ST;
		mb_wait(full + 8 * s, (uint32_t)((kt / WS_ST) & 1));
		if (CPA) /* cp.async's writes (generic proxy) to the MMAs' reads (async proxy) */
			asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
		const uint32_t so = sbase + s * WS_STAGE;
		const uint64_t db = ark_wgmma_desc(so + 128 * 128, 16);
#pragma unroll
		for (int h = 0; h < H; h++)
			ark_wgmma_hold(acc[h]);
		asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
		for (int h = 0; h < H; h++) {
			const uint64_t da = ark_wgmma_desc(so + (wg + h) * 64 * 128);
#pragma unroll
			for (int k = 0; k < 4; k++)
				ark_wgmma<T, 128, true>(acc[h], da + 2 * k, db + 2 * k);
		}
		asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
		asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
#pragma unroll
		for (int h = 0; h < H; h++)
			ark_wgmma_hold(acc[h]);
		__syncwarp();
		if (lane == 0)
			mb_arrive(empty + 8 * s);
	}
#pragma unroll
	for (int h = 0; h < H; h++) {
		const int r0 = m0 + (wg + h) * 64 + 16 * w + (lane >> 2), c0 = n0 + 2 * (lane & 3);
#pragma unroll
		for (int j = 0; j < 16; j++)
#pragma unroll
			for (int e = 0; e < 2; e++) {
				const int r = r0 + 8 * e, col = c0 + 8 * j;
				if (r < M && col < N)
					c[(size_t)r * N + col] = ark_from_f<T>(acc[h][4 * j + 2 * e]);
				if (r < M && col + 1 < N)
					c[(size_t)r * N + col + 1] = ark_from_f<T>(acc[h][4 * j + 2 * e + 1]);
			}
	}
#endif
}
template <typename T, int NWG, bool CPA>
__global__ void __launch_bounds__(ws_shape<NWG>::threads, 1)
    ws_kernel(const __grid_constant__ CUtensorMap ma, const __grid_constant__ CUtensorMap mb, const T *a, const T *b, T *c,
	      int M, int N, int K)
{
#if ARK_MM_WGMMA
	extern __shared__ __align__(1024) char smem[];
	const uint32_t sbase = ((uint32_t)__cvta_generic_to_shared(smem) + 1023u) & ~1023u;
	const uint32_t full = sbase + WS_ST * WS_STAGE, empty = full + 8 * WS_ST;
	const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, ktiles = (K + 63) / 64;
	const int m0 = blockIdx.y * 128, n0 = blockIdx.x * 128;
	if (tid == 0) {
		for (int s = 0; s < WS_ST; s++) {
			mb_init(full + 8 * s, CPA ? 128 : 1);
			mb_init(empty + 8 * s, 4 * NWG);
		}
		asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
	}
	__syncthreads();
	if (CPA && warp >= 4) { /* a's 128 rows then b's, 8 chunks of 16 bytes a row, 16 chunks a thread */
		const int pt = tid - 128;
		for (int kt = 0; kt < ktiles; kt++) {
			const int s = kt % WS_ST;
			const uint32_t so = sbase + s * WS_STAGE;
			mb_wait(empty + 8 * s, (uint32_t)(((kt / WS_ST) & 1) ^ 1));
#pragma unroll
			for (int i = 0; i < 16; i++) {
				const int q = pt + 128 * i, r = q >> 3, ch = q & 7, k = kt * 64 + ch * 8;
				const bool isb = r >= 128;
				const int rr = isb ? r - 128 : r, row = (isb ? n0 : m0) + rr;
				const bool in = row < (isb ? N : M) && k < K;
				const T *src = (isb ? b : a) + (in ? (size_t)row * K + k : 0);
				ark_cp_async16s(so + r * 128 + ((ch ^ (r & 7)) << 4), src, in ? 16 : 0);
			}
			asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(full + 8 * s) : "memory");
		}
		asm volatile("cp.async.wait_all;\n" ::: "memory");
		return;
	}
	if (!CPA && warp == ws_shape<NWG>::producer) {
		if (lane == 0)
			for (int kt = 0; kt < ktiles; kt++) {
				const int s = kt % WS_ST;
				const uint32_t so = sbase + s * WS_STAGE, f = full + 8 * s;
				mb_wait(empty + 8 * s, (uint32_t)(((kt / WS_ST) & 1) ^ 1)); /* the first round passes */
				mb_expect(f, WS_STAGE);
				tma2d(so, &ma, kt * 64, m0, f);
				tma2d(so + 128 * 128, &mb, kt * 64, n0, f);
			}
		return;
	}
	if (warp < 4 * NWG)
		ws_consume<T, NWG, CPA>(sbase, full, empty, ktiles, c, M, N, m0, n0);
#endif
}

/* The tile with a producer warp (NWG consumer warpgroups) against the tile's output c (the same sums:
 * the same MMAs in the same order); us a launch. */
template <int NWG, bool CPA = false>
static void probe_ws(const __nv_bfloat16 *a, const __nv_bfloat16 *b, const __nv_bfloat16 *c, int M, int N, int K)
{
	const int shm = 1024 + WS_ST * WS_STAGE + 16 * WS_ST, threads = ws_shape<NWG>::threads;
	CK(cudaFuncSetAttribute(ws_kernel<__nv_bfloat16, NWG, CPA>, cudaFuncAttributeMaxDynamicSharedMemorySize, shm));
	const CUtensorMap ma = bench_tmap_bf16(a, M, K, 128), mb = bench_tmap_bf16(b, N, K, 128);
	__nv_bfloat16 *c2;
	CK(cudaMalloc(&c2, (size_t)M * N * 2));
	CK(cudaMemset(c2, 0xff, (size_t)M * N * 2)); /* NaN: what the kernel leaves out shows */
	const dim3 grid((N + 127) / 128, (M + 127) / 128);
	auto launch = [&] { ws_kernel<__nv_bfloat16, NWG, CPA><<<grid, threads, shm>>>(ma, mb, a, b, c2, M, N, K); };
	launch();
	CK(cudaDeviceSynchronize());
	CK(cudaGetLastError());
	std::vector<uint16_t> h1((size_t)M * N), h2((size_t)M * N);
	CK(cudaMemcpy(h1.data(), c, h1.size() * 2, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(h2.data(), c2, h2.size() * 2, cudaMemcpyDeviceToHost));
	size_t bad = 0;
	for (size_t i = 0; i < h1.size(); i++) {
		const uint32_t x1 = (uint32_t)h1[i] << 16, x2 = (uint32_t)h2[i] << 16;
		float f1, f2;
		memcpy(&f1, &x1, 4);
		memcpy(&f2, &x2, 4);
		bad += !(fabsf(f1 - f2) <= 1e-2f * fmaxf(1.0f, fabsf(f1)));
	}
	const double per = bench_time_us(50, launch);
	printf("  with %s, %d consumer warpgroup%s (%d stages of %s, %d threads): %.2f us a launch; "
	       "%zu of %zu outputs differ from the tile's%s\n",
	       CPA ? "a producer warpgroup" : "a producer warp", NWG, NWG > 1 ? "s" : "", (int)WS_ST,
	       CPA ? "cp.async" : "bulk copies", threads, per, bad, h1.size(), bad ? " (WRONG)" : "");
	CK(cudaFree(c2));
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
	if (tm == 128 && tn == 128 && K % 8 == 0) {
		probe_ws<2>(a, b, c, M, N, K);
		probe_ws<1>(a, b, c, M, N, K);
		probe_ws<1, true>(a, b, c, M, N, K);
	}
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
