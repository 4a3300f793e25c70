// op_wgmma.cuh: the 16-bit matmul tile on Hopper's warpgroup MMA (wgmma, sm_90a), for aligned operands,
// b [N, K] (transpose_b) or [K, N]. Included by op_matmul.cuh; other targets keep the mma.sync tile.
#ifndef OP_WGMMA_CUH
#define OP_WGMMA_CUH

/* ARK_MM_WGMMA: whether this pass has wgmma (sm_90a: -gencode arch=compute_90a,code=sm_90a, the
 * Makefile's default ARCH). */
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define ARK_MM_WGMMA 1
#else
#define ARK_MM_WGMMA 0
#endif

#if ARK_MM_WGMMA
/* d += a . b over 16 of k for one warpgroup: a 64 x 16 K-major, b 16 x N K-major (TB: b [N, K]) or
 * N-major (b [K, N]: the instruction's transposed b) in shared memory (descriptors da, db), d the
 * warpgroup's 64 x N fp32 accumulator (N / 2 registers a thread). */
template <typename T, int N, bool TB>
__device__ __forceinline__ void ark_wgmma(float (&d)[N / 2], uint64_t da, uint64_t db);
/* The accumulator operands of ark_wgmma for each N: the instruction's list of them, then its
 * descriptors and scale-d, numbered after them (ARK_WGMMA_R), and the asm outputs (ARK_WGMMA_O). */
#define ARK_WGMMA_R32(P, TR) "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n" P " {" \
	"%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15" \
	"}, %16, %17, p, 1, 1, 0, " TR ";\n}\n"
#define ARK_WGMMA_O32 \
	"+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
	"+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
#define ARK_WGMMA_R64(P, TR) "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n" P " {" \
	"%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
	"%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31" \
	"}, %32, %33, p, 1, 1, 0, " TR ";\n}\n"
#define ARK_WGMMA_O64 \
	"+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
	"+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
	"+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
	"+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define ARK_WGMMA_R128(P, TR) "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n" P " {" \
	"%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
	"%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
	"%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
	"%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63" \
	"}, %64, %65, p, 1, 1, 0, " TR ";\n}\n"
#define ARK_WGMMA_O128 \
	"+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
	"+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
	"+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
	"+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
	"+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
	"+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
	"+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
	"+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define ARK_WGMMA_DEF(T, N, TY, TB, TR)                                                                    \
	template <>                                                                                        \
	__device__ __forceinline__ void ark_wgmma<T, N, TB>(float (&d)[N / 2], uint64_t da, uint64_t db)    \
	{                                                                                                  \
		asm volatile(ARK_WGMMA_R##N("wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY, TR)     \
			     : ARK_WGMMA_O##N                                                                    \
			     : "l"(da), "l"(db), "r"(1));                                                        \
	}
ARK_WGMMA_DEF(__nv_bfloat16, 32, "bf16", true, "0")
ARK_WGMMA_DEF(__half, 32, "f16", true, "0")
ARK_WGMMA_DEF(__nv_bfloat16, 64, "bf16", true, "0")
ARK_WGMMA_DEF(__half, 64, "f16", true, "0")
ARK_WGMMA_DEF(__nv_bfloat16, 128, "bf16", true, "0")
ARK_WGMMA_DEF(__half, 128, "f16", true, "0")
ARK_WGMMA_DEF(__nv_bfloat16, 32, "bf16", false, "1")
ARK_WGMMA_DEF(__half, 32, "f16", false, "1")
ARK_WGMMA_DEF(__nv_bfloat16, 64, "bf16", false, "1")
ARK_WGMMA_DEF(__half, 64, "f16", false, "1")
ARK_WGMMA_DEF(__nv_bfloat16, 128, "bf16", false, "1")
ARK_WGMMA_DEF(__half, 128, "f16", false, "1")
#undef ARK_WGMMA_DEF

/* The descriptor of an operand staged in the 128-byte swizzle mode from shared address s (a 1024-byte
 * aligned group): rows of 64 elements (128 bytes) whose 16-byte chunks are swizzled (chunk c of row r
 * at c ^ (r & 7)), 8-row groups 1024 bytes apart (the stride byte offset). K-major (a; b [N, K]): a
 * row is 64 of k, each 16-deep step of k 32 bytes further; lbo unused (16). N-major (b [K, N]): panels
 * of 64 columns by 64 rows of k, a row 64 columns, lbo = 8192 from a panel to the next, each 16-deep
 * step of k 2048 bytes further. */
__device__ __forceinline__ uint64_t ark_wgmma_desc(uint32_t s, uint32_t lbo = 16)
{
	return (uint64_t)((s & 0x3ffff) >> 4) | (uint64_t)(lbo >> 4) << 16 | (uint64_t)(1024 >> 4) << 32 | (uint64_t)1 << 62;
}

/* Keeps the compiler from moving reads or writes of the accumulators across a wgmma fence or wait. */
template <int R> __device__ __forceinline__ void ark_wgmma_hold(float (&d)[R])
{
#pragma unroll
	for (int i = 0; i < R; i++)
		asm volatile("" : "+f"(d[i])::"memory");
}

/* ARK_MM_TSTAMP(i): where a probe times the phases of a wgmma tile (entry 0, each stage's compute
 * 1 + kt up to 12, the ring's end 13, the sums in shared memory 14, the epilogue's end 15); nothing
 * in the loop kernel. */
#ifndef ARK_MM_TSTAMP
#define ARK_MM_TSTAMP(i) ((void)0)
#endif

#ifndef ARK_WGMMA_LAG
/* 1: a stage's MMAs left in flight while the next stage is waited for; that pays only where ptxas
 * keeps them asynchronous (the tile inline in its kernel, bench/wgmma_probe), and costs a stage of
 * copies in flight, so the loop kernel, whose tile is a function, keeps 0 */
#define ARK_WGMMA_LAG 0
#endif
/* how the tile is compiled: a function of its own in the loop kernel (inline there it made the
 * kernel spill and models slower, bench/NOTES.md), where ptxas serializes its MMAs (C7510); a probe's
 * kernel takes it inline */
#ifndef ARK_WGMMA_FN
#define ARK_WGMMA_FN __noinline__
#endif

/* The tile (m0:m1, n0:n1) over k0:k1 on wgmma: RP = 128 rows (TWO_M, each warpgroup 64 of them and all
 * N columns) or 64 (the warpgroups 64 x N each, side by side: 2N columns), CP columns; operands 16-byte
 * aligned (ark_mm_staged's al), b [N, K] (TB) or [K, N]. Stages of 64 of k, a [RP][64] swizzled
 * (ark_wgmma_desc), then b [CP][64] likewise (TB) or, for b [K, N], CP / 64 panels of [64][64] (k by
 * columns) swizzled (ark_wgmma_desc with the panels' offset), as many as ARK_SMEM_MATMUL holds from a
 * 1024-byte boundary (at most ARK_MM_MAX_STAGES), filled by 16-byte cp.async (zeros past the tile
 * and past k1) through ark_mm_ring, st - 1 in flight; each stage four wgmma a warpgroup, waited for
 * before the barrier that frees the stage (ARK_WGMMA_LAG: one stage later, st - 2 in flight). The sums go through shared
 * memory to ark_mm_epilogue, as the mma tile's. For b [K, N] a warpgroup's columns start a panel or,
 * N = 32 side by side, 64 bytes into its rows (the descriptor's start, as a's k steps inside a swizzled
 * row: the same 1 KB group, no base offset). */
template <typename T, int N, bool TWO_M, bool TB>
__device__ ARK_WGMMA_FN void ark_mm_wgmma_t(const ark_mm_at at, int m0, int m1, int n0, int n1, int k0, int k1, char *smem)
{
	const ark_mm g = ark_mm_of(at);
	constexpr int BK = 64, RP = TWO_M ? 128 : 64, CP = TWO_M ? N : 2 * N, STAGE = (RP + CP) * 128;
	constexpr int CHUNKS = (RP + CP) * 8 / ARK_THREADS; /* 16-byte copies a thread a stage */
	static_assert(ARK_THREADS == 256 && (RP + CP) * 8 % ARK_THREADS == 0, "wgmma tile: two warpgroups");
	static_assert(TB || N % 32 == 0, "wgmma tile: b [K, N] in panels of 64 columns, halves of one");
	const T *a = reinterpret_cast<const T *>(g.a), *b = reinterpret_cast<const T *>(g.b);
	const int64_t AS = g.astride, BS = g.bstride;
	const int rows = m1 - m0, cols = n1 - n0, wg = threadIdx.x >> 7;
	const uint32_t sbase = ((uint32_t)__cvta_generic_to_shared(smem) + 1023u) & ~1023u;
	const int st = (ARK_SMEM_MATMUL - 1024) / STAGE > ARK_MM_MAX_STAGES ? ARK_MM_MAX_STAGES : (ARK_SMEM_MATMUL - 1024) / STAGE;
	const int ktiles = (k1 - k0 + BK - 1) / BK;
	/* a stage's MMAs run while the next stage is waited for, where the ring is deep enough to give up
	 * one stage of copies in flight for it */
	const int lag = ARK_WGMMA_LAG && st >= 5 ? 1 : 0;
	ARK_MM_TSTAMP(0);
	int kt_seen = 0;
	(void)kt_seen;
	float acc[N / 2];
#pragma unroll
	for (int i = 0; i < N / 2; i++)
		acc[i] = 0.0f;
	/* this thread's chunks: row r of the stage (a's rows, then b's), chunk c of 8 elements of k; for b
	 * [K, N], chunk q of b's is panel q / 512, row (of k) q / 8 % 64, chunk (8 columns) q % 8 */
	auto load = [&](int s, int kt) {
		const uint32_t sa = sbase + s * STAGE;
		const int kk = k0 + kt * BK;
#pragma unroll
		for (int i = 0; i < CHUNKS; i++) {
			const int q = (int)threadIdx.x + i * ARK_THREADS, r = q >> 3, c = q & 7;
			if (TB || r < RP) {
				const int k = kk + c * 8;
				const bool isb = r >= RP;
				const int rr = isb ? r - RP : r;
				const bool in = rr < (isb ? cols : rows) && k < k1;
				const T *src = isb ? b + (size_t)(n0 + (in ? rr : 0)) * BS + (in ? k : 0)
						   : a + (size_t)(m0 + (in ? rr : 0)) * AS + (in ? k : 0);
				ark_cp_async16s(sa + r * 128 + ((c ^ (r & 7)) << 4), src, in ? 16 : 0);
			} else {
				const int qb = q - RP * 8, pn = qb >> 9, kr = (qb >> 3) & 63, n = pn * 64 + c * 8, k = kk + kr;
				const bool in = n < cols && k < k1;
				const T *src = b + (in ? (size_t)k * BS + n0 + n : 0);
				ark_cp_async16s(sa + RP * 128 + pn * 8192 + kr * 128 + ((c ^ (kr & 7)) << 4), src, in ? 16 : 0);
			}
		}
	};
	const uint32_t a_off = TWO_M ? wg * 64 * 128 : 0,
		       b_off = RP * 128 + (TWO_M ? 0 : TB ? wg * N * 128 : (wg * N * 2) % 128 + (wg * N / 64) * 8192);
	ark_mm_ring(
		st, ktiles, STAGE, load,
		[](int) { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }, /* cp.async -> wgmma */
		[&](uint32_t so) {
			ARK_MM_TSTAMP(1 + (kt_seen < 11 ? kt_seen : 11));
			kt_seen++;
			const uint64_t da = ark_wgmma_desc(sbase + so + a_off),
				       db = ark_wgmma_desc(sbase + so + b_off, TB ? 16 : 8192);
			ark_wgmma_hold(acc);
			asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
			for (int s = 0; s < BK / 16; s++)
				ark_wgmma<T, N, TB>(acc, da + 2 * s, db + (TB ? 2 : 128) * s); /* 32 (N-major: 2048) bytes of k a step */
			asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
			if (lag) /* this stage's MMAs left in flight, the last stage's waited for */
				asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
			else
				asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
			ark_wgmma_hold(acc);
		},
		lag);
	asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
	ark_wgmma_hold(acc);
	ARK_MM_TSTAMP(13);
	/* the sums to t [RP][CP + 4]: thread (warp w of its warpgroup, lane) holds, for each 8 columns j,
	 * rows 16 w + lane / 4 and 8 below, columns 8 j + 2 (lane % 4) and the next */
	const int ldt = CP + 4, w = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31;
	float *t = reinterpret_cast<float *>(smem);
	const int r0 = (TWO_M ? wg * 64 : 0) + 16 * w + (lane >> 2), c0 = (TWO_M ? 0 : wg * N) + 2 * (lane & 3);
#pragma unroll
	for (int j = 0; j < N / 8; j++) {
		*reinterpret_cast<float2 *>(t + r0 * ldt + c0 + 8 * j) = make_float2(acc[4 * j], acc[4 * j + 1]);
		*reinterpret_cast<float2 *>(t + (r0 + 8) * ldt + c0 + 8 * j) = make_float2(acc[4 * j + 2], acc[4 * j + 3]);
	}
	__syncthreads();
	ARK_MM_TSTAMP(14);
	ark_mm_epilogue<T>(g, t, ldt, m0, m1, n0, n1, 1, RP * ldt);
	ARK_MM_TSTAMP(15);
}

/* The wgmma tile's shape for a tile of more than 32 rows and columns (at most 128 x 128). */
template <typename T, bool TB>
__device__ __forceinline__ void ark_mm_wgmma(const ark_mm &g, int m0, int m1, int n0, int n1, int k0, int k1, char *smem)
{
	if (m1 - m0 > 64) {
		if (n1 - n0 > 64)
			ark_mm_wgmma_t<T, 128, true, TB>(g.at, m0, m1, n0, n1, k0, k1, smem);
		else
			ark_mm_wgmma_t<T, 64, true, TB>(g.at, m0, m1, n0, n1, k0, k1, smem);
	} else if (n1 - n0 > 64) {
		ark_mm_wgmma_t<T, 64, false, TB>(g.at, m0, m1, n0, n1, k0, k1, smem);
	} else {
		ark_mm_wgmma_t<T, 32, false, TB>(g.at, m0, m1, n0, n1, k0, k1, smem);
	}
}
#endif /* ARK_MM_WGMMA */

#endif
