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

#include "codegen/diag.h"
#include "codegen/emit.h"
#include "codegen/graph.h"
#include "codegen/sched.h"

#define SMS 8 /* small GPUs: easy to count */

struct fix {
	struct graph g;
	struct sched s;
	struct schedule p;
	int planned;
};

/* Loads, tiles and plans model text; returns 0 on success (diagnostics go to /dev/null). */
static int build(struct fix *f, const char *text, int64_t p2p_max, int barrier)
{
	memset(f, 0, sizeof *f);
	diag_out = fopen("/dev/null", "w");
	diag_reset();
	struct tile_opts to = {.sms = SMS, .smem = 98304, .fuse = 1, .reuse = 1, .p2p_max = p2p_max};
	struct part_gpu gpu;
	part_gpu_default(&gpu, SMS);
	int rc = cfg_load_string(&f->g, "t.cfg", text);
	if (!rc)
		rc = graph_check(&f->g);
	if (!rc)
		rc = tile_graph(&f->s, &f->g, &to) || mem_plan(&f->s) || deps_build(&f->s);
	if (!rc) {
		rc = plan_schedule(&f->s, &gpu, PART_METIS, barrier, &f->p);
		f->planned = 1;
	}
	fclose(diag_out);
	diag_out = NULL;
	return rc;
}

static void destroy(struct fix *f)
{
	if (f->planned)
		plan_free(&f->p);
	if (f->s.g)
		sched_free(&f->s);
	graph_free(&f->g);
}

static int count_tmpl(const struct fix *f, int tmpl, int gpu)
{
	int n = 0;
	for (int v = 0; v < f->s.n_vcta; v++)
		n += (int)f->s.v[v].tmpl == tmpl && (gpu < 0 || f->s.v[v].gpu == gpu);
	return n;
}

/* Invariants every multi-GPU plan must keep:
 * - every vCTA runs on an SM of its own GPU;
 * - an edge still waited on between GPUs starts at a sender (p2p COPY or DMA) and ends on the GPU
 *   the sender writes to;
 * - a counter lives on the GPU of all its waiters and is waited on at system scope exactly when a
 *   producer on another GPU or the DMA engine raises it;
 * - a DMA sender has a counter of its own whose signals per iteration are its chunks.
 * Returns the number of cross-GPU waits. */
static int check_invariants(const struct fix *f)
{
	const struct sched *s = &f->s;
	const struct schedule *p = &f->p;
	int G = f->g.gpus, sms = p->pl.sms / G, cross = 0;
	assert_int_equal(p->pl.sms, G * SMS);
	for (int v = 0; v < s->n_vcta; v++)
		assert_int_equal(p->pl.sm[v] / sms, s->v[v].gpu);
	for (int u = 0; u < s->n_vcta; u++)
		for (int64_t e = s->xadj[u]; e < s->xadj[u + 1]; e++) {
			if (!p->need[e])
				continue;
			int v = s->adj[e], c = p->signal[u];
			assert_true(c >= 0);
			assert_int_equal(p->ctr_gpu[c], s->v[v].gpu);
			int found = 0;
			for (int64_t w = p->wait0[v]; w < p->wait0[v + 1]; w++)
				found |= (int)p->waits[w].counter == c;
			assert_true(found);
			if (s->v[u].gpu != s->v[v].gpu) {
				cross++;
				assert_true(s->v[u].tmpl == ARK_T_COPY || s->v[u].tmpl == ARK_T_DMA);
				assert_int_equal(f->g.tensors[s->v[u].write.tensor].gpu, s->v[v].gpu);
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
				     (uint64_t)ark_dtype_size(f->g.tensors[s->v[v].reads[0].tensor].dtype);
			assert_true(p->signal[v] >= 0);
			assert_int_equal(p->per_iter[p->signal[v]], (b + ARK_DMA_CHUNK_BYTES - 1) / ARK_DMA_CHUNK_BYTES);
		}
	return cross;
}

/* The verifier rejects the plan once one cross-GPU wait is dropped. */
static void check_mutation_rejected(struct fix *f)
{
	struct part_dag dag;
	char err[512];
	sched_dag(&f->s, &dag);
	assert_int_equal(part_verify(&dag, f->p.need, &f->p.pl, f->s.n_hazards, f->s.hu, f->s.hv, err, sizeof err), 0);
	int64_t cut = -1;
	for (int u = 0; u < f->s.n_vcta && cut < 0; u++)
		for (int64_t e = f->s.xadj[u]; e < f->s.xadj[u + 1]; e++)
			if (f->p.need[e] && f->s.v[u].gpu != f->s.v[f->s.adj[e]].gpu) {
				cut = e;
				break;
			}
	assert_true(cut >= 0);
	f->p.need[cut] = 0;
	err[0] = 0;
	assert_int_equal(part_verify(&dag, f->p.need, &f->p.pl, f->s.n_hazards, f->s.hu, f->s.hv, err, sizeof err), -1);
	assert_non_null(strstr(err, "not ordered"));
	f->p.need[cut] = 1;
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
	struct fix f;
	/* [8, 1000] fp16 = 16000 bytes: p2p under the default threshold */
	const char *ops = "{ name = \"cp\"; op = \"copy\"; in = [\"t0\"]; out = \"o\"; gpu = 1; }";
	assert_int_equal(build(&f, model(2, 8, 1000, "fp16", ops), ARK_P2P_MAX_DEFAULT, 0), 0);
	assert_int_equal(count_tmpl(&f, ARK_T_COPY, 0), 2);  /* 8000 elements, 4096 per piece */
	assert_int_equal(count_tmpl(&f, ARK_T_DMA, -1), 0);
	assert_int_equal(count_tmpl(&f, ARK_T_NOP, 1), 1);   /* the receiver waits for both pieces */
	assert_int_equal(count_tmpl(&f, ARK_T_COPY, 1), 0);
	assert_in_range(check_invariants(&f), 1, 2); /* one if both pieces share an SM (program order) */
	/* the two p2p senders share one counter on GPU 1, raised twice per iteration */
	int c = f.p.signal[0];
	assert_int_equal(f.p.signal[1], c);
	assert_int_equal(f.p.ctr_gpu[c], 1);
	assert_int_equal(f.p.per_iter[c], 2);
	check_mutation_rejected(&f);
	destroy(&f);

	/* a threshold below the size: one DMA request */
	assert_int_equal(build(&f, model(2, 8, 1000, "fp16", ops), 15999, 0), 0);
	assert_int_equal(count_tmpl(&f, ARK_T_DMA, 0), 1);
	assert_int_equal(count_tmpl(&f, ARK_T_COPY, -1), 0);
	assert_int_equal(check_invariants(&f), 1);
	destroy(&f);
}

static void test_dma_chunks(void **state)
{
	(void)state;
	struct fix f;
	/* fp32 [1, 786433]: 3 MiB + 4 bytes, 4 chunks of the DMA engine */
	const char *ops = "{ name = \"cp\"; op = \"copy\"; in = [\"t1\"]; out = \"o\"; transport = \"dma\"; }";
	assert_int_equal(build(&f, model(2, 1, 786433, "fp32", ops), ARK_P2P_MAX_DEFAULT, 0), 0);
	assert_int_equal(count_tmpl(&f, ARK_T_DMA, 1), 1);
	check_invariants(&f);
	for (int v = 0; v < f.s.n_vcta; v++)
		if (f.s.v[v].tmpl == ARK_T_DMA)
			assert_int_equal(f.p.per_iter[f.p.signal[v]], 4);
	destroy(&f);
}

/* all_reduce over n GPUs of [rows, cols]: n - 1 parts sent to each GPU, summed there, sent back. */
static void all_reduce_case(int n, int64_t rows, int64_t cols, const char *transport, int expect_dma)
{
	char ops[2048];
	int k = snprintf(ops, sizeof ops, "{ name = \"ar\"; op = \"all_reduce\"; transport = \"%s\"; in = [", transport);
	for (int i = 0; i < n; i++)
		k += snprintf(ops + k, sizeof ops - (size_t)k, "%s\"t%d\"", i ? ", " : "", i);
	k += snprintf(ops + k, sizeof ops - (size_t)k, "]; out = [\"o\"");
	for (int i = 1; i < n; i++)
		k += snprintf(ops + k, sizeof ops - (size_t)k, ", \"s%d\"", i);
	snprintf(ops + k, sizeof ops - (size_t)k, "]; }");
	struct fix f;
	assert_int_equal(build(&f, model(n, rows, cols, "bf16", ops), ARK_P2P_MAX_DEFAULT, 0), 0);
	int sends = count_tmpl(&f, expect_dma ? ARK_T_DMA : ARK_T_COPY, -1);
	assert_int_equal(count_tmpl(&f, expect_dma ? ARK_T_COPY : ARK_T_DMA, -1), 0);
	if (expect_dma)
		assert_int_equal(sends, 2 * n * (n - 1)); /* one request per part and peer, both phases */
	else
		assert_true(sends >= 2 * n * (n - 1));
	for (int g = 0; g < n; g++) {
		assert_true(count_tmpl(&f, ARK_T_SUM, g) >= 1);
		assert_int_equal(count_tmpl(&f, ARK_T_NOP, g), 1);
	}
	/* the SUM vCTAs of GPU g together cover its part exactly once */
	int64_t covered = 0;
	for (int v = 0; v < f.s.n_vcta; v++)
		if (f.s.v[v].tmpl == ARK_T_SUM)
			covered += f.s.v[v].k1 - f.s.v[v].k0;
	assert_int_equal(covered, rows * cols);
	assert_true(check_invariants(&f) >= 2 * n * (n - 1));
	check_mutation_rejected(&f);
	destroy(&f);
}

static void test_all_reduce_2(void **state)
{
	(void)state;
	all_reduce_case(2, 1, 4096, "auto", 0);
	all_reduce_case(2, 1, 4096, "dma", 1);
	all_reduce_case(2, 3, 1001, "p2p", 0); /* rows split, odd sizes */
}

static void test_all_reduce_4(void **state)
{
	(void)state;
	all_reduce_case(4, 1, 4096, "auto", 0);
	all_reduce_case(4, 1, 4096, "dma", 1);
	all_reduce_case(4, 1, 100, "p2p", 0);    /* parts of 32, 32, 32 and 4 elements */
	all_reduce_case(4, 1, 1 << 20, "auto", 1); /* 512 KiB parts: above the threshold */
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
		struct fix f;
		assert_int_equal(build(&f, model(n, 6, 40, "fp32", ops), ARK_P2P_MAX_DEFAULT, 0), 0);
		assert_int_equal(f.g.tensors[graph_find_tensor(&f.g, "o")].shape[1], 40 * n);
		assert_int_equal(count_tmpl(&f, ARK_T_COPY, -1), n * (n - 1)); /* 240 elements: one piece */
		for (int g = 0; g < n; g++)
			assert_true(count_tmpl(&f, ARK_T_GATHER, g) >= 1);
		/* every GATHER waits (directly or by program order) for all n - 1 incoming transfers */
		assert_int_equal(check_invariants(&f), n * (n - 1));
		check_mutation_rejected(&f);
		destroy(&f);
	}
}

static void test_emit_tables(void **state)
{
	(void)state;
	struct fix f;
	const char *ops = "{ name = \"ar\"; op = \"all_reduce\"; in = [\"t0\", \"t1\"]; out = [\"o\", \"s1\"]; },\n"
			  "{ name = \"cp\"; op = \"copy\"; in = [\"t0\"]; out = \"c1\"; gpu = 1; transport = \"dma\"; }";
	assert_int_equal(build(&f, model(2, 1, 4096, "bf16", ops), ARK_P2P_MAX_DEFAULT, 0), 0);
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	struct emit_info info = {.options = "test", .threads = 256, .smem = 98304};
	assert_int_equal(emit_loop(&f.s, &f.p, &info, m), 0);
	fclose(m);
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
	destroy(&f);
}

static void test_barrier_refused(void **state)
{
	(void)state;
	struct fix f;
	const char *ops = "{ name = \"cp\"; op = \"copy\"; in = [\"t0\"]; out = \"o\"; gpu = 1; }";
	assert_int_equal(build(&f, model(2, 1, 64, "fp16", ops), ARK_P2P_MAX_DEFAULT, 1), -1);
	destroy(&f);
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
		cmocka_unit_test(test_barrier_refused),
	};
	cmocka_set_message_output(CM_OUTPUT_TAP);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
