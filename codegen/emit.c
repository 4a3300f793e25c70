/* emit.c: emits the generated file: a header saying what it is, named arena offsets, the tensor and
 * op tables, and per GPU the op params, the per-SM task lists and the waits, then the model record
 * the runtime reads. Tables are written as a person would: names for offsets, flags, templates and
 * counters, aligned columns under a header comment, one comment per entry naming its op, tile and
 * model line. The loop kernel itself comes from templates/. Same input, same bytes. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "emit.h"
#include "emit_text.h"

/* C names of the enums' values, from the catalogs. */
static const char *const op_enum[ARK_OP__COUNT] = {
#define X(id, name, min_in, max_in, n_out, attrs, flags) [ARK_OP_##id] = "ARK_OP_" #id,
	OP_LIST(X)
#undef X
};
static const char *const tmpl_enum[ARK_T__COUNT] = {
#define X(id) [ARK_T_##id] = "ARK_T_" #id,
	TMPL_LIST(X)
#undef X
};
static const char *const dtype_enum[ARK_DTYPE__COUNT] = {
#define X(id, name) [ARK_##id] = "ARK_" #id,
	DTYPE_LIST(X)
#undef X
};
static const char *const role_enum[ARK_ROLE__COUNT] = {
#define X(id, name) [ARK_ROLE_##id] = "ARK_ROLE_" #id,
	ROLE_LIST(X)
#undef X
};
static const char *const transport_enum[ARK_TR__COUNT] = {
#define X(id, name) [ARK_TR_##id] = "ARK_TR_" #id,
	TRANSPORT_LIST(X)
#undef X
};
static const struct {
	unsigned bit;
	const char *name;
} opp_flags[] = {
#define X(id, bit) {ARK_OPP_##id, "ARK_OPP_" #id},
	OPP_FLAG_LIST(X)
#undef X
};
/* What each template computes, for the comments: its label and the task fields that say which part. */
static const char *const tmpl_label[ARK_T__COUNT] = {
#define X(id, tile, smem, span, label) [ARK_T_##id] = label,
	TMPL_CATALOG(X)
#undef X
};
static const enum ark_span tmpl_span[ARK_T__COUNT] = {
#define X(id, tile, smem, span, label) [ARK_T_##id] = span,
	TMPL_CATALOG(X)
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

/* flags as "ARK_OPP_TRANSPOSE_B | ARK_OPP_BIAS" (bits without a name in hex), "0" for none. */
static const char *flags_str(char *buf, size_t n, unsigned flags)
{
	size_t k = 0;
	buf[0] = 0;
	for (size_t i = 0; i < sizeof opp_flags / sizeof opp_flags[0]; i++)
		if (flags & opp_flags[i].bit) {
			k += (size_t)snprintf(buf + k, n - k, "%s%s", k ? " | " : "", opp_flags[i].name);
			flags &= ~opp_flags[i].bit;
		}
	if (flags || !k)
		snprintf(buf + k, n - k, "%s0x%x", k ? " | " : "", flags);
	return buf;
}

/* ---- what the steps of emit_loop share ------------------------------------------------------- */

struct emitter {
	FILE *f;
	const struct tiling *s;
	const struct schedule *p;
	const struct emit_info *info;
	const struct graph *g;
	int sms;                        /* per GPU */
	int n_bar;                      /* --sync barrier: grid barriers per SM, else 0 */
	char **off_name;                /* per tensor: the macro of its arena offset, ARK_OFF_<name> */
	int *op_index;                  /* per graph op: its index in the emitted ops[] */
	int *opp_gpu;                   /* per graph op: GPU whose op-params table holds its params, -1: none */
	int *opp_index;                 /* per op params (graph op, or n_ops + comm index): index in its GPU's table */
	int64_t *wbase;                 /* per vCTA: index of its first wait in its GPU's wait table */
	int n_opp[ARK_MAX_GPUS], n_tasks[ARK_MAX_GPUS];
	int64_t n_waits[ARK_MAX_GPUS];  /* per GPU, barrier waits included */
};

/* " of GPU g" where the model has several, else "". */
static const char *of_gpu(char *buf, size_t n, const struct emitter *e, int gpu)
{
	buf[0] = 0;
	if (e->g->gpus > 1)
		snprintf(buf, n, " of GPU %d", gpu);
	return buf;
}

/* Tensor t's offset in its arena as a C expression; "0" for no tensor (t < 0). */
static const char *offset_of(const struct emitter *e, int t)
{
	return t < 0 ? "0" : e->off_name[t];
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

/* "{a, b, c}" of the first n values. */
static const char *i64_list(char *buf, size_t size, const int64_t *v, int n)
{
	size_t k = (size_t)snprintf(buf, size, "{");
	for (int i = 0; i < n && k < size; i++)
		k += (size_t)snprintf(buf + k, size - k, "%s%" PRId64, i ? ", " : "", v[i]);
	if (k < size)
		snprintf(buf + k, size - k, "}");
	return buf;
}

/* ---- the steps of emit_loop ------------------------------------------------------------------ */

/* Numbers the op params of every GPU: first one entry per op that has vCTAs of its own, in the
 * order of ops[] (a chain: its descriptor, then one per step), then the communication ones. */
static void number_opp(struct emitter *e)
{
	const struct tiling *s = e->s;
	const struct graph *g = e->g;
	for (int oi = 0; oi < g->n_ops; oi++)
		e->opp_gpu[oi] = -1;
	for (int v = 0; v < s->n_vcta; v++)
		if (s->v[v].opp < g->n_ops)
			e->opp_gpu[s->v[v].opp] = s->v[v].gpu;
	for (int gpu = 0; gpu < g->gpus; gpu++) {
		int n = 0;
		for (int k = 0; k < g->n_ops; k++) {
			int oi = g->order[k];
			if (e->opp_gpu[oi] != gpu)
				continue;
			e->opp_index[oi] = n;
			n += 1 + s->per_op[oi].chain_len;
		}
		for (int x = 0; x < s->n_comm; x++)
			if (s->comm[x].gpu == gpu)
				e->opp_index[g->n_ops + x] = n++;
		e->n_opp[gpu] = n;
	}
}

/* What the tables cannot hold: op and op-params indices are 16-bit, a task waits on at most
 * ARK_TASK_MAX_WAITS counters. 0, or -1 after an error. */
static int check_limits(const struct emitter *e)
{
	const struct tiling *s = e->s;
	const struct graph *g = e->g;
	if (g->n_ops >= (int)ARK_TASK_NO_OP) {
		diag_error(g->file, 0, "the model has %d ops; the task table can name at most %u", g->n_ops,
			   ARK_TASK_NO_OP - 1);
		return -1;
	}
	for (int gpu = 0; gpu < g->gpus; gpu++)
		if (e->n_opp[gpu] > 0x10000) {
			diag_error(g->file, 0, "GPU %d needs %d op params; the task table can name at most 65536", gpu,
				   e->n_opp[gpu]);
			return -1;
		}
	for (int v = 0; v < s->n_vcta; v++) {
		const struct op *o = &g->ops[s->v[v].op];
		int64_t nw = e->p->wait0[v + 1] - e->p->wait0[v];
		if (nw > ARK_TASK_MAX_WAITS) {
			diag_error(g->file, o->line, "vCTA %d of op '%s' waits on %lld counters; a task can wait on at most %u",
				   v, o->name, (long long)nw, ARK_TASK_MAX_WAITS);
			return -1;
		}
		ARK_ASSERT(s->v[v].split <= 0xffff);
	}
	return 0;
}

/* The header comment (source, options, sizes, prediction), the build-time constants, the includes. */
static void emit_header(const struct emitter *e)
{
	FILE *f = e->f;
	const struct tiling *s = e->s;
	const struct schedule *p = e->p;
	const struct graph *g = e->g;
	int64_t n_waits = p->wait0[s->n_vcta];
	int n_counters = p->n_counters + (e->n_bar ? 1 : 0);
	char c1[1024], c2[1024];

	out(f, "/* Generated by arkgen %s from %s: do not edit.\n * options: %s\n", ARKGEN_VERSION,
	    c_comment_text(c1, sizeof c1, g->file), c_comment_text(c2, sizeof c2, e->info->options));
	out(f, " * model %s: %d GPU, %d SMs, %d ops, %d vCTAs, %d counters, %" PRId64 " waits%s\n",
	    c_comment_text(c1, sizeof c1, g->name), g->gpus, e->sms, g->n_ops, s->n_vcta, n_counters, n_waits,
	    p->barrier ? ", grid barriers between levels" : "");
	out(f, " * predicted latency %.1f us (critical path %.1f us, SM utilisation %.0f%%, policy %s)\n",
	    p->sim.latency_us, p->sim.critical_us, 100 * p->sim.utilisation, part_policy_name[p->policy]);
	out(f, " * build: nvcc $(arkgen --nvcc-flags) THIS_FILE -o BINARY */\n\n");
	out(f, "#define ARK_THREADS %d\n#define ARK_SMEM_BYTES %d\n#define ARK_SMS %d\n", e->info->threads,
	    e->info->smem, e->sms);
	/* Templates only for the dtypes some vCTA computes in: each costs a third of the build time. */
	int used[ARK_DTYPE__COUNT] = {0};
	for (int v = 0; v < s->n_vcta; v++)
		used[g->tensors[g->ops[s->v[v].op].in[0]].dtype] = 1;
#define X(id, name) out(f, "#define ARK_TILES_" #id " %d\n", used[ARK_##id]);
	DTYPE_LIST(X)
#undef X
	out(f, "\n#include \"ark_tiles.cuh\"\n#include \"ark_loop.cuh\"\n#include \"ark.h\"\n\n");
}

/* ARK_OFF_<tensor>: every tensor's offset in the arena of the GPU that holds it. */
static void emit_offsets(const struct emitter *e)
{
	FILE *f = e->f;
	const struct graph *g = e->g;
	int w = 0;
	for (int t = 0; t < g->n_tensors; t++)
		w = (int)strlen(e->off_name[t]) > w ? (int)strlen(e->off_name[t]) : w;
	out(f, "/* Arena offsets of the tensors, bytes (ARK_NOT_STORED: computed inside a fused vCTA, never "
	       "stored). */\n");
	for (int gpu = 0; gpu < g->gpus; gpu++) {
		if (g->gpus > 1)
			out(f, "%s/* GPU %d */\n", gpu ? "\n" : "", gpu);
		for (int t = 0; t < g->n_tensors; t++) {
			if (g->tensors[t].gpu != gpu)
				continue;
			out(f, "#define %-*s ", w, e->off_name[t]);
			if (e->s->offset[t] == UINT64_MAX)
				out(f, "ARK_NOT_STORED\n");
			else
				out(f, "%" PRIu64 "u\n", e->s->offset[t]);
		}
	}
	out(f, "\n");
}

static void emit_tensors(const struct emitter *e)
{
	const struct graph *g = e->g;
	static const char *const head[] = {"name", "dtype", "role", "ndim", "GPU", "shape", "offset", "bytes"};
	struct tab t = {.cols = 8, .head = head, .align = "lllrrllr"};
	out(e->f, "/* Tensors: row-major, each in the arena of its GPU. */\n");
	out(e->f, "static const struct ark_tensor tensors[%d] = {\n", g->n_tensors);
	for (int i = 0; i < g->n_tensors; i++) {
		const struct tensor *T = &g->tensors[i];
		struct strbuf name = {0};
		char sh[128];
		sb_cstring(&name, T->name);
		tab_cell(&t, "%s", name.s);
		tab_cell(&t, "%s", dtype_enum[T->dtype]);
		tab_cell(&t, "%s", role_enum[T->role]);
		tab_cell(&t, "%d", T->ndim);
		tab_cell(&t, "%d", T->gpu);
		tab_cell(&t, "%s", i64_list(sh, sizeof sh, T->shape, T->ndim));
		tab_cell(&t, "%s", e->off_name[i]);
		tab_cell(&t, "%" PRIu64 "u", tensor_bytes(T));
		tab_end(&t, "%d", i);
		free(name.s);
	}
	tab_print(&t, e->f);
	out(e->f, "};\n\n");
}

/* "out = kind(in, ...)" of op o, by tensor names, for a comment. */
static const char *op_formula(char *buf, size_t size, const struct graph *g, const struct op *o)
{
	char tmp[256];
	size_t k = 0;
	for (int i = 0; i < o->n_out && k < size; i++)
		k += (size_t)snprintf(buf + k, size - k, "%s%s", i ? ", " : "",
				      c_comment_text(tmp, sizeof tmp, g->tensors[o->out[i]].name));
	if (k < size)
		k += (size_t)snprintf(buf + k, size - k, " = %s(", op_info[o->kind].name);
	for (int i = 0; i < o->n_in && k < size; i++)
		k += (size_t)snprintf(buf + k, size - k, "%s%s", i ? ", " : "",
				      c_comment_text(tmp, sizeof tmp, g->tensors[o->in[i]].name));
	if (k < size)
		snprintf(buf + k, size - k, ")");
	return buf;
}

/* The ops in a topological order (g->order), for the CPU reference and for naming tasks. */
static void emit_ops(const struct emitter *e)
{
	const struct graph *g = e->g;
	static const char *const head[] = {"name", "kind", "n_in", "n_out", "GPU", "transpose_b", "transport",
					   "axis", "in", "out", "factor", "eps", "line"};
	struct tab t = {.cols = 13, .head = head, .align = "llrrrrlrllllr"};
	out(e->f, "/* Ops in a topological order, inputs and outputs by tensor index. */\n");
	out(e->f, "static const struct ark_op ops[%d] = {\n", g->n_ops);
	for (int k = 0; k < g->n_ops; k++) {
		const struct op *o = &g->ops[g->order[k]];
		struct strbuf name = {0}, in = {0}, ot = {0};
		char fa[40], fb[40], formula[512], c[256];
		sb_cstring(&name, o->name);
		sb_printf(&in, "{");
		for (int i = 0; i < o->n_in; i++)
			sb_printf(&in, "%s%d", i ? ", " : "", o->in[i]);
		sb_printf(&ot, "{");
		for (int i = 0; i < o->n_out; i++)
			sb_printf(&ot, "%s%d", i ? ", " : "", o->out[i]);
		tab_cell(&t, "%s", name.s);
		tab_cell(&t, "%s", op_enum[o->kind]);
		tab_cell(&t, "%d", o->n_in);
		tab_cell(&t, "%d", o->n_out);
		tab_cell(&t, "%d", o->gpu);
		tab_cell(&t, "%d", o->transpose_b);
		tab_cell(&t, "%s", transport_enum[o->transport]);
		tab_cell(&t, "%d", o->axis);
		tab_cell(&t, "%s}", in.s);
		tab_cell(&t, "%s}", ot.s);
		tab_cell(&t, "%s", c_float(fa, sizeof fa, o->factor));
		tab_cell(&t, "%s", c_float(fb, sizeof fb, o->eps));
		tab_cell(&t, "%d", o->line);
		tab_end(&t, "%d: %s: %s", k, c_comment_text(c, sizeof c, o->name), op_formula(formula, sizeof formula, g, o));
		free(name.s);
		free(in.s);
		free(ot.s);
	}
	tab_print(&t, e->f);
	out(e->f, "};\n\n");
}

/* ---- op params ---- */

/* The fields of an op's params that are not zero, as emit_opp and the comm ones share them. */
static void opp_head(struct init *in, int kind, int dtype, unsigned flags, int act, uint32_t splits)
{
	char fl[160];
	init_field(in, ".kind = %s", op_enum[kind]);
	init_field(in, ".dtype = %s", dtype_enum[dtype]);
	if (flags)
		init_field(in, ".flags = %s", flags_str(fl, sizeof fl, flags));
	init_field(in, ".act = %s", act == ARK_ACT_NONE ? "ARK_ACT_NONE" : op_enum[act]);
	if (splits)
		init_field(in, ".splits = %u", splits);
}

/* Params of graph op oi, entry `index` of its GPU's table; extra_flags: ARK_OPP_CHAIN_IN1 for a chain
 * step whose chained value is in[1]. */
static void emit_opp(const struct emitter *e, int oi, unsigned extra_flags, int index)
{
	const struct tiling *s = e->s;
	const struct graph *g = e->g;
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
	char c1[256], c2[1024];
	out(e->f, "\t/* %d: %s%s: %s (%s:%d)", index, extra_flags & ARK_OPP_CHAIN_IN1 ? "chained value in[1]: " : "",
	    c_comment_text(c1, sizeof c1, o->name), op_info[o->kind].name, c_comment_text(c2, sizeof c2, g->file), o->line);
	if (pl->act != ARK_ACT_NONE)
		out(e->f, " + %s fused", op_info[pl->act].name);
	out(e->f, " */\n");

	struct init in;
	struct strbuf ins = {0};
	char l1[160], l2[160];
	init_begin(&in, e->f, 1);
	opp_head(&in, o->kind, g->tensors[o->in[0]].dtype, flags, pl->act, (uint32_t)pl->splits);
	for (int i = 0; i < o->n_in && i < 3; i++)
		sb_printf(&ins, "%s%s", i ? ", " : "", offset_of(e, o->in[i]));
	init_field(&in, ".in = {%s}", ins.s);
	init_field(&in, ".out = %s", offset_of(e, outt));
	if (pl->ws_tensor >= 0)
		init_field(&in, ".ws = %s", offset_of(e, pl->ws_tensor));
	init_field(&in, ".M = %" PRId64, M);
	init_field(&in, ".N = %" PRId64, N);
	if (K)
		init_field(&in, ".K = %" PRId64, K);
	if (fval != 0)
		init_field(&in, ".f = %s", c_float(c1, sizeof c1, fval));
	if (nd) {
		init_field(&in, ".ndim = %d", nd);
		init_field(&in, ".oshape = %s", i64_list(c1, sizeof c1, oshape, nd));
		if (o->n_in > 1)
			init_field(&in, ".istride = {%s, %s}", i64_list(l1, sizeof l1, ist[0], nd),
				   i64_list(l2, sizeof l2, ist[1], nd));
		else
			init_field(&in, ".istride = {%s}", i64_list(l1, sizeof l1, ist[0], nd));
	}
	init_field(&in, ".peer = -1");
	init_end(&in);
	free(ins.s);
}

/* A chain of elementwise ops (tile.c: plan_chains) at entry `index`: its descriptor (dtype, first
 * input, last output, number of steps), then every op's own params, in order. */
static void emit_chain_opp(const struct emitter *e, int head, int index)
{
	const struct tiling *s = e->s;
	const struct graph *g = e->g;
	const struct op_tiling *pl = &s->per_op[head];
	const struct op *h = &g->ops[head];
	int outt = pl->out_tensor;
	char c1[256], c2[1024], c3[256], c4[256], c5[256];
	out(e->f, "\t/* %d: chain of %d elementwise ops, %s (%s:%d) to %s, in registers: %s -> %s */\n", index,
	    pl->chain_len, c_comment_text(c1, sizeof c1, h->name), c_comment_text(c2, sizeof c2, g->file), h->line,
	    c_comment_text(c3, sizeof c3, g->ops[g->tensors[outt].producer].name), c_comment_text(c4, sizeof c4, g->tensors[h->in[0]].name),
	    c_comment_text(c5, sizeof c5, g->tensors[outt].name));
	struct init in;
	init_begin(&in, e->f, 1);
	opp_head(&in, h->kind, g->tensors[outt].dtype, 0, ARK_ACT_NONE, (uint32_t)pl->chain_len);
	init_field(&in, ".in = {%s}", offset_of(e, h->in[0]));
	init_field(&in, ".out = %s", offset_of(e, outt));
	init_field(&in, ".M = %" PRId64, s->rows[outt]);
	init_field(&in, ".N = %" PRId64, s->cols[outt]);
	init_field(&in, ".peer = -1");
	init_end(&in);
	int prev_out = -1, k = index + 1;
	for (int x = head; x >= 0; x = s->per_op[x].chain_next, k++) {
		const struct op *o = &g->ops[x];
		emit_opp(e, x, prev_out >= 0 && o->n_in > 1 && o->in[1] == prev_out ? ARK_OPP_CHAIN_IN1 : 0, k);
		prev_out = o->out[0];
	}
}

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
	o->in[0] = X->in0 < 0 ? 0 : s->offset[X->in0];
	o->in[1] = X->in1 < 0 ? 0 : s->offset[X->in1];
	o->in[2] = X->in2;
	o->out = X->out < 0 ? 0 : s->offset[X->out] + X->out_add;
	o->M = X->M, o->N = X->N, o->K = X->K;
	o->peer = X->peer;
}

/* Params of communication vCTA params s->comm[x], entry `index` of its GPU's table: the values of
 * emit_comm_opp_params, offsets by name. */
static void emit_comm_opp(const struct emitter *e, int x, int index)
{
	const struct tiling *s = e->s;
	const struct graph *g = e->g;
	const struct comm_opp *X = &s->comm[x];
	const struct op *o = &g->ops[X->op];
	struct ark_opp p;
	char c1[256], c2[1024];
	emit_comm_opp_params(s, x, &p);
	out(e->f, "\t/* %d: %s: %s (%s:%d), %s", index, c_comment_text(c1, sizeof c1, o->name), op_info[o->kind].name,
	    c_comment_text(c2, sizeof c2, g->file), o->line, tmpl_label[X->tmpl]);
	if (X->act != ARK_ACT_NONE)
		out(e->f, " + %s fused", op_info[X->act].name);
	if (X->peer >= 0)
		out(e->f, " to GPU %d", X->peer);
	out(e->f, " */\n");

	struct init in;
	struct strbuf ins = {0};
	init_begin(&in, e->f, 1);
	opp_head(&in, p.kind, p.dtype, p.flags, p.act, p.splits);
	sb_printf(&ins, "%s", offset_of(e, X->in0));
	if (X->in1 >= 0 || X->in2)
		sb_printf(&ins, ", %s", offset_of(e, X->in1));
	if (X->in2)
		sb_printf(&ins, ", %" PRIu64 "u", X->in2);
	if (X->in0 >= 0 || X->in1 >= 0 || X->in2)
		init_field(&in, ".in = {%s}", ins.s);
	if (X->out >= 0 && X->out_add)
		init_field(&in, ".out = %s + %" PRIu64 "u", offset_of(e, X->out), X->out_add);
	else if (X->out >= 0)
		init_field(&in, ".out = %s", offset_of(e, X->out));
	if (p.M)
		init_field(&in, ".M = %" PRId64, p.M);
	if (p.N)
		init_field(&in, ".N = %" PRId64, p.N);
	if (p.K)
		init_field(&in, ".K = %" PRId64, p.K);
	init_field(&in, ".peer = %d", p.peer);
	init_end(&in);
	free(ins.s);
}

/* The op params of one GPU, in the order number_opp gave them. */
static void emit_gpu_opp(const struct emitter *e, int gpu)
{
	const struct tiling *s = e->s;
	const struct graph *g = e->g;
	char of[32];
	out(e->f, "/* Op params%s, as the templates read them (struct ark_opp): offsets into this GPU's arena; the "
		  "fields\n * not given are 0. */\n", of_gpu(of, sizeof of, e, gpu));
	out(e->f, "static const struct ark_opp opp_g%d[] = {\n", gpu);
	for (int k = 0; k < g->n_ops; k++) {
		int oi = g->order[k];
		if (e->opp_gpu[oi] != gpu)
			continue;
		if (s->per_op[oi].chain_len)
			emit_chain_opp(e, oi, e->opp_index[oi]);
		else
			emit_opp(e, oi, 0, e->opp_index[oi]);
	}
	for (int x = 0; x < s->n_comm; x++)
		if (s->comm[x].gpu == gpu)
			emit_comm_opp(e, x, e->opp_index[g->n_ops + x]);
	if (!e->n_opp[gpu])
		out(e->f, "\t{0},\n");
	out(e->f, "};\n\n");
}

/* ---- tasks and waits ---- */

/* What part of its op vCTA t computes, by its template's span: " rows 0:8 cols 0:32". */
static const char *span_str(char *buf, size_t n, const struct vcta *t)
{
	switch (tmpl_span[t->tmpl]) {
	case ARK_SPAN_TILE: snprintf(buf, n, " rows %u:%u cols %u:%u", t->m0, t->m1, t->n0, t->n1); break;
	case ARK_SPAN_TILE_K:
		snprintf(buf, n, " rows %u:%u cols %u:%u k %u:%u", t->m0, t->m1, t->n0, t->n1, t->k0, t->k1);
		break;
	case ARK_SPAN_ROWS: snprintf(buf, n, " rows %u:%u", t->m0, t->m1); break;
	case ARK_SPAN_ELEMS: snprintf(buf, n, " elements %u:%u", t->k0, t->k1); break;
	case ARK_SPAN_NONE: buf[0] = 0; break;
	}
	return buf;
}

/* One task row: vCTA v, whose first wait is entry wait0 of its GPU's wait table. */
static void task_row(const struct emitter *e, struct tab *t, int v, int64_t wait0)
{
	const struct vcta *x = &e->s->v[v];
	const struct schedule *p = e->p;
	const struct op *o = &e->g->ops[x->op];
	int c = p->signal[v], remote = c >= 0 && p->ctr_gpu[c] != x->gpu;
	char sp[128], nm[256];
	ARK_ASSERT(x->tmpl != ARK_T_DMA || remote); /* the engine's flag is on the receiving GPU */
	tab_cell(t, "%d", e->op_index[x->op]);
	tab_cell(t, "%d", e->opp_index[x->opp]);
	tab_cell(t, "%s", tmpl_enum[x->tmpl]);
	tab_cell(t, "%d", remote ? p->ctr_gpu[c] + 1 : 0);
	tab_cell(t, "%d", (int)(p->wait0[v + 1] - p->wait0[v]));
	tab_cell(t, "%u", x->split);
	tab_cell(t, "%" PRId64, wait0);
	if (c >= 0)
		tab_cell(t, "ARK_CTR(%d)", p->ctr_index[c]);
	else
		tab_cell(t, "-1");
	tab_cell(t, "%u", x->m0);
	tab_cell(t, "%u", x->m1);
	tab_cell(t, "%u", x->n0);
	tab_cell(t, "%u", x->n1);
	tab_cell(t, "%u", x->k0);
	tab_cell(t, "%u", x->k1);
	tab_cell(t, "%d", v);
	char gs[32] = "";
	if (remote)
		snprintf(gs, sizeof gs, ", signals GPU %d", p->ctr_gpu[c]);
	tab_end(t, "v%d %s %s%s%s (line %d)", v, c_comment_text(nm, sizeof nm, o->name), tmpl_name(x->tmpl),
		span_str(sp, sizeof sp, x), gs, o->line);
}

/* The task lists of one GPU's SMs, back to back, then where each SM's list begins. */
static void emit_gpu_tasks(struct emitter *e, int gpu)
{
	const struct schedule *p = e->p;
	const int sms = e->sms;
	static const char *const head[] = {"op", "opp", "tmpl", "sig_peer", "n_wait", "split", "wait0", "signal",
					   "m0", "m1", "n0", "n1", "k0", "k1", "vcta"};
	struct tab t = {.cols = 15, .head = head, .align = "rrlrrrrrrrrrrrr"};
	char of[32];
	int64_t *sm_begin = xmalloc(((size_t)sms + 1) * sizeof *sm_begin);
	int n_t = e->n_bar * sms;
	for (int sm = 0; sm < sms; sm++)
		n_t += p->pl.begin[gpu * sms + sm + 1] - p->pl.begin[gpu * sms + sm];
	e->n_tasks[gpu] = n_t;
	out(e->f, "/* Tasks of every SM%s, back to back (struct ark_task): op and op params, template, GPU of a "
		  "remote signal + 1\n * (0: this GPU's), number of waits, split-K slice, first wait in the wait table, "
		  "counter to signal\n * (-1: none), tile (rows m0:m1, cols n0:n1, k0:k1), vCTA. */\n", of_gpu(of, sizeof of, e, gpu));
	out(e->f, "static const struct ark_task tasks_g%d[%d] = {\n", gpu, n_t ? n_t : 1);
	int64_t emitted = 0, bar_wait0 = e->n_waits[gpu] - e->n_bar;
	for (int sm = 0, idle = 0; sm <= sms; sm++) { /* idle: SMs without tasks just before sm */
		int gsm = gpu * sms + sm;
		if (sm < sms && p->pl.begin[gsm] == p->pl.begin[gsm + 1] && !e->n_bar) {
			sm_begin[sm] = emitted;
			idle++;
			continue;
		}
		if (idle > 1)
			tab_line(&t, "SMs %d to %d: no tasks", sm - idle, sm - 1);
		else if (idle)
			tab_line(&t, "SM %d: no tasks", sm - 1);
		idle = 0;
		if (sm == sms)
			break;
		sm_begin[sm] = emitted;
		tab_line(&t, "SM %d", sm);
		int i = p->pl.begin[gsm];
		for (int l = 0; l < (e->n_bar ? p->n_levels : 1); l++) {
			for (; i < p->pl.begin[gsm + 1] && (!e->n_bar || p->level[p->pl.list[i]] == l); i++, emitted++)
				task_row(e, &t, p->pl.list[i], e->wbase[p->pl.list[i]]);
			if (e->n_bar && l < e->n_bar) {
				tab_cell(&t, "ARK_TASK_NO_OP");
				tab_cell(&t, "0");
				tab_cell(&t, "ARK_T_BARRIER");
				tab_cell(&t, "0");
				tab_cell(&t, "1");
				tab_cell(&t, "0");
				tab_cell(&t, "%" PRId64, bar_wait0 + l);
				tab_cell(&t, "ARK_CTR(%d)", p->n_counters);
				for (int k = 0; k < 6; k++)
					tab_cell(&t, "0");
				tab_cell(&t, "0xffffffffu");
				tab_end(&t, "grid barrier after level %d", l);
				emitted++;
			}
		}
	}
	sm_begin[sms] = emitted;
	ARK_ASSERT(emitted == n_t);
	tab_print(&t, e->f);
	if (!n_t)
		out(e->f, "\t{0},\n");
	out(e->f, "};\n\nstatic const uint32_t sm_begin_g%d[%d] = {", gpu, sms + 1);
	for (int sm = 0; sm <= sms; sm++)
		out(e->f, "%s%" PRId64, sm == 0 ? "\n\t" : sm % 16 ? ", " : ",\n\t", sm_begin[sm]);
	out(e->f, "\n};\n\n");
	free(sm_begin);
}

/* The waits of one GPU's tasks, in vCTA order, then the grid barriers' (--sync barrier). */
static void emit_gpu_waits(const struct emitter *e, int gpu)
{
	const struct tiling *s = e->s;
	const struct schedule *p = e->p;
	const int G = e->g->gpus;
	static const char *const head[] = {"counter", "per_iter", "need", "sys"};
	struct tab t = {.cols = G > 1 ? 4 : 3, .head = head, .align = "lrrr"};
	char of[32], nm[256];
	out(e->f, "/* Waits%s (struct ark_wait): until the counter has `need` of its `per_iter` signals of the "
		  "iteration%s. */\n", of_gpu(of, sizeof of, e, gpu),
	    G > 1 ? ";\n * sys 1: raised from another GPU or by the DMA engine" : "");
	out(e->f, "static const struct ark_wait waits_g%d[%" PRId64 "] = {\n", gpu,
	    e->n_waits[gpu] ? e->n_waits[gpu] : 1);
	for (int v = 0; v < s->n_vcta; v++) {
		if (s->v[v].gpu != gpu)
			continue;
		const struct op *o = &e->g->ops[s->v[v].op];
		for (int64_t w = p->wait0[v]; w < p->wait0[v + 1]; w++) {
			int c = (int)p->waits[w].counter;
			ARK_ASSERT(G > 1 || !p->ctr_sys[c]);
			tab_cell(&t, "ARK_CTR(%d)", p->ctr_index[c]);
			tab_cell(&t, "%u", p->waits[w].per_iter);
			tab_cell(&t, "%u", p->waits[w].need);
			if (G > 1)
				tab_cell(&t, "%d", p->ctr_sys[c] ? 1 : 0);
			tab_end(&t, "%" PRId64 ": v%d (%s, line %d) waits for %u %s", e->wbase[v] + (w - p->wait0[v]), v,
				c_comment_text(nm, sizeof nm, o->name), o->line, p->waits[w].need,
				p->ctr_sys[c] ? "signals from other GPUs or DMA chunks" : "tiles");
		}
	}
	for (int l = 0; l < e->n_bar; l++) {
		tab_cell(&t, "ARK_CTR(%d)", p->n_counters);
		tab_cell(&t, "%d", e->sms * e->n_bar);
		tab_cell(&t, "%d", e->sms * (l + 1));
		if (G > 1)
			tab_cell(&t, "0");
		tab_end(&t, "barrier after level %d", l);
	}
	tab_print(&t, e->f);
	if (!e->n_waits[gpu])
		out(e->f, "\t{0, 0, 0},\n");
	out(e->f, "};\n\n");
}

/* The record the runtime reads: the model and, per GPU, its tables. */
static void emit_model(const struct emitter *e)
{
	FILE *f = e->f;
	const struct graph *g = e->g;
	const struct schedule *p = e->p;
	struct strbuf name = {0}, src = {0}, opts = {0};
	sb_cstring(&name, g->name);
	sb_cstring(&src, g->file);
	sb_cstring(&opts, e->info->options);
	out(f, "ARK_DEFINE_LOOP()\n\n");
	out(f, "extern \"C\" const struct ark_model ark_model_def = {\n");
	out(f, "\t.name = %s,\n\t.source = %s,\n\t.options = %s,\n", name.s, src.s, opts.s);
	out(f, "\t.gpus = %d,\n\t.sms = ARK_SMS,\n\t.threads = ARK_THREADS,\n\t.smem_bytes = ARK_SMEM_BYTES,\n", g->gpus);
	out(f, "\t.predicted_us = %.3f,\n", p->sim.latency_us);
	out(f, "\t.n_tensors = %d,\n\t.tensors = tensors,\n\t.n_ops = %d,\n\t.ops = ops,\n", g->n_tensors, g->n_ops);
	out(f, "\t.tables = {\n");
	for (int gpu = 0; gpu < g->gpus; gpu++) {
		struct init in;
		init_begin(&in, f, 2);
		init_field(&in, ".arena_bytes = %" PRIu64 "u", e->s->arena[gpu]);
		init_field(&in, ".n_tasks = %d", e->n_tasks[gpu]);
		init_field(&in, ".tasks = tasks_g%d", gpu);
		init_field(&in, ".sm_begin = sm_begin_g%d", gpu);
		init_field(&in, ".n_waits = %" PRId64, e->n_waits[gpu]);
		init_field(&in, ".waits = waits_g%d", gpu);
		init_field(&in, ".n_opp = %d", e->n_opp[gpu]);
		init_field(&in, ".opp = opp_g%d", gpu);
		init_field(&in, ".n_counters = %d", p->gpu_counters[gpu] + (e->n_bar ? 1 : 0));
		init_field(&in, ".n_done = ARK_SMS");
		init_end(&in);
	}
	out(f, "\t},\n\t.launch = ark_launch,\n\t.kernel = (const void *)ark_loop_kernel,\n};\n");
	free(name.s);
	free(src.s);
	free(opts.s);
}

int emit_loop(const struct tiling *s, const struct schedule *p, const struct emit_info *info, FILE *f)
{
	const struct graph *g = s->g;
	struct emitter e = {.f = f, .s = s, .p = p, .info = info, .g = g, .sms = p->pl.sms / g->gpus};
	int rc = -1;

	e.n_bar = p->barrier && p->n_levels > 1 ? p->n_levels - 1 : 0;
	e.opp_gpu = xmalloc(((size_t)g->n_ops + 1) * sizeof *e.opp_gpu);
	e.opp_index = xmalloc(((size_t)g->n_ops + (size_t)s->n_comm + 1) * sizeof *e.opp_index);
	e.op_index = xmalloc(((size_t)g->n_ops + 1) * sizeof *e.op_index);
	e.wbase = xmalloc(((size_t)s->n_vcta + 1) * sizeof *e.wbase);
	for (int k = 0; k < g->n_ops; k++)
		e.op_index[g->order[k]] = k; /* ops[] is in this order */
	for (int v = 0; v < s->n_vcta; v++) {
		int gpu = s->v[v].gpu;
		e.wbase[v] = e.n_waits[gpu];
		e.n_waits[gpu] += p->wait0[v + 1] - p->wait0[v];
	}
	for (int gpu = 0; gpu < g->gpus; gpu++)
		e.n_waits[gpu] += e.n_bar;
	number_opp(&e);
	if (check_limits(&e))
		goto out;
	const char **names = xmalloc(((size_t)g->n_tensors + 1) * sizeof *names);
	for (int t = 0; t < g->n_tensors; t++)
		names[t] = g->tensors[t].name;
	e.off_name = c_identifiers("ARK_OFF_", names, g->n_tensors);
	free(names);

	emit_header(&e);
	emit_offsets(&e);
	emit_tensors(&e);
	emit_ops(&e);
	for (int gpu = 0; gpu < g->gpus; gpu++) {
		emit_gpu_opp(&e, gpu);
		emit_gpu_tasks(&e, gpu);
		emit_gpu_waits(&e, gpu);
	}
	emit_model(&e);
	rc = ferror(f) ? -1 : 0;
out:
	for (int t = 0; e.off_name && t < g->n_tensors; t++)
		free(e.off_name[t]);
	free(e.off_name);
	free(e.opp_gpu);
	free(e.opp_index);
	free(e.op_index);
	free(e.wbase);
	return rc;
}

static void cstr_to(FILE *f, const char *s)
{
	struct strbuf b = {0};
	sb_cstring(&b, s);
	out(f, "%s", b.s);
	free(b.s);
}

/* The checked graph, for tools that rebuild the model elsewhere: "tensors" and "ops" (topological). */
static void json_graph(const struct graph *g, FILE *f)
{
	out(f, "  \"tensors\": [\n");
	for (int i = 0; i < g->n_tensors; i++) {
		const struct tensor *t = &g->tensors[i];
		out(f, "    {\"name\": ");
		cstr_to(f, t->name);
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
		cstr_to(f, o->name);
		out(f, ", \"kind\": \"%s\", \"gpu\": %d, \"line\": %d, \"in\": [", op_info[o->kind].name, o->gpu,
		    o->line);
		for (int j = 0; j < o->n_in; j++) {
			out(f, j ? ", " : "");
			cstr_to(f, g->tensors[o->in[j]].name);
		}
		out(f, "], \"out\": [");
		for (int j = 0; j < o->n_out; j++) {
			out(f, j ? ", " : "");
			cstr_to(f, g->tensors[o->out[j]].name);
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
	cstr_to(f, g->name);
	out(f, ",\n  \"source\": ");
	cstr_to(f, g->file);
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
		cstr_to(f, g->ops[t->op].name);
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
