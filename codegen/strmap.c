/* strmap.c: names to indices by open addressing (FNV-1a hash, linear probing, at most half full). */
#include "strmap.h"
#include "diag.h"

#include <stdlib.h>
#include <string.h>

uint32_t strmap_hash(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

int strmap_get(const struct strmap *m, const char *name, strmap_name_fn *name_of, const void *ctx)
{
	if (!m->cap)
		return -1;
	uint32_t h = strmap_hash(name), mask = (uint32_t)m->cap - 1;
	for (uint32_t k = h & mask;; k = (k + 1) & mask) {
		if (m->val[k] < 0)
			return -1;
		if (m->hash[k] == h && !strcmp(name_of(ctx, m->val[k]), name))
			return m->val[k];
	}
}

/* Doubles the table (or makes the first one), placing every slot again by its stored hash. */
static void grow(struct strmap *m)
{
	int cap = m->cap ? 2 * m->cap : 64;
	ARK_ASSERT(cap > 0 && cap <= (1 << 30));
	uint32_t *hash = xmalloc(sizeof *hash * (size_t)cap);
	int *val = xmalloc(sizeof *val * (size_t)cap);
	for (int k = 0; k < cap; k++)
		val[k] = -1;
	for (int k = 0; k < m->cap; k++) {
		if (m->val[k] < 0)
			continue;
		uint32_t j = m->hash[k] & (uint32_t)(cap - 1);
		while (val[j] >= 0)
			j = (j + 1) & (uint32_t)(cap - 1);
		hash[j] = m->hash[k];
		val[j] = m->val[k];
	}
	free(m->hash);
	free(m->val);
	m->hash = hash;
	m->val = val;
	m->cap = cap;
}

void strmap_put(struct strmap *m, const char *name, int i, strmap_name_fn *name_of, const void *ctx)
{
	ARK_ASSERT(i >= 0);
	if (2 * (m->n + 1) > m->cap)
		grow(m);
	uint32_t h = strmap_hash(name), mask = (uint32_t)m->cap - 1;
	uint32_t k = h & mask;
	for (; m->val[k] >= 0; k = (k + 1) & mask)
		if (m->hash[k] == h && !strcmp(name_of(ctx, m->val[k]), name))
			return;
	m->hash[k] = h;
	m->val[k] = i;
	m->n++;
}

void strmap_free(struct strmap *m)
{
	free(m->hash);
	free(m->val);
	memset(m, 0, sizeof *m);
}
