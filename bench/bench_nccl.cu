// bench_nccl.cu: ncclAllReduce (sum, fp32 and bf16) latency on every visible GPU in one process
// (ncclCommInitAll, one stream per GPU), per message size: median of host-timed iterations, the
// back-to-back average, and (with --graph) CUDA-graph replays; every size checked against a host sum
// of random inputs. NVLink multicast (NVLS) stays off: NCCL_NVLS_ENABLE must be 0.
#include <cuda_runtime.h>
#include <nccl.h>

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "bench_cuda.h"

#define NC(call)                                                                                     \
	do {                                                                                         \
		ncclResult_t r_ = (call);                                                            \
		if (r_ != ncclSuccess) {                                                             \
			fprintf(stderr, "FAIL: %s:%d: %s: %s\n", __FILE__, __LINE__, #call,          \
				ncclGetErrorString(r_));                                             \
			exit(1);                                                                     \
		}                                                                                    \
	} while (0)

#define MAX_BYTES (64 * MiB)
#define MAX_GPUS 8
#define WARMUP 20
#define SYNC_TIMEOUT_S 60.0

static const uint64_t sizes[] = { 4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, 1 * MiB, 4 * MiB, 16 * MiB, 64 * MiB };
#define N_SIZES (sizeof(sizes) / sizeof(sizes[0]))

enum { T_F32, T_BF16, N_TYPES };
static const char *const type_name[N_TYPES] = { "fp32", "bf16" };
static const ncclDataType_t type_nccl[N_TYPES] = { ncclFloat32, ncclBfloat16 };
static const size_t type_size[N_TYPES] = { 4, 2 };

struct result {
	double med_us, p10_us, p90_us; /* per iteration, host-timed with a sync after each */
	double b2b_us;                 /* back-to-back: total / iterations, one sync at the end */
	double graph_us;               /* graph replays, per iteration as med_us; < 0: not measured */
	uint32_t iters;
};

static int ndev;
static ncclComm_t comms[MAX_GPUS];
static cudaStream_t streams[MAX_GPUS];
static void *sendbuf[MAX_GPUS], *recvbuf[MAX_GPUS];   /* [MAX_BYTES] on GPU g */
static void *host_in[MAX_GPUS];                        /* [MAX_BYTES] pinned: GPU g's input */
static void *host_out;                                 /* [MAX_BYTES] pinned */
static struct result res[N_TYPES][N_SIZES];

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

/* ---- watchdog: a call that blocks inside NCCL or CUDA (which sync_all cannot bound) ends the
 * program after WATCHDOG_S seconds without progress, naming the phase. */
#define WATCHDOG_S 120
static const char *volatile phase = "start";
static double progress_at;     /* now_s() of the last progress, under __atomic */

static void progress(const char *what)
{
	phase = what;
	double t = now_s();
	__atomic_store(&progress_at, &t, __ATOMIC_RELEASE);
}

static void *watchdog(void *arg)
{
	(void)arg;
	for (;;) {
		double last;
		sleep(1);
		__atomic_load(&progress_at, &last, __ATOMIC_ACQUIRE);
		if (now_s() - last > WATCHDOG_S) {
			fprintf(stderr, "TIMEOUT: no progress for %d s in phase '%s' (a blocked NCCL or CUDA call)\n",
				WATCHDOG_S, phase);
			printf("FAIL: watchdog timeout in %s\n", phase);
			fflush(stdout);
			_exit(1);
		}
	}
	return NULL;
}

static const char *size_str(uint64_t b, char *buf, size_t n)
{
	if (b >= MiB && b % MiB == 0)
		snprintf(buf, n, "%" PRIu64 " MiB", b / MiB);
	else
		snprintf(buf, n, "%" PRIu64 " KiB", b / KiB);
	return buf;
}

static uint16_t f32_to_bf16(float f) /* round to nearest even; inputs are finite */
{
	uint32_t u;
	memcpy(&u, &f, 4);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

static float bf16_to_f32(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static double elem(const void *p, int t, size_t i)
{
	return t == T_F32 ? (double)((const float *)p)[i] : (double)bf16_to_f32(((const uint16_t *)p)[i]);
}

/* Uniform values in [-1, 1), never all zero, exactly representable in the type. */
static void fill_random(void *p, int t, size_t n, uint64_t seed)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull;
	for (size_t i = 0; i < n; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		float f = (float)((double)(s >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
		if (t == T_F32)
			((float *)p)[i] = f;
		else
			((uint16_t *)p)[i] = f32_to_bf16(f);
	}
}

/* Waits for every stream, with a deadline: a hung collective ends the program instead of hanging it. */
static void sync_all(const char *what)
{
	double t0 = now_s();
	progress(what);
	for (int g = 0; g < ndev; g++) {
		for (;;) {
			cudaError_t e = cudaStreamQuery(streams[g]);
			if (e == cudaSuccess)
				break;
			if (e != cudaErrorNotReady) {
				fprintf(stderr, "FAIL: %s: GPU %d: %s\n", what, g, cudaGetErrorString(e));
				exit(1);
			}
			if (now_s() - t0 > SYNC_TIMEOUT_S) {
				ncclResult_t ar = ncclSuccess;
				ncclCommGetAsyncError(comms[g], &ar);
				fprintf(stderr, "TIMEOUT: %s: GPU %d's stream not done after %.0f s (NCCL async state: %s)\n",
					what, g, SYNC_TIMEOUT_S, ncclGetErrorString(ar));
				printf("FAIL: %s: timeout\n", what);
				exit(1);
			}
		}
	}
}

static void allreduce_all(int t, size_t count)
{
	NC(ncclGroupStart());
	for (int g = 0; g < ndev; g++)
		NC(ncclAllReduce(sendbuf[g], recvbuf[g], count, type_nccl[t], ncclSum, comms[g], streams[g]));
	NC(ncclGroupEnd());
}

static void poison_recv(uint64_t bytes)
{
	for (int g = 0; g < ndev; g++) {
		CK(cudaSetDevice(g));
		CK(cudaMemsetAsync(recvbuf[g], 0xff, bytes, streams[g])); /* NaN in fp32 and bf16 */
	}
	sync_all("poison");
}

/* Every GPU's output against the host sum of the inputs; exits 1 on the first wrong element. */
static void check_result(const char *what, int t, uint64_t bytes)
{
	const size_t n = bytes / type_size[t];
	const double u = t == T_F32 ? ldexp(1.0, -24) : ldexp(1.0, -8); /* unit roundoff */
	char sz[32];

	for (int g = 0; g < ndev; g++) {
		CK(cudaSetDevice(g));
		CK(cudaMemcpy(host_out, recvbuf[g], bytes, cudaMemcpyDeviceToHost));
		for (size_t i = 0; i < n; i++) {
			double ref = 0, mag = 0;
			for (int k = 0; k < ndev; k++) {
				double x = elem(host_in[k], t, i);
				ref += x;
				mag += fabs(x);
			}
			/* one rounding per reduction step and one for the result, each <= u * sum|x| */
			double tol = 2.0 * ndev * u * mag + 1e-30, got = elem(host_out, t, i);
			if (!(fabs(got - ref) <= tol)) {
				fprintf(stderr, "FAIL: %s, %s %s: GPU %d element %zu = %.9g, host sum %.9g (tolerance %.3g)\n",
					what, type_name[t], size_str(bytes, sz, sizeof(sz)), g, i, got, ref, tol);
				printf("FAIL: %s: wrong result\n", what);
				exit(1);
			}
		}
	}
}

static double quantile(std::vector<double> &v, double q)
{
	std::sort(v.begin(), v.end());
	return v[(size_t)(q * (double)(v.size() - 1) + 0.5)];
}

static uint32_t iters_for(uint64_t bytes)
{
	return bytes <= 256 * KiB ? 1000 : bytes <= 4 * MiB ? 500 : 200;
}

/* Fresh inputs for (t, size), uploaded to every GPU. */
static void new_inputs(int t, uint64_t bytes, uint64_t seed)
{
	for (int g = 0; g < ndev; g++) {
		fill_random(host_in[g], t, bytes / type_size[t], seed * 131 + (uint64_t)g);
		CK(cudaSetDevice(g));
		CK(cudaMemcpy(sendbuf[g], host_in[g], bytes, cudaMemcpyHostToDevice));
	}
}

static void run_eager(int t, int si, uint64_t seed)
{
	const uint64_t bytes = sizes[si];
	const size_t count = bytes / type_size[t];
	const uint32_t iters = iters_for(bytes);
	struct result *r = &res[t][si];
	std::vector<double> us;

	new_inputs(t, bytes, seed);
	poison_recv(bytes);
	allreduce_all(t, count);
	sync_all("allreduce");
	check_result("first allreduce", t, bytes);

	for (int i = 0; i < WARMUP; i++)
		allreduce_all(t, count);
	sync_all("warm-up");
	for (uint32_t i = 0; i < iters; i++) {
		double t0 = now_s();
		allreduce_all(t, count);
		sync_all("allreduce");
		us.push_back((now_s() - t0) * 1e6);
	}
	double t0 = now_s();
	for (uint32_t i = 0; i < iters; i++)
		allreduce_all(t, count);
	sync_all("back-to-back allreduce");
	r->b2b_us = (now_s() - t0) * 1e6 / iters;
	r->med_us = quantile(us, 0.5);
	r->p10_us = quantile(us, 0.1);
	r->p90_us = quantile(us, 0.9);
	r->iters = iters;
	r->graph_us = -1;
	/* the output of the last of 2 x iters allreduces on the same inputs */
	check_result("after the timed allreduces", t, bytes);
}

/* The graph variant: one allreduce per GPU captured into one graph per GPU, replayed per
 * iteration. Returns 0, or -1 with the reason in why (capture not supported: not a failure). */
static int run_graph(int t, int si, uint64_t seed, char *why, size_t wn)
{
	const uint64_t bytes = sizes[si];
	const size_t count = bytes / type_size[t];
	const uint32_t iters = iters_for(bytes);
	cudaGraph_t graph[MAX_GPUS] = {};
	cudaGraphExec_t exec[MAX_GPUS] = {};
	std::vector<double> us;
	int ok = 1;

	new_inputs(t, bytes, seed);
	for (int g = 0; g < ndev && ok; g++) {
		CK(cudaSetDevice(g));
		cudaError_t e = cudaStreamBeginCapture(streams[g], cudaStreamCaptureModeRelaxed);
		if (e != cudaSuccess) {
			snprintf(why, wn, "cudaStreamBeginCapture on GPU %d: %s", g, cudaGetErrorString(e));
			ok = 0;
		}
	}
	if (ok) {
		ncclResult_t nr = ncclGroupStart();
		for (int g = 0; g < ndev && nr == ncclSuccess; g++)
			nr = ncclAllReduce(sendbuf[g], recvbuf[g], count, type_nccl[t], ncclSum, comms[g], streams[g]);
		ncclResult_t ne = ncclGroupEnd();
		if (nr != ncclSuccess || ne != ncclSuccess) {
			snprintf(why, wn, "ncclAllReduce under capture: %s",
				 ncclGetErrorString(nr != ncclSuccess ? nr : ne));
			ok = 0;
		}
	}
	for (int g = 0; g < ndev; g++) { /* end every capture that began, even after a failure */
		cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
		CK(cudaSetDevice(g));
		if (cudaStreamIsCapturing(streams[g], &st) != cudaSuccess || st == cudaStreamCaptureStatusNone)
			continue;
		cudaError_t e = cudaStreamEndCapture(streams[g], &graph[g]);
		if (e != cudaSuccess && ok) {
			snprintf(why, wn, "cudaStreamEndCapture on GPU %d: %s", g, cudaGetErrorString(e));
			ok = 0;
		}
	}
	(void)cudaGetLastError();
	for (int g = 0; g < ndev && ok; g++) {
		CK(cudaSetDevice(g));
		cudaError_t e = graph[g] ? cudaGraphInstantiate(&exec[g], graph[g], 0) : cudaErrorInvalidValue;
		if (e != cudaSuccess) {
			snprintf(why, wn, "cudaGraphInstantiate on GPU %d: %s", g, cudaGetErrorString(e));
			ok = 0;
		}
	}
	if (ok) {
		poison_recv(bytes);
		for (int g = 0; g < ndev; g++) {
			CK(cudaSetDevice(g));
			CK(cudaGraphLaunch(exec[g], streams[g]));
		}
		sync_all("graph replay");
		check_result("first graph replay", t, bytes);
		for (uint32_t i = 0; i < WARMUP + iters; i++) {
			double t0 = now_s();
			for (int g = 0; g < ndev; g++) {
				CK(cudaSetDevice(g));
				CK(cudaGraphLaunch(exec[g], streams[g]));
			}
			sync_all("graph replay");
			if (i >= WARMUP)
				us.push_back((now_s() - t0) * 1e6);
		}
		res[t][si].graph_us = quantile(us, 0.5);
		check_result("after the graph replays", t, bytes);
	}
	for (int g = 0; g < ndev; g++) {
		CK(cudaSetDevice(g));
		if (exec[g])
			CK(cudaGraphExecDestroy(exec[g]));
		if (graph[g])
			CK(cudaGraphDestroy(graph[g]));
	}
	(void)cudaGetLastError();
	return ok ? 0 : -1;
}

/* NVLink multicast must stay off on these machines: NCCL_NVLS_ENABLE=0, set here when unset. */
static int nvls_off(void)
{
	const char *v = getenv("NCCL_NVLS_ENABLE");
	if (v == NULL) {
		if (setenv("NCCL_NVLS_ENABLE", "0", 1) != 0) {
			fprintf(stderr, "FAIL: setenv NCCL_NVLS_ENABLE: cannot set it\n");
			return -1;
		}
		return 0;
	}
	if (strcmp(v, "0") != 0) {
		fprintf(stderr, "bench_nccl: refusing to run with NCCL_NVLS_ENABLE=%s: NVLink multicast must stay "
				"off on these machines (unset it or set it to 0)\n", v);
		return -1;
	}
	return 0;
}

static void print_table(int graph)
{
	char sz[32];

	printf("\n## ncclAllReduce sum, %d GPUs, out of place%s\n", ndev, graph ? ", CUDA graph replays" : "");
	printf("%-5s | %-7s | %9s %9s %9s | %9s | %9s | %8s | %5s\n", "dtype", "size", "median us", "p10", "p90",
	       "b2b us", "graph us", "busbw", "iters");
	for (int t = 0; t < N_TYPES; t++)
		for (size_t si = 0; si < N_SIZES; si++) {
			const struct result *r = &res[t][si];
			char gr[32];
			double busbw = sizes[si] / (r->b2b_us * 1e3) * 2.0 * (ndev - 1) / ndev;
			if (r->graph_us >= 0)
				snprintf(gr, sizeof(gr), "%9.2f", r->graph_us);
			else
				snprintf(gr, sizeof(gr), "%9s", graph ? "n/a" : "-");
			printf("%-5s | %-7s | %9.2f %9.2f %9.2f | %9.2f | %s | %8.1f | %5u\n", type_name[t],
			       size_str(sizes[si], sz, sizeof(sz)), r->med_us, r->p10_us, r->p90_us, r->b2b_us, gr,
			       busbw, r->iters);
		}
}

int main(int argc, char **argv)
{
	int graph = 0;
	char sz[32], why[256] = "";
	pthread_t wd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--graph"))
			graph = 1;
		else {
			fprintf(stderr, "usage: bench_nccl [--graph]\n"
					"  --graph  also time CUDA-graph replays (NCCL warns that graphs with several GPUs\n"
					"           driven by one thread may deadlock; the watchdog ends such a run)\n");
			return 2;
		}
	}
	if (nvls_off() != 0) {
		printf("FAIL: NCCL_NVLS_ENABLE is not 0\n");
		return 1;
	}
	cudaError_t e = cudaGetDeviceCount(&ndev);
	if (e != cudaSuccess || ndev < 2) {
		printf("SKIP: fewer than 2 CUDA devices (%d%s%s)\n", e == cudaSuccess ? ndev : 0,
		       e == cudaSuccess ? "" : ": ", e == cudaSuccess ? "" : cudaGetErrorString(e));
		return 0;
	}
	if (ndev > MAX_GPUS)
		ndev = MAX_GPUS;
	progress("init");
	if (pthread_create(&wd, NULL, watchdog, NULL) != 0) {
		fprintf(stderr, "FAIL: cannot start the watchdog thread\n");
		return 1;
	}
	pthread_detach(wd);

	int ver = 0, devs[MAX_GPUS];
	NC(ncclGetVersion(&ver));
	printf("# bench_nccl: ncclAllReduce sum on %d GPUs in one process, NCCL %d, NCCL_NVLS_ENABLE=%s\n", ndev, ver,
	       getenv("NCCL_NVLS_ENABLE"));
	for (int g = 0; g < ndev; g++) {
		cudaDeviceProp p;
		CK(cudaGetDeviceProperties(&p, g));
		printf("# GPU %d: %s, %d SMs\n", g, p.name, p.multiProcessorCount);
		devs[g] = g;
	}
	progress("ncclCommInitAll");
	NC(ncclCommInitAll(comms, ndev, devs));
	for (int g = 0; g < ndev; g++) {
		CK(cudaSetDevice(g));
		CK(cudaStreamCreateWithFlags(&streams[g], cudaStreamNonBlocking));
		CK(cudaMalloc(&sendbuf[g], MAX_BYTES));
		CK(cudaMalloc(&recvbuf[g], MAX_BYTES));
		CK(cudaMallocHost(&host_in[g], MAX_BYTES));
	}
	CK(cudaMallocHost(&host_out, MAX_BYTES));

	uint64_t seed = (uint64_t)time(NULL);
	printf("# seed %" PRIu64 "\n", seed);
	for (int t = 0; t < N_TYPES; t++)
		for (size_t si = 0; si < N_SIZES; si++) {
			progress("eager allreduce");
			run_eager(t, (int)si, seed + 100 * t + si);
			res[t][si].graph_us = -1;
			printf("# %s %-7s eager median %.2f us\n", type_name[t], size_str(sizes[si], sz, sizeof(sz)),
			       res[t][si].med_us);
		}
	printf("\n# us: host time from launching the allreduce on every GPU (one group) to every stream done,\n"
	       "#   median (p10, p90) over the iterations, each followed by a sync; b2b: the same number of\n"
	       "#   allreduces back to back, total / count; graph: one captured allreduce per GPU replayed\n"
	       "#   per iteration, median (only with --graph); busbw = bytes / b2b * 2 (n - 1) / n (as\n"
	       "#   nccl-tests), GB/s = 1e9 B/s. Warm-up %d; every size checked on every GPU against the host\n"
	       "#   sum (first call and last).\n", WARMUP);
	print_table(0);

	/* Graphs last, after the eager table is out: a capture that NCCL refuses, or a replay that
	 * blocks, cannot spoil the eager figures. */
	if (graph) {
		for (int t = 0; t < N_TYPES && graph; t++)
			for (size_t si = 0; si < N_SIZES && graph; si++) {
				progress("graph capture and replay");
				if (run_graph(t, (int)si, seed + 100 * t + si + 50, why, sizeof(why)) != 0) {
					printf("# CUDA graph variant not measured: %s\n", why);
					graph = 0;
				}
			}
		if (graph)
			print_table(1);
	}

	progress("teardown");
	for (int g = 0; g < ndev; g++) {
		NC(ncclCommDestroy(comms[g]));
		CK(cudaSetDevice(g));
		CK(cudaStreamDestroy(streams[g]));
		CK(cudaFree(sendbuf[g]));
		CK(cudaFree(recvbuf[g]));
		CK(cudaFreeHost(host_in[g]));
	}
	CK(cudaFreeHost(host_out));
	printf("PASS: every allreduce result checked\n");
	return 0;
}
