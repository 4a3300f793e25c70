/* pipeline.h: the passes after the front end, in order: tile, plan memory, dependencies, place,
 * verify, simulate, emit. main() parses options and calls pipeline_run. */
#ifndef PIPELINE_H
#define PIPELINE_H

#include "graph.h"

struct pipeline_opts {
	int sms;              /* --sms */
	int smem;             /* --smem, bytes */
	int threads;
	int policy;           /* enum part_policy, or -1 for --policy all */
	int barrier;          /* --sync barrier */
	int fuse, reuse;      /* --no-fuse, --no-reuse clear them */
	long long p2p_max;    /* --p2p-max */
	long long oneshot_max; /* --oneshot-max, -1: the default rule */
	long long ll_max;     /* --ll-max */
	int dump_tiles;       /* -dT */
	int dump_place;       /* -dP */
	const char *dot_vcta; /* --dot-vctas FILE */
	const char *schedule; /* --schedule FILE */
	const char *out;      /* -o FILE */
	const char *options;  /* options that shape the output, for the generated header */
	int quiet;
};

/* Runs the passes on a checked graph and prints the report on stdout. 0, or -1 after an error. */
int pipeline_run(struct graph *g, const struct pipeline_opts *o);

#endif
