/* dma.h: the software DMA engine: request rings written by GPUs, a busy-polling CPU dispatcher and
 * its pluggable copy backends. Plain C (the layout is shared with dma_device.cuh).
 *
 * ---- The request ring --------------------------------------------------------------------------
 * One ring per GPU, in memory that its GPU can write (mapped pinned host memory in production,
 * any 64-byte aligned block in tests). Layout of the block (dma_ring_bytes(capacity) bytes):
 *
 *   offset   0  struct dma_ring_shm  line 0: head      next ticket; producers only (atomic add)
 *                                    line 1: tail      tickets consumed; dispatcher only
 *                                    line 2: magic, capacity, mask   constant after init
 *   offset 192  struct dma_req slots[capacity]         64 bytes each (one cache line)
 *
 * Tickets are 32-bit and wrap; every comparison is a signed difference. Ticket t lives in slot
 * t & mask; the slot is valid for ticket t when slot.seq == t + 1 (so seq values of successive laps
 * differ, and the initial value of slot i is i + 1 - capacity: "consumed in lap -1").
 *
 * Producers: a ring has EITHER a device ticket counter (GPU producers) OR the host head (CPU
 * producers), never both, because atomics on mapped memory are not atomic between the CPU and the
 * GPU (and the head would cost the GPU a PCIe round trip per push):
 *   CPU (dma_ring_push / dma_ring_try_push): tickets from shm->head (atomic add);
 *   GPU (dma_dev_push in dma_device.cuh): tickets from struct dma_dev_prod in the GPU's own memory
 *   (atomicAdd there), which also caches a tail value it saw; shm->head is then never touched.
 *   1. t = atomic_add(&ticket, 1)                            reserve a ticket
 *   2. while ((int32_t)(t - tail) >= capacity) spin          back-pressure: never overwrite
 *      (tail is read with acquire, so the dispatcher's reads of the previous lap happen before; the
 *      GPU first compares with its cached tail, which is never ahead of the real one, and reads the
 *      host tail only when the cache says the ring may be full)
 *   3. write every field of slots[t & mask] except seq
 *   4. store-release seq = t + 1 (GPU: one st.release.sys, no separate fence)
 * Consumer (the dispatcher, one CPU thread for all rings; it never reads head):
 *   1. load-acquire seq of slots[tail & mask]; if != tail + 1 nothing is ready (yet)
 *   2. copy the request out, validate it, hand it to the backend (asynchronous copies)
 *   3. store-release tail = tail + 1
 * A ticket that is reserved but not yet published blocks the ring behind it: requests are served
 * strictly in ticket order, per ring. Rings are served round robin.
 *
 * ---- Chunks ------------------------------------------------------------------------------------
 * The dispatcher cuts a request into chunks that grow: chunk 0 is `first` bytes, each next one twice
 * the previous, up to `max` bytes (dma_options.chunk_bytes, .chunk_max_bytes); the last chunk is what
 * is left. A 64 MiB request with first = 1 MiB, max = 16 MiB is 1, 2, 4, 8, 16, 16, 16, 1 MiB: the
 * first bytes arrive early, and large requests pay few flag writes. first == max is fixed chunking.
 * dma_chunk_count / dma_chunk_of / dma_chunk_start below are the one definition of the schedule,
 * shared by the dispatcher, the device code (flag values) and arkgen (signals per iteration, waits).
 *
 * ---- Completion flags --------------------------------------------------------------------------
 * A request carries flag_value, the value that the receiver's flag (flag_index in the counter array
 * of dst_gpu) holds once the whole request arrived. A request of n chunks raises it chunk by chunk:
 * chunk k (0-based) sets flag_value - (n - 1 - k), so a receiver may start on the first chunk (bytes
 * [0, dma_chunk_start(k + 1)) have arrived once the flag reached flag_value - (n - 1 - k)). With
 * DMA_F_SRC_FLAG the sender's flag (src_flag_index on src_gpu) is set to src_flag_value after the
 * last chunk: the source buffer may then be reused. Flag writes are absolute stores (not adds),
 * ordered after the copies before them on their (src, dst) pair, so they never overtake the data. Because they are
 * stores, requests that raise one flag must share a (src_gpu, dst_gpu) pair to stay ordered.
 * An invalid request (zero bytes, GPU out of range, range beyond the arena or overflowing, unknown
 * flag bits or flag index) is skipped: nothing is copied and no flag is raised; the engine counts it,
 * sets engine->failed and keeps its description, and goes on with the next request.
 *
 * Functions return DMA_OK (0), DMA_FULL (try_push on a full ring) or DMA_ERR (-1, message in
 * dma_last_error(), per thread). Rejected requests are reported through the engine instead
 * (dma_engine_last_error, engine->failed), because they are found on the dispatcher thread.
 */
#ifndef DMA_H
#define DMA_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "ark_dma.h"

#define DMA_DEFAULT_CHUNK_BYTES ARK_DMA_CHUNK_BYTES         /* first chunk */
#define DMA_DEFAULT_CHUNK_MAX_BYTES ARK_DMA_CHUNK_MAX_BYTES /* largest chunk */
#define DMA_DEFAULT_IDLE_US 200
#define DMA_DEFAULT_SLEEP_US 30

#ifdef __cplusplus
extern "C" {
#endif

enum { DMA_OK = 0, DMA_ERR = -1, DMA_FULL = 1 };

/* Host handle of a ring (a few pointers; copies of it refer to the same ring). */
struct dma_ring {
	struct dma_ring_shm *shm;
	struct dma_req *slots;   /* [capacity] */
	uint32_t capacity, mask;
};

/* Bytes of ring memory for capacity slots; 0 if capacity is not a power of two in
 * [1, DMA_RING_MAX_CAPACITY]. */
size_t dma_ring_bytes(uint32_t capacity);
/* Lays out an empty ring in mem (dma_ring_bytes(capacity) bytes, 64-byte aligned). */
int dma_ring_init(struct dma_ring *r, void *mem, uint32_t capacity);
/* Same, with head = tail = first_ticket (tests use it to cross the 32-bit wrap). */
int dma_ring_init_at(struct dma_ring *r, void *mem, uint32_t capacity, uint32_t first_ticket);
/* Handle of a ring that dma_ring_init laid out in mem (checks magic and capacity). */
int dma_ring_attach(struct dma_ring *r, void *mem);

/* CPU producers (tests, host-side transfers). req->seq is ignored. Blocking: waits (spins, then
 * yields) while the ring is full. */
int dma_ring_push(struct dma_ring *r, const struct dma_req *req);
/* Non-blocking: DMA_FULL without reserving anything when the ring has no free slot. */
int dma_ring_try_push(struct dma_ring *r, const struct dma_req *req);
/* The initial device producer state of ring r (ticket = head, tail = tail, capacity), to be copied
 * to the GPU that pushes into r (dma_cuda_dev_prod_alloc does both). */
void dma_dev_prod_init(struct dma_dev_prod *p, const struct dma_ring *r);
/* Tickets reserved by CPU producers but not yet consumed (a snapshot; rings with a device ticket
 * counter do not move the host head). */
uint32_t dma_ring_pending(const struct dma_ring *r);
/* Tickets consumed so far (the tail). */
uint32_t dma_ring_consumed(const struct dma_ring *r);

/* ---- backends ------------------------------------------------------------------------------ */
/* Both calls only enqueue work (in order per (src_gpu, dst_gpu) pair) and return 0, or nonzero on
 * failure (after dma_error() with the reason: the engine quotes it). signal sets counters[flag_gpu][flag_index] = value after every copy enqueued before it on
 * the (src_gpu, dst_gpu) pair; flag_gpu is dst_gpu for the receiver's flag, src_gpu for the
 * sender's. */
struct dma_backend {
	void *ctx;
	int (*copy)(void *ctx, int src_gpu, uint64_t src_off, int dst_gpu, uint64_t dst_off,
		    uint64_t bytes);
	int (*signal)(void *ctx, int src_gpu, int dst_gpu, int flag_gpu, uint32_t flag_index,
		      uint32_t value);
};

/* ---- the dispatcher ------------------------------------------------------------------------- */
struct dma_options {
	uint64_t chunk_bytes;                  /* first chunk of a request; 0: 1 MiB */
	uint64_t chunk_max_bytes;              /* largest chunk (chunks double up to it); 0: 16 MiB,
						* raised to chunk_bytes if smaller */
	uint32_t idle_us;                      /* busy-poll this long without work, then back off; 0: 200 */
	uint32_t sleep_us;                     /* back-off sleep between polls; 0: 30 */
	uint64_t arena_bytes[DMA_MAX_GPUS];    /* size of each GPU's arena: requests must fit in it */
	uint32_t n_flags[DMA_MAX_GPUS];        /* flags per GPU; 0: flag indices are not checked */
};

struct dma_stats {
	uint64_t requests;       /* accepted and handed to the backend */
	uint64_t bytes;          /* bytes of accepted requests */
	uint64_t chunks;         /* copies handed to the backend */
	uint64_t rejected;       /* invalid requests skipped */
	uint64_t backend_errors; /* requests the backend failed on (rest of the request skipped) */
	uint64_t empty_polls;    /* passes over all rings that found nothing */
	uint64_t sleeps;         /* back-off sleeps (idle for longer than idle_us) */
};

/* One dispatcher thread over n rings (ring g belongs to GPU g). The caller owns the memory; the
 * fields below the line are private. */
struct dma_engine {
	int failed;              /* set (atomically) once a request was rejected or the backend
				  * failed; cleared by dma_engine_start */
	/* ---- private ---- */
	struct dma_ring rings[DMA_MAX_GPUS];
	int n_rings;
	struct dma_backend be;
	struct dma_options opt;
	pthread_t thread;
	pthread_mutex_t err_lock;
	int running;             /* controlling thread only */
	int stop, pause_req, paused;
	struct dma_stats stats;  /* single writer: the dispatcher */
	char err[256];           /* last rejection, under err_lock */
	char err_copy[256];      /* what dma_engine_last_error returned */
};

/* Starts the dispatcher over rings[0 .. n) (n <= DMA_MAX_GPUS, n = number of GPUs; src_gpu and
 * dst_gpu must be below n). e must not be running; start initializes all of it (stats, failed and
 * the last error start empty), so a zeroed or stopped engine is fine. The rings keep their state
 * between runs, so a restarted engine continues where the previous one stopped. */
int dma_engine_start(struct dma_engine *e, const struct dma_ring *rings, int n,
		     const struct dma_backend *be, const struct dma_options *opt);
/* Stops the dispatcher: every request published before the call (in ticket order, up to the first
 * reserved but unpublished ticket of each ring) is handed to the backend before it returns; later
 * ones stay in their rings for the next start. Copies stats into *st if st is not NULL. */
int dma_engine_stop(struct dma_engine *e, struct dma_stats *st);
/* Snapshot of the counters while running (or after stop). */
void dma_engine_stats(struct dma_engine *e, struct dma_stats *st);
/* Description of the last rejected request or backend failure ("" if none). The string stays
 * valid until the next call; call it from one thread at a time. */
const char *dma_engine_last_error(struct dma_engine *e);
/* Test and debug hook: pause != 0 returns once the dispatcher has stopped taking requests;
 * pause == 0 lets it continue. dma_engine_stop drains even a paused engine. */
void dma_engine_pause(struct dma_engine *e, int pause);

/* Message of the last failed dma_* call of this thread ("" if none). */
const char *dma_last_error(void);
int dma_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- the CUDA backend (cuda_backend.c) ---------------------------------------------------- */
struct dma_cuda;
/* A backend over n GPUs: arenas[g] and counters[g] are device pointers on GPU g (the arena and the
 * flag array the loop kernel waits on). Enables peer access between every pair, creates one
 * non-blocking stream per (src, dst) pair on the source GPU (and a flag stream and an event for
 * DMA_FLAGS_EVENT), and resolves cuStreamWriteValue32.
 * Fills *be. */
int dma_cuda_create(struct dma_cuda **out, int n, void *const *arenas, uint32_t *const *counters,
		    struct dma_backend *be);
/* Waits until every enqueued copy and flag write has completed. */
int dma_cuda_sync(struct dma_cuda *c);
/* Polls every stream of c until all are idle (1) or ms milliseconds have passed (0); never blocks
 * (a close that must return even when a copy never ends). */
int dma_cuda_wait_idle(struct dma_cuda *c, double ms);
/* Where flag writes go (cuda_backend.c): DMA_FLAGS_SAME_STREAM on the pair's copy stream;
 * DMA_FLAGS_EVENT on a second stream of the pair, after an event recorded on the copy stream, so
 * copies run back to back; DMA_FLAGS_AUTO (the default) the event way after copies of at least
 * DMA_EVENT_MIN_BYTES, else the copy stream. Measured on 2 x H200 (bench/NOTES.md): the copy stream
 * is as fast or faster for requests below 1 MiB; from 1 MiB the event way streams faster.
 * Call it with no request in flight (engine stopped): it syncs first. */
enum { DMA_FLAGS_SAME_STREAM = 0, DMA_FLAGS_EVENT = 1, DMA_FLAGS_AUTO = 2 };
#define DMA_EVENT_MIN_BYTES (1u << 20)
int dma_cuda_set_flag_mode(struct dma_cuda *c, int mode);
int dma_cuda_flag_mode(const struct dma_cuda *c);
/* How flags are written: "cuStreamBatchMemOp(barrier sys, write)", or "cuStreamWriteValue32" where
 * the driver has no barrier operation (cuda_backend.c). */
const char *dma_cuda_flag_write(const struct dma_cuda *c);
/* Syncs, destroys the streams and frees c (NULL is fine). */
void dma_cuda_destroy(struct dma_cuda *c);
/* A ring in mapped pinned host memory; *dev gets the device pointer of its shared part (pass it to
 * dma_dev_push). */
int dma_cuda_ring_alloc(struct dma_ring *r, uint32_t capacity, struct dma_ring_shm **dev);
void dma_cuda_ring_free(struct dma_ring *r);
/* The device producer state of ring r in the memory of the current device (cudaSetDevice first),
 * initialized by dma_dev_prod_init; *dev gets it (pass it to dma_dev_push). */
int dma_cuda_dev_prod_alloc(const struct dma_ring *r, struct dma_dev_prod **dev);
void dma_cuda_dev_prod_free(struct dma_dev_prod *dev);

#ifdef __cplusplus
}
#endif

#endif
