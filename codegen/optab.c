/* optab.c: the name and arity tables of ops, attributes, dtypes, roles and transports, derived from
 * OP_LIST and ATTR_LIST in runtime/ark_ops.h so they can never drift apart from the enums. */
#include "graph.h"

const struct op_info op_info[ARK_OP__COUNT] = {
#define X(id, nm, mn, mx, no, at, fl) [ARK_OP_##id] = { nm, mn, mx, no, at, fl },
	OP_LIST(X)
#undef X
};

const char *const attr_name[ARK_ATTR__COUNT] = {
#define X(id, nm, type) [ARK_ATTR_##id] = nm,
	ATTR_LIST(X)
#undef X
};

const char *const dtype_name[ARK_DTYPE__COUNT] = {
	[ARK_FP16] = "fp16",
	[ARK_BF16] = "bf16",
	[ARK_FP32] = "fp32",
	[ARK_INT32] = "int32",
	[ARK_Q4_1] = "q4_1",
	[ARK_Q8_0] = "q8_0",
};

const char *const role_name[ARK_ROLE__COUNT] = {
	[ARK_ROLE_ACTIVATION] = "activation",
	[ARK_ROLE_INPUT] = "input",
	[ARK_ROLE_WEIGHT] = "weight",
	[ARK_ROLE_OUTPUT] = "output",
	[ARK_ROLE_INTERNAL] = "internal",
	[ARK_ROLE_STATE] = "state",
};

const char *const transport_name[3] = {
	[ARK_TR_AUTO] = "auto",
	[ARK_TR_DMA] = "dma",
	[ARK_TR_P2P] = "p2p",
};

#define X(id, nm, mn, mx, no, at, fl) +1
_Static_assert(0 OP_LIST(X) == ARK_OP__COUNT, "op_info must have one entry per op");
#undef X
#define X(id, nm, type) +1
_Static_assert(0 ATTR_LIST(X) == ARK_ATTR__COUNT, "attr_name must have one entry per attribute");
_Static_assert(ARK_ATTR__COUNT <= 32, "attribute masks are 32-bit");
#undef X
_Static_assert(ARK_ROLE__COUNT == sizeof role_name / sizeof role_name[0], "one name per role");
_Static_assert(ARK_TR_P2P + 1 == sizeof transport_name / sizeof transport_name[0], "one name per transport");
_Static_assert(ARK_DTYPE__COUNT == 6, "one name per dtype");
#define X(id, nm, mn, mx, no, at, fl) && (mn) >= 1 && (mn) <= (mx) && (mx) <= ARK_MAX_IO
_Static_assert(1 OP_LIST(X), "op arity must be within 1..ARK_MAX_IO");
#undef X
