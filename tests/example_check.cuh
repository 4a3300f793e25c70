// example_check.cuh: what the GPU tests of the example model share (tests/gpu_loop.cu,
// tests/gpu_hooks.cu): TAP output, and one checked iteration of y = relu(x) + x on fresh inputs with
// h and y poisoned first. Included after gen_example.cu.
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
