// gen_example.cu: a hand-written file in the format arkgen emits, for y = relu(x) + x on 4 SMs
// (fp16, x [128, 256]); the fixture of tests/gpu_loop.cu, and a binary of its own with the driver:
//   nvcc $(build/arkgen --nvcc-flags) tests/gen_example.cu -o example
//
// Schedule: relu in 8 tiles of 16 rows, add in 4 tiles of 32 rows. Add tile j needs relu tiles 2j
// and 2j + 1, which run on other SMs, so every add waits on two counters signalled from elsewhere.
//   SM 0: relu 0, relu 4, add 1      SM 1: relu 1, relu 5, add 2
//   SM 2: relu 2, relu 6, add 3      SM 3: relu 3, relu 7, add 0
#define ARK_THREADS 256
#define ARK_SMEM_BYTES 131072
#define ARK_SMS 4
#define ARK_TILES_FP16 1
#define ARK_TILES_BF16 0
#define ARK_TILES_FP32 0
#include "ark_tiles.cuh"
#include "ark_loop.cuh"

// Arena of GPU 0: x at 0, h at 65536, y at 131072 (each [128, 256] fp16, 65536 bytes).
static const struct ark_tensor tensors[] = {
	{"x", ARK_FP16, ARK_ROLE_INPUT, 2, 0, {128, 256, 0, 0}, 0, 65536},
	{"h", ARK_FP16, ARK_ROLE_ACTIVATION, 2, 0, {128, 256, 0, 0}, 65536, 65536},
	{"y", ARK_FP16, ARK_ROLE_OUTPUT, 2, 0, {128, 256, 0, 0}, 131072, 65536},
};

static const struct ark_op ops[] = {
	// name, kind, n_in, n_out, gpu, transpose_b, transport, axis, in, out, factor, eps, line
	{"h", ARK_OP_RELU, 1, 1, 0, 0, ARK_TR_AUTO, 0, {0}, {1}, 1.0f, 0.0f, 3},
	{"y", ARK_OP_ADD, 2, 1, 0, 0, ARK_TR_AUTO, 0, {1, 0}, {2}, 1.0f, 0.0f, 4},
};

// Counters: relu tile k signals ARK_CTR__FIRST + k (one signal per iteration).
#define C(k) (ARK_CTR__FIRST + (k))

static const struct ark_task tasks_g0[] = {
	// opp, tmpl, n_wait, wait0, signal, split, m0, m1, n0, n1, k0, k1, vcta
	// SM 0
	{0, ARK_T_ELEMENTWISE, 0, 0, C(0), 0, 0, 16, 0, 256, 0, 0, 0},     // h rows 0:16
	{0, ARK_T_ELEMENTWISE, 0, 0, C(4), 0, 64, 80, 0, 256, 0, 0, 4},    // h rows 64:80
	{1, ARK_T_ELEMENTWISE, 2, 2, -1, 0, 32, 64, 0, 256, 0, 0, 9},      // y rows 32:64
	// SM 1
	{0, ARK_T_ELEMENTWISE, 0, 0, C(1), 0, 16, 32, 0, 256, 0, 0, 1},    // h rows 16:32
	{0, ARK_T_ELEMENTWISE, 0, 0, C(5), 0, 80, 96, 0, 256, 0, 0, 5},    // h rows 80:96
	{1, ARK_T_ELEMENTWISE, 2, 4, -1, 0, 64, 96, 0, 256, 0, 0, 10},     // y rows 64:96
	// SM 2
	{0, ARK_T_ELEMENTWISE, 0, 0, C(2), 0, 32, 48, 0, 256, 0, 0, 2},    // h rows 32:48
	{0, ARK_T_ELEMENTWISE, 0, 0, C(6), 0, 96, 112, 0, 256, 0, 0, 6},   // h rows 96:112
	{1, ARK_T_ELEMENTWISE, 2, 6, -1, 0, 96, 128, 0, 256, 0, 0, 11},    // y rows 96:128
	// SM 3
	{0, ARK_T_ELEMENTWISE, 0, 0, C(3), 0, 48, 64, 0, 256, 0, 0, 3},    // h rows 48:64
	{0, ARK_T_ELEMENTWISE, 0, 0, C(7), 0, 112, 128, 0, 256, 0, 0, 7},  // h rows 112:128
	{1, ARK_T_ELEMENTWISE, 2, 0, -1, 0, 0, 32, 0, 256, 0, 0, 8},       // y rows 0:32
};
static const uint32_t sm_begin_g0[ARK_SMS + 1] = {0, 3, 6, 9, 12};

static const struct ark_wait waits_g0[] = {
	// counter, per_iter, need
	{C(0), 1, 1}, {C(1), 1, 1}, // y rows 0:32
	{C(2), 1, 1}, {C(3), 1, 1}, // y rows 32:64
	{C(4), 1, 1}, {C(5), 1, 1}, // y rows 64:96
	{C(6), 1, 1}, {C(7), 1, 1}, // y rows 96:128
};

static const struct ark_opp opp_g0[] = {
	// kind, dtype, flags, act, pad, splits, in, out, ws, M, N, K, f, ndim, oshape, istride, peer
	{ARK_OP_RELU, ARK_FP16, ARK_OPP_SAME_SHAPE, ARK_ACT_NONE, 0, 1, {0, 0, 0}, 65536, 0, 128, 256, 0,
	 0.0f, 2, {128, 256, 0, 0}, {{256, 1, 0, 0}, {0, 0, 0, 0}}, -1},
	{ARK_OP_ADD, ARK_FP16, ARK_OPP_SAME_SHAPE, ARK_ACT_NONE, 0, 1, {65536, 0, 0}, 131072, 0, 128, 256, 0,
	 0.0f, 2, {128, 256, 0, 0}, {{256, 1, 0, 0}, {256, 1, 0, 0}}, -1},
};
#undef C

ARK_DEFINE_LOOP();

extern "C" const struct ark_model ark_model_def = {
	.name = "example",
	.source = "tests/gen_example.cu",
	.options = "hand-written",
	.gpus = 1,
	.sms = ARK_SMS,
	.threads = ARK_THREADS,
	.smem_bytes = ARK_SMEM_BYTES,
	.predicted_us = 4.0,
	.n_tensors = 3,
	.tensors = tensors,
	.n_ops = 2,
	.ops = ops,
	.tables = {{
		.arena_bytes = 196608,
		.n_tasks = 12,
		.tasks = tasks_g0,
		.sm_begin = sm_begin_g0,
		.n_waits = 8,
		.waits = waits_g0,
		.n_opp = 2,
		.opp = opp_g0,
		.n_counters = 8,
		.n_done = ARK_SMS,
	}},
	.launch = ark_launch,
	.kernel = (const void *)ark_loop_kernel,
};
