/* tables.c: the tables of every GPU exactly as the generated file holds them (struct ark_task,
 * struct ark_wait, sm_begin), built once from a schedule. The emitter prints these arrays and the
 * verifier proves these arrays, so nothing the verifier did not see reaches the loop kernel. */
#include <stdlib.h>
#include <string.h>

#include "ark_proto.h"
#include "diag.h"
#include "schedule.h"

/* Numbers the op params of every GPU: first one entry per op that has vCTAs of its own, in the
 * order of ops[] (a chain: its descriptor, then one per step; a copied concat: one per input), then
 * the communication ones. */
static void number_opp(const struct tiling *s, struct tables *t)
{
	const struct graph *g = s->g;
	for (int oi = 0; oi < g->n_ops; oi++)
		t->opp_gpu[oi] = -1;
	for (int v = 0; v < s->n_vcta; v++)
		if (s->v[v].opp < g->n_ops)
			t->opp_gpu[s->v[v].opp] = s->v[v].gpu;
	for (int gpu = 0; gpu < g->gpus; gpu++) {
		int n = 0;
		for (int k = 0; k < g->n_ops; k++) {
			int oi = g->order[k];
			if (t->opp_gpu[oi] != gpu)
				continue;
			t->opp_index[oi] = n;
			n += 1 + s->per_op[oi].chain_len;
			if (g->ops[oi].kind == ARK_OP_CONCAT && g->ops[oi].copied) /* one entry per input */
				n += g->ops[oi].n_in - 1;
		}
		for (int x = 0; x < s->n_comm; x++)
			if (s->comm[x].gpu == gpu)
				t->opp_index[g->n_ops + x] = n++;
		t->gpu[gpu].n_opp = n;
	}
}

/* What the tables cannot hold: op and op-params indices are 24-bit (ARK_TASK_NO_OP, ARK_TASK_MAX_OPP),
 * a task waits on at most ARK_TASK_MAX_WAITS counters. The limits are parameters so that a test can
 * reach them with a small model. 0, or -1 after an error, located at the first op beyond the limit. */
int tables_check_limits(const struct tiling *s, const struct schedule *p, const struct tables *t, int64_t max_ops,
			int64_t max_opp)
{
	const struct graph *g = s->g;
	if (g->n_ops > max_ops) {
		const struct op *o = &g->ops[g->order[max_ops]];
		diag_error(g->file, o->line, "the model has %d ops; the task table can name at most %lld (op '%s' is op %lld)",
			   g->n_ops, (long long)max_ops, o->name, (long long)max_ops + 1);
		return -1;
	}
	for (int gpu = 0; gpu < g->gpus; gpu++)
		if (t->gpu[gpu].n_opp > max_opp) {
			int line = 0;
			for (int oi = 0; oi < g->n_ops && !line; oi++)
				if (t->opp_gpu[oi] == gpu && t->opp_index[oi] >= max_opp)
					line = g->ops[oi].line;
			diag_error(g->file, line, "GPU %d needs %d op params; the task table can name at most %lld", gpu,
				   t->gpu[gpu].n_opp, (long long)max_opp);
			return -1;
		}
	for (int v = 0; v < s->n_vcta; v++) {
		const struct op *o = &g->ops[s->v[v].op];
		int64_t nw = p->wait0[v + 1] - p->wait0[v];
		if (nw > ARK_TASK_MAX_WAITS) {
			diag_error(g->file, o->line, "vCTA %d of op '%s' waits on %lld counters; a task can wait on at most %u",
				   v, o->name, (long long)nw, ARK_TASK_MAX_WAITS);
			return -1;
		}
		ARK_ASSERT(s->v[v].split <= 0xffff);
	}
	return 0;
}

/* The task of vCTA v, whose first wait is entry wait0 of its GPU's wait table. */
static struct ark_task task_of(const struct tiling *s, const struct schedule *p, const struct tables *t, int v)
{
	const struct vcta *x = &s->v[v];
	int c = p->signal[v], remote = c >= 0 && p->ctr_gpu[c] != x->gpu;
	ARK_ASSERT(x->tmpl != ARK_T_DMA || remote); /* the engine's flag is on the receiving GPU */
	return (struct ark_task){
		.op = (uint32_t)t->op_index[x->op],
		.opp = (uint32_t)(t->opp_index[x->opp] + x->part),
		.tmpl = (uint8_t)x->tmpl,
		.sig_peer = (uint8_t)(remote ? p->ctr_gpu[c] + 1 : 0),
		.n_wait = (uint16_t)(p->wait0[v + 1] - p->wait0[v]),
		.split = (uint16_t)x->split,
		.wait0 = (uint32_t)t->wbase[v],
		.signal = c >= 0 ? ARK_CTR(p->ctr_index[c]) : -1,
		.m0 = x->m0, .m1 = x->m1, .n0 = x->n0, .n1 = x->n1, .k0 = x->k0, .k1 = x->k1,
		.vcta = (uint32_t)v,
	};
}

/* Grid barrier after level l (--sync barrier): adds 1 to the barrier counter, then waits for the
 * wait shared by every SM's barrier of that level. */
static struct ark_task barrier_task(const struct schedule *p, const struct tables *t, int gpu, int l)
{
	return (struct ark_task){
		.op = ARK_TASK_NO_OP, .tmpl = ARK_T_BARRIER, .n_wait = 1,
		.wait0 = (uint32_t)(t->gpu[gpu].n_waits - t->n_bar + l),
		.signal = ARK_CTR(p->n_counters), .vcta = 0xffffffffu,
	};
}

/* The task lists of one GPU's SMs, back to back, and where each begins; barrier mode puts a grid
 * barrier after every level but the last. */
static void build_tasks(const struct tiling *s, const struct schedule *p, struct tables *t, int gpu)
{
	struct gpu_tables *T = &t->gpu[gpu];
	int sms = t->sms, n = t->n_bar * sms;
	for (int sm = 0; sm < sms; sm++)
		n += p->pl.begin[gpu * sms + sm + 1] - p->pl.begin[gpu * sms + sm];
	T->n_tasks = n;
	T->tasks = xcalloc((size_t)n + 1, sizeof *T->tasks);
	T->sm_begin = xmalloc(((size_t)sms + 1) * sizeof *T->sm_begin);
	uint32_t k = 0;
	for (int sm = 0; sm < sms; sm++) {
		int gsm = gpu * sms + sm, i = p->pl.begin[gsm];
		T->sm_begin[sm] = k;
		for (int l = 0; l < (t->n_bar ? p->n_levels : 1); l++) {
			for (; i < p->pl.begin[gsm + 1] && (!t->n_bar || p->level[p->pl.list[i]] == l); i++)
				T->tasks[k++] = task_of(s, p, t, p->pl.list[i]);
			if (t->n_bar && l < t->n_bar)
				T->tasks[k++] = barrier_task(p, t, gpu, l);
		}
	}
	T->sm_begin[sms] = k;
	ARK_ASSERT(k == (uint32_t)n);
}

/* The waits of one GPU's tasks, in vCTA order, then the grid barriers' (one per level, shared by
 * every SM's barrier of that level). */
static void build_waits(const struct tiling *s, const struct schedule *p, struct tables *t, int gpu)
{
	struct gpu_tables *T = &t->gpu[gpu];
	T->waits = xcalloc((size_t)T->n_waits + 1, sizeof *T->waits);
	for (int v = 0; v < s->n_vcta; v++) {
		if (s->v[v].gpu != gpu)
			continue;
		for (int64_t w = p->wait0[v]; w < p->wait0[v + 1]; w++) {
			int c = (int)p->waits[w].counter;
			ARK_ASSERT(p->ctr_gpu[c] == gpu);
			T->waits[t->wbase[v] + (w - p->wait0[v])] = (struct ark_wait){
				ARK_CTR(p->ctr_index[c]), p->waits[w].per_iter, p->waits[w].need, p->ctr_sys[c]};
		}
	}
	for (int l = 0; l < t->n_bar; l++)
		T->waits[T->n_waits - t->n_bar + l] = (struct ark_wait){
			ARK_CTR(p->n_counters), (uint32_t)(t->sms * t->n_bar), (uint32_t)(t->sms * (l + 1)), 0};
}

int tables_build(const struct tiling *s, const struct schedule *p, struct tables *t)
{
	const struct graph *g = s->g;
	memset(t, 0, sizeof *t);
	t->gpus = g->gpus;
	t->sms = p->pl.sms / g->gpus;
	t->n_bar = p->barrier && p->n_levels > 1 ? p->n_levels - 1 : 0;
	t->op_index = xmalloc(((size_t)g->n_ops + 1) * sizeof *t->op_index);
	t->opp_gpu = xmalloc(((size_t)g->n_ops + 1) * sizeof *t->opp_gpu);
	t->opp_index = xmalloc(((size_t)g->n_ops + (size_t)s->n_comm + 1) * sizeof *t->opp_index);
	t->wbase = xmalloc(((size_t)s->n_vcta + 1) * sizeof *t->wbase);
	for (int k = 0; k < g->n_ops; k++)
		t->op_index[g->order[k]] = k; /* ops[] is in this order */
	for (int v = 0; v < s->n_vcta; v++) {
		struct gpu_tables *T = &t->gpu[s->v[v].gpu];
		t->wbase[v] = T->n_waits;
		T->n_waits += p->wait0[v + 1] - p->wait0[v];
	}
	number_opp(s, t);
	if (tables_check_limits(s, p, t, ARK_TASK_NO_OP - 1, ARK_TASK_MAX_OPP) < 0)
		return -1;
	for (int gpu = 0; gpu < g->gpus; gpu++) {
		t->gpu[gpu].n_waits += t->n_bar;
		t->gpu[gpu].n_counters = p->gpu_counters[gpu] + (t->n_bar ? 1 : 0);
		build_tasks(s, p, t, gpu);
		build_waits(s, p, t, gpu);
	}
	return 0;
}

void tables_free(struct tables *t)
{
	for (int gpu = 0; gpu < ARK_MAX_GPUS; gpu++) {
		free(t->gpu[gpu].tasks);
		free(t->gpu[gpu].sm_begin);
		free(t->gpu[gpu].waits);
	}
	free(t->op_index);
	free(t->opp_gpu);
	free(t->opp_index);
	free(t->wbase);
	memset(t, 0, sizeof *t);
}
