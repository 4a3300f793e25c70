/* harness.h: the tests' way into arkgen: model text and options through arkgen_compile, every pass as
 * arkgen runs them, with the diagnostics captured; lookups that fail the test when a name is missing. */
#ifndef HARNESS_H
#define HARNESS_H

#include "codegen/arkgen.h"

/* Compiles model text (named "t.cfg" in diagnostics) into *r, which arkgen_result_free releases
 * whatever the outcome. arkgen_compile's status; the diagnostics in harness_diag(). */
int harness_compile(const char *text, const struct arkgen_options *opt, struct arkgen_result *r);

/* Diagnostics written between harness_capture_begin and harness_capture_end (harness_compile
 * captures its own): the text of the last capture. */
void harness_capture_begin(void);
void harness_capture_end(void);
const char *harness_diag(void);

/* Index of a tensor or an op by name; fails the test when there is none. */
int harness_tensor(const struct graph *g, const char *name);
int harness_op(const struct graph *g, const char *name);
/* vCTAs of template tmpl on GPU gpu (-1: on any). */
int harness_count_tmpl(const struct tiling *s, int tmpl, int gpu);
/* The loop file emit_loop writes for the result's schedule, in memory (free it). */
char *harness_emit_loop(const struct arkgen_result *r, const char *options);

#endif
