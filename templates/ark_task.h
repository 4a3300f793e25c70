/* ark_task.h: the tables the loop kernel walks, emitted by arkgen as data. Plain C, shared by the
 * host (emitter, runtime) and the device (templates). */
#ifndef ARK_TASK_H
#define ARK_TASK_H

#include <stdint.h>

/* Tile templates. A task names one; the op params say which op it belongs to. */
#define TMPL_LIST(X)                                                                          \
	X(MATMUL)         /* tile (m0:m1, n0:n1) of out over all of K, bias and conversion fused */ \
	X(MATMUL_PARTIAL) /* tile (m0:m1, n0:n1) over k0:k1, fp32 partial into ws slice `split` */  \
	X(REDUCE)         /* tile (m0:m1, n0:n1): sum of the splits' partials + bias -> out */      \
	X(ELEMENTWISE)    /* rows m0:m1, cols n0:n1 of the 2-D view of out */                       \
	X(EW_CHAIN)       /* elements k0:k1 of out through a chain of same-shape elementwise ops */ \
	X(SOFTMAX)        /* rows m0:m1 of out, each row whole */                                   \
	X(LAYERNORM)      /* rows m0:m1 */                                                          \
	X(RMSNORM)        /* rows m0:m1 */                                                          \
	X(COPY)           /* elements k0:k1 of in[0] -> out, same GPU or peer */                    \
	X(BARRIER)        /* --sync barrier: signal, then wait (grid barrier between levels) */

enum ark_tmpl {
#define X(id) ARK_T_##id,
	TMPL_LIST(X)
#undef X
	ARK_T__COUNT
};

/* One vCTA on one SM's list. */
struct ark_task {
	uint16_t opp;     /* index into the op-params table */
	uint8_t tmpl;     /* enum ark_tmpl */
	uint8_t n_wait;   /* waits at waits[wait0 .. wait0 + n_wait) */
	uint32_t wait0;
	int32_t signal;   /* counter to add 1 to when done, -1: none */
	uint32_t split;   /* MATMUL_PARTIAL: which slice of the workspace */
	uint32_t m0, m1, n0, n1, k0, k1;
	uint32_t vcta;    /* vCTA id, for the trace */
};

/* Wait until counter has received `need` of its `per_iter` signals of the current iteration:
 * (int32_t)(counters[counter] - (iter - 1) * per_iter - need) >= 0, iterations counted from 1.
 * Counters are monotonic and never reset, so wrap-around is harmless. */
struct ark_wait {
	uint32_t counter;
	uint32_t per_iter;
	uint32_t need;
};

#define ARK_OPP_TRANSPOSE_B 1u /* B is [N, K] */
#define ARK_OPP_BIAS 2u        /* in[2] is a bias [N] */
#define ARK_OPP_SAME_SHAPE 4u  /* elementwise: every input has out's shape (no broadcasting) */
#define ARK_OPP_CHAIN_IN1 8u   /* chain step: the chained value is the op's in[1] (in[0]: the operand) */
#define ARK_ACT_NONE 0xffffu

/* Device parameters of one op, as the templates see it. Offsets are bytes into the arena of the
 * GPU that runs the task; every tensor is a row-major 2-D view [M, N] (leading dims folded). */
struct ark_opp {
	uint16_t kind;    /* enum ark_op_kind */
	uint8_t dtype;    /* enum ark_dtype of inputs and output */
	uint8_t flags;    /* ARK_OPP_* */
	uint16_t act;     /* matmul: ARK_OP_RELU/GELU/SILU applied after the bias, ARK_ACT_NONE: none */
	uint16_t pad_;
	uint32_t splits;  /* matmul split-K slices (1: none); EW_CHAIN: number of steps, which are the
			   * params of the chain's ops, in order, in the entries right after this one */
	uint64_t in[3];   /* inputs: matmul a, b, bias; elementwise a, b; norms a, gamma, beta */
	uint64_t out;
	uint64_t ws;      /* matmul split-K workspace: fp32 [splits, M, N] */
	int64_t M, N, K;  /* matmul: out [M, N] = a [M, K] . b; others: out viewed as [M, N] */
	float f;          /* scale: factor; norms: eps */
	int32_t ndim;     /* elementwise with broadcasting: out shape and the inputs' element strides */
	int64_t oshape[4];
	int64_t istride[2][4]; /* 0 where an input is broadcast along that dimension */
	int32_t peer;     /* COPY: GPU holding in[0] (-1: this GPU) */
};

#endif
