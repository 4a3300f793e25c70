/* emit_streams.h: the stream program of a schedule (--backend streams|graph|dynamic): its ops as the
 * nodes of a DAG, one kernel launch per dependency level of each op's vCTAs, the streams and events
 * of a --stream-policy; written into the generated file, the report, --schedule and --dot. */
#ifndef EMIT_STREAMS_H
#define EMIT_STREAMS_H

#include <stdio.h>

#include "ark_streams.h"
#include "schedule.h"
#include "streams.h"

struct stream_prog {
	int backend;              /* enum ark_backend, not LOOP */
	enum stream_policy policy;
	int max_streams;
	int n;                    /* nodes: ops that have vCTAs of their own, by their first vCTA */
	int *node_op;             /* per node: graph op (a fused group's first op) */
	int *node_opi;            /* per node: index of its op in the emitted ops[] */
	int *node_of_op;          /* per graph op: its node, -1 */
	int64_t *xadj;            /* the op DAG (every dependency between two nodes' vCTAs) */
	int *adj;
	double *cost_us, *work_us;
	int *n_launch;            /* per node */
	int *launch0;             /* per node: first launch (n + 1) */
	int n_launches;
	struct ark_slaunch *launches; /* node by node, level by level */
	int n_ti;
	uint32_t *task_index;     /* launch by launch: GPU 0's task table index of each vCTA */
	int n_ranges;
	struct ark_srange *ranges;
	int *range0;              /* per node (n + 1) */
	struct sdag dag;
	struct splan plan;
	int *record;              /* per node: event it records, -1 */
	int n_records;
	double predicted_us;
};

/* Builds the program of schedule p (GPU 0's tables) for backend on max_streams streams. 0, or -1
 * after a located error (a model this backend cannot run: several GPUs, communication ops). */
int stream_prog_build(const struct tiling *s, const struct schedule *p, const struct part_gpu *gpu, int backend,
		      enum stream_policy policy, int max_streams, struct stream_prog *out);
void stream_prog_free(struct stream_prog *sp);
/* Into the generated file, before the model record: the tables and ark_streams_def. */
void emit_streams(const struct tiling *s, const struct stream_prog *sp, FILE *f);
void stream_prog_report(const struct tiling *s, const struct stream_prog *sp, FILE *f);
/* --schedule: a "streams" member (after the others); --dot: the op graph by stream, events dashed. */
void stream_prog_json(const struct tiling *s, const struct stream_prog *sp, FILE *f);
void stream_prog_dot(const struct tiling *s, const struct stream_prog *sp, FILE *f);
extern const char *const backend_name[ARK_BACKEND__COUNT];

#endif
