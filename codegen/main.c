/* main.c: the arkgen command line: options, then a short list of passes over the model. */
#include "graph.h"
#include "diag.h"
#include "pipeline.h"
#include "schedule.h"
#include "partition/part.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Exit statuses: 0 success, 1 the model was rejected, 2 the command line was wrong. */
enum { EXIT_MODEL = 1, EXIT_USAGE = 2 };

/* What the command line asked for; later passes add their knobs here. */
struct options {
	const char *model;     /* MODEL.cfg */
	const char *out;       /* -o: generated CUDA file, NULL for none */
	const char *dot;       /* --dot: Graphviz file of the op graph, "-" for stdout */
	char dumps[16];        /* -d letters: G = checked graph, T = vCTAs, P = placement */
	int sms, smem;         /* --sms, --smem: the target GPU */
	int policy;            /* --policy, -1: all */
	int barrier;           /* --sync barrier */
	int fuse, reuse;       /* cleared by --no-fuse, --no-reuse */
	long long p2p_max;     /* --p2p-max */
	long long oneshot_max; /* --oneshot-max, ARK_ONESHOT_MAX_AUTO: the default rule */
	long long ll_max;      /* --ll-max */
	const char *dot_vctas; /* --dot-vctas */
	const char *schedule;  /* --schedule */
	char shaping[256];     /* the options that shape the generated code, for its header */
};

/* -d letters this build knows, with what each dumps. */
static const struct {
	char letter;
	const char *what;
} dump_letters[] = {
	{ 'G', "the checked graph: tensors with shapes, ops in topological order" },
	{ 'T', "the vCTAs: template, tile, regions read and written, cost" },
	{ 'P', "the placement: every SM's list with its waits (w:counter/need) and signals" },
};

/* Under LeakSanitizer (make SANITIZE=1): libconfig 1.5 leaks the buffer of a string token when a syntax
 * error follows it; that leak is libconfig's, not ours. Called by the sanitizer runtime. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libconfig.so\n";
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: arkgen [options] MODEL.cfg [-o OUT.cu]\n"
		"\n"
		"Reads an operator graph (a libconfig model file, format version 1), checks it, cuts every op into\n"
		"vCTAs, places them on the SMs, verifies and simulates the schedule and prints a report with the\n"
		"predicted latency. With -o it writes the persistent loop kernel as one CUDA file.\n"
		"\n"
		"options:\n"
		"  -o, --output FILE  write the generated CUDA loop kernel to FILE\n"
		"      --sms N        SMs of the target GPU (default 132: H100, H200)\n"
		"      --smem BYTES   dynamic shared memory per CTA (default 131072; the templates need 106496)\n"
		"      --policy P     placement: metis (default), roundrobin, wavefront, critical; 'all' prints\n"
		"                     one line per policy and emits nothing\n"
		"      --sync S       counters (default: per-dependency counters) or barrier (a grid barrier\n"
		"                     between dependency levels, as ARK does)\n"
		"      --no-fuse      do not run activations in the epilogue of the matmul before them\n"
		"      --no-reuse     give every activation its own memory\n"
		"      --p2p-max BYTES  communication ops with transport \"auto\": transfers of at most BYTES go\n"
		"                     GPU to GPU by SM stores (p2p), larger ones through the DMA engine\n"
		"                     (default %d: measured, p2p beats the DMA engine up to 64 MiB)\n"
		"      --oneshot-max BYTES  all_reduce of at most BYTES per GPU: every GPU sends its whole input\n"
		"                     to every other and sums all of them (one hop); larger ones reduce-scatter,\n"
		"                     sum and all-gather (two hops, less data with 3 or more GPUs). Default:\n"
		"                     one-shot at every size on 2 GPUs (the same bytes on the wire, one hop\n"
		"                     less), up to %d bytes on 3 or more\n"
		"      --ll-max BYTES  one-shot all_reduce by p2p of at most BYTES per GPU: the data travel in\n"
		"                     8-byte packets that carry their own flag (4 data bytes each; no fence and\n"
		"                     no separate flag), polled by the sums (default %d: off, measured\n"
		"                     slower than stores on 2 H200s)\n"
		"      --schedule FILE  write the schedule (vCTAs, SMs, waits, prediction) as JSON\n"
		"      --dot-vctas FILE write the vCTA dependency graph in Graphviz format\n"
		"      --nvcc-flags   print the nvcc flags that build a generated file (include paths,\n"
		"                     architecture, libraries), like pkg-config, and exit\n"
		"  -d LETTERS         dump intermediate results to stdout, one letter per pass:\n",
		ARK_P2P_MAX_DEFAULT, ARK_ONESHOT_MAX_MANY, ARK_LL_MAX_DEFAULT);
	for (size_t i = 0; i < sizeof dump_letters / sizeof dump_letters[0]; i++)
		fprintf(f, "                       -d%c  %s\n", dump_letters[i].letter, dump_letters[i].what);
	fprintf(f,
		"      --dot FILE     write the op graph (ops and tensors) in Graphviz format to FILE ('-': stdout)\n"
		"  -h, --help         print this help and exit\n"
		"  -V, --version      print the version and exit\n"
		"\n"
		"exit status: 0 success, 1 the model was rejected (FILE:LINE: error: ...), 2 bad command line.\n");
}

static int exists(const char *dir, const char *file)
{
	char p[PATH_MAX + 64];
	snprintf(p, sizeof p, "%s/%s", dir, file);
	return access(p, R_OK) == 0;
}

/* Flags that build a generated file: from the build tree when arkgen runs from it (build/arkgen next
 * to build/libarkrt.a, sources one or two levels up), else from the installed prefix. */
static int print_nvcc_flags(void)
{
	char exe[PATH_MAX], root[PATH_MAX + 8];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0) {
		fprintf(stderr, "arkgen: error: cannot find my own path (/proc/self/exe)\n");
		return EXIT_MODEL;
	}
	exe[n] = 0;
	*strrchr(exe, '/') = 0; /* the folder of arkgen */
	const char *arch = "-O3 -std=c++17 " ARKGEN_GENCODE;
	for (const char *up = ".."; strlen(up) <= 5; up = strlen(up) == 2 ? "../.." : "../../..") {
		snprintf(root, sizeof root, "%s/%s", exe, up);
		char *real = realpath(root, NULL);
		if (real && exists(real, "templates/ark_loop.cuh") && exists(exe, "libarkrt.a")) {
			printf("%s -I%s/abi -I%s/templates -I%s/runtime -I%s/dma %s/libarkrt.a -lcjson -lcudart\n", arch, real,
			       real, real, real, exe);
			free(real);
			return 0;
		}
		free(real);
	}
	snprintf(root, sizeof root, "%s/..", exe);
	char *pre = realpath(root, NULL);
	if (pre && exists(pre, "include/arkgen/ark_loop.cuh") && exists(pre, "lib/libarkrt.a")) {
		printf("%s -I%s/include/arkgen %s/lib/libarkrt.a -lcjson -lcudart\n", arch, pre, pre);
		free(pre);
		return 0;
	}
	free(pre);
	fprintf(stderr, "arkgen: error: neither a build tree nor an installation (%s) found beside %s\n",
		ARKGEN_PREFIX, exe);
	return EXIT_MODEL;
}

static int want_dump(const struct options *o, char letter)
{
	return strchr(o->dumps, letter) != NULL;
}

/* Fills o from argv. Returns -1 to exit with `*status` (help, version, usage errors), 0 to go on. */
static int parse_options(int argc, char **argv, struct options *o, int *status)
{
	enum { OPT_DOT = 256, OPT_SMS, OPT_SMEM, OPT_POLICY, OPT_SYNC, OPT_NOFUSE, OPT_NOREUSE, OPT_SCHED,
	       OPT_DOTV, OPT_NVCC, OPT_P2PMAX, OPT_ONESHOT, OPT_LLMAX };
	static const struct option longopts[] = {
		{ "sms", required_argument, NULL, OPT_SMS },
		{ "smem", required_argument, NULL, OPT_SMEM },
		{ "policy", required_argument, NULL, OPT_POLICY },
		{ "sync", required_argument, NULL, OPT_SYNC },
		{ "no-fuse", no_argument, NULL, OPT_NOFUSE },
		{ "no-reuse", no_argument, NULL, OPT_NOREUSE },
		{ "p2p-max", required_argument, NULL, OPT_P2PMAX },
		{ "oneshot-max", required_argument, NULL, OPT_ONESHOT },
		{ "ll-max", required_argument, NULL, OPT_LLMAX },
		{ "schedule", required_argument, NULL, OPT_SCHED },
		{ "dot-vctas", required_argument, NULL, OPT_DOTV },
		{ "nvcc-flags", no_argument, NULL, OPT_NVCC },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "output", required_argument, NULL, 'o' },
		{ "dot", required_argument, NULL, OPT_DOT },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	memset(o, 0, sizeof *o);
	o->sms = 132;
	o->smem = 131072;
	o->fuse = o->reuse = 1;
	o->p2p_max = ARK_P2P_MAX_DEFAULT;
	o->oneshot_max = ARK_ONESHOT_MAX_AUTO;
	o->ll_max = ARK_LL_MAX_DEFAULT;
	*status = EXIT_USAGE;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hVo:d:", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			*status = 0;
			return -1;
		case 'V':
			printf("arkgen " ARKGEN_VERSION "\n");
			*status = 0;
			return -1;
		case 'o':
			o->out = optarg;
			break;
		case OPT_DOT:
			o->dot = optarg;
			break;
		case OPT_SMS:
		case OPT_SMEM: {
			char *end;
			long v = strtol(optarg, &end, 10);
			long hi = c == OPT_SMS ? 1024 : 232448, lo = c == OPT_SMS ? 1 : 0;
			if (*end || end == optarg || v < lo || v > hi) {
				fprintf(stderr, "arkgen: error: %s takes an integer from %ld to %ld, not '%s'\n",
					c == OPT_SMS ? "--sms" : "--smem", lo, hi, optarg);
				goto bad;
			}
			*(c == OPT_SMS ? &o->sms : &o->smem) = (int)v;
			break;
		}
		case OPT_POLICY:
			o->policy = strcmp(optarg, "all") ? part_policy_parse(optarg) : -1;
			if (o->policy < 0 && strcmp(optarg, "all")) {
				fprintf(stderr, "arkgen: error: unknown policy '%s' (metis, roundrobin, wavefront, "
						"critical, all)\n", optarg);
				goto bad;
			}
			break;
		case OPT_SYNC:
			if (strcmp(optarg, "counters") && strcmp(optarg, "barrier")) {
				fprintf(stderr, "arkgen: error: --sync takes counters or barrier, not '%s'\n", optarg);
				goto bad;
			}
			o->barrier = !strcmp(optarg, "barrier");
			break;
		case OPT_NOFUSE:
			o->fuse = 0;
			break;
		case OPT_NOREUSE:
			o->reuse = 0;
			break;
		case OPT_P2PMAX:
		case OPT_ONESHOT:
		case OPT_LLMAX: {
			const char *name = c == OPT_P2PMAX ? "--p2p-max" : c == OPT_ONESHOT ? "--oneshot-max" : "--ll-max";
			char *end;
			errno = 0;
			long long v = strtoll(optarg, &end, 10);
			if (errno || *end || end == optarg || v < 0) {
				fprintf(stderr, "arkgen: error: %s takes a byte count >= 0, not '%s'\n", name, optarg);
				goto bad;
			}
			*(c == OPT_P2PMAX ? &o->p2p_max : c == OPT_ONESHOT ? &o->oneshot_max : &o->ll_max) = v;
			break;
		}
		case OPT_SCHED:
			o->schedule = optarg;
			break;
		case OPT_DOTV:
			o->dot_vctas = optarg;
			break;
		case OPT_NVCC:
			*status = print_nvcc_flags();
			return -1;
		case 'd':
			for (const char *p = optarg; *p; p++) {
				size_t i, n = sizeof dump_letters / sizeof dump_letters[0];
				for (i = 0; i < n && dump_letters[i].letter != *p; i++)
					;
				if (i == n) {
					fprintf(stderr, "arkgen: error: unknown dump letter '%c' in -d%s\n", *p, optarg);
					goto bad;
				}
				if (!strchr(o->dumps, *p) && strlen(o->dumps) + 1 < sizeof o->dumps)
					strncat(o->dumps, p, 1);
			}
			break;
		case ':':
			fprintf(stderr, "arkgen: error: option '%s' needs an argument\n", argv[optind - 1]);
			goto bad;
		default:
			if (optopt && optopt < 256)
				fprintf(stderr, "arkgen: error: unknown option '-%c'\n", optopt);
			else
				fprintf(stderr, "arkgen: error: unknown option '%s'\n", argv[optind - 1]);
			goto bad;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "arkgen: error: no model file given\n");
		goto bad;
	}
	if (optind + 1 < argc) {
		fprintf(stderr, "arkgen: error: more than one model file given ('%s', '%s')\n", argv[optind],
			argv[optind + 1]);
		goto bad;
	}
	o->model = argv[optind];
	snprintf(o->shaping, sizeof o->shaping, "--sms %d --smem %d --policy %s --sync %s%s%s", o->sms, o->smem,
		 o->policy < 0 ? "all" : part_policy_name[o->policy], o->barrier ? "barrier" : "counters",
		 o->fuse ? "" : " --no-fuse", o->reuse ? "" : " --no-reuse");
	if (o->p2p_max != ARK_P2P_MAX_DEFAULT) {
		size_t n = strlen(o->shaping);
		snprintf(o->shaping + n, sizeof o->shaping - n, " --p2p-max %lld", o->p2p_max);
	}
	if (o->oneshot_max != ARK_ONESHOT_MAX_AUTO) {
		size_t n = strlen(o->shaping);
		snprintf(o->shaping + n, sizeof o->shaping - n, " --oneshot-max %lld", o->oneshot_max);
	}
	if (o->ll_max != ARK_LL_MAX_DEFAULT) {
		size_t n = strlen(o->shaping);
		snprintf(o->shaping + n, sizeof o->shaping - n, " --ll-max %lld", o->ll_max);
	}
	return 0;
bad:
	fprintf(stderr, "usage: arkgen [options] MODEL.cfg [-o OUT.cu]; arkgen --help for more\n");
	return -1;
}

static void summary(const struct graph *g, FILE *f)
{
	int n_role[5] = { 0 };
	uint64_t weight_bytes = 0;
	for (int i = 0; i < g->n_tensors; i++) {
		n_role[g->tensors[i].role]++;
		if (g->tensors[i].role == ARK_ROLE_WEIGHT)
			weight_bytes += tensor_bytes(&g->tensors[i]);
	}
	fprintf(f, "%s: %s checked: %d op%s, %d tensors (%d input%s, %d weight%s, %d output%s, %d activation%s), "
		"%d GPU%s, default dtype %s, %.2f MiB of weights.\n",
		g->file, g->name, g->n_ops, g->n_ops == 1 ? "" : "s", g->n_tensors, n_role[ARK_ROLE_INPUT],
		n_role[ARK_ROLE_INPUT] == 1 ? "" : "s", n_role[ARK_ROLE_WEIGHT], n_role[ARK_ROLE_WEIGHT] == 1 ? "" : "s",
		n_role[ARK_ROLE_OUTPUT], n_role[ARK_ROLE_OUTPUT] == 1 ? "" : "s", n_role[ARK_ROLE_ACTIVATION],
		n_role[ARK_ROLE_ACTIVATION] == 1 ? "" : "s", g->gpus, g->gpus == 1 ? "" : "s", dtype_name[g->dtype],
		(double)weight_bytes / (1 << 20));
}

static int write_dot(const struct graph *g, const char *path)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
	if (!f) {
		diag_error(path, 0, "cannot write the Graphviz file: %m");
		return -1;
	}
	graph_dot(g, f);
	if (f != stdout ? fclose(f) != 0 : fflush(f) != 0) {
		diag_error(path, 0, "cannot write the Graphviz file: %m");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct options opt;
	struct graph g;
	int status;
	if (parse_options(argc, argv, &opt, &status))
		return status;

	/* The passes, in order; each returns nonzero after reporting an error. */
	status = EXIT_MODEL;
	if (cfg_load(&g, opt.model) || graph_check(&g))
		goto out;
	if (want_dump(&opt, 'G'))
		graph_dump(&g, stdout);
	if (opt.dot && write_dot(&g, opt.dot))
		goto out;
	if (opt.dot && !strcmp(opt.dot, "-")) { /* keep a Graphviz stdout clean */
		status = 0;
		goto out;
	}
	summary(&g, stdout);
	struct pipeline_opts po = {
		.sms = opt.sms, .smem = opt.smem, .threads = 256, .policy = opt.policy, .barrier = opt.barrier,
		.fuse = opt.fuse, .reuse = opt.reuse, .p2p_max = opt.p2p_max, .oneshot_max = opt.oneshot_max, .ll_max = opt.ll_max,
		.dump_tiles = want_dump(&opt, 'T'),
		.dump_place = want_dump(&opt, 'P'), .dot_vcta = opt.dot_vctas, .schedule = opt.schedule,
		.out = opt.out, .options = opt.shaping,
	};
	if (pipeline_run(&g, &po))
		goto out;
	status = 0;
out:
	graph_free(&g);
	return status;
}
