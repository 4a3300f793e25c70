// tma_probe.cu: how fast an SM takes in the stages of a 16-bit 128 x 128 matmul tile held in L2, and
// whether the copies overlap what consumes them. Each CTA runs REPS tiles: a stage is a's 128 rows and
// b's 128 rows by 64 of k (32 KB, the 128-byte swizzle wgmma reads), K / 64 stages a tile, from a
// bf16 matrix of 8 MB that L2 holds. The rings: 16-byte cp.async of 256 threads (as
// templates/op_wgmma.cuh fills its ring today) and 2-D bulk tensor copies (the tensor memory
// accelerator, one thread issuing a box an operand a stage on an mbarrier), 3 or 6 stages, a stage
// freed by a CTA barrier after its consumer; bulk copies by a producer warp with full and empty
// mbarriers (7 consumer warps); bulk copies with those mbarriers and no CTA barrier, every warp a
// consumer; and the consumer alone. The consumer does nothing or takes 800 SM cycles (about what the
// MMAs of a stage take in the loop kernel's tile, bench/NOTES.md) in one of five ways (spin below),
// timed by the global timer too. A first launch checks that a stage copied both ways is the same
// bytes. Prints us a launch (median of 5) and a stage, for 32 CTAs and one an SM; then the streaming
// tiles' rings (each thread's own slots against a producer warp) from DRAM and from L2.
//
//   build/bench/tma_probe   (make bench-probe)
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <vector>
#include "bench_async.cuh"
#include "bench_cuda.h"

enum { T = 256, BK = 64, RP = 128, STAGE = 2 * RP * BK * 2, ROWS = 8192, K = 512, REPS = 16 };

/* the consumer of a stage, cyc SM cycles of it, the way g_kind says: 0 every warp reads the clock
 * until then, 1 every warp sleeps (__nanosleep) between its reads of the clock, 2 warp 0 alone spins
 * (the others go on to the barrier), 3 every warp runs a chain of dependent FMAs as long, 4 as 0 with
 * the next stage's copies issued before the consumer instead of after it, 5 as 0 without the
 * accounting below; thread 0 adds the nanoseconds it took to spun[CTA] (a load and a store of global
 * memory a stage, which may wait behind the copies in flight: kind 5 tells) */
__device__ int g_kind;
__device__ unsigned long long spun[1024];
__device__ float g_sink;
__device__ __forceinline__ void spin(int cyc, int kind)
{
	if (cyc <= 0)
		return;
	uint64_t g0, g1;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
	const long long t0 = clock64();
	if (kind == 3) {
		float x = threadIdx.x;
		for (int j = 0; j < cyc / 4; j++)
			x = fmaf(x, 1.0001f, 0.5f);
		if (x == -1.0f)
			g_sink = x;
	} else if (kind != 2 || threadIdx.x < 32) {
		while (clock64() - t0 < cyc)
			if (kind == 1)
				__nanosleep(64);
	}
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
	if (threadIdx.x == 0 && kind != 5)
		spun[blockIdx.x] += g1 - g0;
}

/* the rows of tile t of CTA c: a's and b's first row in the matrix */
__device__ __forceinline__ int arow(int c, int t) { return ((c * 7 + t * 3) % (ROWS / RP)) * RP; }
__device__ __forceinline__ int brow(int c, int t) { return ((c * 5 + t * 11 + 17) % (ROWS / RP)) * RP; }

/* Stage i of a CTA's run (tile i / (K / BK), k-tile i % (K / BK)) into shared memory at sa: by two bulk
 * tensor copies completing on mbarrier bar (one thread), or by the 16-byte cp.async of all threads
 * in the 128-byte swizzle (not committed). */
__device__ __forceinline__ void bulk_stage(const CUtensorMap *map, uint32_t sa, uint32_t bar, int i)
{
	const int t = i / (K / BK), kk = (i % (K / BK)) * BK;
	mb_expect(bar, STAGE);
	tma2d(sa, map, kk, arow(blockIdx.x, t), bar);
	tma2d(sa + RP * 128, map, kk, brow(blockIdx.x, t), bar);
}
__device__ __forceinline__ void cpa_stage(const uint16_t *m, uint32_t sa, int i)
{
	const int t = i / (K / BK), kk = (i % (K / BK)) * BK;
#pragma unroll
	for (int j = 0; j < STAGE / 16 / T; j++) {
		const int q = threadIdx.x + j * T, r = q >> 3, c = q & 7;
		const int row = r < RP ? arow(blockIdx.x, t) + r : brow(blockIdx.x, t) + r - RP;
		cpa16(sa + r * 128 + ((c ^ (r & 7)) << 4), m + (size_t)row * K + kk + c * 8);
	}
}
/* st full mbarriers (one arrival: the issuing thread's, with the stage's bytes) and, where consumers
 * > 0, st empty ones of that many arrivals; thread 0, before the CTA's first barrier */
__device__ __forceinline__ void ring_init(uint32_t full, uint32_t empty, int st, int consumers)
{
	for (int s = 0; s < st; s++) {
		mb_init(full + 8 * s, 1);
		if (consumers)
			mb_init(empty + 8 * s, consumers);
	}
	asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

/* the ring filled by bulk tensor copies: thread 0 issues a stage's two boxes on its mbarrier */
__global__ void __launch_bounds__(T, 1) kt(const __grid_constant__ CUtensorMap map, int st, int spin_cyc)
{
	const int kind = g_kind; /* read once: no global load a stage */
	extern __shared__ __align__(1024) char smem[];
	const uint32_t sbase = ((uint32_t)__cvta_generic_to_shared(smem) + 1023u) & ~1023u;
	const uint32_t bars = sbase + st * STAGE; /* st mbarriers of 8 bytes */
	const int tid = threadIdx.x, total = REPS * (K / BK);
	if (tid == 0)
		ring_init(bars, 0, st, 0);
	__syncthreads();
	auto load = [&](int i) {
		if (tid == 0 && i < total)
			bulk_stage(&map, sbase + (i % st) * STAGE, bars + 8 * (i % st), i);
	};
	for (int i = 0; i < st - 1; i++)
		load(i);
	for (int i = 0; i < total; i++) {
		mb_wait(bars + 8 * (i % st), (uint32_t)((i / st) & 1));
		const bool early = kind == 4; /* the slot of k-tile i - 1, freed by the last barrier */
		if (early)
			load(i + st - 1);
		spin(spin_cyc, kind);
		__syncthreads();
		if (!early)
			load(i + st - 1);
	}
}

/* The ring by warp specialization, as Hopper GEMMs run it: warp 0's lane 0 alone issues the bulk copies,
 * a stage once its empty barrier says the 7 consumer warps are done with the slot; the consumer warps
 * wait on the stage's full barrier, consume it and arrive on its empty one; no CTA barrier. */
__global__ void __launch_bounds__(T, 1) kw(const __grid_constant__ CUtensorMap map, int st, int spin_cyc)
{
	const int kind = g_kind; /* read once: no global load a stage */
	extern __shared__ __align__(1024) char smem[];
	const uint32_t sbase = ((uint32_t)__cvta_generic_to_shared(smem) + 1023u) & ~1023u;
	const uint32_t full = sbase + st * STAGE, empty = full + 8 * st;
	const int tid = threadIdx.x, warp = tid >> 5, total = REPS * (K / BK);
	if (tid == 0)
		ring_init(full, empty, st, T / 32 - 1);
	__syncthreads();
	if (warp == 0) {
		if (tid == 0)
			for (int i = 0; i < total; i++) {
				const int s = i % st;
				mb_wait(empty + 8 * s, (uint32_t)(((i / st) & 1) ^ 1)); /* the first round passes */
				bulk_stage(&map, sbase + s * STAGE, full + 8 * s, i);
			}
		return;
	}
	for (int i = 0; i < total; i++) {
		const int s = i % st;
		mb_wait(full + 8 * s, (uint32_t)((i / st) & 1));
		spin(spin_cyc, kind);
		__syncwarp();
		if ((tid & 31) == 0)
			mb_arrive(empty + 8 * s);
	}
}

/* Every warp a consumer, no CTA barrier: thread 0 issues k-tile i + st - 1 once it has seen stage i
 * land and the slot it refills (k-tile i - 1's) emptied by all 8 warps' arrivals, then consumes
 * stage i as the others do; each warp arrives on the stage's empty barrier when done with it. */
__global__ void __launch_bounds__(T, 1) kx(const __grid_constant__ CUtensorMap map, int st, int spin_cyc)
{
	const int kind = g_kind; /* read once: no global load a stage */
	extern __shared__ __align__(1024) char smem[];
	const uint32_t sbase = ((uint32_t)__cvta_generic_to_shared(smem) + 1023u) & ~1023u;
	const uint32_t full = sbase + st * STAGE, empty = full + 8 * st;
	const int tid = threadIdx.x, total = REPS * (K / BK);
	if (tid == 0)
		ring_init(full, empty, st, T / 32);
	__syncthreads();
	auto load = [&](int i) { bulk_stage(&map, sbase + (i % st) * STAGE, full + 8 * (i % st), i); };
	if (tid == 0)
		for (int i = 0; i < st - 1 && i < total; i++)
			load(i);
	for (int i = 0; i < total; i++) {
		const int s = i % st;
		mb_wait(full + 8 * s, (uint32_t)((i / st) & 1));
		const int j = i + st - 1; /* into k-tile i - 1's slot, once its 8 warps are done */
		if (tid == 0 && j < total) {
			if (i > 0)
				mb_wait(empty + 8 * (j % st), (uint32_t)(((i - 1) / st) & 1));
			load(j);
		}
		spin(spin_cyc, kind);
		__syncwarp();
		if ((tid & 31) == 0)
			mb_arrive(empty + 8 * s);
	}
}

/* The consumer alone, no copies: what a stage costs beside them. */
__global__ void __launch_bounds__(T, 1) kn(int spin_cyc)
{
	const int kind = g_kind; /* read once: no global load a stage */
	const int total = REPS * (K / BK);
	for (int i = 0; i < total; i++) {
		spin(spin_cyc, kind);
		__syncthreads();
	}
}

/* the cp.async ring waits for its oldest group only: a kernel per ring depth, as the tile's */
template <int ST> __global__ void __launch_bounds__(T, 1) kc(const uint16_t *m, int spin_cyc)
{
	const int kind = g_kind; /* read once: no global load a stage */
	extern __shared__ __align__(1024) char smem[];
	const uint32_t sbase = ((uint32_t)__cvta_generic_to_shared(smem) + 1023u) & ~1023u;
	const int total = REPS * (K / BK);
	auto load = [&](int i) {
		if (i < total)
			cpa_stage(m, sbase + (i % ST) * STAGE, i);
		asm volatile("cp.async.commit_group;\n" ::: "memory"); /* empty groups at the end */
	};
	for (int i = 0; i < ST - 1; i++)
		load(i);
	for (int i = 0; i < total; i++) {
		asm volatile("cp.async.wait_group %0;\n" ::"n"(ST - 2) : "memory");
		__syncthreads();
		const bool early = kind == 4; /* the slot of k-tile i - 1, freed by the last barrier */
		if (early)
			load(i + ST - 1);
		spin(spin_cyc, kind);
		__syncthreads();
		if (!early)
			load(i + ST - 1);
	}
}

/* one stage by both ways into two buffers, compared: the bulk copies' 128-byte swizzle is the ring's */
__global__ void __launch_bounds__(T, 1) same(const __grid_constant__ CUtensorMap map, const uint16_t *m, int *bad)
{
	extern __shared__ __align__(1024) char smem[];
	const uint32_t sbase = ((uint32_t)__cvta_generic_to_shared(smem) + 1023u) & ~1023u, bar = sbase + 2 * STAGE;
	const int tid = threadIdx.x, i = K / BK + 3; /* tile 1, k-tile 3 */
	if (tid == 0)
		ring_init(bar, 0, 1, 0);
	__syncthreads();
	cpa_stage(m, sbase, i);
	asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
	if (tid == 0)
		bulk_stage(&map, sbase + STAGE, bar, i);
	mb_wait(bar, 0);
	__syncthreads();
	const char *s0 = smem + (sbase - (uint32_t)__cvta_generic_to_shared(smem));
	int n = 0;
	for (int i = tid; i < STAGE; i += T)
		n += s0[i] != s0[STAGE + i];
	atomicAdd(bad, n);
}

/* ---- the streaming tiles' rings: each thread's own cp.async slots against a producer warp ----------
 * A step of the streaming tile of 8 rows: a lane takes 4 vectors of 16 bytes (4 columns of b, 8 of k
 * each) and does 8 rows x 4 x 8 = 256 FMA with them (or none). The CTA streams its own SB bytes of
 * buf, SREPS times (or the MB of CTA % wrap: a set L2 holds). kss: every thread copies its own 4
 * vectors SS - 1 steps ahead into its own slots and waits for its own copies (as ark_mm_stream_nk);
 * ksp: warp 0's lanes copy for the 7 other warps (a warp's step is 2 KB), each slot's copies
 * completing on its full mbarrier (cp.async.mbarrier.arrive.noinc, 32 arrivals), each consumer warp
 * waiting on it and freeing the slot on its empty mbarrier. */
enum { SS = 4, SV = 4, SB = 1 << 20, SREPS = 2 };
__device__ __forceinline__ void fma_step(const uint4 (&v)[SV], float (&acc)[8])
{
#pragma unroll
	for (int c = 0; c < SV; c++) {
		const uint32_t w[4] = {v[c].x, v[c].y, v[c].z, v[c].w};
#pragma unroll
		for (int j = 0; j < 4; j++) {
			const float lo = __uint_as_float(w[j] << 16), hi = __uint_as_float(w[j] & 0xffff0000u);
#pragma unroll
			for (int r = 0; r < 8; r++)
				acc[r] = fmaf(lo, acc[r] + 1e-7f * r, fmaf(hi, 0.999f, acc[r]));
		}
	}
}
__global__ void __launch_bounds__(T, 1) kss(const char *buf, int fma, int wrap, float *sink)
{
	extern __shared__ __align__(1024) char smem[];
	const int tid = threadIdx.x;
	const uint32_t ring = (uint32_t)__cvta_generic_to_shared(smem); /* [SS][SV][T] x 16 bytes */
	const char *src = buf + (size_t)(wrap ? blockIdx.x % wrap : blockIdx.x) * SB;
	const int steps = SB / (T * SV * 16);
	float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
	for (int rep = 0; rep < SREPS; rep++) {
		auto issue = [&](int i) {
			if (i < steps)
#pragma unroll
				for (int c = 0; c < SV; c++)
					cpa16(ring + (((i % SS) * SV + c) * T + tid) * 16, src + ((size_t)(i * SV + c) * T + tid) * 16);
			asm volatile("cp.async.commit_group;\n" ::: "memory");
		};
		for (int i = 0; i < SS - 1; i++)
			issue(i);
		for (int i = 0; i < steps; i++) {
			asm volatile("cp.async.wait_group %0;\n" ::"n"(SS - 2) : "memory");
			issue(i + SS - 1);
			uint4 v[SV];
#pragma unroll
			for (int c = 0; c < SV; c++)
				v[c] = *reinterpret_cast<const uint4 *>(smem + (((i % SS) * SV + c) * T + tid) * 16);
			if (fma)
				fma_step(v, acc);
			else
				acc[0] += __uint_as_float(v[0].x ^ v[SV - 1].w);
		}
		asm volatile("cp.async.wait_group 0;\n" ::: "memory");
		__syncthreads();
	}
	float t = 0;
	for (int r = 0; r < 8; r++)
		t += acc[r];
	if (t == 1.2345f)
		sink[0] = t;
}
__global__ void __launch_bounds__(T, 1) ksp(const char *buf, int fma, int wrap, float *sink)
{
	extern __shared__ __align__(1024) char smem[];
	const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, CW = T / 32 - 1; /* consumer warps */
	const uint32_t ring = (uint32_t)__cvta_generic_to_shared(smem); /* [SS][CW][SV][32] x 16 bytes */
	const uint32_t full = ring + SS * CW * SV * 32 * 16, empty = full + 8 * SS * CW;
	const char *src = buf + (size_t)(wrap ? blockIdx.x % wrap : blockIdx.x) * SB;
	const int wbytes = 32 * SV * 16, steps = SB / (CW * wbytes); /* a consumer warp's bytes a step */
	if (tid == 0) {
		for (int b = 0; b < SS * CW; b++) {
			mb_init(full + 8 * b, 32);
			mb_init(empty + 8 * b, 1);
		}
		asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
	}
	__syncthreads();
	float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
	int n = 0; /* steps this CTA has run over the reps: the slots' phases */
	for (int rep = 0; rep < SREPS; rep++, n += steps) {
		if (warp == 0) {
			for (int i = 0; i < steps; i++) {
				const int g = n + i, s = g % SS;
				for (int w = 0; w < CW; w++) {
					const int b = s * CW + w;
					mb_wait(empty + 8 * b, (uint32_t)(((g / SS) & 1) ^ 1));
#pragma unroll
					for (int c = 0; c < SV; c++)
						cpa16(ring + ((b * SV + c) * 32 + lane) * 16,
						      src + ((size_t)i * CW * wbytes + w * wbytes + (c * 32 + lane) * 16));
					asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(full + 8 * b) : "memory");
				}
			}
		} else {
			const int w = warp - 1;
			for (int i = 0; i < steps; i++) {
				const int g = n + i, b = (g % SS) * CW + w;
				mb_wait(full + 8 * b, (uint32_t)((g / SS) & 1));
				uint4 v[SV];
#pragma unroll
				for (int c = 0; c < SV; c++)
					v[c] = *reinterpret_cast<const uint4 *>(smem + ((b * SV + c) * 32 + lane) * 16);
				__syncwarp();
				if (lane == 0)
					mb_arrive(empty + 8 * b);
				if (fma)
					fma_step(v, acc);
				else
					acc[0] += __uint_as_float(v[0].x ^ v[SV - 1].w);
			}
		}
	}
	float t = 0;
	for (int r = 0; r < 8; r++)
		t += acc[r];
	if (t == 1.2345f)
		sink[0] = t;
}

int main()
{
	int sms = 0;
	CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	cudaDeviceProp p;
	CK(cudaGetDeviceProperties(&p, 0));
	printf("# %s, %d SMs; stages of 128 + 128 rows x 64 bf16 (32 KB) from a matrix [%d, %d] held in L2, %d tiles of %d stages a CTA\n",
	       p.name, sms, ROWS, K, REPS, K / BK);
	uint16_t *m;
	CK(cudaMalloc(&m, (size_t)ROWS * K * 2));
	std::vector<uint16_t> h((size_t)ROWS * K);
	for (size_t i = 0; i < h.size(); i++)
		h[i] = (uint16_t)(0x3c00 + (i * 2654435761u >> 20) % 512);
	CK(cudaMemcpy(m, h.data(), h.size() * 2, cudaMemcpyHostToDevice));

	const CUtensorMap map = bench_tmap_bf16(m, ROWS, K, RP);
	const int maxsm = 227 * 1024;
	CK(cudaFuncSetAttribute(kt, cudaFuncAttributeMaxDynamicSharedMemorySize, maxsm));
	CK(cudaFuncSetAttribute(kw, cudaFuncAttributeMaxDynamicSharedMemorySize, maxsm));
	CK(cudaFuncSetAttribute(kx, cudaFuncAttributeMaxDynamicSharedMemorySize, maxsm));
	CK(cudaFuncSetAttribute(kc<3>, cudaFuncAttributeMaxDynamicSharedMemorySize, maxsm));
	CK(cudaFuncSetAttribute(kc<6>, cudaFuncAttributeMaxDynamicSharedMemorySize, maxsm));

	CK(cudaFuncSetAttribute(same, cudaFuncAttributeMaxDynamicSharedMemorySize, maxsm));
	int *d_bad, bad = -1;
	CK(cudaMalloc(&d_bad, 4));
	CK(cudaMemset(d_bad, 0, 4));
	same<<<sms, T, 1024 + 2 * STAGE + 8>>>(map, m, d_bad);
	CK(cudaGetLastError());
	CK(cudaMemcpy(&bad, d_bad, 4, cudaMemcpyDeviceToHost));
	printf("# a stage by bulk tensor copies against cp.async, every CTA: %d bytes differ%s\n", bad, bad ? " (WRONG)" : "");

	static const char *const kinds[] = {"every warp reads the clock", "every warp sleeps between reads", "warp 0 alone spins",
					    "every warp's FMA chain", "the clock, next copies issued first",
					    "every warp reads the clock, no accounting in global memory"};
	printf("| CTAs | consumer cycles a stage (its ns) | kind | cp.async 3 stages | cp.async 6 | bulk tensor 3 | bulk tensor 6 |"
	       " bulk tensor 6, warp-specialized | bulk tensor 6, no CTA barrier | the consumer alone |\n"
	       "|---|---|---|---|---|---|---|---|---|---|\n");
	const int ctas_list[] = {32, sms};
	for (int ctas : ctas_list)
		for (int sp : {0, 800})
			for (int kind = 0; kind < (sp ? 6 : 1); kind++) {
				CK(cudaMemcpyToSymbol(g_kind, &kind, sizeof kind));
				double us[7];
				for (int v = 0; v < 7; v++) {
					const int st = v % 2 ? 6 : 3;
					const size_t sh = 1024 + (size_t)st * STAGE + 16 * st;
					us[v] = bench_time_us(5, [&] {
						if (v == 0)
							kc<3><<<ctas, T, sh>>>(m, sp);
						else if (v == 1)
							kc<6><<<ctas, T, sh>>>(m, sp);
						else if (v < 4)
							kt<<<ctas, T, sh>>>(map, st, sp);
						else if (v == 4)
							kw<<<ctas, T, 1024 + 6 * STAGE + 16 * 6>>>(map, 6, sp);
						else if (v == 5)
							kx<<<ctas, T, 1024 + 6 * STAGE + 16 * 6>>>(map, 6, sp);
						else
							kn<<<ctas, T>>>(sp);
					});
					CK(cudaGetLastError());
				}
				/* the consumer's own time, ns a stage, CTA 0's thread 0 over the launches of the four rings
				 * (the warp-specialized ring's thread 0 consumes nothing) */
				unsigned long long ns0 = 0;
				CK(cudaMemcpyFromSymbol(&ns0, spun, 8));
				static const unsigned long long zero[1024] = {0};
				CK(cudaMemcpyToSymbol(spun, zero, sizeof zero));
				printf("| %d | %d (%.0f ns) | %s |", ctas, sp, sp ? ns0 / (36.0 * REPS * (K / BK)) : 0.0,
				       sp ? kinds[kind] : "none");
				for (int v = 0; v < 7; v++)
					printf(" %.1f us, %.2f us a stage |", us[v], us[v] / (REPS * (K / BK)));
				printf("\n");
			}
	/* the streaming rings: each CTA its own 1 MB, from DRAM (every CTA a new MB each launch) or L2 */
	{
		const int big = 512;
		char *buf;
		float *sink;
		CK(cudaMalloc(&buf, (size_t)big * SB));
		CK(cudaMemset(buf, 0x3c, (size_t)big * SB));
		CK(cudaMalloc(&sink, 4));
		CK(cudaFuncSetAttribute(kss, cudaFuncAttributeMaxDynamicSharedMemorySize, maxsm));
		CK(cudaFuncSetAttribute(ksp, cudaFuncAttributeMaxDynamicSharedMemorySize, maxsm));
		const size_t shs = SS * SV * T * 16, shp = SS * 7 * SV * 32 * 16 + 16 * SS * 7;
		printf("\n| streaming rings, %d CTAs, 1 MB each x %d | own slots, no FMA | own slots, 8 rows of FMA | producer warp, no FMA |"
		       " producer warp, 8 rows of FMA |\n|---|---|---|---|---|\n", sms, SREPS);
		for (int l2 = 0; l2 < 2; l2++) {
			double us[4];
			int launch = 0;
			for (int v = 0; v < 4; v++)
				us[v] = bench_time_us(5, [&] {
					/* from DRAM: the next CTAs' MBs each launch (512 MB in all); from L2: the same */
					const char *b0 = buf + (l2 ? 0 : (size_t)((launch++ * sms) % (big - sms)) * SB);
					if (v < 2)
						kss<<<sms, T, shs>>>(b0, v & 1, l2 ? 24 : 0, sink);
					else
						ksp<<<sms, T, shp>>>(b0, v & 1, l2 ? 24 : 0, sink);
				});
			CK(cudaGetLastError());
			printf("| %s |", l2 ? "L2 (24 MB, 5-6 CTAs a MB)" : "DRAM (132 MB of 512, others each launch)");
			for (int v = 0; v < 4; v++)
				printf(" %.1f us, %.2f TB/s |", us[v], (double)sms * SB * SREPS / us[v] / 1e6);
			printf("\n");
		}
		CK(cudaFree(buf));
		CK(cudaFree(sink));
	}
	CK(cudaFree(m));
	return 0;
}
