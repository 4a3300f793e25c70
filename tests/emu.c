/* emu.c: an emulator of the emitted tables (emu.h). Runs the plan as the loop kernels would,
 * sequentially consistent: every GPU's arena and counter array on the host, every SM walking its
 * list, a task started only once its waits hold (the monotonic targets of the iteration), the
 * communication templates mirrored in C with the op params the emitted file holds, and DMA requests
 * completed chunk by chunk as the engine cuts them (copy, then the flag to its chunk's value) at
 * random later steps. A task that reads or writes bytes of a request that have not arrived yet fails
 * the test. Picks the next SM or DMA completion at random, so different seeds interleave
 * differently. Fails on a deadlock, on a DMA request nobody waited for, and on any output that
 * differs from the CPU reference (outputs are poisoned before every iteration). Iterations run one
 * to its end before the next (emu_run), or overlap as the protocol allows (run_overlap): every
 * GPU's SM 0 publishing the next iteration after its done counter, the host ringing after every
 * GPU completed (or early), the engine copying across iterations, a request's source compared at
 * copy time with what it held when pushed; counters may start near the 32-bit wrap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ark.h"
#include "ark_proto.h"
#include "codegen/emit.h"
#include "dma/dma.h"
#include "emu.h"

struct dma_pending {
	int src, dst;
	uint64_t so, dof, bytes;
	uint32_t flag, value;
	uint32_t chunks, done;       /* chunks of the request, chunks arrived */
	uint64_t arrived;            /* bytes arrived: [0, arrived) of the destination range */
	uint32_t iter;               /* iteration that pushed it */
	unsigned char *snap;         /* the source bytes when it was pushed */
};

struct emu {
	const struct arkgen_result *r;
	int G, sms;
	char *arena[ARK_MAX_GPUS];
	uint32_t *ctr[ARK_MAX_GPUS];
	struct ark_opp *xp;          /* per xopp */
	int *next;                   /* per global SM: position in its list */
	struct dma_pending *q;
	int nq;
	int *ready;                  /* scratch: per global SM */
	uint32_t *it;                /* run_overlap, per global SM: the iteration it is in (0: none yet) */
	uint8_t *fin;                /* run_overlap, per global SM: its list of that iteration finished */
	int *ev, cap_ev;             /* run_overlap: the events possible, pairs (kind, argument) */
	long long overlapped;        /* run_overlap: steps taken in an iteration another GPU is not in */
	uint64_t rng;
	uint32_t base;               /* every counter's first value (struct emu_opts.ctr_base) */
	jmp_buf jb;                  /* emu_fail returns to emu_run_ex */
	char msg[1024];
};

/* Ends the run with a message (emu_run_ex returns -1). */
static _Noreturn void emu_fail(struct emu *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static _Noreturn void emu_fail(struct emu *e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	va_end(ap);
	longjmp(e->jb, 1);
}

static uint32_t rnd(struct emu *e)
{
	e->rng = e->rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(e->rng >> 33);
}

/* Tensor t, or when t is never stored (an activation runs on it inside the vCTA that computes it),
 * the output of that activation. */
static const struct ark_tensor *stored_result(const struct ark_op *O, int n_ops, const struct ark_tensor *T, int t)
{
	for (int m = 0; m < n_ops && T[t].offset == ARK_NOT_STORED; m++)
		if (O[m].n_in == 1 && O[m].in[0] == t)
			return &T[O[m].out[0]];
	return &T[t];
}

/* The activations a SUM may apply (templates/ark_dtype.cuh's ark_act). */
static float emu_act(int act, float x)
{
	switch (act) {
	case ARK_OP_RELU: return x > 0 ? x : 0;
	case ARK_OP_GELU: return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
	case ARK_OP_GELU_TANH: return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
	case ARK_OP_TANH: return tanhf(x);
	case ARK_OP_SILU: return x / (1.0f + expf(-x));
	case ARK_OP_SIGMOID: return 1.0f / (1.0f + expf(-x));
	default: return x;
	}
}

/* Packet w of the packet buffer at byte `at` of GPU g's arena (op_comm.cuh: {word, iteration}). */
static uint64_t emu_packet(const struct emu *e, int g, uint64_t at, uint64_t w)
{
	uint64_t q;
	memcpy(&q, e->arena[g] + at + 8 * w, 8);
	return q;
}

static int task_ready(const struct emu *e, int v, uint32_t iter)
{
	const struct schedule *p = &e->r->schedule[0];
	for (int64_t w = p->wait0[v]; w < p->wait0[v + 1]; w++) {
		int c = (int)p->waits[w].counter;
		uint32_t want = e->base + (iter - 1) * p->waits[w].per_iter + p->waits[w].need;
		if ((int32_t)(e->ctr[p->ctr_gpu[c]][ARK_CTR__FIRST + p->ctr_index[c]] - want) < 0)
			return 0;
	}
	const struct vcta *t = &e->r->tiling.v[v];
	if (t->tmpl == ARK_T_SUM_LL) { /* every packet of its words holds this iteration */
		const struct ark_opp *o = &e->xp[t->opp - e->r->tiling.g->n_ops];
		uint64_t es = (uint64_t)ark_dtype_size(o->dtype);
		for (uint32_t s = 0; s < o->K; s++)
			for (uint64_t w = t->k0 * es / 4; 4 * w < t->k1 * es; w++)
				if (emu_packet(e, t->gpu, o->in[1] + s * o->in[2], w) >> 32 != iter)
					return 0;
	}
	return 1;
}

/* Fails if a region of vCTA v touches destination bytes of a DMA request that have not arrived. */
static void check_arrived(struct emu *e, int v, const struct region *r)
{
	const struct tiling *s = &e->r->tiling;
	int gpu = e->r->graph.tensors[r->tensor].gpu;
	uint64_t es = (uint64_t)ark_dtype_size(e->r->graph.tensors[r->tensor].dtype), base = s->offset[r->tensor];
	for (int k = 0; k < e->nq; k++) {
		const struct dma_pending *d = &e->q[k];
		if (d->dst != gpu)
			continue;
		for (int64_t row = r->r0; row < r->r1; row++) {
			uint64_t a = base + ((uint64_t)row * (uint64_t)s->cols[r->tensor] + (uint64_t)r->c0) * es;
			uint64_t b = a + (uint64_t)(r->c1 - r->c0) * es;
			if (a < d->dof + d->bytes && d->dof + d->arrived < b)
				emu_fail(e, "vCTA %d touches bytes [%llu, %llu) of GPU %d before they arrived (request "
					 "[%llu, %llu) of iteration %u, %llu bytes in)", v, (unsigned long long)a,
					 (unsigned long long)b, gpu, (unsigned long long)d->dof,
					 (unsigned long long)(d->dof + d->bytes), d->iter, (unsigned long long)d->arrived);
		}
	}
}

/* The tiles of graph ops the emulator knows (opp < n_ops): a copy within a GPU and the updates of
 * state (assign, advance, kv_append), from the graph, the tiling and the memory plan. */
static void run_op_task(struct emu *e, int v)
{
	const struct tiling *s = &e->r->tiling;
	const struct vcta *t = &s->v[v];
	const struct op *o = &s->g->ops[t->op];
	char *a = e->arena[t->gpu];
	const uint64_t *off = s->offset;
	uint64_t es = (uint64_t)ark_dtype_size(s->g->tensors[o->in[0]].dtype);
	switch (t->tmpl) {
	case ARK_T_COPY:
		assert_true(o->kind == ARK_OP_COPY && s->g->tensors[o->in[0]].gpu == t->gpu);
		memcpy(a + off[o->out[0]] + t->k0 * es, a + off[o->in[0]] + t->k0 * es, (t->k1 - t->k0) * es);
		break;
	case ARK_T_ASSIGN:
		if (o->kind == ARK_OP_ADVANCE) {
			for (uint32_t i = t->k0; i < t->k1; i++) {
				uint32_t x;
				memcpy(&x, a + off[o->in[0]] + 4 * i, 4);
				x += (uint32_t)o->by;
				memcpy(a + off[o->in[0]] + 4 * i, &x, 4);
			}
		} else {
			memcpy(a + off[o->in[0]] + t->k0 * es, a + off[o->in[1]] + t->k0 * es, (t->k1 - t->k0) * es);
		}
		break;
	case ARK_T_KV_APPEND: {
		int32_t pos;
		memcpy(&pos, a + off[o->in[2]], 4);
		int64_t L = s->rows[o->in[0]], T = s->rows[o->in[1]], D = s->cols[o->in[1]];
		if (pos < 0 || pos + T > L)
			emu_fail(e, "vCTA %d (kv_append '%s'): position %d, outside 0 to %lld", v, o->name, pos, (long long)(L - T));
		for (uint32_t r = t->m0; r < t->m1; r++)
			memcpy(a + off[o->in[0]] + ((uint64_t)(pos + (int64_t)r) * (uint64_t)D + t->n0) * es,
			       a + off[o->in[1]] + ((uint64_t)r * (uint64_t)D + t->n0) * es, (t->n1 - t->n0) * es);
		break;
	}
	default:
		emu_fail(e, "vCTA %d: template %d of op '%s' not emulated", v, t->tmpl, o->name);
	}
}

static void run_task(struct emu *e, int v, uint32_t iter)
{
	const struct tiling *s = &e->r->tiling;
	const struct schedule *p = &e->r->schedule[0];
	const struct vcta *t = &s->v[v];
	int gpu = t->gpu;
	if (t->opp < s->g->n_ops) { /* a graph op's tile: the few the emulator knows */
		run_op_task(e, v);
		int c = p->signal[v];
		if (c >= 0)
			e->ctr[p->ctr_gpu[c]][ARK_CTR__FIRST + p->ctr_index[c]]++;
		return;
	}
	const struct ark_opp *o = &e->xp[t->opp - s->g->n_ops];
	uint64_t es = (uint64_t)ark_dtype_size(o->dtype);
	char *a = e->arena[gpu];
	for (int i = 0; i < t->n_reads; i++)
		check_arrived(e, v, &t->reads[i]);
	if (t->write.r0 < t->write.r1)
		check_arrived(e, v, &t->write);
	switch (t->tmpl) {
	case ARK_T_COPY:
		assert_true(o->flags & ARK_OPP_PUSH);
		memcpy(e->arena[o->peer] + o->out + t->k0 * es, a + o->in[0] + t->k0 * es, (t->k1 - t->k0) * es);
		break;
	case ARK_T_DMA: {
		uint64_t bytes = (t->k1 - t->k0) * es;
		uint32_t chunks = (uint32_t)dma_chunk_count(bytes, ARK_DMA_CHUNK_BYTES, ARK_DMA_CHUNK_MAX_BYTES);
		int c = p->signal[v];
		assert_true(c >= 0 && p->ctr_gpu[c] == o->peer);
		e->q = realloc(e->q, (size_t)(e->nq + 1) * sizeof *e->q);
		unsigned char *snap = malloc(bytes + 1);
		memcpy(snap, a + o->in[0] + t->k0 * es, bytes);
		e->q[e->nq++] = (struct dma_pending){gpu, o->peer, o->in[0] + t->k0 * es, o->out + t->k0 * es, bytes,
						     ARK_CTR__FIRST + (uint32_t)p->ctr_index[c], e->base + iter * chunks,
						     chunks, 0, 0, iter, snap};
		return; /* no signal: the engine raises the flag */
	}
	case ARK_T_SEND_LL: /* packets {word, iteration}; a partial last word is zero-padded */
		for (uint64_t w = t->k0 * es / 4; 4 * w < t->k1 * es; w++) {
			uint32_t word = 0;
			memcpy(&word, a + o->in[0] + 4 * w, 4 * w + 4 <= t->k1 * es ? 4 : 2);
			uint64_t q = word | (uint64_t)iter << 32;
			memcpy(e->arena[o->peer] + o->out + 8 * w, &q, 8);
		}
		break;
	case ARK_T_SUM:
	case ARK_T_SUM_LL:
		for (uint64_t i = t->k0; i < t->k1; i++) { /* in GPU order; in[0] is GPU `splits`' own */
			float acc = 0;
			for (int j = 0; j <= o->K; j++) {
				uint64_t at = j == (int)o->splits ? o->in[0]
								  : o->in[1] + (uint64_t)(j - (j > (int)o->splits)) * o->in[2];
				float x;
				if (t->tmpl == ARK_T_SUM_LL && j != (int)o->splits) { /* element i of its packet */
					uint32_t word = (uint32_t)emu_packet(e, gpu, at, i * es / 4);
					x = ark_get((const char *)&word, o->dtype, (int64_t)(i * es % 4 / es));
				} else {
					x = ark_get(a + at, o->dtype, (int64_t)i);
				}
				acc = j ? acc + x : x;
			}
			ark_set(a + o->out, o->dtype, (int64_t)i, emu_act(o->act, acc));
		}
		break;
	case ARK_T_GATHER: {
		uint64_t seg = (uint64_t)o->N * es, K = (uint64_t)o->K, own = o->splits;
		for (uint64_t b = t->k0 * es; b < t->k1 * es; b += es) {
			uint64_t ob = b / (K * seg), r = b % (K * seg), j = r / seg, w = r % seg;
			const char *src = j == own ? a + o->in[0] : a + o->in[1] + (j - (j > own)) * o->in[2];
			memcpy(a + o->out + b, src + ob * seg + w, es);
		}
		break;
	}
	case ARK_T_NOP:
		break;
	default:
		emu_fail(e, "vCTA %d: template %d not emulated", v, t->tmpl);
	}
	int c = p->signal[v];
	if (c >= 0)
		e->ctr[p->ctr_gpu[c]][ARK_CTR__FIRST + p->ctr_index[c]]++;
}

/* Host copies of the model's tensors and ops, for the CPU reference. */
static void ref_tables(const struct arkgen_result *r, struct ark_tensor *T, struct ark_op *O)
{
	const struct graph *g = &r->graph;
	for (int t = 0; t < g->n_tensors; t++) {
		const struct tensor *x = &g->tensors[t];
		T[t] = (struct ark_tensor){x->name, (uint8_t)x->dtype, (uint8_t)x->role, (uint8_t)x->ndim, (uint8_t)x->gpu,
					   {0}, r->tiling.offset[t], tensor_bytes(x), 0};
		memcpy(T[t].shape, x->shape, sizeof T[t].shape);
	}
	for (int k = 0; k < g->n_ops; k++) {
		const struct op *o = &g->ops[g->order[k]];
		O[k] = (struct ark_op){o->name, (uint16_t)o->kind, (uint8_t)o->n_in, (uint8_t)o->n_out, (uint8_t)o->gpu, 0,
				       (uint8_t)o->transport, (int8_t)o->axis, {0}, {0}, 1.0f, 0.0f, o->line,
				       o->heads, o->kv_heads, o->causal, (float)o->scale,
				       o->kind == ARK_OP_ADVANCE ? o->by : o->start, {o->dims[0], o->dims[1]},
				       o->head_dim, o->rotary_dim, o->style, (float)o->base};
		memcpy(O[k].in, o->in, sizeof O[k].in);
		memcpy(O[k].out, o->out, sizeof O[k].out);
	}
}

/* The state of one emulation beyond struct emu: the CPU reference's tables and buffers. */
struct ref {
	struct ark_tensor *T;
	struct ark_op *O;
	void **buf;                  /* per tensor */
	uint32_t iter;               /* iteration whose reference buf holds (0: none) */
};

static void emu_init(struct emu *e, struct ref *ref, const struct arkgen_result *r, uint64_t seed, uint32_t base)
{
	const struct tiling *s = &r->tiling;
	const struct schedule *p = &r->schedule[0];
	const struct graph *g = &r->graph;
	memset(e, 0, sizeof *e);
	e->r = r, e->G = g->gpus, e->sms = p->pl.sms / g->gpus, e->rng = seed, e->base = base;
	for (int d = 0; d < e->G; d++) {
		e->arena[d] = calloc(1, s->arena[d] + 1);
		e->ctr[d] = calloc(ARK_CTR__FIRST + (size_t)p->gpu_counters[d], sizeof(uint32_t));
		for (int c = 0; c < ARK_CTR__FIRST + p->gpu_counters[d]; c++)
			e->ctr[d][c] = base;
	}
	e->xp = calloc((size_t)s->n_comm + 1, sizeof *e->xp);
	for (int x = 0; x < s->n_comm; x++)
		emit_comm_opp_params(s, x, &e->xp[x]);
	e->next = calloc((size_t)p->pl.sms, sizeof *e->next);
	e->ready = calloc(4 * ((size_t)p->pl.sms + (size_t)e->G + 1), sizeof *e->ready);
	ref->T = calloc((size_t)g->n_tensors, sizeof *ref->T);
	ref->O = calloc((size_t)g->n_ops, sizeof *ref->O);
	ref->buf = calloc((size_t)g->n_tensors, sizeof *ref->buf);
	ref_tables(r, ref->T, ref->O);
	for (int t = 0; t < g->n_tensors; t++)
		ref->buf[t] = calloc(1, ref->T[t].bytes + 1);
}

static void emu_free(struct emu *e, struct ref *ref)
{
	for (int t = 0; t < e->r->graph.n_tensors; t++)
		free(ref->buf[t]);
	for (int d = 0; d < e->G; d++)
		free(e->arena[d]), free(e->ctr[d]);
	for (int k = 0; k < e->nq; k++)
		free(e->q[k].snap);
	free(ref->buf), free(ref->T), free(ref->O), free(e->xp), free(e->next), free(e->q), free(e->ready);
	free(e->it), free(e->fin), free(e->ev);
}

/* Fresh random inputs of iteration iter (also into the reference's buffers), poisoned outputs: of
 * GPU gpu's tensors, or of every GPU's when gpu < 0. */
static void fresh_inputs(struct emu *e, struct ref *ref, uint64_t seed, uint32_t iter, int gpu)
{
	const struct ark_tensor *T = ref->T;
	for (int t = 0; t < e->r->graph.n_tensors; t++) {
		if (gpu >= 0 && T[t].gpu != gpu)
			continue;
		char *dev = e->arena[T[t].gpu] + T[t].offset;
		if (T[t].role == ARK_ROLE_INPUT) {
			ark_fill_random(ref->buf[t], T[t].dtype, ark_tensor_elems(&T[t]), seed * 977 + iter * 131 + (uint64_t)t,
					1.0f);
			memcpy(dev, ref->buf[t], T[t].bytes);
		} else if (T[t].role == ARK_ROLE_OUTPUT) {
			memset(dev, 0xff, T[t].bytes);
		}
	}
}

/* The DMA engine serves the oldest request of the (src, dst) pair of request k first, one chunk at
 * a time: copy, then the flag to the chunk's value. */
static void dma_step(struct emu *e, int k)
{
	struct dma_pending pk = e->q[k];
	k = 0;
	while (e->q[k].src != pk.src || e->q[k].dst != pk.dst)
		k++;
	struct dma_pending *d = &e->q[k];
	uint64_t end = dma_chunk_start(d->done + 1, ARK_DMA_CHUNK_BYTES, ARK_DMA_CHUNK_MAX_BYTES);
	if (end > d->bytes)
		end = d->bytes;
	if (memcmp(e->arena[d->src] + d->so + d->arrived, d->snap + d->arrived, end - d->arrived))
		emu_fail(e, "bytes [%llu, %llu) of GPU %d, the source of a DMA request of iteration %u, were written before "
			 "the engine copied them (a write after read across iterations)",
			 (unsigned long long)(d->so + d->arrived), (unsigned long long)(d->so + end), d->src, d->iter);
	memcpy(e->arena[d->dst] + d->dof + d->arrived, e->arena[d->src] + d->so + d->arrived, end - d->arrived);
	d->arrived = end;
	d->done++;
	e->ctr[d->dst][d->flag] = d->value - (d->chunks - d->done);
	if (d->done == d->chunks) {
		assert_int_equal(d->arrived, d->bytes);
		free(d->snap);
		memmove(&e->q[k], &e->q[k + 1], (size_t)(e->nq - k - 1) * sizeof *e->q);
		e->nq--;
	}
}

/* One iteration: a ready SM's next task or a DMA chunk at random, until every task ran and every
 * request arrived. */
static void run_iteration(struct emu *e, uint32_t iter)
{
	const struct schedule *p = &e->r->schedule[0];
	memset(e->next, 0, (size_t)p->pl.sms * sizeof *e->next);
	int left = e->r->tiling.n_vcta;
	int *ready = e->ready;
	while (left > 0 || e->nq > 0) {
		int nr = 0;
		for (int q = 0; q < p->pl.sms; q++) {
			int i = p->pl.begin[q] + e->next[q];
			if (i < p->pl.begin[q + 1] && task_ready(e, p->pl.list[i], iter))
				ready[nr++] = q;
		}
		if (nr == 0 && e->nq == 0) {
			emu_fail(e, "deadlock in iteration %u: %d vCTAs left, none ready", iter, left);
		}
		uint32_t pick = rnd(e) % (uint32_t)(nr + e->nq);
		if (pick < (uint32_t)nr) {
			int q = ready[pick];
			run_task(e, p->pl.list[p->pl.begin[q] + e->next[q]++], iter);
			left--;
		} else {
			dma_step(e, (int)(pick - (uint32_t)nr));
		}
		if (left == 0 && e->nq > 0) /* every request is waited for within the iteration */
			emu_fail(e, "iteration %u: every task ran while a DMA request was still copying", iter);
	}
}

/* The CPU reference of iteration iter (its inputs regenerated as fresh_inputs made them). */
static void ref_iteration(struct emu *e, struct ref *ref, uint64_t seed, uint32_t iter)
{
	const struct graph *g = &e->r->graph;
	const struct ark_tensor *T = ref->T;
	if (ref->iter == iter)
		return;
	for (int t = 0; t < g->n_tensors; t++)
		if (T[t].role == ARK_ROLE_INPUT)
			ark_fill_random(ref->buf[t], T[t].dtype, ark_tensor_elems(&T[t]), seed * 977 + iter * 131 + (uint64_t)t,
					1.0f);
	assert_int_equal(ark_ref_run(&(struct ark_model){.n_tensors = g->n_tensors, .tensors = ref->T, .n_ops = g->n_ops,
							.ops = ref->O},
				     ref->buf),
			 0);
	ref->iter = iter;
}

/* The outputs on GPU gpu (every GPU's when gpu < 0) against the CPU reference of iteration iter. */
static void check_gpu_outputs(struct emu *e, struct ref *ref, uint64_t seed, uint32_t iter, int gpu)
{
	const struct graph *g = &e->r->graph;
	const struct ark_tensor *T = ref->T;
	ref_iteration(e, ref, seed, iter);
	for (int t = 0; t < g->n_tensors; t++) {
		if (T[t].role != ARK_ROLE_OUTPUT || (gpu >= 0 && T[t].gpu != gpu))
			continue;
		double rel = 0;
		int64_t bad = 0;
		ark_compare(e->arena[T[t].gpu] + T[t].offset, ref->buf[t], T[t].dtype, ark_tensor_elems(&T[t]), &rel, &bad);
		if (bad || rel > 1e-6 * (T[t].dtype == ARK_FP32 ? 1 : 1e4))
			emu_fail(e, "iteration %u, output %s: rel err %g, %lld NaN/Inf", iter, T[t].name, rel, (long long)bad);
	}
}

/* An all_reduce's outputs (or those of the activation fused after it) identical to the bit, since
 * every GPU sums in the same order: while every GPU holds the same iteration. */
static void check_same_sums(struct emu *e, const struct ref *ref, uint32_t iter)
{
	const struct graph *g = &e->r->graph;
	const struct ark_tensor *T = ref->T;
	const struct ark_op *O = ref->O;
	for (int k = 0; k < g->n_ops; k++)
		for (int i = 1; O[k].kind == ARK_OP_ALL_REDUCE && i < O[k].n_out; i++) {
			const struct ark_tensor *t0 = stored_result(O, g->n_ops, T, O[k].out[0]);
			const struct ark_tensor *ti = stored_result(O, g->n_ops, T, O[k].out[i]);
			if (memcmp(e->arena[t0->gpu] + t0->offset, e->arena[ti->gpu] + ti->offset, (size_t)t0->bytes))
				emu_fail(e, "iteration %u: the sums of '%s' differ between GPU %d and GPU %d", iter, O[k].name,
					 t0->gpu, ti->gpu);
		}
}

/* Overlapping iterations, as the loop kernels and the runtime allow them: SM 0 of a GPU publishes
 * iteration i + 1 once the host rang it and every SM of that GPU counted itself done with i (the
 * done counter); every other SM starts it when it sees it, and may then run its tasks while the SMs
 * of another GPU are still in i, or have not seen i + 1; the DMA engine copies whenever it likes,
 * across iterations. The host writes every GPU's inputs (and poisons its outputs), then rings the
 * GPUs one at a time, once every GPU completed the previous iteration; with early_host it writes
 * GPU g's tensors and rings it as soon as GPU g itself completed (a host that does not wait, as
 * ARK_RUN_TEST_EARLY: the GPUs' own check still holds, nothing orders one GPU's iteration i + 1
 * after another's i). Every GPU's outputs are checked when it completes an
 * iteration. A request that outlives its iteration is not an error by itself: it fails when a task
 * or the host writes its source before the engine copied it, or a task touches its destination
 * before the bytes arrived. */
static void run_overlap(struct emu *e, struct ref *ref, uint64_t seed, uint32_t iters, int early_host)
{
	const struct schedule *p = &e->r->schedule[0];
	const int G = e->G, S = p->pl.sms, sms = e->sms;
	uint32_t rung[ARK_MAX_GPUS] = {0}, pub[ARK_MAX_GPUS] = {0}, complete[ARK_MAX_GPUS] = {0};
	uint32_t *it = e->it = calloc((size_t)S, sizeof *it);
	uint8_t *fin = e->fin = malloc((size_t)S);
	memset(fin, 1, (size_t)S);
	enum { EV_RING, EV_PUBLISH, EV_START, EV_TASK, EV_DMA };
	for (;;) {
		int n = 0;
		if (e->cap_ev < 2 * (2 * G + S + e->nq)) {
			e->cap_ev = 4 * (2 * G + S + e->nq);
			free(e->ev);
			e->ev = malloc((size_t)e->cap_ev * sizeof *e->ev);
		}
		int *ev = e->ev;
		uint32_t least = iters;
		for (int g = 0; g < G; g++)
			least = complete[g] < least ? complete[g] : least;
		for (int g = 0; g < G; g++) {
			if (rung[g] < iters && complete[g] == rung[g] && (early_host || least >= rung[g]))
				ev[n++] = EV_RING, ev[n++] = g;
			if (pub[g] < rung[g] && e->ctr[g][ARK_CTR_DONE] == e->base + pub[g] * (uint32_t)sms)
				ev[n++] = EV_PUBLISH, ev[n++] = g;
		}
		for (int q = 0; q < S; q++) {
			int g = q / sms, i = p->pl.begin[q] + e->next[q];
			if (fin[q] && it[q] < pub[g])
				ev[n++] = EV_START, ev[n++] = q;
			else if (!fin[q] && i < p->pl.begin[q + 1] && task_ready(e, p->pl.list[i], it[q]))
				ev[n++] = EV_TASK, ev[n++] = q;
		}
		for (int k = 0; k < e->nq; k++)
			ev[n++] = EV_DMA, ev[n++] = k;
		if (!n) {
			if (least == iters)
				break;
			emu_fail(e, "deadlock: GPU 0 in iteration %u, no SM can go on", pub[0]);
		}
		uint32_t pick = 2 * (rnd(e) % (uint32_t)(n / 2));
		int kind = ev[pick], arg = ev[pick + 1], q = arg, g = arg / sms;
		switch (kind) {
		case EV_RING: { /* the host writes before it rings: every GPU's tensors before the first */
			int first = 1;
			for (int h = 0; h < G; h++)
				first &= rung[h] <= rung[arg];
			rung[arg]++;
			if (early_host)
				fresh_inputs(e, ref, seed, rung[arg], arg);
			else if (first)
				fresh_inputs(e, ref, seed, rung[arg], -1);
			break;
		}
		case EV_PUBLISH:
			pub[arg] = rung[arg];
			break;
		case EV_START:
			it[q] = pub[g], fin[q] = 0, e->next[q] = 0;
			break;
		case EV_TASK:
			for (int h = 0; h < G; h++)
				if (pub[h] < it[q]) { /* GPU h has not started this iteration */
					e->overlapped++;
					break;
				}
			run_task(e, p->pl.list[p->pl.begin[q] + e->next[q]++], it[q]);
			break;
		case EV_DMA: {
			uint32_t newest = 0;
			for (int h = 0; h < G; h++)
				newest = pub[h] > newest ? pub[h] : newest;
			e->overlapped += e->q[arg].iter < newest; /* copying for an iteration some GPU left */
			dma_step(e, arg);
			break;
		}
		}
		if ((kind == EV_START || kind == EV_TASK) && p->pl.begin[q] + e->next[q] == p->pl.begin[q + 1]) {
			fin[q] = 1; /* end of its list: counts itself done */
			if (++e->ctr[g][ARK_CTR_DONE] == e->base + it[q] * (uint32_t)sms) {
				complete[g] = it[q];
				check_gpu_outputs(e, ref, seed, it[q], g);
				int all = 1;
				for (int h = 0; h < G; h++)
					all &= complete[h] == it[q] && rung[h] == it[q];
				if (all)
					check_same_sums(e, ref, it[q]);
			}
		}
	}
}

int emu_run_ex(const struct arkgen_result *r, uint64_t seed, int iters, const struct emu_opts *o, char *msg, size_t n)
{
	/* on the heap: what the run changes stays defined after emu_fail's longjmp */
	struct emu *e = malloc(sizeof *e);
	struct ref *ref = calloc(1, sizeof *ref);
	emu_init(e, ref, r, seed, o->ctr_base);
	int rc = 0;
	if (setjmp(e->jb)) {
		rc = -1;
		if (msg && n)
			snprintf(msg, n, "%s", e->msg);
	} else if (o->overlap) {
		run_overlap(e, ref, seed, (uint32_t)iters, o->early_host);
	} else {
		for (uint32_t iter = 1; iter <= (uint32_t)iters; iter++) {
			fresh_inputs(e, ref, seed, iter, -1);
			run_iteration(e, iter);
			check_gpu_outputs(e, ref, seed, iter, -1);
			check_same_sums(e, ref, iter);
		}
	}
	if (o->overlapped)
		*o->overlapped += e->overlapped;
	emu_free(e, ref);
	free(e), free(ref);
	return rc;
}

int emu_generate(const struct arkgen_result *r, uint64_t seed, const struct emu_gen *q, int32_t *tokens, char *msg,
		 size_t n)
{
	struct emu *e = malloc(sizeof *e);
	struct ref *ref = calloc(1, sizeof *ref);
	emu_init(e, ref, r, seed, 0);
	const int tok = r->graph.token;
	assert_true(tok >= 0 && r->graph.gpus == 1);
	char *dev = e->arena[0] + r->tiling.offset[tok];
	volatile int ran = -1;
	if (setjmp(e->jb)) {
		ran = -1;
		if (msg && n)
			snprintf(msg, n, "%s", e->msg);
	} else {
		for (uint32_t t = 0; t < q->steps; t++) {
			const uint32_t iter = t + 1;
			fresh_inputs(e, ref, seed, iter, -1);
			if (t < q->n_prompt) { /* SM 0, before it publishes the step */
				memcpy(dev, &q->prompt[t], 4);
				memcpy(ref->buf[tok], &q->prompt[t], 4);
			}
			run_iteration(e, iter);
			check_gpu_outputs(e, ref, seed, iter, -1);
			int32_t v, w; /* SM 0, once every SM is done with the step: the token it made */
			memcpy(&v, dev, 4);
			memcpy(&w, ref->buf[tok], 4);
			if (v != w)
				emu_fail(e, "step %u: token %d, the reference's %d", t, v, w);
			tokens[t] = v;
			if (ark_gen_ends(t, q->steps, q->n_prompt, q->flags, q->eos, v)) {
				ran = (int)t + 1;
				break;
			}
		}
	}
	emu_free(e, ref);
	free(e), free(ref);
	return ran;
}

void emu_run(const struct arkgen_result *r, uint64_t seed, int iters)
{
	char msg[1024];
	if (emu_run_ex(r, seed, iters, &(struct emu_opts){0}, msg, sizeof msg))
		fail_msg("%s", msg);
}
