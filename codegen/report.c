/* report.c: what arkgen prints about a compiled model: the front end's summary (tensors by role,
 * weights), the schedule's report (fusion, dependencies, arenas, placement, prediction) and, for
 * --policy all, one line per policy. */
#include "report.h"

#include "calib.h"
#include "lower.h" /* fuse_row_op */

void report_model(const struct graph *g, FILE *f)
{
	int n_role[ARK_ROLE__COUNT] = { 0 };
	uint64_t weight_bytes = 0;
	for (int i = 0; i < g->n_tensors; i++) {
		n_role[g->tensors[i].role]++;
		if (g->tensors[i].role == ARK_ROLE_WEIGHT)
			weight_bytes += tensor_bytes(&g->tensors[i]);
	}
	char st[32] = "";
	if (n_role[ARK_ROLE_STATE])
		snprintf(st, sizeof st, ", %d state%s", n_role[ARK_ROLE_STATE], n_role[ARK_ROLE_STATE] == 1 ? "" : "s");
	fprintf(f, "%s: %s checked: %d op%s, %d tensors (%d input%s, %d weight%s, %d output%s, %d activation%s%s), "
		"%d GPU%s, default dtype %s, %.2f MiB of weights.\n",
		g->file, g->name, g->n_ops, g->n_ops == 1 ? "" : "s", g->n_tensors, n_role[ARK_ROLE_INPUT],
		n_role[ARK_ROLE_INPUT] == 1 ? "" : "s", n_role[ARK_ROLE_WEIGHT], n_role[ARK_ROLE_WEIGHT] == 1 ? "" : "s",
		n_role[ARK_ROLE_OUTPUT], n_role[ARK_ROLE_OUTPUT] == 1 ? "" : "s", n_role[ARK_ROLE_ACTIVATION],
		n_role[ARK_ROLE_ACTIVATION] == 1 ? "" : "s", st, g->gpus, g->gpus == 1 ? "" : "s", dtype_name[g->dtype],
		(double)weight_bytes / (1 << 20));
}

/* Kept edges between vCTAs on different SMs. */
static int64_t edge_cut(const struct tiling *s, const struct schedule *p)
{
	int64_t cut = 0;
	for (int u = 0; u < s->n_vcta; u++)
		for (int64_t e = s->xadj[u]; e < s->xadj[u + 1]; e++)
			cut += s->keep[e] && p->pl.sm[u] != p->pl.sm[s->adj[e]];
	return cut;
}

/* Which costs the prediction used: the calibration table for how many vCTAs, the analytic model for
 * which others. */
static void report_costs(const struct arkgen_result *r, FILE *f)
{
	const struct calib_table *t = r->opt.calib;
	const struct tiling *s = &r->tiling;
	if (!t) {
		fprintf(f, "  costs: the analytic model (no calibration table)\n");
		return;
	}
	fprintf(f, "  costs: calibration table %s (%s, %d SMs, ", t->name, t->gpu, t->sms);
	if (t->measured)
		fprintf(f, "measured %s)", t->date);
	else
		fprintf(f, "uncalibrated: generated from the analytic model)");
	if (s->n_calibrated == s->n_vcta) {
		fprintf(f, " for every vCTA\n");
		return;
	}
	fprintf(f, " for %d of %d vCTAs, the analytic model for the others (", s->n_calibrated, s->n_vcta);
	const char *sep = "";
	for (int k = 0; k < ARK_T__COUNT; k++)
		if (s->calib_missing >> k & 1) {
			fprintf(f, "%s%s", *sep ? sep : "not in the table: ", calib_tmpl_name(k));
			sep = ", ";
		}
	/* templates no table measures (attention), and the communication tasks */
	int comm = 0;
	uint32_t unmeasured = 0;
	for (int i = 0; i < s->n_vcta; i++)
		if (s->v[i].opp >= r->graph.n_ops)
			comm = 1;
		else if (!calib_tmpl_name(s->v[i].tmpl))
			unmeasured |= 1u << s->v[i].tmpl;
	for (int k = 0; k < ARK_T__COUNT; k++)
		if (unmeasured >> k & 1) {
			fprintf(f, "%s%s tiles", *sep ? "; " : "", tmpl_name(k));
			sep = ", ";
		}
	if (comm)
		fprintf(f, "%scommunication tasks", *sep ? (unmeasured ? ", " : "; ") : "");
	fprintf(f, ")\n");
}

void report_policies(const struct arkgen_result *r, FILE *f)
{
	const struct tiling *s = &r->tiling;
	fprintf(f, "%s: %d vCTAs on %d SMs, %s\n", r->graph.name, s->n_vcta, r->opt.sms,
		r->opt.barrier ? "grid barriers between levels" : "counters");
	report_costs(r, f);
	for (int i = 0; i < r->n_schedules; i++) {
		const struct schedule *p = &r->schedule[i];
		fprintf(f, "  %-10s predicted %8.1f us  critical path %8.1f us  SM utilisation %5.1f%%  edge cut %lld  "
			"waits %lld  counters %d\n",
			part_policy_name[p->policy], p->sim.latency_us, p->sim.critical_us, 100 * p->sim.utilisation,
			(long long)edge_cut(s, p), (long long)p->wait0[s->n_vcta], p->n_counters);
	}
}

/* x for a "%.1f": a part of the critical path that the simulator's sums leave a rounding error
 * below zero prints as 0.0, not -0.0. */
static double tenth(double x)
{
	return x < 0 && x > -0.05 ? 0.0 : x;
}

void report_schedule(const struct arkgen_result *r, FILE *f)
{
	const struct graph *g = &r->graph;
	const struct tiling *s = &r->tiling;
	const struct schedule *p = &r->schedule[0];
	int fused = 0, reduced = 0, rowed = 0, embedded = 0, chained = 0, splitk = 0;
	for (int i = 0; i < g->n_ops; i++) {
		int into = s->per_op[i].fused_into;
		enum ark_op_kind k = into >= 0 ? g->ops[into].kind : ARK_OP__COUNT;
		int row = into >= 0 && fuse_row_op(k);
		fused += k == ARK_OP_MATMUL;
		reduced += k == ARK_OP_ALL_REDUCE;
		rowed += row;
		embedded += k == ARK_OP_EMBEDDING;
		chained += into >= 0 && k != ARK_OP_MATMUL && k != ARK_OP_ALL_REDUCE && k != ARK_OP_EMBEDDING && !row;
		splitk += s->per_op[i].splits > 1;
	}
	fprintf(f, "%s: %d ops (%d fused into a matmul, ", g->name, g->n_ops, fused);
	if (reduced)
		fprintf(f, "%d into an all_reduce, ", reduced);
	if (rowed)
		fprintf(f, "%d into a softmax or norm, ", rowed);
	if (embedded)
		fprintf(f, "%d into an embedding, ", embedded);
	fprintf(f, "%d into an elementwise chain, %d split along K), %d vCTAs on %d SMs\n", chained, splitk, s->n_vcta,
		p->pl.sms);
	fprintf(f, "  dependencies: %lld hazards, %lld edges after transitive reduction, %lld waits on %d counters "
		"after placement (%s)\n",
		(long long)s->n_hazards, (long long)s->n_kept, (long long)p->wait0[s->n_vcta], p->n_counters,
		p->barrier ? "grid barriers between levels" : "the rest is program order");
	for (int gpu = 0; gpu < g->gpus; gpu++)
		fprintf(f, "  arena GPU %d: %.2f MiB (%.2f MiB without reuse)\n", gpu, s->arena[gpu] / 1048576.0,
			s->arena_noreuse[gpu] / 1048576.0);
	int padded[3] = {0, 0, 0}; /* weights, inputs, activations */
	uint64_t pad_bytes = 0;
	for (int t = 0; t < g->n_tensors; t++)
		if (g->tensors[t].pitch) {
			const enum ark_role role = g->tensors[t].role;
			padded[role == ARK_ROLE_WEIGHT ? 0 : role == ARK_ROLE_INPUT ? 1 : 2]++;
			pad_bytes += tensor_arena_bytes(&g->tensors[t]) - tensor_bytes(&g->tensors[t]);
		}
	if (padded[0] || padded[1] || padded[2])
		fprintf(f, "  rows padded to 16-byte vectors: %d weight%s, %d input%s, %d activation%s (%.1f KiB of padding)\n",
			padded[0], padded[0] == 1 ? "" : "s", padded[1], padded[1] == 1 ? "" : "s", padded[2],
			padded[2] == 1 ? "" : "s", pad_bytes / 1024.0);
	fprintf(f, "  placement %s: edge cut %lld, verified: every hazard ordered, no deadlock\n",
		part_policy_name[p->policy], (long long)edge_cut(s, p));
	if (r->opt.policy == ARKGEN_POLICY_AUTO) { /* what it was chosen from */
		fprintf(f, "  placement chosen by predicted latency:");
		for (int i = 0; i < PART__COUNT; i++)
			if (r->policy_us[i] > 0)
				fprintf(f, "%s %s %.1f us", i ? "," : "", part_policy_name[i], r->policy_us[i]);
		fprintf(f, "\n");
	}
	report_costs(r, f);
	fprintf(f, "  predicted latency %.1f us (critical path %.1f us over %d vCTAs: compute %.1f, memory %.1f, "
		"hops %.1f, waits %.1f; SM utilisation %.1f%%)\n",
		p->sim.latency_us, p->sim.critical_us, p->sim.critical_len, tenth(p->sim.compute_us), tenth(p->sim.memory_us),
		tenth(p->sim.hop_us), tenth(p->sim.wait_us), 100 * p->sim.utilisation);
	fprintf(f, "  scheduled in %.3f s\n", r->seconds);
}
