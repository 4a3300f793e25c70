/* cli.c: the arkgen command line. Every option is one line of `options` below: its names, its
 * argument, its range, where it is stored, whether it shapes the generated code, and its --help
 * text; getopt's array, --help, the checks with their messages and the generated header's options
 * line all derive from that table. */
#include "cli.h"
#include "calib.h"
#include "diag.h"
#include "emit_streams.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STR_(x) #x
#define STR(x) STR_(x)

enum arg {
	ARG_PATH,   /* a file name: const char * */
	ARG_INT,    /* an integer from lo to hi: int */
	ARG_BYTES,  /* a byte count >= 0: long long */
	ARG_CHOICE, /* one of names[] (value: its index), `auto` (value: -2) or `all` (value: -1): int */
	ARG_CLEAR,  /* no argument: clears an int */
	ARG_DUMPS,  /* -d letters, each one of dump_letters */
	ARG_ACTION, /* no argument: runs `action` and exits with its status */
};

/* On the generated header's options line: never, always (with its value), or when not the default. */
enum shape { SHAPE_NO, SHAPE_ALWAYS, SHAPE_CHANGED };

struct option_def {
	const char *name;           /* long name without "--", NULL: none */
	char letter;                /* short name, 0: none */
	enum arg arg;
	const char *meta;           /* the argument in --help */
	long long lo, hi;           /* ARG_INT */
	const char *const *names;   /* ARG_CHOICE: n_names names, value = index */
	int n_names;
	const char *all;            /* ARG_CHOICE: one more name, value -1 (NULL: none) */
	const char *autoname;       /* ARG_CHOICE: one more name, value -2 (NULL: none) */
	int (*action)(void);        /* ARG_ACTION: its exit status */
	void (*more)(FILE *f);      /* --help: lines printed after the help text, NULL: none */
	size_t at;                  /* where it is stored: offset in struct cli */
	enum shape shape;
	const char *help;           /* --help: lines after the first are indented under it */
	int (*help_value)(void);    /* when set, help is a printf format of one int: this value */
};

/* -d letters this build knows, with what each dumps. */
static const struct {
	char letter;
	const char *what;
} dump_letters[] = {
	{ 'G', "the checked graph: tensors with shapes, ops in topological order" },
	{ 'T', "the vCTAs: template, tile, regions, flops, bytes, price in us" },
	{ 'P', "the placement: every SM's list with its waits (w:counter/need) and signals" },
};

static const char *const sync_names[] = {"counters", "barrier"};

static int print_help(void);
static void builtin_tables(FILE *f);
static int print_version(void);
static int print_nvcc_flags(void);
static int smem_need(void);

#define AT(field) offsetof(struct cli, field)

static const struct option_def options[] = {
	{ "output", 'o', ARG_PATH, "FILE", .at = AT(out),
	  .help = "write the generated CUDA loop kernel to FILE ('-': stdout; never over the model)" },
	{ "sms", 0, ARG_INT, "N", 1, 1024, .at = AT(ark.sms), .shape = SHAPE_ALWAYS,
	  .help = "SMs of the target GPU (default " STR(ARKGEN_SMS_DEFAULT) ": H100, H200)" },
	{ "smem", 0, ARG_INT, "BYTES", 0, 232448, .at = AT(ark.smem), .shape = SHAPE_ALWAYS,
	  .help = "dynamic shared memory per CTA (default " STR(ARKGEN_SMEM_DEFAULT) "; the templates need %d)",
	  .help_value = smem_need },
	{ "policy", 0, ARG_CHOICE, "P", .names = part_policy_name, .n_names = PART__COUNT, .all = "all",
	  .autoname = "auto", .at = AT(ark.policy), .shape = SHAPE_ALWAYS,
	  .help = "placement: metis, roundrobin, wavefront, critical, or auto (default:\n"
		  "each of them placed and simulated, the one of least predicted latency\n"
		  "kept); 'all' prints one line per policy and emits nothing" },
	{ "sync", 0, ARG_CHOICE, "S", .names = sync_names, .n_names = 2, .at = AT(ark.barrier),
	  .shape = SHAPE_ALWAYS,
	  .help = "counters (default: per-dependency counters) or barrier (a grid barrier\n"
		  "between dependency levels, as ARK does)" },
	{ "backend", 0, ARG_CHOICE, "B", .names = backend_name, .n_names = ARK_BACKEND__COUNT, .at = AT(backend),
	  .shape = SHAPE_CHANGED,
	  .help = "loop (default: one persistent loop kernel), streams (one kernel per op on\n"
		  "CUDA streams with events), graph (that program captured once in a CUDA\n"
		  "graph and replayed) or dynamic (streams and events chosen at run time from\n"
		  "the bytes each op reads and writes); the last three run on one GPU" },
	{ "streams", 0, ARG_INT, "N", 1, STREAMS_MAX, .at = AT(streams), .shape = SHAPE_CHANGED,
	  .help = "streams, graph, dynamic: at most N streams (default " STR(STREAMS_DEFAULT) ")" },
	{ "stream-policy", 0, ARG_CHOICE, "P", .names = stream_policy_name, .n_names = SP__COUNT,
	  .at = AT(stream_policy), .shape = SHAPE_CHANGED,
	  .help = "streams, graph: xla (default), single, wavefront, asap, ios or nnc (README)" },
	{ "no-fuse", 0, ARG_CLEAR, .at = AT(ark.fuse), .shape = SHAPE_CHANGED,
	  .help = "fuse no op into another (activations, residual adds, norms, swiglus, chains)" },
	{ "no-reuse", 0, ARG_CLEAR, .at = AT(ark.reuse), .shape = SHAPE_CHANGED,
	  .help = "give every activation its own memory" },
	{ "p2p-max", 0, ARG_BYTES, "BYTES", .at = AT(ark.p2p_max), .shape = SHAPE_CHANGED,
	  .help = "communication ops with transport \"auto\": transfers of at most BYTES go\n"
		  "GPU to GPU by SM stores (p2p), larger ones through the DMA engine\n"
		  "(default " STR(ARK_P2P_MAX_DEFAULT) ": measured, p2p beats the DMA engine up to 64 MiB)" },
	{ "oneshot-max", 0, ARG_BYTES, "BYTES", .at = AT(ark.oneshot_max), .shape = SHAPE_CHANGED,
	  .help = "all_reduce of at most BYTES per GPU: every GPU sends its whole input\n"
		  "to every other and sums all of them (one hop); larger ones reduce-scatter,\n"
		  "sum and all-gather (two hops, less data with 3 or more GPUs). Default:\n"
		  "one-shot at every size on 2 GPUs (the same bytes on the wire, one hop\n"
		  "less), up to " STR(ARK_ONESHOT_MAX_MANY) " bytes on 3 or more" },
	{ "ll-max", 0, ARG_BYTES, "BYTES", .at = AT(ark.ll_max), .shape = SHAPE_CHANGED,
	  .help = "one-shot all_reduce by p2p of at most BYTES per GPU: the data travel in\n"
		  "8-byte packets that carry their own flag (4 data bytes each; no fence and\n"
		  "no separate flag), polled by the sums (default " STR(ARK_LL_MAX_DEFAULT) ": off, measured\n"
		  "slower than stores on 2 H200s)" },
	{ "gpu", 0, ARG_PATH, "NAME|FILE", .at = AT(gpu), .more = builtin_tables,
	  .help = "the costs of the tiles and of the loop kernel's protocol, as bench/calibrate\n"
		  "measured them on a GPU: a table built in by NAME, a table FILE, or\n"
		  "'analytic' for the analytic model. Default: h100 when its table is\n"
		  "measured, else analytic. The report says which costs it used" },
	{ "schedule", 0, ARG_PATH, "FILE", .at = AT(schedule),
	  .help = "write the schedule (vCTAs, SMs, waits, prediction) as JSON ('-': stdout)" },
	{ "dot-vctas", 0, ARG_PATH, "FILE", .at = AT(dot_vctas),
	  .help = "write the vCTA dependency graph in Graphviz format ('-': stdout)" },
	{ "nvcc-flags", 0, ARG_ACTION, .action = print_nvcc_flags,
	  .help = "print the nvcc flags that build a generated file (include paths,\n"
		  "architecture, libraries), like pkg-config, and exit" },
	{ NULL, 'd', ARG_DUMPS, "LETTERS", .at = AT(dumps),
	  .help = "dump intermediate results to stdout, one letter per pass:" },
	{ "dot", 0, ARG_PATH, "FILE", .at = AT(dot),
	  .help = "write the op graph (ops and tensors) in Graphviz format to FILE ('-': stdout)" },
	{ "help", 'h', ARG_ACTION, .action = print_help, .help = "print this help and exit" },
	{ "version", 'V', ARG_ACTION, .action = print_version, .help = "print the version and exit" },
};
#define N_OPTIONS ((int)(sizeof options / sizeof options[0]))

static int takes_arg(const struct option_def *d)
{
	return d->arg != ARG_CLEAR && d->arg != ARG_ACTION;
}

/* "--name", or "-l" for an option without a long name. */
static const char *display_name(const struct option_def *d, char *buf, size_t n)
{
	if (d->name)
		snprintf(buf, n, "--%s", d->name);
	else
		snprintf(buf, n, "-%c", d->letter);
	return buf;
}

/* ---- --help ---------------------------------------------------------------------------------- */

#define HELP_COLUMN 21 /* where the help texts start */

/* "  -o, --output FILE  write ...": the names padded to the help column (at least two spaces), the
 * help text's further lines under its first. */
static void usage_option(FILE *f, const struct option_def *d)
{
	char label[64];
	if (d->letter && d->name)
		snprintf(label, sizeof label, "  -%c, --%s", d->letter, d->name);
	else if (d->letter)
		snprintf(label, sizeof label, "  -%c", d->letter);
	else
		snprintf(label, sizeof label, "      --%s", d->name);
	if (d->meta)
		snprintf(label + strlen(label), sizeof label - strlen(label), " %s", d->meta);
	fprintf(f, "%-*s  ", HELP_COLUMN - 2, label);
	char text[1024];
	const char *help = d->help;
	if (d->help_value) {
		snprintf(text, sizeof text, d->help, d->help_value());
		help = text;
	}
	for (const char *p = help; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		fprintf(f, "%.*s\n", (int)len, p);
		if (!nl)
			break;
		p = nl + 1;
		fprintf(f, "%*s", HELP_COLUMN, "");
	}
	if (d->more)
		d->more(f);
	if (d->arg == ARG_DUMPS)
		for (size_t i = 0; i < sizeof dump_letters / sizeof dump_letters[0]; i++)
			fprintf(f, "%*s-d%c  %s\n", HELP_COLUMN + 2, "", dump_letters[i].letter, dump_letters[i].what);
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
		"options:\n");
	for (int i = 0; i < N_OPTIONS; i++)
		usage_option(f, &options[i]);
	fprintf(f, "\n"
		"Output files are written whole or not at all (a temporary file renamed over FILE). When one of\n"
		"them is '-', the report and the dumps go to standard error.\n"
		"\n"
		"exit status: 0 success, 1 the model was rejected or an output could not be written (FILE:LINE:\n"
		"error: ...), 2 bad command line.\n");
}

/* What the templates of a generated file need with the default threads per CTA (tiling.c). */
static int smem_need(void)
{
	return tmpl_smem_need(arkgen_options_default().threads, NULL);
}

/* --gpu's built-in tables, one line each. */
static void builtin_tables(FILE *f)
{
	for (const char *const *n = calib_builtin_names(); *n; n++) {
		const struct calib_table *t = calib_builtin(*n);
		fprintf(f, "%*s%-6s %s, %d SMs, ", HELP_COLUMN + 2, "", *n, t->gpu, t->sms);
		if (t->measured)
			fprintf(f, "measured %s\n", t->date);
		else
			fprintf(f, "uncalibrated: generated from the analytic model\n");
	}
}

static int print_help(void)
{
	usage(stdout);
	return 0;
}

static int print_version(void)
{
	printf("arkgen " ARKGEN_VERSION "\n");
	return 0;
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

/* ---- parsing --------------------------------------------------------------------------------- */

/* getopt's view of the table: option i answers 256 + i, or its letter when it has one. */
static void getopt_table(struct option *longopts, char *shortopts)
{
	int n = 0, k = 0;
	shortopts[k++] = ':'; /* a missing argument answers ':' */
	for (int i = 0; i < N_OPTIONS; i++) {
		const struct option_def *d = &options[i];
		int val = d->letter ? d->letter : 256 + i;
		if (d->name)
			longopts[n++] = (struct option){d->name, takes_arg(d) ? required_argument : no_argument, NULL, val};
		if (d->letter) {
			shortopts[k++] = d->letter;
			if (takes_arg(d))
				shortopts[k++] = ':';
		}
	}
	longopts[n] = (struct option){NULL, 0, NULL, 0};
	shortopts[k] = 0;
}

static const struct option_def *option_of(int val)
{
	for (int i = 0; i < N_OPTIONS; i++)
		if (options[i].letter ? options[i].letter == val : 256 + i == val)
			return &options[i];
	return NULL;
}

static int parse_integer(const struct option_def *d, const char *arg, long long lo, long long hi, long long *v)
{
	char *end, name[64];
	errno = 0;
	*v = strtoll(arg, &end, 10);
	if (!errno && !*end && end != arg && *v >= lo && *v <= hi)
		return 0;
	display_name(d, name, sizeof name);
	if (d->arg == ARG_BYTES)
		fprintf(stderr, "arkgen: error: %s takes a byte count >= 0, not '%s'\n", name, arg);
	else
		fprintf(stderr, "arkgen: error: %s takes an integer from %lld to %lld, not '%s'\n", name, lo, hi, arg);
	return -1;
}

/* "a, b or c" of a choice's names. */
static void choice_list(const struct option_def *d, char *buf, size_t n)
{
	const char *extra[2] = {d->autoname ? d->autoname : d->all, d->autoname ? d->all : NULL};
	int total = d->n_names + (d->all != NULL) + (d->autoname != NULL);
	buf[0] = 0;
	for (int i = 0; i < total; i++) {
		size_t len = strlen(buf);
		snprintf(buf + len, n - len, "%s%s", i == 0 ? "" : i == total - 1 ? " or " : ", ",
			 i < d->n_names ? d->names[i] : extra[i - d->n_names]);
	}
}

static int parse_choice(const struct option_def *d, const char *arg, int *v)
{
	char name[64], list[256];
	for (int i = 0; i < d->n_names; i++)
		if (!strcmp(arg, d->names[i])) {
			*v = i;
			return 0;
		}
	if (d->all && !strcmp(arg, d->all)) {
		*v = -1;
		return 0;
	}
	if (d->autoname && !strcmp(arg, d->autoname)) {
		*v = -2;
		return 0;
	}
	choice_list(d, list, sizeof list);
	fprintf(stderr, "arkgen: error: %s takes %s, not '%s'\n", display_name(d, name, sizeof name), list, arg);
	return -1;
}

static int parse_dumps(const char *arg, char *dumps, size_t size)
{
	for (const char *p = arg; *p; p++) {
		size_t i, n = sizeof dump_letters / sizeof dump_letters[0];
		for (i = 0; i < n && dump_letters[i].letter != *p; i++)
			;
		if (i == n) {
			fprintf(stderr, "arkgen: error: unknown dump letter '%c' in -d%s\n", *p, arg);
			return -1;
		}
		if (!strchr(dumps, *p) && strlen(dumps) + 1 < size)
			strncat(dumps, p, 1);
	}
	return 0;
}

/* Stores option d's argument where the table says. -1 after an error message. */
static int parse_value(const struct option_def *d, const char *arg, struct cli *o)
{
	char *at = (char *)o + d->at;
	long long v;
	switch (d->arg) {
	case ARG_PATH:
		*(const char **)at = arg;
		return 0;
	case ARG_INT:
		if (parse_integer(d, arg, d->lo, d->hi, &v) < 0)
			return -1;
		*(int *)at = (int)v;
		return 0;
	case ARG_BYTES:
		return parse_integer(d, arg, 0, LLONG_MAX, (long long *)at);
	case ARG_CHOICE:
		return parse_choice(d, arg, (int *)at);
	case ARG_CLEAR:
		*(int *)at = 0;
		return 0;
	case ARG_DUMPS:
		return parse_dumps(arg, at, sizeof o->dumps);
	case ARG_ACTION:
		break;
	}
	ARK_ASSERT(0);
}

/* The message for what getopt could not match. */
static void unknown_option(int c, char **argv)
{
	if (c == ':')
		fprintf(stderr, "arkgen: error: option '%s' needs an argument\n", argv[optind - 1]);
	else if (optopt && optopt < 256)
		fprintf(stderr, "arkgen: error: unknown option '-%c'\n", optopt);
	else
		fprintf(stderr, "arkgen: error: unknown option '%s'\n", argv[optind - 1]);
}

/* The one model file after the options. */
static int model_file(int argc, char **argv, struct cli *o)
{
	if (optind >= argc) {
		fprintf(stderr, "arkgen: error: no model file given\n");
		return -1;
	}
	if (optind + 1 < argc) {
		fprintf(stderr, "arkgen: error: more than one model file given ('%s', '%s')\n", argv[optind],
			argv[optind + 1]);
		return -1;
	}
	o->model = argv[optind];
	return 0;
}

/* The value option d holds in o (ARG_INT, ARG_BYTES, ARG_CHOICE, ARG_CLEAR). */
static long long stored(const struct option_def *d, const struct cli *o)
{
	const char *at = (const char *)o + d->at;
	return d->arg == ARG_BYTES ? *(const long long *)at : *(const int *)at;
}

/* The options that shape the generated code, as a command line, for the generated file's header. */
static void shaping_line(struct cli *o)
{
	const struct cli def = {.ark = arkgen_options_default()};
	size_t n = 0;
	o->shaping[0] = 0;
	for (int i = 0; i < N_OPTIONS; i++) {
		const struct option_def *d = &options[i];
		if (d->shape == SHAPE_NO || (d->shape == SHAPE_CHANGED && stored(d, o) == stored(d, &def)))
			continue;
		long long v = stored(d, o);
		char value[64] = "";
		if (d->arg == ARG_INT || d->arg == ARG_BYTES)
			snprintf(value, sizeof value, " %lld", v);
		else if (d->arg == ARG_CHOICE)
			snprintf(value, sizeof value, " %s", v == -2 ? d->autoname : v < 0 ? d->all : d->names[v]);
		snprintf(o->shaping + n, sizeof o->shaping - n, "%s--%s%s", n ? " " : "", d->name, value);
		n = strlen(o->shaping);
	}
}

int cli_parse(int argc, char **argv, struct cli *o, int *status)
{
	struct option longopts[N_OPTIONS + 1];
	char shortopts[2 * N_OPTIONS + 2];
	int c;
	memset(o, 0, sizeof *o);
	o->ark = arkgen_options_default();
	getopt_table(longopts, shortopts);
	*status = EXIT_USAGE;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		const struct option_def *d = c == '?' || c == ':' ? NULL : option_of(c);
		if (!d) {
			unknown_option(c, argv);
			goto bad;
		}
		if (d->arg == ARG_ACTION) {
			*status = d->action();
			return -1;
		}
		if (parse_value(d, optarg, o) < 0)
			goto bad;
	}
	if (model_file(argc, argv, o) < 0)
		goto bad;
	shaping_line(o);
	return 0;
bad:
	fprintf(stderr, "usage: arkgen [options] MODEL.cfg [-o OUT.cu]; arkgen --help for more\n");
	return -1;
}

int cli_dump(const struct cli *o, char letter)
{
	return strchr(o->dumps, letter) != NULL;
}
