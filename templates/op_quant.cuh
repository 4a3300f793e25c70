// op_quant.cuh: block-quantized weights (q4_1, q8_0) on the device: matmul tiles that dequantise b inside the weight-streaming loop, embedding rows of a quantized table, and dequantize tiles (a weight to fp16, bf16 or fp32).
#ifndef OP_QUANT_CUH
#define OP_QUANT_CUH

#include "ark_dtype.cuh"
#include "ark_smem.h"

/* ARK_TILES_QUANT 1: the quantized paths are built. Off unless asked for, as attention is: arkgen
 * says it only in the files of models with a q4_1 or q8_0 weight, so that every other model's loop
 * kernel keeps the code (and registers) it had. A task that needs them in a build without them traps. */
#ifndef ARK_TILES_QUANT
#define ARK_TILES_QUANT 0
#endif

/* The blocks (ark_model.h): 32 elements along K each.
 *   q4_1: fp16 d, fp16 m, 16 bytes (byte j: element j low nibble, j + 16 high nibble): 20 bytes
 *   q8_0: fp16 d, 32 int8: 34 bytes
 * Element values: q4_1 d * q + m, q8_0 d * q. */
template <int QT> struct ark_qblk;
template <> struct ark_qblk<ARK_Q4_1> {
	static constexpr int bytes = 20;
};
template <> struct ark_qblk<ARK_Q8_0> {
	static constexpr int bytes = 34;
};

/* An EMBEDDING task's rows m0:m1 in chunks of up to ARK_THREADS rows: each chunk's ids into sid
 * (shared memory, ARK_SMEM_EMBEDDING), one load a thread, checked by one barrier (thread 0 records
 * the first id outside 0..K-1 as the fault, ark_tile_fault), then rows(sid, c0, nr) gathers the
 * chunk's rows c0 : c0 + nr, all of them at once (a row at a time, its id read first, took two
 * round trips to memory a row: bench/NOTES.md). All threads. */
template <typename F>
__device__ __forceinline__ void ark_emb_chunks(const ark_opp &p, uint32_t m0, uint32_t m1, const ark_tile_env &e, F &&rows)
{
	const int32_t *ids = reinterpret_cast<const int32_t *>(e.arena + p.in[0]);
	int32_t *sid = reinterpret_cast<int32_t *>(e.smem);
	for (uint32_t c0 = m0; c0 < m1; c0 += ARK_THREADS) { /* uniform */
		const uint32_t nr = min(m1 - c0, (uint32_t)ARK_THREADS);
		if (c0 != m0)
			__syncthreads(); /* the last chunk's ids read by all */
		bool bad = false;
		if (threadIdx.x < nr) {
			const int32_t id = ids[c0 + threadIdx.x];
			sid[threadIdx.x] = id;
			bad = id < 0 || (int64_t)id >= p.K;
		}
		if (__syncthreads_or(bad) && threadIdx.x == 0) {
			for (uint32_t r = 0; r < nr; r++)
				if (sid[r] < 0 || (int64_t)sid[r] >= p.K) {
					ark_tile_fault(e, c0 + r + 1, sid[r]);
					break;
				}
		}
		rows(sid, c0, nr);
	}
}

/* The (row, unit) pairs threadIdx.x, threadIdx.x + ARK_THREADS, ... of rows of upr units each: the
 * pair's row r and unit c, stepped to the thread's next pair without a division (an embedding's
 * rows spread over the threads). */
struct ark_row_units {
	uint32_t r, c, dr, dc, upr;
	__device__ __forceinline__ explicit ark_row_units(uint32_t u) : upr(u)
	{
		dr = ARK_THREADS / u, dc = ARK_THREADS - dr * u;
		r = threadIdx.x / u, c = threadIdx.x - r * u;
	}
	__device__ __forceinline__ void next()
	{
		r += dr, c += dc;
		if (c >= upr)
			c -= upr, r++;
	}
};

#if ARK_TILES_QUANT

/* ARK_MMQ_MMA 0: fp16 and bf16 a take the FMA stream (ark_mmq_stream) as fp32 a does. ARK_MMQ_P:
 * blocks of a q4_1 row each warp takes per stage of the tensor-core stream (q8_0: half as many): 8
 * streamed q4_1 at 1.1x and q8_0 at 1.15x the rate of 4 (bench/NOTES.md). */
#ifndef ARK_MMQ_MMA
#define ARK_MMQ_MMA 1
#endif
#ifndef ARK_MMQ_P
#define ARK_MMQ_P 8
#endif

__device__ __forceinline__ uint32_t ark_q_lds32(uint32_t a)
{
	uint32_t v;
	asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(a) : "memory");
	return v;
}
__device__ __forceinline__ uint4 ark_q_lds128u(uint32_t a)
{
	uint4 v;
	asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(a) : "memory");
	return v;
}
__device__ __forceinline__ float4 ark_q_lds128(uint32_t a)
{
	const uint4 v = ark_q_lds128u(a);
	return make_float4(__uint_as_float(v.x), __uint_as_float(v.y), __uint_as_float(v.z), __uint_as_float(v.w));
}
__device__ __forceinline__ float ark_q_h2f(uint32_t h) { return __half2float(__ushort_as_half((unsigned short)(h & 0xffffu))); }

/* The four bytes of w as floats, exactly: 0x4B0000xx is 2^23 + xx, so one byte permute and one
 * subtraction per element (no integer-to-float conversion, which runs at a quarter of the rate). */
__device__ __forceinline__ void ark_q_bytes_f(uint32_t w, float bias, float *f)
{
	f[0] = __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7440)) - bias;
	f[1] = __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7441)) - bias;
	f[2] = __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7442)) - bias;
	f[3] = __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7443)) - bias;
}

/* One block at shared-window address o (q4_1: o % 4 == 0; q8_0: o % 2 == 0) as 32 floats q[e] and
 * its scale d and minimum mn (0 for q8_0): element e is d * q[e] + mn. */
template <int QT> __device__ __forceinline__ void ark_q_decode(uint32_t o, float (&q)[32], float &d, float &mn)
{
	if constexpr (QT == ARK_Q4_1) {
		const uint32_t w0 = ark_q_lds32(o);
		d = ark_q_h2f(w0), mn = ark_q_h2f(w0 >> 16);
#pragma unroll
		for (int i = 0; i < 4; i++) {
			const uint32_t w = ark_q_lds32(o + 4 + 4 * i);
			ark_q_bytes_f(w & 0x0f0f0f0fu, 8388608.0f, &q[4 * i]);
			ark_q_bytes_f((w >> 4) & 0x0f0f0f0fu, 8388608.0f, &q[16 + 4 * i]);
		}
	} else {
		/* the 9 words that hold the block: d is the low half of the first (o % 4 == 0) or its high
		 * half (o % 4 == 2); the 32 int8 follow d, the word boundaries 2 or 0 bytes into them */
		const uint32_t base = o & ~3u, hi = (o & 2u) * 8u; /* 0 or 16 */
		uint32_t w[9];
#pragma unroll
		for (int i = 0; i < 9; i++)
			w[i] = ark_q_lds32(base + 4 * i);
		d = ark_q_h2f(w[0] >> hi), mn = 0.0f;
#pragma unroll
		for (int i = 0; i < 8; i++) /* bytes 2 + 4i .. 5 + 4i of the block, each q + 128 */
			ark_q_bytes_f(__funnelshift_rc(w[i], w[i + 1], 16u + hi) ^ 0x80808080u, 8388736.0f, &q[4 * i]);
	}
}

/* The tile's sums, sacc [rows][tn], into out (bias, activation, residual) or the split's workspace,
 * once every warp has added its own. All threads. */
template <typename T>
__device__ __forceinline__ void ark_mmq_out(const ark_mm &g, int m0, int n0, int rows, int tn, const float *sacc)
{
	__syncthreads();
	for (int o = threadIdx.x; o < rows * tn; o += ARK_THREADS) {
		const int m = o / tn, c = o - m * tn;
		ark_mm_store<T>(g, m0 + m, n0 + c, sacc[o]);
	}
	__syncthreads();
}

/* ---- streaming with dequantisation: b [N, K] in blocks ----------------------------------------
 * The path of fp32 a (fp16 and bf16 a take ark_mmq_mma below, unless ARK_MMQ_MMA is 0; their
 * instances of this one spilled registers in every row count, bench/NOTES.md).
 * tile (m1-m0 <= MB, n1-n0 <= 128) of out over k0:k1 (multiples of 32). K is cut into chunks of a,
 * staged as fp32 [MB][NBC][36] (a block of 32 elements, its sum at 32, padded so that lanes 36
 * floats apart read 16-byte vectors without bank conflicts). A step of a warp is one row of b
 * (column of out) and up to 32 consecutive blocks of it: the bytes of those blocks, contiguous,
 * go by 16-byte cp.async from the 16-byte boundary below them into a per-warp ring of S slots
 * (S - 1 steps in flight), then lane l dequantises block l of the step from shared memory and
 * takes it against the MB rows of a: sum_e a[e] (d q[e] + m) = d sum_e a[e] q[e] + m sum_e a[e].
 * A warp walks a contiguous range of the chunk's steps, summing its lanes into sacc [MB][tn] when the
 * column changes: up to 2 rows in the order (block group, column), the lanes keeping their blocks of
 * a in registers while the group stays (each step's sum is one column's), more rows in the order
 * (column, block group), a read from shared memory. The dot product of a block runs in 4 partial
 * sums (4 independent FMA chains). Needs b 16-byte aligned (every arena tensor is). */
template <typename T, int MB, int QT>
__device__ __noinline__ void ark_mmq_stream(const ark_mm_at at, int m0, int m1, int n0, int n1, int k0, int k1, char *smem)
{
	const ark_mm g = ark_mm_of(at);
	constexpr int BB = ark_qblk<QT>::bytes, VEC = ark_dt<T>::vec;
	constexpr int SLOT = ((32 * BB + 15) / 16 + 1) * 16;            /* bytes of 32 blocks + alignment */
	constexpr int S = ARK_MM_RING_BYTES / ARK_WARPS / SLOT;         /* ring slots per warp */
	constexpr int LDB = 36;                                         /* floats per staged block of a */
	constexpr int NBC = ARK_MM_A_BYTES / (MB * LDB * 4);            /* blocks of a per chunk */
	static_assert(S >= 3, "ARK_MM_RING_BYTES too small for the quantized stream");
	static_assert(NBC >= 1, "ARK_MM_A_BYTES too small for the quantized stream");
	static_assert(MB * 128 * 4 <= ARK_MM_SACC_BYTES, "sacc");
	/* up to 2 rows the steps go block group by block group (each warp's lanes keep their blocks of a
	 * in registers across the columns, and sum per step); more rows go column by column (a read from
	 * shared memory, sums per column) */
	constexpr bool REG = MB <= 2;
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
	const uint64_t pol = ark_l2_once(); /* b is read once */
	const int tn = n1 - n0, rows = m1 - m0;
	const int64_t R = g.K / 32 * BB; /* bytes of a row of b */
	const char *b = g.b;
	const T *a = reinterpret_cast<const T *>(g.a);
	char *ring = smem + warp * S * SLOT;                                     /* [S][SLOT] per warp */
	float *a_s = reinterpret_cast<float *>(smem + ARK_MM_RING_BYTES);        /* [MB][NBC][LDB] */
	float *sacc = reinterpret_cast<float *>(smem + ARK_MM_RING_BYTES + ARK_MM_A_BYTES); /* [MB][tn] */
	const uint32_t ring_s = (uint32_t)__cvta_generic_to_shared(ring);
	const uint32_t a_ss = (uint32_t)__cvta_generic_to_shared(a_s);
	const bool avec = ark_aligned16(g.a);
	float *inv = reinterpret_cast<float *>(smem + ARK_MM_RING_BYTES + ARK_MM_A_BYTES + ARK_MM_SACC_BYTES);
	if (g.pre == ARK_PRE_RMSNORM)
		ark_mm_pre_stats<T>(g, m0, m1, inv);

	for (int e = tid; e < MB * tn; e += ARK_THREADS)
		sacc[e] = 0.0f;
	for (int kc0 = k0; kc0 < k1; kc0 += NBC * 32) { /* uniform */
		const int kce = min(kc0 + NBC * 32, k1);
		const int nb = (kce - kc0) / 32;   /* blocks in this chunk */
		const int spc = (nb + 31) / 32;    /* steps per column */
		const int total = tn * spc;
		const int f0 = (int)((int64_t)total * warp / ARK_WARPS), f1 = (int)((int64_t)total * (warp + 1) / ARK_WARPS);
		__syncthreads(); /* a_s of the previous chunk read by all */

		/* step f: column f / spc, blocks [j0, j1) of the row (chunk-relative jc0) */
		auto span = [&](int f, int &c, int &jc0, int &jn, int64_t &off0) {
			if constexpr (REG) { /* block group by block group, every column in each */
				const int g = f / tn;
				c = f - g * tn, jc0 = g * 32;
			} else { /* column by column, every block group of it */
				c = f / spc;
				jc0 = (f - c * spc) * 32;
			}
			jn = min(32, nb - jc0);
			off0 = (int64_t)(n0 + c) * R + (int64_t)(kc0 / 32 + jc0) * BB;
		};
		auto issue = [&](int f) {
			if (f < f1) {
				int c, jc0, jn;
				int64_t off0;
				span(f, c, jc0, jn, off0);
				const int64_t a0 = off0 & ~(int64_t)15, end = off0 + (int64_t)jn * BB;
				const int nv = (int)((end - a0 + 15) / 16);
				char *slot = ring + (f % S) * SLOT;
				for (int v = lane; v < nv; v += 32) {
					const int64_t at = a0 + 16 * (int64_t)v;
					ark_cp_async16_once(slot + 16 * v, b + at, (int)min((int64_t)16, end - at), pol);
				}
			}
			ark_cp_commit();
		};
#pragma unroll 1
		for (int s = 0; s < S - 1; s++)
			issue(f0 + s);

		/* stage a[m0:m1, kc0:kce] as fp32 blocks (rows past m1 zero) while b is in flight: 16-byte
		 * vectors where a is 16-byte aligned (K and kc0 are multiples of 32) */
		for (int u = tid; u < MB * nb * (32 / VEC); u += ARK_THREADS) {
			const int m = u / (nb * (32 / VEC)), r = u - m * (nb * (32 / VEC)), j = r / (32 / VEC), v = r - j * (32 / VEC);
			float x[VEC], y[VEC]; /* y: a fused swiglu's, read with x */
			const T *src = a + (size_t)(m0 + m) * g.astride + kc0 + j * 32 + v * VEC;
			const int kx = kc0 + j * 32 + v * VEC;
			ark_unpack<T>(m < rows ? ark_mm_glu_y<T>(g, m0 + m, kx, kx + VEC) : make_uint4(0, 0, 0, 0), y);
			if (m < rows && avec) {
				ark_unpack<T>(ark_ld16(src), x);
			} else if (m < rows) { /* a view of a that starts off a 16-byte boundary */
#pragma unroll
				for (int i = 0; i < VEC; i++)
					x[i] = ark_to_f(src[i]);
			} else {
#pragma unroll
				for (int i = 0; i < VEC; i++)
					x[i] = 0.0f;
			}
			float *dst = a_s + (m * NBC + j) * LDB + v * VEC;
#pragma unroll
			for (int i = 0; i < VEC; i++)
				dst[i] = m < rows ? ark_mm_pre1<T>(g, inv, m, kx + i, x[i], y[i]) : x[i];
		}
		__syncthreads();
		if constexpr (QT == ARK_Q4_1) { /* each block's sum, for the minimum's term */
			for (int u = tid; u < MB * nb; u += ARK_THREADS) {
				const int m = u / nb, j = u - m * nb;
				float *blk = a_s + (m * NBC + j) * LDB, s = 0.0f;
#pragma unroll
				for (int e = 0; e < 32; e++)
					s += blk[e];
				blk[32] = s;
			}
			__syncthreads();
		}

		float acc[MB];
#pragma unroll
		for (int m = 0; m < MB; m++)
			acc[m] = 0.0f;
		int cur = -1; /* the column acc holds */
		auto flush = [&]() {
#pragma unroll
			for (int m = 0; m < MB; m++) {
				const float x = ark_warp_sum(acc[m]);
				acc[m] = 0.0f;
				if (lane == (m & 31) && m < rows && cur >= 0)
					atomicAdd(&sacc[m * tn + cur], x);
			}
		};
		/* REG: the lane's block of a (and its sum) kept in registers while the block group stays */
		float ar[REG ? MB : 1][REG ? 33 : 1];
		int ar_s = -1; /* the block group ar holds */
		(void)ar, (void)ar_s;
#pragma unroll 1
		for (int f = f0; f < f1; f++) { /* uniform within the warp */
			ark_cp_wait<S - 2>(); /* this lane's copies of step f have landed */
			__syncwarp();         /* ... and every lane's; every lane is done with step f - 1's slot */
			issue(f + S - 1);
			int c, jc0, jn;
			int64_t off0;
			span(f, c, jc0, jn, off0);
			if (c != cur) {
				if (cur >= 0)
					flush();
				cur = c;
			}
			if (lane < jn) {
				float q[32], d, mn;
				ark_q_decode<QT>(ring_s + (uint32_t)((f % S) * SLOT + (int)(off0 & 15) + lane * BB), q, d, mn);
				if constexpr (REG) {
					if (jc0 != ar_s) { /* the same for every lane below jn */
#pragma unroll
						for (int m = 0; m < MB; m++) {
							const uint32_t ab = a_ss + 4u * (uint32_t)((m * NBC + jc0 + lane) * LDB);
#pragma unroll
							for (int e = 0; e < 32; e += 4) {
								const float4 x = ark_q_lds128(ab + 4u * e);
								ar[REG ? m : 0][REG ? e : 0] = x.x, ar[REG ? m : 0][REG ? e + 1 : 0] = x.y;
								ar[REG ? m : 0][REG ? e + 2 : 0] = x.z, ar[REG ? m : 0][REG ? e + 3 : 0] = x.w;
							}
							if constexpr (QT == ARK_Q4_1)
								ar[REG ? m : 0][REG ? 32 : 0] = ark_q_lds128(ab + 4u * 32).x;
						}
					}
				}
#pragma unroll
				for (int m = 0; m < MB; m++) {
					const uint32_t ab = a_ss + 4u * (uint32_t)((m * NBC + jc0 + lane) * LDB);
					float dot[4] = {0.0f, 0.0f, 0.0f, 0.0f}, asum;
#pragma unroll
					for (int e = 0; e < 32; e += 4) {
						float4 x;
						if constexpr (REG)
							x = make_float4(ar[REG ? m : 0][REG ? e : 0], ar[REG ? m : 0][REG ? e + 1 : 0],
									ar[REG ? m : 0][REG ? e + 2 : 0], ar[REG ? m : 0][REG ? e + 3 : 0]);
						else
							x = ark_q_lds128(ab + 4u * e);
						dot[0] = fmaf(x.x, q[e], dot[0]);
						dot[1] = fmaf(x.y, q[e + 1], dot[1]);
						dot[2] = fmaf(x.z, q[e + 2], dot[2]);
						dot[3] = fmaf(x.w, q[e + 3], dot[3]);
					}
					const float dt = (dot[0] + dot[1]) + (dot[2] + dot[3]);
					if constexpr (QT == ARK_Q4_1) {
						if constexpr (REG)
							asum = ar[REG ? m : 0][REG ? 32 : 0];
						else
							asum = ark_q_lds128(ab + 4u * 32).x;
						acc[m] = fmaf(d, dt, fmaf(mn, asum, acc[m]));
					} else {
						(void)asum;
						acc[m] = fmaf(d, dt, acc[m]);
					}
				}
			}
			ar_s = jc0;
		}
		if (cur >= 0)
			flush();
		ark_cp_wait<0>(); /* no copy may land in the ring after the next chunk's */
	}
	ark_mmq_out<T>(g, m0, n0, rows, tn, sacc);
}

/* ---- the same on the tensor cores, for fp16 and bf16 a ------------------------------------------
 * mma.sync m16n8k16 with b's rows (out's columns) as the A operand and a's rows as B, 8 rows of a per
 * fragment (NF fragments: up to 8 or 16 rows). A stage is a group of 16 columns of out by SB = 8 P
 * blocks of K: its 16 runs of SB * BB bytes of b go by 16-byte cp.async (every thread a share) into a
 * ring of S stages for the CTA (S - 1 in flight), run r at r * RS of its slot, RS / 4 = 4 (mod 8)
 * words: the 8 rows a warp reads together start 4 banks apart. Warp w takes the stage's blocks
 * w P .. w P + P, and adds its sums into sacc [rows][tn] when the group changes; one CTA barrier a
 * stage. The stages go group by group.
 * The weights enter the mma exactly: each 4-bit value n becomes the 16-bit float 16 + n (the constant
 * c16 with n in its mantissa: one shift and one LOP3 for two values); q8_0's byte u = q + 128 =
 * 16 h + l becomes 256 + 16 h and 16 + l, in two mma of the same a. A block's mma sum is thus
 * S = sum a (16 + q) (q4_1) or sum a (400 + q) (q8_0), and with the block's sum of a (asum, staged
 * with a) its value is d S + (m - 16 d) asum (q4_1) or d S - 400 d asum (q8_0), in fp32.
 * Inside a block the mma's k order is a permutation of its 32 elements, the same for b and a: thread
 * t (lane % 4) holds the k 2t, 2t + 1, 2t + 8, 2t + 9 of a k16 step, here elements 4t, 4t + 2, 4t + 1,
 * 4t + 3 (step 0) and 16 + those (step 1), which are the nibbles of word t of a q4_1 block's bytes and
 * the bytes of q8_0 words t and t + 4. a is staged in that order, [block][row][t] 16 bytes, rounded to T
 * (a fused rmsnorm's output as the norm would have stored it). Needs b 16-byte aligned. */
template <typename T> struct ark_qmma_k;
template <> struct ark_qmma_k<__nv_bfloat16> { /* 16 + n / 8 ulp steps: n << 3 */
	static constexpr int SH = 3;
	static constexpr uint32_t C16 = 0x41804180u, C256 = 0x43804380u;
};
template <> struct ark_qmma_k<__half> { /* n << 6 */
	static constexpr int SH = 6;
	static constexpr uint32_t C16 = 0x4C004C00u, C256 = 0x5C005C00u;
};
/* The nibbles at bit B (0, 4, 8, 12) of both halves of w as two 16-bit floats c + n. */
template <typename T, int B> __device__ __forceinline__ uint32_t ark_qn(uint32_t w, uint32_t c)
{
	constexpr int SH = ark_qmma_k<T>::SH;
	const uint32_t x = SH >= B ? w << (SH - B) : w >> (B - SH);
	return (x & (0x000F000Fu << SH)) | c;
}
__device__ __forceinline__ float2 ark_q_lds64f(uint32_t a)
{
	float2 v;
	asm volatile("ld.shared.v2.f32 {%0, %1}, [%2];\n" : "=f"(v.x), "=f"(v.y) : "r"(a) : "memory");
	return v;
}
__device__ __forceinline__ uint32_t ark_q_lds16(uint32_t a)
{
	unsigned short v;
	asm volatile("ld.shared.u16 %0, [%1];\n" : "=h"(v) : "r"(a) : "memory");
	return v;
}
/* The word at shared-window address a, a % 2 == 0. */
__device__ __forceinline__ uint32_t ark_q_lds32u(uint32_t a)
{
	const uint32_t lo = ark_q_lds32(a & ~3u), hi = ark_q_lds32((a & ~3u) + 4);
	return __funnelshift_r(lo, hi, (a & 2u) * 8u);
}
/* Bytes of a slot's row: the smallest multiple of 16 of at least `need` whose word count is 4 mod 8. */
__host__ __device__ constexpr int ark_qmma_rs(int need)
{
	return ((need + 15) / 16 * 16 / 4) % 8 == 4 ? (need + 15) / 16 * 16 : ark_qmma_rs((need + 15) / 16 * 16 + 16);
}

template <typename T, int QT, int NF>
__device__ __noinline__ void ark_mmq_mma(const ark_mm_at at, int m0, int m1, int n0, int n1, int k0, int k1, char *smem)
{
	const ark_mm g = ark_mm_of(at);
	using K = ark_qmma_k<T>;
	constexpr int BB = ark_qblk<QT>::bytes, P = QT == ARK_Q4_1 ? ARK_MMQ_P : ARK_MMQ_P / 2; /* blocks of a warp per stage */
	constexpr int SB = ARK_WARPS * P;                                  /* blocks of a row per stage */
	constexpr int RS = ark_qmma_rs(SB * BB + 15), SLOT = 16 * RS, NV = RS / 16;
	constexpr int S = ARK_MM_RING_BYTES / SLOT;          /* stages in the ring */
	constexpr int MBP = 8 * NF;                          /* rows of a in the fragments */
	constexpr int NI = (16 * NV + ARK_THREADS - 1) / ARK_THREADS; /* copies per thread per stage */
	static_assert(S >= 3, "ARK_MM_RING_BYTES too small for the quantized mma stream");
	static_assert(ARK_MM_A_BYTES >= 8 * NF * (64 + 4 * 2), "ARK_MM_A_BYTES too small for the quantized mma stream");
	static_assert(8 * NF * 128 * 4 <= ARK_MM_SACC_BYTES, "sacc");
	const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, gq = lane >> 2, tq = lane & 3;
	const uint64_t pol = ark_l2_once();
	const int tn = n1 - n0, rows = m1 - m0, ng = (tn + 15) / 16;
	const int64_t R = g.K / 32 * BB; /* bytes of a row of b */
	const T *a = reinterpret_cast<const T *>(g.a);
	char *ring = smem; /* [S][16][RS] */
	const uint32_t ring_s = (uint32_t)__cvta_generic_to_shared(ring);
	const int NBC = ARK_MM_A_BYTES / (rows * 64 + MBP * 4); /* blocks of a per chunk */
	uint4 *a_s = reinterpret_cast<uint4 *>(smem + ARK_MM_RING_BYTES);                  /* [NBC][rows][4] */
	float *asum_s = reinterpret_cast<float *>(smem + ARK_MM_RING_BYTES + NBC * rows * 64); /* [NBC][MBP] */
	const uint32_t a_ss = (uint32_t)__cvta_generic_to_shared(a_s), asum_ss = (uint32_t)__cvta_generic_to_shared(asum_s);
	float *sacc = reinterpret_cast<float *>(smem + ARK_MM_RING_BYTES + ARK_MM_A_BYTES); /* [rows][tn] */
	float *inv = reinterpret_cast<float *>(smem + ARK_MM_RING_BYTES + ARK_MM_A_BYTES + ARK_MM_SACC_BYTES);
	const bool a8 = ((uintptr_t)g.a & 7) == 0; /* 4 elements of a row at a multiple of 4: one 8-byte load */
	if (g.pre == ARK_PRE_RMSNORM)
		ark_mm_pre_stats<T>(g, m0, m1, inv);
	for (int e = tid; e < rows * tn; e += ARK_THREADS)
		sacc[e] = 0.0f;

	for (int kc0 = k0; kc0 < k1; kc0 += NBC * 32) { /* uniform */
		const int nb = (min(kc0 + NBC * 32, k1) - kc0) / 32; /* blocks in this chunk */
		const int spg = (nb + SB - 1) / SB; /* stages per group */
		const int total = ng * spg;
		__syncthreads(); /* the previous chunk's a and ring read by all */

		/* stage f: group f / spg, blocks j0 .. j0 + jn of the chunk (j0 = (f % spg) SB), of which warp
		 * w takes P from j0 + w P. The copies run S - 1 stages ahead (stage pf: group pg, pf - pg spg
		 * = ps): thread i copies vectors i, i + ARK_THREADS, .. of the stage's 16 x NV, vector v of
		 * row v / NV. */
		int pf = 0, pg = 0, ps = 0;
		auto issue = [&]() {
			if (pf < total) {
				const int j0 = ps * SB, jn = min(SB, nb - j0);
				char *slot = ring + (pf % S) * SLOT;
#pragma unroll
				for (int i = 0; i < NI; i++) {
					const int v = tid + ARK_THREADS * i, r = v / NV, vi = v - r * NV, col = pg * 16 + r;
					if (v < 16 * NV) { /* every such lane copies, no bytes (a zero fill inside the
							     * row's slot) past the tile's columns or blocks: a hinted copy
							     * under a branch of its own met an illegal instruction
							     * (bench/NOTES.md) */
						const bool on = col < tn;
						const char *st = g.b + (int64_t)(n0 + (on ? col : 0)) * R + (int64_t)(kc0 / 32 + j0) * BB, *end = st + jn * BB;
						const char *at = reinterpret_cast<const char *>((uintptr_t)st & ~(uintptr_t)15) + 16 * vi;
						const bool live = on && at < end;
						ark_cp_async16_once(slot + r * RS + 16 * vi, live ? at : g.b, live ? (int)min((ptrdiff_t)16, end - at) : 0, pol);
					}
				}
				pf++;
				if (++ps == spg)
					ps = 0, pg++;
			}
			ark_cp_commit();
		};
#pragma unroll 1
		for (int s = 0; s < S - 1; s++)
			issue();

		/* stage a[m0:m1, kc0:kc0 + 32 nb] while b is in flight: item u = (block j, row r, thread t),
		 * its 8 elements in the mma's order, and each block's sum over the 4 items of a quad */
		for (int u0 = 0; u0 < nb * rows * 4; u0 += ARK_THREADS) { /* uniform: the quads' shuffles */
			const int u = u0 + tid, t = u & 3, jr = u >> 2, j = jr / rows, r = jr - j * rows;
			float sum = 0.0f;
			if (u < nb * rows * 4) {
				const int kk = kc0 + 32 * j + 4 * t;
				const T *src = a + (size_t)(m0 + r) * g.astride + kk;
				float x[8], y[8]; /* y: a fused swiglu's, read with x */
				if (g.pre == ARK_PRE_SWIGLU) {
					const T *ys = reinterpret_cast<const T *>(g.pre_w) + (size_t)(m0 + r) * g.astride + kk;
#pragma unroll
					for (int i = 0; i < 4; i++)
						y[i] = ark_to_f(ys[i]), y[4 + i] = ark_to_f(ys[16 + i]);
				}
				if (a8) {
					const uint2 lo = *reinterpret_cast<const uint2 *>(src), hi = *reinterpret_cast<const uint2 *>(src + 16);
					const uint32_t w[4] = {lo.x, lo.y, hi.x, hi.y};
#pragma unroll
					for (int i = 0; i < 4; i++) {
						T h[2];
						memcpy(h, &w[i], 4);
						x[2 * i] = ark_to_f(h[0]), x[2 * i + 1] = ark_to_f(h[1]);
					}
				} else {
#pragma unroll
					for (int i = 0; i < 4; i++)
						x[i] = ark_to_f(src[i]), x[4 + i] = ark_to_f(src[16 + i]);
				}
#pragma unroll
				for (int i = 0; i < 8; i++) {
					x[i] = ark_mm_pre1<T>(g, inv, r, kk + (i & 3) + (i >> 2) * 16, x[i], y[i]);
					sum += x[i];
				}
				const int ord[8] = {0, 2, 1, 3, 4, 6, 5, 7};
				T h[8];
#pragma unroll
				for (int i = 0; i < 8; i++)
					h[i] = ark_from_f<T>(x[ord[i]]);
				uint4 v;
				memcpy(&v, h, 16);
				a_s[u] = v;
			}
			sum += __shfl_xor_sync(0xffffffffu, sum, 1);
			sum += __shfl_xor_sync(0xffffffffu, sum, 2);
			if (u < nb * rows * 4 && t == 0)
				asum_s[j * MBP + r] = sum;
		}
		for (int e = tid; e < nb * (MBP - rows); e += ARK_THREADS) /* the fragments' rows past m1 */
			asum_s[e / (MBP - rows) * MBP + rows + e % (MBP - rows)] = 0.0f;
		__syncthreads();

		float acc[NF][4];
#pragma unroll
		for (int f = 0; f < NF; f++)
			acc[f][0] = acc[f][1] = acc[f][2] = acc[f][3] = 0.0f;
		int cur = -1; /* the group acc holds */
		auto flush = [&]() {
#pragma unroll
			for (int f = 0; f < NF; f++)
#pragma unroll
				for (int i = 0; i < 4; i++) {
					const int m = 8 * f + 2 * tq + (i & 1), c = cur * 16 + gq + (i >> 1) * 8;
					if (m < rows && c < tn)
						atomicAdd(&sacc[m * tn + c], acc[f][i]);
					acc[f][i] = 0.0f;
				}
		};
		int grp = 0, cs = 0; /* stage f's group and its place in it */
#pragma unroll 1
		for (int f = 0; f < total; f++) { /* uniform */
			ark_cp_wait<S - 2>(); /* this thread's copies of stage f have landed */
			__syncthreads();      /* ... and every thread's; every warp is done with stage f - 1's slot */
			issue();
			const int js = cs * SB, j0 = js + warp * P, jn = min(P, nb - j0);
			if (grp != cur) {
				if (cur >= 0)
					flush();
				cur = grp;
			}
			/* this thread's rows gq and gq + 8 of the slot, where their runs start (the low 4 bits
			 * of their offsets, which 32-bit arithmetic keeps), and where this warp's blocks start */
			const uint32_t st = (uint32_t)(n0 + grp * 16 + gq) * (uint32_t)R + (uint32_t)(kc0 / 32 + js) * BB;
			const uint32_t slot = ring_s + (uint32_t)((f % S) * SLOT) + (uint32_t)(warp * P * BB);
			const uint32_t r0 = slot + gq * RS + (st & 15), r1 = slot + (gq + 8) * RS + ((st + 8 * (uint32_t)R) & 15);
			if (++cs == spg)
				cs = 0, grp++;
			if (jn <= 0)
				continue; /* the group's last stage has no blocks for this warp */
			/* every load of the warp's P blocks first, then the arithmetic: the blocks' latencies
			 * overlap (2 warps a scheduler leave little else to hide them). Blocks past jn (a
			 * group's last stage) read stale bytes of the slot, in bounds, and count as zeros:
			 * their a, its sums and their scales are zero. */
			uint32_t bq[P][NF][4], wq[P][2][QT == ARK_Q4_1 ? 1 : 2], sc[P][2];
			float2 as[P][NF];
#pragma unroll
			for (int jj = 0; jj < P; jj++) {
				const int j = j0 + jj;
				const bool ok = jj < jn;
#pragma unroll
				for (int f = 0; f < NF; f++) {
					uint4 v = make_uint4(0u, 0u, 0u, 0u);
					if (ok && 8 * f + gq < rows)
						v = ark_q_lds128u(a_ss + 16u * (uint32_t)((j * rows + 8 * f + gq) * 4 + tq));
					bq[jj][f][0] = v.x, bq[jj][f][1] = v.y, bq[jj][f][2] = v.z, bq[jj][f][3] = v.w;
					as[jj][f] = make_float2(0.0f, 0.0f);
					if (ok)
						as[jj][f] = ark_q_lds64f(asum_ss + 4u * (uint32_t)(j * MBP + 8 * f + 2 * tq));
				}
#pragma unroll
				for (int h = 0; h < 2; h++) { /* rows gq, gq + 8 */
					const uint32_t o = (h ? r1 : r0) + (uint32_t)(BB * jj);
					if constexpr (QT == ARK_Q4_1) {
						sc[jj][h] = ark_q_lds32(o); /* d | m << 16 */
						wq[jj][h][0] = ark_q_lds32(o + 4 + 4 * tq);
					} else {
						sc[jj][h] = ark_q_lds16(o); /* d */
						wq[jj][h][0] = ark_q_lds32u(o + 2 + 4 * tq) ^ 0x80808080u;
						wq[jj][h][1] = ark_q_lds32u(o + 18 + 4 * tq) ^ 0x80808080u;
					}
					if (!ok)
						sc[jj][h] = 0u; /* d = m = 0 */
				}
			}
#pragma unroll
			for (int jj = 0; jj < P; jj++) {
				/* the block's mma, each into sums of its own (none waits on another's result): q4_1
				 * low and high nibbles, q8_0 low and high nibbles of each k16 step */
				constexpr int NK = QT == ARK_Q4_1 ? 2 : 4;
				float ck[NK][NF][4], c[NF][4];
#pragma unroll
				for (int k = 0; k < NK; k++)
#pragma unroll
					for (int f = 0; f < NF; f++)
						ck[k][f][0] = ck[k][f][1] = ck[k][f][2] = ck[k][f][3] = 0.0f;
				const uint32_t w0 = wq[jj][0][0], w1 = wq[jj][1][0];
				float d0 = ark_q_h2f(sc[jj][0]), d1 = ark_q_h2f(sc[jj][1]), e0, e1;
				if constexpr (QT == ARK_Q4_1) {
					const uint32_t A0[4] = {ark_qn<T, 0>(w0, K::C16), ark_qn<T, 0>(w1, K::C16), ark_qn<T, 8>(w0, K::C16),
								ark_qn<T, 8>(w1, K::C16)};
					const uint32_t A1[4] = {ark_qn<T, 4>(w0, K::C16), ark_qn<T, 4>(w1, K::C16), ark_qn<T, 12>(w0, K::C16),
								ark_qn<T, 12>(w1, K::C16)};
#pragma unroll
					for (int f = 0; f < NF; f++) {
						ark_mma16816<T>(ck[0][f], A0, &bq[jj][f][0]);
						ark_mma16816<T>(ck[1][f], A1, &bq[jj][f][2]);
					}
#pragma unroll
					for (int f = 0; f < NF; f++)
#pragma unroll
						for (int i = 0; i < 4; i++)
							c[f][i] = ck[0][f][i] + ck[1][f][i];
					e0 = fmaf(-16.0f, d0, ark_q_h2f(sc[jj][0] >> 16)), e1 = fmaf(-16.0f, d1, ark_q_h2f(sc[jj][1] >> 16));
				} else {
#pragma unroll
					for (int h = 0; h < 2; h++) { /* k16 step h: quant words t + 4 h of rows gq, gq + 8 */
						const uint32_t u0 = wq[jj][0][h], u1 = wq[jj][1][h];
						const uint32_t L[4] = {ark_qn<T, 0>(u0, K::C16), ark_qn<T, 0>(u1, K::C16), ark_qn<T, 8>(u0, K::C16),
								       ark_qn<T, 8>(u1, K::C16)};
						const uint32_t H[4] = {ark_qn<T, 4>(u0, K::C256), ark_qn<T, 4>(u1, K::C256),
								       ark_qn<T, 12>(u0, K::C256), ark_qn<T, 12>(u1, K::C256)};
#pragma unroll
						for (int f = 0; f < NF; f++) {
							ark_mma16816<T>(ck[2 * h][f], L, &bq[jj][f][2 * h]);
							ark_mma16816<T>(ck[2 * h + 1][f], H, &bq[jj][f][2 * h]);
						}
					}
#pragma unroll
					for (int f = 0; f < NF; f++)
#pragma unroll
						for (int i = 0; i < 4; i++)
							c[f][i] = (ck[0][f][i] + ck[1][f][i]) + (ck[2][f][i] + ck[3][f][i]);
					e0 = -400.0f * d0, e1 = -400.0f * d1;
				}
#pragma unroll
				for (int f = 0; f < NF; f++) {
					acc[f][0] = fmaf(d0, c[f][0], fmaf(e0, as[jj][f].x, acc[f][0]));
					acc[f][1] = fmaf(d0, c[f][1], fmaf(e0, as[jj][f].y, acc[f][1]));
					acc[f][2] = fmaf(d1, c[f][2], fmaf(e1, as[jj][f].x, acc[f][2]));
					acc[f][3] = fmaf(d1, c[f][3], fmaf(e1, as[jj][f].y, acc[f][3]));
				}
			}
		}
		if (cur >= 0)
			flush();
		ark_cp_wait<0>(); /* no copy may land in the ring after the next chunk's */
	}
	ark_mmq_out<T>(g, m0, n0, rows, tn, sacc);
}

/* ARK_MMQ_ROWS: the row classes (1, 2, 4, 8, 16 rows: bits 0-4) of the quantized tiles compiled, for
 * q4_1 b (bits 0-4) and q8_0 b (bits 8-12); arkgen says which its tiles take (codegen/emit.c), every
 * one by default. As with the streaming tiles, each instance is a function of its own whose code
 * costs the loop kernel's registers where no tile runs it. */
#ifndef ARK_MMQ_ROWS
#define ARK_MMQ_ROWS 0x1f1f
#endif

static __device__ __noinline__ void ark_mmq_missing(int rows)
{
	if (threadIdx.x == 0)
		printf("ark: a quantized matmul tile of %d rows that the generated file did not compile (ARK_MMQ_ROWS)\n",
		       rows);
	__trap();
}

/* The stream of MB rows where its class was compiled */
template <typename T, int QT, int MB>
__device__ __forceinline__ void ark_mmq_class(const ark_mm &g, int m0, int m1, int n0, int n1, int k0, int k1, char *smem)
{
	constexpr int bit = (MB <= 1 ? 0 : MB <= 2 ? 1 : MB <= 4 ? 2 : MB <= 8 ? 3 : 4) + (QT == ARK_Q4_1 ? 0 : 8);
	if constexpr ((ARK_MMQ_ROWS >> bit & 1) != 0)
		ark_mmq_stream<T, MB, QT>(g.at, m0, m1, n0, n1, k0, k1, smem);
	else
		ark_mmq_missing(m1 - m0);
}

template <typename T, int QT>
__device__ void ark_mmq_rows(const ark_mm &g, int m0, int m1, int n0, int n1, int k0, int k1, char *smem)
{
	const int rows = m1 - m0;
	if constexpr (sizeof(T) == 2 && ARK_MMQ_MMA) { /* fp16, bf16 a: the tensor cores, up to 8 rows or 16 */
		constexpr unsigned u = ARK_MMQ_ROWS >> (QT == ARK_Q4_1 ? 0 : 8);
		if (rows <= 8) {
			if constexpr ((u & 0xf) != 0)
				ark_mmq_mma<T, QT, 1>(g.at, m0, m1, n0, n1, k0, k1, smem);
			else
				ark_mmq_missing(rows);
		} else {
			if constexpr ((u & 0x10) != 0)
				ark_mmq_mma<T, QT, 2>(g.at, m0, m1, n0, n1, k0, k1, smem);
			else
				ark_mmq_missing(rows);
		}
	} else {
		if (rows <= 1)
			ark_mmq_class<T, QT, 1>(g, m0, m1, n0, n1, k0, k1, smem);
		else if (rows <= 2)
			ark_mmq_class<T, QT, 2>(g, m0, m1, n0, n1, k0, k1, smem);
		else if (rows <= 4)
			ark_mmq_class<T, QT, 4>(g, m0, m1, n0, n1, k0, k1, smem);
		else if (rows <= 8)
			ark_mmq_class<T, QT, 8>(g, m0, m1, n0, n1, k0, k1, smem);
		else
			ark_mmq_class<T, QT, 16>(g, m0, m1, n0, n1, k0, k1, smem);
	}
}

/* A sub-tile (at most 128 x 128) of a matmul whose b is quantized: the streaming tiles above for
 * every 16 rows. More rows (prefill) read b once per 16 rows, mostly from L2: right, not tuned. */
template <typename T>
__device__ void ark_mmq_sub(const ark_mm &g, int m0, int m1, int n0, int n1, int k0, int k1, char *smem)
{
	if (!ark_aligned16(g.b) || (k0 | k1 | (int)g.K) % 32)
		__trap(); /* b is a weight, never a view: arkgen places it 256-byte aligned; it cuts K at multiples of 64 */
	for (int mb = m0; mb < m1; mb += 16) {
		const int me = min(mb + 16, m1);
		if (g.qdt == ARK_Q4_1)
			ark_mmq_rows<T, ARK_Q4_1>(g, mb, me, n0, n1, k0, k1, smem);
		else
			ark_mmq_rows<T, ARK_Q8_0>(g, mb, me, n0, n1, k0, k1, smem);
	}
}

/* EMBEDDING of a quantized table: rows r0 : r0 + rows of out [M, N] (p.dtype); row r is row
 * ids[r - r0] of the table [K, N] in blocks (ids: the task's, in shared memory), zeros where the id
 * is outside 0..K-1. A unit is 8 elements, a quarter of a block, as DEQUANT's (ark_dq_unit, the same
 * values): the (row, unit) pairs of all rows over the threads, the words of B units loaded before
 * any is dequantised, so that a task of a few rows takes a round trip or two to memory (element by
 * element, a row at a time, it took one a thread's element: 9 a row of 2176). */
template <typename T, int QT>
__device__ __forceinline__ void ark_embedding_q_units(const ark_opp &p, const int32_t *ids, uint32_t r0, uint32_t rows,
						      const ark_tile_env &e)
{
	constexpr int BB = ark_qblk<QT>::bytes, VEC = ark_dt<T>::vec, B = 4;
	const char *tab = e.arena + p.in[1];
	T *out = reinterpret_cast<T *>(e.arena + p.out) + (size_t)r0 * p.N;
	/* a fused add (ARK_OPP_RESIDUAL): its unit loaded with the blocks' words where aligned */
	const T *res = p.flags & ARK_OPP_RESIDUAL ? reinterpret_cast<const T *>(e.arena + p.in[3]) + (size_t)r0 * p.N : nullptr;
	const bool ovec = ark_aligned16(out) && p.N % 8 == 0, rvec = res && ark_aligned16(res);
	const uint32_t upr = (uint32_t)(p.N / 8), rb = (uint32_t)(p.N / 32 * BB), n = rows * upr;
	ark_row_units w8(upr); /* pair i's row and unit */
	for (uint32_t i = threadIdx.x; i < n; i += B * ARK_THREADS) {
		uint32_t w[B][5], at[B]; /* a unit's words (q4_1: d and m, two of nibbles; q8_0: d, three of int8) */
		int sh[B];
		uint4 x[B][8 / VEC]; /* the residual's 8 elements */
#pragma unroll
		for (int u = 0; u < B; u++) {
			const uint32_t r = w8.r, c = w8.c;
			at[u] = r * upr + c;
			if (rvec && i + u * ARK_THREADS < n)
#pragma unroll
				for (int k = 0; k < 8 / VEC; k++)
					x[u][k] = ark_ld16(res + (size_t)at[u] * 8 + k * VEC);
			const int32_t id = i + u * ARK_THREADS < n ? ids[r] : -1;
			const bool ok = id >= 0 && id < p.K;
			const char *blk = tab + (size_t)(ok ? id : 0) * rb + (size_t)(c >> 2) * BB; /* q4_1: 4-byte aligned; q8_0: 2 */
			const int qq = (int)(c & 3);
			if (QT == ARK_Q4_1) {
				const uint32_t *bw = reinterpret_cast<const uint32_t *>(blk);
				w[u][0] = ok ? bw[0] : 0u;
				w[u][1] = ok ? bw[1 + 2 * (qq & 1)] : 0u;
				w[u][2] = ok ? bw[2 + 2 * (qq & 1)] : 0u;
				sh[u] = ok ? 4 * (qq >> 1) : -1;
			} else {
				/* d in the word that holds it; the unit's 8 int8 at 2 + 8 qq in two words, or three
				 * where they start 2 bytes into one (the third then ends inside the block's last word) */
				const uintptr_t o = (uintptr_t)blk, a = o + 2 + 8 * qq;
				const uint32_t *bd = reinterpret_cast<const uint32_t *>(o & ~(uintptr_t)3);
				const uint32_t *ba = reinterpret_cast<const uint32_t *>(a & ~(uintptr_t)3);
				const uint32_t hi = (uint32_t)(a & 2) * 8u;
				w[u][0] = ok ? bd[0] >> ((o & 2) * 8u) : 0u;
				w[u][1] = ok ? ba[0] : 0u;
				w[u][2] = ok ? ba[1] : 0u;
				w[u][3] = ok && hi ? ba[2] : 0u;
				sh[u] = ok ? (int)hi : -1;
			}
			w8.next();
		}
#pragma unroll
		for (int u = 0; u < B; u++) {
			if (i + u * ARK_THREADS >= n)
				continue;
			float q[8], v[8];
			const float d = ark_q_h2f(w[u][0]);
			if (QT == ARK_Q4_1) {
				ark_q_bytes_f((w[u][1] >> max(sh[u], 0)) & 0x0f0f0f0fu, 8388608.0f, &q[0]);
				ark_q_bytes_f((w[u][2] >> max(sh[u], 0)) & 0x0f0f0f0fu, 8388608.0f, &q[4]);
			} else {
				ark_q_bytes_f(__funnelshift_rc(w[u][1], w[u][2], max(sh[u], 0)) ^ 0x80808080u, 8388736.0f, &q[0]);
				ark_q_bytes_f(__funnelshift_rc(w[u][2], w[u][3], max(sh[u], 0)) ^ 0x80808080u, 8388736.0f, &q[4]);
			}
			const float mn = QT == ARK_Q4_1 ? ark_q_h2f(w[u][0] >> 16) : 0.0f;
#pragma unroll
			for (int k = 0; k < 8; k++) /* as ark_dq_unit: no fused multiply-add */
				v[k] = sh[u] < 0 ? 0.0f : QT == ARK_Q4_1 ? __fadd_rn(__fmul_rn(d, q[k]), mn) : __fmul_rn(d, q[k]);
			if (res) { /* the row as the add would read it (rounded to T), plus the residual's */
				float xf[8];
				if (rvec) {
#pragma unroll
					for (int k = 0; k < 8 / VEC; k++)
						ark_unpack<T>(x[u][k], xf + k * VEC);
				} else {
#pragma unroll
					for (int k = 0; k < 8; k++)
						xf[k] = ark_to_f(res[(size_t)at[u] * 8 + k]);
				}
#pragma unroll
				for (int k = 0; k < 8; k++)
					v[k] = ark_to_f(ark_from_f<T>(v[k])) + xf[k];
			}
			ark_st8<T>(out + (size_t)at[u] * 8, v, ovec);
		}
	}
}

template <typename T>
__device__ __noinline__ void ark_embedding_q_rows(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
{
	ark_emb_chunks(p, t.m0, t.m1, e, [&](const int32_t *sid, uint32_t c0, uint32_t nr) {
		if (p.wdtype == ARK_Q4_1)
			ark_embedding_q_units<T, ARK_Q4_1>(p, sid, c0, nr, e);
		else
			ark_embedding_q_units<T, ARK_Q8_0>(p, sid, c0, nr, e);
	});
}

/* only the dtypes the file computes in (ark_built_dtype) */
__device__ __forceinline__ void ark_embedding_q_tile(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
{
	ark_built_dtype(p.dtype, [&](auto *x) { ark_embedding_q_rows<ARK_DT_OF(x)>(p, t, e); });
}

/* ---- dequantize: rows of a weight in blocks to fp16, bf16 or fp32 -------------------------------
 * Rows m0:m1 of out [M, N] from the same rows of w [M, N] in blocks (N % 32 == 0): blocks j0:j1 =
 * m0 N/32 : m1 N/32 of w, contiguous, and elements 32 j0 : 32 j1 of out, contiguous. Chunks of
 * ARK_DQ_BLOCKS blocks go by 16-byte cp.async, from the 16-byte boundary below the chunk, into one of
 * two shared buffers (the next chunk in flight while this one is dequantised). A unit is 8 elements,
 * a quarter of a block: thread i takes units i, i + ARK_THREADS, ..., so a warp's 16-byte stores
 * are consecutive. Each value is d * q + m (q8_0: d * q) in fp32, rounded once to T, as the CPU
 * reference (runtime/quant.c) computes it: no fused multiply-add. */

/* Unit qq (0..3: elements 8 qq .. 8 qq + 7) of the block at shared-window address o (q4_1: o % 4 == 0;
 * q8_0: o % 2 == 0) as 8 floats. */
template <int QT> __device__ __forceinline__ void ark_dq_unit(uint32_t o, int qq, float (&v)[8])
{
	float q[8], d, mn = 0.0f;
	if constexpr (QT == ARK_Q4_1) {
		/* elements 0..15: low nibbles of bytes 0..15, 16..31: their high nibbles */
		const uint32_t w0 = ark_q_lds32(o);
		d = ark_q_h2f(w0), mn = ark_q_h2f(w0 >> 16);
		const uint32_t a = o + 4 + 8 * (qq & 1), sh = 4 * (qq >> 1);
		ark_q_bytes_f((ark_q_lds32(a) >> sh) & 0x0f0f0f0fu, 8388608.0f, &q[0]);
		ark_q_bytes_f((ark_q_lds32(a + 4) >> sh) & 0x0f0f0f0fu, 8388608.0f, &q[4]);
	} else {
		/* d at o, the unit's 8 int8 at o + 2 + 8 qq: two words, 2 or 0 bytes into the aligned ones */
		d = ark_q_h2f(ark_q_lds32(o & ~3u) >> ((o & 2u) * 8u));
		const uint32_t a = o + 2 + 8 * qq, base = a & ~3u, hi = (a & 2u) * 8u;
		const uint32_t w0 = ark_q_lds32(base), w1 = ark_q_lds32(base + 4), w2 = ark_q_lds32(base + 8);
		ark_q_bytes_f(__funnelshift_rc(w0, w1, hi) ^ 0x80808080u, 8388736.0f, &q[0]);
		ark_q_bytes_f(__funnelshift_rc(w1, w2, hi) ^ 0x80808080u, 8388736.0f, &q[4]);
	}
#pragma unroll
	for (int i = 0; i < 8; i++)
		v[i] = QT == ARK_Q4_1 ? __fadd_rn(__fmul_rn(d, q[i]), mn) : __fmul_rn(d, q[i]);
}

template <typename T, int QT>
__device__ void ark_dequant_rows(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
{
	constexpr int BB = ark_qblk<QT>::bytes;
	const char *w = e.arena + p.in[0];
	T *out = reinterpret_cast<T *>(e.arena + p.out);
	if (!ark_aligned16(w) || p.N % 32)
		__trap(); /* w is a weight, never a view: arkgen places it 256-byte aligned, its rows whole blocks */
	const bool ovec = ark_aligned16(out); /* out may be a view inside another tensor (a concat's part) */
	const int64_t j0 = (int64_t)t.m0 * (p.N / 32), j1 = (int64_t)t.m1 * (p.N / 32);
	const int tid = threadIdx.x;
	char *buf = e.smem; /* [2][ARK_DQ_BUF_BYTES] */
	const uint32_t buf_s = (uint32_t)__cvta_generic_to_shared(buf);

	/* blocks c0 .. c0 + ARK_DQ_BLOCKS (at most j1) into buffer b; a commit group even when empty */
	auto issue = [&](int64_t c0, int b) {
		if (c0 < j1) {
			const int64_t lo = c0 * BB, a0 = lo & ~(int64_t)15;
			const int64_t end = min(c0 + ARK_DQ_BLOCKS, j1) * BB;
			const int nv = (int)((end - a0 + 15) / 16);
			for (int v = tid; v < nv; v += ARK_THREADS) {
				const int64_t at = a0 + 16 * (int64_t)v;
				/* not ark_cp_async16_once: with the evict-first policy this copy met an illegal
				 * instruction on an H100 (CUDA 13.0), where the streaming paths' did not */
				ark_cp_async16(buf + b * ARK_DQ_BUF_BYTES + 16 * v, w + at, (int)min((int64_t)16, end - at));
			}
		}
		ark_cp_commit();
	};
	issue(j0, 0);
	int b = 0;
#pragma unroll 1
	for (int64_t c0 = j0; c0 < j1; c0 += ARK_DQ_BLOCKS, b ^= 1) { /* uniform */
		issue(c0 + ARK_DQ_BLOCKS, b ^ 1); /* that buffer was last read before the barrier below */
		ark_cp_wait<1>();                 /* this thread's copies of chunk c0 have landed */
		__syncthreads();                  /* ... and every thread's */
		const int nb = (int)min((int64_t)ARK_DQ_BLOCKS, j1 - c0);
		const uint32_t first = buf_s + (uint32_t)(b * ARK_DQ_BUF_BYTES) + (uint32_t)((c0 * BB) & 15);
		for (int u = tid; u < 4 * nb; u += ARK_THREADS) {
			float v[8];
			ark_dq_unit<QT>(first + (uint32_t)((u >> 2) * BB), u & 3, v);
			ark_st8<T>(out + (c0 * 32 + 8 * (int64_t)u), v, ovec); /* unit u of the chunk: 8 elements from 8 u */
		}
		__syncthreads(); /* buffer b read by all before the next iteration's issue into it */
	}
	ark_cp_wait<0>();
}

struct ark_tile_dequant {
	static constexpr bool per_dtype = true;
	template <typename T>
	static __device__ __forceinline__ void run(const ark_opp &p, const ark_task &t, const ark_tile_env &e)
	{
		if (p.wdtype == ARK_Q4_1)
			ark_dequant_rows<T, ARK_Q4_1>(p, t, e);
		else
			ark_dequant_rows<T, ARK_Q8_0>(p, t, e);
	}
};
/* a buffer holds the 16-byte vectors of a chunk (up to 15 bytes before its first block) and the word
 * past the last block that a q8_0 unit's third load may read */
static_assert(15 + ARK_DQ_BLOCKS * 34 + 15 <= ARK_DQ_BUF_BYTES && 15 + ARK_DQ_BLOCKS * 34 + 4 <= ARK_DQ_BUF_BYTES &&
		      2 * ARK_DQ_BUF_BYTES <= ARK_SMEM_DEQUANT,
	      "dequantize: no room for two chunks of blocks");

#else /* !ARK_TILES_QUANT */

/* a build without quantized paths: ark_tile returns false for DEQUANT tasks, as for a missing dtype */
struct ark_tile_dequant {
	static constexpr bool per_dtype = false;
	static __device__ __forceinline__ void run(const ark_opp &, const ark_task &, const ark_tile_env &) {}
};
template <> constexpr bool ark_tile_left_out<ark_tile_dequant> = true;

template <typename T>
__device__ void ark_mmq_sub(const ark_mm &, int, int, int, int, int, int, char *)
{
	__trap(); /* a quantized weight in a build without ARK_TILES_QUANT: arkgen never emits one */
}
__device__ __forceinline__ void ark_embedding_q_tile(const ark_opp &, const ark_task &, const ark_tile_env &)
{
	__trap();
}

#endif
#endif
