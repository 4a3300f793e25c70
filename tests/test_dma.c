/* test_dma.c: the software DMA engine on the CPU: rings, dispatcher and chunking, with a backend that
 * memcpys between malloc'ed "arenas" and writes flags into host arrays. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "dma/dma.h"

#define N_GPUS 2
#define N_FLAGS 16
#define MiB (1024u * 1024u)

/* ---- the test backend ------------------------------------------------------------------------ */
struct sig {
	int flag_gpu;
	uint32_t index, value;
};

struct cpy {
	uint64_t src_off, dst_off, bytes;
};

struct tb {
	uint8_t *arena[N_GPUS];          /* [arena_bytes] */
	uint64_t arena_bytes;
	uint32_t flags[N_GPUS][N_FLAGS];
	uint64_t copies, max_copy, out_of_range;
	/* signal and copy logs (chunking tests) */
	struct sig *log;                 /* [log_cap] */
	size_t log_n, log_cap;
	struct cpy *clog;                /* [clog_cap] */
	size_t clog_n, clog_cap;
	/* order check: flag_index = producer, value = 1, 2, 3, ... per producer */
	int check_order;
	uint32_t last[N_FLAGS];
	uint64_t order_errors;
	int fail_copies;                 /* copy fails while set */
};

static int tb_copy(void *ctx, int src, uint64_t src_off, int dst, uint64_t dst_off, uint64_t bytes)
{
	struct tb *b = ctx;

	if (b->fail_copies)
		return dma_error("injected copy failure");
	if (src_off + bytes > b->arena_bytes || dst_off + bytes > b->arena_bytes) {
		b->out_of_range++;
		return dma_error("out of range");
	}
	memcpy(b->arena[dst] + dst_off, b->arena[src] + src_off, bytes);
	if (b->clog && b->clog_n < b->clog_cap)
		b->clog[b->clog_n++] = (struct cpy){ src_off, dst_off, bytes };
	b->copies++;
	if (bytes > b->max_copy)
		b->max_copy = bytes;
	return 0;
}

static int tb_signal(void *ctx, int src, int dst, int flag_gpu, uint32_t index, uint32_t value)
{
	struct tb *b = ctx;

	if (b->check_order && flag_gpu == dst) {
		if (value != b->last[index] + 1)
			b->order_errors++;
		b->last[index] = value;
	}
	if (b->log && b->log_n < b->log_cap)
		b->log[b->log_n++] = (struct sig){ flag_gpu, index, value };
	__atomic_store_n(&b->flags[flag_gpu][index], value, __ATOMIC_RELEASE);
	return 0;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void fill_random(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(rnd() >> 29);
}

/* ---- fixture: N_GPUS rings, arenas, backend ------------------------------------------------- */
struct fx {
	struct tb b;
	struct dma_backend be;
	struct dma_options opt;
	struct dma_ring rings[N_GPUS];
	void *mem[N_GPUS];
	struct dma_engine e;
};

static struct fx *fx_new(uint32_t capacity, uint64_t arena_bytes)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->b.arena_bytes = arena_bytes;
	for (int g = 0; g < N_GPUS; g++) {
		f->b.arena[g] = malloc(arena_bytes);
		assert_non_null(f->b.arena[g]);
		fill_random(f->b.arena[g], arena_bytes);
		f->mem[g] = aligned_alloc(64, dma_ring_bytes(capacity));
		assert_non_null(f->mem[g]);
		assert_int_equal(dma_ring_init(&f->rings[g], f->mem[g], capacity), DMA_OK);
		f->opt.arena_bytes[g] = arena_bytes;
		f->opt.n_flags[g] = N_FLAGS;
	}
	f->be = (struct dma_backend){ &f->b, tb_copy, tb_signal };
	return f;
}

static void fx_start(struct fx *f)
{
	assert_int_equal(dma_engine_start(&f->e, f->rings, N_GPUS, &f->be, &f->opt), DMA_OK);
}

static void fx_free(struct fx *f)
{
	for (int g = 0; g < N_GPUS; g++) {
		free(f->b.arena[g]);
		free(f->mem[g]);
	}
	free(f->b.log);
	free(f->b.clog);
	free(f);
}

static struct dma_req req(uint32_t src_gpu, uint64_t src_off, uint32_t dst_gpu, uint64_t dst_off,
			  uint64_t bytes, uint32_t flag_index, uint32_t flag_value)
{
	return (struct dma_req){ .src_gpu = src_gpu, .dst_gpu = dst_gpu, .src_off = src_off,
				 .dst_off = dst_off, .bytes = bytes, .flag_index = flag_index,
				 .flag_value = flag_value };
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* Waits up to 10 s for the engine to have rejected n requests. */
static void wait_rejected(struct dma_engine *e, uint64_t n)
{
	struct dma_stats st;

	for (int i = 0; i < 10000; i++) {
		dma_engine_stats(e, &st);
		if (st.rejected + st.backend_errors >= n)
			return;
		sleep_ms(1);
	}
	fail_msg("engine did not reject %llu requests in 10 s", (unsigned long long)n);
}

/* ---- producers on threads ------------------------------------------------------------------- */
struct producer {
	struct dma_ring *ring;
	uint32_t id;                 /* flag index */
	uint32_t n;
	uint32_t src_gpu, dst_gpu;
	uint64_t base;               /* dst_off of request i: base + 8 i, src_off the same */
	uint32_t pushed;             /* requests whose push returned */
	pthread_t thread;
};

static void *produce(void *arg)
{
	struct producer *p = arg;

	for (uint32_t i = 0; i < p->n; i++) {
		struct dma_req q = req(p->src_gpu, p->base + 8ull * i, p->dst_gpu, p->base + 8ull * i, 8,
				       p->id, i + 1);

		dma_ring_push(p->ring, &q);
		__atomic_store_n(&p->pushed, i + 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void start_producers(struct fx *f, struct producer *p, int n, uint32_t per, int spread_rings)
{
	for (int i = 0; i < n; i++) {
		int g = spread_rings ? i % N_GPUS : 0;

		p[i] = (struct producer){ .ring = &f->rings[g], .id = (uint32_t)i, .n = per,
					  .src_gpu = (uint32_t)g, .dst_gpu = (uint32_t)(1 - g),
					  .base = 8ull * per * (uint64_t)i };
		assert_int_equal(pthread_create(&p[i].thread, NULL, produce, &p[i]), 0);
	}
}

static void join_producers(struct producer *p, int n)
{
	for (int i = 0; i < n; i++)
		pthread_join(p[i].thread, NULL);
}

/* Every request of every producer arrived exactly once, in order, with its data. */
static void check_producers(struct fx *f, const struct producer *p, int n)
{
	assert_int_equal(f->b.order_errors, 0);
	assert_int_equal(f->b.out_of_range, 0);
	for (int i = 0; i < n; i++) {
		assert_int_equal(f->b.last[p[i].id], p[i].n);
		assert_int_equal(f->b.flags[p[i].dst_gpu][p[i].id], p[i].n);
		assert_memory_equal(f->b.arena[p[i].dst_gpu] + p[i].base,
				    f->b.arena[p[i].src_gpu] + p[i].base, 8ull * p[i].n);
	}
}

/* ---- tests ---------------------------------------------------------------------------------- */
static void test_ring_layout(void **state)
{
	struct dma_ring r, a;
	void *mem = aligned_alloc(64, dma_ring_bytes(16));

	assert_int_equal(dma_ring_bytes(0), 0);
	assert_int_equal(dma_ring_bytes(12), 0);
	assert_int_equal(dma_ring_bytes(DMA_RING_MAX_CAPACITY * 2), 0);
	assert_int_equal(dma_ring_bytes(16), DMA_RING_HDR_BYTES + 16 * 64);
	assert_int_equal(dma_ring_init(&r, (char *)mem + 8, 8), DMA_ERR);
	assert_non_null(strstr(dma_last_error(), "aligned"));
	assert_int_equal(dma_ring_init(&r, mem, 12), DMA_ERR);
	assert_non_null(strstr(dma_last_error(), "power of two"));
	memset(mem, 0x5a, dma_ring_bytes(16));
	assert_int_equal(dma_ring_attach(&a, mem), DMA_ERR);
	assert_int_equal(dma_ring_init(&r, mem, 16), DMA_OK);
	assert_int_equal(dma_ring_attach(&a, mem), DMA_OK);
	assert_int_equal(a.capacity, 16);
	assert_ptr_equal(a.slots, (char *)mem + DMA_RING_HDR_BYTES);
	assert_int_equal(offsetof(struct dma_ring_shm, tail), 64);
	/* No slot looks valid for any ticket of the first lap. */
	for (uint32_t i = 0; i < 16; i++)
		assert_int_not_equal(r.slots[i].seq, i + 1);
	assert_int_equal(dma_ring_pending(&r), 0);
	free(mem);
}

static void test_wraparound(void **state)
{
	struct fx *f = fx_new(8, 64 * 100);

	f->b.check_order = 1;
	fx_start(f);
	for (uint32_t i = 0; i < 100; i++) {
		struct dma_req q = req(0, 64ull * i, 1, 64ull * i, 64, 5, i + 1);

		assert_int_equal(dma_ring_push(&f->rings[0], &q), DMA_OK);
	}
	struct dma_stats st;
	assert_int_equal(dma_engine_stop(&f->e, &st), DMA_OK);
	assert_int_equal(st.requests, 100);
	assert_int_equal(st.chunks, 100);
	assert_int_equal(st.bytes, 6400);
	assert_int_equal(st.rejected, 0);
	assert_int_equal(f->e.failed, 0);
	assert_int_equal(dma_ring_consumed(&f->rings[0]), 100);
	assert_int_equal(dma_ring_pending(&f->rings[0]), 0);
	assert_int_equal(f->b.order_errors, 0);
	assert_int_equal(f->b.flags[1][5], 100);
	assert_memory_equal(f->b.arena[1], f->b.arena[0], 6400);
	fx_free(f);
}

/* Tickets are 32-bit: crossing 2^32 must neither lose nor replay a request, and the slot of ticket
 * 0xffffffff (seq 0) must not look valid before it is written. */
static void test_ticket_wrap(void **state)
{
	struct fx *f = fx_new(16, 8 * 1000);
	struct dma_stats st;
	uint32_t i;

	assert_int_equal(dma_ring_init_at(&f->rings[1], f->mem[1], 16, 0xfffffff8u), DMA_OK);
	f->b.check_order = 1;
	/* Tickets 0xfffffff8 .. 0xfffffffe published; 0xffffffff not yet. */
	for (i = 0; i < 7; i++) {
		struct dma_req q = req(1, 8ull * i, 0, 8ull * i, 8, 2, i + 1);

		assert_int_equal(dma_ring_try_push(&f->rings[1], &q), DMA_OK);
	}
	fx_start(f);
	assert_int_equal(dma_engine_stop(&f->e, &st), DMA_OK);
	assert_int_equal(st.requests, 7);
	assert_int_equal(st.rejected, 0);
	assert_int_equal(dma_ring_consumed(&f->rings[1]), 0xffffffffu);
	fx_start(f);
	for (; i < 1000; i++) {
		struct dma_req q = req(1, 8ull * i, 0, 8ull * i, 8, 2, i + 1);

		assert_int_equal(dma_ring_push(&f->rings[1], &q), DMA_OK);
	}
	assert_int_equal(dma_engine_stop(&f->e, &st), DMA_OK);
	assert_int_equal(st.requests, 1000 - 7);
	assert_int_equal(st.rejected, 0);
	assert_int_equal(f->b.order_errors, 0);
	assert_int_equal(f->b.flags[0][2], 1000);
	assert_int_equal(dma_ring_consumed(&f->rings[1]), 0xfffffff8u + 1000);
	assert_memory_equal(f->b.arena[0], f->b.arena[1], 8000);
	fx_free(f);
}

static void test_try_push_full(void **state)
{
	struct fx *f = fx_new(8, 4096);
	struct dma_req q;

	f->b.check_order = 1;
	for (uint32_t i = 0; i < 8; i++) {
		q = req(0, 8ull * i, 1, 8ull * i, 8, 1, i + 1);
		assert_int_equal(dma_ring_try_push(&f->rings[0], &q), DMA_OK);
	}
	q = req(0, 0, 1, 0, 8, 1, 99);
	assert_int_equal(dma_ring_try_push(&f->rings[0], &q), DMA_FULL);
	assert_int_equal(dma_ring_pending(&f->rings[0]), 8);
	/* Nothing was overwritten by the refused push. */
	for (uint32_t i = 0; i < 8; i++) {
		assert_int_equal(f->rings[0].slots[i].seq, i + 1);
		assert_int_equal(f->rings[0].slots[i].flag_value, i + 1);
	}
	fx_start(f);
	struct dma_stats st;
	assert_int_equal(dma_engine_stop(&f->e, &st), DMA_OK);
	assert_int_equal(st.requests, 8);
	assert_int_equal(f->b.flags[1][1], 8);
	assert_int_equal(f->b.order_errors, 0);
	assert_memory_equal(f->b.arena[1], f->b.arena[0], 64);
	q = req(0, 64, 1, 64, 8, 1, 9);
	assert_int_equal(dma_ring_try_push(&f->rings[0], &q), DMA_OK);
	assert_int_equal(dma_ring_pending(&f->rings[0]), 1);
	fx_free(f);
}

static void test_backpressure_blocks(void **state)
{
	struct fx *f = fx_new(8, 4096);
	struct producer p[1];

	f->b.check_order = 1;
	fx_start(f);
	dma_engine_pause(&f->e, 1);
	start_producers(f, p, 1, 20, 0);
	for (int i = 0; i < 10000 && __atomic_load_n(&p[0].pushed, __ATOMIC_ACQUIRE) < 8; i++)
		sleep_ms(1);
	sleep_ms(50);
	/* The ring holds 8; the producer waits on the 9th and has overwritten nothing. */
	assert_int_equal(__atomic_load_n(&p[0].pushed, __ATOMIC_ACQUIRE), 8);
	assert_int_equal(f->b.copies, 0);
	for (uint32_t i = 0; i < 8; i++)
		assert_int_equal(f->rings[0].slots[i].flag_value, i + 1);
	dma_engine_pause(&f->e, 0);
	join_producers(p, 1);
	struct dma_stats st;
	assert_int_equal(dma_engine_stop(&f->e, &st), DMA_OK);
	assert_int_equal(st.requests, 20);
	check_producers(f, p, 1);
	fx_free(f);
}

static void test_stop_drains(void **state)
{
	struct fx *f = fx_new(8, 4096);

	fx_start(f);
	dma_engine_pause(&f->e, 1);
	for (uint32_t i = 0; i < 5; i++) {
		struct dma_req q = req(1, 16ull * i, 0, 16ull * i, 16, 3, 10 + i);

		assert_int_equal(dma_ring_push(&f->rings[1], &q), DMA_OK);
	}
	assert_int_equal(f->b.copies, 0);
	struct dma_stats st;
	assert_int_equal(dma_engine_stop(&f->e, &st), DMA_OK);
	assert_int_equal(st.requests, 5);
	assert_int_equal(f->b.flags[0][3], 14);
	assert_memory_equal(f->b.arena[0], f->b.arena[1], 80);
	assert_int_equal(dma_engine_stop(&f->e, &st), DMA_ERR);
	fx_free(f);
}

static void test_many_producers_order(void **state)
{
	enum { NP = 4, PER = 10000 };
	struct fx *f = fx_new(64, 8ull * NP * PER);
	struct producer p[NP];

	f->b.check_order = 1;
	fx_start(f);
	start_producers(f, p, NP, PER, 0);
	join_producers(p, NP);
	struct dma_stats st;
	assert_int_equal(dma_engine_stop(&f->e, &st), DMA_OK);
	assert_int_equal(st.requests, NP * PER);
	assert_int_equal(st.rejected, 0);
	assert_int_equal(dma_ring_consumed(&f->rings[0]), NP * PER);
	check_producers(f, p, NP);
	fx_free(f);
}

static void test_million(void **state)
{
	enum { NP = 4, PER = 250000 };
	struct fx *f = fx_new(256, 8ull * NP * PER);
	struct producer p[NP];

	f->b.check_order = 1;
	fx_start(f);
	start_producers(f, p, NP, PER, 1);
	join_producers(p, NP);
	struct dma_stats st;
	assert_int_equal(dma_engine_stop(&f->e, &st), DMA_OK);
	assert_int_equal(st.requests, NP * PER);
	assert_int_equal(st.chunks, NP * PER);
	assert_int_equal(st.bytes, 8ull * NP * PER);
	assert_int_equal(dma_ring_consumed(&f->rings[0]) + dma_ring_consumed(&f->rings[1]), NP * PER);
	check_producers(f, p, NP);
	fx_free(f);
}

static void test_start_stop_under_load(void **state)
{
	enum { NP = 4, PER = 50000 };
	struct fx *f = fx_new(32, 8ull * NP * PER);
	struct producer p[NP];
	struct dma_stats st;
	uint64_t total = 0;

	f->b.check_order = 1;
	fx_start(f);
	start_producers(f, p, NP, PER, 1);
	for (int round = 0; round < 6; round++) {
		sleep_ms(3);
		assert_int_equal(dma_engine_stop(&f->e, &st), DMA_OK);
		total += st.requests;
		/* Stopped: nothing is consumed any more, while producers may still push. */
		uint32_t c0 = dma_ring_consumed(&f->rings[0]), c1 = dma_ring_consumed(&f->rings[1]);
		uint64_t copies = f->b.copies;
		sleep_ms(5);
		assert_int_equal(dma_ring_consumed(&f->rings[0]), c0);
		assert_int_equal(dma_ring_consumed(&f->rings[1]), c1);
		assert_int_equal(f->b.copies, copies);
		fx_start(f);
	}
	join_producers(p, NP);
	assert_int_equal(dma_engine_stop(&f->e, &st), DMA_OK);
	total += st.requests;
	assert_int_equal(total, NP * PER);
	check_producers(f, p, NP);
	fx_free(f);
}

struct bad_case {
	struct dma_req q;
	const char *msg;
};

static void test_bad_requests(void **state)
{
	const uint64_t A = 64 * 1024;
	struct fx *f = fx_new(8, A);
	const struct bad_case cases[] = {
		{ req(0, 0, 1, 1024, 0, 0, 1), "bytes == 0" },
		{ req(0, 0, 9, 1024, 64, 0, 1), "dst_gpu 9 >= n_gpus 2" },
		{ req(7, 0, 1, 1024, 64, 0, 1), "src_gpu 7 >= n_gpus 2" },
		{ req(0, 0, 1, A - 32, 64, 0, 1), "dst range [65504, 65568) beyond arena of GPU 1" },
		{ req(0, A, 1, 1024, 64, 0, 1), "src range" },
		{ req(0, UINT64_MAX - 10, 1, 1024, 64, 0, 1), "src_off + bytes overflows" },
		{ req(0, 0, 1, UINT64_MAX - 63, 64, 0, 1), "dst_off + bytes overflows" },
		{ req(0, 1, 1, 1024, UINT64_MAX, 0, 1), "src_off + bytes overflows" },
		{ req(1, 1000, 1, 1024, 64, 0, 1), "overlap" },
		{ req(0, 0, 1, 1024, 64, N_FLAGS, 1), "flag_index 16 >= 16 flags of GPU 1" },
		{ { .src_gpu = 0, .dst_gpu = 1, .bytes = 64, .dst_off = 1024, .flags = 0x80 },
		  "unknown flags 0x80" },
		{ { .src_gpu = 0, .dst_gpu = 1, .bytes = 64, .dst_off = 1024, .flags = DMA_F_SRC_FLAG,
		    .src_flag_index = 99 }, "src_flag_index 99" },
	};
	const int nc = (int)(sizeof(cases) / sizeof(cases[0]));
	uint8_t *before = malloc(A);

	memcpy(before, f->b.arena[1], A);
	fx_start(f);
	for (int i = 0; i < nc; i++) {
		assert_int_equal(dma_ring_push(&f->rings[0], &cases[i].q), DMA_OK);
		wait_rejected(&f->e, (uint64_t)i + 1);
		const char *msg = dma_engine_last_error(&f->e);
		if (strstr(msg, cases[i].msg) == NULL)
			fail_msg("case %d: error '%s' lacks '%s'", i, msg, cases[i].msg);
		assert_non_null(strstr(msg, "rejected"));
		assert_int_equal(__atomic_load_n(&f->e.failed, __ATOMIC_ACQUIRE), 1);
	}
	/* Nothing was copied or signalled, and the engine goes on with good requests. */
	assert_int_equal(f->b.copies, 0);
	assert_memory_equal(f->b.arena[1], before, A);
	struct dma_req good = req(0, 4096, 1, 8192, 256, 4, 77);
	assert_int_equal(dma_ring_push(&f->rings[0], &good), DMA_OK);
	struct dma_stats st;
	assert_int_equal(dma_engine_stop(&f->e, &st), DMA_OK);
	assert_int_equal(st.rejected, nc);
	assert_int_equal(st.requests, 1);
	assert_int_equal(f->b.flags[1][0], 0);
	assert_int_equal(f->b.flags[1][4], 77);
	assert_memory_equal(f->b.arena[1] + 8192, f->b.arena[0] + 4096, 256);
	assert_memory_equal(f->b.arena[1], before, 8192);
	/* A restart clears the error state. */
	fx_start(f);
	assert_int_equal(f->e.failed, 0);
	assert_string_equal(dma_engine_last_error(&f->e), "");
	assert_int_equal(dma_engine_stop(&f->e, NULL), DMA_OK);
	free(before);
	fx_free(f);
}

static void test_backend_failure(void **state)
{
	struct fx *f = fx_new(8, 4096);
	struct dma_req q = req(0, 0, 1, 0, 64, 2, 5);
	struct dma_stats st;

	f->b.fail_copies = 1;
	fx_start(f);
	assert_int_equal(dma_ring_push(&f->rings[0], &q), DMA_OK);
	wait_rejected(&f->e, 1);
	assert_non_null(strstr(dma_engine_last_error(&f->e), "injected copy failure"));
	assert_int_equal(__atomic_load_n(&f->e.failed, __ATOMIC_ACQUIRE), 1);
	f->b.fail_copies = 0;
	q.flag_value = 6;
	assert_int_equal(dma_ring_push(&f->rings[0], &q), DMA_OK);
	assert_int_equal(dma_engine_stop(&f->e, &st), DMA_OK);
	assert_int_equal(st.backend_errors, 1);
	assert_int_equal(st.requests, 1);
	assert_int_equal(f->b.flags[1][2], 6);
	assert_memory_equal(f->b.arena[1], f->b.arena[0], 64);
	fx_free(f);
}

/* After idle_us without work the dispatcher sleeps between polls instead of spinning, and still
 * serves the next request. */
static void test_idle_backoff(void **state)
{
	struct fx *f = fx_new(8, 4096);
	struct dma_req q = req(0, 0, 1, 0, 64, 1, 31);
	struct dma_stats s0, s1, st;

	f->opt.idle_us = 2000;
	fx_start(f);
	sleep_ms(50);
	dma_engine_stats(&f->e, &s0);
	sleep_ms(200);
	dma_engine_stats(&f->e, &s1);
	/* Past idle_us every empty poll is followed by a sleep (one may be in progress). */
	assert_true(s1.sleeps > s0.sleeps);
	assert_true(s1.empty_polls - s0.empty_polls <= s1.sleeps - s0.sleeps + 1);
	assert_int_equal(dma_ring_push(&f->rings[0], &q), DMA_OK);
	for (int i = 0; i < 10000 && __atomic_load_n(&f->b.flags[1][1], __ATOMIC_ACQUIRE) != 31; i++)
		sleep_ms(1);
	assert_int_equal(__atomic_load_n(&f->b.flags[1][1], __ATOMIC_ACQUIRE), 31);
	assert_int_equal(dma_engine_stop(&f->e, &st), DMA_OK);
	assert_int_equal(st.requests, 1);
	assert_memory_equal(f->b.arena[1], f->b.arena[0], 64);
	/* Busy-polled before backing off: at least one clock check's worth of empty polls. */
	assert_true(st.empty_polls > st.sleeps + 64);
	fx_free(f);
}

/* Sizes of the chunks of a request of `bytes`, from the schedule; returns how many (<= cap). */
static uint64_t schedule_of(uint64_t bytes, uint64_t first, uint64_t max, uint64_t *len, uint64_t cap)
{
	uint64_t n = dma_chunk_count(bytes, first, max);

	assert_true(n <= cap);
	for (uint64_t k = 0; k < n; k++) {
		uint64_t a = dma_chunk_start(k, first, max), b = dma_chunk_start(k + 1, first, max);
		len[k] = (b < bytes ? b : bytes) - a;
	}
	return n;
}

/* One large request cut by the dispatcher: every copy is the scheduled chunk (offsets and sizes,
 * in order), data intact, the flag raised once per chunk, increasing, then the sender's flag.
 * first_opt, max_opt: dma_options (0: defaults); first, max: what they mean. */
static void check_chunked(uint64_t bytes, uint32_t flag_value, uint64_t first_opt, uint64_t max_opt,
			  uint64_t first, uint64_t max)
{
	const uint64_t src_off = 4096 + 3, dst_off = 65536 + 5;
	struct fx *f = fx_new(8, 40 * MiB + 128 * 1024);
	uint64_t len[64];
	uint64_t n = schedule_of(bytes, first, max, len, 64), largest = 0;
	struct dma_req q = req(0, src_off, 1, dst_off, bytes, 7, flag_value);
	uint8_t guard[64];

	q.flags = DMA_F_SRC_FLAG;
	q.src_flag_index = 9;
	q.src_flag_value = 4242;
	f->opt.chunk_bytes = first_opt;
	f->opt.chunk_max_bytes = max_opt;
	f->b.log_cap = 80;
	f->b.log = calloc(f->b.log_cap, sizeof(*f->b.log));
	f->b.clog_cap = 80;
	f->b.clog = calloc(f->b.clog_cap, sizeof(*f->b.clog));
	memcpy(guard, f->b.arena[1] + dst_off + bytes, sizeof(guard));
	fx_start(f);
	assert_int_equal(dma_ring_push(&f->rings[0], &q), DMA_OK);
	struct dma_stats st;
	assert_int_equal(dma_engine_stop(&f->e, &st), DMA_OK);
	assert_int_equal(st.requests, 1);
	assert_int_equal(st.chunks, n);
	assert_int_equal(st.bytes, bytes);
	assert_int_equal(f->b.copies, n);
	assert_int_equal(f->b.clog_n, n);
	for (uint64_t k = 0, off = 0; k < n; k++) {
		assert_int_equal(f->b.clog[k].src_off, src_off + off);
		assert_int_equal(f->b.clog[k].dst_off, dst_off + off);
		assert_int_equal(f->b.clog[k].bytes, len[k]);
		off += len[k];
		if (len[k] > largest)
			largest = len[k];
	}
	assert_int_equal(f->b.max_copy, largest);
	assert_true(largest <= max);
	assert_memory_equal(f->b.arena[1] + dst_off, f->b.arena[0] + src_off, bytes);
	assert_memory_equal(f->b.arena[1] + dst_off + bytes, guard, sizeof(guard));
	/* n receiver signals flag_value - (n-1) ... flag_value, then the sender's flag. */
	assert_int_equal(f->b.log_n, n + 1);
	for (uint64_t k = 0; k < n; k++) {
		assert_int_equal(f->b.log[k].flag_gpu, 1);
		assert_int_equal(f->b.log[k].index, 7);
		assert_int_equal(f->b.log[k].value, (uint32_t)(flag_value - (n - 1 - k)));
		if (k > 0)
			assert_int_equal((uint32_t)(f->b.log[k].value - f->b.log[k - 1].value), 1);
	}
	assert_int_equal(f->b.flags[1][7], flag_value);
	assert_int_equal(f->b.log[n].flag_gpu, 0);
	assert_int_equal(f->b.log[n].index, 9);
	assert_int_equal(f->b.flags[0][9], 4242);
	fx_free(f);
}

static void test_chunking(void **state)
{
	/* fixed chunks (first == max): the old behaviour */
	check_chunked(10 * MiB, 1000, MiB, MiB, MiB, MiB);          /* exact multiple: 10 chunks */
	check_chunked(10 * MiB + 12345, 3, MiB, MiB, MiB, MiB);     /* 11 chunks, flag values wrap */
	check_chunked(777, 1, MiB, MiB, MiB, MiB);                  /* one chunk */
	/* growing chunks, defaults: 1, 2, 4, 8, 16, 1 MiB + 12345 */
	check_chunked(32 * MiB + 12345, 1011, 0, 0, MiB, 16 * MiB);
	/* max below first is raised to first */
	check_chunked(5 * MiB, 20, 2 * MiB, MiB, 2 * MiB, 2 * MiB);
	/* small first chunk, odd sizes: 1000, 2000, ..., 512000, 1024000, 1 MiB, 1 MiB, rest */
	check_chunked(3 * MiB + 1, 77, 1000, MiB, 1000, MiB);
	/* a request of exactly the doubling phase: 1 + 2 + 4 MiB */
	check_chunked(7 * MiB, 5, MiB, 4 * MiB, MiB, 4 * MiB);
}

/* The device producer state starts at the ring's head and tail, with its capacity. */
static void test_dev_prod_init(void **state)
{
	void *mem = aligned_alloc(64, dma_ring_bytes(16));
	struct dma_ring r;
	struct dma_dev_prod p;

	assert_non_null(mem);
	assert_int_equal(dma_ring_init_at(&r, mem, 16, 0xfffffff3u), DMA_OK);
	memset(&p, 0xab, sizeof(p));
	dma_dev_prod_init(&p, &r);
	assert_int_equal(p.ticket, 0xfffffff3u);
	assert_int_equal(p.tail, 0xfffffff3u);
	assert_int_equal(p.capacity, 16);
	assert_int_equal(p.pad0[5], 0);
	assert_int_equal(offsetof(struct dma_dev_prod, tail), 128);
	free(mem);
}

/* The schedule itself: sizes, boundaries, chunk_of against the ends, 64-bit sizes. */
static void check_schedule(uint64_t bytes, uint64_t first, uint64_t max)
{
	uint64_t n = dma_chunk_count(bytes, first, max), sum = 0, len = first;

	assert_int_equal(dma_chunk_start(0, first, max), 0);
	for (uint64_t k = 0; k < n && k < 200; k++) {
		uint64_t a = dma_chunk_start(k, first, max), b = dma_chunk_start(k + 1, first, max);
		uint64_t end = b < bytes ? b : bytes;

		assert_true(a < bytes);
		/* full chunks double up to max; only the last may be shorter (or end past 2^64) */
		if (b != UINT64_MAX)
			assert_int_equal(b - a, len);
		if (k + 1 < n)
			assert_true(b < bytes);
		else
			assert_true(b >= bytes);
		assert_int_equal(dma_chunk_of(a, first, max), k);
		assert_int_equal(dma_chunk_of(end - 1, first, max), k);
		if (end - a > 2)
			assert_int_equal(dma_chunk_of(a + (end - a) / 2, first, max), k);
		sum += end - a;
		len = len > max / 2 ? max : 2 * len;
	}
	if (n <= 200)
		assert_int_equal(sum, bytes);
	assert_int_equal(dma_chunk_of(bytes - 1, first, max), n - 1);
	assert_int_equal(dma_chunk_count(bytes, first, max), dma_chunk_of(bytes - 1, first, max) + 1);
}

static void test_schedule(void **state)
{
	const uint64_t GiB = 1024ull * MiB;

	/* the example of dma.h: 64 MiB = 1, 2, 4, 8, 16, 16, 16, 1 MiB */
	static const uint64_t ex[] = { 1, 2, 4, 8, 16, 16, 16, 1 };
	uint64_t len[16];
	assert_int_equal(schedule_of(64 * MiB, MiB, 16 * MiB, len, 16), 8);
	for (int k = 0; k < 8; k++)
		assert_int_equal(len[k], ex[k] * MiB);
	assert_int_equal(dma_chunk_count(0, MiB, 16 * MiB), 0);
	assert_int_equal(dma_chunk_count(1, MiB, 16 * MiB), 1);
	assert_int_equal(dma_chunk_count(MiB, MiB, 16 * MiB), 1);
	assert_int_equal(dma_chunk_count(MiB + 1, MiB, 16 * MiB), 2);
	assert_int_equal(dma_chunk_count(3 * MiB, MiB, 16 * MiB), 2);
	assert_int_equal(dma_chunk_count(31 * MiB, MiB, 16 * MiB), 5);
	assert_int_equal(dma_chunk_count(31 * MiB + 1, MiB, 16 * MiB), 6);
	assert_int_equal(dma_chunk_of(0, MiB, 16 * MiB), 0);
	assert_int_equal(dma_chunk_of(MiB - 1, MiB, 16 * MiB), 0);
	assert_int_equal(dma_chunk_of(MiB, MiB, 16 * MiB), 1);
	assert_int_equal(dma_chunk_of(3 * MiB, MiB, 16 * MiB), 2);
	assert_int_equal(dma_chunk_of(47 * MiB - 1, MiB, 16 * MiB), 5);
	assert_int_equal(dma_chunk_of(47 * MiB, MiB, 16 * MiB), 6);
	assert_int_equal(dma_chunk_start(5, MiB, 16 * MiB), 31 * MiB);
	assert_int_equal(dma_chunk_start(7, MiB, 16 * MiB), 63 * MiB);
	/* first == max: fixed chunks, ceil(bytes / chunk) */
	for (uint64_t b = 1; b < 5 * MiB; b += 99991)
		assert_int_equal(dma_chunk_count(b, MiB, MiB), (b + MiB - 1) / MiB);
	assert_int_equal(dma_chunk_of(10 * MiB + 7, MiB, MiB), 10);
	/* 64-bit sizes */
	assert_int_equal(dma_chunk_count(8 * GiB, MiB, 16 * MiB), 4 + (8 * GiB - 15 * MiB + 16 * MiB - 1) / (16 * MiB));
	assert_int_equal(dma_chunk_count(UINT64_MAX, MiB, 16 * MiB), 4 + (UINT64_MAX - 15 * MiB) / (16 * MiB) + 1);
	assert_int_equal(dma_chunk_count(UINT64_MAX, 1, 1), UINT64_MAX);
	assert_int_equal(dma_chunk_of(UINT64_MAX - 1, 1ull << 62, 1ull << 63), 2);
	assert_int_equal(dma_chunk_start(3, 1ull << 62, 1ull << 63), UINT64_MAX); /* saturates */
	assert_int_equal(dma_chunk_start(UINT64_MAX, 1, 16), UINT64_MAX);
	assert_int_equal(dma_chunk_count(UINT64_MAX, 3, UINT64_MAX), 63);
	check_schedule(64 * MiB, MiB, 16 * MiB);
	check_schedule(64 * MiB + 1, MiB, 16 * MiB);
	check_schedule(777, MiB, 16 * MiB);
	check_schedule(10 * MiB + 12345, MiB, MiB);
	check_schedule(12345678, 1000, 100000);
	check_schedule(12345678, 1000, 1001);
	check_schedule(12345678, 3, 3);
	check_schedule(5 * GiB + 3, MiB, 16 * MiB);
	check_schedule(5 * GiB + 3, 7, 3 * GiB);
	check_schedule(UINT64_MAX, 1ull << 40, 1ull << 58);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_layout),
		cmocka_unit_test(test_wraparound),
		cmocka_unit_test(test_ticket_wrap),
		cmocka_unit_test(test_try_push_full),
		cmocka_unit_test(test_backpressure_blocks),
		cmocka_unit_test(test_stop_drains),
		cmocka_unit_test(test_many_producers_order),
		cmocka_unit_test(test_million),
		cmocka_unit_test(test_start_stop_under_load),
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_backend_failure),
		cmocka_unit_test(test_idle_backoff),
		cmocka_unit_test(test_schedule),
		cmocka_unit_test(test_dev_prod_init),
		cmocka_unit_test(test_chunking),
	};

	/* A lost request shows up as a hang: let the alarm turn it into a failure. */
	alarm(300);
	cmocka_set_message_output(CM_OUTPUT_TAP);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
