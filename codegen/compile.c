/* compile.c: arkgen_compile, the list of passes from a model to a verified, simulated schedule. */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "arkgen.h"
#include "diag.h"
#include "calib.h"

struct arkgen_options arkgen_options_default(void)
{
	return (struct arkgen_options){
		.sms = ARKGEN_SMS_DEFAULT,
		.smem = ARKGEN_SMEM_DEFAULT,
		.threads = 256,
		.policy = ARKGEN_POLICY_AUTO,
		.barrier = 0,
		.fuse = 1,
		.reuse = 1,
		.p2p_max = ARK_P2P_MAX_DEFAULT,
		.oneshot_max = ARK_ONESHOT_MAX_AUTO,
		.ll_max = ARK_LL_MAX_DEFAULT,
		.calib = calib_default(),
		.until = ARKGEN_PASS_SCHEDULE,
	};
}

/* Records that pass p completed; 1 when the options stop after it. */
static int done(struct arkgen_result *r, enum arkgen_pass p)
{
	r->done = p;
	return p >= r->opt.until;
}

static int load(struct arkgen_result *r, const char *path, const char *text)
{
	return text ? cfg_load_string(&r->graph, path, text) : cfg_load(&r->graph, path);
}

/* One policy's placement and prediction for policy auto (schedule_place), on a thread of its own. */
struct placing {
	struct arkgen_result *r;
	int policy;
	int rc;
	struct schedule p;
};

static void *place_one(void *arg)
{
	struct placing *j = arg;
	j->rc = schedule_place(&j->r->tiling, &j->r->gpu, j->policy, j->r->opt.barrier, &j->p);
	return NULL;
}

/* Placement, waits, counters, proof and prediction: for one policy, or for each. With policy auto,
 * each placed and simulated (the four side by side), and the one of least predicted latency kept in
 * schedule[0], verified and given its tables (the simulator's prediction picks the placement as it
 * picks the memory plan below: on a 40-model draw four models were predicted, and measured,
 * 1.15-1.75x faster on another policy than on METIS's, bench/NOTES.md). A policy that fails there is
 * passed over, and one whose schedule the verifier rejects gives way to the next (with a warning:
 * that is a bug of the policy); only when none is left is it an error, reported as that policy's
 * own. */
static int schedule(struct arkgen_result *r)
{
	const struct arkgen_options *o = &r->opt;
	if (o->policy != ARKGEN_POLICY_AUTO) {
		const int all = o->policy == ARKGEN_POLICY_ALL;
		for (int pol = all ? 0 : o->policy; pol <= (all ? PART__COUNT - 1 : o->policy); pol++) {
			struct schedule *p = &r->schedule[r->n_schedules];
			if (schedule_build(&r->tiling, &r->gpu, pol, o->barrier, p) < 0) {
				schedule_free(p);
				return -1;
			}
			r->n_schedules++;
		}
		return 0;
	}
	struct placing job[PART__COUNT];
	pthread_t th[PART__COUNT];
	int started[PART__COUNT], n = 0;
	const int quiet = diag_quiet;
	diag_quiet = 1;
	for (int pol = 0; pol < PART__COUNT; pol++) { /* side by side: they only read the tiling */
		job[pol] = (struct placing){.r = r, .policy = pol};
		started[pol] = pthread_create(&th[pol], NULL, place_one, &job[pol]) == 0;
		if (!started[pol]) /* no thread to be had: in this one */
			place_one(&job[pol]);
	}
	for (int pol = 0; pol < PART__COUNT; pol++) {
		if (started[pol])
			pthread_join(th[pol], NULL);
		if (job[pol].rc < 0) {
			schedule_free(&job[pol].p);
			continue;
		}
		r->policy_us[pol] = job[pol].p.sim.latency_us;
		job[n++] = job[pol]; /* the placed ones first, in policy order */
	}
	diag_quiet = quiet;
	if (!n) { /* every policy failed: METIS's error, reported */
		if (schedule_place(&r->tiling, &r->gpu, PART_METIS, o->barrier, &r->schedule[0]) < 0) {
			schedule_free(&r->schedule[0]);
			memset(&r->schedule[0], 0, sizeof r->schedule[0]);
			return -1;
		}
		r->n_schedules = 1;
		return schedule_check(&r->tiling, &r->schedule[0]);
	}
	/* by predicted latency, then by policy (insertion sort: stable, four at most) */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && job[j].p.sim.latency_us < job[j - 1].p.sim.latency_us; j--) {
			struct placing t = job[j];
			job[j] = job[j - 1], job[j - 1] = t;
		}
	int kept = -1;
	for (int i = 0; i < n && kept < 0; i++) {
		diag_quiet = 1;
		const int rc = schedule_check(&r->tiling, &job[i].p);
		diag_quiet = quiet;
		if (rc == 0)
			kept = i;
	}
	if (kept < 0) { /* the verifier's reason for the best, reported */
		r->schedule[0] = job[0].p;
		for (int i = 1; i < n; i++)
			schedule_free(&job[i].p);
		r->n_schedules = 1;
		tables_free(&r->schedule[0].tab);
		return schedule_check(&r->tiling, &r->schedule[0]);
	}
	if (kept > 0)
		diag_warning(r->tiling.g->file, 0, "the placement of least predicted latency (%s, %.1f us) failed "
			     "verification; kept %s (%.1f us)", part_policy_name[job[0].p.policy], job[0].p.sim.latency_us,
			     part_policy_name[job[kept].p.policy], job[kept].p.sim.latency_us);
	for (int i = 0; i < n; i++)
		if (i != kept)
			schedule_free(&job[i].p);
	r->schedule[0] = job[kept].p;
	r->n_schedules = 1;
	return 0;
}

static double since(const struct timespec *t0)
{
	struct timespec t1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0->tv_nsec);
}

/* The generated file asserts that ARK_SMEM_BYTES (--smem) holds what every template needs; refusing
 * here says so before nvcc fails the assertion. */
static int check_smem(const char *path, const struct arkgen_options *opt)
{
	const char *label;
	int need = tmpl_smem_need(opt->threads, &label);
	if (opt->smem >= need)
		return 0;
	diag_error(path, 0, "--smem %d is below the %d bytes the %s tile needs", opt->smem, need, label);
	diag_hint("the generated file's templates need at least %d bytes of dynamic shared memory per CTA "
		  "with %d threads", need, opt->threads);
	return -1;
}

static int compile_plan(const char *path, const char *text, const struct arkgen_options *opt, struct arkgen_result *r,
			int reuse, int refill)
{
	const struct tile_opts to = {.sms = opt->sms, .smem = opt->smem, .fuse = opt->fuse, .reuse = reuse, .refill = refill,
				     .p2p_max = opt->p2p_max, .oneshot_max = opt->oneshot_max, .ll_max = opt->ll_max, .calib = opt->calib, .gpu = &r->gpu};
	struct timespec t0;
	memset(r, 0, sizeof *r);
	r->opt = *opt;
	if (check_smem(path, opt) < 0)
		return -1;
	part_gpu_default(&r->gpu, opt->sms);
	if (opt->calib)
		calib_gpu(opt->calib, &r->gpu);
	if (load(r, path, text) < 0)
		return -1;
	if (done(r, ARKGEN_PASS_LOAD))
		return 0;
	if (graph_check(&r->graph) < 0 || graph_lower_quant(&r->graph) < 0)
		return -1;
	graph_pad_weights(&r->graph);
	r->n_model_tensors = r->graph.n_tensors;
	if (done(r, ARKGEN_PASS_CHECK))
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	tiling_init(&r->tiling, &r->graph, &to);
	fuse_graph(&r->tiling);
	tiling_pad_activations(&r->tiling);
	if (done(r, ARKGEN_PASS_FUSE))
		return 0;
	if (tile_graph(&r->tiling) < 0)
		return -1;
	cost_calibrate(&r->tiling, opt->calib, &r->gpu);
	if (done(r, ARKGEN_PASS_TILE))
		return 0;
	if (mem_plan(&r->tiling) < 0)
		return -1;
	if (done(r, ARKGEN_PASS_MEM))
		return 0;
	if (deps_build(&r->tiling) < 0)
		return -1;
	if (done(r, ARKGEN_PASS_DEPS))
		return 0;
	int rc = schedule(r);
	r->seconds = since(&t0);
	if (rc < 0)
		return -1;
	done(r, ARKGEN_PASS_SCHEDULE);
	return 0;
}

/* compile_plan again, its diagnostics unprinted: they are the first pass's. */
static int compile_plan_again(const char *path, const char *text, const struct arkgen_options *opt,
			      struct arkgen_result *r, int reuse, int refill)
{
	const int quiet = diag_quiet;
	diag_quiet = 1;
	const int rc = compile_plan(path, text, opt, r, reuse, refill);
	diag_quiet = quiet;
	return rc;
}

/* The plan made again with the tiler's and memory plan's options (reuse, refill), kept in place of
 * r's where its predicted latency is lower (its time added to r's either way). */
static int keep_better(const char *path, const char *text, const struct arkgen_options *opt, struct arkgen_result *r,
		       int reuse, int refill)
{
	struct arkgen_result alt;
	if (compile_plan_again(path, text, opt, &alt, reuse, refill) < 0 || alt.n_schedules != 1) {
		arkgen_result_free(&alt);
		return 0;
	}
	double secs = r->seconds + alt.seconds;
	const int better = alt.schedule[0].sim.latency_us < r->schedule[0].sim.latency_us;
	struct arkgen_options again = *opt;
	double policy_us[PART__COUNT];
	again.policy = alt.schedule[0].policy; /* auto: made again by the policy it chose */
	memcpy(policy_us, alt.policy_us, sizeof policy_us);
	arkgen_result_free(&alt);
	if (better) { /* made again in place: a result points into itself (tiling.g, the gpu), so no copy */
		arkgen_result_free(r);
		if (compile_plan_again(path, text, &again, r, reuse, refill) < 0)
			return -1;
		r->opt.policy = opt->policy;
		memcpy(r->policy_us, policy_us, sizeof policy_us);
		secs += r->seconds;
	}
	r->seconds = secs;
	return 0;
}

/* With reuse, two memory plans: tensors of one dependency level apart (MEM_REUSE_LEVELS, so that
 * independent ops are not ordered by the bytes they share), and, where some level holds more than
 * one op, the plan by vCTA order (MEM_REUSE_ORDER), whose extra orderings sometimes place better.
 * The one of lower predicted latency is kept: on 12 models whose predictions the two plans set
 * apart, the prediction picked the faster on every one (bench/NOTES.md). Then, where some matmuls
 * of a level leave SMs of their share idle (refill_sms), the tiling that gives those SMs to the
 * others, kept likewise: the shares alone do not see what else runs beside them. */
int arkgen_compile(const char *path, const char *text, const struct arkgen_options *opt, struct arkgen_result *r)
{
	if (compile_plan(path, text, opt, r, opt->reuse ? MEM_REUSE_LEVELS : 0, 0) < 0)
		return -1;
	if (opt->policy == ARKGEN_POLICY_ALL || r->n_schedules != 1)
		return 0;
	if (opt->reuse && r->tiling.mem_levels_apart && keep_better(path, text, opt, r, MEM_REUSE_ORDER, 0) < 0)
		return -1;
	if (r->tiling.refill_differs && keep_better(path, text, opt, r, r->tiling.opt.reuse, 1) < 0)
		return -1;
	return 0;
}

void arkgen_result_free(struct arkgen_result *r)
{
	/* what no pass made is zero, which the frees accept */
	for (int i = 0; i < r->n_schedules; i++)
		schedule_free(&r->schedule[i]);
	tiling_free(&r->tiling);
	graph_free(&r->graph);
	memset(r, 0, sizeof *r);
}
