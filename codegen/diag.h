/* diag.h: diagnostics that point at the model file: "FILE:LINE: error: ...", then notes and hints. */
#ifndef DIAG_H
#define DIAG_H

#include <stdio.h>

/* All diagnostics go to diag_out (stderr unless a test redirects them); none while diag_quiet (a
 * second pass over a model already reported: errors are still counted). */
extern FILE *diag_out;
extern int diag_quiet;

void diag_error(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_warning(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_note(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_hint(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Number of errors reported since the last diag_reset(). */
int diag_errors(void);
void diag_reset(void);

/* Always-on assert for internal invariants (never for user input). */
#define ARK_ASSERT(c) ((c) ? (void)0 : ark_assert_fail(#c, __FILE__, __LINE__))
_Noreturn void ark_assert_fail(const char *what, const char *file, int line);

/* Allocation that aborts with a message when memory runs out. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);

#endif
