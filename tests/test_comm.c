/* test_comm.c: communication ops on 2 and 4 GPUs: vCTAs of copy, all_reduce and all_gather, the
 * transports they pick, the cross-GPU waits and counters of the plan, the verifier's proof (and its
 * rejection of a mutated schedule), and the per-GPU tables of the emitted file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ark.h"
#include "ark_proto.h"
#include "codegen/diag.h"
#include "codegen/emit.h"
#include "codegen/graph.h"
#include "codegen/schedule.h"
#include "dma/dma.h"

#define SMS 8 /* small GPUs: easy to count */

struct fix {
	struct graph g;
	struct tiling s;
	struct schedule p;
	int planned;
};

/* all_reduce's algorithm for the next builds: --oneshot-max (ARK_ONESHOT_MAX_AUTO: the default rule) */
static int64_t oneshot_max = ARK_ONESHOT_MAX_AUTO;
/* ... and --ll-max: packets up to 1 MiB (off by default), so that the emulator runs them */
#define LL_MAX_TESTS 1048576
static int64_t ll_max = LL_MAX_TESTS;

/* Loads, tiles and plans model text; returns 0 on success (diagnostics go to /dev/null). */
static int build(struct fix *f, const char *text, int64_t p2p_max, int barrier)
{
	memset(f, 0, sizeof *f);
	diag_out = fopen("/dev/null", "w");
	diag_reset();
	struct tile_opts to = {.sms = SMS, .smem = 98304, .fuse = 1, .reuse = 1, .p2p_max = p2p_max,
			      .oneshot_max = oneshot_max, .ll_max = ll_max};
	struct part_gpu gpu;
	part_gpu_default(&gpu, SMS);
	int rc = cfg_load_string(&f->g, "t.cfg", text);
	if (!rc)
		rc = graph_check(&f->g);
	if (!rc)
		rc = (tiling_init(&f->s, &f->g, &to), fuse_graph(&f->s), tile_graph(&f->s)) || mem_plan(&f->s) || deps_build(&f->s);
	if (!rc) {
		rc = schedule_build(&f->s, &gpu, PART_METIS, barrier, &f->p);
		f->planned = 1;
	}
	fclose(diag_out);
	diag_out = NULL;
	return rc;
}

static void destroy(struct fix *f)
{
	if (f->planned)
		schedule_free(&f->p);
	if (f->s.g)
		tiling_free(&f->s);
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
 *   the sender writes to, or goes from a packet sender to the sum that polls its packets;
 * - a counter lives on the GPU of all its waiters and is waited on at system scope exactly when a
 *   producer on another GPU or the DMA engine raises it;
 * - a DMA sender has a counter of its own whose signals per iteration are its chunks.
 * Returns the number of cross-GPU waits. */
static int check_invariants(const struct fix *f)
{
	const struct tiling *s = &f->s;
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
			if (s->v[u].tmpl == ARK_T_SEND_LL && s->v[v].gpu != s->v[u].gpu) {
				/* packets: the sum on the receiving GPU polls them, no counter */
				cross++;
				assert_int_equal(s->v[v].tmpl, ARK_T_SUM_LL);
				assert_int_equal(f->g.tensors[s->v[u].write.tensor].gpu, s->v[v].gpu);
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
			assert_int_equal(p->per_iter[p->signal[v]],
					 dma_chunk_count(b, ARK_DMA_CHUNK_BYTES, ARK_DMA_CHUNK_MAX_BYTES));
		}
	return cross;
}

/* The verifier rejects the plan once one cross-GPU wait is dropped. */
static void check_mutation_rejected(struct fix *f)
{
	struct part_dag dag;
	char err[512];
	tiling_dag(&f->s, &dag);
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
	/* fp32 [1, 786433]: 3 MiB + 4 bytes, chunks of 1 MiB, 2 MiB and 4 bytes */
	const char *ops = "{ name = \"cp\"; op = \"copy\"; in = [\"t1\"]; out = \"o\"; transport = \"dma\"; }";
	assert_int_equal(build(&f, model(2, 1, 786433, "fp32", ops), ARK_P2P_MAX_DEFAULT, 0), 0);
	assert_int_equal(count_tmpl(&f, ARK_T_DMA, 1), 1);
	check_invariants(&f);
	for (int v = 0; v < f.s.n_vcta; v++)
		if (f.s.v[v].tmpl == ARK_T_DMA)
			assert_int_equal(f.p.per_iter[f.p.signal[v]], 3);
	destroy(&f);
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
	struct fix f;
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
	for (int v = 0; v < f.s.n_vcta; v++)
		if (f.s.v[v].tmpl == ARK_T_SUM || f.s.v[v].tmpl == ARK_T_SUM_LL) {
			covered[f.s.v[v].gpu] += f.s.v[v].k1 - f.s.v[v].k0;
			assert_int_equal(f.s.comm[f.s.v[v].opp - f.g.n_ops].splits, f.s.v[v].gpu);
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
	destroy(&f);
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
	/* packets: the sums poll them, nothing signals another GPU but the DMA engine's flag */
	assert_int_equal(build(&f, model(2, 1, 4096, "bf16", ops), ARK_P2P_MAX_DEFAULT, 0), 0);
	char *ll_text = NULL;
	size_t ll_len = 0;
	FILE *lm = open_memstream(&ll_text, &ll_len);
	struct emit_info ll_info = {.options = "test", .threads = 256, .smem = 98304};
	assert_int_equal(emit_loop(&f.s, &f.p, &ll_info, lm), 0);
	fclose(lm);
	assert_non_null(strstr(ll_text, "ARK_T_SEND_LL"));
	assert_non_null(strstr(ll_text, "ARK_T_SUM_LL"));
	assert_null(strstr(ll_text, ", signals GPU 0"));
	free(ll_text);
	destroy(&f);
	/* stores, then a flag on the peer */
	ll_max = ARK_LL_MAX_DEFAULT; /* the default: stores */
	assert_int_equal(build(&f, model(2, 1, 4096, "bf16", ops), ARK_P2P_MAX_DEFAULT, 0), 0);
	ll_max = LL_MAX_TESTS;
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


/* ---- an emulator of the emitted tables ---------------------------------------------------------
 * Runs the plan as the loop kernels would, sequentially consistent: every GPU's arena and counter
 * array on the host, every SM walking its list, a task started only once its waits hold (the
 * monotonic targets of the iteration), the communication templates mirrored in C with the op params
 * the emitted file holds, and DMA requests completed chunk by chunk as the engine cuts them (copy,
 * then the flag to its chunk's value) at random later steps. A task that reads or writes bytes of a
 * request that have not arrived yet fails the test.
 * Picks the next SM or DMA completion at random, so different seeds interleave differently. Fails
 * on a deadlock, on a DMA request nobody waited for, and on any output that differs from the CPU
 * reference (outputs are poisoned before every iteration). */

struct dma_pending {
	int src, dst;
	uint64_t so, dof, bytes;
	uint32_t flag, value;
	uint32_t chunks, done;       /* chunks of the request, chunks arrived */
	uint64_t arrived;            /* bytes arrived: [0, arrived) of the destination range */
};

struct emu {
	const struct fix *f;
	int G, sms;
	char *arena[ARK_MAX_GPUS];
	uint32_t *ctr[ARK_MAX_GPUS];
	struct ark_opp *xp;          /* per xopp */
	int *next;                   /* per global SM: position in its list */
	struct dma_pending *q;
	int nq;
	uint64_t rng;
};

static uint32_t rnd(struct emu *e)
{
	e->rng = e->rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(e->rng >> 33);
}

/* Tensor t, or when t is never stored (an activation runs on it inside the vCTA that computes it),
 * the output of that activation. */
static const struct ark_tensor *stored_result(const struct ark_op *O, int n_ops, const struct ark_tensor *T, int t)
{
	for (int m = 0; m < n_ops && T[t].offset == ARK_NOT_STORED; m++)
		if (O[m].n_in == 1 && O[m].in[0] == t)
			return &T[O[m].out[0]];
	return &T[t];
}

/* The activations a SUM may apply (templates/ark_dtype.cuh's ark_act). */
static float emu_act(int act, float x)
{
	switch (act) {
	case ARK_OP_RELU: return x > 0 ? x : 0;
	case ARK_OP_GELU: return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
	case ARK_OP_SILU: return x / (1.0f + expf(-x));
	default: return x;
	}
}

/* Packet w of the packet buffer at byte `at` of GPU g's arena (op_comm.cuh: {word, iteration}). */
static uint64_t emu_packet(const struct emu *e, int g, uint64_t at, uint64_t w)
{
	uint64_t q;
	memcpy(&q, e->arena[g] + at + 8 * w, 8);
	return q;
}

static int task_ready(const struct emu *e, int v, uint32_t iter)
{
	const struct schedule *p = &e->f->p;
	for (int64_t w = p->wait0[v]; w < p->wait0[v + 1]; w++) {
		int c = (int)p->waits[w].counter;
		uint32_t want = (iter - 1) * p->waits[w].per_iter + p->waits[w].need;
		if ((int32_t)(e->ctr[p->ctr_gpu[c]][ARK_CTR__FIRST + p->ctr_index[c]] - want) < 0)
			return 0;
	}
	const struct vcta *t = &e->f->s.v[v];
	if (t->tmpl == ARK_T_SUM_LL) { /* every packet of its words holds this iteration */
		const struct ark_opp *o = &e->xp[t->opp - e->f->s.g->n_ops];
		uint64_t es = (uint64_t)ark_dtype_size(o->dtype);
		for (uint32_t s = 0; s < o->K; s++)
			for (uint64_t w = t->k0 * es / 4; 4 * w < t->k1 * es; w++)
				if (emu_packet(e, t->gpu, o->in[1] + s * o->in[2], w) >> 32 != iter)
					return 0;
	}
	return 1;
}

/* Fails if a region of vCTA v touches destination bytes of a DMA request that have not arrived. */
static void check_arrived(const struct emu *e, int v, const struct region *r)
{
	const struct tiling *s = &e->f->s;
	int gpu = e->f->g.tensors[r->tensor].gpu;
	uint64_t es = (uint64_t)ark_dtype_size(e->f->g.tensors[r->tensor].dtype), base = s->offset[r->tensor];
	for (int k = 0; k < e->nq; k++) {
		const struct dma_pending *d = &e->q[k];
		if (d->dst != gpu)
			continue;
		for (int64_t row = r->r0; row < r->r1; row++) {
			uint64_t a = base + ((uint64_t)row * (uint64_t)s->cols[r->tensor] + (uint64_t)r->c0) * es;
			uint64_t b = a + (uint64_t)(r->c1 - r->c0) * es;
			if (a < d->dof + d->bytes && d->dof + d->arrived < b)
				fail_msg("vCTA %d touches bytes [%llu, %llu) of GPU %d before they arrived (request "
					 "[%llu, %llu), %llu bytes in)", v, (unsigned long long)a, (unsigned long long)b,
					 gpu, (unsigned long long)d->dof, (unsigned long long)(d->dof + d->bytes),
					 (unsigned long long)d->arrived);
		}
	}
}

static void run_task(struct emu *e, int v, uint32_t iter)
{
	const struct tiling *s = &e->f->s;
	const struct schedule *p = &e->f->p;
	const struct vcta *t = &s->v[v];
	int gpu = t->gpu;
	assert_true(t->opp >= s->g->n_ops); /* the emulator knows the communication templates only */
	const struct ark_opp *o = &e->xp[t->opp - s->g->n_ops];
	uint64_t es = (uint64_t)ark_dtype_size(o->dtype);
	char *a = e->arena[gpu];
	for (int i = 0; i < t->n_reads; i++)
		check_arrived(e, v, &t->reads[i]);
	if (t->write.r0 < t->write.r1)
		check_arrived(e, v, &t->write);
	switch (t->tmpl) {
	case ARK_T_COPY:
		assert_true(o->flags & ARK_OPP_PUSH);
		memcpy(e->arena[o->peer] + o->out + t->k0 * es, a + o->in[0] + t->k0 * es, (t->k1 - t->k0) * es);
		break;
	case ARK_T_DMA: {
		uint64_t bytes = (t->k1 - t->k0) * es;
		uint32_t chunks = (uint32_t)dma_chunk_count(bytes, ARK_DMA_CHUNK_BYTES, ARK_DMA_CHUNK_MAX_BYTES);
		int c = p->signal[v];
		assert_true(c >= 0 && p->ctr_gpu[c] == o->peer);
		e->q = realloc(e->q, (size_t)(e->nq + 1) * sizeof *e->q);
		e->q[e->nq++] = (struct dma_pending){gpu, o->peer, o->in[0] + t->k0 * es, o->out + t->k0 * es, bytes,
						     ARK_CTR__FIRST + (uint32_t)p->ctr_index[c], iter * chunks,
						     chunks, 0, 0};
		return; /* no signal: the engine raises the flag */
	}
	case ARK_T_SEND_LL: /* packets {word, iteration}; a partial last word is zero-padded */
		for (uint64_t w = t->k0 * es / 4; 4 * w < t->k1 * es; w++) {
			uint32_t word = 0;
			memcpy(&word, a + o->in[0] + 4 * w, 4 * w + 4 <= t->k1 * es ? 4 : 2);
			uint64_t q = word | (uint64_t)iter << 32;
			memcpy(e->arena[o->peer] + o->out + 8 * w, &q, 8);
		}
		break;
	case ARK_T_SUM:
	case ARK_T_SUM_LL:
		for (uint64_t i = t->k0; i < t->k1; i++) { /* in GPU order; in[0] is GPU `splits`' own */
			float acc = 0;
			for (int j = 0; j <= o->K; j++) {
				uint64_t at = j == (int)o->splits ? o->in[0]
								  : o->in[1] + (uint64_t)(j - (j > (int)o->splits)) * o->in[2];
				float x;
				if (t->tmpl == ARK_T_SUM_LL && j != (int)o->splits) { /* element i of its packet */
					uint32_t word = (uint32_t)emu_packet(e, gpu, at, i * es / 4);
					x = ark_get((const char *)&word, o->dtype, (int64_t)(i * es % 4 / es));
				} else {
					x = ark_get(a + at, o->dtype, (int64_t)i);
				}
				acc = j ? acc + x : x;
			}
			ark_set(a + o->out, o->dtype, (int64_t)i, emu_act(o->act, acc));
		}
		break;
	case ARK_T_GATHER: {
		uint64_t seg = (uint64_t)o->N * es, K = (uint64_t)o->K, own = o->splits;
		for (uint64_t b = t->k0 * es; b < t->k1 * es; b += es) {
			uint64_t ob = b / (K * seg), r = b % (K * seg), j = r / seg, w = r % seg;
			const char *src = j == own ? a + o->in[0] : a + o->in[1] + (j - (j > own)) * o->in[2];
			memcpy(a + o->out + b, src + ob * seg + w, es);
		}
		break;
	}
	case ARK_T_NOP:
		break;
	default:
		fail_msg("vCTA %d: template %d not emulated", v, t->tmpl);
	}
	int c = p->signal[v];
	if (c >= 0)
		e->ctr[p->ctr_gpu[c]][ARK_CTR__FIRST + p->ctr_index[c]]++;
}

/* Host copies of the model's tensors and ops, for the CPU reference. */
static void ref_tables(const struct fix *f, struct ark_tensor *T, struct ark_op *O)
{
	const struct graph *g = &f->g;
	for (int t = 0; t < g->n_tensors; t++) {
		const struct tensor *x = &g->tensors[t];
		T[t] = (struct ark_tensor){x->name, (uint8_t)x->dtype, (uint8_t)x->role, (uint8_t)x->ndim, (uint8_t)x->gpu,
					   {0}, f->s.offset[t], tensor_bytes(x)};
		memcpy(T[t].shape, x->shape, sizeof T[t].shape);
	}
	for (int k = 0; k < g->n_ops; k++) {
		const struct op *o = &g->ops[g->order[k]];
		O[k] = (struct ark_op){o->name, (uint16_t)o->kind, (uint8_t)o->n_in, (uint8_t)o->n_out, (uint8_t)o->gpu, 0,
				       (uint8_t)o->transport, (int8_t)o->axis, {0}, {0}, 1.0f, 0.0f, o->line};
		memcpy(O[k].in, o->in, sizeof O[k].in);
		memcpy(O[k].out, o->out, sizeof O[k].out);
	}
}

static void emulate(const struct fix *f, uint64_t seed, int iters)
{
	const struct tiling *s = &f->s;
	const struct schedule *p = &f->p;
	const struct graph *g = &f->g;
	struct emu e = {.f = f, .G = g->gpus, .sms = p->pl.sms / g->gpus, .rng = seed};
	for (int d = 0; d < e.G; d++) {
		e.arena[d] = calloc(1, s->arena[d] + 1);
		e.ctr[d] = calloc(ARK_CTR__FIRST + (size_t)p->gpu_counters[d], sizeof(uint32_t));
	}
	e.xp = calloc((size_t)s->n_comm + 1, sizeof *e.xp);
	for (int x = 0; x < s->n_comm; x++)
		emit_comm_opp_params(s, x, &e.xp[x]);
	e.next = calloc((size_t)p->pl.sms, sizeof *e.next);
	struct ark_tensor *T = calloc((size_t)g->n_tensors, sizeof *T);
	struct ark_op *O = calloc((size_t)g->n_ops, sizeof *O);
	void **ref = calloc((size_t)g->n_tensors, sizeof *ref);
	ref_tables(f, T, O);
	for (int t = 0; t < g->n_tensors; t++)
		ref[t] = calloc(1, T[t].bytes + 1);
	for (uint32_t iter = 1; iter <= (uint32_t)iters; iter++) {
		/* fresh inputs, poisoned outputs */
		for (int t = 0; t < g->n_tensors; t++) {
			char *dev = e.arena[T[t].gpu] + T[t].offset;
			if (T[t].role == ARK_ROLE_INPUT) {
				ark_fill_random(ref[t], T[t].dtype, ark_tensor_elems(&T[t]), seed * 977 + iter * 131 + (uint64_t)t,
						1.0f);
				memcpy(dev, ref[t], T[t].bytes);
			} else if (T[t].role == ARK_ROLE_OUTPUT) {
				memset(dev, 0xff, T[t].bytes);
			}
		}
		memset(e.next, 0, (size_t)p->pl.sms * sizeof *e.next);
		int left = s->n_vcta;
		int *ready = malloc(((size_t)p->pl.sms + 1) * sizeof *ready);
		while (left > 0 || e.nq > 0) {
			int nr = 0;
			for (int q = 0; q < p->pl.sms; q++) {
				int i = p->pl.begin[q] + e.next[q];
				if (i < p->pl.begin[q + 1] && task_ready(&e, p->pl.list[i], iter))
					ready[nr++] = q;
			}
			if (nr == 0 && e.nq == 0)
				fail_msg("deadlock in iteration %u: %d vCTAs left, none ready", iter, left);
			if (nr == 0 && left > 0 && e.nq == 0)
				break;
			uint32_t pick = rnd(&e) % (uint32_t)(nr + e.nq);
			if (pick < (uint32_t)nr) {
				int q = ready[pick];
				run_task(&e, p->pl.list[p->pl.begin[q] + e.next[q]++], iter);
				left--;
			} else {
				/* the DMA engine serves the oldest request of a (src, dst) pair first, one
				 * chunk at a time: copy, then the flag to the chunk's value */
				struct dma_pending pk = e.q[pick - (uint32_t)nr];
				int k = 0;
				while (e.q[k].src != pk.src || e.q[k].dst != pk.dst)
					k++;
				struct dma_pending *d = &e.q[k];
				uint64_t end = dma_chunk_start(d->done + 1, ARK_DMA_CHUNK_BYTES, ARK_DMA_CHUNK_MAX_BYTES);
				if (end > d->bytes)
					end = d->bytes;
				memcpy(e.arena[d->dst] + d->dof + d->arrived, e.arena[d->src] + d->so + d->arrived,
				       end - d->arrived);
				d->arrived = end;
				d->done++;
				e.ctr[d->dst][d->flag] = d->value - (d->chunks - d->done);
				if (d->done == d->chunks) {
					assert_int_equal(d->arrived, d->bytes);
					memmove(&e.q[k], &e.q[k + 1], (size_t)(e.nq - k - 1) * sizeof *e.q);
					e.nq--;
				}
			}
			if (left == 0)
				assert_int_equal(e.nq, 0); /* every request is waited for within the iteration */
		}
		free(ready);
		assert_int_equal(ark_ref_run(&(struct ark_model){.n_tensors = g->n_tensors, .tensors = T,
								.n_ops = g->n_ops, .ops = O},
					     ref),
				 0);
		for (int t = 0; t < g->n_tensors; t++) {
			if (T[t].role != ARK_ROLE_OUTPUT)
				continue;
			double rel = 0;
			int64_t bad = 0;
			ark_compare(e.arena[T[t].gpu] + T[t].offset, ref[t], T[t].dtype, ark_tensor_elems(&T[t]), &rel, &bad);
			if (bad || rel > 1e-6 * (T[t].dtype == ARK_FP32 ? 1 : 1e4))
				fail_msg("iteration %u, output %s: rel err %g, %lld NaN/Inf", iter, T[t].name, rel,
					 (long long)bad);
		}
		/* every GPU sums in the same order: an all_reduce's outputs (or those of the activation
		 * fused after it) are identical to the bit */
		for (int k = 0; k < g->n_ops; k++)
			for (int i = 1; O[k].kind == ARK_OP_ALL_REDUCE && i < O[k].n_out; i++) {
				const struct ark_tensor *t0 = stored_result(O, g->n_ops, T, O[k].out[0]);
				const struct ark_tensor *ti = stored_result(O, g->n_ops, T, O[k].out[i]);
				assert_memory_equal(e.arena[t0->gpu] + t0->offset, e.arena[ti->gpu] + ti->offset,
						    (size_t)t0->bytes);
			}
	}
	for (int t = 0; t < g->n_tensors; t++)
		free(ref[t]);
	for (int d = 0; d < e.G; d++)
		free(e.arena[d]), free(e.ctr[d]);
	free(ref), free(T), free(O), free(e.xp), free(e.next), free(e.q);
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
		struct fix f;
		oneshot_max = alg ? 0 : ARK_ONESHOT_MAX_AUTO;
		assert_int_equal(build(&f, text, ARK_P2P_MAX_DEFAULT, 0), 0);
		oneshot_max = ARK_ONESHOT_MAX_AUTO;
		check_invariants(&f);
		for (uint64_t seed = 1; seed <= 3; seed++)
			emulate(&f, seed, 2);
		destroy(&f);
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
 * on both algorithms; emulated. A different activation on one output keeps them apart. */
static void fused_case(int n, const char *acts[], int expect_fused)
{
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
			      ",\n  { name = \"act%d\"; op = \"%s\"; in = [\"r%d\"]; out = \"a%d\"; gpu = %d; }", i, acts[i],
			      i, i, i);
	snprintf(text + k, sizeof text - (size_t)k, "\n);\n");
	for (int alg = 0; alg < 2; alg++) {
		struct fix f;
		oneshot_max = alg ? 0 : ARK_ONESHOT_MAX_AUTO;
		assert_int_equal(build(&f, text, ARK_P2P_MAX_DEFAULT, 0), 0);
		oneshot_max = ARK_ONESHOT_MAX_AUTO;
		int sums = 0;
		for (int v = 0; v < f.s.n_vcta; v++)
			if (f.s.v[v].tmpl == ARK_T_SUM || f.s.v[v].tmpl == ARK_T_SUM_LL) {
				const struct comm_opp *x = &f.s.comm[f.s.v[v].opp - f.g.n_ops];
				sums++;
				assert_int_equal(x->act, expect_fused ? ARK_OP_GELU : ARK_ACT_NONE);
				/* the sum goes straight to the activation's output */
				assert_int_equal(f.g.tensors[x->out].name[0], expect_fused ? 'a' : 'r');
				assert_int_equal(f.g.tensors[x->out].name[1] - '0', f.s.v[v].gpu);
			}
		assert_true(sums >= (alg ? 1 : n)); /* two-phase: 3 rows make no part for a 4th GPU */
		if (expect_fused) {
			check_invariants(&f);
			for (uint64_t seed = 1; seed <= 2; seed++)
				emulate(&f, seed, 2);
		}
		destroy(&f);
	}
}

static void test_fused_activation(void **state)
{
	(void)state;
	const char *gelu[] = {"gelu", "gelu", "gelu", "gelu"}, *mixed[] = {"gelu", "relu"};
	fused_case(2, gelu, 1);
	fused_case(4, gelu, 1);
	fused_case(2, mixed, 0);
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
	struct fix f;
	oneshot_max = 0;
	assert_int_equal(build(&f, model(2, 1, 1 << 22, "fp32", ops), ARK_P2P_MAX_DEFAULT, 0), 0);
	oneshot_max = ARK_ONESHOT_MAX_AUTO;
	check_invariants(&f);
	const struct tiling *s = &f.s;
	const struct schedule *p = &f.p;
	int partial = 0, full = 0;
	for (int u = 0; u < s->n_vcta; u++) {
		if (s->v[u].tmpl != ARK_T_DMA || !strstr(f.g.tensors[s->v[u].write.tensor].name, "__rs"))
			continue; /* the reduce-scatter requests only: into the staging tensors */
		int c = p->signal[u];
		assert_int_equal(p->per_iter[c], 4);
		int64_t w0 = s->v[u].write.c0; /* one row: the part starts at this column */
		for (int v = 0; v < s->n_vcta; v++) {
			if (s->v[v].tmpl != ARK_T_SUM || s->v[v].gpu != f.g.tensors[s->v[u].write.tensor].gpu)
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
	emulate(&f, 7, 2);
	destroy(&f);

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
		cmocka_unit_test(test_fused_activation),
		cmocka_unit_test(test_barrier_refused),
		cmocka_unit_test(test_emulated_2),
		cmocka_unit_test(test_emulated_4),
		cmocka_unit_test(test_dma_early_start),
	};
	cmocka_set_message_output(CM_OUTPUT_TAP);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
