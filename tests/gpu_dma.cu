// gpu_dma.cu: TAP test of the DMA engine's CUDA backend on one GPU (dma/cuda_backend.c): copies from
// one part of an arena to another, each followed by its flag write, while a kernel on another stream
// polls the flag with ld.acquire.sys, as a loop kernel's wait does, and then checks every word of the
// copy. A flag seen before its data shows up as wrong words. Every flag mode, sizes from 64 B to
// 16 MiB, each round with data of its own (so stale words of an earlier round are wrong too).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

#include "ark_memorder.cuh"
#include "dma.h"

#define SRC_OFF 0ull
#define DST_OFF (20ull << 20)
#define ARENA (40ull << 20)
#define FLAG 3
#define MAX_ROUNDS 64

static int n_tests, n_failed;

static int tap(int ok, const char *what)
{
	printf("%sok %d - %s\n", ok ? "" : "not ", ++n_tests, what);
	n_failed += !ok;
	return ok;
}

static __host__ __device__ uint32_t word_of(uint32_t round, uint32_t j)
{
	uint32_t x = round * 0x9e3779b9u ^ j * 0x85ebca6bu;
	x ^= x >> 13;
	x *= 0xc2b2ae35u;
	x ^= x >> 16;
	return x;
}

/* Mapped host memory the checker reports through. */
struct report {
	uint32_t ack;               /* last round checked */
	uint32_t bad[MAX_ROUNDS + 1]; /* wrong words per round */
};

/* Round r = 1..n: waits for flag >= r (acquire, system scope), checks words[r] words of dst, reports. */
__global__ void checker(const uint32_t *flag, const uint32_t *dst, const uint32_t *words, int n, struct report *rep)
{
	__shared__ uint32_t bad;
	for (uint32_t r = 1; r <= (uint32_t)n; r++) {
		if (threadIdx.x == 0) {
			bad = 0;
			while ((int32_t)(ark_ld_acquire_sys(flag) - r) < 0)
				;
		}
		__syncthreads();
		/* volatile: the copy engine rewrites dst while this kernel runs, so no load of it may come
		 * from the read-only path or a line cached in an earlier round */
		const volatile uint32_t *d = dst;
		uint32_t mine = 0;
		for (uint32_t j = threadIdx.x; j < words[r]; j += blockDim.x)
			mine += d[j] != word_of(r, j);
		if (mine)
			atomicAdd(&bad, mine);
		__syncthreads();
		if (threadIdx.x == 0) {
			ark_st_relaxed_sys(&rep->bad[r], bad);
			ark_st_release_sys(&rep->ack, r);
		}
	}
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(void)
{
	int ndev = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		printf("1..0 # SKIP no CUDA device\n");
		return 0;
	}
	static const uint32_t sizes[] = {64, 4096, 65548, 1u << 20, (1u << 20) + 4, 4u << 20, 16u << 20};
	static const int modes[] = {DMA_FLAGS_SAME_STREAM, DMA_FLAGS_EVENT, DMA_FLAGS_AUTO};
	const int n_sizes = sizeof sizes / sizeof *sizes, rounds = 3 * n_sizes * 2;
	char *arena = NULL;
	uint32_t *counters = NULL, *words = NULL, hwords[MAX_ROUNDS + 1] = {0};
	struct report *rep = NULL, *drep = NULL;
	cudaStream_t st, up;
	struct dma_cuda *c = NULL;
	struct dma_backend be;
	uint32_t *host = NULL;

	if (cudaMalloc(&arena, ARENA) || cudaMalloc(&counters, 64 * 4) || cudaMemset(counters, 0, 64 * 4) ||
	    cudaMalloc(&words, sizeof hwords) || cudaHostAlloc(&rep, sizeof *rep, cudaHostAllocMapped) ||
	    cudaHostGetDevicePointer(&drep, rep, 0) || cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) ||
	    cudaStreamCreateWithFlags(&up, cudaStreamNonBlocking) || cudaMallocHost(&host, 16u << 20)) {
		printf("1..1\nnot ok 1 - set-up: %s\n", cudaGetErrorString(cudaGetLastError()));
		return 1;
	}
	memset(rep, 0, sizeof *rep);
	void *arenas[1] = {arena};
	uint32_t *ctrs[1] = {counters};
	if (!tap(dma_cuda_create(&c, 1, arenas, ctrs, &be) == DMA_OK, "the CUDA backend on GPU 0")) {
		printf("# %s\n1..%d\n", dma_last_error(), n_tests);
		return 1;
	}
	printf("# flag writes: %s\n", dma_cuda_flag_write(c));
	for (int r = 1; r <= rounds; r++)
		hwords[r] = sizes[(r - 1) % n_sizes] / 4;
	cudaMemcpy(words, hwords, sizeof hwords, cudaMemcpyHostToDevice);
	checker<<<1, 512, 0, st>>>(counters + FLAG, (const uint32_t *)(arena + DST_OFF), words, rounds, drep);

	int ok_calls = 1, timeouts = 0, r;
	uint64_t wrong = 0;
	char what[200];
	for (r = 1; r <= rounds && ok_calls; r++) {
		int mode = modes[(r - 1) / (2 * n_sizes) % 3];
		if ((r - 1) % (2 * n_sizes) == 0)
			ok_calls &= dma_cuda_set_flag_mode(c, mode) == DMA_OK;
		for (uint32_t j = 0; j < hwords[r]; j++)
			host[j] = word_of(r, j);
		/* once the checker is done with round r - 1 (so its copy has read the source and its
		 * destination is free): the source of round r */
		for (double t0 = now_s(); __atomic_load_n(&rep->ack, __ATOMIC_ACQUIRE) != (uint32_t)r - 1;)
			if (now_s() - t0 > 5) {
				timeouts++;
				break;
			}
		/* from pinned memory on a stream of its own, waited for: a cudaMemcpy from pageable memory
		 * may return before its bytes reach the device, and the engine's stream is not ordered
		 * after the legacy stream, so the copy could read the previous round's source */
		ok_calls &= cudaMemcpyAsync(arena + SRC_OFF, host, hwords[r] * 4ull, cudaMemcpyHostToDevice, up) == cudaSuccess &&
			    cudaStreamSynchronize(up) == cudaSuccess;
		ok_calls &= be.copy(be.ctx, 0, SRC_OFF, 0, DST_OFF, hwords[r] * 4ull) == DMA_OK;
		ok_calls &= be.signal(be.ctx, 0, 0, 0, FLAG, (uint32_t)r) == DMA_OK;
	}
	tap(ok_calls && r == rounds + 1, "every copy and flag write enqueued");
	for (double t0 = now_s(); __atomic_load_n(&rep->ack, __ATOMIC_ACQUIRE) != (uint32_t)rounds;)
		if (now_s() - t0 > 5) {
			timeouts++;
			break;
		}
	cudaError_t e = cudaStreamSynchronize(st);
	snprintf(what, sizeof what, "the checker saw every flag (%d timeouts, kernel: %s)", timeouts, cudaGetErrorString(e));
	tap(timeouts == 0 && e == cudaSuccess, what);
	for (int m = 0; m < 3; m++) {
		uint64_t bad = 0;
		for (r = 1 + m * 2 * n_sizes; r <= (m + 1) * 2 * n_sizes; r++)
			bad += __atomic_load_n(&rep->bad[r], __ATOMIC_ACQUIRE);
		wrong += bad;
		snprintf(what, sizeof what, "flag mode %s: every word read after its flag is the round's (%llu wrong), "
			 "64 B to 16 MiB", m == 0 ? "SAME_STREAM" : m == 1 ? "EVENT" : "AUTO", (unsigned long long)bad);
		tap(bad == 0, what);
	}
	dma_cuda_destroy(c);
	printf("1..%d\n", n_tests);
	return n_failed ? 1 : 0;
}
