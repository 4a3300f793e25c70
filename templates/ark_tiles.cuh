// ark_tiles.cuh: ark_tile(), the loop kernel's one call into the tile templates, and their shared memory (TMPL_CATALOG).
#ifndef ARK_TILES_CUH
#define ARK_TILES_CUH

#include "ark_dtype.cuh"
#include "op_attention.cuh"
#include "op_comm.cuh"
#include "op_copy.cuh"
#include "op_decode.cuh"
#include "op_elementwise.cuh"
#include "op_matmul.cuh"
#include "op_reduce.cuh"
#include "op_rows.cuh"
#include "op_state.cuh"
#include "op_view.cuh"

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

/* Work-free templates: the loop itself does what they stand for (BARRIER, DMA) or nothing (NOP). */
struct ark_tile_none {
	static constexpr bool per_dtype = false;
	static __device__ __forceinline__ void run(const ark_opp &, const ark_task &, const ark_tile_env &) {}
};

/* Dynamic shared memory (bytes) template tmpl needs, from TMPL_CATALOG: a constant expression of
 * ARK_THREADS, usable in host code. ARK_TILES_SMEM_BYTES is the most any template needs. */
__host__ __device__ constexpr int ark_tmpl_smem_bytes(int tmpl)
{
	switch (tmpl) {
#define X(id, tile, smem, span, label) \
	case ARK_T_##id:               \
		return smem;
		TMPL_CATALOG(X)
#undef X
	}
	return 0;
}

__host__ __device__ constexpr int ark_tiles_smem_bytes(void)
{
	int most = 0;
	for (int t = 0; t < ARK_T__COUNT; t++)
		most = ark_tmpl_smem_bytes(t) > most ? ark_tmpl_smem_bytes(t) : most;
	return most;
}
#define ARK_TILES_SMEM_BYTES ark_tiles_smem_bytes()
static_assert(ARK_TILES_SMEM_BYTES <= ARK_SMEM_BYTES, "the tile templates need more than ARK_SMEM_BYTES");

/* ARK_TILES_USED: the templates this build compiles, a mask of ARK_TILE_BIT(ID) (arkgen names the
 * ones its schedule's tasks use; a template left out costs no build time). Every one by default. */
#define ARK_TILE_BIT(id) (1ull << ARK_T_##id)
#ifndef ARK_TILES_USED
#define ARK_TILES_USED (~0ull)
#endif
static_assert(ARK_T__COUNT <= 64, "ARK_TILES_USED holds one bit per template");

/* Runs tile F on the task: F::run<T> for the op params' dtype when F is compiled per dtype. Returns
 * false for a template (BUILT false) or a dtype this build has no tiles for (ARK_TILES_*). */
template <typename F, bool BUILT>
__device__ __forceinline__ bool ark_tile_run(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
{
	if constexpr (!BUILT || ark_tile_left_out<F>) {
		return false;
	} else if constexpr (F::per_dtype) {
		switch (p.dtype) {
#if ARK_TILES_FP16
		case ARK_FP16: F::template run<__half>(p, t, e); return true;
#endif
#if ARK_TILES_BF16
		case ARK_BF16: F::template run<__nv_bfloat16>(p, t, e); return true;
#endif
#if ARK_TILES_FP32
		case ARK_FP32: F::template run<float>(p, t, e); return true;
#endif
		default: return false;
		}
	} else {
		F::run(p, t, e);
		return true;
	}
}

/* Computes task t (one tile of the op p) with all ARK_THREADS threads of the CTA, which all call it
 * with the same arguments; e.smem holds at least ark_tmpl_smem_bytes(t.tmpl) bytes. The caller orders
 * the tile after its producers and its consumers after it (the templates begin and end without a
 * barrier of their own except where they use smem). Returns false, having done nothing, when this
 * build has no tile for the task's template and dtype: the caller must not go on as if it ran. */
static __device__ __forceinline__ bool ark_tile(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
{
	switch (t.tmpl) {
#define X(id, tile, smem, span, label) \
	case ARK_T_##id:               \
		return ark_tile_run<tile, ((ARK_TILES_USED) >> ARK_T_##id & 1) != 0>(p, t, e);
		TMPL_CATALOG(X)
#undef X
	}
	return false;
}

#endif
