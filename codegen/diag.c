/* diag.c: diagnostics in the FILE:LINE: form, and checked allocation. */
#include "diag.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

FILE *diag_out;
int diag_quiet;
static _Atomic int n_errors; /* counted from the placement threads too (compile.c) */

static void vreport(const char *file, int line, const char *kind, const char *fmt, va_list ap)
{
	FILE *f = diag_out ? diag_out : stderr;
	if (diag_quiet)
		return;
	if (file && line > 0)
		fprintf(f, "%s:%d: %s: ", file, line, kind);
	else if (file)
		fprintf(f, "%s: %s: ", file, kind);
	else
		fprintf(f, "%s: ", kind);
	vfprintf(f, fmt, ap);
	fputc('\n', f);
}

void diag_error(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport(file, line, "error", fmt, ap);
	va_end(ap);
	n_errors++;
}

void diag_warning(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport(file, line, "warning", fmt, ap);
	va_end(ap);
}

void diag_note(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport(file, line, "note", fmt, ap);
	va_end(ap);
}

void diag_hint(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport(NULL, 0, "hint", fmt, ap);
	va_end(ap);
}

int diag_errors(void) { return n_errors; }
void diag_reset(void) { n_errors = 0; }

void ark_assert_fail(const char *what, const char *file, int line)
{
	fprintf(stderr, "%s:%d: internal error: assertion '%s' failed\n", file, line, what);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p) {
		fprintf(stderr, "arkgen: out of memory (%zu bytes)\n", n);
		abort();
	}
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p) {
		fprintf(stderr, "arkgen: out of memory (%zu x %zu bytes)\n", n, size);
		abort();
	}
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p) {
		fprintf(stderr, "arkgen: out of memory (%zu bytes)\n", n);
		abort();
	}
	return p;
}

char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(xmalloc(n), s, n);
}
