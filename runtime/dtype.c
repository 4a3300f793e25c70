/* dtype.c: element types of libarkrt: fp16/bf16 <-> float (round to nearest even), int32 as float, element access,
 * dtype names and the comparison of a result with its reference. */
#include <math.h>
#include <string.h>

#include "ark.h"

static uint32_t f2u(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

static float u2f(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

float ark_half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t exp = (h >> 10) & 0x1f;
	uint32_t man = h & 0x3ff;

	if (exp == 0) {
		/* zero or subnormal: man * 2^-24, exact in float */
		float v = ldexpf((float)man, -24);
		return sign ? -v : v;
	}
	if (exp == 31) /* Inf, or NaN with its payload */
		return u2f(sign | 0x7f800000u | (man << 13));
	return u2f(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t ark_float_to_half(float f)
{
	uint32_t x = f2u(f);
	uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
	uint32_t q, rem, halfway;
	int e, s;

	x &= 0x7fffffffu;
	if (x > 0x7f800000u) /* NaN: keep the top payload bits, force quiet so it stays a NaN */
		return sign | 0x7e00 | ((x >> 13) & 0x3ff);
	if (x >= 0x477ff000u) /* >= 65520 (halfway to 2^16, ties to even go up) and Inf */
		return sign | 0x7c00;
	e = (int)(x >> 23);
	if (e < 113) {
		/* result is subnormal (or zero): units of 2^-24; value = man24 * 2^(e - 126) units */
		uint32_t man = (x & 0x7fffffu) | 0x800000u;
		if (e == 0) /* float subnormals are far below 2^-25 */
			return sign;
		s = 126 - e; /* >= 14 */
		if (s > 24)
			return sign;
		q = man >> s;
		rem = man & ((1u << s) - 1);
		halfway = 1u << (s - 1);
		if (rem > halfway || (rem == halfway && (q & 1)))
			q++; /* may carry into the smallest normal, whose encoding is q == 0x400 */
		return sign | (uint16_t)q;
	}
	q = ((uint32_t)(e - 112) << 10) | ((x >> 13) & 0x3ff);
	rem = x & 0x1fff;
	if (rem > 0x1000 || (rem == 0x1000 && (q & 1)))
		q++; /* carries into the exponent; cannot pass 0x7bff since x < 0x477ff000 */
	return sign | (uint16_t)q;
}

float ark_bf16_to_float(uint16_t h)
{
	return u2f((uint32_t)h << 16);
}

uint16_t ark_float_to_bf16(float f)
{
	uint32_t x = f2u(f);

	if ((x & 0x7fffffffu) > 0x7f800000u) /* NaN: truncate and force quiet */
		return (uint16_t)((x >> 16) | 0x40);
	x += 0x7fffu + ((x >> 16) & 1); /* ties to even; overflow rounds to Inf */
	return (uint16_t)(x >> 16);
}

float ark_get(const void *buf, int dtype, int64_t i)
{
	switch (dtype) {
	case ARK_FP16:
		return ark_half_to_float(((const uint16_t *)buf)[i]);
	case ARK_BF16:
		return ark_bf16_to_float(((const uint16_t *)buf)[i]);
	case ARK_INT32:
		return (float)((const int32_t *)buf)[i];
	default:
		return ((const float *)buf)[i];
	}
}

void ark_set(void *buf, int dtype, int64_t i, float v)
{
	switch (dtype) {
	case ARK_FP16:
		((uint16_t *)buf)[i] = ark_float_to_half(v);
		break;
	case ARK_BF16:
		((uint16_t *)buf)[i] = ark_float_to_bf16(v);
		break;
	case ARK_INT32: /* to nearest, saturated (NaN: 0) */
		((int32_t *)buf)[i] = v != v ? 0 : v >= 2147483647.0f ? INT32_MAX : v <= -2147483648.0f ? INT32_MIN : (int32_t)lrintf(v);
		break;
	default:
		((float *)buf)[i] = v;
		break;
	}
}

const char *ark_dtype_name(int dtype)
{
	static const char *const names[ARK_DTYPE__COUNT] = {
#define X(id, name) [ARK_##id] = name,
		DTYPE_LIST(X)
#undef X
	};
	return dtype >= 0 && dtype < ARK_DTYPE__COUNT ? names[dtype] : "unknown";
}

/* Non-finite elements of got are counted in *bad and left out of the norms, so *rel says how far the
 * finite part is; callers check both. */
void ark_compare(const void *got, const void *want, int dtype, int64_t n, double *rel, int64_t *bad)
{
	double num = 0, den = 0;
	int64_t nbad = 0;

	for (int64_t i = 0; i < n; i++) {
		double g = ark_get(got, dtype, i), w = ark_get(want, dtype, i);
		if (!isfinite(g)) {
			nbad++;
			continue;
		}
		num += (g - w) * (g - w);
		den += w * w;
	}
	if (rel)
		*rel = den > 0 ? sqrt(num / den) : sqrt(num);
	if (bad)
		*bad = nbad;
}
