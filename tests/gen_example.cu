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

/* Arena offsets of the tensors, bytes. */
#define ARK_OFF_x 0u
#define ARK_OFF_h 65536u
#define ARK_OFF_y 131072u

static const struct ark_tensor tensors[] = {
	/* name dtype     role                 ndim GPU shape       offset     bytes */
	{"x",   ARK_FP16, ARK_ROLE_INPUT,      2,   0,  {128, 256}, ARK_OFF_x, 65536u}, /* 0 */
	{"h",   ARK_FP16, ARK_ROLE_ACTIVATION, 2,   0,  {128, 256}, ARK_OFF_h, 65536u}, /* 1 */
	{"y",   ARK_FP16, ARK_ROLE_OUTPUT,     2,   0,  {128, 256}, ARK_OFF_y, 65536u}, /* 2 */
};

static const struct ark_op ops[] = {
	/* name kind         n_in n_out GPU transpose_b transport    axis in      out  factor eps   line */
	{"h",   ARK_OP_RELU, 1,   1,    0,  0,          ARK_TR_AUTO, 0,   {0},    {1}, 1.0f,  0.0f, 3}, /* 0: h = relu(x) */
	{"y",   ARK_OP_ADD,  2,   1,    0,  0,          ARK_TR_AUTO, 0,   {1, 0}, {2}, 1.0f,  0.0f, 4}, /* 1: y = add(h, x) */
};

/* Counters: relu tile k signals ARK_CTR(k) (one signal per iteration). */
static const struct ark_task tasks_g0[] = {
	/* op opp tmpl               sig_peer n_wait split wait0 signal      m0   m1   n0 n1   k0 k1 vcta */
	/* SM 0 */
	{  0, 0,  ARK_T_ELEMENTWISE, 0,        0,     0,    0,    ARK_CTR(0),   0,  16, 0, 256, 0, 0, 0},  /* h rows 0:16 */
	{  0, 0,  ARK_T_ELEMENTWISE, 0,        0,     0,    0,    ARK_CTR(4),  64,  80, 0, 256, 0, 0, 4},  /* h rows 64:80 */
	{  1, 1,  ARK_T_ELEMENTWISE, 0,        2,     0,    2,    -1,          32,  64, 0, 256, 0, 0, 9},  /* y rows 32:64 */
	/* SM 1 */
	{  0, 0,  ARK_T_ELEMENTWISE, 0,        0,     0,    0,    ARK_CTR(1),  16,  32, 0, 256, 0, 0, 1},  /* h rows 16:32 */
	{  0, 0,  ARK_T_ELEMENTWISE, 0,        0,     0,    0,    ARK_CTR(5),  80,  96, 0, 256, 0, 0, 5},  /* h rows 80:96 */
	{  1, 1,  ARK_T_ELEMENTWISE, 0,        2,     0,    4,    -1,          64,  96, 0, 256, 0, 0, 10}, /* y rows 64:96 */
	/* SM 2 */
	{  0, 0,  ARK_T_ELEMENTWISE, 0,        0,     0,    0,    ARK_CTR(2),  32,  48, 0, 256, 0, 0, 2},  /* h rows 32:48 */
	{  0, 0,  ARK_T_ELEMENTWISE, 0,        0,     0,    0,    ARK_CTR(6),  96, 112, 0, 256, 0, 0, 6},  /* h rows 96:112 */
	{  1, 1,  ARK_T_ELEMENTWISE, 0,        2,     0,    6,    -1,          96, 128, 0, 256, 0, 0, 11}, /* y rows 96:128 */
	/* SM 3 */
	{  0, 0,  ARK_T_ELEMENTWISE, 0,        0,     0,    0,    ARK_CTR(3),  48,  64, 0, 256, 0, 0, 3},  /* h rows 48:64 */
	{  0, 0,  ARK_T_ELEMENTWISE, 0,        0,     0,    0,    ARK_CTR(7), 112, 128, 0, 256, 0, 0, 7},  /* h rows 112:128 */
	{  1, 1,  ARK_T_ELEMENTWISE, 0,        2,     0,    0,    -1,           0,  32, 0, 256, 0, 0, 8},  /* y rows 0:32 */
};
static const uint32_t sm_begin_g0[ARK_SMS + 1] = {0, 3, 6, 9, 12};

static const struct ark_wait waits_g0[] = {
	/* counter   per_iter need */
	{ARK_CTR(0), 1,       1}, {ARK_CTR(1), 1, 1}, /* y rows 0:32 */
	{ARK_CTR(2), 1,       1}, {ARK_CTR(3), 1, 1}, /* y rows 32:64 */
	{ARK_CTR(4), 1,       1}, {ARK_CTR(5), 1, 1}, /* y rows 64:96 */
	{ARK_CTR(6), 1,       1}, {ARK_CTR(7), 1, 1}, /* y rows 96:128 */
};

static const struct ark_opp opp_g0[] = {
	/* 0: h = relu(x) */
	{.kind = ARK_OP_RELU, .dtype = ARK_FP16, .flags = ARK_OPP_SAME_SHAPE, .act = ARK_ACT_NONE, .splits = 1,
	 .peer = -1, .in = {ARK_OFF_x}, .out = ARK_OFF_h, .M = 128, .N = 256, .ndim = 2, .oshape = {128, 256},
	 .istride = {{256, 1}}},
	/* 1: y = h + x */
	{.kind = ARK_OP_ADD, .dtype = ARK_FP16, .flags = ARK_OPP_SAME_SHAPE, .act = ARK_ACT_NONE, .splits = 1,
	 .peer = -1, .in = {ARK_OFF_h, ARK_OFF_x}, .out = ARK_OFF_y, .M = 128, .N = 256, .ndim = 2,
	 .oshape = {128, 256}, .istride = {{256, 1}, {256, 1}}},
};

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
