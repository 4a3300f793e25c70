/* emit.h: writing the generated loop file, the JSON schedule and the report. */
#ifndef EMIT_H
#define EMIT_H

#include <stdio.h>

#include "schedule.h"

struct emit_info {
	const char *options;  /* the options that shaped the output, as a command-line fragment */
	int threads;
	int smem;
	const struct stream_prog *streams; /* --backend streams|graph|dynamic: its program (emit_streams.h), NULL: loop */
};

/* Writes loop.cu for a placed schedule. Byte-identical for the same input. 0, or -1 (I/O error). */
int emit_loop(const struct tiling *s, const struct schedule *p, const struct emit_info *info, FILE *f);
/* The op params the emitted file holds for communication vCTA params s->comm[x] (tests emulate them). */
void emit_comm_opp_params(const struct tiling *s, int x, struct ark_opp *o);
/* The schedule as JSON (vCTAs, placement, waits, signals, prediction) for other tools. */
int emit_schedule_json(const struct tiling *s, const struct schedule *p, FILE *f);
/* The same with the stream program of --backend streams|graph|dynamic as a "streams" member. */
int emit_schedule_json_streams(const struct tiling *s, const struct schedule *p, const struct stream_prog *sp,
			       FILE *f);

#endif
