/* ark_streams.cuh: the one kernel of the multi-stream backends: CTA i of a launch runs task
 * task_index[i] through the same tile dispatch as the loop kernel (ark_tile), with no waits and no
 * signals: stream order and events order the launches. Included by generated files of
 * --backend streams|graph|dynamic after ark_loop.cuh; ARK_DEFINE_STREAMS() then defines the kernel
 * and the host functions struct ark_streams points to. */
#ifndef ARK_STREAMS_CUH
#define ARK_STREAMS_CUH

#include <stdio.h>
#include <cuda_runtime.h>

#include "ark_streams.h"

/* Nothing aborts a tile here: the packet polls that read it are communication templates, which
 * these backends refuse. */
static __device__ uint32_t ark_streams_no_abort;

/* One CTA per task of the launch: task a.task_index[blockIdx.x] (the caller offsets task_index to
 * the launch's first entry), its shared memory as dynamic shared memory. */
static __device__ __forceinline__ void ark_op_body(const struct ark_op_args &a)
{
	const uint32_t ti = a.task_index[blockIdx.x];
	const struct ark_task t = a.tasks[ti];
	const ark_tile_env env = {a.arena, NULL, ark_smem, 1, &ark_streams_no_abort};
	if (a.trace && threadIdx.x == 0)
		a.trace[2 * ti] = ark_globaltimer();
	const bool ran = ark_tile(a.opp[t.opp], t, env); /* the same for every thread */
	__syncthreads();
	if (!ran) {
		if (threadIdx.x == 0)
			printf("ark: task %u (vCTA %u): template %u with dtype %u has no tile in this build\n", ti, t.vcta,
			       (unsigned)t.tmpl, (unsigned)a.opp[t.opp].dtype);
		__trap(); /* the launch fails: the host reports the error at its next synchronise */
	}
	if (a.trace && threadIdx.x == 0)
		a.trace[2 * ti + 1] = ark_globaltimer();
}

/* Defines ark_op_kernel and the functions of struct ark_streams: prepare (the kernel's dynamic
 * shared memory limit), launch (one launch: l->n CTAs of ARK_THREADS threads, smem bytes) and
 * tmpl_smem (what a template needs, from TMPL_CATALOG). */
#define ARK_DEFINE_STREAMS()                                                                                \
	__global__ void __launch_bounds__(ARK_THREADS, 1)                                                   \
		ark_op_kernel(const __grid_constant__ struct ark_op_args ark_args)                          \
	{                                                                                                   \
		ark_op_body(ark_args);                                                                      \
	}                                                                                                   \
	static int ark_streams_prepare(void)                                                                \
	{                                                                                                   \
		return (int)cudaFuncSetAttribute((const void *)ark_op_kernel,                               \
						 cudaFuncAttributeMaxDynamicSharedMemorySize, ARK_SMEM_BYTES); \
	}                                                                                                   \
	static int ark_streams_launch(const struct ark_slaunch *l, int smem, const struct ark_op_args *a, void *s) \
	{                                                                                                   \
		struct ark_op_args b = *a;                                                                  \
		b.task_index += l->first;                                                                   \
		ark_op_kernel<<<l->n, ARK_THREADS, (size_t)smem, (cudaStream_t)s>>>(b);                     \
		return (int)cudaGetLastError();                                                             \
	}                                                                                                   \
	static int ark_streams_tmpl_smem(int tmpl) { return ark_tmpl_smem_bytes(tmpl); }

#endif
