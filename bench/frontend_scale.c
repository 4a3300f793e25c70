/* frontend_scale.c: times the front end (cfg_load, then graph_check) on a generated chain of N
 * elementwise ops (default 100,000), listed last-first so that ordering does real work; prints the
 * time of each pass and the peak memory. Usage: frontend_scale [N] [model path to keep]. */
#include "codegen/diag.h"
#include "codegen/graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* x [8, 256] -> o0 -> t1 -> o1 -> ... -> t<n> (the output); relu, gelu, silu and scale in turn. */
static int write_chain(const char *path, int n)
{
	static const char *const kinds[] = { "relu", "gelu", "silu", "scale" };
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "# %d elementwise ops in a chain, listed last-first\nversion = 1;\nname = \"chain\";\n", n);
	fprintf(f, "tensors = (\n  { name = \"t0\"; shape = [8, 256]; role = \"input\"; },\n"
		   "  { name = \"t%d\"; role = \"output\"; }\n);\nops = (\n", n);
	for (int i = n - 1; i >= 0; i--)
		fprintf(f, "  { name = \"o%d\"; op = \"%s\"; in = [\"t%d\"]; out = \"t%d\";%s }%s\n", i, kinds[i % 4], i,
			i + 1, i % 4 == 3 ? " factor = 0.5;" : "", i ? "," : "");
	fprintf(f, ");\n");
	return fclose(f);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100000;
	char path[256];
	if (n < 1) {
		fprintf(stderr, "usage: %s [N >= 1] [model path]\n", argv[0]);
		return 2;
	}
	if (argc > 2) {
		snprintf(path, sizeof path, "%s", argv[2]);
	} else {
		const char *tmp = getenv("TMPDIR");
		snprintf(path, sizeof path, "%s/frontend_scale.%d.cfg", tmp && *tmp ? tmp : "/tmp", (int)getpid());
	}
	if (write_chain(path, n)) {
		perror(path);
		return 1;
	}
	struct graph g;
	double t0 = now();
	int rc = cfg_load(&g, path);
	double t1 = now();
	if (!rc)
		rc = graph_check(&g);
	double t2 = now();
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	if (argc <= 2)
		unlink(path);
	if (rc) {
		fprintf(stderr, "frontend_scale: the generated model was rejected\n");
		return 1;
	}
	printf("frontend_scale: %d ops, %d tensors: cfg_load %.3f s, graph_check %.3f s, total %.3f s, peak RSS %ld MiB\n",
	       g.n_ops, g.n_tensors, t1 - t0, t2 - t1, t2 - t0, ru.ru_maxrss / 1024);
	graph_free(&g);
	return 0;
}
