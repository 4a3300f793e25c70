/* bench_cuda.h: what the CUDA benchmark programs of bench/ share: a checked CUDA call that fails
 * the program with "FAIL: file:line: call: error", sizes, and the median of a sample. */
#ifndef BENCH_CUDA_H
#define BENCH_CUDA_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <vector>

#include <cuda_runtime.h>

#define CK(call)                                                                                     \
	do {                                                                                         \
		cudaError_t e_ = (call);                                                             \
		if (e_ != cudaSuccess) {                                                             \
			fprintf(stderr, "FAIL: %s:%d: %s: %s\n", __FILE__, __LINE__, #call,          \
				cudaGetErrorString(e_));                                             \
			exit(1);                                                                     \
		}                                                                                    \
	} while (0)

#define KiB ((uint64_t)1024)
#define MiB ((uint64_t)1024 * 1024)

/* Median of v (sorted in place); 0 for an empty sample. */
static inline double bench_median(std::vector<double> &v)
{
	if (v.empty())
		return 0.0;
	std::sort(v.begin(), v.end());
	return v[v.size() / 2];
}

/* Median over reps of the device time (us) of launch(), timed with events after one warm-up. */
template <typename F> static double bench_time_us(int reps, F launch)
{
	cudaEvent_t e0, e1;
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	std::vector<double> us;
	for (int r = 0; r <= reps; r++) {
		CK(cudaEventRecord(e0));
		launch();
		CK(cudaEventRecord(e1));
		CK(cudaEventSynchronize(e1));
		CK(cudaGetLastError());
		float ms;
		CK(cudaEventElapsedTime(&ms, e0, e1));
		if (r)
			us.push_back(ms * 1e3);
	}
	CK(cudaEventDestroy(e0));
	CK(cudaEventDestroy(e1));
	return bench_median(us);
}

#endif
