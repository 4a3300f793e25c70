/* calib.h: measured costs of the tile templates and of the loop kernel's protocol, as bench/calibrate
 * writes them to a table (bench/calib/NAME.txt, built into arkgen); a vCTA's predicted time comes
 * from the table by its template, dtype, layout and shape, the analytic model (partition/'s rates)
 * where the table has no point of its kind.
 *
 * The table, one item a line, '#' to the end of a line is a comment:
 *   gpu NAME...        the GPU it was measured on (cudaGetDeviceProperties' name)
 *   sms N              its SMs: the "busy" column ran one CTA on each
 *   threads N          threads per CTA of the tiles (ARK_THREADS)
 *   date YYYY-MM-DD
 *   source measured    or "analytic": uncalibrated, generated from the analytic model
 *   proto NAME VALUE   a cost of the loop kernel's protocol (calib_proto_name)
 *   TEMPLATE DTYPE LAYOUT M N K ALONE_US BUSY_US
 *                      one measured point: the tile's time on one SM while the others idle, and
 *                      per SM while every SM runs a tile of that shape (device memory shared)
 * TEMPLATE is a template of abi/ark_task.h in lower case; what M, N and K are depends on it:
 *   matmul              tile rows, tile columns, K
 *   matmul_partial      tile rows, tile columns, length of its k-slice
 *   reduce              tile rows, tile columns, splits summed
 *   elementwise         tile rows, tile columns, inputs (1 or 2)
 *   ew_chain            1, elements, steps (ops of the chain)
 *   softmax, layernorm, rmsnorm, l2norm   rows, columns, 1
 *   copy                1, elements, 1
 *   reduce_mean         tile rows, tile columns of out viewed as [P * Q, D], elements averaged (S)
 * LAYOUT: matmul and matmul_partial kn, nk (transpose_b), kn-odd, nk-odd (an operand's rows are not
 * a multiple of 16 bytes: the templates' unaligned paths); elementwise same or bcast (broadcast
 * inputs); "-" for the others. */
#ifndef CALIB_H
#define CALIB_H

#include "partition/part.h"

/* Tiles of at most this many rows stream b (templates/op_matmul.cuh, ARK_MM_SMALL_M); larger ones run
 * the tensor-core or FMA paths: two regimes that the table's points never mix. */
#define CALIB_SMALL_M 16

enum calib_layout { CALIB_L_NONE, CALIB_L_KN, CALIB_L_NK, CALIB_L_KN_ODD, CALIB_L_NK_ODD, CALIB_L_SAME,
		    CALIB_L_BCAST, CALIB_L__COUNT };
extern const char *const calib_layout_name[CALIB_L__COUNT];

/* The protocol's costs (struct part_gpu's fields of the same names). */
#define CALIB_PROTO_LIST(X)                                                                          \
	X(task_us) X(hop_us) X(doorbell_us) X(barrier_us) X(dram_gbps) X(sm_gbps) X(launch_us) X(kernel_gap_us) \
	X(event_us) X(event_host_us) X(sync_us)
enum calib_proto {
#define X(name) CALIB_P_##name,
	CALIB_PROTO_LIST(X)
#undef X
	CALIB_P__COUNT
};
extern const char *const calib_proto_name[CALIB_P__COUNT];

enum { CALIB_ALONE, CALIB_BUSY };

/* What a tile is: its template (enum ark_tmpl), dtype (enum ark_dtype), layout, shape (see above). */
struct calib_query {
	int tmpl, dtype, layout;
	double m, n, k;
};

struct calib_point {
	struct calib_query q;
	double us[2];  /* CALIB_ALONE, CALIB_BUSY */
	int line;
};

struct calib_key; /* the points of one template, dtype, layout and regime: grid and fit (calib.c) */

struct calib_table {
	char *name;            /* "h100", or the file it was read from */
	char *gpu, *date;
	int sms, threads;
	int measured;          /* 0: "source analytic", uncalibrated */
	double proto[CALIB_P__COUNT]; /* NAN: not in the table */
	int n_points;
	struct calib_point *pt;
	int n_keys;
	struct calib_key *key;
};

/* Reads a table from text (file names it in diagnostics: "FILE:LINE: error: ..."). NULL after
 * reporting every error. */
struct calib_table *calib_parse(const char *file, const char *text);
/* The same from a file. */
struct calib_table *calib_load(const char *path);
void calib_free(struct calib_table *t);

/* The tables built into arkgen (bench/calib/NAME.txt at build time), NULL if none of that name. */
const struct calib_table *calib_builtin(const char *name);
/* Names of the built-in tables, NULL-terminated. */
const char *const *calib_builtin_names(void);
/* The default: the built-in h100 table if it was measured, else NULL (the analytic model). */
const struct calib_table *calib_default(void);

/* The tile's time (us, CALIB_ALONE and CALIB_BUSY) from the table: 0, or -1 when the table has no
 * point of the tile's template, dtype, layout and regime. */
int calib_lookup(const struct calib_table *t, const struct calib_query *q, double us[2]);
/* The analytic model's time of the tile on gpu: alone, and with all gpu->sms SMs streaming. */
void calib_analytic(const struct part_gpu *gpu, const struct calib_query *q, double us[2]);
/* The protocol costs the table has, over the defaults in g. */
void calib_gpu(const struct calib_table *t, struct part_gpu *g);
/* Name of a template as tables spell it ("matmul_partial"), NULL if it has no calibrated tile. */
const char *calib_tmpl_name(int tmpl);

/* Elementwise chains. The chain template (op_elementwise.cuh) reading its steps from their params
 * costs about this much a step per pass of one 16-byte vector per thread (measured on H200,
 * bench/chain_probe.cu); a chain the generated file compiles with its steps (its ops' kinds and
 * factors and its operands' layouts as constants) costs its first two steps as the template's and
 * ARK_CHAIN_GEN_STEP_US for each further one. Chains of at most ARK_CHAIN_GEN_MAX steps are
 * compiled, first to last in the op order, while the file's compiled steps stay within
 * ARK_CHAIN_GEN_TOTAL (each costs build time); the others run on the template. */
#define ARK_CHAIN_STEP_US 0.17
#define ARK_CHAIN_GEN_STEP_US 0.005
#define ARK_CHAIN_GEN_MAX 1024
#define ARK_CHAIN_GEN_TOTAL 8192

/* Latency of `steps` steps of a chain per pass of one 16-byte vector per thread; gen: compiled with
 * its steps. */
static inline double chain_steps_us(int steps, int gen)
{
	return gen && steps > 2 ? 2 * ARK_CHAIN_STEP_US + (steps - 2) * ARK_CHAIN_GEN_STEP_US : ARK_CHAIN_STEP_US * steps;
}

#endif
