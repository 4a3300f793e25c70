// loop_probe.h: the protocol's costs. Hand-made schedules run by the loop kernel itself (templates/ark_loop.cuh, through the
// runtime's session), timed from the host per iteration, for the protocol's costs: empty iterations
// (the doorbell round trip), tasks that do nothing with and without their signal (dispatch), a chain
// of tasks alternating between two SMs, each waiting for the one before (signal -> wait hop), small
// copy tasks each waiting for the one before it on its SM (a real tile's path: waits, op params,
// loads, stores, signal), and levels of grid barriers (--sync barrier); and what the one-kernel-per-op
// backends pay (--backend streams|graph|dynamic): a launch and an event issued by the host, the
// gap between dependent kernels of a graph and what an event adds to it, a synchronise. Shared by bench/calibrate.cu
// (the table's proto lines) and bench/loop_probe.cu (the figures alone, in seconds). Include after
// ark_loop.cuh, with g_sms set and CK defined.
#ifndef ARK_BENCH_LOOP_PROBE_H
#define ARK_BENCH_LOOP_PROBE_H

static ark_opp opp_base(int kind, int dt)
{
	ark_opp p;
	memset(&p, 0, sizeof p);
	p.kind = (uint16_t)kind, p.dtype = (uint8_t)dt, p.act = ARK_ACT_NONE, p.splits = 1, p.peer = -1;
	return p;
}

static ark_task task(int tmpl, int64_t m0, int64_t m1, int64_t n0, int64_t n1, int64_t k0, int64_t k1)
{
	ark_task t;
	memset(&t, 0, sizeof t);
	t.tmpl = (uint8_t)tmpl, t.signal = -1, t.op = ARK_TASK_NO_OP;
	t.m0 = (uint32_t)m0, t.m1 = (uint32_t)m1, t.n0 = (uint32_t)n0, t.n1 = (uint32_t)n1;
	t.k0 = (uint32_t)k0, t.k1 = (uint32_t)k1;
	return t;
}

__global__ void __launch_bounds__(ARK_THREADS, 1) calib_loop(const __grid_constant__ struct ark_kargs a)
{
	ark_loop_body(a);
}

static int calib_loop_launch(int gpu, const struct ark_kargs *a, void *stream)
{
	(void)gpu;
	void *args[] = {(void *)a};
	return (int)cudaLaunchCooperativeKernel((const void *)calib_loop, dim3(a->n_sms), dim3(ARK_THREADS), args,
						(size_t)ARK_SMEM_BYTES, (cudaStream_t)stream);
}

/* A schedule of tasks that do nothing but wait and signal. */
struct probe {
	std::vector<ark_task> tasks;
	std::vector<uint32_t> begin;
	std::vector<ark_wait> waits;
	int counters = 0;
	uint64_t arena_bytes = 256;
	ark_opp opp = opp_base(ARK_OP_COPY, ARK_FP32);
	ark_model m;

	const ark_model &model(const char *name)
	{
		memset(&m, 0, sizeof m);
		m.name = name, m.source = "bench/calibrate.cu", m.options = "hand-made probe";
		m.gpus = 1, m.sms = g_sms, m.threads = ARK_THREADS, m.smem_bytes = ARK_SMEM_BYTES;
		m.tables[0].arena_bytes = arena_bytes;
		m.tables[0].n_tasks = (int)tasks.size(), m.tables[0].tasks = tasks.data();
		m.tables[0].sm_begin = begin.data();
		m.tables[0].n_waits = (int)waits.size(), m.tables[0].waits = waits.data();
		m.tables[0].n_opp = 1, m.tables[0].opp = &opp;
		m.tables[0].n_counters = counters, m.tables[0].n_done = (uint32_t)g_sms;
		m.launch = calib_loop_launch, m.kernel = (const void *)calib_loop;
		return m;
	}
};

static ark_task nop_task(int signal, uint32_t wait0, uint16_t n_wait, int tmpl = ARK_T_NOP)
{
	ark_task t = task(tmpl, 0, 0, 0, 0, 0, 0);
	t.signal = signal, t.wait0 = wait0, t.n_wait = n_wait;
	return t;
}

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

/* Median host time of n iterations (flags: ARK_RUN_EMPTY or 0) after 100 of warm-up, us. */
static double iterations(ark_session *s, int n, unsigned flags)
{
	std::vector<double> t;
	for (int i = 0; i < 100 + n; i++) {
		const double t0 = now_us();
		if (ark_session_run_ex(s, flags)) {
			fprintf(stderr, "calibrate: probe iteration: %s\n", ark_last_error());
			exit(1);
		}
		if (i >= 100)
			t.push_back(now_us() - t0);
	}
	std::sort(t.begin(), t.end());
	return t[t.size() / 2];
}

/* Runs a probe; *empty (when not NULL): the median empty iteration of the same session. */
static double run_probe(probe &p, const char *name, double *empty)
{
	ark_session *s;
	if (ark_session_open(&s, &p.model(name), NULL)) {
		fprintf(stderr, "calibrate: probe %s: %s\n", name, ark_last_error());
		exit(1);
	}
	const double us = iterations(s, 2000, 0);
	if (empty)
		*empty = iterations(s, 2000, ARK_RUN_EMPTY);
	ark_session_close(s);
	return us;
}

/* The protocol's figures, us. */
struct protocol {
	double empty;     /* an empty iteration: the doorbell round trip */
	double task;      /* a task that does nothing but signal, through the loop */
	double task_bare; /* the same without its signal */
	double hop;       /* more per task when it waits for a task of another SM */
	double copy;      /* a copy of COPY_BYTES waiting for the task before it on its SM */
	double barrier;   /* a grid barrier, more than a task */
};
#define COPY_BYTES 4096

static void measure_protocol(struct protocol *r)
{
	const int L = 256, H = 256, B = 64, C = 64;
	probe nop, bare, chain, bar, copy;
	/* L tasks per SM, each signalling its SM's counter (or nothing), no waits */
	for (int s = 0; s < g_sms; s++) {
		nop.begin.push_back((uint32_t)nop.tasks.size());
		bare.begin.push_back((uint32_t)bare.tasks.size());
		for (int i = 0; i < L; i++) {
			nop.tasks.push_back(nop_task(ARK_CTR(s), 0, 0));
			bare.tasks.push_back(nop_task(-1, 0, 0));
		}
	}
	nop.begin.push_back((uint32_t)nop.tasks.size());
	bare.begin.push_back((uint32_t)bare.tasks.size());
	nop.counters = g_sms;
	/* H tasks alternating between SM 0 and SM 1, task j waiting for task j - 1 */
	for (int s = 0; s < g_sms; s++) {
		chain.begin.push_back((uint32_t)chain.tasks.size());
		for (int j = s; s < 2 && j < H; j += 2) {
			if (j > 0)
				chain.waits.push_back({(uint32_t)ARK_CTR(j - 1), 1, 1, 0});
			chain.tasks.push_back(nop_task(ARK_CTR(j), j > 0 ? (uint32_t)chain.waits.size() - 1 : 0, j > 0));
		}
	}
	chain.begin.push_back((uint32_t)chain.tasks.size());
	chain.counters = H;
	/* B grid barriers: every SM signals level l's counter, then waits for all of them */
	for (int l = 0; l < B; l++)
		bar.waits.push_back({(uint32_t)ARK_CTR(l), (uint32_t)g_sms, (uint32_t)g_sms, 0});
	for (int s = 0; s < g_sms; s++) {
		bar.begin.push_back((uint32_t)bar.tasks.size());
		for (int l = 0; l < B; l++)
			bar.tasks.push_back(nop_task(ARK_CTR(l), (uint32_t)l, 1, ARK_T_BARRIER));
	}
	bar.begin.push_back((uint32_t)bar.tasks.size());
	bar.counters = B;
	/* C copies per SM of COPY_BYTES each from one source to the SM's own destination, each waiting
	 * for the one before it on its SM (its counter counts one per task) */
	const uint32_t n = COPY_BYTES / 4;
	copy.arena_bytes = 2ull * COPY_BYTES * g_sms;
	copy.opp.in[0] = 0, copy.opp.out = (uint64_t)COPY_BYTES * g_sms, copy.opp.M = 1, copy.opp.N = (int64_t)n * g_sms;
	for (int s = 0; s < g_sms; s++) {
		copy.begin.push_back((uint32_t)copy.tasks.size());
		for (int i = 0; i < C; i++) {
			const uint64_t o = (uint64_t)s * n;
			ark_task t = task(ARK_T_COPY, 0, 1, o, o + n, o, o + n);
			t.signal = ARK_CTR(s);
			if (i > 0) {
				copy.waits.push_back({(uint32_t)ARK_CTR(s), (uint32_t)C, (uint32_t)i, 0});
				t.wait0 = (uint32_t)copy.waits.size() - 1, t.n_wait = 1;
			}
			copy.tasks.push_back(t);
		}
	}
	copy.begin.push_back((uint32_t)copy.tasks.size());
	copy.counters = g_sms;

	const double t_nop = run_probe(nop, "loop probe: dispatch", &r->empty);
	const double t_bare = run_probe(bare, "loop probe: dispatch without signals", NULL);
	const double t_chain = run_probe(chain, "loop probe: hops", NULL);
	const double t_bar = run_probe(bar, "loop probe: barriers", NULL);
#if ARK_TILES_FP32
	const double t_copy = run_probe(copy, "loop probe: copies", NULL);
#else /* no fp32 tiles in this build: no copy */
	const double t_copy = r->empty;
#endif
	r->task = std::max(0.0, (t_nop - r->empty) / L);
	r->task_bare = std::max(0.0, (t_bare - r->empty) / L);
	r->hop = std::max(0.0, (t_chain - r->empty) / H - r->task);
	r->barrier = std::max(0.0, (t_bar - r->empty) / B - r->task);
	r->copy = std::max(0.0, (t_copy - r->empty) / C);
	fprintf(stderr, "loop probe: empty iteration %.2f us; %d tasks per SM %.2f us, without signals %.2f us; chain of "
		"%d hops %.2f us; %d barriers %.2f us; %d copies of %d bytes per SM %.2f us\n", r->empty, L, t_nop, t_bare,
		H, t_chain, B, t_bar, C, COPY_BYTES, t_copy);
}

/* ---- the one-kernel-per-op backends' costs (codegen/streams.c's simulator) -------------------------- */

__global__ void probe_empty_kernel(void) {}

/* The costs struct part_gpu names launch_us, kernel_gap_us, event_us, event_host_us and sync_us, us. */
struct launches {
	double launch, gap, event, event_host, sync;
};

/* Median of 7 runs of f() (us). */
template <typename F> static double median7(F f)
{
	double t[7];
	for (int i = 0; i < 7; i++)
		t[i] = f();
	std::sort(t, t + 7);
	return t[3];
}

/* A graph of n empty kernels, one after the other, alternating between two streams (an event on
 * every edge) when cross is set; replayed, timed by the host around launch + synchronise. */
static double graph_chain_us(int n, bool cross)
{
	cudaStream_t s[2];
	cudaEvent_t ev;
	CK(cudaStreamCreateWithFlags(&s[0], cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&s[1], cudaStreamNonBlocking));
	CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
	cudaGraph_t g;
	cudaGraphExec_t x;
	CK(cudaStreamBeginCapture(s[0], cudaStreamCaptureModeThreadLocal));
	int at = 0;
	for (int i = 0; i < n; i++) {
		const int to = cross ? i & 1 : 0;
		if (to != at) {
			CK(cudaEventRecord(ev, s[at]));
			CK(cudaStreamWaitEvent(s[to], ev, 0));
			at = to;
		}
		probe_empty_kernel<<<1, 32, 0, s[at]>>>();
	}
	if (at != 0) {
		CK(cudaEventRecord(ev, s[at]));
		CK(cudaStreamWaitEvent(s[0], ev, 0));
	}
	CK(cudaStreamEndCapture(s[0], &g));
	CK(cudaGraphInstantiate(&x, g, 0));
	for (int i = 0; i < 10; i++)
		CK(cudaGraphLaunch(x, s[0]));
	CK(cudaStreamSynchronize(s[0]));
	const double us = median7([&] {
		const double t0 = now_us();
		CK(cudaGraphLaunch(x, s[0]));
		CK(cudaStreamSynchronize(s[0]));
		return now_us() - t0;
	});
	CK(cudaGraphExecDestroy(x));
	CK(cudaGraphDestroy(g));
	CK(cudaEventDestroy(ev));
	CK(cudaStreamDestroy(s[0]));
	CK(cudaStreamDestroy(s[1]));
	return us;
}

static void measure_launches(struct launches *r)
{
	const int N = 2000, G = 1000;
	cudaStream_t s[2];
	cudaEvent_t ev;
	CK(cudaStreamCreateWithFlags(&s[0], cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&s[1], cudaStreamNonBlocking));
	CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
	for (int i = 0; i < 100; i++)
		probe_empty_kernel<<<1, 32, 0, s[0]>>>();
	CK(cudaStreamSynchronize(s[0]));
	/* host: N launches issued back to back (the GPU keeps up with empty kernels) */
	r->launch = median7([&] {
		const double t0 = now_us();
		for (int i = 0; i < N; i++)
			probe_empty_kernel<<<1, 32, 0, s[0]>>>();
		const double t = now_us() - t0;
		CK(cudaStreamSynchronize(s[0]));
		return t / N;
	});
	/* host: a record and a wait issued (between two streams, no kernels) */
	r->event_host = median7([&] {
		const double t0 = now_us();
		for (int i = 0; i < N; i++) {
			CK(cudaEventRecord(ev, s[i & 1]));
			CK(cudaStreamWaitEvent(s[(i + 1) & 1], ev, 0));
		}
		const double t = now_us() - t0;
		CK(cudaDeviceSynchronize());
		return t / N;
	});
	/* host: one launch, then the synchronise that sees it end, less the launch */
	r->sync = std::max(0.0, median7([&] {
		double t[101];
		for (int i = 0; i < 101; i++) {
			const double t0 = now_us();
			probe_empty_kernel<<<1, 32, 0, s[0]>>>();
			CK(cudaStreamSynchronize(s[0]));
			t[i] = now_us() - t0;
		}
		std::sort(t, t + 101);
		return t[50];
	}) - r->launch);
	/* device: a graph's chain of G kernels, on one stream and alternating between two */
	const double one = graph_chain_us(G, false), two = graph_chain_us(G, true);
	r->gap = one / G;
	r->event = std::max(0.0, (two - one) / G);
	fprintf(stderr, "loop probe: %d launches issued %.2f us each; a record + wait issued %.2f us; launch + "
		"synchronise %.2f us; graph of %d kernels in a chain %.1f us, alternating streams %.1f us\n", N, r->launch,
		r->event_host, r->sync + r->launch, G, one, two);
	CK(cudaEventDestroy(ev));
	CK(cudaStreamDestroy(s[0]));
	CK(cudaStreamDestroy(s[1]));
}

#endif
