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
	X(BARRIER)        /* --sync barrier: signal, then wait (grid barrier between levels) */ \
	X(DMA)            /* elements k0:k1 of in[0] -> out on GPU `peer`: one request to the DMA engine */ \
	X(SUM)            /* all_reduce: elements k0:k1 of out = in[0] + the K slots of in[1] (fp32) */ \
	X(GATHER)         /* all_gather: elements k0:k1 of out from in[0] (own) and in[1] (slots) */   \
	X(NOP)            /* no work: waits only (a transfer's receiver when nothing else waits) */ \
	X(SEND_LL)        /* elements k0:k1 of in[0] -> packets at out on GPU `peer` (no signal) */  \
	X(SUM_LL)         /* SUM whose slots are packets, each polled until it holds this iteration */

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
	uint32_t sig_peer; /* 0: signal is this GPU's counter; g + 1: GPU g's (system-scope release) */
};

/* Wait until counter has received `need` of its `per_iter` signals of the current iteration:
 * (int32_t)(counters[counter] - (iter - 1) * per_iter - need) >= 0, iterations counted from 1.
 * Counters are monotonic and never reset, so wrap-around is harmless. */
struct ark_wait {
	uint32_t counter;
	uint32_t per_iter;
	uint32_t need;
	uint32_t sys;     /* 1: signalled from another GPU or by the DMA engine: acquire at system scope */
};

#define ARK_OPP_TRANSPOSE_B 1u /* B is [N, K] */
#define ARK_OPP_BIAS 2u        /* in[2] is a bias [N] */
#define ARK_OPP_SAME_SHAPE 4u  /* elementwise: every input has out's shape (no broadcasting) */
#define ARK_OPP_CHAIN_IN1 8u   /* chain step: the chained value is the op's in[1] (in[0]: the operand) */
#define ARK_OPP_PUSH 16u       /* COPY: out is in peers[peer] (stores over NVLink/PCIe), in[0] here */
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
	int32_t peer;     /* COPY: GPU holding in[0] (-1: this GPU), or out with ARK_OPP_PUSH; DMA: dst */
};

#endif
