/* tile.c: the per-op tilers. Each cuts one op into vCTAs (one tile of output each) with the regions
 * they read and write and their cost; a matmul splits K when its layer has fewer tiles than the GPU
 * has SMs. tile_graph runs them in the graph's order through one table indexed by op kind;
 * communication ops are lowered by lower_comm.c, fusion was decided by fuse.c. A matmul's tiles are
 * the candidate of least predicted time (calibrated tile costs) where it beats the fixed rules. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ark_smem.h" /* ARK_DEC_ROWS, ARK_RM_BATCH */
#include "calib.h"
#include "diag.h"
#include "lower.h"

/* The narrowest tile width, a multiple of 16 bytes of a row and at most 128, whose tiles (mt rows of
 * them) fit in `sms` SMs at once; 0 when none does. */
static int balanced_tn(int64_t mt, int64_t N, int64_t sms, int64_t es)
{
	const int64_t align = 16 / es, per = sms / imax(mt, 1);
	if (per < 1)
		return 0;
	int64_t w = cdiv(cdiv(N, per), align) * align;
	return w <= 128 && mt * cdiv(N, w) <= sms ? (int)imin(w, N) : 0;
}

/* Tile width for the output of a matmul: the widest that still gives about one tile per SM,
 * never narrower than 32 bytes of a row (one memory sector). With `balance`, where that gives more
 * tiles than SMs (a second, partial wave: N = 2624 in 16-column tiles is 164 tiles on 132 SMs, so 32
 * SMs run two), the narrowest multiple of 16 bytes of a row that fits them in one wave instead
 * (balanced_tn: 24 columns, 110 tiles). */
static int pick_tn(int64_t mt, int64_t N, int64_t sms, int64_t min_tn, int64_t es, int balance)
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
	tn = (int)imin(tn, imax(N, 1));
	if (balance && mt * cdiv(N, tn) > sms) {
		int w = balanced_tn(mt, N, sms, es);
		if (w > 0)
			tn = w;
	}
	return tn;
}

/* The a that matmul oi's tiles read: its input, or with an op fused on a (an rmsnorm, a swiglu) that
 * op's (first) input. */
static int matmul_a(const struct tiling *s, int oi)
{
	const int pre = s->per_op[oi].pre_op;
	return pre >= 0 ? s->g->ops[pre].in[0] : s->g->ops[oi].in[0];
}

static int rule_tm(int64_t M) { return M <= 16 ? (int)M : M <= 256 ? 64 : 128; }

/* Dependency levels as the loop kernel runs them: graph_levels, but an op other than a matmul that
 * reads only weights and what such ops make (a quantized weight's DEQUANTIZE, a weight's copied view)
 * starts at once and takes little time, so it adds no level: a matmul of a dequantized weight shares
 * the SMs with the matmuls of the same activation beside it. Returns the largest level. */
static int run_levels(const struct graph *g, int *level)
{
	int max_level = 0;
	char *wonly = xcalloc((size_t)g->n_ops, 1); /* reads weights and weight-only results alone */
	for (int k = 0; k < g->n_ops; k++) {
		const int oi = g->order[k];
		const struct op *o = &g->ops[oi];
		int lv = 0, w = o->n_in > 0;
		for (int j = 0; j < o->n_in; j++) {
			const struct tensor *t = &g->tensors[o->in[j]];
			const int p = t->producer;
			if (p < 0) {
				w &= t->role == ARK_ROLE_WEIGHT;
				continue;
			}
			w &= wonly[p];
			lv = imax(lv, level[p] + !wonly[p]);
		}
		wonly[oi] = (char)(w && o->kind != ARK_OP_MATMUL);
		level[oi] = lv;
		max_level = imax(max_level, lv);
	}
	free(wonly);
	return max_level;
}

static void refill_sms(struct tiling *s, const int *level, int max_level);

/* SMs each matmul can count on (op_tiling.sm_share): the GPU's SMs shared among the matmuls of its
 * dependency level on its GPU (level: longest path from the graph's inputs, in ops), so that
 * independent branches get about one tile per SM between them instead of each cutting itself for
 * the whole GPU; and the tiles of the level as the fixed rule cuts them (op_tiling.level_tiles), so
 * that a matmul is balanced only when the level as a whole overflows the GPU. Then refill_sms, on
 * the same levels. */
static void share_sms(struct tiling *s)
{
	const struct graph *g = s->g;
	int sms = s->opt.sms, *level = xcalloc((size_t)g->n_ops, sizeof *level);
	int max_level = run_levels(g, level);
	int *width = xcalloc((size_t)(max_level + 1) * ARK_MAX_GPUS, sizeof *width);
	int64_t *tiles = xcalloc((size_t)(max_level + 1) * ARK_MAX_GPUS, sizeof *tiles);
	for (int i = 0; i < g->n_ops; i++)
		if (g->ops[i].kind == ARK_OP_MATMUL)
			width[level[i] * ARK_MAX_GPUS + g->ops[i].gpu]++;
	for (int i = 0; i < g->n_ops; i++) {
		int w = width[level[i] * ARK_MAX_GPUS + g->ops[i].gpu];
		s->per_op[i].sm_share = w > 1 ? (sms + w - 1) / w : sms;
		if (g->ops[i].kind != ARK_OP_MATMUL)
			continue;
		const int a = matmul_a(s, i);
		const int64_t M = s->rows[a], N = s->cols[s->per_op[i].out_tensor], es = esize(s, a);
		int64_t mt = cdiv(M, rule_tm(M));
		tiles[level[i] * ARK_MAX_GPUS + g->ops[i].gpu] +=
			mt * cdiv(N, pick_tn(mt, N, s->per_op[i].sm_share, es == 4 ? 8 : 16, es, 0));
	}
	for (int i = 0; i < g->n_ops; i++)
		s->per_op[i].level_tiles = tiles[level[i] * ARK_MAX_GPUS + g->ops[i].gpu];
	refill_sms(s, level, max_level);
	free(level);
	free(width);
	free(tiles);
}

/* Split K while the layer has clearly fewer tiles than SMs, keeping chunks of >= 256, never into
 * more tasks than SMs (a second wave would cost a whole tile's time). */
static int64_t matmul_splits(int64_t tiles, int64_t K, int64_t sms)
{
	int64_t splits = 1;
	if (tiles * 4 < sms * 3 && K >= 512) {
		splits = imax(1, imin(sms / tiles, imin(32, K / 256)));
		int64_t kc = cdiv(cdiv(K, splits), 64) * 64;
		splits = cdiv(K, kc);
	}
	return splits;
}

/* Split-K chunk for `splits` splits of K: a multiple of 64 (the splits then are cdiv(K, kc)). */
static int64_t split_chunk(int64_t K, int64_t splits)
{
	return splits > 1 ? cdiv(cdiv(K, splits), 64) * 64 : K;
}

/* Predicted time of matmul oi tiled (tm, tn) with `splits` K-splits on the `share` SMs it counts on
 * (op_tiling.sm_share) of the GPU's `sms`. Its vCTAs, the full tiles and the narrower ones at the
 * edges, each timed by cost_vcta_us while min(sms, vCTAs * sms / share) tiles stream GPU-wide (the
 * matmuls beside it assumed alike), run in ceil(vCTAs / share) waves of the average vCTA; beside
 * more than two other matmuls (share < sms / 3) in vCTAs / share waves, their many tiles filling a
 * last partial wave (on the sweep's models the simulator agreed with this split of the two cases,
 * not with either alone). Never less than its longest vCTA. With split-K, a hop and the REDUCE
 * tiles after. */
static double matmul_us(struct tiling *s, int oi, int64_t M, int64_t N, int64_t K, int tm, int tn, int64_t splits)
{
	const struct part_gpu *gpu = s->opt.gpu;
	struct op_tiling *pl = &s->per_op[oi];
	double sms = gpu->sms, share = pl->sm_share > 0 ? pl->sm_share : gpu->sms;
	/* tile rows and columns: mt - 1 of tm and one of the rest (and the same for columns) */
	int64_t mt = cdiv(M, tm), nt = cdiv(N, tn), ms[2] = {tm, M - (mt - 1) * tm}, ns[2] = {tn, N - (nt - 1) * tn};
	int64_t mc[2] = {mt - 1, 1}, nc[2] = {nt - 1, 1}, kc = split_chunk(K, splits);
	int saved = pl->splits;
	double total = 0;
	pl->splits = (int)splits; /* what a REDUCE's cost reads */
	for (int pass = 0; pass < (splits > 1 ? 2 : 1); pass++) {
		int64_t n = pass ? mt * nt : mt * nt * splits;
		double stream = fmin(sms, (double)n * sms / share), work = 0, longest = 0;
		for (int i = 0; i < 2; i++)
			for (int j = 0; j < 2; j++) {
				if (!mc[i] || !nc[j])
					continue;
				struct vcta v = {.op = oi, .opp = oi, .m0 = 0, .m1 = (uint32_t)ms[i], .n0 = 0,
						 .n1 = (uint32_t)ns[j], .k0 = 0, .k1 = (uint32_t)(pass ? K : kc)};
				v.tmpl = pass ? ARK_T_REDUCE : splits > 1 ? ARK_T_MATMUL_PARTIAL : ARK_T_MATMUL;
				double t = cost_vcta_us(s, &v, s->opt.calib, gpu, stream);
				work += t * (double)(mc[i] * nc[j] * (pass ? 1 : splits));
				longest = fmax(longest, t);
			}
		double waves = share * 3 < sms ? (double)n / share : ceil((double)n / share);
		total += fmax(longest, waves * work / (double)n) + (pass ? gpu->hop_us : 0);
	}
	pl->splits = saved;
	return total;
}

/* The matmul's tiling (tm, tn, splits). First the fixed rules' (pick_tn, matmul_splits); then, with a
 * GPU to cost them on (tile_opts.gpu), candidates: tile rows M itself up to 16 rows (the streaming
 * tiles, kept), else 64 or 128 (the mma tile's); tile columns 16 to 128 (8 for fp32), never
 * narrower than 32 bytes of a row; K-splits into chunks of >= 512 (multiples of 64, at most 32
 * splits) for K >= MM_SPLIT_K, beside other matmuls of its level only where the memory plan keeps
 * one level's tensors apart (MEM_REUSE_LEVELS, or no reuse: in the plan by vCTA order, independent
 * matmuls' split-K workspaces share bytes and their tiles would wait on each other), and never more
 * vCTAs than the rules' or than MM_WAVES times its SMs. The one of least predicted time
 * (matmul_us), ties to fewer vCTAs, replaces the rules' only when predicted MM_GAIN faster: the
 * cost model is within ~10% of the device and the simulator, and a tiling it barely prefers is not
 * worth the change.
 * bert_base's [128, 3072] x [768, 3072]^T: 96 tiles of 64 x 16 over all of K become 48 tiles of
 * 64 x 32 in 2 splits of K (96 MATMUL_PARTIAL and 48 REDUCE), one wave. */
#define MM_GAIN 0.10
/* Waves of vCTAs a tiling may take: an fp32 [384, 3359] . [3359, 3359]^T ran its 81 tiles of 128 x 128
 * over all of K on 81 of 132 SMs (priced at 618 us a tile); in three splits of K, 243 tiles and 81 REDUCE over
 * two waves give each SM 0.61 of that work (predicted 907 -> 748 us for the model, sw1796174245_019).
 * Up to one wave (the limit before), no such tiling was a candidate. */
#define MM_WAVES 3
/* K from which splits are tried: 1024 (it was 2048) split eight of a 40-model draw's matmuls of K
 * 1171-1901 whose one-wave tiles each re-read all of a over all of K; seven ran 0-12% faster, one 4%
 * slower (bench/NOTES.md) */
#define MM_SPLIT_K 1024
/* Whether the tiles of matmul oi, of M rows, stream b (templates/op_matmul.cuh, ark_mm_sub): quantized
 * b and an op fused on a always do (arkgen gives them at most 16 rows); 16-bit as ARK_MM_STREAMS16
 * says by rows and K, and fp32 up to ARK_MM_STREAM32, where b's rows are whole 16-byte vectors (the streaming
 * tiles need them, the stage tiles do not). The others run on the tensor cores' stages (16-bit,
 * tile_matmul_mma) or the FMA tile of stages (fp32, tile_matmul_ffma). */
int matmul_streams(const struct tiling *s, int oi, int64_t M)
{
	const struct graph *g = s->g;
	const struct op *o = &g->ops[oi];
	if (ark_dtype_quantized(g->tensors[o->in[1]].dtype) || s->per_op[oi].pre_op >= 0)
		return 1;
	const int a = matmul_a(s, oi);
	if (esize(s, a) == 2)
		return ARK_MM_STREAMS16(M, s->cols[a], o->transpose_b) && matmul_b_stride(s, oi) % 8 == 0;
	return !ARK_MM_FFMA(M) && matmul_b_stride(s, oi) % 4 == 0;
}

/* Whether a's and b's rows (their strides, padded or not) are whole 16-byte vectors of es bytes. */
static int matmul_rows_whole(const struct tiling *s, int oi, int64_t es)
{
	const int a = matmul_a(s, oi);
	const int64_t astride = s->g->tensors[a].pitch ? s->g->tensors[a].pitch : s->cols[a];
	return astride * es % 16 == 0 && matmul_b_stride(s, oi) * es % 16 == 0;
}

static void pick_matmul(struct tiling *s, int oi, int64_t M, int64_t N, int64_t K, int64_t es, int *ptm, int *ptn,
			int64_t *psplits)
{
	int64_t sms = s->per_op[oi].sm_share;
	int tm = rule_tm(M);
	int64_t mt = cdiv(M, tm);
	/* Tiles of few rows (streaming, or 16 rows on the tensor cores) take as long as their bytes, so
	 * one wave of wider tiles ends sooner than a second wave of narrow ones (a tile's dispatch, first
	 * loads and epilogue paid once per SM). An mma tile of more rows takes about as long whatever
	 * its width (its stages: bench/NOTES.md), so narrowing it only adds tiles: the search below
	 * picks those. */
	int tn = pick_tn(mt, N, sms, es == 4 ? 8 : 16, es, M <= 16 && s->per_op[oi].level_tiles > s->opt.sms);
	int64_t splits = matmul_splits(mt * cdiv(N, tn), K, sms);
	*ptm = tm, *ptn = tn, *psplits = splits;
	/* Up to 16 rows the rules stand, but where the tiles take rows of a or b that are not 16-byte
	 * vectors on the tiles of shared-memory stages. Streaming tiles: the cost model is least
	 * accurate there (mlp: predicted 1.3x its measured time), and the tiles it picked made mlp 8%
	 * slower on an H100 while predicting it 7% faster. Few rows on the stage tiles (16-bit past
	 * ARK_MM_STREAM_NK / _KN rows, fp32 past ARK_MM_STREAM32): with whole vectors, the one-wave
	 * tiles of all of K measured as fast or faster than the search's split ones (a [16, 2048] .
	 * [2624, 2048]^T: 24.9 against 26.5 us); with rows that are not (odd K), each k-stage costs
	 * several times more, and the search's split tiles measured 9-18% faster (bench/NOTES.md). */
	if (!s->opt.gpu || (M <= 16 && (matmul_streams(s, oi, M) || matmul_rows_whole(s, oi, es))))
		return;
	const double rule = matmul_us(s, oi, M, N, K, tm, tn, splits);
	double best = rule;
	const int64_t rule_nv = mt * cdiv(N, tn) * splits;
	int64_t best_nv = rule_nv;
	/* tile rows: the fp32 FMA tile's threads split k into more groups where its rows are fewer
	 * (ffma_groups, codegen/cost.c), so 32-row tiles take it half the k a thread of 39 to 64 rows,
	 * for b read twice as often: the search weighs them (16-bit mma tiles: 64 and 128) */
	static const int tms[] = {32, 64, 128}, tns[] = {8, 16, 32, 64, 128};
	static const int64_t sps[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32};
	const size_t tm0 = es == 4 ? 0 : 1;
	for (size_t i = tm0; i < (M <= 16 ? tm0 + 1 : sizeof tms / sizeof tms[0]); i++) {
		int ctm = M <= 16 ? (int)M : tms[i];
		if (i > tm0 && tms[i - 1] >= M)
			break; /* one tile row already holds M */
		for (size_t j = 0; j < sizeof tns / sizeof tns[0]; j++) {
			int ctn = tns[j];
			if (ctn * es < 32 || (j > 0 && tns[j - 1] >= N))
				continue;
			int64_t last = 0;
			for (size_t k = 0; k < sizeof sps / sizeof sps[0]; k++) {
				int64_t sp = sps[k];
				if (sp > 1 && (K < MM_SPLIT_K || cdiv(K, sp) < 512 ||
					       (sms < s->opt.gpu->sms && s->opt.reuse == MEM_REUSE_ORDER)))
					break;
				sp = cdiv(K, split_chunk(K, sp)); /* the splits its chunk gives */
				if (sp == last)
					continue;
				last = sp;
				int64_t nv = cdiv(M, ctm) * cdiv(N, ctn) * sp;
				if (nv > imax(rule_nv, MM_WAVES * sms))
					break; /* more splits only add vCTAs */
				double t = matmul_us(s, oi, M, N, K, ctm, imin(ctn, N), sp);
				if (t < best || (t == best && nv < best_nv)) {
					if (t > rule * (1 - MM_GAIN))
						continue;
					best = t, best_nv = nv;
					*ptm = ctm, *ptn = (int)imin(ctn, N), *psplits = sp;
				}
			}
		}
	}
}

/* The predicted time of matmul oi as pick_matmul tiles it on `share` SMs, and its vCTAs in *nv. */
static double matmul_picked_us(struct tiling *s, int oi, int64_t share, int64_t *nv)
{
	struct op_tiling *pl = &s->per_op[oi];
	const int a = matmul_a(s, oi);
	const int64_t M = s->rows[a], N = s->cols[pl->out_tensor], K = s->cols[a], saved = pl->sm_share;
	int tm, tn;
	int64_t splits;
	pl->sm_share = (int)share;
	pick_matmul(s, oi, M, N, K, esize(s, a), &tm, &tn, &splits);
	const double t = matmul_us(s, oi, M, N, K, tm, tn, splits);
	pl->sm_share = (int)saved;
	*nv = cdiv(M, tm) * cdiv(N, tn) * splits;
	return t;
}

/* A level's matmuls ops[0:n] (nv: their vCTAs, t: their predicted times on their shares) all fit
 * their shares and leave `spare` SMs idle: the slowest of them that a share of its vCTAs plus the
 * spare SMs makes MM_GAIN faster takes as many of them as its new tiling has vCTAs, then the next
 * slowest, while SMs are left (with opt.refill; refill_differs says whether it would).
 * sw1554542975_028: three matmuls of 307 rows share the SMs, 44 each; mm7 and mm8 take 30 of theirs,
 * and mm6 ([307, 2048] x [1152, 2048]^T) runs 27 tiles of 128 x 128 (42 us each) where 45 of 64 x
 * 128 (30 us) would have needed 45 SMs. */
static void grow_sms(struct tiling *s, const int *ops, int n, const int64_t *nv, const double *t, int64_t spare)
{
	char *done = xcalloc((size_t)n, 1);
	while (spare > 0) {
		int slow = -1;
		for (int k = 0; k < n; k++)
			if (!done[k] && (slow < 0 || t[ops[k]] > t[ops[slow]]))
				slow = k;
		if (slow < 0)
			break;
		done[slow] = 1;
		const int i = ops[slow];
		int64_t vctas;
		const int64_t share = nv[i] + spare;
		if (matmul_picked_us(s, i, share, &vctas) > t[i] * (1 - MM_GAIN) ||
		    imin(vctas, share) <= s->per_op[i].sm_share)
			continue;
		s->refill_differs = 1;
		spare -= imin(vctas, share) - nv[i];
		if (s->opt.refill)
			s->per_op[i].sm_share = (int)imin(vctas, share);
	}
	free(done);
}

/* SMs that a matmul's share leaves idle go to the matmuls beside it that have more vCTAs than their
 * share: each matmul of a level of several is tiled on its share first (pick_matmul: nothing is
 * made), then the SMs left idle by those of fewer vCTAs than their share are split among the others,
 * which tile_matmul then tiles on the larger share. sw1796174252_035: mm1's 38 tiles of 128 x 128
 * left 28 of its 66 SMs idle, and mm2, tiled for 66, took 114 split-K tasks in two waves (97.1 us
 * measured) where 72 tiles of 64 x 128 over all of K run in one wave of the 94 SMs left to it (72.4
 * us, bench/NOTES.md). But the ops of the level that are not matmuls, and the tasks of the ones
 * before and after, take SMs too, which the shares do not see: so this only says whether it would
 * change a share (refill_differs), and changes them with opt.refill, for arkgen_compile to keep the
 * tiling of lower predicted latency. With a GPU to cost the tilings on only (without, the rules
 * keep the equal shares). */
static void refill_sms(struct tiling *s, const int *level, int max_level)
{
	const struct graph *g = s->g;
	const int64_t sms = s->opt.sms;
	if (!s->opt.gpu)
		return;
	const size_t nl = (size_t)(max_level + 1) * ARK_MAX_GPUS;
	int64_t *used = xcalloc(nl, sizeof *used), *hungry = xcalloc(nl, sizeof *hungry);
	int64_t *nv = xcalloc((size_t)g->n_ops, sizeof *nv);
	double *t = xcalloc((size_t)g->n_ops, sizeof *t);
	/* the matmuls sharing the SMs, by level (ops[first[l]:first[l + 1]]) */
	int *ops = xcalloc((size_t)g->n_ops, sizeof *ops), *first = xcalloc(nl + 1, sizeof *first);
	int *at = xcalloc(nl, sizeof *at);
	for (int i = 0; i < g->n_ops; i++) {
		const struct op_tiling *pl = &s->per_op[i];
		if (g->ops[i].kind != ARK_OP_MATMUL || pl->sm_share >= sms)
			continue;
		t[i] = matmul_picked_us(s, i, pl->sm_share, &nv[i]);
		const size_t l = (size_t)level[i] * ARK_MAX_GPUS + g->ops[i].gpu;
		used[l] += imin(nv[i], pl->sm_share);
		hungry[l] += nv[i] > pl->sm_share;
		first[l + 1]++;
	}
	for (size_t l = 0; l < nl; l++)
		first[l + 1] += first[l];
	for (int i = 0; i < g->n_ops; i++)
		if (nv[i]) {
			const size_t l = (size_t)level[i] * ARK_MAX_GPUS + g->ops[i].gpu;
			ops[first[l] + at[l]++] = i;
		}
	for (int i = 0; i < g->n_ops; i++) {
		const size_t l = (size_t)level[i] * ARK_MAX_GPUS + g->ops[i].gpu;
		const int more = (int)((sms - used[l]) / imax(hungry[l], 1));
		if (nv[i] > s->per_op[i].sm_share && more > 0) {
			s->refill_differs = 1;
			if (s->opt.refill)
				s->per_op[i].sm_share += more;
		}
	}
	/* a level with no such matmul: its idle SMs go to the slowest matmul that a larger share makes
	 * faster, as many as its new tiling has vCTAs, then the next */
	for (size_t l = 0; l < nl; l++)
		if (!hungry[l] && first[l + 1] > first[l])
			grow_sms(s, ops + first[l], first[l + 1] - first[l], nv, t, sms - used[l]);
	free(used);
	free(hungry);
	free(nv);
	free(t);
	free(ops);
	free(first);
	free(at);
}

int64_t matmul_b_stride(const struct tiling *s, int oi)
{
	const struct op *o = &s->g->ops[oi];
	const struct tensor *b = &s->g->tensors[o->in[1]];
	if (b->pitch)
		return b->pitch;
	return o->transpose_b ? s->cols[o->in[0]] : s->cols[s->per_op[oi].out_tensor];
}

int tile_matmul_mma(const struct tiling *s, const struct vcta *v)
{
	const int a = s->g->ops[v->op].in[0];
	/* 16-bit tiles that do not stream b (a tile of more than 16 rows never does) */
	return esize(s, a) == 2 && !matmul_streams(s, v->op, s->rows[a]);
}

int tile_matmul_ffma(const struct tiling *s, const struct vcta *v)
{
	const int a = s->g->ops[v->op].in[0];
	return s->g->tensors[a].dtype == ARK_FP32 && !matmul_streams(s, v->op, s->rows[a]);
}

/* Tiles (tm, tn) of out, each one vCTA, or with split-K one MATMUL_PARTIAL per split into an fp32
 * workspace [splits * M, N] and one REDUCE per tile that sums the splits (bias, activation, residual). */
static void tile_matmul(struct tiling *s, int oi)
{
	struct graph *g = s->g;
	struct op *o = &g->ops[oi];
	struct op_tiling *pl = &s->per_op[oi];
	int b = o->in[1], bias = o->n_in > 2 ? o->in[2] : -1, out = pl->out_tensor, res = pl->residual;
	/* an op fused on a: the tiles read its inputs instead. An rmsnorm's input every row whole (its
	 * sum of squares) and gamma; a swiglu's two inputs over the tile's k, as a would be. */
	const int pre = pl->pre_op, a = matmul_a(s, oi);
	const int norm = pre >= 0 && g->ops[pre].kind == ARK_OP_RMSNORM;
	const int gamma = norm ? g->ops[pre].in[1] : -1, glu_y = pre >= 0 && !norm ? g->ops[pre].in[1] : -1;
	int64_t M = s->rows[a], K = s->cols[a], N = s->cols[out];
	int64_t es = esize(s, a);
	const enum ark_dtype bdt = g->tensors[b].dtype; /* q4_1 or q8_0: b [N, K] in blocks of 32 along K */
	int tm, tn;
	int64_t splits;
	pick_matmul(s, oi, M, N, K, es, &tm, &tn, &splits);
	int64_t mt = cdiv(M, tm), nt = cdiv(N, tn);
	int64_t kc = split_chunk(K, splits);
	pl->tm = tm;
	pl->tn = tn;
	pl->splits = (int)splits;
	if (splits > 1)
		pl->ws_tensor = tiling_add_tensor(s, g->tensors[out].name, "__ws", o->gpu, splits * M, N, ARK_FP32);
	for (int64_t mi = 0; mi < mt; mi++)
		for (int64_t ni = 0; ni < nt; ni++) {
			int64_t m0 = mi * tm, m1 = imin(M, m0 + tm), n0 = ni * tn, n1 = imin(N, n0 + tn);
			for (int64_t sp = 0; sp < splits; sp++) {
				int64_t k0 = sp * kc, k1 = imin(K, k0 + kc);
				struct vcta *v = tiling_new_vcta(s, oi, oi, splits > 1 ? ARK_T_MATMUL_PARTIAL : ARK_T_MATMUL);
				v->m0 = (uint32_t)m0, v->m1 = (uint32_t)m1, v->n0 = (uint32_t)n0, v->n1 = (uint32_t)n1;
				v->k0 = (uint32_t)k0, v->k1 = (uint32_t)k1, v->split = (uint32_t)sp;
				vcta_add_read(v, a, m0, m1, norm ? 0 : k0, norm ? K : k1);
				if (gamma >= 0)
					vcta_add_read(v, gamma, 0, 1, 0, K);
				if (glu_y >= 0)
					vcta_add_read(v, glu_y, m0, m1, k0, k1);
				if (o->transpose_b && ark_dtype_quantized(bdt)) /* its view is bytes; k0, k1: multiples of 32 */
					vcta_add_read(v, b, n0, n1, ark_row_bytes(bdt, k0), ark_row_bytes(bdt, k1));
				else if (o->transpose_b)
					vcta_add_read(v, b, n0, n1, k0, k1);
				else
					vcta_add_read(v, b, k0, k1, n0, n1);
				if (splits > 1) {
					v->write = (struct region){pl->ws_tensor, sp * M + m0, sp * M + m1, n0, n1};
				} else {
					if (bias >= 0)
						vcta_add_read(v, bias, 0, 1, n0, n1);
					if (res >= 0)
						vcta_add_read(v, res, m0, m1, n0, n1);
					v->write = (struct region){out, m0, m1, n0, n1};
				}
				v->flops = 2.0 * (double)((m1 - m0) * (n1 - n0) * (k1 - k0));
				v->bytes = (double)(es * (m1 - m0) * (pre >= 0 ? K : k1 - k0) + (pre >= 0 ? es * K : 0) +
						    ark_row_bytes(bdt, k1 - k0) * (n1 - n0) +
						    (splits > 1 ? 4 : res >= 0 ? 2 * es : es) * (m1 - m0) * (n1 - n0));
				v->tc = es == 2 && !ark_dtype_quantized(bdt); /* quantized b: FMA after dequantising */
			}
		}
	if (splits > 1)
		for (int64_t mi = 0; mi < mt; mi++)
			for (int64_t ni = 0; ni < nt; ni++) {
				int64_t m0 = mi * tm, m1 = imin(M, m0 + tm), n0 = ni * tn, n1 = imin(N, n0 + tn);
				struct vcta *v = tiling_new_vcta(s, oi, oi, ARK_T_REDUCE);
				v->m0 = (uint32_t)m0, v->m1 = (uint32_t)m1, v->n0 = (uint32_t)n0, v->n1 = (uint32_t)n1;
				v->k0 = 0, v->k1 = (uint32_t)K;
				/* Slices m0..m1 of every split: one region from the first to the last. */
				vcta_add_read(v, pl->ws_tensor, m0, (splits - 1) * M + m1, n0, n1);
				if (bias >= 0)
					vcta_add_read(v, bias, 0, 1, n0, n1);
				if (res >= 0)
					vcta_add_read(v, res, m0, m1, n0, n1);
				v->write = (struct region){out, m0, m1, n0, n1};
				v->flops = (double)(splits * (m1 - m0) * (n1 - n0));
				v->bytes = (double)((4 * splits + (res >= 0 ? 2 * es : es)) * (m1 - m0) * (n1 - n0));
			}
}

/* About T tiles of an [R, C] output: whole rows (tr of them) when there are at least T rows, else
 * one row and columns cut into about T / R blocks, a multiple of `align` (tc). */
static void rows_or_columns(int64_t R, int64_t C, int64_t T, int64_t align, int64_t *tr, int64_t *tc)
{
	if (R >= T) {
		*tr = cdiv(R, T);
		*tc = C;
	} else {
		*tr = 1;
		*tc = imin(C, cdiv(cdiv(C, cdiv(T, R)), align) * align);
	}
}

/* Region of input `in` that output box (r0..r1, c0..c1) of `out` needs under broadcasting. */
static void bcast_read(struct tiling *s, struct vcta *v, int in, int out, int64_t r0, int64_t r1, int64_t c0,
		       int64_t c1)
{
	const struct tensor *ti = &s->g->tensors[in], *to = &s->g->tensors[out];
	int same = tensor_same_shape(ti, to);
	if (same) {
		vcta_add_read(v, in, r0, r1, c0, c1);
		return;
	}
	int64_t ri = s->rows[in], ci = s->cols[in];
	int64_t rr0 = 0, rr1 = ri, cc0 = 0, cc1 = ci;
	if (ci == s->cols[out])
		cc0 = c0, cc1 = c1;
	if (ri == s->rows[out])
		rr0 = r0, rr1 = r1;
	vcta_add_read(v, in, rr0, rr1, cc0, cc1);
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
	rows_or_columns(R, C, T, 8, &tr, &tc);
	pl->tm = (int)imin(tr, INT32_MAX);
	pl->tn = (int)imin(tc, INT32_MAX);
	for (int64_t r0 = 0; r0 < R; r0 += tr)
		for (int64_t c0 = 0; c0 < C; c0 += tc) {
			int64_t r1 = imin(R, r0 + tr), c1 = imin(C, c0 + tc);
			struct vcta *v = tiling_new_vcta(s, oi, oi, ARK_T_ELEMENTWISE);
			v->m0 = (uint32_t)r0, v->m1 = (uint32_t)r1, v->n0 = (uint32_t)c0, v->n1 = (uint32_t)c1;
			for (int i = 0; i < o->n_in; i++)
				bcast_read(s, v, o->in[i], out, r0, r1, c0, c1);
			v->write = (struct region){out, r0, r1, c0, c1};
			v->flops = (double)((r1 - r0) * (c1 - c0) * 8);
			v->bytes = (double)((o->n_in + 1) * es * (r1 - r0) * (c1 - c0));
		}
}

/* The box of a [rows, C] view that holds elements e0..e1 of it: exact within one row or for whole
 * rows, else the whole rows touched (a superset, which only adds hazards). */
static struct region range_box(int tensor, int64_t e0, int64_t e1, int64_t C)
{
	int64_t r0 = e0 / C, r1 = (e1 + C - 1) / C;
	if (r1 - r0 == 1)
		return (struct region){tensor, r0, r1, e0 - r0 * C, e1 - r0 * C};
	return (struct region){tensor, r0, r1, 0, C};
}

/* The end of the range from element e0 of about `chunk` elements of an [E / C, C] view: it never
 * straddles a row boundary partly, so it is an exact box of the view (a box rounded out to whole rows
 * would make neighbouring ranges of one op depend on each other, and run one after the other):
 * whole rows when rows are shorter than a range, else pieces of one row. */
static int64_t range_end(int64_t e0, int64_t E, int64_t C, int64_t chunk)
{
	const int64_t rows_per = C >= chunk ? 0 : chunk / C;
	return rows_per ? imin(E, e0 + rows_per * C) : imin(e0 / C * C + C, e0 + chunk);
}

/* A chain (fuse.c) over element ranges of its output: one 16-byte vector per thread of a
 * 256-thread CTA at least (a chain step is latency-bound: more SMs in parallel, fewer values each),
 * about one range per SM for large tensors. */
static void tile_chain(struct tiling *s, int head)
{
	struct op_tiling *pl = &s->per_op[head];
	int out = pl->out_tensor;
	int64_t C = s->cols[out], E = s->rows[out] * C, es = esize(s, out), vec = 16 / es;
	int64_t unit = 256 * vec, chunk = imax(unit, cdiv(cdiv(E, s->opt.sms), unit) * unit);
	pl->tm = 1;
	pl->tn = (int)imin(chunk, INT32_MAX);
	/* the distinct tensors the chain reads */
	int reads[VCTA_MAX_READS], n_reads = fuse_chain_reads(s, head, reads);
	for (int64_t e0 = 0, e1; e0 < E; e0 = e1) {
		e1 = range_end(e0, E, C, chunk);
		struct vcta *v = tiling_new_vcta(s, head, head, ARK_T_EW_CHAIN);
		const struct region box = range_box(out, e0, e1, C);
		v->k0 = (uint32_t)e0, v->k1 = (uint32_t)e1;
		v->m0 = (uint32_t)box.r0, v->m1 = (uint32_t)box.r1, v->n0 = (uint32_t)box.c0, v->n1 = (uint32_t)box.c1;
		/* the same box of every tensor of out's shape; all of a broadcast operand (a superset) */
		for (int j = 0; j < n_reads; j++) {
			if (tensor_same_shape(&s->g->tensors[reads[j]], &s->g->tensors[out]))
				vcta_add_read(v, reads[j], box.r0, box.r1, box.c0, box.c1);
			else
				vcta_add_read(v, reads[j], 0, s->rows[reads[j]], 0, s->cols[reads[j]]);
		}
		v->write = box;
		v->flops = (double)(pl->chain_len * (e1 - e0));
		/* each step waits for the one before (calib.h: chain_steps_us) */
		v->lat_us = chain_steps_us(pl->chain_len, pl->chain_gen) * (double)cdiv(e1 - e0, unit);
		v->bytes = (double)((v->n_reads + 1) * es * (e1 - e0));
	}
}

/* A hook of tile_rows: what one vCTA of rows v->m0..m1 (every column, C) reads besides those rows
 * of in[0], and its flops and bytes; es is the size of an element of the output. */
typedef void rows_cost_fn(const struct op *o, struct vcta *v, int64_t C, int64_t es);

/* Ranges of whole rows of the output [R, C], about one per SM, each reading its rows of in[0] and
 * what cost adds. */
static void tile_rows(struct tiling *s, int oi, enum ark_tmpl tmpl, rows_cost_fn *cost)
{
	struct graph *g = s->g;
	struct op *o = &g->ops[oi];
	struct op_tiling *pl = &s->per_op[oi];
	int out = pl->out_tensor; /* a fused activation's output */
	int64_t R = s->rows[out], C = s->cols[out], es = esize(s, out);
	int64_t tr = cdiv(R, imin(R, s->opt.sms));
	pl->tm = (int)imin(tr, INT32_MAX);
	pl->tn = (int)imin(C, INT32_MAX);
	for (int64_t r0 = 0; r0 < R; r0 += tr) {
		int64_t r1 = imin(R, r0 + tr);
		struct vcta *v = tiling_new_vcta(s, oi, oi, tmpl);
		v->m0 = (uint32_t)r0, v->m1 = (uint32_t)r1, v->n0 = 0, v->n1 = (uint32_t)C;
		vcta_add_read(v, o->in[0], r0, r1, 0, C);
		v->write = (struct region){out, r0, r1, 0, C};
		cost(o, v, C, es);
	}
}

/* Row-wise ops (softmax, norms): the other inputs are vectors of a row's length. */
static void rows_norm_cost(const struct op *o, struct vcta *v, int64_t C, int64_t es)
{
	int64_t rows = (int64_t)v->m1 - v->m0;
	for (int i = 1; i < o->n_in; i++)
		vcta_add_read(v, o->in[i], 0, 1, 0, C);
	v->flops = (double)(rows * C * 6);
	v->bytes = (double)(2 * es * rows * C);
}

static void tile_softmax(struct tiling *s, int oi) { tile_rows(s, oi, ARK_T_SOFTMAX, rows_norm_cost); }
static void tile_l2norm(struct tiling *s, int oi) { tile_rows(s, oi, ARK_T_L2NORM, rows_norm_cost); }
static void tile_layernorm(struct tiling *s, int oi) { tile_rows(s, oi, ARK_T_LAYERNORM, rows_norm_cost); }
static void tile_rmsnorm(struct tiling *s, int oi) { tile_rows(s, oi, ARK_T_RMSNORM, rows_norm_cost); }

void tile_reduce_view(const struct graph *g, const struct op *o, int64_t v[4])
{
	const struct tensor *x = &g->tensors[o->in[0]];
	int ax = o->axis, last = x->ndim - 1;
	v[0] = v[2] = 1;
	for (int d = 0; d < ax; d++)
		v[0] *= x->shape[d];
	v[1] = x->shape[ax];
	for (int d = ax + 1; d < last; d++)
		v[2] *= x->shape[d];
	v[3] = ax < last ? x->shape[last] : 1;
}

/* A REDUCE_MEAN tile's latency (us, beside the dispatch), from the memory round trips its threads wait
 * one after another (templates/op_reduce.cuh): a thread sums its elements of an output ARK_RM_BATCH
 * loads at a time, an output's elements spread over `lanes` threads (a load: one element, or the
 * 16-byte vector of 16 / es elements of the contiguous path without a mask); `outputs` such sums one after
 * another, each also paying `extra` (the CTA's barriers of the strided path). Its bytes
 * alone priced sw1795954334_019's tasks (8 rows of 3313 bf16, a warp a row: 13 round trips) at 2.4 us
 * against 7.0 traced on the H200 (bench/NOTES.md), which RM_RT_US is fitted to. */
#define RM_WARPS 8      /* 256 threads */
#define RM_RT_US 0.45   /* one round trip to L2 or memory of a batch of loads */
#define RM_SUM_US 0.3   /* the sums' reduction and the store */
static double reduce_mean_us(int64_t outputs, int64_t S, int64_t lanes, double extra)
{
	const int64_t per = cdiv(S, lanes);
	return (double)outputs * ((double)cdiv(per, ARK_RM_BATCH) * RM_RT_US + extra) + RM_SUM_US;
}

/* reduce_mean over x viewed as [P, S, Q, D] (tile_reduce_view), out as [P * Q, D]. When Q = D = 1 the
 * S values of an output are contiguous: ranges of outputs, a warp each, cut as the chains cut
 * (whole rows of out's view or pieces of one row, so that every range is an exact box). Else tiles of
 * (rows, columns) of out, about one per SM, each over all of S: the reads are x's rows of the tile's
 * P range (and the mask's), columns of the tile. */
static void tile_reduce_mean(struct tiling *s, int oi)
{
	struct graph *g = s->g;
	struct op *o = &g->ops[oi];
	struct op_tiling *pl = &s->per_op[oi];
	int x = o->in[0], mask = o->n_in > 1 ? o->in[1] : -1, out = o->out[0];
	int64_t v[4], sms = s->opt.sms, es = esize(s, x);
	tile_reduce_view(g, o, v);
	const int64_t P = v[0], S = v[1], Q = v[2], D = v[3], R = P * Q;
	const int64_t mes = mask >= 0 ? esize(s, mask) : 0;
	if (Q == 1 && D == 1) {
		/* at least 8 outputs a range: a warp each (with 256 threads), none idle */
		int64_t C = s->cols[out], chunk = imin(P, imax(8, cdiv(P, sms)));
		int64_t rows_per = C >= chunk ? 0 : chunk / C;
		pl->tm = (int)imin(chunk, INT32_MAX);
		pl->tn = 1;
		for (int64_t e0 = 0, e1; e0 < P; e0 = e1) {
			e1 = rows_per ? imin(P, e0 + rows_per * C) : imin(e0 / C * C + C, e0 + chunk);
			struct vcta *t = tiling_new_vcta(s, oi, oi, ARK_T_REDUCE_MEAN);
			t->m0 = (uint32_t)e0, t->m1 = (uint32_t)e1, t->n0 = 0, t->n1 = 1;
			struct region rx = range_box(x, e0 * S, e1 * S, s->cols[x]);
			vcta_add_read(t, x, rx.r0, rx.r1, rx.c0, rx.c1);
			if (mask >= 0) {
				struct region rm = range_box(mask, e0 * S, e1 * S, s->cols[mask]);
				vcta_add_read(t, mask, rm.r0, rm.r1, rm.c0, rm.c1);
			}
			t->write = range_box(out, e0, e1, C);
			t->flops = (double)(2 * (e1 - e0) * S);
			t->bytes = (double)((es + mes) * (e1 - e0) * S + es * (e1 - e0));
			/* a warp an output, by 16-byte vectors where no mask is read with them */
			t->lat_us = reduce_mean_us(cdiv(e1 - e0, RM_WARPS), S, mask >= 0 ? 32 : 32 * (16 / es), 0);
		}
		return;
	}
	/* about one tile per SM, columns cut into blocks of at least 32 when rows are too few */
	int64_t tr, tc;
	rows_or_columns(R, D, sms, 32, &tr, &tc);
	pl->tm = (int)imin(tr, INT32_MAX);
	pl->tn = (int)imin(tc, INT32_MAX);
	for (int64_t r0 = 0; r0 < R; r0 += tr)
		for (int64_t c0 = 0; c0 < D; c0 += tc) {
			int64_t r1 = imin(R, r0 + tr), c1 = imin(D, c0 + tc);
			int64_t p0 = r0 / Q, p1 = (r1 - 1) / Q + 1; /* the P range the rows belong to */
			struct vcta *t = tiling_new_vcta(s, oi, oi, ARK_T_REDUCE_MEAN);
			t->m0 = (uint32_t)r0, t->m1 = (uint32_t)r1, t->n0 = (uint32_t)c0, t->n1 = (uint32_t)c1;
			vcta_add_read(t, x, p0 * S * Q, p1 * S * Q, c0, c1); /* x's view is [P * S * Q, D] */
			if (mask >= 0) {
				struct region rm = range_box(mask, p0 * S * Q, p1 * S * Q, s->cols[mask]);
				vcta_add_read(t, mask, rm.r0, rm.r1, rm.c0, rm.c1);
			}
			t->write = (struct region){out, r0, r1, c0, c1};
			t->flops = (double)(2 * (r1 - r0) * (c1 - c0) * S);
			t->bytes = (double)(es * (r1 - r0) * (c1 - c0) * (S + 1) + mes * (r1 - r0) * S);
			/* W threads over the columns, 256 / W groups of them over S, a row and a block of W
			 * columns at a time, two CTA barriers each */
			int64_t W = 32;
			while (W < c1 - c0 && W * 2 <= 32 * RM_WARPS)
				W *= 2;
			t->lat_us = reduce_mean_us((r1 - r0) * cdiv(c1 - c0, W), S, 32 * RM_WARPS / W, 0.1);
		}
}

/* Ranges of dst's elements, about one per SM and at least 4096 elements, as vCTAs of template tmpl
 * (elements k0:k1) that read the same range of src: a copy within a GPU, assign and advance. */
static void elem_ranges(struct tiling *s, int oi, int tmpl, int src, int dst)
{
	struct op_tiling *pl = &s->per_op[oi];
	int64_t C = s->cols[dst], E = s->rows[dst] * C, es = esize(s, dst);
	int64_t T = imax(1, imin(s->opt.sms, cdiv(E, 4096)));
	int64_t chunk = cdiv(cdiv(E, T), 8) * 8;
	pl->tm = 1;
	pl->tn = (int)imin(chunk, INT32_MAX);
	for (int64_t e0 = 0, e1; e0 < E; e0 = e1) {
		e1 = range_end(e0, E, C, chunk);
		struct vcta *v = tiling_new_vcta(s, oi, oi, tmpl);
		v->k0 = (uint32_t)e0, v->k1 = (uint32_t)e1;
		const struct region box = range_box(dst, e0, e1, C);
		v->m0 = (uint32_t)box.r0, v->m1 = (uint32_t)box.r1, v->n0 = (uint32_t)box.c0, v->n1 = (uint32_t)box.c1;
		vcta_add_read(v, src, box.r0, box.r1, box.c0, box.c1);
		v->write = box;
		v->bytes = (double)(2 * es * (e1 - e0));
	}
}

/* A copy within a GPU: ranges of elements, about one per SM and 4096 elements. From another GPU:
 * a transfer (lower_comm.c). */
static void tile_copy(struct tiling *s, int oi)
{
	struct graph *g = s->g;
	struct op *o = &g->ops[oi];
	int in = o->in[0], out = o->out[0];
	if (g->tensors[in].gpu != o->gpu) {
		lower_copy(s, oi);
		return;
	}
	elem_ranges(s, oi, ARK_T_COPY, in, out);
}

/* An attention tile's time on one SM for `rows` query rows (at most 128) over `keys` keys of head size
 * Dh, fitted to bench/decode_probe on an NVIDIA H100 (one CTA a launch; bench/NOTES.md). Tensor cores
 * (16-bit): a fixed part, plus the keys at a cost that grows with the head and, sublinearly, with the
 * rows (the warps split a block's keys among fewer key groups as the row groups grow: 32 rows x 552
 * keys x 128 41.8 us, 64 rows 55.1, 128 rows 75.0, 2048 keys 116.9, head 64 26.4). The probe's fixed
 * part, 13 us, holds a launch; in the loop kernel the tile of 32 rows x 128 keys x 64 took 12.3 us
 * (bert_base's trace), so 9. fp32 (a warp a row, a key a lane): 1.4e-4 us per row, key and head
 * column (32 x 552 x 128: 319 us). */
static double att_tile_us(int64_t rows, int64_t keys, int64_t Dh, int64_t es)
{
	if (es != 2)
		return 2.0 + 1.41e-4 * (double)rows * (double)keys * (double)Dh;
	return 9.0 + 0.0507 * (double)keys * ((double)Dh / 128.0) * pow((double)imax(rows, 16) / 32.0, 0.55);
}

/* Attention: one vCTA per (batch, head, block of BQ query rows), every key of its kv head (the
 * template streams them in blocks through an online softmax; no [Sq, Skv] matrix in memory).
 * BQ is the smallest of 32, 64, 128 whose vCTAs fit on the GPU's SMs in one wave (16 when Sq <= 16,
 * fp32 from 8 as below): every vCTA of a head loads the whole of its K and V, whatever its rows, so
 * its time is that load (about the same for any BQ) plus its rows' arithmetic, which a finer split
 * shortens as long as the vCTAs still run side by side. Below 32 rows the 8 warps of a CTA (2 row
 * groups x 4 key groups of 16 rows) would each get too few keys per block, and the K and V traffic
 * grows with every copy.
 * [1, 12 heads, S 128, Dh 64] on 132 SMs: 48 vCTAs of 32 rows (24 of 64 would halve the parallelism
 * for no fewer loads per vCTA). fp32 (a warp a row at a time) from 8 rows, a row a warp: its time
 * goes with its rows' arithmetic (att_tile_us), so [3 heads, 347, 128] runs 132 vCTAs of 8 rows, not
 * 33 of 32 on a quarter of the SMs. With causal, a block's vCTA reads only the keys its last row sees. */
static void tile_attention(struct tiling *s, int oi)
{
	struct graph *g = s->g;
	struct op *o = &g->ops[oi];
	struct op_tiling *pl = &s->per_op[oi];
	const struct tensor *q = &g->tensors[o->in[0]], *k = &g->tensors[o->in[1]];
	int out = o->out[0], mask = o->n_in > 3 ? o->in[3] : -1;
	int64_t B = q->ndim == 3 ? q->shape[0] : 1, Sq = q->shape[q->ndim - 2], Skv = k->shape[k->ndim - 2];
	int64_t H = o->heads, Hkv = o->kv_heads, Dh = q->shape[q->ndim - 1] / H, es = esize(s, out);
	int64_t bq = es == 4 ? 8 : Sq <= 16 ? 16 : 32;
	while (bq < 128 && B * H * cdiv(Sq, bq) > s->opt.sms)
		bq *= 2;
	pl->tm = (int)bq;
	pl->tn = (int)Dh;
	for (int64_t b = 0; b < B; b++)
		for (int64_t h = 0; h < H; h++) {
			int64_t kvh = h / (H / Hkv);
			for (int64_t q0 = 0; q0 < Sq; q0 += bq) {
				int64_t q1 = imin(Sq, q0 + bq);
				/* keys the block's rows see: all, or with causal up to the last row's diagonal */
				int64_t kend = o->causal ? imax(0, imin(Skv, q1 - 1 + Skv - Sq + 1)) : Skv;
				struct vcta *v = tiling_new_vcta(s, oi, oi, ARK_T_ATTENTION);
				v->m0 = (uint32_t)(b * Sq + q0), v->m1 = (uint32_t)(b * Sq + q1);
				v->n0 = (uint32_t)(h * Dh), v->n1 = (uint32_t)((h + 1) * Dh);
				v->k0 = 0, v->k1 = (uint32_t)kend;
				vcta_add_read(v, o->in[0], b * Sq + q0, b * Sq + q1, h * Dh, (h + 1) * Dh);
				if (kend > 0) {
					vcta_add_read(v, o->in[1], b * Skv, b * Skv + kend, kvh * Dh, (kvh + 1) * Dh);
					vcta_add_read(v, o->in[2], b * Skv, b * Skv + kend, kvh * Dh, (kvh + 1) * Dh);
					if (mask >= 0)
						vcta_add_read(v, mask, b, b + 1, 0, kend);
				}
				v->write = (struct region){out, b * Sq + q0, b * Sq + q1, h * Dh, (h + 1) * Dh};
				/* Q.K^T and P.V, and the softmax's few operations per score */
				v->flops = (double)((q1 - q0) * kend) * (4.0 * (double)Dh + 8.0);
				v->bytes = (double)(es * (2 * (q1 - q0) * Dh + 2 * kend * Dh) +
						    (mask >= 0 ? esize(s, mask) * kend : 0));
				v->tc = es == 2;
				v->lat_us = att_tile_us(q1 - q0, kend, Dh, es);
			}
		}
}

/* An EMBEDDING task of `rows` rows of D elements of es bytes. A plain table's rows without a fused
 * add are copied a row at a time, its id read first (op_view.cuh): the fixed latency fitted to
 * traces (fixed_latency_us). A quantized table's, or rows with a fused add: the task's ids read (one
 * round trip), then its (row, unit) pairs over the threads, a batch of loads in flight a thread at a
 * time (8-element units of a quantized table four at a time; 16-byte vectors four at a time, single
 * elements eight), each batch a round trip; the ids' barrier and check beside them. */
static double embedding_us(int64_t rows, int64_t D, int64_t es, int quant, int residual)
{
	if (!quant && !residual)
		return 0;
	int64_t unit, batch;
	if (quant) {
		unit = 8 * es, batch = 4;
	} else {
		const int64_t vec = (D * es) % 16 ? es : 16; /* the tensors are 16-byte aligned: the rows decide */
		unit = vec, batch = vec == 16 ? 4 : 8;
	}
	const int64_t pairs = rows * cdiv(D * es, unit), passes = cdiv(cdiv(pairs, 256), batch); /* 256 threads */
	return (double)(1 + passes) * RM_RT_US + RM_SUM_US;
}

/* embedding: ranges of rows of out [R, D] (R ids), about one per SM and at least 4 rows each; a row
 * is the table's row ids[r], copied or dequantised (embedding_us). */
static void tile_embedding(struct tiling *s, int oi)
{
	struct graph *g = s->g;
	struct op *o = &g->ops[oi];
	struct op_tiling *pl = &s->per_op[oi];
	int ids = o->in[0], tab = o->in[1], out = pl->out_tensor, res = pl->residual; /* a fused add's (fuse.c) */
	int64_t R = s->rows[out], D = s->cols[out], es = esize(s, out), Ci = s->cols[ids];
	int64_t tr = imax(imin(4, R), cdiv(R, s->opt.sms));
	pl->tm = (int)imin(tr, INT32_MAX);
	pl->tn = (int)imin(D, INT32_MAX);
	for (int64_t r0 = 0; r0 < R; r0 += tr) {
		int64_t r1 = imin(R, r0 + tr);
		struct vcta *v = tiling_new_vcta(s, oi, oi, ARK_T_EMBEDDING);
		v->m0 = (uint32_t)r0, v->m1 = (uint32_t)r1, v->n0 = 0, v->n1 = (uint32_t)D;
		const struct region idr = range_box(ids, r0, r1, Ci); /* id of out row r: element r of ids */
		vcta_add_read(v, ids, idr.r0, idr.r1, idr.c0, idr.c1);
		vcta_add_read(v, tab, 0, s->rows[tab], 0, s->cols[tab]); /* any row: a weight, written by nobody */
		if (res >= 0)
			vcta_add_read(v, res, r0, r1, 0, D);
		v->write = (struct region){out, r0, r1, 0, D};
		v->bytes = (double)((r1 - r0) * ((res >= 0 ? 2 : 1) * es * D + s->cols[tab] * esize(s, tab) + 4));
		v->lat_us = embedding_us(r1 - r0, D, es, ark_dtype_quantized(g->tensors[tab].dtype), res >= 0);
	}
}

/* dequantize: ranges of whole rows of out [R, C] (w [R, C] in blocks of 32), about one per SM and
 * at least 16 KiB of out each, so that a weight spreads over the GPU as an elementwise op does. */
static void tile_dequantize(struct tiling *s, int oi)
{
	struct graph *g = s->g;
	struct op *o = &g->ops[oi];
	struct op_tiling *pl = &s->per_op[oi];
	int w = o->in[0], out = o->out[0];
	int64_t R = s->rows[out], C = s->cols[out], es = esize(s, out), wb = s->cols[w]; /* wb: bytes of a row of w */
	int64_t T = imax(1, imin(imin(R, s->opt.sms), cdiv(R * C * es, 16384)));
	int64_t tr = cdiv(R, T);
	pl->tm = (int)imin(tr, INT32_MAX);
	pl->tn = (int)imin(C, INT32_MAX);
	for (int64_t r0 = 0; r0 < R; r0 += tr) {
		int64_t r1 = imin(R, r0 + tr);
		struct vcta *v = tiling_new_vcta(s, oi, oi, ARK_T_DEQUANT);
		v->m0 = (uint32_t)r0, v->m1 = (uint32_t)r1, v->n0 = 0, v->n1 = (uint32_t)C;
		vcta_add_read(v, w, r0, r1, 0, wb);
		v->write = (struct region){out, r0, r1, 0, C};
		v->flops = (double)(2 * (r1 - r0) * C);
		v->bytes = (double)((r1 - r0) * (wb + es * C));
	}
}

/* A view op: no vCTA (view.c places its result inside its input, or a concat's inputs inside its
 * result); one that copies (copy = true where it cannot be a view): ranges of out's elements, each
 * read from where the op's strides say (tile_strided). */
static void tile_strided(struct tiling *s, int oi)
{
	struct graph *g = s->g;
	struct op *o = &g->ops[oi];
	struct op_tiling *pl = &s->per_op[oi];
	int in = o->in[0], out = o->out[0];
	int64_t C = s->cols[out], E = s->rows[out] * C, es = esize(s, out);
	int64_t T = imax(1, imin(s->opt.sms, cdiv(E, 4096)));
	int64_t chunk = cdiv(cdiv(E, T), 8) * 8;
	pl->tm = 1;
	pl->tn = (int)imin(chunk, INT32_MAX);
	if (view_copy_boxed(g, o)) { /* boxes of out's [rows, C], rows within one of its matrices [J, C] */
		const int64_t J = g->tensors[out].shape[g->tensors[out].ndim - 2], B = ARK_STRIDED_BOX;
		pl->tm = (int)imin(B, J), pl->tn = (int)imin(B, C);
		for (int64_t r = 0; r < s->rows[out]; r += J)
			for (int64_t j0 = 0; j0 < J; j0 += B)
				for (int64_t c0 = 0; c0 < C; c0 += B) {
					const int64_t j1 = imin(J, j0 + B), c1 = imin(C, c0 + B);
					struct vcta *v = tiling_new_vcta(s, oi, oi, ARK_T_STRIDED);
					v->m0 = (uint32_t)(r + j0), v->m1 = (uint32_t)(r + j1);
					v->n0 = (uint32_t)c0, v->n1 = (uint32_t)c1;
					/* the input [.., C, J]: rows c0:c1 of the same matrix, columns j0:j1 */
					vcta_add_read(v, in, r / J * C + c0, r / J * C + c1, j0, j1);
					v->write = (struct region){out, r + j0, r + j1, c0, c1};
					v->bytes = (double)(2 * es * (j1 - j0) * (c1 - c0));
				}
		return;
	}
	const int64_t unit = view_copy_unit(g, o, 0); /* divides C, and chunk (a multiple of 8): so the ranges */
	for (int64_t e0 = 0, e1; e0 < E; e0 = e1) {
		e1 = range_end(e0, E, C, chunk);
		ARK_ASSERT(e0 % unit == 0 && e1 % unit == 0);
		struct vcta *v = tiling_new_vcta(s, oi, oi, ARK_T_STRIDED);
		v->k0 = (uint32_t)e0, v->k1 = (uint32_t)e1;
		const struct region box = range_box(out, e0, e1, C);
		v->m0 = (uint32_t)box.r0, v->m1 = (uint32_t)box.r1, v->n0 = (uint32_t)box.c0, v->n1 = (uint32_t)box.c1;
		vcta_add_read(v, in, 0, s->rows[in], 0, s->cols[in]); /* all of it: a superset */
		v->write = box;
		v->bytes = (double)(2 * es * (e1 - e0));
	}
}

/* A concat that copies: per input, ranges of its elements, each copied to where it lies in out
 * (vCTA part j: the op params entry of input j). The box written is exact along the last axis; along
 * another, the one of out's rows the range spans (a superset where the input is not a block of out:
 * other inputs' rows lie between its own). */
static void tile_concat_copy(struct tiling *s, int oi)
{
	struct graph *g = s->g;
	struct op *o = &g->ops[oi];
	struct op_tiling *pl = &s->per_op[oi];
	const struct tensor *T = &g->tensors[o->out[0]];
	int out = o->out[0];
	int64_t C = s->cols[out], es = esize(s, out), inner = 1, at = 0;
	for (int d = o->axis + 1; d < T->ndim; d++)
		inner *= T->shape[d];
	int64_t row_out = T->shape[o->axis] * inner; /* out's elements per index of the dims before axis */
	pl->tm = 1;
	for (int j = 0; j < o->n_in; j++) {
		int in = o->in[j];
		int64_t E = s->rows[in] * s->cols[in], row_in = g->tensors[in].shape[o->axis] * inner;
		int64_t nt = imax(1, imin(s->opt.sms, cdiv(E, 4096)));
		int64_t chunk = cdiv(cdiv(E, nt), 8) * 8;
		pl->tn = (int)imin(chunk, INT32_MAX);
		const int64_t ci = s->cols[in], unit = view_copy_unit(g, o, j);
		for (int64_t e0 = 0, e1; e0 < E; e0 = e1) {
			/* ranges of whole rows of the input, or pieces of one: a row of it lies in one row of
			 * out, so that the boxes of one input's ranges never overlap (boxes rounded out to
			 * whole rows chained each range to the one before); unit divides ci and chunk */
			e1 = range_end(e0, E, ci, chunk);
			ARK_ASSERT(e0 % unit == 0 && e1 % unit == 0);
			struct vcta *v = tiling_new_vcta(s, oi, oi, ARK_T_STRIDED);
			v->part = j;
			v->k0 = (uint32_t)e0, v->k1 = (uint32_t)e1;
			/* element e of input j is element e / row_in * row_out + at * inner + e % row_in of out */
			int64_t lo = e0 / row_in * row_out + at * inner + e0 % row_in;
			int64_t hi = (e1 - 1) / row_in * row_out + at * inner + (e1 - 1) % row_in + 1;
			const struct region rd = range_box(in, e0, e1, ci);
			struct region wr = range_box(out, lo, hi, C);
			if (inner == 1 && e1 - e0 > ci) /* along the last axis: its rows, at its columns */
				wr = (struct region){out, e0 / ci, e1 / ci, at, at + ci};
			v->m0 = (uint32_t)wr.r0, v->m1 = (uint32_t)wr.r1, v->n0 = (uint32_t)wr.c0, v->n1 = (uint32_t)wr.c1;
			vcta_add_read(v, in, rd.r0, rd.r1, rd.c0, rd.c1);
			v->write = wr;
			v->bytes = (double)(2 * es * (e1 - e0));
		}
		at += g->tensors[in].shape[o->axis];
	}
}

static void tile_view(struct tiling *s, int oi)
{
	if (!s->g->ops[oi].copied)
		return;
	if (s->g->ops[oi].kind == ARK_OP_CONCAT)
		tile_concat_copy(s, oi);
	else
		tile_strided(s, oi);
}

/* assign and advance: ranges of the state's elements, about one per SM and at least 4096 elements
 * (one vCTA for a position or a token). assign reads its value's range, advance the state's own;
 * both write the state (out[0] names it: cfg.c). */
static void tile_assign(struct tiling *s, int oi)
{
	struct graph *g = s->g;
	struct op *o = &g->ops[oi];
	int st = o->in[0];
	elem_ranges(s, oi, ARK_T_ASSIGN, o->kind == ARK_OP_ASSIGN ? o->in[1] : st, st);
}

/* kv_append: x [T, D] into rows pos .. pos + T - 1 of the cache [L, D], pos read on the GPU. Blocks
 * of columns, every row of x each, about one per 8192 elements of x (one vCTA for a decode step's
 * row); each writes its columns of every row of the cache (its result, a view of the cache: view.c
 * puts the region on the cache), since which rows is known only on the GPU. */
static void tile_kv_append(struct tiling *s, int oi)
{
	struct graph *g = s->g;
	struct op *o = &g->ops[oi];
	struct op_tiling *pl = &s->per_op[oi];
	int x = o->in[1], pos = o->in[2], out = o->out[0];
	int64_t T = s->rows[x], D = s->cols[x], L = s->rows[out], es = esize(s, x);
	int64_t nt = imax(1, imin(s->opt.sms, cdiv(T * D, 8192)));
	int64_t tn = imin(D, cdiv(cdiv(D, nt), 8) * 8);
	pl->tm = (int)imin(T, INT32_MAX);
	pl->tn = (int)tn;
	for (int64_t c0 = 0; c0 < D; c0 += tn) {
		int64_t c1 = imin(D, c0 + tn);
		struct vcta *v = tiling_new_vcta(s, oi, oi, ARK_T_KV_APPEND);
		v->m0 = 0, v->m1 = (uint32_t)T, v->n0 = (uint32_t)c0, v->n1 = (uint32_t)c1;
		vcta_add_read(v, x, 0, T, c0, c1);
		vcta_add_read(v, pos, 0, s->rows[pos], 0, s->cols[pos]);
		v->write = (struct region){out, 0, L, c0, c1};
		v->bytes = (double)(2 * es * T * (c1 - c0) + 4);
	}
}

/* rope: ranges of whole rows of x [B*T, E] (tile_rows); each reads its rows and the position. */
static void rope_cost(const struct op *o, struct vcta *v, int64_t C, int64_t es)
{
	int64_t rows = (int64_t)v->m1 - v->m0;
	vcta_add_read(v, o->in[1], 0, 1, 0, 1);
	/* a sincos per pair and 6 operations per element */
	v->flops = (double)(rows * C * 16);
	v->bytes = (double)(2 * es * rows * C + 4);
}

static void tile_rope(struct tiling *s, int oi) { tile_rows(s, oi, ARK_T_ROPE, rope_cost); }

/* decode_attention's work units: a kv head's G query heads for all T rows make G*T query rows that
 * share the kv head's keys; blocks of at most ARK_DEC_ROWS of them, whole rows of out: tb rows t of
 * every query head of the group (G <= ARK_DEC_ROWS), else gb query heads of one row t. */
static void decode_blocks(int64_t T, int64_t G, int64_t *tb, int64_t *gb)
{
	*tb = G <= ARK_DEC_ROWS ? imax(1, imin(T, ARK_DEC_ROWS / G)) : 1;
	*gb = G <= ARK_DEC_ROWS ? G : ARK_DEC_ROWS;
}

/* A DECODE tile's own time (us) for `rows` query rows (heads x positions) over `blocks` blocks of
 * ARK_DEC_BK keys, head size Dh, es bytes an element. fp32: a fixed part, then per block a part for
 * the block's keys and values and one per row, each growing with the head size, fitted to
 * bench/decode_probe's one-task points (NVIDIA H200: 16 rows over 1 and 5 blocks at head sizes 64 and
 * 128, 16 rows over 3, 4 and 8 blocks, 4 rows over 4 blocks; within 8% of each; bench/NOTES.md).
 * 16-bit: ~1.8 us a row and block (fitted on an H100 to 4 rows x 4 blocks, 16 x 1 and 16 x 5): the
 * same fit made for them (7.0 us a block, 0.54 a row) would price a decode step's splits at their full
 * keys where the benchmarks run at position 0 with one key, and is left until they run mid-cache. */
static double dec_tile_us(int64_t rows, int64_t blocks, int64_t Dh, int64_t es)
{
	if (es != 4)
		return 1.8 * (double)rows * (double)blocks;
	const double h = (double)Dh / 64.0;
	return 8.0 + 1.5 * h + (double)blocks * (2.5 + 0.54 * (double)rows) * h;
}

/* decode_attention (flash-decoding): one vCTA per (kv head, block of query rows, split of the cache's
 * L rows). S splits when the blocks alone leave SMs idle: as many as fill the SMs, each of at least
 * 64 keys (a split reads 2 * keys * Dh elements; fewer would cost more in the combine and the
 * dispatch than they save). A split whose keys all lie past pos + T does nothing at run time (the
 * tiler only knows L, the bound). With S > 1 every split writes its unnormalised output, max and
 * sum to the fp32 workspace, and one combine vCTA per block merges the splits that hold keys. */
static void tile_decode_attention(struct tiling *s, int oi)
{
	struct graph *g = s->g;
	struct op *o = &g->ops[oi];
	struct op_tiling *pl = &s->per_op[oi];
	int q = o->in[0], kc = o->in[1], vc = o->in[2], pos = o->in[3], out = o->out[0];
	int64_t T = s->rows[q], E = s->cols[q], L = s->rows[kc], H = o->heads, Hkv = o->kv_heads;
	int64_t Dh = E / H, G = H / Hkv, es = esize(s, out), W = Dh + 2;
	int64_t tb, gb;
	decode_blocks(T, G, &tb, &gb);
	/* Many query rows of 16 bits (a prefill through the cache): one head's block of 16 to 128 rows
	 * a task, about one task per SM, all of the cache in one split, on the attention tile's tensor
	 * cores (op_decode.cuh), ~5x faster a row than the DECODE tile (bench/decode_probe; its fp32
	 * path is 3x slower than the DECODE tile, so fp32 stays there). */
	const int att = es == 2 && T > ARK_DEC_ROWS && Dh <= 128;
	pl->att_tile = att;
	if (att) {
		tb = 16, gb = 1;
		while (tb < 128 && H * cdiv(T, tb) > s->opt.sms)
			tb *= 2;
	}
	int64_t blocks = Hkv * cdiv(T, tb) * cdiv(G, gb);
	int64_t S = att ? 1 : imax(1, imin(cdiv(s->opt.sms, blocks), L / 64));
	int64_t chunk = cdiv(L, S);
	S = cdiv(L, chunk);
	pl->splits = (int)S;
	pl->kchunk = chunk;
	pl->tm = (int)tb;
	pl->tn = (int)(gb * Dh);
	if (S > 1)
		pl->ws_tensor = tiling_add_tensor(s, g->tensors[out].name, "__ws", o->gpu, H * T, S * W, ARK_FP32);
	for (int pass = 0; pass < (S > 1 ? 2 : 1); pass++)
		for (int64_t kvh = 0; kvh < Hkv; kvh++)
			for (int64_t t0 = 0; t0 < T; t0 += tb)
				for (int64_t g0 = 0; g0 < G; g0 += gb) {
					int64_t t1 = imin(T, t0 + tb), g1 = imin(G, g0 + gb);
					int64_t h0 = kvh * G + g0, h1 = kvh * G + g1, rows = (t1 - t0) * (g1 - g0);
					/* the block's rows of the workspace (row kvh*T*G + t*G + g): contiguous, as
					 * the block is whole rows t or a range of g within one t */
					int64_t w0 = kvh * T * G + t0 * G + g0, w1 = w0 + rows;
					for (int64_t sp = 0; sp < (pass ? 1 : S); sp++) {
						struct vcta *v = tiling_new_vcta(s, oi, oi, pass ? ARK_T_DECODE_COMBINE : ARK_T_DECODE);
						v->m0 = (uint32_t)t0, v->m1 = (uint32_t)t1;
						v->n0 = (uint32_t)(h0 * Dh), v->n1 = (uint32_t)(h1 * Dh);
						vcta_add_read(v, pos, 0, 1, 0, 1);
						if (pass) { /* combine: every split's partials of the block's rows */
							v->k0 = 0, v->k1 = (uint32_t)L;
							vcta_add_read(v, pl->ws_tensor, w0, w1, 0, S * W);
							v->write = (struct region){out, t0, t1, h0 * Dh, h1 * Dh};
							v->flops = (double)(rows * S * (Dh + 8));
							v->bytes = (double)(rows * (4 * S * W + es * Dh));
							continue;
						}
						int64_t k0 = sp * chunk, k1 = imin(L, k0 + chunk);
						v->k0 = (uint32_t)k0, v->k1 = (uint32_t)k1, v->split = (uint32_t)sp;
						vcta_add_read(v, q, t0, t1, h0 * Dh, h1 * Dh);
						vcta_add_read(v, kc, k0, k1, kvh * Dh, (kvh + 1) * Dh);
						vcta_add_read(v, vc, k0, k1, kvh * Dh, (kvh + 1) * Dh);
						if (S > 1)
							v->write = (struct region){pl->ws_tensor, w0, w1, sp * W, (sp + 1) * W};
						else
							v->write = (struct region){out, t0, t1, h0 * Dh, h1 * Dh};
						/* q.k and p.v per row and key, the softmax's few operations per score */
						v->flops = (double)(rows * (k1 - k0)) * (4.0 * (double)Dh + 8.0);
						v->bytes = (double)(es * (2 * (k1 - k0) * Dh + 2 * rows * Dh));
						/* the tile's own time, far above its FMAs (dec_tile_us) */
						if (att)
							v->lat_us = att_tile_us(rows, k1 - k0, Dh, 2);
						else
							v->lat_us = dec_tile_us(rows, cdiv(k1 - k0, ARK_DEC_BK), Dh, es);
					}
				}
}

/* argmax over the last axis of x [M, N]: row blocks, about one per SM, each row whole; with few rows
 * of many columns (a vocabulary's logits for one token) the columns too, in S blocks of at least
 * 2048 so that the rows' column blocks fill the SMs, each writing its (value, index) to the fp32
 * workspace [M, 2*S], and combine vCTAs of up to 64 rows merge them. */
#define ARGMAX_MIN_COLS 2048
static void tile_argmax(struct tiling *s, int oi)
{
	struct graph *g = s->g;
	struct op *o = &g->ops[oi];
	struct op_tiling *pl = &s->per_op[oi];
	int x = o->in[0], out = o->out[0];
	int64_t M = s->rows[x], N = s->cols[x], es = esize(s, x), Co = s->cols[out];
	int64_t S = M >= s->opt.sms ? 1 : imax(1, imin(s->opt.sms / M, N / ARGMAX_MIN_COLS));
	int64_t chunk = cdiv(N, S);
	chunk = imin(N, cdiv(chunk, 8) * 8); /* whole 16-byte vectors of 16-bit values per split */
	S = cdiv(N, chunk);
	int64_t tr = S > 1 ? 1 : cdiv(M, imin(M, s->opt.sms));
	pl->splits = (int)S;
	pl->tm = (int)imin(tr, INT32_MAX);
	pl->tn = (int)imin(chunk, INT32_MAX);
	if (S > 1)
		pl->ws_tensor = tiling_add_tensor(s, g->tensors[out].name, "__ws", o->gpu, M, 2 * S, ARK_FP32);
	for (int64_t r0 = 0; r0 < M; r0 += tr) {
		int64_t r1 = imin(M, r0 + tr);
		for (int64_t sp = 0; sp < S; sp++) {
			int64_t c0 = sp * chunk, c1 = imin(N, c0 + chunk);
			struct vcta *v = tiling_new_vcta(s, oi, oi, ARK_T_ARGMAX);
			v->m0 = (uint32_t)r0, v->m1 = (uint32_t)r1, v->n0 = 0, v->n1 = 1;
			v->k0 = (uint32_t)c0, v->k1 = (uint32_t)c1, v->split = (uint32_t)sp;
			vcta_add_read(v, x, r0, r1, c0, c1);
			if (S > 1)
				v->write = (struct region){pl->ws_tensor, r0, r1, 2 * sp, 2 * sp + 2};
			else
				v->write = range_box(out, r0, r1, Co);
			v->flops = (double)((r1 - r0) * (c1 - c0) * 2);
			v->bytes = (double)(es * (r1 - r0) * (c1 - c0) + 8 * (r1 - r0));
		}
	}
	if (S > 1)
		for (int64_t r0 = 0; r0 < M; r0 += 64) {
			int64_t r1 = imin(M, r0 + 64);
			struct vcta *v = tiling_new_vcta(s, oi, oi, ARK_T_ARGMAX_COMBINE);
			v->m0 = (uint32_t)r0, v->m1 = (uint32_t)r1, v->n0 = 0, v->n1 = 1;
			v->k0 = 0, v->k1 = (uint32_t)N;
			vcta_add_read(v, pl->ws_tensor, r0, r1, 0, 2 * S);
			v->write = range_box(out, r0, r1, Co);
			v->flops = (double)((r1 - r0) * S * 2);
			v->bytes = (double)((r1 - r0) * (8 * S + 4));
		}
}

/* The tiler of every op kind, named once per entry of OP_LIST: an op added to the catalog without a
 * line here does not compile ('TILER_<ID>' undeclared). */
#define TILER_MATMUL tile_matmul
#define TILER_ADD tile_elementwise
#define TILER_MUL tile_elementwise
#define TILER_SCALE tile_elementwise
#define TILER_RELU tile_elementwise
#define TILER_GELU tile_elementwise
#define TILER_SILU tile_elementwise
#define TILER_SIGMOID tile_elementwise
#define TILER_SWIGLU tile_elementwise
#define TILER_SOFTMAX tile_softmax
#define TILER_LAYERNORM tile_layernorm
#define TILER_RMSNORM tile_rmsnorm
#define TILER_COPY tile_copy
#define TILER_ALL_REDUCE lower_all_reduce
#define TILER_ALL_GATHER lower_all_gather
#define TILER_TANH tile_elementwise
#define TILER_REDUCE_MEAN tile_reduce_mean
#define TILER_L2_NORMALIZE tile_l2norm
#define TILER_GELU_TANH tile_elementwise
#define TILER_ATTENTION tile_attention
#define TILER_EMBEDDING tile_embedding
#define TILER_RESHAPE tile_view
#define TILER_SLICE tile_view
#define TILER_TRANSPOSE tile_view
#define TILER_CONCAT tile_view
#define TILER_ASSIGN tile_assign
#define TILER_ADVANCE tile_assign
#define TILER_KV_APPEND tile_kv_append
#define TILER_ROPE tile_rope
#define TILER_DECODE_ATTENTION tile_decode_attention
#define TILER_ARGMAX tile_argmax
#define TILER_DEQUANTIZE tile_dequantize

typedef void tiler_fn(struct tiling *s, int oi);
static tiler_fn *const tilers[] = {
#define X(id, nm, mn, mx, no, at, fl) [ARK_OP_##id] = TILER_##id,
	OP_LIST(X)
#undef X
};
_Static_assert(sizeof tilers / sizeof tilers[0] == ARK_OP__COUNT, "one tiler per op kind");

/* Runs a tiler for op oi (for a chain: its head), recording the vCTAs it made. */
static void run_tiler(struct tiling *s, int oi, tiler_fn *fn)
{
	struct op_tiling *pl = &s->per_op[oi];
	ARK_ASSERT(fn != NULL);
	pl->first_vcta = s->n_vcta;
	fn(s, oi);
	pl->n_vcta = s->n_vcta - pl->first_vcta;
}

/* Fixed latency (us, beside the dispatch) of the tiles the calibration table does not measure and
 * whose tilers set none: the memory round trips one after another that their bytes alone do not
 * price (an id or a position read before the rows it names, a reduction before its store). Fitted to
 * the traced task times of a fresh sweep draw on an H100 (bench/NOTES.md), against 1.0-1.7 us
 * predicted without them: EMBEDDING 3.6-6.0 us (a plain table's rows without a fused add; the
 * others embedding_us prices), ROPE 2.7-3.5, L2NORM 1.7-5.1, ARGMAX ~1.9x, KV_APPEND 2.0-2.6, ASSIGN
 * 1.5-2.0 (REDUCE_MEAN's tiler prices its round trips, reduce_mean_us). */
static double fixed_latency_us(enum ark_tmpl t)
{
	switch (t) {
	case ARK_T_EMBEDDING: return 3.0;
	case ARK_T_ROPE: return 2.0;
	case ARK_T_L2NORM: return 1.2;
	case ARK_T_ARGMAX: return 1.0;
	case ARK_T_KV_APPEND: return 1.2;
	case ARK_T_ASSIGN: return 0.7;
	default: return 0;
	}
}

/* A KV_APPEND into a cache whose rows are not whole 16-byte vectors copies in units as small as the
 * cache's and x's addresses agree on, which the position decides at run time: priced at 5 GB/s (32 KiB
 * of bf16 rows of 2234 bytes took 7.1-8.2 us a task, bench/NOTES.md). */
#define KV_UNALIGNED_BPUS 5e3

/* Each vCTA's cost, in the form partition/ reads (tiling_dag). */
static void cost_view(struct tiling *s)
{
	s->flops = xmalloc((size_t)s->n_vcta * sizeof *s->flops);
	s->bytes = xmalloc((size_t)s->n_vcta * sizeof *s->bytes);
	s->lat_us = xmalloc((size_t)s->n_vcta * sizeof *s->lat_us);
	s->tc = xmalloc((size_t)s->n_vcta);
	s->group = xmalloc((size_t)s->n_vcta * sizeof *s->group);
	for (int i = 0; i < s->n_vcta; i++) {
		s->flops[i] = s->v[i].flops;
		s->bytes[i] = s->v[i].bytes;
		s->lat_us[i] = s->v[i].lat_us ? s->v[i].lat_us : fixed_latency_us(s->v[i].tmpl);
		if (s->v[i].tmpl == ARK_T_KV_APPEND && (s->cols[s->v[i].write.tensor] * esize(s, s->v[i].write.tensor)) % 16)
			s->lat_us[i] += s->v[i].bytes / KV_UNALIGNED_BPUS;
		s->tc[i] = s->v[i].tc;
		s->group[i] = s->v[i].op;
	}
}

/* Tiles address elements, rows and columns of a tensor with 32-bit bounds (struct ark_task): an op
 * with a tensor of more elements is refused at its line, never tiled with bounds that wrap. */
static int check_bounds(const struct graph *g)
{
	for (int oi = 0; oi < g->n_ops; oi++) {
		const struct op *o = &g->ops[oi];
		for (int i = 0; i < o->n_in + o->n_out; i++) {
			const struct tensor *t = &g->tensors[i < o->n_in ? o->in[i] : o->out[i - o->n_in]];
			uint64_t elems = tensor_elems(t);
			if (elems <= UINT32_MAX)
				continue;
			char b[64];
			diag_error(graph_file_of(g, o->file), o->line,
				   "op '%s' (%s) %s '%s' of shape %s: %" PRIu64 " elements, more than the 4294967295 a tile "
				   "can address", o->name, op_info[o->kind].name, i < o->n_in ? "reads" : "writes", t->name,
				   shape_str(b, sizeof b, t->ndim, t->shape), elems);
			diag_hint("split the op over tensors of at most 2^32 - 1 elements each");
			return -1;
		}
	}
	return 0;
}

int tile_graph(struct tiling *s)
{
	struct graph *g = s->g;
	if (check_bounds(g) < 0)
		return -1;
	share_sms(s);
	for (int k = 0; k < g->n_ops; k++) {
		int oi = g->order[k], into = s->per_op[oi].fused_into;
		/* A chain's vCTAs come at the place of its last op in the order, after every op that makes
		 * one of its operands: vCTAs stay in a topological order. */
		if (into >= 0 && s->per_op[into].chain_len && s->per_op[oi].chain_next < 0)
			run_tiler(s, into, tile_chain);
		/* A matmul with a fused residual add: at the add's place, after the op making the addend. */
		if (into >= 0 && s->per_op[into].residual_op == oi)
			run_tiler(s, into, tilers[g->ops[into].kind]);
		if (into >= 0 || s->per_op[oi].chain_len || s->per_op[oi].residual_op >= 0) /* tiled elsewhere */
			continue;
		run_tiler(s, oi, tilers[g->ops[oi].kind]);
	}
	ARK_ASSERT(s->cap_views >= g->n_tensors);
	view_regions(s);
	cost_view(s);
	return 0;
}
