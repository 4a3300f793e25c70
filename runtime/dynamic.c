/* dynamic.c: the dynamic backend's decisions (ark_dynamic.h): dependencies from conflicting arena
 * bytes, the stream of each op, and only the event waits that stream order and earlier waits do not
 * already imply (vector clocks over the issue order, as codegen/streams.c places static events). */
#include <stdlib.h>
#include <string.h>

#include "ark.h"
#include "ark_dynamic.h"

int ark_dyn_init(struct ark_dyn *d, int n_nodes, int n_streams)
{
	memset(d, 0, sizeof *d);
	d->n = n_nodes;
	d->S = n_streams < 1 ? 1 : n_streams;
	d->tail = malloc((size_t)d->S * sizeof *d->tail);
	d->slen = malloc((size_t)d->S * sizeof *d->slen);
	d->node_stream = malloc(((size_t)n_nodes + 1) * sizeof *d->node_stream);
	d->spos = malloc(((size_t)n_nodes + 1) * sizeof *d->spos);
	d->clock = malloc(((size_t)n_nodes + 1) * (size_t)d->S * sizeof *d->clock);
	if (!d->tail || !d->slen || !d->node_stream || !d->spos || !d->clock) {
		ark_dyn_free(d);
		return ark_error("out of memory");
	}
	ark_dyn_begin(d);
	return ARK_OK;
}

void ark_dyn_free(struct ark_dyn *d)
{
	free(d->tail);
	free(d->slen);
	free(d->node_stream);
	free(d->spos);
	free(d->clock);
	memset(d, 0, sizeof *d);
}

void ark_dyn_begin(struct ark_dyn *d)
{
	for (int s = 0; s < d->S; s++)
		d->tail[s] = -1, d->slen[s] = 0;
}

int ark_dyn_conflict(const struct ark_streams *p, int a, int b)
{
	const struct ark_snode *A = &p->nodes[a], *B = &p->nodes[b];
	for (uint32_t x = A->range0; x < A->range0 + A->n_range; x++)
		for (uint32_t y = B->range0; y < B->range0 + B->n_range; y++) {
			const struct ark_srange *u = &p->ranges[x], *v = &p->ranges[y];
			if ((u->write || v->write) && u->off < v->off + v->bytes && v->off < u->off + u->bytes)
				return 1;
		}
	return 0;
}

int ark_dyn_issue(struct ark_dyn *d, const struct ark_streams *p, int i, int (*idle)(void *ctx, int node), void *ctx,
		  int *stream, int *waits)
{
	int S = d->S, pick = -1, nw = 0;
	for (int j = i - 1; j >= 0 && pick < 0; j--) /* the latest parent that is its stream's last node */
		if (d->tail[d->node_stream[j]] == j && ark_dyn_conflict(p, i, j))
			pick = d->node_stream[j];
	for (int s = 0; s < S && pick < 0; s++)
		if (d->tail[s] < 0)
			pick = s;
	for (int s = 0; s < S && pick < 0; s++)
		if (idle && idle(ctx, d->tail[s]))
			pick = s;
	if (pick < 0) {
		pick = 0;
		for (int s = 1; s < S; s++)
			if (d->tail[s] < d->tail[pick])
				pick = s;
	}
	int *cur = d->clock + (size_t)i * S;
	if (d->tail[pick] >= 0)
		memcpy(cur, d->clock + (size_t)d->tail[pick] * S, (size_t)S * sizeof *cur);
	else
		for (int s = 0; s < S; s++)
			cur[s] = -1;
	for (int j = i - 1; j >= 0; j--) { /* the latest first: its wait implies more */
		int sj = d->node_stream[j];
		if (sj == pick || cur[sj] >= d->spos[j] || !ark_dyn_conflict(p, i, j))
			continue;
		waits[nw++] = j;
		for (int s = 0; s < S; s++) {
			int o = d->clock[(size_t)j * S + s];
			cur[s] = o > cur[s] ? o : cur[s];
		}
	}
	d->node_stream[i] = pick;
	d->spos[i] = d->slen[pick]++;
	cur[pick] = d->spos[i];
	d->tail[pick] = i;
	*stream = pick;
	return nw;
}
