// gpu_state.cu: the state tiles (ASSIGN: assign and advance; KV_APPEND) on the GPU against the CPU reference, every dtype (TAP); skips without a GPU.
#include <cuda_runtime.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <string>
#include <vector>

#include "ark.h"
#include "op_state.cuh"

#define CUDA_CHECK(call) cuda_check((call), #call, __FILE__, __LINE__)
static void cuda_check(cudaError_t e, const char *call, const char *file, int line)
{
	if (e == cudaSuccess)
		return;
	printf("Bail out! %s:%d: %s: %s\n", file, line, call, cudaGetErrorString(e));
	exit(1);
}

/* Block b runs tasks[b] through the template's tile struct (as ark_tile's dispatch does: neither is
 * compiled per dtype) and stores the fault it recorded (1 + row, value; 0: none) at faults[2 b]. */
__global__ void __launch_bounds__(ARK_THREADS, 1)
	state_kernel(const ark_opp *opp, const ark_task *tasks, char *arena, uint32_t *faults)
{
	__shared__ uint32_t fault[2];
	const ark_task t = tasks[blockIdx.x];
	if (threadIdx.x == 0)
		fault[0] = fault[1] = 0;
	__syncthreads();
	const ark_tile_env env = {arena, nullptr, nullptr, 0, nullptr, fault};
	if (t.tmpl == ARK_T_ASSIGN)
		ark_tile_assign::run(opp[t.opp], t, env);
	else if (t.tmpl == ARK_T_KV_APPEND)
		ark_tile_kv_append::run(opp[t.opp], t, env);
	else
		__trap();
	__syncthreads();
	if (threadIdx.x == 0)
		faults[2 * blockIdx.x] = fault[0], faults[2 * blockIdx.x + 1] = fault[1];
}

#define ARENA_BYTES (64u << 20)
#define GUARD 64 /* poisoned bytes on each side of every tensor, checked after the run */

static char *g_arena;
static ark_opp *g_opp;
static ark_task *g_tasks;
static uint32_t *g_faults;
static uint64_t g_seed;
static int g_n, g_failed;
static const int g_max_tasks = 4096;
static const char *const dt_name[] = {"fp16", "bf16", "fp32", "int32"};

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

/* Tensors of one case: at 256-byte boundaries plus a skew, GUARD poisoned bytes around each. */
struct tcase {
	std::vector<ark_tensor> t;
	std::vector<std::vector<unsigned char>> host;
	uint64_t cursor = 256;

	int add(const char *name, int dtype, std::vector<int64_t> shape, int skew = 0)
	{
		ark_tensor x;
		memset(&x, 0, sizeof x);
		x.name = name;
		x.dtype = (uint8_t)dtype;
		x.role = ARK_ROLE_STATE;
		x.ndim = (uint8_t)shape.size();
		for (size_t d = 0; d < shape.size(); d++)
			x.shape[d] = shape[d];
		x.bytes = (uint64_t)ark_tensor_elems(&x) * ark_dtype_size(dtype);
		x.offset = (cursor + GUARD + 255) / 256 * 256 + skew;
		cursor = x.offset + x.bytes + GUARD;
		t.push_back(x);
		host.emplace_back(x.bytes ? x.bytes : 1);
		return (int)t.size() - 1;
	}
};

/* Poisons the used arena (0xff), fills every tensor with fresh random values (int32: any value) and
 * uploads them. */
static void upload(tcase &c)
{
	CUDA_CHECK(cudaMemset(g_arena, 0xff, c.cursor));
	for (size_t i = 0; i < c.t.size(); i++) {
		const int64_t n = ark_tensor_elems(&c.t[i]);
		if (c.t[i].dtype == ARK_INT32)
			ark_fill_random_ints(reinterpret_cast<int32_t *>(c.host[i].data()), n, ++g_seed, INT32_MAX);
		else
			ark_fill_random(c.host[i].data(), c.t[i].dtype, n, ++g_seed, 4.0f);
		CUDA_CHECK(cudaMemcpy(g_arena + c.t[i].offset, c.host[i].data(), c.t[i].bytes, cudaMemcpyHostToDevice));
	}
}

static void put(const tcase &c, int i)
{
	CUDA_CHECK(cudaMemcpy(g_arena + c.t[i].offset, c.host[i].data(), c.t[i].bytes, cudaMemcpyHostToDevice));
}

static void launch(const ark_opp &p, const std::vector<ark_task> &tasks)
{
	if ((int)tasks.size() > g_max_tasks) {
		printf("Bail out! %zu tasks\n", tasks.size());
		exit(1);
	}
	CUDA_CHECK(cudaMemcpy(g_opp, &p, sizeof p, cudaMemcpyHostToDevice));
	CUDA_CHECK(cudaMemcpy(g_tasks, tasks.data(), tasks.size() * sizeof(ark_task), cudaMemcpyHostToDevice));
	CUDA_CHECK(cudaMemset(g_faults, 0xff, tasks.size() * 2 * sizeof(uint32_t)));
	state_kernel<<<(unsigned)tasks.size(), ARK_THREADS>>>(g_opp, g_tasks, g_arena, g_faults);
	CUDA_CHECK(cudaGetLastError());
	CUDA_CHECK(cudaDeviceSynchronize());
}

/* Tensor i as the GPU left it into got, and whether its guards are intact. */
static bool download(const tcase &c, int i, std::vector<unsigned char> &got)
{
	unsigned char g[2][GUARD];
	got.resize(c.t[i].bytes);
	CUDA_CHECK(cudaMemcpy(got.data(), g_arena + c.t[i].offset, c.t[i].bytes, cudaMemcpyDeviceToHost));
	CUDA_CHECK(cudaMemcpy(g[0], g_arena + c.t[i].offset - GUARD, GUARD, cudaMemcpyDeviceToHost));
	CUDA_CHECK(cudaMemcpy(g[1], g_arena + c.t[i].offset + c.t[i].bytes, GUARD, cudaMemcpyDeviceToHost));
	for (int s = 0; s < 2; s++)
		for (int b = 0; b < GUARD; b++)
			if (g[s][b] != 0xff)
				return false;
	return true;
}

static std::vector<uint32_t> faults_of(size_t n)
{
	std::vector<uint32_t> f(2 * n);
	CUDA_CHECK(cudaMemcpy(f.data(), g_faults, f.size() * sizeof f[0], cudaMemcpyDeviceToHost));
	return f;
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

static ark_task task(int tmpl, int64_t m0, int64_t m1, int64_t n0, int64_t n1, int64_t k0, int64_t k1)
{
	ark_task t;
	memset(&t, 0, sizeof t);
	t.tmpl = (uint8_t)tmpl;
	t.signal = -1;
	t.m0 = (uint32_t)m0, t.m1 = (uint32_t)m1, t.n0 = (uint32_t)n0, t.n1 = (uint32_t)n1;
	t.k0 = (uint32_t)k0, t.k1 = (uint32_t)k1;
	return t;
}

static void ref_or_bail(const ark_op &op, tcase &c, std::vector<void *> bufs)
{
	if (ark_ref_op(&op, c.t.data(), bufs.data())) {
		printf("Bail out! CPU reference: %s\n", ark_last_error());
		exit(1);
	}
}

/* assign (by = 0) or advance (by != 0, int32) of a state of n elements in chunks of `chunk`: the
 * state must hold the reference's bytes exactly (assign copies bytes; advance wraps). */
static void case_assign(int dt, int64_t n, int64_t chunk, int skew, int32_t by)
{
	char d[160];
	if (by)
		snprintf(d, sizeof d, "advance int32 [%lld] by %d, %lld elements a task%s", (long long)n, by, (long long)chunk,
			 skew ? ", misaligned" : "");
	else
		snprintf(d, sizeof d, "assign %s [%lld], %lld elements a task%s", dt_name[dt], (long long)n, (long long)chunk,
			 skew ? ", misaligned state" : "");
	tcase c;
	const int is = c.add("s", dt, {n}, skew), iv = c.add("v", dt, {n});
	upload(c);
	ark_opp p = opp_base(by ? ARK_OP_ADVANCE : ARK_OP_ASSIGN, dt);
	p.in[0] = c.t[is].offset, p.in[1] = c.t[iv].offset, p.out = c.t[is].offset;
	p.M = 1, p.N = n, p.K = by;
	std::vector<ark_task> tasks;
	for (int64_t e0 = 0; e0 < n; e0 += chunk)
		tasks.push_back(task(ARK_T_ASSIGN, 0, 1, e0, e0 + chunk < n ? e0 + chunk : n, e0, e0 + chunk < n ? e0 + chunk : n));
	launch(p, tasks);
	std::vector<unsigned char> got;
	bool guards = download(c, is, got);
	ark_op op;
	memset(&op, 0, sizeof op);
	op.name = "op";
	op.kind = (uint16_t)(by ? ARK_OP_ADVANCE : ARK_OP_ASSIGN);
	op.n_in = by ? 1 : 2;
	op.in[0] = is, op.in[1] = iv, op.out[0] = is;
	op.start = by;
	ref_or_bail(op, c, {c.host[is].data(), c.host[iv].data()});
	std::vector<uint32_t> f = faults_of(tasks.size());
	bool no_fault = true;
	for (size_t i = 0; i < tasks.size(); i++)
		no_fault &= f[2 * i] == 0;
	int64_t first = -1;
	for (size_t b = 0; b < got.size() && first < 0; b++)
		if (got[b] != c.host[is][b])
			first = (int64_t)b;
	ok(guards && first < 0 && no_fault, d, guards && first < 0 && no_fault ? "" : "guards %s, first byte differing %lld%s",
	   guards ? "intact" : "CLOBBERED", (long long)first, no_fault ? "" : ", a fault recorded");
}

/* kv_append of x [T, D] into a cache [L, D] at position pos, columns in blocks of tn: the cache must
 * hold the reference's bytes (rows pos .. pos + T - 1 replaced, every other row untouched). A pos
 * where the rows do not fit (pos > L - T, or < 0) must write nothing and record the fault (row 0,
 * the position) in every task. */
static void case_kv_append(int dt, int64_t L, int64_t D, int64_t T, int32_t pos, int64_t tn, int skew)
{
	const bool fits = pos >= 0 && (int64_t)pos + T <= L;
	char d[200];
	snprintf(d, sizeof d, "kv_append %s cache [%lld, %lld], rows [%lld, %lld] at position %d, %lld columns a task%s%s",
		 dt_name[dt], (long long)L, (long long)D, (long long)T, (long long)D, pos, (long long)tn,
		 skew ? ", misaligned rows" : "", fits ? "" : ": must abort");
	tcase c;
	const int ic = c.add("cache", dt, {L, D}), ix = c.add("x", dt, {T, D}, skew), ip = c.add("pos", ARK_INT32, {1});
	upload(c);
	*reinterpret_cast<int32_t *>(c.host[ip].data()) = pos;
	put(c, ip);
	ark_opp p = opp_base(ARK_OP_KV_APPEND, dt);
	p.in[0] = c.t[ic].offset, p.in[1] = c.t[ix].offset, p.in[2] = c.t[ip].offset, p.out = c.t[ic].offset;
	p.M = L, p.N = D, p.K = L - T + 1;
	std::vector<ark_task> tasks;
	for (int64_t c0 = 0; c0 < D; c0 += tn)
		tasks.push_back(task(ARK_T_KV_APPEND, 0, T, c0, c0 + tn < D ? c0 + tn : D, 0, 0));
	launch(p, tasks);
	std::vector<unsigned char> got;
	bool guards = download(c, ic, got);
	std::string why;
	std::vector<uint32_t> f = faults_of(tasks.size());
	for (size_t i = 0; i < tasks.size(); i++) {
		const bool want_fault = !fits, has = f[2 * i] != 0;
		if (has != want_fault || (has && (f[2 * i] != 1 || f[2 * i + 1] != (uint32_t)pos))) {
			why += fits ? "a fault recorded for a position that fits " : "the fault not recorded as (row 0, position) ";
			break;
		}
	}
	if (fits) {
		std::vector<unsigned char> out(c.t[ic].bytes);
		c.t.push_back(c.t[ic]); /* the output, a view of the cache: its own host buffer here */
		ark_op op;
		memset(&op, 0, sizeof op);
		op.name = "op";
		op.kind = ARK_OP_KV_APPEND;
		op.n_in = 3, op.n_out = 1;
		op.in[0] = ic, op.in[1] = ix, op.in[2] = ip, op.out[0] = (int)c.t.size() - 1;
		ref_or_bail(op, c, {c.host[ic].data(), c.host[ix].data(), c.host[ip].data(), out.data()});
	} /* else: the reference refuses the position; the cache must be as uploaded */
	int64_t first = -1;
	for (size_t b = 0; b < got.size() && first < 0; b++)
		if (got[b] != c.host[ic][b])
			first = (int64_t)b;
	if (first >= 0) {
		char w[96];
		snprintf(w, sizeof w, "cache differs from row %lld on ", (long long)(first / (D * ark_dtype_size(dt))));
		why += w;
	}
	if (!guards)
		why += "guards CLOBBERED ";
	ok(why.empty(), d, why.empty() ? "" : "%s", why.c_str());
}

int main(void)
{
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		printf("1..0 # SKIP no CUDA device\n");
		return 0;
	}
	const char *s = getenv("ARK_TEST_SEED");
	g_seed = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL) * 1000003u;
	if (!g_seed)
		g_seed = 1;
	printf("# seed %llu (ARK_TEST_SEED to repeat)\n", (unsigned long long)g_seed);
	CUDA_CHECK(cudaMalloc(&g_arena, ARENA_BYTES));
	CUDA_CHECK(cudaMalloc(&g_opp, sizeof(ark_opp)));
	CUDA_CHECK(cudaMalloc(&g_tasks, (size_t)g_max_tasks * sizeof(ark_task)));
	CUDA_CHECK(cudaMalloc(&g_faults, (size_t)g_max_tasks * 2 * sizeof(uint32_t)));

	for (int dt = 0; dt <= ARK_INT32; dt++) { /* the dtypes a state may have (not q4_1, q8_0) */
		const int skew = ark_dtype_size(dt);
		/* assign: one element (a token), odd sizes, chunks that do not divide them, misaligned */
		case_assign(dt, 1, 8, 0, 0);
		case_assign(dt, 7, 8, 0, 0);
		case_assign(dt, 100003, 4096, 0, 0);
		case_assign(dt, 9999, 1000, skew, 0);
		if (dt == ARK_INT32) { /* advance: a position, a counter array, a negative step */
			case_assign(dt, 1, 8, 0, 1);
			case_assign(dt, 77, 16, 0, 3);
			case_assign(dt, 5000, 4096, 0, -7);
			continue;
		}
		/* kv_append: positions 0, 1 and the last that fits (L - 1 for one row), one row and several,
		 * whole rows and blocks of columns, odd widths, misaligned rows; then positions past the
		 * cache and negative: nothing written, the fault recorded */
		for (int64_t L : {1, 7, 511, 2048})
			for (int32_t pos : {0, 1, (int32_t)L - 1}) {
				if (pos >= L)
					continue;
				case_kv_append(dt, L, 576, 1, pos, 576, 0);
				case_kv_append(dt, L, 130, 1, pos, 64, skew);
			}
		case_kv_append(dt, 511, 192, 5, 0, 192, 0);
		case_kv_append(dt, 511, 192, 5, 506, 40, skew);
		case_kv_append(dt, 2048, 1024, 16, 2032, 128, 0);
		case_kv_append(dt, 7, 64, 7, 0, 64, 0);
		case_kv_append(dt, 7, 64, 1, 7, 64, 0);
		case_kv_append(dt, 511, 192, 5, 507, 96, 0);
		case_kv_append(dt, 16, 64, 1, -1, 32, 0);
		case_kv_append(dt, 16, 64, 1, 1 << 30, 64, 0);
	}
	printf("1..%d\n", g_n);
	return g_failed ? 1 : 0;
}
