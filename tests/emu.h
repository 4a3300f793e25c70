/* emu.h: a CPU emulator of the tables arkgen emits for the communication templates (COPY, DMA,
 * SEND_LL, SUM, SUM_LL, GATHER, NOP) on several GPUs: the waits, counters, packets and DMA chunks
 * of the loop kernels, in random interleavings, checked against the CPU reference. */
#ifndef EMU_H
#define EMU_H

#include <stdint.h>

#include "codegen/arkgen.h"

/* Runs `iters` iterations of a compiled model whose vCTAs are all communication vCTAs, interleaved
 * by the random seed; fails the test on a deadlock, on a task touching DMA bytes that have not
 * arrived, on a request nobody waits for, and on an output that differs from the CPU reference. */
void emu_run(const struct arkgen_result *r, uint64_t seed, int iters);

#endif
