/* tile.c: cuts every op into vCTAs (one tile of output each) with the regions they read and write
 * and their cost; fuses activations into the matmul before them; splits K when a layer has fewer
 * tiles than the GPU has SMs. */
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "tiling.h"

static const char *const tmpl_names[] = {
#define X(id) #id,
	TMPL_LIST(X)
#undef X
};
_Static_assert(sizeof tmpl_names / sizeof tmpl_names[0] == ARK_T__COUNT, "template names");

const char *tmpl_name(int tmpl) { return tmpl >= 0 && tmpl < ARK_T__COUNT ? tmpl_names[tmpl] : "?"; }

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }

static struct vcta *new_vcta(struct tiling *s, int op, int opp, enum ark_tmpl tmpl)
{
	if (s->n_vcta == s->cap_vcta) {
		s->cap_vcta = s->cap_vcta ? 2 * s->cap_vcta : 1024;
		s->v = xrealloc(s->v, (size_t)s->cap_vcta * sizeof *s->v);
	}
	struct vcta *v = &s->v[s->n_vcta++];
	memset(v, 0, sizeof *v);
	v->op = op;
	v->opp = opp;
	v->tmpl = tmpl;
	v->gpu = s->g->ops[op].gpu;
	return v;
}

static void add_read(struct vcta *v, int tensor, int64_t r0, int64_t r1, int64_t c0, int64_t c1)
{
	ARK_ASSERT(v->n_reads < VCTA_MAX_READS);
	v->reads[v->n_reads++] = (struct region){tensor, r0, r1, c0, c1};
}

static int64_t esize(const struct tiling *s, int t) { return ark_dtype_size(s->g->tensors[t].dtype); }

/* Adds an internal fp32 tensor (split-K workspace) to the graph; returns its index. */
static int add_internal(struct tiling *s, const char *base, int gpu, int64_t rows, int64_t cols)
{
	struct graph *g = s->g;
	g->tensors = xrealloc(g->tensors, (size_t)(g->n_tensors + 1) * sizeof *g->tensors);
	struct tensor *t = &g->tensors[g->n_tensors];
	memset(t, 0, sizeof *t);
	size_t n = strlen(base) + 8;
	t->name = xmalloc(n);
	snprintf(t->name, n, "%s__ws", base);
	t->ndim = 2;
	t->shape[0] = rows;
	t->shape[1] = cols;
	t->dtype = ARK_FP32;
	t->role = ARK_ROLE_INTERNAL;
	t->gpu = gpu;
	t->producer = -1;
	return g->n_tensors++;
}

/* The op reading tensor t, when t has exactly one reader that is an activation of t alone, on t's
 * GPU, with t's dtype, and t is not a model output; else -1. */
static int sole_activation(const struct graph *g, int t)
{
	const struct tensor *h = &g->tensors[t];
	if (h->n_readers != 1 || h->role == ARK_ROLE_OUTPUT)
		return -1;
	for (int i = 0; i < g->n_ops; i++) {
		const struct op *o = &g->ops[i];
		if (o->in[0] != t)
			continue;
		if ((o->kind != ARK_OP_RELU && o->kind != ARK_OP_GELU && o->kind != ARK_OP_SILU) || o->gpu != h->gpu ||
		    g->tensors[o->out[0]].dtype != h->dtype)
			return -1;
		return i;
	}
	return -1;
}

/* An activation directly after a matmul, reading nothing else, can run in the matmul's epilogue. The
 * same activation after every output of an all_reduce (tensor parallelism's pattern) runs on the
 * sums: each GPU applies it to its sum before storing (and, two-phase, before sending). */
static void plan_fusion(struct tiling *s)
{
	struct graph *g = s->g;
	for (int i = 0; i < g->n_ops; i++) {
		const struct op *o = &g->ops[i];
		if (o->kind != ARK_OP_ALL_REDUCE)
			continue;
		int act[ARK_MAX_IO], k;
		for (k = 0; k < o->n_out; k++) {
			act[k] = sole_activation(g, o->out[k]);
			if (act[k] < 0 || g->ops[act[k]].kind != g->ops[act[0]].kind)
				break;
		}
		if (k < o->n_out)
			continue;
		for (k = 0; k < o->n_out; k++)
			s->per_op[act[k]].fused_into = i;
		s->per_op[i].act = g->ops[act[0]].kind;
	}
	for (int i = 0; i < g->n_ops; i++) {
		struct op *o = &g->ops[i];
		if (o->kind != ARK_OP_RELU && o->kind != ARK_OP_GELU && o->kind != ARK_OP_SILU)
			continue;
		const struct tensor *h = &g->tensors[o->in[0]];
		if (h->producer < 0 || h->n_readers != 1 || h->role == ARK_ROLE_OUTPUT)
			continue;
		struct op *mm = &g->ops[h->producer];
		if (mm->kind != ARK_OP_MATMUL || mm->gpu != o->gpu || s->per_op[h->producer].act != ARK_ACT_NONE)
			continue;
		if (g->tensors[o->out[0]].dtype != h->dtype)
			continue;
		s->per_op[i].fused_into = h->producer;
		s->per_op[h->producer].act = o->kind;
		s->per_op[h->producer].out_tensor = o->out[0];
	}
}

/* Every input of elementwise op o has its output's shape and dtype (no broadcasting). */
static int ew_plain(const struct graph *g, const struct op *o)
{
	if (!(op_info[o->kind].flags & ARK_OPF_ELEMENTWISE))
		return 0;
	const struct tensor *to = &g->tensors[o->out[0]];
	for (int i = 0; i < o->n_in; i++) {
		const struct tensor *ti = &g->tensors[o->in[i]];
		if (ti->dtype != to->dtype || ti->ndim != to->ndim ||
		    memcmp(ti->shape, to->shape, sizeof(int64_t) * (size_t)to->ndim))
			return 0;
	}
	return 1;
}

/* Input of chain step `oi` that is not the chained value `t` (-1: none). */
static int chain_operand(const struct op *o, int t)
{
	if (o->n_in < 2)
		return -1;
	return o->in[0] == t ? o->in[1] : o->in[0];
}

/* Adds tensor t to the distinct tensors reads[0 .. *n) unless it is there; -1 if it is new and the
 * list already holds VCTA_MAX_READS. */
static int read_once(int *reads, int *n, int t)
{
	for (int j = 0; j < *n; j++)
		if (reads[j] == t)
			return 0;
	if (*n == VCTA_MAX_READS)
		return -1;
	reads[(*n)++] = t;
	return 0;
}

/* Chains of elementwise ops without broadcasting where each intermediate is read once, by the next op
 * of the chain, and is no output: one vCTA runs the whole chain on a range of elements, values staying
 * in registers, so the intermediates are never stored. The head owns the vCTAs; the others are fused
 * into it. A chain stops before it would read more distinct tensors than a vCTA can record. */
static void plan_chains(struct tiling *s)
{
	struct graph *g = s->g;
	int *reader = xmalloc((size_t)g->n_tensors * sizeof *reader), *prev = xmalloc((size_t)g->n_ops * sizeof *prev);
	for (int t = 0; t < g->n_tensors; t++)
		reader[t] = -1;
	for (int i = 0; i < g->n_ops; i++) {
		prev[i] = -1;
		for (int j = 0; j < g->ops[i].n_in; j++)
			reader[g->ops[i].in[j]] = i;
	}
	for (int k = 0; k < g->n_ops; k++) {
		int oi = g->order[k];
		const struct op *o = &g->ops[oi];
		if (s->per_op[oi].fused_into >= 0 || !ew_plain(g, o))
			continue;
		const struct tensor *t = &g->tensors[o->out[0]];
		int r = reader[o->out[0]];
		if (t->n_readers != 1 || t->role == ARK_ROLE_OUTPUT || r < 0 || prev[r] >= 0)
			continue;
		const struct op *ro = &g->ops[r];
		if (ro->gpu != o->gpu || s->per_op[r].fused_into >= 0 || !ew_plain(g, ro) ||
		    (ro->n_in > 1 && ro->in[0] == ro->in[1]))
			continue;
		s->per_op[oi].chain_next = r;
		prev[r] = oi;
	}
	for (int k = 0; k < g->n_ops; k++) {
		int head = g->order[k];
		if (prev[head] >= 0 || s->per_op[head].chain_next < 0)
			continue;
		/* distinct tensors read: the head's inputs, then every later step's operand */
		int reads[VCTA_MAX_READS], n_reads = 0, len = 1, last = head;
		const struct op *h = &g->ops[head];
		for (int j = 0; j < h->n_in; j++)
			read_once(reads, &n_reads, h->in[j]);
		for (int x = s->per_op[head].chain_next; x >= 0; x = s->per_op[x].chain_next) {
			int opnd = chain_operand(&g->ops[x], g->ops[last].out[0]);
			if (opnd >= 0 && read_once(reads, &n_reads, opnd) < 0)
				break;
			s->per_op[x].fused_into = head;
			len++;
			last = x;
		}
		int cut = s->per_op[last].chain_next;
		s->per_op[last].chain_next = -1;
		if (cut >= 0)
			prev[cut] = -1; /* a new chain may start there: it is later in the order */
		if (len < 2)
			continue;
		s->per_op[head].chain_len = len;
		s->per_op[head].out_tensor = g->ops[last].out[0];
	}
	free(reader);
	free(prev);
}

/* Tile width for the output of a matmul: the widest that still gives about one tile per SM,
 * never narrower than 32 bytes of a row (one memory sector). */
static int pick_tn(int64_t mt, int64_t N, int64_t sms, int64_t min_tn)
{
	static const int cand[] = {128, 64, 32, 16, 8};
	int tn = (int)min_tn;
	for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++) {
		if (cand[i] < min_tn)
			break;
		if (mt * cdiv(N, cand[i]) * 4 >= sms * 3) {
			tn = cand[i];
			break;
		}
	}
	return (int)imin(tn, imax(N, 1));
}

/* SMs each matmul can count on: the GPU's SMs shared among the matmuls of its dependency level on
 * its GPU (level: longest path from the graph's inputs, in ops), so that independent branches get
 * about one tile per SM between them instead of each cutting itself for the whole GPU. */
static int *matmul_shares(const struct graph *g, int sms)
{
	int *level = xcalloc((size_t)g->n_ops, sizeof *level), *share = xcalloc((size_t)g->n_ops, sizeof *share);
	int max_level = 0;
	for (int k = 0; k < g->n_ops; k++) {
		int oi = g->order[k];
		const struct op *o = &g->ops[oi];
		for (int j = 0; j < o->n_in; j++) {
			int p = g->tensors[o->in[j]].producer;
			if (p >= 0 && level[p] + 1 > level[oi])
				level[oi] = level[p] + 1;
		}
		if (level[oi] > max_level)
			max_level = level[oi];
	}
	int *width = xcalloc((size_t)(max_level + 1) * ARK_MAX_GPUS, sizeof *width);
	for (int i = 0; i < g->n_ops; i++)
		if (g->ops[i].kind == ARK_OP_MATMUL)
			width[level[i] * ARK_MAX_GPUS + g->ops[i].gpu]++;
	for (int i = 0; i < g->n_ops; i++) {
		int w = width[level[i] * ARK_MAX_GPUS + g->ops[i].gpu];
		share[i] = w > 1 ? (sms + w - 1) / w : sms;
	}
	free(level);
	free(width);
	return share;
}

static void tile_matmul(struct tiling *s, int oi, int share)
{
	struct graph *g = s->g;
	struct op *o = &g->ops[oi];
	struct op_tiling *pl = &s->per_op[oi];
	int a = o->in[0], b = o->in[1], bias = o->n_in > 2 ? o->in[2] : -1, out = pl->out_tensor;
	int64_t M = s->rows[a], K = s->cols[a], N = s->cols[out];
	int64_t es = esize(s, a), sms = share;
	int tm = M <= 16 ? (int)M : M <= 256 ? 64 : 128;
	int64_t mt = cdiv(M, tm);
	int tn = pick_tn(mt, N, sms, es == 4 ? 8 : 16);
	int64_t nt = cdiv(N, tn), tiles = mt * nt;
	/* Split K while the layer has clearly fewer tiles than SMs, keeping chunks of >= 256, never
	 * into more tasks than SMs (a second wave would cost a whole tile's time). */
	int64_t splits = 1;
	if (tiles * 4 < sms * 3 && K >= 512) {
		splits = imax(1, imin(sms / tiles, imin(32, K / 256)));
		int64_t kc = cdiv(cdiv(K, splits), 64) * 64;
		splits = cdiv(K, kc);
	}
	int64_t kc = cdiv(K, splits);
	if (splits > 1)
		kc = cdiv(kc, 64) * 64;
	pl->tm = tm;
	pl->tn = tn;
	pl->splits = (int)splits;
	pl->first_vcta = s->n_vcta;
	if (splits > 1)
		pl->ws_tensor = add_internal(s, g->tensors[out].name, o->gpu, splits * M, N);
	for (int64_t mi = 0; mi < mt; mi++)
		for (int64_t ni = 0; ni < nt; ni++) {
			int64_t m0 = mi * tm, m1 = imin(M, m0 + tm), n0 = ni * tn, n1 = imin(N, n0 + tn);
			for (int64_t sp = 0; sp < splits; sp++) {
				int64_t k0 = sp * kc, k1 = imin(K, k0 + kc);
				struct vcta *v = new_vcta(s, oi, oi, splits > 1 ? ARK_T_MATMUL_PARTIAL : ARK_T_MATMUL);
				v->m0 = (uint32_t)m0, v->m1 = (uint32_t)m1, v->n0 = (uint32_t)n0, v->n1 = (uint32_t)n1;
				v->k0 = (uint32_t)k0, v->k1 = (uint32_t)k1, v->split = (uint32_t)sp;
				add_read(v, a, m0, m1, k0, k1);
				if (o->transpose_b)
					add_read(v, b, n0, n1, k0, k1);
				else
					add_read(v, b, k0, k1, n0, n1);
				if (splits > 1) {
					v->write = (struct region){pl->ws_tensor, sp * M + m0, sp * M + m1, n0, n1};
				} else {
					if (bias >= 0)
						add_read(v, bias, 0, 1, n0, n1);
					v->write = (struct region){out, m0, m1, n0, n1};
				}
				v->flops = 2.0 * (double)((m1 - m0) * (n1 - n0) * (k1 - k0));
				v->bytes = (double)(es * ((m1 - m0) * (k1 - k0) + (k1 - k0) * (n1 - n0)) +
						    (splits > 1 ? 4 : es) * (m1 - m0) * (n1 - n0));
				v->tc = es == 2;
			}
		}
	if (splits > 1)
		for (int64_t mi = 0; mi < mt; mi++)
			for (int64_t ni = 0; ni < nt; ni++) {
				int64_t m0 = mi * tm, m1 = imin(M, m0 + tm), n0 = ni * tn, n1 = imin(N, n0 + tn);
				struct vcta *v = new_vcta(s, oi, oi, ARK_T_REDUCE);
				v->m0 = (uint32_t)m0, v->m1 = (uint32_t)m1, v->n0 = (uint32_t)n0, v->n1 = (uint32_t)n1;
				v->k0 = 0, v->k1 = (uint32_t)K;
				/* Slices m0..m1 of every split: one region from the first to the last. */
				add_read(v, pl->ws_tensor, m0, (splits - 1) * M + m1, n0, n1);
				if (bias >= 0)
					add_read(v, bias, 0, 1, n0, n1);
				v->write = (struct region){out, m0, m1, n0, n1};
				v->flops = (double)(splits * (m1 - m0) * (n1 - n0));
				v->bytes = (double)((4 * splits + es) * (m1 - m0) * (n1 - n0));
			}
	pl->n_vcta = s->n_vcta - pl->first_vcta;
}

/* Region of input `in` that output box (r0..r1, c0..c1) of `out` needs under broadcasting. */
static void bcast_read(struct tiling *s, struct vcta *v, int in, int out, int64_t r0, int64_t r1, int64_t c0,
		       int64_t c1)
{
	const struct tensor *ti = &s->g->tensors[in], *to = &s->g->tensors[out];
	int same = ti->ndim == to->ndim && !memcmp(ti->shape, to->shape, sizeof(int64_t) * (size_t)to->ndim);
	if (same) {
		add_read(v, in, r0, r1, c0, c1);
		return;
	}
	int64_t ri = s->rows[in], ci = s->cols[in];
	int64_t rr0 = 0, rr1 = ri, cc0 = 0, cc1 = ci;
	if (ci == s->cols[out])
		cc0 = c0, cc1 = c1;
	if (ri == s->rows[out])
		rr0 = r0, rr1 = r1;
	add_read(v, in, rr0, rr1, cc0, cc1);
}

static void tile_elementwise(struct tiling *s, int oi)
{
	struct graph *g = s->g;
	struct op *o = &g->ops[oi];
	struct op_tiling *pl = &s->per_op[oi];
	int out = o->out[0];
	int64_t R = s->rows[out], C = s->cols[out], E = R * C, sms = s->opt.sms;
	int64_t es = esize(s, out);
	/* About one tile per SM, but at least 8 elements per thread of a 256-thread CTA. */
	int64_t T = imax(1, imin(sms, cdiv(E, 2048)));
	int64_t tr, tc;
	if (R >= T) {
		tr = cdiv(R, T);
		tc = C;
	} else {
		tr = 1;
		tc = imin(C, cdiv(cdiv(C, cdiv(T, R)), 8) * 8);
	}
	pl->tm = (int)imin(tr, INT32_MAX);
	pl->tn = (int)imin(tc, INT32_MAX);
	pl->first_vcta = s->n_vcta;
	for (int64_t r0 = 0; r0 < R; r0 += tr)
		for (int64_t c0 = 0; c0 < C; c0 += tc) {
			int64_t r1 = imin(R, r0 + tr), c1 = imin(C, c0 + tc);
			struct vcta *v = new_vcta(s, oi, oi, ARK_T_ELEMENTWISE);
			v->m0 = (uint32_t)r0, v->m1 = (uint32_t)r1, v->n0 = (uint32_t)c0, v->n1 = (uint32_t)c1;
			for (int i = 0; i < o->n_in; i++)
				bcast_read(s, v, o->in[i], out, r0, r1, c0, c1);
			v->write = (struct region){out, r0, r1, c0, c1};
			v->flops = (double)((r1 - r0) * (c1 - c0) * 8);
			v->bytes = (double)((o->n_in + 1) * es * (r1 - r0) * (c1 - c0));
		}
	pl->n_vcta = s->n_vcta - pl->first_vcta;
}

/* A chain (plan_chains) over element ranges of its output: one 16-byte vector per thread of a
 * 256-thread CTA at least (a chain step is latency-bound: more SMs in parallel, fewer values each),
 * about one range per SM for large tensors. */
#define CHAIN_STEP_US 0.17

/* The box of a [rows, C] view that holds elements e0..e1 of it: exact within one row or for whole
 * rows, else the whole rows touched (a superset, which only adds hazards). */
static struct region range_box(int tensor, int64_t e0, int64_t e1, int64_t C)
{
	int64_t r0 = e0 / C, r1 = (e1 + C - 1) / C;
	if (r1 - r0 == 1)
		return (struct region){tensor, r0, r1, e0 - r0 * C, e1 - r0 * C};
	return (struct region){tensor, r0, r1, 0, C};
}

static void tile_chain(struct tiling *s, int head)
{
	struct graph *g = s->g;
	struct op_tiling *pl = &s->per_op[head];
	int out = pl->out_tensor;
	int64_t C = s->cols[out], E = s->rows[out] * C, es = esize(s, out), vec = 16 / es;
	int64_t unit = 256 * vec, chunk = imax(unit, cdiv(cdiv(E, s->opt.sms), unit) * unit);
	pl->tm = 1;
	pl->tn = (int)imin(chunk, INT32_MAX);
	pl->first_vcta = s->n_vcta;
	/* the distinct tensors the chain reads (plan_chains kept them within VCTA_MAX_READS) */
	int reads[VCTA_MAX_READS], n_reads = 0;
	const struct op *h = &g->ops[head];
	for (int j = 0; j < h->n_in; j++)
		read_once(reads, &n_reads, h->in[j]);
	for (int x = pl->chain_next, last = head; x >= 0; last = x, x = s->per_op[x].chain_next) {
		int opnd = chain_operand(&g->ops[x], g->ops[last].out[0]);
		if (opnd >= 0)
			ARK_ASSERT(read_once(reads, &n_reads, opnd) == 0);
	}
	/* Ranges never straddle a row boundary partly, so each is an exact box of the [rows, C] view
	 * (a box rounded out to whole rows would make neighbouring ranges depend on each other): whole
	 * rows when rows are shorter than a range, else pieces of one row. */
	int64_t rows_per = C >= chunk ? 0 : chunk / C;
	for (int64_t e0 = 0, e1; e0 < E; e0 = e1) {
		if (rows_per)
			e1 = imin(E, e0 + rows_per * C);
		else
			e1 = imin(e0 / C * C + C, e0 + chunk);
		struct vcta *v = new_vcta(s, head, head, ARK_T_EW_CHAIN);
		const struct region box = range_box(out, e0, e1, C);
		v->k0 = (uint32_t)e0, v->k1 = (uint32_t)e1;
		v->m0 = (uint32_t)box.r0, v->m1 = (uint32_t)box.r1, v->n0 = (uint32_t)box.c0, v->n1 = (uint32_t)box.c1;
		/* the same box of every tensor read (they all have out's shape) */
		for (int j = 0; j < n_reads; j++)
			add_read(v, reads[j], box.r0, box.r1, box.c0, box.c1);
		v->write = box;
		v->flops = (double)(pl->chain_len * (e1 - e0));
		/* each step waits for the one before: ~0.17 us a step per pass of one vector per thread
		 * (measured on H200, bench/chain_probe.cu) */
		v->lat_us = CHAIN_STEP_US * pl->chain_len * (double)cdiv(e1 - e0, unit);
		v->bytes = (double)((v->n_reads + 1) * es * (e1 - e0));
	}
	pl->n_vcta = s->n_vcta - pl->first_vcta;
}

static void tile_rows(struct tiling *s, int oi, enum ark_tmpl tmpl)
{
	struct graph *g = s->g;
	struct op *o = &g->ops[oi];
	struct op_tiling *pl = &s->per_op[oi];
	int out = o->out[0];
	int64_t R = s->rows[out], C = s->cols[out], es = esize(s, out);
	int64_t tr = cdiv(R, imin(R, s->opt.sms));
	pl->tm = (int)imin(tr, INT32_MAX);
	pl->tn = (int)imin(C, INT32_MAX);
	pl->first_vcta = s->n_vcta;
	for (int64_t r0 = 0; r0 < R; r0 += tr) {
		int64_t r1 = imin(R, r0 + tr);
		struct vcta *v = new_vcta(s, oi, oi, tmpl);
		v->m0 = (uint32_t)r0, v->m1 = (uint32_t)r1, v->n0 = 0, v->n1 = (uint32_t)C;
		add_read(v, o->in[0], r0, r1, 0, C);
		for (int i = 1; i < o->n_in; i++)
			add_read(v, o->in[i], 0, 1, 0, C);
		v->write = (struct region){out, r0, r1, 0, C};
		v->flops = (double)((r1 - r0) * C * 6);
		v->bytes = (double)(2 * es * (r1 - r0) * C);
	}
	pl->n_vcta = s->n_vcta - pl->first_vcta;
}

static void tile_copy(struct tiling *s, int oi)
{
	struct graph *g = s->g;
	struct op *o = &g->ops[oi];
	struct op_tiling *pl = &s->per_op[oi];
	int in = o->in[0], out = o->out[0];
	int64_t R = s->rows[out], C = s->cols[out], E = R * C, es = esize(s, out);
	int64_t T = imax(1, imin(s->opt.sms, cdiv(E, 4096)));
	int64_t chunk = cdiv(cdiv(E, T), 8) * 8;
	pl->tm = 1;
	pl->tn = (int)imin(chunk, INT32_MAX);
	pl->first_vcta = s->n_vcta;
	for (int64_t e0 = 0; e0 < E; e0 += chunk) {
		int64_t e1 = imin(E, e0 + chunk);
		struct vcta *v = new_vcta(s, oi, oi, ARK_T_COPY);
		v->k0 = (uint32_t)e0, v->k1 = (uint32_t)e1;
		const struct region box = range_box(out, e0, e1, C);
		v->m0 = (uint32_t)box.r0, v->m1 = (uint32_t)box.r1, v->n0 = (uint32_t)box.c0, v->n1 = (uint32_t)box.c1;
		add_read(v, in, box.r0, box.r1, box.c0, box.c1);
		v->write = box;
		v->bytes = (double)(2 * es * (e1 - e0));
	}
	pl->n_vcta = s->n_vcta - pl->first_vcta;
}

/* ---- communication ops ------------------------------------------------------------------------
 * Every transfer moves a box of a tensor that is contiguous in memory (columns of one row, or whole
 * rows) to the same elements of a tensor (or of one slot of a staging tensor) on another GPU: by
 * COPY vCTAs of the sending GPU that store into the peer's arena (p2p), or by one DMA vCTA that
 * hands the box to the DMA engine. all_reduce, one-shot (2 GPUs, or small inputs): every GPU
 * receives every other input whole into a staging tensor and sums all of them (SUM vCTAs, fp32 in
 * GPU order, rounded once): one hop. Two-phase: the elements are cut into one part per GPU; GPU i
 * receives part i of every other input (reduce-scatter), sums it with its own and sends the summed
 * part to every other output (all-gather): two hops, but each GPU sends 2 (n - 1) / n of a tensor
 * instead of n - 1 tensors. A small one-shot by p2p sends packets that carry their own flag
 * (SEND_LL), which the sums poll (SUM_LL): no fence, no counter between the GPUs.
 * all_gather: every GPU receives the other inputs whole into a staging tensor, then GATHER vCTAs
 * interleave them with its own input into the output. A NOP vCTA on the receiving GPU waits for
 * transfers into an output that nothing else on that GPU reads, so the iteration completes only
 * once they arrived. */

struct box {
	int64_t r0, r1, c0, c1;
};

static int64_t box_elems(struct box b) { return (b.r1 - b.r0) * (b.c1 - b.c0); }

/* Piece p of `pieces` of a contiguous box: columns (multiples of 8 elements) of a one-row box, rows
 * of a box of whole rows. 0 if the piece is empty. */
static int split_box(struct box b, int64_t pieces, int64_t p, struct box *q)
{
	*q = b;
	if (b.r1 - b.r0 == 1) {
		int64_t step = cdiv(cdiv(b.c1 - b.c0, pieces), 8) * 8;
		q->c0 = b.c0 + p * step;
		q->c1 = imin(b.c1, q->c0 + step);
		return q->c0 < q->c1;
	}
	int64_t step = cdiv(b.r1 - b.r0, pieces);
	q->r0 = b.r0 + p * step;
	q->r1 = imin(b.r1, q->r0 + step);
	return q->r0 < q->r1;
}

/* p2p pieces of a box: about one per 4096 elements, at most one per SM. */
static int64_t xfer_pieces(const struct tiling *s, struct box b)
{
	return imax(1, imin(s->opt.sms, cdiv(box_elems(b), 4096)));
}

static int new_xopp(struct tiling *s, int op, int gpu, enum ark_tmpl tmpl)
{
	if (s->n_comm == s->cap_comm) {
		s->cap_comm = s->cap_comm ? 2 * s->cap_comm : 16;
		s->comm = xrealloc(s->comm, (size_t)s->cap_comm * sizeof *s->comm);
	}
	struct comm_opp *x = &s->comm[s->n_comm];
	memset(x, 0, sizeof *x);
	x->op = op;
	x->gpu = gpu;
	x->tmpl = tmpl;
	x->peer = -1;
	x->in0 = x->in1 = x->out = -1;
	x->act = ARK_ACT_NONE;
	return s->n_comm++;
}

static struct vcta *comm_vcta(struct tiling *s, int op, int x)
{
	struct vcta *v = new_vcta(s, op, s->g->n_ops + x, s->comm[x].tmpl);
	v->gpu = s->comm[x].gpu;
	return v;
}

/* Adds a staging tensor [rows, cols] of dtype on gpu, named after base; returns its index. */
static int add_staging(struct tiling *s, const char *base, const char *suffix, int gpu, int64_t rows, int64_t cols,
		       enum ark_dtype dt)
{
	int t = add_internal(s, base, gpu, rows, cols);
	struct tensor *T = &s->g->tensors[t];
	size_t n = strlen(base) + strlen(suffix) + 1;
	T->name = xrealloc(T->name, n);
	snprintf(T->name, n, "%s%s", base, suffix);
	T->dtype = dt;
	s->rows[t] = rows;
	s->cols[t] = cols;
	return t;
}

static int use_dma(const struct tiling *s, const struct op *o, int64_t bytes)
{
	if (o->transport == ARK_TR_AUTO)
		return bytes > s->opt.p2p_max;
	return o->transport == ARK_TR_DMA;
}

/* How a transfer travels: stores + fence + flag (p2p), the DMA engine, or packets that carry their
 * own flag (op_comm.cuh) into a packet buffer whose rows are twice as wide as the source's. */
enum xfer { XFER_P2P, XFER_DMA, XFER_LL };

/* Box b of tensor src (on its GPU) to the same elements of tensor dst (its packets for XFER_LL), in
 * the slot that starts at row slot_rows (slot_bytes bytes) of dst's view, on dst's GPU. */
static void tile_transfer(struct tiling *s, int oi, int src, int dst, int64_t slot_rows, uint64_t slot_bytes,
			  struct box b, enum xfer how)
{
	static const enum ark_tmpl tmpl[] = {[XFER_P2P] = ARK_T_COPY, [XFER_DMA] = ARK_T_DMA, [XFER_LL] = ARK_T_SEND_LL};
	int sg = s->g->tensors[src].gpu, x = new_xopp(s, oi, sg, tmpl[how]);
	int64_t C = s->cols[src], es = esize(s, src), pieces = how == XFER_DMA ? 1 : xfer_pieces(s, b);
	int64_t wide = how == XFER_LL ? 2 : 1;
	s->comm[x].peer = s->g->tensors[dst].gpu;
	s->comm[x].flags = how == XFER_DMA ? 0 : ARK_OPP_PUSH;
	s->comm[x].in0 = src;
	s->comm[x].out = dst;
	s->comm[x].out_add = slot_bytes;
	ARK_ASSERT(s->comm[x].peer != sg);
	for (int64_t p = 0; p < pieces; p++) {
		struct box q;
		if (!split_box(b, pieces, p, &q))
			continue;
		struct vcta *v = comm_vcta(s, oi, x);
		v->m0 = (uint32_t)q.r0, v->m1 = (uint32_t)q.r1, v->n0 = (uint32_t)q.c0, v->n1 = (uint32_t)q.c1;
		v->k0 = (uint32_t)(q.r0 * C + q.c0), v->k1 = (uint32_t)((q.r1 - 1) * C + q.c1);
		add_read(v, src, q.r0, q.r1, q.c0, q.c1);
		v->write = (struct region){dst, slot_rows + q.r0, slot_rows + q.r1, wide * q.c0, wide * q.c1};
		/* a DMA vCTA only writes a request; the simulator does not model the engine's copy */
		v->bytes = how == XFER_DMA ? 64.0 : (double)((1 + wide) * es * box_elems(q));
	}
}

/* A NOP vCTA on tensor t's GPU that reads all of t. */
static void tile_sink(struct tiling *s, int oi, int t)
{
	struct vcta *v = comm_vcta(s, oi, new_xopp(s, oi, s->g->tensors[t].gpu, ARK_T_NOP));
	add_read(v, t, 0, s->rows[t], 0, s->cols[t]);
	v->write = (struct region){t, 0, 0, 0, 0}; /* writes nothing */
}

static void tile_copy_xgpu(struct tiling *s, int oi)
{
	const struct op *o = &s->g->ops[oi];
	int t = o->in[0], u = o->out[0];
	struct box all = {0, s->rows[t], 0, s->cols[t]};
	int dma = use_dma(s, o, (int64_t)tensor_bytes(&s->g->tensors[t]));
	tile_transfer(s, oi, t, u, 0, 0, all, dma ? XFER_DMA : XFER_P2P);
	tile_sink(s, oi, u);
}

/* all_reduce in one hop or two (the comment above this section). */
static int oneshot(const struct tiling *s, int gpus, uint64_t bytes)
{
	if (s->opt.oneshot_max < 0)
		return gpus == 2 || bytes <= ARK_ONESHOT_MAX_MANY;
	return bytes <= (uint64_t)s->opt.oneshot_max;
}

static void tile_all_reduce(struct tiling *s, int oi)
{
	struct graph *g = s->g;
	const struct op *o = &g->ops[oi];
	int n = o->n_in, t0 = o->in[0], st[ARK_MAX_IO];
	int64_t R = s->rows[t0], C = s->cols[t0], es = esize(s, t0);
	uint64_t tb = tensor_bytes(&g->tensors[t0]);
	struct box all = {0, R, 0, C}, part[ARK_MAX_IO];
	int has[ARK_MAX_IO], dma = 0, one = oneshot(s, n, tb), out[ARK_MAX_IO];
	for (int i = 0; i < n; i++) {
		/* with a fused activation, the sums go to the activations' outputs */
		int a = s->per_op[oi].act != ARK_ACT_NONE ? sole_activation(g, o->out[i]) : -1;
		out[i] = a >= 0 ? g->ops[a].out[0] : o->out[i];
		ARK_ASSERT(a < 0 || s->per_op[a].fused_into == oi);
		if (one) /* GPU i sums all of it */
			has[i] = 1, part[i] = all;
		else
			has[i] = split_box(all, n, i, &part[i]);
		if (has[i] && use_dma(s, o, box_elems(part[i]) * es))
			dma = 1; /* one transport for the whole op: the largest part decides */
	}
	/* Packets (one-shot by p2p, small, every piece on a word): a staging row holds the packets of a
	 * row, twice its bytes. */
	int ll = one && !dma && tb <= (uint64_t)s->opt.ll_max && (C * es) % 4 == 0, wide = ll ? 2 : 1;
	for (int i = 0; i < n; i++)
		st[i] = add_staging(s, g->tensors[out[i]].name, ll ? "__ll" : one ? "__os" : "__rs",
				    g->tensors[o->in[i]].gpu, (n - 1) * R, wide * C, g->tensors[t0].dtype);
	/* part i of every other input to GPU i's staging slot of that input */
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n && has[i]; j++)
			if (j != i) {
				int slot = j - (j > i);
				tile_transfer(s, oi, o->in[j], st[i], slot * R, (uint64_t)slot * wide * tb, part[i],
					      ll ? XFER_LL : dma ? XFER_DMA : XFER_P2P);
			}
	/* sum of part i on GPU i */
	for (int i = 0; i < n; i++) {
		if (!has[i])
			continue;
		int x = new_xopp(s, oi, g->tensors[o->in[i]].gpu, ll ? ARK_T_SUM_LL : ARK_T_SUM);
		s->comm[x].in0 = o->in[i];
		s->comm[x].in1 = st[i];
		s->comm[x].out = out[i];
		s->comm[x].in2 = (uint64_t)wide * tb;
		s->comm[x].K = n - 1;
		s->comm[x].splits = (uint32_t)i; /* where its own input comes in the GPU order */
		s->comm[x].act = s->per_op[oi].act;
		int64_t pieces = xfer_pieces(s, part[i]);
		for (int64_t p = 0; p < pieces; p++) {
			struct box q;
			if (!split_box(part[i], pieces, p, &q))
				continue;
			struct vcta *v = comm_vcta(s, oi, x);
			v->m0 = (uint32_t)q.r0, v->m1 = (uint32_t)q.r1, v->n0 = (uint32_t)q.c0, v->n1 = (uint32_t)q.c1;
			v->k0 = (uint32_t)(q.r0 * C + q.c0), v->k1 = (uint32_t)((q.r1 - 1) * C + q.c1);
			add_read(v, o->in[i], q.r0, q.r1, q.c0, q.c1);
			for (int k = 0; k < n - 1; k++)
				add_read(v, st[i], k * R + q.r0, k * R + q.r1, wide * q.c0, wide * q.c1);
			v->write = (struct region){out[i], q.r0, q.r1, q.c0, q.c1};
			v->flops = (double)(n * box_elems(q));
			v->bytes = (double)((n + 1) * es * box_elems(q));
		}
	}
	if (one)
		return; /* every output was summed where it lives */
	/* all-gather: the summed part i to every other output */
	for (int i = 0; i < n; i++)
		for (int k = 0; k < n && has[i]; k++)
			if (k != i)
				tile_transfer(s, oi, out[i], out[k], 0, 0, part[i], dma ? XFER_DMA : XFER_P2P);
	for (int k = 0; k < n; k++)
		tile_sink(s, oi, out[k]);
}

static void tile_all_gather(struct tiling *s, int oi)
{
	struct graph *g = s->g;
	const struct op *o = &g->ops[oi];
	int n = o->n_in, t0 = o->in[0], st[ARK_MAX_IO];
	const struct tensor *T = &g->tensors[t0];
	int64_t R = s->rows[t0], C = s->cols[t0], chunk = 1;
	uint64_t tb = tensor_bytes(T);
	for (int d = o->axis; d < T->ndim; d++)
		chunk *= T->shape[d];
	int dma = use_dma(s, o, (int64_t)tb);
	struct box all = {0, R, 0, C};
	for (int i = 0; i < n; i++)
		st[i] = add_staging(s, g->tensors[o->out[i]].name, "__ag", g->tensors[o->in[i]].gpu, (n - 1) * R, C,
				    g->tensors[t0].dtype);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if (j != i) {
				int slot = j - (j > i);
				tile_transfer(s, oi, o->in[j], st[i], slot * R, (uint64_t)slot * tb, all, dma ? XFER_DMA : XFER_P2P);
			}
	for (int i = 0; i < n; i++) {
		int out = o->out[i], x = new_xopp(s, oi, g->tensors[o->in[i]].gpu, ARK_T_GATHER);
		int64_t Ro = s->rows[out], Co = s->cols[out], es = esize(s, out);
		s->comm[x].in0 = o->in[i];
		s->comm[x].in1 = st[i];
		s->comm[x].out = out;
		s->comm[x].in2 = tb;
		s->comm[x].N = chunk;
		s->comm[x].K = n;
		s->comm[x].splits = (uint32_t)i;
		struct box ob = {0, Ro, 0, Co};
		int64_t pieces = xfer_pieces(s, ob);
		for (int64_t p = 0; p < pieces; p++) {
			struct box q;
			if (!split_box(ob, pieces, p, &q))
				continue;
			struct vcta *v = comm_vcta(s, oi, x);
			v->m0 = (uint32_t)q.r0, v->m1 = (uint32_t)q.r1, v->n0 = (uint32_t)q.c0, v->n1 = (uint32_t)q.c1;
			v->k0 = (uint32_t)(q.r0 * Co + q.c0), v->k1 = (uint32_t)((q.r1 - 1) * Co + q.c1);
			add_read(v, o->in[i], 0, R, 0, C);
			add_read(v, st[i], 0, (n - 1) * R, 0, C);
			v->write = (struct region){out, q.r0, q.r1, q.c0, q.c1};
			v->bytes = (double)(2 * es * box_elems(q));
		}
	}
}

int tile_graph(struct tiling *s, struct graph *g, const struct tile_opts *opt)
{
	memset(s, 0, sizeof *s);
	s->g = g;
	s->opt = *opt;
	s->per_op = xcalloc((size_t)g->n_ops, sizeof *s->per_op);
	for (int i = 0; i < g->n_ops; i++) {
		s->per_op[i].fused_into = -1;
		s->per_op[i].act = ARK_ACT_NONE;
		s->per_op[i].out_tensor = g->ops[i].out[0];
		s->per_op[i].splits = 1;
		s->per_op[i].ws_tensor = -1;
		s->per_op[i].chain_next = -1;
	}
	if (opt->fuse) {
		plan_fusion(s);
		plan_chains(s);
	}
	/* 2-D views; the workspace and staging tensors added below get theirs as they are made. */
	int cap = g->n_tensors + g->n_ops;
	for (int i = 0; i < g->n_ops; i++)
		if (op_info[g->ops[i].kind].flags & ARK_OPF_COMM)
			cap += g->ops[i].n_in;
	s->rows = xcalloc((size_t)cap, sizeof *s->rows);
	s->cols = xcalloc((size_t)cap, sizeof *s->cols);
	for (int t = 0; t < g->n_tensors; t++) {
		const struct tensor *T = &g->tensors[t];
		s->cols[t] = T->shape[T->ndim - 1];
		s->rows[t] = 1;
		for (int d = 0; d < T->ndim - 1; d++)
			s->rows[t] *= T->shape[d];
	}
	int *share = matmul_shares(g, s->opt.sms);
	for (int k = 0; k < g->n_ops; k++) {
		int oi = g->order[k];
		int into = s->per_op[oi].fused_into;
		/* A chain's vCTAs come at the place of its last op in the order, after every op that makes
		 * one of its operands: vCTAs stay in a topological order. */
		if (into >= 0 && s->per_op[into].chain_len && s->per_op[oi].chain_next < 0)
			tile_chain(s, into);
		if (into >= 0)
			continue;
		int nt = g->n_tensors;
		if (s->per_op[oi].chain_len) /* a chain's head: tiled where its last op is */
			continue;
		switch (g->ops[oi].kind) {
		case ARK_OP_MATMUL: tile_matmul(s, oi, share[oi]); break;
		case ARK_OP_SOFTMAX: tile_rows(s, oi, ARK_T_SOFTMAX); break;
		case ARK_OP_LAYERNORM: tile_rows(s, oi, ARK_T_LAYERNORM); break;
		case ARK_OP_RMSNORM: tile_rows(s, oi, ARK_T_RMSNORM); break;
		case ARK_OP_COPY:
			if (g->tensors[g->ops[oi].in[0]].gpu != g->ops[oi].gpu) {
				s->per_op[oi].first_vcta = s->n_vcta;
				tile_copy_xgpu(s, oi);
				s->per_op[oi].n_vcta = s->n_vcta - s->per_op[oi].first_vcta;
			} else {
				tile_copy(s, oi);
			}
			break;
		case ARK_OP_ALL_REDUCE:
		case ARK_OP_ALL_GATHER:
			s->per_op[oi].first_vcta = s->n_vcta;
			if (g->ops[oi].kind == ARK_OP_ALL_REDUCE)
				tile_all_reduce(s, oi);
			else
				tile_all_gather(s, oi);
			s->per_op[oi].n_vcta = s->n_vcta - s->per_op[oi].first_vcta;
			break;
		default:
			ARK_ASSERT(op_info[g->ops[oi].kind].flags & ARK_OPF_ELEMENTWISE);
			tile_elementwise(s, oi);
			break;
		}
		for (int t = nt; t < g->n_tensors; t++) {
			s->rows[t] = g->tensors[t].shape[0];
			s->cols[t] = g->tensors[t].shape[1];
		}
	}
	free(share);
	/* Each vCTA's cost, in the form partition/ reads. */
	s->flops = xmalloc((size_t)s->n_vcta * sizeof *s->flops);
	s->bytes = xmalloc((size_t)s->n_vcta * sizeof *s->bytes);
	s->lat_us = xmalloc((size_t)s->n_vcta * sizeof *s->lat_us);
	s->tc = xmalloc((size_t)s->n_vcta);
	s->group = xmalloc((size_t)s->n_vcta * sizeof *s->group);
	for (int i = 0; i < s->n_vcta; i++) {
		s->flops[i] = s->v[i].flops;
		s->bytes[i] = s->v[i].bytes;
		s->lat_us[i] = s->v[i].lat_us;
		s->tc[i] = s->v[i].tc;
		s->group[i] = s->v[i].op;
	}
	return 0;
}

void tile_dump(const struct tiling *s, FILE *f)
{
	const struct graph *g = s->g;
	fprintf(f, "# vCTAs of %s: %d\n", g->name, s->n_vcta);
	for (int i = 0; i < s->n_vcta; i++) {
		const struct vcta *v = &s->v[i];
		fprintf(f, "v%-6d %-14s op %-12s rows %u:%u cols %u:%u k %u:%u", i, tmpl_name(v->tmpl),
			g->ops[v->op].name, v->m0, v->m1, v->n0, v->n1, v->k0, v->k1);
		if (v->tmpl == ARK_T_MATMUL_PARTIAL)
			fprintf(f, " split %u", v->split);
		fprintf(f, "  %.0f flop %.0f B\n", v->flops, v->bytes);
		for (int r = 0; r < v->n_reads; r++) {
			const struct region *R = &v->reads[r];
			fprintf(f, "        reads  %s[%lld:%lld, %lld:%lld]\n", g->tensors[R->tensor].name,
				(long long)R->r0, (long long)R->r1, (long long)R->c0, (long long)R->c1);
		}
		const struct region *W = &v->write;
		fprintf(f, "        writes %s[%lld:%lld, %lld:%lld]\n", g->tensors[W->tensor].name, (long long)W->r0,
			(long long)W->r1, (long long)W->c0, (long long)W->c1);
	}
}

void tiling_free(struct tiling *s)
{
	free(s->per_op);
	free(s->v);
	free(s->rows);
	free(s->cols);
	free(s->xadj);
	free(s->adj);
	free(s->ebytes);
	free(s->hu);
	free(s->hv);
	free(s->keep);
	free(s->offset);
	free(s->flops);
	free(s->bytes);
	free(s->lat_us);
	free(s->tc);
	free(s->group);
	free(s->comm);
	memset(s, 0, sizeof *s);
}
