/* random.c: deterministic seeded random fill of host buffers (xoshiro256**, seeded by splitmix64), and
 * the valid range of an int32 input (ids of an embedding, a position of rope or decode_attention, else
 * a 0/1 mask). */
#include <math.h>

#include "ark.h"

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t xoshiro_next(uint64_t s[4])
{
	uint64_t r = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return r;
}

void ark_fill_random(void *buf, int dtype, int64_t n, uint64_t seed, float scale)
{
	uint64_t sm = seed, s[4];

	for (int i = 0; i < 4; i++)
		s[i] = splitmix64(&sm);
	if (dtype == ARK_INT32) { /* a mask: 0 or 1 */
		ark_fill_random_ints(buf, n, seed, 2);
		return;
	}
	for (int64_t i = 0; i < n; i++) {
		/* k / 2^23 - 1 for k in [0, 2^24): 24 random bits, exact in float, in [-1, 1) */
		int32_t k = (int32_t)(xoshiro_next(s) >> 40);
		float u = (float)(k - (1 << 23)) * (1.0f / (1 << 23));
		ark_set(buf, dtype, i, u * scale);
		if (scale > 0 && ark_get(buf, dtype, i) >= scale) {
			/* rounding to the dtype reached scale: step to the next value below (it is positive) */
			if (dtype == ARK_FP32)
				((float *)buf)[i] = nextafterf(scale, 0.0f);
			else
				((uint16_t *)buf)[i]--;
		}
	}
}

void ark_fill_random_ints(int32_t *buf, int64_t n, uint64_t seed, int32_t hi)
{
	uint64_t sm = seed ^ 0x5851f42d4c957f2dull, s[4];

	for (int i = 0; i < 4; i++)
		s[i] = splitmix64(&sm);
	for (int64_t i = 0; i < n; i++)
		buf[i] = hi > 0 ? (int32_t)((xoshiro_next(s) >> 32) % (uint64_t)hi) : 0;
}

int32_t ark_int_range(const struct ark_model *m, int t)
{
	int64_t hi = -1;
	int pos = 0;
	for (int i = 0; i < m->n_ops; i++) {
		const struct ark_op *o = &m->ops[i];
		int64_t v;
		if (o->kind == ARK_OP_EMBEDDING && o->in[0] == t && o->in[1] >= 0 && o->in[1] < m->n_tensors) {
			v = m->tensors[o->in[1]].shape[0];
		} else if (o->kind == ARK_OP_KV_APPEND && o->n_in == 3 && o->in[2] == t && o->in[0] >= 0 &&
			   o->in[1] >= 0 && o->in[0] < m->n_tensors && o->in[1] < m->n_tensors) {
			/* a position: the rows of x fit in the cache */
			v = m->tensors[o->in[0]].shape[0] - m->tensors[o->in[1]].shape[0] + 1;
			pos = 1;
		} else if (o->kind == ARK_OP_DECODE_ATTENTION && o->in[3] == t) {
			/* a position: pos + T <= L, the rows the cache holds */
			v = m->tensors[o->in[1]].shape[0] - m->tensors[o->in[0]].shape[0] + 1;
			pos = 1;
		} else if (o->kind == ARK_OP_ROPE && o->in[1] == t) {
			v = ARK_ROPE_POS_RANGE; /* any position is valid for rope alone */
			pos = 1;
		} else {
			continue;
		}
		if (hi < 0 || v < hi)
			hi = v;
	}
	if (hi < 1)
		return pos ? 1 : 2;
	return hi > INT32_MAX ? INT32_MAX : (int32_t)hi;
}
