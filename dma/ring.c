/* ring.c: the DMA request ring (layout, CPU-side producers) and the module's error message. */
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dma.h"

/* Spins of a blocked producer before it starts yielding the CPU. */
#define PUSH_SPINS_BEFORE_YIELD 256

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield" ::: "memory")
#else
#define cpu_relax() __asm__ __volatile__("" ::: "memory")
#endif

static _Thread_local char err_msg[256];

const char *dma_last_error(void)
{
	return err_msg;
}

int dma_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err_msg, sizeof(err_msg), fmt, ap);
	va_end(ap);
	return DMA_ERR;
}

size_t dma_ring_bytes(uint32_t capacity)
{
	if (capacity == 0 || capacity > DMA_RING_MAX_CAPACITY || (capacity & (capacity - 1)) != 0)
		return 0;
	return DMA_RING_HDR_BYTES + (size_t)capacity * sizeof(struct dma_req);
}

int dma_ring_init_at(struct dma_ring *r, void *mem, uint32_t capacity, uint32_t first_ticket)
{
	struct dma_ring_shm *shm = mem;
	struct dma_req *slots;

	if (dma_ring_bytes(capacity) == 0)
		return dma_error("dma ring: capacity %u is not a power of two in [1, %u]", capacity,
				 DMA_RING_MAX_CAPACITY);
	if (mem == NULL || ((uintptr_t)mem & 63) != 0)
		return dma_error("dma ring: memory %p is not 64-byte aligned", mem);
	memset(shm, 0, sizeof(*shm));
	slots = dma_ring_slots(shm);
	memset(slots, 0, (size_t)capacity * sizeof(*slots));
	/* Slot i last held ticket first_ticket + i - capacity (lap -1, consumed): its seq is that + 1,
	 * which is never the seq of a ticket of the current lap. */
	for (uint32_t i = 0; i < capacity; i++) {
		uint32_t t = first_ticket + i;
		slots[t & (capacity - 1)].seq = t - capacity + 1;
	}
	shm->head = first_ticket;
	shm->tail = first_ticket;
	shm->magic = DMA_RING_MAGIC;
	shm->capacity = capacity;
	shm->mask = capacity - 1;
	r->shm = shm;
	r->slots = slots;
	r->capacity = capacity;
	r->mask = capacity - 1;
	return DMA_OK;
}

int dma_ring_init(struct dma_ring *r, void *mem, uint32_t capacity)
{
	return dma_ring_init_at(r, mem, capacity, 0);
}

int dma_ring_attach(struct dma_ring *r, void *mem)
{
	struct dma_ring_shm *shm = mem;

	if (mem == NULL || ((uintptr_t)mem & 63) != 0)
		return dma_error("dma ring: memory %p is not 64-byte aligned", mem);
	if (shm->magic != DMA_RING_MAGIC || dma_ring_bytes(shm->capacity) == 0 ||
	    shm->mask != shm->capacity - 1)
		return dma_error("dma ring: %p holds no ring (magic 0x%08x, capacity %u)", mem, shm->magic,
				 shm->capacity);
	r->shm = shm;
	r->slots = dma_ring_slots(shm);
	r->capacity = shm->capacity;
	r->mask = shm->mask;
	return DMA_OK;
}

/* Fills the slot of ticket t (reserved, and free: t - tail < capacity) and publishes it. */
static void publish(struct dma_ring *r, uint32_t t, const struct dma_req *req)
{
	struct dma_req *s = &r->slots[t & r->mask];

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
	__atomic_store_n(&s->seq, t + 1, __ATOMIC_RELEASE);
}

static int room_for(const struct dma_ring *r, uint32_t t)
{
	uint32_t tail = __atomic_load_n(&r->shm->tail, __ATOMIC_ACQUIRE);

	return (int32_t)(t - tail) < (int32_t)r->capacity;
}

int dma_ring_push(struct dma_ring *r, const struct dma_req *req)
{
	uint32_t t = __atomic_fetch_add(&r->shm->head, 1, __ATOMIC_RELAXED);
	unsigned spins = 0;

	while (!room_for(r, t)) {
		if (++spins >= PUSH_SPINS_BEFORE_YIELD)
			sched_yield();
		else
			cpu_relax();
	}
	publish(r, t, req);
	return DMA_OK;
}

int dma_ring_try_push(struct dma_ring *r, const struct dma_req *req)
{
	uint32_t t = __atomic_load_n(&r->shm->head, __ATOMIC_RELAXED);

	do {
		if (!room_for(r, t))
			return DMA_FULL;
	} while (!__atomic_compare_exchange_n(&r->shm->head, &t, t + 1, 1, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	publish(r, t, req);
	return DMA_OK;
}

void dma_dev_prod_init(struct dma_dev_prod *p, const struct dma_ring *r)
{
	memset(p, 0, sizeof(*p));
	p->ticket = __atomic_load_n(&r->shm->head, __ATOMIC_RELAXED);
	p->tail = __atomic_load_n(&r->shm->tail, __ATOMIC_ACQUIRE);
	p->capacity = r->capacity;
}

uint32_t dma_ring_pending(const struct dma_ring *r)
{
	uint32_t tail = __atomic_load_n(&r->shm->tail, __ATOMIC_ACQUIRE);

	return __atomic_load_n(&r->shm->head, __ATOMIC_RELAXED) - tail;
}

uint32_t dma_ring_consumed(const struct dma_ring *r)
{
	return __atomic_load_n(&r->shm->tail, __ATOMIC_ACQUIRE);
}
