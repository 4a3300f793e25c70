/* schedule.h: a tiling placed on SMs: every vCTA's SM and position, the waits still needed at run
 * time, the counters they wait on, and the simulator's prediction. */
#ifndef SCHEDULE_H
#define SCHEDULE_H

#include "tiling.h"

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
};

/* Places, prunes waits, assigns counters, verifies and simulates. 0, or -1 after an error. */
int schedule_build(struct tiling *s, const struct part_gpu *gpu, enum part_policy policy, int barrier,
		  struct schedule *out);
void schedule_free(struct schedule *p);
void schedule_dump(const struct tiling *s, const struct schedule *p, FILE *f); /* -dP */

#endif
