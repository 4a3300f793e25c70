// loop_probe.cu: the loop kernel's protocol costs alone (bench/loop_probe.h), in a few seconds: the
// empty iteration, a task's dispatch with and without its signal, a signal -> wait hop between SMs,
// a small copy task waiting for the one before it, a grid barrier; then the one-kernel-per-op
// backends' launch, gap, event and synchronise costs; and prints them as the calibration table's
// proto lines. No tile templates but COPY's are
// compiled, so a change to templates/ark_loop.cuh is measured in a minute of build.
//
//   build/bench/loop_probe        (make bench-probe; on a machine without a GPU it says so, exit 0)
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <vector>

#define ARK_TILES_FP16 0
#define ARK_TILES_BF16 0
#include "ark.h"
#include "ark_session.h"
#include "ark_tiles.cuh"
#define ARK_SMS 1 /* unused: the probes launch the loop kernel on every SM themselves */
#include "ark_loop.cuh"

#define CK(call) ck((call), #call, __LINE__)
static void ck(cudaError_t e, const char *what, int line)
{
	if (e == cudaSuccess)
		return;
	fprintf(stderr, "loop_probe:%d: %s: %s\n", line, what, cudaGetErrorString(e));
	exit(1);
}

static int g_sms;
#include "bench/loop_probe.h"

int main(void)
{
	int n = 0;
	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
		printf("loop_probe: no CUDA device, nothing measured\n");
		return 0;
	}
	cudaDeviceProp prop;
	CK(cudaGetDeviceProperties(&prop, 0));
	g_sms = prop.multiProcessorCount;
	struct protocol r;
	measure_protocol(&r);
	printf("%s, %d SMs, loop kernel of %d threads (us)\n", prop.name, g_sms, ARK_THREADS);
	printf("| empty iteration | task | task without signal | hop | copy task (%d B, one wait) | barrier |\n",
	       COPY_BYTES);
	printf("|---|---|---|---|---|---|\n");
	printf("| %.2f | %.3f | %.3f | %.3f | %.3f | %.3f |\n", r.empty, r.task, r.task_bare, r.hop, r.copy, r.barrier);
	struct launches l;
	measure_launches(&l);
	printf("\nOne kernel per op (us): | launch issued | gap between kernels (graph) | event, GPU | event, issued | "
	       "synchronise |\n|---|---|---|---|---|\n| %.2f | %.2f | %.2f | %.2f | %.2f |\n", l.launch, l.gap, l.event,
	       l.event_host, l.sync);
	printf("\nThe calibration table's lines (bench/calib/<gpu>.txt):\n");
	printf("proto task_us %.4g\nproto hop_us %.4g\nproto doorbell_us %.4g\nproto barrier_us %.4g\n", r.task, r.hop,
	       r.empty, r.barrier);
	printf("proto launch_us %.4g\nproto kernel_gap_us %.4g\nproto event_us %.4g\nproto event_host_us %.4g\n"
	       "proto sync_us %.4g\n", l.launch, l.gap, l.event, l.event_host, l.sync);
	return 0;
}
