/* emit.c: emits the generated file: a header saying what it is, the tensor and op tables, the op
 * params, the per-SM task lists (one commented entry per task), the waits, and the model record the
 * runtime reads. The loop kernel itself comes from templates/. Same input, same bytes. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "emit.h"

static const char *const dtype_enum[] = {"ARK_FP16", "ARK_BF16", "ARK_FP32"};
static const char *const role_enum[] = {"ARK_ROLE_ACTIVATION", "ARK_ROLE_INPUT", "ARK_ROLE_WEIGHT",
					"ARK_ROLE_OUTPUT", "ARK_ROLE_INTERNAL"};
static const char *const op_enum[] = {
#define X(id, name, min_in, max_in, n_out, attrs, flags) "ARK_OP_" #id,
	OP_LIST(X)
#undef X
};
static const char *const tmpl_enum[] = {
#define X(id) "ARK_T_" #id,
	TMPL_LIST(X)
#undef X
};

static void out(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(FILE *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
}

/* A C string literal for a name (names are identifiers, paths may be anything). */
static void cstr(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 32 || (unsigned char)*s > 126)
			fprintf(f, "\\%03o", (unsigned char)*s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

/* Comments must not be closed by a path. */
static void comment_text(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc(s[0] == '*' && s[1] == '/' ? '+' : *s, f);
}

/* A float literal that C++ accepts: "0.0f", "1e-05f", "1.0001f". */
static const char *flit(char *buf, size_t n, double v)
{
	snprintf(buf, n - 1, "%.9g", v);
	if (!strpbrk(buf, ".eEn"))
		strcat(buf, ".0");
	strcat(buf, "f");
	return buf;
}

static uint64_t off(const struct tiling *s, int t) { return t < 0 ? 0 : s->offset[t]; }

/* Arena offset of tensor t as a C literal (buf: 32 bytes); intermediates of a fused group have none. */
static const char *offstr(char *buf, const struct tiling *s, int t)
{
	if (t >= 0 && s->offset[t] == UINT64_MAX)
		return "ARK_NOT_STORED";
	snprintf(buf, 32, "%" PRIu64 "u", off(s, t));
	return buf;
}

/* Element strides of input `in` seen from out's dimensions (right-aligned, 0 where broadcast). */
static void bcast_strides(const struct tensor *in, const struct tensor *o, int64_t *st)
{
	int64_t stride = 1;
	for (int d = o->ndim - 1, di = in->ndim - 1; d >= 0; d--, di--) {
		if (di < 0 || in->shape[di] == 1) {
			st[d] = 0;
		} else {
			st[d] = stride;
		}
		if (di >= 0)
			stride *= in->shape[di];
	}
}

static void emit_opp(FILE *f, const struct tiling *s, int oi, unsigned extra_flags)
{
	const struct graph *g = s->g;
	const struct op *o = &g->ops[oi];
	const struct op_tiling *pl = &s->per_op[oi];
	int outt = pl->out_tensor;
	const struct tensor *T = &g->tensors[outt];
	unsigned flags = extra_flags;
	int64_t M = s->rows[outt], N = s->cols[outt], K = 0;
	int64_t oshape[4] = {0}, ist[2][4] = {{0}};
	double fval = 0;
	int nd = 0;
	if (o->kind == ARK_OP_MATMUL) {
		K = s->cols[o->in[0]];
		flags |= o->transpose_b ? ARK_OPP_TRANSPOSE_B : 0;
		flags |= o->n_in > 2 ? ARK_OPP_BIAS : 0;
	} else if (op_info[o->kind].flags & ARK_OPF_ELEMENTWISE) {
		int same = 1;
		nd = T->ndim;
		memcpy(oshape, T->shape, sizeof oshape);
		for (int i = 0; i < o->n_in && i < 2; i++) {
			const struct tensor *I = &g->tensors[o->in[i]];
			same &= I->ndim == T->ndim && !memcmp(I->shape, T->shape, sizeof(int64_t) * (size_t)T->ndim);
			bcast_strides(I, T, ist[i]);
		}
		flags |= same ? ARK_OPP_SAME_SHAPE : 0;
		fval = o->factor;
	} else if (o->kind == ARK_OP_LAYERNORM || o->kind == ARK_OP_RMSNORM) {
		fval = o->eps;
	}
	out(f, "\t/* %s%s: %s (%s:%d)", extra_flags & ARK_OPP_CHAIN_IN1 ? "chained value in[1]: " : "", o->name,
	    op_info[o->kind].name, g->file, o->line);
	if (pl->act != ARK_ACT_NONE)
		out(f, " + %s fused", op_info[pl->act].name);
	out(f, " */\n");
	out(f, "\t{%s, %s, 0x%x, %s, 0, %d,\n", op_enum[o->kind], dtype_enum[g->tensors[o->in[0]].dtype], flags,
	    pl->act == ARK_ACT_NONE ? "ARK_ACT_NONE" : op_enum[pl->act], pl->splits);
	char o0[32], o1[32], o2[32], o3[32], o4[32];
	out(f, "\t {%s, %s, %s}, %s, %s,\n", offstr(o0, s, o->in[0]), offstr(o1, s, o->n_in > 1 ? o->in[1] : -1),
	    offstr(o2, s, o->n_in > 2 ? o->in[2] : -1), offstr(o3, s, outt), offstr(o4, s, pl->ws_tensor));
	char fb[40];
	out(f, "\t %" PRId64 ", %" PRId64 ", %" PRId64 ", %s, %d, {%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64
	       "},\n",
	    M, N, K, flit(fb, sizeof fb, fval), nd, oshape[0], oshape[1], oshape[2], oshape[3]);
	out(f, "\t {{%" PRId64 ", %" PRId64 ", %" PRId64 ", %" PRId64 "}, {%" PRId64 ", %" PRId64 ", %" PRId64
	       ", %" PRId64 "}}, -1},\n",
	    ist[0][0], ist[0][1], ist[0][2], ist[0][3], ist[1][0], ist[1][1], ist[1][2], ist[1][3]);
}

/* A chain of elementwise ops (tile.c: plan_chains): its descriptor (dtype, first input, last output,
 * number of steps), then every op's own params, in order. */
static void emit_chain_opp(FILE *f, const struct tiling *s, int head)
{
	const struct graph *g = s->g;
	const struct op_tiling *pl = &s->per_op[head];
	const struct op *h = &g->ops[head];
	int outt = pl->out_tensor;
	out(f, "\t/* chain of %d elementwise ops, %s (%s:%d) to %s, in registers: %s -> %s */\n", pl->chain_len,
	    h->name, g->file, h->line, g->ops[g->tensors[outt].producer].name, g->tensors[h->in[0]].name,
	    g->tensors[outt].name);
	out(f, "\t{%s, %s, 0x0, ARK_ACT_NONE, 0, %d,\n", op_enum[h->kind], dtype_enum[g->tensors[outt].dtype],
	    pl->chain_len);
	out(f, "\t {%" PRIu64 "u, 0u, 0u}, %" PRIu64 "u, 0u,\n", off(s, h->in[0]), off(s, outt));
	out(f, "\t %" PRId64 ", %" PRId64 ", 0, 0.0f, 0, {0, 0, 0, 0},\n", s->rows[outt], s->cols[outt]);
	out(f, "\t {{0, 0, 0, 0}, {0, 0, 0, 0}}, -1},\n");
	int prev_out = -1;
	for (int x = head; x >= 0; x = s->per_op[x].chain_next) {
		const struct op *o = &g->ops[x];
		emit_opp(f, s, x, prev_out >= 0 && o->n_in > 1 && o->in[1] == prev_out ? ARK_OPP_CHAIN_IN1 : 0);
		prev_out = o->out[0];
	}
}

static const char *const xtmpl_what[] = {
	[ARK_T_COPY] = "p2p send", [ARK_T_DMA] = "DMA send", [ARK_T_SUM] = "sum", [ARK_T_GATHER] = "gather",
	[ARK_T_NOP] = "receive", [ARK_T_SEND_LL] = "p2p send in packets", [ARK_T_SUM_LL] = "sum of packets",
};

void emit_comm_opp_params(const struct tiling *s, int x, struct ark_opp *o)
{
	const struct graph *g = s->g;
	const struct comm_opp *X = &s->comm[x];
	const struct op *op = &g->ops[X->op];
	memset(o, 0, sizeof *o);
	o->kind = (uint16_t)op->kind;
	o->dtype = (uint8_t)g->tensors[op->in[0]].dtype;
	o->flags = (uint8_t)X->flags;
	o->act = (uint16_t)X->act;
	o->splits = X->splits;
	o->in[0] = off(s, X->in0);
	o->in[1] = off(s, X->in1);
	o->in[2] = X->in2;
	o->out = X->out < 0 ? 0 : off(s, X->out) + X->out_add;
	o->M = X->M, o->N = X->N, o->K = X->K;
	o->peer = X->peer;
}

/* Op params of a communication vCTA. */
static void emit_comm_opp(FILE *f, const struct tiling *s, int x)
{
	const struct graph *g = s->g;
	const struct comm_opp *X = &s->comm[x];
	const struct op *o = &g->ops[X->op];
	struct ark_opp p;
	emit_comm_opp_params(s, x, &p);
	out(f, "\t/* %s: %s (%s:%d), %s", o->name, op_info[o->kind].name, g->file, o->line, xtmpl_what[X->tmpl]);
	if (X->act != ARK_ACT_NONE)
		out(f, " + %s fused", op_info[X->act].name);
	if (X->peer >= 0)
		out(f, " to GPU %d", X->peer);
	out(f, " */\n");
	out(f, "\t{%s, %s, 0x%x, %s, 0, %u,\n", op_enum[p.kind], dtype_enum[p.dtype], p.flags,
	    X->act == ARK_ACT_NONE ? "ARK_ACT_NONE" : op_enum[X->act], p.splits);
	out(f, "\t {%" PRIu64 "u, %" PRIu64 "u, %" PRIu64 "u}, %" PRIu64 "u, 0,\n", p.in[0], p.in[1], p.in[2], p.out);
	out(f, "\t %" PRId64 ", %" PRId64 ", %" PRId64 ", 0.0f, 0, {0, 0, 0, 0},\n", p.M, p.N, p.K);
	out(f, "\t {{0, 0, 0, 0}, {0, 0, 0, 0}}, %d},\n", p.peer);
}

static void emit_tensors(FILE *f, const struct tiling *s)
{
	const struct graph *g = s->g;
	out(f, "/* Tensors: name, dtype, role, ndim, GPU, shape, arena offset (ARK_NOT_STORED: computed inside "
	       "a fused vCTA, never stored), bytes. */\n");
	out(f, "static const struct ark_tensor tensors[%d] = {\n", g->n_tensors);
	for (int t = 0; t < g->n_tensors; t++) {
		const struct tensor *T = &g->tensors[t];
		out(f, "\t{");
		cstr(f, T->name);
		out(f, ", %s, %s, %d, %d, {", dtype_enum[T->dtype], role_enum[T->role], T->ndim, T->gpu);
		for (int d = 0; d < 4; d++)
			out(f, "%s%" PRId64, d ? ", " : "", d < T->ndim ? T->shape[d] : 0);
		if (s->offset[t] == UINT64_MAX)
			out(f, "}, ARK_NOT_STORED, %" PRIu64 "u},", tensor_bytes(T));
		else
			out(f, "}, %" PRIu64 "u, %" PRIu64 "u},", s->offset[t], tensor_bytes(T));
		out(f, " /* %d */\n", t);
	}
	out(f, "};\n\n");
}

static void emit_ops(FILE *f, const struct tiling *s)
{
	const struct graph *g = s->g;
	out(f, "/* Ops in a topological order, for the CPU reference: name, kind, inputs, outputs, GPU, "
	       "transpose_b, transport, axis, in[], out[], factor, eps, model line. */\n");
	out(f, "static const struct ark_op ops[%d] = {\n", g->n_ops);
	for (int k = 0; k < g->n_ops; k++) {
		const struct op *o = &g->ops[g->order[k]];
		out(f, "\t{");
		cstr(f, o->name);
		out(f, ", %s, %d, %d, %d, %d, %d, %d, {", op_enum[o->kind], o->n_in, o->n_out, o->gpu, o->transpose_b,
		    (int)o->transport, o->axis);
		for (int i = 0; i < o->n_in; i++)
			out(f, "%s%d", i ? ", " : "", o->in[i]);
		out(f, "}, {");
		for (int i = 0; i < o->n_out; i++)
			out(f, "%s%d", i ? ", " : "", o->out[i]);
		char fa[40], fb[40];
		out(f, "}, %s, %s, %d},\n", flit(fa, sizeof fa, o->factor), flit(fb, sizeof fb, o->eps), o->line);
	}
	out(f, "};\n\n");
}

/* wait0: index of the task's first wait in its GPU's wait table; op_index: per graph op, its index
 * in the emitted ops[]. */
static void emit_task(FILE *f, const struct tiling *s, const struct schedule *p, int v, const int *op_index,
		      const int *opp_index, int64_t wait0)
{
	const struct vcta *t = &s->v[v];
	const struct graph *g = s->g;
	int64_t nw = p->wait0[v + 1] - p->wait0[v];
	int c = p->signal[v], remote = c >= 0 && p->ctr_gpu[c] != t->gpu;
	ARK_ASSERT(t->tmpl != ARK_T_DMA || remote); /* the engine's flag is on the receiving GPU */
	ARK_ASSERT(t->split <= 0xffff);
	out(f, "\t{%d, %d, %s, %d, %u, %" PRId64 ", ", op_index[t->op], opp_index[t->opp], tmpl_enum[t->tmpl],
	    (int)nw, t->split, wait0);
	if (c >= 0)
		out(f, "ARK_CTR__FIRST + %d", p->ctr_index[c]);
	else
		out(f, "-1");
	out(f, ", %u, %u, %u, %u, %u, %u, %d", t->m0, t->m1, t->n0, t->n1, t->k0, t->k1, v);
	if (remote)
		out(f, ", %d", p->ctr_gpu[c] + 1);
	out(f, "}, /* v%d %s %s rows %u:%u cols %u:%u", v, g->ops[t->op].name, tmpl_name(t->tmpl), t->m0, t->m1, t->n0,
	    t->n1);
	if (t->tmpl == ARK_T_MATMUL_PARTIAL || t->tmpl == ARK_T_COPY || t->tmpl == ARK_T_DMA || t->tmpl == ARK_T_SEND_LL)
		out(f, " k %u:%u", t->k0, t->k1);
	if (remote)
		out(f, ", signals GPU %d", p->ctr_gpu[c]);
	out(f, " (line %d) */\n", g->ops[t->op].line);
}

int emit_loop(const struct tiling *s, const struct schedule *p, const struct emit_info *info, FILE *f)
{
	const struct graph *g = s->g;
	int sms = p->pl.sms / g->gpus;
	int64_t n_waits = p->wait0[s->n_vcta];
	int n_bar = p->barrier && p->n_levels > 1 ? p->n_levels - 1 : 0;
	int n_counters = p->n_counters + (n_bar ? 1 : 0);
	if (g->n_ops >= (int)ARK_TASK_NO_OP) {
		diag_error(g->file, 0, "the model has %d ops; the task table can name at most %u", g->n_ops,
			   ARK_TASK_NO_OP - 1);
		return -1;
	}
	for (int v = 0; v < s->n_vcta; v++)
		if (p->wait0[v + 1] - p->wait0[v] > 255) {
			diag_error(g->file, g->ops[s->v[v].op].line,
				   "vCTA %d of op '%s' waits on %lld counters; a task can wait on at most 255", v,
				   g->ops[s->v[v].op].name, (long long)(p->wait0[v + 1] - p->wait0[v]));
			return -1;
		}

	out(f, "/* Generated by arkgen %s from ", ARKGEN_VERSION);
	comment_text(f, g->file);
	out(f, ": do not edit.\n * options: ");
	comment_text(f, info->options);
	out(f, "\n * model %s: %d GPU, %d SMs, %d ops, %d vCTAs, %d counters, %" PRId64 " waits%s\n", g->name, g->gpus,
	    sms, g->n_ops, s->n_vcta, n_counters, n_waits, p->barrier ? ", grid barriers between levels" : "");
	out(f, " * predicted latency %.1f us (critical path %.1f us, SM utilisation %.0f%%, policy %s)\n",
	    p->sim.latency_us, p->sim.critical_us, 100 * p->sim.utilisation, part_policy_name[p->policy]);
	out(f, " * build: nvcc $(arkgen --nvcc-flags) THIS_FILE -o BINARY */\n\n");
	out(f, "#define ARK_THREADS %d\n#define ARK_SMEM_BYTES %d\n#define ARK_SMS %d\n", info->threads, info->smem,
	    sms);
	/* Templates only for the dtypes some vCTA computes in: each costs a third of the build time. */
	int used[ARK_DTYPE__COUNT] = {0};
	for (int v = 0; v < s->n_vcta; v++)
		used[g->tensors[g->ops[s->v[v].op].in[0]].dtype] = 1;
	out(f, "#define ARK_TILES_FP16 %d\n#define ARK_TILES_BF16 %d\n#define ARK_TILES_FP32 %d\n\n", used[ARK_FP16],
	    used[ARK_BF16], used[ARK_FP32]);
	out(f, "#include \"ark_tiles.cuh\"\n#include \"ark_loop.cuh\"\n#include \"ark.h\"\n\n");
	emit_tensors(f, s);
	emit_ops(f, s);

	/* Per GPU: op params, task lists, waits. */
	int G = g->gpus;
	int *opp_index = xmalloc(((size_t)g->n_ops + (size_t)s->n_comm) * sizeof *opp_index + 1);
	int *opp_gpu = xmalloc((size_t)g->n_ops * sizeof *opp_gpu + 1);
	int *op_index = xmalloc((size_t)g->n_ops * sizeof *op_index + 1);
	for (int k = 0; k < g->n_ops; k++)
		op_index[g->order[k]] = k; /* ops[] is in this order */
	int64_t *wbase = xmalloc((size_t)s->n_vcta * sizeof *wbase + 1);
	int64_t *sm_begin = xmalloc(((size_t)sms + 1) * sizeof *sm_begin);
	int n_opp[ARK_MAX_GPUS] = {0}, n_tasks[ARK_MAX_GPUS] = {0};
	int64_t gw[ARK_MAX_GPUS] = {0};
	for (int oi = 0; oi < g->n_ops; oi++)
		opp_gpu[oi] = -1;
	for (int v = 0; v < s->n_vcta; v++) {
		if (s->v[v].opp < g->n_ops)
			opp_gpu[s->v[v].opp] = s->v[v].gpu;
		wbase[v] = gw[s->v[v].gpu];
		gw[s->v[v].gpu] += p->wait0[v + 1] - p->wait0[v];
	}
	for (int gpu = 0; gpu < G; gpu++) {
		/* Op params: one entry per op that has vCTAs of its own, then the communication ones. */
		char of[32] = "";
		if (G > 1)
			snprintf(of, sizeof of, " of GPU %d", gpu);
		out(f, "/* Op params%s, as the templates read them: kind, dtype, flags, act, -, splits, in[] offsets, "
		       "out, ws,\n * M, N, K, factor/eps, ndim, out shape, input strides, peer. */\n", of);
		out(f, "static const struct ark_opp opp_g%d[] = {\n", gpu);
		for (int k = 0; k < g->n_ops; k++) {
			int oi = g->order[k];
			if (opp_gpu[oi] != gpu)
				continue;
			opp_index[oi] = n_opp[gpu];
			if (s->per_op[oi].chain_len) {
				emit_chain_opp(f, s, oi);
				n_opp[gpu] += 1 + s->per_op[oi].chain_len;
			} else {
				emit_opp(f, s, oi, 0);
				n_opp[gpu]++;
			}
		}
		for (int x = 0; x < s->n_comm; x++)
			if (s->comm[x].gpu == gpu) {
				opp_index[g->n_ops + x] = n_opp[gpu]++;
				emit_comm_opp(f, s, x);
			}
		if (!n_opp[gpu])
			out(f, "\t{0},\n");
		out(f, "};\n\n");

		/* Task lists. */
		out(f, "/* Tasks of every SM%s, back to back: op, opp, template, waits (count), split, first wait, signal,\n"
		       " * rows m0:m1, cols n0:n1, k0:k1, vCTA%s. */\n", of, G > 1 ? ", GPU of a remote signal + 1" : "");
		int n_t = n_bar * sms;
		for (int sm = 0; sm < sms; sm++)
			n_t += p->pl.begin[gpu * sms + sm + 1] - p->pl.begin[gpu * sms + sm];
		n_tasks[gpu] = n_t;
		out(f, "static const struct ark_task tasks_g%d[%d] = {\n", gpu, n_t ? n_t : 1);
		int64_t emitted = 0;
		for (int sm = 0; sm < sms; sm++) {
			int gsm = gpu * sms + sm;
			sm_begin[sm] = emitted;
			out(f, "\t/* SM %d */\n", sm);
			int i = p->pl.begin[gsm];
			for (int l = 0; l < (n_bar ? p->n_levels : 1); l++) {
				for (; i < p->pl.begin[gsm + 1] && (!n_bar || p->level[p->pl.list[i]] == l); i++, emitted++)
					emit_task(f, s, p, p->pl.list[i], op_index, opp_index, wbase[p->pl.list[i]]);
				if (n_bar && l < n_bar) {
					out(f, "\t{ARK_TASK_NO_OP, 0, ARK_T_BARRIER, 1, 0, %" PRId64 ", ARK_CTR__FIRST + %d, 0, 0, "
					       "0, 0, 0, 0, 0xffffffffu}, /* grid barrier after level %d */\n",
					    gw[gpu] + l, p->n_counters, l);
					emitted++;
				}
			}
		}
		sm_begin[sms] = emitted;
		ARK_ASSERT(emitted == n_t);
		if (!n_t)
			out(f, "\t{0},\n");
		out(f, "};\n\nstatic const uint32_t sm_begin_g%d[%d] = {", gpu, sms + 1);
		for (int sm = 0; sm <= sms; sm++)
			out(f, "%s%" PRId64, sm == 0 ? "\n\t" : sm % 16 ? ", " : ",\n\t", sm_begin[sm]);
		out(f, "\n};\n\n");

		out(f, "/* Waits%s: counter, signals per iteration, signals needed%s. */\n", of,
		    G > 1 ? ", 1: raised from another GPU or by the DMA engine" : "");
		out(f, "static const struct ark_wait waits_g%d[%" PRId64 "] = {\n", gpu,
		    gw[gpu] + n_bar ? gw[gpu] + n_bar : 1);
		for (int v = 0; v < s->n_vcta; v++) {
			if (s->v[v].gpu != gpu)
				continue;
			for (int64_t w = p->wait0[v]; w < p->wait0[v + 1]; w++) {
				int c = (int)p->waits[w].counter;
				out(f, "\t{ARK_CTR__FIRST + %d, %u, %u%s}, /* %" PRId64 ": v%d waits for %u %s */\n",
				    p->ctr_index[c], p->waits[w].per_iter, p->waits[w].need, p->ctr_sys[c] ? ", 1" : "",
				    wbase[v] + (w - p->wait0[v]), v, p->waits[w].need,
				    p->ctr_sys[c] ? "signals from other GPUs or DMA chunks" : "tiles");
			}
		}
		for (int l = 0; l < n_bar; l++)
			out(f, "\t{ARK_CTR__FIRST + %d, %d, %d}, /* barrier after level %d */\n", p->n_counters,
			    sms * n_bar, sms * (l + 1), l);
		if (!gw[gpu] && !n_bar)
			out(f, "\t{0, 0, 0},\n");
		out(f, "};\n\n");
	}

	out(f, "ARK_DEFINE_LOOP()\n\n");
	out(f, "extern \"C\" const struct ark_model ark_model_def = {\n\t");
	cstr(f, g->name);
	out(f, ",\n\t");
	cstr(f, g->file);
	out(f, ",\n\t");
	cstr(f, info->options);
	out(f, ",\n\t%d, %d, %d, %d, %.3f,\n", g->gpus, sms, info->threads, info->smem, p->sim.latency_us);
	out(f, "\t%d, tensors, %d, ops,\n", g->n_tensors, g->n_ops);
	out(f, "\t{");
	for (int gpu = 0; gpu < G; gpu++)
		out(f, "%s{%" PRIu64 "u, %d, tasks_g%d, sm_begin_g%d, %" PRId64 ", waits_g%d, %d, opp_g%d, %d, %d}",
		    gpu ? ",\n\t " : "", s->arena[gpu], n_tasks[gpu], gpu, gpu, gw[gpu] + n_bar, gpu, n_opp[gpu], gpu,
		    p->gpu_counters[gpu] + (n_bar ? 1 : 0), sms);
	out(f, "},\n");
	out(f, "\tark_launch,\n\t(const void *)ark_loop_kernel,\n};\n");
	free(opp_index);
	free(opp_gpu);
	free(op_index);
	free(wbase);
	free(sm_begin);
	return ferror(f) ? -1 : 0;
}

/* The checked graph, for tools that rebuild the model elsewhere: "tensors" and "ops" (topological). */
static void json_graph(const struct graph *g, FILE *f)
{
	out(f, "  \"tensors\": [\n");
	for (int i = 0; i < g->n_tensors; i++) {
		const struct tensor *t = &g->tensors[i];
		out(f, "    {\"name\": ");
		cstr(f, t->name);
		out(f, ", \"shape\": [");
		for (int d = 0; d < t->ndim; d++)
			out(f, "%s%" PRId64, d ? ", " : "", t->shape[d]);
		out(f, "], \"dtype\": \"%s\", \"role\": \"%s\", \"gpu\": %d}%s\n", dtype_name[t->dtype],
		    role_name[t->role], t->gpu,
		    i + 1 < g->n_tensors ? "," : "");
	}
	out(f, "  ],\n  \"ops\": [\n");
	for (int k = 0; k < g->n_ops; k++) {
		const struct op *o = &g->ops[g->order[k]];
		const unsigned a = op_info[o->kind].attrs;
		out(f, "    {\"name\": ");
		cstr(f, o->name);
		out(f, ", \"kind\": \"%s\", \"gpu\": %d, \"line\": %d, \"in\": [", op_info[o->kind].name, o->gpu,
		    o->line);
		for (int j = 0; j < o->n_in; j++) {
			out(f, j ? ", " : "");
			cstr(f, g->tensors[o->in[j]].name);
		}
		out(f, "], \"out\": [");
		for (int j = 0; j < o->n_out; j++) {
			out(f, j ? ", " : "");
			cstr(f, g->tensors[o->out[j]].name);
		}
		out(f, "], \"attrs\": {");
		const char *sep = "";
		if (a & ARK_A(TRANSPOSE_B))
			out(f, "%s\"transpose_b\": %s", sep, o->transpose_b ? "true" : "false"), sep = ", ";
		if (a & ARK_A(FACTOR))
			out(f, "%s\"factor\": %.17g", sep, o->factor), sep = ", ";
		if (a & ARK_A(EPS))
			out(f, "%s\"eps\": %.17g", sep, o->eps), sep = ", ";
		if (a & ARK_A(AXIS))
			out(f, "%s\"axis\": %d", sep, o->axis), sep = ", ";
		if (a & ARK_A(TRANSPORT))
			out(f, "%s\"transport\": \"%s\"", sep, transport_name[o->transport]);
		out(f, "}}%s\n", k + 1 < g->n_ops ? "," : "");
	}
	out(f, "  ],\n");
}

int emit_schedule_json(const struct tiling *s, const struct schedule *p, FILE *f)
{
	const struct graph *g = s->g;
	out(f, "{\n  \"model\": ");
	cstr(f, g->name);
	out(f, ",\n  \"source\": ");
	cstr(f, g->file);
	out(f, ",\n  \"policy\": \"%s\",\n  \"sync\": \"%s\",\n  \"sms\": %d,\n", part_policy_name[p->policy],
	    p->barrier ? "barrier" : "counters", p->pl.sms);
	out(f, "  \"predicted_us\": %.3f,\n  \"critical_us\": %.3f,\n  \"utilisation\": %.4f,\n", p->sim.latency_us,
	    p->sim.critical_us, p->sim.utilisation);
	out(f, "  \"counters\": %d,\n", p->n_counters);
	json_graph(g, f);
	out(f, "  \"vctas\": [\n");
	for (int v = 0; v < s->n_vcta; v++) {
		const struct vcta *t = &s->v[v];
		out(f, "    {\"id\": %d, ", v);
		if (g->gpus > 1)
			out(f, "\"gpu\": %d, ", t->gpu);
		out(f, "\"op\": ");
		cstr(f, g->ops[t->op].name);
		out(f, ", \"template\": \"%s\", \"rows\": [%u, %u], \"cols\": [%u, %u], \"k\": [%u, %u], "
		       "\"sm\": %d, \"pos\": %d, \"flops\": %.0f, \"bytes\": %.0f, \"signal\": %d, \"waits\": [",
		    tmpl_name(t->tmpl), t->m0, t->m1, t->n0, t->n1, t->k0, t->k1, p->pl.sm[v], p->pl.pos[v], t->flops,
		    t->bytes, p->signal[v]);
		for (int64_t w = p->wait0[v]; w < p->wait0[v + 1]; w++)
			out(f, "%s[%u, %u]", w > p->wait0[v] ? ", " : "", p->waits[w].counter, p->waits[w].need);
		out(f, "]}%s\n", v + 1 < s->n_vcta ? "," : "");
	}
	out(f, "  ]\n}\n");
	return ferror(f) ? -1 : 0;
}
