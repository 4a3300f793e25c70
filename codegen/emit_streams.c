/* emit_streams.c: the stream program of the multi-stream backends (emit_streams.h): the op DAG made
 * from the vCTAs' dependencies, one launch per dependency level inside an op (a split-K sum after its
 * partials), the policy's streams and events, the bytes each op touches, and its text in the
 * generated file, the report, the JSON schedule and the Graphviz graph. */
#include "emit_streams.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "emit_text.h"

const char *const backend_name[ARK_BACKEND__COUNT] = {
#define X(id, name) [ARK_BACKEND_##id] = name,
	ARK_BACKEND_LIST(X)
#undef X
};

static int cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
	return (a > b) - (a < b);
}

/* Refuses what one kernel per op on one GPU cannot run. 0, or -1 after a located error. */
static int supported(const struct tiling *s, int backend)
{
	const struct graph *g = s->g;
	if (g->gpus > 1) {
		diag_error(g->file, 0, "--backend %s runs a model on one GPU; this one has gpus = %d", backend_name[backend],
			   g->gpus);
		diag_hint("use --backend loop for models on several GPUs");
		return -1;
	}
	for (int v = 0; v < s->n_vcta; v++)
		if (s->v[v].opp >= g->n_ops) {
			const struct op *o = &g->ops[s->v[v].op];
			diag_error(o->file ? o->file : g->file, o->line, "op '%s': --backend %s cannot run communication ops",
				   o->name, backend_name[backend]);
			return -1;
		}
	return 0;
}

/* The nodes, the op DAG between them and each node's launches (levels of its own vCTAs). */
static int build_nodes(const struct tiling *s, const struct schedule *p, struct stream_prog *sp)
{
	const struct graph *g = s->g;
	int nv = s->n_vcta;
	int *node_of_v = xmalloc(((size_t)nv + 1) * sizeof *node_of_v), *lvl = xcalloc((size_t)nv + 1, sizeof *lvl);
	sp->node_of_op = xmalloc(((size_t)g->n_ops + 1) * sizeof *sp->node_of_op);
	sp->node_op = xmalloc(((size_t)g->n_ops + 1) * sizeof *sp->node_op);
	for (int o = 0; o < g->n_ops; o++)
		sp->node_of_op[o] = -1;
	for (int v = 0; v < nv; v++) {
		int o = s->v[v].op;
		if (sp->node_of_op[o] < 0) {
			sp->node_op[sp->n] = o;
			sp->node_of_op[o] = sp->n++;
		}
		node_of_v[v] = sp->node_of_op[o];
	}
	int n = sp->n;
	sp->node_opi = xmalloc(((size_t)n + 1) * sizeof *sp->node_opi);
	for (int a = 0; a < n; a++)
		sp->node_opi[a] = p->tab.op_index[sp->node_op[a]];
	/* edges between nodes (pairs sorted and made unique, then CSR), levels inside a node */
	int64_t m = 0, cap = 0;
	int64_t *pairs = NULL; /* a * n + b */
	for (int u = 0; u < nv; u++)
		for (int64_t e = s->xadj[u]; e < s->xadj[u + 1]; e++) {
			int w = s->adj[e], a = node_of_v[u], b = node_of_v[w];
			if (a == b) {
				lvl[w] = lvl[u] + 1 > lvl[w] ? lvl[u] + 1 : lvl[w];
			} else if (a > b) {
				const struct op *o = &g->ops[sp->node_op[b]];
				diag_error(g->file, o->line, "op '%s': its vCTAs interleave with those of op '%s' in the "
					   "dependency order; one launch per op cannot run them", o->name,
					   g->ops[sp->node_op[a]].name);
				free(pairs);
				free(lvl);
				free(node_of_v);
				return -1;
			} else {
				if (m == cap) {
					cap = cap ? 2 * cap : 256;
					pairs = xrealloc(pairs, (size_t)cap * sizeof *pairs);
				}
				pairs[m++] = (int64_t)a * n + b;
			}
		}
	if (m) /* pairs is NULL when there is none */
		qsort(pairs, (size_t)m, sizeof *pairs, cmp_i64);
	sp->xadj = xcalloc((size_t)n + 2, sizeof *sp->xadj);
	sp->adj = xmalloc(((size_t)m + 1) * sizeof *sp->adj);
	int64_t k = 0;
	for (int64_t i = 0; i < m; i++) {
		if (i && pairs[i] == pairs[i - 1])
			continue;
		sp->adj[k++] = (int)(pairs[i] % n);
		sp->xadj[pairs[i] / n + 1] = k;
	}
	for (int a = 0; a < n; a++) /* nodes without successors end where the one before ends */
		if (sp->xadj[a + 1] < sp->xadj[a])
			sp->xadj[a + 1] = sp->xadj[a];
	free(pairs);

	/* GPU 0's task index of every vCTA */
	const struct gpu_tables *T = &p->tab.gpu[0];
	uint32_t *tix = xmalloc(((size_t)nv + 1) * sizeof *tix);
	for (int i = 0; i < T->n_tasks; i++)
		if (T->tasks[i].tmpl != ARK_T_BARRIER)
			tix[T->tasks[i].vcta] = (uint32_t)i;

	/* launches: node by node (vCTAs of a node are found by scanning: nodes are few next to vCTAs) */
	int *maxl = xcalloc((size_t)n + 1, sizeof *maxl);
	for (int v = 0; v < nv; v++)
		maxl[node_of_v[v]] = lvl[v] > maxl[node_of_v[v]] ? lvl[v] : maxl[node_of_v[v]];
	sp->n_launch = xmalloc(((size_t)n + 1) * sizeof *sp->n_launch);
	sp->launch0 = xmalloc(((size_t)n + 2) * sizeof *sp->launch0);
	sp->n_launches = 0;
	for (int a = 0; a < n; a++) {
		sp->launch0[a] = sp->n_launches;
		sp->n_launch[a] = maxl[a] + 1;
		sp->n_launches += maxl[a] + 1;
	}
	sp->launch0[n] = sp->n_launches;
	sp->launches = xcalloc((size_t)sp->n_launches + 1, sizeof *sp->launches);
	for (int v = 0; v < nv; v++)
		sp->launches[sp->launch0[node_of_v[v]] + lvl[v]].n++;
	uint32_t at = 0;
	for (int l = 0; l < sp->n_launches; l++) {
		sp->launches[l].first = at;
		at += sp->launches[l].n;
		sp->launches[l].n = 0;
	}
	sp->n_ti = nv;
	sp->task_index = xmalloc(((size_t)nv + 1) * sizeof *sp->task_index);
	for (int v = 0; v < nv; v++) {
		struct ark_slaunch *L = &sp->launches[sp->launch0[node_of_v[v]] + lvl[v]];
		sp->task_index[L->first + L->n++] = tix[v];
	}
	free(maxl);
	free(tix);
	free(lvl);
	free(node_of_v);
	return 0;
}

/* Time of each node alone on the GPU (its launches one after the other, each as many waves of its
 * vCTAs as the SMs take), and its work: SM time over the SMs. */
static void node_costs(const struct tiling *s, const struct schedule *p, const struct part_gpu *gpu,
		       struct stream_prog *sp)
{
	struct part_dag dag;
	tiling_dag(s, &dag);
	const struct gpu_tables *T = &p->tab.gpu[0];
	sp->cost_us = xcalloc((size_t)sp->n + 1, sizeof *sp->cost_us);
	sp->work_us = xcalloc((size_t)sp->n + 1, sizeof *sp->work_us);
	for (int a = 0; a < sp->n; a++)
		for (int l = sp->launch0[a]; l < sp->launch0[a + 1]; l++) {
			const struct ark_slaunch *L = &sp->launches[l];
			int k = (int)L->n, busy = k < gpu->sms ? k : gpu->sms;
			double most = 0;
			for (int i = 0; i < k; i++) {
				int v = (int)T->tasks[sp->task_index[L->first + i]].vcta;
				double t = part_vertex_us(&dag, gpu, v, gpu->dram_gbps / (busy ? busy : 1));
				most = t > most ? t : most;
				sp->work_us[a] += t / gpu->sms;
			}
			sp->cost_us[a] += most * ((k + gpu->sms - 1) / gpu->sms);
		}
}

/* The bytes of the arena each node reads and writes: per tensor, the rows its vCTAs touch. */
static void node_ranges(const struct tiling *s, const struct schedule *p, struct stream_prog *sp)
{
	const struct graph *g = s->g;
	const struct gpu_tables *T = &p->tab.gpu[0];
	int cap = 0;
	int64_t *lo = xmalloc(2 * ((size_t)g->n_tensors + 1) * sizeof *lo), *hi = xmalloc(2 * ((size_t)g->n_tensors + 1) * sizeof *hi);
	sp->range0 = xmalloc(((size_t)sp->n + 2) * sizeof *sp->range0);
	for (int a = 0; a < sp->n; a++) {
		for (int t = 0; t < 2 * g->n_tensors; t++)
			lo[t] = INT64_MAX, hi[t] = -1;
		for (int l = sp->launch0[a]; l < sp->launch0[a + 1]; l++)
			for (uint32_t i = 0; i < sp->launches[l].n; i++) {
				const struct vcta *x = &s->v[T->tasks[sp->task_index[sp->launches[l].first + i]].vcta];
				for (int r = 0; r <= x->n_reads; r++) {
					const struct region *R = r < x->n_reads ? &x->reads[r] : &x->write;
					int k = 2 * R->tensor + (r == x->n_reads);
					lo[k] = R->r0 < lo[k] ? R->r0 : lo[k];
					hi[k] = R->r1 > hi[k] ? R->r1 : hi[k];
				}
			}
		sp->range0[a] = sp->n_ranges;
		for (int k = 0; k < 2 * g->n_tensors; k++) {
			int t = k / 2;
			if (hi[k] <= lo[k] || s->offset[t] == ARK_NOT_STORED)
				continue;
			uint64_t row = (uint64_t)tiling_mem_cols(s, t) * (uint64_t)ark_dtype_size(g->tensors[t].dtype);
			if (sp->n_ranges == cap) {
				cap = cap ? 2 * cap : 64;
				sp->ranges = xrealloc(sp->ranges, (size_t)cap * sizeof *sp->ranges);
			}
			sp->ranges[sp->n_ranges++] = (struct ark_srange){
				.off = s->offset[t] + (uint64_t)lo[k] * row, .bytes = (uint64_t)(hi[k] - lo[k]) * row,
				.write = (uint32_t)(k & 1)};
		}
	}
	sp->range0[sp->n] = sp->n_ranges;
	free(lo);
	free(hi);
}

int stream_prog_build(const struct tiling *s, const struct schedule *p, const struct part_gpu *gpu, int backend,
		      enum stream_policy policy, int max_streams, struct stream_prog *sp)
{
	memset(sp, 0, sizeof *sp);
	sp->backend = backend;
	sp->policy = policy;
	sp->max_streams = max_streams;
	if (supported(s, backend) < 0 || build_nodes(s, p, sp) < 0)
		return -1;
	node_costs(s, p, gpu, sp);
	node_ranges(s, p, sp);
	sp->dag = (struct sdag){.n = sp->n, .xadj = sp->xadj, .adj = sp->adj, .cost_us = sp->cost_us,
				.work_us = sp->work_us, .launches = sp->n_launch,
				.costs = {gpu->launch_us, gpu->kernel_gap_us, gpu->event_us, gpu->event_host_us,
					  gpu->sync_us, gpu->launch_measured}};
	char err[256];
	if (streams_assign(&sp->dag, policy, max_streams, &sp->plan, err, sizeof err) < 0) {
		diag_error(s->g->file, 0, "stream policy %s: %s", stream_policy_name[policy], err);
		return -1;
	}
	sp->record = xmalloc(((size_t)sp->n + 1) * sizeof *sp->record);
	for (int a = 0; a < sp->n; a++)
		sp->record[a] = -1;
	for (int i = 0; i < sp->n; i++) /* events numbered in issue order of their recorders */
		for (int k = 0; k < sp->plan.n_events; k++)
			if (sp->plan.ev[k].from == sp->plan.order[i] && sp->record[sp->plan.order[i]] < 0)
				sp->record[sp->plan.order[i]] = sp->n_records++;
	sp->predicted_us = streams_predict(&sp->dag, &sp->plan, backend == ARK_BACKEND_GRAPH);
	return 0;
}

void stream_prog_free(struct stream_prog *sp)
{
	free(sp->node_op);
	free(sp->node_of_op);
	free(sp->node_opi);
	free(sp->xadj);
	free(sp->adj);
	free(sp->cost_us);
	free(sp->work_us);
	free(sp->n_launch);
	free(sp->launch0);
	free(sp->launches);
	free(sp->task_index);
	free(sp->ranges);
	free(sp->range0);
	free(sp->record);
	splan_free(&sp->plan);
	memset(sp, 0, sizeof *sp);
}

/* ---- text -------------------------------------------------------------------------------------- */

static const char *op_name(const struct tiling *s, const struct stream_prog *sp, int a, char *buf, size_t n)
{
	return c_comment_text(buf, n, s->g->ops[sp->node_op[a]].name);
}

void emit_streams(const struct tiling *s, const struct stream_prog *sp, FILE *f)
{
	const struct graph *g = s->g;
	const struct splan *pl = &sp->plan;
	char c[512];
	fprintf(f, "\n/* ---- the stream program (--backend %s, --stream-policy %s): %d ops, %d launches on %d "
		   "stream%s, %d event%s ---- */\n#include \"ark_streams.cuh\"\n\n",
		backend_name[sp->backend], stream_policy_name[sp->policy], sp->n, sp->n_launches, pl->n_streams,
		pl->n_streams == 1 ? "" : "s", sp->n_records, sp->n_records == 1 ? "" : "s");
	fprintf(f, "/* Task table index of every CTA of every launch, launch by launch. */\n"
		   "static const uint32_t stream_task_index[] = {");
	for (int i = 0; i < sp->n_ti; i++)
		fprintf(f, "%s%u", !i ? "\n\t" : i % 16 ? ", " : ",\n\t", sp->task_index[i]);
	fprintf(f, "\n};\n\n/* {first CTA's entry in stream_task_index, CTAs} */\n"
		   "static const struct ark_slaunch stream_launches[] = {\n");
	for (int a = 0; a < sp->n; a++)
		for (int l = sp->launch0[a]; l < sp->launch0[a + 1]; l++)
			fprintf(f, "\t{%u, %u}, /* %s, level %d of %d */\n", sp->launches[l].first, sp->launches[l].n,
				op_name(s, sp, a, c, sizeof c), l - sp->launch0[a] + 1, sp->n_launch[a]);
	fprintf(f, "};\n\n/* Events each node waits on, node by node in issue order. */\n"
		   "static const uint32_t stream_waits[] = {");
	int nw = 0;
	for (int i = 0; i < sp->n; i++)
		for (int k = 0; k < pl->n_events; k++)
			if (pl->ev[k].to == pl->order[i])
				fprintf(f, "%s%d", !nw ? "\n\t" : nw % 16 ? ", " : ",\n\t", sp->record[pl->ev[k].from]), nw++;
	if (!nw)
		fprintf(f, "0"); /* an array needs an element */
	fprintf(f, "\n};\n\n/* Bytes of the arena each node reads or writes {offset, bytes, write} */\n"
		   "static const struct ark_srange stream_ranges[] = {\n");
	for (int a = 0; a < sp->n; a++)
		for (int r = sp->range0[a]; r < sp->range0[a + 1]; r++)
			fprintf(f, "\t{%" PRIu64 "u, %" PRIu64 "u, %u, 0}, /* %s */\n", sp->ranges[r].off, sp->ranges[r].bytes,
				sp->ranges[r].write, op_name(s, sp, a, c, sizeof c));
	if (!sp->n_ranges)
		fprintf(f, "\t{0, 0, 0, 0},\n");
	fprintf(f, "};\n\n/* In issue order: {launch0, launches, wait0, waits, range0, ranges, op, stream, records} */\n"
		   "static const struct ark_snode stream_nodes[] = {\n");
	nw = 0;
	for (int i = 0; i < sp->n; i++) {
		int a = pl->order[i], w = 0;
		for (int k = 0; k < pl->n_events; k++)
			w += pl->ev[k].to == a;
		fprintf(f, "\t{%d, %d, %d, %d, %d, %d, %d, %d, %d}, /* %s, line %d */\n", sp->launch0[a], sp->n_launch[a], nw,
			w, sp->range0[a], sp->range0[a + 1] - sp->range0[a], sp->node_opi[a], pl->stream[a],
			sp->record[a], op_name(s, sp, a, c, sizeof c), g->ops[sp->node_op[a]].line);
		nw += w;
	}
	if (!sp->n)
		fprintf(f, "\t{0, 0, 0, 0, 0, 0, 0, 0, -1},\n");
	fprintf(f, "};\n\nARK_DEFINE_STREAMS()\n\n");
	fprintf(f, "static const struct ark_streams ark_streams_def = {\n\t.backend = ARK_BACKEND_%s,\n\t.policy = \"%s\",\n",
		sp->backend == ARK_BACKEND_STREAMS ? "STREAMS" : sp->backend == ARK_BACKEND_GRAPH ? "GRAPH" : "DYNAMIC",
		stream_policy_name[sp->policy]);
	fprintf(f, "\t.n_streams = %d,\n\t.n_events = %d,\n\t.n_nodes = %d,\n\t.nodes = stream_nodes,\n",
		sp->backend == ARK_BACKEND_DYNAMIC ? sp->max_streams : pl->n_streams, sp->n_records, sp->n);
	fprintf(f, "\t.n_launches = %d,\n\t.launches = stream_launches,\n\t.n_task_index = %d,\n"
		   "\t.task_index = stream_task_index,\n\t.n_waits = %d,\n\t.waits = stream_waits,\n",
		sp->n_launches, sp->n_ti, nw);
	fprintf(f, "\t.n_ranges = %d,\n\t.ranges = stream_ranges,\n\t.predicted_us = %.3f,\n", sp->n_ranges,
		sp->predicted_us);
	fprintf(f, "\t.prepare = ark_streams_prepare,\n\t.launch = ark_streams_launch,\n"
		   "\t.tmpl_smem = ark_streams_tmpl_smem,\n};\n\n");
}

void stream_prog_report(const struct tiling *s, const struct stream_prog *sp, FILE *f)
{
	fprintf(f, "  backend %s, stream policy %s: %d ops in %d launches on %d stream%s, %d event%s recorded, "
		   "%d wait%s, proved: every dependency ordered by stream order or an event\n",
		backend_name[sp->backend], stream_policy_name[sp->policy], sp->n, sp->n_launches,
		sp->backend == ARK_BACKEND_DYNAMIC ? sp->max_streams : sp->plan.n_streams,
		(sp->backend == ARK_BACKEND_DYNAMIC ? sp->max_streams : sp->plan.n_streams) == 1 ? "" : "s",
		sp->n_records, sp->n_records == 1 ? "" : "s", sp->plan.n_events, sp->plan.n_events == 1 ? "" : "s");
	if (sp->backend == ARK_BACKEND_DYNAMIC)
		fprintf(f, "  (dynamic: streams and events are chosen at run time from a pool of %d; the figures "
			   "above are the policy's, for the prediction)\n", sp->max_streams);
	const struct stream_costs *c = &sp->dag.costs;
	fprintf(f, "  predicted latency of the %s backend %.1f us (launch %.2f us, gap between kernels %.2f us, "
		   "event %.2f us on the GPU and %.2f us to issue, sync %.2f us: %s)\n",
		backend_name[sp->backend], sp->predicted_us, c->launch_us, c->kernel_gap_us, c->event_us,
		c->event_host_us, c->sync_us,
		c->measured ? "measured, the --gpu table's" : "typical figures, not measured");
}

void stream_prog_json(const struct tiling *s, const struct stream_prog *sp, FILE *f)
{
	const struct splan *pl = &sp->plan;
	fprintf(f, "{\"backend\": \"%s\", \"policy\": \"%s\", \"streams\": %d, \"predicted_us\": %.3f, \"ops\": [",
		backend_name[sp->backend], stream_policy_name[sp->policy], pl->n_streams, sp->predicted_us);
	for (int i = 0; i < sp->n; i++) {
		int a = pl->order[i];
		struct strbuf b = {0};
		sb_cstring(&b, s->g->ops[sp->node_op[a]].name);
		fprintf(f, "%s\n    {\"op\": %s, \"stream\": %d, \"launches\": %d, \"cost_us\": %.3f, \"waits\": [", i ? "," : "",
			b.s, pl->stream[a], sp->n_launch[a], sp->cost_us[a]);
		free(b.s);
		int first = 1;
		for (int k = 0; k < pl->n_events; k++)
			if (pl->ev[k].to == a) {
				b = (struct strbuf){0};
				sb_cstring(&b, s->g->ops[sp->node_op[pl->ev[k].from]].name);
				fprintf(f, "%s%s", first ? "" : ", ", b.s);
				free(b.s);
				first = 0;
			}
		fprintf(f, "]}");
	}
	fprintf(f, "\n  ]}");
}

void stream_prog_dot(const struct tiling *s, const struct stream_prog *sp, FILE *f)
{
	const struct splan *pl = &sp->plan;
	char c[512];
	fprintf(f, "digraph streams {\n\trankdir=TB;\n\tnode [shape=box];\n\tlabel=\"%s: --backend %s --stream-policy %s, "
		   "%d streams, %d events (dashed)\";\n", c_comment_text(c, sizeof c, s->g->name), backend_name[sp->backend],
		stream_policy_name[sp->policy], pl->n_streams, pl->n_events);
	for (int st = 0; st < pl->n_streams; st++) {
		fprintf(f, "\tsubgraph cluster_s%d {\n\t\tlabel=\"stream %d\";\n", st, st);
		for (int a = 0; a < sp->n; a++)
			if (pl->stream[a] == st) {
				struct strbuf b = {0};
				sb_cstring(&b, s->g->ops[sp->node_op[a]].name);
				fprintf(f, "\t\tn%d [label=%s];\n", a, b.s);
				free(b.s);
			}
		fprintf(f, "\t}\n");
	}
	for (int a = 0; a < sp->n; a++)
		for (int64_t e = sp->xadj[a]; e < sp->xadj[a + 1]; e++) {
			int b = sp->adj[e], ev = 0;
			for (int k = 0; k < pl->n_events; k++)
				ev |= pl->ev[k].from == a && pl->ev[k].to == b;
			fprintf(f, "\tn%d -> n%d%s;\n", a, b, ev ? " [style=dashed, color=red]" : "");
		}
	for (int k = 0; k < pl->n_events; k++) { /* events of the policy's syncs, beyond the dependencies */
		int a = pl->ev[k].from, b = pl->ev[k].to, dep = 0;
		for (int64_t e = sp->xadj[a]; e < sp->xadj[a + 1]; e++)
			dep |= sp->adj[e] == b;
		if (!dep)
			fprintf(f, "\tn%d -> n%d [style=dashed, color=blue];\n", a, b);
	}
	fprintf(f, "}\n");
}
