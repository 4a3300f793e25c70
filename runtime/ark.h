/* ark.h: the public API of libarkrt, the host library of every generated binary.
 * Functions return ARK_OK (0) or ARK_ERR (-1) and keep a message for ark_last_error(); none exits. */
#ifndef ARK_H
#define ARK_H

#include <stddef.h>
#include <stdint.h>

#include "ark_model.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { ARK_OK = 0, ARK_ERR = -1 };

/* Last error message of this thread ("" if none). */
const char *ark_last_error(void);
/* Sets the message (printf-style) and returns ARK_ERR. */
int ark_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- element types ------------------------------------------------------------------------ */
float ark_half_to_float(uint16_t h);
uint16_t ark_float_to_half(float f);     /* round to nearest even */
float ark_bf16_to_float(uint16_t h);
uint16_t ark_float_to_bf16(float f);     /* round to nearest even */
/* Element i of a buffer of dtype, as float; and the store (rounded to the dtype). */
float ark_get(const void *buf, int dtype, int64_t i);
void ark_set(void *buf, int dtype, int64_t i, float v);
const char *ark_dtype_name(int dtype);   /* "fp16", "bf16", "fp32" */

/* ---- random data ---------------------------------------------------------------------------- */
/* Fills n elements with uniform values in [-scale, scale) from a seeded generator (deterministic). */
void ark_fill_random(void *buf, int dtype, int64_t n, uint64_t seed, float scale); /* int32: 0 or 1 */
/* int32 values uniform in [0, hi). */
void ark_fill_random_ints(int32_t *buf, int64_t n, uint64_t seed, int32_t hi);
/* The values int32 tensor t of m may hold are 0 .. ark_int_range(m, t) - 1: the rows of the smallest
 * table of the embeddings that read it as ids, of the positions where kv_append's rows fit in its
 * cache (L - T + 1), for a position L - T + 1 of the decode_attentions that read it (pos + T <= L) or
 * ARK_ROPE_POS_RANGE for rope alone, the smallest of these; else 2 (a mask: 0 or 1). */
#define ARK_ROPE_POS_RANGE 8192
int32_t ark_int_range(const struct ark_model *m, int t);

/* ---- block-quantized weights (quant.c) ------------------------------------------------------- */
/* A row of n elements (n % 32 == 0) of q4_1 or q8_0 blocks to fp32, and back (round to nearest:
 * q4_1 with d = (max - min) / 15 and m = min per block, q8_0 with d = max |x| / 127; d and m in
 * fp16). ARK_ERR for another dtype or n. */
int ark_dequant_row(const void *blocks, int dtype, int64_t n, float *out);
int ark_quantize_row(const float *x, int dtype, int64_t n, void *blocks);
/* Valid random blocks for `rows` rows of `last` elements: each block the quantisation of values
 * uniform in [-scale, scale) (finite d and m, q over its whole range), seeded. */
void ark_fill_random_quant(void *buf, int dtype, int64_t rows, int64_t last, uint64_t seed, float scale);

/* ---- CPU reference -------------------------------------------------------------------------- */
/* Computes one op on host buffers (bufs[t] holds tensor t), accumulating in fp32 or wider and
 * rounding the output to its dtype, as the GPU does. */
int ark_ref_op(const struct ark_op *op, const struct ark_tensor *tensors, void *const *bufs);
/* Runs every op of the model in order. */
int ark_ref_run(const struct ark_model *m, void *const *bufs);

/* Compares got with want (n elements of dtype): relative error ||got - want|| / ||want|| into *rel,
 * count of NaN/Inf in got into *bad. */
void ark_compare(const void *got, const void *want, int dtype, int64_t n, double *rel, int64_t *bad);

/* ---- safetensors ---------------------------------------------------------------------------- */
struct ark_st_entry {
	char *name;
	int dtype;               /* enum ark_dtype, or -1 for a dtype arkgen does not use */
	char dtype_str[16];      /* as in the file ("F16", "BF16", "F32", ...) */
	int ndim;
	int64_t shape[8];
	uint64_t begin, end;     /* byte range in the data section */
};
struct ark_st {
	char *path;
	int n;
	struct ark_st_entry *e;
	struct ark_st_entry **by_name; /* (n) the entries sorted by name, for ark_st_find */
	unsigned char *data;     /* data section */
	uint64_t data_bytes;
	void *map;               /* whole file */
	size_t map_bytes;
};
/* Opens and validates a safetensors file (header JSON parsed with cJSON, and held to the format: a
 * JSON object from the first byte, names without NUL, integers written as integers, known dtypes,
 * each name once, byte ranges that tile the data section exactly). */
int ark_st_open(struct ark_st *st, const char *path);
void ark_st_close(struct ark_st *st);
const struct ark_st_entry *ark_st_find(const struct ark_st *st, const char *name);
/* Loads every tensor of the model whose role is in role_mask (1 << ARK_ROLE_*) and which the file
 * holds into bufs[t]; checks dtype and shape, naming the tensor on a mismatch. *loaded gets how many.
 * A tensor of the file that the model does not have is an error. */
int ark_st_load(const char *path, const struct ark_model *m, unsigned role_mask, void *const *bufs,
		int *loaded);
/* Writes the model's tensors whose role is in role_mask from bufs[t]. */
int ark_st_write(const char *path, const struct ark_model *m, unsigned role_mask, void *const *bufs);

#ifdef __cplusplus
}
#endif

#endif
