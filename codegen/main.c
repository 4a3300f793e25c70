/* main.c: the arkgen command line: options, arkgen_compile (every pass, arkgen.h), then what the
 * options ask to see or write: dumps, Graphviz files, the report, the schedule and the loop kernel. */
#include "arkgen.h"
#include "cli.h"
#include "diag.h"
#include "emit.h"
#include "report.h"

#include <errno.h>
#include <string.h>

/* Under LeakSanitizer (make SANITIZE=1): libconfig 1.5 leaks the buffer of a string token when a syntax
 * error follows it; that leak is libconfig's, not ours. Called by the sanitizer runtime. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libconfig.so\n";
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
static int outputs(const struct cli *o, const struct arkgen_result *r)
{
	if (r->done < ARKGEN_PASS_CHECK)
		return 0;
	struct graph model = r->graph; /* as checked: without the tensors the tiler added */
	model.n_tensors = r->n_model_tensors;
	if (cli_dump(o, 'G'))
		graph_dump(&model, stdout);
	if (o->dot && write_dot(&model, o->dot))
		return -1;
	if (o->dot && !strcmp(o->dot, "-")) /* keep a Graphviz stdout clean */
		return 0;
	report_model(&model, stdout);
	if (r->done < ARKGEN_PASS_DEPS)
		return 0;
	if (cli_dump(o, 'T'))
		tiling_dump(&r->tiling, stdout);
	if (o->dot_vctas && write_dot_vctas(&r->tiling, o->dot_vctas) < 0)
		return -1;
	if (o->ark.policy == ARKGEN_POLICY_ALL) {
		report_policies(r, stdout);
		return 0;
	}
	if (r->done < ARKGEN_PASS_SCHEDULE)
		return 0;
	if (cli_dump(o, 'P'))
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
	struct cli opt;
	struct arkgen_result r;
	int status;
	if (cli_parse(argc, argv, &opt, &status))
		return status;
	/* --dot -: the op graph on stdout and nothing else */
	opt.ark.until = opt.dot && !strcmp(opt.dot, "-") ? ARKGEN_PASS_CHECK : ARKGEN_PASS_SCHEDULE;
	int rc = arkgen_compile(opt.model, NULL, &opt.ark, &r);
	status = outputs(&opt, &r) < 0 || rc < 0 ? EXIT_MODEL : 0;
	arkgen_result_free(&r);
	return status;
}
