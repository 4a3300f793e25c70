// chain_probe.cu: one EW_CHAIN task (chain64: 64 x (scale by 1.0001, add v) on 4096 fp32 values) run
// by one CTA outside the loop kernel, timed with events over many launches; for profiling the chain
// template alone (ncu works on it, unlike on the resident loop kernel).
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#include "ark_tiles.cuh"
#include "bench_cuda.h"


__global__ void __launch_bounds__(ARK_THREADS, 1) chain_kernel(const ark_opp *opp, ark_task t, char *arena)
{
	ark_tile(opp[0], t, {arena, nullptr, nullptr, 0, nullptr});
}

int main(int argc, char **argv)
{
	const int n_el = 4096, rounds = argc > 1 ? atoi(argv[1]) : 64;
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || !ndev) {
		printf("SKIP: no CUDA device\n");
		return 0;
	}
	/* arena: x at 0, v at 16 KiB, y at 32 KiB */
	char *arena;
	CK(cudaMalloc(&arena, 3 * n_el * 4));
	std::vector<float> h(2 * n_el);
	for (int i = 0; i < 2 * n_el; i++)
		h[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
	CK(cudaMemcpy(arena, h.data(), 2 * n_el * 4, cudaMemcpyHostToDevice));
	std::vector<ark_opp> opp(1 + 2 * rounds);
	memset(opp.data(), 0, opp.size() * sizeof(ark_opp));
	opp[0].kind = ARK_OP_SCALE, opp[0].dtype = ARK_FP32, opp[0].splits = 2 * rounds;
	opp[0].in[0] = 0, opp[0].out = 2 * n_el * 4, opp[0].M = 1, opp[0].N = n_el;
	for (int r = 0; r < rounds; r++) {
		ark_opp &s = opp[1 + 2 * r], &a = opp[2 + 2 * r];
		s.kind = ARK_OP_SCALE, s.dtype = ARK_FP32, s.f = 1.0001f;
		a.kind = ARK_OP_ADD, a.dtype = ARK_FP32, a.in[1] = n_el * 4, a.flags = ARK_OPP_SAME_SHAPE;
	}
	ark_opp *d_opp;
	CK(cudaMalloc(&d_opp, opp.size() * sizeof(ark_opp)));
	CK(cudaMemcpy(d_opp, opp.data(), opp.size() * sizeof(ark_opp), cudaMemcpyHostToDevice));
	ark_task t;
	memset(&t, 0, sizeof t);
	t.tmpl = ARK_T_EW_CHAIN, t.k0 = 0, t.k1 = n_el, t.m1 = 1, t.n1 = n_el;
	const double us = bench_time_us(50, [&] { chain_kernel<<<1, ARK_THREADS>>>(d_opp, t, arena); });
	printf("chain of %d steps on %d fp32: median %.2f us per launch (one CTA)\n", 2 * rounds, n_el, us);
	return 0;
}
