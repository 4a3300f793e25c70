/* ark_task.h: the tables the loop kernel walks, emitted by arkgen as data. Plain C, shared by the
 * host (emitter, runtime) and the device (templates). */
#ifndef ARK_TASK_H
#define ARK_TASK_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

/* What part of its op a task computes, by template: the task fields that say it (trace labels and
 * the generated file's comments print these). */
enum ark_span {
	ARK_SPAN_NONE,   /* nothing: the task only waits or signals */
	ARK_SPAN_TILE,   /* rows m0:m1, cols n0:n1 of out */
	ARK_SPAN_TILE_K, /* rows m0:m1, cols n0:n1 of out, over k0:k1 */
	ARK_SPAN_ROWS,   /* rows m0:m1 of out, each row whole */
	ARK_SPAN_ELEMS   /* elements k0:k1 of out */
};

/* The template catalog, one row per tile template: R(X, ID, tile, smem, span, "label").
 *   tile   what templates/ark_tiles.cuh's dispatch calls: a struct of templates/op_*.cuh whose
 *          run(p, t, env) computes the task (a template run<T> over the element type when per_dtype)
 *   smem   dynamic shared memory it needs, bytes: a constant expression of ARK_THREADS that
 *          ark_smem.h defines (ARK_SMEM_BYTES must hold the largest: ark_tiles.cuh checks it, and
 *          arkgen refuses a --smem below it before emitting)
 *   span   enum ark_span
 *   label  a few words for the trace and the generated file's comments
 * TMPL_CATALOG(X) expands every column, X(ID, tile, smem, span, "label"); TMPL_LIST(X) the ID only.
 * A task names a template; its op params say which op it computes. */
#define TMPL_ROWS(R, X)                                                                                            \
	/* tile (m0:m1, n0:n1) of out over all of K, bias and conversion fused */                                  \
	R(X, MATMUL, ark_tile_matmul, ARK_SMEM_MATMUL, ARK_SPAN_TILE, "matmul")                                    \
	/* tile (m0:m1, n0:n1) over k0:k1, fp32 partial into ws slice `split` */                                   \
	R(X, MATMUL_PARTIAL, ark_tile_matmul_partial, ARK_SMEM_MATMUL, ARK_SPAN_TILE_K, "split-K partial")         \
	/* tile (m0:m1, n0:n1): sum of the splits' partials + bias -> out */                                       \
	R(X, REDUCE, ark_tile_reduce, ARK_SMEM_REDUCE, ARK_SPAN_TILE, "split-K sum")                               \
	/* rows m0:m1, cols n0:n1 of the 2-D view of out */                                                        \
	R(X, ELEMENTWISE, ark_tile_elementwise, ARK_SMEM_ELEMENTWISE, ARK_SPAN_TILE, "elementwise")                \
	/* elements k0:k1 of out through a chain of same-shape elementwise ops */                                  \
	R(X, EW_CHAIN, ark_tile_ew_chain, ARK_SMEM_ELEMENTWISE, ARK_SPAN_ELEMS, "elementwise chain")               \
	/* rows m0:m1 of out, each row whole */                                                                    \
	R(X, SOFTMAX, ark_tile_softmax, ARK_SMEM_ROWS, ARK_SPAN_ROWS, "softmax")                                   \
	R(X, LAYERNORM, ark_tile_layernorm, ARK_SMEM_ROWS, ARK_SPAN_ROWS, "layernorm")                             \
	R(X, RMSNORM, ark_tile_rmsnorm, ARK_SMEM_ROWS, ARK_SPAN_ROWS, "rmsnorm")                                   \
	/* elements k0:k1 of in[0] -> out, same GPU or peer */                                                     \
	R(X, COPY, ark_tile_copy, ARK_SMEM_COPY, ARK_SPAN_ELEMS, "copy")                                           \
	/* --sync barrier: signal, then wait (grid barrier between levels); the loop does both */                  \
	R(X, BARRIER, ark_tile_none, 0, ARK_SPAN_NONE, "grid barrier")                                             \
	/* elements k0:k1 of in[0] -> out on GPU `peer`: the loop pushes one request to the DMA engine */          \
	R(X, DMA, ark_tile_none, 0, ARK_SPAN_ELEMS, "DMA send")                                                    \
	/* all_reduce: elements k0:k1 of out = in[0] + the K slots of in[1] (fp32) */                              \
	R(X, SUM, ark_tile_sum, ARK_SMEM_COMM, ARK_SPAN_ELEMS, "sum")                                              \
	/* all_gather: elements k0:k1 of out from in[0] (own) and in[1] (slots) */                                 \
	R(X, GATHER, ark_tile_gather, ARK_SMEM_COMM, ARK_SPAN_ELEMS, "gather")                                     \
	/* no work: waits only (a transfer's receiver when nothing else waits) */                                  \
	R(X, NOP, ark_tile_none, 0, ARK_SPAN_NONE, "receive")                                                      \
	/* elements k0:k1 of in[0] -> packets at out on GPU `peer` (no signal) */                                  \
	R(X, SEND_LL, ark_tile_send_ll, ARK_SMEM_COMM, ARK_SPAN_ELEMS, "send in packets")                          \
	/* SUM whose slots are packets, each polled until it holds this iteration */                               \
	R(X, SUM_LL, ark_tile_sum_ll, ARK_SMEM_COMM, ARK_SPAN_ELEMS, "sum of packets")                            \
	/* reduce_mean: rows m0:m1, cols n0:n1 of out viewed as [P * Q, D], every one over all of S */          \
	R(X, REDUCE_MEAN, ark_tile_reduce_mean, ARK_SMEM_REDUCE_MEAN, ARK_SPAN_TILE, "mean")                   \
	/* l2_normalize: rows m0:m1 of out, each row whole */                                                   \
	R(X, L2NORM, ark_tile_l2norm, ARK_SMEM_ROWS, ARK_SPAN_ROWS, "l2 normalize")                    \
	/* query rows m0:m1 (of out viewed as [B*Sq, H*Dh], one batch) x one head's columns n0:n1, all keys */    \
	R(X, ATTENTION, ark_tile_attention, ARK_SMEM_ATTENTION, ARK_SPAN_TILE, "attention")                        \
	/* rows m0:m1 of out [M, N]: row r is row in[0][r] (int32 ids) of the table in[1] [K, N] */                \
	R(X, EMBEDDING, ark_tile_embedding, ARK_SMEM_EMBEDDING, ARK_SPAN_ROWS, "embedding")                        \
	/* elements k0:k1 of out (ndim, oshape): out[i] = in[0][sum of i's indices times istride[0]]; a        \
	 * transpose of the last two dimensions (opp.boxed): the box (m0:m1, n0:n1) of out's 2-D view */          \
	R(X, STRIDED, ark_tile_strided, ARK_SMEM_STRIDED, ARK_SPAN_ELEMS, "strided copy")                          \
	/* elements k0:k1 of the state out: assign's value in[1] copied (any dtype), advance's + K (int32) */    \
	R(X, ASSIGN, ark_tile_assign, 0, ARK_SPAN_ELEMS, "state update")                                          \
	/* rows m0:m1, cols n0:n1 of x in[1] -> rows pos + m of the cache out, pos = int32 at in[2] */          \
	R(X, KV_APPEND, ark_tile_kv_append, 0, ARK_SPAN_TILE, "kv append")                                        \
	/* rope: rows m0:m1 of out viewed as [B*T, H*Dh], each row whole, rotated at its position */              \
	R(X, ROPE, ark_tile_rope, ARK_SMEM_ROPE, ARK_SPAN_ROWS, "rope")                                            \
	/* decode_attention: query rows m0:m1 x heads n0:n1 of one kv head, keys k0:k1 (split `split`); one     \
	 * split: out, else fp32 partials into the workspace */                                                   \
	R(X, DECODE, ark_tile_decode, ARK_SMEM_DECODE_TILE, ARK_SPAN_TILE_K, "decode attention")                 \
	/* decode_attention: query rows m0:m1 x heads n0:n1, the splits' partials merged into out */              \
	R(X, DECODE_COMBINE, ark_tile_decode_combine, 0, ARK_SPAN_TILE, "decode combine")                        \
	/* argmax: rows m0:m1 over columns k0:k1 (split `split`); one split: out, else partial (value, index) */  \
	R(X, ARGMAX, ark_tile_argmax, ARK_SMEM_ARGMAX, ARK_SPAN_TILE_K, "argmax")                                \
	/* argmax: rows m0:m1, the splits' partial (value, index) pairs merged into out */                      \
	R(X, ARGMAX_COMBINE, ark_tile_argmax_combine, 0, ARK_SPAN_ROWS, "argmax combine")                       \
	/* dequantize: rows m0:m1 of out [M, N] (fp16, bf16, fp32) from the same rows of in[0] in blocks      \
	 * (wdtype: q4_1, q8_0) */                                                                              \
	R(X, DEQUANT, ark_tile_dequant, ARK_SMEM_DEQUANT, ARK_SPAN_ROWS, "dequantize")

#define ARK_TMPL_ALL_(X, ...) X(__VA_ARGS__)
#define ARK_TMPL_ID_(X, id, tile, smem, span, label) X(id)
#define TMPL_CATALOG(X) TMPL_ROWS(ARK_TMPL_ALL_, X)
#define TMPL_LIST(X) TMPL_ROWS(ARK_TMPL_ID_, X)

enum ark_tmpl {
#define X(id) ARK_T_##id,
	TMPL_LIST(X)
#undef X
	ARK_T__COUNT
};

#define ARK_TASK_NO_OP 0xffffffu /* struct ark_task.op of a task of no op (a grid barrier) */
#define ARK_TASK_MAX_OPP 0xffffffu /* struct ark_task.opp: op params per GPU, at most */

/* One vCTA on one SM's list: 48 bytes, fetched by the loop kernel once per task. op and opp are
 * 24 bits each, packed with tmpl and sig_peer in one 64-bit word (bit-fields, least significant
 * first, the same layout for the host compiler and nvcc): a model of up to 16,777,214 ops in the
 * 48 bytes that 16-bit indices took. arkgen refuses, at the model's line, what does not fit. */
struct ark_task {
	uint64_t op : 24;       /* index into the model's ops (struct ark_model.ops), ARK_TASK_NO_OP: none */
	uint64_t opp : 24;      /* index into the op-params table */
	uint64_t tmpl : 8;      /* enum ark_tmpl */
	uint64_t sig_peer : 8;  /* 0: signal is this GPU's counter; g + 1: GPU g's (system-scope release) */
	uint16_t n_wait;   /* waits at waits[wait0 .. wait0 + n_wait) */
	uint16_t split;    /* MATMUL_PARTIAL: which slice of the workspace */
	uint32_t wait0;
	int32_t signal;    /* counter to add 1 to when done, -1: none */
	uint32_t m0, m1, n0, n1, k0, k1;
	uint32_t vcta;     /* vCTA id, for the trace */
};
#define ARK_TASK_MAX_WAITS 0xffffu /* n_wait */
static_assert(sizeof(struct ark_task) == 48, "struct ark_task is fetched per task: keep it 48 bytes");
/* The fields after the packed word where both compilers must put them (the tables are copied to
 * the device byte for byte). */
static_assert(offsetof(struct ark_task, n_wait) == 8 && offsetof(struct ark_task, wait0) == 12 &&
		      offsetof(struct ark_task, m0) == 20 && offsetof(struct ark_task, vcta) == 44,
	      "struct ark_task layout");

/* Wait until counter has received `need` of its `per_iter` signals of the current iteration:
 * (int32_t)(counters[counter] - (iter - 1) * per_iter - need) >= 0, iterations counted from 1.
 * Counters are monotonic and never reset, so wrap-around is harmless. */
struct ark_wait {
	uint32_t counter;
	uint32_t per_iter;
	uint32_t need;
	uint32_t sys;     /* 1: signalled from another GPU or by the DMA engine: acquire at system scope */
};

/* Flags of op params (struct ark_opp.flags): X(ID, bit). */
#define OPP_FLAG_LIST(X)                                                                                  \
	X(TRANSPOSE_B, 0) /* B is [N, K] */                                                               \
	X(BIAS, 1)        /* in[2] is a bias [N] */                                                       \
	X(SAME_SHAPE, 2)  /* elementwise: every input has out's shape (no broadcasting) */                \
	X(CHAIN_IN1, 3)   /* chain step: the chained value is the op's in[1] (in[0]: the operand) */      \
	X(PUSH, 4)        /* COPY: out is in peers[peer] (stores over NVLink/PCIe), in[0] here */        \
	X(MASK, 5)        /* REDUCE_MEAN: in[1] is a mask (mask_dtype); ATTENTION: a key mask [B, Skv] */    \
	X(CAUSAL, 6)      /* ATTENTION: query i sees key j iff j <= i + Skv - Sq */                          \
	X(RESIDUAL, 7)    /* MATMUL, REDUCE, EMBEDDING: in[3] [M, N] (out's dtype) added last (a fused add) */

enum ark_opp_flag {
#define X(id, bit) ARK_OPP_##id = 1u << (bit),
	OPP_FLAG_LIST(X)
#undef X
};
#define ARK_ACT_NONE 0xffffu /* struct ark_opp.act: no fused activation */

/* How an elementwise chain step reads its operand, the one rule for the chain template
 * (templates/op_elementwise.cuh) and the chains arkgen compiles with their steps (codegen/emit.c).
 * Out's element e reads the operand's element e where mod is 0 (same: every input of out's shape),
 * else (e / div) % mod, div and mod from the operand's element strides st over out's shape (0 where
 * broadcast): the trailing dimensions it is broadcast along make div, the ones it follows after them
 * mod. A thread reads it for a 16-byte vector of vec of out's elements as a vector (ARK_CHAIN_VEC),
 * as one element splat over the vector (ARK_CHAIN_SPLAT), or element by element (ARK_CHAIN_ELEMS;
 * also the tail of a range and unaligned ranges). */
#ifdef __CUDACC__
#define ARK_TASK_HD __host__ __device__
#else
#define ARK_TASK_HD
#endif
enum { ARK_CHAIN_VEC, ARK_CHAIN_SPLAT, ARK_CHAIN_ELEMS };
static inline ARK_TASK_HD int ark_chain_read(int same, int ndim, const int64_t *shape, const int64_t *st, uint32_t vec,
					     uint32_t *div, uint32_t *mod)
{
	*div = 1, *mod = 0;
	if (same || ndim <= 0)
		return ARK_CHAIN_VEC;
	int d = ndim - 1;
	*mod = 1;
	for (; d >= 0 && st[d] == 0; d--)
		*div *= (uint32_t)shape[d];
	for (; d >= 0 && (st[d] != 0 || shape[d] == 1); d--)
		*mod *= (uint32_t)shape[d];
	return *div == 1 ? (*mod % vec == 0 ? ARK_CHAIN_VEC : ARK_CHAIN_ELEMS)
	       : *div % vec == 0 ? ARK_CHAIN_SPLAT : ARK_CHAIN_ELEMS;
}

/* Device parameters of one op, as the templates see it. Offsets are bytes into the arena of the
 * GPU that runs the task; every tensor is a row-major 2-D view [M, N] (leading dims folded). */
struct ark_opp {
	uint16_t kind;    /* enum ark_op_kind */
	uint8_t dtype;    /* enum ark_dtype of inputs and output */
	uint8_t flags;    /* ARK_OPP_* */
	uint16_t act;     /* matmul, all_reduce: an op flagged ARK_OPF_ACTIVATION, applied after the bias; ARK_ACT_NONE: none */
	uint8_t mask_dtype; /* ARK_OPP_MASK: enum ark_dtype of the mask in[1] (it may differ from dtype) */
	uint8_t wdtype;   /* matmul: b's enum ark_dtype, embedding: the table's, dequantize: in[0]'s, when it is quantized (q4_1,
			   * q8_0; dtype is then a's, or the output's); 0 (fp16) otherwise */
	uint32_t splits;  /* matmul split-K slices (1: none); EW_CHAIN: number of steps, which are the
			   * params of the chain's ops, in order, in the entries right after this one */
	int32_t peer;     /* COPY: GPU holding in[0] (-1: this GPU), or out with ARK_OPP_PUSH; DMA: dst */
	uint64_t in[4];   /* inputs: matmul a, b, bias, residual (ARK_OPP_RESIDUAL); elementwise a, b; norms
			   * a, gamma, beta; embedding ids, table, -, residual (ARK_OPP_RESIDUAL) */
	uint64_t out;
	uint64_t ws;      /* matmul split-K workspace: fp32 [splits, M, N] */
	int64_t M, N, K;  /* matmul: out [M, N] = a [M, K] . b; others: out viewed as [M, N]; embedding:
			   * K = V, the table's rows; strided copy: K = the input element out's first reads */
	float f;          /* scale: factor; norms: eps */
	int32_t ndim;     /* elementwise with broadcasting: out shape and the inputs' element strides */
	int64_t oshape[4]; /* REDUCE_MEAN: {P, S, Q, D}, in[0] viewed as [P, S, Q, D], mean over S */
	int64_t istride[2][4]; /* 0 where an input is broadcast along that dimension; matmul: istride[0][0],
				* [0][1], [0][2] = elements from a row of b, a, out to the next where its rows
				* are padded, 0: packed */
	uint64_t pre_in;  /* matmul with a prologue: its other input (ARK_PRE_RMSNORM: gamma [K]) */
	uint16_t pre;     /* matmul: enum ark_pre, what its tiles apply to a's rows as they stage them */
	uint16_t unit;    /* STRIDED: elements one copy moves (0 or 1: one; 2 to 16 bytes' worth); oshape's
			   * last dimension, the other strides and K then count copies, the tasks' k0, k1
			   * elements */
	uint8_t boxed;    /* STRIDED: a transpose of the last two dimensions, copied by boxes of at most
			   * ARK_STRIDED_BOX x ARK_STRIDED_BOX elements through shared memory (a task's
			   * m0:m1, n0:n1: rows of out's 2-D view within one matrix, columns) */
};
/* A matmul's prologue (struct ark_opp.pre): an op fused into it on the side of a. */
enum ark_pre {
	ARK_PRE_NONE,    /* a as it is */
	ARK_PRE_RMSNORM, /* a = rmsnorm(in[0], gamma pre_in, eps f), rounded to the dtype: the tile reads x */
	ARK_PRE_SWIGLU,  /* a = swiglu(in[0], pre_in) = silu(x) * y, rounded to the dtype; x and y [M, K] at a's
			  * row stride: the tile reads both */
};
/* ROPE's params in those fields: in = {x, pos}, x and out viewed as [M, N] = [B*T, H*Dh], K = T (row m is at
 * position pos + m % T), f = base, oshape = {head_dim, rotary_dim, style (0: half, 1: interleaved), 0}.
 * DECODE_ATTENTION's: in = {q [T, H*Dh], k_cache, v_cache [L, Hkv*Dh]}, istride[0][0] = pos's offset, out
 * [T, H*Dh], M = T, N = H*Dh, K = L - T + 1 (positions 0..L-T are valid; others abort the iteration), f =
 * scale, oshape = {L, H, Hkv, Dh}, splits = S, istride[0][1] = keys per split, istride[0][2] = 1: every task
 * (one head's rows, S = 1, 16-bit) runs on the attention tile; with S > 1, ws = fp32
 * [H*T, S*(Dh + 2)]: row kvh*T*G + t*G + g (G = H/Hkv, query head kvh*G + g), columns s*(Dh+2): split s's
 * unnormalised output, then its running max (base 2) and sum.
 * ARGMAX's: in = {x [M, N]}, dtype x's, out int32 [M], splits = S column blocks; with S > 1, ws = fp32
 * [M, 2*S]: per split its largest value and its index (the int32's bits; -1: every value NaN).
 * DEQUANTIZE's: in = {w in blocks}, wdtype = w's dtype, dtype = out's, out [M, N] (w viewed as M rows of N
 * elements, N a multiple of 32). */
/* ATTENTION's params in those fields: in = {q [B, Sq, H*Dh], k, v [B, Skv, Hkv*Dh]}, out [B, Sq, H*Dh],
 * M = Sq, N = H*Dh, K = Skv, f = scale, oshape = {B, H, Hkv, Dh}, flags ARK_OPP_CAUSAL and
 * ARK_OPP_MASK; with the mask: ws = its offset ([B, Skv]) and istride[0][0] = its enum ark_dtype.
 * ASSIGN's: in = {the state, assign's value}, out = the state [M, N]; advance: K = by.
 * KV_APPEND's: in = {the cache, x [T, N], pos (int32 [1])}, out = the cache [M = L, N], K = L - T + 1
 * (the positions that fit). */

#endif
