/* cli.h: the arkgen command line. Its options are declared once, in cli.c's table, from which the
 * getopt array, --help, the range checks and the generated header's options line derive. */
#ifndef CLI_H
#define CLI_H

#include "arkgen.h"

/* Exit statuses: 0 success, 1 the model was rejected, 2 the command line was wrong. */
enum { EXIT_MODEL = 1, EXIT_USAGE = 2 };

/* What the command line asked for. */
struct cli {
	struct arkgen_options ark; /* the knobs of the compile */
	const char *model;     /* MODEL.cfg */
	const char *out;       /* -o: generated CUDA file, NULL for none */
	const char *dot;       /* --dot: Graphviz file of the op graph, "-" for stdout */
	const char *schedule;  /* --schedule: JSON file of the schedule */
	const char *dot_vctas; /* --dot-vctas: Graphviz file of the vCTA graph */
	const char *gpu;       /* --gpu: a built-in calibration table's name, a table file, "analytic" */
	int backend;           /* --backend: enum ark_backend (0: loop) */
	int streams;           /* --streams: at most this many streams, 0: STREAMS_DEFAULT */
	int stream_policy;     /* --stream-policy: enum stream_policy */
	char dumps[16];        /* -d letters: G = checked graph, T = vCTAs, P = placement */
	char shaping[256];     /* the options that shape the generated code, for its header */
};

/* Fills o from argv. 0 to go on; -1 to exit with *status (help, version, --nvcc-flags, usage errors). */
int cli_parse(int argc, char **argv, struct cli *o, int *status);
/* Whether -d asked for the dump of this letter. */
int cli_dump(const struct cli *o, char letter);

#endif
