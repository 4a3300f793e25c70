/* test_tables.c: the verifier of the emitted tables (codegen/verify.c) against a brute-force
 * checker. Plans are compiled through the compile API (a DMA copy and its consumer on 2 to 8 SMs,
 * split-K matmuls, chains, all_reduce and all_gather by stores, packets and DMA, grid barriers); their
 * tables are then mutated one field at a time (each wait dropped, its need lowered and raised, its
 * per_iter lowered, its counter changed, its scope flipped; each signal dropped or moved). The
 * checker decides for every mutation whether the plan became unsafe, without the verifier's
 * reasoning: it runs the tables for ITERS iterations with counters, targets and DMA chunks as the
 * loop kernels and the engine do, and takes "u happens before v" to mean that v cannot run in an
 * iteration where u is held back (waits at too narrow a scope held as no wait at all); a plan is
 * unsafe when an iteration can deadlock, when two accesses to overlapping bytes (one a write) can
 * run the other way round than their vCTA numbers, or when a DMA chunk can still be in flight once
 * every task of its iteration finished. Every unsafe mutation must be rejected and every plan as
 * compiled accepted; the counts are printed as TAP diagnostics. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ark_dma.h"
#include "ark_proto.h"
#include "harness.h"

#define ITERS 24

/* ---- the brute-force checker ------------------------------------------------------------------ */

/* A node: a task (GPU g, index i of its table) or chunk c of the request of a DMA task. */
struct node {
	int g, i, chunk;   /* chunk -1: the task itself */
};

struct bf {
	const struct tiling *s;
	const struct tables *t;
	int n;             /* nodes */
	struct node *nd;
	int *first_chunk;  /* per node that is a DMA task: node of its chunk 0 */
	int *chunks;       /* per node that is a DMA task: chunks of its request */
	int *sm_of;        /* per task node: global SM */
	int n_pairs;       /* accesses that must be ordered: node pu[k] before node pv[k] */
	int *pu, *pv;
	int **polls;       /* per SUM_LL task node: the SEND_LL nodes whose packets it polls, -1 ended */
};

static const struct ark_task *bf_task(const struct bf *b, int x)
{
	return &b->t->gpu[b->nd[x].g].tasks[b->nd[x].i];
}

static int bf_node_of(const struct bf *b, int g, int i)
{
	for (int x = 0; x < b->n; x++)
		if (b->nd[x].g == g && b->nd[x].i == i && b->nd[x].chunk < 0)
			return x;
	return -1;
}

static uint32_t bf_chunks_of(const struct tiling *s, const struct ark_task *k)
{
	uint64_t es = (uint64_t)ark_dtype_size(s->g->tensors[s->v[k->vcta].reads[0].tensor].dtype);
	return (uint32_t)dma_chunk_count((uint64_t)(k->k1 - k->k0) * es, ARK_DMA_CHUNK_BYTES, ARK_DMA_CHUNK_MAX_BYTES);
}

/* Byte [lo, hi) runs of region r: one per row, plainly. */
static int region_runs(const struct tiling *s, const struct region *r, int *gpu, uint64_t *lo, uint64_t *hi, int max)
{
	int n = 0;
	if (r->r0 >= r->r1 || r->c0 >= r->c1 || s->offset[r->tensor] == UINT64_MAX)
		return 0;
	uint64_t es = (uint64_t)ark_dtype_size(s->g->tensors[r->tensor].dtype), cols = (uint64_t)s->cols[r->tensor];
	*gpu = s->g->tensors[r->tensor].gpu;
	for (int64_t row = r->r0; row < r->r1; row++) {
		assert_true(n < max);
		lo[n] = s->offset[r->tensor] + ((uint64_t)row * cols + (uint64_t)r->c0) * es;
		hi[n++] = s->offset[r->tensor] + ((uint64_t)row * cols + (uint64_t)r->c1) * es;
	}
	return n;
}

struct access {
	int node, vcta, gpu, write;
	uint64_t lo, hi;
};

/* Every access of every node, one run per row; a DMA request's chunk k reads and writes chunk k of
 * its source and destination. */
static int all_accesses(const struct bf *b, struct access **out)
{
	const struct tiling *s = b->s;
	int n = 0, cap = 1024;
	struct access *a = malloc((size_t)cap * sizeof *a);
	enum { MAXR = 4096 };
	static uint64_t lo[MAXR], hi[MAXR];
	for (int x = 0; x < b->n; x++) {
		if (b->nd[x].chunk >= 0)
			continue;
		const struct ark_task *k = bf_task(b, x);
		if (k->tmpl == ARK_T_BARRIER)
			continue;
		const struct vcta *v = &s->v[k->vcta];
		for (int r = 0; r <= v->n_reads; r++) {
			const struct region *rg = r < v->n_reads ? &v->reads[r] : &v->write;
			int gpu = 0, nr = region_runs(s, rg, &gpu, lo, hi, MAXR), w = r == v->n_reads;
			for (int j = 0; j < nr; j++) {
				if (n + b->chunks[x] + 1 >= cap)
					a = realloc(a, (size_t)(cap *= 2) * sizeof *a);
				if (k->tmpl != ARK_T_DMA) {
					a[n++] = (struct access){x, (int)k->vcta, gpu, w, lo[j], hi[j]};
					continue;
				}
				/* request byte q of the box is at lo[0] + q (contiguous) */
				for (int c = 0; c < b->chunks[x]; c++) {
					uint64_t c0 = lo[0] + dma_chunk_start((uint64_t)c, ARK_DMA_CHUNK_BYTES, ARK_DMA_CHUNK_MAX_BYTES);
					uint64_t c1 = lo[0] + dma_chunk_start((uint64_t)c + 1, ARK_DMA_CHUNK_BYTES, ARK_DMA_CHUNK_MAX_BYTES);
					c0 = c0 > lo[j] ? c0 : lo[j];
					c1 = c1 < hi[j] ? c1 : hi[j];
					if (c0 < c1)
						a[n++] = (struct access){b->first_chunk[x] + c, (int)k->vcta, gpu, w, c0, c1};
				}
			}
		}
	}
	*out = a;
	return n;
}

static void bf_init(struct bf *b, const struct tiling *s, const struct tables *t)
{
	memset(b, 0, sizeof *b);
	b->s = s, b->t = t;
	int cap = 16;
	for (int g = 0; g < t->gpus; g++)
		cap += t->gpu[g].n_tasks;
	for (int g = 0; g < t->gpus; g++)
		for (int i = 0; i < t->gpu[g].n_tasks; i++)
			if (t->gpu[g].tasks[i].tmpl == ARK_T_DMA)
				cap += (int)bf_chunks_of(s, &t->gpu[g].tasks[i]);
	b->nd = calloc((size_t)cap, sizeof *b->nd);
	b->first_chunk = calloc((size_t)cap, sizeof *b->first_chunk);
	b->chunks = calloc((size_t)cap, sizeof *b->chunks);
	b->sm_of = calloc((size_t)cap, sizeof *b->sm_of);
	b->polls = calloc((size_t)cap, sizeof *b->polls);
	for (int g = 0; g < t->gpus; g++)
		for (int sm = 0; sm < t->sms; sm++)
			for (uint32_t i = t->gpu[g].sm_begin[sm]; i < t->gpu[g].sm_begin[sm + 1]; i++) {
				int x = b->n++;
				b->nd[x] = (struct node){g, (int)i, -1};
				b->sm_of[x] = g * t->sms + sm;
				const struct ark_task *k = &t->gpu[g].tasks[i];
				if (k->tmpl != ARK_T_DMA)
					continue;
				b->chunks[x] = (int)bf_chunks_of(s, k);
			}
	int ntask = b->n;
	for (int x = 0; x < ntask; x++)
		if (b->chunks[x]) {
			b->first_chunk[x] = b->n;
			for (int c = 0; c < b->chunks[x]; c++)
				b->nd[b->n++] = (struct node){b->nd[x].g, b->nd[x].i, c};
		}
	/* the pairs to order: every two accesses of different vCTAs to overlapping bytes of one GPU,
	 * one a write, the lower vCTA number first */
	struct access *a;
	int na = all_accesses(b, &a), cp = 1024;
	b->pu = malloc((size_t)cp * sizeof *b->pu);
	b->pv = malloc((size_t)cp * sizeof *b->pv);
	for (int i = 0; i < na; i++)
		for (int j = 0; j < na; j++) {
			const struct access *x = &a[i], *y = &a[j];
			if (x->vcta >= y->vcta || x->gpu != y->gpu || !(x->write || y->write) || x->lo >= y->hi ||
			    y->lo >= x->hi || x->node == y->node)
				continue;
			int dup = 0;
			for (int k = b->n_pairs - 1; k >= 0 && k >= b->n_pairs - 8 && !dup; k--)
				dup = b->pu[k] == x->node && b->pv[k] == y->node;
			if (dup)
				continue;
			if (b->n_pairs == cp) {
				cp *= 2;
				b->pu = realloc(b->pu, (size_t)cp * sizeof *b->pu);
				b->pv = realloc(b->pv, (size_t)cp * sizeof *b->pv);
			}
			b->pu[b->n_pairs] = x->node, b->pv[b->n_pairs++] = y->node;
		}
	/* packets: a sum of packets polls the packet stores that wrote bytes it reads */
	for (int x = 0; x < ntask; x++) {
		if (bf_task(b, x)->tmpl != ARK_T_SUM_LL)
			continue;
		b->polls[x] = malloc((size_t)(ntask + 1) * sizeof **b->polls);
		int np = 0;
		for (int i = 0; i < na; i++)
			for (int j = 0; j < na; j++)
				if (a[i].node == x && !a[i].write && a[j].write && bf_task(b, a[j].node)->tmpl == ARK_T_SEND_LL &&
				    a[i].gpu == a[j].gpu && a[i].lo < a[j].hi && a[j].lo < a[i].hi) {
					int dup = 0;
					for (int k = 0; k < np; k++)
						dup |= b->polls[x][k] == a[j].node;
					if (!dup)
						b->polls[x][np++] = a[j].node;
				}
		b->polls[x][np] = -1;
	}
	free(a);
}

static void bf_free(struct bf *b)
{
	for (int x = 0; x < b->n; x++)
		free(b->polls[x]);
	free(b->nd), free(b->first_chunk), free(b->chunks), free(b->sm_of), free(b->polls), free(b->pu), free(b->pv);
}

/* Counter arrays of every GPU, as uint32 like the device's. */
struct ctrs {
	uint32_t *c[ARK_MAX_GPUS];
};

static int raiser_gpu(const struct bf *b, int x)
{
	const struct ark_task *k = bf_task(b, x);
	if (k->tmpl == ARK_T_DMA)
		return b->s->g->tensors[b->s->v[k->vcta].write.tensor].gpu;
	return k->sig_peer ? k->sig_peer - 1 : b->nd[x].g;
}

/* The wait synchronises with the raises of its counter: not when it acquires at GPU scope a counter
 * that another GPU or the DMA engine raises. */
static int syncs(const struct bf *b, int g, const struct ark_wait *w)
{
	if (w->sys)
		return 1;
	for (int x = 0; x < b->n; x++) {
		if (b->nd[x].chunk >= 0)
			continue;
		const struct ark_task *k = bf_task(b, x);
		if (k->signal == (int32_t)w->counter && raiser_gpu(b, x) == g && (b->nd[x].g != g || k->tmpl == ARK_T_DMA))
			return 0;
	}
	return 1;
}

/* Runs iteration `iter` from counters *c as far as it goes with node `held` never running (-1: none);
 * with hb set, waits that synchronise with nothing are held satisfied. done[x]: node x ran. */
static void bf_run(const struct bf *b, struct ctrs *c, uint32_t iter, int held, int hb, uint8_t *done)
{
	const struct tables *t = b->t;
	int S = t->gpus * t->sms;
	int *next = calloc((size_t)S, sizeof *next);
	uint8_t *arrived = calloc((size_t)S, 1);
	memset(done, 0, (size_t)b->n);
	for (int progress = 1; progress;) {
		progress = 0;
		for (int x = 0; x < b->n; x++) {
			if (done[x] || x == held)
				continue;
			const struct node *nx = &b->nd[x];
			if (nx->chunk >= 0) { /* after its request's push and the chunk before it */
				int push = bf_node_of(b, nx->g, nx->i);
				if (!done[push] || (nx->chunk > 0 && !done[x - 1]))
					continue;
				const struct ark_task *k = bf_task(b, push);
				uint32_t n = (uint32_t)b->chunks[push];
				if (k->signal >= 0) /* else the engine refuses the request: its iteration never ends */
					c->c[raiser_gpu(b, push)][k->signal] = iter * n - (n - 1 - (uint32_t)nx->chunk);
				done[x] = 1, progress = 1;
				continue;
			}
			int q = b->sm_of[x], g = nx->g;
			const struct gpu_tables *T = &t->gpu[g];
			if ((uint32_t)nx->i != T->sm_begin[q % t->sms] + (uint32_t)next[q])
				continue; /* not the head of its SM's list */
			const struct ark_task *k = &T->tasks[nx->i];
			if (k->tmpl == ARK_T_BARRIER && !arrived[q]) {
				if (k->signal >= 0)
					c->c[g][k->signal]++;
				arrived[q] = 1, progress = 1;
			}
			int ready = 1;
			for (uint32_t j = 0; j < k->n_wait && ready; j++) {
				const struct ark_wait *w = &T->waits[k->wait0 + j];
				uint32_t want = (iter - 1) * w->per_iter + w->need;
				if (hb && !syncs(b, g, w))
					continue;
				ready = (int32_t)(c->c[g][w->counter] - want) >= 0;
			}
			for (int j = 0; ready && b->polls[x] && b->polls[x][j] >= 0; j++)
				ready = done[b->polls[x][j]];
			if (!ready)
				continue;
			done[x] = 1, progress = 1;
			next[q]++, arrived[q] = 0;
			if (k->signal >= 0 && k->tmpl != ARK_T_BARRIER && k->tmpl != ARK_T_DMA)
				c->c[raiser_gpu(b, x)][k->signal]++;
		}
	}
	free(next), free(arrived);
}

static void ctrs_copy(const struct tables *t, struct ctrs *to, const struct ctrs *from)
{
	for (int g = 0; g < t->gpus; g++) {
		size_t n = (size_t)ARK_CTR__FIRST + (size_t)t->gpu[g].n_counters;
		to->c[g] = realloc(to->c[g], n * sizeof *to->c[g]);
		memcpy(to->c[g], from->c[g], n * sizeof *to->c[g]);
	}
}

static void ctrs_free(const struct tables *t, struct ctrs *c)
{
	for (int g = 0; g < t->gpus; g++)
		free(c->c[g]);
}

/* 1 when the tables are unsafe: a deadlock, an unordered pair, a chunk left in flight. */
static int bf_unsafe(const struct bf *b)
{
	const struct tables *t = b->t;
	struct ctrs c = {{0}}, w = {{0}};
	for (int g = 0; g < t->gpus; g++)
		c.c[g] = calloc((size_t)ARK_CTR__FIRST + (size_t)t->gpu[g].n_counters, sizeof *c.c[g]);
	uint8_t *done = malloc((size_t)b->n + 1);
	int unsafe = 0;
	for (uint32_t iter = 1; iter <= ITERS && !unsafe; iter++) {
		/* held back, one at a time: the earlier node of every pair and the last chunk of every request */
		for (int u = 0; u < b->n && !unsafe; u++) {
			int earlier = 0, last_chunk = b->nd[u].chunk >= 0 &&
						      b->nd[u].chunk == b->chunks[bf_node_of(b, b->nd[u].g, b->nd[u].i)] - 1;
			for (int k = 0; k < b->n_pairs && !earlier; k++)
				earlier = b->pu[k] == u;
			if (!earlier && !last_chunk)
				continue;
			ctrs_copy(t, &w, &c);
			bf_run(b, &w, iter, u, 1, done);
			for (int k = 0; k < b->n_pairs && !unsafe; k++)
				unsafe = b->pu[k] == u && done[b->pv[k]];
			if (last_chunk) { /* every task finished without it: in flight into the next iteration */
				int all = 1;
				for (int x = 0; x < b->n && all; x++)
					all = b->nd[x].chunk >= 0 || done[x];
				unsafe |= all;
			}
		}
		/* the iteration as it runs: it must finish, and leaves the counters to the next one */
		bf_run(b, &c, iter, -1, 0, done);
		for (int x = 0; x < b->n && !unsafe; x++)
			unsafe = !done[x];
	}
	ctrs_free(t, &c), ctrs_free(t, &w);
	free(done);
	return unsafe;
}

/* ---- mutations -------------------------------------------------------------------------------- */

/* A copy of the tables whose task and wait arrays may be changed. */
static void tables_dup(const struct tables *t, struct tables *m)
{
	*m = *t;
	for (int g = 0; g < t->gpus; g++) {
		m->gpu[g].tasks = malloc(((size_t)t->gpu[g].n_tasks + 1) * sizeof *m->gpu[g].tasks);
		memcpy(m->gpu[g].tasks, t->gpu[g].tasks, (size_t)t->gpu[g].n_tasks * sizeof *m->gpu[g].tasks);
		m->gpu[g].waits = malloc(((size_t)t->gpu[g].n_waits + 1) * sizeof *m->gpu[g].waits);
		memcpy(m->gpu[g].waits, t->gpu[g].waits, (size_t)t->gpu[g].n_waits * sizeof *m->gpu[g].waits);
	}
}

static void tables_undup(struct tables *m)
{
	for (int g = 0; g < m->gpus; g++)
		free(m->gpu[g].tasks), free(m->gpu[g].waits);
}

enum mut { M_DROP_WAIT, M_NEED_DOWN, M_NEED_UP, M_PER_ITER_DOWN, M_OTHER_COUNTER, M_SCOPE, M_DROP_SIGNAL,
	   M_OTHER_SIGNAL, M__COUNT };
static const char *const mut_name[M__COUNT] = {"drop a wait", "need - 1", "need + 1", "per_iter - 1",
					       "another counter", "scope flipped", "drop a signal", "signal another counter"};

struct tally {
	int tried, unsafe, rejected, rejected_safe;
	int unordered; /* rejections that name two accesses not ordered (the byte sweep's) */
	int by[M__COUNT][2]; /* tried, unsafe */
};

/* Applies mutation m to task i of GPU g (its wait j): 0 if it does not apply. */
static int mutate(struct tables *m, int g, int i, int j, enum mut mu)
{
	struct ark_task *k = &m->gpu[g].tasks[i];
	int nc = m->gpu[g].n_counters;
	if (mu >= M_DROP_SIGNAL) {
		if (j || k->signal < 0)
			return 0;
		if (mu == M_DROP_SIGNAL) {
			k->signal = -1;
			return 1;
		}
		int sg = k->sig_peer ? k->sig_peer - 1 : g, sc = m->gpu[sg].n_counters;
		if (k->tmpl == ARK_T_DMA || sc < 2)
			return 0; /* a DMA's flag moves with its GPU: covered by dropping its waits */
		k->signal = ARK_CTR__FIRST + (k->signal - ARK_CTR__FIRST + 1) % sc;
		return 1;
	}
	if ((uint32_t)j >= k->n_wait)
		return 0;
	struct ark_wait *w = &m->gpu[g].waits[k->wait0 + j];
	switch (mu) {
	case M_DROP_WAIT:
		*w = m->gpu[g].waits[k->wait0 + k->n_wait - 1];
		k->n_wait--;
		return 1;
	case M_NEED_DOWN:
		return w->need > 0 ? (w->need--, 1) : 0;
	case M_NEED_UP:
		return w->need++, 1;
	case M_PER_ITER_DOWN:
		return w->per_iter > 0 ? (w->per_iter--, 1) : 0;
	case M_OTHER_COUNTER:
		if (nc < 2)
			return 0;
		w->counter = ARK_CTR__FIRST + (w->counter - ARK_CTR__FIRST + 1) % (uint32_t)nc;
		return 1;
	case M_SCOPE:
		if (m->gpus < 2)
			return 0;
		w->sys ^= 1;
		return 1;
	default:
		return 0;
	}
}

/* Every mutation of one plan: the verifier must reject each one the checker finds unsafe. */
static void mutate_plan(const char *what, const struct arkgen_result *r, struct tally *tl)
{
	const struct tables *t = &r->schedule[0].tab;
	char err[1024];
	struct bf b;
	bf_init(&b, &r->tiling, t);
	if (tables_verify(&r->tiling, t, err, sizeof err) != 0)
		fail_msg("%s: the plan as compiled is rejected: %s", what, err);
	if (bf_unsafe(&b))
		fail_msg("%s: the checker finds the plan as compiled unsafe", what);
	for (int g = 0; g < t->gpus; g++)
		for (int i = 0; i < t->gpu[g].n_tasks; i++)
			for (int mu = 0; mu < M__COUNT; mu++)
				for (int j = 0; j < (int)t->gpu[g].tasks[i].n_wait || j == 0; j++) {
					struct tables m;
					tables_dup(t, &m);
					if (!mutate(&m, g, i, j, (enum mut)mu)) {
						tables_undup(&m);
						continue;
					}
					b.t = &m;
					int bad = bf_unsafe(&b), rej = tables_verify(&r->tiling, &m, err, sizeof err) != 0;
					b.t = t;
					tl->tried++, tl->unsafe += bad, tl->rejected += rej, tl->rejected_safe += rej && !bad;
					tl->by[mu][0]++, tl->by[mu][1] += bad;
					if (rej && strstr(err, " is not ordered: ")) {
						if (!strstr(err, " may run before ") || !strstr(err, " of bytes ["))
							fail_msg("%s: a rejection that does not say which accesses: %s", what, err);
						tl->unordered++;
					}
					if (bad && !rej)
						fail_msg("%s: GPU %d task %d (vCTA %u) wait %d, %s: unsafe but accepted", what, g, i,
							 t->gpu[g].tasks[i].vcta, j, mut_name[mu]);
					if (rej && !bad && getenv("ARK_TABLES_DEBUG"))
						printf("# safe but rejected: %s: GPU %d task %d wait %d, %s: %s\n", what, g, i, j,
						       mut_name[mu], err);
					tables_undup(&m);
				}
	bf_free(&b);
}

static int compile(struct arkgen_result *r, const char *text, int sms, int barrier, long long ll_max)
{
	struct arkgen_options o = arkgen_options_default();
	o.sms = sms;
	o.barrier = barrier;
	o.ll_max = ll_max;
	int rc = harness_compile(text, &o, r);
	if (rc)
		fail_msg("compile failed: %s", harness_diag());
	return rc;
}

static void report(const char *what, const struct tally *tl)
{
	printf("# %s: %d mutations tried, %d unsafe, %d rejected (%d of them safe)\n", what, tl->tried, tl->unsafe,
	       tl->rejected, tl->rejected_safe);
	for (int m = 0; m < M__COUNT; m++)
		if (tl->by[m][0])
			printf("#   %-22s %5d tried, %5d unsafe\n", mut_name[m], tl->by[m][0], tl->by[m][1]);
}

static struct tally total;

static void add(struct tally *to, const struct tally *from)
{
	to->tried += from->tried, to->unsafe += from->unsafe, to->rejected += from->rejected;
	to->rejected_safe += from->rejected_safe, to->unordered += from->unordered;
	for (int m = 0; m < M__COUNT; m++)
		to->by[m][0] += from->by[m][0], to->by[m][1] += from->by[m][1];
}

/* ---- the plans -------------------------------------------------------------------------------- */

/* [2, 2^20] fp16 to GPU 1 by DMA (4 MiB: chunks of 1, 2 and 1 MiB), then a relu there. */
static const char *dma_text =
	"version = 1; name = \"d\"; gpus = 2; dtype = \"fp16\";\n"
	"tensors = ( { name = \"x\"; shape = [2, 1048576]; role = \"input\"; gpu = 0; },\n"
	"            { name = \"y\"; role = \"output\"; } );\n"
	"ops = ( { name = \"cp\"; op = \"copy\"; in = [\"x\"]; out = \"x1\"; gpu = 1; transport = \"dma\"; },\n"
	"        { name = \"act\"; op = \"relu\"; in = [\"x1\"]; out = \"y\"; gpu = 1; } );\n";

static void test_dma_consumer(void **state)
{
	(void)state;
	struct tally tl = {0};
	for (int sms = 2; sms <= 8; sms++) {
		struct arkgen_result r;
		assert_int_equal(compile(&r, dma_text, sms, 0, 0), 0);
		assert_int_equal(harness_count_tmpl(&r.tiling, ARK_T_DMA, 0), 1);
		char what[64];
		snprintf(what, sizeof what, "DMA copy + relu, %d SMs", sms);
		mutate_plan(what, &r, &tl);
		arkgen_result_free(&r);
	}
	report("DMA copy of 3 chunks + relu on 2..8 SMs", &tl);
	assert_true(tl.unsafe > 0);
	add(&total, &tl);
}

/* The case that the dependency-edge verifier accepted: the relu tile that reads the last chunk has
 * its wait on the flag removed while an earlier task of its SM waited for the first chunk only. */
static void test_dma_chunk_wait_dropped(void **state)
{
	(void)state;
	struct arkgen_result r;
	assert_int_equal(compile(&r, dma_text, 3, 0, 0), 0);
	const struct tables *t = &r.schedule[0].tab;
	char err[1024];
	int found = 0;
	for (int i = 0; i < t->gpu[1].n_tasks; i++) {
		const struct ark_task *k = &t->gpu[1].tasks[i];
		for (uint32_t j = 0; j < k->n_wait; j++)
			if (t->gpu[1].waits[k->wait0 + j].need == 3 && k->tmpl == ARK_T_ELEMENTWISE) {
				struct tables m;
				tables_dup(t, &m);
				assert_int_equal(mutate(&m, 1, i, (int)j, M_DROP_WAIT), 1);
				assert_int_equal(tables_verify(&r.tiling, &m, err, sizeof err), -1);
				assert_non_null(strstr(err, "chunk 2 of 3 of vCTA"));
				assert_non_null(strstr(err, "op 'act'"));
				assert_non_null(strstr(err, "read after write of bytes ["));
				tables_undup(&m);
				found++;
			}
	}
	assert_true(found > 0);
	arkgen_result_free(&r);
}

/* Split-K: the partials of a tile raise one counter that the REDUCE waits on for all of them. */
static const char *splitk_text =
	"version = 1; name = \"k\"; dtype = \"fp16\";\n"
	"tensors = ( { name = \"x\"; shape = [4, 2048]; role = \"input\"; },\n"
	"            { name = \"w\"; shape = [2048, 16]; role = \"weight\"; },\n"
	"            { name = \"v\"; shape = [16, 64]; role = \"weight\"; },\n"
	"            { name = \"y\"; role = \"output\"; } );\n"
	"ops = ( { name = \"mm\"; op = \"matmul\"; in = [\"x\", \"w\"]; out = \"h\"; },\n"
	"        { name = \"act\"; op = \"relu\"; in = [\"h\"]; out = \"a\"; },\n"
	"        { name = \"mm2\"; op = \"matmul\"; in = [\"a\", \"v\"]; out = \"y\"; } );\n";

static void test_split_k(void **state)
{
	(void)state;
	struct tally tl = {0};
	for (int sms = 2; sms <= 8; sms++) {
		struct arkgen_result r;
		assert_int_equal(compile(&r, splitk_text, sms, 0, 0), 0);
		assert_true(harness_count_tmpl(&r.tiling, ARK_T_REDUCE, -1) > 0);
		assert_true(harness_count_tmpl(&r.tiling, ARK_T_MATMUL_PARTIAL, -1) > 1);
		mutate_plan("split-K", &r, &tl);
		arkgen_result_free(&r);
	}
	report("split-K matmul (group counters) on 2..8 SMs", &tl);
	assert_true(tl.unsafe > 0);
	add(&total, &tl);
}

/* A chain that memory reuse folds onto few buffers (write after read across tensors). */
static const char *chain_text =
	"version = 1; name = \"c\"; dtype = \"fp32\";\n"
	"tensors = ( { name = \"x\"; shape = [4, 4096]; role = \"input\"; },\n"
	"            { name = \"y\"; role = \"output\"; } );\n"
	"ops = ( { name = \"a\"; op = \"relu\"; in = [\"x\"]; out = \"t1\"; },\n"
	"        { name = \"b\"; op = \"softmax\"; in = [\"t1\"]; out = \"t2\"; },\n"
	"        { name = \"c\"; op = \"scale\"; in = [\"t2\"]; out = \"t3\"; factor = 2.0; },\n"
	"        { name = \"d\"; op = \"softmax\"; in = [\"t3\"]; out = \"t4\"; },\n"
	"        { name = \"e\"; op = \"add\"; in = [\"t4\", \"t1\"]; out = \"y\"; } );\n";

static void test_chain(void **state)
{
	(void)state;
	struct tally tl = {0};
	for (int sms = 2; sms <= 5; sms += 3) {
		struct arkgen_result r;
		assert_int_equal(compile(&r, chain_text, sms, 0, 0), 0);
		mutate_plan("chain", &r, &tl);
		arkgen_result_free(&r);
	}
	report("chain with reused buffers on 2 and 5 SMs", &tl);
	assert_true(tl.unsafe > 0);
	add(&total, &tl);
}

/* all_reduce and all_gather on 2 GPUs by stores, by packets, by DMA. */
static void comm_text(char *buf, size_t n, const char *transport)
{
	snprintf(buf, n,
		 "version = 1; name = \"r\"; gpus = 2; dtype = \"fp16\";\n"
		 "tensors = ( { name = \"x0\"; shape = [2, 256]; role = \"input\"; gpu = 0; },\n"
		 "            { name = \"x1\"; shape = [2, 256]; role = \"input\"; gpu = 1; },\n"
		 "            { name = \"g0\"; role = \"output\"; }, { name = \"g1\"; role = \"output\"; } );\n"
		 "ops = ( { name = \"ar\"; op = \"all_reduce\"; in = [\"x0\", \"x1\"]; out = [\"s0\", \"s1\"]; transport = \"%s\"; },\n"
		 "        { name = \"ag\"; op = \"all_gather\"; in = [\"s0\", \"s1\"]; out = [\"g0\", \"g1\"]; transport = \"%s\"; } );\n",
		 transport, transport);
}

static void test_comm(void **state)
{
	(void)state;
	struct tally tl = {0};
	static const char *const tr[] = {"p2p", "dma"};
	char text[2048];
	for (int k = 0; k < 3; k++) {
		struct arkgen_result r;
		comm_text(text, sizeof text, tr[k % 2]);
		assert_int_equal(compile(&r, text, 3, 0, k == 2 ? 1 << 20 : 0), 0);
		if (k == 2)
			assert_true(harness_count_tmpl(&r.tiling, ARK_T_SUM_LL, -1) > 0);
		mutate_plan(k == 2 ? "packets" : tr[k], &r, &tl);
		arkgen_result_free(&r);
	}
	report("all_reduce + all_gather on 2 GPUs by p2p, DMA, packets", &tl);
	assert_true(tl.unsafe > 0);
	add(&total, &tl);
}

/* Two-phase all_reduce on 4 GPUs by DMA, then a copy. */
static void test_two_phase(void **state)
{
	(void)state;
	struct tally tl = {0};
	const char *text =
		"version = 1; name = \"q\"; gpus = 4; dtype = \"fp16\";\n"
		"tensors = ( { name = \"x0\"; shape = [4, 64]; role = \"input\"; gpu = 0; },\n"
		"            { name = \"x1\"; shape = [4, 64]; role = \"input\"; gpu = 1; },\n"
		"            { name = \"x2\"; shape = [4, 64]; role = \"input\"; gpu = 2; },\n"
		"            { name = \"x3\"; shape = [4, 64]; role = \"input\"; gpu = 3; },\n"
		"            { name = \"c\"; role = \"output\"; }, { name = \"s1\"; role = \"output\"; },\n"
		"            { name = \"s2\"; role = \"output\"; }, { name = \"s3\"; role = \"output\"; } );\n"
		"ops = ( { name = \"ar\"; op = \"all_reduce\"; in = [\"x0\", \"x1\", \"x2\", \"x3\"];\n"
		"          out = [\"s0\", \"s1\", \"s2\", \"s3\"]; transport = \"dma\"; },\n"
		"        { name = \"cp\"; op = \"copy\"; in = [\"s0\"]; out = \"c\"; gpu = 1; transport = \"dma\"; } );\n";
	struct arkgen_options o = arkgen_options_default();
	o.sms = 2;
	o.oneshot_max = 0; /* two-phase */
	struct arkgen_result r;
	if (harness_compile(text, &o, &r))
		fail_msg("compile failed: %s", harness_diag());
	mutate_plan("two-phase", &r, &tl);
	arkgen_result_free(&r);
	report("two-phase all_reduce on 4 GPUs by DMA + copy", &tl);
	assert_true(tl.unsafe > 0);
	add(&total, &tl);
}

/* Grid barriers between levels (--sync barrier): a chain, and split-K partials on every SM. */
static void test_barrier(void **state)
{
	(void)state;
	struct tally tl = {0};
	const char *const texts[] = {chain_text, splitk_text};
	for (int k = 0; k < 2; k++) {
		struct arkgen_result r;
		assert_int_equal(compile(&r, texts[k], 3, 1, 0), 0);
		assert_true(r.schedule[0].tab.n_bar > 0);
		mutate_plan("barrier", &r, &tl);
		arkgen_result_free(&r);
	}
	report("chain and split-K with grid barriers on 3 SMs", &tl);
	assert_true(tl.unsafe > 0);
	add(&total, &tl);
}

/* Model files of the repository and of the GPU suite, on a few SMs. */
static void test_model_files(void **state)
{
	(void)state;
	static const char *const files[] = {"models/comm2.cfg", "models/chain64.cfg", "tests/models/chains.cfg",
					    "tests/models/gates.cfg", "tests/models/embed_views.cfg",
					    "tests/models/state.cfg" /* writes after reads of the state */,
					    "tests/models/decode.cfg"};
	struct tally tl = {0};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
		for (int sms = 3; sms <= 4; sms++) {
			FILE *fp = fopen(files[i], "r");
			assert_non_null(fp);
			char *text = calloc(1, 1 << 20);
			size_t n = fread(text, 1, (1 << 20) - 1, fp);
			fclose(fp);
			assert_true(n > 0);
			struct arkgen_result r;
			assert_int_equal(compile(&r, text, sms, 0, 0), 0);
			mutate_plan(files[i], &r, &tl);
			arkgen_result_free(&r);
			free(text);
		}
	report("models/comm2, models/chain64, tests/models/chains, tests/models/gates, tests/models/embed_views, "
	       "tests/models/state, tests/models/decode on 3 and 4 SMs", &tl);
	assert_true(tl.unsafe > 0);
	add(&total, &tl);
}

/* The task table's index widths: op and op params in 24 bits each beside tmpl and sig_peer, read
 * back whole; a model beyond a limit is refused at the line of the first op that does not fit. */
static void test_limits(void **state)
{
	(void)state;
	struct ark_task k = {.op = ARK_TASK_NO_OP - 1, .opp = ARK_TASK_MAX_OPP, .tmpl = ARK_T_SUM_LL, .sig_peer = 255,
			     .n_wait = 7, .split = 3, .wait0 = 0xfffffff0u, .vcta = 123456};
	assert_int_equal(k.op, 0xfffffe);
	assert_int_equal(k.opp, 0xffffff);
	assert_int_equal(k.tmpl, ARK_T_SUM_LL);
	assert_int_equal(k.sig_peer, 255);
	/* the layout nvcc gives the device (its PTX reads tmpl at byte 6, sig_peer at byte 7, op and opp
	 * from the low 24 bits of the first word and the next 24) */
	unsigned char b[sizeof k];
	memcpy(b, &k, sizeof k);
	assert_int_equal(b[6], ARK_T_SUM_LL);
	assert_int_equal(b[7], 255);
	assert_int_equal(b[0] | b[1] << 8 | b[2] << 16, 0xfffffe);
	assert_int_equal(b[3] | b[4] << 8 | b[5] << 16, 0xffffff);
	k.op = 100000;
	assert_int_equal(k.op, 100000);
	assert_int_equal(k.opp, 0xffffff);
	assert_int_equal(k.n_wait, 7);
	assert_int_equal(k.wait0, 0xfffffff0u);

	struct arkgen_result r;
	assert_int_equal(compile(&r, chain_text, 3, 0, 0), 0);
	const struct schedule *p = &r.schedule[0];
	const struct graph *g = &r.graph;
	assert_int_equal(tables_check_limits(&r.tiling, p, &p->tab, ARK_TASK_NO_OP - 1, ARK_TASK_MAX_OPP), 0);
	harness_capture_begin();
	int rc = tables_check_limits(&r.tiling, p, &p->tab, g->n_ops - 1, ARK_TASK_MAX_OPP);
	harness_capture_end();
	assert_int_equal(rc, -1);
	const struct op *last = &g->ops[g->order[g->n_ops - 1]];
	char want[256];
	snprintf(want, sizeof want, "t.cfg:%d: error: the model has %d ops; the task table can name at most %d (op '%s'",
		 last->line, g->n_ops, g->n_ops - 1, last->name);
	if (!strstr(harness_diag(), want))
		fail_msg("expected \"%s\" in: %s", want, harness_diag());
	harness_capture_begin();
	rc = tables_check_limits(&r.tiling, p, &p->tab, ARK_TASK_NO_OP - 1, p->tab.gpu[0].n_opp - 1);
	harness_capture_end();
	assert_int_equal(rc, -1);
	if (!strstr(harness_diag(), "t.cfg:") || !strstr(harness_diag(), "error: GPU 0 needs"))
		fail_msg("op params limit: %s", harness_diag());
	arkgen_result_free(&r);
}

/* ---- tensors moved onto each other's bytes ------------------------------------------------------ */

/* Tensors of several row pitches (fp16 [32, 384] and fp32 [32, 192] have the same, 768 bytes) whose
 * tiles cover part of a row, on two independent branches. The tables verifier sweeps boxes of bytes grouped by the tensors that share them: one grid
 * where they all have the same row pitch (a tensor that starts inside a row wraps), one row of bytes
 * where pitches differ. */
static const char *moved_text =
	"version = 1; name = \"m\"; dtype = \"fp16\";\n"
	"tensors = ( { name = \"x\"; shape = [32, 128]; role = \"input\"; },\n"
	"            { name = \"u\"; shape = [32, 128]; role = \"input\"; dtype = \"fp32\"; },\n"
	"            { name = \"w\"; shape = [128, 384]; role = \"weight\"; },\n"
	"            { name = \"w2\"; shape = [128, 192]; role = \"weight\"; dtype = \"fp32\"; },\n"
	"            { name = \"v\"; shape = [384, 256]; role = \"weight\"; },\n"
	"            { name = \"y\"; role = \"output\"; }, { name = \"y2\"; role = \"output\"; } );\n"
	"ops = ( { name = \"mm\"; op = \"matmul\"; in = [\"x\", \"w\"]; out = \"h\"; },\n"
	"        { name = \"act\"; op = \"relu\"; in = [\"h\"]; out = \"a\"; },\n"
	"        { name = \"mm2\"; op = \"matmul\"; in = [\"a\", \"v\"]; out = \"z\"; },\n"
	"        { name = \"sm\"; op = \"softmax\"; in = [\"z\"]; out = \"y\"; },\n"
	"        { name = \"mm3\"; op = \"matmul\"; in = [\"u\", \"w2\"]; out = \"b\"; },\n"
	"        { name = \"sc\"; op = \"scale\"; in = [\"b\"]; out = \"y2\"; factor = 0.5; } );\n";

static uint64_t moved_bytes(const struct tiling *s, int t)
{
	return (uint64_t)s->rows[t] * (uint64_t)s->cols[t] * (uint64_t)ark_dtype_size(s->g->tensors[t].dtype);
}

/* Moves one tensor at a time onto the bytes of another (at a random byte, so that its rows start
 * anywhere in the other's rows, or two at once onto a third): every placement that makes the plan
 * unsafe must be rejected, naming bytes that both tensors hold, and the plan as compiled stays
 * accepted. */
static void test_moved_offsets(void **state)
{
	(void)state;
	struct arkgen_result r;
	struct arkgen_options o = arkgen_options_default();
	o.sms = 3;
	o.reuse = 0;
	if (harness_compile(moved_text, &o, &r))
		fail_msg("compile failed: %s", harness_diag());
	struct tiling *s = &r.tiling;
	const struct tables *t = &r.schedule[0].tab;
	int nt = s->g->n_tensors, partial = 0;
	for (int v = 0; v < s->n_vcta; v++)
		partial += s->v[v].write.c1 - s->v[v].write.c0 < s->cols[s->v[v].write.tensor];
	assert_true(partial > 0); /* boxes, not whole rows */
	uint64_t *orig = malloc((size_t)nt * sizeof *orig);
	memcpy(orig, s->offset, (size_t)nt * sizeof *orig);
	char err[1024];
	int tried = 0, unsafe = 0, rejected = 0, rejected_safe = 0, wrapped = 0, mixed = 0;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	/* every tensor onto every other, starting 2 bytes into it, half a row in, 2 bytes before its
	 * first row ends, a third into its second row; then random placements, of one or two tensors */
	int nsys = nt * nt * 4;
	for (int k = 0; k < nsys + 400; k++) {
		memcpy(s->offset, orig, (size_t)nt * sizeof *orig);
		int moves = k < nsys ? 1 : 1 + k % 2, a = -1, b = -1, placed = 0;
		for (int m = 0; m < moves; m++) {
			seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
			a = k < nsys ? k / (4 * nt) : (int)(seed % (uint64_t)nt);
			b = k < nsys ? k / 4 % nt : (int)((seed >> 20) % (uint64_t)nt);
			if (a == b || s->offset[a] == UINT64_MAX || s->offset[b] == UINT64_MAX || !moved_bytes(s, a))
				continue;
			uint64_t sa = moved_bytes(s, a), sb = moved_bytes(s, b), off;
			uint64_t pa = (uint64_t)s->cols[a] * ark_dtype_size(s->g->tensors[a].dtype);
			uint64_t pb = (uint64_t)s->cols[b] * ark_dtype_size(s->g->tensors[b].dtype);
			if (k < nsys) {
				static const uint64_t num[4] = {0, 1, 2, 4}, den[4] = {1, 2, 1, 3};
				off = orig[b] + (k % 4 == 0 ? 2 : k % 4 == 2 ? pb - 2 : pb * num[k % 4] / den[k % 4]);
			} else { /* from before b (so that a's end meets it) to inside b's last row */
				uint64_t at = (seed >> 33) % (sa + sb);
				off = orig[b] + at >= sa ? orig[b] + at - sa : 0;
			}
			s->offset[a] = off & ~(uint64_t)1;
			wrapped += pa == pb && (s->offset[a] > orig[b] ? s->offset[a] - orig[b] : orig[b] - s->offset[a]) % pa;
			mixed += pa != pb;
			placed = 1;
		}
		if (!placed)
			continue;
		struct bf bb;
		bf_init(&bb, s, t);
		int bad = bf_unsafe(&bb), rej = tables_verify(s, t, err, sizeof err) != 0;
		bf_free(&bb);
		tried++, unsafe += bad, rejected += rej, rejected_safe += rej && !bad;
		if (bad && !rej)
			fail_msg("placement %d (tensor '%s' at %" PRIu64 " on '%s'): unsafe but accepted", k,
				 s->g->tensors[a].name, s->offset[a], s->g->tensors[b].name);
		if (rej && !bad && getenv("ARK_TABLES_DEBUG"))
			printf("# safe but rejected: placement %d: %s\n", k, err);
		if (rej && strstr(err, " is not ordered: ")) { /* the bytes named lie in both tensors named */
			unsigned long long lo, hi;
			char n1[128], n2[128];
			const char *p = strstr(err, " of bytes [");
			assert_non_null(p);
			assert_int_equal(sscanf(p, " of bytes [%llu, %llu) of GPU 0 (tensor '%127[^']' then '%127[^']')", &lo, &hi,
						n1, n2), 4);
			int t1 = graph_find_tensor(s->g, n1), t2 = graph_find_tensor(s->g, n2);
			assert_true(t1 >= 0 && t2 >= 0 && lo < hi);
			for (int i = 0; i < 2; i++) {
				int tt = i ? t2 : t1;
				if (lo < s->offset[tt] || hi > s->offset[tt] + moved_bytes(s, tt))
					fail_msg("%s: bytes [%llu, %llu) are not all of tensor '%s' [%" PRIu64 ", %" PRIu64 ")", err,
						 lo, hi, s->g->tensors[tt].name, s->offset[tt], s->offset[tt] + moved_bytes(s, tt));
			}
		}
	}
	memcpy(s->offset, orig, (size_t)nt * sizeof *orig);
	assert_int_equal(tables_verify(s, t, err, sizeof err), 0);
	/* regions that reach past their tensor's columns or rows (into the next tensor's bytes): each
	 * tile's write, and each read, stretched in turn, with the tensors as placed */
	int stretched = 0, s_unsafe = 0, s_rejected = 0;
	for (int v = 0; v < s->n_vcta; v++)
		for (int i = 0; i <= s->v[v].n_reads; i++)
			for (int how = 0; how < 2; how++) {
				struct region *rg = i < s->v[v].n_reads ? &s->v[v].reads[i] : &s->v[v].write, keep = *rg;
				if (s->offset[rg->tensor] == UINT64_MAX)
					continue;
				if (how == 0)
					rg->c1 = s->cols[rg->tensor] + 8;
				else
					rg->r1 = s->rows[rg->tensor] + 1;
				struct bf bb;
				bf_init(&bb, s, t);
				int bad = bf_unsafe(&bb), rej = tables_verify(s, t, err, sizeof err) != 0;
				bf_free(&bb);
				*rg = keep;
				stretched++, s_unsafe += bad, s_rejected += rej;
				if (bad != rej)
					fail_msg("vCTA %d region %d stretched %s: %s by the checker, %s: %s", v, i,
						 how ? "past the rows" : "past the columns", bad ? "unsafe" : "safe",
						 rej ? "rejected" : "accepted", rej ? err : "");
			}
	printf("# %d regions stretched past their tensor: %d unsafe, %d rejected\n", stretched, s_unsafe, s_rejected);
	assert_true(s_unsafe > 0);
	printf("# %d placements (%d inside a row of a tensor of the same pitch, %d onto another pitch): %d unsafe, "
	       "%d rejected (%d of them safe)\n", tried, wrapped, mixed, unsafe, rejected, rejected_safe);
	assert_true(unsafe > 0 && unsafe < tried);
	assert_int_equal(rejected_safe, 0); /* the bytes swept are exactly the bytes accessed */
	assert_true(wrapped > 0 && mixed > 0);
	free(orig);
	arkgen_result_free(&r);
}

static void test_total(void **state)
{
	(void)state;
	report("all plans", &total);
	printf("# %d rejections name two accesses of overlapping bytes not ordered\n", total.unordered);
	assert_int_equal(total.unsafe > 0, 1);
	assert_true(total.unordered > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dma_consumer),
		cmocka_unit_test(test_dma_chunk_wait_dropped),
		cmocka_unit_test(test_split_k),
		cmocka_unit_test(test_chain),
		cmocka_unit_test(test_comm),
		cmocka_unit_test(test_two_phase),
		cmocka_unit_test(test_barrier),
		cmocka_unit_test(test_model_files),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_moved_offsets),
		cmocka_unit_test(test_total),
	};
	cmocka_set_message_output(CM_OUTPUT_TAP);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
