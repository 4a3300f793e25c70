// op_decode.cuh: the decoding tiles: ROPE (rotary embedding at a position read on the GPU), DECODE and DECODE_COMBINE (a few query rows against a KV cache, split over the cache's rows: flash-decoding), ARGMAX and ARGMAX_COMBINE (the index of a row's largest value, across SMs for a vocabulary).
#ifndef OP_DECODE_CUH
#define OP_DECODE_CUH

#include "ark_dtype.cuh"
#include "ark_smem.h" /* ARK_SMEM_DECODE, ARK_DEC_ROWS, ARK_DEC_BK */

/* ARK_TILES_DECODE 1: these tiles are built. Off unless asked for, like the attention tiles: a
 * generated file whose model has rope, decode_attention or argmax says 1, the others stay
 * byte-identical and their loop kernels carry none of this code; a build without it traps on such
 * a task (ark_tile: false). */
#ifndef ARK_TILES_DECODE
#define ARK_TILES_DECODE 0
#endif

#if ARK_TILES_DECODE
#define ARK_DEC_LOG2E 1.4426950408889634f

/* The position operand (int32 [1]) at istride[0][0], written by earlier tasks of the iteration (or the
 * host): the loop's waits order it before this tile. */
__device__ __forceinline__ int32_t ark_dec_pos(const ark_opp &p, const ark_tile_env &e)
{
	return *reinterpret_cast<const int32_t *>(e.arena + p.istride[0][0]);
}

/* ---- rope --------------------------------------------------------------------------------------
 * Rows m0:m1 of x [M, N] (N = heads * Dh); row r is at position pos + r % K (K = T). In every head the
 * pairs (i, i + rd/2) (style 0, rotate_half) or (2i, 2i + 1) (style 1, interleaved), i < rd/2, turn
 * by the angle (pos + t) * inv_i, inv_i = 1 / base^(2i/rd), both in fp32 as Hugging Face computes
 * them; columns rd..Dh-1 of each head are copied. The angles depend on the row and i only: a row's
 * cos and sin of every i are made once, by rd/2 threads, into shared memory (where rd/2 <=
 * ARK_ROPE_TABLE; else every pair makes its own), and every head's pairs read them. A thread per
 * pair, four pairs in flight. HALF: rd / 2 where it is one of the common ones (32, 64), so that a pair's
 * head is a shift instead of a division; 0: read from the op. */
template <typename T, int HALF>
__device__ __noinline__ void ark_rope_rows(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
{
	const T *x = reinterpret_cast<const T *>(e.arena + p.in[0]);
	T *out = reinterpret_cast<T *>(e.arena + p.out);
	const int32_t pos = ark_dec_pos(p, e);
	const int Dh = (int)p.oshape[0], rd = HALF ? 2 * HALF : (int)p.oshape[1], half = rd / 2, rest = Dh - rd;
	const bool inter = p.oshape[2] != 0, table = half <= ARK_ROPE_TABLE;
	const float base = p.f;
	const int64_t E = p.N, heads = E / Dh;
	__builtin_assume(__isShared(e.smem));
	float *cs = reinterpret_cast<float *>(e.smem), *sn = cs + ARK_ROPE_TABLE;
	for (uint32_t r = t.m0; r < t.m1; r++) {
		const float ps = (float)((int64_t)pos + (int64_t)(r % (uint64_t)p.K));
		if (table) {
			if (r != t.m0)
				__syncthreads(); /* the last row's pairs have read the table */
			for (int i = threadIdx.x; i < half; i += ARK_THREADS)
				sincosf(ps * (1.0f / powf(base, (float)(2 * i) / (float)rd)), &sn[i], &cs[i]);
			__syncthreads();
		}
		const T *xr = x + (int64_t)r * E;
		T *orow = out + (int64_t)r * E;
		/* U pairs per thread at a time, all loaded before any is stored (out may alias x, so a store
		 * between them would order every later load after it: one L2 round trip per pair) */
		constexpr int U = 4;
		for (int64_t k0 = threadIdx.x; k0 < heads * half; k0 += U * ARK_THREADS) {
			float xa[U], xb[U];
			int64_t ia[U], ib[U];
			int iu[U];
#pragma unroll
			for (int u = 0; u < U; u++) {
				const int64_t k = k0 + u * ARK_THREADS;
				const int64_t h = k / half;
				iu[u] = (int)(k - h * half);
				ia[u] = h * Dh + (inter ? 2 * iu[u] : iu[u]);
				ib[u] = h * Dh + (inter ? 2 * iu[u] + 1 : iu[u] + half);
				if (k < heads * half)
					xa[u] = ark_to_f(xr[ia[u]]), xb[u] = ark_to_f(xr[ib[u]]);
			}
#pragma unroll
			for (int u = 0; u < U; u++) {
				if (k0 + u * ARK_THREADS >= heads * half)
					break;
				float s, c;
				if (table)
					s = sn[iu[u]], c = cs[iu[u]];
				else
					sincosf(ps * (1.0f / powf(base, (float)(2 * iu[u]) / (float)rd)), &s, &c);
				orow[ia[u]] = ark_from_f<T>(xa[u] * c - xb[u] * s);
				orow[ib[u]] = ark_from_f<T>(xb[u] * c + xa[u] * s);
			}
		}
		for (int64_t k = threadIdx.x; rest && k < heads * rest; k += ARK_THREADS) {
			const int64_t j = (k / rest) * Dh + rd + k % rest;
			orow[j] = xr[j];
		}
	}
}

template <typename T>
__device__ __forceinline__ void ark_rope_tile(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
{
	if (p.oshape[1] == 64)
		ark_rope_rows<T, 32>(p, t, e);
	else if (p.oshape[1] == 128)
		ark_rope_rows<T, 64>(p, t, e);
	else
		ark_rope_rows<T, 0>(p, t, e);
}

/* ---- decode attention ------------------------------------------------------------------------
 * A task: query rows t = m0:m1 of q [T, E] and query heads h = n0/Dh : n1/Dh (all of one kv head kvh),
 * R = rows x heads <= ARK_DEC_ROWS query rows that share kvh's keys; keys k0:k1 of the caches [L, Ekv]
 * (split `split` of S). Query row (t, h) sees keys 0..pos+t. Keys past pos + T - 1 do nothing: a split
 * that starts there returns at once.
 *   scores  a key per group of LK lanes (LK: the power of 2 that covers Dh / 8; each lane 8 elements of
 *           the key, as 16-byte loads), dotted with the R rows of q (fp32 in smem, scaled by scale *
 *           log2(e)), summed over the group by shuffles, into sc [R][BK];
 *   softmax a warp per row: the block's max, p = exp2(s - m), the running max m, sum l and the factor
 *           alpha that rescales the earlier blocks (the online softmax, fp32);
 *   P.V     thread (kg, d): column d of V for keys kg, kg + KG, ... of the block (KG = ARK_THREADS / Dh
 *           key groups), R fp32 sums in registers; the key groups are summed through smem at the end.
 * One split (S = 1): out = o / l. Several: the unnormalised o, m and l of every row to the workspace
 * (ark_task.h: DECODE_ATTENTION's params), which DECODE_COMBINE merges. */

/* 8 elements of a row from src (16-byte loads where aligned) as fp32. */
template <typename T> __device__ __forceinline__ void ark_dec_load8(const T *src, float *f)
{
	if (ark_aligned16(src)) {
		ark_unpack<T>(*reinterpret_cast<const uint4 *>(src), f);
		if (ark_dt<T>::vec == 4)
			ark_unpack<T>(*reinterpret_cast<const uint4 *>(src + 4), f + 4);
	} else {
#pragma unroll
		for (int i = 0; i < 8; i++)
			f[i] = ark_to_f(src[i]);
	}
}

/* The geometry every decode tile of an op shares. */
struct ark_dec {
	int64_t L, E, Ekv, TT; /* cache rows, q and cache row widths, query rows T */
	int H, Hkv, G, Dh, S;  /* heads, kv heads, heads per kv head, head size, splits */
	int t0, nh, h0, R;     /* the task's first row t, heads, first head, query rows */
	int32_t pos;
	bool bad;              /* pos outside 0..L-T: fault, zeros */
};

__device__ __forceinline__ ark_dec ark_dec_geom(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
{
	ark_dec d;
	d.L = p.oshape[0], d.H = (int)p.oshape[1], d.Hkv = (int)p.oshape[2], d.Dh = (int)p.oshape[3];
	d.G = d.H / d.Hkv, d.E = p.N, d.Ekv = (int64_t)d.Hkv * d.Dh, d.TT = p.M, d.S = (int)p.splits;
	d.t0 = (int)t.m0, d.h0 = (int)(t.n0 / (uint32_t)d.Dh), d.nh = (int)((t.n1 - t.n0) / (uint32_t)d.Dh);
	d.R = (int)(t.m1 - t.m0) * d.nh;
	d.pos = ark_dec_pos(p, e);
	d.bad = d.pos < 0 || (int64_t)d.pos > d.L - d.TT;
	return d;
}

/* Query row r of the task (0..R-1): its row tt of q and out and its head h. A task of one query row
 * (every decode step) needs no division; several rows divide by the heads a task. */
__device__ __forceinline__ void ark_dec_row(const ark_dec &d, int r, int &tt, int &h)
{
	if (d.R == d.nh) {
		tt = d.t0, h = d.h0 + r;
	} else {
		const int q = r / d.nh;
		tt = d.t0 + q, h = d.h0 + r - q * d.nh;
	}
}

/* Zeros into the task's block of out (a position outside the cache). */
template <typename T> __device__ __forceinline__ void ark_dec_zero(const ark_dec &d, T *out)
{
	for (int i = threadIdx.x; i < d.R * d.Dh; i += ARK_THREADS) {
		const int r = i / d.Dh, c = i % d.Dh;
		out[(int64_t)(d.t0 + r / d.nh) * d.E + (int64_t)(d.h0 + r % d.nh) * d.Dh + c] = ark_from_f<T>(0.0f);
	}
}

/* The tile for RC >= R query rows, a power of 2: every loop over rows runs RC of them, unrolled
 * without a test per row, so that their shared-memory loads and FMAs overlap (a test per row of 16
 * left each row's loads exposed: 45 us a 128-key block of 16 rows, bench/NOTES.md); rows R..RC-1 have
 * zero queries, and their sums are dropped. DH: the head size where it is one of the common ones
 * (64, 128), so that the lanes a key, the key groups and every index over a head are constants and
 * shifts (with the head size read at run time, the divisions by it made most of a one-key split's
 * ~10k cycles, bench/NOTES.md); 0: read from the op. */
template <typename T, int RC, int DH>
__device__ __noinline__ void ark_decode_rows(const ark_opp &p, const ark_task &t, const ark_tile_env &e, const ark_dec d,
					     int64_t k0, int64_t kend)
{
	constexpr int RM = ARK_DEC_ROWS, BK = ARK_DEC_BK;
	constexpr int DU = 4, PU = 8; /* keys in flight a warp (scores) and a thread (P.V) */
	static_assert(RC <= RM, "ark_decode_rows: at most ARK_DEC_ROWS rows");
	T *out = reinterpret_cast<T *>(e.arena + p.out);
	const T *q = reinterpret_cast<const T *>(e.arena + p.in[0]);
	const int kvh = d.h0 / d.G, Dh = DH ? DH : d.Dh, R = d.R;
	const T *kc = reinterpret_cast<const T *>(e.arena + p.in[1]) + (int64_t)kvh * Dh;
	const T *vc = reinterpret_cast<const T *>(e.arena + p.in[2]) + (int64_t)kvh * Dh;
	/* the compiler is told the tile's buffers are shared memory, so that it uses shared loads and
	 * stores and knows they cannot alias the op's parameters or the caches (generic ones made it
	 * reload those after every store: 130k instructions for a 16-row block of 128 keys) */
	__builtin_assume(__isShared(e.smem));
	float *qs = reinterpret_cast<float *>(e.smem); /* [RM][Dh] */
	float *sc = qs + RM * 128;                     /* [RM][BK] */
	float *rm = sc + RM * BK, *rl = rm + RM, *ra = rl + RM;
	float *red = ra + RM; /* [KG][R][Dh] */
	const float sc2 = p.f * ARK_DEC_LOG2E;
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	const int ch = Dh / 8;                                    /* 8-element chunks of a key */
	const int LK = ch <= 1 ? 1 : ch <= 2 ? 2 : ch <= 4 ? 4 : ch <= 8 ? 8 : 16; /* lanes per key */
	const int KPW = 32 / LK, c8 = lane % LK;                  /* keys per warp step, this lane's chunk */
	const int KG = ARK_THREADS / Dh, kg = threadIdx.x / Dh, dc = threadIdx.x % Dh;
	/* The first block's first keys (this warp's first scores step) and values (this thread's first
	 * P.V step) are loaded before q is staged, so that the three reads of a split of few keys (q, K,
	 * V) make one round trip to memory instead of three in a row. */
	const int nb0 = (int)min((int64_t)BK, kend - k0);
	float kf0[DU][8], v0[PU];
#pragma unroll
	for (int u = 0; u < DU; u++) {
		const int j = warp * KPW + u * ARK_WARPS * KPW + lane / LK;
		if (j < nb0 && c8 < ch)
			ark_dec_load8<T>(kc + (k0 + j) * d.Ekv + c8 * 8, kf0[u]);
	}
#pragma unroll
	for (int u = 0; u < PU; u++) {
		const int j = kg + u * KG;
		v0[u] = kg < KG && j < nb0 ? ark_to_f(vc[(k0 + j) * d.Ekv + dc]) : 0.0f;
	}
	for (int i = threadIdx.x; i < RC * Dh; i += ARK_THREADS) {
		const int r = i / Dh, c = i % Dh;
		int tt, h;
		ark_dec_row(d, r, tt, h);
		qs[i] = r < R ? ark_to_f(q[(int64_t)tt * d.E + (int64_t)h * Dh + c]) * sc2 : 0.0f;
	}
	if (threadIdx.x < RM)
		rm[threadIdx.x] = -INFINITY, rl[threadIdx.x] = 0.0f;
	float acc[RC];
#pragma unroll
	for (int r = 0; r < RC; r++)
		acc[r] = 0.0f;
	__syncthreads();
	for (int64_t kb = k0; kb < kend; kb += BK) {
		const int nb = (int)min((int64_t)BK, kend - kb);
		/* scores: every lane of a warp runs the same steps (the shuffles need all 32); DU keys of
		 * the warp at a time, all loaded before any is used and their dot products reduced side by
		 * side, so that DU loads and DU shuffle chains are in flight instead of one */
		for (int j0 = warp * KPW; j0 < nb; j0 += DU * ARK_WARPS * KPW) {
			float kf[DU][8];
			bool on[DU];
#pragma unroll
			for (int u = 0; u < DU; u++) {
				const int j = j0 + u * ARK_WARPS * KPW + lane / LK;
				on[u] = j < nb && c8 < ch;
				if (kb == k0 && j0 == warp * KPW) { /* loaded before q was staged */
#pragma unroll
					for (int i = 0; i < 8; i++)
						kf[u][i] = kf0[u][i];
				} else if (on[u]) {
					ark_dec_load8<T>(kc + (kb + j) * d.Ekv + c8 * 8, kf[u]);
				}
			}
#pragma unroll
			for (int r = 0; r < RC; r++) {
				const float *qr = qs + r * Dh + c8 * 8;
				float qv[8];
#pragma unroll
				for (int i = 0; i < 8; i++)
					qv[i] = c8 < ch ? qr[i] : 0.0f;
				float sv[DU];
#pragma unroll
				for (int u = 0; u < DU; u++) {
					sv[u] = 0.0f;
					if (on[u])
#pragma unroll
						for (int i = 0; i < 8; i++)
							sv[u] = fmaf(qv[i], kf[u][i], sv[u]);
				}
				for (int o = LK / 2; o > 0; o >>= 1)
#pragma unroll
					for (int u = 0; u < DU; u++)
						sv[u] += __shfl_xor_sync(0xffffffffu, sv[u], o);
				const int64_t last = (int64_t)d.pos + d.t0 + (d.R == d.nh ? 0 : r / d.nh); /* the row's last key */
#pragma unroll
				for (int u = 0; u < DU; u++) {
					const int j = j0 + u * ARK_WARPS * KPW + lane / LK;
					if (c8 == 0 && j < nb)
						sc[r * BK + j] = kb + j <= last ? sv[u] : -INFINITY;
				}
			}
		}
		__syncthreads();
		/* the online softmax, a warp per row */
		for (int r = warp; r < RC; r += ARK_WARPS) {
			float mb = -INFINITY;
			for (int j = lane; j < nb; j += 32)
				mb = fmaxf(mb, sc[r * BK + j]);
			mb = ark_warp_max(mb);
			const float mo = rm[r], mn = fmaxf(mo, mb);
			float sum = 0.0f;
			for (int j = lane; j < nb; j += 32) {
				const float pj = mn == -INFINITY ? 0.0f : exp2f(sc[r * BK + j] - mn);
				sc[r * BK + j] = pj;
				sum += pj;
			}
			sum = ark_warp_sum(sum);
			if (lane == 0) {
				const float al = mn == -INFINITY ? 1.0f : exp2f(mo - mn);
				ra[r] = al;
				rl[r] = rl[r] * al + sum;
				rm[r] = mn;
			}
		}
		__syncthreads();
		if (kg < KG) {
#pragma unroll
			for (int r = 0; r < RC; r++)
				acc[r] *= ra[r];
			/* PU keys at a time, their values loaded before any is used */
			for (int j0 = kg; j0 < nb; j0 += PU * KG) {
				float v[PU];
#pragma unroll
				for (int u = 0; u < PU; u++) {
					const int j = j0 + u * KG;
					v[u] = kb == k0 && j0 == kg ? v0[u] /* loaded before q was staged */
					       : j < nb ? ark_to_f(vc[(kb + j) * d.Ekv + dc]) : 0.0f;
				}
#pragma unroll
				for (int u = 0; u < PU; u++) {
					const int j = j0 + u * KG;
					if (j < nb)
#pragma unroll
						for (int r = 0; r < RC; r++)
							acc[r] = fmaf(sc[r * BK + j], v[u], acc[r]);
				}
			}
		}
		__syncthreads();
	}
	if (kg < KG)
#pragma unroll
		for (int r = 0; r < RC; r++)
			if (r < R)
				red[(kg * R + r) * Dh + dc] = acc[r];
	__syncthreads();
	float *ws = reinterpret_cast<float *>(e.arena + p.ws);
	const int W = Dh + 2;
	for (int i = threadIdx.x; i < R * Dh; i += ARK_THREADS) {
		const int r = i / Dh, c = i % Dh;
		int tt, h;
		ark_dec_row(d, r, tt, h);
		float o = 0.0f;
		for (int g = 0; g < KG; g++)
			o += red[(g * R + r) * Dh + c];
		if (d.S <= 1) {
			out[(int64_t)tt * d.E + (int64_t)h * Dh + c] = ark_from_f<T>(rl[r] > 0.0f ? o / rl[r] : 0.0f);
		} else {
			float *w = ws + ((int64_t)kvh * d.TT * d.G + (int64_t)tt * d.G + (h - kvh * d.G)) * ((int64_t)d.S * W) +
				   (int64_t)t.split * W;
			w[c] = o;
			if (c == 0)
				w[Dh] = rm[r], w[Dh + 1] = rl[r];
		}
	}
}

/* The decode tile of head size DH (0: any) for the task's query rows. */
template <typename T, int DH>
__device__ __forceinline__ void ark_decode_rc(const ark_opp &p, const ark_task &t, const ark_tile_env &e, const ark_dec &d,
					      int64_t k0, int64_t kend)
{
	if (d.R <= 1)
		ark_decode_rows<T, 1, DH>(p, t, e, d, k0, kend);
	else if (d.R <= 2)
		ark_decode_rows<T, 2, DH>(p, t, e, d, k0, kend);
	else if (d.R <= 4)
		ark_decode_rows<T, 4, DH>(p, t, e, d, k0, kend);
	else if (d.R <= 8)
		ark_decode_rows<T, 8, DH>(p, t, e, d, k0, kend);
	else
		ark_decode_rows<T, ARK_DEC_ROWS, DH>(p, t, e, d, k0, kend);
}

template <typename T>
__device__ __noinline__ void ark_decode_tile(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
{
	const ark_dec d = ark_dec_geom(p, t, e);
	if (d.bad) {
		ark_tile_fault(e, 1, d.pos); /* a position outside 0..K-1 */
		if (d.S <= 1)
			ark_dec_zero<T>(d, reinterpret_cast<T *>(e.arena + p.out));
		return;
	}
	const int64_t k0 = t.k0, kend = min((int64_t)t.k1, (int64_t)d.pos + d.TT); /* keys this split may use */
	if (k0 >= kend)
		return; /* past the position: no work (the combine reads no split from here on) */
#if ARK_TILES_ATTENTION
	if constexpr (sizeof(T) == 2) {
		/* Many query rows (istride[0][2]: arkgen cuts one head's rows a task, one split, 16-bit;
		 * codegen/tile.c) run on the attention tile's tensor cores: row r (t = t0 + r, at position
		 * pos + t) sees keys 0..pos + t, its causal diagonal shifted by pos + t0. The DECODE tile
		 * takes ~7 us a row for 552 keys, the attention tile ~1.3 (bench/NOTES.md). */
		if (p.istride[0][2]) {
			if (d.nh != 1 || d.S != 1 || d.Dh > 128) {
				if (threadIdx.x == 0)
					printf("ark: a decode_attention task for the attention tile of %d heads, %d splits\n", d.nh, d.S);
				__trap();
			}
			const int h = d.h0, kvh = h / d.G;
			ark_att a;
			a.q = e.arena + p.in[0] + ((size_t)d.t0 * d.E + (size_t)h * d.Dh) * sizeof(T);
			a.k = e.arena + p.in[1] + (size_t)kvh * d.Dh * sizeof(T);
			a.v = e.arena + p.in[2] + (size_t)kvh * d.Dh * sizeof(T);
			a.mask = nullptr, a.mask0 = 0, a.mask_dt = 0;
			a.out = e.arena + p.out + ((size_t)d.t0 * d.E + (size_t)h * d.Dh) * sizeof(T);
			a.rows = (int)(t.m1 - t.m0);
			a.Dh = d.Dh, a.E = (int)d.E, a.Ekv = (int)d.Ekv;
			a.kend = (int)min(kend, (int64_t)d.pos + (int64_t)t.m1);
			a.shift = d.pos + d.t0;
			a.scale2 = p.f * ARK_ATT_LOG2E;
			if (d.Dh <= 32)
				ark_att_mma<T, 32>(a, e.smem);
			else if (d.Dh <= 64)
				ark_att_mma<T, 64>(a, e.smem);
			else
				ark_att_mma<T, 128>(a, e.smem);
			return;
		}
	}
#endif
	if (d.Dh == 64)
		ark_decode_rc<T, 64>(p, t, e, d, k0, kend);
	else if (d.Dh == 128)
		ark_decode_rc<T, 128>(p, t, e, d, k0, kend);
	else
		ark_decode_rc<T, 0>(p, t, e, d, k0, kend);
}

/* The combine of head size DH (0: any, read from the op; see ark_decode_rows). */
template <typename T, int DH>
__device__ __noinline__ void ark_decode_combine_rows(const ark_opp &p, const ark_tile_env &e, const ark_dec d)
{
	T *out = reinterpret_cast<T *>(e.arena + p.out);
	const float *ws = reinterpret_cast<const float *>(e.arena + p.ws);
	const int Dh = DH ? DH : d.Dh, W = Dh + 2, kvh = d.h0 / d.G;
	const int64_t chunk = p.istride[0][1];
	for (int i = threadIdx.x; i < d.R * Dh; i += ARK_THREADS) {
		const int r = i / Dh, c = i % Dh;
		int tt, h;
		ark_dec_row(d, r, tt, h);
		const float *w = ws + ((int64_t)kvh * d.TT * d.G + (int64_t)tt * d.G + (h - kvh * d.G)) * ((int64_t)d.S * W);
		const int ns = (int)min((int64_t)d.S, ((int64_t)d.pos + tt) / chunk + 1);
		float m = -INFINITY;
		for (int s = 0; s < ns; s++)
			m = fmaxf(m, w[s * W + Dh]);
		float l = 0.0f, o = 0.0f;
		for (int s = 0; s < ns; s++) {
			const float f = w[s * W + Dh] == -INFINITY ? 0.0f : exp2f(w[s * W + Dh] - m);
			l = fmaf(w[s * W + Dh + 1], f, l);
			o = fmaf(w[s * W + c], f, o);
		}
		out[(int64_t)tt * d.E + (int64_t)h * Dh + c] = ark_from_f<T>(l > 0.0f ? o / l : 0.0f);
	}
}

/* DECODE_COMBINE: the task's rows (t, h) merge the splits that hold keys of theirs, s * chunk <= pos + t
 * (chunk = istride[0][1]): m = max m_s, l = sum l_s 2^(m_s - m), out = sum o_s 2^(m_s - m) / l. */
template <typename T>
__device__ __forceinline__ void ark_decode_combine_tile(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
{
	const ark_dec d = ark_dec_geom(p, t, e);
	if (d.bad) {
		ark_tile_fault(e, 1, d.pos); /* a position outside 0..K-1 */
		ark_dec_zero<T>(d, reinterpret_cast<T *>(e.arena + p.out));
		return;
	}
	if (d.Dh == 64)
		ark_decode_combine_rows<T, 64>(p, e, d);
	else if (d.Dh == 128)
		ark_decode_combine_rows<T, 128>(p, e, d);
	else
		ark_decode_combine_rows<T, 0>(p, e, d);
}

/* ---- argmax ------------------------------------------------------------------------------------
 * Rows m0:m1 of x [M, N], columns k0:k1: every thread its strided columns in order, then the warps'
 * and the CTA's best (value, index) pairs. A pair wins over another when its value is not NaN and the
 * other has none, or its value is larger, or equal with a smaller index. One split: the index (0 for a
 * row of NaN only) into out (int32 [M]); several: the pair into the workspace [M, 2 * S] (index -1:
 * none), which ARGMAX_COMBINE merges. */
__device__ __forceinline__ bool ark_am_better(float v, int32_t i, float bv, int32_t bi)
{
	return i >= 0 && (bi < 0 || v > bv || (v == bv && i < bi));
}
/* The warp's best pair into every lane's (bv, bi). All 32 lanes. */
__device__ __forceinline__ void ark_am_warp(float &bv, int32_t &bi)
{
	for (int o = 16; o > 0; o >>= 1) {
		const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
		const int32_t oi = __shfl_xor_sync(0xffffffffu, bi, o);
		if (ark_am_better(ov, oi, bv, bi))
			bv = ov, bi = oi;
	}
}

#define ARK_AM_BATCH 8 /* columns a thread loads before it compares them */
template <typename T>
__device__ __forceinline__ void ark_argmax_tile(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
{
	const T *x = reinterpret_cast<const T *>(e.arena + p.in[0]);
	float *sv = reinterpret_cast<float *>(e.smem);                   /* [WARPS] */
	int32_t *si = reinterpret_cast<int32_t *>(e.smem) + ARK_WARPS;   /* [WARPS] */
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	for (uint32_t r = t.m0; r < t.m1; r++) {
		const T *xr = x + (int64_t)r * p.N;
		float bv = 0.0f;
		int32_t bi = -1;
		/* ARK_AM_BATCH loads in flight, then compared in column order: a tie keeps the earlier
		 * index, as one load at a time did (which waited a round trip per column: ~2.4 us a row
		 * of 3491) */
		uint32_t j = t.k0 + threadIdx.x;
		for (; j + (ARK_AM_BATCH - 1) * ARK_THREADS < t.k1; j += ARK_AM_BATCH * ARK_THREADS) {
			float v[ARK_AM_BATCH];
#pragma unroll
			for (int u = 0; u < ARK_AM_BATCH; u++)
				v[u] = ark_to_f(xr[j + u * ARK_THREADS]);
#pragma unroll
			for (int u = 0; u < ARK_AM_BATCH; u++)
				if (v[u] == v[u] && (bi < 0 || v[u] > bv))
					bv = v[u], bi = (int32_t)(j + u * ARK_THREADS);
		}
		for (; j < t.k1; j += ARK_THREADS) {
			const float v = ark_to_f(xr[j]);
			if (v == v && (bi < 0 || v > bv))
				bv = v, bi = (int32_t)j;
		}
		ark_am_warp(bv, bi);
		if (lane == 0)
			sv[warp] = bv, si[warp] = bi;
		__syncthreads();
		if (threadIdx.x == 0) {
			for (int w = 1; w < ARK_WARPS; w++)
				if (ark_am_better(sv[w], si[w], bv, bi))
					bv = sv[w], bi = si[w];
			if (p.splits <= 1) {
				reinterpret_cast<int32_t *>(e.arena + p.out)[r] = bi < 0 ? 0 : bi;
			} else {
				float *w = reinterpret_cast<float *>(e.arena + p.ws) + (int64_t)r * 2 * p.splits + 2 * t.split;
				w[0] = bv;
				reinterpret_cast<int32_t *>(w)[1] = bi;
			}
		}
		__syncthreads();
	}
}

/* ARGMAX_COMBINE: a warp per row of m0:m1, its lanes over the splits' pairs, then the lanes' best by
 * shuffles (the order of a row's largest value, then its smallest index, is total, so any order of
 * the merge gives the same pair). A thread per row, its splits in order, took ~6 us for the 63
 * splits of a vocabulary of 128256: one load after another. */
__device__ __forceinline__ void ark_argmax_combine_tile(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
{
	const float *ws = reinterpret_cast<const float *>(e.arena + p.ws);
	int32_t *out = reinterpret_cast<int32_t *>(e.arena + p.out);
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	for (uint32_t r = t.m0 + warp; r < t.m1; r += ARK_WARPS) {
		const float *w = ws + (int64_t)r * 2 * p.splits;
		float bv = 0.0f;
		int32_t bi = -1;
		for (uint32_t s = lane; s < p.splits; s += 32) {
			const float v = w[2 * s];
			const int32_t i = reinterpret_cast<const int32_t *>(w)[2 * s + 1];
			if (ark_am_better(v, i, bv, bi))
				bv = v, bi = i;
		}
		ark_am_warp(bv, bi);
		if (lane == 0)
			out[r] = bi < 0 ? 0 : bi;
	}
}

/* The templates of this file, as TMPL_CATALOG names them. */
struct ark_tile_rope {
	static constexpr bool per_dtype = true;
	template <typename T>
	static __device__ __forceinline__ void run(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
	{
		ark_rope_tile<T>(p, t, e);
	}
};
struct ark_tile_decode {
	static constexpr bool per_dtype = true;
	template <typename T>
	static __device__ __forceinline__ void run(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
	{
		ark_decode_tile<T>(p, t, e);
	}
};
struct ark_tile_decode_combine {
	static constexpr bool per_dtype = true;
	template <typename T>
	static __device__ __forceinline__ void run(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
	{
		ark_decode_combine_tile<T>(p, t, e);
	}
};
struct ark_tile_argmax {
	static constexpr bool per_dtype = true;
	template <typename T>
	static __device__ __forceinline__ void run(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
	{
		ark_argmax_tile<T>(p, t, e);
	}
};
struct ark_tile_argmax_combine {
	static constexpr bool per_dtype = false;
	static __device__ __forceinline__ void run(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
	{
		ark_argmax_combine_tile(p, t, e);
	}
};

static_assert(ARK_DEC_ROWS * 128 * 4 + ARK_DEC_ROWS * ARK_DEC_BK * 4 + 3 * ARK_DEC_ROWS * 4 +
			      ARK_THREADS * ARK_DEC_ROWS * 4 <= ARK_SMEM_DECODE,
	      "decode: no room for q, the scores and the key groups' sums");

#else
#define ARK_DEC_LEFT_OUT_(name)                                                                                \
	struct name {                                                                                          \
		static constexpr bool per_dtype = false;                                                       \
		static __device__ __forceinline__ void run(const ark_opp &, const ark_task &, const ark_tile_env &) {} \
	};                                                                                                     \
	template <> constexpr bool ark_tile_left_out<name> = true;
ARK_DEC_LEFT_OUT_(ark_tile_rope)
ARK_DEC_LEFT_OUT_(ark_tile_decode)
ARK_DEC_LEFT_OUT_(ark_tile_decode_combine)
ARK_DEC_LEFT_OUT_(ark_tile_argmax)
ARK_DEC_LEFT_OUT_(ark_tile_argmax_combine)
#undef ARK_DEC_LEFT_OUT_
#endif

#endif
