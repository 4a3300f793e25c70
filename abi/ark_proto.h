/* ark_proto.h: the protocol between the host runtime and the resident loop kernel: the doorbell in
 * mapped pinned memory, the kernel arguments and the reserved counters. Plain C, host and device.
 *
 * One iteration i (i = 1, 2, ...; below 2^31 - 16):
 *   host:   bell->submit = i (| ARK_SUBMIT_TRACE | ARK_SUBMIT_EMPTY)  release store, mapped memory
 *   SM 0:   waits until counters[ARK_CTR_DONE] says every SM finished i - 1 (so a host that rings
 *           early cannot start i on some SMs while others still run i - 1), then sees the submit
 *           (ld.acquire.sys); a submit other than i (one skipped) is a host bug: it records
 *           ARK_WHERE_BAD_SUBMIT and raises the abort; else it publishes i in
 *           counters[ARK_CTR_ITER] (st.release.gpu)
 *   SM s:   sees a new value there (ld.acquire.gpu), walks tasks[sm_begin[s] .. sm_begin[s + 1]),
 *           each task waiting on its counters and signalling its own, then adds 1 to
 *           counters[ARK_CTR_DONE] (atom.acq_rel.gpu)
 *   the SM whose add brings DONE to base + i * n_sms: bell->complete = i (st.release.sys)
 *   host:   sees complete == i.
 * Stop: the host sets bell->stop while the kernel is idle; SM 0 publishes ARK_ITER_STOP and every CTA
 * leaves. Abort: the host sets bell->abort; every spin loop checks it, the CTA records where it was
 * in bell->sm[its SM] and leaves. A CTA that meets a task it cannot run (a template or dtype this
 * binary has no tile for) records it (ARK_WHERE_BAD_TEMPLATE), then sets bell->abort itself: the
 * host, which never sets it during an iteration, sees it there and diagnoses. Every CTA that leaves
 * sets bell->sm[its SM].left to 1 (a system-scope store: atomics on host memory are not portable
 * over PCIe).
 * An empty iteration (ARK_SUBMIT_EMPTY) runs no task: every SM only counts itself done. It is the
 * doorbell round trip through the loop kernel. Task waits count the non-empty iterations only.
 * Counters start at kargs.ctr_base (0 unless a test asks for another, to cross the 32-bit wrap
 * within a few iterations): the session fills DONE and the model's counters with it, and every
 * target the kernel computes adds it (a DMA flag value too).
 *
 * Generation (a model with a token state, one GPU): the host writes gen_steps = N >= 1 (and
 * gen_prompt, gen_eos, gen_flags; the prompt ids into kargs.gen_prompt) before its release store of
 * submit = i | ARK_SUBMIT_GEN; SM 0 reads those fields on such a submit only. It then runs iterations i .. i + N - 1 from that one submit: before publishing
 * iteration i + t it writes prompt id t into the token state when t < gen_prompt; after the done
 * counter shows every SM finished iteration i + t, it reads the token state (the token the model
 * assigned in step t), stores it to kargs.gen_tokens[t] in mapped memory and gen_count = t + 1
 * (st.release.sys), and stops after the last step, or early once t >= gen_prompt - 1 and the token
 * equals gen_eos (gen_flags & ARK_GEN_EOS): then it stores gen_end = i + t (st.release.sys) and polls
 * the doorbell again, expecting i + t + 1 (the doorbell still holds i meanwhile). Every ARK_SUBMIT_ABORT_EVERY steps it reads the stop and
 * abort flags. The host waits for gen_end and complete, then writes gen_steps = 0. */
#ifndef ARK_PROTO_H
#define ARK_PROTO_H

#include <stdint.h>

#include "ark_ops.h"
#include "ark_task.h"

#define ARK_MAX_SMS 256 /* per GPU, for the per-SM diagnostics of the bell */

/* Reserved counters, at the start of the counter array. The model's counters follow from
 * ARK_CTR__FIRST: the emitter numbers them from 0 and adds ARK_CTR__FIRST, so every counter index in
 * a task's signal or a wait is an index into the whole array; plan.n_counters counts the model's
 * counters only, and the runtime allocates ARK_CTR__FIRST + n_counters. */
enum {
	ARK_CTR_ITER = 0, /* iteration published by SM 0 to the others (values below) */
	ARK_CTR_DONE = 1, /* each SM adds 1 when its list of the iteration is finished */
	ARK_CTR__FIRST = 2
};
#define ARK_CTR(k) (ARK_CTR__FIRST + (k)) /* counter k of the model, as tasks and waits name it */

#define ARK_GEN_EOS 1u /* bell->gen_flags: stop at gen_eos */

#ifdef __CUDACC__
#define ARK_PROTO_HD __host__ __device__
#else
#define ARK_PROTO_HD
#endif

/* Between steps t and t + 1 of a generation of `steps` steps with `prompt` prompt ids, whose step t
 * made `token`: 1 if it ends after step t (its last step, or the EOS once the prompt is done: a
 * token made during the prompt is overwritten by the next prompt id and never ends it), else 0.
 * SM 0 of the loop kernel decides by it; so does the CPU emulator of the protocol (tests/emu.c). */
static inline ARK_PROTO_HD int ark_gen_ends(uint32_t t, uint32_t steps, uint32_t prompt, uint32_t flags, int32_t eos,
					    int32_t token)
{
	return t + 1 >= steps || ((flags & ARK_GEN_EOS) && t + 1 >= prompt && token == eos);
}

/* Values of bell->submit and counters[ARK_CTR_ITER]: the iteration, with the trace flag on top. */
#define ARK_ITER_MASK 0x3fffffffu
#define ARK_SUBMIT_TRACE 0x80000000u /* time every task of this iteration into kargs.trace */
#define ARK_SUBMIT_EMPTY 0x40000000u /* run no task (measures the doorbell round trip) */
#define ARK_SUBMIT_GEN 0xc0000000u   /* both flags (an empty iteration traces nothing): start a
				      * generation (below); the iterations run without flags */
#define ARK_ITER_STOP 0xffffffffu    /* published by SM 0: leave */
#define ARK_ITER_ABORT 0xfffffffeu   /* published by SM 0: leave, aborted */
#define ARK_ITER_LIMIT 0x3ffffff0u   /* the host never submits this iteration or later */

/* Where a CTA was when it saw the abort flag (bell->sm[].where). */
enum ark_where {
	ARK_WHERE_NONE = 0,    /* no record: the CTA had not seen the abort (or never started) */
	ARK_WHERE_SUBMIT = 1,  /* SM 0, idle: waiting for the host to submit an iteration */
	ARK_WHERE_ITER = 2,    /* other SMs, idle: waiting for SM 0 to publish the iteration */
	ARK_WHERE_COUNTER = 3, /* waiting on a counter before running task `task` (iter: the counters'
				* iteration, which counts the non-empty iterations only) */
	ARK_WHERE_BAD_TEMPLATE = 4, /* task `task` names template `tmpl` with dtype `dtype`, which this
				     * binary has no tile for; the CTA set bell->abort */
	ARK_WHERE_DONE = 5,    /* SM 0, idle: waiting for every SM to finish iteration `iter` (counter
				* ARK_CTR_DONE: want, seen) before it looks at the doorbell */
	ARK_WHERE_BAD_SUBMIT = 6, /* SM 0: after iteration `iter` the host submitted `seen` (want:
				   * iter + 1), a host bug; SM 0 set bell->abort */
	ARK_WHERE_PACKETS = 7, /* task `task`, a packet sum, saw the abort while polling packets */
	ARK_WHERE_BAD_INDEX = 8 /* task `task` (template `tmpl`) read an index out of range: row `counter`
				 * of its output has index `seen`, expected 0 to want - 1 (an embedding's
				 * id and table rows); the CTA set bell->abort */
};

/* Per-SM diagnosis, written by the CTA on abort. want and seen are raw counter values. */
struct ark_bell_sm {
	uint32_t where;   /* enum ark_where */
	uint32_t iter;    /* iteration it was in */
	uint32_t task;    /* index into the GPU's task table (ARK_WHERE_COUNTER, ARK_WHERE_BAD_TEMPLATE) */
	uint32_t counter; /* counter index it was spinning on */
	uint32_t want;    /* value that would have satisfied the wait */
	uint32_t seen;    /* value it last read */
	uint32_t left;    /* 1 once this CTA has left the loop kernel (the bell is zeroed before launch) */
	uint32_t tmpl;    /* ARK_WHERE_BAD_TEMPLATE: the task's template (enum ark_tmpl, or not one) */
	uint32_t dtype;   /* ARK_WHERE_BAD_TEMPLATE: its op params' dtype */
	uint32_t pad_;
};

/* The doorbell of one GPU: mapped pinned host memory (cudaHostAlloc mapped | portable), page-aligned.
 * The host writes the first cache line, the device the rest. submit and stop form one 8-byte word
 * that SM 0 reads with a single ld.acquire.sys.u64 (submit in the low half). */
struct ark_bell {
	/* written by the host */
	uint32_t submit;   /* iteration to run: 1, 2, ... | ARK_SUBMIT_TRACE */
	uint32_t stop;     /* nonzero: leave when idle */
	uint32_t abort;    /* nonzero: leave now, recording where */
	uint32_t gen_steps;  /* > 0: the submit starts a generation of that many iterations (above) */
	uint32_t gen_prompt; /* prompt ids in kargs.gen_prompt, written into the token state before steps
			      * 0 .. gen_prompt - 1 */
	int32_t gen_eos;     /* with gen_flags & ARK_GEN_EOS: the token that ends the generation */
	uint32_t gen_flags;
	uint32_t pad0_[9];
	/* written by the device */
	uint32_t complete; /* last completed iteration (without the flags) */
	uint32_t gen_count; /* tokens of the current generation stored in kargs.gen_tokens */
	uint32_t gen_end;   /* last iteration of the last generation, stored once it is over */
	uint32_t pad1_[13];
	struct ark_bell_sm sm[ARK_MAX_SMS];
};

/* Arguments of the loop kernel of one GPU (device pointers). */
struct ark_kargs {
	char *arena;                      /* this GPU's arena: every tensor at its offset */
	char *peers[ARK_MAX_GPUS];        /* every GPU's arena (peer mapping; NULL without access) */
	const struct ark_task *tasks;     /* [n_tasks] every SM's list, back to back */
	const uint32_t *sm_begin;         /* [n_sms + 1] */
	const struct ark_wait *waits;     /* [n_waits] */
	const struct ark_opp *opp;        /* [n_opp] */
	uint32_t *counters;               /* [ARK_CTR__FIRST + n_counters], zeroed before the launch */
	struct ark_bell *bell;            /* device address of the mapped bell */
	unsigned long long *trace;        /* [n_tasks][2] start, end (%globaltimer ns), or NULL */
	void *dma;                        /* this GPU's DMA request ring (dma/), or NULL */
	void *dma_prod;                   /* its device producer state (struct dma_dev_prod, this GPU's
					   * memory: tickets and a cached tail), or NULL */
	int n_sms;                        /* CTAs of the grid = SMs the schedule was made for */
	int gpu;
	uint32_t *peer_counters[ARK_MAX_GPUS]; /* every GPU's counter array (peer mapping), NULL without */
	uint32_t ctr_base;                /* initial value of ARK_CTR_DONE and of the model's counters */
	/* generation (a model with a token state): */
	uint64_t token_off;               /* arena offset of the token state (int32), UINT64_MAX: none */
	const int32_t *gen_prompt;        /* [gen_cap] prompt ids, device memory */
	int32_t *gen_tokens;              /* [gen_cap] the token of every step, mapped host memory */
	uint32_t gen_cap;                 /* most steps of one generation */
};


#endif
