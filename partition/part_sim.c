/* part_sim.c: discrete-event latency simulator of the per-SM lists, with device-memory bandwidth shared
 * among the SMs that stream at each moment. */
#include "partition/part.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EPS 1e-9 /* us: events closer than this coincide */

enum { IDLE, DISPATCH, WORK };
enum { CAUSE_NONE, CAUSE_EDGE, CAUSE_PROGRAM, CAUSE_BARRIER };

struct smstate {
	int phase, v;        /* v: the running vertex */
	int next;            /* next index into the SM's sequence */
	double t_disp;       /* end of the dispatch phase */
	double t_comp;       /* end of the arithmetic */
	double mem_left;     /* bytes still to move */
	double free_at;      /* when the previous vertex on this SM finished */
};

static double compute_us(const struct part_dag *dag, const struct part_gpu *gpu, int v)
{
	double fl = dag->flops ? dag->flops[v] : 0.0;
	double tflops = (dag->tc && dag->tc[v] ? gpu->tc_tflops : gpu->fp32_tflops) / gpu->sms;
	double comp = fl > 0 ? fl / (tflops * 1e6) : 0.0;
	return dag->lat_us && dag->lat_us[v] > comp ? dag->lat_us[v] : comp;
}

/* Longest path by cost alone: every vertex at the bandwidth one SM gets alone, no hops. */
static double critical_path(const struct part_dag *dag, const struct part_gpu *gpu, double *dist)
{
	double share = gpu->dram_gbps, best = 0;
	for (int v = 0; v < dag->n; v++)
		dist[v] = 0;
	for (int u = 0; u < dag->n; u++) {
		double f = dist[u] + part_vertex_us(dag, gpu, u, share);
		if (f > best)
			best = f;
		for (int64_t e = dag->xadj[u]; e < dag->xadj[u + 1]; e++)
			if (dist[dag->adj[e]] < f)
				dist[dag->adj[e]] = f;
	}
	return best;
}

/* The simulation's state: the inputs, the per-SM run order, and per vertex its release, start,
 * finish and what it last waited for. */
struct sim {
	const struct part_dag *dag;
	const uint8_t *keep;
	const struct part_placement *pl;
	const struct part_gpu *gpu;
	int barrier;           /* --sync barrier: levels released by grid barriers instead of edges */
	int n, sms, nlev;
	struct smstate *st;    /* per SM */
	int *seq;              /* per-SM run order, CSR by pl->begin */
	int *npend;            /* per vertex: kept in-edges not yet satisfied */
	int *cause;            /* per vertex: the vertex it waited for last, -1 */
	uint8_t *ckind;        /* per vertex: CAUSE_* of cause */
	double *ready, *start, *fin;
	int *level;            /* barrier: per vertex; per level: */
	int *left, *lastfin;   /* vertices not finished, the last one to finish */
	double *release;       /* when its barrier released it, -1: not yet */
	double t, busy;        /* now; busy SM time */
	int done, nmem;        /* vertices finished; SMs streaming memory */
};

static void sim_free(struct sim *m)
{
	free(m->st), free(m->seq), free(m->npend), free(m->cause), free(m->ckind), free(m->ready), free(m->start);
	free(m->fin), free(m->level), free(m->left), free(m->lastfin), free(m->release);
}

static int sim_alloc(struct sim *m)
{
	size_t n = (size_t)m->n + 1;
	m->st = calloc((size_t)m->sms, sizeof *m->st);
	m->seq = malloc(n * sizeof *m->seq);
	m->npend = calloc(n, sizeof *m->npend);
	m->cause = malloc(n * sizeof *m->cause);
	m->ckind = calloc(n, 1);
	m->ready = calloc(n, sizeof *m->ready);
	m->start = calloc(n, sizeof *m->start);
	m->fin = calloc(n, sizeof *m->fin);
	m->level = malloc(n * sizeof *m->level);
	if (!m->st || !m->seq || !m->npend || !m->cause || !m->ckind || !m->ready || !m->start || !m->fin || !m->level)
		return -1;
	memcpy(m->seq, m->pl->list, (size_t)m->n * sizeof *m->seq);
	for (int v = 0; v < m->n; v++)
		m->cause[v] = -1;
	return 0;
}

/* ARK's scheme: dependency level by level, a grid barrier between levels; every SM runs its list
 * level by level. */
static int init_levels(struct sim *m)
{
	const struct part_placement *pl = m->pl;
	m->nlev = part_levels(m->dag, m->level);
	m->left = calloc((size_t)m->nlev + 1, sizeof *m->left);
	m->lastfin = malloc(((size_t)m->nlev + 1) * sizeof *m->lastfin);
	m->release = malloc(((size_t)m->nlev + 1) * sizeof *m->release);
	if (!m->left || !m->lastfin || !m->release)
		return -1;
	for (int v = 0; v < m->n; v++)
		m->left[m->level[v]]++;
	for (int l = 0; l <= m->nlev; l++)
		m->release[l] = -1, m->lastfin[l] = -1;
	m->release[0] = 0;
	for (int s = 0; s < m->sms; s++) { /* stable insertion sort by level: lists are short */
		int *a = m->seq + pl->begin[s], len = pl->begin[s + 1] - pl->begin[s];
		for (int i = 1; i < len; i++) {
			int x = a[i], j = i;
			while (j > 0 && m->level[a[j - 1]] > m->level[x]) {
				a[j] = a[j - 1];
				j--;
			}
			a[j] = x;
		}
	}
	return 0;
}

/* Counters: every vertex waits for its kept in-edges. */
static void init_edges(struct sim *m)
{
	const struct part_dag *dag = m->dag;
	for (int64_t e = 0; e < (m->n > 0 ? dag->xadj[m->n] : 0); e++)
		if (!m->keep || m->keep[e])
			m->npend[dag->adj[e]]++;
}

/* The next vertex on SM s, -1 when its list is done. */
static int next_vertex(const struct sim *m, int s)
{
	const struct smstate *q = &m->st[s];
	return q->next < m->pl->begin[s + 1] - m->pl->begin[s] ? m->seq[m->pl->begin[s] + q->next] : -1;
}

/* When vertex v may start: its barrier's release or its last edge's arrival; -1: not known yet. */
static double release_of(const struct sim *m, int v)
{
	if (m->barrier)
		return m->release[m->level[v]];
	return m->npend[v] > 0 ? -1 : m->ready[v];
}

/* Starts every idle SM whose next vertex can start now, recording what it waited for. */
static void start_ready(struct sim *m)
{
	for (int s = 0; s < m->sms; s++) {
		struct smstate *q = &m->st[s];
		int v = next_vertex(m, s);
		if (q->phase != IDLE || v < 0)
			continue;
		double at = release_of(m, v);
		if (at < 0 || at > m->t + EPS)
			continue;
		m->start[v] = m->t;
		if (m->barrier && m->level[v] > 0 && at >= q->free_at) {
			m->cause[v] = m->lastfin[m->level[v] - 1], m->ckind[v] = CAUSE_BARRIER;
		} else if (!m->barrier && m->cause[v] >= 0 && at >= q->free_at) {
			m->ckind[v] = CAUSE_EDGE;
		} else if (q->next > 0) {
			m->cause[v] = m->seq[m->pl->begin[s] + q->next - 1], m->ckind[v] = CAUSE_PROGRAM;
		} else {
			m->cause[v] = -1, m->ckind[v] = CAUSE_NONE;
		}
		q->phase = DISPATCH, q->v = v, q->t_disp = m->t + m->gpu->task_us;
	}
}

/* Device-memory bandwidth the device offers each streaming SM now, bytes per us. */
static double memory_rate(const struct sim *m)
{
	return (m->nmem > 0 ? m->gpu->dram_gbps / m->nmem : m->gpu->dram_gbps) * 1e3;
}

/* What SM s's running vertex gets of the offered rate: no more than its SM pulls alone. */
static double sm_rate(const struct sim *m, int s, double rate)
{
	double cap = part_sm_gbps(m->dag, m->gpu, m->st[s].v) * 1e3;
	return rate < cap ? rate : cap;
}

/* Time of the next event (a dispatch or a vertex ending, a vertex released); INFINITY if none. */
static double next_event(const struct sim *m, double rate)
{
	double tn = INFINITY;
	for (int s = 0; s < m->sms; s++) {
		const struct smstate *q = &m->st[s];
		if (q->phase == DISPATCH) {
			tn = fmin(tn, q->t_disp);
		} else if (q->phase == WORK) {
			if (q->mem_left > 0)
				tn = fmin(tn, m->t + q->mem_left / sm_rate(m, s, rate));
			else
				tn = fmin(tn, q->t_comp);
		} else {
			int v = next_vertex(m, s);
			if (v >= 0 && release_of(m, v) >= 0)
				tn = fmin(tn, release_of(m, v));
		}
	}
	return tn;
}

/* Moves the streaming SMs' bytes on to time tn. */
static void advance(struct sim *m, double tn, double rate)
{
	for (int s = 0; s < m->sms; s++) {
		struct smstate *q = &m->st[s];
		if (q->phase == WORK && q->mem_left > 0) {
			double r = sm_rate(m, s, rate);
			if (m->t + q->mem_left / r <= tn + EPS) {
				q->mem_left = 0;
				m->nmem--;
			} else {
				q->mem_left -= r * (tn - m->t);
			}
		}
	}
	m->t = tn;
}

/* Vertex v finished on SM s: release its level's barrier, or its successors' edges. */
static void finish(struct sim *m, int s, int v)
{
	struct smstate *q = &m->st[s];
	m->fin[v] = m->t;
	m->busy += m->t - m->start[v];
	m->done++;
	q->phase = IDLE, q->next++, q->free_at = m->t;
	if (m->barrier) {
		int l = m->level[v];
		m->lastfin[l] = v;
		if (--m->left[l] == 0 && l + 1 < m->nlev)
			m->release[l + 1] = m->t + m->gpu->barrier_us;
		return;
	}
	const struct part_dag *dag = m->dag;
	for (int64_t e = dag->xadj[v]; e < dag->xadj[v + 1]; e++) {
		if (m->keep && !m->keep[e])
			continue;
		int w = dag->adj[e];
		double a = m->t + (m->pl->sm[w] != s ? m->gpu->hop_us : 0.0);
		if (m->cause[w] < 0 || a > m->ready[w])
			m->ready[w] = a, m->cause[w] = v;
		m->npend[w]--;
	}
}

/* Dispatches that ended start their work; work that ended finishes its vertex. */
static void end_phases(struct sim *m)
{
	for (int s = 0; s < m->sms; s++) {
		struct smstate *q = &m->st[s];
		if (q->phase == DISPATCH && q->t_disp <= m->t + EPS) {
			q->phase = WORK;
			q->t_comp = q->t_disp + compute_us(m->dag, m->gpu, q->v);
			q->mem_left = m->dag->bytes ? m->dag->bytes[q->v] : 0.0;
			if (q->mem_left > 0)
				m->nmem++;
		}
		if (q->phase == WORK && q->mem_left <= 0 && q->t_comp <= m->t + EPS)
			finish(m, s, q->v);
	}
}

/* The critical chain, back from the last vertex to finish, split into compute, memory, hops and
 * waits; the latency and utilisation. */
static void critical_chain(const struct sim *m, struct part_sim *out)
{
	const struct part_gpu *gpu = m->gpu;
	double makespan = 0;
	int x = -1;
	for (int v = 0; v < m->n; v++)
		if (x < 0 || m->fin[v] > makespan)
			makespan = m->fin[v], x = v;
	while (x >= 0) {
		double work = m->fin[x] - m->start[x] - gpu->task_us, comp = compute_us(m->dag, gpu, x);
		out->critical_len++;
		out->dispatch_us += gpu->task_us;
		if (comp >= work - EPS)
			out->compute_us += work;
		else
			out->memory_us += work;
		int c = m->cause[x];
		if (c < 0) {
			out->wait_us += m->start[x];
		} else if (m->ckind[x] == CAUSE_EDGE && m->pl->sm[c] != m->pl->sm[x]) {
			out->hop_us += gpu->hop_us;
			out->wait_us += m->start[x] - m->fin[c] - gpu->hop_us;
		} else {
			out->wait_us += m->start[x] - m->fin[c];
		}
		x = c;
	}
	out->latency_us = makespan + gpu->doorbell_us;
	out->utilisation = out->latency_us > 0 ? m->busy / (m->sms * out->latency_us) : 0.0;
}

int part_simulate(const struct part_dag *dag, const uint8_t *keep, const struct part_placement *pl,
		  const struct part_gpu *gpu, int barrier_sync, struct part_sim *out)
{
	if (!out)
		return -1;
	memset(out, 0, sizeof *out);
	if (!gpu || gpu->sms < 1 || part_check_dag(dag, NULL, 0) < 0 ||
	    part_check_placement(dag, pl, NULL, 0) < 0 || pl->sms > gpu->sms)
		return -1;
	struct sim m = {.dag = dag, .keep = keep, .pl = pl, .gpu = gpu, .barrier = barrier_sync, .n = dag->n,
			.sms = pl->sms};
	int rc = -1;
	if (sim_alloc(&m) < 0 || (barrier_sync && init_levels(&m) < 0))
		goto out;
	if (!barrier_sync)
		init_edges(&m);
	while (m.done < m.n) {
		start_ready(&m);
		double rate = memory_rate(&m), tn = next_event(&m, rate);
		if (tn == INFINITY)
			goto out; /* nothing can run: the lists deadlock */
		advance(&m, tn < m.t ? m.t : tn, rate);
		end_phases(&m);
	}
	critical_chain(&m, out);
	out->critical_us = critical_path(dag, gpu, m.ready);
	rc = 0;
out:
	sim_free(&m);
	return rc;
}
