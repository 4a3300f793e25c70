/* main.c: the arkgen command line: options, arkgen_compile (every pass, arkgen.h), then what the
 * options ask to see or write: dumps, Graphviz files, the report, the schedule and the loop kernel. */
#include "arkgen.h"
#include "calib.h"
#include "cli.h"
#include "diag.h"
#include "emit.h"
#include "emit_streams.h"
#include "report.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Under LeakSanitizer (make SANITIZE=1): libconfig 1.5 leaks the buffer of a string token when a syntax
 * error follows it; that leak is libconfig's, not ours. Called by the sanitizer runtime. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libconfig.so\n";
}

/* ---- output files -----------------------------------------------------------------------------
 * "-" is standard output. A regular file (or a new one) is written to a temporary file beside it and
 * renamed over it once complete, so a failed write leaves the old file as it was and nothing that
 * arkgen did not create is ever removed; anything else (a device, a pipe) is written in place. The
 * model file itself is never an output. */
struct out {
	FILE *f;
	const char *path;
	char *tmp;            /* the temporary file to rename over path, or NULL */
};

static const char *model_path; /* the model file, which no output may replace */

static int out_open(struct out *o, const char *path, const char *what)
{
	struct stat st, ms;
	memset(o, 0, sizeof *o);
	o->path = path;
	if (!strcmp(path, "-")) {
		o->f = stdout;
		return 0;
	}
	int exists = stat(path, &st) == 0;
	if (exists && model_path && stat(model_path, &ms) == 0 && st.st_dev == ms.st_dev && st.st_ino == ms.st_ino) {
		diag_error(path, 0, "refusing to write the %s over the model file", what);
		return -1;
	}
	if (exists && !S_ISREG(st.st_mode)) {
		o->f = fopen(path, "w");
	} else {
		size_t n = strlen(path) + 16;
		o->tmp = malloc(n);
		if (!o->tmp) {
			diag_error(path, 0, "cannot write the %s: out of memory", what);
			return -1;
		}
		snprintf(o->tmp, n, "%s.tmp.XXXXXX", path);
		int fd = mkstemp(o->tmp);
		o->f = fd < 0 ? NULL : fdopen(fd, "w");
		if (fd >= 0 && !o->f)
			close(fd);
	}
	if (!o->f) {
		diag_error(path, 0, "cannot write the %s: %s", what, strerror(errno));
		if (o->tmp)
			remove(o->tmp);
		free(o->tmp);
		o->tmp = NULL;
		return -1;
	}
	return 0;
}

/* Finishes an output: ok == 0 when its writer failed (after reporting why, unless the stream
 * failed, which is reported here); the file is then dropped. 0, or -1. */
static int out_close(struct out *o, int ok, const char *what)
{
	int err = ferror(o->f) != 0, saved = errno;
	if (o->f == stdout)
		err |= fflush(stdout) != 0;
	else
		err |= fclose(o->f) != 0;
	if (err)
		saved = errno ? errno : saved;
	if (ok && !err && o->tmp && rename(o->tmp, o->path) != 0) {
		saved = errno;
		err = 1;
	}
	if ((!ok || err) && o->tmp)
		remove(o->tmp);
	free(o->tmp);
	if (err)
		diag_error(o->path, 0, "cannot write the %s: %s", what, strerror(saved));
	return ok && !err ? 0 : -1;
}

static int write_dot(const struct graph *g, const char *path)
{
	struct out o;
	if (out_open(&o, path, "Graphviz file") < 0)
		return -1;
	graph_dot(g, o.f);
	return out_close(&o, 1, "Graphviz file");
}

/* The vCTA dependency graph (--dot-vctas). */
static int write_dot_vctas(const struct tiling *s, const char *path)
{
	struct out o;
	if (out_open(&o, path, "Graphviz file") < 0)
		return -1;
	tiling_dot(s, o.f);
	return out_close(&o, 1, "Graphviz file");
}

static const struct stream_prog *streams; /* --backend streams|graph|dynamic: the program, NULL: loop */

/* --dot with a stream backend: the op graph by stream, the events dashed. */
static int write_stream_dot(const struct tiling *s, const char *path)
{
	struct out o;
	if (out_open(&o, path, "Graphviz file") < 0)
		return -1;
	stream_prog_dot(s, streams, o.f);
	return out_close(&o, 1, "Graphviz file");
}

static int write_schedule(const struct arkgen_result *r, const char *path)
{
	struct out o;
	if (out_open(&o, path, "schedule") < 0)
		return -1;
	int ok = emit_schedule_json_streams(&r->tiling, &r->schedule[0], streams, o.f) == 0;
	return out_close(&o, ok, "schedule");
}

/* The loop kernel (-o); nothing is left behind when emission fails. */
static int write_loop(const struct arkgen_result *r, const char *options, const char *path)
{
	struct emit_info info = {.options = options, .threads = r->opt.threads, .smem = r->opt.smem, .streams = streams};
	struct out o;
	if (out_open(&o, path, "generated file") < 0)
		return -1;
	int ok = emit_loop(&r->tiling, &r->schedule[0], &info, o.f) == 0;
	return out_close(&o, ok, "generated file");
}

static int is_stdout(const char *path) { return path && !strcmp(path, "-"); }

static int outputs_written(const struct cli *o, const struct arkgen_result *r);

/* What the command line asked to see or write, for the passes that completed, in pass order. When
 * an output goes to standard output ("-"), the report and the dumps go to standard error. */
static int outputs(const struct cli *o, const struct arkgen_result *r)
{
	if (r->done < ARKGEN_PASS_CHECK)
		return 0;
	int n_std = is_stdout(o->dot) + is_stdout(o->dot_vctas) + is_stdout(o->schedule) + is_stdout(o->out);
	if (n_std > 1) {
		diag_error("-", 0, "more than one output asked for standard output");
		return -1;
	}
	FILE *rep = n_std ? stderr : stdout;
	struct graph model = r->graph; /* as checked: without the tensors the tiler added */
	model.n_tensors = r->n_model_tensors;
	if (cli_dump(o, 'G'))
		graph_dump(&model, rep);
	if (o->dot && !o->backend && write_dot(&model, o->dot))
		return -1;
	if (r->opt.until < ARKGEN_PASS_DEPS) /* --dot - alone: the graph and nothing else */
		return 0;
	report_model(&model, rep);
	if (r->done < ARKGEN_PASS_DEPS)
		return 0;
	if (cli_dump(o, 'T'))
		tiling_dump(&r->tiling, rep);
	if (o->dot_vctas && write_dot_vctas(&r->tiling, o->dot_vctas) < 0)
		return -1;
	if (o->ark.policy == ARKGEN_POLICY_ALL) {
		report_policies(r, rep);
		return 0;
	}
	if (r->done < ARKGEN_PASS_SCHEDULE)
		return 0;
	if (cli_dump(o, 'P'))
		schedule_dump(&r->tiling, &r->schedule[0], rep);
	report_schedule(r, rep);
	struct stream_prog sp;
	if (o->backend) {
		if (stream_prog_build(&r->tiling, &r->schedule[0], &r->gpu, o->backend, (enum stream_policy)o->stream_policy,
				      o->streams ? o->streams : STREAMS_DEFAULT, &sp) < 0) {
			stream_prog_free(&sp);
			return -1;
		}
		streams = &sp;
		stream_prog_report(&r->tiling, &sp, rep);
	}
	int rc = outputs_written(o, r);
	if (streams)
		stream_prog_free(&sp);
	streams = NULL;
	return rc;
}

/* The files of a compiled schedule: --dot (stream backends), --schedule, -o. */
static int outputs_written(const struct cli *o, const struct arkgen_result *r)
{
	if (o->dot && o->backend && write_stream_dot(&r->tiling, o->dot) < 0)
		return -1;
	if (o->schedule && write_schedule(r, o->schedule) < 0)
		return -1;
	if (o->out && write_loop(r, o->shaping, o->out) < 0)
		return -1;
	return 0;
}

/* --gpu: the costs to compile with: a built-in table, a table file (*loaded, to free), "analytic"
 * (NULL); without it, the default of arkgen_options_default. 0, or the exit status after an error. */
static int pick_costs(struct cli *o, struct calib_table **loaded)
{
	*loaded = NULL;
	if (!o->gpu)
		return 0;
	if (!strcmp(o->gpu, "analytic")) {
		o->ark.calib = NULL;
		return 0;
	}
	o->ark.calib = calib_builtin(o->gpu);
	if (o->ark.calib)
		return 0;
	if (!strchr(o->gpu, '/') && !strchr(o->gpu, '.') && access(o->gpu, F_OK) != 0) {
		fprintf(stderr, "arkgen: error: --gpu takes analytic, a table file or a built-in table (");
		for (const char *const *n = calib_builtin_names(); *n; n++)
			fprintf(stderr, "%s%s", n == calib_builtin_names() ? "" : ", ", *n);
		fprintf(stderr, "), not '%s'\n", o->gpu);
		return EXIT_USAGE;
	}
	*loaded = calib_load(o->gpu);
	o->ark.calib = *loaded;
	return *loaded ? 0 : EXIT_MODEL;
}

int main(int argc, char **argv)
{
	struct cli opt;
	struct arkgen_result r;
	struct calib_table *table;
	int status;
	if (cli_parse(argc, argv, &opt, &status))
		return status;
	if ((status = pick_costs(&opt, &table)) != 0)
		return status;
	/* --dot alone needs the checked graph only */
	if (!opt.backend && (opt.streams || opt.stream_policy)) {
		fprintf(stderr, "arkgen: error: --streams and --stream-policy need --backend streams, graph or dynamic\n");
		return EXIT_USAGE;
	}
	int graph_only = !opt.backend && opt.dot && !opt.out && !opt.schedule && !opt.dot_vctas && !cli_dump(&opt, 'T') &&
			 !cli_dump(&opt, 'P') && is_stdout(opt.dot);
	opt.ark.until = graph_only ? ARKGEN_PASS_CHECK : ARKGEN_PASS_SCHEDULE;
	model_path = opt.model;
	int rc = arkgen_compile(opt.model, NULL, &opt.ark, &r);
	status = outputs(&opt, &r) < 0 || rc < 0 ? EXIT_MODEL : 0;
	arkgen_result_free(&r);
	calib_free(table);
	return status;
}
