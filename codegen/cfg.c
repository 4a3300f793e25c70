/* cfg.c: the model-file reader: libconfig text -> struct graph, checking the type and value of every
 * setting against shared/spec/model-cfg.md. Cross-references (producers, shapes) are graph.c's job. */
#include "graph.h"
#include "diag.h"
#include "source.h"

#include <errno.h>
#include <float.h>
#include <libconfig.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The type of each attribute a model file may give, from ATTR_LIST. */
enum attr_type { AT_BOOL, AT_FLOAT, AT_INT, AT_STRING, AT_INTS };
static const enum attr_type attr_type[ARK_ATTR__COUNT] = {
#define X(id, nm, type) [ARK_ATTR_##id] = AT_##type,
	ATTR_LIST(X)
#undef X
};

static const char *const top_keys[] = { "version", "name", "dtype", "gpus", "tensors", "ops", "token" };
static const char *const tensor_keys[] = { "name", "shape", "role", "dtype", "gpu" };
static const char *const op_keys[] = { "name", "op", "in", "out", "gpu" };
/* Ops that later format versions will add under these names. */
static const char *const planned_ops[] = { "split", "conv2d" };
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

struct reader {
	struct graph *g;
	const struct source *src; /* the text libconfig read, and where each of its lines comes from */
};

/* The name of file k of the source: the model, or an included file (kept by the graph). */
static const char *file_name(const struct reader *r, int k)
{
	return k ? r->g->files[k - 1] : r->g->file;
}

/* Where setting s was written: its file and its line in that file. (The line is read from the
 * setting itself: config_setting_source_line cuts it to 16 bits.) */
static int line_of(const struct reader *r, const config_setting_t *s)
{
	int k, line;
	source_where(r->src, s ? s->line : 0, &k, &line);
	return line;
}

static const char *file_of(const struct reader *r, const config_setting_t *s)
{
	int k, line;
	source_where(r->src, s ? s->line : 0, &k, &line);
	return file_name(r, k);
}

/* The `file` of a tensor or op written at s: NULL for the model file itself. */
static const char *file_ref(const struct reader *r, const config_setting_t *s)
{
	const char *f = file_of(r, s);
	return f == r->g->file ? NULL : f;
}

/* Where s was written, as the first two arguments of diag_*. */
#define AT(s) file_of(r, s), line_of(r, s)

static const char *type_desc(const config_setting_t *s)
{
	switch (config_setting_type(s)) {
	case CONFIG_TYPE_GROUP: return "a group";
	case CONFIG_TYPE_INT: return "an integer";
	case CONFIG_TYPE_INT64: return "a 64-bit integer";
	case CONFIG_TYPE_FLOAT: return "a float";
	case CONFIG_TYPE_STRING: return "a string";
	case CONFIG_TYPE_BOOL: return "a boolean";
	case CONFIG_TYPE_ARRAY: return "an array";
	case CONFIG_TYPE_LIST: return "a list";
	default: return "nothing";
	}
}

static int is_int(const config_setting_t *s)
{
	int t = config_setting_type(s);
	return t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64;
}

static int is_ident(const char *s)
{
	if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
		return 0;
	for (s++; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return 0;
	return 1;
}

/* A tensor or op name: an identifier that may also hold dots after its first character, so that a
 * checkpoint's names (encoder.layer.0.attention.self.query.weight) can be kept as they are. The
 * emitter maps the dots to '_' where a name becomes a C identifier (c_identifiers). */
#define NAME_PATTERN "[A-Za-z_][A-Za-z0-9_.]*"
static int is_name(const char *s)
{
	if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_'))
		return 0;
	for (s++; *s; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' ||
		      *s == '.'))
			return 0;
	return 1;
}

/* Edit distance, capped: enough to suggest 'shape' for 'shap'. */
static int edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 32 || lb > 32)
		return 99;
	int d[33][33];
	for (size_t i = 0; i <= la; i++)
		d[i][0] = (int)i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = (int)j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			int c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < c)
				c = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < c)
				c = d[i][j - 1] + 1;
			d[i][j] = c;
		}
	return d[la][lb];
}

/* The name in names[] closest to s, if it is a likely typo of it; NULL otherwise. */
static const char *closest(const char *s, const char *const *names, int n)
{
	const char *best = NULL;
	int bd = 3;
	for (int i = 0; i < n; i++) {
		if (!names[i])
			continue;
		int d = edit_distance(s, names[i]);
		if (d < bd) {
			bd = d;
			best = names[i];
		}
	}
	return best;
}

static void hint_closest(const char *s, const char *const *names, int n)
{
	const char *c = closest(s, names, n);
	if (c)
		diag_hint("did you mean '%s'?", c);
}

/* Hint listing every op of the catalog: "the ops of version 1 are matmul, add, ... and all_gather". */
static void hint_ops(void)
{
	char buf[512];
	size_t n = 0;
	for (int k = 0; k < ARK_OP__COUNT && n < sizeof buf; k++)
		n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", k == 0 ? "" : k + 1 < ARK_OP__COUNT ? ", " : " and ",
				      op_info[k].name);
	diag_hint("the ops of version 1 are %s", buf);
}

/* A string setting, or an error naming `what`. */
static int get_string(struct reader *r, const config_setting_t *s, const char *what, const char **out)
{
	if (config_setting_type(s) != CONFIG_TYPE_STRING) {
		diag_error(AT(s), "%s must be a string, found %s", what, type_desc(s));
		return -1;
	}
	*out = config_setting_get_string(s);
	return 0;
}

static int get_int(struct reader *r, const config_setting_t *s, const char *what, int64_t *out)
{
	if (!is_int(s)) {
		diag_error(AT(s), "%s must be an integer, found %s", what, type_desc(s));
		return -1;
	}
	*out = config_setting_get_int64(s);
	return 0;
}

/* The 'gpu' of a tensor or op (what: "tensor" or "op"), checked against 'gpus' as written. */
static int get_gpu(struct reader *r, const config_setting_t *s, const char *what, const char *name, int *out)
{
	char desc[300];
	int64_t v;
	snprintf(desc, sizeof desc, "'gpu' of %s '%s'", what, name);
	if (get_int(r, s, desc, &v))
		return -1;
	if (v < 0 || v >= r->g->gpus) {
		if (r->g->gpus == 1)
			diag_error(AT(s), "%s is %lld, expected 0 (the model has one GPU)", desc, (long long)v);
		else
			diag_error(AT(s), "%s is %lld, expected 0 to %d", desc, (long long)v, r->g->gpus - 1);
		diag_hint("the model has gpus = %d; raise 'gpus' or change the %s's 'gpu'", r->g->gpus, what);
		return -1;
	}
	*out = (int)v;
	return 0;
}

/* A dtype: one ops compute in, or (allow_int, a tensor's) int32 too. */
static int get_dtype(struct reader *r, const config_setting_t *s, const char *what, int allow_int, enum ark_dtype *out)
{
	const char *v;
	int n = allow_int ? ARK_DTYPE__COUNT : ARK_FLOAT_DTYPES;
	if (get_string(r, s, what, &v))
		return -1;
	for (int i = 0; i < n; i++)
		if (!strcmp(v, dtype_name[i])) {
			*out = (enum ark_dtype)i;
			return 0;
		}
	if (allow_int) {
		diag_error(AT(s), "%s is \"%s\", expected \"fp16\", \"bf16\", \"fp32\", \"int32\", \"q4_1\" or \"q8_0\"",
			   what, v);
	} else {
		diag_error(AT(s), "%s is \"%s\", expected \"fp16\", \"bf16\" or \"fp32\"", what, v);
		if (!strcmp(v, "int32")) {
			diag_hint("int32 is for tensors of role input or weight (token ids, masks): give it their 'dtype'");
			return -1;
		}
		if (!strcmp(v, "q4_1") || !strcmp(v, "q8_0")) {
			diag_hint("%s is for weights (matmul's b with transpose_b, embedding tables): give it their 'dtype'", v);
			return -1;
		}
	}
	hint_closest(v, dtype_name, n);
	return -1;
}

static int key_index(const char *name, const char *const *keys, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(name, keys[i]))
			return i;
	return -1;
}

/* Arrays grow to 8, 16, 32, ... elements: is an array of n elements full? */
static int grow_at(int n)
{
	return n == 0 || (n >= 8 && (n & (n - 1)) == 0);
}

static int add_tensor(struct graph *g, const char *name, const char *file, int line)
{
	if (grow_at(g->n_tensors))
		g->tensors = xrealloc(g->tensors, sizeof(*g->tensors) * (size_t)(g->n_tensors ? 2 * g->n_tensors : 8));
	struct tensor *t = &g->tensors[g->n_tensors];
	memset(t, 0, sizeof *t);
	t->name = xstrdup(name);
	t->file = file;
	t->line = line;
	t->dtype = g->dtype;
	t->role = ARK_ROLE_ACTIVATION;
	t->producer = -1;
	return g->n_tensors++;
}

static int add_op(struct graph *g, const char *name, const char *file, int line)
{
	if (grow_at(g->n_ops))
		g->ops = xrealloc(g->ops, sizeof(*g->ops) * (size_t)(g->n_ops ? 2 * g->n_ops : 8));
	struct op *o = &g->ops[g->n_ops];
	memset(o, 0, sizeof *o);
	o->name = xstrdup(name);
	o->file = file;
	o->line = line;
	o->axis = -1;
	o->transport = ARK_TR_AUTO;
	return g->n_ops++;
}

/* ---- tensors ---------------------------------------------------------------------------------- */

static int read_shape(struct reader *r, const config_setting_t *s, struct tensor *t)
{
	if (config_setting_type(s) != CONFIG_TYPE_ARRAY) {
		diag_error(AT(s), "'shape' of tensor '%s' must be an array of integers like [8, 1024], found %s",
			   t->name, type_desc(s));
		return -1;
	}
	int n = config_setting_length(s);
	if (n < 1 || n > ARK_MAX_DIMS) {
		diag_error(AT(s), "'shape' of tensor '%s' has %d dimensions, expected 1 to %d", t->name, n,
			   ARK_MAX_DIMS);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
		if (!is_int(e)) {
			diag_error(AT(s), "'shape' of tensor '%s' must hold integers, found %s", t->name,
				   type_desc(e));
			return -1;
		}
		int64_t v = config_setting_get_int64(e);
		if (v < 1) {
			diag_error(AT(s), "'shape' of tensor '%s' has %lld in dimension %d, expected at least 1",
				   t->name, (long long)v, i);
			return -1;
		}
		t->shape[i] = v;
	}
	t->ndim = n;
	t->shape_given = 1;
	return 0;
}

static int read_role(struct reader *r, const config_setting_t *s, struct tensor *t)
{
	static const char *const user_roles[] = { "activation", "input", "weight", "output", "state" };
	static const enum ark_role role_of[] = { ARK_ROLE_ACTIVATION, ARK_ROLE_INPUT, ARK_ROLE_WEIGHT,
						 ARK_ROLE_OUTPUT, ARK_ROLE_STATE };
	const char *v;
	char what[300];
	snprintf(what, sizeof what, "'role' of tensor '%s'", t->name);
	if (get_string(r, s, what, &v))
		return -1;
	int i = key_index(v, user_roles, COUNT(user_roles));
	if (i < 0) {
		diag_error(AT(s),
			   "'role' of tensor '%s' is \"%s\", expected \"input\", \"weight\", \"output\", \"state\" or "
			   "\"activation\"", t->name, v);
		hint_closest(v, user_roles, COUNT(user_roles));
		return -1;
	}
	t->role = role_of[i];
	t->role_given = 1;
	return 0;
}

static int read_tensor(struct reader *r, const config_setting_t *s, int index)
{
	struct graph *g = r->g;
	if (config_setting_type(s) != CONFIG_TYPE_GROUP) {
		diag_error(AT(s), "element %d of 'tensors' must be a group { name = ...; }, found %s", index + 1,
			   type_desc(s));
		return -1;
	}
	const config_setting_t *ns = config_setting_get_member(s, "name");
	const char *name;
	if (!ns) {
		diag_error(AT(s), "tensor %d has no 'name'", index + 1);
		diag_hint("every tensor needs name = \"...\";");
		return -1;
	}
	if (get_string(r, ns, "'name' of a tensor", &name))
		return -1;
	if (!is_name(name)) {
		diag_error(AT(ns), "tensor name \"%s\" is not a name " NAME_PATTERN, name);
		return -1;
	}
	int prev = graph_find_tensor(g, name);
	if (prev >= 0) {
		diag_error(AT(ns), "duplicate tensor name '%s'", name);
		diag_note(graph_file_of(g, g->tensors[prev].file), g->tensors[prev].line, "'%s' was first declared here", name);
		return -1;
	}
	int ti = add_tensor(g, name, file_ref(r, s), line_of(r, s)); /* may move g->tensors */
	struct tensor *t = &g->tensors[ti];
	t->declared = 1;
	char what[300];
	for (int i = 0; i < config_setting_length(s); i++) {
		const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
		const char *key = config_setting_name(e);
		switch (key_index(key, tensor_keys, COUNT(tensor_keys))) {
		case 0: /* name */
			break;
		case 1:
			if (read_shape(r, e, t))
				return -1;
			break;
		case 2:
			if (read_role(r, e, t))
				return -1;
			break;
		case 3:
			snprintf(what, sizeof what, "'dtype' of tensor '%s'", t->name);
			if (get_dtype(r, e, what, 1, &t->dtype))
				return -1;
			t->dtype_given = 1;
			break;
		case 4:
			if (get_gpu(r, e, "tensor", t->name, &t->gpu))
				return -1;
			t->gpu_given = 1;
			break;
		default:
			diag_error(AT(e), "unknown setting '%s' in tensor '%s'", key, t->name);
			if (!closest(key, tensor_keys, COUNT(tensor_keys)))
				diag_hint("a tensor takes name, shape, role, dtype and gpu");
			hint_closest(key, tensor_keys, COUNT(tensor_keys));
			return -1;
		}
	}
	return 0;
}

/* ---- ops -------------------------------------------------------------------------------------- */

/* Index of the tensor called `name`, declared or not; an undeclared one becomes an activation. */
static int tensor_ref(struct reader *r, const char *name, const struct op *o)
{
	int t = graph_find_tensor(r->g, name);
	return t >= 0 ? t : add_tensor(r->g, name, o->file, o->line);
}

/* `in` (array of strings) or `out` (string or array of strings) into idx[]. */
static int read_names(struct reader *r, const config_setting_t *s, struct op *o, const char *key, int single_ok,
		      int *idx, int *n_out)
{
	int type = config_setting_type(s);
	int n;
	if (single_ok && type == CONFIG_TYPE_STRING) {
		n = 1;
	} else if (type == CONFIG_TYPE_ARRAY) {
		n = config_setting_length(s);
	} else {
		diag_error(AT(s), "'%s' of op '%s' must be %san array of tensor names like [\"x\"], found %s",
			   key, o->name, single_ok ? "a tensor name or " : "", type_desc(s));
		return -1;
	}
	if (n == 0) {
		diag_error(AT(s), "'%s' of op '%s' is empty", key, o->name);
		return -1;
	}
	if (n > ARK_MAX_IO) {
		diag_error(AT(s), "'%s' of op '%s' names %d tensors, at most %d are supported", key,
			   o->name, n, ARK_MAX_IO);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		const config_setting_t *e = type == CONFIG_TYPE_STRING ? s : config_setting_get_elem(s, (unsigned)i);
		if (config_setting_type(e) != CONFIG_TYPE_STRING) {
			diag_error(AT(s), "'%s' of op '%s' must hold tensor names (strings), found %s", key,
				   o->name, type_desc(e));
			return -1;
		}
		const char *name = config_setting_get_string(e);
		if (!is_name(name)) {
			diag_error(AT(s), "tensor name \"%s\" in '%s' of op '%s' is not a name " NAME_PATTERN, name,
				   key, o->name);
			return -1;
		}
		idx[i] = tensor_ref(r, name, o);
	}
	*n_out = n;
	return 0;
}

/* "transpose_b, eps" for a mask of attributes, "none" for no attribute. */
static const char *attr_list(unsigned mask)
{
	static char list[200];
	list[0] = 0;
	for (int i = 0; i < ARK_ATTR__COUNT; i++)
		if (mask & (1u << i)) {
			strcat(list, *list ? ", " : "");
			strcat(list, attr_name[i]);
		}
	return *list ? list : "none";
}

static int read_attr(struct reader *r, const config_setting_t *s, struct op *o, int a)
{
	const char *key = attr_name[a];
	const char *kind = op_info[o->kind].name;
	int type = config_setting_type(s);
	if (!(op_info[o->kind].attrs & (1u << a))) {
		diag_error(AT(s), "op '%s' (%s) has no attribute '%s'", o->name, kind, key);
		if (!op_info[o->kind].attrs)
			diag_hint("%s takes no attributes", kind);
		else
			diag_hint("%s takes: %s", kind, attr_list(op_info[o->kind].attrs));
		return -1;
	}
	const char *v;
	int ti;
	switch (attr_type[a]) {
	case AT_BOOL:
		if (type != CONFIG_TYPE_BOOL) {
			diag_error(AT(s), "'%s' of op '%s' must be a boolean (true or false), found %s", key,
				   o->name, type_desc(s));
			return -1;
		}
		if (a == ARK_ATTR_CAUSAL)
			o->causal = config_setting_get_bool(s);
		else if (a == ARK_ATTR_COPY)
			o->copy = config_setting_get_bool(s);
		else {
			ARK_ASSERT(a == ARK_ATTR_TRANSPOSE_B);
			o->transpose_b = config_setting_get_bool(s);
		}
		break;
	case AT_FLOAT: {
		double d;
		if (type == CONFIG_TYPE_FLOAT)
			d = config_setting_get_float(s);
		else if (is_int(s))
			d = (double)config_setting_get_int64(s);
		else {
			diag_error(AT(s), "'%s' of op '%s' must be a number, found %s", key, o->name,
				   type_desc(s));
			return -1;
		}
		if (!isfinite(d) || (a == ARK_ATTR_EPS && d <= 0)) {
			diag_error(AT(s), "'%s' of op '%s' is %g, expected a %snumber", key, o->name, d,
				   a == ARK_ATTR_EPS ? "positive " : "finite ");
			return -1;
		}
		/* The kernels get it as a float: it must be one, finite and (unless 0) normal. Doubles from
		 * FLT_MAX + half an ulp up round to infinity. */
		if (fabs(d) >= 0x1.ffffffp+127) {
			diag_error(AT(s), "'%s' of op '%s' is %g, expected a number that fits in a float (at most %g in size)",
				   key, o->name, d, (double)FLT_MAX);
			return -1;
		}
		if (d != 0 && fabsf((float)d) < FLT_MIN) {
			if (a == ARK_ATTR_EPS)
				diag_error(AT(s), "'%s' of op '%s' is %g, expected a positive number of at least %g (the smallest "
					   "normal float)", key, o->name, d, (double)FLT_MIN);
			else
				diag_error(AT(s), "'%s' of op '%s' is %g, expected 0 or a number of at least %g in size (the "
					   "smallest normal float)", key, o->name, d, (double)FLT_MIN);
			return -1;
		}
		if (a == ARK_ATTR_SCALE && d == 0) {
			diag_error(AT(s), "'scale' of op '%s' is 0, expected a nonzero number", o->name);
			diag_hint("leave 'scale' out for the default, 1/sqrt(head size)");
			return -1;
		}
		if (a == ARK_ATTR_BASE && d <= 0) {
			diag_error(AT(s), "'base' of op '%s' is %g, expected a positive number", o->name, d);
			diag_hint("Llama uses base = 10000.0 (Llama 3: 500000.0)");
			return -1;
		}
		if (a == ARK_ATTR_FACTOR)
			o->factor = d;
		else if (a == ARK_ATTR_BASE)
			o->base = d;
		else if (a == ARK_ATTR_SCALE)
			o->scale = d;
		else
			o->eps = d;
		break;
	}
	case AT_INT: {
		int64_t iv;
		char what[300];
		snprintf(what, sizeof what, "'%s' of op '%s'", key, o->name);
		if (get_int(r, s, what, &iv))
			return -1;
		if (a == ARK_ATTR_HEADS || a == ARK_ATTR_KV_HEADS) {
			if (iv < 1 || iv > 65535) {
				diag_error(AT(s), "%s is %lld, expected a number of heads from 1 to 65535", what,
					   (long long)iv);
				return -1;
			}
			*(a == ARK_ATTR_HEADS ? &o->heads : &o->kv_heads) = (int)iv;
			break;
		}
		if (a == ARK_ATTR_HEAD_DIM || a == ARK_ATTR_ROTARY_DIM) { /* graph_check checks them against x */
			if (iv < 1 || iv > 65536) {
				diag_error(AT(s), "%s is %lld, expected a size from 1 to 65536", what, (long long)iv);
				return -1;
			}
			*(a == ARK_ATTR_HEAD_DIM ? &o->head_dim : &o->rotary_dim) = (int)iv;
			break;
		}
		if (a == ARK_ATTR_START || a == ARK_ATTR_END) { /* graph_check checks them against the shape */
			if (iv < -INT64_MAX / 2 || iv > INT64_MAX / 2) {
				diag_error(AT(s), "%s is %lld, out of range", what, (long long)iv);
				return -1;
			}
			if (a == ARK_ATTR_START)
				o->start = iv;
			else
				o->end = iv;
			break;
		}
		if (a == ARK_ATTR_BY) { /* advance: added to an int32 state */
			if (iv < INT32_MIN || iv > INT32_MAX) {
				diag_error(AT(s), "%s is %lld, expected an int32 (-2147483648 to 2147483647)", what,
					   (long long)iv);
				return -1;
			}
			o->by = iv;
			break;
		}
		ARK_ASSERT(a == ARK_ATTR_AXIS);
		if (iv < -ARK_MAX_DIMS || iv >= ARK_MAX_DIMS) { /* graph_check says more once shapes are known */
			diag_error(AT(s), "%s is %lld, expected -%d to %d (tensors have at most %d dimensions)", what,
				   (long long)iv, ARK_MAX_DIMS, ARK_MAX_DIMS - 1, ARK_MAX_DIMS);
			return -1;
		}
		o->axis = (int)iv;
		break;
	}
	case AT_STRING: {
		char what[300];
		snprintf(what, sizeof what, "'%s' of op '%s'", key, o->name);
		if (get_string(r, s, what, &v))
			return -1;
		if (a == ARK_ATTR_APPROXIMATE) {
			static const char *const forms[] = { "none", "tanh" };
			int fi = key_index(v, forms, COUNT(forms));
			if (fi < 0) {
				diag_error(AT(s), "'approximate' of op '%s' is \"%s\", expected \"none\" or \"tanh\"",
					   o->name, v);
				hint_closest(v, forms, COUNT(forms));
				return -1;
			}
			o->kind = fi ? ARK_OP_GELU_TANH : ARK_OP_GELU; /* the catalog's variant row */
			break;
		}
		if (a == ARK_ATTR_STYLE) {
			static const char *const styles[] = { "half", "interleaved" };
			int si = key_index(v, styles, COUNT(styles));
			if (si < 0) {
				diag_error(AT(s), "'style' of op '%s' is \"%s\", expected \"half\" or \"interleaved\"",
					   o->name, v);
				hint_closest(v, styles, COUNT(styles));
				return -1;
			}
			o->style = si;
			break;
		}
		ARK_ASSERT(a == ARK_ATTR_TRANSPORT);
		ti = key_index(v, transport_name, 3);
		if (ti < 0) {
			diag_error(AT(s), "'transport' of op '%s' is \"%s\", expected \"auto\", \"dma\" or \"p2p\"",
				   o->name, v);
			hint_closest(v, transport_name, 3);
			return -1;
		}
		o->transport = (enum ark_transport)ti;
		break;
	}
	case AT_INTS: {
		/* reshape's shape (one -1 allowed, graph_check infers it) or transpose's two dims */
		int want = a == ARK_ATTR_DIMS ? 2 : 0, n = config_setting_length(s);
		const char *eg = a == ARK_ATTR_DIMS ? "[0, 1]" : "[8, -1]";
		if (type != CONFIG_TYPE_ARRAY) {
			diag_error(AT(s), "'%s' of op '%s' must be an array of integers like %s, found %s", key, o->name,
				   eg, type_desc(s));
			return -1;
		}
		if (want ? n != want : n < 1 || n > ARK_MAX_DIMS) {
			if (want)
				diag_error(AT(s), "'%s' of op '%s' has %d elements, expected %d", key, o->name, n, want);
			else
				diag_error(AT(s), "'%s' of op '%s' has %d dimensions, expected 1 to %d", key, o->name, n,
					   ARK_MAX_DIMS);
			return -1;
		}
		for (int i = 0; i < n; i++) {
			const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
			if (!is_int(e)) {
				diag_error(AT(s), "'%s' of op '%s' must hold integers, found %s", key, o->name, type_desc(e));
				return -1;
			}
			int64_t x = config_setting_get_int64(e);
			if (a == ARK_ATTR_DIMS) {
				if (x < -ARK_MAX_DIMS || x >= ARK_MAX_DIMS) {
					diag_error(AT(s), "'dims' of op '%s' has %lld, expected -%d to %d (tensors have at "
						   "most %d dimensions)", o->name, (long long)x, ARK_MAX_DIMS,
						   ARK_MAX_DIMS - 1, ARK_MAX_DIMS);
					return -1;
				}
				o->dims[i] = (int)x;
			} else {
				if (x < 1 && x != -1) {
					diag_error(AT(s), "'shape' of op '%s' has %lld in dimension %d, expected at least 1 "
						   "(or -1: inferred)", o->name, (long long)x, i);
					return -1;
				}
				o->shape[i] = x;
			}
		}
		if (a == ARK_ATTR_SHAPE)
			o->n_shape = n;
		break;
	}
	}
	o->attrs_given |= 1u << a;
	return 0;
}

static int read_op_kind(struct reader *r, const config_setting_t *s, struct op *o)
{
	const char *v;
	char what[300];
	snprintf(what, sizeof what, "'op' of op '%s'", o->name);
	if (get_string(r, s, what, &v))
		return -1;
	for (int k = 0; k < ARK_OP__COUNT; k++)
		if (!strcmp(v, op_info[k].name)) {
			o->kind = (enum ark_op_kind)k;
			return 0;
		}
	diag_error(AT(s), "unknown op \"%s\" in op '%s'", v, o->name);
	if (key_index(v, planned_ops, COUNT(planned_ops)) >= 0) {
		diag_hint("'%s' is planned for a later format version; version 1 does not have it", v);
	} else {
		const char *names[ARK_OP__COUNT];
		for (int k = 0; k < ARK_OP__COUNT; k++)
			names[k] = op_info[k].name;
		if (closest(v, names, ARK_OP__COUNT))
			hint_closest(v, names, ARK_OP__COUNT);
		else
			hint_ops();
	}
	return -1;
}

static int read_op(struct reader *r, const config_setting_t *s, int index)
{
	struct graph *g = r->g;
	if (config_setting_type(s) != CONFIG_TYPE_GROUP) {
		diag_error(AT(s), "element %d of 'ops' must be a group { name = ...; op = ...; }, found %s",
			   index + 1, type_desc(s));
		return -1;
	}
	const config_setting_t *ns = config_setting_get_member(s, "name");
	const char *name;
	if (!ns) {
		diag_error(AT(s), "op %d has no 'name'", index + 1);
		diag_hint("every op needs name = \"...\";");
		return -1;
	}
	if (get_string(r, ns, "'name' of an op", &name))
		return -1;
	if (!is_name(name)) {
		diag_error(AT(ns), "op name \"%s\" is not a name " NAME_PATTERN, name);
		return -1;
	}
	int prev = graph_find_op(g, name);
	if (prev >= 0) {
		diag_error(AT(ns), "duplicate op name '%s'", name);
		diag_note(graph_file_of(g, g->ops[prev].file), g->ops[prev].line, "'%s' was first defined here", name);
		return -1;
	}
	int oi = add_op(g, name, file_ref(r, s), line_of(r, s)); /* may move g->ops */
	struct op *o = &g->ops[oi];
	const config_setting_t *ks = config_setting_get_member(s, "op");
	const config_setting_t *is = config_setting_get_member(s, "in");
	const config_setting_t *os = config_setting_get_member(s, "out");
	const char *missing = !ks ? "op" : !is ? "in" : NULL;
	if (missing) {
		diag_error(AT(s), "op '%s' has no '%s'", o->name, missing);
		diag_hint("every op needs op = \"...\"; in = [...]; out = ...;");
		return -1;
	}
	if (read_op_kind(r, ks, o))
		return -1;
	const int no_out = op_info[o->kind].n_out == ARK_NO_OUT; /* assign, advance: `out` may be left out or [] */
	if (!os && !no_out) {
		diag_error(AT(s), "op '%s' has no 'out'", o->name);
		diag_hint("every op needs op = \"...\"; in = [...]; out = ...;");
		return -1;
	}
	/* Settings first, so that an unknown one is reported before any tensor is referenced. */
	for (int i = 0; i < config_setting_length(s); i++) {
		const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
		const char *key = config_setting_name(e);
		int k = key_index(key, op_keys, COUNT(op_keys));
		if (k == 4) {
			if (get_gpu(r, e, "op", o->name, &o->gpu))
				return -1;
		} else if (k < 0) {
			int a = key_index(key, attr_name, ARK_ATTR__COUNT);
			if (a < 0) {
				diag_error(AT(e), "unknown setting '%s' in op '%s'", key, o->name);
				const char *keys[COUNT(op_keys) + ARK_ATTR__COUNT];
				int n = 0;
				for (int j = 0; j < COUNT(op_keys); j++)
					keys[n++] = op_keys[j];
				for (int j = 0; j < ARK_ATTR__COUNT; j++)
					if (op_info[o->kind].attrs & (1u << j))
						keys[n++] = attr_name[j];
				if (closest(key, keys, n))
					hint_closest(key, keys, n);
				else
					diag_hint("an op takes name, op, in, out, gpu and the attributes of its kind (%s: %s)",
						  op_info[o->kind].name, attr_list(op_info[o->kind].attrs));
				return -1;
			}
			if (read_attr(r, e, o, a))
				return -1;
		}
	}
	if (o->kind == ARK_OP_SCALE && !(o->attrs_given & ARK_A(FACTOR))) {
		diag_error(AT(s), "op '%s' (scale) needs attribute 'factor'", o->name);
		diag_hint("add factor = 0.5; (any number)");
		return -1;
	}
	if (o->kind == ARK_OP_REDUCE_MEAN && !(o->attrs_given & ARK_A(AXIS))) {
		diag_error(AT(s), "op '%s' (reduce_mean) needs attribute 'axis'", o->name);
		diag_hint("add axis = 1; (the axis to average over, negative from the end)");
		return -1;
	}
	if (o->kind == ARK_OP_ATTENTION && !(o->attrs_given & ARK_A(HEADS))) {
		diag_error(AT(s), "op '%s' (attention) needs attribute 'heads'", o->name);
		diag_hint("add heads = 12; (the number of query heads; the head size is the last dimension of q / heads)");
		return -1;
	}
	if (o->kind == ARK_OP_DECODE_ATTENTION && !(o->attrs_given & ARK_A(HEADS))) {
		diag_error(AT(s), "op '%s' (decode_attention) needs attribute 'heads'", o->name);
		diag_hint("add heads = 32; (the number of query heads; the head size is the last dimension of q / heads)");
		return -1;
	}
	if (o->kind == ARK_OP_ROPE && !(o->attrs_given & ARK_A(HEAD_DIM))) {
		diag_error(AT(s), "op '%s' (rope) needs attribute 'head_dim'", o->name);
		diag_hint("add head_dim = 64; (the size of one head; x's last dimension is heads * head_dim)");
		return -1;
	}
	if (o->kind == ARK_OP_ROPE && !(o->attrs_given & ARK_A(BASE)))
		o->base = 10000.0;
	if (!(o->attrs_given & ARK_A(EPS)))
		o->eps = o->kind == ARK_OP_RMSNORM ? 1e-6 : o->kind == ARK_OP_L2_NORMALIZE ? 1e-12 : 1e-5;
	unsigned need = o->kind == ARK_OP_RESHAPE ? ARK_A(SHAPE)
		      : o->kind == ARK_OP_SLICE	   ? ARK_A(AXIS) | ARK_A(START) | ARK_A(END)
		      : o->kind == ARK_OP_TRANSPOSE ? ARK_A(DIMS)
		      : o->kind == ARK_OP_CONCAT    ? ARK_A(AXIS)
						    : 0;
	for (int a = 0; a < ARK_ATTR__COUNT; a++)
		if ((need & (1u << a)) && !(o->attrs_given & (1u << a))) {
			static const char *const eg[ARK_ATTR__COUNT] = {
				[ARK_ATTR_SHAPE] = "shape = [8, -1];", [ARK_ATTR_AXIS] = "axis = 0;",
				[ARK_ATTR_START] = "start = 0;", [ARK_ATTR_END] = "end = 128;",
				[ARK_ATTR_DIMS] = "dims = [0, 1];"};
			diag_error(AT(s), "op '%s' (%s) needs attribute '%s'", o->name, op_info[o->kind].name, attr_name[a]);
			diag_hint("add %s", eg[a]);
			return -1;
		}
	if (o->kind == ARK_OP_ADVANCE && !(o->attrs_given & ARK_A(BY)))
		o->by = 1;
	int in[ARK_MAX_IO] = {0}, out[ARK_MAX_IO] = {0}, n_in, n_out = 0;
	if (read_names(r, is, o, "in", 0, in, &n_in))
		return -1;
	/* an op without outputs writes its state in[0] in place: out[0] names it for the passes that
	 * look at what an op writes (n_out stays 0: it produces no tensor) */
	if (no_out)
		out[0] = in[0];
	if (os && !(no_out && config_setting_type(os) == CONFIG_TYPE_ARRAY && config_setting_length(os) == 0) &&
	    read_names(r, os, o, "out", 1, out, &n_out))
		return -1;
	o->n_in = n_in;
	o->n_out = n_out;
	memcpy(o->in, in, sizeof in);
	memcpy(o->out, out, sizeof out);
	return 0;
}

/* ---- top level -------------------------------------------------------------------------------- */

static int read_list(struct reader *r, const config_setting_t *s, const char *key,
		     int (*read_elem)(struct reader *, const config_setting_t *, int))
{
	int type = config_setting_type(s);
	if (type != CONFIG_TYPE_LIST && !(type == CONFIG_TYPE_ARRAY && config_setting_length(s) == 0)) {
		diag_error(AT(s), "'%s' must be a list of groups ( { ... }, { ... } ), found %s", key,
			   type_desc(s));
		return -1;
	}
	for (int i = 0; i < config_setting_length(s); i++)
		if (read_elem(r, config_setting_get_elem(s, (unsigned)i), i))
			return -1;
	return 0;
}

static int read_model(struct reader *r, config_t *c)
{
	struct graph *g = r->g;
	config_setting_t *root = config_root_setting(c);
	for (int i = 0; i < config_setting_length(root); i++) {
		const config_setting_t *e = config_setting_get_elem(root, (unsigned)i);
		const char *key = config_setting_name(e);
		if (key_index(key, top_keys, COUNT(top_keys)) < 0) {
			diag_error(AT(e), "unknown top-level setting '%s'", key);
			if (!closest(key, top_keys, COUNT(top_keys)))
				diag_hint("the top level takes version, name, dtype, gpus, tensors, ops and token");
			hint_closest(key, top_keys, COUNT(top_keys));
			return -1;
		}
	}
	const config_setting_t *s[COUNT(top_keys)];
	for (int i = 0; i < COUNT(top_keys); i++)
		s[i] = config_setting_get_member(root, top_keys[i]);
	int64_t v;
	if (!s[0]) {
		diag_error(r->g->file, 1, "missing setting 'version'");
		diag_hint("start the file with version = 1;");
		return -1;
	}
	if (get_int(r, s[0], "'version'", &v))
		return -1;
	if (v != 1) {
		diag_error(AT(s[0]), "unsupported 'version' %lld, expected 1", (long long)v);
		diag_hint("this arkgen reads model-file format version 1");
		return -1;
	}
	if (!s[1]) {
		diag_error(r->g->file, 1, "missing setting 'name'");
		diag_hint("name the model, e.g. name = \"mlp\";");
		return -1;
	}
	const char *name;
	if (get_string(r, s[1], "'name'", &name))
		return -1;
	if (!is_ident(name)) {
		diag_error(AT(s[1]), "'name' is \"%s\", expected an identifier [A-Za-z_][A-Za-z0-9_]*", name);
		diag_hint("the name is used in generated symbol names");
		return -1;
	}
	g->name = xstrdup(name);
	g->dtype = ARK_FP16;
	if (s[2] && get_dtype(r, s[2], "'dtype'", 0, &g->dtype))
		return -1;
	g->gpus = 1;
	if (s[3]) {
		if (get_int(r, s[3], "'gpus'", &v))
			return -1;
		if (v < 1 || v > ARK_MAX_GPUS) {
			diag_error(AT(s[3]), "'gpus' is %lld, expected 1 to %d", (long long)v, ARK_MAX_GPUS);
			return -1;
		}
		g->gpus = (int)v;
	}
	if (!s[4] || !s[5]) {
		diag_error(r->g->file, 1, "missing setting '%s'", s[4] ? "ops" : "tensors");
		diag_hint("a model needs tensors = ( ... ); and ops = ( ... );");
		return -1;
	}
	if (read_list(r, s[4], "tensors", read_tensor) || read_list(r, s[5], "ops", read_op))
		return -1;
	if (s[6]) { /* the token state of the generation loop: graph_check resolves and checks it */
		const char *tok;
		if (get_string(r, s[6], "'token'", &tok))
			return -1;
		g->token_name = xstrdup(tok);
		g->token_line = line_of(r, s[6]);
	}
	if (g->n_ops == 0) {
		diag_error(AT(s[5]), "'ops' is empty: a model needs at least one op");
		return -1;
	}
	return 0;
}

/* Reads the model at path (or the text given for it), then its settings into g. */
static int load(struct graph *g, const char *path, const char *text)
{
	struct source src;
	config_t c;
	int rc = -1;
	memset(g, 0, sizeof *g);
	g->file = xstrdup(path);
	graph_index_names(g);
	if (source_read(&src, path, text)) {
		source_free(&src);
		return -1;
	}
	/* the graph keeps the names of the included files: its tensors and ops point at them */
	g->n_files = src.n_files - 1;
	g->files = xmalloc(sizeof *g->files * (size_t)(g->n_files ? g->n_files : 1));
	memcpy(g->files, src.files + 1, sizeof *g->files * (size_t)g->n_files);
	src.n_files = 1;
	struct reader r = { g, &src };
	config_init(&c);
	if (!config_read_string(&c, src.text)) {
		int k, line;
		source_where(&src, (unsigned)config_error_line(&c), &k, &line);
		diag_error(file_name(&r, k), line, "%s", config_error_text(&c));
		diag_hint("settings end with ';', strings are in double quotes, arrays are [ ... ], "
			  "lists ( ... ), groups { ... }");
		goto out;
	}
	rc = read_model(&r, &c);
out:
	config_destroy(&c);
	source_free(&src);
	return rc;
}

int cfg_load(struct graph *g, const char *path)
{
	return load(g, path, NULL);
}

int cfg_load_string(struct graph *g, const char *path, const char *text)
{
	return load(g, path, text);
}
