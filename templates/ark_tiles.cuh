// ark_tiles.cuh: ark_tile(), the loop kernel's one call into the tile templates, and their shared-memory needs.
#ifndef ARK_TILES_CUH
#define ARK_TILES_CUH

#include "ark_dtype.cuh"
#include "op_comm.cuh"
#include "op_copy.cuh"
#include "op_elementwise.cuh"
#include "op_matmul.cuh"
#include "op_rows.cuh"

/* Which dtypes get templates: a generated file may set the ones its model does not use to 0 (each
 * dtype costs about a third of the compile time). */
#ifndef ARK_TILES_FP16
#define ARK_TILES_FP16 1
#endif
#ifndef ARK_TILES_BF16
#define ARK_TILES_BF16 1
#endif
#ifndef ARK_TILES_FP32
#define ARK_TILES_FP32 1
#endif

/* Dynamic shared memory (bytes) a template needs; ARK_TILES_SMEM_BYTES is the most any needs. Plain
 * constant expressions of ARK_THREADS, usable in host code and in #if. */
#define ARK_TILES_SMEM_BYTES ARK_MAX3_(ARK_SMEM_MATMUL, ARK_SMEM_ROWS, ARK_SMEM_ELEMENTWISE)
static_assert(ARK_TILES_SMEM_BYTES <= ARK_SMEM_BYTES, "the tile templates need more than ARK_SMEM_BYTES");

__host__ __device__ constexpr int ark_tmpl_smem_bytes(int tmpl)
{
	return tmpl == ARK_T_MATMUL || tmpl == ARK_T_MATMUL_PARTIAL ? ARK_SMEM_MATMUL
	       : tmpl == ARK_T_REDUCE                               ? ARK_SMEM_REDUCE
	       : tmpl == ARK_T_ELEMENTWISE || tmpl == ARK_T_EW_CHAIN ? ARK_SMEM_ELEMENTWISE
	       : tmpl == ARK_T_COPY                                 ? ARK_SMEM_COPY
								    : ARK_SMEM_ROWS;
}

template <typename T>
__device__ __forceinline__ void ark_tile_t(const ark_opp &p, const ark_task &t, char *arena, char *smem)
{
	switch (t.tmpl) {
	case ARK_T_MATMUL:
	case ARK_T_MATMUL_PARTIAL:
		ark_matmul_tile<T>(p, t.m0, t.m1, t.n0, t.n1, t.k0, t.k1, t.split, arena, smem,
				   t.tmpl == ARK_T_MATMUL_PARTIAL);
		break;
	case ARK_T_REDUCE: ark_reduce_tile<T>(p, t.m0, t.m1, t.n0, t.n1, arena); break;
	case ARK_T_ELEMENTWISE: ark_elementwise_tile<T>(p, t, arena); break;
	case ARK_T_EW_CHAIN: ark_ew_chain_tile<T>(p, t, arena); break;
	case ARK_T_SOFTMAX: ark_rows_tile<T, ARK_T_SOFTMAX>(p, t.m0, t.m1, arena, smem); break;
	case ARK_T_LAYERNORM: ark_rows_tile<T, ARK_T_LAYERNORM>(p, t.m0, t.m1, arena, smem); break;
	case ARK_T_RMSNORM: ark_rows_tile<T, ARK_T_RMSNORM>(p, t.m0, t.m1, arena, smem); break;
	case ARK_T_SUM: ark_sum_tile<T>(p, t, arena); break;
	default: break;
	}
}

/* Computes task t (one tile of the op p) with all ARK_THREADS threads of the CTA, which all call it
 * with the same arguments. arena: this GPU's tensor arena; peers[g]: GPU g's arena; smem: at least
 * ark_tmpl_smem_bytes(t.tmpl) bytes of dynamic shared memory, 16-byte aligned. The caller orders the
 * tile after its producers and its consumers after it (the templates begin and end without a
 * barrier of their own except where they use smem). */
static __device__ __forceinline__ void ark_tile(const ark_opp &p, const ark_task &t, char *arena, char *const *peers, char *smem)
{
	if (t.tmpl == ARK_T_COPY) {
		ark_copy_tile(p, t, arena, peers);
		return;
	}
	if (t.tmpl == ARK_T_GATHER) {
		ark_gather_tile(p, t, arena);
		return;
	}
	if (t.tmpl == ARK_T_NOP || t.tmpl == ARK_T_DMA) /* DMA: the loop pushes the request */
		return;
	/* SEND_LL and SUM_LL need the iteration: the loop calls ark_tile_ll for them */
	switch (p.dtype) {
#if ARK_TILES_FP16
	case ARK_FP16: ark_tile_t<__half>(p, t, arena, smem); break;
#endif
#if ARK_TILES_BF16
	case ARK_BF16: ark_tile_t<__nv_bfloat16>(p, t, arena, smem); break;
#endif
#if ARK_TILES_FP32
	case ARK_FP32: ark_tile_t<float>(p, t, arena, smem); break;
#endif
	default: break;
	}
}

/* The packet templates (op_comm.cuh): like ark_tile, with the counters' iteration `run` that the
 * packets carry and the abort flag that ends a wait for them. */
static __device__ __forceinline__ void ark_tile_ll(const ark_opp &p, const ark_task &t, char *arena, char *const *peers,
						   uint32_t run, const volatile uint32_t *abort_flag)
{
	if (t.tmpl == ARK_T_SEND_LL) {
		ark_send_ll_tile(p, t, arena, peers, run);
		return;
	}
	switch (p.dtype) {
#if ARK_TILES_FP16
	case ARK_FP16: ark_sum_ll_tile<__half>(p, t, arena, run, abort_flag); break;
#endif
#if ARK_TILES_BF16
	case ARK_BF16: ark_sum_ll_tile<__nv_bfloat16>(p, t, arena, run, abort_flag); break;
#endif
#if ARK_TILES_FP32
	case ARK_FP32: ark_sum_ll_tile<float>(p, t, arena, run, abort_flag); break;
#endif
	default: break;
	}
}

#endif
