/* main.c: the arkgen command line: options, arkgen_compile (every pass, arkgen.h), then what the
 * options ask to see or write: dumps, Graphviz files, the report, the schedule and the loop kernel. */
#include "arkgen.h"
#include "diag.h"
#include "emit.h"
#include "report.h"

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
	struct arkgen_options ark; /* the knobs of the compile */
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
	o->ark = arkgen_options_default();
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
			*(c == OPT_SMS ? &o->ark.sms : &o->ark.smem) = (int)v;
			break;
		}
		case OPT_POLICY:
			o->ark.policy = strcmp(optarg, "all") ? part_policy_parse(optarg) : -1;
			if (o->ark.policy < 0 && strcmp(optarg, "all")) {
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
			o->ark.barrier = !strcmp(optarg, "barrier");
			break;
		case OPT_NOFUSE:
			o->ark.fuse = 0;
			break;
		case OPT_NOREUSE:
			o->ark.reuse = 0;
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
			*(c == OPT_P2PMAX ? &o->ark.p2p_max : c == OPT_ONESHOT ? &o->ark.oneshot_max : &o->ark.ll_max) = v;
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
	snprintf(o->shaping, sizeof o->shaping, "--sms %d --smem %d --policy %s --sync %s%s%s", o->ark.sms, o->ark.smem,
		 o->ark.policy < 0 ? "all" : part_policy_name[o->ark.policy], o->ark.barrier ? "barrier" : "counters",
		 o->ark.fuse ? "" : " --no-fuse", o->ark.reuse ? "" : " --no-reuse");
	if (o->ark.p2p_max != ARK_P2P_MAX_DEFAULT) {
		size_t n = strlen(o->shaping);
		snprintf(o->shaping + n, sizeof o->shaping - n, " --p2p-max %lld", o->ark.p2p_max);
	}
	if (o->ark.oneshot_max != ARK_ONESHOT_MAX_AUTO) {
		size_t n = strlen(o->shaping);
		snprintf(o->shaping + n, sizeof o->shaping - n, " --oneshot-max %lld", o->ark.oneshot_max);
	}
	if (o->ark.ll_max != ARK_LL_MAX_DEFAULT) {
		size_t n = strlen(o->shaping);
		snprintf(o->shaping + n, sizeof o->shaping - n, " --ll-max %lld", o->ark.ll_max);
	}
	return 0;
bad:
	fprintf(stderr, "usage: arkgen [options] MODEL.cfg [-o OUT.cu]; arkgen --help for more\n");
	return -1;
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

/* The vCTA dependency graph (--dot-vctas). */
static int write_dot_vctas(const struct tiling *s, const char *path)
{
	FILE *f = open_out(path);
	if (!f)
		return -1;
	tiling_dot(s, f);
	return close_out(f, path);
}

static int write_schedule(const struct arkgen_result *r, const char *path)
{
	FILE *f = open_out(path);
	if (!f)
		return -1;
	if (emit_schedule_json(&r->tiling, &r->schedule[0], f) < 0) {
		fclose(f);
		return -1;
	}
	return close_out(f, path);
}

/* The loop kernel (-o); no file is left behind when emission fails. */
static int write_loop(const struct arkgen_result *r, const char *options, const char *path)
{
	struct emit_info info = {.options = options, .threads = r->opt.threads, .smem = r->opt.smem};
	FILE *f = open_out(path);
	if (!f)
		return -1;
	if (emit_loop(&r->tiling, &r->schedule[0], &info, f) < 0) {
		fclose(f);
		remove(path);
		return -1;
	}
	return close_out(f, path);
}

/* What the command line asked to see or write, for the passes that completed, in pass order. */
static int outputs(const struct options *o, const struct arkgen_result *r)
{
	if (r->done < ARKGEN_PASS_CHECK)
		return 0;
	struct graph model = r->graph; /* as checked: without the tensors the tiler added */
	model.n_tensors = r->n_model_tensors;
	if (want_dump(o, 'G'))
		graph_dump(&model, stdout);
	if (o->dot && write_dot(&model, o->dot))
		return -1;
	if (o->dot && !strcmp(o->dot, "-")) /* keep a Graphviz stdout clean */
		return 0;
	report_model(&model, stdout);
	if (r->done < ARKGEN_PASS_DEPS)
		return 0;
	if (want_dump(o, 'T'))
		tiling_dump(&r->tiling, stdout);
	if (o->dot_vctas && write_dot_vctas(&r->tiling, o->dot_vctas) < 0)
		return -1;
	if (o->ark.policy == ARKGEN_POLICY_ALL) {
		report_policies(r, stdout);
		return 0;
	}
	if (r->done < ARKGEN_PASS_SCHEDULE)
		return 0;
	if (want_dump(o, 'P'))
		schedule_dump(&r->tiling, &r->schedule[0], stdout);
	report_schedule(r, stdout);
	if (o->schedule && write_schedule(r, o->schedule) < 0)
		return -1;
	if (o->out && write_loop(r, o->shaping, o->out) < 0)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct options opt;
	struct arkgen_result r;
	int status;
	if (parse_options(argc, argv, &opt, &status))
		return status;
	/* --dot -: the op graph on stdout and nothing else */
	opt.ark.until = opt.dot && !strcmp(opt.dot, "-") ? ARKGEN_PASS_CHECK : ARKGEN_PASS_SCHEDULE;
	int rc = arkgen_compile(opt.model, NULL, &opt.ark, &r);
	status = outputs(&opt, &r) < 0 || rc < 0 ? EXIT_MODEL : 0;
	arkgen_result_free(&r);
	return status;
}
