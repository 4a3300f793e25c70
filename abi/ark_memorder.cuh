/* ark_memorder.cuh: the memory-model primitives of the PTX ISA that the protocol rests on, written
 * once: acquire loads, release stores and reductions at GPU and system scope, relaxed accesses of
 * mapped memory, the system-scope fence, the global timer. Used by the loop kernel (templates/), the
 * DMA ring's device producer (dma/) and the benchmarks (bench/). docs/design.md says which access
 * orders what.
 *
 * Pointers are generic; on every architecture we target a global address is its own generic address,
 * the conversion is spelled out anyway. Mapped host memory is reached through its device pointer. */
#ifndef ARK_MEMORDER_CUH
#define ARK_MEMORDER_CUH

#include <stdint.h>

#define ARK_PTX_LD(name, sem, scope, type, reg, ctype)                                              \
	static __device__ __forceinline__ ctype name(const void *p)                                 \
	{                                                                                           \
		ctype v;                                                                            \
		asm volatile("ld." sem "." scope ".global." type " %0, [%1];"                       \
			     : "=" reg(v)                                                           \
			     : "l"(__cvta_generic_to_global(p))                                     \
			     : "memory");                                                           \
		return v;                                                                           \
	}
#define ARK_PTX_ST(name, sem, scope, type, reg, ctype)                                              \
	static __device__ __forceinline__ void name(void *p, ctype v)                               \
	{                                                                                           \
		asm volatile("st." sem "." scope ".global." type " [%0], %1;" ::"l"(                \
				     __cvta_generic_to_global(p)),                                  \
			     reg(v)                                                                 \
			     : "memory");                                                           \
	}

/* Loads: ark_ld_<semantics>_<scope>[_u64]. */
ARK_PTX_LD(ark_ld_acquire_gpu, "acquire", "gpu", "u32", "r", uint32_t)
ARK_PTX_LD(ark_ld_acquire_sys, "acquire", "sys", "u32", "r", uint32_t)
ARK_PTX_LD(ark_ld_relaxed_sys, "relaxed", "sys", "u32", "r", uint32_t)
ARK_PTX_LD(ark_ld_acquire_sys_u64, "acquire", "sys", "u64", "l", unsigned long long)
ARK_PTX_LD(ark_ld_relaxed_sys_u64, "relaxed", "sys", "u64", "l", unsigned long long)

/* Stores: ark_st_<semantics>_<scope>[_u64]. */
ARK_PTX_ST(ark_st_release_gpu, "release", "gpu", "u32", "r", uint32_t)
ARK_PTX_ST(ark_st_release_sys, "release", "sys", "u32", "r", uint32_t)
ARK_PTX_ST(ark_st_relaxed_sys, "relaxed", "sys", "u32", "r", uint32_t)
ARK_PTX_ST(ark_st_relaxed_sys_u64, "relaxed", "sys", "u64", "l", unsigned long long)

#undef ARK_PTX_LD
#undef ARK_PTX_ST

/* counter += v with release semantics (no value returned): a producer's signal. */
static __device__ __forceinline__ void ark_red_release_gpu_add(uint32_t *p, uint32_t v)
{
	asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(__cvta_generic_to_global(p)), "r"(v)
		     : "memory");
}

static __device__ __forceinline__ void ark_red_release_sys_add(uint32_t *p, uint32_t v)
{
	asm volatile("red.release.sys.global.add.u32 [%0], %1;" ::"l"(__cvta_generic_to_global(p)), "r"(v)
		     : "memory");
}

/* Returns the old value: acquire and release at once (the last SM to finish an iteration). */
static __device__ __forceinline__ uint32_t ark_atom_acq_rel_gpu_add(uint32_t *p, uint32_t v)
{
	uint32_t old;
	asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;"
		     : "=r"(old)
		     : "l"(__cvta_generic_to_global(p)), "r"(v)
		     : "memory");
	return old;
}

/* A fence that orders this thread's accesses before and after it at system scope. */
static __device__ __forceinline__ void ark_fence_acq_rel_sys(void)
{
	asm volatile("fence.acq_rel.sys;" ::: "memory");
}

/* Nanoseconds of the GPU's global timer (comparable between SMs of one GPU). */
static __device__ __forceinline__ unsigned long long ark_globaltimer(void)
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

static __device__ __forceinline__ void ark_prefetch_l2(const void *p)
{
	asm volatile("prefetch.global.L2 [%0];" ::"l"(__cvta_generic_to_global(p)));
}

#endif
