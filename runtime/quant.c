/* quant.c: block-quantized weights on the host (q4_1, q8_0: GGUF's blocks, ark_model.h): rows of
 * blocks dequantised to fp32 for the CPU reference, and seeded random valid blocks for the weights no
 * file gives. */
#include <math.h>
#include <string.h>

#include "ark.h"

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static void wr16(unsigned char *p, uint16_t v) { p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8); }

int ark_dequant_row(const void *blocks, int dtype, int64_t n, float *out)
{
	const unsigned char *b = blocks;
	if (!ark_dtype_quantized(dtype) || n % ARK_QBLOCK)
		return ark_error("ark_dequant_row: %s row of %lld elements", ark_dtype_name(dtype), (long long)n);
	for (int64_t j = 0; j < n / ARK_QBLOCK; j++, b += ark_qblock_bytes(dtype), out += ARK_QBLOCK) {
		const float d = ark_half_to_float(rd16(b));
		if (dtype == ARK_Q4_1) {
			const float m = ark_half_to_float(rd16(b + 2));
			for (int e = 0; e < 16; e++) {
				out[e] = d * (float)(b[4 + e] & 15) + m;
				out[e + 16] = d * (float)(b[4 + e] >> 4) + m;
			}
		} else {
			for (int e = 0; e < 32; e++)
				out[e] = d * (float)(signed char)b[2 + e];
		}
	}
	return ARK_OK;
}

int ark_quantize_row(const float *x, int dtype, int64_t n, void *blocks)
{
	unsigned char *b = blocks;
	if (!ark_dtype_quantized(dtype) || n % ARK_QBLOCK)
		return ark_error("ark_quantize_row: %s row of %lld elements", ark_dtype_name(dtype), (long long)n);
	for (int64_t j = 0; j < n / ARK_QBLOCK; j++, b += ark_qblock_bytes(dtype), x += ARK_QBLOCK) {
		float lo = x[0], hi = x[0], amax = 0;
		for (int e = 0; e < ARK_QBLOCK; e++) {
			lo = fminf(lo, x[e]), hi = fmaxf(hi, x[e]);
			amax = fmaxf(amax, fabsf(x[e]));
		}
		if (dtype == ARK_Q4_1) {
			const float d = (hi - lo) / 15, id = d > 0 ? 1 / d : 0;
			wr16(b, ark_float_to_half(d));
			wr16(b + 2, ark_float_to_half(lo));
			for (int e = 0; e < 16; e++) {
				int q0 = (int)lrintf((x[e] - lo) * id), q1 = (int)lrintf((x[e + 16] - lo) * id);
				q0 = q0 < 0 ? 0 : q0 > 15 ? 15 : q0;
				q1 = q1 < 0 ? 0 : q1 > 15 ? 15 : q1;
				b[4 + e] = (unsigned char)(q0 | q1 << 4);
			}
		} else {
			const float d = amax / 127, id = d > 0 ? 1 / d : 0;
			wr16(b, ark_float_to_half(d));
			for (int e = 0; e < 32; e++) {
				int q = (int)lrintf(x[e] * id);
				b[2 + e] = (unsigned char)(signed char)(q < -127 ? -127 : q > 127 ? 127 : q);
			}
		}
	}
	return ARK_OK;
}

void ark_fill_random_quant(void *buf, int dtype, int64_t rows, int64_t last, uint64_t seed, float scale)
{
	/* values uniform in about [-scale, scale): the blocks of such a row, each with its own range */
	float x[ARK_QBLOCK];
	const int64_t nb = last / ARK_QBLOCK, bb = ark_qblock_bytes(dtype);
	for (int64_t r = 0; r < rows; r++)
		for (int64_t j = 0; j < nb; j++) {
			ark_fill_random(x, ARK_FP32, ARK_QBLOCK, seed + (uint64_t)(r * nb + j) * 0x9e3779b97f4a7c15ull, scale);
			ark_quantize_row(x, dtype, ARK_QBLOCK, (unsigned char *)buf + (r * nb + j) * bb);
		}
}
