/* cost.c: every vCTA's cost from a calibration table (calib.h), into the DAG view that partition/
 * reads. The table gives a tile two times: alone (the other SMs idle) and busy (every SM running a
 * tile of that shape, device memory shared). The simulator models a vertex by a latency floor and
 * bytes streamed at the device's bandwidth shared among the SMs streaming at that moment, capped by
 * what one SM pulls alone; a calibrated vCTA becomes:
 *   floor   = alone
 *   bytes   = busy * dram / S           (S: the table's SMs; with all S streaming, they take busy)
 *   cap     = bytes / alone             (alone, they take no longer than the floor)
 * so that it takes alone on an idle GPU, busy on a full one, and in between, with n SMs streaming,
 * max(alone, busy * n / S): contention grows with the SMs that stream, as it does on the device.
 * The tile's arithmetic is in both times, so its flops are dropped. vCTAs whose template, dtype,
 * layout or regime the table lacks (and every communication task) keep the analytic cost. */
#include <math.h>
#include <string.h>

#include "ark_smem.h" /* ARK_MM_STG_CH, ARK_MM_WARPS */
#include "calib.h"
#include "diag.h"
#include "lower.h"

/* Whether every input of op o has its output's shape (no broadcasting). */
static int same_shapes(const struct graph *g, const struct op *o)
{
	const struct tensor *out = &g->tensors[o->out[0]];
	for (int i = 0; i < o->n_in; i++) {
		if (!tensor_same_shape(&g->tensors[o->in[i]], out))
			return 0;
	}
	return 1;
}

/* The matmul's layout: transpose_b, and whether the rows of a and b are whole 16-byte vectors (at
 * their pitch where padded). */
static int matmul_layout(const struct tiling *s, const struct op *o, int oi)
{
	int a = o->in[0];
	int64_t es = esize(s, a);
	int aligned = (tiling_mem_cols(s, a) * es) % 16 == 0 && (matmul_b_stride(s, oi) * es) % 16 == 0;
	if (o->transpose_b)
		return aligned ? CALIB_L_NK : CALIB_L_NK_ODD;
	return aligned ? CALIB_L_KN : CALIB_L_KN_ODD;
}

/* The k-groups of the fp32 FMA tile of rows x cols over k (templates/op_matmul.cuh, ark_mm_ffma, whose
 * rule this is): a thread takes an 8 x 8 block of the tile, tyx blocks in all, and the threads split k
 * into G groups, G the largest power of two up to 16 with 2 G tyx <= threads and 8 G <= bk, bk the
 * stage's depth (32, doubled up to 128 while k is deeper and the stage fits). */
static int ffma_groups(int64_t rows, int64_t cols, int64_t k, int threads)
{
	const int64_t ty = (rows + 7) / 8, tx = (cols + 7) / 8, big = 8 * (ty > tx ? ty : tx);
	int64_t bk = 32, g = 1;
	while (bk < 128 && bk < k && 2 * bk * big <= 4 * ARK_MM_STG_CH * (int64_t)threads)
		bk *= 2;
	while (g < 16 && 2 * g * ty * tx <= threads && 2 * g * 4 <= bk)
		g *= 2;
	return (int)g;
}

/* The rows an fp32 FMA tile of rows x cols over k is priced at. Where the threads bound its k-groups
 * (2 G blocks > threads), the most rows (to 128, in blocks of 8) that keep them: a thread's share of
 * the FMAs is its block over k / G, so the tile takes as long as the largest one of the same G,
 * whatever its rows: 39 x 32 (5 x 4 blocks, G 8) as 64 x 32 (G 8), where 32 x 32 has G 16. Priced by
 * interpolation between the table's rows 32 and 64, the 39 x 32 x 1152 tiles of sw796233679_003
 * were 0.76 of what they took (bench/NOTES.md). Where G is at its cap (16, or the stage's depth),
 * more rows add threads and the loads of their rows: its own rows. */
static int64_t ffma_rows(int64_t rows, int64_t cols, int64_t k, int threads)
{
	const int g = ffma_groups(rows, cols, k, threads);
	if (2 * (int64_t)g * ((rows + 7) / 8) * ((cols + 7) / 8) <= threads)
		return rows;
	int64_t r = (rows + 7) / 8 * 8;
	while (r + 8 <= 128 && ffma_groups(r + 8, cols, k, threads) == g)
		r += 8;
	return r;
}

/* What vCTA v is, as a table names tiles; -1 when no table measures its kind. threads: the tiles'
 * threads per CTA (the table's). */
static int query_of(const struct tiling *s, const struct vcta *v, struct calib_query *q, int threads)
{
	const struct graph *g = s->g;
	if (!calib_tmpl_name(v->tmpl) || v->opp >= g->n_ops) /* not a tile, or a transfer between GPUs */
		return -1;
	const struct op *o = &g->ops[v->op];
	const struct op_tiling *pl = &s->per_op[v->op];
	int out = pl->out_tensor;
	*q = (struct calib_query){.tmpl = v->tmpl, .dtype = g->tensors[out].dtype, .layout = CALIB_L_NONE,
				  .m = v->m1 - v->m0, .n = v->n1 - v->n0, .k = 1};
	switch (v->tmpl) {
	case ARK_T_MATMUL:
	case ARK_T_MATMUL_PARTIAL:
		q->dtype = g->tensors[o->in[0]].dtype;
		q->layout = matmul_layout(s, o, v->op);
		q->k = v->k1 - v->k0;
		/* a tile of few rows on the tensor cores or the fp32 FMA tile (the last of a matmul of many
		 * rows, or one of a 16-bit matmul of more rows than streaming takes; templates/op_matmul.cuh,
		 * ark_mm_sub) is priced as the smallest tile there, not as a streaming one */
		if (tile_matmul_ffma(s, v))
			q->m = ffma_rows(q->m, q->n, q->k, threads);
		if (q->m <= CALIB_SMALL_M && (tile_matmul_mma(s, v) || tile_matmul_ffma(s, v)))
			q->m = CALIB_SMALL_M + 1;
		break;
	case ARK_T_REDUCE:
		q->k = pl->splits;
		break;
	case ARK_T_ELEMENTWISE:
		q->layout = same_shapes(g, o) ? CALIB_L_SAME : CALIB_L_BCAST;
		q->k = o->n_in;
		break;
	case ARK_T_EW_CHAIN: /* a compiled chain: its first two steps, chain_gen_us the others */
		q->m = 1, q->n = v->k1 - v->k0, q->k = pl->chain_gen ? imin(pl->chain_len, 2) : pl->chain_len;
		break;
	case ARK_T_STRIDED: { /* boxes, and copies of 8 bytes or more: priced as the copy tile (op_view.cuh) */
		const int boxed = view_copy_boxed(g, o);
		if (boxed || view_copy_unit(g, o, v->part) * ark_dtype_size(g->tensors[out].dtype) >= 8)
			q->tmpl = ARK_T_COPY;
		q->m = 1, q->n = boxed ? (v->m1 - v->m0) * (v->n1 - v->n0) : v->k1 - v->k0;
		break;
	}
	case ARK_T_COPY:
		q->m = 1, q->n = v->k1 - v->k0;
		break;
	case ARK_T_REDUCE_MEAN: /* outputs (rows, columns), each over the reduced axis */
		q->k = s->rows[o->in[0]] * s->cols[o->in[0]] / (s->rows[out] * s->cols[out]);
		break;
	default: /* row ops: rows, columns, 1 */
		break;
	}
	return q->m > 0 && q->n > 0 && q->k > 0 ? 0 : -1;
}

/* How an mma tile copies rows of n elements into its stages (templates/op_matmul.cuh, ark_mm_kloop):
 * 0 as 16-byte vectors, 0.5 four bytes at a time (even lengths), 1 as 16-byte chunks realigned in
 * shared memory (odd lengths). */
static double mma_rows(int64_t n)
{
	return n % 8 == 0 ? 0 : n % 2 == 0 ? 0.5 : 1;
}

/* The table's times of q for vCTA v (calib_lookup). The table's odd points have both operands' rows
 * of odd length; a tile between them and the aligned points is priced between the two, as
 * aligned^(1 - x) odd^x:
 *   - an mma tile, x the mean of its operands' mma_rows: rows 4-byte aligned copy 4 bytes at a time,
 *     slower than aligned rows, faster than odd ones (mm_probe, [128, 1002] . [768, 1002]^T and
 *     [128, 768] . [768, 1002]: within 6% of the geometric mean, against 1.24-1.49x the aligned
 *     tile's and 0.74-0.87x the odd one's); a b padded to whole vectors (lower_pad.c) copies as
 *     aligned rows beside an odd a;
 *   - a streaming tile of a padded b, x = 0: it streams b as aligned rows, a (a few rows) element by
 *     element. */
static int lookup(const struct tiling *s, const struct vcta *v, const struct calib_table *t,
		  const struct calib_query *q, double us[2])
{
	if (calib_lookup(t, q, us) < 0)
		return -1;
	if (q->layout != CALIB_L_KN_ODD && q->layout != CALIB_L_NK_ODD)
		return 0;
	const int64_t bs = matmul_b_stride(s, v->op), vec = 16 / esize(s, s->g->ops[v->op].in[0]);
	double x;
	if (tile_matmul_mma(s, v))
		x = (mma_rows(tiling_mem_cols(s, s->g->ops[v->op].in[0])) + mma_rows(bs)) / 2;
	else if (!tile_matmul_ffma(s, v) && bs % vec == 0)
		x = 0;
	else
		return 0;
	struct calib_query a = *q;
	double ua[2];
	a.layout = q->layout == CALIB_L_KN_ODD ? CALIB_L_KN : CALIB_L_NK;
	if (x < 1 && calib_lookup(t, &a, ua) == 0)
		for (int i = 0; i < 2; i++)
			us[i] = pow(ua[i], 1 - x) * pow(us[i], x);
	return 0;
}

/* A matmul tile whose b is block-quantized (q4_1, q8_0): the table has no points for those dtypes
 * (bench/calibrate measures fp16, bf16 and fp32 tiles), so this extrapolates from the tile of the
 * activation dtype. The quantized path streams b for every 16 rows of the tile
 * (templates/op_quant.cuh), so the tile is looked up as its activation dtype's streaming tile of
 * min(m, 16) rows (q->m changed here), and its times are scaled by ceil(m / 16) passes, each by the
 * larger of two bounds: the bytes it reads (a, b's blocks, out) over the bytes of that tile with b in
 * a's dtype (a q4_1 tile of [1, 4096] x [32, 4096]^T in bf16 reads 0.31 of them), and a floor set by
 * the dequantising arithmetic, which binds before the bytes do (tiling.h: ARK_QUANT_ISSUE_*). 1, q
 * untouched, for every other vCTA. */
static double quant_scale(const struct tiling *s, const struct vcta *v, struct calib_query *q)
{
	const struct graph *g = s->g;
	if ((v->tmpl != ARK_T_MATMUL && v->tmpl != ARK_T_MATMUL_PARTIAL) || v->opp >= g->n_ops)
		return 1;
	const struct op *o = &g->ops[v->op];
	const int bdt = g->tensors[o->in[1]].dtype;
	if (!ark_dtype_quantized(bdt))
		return 1;
	const double m = v->m1 - v->m0, n = v->n1 - v->n0, k = v->k1 - v->k0, es = esize(s, o->in[0]);
	const double os = v->tmpl == ARK_T_MATMUL ? es : 4, mp = fmin(m, 16), passes = ceil(m / 16);
	q->m = mp;
	const double bytes = (es * mp * k + (double)ark_row_bytes(bdt, (int64_t)k) * n + os * mp * n) /
			     (es * (mp * k + k * n) + os * mp * n);
	const double issue = es == 4 ? ARK_QUANT_ISSUE_FMA
			     : bdt == ARK_Q8_0 ? ARK_QUANT_ISSUE_Q8_0
						  : ARK_QUANT_ISSUE_Q4_1;
	return passes * fmax(bytes, issue);
}

/* What a chain compiled with its steps (tiling.per_op.chain_gen) spends on its steps past the first
 * two, which query_of leaves out of its query (calib.h); 0 for every other vCTA. */
static double chain_gen_us(const struct tiling *s, const struct vcta *v)
{
	const struct op_tiling *pl = &s->per_op[v->op];
	if (v->tmpl != ARK_T_EW_CHAIN || !pl->chain_gen || pl->chain_len <= 2)
		return 0;
	const int64_t vec = 16 / esize(s, pl->out_tensor);
	return (chain_steps_us(pl->chain_len, 1) - chain_steps_us(2, 1)) * (double)cdiv(v->k1 - v->k0, 256 * vec);
}

void cost_calibrate(struct tiling *s, const struct calib_table *t, const struct part_gpu *gpu)
{
	s->n_calibrated = 0;
	s->calib_missing = 0;
	if (!t)
		return;
	s->sm_gbps = xcalloc((size_t)(s->n_vcta ? s->n_vcta : 1), sizeof *s->sm_gbps);
	const double per_sm = gpu->dram_gbps / (t->sms > 0 ? t->sms : gpu->sms) * 1e3; /* bytes per us */
	for (int i = 0; i < s->n_vcta; i++) {
		struct calib_query q;
		double us[2];
		double qs = 1;
		if (query_of(s, &s->v[i], &q, t->threads > 0 ? t->threads : 32 * ARK_MM_WARPS) < 0 || (qs = quant_scale(s, &s->v[i], &q), lookup(s, &s->v[i], t, &q, us) < 0)) {
			if (calib_tmpl_name(s->v[i].tmpl) && s->v[i].opp < s->g->n_ops)
				s->calib_missing |= 1u << s->v[i].tmpl;
			continue;
		}
		us[CALIB_ALONE] *= qs, us[CALIB_BUSY] *= qs;
		const double steps = chain_gen_us(s, &s->v[i]);
		us[CALIB_ALONE] += steps, us[CALIB_BUSY] += steps;
		s->flops[i] = 0;
		s->lat_us[i] = us[CALIB_ALONE];
		s->bytes[i] = us[CALIB_BUSY] * per_sm;
		s->sm_gbps[i] = s->bytes[i] / (us[CALIB_ALONE] * 1e3);
		s->n_calibrated++;
	}
}

double cost_vcta_us(const struct tiling *s, const struct vcta *v, const struct calib_table *t,
		    const struct part_gpu *gpu, double streaming)
{
	struct calib_query q;
	double us[2];
	if (query_of(s, v, &q, t && t->threads > 0 ? t->threads : 32 * ARK_MM_WARPS) < 0)
		return gpu->task_us;
	const double qs = quant_scale(s, v, &q);
	if (!t || lookup(s, v, t, &q, us) < 0)
		calib_analytic(gpu, &q, us);
	us[CALIB_ALONE] *= qs, us[CALIB_BUSY] *= qs;
	const double steps = chain_gen_us(s, v);
	us[CALIB_ALONE] += steps, us[CALIB_BUSY] += steps;
	double sms = t && t->sms > 0 ? t->sms : gpu->sms;
	return gpu->task_us + fmax(us[CALIB_ALONE], us[CALIB_BUSY] * streaming / sms);
}
