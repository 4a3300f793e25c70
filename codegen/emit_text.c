/* emit_text.c: writing C source text for the generated file (emit_text.h). */
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "emit_text.h"

void sb_vprintf(struct strbuf *b, const char *fmt, va_list ap)
{
	va_list aq;
	va_copy(aq, ap);
	int n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	ARK_ASSERT(n >= 0);
	if (b->len + (size_t)n + 1 > b->cap) {
		b->cap = (b->len + (size_t)n + 1) * 2;
		b->s = xrealloc(b->s, b->cap);
	}
	vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void sb_printf(struct strbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sb_vprintf(b, fmt, ap);
	va_end(ap);
}

void sb_cstring(struct strbuf *b, const char *s)
{
	sb_printf(b, "\"");
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			sb_printf(b, "\\%c", *s);
		else if ((unsigned char)*s < 32 || (unsigned char)*s > 126)
			sb_printf(b, "\\%03o", (unsigned char)*s);
		else
			sb_printf(b, "%c", *s);
	}
	sb_printf(b, "\"");
}

struct named {
	const char *name;
	int i;
};

static int cmp_named(const void *a, const void *b)
{
	const struct named *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : (x->i > y->i) - (x->i < y->i);
}

char **c_identifiers(const char *prefix, const char *const *names, int n)
{
	char **id = xcalloc((size_t)n + 1, sizeof *id);
	int *clean = xcalloc((size_t)n + 1, sizeof *clean);
	struct named *ord = xcalloc((size_t)n + 1, sizeof *ord);
	size_t np = strlen(prefix);
	for (int i = 0; i < n; i++) {
		size_t len = strlen(names[i]);
		id[i] = xmalloc(np + len + 1);
		memcpy(id[i], prefix, np);
		clean[i] = 1;
		for (size_t k = 0; k <= len; k++) {
			char c = names[i][k];
			int ok = !c || c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
			id[i][np + k] = ok ? c : '_';
			clean[i] &= ok;
		}
	}
	for (int renamed = 1; renamed;) {
		renamed = 0;
		for (int i = 0; i < n; i++)
			ord[i] = (struct named){id[i], i};
		qsort(ord, (size_t)n, sizeof *ord, cmp_named);
		for (int a = 0, b; a < n; a = b) { /* ord[a .. b): one identifier */
			int keep = ord[a].i;
			for (b = a + 1; b < n && !strcmp(ord[b].name, ord[a].name); b++)
				if (clean[ord[b].i])
					keep = ord[b].i;
			for (int k = a; k < b; k++) {
				int i = ord[k].i;
				if (i == keep)
					continue;
				size_t len = strlen(id[i]);
				id[i] = xrealloc(id[i], len + 16);
				snprintf(id[i] + len, 16, "_%d", i);
				clean[i] = 0;
				renamed = 1;
			}
		}
	}
	free(clean);
	free(ord);
	return id;
}

const char *c_comment_text(char *tmp, size_t n, const char *s)
{
	size_t k = 0;
	for (; *s && k + 1 < n; s++)
		tmp[k++] = s[0] == '*' && s[1] == '/' ? '+' : *s;
	tmp[k] = 0;
	return tmp;
}

const char *c_float(char *buf, size_t n, double v)
{
	snprintf(buf, n - 1, "%.9g", v);
	if (!strpbrk(buf, ".eEn"))
		strcat(buf, ".0");
	strcat(buf, "f");
	return buf;
}

/* ---- aligned tables ---- */

static void tab_text(struct tab *t, const char *fmt, va_list ap)
{
	if (t->n_at == t->cap_at) {
		t->cap_at = t->cap_at ? 2 * t->cap_at : 256;
		t->at = xrealloc(t->at, (size_t)t->cap_at * sizeof *t->at);
	}
	t->at[t->n_at++] = t->text.len;
	sb_vprintf(&t->text, fmt, ap);
	sb_printf(&t->text, "%c", 0);
}

static void tab_row(struct tab *t, int first)
{
	if (t->rows == t->cap_rows) {
		t->cap_rows = t->cap_rows ? 2 * t->cap_rows : 64;
		t->row_at = xrealloc(t->row_at, (size_t)t->cap_rows * sizeof *t->row_at);
	}
	t->row_at[t->rows++] = first;
}

void tab_cell(struct tab *t, const char *fmt, ...)
{
	va_list ap;
	ARK_ASSERT(t->col < t->cols);
	if (t->col++ == 0)
		tab_row(t, t->n_at);
	va_start(ap, fmt);
	tab_text(t, fmt, ap);
	va_end(ap);
}

void tab_end(struct tab *t, const char *fmt, ...)
{
	va_list ap;
	ARK_ASSERT(t->col == t->cols);
	t->col = 0;
	va_start(ap, fmt);
	tab_text(t, fmt, ap);
	va_end(ap);
}

void tab_line(struct tab *t, const char *fmt, ...)
{
	va_list ap;
	ARK_ASSERT(t->col == 0);
	tab_row(t, -1 - t->n_at);
	va_start(ap, fmt);
	tab_text(t, fmt, ap);
	va_end(ap);
}

static void pad(FILE *f, int n)
{
	fprintf(f, "%*s", n > 0 ? n : 0, "");
}

/* A row is "{" then per column its cell and ", " ("}," after the last), then " /+ comment +/"; the
 * header is "/+ " then per column its title and "  ", then " +/": column 0 is 2 wider there. */
void tab_print(struct tab *t, FILE *f)
{
	int *w = xcalloc((size_t)t->cols, sizeof *w);
	for (int c = 0; c < t->cols; c++)
		w[c] = (int)strlen(t->head[c]) + 2 * (c == 0);
	for (int r = 0; r < t->rows; r++)
		for (int c = 0; t->row_at[r] >= 0 && c < t->cols; c++) {
			int n = (int)strlen(t->text.s + t->at[t->row_at[r] + c]);
			w[c] = n > w[c] ? n : w[c];
		}
	fprintf(f, "\t/* ");
	for (int c = 0; c < t->cols; c++) {
		int n = (int)strlen(t->head[c]), room = w[c] - 2 * (c == 0), last = c + 1 == t->cols;
		if (t->align[c] == 'l')
			fprintf(f, "%s", t->head[c]), pad(f, last ? 0 : room - n + 2);
		else
			pad(f, room - n), fprintf(f, "%s%s", t->head[c], last ? "" : "  ");
	}
	fprintf(f, " */\n");
	for (int r = 0; r < t->rows; r++) {
		if (t->row_at[r] < 0) {
			fprintf(f, "\t/* %s */\n", t->text.s + t->at[-1 - t->row_at[r]]);
			continue;
		}
		const size_t *cell = t->at + t->row_at[r];
		int trail = 0; /* spaces owed after a left-aligned last cell, so that comments line up */
		fprintf(f, "\t{");
		for (int c = 0; c < t->cols; c++) {
			const char *x = t->text.s + cell[c];
			int n = (int)strlen(x), last = c + 1 == t->cols;
			if (t->align[c] != 'l')
				pad(f, w[c] - n), fprintf(f, "%s%s", x, last ? "}," : ", ");
			else if (!last)
				fprintf(f, "%s,", x), pad(f, w[c] - n + 1);
			else
				fprintf(f, "%s},", x), trail = w[c] - n;
		}
		const char *note = t->text.s + cell[t->cols];
		if (*note)
			pad(f, trail), fprintf(f, " /* %s */", note);
		fprintf(f, "\n");
	}
	free(w);
	free(t->text.s);
	free(t->at);
	free(t->row_at);
	memset(t, 0, sizeof *t);
}

/* ---- designated initializers ---- */

void init_begin(struct init *in, FILE *f, int tabs)
{
	in->f = f;
	in->tabs = tabs;
	fprintf(f, "%.*s{", tabs, "\t\t\t\t\t\t\t\t");
	in->col = 8 * tabs + 1;
	in->first = 1;
}

void init_field(struct init *in, const char *fmt, ...)
{
	struct strbuf b = {0};
	va_list ap;
	va_start(ap, fmt);
	sb_vprintf(&b, fmt, ap);
	va_end(ap);
	const char *x = b.s;
	int n = (int)b.len;
	if (in->first) {
		fprintf(in->f, "%s", x);
		in->col += n;
	} else if (in->col + 2 + n + 2 > 112) { /* ", " + the field + "}," */
		fprintf(in->f, ",\n%.*s %s", in->tabs, "\t\t\t\t\t\t\t\t", x);
		in->col = 8 * in->tabs + 1 + n;
	} else {
		fprintf(in->f, ", %s", x);
		in->col += 2 + n;
	}
	in->first = 0;
	free(b.s);
}

void init_end(struct init *in)
{
	fprintf(in->f, "},\n");
}
