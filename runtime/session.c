/* session.c: the resident loop kernels of a model: GPU checks, arena and tables, doorbells, the
 * watchdog and its diagnosis, tensor I/O on a side stream, orderly stop. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "ark_session.h"
#include "ark_streams_rt.h"
#include "dma.h"

#define ARK_STOP_WAIT_MS 2000  /* close: time for the CTAs to leave after stop, then after abort */
#define ARK_EARLY_RING_US 50   /* ARK_RUN_TEST_EARLY: the early ring comes this long after the first */
#define ARK_ABORT_WAIT_MS 1000 /* watchdog: time for the CTAs to leave after abort */
#define ARK_DIAG_MAX_SMS 32    /* SMs listed one per line in a diagnosis */

struct ark_gpu {
	int open;                /* resources below were (partly) created */
	int launched;            /* the loop kernel was launched and may be running */
	char name[256];
	cudaStream_t loop, side; /* the kernel's stream; copies between iterations */
	char *arena;             /* [arena_bytes] */
	struct ark_task *tasks;  /* [n_tasks] */
	uint32_t *sm_begin;      /* [sms + 1] */
	struct ark_wait *waits;  /* [n_waits] */
	struct ark_opp *opp;     /* [n_opp] */
	uint32_t *counters;      /* [ARK_CTR__FIRST + n_counters] */
	unsigned long long *trace; /* [n_tasks][2], or NULL */
	struct ark_bell *bell;   /* host address of the mapped bell */
	struct ark_bell *dbell;  /* its device address */
	int32_t *gen_prompt;     /* [ARK_GEN_CAP] device memory, with a token state */
	int32_t *gen_tokens;     /* [ARK_GEN_CAP] mapped host memory: the token of every step */
	int32_t *gen_dtokens;    /* its device address */
};

struct ark_session {
	const struct ark_model *m;
	int use_dma;             /* some task sends through the DMA engine */
	struct dma_ring rings[ARK_MAX_GPUS];    /* per GPU, mapped pinned host memory */
	struct dma_ring_shm *dring[ARK_MAX_GPUS]; /* their device addresses */
	struct dma_dev_prod *dprod[ARK_MAX_GPUS]; /* their producer state, in each GPU's memory */
	struct dma_cuda *dcuda;  /* the engine's CUDA backend */
	struct dma_engine dma;   /* the dispatcher thread, running when dma.running */
	struct ark_session_opts opts;
	unsigned iter;           /* iterations submitted */
	int dead;                /* aborted or failed: the kernels are gone, only close */
	int traced;              /* the last completed iteration was traced */
	char *diag;
	struct ark_srt *srt;     /* --backend streams|graph|dynamic: runs the iterations, no loop kernel */
	struct ark_gpu g[ARK_MAX_GPUS];
};

/* ---- helpers ---------------------------------------------------------------------------------- */

static int cuda_fail(cudaError_t e, const char *call, int gpu, const char *file, int line)
{
	return ark_error("GPU %d: %s failed: %s (%s:%d)", gpu, call, cudaGetErrorString(e), file, line);
}

/* Evaluates to nonzero (after setting the error) when the CUDA call fails. */
#define CUDA_FAILS(gpu, call) ({                                                     \
	cudaError_t e_ = (call);                                                      \
	e_ != cudaSuccess ? (cuda_fail(e_, #call, (gpu), __FILE__, __LINE__), 1) : 0; \
})

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static uint32_t bell_load(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void bell_store(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

int ark_device_count(void)
{
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess) {
		cudaGetLastError(); /* clear it: "no device" is an answer here, not an error */
		return 0;
	}
	return n;
}

/* CTAs of GPU g's loop kernel that have left. */
static int exited(const struct ark_session *s, int g)
{
	int n = 0;
	for (int i = 0; i < s->m->sms; i++)
		n += bell_load(&s->g[g].bell->sm[i].left) != 0;
	return n;
}

/* The kernel of GPU g has left: every CTA counted itself out, or the stream is idle or failed. */
static int gpu_finished(const struct ark_session *s, int g)
{
	const struct ark_gpu *G = &s->g[g];
	if (!G->launched)
		return 1;
	if (exited(s, g) >= s->m->sms)
		return 1;
	return cudaStreamQuery(G->loop) != cudaErrorNotReady;
}

/* Waits up to ms for every launched kernel to leave; returns 1 if they all did. */
static int wait_finished(const struct ark_session *s, double ms)
{
	double until = now_ms() + ms;
	for (;;) {
		int all = 1;
		for (int g = 0; g < s->m->gpus; g++)
			all &= gpu_finished(s, g);
		if (all)
			return 1;
		if (now_ms() > until)
			return 0;
		struct timespec ts = {0, 100000};
		nanosleep(&ts, NULL);
	}
}

/* ---- checks of the model's tables ------------------------------------------------------------ */

static int check_plan(const struct ark_model *m, int g)
{
	const struct ark_gpu_tables *p = &m->tables[g];
	uint32_t n_ctr = ARK_CTR__FIRST + (uint32_t)p->n_counters;

	if (p->n_tasks < 0 || p->n_waits < 0 || p->n_opp < 0 || p->n_counters < 0)
		return ark_error("model '%s', GPU %d: negative table size", m->name, g);
	if ((p->n_tasks && !p->tasks) || !p->sm_begin || (p->n_waits && !p->waits) || (p->n_opp && !p->opp))
		return ark_error("model '%s', GPU %d: missing table", m->name, g);
	if (p->sm_begin[0] != 0 || p->sm_begin[m->sms] != (uint32_t)p->n_tasks)
		return ark_error("model '%s', GPU %d: sm_begin spans %u..%u, not the %d tasks", m->name, g,
				 p->sm_begin[0], p->sm_begin[m->sms], p->n_tasks);
	for (int s = 0; s < m->sms; s++)
		if (p->sm_begin[s] > p->sm_begin[s + 1])
			return ark_error("model '%s', GPU %d: sm_begin decreases at SM %d", m->name, g, s);
	for (int i = 0; i < p->n_tasks; i++) {
		const struct ark_task *t = &p->tasks[i];
		if (t->tmpl >= ARK_T__COUNT)
			return ark_error("model '%s', GPU %d: task %d has template %u", m->name, g, i, t->tmpl);
		if (t->tmpl != ARK_T_BARRIER && t->opp >= p->n_opp)
			return ark_error("model '%s', GPU %d: task %d names op params %u of %d", m->name, g, i,
					 t->opp, p->n_opp);
		if (t->op != ARK_TASK_NO_OP && t->op >= m->n_ops)
			return ark_error("model '%s', GPU %d: task %d names op %u of %d", m->name, g, i, t->op,
					 m->n_ops);
		if ((uint64_t)t->wait0 + t->n_wait > (uint64_t)p->n_waits)
			return ark_error("model '%s', GPU %d: task %d waits beyond the wait table", m->name, g, i);
		/* a signal (or the DMA engine's flag) may be on another GPU's counter array */
		int sg = t->sig_peer ? (int)t->sig_peer - 1 : g;
		if (sg >= m->gpus || (t->tmpl == ARK_T_DMA && (t->signal == -1 || sg == g)))
			return ark_error("model '%s', GPU %d: task %d signals GPU %d's counters", m->name, g, i, sg);
		uint32_t s_ctr = ARK_CTR__FIRST + (uint32_t)m->tables[sg].n_counters;
		if (t->signal != -1 && (t->signal < ARK_CTR__FIRST || (uint32_t)t->signal >= s_ctr))
			return ark_error("model '%s', GPU %d: task %d signals counter %d of GPU %d, outside %d..%u",
					 m->name, g, i, t->signal, sg, ARK_CTR__FIRST, s_ctr - 1);
	}
	for (int i = 0; i < p->n_waits; i++) {
		const struct ark_wait *w = &p->waits[i];
		if (w->counter < ARK_CTR__FIRST || w->counter >= n_ctr)
			return ark_error("model '%s', GPU %d: wait %d on counter %u, outside %d..%u", m->name, g,
					 i, w->counter, ARK_CTR__FIRST, n_ctr - 1);
		if (w->need > w->per_iter)
			return ark_error("model '%s', GPU %d: wait %d needs %u of %u signals", m->name, g, i,
					 w->need, w->per_iter);
	}
	for (int t = 0; t < m->n_tensors; t++) {
		const struct ark_tensor *T = &m->tensors[t];
		if (T->gpu == g && T->pitch &&
		    (T->ndim < 1 || T->pitch < (uint64_t)ark_row_bytes(T->dtype, T->shape[T->ndim - 1])))
			return ark_error("model '%s': tensor '%s' has rows of %lld bytes at a pitch of %llu", m->name,
					 T->name, T->ndim < 1 ? 0LL : (long long)ark_row_bytes(T->dtype, T->shape[T->ndim - 1]),
					 (unsigned long long)T->pitch);
		if (T->gpu == g && T->offset != ARK_NOT_STORED && T->offset + ark_tensor_extent(T) > p->arena_bytes)
			return ark_error("model '%s': tensor '%s' ends at byte %llu of GPU %d's arena of %llu",
					 m->name, T->name, (unsigned long long)(T->offset + ark_tensor_extent(T)), g,
					 (unsigned long long)p->arena_bytes);
	}
	return ARK_OK;
}

/* ---- open ------------------------------------------------------------------------------------ */

/* Checks GPU g against the model. */
static int check_gpu(struct ark_session *s, int g)
{
	const struct ark_model *m = s->m;
	struct cudaDeviceProp prop;
	int occ = 0;

	if (CUDA_FAILS(g, cudaSetDevice(g)) || CUDA_FAILS(g, cudaGetDeviceProperties(&prop, g)))
		return ARK_ERR;
	snprintf(s->g[g].name, sizeof s->g[g].name, "%s", prop.name);
	if (prop.multiProcessorCount < m->sms)
		return ark_error("GPU %d (%s) has %d SMs, the schedule needs %d: regenerate with --sms %d", g,
				 prop.name, prop.multiProcessorCount, m->sms, prop.multiProcessorCount);
	if (m->sms > ARK_MAX_SMS)
		return ark_error("the schedule is made for %d SMs, the runtime handles at most %d", m->sms,
				 ARK_MAX_SMS);
	if (prop.sharedMemPerBlockOptin < (size_t)m->smem_bytes)
		return ark_error("GPU %d (%s) offers %zu bytes of shared memory per block, the model needs %d",
				 g, prop.name, prop.sharedMemPerBlockOptin, m->smem_bytes);
	if (prop.maxThreadsPerBlock < m->threads)
		return ark_error("GPU %d (%s) runs at most %d threads per block, the model needs %d", g,
				 prop.name, prop.maxThreadsPerBlock, m->threads);
	if (!prop.cooperativeLaunch)
		return ark_error("GPU %d (%s) does not support cooperative launches", g, prop.name);
	if (CUDA_FAILS(g, cudaFuncSetAttribute(m->kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
					       m->smem_bytes)))
		return ARK_ERR;
	if (CUDA_FAILS(g, cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, m->kernel, m->threads,
									(size_t)m->smem_bytes)))
		return ARK_ERR;
	if (occ < 1)
		return ark_error("GPU %d (%s): the loop kernel (%d threads, %d bytes of shared memory) does not "
				 "fit on an SM", g, prop.name, m->threads, m->smem_bytes);
	return ARK_OK;
}

/* cudaMalloc of n bytes (at least 1) with an optional upload of src. */
static int dev_alloc(int g, void **p, size_t n, const void *src)
{
	if (CUDA_FAILS(g, cudaMalloc(p, n ? n : 1)))
		return ARK_ERR;
	if (src && n && CUDA_FAILS(g, cudaMemcpy(*p, src, n, cudaMemcpyHostToDevice)))
		return ARK_ERR;
	if (!src && CUDA_FAILS(g, cudaMemset(*p, 0, n ? n : 1)))
		return ARK_ERR;
	return ARK_OK;
}

/* The counter array of GPU g: ARK_CTR_ITER 0 (no iteration published), the done counter and the
 * model's counters at the base (0 but in tests that start near the 32-bit wrap). */
static int alloc_counters(struct ark_session *s, int g)
{
	size_t n = ARK_CTR__FIRST + (size_t)s->m->tables[g].n_counters;
	uint32_t *init = malloc(n * sizeof *init);
	if (!init)
		return ark_error("out of memory");
	for (size_t i = 0; i < n; i++)
		init[i] = i == ARK_CTR_ITER ? 0 : s->opts.counter_base;
	int rc = dev_alloc(g, (void **)&s->g[g].counters, n * sizeof *init, init);
	free(init);
	return rc;
}

/* Streams, arena, tables, counters, trace buffer and bell of GPU g. */
static int setup_gpu(struct ark_session *s, int g)
{
	const struct ark_model *m = s->m;
	const struct ark_gpu_tables *p = &m->tables[g];
	struct ark_gpu *G = &s->g[g];
	void *bell = NULL, *dbell = NULL;

	G->open = 1;
	if (CUDA_FAILS(g, cudaSetDevice(g)) ||
	    CUDA_FAILS(g, cudaStreamCreateWithFlags(&G->loop, cudaStreamNonBlocking)) ||
	    CUDA_FAILS(g, cudaStreamCreateWithFlags(&G->side, cudaStreamNonBlocking)))
		return ARK_ERR;
	if (dev_alloc(g, (void **)&G->arena, p->arena_bytes, NULL) ||
	    dev_alloc(g, (void **)&G->tasks, (size_t)p->n_tasks * sizeof *p->tasks, p->tasks) ||
	    dev_alloc(g, (void **)&G->sm_begin, ((size_t)m->sms + 1) * sizeof *p->sm_begin, p->sm_begin) ||
	    dev_alloc(g, (void **)&G->waits, (size_t)p->n_waits * sizeof *p->waits, p->waits) ||
	    dev_alloc(g, (void **)&G->opp, (size_t)p->n_opp * sizeof *p->opp, p->opp) ||
	    alloc_counters(s, g))
		return ARK_ERR;
	if (s->opts.trace &&
	    dev_alloc(g, (void **)&G->trace, 2 * (size_t)p->n_tasks * sizeof *G->trace, NULL))
		return ARK_ERR;
	if (CUDA_FAILS(g, cudaHostAlloc(&bell, sizeof(struct ark_bell),
					cudaHostAllocMapped | cudaHostAllocPortable)))
		return ARK_ERR;
	G->bell = bell;
	memset(bell, 0, sizeof(struct ark_bell));
	if (CUDA_FAILS(g, cudaHostGetDevicePointer(&dbell, bell, 0)))
		return ARK_ERR;
	G->dbell = dbell;
	if (m->token_state && !m->streams) { /* the generation loop's prompt and tokens */
		void *tok = NULL, *dtok = NULL;
		if (dev_alloc(g, (void **)&G->gen_prompt, ARK_GEN_CAP * sizeof(int32_t), NULL) ||
		    CUDA_FAILS(g, cudaHostAlloc(&tok, ARK_GEN_CAP * sizeof(int32_t),
						cudaHostAllocMapped | cudaHostAllocPortable)))
			return ARK_ERR;
		G->gen_tokens = tok;
		if (CUDA_FAILS(g, cudaHostGetDevicePointer(&dtok, tok, 0)))
			return ARK_ERR;
		G->gen_dtokens = dtok;
	}
	return ARK_OK;
}

/* Peer access between every pair of GPUs: the loop kernels store into their peers' arenas and raise
 * their counters, the DMA engine writes its flags there. A model on several GPUs needs every pair,
 * and native peer atomics where a loop kernel raises a peer's counter (p2p sends). */
static int enable_peers(struct ark_session *s, int peer_ok[ARK_MAX_GPUS][ARK_MAX_GPUS], int atomics)
{
	int n = s->m->gpus;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			int can = 0;
			peer_ok[i][j] = i == j;
			if (i == j)
				continue;
			if (cudaDeviceCanAccessPeer(&can, i, j) != cudaSuccess || !can) {
				cudaGetLastError();
				return ark_error("GPU %d (%s) cannot access GPU %d (%s) as a peer: model '%s' sends data "
						 "between them (NVLink or PCIe peer-to-peer is required)", i, s->g[i].name,
						 j, s->g[j].name, s->m->name);
			}
			int at = 0;
			if (atomics && (cudaDeviceGetP2PAttribute(&at, cudaDevP2PAttrNativeAtomicSupported, i, j) !=
					cudaSuccess || !at)) {
				cudaGetLastError();
				return ark_error("GPU %d cannot do atomics on GPU %d's memory (peer link without native "
						 "atomics): the p2p sends of model '%s' need them; regenerate with "
						 "--p2p-max 0 (and transport \"dma\" where an op asks for p2p)", i, j, s->m->name);
			}
			if (CUDA_FAILS(i, cudaSetDevice(i)))
				return ARK_ERR;
			cudaError_t e = cudaDeviceEnablePeerAccess(j, 0);
			if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled)
				return cuda_fail(e, "cudaDeviceEnablePeerAccess", i, __FILE__, __LINE__);
			cudaGetLastError(); /* an already-enabled pair is not an error */
			peer_ok[i][j] = 1;
		}
	return ARK_OK;
}

/* The DMA engine, when some task sends through it: a request ring per GPU in mapped pinned memory,
 * the CUDA backend over the arenas and counter arrays, and the dispatcher thread. */
static int start_dma(struct ark_session *s)
{
	const struct ark_model *m = s->m;
	void *arenas[ARK_MAX_GPUS];
	uint32_t *counters[ARK_MAX_GPUS];
	struct dma_backend be;
	struct dma_options o;

	memset(&o, 0, sizeof o);
	o.chunk_bytes = ARK_DMA_CHUNK_BYTES;         /* the schedule the emitted waits count on */
	o.chunk_max_bytes = ARK_DMA_CHUNK_MAX_BYTES;
	for (int g = 0; g < m->gpus; g++) {
		if (dma_cuda_ring_alloc(&s->rings[g], ARK_DMA_RING_SLOTS, &s->dring[g]))
			return ark_error("GPU %d: DMA request ring: %s", g, dma_last_error());
		if (CUDA_FAILS(g, cudaSetDevice(g)))
			return ARK_ERR;
		if (dma_cuda_dev_prod_alloc(&s->rings[g], &s->dprod[g]))
			return ark_error("GPU %d: DMA producer state: %s", g, dma_last_error());
		arenas[g] = s->g[g].arena;
		counters[g] = s->g[g].counters;
		o.arena_bytes[g] = m->tables[g].arena_bytes;
		o.n_flags[g] = ARK_CTR__FIRST + (uint32_t)m->tables[g].n_counters;
	}
	if (dma_cuda_create(&s->dcuda, m->gpus, arenas, counters, &be))
		return ark_error("DMA engine: %s", dma_last_error());
	if (dma_engine_start(&s->dma, s->rings, m->gpus, &be, &o))
		return ark_error("DMA engine: %s", dma_last_error());
	return ARK_OK;
}

int ark_session_open(struct ark_session **sp, const struct ark_model *m, const struct ark_session_opts *opts)
{
	struct ark_session *s;
	int n_dev = ark_device_count();
	int peer_ok[ARK_MAX_GPUS][ARK_MAX_GPUS];

	*sp = NULL;
	if (m->gpus < 1 || m->gpus > ARK_MAX_GPUS || m->sms < 1)
		return ark_error("model '%s': %d GPUs of %d SMs is not a schedule", m->name, m->gpus, m->sms);
	if (n_dev == 0)
		return ark_error("no CUDA device found");
	if (n_dev < m->gpus)
		return ark_error("model '%s' needs %d GPUs, this machine has %d", m->name, m->gpus, n_dev);

	s = calloc(1, sizeof *s);
	if (!s)
		return ark_error("out of memory");
	s->m = m;
	if (opts)
		s->opts = *opts;
	if (s->opts.timeout_ms <= 0)
		s->opts.timeout_ms = 2000;
	for (int g = 0; g < m->gpus; g++)
		if (check_gpu(s, g) || check_plan(m, g) || setup_gpu(s, g))
			goto fail;
	int remote_adds = 0;
	for (int g = 0; g < m->gpus; g++)
		for (int i = 0; i < m->tables[g].n_tasks; i++) {
			const struct ark_task *t = &m->tables[g].tasks[i];
			s->use_dma |= t->tmpl == ARK_T_DMA;
			remote_adds |= t->sig_peer && t->tmpl != ARK_T_DMA;
		}
	if (enable_peers(s, peer_ok, remote_adds))
		goto fail;
	if (s->use_dma && start_dma(s))
		goto fail;
	for (int g = 0; g < m->gpus; g++) {
		struct ark_gpu *G = &s->g[g];
		struct ark_kargs a;
		memset(&a, 0, sizeof a);
		a.arena = G->arena;
		for (int j = 0; j < m->gpus; j++)
			a.peers[j] = peer_ok[g][j] ? s->g[j].arena : NULL;
		a.tasks = G->tasks;
		a.sm_begin = G->sm_begin;
		a.waits = G->waits;
		a.opp = G->opp;
		a.counters = G->counters;
		a.bell = G->dbell;
		a.trace = G->trace;
		a.dma = s->use_dma ? (void *)s->dring[g] : NULL;
		a.dma_prod = s->use_dma ? (void *)s->dprod[g] : NULL;
		a.n_sms = m->sms;
		a.gpu = g;
		for (int j = 0; j < m->gpus; j++)
			a.peer_counters[j] = peer_ok[g][j] ? s->g[j].counters : NULL;
		a.ctr_base = s->opts.counter_base;
		a.token_off = m->token_state ? m->tensors[m->token_state - 1].offset : ~0ull;
		a.gen_prompt = G->gen_prompt;
		a.gen_tokens = G->gen_dtokens;
		a.gen_cap = G->gen_prompt ? ARK_GEN_CAP : 0;
		if (CUDA_FAILS(g, cudaSetDevice(g)) || CUDA_FAILS(g, cudaDeviceSynchronize()))
			goto fail; /* uploads done before the kernel makes the device busy for good */
		if (m->streams) { /* one kernel per op instead of the loop kernel (one GPU) */
			if (ark_srt_open(&s->srt, m, G->arena, G->tasks, G->opp, G->trace))
				goto fail;
			break;
		}
		int e = m->launch(g, &a, G->loop);
		if (e) {
			cuda_fail((cudaError_t)e, "cooperative launch of the loop kernel", g, __FILE__, __LINE__);
			goto fail;
		}
		G->launched = 1;
	}
	*sp = s;
	return ARK_OK;
fail:;
	/* keep the first error, not what closing says */
	char msg[1024];
	snprintf(msg, sizeof msg, "%s", ark_last_error());
	ark_session_close(s);
	return ark_error("%s", msg);
}

/* ---- close ------------------------------------------------------------------------------------ */

/* Frees GPU g's memory and streams: only once no loop kernel can reach them (its own has left). */
static void free_gpu(struct ark_gpu *G, int g)
{
	cudaSetDevice(g);
	if (G->launched)
		cudaStreamSynchronize(G->loop); /* it has left: returns at once */
	cudaFree(G->arena);
	cudaFree(G->tasks);
	cudaFree(G->sm_begin);
	cudaFree(G->waits);
	cudaFree(G->opp);
	cudaFree(G->counters);
	cudaFree(G->trace);
	cudaFree(G->gen_prompt);
	if (G->gen_tokens)
		cudaFreeHost(G->gen_tokens);
	if (G->bell)
		cudaFreeHost(G->bell);
	if (G->loop)
		cudaStreamDestroy(G->loop);
	if (G->side)
		cudaStreamDestroy(G->side);
	cudaGetLastError();
}

/* Frees the DMA engine's backend (its streams, synchronised), rings and producer states. */
static void free_dma(struct ark_session *s)
{
	dma_cuda_destroy(s->dcuda);
	s->dcuda = NULL;
	for (int g = 0; g < s->m->gpus; g++) {
		dma_cuda_ring_free(&s->rings[g]);
		if (s->dprod[g]) {
			cudaSetDevice(g);
			dma_cuda_dev_prod_free(s->dprod[g]);
			s->dprod[g] = NULL;
		}
	}
}

/* Close with a loop kernel that did not leave (or a DMA copy that did not end): says on stderr, per
 * GPU, what stays allocated. A running kernel reaches its own tables, bell, trace buffer and DMA ring, and every GPU's arena and
 * counters through peer access; and cudaFree / cudaFreeHost wait for the kernels of the devices the
 * memory is mapped into, so freeing anything of any GPU might never return. Everything stays, to
 * the end of the process. */
static void report_leak(const struct ark_session *s, const int *stuck)
{
	const struct ark_model *m = s->m;
	for (int g = 0; g < m->gpus; g++) {
		const struct ark_gpu *G = &s->g[g];
		if (!G->open)
			continue;
		if (stuck[g])
			fprintf(stderr, "ark: GPU %d: the loop kernel is still running (%d of %d CTAs left after stop "
				"and abort)", g, exited(s, g), m->sms);
		else
			fprintf(stderr, "ark: GPU %d: its loop kernel left, but a running kernel or copy reaches its "
				"memory", g);
		fprintf(stderr, "; left allocated until the process ends: arena (%llu bytes), tables, counters, "
			"%sdoorbell%s\n", (unsigned long long)m->tables[g].arena_bytes, G->trace ? "trace buffer, " : "",
			s->use_dma ? ", DMA ring and producer state" : "");
	}
	if (s->use_dma)
		fprintf(stderr, "ark: the DMA engine's dispatcher was stopped; its streams, copies still in them, "
			"are left as they are\n");
}

int ark_session_close(struct ark_session *s)
{
	int rc = ARK_OK, any = 0, n_stuck = 0, stuck[ARK_MAX_GPUS] = {0};
	if (!s)
		return ARK_OK;
	const struct ark_model *m = s->m;
	for (int g = 0; g < m->gpus; g++)
		any |= s->g[g].launched;
	/* Every wait below is bounded (polls of the bells and of the streams, never a synchronisation),
	 * so close returns within 2 * ARK_STOP_WAIT_MS whatever the kernels do. */
	if (any && !s->dead) {
		for (int g = 0; g < m->gpus; g++)
			if (s->g[g].launched)
				bell_store(&s->g[g].bell->stop, 1);
	}
	if (any && (s->dead || !wait_finished(s, ARK_STOP_WAIT_MS))) {
		for (int g = 0; g < m->gpus; g++)
			if (s->g[g].launched)
				bell_store(&s->g[g].bell->abort, 1);
		wait_finished(s, ARK_STOP_WAIT_MS);
	}
	for (int g = 0; g < m->gpus; g++)
		if (s->g[g].open && !gpu_finished(s, g)) {
			stuck[g] = 1;
			n_stuck++;
		}
	/* The dispatcher is a host thread: stopping it hands the published requests to the backend (it
	 * enqueues, it never waits for a copy) and joins it. Its copies must end before the arenas go;
	 * one that does not (a dead link) is waited for as long as a kernel, then left like one. */
	if (s->use_dma && s->dma.running)
		dma_engine_stop(&s->dma, NULL);
	if (s->srt)
		cudaSetDevice(0);
	ark_srt_close(s->srt); /* before the arena its kernels use */
	int dma_busy = !n_stuck && s->dcuda && !dma_cuda_wait_idle(s->dcuda, ARK_STOP_WAIT_MS);
	if (n_stuck || dma_busy) {
		report_leak(s, stuck);
		for (int g = 0; g < m->gpus && !dma_busy; g++)
			if (stuck[g]) {
				rc = ark_error("GPU %d: the loop kernel did not stop (%d of %d CTAs left); nothing was "
					       "freed, its memory and that of every GPU it reaches stay allocated until "
					       "the process ends", g, exited(s, g), m->sms);
				break;
			}
		if (dma_busy)
			rc = ark_error("the DMA engine's copies did not finish within %d ms; nothing was freed, the "
				       "arenas they copy into stay allocated until the process ends", ARK_STOP_WAIT_MS);
	} else {
		if (s->use_dma) /* after the kernels and the dispatcher, before the arenas it copies into */
			free_dma(s);
		for (int g = 0; g < m->gpus; g++)
			if (s->g[g].open)
				free_gpu(&s->g[g], g);
	}
	free(s->diag);
	free(s);
	return rc;
}

/* ---- tensors ---------------------------------------------------------------------------------- */

static int tensor_check(struct ark_session *s, int t)
{
	if (t < 0 || t >= s->m->n_tensors)
		return ark_error("tensor %d: the model has %d", t, s->m->n_tensors);
	if (s->m->tensors[t].gpu >= s->m->gpus)
		return ark_error("tensor '%s' is on GPU %d of %d", s->m->tensors[t].name, s->m->tensors[t].gpu,
				 s->m->gpus);
	return ARK_OK;
}

static int tensor_copy(struct ark_session *s, int t, void *host, int to_gpu)
{
	if (tensor_check(s, t))
		return ARK_ERR;
	const struct ark_tensor *T = &s->m->tensors[t];
	struct ark_gpu *G = &s->g[T->gpu];
	if (!T->bytes || T->offset == ARK_NOT_STORED) /* computed inside a fused vCTA: nothing on the GPU */
		return ARK_OK;
	char *dev = G->arena + T->offset;
	if (CUDA_FAILS(T->gpu, cudaSetDevice(T->gpu)))
		return ARK_ERR;
	cudaError_t e;
	char *img = NULL; /* rows padded in the arena (zeros after each), packed on the host: a host image
			   * of the arena's bytes, one plain copy (the copy engine: cudaMemset and 2-D copies
			   * may need a kernel, which would never find room on SMs the loop occupies) */
	size_t row = 0, rows = 0;
	if (T->pitch) {
		row = (size_t)ark_row_bytes(T->dtype, T->shape[T->ndim - 1]), rows = T->bytes / row;
		const size_t ext = (size_t)ark_tensor_extent(T);
		if (!(img = (char *)calloc(ext, 1)))
			return ark_error("tensor '%s': out of host memory (%zu bytes)", T->name, ext);
		if (to_gpu)
			for (size_t r = 0; r < rows; r++)
				memcpy(img + r * T->pitch, (const char *)host + r * row, row);
		e = to_gpu ? cudaMemcpyAsync(dev, img, ext, cudaMemcpyHostToDevice, G->side)
			   : cudaMemcpyAsync(img, dev, ext, cudaMemcpyDeviceToHost, G->side);
	} else {
		e = to_gpu ? cudaMemcpyAsync(dev, host, T->bytes, cudaMemcpyHostToDevice, G->side)
			   : cudaMemcpyAsync(host, dev, T->bytes, cudaMemcpyDeviceToHost, G->side);
	}
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(G->side);
	if (img && e == cudaSuccess && !to_gpu)
		for (size_t r = 0; r < rows; r++)
			memcpy((char *)host + r * row, img + r * T->pitch, row);
	free(img);
	if (e != cudaSuccess)
		return ark_error("tensor '%s': copy %s GPU %d failed: %s", T->name, to_gpu ? "to" : "from",
				 T->gpu, cudaGetErrorString(e));
	return ARK_OK;
}

int ark_session_write(struct ark_session *s, int t, const void *host_buf)
{
	return tensor_copy(s, t, (void *)host_buf, 1);
}

int ark_session_read(struct ark_session *s, int t, void *host_buf)
{
	return tensor_copy(s, t, host_buf, 0);
}

/* Through the copy engine: a memset kernel might never find room on SMs that the loop occupies. */
int ark_session_fill(struct ark_session *s, int t, int byte)
{
	if (tensor_check(s, t))
		return ARK_ERR;
	if (s->m->tensors[t].offset == ARK_NOT_STORED)
		return ARK_OK;
	void *buf = malloc(s->m->tensors[t].bytes ? s->m->tensors[t].bytes : 1);
	if (!buf)
		return ark_error("out of memory");
	memset(buf, byte, s->m->tensors[t].bytes);
	int rc = tensor_copy(s, t, buf, 1);
	free(buf);
	return rc;
}

/* ---- run and watchdog ------------------------------------------------------------------------- */

/* The wait of task ti on counter c, for the signals it needs this iteration. */
static const struct ark_wait *task_wait(const struct ark_gpu_tables *p, uint32_t ti, uint32_t c)
{
	if (ti >= (uint32_t)p->n_tasks)
		return NULL;
	const struct ark_task *t = &p->tasks[ti];
	for (uint32_t k = 0; k < t->n_wait; k++)
		if (p->waits[t->wait0 + k].counter == c)
			return &p->waits[t->wait0 + k];
	return NULL;
}

/* Writes into buf the SMs in [0, n) with where == w (for w == ITER: those whose record is of
 * iteration iter if fin, of another if not); returns how many. */
static int list_sms(char *buf, size_t size, const struct ark_bell *b, int n, uint32_t w, int fin, uint32_t iter)
{
	int k = 0;
	size_t at = 0;
	buf[0] = 0;
	for (int sm = 0; sm < n; sm++) {
		const struct ark_bell_sm *d = &b->sm[sm];
		if (d->where != w || (w == ARK_WHERE_ITER && (d->iter == iter) != fin))
			continue;
		if (at < size)
			at += (size_t)snprintf(buf + at, size - at, "%s%d", k ? ", " : "", sm);
		k++;
	}
	return k;
}

static void diagnose_gpu(FILE *f, struct ark_session *s, int g, uint32_t iter)
{
	const struct ark_model *m = s->m;
	const struct ark_gpu_tables *p = &m->tables[g];
	const struct ark_bell *b = s->g[g].bell;
	int shown = 0, hidden = 0;
	char label[256];

	for (int sm = 0; sm < m->sms; sm++) {
		const struct ark_bell_sm *d = &b->sm[sm];
		if (d->where != ARK_WHERE_BAD_TEMPLATE)
			continue;
		ark_task_label(m, g, (int)d->task, label, sizeof label);
		fprintf(f, "  GPU %d SM %d: task %u (vCTA %u, %s) has template %s (%u) with dtype %s, for which this "
			"binary has no tile\n", g, sm, d->task, d->task < (uint32_t)p->n_tasks ? p->tasks[d->task].vcta : 0,
			label, ark_tmpl_name((int)d->tmpl), d->tmpl, ark_dtype_name((int)d->dtype));
	}
	for (int sm = 0; sm < m->sms; sm++) {
		const struct ark_bell_sm *d = &b->sm[sm];
		if (d->where != ARK_WHERE_BAD_INDEX)
			continue;
		ark_task_label(m, g, (int)d->task, label, sizeof label);
		if (d->tmpl == ARK_T_KV_APPEND)
			fprintf(f, "  GPU %d SM %d: task %u (%s): appends its rows at position %d, outside 0 to %d; the "
				"cache was not written\n", g, sm, d->task, label, (int)d->seen, (int)d->want - 1);
		else
			fprintf(f, "  GPU %d SM %d: task %u (%s): row %u of its output has index %d, outside 0 to %d; the row "
				"was written as zeros\n", g, sm, d->task, label, d->counter, (int)d->seen, (int)d->want - 1);
	}
	for (int sm = 0; sm < m->sms; sm++) {
		const struct ark_bell_sm *d = &b->sm[sm];
		if (d->where != ARK_WHERE_COUNTER)
			continue;
		if (shown >= ARK_DIAG_MAX_SMS) {
			hidden++;
			continue;
		}
		const struct ark_wait *w = task_wait(p, d->task, d->counter);
		ark_task_label(m, g, (int)d->task, label, sizeof label);
		fprintf(f, "  GPU %d SM %d: task %u (vCTA %u, %s) waits on counter %u: want %u, have %u", g, sm,
			d->task, d->task < (uint32_t)p->n_tasks ? p->tasks[d->task].vcta : 0, label, d->counter,
			d->want, d->seen);
		if (w)
			fprintf(f, " (%d of the %u signals it needs in iteration %u)",
				(int)(d->seen - s->opts.counter_base - (d->iter - 1) * w->per_iter), w->need, d->iter);
		fputc('\n', f);
		shown++;
	}
	if (hidden)
		fprintf(f, "  GPU %d: %d more SMs wait on counters\n", g, hidden);
	for (int sm = 0; sm < m->sms; sm++) {
		const struct ark_bell_sm *d = &b->sm[sm];
		if (d->where == ARK_WHERE_PACKETS) {
			ark_task_label(m, g, (int)d->task, label, sizeof label);
			fprintf(f, "  GPU %d SM %d: task %u (%s) was polling packets of iteration %u\n", g, sm, d->task,
				label, d->iter);
		}
	}
	const struct ark_bell_sm *d0 = &b->sm[0];
	if (d0->where == ARK_WHERE_SUBMIT)
		fprintf(f, "  GPU %d SM 0: waits for the host to submit iteration %u (bell has %u)\n", g,
			d0->want, d0->seen);
	if (d0->where == ARK_WHERE_DONE)
		fprintf(f, "  GPU %d SM 0: waits for every SM to finish iteration %u (%u of %d done)\n", g,
			d0->iter, d0->seen - s->opts.counter_base - (d0->iter - 1) * (uint32_t)m->sms, m->sms);
	if (d0->where == ARK_WHERE_BAD_SUBMIT)
		fprintf(f, "  GPU %d SM 0: after iteration %u the host submitted iteration %u, not %u\n", g, d0->iter,
			d0->seen, d0->want);
	char list[ARK_MAX_SMS * 6];
	if (list_sms(list, sizeof list, b, m->sms, ARK_WHERE_ITER, 1, iter))
		fprintf(f, "  GPU %d SMs that finished iteration %u: %s\n", g, iter, list);
	if (list_sms(list, sizeof list, b, m->sms, ARK_WHERE_ITER, 0, iter))
		fprintf(f, "  GPU %d SMs that never saw iteration %u: %s\n", g, iter, list);
	if (list_sms(list, sizeof list, b, m->sms, ARK_WHERE_NONE, 0, iter))
		fprintf(f, "  GPU %d SMs without a record (stuck inside a tile?): %s\n", g, list);
	int ex = exited(s, g);
	if (ex < m->sms)
		fprintf(f, "  GPU %d: only %d of %d CTAs left after the abort\n", g, ex, m->sms);
}

/* Aborts every GPU's loop kernel, waits for the CTAs to leave and returns ARK_ERR with the error
 * (also kept for ark_session_diagnosis): the headline, then where every SM was. */
static int abort_and_diagnose(struct ark_session *s, uint32_t iter, const char *headline)
{
	const struct ark_model *m = s->m;
	char *text = NULL;
	size_t n = 0;

	for (int g = 0; g < m->gpus; g++)
		bell_store(&s->g[g].bell->abort, 1);
	wait_finished(s, ARK_ABORT_WAIT_MS);
	s->dead = 1;
	FILE *f = open_memstream(&text, &n);
	if (!f)
		return ark_error("%s", headline);
	fprintf(f, "%s; the loop kernels were aborted:\n", headline);
	for (int g = 0; g < m->gpus; g++)
		diagnose_gpu(f, s, g, iter);
	fclose(f);
	if (n && text[n - 1] == '\n')
		text[n - 1] = 0;
	free(s->diag);
	s->diag = text;
	return ark_error("%s", text);
}

/* A GPU whose loop kernel raised its own abort flag (a task it could not run, a submit out of
 * order), or -1. The host sets the flag only in abort_and_diagnose and on close, after which no
 * iteration runs. */
static int device_abort(const struct ark_session *s)
{
	for (int g = 0; g < s->m->gpus; g++)
		if (bell_load(&s->g[g].bell->abort))
			return g;
	return -1;
}

/* The first SM of GPU g that met an index out of range, or -1. */
static int bad_index_sm(const struct ark_session *s, int g)
{
	for (int sm = 0; sm < s->m->sms; sm++)
		if (bell_load(&s->g[g].bell->sm[sm].where) == ARK_WHERE_BAD_INDEX)
			return sm;
	return -1;
}

/* Why GPU g's kernel raised its abort flag, for the headline. */
static void device_abort_why(const struct ark_session *s, int g, uint32_t iter, char *buf, size_t size)
{
	const struct ark_bell_sm *d0 = &s->g[g].bell->sm[0];
	if (bell_load(&d0->where) == ARK_WHERE_BAD_SUBMIT)
		snprintf(buf, size, "iteration %u: GPU %d's loop kernel was submitted iteration %u after %u (the "
			 "host skipped one)", iter, g, d0->seen, d0->iter);
	else if (bad_index_sm(s, g) >= 0) {
		const struct ark_bell_sm *d = &s->g[g].bell->sm[bad_index_sm(s, g)];
		char label[256];
		ark_task_label(s->m, g, (int)bell_load(&d->task), label, sizeof label);
		if (bell_load(&d->tmpl) == ARK_T_KV_APPEND)
			snprintf(buf, size, "iteration %u: GPU %d: %s at position %d, outside 0 to %d (the rows would "
				 "not fit in the cache)", iter, g, label, (int)bell_load(&d->seen), (int)bell_load(&d->want) - 1);
		else
			snprintf(buf, size, "iteration %u: GPU %d: %s read index %d, outside 0 to %d", iter, g, label,
				 (int)bell_load(&d->seen), (int)bell_load(&d->want) - 1);
	} else
		snprintf(buf, size, "iteration %u: GPU %d met a task it cannot run", iter, g);
}

static void ring(struct ark_session *s, uint32_t word)
{
	for (int g = 0; g < s->m->gpus; g++)
		bell_store(&s->g[g].bell->submit, word);
}

static void spin_us(double us)
{
	for (double until = now_ms() + us * 1e-3; now_ms() < until;)
		;
}

/* Waits until every GPU completed iteration `iter`, under the watchdog. */
static int wait_complete(struct ark_session *s, uint32_t iter)
{
	const struct ark_model *m = s->m;
	double t0 = now_ms(), last_query = t0;
	for (int g = 0; g < m->gpus; g++) {
		const uint32_t *c = &s->g[g].bell->complete;
		for (unsigned spins = 1; bell_load(c) != iter; spins++) {
			if (spins % 1024)
				continue;
			double t = now_ms();
			if (t - last_query > 20) {
				/* a kernel that faulted never completes: tell it apart from a hang */
				last_query = t;
				char why[400];
				if (s->use_dma && __atomic_load_n(&s->dma.failed, __ATOMIC_ACQUIRE)) {
					/* a rejected request never raises its flag: abort now, not at the timeout */
					snprintf(why, sizeof why, "iteration %u: the DMA engine failed: %s", iter,
						 dma_engine_last_error(&s->dma));
					return abort_and_diagnose(s, iter, why);
				}
				cudaError_t e = cudaStreamQuery(s->g[g].loop);
				int by = device_abort(s); /* after the query: a kernel that aborted set it before it ended */
				if (by >= 0) {
					device_abort_why(s, by, iter, why, sizeof why);
					return abort_and_diagnose(s, iter, why);
				}
				if (e != cudaErrorNotReady && bell_load(c) != iter) {
					s->dead = 1;
					return ark_error("GPU %d: the loop kernel ended during iteration %u: %s", g, iter,
							 e == cudaSuccess ? "it left (stopped or aborted)"
									  : cudaGetErrorString(e));
				}
			}
			if (t - t0 > s->opts.timeout_ms) {
				char why[160];
				snprintf(why, sizeof why, "iteration %u did not complete within %.0f ms on GPU %d", iter,
					 t - t0, g);
				return abort_and_diagnose(s, iter, why);
			}
		}
	}
	return ARK_OK;
}

int ark_session_run_ex(struct ark_session *s, unsigned flags)
{
	if (s->dead)
		return ark_error("the loop kernels were aborted: close the session");
	if (s->iter + 3 >= ARK_ITER_LIMIT)
		return ark_error("iteration limit reached: open a new session");
	int empty = (flags & ARK_RUN_EMPTY) != 0;
	int trace = !empty && (flags & ARK_RUN_TRACE) && s->opts.trace;
	if (s->srt) {
		if (flags & (ARK_RUN_TEST_EARLY | ARK_RUN_TEST_SKIP))
			return ark_error("the doorbell test hooks need the loop kernel (--backend loop)");
		if (ark_srt_run(s->srt, trace, empty, s->opts.timeout_ms)) {
			s->dead = 1;
			return ARK_ERR;
		}
		s->iter++;
		if (!empty)
			s->traced = trace;
		return ARK_OK;
	}
	uint32_t iter = ++s->iter;
	uint32_t word = (trace ? ARK_SUBMIT_TRACE : 0) | (empty ? ARK_SUBMIT_EMPTY : 0);

	if (flags & ARK_RUN_TEST_SKIP)
		iter = ++s->iter;
	ring(s, iter | word);
	if (flags & ARK_RUN_TEST_EARLY) { /* a host bug on purpose: i + 1 while i may still run */
		spin_us(ARK_EARLY_RING_US);
		iter = ++s->iter;
		ring(s, iter | word);
	}
	if (wait_complete(s, iter))
		return ARK_ERR;
	if (s->use_dma && __atomic_load_n(&s->dma.failed, __ATOMIC_ACQUIRE)) {
		s->dead = 1;
		return ark_error("iteration %u: the DMA engine failed: %s", iter, dma_engine_last_error(&s->dma));
	}
	if (!empty)
		s->traced = trace;
	return ARK_OK;
}

int ark_session_run_abort(struct ark_session *s, double us, int *completed)
{
	*completed = 0;
	if (s->dead)
		return ark_error("the loop kernels were aborted: close the session");
	if (s->srt)
		return ark_error("an abort needs the loop kernel (--backend loop); op kernels run to their end");
	uint32_t iter = ++s->iter;
	char why[160];
	ring(s, iter);
	spin_us(us);
	*completed = 1;
	for (int g = 0; g < s->m->gpus; g++)
		*completed &= bell_load(&s->g[g].bell->complete) == iter;
	snprintf(why, sizeof why, "iteration %u aborted by the host %.0f us after its submit", iter, us);
	abort_and_diagnose(s, iter, why);
	for (int g = 0; g < s->m->gpus; g++)
		if (!gpu_finished(s, g))
			return ark_error("%s; GPU %d's loop kernel did not leave", why, g);
	return ARK_OK;
}

/* ---- generation ------------------------------------------------------------------------------- */

/* The tokens GPU 0 stored since `seen` (up to gen_count) through on_token; the new count. *stop set
 * when on_token asks to stop. */
static uint32_t gen_deliver(struct ark_session *s, uint32_t seen, int32_t *tokens, ark_token_fn *on_token, void *ctx,
			    int *stop)
{
	const struct ark_gpu *G = &s->g[0];
	uint32_t n = bell_load(&G->bell->gen_count);
	for (; seen < n; seen++) {
		int32_t tok = __atomic_load_n(&G->gen_tokens[seen], __ATOMIC_RELAXED); /* after the acquire */
		if (tokens)
			tokens[seen] = tok;
		if (on_token && on_token(ctx, seen, tok))
			*stop = 1;
	}
	return seen;
}

/* on_token asked to stop during a generation: the kernel's stop (as close does), seen by SM 0 between
 * two steps within ARK_SUBMIT_ABORT_EVERY of them; abort if it does not leave. */
static int gen_stop(struct ark_session *s, uint32_t step)
{
	bell_store(&s->g[0].bell->stop, 1);
	int left = wait_finished(s, ARK_STOP_WAIT_MS);
	if (!left) {
		bell_store(&s->g[0].bell->abort, 1);
		left = wait_finished(s, ARK_STOP_WAIT_MS);
	}
	s->dead = 1;
	return ark_error("generation stopped by the host after step %u%s; close the session", step,
			 left ? "" : " (the loop kernel did not leave)");
}

int ark_session_generate(struct ark_session *s, const struct ark_gen_req *q, int32_t *tokens, uint32_t *n_steps,
			 ark_token_fn *on_token, void *ctx)
{
	const struct ark_model *m = s->m;
	*n_steps = 0;
	if (s->dead)
		return ark_error("the loop kernels were aborted: close the session");
	if (s->srt)
		return ark_error("generation needs the loop kernel (--backend loop)");
	if (!m->token_state)
		return ark_error("model '%s' has no token state (the model file's top-level 'token')", m->name);
	if (m->gpus != 1)
		return ark_error("generation runs on one GPU; model '%s' has %d", m->name, m->gpus);
	if (q->steps < 1 || q->steps > ARK_GEN_CAP)
		return ark_error("generation of %u steps: expected 1 to %d", q->steps, ARK_GEN_CAP);
	if (q->n_prompt > q->steps)
		return ark_error("a prompt of %u ids does not fit in %u steps", q->n_prompt, q->steps);
	if (s->iter + q->steps + 3 >= ARK_ITER_LIMIT)
		return ark_error("iteration limit reached: open a new session");
	struct ark_gpu *G = &s->g[0];
	if (q->n_prompt) {
		if (CUDA_FAILS(0, cudaSetDevice(0)) ||
		    CUDA_FAILS(0, cudaMemcpyAsync(G->gen_prompt, q->prompt, q->n_prompt * sizeof(int32_t),
						  cudaMemcpyHostToDevice, G->side)) ||
		    CUDA_FAILS(0, cudaStreamSynchronize(G->side)))
			return ARK_ERR;
	}
	struct ark_bell *b = G->bell;
	uint32_t first = s->iter + 1, seen = 0;
	b->gen_prompt = q->n_prompt;
	b->gen_eos = q->eos;
	b->gen_flags = q->has_eos ? ARK_GEN_EOS : 0;
	b->gen_count = 0; /* the device writes it only after the submit below */
	b->gen_steps = q->steps;
	ring(s, first | ARK_SUBMIT_GEN); /* a release store: the fields above before it */
	double t0 = now_ms(), last_progress = t0, last_query = t0;
	int stop = 0;
	for (unsigned spins = 1;; spins++) {
		uint32_t end = bell_load(&b->gen_end);
		if ((int32_t)(end - first) >= 0 && bell_load(&b->complete) == end) {
			seen = gen_deliver(s, seen, tokens, on_token, ctx, &stop);
			if (seen != end - first + 1) {
				s->dead = 1;
				return ark_error("generation: %u tokens stored for %u steps", seen, end - first + 1);
			}
			s->iter = end;
			break;
		}
		uint32_t was = seen;
		seen = gen_deliver(s, seen, tokens, on_token, ctx, &stop);
		if (stop)
			return gen_stop(s, seen);
		if (seen != was)
			last_progress = now_ms();
		if (spins % 1024)
			continue;
		double t = now_ms();
		uint32_t iter = first + seen; /* the step it is in */
		if (t - last_query > 20) {
			last_query = t;
			char why[400];
			cudaError_t e = cudaStreamQuery(G->loop);
			int by = device_abort(s);
			if (by >= 0) {
				s->iter = iter;
				device_abort_why(s, by, iter, why, sizeof why);
				return abort_and_diagnose(s, iter, why);
			}
			if (e != cudaErrorNotReady) {
				s->dead = 1;
				return ark_error("GPU 0: the loop kernel ended during step %u of a generation: %s", seen,
						 e == cudaSuccess ? "it left (stopped or aborted)" : cudaGetErrorString(e));
			}
		}
		if (t - last_progress > s->opts.timeout_ms) {
			char why[200];
			snprintf(why, sizeof why, "generation: step %u (iteration %u) did not complete within %.0f ms", seen,
				 iter, t - last_progress);
			s->iter = iter;
			return abort_and_diagnose(s, iter, why);
		}
	}
	b->gen_steps = 0; /* the next submit is one iteration again */
	*n_steps = seen;
	return ARK_OK;
}

int ark_session_run(struct ark_session *s)
{
	return ark_session_run_ex(s, s->opts.trace ? ARK_RUN_TRACE : 0);
}

unsigned ark_session_iterations(const struct ark_session *s)
{
	return s->iter;
}

const char *ark_session_diagnosis(const struct ark_session *s)
{
	return s->diag ? s->diag : "";
}

const char *ark_session_gpu_name(const struct ark_session *s, int g)
{
	return g >= 0 && g < s->m->gpus ? s->g[g].name : "?";
}

char *ark_session_arena(const struct ark_session *s, int g)
{
	return g >= 0 && g < s->m->gpus ? s->g[g].arena : NULL;
}

uint32_t *ark_session_counters(const struct ark_session *s, int g)
{
	return g >= 0 && g < s->m->gpus ? s->g[g].counters : NULL;
}

/* ---- trace ------------------------------------------------------------------------------------ */

int ark_session_trace(struct ark_session *s, const char *path)
{
	const struct ark_model *m = s->m;
	unsigned long long *host[ARK_MAX_GPUS] = {0};
	int rc = ARK_ERR;

	if (!s->opts.trace)
		return ark_error("tracing was not enabled when the session was opened");
	if (!s->traced)
		return ark_error("no traced iteration to write");
	for (int g = 0; g < m->gpus; g++) {
		size_t n = 2 * (size_t)m->tables[g].n_tasks * sizeof **host;
		host[g] = malloc(n ? n : 1);
		if (!host[g]) {
			ark_error("out of memory");
			goto out;
		}
		if (!n)
			continue;
		if (CUDA_FAILS(g, cudaSetDevice(g)) ||
		    CUDA_FAILS(g, cudaMemcpyAsync(host[g], s->g[g].trace, n, cudaMemcpyDeviceToHost, s->g[g].side)) ||
		    CUDA_FAILS(g, cudaStreamSynchronize(s->g[g].side)))
			goto out;
	}
	FILE *f = fopen(path, "w");
	if (!f) {
		ark_error("%s: cannot write: %m", path);
		goto out;
	}
	rc = ark_trace_write(f, m, (const unsigned long long *const *)host);
	if (fclose(f) && rc == ARK_OK)
		rc = ark_error("%s: write failed: %m", path);
out:
	for (int g = 0; g < m->gpus; g++)
		free(host[g]);
	return rc;
}
