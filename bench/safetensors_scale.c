/* safetensors_scale.c: times ark_st_open (header parse and checks), a lookup of every name and
 * ark_st_load into a model of as many tensors, on a generated file of N one-element F32 tensors
 * (default 80,000). Usage: safetensors_scale [N]. */
#include "ark.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 80000;
	if (n < 1) {
		fprintf(stderr, "usage: %s [N >= 1]\n", argv[0]);
		return 2;
	}
	char path[256];
	const char *tmp = getenv("TMPDIR");
	snprintf(path, sizeof path, "%s/safetensors_scale.%d.safetensors", tmp && *tmp ? tmp : "/tmp", (int)getpid());

	/* the model: t0 ... t<n-1>, weights of shape [1]; the file written by ark_st_write */
	struct ark_tensor *t = calloc((size_t)n, sizeof *t);
	void **bufs = calloc((size_t)n, sizeof *bufs);
	float *vals = calloc((size_t)n, sizeof *vals);
	char (*names)[16] = calloc((size_t)n, sizeof *names);
	if (!t || !bufs || !vals || !names)
		return 1;
	for (int i = 0; i < n; i++) {
		snprintf(names[i], sizeof names[i], "t%d", i);
		t[i] = (struct ark_tensor){ .name = names[i], .dtype = ARK_FP32, .role = ARK_ROLE_WEIGHT, .ndim = 1,
					    .shape = { 1 } };
		vals[i] = (float)i;
		bufs[i] = &vals[i];
	}
	struct ark_model m = { .name = "scale", .n_tensors = n, .tensors = t };
	if (ark_st_write(path, &m, 1u << ARK_ROLE_WEIGHT, bufs)) {
		fprintf(stderr, "%s\n", ark_last_error());
		return 1;
	}

	struct ark_st st;
	double t0 = now();
	if (ark_st_open(&st, path)) {
		fprintf(stderr, "%s\n", ark_last_error());
		unlink(path);
		return 1;
	}
	double t1 = now();
	int found = 0;
	for (int i = 0; i < n; i++)
		found += ark_st_find(&st, names[i]) != NULL;
	double t2 = now();
	ark_st_close(&st);
	memset(vals, 0, sizeof *vals * (size_t)n);
	int loaded = 0;
	double t3 = now();
	int rc = ark_st_load(path, &m, 1u << ARK_ROLE_WEIGHT, bufs, &loaded);
	double t4 = now();
	unlink(path);
	if (rc || found != n || loaded != n || vals[n - 1] != (float)(n - 1)) {
		fprintf(stderr, "safetensors_scale: wrong result (%s)\n", rc ? ark_last_error() : "lookups or values");
		return 1;
	}
	printf("safetensors_scale: %d entries: ark_st_open %.3f s, %d lookups %.3f s, ark_st_load %.3f s\n", n, t1 - t0,
	       n, t2 - t1, t4 - t3);
	free(t);
	free(bufs);
	free(vals);
	free(names);
	return 0;
}
