/* dma_device.cuh: the GPU-side producer of the DMA request ring (protocol in dma.h). */
#ifndef DMA_DEVICE_CUH
#define DMA_DEVICE_CUH

#include <stdint.h>

#include "dma.h"

/* Spins on a full ring between two looks at the abort flag. */
#ifndef DMA_DEV_ABORT_SPINS
#define DMA_DEV_ABORT_SPINS 4096
#endif

static __device__ __forceinline__ void dma_dev_store_release_sys(uint32_t *p, uint32_t v)
{
	asm volatile("st.release.sys.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

/* Pushes one request into the ring whose shared part is at shm (the device pointer of the mapped
 * ring memory) with `capacity` slots. Called by ONE thread (after the tile that produced the data
 * finished and was made visible: __syncthreads(), then this thread). req->seq is ignored.
 * Waits while the ring is full; every DMA_DEV_ABORT_SPINS spins it reads *abort_flag (may be NULL)
 * and returns -1 if it is nonzero (the reserved ticket is then lost, which is fine: the ring is being
 * torn down). Returns 0 once the request is published. */
static __device__ __forceinline__ int dma_dev_push(struct dma_ring_shm *shm, uint32_t capacity,
						   const struct dma_req *req,
						   const volatile uint32_t *abort_flag)
{
	/* Atomics on mapped memory are atomic among this GPU's threads: one GPU per ring. */
	uint32_t t = atomicAdd(&shm->head, 1u);
	const volatile uint32_t *tail = &shm->tail;
	uint32_t spins = 0;

	while ((int32_t)(t - *tail) >= (int32_t)capacity) {
		if (++spins == DMA_DEV_ABORT_SPINS) {
			spins = 0;
			if (abort_flag != NULL && *abort_flag != 0)
				return -1;
		}
		__nanosleep(256);
	}
	/* The dispatcher's reads of this slot's previous lap happened before its tail store that we
	 * just saw; the fence orders our writes after that load. */
	__threadfence_system();
	volatile struct dma_req *s = dma_ring_slots(shm) + (t & (capacity - 1));
	s->src_gpu = req->src_gpu;
	s->dst_gpu = req->dst_gpu;
	s->flags = req->flags;
	s->src_off = req->src_off;
	s->dst_off = req->dst_off;
	s->bytes = req->bytes;
	s->flag_index = req->flag_index;
	s->flag_value = req->flag_value;
	s->src_flag_index = req->src_flag_index;
	s->src_flag_value = req->src_flag_value;
	__threadfence_system();
	dma_dev_store_release_sys((uint32_t *)&s->seq, t + 1);
	return 0;
}

#endif
