/* calib_grid.h: the tiles bench/calibrate measures (and bench/calib_analytic.c writes the analytic
 * model's times for): every template arkgen emits for compute, in each of its regimes, over the tile
 * shapes the tiler makes (codegen/tile.c). M, N and K as codegen/calib.h defines them per template.
 * Plain C and C++. */
#ifndef CALIB_GRID_H
#define CALIB_GRID_H

#include "ark_ops.h"
#include "ark_task.h"

struct calib_gpoint {
	int tmpl, dtype;
	const char *layout; /* codegen/calib.h's names: kn, nk, kn-odd, nk-odd, same, bcast, - */
	int m, n, k;
};

static int calib_gadd(struct calib_gpoint *p, int n, int cap, int tmpl, int dtype, const char *layout, int m, int nn,
		      int k)
{
	if (n < cap) {
		p[n].tmpl = tmpl, p[n].dtype = dtype, p[n].layout = layout;
		p[n].m = m, p[n].n = nn, p[n].k = k;
	}
	return n + 1;
}

#define CALIB_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Loops over the values of a static array. */
#define CALIB_EACH(v, arr) for (int v##_i = 0, v; v##_i < CALIB_COUNT(arr) && (v = (arr)[v##_i], 1); v##_i++)

/* Fills p (cap entries) with the grid; returns the number of points (more than cap: p was too small).
 * Odd layouts run with K odd (and, for kn, N odd too: the operands' rows are not 16-byte vectors), so
 * their k is one less than a power of two. */
static int calib_grid(struct calib_gpoint *p, int cap)
{
	static const char *const mm_lay[] = {"kn", "nk", "kn-odd", "nk-odd"};
	static const int small_m[] = {1, 2, 4, 8, 16}, large_m[] = {32, 64, 128}, odd_m[] = {1, 4, 16};
	static const int tn2[] = {16, 32, 64, 128}, tn4[] = {8, 16, 32, 64, 128}, odd_tn[] = {16, 64, 128};
	static const int large_tn2[] = {16, 32, 64, 128}, large_tn4[] = {8, 32, 128};
	static const int ks[] = {256, 1024, 4096, 16384}, odd_k[] = {255, 1023, 4095};
	static const int part_m[] = {1, 4, 16, 64, 128}, part_tn[] = {32, 128}, part_k[] = {256, 1024, 4096};
	static const int red_m[] = {1, 16, 64, 128}, red_splits[] = {2, 4, 8, 16, 32};
	static const int ew_m[] = {1, 8, 64}, cols[] = {256, 1024, 4096, 16384};
	static const int chain_n[] = {2048, 8192, 32768, 131072}, chain_k[] = {2, 4, 8, 16, 32};
	static const int row_tmpl[] = {ARK_T_SOFTMAX, ARK_T_LAYERNORM, ARK_T_RMSNORM}, row_m[] = {1, 4, 16, 64};
	static const int copy_n[] = {1024, 4096, 16384, 65536, 262144, 1048576};
	int n = 0;
	for (int dt = 0; dt < ARK_FLOAT_DTYPES; dt++) {
		const int fp32 = dt == ARK_FP32;
		/* matmul, rows <= 16, aligned: b streamed through the cp.async ring */
		for (int l = 0; l < 2; l++)
			CALIB_EACH(m, small_m)
				for (int j = 0; j < (fp32 ? CALIB_COUNT(tn4) : CALIB_COUNT(tn2)); j++)
					CALIB_EACH(k, ks)
						n = calib_gadd(p, n, cap, ARK_T_MATMUL, dt, mm_lay[l], m, fp32 ? tn4[j] : tn2[j], k);
		/* rows <= 16, unaligned: the FMA tile */
		for (int l = 2; l < 4; l++)
			CALIB_EACH(m, odd_m)
				CALIB_EACH(tn, odd_tn)
					CALIB_EACH(k, odd_k)
						n = calib_gadd(p, n, cap, ARK_T_MATMUL, dt, mm_lay[l], m, tn, k);
		/* rows > 16: tensor cores (fp16, bf16; aligned, or staged through registers), FMA tile (fp32) */
		for (int l = 0; l < 4; l++)
			CALIB_EACH(m, large_m)
				for (int j = 0; j < (fp32 ? CALIB_COUNT(large_tn4) : CALIB_COUNT(large_tn2)); j++)
					for (int q = 0; q < CALIB_COUNT(ks) - fp32; q++)
						n = calib_gadd(p, n, cap, ARK_T_MATMUL, dt, mm_lay[l], m,
							       fp32 ? large_tn4[j] : large_tn2[j], ks[q] - (l >= 2));
		/* split-K partials, both regimes */
		for (int l = 0; l < 4; l++)
			CALIB_EACH(m, part_m)
				CALIB_EACH(tn, part_tn)
					CALIB_EACH(k, part_k)
						n = calib_gadd(p, n, cap, ARK_T_MATMUL_PARTIAL, dt, mm_lay[l], m, tn, k - (l >= 2));
		/* the split-K sum: k is the number of splits */
		CALIB_EACH(m, red_m)
			CALIB_EACH(tn, part_tn)
				CALIB_EACH(k, red_splits)
					n = calib_gadd(p, n, cap, ARK_T_REDUCE, dt, "-", m, tn, k);
		/* elementwise: k inputs (gelu, add), same shape or a broadcast row */
		CALIB_EACH(m, ew_m)
			CALIB_EACH(c, cols) {
				n = calib_gadd(p, n, cap, ARK_T_ELEMENTWISE, dt, "same", m, c, 1);
				n = calib_gadd(p, n, cap, ARK_T_ELEMENTWISE, dt, "same", m, c, 2);
				n = calib_gadd(p, n, cap, ARK_T_ELEMENTWISE, dt, "bcast", m, c, 2);
			}
		/* elementwise chains: n elements, k steps */
		CALIB_EACH(e, chain_n)
			CALIB_EACH(k, chain_k)
				n = calib_gadd(p, n, cap, ARK_T_EW_CHAIN, dt, "-", 1, e, k);
		/* row ops: m rows of n */
		CALIB_EACH(t, row_tmpl)
			CALIB_EACH(m, row_m)
				CALIB_EACH(c, cols)
					n = calib_gadd(p, n, cap, t, dt, "-", m, c, 1);
		/* copy: n elements */
		CALIB_EACH(e, copy_n)
			n = calib_gadd(p, n, cap, ARK_T_COPY, dt, "-", 1, e, 1);
	}
	return n;
}

#endif
