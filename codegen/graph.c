/* graph.c: the graph IR checks (names resolved, GPUs placed, cycles rejected, ops ordered, shapes and
 * dtypes inferred) and its dumps (-dG text, Graphviz). */
#include "graph.h"
#include "ark_model.h"
#include "diag.h"
#include "strmap.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define SHAPE_BUF 96

/* The names of tensors[0..done) or ops[0..done), hashed. */
struct name_index {
	struct strmap map;
	int done;
};

void graph_free(struct graph *g)
{
	for (int i = 0; i < g->n_tensors; i++)
		free(g->tensors[i].name);
	for (int i = 0; i < g->n_ops; i++)
		free(g->ops[i].name);
	for (int i = 0; i < g->n_files; i++)
		free(g->files[i]);
	if (g->tensor_index)
		strmap_free(&g->tensor_index->map);
	if (g->op_index)
		strmap_free(&g->op_index->map);
	free(g->tensor_index);
	free(g->op_index);
	free(g->files);
	free(g->tensors);
	free(g->ops);
	free(g->order);
	free(g->file);
	free(g->name);
	free(g->token_name);
	memset(g, 0, sizeof *g);
}

const char *graph_file_of(const struct graph *g, const char *file)
{
	return file ? file : g->file;
}

/* Where tensor or op x was written, as the first two arguments of diag_*. */
#define AT(x) graph_file_of(g, (x)->file), (x)->line

void graph_index_names(struct graph *g)
{
	if (!g->tensor_index)
		g->tensor_index = xcalloc(1, sizeof *g->tensor_index);
	if (!g->op_index)
		g->op_index = xcalloc(1, sizeof *g->op_index);
}

static const char *tensor_name(const void *g, int i) { return ((const struct graph *)g)->tensors[i].name; }
static const char *op_name(const void *g, int i) { return ((const struct graph *)g)->ops[i].name; }

/* Looks name up in x, after hashing the entries [x->done, n) appended since the last lookup (all of
 * them again if the array shrank). */
static int find(struct name_index *x, int n, strmap_name_fn *name_of, const struct graph *g, const char *name)
{
	if (x->done > n) {
		strmap_free(&x->map);
		x->done = 0;
	}
	for (; x->done < n; x->done++)
		strmap_put(&x->map, name_of(g, x->done), x->done, name_of, g);
	return strmap_get(&x->map, name, name_of, g);
}

int graph_levels(const struct graph *g, int *level)
{
	int max_level = 0;
	for (int k = 0; k < g->n_ops; k++) {
		int oi = g->order[k];
		const struct op *o = &g->ops[oi];
		level[oi] = 0;
		for (int j = 0; j < o->n_in; j++) {
			int p = g->tensors[o->in[j]].producer;
			if (p >= 0 && level[p] + 1 > level[oi])
				level[oi] = level[p] + 1;
		}
		if (level[oi] > max_level)
			max_level = level[oi];
	}
	return max_level;
}

int graph_find_tensor(const struct graph *g, const char *name)
{
	if (g->tensor_index)
		return find(g->tensor_index, g->n_tensors, tensor_name, g, name);
	for (int i = 0; i < g->n_tensors; i++)
		if (!strcmp(g->tensors[i].name, name))
			return i;
	return -1;
}

int graph_find_op(const struct graph *g, const char *name)
{
	if (g->op_index)
		return find(g->op_index, g->n_ops, op_name, g, name);
	for (int i = 0; i < g->n_ops; i++)
		if (!strcmp(g->ops[i].name, name))
			return i;
	return -1;
}

/* Bytes per element; of a quantized dtype an upper bound (q8_0: 34 bytes per 32), for check_size. */
static int dtype_size(enum ark_dtype d)
{
	return ark_dtype_quantized(d) ? 2 : ark_dtype_size(d);
}

uint64_t tensor_elems(const struct tensor *t)
{
	uint64_t n = 1;
	for (int i = 0; i < t->ndim; i++)
		n *= (uint64_t)t->shape[i];
	return n;
}

int tensor_same_shape(const struct tensor *a, const struct tensor *b)
{
	if (a->ndim != b->ndim)
		return 0;
	for (int i = 0; i < a->ndim; i++)
		if (a->shape[i] != b->shape[i])
			return 0;
	return 1;
}

uint64_t tensor_bytes(const struct tensor *t)
{
	if (ark_dtype_quantized(t->dtype) && t->ndim > 0) /* rows of blocks */
		return tensor_elems(t) / (uint64_t)t->shape[t->ndim - 1] *
		       (uint64_t)ark_row_bytes(t->dtype, t->shape[t->ndim - 1]);
	return tensor_elems(t) * (uint64_t)dtype_size(t->dtype);
}

uint64_t tensor_arena_bytes(const struct tensor *t)
{
	if (!t->pitch)
		return tensor_bytes(t);
	return tensor_elems(t) / (uint64_t)t->shape[t->ndim - 1] * (uint64_t)t->pitch * (uint64_t)dtype_size(t->dtype);
}

const char *shape_str(char *buf, size_t n, int ndim, const int64_t *shape)
{
	size_t k = 0;
	if (n == 0)
		return buf;
	buf[0] = 0;
	if (ndim <= 0) {
		snprintf(buf, n, "[?]");
		return buf;
	}
	for (int i = 0; i < ndim && k < n; i++) {
		int w = snprintf(buf + k, n - k, "%s%" PRId64, i ? ", " : "[", shape[i]);
		if (w < 0)
			return buf;
		k += (size_t)w;
	}
	if (k < n)
		snprintf(buf + k, n - k, "]");
	return buf;
}

/* Shape of a tensor as text, in one of a few rotating buffers (enough for one message). */
static const char *shp(const struct tensor *t)
{
	static char buf[4][SHAPE_BUF];
	static int next;
	char *b = buf[next++ & 3];
	return shape_str(b, SHAPE_BUF, t->ndim, t->shape);
}

static const char *plural(int n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/* ---- placement, arity and names --------------------------------------------------------------- */

static int check_size(const struct graph *g, const struct tensor *t)
{
	uint64_t elems = 1, bytes;
	for (int i = 0; i < t->ndim; i++)
		if (__builtin_mul_overflow(elems, (uint64_t)t->shape[i], &elems))
			goto overflow;
	if (__builtin_mul_overflow(elems, (uint64_t)dtype_size(t->dtype), &bytes) || bytes > INT64_MAX)
		goto overflow;
	return 0;
overflow:
	diag_error(AT(t), "tensor '%s' of shape %s (%s) is too large: its size in bytes overflows 64 bits",
		   t->name, shp(t), dtype_name[t->dtype]);
	return -1;
}

static int check_gpu(const struct graph *g, int gpu, const char *file, int line, const char *what, const char *name)
{
	if (gpu >= 0 && gpu < g->gpus)
		return 0;
	if (g->gpus == 1)
		diag_error(graph_file_of(g, file), line, "'gpu' of %s '%s' is %d, expected 0 (the model has one GPU)", what, name, gpu);
	else
		diag_error(graph_file_of(g, file), line, "'gpu' of %s '%s' is %d, expected 0 to %d", what, name, gpu, g->gpus - 1);
	diag_hint("the model has gpus = %d; raise 'gpus' or change the %s's 'gpu'", g->gpus, what);
	return -1;
}

/* Whether tensor t is the output of an argmax (int32 indices, the one computed int32 tensor). */
static int argmax_output(const struct graph *g, int t)
{
	for (int i = 0; i < g->n_ops; i++)
		if (g->ops[i].kind == ARK_OP_ARGMAX && g->ops[i].n_out == 1 && g->ops[i].out[0] == t)
			return 1;
	return 0;
}

/* A block-quantized tensor (q4_1, q8_0): a weight whose last dimension is whole blocks of 32. */
static int check_quantized(const struct graph *g, const struct tensor *t)
{
	if (t->role != ARK_ROLE_WEIGHT) {
		diag_error(AT(t), "tensor '%s' is %s, but its role is %s", t->name, dtype_name[t->dtype], role_name[t->role]);
		diag_hint("q4_1 and q8_0 are for weights (matmul's b with transpose_b, embedding tables); ops compute in "
			  "fp16, bf16 or fp32");
		return -1;
	}
	if (t->shape_given && t->ndim >= 1 && t->ndim <= ARK_MAX_DIMS && t->shape[t->ndim - 1] % ARK_QBLOCK) {
		diag_error(AT(t), "tensor '%s' is %s with shape %s: its last dimension, %" PRId64 ", is not a multiple of %d",
			   t->name, dtype_name[t->dtype], shp(t), t->shape[t->ndim - 1], ARK_QBLOCK);
		diag_hint("%s stores blocks of %d elements along the last dimension", dtype_name[t->dtype], ARK_QBLOCK);
		return -1;
	}
	return 0;
}

static int check_basic(struct graph *g)
{
	if (g->gpus < 1 || g->gpus > ARK_MAX_GPUS) {
		diag_error(g->file, 0, "'gpus' is %d, expected 1 to %d", g->gpus, ARK_MAX_GPUS);
		return -1;
	}
	for (int i = 0; i < g->n_tensors; i++) {
		struct tensor *t = &g->tensors[i];
		if (!t->shape_given)
			t->ndim = 0; /* inferred again below */
		t->view_of = -1;
		t->view_off = 0;
		if (t->declared && check_gpu(g, t->gpu, t->file, t->line, "tensor", t->name))
			return -1;
		if (t->dtype == ARK_INT32 && t->role != ARK_ROLE_INPUT && t->role != ARK_ROLE_WEIGHT &&
		    t->role != ARK_ROLE_STATE && !argmax_output(g, i)) {
			diag_error(AT(t), "tensor '%s' is int32, but its role is %s", t->name, role_name[t->role]);
			diag_hint("int32 is for inputs, weights and state (token ids, masks, positions) and argmax's "
				  "output; ops compute in fp16, bf16 or fp32");
			return -1;
		}
		if (t->role == ARK_ROLE_STATE && g->gpus > 1) {
			diag_error(AT(t), "state '%s' in a model on %d GPUs: state is supported on one GPU only", t->name,
				   g->gpus);
			diag_hint("a model with state tensors has gpus = 1");
			return -1;
		}
		if (ark_dtype_quantized(t->dtype) && check_quantized(g, t))
			return -1;
		if (!t->shape_given)
			continue;
		if (t->ndim < 1 || t->ndim > ARK_MAX_DIMS) {
			diag_error(AT(t), "'shape' of tensor '%s' has %d dimensions, expected 1 to %d", t->name,
				   t->ndim, ARK_MAX_DIMS);
			return -1;
		}
		for (int d = 0; d < t->ndim; d++)
			if (t->shape[d] < 1) {
				diag_error(AT(t), "'shape' of tensor '%s' has %" PRId64 " in dimension %d, "
					   "expected at least 1", t->name, t->shape[d], d);
				return -1;
			}
		if (check_size(g, t))
			return -1;
	}
	for (int i = 0; i < g->n_ops; i++) {
		struct op *o = &g->ops[i];
		ARK_ASSERT(o->kind >= 0 && o->kind < ARK_OP__COUNT);
		const struct op_info *oi = &op_info[o->kind];
		if (check_gpu(g, o->gpu, o->file, o->line, "op", o->name))
			return -1;
		if (o->n_in < oi->min_in || o->n_in > oi->max_in) {
			if (oi->min_in == oi->max_in)
				diag_error(AT(o), "op '%s' (%s) takes %d %s, found %d", o->name, oi->name,
					   oi->min_in, plural(oi->min_in, "input", "inputs"), o->n_in);
			else
				diag_error(AT(o), "op '%s' (%s) takes %d to %d inputs, found %d", o->name,
					   oi->name, oi->min_in, oi->max_in, o->n_in);
			return -1;
		}
		if (oi->n_out == ARK_NO_OUT && o->n_out) {
			diag_error(AT(o), "op '%s' (%s) has %d %s, expected none: it updates its state '%s' in place",
				   o->name, oi->name, o->n_out, plural(o->n_out, "output", "outputs"),
				   g->tensors[o->in[0]].name);
			diag_hint("leave 'out' out (or write out = [];); ops that read '%s' see its value of the iteration's "
				  "start, the next iteration the new one", g->tensors[o->in[0]].name);
			return -1;
		}
		int want = oi->n_out == ARK_NO_OUT ? 0 : oi->n_out ? oi->n_out : o->n_in;
		if (o->n_out != want) {
			diag_error(AT(o), "op '%s' (%s) has %d %s, expected %d%s", o->name, oi->name, o->n_out,
				   plural(o->n_out, "output", "outputs"), want, oi->n_out ? "" : " (one per input)");
			return -1;
		}
		for (int j = 0; j < o->n_in; j++)
			ARK_ASSERT(o->in[j] >= 0 && o->in[j] < g->n_tensors);
		for (int j = 0; j < o->n_out; j++)
			ARK_ASSERT(o->out[j] >= 0 && o->out[j] < g->n_tensors);
	}
	return 0;
}

static int resolve(struct graph *g)
{
	for (int i = 0; i < g->n_tensors; i++) {
		g->tensors[i].producer = -1;
		g->tensors[i].n_readers = 0;
	}
	for (int i = 0; i < g->n_ops; i++) {
		const struct op *o = &g->ops[i];
		for (int j = 0; j < o->n_out; j++) {
			struct tensor *t = &g->tensors[o->out[j]];
			if (t->producer >= 0) {
				const struct op *p = &g->ops[t->producer];
				diag_error(AT(o), "tensor '%s' is produced twice: by op '%s' and by op '%s'",
					   t->name, p->name, o->name);
				diag_note(AT(p), "op '%s' already produces '%s'", p->name, t->name);
				diag_hint("a tensor is produced by at most one op; rename one of the outputs");
				return -1;
			}
			if (t->role == ARK_ROLE_INPUT || t->role == ARK_ROLE_WEIGHT) {
				diag_error(AT(o), "op '%s' writes '%s', which is declared as %s", o->name,
					   t->name, t->role == ARK_ROLE_INPUT ? "an input" : "a weight");
				diag_note(AT(t), "'%s' is declared here", t->name);
				diag_hint("inputs and weights are produced by no op; rename the op's output");
				return -1;
			}
			if (t->role == ARK_ROLE_STATE) {
				diag_error(AT(o), "op '%s' writes '%s', which is declared as a state", o->name, t->name);
				diag_note(AT(t), "'%s' is declared here", t->name);
				diag_hint("a state is produced by no op: update it with assign (in = [\"%s\", value]), "
					  "advance or kv_append", t->name);
				return -1;
			}
			t->producer = i;
		}
	}
	for (int i = 0; i < g->n_ops; i++) {
		const struct op *o = &g->ops[i];
		for (int j = 0; j < o->n_in; j++) {
			struct tensor *t = &g->tensors[o->in[j]];
			t->n_readers++;
			if (!t->declared && t->producer < 0) {
				diag_error(AT(o), "op '%s' reads unknown tensor '%s'", o->name, t->name);
				diag_hint("declare '%s' in 'tensors' (role = \"input\" or \"weight\", with a shape) "
					  "or name it in the 'out' of an op", t->name);
				return -1;
			}
		}
	}
	for (int i = 0; i < g->n_tensors; i++) {
		struct tensor *t = &g->tensors[i];
		switch (t->role) {
		case ARK_ROLE_INPUT:
		case ARK_ROLE_WEIGHT:
		case ARK_ROLE_STATE:
			if (!t->shape_given) {
				diag_error(AT(t), "%s '%s' has no 'shape'", role_name[t->role], t->name);
				diag_hint("inputs, weights and state need a shape, e.g. shape = [8, 1024];");
				return -1;
			}
			break;
		case ARK_ROLE_OUTPUT:
			if (t->producer < 0) {
				diag_error(AT(t), "output '%s' is not produced by any op", t->name);
				diag_hint("name '%s' in the 'out' of an op", t->name);
				return -1;
			}
			break;
		default:
			if (t->producer < 0) {
				diag_error(AT(t), "tensor '%s' is not produced by any op, and it is not an input "
					   "or a weight", t->name);
				diag_hint("give it role = \"input\" or role = \"weight\" and a shape, or produce it with an op");
				return -1;
			}
		}
	}
	return 0;
}

/* ---- order and cycles ------------------------------------------------------------------------- */

/* A small binary min-heap of op indices: Kahn's algorithm takes the lowest ready op first. */
struct heap {
	int *a, n;
};

static void heap_push(struct heap *h, int v)
{
	int i = h->n++;
	while (i > 0 && h->a[(i - 1) / 2] > v) {
		h->a[i] = h->a[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->a[i] = v;
}

static int heap_pop(struct heap *h)
{
	int top = h->a[0], v = h->a[--h->n], i = 0;
	for (;;) {
		int c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->a[c + 1] < h->a[c])
			c++;
		if (h->a[c] >= v)
			break;
		h->a[i] = h->a[c];
		i = c;
	}
	if (h->n)
		h->a[i] = v;
	return top;
}

/* Text that grows: for messages of unbounded length (a cycle through many ops). */
struct text {
	char *s;
	size_t n, cap;
};

static void __attribute__((format(printf, 2, 3))) text_add(struct text *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (w < 0)
		return;
	if (t->n + (size_t)w + 1 > t->cap) {
		t->cap = 2 * (t->n + (size_t)w + 1);
		t->s = xrealloc(t->s, t->cap);
	}
	va_start(ap, fmt);
	vsnprintf(t->s + t->n, t->cap - t->n, fmt, ap);
	va_end(ap);
	t->n += (size_t)w;
}

/* Some ops are left with producers that never ran: walk producers backwards until an op repeats, and
 * report that cycle, starting from its lowest op index. */
static void report_cycle(const struct graph *g, const int *indeg)
{
	int n = g->n_ops;
	int *pos = xmalloc(sizeof(int) * (size_t)n);   /* position of an op on the walk, -1 if not on it */
	int *walk = xmalloc(sizeof(int) * (size_t)(n + 1));
	int *via = xmalloc(sizeof(int) * (size_t)(n + 1)); /* tensor read by walk[k], produced by walk[k+1] */
	for (int i = 0; i < n; i++)
		pos[i] = -1;
	int cur = 0;
	while (indeg[cur] == 0)
		cur++;
	int len = 0;
	while (pos[cur] < 0) {
		pos[cur] = len;
		walk[len] = cur;
		const struct op *o = &g->ops[cur];
		int next = -1;
		for (int j = 0; j < o->n_in && next < 0; j++) {
			int p = g->tensors[o->in[j]].producer;
			if (p >= 0 && indeg[p] > 0) {
				next = p;
				via[len] = o->in[j];
			}
		}
		ARK_ASSERT(next >= 0);
		len++;
		cur = next;
	}
	/* walk[pos[cur] .. len-1] is the cycle, each op reading what the next one produces: reverse it. */
	int start = pos[cur], m = len - start;
	int *cyc = xmalloc(sizeof(int) * (size_t)m), *ten = xmalloc(sizeof(int) * (size_t)m);
	for (int k = 0; k < m; k++) {
		cyc[k] = walk[start + m - 1 - k];
		ten[k] = via[start + (m - 2 - k + m) % m]; /* written by cyc[k], read by cyc[k+1] */
	}
	int first = 0;
	for (int k = 1; k < m; k++)
		if (cyc[k] < cyc[first])
			first = k;
	struct text msg = { 0 };
	for (int k = 0; k <= m; k++)
		text_add(&msg, "%sop '%s'", k ? " -> " : "", g->ops[cyc[(first + k) % m]].name);
	diag_error(AT(&g->ops[cyc[first]]), "cycle: %s", msg.s);
	for (int k = 0; k < m; k++) {
		int a = cyc[(first + k) % m], b = cyc[(first + k + 1) % m];
		diag_note(AT(&g->ops[a]), "op '%s' writes '%s', which op '%s' reads", g->ops[a].name,
			  g->tensors[ten[(first + k) % m]].name, g->ops[b].name);
	}
	diag_hint("dependencies come from tensor names: rename an output to break the cycle");
	free(msg.s);
	free(cyc);
	free(ten);
	free(pos);
	free(walk);
	free(via);
}

/* The ops that update a state in place (ARK_OPF_STATE: assign, advance, kv_append): in[0] must be a
 * tensor declared with role "state", and at most one op updates a state per iteration. */
static int check_state_ops(struct graph *g)
{
	int *writer = xmalloc(sizeof(int) * (size_t)(g->n_tensors + 1));
	for (int t = 0; t < g->n_tensors; t++)
		writer[t] = -1;
	int rc = 0;
	for (int i = 0; i < g->n_ops && !rc; i++) {
		const struct op *o = &g->ops[i];
		if (!(op_info[o->kind].flags & ARK_OPF_STATE))
			continue;
		const struct tensor *t = &g->tensors[o->in[0]];
		if (t->role != ARK_ROLE_STATE) {
			diag_error(AT(o), "op '%s' (%s) updates '%s' in place, but '%s' is %s, not a state", o->name,
				   op_info[o->kind].name, t->name, t->name,
				   t->role == ARK_ROLE_INPUT ? "an input" : t->role == ARK_ROLE_WEIGHT ? "a weight"
				   : t->role == ARK_ROLE_OUTPUT ? "an output" : "an activation");
			if (t->declared)
				diag_note(AT(t), "'%s' is declared here", t->name);
			diag_hint("declare '%s' in 'tensors' with role = \"state\" and its shape; it then keeps its value "
				  "from one iteration to the next", t->name);
			rc = -1;
		} else if (writer[o->in[0]] >= 0) {
			const struct op *p = &g->ops[writer[o->in[0]]];
			diag_error(AT(o), "state '%s' is updated twice in one iteration: by op '%s' (%s) and by op '%s' (%s)",
				   t->name, p->name, op_info[p->kind].name, o->name, op_info[o->kind].name);
			diag_note(AT(p), "op '%s' already updates '%s'", p->name, t->name);
			diag_hint("one op per iteration may update a state: compute the new value first, then assign it once");
			rc = -1;
		} else {
			writer[o->in[0]] = i;
		}
	}
	free(writer);
	return rc;
}

/* Readers before the update: for each op W that updates state s in place, every other op that reads
 * s, or a view of s (through reshape, slice, transpose, concat: their results alias s's bytes, or copy
 * them), gets an edge to W, so that it sees the value s had at the start of the iteration. Appends
 * the pairs (reader, W) to *pr (2 ints each) and returns how many. */
static int state_edges(const struct graph *g, int **pr)
{
	int nt = g->n_tensors, n = 0, cap = 0;
	int *start = xcalloc((size_t)nt + 1, sizeof(int)); /* CSR of readers per tensor */
	for (int i = 0; i < g->n_ops; i++)
		for (int j = 0; j < g->ops[i].n_in; j++)
			start[g->ops[i].in[j] + 1]++;
	for (int t = 0; t < nt; t++)
		start[t + 1] += start[t];
	int *fill = xmalloc(sizeof(int) * (size_t)(nt + 1)), *rd = xmalloc(sizeof(int) * (size_t)(start[nt] + 1));
	memcpy(fill, start, sizeof(int) * (size_t)nt);
	for (int i = 0; i < g->n_ops; i++)
		for (int j = 0; j < g->ops[i].n_in; j++)
			rd[fill[g->ops[i].in[j]]++] = i;
	int *stack = xmalloc(sizeof(int) * (size_t)(nt + 1));
	uint8_t *seen = xcalloc((size_t)nt + 1, 1);
	*pr = NULL;
	for (int w = 0; w < g->n_ops; w++) {
		const struct op *W = &g->ops[w];
		if (!(op_info[W->kind].flags & ARK_OPF_STATE))
			continue;
		int sp = 0, nseen = 0;
		stack[sp++] = W->in[0];
		seen[W->in[0]] = 1;
		fill[nseen++] = W->in[0]; /* fill: reused as the list of tensors seen */
		while (sp) {
			int t = stack[--sp];
			for (int e = start[t]; e < start[t + 1]; e++) {
				int r = rd[e];
				if (r == w)
					continue;
				const struct op *R = &g->ops[r];
				if ((op_info[R->kind].flags & ARK_OPF_VIEW) && !seen[R->out[0]]) {
					seen[R->out[0]] = 1;
					fill[nseen++] = R->out[0];
					stack[sp++] = R->out[0];
				}
				if (n == cap) {
					cap = cap ? 2 * cap : 16;
					*pr = xrealloc(*pr, sizeof(int) * 2 * (size_t)cap);
				}
				(*pr)[2 * n] = r;
				(*pr)[2 * n + 1] = w;
				n++;
			}
		}
		for (int k = 0; k < nseen; k++)
			seen[fill[k]] = 0;
	}
	free(seen);
	free(stack);
	free(rd);
	free(fill);
	free(start);
	return n;
}

/* Whether op `to` depends on op `from` through the tensors it reads (a walk of producers). */
static int depends_on(const struct graph *g, int to, int from, uint8_t *mark)
{
	if (to == from)
		return 1;
	if (mark[to])
		return 0;
	mark[to] = 1;
	const struct op *o = &g->ops[to];
	for (int j = 0; j < o->n_in; j++) {
		int p = g->tensors[o->in[j]].producer;
		if (p >= 0 && depends_on(g, p, from, mark))
			return 1;
	}
	return 0;
}

/* The producers' order has no cycle, but a reader of a state's old value also depends on the op that
 * updates the state: reports the first such pair. */
static void report_state_cycle(const struct graph *g, const int *pr, int npr)
{
	uint8_t *mark = xcalloc((size_t)g->n_ops + 1, 1);
	for (int k = 0; k < npr; k++) {
		int r = pr[2 * k], w = pr[2 * k + 1];
		memset(mark, 0, (size_t)g->n_ops);
		if (!depends_on(g, r, w, mark))
			continue;
		const struct op *R = &g->ops[r], *W = &g->ops[w];
		const char *s = g->tensors[W->in[0]].name;
		diag_error(AT(R), "op '%s' reads state '%s' as it was at the start of the iteration, but it also "
			   "depends on op '%s' (%s), which updates '%s'", R->name, s, W->name, op_info[W->kind].name, s);
		diag_note(AT(W), "op '%s' updates '%s' here; it runs after every reader of the old value", W->name, s);
		diag_hint("read the new value through the output of op '%s' (kv_append), or compute it before the update",
			  W->name);
		break;
	}
	free(mark);
}

/* Kahn's algorithm over the producer edges and the npr (reader, updater) pairs of pr, the lowest ready op
 * first, into order; indeg (n) is left with the edges never released. Returns how many ops it ordered. */
static int kahn(const struct graph *g, const int *pr, int npr, int *order, int *indeg)
{
	int n = g->n_ops;
	int *start = xcalloc((size_t)n + 1, sizeof(int)); /* CSR of consumers per producer */
	int n_edges = npr;
	memset(indeg, 0, sizeof(int) * (size_t)n);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < g->ops[i].n_in; j++) {
			int p = g->tensors[g->ops[i].in[j]].producer;
			if (p >= 0) {
				start[p + 1]++;
				indeg[i]++;
				n_edges++;
			}
		}
	for (int k = 0; k < npr; k++) {
		start[pr[2 * k] + 1]++;
		indeg[pr[2 * k + 1]]++;
	}
	for (int i = 0; i < n; i++)
		start[i + 1] += start[i];
	int *fill = xmalloc(sizeof(int) * (size_t)(n + 1));
	memcpy(fill, start, sizeof(int) * (size_t)(n + 1));
	int *cons = xmalloc(sizeof(int) * (size_t)(n_edges + 1));
	for (int i = 0; i < n; i++)
		for (int j = 0; j < g->ops[i].n_in; j++) {
			int p = g->tensors[g->ops[i].in[j]].producer;
			if (p >= 0)
				cons[fill[p]++] = i;
		}
	for (int k = 0; k < npr; k++)
		cons[fill[pr[2 * k]]++] = pr[2 * k + 1];
	struct heap h = { xmalloc(sizeof(int) * (size_t)(n + 1)), 0 };
	int done = 0;
	for (int i = 0; i < n; i++)
		if (!indeg[i])
			heap_push(&h, i);
	while (h.n) {
		int p = heap_pop(&h);
		order[done++] = p;
		for (int e = start[p]; e < start[p + 1]; e++)
			if (--indeg[cons[e]] == 0)
				heap_push(&h, cons[e]);
	}
	free(h.a);
	free(cons);
	free(fill);
	free(start);
	return done;
}

static int order_ops(struct graph *g)
{
	int n = g->n_ops, rc = 0;
	int *pr = NULL, npr = state_edges(g, &pr); /* (reader, updater) pairs of state tensors */
	int *indeg = xcalloc((size_t)n, sizeof(int));
	free(g->order);
	g->order = xmalloc(sizeof(int) * (size_t)(n + 1));
	if (kahn(g, pr, npr, g->order, indeg) < n) {
		/* a cycle of producers alone is reported as such; else it goes through a state's update */
		if (kahn(g, NULL, 0, g->order, indeg) < n)
			report_cycle(g, indeg);
		else
			report_state_cycle(g, pr, npr);
		free(g->order);
		g->order = NULL;
		rc = -1;
	}
	free(pr);
	free(indeg);
	return rc;
}

/* ---- shape and dtype inference ---------------------------------------------------------------- */

static void set_shape(int64_t *dst, int *ndim, int n, const int64_t *src)
{
	*ndim = n;
	memmove(dst, src, sizeof(int64_t) * (size_t)n);
}


static void note_tensor(const struct graph *g, const struct tensor *t)
{
	if (t->producer >= 0 && !t->shape_given)
		diag_note(AT(&g->ops[t->producer]), "'%s' (%s) is produced by op '%s' here", t->name, shp(t),
			  g->ops[t->producer].name);
	else
		diag_note(AT(t), "'%s' (%s) is declared here", t->name, shp(t));
}

static int infer_matmul(struct graph *g, struct op *o, int *nd, int64_t *shape)
{
	const struct tensor *a = &g->tensors[o->in[0]], *b = &g->tensors[o->in[1]];
	char exp[SHAPE_BUF];
	if (a->ndim < 2) {
		diag_error(AT(o), "input '%s' of op '%s' (matmul) has shape %s, expected [..., M, K]", a->name,
			   o->name, shp(a));
		note_tensor(g, a);
		return -1;
	}
	if (b->ndim != 2) {
		diag_error(AT(o), "input '%s' of op '%s' (matmul) has shape %s, expected %s", b->name,
			   o->name, shp(b), o->transpose_b ? "[N, K]" : "[K, N]");
		note_tensor(g, b);
		return -1;
	}
	int64_t k = a->shape[a->ndim - 1];
	int64_t kb = o->transpose_b ? b->shape[1] : b->shape[0];
	int64_t n = o->transpose_b ? b->shape[0] : b->shape[1];
	if (k != kb) {
		size_t w = 0;
		exp[0] = 0;
		for (int i = 0; i < a->ndim - 1; i++)
			w += (size_t)snprintf(exp + w, sizeof exp - w, "%s*", i ? ", " : "[");
		snprintf(exp + w, sizeof exp - w, ", %" PRId64 "]", kb);
		diag_error(AT(o), "input '%s' of op '%s' has shape %s, expected %s", a->name, o->name, shp(a),
			   exp);
		note_tensor(g, b);
		diag_hint("the last dimension of '%s' must equal the %s dimension of '%s'%s", a->name,
			  o->transpose_b ? "last" : "first", b->name,
			  o->transpose_b ? " (transpose_b = true)" : " (or its last, with transpose_b = true)");
		return -1;
	}
	if (o->n_in == 3) {
		const struct tensor *c = &g->tensors[o->in[2]];
		if (c->ndim != 1 || c->shape[0] != n) {
			diag_error(AT(o), "bias '%s' of op '%s' has shape %s, expected [%" PRId64 "]", c->name,
				   o->name, shp(c), n);
			note_tensor(g, c);
			return -1;
		}
	}
	set_shape(shape, nd, a->ndim, a->shape);
	shape[a->ndim - 1] = n;
	return 0;
}

static int infer_broadcast(struct graph *g, struct op *o, int *nd, int64_t *shape)
{
	const struct tensor *a = &g->tensors[o->in[0]], *b = &g->tensors[o->in[1]];
	int n = a->ndim > b->ndim ? a->ndim : b->ndim;
	for (int i = 0; i < n; i++) { /* i-th dimension from the right */
		int64_t da = i < a->ndim ? a->shape[a->ndim - 1 - i] : 1;
		int64_t db = i < b->ndim ? b->shape[b->ndim - 1 - i] : 1;
		if (da != db && da != 1 && db != 1) {
			diag_error(AT(o), "inputs of op '%s' (%s) cannot be broadcast: '%s' has shape %s, "
				   "'%s' has shape %s", o->name, op_info[o->kind].name, a->name, shp(a), b->name, shp(b));
			note_tensor(g, b);
			diag_hint("broadcasting matches trailing dimensions, which must be equal or 1");
			return -1;
		}
		shape[n - 1 - i] = da == 1 ? db : da;
	}
	*nd = n;
	return 0;
}

/* Input `which` of op o must have shape [N], N the last dimension of input 0. */
static int check_vector(struct graph *g, struct op *o, int which, const char *role)
{
	const struct tensor *a = &g->tensors[o->in[0]], *v = &g->tensors[o->in[which]];
	int64_t n = a->shape[a->ndim - 1];
	if (v->ndim == 1 && v->shape[0] == n)
		return 0;
	diag_error(AT(o), "%s '%s' of op '%s' (%s) has shape %s, expected [%" PRId64 "] (the last dimension of '%s')",
		   role, v->name, o->name, op_info[o->kind].name, shp(v), n, a->name);
	note_tensor(g, v);
	return -1;
}

static int infer_same(struct graph *g, struct op *o)
{
	const struct tensor *a = &g->tensors[o->in[0]];
	for (int j = 1; j < o->n_in; j++) {
		const struct tensor *b = &g->tensors[o->in[j]];
		if (!tensor_same_shape(a, b)) {
			diag_error(AT(o), "input '%s' of op '%s' (%s) has shape %s, expected %s like '%s'",
				   b->name, o->name, op_info[o->kind].name, shp(b), shp(a), a->name);
			note_tensor(g, b);
			return -1;
		}
	}
	return 0;
}

/* reduce_mean: x [d0, .., dn-1] averaged over `axis`, which the output loses ([1] for a 1-D x); a mask
 * has x's shape without its last dimension and weights the reduced axis, which must be one of those. */
static int infer_reduce_mean(struct graph *g, struct op *o, int *nd, int64_t *shape)
{
	const struct tensor *a = &g->tensors[o->in[0]];
	int ax = o->axis, written = o->axis;
	if (ax < -a->ndim || ax >= a->ndim) {
		diag_error(AT(o), "'axis' of op '%s' (reduce_mean) is %d, expected -%d to %d for input '%s' of shape %s",
			   o->name, ax, a->ndim, a->ndim - 1, a->name, shp(a));
		return -1;
	}
	if (ax < 0)
		ax += a->ndim;
	o->axis = ax;
	if (o->n_in == 2) {
		const struct tensor *m = &g->tensors[o->in[1]];
		char want[SHAPE_BUF];
		if (a->ndim < 2) {
			diag_error(AT(o), "input '%s' of op '%s' (reduce_mean) has shape %s, expected at least 2 "
				   "dimensions with a mask", a->name, o->name, shp(a));
			diag_hint("the mask has the input's shape without its last dimension, e.g. [B, S] for [B, S, D]");
			return -1;
		}
		shape_str(want, sizeof want, a->ndim - 1, a->shape);
		if (m->ndim != a->ndim - 1 || memcmp(m->shape, a->shape, sizeof(int64_t) * (size_t)m->ndim)) {
			diag_error(AT(o), "mask '%s' of op '%s' (reduce_mean) has shape %s, expected %s (the shape of "
				   "'%s' without its last dimension)", m->name, o->name, shp(m), want, a->name);
			note_tensor(g, m);
			return -1;
		}
		if (ax == a->ndim - 1) {
			diag_error(AT(o), "op '%s' (reduce_mean) has a mask, but 'axis' %d is the last dimension of "
				   "'%s' %s, which the mask does not cover", o->name, written, a->name, shp(a));
			diag_hint("with a mask, average over one of the first %d axes (mean pooling: x [B, S, D], axis = 1)",
				  a->ndim - 1);
			return -1;
		}
	}
	*nd = 0;
	for (int d = 0; d < a->ndim; d++)
		if (d != ax)
			shape[(*nd)++] = a->shape[d];
	if (*nd == 0)
		shape[(*nd)++] = 1;
	return 0;
}

/* The largest head size the attention template supports (templates/op_attention.cuh). */
#define ATT_MAX_DH 128

/* attention: q [B, Sq, H*Dh] or [Sq, H*Dh], k and v [B, Skv, Hkv*Dh] (or 2-D with B = 1), mask
 * [B, Skv]; out has q's shape. Resolves kv_heads and scale to their defaults. */
static int infer_attention(struct graph *g, struct op *o, int *nd, int64_t *shape)
{
	const struct tensor *q = &g->tensors[o->in[0]], *k = &g->tensors[o->in[1]], *v = &g->tensors[o->in[2]];
	if (q->ndim != 2 && q->ndim != 3) {
		diag_error(AT(o), "query '%s' of op '%s' (attention) has shape %s, expected [B, Sq, heads * head size] "
			   "or [Sq, heads * head size]", q->name, o->name, shp(q));
		note_tensor(g, q);
		return -1;
	}
	int64_t B = q->ndim == 3 ? q->shape[0] : 1, E = q->shape[q->ndim - 1];
	int H = o->heads;
	if (!(o->attrs_given & ARK_A(KV_HEADS)))
		o->kv_heads = H;
	int Hkv = o->kv_heads;
	if (E % H) {
		diag_error(AT(o), "query '%s' of op '%s' (attention) has rows of %" PRId64 ", not a multiple of heads = %d",
			   q->name, o->name, E, H);
		note_tensor(g, q);
		diag_hint("the last dimension of the query is heads * head size");
		return -1;
	}
	int64_t Dh = E / H;
	if (Dh % 8 || Dh > ATT_MAX_DH) {
		diag_error(AT(o), "op '%s' (attention) has a head size of %" PRId64 " (%" PRId64 " / %d heads), expected a "
			   "multiple of 8 up to %d", o->name, Dh, E, H, ATT_MAX_DH);
		note_tensor(g, q);
		return -1;
	}
	if (H % Hkv) {
		diag_error(AT(o), "op '%s' (attention) has heads = %d and kv_heads = %d: kv_heads must divide heads",
			   o->name, H, Hkv);
		diag_hint("grouped-query attention shares each kv head among heads / kv_heads query heads");
		return -1;
	}
	for (int j = 1; j <= 2; j++) {
		const struct tensor *t = &g->tensors[o->in[j]];
		int ok = t->ndim == q->ndim && t->shape[t->ndim - 1] == Hkv * Dh && (q->ndim == 2 || t->shape[0] == B);
		if (!ok) {
			if (q->ndim == 3)
				diag_error(AT(o), "%s '%s' of op '%s' (attention) has shape %s, expected [%" PRId64 ", *, %" PRId64
					   "] ([B, Skv, kv_heads * head size])", j == 1 ? "key" : "value", t->name, o->name,
					   shp(t), B, Hkv * Dh);
			else
				diag_error(AT(o), "%s '%s' of op '%s' (attention) has shape %s, expected [*, %" PRId64
					   "] ([Skv, kv_heads * head size])", j == 1 ? "key" : "value", t->name, o->name,
					   shp(t), Hkv * Dh);
			note_tensor(g, t);
			return -1;
		}
	}
	if (!tensor_same_shape(k, v)) {
		diag_error(AT(o), "value '%s' of op '%s' (attention) has shape %s, expected %s like the key '%s'", v->name,
			   o->name, shp(v), shp(k), k->name);
		note_tensor(g, v);
		return -1;
	}
	int64_t Skv = k->shape[k->ndim - 2];
	if (o->n_in == 4) {
		const struct tensor *m = &g->tensors[o->in[3]];
		if (m->ndim != 2 || m->shape[0] != B || m->shape[1] != Skv) {
			diag_error(AT(o), "mask '%s' of op '%s' (attention) has shape %s, expected [%" PRId64 ", %" PRId64
				   "] ([B, Skv]: one flag per key)", m->name, o->name, shp(m), B, Skv);
			note_tensor(g, m);
			return -1;
		}
	}
	if (!(o->attrs_given & ARK_A(SCALE)))
		o->scale = 1.0 / sqrt((double)Dh);
	set_shape(shape, nd, q->ndim, q->shape);
	return 0;
}

/* Normalises axis `*ax` of an op over `nd` dimensions (-nd..nd-1 -> 0..nd-1); -1 after an error
 * naming `what` (the attribute) and the tensor t. */
static int norm_axis(struct graph *g, struct op *o, const struct tensor *t, const char *what, int *ax)
{
	int nd = t->ndim;
	if (*ax < -nd || *ax >= nd) {
		diag_error(AT(o), "'%s' of op '%s' (%s) is %d, expected -%d to %d for '%s' of shape %s", what, o->name,
			   op_info[o->kind].name, *ax, nd, nd - 1, t->name, shp(t));
		return -1;
	}
	if (*ax < 0)
		*ax += nd;
	return 0;
}

/* embedding: ids [...] (int32), table [V, D] -> [..., D] */
static int infer_embedding(struct graph *g, struct op *o, int *nd, int64_t *shape)
{
	const struct tensor *ids = &g->tensors[o->in[0]], *tab = &g->tensors[o->in[1]];
	if (ids->dtype != ARK_INT32) {
		diag_error(AT(o), "ids '%s' of op '%s' (embedding) are %s, expected int32", ids->name, o->name,
			   dtype_name[ids->dtype]);
		note_tensor(g, ids);
		diag_hint("declare the ids as an input with dtype = \"int32\"");
		return -1;
	}
	if (tab->ndim != 2) {
		diag_error(AT(o), "table '%s' of op '%s' (embedding) has shape %s, expected [V, D]", tab->name, o->name,
			   shp(tab));
		note_tensor(g, tab);
		return -1;
	}
	if (ids->ndim >= ARK_MAX_DIMS) {
		diag_error(AT(o), "ids '%s' of op '%s' (embedding) have shape %s, expected at most %d dimensions "
			   "(the output adds one)", ids->name, o->name, shp(ids), ARK_MAX_DIMS - 1);
		note_tensor(g, ids);
		return -1;
	}
	set_shape(shape, nd, ids->ndim, ids->shape);
	shape[ids->ndim] = tab->shape[1];
	*nd = ids->ndim + 1;
	return 0;
}

/* reshape: `shape`, one -1 inferred, the same number of elements */
static int infer_reshape(struct graph *g, struct op *o, int *nd, int64_t *shape)
{
	const struct tensor *a = &g->tensors[o->in[0]];
	uint64_t n = tensor_elems(a), known = 1;
	int free_dim = -1;
	char want[SHAPE_BUF];
	shape_str(want, sizeof want, o->n_shape, o->shape);
	for (int i = 0; i < o->n_shape; i++) {
		if (o->shape[i] == -1) {
			if (free_dim >= 0) {
				diag_error(AT(o), "'shape' of op '%s' (reshape) is %s: more than one -1", o->name, want);
				diag_hint("at most one dimension is inferred");
				return -1;
			}
			free_dim = i;
		} else if (__builtin_mul_overflow(known, (uint64_t)o->shape[i], &known)) {
			known = UINT64_MAX;
		}
	}
	set_shape(shape, nd, o->n_shape, o->shape);
	if (free_dim >= 0 && known && n % known == 0)
		shape[free_dim] = (int64_t)(n / known);
	if ((free_dim >= 0 && (!known || n % known)) || (free_dim < 0 && known != n)) {
		diag_error(AT(o), "op '%s' (reshape) cannot give '%s' of shape %s (%llu elements) the shape %s", o->name,
			   a->name, shp(a), (unsigned long long)n, want);
		note_tensor(g, a);
		diag_hint("a reshape keeps the number of elements");
		return -1;
	}
	return 0;
}

/* slice: elements start..end (exclusive) of `axis` */
static int infer_slice(struct graph *g, struct op *o, int *nd, int64_t *shape)
{
	const struct tensor *a = &g->tensors[o->in[0]];
	if (norm_axis(g, o, a, "axis", &o->axis))
		return -1;
	int64_t len = a->shape[o->axis];
	if (o->start < 0 || o->start >= o->end || o->end > len) {
		diag_error(AT(o), "op '%s' (slice) takes elements %lld..%lld of axis %d of '%s' (shape %s), expected "
			   "0 <= start < end <= %lld", o->name, (long long)o->start, (long long)o->end, o->axis, a->name,
			   shp(a), (long long)len);
		note_tensor(g, a);
		return -1;
	}
	set_shape(shape, nd, a->ndim, a->shape);
	shape[o->axis] = o->end - o->start;
	return 0;
}

/* transpose: axes dims[0] and dims[1] swapped */
static int infer_transpose(struct graph *g, struct op *o, int *nd, int64_t *shape)
{
	const struct tensor *a = &g->tensors[o->in[0]];
	if (norm_axis(g, o, a, "dims", &o->dims[0]) || norm_axis(g, o, a, "dims", &o->dims[1]))
		return -1;
	if (o->dims[0] == o->dims[1]) {
		diag_error(AT(o), "'dims' of op '%s' (transpose) names axis %d twice", o->name, o->dims[0]);
		diag_hint("dims = [a, b] swaps two different axes");
		return -1;
	}
	set_shape(shape, nd, a->ndim, a->shape);
	shape[o->dims[0]] = a->shape[o->dims[1]];
	shape[o->dims[1]] = a->shape[o->dims[0]];
	return 0;
}

/* concat: every input of one shape but along `axis`, which adds up */
static int infer_concat(struct graph *g, struct op *o, int *nd, int64_t *shape)
{
	const struct tensor *a = &g->tensors[o->in[0]];
	if (norm_axis(g, o, a, "axis", &o->axis))
		return -1;
	set_shape(shape, nd, a->ndim, a->shape);
	for (int j = 1; j < o->n_in; j++) {
		const struct tensor *b = &g->tensors[o->in[j]];
		int ok = b->ndim == a->ndim;
		for (int d = 0; ok && d < a->ndim; d++)
			ok = d == o->axis || b->shape[d] == a->shape[d];
		if (!ok) {
			diag_error(AT(o), "input '%s' of op '%s' (concat) has shape %s, expected %s but along axis %d "
				   "like '%s'", b->name, o->name, shp(b), shp(a), o->axis, a->name);
			note_tensor(g, b);
			return -1;
		}
		if (__builtin_add_overflow(shape[o->axis], b->shape[o->axis], &shape[o->axis])) {
			diag_error(AT(o), "op '%s' (concat): the result is too large", o->name);
			return -1;
		}
	}
	return 0;
}

/* assign: state s and value v of one shape and dtype. */
static int infer_assign(struct graph *g, struct op *o)
{
	const struct tensor *st = &g->tensors[o->in[0]], *v = &g->tensors[o->in[1]];
	if (!tensor_same_shape(st, v)) {
		diag_error(AT(o), "value '%s' of op '%s' (assign) has shape %s, expected %s like state '%s'", v->name,
			   o->name, shp(v), shp(st), st->name);
		note_tensor(g, v);
		return -1;
	}
	if (v->dtype != st->dtype) {
		diag_error(AT(o), "value '%s' of op '%s' (assign) is %s, expected %s like state '%s'", v->name, o->name,
			   dtype_name[v->dtype], dtype_name[st->dtype], st->name);
		note_tensor(g, v);
		diag_hint("a state takes values of its own dtype; set 'dtype' on '%s' or on the state", v->name);
		return -1;
	}
	return 0;
}

/* A position (rope in[1], decode_attention in[3], kv_append in[2]): int32 [1]. */
static int check_pos(struct graph *g, struct op *o, int j)
{
	const struct tensor *p = &g->tensors[o->in[j]];
	if (p->dtype != ARK_INT32 || p->ndim != 1 || p->shape[0] != 1) {
		diag_error(AT(o), "position '%s' of op '%s' (%s) is %s %s, expected int32 [1]", p->name, o->name,
			   op_info[o->kind].name, dtype_name[p->dtype], shp(p));
		note_tensor(g, p);
		diag_hint("positions are int32 [1]: a state that advance moves on, or an input");
		return -1;
	}
	return 0;
}

/* kv_append: cache [L, D] (a state), x [T, D] with T <= L, pos int32 [1] -> the cache after the write. */
static int infer_kv_append(struct graph *g, struct op *o)
{
	const struct tensor *c = &g->tensors[o->in[0]], *x = &g->tensors[o->in[1]];
	if (c->ndim != 2) {
		diag_error(AT(o), "cache '%s' of op '%s' (kv_append) has shape %s, expected [L, D]", c->name, o->name,
			   shp(c));
		note_tensor(g, c);
		return -1;
	}
	if (x->ndim != 2 || x->shape[1] != c->shape[1] || x->shape[0] > c->shape[0]) {
		diag_error(AT(o), "rows '%s' of op '%s' (kv_append) have shape %s, expected [T, %" PRId64 "] with T <= "
			   "%" PRId64 " (cache '%s' is %s)", x->name, o->name, shp(x), c->shape[1], c->shape[0], c->name,
			   shp(c));
		note_tensor(g, x);
		return -1;
	}
	return check_pos(g, o, 2);
}

/* rope: x [T, E] or [B, T, E] with E = heads * head_dim, pos int32 [1]; out has x's shape. Resolves
 * rotary_dim to its default (head_dim). */
static int infer_rope(struct graph *g, struct op *o, int *nd, int64_t *shape)
{
	const struct tensor *x = &g->tensors[o->in[0]];
	if (x->ndim != 2 && x->ndim != 3) {
		diag_error(AT(o), "input '%s' of op '%s' (rope) has shape %s, expected [T, heads * head_dim] or "
			   "[B, T, heads * head_dim]", x->name, o->name, shp(x));
		note_tensor(g, x);
		return -1;
	}
	int64_t E = x->shape[x->ndim - 1];
	if (E % o->head_dim) {
		diag_error(AT(o), "input '%s' of op '%s' (rope) has rows of %" PRId64 ", not a multiple of head_dim = %d",
			   x->name, o->name, E, o->head_dim);
		note_tensor(g, x);
		diag_hint("the last dimension of x is heads * head_dim");
		return -1;
	}
	if (!(o->attrs_given & ARK_A(ROTARY_DIM)))
		o->rotary_dim = o->head_dim;
	if (o->rotary_dim % 2 || o->rotary_dim > o->head_dim) {
		diag_error(AT(o), "op '%s' (rope) has rotary_dim = %d, expected an even number up to head_dim = %d",
			   o->name, o->rotary_dim, o->head_dim);
		diag_hint("rotary_dim is the part of each head that is rotated, in pairs");
		return -1;
	}
	if (check_pos(g, o, 1))
		return -1;
	set_shape(shape, nd, x->ndim, x->shape);
	return 0;
}

/* The largest head size of the decode_attention template (templates/op_decode.cuh). */
#define DEC_MAX_DH 128

/* decode_attention: q [T, H*Dh], caches [L, Hkv*Dh], pos int32 [1]; out [T, H*Dh]. Resolves kv_heads and
 * scale to their defaults. */
static int infer_decode_attention(struct graph *g, struct op *o, int *nd, int64_t *shape)
{
	const struct tensor *q = &g->tensors[o->in[0]], *k = &g->tensors[o->in[1]], *v = &g->tensors[o->in[2]];
	if (q->ndim != 2) {
		diag_error(AT(o), "query '%s' of op '%s' (decode_attention) has shape %s, expected [T, heads * head size]",
			   q->name, o->name, shp(q));
		note_tensor(g, q);
		return -1;
	}
	int64_t T = q->shape[0], E = q->shape[1];
	int H = o->heads;
	if (!(o->attrs_given & ARK_A(KV_HEADS)))
		o->kv_heads = H;
	int Hkv = o->kv_heads;
	if (E % H) {
		diag_error(AT(o), "query '%s' of op '%s' (decode_attention) has rows of %" PRId64 ", not a multiple of "
			   "heads = %d", q->name, o->name, E, H);
		note_tensor(g, q);
		diag_hint("the last dimension of the query is heads * head size");
		return -1;
	}
	int64_t Dh = E / H;
	if (Dh % 8 || Dh > DEC_MAX_DH) {
		diag_error(AT(o), "op '%s' (decode_attention) has a head size of %" PRId64 " (%" PRId64 " / %d heads), "
			   "expected a multiple of 8 up to %d", o->name, Dh, E, H, DEC_MAX_DH);
		note_tensor(g, q);
		return -1;
	}
	if (H % Hkv) {
		diag_error(AT(o), "op '%s' (decode_attention) has heads = %d and kv_heads = %d: kv_heads must divide "
			   "heads", o->name, H, Hkv);
		diag_hint("grouped-query attention shares each kv head among heads / kv_heads query heads");
		return -1;
	}
	for (int j = 1; j <= 2; j++) {
		const struct tensor *t = &g->tensors[o->in[j]];
		if (t->ndim != 2 || t->shape[1] != Hkv * Dh) {
			diag_error(AT(o), "%s cache '%s' of op '%s' (decode_attention) has shape %s, expected [*, %" PRId64
				   "] ([L, kv_heads * head size])", j == 1 ? "key" : "value", t->name, o->name, shp(t),
				   Hkv * Dh);
			note_tensor(g, t);
			return -1;
		}
	}
	if (!tensor_same_shape(k, v)) {
		diag_error(AT(o), "value cache '%s' of op '%s' (decode_attention) has shape %s, expected %s like the "
			   "key cache '%s'", v->name, o->name, shp(v), shp(k), k->name);
		note_tensor(g, v);
		return -1;
	}
	if (T > k->shape[0]) {
		diag_error(AT(o), "query '%s' of op '%s' (decode_attention) has %" PRId64 " rows, more than the %" PRId64
			   " of the cache '%s'", q->name, o->name, T, k->shape[0], k->name);
		note_tensor(g, q);
		diag_hint("the T query rows are at positions pos..pos+T-1, which the cache must hold");
		return -1;
	}
	if (check_pos(g, o, 3))
		return -1;
	if (!(o->attrs_given & ARK_A(SCALE)))
		o->scale = 1.0 / sqrt((double)Dh);
	set_shape(shape, nd, 2, q->shape);
	return 0;
}

/* argmax: x [..., N] -> int32 [...] (x 1-D: [1]) */
static int infer_argmax(struct graph *g, struct op *o, int *nd, int64_t *shape)
{
	const struct tensor *x = &g->tensors[o->in[0]];
	if (x->ndim == 1) {
		*nd = 1;
		shape[0] = 1;
		return 0;
	}
	set_shape(shape, nd, x->ndim - 1, x->shape);
	return 0;
}

/* Output shapes of o, all equal (per-GPU outputs of collectives have one shape too). */
static int infer_shape(struct graph *g, struct op *o, int *nd, int64_t *shape)
{
	const struct tensor *a = &g->tensors[o->in[0]];
	switch (o->kind) {
	case ARK_OP_MATMUL:
		return infer_matmul(g, o, nd, shape);
	case ARK_OP_ADD:
	case ARK_OP_MUL:
		return infer_broadcast(g, o, nd, shape);
	case ARK_OP_SWIGLU:
	case ARK_OP_ALL_REDUCE:
		if (infer_same(g, o))
			return -1;
		break;
	case ARK_OP_LAYERNORM:
		if (check_vector(g, o, 1, "gamma") || check_vector(g, o, 2, "beta"))
			return -1;
		break;
	case ARK_OP_RMSNORM:
		if (check_vector(g, o, 1, "gamma"))
			return -1;
		break;
	case ARK_OP_REDUCE_MEAN:
		return infer_reduce_mean(g, o, nd, shape);
	case ARK_OP_ATTENTION:
		return infer_attention(g, o, nd, shape);
	case ARK_OP_ALL_GATHER: {
		if (infer_same(g, o))
			return -1;
		int ax = o->axis;
		if (ax < -a->ndim || ax >= a->ndim) {
			diag_error(AT(o), "'axis' of op '%s' (all_gather) is %d, expected -%d to %d for inputs "
				   "of shape %s", o->name, ax, a->ndim, a->ndim - 1, shp(a));
			return -1;
		}
		if (ax < 0)
			ax += a->ndim;
		o->axis = ax;
		set_shape(shape, nd, a->ndim, a->shape);
		if (__builtin_mul_overflow(shape[ax], (int64_t)o->n_in, &shape[ax])) {
			diag_error(AT(o), "op '%s' (all_gather) concatenates %d inputs of shape %s: the result "
				   "is too large", o->name, o->n_in, shp(a));
			return -1;
		}
		return 0;
	}
	case ARK_OP_EMBEDDING:
		return infer_embedding(g, o, nd, shape);
	case ARK_OP_RESHAPE:
		return infer_reshape(g, o, nd, shape);
	case ARK_OP_SLICE:
		return infer_slice(g, o, nd, shape);
	case ARK_OP_TRANSPOSE:
		return infer_transpose(g, o, nd, shape);
	case ARK_OP_CONCAT:
		return infer_concat(g, o, nd, shape);
	case ARK_OP_ASSIGN:
		if (infer_assign(g, o))
			return -1;
		break;
	case ARK_OP_ADVANCE:
		if (a->dtype != ARK_INT32) {
			diag_error(AT(o), "op '%s' (advance) moves an int32 state on, but '%s' is %s", o->name, a->name,
				   dtype_name[a->dtype]);
			note_tensor(g, a);
			diag_hint("declare '%s' with dtype = \"int32\" (a position or a counter), or update a float state "
				  "with assign", a->name);
			return -1;
		}
		break;
	case ARK_OP_KV_APPEND:
		if (infer_kv_append(g, o))
			return -1;
		break;
	case ARK_OP_ROPE:
		return infer_rope(g, o, nd, shape);
	case ARK_OP_DECODE_ATTENTION:
		return infer_decode_attention(g, o, nd, shape);
	case ARK_OP_ARGMAX:
		return infer_argmax(g, o, nd, shape);
	case ARK_OP_DEQUANTIZE:
		if (!ark_dtype_quantized(a->dtype)) {
			diag_error(AT(o), "input '%s' of op '%s' (dequantize) is %s, expected a q4_1 or q8_0 weight",
				   a->name, o->name, dtype_name[a->dtype]);
			note_tensor(g, a);
			diag_hint("dequantize reads block-quantized weights; '%s' is already %s: read it directly", a->name,
				  dtype_name[a->dtype]);
			return -1;
		}
		break;
	default: /* unary: out has the shape of in[0] (scale, activations, softmax, copy) */
		break;
	}
	set_shape(shape, nd, a->ndim, a->shape);
	return 0;
}

/* Whether input j of an op of kind k may be int32 (token ids, masks); such an input is left out of
 * the rule that the inputs share one dtype. */
/* Whether input j of an op of kind k has a dtype of its own: embedding's ids (int32), the masks of
 * attention (in[3]) and reduce_mean (in[1]), read through their own dtype's conversion (int32 or float). */
static int int32_ok(enum ark_op_kind k, int j)
{
	return (k == ARK_OP_EMBEDDING && j == 0) || (k == ARK_OP_ATTENTION && j == 3) || (k == ARK_OP_REDUCE_MEAN && j == 1) ||
	       k == ARK_OP_ASSIGN || k == ARK_OP_ADVANCE || (k == ARK_OP_KV_APPEND && j == 2) ||
	       (k == ARK_OP_ROPE && j == 1) || (k == ARK_OP_DECODE_ATTENTION && j == 3);
}

/* Block-quantized inputs (q4_1, q8_0): matmul's b with transpose_b, embedding's table; any other
 * input of any op is an error at the op's line. */
static int check_quantized_input(const struct graph *g, const struct op *o, int j)
{
	const struct tensor *t = &g->tensors[o->in[j]];
	const char *k = op_info[o->kind].name;
	if (o->kind == ARK_OP_MATMUL && j == 1) {
		if (o->transpose_b)
			return 0;
		diag_error(AT(o), "b '%s' of op '%s' (matmul) is %s, which needs transpose_b = true", t->name, o->name,
			   dtype_name[t->dtype]);
		note_tensor(g, t);
		diag_hint("store the weight as [N, K] (blocks of 32 along K, as GGUF does) and set transpose_b = true");
		return -1;
	}
	if ((o->kind == ARK_OP_EMBEDDING && j == 1) || o->kind == ARK_OP_DEQUANTIZE)
		return 0;
	diag_error(AT(o), "input '%s' of op '%s' (%s) is %s, which %s does not take there", t->name, o->name, k,
		   dtype_name[t->dtype], k);
	note_tensor(g, t);
	diag_hint("q4_1 and q8_0 weights are read by matmul (b, with transpose_b = true), embedding (the table) and "
		  "dequantize only");
	return -1;
}

static int infer_op(struct graph *g, struct op *o)
{
	const struct op_info *oi = &op_info[o->kind];
	/* the dtype the op computes in: that of its first input that is not ids or a mask */
	int first = 0;
	while (first + 1 < o->n_in && int32_ok(o->kind, first))
		first++;
	const struct tensor *a = &g->tensors[o->in[first]];
	for (int j = 0; j < o->n_in; j++)
		if (ark_dtype_quantized(g->tensors[o->in[j]].dtype) && check_quantized_input(g, o, j))
			return -1;
	/* the dtype of the output: a's, except argmax's indices (int32) and an embedding of a quantized
	 * table: the output's declared dtype, else the model's */
	enum ark_dtype odt = o->kind == ARK_OP_ARGMAX ? ARK_INT32 : a->dtype;
	if (ark_dtype_quantized(a->dtype)) {
		const struct tensor *ot = &g->tensors[o->out[0]];
		odt = ot->dtype_given ? ot->dtype : g->dtype;
	}
	for (int j = 0; j < o->n_in; j++) {
		const struct tensor *t = &g->tensors[o->in[j]];
		ARK_ASSERT(t->ndim > 0);
		const int own_dtype = int32_ok(o->kind, j) || ark_dtype_quantized(t->dtype);
		if (!own_dtype && t->dtype == ARK_INT32) {
			diag_error(AT(o), "input '%s' of op '%s' (%s) is int32, which %s does not take there", t->name,
				   o->name, oi->name, oi->name);
			note_tensor(g, t);
			diag_hint("int32 tensors are token ids (embedding), masks and positions (rope, decode_attention); "
				  "give '%s' a float dtype", t->name);
			return -1;
		}
		if (!own_dtype && t->dtype != a->dtype) {
			diag_error(AT(o), "inputs of op '%s' (%s) have different dtypes: '%s' is %s, '%s' is %s",
				   o->name, oi->name, a->name, dtype_name[a->dtype], t->name, dtype_name[t->dtype]);
			note_tensor(g, t);
			diag_hint("all inputs of an op share one dtype; set 'dtype' on the tensors");
			return -1;
		}
		if (!(oi->flags & ARK_OPF_COMM) && t->gpu != o->gpu) {
			diag_error(AT(o), "input '%s' of op '%s' (%s) lives on gpu %d, but the op runs on gpu %d",
				   t->name, o->name, oi->name, t->gpu, o->gpu);
			note_tensor(g, t);
			diag_hint("only communication ops read other GPUs: add a copy op with gpu = %d", o->gpu);
			return -1;
		}
		if (oi->n_out == 0)
			for (int k = 0; k < j; k++)
				if (g->tensors[o->in[k]].gpu == t->gpu) {
					diag_error(AT(o), "inputs '%s' and '%s' of op '%s' (%s) both live on gpu %d, "
						   "expected one input per GPU", g->tensors[o->in[k]].name, t->name,
						   o->name, oi->name, t->gpu);
					note_tensor(g, t);
					return -1;
				}
	}
	int nd = 0;
	int64_t shape[ARK_MAX_DIMS];
	if (infer_shape(g, o, &nd, shape))
		return -1;
	for (int j = 0; j < o->n_out; j++) {
		struct tensor *t = &g->tensors[o->out[j]];
		int gpu = oi->n_out == 0 ? g->tensors[o->in[j]].gpu : o->gpu;
		if (t->gpu_given && t->gpu != gpu) {
			diag_error(AT(t), "tensor '%s' is declared on gpu %d, but op '%s' (%s) produces it on gpu %d",
				   t->name, t->gpu, o->name, oi->name, gpu);
			diag_note(AT(o), "op '%s' is defined here", o->name);
			return -1;
		}
		t->gpu = gpu;
		if (t->dtype_given && t->dtype != odt) {
			diag_error(AT(t), "tensor '%s' is declared as %s, but op '%s' (%s) produces %s", t->name,
				   dtype_name[t->dtype], o->name, oi->name, dtype_name[odt]);
			diag_note(AT(o), "op '%s' is defined here", o->name);
			return -1;
		}
		t->dtype = odt;
		if (t->shape_given) {
			char want[SHAPE_BUF];
			shape_str(want, sizeof want, nd, shape);
			if (t->ndim != nd || memcmp(t->shape, shape, sizeof(int64_t) * (size_t)nd)) {
				diag_error(AT(t), "tensor '%s' is declared with shape %s, but op '%s' (%s) produces %s",
					   t->name, shp(t), o->name, oi->name, want);
				diag_note(AT(o), "op '%s' is defined here", o->name);
				return -1;
			}
		} else {
			set_shape(t->shape, &t->ndim, nd, shape);
		}
		if (check_size(g, t))
			return -1;
	}
	return 0;
}

/* ---- views ------------------------------------------------------------------------------------ */

static const char *role_text(const struct tensor *t)
{
	return t->role == ARK_ROLE_INPUT ? "an input" : t->role == ARK_ROLE_WEIGHT ? "a weight"
	     : t->role == ARK_ROLE_STATE ? "a state" : "an activation";
}

/* Why input x (index j) of concat o cannot be placed inside o's output (NULL: it can): it must be an
 * activation or output that an op of this model (not a communication op) produces, alias nothing yet
 * and be named once. */
static const char *concat_refusal(const struct graph *g, const struct op *o, int j, char *buf, size_t n)
{
	const struct tensor *x = &g->tensors[o->in[j]];
	for (int k = 0; k < j; k++)
		if (o->in[k] == o->in[j]) {
			snprintf(buf, n, "'%s' is named twice", x->name);
			return buf;
		}
	if (x->role == ARK_ROLE_INPUT || x->role == ARK_ROLE_WEIGHT || x->role == ARK_ROLE_STATE) {
		snprintf(buf, n, "'%s' is %s of the model, whose bytes are its own", x->name, role_text(x));
		return buf;
	}
	if (x->view_of >= 0) {
		snprintf(buf, n, "'%s' is already a view of '%s'", x->name, g->tensors[x->view_of].name);
		return buf;
	}
	if (x->producer >= 0 && (op_info[g->ops[x->producer].kind].flags & ARK_OPF_COMM)) {
		snprintf(buf, n, "'%s' is received from another GPU by op '%s'", x->name, g->ops[x->producer].name);
		return buf;
	}
	return NULL;
}

/* Elements of t from dimension d on (its rows of dimension d - 1 and up are blocks of this many). */
static int64_t inner_elems(const struct tensor *t, int d)
{
	int64_t n = 1;
	for (int i = d; i < t->ndim; i++)
		n *= t->shape[i];
	return n;
}

static int64_t outer_elems(const struct tensor *t, int d)
{
	int64_t n = 1;
	for (int i = 0; i < d; i++)
		n *= t->shape[i];
	return n;
}

/* A view op whose result cannot alias its input (a concat: its inputs the output): a copy when the
 * op says copy = true, else an error that says why and gives the hint. */
static int need_copy(struct graph *g, struct op *o, const char *why)
{
	if (o->copy) {
		o->copied = 1;
		return 0;
	}
	diag_error(AT(o), "op '%s' (%s) cannot be a view: %s", o->name, op_info[o->kind].name, why);
	diag_hint("add copy = true; to copy the elements instead");
	return -1;
}

/* Decides, per view op in the graph's order, whether it is a view (sets view_of / view_off of the
 * tensor that aliases: the output, or for concat its inputs) or a copy (copied). */
static int plan_views(struct graph *g)
{
	char why[400];
	for (int k = 0; k < g->n_ops; k++) {
		struct op *o = &g->ops[g->order[k]];
		o->copied = 0;
		if (o->kind == ARK_OP_KV_APPEND) { /* its result is the cache after the write: the same bytes */
			g->tensors[o->out[0]].view_of = o->in[0];
			g->tensors[o->out[0]].view_off = 0;
			continue;
		}
		if (!(op_info[o->kind].flags & ARK_OPF_VIEW))
			continue;
		const struct tensor *a = &g->tensors[o->in[0]];
		struct tensor *out = &g->tensors[o->out[0]];
		switch (o->kind) {
		case ARK_OP_RESHAPE:
			out->view_of = o->in[0];
			out->view_off = 0;
			break;
		case ARK_OP_SLICE:
			if (outer_elems(a, o->axis) == 1 || (o->start == 0 && o->end == a->shape[o->axis])) {
				out->view_of = o->in[0];
				out->view_off = o->start * inner_elems(a, o->axis + 1);
				break;
			}
			snprintf(why, sizeof why, "elements %lld..%lld of axis %d of '%s' (shape %s) are not contiguous "
				 "(a dimension before axis %d is larger than 1)", (long long)o->start, (long long)o->end,
				 o->axis, a->name, shp(a), o->axis);
			if (need_copy(g, o, why))
				return -1;
			break;
		case ARK_OP_TRANSPOSE: {
			int lo = o->dims[0] < o->dims[1] ? o->dims[0] : o->dims[1];
			int hi = o->dims[0] ^ o->dims[1] ^ lo, big = 0;
			for (int d = lo; d <= hi; d++)
				big += a->shape[d] > 1;
			if (big <= 1) { /* the elements keep their order */
				out->view_of = o->in[0];
				out->view_off = 0;
				break;
			}
			snprintf(why, sizeof why, "swapping axes %d and %d of '%s' (shape %s) reorders its elements",
				 o->dims[0], o->dims[1], a->name, shp(a));
			if (need_copy(g, o, why))
				return -1;
			break;
		}
		case ARK_OP_CONCAT: {
			const char *no = NULL;
			if (outer_elems(out, o->axis) != 1)
				snprintf(why, sizeof why, "the inputs would not be contiguous blocks of '%s' (shape %s): a "
					 "dimension before axis %d is larger than 1", out->name, shp(out), o->axis), no = why;
			for (int j = 0; j < o->n_in && !no; j++) {
				char r[300];
				if (concat_refusal(g, o, j, r, sizeof r))
					snprintf(why, sizeof why, "its input %s", r), no = why;
			}
			if (no) {
				if (need_copy(g, o, no))
					return -1;
				break;
			}
			int64_t at = 0;
			for (int j = 0; j < o->n_in; j++) {
				struct tensor *x = &g->tensors[o->in[j]];
				x->view_of = o->out[0];
				x->view_off = at;
				at += (int64_t)tensor_elems(x);
			}
			break;
		}
		default:
			ARK_ASSERT(!"view op without a plan");
		}
	}
	/* A model output that aliases an input or a weight would be computed by nothing. */
	for (int t = 0; t < g->n_tensors; t++) {
		const struct tensor *v = &g->tensors[t];
		if (v->role != ARK_ROLE_OUTPUT || v->view_of < 0)
			continue;
		int b = graph_view_base(g, t, NULL);
		const struct tensor *B = &g->tensors[b];
		if (B->role == ARK_ROLE_STATE) {
			/* the host reads outputs after the iteration: a view of a state shows the iteration's
			 * last value of it, which is the view's only through the result of kv_append */
			int u = t, appended = 0;
			while (u != b && !appended) {
				appended = g->tensors[u].producer >= 0 && g->ops[g->tensors[u].producer].kind == ARK_OP_KV_APPEND;
				u = g->tensors[u].view_of;
			}
			if (appended)
				continue;
			const struct op *p = &g->ops[v->producer];
			diag_error(AT(p), "output '%s' of op '%s' (%s) would be a view of state '%s', which the host reads "
				   "after the iteration", v->name, p->name, op_info[p->kind].name, B->name);
			diag_hint("read a state with the binary's --state-out; or compute the output from it (an op that "
				  "copies)");
			return -1;
		}
		if (B->role == ARK_ROLE_INPUT || B->role == ARK_ROLE_WEIGHT) {
			const struct op *p = &g->ops[v->producer];
			diag_error(AT(p), "output '%s' of op '%s' (%s) would be a view of %s '%s': nothing computes it",
				   v->name, p->name, op_info[p->kind].name, B->role == ARK_ROLE_INPUT ? "input" : "weight",
				   B->name);
			diag_hint("outputs are computed by the model; read '%s' from the %s file instead", B->name,
				  B->role == ARK_ROLE_INPUT ? "inputs" : "weights");
			return -1;
		}
	}
	return 0;
}

int graph_view_base(const struct graph *g, int t, int64_t *off)
{
	int64_t o = 0;
	while (g->tensors[t].view_of >= 0) {
		o += g->tensors[t].view_off;
		t = g->tensors[t].view_of;
	}
	if (off)
		*off = o;
	return t;
}

/* The top-level `token`: an int32 [1] state, the token the generation loop feeds step to step. */
static int check_token(struct graph *g)
{
	g->token = -1;
	if (!g->token_name)
		return 0;
	int t = graph_find_tensor(g, g->token_name);
	if (t < 0 || !g->tensors[t].declared) {
		diag_error(g->file, g->token_line, "'token' is \"%s\", which is not a declared tensor", g->token_name);
		diag_hint("declare it: { name = \"%s\"; shape = [1]; role = \"state\"; dtype = \"int32\"; }",
			  g->token_name);
		return -1;
	}
	const struct tensor *T = &g->tensors[t];
	if (T->role != ARK_ROLE_STATE || T->dtype != ARK_INT32 || tensor_elems(T) != 1) {
		diag_error(g->file, g->token_line, "'token' is '%s', %s %s %s; expected an int32 [1] state", T->name,
			   role_text(T), dtype_name[T->dtype], shp(T));
		diag_note(AT(T), "'%s' is declared here", T->name);
		diag_hint("the generation loop writes the prompt's ids into it and reads the model's next token from "
			  "it: give it shape = [1]; role = \"state\"; dtype = \"int32\";");
		return -1;
	}
	g->token = t;
	return 0;
}

int graph_check(struct graph *g)
{
	if (check_basic(g) || resolve(g) || check_state_ops(g) || check_token(g) || order_ops(g))
		return -1;
	for (int i = 0; i < g->n_ops; i++)
		if (infer_op(g, &g->ops[g->order[i]]))
			return -1;
	if (plan_views(g))
		return -1;
	for (int i = 0; i < g->n_tensors; i++) {
		const struct tensor *t = &g->tensors[i];
		if (t->n_readers == 0 && t->role != ARK_ROLE_OUTPUT)
			diag_warning(AT(t), "%s '%s' is never read and is not an output", role_name[t->role],
				     t->name);
	}
	return 0;
}

/* ---- dumps ------------------------------------------------------------------------------------ */

static void print_size(FILE *f, uint64_t b)
{
	if (b >= (1ull << 30))
		fprintf(f, "%.1f GiB", (double)b / (1ull << 30));
	else if (b >= (1ull << 20))
		fprintf(f, "%.1f MiB", (double)b / (1ull << 20));
	else if (b >= 1024)
		fprintf(f, "%.1f KiB", (double)b / 1024);
	else
		fprintf(f, "%" PRIu64 " B", b);
}

static int op_at(const struct graph *g, int i)
{
	return g->order ? g->order[i] : i;
}

static void dump_attrs(const struct op *o, FILE *f)
{
	unsigned m = op_info[o->kind].attrs;
	for (int a = 0; a < ARK_ATTR__COUNT; a++) {
		if (!(m & (1u << a)))
			continue;
		fprintf(f, "      %s = ", attr_name[a]);
		switch (a) {
		case ARK_ATTR_TRANSPOSE_B: fprintf(f, "%s", o->transpose_b ? "true" : "false"); break;
		case ARK_ATTR_FACTOR: fprintf(f, "%g", o->factor); break;
		case ARK_ATTR_EPS: fprintf(f, "%g", o->eps); break;
		case ARK_ATTR_AXIS: fprintf(f, "%d", o->axis); break;
		case ARK_ATTR_TRANSPORT: fprintf(f, "\"%s\"", transport_name[o->transport]); break;
		case ARK_ATTR_APPROXIMATE: fprintf(f, "\"%s\"", o->kind == ARK_OP_GELU_TANH ? "tanh" : "none"); break;
		case ARK_ATTR_HEADS: fprintf(f, "%d", o->heads); break;
		case ARK_ATTR_KV_HEADS: fprintf(f, "%d", o->kv_heads); break;
		case ARK_ATTR_SCALE: fprintf(f, "%g", o->scale); break;
		case ARK_ATTR_CAUSAL: fprintf(f, "%s", o->causal ? "true" : "false"); break;
		case ARK_ATTR_SHAPE:
			for (int i = 0; i < o->n_shape; i++)
				fprintf(f, "%s%lld", i ? ", " : "[", (long long)o->shape[i]);
			fprintf(f, "]");
			break;
		case ARK_ATTR_START: fprintf(f, "%lld", (long long)o->start); break;
		case ARK_ATTR_END: fprintf(f, "%lld", (long long)o->end); break;
		case ARK_ATTR_DIMS: fprintf(f, "[%d, %d]", o->dims[0], o->dims[1]); break;
		case ARK_ATTR_COPY: fprintf(f, "%s", o->copy ? "true" : "false"); break;
		case ARK_ATTR_BY: fprintf(f, "%lld", (long long)o->by); break;
		case ARK_ATTR_HEAD_DIM: fprintf(f, "%d", o->head_dim); break;
		case ARK_ATTR_BASE: fprintf(f, "%g", o->base); break;
		case ARK_ATTR_ROTARY_DIM: fprintf(f, "%d", o->rotary_dim); break;
		case ARK_ATTR_STYLE: fprintf(f, "\"%s\"", o->style ? "interleaved" : "half"); break;
		default: ARK_ASSERT(!"attribute without a dump");
		}
		fprintf(f, "%s\n", o->attrs_given & (1u << a) ? "" : "  (default)");
	}
}

void graph_dump(const struct graph *g, FILE *f)
{
	int w = 4;
	for (int i = 0; i < g->n_tensors; i++)
		if ((int)strlen(g->tensors[i].name) > w)
			w = (int)strlen(g->tensors[i].name);
	fprintf(f, "graph %s (%s): %d ops, %d tensors, %d GPU%s, default dtype %s\n", g->name ? g->name : "?",
		g->file ? g->file : "?", g->n_ops, g->n_tensors, g->gpus, g->gpus == 1 ? "" : "s", dtype_name[g->dtype]);
	fprintf(f, "\ntensors:\n");
	for (int i = 0; i < g->n_tensors; i++) {
		const struct tensor *t = &g->tensors[i];
		fprintf(f, "  %-*s  %-22s %s  %-10s gpu %d  ", w, t->name, shp(t), dtype_name[t->dtype],
			role_name[t->role], t->gpu);
		print_size(f, tensor_bytes(t));
		fprintf(f, "  line %d%s%s", t->line, t->file ? " of " : "", t->file ? t->file : "");
		if (t->producer >= 0)
			fprintf(f, "  from op '%s'", g->ops[t->producer].name);
		if (t->view_of >= 0)
			fprintf(f, "  view of '%s' from element %lld", g->tensors[t->view_of].name, (long long)t->view_off);
		fprintf(f, ", %d reader%s\n", t->n_readers, t->n_readers == 1 ? "" : "s");
	}
	fprintf(f, "\nops%s:\n", g->order ? " in topological order" : " (unchecked, in file order)");
	for (int i = 0; i < g->n_ops; i++) {
		const struct op *o = &g->ops[op_at(g, i)];
		fprintf(f, "  %d. %s = %s  gpu %d  line %d%s%s\n", i, o->name, op_info[o->kind].name, o->gpu, o->line,
			o->file ? " of " : "", o->file ? o->file : "");
		for (int j = 0; j < o->n_in; j++) {
			const struct tensor *t = &g->tensors[o->in[j]];
			fprintf(f, "      in  %-*s  %s %s gpu %d\n", w, t->name, shp(t), dtype_name[t->dtype], t->gpu);
		}
		for (int j = 0; j < o->n_out; j++) {
			const struct tensor *t = &g->tensors[o->out[j]];
			fprintf(f, "      out %-*s  %s %s gpu %d\n", w, t->name, shp(t), dtype_name[t->dtype], t->gpu);
		}
		dump_attrs(o, f);
	}
}

void graph_dot(const struct graph *g, FILE *f)
{
	fprintf(f, "digraph \"%s\" {\n", g->name ? g->name : "model");
	fprintf(f, "\trankdir=TB;\n\tnode [fontname=\"monospace\", fontsize=10];\n");
	for (int gpu = 0; gpu < g->gpus; gpu++) {
		if (g->gpus > 1)
			fprintf(f, "\tsubgraph cluster_gpu%d {\n\tlabel=\"gpu %d\";\n", gpu, gpu);
		for (int i = 0; i < g->n_tensors; i++) {
			const struct tensor *t = &g->tensors[i];
			if (t->gpu != gpu)
				continue;
			const char *style = t->role == ARK_ROLE_INPUT	 ? ", style=filled, fillcolor=\"#d8f0d8\""
					    : t->role == ARK_ROLE_WEIGHT ? ", style=filled, fillcolor=\"#eeeeee\""
					    : t->role == ARK_ROLE_OUTPUT ? ", style=filled, fillcolor=\"#f8e0c0\""
									 : "";
			fprintf(f, "\t\"t_%s\" [shape=ellipse%s, label=\"%s\\n%s %s\"];\n", t->name, style, t->name,
				shp(t), dtype_name[t->dtype]);
		}
		for (int i = 0; i < g->n_ops; i++) {
			const struct op *o = &g->ops[op_at(g, i)];
			if (o->gpu == gpu)
				fprintf(f, "\t\"op_%s\" [shape=box, style=\"filled,rounded\", fillcolor=\"#cfe0f8\", "
					"label=\"%s\\n%s\"];\n", o->name, o->name, op_info[o->kind].name);
		}
		if (g->gpus > 1)
			fprintf(f, "\t}\n");
	}
	for (int i = 0; i < g->n_ops; i++) {
		const struct op *o = &g->ops[op_at(g, i)];
		for (int j = 0; j < o->n_in; j++)
			fprintf(f, "\t\"t_%s\" -> \"op_%s\";\n", g->tensors[o->in[j]].name, o->name);
		for (int j = 0; j < o->n_out; j++)
			fprintf(f, "\t\"op_%s\" -> \"t_%s\";\n", o->name, g->tensors[o->out[j]].name);
	}
	fprintf(f, "}\n");
}
