// gpu_hooks.cu: TAP test of the failure paths of the loop kernel and the session on a GPU, with the
// example of gen_example.cu built with the test hooks of ark_loop.cuh (ARK_TEST_HOOKS: a task made
// slow, a task that never leaves) and the session's (ARK_RUN_TEST_*, ark_session_run_abort):
//   1. the host rings iteration i + 1 while a slow task keeps i running: the kernel starts i + 1
//      only once every SM left i (every task of i + 1 starts within a few us of the others, not 5 ms
//      apart), and y is right;
//   2. the host skips an iteration: SM 0 diagnoses it, the run fails at once, naming both numbers;
//   3. counters that start just below 2^32 wrap within the first iterations: checked iterations;
//   4. the host aborts an iteration half-way; a new session in the same process runs checked
//      iterations;
//   5. last, because it leaves the GPU busy until the process ends: a task that never leaves, deaf
//      to the abort flag: close returns within its deadline, with an error, and says on stderr what
//      it left allocated.
#define ARK_TEST_HOOKS 1
#include "gen_example.cu"

#include <cjson/cJSON.h>

#include "example_check.cuh"

#define SLOW_VCTA 5 /* relu rows 80:96, on SM 1 */

static int set_hooks(uint32_t hang_vcta, uint32_t slow_vcta, uint32_t slow_run, uint32_t slow_us)
{
	struct ark_test_hooks h = {hang_vcta, slow_vcta, slow_run, slow_us};
	cudaError_t e = cudaMemcpyToSymbol(ark_test_hook, &h, sizeof h);
	if (e != cudaSuccess)
		printf("# cudaMemcpyToSymbol: %s\n", cudaGetErrorString(e));
	return e == cudaSuccess;
}

/* Start times (us) of the tasks in the trace at path: their earliest and latest; returns the number
 * of tasks. */
static int trace_starts(const char *path, double *first, double *last)
{
	FILE *f = fopen(path, "r");
	static char text[1 << 20];
	size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
	if (f)
		fclose(f);
	text[n] = 0;
	cJSON *root = cJSON_Parse(text), *e;
	int k = 0;
	*first = 1e300;
	*last = -1e300;
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(root, "traceEvents"))
	{
		cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph"), *ts = cJSON_GetObjectItemCaseSensitive(e, "ts");
		if (!cJSON_IsString(ph) || strcmp(ph->valuestring, "X") || !cJSON_IsNumber(ts))
			continue;
		*first = fmin(*first, ts->valuedouble);
		*last = fmax(*last, ts->valuedouble);
		k++;
	}
	cJSON_Delete(root);
	return k;
}

/* 1 and 2: an early ring, then a skipped iteration, in one session. */
static void early_and_skip(uint64_t seed)
{
	struct ark_session *s = NULL;
	struct ark_session_opts opts = {2000, 1};
	/* run 3 is the first of the early pair: its relu tile on SM 1 sleeps 5 ms */
	if (!tap(set_hooks(~0u, SLOW_VCTA, 3, 5000) && ark_session_open(&s, &ark_model_def, &opts) == 0,
		 "open the example with a slow task in iteration 3")) {
		diag(ark_last_error());
		return;
	}
	checked_iteration(s, seed, "iteration 1");
	checked_iteration(s, seed + 1, "iteration 2");

	ark_fill_random(buf[T_X], ARK_FP16, ELEMS, seed + 2, 1.0f);
	char path[] = "/tmp/gpu_hooks_trace_XXXXXX";
	int fd = mkstemp(path);
	if (fd >= 0)
		close(fd);
	double t0 = now_s();
	int rc = ark_session_fill(s, T_H, 0xff) || ark_session_fill(s, T_Y, 0xff) ||
		 ark_session_write(s, T_X, buf[T_X]) || ark_session_run_ex(s, ARK_RUN_TRACE | ARK_RUN_TEST_EARLY);
	double dt = now_s() - t0;
	if (!tap(rc == 0 && ark_session_iterations(s) == 4, "iterations 3 and 4, the second rung 50 us after the first "
		 "(%.2f ms)", dt * 1e3))
		diag(ark_last_error());
	tap(dt > 4.5e-3, "iteration 3 was slow (the hook slept 5 ms), so 4 was rung while 3 ran");
	double rel = 1;
	int64_t bad = -1;
	rc = ark_session_read(s, T_Y, got) || ark_session_trace(s, path);
	expect();
	ark_compare(got, buf[T_Y], ARK_FP16, ELEMS, &rel, &bad);
	tap(rc == 0 && bad == 0 && rel <= 1e-3, "y after the early ring matches (rel err %.1e, %lld NaN)", rel,
	    (long long)bad);
	double first = 0, last = 0;
	int n = trace_starts(path, &first, &last);
	unlink(path);
	tap(n == 12 && last - first < 2000,
	    "every task of iteration 4 starts after every SM left 3: starts span %.1f us, not ~5000 (%d tasks)",
	    last - first, n);

	/* 2: the next submit skips iteration 5 */
	t0 = now_s();
	rc = ark_session_run_ex(s, ARK_RUN_TEST_SKIP);
	dt = now_s() - t0;
	const char *d = ark_session_diagnosis(s);
	tap(rc != 0 && dt < 1.0 && strstr(ark_last_error(), "submitted iteration 6 after 4 (the host skipped one)"),
	    "a skipped iteration fails at once (%.3f s), before the watchdog's 2 s", dt);
	tap(strstr(d, "SM 0: after iteration 4 the host submitted iteration 6, not 5") != NULL,
	    "the diagnosis names both iterations");
	diag(d);
	tap(ark_session_close(s) == 0, "close after the diagnosis");
}

/* 3: counters from 2^32 - 41: the done counter (4 a iteration) wraps in iteration 11, the model's
 * (1 a iteration) in iteration 41. */
static void counter_wrap(uint64_t seed)
{
	struct ark_session *s = NULL;
	struct ark_session_opts opts = {2000, 0, 0xffffffffu - 40};
	if (!tap(set_hooks(~0u, ~0u, 0, 0) && ark_session_open(&s, &ark_model_def, &opts) == 0,
		 "open with the counters at 2^32 - 41")) {
		diag(ark_last_error());
		return;
	}
	int rc = 0, failed0 = n_failed;
	for (int i = 1; i <= 100 && rc == 0; i++) {
		if (i % 10 == 0 || i == 1) {
			char what[48];
			snprintf(what, sizeof what, "counters near the wrap, iteration %d", i);
			checked_iteration(s, seed + i, what);
		} else
			rc = ark_session_run(s);
	}
	if (!tap(rc == 0 && n_failed == failed0, "100 iterations across the wrap of every counter"))
		diag(ark_last_error());
	uint32_t ctr[ARK_CTR__FIRST + 8];
	cudaError_t e = cudaMemcpy(ctr, ark_session_counters(s, 0), sizeof ctr, cudaMemcpyDeviceToHost);
	tap(e == cudaSuccess && ctr[ARK_CTR_DONE] == opts.counter_base + 100u * ARK_SMS &&
		    ctr[ARK_CTR(0)] == opts.counter_base + 100u,
	    "done counter %u, counter 0 %u: wrapped, at the base plus 100 iterations", ctr[ARK_CTR_DONE], ctr[ARK_CTR(0)]);
	tap(ark_session_close(s) == 0, "close");
}

/* 4: the host aborts iteration 2 half-way (its relu tile on SM 1 sleeps 200 ms); then a new
 * session. */
static void abort_and_reopen(uint64_t seed)
{
	struct ark_session *s = NULL;
	struct ark_session_opts opts = {5000, 0};
	if (!tap(set_hooks(~0u, SLOW_VCTA, 2, 200000) && ark_session_open(&s, &ark_model_def, &opts) == 0,
		 "open with a task of iteration 2 that sleeps 200 ms")) {
		diag(ark_last_error());
		return;
	}
	checked_iteration(s, seed, "before the abort");
	int completed = 1;
	int rc = ark_session_run_abort(s, 50000, &completed);
	const char *d = ark_session_diagnosis(s);
	if (!tap(rc == 0 && !completed, "iteration 2 aborted 50 ms after its submit, before it completed; every "
		 "CTA left"))
		diag(ark_last_error());
	tap(strstr(d, "SM 0: waits for every SM to finish iteration 2 (3 of 4 done)") != NULL,
	    "the diagnosis: SM 0 waited for the slow SM to finish iteration 2");
	diag(d);
	tap(ark_session_run(s) != 0, "the aborted session refuses to run");
	tap(ark_session_close(s) == 0, "close after the abort");
	s = NULL;
	if (!tap(set_hooks(~0u, ~0u, 0, 0) && ark_session_open(&s, &ark_model_def, &opts) == 0,
		 "a new session in the same process")) {
		diag(ark_last_error());
		return;
	}
	for (int i = 1; i <= 3; i++) {
		char what[48];
		snprintf(what, sizeof what, "new session, iteration %d", i);
		checked_iteration(s, seed + 10 + i, what);
	}
	tap(ark_session_close(s) == 0, "close the new session");
}

/* 5: vCTA 5 never leaves. Its SM ignores stop and abort, so close gives up after its bounded waits,
 * frees nothing and says so. The process must then end without touching the GPU again. */
static void stuck_close(void)
{
	struct ark_session *s = NULL;
	struct ark_session_opts opts = {300, 0};
	alarm(60); /* a close that blocks fails the test instead of hanging the suite */
	if (!tap(set_hooks(SLOW_VCTA, ~0u, 0, 0) && ark_session_open(&s, &ark_model_def, &opts) == 0,
		 "open with a task that never leaves")) {
		diag(ark_last_error());
		return;
	}
	int rc = ark_session_run(s);
	const char *d = ark_session_diagnosis(s);
	tap(rc != 0 && strstr(d, "SMs without a record (stuck inside a tile?): 1") &&
		    strstr(d, "only 3 of 4 CTAs left"),
	    "the watchdog aborts the iteration: SM 1 has no record, 3 of 4 CTAs left");
	diag(d);

	char path[] = "/tmp/gpu_hooks_stderr_XXXXXX";
	int fd = mkstemp(path), saved = dup(2);
	fflush(stderr);
	if (fd >= 0)
		dup2(fd, 2);
	double t0 = now_s();
	rc = ark_session_close(s);
	double dt = now_s() - t0;
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	char text[4096] = "";
	ssize_t n = fd >= 0 ? pread(fd, text, sizeof text - 1, 0) : 0;
	text[n > 0 ? n : 0] = 0;
	if (fd >= 0)
		close(fd);
	unlink(path);
	tap(rc != 0 && dt < 6.0, "close returns within its deadline (%.2f s), with an error", dt);
	tap(strstr(ark_last_error(), "GPU 0: the loop kernel did not stop (3 of 4 CTAs left)") != NULL,
	    "the error: %s", ark_last_error());
	tap(strstr(text, "GPU 0: the loop kernel is still running") && strstr(text, "left allocated until the "
		"process ends: arena (196608 bytes), tables, counters, doorbell"),
	    "stderr says which GPU and what was left");
	diag(text);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (ark_device_count() == 0) {
		printf("1..0 # SKIP no CUDA device\n");
		return 0;
	}
	uint64_t seed = (uint64_t)time(NULL);
	printf("# seed %llu\n", (unsigned long long)seed);
	early_and_skip(seed);
	counter_wrap(seed + 100);
	abort_and_reopen(seed + 200);
	stuck_close();
	printf("1..%d\n", n_tests);
	fflush(stdout);
	/* A kernel still runs on the GPU: leave without the CUDA runtime's exit handlers, which might
	 * wait for it; the driver ends it with the process. */
	_exit(n_failed ? 1 : 0);
}
