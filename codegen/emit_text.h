/* emit_text.h: writing C source text for the generated file: a growing string, literals, text that is
 * safe inside a comment, tables of initializers in aligned columns under a header comment, and
 * designated initializers wrapped at a line width. */
#ifndef EMIT_TEXT_H
#define EMIT_TEXT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* A growing string; {0} is empty. free(b.s) when done. */
struct strbuf {
	char *s;
	size_t len, cap;
};
void sb_printf(struct strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_vprintf(struct strbuf *b, const char *fmt, va_list ap);
/* s as a C string literal: "fc1", "a \"b\"", non-ASCII bytes as octal escapes. */
void sb_cstring(struct strbuf *b, const char *s);

/* Distinct C identifiers for n names: prefix, then the name with every character that may not be
 * in an identifier replaced by '_'. Where two collide, the one whose name needed no change keeps
 * it and the others get _<index> appended, until all differ. Free each, then the array. */
char **c_identifiers(const char *prefix, const char *const *names, int n);
/* s with every "*" "/" pair broken, into tmp (n bytes): text that cannot close a comment. */
const char *c_comment_text(char *tmp, size_t n, const char *s);
/* v as a float literal C++ accepts: "0.0f", "1e-05f", "1.0001f". buf: 40 bytes are enough. */
const char *c_float(char *buf, size_t n, double v);

/* A table of initializer rows in aligned columns, under one header comment naming them:
 *	/+ name   dtype    ... +/
 *	{"x",     ARK_FP16, ...}, /+ the row's comment +/
 * Fill it with tab_cell (each row's cells in order) and tab_end, or tab_line for a comment line of
 * its own; tab_print writes it and frees it. */
struct tab {
	int cols;
	const char *const *head; /* column titles */
	const char *align;       /* per column: 'l' left-aligned, anything else right-aligned */
	/* filled by the functions below */
	struct strbuf text;      /* every cell and comment, each NUL-terminated */
	size_t *at;              /* offsets in text: each row's cells then its comment, or a comment line */
	int n_at, cap_at;
	int *row_at;             /* per row: index in at of its first cell; -1 - index for a comment line */
	int rows, cap_rows;
	int col;                 /* cells of the unfinished row */
};
void tab_cell(struct tab *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tab_end(struct tab *t, const char *fmt, ...) __attribute__((format(printf, 2, 3))); /* "" for none */
void tab_line(struct tab *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tab_print(struct tab *t, FILE *f);

/* {.a = 1, .b = 2, ...}, at `tabs` tabs of indentation, wrapped before column 112 with the
 * continuation lines one space further in; init_end writes "},\n". */
struct init {
	FILE *f;
	int tabs;
	int col;   /* column reached on the current line (a tab counts 8) */
	int first; /* no field written yet */
};
void init_begin(struct init *in, FILE *f, int tabs);
void init_field(struct init *in, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void init_end(struct init *in);

#endif
