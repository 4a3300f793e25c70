/* ark_loop.cuh: the persistent loop kernel: one CTA per SM walks its task list every iteration,
 * waiting on and signalling monotonic counters; the host drives it through the doorbell
 * (ark_proto.h). Included by generated files after ark_tiles.cuh, with ARK_THREADS, ARK_SMEM_BYTES
 * and ARK_SMS defined; ARK_DEFINE_LOOP() then defines ark_loop_kernel and ark_launch. */
#ifndef ARK_LOOP_CUH
#define ARK_LOOP_CUH

#include <stdint.h>
#include <cuda_runtime.h>

#include "ark_task.h"
#include "ark_proto.h"
#include "ark_model.h"
#include "ark_memorder.cuh"
#include "dma_device.cuh"

#if !defined(ARK_THREADS) || !defined(ARK_SMEM_BYTES) || !defined(ARK_SMS)
#error "define ARK_THREADS, ARK_SMEM_BYTES and ARK_SMS before including ark_loop.cuh"
#endif

#define ARK_ABORT_EVERY 4096 /* spins between two reads of bell->abort (a system-memory read) */
#define ARK_STAGED_WAITS 4 /* waits of a task staged in shared memory; more are read from the table */
#define ARK_SIGNALLER (ARK_THREADS - 32) /* the thread that signals: lane 0 of the last warp */
static_assert(ARK_THREADS >= 64, "the loop kernel signals from a warp other than the first");
#define ARK_SUBMIT_ABORT_EVERY 64 /* SM 0's submit polls already read system memory */

extern __shared__ __align__(128) char ark_smem[];

/* ---- test builds only --------------------------------------------------------------------------
 * ARK_JITTER (nvcc -DARK_JITTER, optionally -DARK_JITTER_NS=N, default 2000): every thread sleeps a
 * pseudo-random 0..N ns before each tile, and the signaller again before each signal, so that the order
 * in which SMs and warps reach their loads and stores changes from run to run; a missing wait then
 * shows up as a mismatch instead of hiding behind a stable timing. The normal build compiles the
 * points to nothing. */
#ifdef ARK_JITTER
#ifndef ARK_JITTER_NS
#define ARK_JITTER_NS 2000
#endif
static __device__ __forceinline__ void ark_jitter(uint32_t salt)
{
	uint32_t x = (uint32_t)ark_globaltimer() ^ (salt * 0x9e3779b9u) ^ (blockIdx.x << 20) ^ threadIdx.x;
	x ^= x >> 16; /* a 32-bit mix (lowbias32): neighbouring threads get unrelated delays */
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	__nanosleep(x % (ARK_JITTER_NS + 1u));
}
#define ARK_JITTER_AT(salt) ark_jitter(salt)
#else
#define ARK_JITTER_AT(salt) ((void)0)
#endif

/* ARK_TEST_HOOKS (tests/gpu_hooks.cu): faults on demand, set with cudaMemcpyToSymbol before the
 * session launches the kernel. Thread 0 calls the hook after a task's waits: the task of vCTA
 * hang_vcta never leaves, deaf to the abort flag (a stuck tile); the task of vCTA slow_vcta sleeps
 * slow_us in the slow_run-th non-empty iteration. */
#ifdef ARK_TEST_HOOKS
struct ark_test_hooks {
	uint32_t hang_vcta, slow_vcta, slow_run, slow_us;
};
static __device__ struct ark_test_hooks ark_test_hook = {~0u, ~0u, 0, 0};
static __device__ void ark_test_task(const struct ark_task &t, uint32_t run)
{
	const volatile struct ark_test_hooks *h = &ark_test_hook;
	while (t.vcta == h->hang_vcta)
		__nanosleep(1000);
	if (t.vcta == h->slow_vcta && run == h->slow_run)
		for (unsigned long long end = ark_globaltimer() + 1000ull * h->slow_us; ark_globaltimer() < end;)
			__nanosleep(1000);
}
#define ARK_TEST_TASK(t, run) ark_test_task(t, run)
#else
#define ARK_TEST_TASK(t, run) ((void)0)
#endif

/* ---- thread 0's waits ------------------------------------------------------------------------- */

/* Records where this CTA was when it saw the abort flag. */
static __device__ void ark_diag(struct ark_bell *bell, int sm, uint32_t where, uint32_t iter, uint32_t task,
				uint32_t counter, uint32_t want, uint32_t seen)
{
	struct ark_bell_sm *d = &bell->sm[sm];
	ark_st_relaxed_sys(&d->iter, iter);
	ark_st_relaxed_sys(&d->task, task);
	ark_st_relaxed_sys(&d->counter, counter);
	ark_st_relaxed_sys(&d->want, want);
	ark_st_relaxed_sys(&d->seen, seen);
	ark_st_release_sys(&d->where, where); /* last: the host reads the record once exited counts it */
}

/* Task `task` names a template or dtype this build has no tile for: records it, then raises the
 * abort flag so that every CTA leaves and the host diagnoses (ark_proto.h). Thread 0 only. */
static __device__ void ark_diag_bad_tile(const struct ark_kargs &a, uint32_t run, uint32_t task, uint32_t tmpl,
					 uint32_t dtype)
{
	struct ark_bell_sm *d = &a.bell->sm[blockIdx.x];
	ark_st_relaxed_sys(&d->tmpl, tmpl);
	ark_st_relaxed_sys(&d->dtype, dtype);
	ark_diag(a.bell, blockIdx.x, ARK_WHERE_BAD_TEMPLATE, run, task, 0, 0, 0);
	ark_st_release_sys(&a.bell->abort, 1);
}

/* Spins until (int32_t)(counters[c] - want) >= 0; sys: the counter is advanced from another GPU or
 * by the DMA engine, so the acquire is at system scope. Returns 0, or 1 on abort (after the record). */
static __device__ int ark_wait_counter(const struct ark_kargs &a, uint32_t c, uint32_t want, uint32_t where,
				       uint32_t iter, uint32_t task, uint32_t sys = 0)
{
	const uint32_t *p = a.counters + c;
	for (uint32_t spins = 1;; spins++) {
		uint32_t v = sys ? ark_ld_acquire_sys(p) : ark_ld_acquire_gpu(p);
		if ((int32_t)(v - want) >= 0)
			return 0;
		if (spins % ARK_ABORT_EVERY == 0 && ark_ld_relaxed_sys(&a.bell->abort)) {
			ark_diag(a.bell, blockIdx.x, where, iter, task, c, want, v);
			return 1;
		}
	}
}

/* ---- generation: many iterations from one submit (ark_proto.h) -------------------------------- */

/* SM 0's state of the doorbell and of a generation, thread 0 only. */
struct ark_gen {
	uint32_t held;    /* the iteration of the host's last submit: what the doorbell holds while idle */
	uint32_t active;  /* a generation runs: the next iteration comes from ark_gen_next, not the host */
	uint32_t first;   /* its first iteration */
	uint32_t steps;   /* iterations it runs at most */
	uint32_t prompt;  /* prompt ids in kargs.gen_prompt */
	uint32_t flags;   /* ARK_GEN_EOS */
	int32_t eos;
};

/* A submit that starts a generation (ARK_SUBMIT_GEN; the bell's gen_* fields read after the acquire
 * of the submit, so after the host's stores before it, and on no other submit: an ordinary
 * iteration costs no extra read of host memory): the state, and prompt id 0 into the token state
 * before the first iteration is published. */
static __device__ void ark_gen_start(const struct ark_kargs &a, uint32_t word, struct ark_gen &gs)
{
	gs.active = 0;
	if (a.token_off == ~0ull)
		return;
	const uint32_t steps = ark_ld_relaxed_sys(&a.bell->gen_steps);
	if (!steps)
		return;
	gs.active = 1;
	gs.first = word & ARK_ITER_MASK;
	gs.steps = steps < a.gen_cap ? steps : a.gen_cap;
	gs.prompt = ark_ld_relaxed_sys(&a.bell->gen_prompt);
	gs.flags = ark_ld_relaxed_sys(&a.bell->gen_flags);
	gs.eos = (int32_t)ark_ld_relaxed_sys((const uint32_t *)&a.bell->gen_eos);
	if (gs.prompt)
		*(int32_t *)(a.arena + a.token_off) = a.gen_prompt[0];
}

/* Between two iterations of a generation, once the done counter shows that every SM finished
 * iteration `iter` (step t = iter - first; the acquire of that counter makes every SM's writes of
 * the step visible here): the token state holds the token step t made; it goes to the host (the
 * token, then gen_count with a release). The generation ends after its last step, or at the EOS
 * once the prompt is done: gen_end = iter, and 0 is returned (SM 0 then polls the doorbell). Else
 * the next prompt id goes into the token state (published to the other SMs with the iteration) and
 * iter + 1 is returned; every ARK_SUBMIT_ABORT_EVERY steps the host's stop (ARK_ITER_STOP) and abort
 * (ARK_ITER_ABORT) flags are read, the doorbell being unread meanwhile. */
static __device__ uint32_t ark_gen_next(const struct ark_kargs &a, uint32_t iter, struct ark_gen &gs)
{
	int32_t *tok = (int32_t *)(a.arena + a.token_off);
	const uint32_t t = iter - gs.first;
	const int32_t v = (int32_t)ark_ld_acquire_gpu(tok);
	ark_st_relaxed_sys((uint32_t *)&a.gen_tokens[t], (uint32_t)v);
	ark_st_release_sys(&a.bell->gen_count, t + 1);
	if (ark_gen_ends(t, gs.steps, gs.prompt, gs.flags, gs.eos, v)) {
		gs.active = 0;
		ark_st_release_sys(&a.bell->gen_end, iter);
		return 0;
	}
	if ((t + 1) % ARK_SUBMIT_ABORT_EVERY == 0) {
		if (ark_ld_acquire_sys_u64(&a.bell->submit) >> 32) { /* stop */
			gs.active = 0;
			return ARK_ITER_STOP;
		}
		if (ark_ld_relaxed_sys(&a.bell->abort)) {
			ark_diag(a.bell, 0, ARK_WHERE_SUBMIT, iter, 0, 0, iter + 1, iter);
			gs.active = 0;
			return ARK_ITER_ABORT;
		}
	}
	if (t + 1 < gs.prompt)
		*tok = a.gen_prompt[t + 1];
	return iter + 1;
}

/* SM 0: waits until every SM finished iteration `iter`, then for the host's next submit (or stop, or
 * abort), and publishes it to the other SMs. Returns the published word. During a generation the
 * next iteration comes from ark_gen_next instead of the host.
 *
 * The wait on the done counter is what keeps iterations apart on the GPU: a host that rings i + 1
 * before i completed (a host bug) gets i + 1 started only once every SM left i, never a mix of the
 * two. It costs nothing on the latency path: the host rings i + 1 only after it saw `complete`, which
 * the last SM stores after its add to the done counter, so SM 0 sees that add (one L2 round trip)
 * long before the next submit can cross PCIe twice; measured with --bench-empty. A submit that skips
 * an iteration is the other host bug the kernel can see: it would break every counter target, so SM
 * 0 records it (ARK_WHERE_BAD_SUBMIT) and raises the abort. Both checks are compares of registers
 * once the word is read. */
static __device__ uint32_t ark_wait_submit(const struct ark_kargs &a, uint32_t iter)
{
	__shared__ struct ark_gen gs; /* SM 0's thread 0 only; set on its first call */
	if (iter == 0)
		gs.held = 0, gs.active = 0;
	uint32_t out = 0;
	if (ark_wait_counter(a, ARK_CTR_DONE, a.ctr_base + iter * (uint32_t)gridDim.x, ARK_WHERE_DONE, iter, 0))
		out = ARK_ITER_ABORT;
	const bool gen = !out && gs.active;
	if (gen)
		out = ark_gen_next(a, iter, gs); /* 0: the generation ended, the host is next */
	for (uint32_t spins = 1; !out; spins++) {
		uint64_t w = ark_ld_acquire_sys_u64(&a.bell->submit); /* submit | stop << 32 */
		uint32_t sub = (uint32_t)w, stop = (uint32_t)(w >> 32);
		if (stop)
			out = ARK_ITER_STOP;
		else if ((sub & ARK_ITER_MASK) == iter + 1)
			out = sub;
		else if ((sub & ARK_ITER_MASK) != gs.held) { /* after a generation the doorbell holds its first */
			ark_diag(a.bell, 0, ARK_WHERE_BAD_SUBMIT, iter, 0, 0, iter + 1, sub & ARK_ITER_MASK);
			ark_st_release_sys(&a.bell->abort, 1);
			out = ARK_ITER_ABORT;
		} else if (spins % ARK_SUBMIT_ABORT_EVERY == 0 && ark_ld_relaxed_sys(&a.bell->abort)) {
			ark_diag(a.bell, 0, ARK_WHERE_SUBMIT, iter, 0, 0, iter + 1, sub);
			out = ARK_ITER_ABORT;
		}
	}
	if (!(gen && gs.active) && out != ARK_ITER_STOP && out != ARK_ITER_ABORT) { /* a submit from the host */
		gs.held = out & ARK_ITER_MASK;
		if ((out & ARK_SUBMIT_GEN) == ARK_SUBMIT_GEN) { /* a generation starts: its steps are plain iterations */
			out &= ARK_ITER_MASK;
			ark_gen_start(a, out, gs);
		}
	}
	ark_st_release_gpu(a.counters + ARK_CTR_ITER, out);
	return out;
}

/* Other SMs: wait for SM 0 to publish an iteration other than `iter`. Returns the word. */
static __device__ uint32_t ark_wait_iter(const struct ark_kargs &a, uint32_t iter)
{
	const uint32_t *p = a.counters + ARK_CTR_ITER;
	for (uint32_t spins = 1;; spins++) {
		uint32_t v = ark_ld_acquire_gpu(p);
		if (v == ARK_ITER_STOP || (v != ARK_ITER_ABORT && (v & ARK_ITER_MASK) != iter))
			return v;
		if (v == ARK_ITER_ABORT ||
		    (spins % ARK_ABORT_EVERY == 0 && ark_ld_relaxed_sys(&a.bell->abort))) {
			ark_diag(a.bell, blockIdx.x, ARK_WHERE_ITER, iter, 0, ARK_CTR_ITER, iter + 1, v);
			return ARK_ITER_ABORT;
		}
	}
}

/* Waits of task `ti` in the `run`-th non-empty iteration, by the 32 lanes of warp 0 together: lane l
 * takes waits l, l + 32, ... (the first ARK_STAGED_WAITS from `staged`, the rest from the table) and
 * polls its counter until it is reached, every lane's load in flight at once. A task that waits on
 * many counters (a row op after a split-K product, memory that many readers of an earlier op had
 * to leave) so pays about one round trip to L2 a round, not one per wait. The acquires are made by
 * several lanes; the CTA barrier after this call orders each of them before every thread's reads of
 * the producers' data, as one lane's did. Returns 1 on abort, in every lane (after the record). */
static __device__ int ark_wait_task(const struct ark_kargs &a, const struct ark_task &t, uint32_t ti, uint32_t run,
				    const struct ark_wait *staged)
{
	const uint32_t lane = threadIdx.x & 31;
	for (uint32_t k0 = 0; k0 < t.n_wait; k0 += 32) {
		const uint32_t k = k0 + lane;
		bool pending = k < t.n_wait;
		struct ark_wait w = {0, 0, 0, 0};
		if (pending)
			w = k < ARK_STAGED_WAITS ? staged[k] : a.waits[t.wait0 + k];
		const uint32_t want = a.ctr_base + (run - 1) * w.per_iter + w.need;
		const uint32_t *p = a.counters + w.counter;
		uint32_t v = 0;
		for (uint32_t spins = 1;; spins++) {
			if (pending) {
				v = w.sys ? ark_ld_acquire_sys(p) : ark_ld_acquire_gpu(p);
				pending = (int32_t)(v - want) < 0;
			}
			const uint32_t left = __ballot_sync(~0u, pending);
			if (!left)
				break;
			if (spins % ARK_ABORT_EVERY == 0 &&
			    __shfl_sync(~0u, lane == 0 ? ark_ld_relaxed_sys(&a.bell->abort) : 0u, 0)) {
				const int l = __ffs(left) - 1; /* the first wait not reached, for the record */
				const uint32_t c = __shfl_sync(~0u, w.counter, l), wn = __shfl_sync(~0u, want, l),
					       seen = __shfl_sync(~0u, v, l);
				if (lane == 0)
					ark_diag(a.bell, blockIdx.x, ARK_WHERE_COUNTER, run, ti, c, wn, seen);
				return 1;
			}
		}
	}
	return 0;
}

/* Counts one signal of this CTA's task, after a __syncthreads() that follows every thread's last
 * write. The add's release is cumulative: the barrier orders every thread's writes before it, so the
 * release publishes them all at GPU scope with no fence of its own (a __threadfence() before it cost
 * 0.6 us per task on the critical path, bench/NOTES.md). Called by ARK_SIGNALLER for tasks, by thread
 * 0 for a grid barrier's arrival. */
static __device__ __forceinline__ void ark_signal(const struct ark_kargs &a, int32_t counter)
{
	if (counter >= 0) {
		ARK_JITTER_AT(counter);
		ark_red_release_gpu_add(a.counters + counter, 1);
	}
}

/* Signal of a task whose counter lives on another GPU (sig_peer = that GPU + 1). Called after the
 * CTA barrier that ends the tile: the fence is cumulative, so it publishes the peer stores of every
 * thread of the CTA before the release add. */
static __device__ __forceinline__ void ark_signal_peer(const struct ark_kargs &a, int32_t counter, uint32_t sig_peer)
{
	if (counter >= 0) {
		ARK_JITTER_AT(counter);
		__threadfence_system();
		ark_red_release_sys_add(a.peer_counters[sig_peer - 1] + counter, 1);
	}
}

/* DMA task: one request for elements k0:k1 of the op's in[0] (here) to its out on GPU p.peer; the
 * dispatcher raises flag `signal` of that GPU chunk by chunk, to run * chunks once all of it arrived
 * (chunks: the schedule of dma.h with ARK_DMA_CHUNK_BYTES, ARK_DMA_CHUNK_MAX_BYTES; run: the
 * counters' iteration, which counts non-empty iterations only). Thread 0 only, after the waits (its
 * acquire, then the release in dma_dev_push, publish the producers' data to the copy engine). Returns
 * 1 on abort while the ring is full. */
static __device__ int ark_dma_send(const struct ark_kargs &a, const struct ark_task &t, uint32_t run)
{
	const struct ark_opp &p = a.opp[t.opp];
	const uint64_t es = p.dtype == ARK_FP32 ? 4 : 2, bytes = (uint64_t)(t.k1 - t.k0) * es;
	const uint32_t chunks = (uint32_t)dma_chunk_count(bytes, ARK_DMA_CHUNK_BYTES, ARK_DMA_CHUNK_MAX_BYTES);
	struct dma_ring_shm *shm = (struct dma_ring_shm *)a.dma;
	struct dma_dev_prod *prod = (struct dma_dev_prod *)a.dma_prod;
	struct dma_req q;
	q.seq = 0;
	q.src_gpu = (uint32_t)a.gpu;
	q.dst_gpu = (uint32_t)p.peer;
	q.flags = 0;
	q.src_off = p.in[0] + t.k0 * es;
	q.dst_off = p.out + t.k0 * es;
	q.bytes = bytes;
	q.flag_index = (uint32_t)t.signal;
	q.flag_value = a.ctr_base + run * chunks;
	q.src_flag_index = 0;
	q.src_flag_value = 0;
	q.pad[0] = q.pad[1] = 0;
	return dma_dev_push(shm, prod, &q, &a.bell->abort) != 0;
}

/* ---- the loop --------------------------------------------------------------------------------- */

/* Warp 0 stages what a task needs from the static tables into shared memory with asynchronous copies
 * (cp.async) issued one task ahead, so that neither thread 0's waits nor the tile's first loads wait
 * on the memory system: at the top of task j it waits for the copies it issued at the top of task
 * j - 1 (task j's op params and waits, descriptor j + 1), then issues task j + 1's op params and waits
 * and descriptor j + 2. A tile's own cp.async groups are younger than the loop's, so its waits for
 * them (wait_group N) also complete the loop's, which only costs what the loop would have waited
 * anyway. Measured by bench/loop_probe: a 4 KB copy task with one wait went from 2.97 to 1.77 us. */
#define ARK_OPP_CHUNKS ((int)(sizeof(struct ark_opp) / 16))
static_assert(sizeof(struct ark_opp) % 16 == 0 && sizeof(struct ark_task) % 16 == 0 && sizeof(struct ark_wait) == 16,
	      "the staged tables are copied in 16-byte chunks");
static_assert(3 + ARK_OPP_CHUNKS + ARK_STAGED_WAITS <= 32, "one warp stages a task");

/* Lane `lane` of warp 0: its share of the copies of task `nt`'s params and waits (when nt is not
 * NULL) and of descriptor `d2` (when not NULL). */
static __device__ __forceinline__ void ark_stage_issue(const struct ark_kargs &a, int lane, const struct ark_task *nt,
						       struct ark_opp *opp, struct ark_wait *waits, const struct ark_task *d2,
						       struct ark_task *s_d2)
{
	if (lane < 3) {
		if (d2)
			ark_cp_async16((char *)s_d2 + 16 * lane, (const char *)d2 + 16 * lane, 16);
	} else if (lane < 3 + ARK_OPP_CHUNKS) {
		if (nt)
			ark_cp_async16((char *)opp + 16 * (lane - 3), (const char *)&a.opp[nt->opp] + 16 * (lane - 3), 16);
	} else if (lane < 3 + ARK_OPP_CHUNKS + ARK_STAGED_WAITS) {
		const int k = lane - 3 - ARK_OPP_CHUNKS;
		if (nt && k < (int)nt->n_wait)
			ark_cp_async16(&waits[k], &a.waits[nt->wait0 + k], 16);
	}
	ark_cp_commit();
}

static __device__ __forceinline__ void ark_loop_body(const struct ark_kargs &a)
{
	/* The staging ring: task j's descriptor in s_task[j & 3], its op params in s_opp[j & 1], its
	 * waits in s_wait[j & 1], j counting the tasks of every iteration so far. A slot is rewritten only
	 * after the barrier that ends the last task that read it (the signaller reads descriptor j until
	 * task j + 1's first barrier; the next iteration's first two tasks take the slots after it). */
	__shared__ __align__(16) struct ark_task s_task[4];
	__shared__ __align__(16) struct ark_opp s_opp[2];
	__shared__ __align__(16) struct ark_wait s_wait[2][ARK_STAGED_WAITS];
	__shared__ uint32_t s_word;     /* iteration word, broadcast by thread 0 */
	__shared__ int s_leave;         /* thread 0 saw the abort flag */
	__shared__ int s_ll_abort;      /* a packet sum returned on abort: leave without its signal */
	__shared__ uint32_t s_fault[2]; /* a tile's fault (ark_tile_env.fault): 1 + row, value */
	const int tid = threadIdx.x, sm = blockIdx.x;
	const uint32_t beg = a.sm_begin[sm], end = a.sm_begin[sm + 1];
	uint32_t iter = 0, run = 0; /* iterations seen; non-empty ones (the counters' iterations) */
	uint32_t j0 = 0;            /* j of the iteration's first task */
	int aborted = 0;

	for (;;) {
		/* Idle: warp 0 stages the first two descriptors and the first task's params and waits (the
		 * tables do not change while the kernel runs). */
		if (tid < 32) {
			if (beg < end) {
				ark_stage_issue(a, tid, NULL, NULL, NULL, &a.tasks[beg], &s_task[j0 & 3]);
				ark_cp_wait<0>();
				__syncwarp();
				ark_stage_issue(a, tid, &s_task[j0 & 3], &s_opp[j0 & 1], s_wait[j0 & 1],
						beg + 1 < end ? &a.tasks[beg + 1] : NULL, &s_task[(j0 + 1) & 3]);
			}
			uint32_t w = ARK_ITER_ABORT;
			if (tid == 0 && !aborted)
				w = sm == 0 ? ark_wait_submit(a, iter) : ark_wait_iter(a, iter);
			if (tid == 0)
				s_word = w;
		}
		__syncthreads();
		const uint32_t word = s_word;
		__syncthreads(); /* every thread has read s_word before thread 0 writes it again */
		if (word == ARK_ITER_STOP || word == ARK_ITER_ABORT)
			break;
		iter = word & ARK_ITER_MASK;
		unsigned long long *const trace = (word & ARK_SUBMIT_TRACE) ? a.trace : NULL;
		const uint32_t lend = (word & ARK_SUBMIT_EMPTY) ? beg : end;
		run += lend > beg;
		const ark_tile_env env = {a.arena, a.peers, ark_smem, run, &a.bell->abort, s_fault};
		if (tid == 0)
			s_fault[0] = 0; /* read after a tile's closing barrier, which orders this store first */

		for (uint32_t i = beg; i < lend; i++) {
			const uint32_t j = j0 + (i - beg);
			const struct ark_task &cur = s_task[j & 3];
			if (tid < 32) {
				ark_cp_wait<0>(); /* task j's params and waits, descriptor j + 1 */
				__syncwarp();
				ark_stage_issue(a, tid, i + 1 < lend ? &s_task[(j + 1) & 3] : NULL, &s_opp[(j + 1) & 1],
						s_wait[(j + 1) & 1], i + 2 < lend ? &a.tasks[i + 2] : NULL, &s_task[(j + 2) & 3]);
				if (tid == 0 && cur.tmpl == ARK_T_BARRIER)
					ark_signal(a, cur.signal);
				const int leave = ark_wait_task(a, cur, i, run, s_wait[j & 1]);
				if (tid == 0) {
					s_leave = leave;
					ARK_TEST_TASK(cur, run);
				}
			}
			__syncthreads();
			if (s_leave) {
				aborted = 1;
				break;
			}
			if (tid == 0 && trace)
				trace[2 * i] = ark_globaltimer();
			ARK_JITTER_AT(i);
			const bool ll = cur.tmpl == ARK_T_SUM_LL;
			/* a chain's tile reads its steps' params after its own: those stay in the table */
			const ark_opp &p = cur.tmpl == ARK_T_EW_CHAIN ? a.opp[cur.opp] : s_opp[j & 1];
			const bool ran = ark_tile(p, cur, env); /* the same for every thread */
			__syncthreads();
			if (!ran) {
				if (tid == 0)
					ark_diag_bad_tile(a, run, i, cur.tmpl, a.opp[cur.opp].dtype);
				aborted = 1;
				break;
			}
			if (s_fault[0]) { /* the same for every thread after the barrier */
				if (tid == 0) {
					struct ark_bell_sm *d = &a.bell->sm[sm];
					ark_st_relaxed_sys(&d->tmpl, cur.tmpl);
					ark_diag(a.bell, sm, ARK_WHERE_BAD_INDEX, run, i, s_fault[0] - 1,
						 (uint32_t)a.opp[cur.opp].K, s_fault[1]);
					ark_st_release_sys(&a.bell->abort, 1);
				}
				aborted = 1;
				break;
			}
			if (ll) { /* a packet sum's polls return early on abort: then no signal */
				if (tid == 0) {
					s_ll_abort = ark_ld_relaxed_sys(&a.bell->abort) != 0;
					if (s_ll_abort)
						ark_diag(a.bell, sm, ARK_WHERE_PACKETS, run, i, 0, 0, 0);
				}
				__syncthreads();
				if (s_ll_abort) {
					aborted = 1;
					break;
				}
			}
			/* Signals to this GPU's counters come from the signaller; DMA requests and signals
			 * to other GPUs from thread 0, whose waits published the producers' data to it. */
			const bool remote = cur.tmpl == ARK_T_DMA || cur.sig_peer;
			if (tid == (remote ? 0 : ARK_SIGNALLER)) {
				if (trace) /* before the signal: a consumer starts no earlier than this */
					trace[2 * i + 1] = ark_globaltimer();
				if (cur.tmpl == ARK_T_DMA)
					ark_dma_send(a, cur, run); /* on abort, the next wait sees it */
				else if (cur.sig_peer)
					ark_signal_peer(a, cur.signal, cur.sig_peer);
				else if (cur.tmpl != ARK_T_BARRIER)
					ark_signal(a, cur.signal);
			}
		}
		if (aborted)
			break; /* every thread saw s_leave */
		j0 += lend - beg;

		/* The list is done: count this SM; the last one to finish completes the iteration (its
		 * acq_rel add follows every other SM's release add, so all their writes are visible to it). */
		if (tid == 0) {
			__threadfence();
			if (ark_atom_acq_rel_gpu_add(a.counters + ARK_CTR_DONE, 1) ==
			    a.ctr_base + iter * (uint32_t)gridDim.x - 1)
				ark_st_release_sys(&a.bell->complete, iter);
		}
	}
	if (tid == 0) {
		struct ark_bell_sm *d = &a.bell->sm[sm];
		ark_st_release_sys(&d->left, 1);
	}
}


/* Defines the kernel and `static int ark_launch(int gpu, const struct ark_kargs *a, void *stream)`,
 * which returns 0 or the cudaError_t of the cooperative launch (grid ARK_SMS, block ARK_THREADS). */
#define ARK_DEFINE_LOOP()                                                                          \
	__global__ void __launch_bounds__(ARK_THREADS, 1)                                          \
		ark_loop_kernel(const __grid_constant__ struct ark_kargs ark_args)                 \
	{                                                                                          \
		ark_loop_body(ark_args);                                                           \
	}                                                                                          \
	static int ark_launch(int gpu, const struct ark_kargs *a, void *stream)                    \
	{                                                                                          \
		(void)gpu;                                                                         \
		void *args[] = {(void *)a};                                                        \
		return (int)cudaLaunchCooperativeKernel((const void *)ark_loop_kernel, dim3(ARK_SMS), \
							dim3(ARK_THREADS), args,                   \
							(size_t)ARK_SMEM_BYTES, (cudaStream_t)stream); \
	}

#endif
