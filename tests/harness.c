/* harness.c: model text + options -> arkgen_compile's result, for the tests (harness.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>

#include "codegen/diag.h"
#include "codegen/emit.h"
#include "harness.h"

static char *diag_text;
static size_t diag_len;

void harness_capture_begin(void)
{
	free(diag_text);
	diag_text = NULL;
	diag_out = open_memstream(&diag_text, &diag_len);
	assert_non_null(diag_out);
	diag_reset();
}

void harness_capture_end(void)
{
	fclose(diag_out);
	diag_out = NULL;
}

const char *harness_diag(void)
{
	return diag_text ? diag_text : "";
}

int harness_compile(const char *text, const struct arkgen_options *opt, struct arkgen_result *r)
{
	harness_capture_begin();
	int rc = arkgen_compile("t.cfg", text, opt, r);
	harness_capture_end();
	return rc;
}

int harness_tensor(const struct graph *g, const char *name)
{
	int t = graph_find_tensor(g, name);
	if (t < 0)
		fail_msg("no tensor '%s'", name);
	return t;
}

int harness_op(const struct graph *g, const char *name)
{
	int i = graph_find_op(g, name);
	if (i < 0)
		fail_msg("no op '%s'", name);
	return i;
}

int harness_count_tmpl(const struct tiling *s, int tmpl, int gpu)
{
	int n = 0;
	for (int v = 0; v < s->n_vcta; v++)
		n += (int)s->v[v].tmpl == tmpl && (gpu < 0 || s->v[v].gpu == gpu);
	return n;
}

char *harness_emit_loop(const struct arkgen_result *r, const char *options)
{
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	struct emit_info info = {.options = options, .threads = r->opt.threads, .smem = r->opt.smem};
	assert_non_null(m);
	assert_int_equal(emit_loop(&r->tiling, &r->schedule[0], &info, m), 0);
	fclose(m);
	return text;
}
