// mm_probe.cu: the matmul tile templates against cuBLAS on the same shapes, side by side.
//
// For each shape (M, N, K, b's layout, dtype bf16 or fp32) every CTA runs one tile of the output
// through the tile dispatch the loop kernel calls (ark_mm_sub<T> of templates/op_matmul.cuh: bf16 on
// the mma path above 16 rows, fp32 on the FMA tile above 8 rows, both on the streaming path at or
// below), over the whole of K, for several tile sizes; cuBLAS (cublasGemmEx, fp32 accumulation; fp32 operands: the handle's default
// math mode, no TF32, a full SGEMM as PyTorch's default) computes the same product
// from the same operands. Both are timed the same way: events around REPS back-to-back launches after
// a warm-up, the median of 5 such runs, so launch costs are not part of either figure. Prints us per
// product, TFLOP/s, the tile path's share of cuBLAS's throughput, and the largest difference from
// cuBLAS's result relative to its largest value (WRONG above 2e-2 for bf16, 1e-4 for fp32).
//
//   build/bench/mm_probe [M,N,K[,tb[,dtype]] ...]   (make bench-probe; tb 1 by default: b is [N, K];
//                                                   dtype bf16 (default) or fp32; default shapes: the
//                                                   BERT-base and MiniLM ones in bf16, a few in fp32)
//   MM_PROBE_TILES=128x64,64x32 build/bench/mm_probe ...   only those tile sizes (one kernel to profile)
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <type_traits>
#include <vector>

/* The Makefile builds this with ARK_TILES_FP32 0 (and FP16 0): that only drops the dtype cases of
 * ark_tile's dispatch (ark_tiles.cuh); ark_mm_sub<float>, called directly below, is still compiled. */
#define ARK_THREADS 256
#ifndef ARK_SMEM_BYTES
#define ARK_SMEM_BYTES 131072
#endif
#include "ark_tiles.cuh"
#include "bench_cuda.h"
#include "bench_fill.cuh"
#include "bench_mm.cuh"

#define CKB(call)                                                                                    \
	do {                                                                                         \
		cublasStatus_t s_ = (call);                                                          \
		if (s_ != CUBLAS_STATUS_SUCCESS) {                                                   \
			fprintf(stderr, "FAIL: %s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #call, \
				(int)s_);                                                            \
			exit(1);                                                                     \
		}                                                                                    \
	} while (0)

/* CTA (x, y) computes out[y tm : (y + 1) tm, x tn : (x + 1) tn] over all of K. */
template <typename T> __global__ void __launch_bounds__(ARK_THREADS, 1) tiles_kernel(ark_opp p, int tm, int tn)
{
	extern __shared__ __align__(16) char smem[];
	const ark_mm g = bench_mm_of(p);
	const int m0 = blockIdx.y * tm, n0 = blockIdx.x * tn;
	ark_mm_sub<T>(g, m0, min(m0 + tm, (int)g.M), n0, min(n0 + tn, (int)g.N), 0, (int)g.K, smem);
}

enum { REPS = 20 };

/* MM_PROBE_BF16 0: the fp32 tiles alone, a build of a fraction of the time (a probe of the FMA tile) */
#ifndef MM_PROBE_BF16
#define MM_PROBE_BF16 1
#endif

/* us per launch: the median of 5 batches of REPS back-to-back launches, after a warm-up batch */
template <typename F> static double time_us(F launch)
{
	return bench_time_us(5, [&] {
		       for (int i = 0; i < REPS; i++)
			       launch();
	       }) /
	       REPS;
}

/* ark_to_f on the host (ark_dt's conversions are device-only) */
static inline float host_f(float x) { return x; }
static inline float host_f(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> static double max_rel_diff(const T *d_x, const T *d_ref, size_t n)
{
	std::vector<T> x(n), r(n);
	CK(cudaMemcpy(x.data(), d_x, n * sizeof(T), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(r.data(), d_ref, n * sizeof(T), cudaMemcpyDeviceToHost));
	double big = 0, diff = 0;
	for (size_t i = 0; i < n; i++) {
		const double a = host_f(x[i]), b = host_f(r[i]);
		big = fmax(big, fabs(b));
		diff = isfinite(a) ? fmax(diff, fabs(a - b)) : INFINITY;
	}
	return big > 0 ? diff / big : diff;
}

struct shape {
	int M, N, K;
	bool tb;
	bool fp32; /* fp32 operands and result, else bf16 */
};

/* Whether the comma-separated list holds the word w. */
static bool in_list(const char *list, const char *w)
{
	const size_t n = strlen(w);
	for (const char *c = list; *c;) {
		const char *e = strchr(c, ',');
		const size_t l = e ? (size_t)(e - c) : strlen(c);
		if (l == n && strncmp(c, w, n) == 0)
			return true;
		if (!e)
			break;
		c = e + 1;
	}
	return false;
}

/* Times cuBLAS and the tile templates on shape s, elements of type T; prints a row per tile size. */
template <typename T> static void probe(cublasHandle_t h, const shape &s)
{
	constexpr bool f32 = std::is_same<T, float>::value;
	const cudaDataType dt = f32 ? CUDA_R_32F : CUDA_R_16BF;
	const double tol = f32 ? 1e-4 : 2e-2;
	const int tiles[][2] = {{128, 128}, {128, 64}, {64, 128}, {64, 64}, {64, 32}, {32, 64}, {16, 16}};
	const size_t na = (size_t)s.M * s.K, nb = (size_t)s.K * s.N, nc = (size_t)s.M * s.N;
	T *a, *b, *c, *ref;
	CK(cudaMalloc(&a, na * sizeof(T)));
	CK(cudaMalloc(&b, nb * sizeof(T)));
	CK(cudaMalloc(&c, nc * sizeof(T)));
	CK(cudaMalloc(&ref, nc * sizeof(T)));
	bench_fill_kernel<T><<<256, 256>>>(a, na, 1);
	bench_fill_kernel<T><<<256, 256>>>(b, nb, 2);
	const float one = 1.0f, zero = 0.0f;
	auto blas = [&] {
		if (s.tb)
			CKB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, s.N, s.M, s.K, &one, b, dt, s.K, a, dt, s.K, &zero,
					 ref, dt, s.N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
		else
			CKB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, s.N, s.M, s.K, &one, b, dt, s.N, a, dt, s.K, &zero,
					 ref, dt, s.N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
	};
	const double flop = 2.0 * s.M * s.N * s.K;
	const double t_blas = time_us(blas);
	char name[64];
	snprintf(name, sizeof name, "%dx%dx%d %s", s.M, s.N, s.K, s.tb ? "nk" : "kn");
	const char *only = getenv("MM_PROBE_TILES"); /* e.g. "128x64,64x32": those tile sizes alone */
	for (const auto &t : tiles) {
		char tn[16];
		snprintf(tn, sizeof tn, "%dx%d", t[0], t[1]);
		if (only && !in_list(only, tn))
			continue;
		const ark_opp p = bench_mm_opp(a, b, c, s.M, s.N, s.K, s.tb);
		const dim3 grid((s.N + t[1] - 1) / t[1], (s.M + t[0] - 1) / t[0]);
		CK(cudaMemset(c, 0xff, nc * sizeof(T))); /* NaN: a tile that writes nothing shows */
		auto run = [&] { tiles_kernel<T><<<grid, ARK_THREADS, ARK_SMEM_BYTES>>>(p, t[0], t[1]); };
		const double us = time_us(run);
		const double err = max_rel_diff(c, ref, nc);
		printf("%-22s %-5s %-9s %6u %9.2f %8.1f %9.2f %8.1f %9.2fx  err %.1e%s\n", name, f32 ? "fp32" : "bf16",
		       tn, grid.x * grid.y, us, flop / us * 1e-6, t_blas, flop / t_blas * 1e-6, t_blas / us, err,
		       err > tol ? "  WRONG" : "");
	}
	CK(cudaFree(a));
	CK(cudaFree(b));
	CK(cudaFree(c));
	CK(cudaFree(ref));
}

int main(int argc, char **argv)
{
	std::vector<shape> shapes;
	for (int i = 1; i < argc; i++) {
		shape s;
		int tb = 1;
		char dt[8] = "bf16";
		int commas = 0; /* every field given must parse: "M,N,K,fp32" (no tb) is refused */
		for (const char *c = argv[i]; *c; c++)
			commas += *c == ',';
		const int got = sscanf(argv[i], "%d,%d,%d,%d,%7s", &s.M, &s.N, &s.K, &tb, dt);
		if (got < 3 || got != commas + 1 || s.M <= 0 || s.N <= 0 || s.K <= 0 ||
		    (strcmp(dt, "bf16") != 0 && strcmp(dt, "fp32") != 0)) {
			fprintf(stderr, "usage: mm_probe [M,N,K[,tb[,dtype]] ...]  (dtype bf16 or fp32)\n");
			return 2;
		}
		s.tb = tb != 0;
		s.fp32 = strcmp(dt, "fp32") == 0;
		shapes.push_back(s);
	}
	if (shapes.empty())
		shapes = {/* bf16 */
			  {128, 768, 768, true, false}, {128, 3072, 768, true, false}, {128, 768, 3072, true, false},
			  {128, 384, 384, true, false}, {128, 1536, 384, true, false}, {128, 384, 1536, true, false},
			  {512, 1024, 1024, true, false}, {384, 3075, 1672, false, false}, {397, 1344, 1344, true, false},
			  /* fp32 */
			  {128, 768, 768, true, true}, {408, 392, 392, false, true}, {408, 392, 392, true, true},
			  {512, 1024, 1024, true, true}, {63, 3664, 1000, false, true}, {499, 907, 911, true, true}};
	cudaDeviceProp prop;
	CK(cudaGetDeviceProperties(&prop, 0));
#if MM_PROBE_BF16
	CK(cudaFuncSetAttribute(tiles_kernel<__nv_bfloat16>, cudaFuncAttributeMaxDynamicSharedMemorySize,
				ARK_SMEM_BYTES));
#endif
	CK(cudaFuncSetAttribute(tiles_kernel<float>, cudaFuncAttributeMaxDynamicSharedMemorySize, ARK_SMEM_BYTES));
	cublasHandle_t h;
	CKB(cublasCreate(&h));
	printf("# mm_probe on %s (%d SMs): fp32 sums (cuBLAS fp32: no TF32); us per product (median of 5 x %d launches)\n",
	       prop.name, prop.multiProcessorCount, REPS);
	printf("%-22s %-5s %-9s %6s %9s %8s %9s %8s %10s\n", "shape (M x N x K, b)", "dtype", "tile", "ctas", "tile us",
	       "TFLOP/s", "cuBLAS us", "TFLOP/s", "tile/cuBLAS");
	for (const shape &s : shapes) {
		if (s.fp32)
			probe<float>(h, s);
		else
#if MM_PROBE_BF16
			probe<__nv_bfloat16>(h, s);
#else
			printf("%dx%dx%d: bf16 left out of this build (MM_PROBE_BF16 0)\n", s.M, s.N, s.K);
#endif
	}
	CKB(cublasDestroy(h));
	return 0;
}
