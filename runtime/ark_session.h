/* ark_session.h: a model's loop kernels resident on its GPUs: open (upload tables, launch once), write
 * and read tensors, run iterations through the doorbell under a watchdog, trace, close. Plain C. */
#ifndef ARK_SESSION_H
#define ARK_SESSION_H

#include <stdio.h>

#include "ark.h"
#include "ark_proto.h"

#ifdef __cplusplus
extern "C" {
#endif

struct ark_session_opts {
	int timeout_ms; /* watchdog: an iteration that takes longer is aborted and diagnosed; <= 0: 2000 */
	int trace;      /* allocate the trace buffer, and trace every ark_session_run */
	uint32_t counter_base; /* initial value of every counter (the done counter and the model's): a
				* test starts them just below 2^32 so that they wrap within a few iterations */
};

#define ARK_RUN_TRACE 1u /* ark_session_run_ex: time every task of this iteration */
#define ARK_RUN_EMPTY 2u /* ark_session_run_ex: run no task (the doorbell round trip through the kernel) */
/* Test hooks of ark_session_run_ex: host bugs the loop kernel must survive or diagnose. */
#define ARK_RUN_TEST_EARLY 4u /* ring iteration i + 1 too, 50 us after i and without waiting
			       * for it; wait for i + 1 (the kernel starts i + 1 once every SM left i) */
#define ARK_RUN_TEST_SKIP 8u  /* submit iteration i + 2 instead of i + 1 (the kernel diagnoses it) */

struct ark_session; /* opaque */

/* CUDA devices present; 0 when there is none or no usable driver (never an error). */
int ark_device_count(void);

/* Checks every GPU the model needs (count, SMs, shared memory, cooperative launch, occupancy),
 * allocates the arenas, uploads the tables, zeroes the counters, maps the doorbells, enables peer
 * access and launches the loop kernel on every GPU. opts may be NULL. On error *s is NULL. */
int ark_session_open(struct ark_session **s, const struct ark_model *m, const struct ark_session_opts *opts);
/* Stops the kernels (or aborts them if they do not stop), waits for them and frees everything. Never
 * blocks for long: the waits are bounded (about 4 s at most) and poll; when a kernel still runs after
 * them (stuck inside a tile: a dead link, a faulted peer), nothing is freed (a running kernel can
 * reach every GPU's arena and counters, and freeing would wait for it), stderr says what is left,
 * per GPU, and it returns ARK_ERR. NULL is fine. */
int ark_session_close(struct ark_session *s);

/* Copies tensor t between host_buf (tensors[t].bytes) and its GPU's arena, on a side stream; only
 * between iterations. */
int ark_session_write(struct ark_session *s, int t, const void *host_buf);
int ark_session_read(struct ark_session *s, int t, void *host_buf);
/* Sets every byte of tensor t to `byte` (0xff poisons fp16/bf16/fp32 with NaN). */
int ark_session_fill(struct ark_session *s, int t, int byte);

/* Runs one iteration on every GPU: rings the doorbells, waits for completion under the watchdog.
 * On timeout, or as soon as a loop kernel meets a task it has no tile for, the kernels are aborted
 * and the error names, for every SM, the task and the counter it waits on or the template it could
 * not run (full text in ark_session_diagnosis); the session can then only be closed. */
int ark_session_run(struct ark_session *s);
int ark_session_run_ex(struct ark_session *s, unsigned flags);
/* Test hook of the abort path: submits the next iteration, aborts every kernel `us` microseconds
 * later (finished or not) and waits for them to leave, keeping the diagnosis. Returns ARK_OK once
 * every kernel has left, with *completed set if the iteration had completed before the abort; the
 * session can then only be closed. */
int ark_session_run_abort(struct ark_session *s, double us, int *completed);
/* Generation (a model with a token state, one GPU, the loop kernel): `steps` iterations from one
 * doorbell. Before step t < n_prompt the GPU writes prompt[t] into the token state; after every
 * step it streams the token state (the token the model assigned) to the host, which gets it in
 * tokens[t] (may be NULL) and through on_token (may be NULL) as it arrives; it stops after `steps`
 * steps, or earlier at the first token equal to eos (has_eos) from step n_prompt - 1 on. *n_steps:
 * the steps run. The watchdog (timeout_ms) applies to each step. on_token returning nonzero stops
 * the loop kernel (as close does, within ARK_SUBMIT_ABORT_EVERY steps): the generation fails and
 * the session can only be closed. */
#define ARK_GEN_CAP (1 << 20) /* most steps of one generation */
struct ark_gen_req {
	uint32_t steps;
	const int32_t *prompt;
	uint32_t n_prompt;
	int has_eos;
	int32_t eos;
};
typedef int ark_token_fn(void *ctx, uint32_t step, int32_t token);
int ark_session_generate(struct ark_session *s, const struct ark_gen_req *q, int32_t *tokens, uint32_t *n_steps,
			 ark_token_fn *on_token, void *ctx);
/* Iterations completed so far. */
unsigned ark_session_iterations(const struct ark_session *s);
/* Diagnosis of the last watchdog abort ("" if none). */
const char *ark_session_diagnosis(const struct ark_session *s);
/* Name of GPU g of the session ("NVIDIA H100 80GB HBM3"). */
const char *ark_session_gpu_name(const struct ark_session *s, int g);
/* Device addresses of GPU g's arena and counter array (ARK_CTR__FIRST + n_counters), for transports
 * that write data and raise counters from outside the kernel. */
char *ark_session_arena(const struct ark_session *s, int g);
uint32_t *ark_session_counters(const struct ark_session *s, int g);
/* Writes the last traced iteration as Chrome trace JSON (Perfetto, chrome://tracing). */
int ark_session_trace(struct ark_session *s, const char *path);

/* ---- shared by session.c and trace.c ---------------------------------------------------------- */
const char *ark_tmpl_name(int tmpl);     /* "MATMUL", ...; "?" out of range */
const char *ark_tmpl_label(int tmpl);    /* "split-K partial", ... (TMPL_CATALOG); "unknown template" */
const char *ark_op_kind_name(int kind);  /* "matmul", ...; "?" out of range */
/* Index into m->ops of the op that task ti of GPU g computes (its op field), or -1 (none, or out of
 * range). */
int ark_task_op(const struct ark_model *m, int g, int ti);
/* "fc1 MATMUL (0:64, 0:128)": op name, template and tile of task ti of GPU g, into buf. */
void ark_task_label(const struct ark_model *m, int g, int ti, char *buf, size_t size);
/* Writes Chrome trace JSON of one iteration: trace[g] holds [n_tasks][2] globaltimer stamps of GPU g
 * (NULL: skip the GPU). */
int ark_trace_write(FILE *f, const struct ark_model *m, const unsigned long long *const *trace);

#ifdef __cplusplus
}
#endif

#endif
