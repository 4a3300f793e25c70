/* cuda_backend.c: the DMA engine's CUDA backend: peer copies and flag writes on one stream per
 * (source, destination) pair, and request rings in mapped pinned host memory.
 *
 * Flag modes (dma_cuda_set_flag_mode): DMA_FLAGS_SAME_STREAM writes a flag on the pair's copy
 * stream, after the copies before it; the next copy starts once the write is done. DMA_FLAGS_EVENT
 * records an event on the copy stream after the copies and makes a second stream of the pair (the
 * flag stream) wait for it, then writes the flag there: copies run back to back, a flag still never
 * overtakes its data (the event), and the flags of a pair stay in order (one flag stream, in order).
 * One event per pair is enough: a wait enqueued before the event is recorded again still waits for
 * the earlier recording. DMA_FLAGS_AUTO (the default) picks per flag: after a copy of at least
 * DMA_EVENT_MIN_BYTES the event way (such a copy outlasts the dispatcher's calls for the next one, so
 * the copy engine stays busy), else the copy stream (one call and one wait fewer: lower latency).
 * When a pair goes back from the flag stream to the copy stream, the copy stream first waits for
 * the flag stream's writes, so the flags of a pair are written in the order they were requested.
 *
 * A flag write is one cuStreamBatchMemOp of two operations: a system-wide memory barrier
 * (CU_STREAM_MEM_OP_BARRIER, CU_STREAM_MEMORY_BARRIER_TYPE_SYS), then the write of the value
 * (CU_STREAM_MEM_OP_WRITE_VALUE_32) into the destination GPU's counter through peer access. Stream
 * order puts both after the copies before them; the barrier is the documented, explicit form of the
 * fence that makes those copies visible system-wide before the flag (docs/design.md, "Between GPUs,
 * by the DMA engine", says why we do not rely on the fence implied by a plain cuStreamWriteValue32).
 * One driver call per flag, as before. A driver that refuses the batch gets cuStreamWriteValue32
 * with default flags (documented to fence like __threadfence_system() before the write) from then on; dma_cuda_flag_write says which one is in use. Both are resolved
 * through cudaGetDriverEntryPointByVersion, so only cudart is linked. The alternative, a 4-byte
 * cudaMemcpyAsync from pinned host memory, would need a pool of value slots that is never rewritten
 * before its copy completed (tracked with events); the stream memory operation avoids that
 * bookkeeping. Copies are issued without cudaSetDevice: a copy may be enqueued on a stream of any
 * device. */
#include <cuda.h>          /* driver API types only: CUstream, CUdeviceptr, CUresult */
#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dma.h"

typedef CUresult (*write_value32_fn)(CUstream stream, CUdeviceptr addr, cuuint32_t value,
				     unsigned int flags);
typedef CUresult (*batch_mem_op_fn)(CUstream stream, unsigned int count, CUstreamBatchMemOpParams *ops,
				    unsigned int flags);

struct dma_cuda {
	int n;
	char *arenas[DMA_MAX_GPUS];                        /* device pointer on GPU g */
	uint32_t *counters[DMA_MAX_GPUS];                  /* device pointer on GPU g */
	cudaStream_t streams[DMA_MAX_GPUS][DMA_MAX_GPUS];  /* [src][dst], created on src: copies */
	cudaStream_t fstreams[DMA_MAX_GPUS][DMA_MAX_GPUS]; /* [src][dst], on src: flags (EVENT mode) */
	cudaEvent_t events[DMA_MAX_GPUS][DMA_MAX_GPUS];    /* [src][dst], on src: copies done so far */
	cudaEvent_t fevents[DMA_MAX_GPUS][DMA_MAX_GPUS];   /* [src][dst], on src: flags written so far */
	uint64_t last_copy[DMA_MAX_GPUS][DMA_MAX_GPUS];    /* AUTO: bytes of the pair's last copy */
	uint8_t on_fstream[DMA_MAX_GPUS][DMA_MAX_GPUS];    /* AUTO: the pair's last flag went on fstreams */
	int flag_mode;                                     /* DMA_FLAGS_* */
	write_value32_fn write32;
	batch_mem_op_fn batch;                             /* NULL: the driver has no barrier op */
};

#define CUDA_TRY(call)                                                                           \
	do {                                                                                     \
		cudaError_t err_ = (call);                                                       \
		if (err_ != cudaSuccess) {                                                       \
			dma_error("%s:%d: %s: %s", __FILE__, __LINE__, #call,                    \
				  cudaGetErrorString(err_));                                     \
			goto fail;                                                               \
		}                                                                                \
	} while (0)

static int cuda_copy(void *ctx, int src, uint64_t src_off, int dst, uint64_t dst_off, uint64_t bytes)
{
	struct dma_cuda *c = ctx;

	CUDA_TRY(cudaMemcpyPeerAsync(c->arenas[dst] + dst_off, dst, c->arenas[src] + src_off, src,
				     bytes, c->streams[src][dst]));
	c->last_copy[src][dst] = bytes;
	return DMA_OK;
fail:
	return DMA_ERR;
}

/* The barrier, then the value, in one batch; cuStreamWriteValue32 where the driver refuses the batch
 * (a driver without the barrier operation refuses it before it enqueues anything; an error of the
 * write itself fails the plain write too, and is returned from there). */
static CUresult write_flag(struct dma_cuda *c, cudaStream_t st, uint32_t *flag, uint32_t value)
{
	if (c->batch) {
		CUstreamBatchMemOpParams op[2];
		memset(op, 0, sizeof op);
		op[0].memoryBarrier.operation = CU_STREAM_MEM_OP_BARRIER;
		op[0].memoryBarrier.flags = CU_STREAM_MEMORY_BARRIER_TYPE_SYS;
		op[1].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
		op[1].writeValue.address = (CUdeviceptr)(uintptr_t)flag;
		op[1].writeValue.value = value;
		op[1].writeValue.flags = CU_STREAM_WRITE_VALUE_DEFAULT;
		if (c->batch((CUstream)st, 2, op, 0) == CUDA_SUCCESS)
			return CUDA_SUCCESS;
		CUresult r = c->write32((CUstream)st, (CUdeviceptr)(uintptr_t)flag, value, CU_STREAM_WRITE_VALUE_DEFAULT);
		if (r == CUDA_SUCCESS)
			c->batch = NULL;
		return r;
	}
	return c->write32((CUstream)st, (CUdeviceptr)(uintptr_t)flag, value, CU_STREAM_WRITE_VALUE_DEFAULT);
}

static int cuda_signal(void *ctx, int src, int dst, int flag_gpu, uint32_t flag_index,
		       uint32_t value)
{
	struct dma_cuda *c = ctx;
	cudaStream_t st = c->streams[src][dst];
	CUresult r;

	int event = c->flag_mode == DMA_FLAGS_EVENT ||
		    (c->flag_mode == DMA_FLAGS_AUTO && c->last_copy[src][dst] >= DMA_EVENT_MIN_BYTES);
	if (event) {
		CUDA_TRY(cudaEventRecord(c->events[src][dst], st));
		CUDA_TRY(cudaStreamWaitEvent(c->fstreams[src][dst], c->events[src][dst], 0));
		st = c->fstreams[src][dst];
		c->on_fstream[src][dst] = 1;
	} else if (c->on_fstream[src][dst]) { /* back to the copy stream: after the flags queued there */
		CUDA_TRY(cudaEventRecord(c->fevents[src][dst], c->fstreams[src][dst]));
		CUDA_TRY(cudaStreamWaitEvent(st, c->fevents[src][dst], 0));
		c->on_fstream[src][dst] = 0;
	}
	r = write_flag(c, st, c->counters[flag_gpu] + flag_index, value);
	if (r != CUDA_SUCCESS)
		return dma_error("cuStreamWriteValue32 (GPU %d -> GPU %d, flag %u of GPU %d): CUresult %d",
				 src, dst, flag_index, flag_gpu, (int)r);
	return DMA_OK;
fail:
	return DMA_ERR;
}

static int resolve_write32(struct dma_cuda *c)
{
	enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
	void *fn = NULL;

	CUDA_TRY(cudaGetDriverEntryPointByVersion("cuStreamWriteValue32", &fn, 12000, cudaEnableDefault,
						  &q));
	if (q != cudaDriverEntryPointSuccess || fn == NULL)
		return dma_error("dma cuda: the driver has no cuStreamWriteValue32 (query result %d)", (int)q);
	c->write32 = (write_value32_fn)fn;
	fn = NULL;
	if (cudaGetDriverEntryPointByVersion("cuStreamBatchMemOp", &fn, 12000, cudaEnableDefault, &q) == cudaSuccess &&
	    q == cudaDriverEntryPointSuccess)
		c->batch = (batch_mem_op_fn)fn;
	else
		(void)cudaGetLastError();
	return DMA_OK;
fail:
	return DMA_ERR;
}

int dma_cuda_create(struct dma_cuda **out, int n, void *const *arenas, uint32_t *const *counters,
		    struct dma_backend *be)
{
	struct dma_cuda *c;
	int prev = 0, have_prev, ndev = 0;

	*out = NULL;
	if (n < 1 || n > DMA_MAX_GPUS)
		return dma_error("dma cuda: %d GPUs, expected 1 to %d", n, DMA_MAX_GPUS);
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return dma_error("dma cuda: out of memory");
	c->n = n;
	c->flag_mode = DMA_FLAGS_AUTO;
	have_prev = cudaGetDevice(&prev) == cudaSuccess;
	CUDA_TRY(cudaGetDeviceCount(&ndev));
	if (ndev < n) {
		dma_error("dma cuda: %d GPUs requested, %d present", n, ndev);
		goto fail;
	}
	if (resolve_write32(c) != DMA_OK)
		goto fail;
	for (int g = 0; g < n; g++) {
		c->arenas[g] = arenas[g];
		c->counters[g] = counters[g];
	}
	for (int s = 0; s < n; s++) {
		CUDA_TRY(cudaSetDevice(s));
		for (int d = 0; d < n; d++) {
			if (d != s) {
				int can = 0;
				cudaError_t err;

				CUDA_TRY(cudaDeviceCanAccessPeer(&can, s, d));
				if (!can) {
					dma_error("dma cuda: GPU %d cannot access GPU %d (flag writes need peer access)",
						  s, d);
					goto fail;
				}
				err = cudaDeviceEnablePeerAccess(d, 0);
				if (err == cudaErrorPeerAccessAlreadyEnabled)
					(void)cudaGetLastError();
				else
					CUDA_TRY(err);
			}
			CUDA_TRY(cudaStreamCreateWithFlags(&c->streams[s][d], cudaStreamNonBlocking));
			CUDA_TRY(cudaStreamCreateWithFlags(&c->fstreams[s][d], cudaStreamNonBlocking));
			CUDA_TRY(cudaEventCreateWithFlags(&c->events[s][d], cudaEventDisableTiming));
			CUDA_TRY(cudaEventCreateWithFlags(&c->fevents[s][d], cudaEventDisableTiming));
		}
	}
	if (have_prev)
		cudaSetDevice(prev);
	be->ctx = c;
	be->copy = cuda_copy;
	be->signal = cuda_signal;
	*out = c;
	return DMA_OK;
fail:
	dma_cuda_destroy(c);
	if (have_prev)
		cudaSetDevice(prev);
	return DMA_ERR;
}

int dma_cuda_sync(struct dma_cuda *c)
{
	for (int s = 0; s < c->n; s++)
		for (int d = 0; d < c->n; d++) {
			if (c->streams[s][d])
				CUDA_TRY(cudaStreamSynchronize(c->streams[s][d]));
			if (c->fstreams[s][d])
				CUDA_TRY(cudaStreamSynchronize(c->fstreams[s][d]));
		}
	return DMA_OK;
fail:
	return DMA_ERR;
}

int dma_cuda_wait_idle(struct dma_cuda *c, double ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	double until = ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6 + ms;
	for (;;) {
		int busy = 0;
		for (int s = 0; s < c->n; s++)
			for (int d = 0; d < c->n; d++) {
				busy |= c->streams[s][d] && cudaStreamQuery(c->streams[s][d]) == cudaErrorNotReady;
				busy |= c->fstreams[s][d] && cudaStreamQuery(c->fstreams[s][d]) == cudaErrorNotReady;
			}
		(void)cudaGetLastError(); /* a failed stream is idle: its error is not ours to report here */
		if (!busy)
			return 1;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		if (ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6 > until)
			return 0;
		struct timespec nap = {0, 100000};
		nanosleep(&nap, NULL);
	}
}

int dma_cuda_set_flag_mode(struct dma_cuda *c, int mode)
{
	if (mode != DMA_FLAGS_SAME_STREAM && mode != DMA_FLAGS_EVENT && mode != DMA_FLAGS_AUTO)
		return dma_error("dma cuda: unknown flag mode %d", mode);
	/* Flags of the old mode may still be queued: let them land before the new mode writes more. */
	if (dma_cuda_sync(c) != DMA_OK)
		return DMA_ERR;
	c->flag_mode = mode;
	return DMA_OK;
}

int dma_cuda_flag_mode(const struct dma_cuda *c)
{
	return c->flag_mode;
}

const char *dma_cuda_flag_write(const struct dma_cuda *c)
{
	return c->batch ? "cuStreamBatchMemOp(barrier sys, write)" : "cuStreamWriteValue32";
}

void dma_cuda_destroy(struct dma_cuda *c)
{
	if (c == NULL)
		return;
	for (int s = 0; s < c->n; s++)
		for (int d = 0; d < c->n; d++) {
			if (c->streams[s][d]) {
				cudaStreamSynchronize(c->streams[s][d]);
				cudaStreamDestroy(c->streams[s][d]);
			}
			if (c->fstreams[s][d]) {
				cudaStreamSynchronize(c->fstreams[s][d]);
				cudaStreamDestroy(c->fstreams[s][d]);
			}
			if (c->events[s][d])
				cudaEventDestroy(c->events[s][d]);
			if (c->fevents[s][d])
				cudaEventDestroy(c->fevents[s][d]);
		}
	free(c);
}

int dma_cuda_ring_alloc(struct dma_ring *r, uint32_t capacity, struct dma_ring_shm **dev)
{
	size_t bytes = dma_ring_bytes(capacity);
	void *mem = NULL, *dptr = NULL;

	if (bytes == 0)
		return dma_error("dma ring: capacity %u is not a power of two in [1, %u]", capacity,
				 DMA_RING_MAX_CAPACITY);
	CUDA_TRY(cudaHostAlloc(&mem, bytes, cudaHostAllocMapped | cudaHostAllocPortable));
	if (dma_ring_init(r, mem, capacity) != DMA_OK)
		goto fail;
	CUDA_TRY(cudaHostGetDevicePointer(&dptr, mem, 0));
	*dev = dptr;
	return DMA_OK;
fail:
	if (mem)
		cudaFreeHost(mem);
	r->shm = NULL;
	return DMA_ERR;
}

int dma_cuda_dev_prod_alloc(const struct dma_ring *r, struct dma_dev_prod **dev)
{
	struct dma_dev_prod init;
	void *d = NULL;

	*dev = NULL;
	if (r->shm == NULL)
		return dma_error("dma ring: not allocated");
	dma_dev_prod_init(&init, r);
	CUDA_TRY(cudaMalloc(&d, sizeof(init)));
	CUDA_TRY(cudaMemcpy(d, &init, sizeof(init), cudaMemcpyHostToDevice));
	*dev = d;
	return DMA_OK;
fail:
	if (d)
		cudaFree(d);
	return DMA_ERR;
}

void dma_cuda_dev_prod_free(struct dma_dev_prod *dev)
{
	if (dev)
		cudaFree(dev);
}

void dma_cuda_ring_free(struct dma_ring *r)
{
	if (r->shm)
		cudaFreeHost(r->shm);
	r->shm = NULL;
	r->slots = NULL;
}
