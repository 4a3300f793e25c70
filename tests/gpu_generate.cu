// gpu_generate.cu: TAP test of the generation loop (ark_session_generate: many iterations from one
// doorbell, the protocol of ark_proto.h) on the GPU, with the model of tests/models/tokens.cfg as
// arkgen generates it (the Makefile makes build/gen/tokens_model.cu). That model's token of step t
// is x_t + 1, x_t the prompt id t or the token of step t - 1, and step t appends table row x_t to the
// cache at the position state, which advances: every token and every cache row is known exactly.
//   1. a prompt of 3 ids, 8 steps: the tokens, in order through the callback, the cache rows, the
//      position; 2. one step without a prompt; 3. an ordinary iteration after a generation;
//   4. the EOS at the first step; 5. an EOS made during the prompt does not stop it, one after does;
//   6. 10,000 steps without a hang, every token checked (steps/s printed);
//   7. a position past the cache during a generation aborts it, naming the task and the position;
//   8. the host stops a long generation (close's stop, seen between steps): the kernel leaves, close
//      returns in time, and a new session in the same process generates again.
#include "tokens_model.cu"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vector>

#include "ark.h"
#include "ark_session.h"

static int n_tests, n_failed;

static int tap(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int tap(int ok, const char *fmt, ...)
{
	va_list ap;
	printf("%sok %d - ", ok ? "" : "not ", ++n_tests);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	n_failed += !ok;
	return ok;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const struct ark_model *M = &ark_model_def;
static int T_TOK, T_POS, T_TABLE, T_CACHE;
static std::vector<float> g_table;

static int tensor(const char *name)
{
	for (int t = 0; t < M->n_tensors; t++)
		if (!strcmp(M->tensors[t].name, name))
			return t;
	printf("Bail out! the model has no tensor '%s'\n", name);
	exit(1);
}

static void bail(const char *what)
{
	printf("Bail out! %s: %s\n", what, ark_last_error());
	exit(1);
}

/* A session with a fresh random table, the token and the position set, the cache poisoned (NaN). */
static struct ark_session *open_session(uint64_t seed, int32_t tok, int32_t pos)
{
	struct ark_session *s;
	struct ark_session_opts o = {.timeout_ms = 2000};
	if (ark_session_open(&s, M, &o))
		bail("open");
	g_table.resize(ark_tensor_elems(&M->tensors[T_TABLE]));
	ark_fill_random(g_table.data(), ARK_FP32, (int64_t)g_table.size(), seed, 1.0f);
	if (ark_session_write(s, T_TABLE, g_table.data()) || ark_session_write(s, T_TOK, &tok) ||
	    ark_session_write(s, T_POS, &pos) || ark_session_fill(s, T_CACHE, 0xff))
		bail("upload");
	return s;
}

static int32_t read_i32(struct ark_session *s, int t)
{
	int32_t v = -1;
	if (ark_session_read(s, t, &v))
		bail("read");
	return v;
}

struct seen {
	std::vector<int32_t> tok;
	uint32_t next;  /* the step the next callback should carry */
	int in_order;
	uint32_t stop_at; /* nonzero: ask to stop at this step */
};

static int on_token(void *ctx, uint32_t step, int32_t token)
{
	struct seen *w = (struct seen *)ctx;
	w->in_order &= step == w->next++;
	w->tok.push_back(token);
	return w->stop_at && step >= w->stop_at;
}

/* Runs a generation and checks the tokens (through tokens[] and the callback) against the model's
 * rule, the steps run, the token and position states after it, and the cache rows written. */
static void generate_checked(struct ark_session *s, const char *what, std::vector<int32_t> prompt, uint32_t steps,
			     int has_eos, int32_t eos, uint32_t want_steps)
{
	const int32_t tok0 = read_i32(s, T_TOK), pos0 = read_i32(s, T_POS);
	std::vector<int32_t> got(steps, -7);
	struct seen w = {{}, 0, 1, 0};
	uint32_t ran = 0;
	struct ark_gen_req q = {steps, prompt.data(), (uint32_t)prompt.size(), has_eos, eos};
	double t0 = now_s();
	int rc = ark_session_generate(s, &q, got.data(), &ran, on_token, &w);
	double sec = now_s() - t0;
	if (!tap(rc == 0, "%s: generation of %u steps runs", what, steps)) {
		printf("# %s\n", ark_last_error());
		return;
	}
	/* the rule: x_t = prompt[t] (t < n_prompt), else the token of step t - 1 (tok0 for step 0) */
	std::vector<int32_t> x(ran), want(ran);
	int32_t prev = tok0;
	for (uint32_t t = 0; t < ran; t++) {
		x[t] = t < prompt.size() ? prompt[t] : prev;
		want[t] = x[t] + 1;
		prev = want[t];
	}
	int same = ran == w.tok.size();
	uint32_t bad = 0;
	for (uint32_t t = 0; t < ran && same; t++)
		bad += got[t] != want[t] || w.tok[t] != want[t];
	tap(ran == want_steps && same && !bad && w.in_order,
	    "%s: %u steps run (want %u), every token right, streamed in order (%.1f steps/s)", what, ran, want_steps,
	    ran / sec);
	if (bad || !same)
		for (uint32_t t = 0; t < ran && t < 12; t++)
			printf("#   step %u: got %d, callback %d, want %d\n", t, got[t], t < w.tok.size() ? w.tok[t] : -1,
			       want[t]);
	const int32_t tok1 = read_i32(s, T_TOK), pos1 = read_i32(s, T_POS);
	tap(tok1 == (ran ? want[ran - 1] : tok0) && pos1 == pos0 + (int32_t)ran,
	    "%s: the token state holds the last token (%d), the position moved on by the steps (%d -> %d)", what, tok1,
	    pos0, pos1);
	const int64_t D = M->tensors[T_CACHE].shape[1];
	std::vector<float> cache(ark_tensor_elems(&M->tensors[T_CACHE]));
	if (ark_session_read(s, T_CACHE, cache.data()))
		bail("read cache");
	uint32_t rows_bad = 0;
	for (uint32_t t = 0; t < ran; t++)
		rows_bad += memcmp(&cache[(size_t)(pos0 + t) * D], &g_table[(size_t)x[t] * D], D * sizeof(float)) != 0;
	tap(!rows_bad, "%s: cache rows %d..%d hold the table rows of the steps' tokens (%u differ)", what, pos0,
	    pos0 + (int)ran - 1, rows_bad);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (ark_device_count() == 0) {
		printf("1..0 # SKIP no CUDA device\n");
		return 0;
	}
	T_TOK = tensor("tok"), T_POS = tensor("pos"), T_TABLE = tensor("table"), T_CACHE = tensor("cache");
	if (!M->token_state || M->token_state - 1 != T_TOK)
		bail("the model's token state");
	uint64_t seed = (uint64_t)time(NULL);
	printf("# seed %llu\n", (unsigned long long)seed);

	struct ark_session *s = open_session(seed, 0, 0);
	generate_checked(s, "prompt 5 9 2, 8 steps", {5, 9, 2}, 8, 0, 0, 8);
	generate_checked(s, "1 step, no prompt", {}, 1, 0, 0, 1);
	{
		const int32_t tok0 = read_i32(s, T_TOK), pos0 = read_i32(s, T_POS);
		int rc = ark_session_run(s);
		tap(rc == 0 && read_i32(s, T_TOK) == tok0 + 1 && read_i32(s, T_POS) == pos0 + 1,
		    "an ordinary iteration after the generations (iteration %u)", ark_session_iterations(s));
		if (rc)
			printf("# %s\n", ark_last_error());
	}
	generate_checked(s, "EOS at the first step", {41}, 10, 1, 42, 1);
	generate_checked(s, "EOS made during the prompt ignored, stops at the next", {41, 3}, 50, 1, 42, 40);
	generate_checked(s, "64 and 65 steps (the stop check between steps)", {}, 65, 0, 0, 65);
	/* the soak: from position 0 and token 0 */
	{
		int32_t zero = 0;
		if (ark_session_write(s, T_TOK, &zero) || ark_session_write(s, T_POS, &zero))
			bail("reset");
		generate_checked(s, "10000 steps", {7}, 10000, 0, 0, 10000);
	}
	/* a position past the cache: the generation aborts at the step whose row does not fit */
	{
		const int64_t L = M->tensors[T_CACHE].shape[0];
		int32_t tok = 0, pos = (int32_t)L - 3;
		if (ark_session_write(s, T_TOK, &tok) || ark_session_write(s, T_POS, &pos))
			bail("set position");
		uint32_t ran = 0;
		struct ark_gen_req q = {10, NULL, 0, 0, 0};
		int rc = ark_session_generate(s, &q, NULL, &ran, NULL, NULL);
		char want[64];
		snprintf(want, sizeof want, "at position %lld, outside 0 to %lld", (long long)L, (long long)L - 1);
		tap(rc != 0 && strstr(ark_last_error(), want) && strstr(ark_last_error(), "app KV_APPEND"),
		    "a position past the cache aborts the generation, naming the task and the position");
		printf("# %.300s\n", ark_last_error());
		tap(ark_session_close(s) == 0, "close after the abort");
	}
	/* the host stops a long generation; close; a new session generates */
	{
		s = open_session(seed + 1, 0, 0);
		struct seen w = {{}, 0, 1, 1000};
		uint32_t ran = 0;
		struct ark_gen_req q = {1000000, NULL, 0, 0, 0};
		double t0 = now_s();
		int rc = ark_session_generate(s, &q, NULL, &ran, on_token, &w);
		double sec = now_s() - t0;
		tap(rc != 0 && strstr(ark_last_error(), "stopped by the host") && sec < 3 && w.tok.size() >= 1001 &&
			    w.tok.size() < 100000, /* the kernel sees the stop within 64 steps of the host's store */
		    "the host stops a generation of 10^6 steps after 1000: it ends after %zu tokens, in %.2f s", w.tok.size(),
		    sec);
		t0 = now_s();
		rc = ark_session_close(s);
		tap(rc == 0 && now_s() - t0 < 1, "close after the stop: %.3f s", now_s() - t0);
		s = open_session(seed + 2, 0, 0);
		generate_checked(s, "a new session, prompt 3, 20 steps", {3}, 20, 0, 0, 20);
		tap(ark_session_close(s) == 0, "close");
	}
	printf("1..%d\n", n_tests);
	return n_failed ? 1 : 0;
}
