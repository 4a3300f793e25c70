/* part.c: machine figures, policy names, input checks and DAG helpers shared by the partition module. */
#include "partition/part.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *const part_policy_name[PART__COUNT] = {
	[PART_METIS] = "metis",
	[PART_ROUNDROBIN] = "roundrobin",
	[PART_WAVEFRONT] = "wavefront",
	[PART_CRITICAL] = "critical",
};

void part_gpu_default(struct part_gpu *g, int sms)
{
	g->sms = sms;
	g->dram_gbps = 2900.0;  /* measured H100 device copy bandwidth */
	g->sm_gbps = 45.0;      /* one SM streaming alone */
	g->tc_tflops = 790.0;   /* dense bf16 */
	g->fp32_tflops = 60.0;
	g->hop_us = 0.54;       /* half the 1.08 us inter-SM flag round trip */
	g->task_us = 0.15;
	g->doorbell_us = 3.0;
	g->barrier_us = 0.9;
	g->launch_us = 2.5; /* typical figures of an H100 with a recent driver, until measured */
	g->kernel_gap_us = 1.0;
	g->event_us = 1.5;
	g->event_host_us = 1.0;
	g->sync_us = 5.0;
	g->launch_measured = 0;
}

int part_policy_parse(const char *s)
{
	for (int i = 0; i < PART__COUNT; i++)
		if (s && strcmp(s, part_policy_name[i]) == 0)
			return i;
	return -1;
}

_Noreturn void part_assert_fail(const char *what, const char *file, int line)
{
	fprintf(stderr, "%s:%d: internal error: assertion '%s' failed\n", file, line, what);
	abort();
}

/* Writes a message into err (if any) and returns -1. */
int part_fail(char *err, size_t errlen, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

int part_check_dag(const struct part_dag *dag, char *err, size_t errlen)
{
	if (!dag)
		return part_fail(err, errlen, "no DAG");
	if (dag->n < 0)
		return part_fail(err, errlen, "DAG has a negative vertex count (%d)", dag->n);
	if (dag->n == 0)
		return 0;
	if (!dag->xadj || (dag->xadj[dag->n] > 0 && !dag->adj))
		return part_fail(err, errlen, "DAG has no adjacency arrays");
	if (dag->xadj[0] != 0)
		return part_fail(err, errlen, "DAG adjacency does not start at 0 (xadj[0] = %lld)",
			    (long long)dag->xadj[0]);
	for (int u = 0; u < dag->n; u++) {
		if (dag->xadj[u + 1] < dag->xadj[u])
			return part_fail(err, errlen, "DAG adjacency of vertex %d has negative length", u);
		int prev = u;
		for (int64_t e = dag->xadj[u]; e < dag->xadj[u + 1]; e++) {
			int v = dag->adj[e];
			if (v <= u || v >= dag->n)
				return part_fail(err, errlen, "edge %d -> %d is not u < v < n = %d (vertices must be "
					    "numbered in topological order)", u, v, dag->n);
			if (v <= prev && prev != u)
				return part_fail(err, errlen, "successors of vertex %d are not strictly ascending "
					    "(%d after %d)", u, v, prev);
			prev = v;
		}
	}
	for (int v = 0; v < dag->n; v++) {
		double f = dag->flops ? dag->flops[v] : 0.0, b = dag->bytes ? dag->bytes[v] : 0.0;
		double l = dag->lat_us ? dag->lat_us[v] : 0.0, r = dag->sm_gbps ? dag->sm_gbps[v] : 0.0;
		if (!isfinite(f) || f < 0 || !isfinite(b) || b < 0 || !isfinite(l) || l < 0 || !isfinite(r) || r < 0)
			return part_fail(err, errlen, "vertex %d has an invalid cost (flops %g, bytes %g, latency %g us, "
					 "%g GB/s)", v, f, b, l, r);
	}
	if (dag->ebytes)
		for (int64_t e = 0; e < dag->xadj[dag->n]; e++)
			if (dag->ebytes[e] < 0)
				return part_fail(err, errlen, "edge %lld carries a negative byte count",
					    (long long)e);
	return 0;
}

int part_check_placement(const struct part_dag *dag, const struct part_placement *pl, char *err,
			 size_t errlen)
{
	int n = dag->n;
	if (!pl || pl->sms < 1)
		return part_fail(err, errlen, "placement has no SMs");
	if (n > 0 && (!pl->sm || !pl->pos || !pl->begin || !pl->list))
		return part_fail(err, errlen, "placement has no arrays");
	if (pl->begin[0] != 0 || pl->begin[pl->sms] != n)
		return part_fail(err, errlen, "placement lists hold %d vertices, the DAG has %d",
			    pl->begin[pl->sms] - pl->begin[0], n);
	for (int s = 0; s < pl->sms; s++) {
		if (pl->begin[s + 1] < pl->begin[s])
			return part_fail(err, errlen, "list of SM %d has negative length", s);
		for (int i = pl->begin[s]; i < pl->begin[s + 1]; i++) {
			int v = pl->list[i];
			if (v < 0 || v >= n)
				return part_fail(err, errlen, "SM %d list holds vertex %d, out of range", s, v);
			if (pl->sm[v] != s || pl->pos[v] != i - pl->begin[s])
				return part_fail(err, errlen, "vCTA %d is listed on SM %d pos %d but placed on SM "
					    "%d pos %d (placed twice?)", v, s, i - pl->begin[s], pl->sm[v],
					    pl->pos[v]);
		}
	}
	/* n list slots, each matching sm/pos of its vertex: every vertex appears exactly once. */
	return 0;
}

int part_levels(const struct part_dag *dag, int *level)
{
	int n = dag->n, nlev = 0;
	for (int v = 0; v < n; v++)
		level[v] = 0;
	for (int u = 0; u < n; u++) {
		if (level[u] + 1 > nlev)
			nlev = level[u] + 1;
		for (int64_t e = dag->xadj[u]; e < dag->xadj[u + 1]; e++) {
			int v = dag->adj[e];
			if (v <= u || v >= n)
				return -1;
			if (level[v] < level[u] + 1)
				level[v] = level[u] + 1;
		}
	}
	return nlev;
}

double part_sm_gbps(const struct part_dag *dag, const struct part_gpu *gpu, int v)
{
	return dag->sm_gbps && dag->sm_gbps[v] > 0 ? dag->sm_gbps[v] : gpu->sm_gbps;
}

double part_vertex_us(const struct part_dag *dag, const struct part_gpu *gpu, int v, double gbps)
{
	double cap = part_sm_gbps(dag, gpu, v);
	if (gbps > cap)
		gbps = cap;
	double fl = dag->flops ? dag->flops[v] : 0.0, by = dag->bytes ? dag->bytes[v] : 0.0;
	double tflops = (dag->tc && dag->tc[v] ? gpu->tc_tflops : gpu->fp32_tflops) / gpu->sms;
	double comp = fl > 0 ? fl / (tflops * 1e6) : 0.0; /* flop / (Tflop/s) = ps; /1e6 = us */
	double mem = by > 0 ? by / (gbps * 1e3) : 0.0;    /* byte / (GB/s) = ns; /1e3 = us */
	if (dag->lat_us && dag->lat_us[v] > comp)
		comp = dag->lat_us[v];
	return gpu->task_us + (comp > mem ? comp : mem);
}

int part_preds(const struct part_dag *dag, int64_t **pxadj, int **padj, int64_t **peid)
{
	int n = dag->n;
	int64_t m = n > 0 ? dag->xadj[n] : 0;
	int64_t *px = calloc((size_t)n + 1, sizeof *px);
	int *pa = malloc((size_t)(m > 0 ? m : 1) * sizeof *pa);
	int64_t *pe = peid ? malloc((size_t)(m > 0 ? m : 1) * sizeof *pe) : NULL;
	int64_t *fill = malloc(((size_t)n + 1) * sizeof *fill);
	if (!px || !pa || (peid && !pe) || !fill) {
		free(px), free(pa), free(pe), free(fill);
		return -1;
	}
	for (int64_t e = 0; e < m; e++)
		px[dag->adj[e] + 1]++;
	for (int v = 0; v < n; v++)
		px[v + 1] += px[v];
	memcpy(fill, px, ((size_t)n + 1) * sizeof *fill);
	for (int u = 0; u < n; u++) /* u ascending: each predecessor list comes out ascending */
		for (int64_t e = dag->xadj[u]; e < dag->xadj[u + 1]; e++) {
			int64_t k = fill[dag->adj[e]]++;
			pa[k] = u;
			if (pe)
				pe[k] = e;
		}
	free(fill);
	*pxadj = px;
	*padj = pa;
	if (peid)
		*peid = pe;
	return 0;
}

void part_placement_free(struct part_placement *pl)
{
	if (!pl)
		return;
	free(pl->sm);
	free(pl->pos);
	free(pl->begin);
	free(pl->list);
	pl->sm = pl->pos = pl->begin = pl->list = NULL;
}
