// stream_probe.cu: batch-1 weight streaming rate of the matmul tile templates under different tilings
// of a 4096x4096 bf16 layer (8 layers, 256 MiB, so nothing stays in L2), against a plain contiguous
// read of the same bytes. One CTA per task, every CTA walks the 8 layers; prints GB/s per variant,
// the same layers' shape with q4_1 and q8_0 weights last (`stream_probe q`: those rows alone).
// Then the matmul phases of a Llama-3.2-1B decode layer one by one on cold weights (twice: the second
// time with the tile's code cached), each against a plain read of its bytes by as many CTAs.
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <vector>

#define ARK_THREADS 256
#ifndef ARK_SMEM_BYTES
#define ARK_SMEM_BYTES 196608
#endif
#include "ark_memorder.cuh"
/* the streaming tile's stamps (ARK_MM_STAMP in op_matmul.cuh): lane 0 of warp w stamps point i of its
 * CTA's run r at probe_stamps[((r * CTAs + blockIdx.x) * 8 + w) * 8 + i]; phase_kernel sets them, the
 * other kernels leave probe_stamps null */
__device__ unsigned long long *probe_stamps;
__shared__ int probe_run; /* phase_kernel's run (0, 1): the stamps of each go to their own half */
#define ARK_MM_STAMP(i)                                                                                   \
	do {                                                                                              \
		if (probe_stamps && (threadIdx.x & 31) == 0)                                                \
			probe_stamps[((probe_run * gridDim.x + blockIdx.x) * 8 + (threadIdx.x >> 5)) * 8 + (i)] = \
				ark_globaltimer();                                                        \
	} while (0)
#include "ark_tiles.cuh"
#include "bench_cuda.h"
#if !ARK_TILES_QUANT
#error "build with -DARK_TILES_QUANT=1 (the q4_1 and q8_0 rows of the table)"
#endif


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

/* The CTA's read of n 16-byte vectors from p, 4 x 16 B in flight per thread: what they fold to. */
__device__ float read_cta(const uint4 *p, size_t n)
{
	float s = 0.0f;
	for (size_t i = threadIdx.x; i < n; i += 4 * ARK_THREADS) {
		uint4 q[4];
#pragma unroll
		for (int u = 0; u < 4; u++)
			q[u] = i + u * ARK_THREADS < n ? __ldg(p + i + u * ARK_THREADS) : make_uint4(0, 0, 0, 0);
#pragma unroll
		for (int u = 0; u < 4; u++)
			s += __uint_as_float(q[u].x ^ q[u].y ^ q[u].z ^ q[u].w);
	}
	return s;
}

/* Contiguous read of `bytes` per CTA per layer. */
__global__ void __launch_bounds__(ARK_THREADS, 1) read_kernel(const uint4 *w, size_t per_cta, size_t layer, float *sink)
{
	float s = 0.0f;
	for (int l = 0; l < LAYERS; l++)
		s += read_cta(w + l * layer / 16 + blockIdx.x * per_cta / 16, per_cta / 16);
	if (s == 1.2345f)
		sink[0] = s;
}

/* One phase of a decode step, twice: each CTA runs its task (its op's params at opp[task.opp]), then the
 * same task on a second copy of the weights (opp[task.opp + nop]), so the second run finds the tile's
 * code in the SM's caches and its bytes as cold as the first's. Thread 0 stamps each run's start and end
 * (globaltimer): a run's span is its last end less its first start. */
__global__ void __launch_bounds__(ARK_THREADS, 1)
	phase_kernel(const ark_opp *opp, int nop, const ark_task *tasks, char *arena, unsigned long long *ts)
{
	extern __shared__ __align__(16) char smem[];
	const ark_task t = tasks[blockIdx.x];
	for (int r = 0; r < 2; r++) {
		if (threadIdx.x == 0)
			probe_run = r;
		__syncthreads();
		if (threadIdx.x == 0)
			ts[(2 * r) * gridDim.x + 2 * blockIdx.x] = ark_globaltimer();
		ark_tile(opp[t.opp + r * nop], t, {arena, nullptr, smem, 0, nullptr});
		__syncthreads();
		if (threadIdx.x == 0)
			ts[(2 * r) * gridDim.x + 2 * blockIdx.x + 1] = ark_globaltimer();
	}
}

/* The plain read of a phase's bytes, per_cta contiguous bytes per CTA, stamped as phase_kernel. */
__global__ void __launch_bounds__(ARK_THREADS, 1)
	phase_read_kernel(const uint4 *w, size_t per_cta, float *sink, unsigned long long *ts)
{
	if (threadIdx.x == 0)
		ts[2 * blockIdx.x] = ark_globaltimer();
	const float s = read_cta(w + blockIdx.x * per_cta / 16, per_cta / 16);
	if (s == 1.2345f)
		sink[0] = s;
	__syncthreads();
	if (threadIdx.x == 0)
		ts[2 * blockIdx.x + 1] = ark_globaltimer();
}

/* bf16 values of small magnitude from a hash of the index */
__global__ void fill_kernel(uint16_t *w, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		uint32_t x = (uint32_t)i * 0x9e3779b9u;
		x ^= x >> 15;
		x *= 0x846ca68bu;
		w[i] = (uint16_t)(0x3c00 | (x >> 16 & 0x83ff));
	}
}

/* The matmul phases of one Llama-3.2-1B decode layer (batch 1, bf16, weights [N, K]), tiled as arkgen
 * tiles them for 132 SMs, each phase on cold weights (a 256 MiB read between runs evicts L2): the
 * phase's span against a plain read of the same bytes by as many CTAs. What a phase costs beyond its
 * bytes is what a decode step pays per phase. */
static void phases(float *sink)
{
	struct mm {
		int N, K, tn;
	};
	struct phase {
		const char *name;
		std::vector<mm> ops;
	} ps[] = {{"q, k, v", {{2048, 2048, 32}, {512, 2048, 16}, {512, 2048, 16}}},
		  {"attn_output", {{2048, 2048, 16}}},
		  {"gate, up", {{8192, 2048, 128}, {8192, 2048, 128}}},
		  {"down", {{2048, 8192, 16}}}};
	const size_t flush_bytes = 256 * MiB, w_bytes = 68 * MiB, hdr = 1 * MiB;
	char *arena, *flush;
	CK(cudaMalloc(&arena, hdr + 2 * w_bytes));
	CK(cudaMalloc(&flush, flush_bytes));
	fill_kernel<<<1024, 256>>>((uint16_t *)arena, (hdr + 2 * w_bytes) / 2);
	fill_kernel<<<1024, 256>>>((uint16_t *)flush, flush_bytes / 2);
	unsigned long long *d_ts;
	CK(cudaMalloc(&d_ts, 4 * 1024 * sizeof(unsigned long long)));
	ark_opp *d_opp;
	ark_task *d_tasks;
	CK(cudaMalloc(&d_opp, 8 * sizeof(ark_opp)));
	CK(cudaMalloc(&d_tasks, 1024 * sizeof(ark_task)));
	CK(cudaFuncSetAttribute(phase_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, ARK_TILES_SMEM_BYTES));
	unsigned long long *d_st, *null_st = nullptr;
	const size_t st_n = 2 * 1024 * 64;
	CK(cudaMalloc(&d_st, st_n * sizeof(unsigned long long)));
	/* the stamps of a streaming tile (ARK_MM_STAMP), per CTA of run r: dispatch (start to entry), issue of
	 * the first steps, a staged, first step landed, the stream, the last warp, the epilogue, return */
	const char *seg[] = {"dispatch", "issue", "stage a", "first data", "stream", "last warp", "epilogue", "return"};
	std::vector<std::vector<double>> seg_us[2];
	typedef std::vector<unsigned long long> stamps_t;
	auto fetch = [&](int ctas) { /* the launch's start and end stamps, both runs (d_ts) */
		stamps_t ts(4 * ctas);
		CK(cudaDeviceSynchronize());
		CK(cudaGetLastError());
		CK(cudaMemcpy(ts.data(), d_ts, ts.size() * sizeof ts[0], cudaMemcpyDeviceToHost));
		return ts;
	};
	auto stamps = [&](const stamps_t &ts, int ctas) {
		stamps_t st(2 * ctas * 64);
		CK(cudaMemcpy(st.data(), d_st, st.size() * sizeof st[0], cudaMemcpyDeviceToHost));
		for (int r = 0; r < 2; r++)
			for (int c = 0; c < ctas; c++) {
				const unsigned long long *w0 = &st[(size_t)(r * ctas + c) * 64];
				unsigned long long p[9];
				p[0] = ts[2 * r * ctas + 2 * c];
				for (int i = 0; i < 7; i++)
					p[i + 1] = w0[i];
				const unsigned long long end = ts[2 * r * ctas + 2 * c + 1];
				for (int i = 0; i < 7; i++)
					seg_us[r][i].push_back(((double)p[i + 1] - (double)p[i]) / 1e3);
				seg_us[r][7].push_back(((double)end - (double)p[7]) / 1e3);
				seg_us[r][8].push_back(((double)end - (double)p[0]) / 1e3);
			}
	};
	auto span_us = [](const stamps_t &ts, int ctas, int run) {
		unsigned long long lo = ~0ull, hi = 0;
		for (int c = 0; c < ctas; c++)
			lo = std::min(lo, ts[2 * run * ctas + 2 * c]), hi = std::max(hi, ts[2 * run * ctas + 2 * c + 1]);
		return (hi - lo) / 1e3;
	};
	auto cta_us = [](const stamps_t &ts, int ctas) { /* the median CTA's duration, run 0 */
		std::vector<double> d;
		for (int c = 0; c < ctas; c++)
			d.push_back(((double)ts[2 * c + 1] - (double)ts[2 * c]) / 1e3);
		return bench_median(d);
	};
	auto cold = [&] {
		read_kernel<<<264, ARK_THREADS>>>((const uint4 *)flush, flush_bytes / 264 / 16 * 16, 0, sink);
	};
	printf("\n# the matmul phases of a Llama-3.2-1B decode layer, batch 1, bf16 [N, K] weights, cold L2; "
	       "span = last CTA's end - first CTA's start, median of 15\n");
	printf("| phase | CTAs | MB | tiles (us) | tiles (TB/s) | again, code cached (us) | plain read (us) | plain read (TB/s) | "
	       "plain read, median CTA (us) |\n|---|---|---|---|---|---|---|---|---|\n");
	for (const phase &ph : ps) {
		std::vector<ark_opp> opp;
		std::vector<ark_task> tasks;
		size_t w_at = hdr, out_at = 64 * KiB, bytes = 0;
		for (const mm &m : ph.ops) {
			ark_opp p;
			memset(&p, 0, sizeof p);
			p.kind = ARK_OP_MATMUL;
			p.dtype = ARK_BF16;
			p.flags = ARK_OPP_TRANSPOSE_B;
			p.act = ARK_ACT_NONE;
			p.splits = 1;
			p.in[0] = 0; /* a: [1, K] at the arena's start */
			p.in[1] = w_at;
			p.out = out_at;
			p.M = 1, p.N = m.N, p.K = m.K;
			for (int n0 = 0; n0 < m.N; n0 += m.tn) {
				ark_task t;
				memset(&t, 0, sizeof t);
				t.tmpl = ARK_T_MATMUL;
				t.opp = opp.size();
				t.m0 = 0, t.m1 = 1, t.n0 = n0, t.n1 = n0 + m.tn, t.k0 = 0, t.k1 = m.K;
				tasks.push_back(t);
			}
			opp.push_back(p);
			const size_t wb = (size_t)m.N * m.K * 2;
			w_at += wb, bytes += wb, out_at += (size_t)m.N * 2;
		}
		const int ctas = (int)tasks.size(), nop = (int)opp.size();
		for (int o = 0; o < nop; o++) { /* the second run's ops: the same on the second copy */
			opp.push_back(opp[o]);
			opp.back().in[1] += w_bytes;
		}
		CK(cudaMemcpy(d_opp, opp.data(), opp.size() * sizeof(ark_opp), cudaMemcpyHostToDevice));
		CK(cudaMemcpy(d_tasks, tasks.data(), tasks.size() * sizeof(ark_task), cudaMemcpyHostToDevice));
		std::vector<double> tile_us, again_us, read_us, read_cta_us;
		for (int r = 0; r < 2; r++)
			seg_us[r].assign(9, {});
		for (int r = 0; r <= 15; r++) {
			cold();
			CK(cudaMemcpyToSymbol(probe_stamps, &d_st, sizeof d_st));
			phase_kernel<<<ctas, ARK_THREADS, ARK_TILES_SMEM_BYTES>>>(d_opp, nop, d_tasks, arena, d_ts);
			const stamps_t ts = fetch(ctas);
			const double t = span_us(ts, ctas, 0), t2 = span_us(ts, ctas, 1);
			CK(cudaMemcpyToSymbol(probe_stamps, &null_st, sizeof null_st));
			if (r > 0)
				stamps(ts, ctas);
			cold();
			phase_read_kernel<<<ctas, ARK_THREADS>>>((const uint4 *)(arena + hdr), bytes / ctas / 16 * 16, sink, d_ts);
			const stamps_t rts = fetch(ctas);
			const double rd = span_us(rts, ctas, 0), rc = cta_us(rts, ctas);
			if (r > 0)
				tile_us.push_back(t), again_us.push_back(t2), read_us.push_back(rd), read_cta_us.push_back(rc);
		}
		const double t = bench_median(tile_us), t2 = bench_median(again_us), rd = bench_median(read_us);
		printf("| %s | %d | %.1f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", ph.name, ctas, bytes / 1e6, t,
		       bytes / (t * 1e6), t2, rd, bytes / (rd * 1e6), bench_median(read_cta_us));
		for (int r = 0; r < 2; r++) {
			printf("|   %s, per CTA (median us):", r ? "again" : "first");
			for (int i = 0; i < 8; i++)
				printf(" %s %.2f,", seg[i], bench_median(seg_us[r][i]));
			printf(" all %.2f | | | | | | | |\n", bench_median(seg_us[r][8]));
		}
	}
	CK(cudaFree(arena));
	CK(cudaFree(flush));
	CK(cudaFree(d_ts));
	CK(cudaFree(d_st));
	CK(cudaFree(d_opp));
	CK(cudaFree(d_tasks));
}

/* With the argument "q": the quantized rows of the first table only (for a profiler). */
int main(int argc, char **argv)
{
	if (argc > 2 || (argc == 2 && strcmp(argv[1], "q") != 0)) {
		fprintf(stderr, "usage: %s [q]\n  q: only the rows of q4_1 and q8_0 weights\n", argv[0]);
		return 2;
	}
	const bool quant_only = argc == 2;
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

	/* the 8 layers' params: [1, DIM] x [DIM, DIM] (flags: ARK_OPP_TRANSPOSE_B), b's dtype wdtype
	 * (0: bf16 as a) of wb bytes a layer */
	auto layer_opps = [&](int flags, int splits, int wdtype, size_t wb) {
		std::vector<ark_opp> opp(LAYERS);
		for (int l = 0; l < LAYERS; l++) {
			ark_opp &p = opp[l];
			memset(&p, 0, sizeof p);
			p.kind = ARK_OP_MATMUL;
			p.dtype = ARK_BF16;
			p.wdtype = (uint8_t)wdtype;
			p.flags = (uint8_t)flags;
			p.act = ARK_ACT_NONE;
			p.splits = splits;
			p.in[0] = a_off;
			p.in[1] = w_off + l * wb;
			p.out = out_off;
			p.ws = ws_off;
			p.M = 1, p.N = DIM, p.K = DIM;
		}
		return opp;
	};
	/* one task a CTA: columns of tn over splits slices of K */
	auto layer_tasks = [](int tn, int splits) {
		std::vector<ark_task> tasks;
		const int kc = DIM / splits;
		for (int n0 = 0; n0 < DIM; n0 += tn)
			for (int s = 0; s < splits; s++) {
				ark_task t;
				memset(&t, 0, sizeof t);
				t.tmpl = splits > 1 ? ARK_T_MATMUL_PARTIAL : ARK_T_MATMUL;
				t.split = s;
				t.m0 = 0, t.m1 = 1, t.n0 = n0, t.n1 = n0 + tn, t.k0 = s * kc, t.k1 = (s + 1) * kc;
				tasks.push_back(t);
			}
		return tasks;
	};
	/* the median time of the 8 layers' tiles (opp: one per layer, tasks: one per CTA) */
	auto time_layers = [&](const std::vector<ark_opp> &opp, const std::vector<ark_task> &tasks) {
		CK(cudaMemcpy(d_opp, opp.data(), LAYERS * sizeof(ark_opp), cudaMemcpyHostToDevice));
		CK(cudaMemcpy(d_tasks, tasks.data(), tasks.size() * sizeof(ark_task), cudaMemcpyHostToDevice));
		return bench_time_us(15, [&] {
			layers_kernel<<<(int)tasks.size(), ARK_THREADS, ARK_TILES_SMEM_BYTES>>>(d_opp, d_tasks, arena);
		});
	};
	struct variant {
		const char *name;
		bool tb;
		int tn, splits;
	} vs[] = {{"kn tn=32", false, 32, 1},          {"kn tn=64 split2", false, 64, 2},
		  {"kn tn=128 split4", false, 128, 4},
		  {"nk tn=32", true, 32, 1},          {"nk tn=128 split4", true, 128, 4}};
	for (const variant &v : vs) {
		if (quant_only)
			break;
		const std::vector<ark_opp> opp = layer_opps(v.tb ? ARK_OPP_TRANSPOSE_B : 0, v.splits, 0, wbytes);
		const std::vector<ark_task> tasks = layer_tasks(v.tn, v.splits);
		const double us = time_layers(opp, tasks);
		printf("| %s | %zu | %.1f | %.0f |\n", v.name, tasks.size(), us, LAYERS * wbytes / (us * 1e3));
	}
	for (int ctas : {128, 132, 264}) {
		if (quant_only)
			break;
		const size_t per = wbytes / ctas / 16 * 16;
		const double us = bench_time_us(15, [&] {
			read_kernel<<<ctas, ARK_THREADS>>>((const uint4 *)(arena + w_off), per, wbytes, sink);
		});
		printf("| contiguous read | %d | %.1f | %.0f |\n", ctas, us, LAYERS * per * ctas / (us * 1e3));
	}
	/* the same 8 layers' shape with block-quantized weights [N, K] (q4_1: 10.5 MB a layer, q8_0:
	 * 17.8 MB; 84 and 143 MB in all, past L2): the dequantising stream, a of bf16 */
	for (int qt : {(int)ARK_Q4_1, (int)ARK_Q8_0}) {
		const size_t qbytes = (size_t)DIM * (DIM / 32) * (qt == ARK_Q4_1 ? 20 : 34);
		for (int tn : {16, 32, 128}) {
			const std::vector<ark_opp> opp = layer_opps(ARK_OPP_TRANSPOSE_B, 1, qt, qbytes);
			const std::vector<ark_task> tasks = layer_tasks(tn, 1);
			const double us = time_layers(opp, tasks);
			printf("| %s nk tn=%d | %zu | %.1f | %.0f |\n", qt == ARK_Q4_1 ? "q4_1" : "q8_0", tn, tasks.size(), us,
			       LAYERS * qbytes / (us * 1e3));
		}
	}
	if (quant_only)
		return 0;
	CK(cudaFree(arena));
	phases(sink);
	return 0;
}
