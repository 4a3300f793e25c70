// bench_comm.cu: GPU 0 <-> GPU 1 transfer latency and throughput against message size (the ARK paper's
// experiment): (a) host-driven kernels + cudaMemcpyPeerAsync, (b) persistent kernels through the
// software DMA engine (dma/), (c) persistent kernels storing into peer memory, and up to 1 MiB
// (c-LL) the same with packets that carry their own flag (a probe: generated code does not use it
// yet); plus one-directional streaming throughput of cudaMemcpyPeerAsync and of the DMA engine. Prints tables; exits 1 on any
// wrong byte or timeout, 0 with a SKIP line on a machine with fewer than 2 GPUs.
#include <cuda_runtime.h>

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include <cuda.h> /* driver API types only (cuStreamWriteValue32 is resolved at run time) */

#include "dma.h"
#include "dma_device.cuh"
#include "ark_memorder.cuh"

#include "bench_cuda.h"

#define MAX_BYTES (64 * MiB)       /* largest message */
#define THREADS 512                /* threads per CTA of every kernel */
#define MAX_CTAS 256               /* (c): sending CTAs at most (one flag each) */
#define N_FLAGS 1024               /* flags per GPU */
#define F_DMA 0                    /* (b): receiver's flag of the ping-pong */
#define F_STREAM_SRC 1             /* (b) streaming: sender's flag after the last request */
#define F_STREAM_DST 2             /* (b) streaming: receiver's flag (nobody waits on it) */
#define F_P2P 64                   /* (c): [F_P2P, F_P2P + MAX_CTAS), one per sending CTA */
#define F_API (N_FLAGS - 1)        /* --api: flag written by cuStreamWriteValue32 */
#define API_CALLS 4000             /* --api: timed calls per row */
#define RING_CAP 4096              /* DMA ring slots per GPU */
#define MAX_TS (1u << 20)          /* globaltimer stamps per run */
#define S_OFF 0ull                 /* arena offset of the send buffer S [MAX_BYTES] */
#define R_OFF MAX_BYTES            /* arena offset of the receive buffer R [MAX_BYTES] */
#define LL_MAX (1 * MiB)           /* (c-LL): largest message (its packets take twice the bytes) */
#define LL_OFF (MAX_BYTES / 2)     /* (c-LL): arena offset of the packets received, inside S's upper half */

static const uint64_t sizes[] = { 8, 64, 512, 4 * KiB, 32 * KiB, 256 * KiB, 1 * MiB, 4 * MiB, 16 * MiB,
				  64 * MiB };
#define N_SIZES (sizeof(sizes) / sizeof(sizes[0]))

/* ---- host <-> device control block (mapped pinned host memory) ------------------------------ */
enum { W_NONE, W_DATA, W_RETURN, W_SRC_FLAG, W_RING };
static const char *const where_name[] = { "?", "its data flag (message from the other GPU)",
					   "its return flag (round trip back from GPU 1)",
					   "its source flag (last streamed request done)",
					   "a free slot of its DMA ring" };

struct side_diag {                 /* the first wait of one GPU that timed out */
	uint32_t timed_out, where, iter, index, seen, want, cta, pad;
};

struct side_bad {                  /* checksum mismatches seen by one GPU (only its CTA 0 checks) */
	uint32_t n, iter;          /* count, round trip of the first */
	unsigned long long got, want;
};

struct bench_ctl {
	uint32_t abort;            /* set by the host (timeout) or by a kernel whose wait timed out */
	uint32_t pad0[31];
	struct side_diag side[2];
	struct side_bad bad[2];
};

/* Arguments of the persistent kernels (one per GPU). */
struct pp_args {
	int side;                  /* 0: GPU 0 (sends first, takes the time), 1: GPU 1 (sends back) */
	int check;                 /* every arrival: checksum of the received buffer against want_sum */
	uint32_t n_iter;           /* round trips, warm-up included; streaming: requests */
	uint32_t chunks;           /* (b): chunks per request, i.e. flag steps per request */
	uint64_t bytes;
	unsigned long long want_sum;
	unsigned long long timeout_ns; /* longest single wait */
	const char *src;           /* local buffer that is sent: S on GPU 0, R on GPU 1 */
	char *dst;                 /* (c): the peer's receive buffer R */
	const char *recv;          /* local receive buffer R */
	unsigned long long *peer_ll; /* (c-LL): the peer's packet buffer [words] */
	const unsigned long long *ll; /* (c-LL): this GPU's packet buffer [words] */
	uint32_t *flags;           /* local flags [N_FLAGS] */
	uint32_t *peer_flags;      /* (c): the peer's flags [N_FLAGS] */
	struct dma_ring_shm *ring; /* (b): this GPU's ring, device pointer of mapped memory */
	struct dma_dev_prod *prod; /* (b): its producer state in this GPU's memory */
	struct bench_ctl *ctl;     /* device pointer of the control block */
	unsigned long long *ts;    /* side 0: [n_iter + 1] globaltimer stamps */
	struct dma_req req;        /* (b): request template (offsets, GPUs, bytes, flag index) */
};

/* ---- checksum (host and device): position-dependent, order-independent sum ----------------- */
static __host__ __device__ __forceinline__ uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

static __host__ __device__ __forceinline__ uint64_t word_sum(uint64_t w, uint64_t k)
{
	return mix64(w ^ (k * 0x9e3779b97f4a7c15ull));
}

/* Records this GPU's first timed-out wait and tells everybody to leave. */
static __device__ void record_timeout(const pp_args &a, uint32_t where, uint32_t iter, uint32_t index,
				      uint32_t seen, uint32_t want)
{
	struct side_diag *d = &a.ctl->side[a.side];
	if (ark_ld_relaxed_sys(&d->timed_out) == 0) {
		ark_st_relaxed_sys(&d->where, where);
		ark_st_relaxed_sys(&d->iter, iter);
		ark_st_relaxed_sys(&d->index, index);
		ark_st_relaxed_sys(&d->seen, seen);
		ark_st_relaxed_sys(&d->want, want);
		ark_st_relaxed_sys(&d->cta, blockIdx.x);
		ark_st_release_sys(&d->timed_out, 1);
	}
	ark_st_release_sys(&a.ctl->abort, 1);
}

/* Spins until (int32_t)(*flag - want) >= 0 (ld.acquire.sys). Returns 0, or 1 when the wait outlasted
 * a.timeout_ns (recorded) or somebody raised the abort flag. */
static __device__ int wait_flag(const pp_args &a, const uint32_t *flag, uint32_t want, uint32_t where,
				uint32_t iter, uint32_t index)
{
	unsigned long long start = 0;
	for (uint32_t spins = 1;; spins++) {
		uint32_t v = ark_ld_acquire_sys(flag);
		if ((int32_t)(v - want) >= 0)
			return 0;
		if ((spins & 255) == 0) {
			unsigned long long now = ark_globaltimer();
			if (start == 0)
				start = now;
			else if (now - start > a.timeout_ns) {
				record_timeout(a, where, iter, index, v, want);
				return 1;
			}
			if ((spins & 4095) == 0 && ark_ld_relaxed_sys(&a.ctl->abort))
				return 1;
		}
	}
}

/* Checksum of p[0, bytes) by the whole CTA (every thread calls it); the result is valid in thread 0. */
static __device__ unsigned long long block_checksum(const char *p, uint64_t bytes)
{
	__shared__ unsigned long long part[THREADS / 32];
	const uint64_t *w = (const uint64_t *)p; /* [bytes / 8] */
	uint64_t s = 0;

	for (uint64_t k = threadIdx.x; k < bytes / 8; k += blockDim.x)
		s += word_sum(w[k], k);
	for (int o = 16; o > 0; o >>= 1)
		s += __shfl_down_sync(0xffffffffu, s, o);
	if ((threadIdx.x & 31) == 0)
		part[threadIdx.x / 32] = s;
	__syncthreads();
	if (threadIdx.x == 0) {
		s = 0;
		for (int i = 0; i < (int)(blockDim.x / 32); i++)
			s += part[i];
	}
	__syncthreads(); /* part[] may be rewritten by the next call */
	return s;
}

/* The whole CTA verifies the received buffer; thread 0 records a mismatch. One CTA per GPU checks,
 * so the record of a side has one writer (no atomics on mapped memory). The host reads it after the
 * kernel ended. */
static __device__ void check_recv(const pp_args &a, uint32_t iter)
{
	unsigned long long s = block_checksum(a.recv, a.bytes);
	if (threadIdx.x == 0 && s != a.want_sum) {
		volatile struct side_bad *b = &a.ctl->bad[a.side];
		if (b->n == 0) {
			b->iter = iter;
			b->got = s;
			b->want = a.want_sum;
		}
		b->n = b->n + 1;
		__threadfence_system();
	}
}

/* Barrier that tells every thread whether any thread must leave. With check == 0 only thread 0
 * runs the protocol (the others returned), so there is no barrier. */
static __device__ __forceinline__ int leave(const pp_args &a, int bad)
{
	return a.check ? __syncthreads_or(bad) : bad;
}

/* (b) The DMA engine: thread 0 pushes a request per message and waits on its flag, which the
 * dispatcher raises with cuStreamWriteValue32 after the copy. One CTA. */
__global__ void __launch_bounds__(THREADS) dma_pingpong_kernel(pp_args a)
{
	const int t0 = threadIdx.x == 0;
	if (!a.check && !t0)
		return;
	if (t0 && a.side == 0)
		a.ts[0] = ark_globaltimer();
	for (uint32_t i = 0; i < a.n_iter; i++) {
		const uint32_t v = (i + 1) * a.chunks; /* the last chunk of message i raises the flag to v */
		if (a.side == 1) {
			int bad = t0 && wait_flag(a, a.flags + F_DMA, v, W_DATA, i, F_DMA);
			if (leave(a, bad))
				return;
			if (a.check)
				check_recv(a, i);
		}
		int bad = 0;
		if (t0) {
			struct dma_req q = a.req;
			q.flag_value = v;
			if (dma_dev_push(a.ring, a.prod, &q, &a.ctl->abort) != 0)
				bad = 1;
		}
		if (a.side == 0) {
			bad = bad || (t0 && wait_flag(a, a.flags + F_DMA, v, W_RETURN, i, F_DMA));
			if (leave(a, bad))
				return;
			if (t0)
				a.ts[i + 1] = ark_globaltimer();
			if (a.check)
				check_recv(a, i);
		} else if (leave(a, bad))
			return;
	}
}

/* (b) streaming: one thread pushes n_iter requests back to back; the last one also raises the
 * sender's flag after its last chunk, which is the end of the stream (copies are in order). */
__global__ void dma_stream_kernel(pp_args a)
{
	if (threadIdx.x != 0)
		return;
	a.ts[0] = ark_globaltimer();
	for (uint32_t k = 0; k < a.n_iter; k++) {
		struct dma_req q = a.req;
		q.flag_value = (k + 1) * a.chunks;
		if (k + 1 == a.n_iter) {
			q.flags = DMA_F_SRC_FLAG;
			q.src_flag_index = F_STREAM_SRC;
			q.src_flag_value = 1;
		}
		if (dma_dev_push(a.ring, a.prod, &q, &a.ctl->abort) != 0)
			return;
	}
	if (wait_flag(a, a.flags + F_STREAM_SRC, 1, W_SRC_FLAG, a.n_iter, F_STREAM_SRC))
		return;
	a.ts[1] = ark_globaltimer();
}

/* (c) this CTA's share of src[0, bytes) -> dst (the peer's memory), 16-byte words, four loads in
 * flight per thread; the 8-byte tail (bytes % 16 == 8) goes with the last CTA. */
static __device__ __forceinline__ void copy_slice(char *dst, const char *src, uint64_t bytes)
{
	const uint4 *s = (const uint4 *)src; /* [bytes / 16] */
	uint4 *d = (uint4 *)dst;
	const uint64_t n16 = bytes / 16, g = gridDim.x, c = blockIdx.x;
	const uint64_t end = n16 * (c + 1) / g;
	uint64_t k = n16 * c / g + threadIdx.x;

	for (; k + 3 * THREADS < end; k += 4 * THREADS) {
		uint4 x0 = s[k], x1 = s[k + THREADS], x2 = s[k + 2 * THREADS], x3 = s[k + 3 * THREADS];
		d[k] = x0;
		d[k + THREADS] = x1;
		d[k + 2 * THREADS] = x2;
		d[k + 3 * THREADS] = x3;
	}
	for (; k < end; k += THREADS)
		d[k] = s[k];
	if ((bytes & 15) != 0 && c == g - 1 && threadIdx.x == 0)
		((uint64_t *)dst)[bytes / 8 - 1] = ((const uint64_t *)src)[bytes / 8 - 1];
}

/* (c) Peer stores: every CTA stores its slice into the peer's buffer, then thread 0 fences at system
 * scope and raises its own flag on the peer (st.release.sys). The receiver's threads 0 .. grid-1
 * each wait on one sender's flag, then the CTA syncs: the whole message is there. */
__global__ void __launch_bounds__(THREADS) p2p_pingpong_kernel(pp_args a)
{
	const int tid = threadIdx.x, cta = blockIdx.x, g = gridDim.x;
	if (a.side == 0 && cta == 0 && tid == 0)
		a.ts[0] = ark_globaltimer();
	for (uint32_t i = 0; i < a.n_iter; i++) {
		const uint32_t v = i + 1;
		if (a.side == 1) {
			int bad = tid < g && wait_flag(a, a.flags + F_P2P + tid, v, W_DATA, i, F_P2P + tid);
			if (__syncthreads_or(bad))
				return;
			if (a.check && cta == 0)
				check_recv(a, i);
		}
		copy_slice(a.dst, a.src, a.bytes);
		__syncthreads();
		if (tid == 0) {
			__threadfence_system();
			ark_st_release_sys(a.peer_flags + F_P2P + cta, v);
		}
		if (a.side == 0) {
			int bad = tid < g && wait_flag(a, a.flags + F_P2P + tid, v, W_RETURN, i, F_P2P + tid);
			if (__syncthreads_or(bad))
				return;
			if (cta == 0 && tid == 0)
				a.ts[i + 1] = ark_globaltimer();
			if (a.check && cta == 0)
				check_recv(a, i);
		}
	}
}

/* (c-LL) Packets that carry their own flag: word k of the message (4 bytes) goes to the peer as one
 * 8-byte store {word, round trip + 1}, single-copy atomic, so the receiver polls the packets
 * themselves and no fence or separate flag is needed (the protocol NCCL calls LL). Each thread sends
 * and receives the same words, so the receiver's unpack and its send back need no barrier; in
 * checked runs one CTA does everything (the checksum reads the whole buffer). bytes % 8 == 0. */

/* Waits for this thread's packets of round trip `flag` and unpacks them into recv. 0, or 1 on a
 * timeout (recorded) or abort. */
static __device__ int ll_receive(const pp_args &a, uint32_t flag, uint32_t where, uint32_t iter)
{
	const uint64_t words = a.bytes / 4, step = (uint64_t)gridDim.x * blockDim.x;
	uint32_t *recv = (uint32_t *)a.recv;
	for (uint64_t k = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; k < words; k += step) {
		unsigned long long start = 0, p;
		for (uint32_t spins = 1; (uint32_t)((p = ark_ld_relaxed_sys_u64(a.ll + k)) >> 32) != flag; spins++)
			if ((spins & 1023) == 0) {
				unsigned long long now = ark_globaltimer();
				if (start == 0)
					start = now;
				else if (now - start > a.timeout_ns) {
					record_timeout(a, where, iter, (uint32_t)k, (uint32_t)(p >> 32), flag);
					return 1;
				}
				if (ark_ld_relaxed_sys(&a.ctl->abort))
					return 1;
			}
		recv[k] = (uint32_t)p;
	}
	return 0;
}

__global__ void __launch_bounds__(THREADS) p2p_ll_pingpong_kernel(pp_args a)
{
	const uint64_t words = a.bytes / 4, step = (uint64_t)gridDim.x * blockDim.x;
	const uint32_t *src = (const uint32_t *)a.src;
	if (a.side == 0 && blockIdx.x == 0 && threadIdx.x == 0)
		a.ts[0] = ark_globaltimer();
	for (uint32_t i = 0; i < a.n_iter; i++) {
		const uint32_t flag = i + 1;
		if (a.side == 1) {
			if (__syncthreads_or(ll_receive(a, flag, W_DATA, i)))
				return;
			if (a.check)
				check_recv(a, i);
		}
		for (uint64_t k = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; k < words; k += step)
			ark_st_relaxed_sys_u64(a.peer_ll + k, (unsigned long long)src[k] | (unsigned long long)flag << 32);
		if (a.side == 0) {
			if (__syncthreads_or(ll_receive(a, flag, W_RETURN, i)))
				return;
			if (blockIdx.x == 0 && threadIdx.x == 0)
				a.ts[i + 1] = ark_globaltimer();
			if (a.check)
				check_recv(a, i);
		}
	}
}

/* (a) The kernel of the host-driven round trip: nothing in timed runs; in checked runs the CTA
 * verifies the buffer that just arrived. */
__global__ void __launch_bounds__(THREADS) step_kernel(pp_args a, uint32_t iter)
{
	if (a.check)
		check_recv(a, iter);
}

/* Smallest step of %globaltimer seen in a tight loop. */
__global__ void timer_res_kernel(unsigned long long *out)
{
	unsigned long long t = ark_globaltimer(), best = ~0ull;
	for (int i = 0; i < 200000; i++) {
		unsigned long long u = ark_globaltimer();
		if (u != t) {
			best = u - t < best ? u - t : best;
			t = u;
		}
	}
	*out = best;
}

/* ---- host state -------------------------------------------------------------------------------- */
struct gpu {
	char *arena;                /* [2 * MAX_BYTES]: S at S_OFF, R at R_OFF */
	uint32_t *flags;            /* [N_FLAGS] */
	cudaStream_t stream;        /* non-blocking; the benchmark's kernels and copies */
	struct dma_ring ring;
	struct dma_ring_shm *ring_dev;
	struct dma_dev_prod *prod;  /* the ring's producer state, on this GPU */
	cudaDeviceProp prop;
};

struct opts {
	double scale;               /* repetition multiplier */
	uint64_t max_bytes;
	uint64_t chunk;             /* DMA first chunk bytes */
	uint64_t chunk_max;         /* DMA largest chunk bytes (chunks double from `chunk` up to it) */
	int max_ctas;               /* (c) grid cap */
	int flags;                  /* DMA flag modes to measure: 1 same stream, 2 event, 3 both */
	int api;                    /* --api: only the CPU cost of the CUDA calls */
	double timeout_s;           /* longest single device wait */
};

/* One measurement: one-way latency of a method at one size. */
struct cell {
	int valid;
	double oneway_us;           /* median over windows of round trips / 2 */
	double mean_us, p10_us, p90_us; /* one-way */
	uint32_t reps, win;         /* timed round trips; round trips per window */
	int ctas;
};

struct row {
	uint64_t bytes;
	struct cell m[3];           /* (a) cpu, (b) dma (the first --flags mode), (c) p2p */
	double stream_gbps[2];      /* memcpyPeer, dma (the first --flags mode); 0 if not measured */
	struct cell ev;             /* --flags both: (b) with DMA_FLAGS_EVENT */
	struct cell ll;             /* (c-LL), up to LL_MAX */
	double stream_ev;           /* --flags both: DMA streaming with DMA_FLAGS_EVENT */
	uint32_t stream_copies;
};

static struct gpu gp[2];
static struct bench_ctl *ctl, *ctl_dev;    /* mapped control block */
static unsigned long long *ts_dev;         /* [MAX_TS] on GPU 0 */
static unsigned long long *ts_host;        /* [MAX_TS] */
static uint8_t *data;                      /* [MAX_BYTES] pinned: the message */
static uint8_t *back;                      /* [MAX_BYTES] pinned: what came back */
static struct dma_cuda *dcu;
static struct dma_backend dbe;
static struct dma_engine eng;
static struct opts opt;
static double timer_res_ns;

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static void sleep_us(long us)
{
	struct timespec t = { us / 1000000, (us % 1000000) * 1000 };
	while (nanosleep(&t, &t) != 0 && errno == EINTR)
		;
}

static const char *size_str(uint64_t b, char *buf, size_t n)
{
	if (b >= MiB && b % MiB == 0)
		snprintf(buf, n, "%" PRIu64 " MiB", b / MiB);
	else if (b >= KiB && b % KiB == 0)
		snprintf(buf, n, "%" PRIu64 " KiB", b / KiB);
	else
		snprintf(buf, n, "%" PRIu64 " B", b);
	return buf;
}

static void fill_random(uint8_t *p, uint64_t bytes, uint64_t seed) /* bytes % 8 == 0 */
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull, *w = (uint64_t *)p;
	for (uint64_t k = 0; k < bytes / 8; k++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		w[k] = s * 0x2545f4914f6cdd1dull;
	}
}

static uint64_t host_checksum(const uint8_t *p, uint64_t bytes)
{
	const uint64_t *w = (const uint64_t *)p;
	uint64_t s = 0;
	for (uint64_t k = 0; k < bytes / 8; k++)
		s += word_sum(w[k], k);
	return s;
}

static double median_of(std::vector<double> &v, double q)
{
	if (v.empty())
		return 0;
	std::sort(v.begin(), v.end());
	size_t i = (size_t)(q * (double)(v.size() - 1) + 0.5);
	return v[i];
}

/* Round trips per size (timed ones; warm-up comes on top). */
static uint32_t reps_for(uint64_t bytes)
{
	uint32_t n = bytes <= 32 * KiB ? 3000 : bytes <= 256 * KiB ? 2000 : bytes <= 1 * MiB ? 1000
		   : bytes <= 4 * MiB ? 300 : bytes <= 16 * MiB ? 100 : 40;
	double s = n * opt.scale;
	if (s < 10)
		s = 10;
	if (s > MAX_TS / 2)
		s = MAX_TS / 2;
	return (uint32_t)s;
}

static uint32_t warm_for(uint32_t reps)
{
	uint32_t w = reps / 20;
	return w < 10 ? 10 : w;
}

/* (c) grid: one CTA per 16 KiB, at most opt.max_ctas. */
static int p2p_ctas(uint64_t bytes)
{
	uint64_t n = (bytes + 16 * KiB - 1) / (16 * KiB);
	return n < 1 ? 1 : n > (uint64_t)opt.max_ctas ? opt.max_ctas : (int)n;
}

/* Round-trip times rt[0 .. n) (ns) -> the cell: windows of w round trips, so that a coarse timer
 * is averaged over a window; median, p10, p90 over windows, mean over all. One-way = / 2. */
static void fill_cell(struct cell *c, const std::vector<double> &rt, double res_ns)
{
	double sum = 0;
	for (double x : rt)
		sum += x;
	double mean = rt.empty() ? 0 : sum / (double)rt.size();
	uint32_t w = 1;
	if (res_ns * 50 > mean && mean > 0)
		w = (uint32_t)(res_ns * 50 / mean) + 1;
	if (w > rt.size() / 20)
		w = rt.size() / 20 > 0 ? (uint32_t)(rt.size() / 20) : 1;
	std::vector<double> win;
	for (size_t k = 0; k + w <= rt.size(); k += w) {
		double s = 0;
		for (size_t j = 0; j < w; j++)
			s += rt[k + j];
		win.push_back(s / w);
	}
	c->valid = 1;
	c->reps = (uint32_t)rt.size();
	c->win = w;
	c->mean_us = mean / 2e3;
	c->p10_us = median_of(win, 0.1) / 2e3;
	c->p90_us = median_of(win, 0.9) / 2e3;
	c->oneway_us = median_of(win, 0.5) / 2e3;
}

/* ---- setup of one measurement --------------------------------------------------------------- */
static void reset_ctl(void)
{
	memset(ctl, 0, sizeof(*ctl));
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* Fresh random message in S of GPU 0, both receive buffers poisoned, every flag 0. Returns the
 * message's checksum. */
static uint64_t prepare(uint64_t bytes, uint64_t seed)
{
	fill_random(data, bytes, seed);
	for (int g = 0; g < 2; g++) {
		CK(cudaSetDevice(g));
		CK(cudaMemset(gp[g].arena + R_OFF, 0xa5, bytes));
		CK(cudaMemset(gp[g].flags, 0, N_FLAGS * sizeof(uint32_t)));
		CK(cudaDeviceSynchronize());
	}
	CK(cudaMemcpy(gp[0].arena + S_OFF, data, bytes, cudaMemcpyHostToDevice));
	return host_checksum(data, bytes);
}

/* Poisons both receive buffers and clears the flags again (between the checked and timed runs). */
static void repoison(uint64_t bytes)
{
	for (int g = 0; g < 2; g++) {
		CK(cudaSetDevice(g));
		CK(cudaMemset(gp[g].arena + R_OFF, 0xa5, bytes));
		CK(cudaMemset(gp[g].flags, 0, N_FLAGS * sizeof(uint32_t)));
		CK(cudaDeviceSynchronize());
	}
}

/* The receive buffer of GPU g must hold the message. */
static void verify_recv(const char *what, int g, uint64_t bytes)
{
	char sz[32];
	CK(cudaMemcpy(back, gp[g].arena + R_OFF, bytes, cudaMemcpyDeviceToHost));
	if (memcmp(back, data, bytes) == 0)
		return;
	uint64_t i = 0;
	while (back[i] == data[i])
		i++;
	fprintf(stderr, "FAIL: %s, %s: receive buffer of GPU %d differs from the message at byte %" PRIu64
		" (0x%02x, expected 0x%02x)\n", what, size_str(bytes, sz, sizeof(sz)), g, i, back[i], data[i]);
	printf("FAIL: %s: wrong data on GPU %d\n", what, g);
	exit(1);
}

static void check_kernel_checks(const char *what, uint64_t bytes)
{
	char sz[32];
	int bad = 0;
	for (int g = 0; g < 2; g++) {
		const struct side_bad *b = &ctl->bad[g];
		if (__atomic_load_n(&b->n, __ATOMIC_ACQUIRE) == 0)
			continue;
		fprintf(stderr, "FAIL: %s, %s: GPU %d saw %u wrong messages; first at round trip %u: checksum "
			"%016llx, expected %016llx\n", what, size_str(bytes, sz, sizeof(sz)), g, b->n, b->iter,
			b->got, b->want);
		bad = 1;
	}
	if (!bad)
		return;
	printf("FAIL: %s: checksum mismatch\n", what);
	exit(1);
}

/* Reports a device-side timeout (or a host-side one) and exits 1. */
static void fail_timeout(const char *what, uint64_t bytes, int host_gave_up)
{
	char sz[32];
	size_str(bytes, sz, sizeof(sz));
	for (int g = 0; g < 2; g++) {
		const struct side_diag *d = &ctl->side[g];
		if (__atomic_load_n(&d->timed_out, __ATOMIC_ACQUIRE))
			fprintf(stderr, "TIMEOUT: %s, %s: GPU %d (CTA %u) waited more than %.1f s on %s, "
				"round trip %u: flag %u = %u, wanted %u\n", what, sz, g, d->cta, opt.timeout_s,
				where_name[d->where < 5 ? d->where : 0], d->iter, d->index, d->seen, d->want);
	}
	if (host_gave_up)
		fprintf(stderr, "TIMEOUT: %s, %s: the kernels did not finish in time%s\n", what, sz,
			host_gave_up > 1 ? " and ignored the abort flag for 10 s" : "; abort flag raised by the host");
	if (eng.running)
		fprintf(stderr, "DMA engine: %s\n", dma_engine_last_error(&eng));
	printf("FAIL: %s: timeout\n", what);
	exit(1);
}

/* Waits for the streams of GPUs [0, n) with a host-side deadline; then checks the kernels' records. */
static void wait_streams(const char *what, uint64_t bytes, int n, double limit_s)
{
	double t0 = now_s(), t_abort = 0;
	int gave_up = 0;
	for (;;) {
		int done = 0;
		for (int g = 0; g < n; g++) {
			cudaError_t e = cudaStreamQuery(gp[g].stream);
			if (e == cudaSuccess)
				done++;
			else if (e != cudaErrorNotReady) {
				fprintf(stderr, "FAIL: %s: GPU %d: %s\n", what, g, cudaGetErrorString(e));
				exit(1);
			}
		}
		if (done == n)
			break;
		double t = now_s();
		if (!gave_up && t - t0 > limit_s) {
			__atomic_store_n(&ctl->abort, 1u, __ATOMIC_RELEASE);
			gave_up = 1;
			t_abort = t;
		} else if (gave_up && t - t_abort > 10)
			fail_timeout(what, bytes, 2);
		sleep_us(500); /* rarely: the DMA dispatcher calls into the CUDA runtime meanwhile */
	}
	for (int g = 0; g < n; g++) {
		CK(cudaSetDevice(g));
		CK(cudaGetLastError());
	}
	if (gave_up || __atomic_load_n(&ctl->abort, __ATOMIC_ACQUIRE))
		fail_timeout(what, bytes, gave_up);
}

static struct pp_args base_args(int side, uint64_t bytes, uint32_t n_iter, int check, uint64_t want)
{
	struct pp_args a;
	memset(&a, 0, sizeof(a));
	a.side = side;
	a.check = check;
	a.n_iter = n_iter;
	a.chunks = 1;
	a.bytes = bytes;
	a.want_sum = want;
	a.timeout_ns = (unsigned long long)(opt.timeout_s * 1e9);
	a.src = gp[side].arena + (side == 0 ? S_OFF : R_OFF);
	a.dst = gp[1 - side].arena + R_OFF;
	a.recv = gp[side].arena + R_OFF;
	a.peer_ll = (unsigned long long *)(gp[1 - side].arena + LL_OFF);
	a.ll = (const unsigned long long *)(gp[side].arena + LL_OFF);
	a.flags = gp[side].flags;
	a.peer_flags = gp[1 - side].flags;
	a.ring = gp[side].ring_dev;
	a.prod = gp[side].prod;
	a.ctl = ctl_dev;
	a.ts = side == 0 ? ts_dev : NULL;
	return a;
}

/* Launches kern on both GPUs (cooperatively: all CTAs co-resident) and waits. */
static void launch_pair(const char *what, const void *kern, int grid, struct pp_args a[2])
{
	reset_ctl();
	for (int g = 1; g >= 0; g--) { /* the waiting side first */
		void *args[] = { &a[g] };
		CK(cudaSetDevice(g));
		CK(cudaLaunchCooperativeKernel(kern, dim3(grid), dim3(THREADS), args, 0, gp[g].stream));
	}
	wait_streams(what, a[0].bytes, 2, opt.timeout_s * 4 + 60);
}

/* Round-trip times (ns) of the timed iterations, from GPU 0's stamps. */
static std::vector<double> stamps_to_rt(uint32_t warm, uint32_t n_iter)
{
	std::vector<double> rt;
	CK(cudaSetDevice(0));
	CK(cudaMemcpy(ts_host, ts_dev, (n_iter + 1) * sizeof(*ts_host), cudaMemcpyDeviceToHost));
	for (uint32_t i = warm; i < n_iter; i++)
		rt.push_back((double)(ts_host[i + 1] - ts_host[i]));
	return rt;
}

/* ---- (a) host-driven: kernel, sync, cudaMemcpyPeerAsync, sync, kernel on the other GPU ... ---- */
static void cpu_round_trip(uint64_t bytes, struct pp_args a[2], uint32_t iter, int check)
{
	CK(cudaSetDevice(0));
	step_kernel<<<1, THREADS, 0, gp[0].stream>>>(a[0], iter);
	CK(cudaGetLastError());
	CK(cudaStreamSynchronize(gp[0].stream));
	CK(cudaMemcpyPeerAsync(gp[1].arena + R_OFF, 1, gp[0].arena + S_OFF, 0, bytes, gp[0].stream));
	CK(cudaStreamSynchronize(gp[0].stream));
	CK(cudaSetDevice(1));
	step_kernel<<<1, THREADS, 0, gp[1].stream>>>(a[1], iter);
	CK(cudaGetLastError());
	CK(cudaStreamSynchronize(gp[1].stream));
	CK(cudaMemcpyPeerAsync(gp[0].arena + R_OFF, 0, gp[1].arena + R_OFF, 1, bytes, gp[1].stream));
	CK(cudaStreamSynchronize(gp[1].stream));
	if (check) { /* the message came back: GPU 0 checks it too */
		CK(cudaSetDevice(0));
		struct pp_args c = a[0];
		c.check = 1;
		step_kernel<<<1, THREADS, 0, gp[0].stream>>>(c, iter);
		CK(cudaGetLastError());
		CK(cudaStreamSynchronize(gp[0].stream));
	}
}

static void run_cpu(uint64_t bytes, uint64_t seed, struct cell *c)
{
	const char *what = "(a) host-driven cudaMemcpyPeerAsync";
	uint64_t want = prepare(bytes, seed);
	uint32_t reps = reps_for(bytes), warm = warm_for(reps);
	struct pp_args a[2] = { base_args(0, bytes, 0, 1, want), base_args(1, bytes, 0, 1, want) };

	reset_ctl();
	/* checked: GPU 0's kernel does not check (nothing arrived yet), GPU 1's does, then GPU 0's */
	a[0].check = 0;
	for (uint32_t i = 0; i < 3; i++)
		cpu_round_trip(bytes, a, i, 1);
	check_kernel_checks(what, bytes);
	verify_recv(what, 1, bytes);
	verify_recv(what, 0, bytes);
	repoison(bytes);

	a[0].check = a[1].check = 0;
	std::vector<double> rt;
	for (uint32_t i = 0; i < warm + reps; i++) {
		double t0 = now_s();
		cpu_round_trip(bytes, a, i, 0);
		double t1 = now_s();
		if (i >= warm)
			rt.push_back((t1 - t0) * 1e9);
	}
	verify_recv(what, 1, bytes);
	verify_recv(what, 0, bytes);
	fill_cell(c, rt, 1.0);
	c->ctas = 1;
}

/* ---- (b) persistent kernels + the DMA engine --------------------------------------------------- */
static void engine_start(void)
{
	struct dma_options o;
	memset(&o, 0, sizeof(o));
	o.chunk_bytes = opt.chunk;
	o.chunk_max_bytes = opt.chunk_max;
	o.idle_us = 10u * 1000u * 1000u; /* keep busy-polling through the run: measure the transport */
	for (int g = 0; g < 2; g++) {
		o.arena_bytes[g] = 2 * MAX_BYTES;
		o.n_flags[g] = N_FLAGS;
	}
	struct dma_ring rings[2] = { gp[0].ring, gp[1].ring };
	if (dma_engine_start(&eng, rings, 2, &dbe, &o) != DMA_OK) {
		fprintf(stderr, "FAIL: dma_engine_start: %s\n", dma_last_error());
		exit(1);
	}
}

static void engine_stop(const char *what, uint64_t expect_requests)
{
	struct dma_stats st;
	if (dma_engine_stop(&eng, &st) != DMA_OK) {
		fprintf(stderr, "FAIL: dma_engine_stop: %s\n", dma_last_error());
		exit(1);
	}
	if (dma_cuda_sync(dcu) != DMA_OK) {
		fprintf(stderr, "FAIL: %s: dma_cuda_sync: %s\n", what, dma_last_error());
		exit(1);
	}
	if (eng.failed || st.rejected || st.backend_errors || st.requests != expect_requests) {
		fprintf(stderr, "FAIL: %s: DMA engine: %" PRIu64 " requests (expected %" PRIu64 "), %" PRIu64
			" rejected, %" PRIu64 " backend errors: %s\n", what, st.requests, expect_requests,
			st.rejected, st.backend_errors, dma_engine_last_error(&eng));
		printf("FAIL: %s: DMA engine error\n", what);
		exit(1);
	}
}

/* Selects where the CUDA backend writes flags (the engine is stopped between measurements). */
static void set_flags(int mode)
{
	if (dma_cuda_set_flag_mode(dcu, mode) != DMA_OK) {
		fprintf(stderr, "FAIL: dma_cuda_set_flag_mode: %s\n", dma_last_error());
		exit(1);
	}
}

static uint32_t chunks_of(uint64_t bytes)
{
	return (uint32_t)dma_chunk_count(bytes, opt.chunk, opt.chunk_max);
}

static void dma_args(struct pp_args *a, int side, uint64_t bytes)
{
	a->chunks = chunks_of(bytes);
	memset(&a->req, 0, sizeof(a->req));
	a->req.src_gpu = (uint32_t)side;
	a->req.dst_gpu = (uint32_t)(1 - side);
	a->req.src_off = side == 0 ? S_OFF : R_OFF;
	a->req.dst_off = R_OFF;
	a->req.bytes = bytes;
	a->req.flag_index = F_DMA;
}

static void run_dma(uint64_t bytes, uint64_t seed, struct cell *c)
{
	const char *what = "(b) persistent kernels + DMA engine";
	uint64_t want = prepare(bytes, seed);
	uint32_t reps = reps_for(bytes), warm = warm_for(reps);
	struct pp_args a[2] = { base_args(0, bytes, 3, 1, want), base_args(1, bytes, 3, 1, want) };

	dma_args(&a[0], 0, bytes);
	dma_args(&a[1], 1, bytes);
	engine_start();
	launch_pair(what, (const void *)dma_pingpong_kernel, 1, a);
	check_kernel_checks(what, bytes);
	verify_recv(what, 1, bytes);
	verify_recv(what, 0, bytes);
	if (dma_cuda_sync(dcu) != DMA_OK) {
		fprintf(stderr, "FAIL: dma_cuda_sync: %s\n", dma_last_error());
		exit(1);
	}
	repoison(bytes);

	for (int g = 0; g < 2; g++) {
		a[g].check = 0;
		a[g].n_iter = warm + reps;
	}
	launch_pair(what, (const void *)dma_pingpong_kernel, 1, a);
	engine_stop(what, 2ull * (3 + warm + reps));
	verify_recv(what, 1, bytes);
	verify_recv(what, 0, bytes);
	fill_cell(c, stamps_to_rt(warm, warm + reps), timer_res_ns);
	c->ctas = 1;
}

/* ---- (c) persistent kernels + peer stores ------------------------------------------------------ */
static void run_p2p(uint64_t bytes, uint64_t seed, struct cell *c)
{
	const char *what = "(c) persistent kernels + peer stores";
	uint64_t want = prepare(bytes, seed);
	uint32_t reps = reps_for(bytes), warm = warm_for(reps);
	int grid = p2p_ctas(bytes);
	struct pp_args a[2] = { base_args(0, bytes, 3, 1, want), base_args(1, bytes, 3, 1, want) };

	launch_pair(what, (const void *)p2p_pingpong_kernel, grid, a);
	check_kernel_checks(what, bytes);
	verify_recv(what, 1, bytes);
	verify_recv(what, 0, bytes);
	repoison(bytes);

	for (int g = 0; g < 2; g++) {
		a[g].check = 0;
		a[g].n_iter = warm + reps;
	}
	launch_pair(what, (const void *)p2p_pingpong_kernel, grid, a);
	verify_recv(what, 1, bytes);
	verify_recv(what, 0, bytes);
	fill_cell(c, stamps_to_rt(warm, warm + reps), timer_res_ns);
	c->ctas = grid;
}

/* Packets of an earlier run hold flags 1, 2, ...: every run starts from zeroed packet buffers. */
static void clear_ll(uint64_t bytes)
{
	for (int g = 0; g < 2; g++) {
		CK(cudaSetDevice(g));
		CK(cudaMemset(gp[g].arena + LL_OFF, 0, 2 * bytes));
		CK(cudaDeviceSynchronize());
	}
}

static void run_ll(uint64_t bytes, uint64_t seed, struct cell *c)
{
	const char *what = "(c-LL) persistent kernels + flagged packets";
	uint64_t want = prepare(bytes, seed);
	uint32_t reps = reps_for(bytes), warm = warm_for(reps);
	int grid = p2p_ctas(2 * bytes);
	struct pp_args a[2] = { base_args(0, bytes, 3, 1, want), base_args(1, bytes, 3, 1, want) };

	clear_ll(bytes);
	launch_pair(what, (const void *)p2p_ll_pingpong_kernel, 1, a);
	check_kernel_checks(what, bytes);
	verify_recv(what, 1, bytes);
	verify_recv(what, 0, bytes);
	repoison(bytes);

	clear_ll(bytes);
	for (int g = 0; g < 2; g++) {
		a[g].check = 0;
		a[g].n_iter = warm + reps;
	}
	launch_pair(what, (const void *)p2p_ll_pingpong_kernel, grid, a);
	verify_recv(what, 1, bytes);
	verify_recv(what, 0, bytes);
	fill_cell(c, stamps_to_rt(warm, warm + reps), timer_res_ns);
	c->ctas = grid;
}

/* ---- one-directional streaming ------------------------------------------------------------------ */
#define STREAM_RUNS 5

static uint32_t stream_copies(uint64_t bytes)
{
	uint64_t k = (uint64_t)(1024 * MiB * (opt.scale < 1 ? opt.scale : 1)) / bytes;
	return k < 8 ? 8 : (uint32_t)k;
}

/* K back-to-back cudaMemcpyPeerAsync GPU 0 -> GPU 1 on one stream, timed with events. */
static double stream_memcpy(uint64_t bytes, uint64_t seed)
{
	const char *what = "streaming cudaMemcpyPeerAsync";
	uint32_t k = stream_copies(bytes);
	cudaEvent_t e0, e1;
	std::vector<double> gbps;

	prepare(bytes, seed);
	CK(cudaSetDevice(0));
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	CK(cudaMemcpyPeerAsync(gp[1].arena + R_OFF, 1, gp[0].arena + S_OFF, 0, bytes, gp[0].stream));
	CK(cudaStreamSynchronize(gp[0].stream));
	verify_recv(what, 1, bytes);
	for (int r = 0; r < STREAM_RUNS; r++) {
		float ms = 0;
		CK(cudaEventRecord(e0, gp[0].stream));
		for (uint32_t i = 0; i < k; i++)
			CK(cudaMemcpyPeerAsync(gp[1].arena + R_OFF, 1, gp[0].arena + S_OFF, 0, bytes, gp[0].stream));
		CK(cudaEventRecord(e1, gp[0].stream));
		CK(cudaEventSynchronize(e1));
		CK(cudaEventElapsedTime(&ms, e0, e1));
		gbps.push_back((double)bytes * k / (ms * 1e-3) / 1e9);
	}
	CK(cudaEventDestroy(e0));
	CK(cudaEventDestroy(e1));
	return median_of(gbps, 0.5);
}

/* A GPU 0 kernel pushes K requests GPU 0 -> GPU 1 back to back; time from the first push to the
 * sender's flag after the last chunk (globaltimer of GPU 0). */
static double stream_dma(uint64_t bytes, uint64_t seed)
{
	const char *what = "streaming DMA engine";
	uint32_t k = stream_copies(bytes);
	std::vector<double> gbps;

	prepare(bytes, seed);
	struct pp_args a = base_args(0, bytes, k, 0, 0);
	dma_args(&a, 0, bytes);
	a.req.flag_index = F_STREAM_DST;
	engine_start();
	for (int r = 0; r < STREAM_RUNS; r++) {
		void *args[] = { &a };
		reset_ctl();
		for (int g = 1; g >= 0; g--) { /* ends on GPU 0 */
			CK(cudaSetDevice(g));
			CK(cudaMemset(gp[g].flags, 0, N_FLAGS * sizeof(uint32_t)));
			if (g == 1 && r == 0) /* the first run lands on a poisoned buffer */
				CK(cudaMemset(gp[1].arena + R_OFF, 0xa5, bytes));
			CK(cudaDeviceSynchronize());
		}
		CK(cudaLaunchKernel((const void *)dma_stream_kernel, dim3(1), dim3(32), args, 0, gp[0].stream));
		wait_streams(what, bytes, 1, opt.timeout_s * 4 + 60);
		if (r == 0)
			verify_recv(what, 1, bytes);
		CK(cudaMemcpy(ts_host, ts_dev, 2 * sizeof(*ts_host), cudaMemcpyDeviceToHost));
		gbps.push_back((double)bytes * k / (double)(ts_host[1] - ts_host[0]));
		if (dma_cuda_sync(dcu) != DMA_OK) {
			fprintf(stderr, "FAIL: dma_cuda_sync: %s\n", dma_last_error());
			exit(1);
		}
	}
	engine_stop(what, (uint64_t)k * STREAM_RUNS);
	verify_recv(what, 1, bytes);
	return median_of(gbps, 0.5);
}

/* ---- setup ---------------------------------------------------------------------------------------- */
static void setup(void)
{
	void *arenas[2];
	uint32_t *counters[2];

	CK(cudaHostAlloc((void **)&ctl, sizeof(*ctl), cudaHostAllocMapped | cudaHostAllocPortable));
	CK(cudaHostGetDevicePointer((void **)&ctl_dev, ctl, 0));
	CK(cudaMallocHost((void **)&data, MAX_BYTES));
	CK(cudaMallocHost((void **)&back, MAX_BYTES));
	CK(cudaMallocHost((void **)&ts_host, MAX_TS * sizeof(*ts_host)));
	for (int g = 0; g < 2; g++) {
		CK(cudaSetDevice(g));
		CK(cudaGetDeviceProperties(&gp[g].prop, g));
		CK(cudaMalloc((void **)&gp[g].arena, 2 * MAX_BYTES));
		CK(cudaMalloc((void **)&gp[g].flags, N_FLAGS * sizeof(uint32_t)));
		CK(cudaMemset(gp[g].flags, 0, N_FLAGS * sizeof(uint32_t)));
		CK(cudaStreamCreateWithFlags(&gp[g].stream, cudaStreamNonBlocking));
		cudaError_t e = cudaDeviceEnablePeerAccess(1 - g, 0);
		if (e == cudaErrorPeerAccessAlreadyEnabled)
			(void)cudaGetLastError();
		else
			CK(e);
		if (dma_cuda_ring_alloc(&gp[g].ring, RING_CAP, &gp[g].ring_dev) != DMA_OK ||
		    dma_cuda_dev_prod_alloc(&gp[g].ring, &gp[g].prod) != DMA_OK) {
			fprintf(stderr, "FAIL: DMA ring of GPU %d: %s\n", g, dma_last_error());
			exit(1);
		}
		arenas[g] = gp[g].arena;
		counters[g] = gp[g].flags;
	}
	CK(cudaSetDevice(0));
	CK(cudaMalloc((void **)&ts_dev, MAX_TS * sizeof(*ts_dev)));
	if (dma_cuda_create(&dcu, 2, arenas, counters, &dbe) != DMA_OK) {
		fprintf(stderr, "FAIL: dma_cuda_create: %s\n", dma_last_error());
		exit(1);
	}

	unsigned long long *res_dev, res = 0;
	CK(cudaSetDevice(0));
	CK(cudaMalloc((void **)&res_dev, sizeof(res)));
	timer_res_kernel<<<1, 1>>>(res_dev);
	CK(cudaGetLastError());
	CK(cudaMemcpy(&res, res_dev, sizeof(res), cudaMemcpyDeviceToHost));
	CK(cudaFree(res_dev));
	timer_res_ns = res == ~0ull ? 1000.0 : (double)res;
}

static void print_header(void)
{
	int drv = 0, rtv = 0;
	CK(cudaDriverGetVersion(&drv));
	CK(cudaRuntimeGetVersion(&rtv));
	printf("# bench_comm: GPU 0 <-> GPU 1 transfers (driver %d.%d, runtime %d.%d)\n", drv / 1000,
	       drv % 1000 / 10, rtv / 1000, rtv % 1000 / 10);
	for (int g = 0; g < 2; g++)
		printf("# GPU %d: %s, %d SMs, %.1f GiB, PCI %04x:%02x:%02x\n", g, gp[g].prop.name,
		       gp[g].prop.multiProcessorCount, gp[g].prop.totalGlobalMem / (double)(1 << 30),
		       gp[g].prop.pciDomainID, gp[g].prop.pciBusID, gp[g].prop.pciDeviceID);
	int rank = 0, atom = 0, host_atom = 0;
	CK(cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, 0, 1));
	CK(cudaDeviceGetP2PAttribute(&atom, cudaDevP2PAttrNativeAtomicSupported, 0, 1));
	CK(cudaDeviceGetAttribute(&host_atom, cudaDevAttrHostNativeAtomicSupported, 0));
	printf("# peer access 0 <-> 1: yes, performance rank %d, native peer atomics %s; host-native atomics "
	       "(unused: DMA tickets come from device memory) %s\n", rank, atom ? "yes" : "no",
	       host_atom ? "yes" : "no");
	printf("# %%globaltimer resolution on GPU 0: %.0f ns; DMA chunks %" PRIu64 " bytes doubling up to %"
	       PRIu64 "; DMA flags %s; (c) grid: one CTA per 16 KiB, at most %d, %d threads each\n", timer_res_ns,
	       opt.chunk, opt.chunk_max, opt.flags == 1 ? "on the copy stream" : opt.flags == 2 ?
	       "on a second stream after an event" : opt.flags == 4 ? "auto (event way after copies of 1 MiB or more)" :
	       "both ways ((b) and streaming: copy stream; see the last table)",
	       opt.max_ctas, THREADS);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: bench_comm [--scale F] [--quick] [--max-size BYTES] [--chunk BYTES] [--chunk-max BYTES] "
		   "[--flags auto|same|event|both] [--api] [--ctas N] "
		   "[--timeout S]\n"
		   "  --scale F       repetitions x F (default 1)\n"
		   "  --quick         same as --scale 0.1\n"
		   "  --max-size B    largest message (default 64 MiB)\n"
		   "  --chunk B       DMA engine first chunk bytes (default the engine's, 1 MiB)\n"
		   "  --chunk-max B   DMA engine largest chunk: chunks double from --chunk up to it (default\n"
		   "                  the engine's, 16 MiB; raised to --chunk if smaller; = --chunk: fixed chunks)\n"
		   "  --flags M       DMA engine flag writes: auto (the engine's default: event after copies of\n"
		   "                  1 MiB or more, else same), same (on the copy stream), event (on a second\n"
		   "                  stream after an event: copies back to back) or both (measure same and event)\n"
		   "  --api           only measure the host cost of the CUDA calls the DMA engine makes\n"
		   "  --ctas N        (c): most CTAs (default: the SM count, at most %d)\n"
		   "  --timeout S     longest single wait on the GPU before giving up (default 5)\n", MAX_CTAS);
}

static void parse(int argc, char **argv)
{
	opt.scale = 1;
	opt.max_bytes = MAX_BYTES;
	opt.chunk = DMA_DEFAULT_CHUNK_BYTES;
	opt.chunk_max = DMA_DEFAULT_CHUNK_MAX_BYTES;
	opt.flags = 4;
	opt.max_ctas = 0;
	opt.timeout_s = 5;
	for (int i = 1; i < argc; i++) {
		const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *end = NULL;
		if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
			usage(stdout);
			exit(0);
		} else if (!strcmp(s, "--quick"))
			opt.scale = 0.1;
		else if (v && !strcmp(s, "--scale"))
			opt.scale = strtod(v, &end), i++;
		else if (v && !strcmp(s, "--max-size"))
			opt.max_bytes = strtoull(v, &end, 0), i++;
		else if (v && !strcmp(s, "--chunk"))
			opt.chunk = strtoull(v, &end, 0), i++;
		else if (v && !strcmp(s, "--chunk-max"))
			opt.chunk_max = strtoull(v, &end, 0), i++;
		else if (!strcmp(s, "--api"))
			opt.api = 1;
		else if (v && !strcmp(s, "--flags")) {
			opt.flags = !strcmp(v, "same") ? 1 : !strcmp(v, "event") ? 2 : !strcmp(v, "both") ? 3 :
				    !strcmp(v, "auto") ? 4 : 0;
			if (!opt.flags) {
				fprintf(stderr, "bench_comm: --flags auto, same, event or both, not '%s'\n", v);
				exit(2);
			}
			i++;
		}
		else if (v && !strcmp(s, "--ctas"))
			opt.max_ctas = (int)strtol(v, &end, 0), i++;
		else if (v && !strcmp(s, "--timeout"))
			opt.timeout_s = strtod(v, &end), i++;
		else {
			fprintf(stderr, "bench_comm: unknown or incomplete option '%s'\n", s);
			usage(stderr);
			exit(2);
		}
		if (end && *end) {
			fprintf(stderr, "bench_comm: bad value '%s' for %s\n", v, s);
			exit(2);
		}
	}
	if (opt.chunk_max < opt.chunk)
		opt.chunk_max = opt.chunk;
	if (!(opt.scale > 0) || opt.chunk < 8 || opt.chunk % 8 || !(opt.timeout_s > 0) || opt.max_ctas < 0 ||
	    opt.max_ctas > MAX_CTAS || opt.max_bytes < 8 || opt.max_bytes > MAX_BYTES) {
		fprintf(stderr, "bench_comm: option out of range (scale > 0, chunk a multiple of 8, timeout > 0, "
				"ctas <= %d, max-size in [8, 64 MiB])\n", MAX_CTAS);
		exit(2);
	}
}

static void print_tables(const struct row *rows, int n)
{
	char sz[32];
	static const char *const mname[3] = { "(a) host + cudaMemcpyPeerAsync", "(b) persistent + DMA engine",
					       "(c) persistent + peer stores" };

	printf("\n## One-way latency (ping-pong round trip / 2), median; throughput = bytes / one-way time\n");
	printf("%-8s | %9s %9s %9s | %7s %7s | %8s %8s %8s | %4s | %5s\n", "size", "(a) us", "(b) us", "(c) us",
	       "(b)/(a)", "(c)/(a)", "(a)GB/s", "(b)GB/s", "(c)GB/s", "ctas", "reps");
	for (int i = 0; i < n; i++) {
		const struct cell *m = rows[i].m;
		double gb[3];
		for (int k = 0; k < 3; k++)
			gb[k] = rows[i].bytes / (m[k].oneway_us * 1e3);
		printf("%-8s | %9.2f %9.2f %9.2f | %7.3f %7.3f | %8.2f %8.2f %8.2f | %4d | %5u\n",
		       size_str(rows[i].bytes, sz, sizeof(sz)), m[0].oneway_us, m[1].oneway_us, m[2].oneway_us,
		       m[1].oneway_us / m[0].oneway_us, m[2].oneway_us / m[0].oneway_us, gb[0], gb[1], gb[2],
		       m[2].ctas, m[0].reps);
	}

	printf("\n## (c) against (c-LL): packets that carry their flag (8-byte stores {4 data bytes, flag}; the\n"
	       "## receiver polls the data, no fence and no separate flag), one-way us, median (p10 / p90)\n");
	printf("%-8s | %9s | %9s %9s %9s | %7s | %4s\n", "size", "(c) us", "LL us", "LL p10", "LL p90", "LL/(c)",
	       "ctas");
	for (int i = 0; i < n; i++)
		if (rows[i].ll.oneway_us > 0)
			printf("%-8s | %9.2f | %9.2f %9.2f %9.2f | %7.3f | %4d\n", size_str(rows[i].bytes, sz, sizeof(sz)),
			       rows[i].m[2].oneway_us, rows[i].ll.oneway_us, rows[i].ll.p10_us, rows[i].ll.p90_us,
			       rows[i].ll.oneway_us / rows[i].m[2].oneway_us, rows[i].ll.ctas);

	printf("\n## Details per method: one-way us as p10 / median / p90 over windows, mean; windows of W round trips\n");
	for (int k = 0; k < 3; k++) {
		printf("# %s\n", mname[k]);
		for (int i = 0; i < n; i++) {
			const struct cell *c = &rows[i].m[k];
			printf("#   %-8s p10 %9.2f  med %9.2f  p90 %9.2f  mean %9.2f  (%u round trips, W = %u%s)\n",
			       size_str(rows[i].bytes, sz, sizeof(sz)), c->p10_us, c->oneway_us, c->p90_us, c->mean_us,
			       c->reps, c->win, k == 0 ? ", host clock" : ", GPU 0 globaltimer");
		}
	}

	int any = 0;
	for (int i = 0; i < n; i++)
		any |= rows[i].stream_gbps[0] > 0;
	if (any) {
		printf("\n## One-directional streaming GPU 0 -> GPU 1, back-to-back transfers, median of %d runs\n",
		       STREAM_RUNS);
		printf("%-8s | %10s | %10s | %7s | %6s\n", "size", "memcpy GB/s", "DMA GB/s", "DMA/mcp", "count");
		for (int i = 0; i < n; i++)
			if (rows[i].stream_gbps[0] > 0)
				printf("%-8s | %11.1f | %10.1f | %7.3f | %6u\n", size_str(rows[i].bytes, sz, sizeof(sz)),
				       rows[i].stream_gbps[0], rows[i].stream_gbps[1],
				       rows[i].stream_gbps[1] / rows[i].stream_gbps[0], rows[i].stream_copies);
	}

	/* Crossover: the first size from which (c) is no longer faster than (b). */
	int cross = -1, again = -1;
	for (int i = 0; i < n; i++) {
		int c_faster = rows[i].m[2].oneway_us < rows[i].m[1].oneway_us;
		if (cross < 0 && !c_faster)
			cross = i;
		else if (cross >= 0 && again < 0 && c_faster)
			again = i;
	}
	printf("\n");
	if (cross < 0)
		printf("crossover: none: (c) peer stores faster than (b) DMA engine at every size up to %s\n",
		       size_str(rows[n - 1].bytes, sz, sizeof(sz)));
	else if (cross == 0)
		printf("crossover: none: (b) DMA engine at least as fast as (c) peer stores from the smallest size\n");
	else {
		char lo[32];
		printf("crossover: (c) peer stores faster up to %s, (b) DMA engine at least as fast from %s\n",
		       size_str(rows[cross - 1].bytes, lo, sizeof(lo)), size_str(rows[cross].bytes, sz, sizeof(sz)));
	}
	if (again >= 0)
		printf("note: (c) is faster again at %s (not monotonic)\n", size_str(rows[again].bytes, sz, sizeof(sz)));

	if (opt.flags == 3) {
		printf("\n## DMA engine flag writes: same = on the copy stream, event = on a second stream after an "
		       "event (one-way us median; streaming GB/s and its ratio to back-to-back memcpy)\n");
		printf("%-8s | %9s %9s %7s | %9s %9s | %7s %7s\n", "size", "same us", "event us", "ev/same",
		       "same GB/s", "event GB/s", "same/mc", "ev/mc");
		for (int i = 0; i < n; i++) {
			const struct row *r = &rows[i];
			printf("%-8s | %9.2f %9.2f %7.3f", size_str(r->bytes, sz, sizeof(sz)), r->m[1].oneway_us,
			       r->ev.oneway_us, r->ev.oneway_us / r->m[1].oneway_us);
			if (r->stream_gbps[0] > 0)
				printf(" | %9.1f %9.1f | %7.3f %7.3f\n", r->stream_gbps[1], r->stream_ev,
				       r->stream_gbps[1] / r->stream_gbps[0], r->stream_ev / r->stream_gbps[0]);
			else
				printf(" | %9s %9s | %7s %7s\n", "-", "-", "-", "-");
		}
	}
}

/* ---- --api: the host cost of the CUDA calls the DMA engine makes --------------------------------- */
typedef CUresult (*write_value32_fn)(CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags);

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

struct api_row {
	const char *what;
	std::vector<double> us;     /* one sample per call */
	int failed;                 /* the call is not available (CUresult or cudaError) */
};

static void api_print(std::vector<api_row> &rows)
{
	printf("\n## Host cost of the CUDA calls of the DMA engine (GPU 0 -> GPU 1, %d calls each, us)\n", API_CALLS);
	printf("%-62s | %8s %8s %8s %8s\n", "call", "p10", "median", "p90", "mean");
	for (api_row &r : rows) {
		if (r.failed || r.us.empty()) {
			printf("%-62s | %8s %8s %8s %8s\n", r.what, "n/a", "n/a", "n/a", "n/a");
			continue;
		}
		std::vector<double> v = r.us;
		std::sort(v.begin(), v.end());
		double mean = 0;
		for (double x : v)
			mean += x;
		mean /= (double)v.size();
		printf("%-62s | %8.2f %8.2f %8.2f %8.2f\n", r.what, v[v.size() / 10], v[v.size() / 2],
		       v[v.size() * 9 / 10], mean);
	}
	printf("# enqueue rows: time inside the call (the stream is drained every 256 calls, outside the timing);\n"
	       "# completion rows: from just before the first call until the CPU sees the result, one at a time.\n");
}

/* Measures, on the host, what the dispatcher pays per chunk and how long a 64-byte request takes
 * from the calls to a host-visible completion. */
static void run_api(void)
{
	write_value32_fn write32 = NULL;
	enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
	void *fn = NULL;
	if (cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &fn, 12000, cudaEnableDefault, &q) == cudaSuccess &&
	    q == cudaDriverEntryPointSuccess)
		write32 = (write_value32_fn)fn;
	else
		(void)cudaGetLastError();
	CK(cudaSetDevice(0));
	cudaStream_t cs = gp[0].stream, fs;
	cudaEvent_t ev;
	CK(cudaStreamCreateWithFlags(&fs, cudaStreamNonBlocking));
	CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
	uint32_t *hflag, *hflag_dev;  /* mapped host word the GPU writes, the CPU polls */
	CK(cudaHostAlloc((void **)&hflag, 64, cudaHostAllocMapped | cudaHostAllocPortable));
	CK(cudaHostGetDevicePointer((void **)&hflag_dev, hflag, 0));
	*(volatile uint32_t *)hflag = 0;
	char *src = gp[0].arena + S_OFF, *dst = gp[1].arena + R_OFF;
	CUdeviceptr dflag = (CUdeviceptr)(uintptr_t)(gp[1].flags + F_API);
	std::vector<api_row> rows(8);
	rows[0].what = "cudaMemcpyPeerAsync 64 B (enqueue)";
	rows[1].what = "cuStreamWriteValue32 to the peer's flag (enqueue)";
	rows[2].what = "cudaEventRecord + cudaStreamWaitEvent (enqueue)";
	rows[3].what = "cudaMemcpyPeerAsync 64 B + cuStreamWriteValue32 (enqueue)";
	rows[4].what = "memcpy 64 B + WriteValue32 to host word, CPU polls (complete)";
	rows[5].what = "memcpy 64 B + WriteValue32 peer, cudaStreamQuery (complete)";
	rows[6].what = "WriteValue32 to host word alone, CPU polls (complete)";
	rows[7].what = "memcpy 64 B + event + WriteValue32 on 2nd stream (complete)";
	for (api_row &r : rows)
		r.failed = 0;
	uint32_t val = 0;
	for (int i = 0; i < API_CALLS; i++) {
		if (i % 256 == 0) {
			CK(cudaStreamSynchronize(cs));
			CK(cudaStreamSynchronize(fs));
		}
		uint64_t t0 = now_ns();
		CK(cudaMemcpyPeerAsync(dst, 1, src, 0, 64, cs));
		uint64_t t1 = now_ns();
		rows[0].us.push_back((t1 - t0) * 1e-3);
		if (write32) {
			t0 = now_ns();
			CUresult r = write32((CUstream)cs, dflag, ++val, CU_STREAM_WRITE_VALUE_DEFAULT);
			t1 = now_ns();
			if (r != CUDA_SUCCESS)
				rows[1].failed = 1;
			rows[1].us.push_back((t1 - t0) * 1e-3);
		}
		t0 = now_ns();
		CK(cudaEventRecord(ev, cs));
		CK(cudaStreamWaitEvent(fs, ev, 0));
		t1 = now_ns();
		rows[2].us.push_back((t1 - t0) * 1e-3);
		if (write32) {
			t0 = now_ns();
			CK(cudaMemcpyPeerAsync(dst, 1, src, 0, 64, cs));
			CUresult r = write32((CUstream)cs, dflag, ++val, CU_STREAM_WRITE_VALUE_DEFAULT);
			t1 = now_ns();
			if (r != CUDA_SUCCESS)
				rows[3].failed = 1;
			rows[3].us.push_back((t1 - t0) * 1e-3);
		}
	}
	CK(cudaStreamSynchronize(cs));
	CK(cudaStreamSynchronize(fs));
	rows[1].failed |= !write32;
	rows[3].failed |= !write32;
	/* completions: one request at a time, the stream idle before each */
	const double limit_ns = opt.timeout_s * 1e9;
	for (int i = 0; i < API_CALLS && write32; i++) {
		uint32_t want = ++val;
		uint64_t t0 = now_ns();
		CK(cudaMemcpyPeerAsync(dst, 1, src, 0, 64, cs));
		if (write32((CUstream)cs, (CUdeviceptr)(uintptr_t)hflag_dev, want, CU_STREAM_WRITE_VALUE_DEFAULT) != CUDA_SUCCESS) {
			rows[4].failed = 1;
			CK(cudaStreamSynchronize(cs));
			break;
		}
		while (*(volatile uint32_t *)hflag != want)
			if (now_ns() - t0 > limit_ns) {
				fprintf(stderr, "FAIL: --api: the host word never changed\n");
				exit(1);
			}
		rows[4].us.push_back((now_ns() - t0) * 1e-3);
		CK(cudaStreamSynchronize(cs));
	}
	for (int i = 0; i < API_CALLS && write32; i++) {
		uint64_t t0 = now_ns();
		CK(cudaMemcpyPeerAsync(dst, 1, src, 0, 64, cs));
		if (write32((CUstream)cs, dflag, ++val, CU_STREAM_WRITE_VALUE_DEFAULT) != CUDA_SUCCESS) {
			rows[5].failed = 1;
			break;
		}
		cudaError_t e;
		while ((e = cudaStreamQuery(cs)) == cudaErrorNotReady)
			;
		CK(e);
		rows[5].us.push_back((now_ns() - t0) * 1e-3);
	}
	for (int i = 0; i < API_CALLS && write32 && !rows[4].failed; i++) {
		uint32_t want = ++val;
		uint64_t t0 = now_ns();
		if (write32((CUstream)cs, (CUdeviceptr)(uintptr_t)hflag_dev, want, CU_STREAM_WRITE_VALUE_DEFAULT) != CUDA_SUCCESS) {
			rows[6].failed = 1;
			break;
		}
		while (*(volatile uint32_t *)hflag != want)
			if (now_ns() - t0 > limit_ns) {
				fprintf(stderr, "FAIL: --api: the host word never changed\n");
				exit(1);
			}
		rows[6].us.push_back((now_ns() - t0) * 1e-3);
		CK(cudaStreamSynchronize(cs));
	}
	for (int i = 0; i < API_CALLS && write32 && !rows[4].failed; i++) {
		uint32_t want = ++val;
		uint64_t t0 = now_ns();
		CK(cudaMemcpyPeerAsync(dst, 1, src, 0, 64, cs));
		CK(cudaEventRecord(ev, cs));
		CK(cudaStreamWaitEvent(fs, ev, 0));
		if (write32((CUstream)fs, (CUdeviceptr)(uintptr_t)hflag_dev, want, CU_STREAM_WRITE_VALUE_DEFAULT) != CUDA_SUCCESS) {
			rows[7].failed = 1;
			break;
		}
		while (*(volatile uint32_t *)hflag != want)
			if (now_ns() - t0 > limit_ns) {
				fprintf(stderr, "FAIL: --api: the host word never changed\n");
				exit(1);
			}
		rows[7].us.push_back((now_ns() - t0) * 1e-3);
		CK(cudaStreamSynchronize(fs));
	}
	rows[4].failed |= !write32;
	rows[5].failed |= !write32;
	rows[6].failed |= !write32 || rows[4].failed;
	rows[7].failed |= !write32 || rows[4].failed;
	CK(cudaStreamSynchronize(cs));
	CK(cudaStreamSynchronize(fs));
	api_print(rows);
	CK(cudaEventDestroy(ev));
	CK(cudaStreamDestroy(fs));
	CK(cudaFreeHost(hflag));
}

static void print_legend(void)
{
	printf("\n# Columns: (a) host-driven: kernel on GPU 0, sync, cudaMemcpyPeerAsync, sync, kernel on GPU 1, sync,\n"
	       "#   copy back, sync (host clock per round trip); (b) one persistent CTA per GPU pushes a request\n"
	       "#   onto its DMA ring, the dispatcher thread copies and raises the receiver's flag; (c) persistent\n"
	       "#   CTAs store into peer memory, fence, raise one flag per CTA (st.release.sys) on the peer.\n"
	       "#   (b) and (c) are timed with %%globaltimer on GPU 0. us = one-way microseconds (median of\n"
	       "#   windows of W round trips, each / 2); ratios < 1: faster than (a); GB/s = 1e9 bytes/s;\n"
	       "#   ctas = (c) grid; reps = timed round trips (after reps/20, at least 10, warm-up round trips).\n"
	       "#   Every cell was verified: a checked run of 3 round trips into poisoned buffers with a checksum\n"
	       "#   on each receiving GPU, then the timed run into poisoned buffers, compared byte for byte.\n");
}

static void teardown(void);

int main(int argc, char **argv)
{
	int ndev = 0;
	cudaError_t e;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse(argc, argv);
	e = cudaGetDeviceCount(&ndev);
	if (e != cudaSuccess || ndev < 2) {
		printf("SKIP: fewer than 2 CUDA devices (%d%s%s)\n", e == cudaSuccess ? ndev : 0,
		       e == cudaSuccess ? "" : ": ", e == cudaSuccess ? "" : cudaGetErrorString(e));
		return 0;
	}
	int can01 = 0, can10 = 0;
	CK(cudaDeviceCanAccessPeer(&can01, 0, 1));
	CK(cudaDeviceCanAccessPeer(&can10, 1, 0));
	if (!can01 || !can10) {
		printf("SKIP: GPU 0 and GPU 1 have no peer access to each other ((b) and (c) need it)\n");
		return 0;
	}
	setup();
	if (opt.max_ctas == 0) {
		int sms = std::min(gp[0].prop.multiProcessorCount, gp[1].prop.multiProcessorCount);
		opt.max_ctas = std::min(sms, MAX_CTAS);
	}
	print_header();
	if (opt.api) {
		run_api();
		teardown();
		printf("PASS: --api done\n");
		return 0;
	}

	struct row rows[N_SIZES];
	int n = 0;
	uint64_t seed = (uint64_t)time(NULL);
	printf("# seed %" PRIu64 "\n", seed);
	for (size_t i = 0; i < N_SIZES && sizes[i] <= opt.max_bytes; i++, n++) {
		uint64_t b = sizes[i];
		char sz[32];
		memset(&rows[n], 0, sizeof(rows[n]));
		rows[n].bytes = b;
		run_cpu(b, seed + 10 * i + 0, &rows[n].m[0]);
		set_flags(opt.flags == 4 ? DMA_FLAGS_AUTO : opt.flags & 1 ? DMA_FLAGS_SAME_STREAM : DMA_FLAGS_EVENT);
		run_dma(b, seed + 10 * i + 1, &rows[n].m[1]);
		run_p2p(b, seed + 10 * i + 2, &rows[n].m[2]);
		if (b <= LL_MAX)
			run_ll(b, seed + 10 * i + 6, &rows[n].ll);
		if (b >= 1 * MiB) {
			rows[n].stream_copies = stream_copies(b);
			rows[n].stream_gbps[0] = stream_memcpy(b, seed + 10 * i + 3);
			rows[n].stream_gbps[1] = stream_dma(b, seed + 10 * i + 4);
		}
		if (opt.flags == 3) {
			set_flags(DMA_FLAGS_EVENT);
			run_dma(b, seed + 10 * i + 5, &rows[n].ev);
			if (b >= 1 * MiB)
				rows[n].stream_ev = stream_dma(b, seed + 10 * i + 6);
		}
		printf("# %-8s done: one-way (a) %.2f us, (b) %.2f us, (c) %.2f us\n", size_str(b, sz, sizeof(sz)),
		       rows[n].m[0].oneway_us, rows[n].m[1].oneway_us, rows[n].m[2].oneway_us);
	}
	print_legend();
	print_tables(rows, n);
	teardown();
	printf("PASS: every transfer verified\n");
	return 0;
}

/* Frees what setup() made. */
static void teardown(void)
{
	dma_cuda_destroy(dcu);
	for (int g = 0; g < 2; g++) {
		dma_cuda_ring_free(&gp[g].ring);
		CK(cudaSetDevice(g));
		dma_cuda_dev_prod_free(gp[g].prod);
		CK(cudaStreamDestroy(gp[g].stream));
		CK(cudaFree(gp[g].arena));
		CK(cudaFree(gp[g].flags));
	}
	CK(cudaFree(ts_dev));
	CK(cudaFreeHost(ctl));
	CK(cudaFreeHost(data));
	CK(cudaFreeHost(back));
	CK(cudaFreeHost(ts_host));
}

