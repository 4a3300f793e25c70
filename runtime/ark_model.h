/* ark_model.h: the description of a model that arkgen emits as data into every generated file and
 * that the runtime library reads (tensors, ops, arena layout). Plain C, no CUDA types. */
#ifndef ARK_MODEL_H
#define ARK_MODEL_H

#include <stdint.h>
#include "ark_ops.h"

/* One tensor of the model. Row-major, ndim in 1..4. */
struct ark_tensor {
	const char *name;
	uint8_t dtype;  /* enum ark_dtype */
	uint8_t role;   /* enum ark_role */
	uint8_t ndim;
	uint8_t gpu;    /* GPU whose arena holds it */
	int64_t shape[ARK_MAX_DIMS];
	uint64_t offset; /* byte offset in its GPU's arena */
	uint64_t bytes;
};

/* One op of the model, as written in the model file (after inference). */
struct ark_op {
	const char *name;
	uint16_t kind;  /* enum ark_op_kind */
	uint8_t n_in, n_out;
	uint8_t gpu;
	uint8_t transpose_b;
	uint8_t transport; /* enum ark_transport */
	int8_t axis;       /* all_gather: normalised to 0..ndim-1 */
	int32_t in[ARK_MAX_IO], out[ARK_MAX_IO]; /* tensor indices */
	float factor, eps;
	int32_t line; /* model-file line */
};

/* Size in bytes of one element of a dtype. */
static inline int ark_dtype_size(int dt) { return dt == ARK_FP32 ? 4 : 2; }

static inline int64_t ark_tensor_elems(const struct ark_tensor *t)
{
	int64_t n = 1;
	for (int i = 0; i < t->ndim; i++)
		n *= t->shape[i];
	return n;
}

#endif
