// op_attention.cuh: ATTENTION tiles: out = softmax(q.k^T * scale + mask) v for one (batch, head, block of query rows), flash style.
#ifndef OP_ATTENTION_CUH
#define OP_ATTENTION_CUH

#include "ark_dtype.cuh"
#include "ark_smem.h"    /* ARK_SMEM_ATTENTION, ARK_ATT_LD */
#include "op_matmul.cuh" /* ark_ldsm_x4, ark_ldsm_x4_t, ark_mma16816 */

/* A task is query rows m0:m1 of out viewed as [B*Sq, H*Dh] (within one batch b) and head h's columns
 * n0:n1; it reads keys 0:k1 of its kv head (k1 < Skv where causal hides the rest). The keys stream
 * through shared memory in blocks; each row keeps a running max m, sum l and output o (the online
 * softmax, fp32), so no [Sq, Skv] matrix is ever stored. Scores are taken in base 2: s * scale *
 * log2(e), exp2. A key counts for query row i (0-based in its batch) when it is < k1, its mask flag
 * is nonzero and, with causal, j <= i + Skv - Sq; a row that may attend to no key outputs zeros.
 *
 *  mma   fp16/bf16: the head padded to DP = 32, 64 or 128 columns (zeros). Warps are R row groups
 *        of 16 rows x G key groups (R * G = 8, R the power of 2 that covers the rows): each warp runs
 *        its own online softmax over its keys of every block, 16 at a time: S = Q.K^T by
 *        ldmatrix + mma.sync.m16n8k16, P from S's registers as the A operand of P.V (mma again),
 *        fp32 sums. The G partial results of a row group are merged through shared memory, then
 *        stored with coalesced writes.
 *  simt  fp32: a warp per row at a time (rows spread over the warps), blocks of 32 keys, a key
 *        per lane for the scores, the head's columns spread over the lanes for P.V. */

/* ARK_TILES_ATTENTION 1: the attention tiles are built. Unlike the dtypes, off unless asked for: a
 * generated file whose model has attention says 1 (the others stay byte-identical and their loop
 * kernels carry none of its code, which costs registers and stack wherever it is compiled in, as the
 * mma path did: bench/NOTES.md); a build without it traps on an attention task (ark_tile: false). */
#ifndef ARK_TILES_ATTENTION
#define ARK_TILES_ATTENTION 0
#endif

#if ARK_TILES_ATTENTION
static_assert(ARK_WARPS >= 8, "the attention template needs at least 256 threads");
#define ARK_ATT_LOG2E 1.4426950408889634f

/* One attention tile's operands and geometry. */
struct ark_att {
	const char *q, *k, *v; /* q + row m0, column h*Dh: [rows][E]; k, v + batch b, kv head: [Skv][Ekv] */
	const char *mask;      /* [B, Skv] of mask_dt, or null; batch b's flags from element mask0 */
	int64_t mask0;
	char *out;             /* + row m0, column h*Dh: [rows][E] */
	int mask_dt;           /* enum ark_dtype of the mask */
	int rows, Dh, E, Ekv;  /* query rows of the tile, head size, row widths of q/out and k/v */
	int kend;              /* keys 0:kend may count */
	int shift;             /* causal: key j counts for tile row r iff j <= r + shift; INT_MAX: no limit */
	float scale2;          /* scale * log2(e) */
};

/* Mask element j, as a float, whatever the mask's dtype. */
__device__ __forceinline__ float ark_att_mask_at(const char *m, int dt, int64_t j)
{
	switch (dt) {
	case ARK_FP16: return ark_dt<__half>::to_f(reinterpret_cast<const __half *>(m)[j]);
	case ARK_BF16: return ark_dt<__nv_bfloat16>::to_f(reinterpret_cast<const __nv_bfloat16 *>(m)[j]);
	case ARK_INT32: return ark_dt<int32_t>::to_f(reinterpret_cast<const int32_t *>(m)[j]);
	default: return ark_dt<float>::to_f(reinterpret_cast<const float *>(m)[j]);
	}
}

/* Whether key kb0 + j may count at all (before causal): 1.0f or 0.0f into fl[0:n]. */
__device__ __forceinline__ void ark_att_flags(const ark_att &a, int kb0, int n, float *fl)
{
	for (int j = threadIdx.x; j < n; j += ARK_THREADS) {
		const int key = kb0 + j;
		fl[j] = key < a.kend && (!a.mask || ark_att_mask_at(a.mask, a.mask_dt, a.mask0 + key) != 0.0f) ? 1.0f : 0.0f;
	}
}

/* ---- tensor cores ----------------------------------------------------------------------------- */

/* rows n of src [n rows][ld_src] (16-bit, Dh columns) into dst [nr][LD] (nr >= n), zeros elsewhere
 * up to DP columns and nr rows. Aligned rows go by cp.async, left in flight: the caller commits and
 * waits (so Q, K and V of a block are one round trip to memory); others by loads and stores. */
template <typename T, int DP>
__device__ __forceinline__ void ark_att_stage(T *dst, const char *src, int64_t ld_src, int n, int nr, int Dh)
{
	constexpr int LD = DP + 8, CH = DP / 8; /* 16-byte chunks per row */
	const uint16_t *s = reinterpret_cast<const uint16_t *>(src); /* the elements' bits */
	const bool vec = ark_aligned16(s) && ld_src % 8 == 0;
	const uint32_t d0 = (uint32_t)__cvta_generic_to_shared(dst);
	for (int i = threadIdx.x; i < nr * CH; i += ARK_THREADS) {
		const int r = i / CH, c = (i % CH) * 8;
		const bool in = r < n && c < Dh; /* Dh % 8 == 0: a chunk is wholly inside the head or wholly out */
		if (vec) {
			ark_cp_async16s(d0 + (uint32_t)(r * LD + c) * 2u, in ? s + r * ld_src + c : s, in ? 16 : 0);
			continue;
		}
		uint4 x = make_uint4(0, 0, 0, 0);
		if (in) {
			const uint16_t *e = s + r * ld_src + c;
			x = make_uint4(e[0] | (uint32_t)e[1] << 16, e[2] | (uint32_t)e[3] << 16,
				       e[4] | (uint32_t)e[5] << 16, e[6] | (uint32_t)e[7] << 16);
		}
		ark_st16(dst + r * LD + c, x);
	}
}

template <typename T, int DP>
__device__ __noinline__ void ark_att_mma(const ark_att a, char *smem)
{
	constexpr int LD = DP + 8, NT = DP / 8; /* n-tiles of 8 columns of the head */
	const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
	int R = 1; /* row groups: a power of 2 covering the rows */
	while (R * 16 < a.rows)
		R *= 2;
	/* keys per block (all 128 that K and V have room for once there are more than 64: one round trip
	 * for a sequence of up to 128), per warp */
	const int G = 8 / R, BK = a.kend > 64 ? 128 : G * 16 > 64 ? G * 16 : 64, KW = BK / G;
	const int rg = warp % R, kg = warp / R;
	T *qs = reinterpret_cast<T *>(smem);   /* [128][LD] */
	T *ks = qs + 128 * LD;                  /* [BK <= 128][LD] */
	T *vs = ks + 128 * LD;                  /* [BK][LD] */
	float *fl = reinterpret_cast<float *>(vs + 128 * LD); /* [BK] */
	ark_att_stage<T, DP>(qs, a.q, a.E, a.rows, R * 16, a.Dh);

	float o[NT][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
#pragma unroll
	for (int nt = 0; nt < NT; nt++)
		o[nt][0] = o[nt][1] = o[nt][2] = o[nt][3] = 0.0f;
	const int r_lo = rg * 16 + (lane >> 2); /* this thread's rows: r_lo and r_lo + 8 */
	const bool computes = warp < 8;

	for (int kb0 = 0; kb0 < a.kend; kb0 += BK) {
		const int nk = a.kend - kb0 < BK ? a.kend - kb0 : BK;
		const int nr = (nk + 15) & ~15; /* the rows the mma steps read: zeros past nk */
		__syncthreads(); /* the previous block's K and V are no longer read */
		ark_att_stage<T, DP>(ks, a.k + (size_t)kb0 * a.Ekv * sizeof(T), a.Ekv, nk, nr, a.Dh);
		ark_att_stage<T, DP>(vs, a.v + (size_t)kb0 * a.Ekv * sizeof(T), a.Ekv, nk, nr, a.Dh);
		ark_cp_commit(); /* with Q's copies on the first block */
		ark_att_flags(a, kb0, BK, fl);
		ark_cp_wait<0>();
		__syncthreads();
		if (!computes)
			continue;
		for (int kk = kg * KW; kk < kg * KW + KW && kk < nk; kk += 16) {
			/* S (16 rows x 16 keys kk:kk+16) = Q . K^T: two n-tiles of 8 keys */
			float sc[2][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}};
#pragma unroll
			for (int d = 0; d < DP; d += 16) {
				uint32_t af[4], r[4];
				ark_ldsm_x4(af, qs + (rg * 16 + (lane & 15)) * LD + d + (lane >> 4) * 8);
				ark_ldsm_x4(r, ks + (kk + (lane & 7) + (lane >> 4) * 8) * LD + d + ((lane >> 3) & 1) * 8);
				const uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
				ark_mma16816<T>(sc[0], af, b0);
				ark_mma16816<T>(sc[1], af, b1);
			}
			/* scale, mask, row max over the quad that holds a row */
			float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
			for (int nt = 0; nt < 2; nt++)
#pragma unroll
				for (int e = 0; e < 4; e++) {
					const int j = kk + nt * 8 + (lane & 3) * 2 + (e & 1), r = r_lo + (e >> 1) * 8;
					const bool ok = fl[j] != 0.0f && kb0 + j <= r + a.shift;
					sc[nt][e] = ok ? sc[nt][e] * a.scale2 : -INFINITY;
					mx[e >> 1] = fmaxf(mx[e >> 1], sc[nt][e]);
				}
			float alpha[2], base[2];
#pragma unroll
			for (int h = 0; h < 2; h++) {
				mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 1));
				mx[h] = fmaxf(mx[h], __shfl_xor_sync(0xffffffffu, mx[h], 2));
				const float mn = fmaxf(m[h], mx[h]);
				base[h] = mn == -INFINITY ? 0.0f : mn; /* no key yet: exp2(-inf - 0) = 0 */
				alpha[h] = exp2f(m[h] - base[h]);
				m[h] = mn;
				l[h] *= alpha[h];
			}
			uint32_t pa[4]; /* P as the A operand: rows r_lo / r_lo + 8, keys of n-tile 0 then 1 */
#pragma unroll
			for (int nt = 0; nt < 2; nt++) {
				float p[4];
#pragma unroll
				for (int e = 0; e < 4; e++) {
					p[e] = exp2f(sc[nt][e] - base[e >> 1]);
					l[e >> 1] += p[e];
				}
				pa[2 * nt] = ark_pack2<T>(p[0], p[1]);
				pa[2 * nt + 1] = ark_pack2<T>(p[2], p[3]);
			}
#pragma unroll
			for (int nt = 0; nt < NT; nt++) {
				o[nt][0] *= alpha[0], o[nt][1] *= alpha[0];
				o[nt][2] *= alpha[1], o[nt][3] *= alpha[1];
			}
			/* O += P . V (keys kk:kk+16 x the head's columns), V row-major: ldmatrix .trans */
#pragma unroll
			for (int dn = 0; dn < DP; dn += 16) {
				uint32_t r[4];
				ark_ldsm_x4_t(r, vs + (kk + (lane & 7) + ((lane >> 3) & 1) * 8) * LD + dn + (lane >> 4) * 8);
				const uint32_t b0[2] = {r[0], r[1]}, b1[2] = {r[2], r[3]};
				ark_mma16816<T>(o[dn / 8], pa, b0);
				ark_mma16816<T>(o[dn / 8 + 1], pa, b1);
			}
		}
	}

	/* the G partial results of each row group, merged: slot w = (rows of group rg, keys of group kg) */
	__syncthreads(); /* Q, K, V no longer read: their space holds the slots */
	constexpr int LO = DP + 4;
	float *os = reinterpret_cast<float *>(smem); /* [8][16][LO] */
	float *ms = os + 8 * 16 * LO;                /* [8][16] */
	float *ls = ms + 8 * 16;                     /* [8][16] */
	if (computes) {
#pragma unroll
		for (int h = 0; h < 2; h++) {
			l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
			l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
		}
		const int rr = lane >> 2;
#pragma unroll
		for (int nt = 0; nt < NT; nt++) {
			const int c = nt * 8 + (lane & 3) * 2;
			os[(warp * 16 + rr) * LO + c] = o[nt][0];
			os[(warp * 16 + rr) * LO + c + 1] = o[nt][1];
			os[(warp * 16 + rr + 8) * LO + c] = o[nt][2];
			os[(warp * 16 + rr + 8) * LO + c + 1] = o[nt][3];
		}
		if ((lane & 3) == 0) {
			ms[warp * 16 + rr] = m[0], ms[warp * 16 + rr + 8] = m[1];
			ls[warp * 16 + rr] = l[0], ls[warp * 16 + rr + 8] = l[1];
		}
	}
	__syncthreads();
	T *out = reinterpret_cast<T *>(a.out);
	for (int i = threadIdx.x; i < a.rows * a.Dh; i += ARK_THREADS) {
		const int r = i / a.Dh, d = i % a.Dh, g0 = r / 16, rr = r % 16;
		float mx = -INFINITY;
		for (int g = 0; g < G; g++)
			mx = fmaxf(mx, ms[(g * R + g0) * 16 + rr]);
		float sum = 0.0f, acc = 0.0f;
		if (mx != -INFINITY)
			for (int g = 0; g < G; g++) {
				const int w = g * R + g0;
				const float f = exp2f(ms[w * 16 + rr] - mx); /* a slot without keys: exp2(-inf) = 0 */
				sum += ls[w * 16 + rr] * f;
				acc += os[(w * 16 + rr) * LO + d] * f;
			}
		out[(size_t)r * a.E + d] = ark_from_f<T>(sum > 0.0f ? acc / sum : 0.0f);
	}
	__syncthreads(); /* shared memory free for the next task */
}

/* ---- SIMT (fp32) -------------------------------------------------------------------------------- */

/* DM: the head's columns per lane (Dh <= 32 * DM). */
template <int DM>
__device__ __noinline__ void ark_att_simt(const ark_att a, char *smem)
{
	constexpr int BK = 32, RW = 128 / 8; /* keys per block; rows per warp at most */
	const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, Dh = a.Dh, LK = Dh + 1, LV = 32 * DM;
	float *qs = reinterpret_cast<float *>(smem); /* [rows][Dh], scaled by scale * log2(e) */
	float *ks = qs + 128 * 128;                   /* [BK][Dh + 1] */
	float *vs = ks + BK * 129;                    /* [BK][32 * DM], zeros past Dh */
	float *fl = vs + BK * 128;                    /* [BK] */
	const float *q = reinterpret_cast<const float *>(a.q);
	for (int i = threadIdx.x; i < a.rows * Dh; i += ARK_THREADS)
		qs[i] = q[(size_t)(i / Dh) * a.E + i % Dh] * a.scale2;

	float o[RW][DM], m[RW], l[RW];
#pragma unroll
	for (int i = 0; i < RW; i++) {
		m[i] = -INFINITY, l[i] = 0.0f;
#pragma unroll
		for (int c = 0; c < DM; c++)
			o[i][c] = 0.0f;
	}
	const bool computes = warp < 8;
	/* rows of 16-byte vectors: a block's keys and values come as float4, four of each a thread in
	 * flight (one scalar load at a time left every element a memory round trip: 319 us for 32 rows x
	 * 552 keys, bench/NOTES.md); the value columns past Dh are zeros once for all blocks */
	const bool v4 = Dh % 4 == 0 && a.Ekv % 4 == 0 && ark_aligned16(a.k) && ark_aligned16(a.v);
	if (v4 && Dh < LV)
		for (int i = threadIdx.x; i < BK * (LV - Dh); i += ARK_THREADS)
			vs[(i / (LV - Dh)) * LV + Dh + i % (LV - Dh)] = 0.0f;
	for (int kb0 = 0; kb0 < a.kend; kb0 += BK) {
		const int nk = a.kend - kb0 < BK ? a.kend - kb0 : BK;
		__syncthreads(); /* the previous block is no longer read (and qs is written) */
		const float *k = reinterpret_cast<const float *>(a.k) + (size_t)kb0 * a.Ekv;
		const float *v = reinterpret_cast<const float *>(a.v) + (size_t)kb0 * a.Ekv;
		if (v4) {
			const int dv = Dh / 4, n4 = BK * dv;
			for (int i0 = threadIdx.x; i0 < n4; i0 += 4 * ARK_THREADS) {
				float4 kr[4], vr[4];
#pragma unroll
				for (int u = 0; u < 4; u++) {
					const int i = i0 + u * ARK_THREADS, j = i / dv, d = (i - j * dv) * 4;
					const bool in = i < n4 && j < nk;
					kr[u] = in ? *reinterpret_cast<const float4 *>(k + (size_t)j * a.Ekv + d) : make_float4(0, 0, 0, 0);
					vr[u] = in ? *reinterpret_cast<const float4 *>(v + (size_t)j * a.Ekv + d) : make_float4(0, 0, 0, 0);
				}
#pragma unroll
				for (int u = 0; u < 4; u++) {
					const int i = i0 + u * ARK_THREADS, j = i / dv, d = (i - j * dv) * 4;
					if (i < n4) {
						float *kd = ks + j * LK + d; /* rows of Dh + 1: not 16-byte aligned */
						kd[0] = kr[u].x, kd[1] = kr[u].y, kd[2] = kr[u].z, kd[3] = kr[u].w;
						*reinterpret_cast<float4 *>(vs + j * LV + d) = vr[u];
					}
				}
			}
		} else {
			for (int i = threadIdx.x; i < BK * LV; i += ARK_THREADS) {
				const int j = i / LV, d = i % LV;
				const bool in = j < nk && d < Dh;
				if (d < Dh)
					ks[j * LK + d] = in ? k[(size_t)j * a.Ekv + d] : 0.0f;
				vs[j * LV + d] = in ? v[(size_t)j * a.Ekv + d] : 0.0f;
			}
		}
		ark_att_flags(a, kb0, BK, fl);
		__syncthreads();
		if (!computes)
			continue;
#pragma unroll
		for (int i = 0; i < RW; i++) {
			const int r = warp + 8 * i;
			if (r >= a.rows)
				break;
			float s = 0.0f; /* this lane's key: kb0 + lane */
			for (int d = 0; d < Dh; d++)
				s += qs[r * Dh + d] * ks[lane * LK + d];
			const bool ok = fl[lane] != 0.0f && kb0 + lane <= r + a.shift;
			s = ok ? s : -INFINITY;
			const float mn = fmaxf(m[i], ark_warp_max(s));
			const float base = mn == -INFINITY ? 0.0f : mn;
			const float alpha = exp2f(m[i] - base), p = exp2f(s - base);
			m[i] = mn;
			l[i] = l[i] * alpha + ark_warp_sum(p);
#pragma unroll
			for (int c = 0; c < DM; c++)
				o[i][c] *= alpha;
			for (int j = 0; j < nk; j++) {
				const float pj = __shfl_sync(0xffffffffu, p, j);
#pragma unroll
				for (int c = 0; c < DM; c++)
					o[i][c] += pj * vs[j * LV + lane + 32 * c];
			}
		}
	}
	if (computes) {
		float *out = reinterpret_cast<float *>(a.out);
#pragma unroll
		for (int i = 0; i < RW; i++) {
			const int r = warp + 8 * i;
			if (r >= a.rows)
				break;
#pragma unroll
			for (int c = 0; c < DM; c++) {
				const int d = lane + 32 * c;
				if (d < Dh)
					out[(size_t)r * a.E + d] = l[i] > 0.0f ? o[i][c] / l[i] : 0.0f;
			}
		}
	}
	__syncthreads(); /* shared memory free for the next task */
}

/* Task t of attention p (struct ark_opp's ATTENTION fields). */
template <typename T>
__device__ __noinline__ void ark_attention_tile(const ark_opp &p, const ark_task &t, char *arena, char *smem)
{
	const int Sq = (int)p.M, Skv = (int)p.K, E = (int)p.N, H = (int)p.oshape[1], Hkv = (int)p.oshape[2];
	const int Dh = (int)p.oshape[3], Ekv = Hkv * Dh;
	const int b = (int)(t.m0 / (uint32_t)Sq), i0 = (int)t.m0 - b * Sq, h = (int)(t.n0 / (uint32_t)Dh);
	const int kvh = h / (H / Hkv);
	ark_att a;
	a.q = arena + p.in[0] + ((size_t)t.m0 * E + (size_t)h * Dh) * sizeof(T);
	a.k = arena + p.in[1] + ((size_t)b * Skv * Ekv + (size_t)kvh * Dh) * sizeof(T);
	a.v = arena + p.in[2] + ((size_t)b * Skv * Ekv + (size_t)kvh * Dh) * sizeof(T);
	a.mask_dt = (int)p.istride[0][0];
	a.mask = p.flags & ARK_OPP_MASK ? arena + p.ws : nullptr;
	a.mask0 = (int64_t)b * Skv;
	a.out = arena + p.out + ((size_t)t.m0 * E + (size_t)h * Dh) * sizeof(T);
	a.rows = (int)(t.m1 - t.m0);
	a.Dh = Dh, a.E = E, a.Ekv = Ekv;
	a.kend = (int)t.k1;
	a.shift = p.flags & ARK_OPP_CAUSAL ? i0 + Skv - Sq : 0x7fffffff - 256;
	a.scale2 = p.f * ARK_ATT_LOG2E;
	if constexpr (sizeof(T) == 2) {
		if (Dh <= 32)
			ark_att_mma<T, 32>(a, smem);
		else if (Dh <= 64)
			ark_att_mma<T, 64>(a, smem);
		else
			ark_att_mma<T, 128>(a, smem);
	} else {
		if (Dh <= 32)
			ark_att_simt<1>(a, smem);
		else if (Dh <= 64)
			ark_att_simt<2>(a, smem);
		else
			ark_att_simt<4>(a, smem);
	}
}

struct ark_tile_attention {
	static constexpr bool per_dtype = true;
	template <typename T>
	static __device__ __forceinline__ void run(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
	{
		ark_attention_tile<T>(p, t, e.arena, e.smem);
	}
};

#else
struct ark_tile_attention {
	static constexpr bool per_dtype = false;
	static __device__ __forceinline__ void run(const ark_opp &, const ark_task &, const ark_tile_env &) {}
};
template <> constexpr bool ark_tile_left_out<ark_tile_attention> = true;
#endif

static_assert(128 * ARK_ATT_LD * 2 * 3 + 128 * 4 <= ARK_SMEM_ATTENTION, "attention (mma): no room for Q, K, V");
static_assert(8 * 16 * (128 + 4) * 4 + 2 * 8 * 16 * 4 <= ARK_SMEM_ATTENTION, "attention (mma): no room for the merge");
static_assert((128 * 128 + 32 * 129 + 32 * 128 + 32) * 4 <= ARK_SMEM_ATTENTION, "attention (simt): no room");

#endif
