// op_elementwise.cuh: ELEMENTWISE and EW_CHAIN tiles of every op of EW_LIST (ark_dtype.cuh) and copy, same-shape or broadcast.
#ifndef OP_ELEMENTWISE_CUH
#define OP_ELEMENTWISE_CUH

#include "ark_dtype.cuh"

#include "ark_smem.h" /* ARK_SMEM_* */

/* The op on fp32 values: x = in[0], y = in[1] (two-input kinds), f = p.f; COPY is the identity. */
template <int KIND> __device__ __forceinline__ float ark_ew_f(float x, float y, float f)
{
#define X(id, n, fn)                       \
	if constexpr (KIND == ARK_OP_##id) \
		return fn(x, y, f);
	EW_LIST(X)
#undef X
	return x; /* COPY */
}

/* The kinds EW_LIST computes; every op that the catalog flags ARK_OPF_ELEMENTWISE must be one of
 * them, so one added to the catalog without its function, which the switches below would pass
 * through as a copy, does not compile. */
__host__ __device__ constexpr bool ark_ew_handles(int kind)
{
	return false
#define X(id, n, fn) || kind == ARK_OP_##id
		EW_LIST(X)
#undef X
		;
}
#define X(id, name, min_in, max_in, n_out, attrs, flags) \
	&&(!((flags) & ARK_OPF_ELEMENTWISE) || ark_ew_handles(ARK_OP_##id))
static_assert(true OP_LIST(X), "an elementwise op of the catalog has no function in EW_LIST (ark_dtype.cuh)");
#undef X

/* Inputs of an elementwise kind (1 or 2). */
__host__ __device__ constexpr int ark_ew_inputs(int kind)
{
	return 1
#define X(id, n, fn) + (kind == ARK_OP_##id ? (n) - 1 : 0)
		EW_LIST(X)
#undef X
		;
}
template <int KIND> struct ark_ew_arity {
	static constexpr int n = ark_ew_inputs(KIND);
};

/* out[e] = op(x[e], y[e]) for e in [e0, e1), a contiguous range; 16-byte vectors where aligned. */
template <typename T, int KIND>
__device__ void ark_ew_range(const T *x, const T *y, T *o, size_t e0, size_t e1, float f)
{
	constexpr int VEC = ark_dt<T>::vec, NIN = ark_ew_arity<KIND>::n;
	const int tid = threadIdx.x;
	size_t vb = e1, ve = e1; /* vector range [vb, ve) */
	if (ark_aligned16(x) && ark_aligned16(o) && (NIN == 1 || ark_aligned16(y))) {
		vb = min(e1, (e0 + VEC - 1) / VEC * VEC);
		ve = vb + (e1 - vb) / VEC * VEC;
	}
	/* scalar head [e0, vb) and tail [ve, e1) */
	const size_t nh = vb - e0, nt = e1 - ve;
	for (size_t i = tid; i < nh + nt; i += ARK_THREADS) {
		const size_t e = i < nh ? e0 + i : ve + (i - nh);
		const float yv = NIN == 2 ? ark_to_f(y[e]) : 0.0f;
		o[e] = ark_from_f<T>(ark_ew_f<KIND>(ark_to_f(x[e]), yv, f));
	}
	const size_t nv = (ve - vb) / VEC;
	const T *xv = x + vb, *yv = NIN == 2 ? y + vb : nullptr;
	T *ov = o + vb;
	size_t i = tid;
	for (; i + 3 * ARK_THREADS < nv; i += 4 * ARK_THREADS) { /* four vectors in flight */
		uint4 qx[4], qy[4];
#pragma unroll
		for (int u = 0; u < 4; u++) {
			qx[u] = ark_ld16(xv + (i + u * ARK_THREADS) * VEC);
			if (NIN == 2)
				qy[u] = ark_ld16(yv + (i + u * ARK_THREADS) * VEC);
		}
#pragma unroll
		for (int u = 0; u < 4; u++) {
			float a[VEC], bv[VEC];
			ark_unpack<T>(qx[u], a);
			if (NIN == 2)
				ark_unpack<T>(qy[u], bv);
#pragma unroll
			for (int j = 0; j < VEC; j++)
				a[j] = ark_ew_f<KIND>(a[j], NIN == 2 ? bv[j] : 0.0f, f);
			ark_st16(ov + (i + u * ARK_THREADS) * VEC, ark_pack<T>(a));
		}
	}
	for (; i < nv; i += ARK_THREADS) {
		float a[VEC], bv[VEC];
		ark_unpack<T>(ark_ld16(xv + i * VEC), a);
		if (NIN == 2)
			ark_unpack<T>(ark_ld16(yv + i * VEC), bv);
#pragma unroll
		for (int j = 0; j < VEC; j++)
			a[j] = ark_ew_f<KIND>(a[j], NIN == 2 ? bv[j] : 0.0f, f);
		ark_st16(ov + i * VEC, ark_pack<T>(a));
	}
}

/* The op with the kind known only at run time. */
__device__ __forceinline__ float ark_ew_rt(int kind, float x, float y, float f)
{
	switch (kind) {
#define X(id, n, fn) \
	case ARK_OP_##id: return fn(x, y, f);
		EW_LIST(X)
#undef X
	default: return x; /* COPY */
	}
}

/* The op of kind KIND, or with KIND < 0 the run-time `kind` (every kind: one copy per dtype). */
template <int KIND> __device__ __forceinline__ float ark_ew_fk(int kind, float x, float y, float f)
{
	if constexpr (KIND < 0)
		return ark_ew_rt(kind, x, y, f);
	else
		return ark_ew_f<KIND>(x, y, f);
}

/* Where a broadcasting op's inputs are, for the rows of out: out is [M, N] (N its last dimension),
 * row m has indices i_0..i_{no-1} over out's outer dimensions, and input k reads element n of row m
 * at sum_d i_d s[k][d] + n in[k] (in[k] = 1: stride 1 along the last dimension; 0: broadcast along
 * it, every element of the row reads the one at the row's offset). */
struct ark_ew_rows {
	uint32_t shp[3];   /* out's outer dimensions, no of them */
	int64_t s[2][3];   /* the inputs' strides along them (0: broadcast) */
	int no;
	bool in[2];
	/* the offsets of row m in both inputs: 32-bit divisions by the outer dimensions but the first */
	__device__ __forceinline__ void at(uint32_t m, int64_t &ox, int64_t &oy) const
	{
		ox = 0, oy = 0;
#pragma unroll
		for (int d = 2; d >= 1; d--)
			if (d < no) {
				const uint32_t q = m / shp[d], i = m - q * shp[d];
				ox += (int64_t)i * s[0][d], oy += (int64_t)i * s[1][d];
				m = q;
			}
		if (no > 0)
			ox += (int64_t)m * s[0][0], oy += (int64_t)m * s[1][0];
	}
};

/* Input values of one item, W elements of a row from p (along: stride 1; else one element, repeated). */
template <typename T, int W>
__device__ __forceinline__ void ark_ew_item(const T *p, bool along, float (&v)[W])
{
	if (!along) {
		const float e = ark_to_f(*p);
#pragma unroll
		for (int j = 0; j < W; j++)
			v[j] = e;
	} else if constexpr (W > 1) {
		ark_unpack<T>(ark_ld16(p), v);
	} else {
		v[0] = ark_to_f(*p);
	}
}

/* Broadcasting, items of W elements (W = the dtype's 16-byte vector, or 1) of rows m0:m0+rows, cols
 * n0:n0+tn of out [M, N]: a row's offsets are worked out once per item, and every thread has U items'
 * loads in flight before it computes any (one element at a time, with 64-bit divisions per element
 * and dimension, an add of a [1168] bias to 64 rows took 12.6 us a task: bench/NOTES.md). */
template <typename T, int KIND, int W>
__device__ __forceinline__ void ark_ew_bcast_w(const ark_ew_rows &rw, int kind, const T *x, const T *y, T *o, uint32_t m0,
					       uint32_t rows, uint32_t n0, uint32_t tn, uint64_t N, float f)
{
	constexpr int U = 4;
	const uint32_t per_row = tn / W, cnt = rows * per_row;
	for (uint32_t q0 = threadIdx.x; q0 < cnt; q0 += U * ARK_THREADS) {
		float a[U][W], b[U][W];
		uint64_t oe[U];
#pragma unroll
		for (int u = 0; u < U; u++) {
			const uint32_t q = q0 + u * ARK_THREADS;
			oe[u] = ~0ull;
			if (q >= cnt)
				continue;
			const uint32_t r = q / per_row, n = n0 + (q - r * per_row) * W, m = m0 + r;
			int64_t ox, oy;
			rw.at(m, ox, oy);
			oe[u] = (uint64_t)m * N + n;
			ark_ew_item<T, W>(x + ox + (rw.in[0] ? n : 0), rw.in[0], a[u]);
			if (y)
				ark_ew_item<T, W>(y + oy + (rw.in[1] ? n : 0), rw.in[1], b[u]);
		}
#pragma unroll
		for (int u = 0; u < U; u++) {
			if (oe[u] == ~0ull)
				continue;
#pragma unroll
			for (int j = 0; j < W; j++)
				a[u][j] = ark_ew_fk<KIND>(kind, a[u][j], y ? b[u][j] : 0.0f, f);
			if constexpr (W > 1)
				ark_st16(o + oe[u], ark_pack<T>(a[u]));
			else
				o[oe[u]] = ark_from_f<T>(a[u][0]);
		}
	}
}

/* Broadcasting: rows m0:m1, cols n0:n1 of out's [M, N] view (N = oshape[ndim - 1]; arkgen asserts
 * it); input i reads out's element (i_0, .., i_{nd-1}) at sum_d i_d istride[i][d], where the last
 * stride is 1 or 0. 16-byte vectors of out where every row of the tile allows them (N, n0 and the
 * tile's width multiples of the vector, the tensors 16-byte aligned; an input broadcast along the
 * last dimension is read one element a row), else elements. */
template <typename T, int KIND>
__device__ __noinline__ void ark_ew_bcast_k(const ark_opp &p, size_t m0, size_t m1, size_t n0, size_t n1, char *arena)
{
	constexpr int VEC = ark_dt<T>::vec;
	const int kind = p.kind, nd = p.ndim;
	const bool two = ark_ew_inputs(kind) == 2;
	const T *x = reinterpret_cast<const T *>(arena + p.in[0]);
	const T *y = two ? reinterpret_cast<const T *>(arena + p.in[1]) : nullptr;
	T *o = reinterpret_cast<T *>(arena + p.out);
	ark_ew_rows rw;
	rw.no = nd - 1;
#pragma unroll
	for (int d = 0; d < 3; d++) {
		rw.shp[d] = d < nd - 1 ? (uint32_t)p.oshape[d] : 1;
		rw.s[0][d] = d < nd - 1 ? p.istride[0][d] : 0;
		rw.s[1][d] = d < nd - 1 && two ? p.istride[1][d] : 0;
	}
	rw.in[0] = p.istride[0][nd - 1] != 0;
	rw.in[1] = two && p.istride[1][nd - 1] != 0;
	const uint64_t N = p.N;
	const uint32_t tn = (uint32_t)(n1 - n0);
	const bool vec = N % VEC == 0 && n0 % VEC == 0 && tn % VEC == 0 && ark_aligned16(o) &&
			 (!rw.in[0] || ark_aligned16(x)) && (!rw.in[1] || ark_aligned16(y));
	if (vec)
		ark_ew_bcast_w<T, KIND, VEC>(rw, kind, x, y, o, (uint32_t)m0, (uint32_t)(m1 - m0), (uint32_t)n0, tn, N, p.f);
	else
		ark_ew_bcast_w<T, KIND, 1>(rw, kind, x, y, o, (uint32_t)m0, (uint32_t)(m1 - m0), (uint32_t)n0, tn, N, p.f);
}

/* Only two-input kinds broadcast (a one-input op's out has its input's shape): one copy each, and
 * one for any other kind. */
template <typename T>
__device__ __forceinline__ void ark_ew_bcast(const ark_opp &p, size_t m0, size_t m1, size_t n0, size_t n1, char *arena)
{
	switch (p.kind) {
#define X(id, n, fn)                                                        \
	case ARK_OP_##id:                                                   \
		if constexpr (n == 2) {                                     \
			ark_ew_bcast_k<T, ARK_OP_##id>(p, m0, m1, n0, n1, arena); \
			return;                                             \
		}                                                           \
		break;
		EW_LIST(X)
#undef X
	default: break;
	}
	ark_ew_bcast_k<T, -1>(p, m0, m1, n0, n1, arena);
}

/* Same shape: rows m0:m1, cols n0:n1 of out's 2-D view [M, N] (N = p.N), input element e at e. */
template <typename T, int KIND>
__device__ __noinline__ void ark_ew_kind(const ark_opp &p, size_t m0, size_t m1, size_t n0, size_t n1, char *arena)
{
	constexpr int VEC = ark_dt<T>::vec, NIN = ark_ew_arity<KIND>::n;
	const T *x = reinterpret_cast<const T *>(arena + p.in[0]);
	const T *y = NIN == 2 ? reinterpret_cast<const T *>(arena + p.in[1]) : nullptr;
	T *o = reinterpret_cast<T *>(arena + p.out);
	const size_t N = p.N;
	const float f = p.f;
	if (n0 == 0 && n1 == N) { /* whole rows: one contiguous range */
		ark_ew_range<T, KIND>(x, y, o, m0 * N, m1 * N, f);
		return;
	}
	/* a column band: (row, vector) pairs spread over the threads */
	const size_t tn = n1 - n0;
	const bool vec = N % VEC == 0 && n0 % VEC == 0 && tn % VEC == 0 && ark_aligned16(x) && ark_aligned16(o) &&
			 (NIN == 1 || ark_aligned16(y));
	const size_t w = vec ? VEC : 1, per_row = tn / w, cnt = (m1 - m0) * per_row;
	for (size_t q = threadIdx.x; q < cnt; q += ARK_THREADS) {
		const size_t r = q / per_row;
		const size_t e = (m0 + r) * N + n0 + (q - r * per_row) * w;
		if (vec) {
			float a[VEC], bv[VEC];
			ark_unpack<T>(ark_ld16(x + e), a);
			if (NIN == 2)
				ark_unpack<T>(ark_ld16(y + e), bv);
#pragma unroll
			for (int j = 0; j < VEC; j++)
				a[j] = ark_ew_f<KIND>(a[j], NIN == 2 ? bv[j] : 0.0f, f);
			ark_st16(o + e, ark_pack<T>(a));
		} else {
			const float yv = NIN == 2 ? ark_to_f(y[e]) : 0.0f;
			o[e] = ark_from_f<T>(ark_ew_f<KIND>(ark_to_f(x[e]), yv, f));
		}
	}
}

/* One chain step on a thread's values: v = op(v, y) (op(y, v) with in1), rounded to T as if stored. */
template <typename T, int KIND, int U, int VEC>
__device__ __forceinline__ void ark_chain_apply(float (&v)[U][VEC], const float (&y)[U][VEC], float f, bool in1)
{
#pragma unroll
	for (int u = 0; u < U; u++)
#pragma unroll
		for (int j = 0; j < VEC; j++) {
			const float r = in1 ? ark_ew_f<KIND>(y[u][j], v[u][j], f) : ark_ew_f<KIND>(v[u][j], y[u][j], f);
			v[u][j] = ark_to_f(ark_from_f<T>(r));
		}
}

#define ARK_CHAIN_BLOCK 128 /* steps whose descriptors sit in shared memory at once */

/* A chain step as the template keeps it in shared memory (32 bytes: two loads). Out's element e
 * reads the operand's element e where mod = 0 (same shape), else (e / div) % mod: a row of bias or
 * scale repeated (div 1), a column (div a row's length), a tensor of out's trailing dimensions;
 * arkgen chains no other broadcast (codegen/fuse.c: fuse_chain_repeats). */
struct __align__(16) ark_chain_step {
	uint64_t opnd;   /* arena offset of the operand (two-input kinds) */
	float f;         /* scale factor */
	uint32_t div, mod;
	uint16_t kind;   /* enum ark_op_kind */
	uint8_t in1;     /* the chained value is the op's second input */
	uint8_t binary;  /* the op reads an operand */
	uint8_t mode;    /* ARK_CHAIN_VEC, _SPLAT or _ELEMS */
};

/* 16-byte vectors per thread and pass of a chain: a step costs each warp about 70 instructions and
 * 400 cycles with 4 (measured on H200); with 1 the chain's latency is spread over more SMs instead
 * (codegen/tile.c cuts chains into ranges of ARK_THREADS vectors). */
#define ARK_CHAIN_U 1

/* A thread's values in one pass of a chain: ARK_CHAIN_U vectors of 16 bytes' worth of T, in fp32. */
template <typename T>
using ark_chain_vals = float[ARK_CHAIN_U][ark_dt<T>::vec];

/* How a step reads an operand (ark_chain_step's div, mod and mode), for a chain compiled with its
 * steps: the operand's other fields are not read. */
__device__ __forceinline__ ark_chain_step ark_chain_opnd(uint8_t mode, uint32_t div, uint32_t mod)
{
	return {0, 0.0f, div, mod, 0, 0, 1, mode};
}

/* A thread's part of one pass of a chain over elements e0:e1 of out: its vector u holds out's
 * elements mine + u * stride .. + VEC - 1. full(e): the vector at e lies inside the range and on the
 * 16-byte grid; the others go element by element. */
template <typename T>
struct ark_chain_at {
	static constexpr int VEC = ark_dt<T>::vec, U = ARK_CHAIN_U;
	uint32_t mine, stride, e0, e1;
	bool vec;

	__device__ __forceinline__ bool full(uint32_t e) const { return vec && e >= e0 && e + VEC <= e1; }

	/* All U vectors of an operand requested at once (loads nothing uses yet, so that they are in
	 * flight while the steps before compute): a 16-byte vector, a splat's one element in q.x, or the
	 * VEC elements one by one (a row repeated whose length is not whole vectors, and the range's cut
	 * vectors, whose elements past it read 0). */
	__device__ __forceinline__ void raw(const T *src, const ark_chain_step &st, uint4 (&q)[U]) const
	{
#pragma unroll
		for (int u = 0; u < U; u++) {
			const uint32_t e = mine + u * stride;
			if (full(e) && st.mode == ARK_CHAIN_VEC) {
				q[u] = ark_ld16(src + (st.mod ? e % st.mod : e));
			} else if (full(e) && st.mode == ARK_CHAIN_SPLAT) {
				q[u] = make_uint4(0, 0, 0, 0);
				const T s = src[e / st.div % st.mod];
				memcpy(&q[u].x, &s, sizeof(T));
			} else {
				T w[VEC];
				/* the operand's element of out's element e + j: one division for the vector
				 * where a row repeats (div 1, a row of VEC elements or more) */
				const bool row = st.mod >= VEC && st.div == 1;
				const uint32_t i0 = !st.mod ? e : row ? e % st.mod : 0;
#pragma unroll
				for (int j = 0; j < VEC; j++) {
					const uint32_t ej = e + j;
					uint32_t i = i0 + j;
					if (row && i >= st.mod)
						i -= st.mod;
					else if (st.mod && !row)
						i = ej / st.div % st.mod;
					w[j] = ej >= e0 && ej < e1 ? src[i] : ark_from_f<T>(0.0f);
				}
				memcpy(&q[u], w, sizeof w);
			}
		}
	}

	/* raw's vectors into fp32 */
	__device__ __forceinline__ void expand(const ark_chain_step &st, const uint4 (&q)[U], float (&dst)[U][VEC]) const
	{
#pragma unroll
		for (int u = 0; u < U; u++) {
			if (full(mine + u * stride) && st.mode == ARK_CHAIN_SPLAT) {
				T s;
				memcpy(&s, &q[u].x, sizeof(T));
#pragma unroll
				for (int j = 0; j < VEC; j++)
					dst[u][j] = ark_to_f(s);
			} else {
				ark_unpack<T>(q[u], dst[u]);
			}
		}
	}

	__device__ __forceinline__ void load(const T *src, const ark_chain_step &st, float (&dst)[U][VEC]) const
	{
		uint4 q[U];
		raw(src, st, q);
		expand(st, q, dst);
	}

	__device__ __forceinline__ void store(T *o, const float (&v)[U][VEC]) const
	{
#pragma unroll
		for (int u = 0; u < U; u++) {
			const uint32_t e = mine + u * stride;
			if (full(e)) {
				ark_st16(o + e, ark_pack<T>(v[u]));
			} else {
#pragma unroll
				for (int j = 0; j < VEC; j++)
					if (e + j >= e0 && e + j < e1)
						o[e + j] = ark_from_f<T>(v[u][j]);
			}
		}
	}
};

/* The passes of a chain's task over elements t.k0:t.k1 of out: each thread loads its vectors of
 * p.in[0] (of out's shape), body(at, v) applies the steps to them, and they are stored to p.out.
 * body runs once a pass on every thread (it may hold CTA barriers). */
template <typename T, typename F>
__device__ __forceinline__ void ark_chain_passes(const ark_opp &p, const ark_task &t, char *arena, F &&body)
{
	constexpr int VEC = ark_dt<T>::vec;
	const T *x = reinterpret_cast<const T *>(arena + p.in[0]);
	T *o = reinterpret_cast<T *>(arena + p.out);
	ark_chain_at<T> at;
	at.e0 = t.k0, at.e1 = t.k1;
	/* the emitter keeps every tensor 256-byte aligned, so out's 16-byte vectors start at multiples of
	 * VEC: the threads walk that grid from the vector holding e0, and the vectors that the range cuts
	 * (its first and last) go element by element; a view that is not aligned goes all that way */
	at.vec = ark_aligned16(x) && ark_aligned16(o);
	at.stride = (uint32_t)ARK_THREADS * VEC;
	const uint32_t g0 = at.vec ? at.e0 / VEC * VEC : at.e0;
	const ark_chain_step same = ark_chain_opnd(ARK_CHAIN_VEC, 1, 0);
	for (uint32_t base = g0; base < at.e1; base += (uint32_t)ARK_CHAIN_U * VEC * ARK_THREADS) { /* uniform */
		at.mine = base + (uint32_t)threadIdx.x * VEC;
		ark_chain_vals<T> v;
		at.load(x, same, v);
		body(at, v);
		at.store(o, v);
	}
}

/* A step of a chain compiled with its steps (arkgen's ark_chain_gen): a one-input op on v ... */
template <typename T, int KIND>
__device__ __forceinline__ void ark_chain_un(ark_chain_vals<T> &v, float f)
{
	const ark_chain_vals<T> none = {};
	ark_chain_apply<T, KIND>(v, none, f, false);
}

/* ... and a two-input op of v and an operand requested before (raw), read as st says. */
template <typename T, int KIND, bool IN1>
__device__ __forceinline__ void ark_chain_bin(const ark_chain_at<T> &at, ark_chain_vals<T> &v,
					      const uint4 (&r)[ARK_CHAIN_U], const ark_chain_step &st, float f)
{
	ark_chain_vals<T> y;
	at.expand(st, r, y);
	ark_chain_apply<T, KIND>(v, y, f, IN1);
}

#ifdef ARK_CHAIN_GEN
/* Defined by the generated file: runs task t of a chain arkgen compiled with its steps (the op kinds,
 * factors and operands' layouts as constants), false where t's chain is not one of them. */
__device__ bool ark_chain_gen(const ark_opp &p, const ark_task &t, char *arena);

/* A compiled chain handed a task whose params are another chain's (their first op's kind or their
 * steps differ from the ones it was compiled for): says so and stops the kernel, where running its
 * own steps on the other chain's operands would store wrong values. */
static __device__ __noinline__ void ark_chain_gen_mismatch(const ark_opp &p, const ark_task &t, int kind, int steps)
{
	if (threadIdx.x == 0)
		printf("ark: vCTA %u (op %u): the chain compiled for its op starts with op kind %d and has %d steps, "
		       "its params say kind %d and %u steps\n",
		       (unsigned)t.vcta, (unsigned)t.op, kind, steps, (int)p.kind, (unsigned)p.splits);
	__trap();
}
#endif

/* EW_CHAIN: elements k0:k1 of out = the chain's ops applied in turn to p.in[0], every intermediate
 * rounded to T as if it had been stored. p.splits steps follow p in the op-params table; step s is op
 * s's own params: kind, f, and its other input (in[1], or in[0] with ARK_OPP_CHAIN_IN1), of out's
 * shape or broadcast (ark_chain_step). This is the chain read from its params (chains arkgen did not
 * compile with their steps): the steps' descriptors are loaded into shared memory together (one
 * latency, not one per step); each thread keeps U vectors in registers and walks the steps once for
 * all of them, operands loaded a step ahead. The chained values have out's shape. */
template <typename T>
__device__ __noinline__ void ark_ew_chain_tile(const ark_opp &p, const ark_task &t, char *arena)
{
	__shared__ ark_chain_step s_step[ARK_CHAIN_BLOCK];
	const ark_opp *steps = &p + 1;
	const int n = (int)p.splits, tid = threadIdx.x;
	ark_chain_passes<T>(p, t, arena, [&](const ark_chain_at<T> &at, ark_chain_vals<T> &v) {
		for (int b0 = 0; b0 < n; b0 += ARK_CHAIN_BLOCK) { /* uniform */
			const int bn = min(ARK_CHAIN_BLOCK, n - b0);
			__syncthreads(); /* the previous block's descriptors are read by all */
			for (int s = tid; s < bn; s += ARK_THREADS) {
				const ark_opp &q = steps[b0 + s];
				const bool in1 = q.flags & ARK_OPP_CHAIN_IN1;
				const int kind = q.kind;
				const bool binary = ark_ew_inputs(kind) == 2;
				uint32_t div = 1, mod = 0; /* how it reads its operand (abi/ark_task.h) */
				const uint8_t mode = binary ? (uint8_t)ark_chain_read(q.flags & ARK_OPP_SAME_SHAPE, q.ndim, q.oshape,
										  q.istride[in1 ? 0 : 1], ark_dt<T>::vec, &div, &mod)
							    : (uint8_t)ARK_CHAIN_VEC;
				s_step[s] = {in1 ? q.in[0] : q.in[1], q.f, div, mod, (uint16_t)kind, (uint8_t)in1, (uint8_t)binary, mode};
			}
			__syncthreads();
			/* the next step's descriptor and operand are fetched while this step computes: the only
			 * dependent chain from step to step is the arithmetic on v */
			ark_chain_step cur = s_step[0];
			ark_chain_vals<T> y = {};
			if (cur.binary)
				at.load(reinterpret_cast<const T *>(arena + cur.opnd), cur, y);
			for (int s = 0; s < bn; s++) {
				const ark_chain_step nxt = s_step[s + 1 < bn ? s + 1 : s];
				const bool more = s + 1 < bn && nxt.binary;
				const T *src = reinterpret_cast<const T *>(arena + nxt.opnd);
				uint4 qn[ARK_CHAIN_U];
				if (more)
					at.raw(src, nxt, qn);
				switch (cur.kind) {
#define X(id, n, fn) \
	case ARK_OP_##id: ark_chain_apply<T, ARK_OP_##id>(v, y, cur.f, cur.in1); break;
					EW_LIST(X)
#undef X
				default: break;
				}
				if (more)
					at.expand(nxt, qn, y);
				cur = nxt;
			}
		}
	});
}

template <typename T>
__device__ __forceinline__ void ark_elementwise_tile(const ark_opp &p, const ark_task &t, char *arena)
{
	if (!(p.flags & ARK_OPP_SAME_SHAPE)) {
		ark_ew_bcast<T>(p, t.m0, t.m1, t.n0, t.n1, arena);
		return;
	}
	switch (p.kind) {
#define X(id, n, fn) \
	case ARK_OP_##id: ark_ew_kind<T, ARK_OP_##id>(p, t.m0, t.m1, t.n0, t.n1, arena); break;
		EW_LIST(X)
#undef X
	case ARK_OP_COPY: ark_ew_kind<T, ARK_OP_COPY>(p, t.m0, t.m1, t.n0, t.n1, arena); break;
	default: break;
	}
}

/* The templates of this file, as TMPL_CATALOG names them. */
struct ark_tile_elementwise {
	static constexpr bool per_dtype = true;
	template <typename T>
	static __device__ __forceinline__ void run(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
	{
		ark_elementwise_tile<T>(p, t, e.arena);
	}
};
struct ark_tile_ew_chain {
	static constexpr bool per_dtype = true;
	template <typename T>
	static __device__ __forceinline__ void run(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
	{
#ifdef ARK_CHAIN_GEN
		if (ark_chain_gen(p, t, e.arena))
			return;
#endif
		ark_ew_chain_tile<T>(p, t, e.arena);
	}
};

#endif
