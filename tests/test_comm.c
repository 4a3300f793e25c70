/* test_comm.c: communication ops on 2 and 4 GPUs: vCTAs of copy, all_reduce and all_gather, the
 * transports they pick, the cross-GPU waits and counters of the plan, the verifier's proof (and its
 * rejection of a mutated schedule), and the per-GPU tables of the emitted file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dma/dma.h"
#include "ark_proto.h"
#include "emu.h"
#include "harness.h"

#define SMS 8 /* small GPUs: easy to count */

/* all_reduce's algorithm for the next builds: --oneshot-max (ARK_ONESHOT_MAX_AUTO: the default rule) */
static int64_t oneshot_max = ARK_ONESHOT_MAX_AUTO;
/* ... and --ll-max: packets up to 1 MiB (off by default), so that the emulator runs them */
#define LL_MAX_TESTS 1048576
static int64_t ll_max = LL_MAX_TESTS;

/* Compiles model text for GPUs of SMS SMs; arkgen_compile's status. */
static int build(struct arkgen_result *f, const char *text, int64_t p2p_max, int barrier)
{
	struct arkgen_options o = arkgen_options_default();
	o.sms = SMS;
	o.barrier = barrier;
	o.p2p_max = p2p_max;
	o.oneshot_max = oneshot_max;
	o.ll_max = ll_max;
	return harness_compile(text, &o, f);
}

static int count_tmpl(const struct arkgen_result *f, int tmpl, int gpu)
{
	return harness_count_tmpl(&f->tiling, tmpl, gpu);
}

/* Invariants every multi-GPU plan must keep:
 * - every vCTA runs on an SM of its own GPU;
 * - an edge still waited on between GPUs starts at a sender (p2p COPY or DMA) and ends on the GPU
 *   the sender writes to, or goes from a packet sender to the sum that polls its packets;
 * - a counter lives on the GPU of all its waiters and is waited on at system scope exactly when a
 *   producer on another GPU or the DMA engine raises it;
 * - a DMA sender has a counter of its own whose signals per iteration are its chunks.
 * Returns the number of cross-GPU waits. */
static int check_invariants(const struct arkgen_result *f)
{
	const struct tiling *s = &f->tiling;
	const struct schedule *p = &f->schedule[0];
	int G = f->graph.gpus, sms = p->pl.sms / G, cross = 0;
	assert_int_equal(p->pl.sms, G * SMS);
	for (int v = 0; v < s->n_vcta; v++)
		assert_int_equal(p->pl.sm[v] / sms, s->v[v].gpu);
	for (int u = 0; u < s->n_vcta; u++)
		for (int64_t e = s->xadj[u]; e < s->xadj[u + 1]; e++) {
			if (!p->need[e])
				continue;
			int v = s->adj[e], c = p->signal[u];
			if (s->v[u].tmpl == ARK_T_SEND_LL && s->v[v].gpu != s->v[u].gpu) {
				/* packets: the sum on the receiving GPU polls them, no counter */
				cross++;
				assert_int_equal(s->v[v].tmpl, ARK_T_SUM_LL);
				assert_int_equal(f->graph.tensors[s->v[u].write.tensor].gpu, s->v[v].gpu);
				continue;
			}
			assert_true(c >= 0);
			assert_int_equal(p->ctr_gpu[c], s->v[v].gpu);
			int found = 0;
			for (int64_t w = p->wait0[v]; w < p->wait0[v + 1]; w++)
				found |= (int)p->waits[w].counter == c;
			assert_true(found);
			if (s->v[u].gpu != s->v[v].gpu) {
				cross++;
				assert_true(s->v[u].tmpl == ARK_T_COPY || s->v[u].tmpl == ARK_T_DMA);
				assert_int_equal(f->graph.tensors[s->v[u].write.tensor].gpu, s->v[v].gpu);
				assert_true(p->ctr_sys[c]);
			}
		}
	for (int c = 0; c < p->n_counters; c++) {
		int remote = 0, dma = 0, n = 0;
		for (int u = 0; u < s->n_vcta; u++)
			if (p->signal[u] == c) {
				n++;
				remote |= s->v[u].gpu != p->ctr_gpu[c];
				dma |= s->v[u].tmpl == ARK_T_DMA;
			}
		assert_int_equal(p->ctr_sys[c], remote || dma);
		if (dma) {
			assert_int_equal(n, 1);
		} else {
			assert_int_equal(p->per_iter[c], n);
		}
	}
	for (int v = 0; v < s->n_vcta; v++)
		if (s->v[v].tmpl == ARK_T_DMA) {
			uint64_t b = (uint64_t)(s->v[v].k1 - s->v[v].k0) *
				     (uint64_t)ark_dtype_size(f->graph.tensors[s->v[v].reads[0].tensor].dtype);
			assert_true(p->signal[v] >= 0);
			assert_int_equal(p->per_iter[p->signal[v]],
					 dma_chunk_count(b, ARK_DMA_CHUNK_BYTES, ARK_DMA_CHUNK_MAX_BYTES));
		}
	return cross;
}

/* The verifier rejects the plan once one cross-GPU wait is dropped. */
static void check_mutation_rejected(struct arkgen_result *f)
{
	struct part_dag dag;
	char err[512];
	tiling_dag(&f->tiling, &dag);
	assert_int_equal(part_verify(&dag, f->schedule[0].need, &f->schedule[0].pl, f->tiling.n_hazards, f->tiling.hu, f->tiling.hv, err, sizeof err), 0);
	int64_t cut = -1;
	for (int u = 0; u < f->tiling.n_vcta && cut < 0; u++)
		for (int64_t e = f->tiling.xadj[u]; e < f->tiling.xadj[u + 1]; e++)
			if (f->schedule[0].need[e] && f->tiling.v[u].gpu != f->tiling.v[f->tiling.adj[e]].gpu) {
				cut = e;
				break;
			}
	assert_true(cut >= 0);
	f->schedule[0].need[cut] = 0;
	err[0] = 0;
	assert_int_equal(part_verify(&dag, f->schedule[0].need, &f->schedule[0].pl, f->tiling.n_hazards, f->tiling.hu, f->tiling.hv, err, sizeof err), -1);
	assert_non_null(strstr(err, "not ordered"));
	f->schedule[0].need[cut] = 1;
}

/* Model text: n GPUs, inputs t<i> [rows, cols] of dtype on GPU i, then `ops`. */
static char *model(int n, int64_t rows, int64_t cols, const char *dtype, const char *ops)
{
	static char buf[8192];
	int k = snprintf(buf, sizeof buf, "version = 1; name = \"c\"; gpus = %d; dtype = \"%s\";\ntensors = (\n", n,
			 dtype);
	for (int i = 0; i < n; i++)
		k += snprintf(buf + k, sizeof buf - (size_t)k,
			      "  { name = \"t%d\"; shape = [%lld, %lld]; role = \"input\"; gpu = %d; },\n", i,
			      (long long)rows, (long long)cols, i);
	k += snprintf(buf + k, sizeof buf - (size_t)k, "  { name = \"o\"; role = \"output\"; }\n);\nops = (\n%s\n);\n",
		      ops);
	return buf;
}

static void test_copy_p2p_and_dma(void **state)
{
	(void)state;
	struct arkgen_result f;
	/* [8, 1000] fp16 = 16000 bytes: p2p under the default threshold */
	const char *ops = "{ name = \"cp\"; op = \"copy\"; in = [\"t0\"]; out = \"o\"; gpu = 1; }";
	assert_int_equal(build(&f, model(2, 8, 1000, "fp16", ops), ARK_P2P_MAX_DEFAULT, 0), 0);
	assert_int_equal(count_tmpl(&f, ARK_T_COPY, 0), 2);  /* 8000 elements, 4096 per piece */
	assert_int_equal(count_tmpl(&f, ARK_T_DMA, -1), 0);
	assert_int_equal(count_tmpl(&f, ARK_T_NOP, 1), 1);   /* the receiver waits for both pieces */
	assert_int_equal(count_tmpl(&f, ARK_T_COPY, 1), 0);
	assert_in_range(check_invariants(&f), 1, 2); /* one if both pieces share an SM (program order) */
	/* the two p2p senders share one counter on GPU 1, raised twice per iteration */
	int c = f.schedule[0].signal[0];
	assert_int_equal(f.schedule[0].signal[1], c);
	assert_int_equal(f.schedule[0].ctr_gpu[c], 1);
	assert_int_equal(f.schedule[0].per_iter[c], 2);
	check_mutation_rejected(&f);
	arkgen_result_free(&f);

	/* a threshold below the size: one DMA request */
	assert_int_equal(build(&f, model(2, 8, 1000, "fp16", ops), 15999, 0), 0);
	assert_int_equal(count_tmpl(&f, ARK_T_DMA, 0), 1);
	assert_int_equal(count_tmpl(&f, ARK_T_COPY, -1), 0);
	assert_int_equal(check_invariants(&f), 1);
	arkgen_result_free(&f);
}

static void test_dma_chunks(void **state)
{
	(void)state;
	struct arkgen_result f;
	/* fp32 [1, 786433]: 3 MiB + 4 bytes, chunks of 1 MiB, 2 MiB and 4 bytes */
	const char *ops = "{ name = \"cp\"; op = \"copy\"; in = [\"t1\"]; out = \"o\"; transport = \"dma\"; }";
	assert_int_equal(build(&f, model(2, 1, 786433, "fp32", ops), ARK_P2P_MAX_DEFAULT, 0), 0);
	assert_int_equal(count_tmpl(&f, ARK_T_DMA, 1), 1);
	check_invariants(&f);
	for (int v = 0; v < f.tiling.n_vcta; v++)
		if (f.tiling.v[v].tmpl == ARK_T_DMA)
			assert_int_equal(f.schedule[0].per_iter[f.schedule[0].signal[v]], 3);
	arkgen_result_free(&f);
}

/* all_reduce over n GPUs of [rows, cols] with the algorithm that --oneshot-max `os` picks. One-shot:
 * every input whole to every other GPU, summed there. Two-phase: n - 1 parts sent to each GPU, summed
 * there, sent back. */
static void all_reduce_case(int n, int64_t rows, int64_t cols, const char *transport, int expect_dma, int64_t os,
			    int expect_oneshot)
{
	char ops[2048];
	int k = snprintf(ops, sizeof ops, "{ name = \"ar\"; op = \"all_reduce\"; transport = \"%s\"; in = [", transport);
	for (int i = 0; i < n; i++)
		k += snprintf(ops + k, sizeof ops - (size_t)k, "%s\"t%d\"", i ? ", " : "", i);
	k += snprintf(ops + k, sizeof ops - (size_t)k, "]; out = [\"o\"");
	for (int i = 1; i < n; i++)
		k += snprintf(ops + k, sizeof ops - (size_t)k, ", \"s%d\"", i);
	snprintf(ops + k, sizeof ops - (size_t)k, "]; }");
	struct arkgen_result f;
	oneshot_max = os;
	assert_int_equal(build(&f, model(n, rows, cols, "bf16", ops), ARK_P2P_MAX_DEFAULT, 0), 0);
	oneshot_max = ARK_ONESHOT_MAX_AUTO;
	int hops = expect_oneshot ? 1 : 2;
	/* p2p sends: stores + fence + flag, or packets (one-shot up to --ll-max, whole words) */
	int ll = count_tmpl(&f, ARK_T_SEND_LL, -1);
	int sends = expect_dma ? count_tmpl(&f, ARK_T_DMA, -1) : count_tmpl(&f, ARK_T_COPY, -1) + ll;
	assert_int_equal(count_tmpl(&f, expect_dma ? ARK_T_COPY : ARK_T_DMA, -1), 0);
	int want_ll = !expect_dma && expect_oneshot && rows * cols * 2 <= ll_max && cols % 2 == 0;
	assert_int_equal(ll > 0, want_ll);
	assert_int_equal(count_tmpl(&f, ARK_T_SUM_LL, -1) > 0, want_ll);
	if (want_ll)
		assert_int_equal(count_tmpl(&f, ARK_T_COPY, -1), 0);
	if (expect_dma)
		assert_int_equal(sends, hops * n * (n - 1)); /* one request per part and peer, per phase */
	else
		assert_true(sends >= hops * n * (n - 1));
	for (int g = 0; g < n; g++) {
		assert_true(count_tmpl(&f, ARK_T_SUM, g) + count_tmpl(&f, ARK_T_SUM_LL, g) >= 1);
		/* two-phase: a receiver waits for the sums sent back; one-shot: the sum writes the output */
		assert_int_equal(count_tmpl(&f, ARK_T_NOP, g), !expect_oneshot);
	}
	/* the SUM vCTAs of every GPU together cover its part exactly once: the whole tensor (one-shot) or
	 * the GPU's part (two-phase); each knows where its own input comes in the GPU order */
	int64_t covered[ARK_MAX_GPUS] = {0};
	for (int v = 0; v < f.tiling.n_vcta; v++)
		if (f.tiling.v[v].tmpl == ARK_T_SUM || f.tiling.v[v].tmpl == ARK_T_SUM_LL) {
			covered[f.tiling.v[v].gpu] += f.tiling.v[v].k1 - f.tiling.v[v].k0;
			assert_int_equal(f.tiling.comm[f.tiling.v[v].opp - f.graph.n_ops].splits, f.tiling.v[v].gpu);
		}
	int64_t total = 0;
	for (int g = 0; g < n; g++) {
		if (expect_oneshot)
			assert_int_equal(covered[g], rows * cols);
		total += covered[g];
	}
	assert_int_equal(total, expect_oneshot ? n * rows * cols : rows * cols);
	assert_true(check_invariants(&f) >= hops * n * (n - 1));
	check_mutation_rejected(&f);
	arkgen_result_free(&f);
}

static void test_all_reduce_2(void **state)
{
	(void)state;
	const int64_t A = ARK_ONESHOT_MAX_AUTO;
	all_reduce_case(2, 1, 4096, "auto", 0, A, 1);
	all_reduce_case(2, 1, 4096, "dma", 1, A, 1);
	all_reduce_case(2, 3, 1001, "p2p", 0, A, 1);
	all_reduce_case(2, 1 << 12, 1 << 12, "p2p", 0, A, 1); /* 32 MiB: still one-shot on 2 GPUs */
	all_reduce_case(2, 1, 4096, "auto", 0, 0, 0);       /* --oneshot-max 0: two-phase */
	all_reduce_case(2, 1, 4096, "dma", 1, 8191, 0);     /* 8192 bytes: over the limit */
	all_reduce_case(2, 3, 1001, "p2p", 0, 6006, 1);     /* exactly at it: one-shot */
	all_reduce_case(2, 3, 1001, "p2p", 0, 0, 0);        /* rows split, odd sizes */
}

static void test_all_reduce_4(void **state)
{
	(void)state;
	const int64_t A = ARK_ONESHOT_MAX_AUTO;
	all_reduce_case(4, 1, 4096, "auto", 0, A, 1);
	all_reduce_case(4, 1, 4096, "dma", 1, A, 1);
	all_reduce_case(4, 1, 4096, "dma", 1, 0, 0);
	all_reduce_case(4, 1, 100, "p2p", 0, 0, 0);      /* parts of 32, 32, 32 and 4 elements */
	all_reduce_case(4, 1, 131072, "p2p", 0, A, 1);   /* 256 KiB: the largest one-shot on 4 GPUs */
	all_reduce_case(4, 1, 1 << 20, "auto", 0, A, 0); /* 2 MiB: two-phase, 512 KiB parts by p2p */
}

static void test_all_gather(void **state)
{
	(void)state;
	for (int n = 2; n <= 4; n += 2) {
		char ops[2048];
		int k = snprintf(ops, sizeof ops, "{ name = \"ag\"; op = \"all_gather\"; in = [");
		for (int i = 0; i < n; i++)
			k += snprintf(ops + k, sizeof ops - (size_t)k, "%s\"t%d\"", i ? ", " : "", i);
		k += snprintf(ops + k, sizeof ops - (size_t)k, "]; out = [\"o\"");
		for (int i = 1; i < n; i++)
			k += snprintf(ops + k, sizeof ops - (size_t)k, ", \"g%d\"", i);
		snprintf(ops + k, sizeof ops - (size_t)k, "]; }");
		struct arkgen_result f;
		assert_int_equal(build(&f, model(n, 6, 40, "fp32", ops), ARK_P2P_MAX_DEFAULT, 0), 0);
		assert_int_equal(f.graph.tensors[graph_find_tensor(&f.graph, "o")].shape[1], 40 * n);
		assert_int_equal(count_tmpl(&f, ARK_T_COPY, -1), n * (n - 1)); /* 240 elements: one piece */
		for (int g = 0; g < n; g++)
			assert_true(count_tmpl(&f, ARK_T_GATHER, g) >= 1);
		/* every GATHER waits (directly or by program order) for all n - 1 incoming transfers */
		assert_int_equal(check_invariants(&f), n * (n - 1));
		check_mutation_rejected(&f);
		arkgen_result_free(&f);
	}
}

static void test_emit_tables(void **state)
{
	(void)state;
	struct arkgen_result f;
	const char *ops = "{ name = \"ar\"; op = \"all_reduce\"; in = [\"t0\", \"t1\"]; out = [\"o\", \"s1\"]; },\n"
			  "{ name = \"cp\"; op = \"copy\"; in = [\"t0\"]; out = \"c1\"; gpu = 1; transport = \"dma\"; }";
	/* packets: the sums poll them, nothing signals another GPU but the DMA engine's flag */
	assert_int_equal(build(&f, model(2, 1, 4096, "bf16", ops), ARK_P2P_MAX_DEFAULT, 0), 0);
	char *ll_text = harness_emit_loop(&f, "test");
	assert_non_null(strstr(ll_text, "ARK_T_SEND_LL"));
	assert_non_null(strstr(ll_text, "ARK_T_SUM_LL"));
	assert_null(strstr(ll_text, ", signals GPU 0"));
	free(ll_text);
	arkgen_result_free(&f);
	/* stores, then a flag on the peer */
	ll_max = ARK_LL_MAX_DEFAULT; /* the default: stores */
	assert_int_equal(build(&f, model(2, 1, 4096, "bf16", ops), ARK_P2P_MAX_DEFAULT, 0), 0);
	ll_max = LL_MAX_TESTS;
	char *text = harness_emit_loop(&f, "test");
	for (int g = 0; g < 2; g++) {
		char name[64];
		snprintf(name, sizeof name, "static const struct ark_task tasks_g%d[", g);
		assert_non_null(strstr(text, name));
		snprintf(name, sizeof name, "static const struct ark_wait waits_g%d[", g);
		assert_non_null(strstr(text, name));
	}
	assert_non_null(strstr(text, "ARK_T_DMA"));
	assert_non_null(strstr(text, ", signals GPU 1"));
	assert_non_null(strstr(text, ", signals GPU 0"));
	assert_non_null(strstr(text, "signals from other GPUs or DMA chunks"));
	assert_non_null(strstr(text, "#define ARK_SMS 8\n"));
	free(text);
	arkgen_result_free(&f);
}


/* A model with every communication op over n GPUs for inputs of `shape` and dtype; emulated. */
static void emulate_case(int n, const char *shape, const char *dtype, const char *transport, int axis)
{
	char text[8192], ins[256] = "", ars[256] = "", ags[256] = "";
	int k = snprintf(text, sizeof text, "version = 1; name = \"e\"; gpus = %d;\ntensors = (\n", n);
	for (int i = 0; i < n; i++) {
		k += snprintf(text + k, sizeof text - (size_t)k,
			      "  { name = \"t%d\"; shape = %s; dtype = \"%s\"; role = \"input\"; gpu = %d; },\n"
			      "  { name = \"r%d\"; role = \"output\"; },\n  { name = \"g%d\"; role = \"output\"; },\n",
			      i, shape, dtype, i, i, i);
		snprintf(ins + strlen(ins), sizeof ins - strlen(ins), "%s\"t%d\"", i ? ", " : "", i);
		snprintf(ars + strlen(ars), sizeof ars - strlen(ars), "%s\"r%d\"", i ? ", " : "", i);
		snprintf(ags + strlen(ags), sizeof ags - strlen(ags), "%s\"g%d\"", i ? ", " : "", i);
	}
	snprintf(text + k, sizeof text - (size_t)k,
		 "  { name = \"c\"; role = \"output\"; }\n);\nops = (\n"
		 "  { name = \"ar\"; op = \"all_reduce\"; in = [%s]; out = [%s]; transport = \"%s\"; },\n"
		 "  { name = \"ag\"; op = \"all_gather\"; in = [%s]; out = [%s]; transport = \"%s\"; axis = %d; },\n"
		 "  { name = \"cp\"; op = \"copy\"; in = [\"r%d\"]; out = \"c\"; gpu = 0; transport = \"%s\"; }\n);\n",
		 ins, ars, transport, ins, ags, transport, axis, n - 1, transport);
	/* all_reduce one-shot (the default on 2 GPUs and for these small sizes), then two-phase */
	for (int alg = 0; alg < 2; alg++) {
		struct arkgen_result f;
		oneshot_max = alg ? 0 : ARK_ONESHOT_MAX_AUTO;
		assert_int_equal(build(&f, text, ARK_P2P_MAX_DEFAULT, 0), 0);
		oneshot_max = ARK_ONESHOT_MAX_AUTO;
		check_invariants(&f);
		for (uint64_t seed = 1; seed <= 3; seed++)
			emu_run(&f, seed, 2);
		arkgen_result_free(&f);
	}
}

static void test_emulated_2(void **state)
{
	(void)state;
	static const char *const tr[] = {"p2p", "dma", "auto"};
	for (int t = 0; t < 3; t++) {
		emulate_case(2, "[1, 2]", "fp16", tr[t], -1);
		emulate_case(2, "[3, 1001]", "fp32", tr[t], -1);
		emulate_case(2, "[5, 6, 40]", "bf16", tr[t], 1);
		emulate_case(2, "[1, 40000]", "bf16", tr[t], 0);
	}
	emulate_case(2, "[1, 524291]", "fp16", "dma", -1); /* 1 MiB + 6 bytes: two chunks per request */
}

static void test_emulated_4(void **state)
{
	(void)state;
	static const char *const tr[] = {"p2p", "dma", "auto"};
	for (int t = 0; t < 3; t++) {
		emulate_case(4, "[1, 1]", "fp32", tr[t], -1); /* one element: three of the four parts empty */
		emulate_case(4, "[1, 100]", "fp16", tr[t], -1);
		emulate_case(4, "[7, 33]", "bf16", tr[t], 0);
		emulate_case(4, "[2, 3, 50]", "fp32", tr[t], 1);
	}
}

/* all_reduce followed by the same activation on every output: the SUMs apply it (no activation vCTAs)
 * on both algorithms; emulated. A different activation on one output keeps them apart (gelu's two
 * forms are two). acts: op names, "gelu tanh" for gelu with approximate = "tanh"; want_act: the kind
 * the SUMs apply, ARK_ACT_NONE when they must not fuse. */
static void fused_case(int n, const char *acts[], int want_act)
{
	const int expect_fused = want_act != ARK_ACT_NONE;
	char text[8192], ins[256] = "", ars[256] = "";
	int k = snprintf(text, sizeof text, "version = 1; name = \"f\"; gpus = %d; dtype = \"bf16\";\ntensors = (\n", n);
	for (int i = 0; i < n; i++) {
		k += snprintf(text + k, sizeof text - (size_t)k,
			      "%s  { name = \"t%d\"; shape = [3, 1000]; role = \"input\"; gpu = %d; },\n"
			      "  { name = \"a%d\"; role = \"output\"; }", i ? ",\n" : "", i, i, i);
		snprintf(ins + strlen(ins), sizeof ins - strlen(ins), "%s\"t%d\"", i ? ", " : "", i);
		snprintf(ars + strlen(ars), sizeof ars - strlen(ars), "%s\"r%d\"", i ? ", " : "", i);
	}
	k += snprintf(text + k, sizeof text - (size_t)k, "\n);\nops = (\n  { name = \"ar\"; op = \"all_reduce\"; in = [%s]; "
		      "out = [%s]; }", ins, ars);
	for (int i = 0; i < n; i++)
		k += snprintf(text + k, sizeof text - (size_t)k,
			      ",\n  { name = \"act%d\"; op = \"%s\"; in = [\"r%d\"]; out = \"a%d\"; gpu = %d;%s }", i,
			      strcmp(acts[i], "gelu tanh") ? acts[i] : "gelu", i, i, i,
			      strcmp(acts[i], "gelu tanh") ? "" : " approximate = \"tanh\";");
	snprintf(text + k, sizeof text - (size_t)k, "\n);\n");
	for (int alg = 0; alg < 2; alg++) {
		struct arkgen_result f;
		oneshot_max = alg ? 0 : ARK_ONESHOT_MAX_AUTO;
		assert_int_equal(build(&f, text, ARK_P2P_MAX_DEFAULT, 0), 0);
		oneshot_max = ARK_ONESHOT_MAX_AUTO;
		int sums = 0;
		for (int v = 0; v < f.tiling.n_vcta; v++)
			if (f.tiling.v[v].tmpl == ARK_T_SUM || f.tiling.v[v].tmpl == ARK_T_SUM_LL) {
				const struct comm_opp *x = &f.tiling.comm[f.tiling.v[v].opp - f.graph.n_ops];
				sums++;
				assert_int_equal(x->act, want_act);
				/* the sum goes straight to the activation's output */
				assert_int_equal(f.graph.tensors[x->out].name[0], expect_fused ? 'a' : 'r');
				assert_int_equal(f.graph.tensors[x->out].name[1] - '0', f.tiling.v[v].gpu);
			}
		assert_true(sums >= (alg ? 1 : n)); /* two-phase: 3 rows make no part for a 4th GPU */
		if (expect_fused) {
			check_invariants(&f);
			for (uint64_t seed = 1; seed <= 2; seed++)
				emu_run(&f, seed, 2);
		}
		arkgen_result_free(&f);
	}
}

static void test_fused_activation(void **state)
{
	(void)state;
	const char *gelu[] = {"gelu", "gelu", "gelu", "gelu"}, *mixed[] = {"gelu", "relu"};
	const char *gelu_tanh[] = {"gelu tanh", "gelu tanh", "gelu tanh", "gelu tanh"}, *forms[] = {"gelu", "gelu tanh"};
	const char *tanh_[] = {"tanh", "tanh"};
	fused_case(2, gelu, ARK_OP_GELU);
	fused_case(4, gelu, ARK_OP_GELU);
	fused_case(2, mixed, ARK_ACT_NONE);
	fused_case(2, gelu_tanh, ARK_OP_GELU_TANH);
	fused_case(4, gelu_tanh, ARK_OP_GELU_TANH);
	fused_case(2, forms, ARK_ACT_NONE);
	fused_case(2, tanh_, ARK_OP_TANH);
}

/* Receivers start on the first chunks: a two-phase all_reduce through the DMA engine whose parts are 8 MiB
 * (chunks of 1, 2, 4 and 1 MiB): each SUM piece waits on the flag of each incoming part only for the
 * chunks that hold the elements it reads; the piece with the last elements waits for all of them.
 * A copy followed by an elementwise op: the op's range tiles wait for the chunks they read. The
 * emulator, raising flags chunk by chunk, checks that nothing is read before it arrived. */
static void test_dma_early_start(void **state)
{
	(void)state;
	const char *ops = "{ name = \"ar\"; op = \"all_reduce\"; transport = \"dma\"; in = [\"t0\", \"t1\"]; "
			  "out = [\"o\", \"s1\"]; }";
	struct arkgen_result f;
	oneshot_max = 0;
	assert_int_equal(build(&f, model(2, 1, 1 << 22, "fp32", ops), ARK_P2P_MAX_DEFAULT, 0), 0);
	oneshot_max = ARK_ONESHOT_MAX_AUTO;
	check_invariants(&f);
	const struct tiling *s = &f.tiling;
	const struct schedule *p = &f.schedule[0];
	int partial = 0, full = 0;
	for (int u = 0; u < s->n_vcta; u++) {
		if (s->v[u].tmpl != ARK_T_DMA || !strstr(f.graph.tensors[s->v[u].write.tensor].name, "__rs"))
			continue; /* the reduce-scatter requests only: into the staging tensors */
		int c = p->signal[u];
		assert_int_equal(p->per_iter[c], 4);
		int64_t w0 = s->v[u].write.c0; /* one row: the part starts at this column */
		for (int v = 0; v < s->n_vcta; v++) {
			if (s->v[v].tmpl != ARK_T_SUM || s->v[v].gpu != f.graph.tensors[s->v[u].write.tensor].gpu)
				continue;
			int found = 0;
			for (int64_t w = p->wait0[v]; w < p->wait0[v + 1]; w++)
				if ((int)p->waits[w].counter == c) {
					found = 1;
					uint64_t last = ((uint64_t)s->v[v].n1 - 1 - (uint64_t)w0) * 4;
					uint32_t want = last < (1u << 20) ? 1 : last < (3u << 20) ? 2 : last < (7u << 20) ? 3 : 4;
					assert_int_equal(p->waits[w].need, want);
					assert_int_equal(p->waits[w].per_iter, 4);
					partial += want < 4;
					full += want == 4;
				}
			assert_true(found);
		}
	}
	assert_int_equal(partial, 14); /* 2 GPUs x pieces 0 .. 6 of 8 (1 MiB each) */
	assert_int_equal(full, 2);     /* the last piece of each GPU */
	emu_run(&f, 7, 2);
	arkgen_result_free(&f);

	/* copy of [4, 2^20] fp16 (8 MiB) through the DMA engine, then a relu on GPU 1 */
	const char *ops2 = "{ name = \"cp\"; op = \"copy\"; in = [\"t0\"]; out = \"c\"; gpu = 1; transport = \"dma\"; },\n"
			   "{ name = \"r\"; op = \"relu\"; in = [\"c\"]; out = \"o\"; gpu = 1; }";
	assert_int_equal(build(&f, model(2, 4, 1 << 20, "fp16", ops2), ARK_P2P_MAX_DEFAULT, 0), 0);
	check_invariants(&f);
	partial = full = 0;
	for (int u = 0; u < s->n_vcta; u++) {
		if (s->v[u].tmpl != ARK_T_DMA)
			continue;
		int c = p->signal[u];
		assert_int_equal(p->per_iter[c], 4);
		for (int v = 0; v < s->n_vcta; v++)
			for (int64_t w = p->wait0[v]; w < p->wait0[v + 1]; w++)
				if ((int)p->waits[w].counter == c && s->v[v].tmpl != ARK_T_NOP) {
					/* the last element the tile reads, in bytes from the start of c */
					uint64_t last = ((uint64_t)(s->v[v].m1 - 1) * (1u << 20) + s->v[v].n1 - 1) * 2;
					if (s->v[v].tmpl == ARK_T_EW_CHAIN || s->v[v].k1 > s->v[v].k0)
						last = ((uint64_t)s->v[v].k1 - 1) * 2;
					uint32_t want = last < (1u << 20) ? 1 : last < (3u << 20) ? 2 : last < (7u << 20) ? 3 : 4;
					assert_int_equal(p->waits[w].need, want);
					partial += want < 4;
					full += want == 4;
				}
	}
	assert_true(partial >= 1);
	assert_true(full >= 1);
	arkgen_result_free(&f);
}

/* Runs the overlapping emulator on f over seeds 1 .. seeds; how many runs failed (the first
 * message in first). */
static int overlapped(const struct arkgen_result *f, int seeds, int iters, struct emu_opts o, char *first, size_t n)
{
	int bad = 0;
	char msg[1024];
	for (int seed = 1; seed <= seeds; seed++)
		if (emu_run_ex(f, (uint64_t)seed, iters, &o, msg, sizeof msg) && !bad++ && first)
			snprintf(first, n, "seed %d: %s", seed, msg);
	return bad;
}

/* Iterations overlapped as the loop kernels and the runtime allow (a GPU's SMs in iteration i + 1
 * while another GPU's are still in i or have not seen i + 1, the DMA engine across iterations),
 * counters starting at 0 and just below the 32-bit wrap: every plan passes. */
static void test_overlapped(void **state)
{
	(void)state;
	const char *ar = "{ name = \"ar\"; op = \"all_reduce\"; in = [\"t0\", \"t1\"]; out = [\"o\", \"s1\"]; transport = \"%s\"; }";
	const char *cp = "{ name = \"cp\"; op = \"copy\"; in = [\"t0\"]; out = \"o\"; gpu = 1; transport = \"dma\"; }";
	static const char *const tr[] = {"p2p", "dma"};
	int runs = 0;
	long long ovl = 0;
	for (int k = 0; k < 7; k++) {
		char ops[512];
		struct arkgen_result f;
		snprintf(ops, sizeof ops, ar, tr[k & 1]);
		ll_max = k < 2 ? 0 : LL_MAX_TESTS; /* stores, then packets */
		oneshot_max = k == 4 || k == 5 ? 0 : ARK_ONESHOT_MAX_AUTO;
		/* k: 0, 1 stores and DMA; 2, 3 packets and DMA; 4, 5 two-phase; 6 a copy of 3 chunks by DMA */
		int rc = k < 6 ? build(&f, model(2, 3, 1001, "fp32", ops), ARK_P2P_MAX_DEFAULT, 0)
			       : build(&f, model(2, 2, 1 << 20, "fp16", cp), ARK_P2P_MAX_DEFAULT, 0);
		ll_max = LL_MAX_TESTS;
		oneshot_max = ARK_ONESHOT_MAX_AUTO;
		assert_int_equal(rc, 0);
		for (int b = 0; b < 2; b++) {
			char first[1200] = "";
			struct emu_opts o = {.ctr_base = b ? 0xfffffff0u : 0, .overlap = 1, .overlapped = &ovl};
			if (overlapped(&f, 4, 6, o, first, sizeof first))
				fail_msg("plan %d, counters from %#x: %s", k, o.ctr_base, first);
			runs += 4;
		}
		arkgen_result_free(&f);
	}
	printf("# %d overlapped runs of 6 iterations passed; %lld steps ran in an iteration another GPU was not in\n",
	       runs, ovl);
	assert_true(ovl > 0);
}

/* A plan with no wait that orders a GPU's iteration i + 1 after another GPU's iteration i: GPU 0's
 * stores into GPU 1's staging slots of a one-shot all_reduce (a write after read across
 * iterations: GPU 1's sum of i reads the slot GPU 0 writes in i + 1). The runtime orders them (it
 * rings i + 1 once every GPU completed i); a host that rings each GPU as soon as that GPU completed
 * does not, and the overlapping emulator catches the sums reading the next iteration's bytes. The
 * emulator that runs one iteration to its end before the next cannot: it passes every seed. */
static void test_cross_iteration(void **state)
{
	(void)state;
	const char *ar = "{ name = \"ar\"; op = \"all_reduce\"; in = [\"t0\", \"t1\"]; out = [\"o\", \"s1\"]; transport = \"p2p\"; }";
	struct arkgen_result f;
	ll_max = 0;
	assert_int_equal(build(&f, model(2, 3, 1001, "fp32", ar), ARK_P2P_MAX_DEFAULT, 0), 0);
	ll_max = LL_MAX_TESTS;
	assert_true(count_tmpl(&f, ARK_T_COPY, -1) > 0);
	assert_true(count_tmpl(&f, ARK_T_SUM, -1) > 0);
	char first[1200] = "";
	int seeds = 40;
	int old = overlapped(&f, seeds, 6, (struct emu_opts){.overlap = 0}, NULL, 0);
	int honest = overlapped(&f, seeds, 6, (struct emu_opts){.overlap = 1, .ctr_base = 0xfffffff0u}, NULL, 0);
	int early = overlapped(&f, seeds, 6, (struct emu_opts){.overlap = 1, .early_host = 1}, first, sizeof first);
	printf("# %d seeds: one iteration at a time %d failed; overlapped %d failed; overlapped with a host that "
	       "rings early %d failed, first: %s\n", seeds, old, honest, early, first);
	assert_int_equal(old, 0);
	assert_int_equal(honest, 0);
	assert_true(early > 0);
	assert_non_null(strstr(first, "iteration"));
	arkgen_result_free(&f);
}

/* The DMA request of a copy that nothing waits for to its last chunk (its receiver's wait dropped):
 * the request outlives its iteration. The overlapping emulator finds what that breaks, by the
 * bytes (an output read before it arrived, or the next iteration's input written under the
 * engine); the other one by its rule that every task ran while a request was copying. */
static void test_dma_outlives_iteration(void **state)
{
	(void)state;
	const char *cp = "{ name = \"cp\"; op = \"copy\"; in = [\"t0\"]; out = \"o\"; gpu = 1; transport = \"dma\"; }";
	struct arkgen_result f;
	assert_int_equal(build(&f, model(2, 2, 1 << 20, "fp16", cp), ARK_P2P_MAX_DEFAULT, 0), 0);
	const struct tiling *s = &f.tiling;
	struct schedule *p = &f.schedule[0];
	int dropped = 0;
	for (int v = 0; v < s->n_vcta; v++)
		if (s->v[v].tmpl == ARK_T_NOP)
			for (int64_t w = p->wait0[v]; w < p->wait0[v + 1]; w++)
				p->waits[w].need = 0, dropped++;
	assert_true(dropped > 0);
	char first[1200] = "";
	int seeds = 6;
	int old = overlapped(&f, seeds, 4, (struct emu_opts){.overlap = 0}, NULL, 0);
	int ovl = overlapped(&f, seeds, 4, (struct emu_opts){.overlap = 1}, first, sizeof first);
	printf("# receiver's waits dropped, %d seeds: one iteration at a time %d failed, overlapped %d failed, first: %s\n",
	       seeds, old, ovl, first);
	assert_int_equal(ovl, seeds);
	arkgen_result_free(&f);
}

/* State across iterations in the emulator, one GPU: copies read an accumulator and a cache before
 * their updates (assign, kv_append at an input position), a counter advances; the outputs must
 * match the reference run in lockstep (the state carried in both) over iterations one at a time and
 * overlapping as the loop kernel allows, counters from 0 and near the wrap. With the waits of the
 * updates dropped, an update can run before a read of the old value, and some seed shows it. */
static const char *const state_model =
	"version = 1; name = \"st\"; dtype = \"fp32\";\n"
	"tensors = ( { name = \"x\"; shape = [3, 40]; role = \"input\"; },\n"
	"  { name = \"p\"; shape = [1]; role = \"input\"; dtype = \"int32\"; },\n"
	"  { name = \"acc\"; shape = [3, 40]; role = \"state\"; },\n"
	"  { name = \"cache\"; shape = [4, 40]; role = \"state\"; },\n"
	"  { name = \"n\"; shape = [1]; role = \"state\"; dtype = \"int32\"; },\n"
	"  { name = \"old\"; role = \"output\"; }, { name = \"oldc\"; role = \"output\"; },\n"
	"  { name = \"newc\"; role = \"output\"; } );\n"
	"ops = ( { name = \"c1\"; op = \"copy\"; in = [\"acc\"]; out = \"old\"; },\n"
	"  { name = \"c2\"; op = \"copy\"; in = [\"cache\"]; out = \"oldc\"; },\n"
	"  { name = \"sa\"; op = \"assign\"; in = [\"acc\", \"x\"]; },\n"
	"  { name = \"kv\"; op = \"kv_append\"; in = [\"cache\", \"x\", \"p\"]; out = \"cache2\"; },\n"
	"  { name = \"c3\"; op = \"copy\"; in = [\"cache2\"]; out = \"newc\"; },\n"
	"  { name = \"adv\"; op = \"advance\"; in = [\"n\"]; by = 2; } );\n";

static void test_state_emulated(void **state)
{
	(void)state;
	struct arkgen_result f;
	struct arkgen_options opt = arkgen_options_default();
	opt.sms = SMS;
	opt.policy = PART_ROUNDROBIN; /* the reads and the updates on different SMs: waits between them */
	assert_int_equal(harness_compile(state_model, &opt, &f), 0);
	assert_true(count_tmpl(&f, ARK_T_ASSIGN, -1) >= 2);
	assert_true(count_tmpl(&f, ARK_T_KV_APPEND, -1) >= 1);
	char first[1200] = "";
	for (int ovl = 0; ovl < 2; ovl++)
		for (int b = 0; b < 2; b++) {
			struct emu_opts o = {.ctr_base = b ? 0xfffffff0u : 0, .overlap = ovl};
			if (overlapped(&f, 8, 6, o, first, sizeof first))
				fail_msg("overlap %d, counters from %#x: %s", ovl, o.ctr_base, first);
		}
	/* the updates' waits dropped: a read of the old value may come after the update */
	const struct tiling *s = &f.tiling;
	struct schedule *p = &f.schedule[0];
	int dropped = 0;
	for (int v = 0; v < s->n_vcta; v++)
		if (s->v[v].tmpl == ARK_T_ASSIGN || s->v[v].tmpl == ARK_T_KV_APPEND)
			for (int64_t w = p->wait0[v]; w < p->wait0[v + 1]; w++)
				p->waits[w].need = 0, dropped++;
	int seeds = 40, bad = overlapped(&f, seeds, 4, (struct emu_opts){.overlap = 0}, first, sizeof first);
	printf("# state: %d waits of the updates dropped, %d seeds: %d failed, first: %s\n", dropped, seeds, bad, first);
	assert_true(dropped > 0);
	assert_true(bad > 0);
	assert_non_null(strstr(first, "output"));
	arkgen_result_free(&f);
}

/* The generation protocol in the emulator: a token state advanced by the model (its token of step
 * t is x_t + 1, x_t the prompt id t or the token of step t - 1), the step's row appended to a cache;
 * prompts, one step, the EOS at the first step and one made during the prompt (which does not end
 * it). Every step's outputs and token against the reference, over seeds. */
static const char *const token_model =
	"version = 1; name = \"tk\"; dtype = \"fp32\"; token = \"tok\";\n"
	"tensors = ( { name = \"x\"; shape = [1, 24]; role = \"input\"; },\n"
	"  { name = \"tok\"; shape = [1]; role = \"state\"; dtype = \"int32\"; },\n"
	"  { name = \"pos\"; shape = [1]; role = \"state\"; dtype = \"int32\"; },\n"
	"  { name = \"cache\"; shape = [64, 24]; role = \"state\"; },\n"
	"  { name = \"y\"; role = \"output\"; } );\n"
	"ops = ( { name = \"kv\"; op = \"kv_append\"; in = [\"cache\", \"x\", \"pos\"]; out = \"c2\"; },\n"
	"  { name = \"cp\"; op = \"copy\"; in = [\"c2\"]; out = \"y\"; },\n"
	"  { name = \"next\"; op = \"advance\"; in = [\"tok\"]; },\n"
	"  { name = \"step\"; op = \"advance\"; in = [\"pos\"]; } );\n";

static void gen_case(const struct arkgen_result *f, const char *what, const int32_t *prompt, uint32_t n_prompt,
		     uint32_t steps, int has_eos, int32_t eos, int want_steps)
{
	int32_t tokens[64];
	char msg[1200] = "";
	struct emu_gen q = {steps, prompt, n_prompt, has_eos ? ARK_GEN_EOS : 0, eos};
	for (uint64_t seed = 1; seed <= 4; seed++) {
		int ran = emu_generate(f, seed, &q, tokens, msg, sizeof msg);
		if (ran != want_steps)
			fail_msg("%s, seed %llu: %d steps run, want %d: %s", what, (unsigned long long)seed, ran, want_steps, msg);
		int32_t prev = 0; /* the token state starts at zero */
		for (int t = 0; t < ran; t++) {
			int32_t x = (uint32_t)t < n_prompt ? prompt[t] : prev;
			if (tokens[t] != x + 1)
				fail_msg("%s, seed %llu: step %d made %d, want %d", what, (unsigned long long)seed, t, tokens[t], x + 1);
			prev = tokens[t];
		}
	}
}

static void test_generate_emulated(void **state)
{
	(void)state;
	struct arkgen_result f;
	struct arkgen_options opt = arkgen_options_default();
	opt.sms = SMS;
	opt.policy = PART_ROUNDROBIN;
	assert_int_equal(harness_compile(token_model, &opt, &f), 0);
	assert_int_equal(f.graph.token, graph_find_tensor(&f.graph, "tok"));
	static const int32_t p3[] = {5, 9, 2}, p1[] = {41}, p2[] = {41, 3};
	gen_case(&f, "prompt of 3, 8 steps", p3, 3, 8, 0, 0, 8);
	gen_case(&f, "1 step, no prompt", NULL, 0, 1, 0, 0, 1);
	gen_case(&f, "EOS at the first step", p1, 1, 10, 1, 42, 1);
	gen_case(&f, "EOS made during the prompt, then after it", p2, 2, 50, 1, 42, 40);
	gen_case(&f, "no EOS among the steps", p2, 2, 30, 1, 1000, 30);
	arkgen_result_free(&f);
}

static void test_barrier_refused(void **state)
{
	(void)state;
	struct arkgen_result f;
	const char *ops = "{ name = \"cp\"; op = \"copy\"; in = [\"t0\"]; out = \"o\"; gpu = 1; }";
	assert_int_equal(build(&f, model(2, 1, 64, "fp16", ops), ARK_P2P_MAX_DEFAULT, 1), -1);
	arkgen_result_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copy_p2p_and_dma),
		cmocka_unit_test(test_dma_chunks),
		cmocka_unit_test(test_all_reduce_2),
		cmocka_unit_test(test_all_reduce_4),
		cmocka_unit_test(test_all_gather),
		cmocka_unit_test(test_emit_tables),
		cmocka_unit_test(test_fused_activation),
		cmocka_unit_test(test_barrier_refused),
		cmocka_unit_test(test_state_emulated),
		cmocka_unit_test(test_generate_emulated),
		cmocka_unit_test(test_emulated_2),
		cmocka_unit_test(test_emulated_4),
		cmocka_unit_test(test_dma_early_start),
		cmocka_unit_test(test_overlapped),
		cmocka_unit_test(test_cross_iteration),
		cmocka_unit_test(test_dma_outlives_iteration),
	};
	cmocka_set_message_output(CM_OUTPUT_TAP);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
