/* ark_dma.h: the part of the software DMA engine that the GPU and arkgen see: the layout of a
 * request ring in mapped memory (written by the loop kernel's DMA tasks, read by the dispatcher),
 * the device producer state, and the chunk schedule (how many times a request raises its flag, and
 * which chunk holds which byte). The protocol is described in dma/dma.h and docs/design.md. Plain C,
 * host and device. */
#ifndef ARK_DMA_H
#define ARK_DMA_H

#include <stdint.h>

/* Chunks of the DMA dispatcher (dma_options.chunk_bytes, .chunk_max_bytes): the first chunk of a
 * request is ARK_DMA_CHUNK_BYTES, each next one twice the previous, up to ARK_DMA_CHUNK_MAX_BYTES. A
 * request of b bytes raises its flag dma_chunk_count(b, ARK_DMA_CHUNK_BYTES, ARK_DMA_CHUNK_MAX_BYTES)
 * times (dma/dma.h), which arkgen counts as the flag's signals per iteration. */
#define ARK_DMA_CHUNK_BYTES (1u << 20)
#define ARK_DMA_CHUNK_MAX_BYTES (16u << 20)
#define ARK_DMA_RING_SLOTS 1024u /* requests in flight per GPU before senders wait */

#define DMA_MAX_GPUS 8
#define DMA_RING_MAGIC 0x474e5244u        /* "DRNG" */
#define DMA_RING_MAX_CAPACITY (1u << 24)

/* dma_req.flags */
#define DMA_F_SRC_FLAG 1u                 /* also set the sender's flag after the last chunk */
#define DMA_F_KNOWN (DMA_F_SRC_FLAG)      /* any other bit is rejected */

/* One transfer: bytes from (src_gpu, src_off) to (dst_gpu, dst_off), offsets into the GPUs' arenas. */
struct dma_req {
	uint32_t seq;            /* ticket + 1, written last (release) by the producer */
	uint32_t src_gpu, dst_gpu;
	uint32_t flags;          /* DMA_F_* */
	uint64_t src_off, dst_off, bytes;
	uint32_t flag_index;     /* receiver's flag: counters[dst_gpu][flag_index] */
	uint32_t flag_value;     /* its value once the whole request arrived */
	uint32_t src_flag_index; /* sender's flag, with DMA_F_SRC_FLAG: counters[src_gpu][...] */
	uint32_t src_flag_value;
	uint32_t pad[2];         /* to one cache line */
};

/* The shared header at the start of the ring memory. */
struct dma_ring_shm {
	uint32_t head;           /* next ticket to reserve: producers, atomic add */
	uint32_t pad0[15];
	uint32_t tail;           /* tickets consumed: dispatcher, store-release */
	uint32_t pad1[15];
	uint32_t magic, capacity, mask;
	uint32_t pad2[13];
};

#define DMA_RING_HDR_BYTES 192

#ifdef __cplusplus
static_assert(sizeof(struct dma_req) == 64, "dma_req is one cache line");
static_assert(sizeof(struct dma_ring_shm) == DMA_RING_HDR_BYTES, "ring header layout");
#else
_Static_assert(sizeof(struct dma_req) == 64, "dma_req is one cache line");
_Static_assert(sizeof(struct dma_ring_shm) == DMA_RING_HDR_BYTES, "ring header layout");
#endif

#ifdef __CUDACC__
#define DMA_HD __host__ __device__
#else
#define DMA_HD
#endif

/* ---- the chunk schedule (first > 0, max >= first; callers normalize 0 to the defaults) ---------- */

/* Byte offset where chunk k starts (k >= 0); saturates at UINT64_MAX. */
static inline DMA_HD uint64_t dma_chunk_start(uint64_t k, uint64_t first, uint64_t max)
{
	uint64_t off = 0, len = first;

	/* The doubling phase has at most 64 steps. */
	while (k > 0 && len < max) {
		if (off > UINT64_MAX - len)
			return UINT64_MAX;
		off += len;
		len = len > max / 2 ? max : 2 * len;
		k--;
	}
	if (k == 0)
		return off;
	if (k > (UINT64_MAX - off) / max)
		return UINT64_MAX;
	return off + k * max;
}

/* Index of the chunk that holds byte `offset` of a request. */
static inline DMA_HD uint64_t dma_chunk_of(uint64_t offset, uint64_t first, uint64_t max)
{
	uint64_t off = 0, len = first, k = 0;

	while (len < max) {
		if (offset - off < len)
			return k;
		off += len;
		len = len > max / 2 ? max : 2 * len;
		k++;
	}
	return k + (offset - off) / max;
}

/* Chunks of a request of `bytes` bytes (0 for 0 bytes). */
static inline DMA_HD uint64_t dma_chunk_count(uint64_t bytes, uint64_t first, uint64_t max)
{
	return bytes == 0 ? 0 : dma_chunk_of(bytes - 1, first, max) + 1;
}

/* Producer state of a ring whose producers are the threads of one GPU (dma_dev_push), in that GPU's
 * memory: one per ring, set up by dma_dev_prod_init from the ring (before any push) and then owned by
 * the device. The dispatcher never reads it. */
struct dma_dev_prod {
	uint32_t ticket;         /* next ticket: atomicAdd by the pushing threads */
	uint32_t pad0[31];
	uint32_t tail;           /* a tail value seen (never ahead of shm->tail), release/acquire .gpu */
	uint32_t capacity;       /* the ring's, constant */
	uint32_t pad1[30];
};

#ifdef __cplusplus
static_assert(sizeof(struct dma_dev_prod) == 256, "dma_dev_prod layout");
#else
_Static_assert(sizeof(struct dma_dev_prod) == 256, "dma_dev_prod layout");
#endif

/* The slots of a ring whose shared memory starts at shm (works on host and device pointers). */
static inline DMA_HD struct dma_req *dma_ring_slots(struct dma_ring_shm *shm)
{
	return (struct dma_req *)((char *)shm + DMA_RING_HDR_BYTES);
}

#endif
