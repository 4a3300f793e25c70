/* source.c: a model's text as libconfig is given it (source.h). The scanner follows libconfig 1.5's
 * lexical rules (lib/scanner.l): block and line comments, strings with their escapes, names, and the
 * longest match among its number patterns, so that it sees an @include or an integer exactly where
 * libconfig does. libconfig 1.5 itself resolves includes against the working directory, numbers the
 * lines after an include wrongly and keeps only the low 32 bits of an integer written without L; the
 * splicing here, the line map and the literal check stand in for it. */
#include "source.h"
#include "diag.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH 10 /* nested includes, as libconfig allows */

struct builder {
	struct source *s;
	size_t cap;          /* of s->text */
	int lines_cap;       /* of s->line_file and s->line_no */
	int depth;           /* files being read, the model included */
	struct { dev_t dev; ino_t ino; } open[MAX_DEPTH + 1];
};

/* ---- the spliced text and its line map -------------------------------------------------------- */

static void map_line(struct builder *b, int file, int line)
{
	struct source *s = b->s;
	if (s->n_lines + 1 >= b->lines_cap) {
		b->lines_cap = b->lines_cap ? 2 * b->lines_cap : 256;
		s->line_file = xrealloc(s->line_file, sizeof(int) * (size_t)b->lines_cap);
		s->line_no = xrealloc(s->line_no, sizeof(int) * (size_t)b->lines_cap);
	}
	s->line_file[s->n_lines] = file;
	s->line_no[s->n_lines] = line;
}

/* Appends p[0..n), line `line` of file onwards, to the text. */
static void put(struct builder *b, int file, int line, const char *p, size_t n)
{
	struct source *s = b->s;
	if (!n)
		return;
	if (s->len + n + 1 > b->cap) {
		while (s->len + n + 1 > b->cap)
			b->cap = b->cap ? 2 * b->cap : 4096;
		s->text = xrealloc(s->text, b->cap);
	}
	if (s->len == 0 || s->text[s->len - 1] == '\n')
		map_line(b, file, line); /* a line starts here: it is this file's */
	for (size_t i = 0; i < n; i++) {
		s->text[s->len++] = p[i];
		if (p[i] == '\n') {
			s->n_lines++;
			map_line(b, file, ++line);
		}
	}
	s->text[s->len] = 0;
}

void source_where(const struct source *s, unsigned line, int *file, int *file_line)
{
	int n = s->n_lines + 1; /* lines mapped: 1 .. n (the last one may be empty) */
	if (!s->line_file || line < 1) {
		*file = 0;
		*file_line = (int)line;
	} else if (line > (unsigned)n) {
		*file = s->line_file[n - 1];
		*file_line = s->line_no[n - 1] + (int)(line - (unsigned)n);
	} else {
		*file = s->line_file[line - 1];
		*file_line = s->line_no[line - 1];
	}
}

void source_free(struct source *s)
{
	for (int i = 0; i < s->n_files; i++)
		free(s->files[i]);
	free(s->files);
	free(s->text);
	free(s->line_file);
	free(s->line_no);
	memset(s, 0, sizeof *s);
}

/* ---- reading files ---------------------------------------------------------------------------- */

/* The contents of path into *out (NUL-terminated, length *n), and its identity into *st. Errors name
 * the including file and line when there is one (from), else path itself. */
static int read_all(const char *path, const char *from, int from_line, char **out, size_t *n, struct stat *st)
{
	const char *what = from ? "included file" : "model file";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, st) < 0) {
		if (from)
			diag_error(from, from_line, "cannot open included file '%s': %s", path, strerror(errno));
		else
			diag_error(path, 0, "cannot open model file: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (S_ISDIR(st->st_mode)) {
		if (from)
			diag_error(from, from_line, "included file '%s' is a directory", path);
		else
			diag_error(path, 0, "is a directory");
		close(fd);
		return -1;
	}
	size_t cap = 4096, len = 0;
	char *buf = xmalloc(cap);
	for (;;) {
		if (len + 1 >= cap)
			buf = xrealloc(buf, cap *= 2);
		ssize_t k = read(fd, buf + len, cap - len - 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			diag_error(from ? from : path, from ? from_line : 0, "cannot read %s%s%s: %s", what,
				   from ? " " : "", from ? path : "", strerror(errno));
			free(buf);
			close(fd);
			return -1;
		}
		if (k == 0)
			break;
		len += (size_t)k;
	}
	close(fd);
	buf[len] = 0;
	*out = buf;
	*n = len;
	return 0;
}

/* Index of path in s->files, added if new. */
static int file_index(struct source *s, const char *path)
{
	for (int i = 0; i < s->n_files; i++)
		if (!strcmp(s->files[i], path))
			return i;
	s->files = xrealloc(s->files, sizeof *s->files * (size_t)(s->n_files + 1));
	s->files[s->n_files] = xstrdup(path);
	return s->n_files++;
}

/* ---- libconfig's lexical rules ---------------------------------------------------------------- */

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_hex(char c) { return is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f'); }
static int is_name_start(char c) { return ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || c == '*'; }
static int is_name_char(char c) { return is_name_start(c) || is_digit(c) || c == '-' || c == '_'; }

static size_t span_digits(const char *p, size_t i, size_t n)
{
	while (i < n && is_digit(p[i]))
		i++;
	return i;
}

/* [eE][-+]?[0-9]+ at p[i]: its end, or i. */
static size_t exponent(const char *p, size_t i, size_t n)
{
	size_t j = i;
	if (j >= n || (p[j] | 0x20) != 'e')
		return i;
	j++;
	if (j < n && (p[j] == '-' || p[j] == '+'))
		j++;
	size_t k = span_digits(p, j, n);
	return k > j ? k : i;
}

/* Lengths of the longest match at p of libconfig's number patterns. */
enum num { NUM_NONE, NUM_FLOAT, NUM_INT, NUM_INT64, NUM_HEX, NUM_HEX64 };

static size_t match_number(const char *p, size_t n, enum num *kind)
{
	size_t best = 0, s = (n && (p[0] == '-' || p[0] == '+')) ? 1 : 0;
	*kind = NUM_NONE;
	/* float: [-+]?[0-9]*\.[0-9]*([eE][-+]?[0-9]+)?  |  [-+]?[0-9]+(\.[0-9]*)?[eE][-+]?[0-9]+ */
	size_t d = span_digits(p, s, n);
	if (d < n && p[d] == '.') {
		size_t e = exponent(p, span_digits(p, d + 1, n), n);
		if (e > best)
			best = e, *kind = NUM_FLOAT;
	}
	if (d > s) {
		size_t f = d < n && p[d] == '.' ? span_digits(p, d + 1, n) : d;
		size_t e = exponent(p, f, n);
		if (e > f && e > best)
			best = e, *kind = NUM_FLOAT;
		/* integer: [-+]?[0-9]+, integer64: the same and L or LL (floats win ties: they come first) */
		size_t l = d < n && p[d] == 'L' ? (d + 1 < n && p[d + 1] == 'L' ? d + 2 : d + 1) : d;
		if (l > best)
			best = l, *kind = l > d ? NUM_INT64 : NUM_INT;
	}
	/* hex: 0[Xx][0-9A-Fa-f]+, hex64: the same and L or LL */
	if (n > 2 && p[0] == '0' && (p[1] | 0x20) == 'x' && is_hex(p[2])) {
		size_t h = 2;
		while (h < n && is_hex(p[h]))
			h++;
		size_t l = h < n && p[h] == 'L' ? (h + 1 < n && p[h + 1] == 'L' ? h + 2 : h + 1) : h;
		if (l > best)
			best = l, *kind = l > h ? NUM_HEX64 : NUM_HEX;
	}
	return best;
}

/* An integer literal t[0..n) of kind k that libconfig 1.5 would not read as written: reported. */
static int check_int(const char *file, int line, const char *t, size_t n, enum num k)
{
	int wide = k == NUM_INT64 || k == NUM_HEX64, hex = k == NUM_HEX || k == NUM_HEX64, neg = t[0] == '-';
	size_t j = hex ? 2 : (t[0] == '-' || t[0] == '+'), end = n;
	while (end > j && t[end - 1] == 'L')
		end--;
	uint64_t v = 0, base = hex ? 16 : 10;
	int over = 0;
	for (; j < end; j++) {
		uint64_t dg = is_digit(t[j]) ? (uint64_t)(t[j] - '0') : (uint64_t)((t[j] | 0x20) - 'a' + 10);
		if (v > (UINT64_MAX - dg) / base)
			over = 1;
		else
			v = v * base + dg;
	}
	/* what fits in 64 bits, and in 32 (libconfig stores a hex literal into a signed int too) */
	int fits64 = !over && v <= (neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX);
	int fits32 = fits64 && v <= (neg ? (uint64_t)INT32_MAX + 1 : (uint64_t)INT32_MAX);
	if (wide ? fits64 : fits32)
		return 0;
	int w = n > 40 ? 40 : (int)n;
	const char *more = n > 40 ? "..." : "";
	if (!fits64) {
		diag_error(file, line, "integer %.*s%s does not fit in 64 bits", w, t, more);
		diag_hint("integers run from -9223372036854775808L to 9223372036854775807L");
		return -1;
	}
	int32_t cut = (int32_t)(uint32_t)(neg ? 0 - v : v);
	diag_error(file, line, "integer %.*s%s does not fit in 32 bits: libconfig would read it as %" PRId32, w, t, more,
		   cut);
	diag_hint("write %.*sL for a 64-bit integer (an array holds one type: give every element the L)", (int)end, t);
	return -1;
}

/* Length of ^[ \t]*@include[ \t]+" at p, p at the start of a line; 0 if there is none. */
static size_t include_open(const char *p, size_t n)
{
	size_t i = 0;
	while (i < n && (p[i] == ' ' || p[i] == '\t'))
		i++;
	if (n - i < 8 || memcmp(p + i, "@include", 8))
		return 0;
	i += 8;
	size_t j = i;
	while (j < n && (p[j] == ' ' || p[j] == '\t'))
		j++;
	return j > i && j < n && p[j] == '"' ? j + 1 : 0;
}

static int splice(struct builder *b, const char *path, const char *from, int from_line, const char *text);

/* Copies file `file` (text t[0..n)) into the text, splicing its includes and checking its integer
 * literals. An included file must not end inside a string or comment (libconfig would carry it on
 * into the including file). */
static int scan(struct builder *b, int file, const char *t, size_t n)
{
	size_t i = 0, from = 0; /* t[from, i) is still to copy */
	int line = 1, from_line = 1;
	const char *name = b->s->files[file];
	enum num k;
	const char *nul = memchr(t, 0, n);
	if (nul) { /* libconfig reads text up to its first NUL, and would ignore the rest */
		for (const char *p = t; p < nul; p++)
			line += *p == '\n';
		diag_error(name, line, "NUL byte in the file: a model file is text");
		return -1;
	}
	while (i < n) {
		char c = t[i];
		size_t j;
		if ((i == 0 || t[i - 1] == '\n') && (j = include_open(t + i, n - i))) {
			/* @include "path": \\ and \" are escapes; libconfig drops any other backslash */
			size_t q = i + j, len = 0;
			int at = line;
			char *path = xmalloc(n - q + 1);
			for (; q < n && t[q] != '"'; q++) {
				if (t[q] == '\\' && q + 1 < n && (t[q + 1] == '\\' || t[q + 1] == '"'))
					path[len++] = t[++q];
				else if (t[q] != '\\')
					path[len++] = t[q];
				line += t[q] == '\n';
			}
			path[len] = 0;
			if (q >= n) {
				diag_error(name, at, "@include without the closing '\"' of its file name");
				free(path);
				return -1;
			}
			if (!len) {
				diag_error(name, at, "@include of an empty file name");
				free(path);
				return -1;
			}
			/* relative to the folder of this file */
			const char *slash = strrchr(name, '/');
			size_t dl = path[0] == '/' || !slash ? 0 : (size_t)(slash - name) + 1;
			char *full = xmalloc(dl + len + 1);
			memcpy(full, name, dl);
			memcpy(full + dl, path, len + 1);
			free(path);
			put(b, file, from_line, t + from, i - from);
			int rc = splice(b, full, name, at, NULL);
			free(full);
			if (rc)
				return -1;
			i = from = q + 1;
			from_line = line;
			continue;
		}
		if (c == '\n') {
			line++;
			i++;
		} else if (c == '/' && i + 1 < n && t[i + 1] == '*') {
			int at = line;
			for (i += 2; i < n && !(t[i] == '*' && i + 1 < n && t[i + 1] == '/'); i++)
				line += t[i] == '\n';
			if (i >= n && b->depth > 1) {
				diag_error(name, at, "comment not closed by the end of the included file");
				return -1;
			}
			i = i < n ? i + 2 : n;
		} else if (c == '#' || (c == '/' && i + 1 < n && t[i + 1] == '/')) {
			while (i < n && t[i] != '\n')
				i++;
		} else if (c == '"') {
			int at = line;
			for (i++; i < n && t[i] != '"'; i++) {
				if (t[i] == '\\' && i + 1 < n && strchr("nrtf\\\"", t[i + 1]))
					i++; /* two-character escape */
				line += t[i] == '\n';
			}
			if (i >= n && b->depth > 1) {
				diag_error(name, at, "string not closed by the end of the included file");
				return -1;
			}
			i = i < n ? i + 1 : n;
		} else if (is_name_start(c)) {
			while (i < n && is_name_char(t[i]))
				i++;
		} else if ((j = match_number(t + i, n - i, &k))) {
			if (k != NUM_FLOAT && check_int(name, line, t + i, j, k))
				return -1;
			i += j;
		} else {
			i++;
		}
	}
	put(b, file, from_line, t + from, n - from);
	if (b->depth > 1 && n && t[n - 1] != '\n')
		put(b, file, line, "\n", 1); /* what follows the include starts a line of its own */
	return 0;
}

/* Reads path (or takes text), then scans it; from and from_line name the @include, if any. */
static int splice(struct builder *b, const char *path, const char *from, int from_line, const char *text)
{
	char *buf = NULL;
	size_t n;
	struct stat st;
	if (text) {
		n = strlen(text);
		memset(&st, 0, sizeof st);
	} else if (read_all(path, from, from_line, &buf, &n, &st)) {
		return -1;
	}
	if (b->depth > MAX_DEPTH) {
		diag_error(from, from_line, "includes nested more than %d deep, at '%s'", MAX_DEPTH, path);
		free(buf);
		return -1;
	}
	for (int d = 0; d < b->depth && !text; d++)
		if (b->open[d].dev == st.st_dev && b->open[d].ino == st.st_ino) {
			diag_error(from, from_line, "'%s' includes itself", path);
			free(buf);
			return -1;
		}
	b->open[b->depth].dev = st.st_dev;
	b->open[b->depth].ino = st.st_ino;
	b->depth++;
	int rc = scan(b, file_index(b->s, path), text ? text : buf, n);
	b->depth--;
	free(buf);
	return rc;
}

int source_read(struct source *s, const char *path, const char *text)
{
	struct builder b = { .s = s };
	memset(s, 0, sizeof *s);
	file_index(s, path);
	if (splice(&b, path, NULL, 0, text)) {
		return -1;
	}
	if (!s->text) { /* an empty model */
		s->text = xstrdup("");
		map_line(&b, 0, 1);
	}
	return 0;
}
