/* scale.c: how arkgen scales with the size of a model. Writes three generated models and runs the
 * arkgen binary on each, the whole pipeline to the emitted .cu, then prints one row per model: ops,
 * vCTAs, wall seconds and the peak RSS of the arkgen process.
 *   chain     N elementwise ops [8, 256] in a chain, --no-fuse (one vCTA each; fused, the chain
 *             would be one vCTA), emitted: the task table names ops in 24 bits.
 *   layers    50 matmuls [4096, 4096] . [4096, 4096], fp16, one after the other (1024 tiles each).
 *   matmul    one matmul [256, 256] . [256, 8388608], fp16, the largest a tile's 32-bit bounds
 *             address: 131,072 vCTAs of 128 x 128, the tiles the cost model picks (262,144 of
 *             64 x 128 under the fixed rules before it; the vCTAs column says which).
 * Usage: scale [ARKGEN] (default: the arkgen next to this program's build folder, build/arkgen). */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* x [8, 256] -> t1 -> ... -> t<n>: relu, gelu, silu and scale in turn. */
static void write_chain(FILE *f, int n)
{
	static const char *const kinds[] = {"relu", "gelu", "silu", "scale"};
	fprintf(f, "version = 1;\nname = \"chain\";\ntensors = (\n  { name = \"t0\"; shape = [8, 256]; role = \"input\"; },\n"
		   "  { name = \"t%d\"; role = \"output\"; }\n);\nops = (\n", n);
	for (int i = 0; i < n; i++)
		fprintf(f, "  { name = \"o%d\"; op = \"%s\"; in = [\"t%d\"]; out = \"t%d\";%s }%s\n", i, kinds[i % 4], i,
			i + 1, i % 4 == 3 ? " factor = 0.5;" : "", i + 1 < n ? "," : "");
	fprintf(f, ");\n");
}

/* h0 [4096, 4096] through n matmuls by [4096, 4096] weights. */
static void write_layers(FILE *f, int n)
{
	fprintf(f, "version = 1;\nname = \"layers\";\ndtype = \"fp16\";\ntensors = (\n"
		   "  { name = \"h0\"; shape = [4096, 4096]; role = \"input\"; },\n");
	for (int i = 0; i < n; i++)
		fprintf(f, "  { name = \"w%d\"; shape = [4096, 4096]; role = \"weight\"; },\n", i);
	fprintf(f, "  { name = \"h%d\"; role = \"output\"; }\n);\nops = (\n", n);
	for (int i = 0; i < n; i++)
		fprintf(f, "  { name = \"fc%d\"; op = \"matmul\"; in = [\"h%d\", \"w%d\"]; out = \"h%d\"; }%s\n", i, i,
			i, i + 1, i + 1 < n ? "," : "");
	fprintf(f, ");\n");
}

static void write_matmul(FILE *f, int unused)
{
	(void)unused;
	fprintf(f, "version = 1;\nname = \"matmul\";\ndtype = \"fp16\";\ntensors = (\n"
		   "  { name = \"a\"; shape = [256, 256]; role = \"input\"; },\n"
		   "  { name = \"b\"; shape = [256, 8388608]; role = \"weight\"; },\n"
		   "  { name = \"c\"; role = \"output\"; }\n);\n"
		   "ops = (\n  { name = \"mm\"; op = \"matmul\"; in = [\"a\", \"b\"]; out = \"c\"; }\n);\n");
}

struct model {
	const char *label;
	void (*write)(FILE *f, int n);
	int n;
	const char *option; /* one extra option, or NULL */
	int emit;           /* run with -o */
};

static const struct model models[] = {
	{"chain 100000", write_chain, 100000, "--no-fuse", 1},
	{"layers 50x4096^2", write_layers, 50, NULL, 1},
	{"matmul [256,256]x[256,2^23]", write_matmul, 0, NULL, 1},
};

/* Runs arkgen on cfg (its report into rep), returns its exit status; *sec and *rss_mb measured. */
static int run(const char *arkgen, const char *cfg, const char *cu, const char *rep, const struct model *m,
	       double *sec, long *rss_mb)
{
	fflush(stdout);
	double t0 = now();
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (!freopen(rep, "w", stdout) || !freopen(rep, "a", stderr))
			_exit(127);
		const char *argv[8];
		int k = 0;
		argv[k++] = arkgen;
		if (m->option)
			argv[k++] = m->option;
		argv[k++] = cfg;
		if (m->emit)
			argv[k++] = "-o", argv[k++] = cu;
		argv[k] = NULL;
		execv(arkgen, (char *const *)argv);
		_exit(127);
	}
	int st;
	struct rusage ru;
	if (wait4(pid, &st, 0, &ru) < 0)
		return -1;
	*sec = now() - t0;
	*rss_mb = ru.ru_maxrss / 1024;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* "NAME: N ops (...), M vCTAs on" from the report. */
static void counts(const char *rep, long *ops, long *vctas)
{
	char line[1024];
	FILE *f = fopen(rep, "r");
	*ops = *vctas = -1;
	while (f && fgets(line, sizeof line, f)) {
		const char *p = strstr(line, " ops ("), *q = strstr(line, " vCTAs on ");
		if (!p || !q)
			continue;
		const char *c = p;
		while (c > line && c[-1] >= '0' && c[-1] <= '9')
			c--;
		*ops = atol(c);
		c = q;
		while (c > line && c[-1] >= '0' && c[-1] <= '9')
			c--;
		*vctas = atol(c);
		break;
	}
	if (f)
		fclose(f);
}

int main(int argc, char **argv)
{
	char arkgen[4096], dir[4096];
	if (argc > 1) {
		snprintf(arkgen, sizeof arkgen, "%s", argv[1]);
	} else {
		char self[4096];
		snprintf(self, sizeof self, "%s", argv[0]);
		snprintf(arkgen, sizeof arkgen, "%s/../arkgen", dirname(self));
	}
	if (access(arkgen, X_OK) != 0) {
		fprintf(stderr, "scale: no arkgen at %s (usage: %s [ARKGEN])\n", arkgen, argv[0]);
		return 2;
	}
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof dir, "%s/arkgen-scale.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror(dir);
		return 1;
	}
	printf("%-22s %8s %8s %9s %12s  %s\n", "model", "ops", "vCTAs", "seconds", "peak RSS MB", "status");
	int bad = 0;
	for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
		const struct model *m = &models[i];
		char cfg[4200], cu[4200], rep[4200];
		snprintf(cfg, sizeof cfg, "%s/model.cfg", dir);
		snprintf(cu, sizeof cu, "%s/model.cu", dir);
		snprintf(rep, sizeof rep, "%s/report.txt", dir);
		FILE *f = fopen(cfg, "w");
		if (!f) {
			perror(cfg);
			return 1;
		}
		m->write(f, m->n);
		if (fclose(f)) {
			perror(cfg);
			return 1;
		}
		double sec = 0;
		long rss = 0, ops, vctas;
		int rc = run(arkgen, cfg, cu, rep, m, &sec, &rss);
		counts(rep, &ops, &vctas);
		printf("%-22s %8ld %8ld %9.2f %12ld  %s\n", m->label, ops, vctas, sec, rss,
		       rc == 0 ? (m->emit ? "emitted" : "reported") : "FAILED");
		fflush(stdout);
		bad |= rc != 0;
		unlink(cfg), unlink(cu), unlink(rep);
	}
	rmdir(dir);
	return bad;
}
