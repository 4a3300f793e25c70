// ark_dtype.cuh: element types of the tile templates: fp32 conversions, activations, 16-byte vectors, cp.async.
#ifndef ARK_DTYPE_CUH
#define ARK_DTYPE_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <stdio.h>

#include <type_traits>

#include "ark_ops.h"
#include "ark_task.h"

#ifndef ARK_THREADS
#define ARK_THREADS 256 /* threads per CTA of the loop kernel */
#endif
#ifndef ARK_SMEM_BYTES
#define ARK_SMEM_BYTES 131072 /* dynamic shared memory per CTA, the most any template may use */
#endif
#define ARK_WARPS (ARK_THREADS / 32)

static_assert(ARK_THREADS % 32 == 0 && ARK_THREADS >= 64 && ARK_THREADS <= 1024,
	      "ARK_THREADS must be a multiple of 32 in 64..1024");

/* What a tile function gets besides its op params and its task (TMPL_CATALOG's tile column: a struct
 * with `static constexpr bool per_dtype` and run(p, t, env), or run<T>(p, t, env) when per_dtype). */
struct ark_tile_env {
	char *arena;                         /* this GPU's arena: every tensor at its offset */
	char *const *peers;                  /* every GPU's arena (peer mapping), for the transfers */
	char *smem;                          /* the template's smem bytes of dynamic shared memory, 16-byte aligned */
	uint32_t run;                        /* the counters' iteration, which packets carry */
	const volatile uint32_t *abort_flag; /* set: stop waiting for packets */
	uint32_t *fault;                     /* shared memory [2], or NULL: a tile that meets data it
					      * cannot use (an embedding id outside the table) stores
					      * fault[0] = 1 + its row, fault[1] = the value; the loop
					      * aborts the iteration after the tile (ark_loop.cuh) */
};

/* Records a fault for the loop: at = fault[0] (1 + the row, or 1 where the tile has no rows), value =
 * fault[1] (the id or position it cannot use). Thread 0; the tile's first fault stays. */
__device__ __forceinline__ void ark_tile_fault(const ark_tile_env &e, uint32_t at, int32_t value)
{
	if (threadIdx.x == 0 && e.fault && atomicCAS(&e.fault[0], 0u, at) == 0)
		e.fault[1] = (uint32_t)value;
}

/* f((T *)nullptr), T the type of dtype dt, for the dtypes the file computes in (ARK_TILES_FP16,
 * ARK_TILES_BF16, ARK_TILES_FP32 of ark_tiles.cuh, every one where a file does not say): a tile's
 * instances of its own only for those, each a function of the loop kernel's that moves the others'
 * registers. Another dtype traps: arkgen never emits one. ARK_DT_OF(x): T, from f's argument. */
template <typename F> __device__ __forceinline__ void ark_built_dtype(int dt, F &&f)
{
	switch (dt) {
#if !defined(ARK_TILES_FP16) || ARK_TILES_FP16
	case ARK_FP16: f((__half *)nullptr); return;
#endif
#if !defined(ARK_TILES_BF16) || ARK_TILES_BF16
	case ARK_BF16: f((__nv_bfloat16 *)nullptr); return;
#endif
#if !defined(ARK_TILES_FP32) || ARK_TILES_FP32
	case ARK_FP32: f((float *)nullptr); return;
#endif
	}
	__trap();
}
#define ARK_DT_OF(x) std::remove_pointer_t<decltype(x)>

/* Bytes of an element of a value dtype (ark_dtype_size, for the device): fp32 and int32 4, else 2. */
__device__ __forceinline__ size_t ark_elem_bytes(int dt) { return dt == ARK_FP32 || dt == ARK_INT32 ? 4 : 2; }
/* true for a tile struct this build leaves out (ARK_TILES_ATTENTION 0): ark_tile returns false for
 * its tasks, as for a dtype without templates. */
template <typename F> constexpr bool ark_tile_left_out = false;

/* Per-type traits: VEC elements per 16-byte vector, conversions to and from fp32. */
template <typename T> struct ark_dt;

template <> struct ark_dt<float> {
	static constexpr int vec = 4;
	static __device__ __forceinline__ float to_f(float x) { return x; }
	static __device__ __forceinline__ float from_f(float x) { return x; }
};
template <> struct ark_dt<__half> {
	static constexpr int vec = 8;
	static __device__ __forceinline__ float to_f(__half x) { return __half2float(x); }
	static __device__ __forceinline__ __half from_f(float x) { return __float2half_rn(x); }
};
template <> struct ark_dt<__nv_bfloat16> {
	static constexpr int vec = 8;
	static __device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
	static __device__ __forceinline__ __nv_bfloat16 from_f(float x) { return __float2bfloat16_rn(x); }
};

/* int32 (token ids, masks): read as float like the other dtypes, so that a mask works whatever its
 * dtype; never a computed tensor's dtype, so no 16-byte vector conversion. */
template <> struct ark_dt<int32_t> {
	static constexpr int vec = 4;
	static __device__ __forceinline__ float to_f(int32_t x) { return (float)x; }
	static __device__ __forceinline__ int32_t from_f(float x) { return __float2int_rn(x); }
};

template <typename T> __device__ __forceinline__ float ark_to_f(T x) { return ark_dt<T>::to_f(x); }
template <typename T> __device__ __forceinline__ T ark_from_f(float x) { return ark_dt<T>::from_f(x); }

/* A 16-byte vector (ark_dt<T>::vec elements) to fp32 and back. */
template <typename T> __device__ __forceinline__ void ark_unpack(const uint4 &v, float *f);
template <> __device__ __forceinline__ void ark_unpack<float>(const uint4 &v, float *f)
{
	f[0] = __uint_as_float(v.x);
	f[1] = __uint_as_float(v.y);
	f[2] = __uint_as_float(v.z);
	f[3] = __uint_as_float(v.w);
}
template <> __device__ __forceinline__ void ark_unpack<__half>(const uint4 &v, float *f)
{
	const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
	for (int i = 0; i < 4; i++) {
		__half2 h = *reinterpret_cast<const __half2 *>(&w[i]);
		float2 x = __half22float2(h);
		f[2 * i] = x.x;
		f[2 * i + 1] = x.y;
	}
}
template <> __device__ __forceinline__ void ark_unpack<__nv_bfloat16>(const uint4 &v, float *f)
{
	const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
	for (int i = 0; i < 4; i++) { /* bf16 -> fp32 is a shift */
		f[2 * i] = __uint_as_float(w[i] << 16);
		f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
	}
}

template <typename T> __device__ __forceinline__ uint4 ark_pack(const float *f);
template <> __device__ __forceinline__ uint4 ark_pack<float>(const float *f)
{
	return make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]), __float_as_uint(f[2]),
			  __float_as_uint(f[3]));
}
/* Two floats as one 32-bit pair of a 16-bit type, lo in the low half (an mma fragment's register). */
template <typename T> __device__ __forceinline__ uint32_t ark_pack2(float lo, float hi);
template <> __device__ __forceinline__ uint32_t ark_pack2<__half>(float lo, float hi)
{
	__half2 h = __floats2half2_rn(lo, hi);
	return *reinterpret_cast<uint32_t *>(&h);
}
template <> __device__ __forceinline__ uint32_t ark_pack2<__nv_bfloat16>(float lo, float hi)
{
	__nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
	return *reinterpret_cast<uint32_t *>(&h);
}
template <> __device__ __forceinline__ uint4 ark_pack<__half>(const float *f)
{
	return make_uint4(ark_pack2<__half>(f[0], f[1]), ark_pack2<__half>(f[2], f[3]), ark_pack2<__half>(f[4], f[5]),
			  ark_pack2<__half>(f[6], f[7]));
}
template <> __device__ __forceinline__ uint4 ark_pack<__nv_bfloat16>(const float *f)
{
	typedef __nv_bfloat16 B;
	return make_uint4(ark_pack2<B>(f[0], f[1]), ark_pack2<B>(f[2], f[3]), ark_pack2<B>(f[4], f[5]),
			  ark_pack2<B>(f[6], f[7]));
}

/* 8 floats to dst as T: 16-byte vectors where vec (dst 16-byte aligned), else element by element. */
template <typename T> __device__ __forceinline__ void ark_st8(T *dst, const float *v, bool vec)
{
	constexpr int VEC = ark_dt<T>::vec;
	if (vec) {
#pragma unroll
		for (int k = 0; k < 8; k += VEC)
			*reinterpret_cast<uint4 *>(dst + k) = ark_pack<T>(v + k);
	} else {
#pragma unroll
		for (int k = 0; k < 8; k++)
			dst[k] = ark_from_f<T>(v[k]);
	}
}

/* Plain (coherent) 16-byte global loads and stores. Never ld.global.nc: activations are written
 * by other SMs of the same kernel. */
__device__ __forceinline__ uint4 ark_ld16(const void *p) { return *reinterpret_cast<const uint4 *>(p); }
__device__ __forceinline__ void ark_st16(void *p, const uint4 &v) { *reinterpret_cast<uint4 *>(p) = v; }
__device__ __forceinline__ bool ark_aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* ---- elementwise ops on fp32 values ---------------------------------------------------------
 * One function per elementwise op of the catalog: x = in[0], y = in[1] (two-input ops), f = the op's
 * factor. EW_LIST names them, X(ID, inputs, function); every kind switch of the elementwise
 * templates, the chains and the matmul/all_reduce epilogue (ark_act) derives from it, and an op the
 * catalog flags elementwise without an entry here does not compile (op_elementwise.cuh). */
__device__ __forceinline__ float ark_gelu(float x)
{ /* x * Phi(x), the erf form (approximate = "none") */
	/* 1 + erf(x / sqrt(2)) as erfc(-x / sqrt(2)): no cancellation where x is very negative (x = -3:
	 * 1 + erf would keep ~3 significant digits of fp32, erfc all of them) */
	return 0.5f * x * erfcf(x * -0.7071067811865476f);
}
__device__ __forceinline__ float ark_gelu_tanh(float x)
{ /* tanh approximation (approximate = "tanh") */
	const float c = 0.7978845608028654f; /* sqrt(2 / pi) */
	/* 0.5 (1 + tanh(u)) as 1 / (1 + exp(-2u)): no cancellation where u is very negative */
	return x / (1.0f + expf(-2.0f * c * (x + 0.044715f * x * x * x)));
}
__device__ __forceinline__ float ark_silu(float x) { return x / (1.0f + expf(-x)); }

/* Each op rounds its own result, as the CPU reference does: the _rn intrinsics keep the compiler from
 * contracting a product and the sum after it (a chain's scale, then add) into one FMA. */
__device__ __forceinline__ float ark_f_add(float x, float y, float f) { return __fadd_rn(x, y); }
__device__ __forceinline__ float ark_f_mul(float x, float y, float f) { return __fmul_rn(x, y); }
__device__ __forceinline__ float ark_f_scale(float x, float y, float f) { return __fmul_rn(x, f); }
__device__ __forceinline__ float ark_f_relu(float x, float y, float f) { return fmaxf(x, 0.0f); }
__device__ __forceinline__ float ark_f_gelu(float x, float y, float f) { return ark_gelu(x); }
__device__ __forceinline__ float ark_f_silu(float x, float y, float f) { return ark_silu(x); }
__device__ __forceinline__ float ark_f_sigmoid(float x, float y, float f) { return 1.0f / (1.0f + expf(-x)); }
__device__ __forceinline__ float ark_f_swiglu(float x, float y, float f) { return ark_silu(x) * y; }
__device__ __forceinline__ float ark_f_tanh(float x, float y, float f) { return tanhf(x); }
__device__ __forceinline__ float ark_f_gelu_tanh(float x, float y, float f) { return ark_gelu_tanh(x); }

#define EW_LIST(X)                    \
	X(ADD, 2, ark_f_add)          \
	X(MUL, 2, ark_f_mul)          \
	X(SCALE, 1, ark_f_scale)      \
	X(RELU, 1, ark_f_relu)        \
	X(GELU, 1, ark_f_gelu)        \
	X(SILU, 1, ark_f_silu)        \
	X(SIGMOID, 1, ark_f_sigmoid)  \
	X(SWIGLU, 2, ark_f_swiglu)    \
	X(TANH, 1, ark_f_tanh)        \
	X(GELU_TANH, 1, ark_f_gelu_tanh)

/* Whether the catalog lets an op run as an activation (ARK_OPF_ACTIVATION). */
__host__ __device__ constexpr bool ark_is_activation(int kind)
{
	return false
#define X(id, name, min_in, max_in, n_out, attrs, flags) || (kind == ARK_OP_##id && ((flags) & ARK_OPF_ACTIVATION))
		OP_LIST(X)
#undef X
		;
}

/* The activation `act` (an op kind, ARK_ACT_NONE: none) of a matmul's epilogue or an all_reduce's sums. */
__device__ __forceinline__ float ark_act(float x, int act)
{
	switch (act) {
#define X(id, n, fn) \
	case ARK_OP_##id: return ark_is_activation(ARK_OP_##id) ? fn(x, 0.0f, 0.0f) : x;
		EW_LIST(X)
#undef X
	default: return x;
	}
}

/* The activation act as a function object of its kind fixed at compile time, for loops over many
 * values: ark_with_act(act, [&](auto f) { ... f(x) ... }) switches once and runs the loop compiled for
 * that activation, instead of a switch per value. */
template <int A> struct ark_act_k {
	__device__ __forceinline__ float operator()(float x) const { return ark_act(x, A); }
};
/* ARK_ACTS_USED(X): X(ID) for every activation this build fuses (arkgen lists the ones its model
 * fuses); each costs the build a copy of the epilogues. Every one where it is not defined. */
#ifdef ARK_ACTS_USED
__host__ __device__ constexpr bool ark_act_built(int kind)
{
	return false
#define X(id) || kind == ARK_OP_##id
		ARK_ACTS_USED(X)
#undef X
		;
}
#else
__host__ __device__ constexpr bool ark_act_built(int) { return true; }
#endif

template <typename F> __device__ __forceinline__ void ark_with_act(int act, F &&body)
{
	switch (act) {
#define X(id, n, fn)                                                                          \
	case ARK_OP_##id:                                                                     \
		if constexpr (ark_is_activation(ARK_OP_##id) && ark_act_built(ARK_OP_##id)) {  \
			body(ark_act_k<ARK_OP_##id>());                                       \
			return;                                                               \
		} else if constexpr (ark_is_activation(ARK_OP_##id)) {                        \
			if (threadIdx.x == 0)                                                 \
				printf("ark: activation %d is not in this build's ARK_ACTS_USED\n", act); \
			__trap(); /* never computed without it: arkgen lists every fused one */ \
		}                                                                             \
		break;
		EW_LIST(X)
#undef X
	default:
		break;
	}
	body(ark_act_k<ARK_ACT_NONE>());
}

/* x / d for small non-negative ints (x < 65536, 0 < d): through the single-precision reciprocal, which is
 * exact there ((x + 0.5) / d lies at least 0.5 / d from an integer, more than its error), in a few
 * instructions where an integer division takes twenty. */
__device__ __forceinline__ int ark_div_small(int x, int d) { return (int)__fdividef((float)x + 0.5f, (float)d); }
/* The least power of two >= x, for 1 <= x <= 2^30. */
__device__ __forceinline__ int ark_pow2_ceil(int x) { return x > 1 ? 1 << (32 - __clz(x - 1)) : 1; }

/* ---- cp.async (global -> shared, 16 bytes, through L2) -------------------------------------- */
/* Copies src_bytes (0..16) from src and zero-fills the rest of the 16 bytes at dst (a shared-window
 * address, __cvta_generic_to_shared). src must be 16-byte aligned and valid even when src_bytes is 0. */
__device__ __forceinline__ void ark_cp_async16s(uint32_t dst, const void *src, int src_bytes)
{
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
/* 4 bytes (src_bytes 4, or 0: zeros), through L1: any 4-byte aligned src, so one fp32 element of a row
 * that is not 16-byte aligned. src valid as above. */
__device__ __forceinline__ void ark_cp_async4s(uint32_t dst, const void *src, int src_bytes)
{
	asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
/* The same with dst a generic pointer into shared memory. */
__device__ __forceinline__ void ark_cp_async16(void *dst, const void *src, int src_bytes)
{
	ark_cp_async16s((uint32_t)__cvta_generic_to_shared(dst), src, src_bytes);
}
/* Bytes a tile reads once per iteration (the weights a batch-1 matmul streams) go through L2 marked
 * evict-first where ARK_L2_EVICT_FIRST (the default): a decode step streams several times L2's size
 * each iteration, and without the hint those bytes push out what the loop reads again and again (its
 * code, task tables, counters and activations). */
#ifndef ARK_L2_EVICT_FIRST
#define ARK_L2_EVICT_FIRST 1
#endif
/* The policy is the value `createpolicy.fractional.L2::evict_first.b64 p, 1.0` makes (0x12f0000000000000
 * on sm_90, read back on an H200), given as a constant: ptxas 13.0 can drop a createpolicy whose only
 * reader is a cp.async cache hint, and the copy then reads an unset register as its policy (an
 * illegal instruction at run time, bench/NOTES.md). */
__device__ __forceinline__ uint64_t ark_l2_once()
{
#if ARK_L2_EVICT_FIRST
	return 0x12f0000000000000ull;
#else
	return 0;
#endif
}
/* ark_cp_async16 with the cache policy of ark_l2_once. */
__device__ __forceinline__ void ark_cp_async16_once(void *dst, const void *src, int src_bytes, uint64_t policy)
{
#if ARK_L2_EVICT_FIRST
	asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(
			     (uint32_t)__cvta_generic_to_shared(dst)),
		     "l"(src), "r"(src_bytes), "l"(policy)
		     : "memory");
#else
	(void)policy;
	ark_cp_async16(dst, src, src_bytes);
#endif
}
__device__ __forceinline__ void ark_cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void ark_cp_wait()
{
	asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/* A float of shared memory at shared-window address a (__cvta_generic_to_shared): an LDS, where a
 * generic pointer into shared memory would compile to a generic load. */
__device__ __forceinline__ float ark_lds_f32(uint32_t a)
{
	float v;
	asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(v) : "r"(a) : "memory");
	return v;
}

/* ---- block-wide reductions (every thread calls; scratch: ARK_WARPS floats of shared memory) -- */
__device__ __forceinline__ float ark_warp_sum(float v)
{
#pragma unroll
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}
/* The warp's sums of N values at once (N a power of two), by halving: at each of the five lane
 * bits, from the highest, a lane keeps one half of its values and adds its partner's of that half,
 * so N values cost N - 1 shuffles where N separate sums cost 5 N. On return, for N >= 32, lane L holds
 * the totals of values L (N / 32) + j in v[j], j < N / 32; for N < 32, v[0] of lane L is the total of
 * value L / (32 / N). Call with W = 16. All lanes. */
template <int N, int W>
__device__ __forceinline__ void ark_warp_sums(float *v, int lane)
{
	if constexpr (W > 0) {
		if constexpr (N > 1) {
			constexpr int H = N / 2;
			const bool up = (lane & W) != 0;
#pragma unroll
			for (int i = 0; i < H; i++) {
				const float send = up ? v[i] : v[i + H], keep = up ? v[i + H] : v[i];
				v[i] = keep + __shfl_xor_sync(0xffffffffu, send, W);
			}
			ark_warp_sums<H, W / 2>(v, lane);
		} else {
			v[0] += __shfl_xor_sync(0xffffffffu, v[0], W);
			ark_warp_sums<1, W / 2>(v, lane);
		}
	}
}
__device__ __forceinline__ float ark_warp_max(float v)
{
#pragma unroll
	for (int o = 16; o > 0; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}
__device__ __forceinline__ float ark_block_sum(float v, float *scratch)
{
	v = ark_warp_sum(v);
	__syncthreads(); /* scratch may still be read by a previous reduction */
	if ((threadIdx.x & 31) == 0)
		scratch[threadIdx.x >> 5] = v;
	__syncthreads();
	float r = 0.0f;
#pragma unroll
	for (int w = 0; w < ARK_WARPS; w++)
		r += scratch[w];
	return r;
}
__device__ __forceinline__ float ark_block_max(float v, float *scratch)
{
	v = ark_warp_max(v);
	__syncthreads();
	if ((threadIdx.x & 31) == 0)
		scratch[threadIdx.x >> 5] = v;
	__syncthreads();
	float r = -INFINITY;
#pragma unroll
	for (int w = 0; w < ARK_WARPS; w++)
		r = fmaxf(r, scratch[w]);
	return r;
}

#endif
