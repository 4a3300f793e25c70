/* verify.c: the proof that the tables arkgen emits are safe, made on the arrays emit.c prints
 * (struct tables), not on the dependency edges they came from. It reconstructs what the loop
 * kernels and the DMA engine do with them:
 *
 * - every SM runs its list in order; a task waits for each of its waits, runs its tile, then adds 1
 *   to its signal counter (a grid barrier adds 1 first, then waits); a DMA task instead pushes a
 *   request, and the engine copies it chunk by chunk (abi/ark_dma.h), storing chunk k's value into
 *   the flag after the chunk's bytes;
 * - a wait on a counter with `per_iter` raises per iteration, `need` of them wanted, synchronises
 *   with every raise when need == per_iter; with the raises of chunks 0 .. need - 1 of a DMA flag;
 *   with the barriers of levels 0 .. l when it is the l-th of a grid barrier; otherwise with none of
 *   them in particular. A wait at GPU scope on a counter raised from another GPU or by the engine
 *   synchronises with nothing. A sum of packets synchronises with the packet stores it polls.
 *
 * It checks that the tables are well formed and that per_iter is the raises a counter really gets
 * (else the targets of later iterations drift), runs the lists in the most permissive order to
 * prove that no iteration deadlocks and to get a topological order, computes vector clocks over
 * that order (one lane per SM, one per DMA request whose positions are its chunks), and then sweeps
 * every GPU's bytes in program order (vCTA number), as 2-D boxes of the tensors that share them (the
 * bytes section below), checking that each access is ordered after the
 * last write of its bytes and each write after the reads since: by transitivity that orders every
 * read-after-write, write-after-read and write-after-write pair without looking at pairs. Between
 * iterations only the DMA engine can overlap (the host rings i + 1 after every GPU completed i), so
 * every chunk of every request must be waited for within its iteration. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ark_dma.h"
#include "ark_proto.h"
#include "diag.h"
#include "partition/part.h"
#include "schedule.h"

/* One run of bytes [lo, hi) of a GPU's arena that a node reads or writes, at program position vcta. */
struct acc {
	uint64_t lo, hi;
	int node;
	int vcta;
	int tensor;
	uint8_t write;
};

struct accs {
	struct acc *a;
	int64_t n, cap;
};

struct vf {
	const struct tiling *s;
	const struct tables *t;
	char *err;
	size_t errlen;
	int G, sms, lanes;
	int base[ARK_MAX_GPUS + 1];     /* global index of GPU g's first task */
	int n_tasks, n_nodes;           /* nodes: the tasks, then every DMA request's chunks */
	int *gpu_of, *lane, *pos;       /* per node */
	int *dma_of;                    /* per task: its DMA request, -1 */
	int n_dma;
	int *dma_task, *dma_first;      /* per request: its task, its first chunk node */
	uint32_t *dma_n;                /* per request: chunks */
	int cbase[ARK_MAX_GPUS + 1];    /* global index of GPU g's first counter */
	int n_ctr;
	int64_t *sig0;                  /* per counter: its raisers sig[sig0[c] .. sig0[c + 1]) */
	int *sig;
	uint32_t *raises;               /* per counter: raises per iteration */
	int *ctr_dma;                   /* per counter: the request that stores it, -1 */
	uint8_t *remote;                /* per counter: raised from another GPU or by the engine */
	uint8_t *barrier;               /* per counter: the grid barriers' counter, as they must use it */
	int64_t *pk0;                   /* per task: packet stores it polls, pk[pk0[t] .. pk0[t + 1]) */
	int *pk;
	int *order;                     /* nodes in an order every synchronisation respects */
	struct part_clocks C;           /* per node: lanes positions that happen before or at it, kept
					 * until the last node that reads it (C.ref) */
	int have_clocks;
	int32_t **ctr_vc;               /* per counter: the join of its raisers' clocks (lazily) */
	int *ctr_readers;               /* per counter: waits still to read ctr_vc */
	int32_t **bar_vc;               /* per barrier level: the join of the barriers' arrivals */
	int32_t *last_dma;              /* per request: the last chunk some SM's last task knows of */
	/* Orderings the byte sweep needs (node ob[k][0] happens before node ob[k][1]), k in sweep order;
	 * checked on the later node's clock (obi[obx[y] .. obx[y + 1]): those ending at node y). */
	int (*ob)[2];
	int64_t n_ob, cap_ob;
	int64_t ob_first[ARK_MAX_GPUS + 1]; /* first of GPU g's sweep */
	int64_t *obx, *obi;
};

static int fail(struct vf *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct vf *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (f->err && f->errlen)
		vsnprintf(f->err, f->errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static const struct ark_task *task(const struct vf *f, int x)
{
	int g = f->gpu_of[x];
	return &f->t->gpu[g].tasks[x - f->base[g]];
}

static const struct ark_wait *waits_of(const struct vf *f, int x)
{
	return &f->t->gpu[f->gpu_of[x]].waits[task(f, x)->wait0];
}

/* "vCTA 12 (op 'fc1', matmul, GPU 0 SM 3 pos 2)", or the chunk of a request, or a grid barrier. */
static const char *who(const struct vf *f, int x, char *buf, size_t n)
{
	int chunk = -1;
	if (x >= f->n_tasks) {
		int d = 0;
		while (d + 1 < f->n_dma && f->dma_first[d + 1] <= x)
			d++;
		chunk = x - f->dma_first[d];
		x = f->dma_task[d];
	}
	const struct ark_task *k = task(f, x);
	int g = f->gpu_of[x], sm = f->lane[x] - g * f->sms;
	size_t used = 0;
	if (chunk >= 0)
		used = (size_t)snprintf(buf, n, "chunk %d of %u of ", chunk, f->dma_n[f->dma_of[x]]);
	if (k->tmpl == ARK_T_BARRIER)
		snprintf(buf + used, n - used, "the grid barrier at GPU %d SM %d pos %d", g, sm, f->pos[x]);
	else
		snprintf(buf + used, n - used, "vCTA %u (op '%s', %s, GPU %d SM %d pos %d)", k->vcta,
			 f->s->g->ops[f->s->v[k->vcta].op].name, tmpl_name(k->tmpl), g, sm, f->pos[x]);
	return buf;
}

/* ---- the tables, well formed ------------------------------------------------------------------ */

/* GPU whose counter array task x's signal goes to. */
static int signal_gpu(const struct vf *f, int x)
{
	const struct ark_task *k = task(f, x);
	if (k->tmpl == ARK_T_DMA) /* the engine raises the flag on the receiving GPU (opp.peer) */
		return f->s->g->tensors[f->s->v[k->vcta].write.tensor].gpu;
	return k->sig_peer ? k->sig_peer - 1 : f->gpu_of[x];
}

/* Every task in range, every vCTA exactly once on an SM of its GPU, every wait and signal naming a
 * counter that exists, every DMA task raising a flag. */
static int check_shape(struct vf *f)
{
	const struct tiling *s = f->s;
	uint8_t *seen = xcalloc((size_t)s->n_vcta + 1, 1);
	char b[256];
	int rc = 0;
	for (int g = 0; g < f->G && !rc; g++) {
		const struct gpu_tables *T = &f->t->gpu[g];
		if (T->sm_begin[0] != 0 || T->sm_begin[f->sms] != (uint32_t)T->n_tasks)
			rc = fail(f, "GPU %d: sm_begin does not cover its %d tasks", g, T->n_tasks);
		for (int sm = 0; sm < f->sms && !rc; sm++)
			if (T->sm_begin[sm] > T->sm_begin[sm + 1])
				rc = fail(f, "GPU %d: sm_begin decreases at SM %d", g, sm);
		for (int i = 0; i < T->n_tasks && !rc; i++) {
			const struct ark_task *k = &T->tasks[i];
			int x = f->base[g] + i;
			if (k->tmpl >= ARK_T__COUNT)
				rc = fail(f, "GPU %d task %d: template %u", g, i, k->tmpl);
			else if (k->tmpl != ARK_T_BARRIER &&
				 (k->vcta >= (uint32_t)s->n_vcta || seen[k->vcta] || s->v[k->vcta].gpu != g ||
				  s->v[k->vcta].tmpl != k->tmpl))
				rc = fail(f, "GPU %d task %d names vCTA %u, which is not a vCTA of that GPU and template "
					  "listed once", g, i, k->vcta);
			else if ((uint64_t)k->wait0 + k->n_wait > (uint64_t)T->n_waits)
				rc = fail(f, "%s: waits %u .. %u past the %" PRId64 " of its GPU", who(f, x, b, sizeof b),
					  k->wait0, k->wait0 + k->n_wait, T->n_waits);
			else if (k->sig_peer > f->G)
				rc = fail(f, "%s: signals GPU %d of %d", who(f, x, b, sizeof b), k->sig_peer - 1, f->G);
			if (rc)
				break;
			if (k->tmpl != ARK_T_BARRIER)
				seen[k->vcta] = 1;
			int sg = signal_gpu(f, x);
			if (k->signal >= 0 && (k->signal < ARK_CTR__FIRST ||
					       k->signal - ARK_CTR__FIRST >= f->t->gpu[sg].n_counters))
				rc = fail(f, "%s: signals counter %d, not a model counter of GPU %d", who(f, x, b, sizeof b),
					  k->signal, sg);
			else if (k->tmpl == ARK_T_DMA && k->signal < 0)
				rc = fail(f, "%s: a DMA request without a flag", who(f, x, b, sizeof b));
			for (uint32_t w = 0; w < k->n_wait && !rc; w++) {
				uint32_t c = T->waits[k->wait0 + w].counter;
				if (c < ARK_CTR__FIRST || c - ARK_CTR__FIRST >= (uint32_t)T->n_counters)
					rc = fail(f, "%s: waits on counter %u, not a model counter of GPU %d",
						  who(f, x, b, sizeof b), c, g);
			}
		}
	}
	for (int v = 0; v < s->n_vcta && !rc; v++)
		if (!seen[v])
			rc = fail(f, "vCTA %d (op '%s') is on no SM's list", v, s->g->ops[s->v[v].op].name);
	free(seen);
	return rc;
}

/* Chunks of DMA task x's request, as the device and the engine cut it. */
static uint32_t request_chunks(const struct vf *f, int x)
{
	const struct ark_task *k = task(f, x);
	const struct vcta *v = &f->s->v[k->vcta];
	uint64_t es = (uint64_t)ark_dtype_size(f->s->g->tensors[v->reads[0].tensor].dtype);
	return (uint32_t)dma_chunk_count((uint64_t)(k->k1 - k->k0) * es, ARK_DMA_CHUNK_BYTES, ARK_DMA_CHUNK_MAX_BYTES);
}

/* Raisers of every counter; a flag the engine stores is raised by nothing else. */
static int build_counters(struct vf *f)
{
	char b[256];
	f->n_ctr = f->cbase[f->G];
	f->sig0 = xcalloc((size_t)f->n_ctr + 2, sizeof *f->sig0);
	f->raises = xcalloc((size_t)f->n_ctr + 1, sizeof *f->raises);
	f->ctr_dma = xmalloc(((size_t)f->n_ctr + 1) * sizeof *f->ctr_dma);
	f->remote = xcalloc((size_t)f->n_ctr + 1, 1);
	f->barrier = xcalloc((size_t)f->n_ctr + 1, 1);
	for (int c = 0; c < f->n_ctr; c++)
		f->ctr_dma[c] = -1;
	for (int x = 0; x < f->n_tasks; x++)
		if (task(f, x)->signal >= 0)
			f->sig0[f->cbase[signal_gpu(f, x)] + task(f, x)->signal - ARK_CTR__FIRST + 1]++;
	for (int c = 0; c < f->n_ctr; c++)
		f->sig0[c + 1] += f->sig0[c];
	f->sig = xmalloc(((size_t)f->sig0[f->n_ctr] + 1) * sizeof *f->sig);
	int64_t *fill = xmalloc(((size_t)f->n_ctr + 1) * sizeof *fill);
	memcpy(fill, f->sig0, (size_t)f->n_ctr * sizeof *fill);
	for (int x = 0; x < f->n_tasks; x++) {
		const struct ark_task *k = task(f, x);
		if (k->signal < 0)
			continue;
		int g = signal_gpu(f, x), c = f->cbase[g] + k->signal - ARK_CTR__FIRST;
		f->sig[fill[c]++] = x;
		f->remote[c] |= g != f->gpu_of[x] || k->tmpl == ARK_T_DMA;
		if (k->tmpl == ARK_T_DMA) {
			f->ctr_dma[c] = f->dma_of[x];
			f->raises[c] += f->dma_n[f->dma_of[x]];
		} else {
			f->raises[c]++;
		}
	}
	free(fill);
	for (int c = 0; c < f->n_ctr; c++)
		if (f->ctr_dma[c] >= 0 && f->sig0[c + 1] - f->sig0[c] > 1)
			return fail(f, "%s: its flag is raised by %" PRId64 " tasks; the engine stores into it, so it must be "
				    "its own", who(f, f->dma_task[f->ctr_dma[c]], b, sizeof b), f->sig0[c + 1] - f->sig0[c]);
	return 0;
}

/* The grid barriers' counter of GPU g, when the barriers use it as the loop kernel's proof needs:
 * every SM has the same n_bar barriers, the l-th of each waits only on it for sms * (l + 1) of
 * sms * n_bar raises, and nothing else raises it or waits on it. Then reaching sms * (l + 1) needs
 * every barrier of levels 0 .. l (a barrier of a later level raises it only after its SM passed
 * level l). Any other use proves nothing. */
static void find_barriers(struct vf *f, int g)
{
	const struct gpu_tables *T = &f->t->gpu[g];
	int c = -1, nb = f->t->n_bar;
	for (int i = 0; i < T->n_tasks && c < 0; i++)
		if (T->tasks[i].tmpl == ARK_T_BARRIER && T->tasks[i].signal >= 0)
			c = T->tasks[i].signal - ARK_CTR__FIRST;
	if (c < 0 || !nb)
		return;
	int gc = f->cbase[g] + c;
	for (int sm = 0; sm < f->sms; sm++) {
		int l = 0;
		for (uint32_t i = T->sm_begin[sm]; i < T->sm_begin[sm + 1]; i++) {
			const struct ark_task *k = &T->tasks[i];
			int bar = k->tmpl == ARK_T_BARRIER, raises = k->signal == ARK_CTR(c);
			if (bar != raises || (bar && (k->n_wait != 1 || T->waits[k->wait0].counter != (uint32_t)ARK_CTR(c))))
				return;
			for (uint32_t w = 0; w < k->n_wait; w++) {
				const struct ark_wait *x = &T->waits[k->wait0 + w];
				if (x->counter == (uint32_t)ARK_CTR(c) &&
				    (!bar || k->n_wait != 1 || x->per_iter != (uint32_t)(f->sms * nb) ||
				     x->need != (uint32_t)(f->sms * (l + 1))))
					return;
			}
			l += bar;
		}
		if (l != nb)
			return;
	}
	f->barrier[gc] = 1;
}

/* Every wait's per_iter is the raises its counter gets per iteration (the targets of iteration i
 * are (i - 1) * per_iter + need: a wrong per_iter moves them into another iteration's raises), and
 * its need at most per_iter (a larger one is never reached). */
static int check_waits(struct vf *f)
{
	char b[256];
	for (int x = 0; x < f->n_tasks; x++) {
		const struct ark_task *k = task(f, x);
		const struct ark_wait *w = waits_of(f, x);
		for (uint32_t i = 0; i < k->n_wait; i++) {
			int c = f->cbase[f->gpu_of[x]] + (int)w[i].counter - ARK_CTR__FIRST;
			if (w[i].per_iter != f->raises[c])
				return fail(f, "%s: its wait %u counts %u raises of counter %u per iteration, which gets %u",
					    who(f, x, b, sizeof b), i, w[i].per_iter, w[i].counter - ARK_CTR__FIRST, f->raises[c]);
			if (w[i].need > w[i].per_iter)
				return fail(f, "%s: its wait %u needs %u raises of counter %u, which gets %u per iteration "
					    "(deadlock)", who(f, x, b, sizeof b), i, w[i].need, w[i].counter - ARK_CTR__FIRST,
					    w[i].per_iter);
		}
	}
	return 0;
}

/* ---- packets ---------------------------------------------------------------------------------- */

static int cmp_acc_lo(const void *a, const void *b)
{
	const struct acc *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Bytes [lo, hi) of region r in its GPU's arena, one run per row unless the rows are whole; *gpu.
 * Returns the number of runs written to out (at most r1 - r0), 0 for a region that is empty or
 * never stored. */
static int64_t runs(const struct tiling *s, const struct region *r, int *gpu, uint64_t (*out)[2], int64_t max)
{
	if (r->r0 >= r->r1 || r->c0 >= r->c1 || s->offset[r->tensor] == UINT64_MAX)
		return 0;
	uint64_t es = (uint64_t)ark_dtype_size(s->g->tensors[r->tensor].dtype);
	uint64_t cols = (uint64_t)tiling_mem_cols(s, r->tensor);
	uint64_t base = s->offset[r->tensor];
	*gpu = s->g->tensors[r->tensor].gpu;
	if (r->c0 == 0 && (uint64_t)r->c1 == cols) {
		out[0][0] = base + (uint64_t)r->r0 * cols * es;
		out[0][1] = base + (uint64_t)r->r1 * cols * es;
		return 1;
	}
	int64_t n = 0;
	for (int64_t row = r->r0; row < r->r1 && n < max; row++, n++) {
		out[n][0] = base + ((uint64_t)row * cols + (uint64_t)r->c0) * es;
		out[n][1] = base + ((uint64_t)row * cols + (uint64_t)r->c1) * es;
	}
	return n;
}

static void push(struct accs *A, struct acc a)
{
	if (A->n == A->cap) {
		A->cap = A->cap ? 2 * A->cap : 1024;
		A->a = xrealloc(A->a, (size_t)A->cap * sizeof *A->a);
	}
	A->a[A->n++] = a;
}

/* Every run of a region, appended to A[gpu]. */
static void add_region(const struct vf *f, struct accs *A, const struct region *r, int node, int vcta, int write)
{
	int64_t rows = r->r1 > r->r0 ? r->r1 - r->r0 : 0;
	uint64_t (*rb)[2] = xmalloc(((size_t)rows + 1) * sizeof *rb);
	int gpu = 0;
	int64_t n = runs(f->s, r, &gpu, rb, rows);
	for (int64_t i = 0; i < n; i++)
		push(&A[gpu], (struct acc){rb[i][0], rb[i][1], node, vcta, r->tensor, (uint8_t)write});
	free(rb);
}

/* A sum of packets polls every packet of its words until it holds this iteration: it waits for
 * the packet stores (SEND_LL) that wrote the bytes it reads there, and synchronises with them
 * (fences on both sides: docs/design.md). Found by a binary search among the packet stores of its
 * GPU, which write disjoint bytes. */
static int packet_sources(struct vf *f)
{
	const struct tiling *s = f->s;
	struct accs P[ARK_MAX_GPUS] = {{0}};
	for (int x = 0; x < f->n_tasks; x++)
		if (task(f, x)->tmpl == ARK_T_SEND_LL)
			add_region(f, P, &s->v[task(f, x)->vcta].write, x, (int)task(f, x)->vcta, 1);
	for (int g = 0; g < f->G; g++) {
		if (P[g].n)
			qsort(P[g].a, (size_t)P[g].n, sizeof *P[g].a, cmp_acc_lo);
		for (int64_t i = 1; i < P[g].n; i++)
			if (P[g].a[i].lo < P[g].a[i - 1].hi) {
				char b1[256], b2[256];
				for (int h = 0; h < f->G; h++)
					free(P[h].a);
				return fail(f, "%s and %s store packets into the same bytes", who(f, P[g].a[i - 1].node, b1, sizeof b1),
					    who(f, P[g].a[i].node, b2, sizeof b2));
			}
	}
	/* Two passes over the sums: count, then fill. */
	f->pk0 = xcalloc((size_t)f->n_tasks + 2, sizeof *f->pk0);
	for (int pass = 0; pass < 2; pass++) {
		int64_t n = 0;
		for (int x = 0; x < f->n_tasks; x++) {
			const struct ark_task *k = task(f, x);
			if (pass == 0)
				f->pk0[x] = n;
			if (k->tmpl != ARK_T_SUM_LL)
				continue;
			const struct vcta *v = &s->v[k->vcta];
			for (int r = 0; r < v->n_reads; r++) {
				struct accs R[ARK_MAX_GPUS] = {{0}};
				add_region(f, R, &v->reads[r], x, (int)k->vcta, 0);
				const struct accs *Q = &P[f->gpu_of[x]];
				for (int64_t j = 0; j < R[f->gpu_of[x]].n; j++) {
					const struct acc *a = &R[f->gpu_of[x]].a[j];
					int64_t lo = 0, hi = Q->n; /* first packet store ending after a->lo */
					while (lo < hi) {
						int64_t mid = (lo + hi) / 2;
						if (Q->a[mid].hi <= a->lo)
							lo = mid + 1;
						else
							hi = mid;
					}
					for (; lo < Q->n && Q->a[lo].lo < a->hi; lo++, n++)
						if (pass)
							f->pk[n] = Q->a[lo].node;
				}
				for (int h = 0; h < f->G; h++)
					free(R[h].a);
			}
		}
		f->pk0[f->n_tasks] = n;
		if (!pass)
			f->pk = xmalloc(((size_t)n + 1) * sizeof *f->pk);
	}
	for (int g = 0; g < f->G; g++)
		free(P[g].a);
	return 0;
}

/* ---- one iteration, run in the most permissive order -------------------------------------------- */

/* Runs every SM's list as far as the counters and packets let it, chunks arriving as soon as their
 * request is pushed: every node that can run in some execution runs here, in an order that every
 * synchronisation respects (f->order). A task left over waits in every execution: a deadlock. */
static int run_lists(struct vf *f)
{
	int S = f->G * f->sms, n_order = 0;
	int *next = xcalloc((size_t)S, sizeof *next), *wk = xcalloc((size_t)S, sizeof *wk);
	uint8_t *arrived = xcalloc((size_t)S, 1), *done = xcalloc((size_t)f->n_tasks + 1, 1);
	int64_t *cnt = xcalloc((size_t)f->n_ctr + 1, sizeof *cnt);
	/* SMs blocked on a counter or on a packet store: linked lists; queue of SMs to retry */
	int *ctr_head = xmalloc(((size_t)f->n_ctr + 1) * sizeof *ctr_head);
	int *task_head = xmalloc(((size_t)f->n_tasks + 1) * sizeof *task_head);
	int *link = xmalloc((size_t)S * sizeof *link), *queue = xmalloc((size_t)S * sizeof *queue);
	for (int c = 0; c < f->n_ctr; c++)
		ctr_head[c] = -1;
	for (int x = 0; x < f->n_tasks; x++)
		task_head[x] = -1;
	int qn = 0;
	for (int q = 0; q < S; q++)
		queue[qn++] = q;
	f->order = xmalloc(((size_t)f->n_nodes + 1) * sizeof *f->order);
#define WAKE(head)                                                                                      \
	do {                                                                                            \
		for (int q_ = (head); q_ >= 0; q_ = link[q_])                                           \
			queue[qn++] = q_;                                                               \
		(head) = -1;                                                                            \
	} while (0)
	while (qn > 0) {
		int q = queue[--qn], g = q / f->sms;
		const struct gpu_tables *T = &f->t->gpu[g];
		for (;;) {
			uint32_t i = T->sm_begin[q % f->sms] + (uint32_t)next[q];
			if (i >= T->sm_begin[q % f->sms + 1])
				break;
			int x = f->base[g] + (int)i;
			const struct ark_task *k = task(f, x);
			if (k->tmpl == ARK_T_BARRIER && !arrived[q] && k->signal >= 0) {
				int c = f->cbase[g] + k->signal - ARK_CTR__FIRST;
				arrived[q] = 1;
				cnt[c]++;
				WAKE(ctr_head[c]);
			}
			const struct ark_wait *w = waits_of(f, x);
			int blocked = 0;
			for (; wk[q] < k->n_wait; wk[q]++) {
				int c = f->cbase[g] + (int)w[wk[q]].counter - ARK_CTR__FIRST;
				if (cnt[c] < w[wk[q]].need) {
					link[q] = ctr_head[c];
					ctr_head[c] = q;
					blocked = 1;
					break;
				}
			}
			for (int64_t j = f->pk0[x]; !blocked && j < f->pk0[x + 1]; j++)
				if (!done[f->pk[j]]) {
					link[q] = task_head[f->pk[j]];
					task_head[f->pk[j]] = q;
					blocked = 1;
				}
			if (blocked)
				break;
			done[x] = 1;
			f->order[n_order++] = x;
			next[q]++, wk[q] = 0, arrived[q] = 0;
			WAKE(task_head[x]);
			if (k->signal >= 0 && k->tmpl != ARK_T_BARRIER) {
				int c = f->cbase[signal_gpu(f, x)] + k->signal - ARK_CTR__FIRST;
				if (k->tmpl == ARK_T_DMA) {
					int d = f->dma_of[x];
					for (uint32_t j = 0; j < f->dma_n[d]; j++)
						f->order[n_order++] = f->dma_first[d] + (int)j;
					cnt[c] = f->dma_n[d];
				} else {
					cnt[c]++;
				}
				WAKE(ctr_head[c]);
			}
		}
	}
#undef WAKE
	int rc = 0;
	for (int q = 0; q < S && !rc; q++) {
		int g = q / f->sms;
		const struct gpu_tables *T = &f->t->gpu[g];
		uint32_t i = T->sm_begin[q % f->sms] + (uint32_t)next[q];
		if (i >= T->sm_begin[q % f->sms + 1])
			continue;
		int x = f->base[g] + (int)i;
		char b[256], b2[256];
		if (wk[q] < task(f, x)->n_wait) {
			const struct ark_wait *w = &waits_of(f, x)[wk[q]];
			rc = fail(f, "deadlock: %s waits for %u raises of counter %u of GPU %d, which gets only %" PRId64
				  " in an iteration where every task that can run has run", who(f, x, b, sizeof b), w->need,
				  w->counter - ARK_CTR__FIRST, g, cnt[f->cbase[g] + (int)w->counter - ARK_CTR__FIRST]);
		} else {
			int src = -1;
			for (int64_t j = f->pk0[x]; j < f->pk0[x + 1] && src < 0; j++)
				if (!done[f->pk[j]])
					src = f->pk[j];
			rc = fail(f, "deadlock: %s polls packets of %s, which never runs", who(f, x, b, sizeof b),
				  who(f, src, b2, sizeof b2));
		}
	}
	if (!rc)
		ARK_ASSERT(n_order == f->n_nodes);
	free(next), free(wk), free(arrived), free(done), free(cnt), free(ctr_head), free(task_head), free(link),
		free(queue);
	return rc;
}

/* ---- happens-before: vector clocks ---------------------------------------------------------------- */

static void join(int32_t *acc, const int32_t *src, int n)
{
	for (int i = 0; i < n; i++)
		acc[i] = src[i] > acc[i] ? src[i] : acc[i];
}

static const int32_t *clock_of(const struct vf *f, int x)
{
	return part_clock(&f->C, x);
}

/* Clock of node x's predecessor on its SM (or of the request, for a chunk), or of nothing; that
 * read of the predecessor's clock done. */
static void start_clock(struct vf *f, int x, int32_t *acc)
{
	int from = -1;
	if (f->pos[x] > 0)
		from = x - 1;
	else if (x >= f->n_tasks)
		from = f->dma_task[f->lane[x] - f->G * f->sms];
	if (from >= 0) {
		memcpy(acc, clock_of(f, from), (size_t)f->lanes * sizeof *acc);
		part_clock_release(&f->C, from);
	} else {
		for (int i = 0; i < f->lanes; i++)
			acc[i] = -1;
	}
}

/* Join of the arrivals of the l-th grid barriers of GPU g: their SMs' clocks before them. */
static const int32_t *barrier_clock(struct vf *f, int g, int l)
{
	int32_t **bc = &f->bar_vc[g * f->t->n_bar + l];
	if (*bc)
		return *bc;
	*bc = xmalloc((size_t)f->lanes * sizeof **bc);
	for (int i = 0; i < f->lanes; i++)
		(*bc)[i] = -1;
	const struct gpu_tables *T = &f->t->gpu[g];
	for (int sm = 0; sm < f->sms; sm++)
		for (uint32_t i = T->sm_begin[sm], m = 0; i < T->sm_begin[sm + 1]; i++)
			if (T->tasks[i].tmpl == ARK_T_BARRIER && m++ == (uint32_t)l) {
				if (i > T->sm_begin[sm]) {
					join(*bc, clock_of(f, f->base[g] + (int)i - 1), f->lanes);
					part_clock_release(&f->C, f->base[g] + (int)i - 1);
				}
				break;
			}
	return *bc;
}

/* The node whose clock a raise by task x carries: x's, or for a grid barrier, which raises before
 * it waits, its predecessor's (-1: none). */
static int raise_node(const struct vf *f, int x)
{
	if (task(f, x)->tmpl != ARK_T_BARRIER)
		return x;
	return f->pos[x] > 0 ? x - 1 : -1;
}

/* What wait w (on GPU g) synchronises with, by the clock it reads: 1 a chunk's (*node), 2 the
 * grid barrier's, 3 every raiser's of counter *c, 0 none. */
static int wait_kind(const struct vf *f, int g, const struct ark_wait *w, int *c, int *node)
{
	*c = f->cbase[g] + (int)w->counter - ARK_CTR__FIRST;
	if (w->need == 0 || (f->remote[*c] && !w->sys))
		return 0; /* satisfied at once, or an acquire too narrow for the releases */
	if (f->ctr_dma[*c] >= 0) { /* chunks 0 .. need - 1 arrived */
		*node = f->dma_first[f->ctr_dma[*c]] + (int)w->need - 1;
		return 1;
	}
	if (f->barrier[*c])
		return 2;
	return w->need == w->per_iter ? 3 : 0; /* else: need of several raisers' per_iter, none in particular */
}

/* What wait w of task x (on GPU g) synchronises with, joined into acc. */
static void join_wait(struct vf *f, int x, int g, const struct ark_wait *w, int32_t *acc)
{
	int c, node;
	switch (wait_kind(f, g, w, &c, &node)) {
	case 1:
		join(acc, clock_of(f, node), f->lanes);
		part_clock_release(&f->C, node);
		break;
	case 2: {
		int l = 0;
		for (uint32_t i = f->t->gpu[g].sm_begin[(f->lane[x] - g * f->sms)]; (int)i < x - f->base[g]; i++)
			l += f->t->gpu[g].tasks[i].tmpl == ARK_T_BARRIER;
		join(acc, barrier_clock(f, g, l), f->lanes);
		break;
	}
	case 3:
		if (!f->ctr_vc[c]) {
			f->ctr_vc[c] = xmalloc((size_t)f->lanes * sizeof *f->ctr_vc[c]);
			for (int i = 0; i < f->lanes; i++)
				f->ctr_vc[c][i] = -1;
			for (int64_t j = f->sig0[c]; j < f->sig0[c + 1]; j++) {
				int r = raise_node(f, f->sig[j]);
				if (r >= 0) {
					join(f->ctr_vc[c], clock_of(f, r), f->lanes);
					part_clock_release(&f->C, r);
				}
			}
		}
		join(acc, f->ctr_vc[c], f->lanes);
		if (--f->ctr_readers[c] == 0) {
			free(f->ctr_vc[c]);
			f->ctr_vc[c] = NULL;
		}
		break;
	}
}

/* How many times each node's clock will be read (C.ref), and each counter's join (ctr_readers). */
static void clock_refs(struct vf *f)
{
	int *ref = f->C.ref;
	for (int x = 0; x < f->n_nodes; x++)
		if (f->pos[x] > 0)
			ref[x - 1]++;
	for (int d = 0; d < f->n_dma; d++)
		ref[f->dma_task[d]]++;
	for (int x = 0; x < f->n_tasks; x++) {
		int g = f->gpu_of[x], c, node;
		const struct ark_task *k = task(f, x);
		const struct ark_wait *w = waits_of(f, x);
		for (uint32_t i = 0; i < k->n_wait; i++)
			switch (wait_kind(f, g, &w[i], &c, &node)) {
			case 1: ref[node]++; break;
			case 3: f->ctr_readers[c]++; break;
			default: break;
			}
		for (int64_t j = f->pk0[x]; j < f->pk0[x + 1]; j++)
			ref[f->pk[j]]++;
		if (k->tmpl == ARK_T_BARRIER && f->pos[x] > 0)
			ref[x - 1]++; /* read by barrier_clock */
	}
	for (int c = 0; c < f->n_ctr; c++)
		if (f->ctr_readers[c])
			for (int64_t j = f->sig0[c]; j < f->sig0[c + 1]; j++)
				if (raise_node(f, f->sig[j]) >= 0)
					ref[raise_node(f, f->sig[j])]++;
}

/* Computes every clock in f->order, each kept only while a later node has to read it, and checks
 * on each node's clock the orderings the sweep found that end at it: *bad is the first of those
 * that does not hold (in sweep order), -1 if none. Also notes, for check_arrivals, what the last
 * task of every SM knows of each request's chunks. */
static int clocks(struct vf *f, int64_t *bad)
{
	if (part_clocks_init(&f->C, f->n_nodes, f->lanes) < 0)
		return fail(f, "out of memory verifying %d tasks", f->n_tasks);
	f->have_clocks = 1;
	f->ctr_vc = xcalloc((size_t)f->n_ctr + 1, sizeof *f->ctr_vc);
	f->ctr_readers = xcalloc((size_t)f->n_ctr + 1, sizeof *f->ctr_readers);
	f->bar_vc = xcalloc((size_t)f->G * (size_t)f->t->n_bar + 1, sizeof *f->bar_vc);
	f->last_dma = xmalloc(((size_t)f->n_dma + 1) * sizeof *f->last_dma);
	for (int d = 0; d < f->n_dma; d++)
		f->last_dma[d] = -1;
	clock_refs(f);
	*bad = -1;
	for (int k = 0; k < f->n_nodes; k++) {
		int x = f->order[k];
		int32_t *acc = part_clock_new(&f->C, x);
		if (!acc)
			return fail(f, "out of memory verifying %d tasks", f->n_tasks);
		start_clock(f, x, acc);
		if (x < f->n_tasks) {
			int g = f->gpu_of[x];
			const struct ark_wait *w = waits_of(f, x);
			for (uint32_t i = 0; i < task(f, x)->n_wait; i++)
				join_wait(f, x, g, &w[i], acc);
			for (int64_t j = f->pk0[x]; j < f->pk0[x + 1]; j++) {
				join(acc, clock_of(f, f->pk[j]), f->lanes);
				part_clock_release(&f->C, f->pk[j]);
			}
		}
		acc[f->lane[x]] = f->pos[x];
		for (int64_t j = f->obx[x]; j < f->obx[x + 1]; j++) { /* node ob[i][0] happens before x */
			int64_t i = f->obi[j];
			int u = f->ob[i][0];
			if (acc[f->lane[u]] < f->pos[u] && (*bad < 0 || i < *bad))
				*bad = i;
		}
		if (x < f->n_tasks) {
			int g = f->gpu_of[x], sm = f->lane[x] - g * f->sms;
			if (x - f->base[g] + 1 == (int)f->t->gpu[g].sm_begin[sm + 1]) /* the last task of its SM */
				for (int d = 0; d < f->n_dma; d++)
					if (acc[f->G * f->sms + d] > f->last_dma[d])
						f->last_dma[d] = acc[f->G * f->sms + d];
		}
		if (!f->C.ref[x])
			part_clock_release(&f->C, x);
	}
	return 0;
}

/* Every chunk of every request arrives within its iteration: some task waits for the last one (the
 * host submits the next iteration when every task finished; a chunk still in flight would copy
 * bytes that the next iteration's tasks write, or that the host does). The last task of an SM
 * knows all its SM knows. */
static int check_arrivals(struct vf *f)
{
	int rc = 0;
	for (int d = 0; d < f->n_dma && !rc; d++)
		if (f->last_dma[d] < (int32_t)f->dma_n[d] - 1) {
			char b[256];
			rc = fail(f, "%s: no task of the iteration waits for chunk %u of its %u, which may then still be "
				  "copying when the next iteration starts", who(f, f->dma_task[d], b, sizeof b), f->dma_n[d] - 1,
				  f->dma_n[d]);
		}
	return rc;
}

/* ---- the bytes -------------------------------------------------------------------------------------- */

/* The bytes are swept as 2-D boxes, not one run per row. A GPU's accessed tensors are grouped into
 * spaces: the tensors whose bytes overlap (memory reuse, views) share one. A space whose tensors
 * all have the same row pitch P (bytes) is a grid of rows of P bytes from its lowest byte O: byte
 * O + r * P + c is cell (r, c), a region of a tensor is at most two boxes of it (one where its rows
 * do not start at a multiple of P from O and wrap), a contiguous range at most three. A space that
 * mixes pitches is one row of bytes (P = 0): a region is one box per row, as runs are. Every box
 * covers exactly its bytes, so the sweep over boxes sees the same accesses of every byte. */
struct box {
	int64_t r0, r1;   /* rows of the space */
	uint64_t c0, c1;  /* bytes within a row (P = 0: from O) */
	int node, vcta, tensor, sp;
	uint8_t write;
};

struct space {
	uint64_t o, end, p; /* bytes [o, end) of the GPU; p: row pitch, 0: one row */
	int written;        /* some box of the space writes (else its reads are left out) */
};

struct gbytes {
	struct box *b;
	int64_t n, cap;
	struct space *sp;
	int n_sp;
	int *sp_of; /* per tensor: its space on this GPU, -1 */
};

static void box_push(struct gbytes *B, struct box x)
{
	if (x.r0 >= x.r1 || x.c0 >= x.c1)
		return;
	if (B->n == B->cap) {
		B->cap = B->cap ? 2 * B->cap : 1024;
		B->b = xrealloc(B->b, (size_t)B->cap * sizeof *B->b);
	}
	B->b[B->n++] = x;
}

/* Bytes [a, b) of the GPU, of tensor t, as boxes of its space. */
static void range_boxes(struct gbytes *B, int t, uint64_t a, uint64_t b, struct box x)
{
	const struct space *S = &B->sp[B->sp_of[t]];
	x.tensor = t, x.sp = B->sp_of[t];
	a -= S->o, b -= S->o;
	if (!S->p) {
		x.r0 = 0, x.r1 = 1, x.c0 = a, x.c1 = b;
		box_push(B, x);
		return;
	}
	int64_t ra = (int64_t)(a / S->p), rb = (int64_t)(b / S->p);
	uint64_t ca = a % S->p, cb = b % S->p;
	if (ra == rb) {
		x.r0 = ra, x.r1 = ra + 1, x.c0 = ca, x.c1 = cb;
		box_push(B, x);
		return;
	}
	if (ca) { /* the partial first row */
		x.r0 = ra, x.r1 = ra + 1, x.c0 = ca, x.c1 = S->p;
		box_push(B, x);
		ra++;
	}
	x.r0 = ra, x.r1 = rb, x.c0 = 0, x.c1 = S->p; /* the whole rows */
	box_push(B, x);
	x.r0 = rb, x.r1 = rb + 1, x.c0 = 0, x.c1 = cb; /* the partial last row */
	box_push(B, x);
}

/* Region r (of a tensor with a space) as boxes. */
static void region_boxes(const struct vf *f, struct gbytes *B, const struct region *r, int node, int vcta, int write)
{
	const struct tiling *s = f->s;
	int t = r->tensor;
	if (r->r0 >= r->r1 || r->c0 >= r->c1 || s->offset[t] == UINT64_MAX)
		return;
	const struct space *S = &B->sp[B->sp_of[t]];
	uint64_t es = (uint64_t)ark_dtype_size(s->g->tensors[t].dtype), cols = (uint64_t)tiling_mem_cols(s, t);
	uint64_t base = s->offset[t];
	struct box x = {.node = node, .vcta = vcta, .tensor = t, .sp = B->sp_of[t], .write = (uint8_t)write};
	if (r->c0 == 0 && (uint64_t)r->c1 == cols) {
		range_boxes(B, t, base + (uint64_t)r->r0 * cols * es, base + (uint64_t)r->r1 * cols * es, x);
		return;
	}
	if (!S->p) {
		for (int64_t row = r->r0; row < r->r1; row++)
			range_boxes(B, t, base + ((uint64_t)row * cols + (uint64_t)r->c0) * es,
				    base + ((uint64_t)row * cols + (uint64_t)r->c1) * es, x);
		return;
	}
	/* pitch p = cols * es: row `row` of the tensor starts at cell (r0t + row, d) */
	int64_t r0t = (int64_t)((base - S->o) / S->p);
	uint64_t d = (base - S->o) % S->p, lo = d + (uint64_t)r->c0 * es, hi = d + (uint64_t)r->c1 * es;
	if (hi <= S->p) {
		x.r0 = r0t + r->r0, x.r1 = r0t + r->r1, x.c0 = lo, x.c1 = hi;
		box_push(B, x);
	} else if (lo >= S->p) {
		x.r0 = r0t + r->r0 + 1, x.r1 = r0t + r->r1 + 1, x.c0 = lo - S->p, x.c1 = hi - S->p;
		box_push(B, x);
	} else { /* each row wraps: its head ends a row of the space, its tail starts the next */
		x.r0 = r0t + r->r0, x.r1 = r0t + r->r1, x.c0 = lo, x.c1 = S->p;
		box_push(B, x);
		x.r0 = r0t + r->r0 + 1, x.r1 = r0t + r->r1 + 1, x.c0 = 0, x.c1 = hi - S->p;
		box_push(B, x);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

/* Space, then program order (vCTA number, its reads before its write). */
static int cmp_box(const void *a, const void *b)
{
	const struct box *x = a, *y = b;
	if (x->sp != y->sp)
		return x->sp < y->sp ? -1 : 1;
	if (x->vcta != y->vcta)
		return x->vcta < y->vcta ? -1 : 1;
	return (int)x->write - (int)y->write;
}

/* Index of the first boundary >= v. */
static int64_t lower(const uint64_t *b, int64_t n, uint64_t v)
{
	int64_t lo = 0, hi = n;
	while (lo < hi) {
		int64_t mid = (lo + hi) / 2;
		if (b[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int64_t lower_i64(const int64_t *b, int64_t n, int64_t v)
{
	int64_t lo = 0, hi = n;
	while (lo < hi) {
		int64_t mid = (lo + hi) / 2;
		if (b[mid] < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The spaces of every GPU: the tensors some task accesses, grouped where the bytes they hold or
 * their regions reach overlap. A tensor with a region outside its columns makes its space one row. */
static void make_spaces(const struct vf *f, struct gbytes *B)
{
	const struct tiling *s = f->s;
	int nt = s->g->n_tensors;
	uint8_t *used = xcalloc((size_t)nt + 1, 1), *odd = xcalloc((size_t)nt + 1, 1);
	uint64_t *lo = xmalloc(((size_t)nt + 1) * sizeof *lo), *hi = xmalloc(((size_t)nt + 1) * sizeof *hi);
	for (int t = 0; t < nt; t++) {
		uint64_t es = (uint64_t)ark_dtype_size(s->g->tensors[t].dtype);
		lo[t] = s->offset[t];
		hi[t] = s->offset[t] + (uint64_t)s->rows[t] * (uint64_t)tiling_mem_cols(s, t) * es;
	}
	for (int x = 0; x < f->n_tasks; x++) {
		const struct ark_task *k = task(f, x);
		if (k->tmpl == ARK_T_BARRIER)
			continue;
		const struct vcta *v = &s->v[k->vcta];
		for (int i = 0; i <= v->n_reads; i++) {
			const struct region *r = i < v->n_reads ? &v->reads[i] : &v->write;
			int t = r->tensor;
			used[t] = 1;
			if (r->r0 >= r->r1 || r->c0 >= r->c1 || s->offset[t] == UINT64_MAX)
				continue;
			int64_t es = ark_dtype_size(s->g->tensors[t].dtype), cols = tiling_mem_cols(s, t);
			int64_t a = (int64_t)s->offset[t] + (r->r0 * cols + r->c0) * es;
			int64_t e = (int64_t)s->offset[t] + ((r->r1 - 1) * cols + r->c1) * es;
			odd[t] |= r->r0 < 0 || r->c0 < 0 || r->c1 > s->cols[t];
			if (a < (int64_t)lo[t])
				lo[t] = a > 0 ? (uint64_t)a : 0;
			if (e > (int64_t)hi[t])
				hi[t] = (uint64_t)e;
		}
	}
	int64_t (*key)[2] = xmalloc(((size_t)nt + 1) * sizeof *key);
	for (int g = 0; g < f->G; g++) {
		struct gbytes *G = &B[g];
		G->sp_of = xmalloc(((size_t)nt + 1) * sizeof *G->sp_of);
		int n = 0;
		for (int t = 0; t < nt; t++) {
			G->sp_of[t] = -1;
			if (used[t] && s->g->tensors[t].gpu == g && s->offset[t] != UINT64_MAX)
				key[n][0] = (int64_t)lo[t], key[n++][1] = t;
		}
		qsort(key, (size_t)n, sizeof *key, cmp_i64); /* by first byte */
		G->sp = xmalloc(((size_t)n + 1) * sizeof *G->sp);
		G->n_sp = 0;
		for (int i = 0; i < n; i++) {
			int t = (int)key[i][1];
			uint64_t pitch = odd[t] ? 0 : (uint64_t)tiling_mem_cols(s, t) * (uint64_t)ark_dtype_size(s->g->tensors[t].dtype);
			uint64_t end = hi[t] > lo[t] ? hi[t] : lo[t] + 1;
			struct space *S = G->n_sp ? &G->sp[G->n_sp - 1] : NULL;
			if (!S || lo[t] >= S->end) {
				S = &G->sp[G->n_sp++];
				*S = (struct space){lo[t], end, pitch, 0};
			} else {
				if (end > S->end)
					S->end = end;
				if (S->p != pitch)
					S->p = 0;
			}
			G->sp_of[t] = G->n_sp - 1;
		}
	}
	free(key), free(used), free(odd), free(lo), free(hi);
}

/* The accesses of every node as boxes: tiles read and write their regions; a DMA request's chunk k
 * reads and writes the bytes of chunk k of its source and destination (contiguous ranges). Reads of
 * a space nothing writes in the iteration (weights, inputs) cannot be part of a hazard and are
 * left out. */
static int gather(struct vf *f, struct gbytes *B)
{
	const struct tiling *s = f->s;
	make_spaces(f, B);
	for (int x = 0; x < f->n_tasks; x++) {
		const struct ark_task *k = task(f, x);
		if (k->tmpl == ARK_T_BARRIER)
			continue;
		const struct vcta *v = &s->v[k->vcta];
		if (k->tmpl != ARK_T_DMA) {
			const struct region *r = &v->write;
			if (s->offset[r->tensor] != UINT64_MAX) {
				struct gbytes *G = &B[s->g->tensors[r->tensor].gpu];
				region_boxes(f, G, r, x, (int)k->vcta, 1);
				G->sp[G->sp_of[r->tensor]].written = 1;
			}
			continue;
		}
		int d = f->dma_of[x];
		for (int side = 0; side < 2; side++) {
			const struct region *r = side ? &v->write : &v->reads[0];
			struct accs R[ARK_MAX_GPUS] = {{0}};
			add_region(f, R, r, x, (int)k->vcta, side);
			int g = s->g->tensors[r->tensor].gpu;
			/* the runs of a contiguous box follow each other */
			uint64_t lo = R[g].n ? R[g].a[0].lo : 0, hi = lo;
			for (int64_t i = 0; i < R[g].n; i++)
				hi = R[g].a[i].lo == hi ? R[g].a[i].hi : hi;
			uint64_t es = (uint64_t)ark_dtype_size(s->g->tensors[r->tensor].dtype);
			free(R[g].a);
			if (hi - lo != (uint64_t)(k->k1 - k->k0) * es) {
				char b[256];
				return fail(f, "%s: its %s is not the contiguous range of its request", who(f, x, b, sizeof b),
					    side ? "destination" : "source");
			}
			if (hi == lo)
				continue;
			struct gbytes *G = &B[g];
			G->sp[G->sp_of[r->tensor]].written |= side;
			for (uint32_t c = 0; c < f->dma_n[d]; c++) {
				uint64_t a = dma_chunk_start(c, ARK_DMA_CHUNK_BYTES, ARK_DMA_CHUNK_MAX_BYTES);
				uint64_t e = dma_chunk_start(c + 1, ARK_DMA_CHUNK_BYTES, ARK_DMA_CHUNK_MAX_BYTES);
				e = e > hi - lo ? hi - lo : e;
				if (a < e)
					range_boxes(G, r->tensor, lo + a, lo + e,
						    (struct box){.node = f->dma_first[d] + (int)c, .vcta = (int)k->vcta,
								 .write = (uint8_t)side});
			}
		}
	}
	for (int x = 0; x < f->n_tasks; x++) {
		const struct ark_task *k = task(f, x);
		if (k->tmpl == ARK_T_BARRIER || k->tmpl == ARK_T_DMA)
			continue;
		const struct vcta *v = &s->v[k->vcta];
		for (int r = 0; r < v->n_reads; r++) {
			int t = v->reads[r].tensor;
			if (s->offset[t] == UINT64_MAX)
				continue;
			struct gbytes *G = &B[s->g->tensors[t].gpu];
			if (G->sp[G->sp_of[t]].written)
				region_boxes(f, G, &v->reads[r], x, (int)k->vcta, 0);
		}
	}
	for (int g = 0; g < f->G; g++)
		if (B[g].n)
			qsort(B[g].b, (size_t)B[g].n, sizeof *B[g].b, cmp_box);
	return 0;
}

static void gbytes_free(struct gbytes *B)
{
	free(B->b), free(B->sp), free(B->sp_of);
}

/* The first access (earlier in program order) is not ordered before the second: say which, where
 * (the first row of bytes their boxes share). */
static int unordered(struct vf *f, int g, const struct gbytes *B, const struct box *x, const struct box *y)
{
	static const char *const kind[2][2] = {{"", "write after read"}, {"read after write", "write after write"}};
	char b1[256], b2[256];
	const struct tensor *tx = &f->s->g->tensors[x->tensor], *ty = &f->s->g->tensors[y->tensor];
	const struct space *S = &B->sp[x->sp];
	int64_t row = x->r0 > y->r0 ? x->r0 : y->r0;
	uint64_t c0 = x->c0 > y->c0 ? x->c0 : y->c0, c1 = x->c1 < y->c1 ? x->c1 : y->c1;
	uint64_t lo = S->o + (uint64_t)row * S->p + c0, hi = S->o + (uint64_t)row * S->p + c1;
	return fail(f, "%s of bytes [%" PRIu64 ", %" PRIu64 ") of GPU %d (tensor '%s' then '%s') is not ordered: "
		    "%s may run before %s finishes with them", kind[x->write][y->write], lo, hi, g, tx->name, ty->name,
		    who(f, y->node, b2, sizeof b2), who(f, x->node, b1, sizeof b1));
}

/* One more ordering: node x before node y. */
static void need_order(struct vf *f, int x, int y)
{
	if (f->n_ob == f->cap_ob) {
		f->cap_ob = f->cap_ob ? 2 * f->cap_ob : 1024;
		f->ob = xrealloc(f->ob, (size_t)f->cap_ob * sizeof *f->ob);
	}
	f->ob[f->n_ob][0] = x;
	f->ob[f->n_ob++][1] = y;
}

/* The cells of one space: its rows cut into bands at every box's first and last row, each band's
 * bytes cut at the columns of the boxes that cover it. A box covers whole cells. */
struct cells {
	int64_t *rb, nrb;  /* band boundaries (rows) */
	int64_t *cx;       /* per band: its column boundaries cv[cx[i] .. cx[i] + nc[i]) */
	int64_t *nc;
	uint64_t *cv;
	int64_t *cell0;    /* per band: its first cell; cell0[nrb - 1]: the cells */
};

static void cells_build(struct cells *C, const struct box *b, int64_t n)
{
	C->rb = xmalloc((size_t)(2 * n + 1) * sizeof *C->rb);
	int64_t m = 0;
	for (int64_t i = 0; i < n; i++)
		C->rb[m++] = b[i].r0, C->rb[m++] = b[i].r1;
	qsort(C->rb, (size_t)m, sizeof *C->rb, cmp_i64);
	int64_t u = 0;
	for (int64_t i = 0; i < m; i++)
		if (!u || C->rb[u - 1] != C->rb[i])
			C->rb[u++] = C->rb[i];
	C->nrb = u;
	int64_t nb = u - 1; /* bands */
	C->cx = xcalloc((size_t)nb + 2, sizeof *C->cx);
	C->nc = xcalloc((size_t)nb + 1, sizeof *C->nc);
	C->cell0 = xcalloc((size_t)nb + 2, sizeof *C->cell0);
	for (int64_t i = 0; i < n; i++)
		for (int64_t j = lower_i64(C->rb, u, b[i].r0); C->rb[j] < b[i].r1; j++)
			C->cx[j + 1] += 2;
	for (int64_t j = 0; j < nb; j++)
		C->cx[j + 1] += C->cx[j];
	C->cv = xmalloc(((size_t)C->cx[nb] + 1) * sizeof *C->cv);
	int64_t *fill = xmalloc(((size_t)nb + 1) * sizeof *fill);
	memcpy(fill, C->cx, (size_t)nb * sizeof *fill);
	for (int64_t i = 0; i < n; i++)
		for (int64_t j = lower_i64(C->rb, u, b[i].r0); C->rb[j] < b[i].r1; j++)
			C->cv[fill[j]++] = b[i].c0, C->cv[fill[j]++] = b[i].c1;
	free(fill);
	for (int64_t j = 0; j < nb; j++) {
		uint64_t *v = C->cv + C->cx[j];
		int64_t k = C->cx[j + 1] - C->cx[j], w = 0;
		qsort(v, (size_t)k, sizeof *v, cmp_u64);
		for (int64_t i = 0; i < k; i++)
			if (!w || v[w - 1] != v[i])
				v[w++] = v[i];
		C->nc[j] = w;
		C->cell0[j + 1] = C->cell0[j] + (w > 1 ? w - 1 : 0);
	}
}

static void cells_free(struct cells *C)
{
	free(C->rb), free(C->cx), free(C->nc), free(C->cv), free(C->cell0);
}

/* One GPU's accesses, space by space, in program order over the cells: each access after the last
 * write of its bytes, each write after the reads since (readers of a cell are kept until the next
 * write of it). Appends those orderings to f->ob (need_order); with find >= 0, appends nothing and
 * instead returns in *ox, *oy the boxes of ordering number `find`. */
static void sweep(struct vf *f, int g, const struct gbytes *B, int64_t find, struct box *ox, struct box *oy)
{
	int64_t seq = f->ob_first[g];
	if (!B->n)
		return;
	int found = 0;
	/* mark[x] = y: the ordering x before y is numbered already (a node's accesses follow each other
	 * in program order, so this leaves out nearly every repeat; those it keeps are harmless) */
	int *mark = xmalloc(((size_t)f->n_nodes + 1) * sizeof *mark);
	for (int x = 0; x < f->n_nodes; x++)
		mark[x] = -1;
#define ORDER(X, Y)                                                                                           \
	do {                                                                                                  \
		if ((X)->node == (Y)->node || mark[(X)->node] == (Y)->node)                                   \
			break;                                                                                \
		mark[(X)->node] = (Y)->node;                                                                  \
		if (find < 0)                                                                                 \
			need_order(f, (X)->node, (Y)->node);                                                  \
		else if (seq == find)                                                                         \
			*ox = *(X), *oy = *(Y), found = 1;                                                    \
		seq++;                                                                                        \
	} while (0)
	for (int64_t s0 = 0, s1; s0 < B->n && !found; s0 = s1) {
		for (s1 = s0; s1 < B->n && B->b[s1].sp == B->b[s0].sp; s1++)
			;
		const struct box *A = B->b + s0;
		int64_t n = s1 - s0;
		struct cells C;
		cells_build(&C, A, n);
		int64_t m = C.cell0[C.nrb - 1];
		int64_t *lastw = xmalloc(((size_t)m + 1) * sizeof *lastw), *rhead = xmalloc(((size_t)m + 1) * sizeof *rhead);
		for (int64_t i = 0; i < m; i++)
			lastw[i] = rhead[i] = -1;
		int64_t pn = 0, pcap = 1024, *ridx = xmalloc((size_t)pcap * sizeof *ridx),
			*rnext = xmalloc((size_t)pcap * sizeof *rnext);
		for (int64_t i = 0; i < n && !found; i++) {
			const struct box *a = &A[i];
			for (int64_t j = lower_i64(C.rb, C.nrb, a->r0); C.rb[j] < a->r1 && !found; j++) {
				const uint64_t *cv = C.cv + C.cx[j];
				for (int64_t c = lower(cv, C.nc[j], a->c0); c + 1 < C.nc[j] && cv[c] < a->c1 && !found; c++) {
					int64_t e = C.cell0[j] + c;
					const struct box *w = lastw[e] >= 0 ? &A[lastw[e]] : NULL;
					if (w && w->vcta != a->vcta)
						ORDER(w, a);
					if (a->write) {
						for (int64_t r = rhead[e]; r >= 0 && !found; r = rnext[r]) {
							const struct box *x = &A[ridx[r]];
							if (x->vcta != a->vcta)
								ORDER(x, a);
						}
						lastw[e] = i;
						rhead[e] = -1;
					} else if (rhead[e] < 0 || A[ridx[rhead[e]]].node != a->node) {
						if (pn == pcap) {
							pcap *= 2;
							ridx = xrealloc(ridx, (size_t)pcap * sizeof *ridx);
							rnext = xrealloc(rnext, (size_t)pcap * sizeof *rnext);
						}
						ridx[pn] = i, rnext[pn] = rhead[e], rhead[e] = pn++;
					}
				}
			}
		}
		free(lastw), free(rhead), free(ridx), free(rnext);
		cells_free(&C);
	}
#undef ORDER
	ARK_ASSERT(find < 0 || found);
	free(mark);
}

/* The orderings by their later node (f->obx, f->obi). */
static void index_orders(struct vf *f)
{
	f->obx = xcalloc((size_t)f->n_nodes + 2, sizeof *f->obx);
	f->obi = xmalloc(((size_t)f->n_ob + 1) * sizeof *f->obi);
	for (int64_t i = 0; i < f->n_ob; i++)
		f->obx[f->ob[i][1] + 2]++;
	for (int x = 0; x < f->n_nodes; x++)
		f->obx[x + 2] += f->obx[x + 1];
	for (int64_t i = 0; i < f->n_ob; i++)
		f->obi[f->obx[f->ob[i][1] + 1]++] = i;
}

/* ---- the proof -------------------------------------------------------------------------------------- */

/* Nodes: every task on its SM's lane at its position; then (number_chunks) the chunks of every
 * request on a lane of their own. */
static void number_nodes(struct vf *f)
{
	f->n_tasks = 0;
	for (int g = 0; g < f->G; g++) {
		f->base[g] = f->n_tasks;
		f->n_tasks += f->t->gpu[g].n_tasks;
		f->cbase[g + 1] = f->cbase[g] + f->t->gpu[g].n_counters;
	}
	f->base[f->G] = f->n_tasks;
	f->dma_of = xmalloc(((size_t)f->n_tasks + 1) * sizeof *f->dma_of);
	f->gpu_of = xmalloc(((size_t)f->n_tasks + 1) * sizeof *f->gpu_of);
	int nd = 0;
	for (int g = 0; g < f->G; g++)
		for (int i = 0; i < f->t->gpu[g].n_tasks; i++) {
			f->gpu_of[f->base[g] + i] = g;
			f->dma_of[f->base[g] + i] = f->t->gpu[g].tasks[i].tmpl == ARK_T_DMA ? nd++ : -1;
		}
	f->n_dma = nd;
	f->lane = xmalloc(((size_t)f->n_tasks + 1) * sizeof *f->lane);
	f->pos = xmalloc(((size_t)f->n_tasks + 1) * sizeof *f->pos);
	for (int g = 0; g < f->G; g++)
		for (int sm = 0; sm < f->sms; sm++)
			for (uint32_t i = f->t->gpu[g].sm_begin[sm]; i < f->t->gpu[g].sm_begin[sm + 1]; i++) {
				f->lane[f->base[g] + (int)i] = g * f->sms + sm;
				f->pos[f->base[g] + (int)i] = (int)(i - f->t->gpu[g].sm_begin[sm]);
			}
}

/* The chunk nodes of every request (once the tasks are known to name real vCTAs). */
static void number_chunks(struct vf *f)
{
	int nd = f->n_dma;
	f->dma_task = xmalloc(((size_t)nd + 1) * sizeof *f->dma_task);
	f->dma_first = xmalloc(((size_t)nd + 1) * sizeof *f->dma_first);
	f->dma_n = xmalloc(((size_t)nd + 1) * sizeof *f->dma_n);
	f->n_nodes = f->n_tasks;
	for (int x = 0; x < f->n_tasks; x++)
		if (f->dma_of[x] >= 0) {
			int d = f->dma_of[x];
			f->dma_task[d] = x;
			f->dma_first[d] = f->n_nodes;
			f->dma_n[d] = request_chunks(f, x);
			f->n_nodes += (int)f->dma_n[d];
		}
	f->lanes = f->G * f->sms + nd;
	f->lane = xrealloc(f->lane, ((size_t)f->n_nodes + 1) * sizeof *f->lane);
	f->pos = xrealloc(f->pos, ((size_t)f->n_nodes + 1) * sizeof *f->pos);
	for (int d = 0; d < nd; d++)
		for (uint32_t c = 0; c < f->dma_n[d]; c++) {
			f->lane[f->dma_first[d] + (int)c] = f->G * f->sms + d;
			f->pos[f->dma_first[d] + (int)c] = (int)c;
		}
}

static void vf_free(struct vf *f)
{
	for (int c = 0; f->ctr_vc && c < f->n_ctr; c++)
		free(f->ctr_vc[c]);
	for (int l = 0; f->bar_vc && l < f->G * f->t->n_bar; l++)
		free(f->bar_vc[l]);
	free(f->gpu_of), free(f->lane), free(f->pos), free(f->dma_of), free(f->dma_task), free(f->dma_first);
	free(f->dma_n), free(f->sig0), free(f->sig), free(f->raises), free(f->ctr_dma), free(f->remote);
	free(f->barrier), free(f->pk0), free(f->pk), free(f->order), free(f->ctr_vc), free(f->bar_vc);
	free(f->ctr_readers), free(f->last_dma), free(f->ob), free(f->obx), free(f->obi);
	if (f->have_clocks)
		part_clocks_free(&f->C);
}

int tables_verify(const struct tiling *s, const struct tables *t, char *err, size_t errlen)
{
	struct vf f = {.s = s, .t = t, .err = err, .errlen = errlen, .G = t->gpus, .sms = t->sms};
	struct gbytes B[ARK_MAX_GPUS] = {{0}};
	if (err && errlen)
		err[0] = 0;
	for (int g = 0; g < f.G; g++) /* the lists must be walkable before anything is numbered */
		for (int sm = 0; sm < f.sms; sm++)
			if (t->gpu[g].sm_begin[sm] > t->gpu[g].sm_begin[sm + 1] ||
			    t->gpu[g].sm_begin[f.sms] != (uint32_t)t->gpu[g].n_tasks)
				return fail(&f, "GPU %d: sm_begin is not a partition of its %d tasks", g, t->gpu[g].n_tasks);
	number_nodes(&f);
	int rc = check_shape(&f);
	if (!rc) {
		number_chunks(&f);
		rc = build_counters(&f);
	}
	for (int g = 0; g < f.G && !rc; g++)
		find_barriers(&f, g);
	if (!rc)
		rc = check_waits(&f);
	if (!rc)
		rc = packet_sources(&f);
	if (!rc)
		rc = run_lists(&f);
	/* The orderings the bytes need, then the clocks that check them; a request whose last chunk
	 * nobody waits for is reported before a region that is not a request's range, and that before
	 * an unordered access, as the passes came before. */
	if (!rc) {
		int rcg = gather(&f, B);
		char gerr[512] = "";
		if (rcg && err && errlen)
			snprintf(gerr, sizeof gerr, "%s", err);
		for (int g = 0; g < f.G; g++) {
			f.ob_first[g] = f.n_ob;
			if (!rcg)
				sweep(&f, g, &B[g], -1, NULL, NULL);
		}
		f.ob_first[f.G] = f.n_ob;
		index_orders(&f);
		int64_t bad = -1;
		rc = clocks(&f, &bad);
		if (!rc)
			rc = check_arrivals(&f);
		if (!rc && rcg)
			rc = fail(&f, "%s", gerr);
		if (!rc && bad >= 0) {
			int g = 0;
			while (f.ob_first[g + 1] <= bad)
				g++;
			struct box x, y;
			sweep(&f, g, &B[g], bad, &x, &y);
			rc = unordered(&f, g, &B[g], &x, &y);
		}
	}
	for (int g = 0; g < f.G; g++)
		gbytes_free(&B[g]);
	vf_free(&f);
	return rc;
}
