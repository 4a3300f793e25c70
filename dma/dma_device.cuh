/* dma_device.cuh: the GPU-side producer of the DMA request ring (layout in abi/ark_dma.h, protocol in
 * dma/dma.h). */
#ifndef DMA_DEVICE_CUH
#define DMA_DEVICE_CUH

#include <stdint.h>

#include "ark_dma.h"
#include "ark_memorder.cuh"

/* Spins on a full ring between two looks at the abort flag. */
#ifndef DMA_DEV_ABORT_SPINS
#define DMA_DEV_ABORT_SPINS 4096
#endif

/* Every field of slot s but seq, in five stores (the slot is one 64-byte aligned line):
 * [4] src_gpu; [8] dst_gpu, flags; [16] src_off, dst_off; [32] bytes, flag_index, flag_value;
 * [48] src_flag_index, src_flag_value, pad. Weak stores: the release of seq orders them. */
static __device__ __forceinline__ void dma_dev_write_slot(struct dma_req *s, const struct dma_req *q)
{
	char *p = (char *)__cvta_generic_to_global(s);
	asm volatile("st.global.u32 [%0], %1;" ::"l"(p + 4), "r"(q->src_gpu) : "memory");
	asm volatile("st.global.v2.u32 [%0], {%1, %2};" ::"l"(p + 8), "r"(q->dst_gpu), "r"(q->flags) : "memory");
	asm volatile("st.global.v2.u64 [%0], {%1, %2};" ::"l"(p + 16), "l"(q->src_off), "l"(q->dst_off)
		     : "memory");
	asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p + 32), "r"((uint32_t)q->bytes),
		     "r"((uint32_t)(q->bytes >> 32)), "r"(q->flag_index), "r"(q->flag_value)
		     : "memory");
	asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p + 48), "r"(q->src_flag_index),
		     "r"(q->src_flag_value), "r"(0u), "r"(0u)
		     : "memory");
}

/* Pushes one request into the ring whose shared part is at shm (the device pointer of the mapped
 * ring memory), taking its ticket from prod (the ring's device producer state, in this GPU's memory:
 * dma_cuda_dev_prod_alloc). Called by ONE thread (after the tile that produced the data finished:
 * __syncthreads(), then this thread; the release of seq publishes what the CTA wrote and what this
 * thread acquired). req->seq is ignored.
 * Cost when the ring has room: an atomic and a load in device memory, five posted stores and one
 * release store to host memory; the host tail is read only when the cached tail says the ring may be
 * full. Waits while it is full; every DMA_DEV_ABORT_SPINS spins it reads *abort_flag (may be NULL)
 * and returns -1 if it is nonzero (the reserved ticket is then lost, which is fine: the ring is being
 * torn down). Returns 0 once the request is published. */
static __device__ __forceinline__ int dma_dev_push(struct dma_ring_shm *shm, struct dma_dev_prod *prod,
						   const struct dma_req *req,
						   const volatile uint32_t *abort_flag)
{
	const uint32_t capacity = prod->capacity;
	const uint32_t t = atomicAdd(&prod->ticket, 1u);
	/* The cached tail was read from shm->tail (acquire) by some pusher and stored with release:
	 * acquiring it orders the slot writes below after the dispatcher's reads of the older lap. A
	 * stale (smaller) value is only conservative. */
	uint32_t tail = ark_ld_acquire_gpu(&prod->tail);

	if ((int32_t)(t - tail) >= (int32_t)capacity) {
		uint32_t spins = 0;

		for (;;) {
			tail = ark_ld_acquire_sys(&shm->tail);
			if ((int32_t)(t - tail) < (int32_t)capacity)
				break;
			if (++spins == DMA_DEV_ABORT_SPINS) {
				spins = 0;
				if (abort_flag != NULL && *abort_flag != 0)
					return -1;
			}
			__nanosleep(256);
		}
		ark_st_release_gpu(&prod->tail, tail);
	}
	struct dma_req *s = dma_ring_slots(shm) + (t & (capacity - 1));
	dma_dev_write_slot(s, req);
	ark_st_release_sys(&s->seq, t + 1);
	return 0;
}

#endif
