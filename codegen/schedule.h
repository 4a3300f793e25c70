/* schedule.h: a tiling placed on SMs: every vCTA's SM and position, the waits still needed at run
 * time, the counters they wait on, and the simulator's prediction. */
#ifndef SCHEDULE_H
#define SCHEDULE_H

#include "tiling.h"

/* The tables of one GPU exactly as the generated file holds them: what the loop kernel walks. */
struct gpu_tables {
	int n_tasks;
	struct ark_task *tasks;       /* every SM's list, back to back */
	uint32_t *sm_begin;           /* SM s runs tasks[sm_begin[s] .. sm_begin[s + 1]), sms + 1 entries */
	int64_t n_waits;
	struct ark_wait *waits;       /* counters as ARK_CTR(k) names them */
	int n_counters;               /* model counters of this GPU (the grid barriers' included) */
	int n_opp;                    /* op-params entries */
};

/* Every GPU's tables (tables.c) with the numbering that relates them to the tiling: emit.c prints
 * them, tables_verify proves them. */
struct tables {
	int gpus, sms;                /* sms: per GPU */
	int n_bar;                    /* --sync barrier: grid barriers per SM, else 0 */
	struct gpu_tables gpu[ARK_MAX_GPUS];
	int *op_index;                /* per graph op: its index in the emitted ops[] */
	int *opp_gpu;                 /* per graph op: GPU whose op-params table holds its params, -1: none */
	int *opp_index;               /* per op params (graph op, or n_ops + comm index): index in its GPU's table */
	int64_t *wbase;               /* per vCTA: index of its first wait in its GPU's wait table */
};

/* A placed, verified schedule with its counters and waits. */
struct schedule {
	enum part_policy policy;
	int barrier;                  /* --sync barrier: grid barriers between dependency levels */
	struct part_placement pl;     /* SM s of GPU g is SM g * sms + s (sms = pl.sms / gpus) */
	uint8_t *need;                /* per edge: still waited on at run time */
	int64_t n_need;
	int *signal;                  /* per vCTA: model counter it signals, -1 */
	int n_counters;
	uint32_t *per_iter;           /* per counter: signals per iteration */
	int64_t *wait0;               /* per vCTA: its waits are waits[wait0[v] .. wait0[v + 1]) */
	struct ark_wait *waits;       /* model counters numbered from 0; the emitter adds ARK_CTR__FIRST */
	int *ctr_gpu;                 /* per counter: GPU whose counter array holds it (its waiters') */
	int *ctr_index;               /* per counter: its index in that array (model counters from 0) */
	uint8_t *ctr_sys;             /* per counter: raised from another GPU or by the DMA engine */
	int gpu_counters[ARK_MAX_GPUS]; /* model counters per GPU */
	int n_levels;
	int *level;                   /* per vCTA: dependency level (barrier mode) */
	struct part_sim sim;
	struct tables tab;            /* what emit.c writes, verified */
};

/* Places, prunes waits, assigns counters, simulates, verifies and builds the tables. 0, or -1 after
 * an error. schedule_place does the first four, schedule_check the last two: a schedule that is only
 * compared with others (--policy auto) is not checked unless it is kept. */
int schedule_build(struct tiling *s, const struct part_gpu *gpu, enum part_policy policy, int barrier,
		   struct schedule *out);
int schedule_place(struct tiling *s, const struct part_gpu *gpu, enum part_policy policy, int barrier,
		   struct schedule *out);
int schedule_check(struct tiling *s, struct schedule *p);
void schedule_free(struct schedule *p);

/* The tables of a schedule (tables.c). 0, or -1 after an error (a table field too narrow). */
int tables_build(const struct tiling *s, const struct schedule *p, struct tables *t);
void tables_free(struct tables *t);
/* What tables_build checks before it builds: at most max_ops ops and max_opp op params per GPU
 * (tables_build: what struct ark_task can name). 0, or -1 after a located error. */
int tables_check_limits(const struct tiling *s, const struct schedule *p, const struct tables *t, int64_t max_ops,
			int64_t max_opp);
/* Proof that the tables, as the loop kernels and the DMA engine run them, cannot deadlock and order
 * every pair of accesses to overlapping bytes (verify.c). 0, or -1 with the first violation in err. */
int tables_verify(const struct tiling *s, const struct tables *t, char *err, size_t errlen);
void schedule_dump(const struct tiling *s, const struct schedule *p, FILE *f); /* -dP */

#endif
