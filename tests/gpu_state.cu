// gpu_state.cu: the state tiles (ASSIGN: assign and advance; KV_APPEND) on the GPU against the CPU reference, every dtype (TAP); skips without a GPU.
#include "ark.h"
#include "op_state.cuh"

/* The state tiles only (so that this test does not compile every template), through their tile
 * structs as ark_tile's dispatch does: neither is compiled per dtype. */
struct harness_tiles {
	static constexpr int smem = 0;
	static __device__ __forceinline__ bool run(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
	{
		if (t.tmpl == ARK_T_ASSIGN)
			ark_tile_assign::run(p, t, e);
		else if (t.tmpl == ARK_T_KV_APPEND)
			ark_tile_kv_append::run(p, t, e);
		else
			return false;
		return true;
	}
};
#include "gpu_harness.cuh"

#define ARENA_BYTES (64u << 20)

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
	c.desc = d;
	const int is = c.add("s", dt, {n}, false, skew), iv = c.add("v", dt, {n}, false);
	upload(c, 4.0f, INT32_MAX);
	ark_opp p = opp_base(by ? ARK_OP_ADVANCE : ARK_OP_ASSIGN, dt);
	p.in[0] = c.t[is].offset, p.in[1] = c.t[iv].offset, p.out = c.t[is].offset;
	p.M = 1, p.N = n, p.K = by;
	std::vector<ark_task> tasks;
	for (int64_t e0 = 0; e0 < n; e0 += chunk)
		tasks.push_back(task(ARK_T_ASSIGN, 0, 1, e0, e0 + chunk < n ? e0 + chunk : n, e0, e0 + chunk < n ? e0 + chunk : n));
	launch(p, tasks);
	std::vector<unsigned char> got;
	bool guards = fetch(c, is, &got);
	ark_op op;
	memset(&op, 0, sizeof op);
	op.name = "op";
	op.kind = (uint16_t)(by ? ARK_OP_ADVANCE : ARK_OP_ASSIGN);
	op.n_in = by ? 1 : 2;
	op.in[0] = is, op.in[1] = iv, op.out[0] = is;
	op.start = by;
	ref_or_bail(op, c, {c.host[is].data(), c.host[iv].data()});
	const bool no_fault = faults_of(tasks.size()).empty();
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
	c.desc = d;
	const int ic = c.add("cache", dt, {L, D}, false), ix = c.add("x", dt, {T, D}, false, skew),
		  ip = c.add("pos", ARK_INT32, {1}, false);
	upload(c, 4.0f, INT32_MAX);
	set_pos(c, ip, pos);
	ark_opp p = opp_base(ARK_OP_KV_APPEND, dt);
	p.in[0] = c.t[ic].offset, p.in[1] = c.t[ix].offset, p.in[2] = c.t[ip].offset, p.out = c.t[ic].offset;
	p.M = L, p.N = D, p.K = L - T + 1;
	std::vector<ark_task> tasks;
	for (int64_t c0 = 0; c0 < D; c0 += tn)
		tasks.push_back(task(ARK_T_KV_APPEND, 0, T, c0, c0 + tn < D ? c0 + tn : D, 0, 0));
	launch(p, tasks);
	std::vector<unsigned char> got;
	bool guards = fetch(c, ic, &got);
	std::string why;
	/* (task, row, value) of every task that recorded a fault: none, or every task's (row 0, pos) */
	const std::vector<std::vector<uint32_t>> f = faults_of(tasks.size());
	bool faults_right = f.size() == (fits ? 0 : tasks.size());
	for (const std::vector<uint32_t> &x : f)
		faults_right &= x[1] == 0 && x[2] == (uint32_t)pos;
	if (!faults_right)
		why += fits ? "a fault recorded for a position that fits " : "the fault not recorded as (row 0, position) ";
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
	if (!harness_init(ARENA_BYTES, 4096))
		return 0;

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
