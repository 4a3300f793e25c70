/* calib.c: calibration tables (calib.h): the parser with located errors, the model each table's
 * points make, the built-in tables, and the analytic model the tables fall back to.
 *
 * The model, per key (template, dtype, layout, regime), for each column (alone, busy):
 *  - a fit t = c0 + c1 * bytes + c2 * flops (fixed cost, 1 / bandwidth, 1 / rate; bytes and flops of
 *    the tile as tile.c counts them), c >= 0, minimising the relative error over the key's points.
 *    With fewer than 3 shapes it is the analytic model scaled to the points instead (the ratio's
 *    geometric mean). A sum of nonnegative multiples of work that grows with m, n and k grows with
 *    them too, so the fit is monotone; it carries the shape's trend where no point was measured.
 *  - a grid over the distinct m, n and k of the points, log t at every corner: the measured value
 *    (the geometric mean of repeated ones), or the fit's where the points leave a corner out. A
 *    tile's time is the multilinear interpolation of log t in (log m, log n, log k): exact at the
 *    measured points, monotone along an axis whose points are, and no worse than a straight line
 *    between neighbours on a log-log plot (tile times are close to power laws of the shape).
 *  - beyond the grid (a K larger than any measured), the value at the nearest edge times the fit's
 *    ratio between the tile and that edge: the measured level, the fitted trend. A matmul of odd
 *    rows below its least K measured: the aligned tile's time plus the odd rows' extra at that K
 *    in proportion to K, where that is less (calib_lookup).
 * Interpolation alone would need a full grid and extrapolate badly; the fit alone misses how the
 * templates' efficiency changes with the tile's shape (k-lanes, sub-tiles, waves of loads). */
#include "calib.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>

#include "ark_model.h"
#include "ark_task.h"
#include "diag.h"
#include "graph.h"

const char *const calib_layout_name[CALIB_L__COUNT] = {"-", "kn", "nk", "kn-odd", "nk-odd", "same", "bcast"};
const char *const calib_proto_name[CALIB_P__COUNT] = {
#define X(name) #name,
	CALIB_PROTO_LIST(X)
#undef X
};

/* The templates a table may measure, as it spells them. */
static const char *const tmpl_names[ARK_T__COUNT] = {
	[ARK_T_MATMUL] = "matmul", [ARK_T_MATMUL_PARTIAL] = "matmul_partial", [ARK_T_REDUCE] = "reduce",
	[ARK_T_ELEMENTWISE] = "elementwise", [ARK_T_EW_CHAIN] = "ew_chain", [ARK_T_SOFTMAX] = "softmax",
	[ARK_T_LAYERNORM] = "layernorm", [ARK_T_RMSNORM] = "rmsnorm", [ARK_T_COPY] = "copy",
	[ARK_T_REDUCE_MEAN] = "reduce_mean", [ARK_T_L2NORM] = "l2norm",
	[ARK_T_EMBEDDING] = "embedding", [ARK_T_STRIDED] = "strided",
};

const char *calib_tmpl_name(int tmpl) { return tmpl >= 0 && tmpl < ARK_T__COUNT ? tmpl_names[tmpl] : NULL; }

static int is_matmul(int tmpl) { return tmpl == ARK_T_MATMUL || tmpl == ARK_T_MATMUL_PARTIAL; }

/* Whether a layout belongs to a template. */
static int layout_ok(int tmpl, int layout)
{
	if (is_matmul(tmpl))
		return layout >= CALIB_L_KN && layout <= CALIB_L_NK_ODD;
	if (tmpl == ARK_T_ELEMENTWISE)
		return layout == CALIB_L_SAME || layout == CALIB_L_BCAST;
	return layout == CALIB_L_NONE;
}

/* 0: streaming (rows <= CALIB_SMALL_M), 1: the paths for more rows; one regime for other templates. */
static int regime(const struct calib_query *q) { return is_matmul(q->tmpl) && q->m > CALIB_SMALL_M; }

/* ---- work and the analytic model ------------------------------------------------------------ */

/* The tile's arithmetic and device-memory bytes as tile.c counts them; lat: its latency floor (us);
 * tc: on tensor cores. */
static void work(const struct calib_query *q, double *flops, double *bytes, double *lat, int *tc)
{
	double m = q->m, n = q->n, k = q->k, es = ark_dtype_size(q->dtype);
	*flops = *bytes = *lat = 0;
	*tc = 0;
	switch (q->tmpl) {
	case ARK_T_MATMUL:
	case ARK_T_MATMUL_PARTIAL:
		*flops = 2 * m * n * k;
		*bytes = es * (m * k + k * n) + (q->tmpl == ARK_T_MATMUL ? es : 4) * m * n;
		*tc = es == 2;
		break;
	case ARK_T_REDUCE:
		*flops = k * m * n;
		*bytes = (4 * k + es) * m * n;
		break;
	case ARK_T_ELEMENTWISE:
		*flops = 8 * m * n;
		*bytes = (k + 1) * es * m * n;
		break;
	case ARK_T_EW_CHAIN:
		*flops = k * n;
		*bytes = 2 * es * n;
		*lat = ARK_CHAIN_STEP_US * k * ceil(n / (256 * 16 / es));
		break;
	case ARK_T_SOFTMAX:
	case ARK_T_LAYERNORM:
	case ARK_T_RMSNORM:
	case ARK_T_L2NORM:
		*flops = 6 * m * n;
		*bytes = 2 * es * m * n;
		break;
	case ARK_T_REDUCE_MEAN: /* m x n outputs, each the mean of k values (a mask's bytes left out) */
		*flops = 2 * m * n * k;
		*bytes = es * m * n * (k + 1);
		break;
	case ARK_T_COPY:
		*bytes = 2 * es * n;
		break;
	}
}

void calib_analytic(const struct part_gpu *gpu, const struct calib_query *q, double us[2])
{
	double fl, by, lat;
	int tc;
	work(q, &fl, &by, &lat, &tc);
	double comp = fl / ((tc ? gpu->tc_tflops : gpu->fp32_tflops) / gpu->sms * 1e6);
	double share = fmin(gpu->sm_gbps, gpu->dram_gbps / gpu->sms);
	us[CALIB_ALONE] = fmax(fmax(comp, lat), by / (gpu->sm_gbps * 1e3));
	us[CALIB_BUSY] = fmax(fmax(comp, lat), by / (share * 1e3));
}

/* ---- the model of one key -------------------------------------------------------------------- */

struct calib_key {
	int tmpl, dtype, layout, reg;
	int na[3];
	double *ax[3];        /* distinct log m, log n, log k, ascending */
	double *grid[2];      /* per column: log us at corner (i, j, l), i major */
	int scaled[2];        /* 1: the fit is the analytic model times scale */
	double c[2][3], scale[2];
	struct part_gpu gpu;  /* the analytic model's figures for the table's GPU */
};

static double fit_us(const struct calib_key *k, int col, const struct calib_query *q)
{
	double fl, by, lat, us[2];
	int tc;
	if (k->scaled[col]) {
		calib_analytic(&k->gpu, q, us);
		return k->scale[col] * us[col];
	}
	work(q, &fl, &by, &lat, &tc);
	return k->c[col][0] + k->c[col][1] * by + k->c[col][2] * fl;
}

/* Solves the n x n system a x = b (n <= 3) by Gaussian elimination with pivoting; -1 if singular. */
static int solve(int n, double a[3][3], double b[3], double x[3])
{
	for (int c = 0; c < n; c++) {
		int p = c;
		for (int r = c + 1; r < n; r++)
			if (fabs(a[r][c]) > fabs(a[p][c]))
				p = r;
		if (fabs(a[p][c]) < 1e-12)
			return -1;
		for (int j = 0; j < n; j++) {
			double t = a[c][j];
			a[c][j] = a[p][j], a[p][j] = t;
		}
		double t = b[c];
		b[c] = b[p], b[p] = t;
		for (int r = c + 1; r < n; r++) {
			double f = a[r][c] / a[c][c];
			for (int j = c; j < n; j++)
				a[r][j] -= f * a[c][j];
			b[r] -= f * b[c];
		}
	}
	for (int c = n - 1; c >= 0; c--) {
		double s = b[c];
		for (int j = c + 1; j < n; j++)
			s -= a[c][j] * x[j];
		x[c] = s / a[c][c];
	}
	return 0;
}

/* Fits column col of the key to its points (pts, np of them): the nonnegative least squares of the
 * relative error, by trying every subset of the three terms (a negative coefficient drops its term),
 * the smallest residual winning. Features are scaled to their largest value first. */
static void fit(struct calib_key *k, int col, const struct calib_point *const *pts, int np, int shapes)
{
	double best = INFINITY;
	k->scaled[col] = 1;
	if (shapes >= 3) {
		double x[np][3], scale[3] = {0, 0, 0};
		for (int i = 0; i < np; i++) {
			double fl, by, lat;
			int tc;
			work(&pts[i]->q, &fl, &by, &lat, &tc);
			x[i][0] = 1, x[i][1] = by, x[i][2] = fl;
			for (int j = 0; j < 3; j++)
				scale[j] = fmax(scale[j], x[i][j]);
		}
		for (int mask = 1; mask < 8; mask++) {
			int idx[3], n = 0;
			for (int j = 0; j < 3; j++)
				if (mask >> j & 1 && scale[j] > 0)
					idx[n++] = j;
			if (n != __builtin_popcount(mask))
				continue;
			double a[3][3] = {{0}}, b[3] = {0}, c[3] = {0};
			for (int i = 0; i < np; i++) {
				double w = 1 / pts[i]->us[col];
				for (int r = 0; r < n; r++) {
					b[r] += x[i][idx[r]] / scale[idx[r]] * w;
					for (int s = 0; s < n; s++)
						a[r][s] += x[i][idx[r]] / scale[idx[r]] * x[i][idx[s]] / scale[idx[s]] * w * w;
				}
			}
			if (solve(n, a, b, c) < 0)
				continue;
			int neg = 0;
			for (int r = 0; r < n; r++)
				neg |= c[r] < 0;
			if (neg)
				continue;
			double res = 0;
			for (int i = 0; i < np; i++) {
				double p = 0;
				for (int r = 0; r < n; r++)
					p += c[r] * x[i][idx[r]] / scale[idx[r]];
				res += (p / pts[i]->us[col] - 1) * (p / pts[i]->us[col] - 1);
			}
			if (res < best - 1e-12) {
				best = res;
				k->scaled[col] = 0;
				memset(k->c[col], 0, sizeof k->c[col]);
				for (int r = 0; r < n; r++)
					k->c[col][idx[r]] = c[r] / scale[idx[r]];
			}
		}
	}
	if (k->scaled[col]) {
		double s = 0, us[2];
		for (int i = 0; i < np; i++) {
			calib_analytic(&k->gpu, &pts[i]->q, us);
			s += log(pts[i]->us[col] / fmax(us[col], 1e-9));
		}
		k->scale[col] = exp(s / np);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int axis_index(const struct calib_key *k, int d, double lv)
{
	for (int i = 0; i < k->na[d]; i++)
		if (k->ax[d][i] == lv)
			return i;
	return -1;
}

static double dim(const struct calib_query *q, int d) { return d == 0 ? q->m : d == 1 ? q->n : q->k; }

/* Builds key k from its points: axes, fits, grid. */
static void key_build(struct calib_key *k, const struct calib_point *const *pts, int np)
{
	for (int d = 0; d < 3; d++) {
		double *v = xmalloc((size_t)np * sizeof *v);
		int n = 0;
		for (int i = 0; i < np; i++)
			v[n++] = log(dim(&pts[i]->q, d));
		qsort(v, (size_t)n, sizeof *v, cmp_double);
		int u = 0;
		for (int i = 0; i < n; i++)
			if (u == 0 || v[i] != v[u - 1])
				v[u++] = v[i];
		k->ax[d] = v, k->na[d] = u;
	}
	size_t cells = (size_t)k->na[0] * k->na[1] * k->na[2];
	int *cnt = xcalloc(cells, sizeof *cnt), shapes = 0;
	for (int col = 0; col < 2; col++)
		k->grid[col] = xcalloc(cells, sizeof *k->grid[col]);
	for (int i = 0; i < np; i++) {
		size_t c = ((size_t)axis_index(k, 0, log(pts[i]->q.m)) * k->na[1] + axis_index(k, 1, log(pts[i]->q.n))) *
				   k->na[2] + axis_index(k, 2, log(pts[i]->q.k));
		shapes += cnt[c]++ == 0;
		for (int col = 0; col < 2; col++)
			k->grid[col][c] += log(pts[i]->us[col]);
	}
	for (int col = 0; col < 2; col++)
		fit(k, col, pts, np, shapes);
	for (size_t c = 0; c < cells; c++) {
		struct calib_query q = {k->tmpl, k->dtype, k->layout, exp(k->ax[0][c / ((size_t)k->na[1] * k->na[2])]),
					exp(k->ax[1][c / k->na[2] % k->na[1]]), exp(k->ax[2][c % k->na[2]])};
		for (int col = 0; col < 2; col++)
			k->grid[col][c] = cnt[c] ? k->grid[col][c] / cnt[c] : log(fmax(fit_us(k, col, &q), 1e-6));
	}
	free(cnt);
}

/* Multilinear interpolation of log t over the grid at q clamped into it; *qc: the clamped q. */
static double grid_us(const struct calib_key *k, int col, const struct calib_query *q, struct calib_query *qc)
{
	int i0[3];
	double f[3];
	*qc = *q;
	for (int d = 0; d < 3; d++) {
		double x = log(dim(q, d)), *a = k->ax[d];
		int n = k->na[d], i = 0;
		if (x <= a[0])
			x = a[0];
		else if (x >= a[n - 1])
			x = a[n - 1], i = n - 1;
		else
			while (i + 1 < n && a[i + 1] < x)
				i++;
		if (i == n - 1 && n > 1)
			i = n - 2;
		i0[d] = i;
		f[d] = n > 1 ? (x - a[i]) / (a[i + 1] - a[i]) : 0;
		double v = exp(x);
		*(d == 0 ? &qc->m : d == 1 ? &qc->n : &qc->k) = v;
	}
	double lt = 0;
	for (int corner = 0; corner < 8; corner++) {
		double w = 1;
		size_t c = 0;
		for (int d = 0; d < 3; d++) {
			int up = corner >> d & 1;
			if (up && k->na[d] == 1) {
				w = 0;
				break;
			}
			w *= up ? f[d] : 1 - f[d];
			c = c * (size_t)k->na[d] + (size_t)(i0[d] + up);
		}
		if (w > 0)
			lt += w * k->grid[col][c];
	}
	return exp(lt);
}

static const struct calib_key *find_key(const struct calib_table *t, const struct calib_query *q)
{
	for (int i = 0; i < t->n_keys; i++)
		if (t->key[i].tmpl == q->tmpl && t->key[i].dtype == q->dtype && t->key[i].layout == q->layout &&
		    t->key[i].reg == regime(q))
			return &t->key[i];
	return NULL;
}

/* The key's grid with the fit's trend beyond it (the file's header comment). */
static void key_us(const struct calib_key *k, const struct calib_query *q, double us[2])
{
	for (int col = 0; col < 2; col++) {
		struct calib_query qc;
		double g = grid_us(k, col, q, &qc), a = fit_us(k, col, q), b = fit_us(k, col, &qc);
		us[col] = a > 0 && b > 0 ? g * a / b : g;
	}
}

int calib_lookup(const struct calib_table *t, const struct calib_query *q, double us[2])
{
	const struct calib_key *k = find_key(t, q);
	if (!k || !(q->m > 0 && q->n > 0 && q->k > 0))
		return -1;
	key_us(k, q, us);
	/* A matmul of rows that are not 16-byte aligned below the least K measured: the aligned tile's
	 * time plus the realignment the odd rows cost at that K, in proportion to K. The fit's ratio
	 * alone keeps nearly all of the odd tile's time there as a fixed cost (its points are 3-4x the
	 * aligned ones at K 255, in copies that grow with K), and priced a 64 x 16 x 45 bf16 tile at
	 * 17 us where the model's tasks took ~7 (bench/NOTES.md). */
	const int odd = q->layout == CALIB_L_KN_ODD || q->layout == CALIB_L_NK_ODD;
	const double k0 = exp(k->ax[2][0]);
	struct calib_query qa = *q;
	qa.layout = q->layout == CALIB_L_KN_ODD ? CALIB_L_KN : CALIB_L_NK;
	const struct calib_key *ka = odd && q->k < k0 ? find_key(t, &qa) : NULL;
	if (ka) {
		struct calib_query q0 = *q, qa0 = qa;
		q0.k = qa0.k = k0;
		double a[2], o0[2], a0[2];
		key_us(ka, &qa, a);
		key_us(k, &q0, o0);
		key_us(ka, &qa0, a0);
		for (int col = 0; col < 2; col++) {
			const double extra = o0[col] > a0[col] ? (o0[col] - a0[col]) * q->k / k0 : 0;
			if (a[col] + extra < us[col])
				us[col] = a[col] + extra;
		}
	}
	if (us[CALIB_BUSY] < us[CALIB_ALONE]) /* sharing the memory never makes a tile faster */
		us[CALIB_BUSY] = us[CALIB_ALONE];
	return 0;
}

void calib_gpu(const struct calib_table *t, struct part_gpu *g)
{
	double *f[CALIB_P__COUNT] = {
#define X(name) &g->name,
		CALIB_PROTO_LIST(X)
#undef X
	};
	for (int i = 0; i < CALIB_P__COUNT; i++)
		if (!isnan(t->proto[i]))
			*f[i] = t->proto[i];
	g->launch_measured = !isnan(t->proto[CALIB_P_launch_us]) && !isnan(t->proto[CALIB_P_kernel_gap_us]) &&
			     !isnan(t->proto[CALIB_P_event_us]) && !isnan(t->proto[CALIB_P_event_host_us]) &&
			     !isnan(t->proto[CALIB_P_sync_us]);
}

/* ---- the parser ------------------------------------------------------------------------------ */

struct parse {
	const char *file;
	int line, errors;
	struct calib_table *t;
	int cap;
	int seen_line[5]; /* gpu, sms, threads, date, source: the line that set it */
};

enum { H_GPU, H_SMS, H_THREADS, H_DATE, H_SOURCE, H__COUNT };
static const char *const header_name[H__COUNT] = {"gpu", "sms", "threads", "date", "source"};

#define MAX_TOK 12

static int lookup_name(const char *s, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (names[i] && !strcmp(s, names[i]))
			return i;
	return -1;
}

/* A number > 0 (>= 0 when zero_ok), finite; -1 after an error naming what it was. */
static int number(struct parse *p, const char *tok, const char *what, int zero_ok, double *v)
{
	char *end;
	errno = 0;
	*v = strtod(tok, &end);
	if (errno || end == tok || *end || !isfinite(*v) || *v < 0 || (!zero_ok && *v == 0)) {
		diag_error(p->file, p->line, "%s must be a number %s 0, not '%s'", what, zero_ok ? ">=" : ">", tok);
		p->errors++;
		return -1;
	}
	return 0;
}

static int integer(struct parse *p, const char *tok, const char *what, int *v)
{
	double d;
	if (number(p, tok, what, 0, &d) < 0)
		return -1;
	if (d != floor(d) || d > 1 << 20) {
		diag_error(p->file, p->line, "%s must be a whole number up to %d, not '%s'", what, 1 << 20, tok);
		p->errors++;
		return -1;
	}
	*v = (int)d;
	return 0;
}

static void error(struct parse *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void error(struct parse *p, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	diag_error(p->file, p->line, "%s", msg);
	p->errors++;
}

/* "gpu NAME...", "sms N", ...: the rest of the line after the keyword is rest. */
static void header(struct parse *p, int h, char **tok, int n, const char *rest)
{
	struct calib_table *t = p->t;
	if (p->seen_line[h]) {
		error(p, "'%s' given twice (first at line %d)", header_name[h], p->seen_line[h]);
		return;
	}
	if (n < 2 || (h != H_GPU && n > 2)) {
		error(p, "'%s' takes %s", header_name[h], h == H_GPU ? "the GPU's name" : "one value");
		return;
	}
	p->seen_line[h] = p->line;
	switch (h) {
	case H_GPU:
		t->gpu = xstrdup(rest);
		break;
	case H_SMS:
		integer(p, tok[1], "sms", &t->sms);
		break;
	case H_THREADS:
		integer(p, tok[1], "threads", &t->threads);
		break;
	case H_DATE:
		t->date = xstrdup(tok[1]);
		break;
	case H_SOURCE:
		if (!strcmp(tok[1], "measured") || !strcmp(tok[1], "analytic"))
			t->measured = !strcmp(tok[1], "measured");
		else
			error(p, "source is 'measured' or 'analytic', not '%s'", tok[1]);
		break;
	}
}

static void proto(struct parse *p, char **tok, int n)
{
	if (n != 3) {
		error(p, "'proto' takes a name and a value");
		return;
	}
	int i = lookup_name(tok[1], calib_proto_name, CALIB_P__COUNT);
	if (i < 0) {
		error(p, "unknown protocol cost '%s' (known: %s)", tok[1],
		      "task_us, hop_us, doorbell_us, barrier_us, dram_gbps, sm_gbps, launch_us, kernel_gap_us, event_us, "
		      "event_host_us, sync_us");
		return;
	}
	if (!isnan(p->t->proto[i])) {
		error(p, "protocol cost '%s' given twice", tok[1]);
		return;
	}
	int rate = i == CALIB_P_dram_gbps || i == CALIB_P_sm_gbps;
	double v;
	if (number(p, tok[2], tok[1], !rate, &v) == 0)
		p->t->proto[i] = v;
}

static void point(struct parse *p, int tmpl, char **tok, int n)
{
	if (n != 8) {
		error(p, "a point has 8 fields (template dtype layout m n k alone_us busy_us), this line %d", n);
		return;
	}
	struct calib_point pt = {.line = p->line};
	pt.q.tmpl = tmpl;
	pt.q.dtype = lookup_name(tok[1], dtype_name, ARK_DTYPE__COUNT);
	if (pt.q.dtype < 0) {
		error(p, "unknown dtype '%s' (known: fp16, bf16, fp32)", tok[1]);
		return;
	}
	pt.q.layout = lookup_name(tok[2], calib_layout_name, CALIB_L__COUNT);
	if (pt.q.layout < 0 || !layout_ok(tmpl, pt.q.layout)) {
		error(p, "layout '%s' of %s is not one of %s", tok[2], tok[0],
		      is_matmul(tmpl) ? "kn, nk, kn-odd, nk-odd" : tmpl == ARK_T_ELEMENTWISE ? "same, bcast" : "'-'");
		return;
	}
	if (number(p, tok[3], "m", 0, &pt.q.m) < 0 || number(p, tok[4], "n", 0, &pt.q.n) < 0 ||
	    number(p, tok[5], "k", 0, &pt.q.k) < 0 || number(p, tok[6], "alone_us", 0, &pt.us[CALIB_ALONE]) < 0 ||
	    number(p, tok[7], "busy_us", 0, &pt.us[CALIB_BUSY]) < 0)
		return;
	struct calib_table *t = p->t;
	if (t->n_points == p->cap) {
		p->cap = p->cap ? 2 * p->cap : 256;
		t->pt = xrealloc(t->pt, (size_t)p->cap * sizeof *t->pt);
	}
	t->pt[t->n_points++] = pt;
}

static void parse_line(struct parse *p, char *s)
{
	char *hash = strchr(s, '#'), *tok[MAX_TOK];
	if (hash)
		*hash = 0;
	char *line = xstrdup(s); /* the line as written, for the gpu's name with its spaces */
	int n = 0;
	for (char *q = s; *q && n < MAX_TOK;) {
		while (isspace((unsigned char)*q))
			q++;
		if (!*q)
			break;
		tok[n++] = q;
		while (*q && !isspace((unsigned char)*q))
			q++;
		if (*q)
			*q++ = 0;
	}
	int h = n ? lookup_name(tok[0], header_name, H__COUNT) : -1;
	int tmpl = n ? lookup_name(tok[0], tmpl_names, ARK_T__COUNT) : -1;
	char *rest = n > 1 ? line + (tok[1] - s) : NULL;
	for (size_t len = rest ? strlen(rest) : 0; len && isspace((unsigned char)rest[len - 1]);)
		rest[--len] = 0;
	if (n == 0)
		;
	else if (n == MAX_TOK)
		error(p, "too many fields");
	else if (h >= 0)
		header(p, h, tok, n, rest);
	else if (!strcmp(tok[0], "proto"))
		proto(p, tok, n);
	else if (tmpl >= 0)
		point(p, tmpl, tok, n);
	else
		error(p, "unknown item '%s': expected gpu, sms, threads, date, source, proto or a template (matmul, "
		      "matmul_partial, reduce, elementwise, ew_chain, softmax, layernorm, rmsnorm, copy, reduce_mean, l2norm)",
		      tok[0]);
	free(line);
}

/* Groups the points by key and builds each key's model. */
static void build_keys(struct calib_table *t)
{
	const struct calib_point **pts = xmalloc((size_t)(t->n_points ? t->n_points : 1) * sizeof *pts);
	t->key = xcalloc((size_t)(t->n_points ? t->n_points : 1), sizeof *t->key);
	struct part_gpu gpu;
	part_gpu_default(&gpu, t->sms);
	calib_gpu(t, &gpu);
	for (int i = 0; i < t->n_points; i++) {
		const struct calib_query *q = &t->pt[i].q;
		int seen = 0;
		for (int j = 0; j < i && !seen; j++)
			seen = t->pt[j].q.tmpl == q->tmpl && t->pt[j].q.dtype == q->dtype && t->pt[j].q.layout == q->layout &&
			       regime(&t->pt[j].q) == regime(q);
		if (seen)
			continue;
		int np = 0;
		for (int j = i; j < t->n_points; j++)
			if (t->pt[j].q.tmpl == q->tmpl && t->pt[j].q.dtype == q->dtype && t->pt[j].q.layout == q->layout &&
			    regime(&t->pt[j].q) == regime(q))
				pts[np++] = &t->pt[j];
		struct calib_key *k = &t->key[t->n_keys++];
		*k = (struct calib_key){.tmpl = q->tmpl, .dtype = q->dtype, .layout = q->layout, .reg = regime(q), .gpu = gpu};
		key_build(k, pts, np);
	}
	free(pts);
}

struct calib_table *calib_parse(const char *file, const char *text)
{
	struct calib_table *t = xcalloc(1, sizeof *t);
	struct parse p = {.file = file, .t = t};
	t->name = xstrdup(file);
	for (int i = 0; i < CALIB_P__COUNT; i++)
		t->proto[i] = NAN;
	char *buf = xstrdup(text), *s = buf;
	while (s) {
		char *nl = strchr(s, '\n');
		if (nl)
			*nl = 0;
		p.line++;
		parse_line(&p, s);
		s = nl ? nl + 1 : NULL;
	}
	free(buf);
	for (int h = 0; h < H__COUNT; h++)
		if (!p.seen_line[h]) {
			diag_error(file, 0, "the table has no '%s' line", header_name[h]);
			p.errors++;
		}
	if (!p.errors && t->n_points == 0) {
		diag_error(file, 0, "the table has no measured point");
		p.errors++;
	}
	if (p.errors) {
		calib_free(t);
		return NULL;
	}
	build_keys(t);
	return t;
}

struct calib_table *calib_load(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		diag_error(path, 0, "cannot open calibration table: %s", strerror(errno));
		return NULL;
	}
	size_t cap = 1 << 16, n = 0, got;
	char *text = xmalloc(cap);
	while ((got = fread(text + n, 1, cap - n - 1, f)) > 0) {
		n += got;
		if (n + 1 == cap)
			text = xrealloc(text, cap *= 2);
	}
	int bad = ferror(f);
	fclose(f);
	text[n] = 0;
	struct calib_table *t = NULL;
	if (bad)
		diag_error(path, 0, "cannot read calibration table: %s", strerror(errno));
	else if (memchr(text, 0, n))
		diag_error(path, 0, "not a calibration table: the file holds a NUL byte");
	else
		t = calib_parse(path, text);
	free(text);
	return t;
}

void calib_free(struct calib_table *t)
{
	if (!t)
		return;
	for (int i = 0; i < t->n_keys; i++) {
		for (int d = 0; d < 3; d++)
			free(t->key[i].ax[d]);
		free(t->key[i].grid[0]);
		free(t->key[i].grid[1]);
	}
	free(t->key);
	free(t->pt);
	free(t->name);
	free(t->gpu);
	free(t->date);
	free(t);
}

/* ---- built-in tables ------------------------------------------------------------------------- */

/* Generated at build time from bench/calib/NAME.txt (scripts/embed-calib.sh). */
struct calib_text {
	const char *name, *text;
};
extern const struct calib_text calib_texts[];

const char *const *calib_builtin_names(void)
{
	static const char *names[16];
	int n = 0;
	for (int i = 0; calib_texts[i].name && n < 15; i++)
		names[n++] = calib_texts[i].name;
	names[n] = NULL;
	return names;
}

const struct calib_table *calib_builtin(const char *name)
{
	static struct calib_table *parsed[16];
	for (int i = 0; calib_texts[i].name && i < 16; i++) {
		if (strcmp(calib_texts[i].name, name))
			continue;
		if (!parsed[i]) {
			char file[64];
			snprintf(file, sizeof file, "bench/calib/%s.txt", name);
			parsed[i] = calib_parse(file, calib_texts[i].text);
			ARK_ASSERT(parsed[i] != NULL); /* checked when it was built in */
			free(parsed[i]->name);
			parsed[i]->name = xstrdup(name);
		}
		return parsed[i];
	}
	return NULL;
}

const struct calib_table *calib_default(void)
{
	const struct calib_table *t = calib_builtin("h100");
	return t && t->measured ? t : NULL;
}
