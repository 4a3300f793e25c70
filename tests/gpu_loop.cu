// gpu_loop.cu: TAP test of the loop kernel and the session on a GPU, with the hand-written model of
// gen_example.cu (y = relu(x) + x on 4 SMs): checked iterations on fresh inputs with poisoned
// outputs, 100,000 iterations without a hang, the watchdog on a broken schedule, the trap of a task
// without a tile, the trace.
#include "gen_example.cu"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ark.h"
#include "ark_session.h"

static int n_tests, n_failed;

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

static void diag(const char *text)
{
	const char *p = text;
	while (*p) {
		const char *e = strchr(p, '\n');
		int n = e ? (int)(e - p) : (int)strlen(p);
		printf("# %.*s\n", n, p);
		p += n + (e != NULL);
	}
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

enum { T_X, T_H, T_Y, NT };
#define ELEMS (128 * 256)

/* Host buffers of x, h, y (fp16) and the GPU's y. */
static uint16_t buf[NT][ELEMS], got[ELEMS];

/* y = relu(x) + x on the host, rounded like the GPU: h to fp16, then the sum. */
static void expect(void)
{
	for (int i = 0; i < ELEMS; i++) {
		float x = ark_half_to_float(buf[T_X][i]);
		float h = ark_half_to_float(ark_float_to_half(x > 0 ? x : 0));
		buf[T_H][i] = ark_float_to_half(h);
		buf[T_Y][i] = ark_float_to_half(h + x);
	}
}

/* One iteration on fresh inputs (seed), with h and y poisoned first; compares y with the CPU
 * reference of libarkrt and with expect(). */
static void checked_iteration(struct ark_session *s, uint64_t seed, const char *what)
{
	void *bufs[NT] = {buf[T_X], buf[T_H], buf[T_Y]};
	double rel = 1, rel2 = 1;
	int64_t bad = -1, bad2 = -1;
	int nonzero = 0;

	ark_fill_random(buf[T_X], ARK_FP16, ELEMS, seed, 1.0f);
	int rc = ark_session_fill(s, T_H, 0xff) || ark_session_fill(s, T_Y, 0xff) || ark_session_write(s, T_X, buf[T_X]) ||
		 ark_session_run(s) || ark_session_read(s, T_Y, got);
	if (!tap(rc == 0, "%s: run", what)) {
		diag(ark_last_error());
		return;
	}
	ark_ref_run(&ark_model_def, bufs);
	ark_compare(got, buf[T_Y], ARK_FP16, ELEMS, &rel, &bad);
	expect();
	ark_compare(got, buf[T_Y], ARK_FP16, ELEMS, &rel2, &bad2);
	for (int i = 0; i < ELEMS; i++)
		nonzero += ark_half_to_float(buf[T_Y][i]) != 0;
	tap(bad == 0 && rel <= 1e-3 && bad2 == 0 && rel2 <= 1e-3 && nonzero > ELEMS / 4,
	    "%s: y matches the reference (rel err %.1e, %lld NaN; by hand %.1e; %d nonzero)", what, rel,
	    (long long)bad, rel2, nonzero);
}

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

	/* Soak: the same inputs, 100,000 iterations; then poison and check once more. */
	const int soak = 100000;
	double t0 = now_s();
	int rc = 0, i;
	for (i = 0; i < soak && rc == 0; i++)
		rc = ark_session_run_ex(s, 0);
	double dt = now_s() - t0;
	if (!tap(rc == 0 && i == soak, "%d iterations without a hang (%.2f us each)", soak, dt * 1e6 / soak))
		diag(ark_last_error());
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
		tap(strstr(d, "SMs that finished iteration 1: 2, 3") != NULL && strstr(d, "SM 0: waits for the host") != NULL,
		    "and the SMs that finished (2, 3) and SM 0, done with its list, waiting for the host");
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
