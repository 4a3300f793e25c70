/* fuse.c: fusion, a rewrite of the op graph decided before tiling and recorded in tiling.per_op:
 * activations run in the epilogue of the matmul before them, on the sums of an all_reduce or as a
 * softmax or norm stores its rows, a residual add in the epilogue of the matmul whose result it adds,
 * an rmsnorm or a swiglu in the staging of a of the small streaming matmuls that read it, and chains of
 * elementwise ops run as one vCTA per range of elements. A fused op gets no vCTAs of its own
 * (fused_into); the op that computes it records what it took over (act, residual, pre_op,
 * out_tensor, chain_*). */
#include <stdlib.h>
#include <string.h>

#include "ark_smem.h" /* ARK_MM_SMALL_M */
#include "calib.h"
#include "diag.h"
#include "lower.h"

static int is_activation(enum ark_op_kind k)
{
	return (op_info[k].flags & ARK_OPF_ACTIVATION) != 0;
}

int fuse_sole_activation(const struct graph *g, int t)
{
	const struct tensor *h = &g->tensors[t];
	if (h->n_readers != 1 || h->role == ARK_ROLE_OUTPUT)
		return -1;
	for (int i = 0; i < g->n_ops; i++) {
		const struct op *o = &g->ops[i];
		if (o->in[0] != t)
			continue;
		if (!is_activation(o->kind) || o->gpu != h->gpu || g->tensors[o->out[0]].dtype != h->dtype)
			return -1;
		return i;
	}
	return -1;
}

/* The same activation after every output of an all_reduce (tensor parallelism's pattern) runs on
 * the sums: each GPU applies it to its sum before storing (and, two-phase, before sending). */
static void fuse_into_all_reduce(struct tiling *s)
{
	struct graph *g = s->g;
	for (int i = 0; i < g->n_ops; i++) {
		const struct op *o = &g->ops[i];
		if (o->kind != ARK_OP_ALL_REDUCE)
			continue;
		int act[ARK_MAX_IO], k;
		for (k = 0; k < o->n_out; k++) {
			act[k] = fuse_sole_activation(g, o->out[k]);
			if (act[k] < 0 || g->ops[act[k]].kind != g->ops[act[0]].kind)
				break;
		}
		if (k < o->n_out)
			continue;
		for (k = 0; k < o->n_out; k++)
			s->per_op[act[k]].fused_into = i;
		s->per_op[i].act = g->ops[act[0]].kind;
	}
}

/* An activation directly after an op its producer's tiles can apply it in (takes), reading nothing
 * else, runs as the producer stores its values: one task, and one round trip through memory, fewer. */
static void fuse_act_into(struct tiling *s, int (*takes)(const struct tiling *s, int producer))
{
	struct graph *g = s->g;
	for (int i = 0; i < g->n_ops; i++) {
		const struct op *o = &g->ops[i];
		if (!is_activation(o->kind) || s->per_op[i].fused_into >= 0)
			continue;
		const struct tensor *h = &g->tensors[o->in[0]];
		if (h->producer < 0 || h->n_readers != 1 || h->role == ARK_ROLE_OUTPUT)
			continue;
		const int r = h->producer;
		if (!takes(s, r) || g->ops[r].gpu != o->gpu || s->per_op[r].act != ARK_ACT_NONE ||
		    g->tensors[o->out[0]].dtype != h->dtype)
			continue;
		s->per_op[i].fused_into = r;
		s->per_op[r].act = o->kind;
		s->per_op[r].out_tensor = o->out[0];
	}
}

/* A matmul applies an activation in its epilogue. */
static int matmul_takes(const struct tiling *s, int r)
{
	return s->g->ops[r].kind == ARK_OP_MATMUL;
}

int fuse_row_op(enum ark_op_kind k)
{
	return k == ARK_OP_SOFTMAX || k == ARK_OP_LAYERNORM || k == ARK_OP_RMSNORM || k == ARK_OP_L2_NORMALIZE;
}

/* A softmax or a norm not itself fused applies an activation as it stores each value. */
static int rows_take(const struct tiling *s, int r)
{
	return fuse_row_op(s->g->ops[r].kind) && s->per_op[r].fused_into < 0;
}

/* Every input of elementwise op o has its output's shape and dtype (no broadcasting). */
static int ew_plain(const struct graph *g, const struct op *o)
{
	if (!(op_info[o->kind].flags & ARK_OPF_ELEMENTWISE))
		return 0;
	const struct tensor *to = &g->tensors[o->out[0]];
	for (int i = 0; i < o->n_in; i++) {
		const struct tensor *ti = &g->tensors[o->in[i]];
		if (ti->dtype != to->dtype || !tensor_same_shape(ti, to))
			return 0;
	}
	return 1;
}

int fuse_chain_repeats(const struct tensor *I, const struct tensor *T)
{
	int phase = 0; /* 0: T's last dimensions, along which I is broadcast; 1: I's own; 2: broadcast again */
	for (int d = T->ndim - 1; d >= 0; d--) {
		const int di = d - (T->ndim - I->ndim);
		const int bc = (di >= 0 ? I->shape[di] : 1) == 1;
		if (T->shape[d] == 1)
			continue;
		if (phase == 0 && !bc)
			phase = 1;
		else if (phase == 1 && bc)
			phase = 2;
		else if (phase == 2 && !bc)
			return 0;
	}
	return 1;
}

/* Elementwise op o can be a chain's step: every input of its output's dtype, one of its output's
 * shape (the chained value, or the head's input), the other of its shape or broadcast in the form
 * the chain template reads (fuse_chain_repeats). */
static int ew_chainable(const struct graph *g, const struct op *o)
{
	if (!(op_info[o->kind].flags & ARK_OPF_ELEMENTWISE))
		return 0;
	const struct tensor *to = &g->tensors[o->out[0]];
	int whole = 0;
	for (int i = 0; i < o->n_in; i++) {
		const struct tensor *ti = &g->tensors[o->in[i]];
		if (ti->dtype != to->dtype || !fuse_chain_repeats(ti, to))
			return 0;
		whole += tensor_same_shape(ti, to);
	}
	return whole > 0;
}

/* Whether op o reads a state's bytes (the state, or a view of it). */
static int reads_state(const struct graph *g, const struct op *o)
{
	for (int j = 0; j < o->n_in; j++)
		if (g->tensors[graph_view_base(g, o->in[j], NULL)].role == ARK_ROLE_STATE)
			return 1;
	return 0;
}

/* Whether op p, the producer of add o's input t (a matmul, after its fused activation, or an
 * embedding), can compute the add: t read by the add alone and not a model output, p still writing
 * t and without an add of its own, on the add's GPU, and reading no state (its vCTAs move to the
 * add's place in the order, and an update of the state between the two would change what they
 * read). */
static int can_take_add(const struct tiling *s, const struct op *o, int t, int p)
{
	const struct graph *g = s->g;
	const struct tensor *h = &g->tensors[t];
	const struct op_tiling *pl = &s->per_op[p];
	return h->n_readers == 1 && h->role != ARK_ROLE_OUTPUT && pl->out_tensor == t && pl->residual < 0 &&
	       g->ops[p].gpu == o->gpu && !reads_state(g, &g->ops[p]);
}

/* Op p computes add i, its input other than p's output being r: it writes the add's output. */
static void take_add(struct tiling *s, int i, int p, int r)
{
	struct op_tiling *pl = &s->per_op[p];
	s->per_op[i].fused_into = p;
	pl->residual = r;
	pl->residual_op = i;
	pl->out_tensor = s->g->ops[i].out[0];
}

/* An add of a matmul's result (after its fused activation, if any) and a tensor of the sum's shape
 * and dtype: a transformer block's residual connection. The matmul's epilogue adds the tensor (to
 * its result rounded to the output's dtype, as the add would read it) and writes the add's output.
 * Its vCTAs come at the add's place in the order (tile.c), after the op that makes the added tensor;
 * so a matmul that reads a state is left alone (an update of the state between the two places would
 * change what it reads), and so is one whose addend comes from its own dependency level or a later
 * one (two branches' matmuls summed: fused, one would wait for the other instead of running beside
 * it). */
static void fuse_residual_into_matmul(struct tiling *s)
{
	struct graph *g = s->g;
	int *level = xmalloc((size_t)g->n_ops * sizeof *level);
	graph_levels(g, level);
	for (int i = 0; i < g->n_ops; i++) {
		const struct op *o = &g->ops[i];
		if (o->kind != ARK_OP_ADD || o->in[0] == o->in[1] || !ew_plain(g, o))
			continue;
		for (int j = 0; j < 2; j++) {
			const int t = o->in[j], r = o->in[1 - j];
			int mm = g->tensors[t].producer;
			if (mm < 0)
				continue;
			if (s->per_op[mm].fused_into >= 0) /* the matmul's fused activation */
				mm = s->per_op[mm].fused_into;
			const int rp = g->tensors[r].producer;
			if (g->ops[mm].kind != ARK_OP_MATMUL || !can_take_add(s, o, t, mm) || (rp >= 0 && level[rp] >= level[mm]))
				continue;
			take_add(s, i, mm, r);
			break;
		}
	}
	free(level);
}

/* Whether add o's inputs have its output's dtype and number of elements: their shapes differ in
 * dimensions of size 1 at most (a broadcast that changed a count would change the output's), so
 * element e of each is element e of the output ([1, S, D] + [S, D]). */
static int add_flat(const struct graph *g, const struct op *o)
{
	const struct tensor *to = &g->tensors[o->out[0]];
	for (int i = 0; i < o->n_in; i++) {
		const struct tensor *ti = &g->tensors[o->in[i]];
		if (ti->dtype != to->dtype || tensor_elems(ti) != tensor_elems(to) ||
		    ti->shape[ti->ndim - 1] != to->shape[to->ndim - 1])
			return 0;
	}
	return 1;
}

/* An add of an embedding's rows and a tensor of as many elements (an encoder's token embedding plus
 * its position embedding, [1, S, D] + [S, D]) that no matmul took as its residual and no chain took
 * (after fuse_chains: a chain of the add and the ops after it saves as much, and a lone broadcast op
 * left behind by the add would run on the slower broadcasting tile): the embedding's tiles add the
 * tensor's row to each row they gather, a dependency level and a tensor less. The addend may come
 * from any level (an embedding's task is a few round trips, as long as the add's it replaces); an
 * embedding that reads a state is left alone, as a matmul is. */
static void fuse_add_into_embedding(struct tiling *s)
{
	struct graph *g = s->g;
	for (int i = 0; i < g->n_ops; i++) {
		const struct op *o = &g->ops[i];
		if (o->kind != ARK_OP_ADD || o->in[0] == o->in[1] || s->per_op[i].fused_into >= 0 ||
		    s->per_op[i].chain_len || !add_flat(g, o))
			continue;
		for (int j = 0; j < 2; j++) {
			const int t = o->in[j], e = g->tensors[t].producer;
			if (e < 0 || g->ops[e].kind != ARK_OP_EMBEDDING || !can_take_add(s, o, t, e))
				continue;
			take_add(s, i, e, o->in[1 - j]);
			break;
		}
	}
}

/* Whether an op of kind k fused on matmul i's a pays. A norm: where its tiles take the quantized
 * streaming path of op_quant.cuh (at most ARK_MM_SMALL_M rows, b in q4_1 / q8_0 blocks). The plain
 * streaming paths stage a fused norm too (ark_mm_sub sends them every tile of up to ARK_MM_SMALL_M
 * rows with 16-byte vectors along K, b [N, K], or along N, b [K, N]), but measured there the rows'
 * sums of squares and the per-element gamma cost more than the dependency level saves
 * (bench/NOTES.md). A swiglu: wherever the matmul's tiles stream b anyway (at most ARK_MM_SMALL_M
 * rows; matmul_streams), quantized or not, as it costs a tile only a second read of a's bytes and a
 * silu per element, beside b's many more. */
static int pre_fusion_pays(const struct tiling *s, int i, enum ark_op_kind k)
{
	const struct graph *g = s->g;
	const struct op *o = &g->ops[i];
	const struct tensor *a = &g->tensors[o->in[0]], *b = &g->tensors[o->in[1]];
	const int64_t M = (int64_t)(tensor_elems(a) / (uint64_t)a->shape[a->ndim - 1]);
	if (M > ARK_MM_SMALL_M)
		return 0;
	return k == ARK_OP_RMSNORM ? ark_dtype_quantized(b->dtype) : matmul_streams(s, i, M);
}

/* Whether swiglu op o can be staged by the matmuls that read it: both inputs of its output's shape
 * and dtype (no broadcasting), tensors of their own (not views) stored without padding (a weight
 * can be, lower_pad.c), so that element (m, k) of each lies at m * K + k as the tiles read it. */
static int glu_fusable(const struct graph *g, const struct op *o)
{
	const struct tensor *y = &g->tensors[o->out[0]];
	for (int i = 0; i < 2; i++) {
		const struct tensor *x = &g->tensors[o->in[i]];
		if (!tensor_same_shape(x, y) || x->dtype != y->dtype || x->view_of >= 0 || x->pitch)
			return 0;
	}
	return y->view_of < 0 && o->in[0] != o->in[1];
}

/* An rmsnorm or a swiglu whose output only matmuls read, each as its a, each where the fusion pays
 * (pre_fusion_pays), on the op's GPU: every tile of those matmuls applies the op to the rows of a as
 * it stages them (an rmsnorm: the rows' sums of squares first, over all of K), reading the op's
 * inputs, and the op's output is never stored. A decoder step loses the op's small tasks and the
 * dependency level they made: the norms twice a layer, the swiglu before the down projection. */
static void fuse_pre_into_matmul(struct tiling *s)
{
	struct graph *g = s->g;
	int *ok = xcalloc((size_t)g->n_tensors, sizeof *ok); /* readers of such an op's output that qualify */
	for (int i = 0; i < g->n_ops; i++) {
		const struct op *o = &g->ops[i];
		for (int j = 0; j < o->n_in; j++) {
			const int t = o->in[j], p = g->tensors[t].producer;
			if (p < 0 || (g->ops[p].kind != ARK_OP_RMSNORM && g->ops[p].kind != ARK_OP_SWIGLU))
				continue;
			if (o->kind == ARK_OP_MATMUL && j == 0 && o->in[1] != t && (o->n_in < 3 || o->in[2] != t) &&
			    o->gpu == g->ops[p].gpu && s->per_op[i].pre_op < 0 && s->per_op[i].fused_into < 0 &&
			    pre_fusion_pays(s, i, g->ops[p].kind))
				ok[t]++;
			else
				ok[t] = -g->n_ops; /* never fused */
		}
	}
	for (int n = 0; n < g->n_ops; n++) {
		const struct op *o = &g->ops[n];
		const int y = o->out[0];
		if ((o->kind != ARK_OP_RMSNORM && (o->kind != ARK_OP_SWIGLU || !glu_fusable(g, o))) ||
		    s->per_op[n].fused_into >= 0 || g->tensors[y].role == ARK_ROLE_OUTPUT || ok[y] <= 0 ||
		    ok[y] != g->tensors[y].n_readers)
			continue;
		for (int i = 0; i < g->n_ops; i++)
			if (g->ops[i].kind == ARK_OP_MATMUL && g->ops[i].in[0] == y) {
				s->per_op[i].pre_op = n;
				if (s->per_op[n].fused_into < 0)
					s->per_op[n].fused_into = i;
			}
	}
	free(ok);
}

/* Input of chain step o that is not the chained value `t` (-1: none). */
static int chain_operand(const struct op *o, int t)
{
	if (o->n_in < 2)
		return -1;
	return o->in[0] == t ? o->in[1] : o->in[0];
}

/* Adds tensor t to the distinct tensors reads[0 .. *n) unless it is there; -1 if it is new and the
 * list already holds VCTA_MAX_READS. */
static int read_once(int *reads, int *n, int t)
{
	for (int j = 0; j < *n; j++)
		if (reads[j] == t)
			return 0;
	if (*n == VCTA_MAX_READS)
		return -1;
	reads[(*n)++] = t;
	return 0;
}

/* Links each plain elementwise op to the plain elementwise op that alone reads its output, on its
 * GPU (chain_next); prev[r]: the op linked to r, -1. An op that reads a state ends a chain: the
 * chain's vCTAs run at the place of its last op, and an op that reads a state's old value must run
 * before the op that updates the state (graph.c: order_ops), which a later place could miss. */
static void link_chains(struct tiling *s, int *prev)
{
	struct graph *g = s->g;
	int *reader = xmalloc((size_t)g->n_tensors * sizeof *reader);
	for (int t = 0; t < g->n_tensors; t++)
		reader[t] = -1;
	for (int i = 0; i < g->n_ops; i++) {
		prev[i] = -1;
		for (int j = 0; j < g->ops[i].n_in; j++)
			reader[g->ops[i].in[j]] = i;
	}
	for (int k = 0; k < g->n_ops; k++) {
		int oi = g->order[k];
		const struct op *o = &g->ops[oi];
		if (s->per_op[oi].fused_into >= 0 || !ew_chainable(g, o) || reads_state(g, o))
			continue;
		const struct tensor *t = &g->tensors[o->out[0]];
		int r = reader[o->out[0]];
		if (t->n_readers != 1 || t->role == ARK_ROLE_OUTPUT || r < 0 || prev[r] >= 0)
			continue;
		const struct op *ro = &g->ops[r];
		if (ro->gpu != o->gpu || s->per_op[r].fused_into >= 0 || !ew_chainable(g, ro) ||
		    (ro->n_in > 1 && ro->in[0] == ro->in[1]) || !tensor_same_shape(t, &g->tensors[ro->out[0]]))
			continue;
		s->per_op[oi].chain_next = r;
		prev[r] = oi;
	}
	free(reader);
}

/* Chains of elementwise ops where each intermediate is read once, by the next op of the chain, and
 * is no output, and every operand has the chain's shape or repeats along it (fuse_chain_repeats): one
 * vCTA runs the whole chain on a range of elements, values staying in registers, so the intermediates
 * are never stored. The head owns the vCTAs; the others are fused into it. A chain stops before it would read more distinct tensors than a vCTA can record. */
static void fuse_chains(struct tiling *s)
{
	struct graph *g = s->g;
	int *prev = xmalloc((size_t)g->n_ops * sizeof *prev), gen_steps = 0;
	link_chains(s, prev);
	for (int k = 0; k < g->n_ops; k++) {
		int head = g->order[k];
		if (prev[head] >= 0 || s->per_op[head].chain_next < 0)
			continue;
		/* distinct tensors read: the head's inputs, then every later step's operand */
		int reads[VCTA_MAX_READS], n_reads = 0, len = 1, last = head;
		const struct op *h = &g->ops[head];
		for (int j = 0; j < h->n_in; j++)
			read_once(reads, &n_reads, h->in[j]);
		for (int x = s->per_op[head].chain_next; x >= 0; x = s->per_op[x].chain_next) {
			int opnd = chain_operand(&g->ops[x], g->ops[last].out[0]);
			if (opnd >= 0 && read_once(reads, &n_reads, opnd) < 0)
				break;
			s->per_op[x].fused_into = head;
			len++;
			last = x;
		}
		int cut = s->per_op[last].chain_next;
		s->per_op[last].chain_next = -1;
		if (cut >= 0)
			prev[cut] = -1; /* a new chain may start there: it is later in the order */
		if (len < 2)
			continue;
		s->per_op[head].chain_len = len;
		s->per_op[head].out_tensor = g->ops[last].out[0];
		if (len <= ARK_CHAIN_GEN_MAX && gen_steps + len <= ARK_CHAIN_GEN_TOTAL) {
			s->per_op[head].chain_gen = 1;
			gen_steps += len;
		}
	}
	free(prev);
}

int fuse_chain_reads(const struct tiling *s, int head, int *reads)
{
	const struct graph *g = s->g;
	const struct op *h = &g->ops[head];
	int n = 0;
	for (int j = 0; j < h->n_in; j++)
		read_once(reads, &n, h->in[j]);
	for (int x = s->per_op[head].chain_next, last = head; x >= 0; last = x, x = s->per_op[x].chain_next) {
		int opnd = chain_operand(&g->ops[x], g->ops[last].out[0]);
		if (opnd >= 0)
			ARK_ASSERT(read_once(reads, &n, opnd) == 0); /* fuse_chains kept them within the list */
	}
	return n;
}

void fuse_graph(struct tiling *s)
{
	if (!s->opt.fuse)
		return;
	fuse_into_all_reduce(s);
	fuse_act_into(s, matmul_takes);
	fuse_residual_into_matmul(s);
	fuse_pre_into_matmul(s);
	fuse_act_into(s, rows_take);
	fuse_chains(s);
	fuse_add_into_embedding(s);
}
