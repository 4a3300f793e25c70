/* ark_model.h: the description of a model that arkgen emits as data into every generated file and
 * that the runtime library reads (tensors, ops, arena layout). Plain C, no CUDA types. */
#ifndef ARK_MODEL_H
#define ARK_MODEL_H

#include <stdint.h>
#include "ark_ops.h"

/* Offset of a tensor that lives only inside a fused vCTA (a matmul's output before its activation):
 * the CPU reference computes it, the GPU never stores it. */
#define ARK_NOT_STORED UINT64_MAX

/* One tensor of the model. Row-major, ndim in 1..4. */
struct ark_tensor {
	const char *name;
	uint8_t dtype;  /* enum ark_dtype */
	uint8_t role;   /* enum ark_role */
	uint8_t ndim;
	uint8_t gpu;    /* GPU whose arena holds it */
	int64_t shape[ARK_MAX_DIMS];
	uint64_t offset; /* byte offset in its GPU's arena, ARK_NOT_STORED if never stored there */
	uint64_t bytes;  /* of its data, rows packed (as on the host) */
	uint64_t pitch;  /* bytes from a row (last dimension) to the next in the arena where arkgen pads
			  * rows to whole 16-byte vectors (a weight only matmuls read); 0: rows packed */
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
	/* attention (fields after `line`, so a table that lists none of them leaves them 0): heads and
	 * kv_heads, causal (0 or 1), scale (the default 1/sqrt(head size) already resolved) */
	int32_t heads, kv_heads;
	int32_t causal;
	float scale;
	int64_t start;     /* slice: the first element of axis taken; advance: what it adds, `by` (emitted for
			    * slice, transpose and advance only) */
	int32_t dims[2];   /* transpose: the axes swapped */
	/* rope (emitted for models with rope only): the head size, the rotated part of each head, the
	 * pairs (0: (i, i + rotary_dim/2), 1: (2i, 2i + 1)), the base of the angles */
	int32_t head_dim, rotary_dim, style;
	float base;
};

/* Size in bytes of one element of a dtype; of a quantized dtype, 1: its tensors are handled as rows
 * of bytes (the blocks as they are), [rows, last / 32 * block bytes] (ark_row_bytes). */
static inline int ark_dtype_size(int dt)
{
	return dt == ARK_FP32 || dt == ARK_INT32 ? 4 : dt == ARK_Q4_1 || dt == ARK_Q8_0 ? 1 : 2;
}

/* Block-quantized weights, exactly GGUF's blocks of 32 elements along the last axis:
 *   q4_1: fp16 d, fp16 m, 16 bytes q (byte j: element j in its low nibble, j + 16 in its high one);
 *         value = d * q + m; 20 bytes
 *   q8_0: fp16 d, 32 int8 q; value = d * q; 34 bytes */
#define ARK_QBLOCK 32
static inline int ark_dtype_quantized(int dt) { return dt == ARK_Q4_1 || dt == ARK_Q8_0; }
/* Bytes of one block of 32 elements (0: not quantized). */
static inline int ark_qblock_bytes(int dt) { return dt == ARK_Q4_1 ? 20 : dt == ARK_Q8_0 ? 34 : 0; }
/* Bytes of a row of `last` elements (last % 32 == 0 for a quantized dtype). */
static inline int64_t ark_row_bytes(int dt, int64_t last)
{
	return ark_dtype_quantized(dt) ? last / ARK_QBLOCK * ark_qblock_bytes(dt) : last * ark_dtype_size(dt);
}

static inline int64_t ark_tensor_elems(const struct ark_tensor *t)
{
	int64_t n = 1;
	for (int i = 0; i < t->ndim; i++)
		n *= t->shape[i];
	return n;
}

/* Bytes of a tensor's data (the blocks of a quantized one). */
static inline uint64_t ark_tensor_bytes(const struct ark_tensor *t)
{
	if (t->ndim < 1)
		return 0;
	const int64_t last = t->shape[t->ndim - 1];
	return (uint64_t)(ark_tensor_elems(t) / last) * (uint64_t)ark_row_bytes(t->dtype, last);
}

/* Bytes a tensor takes in its arena: its data, or its rows at their pitch. */
static inline uint64_t ark_tensor_extent(const struct ark_tensor *t)
{
	if (!t->pitch || t->ndim < 1)
		return t->bytes;
	return (uint64_t)(ark_tensor_elems(t) / t->shape[t->ndim - 1]) * t->pitch;
}

#include "ark_task.h"

/* Everything the runtime needs to know of a generated model; one per generated file. */
struct ark_gpu_tables {
	uint64_t arena_bytes;
	int n_tasks;
	const struct ark_task *tasks;   /* every SM's list, back to back */
	const uint32_t *sm_begin;       /* SM s runs tasks[sm_begin[s] .. sm_begin[s + 1]) */
	int n_waits;
	const struct ark_wait *waits;
	int n_opp;
	const struct ark_opp *opp;
	int n_counters;
	uint32_t n_done;                /* signals on the done counter per iteration */
};

struct ark_kargs; /* templates/ark_loop.cuh */
struct ark_streams; /* ark_streams.h */

struct ark_model {
	const char *name;
	const char *source;     /* model file */
	const char *options;    /* arkgen options it was generated with */
	int gpus;
	int sms;                /* SMs the schedule was made for */
	int threads;            /* threads per CTA */
	int smem_bytes;         /* dynamic shared memory per CTA */
	double predicted_us;
	int n_tensors;
	const struct ark_tensor *tensors;
	int n_ops;
	const struct ark_op *ops; /* in a topological order */
	struct ark_gpu_tables tables[ARK_MAX_GPUS];
	/* Launches the loop kernel of `gpu` (cooperative launch); defined in the generated file; NULL
	 * with streams (no loop kernel is built). */
	int (*launch)(int gpu, const struct ark_kargs *args, void *stream);
	const void *kernel;     /* the loop kernel function, or with streams the per-op kernel, for
				 * the shared-memory and occupancy checks */
	/* --backend streams|graph|dynamic: the stream program the runtime issues instead of ringing the
	 * loop kernel, which is then never launched; NULL: --backend loop */
	const struct ark_streams *streams;
	/* 1 + the index of the token state (the model file's top-level `token`), 0: none. The generation
	 * loop (ark_session_generate) writes prompt ids into it and streams the model's tokens from it. */
	int token_state;
};

#endif
