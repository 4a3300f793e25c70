/* streams.c: stream assignment policies over an op DAG, the events they need, the checker of a
 * stream program and its predicted latency (streams.h). Sees a DAG, never ops. */
#include "streams.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "partition/part.h"

const char *const stream_policy_name[SP__COUNT] = {
#define X(id, name) [SP_##id] = name,
	STREAM_POLICY_LIST(X)
#undef X
};

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

static double cost(const struct sdag *d, int v) { return d->cost_us ? d->cost_us[v] : 1.0; }
static double work(const struct sdag *d, int v) { return d->work_us ? d->work_us[v] : cost(d, v); }

/* 0 if every edge goes forward and stays inside the DAG. */
static int check_dag(const struct sdag *d, char *err, size_t errlen)
{
	if (d->n < 0 || (d->n > 0 && (!d->xadj || d->xadj[0] != 0)))
		return fail(err, errlen, "malformed DAG");
	for (int u = 0; u < d->n; u++)
		for (int64_t e = d->xadj[u]; e < d->xadj[u + 1]; e++)
			if (d->adj[e] <= u || d->adj[e] >= d->n)
				return fail(err, errlen, "edge %d -> %d is not forward in a DAG of %d nodes", u, d->adj[e],
					    d->n);
	return 0;
}

/* Predecessors as CSR (px: n + 1, pa: edges), ascending. */
static void preds(const struct sdag *d, int64_t **px, int **pa)
{
	int n = d->n;
	int64_t m = n ? d->xadj[n] : 0;
	*px = xcalloc((size_t)n + 2, sizeof **px);
	*pa = xmalloc(((size_t)m + 1) * sizeof **pa);
	for (int64_t e = 0; e < m; e++)
		(*px)[d->adj[e] + 1]++;
	for (int v = 0; v < n; v++)
		(*px)[v + 1] += (*px)[v];
	int64_t *fill = xmalloc(((size_t)n + 1) * sizeof *fill);
	memcpy(fill, *px, ((size_t)n + 1) * sizeof *fill);
	for (int u = 0; u < n; u++)
		for (int64_t e = d->xadj[u]; e < d->xadj[u + 1]; e++)
			(*pa)[fill[d->adj[e]]++] = u;
	free(fill);
}

/* Longest path from a source, in edges; returns the number of levels. */
static int levels(const struct sdag *d, int *level)
{
	int nlev = 0;
	for (int v = 0; v < d->n; v++)
		level[v] = 0;
	for (int u = 0; u < d->n; u++) {
		nlev = level[u] + 1 > nlev ? level[u] + 1 : nlev;
		for (int64_t e = d->xadj[u]; e < d->xadj[u + 1]; e++)
			if (level[d->adj[e]] < level[u] + 1)
				level[d->adj[e]] = level[u] + 1;
	}
	return nlev;
}

/* Nodes sorted by (level, index): a topological order, wave after wave. wave0[l]: first position
 * of wave l (nlev + 1 entries). */
static void wave_order(const struct sdag *d, const int *level, int nlev, int *order, int *wave0)
{
	memset(wave0, 0, ((size_t)nlev + 1) * sizeof *wave0);
	for (int v = 0; v < d->n; v++)
		wave0[level[v] + 1]++;
	for (int l = 0; l < nlev; l++)
		wave0[l + 1] += wave0[l];
	int *fill = xmalloc(((size_t)nlev + 1) * sizeof *fill);
	memcpy(fill, wave0, ((size_t)nlev + 1) * sizeof *fill);
	for (int v = 0; v < d->n; v++)
		order[fill[level[v]]++] = v;
	free(fill);
}

static void add_sync(struct splan *pl, int *cap, int from, int to)
{
	if (pl->n_sync == *cap) {
		*cap = *cap ? 2 * *cap : 64;
		pl->sync = xrealloc(pl->sync, (size_t)*cap * sizeof *pl->sync);
	}
	pl->sync[pl->n_sync++] = (struct sevent){from, to};
}

/* Every node of one group of positions [a, b) of the order after every node of [p, a). */
static void sync_all(struct splan *pl, int *cap, int p, int a, int b)
{
	for (int i = a; i < b; i++)
		for (int j = p; j < a; j++)
			add_sync(pl, cap, pl->order[j], pl->order[i]);
}

/* ---- policies ---------------------------------------------------------------------------------- */

static void policy_single(const struct sdag *d, struct splan *pl)
{
	for (int v = 0; v < d->n; v++)
		pl->order[v] = v, pl->stream[v] = 0;
}

/* RAF's wavefront: wave l holds the ops whose longest path from a source has l edges; op r of a
 * wave goes to stream r mod N; every op of a wave waits for every op of the wave before. */
static void policy_wavefront(const struct sdag *d, int N, struct splan *pl)
{
	int *level = xmalloc(((size_t)d->n + 1) * sizeof *level);
	int nlev = levels(d, level), cap = 0;
	int *wave0 = xmalloc(((size_t)nlev + 2) * sizeof *wave0);
	wave_order(d, level, nlev, pl->order, wave0);
	for (int l = 0; l < nlev; l++) {
		for (int i = wave0[l]; i < wave0[l + 1]; i++)
			pl->stream[pl->order[i]] = (i - wave0[l]) % N;
		if (l > 0)
			sync_all(pl, &cap, wave0[l - 1], wave0[l], wave0[l + 1]);
	}
	free(wave0);
	free(level);
}

/* Chains as stream numbers: chain c (numbered in the order chains start) on stream c mod N. */
static void chains_to_streams(const struct sdag *d, const int *chain, int N, struct splan *pl)
{
	for (int v = 0; v < d->n; v++)
		pl->stream[v] = chain[v] % N;
}

/* RAF's ASAP: in topological order, every op marks one out-edge heavy: to its costliest successor
 * that no earlier op has taken as its chain's continuation (ties: the lowest index). Chains along
 * heavy edges share a stream; every other (light) edge that crosses streams is an event. */
static void policy_asap(const struct sdag *d, int N, struct splan *pl)
{
	int n = d->n, chains = 0;
	int *chain = xmalloc(((size_t)n + 1) * sizeof *chain);
	for (int v = 0; v < n; v++)
		chain[v] = -1;
	for (int u = 0; u < n; u++) {
		if (chain[u] < 0)
			chain[u] = chains++;
		int best = -1;
		for (int64_t e = d->xadj[u]; e < d->xadj[u + 1]; e++) {
			int v = d->adj[e];
			if (chain[v] < 0 && (best < 0 || cost(d, v) > cost(d, best)))
				best = v;
		}
		if (best >= 0)
			chain[best] = chain[u];
		pl->order[u] = u;
	}
	chains_to_streams(d, chain, N, pl);
	free(chain);
}

/* NNC's static schedule: ops ranked by depth (their level), taken in rank order; an op continues the
 * chain of a predecessor that is still its chain's last op, the deepest one (then the costliest),
 * else it starts a chain; chains go to streams in the order they start. Events where chains meet. */
static void policy_nnc(const struct sdag *d, int N, struct splan *pl)
{
	int n = d->n, chains = 0;
	int *level = xmalloc(((size_t)n + 1) * sizeof *level), nlev = levels(d, level);
	int *wave0 = xmalloc(((size_t)nlev + 2) * sizeof *wave0);
	int *chain = xmalloc(((size_t)n + 1) * sizeof *chain), *tail = xmalloc(((size_t)n + 1) * sizeof *tail);
	for (int v = 0; v < n; v++)
		tail[v] = -1;
	int64_t *px;
	int *pa;
	preds(d, &px, &pa);
	wave_order(d, level, nlev, pl->order, wave0);
	for (int i = 0; i < n; i++) {
		int v = pl->order[i], best = -1;
		for (int64_t k = px[v]; k < px[v + 1]; k++) {
			int u = pa[k];
			if (tail[chain[u]] != u)
				continue;
			if (best < 0 || level[u] > level[best] || (level[u] == level[best] && cost(d, u) > cost(d, best)))
				best = u;
		}
		chain[v] = best >= 0 ? chain[best] : chains++;
		tail[chain[v]] = v;
	}
	chains_to_streams(d, chain, N, pl);
	free(px);
	free(pa);
	free(chain);
	free(tail);
	free(wave0);
	free(level);
}

/* XLA: on the transitively reduced DAG, in topological order, an op takes the stream of a producer
 * that has not handed its stream to another consumer yet; with several such producers on several
 * streams, the stream with the most ops submitted so far (ties: the lowest); with none (a source, or
 * every producer's stream taken), a stream of its own while fewer than N are used, else the least
 * loaded. Waits on the other producers are events; the host joins every stream at the end. */
static void policy_xla(const struct sdag *d, int N, struct splan *pl)
{
	int n = d->n, used = 0;
	int64_t m = n ? d->xadj[n] : 0;
	uint8_t *keep = xmalloc((size_t)m + 1);
	struct part_dag pd = {.n = n, .xadj = d->xadj, .adj = d->adj};
	if (part_transitive_reduce(&pd, keep) < 0)
		memset(keep, 1, (size_t)m); /* never: check_dag passed; all edges keep it correct anyway */
	int *load = xcalloc((size_t)N, sizeof *load);
	uint8_t *handed = xcalloc((size_t)n + 1, 1);
	int *rp = xmalloc(((size_t)n + 1) * sizeof *rp); /* reduced predecessors of the current op */
	int64_t *px;
	int *pa;
	preds(d, &px, &pa);
	for (int v = 0; v < n; v++) {
		int nr = 0, pick = -1;
		for (int64_t k = px[v]; k < px[v + 1]; k++) { /* is pa[k] -> v kept? */
			int u = pa[k];
			for (int64_t e = d->xadj[u]; e < d->xadj[u + 1]; e++)
				if (d->adj[e] == v && keep[e])
					rp[nr++] = u;
		}
		for (int k = 0; k < nr; k++) {
			int u = rp[k];
			if (handed[u])
				continue;
			if (pick < 0 || load[pl->stream[u]] > load[pl->stream[pick]] ||
			    (load[pl->stream[u]] == load[pl->stream[pick]] && pl->stream[u] < pl->stream[pick]))
				pick = u;
		}
		int s;
		if (pick >= 0) {
			s = pl->stream[pick];
			handed[pick] = 1;
		} else if (used < N) {
			s = used++;
		} else {
			s = 0;
			for (int t = 1; t < N; t++)
				if (load[t] < load[s])
					s = t;
		}
		pl->stream[v] = s;
		load[s]++;
		pl->order[v] = v;
	}
	free(px);
	free(pa);
	free(rp);
	free(handed);
	free(load);
	free(keep);
}

#define IOS_WINDOW 8 /* ops per stage at most, as IOS bounds its search */

/* Groups of the stage order[a .. b): connected components of its internal edges (group[i - a]), in
 * the order they first appear; returns their number. */
static int stage_groups(const struct sdag *d, const int *order, const int *ipos, int a, int b, int *group)
{
	int k = b - a, ng = 0;
	for (int i = 0; i < k; i++)
		group[i] = i;
	for (int changed = 1; changed;) { /* label propagation: k is small */
		changed = 0;
		for (int i = 0; i < k; i++) {
			int u = order[a + i];
			for (int64_t e = d->xadj[u]; e < d->xadj[u + 1]; e++) {
				int j = ipos[d->adj[e]] - a;
				if (j < 0 || j >= k)
					continue;
				int lo = group[i] < group[j] ? group[i] : group[j];
				if (group[i] != lo || group[j] != lo)
					group[i] = group[j] = lo, changed = 1;
			}
		}
	}
	int map[IOS_WINDOW];
	for (int i = 0; i < k; i++)
		map[i] = -1;
	for (int i = 0; i < k; i++) {
		if (map[group[i]] < 0)
			map[group[i]] = ng++;
		group[i] = map[group[i]];
	}
	return ng;
}

/* Latency of the stage order[a .. b) with its groups on streams g mod N: the busiest stream's ops
 * one after the other, or the stage's work spread over the GPU, whichever is longer. */
static double stage_us(const struct sdag *d, const int *order, const int *ipos, int a, int b, int N)
{
	int group[IOS_WINDOW];
	double on[IOS_WINDOW] = {0}, w = 0, most = 0;
	stage_groups(d, order, ipos, a, b, group);
	for (int i = a; i < b; i++) {
		int s = group[i - a] % N;
		on[s] += cost(d, order[i]) + d->costs.kernel_gap_us;
		w += work(d, order[i]);
		most = on[s] > most ? on[s] : most;
	}
	return most > w ? most : w;
}

/* IOS: the wave order cut into stages by dynamic programming: best[j] = min over stages order[i .. j)
 * (at most IOS_WINDOW ops) of best[i] + the stage's latency + a sync; inside a stage, every group of
 * dependent ops on one stream; every op of a stage waits for every op of the stage before. */
static void policy_ios(const struct sdag *d, int N, struct splan *pl)
{
	int n = d->n, cap = 0;
	int *level = xmalloc(((size_t)n + 1) * sizeof *level), nlev = levels(d, level);
	int *wave0 = xmalloc(((size_t)nlev + 2) * sizeof *wave0);
	int *ipos = xmalloc(((size_t)n + 1) * sizeof *ipos), *cut = xmalloc(((size_t)n + 1) * sizeof *cut);
	double *best = xmalloc(((size_t)n + 1) * sizeof *best);
	wave_order(d, level, nlev, pl->order, wave0);
	for (int i = 0; i < n; i++)
		ipos[pl->order[i]] = i;
	best[0] = 0;
	for (int j = 1; j <= n; j++) {
		best[j] = -1;
		for (int i = j - 1; i >= 0 && j - i <= IOS_WINDOW; i--) {
			double t = best[i] + stage_us(d, pl->order, ipos, i, j, N) + (i > 0 ? d->costs.event_us : 0);
			if (best[j] < 0 || t < best[j])
				best[j] = t, cut[j] = i;
		}
	}
	int *stage_end = xmalloc(((size_t)n + 2) * sizeof *stage_end), ns = 0;
	for (int j = n; j > 0; j = cut[j])
		stage_end[ns++] = j;
	for (int k = ns - 1, a = 0, prev = -1; k >= 0; k--) { /* stages from the first */
		int b = stage_end[k], group[IOS_WINDOW];
		stage_groups(d, pl->order, ipos, a, b, group);
		for (int i = a; i < b; i++)
			pl->stream[pl->order[i]] = group[i - a] % N;
		if (prev >= 0)
			sync_all(pl, &cap, prev, a, b);
		prev = a;
		a = b;
	}
	free(stage_end);
	free(best);
	free(cut);
	free(ipos);
	free(wave0);
	free(level);
}

/* ---- events and the checker -------------------------------------------------------------------- */

/* Vector clocks over the issue order: clock[v * S + s] is the position on stream s of the last op of
 * s ordered before v ends (-1: none). spos: position of each node on its stream. */
struct clocks {
	int S;
	int *clock, *spos, *ipos, *last;
};

static void clocks_init(struct clocks *c, const struct sdag *d, const struct splan *pl)
{
	c->S = pl->n_streams;
	c->clock = xmalloc(((size_t)d->n * c->S + 1) * sizeof *c->clock);
	c->spos = xmalloc(((size_t)d->n + 1) * sizeof *c->spos);
	c->ipos = xmalloc(((size_t)d->n + 1) * sizeof *c->ipos);
	c->last = xmalloc(((size_t)c->S + 1) * sizeof *c->last);
	for (int s = 0; s < c->S; s++)
		c->last[s] = -1;
	for (int i = 0; i < d->n; i++)
		c->ipos[pl->order[i]] = i;
}

static void clocks_free(struct clocks *c)
{
	free(c->clock);
	free(c->spos);
	free(c->ipos);
	free(c->last);
}

/* Node v starts: its clock from its stream's previous op. */
static int *clock_start(struct clocks *c, int v, int s)
{
	int *cur = c->clock + (size_t)v * c->S;
	if (c->last[s] >= 0)
		memcpy(cur, c->clock + (size_t)c->last[s] * c->S, (size_t)c->S * sizeof *cur);
	else
		for (int t = 0; t < c->S; t++)
			cur[t] = -1;
	return cur;
}

static void clock_merge(struct clocks *c, int *cur, int u)
{
	const int *o = c->clock + (size_t)u * c->S;
	for (int t = 0; t < c->S; t++)
		cur[t] = o[t] > cur[t] ? o[t] : cur[t];
}

static void clock_end(struct clocks *c, int *cur, int v, int s)
{
	c->spos[v] = c->last[s] >= 0 ? c->spos[c->last[s]] + 1 : 0;
	cur[s] = c->spos[v];
	c->last[s] = v;
}

static const int *g_ipos; /* for the qsort below */
static int by_ipos_desc(const void *a, const void *b)
{
	int x = g_ipos[*(const int *)a], y = g_ipos[*(const int *)b];
	return (x < y) - (x > y);
}

void streams_events(const struct sdag *d, struct splan *pl)
{
	int n = d->n, cap = 0;
	struct clocks c;
	int64_t *px;
	int *pa;
	clocks_init(&c, d, pl);
	preds(d, &px, &pa);
	/* sync predecessors as CSR too */
	int64_t *sx = xcalloc((size_t)n + 2, sizeof *sx);
	int *sa = xmalloc(((size_t)pl->n_sync + 1) * sizeof *sa);
	for (int k = 0; k < pl->n_sync; k++)
		sx[pl->sync[k].to + 1]++;
	for (int v = 0; v < n; v++)
		sx[v + 1] += sx[v];
	int64_t *fill = xmalloc(((size_t)n + 1) * sizeof *fill);
	memcpy(fill, sx, ((size_t)n + 1) * sizeof *fill);
	for (int k = 0; k < pl->n_sync; k++)
		sa[fill[pl->sync[k].to]++] = pl->sync[k].from;
	free(fill);
	int *p = xmalloc(((size_t)(n ? px[n] : 0) + (size_t)pl->n_sync + 1) * sizeof *p); /* one node's preds and syncs */
	free(pl->ev);
	pl->ev = NULL;
	pl->n_events = 0;
	g_ipos = c.ipos;
	for (int i = 0; i < n; i++) {
		int v = pl->order[i], s = pl->stream[v], np = 0;
		int *cur = clock_start(&c, v, s);
		for (int64_t k = px[v]; k < px[v + 1]; k++)
			p[np++] = pa[k];
		for (int64_t k = sx[v]; k < sx[v + 1]; k++)
			p[np++] = sa[k];
		qsort(p, (size_t)np, sizeof *p, by_ipos_desc);
		for (int k = 0; k < np; k++) {
			int u = p[k], su = pl->stream[u];
			if (k > 0 && u == p[k - 1])
				continue;
			if (su == s || cur[su] >= c.spos[u])
				continue; /* stream order, or implied */
			if (pl->n_events == cap) {
				cap = cap ? 2 * cap : 64;
				pl->ev = xrealloc(pl->ev, (size_t)cap * sizeof *pl->ev);
			}
			pl->ev[pl->n_events++] = (struct sevent){u, v};
			clock_merge(&c, cur, u);
		}
		clock_end(&c, cur, v, s);
	}
	free(p);
	free(sx);
	free(sa);
	free(px);
	free(pa);
	clocks_free(&c);
}

int streams_check(const struct sdag *d, const struct splan *pl, char *err, size_t errlen)
{
	int n = d->n, rc = 0;
	if (check_dag(d, err, errlen) < 0)
		return -1;
	if (pl->n != n || pl->n_streams < (n > 0))
		return fail(err, errlen, "the program has %d nodes on %d streams for a DAG of %d", pl->n, pl->n_streams, n);
	uint8_t *seen = xcalloc((size_t)n + 1, 1);
	for (int i = 0; i < n && !rc; i++) {
		int v = pl->order[i];
		if (v < 0 || v >= n || seen[v])
			rc = fail(err, errlen, "issue position %d: node %d is not a new node", i, v);
		else if (pl->stream[v] < 0 || pl->stream[v] >= pl->n_streams)
			rc = fail(err, errlen, "node %d is on stream %d of %d", v, pl->stream[v], pl->n_streams);
		else
			seen[v] = 1;
	}
	free(seen);
	if (rc)
		return rc;
	struct clocks c;
	clocks_init(&c, d, pl);
	/* events waited on by each node, as CSR over nodes */
	int64_t *ex = xcalloc((size_t)n + 2, sizeof *ex);
	int *ea = xmalloc(((size_t)pl->n_events + 1) * sizeof *ea);
	for (int k = 0; k < pl->n_events && !rc; k++) {
		const struct sevent *e = &pl->ev[k];
		if (e->from < 0 || e->from >= n || e->to < 0 || e->to >= n)
			rc = fail(err, errlen, "event %d: %d -> %d is outside the DAG", k, e->from, e->to);
		else if (c.ipos[e->from] >= c.ipos[e->to])
			rc = fail(err, errlen, "event %d -> %d: node %d waits on a record not issued before it (issue positions %d, %d)",
				  e->from, e->to, e->to, c.ipos[e->from], c.ipos[e->to]);
		else
			ex[e->to + 1]++;
	}
	for (int v = 0; v < n && !rc; v++)
		ex[v + 1] += ex[v];
	int64_t *fill = xmalloc(((size_t)n + 1) * sizeof *fill);
	memcpy(fill, ex, ((size_t)n + 1) * sizeof *fill);
	for (int k = 0; k < pl->n_events && !rc; k++)
		ea[fill[pl->ev[k].to]++] = pl->ev[k].from;
	free(fill);
	for (int i = 0; i < n && !rc; i++) {
		int v = pl->order[i], s = pl->stream[v];
		int *cur = clock_start(&c, v, s);
		for (int64_t k = ex[v]; k < ex[v + 1]; k++)
			clock_merge(&c, cur, ea[k]);
		clock_end(&c, cur, v, s);
	}
	for (int u = 0; u < n && !rc; u++)
		for (int64_t e = d->xadj[u]; e < d->xadj[u + 1] && !rc; e++) {
			int v = d->adj[e], su = pl->stream[u];
			if (c.ipos[u] >= c.ipos[v])
				rc = fail(err, errlen, "edge %d -> %d: node %d is issued at %d, after node %d at %d", u, v, u,
					  c.ipos[u], v, c.ipos[v]);
			else if (c.clock[(size_t)v * c.S + su] < c.spos[u])
				rc = fail(err, errlen, "edge %d -> %d is not ordered: node %d on stream %d, node %d on stream %d, "
					  "no chain of stream order and events between them", u, v, u, su, v, pl->stream[v]);
		}
	free(ex);
	free(ea);
	clocks_free(&c);
	return rc;
}

int streams_assign(const struct sdag *d, enum stream_policy p, int max_streams, struct splan *out, char *err,
		   size_t errlen)
{
	memset(out, 0, sizeof *out);
	if (check_dag(d, err, errlen) < 0)
		return -1;
	if (max_streams < 1 || max_streams > STREAMS_MAX || (int)p < 0 || p >= SP__COUNT)
		return fail(err, errlen, "stream policy %d on %d streams", (int)p, max_streams);
	int n = d->n, N = p == SP_SINGLE ? 1 : max_streams;
	out->n = n;
	out->order = xmalloc(((size_t)n + 1) * sizeof *out->order);
	out->stream = xcalloc((size_t)n + 1, sizeof *out->stream);
	switch (p) {
	case SP_SINGLE: policy_single(d, out); break;
	case SP_WAVEFRONT: policy_wavefront(d, N, out); break;
	case SP_ASAP: policy_asap(d, N, out); break;
	case SP_IOS: policy_ios(d, N, out); break;
	case SP_XLA: policy_xla(d, N, out); break;
	case SP_NNC: policy_nnc(d, N, out); break;
	case SP__COUNT: break;
	}
	/* streams numbered densely in the order they are first issued */
	int map[STREAMS_MAX];
	for (int s = 0; s < STREAMS_MAX; s++)
		map[s] = -1;
	for (int i = 0; i < n; i++) {
		int *s = &out->stream[out->order[i]];
		ARK_ASSERT(*s >= 0 && *s < N);
		if (map[*s] < 0)
			map[*s] = out->n_streams++;
		*s = map[*s];
	}
	if (!out->n_streams)
		out->n_streams = 1;
	streams_events(d, out);
	int proved = streams_check(d, out, err, errlen) == 0;
	ARK_ASSERT(proved); /* every policy's program is proved before anyone sees it */
	return 0;
}

double streams_predict(const struct sdag *d, const struct splan *pl, int graph)
{
	const struct stream_costs *c = &d->costs;
	int n = d->n;
	double *end = xcalloc((size_t)n + 1, sizeof *end), *tail = xcalloc((size_t)pl->n_streams + 1, sizeof *tail);
	double host = graph ? c->launch_us : 0, total_work = 0, last = 0;
	int64_t *ex = xcalloc((size_t)n + 2, sizeof *ex);
	int *ea = xmalloc(((size_t)pl->n_events + 1) * sizeof *ea);
	for (int k = 0; k < pl->n_events; k++)
		ex[pl->ev[k].to + 1]++;
	for (int v = 0; v < n; v++)
		ex[v + 1] += ex[v];
	int64_t *fill = xmalloc(((size_t)n + 1) * sizeof *fill);
	memcpy(fill, ex, ((size_t)n + 1) * sizeof *fill);
	for (int k = 0; k < pl->n_events; k++)
		ea[fill[pl->ev[k].to]++] = pl->ev[k].from;
	free(fill);
	for (int i = 0; i < n; i++) {
		int v = pl->order[i], s = pl->stream[v], nl = d->launches ? d->launches[v] : 1;
		if (!graph)
			host += c->launch_us * nl + c->event_host_us * (double)(ex[v + 1] - ex[v]);
		double start = tail[s] + c->kernel_gap_us;
		start = host > start ? host : start;
		for (int64_t k = ex[v]; k < ex[v + 1]; k++)
			start = end[ea[k]] + c->event_us > start ? end[ea[k]] + c->event_us : start;
		end[v] = start + cost(d, v) + (nl - 1) * c->kernel_gap_us;
		tail[s] = end[v];
		last = end[v] > last ? end[v] : last;
		total_work += work(d, v);
	}
	double t = (last > total_work ? last : total_work) + c->sync_us;
	free(end);
	free(tail);
	free(ex);
	free(ea);
	return t;
}

void splan_free(struct splan *pl)
{
	free(pl->order);
	free(pl->stream);
	free(pl->sync);
	free(pl->ev);
	memset(pl, 0, sizeof *pl);
}
