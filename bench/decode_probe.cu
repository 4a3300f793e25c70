// decode_probe.cu: the DECODE tile (decode attention, templates/op_decode.cuh) alone, one task per
// CTA, timed on the GPU.
//
// For each case (query rows T, heads H over Hkv kv heads, head size Dh, cache rows L) the tasks are cut
// as codegen/tile.c cuts them for one split (a kv head's query rows in blocks of at most ARK_DEC_ROWS,
// R = rows x heads per task; or, with bq > 0, one head's blocks of bq rows on the attention tile, as
// arkgen cuts 16-bit ops of more than ARK_DEC_ROWS rows), at position L - T; every CTA runs one task on random fp16
// (fp32 with f32 = 1) data: us per launch, the FLOP of the first task (2 R L Dh for the scores, the
// same for P.V, as if it saw all L keys) and the rate per SM. With one CTA (the first task only) the
// figure is that task alone on a warm GPU. Events around batches of REPS back-to-back launches after
// a warm-up, the median of 5 batches.
//
//   build/bench/decode_probe [T,H,Hkv,Dh,L[,ctas[,bq[,f32]]]] ...   (make bench-probe; ctas: 1 for
//                                                   one task, 0 or default every task)
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <vector>

#define ARK_THREADS 256
#define ARK_TILES_DECODE 1
#define ARK_TILES_ATTENTION 1
#ifndef ARK_SMEM_BYTES
#define ARK_SMEM_BYTES 131072
#endif
#include "ark_tiles.cuh"
#include "bench_cuda.h"
#include "bench_fill.cuh"

template <typename T>
__global__ void __launch_bounds__(ARK_THREADS, 1) decode_kernel(ark_opp p, const ark_task *tasks, char *arena)
{
	extern __shared__ __align__(16) char smem[];
	const ark_tile_env e = {arena, nullptr, smem, 0, nullptr, nullptr};
	ark_decode_tile<T>(p, tasks[blockIdx.x], e);
}

enum { REPS = 20 };

int main(int argc, char **argv)
{
	struct shape {
		int T, H, Hkv, Dh, L, ctas, bq, f32;
	};
	std::vector<shape> shapes;
	for (int i = 1; i < argc; i++) {
		shape s = {0, 0, 0, 0, 0, 0, 0, 0};
		const int got = sscanf(argv[i], "%d,%d,%d,%d,%d,%d,%d,%d", &s.T, &s.H, &s.Hkv, &s.Dh, &s.L, &s.ctas, &s.bq,
				       &s.f32);
		if (got < 5 || s.T <= 0 || s.Hkv <= 0 || s.H % s.Hkv != 0 || s.Dh <= 0 || s.Dh > 128 || s.Dh % 8 != 0 ||
		    s.L < s.T || s.bq < 0 || s.bq > 128) {
			fprintf(stderr, "usage: decode_probe [T,H,Hkv,Dh,L[,ctas[,bq[,f32]]]] ...  (Dh a multiple of 8, at "
					"most 128; L >= T; bq <= 128)\n");
			return 2;
		}
		shapes.push_back(s);
	}
	if (shapes.empty())
		shapes = {{1, 32, 8, 64, 512, 0, 0, 0},   {512, 5, 5, 128, 552, 0, 0, 0}, {512, 5, 5, 128, 552, 1, 0, 0},
			  {512, 5, 5, 128, 552, 0, 32, 0}, {512, 5, 5, 128, 552, 0, 0, 1}, {512, 5, 5, 128, 552, 0, 32, 1},
			  {16, 1, 1, 128, 128, 1, 0, 0},  {16, 1, 1, 128, 65, 1, 0, 0},   {4, 9, 3, 64, 300, 0, 0, 0}};
	cudaDeviceProp prop;
	CK(cudaGetDeviceProperties(&prop, 0));
	CK(cudaFuncSetAttribute(decode_kernel<__half>, cudaFuncAttributeMaxDynamicSharedMemorySize, ARK_SMEM_BYTES));
	CK(cudaFuncSetAttribute(decode_kernel<float>, cudaFuncAttributeMaxDynamicSharedMemorySize, ARK_SMEM_BYTES));
	printf("# decode_probe on %s (%d SMs): one split, position L - T; us per launch (median of 5 x %d)\n",
	       prop.name, prop.multiProcessorCount, REPS);
	printf("%-24s %5s %4s %5s %8s %10s %12s\n", "T,H,Hkv,Dh,L", "dtype", "R", "ctas", "us", "MFLOP/task", "GFLOP/s/SM");
	for (const shape &s : shapes) {
		const int G = s.H / s.Hkv;
		const int tb = s.bq > 0 ? s.bq : G <= ARK_DEC_ROWS ? std::max(1, std::min(s.T, ARK_DEC_ROWS / G)) : 1;
		const int gb = s.bq > 0 ? 1 : G <= ARK_DEC_ROWS ? G : ARK_DEC_ROWS;
		const size_t es = s.f32 ? 4 : 2;
		std::vector<ark_task> tasks;
		for (int kvh = 0; kvh < s.Hkv; kvh++)
			for (int t0 = 0; t0 < s.T; t0 += tb)
				for (int g0 = 0; g0 < G; g0 += gb) {
					ark_task t = {};
					t.tmpl = ARK_T_DECODE;
					t.m0 = t0, t.m1 = std::min(s.T, t0 + tb);
					t.n0 = (kvh * G + g0) * s.Dh, t.n1 = (kvh * G + std::min(G, g0 + gb)) * s.Dh;
					t.k0 = 0, t.k1 = s.L;
					tasks.push_back(t);
				}
		const int ctas = s.ctas > 0 ? std::min<int>(s.ctas, (int)tasks.size()) : (int)tasks.size();
		const size_t nq = (size_t)s.T * s.H * s.Dh, nkv = (size_t)s.L * s.Hkv * s.Dh;
		const size_t oq = 0, ok = (oq + es * nq + 255) & ~(size_t)255, ov = (ok + es * nkv + 255) & ~(size_t)255;
		const size_t oo = (ov + es * nkv + 255) & ~(size_t)255, op = (oo + es * nq + 255) & ~(size_t)255;
		char *arena;
		ark_task *dt;
		CK(cudaMalloc(&arena, op + 256));
		CK(cudaMalloc(&dt, tasks.size() * sizeof(ark_task)));
		CK(cudaMemcpy(dt, tasks.data(), tasks.size() * sizeof(ark_task), cudaMemcpyHostToDevice));
		if (s.f32) {
			bench_fill_kernel<<<256, 256>>>(reinterpret_cast<float *>(arena + oq), nq, 1);
			bench_fill_kernel<<<256, 256>>>(reinterpret_cast<float *>(arena + ok), nkv, 2);
			bench_fill_kernel<<<256, 256>>>(reinterpret_cast<float *>(arena + ov), nkv, 3);
		} else {
			bench_fill_kernel<<<256, 256>>>(reinterpret_cast<__half *>(arena + oq), nq, 1);
			bench_fill_kernel<<<256, 256>>>(reinterpret_cast<__half *>(arena + ok), nkv, 2);
			bench_fill_kernel<<<256, 256>>>(reinterpret_cast<__half *>(arena + ov), nkv, 3);
		}
		const int32_t pos = s.L - s.T;
		CK(cudaMemcpy(arena + op, &pos, sizeof pos, cudaMemcpyHostToDevice));
		ark_opp p;
		memset(&p, 0, sizeof p);
		p.kind = ARK_OP_DECODE_ATTENTION, p.dtype = s.f32 ? ARK_FP32 : ARK_FP16, p.act = ARK_ACT_NONE, p.splits = 1, p.peer = -1;
		p.in[0] = oq, p.in[1] = ok, p.in[2] = ov, p.out = oo;
		p.M = s.T, p.N = (int64_t)s.H * s.Dh, p.K = s.L - s.T + 1, p.f = 1.0f / sqrtf((float)s.Dh);
		p.oshape[0] = s.L, p.oshape[1] = s.H, p.oshape[2] = s.Hkv, p.oshape[3] = s.Dh;
		p.istride[0][0] = (int64_t)op, p.istride[0][1] = s.L, p.istride[0][2] = s.bq > 0;
		auto run = [&] {
			if (s.f32)
				decode_kernel<float><<<ctas, ARK_THREADS, ARK_SMEM_BYTES>>>(p, dt, arena);
			else
				decode_kernel<__half><<<ctas, ARK_THREADS, ARK_SMEM_BYTES>>>(p, dt, arena);
		};
		/* batches of REPS launches, so that the launch gaps are not part of the figure */
		const double us = bench_time_us(5, [&] {
					  for (int i = 0; i < REPS; i++)
						  run();
				  }) /
				  REPS;
		const ark_task &t0 = tasks[0];
		const double R = (double)(t0.m1 - t0.m0) * ((t0.n1 - t0.n0) / s.Dh), flop = 4.0 * R * s.L * s.Dh;
		char name[64];
		snprintf(name, sizeof name, "%d,%d,%d,%d,%d%s", s.T, s.H, s.Hkv, s.Dh, s.L, s.bq ? " bq" : "");
		const double waves = ceil((double)ctas / prop.multiProcessorCount);
		printf("%-24s %5s %4.0f %5d %8.2f %10.3f %12.1f\n", name, s.f32 ? "fp32" : "fp16", R, ctas, us, flop * 1e-6,
		       flop * waves / us * 1e-3);
		CK(cudaFree(arena));
		CK(cudaFree(dt));
	}
	return 0;
}
