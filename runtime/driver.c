/* driver.c: main() of every generated binary: check against the CPU reference, benchmark, soak,
 * safetensors I/O and trace, for the model the generated file defines as ark_model_def. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ark.h"
#include "ark_session.h"

extern const struct ark_model ark_model_def;

enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2, EXIT_NO_GPU = 77 };

#define WARMUP 50
#define SOAK_CHECK_EVERY 1000
#define SOAK_SETS 2
#define SOAK_MAX_SETS 16

struct args {
	int check, bench, soak, bench_n, empty_n; /* empty_n > 0: --bench-empty */
	long long soak_n, check_every;
	int sets;          /* input sets the soak alternates */
	int abort_reopen;
	uint32_t counter_base;
	const char *weights, *inputs, *outputs, *trace;
	const char *state_in, *state_out;
	long long gen_n;   /* --generate N, 0: none */
	const char *prompt_ids, *tokens_out;
	int has_eos, per_token;
	int32_t eos;
	int have_seed;
	uint64_t seed;
	double tol;   /* < 0: by dtype */
	int timeout_ms;
};

/* Host side of one run of the program. */
struct drv {
	const struct ark_model *m;
	struct args a;
	struct ark_session *s;
	void **buf;       /* [n_tensors] host copy of every tensor; the reference computes into it */
	void **got;       /* [n_tensors] outputs read back from the GPU (NULL for other roles) */
	uint8_t *loaded;  /* [n_tensors] came from --weights / --inputs */
	uint8_t *poison;  /* [n_tensors] poisoned before a checked iteration */
	void **state0;    /* [n_tensors] the state tensors' values at the start (NULL for other roles) */
	int n_state;      /* state tensors of the model */
};

static void usage(FILE *f, const char *prog, const struct ark_model *m)
{
	fprintf(f,
		"usage: %s [options]\n"
		"Runs model '%s' (from %s; arkgen options: %s) as %s\n"
		"on GPUs 0..%d, %d SMs each; a CPU reference of every op checks the results.\n"
		"\n"
		"  --check            two iterations, each on freshly drawn random inputs with every output,\n"
		"                     activation and internal buffer (split-K workspaces, staging slots)\n"
		"                     poisoned (NaN) on the GPU first; every output is compared with the CPU\n"
		"                     reference. This is what runs when no other action is given. A model with\n"
		"                     state: three iterations, the reference starting each from the GPU's\n"
		"                     state as it is (read back), compare the outputs and the updated state\n"
		"  --bench [N]        %d warm-up iterations, then N (default 1000) iterations, each timed on the\n"
		"                     host from doorbell to completion; prints median, p99 and min in us; a model\n"
		"                     with state gets it put back before each iteration (untimed)\n"
		"  --bench-empty [N]  the same for empty iterations: the doorbell round trip through the loop\n"
		"                     kernel with no task run (the fixed cost of every iteration)\n"
		"  --iterations N     soak test: N iterations in a row, alternating between input sets (each\n"
		"                     iteration gets other inputs than the one before); the outputs of every\n"
		"                     Kth iteration and of the last, with outputs and internal buffers poisoned\n"
		"                     first, are compared with the reference of that iteration's inputs\n"
		"  --check-every K    the soak's K (default %d)\n"
		"  --input-sets S     input sets the soak alternates, 1 to %d (default %d)\n"
		"  --counter-base B   every counter starts at B instead of 0 (0xfffffc00: they cross the 32-bit\n"
		"                     wrap within the first iterations)\n"
		"  --abort-reopen     first run one iteration aborted by the host about half-way, close the\n"
		"                     session, open a new one in the same process, then go on with the actions\n"
		"  --weights FILE     weights from a safetensors file (the ones it lacks stay random), and the\n"
		"                     initial values of the state tensors it holds (the others start at zero)\n"
		"  --state-in FILE    initial values of state tensors from a safetensors file\n"
		"  --state-out FILE   after every action, write the state tensors to a safetensors file\n"
		"  --generate N       first of all, N decode steps from one doorbell (a model with a token\n"
		"                     state): the GPU writes prompt id t into the token state before step t,\n"
		"                     then the model's own token feeds the next step; the tokens the model\n"
		"                     makes (from the last prompt step on) are printed as they arrive, one id\n"
		"                     a line; then tokens/s and us/token\n"
		"  --prompt-ids FILE  the prompt: whitespace-separated integer ids (at most N)\n"
		"  --eos ID           stop the generation at the first generated token equal to ID\n"
		"  --tokens-out FILE  write the generated ids there, one a line, instead of to stdout\n"
		"  --doorbell-per-token  after --generate, the same steps again from the same state with one\n"
		"                     doorbell per step (the host writes the prompt ids and reads the tokens):\n"
		"                     us/token of both, the same tokens expected\n"
		"  --inputs FILE      inputs from a safetensors file (the ones it lacks stay random)\n"
		"  --outputs FILE     run one more iteration and write the outputs to a safetensors file\n"
		"  --trace FILE       run one more iteration with every task timed (after %d untraced ones if\n"
		"                     nothing else ran) and write it as Chrome trace JSON (Perfetto)\n"
		"  --seed S           seed of the random weights and inputs (default: from the clock with\n"
		"                     --check, so every run draws new data; 1 otherwise); always printed\n"
		"  --tolerance X      relative error ||gpu - ref|| / ||ref|| allowed per output (default by\n"
		"                     dtype: fp32 1e-4, bf16 3e-2, fp16 1e-2); an argmax's int32 output may\n"
		"                     differ from the reference's index only at a near tie: where the\n"
		"                     reference's value is within that tolerance of its largest\n"
		"  --timeout MS       watchdog: an iteration taking longer is aborted and the SMs, tasks and\n"
		"                     counters it waits on are printed (default 2000)\n"
		"  --help             this text\n"
		"\n"
		"Random data: uniform in [-1, 1) for inputs and 1-D weights, [-1/sqrt(rows), 1/sqrt(rows)) for\n"
		"weights of 2 or more dimensions; int32 inputs valid values: an embedding's ids in its table's\n"
		"rows, a position that keeps pos + T <= L for the decode_attentions and kv_appends reading it,\n"
		"else 0 or 1. Actions run in the order check, iterations, bench, bench-empty, outputs, trace,\n"
		"state-out (generate first of all). Exit status: 0 ok, 1 mismatch or runtime failure, 2 usage\n"
		"error, 77 no CUDA device.\n",
		prog, m->name, m->source ? m->source : "?", m->options ? m->options : "",
		m->streams ? "one kernel per op on CUDA streams (--bench-empty: a stream synchronise, nothing\n"
			     "issued; --abort-reopen needs the loop kernel)"
			   : "one resident loop kernel per GPU",
		m->gpus - 1, m->sms,
		WARMUP, SOAK_CHECK_EVERY, SOAK_MAX_SETS, SOAK_SETS, WARMUP);
}

static int parse_ll(const char *s, long long lo, long long hi, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* Returns -1 after printing a usage error, 1 for --help, 0 to run. */
static int parse_args(int argc, char **argv, struct args *a)
{
	long long v;
	memset(a, 0, sizeof *a);
	a->tol = -1;
	a->bench_n = 1000;
	a->timeout_ms = 2000;
	a->check_every = SOAK_CHECK_EVERY;
	a->sets = SOAK_SETS;
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED_VALUE()                                                                   \
	do {                                                                           \
		if (!val) {                                                            \
			fprintf(stderr, "%s: option %s needs a value\n", argv[0], o);   \
			return -1;                                                     \
		}                                                                      \
		i++;                                                                   \
	} while (0)
		if (!strcmp(o, "--help") || !strcmp(o, "-h"))
			return 1;
		else if (!strcmp(o, "--check"))
			a->check = 1;
		else if (!strcmp(o, "--bench")) {
			a->bench = 1;
			if (val && val[0] != '-') {
				if (parse_ll(val, 1, 100000000, &v)) {
					fprintf(stderr, "%s: --bench wants a count of iterations, not '%s'\n", argv[0], val);
					return -1;
				}
				a->bench_n = (int)v;
				i++;
			}
		} else if (!strcmp(o, "--bench-empty")) {
			a->empty_n = 1000;
			if (val && val[0] != '-') {
				if (parse_ll(val, 1, 100000000, &v)) {
					fprintf(stderr, "%s: --bench-empty wants a count of iterations, not '%s'\n", argv[0],
						val);
					return -1;
				}
				a->empty_n = (int)v;
				i++;
			}
		} else if (!strcmp(o, "--iterations")) {
			NEED_VALUE();
			if (parse_ll(val, 1, ARK_ITER_LIMIT - 10000, &v)) {
				fprintf(stderr, "%s: --iterations wants a count of iterations, not '%s'\n", argv[0], val);
				return -1;
			}
			a->soak = 1;
			a->soak_n = v;
		} else if (!strcmp(o, "--check-every")) {
			NEED_VALUE();
			if (parse_ll(val, 1, ARK_ITER_LIMIT, &v)) {
				fprintf(stderr, "%s: --check-every wants a count of iterations, not '%s'\n", argv[0], val);
				return -1;
			}
			a->check_every = v;
		} else if (!strcmp(o, "--input-sets")) {
			NEED_VALUE();
			if (parse_ll(val, 1, SOAK_MAX_SETS, &v)) {
				fprintf(stderr, "%s: --input-sets wants 1 to %d, not '%s'\n", argv[0], SOAK_MAX_SETS, val);
				return -1;
			}
			a->sets = (int)v;
		} else if (!strcmp(o, "--counter-base")) {
			NEED_VALUE();
			char *end;
			errno = 0;
			unsigned long long b = strtoull(val, &end, 0);
			if (errno || end == val || *end || val[0] == '-' || b > UINT32_MAX) {
				fprintf(stderr, "%s: --counter-base wants 0 to 4294967295, not '%s'\n", argv[0], val);
				return -1;
			}
			a->counter_base = (uint32_t)b;
		} else if (!strcmp(o, "--abort-reopen"))
			a->abort_reopen = 1;
		else if (!strcmp(o, "--weights")) {
			NEED_VALUE();
			a->weights = val;
		} else if (!strcmp(o, "--inputs")) {
			NEED_VALUE();
			a->inputs = val;
		} else if (!strcmp(o, "--state-in")) {
			NEED_VALUE();
			a->state_in = val;
		} else if (!strcmp(o, "--state-out")) {
			NEED_VALUE();
			a->state_out = val;
		} else if (!strcmp(o, "--generate")) {
			NEED_VALUE();
			if (parse_ll(val, 1, ARK_GEN_CAP, &v)) {
				fprintf(stderr, "%s: --generate wants 1 to %d steps, not '%s'\n", argv[0], ARK_GEN_CAP, val);
				return -1;
			}
			a->gen_n = v;
		} else if (!strcmp(o, "--prompt-ids")) {
			NEED_VALUE();
			a->prompt_ids = val;
		} else if (!strcmp(o, "--eos")) {
			NEED_VALUE();
			if (parse_ll(val, INT32_MIN, INT32_MAX, &v)) {
				fprintf(stderr, "%s: --eos wants an int32 token id, not '%s'\n", argv[0], val);
				return -1;
			}
			a->has_eos = 1;
			a->eos = (int32_t)v;
		} else if (!strcmp(o, "--tokens-out")) {
			NEED_VALUE();
			a->tokens_out = val;
		} else if (!strcmp(o, "--doorbell-per-token")) {
			a->per_token = 1;
		} else if (!strcmp(o, "--outputs")) {
			NEED_VALUE();
			a->outputs = val;
		} else if (!strcmp(o, "--trace")) {
			NEED_VALUE();
			a->trace = val;
		} else if (!strcmp(o, "--seed")) {
			NEED_VALUE();
			char *end;
			errno = 0;
			a->seed = strtoull(val, &end, 0);
			if (errno || end == val || *end || val[0] == '-') {
				fprintf(stderr, "%s: --seed wants an unsigned integer, not '%s'\n", argv[0], val);
				return -1;
			}
			a->have_seed = 1;
		} else if (!strcmp(o, "--tolerance")) {
			NEED_VALUE();
			char *end;
			a->tol = strtod(val, &end);
			if (end == val || *end || !(a->tol >= 0) || isinf(a->tol)) {
				fprintf(stderr, "%s: --tolerance wants a number >= 0, not '%s'\n", argv[0], val);
				return -1;
			}
		} else if (!strcmp(o, "--timeout")) {
			NEED_VALUE();
			if (parse_ll(val, 1, 3600000, &v)) {
				fprintf(stderr, "%s: --timeout wants milliseconds, not '%s'\n", argv[0], val);
				return -1;
			}
			a->timeout_ms = (int)v;
		} else {
			fprintf(stderr, "%s: unknown option '%s' (see --help)\n", argv[0], o);
			return -1;
		}
#undef NEED_VALUE
	}
	if ((a->prompt_ids || a->has_eos || a->tokens_out || a->per_token) && !a->gen_n) {
		fprintf(stderr, "%s: --prompt-ids, --eos, --tokens-out and --doorbell-per-token go with --generate N\n",
			argv[0]);
		return -1;
	}
	if (!a->check && !a->bench && !a->empty_n && !a->soak && !a->outputs && !a->trace && !a->state_out && !a->gen_n)
		a->check = 1;
	return 0;
}

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static double tolerance(const struct args *a, int dtype)
{
	if (a->tol >= 0)
		return a->tol;
	return dtype == ARK_FP32 ? 1e-4 : dtype == ARK_BF16 ? 3e-2 : 1e-2;
}

/* ---- host data ---------------------------------------------------------------------------------- */

static uint64_t tensor_seed(uint64_t seed, int round, int t)
{
	return seed + 0x9e3779b97f4a7c15ull * (1 + (uint64_t)t + ((uint64_t)round << 24));
}

/* Random fill of the weights (round 0 only) and inputs of round `round` that no file provided. */
static void fill_random(struct drv *d, int round)
{
	const struct ark_model *m = d->m;
	for (int t = 0; t < m->n_tensors; t++) {
		const struct ark_tensor *T = &m->tensors[t];
		float scale = 1.0f;
		if (d->loaded[t])
			continue;
		if (T->role == ARK_ROLE_WEIGHT) {
			if (round)
				continue;
			if (T->ndim >= 2 && T->shape[0] > 0)
				scale = 1.0f / sqrtf((float)T->shape[0]);
		} else if (T->role != ARK_ROLE_INPUT)
			continue;
		if (ark_dtype_quantized(T->dtype)) /* valid blocks: finite d and m */
			ark_fill_random_quant(d->buf[t], T->dtype, ark_tensor_elems(T) / T->shape[T->ndim - 1],
					      T->shape[T->ndim - 1], tensor_seed(d->a.seed, round, t), scale);
		else if (T->dtype == ARK_INT32) /* ids of a table, a position, or a 0/1 mask: valid values only */
			ark_fill_random_ints(d->buf[t], ark_tensor_elems(T), tensor_seed(d->a.seed, round, t),
					     ark_int_range(m, t));
		else
			ark_fill_random(d->buf[t], T->dtype, ark_tensor_elems(T), tensor_seed(d->a.seed, round, t), scale);
	}
}

/* Marks the tensors of role `role` that a safetensors file holds, and loads them; a weights file may
 * hold the initial values of state tensors too. */
static int load_file(struct drv *d, const char *path, int role)
{
	struct ark_st st;
	int n = 0, n_state = 0;
	unsigned mask = 1u << role;
	if (role == ARK_ROLE_WEIGHT)
		mask |= 1u << ARK_ROLE_STATE;
	if (ark_st_load(path, d->m, mask, d->buf, &n))
		return ARK_ERR;
	if (ark_st_open(&st, path))
		return ARK_ERR;
	for (int t = 0; t < d->m->n_tensors; t++)
		if (((mask >> d->m->tensors[t].role) & 1) && ark_st_find(&st, d->m->tensors[t].name)) {
			d->loaded[t] = 1;
			n_state += d->m->tensors[t].role == ARK_ROLE_STATE;
		}
	ark_st_close(&st);
	printf("%s: %d %s loaded", path, role == ARK_ROLE_STATE ? n : n - n_state,
	       role == ARK_ROLE_WEIGHT ? "weights" : role == ARK_ROLE_STATE ? "state tensors" : "inputs");
	if (n_state && role != ARK_ROLE_STATE)
		printf(", %d state tensor%s", n_state, n_state == 1 ? "" : "s");
	printf("\n");
	return ARK_OK;
}

/* Byte ranges [a0, a0 + an) and [b0, b0 + bn) of one GPU's arena meet. */
static int overlap(const struct ark_tensor *a, const struct ark_tensor *b)
{
	if (a->offset == ARK_NOT_STORED || b->offset == ARK_NOT_STORED)
		return 0;
	return a->gpu == b->gpu && a->offset < b->offset + ark_tensor_extent(b) && b->offset < a->offset + ark_tensor_extent(a);
}

/* Outputs, activations and internal buffers (split-K workspaces, staging slots, packet buffers) get
 * poisoned, so that a tile reading bytes of an earlier iteration instead of this one's reads NaN;
 * unless they share memory with data that must survive (weights and inputs never do: the memory plan
 * keeps them apart). Every iteration writes what it reads of them first, and a packet poll never
 * takes 0xff bytes for a packet of its iteration (the iteration field reads 0xffffffff). */
static void plan_poison(struct drv *d)
{
	const struct ark_model *m = d->m;
	for (int t = 0; t < m->n_tensors; t++) {
		int r = m->tensors[t].role;
		d->poison[t] = (r == ARK_ROLE_OUTPUT || r == ARK_ROLE_ACTIVATION || r == ARK_ROLE_INTERNAL) &&
			       m->tensors[t].offset != ARK_NOT_STORED;
		for (int u = 0; u < m->n_tensors && d->poison[t]; u++) {
			int ru = m->tensors[u].role;
			if ((ru == ARK_ROLE_WEIGHT || ru == ARK_ROLE_INPUT || ru == ARK_ROLE_STATE) &&
			    overlap(&m->tensors[t], &m->tensors[u])) /* a view of a state (kv_append's result) */
				d->poison[t] = 0;
		}
	}
}

static int upload_role(struct drv *d, int role)
{
	for (int t = 0; t < d->m->n_tensors; t++)
		if (d->m->tensors[t].role == role && ark_session_write(d->s, t, d->buf[t]))
			return ARK_ERR;
	return ARK_OK;
}

/* The state tensors from host buffers (vals[t]) to the GPU, or back. */
static int state_upload(struct drv *d, void *const *vals)
{
	for (int t = 0; t < d->m->n_tensors; t++)
		if (d->m->tensors[t].role == ARK_ROLE_STATE && ark_session_write(d->s, t, vals[t]))
			return ARK_ERR;
	return ARK_OK;
}

static int state_read(struct drv *d, void **vals)
{
	for (int t = 0; t < d->m->n_tensors; t++)
		if (d->m->tensors[t].role == ARK_ROLE_STATE && ark_session_read(d->s, t, vals[t]))
			return ARK_ERR;
	return ARK_OK;
}

/* Copies the state tensors of from[] into to[]. */
static void state_copy(const struct ark_model *m, void *const *to, void *const *from)
{
	for (int t = 0; t < m->n_tensors; t++)
		if (m->tensors[t].role == ARK_ROLE_STATE)
			memcpy(to[t], from[t], m->tensors[t].bytes);
}


static int poison_all(struct drv *d)
{
	for (int t = 0; t < d->m->n_tensors; t++)
		if (d->poison[t] && ark_session_fill(d->s, t, 0xff))
			return ARK_ERR;
	return ARK_OK;
}

static int read_outputs(struct drv *d)
{
	for (int t = 0; t < d->m->n_tensors; t++)
		if (d->got[t] && ark_session_read(d->s, t, d->got[t]))
			return ARK_ERR;
	return ARK_OK;
}

/* The argmax op whose output is tensor t, or NULL. */
static const struct ark_op *argmax_of(const struct ark_model *m, int t)
{
	for (int i = 0; i < m->n_ops; i++)
		if (m->ops[i].kind == ARK_OP_ARGMAX && m->ops[i].out[0] == t)
			return &m->ops[i];
	return NULL;
}

/* Whether tensor t is the input of an argmax: the reference keeps it to judge the GPU's indices. */
static int argmax_input(const struct ark_model *m, int t)
{
	for (int i = 0; i < m->n_ops; i++)
		if (m->ops[i].kind == ARK_OP_ARGMAX && m->ops[i].in[0] == t)
			return 1;
	return 0;
}

/* An argmax's output: the GPU's index of a row may differ from the reference's only at a near tie,
 * where the reference's value at the GPU's index is within tol of its largest (relative to that
 * value's size, at least 1e-30): the GPU computed the values it compares in its own rounding. Without
 * the reference's input (x NULL), indices must be equal. Counts the rows that differ (*differ) and
 * those that are no near tie (*far). */
static void compare_argmax(const struct ark_model *m, const struct ark_op *o, const int32_t *got, const int32_t *want,
			   const void *x, double tol, int64_t *differ, int64_t *far)
{
	const struct ark_tensor *X = &m->tensors[o->in[0]];
	int64_t N = X->shape[X->ndim - 1], M = ark_tensor_elems(X) / N;
	*differ = *far = 0;
	for (int64_t r = 0; r < M; r++) {
		if (got[r] == want[r])
			continue;
		++*differ;
		if (!x || got[r] < 0 || got[r] >= N || want[r] < 0 || want[r] >= N) {
			++*far;
			continue;
		}
		double best = ark_get(x, X->dtype, r * N + want[r]), v = ark_get(x, X->dtype, r * N + got[r]);
		double slack = tol * (fabs(best) > 1e-30 ? fabs(best) : 1e-30);
		if (!(v >= best - slack))
			++*far;
	}
}

/* Whether every element where int32 state t differs (got: the GPU's, d->buf: the reference's) holds,
 * on each side, what that side's output of one argmax holds there, and that output differs from the
 * reference's only at near ties: a decoder's next token fed back into its state, picked by the GPU
 * between two logits equal within the tolerance. */
static int state_near_tie(struct drv *d, int t, const int32_t *got)
{
	const struct ark_model *m = d->m;
	const int64_t n = ark_tensor_elems(&m->tensors[t]);
	const int32_t *want = d->buf[t];
	for (int o = 0; o < m->n_tensors; o++) {
		const struct ark_op *am = m->tensors[o].dtype == ARK_INT32 && d->got[o] ? argmax_of(m, o) : NULL;
		if (!am || ark_tensor_elems(&m->tensors[o]) != n)
			continue;
		const int32_t *go = d->got[o], *wo = d->buf[o];
		int64_t differ, far, i;
		compare_argmax(m, am, go, wo, d->buf[am->in[0]], tolerance(&d->a, m->tensors[am->in[0]].dtype), &differ,
			       &far);
		if (far)
			continue;
		for (i = 0; i < n; i++)
			if (got[i] != want[i] && (got[i] != go[i] || want[i] != wo[i]))
				break;
		if (i == n)
			return 1;
	}
	return 0;
}

/* Compares the GPU's state (got[t]) with the reference's (d->buf); int32 state exactly, except where
 * it holds an argmax's index that differs at a near tie (state_near_tie). Returns the number of state
 * tensors that mismatch. */
static int compare_state(struct drv *d, void *const *got, const char *what, int verbose)
{
	const struct ark_model *m = d->m;
	int bad_state = 0;
	for (int t = 0; t < m->n_tensors; t++) {
		const struct ark_tensor *T = &m->tensors[t];
		if (T->role != ARK_ROLE_STATE)
			continue;
		double rel = 0, tol = T->dtype == ARK_INT32 ? 0 : tolerance(&d->a, T->dtype);
		int64_t bad = 0, n = ark_tensor_elems(T), differ = 0;
		if (T->dtype == ARK_INT32) {
			for (int64_t i = 0; i < n; i++)
				differ += ((const int32_t *)got[t])[i] != ((const int32_t *)d->buf[t])[i];
		} else {
			ark_compare(got[t], d->buf[t], T->dtype, n, &rel, &bad);
		}
		const int tie = differ && state_near_tie(d, t, got[t]);
		int ok = !bad && (!differ || tie) && rel <= tol;
		bad_state += !ok;
		if (verbose || !ok) {
			if (T->dtype == ARK_INT32)
				printf("%s: state %s: %lld of %lld int32 elements differ%s %s\n", what, T->name, (long long)differ,
				       (long long)n, tie ? ", each an argmax's index at a near tie" : "", ok ? "ok" : "MISMATCH");
			else
				printf("%s: state %s: rel err %.1e (tolerance %.0e) %s%s\n", what, T->name, rel, tol,
				       ok ? "ok" : "MISMATCH", bad ? ", NaN/Inf" : "");
		}
	}
	return bad_state;
}

/* Compares every output with the reference in ref[]; prints one line per output when verbose.
 * Returns the number of outputs that mismatch. */
static int compare(struct drv *d, void *const *ref, const char *what, int verbose)
{
	const struct ark_model *m = d->m;
	int bad_outputs = 0;
	for (int t = 0; t < m->n_tensors; t++) {
		const struct ark_tensor *T = &m->tensors[t];
		double rel = 0, tol = tolerance(&d->a, T->dtype);
		int64_t bad = 0;
		if (!d->got[t])
			continue;
		const struct ark_op *am = T->dtype == ARK_INT32 ? argmax_of(m, t) : NULL;
		if (am) {
			int64_t differ, far;
			const int xt = am->in[0];
			tol = tolerance(&d->a, m->tensors[xt].dtype);
			compare_argmax(m, am, d->got[t], ref[t], ref[xt], tol, &differ, &far);
			bad_outputs += far > 0;
			if (verbose || far)
				printf("%s: output %s: %lld of %lld indices differ from the reference's, %lld of them "
				       "at no near tie (tolerance %.0e) %s\n", what, T->name, (long long)differ,
				       (long long)ark_tensor_elems(T), (long long)far, tol, far ? "MISMATCH" : "ok");
			continue;
		}
		ark_compare(d->got[t], ref[t], T->dtype, ark_tensor_elems(T), &rel, &bad);
		int ok = !bad && rel <= tol; /* a NaN rel fails too */
		bad_outputs += !ok;
		if (verbose || !ok) {
			printf("%s: output %s: rel err %.1e (tolerance %.0e) %s", what, T->name, rel, tol,
			       ok ? "ok" : "MISMATCH");
			if (bad)
				printf(", %lld NaN/Inf", (long long)bad);
			printf("\n");
		}
	}
	return bad_outputs;
}

/* ---- actions ------------------------------------------------------------------------------------ */

/* Two iterations (three with state, so that it carries), each on fresh inputs, outputs poisoned. A
 * model with state: the reference starts every iteration from the GPU's state as it is (read back),
 * and after every iteration the GPU's updated state is compared with the reference's too; so a
 * difference the tolerance accepts (an argmax at a near tie) is not carried into the next iteration
 * as a difference of the reference's own making. */
static int do_check(struct drv *d)
{
	int mismatches = 0, rounds = d->n_state ? 3 : 2, rc = ARK_ERR;
	void **got = NULL;
	if (d->n_state) {
		if (!(got = calloc((size_t)d->m->n_tensors, sizeof *got)))
			return ark_error("out of memory");
		for (int t = 0; t < d->m->n_tensors; t++)
			if (d->m->tensors[t].role == ARK_ROLE_STATE && !(got[t] = malloc(d->m->tensors[t].bytes + 1))) {
				ark_error("out of memory");
				goto out;
			}
		if (state_read(d, d->buf))
			goto out;
	}
	for (int round = 1; round <= rounds; round++) {
		char what[32];
		if (round >= 2)
			fill_random(d, round);
		if (poison_all(d) || upload_role(d, ARK_ROLE_INPUT))
			goto out;
		if (ark_session_run(d->s) || read_outputs(d))
			goto out;
		if (ark_ref_run(d->m, d->buf))
			goto out;
		snprintf(what, sizeof what, "check %d", round);
		mismatches += compare(d, d->buf, what, 1);
		if (d->n_state) {
			if (state_read(d, got))
				goto out;
			mismatches += compare_state(d, got, what, 1);
			state_copy(d->m, d->buf, got); /* the next iteration's start, for both */
		}
	}
	rc = mismatches ? 1 : 0;
out:
	for (int t = 0; got && t < d->m->n_tensors; t++)
		free(got[t]);
	free(got);
	return rc;
}

/* The soak's input sets: set r holds the inputs of its round and the reference outputs for them. */
struct soak_sets {
	int n;
	void **state0; /* [n_tensors]: the GPU's state before the soak (NULL for other roles), which every
			* set's reference starts from and every checked iteration gets back */
	void **in[SOAK_MAX_SETS];  /* [n_tensors]: a copy of each input, NULL for other roles */
	void **ref[SOAK_MAX_SETS]; /* [n_tensors]: reference of each output */
};

static void *dup_bytes(const void *p, size_t n)
{
	void *q = malloc(n ? n : 1);
	if (q)
		memcpy(q, p, n);
	return q;
}

static void soak_sets_free(struct drv *d, struct soak_sets *ss)
{
	for (int r = 0; r < ss->n; r++)
		for (int t = 0; t < d->m->n_tensors; t++) {
			if (ss->in[r])
				free(ss->in[r][t]);
			if (ss->ref[r])
				free(ss->ref[r][t]);
		}
	for (int r = 0; r < ss->n; r++) {
		free(ss->in[r]);
		free(ss->ref[r]);
	}
	for (int t = 0; ss->state0 && t < d->m->n_tensors; t++)
		free(ss->state0[t]);
	free(ss->state0);
}

/* Set 0 is the inputs in buf (from --inputs or drawn already), set r > 0 the random draw of round
 * 10 + r (inputs from a file stay the file's in every set). */
static int soak_sets_make(struct drv *d, struct soak_sets *ss, int n)
{
	const struct ark_model *m = d->m;
	memset(ss, 0, sizeof *ss);
	if (d->n_state) {
		if (!(ss->state0 = calloc((size_t)m->n_tensors, sizeof *ss->state0)))
			return ark_error("out of memory");
		for (int t = 0; t < m->n_tensors; t++)
			if (m->tensors[t].role == ARK_ROLE_STATE && !(ss->state0[t] = malloc(m->tensors[t].bytes + 1)))
				return ark_error("out of memory");
		if (state_read(d, ss->state0))
			return ARK_ERR;
	}
	for (int r = 0; r < n; r++) {
		ss->n = r + 1;
		ss->in[r] = calloc((size_t)m->n_tensors, sizeof **ss->in);
		ss->ref[r] = calloc((size_t)m->n_tensors, sizeof **ss->ref);
		if (!ss->in[r] || !ss->ref[r])
			return ark_error("out of memory");
		if (r)
			fill_random(d, 10 + r);
		if (ss->state0)
			state_copy(m, d->buf, ss->state0);
		if (ark_ref_run(m, d->buf))
			return ARK_ERR;
		for (int t = 0; t < m->n_tensors; t++) {
			size_t b = m->tensors[t].bytes;
			if (m->tensors[t].role == ARK_ROLE_INPUT && !(ss->in[r][t] = dup_bytes(d->buf[t], b)))
				return ark_error("out of memory");
			if ((d->got[t] || argmax_input(m, t)) && !(ss->ref[r][t] = dup_bytes(d->buf[t], b)))
				return ark_error("out of memory");
		}
	}
	return ARK_OK;
}

static int upload_set(struct drv *d, const struct soak_sets *ss, int r)
{
	for (int t = 0; t < d->m->n_tensors; t++)
		if (ss->in[r][t] && ark_session_write(d->s, t, ss->in[r][t]))
			return ARK_ERR;
	return ARK_OK;
}

/* N iterations; iteration i runs on input set i % sets, so that no iteration has the inputs of the
 * one before: a tile that reads a buffer before this iteration wrote it (a missing wait) computes
 * from the previous inputs. Every Kth iteration and the last are checked against the reference of
 * their own set, with outputs and internal buffers poisoned before them. A model with state runs
 * free in between; a checked iteration gets the state back that the references started from. */
static int do_soak(struct drv *d)
{
	long long n = d->a.soak_n, k = d->a.check_every, checked = 0;
	int mismatches = 0, rc = ARK_ERR;
	struct soak_sets ss;
	if (soak_sets_make(d, &ss, d->a.sets))
		goto out;
	double t0 = now_us();
	for (long long i = 1; i <= n; i++) {
		int r = (int)(i % ss.n), chk = i % k == 0 || i == n;
		if ((ss.n > 1 || i == 1) && upload_set(d, &ss, r))
			goto out;
		if (chk && poison_all(d))
			goto out;
		if (chk && ss.state0 && state_upload(d, ss.state0)) /* the state its set's reference started from */
			goto out;
		if (ark_session_run(d->s)) {
			fprintf(stderr, "soak: iteration %lld of %lld failed\n", i, n);
			goto out;
		}
		if (chk) {
			char what[64];
			snprintf(what, sizeof what, "soak iteration %lld (input set %d)", i, r);
			if (read_outputs(d))
				goto out;
			mismatches += compare(d, ss.ref[r], what, i == n);
			checked++;
		}
	}
	double us = now_us() - t0;
	printf("soak: %lld iterations in %.2f s (%.1f us each, including input uploads and checks), %d input "
	       "sets alternating, %lld checked, %s\n", n, us * 1e-6, us / (double)n, ss.n, checked,
	       mismatches ? "MISMATCH" : "ok");
	rc = mismatches ? 1 : 0;
out:
	soak_sets_free(d, &ss);
	return rc;
}

/* --abort-reopen: one iteration aborted by the host at about half the time an iteration takes, the
 * session closed (every kernel must have left) and a new one opened in the same process, with the
 * weights and inputs uploaded again: whatever the aborted iteration left (half-raised counters, DMA
 * tickets reserved and never published, requests in flight, packets) must not reach the new one. */
static int do_abort_reopen(struct drv *d, const struct ark_session_opts *opts)
{
	double best = 1e30;
	for (int i = 0; i < 5; i++) {
		double t0 = now_us();
		if (ark_session_run(d->s))
			return ARK_ERR;
		double t = now_us() - t0;
		best = t < best ? t : best;
	}
	int completed = 0;
	if (ark_session_run_abort(d->s, best / 2, &completed))
		return ARK_ERR;
	printf("abort-reopen: iteration %u aborted %.1f us after its submit (%s)\n", ark_session_iterations(d->s),
	       best / 2, completed ? "it had completed already" : "mid-iteration");
	const char *diag = ark_session_diagnosis(d->s);
	for (const char *p = diag; *p;) {
		const char *e = strchr(p, '\n');
		int len = e ? (int)(e - p) : (int)strlen(p);
		printf("abort-reopen: | %.*s\n", len, p);
		p += len + (e != NULL);
	}
	int rc = ark_session_close(d->s);
	d->s = NULL;
	if (rc)
		return ARK_ERR;
	if (ark_session_open(&d->s, d->m, opts) || upload_role(d, ARK_ROLE_WEIGHT) || upload_role(d, ARK_ROLE_INPUT) ||
	    (d->n_state && state_upload(d, d->state0)))
		return ARK_ERR;
	printf("abort-reopen: closed; a new session opened in the same process\n");
	return ARK_OK;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* --bench (flags 0) and --bench-empty (ARK_RUN_EMPTY): n timed iterations after the warm-up. A model
 * with state gets its state put back before every iteration, untimed: each starts from the state the
 * bench found (a decoder's position does not run past its caches), and the state is left as it was. */
static int do_bench(struct drv *d, int n, unsigned flags)
{
	double *t = malloc((size_t)n * sizeof *t);
	void **st = d->n_state && !flags ? calloc((size_t)d->m->n_tensors, sizeof *st) : NULL;
	if (!t || (d->n_state && !flags && !st)) {
		free(t);
		free(st);
		return ark_error("out of memory");
	}
	int rc = ARK_ERR;
	if (st) {
		for (int i = 0; i < d->m->n_tensors; i++)
			if (d->m->tensors[i].role == ARK_ROLE_STATE && !(st[i] = malloc(d->m->tensors[i].bytes + 1)))
				goto fail;
		if (state_read(d, st))
			goto fail;
	}
	for (int i = 0; i < WARMUP + n; i++) {
		if (st && state_upload(d, st))
			goto fail;
		double t0 = now_us();
		if (ark_session_run_ex(d->s, flags))
			goto fail;
		if (i >= WARMUP)
			t[i - WARMUP] = now_us() - t0;
	}
	qsort(t, (size_t)n, sizeof *t, cmp_double);
	int p99 = (int)ceil(0.99 * n) - 1;
	printf("%s: %d iterations after %d warm-up: median %.2f us, p99 %.2f us, min %.2f us",
	       flags ? "bench-empty" : "bench", n, WARMUP, n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]), t[p99 < 0 ? 0 : p99], t[0]);
	if (!flags)
		printf(" (predicted %.2f us)", d->m->predicted_us);
	printf("%s\n", st ? " (state put back before each)" : "");
	rc = 0;
fail:
	for (int i = 0; st && i < d->m->n_tensors; i++)
		free(st[i]);
	free(st);
	free(t);
	return rc;
}

static int do_outputs(struct drv *d)
{
	void **w = calloc((size_t)d->m->n_tensors, sizeof *w);
	if (!w)
		return ark_error("out of memory");
	int rc = ark_session_run(d->s) || read_outputs(d);
	for (int t = 0; t < d->m->n_tensors && !rc; t++)
		w[t] = d->got[t] ? d->got[t] : d->buf[t];
	if (!rc)
		rc = ark_st_write(d->a.outputs, d->m, 1u << ARK_ROLE_OUTPUT, w);
	if (!rc)
		printf("outputs written to %s\n", d->a.outputs);
	free(w);
	return rc ? ARK_ERR : 0;
}

/* --state-out: the GPU's state tensors as they are after every other action. */
static int do_state_out(struct drv *d)
{
	void **w = calloc((size_t)d->m->n_tensors, sizeof *w);
	int rc = w ? ARK_OK : ark_error("out of memory");
	for (int t = 0; t < d->m->n_tensors && !rc; t++)
		if (d->m->tensors[t].role == ARK_ROLE_STATE && !(w[t] = malloc(d->m->tensors[t].bytes + 1)))
			rc = ark_error("out of memory");
	if (!rc)
		rc = state_read(d, w);
	if (!rc)
		rc = ark_st_write(d->a.state_out, d->m, 1u << ARK_ROLE_STATE, w);
	if (!rc)
		printf("state written to %s (%d tensor%s)\n", d->a.state_out, d->n_state, d->n_state == 1 ? "" : "s");
	for (int t = 0; w && t < d->m->n_tensors; t++)
		free(w[t]);
	free(w);
	return rc ? ARK_ERR : 0;
}

/* ---- generation -------------------------------------------------------------------------------- */

/* The ids of a text file of whitespace-separated integers into *ids (malloc'd), *n of them. */
static int read_ids(const char *path, int32_t **ids, uint32_t *n)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return ark_error("%s: %s", path, strerror(errno));
	uint32_t cap = 64, k = 0;
	int32_t *a = malloc(cap * sizeof *a);
	char tok[64];
	int rc = ARK_OK;
	while (a && fscanf(f, "%63s", tok) == 1) {
		long long v;
		if (parse_ll(tok, INT32_MIN, INT32_MAX, &v)) {
			rc = ark_error("%s: '%s' (id %u) is not an int32 id", path, tok, k + 1);
			break;
		}
		if (k == cap) {
			int32_t *b = cap < ARK_GEN_CAP ? realloc(a, 2 * cap * sizeof *a) : NULL;
			if (!b) {
				rc = ark_error("%s: more than %d ids", path, ARK_GEN_CAP);
				break;
			}
			a = b, cap *= 2;
		}
		a[k++] = (int32_t)v;
	}
	fclose(f);
	if (!a)
		return ark_error("out of memory");
	if (rc) {
		free(a);
		return rc;
	}
	*ids = a;
	*n = k;
	return ARK_OK;
}

struct gen_out {
	FILE *f;
	uint32_t from; /* the first step whose token the model made (n_prompt - 1, or 0) */
};

static int print_token(void *ctx, uint32_t step, int32_t token)
{
	struct gen_out *o = ctx;
	if (step >= o->from)
		fprintf(o->f, "%d\n", token);
	return 0;
}

/* --generate N: N steps from one doorbell, the tokens streamed as they come; then, with
 * --doorbell-per-token, the same steps from the same state with one doorbell each. */
static int do_generate(struct drv *d)
{
	const struct ark_model *m = d->m;
	int32_t *prompt = NULL, *tok = NULL;
	void **st0 = NULL;
	uint32_t n_prompt = 0, steps = 0;
	int rc = ARK_ERR;
	FILE *f = stdout;
	if (d->a.prompt_ids && read_ids(d->a.prompt_ids, &prompt, &n_prompt))
		return ARK_ERR;
	if (n_prompt > (uint32_t)d->a.gen_n) {
		ark_error("--prompt-ids: %u ids do not fit in --generate %lld steps", n_prompt, d->a.gen_n);
		goto out;
	}
	if (!(tok = calloc((size_t)d->a.gen_n, sizeof *tok)) || !(st0 = calloc((size_t)m->n_tensors, sizeof *st0))) {
		ark_error("out of memory");
		goto out;
	}
	for (int t = 0; t < m->n_tensors; t++)
		if (m->tensors[t].role == ARK_ROLE_STATE && !(st0[t] = malloc(m->tensors[t].bytes + 1))) {
			ark_error("out of memory");
			goto out;
		}
	if (d->a.per_token && state_read(d, st0)) /* the state both runs start from */
		goto out;
	if (d->a.tokens_out && !(f = fopen(d->a.tokens_out, "w"))) {
		ark_error("%s: %s", d->a.tokens_out, strerror(errno));
		goto out;
	}
	struct gen_out go = {f, n_prompt ? n_prompt - 1 : 0};
	struct ark_gen_req q = {(uint32_t)d->a.gen_n, prompt, n_prompt, d->a.has_eos, d->a.eos};
	double t0 = now_us();
	if (ark_session_generate(d->s, &q, tok, &steps, print_token, &go))
		goto out;
	double us = now_us() - t0;
	fflush(f);
	uint32_t made = steps - go.from;
	int at_eos = d->a.has_eos && steps < q.steps;
	printf("generate: %u steps from one doorbell (%u prompt ids, %u tokens made%s) in %.3f ms: %.1f steps/s, "
	       "%.2f us/step%s%s\n", steps, n_prompt, made, at_eos ? ", stopped at the EOS" : "", us * 1e-3,
	       steps / (us * 1e-6), us / steps, d->a.tokens_out ? "; tokens written to " : "",
	       d->a.tokens_out ? d->a.tokens_out : "");
	if (d->a.per_token) { /* the same steps, one doorbell each: the host writes the prompt, reads the token */
		const int tt = m->token_state - 1;
		int32_t v;
		uint32_t k = 0, differ = 0;
		if (state_upload(d, st0))
			goto out;
		t0 = now_us();
		for (; k < steps; k++) {
			if (k < n_prompt && ark_session_write(d->s, tt, &prompt[k]))
				goto out;
			if (ark_session_run(d->s) || ark_session_read(d->s, tt, &v))
				goto out;
			differ += v != tok[k];
		}
		double us1 = now_us() - t0;
		printf("generate: the same %u steps with one doorbell each in %.3f ms: %.2f us/step (%.2f us/step "
		       "saved by one doorbell for all); %u of the tokens differ%s\n", k, us1 * 1e-3, us1 / k, (us1 - us) / k,
		       differ, differ ? " (MISMATCH)" : "");
		if (differ) {
			rc = 1;
			goto out;
		}
	}
	rc = 0;
out:
	if (f && f != stdout)
		fclose(f);
	for (int t = 0; st0 && t < m->n_tensors; t++)
		free(st0[t]);
	free(st0);
	free(tok);
	free(prompt);
	return rc;
}

/* The traced iteration follows WARMUP untraced ones when nothing ran before it, so that it shows the
 * steady state rather than the first touch of the weights (TLB, L2) and of the code. */
static int do_trace(struct drv *d)
{
	if (!ark_session_iterations(d->s))
		for (int i = 0; i < WARMUP; i++)
			if (ark_session_run_ex(d->s, 0))
				return ARK_ERR;
	if (ark_session_run_ex(d->s, ARK_RUN_TRACE) || ark_session_trace(d->s, d->a.trace))
		return ARK_ERR;
	int n = 0;
	for (int g = 0; g < d->m->gpus; g++)
		n += d->m->tables[g].n_tasks;
	printf("trace: %d tasks of one iteration written to %s\n", n, d->a.trace);
	return 0;
}

/* ---- main --------------------------------------------------------------------------------------- */

static void drv_free(struct drv *d)
{
	for (int t = 0; d->buf && t < d->m->n_tensors; t++) {
		free(d->buf[t]);
		if (d->got)
			free(d->got[t]);
	}
	free(d->buf);
	free(d->got);
	free(d->loaded);
	free(d->poison);
	for (int t = 0; d->state0 && t < d->m->n_tensors; t++)
		free(d->state0[t]);
	free(d->state0);
}

static int drv_alloc(struct drv *d)
{
	const struct ark_model *m = d->m;
	size_t n = (size_t)m->n_tensors;
	d->buf = calloc(n, sizeof *d->buf);
	d->got = calloc(n, sizeof *d->got);
	d->loaded = calloc(n, 1);
	d->poison = calloc(n, 1);
	d->state0 = calloc(n, sizeof *d->state0);
	if (!d->buf || !d->got || !d->loaded || !d->poison || !d->state0)
		return ark_error("out of memory");
	for (int t = 0; t < m->n_tensors; t++) {
		size_t b = m->tensors[t].bytes ? m->tensors[t].bytes : 1; /* [elems] of its dtype */
		d->buf[t] = calloc(1, b);
		if (!d->buf[t])
			return ark_error("out of memory for tensor '%s' (%zu bytes)", m->tensors[t].name, b);
		if (m->tensors[t].role == ARK_ROLE_OUTPUT && !(d->got[t] = calloc(1, b)))
			return ark_error("out of memory for tensor '%s' (%zu bytes)", m->tensors[t].name, b);
		if (m->tensors[t].role == ARK_ROLE_STATE && !(d->state0[t] = calloc(1, b)))
			return ark_error("out of memory for tensor '%s' (%zu bytes)", m->tensors[t].name, b);
		d->n_state += m->tensors[t].role == ARK_ROLE_STATE;
	}
	return ARK_OK;
}

int main(int argc, char **argv)
{
	const struct ark_model *m = &ark_model_def;
	struct drv d;
	int rc = EXIT_FAIL, r;

	memset(&d, 0, sizeof d);
	d.m = m;
	r = parse_args(argc, argv, &d.a);
	if (r) {
		if (r > 0)
			usage(stdout, argv[0], m);
		return r > 0 ? EXIT_OK : EXIT_USAGE;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (ark_device_count() == 0) {
		printf("no CUDA device found: nothing to run (the schedule was made for %d SMs; predicted "
		       "latency %.2f us)\n", m->sms, m->predicted_us);
		return EXIT_NO_GPU;
	}
	if (!d.a.have_seed) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		d.a.seed = d.a.check ? ((uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec ^
					((uint64_t)getpid() << 32)) & 0xffffffffffffull
				     : 1;
	}
	printf("model %s: %d GPU%s x %d SMs; seed %llu (reproduce with --seed %llu)\n", m->name, m->gpus,
	       m->gpus > 1 ? "s" : "", m->sms, (unsigned long long)d.a.seed, (unsigned long long)d.a.seed);
	if (drv_alloc(&d))
		goto fail;
	if (d.a.weights && load_file(&d, d.a.weights, ARK_ROLE_WEIGHT))
		goto fail;
	if (d.a.inputs && load_file(&d, d.a.inputs, ARK_ROLE_INPUT))
		goto fail;
	if (d.a.state_in && load_file(&d, d.a.state_in, ARK_ROLE_STATE))
		goto fail;
	if ((d.a.state_in || d.a.state_out) && !d.n_state) {
		ark_error("--state-in and --state-out need a model with state tensors; model '%s' has none", m->name);
		goto fail;
	}
	state_copy(m, d.state0, d.buf); /* zeros where no file gave a value */
	fill_random(&d, 0);
	plan_poison(&d);

	struct ark_session_opts opts = {.timeout_ms = d.a.timeout_ms, .trace = d.a.trace != NULL,
					.counter_base = d.a.counter_base};
	if (ark_session_open(&d.s, m, &opts))
		goto fail;
	for (int g = 0; g < m->gpus; g++)
		printf("GPU %d: %s\n", g, ark_session_gpu_name(d.s, g));
	if (d.a.counter_base)
		printf("counters start at %u\n", d.a.counter_base);
	if (upload_role(&d, ARK_ROLE_WEIGHT) || upload_role(&d, ARK_ROLE_INPUT) || upload_role(&d, ARK_ROLE_STATE))
		goto fail;
	if (d.a.abort_reopen && do_abort_reopen(&d, &opts))
		goto fail;

	int mismatch = 0;
	if (d.a.gen_n && (r = do_generate(&d)) != 0) {
		if (r < 0)
			goto fail;
		mismatch = 1;
	}
	if (d.a.check && (r = do_check(&d)) != 0) {
		if (r < 0)
			goto fail;
		mismatch = 1;
	}
	if (d.a.soak && (r = do_soak(&d)) != 0) {
		if (r < 0)
			goto fail;
		mismatch = 1;
	}
	if (d.a.bench && do_bench(&d, d.a.bench_n, 0))
		goto fail;
	if (d.a.empty_n && do_bench(&d, d.a.empty_n, ARK_RUN_EMPTY))
		goto fail;
	if (d.a.outputs && do_outputs(&d))
		goto fail;
	if (d.a.trace && do_trace(&d))
		goto fail;
	if (d.a.state_out && do_state_out(&d))
		goto fail;
	rc = mismatch ? EXIT_FAIL : EXIT_OK;
	if (ark_session_close(d.s)) {
		d.s = NULL;
		goto fail;
	}
	drv_free(&d);
	return rc;
fail:
	fprintf(stderr, "error: %s\n", ark_last_error());
	ark_session_close(d.s);
	drv_free(&d);
	return EXIT_FAIL;
}
