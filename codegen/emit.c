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
#include "emit_streams.h"
#include "emit_text.h"
#include "ark_proto.h"
#include "ark_smem.h"

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
	const struct tables *t;         /* the tables to print: p->tab, as the verifier proved them */
	const struct emit_info *info;
	const struct graph *g;
	int sms;                        /* per GPU */
	char **off_name;                /* per tensor: the macro of its arena offset, ARK_OFF_<name> */
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

/* Whether the generated file compiles op oi's chain with its steps (emit_chain_code). */
static int chain_compiled(const struct tiling *s, int oi)
{
	return s->per_op[oi].chain_gen && s->per_op[oi].n_vcta;
}

/* ---- the steps of emit_loop ------------------------------------------------------------------ */

/* The row class of a streaming or quantized tile of r rows (1, 2, 4, 8, 16 rows: 0 to 4), the bit
 * of its instance in ARK_MM_STREAM_MB_* and ARK_MMQ_ROWS (op_matmul.cuh, op_quant.cuh). */
_Static_assert(ARK_MM_SMALL_M == 1 << 4, "the row classes: 1, 2, 4, 8 and ARK_MM_SMALL_M rows");
static int row_class(uint32_t r)
{
	return r <= 1 ? 0 : r <= 2 ? 1 : r <= 4 ? 2 : r <= 8 ? 3 : 4;
}

/* Which instance of ark_mm_staged a matmul tile takes (op_matmul.cuh): bit 2 * transpose_b + 1 where
 * a or b may not be read as aligned 16-byte vectors, + 0 where both may; none where it streams b. The
 * same tests as the template's, on the offsets and strides the opp gives it. */
static unsigned staged_instance(const struct emitter *e, const struct vcta *x)
{
	const struct tiling *s = e->s;
	const struct graph *g = e->g;
	const struct op *o = &g->ops[x->op];
	const int a = o->in[0], b = o->in[1];
	const int64_t ve = 16 / ark_dtype_size(g->tensors[a].dtype), K = s->cols[a];
	const int64_t as = g->tensors[a].pitch ? g->tensors[a].pitch : K, bs = matmul_b_stride(s, x->op);
	const uint32_t k0 = x->tmpl == ARK_T_MATMUL_PARTIAL ? x->k0 : 0;
	const int al = s->offset[a] % 16 == 0 && s->offset[b] % 16 == 0 && k0 % ve == 0 && K % ve == 0 &&
		       as % ve == 0 && bs % ve == 0 && (o->transpose_b || x->n0 % ve == 0);
	if (!tile_matmul_mma(s, x) && !tile_matmul_ffma(s, x)) { /* it streams b where b is aligned */
		const uint32_t kn0 = o->transpose_b ? k0 : x->n0;
		if (s->offset[b] % 16 == 0 && bs % ve == 0 && kn0 % ve == 0)
			return 0;
	}
	return 1u << (2 * (o->transpose_b != 0) + !al);
}

/* The header comment (source, options, sizes, prediction), the build-time constants, the includes. */
static void emit_header(const struct emitter *e)
{
	FILE *f = e->f;
	const struct tiling *s = e->s;
	const struct schedule *p = e->p;
	const struct graph *g = e->g;
	int64_t n_waits = p->wait0[s->n_vcta];
	int n_counters = p->n_counters + (e->t->n_bar ? 1 : 0);
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
	/* Templates only for the dtypes some vCTA computes in: each costs a third of the build time. The
	 * tensor-core tiles of stages only where a 16-bit matmul tile runs on them (tile_matmul_mma: the
	 * choice ark_mm_sub makes, or a streaming tile off its alignment), and of their four instances
	 * only those taken: each costs the loop kernel registers and stack in every model that includes
	 * it, the models that never run it too. The fp32 FMA tile of stages likewise (tile_matmul_ffma). */
	int used[ARK_DTYPE__COUNT] = {0}, mma = 0, ffma = 0, att = 0, dec = 0, quant = 0, emb_res = 0;
	int stream_mb[2] = {0, 0}; /* b [K, N], b [N, K]: the row classes a streaming tile may take */
	unsigned staged = 0;       /* the instances of the tiles of stages their tiles take (staged_instance) */
	unsigned mmq_rows = 0;     /* the quantized tiles' row classes, q4_1 in bits 0-4, q8_0 in 8-12 */
	int tmpl_used[ARK_T__COUNT] = {0};
	for (int v = 0; v < s->n_vcta; v++) {
		const struct vcta *x = &s->v[v];
		tmpl_used[x->tmpl] = 1;
		/* decode_attention of many query rows runs on the attention tile (op_decode.cuh) */
		att |= x->tmpl == ARK_T_ATTENTION || (x->tmpl == ARK_T_DECODE && s->per_op[x->op].att_tile);
		dec |= x->tmpl == ARK_T_ROPE || x->tmpl == ARK_T_DECODE || x->tmpl == ARK_T_DECODE_COMBINE ||
		       x->tmpl == ARK_T_ARGMAX || x->tmpl == ARK_T_ARGMAX_COMBINE;
		const struct op *xo = &g->ops[x->op]; /* argmax computes in its input's dtype */
		quant |= (xo->n_in > 1 && ark_dtype_quantized(g->tensors[xo->in[1]].dtype)) || x->tmpl == ARK_T_DEQUANT;
		/* an embedding of a plain table with a fused add (op_view.cuh's function of its own) */
		emb_res |= x->tmpl == ARK_T_EMBEDDING && s->per_op[x->op].residual >= 0 &&
			   !ark_dtype_quantized(g->tensors[xo->in[1]].dtype);
		const int dt = g->tensors[xo->kind == ARK_OP_ARGMAX ? xo->in[0] : xo->out[0]].dtype;
		used[dt] = 1;
		const int mm = x->tmpl == ARK_T_MATMUL || x->tmpl == ARK_T_MATMUL_PARTIAL;
		if (mm && !ark_dtype_quantized(g->tensors[xo->in[1]].dtype) && s->per_op[x->op].pre_op < 0) {
			/* a tile that does not stream b, or streams but not on its alignment */
			const unsigned st = staged_instance(e, x);
			staged |= st;
			mma |= st && dt != ARK_FP32;
			ffma |= st && dt == ARK_FP32;
		}
		if (mm && ark_dtype_quantized(g->tensors[xo->in[1]].dtype)) /* ark_mmq_sub: 16 rows at a time */
			for (uint32_t r0 = x->m0; r0 < x->m1; r0 += 128) {
				const uint32_t r1 = x->m1 < r0 + 128 ? x->m1 : r0 + 128;
				for (uint32_t c0 = r0; c0 < r1; c0 += 16)
					mmq_rows |= 1u << (row_class(r1 - c0 < 16 ? r1 - c0 : 16) +
							   (g->tensors[xo->in[1]].dtype == ARK_Q4_1 ? 0 : 8));
			}
		if (mm) /* ark_matmul_tile's sub-tiles of 128 rows; one of few rows may stream */
			for (uint32_t r0 = x->m0; r0 < x->m1; r0 += 128) {
				const uint32_t r = x->m1 - r0 < 128 ? x->m1 - r0 : 128;
				if (r <= ARK_MM_SMALL_M)
					stream_mb[xo->transpose_b != 0] |= 1 << row_class(r);
			}
	}
	for (int dt = 0; dt < ARK_FLOAT_DTYPES; dt++) /* int32 is never computed in */
		out(f, "#define ARK_TILES_%s %d\n", dtype_enum[dt] + 4, used[dt]);
	out(f, "#define ARK_TILES_MMA %d\n#define ARK_TILES_FFMA %d\n", mma, ffma);
	/* The streaming tiles only for the row classes (MB: 1, 2, 4, 8, 16) some matmul tile of few rows
	 * has, per layout of b: each is compiled apart, and a loop kernel of them all held 1.1 MB of code
	 * for mlp, whose two matmuls take one (bench/NOTES.md) */
	out(f, "#define ARK_MM_STREAM_MB_KN 0x%02x\n#define ARK_MM_STREAM_MB_NK 0x%02x\n", stream_mb[0], stream_mb[1]);
	/* and the tiles of stages likewise: b [K, N] / [N, K], aligned or not (staged_instance) */
	out(f, "#define ARK_MM_STAGED 0x%x\n", staged);
	if (quant) /* the quantized tiles' row classes (op_quant.cuh) */
		out(f, "#define ARK_MMQ_ROWS 0x%04x\n", mmq_rows);
	/* Only the templates some task names are compiled (ark_tiles.cuh): the others cost build time.
	 * The grid barriers of --sync barrier are tasks of no vCTA. */
	if (e->t->n_bar)
		tmpl_used[ARK_T_BARRIER] = 1;
	out(f, "#define ARK_TILES_USED (");
	for (int t = 0, n = 0; t < ARK_T__COUNT; t++)
		if (tmpl_used[t]) /* four to a line */
			out(f, "%sARK_TILE_BIT(%s)", n == 0 ? "" : n % 4 ? " | " : " | \\\n\t", tmpl_name(t)), n++;
	out(f, ")\n");
	/* The same for the activations a matmul or a sum applies (ark_with_act compiles one epilogue per
	 * activation): an empty list where none is fused. */
	int act_used[ARK_OP__COUNT] = {0};
	for (int o = 0; o < g->n_ops; o++)
		if (s->per_op[o].act != ARK_ACT_NONE)
			act_used[s->per_op[o].act] = 1;
	for (int x = 0; x < s->n_comm; x++)
		if (s->comm[x].act != ARK_ACT_NONE)
			act_used[s->comm[x].act] = 1;
	out(f, "#define ARK_ACTS_USED(X)");
	for (int k = 0; k < ARK_OP__COUNT; k++)
		if (act_used[k])
			out(f, " X(%s)", op_enum[k] + 7);
	out(f, "\n");
	if (att) /* off by default (op_attention.cuh): said only where used, other files unchanged */
		out(f, "#define ARK_TILES_ATTENTION 1\n");
	if (dec) /* the same for rope, decode_attention and argmax (op_decode.cuh) */
		out(f, "#define ARK_TILES_DECODE 1\n");
	if (quant) /* the same: q4_1 / q8_0 weights (op_quant.cuh) */
		out(f, "#define ARK_TILES_QUANT 1\n");
	if (tmpl_used[ARK_T_EMBEDDING]) /* on by default (op_view.cuh): said where an embedding runs */
		out(f, "#define ARK_EMB_RESIDUAL %d\n", emb_res);
	for (int o = 0; o < g->n_ops; o++)
		if (chain_compiled(s, o)) { /* chains compiled with their steps */
			out(f, "#ifndef ARK_CHAIN_TEMPLATE /* defined: every chain on the template that reads its "
			       "steps */\n#define ARK_CHAIN_GEN 1\n#endif\n");
			break;
		}
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
	static const char *const head[] = {"name", "dtype", "role", "ndim", "GPU", "shape", "offset", "bytes", "pitch"};
	struct tab t = {.cols = 9, .head = head, .align = "lllrrllrr"};
	out(e->f, "/* Tensors: row-major, each in the arena of its GPU; pitch: bytes from a row to the next where\n"
		  " * rows are padded to 16-byte vectors (0: rows packed). */\n");
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
		tab_cell(&t, "%" PRId64 "u", T->pitch * (int64_t)ark_dtype_size(T->dtype));
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
					   "axis", "in", "out", "factor", "eps", "line", "heads", "kv_heads",
					   "causal", "scale", "start, dims", "head_dim, rotary_dim, style, base"};
	/* the attention columns only where the model has an attention op (struct ark_op leaves them 0) */
	int att = 0, vw = 0, rope = 0; /* and the views' columns where it has a slice, a transpose or an advance
					* (by), rope's */
	for (int k = 0; k < g->n_ops; k++) {
		att |= g->ops[k].kind == ARK_OP_ATTENTION || g->ops[k].kind == ARK_OP_DECODE_ATTENTION;
		vw |= g->ops[k].kind == ARK_OP_SLICE || g->ops[k].kind == ARK_OP_TRANSPOSE || g->ops[k].kind == ARK_OP_ADVANCE;
		rope |= g->ops[k].kind == ARK_OP_ROPE;
	}
	vw |= rope;
	struct tab t = {.cols = rope ? 19 : vw ? 18 : att ? 17 : 13, .head = head, .align = "llrrrrlrllllrrrrlll"};
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
		if (att || vw) {
			tab_cell(&t, "%d", o->heads);
			tab_cell(&t, "%d", o->kv_heads);
			tab_cell(&t, "%d", o->causal);
			tab_cell(&t, "%s", c_float(fa, sizeof fa, o->scale));
		}
		if (vw)
			tab_cell(&t, "%lld, {%d, %d}", (long long)(o->kind == ARK_OP_ADVANCE ? o->by : o->start), o->dims[0],
				 o->dims[1]);
		if (rope)
			tab_cell(&t, "%d, %d, %d, %s", o->head_dim, o->rotary_dim, o->style, c_float(fa, sizeof fa, o->base));
		tab_end(&t, "%d: %s: %s", k, c_comment_text(c, sizeof c, o->name), op_formula(formula, sizeof formula, g, o));
		free(name.s);
		free(in.s);
		free(ot.s);
	}
	tab_print(&t, e->f);
	out(e->f, "};\n\n");
}

/* ---- op params ---- */

/* The fields of an op's params that are not zero, as emit_opp and the comm ones share them (mask_dtype
 * -1: none; wdtype -1: none, else a quantized b or table's dtype). */
static void opp_head(struct init *in, int kind, int dtype, unsigned flags, int act, int mask_dtype, int wdtype,
		     uint32_t splits, int peer)
{
	char fl[160];
	init_field(in, ".kind = %s", op_enum[kind]);
	init_field(in, ".dtype = %s", dtype_enum[dtype]);
	if (flags)
		init_field(in, ".flags = %s", flags_str(fl, sizeof fl, flags));
	init_field(in, ".act = %s", act == ARK_ACT_NONE ? "ARK_ACT_NONE" : op_enum[act]);
	if (mask_dtype >= 0)
		init_field(in, ".mask_dtype = %s", dtype_enum[mask_dtype]);
	if (wdtype >= 0)
		init_field(in, ".wdtype = %s", dtype_enum[wdtype]);
	if (splits)
		init_field(in, ".splits = %u", splits);
	init_field(in, ".peer = %d", peer);
}

/* A STRIDED tile's index space and strides (view_copy_params) counted in copies of `unit` elements
 * (view_copy_unit): its last dimension, the other strides and the first element divided by it. */
static void copy_in_units(int nd, int unit, int64_t *oshape, int64_t ist[2][4], int64_t *k)
{
	oshape[nd - 1] /= unit;
	for (int d = 0; d < nd - 1; d++)
		ist[0][d] /= unit, ist[1][d] /= unit;
	*k /= unit;
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
	int nd = 0, unit = 1, boxed = 0; /* a STRIDED tile's elements per copy, and whether it copies boxes */
	if (o->kind == ARK_OP_MATMUL) {
		K = s->cols[o->in[0]];
		flags |= o->transpose_b ? ARK_OPP_TRANSPOSE_B : 0;
		flags |= o->n_in > 2 ? ARK_OPP_BIAS : 0;
		flags |= pl->residual >= 0 ? ARK_OPP_RESIDUAL : 0;
		if (pl->pre_op >= 0 && g->ops[pl->pre_op].kind == ARK_OP_RMSNORM) /* its eps; in[0] below is its input */
			fval = g->ops[pl->pre_op].eps;
	} else if (op_info[o->kind].flags & ARK_OPF_ELEMENTWISE) {
		int same = 1;
		nd = T->ndim;
		memcpy(oshape, T->shape, sizeof oshape);
		for (int i = 0; i < o->n_in && i < 2; i++) {
			const struct tensor *I = &g->tensors[o->in[i]];
			same &= tensor_same_shape(I, T);
			bcast_strides(I, T, ist[i]);
		}
		flags |= same ? ARK_OPP_SAME_SHAPE : 0;
		ARK_ASSERT(N == T->shape[T->ndim - 1]); /* the broadcasting tile's rows (op_elementwise.cuh) */
		fval = o->factor;
	} else if (o->kind == ARK_OP_LAYERNORM || o->kind == ARK_OP_RMSNORM || o->kind == ARK_OP_L2_NORMALIZE) {
		fval = o->eps;
	} else if (o->kind == ARK_OP_ATTENTION) { /* the fields as struct ark_opp describes them for attention */
		const struct tensor *q = &g->tensors[o->in[0]], *k = &g->tensors[o->in[1]];
		M = q->shape[q->ndim - 2];
		K = k->shape[k->ndim - 2];
		fval = o->scale;
		flags |= (o->n_in > 3 ? ARK_OPP_MASK : 0) | (o->causal ? ARK_OPP_CAUSAL : 0);
		oshape[0] = q->ndim == 3 ? q->shape[0] : 1;
		oshape[1] = o->heads;
		oshape[2] = o->kv_heads;
		oshape[3] = N / o->heads;
		ist[0][0] = o->n_in > 3 ? g->tensors[o->in[3]].dtype : 0;
	} else if (o->kind == ARK_OP_ADVANCE) {
		K = o->by;
	} else if (o->kind == ARK_OP_KV_APPEND) {
		K = s->rows[o->in[0]] - s->rows[o->in[1]] + 1; /* positions 0..L-T; others abort the iteration */
	} else if (o->kind == ARK_OP_EMBEDDING) {
		K = s->rows[o->in[1]]; /* V: ids outside 0..V-1 abort the iteration */
		flags |= pl->residual >= 0 ? ARK_OPP_RESIDUAL : 0; /* in[3], added to every row */
	} else if (op_info[o->kind].flags & ARK_OPF_VIEW) {
		ARK_ASSERT(o->copied);
		int64_t at;
		nd = view_copy_params(g, o, 0, oshape, ist, &K, &at);
		unit = view_copy_unit(g, o, 0);
		boxed = view_copy_boxed(g, o);
		copy_in_units(nd, unit, oshape, ist, &K);
	}
	int dtype = T->dtype;
	char posf[160] = ""; /* rope, decode_attention: istride[0] = {pos's offset, ...} */
	if (o->kind == ARK_OP_ROPE) {
		const struct tensor *x = &g->tensors[o->in[0]];
		K = x->shape[x->ndim - 2];
		fval = o->base;
		oshape[0] = o->head_dim, oshape[1] = o->rotary_dim, oshape[2] = o->style;
		snprintf(posf, sizeof posf, "{%s, 0, 0, 0}", offset_of(e, o->in[1]));
	} else if (o->kind == ARK_OP_DECODE_ATTENTION) {
		const int64_t L = s->rows[o->in[1]];
		M = s->rows[o->in[0]];
		K = L - M + 1; /* positions 0..L-T */
		fval = o->scale;
		oshape[0] = L, oshape[1] = o->heads, oshape[2] = o->kv_heads, oshape[3] = N / o->heads;
		snprintf(posf, sizeof posf, "{%s, %" PRId64 ", %d, 0}", offset_of(e, o->in[3]), pl->kchunk, pl->att_tile);
	} else if (o->kind == ARK_OP_ARGMAX) {
		M = s->rows[o->in[0]], N = s->cols[o->in[0]];
		dtype = g->tensors[o->in[0]].dtype; /* the templates' type: x's (out is int32) */
	}
	int64_t rview[4] = {0}; /* reduce_mean: in[0] as [P, S, Q, D], out as [P * Q, D] */
	if (o->kind == ARK_OP_REDUCE_MEAN) {
		tile_reduce_view(g, o, rview);
		M = rview[0] * rview[2], N = rview[3], K = rview[1];
		flags |= o->n_in > 1 ? ARK_OPP_MASK : 0;
	}
	char c1[256], c2[1024];
	out(e->f, "\t/* %d: %s%s: %s (%s:%d)", index, extra_flags & ARK_OPP_CHAIN_IN1 ? "chained value in[1]: " : "",
	    c_comment_text(c1, sizeof c1, o->name), op_info[o->kind].name, c_comment_text(c2, sizeof c2, g->file), o->line);
	if (pl->act != ARK_ACT_NONE)
		out(e->f, " + %s fused", op_info[pl->act].name);
	if (pl->residual >= 0)
		out(e->f, " + add of %s fused", c_comment_text(c1, sizeof c1, g->tensors[pl->residual].name));
	if (pl->pre_op >= 0)
		out(e->f, ", %s %s fused on a", op_info[g->ops[pl->pre_op].kind].name,
		    c_comment_text(c1, sizeof c1, g->ops[pl->pre_op].name));
	out(e->f, " */\n");

	struct init in;
	struct strbuf ins = {0};
	char l1[160], l2[160];
	init_begin(&in, e->f, 1);
	const int mask = o->kind == ARK_OP_REDUCE_MEAN && o->n_in > 1 ? o->in[1]
		       : o->kind == ARK_OP_ATTENTION && o->n_in > 3 ? o->in[3]
								   : -1;
	const int wdt = o->kind == ARK_OP_DEQUANTIZE ? (int)g->tensors[o->in[0]].dtype
			: (o->kind == ARK_OP_MATMUL || o->kind == ARK_OP_EMBEDDING) &&
					ark_dtype_quantized(g->tensors[o->in[1]].dtype)
				? (int)g->tensors[o->in[1]].dtype
				: -1;
	opp_head(&in, o->kind, dtype, flags, pl->act, mask >= 0 ? (int)g->tensors[mask].dtype : -1, wdt,
		 (uint32_t)pl->splits, -1);
	for (int i = 0; i < o->n_in && i < 3; i++)
		sb_printf(&ins, "%s%s", i ? ", " : "",
			  offset_of(e, i == 0 && pl->pre_op >= 0 ? g->ops[pl->pre_op].in[0] : o->in[i]));
	if (pl->residual >= 0) /* in[3], after a bias or its place */
		sb_printf(&ins, "%s, %s", o->n_in > 2 ? "" : ", 0u", offset_of(e, pl->residual));
	init_field(&in, ".in = {%s}", ins.s);
	init_field(&in, ".out = %s", offset_of(e, outt));
	if (pl->ws_tensor >= 0)
		init_field(&in, ".ws = %s", offset_of(e, pl->ws_tensor));
	if (o->kind == ARK_OP_ATTENTION && o->n_in > 3)
		init_field(&in, ".ws = %s", offset_of(e, o->in[3]));
	init_field(&in, ".M = %" PRId64, M);
	init_field(&in, ".N = %" PRId64, N);
	if (K)
		init_field(&in, ".K = %" PRId64, K);
	if (fval != 0)
		init_field(&in, ".f = %s", c_float(c1, sizeof c1, fval));
	if (o->kind == ARK_OP_ROPE || o->kind == ARK_OP_DECODE_ATTENTION) {
		init_field(&in, ".oshape = %s", i64_list(c1, sizeof c1, oshape, 4));
		init_field(&in, ".istride = {%s}", posf);
	}
	if (o->kind == ARK_OP_ATTENTION) {
		init_field(&in, ".oshape = %s", i64_list(c1, sizeof c1, oshape, 4));
		if (o->n_in > 3)
			init_field(&in, ".istride = {%s}", i64_list(l1, sizeof l1, ist[0], 4));
	}
	if (nd) {
		init_field(&in, ".ndim = %d", nd);
		init_field(&in, ".oshape = %s", i64_list(c1, sizeof c1, oshape, nd));
		if (o->n_in > 1)
			init_field(&in, ".istride = {%s, %s}", i64_list(l1, sizeof l1, ist[0], nd),
				   i64_list(l2, sizeof l2, ist[1], nd));
		else
			init_field(&in, ".istride = {%s}", i64_list(l1, sizeof l1, ist[0], nd));
	}
	if (o->kind == ARK_OP_REDUCE_MEAN) {
		init_field(&in, ".oshape = %s", i64_list(c1, sizeof c1, rview, 4));
	}
	if (unit > 1)
		init_field(&in, ".unit = %d", unit);
	if (boxed)
		init_field(&in, ".boxed = 1");
	if (o->kind == ARK_OP_MATMUL) { /* rows of b, a, out padded (lower_pad.c) */
		const int at = pl->pre_op >= 0 ? g->ops[pl->pre_op].in[0] : o->in[0];
		const int64_t pb = g->tensors[o->in[1]].pitch, pa = g->tensors[at].pitch, po = g->tensors[outt].pitch;
		if (pb || pa || po)
			init_field(&in, ".istride = {{%" PRId64 ", %" PRId64 ", %" PRId64 "}}", pb, pa, po);
	}
	if (pl->pre_op >= 0) {
		init_field(&in, ".pre_in = %s", offset_of(e, g->ops[pl->pre_op].in[1]));
		init_field(&in, g->ops[pl->pre_op].kind == ARK_OP_RMSNORM ? ".pre = ARK_PRE_RMSNORM" : ".pre = ARK_PRE_SWIGLU");
	}
	init_end(&in);
	free(ins.s);
}

/* Whether chain `head`'s chained value starts as the head's in[1]: it starts as the head's input of
 * the chain's output shape T, in[1] where in[0] is broadcast. */
static int chain_head_in1(const struct graph *g, int head, const struct tensor *T)
{
	const struct op *h = &g->ops[head];
	return h->n_in > 1 && !tensor_same_shape(&g->tensors[h->in[0]], T);
}

/* Whether chain step o takes the chained value as its in[1]: prev_out is the output of the step
 * before (-1 for the head, whose answer is head_in1). */
static int chain_step_in1(const struct op *o, int prev_out, int head_in1)
{
	return prev_out >= 0 ? o->n_in > 1 && o->in[1] == prev_out : head_in1;
}

/* A chain of elementwise ops (fuse.c: fuse_chains) at entry `index`: its descriptor (dtype, first
 * input, last output, number of steps), then every op's own params, in order. */
static void emit_chain_opp(const struct emitter *e, int head, int index)
{
	const struct tiling *s = e->s;
	const struct graph *g = e->g;
	const struct op_tiling *pl = &s->per_op[head];
	const struct op *h = &g->ops[head];
	int outt = pl->out_tensor;
	const struct tensor *T = &g->tensors[outt];
	const int head_in1 = chain_head_in1(g, head, T);
	char c1[256], c2[1024], c3[256], c4[256], c5[256];
	out(e->f, "\t/* %d: chain of %d elementwise ops, %s (%s:%d) to %s, in registers: %s -> %s */\n", index,
	    pl->chain_len, c_comment_text(c1, sizeof c1, h->name), c_comment_text(c2, sizeof c2, g->file), h->line,
	    c_comment_text(c3, sizeof c3, g->ops[g->tensors[outt].producer].name),
	    c_comment_text(c4, sizeof c4, g->tensors[h->in[head_in1]].name), c_comment_text(c5, sizeof c5, g->tensors[outt].name));
	struct init in;
	init_begin(&in, e->f, 1);
	opp_head(&in, h->kind, T->dtype, 0, ARK_ACT_NONE, -1, -1, (uint32_t)pl->chain_len, -1);
	init_field(&in, ".in = {%s}", offset_of(e, h->in[head_in1]));
	init_field(&in, ".out = %s", offset_of(e, outt));
	init_field(&in, ".M = %" PRId64, s->rows[outt]);
	init_field(&in, ".N = %" PRId64, s->cols[outt]);
	init_end(&in);
	int prev_out = -1, k = index + 1;
	for (int x = head; x >= 0; x = s->per_op[x].chain_next, k++) {
		const struct op *o = &g->ops[x];
		const int in1 = chain_step_in1(o, prev_out, head_in1);
		emit_opp(e, x, in1 ? ARK_OPP_CHAIN_IN1 : 0, k);
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
	opp_head(&in, p.kind, p.dtype, p.flags, p.act, -1, -1, p.splits, p.peer);
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
	init_end(&in);
	free(ins.s);
}

/* A concat that copies, at entries index..: one STRIDED entry per input, which copies input j's
 * elements (oshape: its shape, istride[0]: its strides) to out from the input's first element in
 * out on (istride[1]: out's strides). */
static void emit_concat_copy_opp(const struct emitter *e, int oi, int index)
{
	const struct graph *g = e->g;
	const struct op *o = &g->ops[oi];
	const struct tensor *T = &g->tensors[o->out[0]];
	for (int j = 0; j < o->n_in; j++) {
		const struct tensor *X = &g->tensors[o->in[j]];
		int64_t sh[4], ist[2][4], k, at;
		const int nd = view_copy_params(g, o, j, sh, ist, &k, &at), unit = view_copy_unit(g, o, j);
		copy_in_units(nd, unit, sh, ist, &k);
		char c1[256], c2[1024], c3[256], l1[160], l2[160], l3[160];
		out(e->f, "\t/* %d: %s: concat (%s:%d), copy of input %d, %s */\n", index + j, c_comment_text(c1, sizeof c1, o->name),
		    c_comment_text(c2, sizeof c2, g->file), o->line, j, c_comment_text(c3, sizeof c3, X->name));
		struct init in;
		init_begin(&in, e->f, 1);
		opp_head(&in, o->kind, T->dtype, 0, ARK_ACT_NONE, -1, -1, (uint32_t)e->s->per_op[oi].splits, -1);
		init_field(&in, ".in = {%s}", offset_of(e, o->in[j]));
		if (at)
			init_field(&in, ".out = %s + %" PRIu64 "u", offset_of(e, o->out[0]),
				   (uint64_t)(at * ark_dtype_size(T->dtype)));
		else
			init_field(&in, ".out = %s", offset_of(e, o->out[0]));
		init_field(&in, ".M = %" PRId64, e->s->rows[o->in[j]]);
		init_field(&in, ".N = %" PRId64, e->s->cols[o->in[j]]);
		init_field(&in, ".ndim = %d", nd);
		init_field(&in, ".oshape = %s", i64_list(l3, sizeof l3, sh, nd));
		init_field(&in, ".istride = {%s, %s}", i64_list(l1, sizeof l1, ist[0], nd), i64_list(l2, sizeof l2, ist[1], nd));
		if (unit > 1)
			init_field(&in, ".unit = %d", unit);
		init_end(&in);
	}
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
		if (e->t->opp_gpu[oi] != gpu)
			continue;
		if (s->per_op[oi].chain_len)
			emit_chain_opp(e, oi, e->t->opp_index[oi]);
		else if (g->ops[oi].kind == ARK_OP_CONCAT && g->ops[oi].copied)
			emit_concat_copy_opp(e, oi, e->t->opp_index[oi]);
		else
			emit_opp(e, oi, 0, e->t->opp_index[oi]);
	}
	for (int x = 0; x < s->n_comm; x++)
		if (s->comm[x].gpu == gpu)
			emit_comm_opp(e, x, e->t->opp_index[g->n_ops + x]);
	if (!e->t->gpu[gpu].n_opp)
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
	case ARK_SPAN_ELEMS: /* or a box (a transposing STRIDED tile) */
		if (t->k1 > t->k0 || t->m1 == t->m0)
			snprintf(buf, n, " elements %u:%u", t->k0, t->k1);
		else
			snprintf(buf, n, " rows %u:%u cols %u:%u", t->m0, t->m1, t->n0, t->n1);
		break;
	case ARK_SPAN_NONE: buf[0] = 0; break;
	}
	return buf;
}

/* One task row, printed from the table entry; the comment names vCTA x's op, tile and line. */
static void task_row(const struct emitter *e, struct tab *t, const struct ark_task *k)
{
	const struct vcta *x = &e->s->v[k->vcta];
	const struct op *o = &e->g->ops[x->op];
	char sp[128], nm[256];
	tab_cell(t, "%u", k->op);
	tab_cell(t, "%u", k->opp);
	tab_cell(t, "%s", tmpl_enum[k->tmpl]);
	tab_cell(t, "%u", k->sig_peer);
	tab_cell(t, "%u", k->n_wait);
	tab_cell(t, "%u", k->split);
	tab_cell(t, "%u", k->wait0);
	if (k->signal >= 0)
		tab_cell(t, "ARK_CTR(%d)", k->signal - ARK_CTR__FIRST);
	else
		tab_cell(t, "-1");
	tab_cell(t, "%u", k->m0);
	tab_cell(t, "%u", k->m1);
	tab_cell(t, "%u", k->n0);
	tab_cell(t, "%u", k->n1);
	tab_cell(t, "%u", k->k0);
	tab_cell(t, "%u", k->k1);
	tab_cell(t, "%u", k->vcta);
	char gs[32] = "";
	if (k->sig_peer)
		snprintf(gs, sizeof gs, ", signals GPU %d", k->sig_peer - 1);
	tab_end(t, "v%u %s %s%s%s (line %d)", k->vcta, c_comment_text(nm, sizeof nm, o->name), tmpl_name(x->tmpl),
		span_str(sp, sizeof sp, x), gs, o->line);
}

/* A grid barrier's row (--sync barrier), the l-th of its SM. */
static void barrier_row(struct tab *t, const struct ark_task *k, int l)
{
	tab_cell(t, "ARK_TASK_NO_OP");
	tab_cell(t, "0");
	tab_cell(t, "ARK_T_BARRIER");
	tab_cell(t, "0");
	tab_cell(t, "%u", k->n_wait);
	tab_cell(t, "0");
	tab_cell(t, "%u", k->wait0);
	tab_cell(t, "ARK_CTR(%d)", k->signal - ARK_CTR__FIRST);
	for (int i = 0; i < 6; i++)
		tab_cell(t, "0");
	tab_cell(t, "0xffffffffu");
	tab_end(t, "grid barrier after level %d", l);
}

/* The task lists of one GPU's SMs, back to back, then where each SM's list begins. */
static void emit_gpu_tasks(const struct emitter *e, int gpu)
{
	const struct gpu_tables *T = &e->t->gpu[gpu];
	const int sms = e->sms;
	static const char *const head[] = {"op", "opp", "tmpl", "sig_peer", "n_wait", "split", "wait0", "signal",
					   "m0", "m1", "n0", "n1", "k0", "k1", "vcta"};
	struct tab t = {.cols = 15, .head = head, .align = "rrlrrrrrrrrrrrr"};
	char of[32];
	out(e->f, "/* Tasks of every SM%s, back to back (struct ark_task): op and op params, template, GPU of a "
		  "remote signal + 1\n * (0: this GPU's), number of waits, split-K slice, first wait in the wait table, "
		  "counter to signal\n * (-1: none), tile (rows m0:m1, cols n0:n1, k0:k1), vCTA. */\n", of_gpu(of, sizeof of, e, gpu));
	out(e->f, "static const struct ark_task tasks_g%d[%d] = {\n", gpu, T->n_tasks ? T->n_tasks : 1);
	for (int sm = 0, idle = 0; sm <= sms; sm++) { /* idle: SMs without tasks just before sm */
		if (sm < sms && T->sm_begin[sm] == T->sm_begin[sm + 1]) {
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
		tab_line(&t, "SM %d", sm);
		for (uint32_t i = T->sm_begin[sm], l = 0; i < T->sm_begin[sm + 1]; i++)
			if (T->tasks[i].tmpl == ARK_T_BARRIER)
				barrier_row(&t, &T->tasks[i], (int)l++);
			else
				task_row(e, &t, &T->tasks[i]);
	}
	tab_print(&t, e->f);
	if (!T->n_tasks)
		out(e->f, "\t{0},\n");
	out(e->f, "};\n\nstatic const uint32_t sm_begin_g%d[%d] = {", gpu, sms + 1);
	for (int sm = 0; sm <= sms; sm++)
		out(e->f, "%s%u", sm == 0 ? "\n\t" : sm % 16 ? ", " : ",\n\t", T->sm_begin[sm]);
	out(e->f, "\n};\n\n");
}

/* The waits of one GPU's tasks, in vCTA order, then the grid barriers' (--sync barrier). */
static void emit_gpu_waits(const struct emitter *e, int gpu)
{
	const struct tiling *s = e->s;
	const struct gpu_tables *T = &e->t->gpu[gpu];
	const int G = e->g->gpus;
	static const char *const head[] = {"counter", "per_iter", "need", "sys"};
	struct tab t = {.cols = G > 1 ? 4 : 3, .head = head, .align = "lrrr"};
	char of[32], nm[256];
	out(e->f, "/* Waits%s (struct ark_wait): until the counter has `need` of its `per_iter` signals of the "
		  "iteration%s. */\n", of_gpu(of, sizeof of, e, gpu),
	    G > 1 ? ";\n * sys 1: raised from another GPU or by the DMA engine" : "");
	out(e->f, "static const struct ark_wait waits_g%d[%" PRId64 "] = {\n", gpu, T->n_waits ? T->n_waits : 1);
	int64_t w = 0;
	for (int v = 0; v < s->n_vcta; v++) {
		if (s->v[v].gpu != gpu)
			continue;
		const struct op *o = &e->g->ops[s->v[v].op];
		for (int64_t end = w + (e->p->wait0[v + 1] - e->p->wait0[v]); w < end; w++) {
			const struct ark_wait *x = &T->waits[w];
			ARK_ASSERT(G > 1 || !x->sys);
			tab_cell(&t, "ARK_CTR(%u)", x->counter - ARK_CTR__FIRST);
			tab_cell(&t, "%u", x->per_iter);
			tab_cell(&t, "%u", x->need);
			if (G > 1)
				tab_cell(&t, "%u", x->sys);
			tab_end(&t, "%" PRId64 ": v%d (%s, line %d) waits for %u %s", w, v, c_comment_text(nm, sizeof nm, o->name),
				o->line, x->need, x->sys ? "signals from other GPUs or DMA chunks" : "tiles");
		}
	}
	for (int l = 0; w < T->n_waits; w++, l++) {
		const struct ark_wait *x = &T->waits[w];
		tab_cell(&t, "ARK_CTR(%u)", x->counter - ARK_CTR__FIRST);
		tab_cell(&t, "%u", x->per_iter);
		tab_cell(&t, "%u", x->need);
		if (G > 1)
			tab_cell(&t, "%u", x->sys);
		tab_end(&t, "barrier after level %d", l);
	}
	tab_print(&t, e->f);
	if (!T->n_waits)
		out(e->f, "\t{0, 0, 0},\n");
	out(e->f, "};\n\n");
}

/* ---- chains compiled with their steps ---- */

/* How the chain's steps read operand I (out's shape T): "ark_chain_opnd(MODE, div, mod)", by the
 * rule the chain template applies at run time (abi/ark_task.h: ark_chain_read). */
static const char *chain_opnd(char *buf, size_t n, const struct tensor *I, const struct tensor *T)
{
	static const char *const mode_name[] = {[ARK_CHAIN_VEC] = "ARK_CHAIN_VEC", [ARK_CHAIN_SPLAT] = "ARK_CHAIN_SPLAT",
						[ARK_CHAIN_ELEMS] = "ARK_CHAIN_ELEMS"};
	int64_t st[ARK_MAX_DIMS] = {0};
	uint32_t div, mod;
	bcast_strides(I, T, st);
	const int mode = ark_chain_read(tensor_same_shape(I, T), T->ndim, T->shape, st,
					16 / (uint32_t)ark_dtype_size(T->dtype), &div, &mod);
	snprintf(buf, n, "ark_chain_opnd(%s, %u, %u)", mode_name[mode], div, mod);
	return buf;
}

/* Chain `head`'s function: the chain template's passes (ark_chain_passes) with its steps written
 * out, each op's kind, factor and operand layout a constant; every distinct operand is requested
 * once, before the steps. */
static void emit_chain_fn(const struct emitter *e, int head)
{
	const struct tiling *s = e->s;
	const struct graph *g = e->g;
	const struct op_tiling *pl = &s->per_op[head];
	const struct tensor *T = &g->tensors[pl->out_tensor];
	const struct op *h = &g->ops[head];
	static const char *const ctype[ARK_FLOAT_DTYPES] = {
		[ARK_FP16] = "__half", [ARK_BF16] = "__nv_bfloat16", [ARK_FP32] = "float"};
	char c1[256], c2[1024], c3[256], o1[96];
	const int head_in1 = chain_head_in1(g, head, T);
	out(e->f, "/* The chain of %d elementwise ops from %s (%s:%d) to %s, %s, its steps compiled in. */\n",
	    pl->chain_len, c_comment_text(c1, sizeof c1, h->name), c_comment_text(c2, sizeof c2, g->file), h->line,
	    c_comment_text(c3, sizeof c3, g->ops[T->producer].name), dtype_name[T->dtype]);
	out(e->f, "static __device__ __noinline__ void ark_chain_op%d(const ark_opp &p, const ark_task &t, char *arena)\n{\n",
	    e->t->op_index[head]);
	out(e->f, "\ttypedef %s T;\n", ctype[T->dtype]);
	out(e->f, "\tif (p.kind != %s || p.splits != %d) /* another chain's task */\n", op_enum[h->kind], pl->chain_len);
	out(e->f, "\t\tark_chain_gen_mismatch(p, t, %s, %d);\n", op_enum[h->kind], pl->chain_len);
	out(e->f, "\tconst ark_opp *q = &p + 1; /* the steps' params: their operands' offsets */\n");
	out(e->f, "\tark_chain_passes<T>(p, t, arena, [&](const ark_chain_at<T> &at, ark_chain_vals<T> &v) {\n");
	/* the operands, once each: r<step> for the step that reads it first */
	int *first = xmalloc((size_t)g->n_tensors * sizeof *first);
	for (int x = 0; x < g->n_tensors; x++)
		first[x] = -1;
	int prev_out = -1, k = 0;
	for (int x = head; x >= 0; x = s->per_op[x].chain_next, k++) {
		const struct op *o = &g->ops[x];
		const int in1 = chain_step_in1(o, prev_out, head_in1);
		prev_out = o->out[0];
		if (o->n_in < 2 || first[o->in[!in1]] >= 0)
			continue;
		const int t = o->in[!in1];
		first[t] = k;
		out(e->f, "\t\tuint4 r%d[ARK_CHAIN_U]; /* %s */\n", k, c_comment_text(c1, sizeof c1, g->tensors[t].name));
		out(e->f, "\t\tat.raw(reinterpret_cast<const T *>(arena + q[%d].in[%d]), %s, r%d);\n", k, !in1,
		    chain_opnd(o1, sizeof o1, &g->tensors[t], T), k);
	}
	prev_out = -1, k = 0;
	for (int x = head; x >= 0; x = s->per_op[x].chain_next, k++) {
		const struct op *o = &g->ops[x];
		const int in1 = chain_step_in1(o, prev_out, head_in1);
		prev_out = o->out[0];
		if (o->n_in < 2) {
			out(e->f, "\t\tark_chain_un<T, %s>(v, %s); /* %s */\n", op_enum[o->kind],
			    c_float(c2, sizeof c2, o->factor), c_comment_text(c1, sizeof c1, o->name));
			continue;
		}
		const int t = o->in[!in1];
		out(e->f, "\t\tark_chain_bin<T, %s, %s>(at, v, r%d, %s, %s); /* %s */\n", op_enum[o->kind],
		    in1 ? "true" : "false", first[t], chain_opnd(o1, sizeof o1, &g->tensors[t], T),
		    c_float(c2, sizeof c2, o->factor), c_comment_text(c1, sizeof c1, o->name));
	}
	free(first);
	out(e->f, "\t});\n}\n\n");
}

/* The chains of tiling.per_op.chain_gen as functions, and ark_chain_gen, which the chain template's
 * tile calls first (op_elementwise.cuh): the template reading the steps from their params costs
 * ~0.17 us a step, a compiled step a few instructions. Nothing where no chain is compiled. */
static void emit_chain_code(const struct emitter *e)
{
	const struct tiling *s = e->s;
	const struct graph *g = e->g;
	int n = 0;
	for (int k = 0; k < g->n_ops; k++) {
		const int oi = g->order[k];
		if (!chain_compiled(s, oi))
			continue;
		if (!n++)
			out(e->f, "#if defined(__CUDACC__) && defined(ARK_CHAIN_GEN) /* device code: tools that read the "
				  "tables with a host compiler skip it */\n");
		emit_chain_fn(e, oi);
	}
	if (!n)
		return;
	/* a task's op is the op's place in ops[] (tables.c: op_index), which follows the graph's order,
	 * not the op's index in the model file: keyed by that, a chain ran another chain's steps wherever
	 * the file lists its ops out of order */
	out(e->f, "/* Runs task t where its chain is compiled above (its op: the chain's first). */\n");
	out(e->f, "__device__ bool ark_chain_gen(const ark_opp &p, const ark_task &t, char *arena)\n{\n\tswitch (t.op) {\n");
	for (int k = 0; k < g->n_ops; k++) {
		const int oi = g->order[k];
		if (chain_compiled(s, oi))
			out(e->f, "\tcase %d: ark_chain_op%d(p, t, arena); return true;\n", e->t->op_index[oi], e->t->op_index[oi]);
	}
	out(e->f, "\t}\n\treturn false;\n}\n#endif\n\n");
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
	/* The stream backends launch ark_op_kernel (ARK_DEFINE_STREAMS) alone: no loop kernel to build,
	 * the session's checks (shared memory, occupancy) run on theirs. */
	const int loop = !e->info->streams;
	if (loop)
		out(f, "ARK_DEFINE_LOOP()\n\n");
	out(f, "extern \"C\" const struct ark_model ark_model_def = {\n");
	out(f, "\t.name = %s,\n\t.source = %s,\n\t.options = %s,\n", name.s, src.s, opts.s);
	out(f, "\t.gpus = %d,\n\t.sms = ARK_SMS,\n\t.threads = ARK_THREADS,\n\t.smem_bytes = ARK_SMEM_BYTES,\n", g->gpus);
	out(f, "\t.predicted_us = %.3f,\n", e->info->streams ? e->info->streams->predicted_us : p->sim.latency_us);
	out(f, "\t.n_tensors = %d,\n\t.tensors = tensors,\n\t.n_ops = %d,\n\t.ops = ops,\n", g->n_tensors, g->n_ops);
	out(f, "\t.tables = {\n");
	for (int gpu = 0; gpu < g->gpus; gpu++) {
		struct init in;
		init_begin(&in, f, 2);
		init_field(&in, ".arena_bytes = %" PRIu64 "u", e->s->arena[gpu]);
		init_field(&in, ".n_tasks = %d", e->t->gpu[gpu].n_tasks);
		init_field(&in, ".tasks = tasks_g%d", gpu);
		init_field(&in, ".sm_begin = sm_begin_g%d", gpu);
		init_field(&in, ".n_waits = %" PRId64, e->t->gpu[gpu].n_waits);
		init_field(&in, ".waits = waits_g%d", gpu);
		init_field(&in, ".n_opp = %d", e->t->gpu[gpu].n_opp);
		init_field(&in, ".opp = opp_g%d", gpu);
		init_field(&in, ".n_counters = %d", e->t->gpu[gpu].n_counters);
		init_field(&in, ".n_done = ARK_SMS");
		init_end(&in);
	}
	if (loop)
		out(f, "\t},\n\t.launch = ark_launch,\n\t.kernel = (const void *)ark_loop_kernel,\n");
	else
		out(f, "\t},\n\t.launch = NULL,\n\t.kernel = (const void *)ark_op_kernel,\n");
	out(f, "%s", e->info->streams ? "\t.streams = &ark_streams_def,\n" : "");
	if (g->token >= 0) /* said only where the model has one: other files unchanged */
		out(f, "\t.token_state = %d,\n", g->token + 1);
	out(f, "};\n");
	free(name.s);
	free(src.s);
	free(opts.s);
}

int emit_loop(const struct tiling *s, const struct schedule *p, const struct emit_info *info, FILE *f)
{
	const struct graph *g = s->g;
	struct emitter e = {.f = f, .s = s, .p = p, .t = &p->tab, .info = info, .g = g, .sms = p->pl.sms / g->gpus};

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
	emit_chain_code(&e);
	if (info->streams)
		emit_streams(s, info->streams, f);
	emit_model(&e);
	int rc = ferror(f) ? -1 : 0;
	for (int t = 0; t < g->n_tensors; t++)
		free(e.off_name[t]);
	free(e.off_name);
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
			out(f, "%s\"transport\": \"%s\"", sep, transport_name[o->transport]), sep = ", ";
		if (a & ARK_A(APPROXIMATE))
			out(f, "%s\"approximate\": \"%s\"", sep, o->kind == ARK_OP_GELU_TANH ? "tanh" : "none"), sep = ", ";
		if (a & ARK_A(HEADS))
			out(f, "%s\"heads\": %d, \"kv_heads\": %d, \"scale\": %.17g", sep, o->heads, o->kv_heads,
			    o->scale), sep = ", ";
		if (a & ARK_A(CAUSAL))
			out(f, "%s\"causal\": %s", sep, o->causal ? "true" : "false"), sep = ", ";
		if (a & ARK_A(SHAPE)) {
			out(f, "%s\"shape\": [", sep), sep = ", ";
			for (int d = 0; d < o->n_shape; d++)
				out(f, "%s%lld", d ? ", " : "", (long long)o->shape[d]);
			out(f, "]");
		}
		if (a & ARK_A(START))
			out(f, "%s\"start\": %lld, \"end\": %lld", sep, (long long)o->start, (long long)o->end), sep = ", ";
		if (a & ARK_A(DIMS))
			out(f, "%s\"dims\": [%d, %d]", sep, o->dims[0], o->dims[1]), sep = ", ";
		if (a & ARK_A(COPY))
			out(f, "%s\"copy\": %s", sep, o->copy ? "true" : "false"), sep = ", ";
		if (a & ARK_A(BY))
			out(f, "%s\"by\": %lld", sep, (long long)o->by), sep = ", ";
		if (a & ARK_A(HEAD_DIM))
			out(f, "%s\"head_dim\": %d, \"rotary_dim\": %d, \"base\": %.17g, \"style\": \"%s\"", sep,
			    o->head_dim, o->rotary_dim, o->base, o->style ? "interleaved" : "half"), sep = ", ";
		out(f, "}}%s\n", k + 1 < g->n_ops ? "," : "");
	}
	out(f, "  ],\n");
}

int emit_schedule_json(const struct tiling *s, const struct schedule *p, FILE *f)
{
	return emit_schedule_json_streams(s, p, NULL, f);
}

int emit_schedule_json_streams(const struct tiling *s, const struct schedule *p, const struct stream_prog *sp, FILE *f)
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
	out(f, "  ]");
	if (sp) {
		out(f, ",\n  \"streams\": ");
		stream_prog_json(s, sp, f);
	}
	out(f, "\n}\n");
	return ferror(f) ? -1 : 0;
}
