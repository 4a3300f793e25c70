/* source.h: a model's text as libconfig is given it: the model file with every @include'd file spliced
 * in (each resolved against the folder of the file that includes it), integer literals checked
 * against what libconfig 1.5 would silently cut, and a map from each line back to its file and line. */
#ifndef SOURCE_H
#define SOURCE_H

#include <stddef.h>

struct source {
	char *text;        /* NUL-terminated, no @include left */
	size_t len;
	int n_lines;       /* lines of text that have a place: 1 .. n_lines */
	int *line_file;    /* (n_lines + 1) index into files of the file each line comes from */
	int *line_no;      /* (n_lines + 1) its line in that file */
	char **files;      /* (n_files) files[0] is the model; the others as resolved */
	int n_files;
};

/* Reads the model at path (text: its contents, or NULL to read the file), splices its includes and
 * checks its integer literals. 0, or -1 after reporting FILE:LINE: error: ... */
int source_read(struct source *s, const char *path, const char *text);
/* The file index and line in that file of line `line` of s->text. */
void source_where(const struct source *s, unsigned line, int *file, int *file_line);
void source_free(struct source *s);

#endif
