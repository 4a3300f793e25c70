/* ark_ops.h: the op catalog, written once. Every table of ops (enum, names, arity, allowed
 * attributes, CPU reference) is derived from OP_ROWS. Plain C, host and device. */
#ifndef ARK_OPS_H
#define ARK_OPS_H

/* Attributes a model file may give an op: X(ID, "name", type) with type one of BOOL, FLOAT, INT, STRING,
 * INTS (a list of at most ARK_MAX_DIMS integers). */
#define ATTR_LIST(X)                         \
	X(TRANSPOSE_B, "transpose_b", BOOL)  \
	X(FACTOR, "factor", FLOAT)           \
	X(EPS, "eps", FLOAT)                 \
	X(AXIS, "axis", INT)                 \
	X(TRANSPORT, "transport", STRING)    \
	X(APPROXIMATE, "approximate", STRING)  \
	X(HEADS, "heads", INT)               \
	X(KV_HEADS, "kv_heads", INT)         \
	X(SCALE, "scale", FLOAT)             \
	X(CAUSAL, "causal", BOOL)            \
	X(SHAPE, "shape", INTS)              \
	X(START, "start", INT)               \
	X(END, "end", INT)                   \
	X(DIMS, "dims", INTS)                \
	X(COPY, "copy", BOOL)                \
	X(BY, "by", INT)                     \
	X(HEAD_DIM, "head_dim", INT)         \
	X(BASE, "base", FLOAT)               \
	X(ROTARY_DIM, "rotary_dim", INT)     \
	X(STYLE, "style", STRING)

enum ark_attr {
#define X(id, name, type) ARK_ATTR_##id,
	ATTR_LIST(X)
#undef X
	ARK_ATTR__COUNT
};
#define ARK_A(id) (1u << ARK_ATTR_##id)

/* The op catalog, one row per op: R(X, ID, "name", min inputs, max inputs, outputs (0: one per
 * input), allowed attributes, flags, CPU reference).
 * flags: ARK_OPF_COMM for communication ops (inputs may live on other GPUs), ARK_OPF_ELEMENTWISE,
 * ARK_OPF_ACTIVATION for unary ops that may run in a matmul's epilogue or an all_reduce's sums,
 * ARK_OPF_VARIANT for a row that has the name of an earlier one: the same op of the model format with
 * another function, which an attribute picks (gelu with approximate = "tanh"); a model file names the
 * first row, and cfg.c moves the op to the variant when the attribute says so.
 * ARK_OPF_VIEW for the views (codegen/view.c).
 * ARK_OPF_STATE for the ops that update a state tensor in place (in[0]: assign, advance, kv_append):
 * they run after every other reader of the state's old value (codegen/graph.c, order_ops).
 * Outputs ARK_NO_OUT: the op has none (assign, advance; `out` may be left out or be []).
 * CPU reference: the function of runtime/ref.c that computes the op on host buffers.
 * OP_CATALOG(X) expands every column, X(ID, "name", min_in, max_in, n_out, attrs, flags, ref);
 * OP_LIST(X) all but the reference, for the tables that need none. */
#define ARK_OPF_COMM 1u
#define ARK_OPF_ELEMENTWISE 2u
#define ARK_OPF_ACTIVATION 4u
#define ARK_OPF_EW_ACT (ARK_OPF_ELEMENTWISE | ARK_OPF_ACTIVATION)
#define ARK_OPF_VARIANT 8u
#define ARK_OPF_VIEW 16u /* reshape, slice, transpose, concat: the output aliases the input's bytes (or, for
			 * concat, the inputs alias the output's) where the layout allows; no vCTA then */
#define ARK_OPF_STATE 32u
#define ARK_NO_OUT (-1)
#define OP_ROWS(R, X)                                                                                          \
	R(X, MATMUL, "matmul", 2, 3, 1, ARK_A(TRANSPOSE_B), 0, ref_matmul)                                      \
	R(X, ADD, "add", 2, 2, 1, 0, ARK_OPF_ELEMENTWISE, ref_add)                                              \
	R(X, MUL, "mul", 2, 2, 1, 0, ARK_OPF_ELEMENTWISE, ref_mul)                                              \
	R(X, SCALE, "scale", 1, 1, 1, ARK_A(FACTOR), ARK_OPF_ELEMENTWISE, ref_scale)                            \
	R(X, RELU, "relu", 1, 1, 1, 0, ARK_OPF_EW_ACT, ref_relu)                                                \
	R(X, GELU, "gelu", 1, 1, 1, ARK_A(APPROXIMATE), ARK_OPF_EW_ACT, ref_gelu)                                                \
	R(X, SILU, "silu", 1, 1, 1, 0, ARK_OPF_EW_ACT, ref_silu)                                                \
	R(X, SIGMOID, "sigmoid", 1, 1, 1, 0, ARK_OPF_EW_ACT, ref_sigmoid)                                       \
	R(X, SWIGLU, "swiglu", 2, 2, 1, 0, ARK_OPF_ELEMENTWISE, ref_swiglu)                                     \
	R(X, SOFTMAX, "softmax", 1, 1, 1, 0, 0, ref_softmax)                                                    \
	R(X, LAYERNORM, "layernorm", 3, 3, 1, ARK_A(EPS), 0, ref_layernorm)                                     \
	R(X, RMSNORM, "rmsnorm", 2, 2, 1, ARK_A(EPS), 0, ref_rmsnorm)                                           \
	R(X, COPY, "copy", 1, 1, 1, ARK_A(TRANSPORT), ARK_OPF_COMM, ref_copy)                                   \
	R(X, ALL_REDUCE, "all_reduce", 2, ARK_MAX_GPUS, 0, ARK_A(TRANSPORT), ARK_OPF_COMM, ref_all_reduce)      \
	R(X, ALL_GATHER, "all_gather", 2, ARK_MAX_GPUS, 0, ARK_A(TRANSPORT) | ARK_A(AXIS), ARK_OPF_COMM,       \
	  ref_all_gather)                                                                                       \
	R(X, TANH, "tanh", 1, 1, 1, 0, ARK_OPF_EW_ACT, ref_tanh)                                                \
	R(X, REDUCE_MEAN, "reduce_mean", 1, 2, 1, ARK_A(AXIS), 0, ref_reduce_mean)                              \
	R(X, L2_NORMALIZE, "l2_normalize", 1, 1, 1, ARK_A(EPS), 0, ref_l2_normalize)                           \
	R(X, GELU_TANH, "gelu", 1, 1, 1, ARK_A(APPROXIMATE), ARK_OPF_EW_ACT | ARK_OPF_VARIANT, ref_gelu_tanh) \
	R(X, ATTENTION, "attention", 3, 4, 1, ARK_A(HEADS) | ARK_A(KV_HEADS) | ARK_A(SCALE) | ARK_A(CAUSAL), 0, \
	  ref_attention)                                                                                        \
	R(X, EMBEDDING, "embedding", 2, 2, 1, 0, 0, ref_embedding)                                              \
	R(X, RESHAPE, "reshape", 1, 1, 1, ARK_A(SHAPE), ARK_OPF_VIEW, ref_view)                                 \
	R(X, SLICE, "slice", 1, 1, 1, ARK_A(AXIS) | ARK_A(START) | ARK_A(END) | ARK_A(COPY), ARK_OPF_VIEW,     \
	  ref_slice)                                                                                           \
	R(X, TRANSPOSE, "transpose", 1, 1, 1, ARK_A(DIMS) | ARK_A(COPY), ARK_OPF_VIEW, ref_transpose)           \
	R(X, CONCAT, "concat", 1, ARK_MAX_IO, 1, ARK_A(AXIS) | ARK_A(COPY), ARK_OPF_VIEW, ref_concat)          \
	R(X, ASSIGN, "assign", 2, 2, ARK_NO_OUT, 0, ARK_OPF_STATE, ref_assign)                                  \
	R(X, ADVANCE, "advance", 1, 1, ARK_NO_OUT, ARK_A(BY), ARK_OPF_STATE, ref_advance)                       \
	R(X, KV_APPEND, "kv_append", 3, 3, 1, 0, ARK_OPF_STATE, ref_kv_append)                                  \
	R(X, ROPE, "rope", 2, 2, 1, ARK_A(HEAD_DIM) | ARK_A(BASE) | ARK_A(ROTARY_DIM) | ARK_A(STYLE), 0, ref_rope) \
	R(X, DECODE_ATTENTION, "decode_attention", 4, 4, 1, ARK_A(HEADS) | ARK_A(KV_HEADS) | ARK_A(SCALE), 0,  \
	  ref_decode_attention)                                                                                 \
	R(X, ARGMAX, "argmax", 1, 1, 1, 0, 0, ref_argmax)                                                      \
	R(X, DEQUANTIZE, "dequantize", 1, 1, 1, 0, 0, ref_dequantize)

#define ARK_OP_ALL_(X, ...) X(__VA_ARGS__)
#define ARK_OP_NO_REF_(X, id, name, min_in, max_in, n_out, attrs, flags, ref) \
	X(id, name, min_in, max_in, n_out, attrs, flags)
#define OP_CATALOG(X) OP_ROWS(ARK_OP_ALL_, X)
#define OP_LIST(X) OP_ROWS(ARK_OP_NO_REF_, X)

#define ARK_MAX_GPUS 8
#define ARK_MAX_DIMS 4
#define ARK_MAX_IO ARK_MAX_GPUS /* most inputs or outputs of one op */

enum ark_op_kind {
#define X(id, name, min_in, max_in, n_out, attrs, flags) ARK_OP_##id,
	OP_LIST(X)
#undef X
	ARK_OP__COUNT
};

/* Element types, tensor roles and transports: X(ID, "name"). */
/* int32 (token ids, masks, positions) only for inputs, weights and state, and only where an op reads
 * ids, masks or positions (codegen/graph.c: int32_ok); every computed tensor has one of the first
 * ARK_FLOAT_DTYPES dtypes but argmax's output (int32 indices). q4_1 and q8_0: GGUF's block-quantized
 * weights (blocks of 32 along the last axis; ark_model.h has their layouts), for weights only, read by
 * matmul (b, transpose_b), embedding (the table) and dequantize (which makes an fp16, bf16 or fp32 copy). */
#define DTYPE_LIST(X) X(FP16, "fp16") X(BF16, "bf16") X(FP32, "fp32") X(INT32, "int32") X(Q4_1, "q4_1") X(Q8_0, "q8_0")
#define ARK_FLOAT_DTYPES 3 /* fp16, bf16, fp32: the dtypes ops compute in (templates, calibration) */
#define ROLE_LIST(X) \
	X(ACTIVATION, "activation") X(INPUT, "input") X(WEIGHT, "weight") X(OUTPUT, "output") X(INTERNAL, "internal") \
	X(STATE, "state")
#define TRANSPORT_LIST(X) X(AUTO, "auto") X(DMA, "dma") X(P2P, "p2p")

enum ark_dtype {
#define X(id, name) ARK_##id,
	DTYPE_LIST(X)
#undef X
	ARK_DTYPE__COUNT
};
enum ark_role {
#define X(id, name) ARK_ROLE_##id,
	ROLE_LIST(X)
#undef X
	ARK_ROLE__COUNT
};
enum ark_transport {
#define X(id, name) ARK_TR_##id,
	TRANSPORT_LIST(X)
#undef X
	ARK_TR__COUNT
};

#endif
