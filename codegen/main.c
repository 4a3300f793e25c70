/* main.c: the arkgen command line: options, then a short list of passes over the model. */
#include "graph.h"
#include "diag.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

/* Exit statuses: 0 success, 1 the model was rejected, 2 the command line was wrong. */
enum { EXIT_MODEL = 1, EXIT_USAGE = 2 };

/* What the command line asked for; later passes add their knobs here. */
struct options {
	const char *model;     /* MODEL.cfg */
	const char *out;       /* -o: generated CUDA file, NULL for none */
	const char *dot;       /* --dot: Graphviz file of the op graph, "-" for stdout */
	char dumps[16];        /* -d letters: G = checked graph */
};

/* -d letters this build knows, with what each dumps. */
static const struct {
	char letter;
	const char *what;
} dump_letters[] = {
	{ 'G', "the checked graph: tensors with shapes, ops in topological order" },
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
		"Reads an operator graph (a libconfig model file, format version 1), checks it and infers every\n"
		"tensor's shape, dtype and GPU. Without -o it prints a summary of the model.\n"
		"\n"
		"options:\n"
		"  -o, --output FILE  write the generated CUDA loop kernel to FILE (not implemented yet)\n"
		"  -d LETTERS         dump intermediate results to stdout, one letter per pass:\n");
	for (size_t i = 0; i < sizeof dump_letters / sizeof dump_letters[0]; i++)
		fprintf(f, "                       -d%c  %s\n", dump_letters[i].letter, dump_letters[i].what);
	fprintf(f,
		"      --dot FILE     write the op graph (ops and tensors) in Graphviz format to FILE ('-': stdout)\n"
		"  -h, --help         print this help and exit\n"
		"  -V, --version      print the version and exit\n"
		"\n"
		"exit status: 0 success, 1 the model was rejected (FILE:LINE: error: ...), 2 bad command line.\n");
}

static int want_dump(const struct options *o, char letter)
{
	return strchr(o->dumps, letter) != NULL;
}

/* Fills o from argv. Returns -1 to exit with `*status` (help, version, usage errors), 0 to go on. */
static int parse_options(int argc, char **argv, struct options *o, int *status)
{
	enum { OPT_DOT = 256 };
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "output", required_argument, NULL, 'o' },
		{ "dot", required_argument, NULL, OPT_DOT },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	memset(o, 0, sizeof *o);
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
		"%d GPU%s, default dtype %s, %.2f MiB of weights. No output file requested: use -o OUT.cu to emit code.\n",
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
	if (opt.out) {
		fprintf(stderr, "arkgen: error: code emission is not implemented yet (-o %s)\n", opt.out);
		status = EXIT_USAGE;
		goto out;
	}
	if (!(opt.dot && !strcmp(opt.dot, "-"))) /* keep a Graphviz stdout clean */
		summary(&g, stdout);
	status = 0;
out:
	graph_free(&g);
	return status;
}
