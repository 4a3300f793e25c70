/* tiling.c: the tiling IR's constructor, its growth (vCTAs, regions read, internal tensors with
 * their 2-D views), its views for partition/, its dumps (-dT, --dot-vctas) and its free. */
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "tiling.h"
#include "ark_smem.h"

static const char *const tmpl_names[] = {
#define X(id) #id,
	TMPL_LIST(X)
#undef X
};
_Static_assert(sizeof tmpl_names / sizeof tmpl_names[0] == ARK_T__COUNT, "template names");

const char *tmpl_name(int tmpl) { return tmpl >= 0 && tmpl < ARK_T__COUNT ? tmpl_names[tmpl] : "?"; }

/* The catalog's smem column, the expressions of abi/ark_smem.h evaluated for `threads` threads per
 * CTA: the same numbers the generated file's static assertion compares with ARK_SMEM_BYTES. */
#define ARK_THREADS threads
static int tmpl_smem(int tmpl, int threads)
{
	switch (tmpl) {
#define X(id, tile, smem, span, label) \
	case ARK_T_##id:               \
		return (int)(smem);
		TMPL_CATALOG(X)
#undef X
	}
	return 0;
}
#undef ARK_THREADS

static const char *const tmpl_labels[] = {
#define X(id, tile, smem, span, label) label,
	TMPL_CATALOG(X)
#undef X
};

int tmpl_smem_need(int threads, const char **label)
{
	int most = 0, which = 0;
	for (int t = 0; t < ARK_T__COUNT; t++)
		if (tmpl_smem(t, threads) > most)
			most = tmpl_smem(t, threads), which = t;
	if (label)
		*label = tmpl_labels[which];
	return most;
}

void tiling_init(struct tiling *s, struct graph *g, const struct tile_opts *opt)
{
	memset(s, 0, sizeof *s);
	s->g = g;
	s->opt = *opt;
	s->per_op = xcalloc((size_t)g->n_ops, sizeof *s->per_op);
	for (int i = 0; i < g->n_ops; i++) {
		s->per_op[i].fused_into = -1;
		s->per_op[i].act = ARK_ACT_NONE;
		s->per_op[i].out_tensor = g->ops[i].out[0];
		s->per_op[i].splits = 1;
		s->per_op[i].ws_tensor = -1;
		s->per_op[i].residual = -1;
		s->per_op[i].residual_op = -1;
		s->per_op[i].pre_op = -1;
		s->per_op[i].chain_next = -1;
	}
	/* 2-D views of the model's tensors; those the tiler adds get theirs in tiling_add_tensor. */
	s->cap_views = g->n_tensors > 0 ? g->n_tensors : 1;
	s->rows = xcalloc((size_t)s->cap_views, sizeof *s->rows);
	s->cols = xcalloc((size_t)s->cap_views, sizeof *s->cols);
	for (int t = 0; t < g->n_tensors; t++) {
		const struct tensor *T = &g->tensors[t];
		s->cols[t] = T->shape[T->ndim - 1];
		if (ark_dtype_quantized(T->dtype)) /* handled as rows of bytes: the blocks */
			s->cols[t] = ark_row_bytes(T->dtype, s->cols[t]);
		s->rows[t] = 1;
		for (int d = 0; d < T->ndim - 1; d++)
			s->rows[t] *= T->shape[d];
	}
}

int64_t tiling_mem_cols(const struct tiling *s, int t)
{
	return s->g->tensors[t].pitch ? s->g->tensors[t].pitch : s->cols[t];
}

int tiling_add_tensor(struct tiling *s, const char *base, const char *suffix, int gpu, int64_t rows, int64_t cols,
		      enum ark_dtype dtype)
{
	struct graph *g = s->g;
	int t = g->n_tensors;
	g->tensors = xrealloc(g->tensors, (size_t)(t + 1) * sizeof *g->tensors);
	struct tensor *T = &g->tensors[t];
	memset(T, 0, sizeof *T);
	size_t n = strlen(base) + strlen(suffix) + 1;
	T->name = xmalloc(n);
	snprintf(T->name, n, "%s%s", base, suffix);
	T->ndim = 2;
	T->shape[0] = rows;
	T->shape[1] = cols;
	T->dtype = dtype;
	T->role = ARK_ROLE_INTERNAL;
	T->gpu = gpu;
	T->producer = -1;
	T->view_of = -1;
	g->n_tensors++;
	if (t == s->cap_views) {
		s->cap_views *= 2;
		s->rows = xrealloc(s->rows, (size_t)s->cap_views * sizeof *s->rows);
		s->cols = xrealloc(s->cols, (size_t)s->cap_views * sizeof *s->cols);
	}
	ARK_ASSERT(t < s->cap_views);
	s->rows[t] = rows;
	s->cols[t] = cols;
	return t;
}

struct vcta *tiling_new_vcta(struct tiling *s, int op, int opp, enum ark_tmpl tmpl)
{
	if (s->n_vcta == s->cap_vcta) {
		s->cap_vcta = s->cap_vcta ? 2 * s->cap_vcta : 1024;
		s->v = xrealloc(s->v, (size_t)s->cap_vcta * sizeof *s->v);
	}
	struct vcta *v = &s->v[s->n_vcta++];
	memset(v, 0, sizeof *v);
	v->op = op;
	v->opp = opp;
	v->tmpl = tmpl;
	v->gpu = s->g->ops[op].gpu;
	return v;
}

int tiling_new_comm(struct tiling *s, int op, int gpu, enum ark_tmpl tmpl)
{
	if (s->n_comm == s->cap_comm) {
		s->cap_comm = s->cap_comm ? 2 * s->cap_comm : 16;
		s->comm = xrealloc(s->comm, (size_t)s->cap_comm * sizeof *s->comm);
	}
	struct comm_opp *x = &s->comm[s->n_comm];
	memset(x, 0, sizeof *x);
	x->op = op;
	x->gpu = gpu;
	x->tmpl = tmpl;
	x->peer = -1;
	x->in0 = x->in1 = x->out = -1;
	x->act = ARK_ACT_NONE;
	return s->n_comm++;
}

void vcta_add_read(struct vcta *v, int tensor, int64_t r0, int64_t r1, int64_t c0, int64_t c1)
{
	ARK_ASSERT(v->n_reads < VCTA_MAX_READS);
	v->reads[v->n_reads++] = (struct region){tensor, r0, r1, c0, c1};
}

void tiling_dag(const struct tiling *s, struct part_dag *dag)
{
	*dag = (struct part_dag){
		.n = s->n_vcta,
		.xadj = s->xadj,
		.adj = s->adj,
		.ebytes = s->ebytes,
		.flops = s->flops,
		.bytes = s->bytes,
		.tc = s->tc,
		.lat_us = s->lat_us,
		.group = s->group,
		.sm_gbps = s->sm_gbps,
	};
}

void tiling_dump(const struct tiling *s, FILE *f)
{
	const struct graph *g = s->g;
	fprintf(f, "# vCTAs of %s: %d\n", g->name, s->n_vcta);
	struct part_dag dag = {0};
	if (s->lat_us)
		tiling_dag(s, &dag);
	for (int i = 0; i < s->n_vcta; i++) {
		const struct vcta *v = &s->v[i];
		fprintf(f, "v%-6d %-14s op %-12s rows %u:%u cols %u:%u k %u:%u", i, tmpl_name(v->tmpl),
			g->ops[v->op].name, v->m0, v->m1, v->n0, v->n1, v->k0, v->k1);
		if (v->tmpl == ARK_T_MATMUL_PARTIAL)
			fprintf(f, " split %u", v->split);
		fprintf(f, "  %.0f flop %.0f B", v->flops, v->bytes);
		if (s->opt.gpu && s->lat_us) /* the simulator's time: alone, and with every SM streaming */
			fprintf(f, "  %.2f us (%.2f us busy)", part_vertex_us(&dag, s->opt.gpu, i, s->opt.gpu->dram_gbps),
				part_vertex_us(&dag, s->opt.gpu, i, s->opt.gpu->dram_gbps / s->opt.gpu->sms));
		fprintf(f, "\n");
		for (int r = 0; r < v->n_reads; r++) {
			const struct region *R = &v->reads[r];
			fprintf(f, "        reads  %s[%lld:%lld, %lld:%lld]\n", g->tensors[R->tensor].name,
				(long long)R->r0, (long long)R->r1, (long long)R->c0, (long long)R->c1);
		}
		const struct region *W = &v->write;
		fprintf(f, "        writes %s[%lld:%lld, %lld:%lld]\n", g->tensors[W->tensor].name, (long long)W->r0,
			(long long)W->r1, (long long)W->c0, (long long)W->c1);
	}
}

void tiling_dot(const struct tiling *s, FILE *f)
{
	const struct graph *g = s->g;
	fprintf(f, "digraph \"%s_vctas\" {\n  node [shape=box, fontsize=9];\n", g->name);
	for (int i = 0; i < s->n_vcta; i++) {
		const struct vcta *v = &s->v[i];
		fprintf(f, "  v%d [label=\"v%d %s\\n%s %u:%u,%u:%u\"];\n", i, i, g->ops[v->op].name,
			tmpl_name(v->tmpl), v->m0, v->m1, v->n0, v->n1);
	}
	for (int u = 0; u < s->n_vcta; u++)
		for (int64_t e = s->xadj[u]; e < s->xadj[u + 1]; e++)
			if (!s->keep || s->keep[e])
				fprintf(f, "  v%d -> v%d;\n", u, s->adj[e]);
	fprintf(f, "}\n");
}

void tiling_free(struct tiling *s)
{
	free(s->per_op);
	free(s->v);
	free(s->rows);
	free(s->cols);
	free(s->xadj);
	free(s->adj);
	free(s->ebytes);
	free(s->hu);
	free(s->hv);
	free(s->keep);
	free(s->offset);
	free(s->flops);
	free(s->bytes);
	free(s->lat_us);
	free(s->tc);
	free(s->group);
	free(s->sm_gbps);
	free(s->comm);
	memset(s, 0, sizeof *s);
}
