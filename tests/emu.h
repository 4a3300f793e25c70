/* emu.h: a CPU emulator of the tables arkgen emits for the communication templates (COPY, DMA,
 * SEND_LL, SUM, SUM_LL, GATHER, NOP) on several GPUs, and for copies within a GPU and the updates of
 * state (ASSIGN, KV_APPEND), which carry across iterations: the waits, counters, packets and DMA
 * chunks of the loop kernels, in random interleavings, checked against the CPU reference. */
#ifndef EMU_H
#define EMU_H

#include <stdint.h>

#include "codegen/arkgen.h"

/* Runs `iters` iterations of a compiled model whose vCTAs are all of those templates, interleaved
 * by the random seed; fails the test on a deadlock, on a task touching DMA bytes that have not
 * arrived, on a request nobody waits for, and on an output that differs from the CPU reference. */
void emu_run(const struct arkgen_result *r, uint64_t seed, int iters);

struct emu_opts {
	uint32_t ctr_base; /* every counter's first value (e.g. 0xfffffff0: they cross the 32-bit wrap) */
	int overlap;       /* 0: one iteration to its end (its requests arrived) before the next;
			    * 1: iterations overlap as the loop kernels and the runtime allow (emu.c) */
	int early_host;    /* with overlap: the host rings a GPU as soon as that GPU completed the
			    * previous iteration, not every GPU (as ARK_RUN_TEST_EARLY) */
	long long *overlapped; /* if set, with overlap: += the tasks that ran while another GPU had not
				* started their iteration, and the DMA chunks copied for an iteration that
				* some GPU had already left */
};
/* emu_run with options; instead of failing the test, returns -1 with what went wrong in msg. */
int emu_run_ex(const struct arkgen_result *r, uint64_t seed, int iters, const struct emu_opts *o, char *msg, size_t n);

/* A generation (abi/ark_proto.h) on a one-GPU model with a token state, as SM 0 of the loop kernel
 * runs it: prompt id t written into the token state before step t < n_prompt (in the arena and in
 * the reference), each step's tables run to their end (interleaved by the seed), its outputs and
 * its token checked against the reference, the token taken once every task of the step ran, and
 * the end decided by ark_gen_ends. tokens[] gets the token of every step; returns the steps run, or
 * -1 with what went wrong in msg. */
struct emu_gen {
	uint32_t steps;
	const int32_t *prompt;
	uint32_t n_prompt;
	uint32_t flags; /* ARK_GEN_EOS */
	int32_t eos;
};
int emu_generate(const struct arkgen_result *r, uint64_t seed, const struct emu_gen *q, int32_t *tokens, char *msg,
		 size_t n);

#endif
