/* test_frontend.c: the model-file reader and graph checks: parsing, IR, shape/dtype/gpu inference, order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "codegen/diag.h"
#include "harness.h"

/* Parse and check model text through the compile API, stopping after the check; 0 on success. The
 * test owns the graph; messages in harness_diag(). */
static int load(struct graph *g, const char *text)
{
	struct arkgen_options opt = arkgen_options_default();
	struct arkgen_result r;
	opt.until = ARKGEN_PASS_CHECK;
	int rc = harness_compile(text, &opt, &r);
	*g = r.graph;
	memset(&r.graph, 0, sizeof r.graph);
	arkgen_result_free(&r);
	return rc;
}

static const struct tensor *T(const struct graph *g, const char *name)
{
	int i = graph_find_tensor(g, name);
	assert_true(i >= 0);
	return &g->tensors[i];
}

static const struct op *O(const struct graph *g, const char *name)
{
	int i = graph_find_op(g, name);
	assert_true(i >= 0);
	return &g->ops[i];
}

static void assert_shape(const struct tensor *t, int ndim, const int64_t *want)
{
	char a[96], b[96];
	shape_str(a, sizeof a, t->ndim, t->shape);
	shape_str(b, sizeof b, ndim, want);
	assert_string_equal(a, b);
}
#define SHAPE(t, ...) assert_shape((t), sizeof((int64_t[]){ __VA_ARGS__ }) / sizeof(int64_t), (int64_t[]){ __VA_ARGS__ })

#define HEAD "version = 1; name = \"t\";\n"

static void test_parse_mlp(void **state)
{
	struct graph g;
	harness_capture_begin();
	assert_int_equal(cfg_load(&g, "models/mlp.cfg"), 0);
	harness_capture_end();
	assert_string_equal(g.file, "models/mlp.cfg");
	assert_string_equal(g.name, "mlp");
	assert_int_equal(g.dtype, ARK_FP16);
	assert_int_equal(g.gpus, 1);
	assert_int_equal(g.n_ops, 3);
	assert_int_equal(g.n_tensors, 7); /* 5 declared + h and a */
	const struct tensor *x = T(&g, "x"), *y = T(&g, "y"), *h = T(&g, "h");
	assert_true(x->declared && x->shape_given && x->role_given);
	assert_int_equal(x->role, ARK_ROLE_INPUT);
	SHAPE(x, 8, 1024);
	assert_int_equal(x->line, 7);
	assert_int_equal(T(&g, "b1")->role, ARK_ROLE_WEIGHT);
	assert_int_equal(y->role, ARK_ROLE_OUTPUT);
	assert_false(y->shape_given);
	assert_false(h->declared);
	assert_int_equal(h->role, ARK_ROLE_ACTIVATION);
	assert_int_equal(h->line, 15); /* the line of fc1, which produces it */
	const struct op *fc1 = O(&g, "fc1");
	assert_int_equal(fc1->kind, ARK_OP_MATMUL);
	assert_int_equal(fc1->line, 15);
	assert_int_equal(fc1->n_in, 3);
	assert_int_equal(fc1->n_out, 1);
	assert_string_equal(g.tensors[fc1->in[2]].name, "b1");
	assert_string_equal(g.tensors[fc1->out[0]].name, "h");
	assert_int_equal(graph_find_op(&g, "nope"), -1);
	assert_int_equal(graph_find_tensor(&g, "nope"), -1);

	harness_capture_begin();
	assert_int_equal(graph_check(&g), 0);
	harness_capture_end();
	assert_string_equal(harness_diag(), "");
	SHAPE(h, 8, 4096);
	SHAPE(y, 8, 1024);
	assert_int_equal(y->producer, graph_find_op(&g, "fc2"));
	assert_int_equal(T(&g, "a")->n_readers, 1);
	assert_int_equal(tensor_bytes(T(&g, "w1")), 1024 * 4096 * 2);
	/* checking twice gives the same result */
	harness_capture_begin();
	assert_int_equal(graph_check(&g), 0);
	harness_capture_end();
	SHAPE(h, 8, 4096);
	assert_int_equal(h->n_readers, 1);
	graph_free(&g);
	assert_null(g.tensors);
}

static void test_attributes_and_defaults(void **state)
{
	struct graph g;
	assert_int_equal(load(&g, HEAD "dtype = \"bf16\"; gpus = 2;\n"
				  "tensors = ( { name = \"x\"; shape = [4, 16]; role = \"input\"; },\n"
				  "  { name = \"w\"; shape = [8, 16]; role = \"weight\"; },\n"
				  "  { name = \"gm\"; shape = [8]; role = \"weight\"; },\n"
				  "  { name = \"bt\"; shape = [8]; role = \"weight\"; } );\n"
				  "ops = ( { name = \"m\"; op = \"matmul\"; in = [\"x\", \"w\"]; out = \"h\"; transpose_b = true; },\n"
				  "  { name = \"s\"; op = \"scale\"; in = [\"h\"]; out = \"s1\"; factor = 3; },\n"
				  "  { name = \"ln\"; op = \"layernorm\"; in = [\"s1\", \"gm\", \"bt\"]; out = \"l\"; },\n"
				  "  { name = \"rn\"; op = \"rmsnorm\"; in = [\"l\", \"gm\"]; out = \"r\"; eps = 0.001; },\n"
				  "  { name = \"c\"; op = \"copy\"; in = [\"r\"]; out = \"c1\"; gpu = 1; transport = \"p2p\"; },\n"
				  "  { name = \"c2\"; op = \"copy\"; in = [\"r\"]; out = \"c2\"; gpu = 1; } );\n"),
			 0);
	assert_int_equal(g.dtype, ARK_BF16);
	assert_int_equal(g.gpus, 2);
	assert_int_equal(O(&g, "m")->transpose_b, 1);
	assert_true(O(&g, "m")->attrs_given & ARK_A(TRANSPOSE_B));
	assert_true(O(&g, "s")->factor == 3.0);
	assert_true(O(&g, "ln")->eps == 1e-5);
	assert_false(O(&g, "ln")->attrs_given & ARK_A(EPS));
	assert_true(O(&g, "rn")->eps == 0.001);
	assert_int_equal(O(&g, "c")->transport, ARK_TR_P2P);
	assert_int_equal(O(&g, "c2")->transport, ARK_TR_AUTO);
	SHAPE(T(&g, "h"), 4, 8);
	SHAPE(T(&g, "l"), 4, 8);
	SHAPE(T(&g, "c1"), 4, 8);
	assert_int_equal(T(&g, "c1")->gpu, 1); /* copy output lives on the op's gpu */
	assert_int_equal(T(&g, "r")->gpu, 0);
	assert_int_equal(T(&g, "c1")->dtype, ARK_BF16);
	/* c1 and c2 are never read: warnings, not errors */
	assert_non_null(strstr(harness_diag(), "t.cfg:11: warning: activation 'c1' is never read and is not an output"));
	graph_free(&g);
}

static void test_matmul_shapes(void **state)
{
	struct graph g;
	assert_int_equal(load(&g, HEAD "tensors = ( { name = \"a\"; shape = [2, 3, 8, 64]; role = \"input\"; },\n"
				  "  { name = \"b\"; shape = [64, 32]; role = \"weight\"; },\n"
				  "  { name = \"bt\"; shape = [48, 32]; role = \"weight\"; },\n"
				  "  { name = \"bias\"; shape = [48]; role = \"weight\"; },\n"
				  "  { name = \"o\"; role = \"output\"; shape = [2, 3, 8, 48]; } );\n"
				  "ops = ( { name = \"m1\"; op = \"matmul\"; in = [\"a\", \"b\"]; out = \"h\"; },\n"
				  "  { name = \"m2\"; op = \"matmul\"; in = [\"h\", \"bt\", \"bias\"]; out = \"o\"; transpose_b = true; } );\n"),
			 0);
	SHAPE(T(&g, "h"), 2, 3, 8, 32);
	SHAPE(T(&g, "o"), 2, 3, 8, 48);
	assert_string_equal(harness_diag(), "");
	graph_free(&g);

	/* K mismatch names both shapes */
	assert_int_equal(load(&g, HEAD "tensors = ( { name = \"a\"; shape = [3, 8, 64]; role = \"input\"; },\n"
				  "  { name = \"b\"; shape = [32, 64]; role = \"weight\"; } );\n"
				  "ops = ( { name = \"m\"; op = \"matmul\"; in = [\"a\", \"b\"]; out = \"y\"; } );\n"),
			 -1);
	assert_non_null(strstr(harness_diag(), "t.cfg:4: error: input 'a' of op 'm' has shape [3, 8, 64], expected [*, *, 32]\n"
					  "t.cfg:3: note: 'b' ([32, 64]) is declared here\n"));
	assert_int_equal(diag_errors(), 1);
	graph_free(&g);
}

/* The shape of `out` after `op` on inputs of shapes sa and sb. */
static void check_binary(const char *op, const char *sa, const char *sb, const char *want)
{
	char text[1024];
	struct graph g;
	snprintf(text, sizeof text, HEAD "tensors = ( { name = \"a\"; shape = %s; role = \"input\"; },\n"
		 "  { name = \"b\"; shape = %s; role = \"input\"; }, { name = \"y\"; role = \"output\"; } );\n"
		 "ops = ( { name = \"o\"; op = \"%s\"; in = [\"a\", \"b\"]; out = \"y\"; } );\n", sa, sb, op);
	int rc = load(&g, text);
	if (!want) {
		assert_int_equal(rc, -1);
		assert_non_null(strstr(harness_diag(), "cannot be broadcast"));
	} else {
		assert_int_equal(rc, 0);
		const struct tensor *y = T(&g, "y");
		char got[96];
		assert_string_equal(shape_str(got, sizeof got, y->ndim, y->shape), want);
	}
	graph_free(&g);
}

static void test_broadcasting(void **state)
{
	check_binary("add", "[8, 1024]", "[8, 1024]", "[8, 1024]");
	check_binary("add", "[8, 1024]", "[1024]", "[8, 1024]");
	check_binary("mul", "[1024]", "[8, 1024]", "[8, 1024]");
	check_binary("add", "[8, 1, 16]", "[4, 1]", "[8, 4, 16]");
	check_binary("mul", "[1]", "[3, 5]", "[3, 5]");
	check_binary("add", "[2, 1, 3, 1]", "[7, 1, 5]", "[2, 7, 3, 5]");
	check_binary("add", "[8, 1024]", "[512]", NULL);
	check_binary("mul", "[4, 3]", "[2, 3]", NULL);
	check_binary("swiglu", "[4, 6]", "[4, 6]", "[4, 6]");
}

static void test_unary_and_norm_shapes(void **state)
{
	struct graph g;
	assert_int_equal(load(&g, HEAD "dtype = \"fp32\";\n"
				  "tensors = ( { name = \"x\"; shape = [2, 5, 7]; role = \"input\"; },\n"
				  "  { name = \"gm\"; shape = [7]; role = \"weight\"; } );\n"
				  "ops = ( { name = \"a\"; op = \"gelu\"; in = [\"x\"]; out = \"g\"; },\n"
				  "  { name = \"b\"; op = \"silu\"; in = [\"g\"]; out = \"s\"; },\n"
				  "  { name = \"c\"; op = \"softmax\"; in = [\"s\"]; out = \"sm\"; },\n"
				  "  { name = \"d\"; op = \"rmsnorm\"; in = [\"sm\", \"gm\"]; out = \"r\"; },\n"
				  "  { name = \"e\"; op = \"relu\"; in = [\"r\"]; out = \"y\"; } );\n"),
			 0);
	SHAPE(T(&g, "y"), 2, 5, 7);
	SHAPE(T(&g, "sm"), 2, 5, 7);
	assert_int_equal(T(&g, "y")->dtype, ARK_FP32);
	assert_true(O(&g, "d")->eps == 1e-6);
	assert_int_equal(tensor_bytes(T(&g, "y")), 2 * 5 * 7 * 4);
	graph_free(&g);

	assert_int_equal(load(&g, HEAD "tensors = ( { name = \"x\"; shape = [2, 7]; role = \"input\"; },\n"
				  "  { name = \"gm\"; shape = [2]; role = \"weight\"; } );\n"
				  "ops = ( { name = \"d\"; op = \"rmsnorm\"; in = [\"x\", \"gm\"]; out = \"r\"; } );\n"),
			 -1);
	assert_non_null(strstr(harness_diag(), "t.cfg:4: error: gamma 'gm' of op 'd' (rmsnorm) has shape [2], expected [7]"));
	graph_free(&g);
}

static const char *collective(const char *kind, const char *attr)
{
	static char text[1024];
	snprintf(text, sizeof text, HEAD "gpus = 3;\n"
		 "tensors = ( { name = \"a\"; shape = [4, 16]; role = \"input\"; gpu = 2; },\n"
		 "  { name = \"b\"; shape = [4, 16]; role = \"input\"; gpu = 0; },\n"
		 "  { name = \"c\"; shape = [4, 16]; role = \"input\"; gpu = 1; } );\n"
		 "ops = ( { name = \"ra\"; op = \"relu\"; in = [\"a\"]; out = \"ra\"; gpu = 2; },\n"
		 "  { name = \"col\"; op = \"%s\"; in = [\"ra\", \"b\", \"c\"]; out = [\"o0\", \"o1\", \"o2\"]; %s } );\n",
		 kind, attr);
	return text;
}

static void test_collectives(void **state)
{
	struct graph g;
	assert_int_equal(load(&g, collective("all_reduce", "transport = \"dma\";")), 0);
	SHAPE(T(&g, "o0"), 4, 16);
	assert_int_equal(T(&g, "ra")->gpu, 2);  /* output inherits the op's gpu */
	assert_int_equal(T(&g, "o0")->gpu, 2);  /* output i lives with input i */
	assert_int_equal(T(&g, "o1")->gpu, 0);
	assert_int_equal(T(&g, "o2")->gpu, 1);
	assert_int_equal(O(&g, "col")->transport, ARK_TR_DMA);
	graph_free(&g);

	assert_int_equal(load(&g, collective("all_gather", "")), 0);
	SHAPE(T(&g, "o2"), 4, 48);
	assert_int_equal(O(&g, "col")->axis, 1); /* -1 normalised */
	graph_free(&g);
	assert_int_equal(load(&g, collective("all_gather", "axis = 0;")), 0);
	SHAPE(T(&g, "o1"), 12, 16);
	graph_free(&g);
	assert_int_equal(load(&g, collective("all_gather", "axis = -2;")), 0);
	SHAPE(T(&g, "o0"), 12, 16);
	assert_int_equal(O(&g, "col")->axis, 0);
	graph_free(&g);
	assert_int_equal(load(&g, collective("all_gather", "axis = -3;")), -1);
	assert_non_null(strstr(harness_diag(), "'axis' of op 'col' (all_gather) is -3, expected -2 to 1"));
	graph_free(&g);
	assert_int_equal(load(&g, collective("all_reduce", "axis = 0;")), -1);
	assert_non_null(strstr(harness_diag(), "op 'col' (all_reduce) has no attribute 'axis'"));
	graph_free(&g);
}

static void test_topological_order(void **state)
{
	struct graph g;
	/* file order: c reads b's output, b reads a's; d and e are independent */
	assert_int_equal(load(&g, HEAD "tensors = ( { name = \"x\"; shape = [4]; role = \"input\"; },\n"
				  "  { name = \"y\"; role = \"output\"; } );\n"
				  "ops = ( { name = \"c\"; op = \"add\"; in = [\"tb\", \"td\"]; out = \"y\"; },\n"
				  "  { name = \"e\"; op = \"relu\"; in = [\"x\"]; out = \"te\"; },\n"
				  "  { name = \"b\"; op = \"relu\"; in = [\"ta\"]; out = \"tb\"; },\n"
				  "  { name = \"a\"; op = \"relu\"; in = [\"x\"]; out = \"ta\"; },\n"
				  "  { name = \"d\"; op = \"mul\"; in = [\"te\", \"te\"]; out = \"td\"; } );\n"),
			 0);
	/* Kahn, lowest index first: ready {e=1, a=3} -> e; {a=3, d=4} -> a; {b=2, d=4} -> b; d; c */
	int want[] = { 1, 3, 2, 4, 0 };
	for (int i = 0; i < 5; i++)
		assert_int_equal(g.order[i], want[i]);
	assert_int_equal(T(&g, "te")->n_readers, 2);
	graph_free(&g);
}

static void test_cycle(void **state)
{
	struct graph g;
	assert_int_equal(load(&g, HEAD "tensors = ( { name = \"x\"; shape = [4]; role = \"input\"; } );\n"
				  "ops = ( { name = \"z\"; op = \"relu\"; in = [\"x\"]; out = \"tz\"; },\n"
				  "  { name = \"c\"; op = \"add\"; in = [\"tz\", \"tb\"]; out = \"tc\"; },\n"
				  "  { name = \"a\"; op = \"relu\"; in = [\"tc\"]; out = \"ta\"; },\n"
				  "  { name = \"b\"; op = \"relu\"; in = [\"ta\"]; out = \"tb\"; } );\n"),
			 -1);
	assert_string_equal(harness_diag(), "t.cfg:4: error: cycle: op 'c' -> op 'a' -> op 'b' -> op 'c'\n"
				       "t.cfg:4: note: op 'c' writes 'tc', which op 'a' reads\n"
				       "t.cfg:5: note: op 'a' writes 'ta', which op 'b' reads\n"
				       "t.cfg:6: note: op 'b' writes 'tb', which op 'c' reads\n"
				       "hint: dependencies come from tensor names: rename an output to break the cycle\n");
	assert_null(g.order);
	graph_free(&g);
}

static void test_dtype_and_gpu_inheritance(void **state)
{
	struct graph g;
	assert_int_equal(load(&g, HEAD "dtype = \"bf16\"; gpus = 2;\n"
				  "tensors = ( { name = \"x\"; shape = [4, 8]; role = \"input\"; dtype = \"fp32\"; gpu = 1; },\n"
				  "  { name = \"w\"; shape = [8, 8]; role = \"weight\"; dtype = \"fp32\"; gpu = 1; },\n"
				  "  { name = \"v\"; shape = [8]; role = \"input\"; },\n"
				  "  { name = \"y\"; role = \"output\"; } );\n"
				  "ops = ( { name = \"m\"; op = \"matmul\"; in = [\"x\", \"w\"]; out = \"h\"; gpu = 1; },\n"
				  "  { name = \"r\"; op = \"relu\"; in = [\"h\"]; out = \"y\"; gpu = 1; },\n"
				  "  { name = \"s\"; op = \"silu\"; in = [\"v\"]; out = \"sv\"; } );\n"),
			 0);
	assert_int_equal(T(&g, "h")->dtype, ARK_FP32);
	assert_int_equal(T(&g, "y")->dtype, ARK_FP32);
	assert_int_equal(T(&g, "sv")->dtype, ARK_BF16);
	assert_int_equal(T(&g, "v")->dtype, ARK_BF16);
	assert_int_equal(T(&g, "h")->gpu, 1);
	assert_int_equal(T(&g, "y")->gpu, 1);
	assert_int_equal(T(&g, "sv")->gpu, 0);
	assert_int_equal(tensor_bytes(T(&g, "y")), 4 * 8 * 4);
	graph_free(&g);

	/* a relu on gpu 0 cannot read a tensor on gpu 1 */
	assert_int_equal(load(&g, HEAD "gpus = 2;\n"
				  "tensors = ( { name = \"x\"; shape = [4]; role = \"input\"; gpu = 1; } );\n"
				  "ops = ( { name = \"r\"; op = \"relu\"; in = [\"x\"]; out = \"y\"; } );\n"),
			 -1);
	assert_non_null(strstr(harness_diag(), "t.cfg:4: error: input 'x' of op 'r' (relu) lives on gpu 1, but the op runs on gpu 0"));
	graph_free(&g);
}

static void test_rejections(void **state)
{
	static const struct {
		const char *text, *error;
	} cases[] = {
		{ "version = 1;\nname = \"t\"\nbad = ;\n", "t.cfg:3: error: syntax error" },
		{ HEAD "tensors = ( { name = \"x\"; shape = [4]; role = \"input\"; } );\nops = ( { name = \"r\"; op = \"relu\"; "
		       "in = [\"x\"]; out = \"y\"; flavor = 1; } );\n",
		  "t.cfg:3: error: unknown setting 'flavor' in op 'r'" },
		{ HEAD "tensors = ( { name = \"x\"; shape = [4]; role = \"input\"; } );\nops = ( { name = \"r\"; op = \"scale\"; "
		       "in = [\"x\"]; out = \"y\"; factor = \"2\"; } );\n",
		  "t.cfg:3: error: 'factor' of op 'r' must be a number, found a string" },
		{ HEAD "tensors = ( { name = \"x\"; shape = [4]; role = \"input\"; } );\nops = ( { name = \"r\"; op = \"relu\"; "
		       "in = [\"x\"]; out = \"x\"; } );\n",
		  "t.cfg:3: error: op 'r' writes 'x', which is declared as an input" },
		{ HEAD "tensors = ( { name = \"x\"; shape = [4]; role = \"input\"; shap = [4]; } );\nops = ();\n",
		  "t.cfg:2: error: unknown setting 'shap' in tensor 'x'\nhint: did you mean 'shape'?" },
		{ HEAD "tensors = ( { name = \"x\"; shape = [3037000500L, 3037000500L]; role = \"input\"; } );\n"
		       "ops = ( { name = \"r\"; op = \"relu\"; in = [\"x\"]; out = \"y\"; } );\n",
		  "t.cfg:2: error: tensor 'x' of shape [3037000500, 3037000500] (fp16) is too large" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct graph g;
		assert_int_equal(load(&g, cases[i].text), -1);
		if (!strstr(harness_diag(), cases[i].error))
			fail_msg("case %zu: expected '%s' in:\n%s", i, cases[i].error, harness_diag());
		assert_int_equal(diag_errors(), 1);
		graph_free(&g);
	}
}

/* int32 ids, embedding and the views: shapes, dtypes, which ops are views of what. */
static void test_embedding_and_views(void **state)
{
	struct graph g;
	assert_int_equal(load(&g, HEAD "dtype = \"bf16\";\n"
				  "tensors = ( { name = \"ids\"; shape = [2, 5]; role = \"input\"; dtype = \"int32\"; },\n"
				  "  { name = \"tab\"; shape = [30, 8]; role = \"weight\"; },\n"
				  "  { name = \"pos\"; shape = [16, 8]; role = \"weight\"; },\n"
				  "  { name = \"o\"; role = \"output\"; } );\n"
				  "ops = ( { name = \"e\"; op = \"embedding\"; in = [\"ids\", \"tab\"]; out = \"x\"; },\n"
				  "  { name = \"p\"; op = \"slice\"; in = [\"pos\"]; axis = 0; start = 3; end = 8; out = \"p5\"; },\n"
				  "  { name = \"a\"; op = \"add\"; in = [\"x\", \"p5\"]; out = \"h\"; },\n"
				  "  { name = \"r\"; op = \"reshape\"; in = [\"h\"]; shape = [-1, 4]; out = \"h2\"; },\n"
				  "  { name = \"t\"; op = \"transpose\"; in = [\"h\"]; dims = [0, -1]; copy = true; out = \"ht\"; },\n"
				  "  { name = \"t1\"; op = \"transpose\"; in = [\"p5\"]; dims = [0, 1]; copy = true; out = \"pt\"; },\n"
				  "  { name = \"u\"; op = \"relu\"; in = [\"h2\"]; out = \"u1\"; },\n"
				  "  { name = \"v\"; op = \"relu\"; in = [\"h2\"]; out = \"v1\"; },\n"
				  "  { name = \"c\"; op = \"concat\"; in = [\"u1\", \"v1\"]; axis = 0; out = \"o\"; },\n"
				  "  { name = \"s1\"; op = \"slice\"; in = [\"o\"]; axis = -1; start = 0; end = 2; copy = true; out = \"o2\"; },\n"
				  "  { name = \"cc\"; op = \"concat\"; in = [\"h\", \"x\"]; axis = -1; copy = true; out = \"cc\"; } );\n"),
			 0);
	assert_int_equal(T(&g, "ids")->dtype, ARK_INT32);
	SHAPE(T(&g, "x"), 2, 5, 8);
	assert_int_equal(T(&g, "x")->dtype, ARK_BF16);
	SHAPE(T(&g, "p5"), 5, 8);
	assert_int_equal(T(&g, "p5")->view_of, graph_find_tensor(&g, "pos"));
	assert_int_equal(T(&g, "p5")->view_off, 3 * 8);
	SHAPE(T(&g, "h2"), 20, 4);
	assert_int_equal(T(&g, "h2")->view_of, graph_find_tensor(&g, "h"));
	SHAPE(T(&g, "ht"), 8, 5, 2);
	assert_int_equal(T(&g, "ht")->view_of, -1);
	assert_int_equal(O(&g, "t")->copied, 1);
	assert_int_equal(O(&g, "t")->dims[1], 2);
	assert_int_equal(O(&g, "t1")->copied, 1);
	SHAPE(T(&g, "o"), 40, 4);
	assert_int_equal(T(&g, "u1")->view_of, graph_find_tensor(&g, "o"));
	assert_int_equal(T(&g, "v1")->view_of, graph_find_tensor(&g, "o"));
	assert_int_equal(T(&g, "v1")->view_off, 80);
	int64_t off;
	assert_int_equal(graph_view_base(&g, graph_find_tensor(&g, "v1"), &off), graph_find_tensor(&g, "o"));
	assert_int_equal(off, 80);
	SHAPE(T(&g, "o2"), 40, 2);
	SHAPE(T(&g, "cc"), 2, 5, 16);
	assert_int_equal(O(&g, "cc")->copied, 1);
	assert_int_equal(T(&g, "u1")->view_of, graph_find_tensor(&g, "o")); /* still: cc reads the views */
	assert_int_equal(O(&g, "s1")->copied, 1);
	assert_int_equal(O(&g, "s1")->axis, 1);
	graph_free(&g);

	/* views that keep the order: a swapped axis of size 1, a slice after leading 1s, a reshape of a
	 * view, a concat of blocks after leading 1s (copy = true but no copy needed) */
	assert_int_equal(load(&g, HEAD "tensors = ( { name = \"x\"; shape = [1, 6, 4]; role = \"input\"; } );\n"
				  "ops = ( { name = \"t\"; op = \"transpose\"; in = [\"x\"]; dims = [0, 1]; out = \"y\"; },\n"
				  "  { name = \"s\"; op = \"slice\"; in = [\"x\"]; axis = 1; start = 2; end = 5; out = \"z\"; },\n"
				  "  { name = \"r\"; op = \"reshape\"; in = [\"z\"]; shape = [12]; out = \"w\"; },\n"
				  "  { name = \"s2\"; op = \"slice\"; in = [\"x\"]; axis = 2; start = 0; end = 4; out = \"w2\"; },\n"
				  "  { name = \"a\"; op = \"relu\"; in = [\"x\"]; out = \"a1\"; },\n"
				  "  { name = \"b\"; op = \"sigmoid\"; in = [\"x\"]; out = \"b1\"; },\n"
				  "  { name = \"c\"; op = \"concat\"; in = [\"a1\", \"b1\"]; axis = 1; copy = true; out = \"c1\"; } );\n"),
			 0);
	SHAPE(T(&g, "y"), 6, 1, 4);
	assert_int_equal(T(&g, "y")->view_of, graph_find_tensor(&g, "x"));
	assert_int_equal(T(&g, "z")->view_off, 8);
	assert_int_equal(T(&g, "w2")->view_of, graph_find_tensor(&g, "x")); /* the whole axis */
	assert_int_equal(O(&g, "s2")->copied, 0);
	assert_int_equal(graph_view_base(&g, graph_find_tensor(&g, "w"), &off), graph_find_tensor(&g, "x"));
	assert_int_equal(off, 8);
	SHAPE(T(&g, "c1"), 1, 12, 4);
	assert_int_equal(O(&g, "c")->copied, 0);
	assert_int_equal(T(&g, "b1")->view_of, graph_find_tensor(&g, "c1"));
	assert_int_equal(T(&g, "b1")->view_off, 24);
	graph_free(&g);

	static const struct {
		const char *text, *error;
	} cases[] = {
		{ HEAD "tensors = ( { name = \"i\"; shape = [4]; role = \"input\"; dtype = \"int32\"; } );\n"
		       "ops = ( { name = \"r\"; op = \"relu\"; in = [\"i\"]; out = \"y\"; } );\n",
		  "t.cfg:3: error: input 'i' of op 'r' (relu) is int32, which relu does not take there" },
		{ HEAD "tensors = ( { name = \"i\"; shape = [4]; role = \"input\"; dtype = \"int32\"; },\n"
		       "  { name = \"w\"; shape = [9, 4]; role = \"weight\"; dtype = \"int32\"; } );\n"
		       "ops = ( { name = \"e\"; op = \"embedding\"; in = [\"i\", \"w\"]; out = \"y\"; } );\n",
		  "t.cfg:4: error: input 'w' of op 'e' (embedding) is int32, which embedding does not take there" },
		{ HEAD "tensors = ( { name = \"y\"; dtype = \"int32\"; role = \"output\"; }, { name = \"x\"; shape = [4]; role = \"input\"; } );\n"
		       "ops = ( { name = \"r\"; op = \"relu\"; in = [\"x\"]; out = \"y\"; } );\n",
		  "t.cfg:2: error: tensor 'y' is int32, but its role is output" },
		{ HEAD "tensors = ( { name = \"i\"; shape = [4]; role = \"input\"; }, { name = \"w\"; shape = [9, 4]; role = \"weight\"; } );\n"
		       "ops = ( { name = \"e\"; op = \"embedding\"; in = [\"i\", \"w\"]; out = \"y\"; } );\n",
		  "t.cfg:3: error: ids 'i' of op 'e' (embedding) are fp16, expected int32" },
		{ HEAD "tensors = ( { name = \"i\"; shape = [4]; role = \"input\"; dtype = \"int32\"; }, { name = \"w\"; shape = [9]; role = \"weight\"; } );\n"
		       "ops = ( { name = \"e\"; op = \"embedding\"; in = [\"i\", \"w\"]; out = \"y\"; } );\n",
		  "t.cfg:3: error: table 'w' of op 'e' (embedding) has shape [9], expected [V, D]" },
		{ HEAD "tensors = ( { name = \"x\"; shape = [4, 6]; role = \"input\"; } );\n"
		       "ops = ( { name = \"r\"; op = \"reshape\"; in = [\"x\"]; shape = [5, -1]; out = \"y\"; } );\n",
		  "t.cfg:3: error: op 'r' (reshape) cannot give 'x' of shape [4, 6] (24 elements) the shape [5, -1]" },
		{ HEAD "tensors = ( { name = \"x\"; shape = [4, 6]; role = \"input\"; } );\n"
		       "ops = ( { name = \"r\"; op = \"reshape\"; in = [\"x\"]; shape = [-1, -1]; out = \"y\"; } );\n",
		  "t.cfg:3: error: 'shape' of op 'r' (reshape) is [-1, -1]: more than one -1" },
		{ HEAD "tensors = ( { name = \"x\"; shape = [4, 6]; role = \"input\"; } );\n"
		       "ops = ( { name = \"r\"; op = \"reshape\"; in = [\"x\"]; out = \"y\"; } );\n",
		  "t.cfg:3: error: op 'r' (reshape) needs attribute 'shape'" },
		{ HEAD "tensors = ( { name = \"x\"; shape = [4, 6]; role = \"input\"; } );\n"
		       "ops = ( { name = \"s\"; op = \"slice\"; in = [\"x\"]; axis = 0; start = 2; end = 5; out = \"y\"; } );\n",
		  "t.cfg:3: error: op 's' (slice) takes elements 2..5 of axis 0 of 'x' (shape [4, 6]), expected 0 <= start < end <= 4" },
		{ HEAD "tensors = ( { name = \"x\"; shape = [4, 6]; role = \"input\"; } );\n"
		       "ops = ( { name = \"s\"; op = \"slice\"; in = [\"x\"]; axis = 1; start = 2; end = 5; out = \"y\"; } );\n",
		  "t.cfg:3: error: op 's' (slice) cannot be a view: elements 2..5 of axis 1 of 'x' (shape [4, 6]) are not contiguous" },
		{ HEAD "tensors = ( { name = \"x\"; shape = [4, 6]; role = \"input\"; } );\n"
		       "ops = ( { name = \"t\"; op = \"transpose\"; in = [\"x\"]; dims = [1, 0]; out = \"y\"; } );\n",
		  "t.cfg:3: error: op 't' (transpose) cannot be a view: swapping axes 1 and 0 of 'x' (shape [4, 6]) reorders its elements\n"
		  "hint: add copy = true; to copy the elements instead" },
		{ HEAD "tensors = ( { name = \"x\"; shape = [4, 6]; role = \"input\"; } );\n"
		       "ops = ( { name = \"t\"; op = \"transpose\"; in = [\"x\"]; dims = [1, 1]; out = \"y\"; } );\n",
		  "t.cfg:3: error: 'dims' of op 't' (transpose) names axis 1 twice" },
		{ HEAD "tensors = ( { name = \"x\"; shape = [4, 6]; role = \"input\"; } );\n"
		       "ops = ( { name = \"t\"; op = \"transpose\"; in = [\"x\"]; dims = [0, 2]; out = \"y\"; } );\n",
		  "t.cfg:3: error: 'dims' of op 't' (transpose) is 2, expected -2 to 1 for 'x' of shape [4, 6]" },
		{ HEAD "tensors = ( { name = \"x\"; shape = [4, 6]; role = \"input\"; } );\n"
		       "ops = ( { name = \"r\"; op = \"relu\"; in = [\"x\"]; out = \"a\"; },\n"
		       "  { name = \"c\"; op = \"concat\"; in = [\"a\", \"x\"]; axis = 0; out = \"y\"; } );\n",
		  "t.cfg:4: error: op 'c' (concat) cannot be a view: its input 'x' is an input of the model, whose bytes are its own" },
		{ HEAD "tensors = ( { name = \"x\"; shape = [4, 6]; role = \"input\"; } );\n"
		       "ops = ( { name = \"r\"; op = \"relu\"; in = [\"x\"]; out = \"a\"; },\n"
		       "  { name = \"c\"; op = \"concat\"; in = [\"a\", \"a\"]; axis = 1; out = \"y\"; } );\n",
		  "t.cfg:4: error: op 'c' (concat) cannot be a view: the inputs would not be contiguous blocks of 'y' (shape [4, 12])" },
		{ HEAD "tensors = ( { name = \"x\"; shape = [4, 6]; role = \"input\"; } );\n"
		       "ops = ( { name = \"r\"; op = \"relu\"; in = [\"x\"]; out = \"a\"; },\n"
		       "  { name = \"c\"; op = \"concat\"; in = [\"a\", \"a\"]; axis = 1; out = \"y\"; } );\n",
		  "hint: add copy = true; to copy the elements instead" },
		{ HEAD "tensors = ( { name = \"x\"; shape = [4, 6]; role = \"input\"; } );\n"
		       "ops = ( { name = \"r\"; op = \"relu\"; in = [\"x\"]; out = \"a\"; },\n"
		       "  { name = \"c\"; op = \"concat\"; in = [\"a\", \"a\"]; axis = 0; out = \"y\"; } );\n",
		  "t.cfg:4: error: op 'c' (concat) cannot be a view: its input 'a' is named twice" },
		{ HEAD "tensors = ( { name = \"x\"; shape = [4, 6]; role = \"input\"; }, { name = \"q\"; shape = [3, 5]; role = \"input\"; } );\n"
		       "ops = ( { name = \"r\"; op = \"relu\"; in = [\"x\"]; out = \"a\"; },\n"
		       "  { name = \"b\"; op = \"relu\"; in = [\"q\"]; out = \"b1\"; },\n"
		       "  { name = \"c\"; op = \"concat\"; in = [\"a\", \"b1\"]; axis = 0; out = \"y\"; } );\n",
		  "t.cfg:5: error: input 'b1' of op 'c' (concat) has shape [3, 5], expected [4, 6] but along axis 0 like 'a'" },
		{ HEAD "tensors = ( { name = \"w\"; shape = [4, 6]; role = \"weight\"; }, { name = \"y\"; role = \"output\"; } );\n"
		       "ops = ( { name = \"r\"; op = \"reshape\"; in = [\"w\"]; shape = [24]; out = \"y\"; } );\n",
		  "t.cfg:3: error: output 'y' of op 'r' (reshape) would be a view of weight 'w': nothing computes it" },
		{ HEAD "dtype = \"int32\";\n",
		  "t.cfg:2: error: 'dtype' is \"int32\", expected \"fp16\", \"bf16\" or \"fp32\"\n"
		  "hint: int32 is for tensors of role input or weight" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		assert_int_equal(load(&g, cases[i].text), -1);
		if (!strstr(harness_diag(), cases[i].error))
			fail_msg("case %zu: expected '%s' in:\n%s", i, cases[i].error, harness_diag());
		graph_free(&g);
	}
}

/* Many ops and tensors: the arrays grow, and a long chain orders correctly. */
static void test_long_chain(void **state)
{
	size_t cap = 1 << 16, n = 0;
	char *text = malloc(cap);
	n += (size_t)snprintf(text + n, cap - n, HEAD "tensors = ( { name = \"t0\"; shape = [3, 5]; role = \"input\"; } );\nops = (");
	for (int i = 0; i < 300; i++)
		n += (size_t)snprintf(text + n, cap - n, "%s{ name = \"o%d\"; op = \"%s\"; in = [\"t%d\"]; out = \"t%d\"; }\n",
				      i ? "," : "", 299 - i, i % 2 ? "relu" : "gelu", 299 - i, 300 - i);
	snprintf(text + n, cap - n, ");\n");
	/* ops listed last-first: o299 reads t299 ... o0 reads t0 */
	struct graph g;
	assert_int_equal(load(&g, text), 0);
	assert_int_equal(g.n_ops, 300);
	assert_int_equal(g.n_tensors, 301);
	for (int i = 0; i < 300; i++)
		assert_int_equal(g.order[i], 299 - i);
	SHAPE(T(&g, "t300"), 3, 5);
	graph_free(&g);
	free(text);
}

/* 100,000 ops: names are hashed, so reading and checking take about a second of CPU time (a scan per
 * name took 65 s). The bound is on CPU time, not wall-clock time, and loose enough for the sanitized
 * build on a loaded machine, yet far below what a scan per name costs. */
static void test_chain_100k(void **state)
{
	enum { N = 100000 };
	size_t cap = (size_t)N * 80 + 256, n = 0;
	char *text = malloc(cap);
	n += (size_t)snprintf(text + n, cap - n, HEAD "tensors = ( { name = \"t0\"; shape = [2, 3]; role = \"input\"; } );\nops = (");
	for (int i = N - 1; i >= 0; i--)
		n += (size_t)snprintf(text + n, cap - n, "{ name = \"o%d\"; op = \"relu\"; in = [\"t%d\"]; out = \"t%d\"; }%s\n", i, i,
				      i + 1, i ? "," : "");
	snprintf(text + n, cap - n, ");\n");
	struct graph g;
	clock_t c0 = clock();
	assert_int_equal(load(&g, text), 0);
	double dt = (double)(clock() - c0) / CLOCKS_PER_SEC;
	if (dt > 30)
		fail_msg("reading and checking %d ops took %.1f s of CPU time", N, dt);
	assert_int_equal(g.n_ops, N);
	assert_int_equal(g.order[0], N - 1); /* o0, listed last */
	assert_int_equal(graph_find_op(&g, "o0"), N - 1);
	assert_int_equal(graph_find_tensor(&g, "t100000"), 2); /* written by the first op listed */
	assert_int_equal(graph_find_tensor(&g, "t100001"), -1);
	/* a tensor appended by a later pass is found too */
	g.tensors = realloc(g.tensors, sizeof *g.tensors * (size_t)(g.n_tensors + 1));
	memset(&g.tensors[g.n_tensors], 0, sizeof *g.tensors);
	g.tensors[g.n_tensors].name = strdup("late__ws");
	g.n_tensors++;
	assert_int_equal(graph_find_tensor(&g, "late__ws"), N + 1);
	graph_free(&g);
	free(text);
}

/* Integer literals that libconfig 1.5 would cut to 32 bits are refused at their line; the same digits
 * in comments, strings and names, and literals that fit, are not. */
static void test_int_literals(void **state)
{
	struct graph g;
	assert_int_equal(load(&g, HEAD "# 99999999999999999999 in a comment\n"
				  "tensors = ( { name = \"t4294967296\"; shape = [4294967296L, 0x1L]; role = \"input\"; } ); /* 4294967296 */\n"
				  "gpus = 0x00000001; // 2147483648\n"
				  "ops = ( { name = \"o\"; op = \"scale\"; in = [\"t4294967296\"]; out = \"y\"; factor = 4294967296.0; },\n"
				  "  { name = \"p\"; op = \"scale\"; in = [\"y\"]; out = \"z\"; factor = -2147483648; },\n"
				  "  { name = \"q\"; op = \"scale\"; in = [\"z\"]; out = \"u\"; factor = 1e10; } );\n"),
			 0);
	SHAPE(T(&g, "y"), 4294967296, 1);
	assert_true(O(&g, "o")->factor == 4294967296.0);
	assert_true(O(&g, "p")->factor == -2147483648.0);
	graph_free(&g);

	static const struct {
		const char *text, *error;
	} cases[] = {
		{ HEAD "gpus = 2147483648;\n", "t.cfg:2: error: integer 2147483648 does not fit in 32 bits: libconfig would "
						"read it as -2147483648\nhint: write 2147483648L for a 64-bit integer" },
		{ HEAD "\ngpus = 0x80000000;\n", "t.cfg:3: error: integer 0x80000000 does not fit in 32 bits: libconfig would "
						 "read it as -2147483648\nhint: write 0x80000000L" },
		{ HEAD "gpus = 0x10000000000000000L;\n", "t.cfg:2: error: integer 0x10000000000000000L does not fit in 64 bits" },
		{ HEAD "gpus = -9223372036854775809L;\n", "t.cfg:2: error: integer -9223372036854775809L does not fit in 64 bits" },
		/* a string with an escaped quote, then digits still in the string, then a literal */
		{ HEAD "name2 = \"a\\\" 4294967296 \\\\\"; x = [1,\n 4294967297];\n", "t.cfg:3: error: integer 4294967297 does not fit" },
		{ HEAD "/* 4294967296\n */ x = 4294967299;\n", "t.cfg:3: error: integer 4294967299 does not fit" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		assert_int_equal(load(&g, cases[i].text), -1);
		if (strncmp(harness_diag(), cases[i].error, strlen(cases[i].error)))
			fail_msg("case %zu: expected '%s' at the start of:\n%s", i, cases[i].error, harness_diag());
		graph_free(&g);
	}

	/* a dimension written as 0 is just that: no hint about 64-bit literals */
	assert_int_equal(load(&g, HEAD "tensors = ( { name = \"x\"; shape = [0, 4]; role = \"input\"; } );\nops = ();\n"), -1);
	assert_string_equal(harness_diag(), "t.cfg:2: error: 'shape' of tensor 'x' has 0 in dimension 0, expected at least 1\n");
	graph_free(&g);
}

/* q4_1 / q8_0 weights: their sizes in blocks, the dtypes of what reads them (a matmul: a's; an
 * embedding: the output's declared dtype, else the model's). */
static void test_quantized(void **state)
{
	struct graph g;
	assert_int_equal(load(&g, HEAD "dtype = \"bf16\";\n"
				  "tensors = ( { name = \"ids\"; shape = [3]; role = \"input\"; dtype = \"int32\"; },\n"
				  "  { name = \"tab\"; shape = [100, 64]; role = \"weight\"; dtype = \"q8_0\"; },\n"
				  "  { name = \"tab4\"; shape = [100, 64]; role = \"weight\"; dtype = \"q4_1\"; },\n"
				  "  { name = \"w\"; shape = [32, 64]; role = \"weight\"; dtype = \"q4_1\"; },\n"
				  "  { name = \"x32\"; shape = [2, 64]; role = \"input\"; dtype = \"fp32\"; },\n"
				  "  { name = \"e32\"; role = \"output\"; dtype = \"fp32\"; } );\n"
				  "ops = ( { name = \"e\"; op = \"embedding\"; in = [\"ids\", \"tab\"]; out = \"x\"; },\n"
				  "  { name = \"e4\"; op = \"embedding\"; in = [\"ids\", \"tab4\"]; out = \"e32\"; },\n"
				  "  { name = \"m\"; op = \"matmul\"; in = [\"x\", \"w\"]; transpose_b = true; out = \"y\"; },\n"
				  "  { name = \"m32\"; op = \"matmul\"; in = [\"x32\", \"w\"]; transpose_b = true; out = \"y32\"; } );\n"),
			 0);
	assert_int_equal(T(&g, "tab")->dtype, ARK_Q8_0);
	assert_int_equal(tensor_bytes(T(&g, "tab")), 100 * 2 * 34);
	assert_int_equal(tensor_bytes(T(&g, "tab4")), 100 * 2 * 20);
	assert_int_equal(tensor_bytes(T(&g, "w")), 32 * 2 * 20);
	SHAPE(T(&g, "x"), 3, 64);
	assert_int_equal(T(&g, "x")->dtype, ARK_BF16);  /* the model's */
	assert_int_equal(T(&g, "e32")->dtype, ARK_FP32); /* declared */
	SHAPE(T(&g, "y"), 3, 32);
	assert_int_equal(T(&g, "y")->dtype, ARK_BF16);
	assert_int_equal(T(&g, "y32")->dtype, ARK_FP32);
	graph_free(&g);
}

/* eps and factor reach the kernels as floats: checked as the floats they become. */
static void test_float_attributes(void **state)
{
	static const struct {
		const char *attr;
		int ok;
	} cases[] = {
		{ "factor = 0.0", 1 },
		{ "factor = 3.4028234663852886e+38", 1 },  /* FLT_MAX */
		{ "factor = -3.4028235e+38", 1 },          /* rounds to -FLT_MAX */
		{ "factor = 3.4028236e+38", 0 },           /* rounds to infinity */
		{ "factor = 1.1754943508222875e-38", 1 },  /* FLT_MIN */
		{ "factor = 1e-40", 0 },                   /* subnormal as a float */
		{ "factor = 1e-46", 0 },                   /* 0 as a float */
		{ "eps = 1.1754943508222875e-38", 1 },
		{ "eps = 1.1754942e-38", 0 },
		{ "eps = 0.0", 0 },
		{ "eps = 1e-12", 1 },
		{ "eps = 1e39", 0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char text[512];
		int scale = cases[i].attr[0] == 'f';
		snprintf(text, sizeof text, HEAD "tensors = ( { name = \"x\"; shape = [4, 8]; role = \"input\"; },\n"
			 "  { name = \"g\"; shape = [8]; role = \"weight\"; } );\n"
			 "ops = ( { name = \"o\"; op = \"%s\"; in = [\"x\"%s]; out = \"y\"; %s; } );\n",
			 scale ? "scale" : "rmsnorm", scale ? "" : ", \"g\"", cases[i].attr);
		struct graph g;
		int rc = load(&g, text);
		if (cases[i].ok ? rc != 0 : rc != -1 || !strstr(harness_diag(), "t.cfg:4: error: "))
			fail_msg("%s: rc %d, diagnostics:\n%s", cases[i].attr, rc, harness_diag());
		graph_free(&g);
	}
}

/* Writes text to dir/name. */
static void write_file(const char *dir, const char *name, const char *text)
{
	char p[512];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* A model split over files: includes resolve against the including file's folder, tensors and ops
 * know the file and line they were written at, and lines after an include keep their numbers. */
static void test_includes(void **state)
{
	char dir[256], sub[300], model[320];
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/ark_inc_XXXXXX", tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(dir));
	snprintf(sub, sizeof sub, "%s/parts", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	write_file(dir, "m.cfg", HEAD "tensors = (\n"
		   "  @include \"parts/tensors.cfg\" /* the rest of this line follows the include */ ,\n"
		   "  { name = \"y\"; role = \"output\"; }\n"
		   ");\n"
		   "# @include \"not/an/include.cfg\" in a comment\n"
		   "ops = (\n"
		   "@include \"parts/ops.cfg\"\n"
		   ");\n");
	write_file(sub, "tensors.cfg", "{ name = \"x\";\n  shape = [4, 8];\n  role = \"input\"; }");
	write_file(sub, "ops.cfg", "{ name = \"r\"; op = \"relu\"; in = [\"x\"]; out = \"h\"; },\n@include \"more_ops.cfg\"\n");
	write_file(sub, "more_ops.cfg", "\n{ name = \"s\"; op = \"softmax\"; in = [\"h\"]; out = \"y\"; }\n");
	snprintf(model, sizeof model, "%s/m.cfg", dir);
	struct graph g;
	harness_capture_begin();
	int rc = cfg_load(&g, model);
	if (!rc)
		rc = graph_check(&g);
	harness_capture_end();
	if (rc)
		fail_msg("%s", harness_diag());
	char want[400];
	snprintf(want, sizeof want, "%s/parts/tensors.cfg", dir);
	assert_string_equal(T(&g, "x")->file, want);
	assert_int_equal(T(&g, "x")->line, 1);
	assert_null(T(&g, "y")->file);
	assert_int_equal(T(&g, "y")->line, 4);
	snprintf(want, sizeof want, "%s/parts/ops.cfg", dir);
	assert_string_equal(O(&g, "r")->file, want);
	assert_int_equal(O(&g, "r")->line, 1);
	assert_string_equal(T(&g, "h")->file, want); /* produced there */
	snprintf(want, sizeof want, "%s/parts/more_ops.cfg", dir);
	assert_string_equal(O(&g, "s")->file, want);
	assert_int_equal(O(&g, "s")->line, 2);
	SHAPE(T(&g, "y"), 4, 8);
	graph_free(&g);

	/* an error in an included file names that file; one after the include, the including file */
	write_file(sub, "more_ops.cfg", "\n{ name = \"s\"; op = \"softmax\"; in = [\"h\"]; out = \"y\"; axis = 1; }\n");
	harness_capture_begin();
	assert_int_equal(cfg_load(&g, model), -1);
	harness_capture_end();
	snprintf(want, sizeof want, "%s/parts/more_ops.cfg:2: error: op 's' (softmax) has no attribute 'axis'", dir);
	if (!strstr(harness_diag(), want))
		fail_msg("expected '%s' in:\n%s", want, harness_diag());
	graph_free(&g);
	write_file(sub, "more_ops.cfg", "{ name = \"s\"; op = \"softmax\"; in = [\"h\"]; out = \"y\"; }\n");
	write_file(dir, "m.cfg", HEAD "tensors = (\n@include \"parts/tensors.cfg\"\n);\n"
		   "ops = (\n@include \"parts/ops.cfg\"\n);\n\n\nextra = 1;\n");
	harness_capture_begin();
	assert_int_equal(cfg_load(&g, model), -1);
	harness_capture_end();
	snprintf(want, sizeof want, "%s/m.cfg:10: error: unknown top-level setting 'extra'", dir);
	if (!strstr(harness_diag(), want))
		fail_msg("expected '%s' in:\n%s", want, harness_diag());
	graph_free(&g);

	char cmd[400];
	snprintf(cmd, sizeof cmd, "rm -r '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* Lines past 65,535 keep their numbers (libconfig's config_setting_source_line cuts them to 16 bits),
 * and a NUL byte is refused where it is (libconfig would stop reading there). */
static void test_text_lines(void **state)
{
	size_t n = 70000;
	char *text = malloc(n + 256);
	memset(text, '\n', n);
	snprintf(text + n, 256, HEAD "tensors = ( { name = \"x\"; shape = [4]; role = \"inptu\"; } );\nops = ();\n");
	struct graph g;
	assert_int_equal(load(&g, text), -1);
	assert_non_null(strstr(harness_diag(), "t.cfg:70002: error: 'role' of tensor 'x' is \"inptu\""));
	graph_free(&g);
	free(text);

	static const char nul[] = HEAD "tensors = ( { name = \"x\"; shape = [4]; role = \"input\"; } );\n"
				  "ops = ( { name = \"r\"; op = \"relu\"; in = [\"x\"]; out = \"y\"; } );\n# \0\ngarbage = 1;\n";
	FILE *f = fopen("t_nul.cfg", "w");
	assert_non_null(f);
	assert_int_equal(fwrite(nul, 1, sizeof nul - 1, f), sizeof nul - 1);
	assert_int_equal(fclose(f), 0);
	harness_capture_begin();
	assert_int_equal(cfg_load(&g, "t_nul.cfg"), -1);
	harness_capture_end();
	unlink("t_nul.cfg");
	assert_non_null(strstr(harness_diag(), "t_nul.cfg:4: error: NUL byte in the file"));
	graph_free(&g);

	/* a directory */
	harness_capture_begin();
	assert_int_equal(cfg_load(&g, "models"), -1);
	harness_capture_end();
	assert_string_equal(harness_diag(), "models: error: is a directory\n");
	graph_free(&g);
}

static void test_dumps(void **state)
{
	struct graph g;
	harness_capture_begin();
	assert_int_equal(cfg_load(&g, "models/mlp.cfg"), 0);
	assert_int_equal(graph_check(&g), 0);
	harness_capture_end();
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	graph_dump(&g, f);
	fclose(f);
	assert_non_null(strstr(buf, "graph mlp (models/mlp.cfg): 3 ops, 7 tensors, 1 GPU"));
	assert_non_null(strstr(buf, "[8, 4096]"));
	assert_non_null(strstr(buf, "0. fc1 = matmul  gpu 0  line 15"));
	assert_non_null(strstr(buf, "2. fc2 = matmul"));
	free(buf);
	f = open_memstream(&buf, &len);
	graph_dot(&g, f);
	fclose(f);
	assert_memory_equal(buf, "digraph \"mlp\" {", 15);
	assert_non_null(strstr(buf, "\"op_fc1\" -> \"t_h\";"));
	assert_non_null(strstr(buf, "\"t_h\" -> \"op_act\";"));
	free(buf);
	char s[32];
	int64_t dims[] = { 2, 3, 4, 5 };
	assert_string_equal(shape_str(s, sizeof s, 4, dims), "[2, 3, 4, 5]");
	assert_string_equal(shape_str(s, 6, 4, dims), "[2, 3");
	graph_free(&g);
}

static void test_models_load(void **state)
{
	glob_t gl;
	assert_int_equal(glob("models/*.cfg", 0, NULL, &gl), 0);
	assert_true(gl.gl_pathc >= 4);
	for (size_t i = 0; i < gl.gl_pathc; i++) {
		struct graph g;
		harness_capture_begin();
		int rc = cfg_load(&g, gl.gl_pathv[i]);
		if (!rc)
			rc = graph_check(&g);
		harness_capture_end();
		if (rc)
			fail_msg("%s: %s", gl.gl_pathv[i], harness_diag());
		assert_true(g.n_ops > 0);
		for (int t = 0; t < g.n_tensors; t++)
			assert_true(g.tensors[t].ndim > 0);
		graph_free(&g);
	}
	globfree(&gl);
	/* the named models have the shapes their comments promise */
	struct graph g;
	harness_capture_begin();
	assert_int_equal(cfg_load(&g, "models/branchy.cfg"), 0);
	assert_int_equal(graph_check(&g), 0);
	harness_capture_end();
	assert_int_equal(g.n_ops, 8 * 7 + 7);
	SHAPE(T(&g, "y"), 1, 1024);
	assert_int_equal(T(&g, "y")->dtype, ARK_BF16);
	graph_free(&g);
	harness_capture_begin();
	assert_int_equal(cfg_load(&g, "models/chain64.cfg"), 0);
	assert_int_equal(graph_check(&g), 0);
	harness_capture_end();
	assert_int_equal(g.n_ops, 128);
	assert_true(O(&g, "scale17")->factor == 1.0001);
	SHAPE(T(&g, "y"), 4096);
	graph_free(&g);
	harness_capture_begin();
	assert_int_equal(cfg_load(&g, "models/mlp8.cfg"), 0);
	assert_int_equal(graph_check(&g), 0);
	harness_capture_end();
	assert_int_equal(g.n_ops, 16);
	assert_int_equal(g.ops[g.order[15]].kind, ARK_OP_GELU);
	SHAPE(T(&g, "y"), 1, 4096);
	graph_free(&g);
}

/* gelu's approximate, tanh, reduce_mean's shapes and mask, l2_normalize's eps. */
static void test_issue12_ops(void **state)
{
	struct graph g;
	assert_int_equal(load(&g, HEAD "dtype = \"bf16\";\n"
				  "tensors = ( { name = \"h\"; shape = [2, 16, 64]; role = \"input\"; },\n"
				  "  { name = \"m\"; shape = [2, 16]; role = \"input\"; dtype = \"fp32\"; },\n"
				  "  { name = \"x4\"; shape = [3, 5, 7, 9]; role = \"input\"; },\n"
				  "  { name = \"m4\"; shape = [3, 5, 7]; role = \"input\"; dtype = \"fp16\"; },\n"
				  "  { name = \"v\"; shape = [6]; role = \"input\"; } );\n"
				  "ops = ( { name = \"ge\"; op = \"gelu\"; in = [\"h\"]; out = \"a\"; },\n"
				  "  { name = \"gn\"; op = \"gelu\"; in = [\"a\"]; out = \"b\"; approximate = \"none\"; },\n"
				  "  { name = \"gt\"; op = \"gelu\"; in = [\"b\"]; out = \"c\"; approximate = \"tanh\"; },\n"
				  "  { name = \"th\"; op = \"tanh\"; in = [\"c\"]; out = \"d\"; },\n"
				  "  { name = \"pool\"; op = \"reduce_mean\"; in = [\"d\", \"m\"]; out = \"p\"; axis = 1; },\n"
				  "  { name = \"last\"; op = \"reduce_mean\"; in = [\"d\"]; out = \"q\"; axis = -1; },\n"
				  "  { name = \"first\"; op = \"reduce_mean\"; in = [\"d\"]; out = \"r\"; axis = -3; },\n"
				  "  { name = \"mid\"; op = \"reduce_mean\"; in = [\"x4\", \"m4\"]; out = \"s\"; axis = 2; },\n"
				  "  { name = \"one\"; op = \"reduce_mean\"; in = [\"v\"]; out = \"t\"; axis = 0; },\n"
				  "  { name = \"n1\"; op = \"l2_normalize\"; in = [\"p\"]; out = \"y\"; },\n"
				  "  { name = \"n2\"; op = \"l2_normalize\"; in = [\"q\"]; out = \"z\"; eps = 1e-6; } );\n"),
			 0);
	assert_int_equal(O(&g, "ge")->kind, ARK_OP_GELU); /* erf by default */
	assert_int_equal(O(&g, "gn")->kind, ARK_OP_GELU);
	assert_int_equal(O(&g, "gt")->kind, ARK_OP_GELU_TANH);
	assert_true(O(&g, "gt")->attrs_given & ARK_A(APPROXIMATE));
	assert_string_equal(op_info[ARK_OP_GELU_TANH].name, "gelu");
	assert_int_equal(O(&g, "th")->kind, ARK_OP_TANH);
	SHAPE(T(&g, "d"), 2, 16, 64);
	SHAPE(T(&g, "p"), 2, 64);
	assert_int_equal(T(&g, "p")->dtype, ARK_BF16); /* x's dtype, whatever the mask's */
	SHAPE(T(&g, "q"), 2, 16);
	assert_int_equal(O(&g, "last")->axis, 2);
	SHAPE(T(&g, "r"), 16, 64);
	assert_int_equal(O(&g, "first")->axis, 0);
	SHAPE(T(&g, "s"), 3, 5, 9);
	SHAPE(T(&g, "t"), 1);
	assert_true(O(&g, "n1")->eps == 1e-12);
	assert_true(O(&g, "n2")->eps == 1e-6);
	SHAPE(T(&g, "z"), 2, 16);
	/* -dG says which form each gelu is */
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	graph_dump(&g, f);
	fclose(f);
	assert_non_null(strstr(buf, "ge = gelu  gpu 0  line 8\n      in  h "));
	assert_non_null(strstr(buf, "approximate = \"none\"  (default)\n"));
	assert_non_null(strstr(buf, "approximate = \"none\"\n"));
	assert_non_null(strstr(buf, "approximate = \"tanh\"\n"));
	free(buf);
	graph_free(&g);

	/* a mask of another dtype is fine; another input of another dtype is not (l2_normalize's) */
	assert_int_equal(load(&g, HEAD "tensors = ( { name = \"x\"; shape = [4, 8]; role = \"input\"; dtype = \"fp16\"; },\n"
				  "  { name = \"y\"; shape = [4, 8]; role = \"input\"; dtype = \"fp32\"; } );\n"
				  "ops = ( { name = \"a\"; op = \"add\"; in = [\"x\", \"y\"]; out = \"z\"; } );\n"),
			 -1);
	assert_non_null(strstr(harness_diag(), "have different dtypes"));
	graph_free(&g);
}

/* gelu of either form runs in a matmul's epilogue as its own activation kind; reduce_mean and
 * l2_normalize get their templates, the mean pooling case cut into column blocks. */
static void test_issue12_tiling(void **state)
{
	struct arkgen_options opt = arkgen_options_default();
	struct arkgen_result r;
	opt.until = ARKGEN_PASS_TILE;
	opt.sms = 132;
	int rc = harness_compile(HEAD "dtype = \"fp16\";\n"
				 "tensors = ( { name = \"h\"; shape = [1, 128, 768]; role = \"input\"; },\n"
				 "  { name = \"m\"; shape = [1, 128]; role = \"input\"; dtype = \"fp32\"; },\n"
				 "  { name = \"w1\"; shape = [768, 768]; role = \"weight\"; },\n"
				 "  { name = \"w2\"; shape = [768, 768]; role = \"weight\"; },\n"
				 "  { name = \"y\"; role = \"output\"; }, { name = \"q\"; role = \"output\"; } );\n"
				 "ops = ( { name = \"f1\"; op = \"matmul\"; in = [\"h\", \"w1\"]; out = \"a\"; },\n"
				 "  { name = \"g1\"; op = \"gelu\"; in = [\"a\"]; out = \"b\"; approximate = \"tanh\"; },\n"
				 "  { name = \"f2\"; op = \"matmul\"; in = [\"b\", \"w2\"]; out = \"c\"; },\n"
				 "  { name = \"g2\"; op = \"gelu\"; in = [\"c\"]; out = \"d\"; },\n"
				 "  { name = \"pool\"; op = \"reduce_mean\"; in = [\"d\", \"m\"]; out = \"p\"; axis = 1; },\n"
				 "  { name = \"n\"; op = \"l2_normalize\"; in = [\"p\"]; out = \"y\"; },\n"
				 "  { name = \"last\"; op = \"reduce_mean\"; in = [\"h\"]; out = \"q\"; axis = 2; } );\n",
				 &opt, &r);
	assert_int_equal(rc, 0);
	const struct graph *g = &r.graph;
	assert_int_equal(r.tiling.per_op[harness_op(g, "f1")].act, ARK_OP_GELU_TANH);
	assert_int_equal(r.tiling.per_op[harness_op(g, "f2")].act, ARK_OP_GELU);
	assert_int_equal(r.tiling.per_op[harness_op(g, "g1")].fused_into, harness_op(g, "f1"));
	/* pool: 768 columns of one row over 132 SMs: blocks of 32 columns, each over all 128 rows */
	int pool = harness_op(g, "pool"), last = harness_op(g, "last"), n = harness_op(g, "n");
	const struct op_tiling *pl = &r.tiling.per_op[pool];
	assert_int_equal(pl->n_vcta, 24);
	for (int i = pl->first_vcta; i < pl->first_vcta + pl->n_vcta; i++) {
		const struct vcta *v = &r.tiling.v[i];
		assert_int_equal(v->tmpl, ARK_T_REDUCE_MEAN);
		assert_int_equal(v->n1 - v->n0, 32);
		assert_int_equal(v->n_reads, 2);
		assert_int_equal(v->reads[0].r1 - v->reads[0].r0, 128); /* every row of d */
		assert_int_equal(v->reads[0].c0, v->n0);
		assert_int_equal(v->reads[1].tensor, harness_tensor(g, "m"));
	}
	/* last: 128 contiguous means of 768, ranges of 8 (a warp each) */
	pl = &r.tiling.per_op[last];
	assert_int_equal(pl->n_vcta, 16);
	int64_t covered = 0;
	for (int i = pl->first_vcta; i < pl->first_vcta + pl->n_vcta; i++) {
		const struct vcta *v = &r.tiling.v[i];
		assert_int_equal(v->tmpl, ARK_T_REDUCE_MEAN);
		covered += v->m1 - v->m0;
		assert_int_equal(v->write.c1 - v->write.c0, v->m1 - v->m0);
	}
	assert_int_equal(covered, 128);
	assert_int_equal(harness_count_tmpl(&r.tiling, ARK_T_L2NORM, -1), r.tiling.per_op[n].n_vcta);
	assert_true(r.tiling.per_op[n].n_vcta >= 1);
	arkgen_result_free(&r);
}

/* attention: q [B, Sq, H*Dh] or [Sq, H*Dh], k and v [B, Skv, Hkv*Dh], mask [B, Skv] of any dtype. */
static const char *att_model(const char *q, const char *kv, const char *mask, const char *attrs)
{
	static char text[1024];
	snprintf(text, sizeof text, HEAD "dtype = \"bf16\";\n"
		 "tensors = ( { name = \"q\"; shape = %s; role = \"input\"; },\n"
		 "  { name = \"k\"; shape = %s; role = \"input\"; },\n"
		 "  { name = \"v\"; shape = %s; role = \"input\"; },\n"
		 "  { name = \"m\"; shape = %s; dtype = \"fp32\"; role = \"input\"; } );\n"
		 "ops = ( { name = \"a\"; op = \"attention\"; in = [\"q\", \"k\", \"v\"%s]; out = \"o\"; %s } );\n",
		 q, kv, kv, mask ? mask : "[1]", mask ? ", \"m\"" : "", attrs);
	return text;
}

static void test_attention_shapes(void **state)
{
	struct graph g;
	/* GQA, defaults: kv_heads = heads, scale = 1/sqrt(head size), not causal */
	assert_int_equal(load(&g, att_model("[2, 7, 256]", "[2, 300, 128]", "[2, 300]", "heads = 4; kv_heads = 2;")), 0);
	SHAPE(T(&g, "o"), 2, 7, 256);
	assert_int_equal(T(&g, "o")->dtype, ARK_BF16);
	assert_int_equal(O(&g, "a")->kv_heads, 2);
	assert_true(O(&g, "a")->scale == 0.125);
	assert_int_equal(O(&g, "a")->causal, 0);
	graph_free(&g);
	assert_int_equal(load(&g, att_model("[5, 96]", "[9, 96]", NULL, "heads = 3; causal = true; scale = 0.5;")), 0);
	assert_non_null(strstr(harness_diag(), "warning: input 'm' is never read"));
	SHAPE(T(&g, "o"), 5, 96);
	assert_int_equal(O(&g, "a")->kv_heads, 3);
	assert_true(O(&g, "a")->scale == 0.5);
	assert_int_equal(O(&g, "a")->causal, 1);
	graph_free(&g);

	static const struct {
		const char *q, *kv, *mask, *attrs, *error;
	} cases[] = {
		{"[1, 4, 96]", "[1, 4, 96]", NULL, "heads = 5;",
		 "t.cfg:7: error: query 'q' of op 'a' (attention) has rows of 96, not a multiple of heads = 5"},
		{"[1, 4, 96]", "[1, 4, 96]", NULL, "heads = 24;",
		 "t.cfg:7: error: op 'a' (attention) has a head size of 4 (96 / 24 heads), expected a multiple of 8 up to 128"},
		{"[1, 4, 512]", "[1, 4, 512]", NULL, "heads = 2;",
		 "t.cfg:7: error: op 'a' (attention) has a head size of 256 (512 / 2 heads), expected a multiple of 8 up to 128"},
		{"[1, 4, 96]", "[1, 4, 64]", NULL, "heads = 3; kv_heads = 2;",
		 "t.cfg:7: error: op 'a' (attention) has heads = 3 and kv_heads = 2: kv_heads must divide heads"},
		{"[1, 4, 96]", "[1, 4, 64]", NULL, "heads = 3;",
		 "t.cfg:7: error: key 'k' of op 'a' (attention) has shape [1, 4, 64], expected [1, *, 96]"},
		{"[2, 4, 96]", "[1, 4, 96]", NULL, "heads = 3;",
		 "t.cfg:7: error: key 'k' of op 'a' (attention) has shape [1, 4, 96], expected [2, *, 96]"},
		{"[4, 96]", "[1, 4, 96]", NULL, "heads = 3;",
		 "t.cfg:7: error: key 'k' of op 'a' (attention) has shape [1, 4, 96], expected [*, 96]"},
		{"[96]", "[4, 96]", NULL, "heads = 3;",
		 "t.cfg:7: error: query 'q' of op 'a' (attention) has shape [96], expected [B, Sq, heads * head size]"},
		{"[1, 4, 96]", "[1, 4, 96]", "[1, 5]", "heads = 3;",
		 "t.cfg:7: error: mask 'm' of op 'a' (attention) has shape [1, 5], expected [1, 4] ([B, Skv]: one flag per key)"},
		{"[1, 4, 96]", "[1, 4, 96]", NULL, "",
		 "t.cfg:7: error: op 'a' (attention) needs attribute 'heads'"},
		{"[1, 4, 96]", "[1, 4, 96]", NULL, "heads = 0;",
		 "t.cfg:7: error: 'heads' of op 'a' is 0, expected a number of heads from 1 to 65535"},
		{"[1, 4, 96]", "[1, 4, 96]", NULL, "heads = 3; scale = 0;",
		 "t.cfg:7: error: 'scale' of op 'a' is 0, expected a nonzero number"},
		{"[1, 4, 96]", "[1, 4, 96]", NULL, "heads = 3; causal = 1;",
		 "t.cfg:7: error: 'causal' of op 'a' must be a boolean (true or false), found an integer"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int rc = load(&g, att_model(cases[i].q, cases[i].kv, cases[i].mask, cases[i].attrs));
		if (rc != -1 || strncmp(harness_diag(), cases[i].error, strlen(cases[i].error)))
			fail_msg("case %zu: rc %d, expected '%s' at the start of:\n%s", i, rc, cases[i].error, harness_diag());
		graph_free(&g);
	}
	/* the value must have the key's shape */
	const char *text = HEAD "tensors = ( { name = \"q\"; shape = [1, 4, 96]; role = \"input\"; },\n"
			   "  { name = \"k\"; shape = [1, 4, 96]; role = \"input\"; },\n"
			   "  { name = \"v\"; shape = [1, 5, 96]; role = \"input\"; } );\n"
			   "ops = ( { name = \"a\"; op = \"attention\"; in = [\"q\", \"k\", \"v\"]; out = \"o\"; heads = 3; } );\n";
	assert_int_equal(load(&g, text), -1);
	assert_non_null(strstr(harness_diag(), "t.cfg:5: error: value 'v' of op 'a' (attention) has shape [1, 5, 96], "
				       "expected [1, 4, 96] like the key 'k'"));
	graph_free(&g);
}

/* rope, decode_attention and argmax: shapes, the defaults the front end resolves, argmax's int32 output
 * (declared as an output too), the position an int32 [1] input read by both */
static void test_decode_ops(void **state)
{
	struct graph g;
	assert_int_equal(load(&g, HEAD "dtype = \"fp16\";\n"
				  "tensors = ( { name = \"q\"; shape = [3, 512]; role = \"input\"; },\n"
				  "  { name = \"kc\"; shape = [40, 128]; role = \"input\"; },\n"
				  "  { name = \"vc\"; shape = [40, 128]; role = \"input\"; },\n"
				  "  { name = \"pos\"; shape = [1]; role = \"input\"; dtype = \"int32\"; },\n"
				  "  { name = \"x3\"; shape = [2, 3, 256]; role = \"input\"; },\n"
				  "  { name = \"tok\"; role = \"output\"; dtype = \"int32\"; },\n"
				  "  { name = \"y3\"; role = \"output\"; }, { name = \"i3\"; role = \"output\"; } );\n"
				  "ops = ( { name = \"r\"; op = \"rope\"; in = [\"q\", \"pos\"]; out = \"qr\"; head_dim = 64; },\n"
				  "  { name = \"d\"; op = \"decode_attention\"; in = [\"qr\", \"kc\", \"vc\", \"pos\"]; out = \"o\"; heads = 8;"
				  " kv_heads = 2; },\n"
				  "  { name = \"a\"; op = \"argmax\"; in = [\"o\"]; out = \"tok\"; },\n"
				  "  { name = \"r3\"; op = \"rope\"; in = [\"x3\", \"pos\"]; out = \"y3\"; head_dim = 128; rotary_dim = 32;"
				  " style = \"interleaved\"; base = 500000; },\n"
				  "  { name = \"a3\"; op = \"argmax\"; in = [\"y3\"]; out = \"i3\"; } );\n"),
			 0);
	SHAPE(T(&g, "qr"), 3, 512);
	assert_int_equal(O(&g, "r")->rotary_dim, 64);
	assert_true(O(&g, "r")->base == 10000.0);
	assert_int_equal(O(&g, "r")->style, 0);
	SHAPE(T(&g, "o"), 3, 512);
	assert_int_equal(T(&g, "o")->dtype, ARK_FP16);
	assert_int_equal(O(&g, "d")->kv_heads, 2);
	assert_true(O(&g, "d")->scale == 0.125);
	SHAPE(T(&g, "tok"), 3);
	assert_int_equal(T(&g, "tok")->dtype, ARK_INT32);
	assert_int_equal(O(&g, "r3")->rotary_dim, 32);
	assert_int_equal(O(&g, "r3")->style, 1);
	assert_true(O(&g, "r3")->base == 500000.0);
	SHAPE(T(&g, "i3"), 2, 3);
	assert_int_equal(T(&g, "i3")->dtype, ARK_INT32);
	graph_free(&g);
}

/* dequantize: out has w's shape (3-D too), in the dtype declared for it, else the top-level one; a
 * q8_0 matmul of 30 rows reads its b through m.b_dequant, a bf16 [7, 64] activation made by a
 * dequantize of the same name, and so does a second one of that b (the check pass lowers them,
 * once: again, nothing changes) */
static void test_dequantize(void **state)
{
	struct graph g;
	assert_int_equal(load(&g, HEAD "dtype = \"bf16\";\n"
				  "tensors = ( { name = \"w\"; shape = [2, 40, 96]; role = \"weight\"; dtype = \"q4_1\"; },\n"
				  "  { name = \"v\"; shape = [7, 64]; role = \"weight\"; dtype = \"q8_0\"; },\n"
				  "  { name = \"x\"; shape = [30, 64]; role = \"input\"; },\n"
				  "  { name = \"wf\"; role = \"output\"; dtype = \"fp32\"; }, { name = \"y\"; role = \"output\"; },\n"
				  "  { name = \"y2\"; role = \"output\"; } );\n"
				  "ops = ( { name = \"d\"; op = \"dequantize\"; in = [\"w\"]; out = \"wf\"; },\n"
				  "  { name = \"m\"; op = \"matmul\"; transpose_b = true; in = [\"x\", \"v\"]; out = \"y\"; },\n"
				  "  { name = \"m2\"; op = \"matmul\"; transpose_b = true; in = [\"x\", \"v\"]; out = \"y2\"; } );\n"),
			 0);
	SHAPE(T(&g, "wf"), 2, 40, 96);
	assert_int_equal(T(&g, "wf")->dtype, ARK_FP32);
	for (int pass = 0; pass < 2; pass++) {
		assert_int_equal(g.n_ops, 4); /* m2 reads v through the same activation as m */
		assert_int_equal(g.n_tensors, 7);
		assert_int_equal(graph_find_op(&g, "m2.b_dequant"), -1);
		assert_int_equal(O(&g, "m2")->in[1], graph_find_tensor(&g, "m.b_dequant"));
		assert_int_equal(T(&g, "m.b_dequant")->n_readers, 2);
		assert_int_equal(T(&g, "v")->n_readers, 1);
		SHAPE(T(&g, "m.b_dequant"), 7, 64);
		assert_int_equal(T(&g, "m.b_dequant")->dtype, ARK_BF16);
		assert_int_equal(T(&g, "m.b_dequant")->role, ARK_ROLE_ACTIVATION);
		assert_int_equal(O(&g, "m")->in[1], graph_find_tensor(&g, "m.b_dequant"));
		assert_int_equal(O(&g, "m.b_dequant")->kind, ARK_OP_DEQUANTIZE);
		assert_int_equal(O(&g, "m.b_dequant")->in[0], graph_find_tensor(&g, "v"));
		assert_int_equal(graph_lower_quant(&g), 0);
	}
	graph_free(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_mlp),
		cmocka_unit_test(test_attributes_and_defaults),
		cmocka_unit_test(test_matmul_shapes),
		cmocka_unit_test(test_broadcasting),
		cmocka_unit_test(test_unary_and_norm_shapes),
		cmocka_unit_test(test_collectives),
		cmocka_unit_test(test_attention_shapes),
		cmocka_unit_test(test_decode_ops),
		cmocka_unit_test(test_dequantize),
		cmocka_unit_test(test_topological_order),
		cmocka_unit_test(test_cycle),
		cmocka_unit_test(test_dtype_and_gpu_inheritance),
		cmocka_unit_test(test_rejections),
		cmocka_unit_test(test_long_chain),
		cmocka_unit_test(test_chain_100k),
		cmocka_unit_test(test_includes),
		cmocka_unit_test(test_int_literals),
		cmocka_unit_test(test_float_attributes),
		cmocka_unit_test(test_text_lines),
		cmocka_unit_test(test_dumps),
		cmocka_unit_test(test_embedding_and_views),
		cmocka_unit_test(test_quantized),
		cmocka_unit_test(test_models_load),
		cmocka_unit_test(test_issue12_ops),
		cmocka_unit_test(test_issue12_tiling),
	};
	cmocka_set_message_output(CM_OUTPUT_TAP);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
