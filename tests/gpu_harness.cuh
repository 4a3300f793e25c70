// gpu_harness.cuh: what the GPU tile tests share: tensors placed in a poisoned arena with guards, fresh random inputs, one op's tasks run one per block, faults, guards and TAP lines.
/* The test defines, before including this file, the tiles its kernel runs:
 *   struct harness_tiles {
 *       static constexpr int smem = ...;  // dynamic shared memory of a block (bytes)
 *       static __device__ __forceinline__ bool run(const ark_opp &, const ark_task &, const ark_tile_env &);
 *   };  // run: false for a task it has no tile for (the block traps, the launch fails)
 * and calls harness_init(arena bytes, most tasks a launch) first in main. */
#ifndef GPU_HARNESS_CUH
#define GPU_HARNESS_CUH

#include <cuda_runtime.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ark.h"

#define CUDA_CHECK(call) cuda_check((call), #call, __FILE__, __LINE__)
static void cuda_check(cudaError_t e, const char *call, const char *file, int line)
{
	if (e == cudaSuccess)
		return;
	printf("Bail out! %s:%d: %s: %s\n", file, line, call, cudaGetErrorString(e));
	exit(1);
}

/* Block b runs tasks[b] and stores the fault its tile recorded (1 + row, value; 0: none) at
 * faults[2 b] when faults is given; with ns, it also writes the time spent in the tile
 * (%globaltimer, ns). A task that has no tile in this build traps (the launch fails). */
__global__ void __launch_bounds__(ARK_THREADS, 1)
	harness_kernel(const ark_opp *opp, const ark_task *tasks, char *arena, char *const *peers, unsigned long long *ns,
		       uint32_t *faults)
{
	extern __shared__ __align__(16) char smem[];
	__shared__ uint32_t fault[2]; /* a tile's fault (ark_tile_env.fault), copied to faults[2 * block] */
	const ark_task t = tasks[blockIdx.x];
	if (threadIdx.x == 0)
		fault[0] = fault[1] = 0;
	__syncthreads();
	unsigned long long t0 = 0, t1 = 0;
	if (ns) {
		__syncthreads();
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	}
	if (!harness_tiles::run(opp[t.opp], t, {arena, peers, smem, 0, nullptr, fault}))
		__trap();
	if (faults) {
		__syncthreads();
		if (threadIdx.x == 0)
			faults[2 * blockIdx.x] = fault[0], faults[2 * blockIdx.x + 1] = fault[1];
	}
	if (ns) {
		__syncthreads();
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
		if (threadIdx.x == 0)
			ns[blockIdx.x] = t1 - t0;
	}
}

#define GUARD 64 /* poisoned bytes on each side of every tensor, checked after the run */

static char *g_arena;          /* device arena, g_arena_bytes */
static char **g_peers;         /* device array: peers[0] = g_arena */
static ark_opp *g_opp;         /* device: one op */
static ark_task *g_tasks;      /* device: tasks */
static uint32_t *g_faults;     /* device: per task, the fault its tile recorded (1 + row, value), 0: none */
static uint64_t g_arena_bytes;
static int g_max_tasks;
static uint64_t g_seed;
static int g_n, g_failed;

/* Dtype names from the catalog. */
static const char *const dt_name[] = {
#define X(id, name) name,
	DTYPE_LIST(X)
#undef X
};

/* The device, the seed (ARK_TEST_SEED, else the time) and the buffers; false (after the TAP skip
 * line) without a GPU. */
static bool harness_init(uint64_t arena_bytes, int max_tasks)
{
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		printf("1..0 # SKIP no CUDA device\n");
		return false;
	}
	const char *s = getenv("ARK_TEST_SEED");
	g_seed = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL) * 1000003u;
	if (!g_seed)
		g_seed = 1;
	printf("# seed %llu (ARK_TEST_SEED to repeat)\n", (unsigned long long)g_seed);
	g_arena_bytes = arena_bytes;
	g_max_tasks = max_tasks;
	CUDA_CHECK(cudaFuncSetAttribute(harness_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, harness_tiles::smem));
	CUDA_CHECK(cudaMalloc(&g_arena, arena_bytes));
	CUDA_CHECK(cudaMalloc(&g_peers, sizeof(char *)));
	CUDA_CHECK(cudaMemcpy(g_peers, &g_arena, sizeof(char *), cudaMemcpyHostToDevice));
	CUDA_CHECK(cudaMalloc(&g_opp, sizeof(ark_opp)));
	CUDA_CHECK(cudaMalloc(&g_tasks, (size_t)max_tasks * sizeof(ark_task)));
	CUDA_CHECK(cudaMalloc(&g_faults, (size_t)max_tasks * 2 * sizeof(uint32_t)));
	return true;
}

/* Tensors of one case: at 256-byte boundaries plus a skew, GUARD poisoned bytes around each. */
struct tcase {
	std::string desc;
	std::vector<ark_tensor> t;
	std::vector<std::vector<unsigned char>> host; /* inputs: random; outputs: GPU result */
	std::vector<int> is_out;
	uint64_t cursor = 256;

	/* Adds a tensor at the next 256-byte boundary plus `skew` bytes, rows `pitch` bytes apart where
	 * given (the bytes between rows stay poisoned: an output's are checked as guards); returns its
	 * index. An output is left poisoned by upload and read back by download. */
	int add(const char *name, int dtype, std::vector<int64_t> shape, bool out, int skew = 0, uint64_t pitch = 0)
	{
		ark_tensor x;
		memset(&x, 0, sizeof x);
		x.name = name;
		x.dtype = (uint8_t)dtype;
		x.role = out ? ARK_ROLE_OUTPUT : ARK_ROLE_INPUT;
		x.ndim = (uint8_t)shape.size();
		for (size_t d = 0; d < shape.size(); d++)
			x.shape[d] = shape[d];
		x.bytes = ark_tensor_bytes(&x); /* a quantized tensor: its blocks */
		x.pitch = pitch;
		x.offset = (cursor + GUARD + 255) / 256 * 256 + skew;
		cursor = x.offset + ark_tensor_extent(&x) + GUARD;
		t.push_back(x);
		host.emplace_back(x.bytes ? x.bytes : 1);
		is_out.push_back(out);
		return (int)t.size() - 1;
	}
	/* Reserves raw arena bytes (the split-K workspace); poisoned like an output. */
	uint64_t reserve(uint64_t bytes)
	{
		uint64_t off = (cursor + GUARD + 255) / 256 * 256;
		cursor = off + bytes + GUARD;
		return off;
	}
};

static void ok(bool pass, const std::string &desc, const char *fmt = "", ...)
{
	g_n++;
	printf("%s %d - %s\n", pass ? "ok" : "not ok", g_n, desc.c_str());
	if (!pass)
		g_failed++;
	if (*fmt) {
		char buf[512];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(buf, sizeof buf, fmt, ap);
		va_end(ap);
		printf("# %s\n", buf);
	}
	fflush(stdout);
}

/* Poisons the whole used arena (0xFF: NaN in every dtype), fills the inputs with fresh random values
 * in [-scale, scale) (quantized: valid blocks; int32: 0 or 1, a mask, or with int32_max >= 0 any
 * value in 0..int32_max) and uploads them. */
static void put(const tcase &c, int i);
static void upload(tcase &c, float scale, int32_t int32_max = -1)
{
	if (c.cursor > g_arena_bytes) {
		printf("Bail out! case '%s' needs %llu arena bytes\n", c.desc.c_str(), (unsigned long long)c.cursor);
		exit(1);
	}
	CUDA_CHECK(cudaMemset(g_arena, 0xff, c.cursor));
	for (size_t i = 0; i < c.t.size(); i++) {
		if (c.is_out[i])
			continue;
		const int64_t n = ark_tensor_elems(&c.t[i]), last = c.t[i].shape[c.t[i].ndim - 1];
		if (ark_dtype_quantized(c.t[i].dtype))
			ark_fill_random_quant(c.host[i].data(), c.t[i].dtype, n / last, last, ++g_seed, scale);
		else if (c.t[i].dtype == ARK_INT32 && int32_max >= 0)
			ark_fill_random_ints(reinterpret_cast<int32_t *>(c.host[i].data()), n, ++g_seed, int32_max);
		else
			ark_fill_random(c.host[i].data(), c.t[i].dtype, n, ++g_seed, scale);
		put(c, i);
	}
}

/* Uploads tensor i again (after a case changed its host values); padded rows at their pitch. */
static void put(const tcase &c, int i)
{
	const ark_tensor &T = c.t[i];
	if (T.pitch) {
		const size_t row = (size_t)ark_row_bytes(T.dtype, T.shape[T.ndim - 1]);
		CUDA_CHECK(cudaMemcpy2D(g_arena + T.offset, T.pitch, c.host[i].data(), row, row, T.bytes / row,
					cudaMemcpyHostToDevice));
	} else {
		CUDA_CHECK(cudaMemcpy(g_arena + T.offset, c.host[i].data(), T.bytes, cudaMemcpyHostToDevice));
	}
}

/* The int32 [1] at ip (a position) set to pos, on the host and on the GPU. */
static void set_pos(tcase &c, int ip, int32_t pos)
{
	memcpy(c.host[ip].data(), &pos, 4);
	put(c, ip);
}

/* Runs the tasks (one launch; several launches run in order when given as groups).
 * ARK_TILES_TIME=1: after the checked launch, the same tasks run again and the time of each CTA's tile
 * (globaltimer around the tile, one task per CTA) is printed as a TAP comment: median and max. */
static unsigned long long *g_ns;

static void launch(const ark_opp &p, const std::vector<ark_task> &tasks, const char *what = "")
{
	if ((int)tasks.size() > g_max_tasks) {
		printf("Bail out! %zu tasks\n", tasks.size());
		exit(1);
	}
	if (tasks.empty())
		return;
	const unsigned smem = harness_tiles::smem;
	CUDA_CHECK(cudaMemcpy(g_opp, &p, sizeof p, cudaMemcpyHostToDevice));
	CUDA_CHECK(cudaMemcpy(g_tasks, tasks.data(), tasks.size() * sizeof(ark_task), cudaMemcpyHostToDevice));
	CUDA_CHECK(cudaMemset(g_faults, 0xff, tasks.size() * 2 * sizeof(uint32_t)));
	harness_kernel<<<(unsigned)tasks.size(), ARK_THREADS, smem>>>(g_opp, g_tasks, g_arena, g_peers, nullptr, g_faults);
	CUDA_CHECK(cudaGetLastError());
	CUDA_CHECK(cudaDeviceSynchronize());
	if (!getenv("ARK_TILES_TIME") || !*what)
		return;
	if (!g_ns)
		CUDA_CHECK(cudaMalloc(&g_ns, (size_t)g_max_tasks * sizeof *g_ns));
	for (int rep = 0; rep < 3; rep++) /* the last of three: code and operands warm */
		harness_kernel<<<(unsigned)tasks.size(), ARK_THREADS, smem>>>(g_opp, g_tasks, g_arena, g_peers, g_ns, nullptr);
	CUDA_CHECK(cudaGetLastError());
	CUDA_CHECK(cudaDeviceSynchronize());
	std::vector<unsigned long long> ns(tasks.size());
	CUDA_CHECK(cudaMemcpy(ns.data(), g_ns, ns.size() * sizeof ns[0], cudaMemcpyDeviceToHost));
	std::sort(ns.begin(), ns.end());
	printf("# time %s: %zu tasks, median %.2f us, max %.2f us\n", what, ns.size(), ns[ns.size() / 2] / 1e3,
	       ns.back() / 1e3);
}

/* Tensor i as the GPU left it into *got (when given), and whether its guards are intact. */
static bool fetch(const tcase &c, int i, std::vector<unsigned char> *got)
{
	const ark_tensor &T = c.t[i];
	unsigned char g[2][GUARD];
	CUDA_CHECK(cudaMemcpy(g[0], g_arena + T.offset - GUARD, GUARD, cudaMemcpyDeviceToHost));
	CUDA_CHECK(cudaMemcpy(g[1], g_arena + T.offset + ark_tensor_extent(&T), GUARD, cudaMemcpyDeviceToHost));
	bool intact = true;
	if (got) {
		if (got->size() < T.bytes)
			got->resize(T.bytes);
		if (T.pitch) { /* rows at their pitch: the bytes between them are guards too */
			const size_t row = (size_t)ark_row_bytes(T.dtype, T.shape[T.ndim - 1]), rows = T.bytes / row;
			std::vector<unsigned char> img(ark_tensor_extent(&T));
			CUDA_CHECK(cudaMemcpy(img.data(), g_arena + T.offset, img.size(), cudaMemcpyDeviceToHost));
			for (size_t r = 0; r < rows; r++) {
				memcpy(got->data() + r * row, img.data() + r * T.pitch, row);
				for (size_t b = row; b < T.pitch; b++)
					intact &= img[r * T.pitch + b] == 0xff;
			}
		} else {
			CUDA_CHECK(cudaMemcpy(got->data(), g_arena + T.offset, T.bytes, cudaMemcpyDeviceToHost));
		}
	}
	for (int s = 0; s < 2; s++)
		for (int b = 0; b < GUARD; b++)
			if (g[s][b] != 0xff)
				return false;
	return intact;
}

/* Downloads the outputs into their host buffers and checks every tensor's guards; returns false (with
 * a message) on a clobbered guard. */
static bool download(tcase &c, std::string &why)
{
	bool good = true;
	for (size_t i = 0; i < c.t.size(); i++)
		if (!fetch(c, (int)i, c.is_out[i] ? &c.host[i] : nullptr) && good) {
			good = false;
			why += "write outside '" + std::string(c.t[i].name) + "' ";
		}
	return good;
}

/* The faults the tiles of the last launch recorded: (task, row, value) of every task with one. */
static std::vector<std::vector<uint32_t>> faults_of(size_t n_tasks)
{
	std::vector<uint32_t> f(2 * n_tasks);
	CUDA_CHECK(cudaMemcpy(f.data(), g_faults, f.size() * sizeof f[0], cudaMemcpyDeviceToHost));
	std::vector<std::vector<uint32_t>> out;
	for (size_t i = 0; i < n_tasks; i++)
		if (f[2 * i])
			out.push_back({(uint32_t)i, f[2 * i] - 1, f[2 * i + 1]});
	return out;
}

static ark_opp opp_base(int kind, int dtype)
{
	ark_opp p;
	memset(&p, 0, sizeof p);
	p.kind = (uint16_t)kind;
	p.dtype = (uint8_t)dtype;
	p.act = ARK_ACT_NONE;
	p.splits = 1;
	p.peer = -1;
	return p;
}

static ark_task task(int tmpl, int64_t m0, int64_t m1, int64_t n0, int64_t n1, int64_t k0, int64_t k1,
		     uint32_t split = 0)
{
	ark_task t;
	memset(&t, 0, sizeof t);
	t.tmpl = (uint8_t)tmpl;
	t.signal = -1;
	t.split = split;
	t.m0 = (uint32_t)m0, t.m1 = (uint32_t)m1, t.n0 = (uint32_t)n0, t.n1 = (uint32_t)n1;
	t.k0 = (uint32_t)k0, t.k1 = (uint32_t)k1;
	return t;
}

/* The CPU reference of op into bufs (one per tensor of c); bails out when it refuses. */
static void ref_or_bail(const ark_op &op, tcase &c, const std::vector<void *> &bufs)
{
	if (ark_ref_op(&op, c.t.data(), bufs.data())) {
		printf("Bail out! CPU reference: %s\n", ark_last_error());
		exit(1);
	}
}

#endif
