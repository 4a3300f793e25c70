/* ark_ops.h: the op catalog, written once. Every table of ops (enum, names, arity, allowed
 * attributes, CPU reference, device templates) is derived from OP_LIST. Plain C, host and device. */
#ifndef ARK_OPS_H
#define ARK_OPS_H

/* Attributes a model file may give an op: X(ID, "name", type) with type one of BOOL, FLOAT, INT, STRING. */
#define ATTR_LIST(X)                         \
	X(TRANSPOSE_B, "transpose_b", BOOL)  \
	X(FACTOR, "factor", FLOAT)           \
	X(EPS, "eps", FLOAT)                 \
	X(AXIS, "axis", INT)                 \
	X(TRANSPORT, "transport", STRING)

enum ark_attr {
#define X(id, name, type) ARK_ATTR_##id,
	ATTR_LIST(X)
#undef X
	ARK_ATTR__COUNT
};
#define ARK_A(id) (1u << ARK_ATTR_##id)

/* X(ID, "name", min inputs, max inputs, outputs (0: one per input), allowed attributes, flags)
 * flags: ARK_OPF_COMM for communication ops (inputs may live on other GPUs). */
#define ARK_OPF_COMM 1u
#define ARK_OPF_ELEMENTWISE 2u
#define OP_LIST(X)                                                                              \
	X(MATMUL, "matmul", 2, 3, 1, ARK_A(TRANSPOSE_B), 0)                                      \
	X(ADD, "add", 2, 2, 1, 0, ARK_OPF_ELEMENTWISE)                                           \
	X(MUL, "mul", 2, 2, 1, 0, ARK_OPF_ELEMENTWISE)                                           \
	X(SCALE, "scale", 1, 1, 1, ARK_A(FACTOR), ARK_OPF_ELEMENTWISE)                           \
	X(RELU, "relu", 1, 1, 1, 0, ARK_OPF_ELEMENTWISE)                                         \
	X(GELU, "gelu", 1, 1, 1, 0, ARK_OPF_ELEMENTWISE)                                         \
	X(SILU, "silu", 1, 1, 1, 0, ARK_OPF_ELEMENTWISE)                                         \
	X(SWIGLU, "swiglu", 2, 2, 1, 0, ARK_OPF_ELEMENTWISE)                                     \
	X(SOFTMAX, "softmax", 1, 1, 1, 0, 0)                                                     \
	X(LAYERNORM, "layernorm", 3, 3, 1, ARK_A(EPS), 0)                                        \
	X(RMSNORM, "rmsnorm", 2, 2, 1, ARK_A(EPS), 0)                                            \
	X(COPY, "copy", 1, 1, 1, ARK_A(TRANSPORT), ARK_OPF_COMM)                                 \
	X(ALL_REDUCE, "all_reduce", 2, ARK_MAX_GPUS, 0, ARK_A(TRANSPORT), ARK_OPF_COMM)          \
	X(ALL_GATHER, "all_gather", 2, ARK_MAX_GPUS, 0, ARK_A(TRANSPORT) | ARK_A(AXIS), ARK_OPF_COMM)

#define ARK_MAX_GPUS 8
#define ARK_MAX_DIMS 4
#define ARK_MAX_IO ARK_MAX_GPUS /* most inputs or outputs of one op */

enum ark_op_kind {
#define X(id, name, min_in, max_in, n_out, attrs, flags) ARK_OP_##id,
	OP_LIST(X)
#undef X
	ARK_OP__COUNT
};

enum ark_dtype { ARK_FP16, ARK_BF16, ARK_FP32, ARK_DTYPE__COUNT };
enum ark_role { ARK_ROLE_ACTIVATION, ARK_ROLE_INPUT, ARK_ROLE_WEIGHT, ARK_ROLE_OUTPUT, ARK_ROLE_INTERNAL };
enum ark_transport { ARK_TR_AUTO, ARK_TR_DMA, ARK_TR_P2P };

#endif
