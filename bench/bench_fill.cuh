/* bench_fill.cuh: random operands of the tile probes (mm_probe, decode_probe, wgmma_probe), on the
 * GPU. Included after the templates (ark_from_f, templates/ark_dtype.cuh). */
#ifndef BENCH_FILL_CUH
#define BENCH_FILL_CUH

#include <stddef.h>
#include <stdint.h>

/* x[0:n] uniform in [-1, 1), 24 bits of a hash of the index and seed, rounded to T. */
template <typename T> __global__ void bench_fill_kernel(T *x, size_t n, uint32_t seed)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		uint32_t h = (uint32_t)i * 2654435761u ^ seed;
		h ^= h >> 15, h *= 2246822519u, h ^= h >> 13, h *= 3266489917u, h ^= h >> 16;
		x[i] = ark_from_f<T>((float)(h >> 8) * (2.0f / 16777216.0f) - 1.0f);
	}
}

#endif
