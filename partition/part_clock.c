/* part_clock.c: vector clocks kept only while a later vertex still has to read them. */
#include "partition/part.h"

#include <stdlib.h>
#include <string.h>

int part_clocks_init(struct part_clocks *c, int n, int lanes)
{
	memset(c, 0, sizeof *c);
	c->lanes = lanes;
	c->slot = malloc(((size_t)n + 1) * sizeof *c->slot);
	c->ref = calloc((size_t)n + 1, sizeof *c->ref);
	if (!c->slot || !c->ref) {
		part_clocks_free(c);
		return -1;
	}
	for (int v = 0; v < n; v++)
		c->slot[v] = -1;
	return 0;
}

int32_t *part_clock_new(struct part_clocks *c, int v)
{
	PART_ASSERT(c->slot[v] < 0);
	if (!c->n_free) {
		int cap = c->cap ? 2 * c->cap : 64;
		int32_t *pool = realloc(c->pool, ((size_t)cap * c->lanes + 1) * sizeof *pool);
		int *fl = realloc(c->free_list, (size_t)cap * sizeof *fl);
		if (pool)
			c->pool = pool;
		if (fl)
			c->free_list = fl;
		if (!pool || !fl)
			return NULL;
		for (int k = cap - 1; k >= c->cap; k--)
			c->free_list[c->n_free++] = k;
		c->cap = cap;
	}
	c->slot[v] = c->free_list[--c->n_free];
	if (++c->live > c->peak)
		c->peak = c->live;
	return c->pool + (size_t)c->slot[v] * c->lanes;
}

const int32_t *part_clock(const struct part_clocks *c, int v)
{
	PART_ASSERT(c->slot[v] >= 0);
	return c->pool + (size_t)c->slot[v] * c->lanes;
}

void part_clock_release(struct part_clocks *c, int v)
{
	PART_ASSERT(c->slot[v] >= 0);
	if (c->ref[v] > 0)
		c->ref[v]--;
	if (c->ref[v] > 0)
		return;
	c->free_list[c->n_free++] = c->slot[v];
	c->slot[v] = -1;
	c->live--;
}

void part_clocks_free(struct part_clocks *c)
{
	free(c->pool), free(c->free_list), free(c->slot), free(c->ref);
	memset(c, 0, sizeof *c);
}
