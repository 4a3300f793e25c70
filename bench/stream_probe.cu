// stream_probe.cu: batch-1 weight streaming rate of the matmul tile templates under different tilings
// of a 4096x4096 bf16 layer (8 layers, 256 MiB, so nothing stays in L2), against a plain contiguous
// read of the same bytes. One CTA per task, every CTA walks the 8 layers; prints GB/s per variant.
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <vector>

#define ARK_THREADS 256
#ifndef ARK_SMEM_BYTES
#define ARK_SMEM_BYTES 196608
#endif
#include "ark_tiles.cuh"
#include "bench_cuda.h"


enum { LAYERS = 8, DIM = 4096 };

__global__ void __launch_bounds__(ARK_THREADS, 1)
	layers_kernel(const ark_opp *opp, const ark_task *tasks, char *arena)
{
	extern __shared__ __align__(16) char smem[];
	const ark_task t = tasks[blockIdx.x];
	for (int l = 0; l < LAYERS; l++) {
		ark_tile(opp[l], t, {arena, nullptr, smem, 0, nullptr});
		__syncthreads();
	}
}

/* Contiguous read of `bytes` per CTA per layer, 4 x 16 B in flight per thread. */
__global__ void __launch_bounds__(ARK_THREADS, 1) read_kernel(const uint4 *w, size_t per_cta, size_t layer, float *sink)
{
	float s = 0.0f;
	for (int l = 0; l < LAYERS; l++) {
		const uint4 *p = w + l * layer / 16 + blockIdx.x * per_cta / 16;
		const size_t n = per_cta / 16;
		for (size_t i = threadIdx.x; i < n; i += 4 * ARK_THREADS) {
			uint4 q[4];
#pragma unroll
			for (int u = 0; u < 4; u++)
				q[u] = i + u * ARK_THREADS < n ? __ldg(p + i + u * ARK_THREADS) : make_uint4(0, 0, 0, 0);
#pragma unroll
			for (int u = 0; u < 4; u++)
				s += __uint_as_float(q[u].x ^ q[u].y ^ q[u].z ^ q[u].w);
		}
	}
	if (s == 1.2345f)
		sink[0] = s;
}


int main()
{
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
		printf("SKIP: no CUDA device\n");
		return 0;
	}
	cudaDeviceProp prop;
	CK(cudaGetDeviceProperties(&prop, 0));
	const size_t wbytes = (size_t)DIM * DIM * 2;
	const size_t a_off = 0, out_off = 1 << 16, ws_off = 1 << 17, w_off = 1 << 20;
	const size_t arena_bytes = w_off + LAYERS * wbytes;
	char *arena;
	CK(cudaMalloc(&arena, arena_bytes));
	{ /* random bytes, kept small in magnitude: bf16 with a random mantissa and a fixed exponent */
		std::vector<uint16_t> h(arena_bytes / 2);
		uint32_t x = 12345;
		for (auto &e : h) {
			x = x * 1664525u + 1013904223u;
			e = (uint16_t)(0x3c00 | (x >> 16 & 0x83ff));
		}
		CK(cudaMemcpy(arena, h.data(), arena_bytes, cudaMemcpyHostToDevice));
	}
	float *sink;
	CK(cudaMalloc(&sink, 4));
	ark_opp *d_opp;
	ark_task *d_tasks;
	CK(cudaMalloc(&d_opp, LAYERS * sizeof(ark_opp)));
	CK(cudaMalloc(&d_tasks, 1024 * sizeof(ark_task)));
	CK(cudaFuncSetAttribute(layers_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, ARK_TILES_SMEM_BYTES));
	printf("# %s, %d SMs; 8 layers of 4096x4096 bf16 at batch 1 (%.0f MiB), median of 15 runs; "
	       "%d B of shared memory, ring %d B\n", prop.name, prop.multiProcessorCount, LAYERS * wbytes / 1048576.0,
	       (int)ARK_TILES_SMEM_BYTES, (int)ARK_MM_RING_BYTES);
	printf("| variant | CTAs | us | GB/s |\n|---|---|---|---|\n");

	struct variant {
		const char *name;
		bool tb;
		int tn, splits;
	} vs[] = {{"kn tn=32", false, 32, 1},          {"kn tn=64 split2", false, 64, 2},
		  {"kn tn=128 split4", false, 128, 4},
		  {"nk tn=32", true, 32, 1},          {"nk tn=128 split4", true, 128, 4}};
	for (const variant &v : vs) {
		std::vector<ark_opp> opp(LAYERS);
		for (int l = 0; l < LAYERS; l++) {
			ark_opp &p = opp[l];
			memset(&p, 0, sizeof p);
			p.kind = ARK_OP_MATMUL;
			p.dtype = ARK_BF16;
			p.flags = v.tb ? ARK_OPP_TRANSPOSE_B : 0;
			p.act = ARK_ACT_NONE;
			p.splits = v.splits;
			p.in[0] = a_off;
			p.in[1] = w_off + l * wbytes;
			p.out = out_off;
			p.ws = ws_off;
			p.M = 1, p.N = DIM, p.K = DIM;
		}
		std::vector<ark_task> tasks;
		const int kc = DIM / v.splits;
		for (int n0 = 0; n0 < DIM; n0 += v.tn)
			for (int s = 0; s < v.splits; s++) {
				ark_task t;
				memset(&t, 0, sizeof t);
				t.tmpl = v.splits > 1 ? ARK_T_MATMUL_PARTIAL : ARK_T_MATMUL;
				t.split = s;
				t.m0 = 0, t.m1 = 1, t.n0 = n0, t.n1 = n0 + v.tn, t.k0 = s * kc, t.k1 = (s + 1) * kc;
				tasks.push_back(t);
			}
		CK(cudaMemcpy(d_opp, opp.data(), LAYERS * sizeof(ark_opp), cudaMemcpyHostToDevice));
		CK(cudaMemcpy(d_tasks, tasks.data(), tasks.size() * sizeof(ark_task), cudaMemcpyHostToDevice));
		const double us = bench_time_us(15, [&] {
			layers_kernel<<<(int)tasks.size(), ARK_THREADS, ARK_TILES_SMEM_BYTES>>>(d_opp, d_tasks, arena);
		});
		printf("| %s | %zu | %.1f | %.0f |\n", v.name, tasks.size(), us, LAYERS * wbytes / (us * 1e3));
	}
	for (int ctas : {128, 132, 264}) {
		const size_t per = wbytes / ctas / 16 * 16;
		const double us = bench_time_us(15, [&] {
			read_kernel<<<ctas, ARK_THREADS>>>((const uint4 *)(arena + w_off), per, wbytes, sink);
		});
		printf("| contiguous read | %d | %.1f | %.0f |\n", ctas, us, LAYERS * per * ctas / (us * 1e3));
	}
	return 0;
}
