/* trace.c: names of tasks (their op, template and tile, from the task table and TMPL_CATALOG) and the
 * Chrome trace JSON of one traced iteration. */
#include <stdio.h>
#include <string.h>

#include "ark_session.h"

static const char *const tmpl_names[] = {
#define X(id) #id,
	TMPL_LIST(X)
#undef X
};
_Static_assert(sizeof tmpl_names / sizeof *tmpl_names == ARK_T__COUNT, "template names");

static const char *const tmpl_labels[ARK_T__COUNT] = {
#define X(id, tile, smem, span, label) [ARK_T_##id] = label,
	TMPL_CATALOG(X)
#undef X
};

static const enum ark_span tmpl_spans[ARK_T__COUNT] = {
#define X(id, tile, smem, span, label) [ARK_T_##id] = span,
	TMPL_CATALOG(X)
#undef X
};

static const char *const op_kind_names[] = {
#define X(id, name, min_in, max_in, n_out, attrs, flags) name,
	OP_LIST(X)
#undef X
};
_Static_assert(sizeof op_kind_names / sizeof *op_kind_names == ARK_OP__COUNT, "op names");

const char *ark_tmpl_name(int tmpl)
{
	return tmpl >= 0 && tmpl < ARK_T__COUNT ? tmpl_names[tmpl] : "?";
}

const char *ark_tmpl_label(int tmpl)
{
	return tmpl >= 0 && tmpl < ARK_T__COUNT ? tmpl_labels[tmpl] : "unknown template";
}

const char *ark_op_kind_name(int kind)
{
	return kind >= 0 && kind < ARK_OP__COUNT ? op_kind_names[kind] : "?";
}

int ark_task_op(const struct ark_model *m, int g, int ti)
{
	const struct ark_gpu_tables *p = &m->tables[g];
	if (ti < 0 || ti >= p->n_tasks || p->tasks[ti].op >= m->n_ops)
		return -1;
	return p->tasks[ti].op;
}

void ark_task_label(const struct ark_model *m, int g, int ti, char *buf, size_t size)
{
	const struct ark_gpu_tables *p = &m->tables[g];
	if (ti < 0 || ti >= p->n_tasks) {
		snprintf(buf, size, "task %d of %d", ti, p->n_tasks);
		return;
	}
	const struct ark_task *t = &p->tasks[ti];
	const char *tmpl = ark_tmpl_name(t->tmpl);
	int op = ark_task_op(m, g, ti);
	char who[128];
	if (op >= 0)
		snprintf(who, sizeof who, "%s ", m->ops[op].name);
	else if (t->op == ARK_TASK_NO_OP)
		who[0] = 0;
	else
		snprintf(who, sizeof who, "op %u of %d? ", t->op, m->n_ops);
	switch (t->tmpl < ARK_T__COUNT ? tmpl_spans[t->tmpl] : ARK_SPAN_NONE) {
	case ARK_SPAN_TILE:
		snprintf(buf, size, "%s%s (%u:%u, %u:%u)", who, tmpl, t->m0, t->m1, t->n0, t->n1);
		break;
	case ARK_SPAN_TILE_K:
		snprintf(buf, size, "%s%s (%u:%u, %u:%u) k %u:%u", who, tmpl, t->m0, t->m1, t->n0, t->n1, t->k0, t->k1);
		break;
	case ARK_SPAN_ROWS:
		snprintf(buf, size, "%s%s rows %u:%u", who, tmpl, t->m0, t->m1);
		break;
	case ARK_SPAN_ELEMS: /* or a box (a transposing STRIDED tile) */
		if (t->k1 > t->k0 || t->m1 == t->m0)
			snprintf(buf, size, "%s%s [%u:%u]", who, tmpl, t->k0, t->k1);
		else
			snprintf(buf, size, "%s%s (%u:%u, %u:%u)", who, tmpl, t->m0, t->m1, t->n0, t->n1);
		break;
	case ARK_SPAN_NONE:
		snprintf(buf, size, "%s%s", who, tmpl);
		break;
	}
}

/* A JSON string literal. */
static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

int ark_trace_write(FILE *f, const struct ark_model *m, const unsigned long long *const *trace)
{
	unsigned long long t0 = 0;
	char label[256];
	int first = 1;

	for (int g = 0; g < m->gpus; g++) {
		if (!trace[g])
			continue;
		for (int i = 0; i < m->tables[g].n_tasks; i++) {
			unsigned long long s = trace[g][2 * i];
			if (s && (!t0 || s < t0))
				t0 = s;
		}
	}
	fputs("{\"displayTimeUnit\": \"ns\", \"otherData\": {\"model\": ", f);
	json_str(f, m->name);
	fputs("}, \"traceEvents\": [\n", f);
	for (int g = 0; g < m->gpus; g++) {
		const struct ark_gpu_tables *p = &m->tables[g];
		if (!trace[g])
			continue;
		snprintf(label, sizeof label, "GPU %d (%s)", g, m->name);
		fprintf(f, "%s{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"args\": {\"name\": ",
			first ? "" : ",\n", g);
		json_str(f, label);
		fputs("}}", f);
		first = 0;
		for (int sm = 0; sm < m->sms; sm++)
			fprintf(f, ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, "
				"\"args\": {\"name\": \"SM %d\"}}", g, sm, sm);
		for (int sm = 0; sm < m->sms; sm++)
			for (uint32_t i = p->sm_begin[sm]; i < p->sm_begin[sm + 1]; i++) {
				const struct ark_task *t = &p->tasks[i];
				unsigned long long s = trace[g][2 * i], e = trace[g][2 * i + 1];
				if (!s || e < s)
					continue; /* not run in the traced iteration */
				ark_task_label(m, g, (int)i, label, sizeof label);
				fputs(",\n{\"name\": ", f);
				json_str(f, label);
				fputs(", \"cat\": ", f);
				json_str(f, ark_tmpl_label(t->tmpl));
				fprintf(f, ", \"ph\": \"X\", \"pid\": %d, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, "
					"\"args\": {\"task\": %u, \"vcta\": %u, \"op\": %d, \"waits\": %u, "
					"\"signal\": %d}}",
					g, sm, (double)(s - t0) * 1e-3, (double)(e - s) * 1e-3, i, t->vcta,
					ark_task_op(m, g, (int)i), t->n_wait, t->signal);
			}
	}
	fputs("\n]}\n", f);
	if (ferror(f))
		return ark_error("trace: write failed");
	return ARK_OK;
}
