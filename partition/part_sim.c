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
	double share = gpu->sm_gbps < gpu->dram_gbps ? gpu->sm_gbps : gpu->dram_gbps, best = 0;
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

int part_simulate(const struct part_dag *dag, const uint8_t *keep, const struct part_placement *pl,
		  const struct part_gpu *gpu, int barrier_sync, struct part_sim *out)
{
	if (!out)
		return -1;
	memset(out, 0, sizeof *out);
	if (!gpu || gpu->sms < 1 || part_check_dag(dag, NULL, 0) < 0 ||
	    part_check_placement(dag, pl, NULL, 0) < 0 || pl->sms > gpu->sms)
		return -1;
	int n = dag->n, sms = pl->sms, rc = -1, nlev = 0;
	double hop = gpu->hop_us;
	struct smstate *st = calloc((size_t)sms, sizeof *st);
	int *seq = malloc(((size_t)n + 1) * sizeof *seq);      /* per-SM run order, CSR by pl->begin */
	int *npend = calloc((size_t)n + 1, sizeof *npend), *cause = malloc(((size_t)n + 1) * sizeof *cause);
	uint8_t *ckind = calloc((size_t)n + 1, 1);
	double *ready = calloc((size_t)n + 1, sizeof *ready), *start = calloc((size_t)n + 1, sizeof *start);
	double *fin = calloc((size_t)n + 1, sizeof *fin);
	int *level = malloc(((size_t)n + 1) * sizeof *level), *left = NULL, *lastfin = NULL;
	double *release = NULL;
	if (!st || !seq || !npend || !cause || !ckind || !ready || !start || !fin || !level)
		goto out;
	memcpy(seq, pl->list, (size_t)n * sizeof *seq);
	for (int v = 0; v < n; v++)
		cause[v] = -1;
	if (barrier_sync) {
		/* ARK's scheme: dependency level by level, a grid barrier between levels. */
		nlev = part_levels(dag, level);
		left = calloc((size_t)nlev + 1, sizeof *left);
		lastfin = malloc(((size_t)nlev + 1) * sizeof *lastfin);
		release = malloc(((size_t)nlev + 1) * sizeof *release);
		if (!left || !lastfin || !release)
			goto out;
		for (int v = 0; v < n; v++)
			left[level[v]]++;
		for (int l = 0; l <= nlev; l++)
			release[l] = -1, lastfin[l] = -1;
		release[0] = 0;
		for (int s = 0; s < sms; s++) { /* stable insertion sort by level: lists are short */
			int *a = seq + pl->begin[s], len = pl->begin[s + 1] - pl->begin[s];
			for (int i = 1; i < len; i++) {
				int x = a[i], j = i;
				while (j > 0 && level[a[j - 1]] > level[x]) {
					a[j] = a[j - 1];
					j--;
				}
				a[j] = x;
			}
		}
	} else {
		for (int64_t e = 0; e < (n > 0 ? dag->xadj[n] : 0); e++)
			if (!keep || keep[e])
				npend[dag->adj[e]]++;
	}

	double t = 0, busy = 0;
	int done = 0, nmem = 0;
	while (done < n) {
		/* start every idle SM whose next vertex can start now */
		for (int s = 0; s < sms; s++) {
			struct smstate *q = &st[s];
			if (q->phase != IDLE || q->next >= pl->begin[s + 1] - pl->begin[s])
				continue;
			int v = seq[pl->begin[s] + q->next];
			double at;
			if (barrier_sync) {
				if (release[level[v]] < 0)
					continue;
				at = release[level[v]];
			} else {
				if (npend[v] > 0)
					continue;
				at = ready[v];
			}
			if (at > t + EPS)
				continue;
			start[v] = t;
			if (barrier_sync && level[v] > 0 && at >= q->free_at) {
				cause[v] = lastfin[level[v] - 1], ckind[v] = CAUSE_BARRIER;
			} else if (!barrier_sync && cause[v] >= 0 && at >= q->free_at) {
				ckind[v] = CAUSE_EDGE;
			} else if (q->next > 0) {
				cause[v] = seq[pl->begin[s] + q->next - 1], ckind[v] = CAUSE_PROGRAM;
			} else {
				cause[v] = -1, ckind[v] = CAUSE_NONE;
			}
			q->phase = DISPATCH, q->v = v, q->t_disp = t + gpu->task_us;
		}
		/* next event */
		double share = nmem > 0 ? gpu->dram_gbps / nmem : gpu->dram_gbps;
		if (share > gpu->sm_gbps)
			share = gpu->sm_gbps;
		double rate = share * 1e3; /* bytes per us */
		double tn = INFINITY;
		for (int s = 0; s < sms; s++) {
			struct smstate *q = &st[s];
			if (q->phase == DISPATCH) {
				tn = fmin(tn, q->t_disp);
			} else if (q->phase == WORK) {
				if (q->mem_left > 0)
					tn = fmin(tn, t + q->mem_left / rate);
				else
					tn = fmin(tn, q->t_comp);
			} else if (q->next < pl->begin[s + 1] - pl->begin[s]) {
				int v = seq[pl->begin[s] + q->next];
				if (barrier_sync ? release[level[v]] >= 0 : npend[v] == 0)
					tn = fmin(tn, barrier_sync ? release[level[v]] : ready[v]);
			}
		}
		if (tn == INFINITY)
			goto out; /* nothing can run: the lists deadlock */
		if (tn < t)
			tn = t;
		/* advance to tn */
		for (int s = 0; s < sms; s++) {
			struct smstate *q = &st[s];
			if (q->phase == WORK && q->mem_left > 0) {
				if (t + q->mem_left / rate <= tn + EPS) {
					q->mem_left = 0;
					nmem--;
				} else {
					q->mem_left -= rate * (tn - t);
				}
			}
		}
		t = tn;
		for (int s = 0; s < sms; s++) {
			struct smstate *q = &st[s];
			if (q->phase == DISPATCH && q->t_disp <= t + EPS) {
				int v = q->v;
				q->phase = WORK;
				q->t_comp = q->t_disp + compute_us(dag, gpu, v);
				q->mem_left = dag->bytes ? dag->bytes[v] : 0.0;
				if (q->mem_left > 0)
					nmem++;
			}
			if (q->phase == WORK && q->mem_left <= 0 && q->t_comp <= t + EPS) {
				int v = q->v;
				fin[v] = t;
				busy += t - start[v];
				done++;
				q->phase = IDLE, q->next++, q->free_at = t;
				if (barrier_sync) {
					int l = level[v];
					lastfin[l] = v;
					if (--left[l] == 0 && l + 1 < nlev)
						release[l + 1] = t + gpu->barrier_us;
					continue;
				}
				for (int64_t e = dag->xadj[v]; e < dag->xadj[v + 1]; e++) {
					if (keep && !keep[e])
						continue;
					int w = dag->adj[e];
					double a = t + (pl->sm[w] != s ? hop : 0.0);
					if (cause[w] < 0 || a > ready[w])
						ready[w] = a, cause[w] = v;
					npend[w]--;
				}
			}
		}
	}

	/* the critical chain, back from the last vertex to finish */
	double makespan = 0;
	int x = -1;
	for (int v = 0; v < n; v++)
		if (x < 0 || fin[v] > makespan)
			makespan = fin[v], x = v;
	while (x >= 0) {
		double work = fin[x] - start[x] - gpu->task_us, comp = compute_us(dag, gpu, x);
		out->critical_len++;
		out->dispatch_us += gpu->task_us;
		if (comp >= work - EPS)
			out->compute_us += work;
		else
			out->memory_us += work;
		int c = cause[x];
		if (c < 0) {
			out->wait_us += start[x];
		} else if (ckind[x] == CAUSE_EDGE && pl->sm[c] != pl->sm[x]) {
			out->hop_us += hop;
			out->wait_us += start[x] - fin[c] - hop;
		} else {
			out->wait_us += start[x] - fin[c];
		}
		x = c;
	}
	out->latency_us = makespan + gpu->doorbell_us;
	out->critical_us = critical_path(dag, gpu, ready);
	out->utilisation = out->latency_us > 0 ? busy / (sms * out->latency_us) : 0.0;
	rc = 0;
out:
	free(st), free(seq), free(npend), free(cause), free(ckind), free(ready), free(start), free(fin);
	free(level), free(left), free(lastfin), free(release);
	return rc;
}
