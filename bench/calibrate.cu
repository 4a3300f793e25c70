// calibrate.cu: measures this GPU for arkgen's cost model and writes the calibration table that
// `arkgen --gpu FILE` reads (format: codegen/calib.h).
//
// Tiles: every point of bench/calib_grid.h runs the tile function the loop kernel calls (ark_tile of
// templates/ark_tiles.cuh) on random data, one CTA of ARK_THREADS threads per SM with the loop
// kernel's shared memory (ARK_SMEM_BYTES: no SM holds two), twice: alone (one CTA, the other SMs
// idle) and busy (one CTA on every SM, each on its own tile of a layer of that shape, device memory
// shared as in the loop kernel). Before each launch L2 is flushed and the tile's activations (a
// matmul's a, an elementwise op's inputs, the split-K workspace) are read back into it, since in the
// loop kernel their producer wrote them just before; weights come from device memory. A tile's time is clock64 around ark_tile, between barriers of the
// CTA (globaltimer for times over 20 us); a launch's figure is CTA 0's time alone, the 90th percentile
// of the SMs' times busy (a layer ends with its slow tiles); a point's, the median of its launches.
//
// Protocol: small hand-made schedules run by the loop kernel itself (templates/ark_loop.cuh through
// the runtime's session), timed from the host per iteration: empty iterations (the doorbell round
// trip), tasks that do nothing (dispatch), a chain of tasks alternating between two SMs, each waiting
// for the one before (signal -> wait hop), and levels of grid barriers (--sync barrier).
//
//   build/bench/calibrate [-o FILE] [-r REPS] [-a TABLE] [-t TEMPLATES]
//                                                 (make calibrate; FILE: bench/calib/<gpu>.txt)
#include <cuda_runtime.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ark.h"
#include "ark_session.h"
#include "ark_tiles.cuh"
#define ARK_SMS 1 /* unused: the probes launch the loop kernel on every SM themselves */
#include "ark_loop.cuh"
#include "bench/calib_grid.h"

#define CK(call) ck((call), #call, __LINE__)
static void ck(cudaError_t e, const char *what, int line)
{
	if (e == cudaSuccess)
		return;
	fprintf(stderr, "calibrate:%d: %s: %s\n", line, what, cudaGetErrorString(e));
	exit(1);
}

static const char *const dt_name[] = {"fp16", "bf16", "fp32"};
static const char *tmpl_lower(int tmpl)
{
	static const char *const n[] = {"matmul", "matmul_partial", "reduce", "elementwise", "ew_chain", "softmax",
					"layernorm", "rmsnorm", "copy"};
	return tmpl < (int)(sizeof n / sizeof n[0]) ? n[tmpl] : "?";
}
static_assert(ARK_T_MATMUL == 0 && ARK_T_REDUCE == 2 && ARK_T_EW_CHAIN == 4 && ARK_T_COPY == 8,
	      "tmpl_lower follows TMPL_ROWS");
/* The template a table names by the len bytes at name, or -1. */
static int tmpl_of(const char *name, size_t len)
{
	for (int t = 0; t <= ARK_T_COPY; t++)
		if (strlen(tmpl_lower(t)) == len && !strncmp(name, tmpl_lower(t), len))
			return t;
	return -1;
}

/* ---- the tile kernel ---------------------------------------------------------------------------- */

/* CTA b runs tasks[b]; cyc[b], ns[b]: its clock64 and globaltimer ticks inside ark_tile. */
__global__ void __launch_bounds__(ARK_THREADS, 1)
	calib_tiles(const ark_opp *opp, const ark_task *tasks, char *arena, long long *cyc, unsigned long long *ns)
{
	const ark_task t = tasks[blockIdx.x];
	unsigned long long g0, g1;
	/* the op's params in shared memory, where the loop kernel stages them before a task (but an
	 * EW_CHAIN's, which it reads from the global table): read from device memory inside the timed
	 * region, their first loads added an L2 round trip or more to every tile */
	__shared__ __align__(16) ark_opp s_opp;
	if (threadIdx.x == 0)
		s_opp = opp[t.opp];
	__syncthreads();
	const ark_opp &p = t.tmpl == ARK_T_EW_CHAIN ? opp[t.opp] : s_opp;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
	const long long c0 = clock64();
	const bool ran = ark_tile(p, t, {arena, nullptr, ark_smem, 1, nullptr});
	__syncthreads();
	const long long c1 = clock64();
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
	if (!ran)
		__trap();
	if (threadIdx.x == 0)
		cyc[blockIdx.x] = c1 - c0, ns[blockIdx.x] = g1 - g0;
}

/* Reads [off, off + bytes) of the arena into L2 (the sum only defeats dead-code elimination). */
__global__ void calib_touch(const char *arena, uint64_t off, uint64_t bytes, unsigned *sink)
{
	const uint4 *p = reinterpret_cast<const uint4 *>(arena + off);
	unsigned s = 0;
	for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < bytes / 16; i += (uint64_t)gridDim.x * blockDim.x)
		s ^= p[i].x;
	if (s == 0x9e3779b9u)
		*sink = s;
}

/* Random values in [-1, 1) of dtype dt over [off, off + elems) (a hash of the index and the seed). */
__global__ void calib_fill(char *arena, uint64_t off, uint64_t elems, int dt, uint32_t seed)
{
	for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < elems; i += (uint64_t)gridDim.x * blockDim.x) {
		uint32_t h = (uint32_t)i * 2654435761u ^ (uint32_t)(i >> 32) ^ seed;
		h ^= h >> 15, h *= 2246822519u, h ^= h >> 13, h *= 3266489917u, h ^= h >> 16;
		const float v = (float)(h >> 8) * (2.0f / 16777216.0f) - 1.0f;
		if (dt == ARK_FP32)
			reinterpret_cast<float *>(arena + off)[i] = v;
		else if (dt == ARK_FP16)
			reinterpret_cast<__half *>(arena + off)[i] = __float2half(v);
		else
			reinterpret_cast<__nv_bfloat16 *>(arena + off)[i] = __float2bfloat16(v);
	}
}

/* SM clock in cycles per ns, over a 2 ms spin. */
__global__ void calib_clock(double *ghz)
{
	unsigned long long g0, g1;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
	const long long c0 = clock64();
	do
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
	while (g1 - g0 < 2000000);
	*ghz = (double)(clock64() - c0) / (double)(g1 - g0);
}

/* ---- the device and its buffers ------------------------------------------------------------------ */

static int g_sms, g_reps = 5;
static double g_ghz;
#include "bench/loop_probe.h" /* after CK and g_sms, which it uses */
static char *g_arena;                 /* [0, IN_BYTES): random inputs; then outputs */
static uint64_t g_in_bytes, g_out_bytes;
static char *g_flush;                 /* twice L2: written before every launch */
static size_t g_flush_bytes;
static ark_opp *g_opp;
static ark_task *g_tasks;
static long long *g_cyc;
static unsigned long long *g_ns;
static unsigned *g_sink;
static int g_filled = -1;             /* dtype the inputs hold */
#define MAX_OPP 64

/* A tile kind set up on the arena: op params, one task per SM (task 0 runs alone), activations. */
struct setup {
	std::vector<ark_opp> opp;
	std::vector<ark_task> tasks;
	std::vector<std::pair<uint64_t, uint64_t>> hot; /* activations: arena offset, bytes */
	uint64_t in_used = 0, out_used = 0;
	uint64_t in(uint64_t bytes) { uint64_t o = in_used; in_used += (bytes + 255) / 256 * 256; return o; }
	uint64_t out(uint64_t bytes) { uint64_t o = g_in_bytes + out_used; out_used += (bytes + 255) / 256 * 256; return o; }
};

/* Matmul and split-K partial: a [m, K] shared by the SMs (an activation), b [K, S n + odd] or its
 * transpose (weights), tile s = columns s n .. (s + 1) n. */
static void setup_matmul(setup &u, const calib_gpoint &p)
{
	const bool tb = p.layout[0] == 'n', odd = strstr(p.layout, "odd") != NULL;
	const int64_t es = ark_dtype_size(p.dtype), K = p.k, N = (int64_t)g_sms * p.n + (odd && !tb);
	ark_opp o = opp_base(ARK_OP_MATMUL, p.dtype);
	o.flags = tb ? ARK_OPP_TRANSPOSE_B : 0;
	o.M = p.m, o.N = N, o.K = K;
	o.in[0] = u.in(p.m * K * es);
	o.in[1] = u.in(K * N * es);
	o.out = u.out(p.m * N * es);
	if (p.tmpl == ARK_T_MATMUL_PARTIAL)
		o.ws = u.out(p.m * N * 4);
	u.hot.push_back({o.in[0], (uint64_t)(p.m * K * es)});
	u.opp.push_back(o);
	for (int s = 0; s < g_sms; s++)
		u.tasks.push_back(task(p.tmpl, 0, p.m, (int64_t)s * p.n, (int64_t)(s + 1) * p.n, 0, K));
}

/* Split-K sum: k fp32 partials [k, m, S n] (just written by the partials: hot) into out. */
static void setup_reduce(setup &u, const calib_gpoint &p)
{
	const int64_t es = ark_dtype_size(p.dtype), N = (int64_t)g_sms * p.n;
	ark_opp o = opp_base(ARK_OP_MATMUL, p.dtype);
	o.M = p.m, o.N = N, o.K = 4096, o.splits = (uint32_t)p.k;
	o.ws = u.in((uint64_t)p.k * p.m * N * 4);
	o.out = u.out(p.m * N * es);
	u.hot.push_back({o.ws, (uint64_t)p.k * p.m * N * 4});
	u.opp.push_back(o);
	for (int s = 0; s < g_sms; s++)
		u.tasks.push_back(task(ARK_T_REDUCE, 0, p.m, (int64_t)s * p.n, (int64_t)(s + 1) * p.n, 0, 4096));
}

/* Elementwise: gelu (k = 1) or add (k = 2) on [S m, n], the second input whole or a row [n]. */
static void setup_elementwise(setup &u, const calib_gpoint &p)
{
	const int64_t es = ark_dtype_size(p.dtype), M = (int64_t)g_sms * p.m, C = p.n;
	const bool same = !strcmp(p.layout, "same");
	ark_opp o = opp_base(p.k == 2 ? ARK_OP_ADD : ARK_OP_GELU, p.dtype);
	o.flags = same ? ARK_OPP_SAME_SHAPE : 0;
	o.M = M, o.N = C, o.ndim = 2, o.oshape[0] = M, o.oshape[1] = C;
	o.in[0] = u.in(M * C * es);
	o.istride[0][0] = C, o.istride[0][1] = 1;
	u.hot.push_back({o.in[0], (uint64_t)(M * C * es)});
	if (p.k == 2) {
		o.in[1] = u.in((same ? M : 1) * C * es);
		o.istride[1][0] = same ? C : 0, o.istride[1][1] = 1;
		u.hot.push_back({o.in[1], (uint64_t)((same ? M : 1) * C * es)});
	}
	o.out = u.out(M * C * es);
	u.opp.push_back(o);
	for (int s = 0; s < g_sms; s++)
		u.tasks.push_back(task(ARK_T_ELEMENTWISE, (int64_t)s * p.m, (int64_t)(s + 1) * p.m, 0, C, 0, 0));
}

/* Chain of k steps (scale, add, scale, ...) over n elements per SM, as bench/chain_probe.cu. */
static void setup_chain(setup &u, const calib_gpoint &p)
{
	const int64_t es = ark_dtype_size(p.dtype), E = (int64_t)g_sms * p.n;
	ark_opp h = opp_base(ARK_OP_SCALE, p.dtype);
	h.splits = (uint32_t)p.k, h.M = 1, h.N = E;
	h.in[0] = u.in(E * es);
	const uint64_t v = u.in(E * es);
	h.out = u.out(E * es);
	u.hot.push_back({h.in[0], (uint64_t)(E * es)});
	u.hot.push_back({v, (uint64_t)(E * es)});
	u.opp.push_back(h);
	for (int i = 0; i < p.k; i++) {
		ark_opp s = opp_base(i % 2 ? ARK_OP_ADD : ARK_OP_SCALE, p.dtype);
		s.f = 1.0001f, s.in[1] = v;
		s.flags = ARK_OPP_SAME_SHAPE; /* the operand has the chain's shape, as arkgen's flags say */
		u.opp.push_back(s);
	}
	for (int s = 0; s < g_sms; s++)
		u.tasks.push_back(task(ARK_T_EW_CHAIN, 0, 1, (int64_t)s * p.n, (int64_t)(s + 1) * p.n, (int64_t)s * p.n,
				       (int64_t)(s + 1) * p.n));
}

/* Softmax, layernorm, rmsnorm: m rows of n per SM. */
static void setup_rows(setup &u, const calib_gpoint &p)
{
	const int64_t es = ark_dtype_size(p.dtype), M = (int64_t)g_sms * p.m, C = p.n;
	const int kind = p.tmpl == ARK_T_SOFTMAX ? ARK_OP_SOFTMAX : p.tmpl == ARK_T_LAYERNORM ? ARK_OP_LAYERNORM : ARK_OP_RMSNORM;
	ark_opp o = opp_base(kind, p.dtype);
	o.M = M, o.N = C, o.f = 1e-5f;
	o.in[0] = u.in(M * C * es);
	o.in[1] = u.in(C * es);
	o.in[2] = u.in(C * es);
	o.out = u.out(M * C * es);
	u.hot.push_back({o.in[0], (uint64_t)(M * C * es)});
	u.opp.push_back(o);
	for (int s = 0; s < g_sms; s++)
		u.tasks.push_back(task(p.tmpl, (int64_t)s * p.m, (int64_t)(s + 1) * p.m, 0, C, 0, 0));
}

static void setup_copy(setup &u, const calib_gpoint &p)
{
	const int64_t es = ark_dtype_size(p.dtype), E = (int64_t)g_sms * p.n;
	ark_opp o = opp_base(ARK_OP_COPY, p.dtype);
	o.M = 1, o.N = E;
	o.in[0] = u.in(E * es);
	o.out = u.out(E * es);
	u.hot.push_back({o.in[0], (uint64_t)(E * es)});
	u.opp.push_back(o);
	for (int s = 0; s < g_sms; s++)
		u.tasks.push_back(task(ARK_T_COPY, 0, 1, 0, 1, (int64_t)s * p.n, (int64_t)(s + 1) * p.n));
}

/* ---- timing ---------------------------------------------------------------------------------------- */

static double cta_us(int b, const std::vector<long long> &cyc, const std::vector<unsigned long long> &ns)
{
	return ns[b] > 20000 ? ns[b] * 1e-3 : cyc[b] / g_ghz * 1e-3;
}

/* One launch of `ctas` tasks after a flush of L2 and a read of the activations: CTA 0's time (us)
 * alone, the 90th percentile of the CTAs' busy. */
static double launch(const setup &u, int ctas)
{
	static std::vector<long long> cyc;
	static std::vector<unsigned long long> ns;
	cyc.resize(ctas), ns.resize(ctas);
	CK(cudaMemsetAsync(g_flush, rand() & 0xff, g_flush_bytes));
	for (const auto &h : u.hot)
		calib_touch<<<2 * g_sms, 512>>>(g_arena, h.first, std::min<uint64_t>(h.second, g_flush_bytes / 4), g_sink);
	calib_tiles<<<ctas, ARK_THREADS, ARK_SMEM_BYTES>>>(g_opp, g_tasks, g_arena, g_cyc, g_ns);
	CK(cudaGetLastError());
	CK(cudaMemcpy(cyc.data(), g_cyc, ctas * sizeof(long long), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(ns.data(), g_ns, ctas * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
	std::vector<double> t(ctas);
	for (int b = 0; b < ctas; b++)
		t[b] = cta_us(b, cyc, ns);
	std::sort(t.begin(), t.end());
	return t[(ctas * 9) / 10 < ctas ? (ctas * 9) / 10 : ctas - 1];
}

/* Median over g_reps launches after one warm-up. */
static double measure(const setup &u, int ctas)
{
	std::vector<double> t;
	launch(u, ctas);
	for (int r = 0; r < g_reps; r++)
		t.push_back(launch(u, ctas));
	std::sort(t.begin(), t.end());
	return t[t.size() / 2];
}

/* Measures one grid point: 0, or -1 when it does not fit in the arena. */
static int measure_point(const calib_gpoint &p, double us[2])
{
	setup u;
	switch (p.tmpl) {
	case ARK_T_MATMUL:
	case ARK_T_MATMUL_PARTIAL: setup_matmul(u, p); break;
	case ARK_T_REDUCE: setup_reduce(u, p); break;
	case ARK_T_ELEMENTWISE: setup_elementwise(u, p); break;
	case ARK_T_EW_CHAIN: setup_chain(u, p); break;
	case ARK_T_COPY: setup_copy(u, p); break;
	default: setup_rows(u, p); break;
	}
	if (u.in_used > g_in_bytes || u.out_used > g_out_bytes || u.opp.size() > MAX_OPP)
		return -1;
	if (g_filled != p.dtype) { /* inputs: random values of this dtype */
		calib_fill<<<4 * g_sms, 512>>>(g_arena, 0, g_in_bytes / ark_dtype_size(p.dtype), p.dtype, 12345u + p.dtype);
		CK(cudaGetLastError());
		g_filled = p.dtype;
	}
	CK(cudaMemcpy(g_opp, u.opp.data(), u.opp.size() * sizeof(ark_opp), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(g_tasks, u.tasks.data(), u.tasks.size() * sizeof(ark_task), cudaMemcpyHostToDevice));
	us[0] = measure(u, 1);
	us[1] = measure(u, g_sms);
	return 0;
}

/* ---- main ------------------------------------------------------------------------------------------ */

/* bench/calib/h100.txt for an H100, and so on; the GPU's name in lower case otherwise. */
static std::string default_output(const char *gpu)
{
	for (const char *k : {"H100", "H200", "H20", "B200", "A100", "L40S", "GH200", "GB200"})
		if (strstr(gpu, k)) {
			std::string s = k;
			for (char &c : s)
				c = (char)tolower(c);
			return "bench/calib/" + s + ".txt";
		}
	std::string s;
	for (const char *p = gpu; *p; p++)
		s += isalnum((unsigned char)*p) ? (char)tolower(*p) : '-';
	return "bench/calib/" + s + ".txt";
}

/* Whether this build has the tiles of dtype dt: `make calibrate-split` builds one binary a dtype
 * (ARK_TILES_FP16, _BF16, _FP32), as ptxas needs more memory for all three in one kernel with sm_90a
 * than a small build machine has; each measures its own points, and -a joins the tables. */
static bool dtype_built(int dt)
{
	return dt == ARK_FP16 ? ARK_TILES_FP16 : dt == ARK_BF16 ? ARK_TILES_BF16 : ARK_TILES_FP32;
}

/* -t: the templates this run measures, a bit each (0: every one). */
static uint32_t g_only;
static bool tmpl_measured(int tmpl) { return !g_only || (g_only >> tmpl & 1); }

/* A copy point of n elements of dtype dt (us: alone, every SM busy) into the bandwidths: its bytes
 * over its time, what one SM and all of them get. */
static void take_copy(int dt, int n, const double us[2], double &sm_gbps, double &dram_gbps)
{
	const double bytes = 2.0 * ark_dtype_size(dt) * n;
	sm_gbps = std::max(sm_gbps, bytes / us[0] * 1e-3);
	dram_gbps = std::max(dram_gbps, bytes * g_sms / us[1] * 1e-3);
}

/* -a: appends to body the tile points of the table at path (lines that start with a template's
 * name; its header and protocol lines are this run's to measure) but those of the templates and
 * dtypes this run measured, and takes its copy points into the bandwidths as this run's own. */
static int append_points(const char *path, std::string &body, double &sm_gbps, double &dram_gbps)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "calibrate: %s: %s\n", path, strerror(errno));
		return -1;
	}
	char line[256];
	int added = 0;
	while (fgets(line, sizeof line, f)) {
		char tmpl[32], dt[8];
		int m, n, k;
		double us[2];
		if (sscanf(line, "%31s %7s %*s %d %d %d %lf %lf", tmpl, dt, &m, &n, &k, &us[0], &us[1]) != 7)
			continue;
		const int known = tmpl_of(tmpl, strlen(tmpl));
		int d = -1;
		for (int i = 0; i < (int)(sizeof dt_name / sizeof dt_name[0]); i++)
			if (!strcmp(dt, dt_name[i]))
				d = i;
		if (known < 0 || d < 0 || (tmpl_measured(known) && dtype_built(d)))
			continue;
		body += line;
		added++;
		if (known == ARK_T_COPY)
			take_copy(d, n, us, sm_gbps, dram_gbps);
	}
	fclose(f);
	fprintf(stderr, "calibrate: %d points from %s\n", added, path);
	return added > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	std::string out, add;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-o") && i + 1 < argc)
			out = argv[++i];
		else if (!strcmp(argv[i], "-a") && i + 1 < argc)
			add = argv[++i];
		else if (!strcmp(argv[i], "-r") && i + 1 < argc && atoi(argv[i + 1]) > 0)
			g_reps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-t") && i + 1 < argc) {
			/* names as the table writes them, comma-separated */
			const char *list = argv[++i];
			for (const char *a = list, *b; *list; a = b + 1) {
				b = a + strcspn(a, ",");
				const int t = tmpl_of(a, (size_t)(b - a));
				if (t < 0) {
					fprintf(stderr, "calibrate: -t: no template '%.*s' in the table\n", (int)(b - a), a);
					return 2;
				}
				g_only |= 1u << t;
				if (!*b)
					break;
			}
		} else {
			fprintf(stderr, "usage: calibrate [-o FILE] [-r REPS] [-a TABLE] [-t TEMPLATES]\n"
					"measures the tile templates and the loop kernel's protocol on GPU 0 and writes\n"
					"the calibration table arkgen --gpu FILE reads (default FILE: bench/calib/<gpu>.txt);\n"
					"-a: the tile points of TABLE (written by a build of other dtypes, or before a\n"
					"    template changed) join this one's, but those this run measures;\n"
					"-t: measure only these templates (comma-separated, as the table names them:\n"
					"    layernorm,softmax), the others' points coming from -a TABLE\n");
			return 2;
		}
	}
	int ndev = 0;
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		printf("calibrate: no CUDA device here: nothing measured, no table written (run it on the GPU machine)\n");
		return 0;
	}
	cudaDeviceProp prop;
	CK(cudaGetDeviceProperties(&prop, 0));
	g_sms = prop.multiProcessorCount;
	if (out.empty())
		out = default_output(prop.name);
	const double t_start = now_us();

	/* arena: inputs and outputs of the largest layer of the grid */
	g_in_bytes = 2560ull << 20, g_out_bytes = 1280ull << 20;
	g_flush_bytes = 2 * (size_t)prop.l2CacheSize;
	CK(cudaMalloc(&g_arena, g_in_bytes + g_out_bytes));
	CK(cudaMalloc(&g_flush, g_flush_bytes));
	CK(cudaMalloc(&g_opp, MAX_OPP * sizeof(ark_opp)));
	CK(cudaMalloc(&g_tasks, g_sms * sizeof(ark_task)));
	CK(cudaMalloc(&g_cyc, g_sms * sizeof(long long)));
	CK(cudaMalloc(&g_ns, g_sms * sizeof(unsigned long long)));
	CK(cudaMalloc(&g_sink, sizeof(unsigned)));
	/* the loop kernel's shared memory, not only the templates': one CTA per SM, as the loop kernel runs */
	CK(cudaFuncSetAttribute(calib_tiles, cudaFuncAttributeMaxDynamicSharedMemorySize, ARK_SMEM_BYTES));
	CK(cudaFuncSetAttribute(calib_loop, cudaFuncAttributeMaxDynamicSharedMemorySize, ARK_SMEM_BYTES));
	double *d_ghz;
	CK(cudaMalloc(&d_ghz, sizeof(double)));
	calib_clock<<<1, 1>>>(d_ghz);
	CK(cudaMemcpy(&g_ghz, d_ghz, sizeof(double), cudaMemcpyDeviceToHost));
	fprintf(stderr, "calibrate: %s, %d SMs, SM clock %.0f MHz, L2 %d MiB; writing %s\n", prop.name, g_sms, g_ghz * 1e3,
		prop.l2CacheSize >> 20, out.c_str());

	const int n = calib_grid(NULL, 0);
	std::vector<calib_gpoint> pts(n);
	calib_grid(pts.data(), n);
	std::string body;
	double sm_gbps = 0, dram_gbps = 0;
	int skipped = 0;
	int other = 0;
	for (int i = 0; i < n; i++) {
		const calib_gpoint &p = pts[i];
		double us[2];
		if (!dtype_built(p.dtype) || !tmpl_measured(p.tmpl)) { /* measured by another build or run (-a) */
			other++;
			continue;
		}
		if (measure_point(p, us) < 0) {
			skipped++;
			continue;
		}
		char line[160];
		snprintf(line, sizeof line, "%s %s %s %d %d %d %.4g %.4g\n", tmpl_lower(p.tmpl), dt_name[p.dtype], p.layout, p.m,
			 p.n, p.k, us[0], us[1]);
		body += line;
		if (p.tmpl == ARK_T_COPY)
			take_copy(p.dtype, p.n, us, sm_gbps, dram_gbps);
		if (i % 100 == 99)
			fprintf(stderr, "calibrate: %d of %d points, %.0f s\n", i + 1, n, (now_us() - t_start) * 1e-6);
	}
	if (!add.empty() && append_points(add.c_str(), body, sm_gbps, dram_gbps) < 0)
		return 1;
	if (other)
		fprintf(stderr, "calibrate: %d points of dtypes or templates this run leaves out%s\n", other,
			add.empty() ? " (none given with -a: the table lacks them)" : ", from -a");
	struct protocol proto;
	measure_protocol(&proto);
	struct launches launch;
	measure_launches(&launch);

	char date[32];
	time_t now = time(NULL);
	strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
	std::string tmp = out + ".tmp";
	FILE *f = fopen(tmp.c_str(), "w");
	if (!f) {
		fprintf(stderr, "calibrate: cannot write %s\n", tmp.c_str());
		return 1;
	}
	fprintf(f, "# arkgen calibration table, measured by bench/calibrate (arkgen --gpu FILE reads it; codegen/calib.h\n"
		   "# is the format). Tiles: one CTA of %d threads per SM, alone and with every SM busy; median of %d\n"
		   "# launches; SM clock %.0f MHz; %d of %d points did not fit and were left out.\n",
		ARK_THREADS, g_reps, g_ghz * 1e3, skipped, n);
	fprintf(f, "gpu %s\nsms %d\nthreads %d\ndate %s\nsource measured\n", prop.name, g_sms, ARK_THREADS, date);
	fprintf(f, "proto task_us %.4g\nproto hop_us %.4g\nproto doorbell_us %.4g\nproto barrier_us %.4g\n", proto.task,
		proto.hop, proto.empty, proto.barrier);
	fprintf(f, "proto dram_gbps %.4g\nproto sm_gbps %.4g\n", dram_gbps, sm_gbps);
	fprintf(f, "proto launch_us %.4g\nproto kernel_gap_us %.4g\nproto event_us %.4g\nproto event_host_us %.4g\n"
		   "proto sync_us %.4g\n", launch.launch, launch.gap, launch.event, launch.event_host, launch.sync);
	fprintf(f, "# template dtype layout m n k alone_us busy_us\n%s", body.c_str());
	if (fclose(f) != 0 || rename(tmp.c_str(), out.c_str()) != 0) {
		fprintf(stderr, "calibrate: cannot write %s\n", out.c_str());
		return 1;
	}
	fprintf(stderr, "calibrate: wrote %s: %d points, %.0f s\n", out.c_str(), n - skipped, (now_us() - t_start) * 1e-6);
	return 0;
}
