/* streams.c: the multi-stream backends of a session (ark_streams_rt.h): per iteration, the stream
 * program's op kernels launched on their streams with their events (streams), that program captured
 * once into a CUDA graph and replayed (graph), or the dependency DAG built while issuing from the
 * bytes each op reads and writes, on streams taken from a pool (dynamic). One GPU. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "ark_dynamic.h"
#include "ark_streams_rt.h"
#include "ark_streams.h"
#include "ark_task.h"

static const char *const backend_names[ARK_BACKEND__COUNT] = {
#define X(id, name) [ARK_BACKEND_##id] = name,
	ARK_BACKEND_LIST(X)
#undef X
};

static const char *backend_of(const struct ark_streams *p)
{
	return p->backend >= 0 && p->backend < ARK_BACKEND__COUNT ? backend_names[p->backend] : "?";
}

#define SRT_FAILS(call) ({                                                                              \
	cudaError_t e_ = (call);                                                                         \
	e_ != cudaSuccess ? (ark_error("%s failed: %s (%s:%d)", #call, cudaGetErrorString(e_), __FILE__, \
				       __LINE__), 1)                                                     \
			  : 0;                                                                           \
})

struct ark_srt {
	const struct ark_model *m;
	const struct ark_streams *p;
	struct ark_op_args args;      /* trace NULL; the traced iteration sets it */
	unsigned long long *trace;
	uint32_t *task_index;         /* device copy */
	int *smem;                    /* per launch: dynamic shared memory */
	int n_streams;
	cudaStream_t *st;
	cudaEvent_t *ev;              /* streams, graph: the program's events; dynamic: one per node */
	cudaEvent_t fork, *join;      /* fork: recorded on stream 0 before the program; join[s]: after */
	cudaGraphExec_t exec[2];      /* graph: [traced] */
	/* dynamic */
	struct ark_dyn dyn;           /* its decisions (runtime/dynamic.c) */
	int *waits;                   /* [n_nodes] the waits of the node being issued */
	double delay_us;              /* ARK_DYNAMIC_DELAY_US: random issue delay, 0: none */
	uint64_t rng;
	unsigned long long waits_issued, events_recorded; /* dynamic, over the session */
};

static double now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec * 1e-3;
}

int ark_srt_open(struct ark_srt **rp, const struct ark_model *m, char *arena, const struct ark_task *tasks,
		 const struct ark_opp *opp, unsigned long long *trace)
{
	const struct ark_streams *p = m->streams;
	struct ark_srt *r = calloc(1, sizeof *r);
	*rp = r;
	if (!r)
		return ark_error("out of memory");
	r->m = m;
	r->p = p;
	if (m->gpus != 1)
		return ark_error("model '%s': the %s backend runs on one GPU", m->name, backend_of(p));
	for (int i = 0; i < p->n_task_index; i++)
		if (p->task_index[i] >= (uint32_t)m->tables[0].n_tasks)
			return ark_error("model '%s': the stream program names task %u of %d", m->name, p->task_index[i],
					 m->tables[0].n_tasks);
	for (int i = 0; i < p->n_launches; i++)
		if ((uint64_t)p->launches[i].first + p->launches[i].n > (uint64_t)p->n_task_index || !p->launches[i].n)
			return ark_error("model '%s': launch %d is outside the stream program's tasks", m->name, i);
	for (int i = 0; i < p->n_nodes; i++) {
		const struct ark_snode *N = &p->nodes[i];
		if ((uint64_t)N->launch0 + N->n_launch > (uint64_t)p->n_launches ||
		    (uint64_t)N->wait0 + N->n_wait > (uint64_t)p->n_waits || N->stream >= p->n_streams ||
		    N->record >= p->n_events || (uint64_t)N->range0 + N->n_range > (uint64_t)p->n_ranges)
			return ark_error("model '%s': node %d of the stream program is malformed", m->name, i);
		for (uint32_t w = 0; w < N->n_wait; w++)
			if (p->waits[N->wait0 + w] >= (uint32_t)p->n_events)
				return ark_error("model '%s': node %d waits on event %u of %d", m->name, i,
						 p->waits[N->wait0 + w], p->n_events);
	}
	int e = p->prepare();
	if (e)
		return ark_error("the op kernel's shared memory limit: %s", cudaGetErrorString((cudaError_t)e));
	r->smem = calloc((size_t)p->n_launches + 1, sizeof *r->smem);
	if (!r->smem)
		return ark_error("out of memory");
	for (int l = 0; l < p->n_launches; l++)
		for (uint32_t i = 0; i < p->launches[l].n; i++) {
			int b = p->tmpl_smem(m->tables[0].tasks[p->task_index[p->launches[l].first + i]].tmpl);
			r->smem[l] = b > r->smem[l] ? b : r->smem[l];
		}
	size_t nb = (size_t)(p->n_task_index ? p->n_task_index : 1) * sizeof *r->task_index;
	if (SRT_FAILS(cudaMalloc((void **)&r->task_index, nb)) ||
	    SRT_FAILS(cudaMemcpy(r->task_index, p->task_index, (size_t)p->n_task_index * sizeof *r->task_index,
				 cudaMemcpyHostToDevice)))
		return ARK_ERR;
	r->args = (struct ark_op_args){.arena = arena, .tasks = tasks, .task_index = r->task_index, .opp = opp};
	r->trace = trace;
	r->n_streams = p->n_streams < 1 ? 1 : p->n_streams;
	int n_ev = p->backend == ARK_BACKEND_DYNAMIC ? p->n_nodes : p->n_events;
	r->st = calloc((size_t)r->n_streams, sizeof *r->st);
	r->join = calloc((size_t)r->n_streams, sizeof *r->join);
	r->ev = calloc((size_t)n_ev + 1, sizeof *r->ev);
	r->waits = calloc((size_t)p->n_nodes + 1, sizeof *r->waits);
	if (!r->st || !r->join || !r->ev || !r->waits)
		return ark_error("out of memory");
	if (p->backend == ARK_BACKEND_DYNAMIC && ark_dyn_init(&r->dyn, p->n_nodes, r->n_streams))
		return ARK_ERR;
	for (int s = 0; s < r->n_streams; s++)
		if (SRT_FAILS(cudaStreamCreateWithFlags(&r->st[s], cudaStreamNonBlocking)) ||
		    SRT_FAILS(cudaEventCreateWithFlags(&r->join[s], cudaEventDisableTiming)))
			return ARK_ERR;
	for (int i = 0; i < n_ev; i++)
		if (SRT_FAILS(cudaEventCreateWithFlags(&r->ev[i], cudaEventDisableTiming)))
			return ARK_ERR;
	if (SRT_FAILS(cudaEventCreateWithFlags(&r->fork, cudaEventDisableTiming)))
		return ARK_ERR;
	const char *d = getenv("ARK_DYNAMIC_DELAY_US");
	r->delay_us = d ? atof(d) : 0;
	const char *seed = getenv("ARK_DYNAMIC_SEED");
	r->rng = seed ? strtoull(seed, NULL, 0) : (uint64_t)now_us();
	r->rng |= 1;
	if (r->delay_us > 0)
		printf("dynamic backend: random issue delays of 0..%.0f us before every op (ARK_DYNAMIC_DELAY_US)\n",
		       r->delay_us);
	return ARK_OK;
}

static int launch_node(struct ark_srt *r, const struct ark_snode *N, cudaStream_t s, const struct ark_op_args *a)
{
	for (uint32_t l = N->launch0; l < N->launch0 + N->n_launch; l++) {
		int e = r->p->launch(&r->p->launches[l], r->smem[l], a, s);
		if (e)
			return ark_error("launch of op '%s': %s", r->m->ops[N->op].name, cudaGetErrorString((cudaError_t)e));
	}
	return ARK_OK;
}

/* Every other stream waits for stream 0 (fork), so the program starts after what came before. */
static int fork_streams(struct ark_srt *r)
{
	if (SRT_FAILS(cudaEventRecord(r->fork, r->st[0])))
		return ARK_ERR;
	for (int s = 1; s < r->n_streams; s++)
		if (SRT_FAILS(cudaStreamWaitEvent(r->st[s], r->fork, 0)))
			return ARK_ERR;
	return ARK_OK;
}

/* Stream 0 waits for every other stream (join), so its end is the program's. */
static int join_streams(struct ark_srt *r)
{
	for (int s = 1; s < r->n_streams; s++)
		if (SRT_FAILS(cudaEventRecord(r->join[s], r->st[s])) || SRT_FAILS(cudaStreamWaitEvent(r->st[0], r->join[s], 0)))
			return ARK_ERR;
	return ARK_OK;
}

/* The static program (streams, graph): nodes in issue order, their waits, launches and records. */
static int issue_static(struct ark_srt *r, const struct ark_op_args *a)
{
	const struct ark_streams *p = r->p;
	if (fork_streams(r))
		return ARK_ERR;
	for (int i = 0; i < p->n_nodes; i++) {
		const struct ark_snode *N = &p->nodes[i];
		cudaStream_t s = r->st[N->stream];
		for (uint32_t w = 0; w < N->n_wait; w++)
			if (SRT_FAILS(cudaStreamWaitEvent(s, r->ev[p->waits[N->wait0 + w]], 0)))
				return ARK_ERR;
		if (launch_node(r, N, s, a))
			return ARK_ERR;
		if (N->record >= 0 && SRT_FAILS(cudaEventRecord(r->ev[N->record], s)))
			return ARK_ERR;
	}
	return join_streams(r);
}

static uint64_t rng_next(struct ark_srt *r)
{
	r->rng ^= r->rng << 13;
	r->rng ^= r->rng >> 7;
	r->rng ^= r->rng << 17;
	return r->rng;
}

/* Whether node's work (its event, recorded after it) has finished. */
static int node_idle(void *ctx, int node)
{
	struct ark_srt *r = ctx;
	cudaError_t e = cudaEventQuery(r->ev[node]);
	if (e != cudaSuccess && e != cudaErrorNotReady)
		cudaGetLastError();
	return e == cudaSuccess;
}

/* GrCUDA's dynamic DAG (runtime/dynamic.c decides): every op, as it is issued, depends on the earlier
 * ops of this iteration whose bytes conflict with its own; it goes to a parent's stream, an empty one
 * or a finished one, waits on the events that are not implied, and records its own event (a later op
 * may need it). ARK_DYNAMIC_DELAY_US: a random delay before each issue. */
static int issue_dynamic(struct ark_srt *r, const struct ark_op_args *a)
{
	const struct ark_streams *p = r->p;
	ark_dyn_begin(&r->dyn);
	if (fork_streams(r))
		return ARK_ERR;
	for (int i = 0; i < p->n_nodes; i++) {
		if (r->delay_us > 0) {
			double until = now_us() + (double)(rng_next(r) % 1000) * r->delay_us / 999.0;
			while (now_us() < until)
				;
		}
		int pick, nw = ark_dyn_issue(&r->dyn, p, i, node_idle, r, &pick, r->waits);
		cudaStream_t st = r->st[pick];
		for (int k = 0; k < nw; k++)
			if (SRT_FAILS(cudaStreamWaitEvent(st, r->ev[r->waits[k]], 0)))
				return ARK_ERR;
		r->waits_issued += (unsigned long long)nw;
		if (launch_node(r, &p->nodes[i], st, a))
			return ARK_ERR;
		if (SRT_FAILS(cudaEventRecord(r->ev[i], st)))
			return ARK_ERR;
		r->events_recorded++;
	}
	return join_streams(r);
}

/* Waits for stream 0 under the watchdog. */
static int wait_done(struct ark_srt *r, int timeout_ms)
{
	double t0 = now_us();
	for (;;) {
		cudaError_t e = cudaStreamQuery(r->st[0]);
		if (e == cudaSuccess)
			return ARK_OK;
		if (e != cudaErrorNotReady)
			return ark_error("the %s backend's iteration failed: %s", backend_of(r->p),
					 cudaGetErrorString(e));
		if (now_us() - t0 > 1e3 * timeout_ms)
			return ark_error("the iteration did not complete within %d ms (op kernels still running)",
					 timeout_ms);
	}
}

int ark_srt_run(struct ark_srt *r, int traced, int empty, int timeout_ms)
{
	struct ark_op_args a = r->args;
	a.trace = traced ? r->trace : NULL;
	if (empty) /* the host's round trip through a stream: nothing issued but the synchronise */
		return wait_done(r, timeout_ms);
	switch (r->p->backend) {
	case ARK_BACKEND_STREAMS:
		if (issue_static(r, &a))
			return ARK_ERR;
		break;
	case ARK_BACKEND_GRAPH:
		if (!r->exec[traced]) {
			cudaGraph_t g;
			if (SRT_FAILS(cudaStreamBeginCapture(r->st[0], cudaStreamCaptureModeThreadLocal)))
				return ARK_ERR;
			int rc = issue_static(r, &a);
			cudaError_t e = cudaStreamEndCapture(r->st[0], &g);
			if (rc)
				return ARK_ERR;
			if (e != cudaSuccess)
				return ark_error("capture of the stream program: %s", cudaGetErrorString(e));
			e = cudaGraphInstantiate(&r->exec[traced], g, 0);
			cudaGraphDestroy(g);
			if (e != cudaSuccess)
				return ark_error("cudaGraphInstantiate: %s", cudaGetErrorString(e));
		}
		if (SRT_FAILS(cudaGraphLaunch(r->exec[traced], r->st[0])))
			return ARK_ERR;
		break;
	case ARK_BACKEND_DYNAMIC:
		if (issue_dynamic(r, &a))
			return ARK_ERR;
		break;
	default:
		return ark_error("stream program of unknown backend %d", r->p->backend);
	}
	return wait_done(r, timeout_ms);
}

void ark_srt_close(struct ark_srt *r)
{
	if (!r)
		return;
	if (r->st && r->st[0])
		cudaStreamSynchronize(r->st[0]);
	for (int k = 0; k < 2; k++)
		if (r->exec[k])
			cudaGraphExecDestroy(r->exec[k]);
	int n_ev = r->p->backend == ARK_BACKEND_DYNAMIC ? r->p->n_nodes : r->p->n_events;
	for (int i = 0; r->ev && i < n_ev; i++)
		if (r->ev[i])
			cudaEventDestroy(r->ev[i]);
	for (int s = 0; s < r->n_streams; s++) {
		if (r->st && r->st[s])
			cudaStreamDestroy(r->st[s]);
		if (r->join && r->join[s])
			cudaEventDestroy(r->join[s]);
	}
	if (r->fork)
		cudaEventDestroy(r->fork);
	if (r->p->backend == ARK_BACKEND_DYNAMIC && r->events_recorded)
		printf("dynamic backend: %llu events recorded, %llu waits issued over the session\n", r->events_recorded,
		       r->waits_issued);
	cudaFree(r->task_index);
	cudaGetLastError();
	free(r->smem);
	free(r->st);
	free(r->join);
	free(r->ev);
	free(r->waits);
	ark_dyn_free(&r->dyn);
	free(r);
}
