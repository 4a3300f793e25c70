/* pipeline.c: tiling, memory plan, dependencies, placement, verification, simulation, emission,
 * and the report arkgen prints. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "diag.h"
#include "emit.h"
#include "pipeline.h"
#include "schedule.h"

static FILE *open_out(const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f)
		diag_error(path, 0, "cannot write: %s", strerror(errno));
	return f;
}

static int close_out(FILE *f, const char *path)
{
	if (fclose(f) != 0) {
		diag_error(path, 0, "write failed: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static int64_t edge_cut(const struct tiling *s, const struct schedule *p)
{
	int64_t cut = 0;
	for (int u = 0; u < s->n_vcta; u++)
		for (int64_t e = s->xadj[u]; e < s->xadj[u + 1]; e++)
			cut += s->keep[e] && p->pl.sm[u] != p->pl.sm[s->adj[e]];
	return cut;
}

static void report_policy(const struct tiling *s, const struct schedule *p)
{
	printf("  %-10s predicted %8.1f us  critical path %8.1f us  SM utilisation %5.1f%%  edge cut %lld  "
	       "waits %lld  counters %d\n",
	       part_policy_name[p->policy], p->sim.latency_us, p->sim.critical_us, 100 * p->sim.utilisation,
	       (long long)edge_cut(s, p), (long long)p->wait0[s->n_vcta], p->n_counters);
}

static void report(const struct tiling *s, const struct schedule *p, double secs)
{
	const struct graph *g = s->g;
	int fused = 0, reduced = 0, chained = 0, splitk = 0;
	for (int i = 0; i < g->n_ops; i++) {
		int into = s->per_op[i].fused_into;
		fused += into >= 0 && g->ops[into].kind == ARK_OP_MATMUL;
		reduced += into >= 0 && g->ops[into].kind == ARK_OP_ALL_REDUCE;
		chained += into >= 0 && g->ops[into].kind != ARK_OP_MATMUL && g->ops[into].kind != ARK_OP_ALL_REDUCE;
		splitk += s->per_op[i].splits > 1;
	}
	printf("%s: %d ops (%d fused into a matmul, ", g->name, g->n_ops, fused);
	if (reduced)
		printf("%d into an all_reduce, ", reduced);
	printf("%d into an elementwise chain, %d split along K), %d vCTAs on %d SMs\n", chained, splitk, s->n_vcta,
	       p->pl.sms);
	printf("  dependencies: %lld hazards, %lld edges after transitive reduction, %lld waits on %d counters "
	       "after placement (%s)\n",
	       (long long)s->n_hazards, (long long)s->n_kept, (long long)p->wait0[s->n_vcta], p->n_counters,
	       p->barrier ? "grid barriers between levels" : "the rest is program order");
	for (int gpu = 0; gpu < g->gpus; gpu++)
		printf("  arena GPU %d: %.2f MiB (%.2f MiB without reuse)\n", gpu, s->arena[gpu] / 1048576.0,
		       s->arena_noreuse[gpu] / 1048576.0);
	printf("  placement %s: edge cut %lld, verified: every hazard ordered, no deadlock\n",
	       part_policy_name[p->policy], (long long)edge_cut(s, p));
	printf("  predicted latency %.1f us (critical path %.1f us over %d vCTAs: compute %.1f, memory %.1f, "
	       "hops %.1f, waits %.1f; SM utilisation %.1f%%)\n",
	       p->sim.latency_us, p->sim.critical_us, p->sim.critical_len, p->sim.compute_us, p->sim.memory_us,
	       p->sim.hop_us, p->sim.wait_us, 100 * p->sim.utilisation);
	printf("  scheduled in %.3f s\n", secs);
}

int pipeline_run(struct graph *g, const struct pipeline_opts *o)
{
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	struct tile_opts to = {.sms = o->sms, .smem = o->smem, .fuse = o->fuse, .reuse = o->reuse,
			      .p2p_max = o->p2p_max,
			      .oneshot_max = o->oneshot_max, .ll_max = o->ll_max};
	struct tiling s;
	struct schedule p;
	struct part_gpu gpu;
	int rc = -1;
	part_gpu_default(&gpu, o->sms);
	memset(&p, 0, sizeof p);
	tiling_init(&s, g, &to);
	fuse_graph(&s);
	if (tile_graph(&s) < 0 || mem_plan(&s) < 0 || deps_build(&s) < 0)
		goto out_sched;
	if (o->dump_tiles)
		tiling_dump(&s, stdout);
	if (o->dot_vcta) {
		FILE *f = open_out(o->dot_vcta);
		if (!f)
			goto out_sched;
		tiling_dot(&s, f);
		if (close_out(f, o->dot_vcta) < 0)
			goto out_sched;
	}
	if (o->policy < 0) {
		printf("%s: %d vCTAs on %d SMs, %s\n", g->name, s.n_vcta, o->sms,
		       o->barrier ? "grid barriers between levels" : "counters");
		for (int pol = 0; pol < PART__COUNT; pol++) {
			if (schedule_build(&s, &gpu, pol, o->barrier, &p) < 0)
				goto out_plan;
			report_policy(&s, &p);
			schedule_free(&p);
		}
		rc = 0;
		goto out_sched;
	}
	if (schedule_build(&s, &gpu, o->policy, o->barrier, &p) < 0)
		goto out_plan;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (o->dump_place)
		schedule_dump(&s, &p, stdout);
	if (!o->quiet)
		report(&s, &p, (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
	if (o->schedule) {
		FILE *f = open_out(o->schedule);
		if (!f || emit_schedule_json(&s, &p, f) < 0 || close_out(f, o->schedule) < 0)
			goto out_plan;
	}
	if (o->out) {
		struct emit_info info = {.options = o->options, .threads = o->threads, .smem = o->smem};
		FILE *f = open_out(o->out);
		if (!f)
			goto out_plan;
		if (emit_loop(&s, &p, &info, f) < 0) {
			fclose(f);
			remove(o->out);
			goto out_plan;
		}
		if (close_out(f, o->out) < 0)
			goto out_plan;
	}
	rc = 0;
out_plan:
	schedule_free(&p);
out_sched:
	tiling_free(&s);
	return rc;
}
