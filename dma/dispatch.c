/* dispatch.c: the DMA dispatcher: one busy-polling thread that takes requests from every ring in
 * ticket order, validates them, cuts them into chunks and hands copies and flag writes to the
 * backend. It never waits for a copy; it sleeps only after idle_us without any work. */
#define _GNU_SOURCE /* pthread_setname_np */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dma.h"

/* Requests taken from one ring before the next ring gets its turn. */
#define BATCH 32
/* Empty polls between two looks at the clock while busy-polling. */
#define CLOCK_EVERY 64

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield" ::: "memory")
#else
#define cpu_relax() __asm__ __volatile__("" ::: "memory")
#endif

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void sleep_us(uint32_t us)
{
	struct timespec ts = { .tv_sec = us / 1000000u, .tv_nsec = (long)(us % 1000000u) * 1000 };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Counters have one writer (the dispatcher); readers on other threads load them relaxed. */
static void stat_add(uint64_t *c, uint64_t v)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}

__attribute__((format(printf, 2, 3)))
static void engine_error(struct dma_engine *e, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&e->err_lock);
	va_start(ap, fmt);
	vsnprintf(e->err, sizeof(e->err), fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&e->err_lock);
	__atomic_store_n(&e->failed, 1, __ATOMIC_RELEASE);
}

/* Why q cannot be served, or NULL if it can. why[] receives details. */
static const char *invalid(const struct dma_engine *e, const struct dma_req *q, char *why, size_t n)
{
	uint32_t g[2] = { q->src_gpu, q->dst_gpu };
	uint64_t off[2] = { q->src_off, q->dst_off };
	const char *side[2] = { "src", "dst" };
	if (q->flags & ~DMA_F_KNOWN) {
		snprintf(why, n, "unknown flags 0x%x", q->flags & ~DMA_F_KNOWN);
		return why;
	}
	if (q->bytes == 0)
		return "bytes == 0";
	for (int i = 0; i < 2; i++) {
		if (g[i] >= (uint32_t)e->n_rings) {
			snprintf(why, n, "%s_gpu %u >= n_gpus %d", side[i], g[i], e->n_rings);
			return why;
		}
		if (off[i] > UINT64_MAX - q->bytes) {
			snprintf(why, n, "%s_off + bytes overflows", side[i]);
			return why;
		}
		if (off[i] + q->bytes > e->opt.arena_bytes[g[i]]) {
			snprintf(why, n, "%s range [%" PRIu64 ", %" PRIu64 ") beyond arena of GPU %u (%" PRIu64
				 " bytes)", side[i], off[i], off[i] + q->bytes, g[i],
				 e->opt.arena_bytes[g[i]]);
			return why;
		}
	}
	if (q->src_gpu == q->dst_gpu && q->src_off < q->dst_off + q->bytes &&
	    q->dst_off < q->src_off + q->bytes)
		return "source and destination overlap";
	if (e->opt.n_flags[q->dst_gpu] != 0 && q->flag_index >= e->opt.n_flags[q->dst_gpu]) {
		snprintf(why, n, "flag_index %u >= %u flags of GPU %u", q->flag_index,
			 e->opt.n_flags[q->dst_gpu], q->dst_gpu);
		return why;
	}
	if ((q->flags & DMA_F_SRC_FLAG) && e->opt.n_flags[q->src_gpu] != 0 &&
	    q->src_flag_index >= e->opt.n_flags[q->src_gpu]) {
		snprintf(why, n, "src_flag_index %u >= %u flags of GPU %u", q->src_flag_index,
			 e->opt.n_flags[q->src_gpu], q->src_gpu);
		return why;
	}
	if (dma_chunk_count(q->bytes, e->opt.chunk_bytes, e->opt.chunk_max_bytes) > (uint64_t)INT32_MAX) {
		snprintf(why, n, "more than 2^31 chunks of up to %" PRIu64 " bytes", e->opt.chunk_max_bytes);
		return why;
	}
	return NULL;
}

/* Hands one request of ring `ring` (ticket t) to the backend, or rejects it. */
static void serve(struct dma_engine *e, int ring, uint32_t t, const struct dma_req *q)
{
	const struct dma_backend *be = &e->be;
	const uint64_t first = e->opt.chunk_bytes, max = e->opt.chunk_max_bytes;
	char why[160];
	const char *bad = invalid(e, q, why, sizeof(why));
	uint64_t n, k, off, len;

	if (bad) {
		engine_error(e, "dma: rejected request %u of ring %d: %s (GPU %u +%" PRIu64 " -> GPU %u +%"
			     PRIu64 ", %" PRIu64 " bytes, flag %u = %u)", t, ring, bad, q->src_gpu,
			     q->src_off, q->dst_gpu, q->dst_off, q->bytes, q->flag_index, q->flag_value);
		stat_add(&e->stats.rejected, 1);
		return;
	}
	n = dma_chunk_count(q->bytes, first, max);
	/* Chunk k is [off, off + len): len doubles from `first` up to `max`, the last one is the rest
	 * (the walk below is dma_chunk_start, one step at a time). */
	for (k = 0, off = 0, len = first; k < n; k++) {
		uint64_t this_len = q->bytes - off < len ? q->bytes - off : len;
		uint32_t value = q->flag_value - (uint32_t)(n - 1 - k);

		if (be->copy(be->ctx, (int)q->src_gpu, q->src_off + off, (int)q->dst_gpu, q->dst_off + off,
			     this_len) != 0)
			goto fail;
		off += this_len;
		len = len > max / 2 ? max : 2 * len;
		stat_add(&e->stats.chunks, 1);
		if (be->signal(be->ctx, (int)q->src_gpu, (int)q->dst_gpu, (int)q->dst_gpu, q->flag_index,
			       value) != 0)
			goto fail;
	}
	if ((q->flags & DMA_F_SRC_FLAG) &&
	    be->signal(be->ctx, (int)q->src_gpu, (int)q->dst_gpu, (int)q->src_gpu, q->src_flag_index,
		       q->src_flag_value) != 0)
		goto fail;
	stat_add(&e->stats.requests, 1);
	stat_add(&e->stats.bytes, q->bytes);
	return;
fail:
	engine_error(e, "dma: backend failed on request %u of ring %d, chunk %" PRIu64 " of %" PRIu64
		     " (GPU %u +%" PRIu64 " -> GPU %u +%" PRIu64 ", %" PRIu64 " bytes): %s", t, ring, k,
		     n, q->src_gpu, q->src_off, q->dst_gpu, q->dst_off, q->bytes, dma_last_error());
	stat_add(&e->stats.backend_errors, 1);
}

/* One pass over every ring; returns the number of requests taken. */
static unsigned poll_rings(struct dma_engine *e, uint32_t *tails)
{
	unsigned work = 0;

	for (int g = 0; g < e->n_rings; g++) {
		struct dma_ring *r = &e->rings[g];

		for (int b = 0; b < BATCH; b++) {
			struct dma_req *s = &r->slots[tails[g] & r->mask];
			struct dma_req q;

			if (__atomic_load_n(&s->seq, __ATOMIC_ACQUIRE) != tails[g] + 1)
				break;
			q = *s;
			serve(e, g, tails[g], &q);
			tails[g]++;
			__atomic_store_n(&r->shm->tail, tails[g], __ATOMIC_RELEASE);
			work++;
		}
	}
	return work;
}

static void *dispatcher(void *arg)
{
	struct dma_engine *e = arg;
	uint32_t tails[DMA_MAX_GPUS];
	uint64_t idle_since = 0, empty = 0;
	int backoff = 0;

	for (int g = 0; g < e->n_rings; g++)
		tails[g] = __atomic_load_n(&e->rings[g].shm->tail, __ATOMIC_ACQUIRE);
	for (;;) {
		/* Read stop before the pass: an empty pass after it has seen everything published
		 * before dma_engine_stop was called. */
		int stop = __atomic_load_n(&e->stop, __ATOMIC_ACQUIRE);

		if (!stop && __atomic_load_n(&e->pause_req, __ATOMIC_ACQUIRE)) {
			__atomic_store_n(&e->paused, 1, __ATOMIC_RELEASE);
			sleep_us(e->opt.sleep_us);
			continue;
		}
		if (__atomic_load_n(&e->paused, __ATOMIC_RELAXED))
			__atomic_store_n(&e->paused, 0, __ATOMIC_RELEASE);
		if (poll_rings(e, tails) != 0) {
			empty = 0;
			backoff = 0;
			continue;
		}
		if (stop)
			break;
		stat_add(&e->stats.empty_polls, 1);
		if (empty++ == 0) {
			idle_since = now_us();
			continue;
		}
		if (!backoff && empty % CLOCK_EVERY == 0 && now_us() - idle_since >= e->opt.idle_us)
			backoff = 1;
		if (backoff) {
			stat_add(&e->stats.sleeps, 1);
			sleep_us(e->opt.sleep_us);
		} else
			cpu_relax();
	}
	return NULL;
}

int dma_engine_start(struct dma_engine *e, const struct dma_ring *rings, int n,
		     const struct dma_backend *be, const struct dma_options *opt)
{
	int rc;

	if (n < 1 || n > DMA_MAX_GPUS)
		return dma_error("dma engine: %d rings, expected 1 to %d", n, DMA_MAX_GPUS);
	if (rings == NULL || be == NULL || be->copy == NULL || be->signal == NULL || opt == NULL)
		return dma_error("dma engine: rings, backend (copy and signal) and options are required");
	for (int g = 0; g < n; g++)
		if (rings[g].shm == NULL || rings[g].shm->magic != DMA_RING_MAGIC ||
		    rings[g].capacity != rings[g].shm->capacity)
			return dma_error("dma engine: ring %d is not initialized", g);
	memset(e, 0, sizeof(*e));
	memcpy(e->rings, rings, (size_t)n * sizeof(*rings));
	e->n_rings = n;
	e->be = *be;
	e->opt = *opt;
	if (e->opt.chunk_bytes == 0)
		e->opt.chunk_bytes = DMA_DEFAULT_CHUNK_BYTES;
	if (e->opt.chunk_max_bytes == 0)
		e->opt.chunk_max_bytes = DMA_DEFAULT_CHUNK_MAX_BYTES;
	if (e->opt.chunk_max_bytes < e->opt.chunk_bytes)
		e->opt.chunk_max_bytes = e->opt.chunk_bytes;
	if (e->opt.idle_us == 0)
		e->opt.idle_us = DMA_DEFAULT_IDLE_US;
	if (e->opt.sleep_us == 0)
		e->opt.sleep_us = DMA_DEFAULT_SLEEP_US;
	pthread_mutex_init(&e->err_lock, NULL);
	rc = pthread_create(&e->thread, NULL, dispatcher, e);
	if (rc != 0) {
		pthread_mutex_destroy(&e->err_lock);
		return dma_error("dma engine: cannot create the dispatcher thread: %s", strerror(rc));
	}
	pthread_setname_np(e->thread, "ark-dma");
	e->running = 1;
	return DMA_OK;
}

int dma_engine_stop(struct dma_engine *e, struct dma_stats *st)
{
	if (!e->running)
		return dma_error("dma engine: not running");
	__atomic_store_n(&e->stop, 1, __ATOMIC_RELEASE);
	pthread_join(e->thread, NULL);
	pthread_mutex_destroy(&e->err_lock);
	e->running = 0;
	if (st)
		*st = e->stats;
	return DMA_OK;
}

void dma_engine_stats(struct dma_engine *e, struct dma_stats *st)
{
	st->requests = __atomic_load_n(&e->stats.requests, __ATOMIC_RELAXED);
	st->bytes = __atomic_load_n(&e->stats.bytes, __ATOMIC_RELAXED);
	st->chunks = __atomic_load_n(&e->stats.chunks, __ATOMIC_RELAXED);
	st->rejected = __atomic_load_n(&e->stats.rejected, __ATOMIC_RELAXED);
	st->backend_errors = __atomic_load_n(&e->stats.backend_errors, __ATOMIC_RELAXED);
	st->empty_polls = __atomic_load_n(&e->stats.empty_polls, __ATOMIC_RELAXED);
	st->sleeps = __atomic_load_n(&e->stats.sleeps, __ATOMIC_RELAXED);
}

const char *dma_engine_last_error(struct dma_engine *e)
{
	if (e->running)
		pthread_mutex_lock(&e->err_lock);
	memcpy(e->err_copy, e->err, sizeof(e->err_copy));
	if (e->running)
		pthread_mutex_unlock(&e->err_lock);
	return e->err_copy;
}

void dma_engine_pause(struct dma_engine *e, int pause)
{
	if (!e->running)
		return;
	__atomic_store_n(&e->pause_req, pause != 0, __ATOMIC_RELEASE);
	while (__atomic_load_n(&e->paused, __ATOMIC_ACQUIRE) != (pause != 0))
		sleep_us(10);
}
