// gpu_loop.cu: TAP test of the loop kernel and the session on a GPU, with the hand-written model of
// gen_example.cu (y = relu(x) + x on 4 SMs): checked iterations on fresh inputs with poisoned
// outputs, 100,000 iterations without a hang on alternating inputs, every 1000th checked, the watchdog on a broken schedule, the trap of a task
// without a tile, the trace.
#include "gen_example.cu"

#include <cjson/cJSON.h>

#include "example_check.cuh"

/* The trace of one iteration: valid JSON, one complete event per task on its SM, and every add tile
 * starting after the relu tiles it waits for ended. */
static void check_trace(struct ark_session *s)
{
	char path[] = "/tmp/gpu_loop_trace_XXXXXX";
	int fd = mkstemp(path);
	if (fd >= 0)
		close(fd);
	int rc = ark_session_run_ex(s, ARK_RUN_TRACE) || ark_session_trace(s, path);
	if (!tap(fd >= 0 && rc == 0, "traced iteration written")) {
		diag(ark_last_error());
		return;
	}
	FILE *f = fopen(path, "r");
	static char text[1 << 20];
	size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
	if (f)
		fclose(f);
	unlink(path);
	text[n] = 0;
	cJSON *root = cJSON_Parse(text);
	cJSON *ev = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
	tap(root && cJSON_IsArray(ev), "trace is JSON with a traceEvents array");
	double start[12], end[12];
	int seen[12] = {0}, events = 0, placed = 1;
	cJSON *e;
	cJSON_ArrayForEach(e, ev)
	{
		cJSON *ph = cJSON_GetObjectItemCaseSensitive(e, "ph");
		if (!cJSON_IsString(ph) || strcmp(ph->valuestring, "X"))
			continue;
		events++;
		cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
		cJSON *task = cJSON_GetObjectItemCaseSensitive(args, "task");
		cJSON *tid = cJSON_GetObjectItemCaseSensitive(e, "tid");
		cJSON *ts = cJSON_GetObjectItemCaseSensitive(e, "ts");
		cJSON *dur = cJSON_GetObjectItemCaseSensitive(e, "dur");
		if (!cJSON_IsNumber(task) || !cJSON_IsNumber(tid) || !cJSON_IsNumber(ts) || !cJSON_IsNumber(dur) ||
		    task->valueint < 0 || task->valueint >= 12 || dur->valuedouble < 0) {
			placed = 0;
			continue;
		}
		int t = task->valueint;
		seen[t]++;
		start[t] = ts->valuedouble;
		end[t] = ts->valuedouble + dur->valuedouble;
		placed &= (uint32_t)t >= sm_begin_g0[tid->valueint] && (uint32_t)t < sm_begin_g0[tid->valueint + 1];
	}
	int once = 1;
	for (int t = 0; t < 12; t++)
		once &= seen[t] == 1;
	tap(events == 12 && once && placed, "one event per task, on its SM (%d events)", events);
	/* add tile j (task index below) needs relu tiles 2j, 2j + 1: task of relu tile k is found by vCTA */
	int task_of_vcta[12], ordered = once;
	for (int t = 0; t < 12; t++)
		task_of_vcta[tasks_g0[t].vcta] = t;
	for (int j = 0; j < 4 && once; j++) {
		int add = task_of_vcta[8 + j];
		for (int k = 2 * j; k <= 2 * j + 1; k++)
			ordered &= start[add] >= end[task_of_vcta[k]];
	}
	tap(ordered, "every add tile starts after the relu tiles it waits for end");
	cJSON_Delete(root);
}

int main(void)
{
	struct ark_session *s = NULL;
	struct ark_session_opts opts = {2000, 1};

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (ark_device_count() == 0) {
		printf("1..0 # SKIP no CUDA device\n");
		return 0;
	}
	if (!tap(ark_session_open(&s, &ark_model_def, &opts) == 0, "open the example on a GPU with >= %d SMs",
		 ARK_SMS)) {
		diag(ark_last_error());
		printf("1..%d\n", n_tests);
		return 1;
	}
	diag(ark_session_gpu_name(s, 0));

	/* Trace before any traced iteration: refused. */
	tap(ark_session_trace(s, "/dev/null") != 0 && strstr(ark_last_error(), "no traced iteration"),
	    "no trace before a traced iteration");

	uint64_t seed = (uint64_t)time(NULL);
	printf("# seed %llu\n", (unsigned long long)seed);
	checked_iteration(s, seed, "iteration 1");
	checked_iteration(s, seed + 1, "iteration 2, fresh inputs");

	/* Soak: 100,000 iterations alternating two input sets, so that no iteration has the inputs of the
	 * one before; every 1000th, with h and y poisoned first, is compared with its own set's y (a tile
	 * that read h before this iteration wrote it would compute the other set's y, or NaN). */
	static uint16_t xs[2][ELEMS], ys[2][ELEMS];
	for (int k = 0; k < 2; k++) {
		ark_fill_random(buf[T_X], ARK_FP16, ELEMS, seed + 10 + k, 1.0f);
		expect();
		memcpy(xs[k], buf[T_X], sizeof xs[k]);
		memcpy(ys[k], buf[T_Y], sizeof ys[k]);
	}
	const int soak = 100000;
	double t0 = now_s();
	int rc = 0, i, checked = 0, mismatched = 0;
	for (i = 1; i <= soak && rc == 0; i++) {
		int k = i & 1, chk = i % 1000 == 0;
		rc = ark_session_write(s, T_X, xs[k]);
		if (chk && rc == 0)
			rc = ark_session_fill(s, T_H, 0xff) || ark_session_fill(s, T_Y, 0xff);
		if (rc == 0)
			rc = ark_session_run_ex(s, 0);
		if (chk && rc == 0 && (rc = ark_session_read(s, T_Y, got)) == 0) {
			double rel = 1;
			int64_t bad = -1;
			ark_compare(got, ys[k], ARK_FP16, ELEMS, &rel, &bad);
			mismatched += !(bad == 0 && rel <= 1e-3);
			checked++;
		}
	}
	double dt = now_s() - t0;
	if (!tap(rc == 0 && i == soak + 1, "%d iterations without a hang (%.2f us each, with an input upload)", soak,
		 dt * 1e6 / soak))
		diag(ark_last_error());
	tap(checked == soak / 1000 && mismatched == 0, "%d of them checked, alternating two input sets: %d mismatched",
	    checked, mismatched);
	tap(ark_session_iterations(s) == (unsigned)soak + 2, "iteration count %u", ark_session_iterations(s));
	checked_iteration(s, seed + 2, "after the soak");

	check_trace(s);
	tap(ark_session_close(s) == 0, "close stops the kernel");

	/* The watchdog: a copy of the schedule where the add tile on SM 1 (task 5) waits on counter
	 * ARK_CTR__FIRST + 8, which nobody signals. */
	struct ark_wait bad_waits[8];
	memcpy(bad_waits, waits_g0, sizeof bad_waits);
	bad_waits[4].counter = ARK_CTR__FIRST + 8;
	struct ark_model bad = ark_model_def;
	bad.tables[0].waits = bad_waits;
	bad.tables[0].n_counters = 9;
	struct ark_session_opts quick = {300, 0};
	s = NULL;
	rc = ark_session_open(&s, &bad, &quick);
	tap(rc == 0, "open the broken schedule");
	if (rc == 0) {
		t0 = now_s();
		rc = ark_session_run(s);
		dt = now_s() - t0;
		char want[64];
		snprintf(want, sizeof want, "counter %d", ARK_CTR__FIRST + 8);
		const char *d = ark_session_diagnosis(s);
		tap(rc != 0 && dt < 5, "the watchdog aborts the hung iteration (after %.2f s)", dt);
		tap(strstr(d, "SM 1: task 5 ") && strstr(d, want) && strstr(d, "want 1, have 0") &&
			    strstr(ark_last_error(), "SM 1: task 5 "),
		    "the diagnosis names SM 1, task 5 and %s", want);
		diag(d);
		tap(strstr(d, "SMs that finished iteration 1: 2, 3") != NULL &&
			    strstr(d, "SM 0: waits for every SM to finish iteration 1 (3 of 4 done)") != NULL,
		    "and the SMs that finished (2, 3) and SM 0, done with its list, waiting for SM 1 to finish");
		tap(ark_session_run(s) != 0, "an aborted session refuses to run");
		tap(ark_session_close(s) == 0, "close after the abort");
	}

	/* A task this binary has no tile for traps: gen_example.cu has fp16 tiles only, and here the add's
	 * op params say fp32. The CTA that meets it records it and aborts every CTA; the run fails at once,
	 * without waiting for the watchdog, naming the SM, the task, its op and the template. */
	struct ark_opp fp32_opp[2];
	memcpy(fp32_opp, opp_g0, sizeof fp32_opp);
	fp32_opp[1].dtype = ARK_FP32;
	struct ark_model no_tile = ark_model_def;
	no_tile.tables[0].opp = fp32_opp;
	struct ark_session_opts patient = {10000, 0};
	s = NULL;
	rc = ark_session_open(&s, &no_tile, &patient);
	tap(rc == 0, "open a schedule whose add tiles have no template in this binary");
	if (rc == 0) {
		t0 = now_s();
		rc = ark_session_run(s);
		dt = now_s() - t0;
		const char *d = ark_session_diagnosis(s);
		tap(rc != 0 && dt < 3 && strstr(ark_last_error(), "GPU 0 met a task it cannot run"),
		    "the loop kernel aborts itself, long before the watchdog's 10 s (after %.2f s)", dt);
		tap(strstr(d, " y ELEMENTWISE (") && strstr(d, "has template ELEMENTWISE (3) with dtype fp32, for which"),
		    "the diagnosis names the SM, the task, its op y and the template ELEMENTWISE for fp32");
		diag(d);
		tap(ark_session_close(s) == 0, "close after the trap");
	}

	/* A template id outside the catalog is refused when the session opens. */
	struct ark_task bad_tasks[12];
	memcpy(bad_tasks, tasks_g0, sizeof bad_tasks);
	bad_tasks[5].tmpl = 200;
	struct ark_model bad_tmpl = ark_model_def;
	bad_tmpl.tables[0].tasks = bad_tasks;
	s = NULL;
	rc = ark_session_open(&s, &bad_tmpl, &opts);
	tap(rc != 0 && s == NULL && strstr(ark_last_error(), "task 5 has template 200"),
	    "a task with template 200 is refused at open: %s", ark_last_error());

	/* The GPU is fine afterwards. */
	s = NULL;
	opts.trace = 0;
	if (tap(ark_session_open(&s, &ark_model_def, &opts) == 0, "open again after the abort"))
		checked_iteration(s, seed + 3, "after the abort");
	else
		diag(ark_last_error());
	ark_session_close(s);

	/* A schedule made for more SMs than the GPU has is refused with both numbers. */
	struct ark_model big = ark_model_def;
	big.sms = 100000;
	s = NULL;
	rc = ark_session_open(&s, &big, &opts);
	tap(rc != 0 && s == NULL && strstr(ark_last_error(), "SMs, the schedule needs 100000: regenerate with --sms"),
	    "a schedule for 100000 SMs is refused: %s", ark_last_error());

	printf("1..%d\n", n_tests);
	return n_failed ? 1 : 0;
}
