// tables_dump.cc: prints every field of every table of a generated file (the model record, tensors,
// ops, and per GPU the op params, tasks, sm_begin and waits) in one canonical text form, numbers
// only, so two files that describe the same computation print the same text however they spell it.
// Built by tests/tables.sh with a host C++ compiler, the generated file included whole and the loop
// kernel stubbed (tests/tables_stub/):
//   g++ -std=c++17 -Itests/tables_stub -Iabi -Iruntime -DARK_TABLES_FILE='"loop.cu"' tests/tables_dump.cc
// It also builds against older headers whose struct ark_task has no op field (printed as "op=-").
#include ARK_TABLES_FILE

#include <inttypes.h>
#include <stdio.h>

#ifndef ARK_TILE_BIT /* ark_tiles.cuh's, which the stub does not define */
#define ARK_TILE_BIT(id) (1ull << ARK_T_##id)
#endif

// The task's op index where struct ark_task has one, else -1 ("-").
template <typename T> static auto task_op(const T &t, int) -> decltype((long)t.op) { return (long)t.op; }
template <typename T> static long task_op(const T &, long) { return -1; }

static void str(const char *key, const char *s)
{
	printf(" %s=", key);
	if (!s) {
		printf("(null)");
		return;
	}
	putchar('"');
	for (; *s; s++)
		if (*s == '"' || *s == '\\' || (unsigned char)*s < 32)
			printf("\\x%02x", (unsigned char)*s);
		else
			putchar(*s);
	putchar('"');
}

static void i64s(const char *key, const int64_t *v, int n)
{
	printf(" %s=", key);
	for (int i = 0; i < n; i++)
		printf("%s%" PRId64, i ? "," : "", v[i]);
}

static void u64s(const char *key, const uint64_t *v, int n)
{
	printf(" %s=", key);
	for (int i = 0; i < n; i++)
		printf("%s%" PRIu64, i ? "," : "", v[i]);
}

static void i32s(const char *key, const int32_t *v, int n)
{
	printf(" %s=", key);
	for (int i = 0; i < n; i++)
		printf("%s%" PRId32, i ? "," : "", v[i]);
}

static void dump_gpu(const struct ark_model *m, int g)
{
	const struct ark_gpu_tables *p = &m->tables[g];
	printf("gpu %d arena_bytes=%" PRIu64 " n_tasks=%d n_waits=%d n_opp=%d n_counters=%d n_done=%u\n", g,
	       p->arena_bytes, p->n_tasks, p->n_waits, p->n_opp, p->n_counters, p->n_done);
	for (int i = 0; i < p->n_opp; i++) {
		const struct ark_opp *o = &p->opp[i];
		/* "pad=": the byte was padding when the goldens were made; it is wdtype now (0 in them) */
		printf("opp %d.%d kind=%u dtype=%u flags=%u act=%u pad=%u splits=%u", g, i, o->kind, o->dtype, o->flags,
		       o->act, o->wdtype, o->splits);
		u64s("in", o->in, 3);
		if (o->in[3]) /* a fused residual (not in the goldens' older layout) */
			printf(" in3=%" PRIu64, o->in[3]);
		printf(" out=%" PRIu64 " ws=%" PRIu64 " M=%" PRId64 " N=%" PRId64 " K=%" PRId64 " f=%.9g ndim=%d", o->out,
		       o->ws, o->M, o->N, o->K, (double)o->f, o->ndim);
		i64s("oshape", o->oshape, 4);
		i64s("istride0", o->istride[0], 4);
		i64s("istride1", o->istride[1], 4);
		if (o->pre) /* a fused prologue (not in the goldens' older layout) */
			printf(" pre=%u pre_in=%" PRIu64, (unsigned)o->pre, o->pre_in);
		printf(" peer=%d\n", o->peer);
	}
	for (int i = 0; i < p->n_tasks; i++) {
		const struct ark_task *t = &p->tasks[i];
		long op = task_op(*t, 0);
		printf("task %d.%d opp=%u tmpl=%u n_wait=%u wait0=%u signal=%d split=%u m=%u:%u n=%u:%u k=%u:%u vcta=%u "
		       "sig_peer=%u",
		       g, i, t->opp, t->tmpl, t->n_wait, t->wait0, t->signal, t->split, t->m0, t->m1, t->n0, t->n1, t->k0,
		       t->k1, t->vcta, (unsigned)t->sig_peer);
		if (op < 0)
			printf(" op=-\n");
		else
			printf(" op=%ld (%s)\n", op, op < m->n_ops ? m->ops[op].name : "none");
#ifdef ARK_TILES_USED
		if (!((ARK_TILES_USED) >> t->tmpl & 1)) /* the loop kernel would fault on it */
			printf("task %d.%d: template %u is not in ARK_TILES_USED\n", g, i, t->tmpl);
#endif
	}
	printf("sm_begin %d", g);
	for (int s = 0; s <= m->sms; s++)
		printf("%s%u", s ? "," : " ", p->sm_begin[s]);
	printf("\n");
	for (int i = 0; i < p->n_waits; i++) {
		const struct ark_wait *w = &p->waits[i];
		printf("wait %d.%d counter=%u per_iter=%u need=%u sys=%u\n", g, i, w->counter, w->per_iter, w->need,
		       w->sys);
	}
}

int main(void)
{
	const struct ark_model *m = &ark_model_def;
	printf("defines ARK_THREADS=%d ARK_SMEM_BYTES=%d ARK_SMS=%d ARK_TILES_FP16=%d ARK_TILES_BF16=%d "
	       "ARK_TILES_FP32=%d\n",
	       ARK_THREADS, ARK_SMEM_BYTES, ARK_SMS, ARK_TILES_FP16, ARK_TILES_BF16, ARK_TILES_FP32);
	printf("model");
	str("name", m->name);
	str("source", m->source);
	str("options", m->options);
	printf(" gpus=%d sms=%d threads=%d smem_bytes=%d predicted_us=%.17g n_tensors=%d n_ops=%d launch=%d "
	       "kernel=%d\n",
	       m->gpus, m->sms, m->threads, m->smem_bytes, m->predicted_us, m->n_tensors, m->n_ops, m->launch != NULL,
	       m->kernel != NULL);
	for (int i = 0; i < m->n_tensors; i++) {
		const struct ark_tensor *t = &m->tensors[i];
		printf("tensor %d", i);
		str("name", t->name);
		printf(" dtype=%u role=%u ndim=%u gpu=%u", t->dtype, t->role, t->ndim, t->gpu);
		i64s("shape", t->shape, ARK_MAX_DIMS);
		printf(" offset=%" PRIu64 " bytes=%" PRIu64 "\n", t->offset, t->bytes);
	}
	for (int i = 0; i < m->n_ops; i++) {
		const struct ark_op *o = &m->ops[i];
		printf("op %d", i);
		str("name", o->name);
		printf(" kind=%u n_in=%u n_out=%u gpu=%u transpose_b=%u transport=%u axis=%d", o->kind, o->n_in, o->n_out,
		       o->gpu, o->transpose_b, o->transport, o->axis);
		i32s("in", o->in, ARK_MAX_IO);
		i32s("out", o->out, ARK_MAX_IO);
		printf(" factor=%.9g eps=%.9g line=%d\n", (double)o->factor, (double)o->eps, o->line);
	}
	for (int g = 0; g < ARK_MAX_GPUS; g++) {
		if (g < m->gpus) {
			dump_gpu(m, g);
			continue;
		}
		const struct ark_gpu_tables *p = &m->tables[g]; /* unused GPUs: all zero */
		if (p->arena_bytes || p->n_tasks || p->tasks || p->sm_begin || p->n_waits || p->waits || p->n_opp ||
		    p->opp || p->n_counters || p->n_done)
			printf("gpu %d is unused but its tables are not zero\n", g);
	}
	return 0;
}
