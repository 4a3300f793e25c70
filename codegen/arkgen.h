/* arkgen.h: arkgen as a library. A model (a file, or text in memory) and options in; the checked
 * graph, its tiling and its schedule out, in memory. arkgen_compile runs every pass and does no file
 * I/O but reading the model; diagnostics go to diag_out (stderr). Writing anything is the caller's:
 * main.c, or emit.h's functions on the result. */
#ifndef ARKGEN_H
#define ARKGEN_H

#include "schedule.h"

/* The passes, in the order arkgen_compile runs them. */
enum arkgen_pass {
	ARKGEN_PASS_NONE,
	ARKGEN_PASS_LOAD,     /* cfg.c: the model file into the graph IR */
	ARKGEN_PASS_CHECK,    /* graph.c: names resolved, shapes and dtypes inferred, topological order */
	ARKGEN_PASS_FUSE,     /* fuse.c: which ops run inside the vCTAs of another */
	ARKGEN_PASS_TILE,     /* tile.c, lower_comm.c: every op cut into vCTAs */
	ARKGEN_PASS_MEM,      /* mem.c: arena offsets */
	ARKGEN_PASS_DEPS,     /* deps.c: hazards, edges, transitive reduction */
	ARKGEN_PASS_SCHEDULE, /* schedule.c, partition/: placement, waits, counters, proof, prediction */
};

/* policy: every placement policy, one schedule each (for comparing them; nothing to emit) */
#define ARKGEN_POLICY_ALL (-1)
/* policy: every placement policy, the one of least predicted latency kept (ties: the first of
 * enum part_policy); the default */
#define ARKGEN_POLICY_AUTO (-2)

struct arkgen_options {
	int sms;               /* SMs of the target GPU */
	int smem;              /* dynamic shared memory per CTA, bytes */
	int threads;           /* threads per CTA of the loop kernel */
	int policy;            /* enum part_policy, ARKGEN_POLICY_ALL or ARKGEN_POLICY_AUTO */
	int barrier;           /* grid barriers between dependency levels instead of counters */
	int fuse;              /* activations into matmuls and all_reduces, elementwise chains */
	int reuse;             /* activations share memory when their lifetimes allow */
	long long p2p_max;     /* transport "auto": transfers up to this many bytes by p2p, DMA above */
	long long oneshot_max; /* all_reduce: one-shot up to this many bytes per GPU; ARK_ONESHOT_MAX_AUTO */
	long long ll_max;      /* one-shot all_reduce by p2p: packets up to this many bytes per GPU */
	const struct calib_table *calib; /* measured costs of the tiles and the protocol (calib.h), NULL:
					  * the analytic model; the caller keeps it alive */
	enum arkgen_pass until; /* the last pass to run (arkgen_options_default: every pass) */
};

#define ARKGEN_SMS_DEFAULT 132     /* H100, H200 */
#define ARKGEN_SMEM_DEFAULT 131072

/* The defaults of the command line (arkgen --help); calib: calib_default(). */
struct arkgen_options arkgen_options_default(void);

struct arkgen_result {
	struct arkgen_options opt;    /* as compiled */
	struct part_gpu gpu;          /* the machine the costs and the simulator assume */
	enum arkgen_pass done;        /* the last pass that completed */
	struct graph graph;           /* the tiler appends internal tensors (workspaces, staging) to it */
	int n_model_tensors;          /* tensors of the checked model: graph.tensors[0 .. n_model_tensors) */
	struct tiling tiling;         /* from ARKGEN_PASS_FUSE on */
	int n_schedules;              /* 1; ARKGEN_POLICY_ALL: one per policy (those made before an error) */
	struct schedule schedule[PART__COUNT]; /* [0]: the schedule; policy all: [policy] */
	double policy_us[PART__COUNT]; /* policy auto: each policy's predicted latency, us (0: not made) */
	double seconds;               /* time from tiling to the last schedule */
};

/* Runs the passes on the model file `path`, or on `text` when not NULL (`path` then names it in
 * diagnostics), up to opt->until. opt: as arkgen_options_default() gives it, changed within the
 * ranges arkgen --help states (cli.c checks them for the command line). 0, or -1 after an error was
 * reported; either way *r holds what the passes made (r->done) until arkgen_result_free. */
int arkgen_compile(const char *path, const char *text, const struct arkgen_options *opt, struct arkgen_result *r);
void arkgen_result_free(struct arkgen_result *r);

#endif
