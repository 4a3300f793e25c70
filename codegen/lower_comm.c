/* lower_comm.c: lowering of the communication ops (copy from another GPU, all_reduce, all_gather) to
 * communication vCTAs with their op params (tiling.comm): transfers by SM stores, by the DMA engine
 * or in packets, sums, gathers, and the sinks that make a GPU wait for what it receives. */
#include <string.h>

#include "diag.h"
#include "lower.h"

/* Every transfer moves a box of a tensor that is contiguous in memory (columns of one row, or whole
 * rows) to the same elements of a tensor (or of one slot of a staging tensor) on another GPU: by
 * COPY vCTAs of the sending GPU that store into the peer's arena (p2p), or by one DMA vCTA that
 * hands the box to the DMA engine. all_reduce, one-shot (2 GPUs, or small inputs): every GPU
 * receives every other input whole into a staging tensor and sums all of them (SUM vCTAs, fp32 in
 * GPU order, rounded once): one hop. Two-phase: the elements are cut into one part per GPU; GPU i
 * receives part i of every other input (reduce-scatter), sums it with its own and sends the summed
 * part to every other output (all-gather): two hops, but each GPU sends 2 (n - 1) / n of a tensor
 * instead of n - 1 tensors. A small one-shot by p2p sends packets that carry their own flag
 * (SEND_LL), which the sums poll (SUM_LL): no fence, no counter between the GPUs.
 * all_gather: every GPU receives the other inputs whole into a staging tensor, then GATHER vCTAs
 * interleave them with its own input into the output. A NOP vCTA on the receiving GPU waits for
 * transfers into an output that nothing else on that GPU reads, so the iteration completes only
 * once they arrived. */

struct box {
	int64_t r0, r1, c0, c1;
};

static int64_t box_elems(struct box b) { return (b.r1 - b.r0) * (b.c1 - b.c0); }

/* Piece p of `pieces` of a contiguous box: columns (multiples of 8 elements) of a one-row box, rows
 * of a box of whole rows. 0 if the piece is empty. */
static int split_box(struct box b, int64_t pieces, int64_t p, struct box *q)
{
	*q = b;
	if (b.r1 - b.r0 == 1) {
		int64_t step = cdiv(cdiv(b.c1 - b.c0, pieces), 8) * 8;
		q->c0 = b.c0 + p * step;
		q->c1 = imin(b.c1, q->c0 + step);
		return q->c0 < q->c1;
	}
	int64_t step = cdiv(b.r1 - b.r0, pieces);
	q->r0 = b.r0 + p * step;
	q->r1 = imin(b.r1, q->r0 + step);
	return q->r0 < q->r1;
}

/* p2p pieces of a box: about one per 4096 elements, at most one per SM. */
static int64_t xfer_pieces(const struct tiling *s, struct box b)
{
	return imax(1, imin(s->opt.sms, cdiv(box_elems(b), 4096)));
}

static struct vcta *comm_vcta(struct tiling *s, int op, int x)
{
	struct vcta *v = tiling_new_vcta(s, op, s->g->n_ops + x, s->comm[x].tmpl);
	v->gpu = s->comm[x].gpu;
	return v;
}

static int use_dma(const struct tiling *s, const struct op *o, int64_t bytes)
{
	if (o->transport == ARK_TR_AUTO)
		return bytes > s->opt.p2p_max;
	return o->transport == ARK_TR_DMA;
}

/* How a transfer travels: stores + fence + flag (p2p), the DMA engine, or packets that carry their
 * own flag (op_comm.cuh) into a packet buffer whose rows are twice as wide as the source's. */
enum xfer { XFER_P2P, XFER_DMA, XFER_LL };

/* Box b of tensor src (on its GPU) to the same elements of tensor dst (its packets for XFER_LL), in
 * the slot that starts at row slot_rows (slot_bytes bytes) of dst's view, on dst's GPU. */
static void transfer(struct tiling *s, int oi, int src, int dst, int64_t slot_rows, uint64_t slot_bytes,
		     struct box b, enum xfer how)
{
	static const enum ark_tmpl tmpl[] = {[XFER_P2P] = ARK_T_COPY, [XFER_DMA] = ARK_T_DMA, [XFER_LL] = ARK_T_SEND_LL};
	int sg = s->g->tensors[src].gpu, x = tiling_new_comm(s, oi, sg, tmpl[how]);
	int64_t C = s->cols[src], es = esize(s, src), pieces = how == XFER_DMA ? 1 : xfer_pieces(s, b);
	int64_t wide = how == XFER_LL ? 2 : 1;
	s->comm[x].peer = s->g->tensors[dst].gpu;
	s->comm[x].flags = how == XFER_DMA ? 0 : ARK_OPP_PUSH;
	s->comm[x].in0 = src;
	s->comm[x].out = dst;
	s->comm[x].out_add = slot_bytes;
	ARK_ASSERT(s->comm[x].peer != sg);
	for (int64_t p = 0; p < pieces; p++) {
		struct box q;
		if (!split_box(b, pieces, p, &q))
			continue;
		struct vcta *v = comm_vcta(s, oi, x);
		v->m0 = (uint32_t)q.r0, v->m1 = (uint32_t)q.r1, v->n0 = (uint32_t)q.c0, v->n1 = (uint32_t)q.c1;
		v->k0 = (uint32_t)(q.r0 * C + q.c0), v->k1 = (uint32_t)((q.r1 - 1) * C + q.c1);
		vcta_add_read(v, src, q.r0, q.r1, q.c0, q.c1);
		v->write = (struct region){dst, slot_rows + q.r0, slot_rows + q.r1, wide * q.c0, wide * q.c1};
		/* a DMA vCTA only writes a request; the simulator does not model the engine's copy */
		v->bytes = how == XFER_DMA ? 64.0 : (double)((1 + wide) * es * box_elems(q));
	}
}

/* A NOP vCTA on tensor t's GPU that reads all of t. */
static void sink(struct tiling *s, int oi, int t)
{
	struct vcta *v = comm_vcta(s, oi, tiling_new_comm(s, oi, s->g->tensors[t].gpu, ARK_T_NOP));
	vcta_add_read(v, t, 0, s->rows[t], 0, s->cols[t]);
	v->write = (struct region){t, 0, 0, 0, 0}; /* writes nothing */
}

/* A copy whose input lives on another GPU: a transfer, then a sink on the receiving GPU. */
void lower_copy(struct tiling *s, int oi)
{
	const struct op *o = &s->g->ops[oi];
	int t = o->in[0], u = o->out[0];
	struct box all = {0, s->rows[t], 0, s->cols[t]};
	int dma = use_dma(s, o, (int64_t)tensor_bytes(&s->g->tensors[t]));
	transfer(s, oi, t, u, 0, 0, all, dma ? XFER_DMA : XFER_P2P);
	sink(s, oi, u);
}

/* all_reduce in one hop or two (the comment at the top of this file). */
static int oneshot(const struct tiling *s, int gpus, uint64_t bytes)
{
	if (s->opt.oneshot_max < 0)
		return gpus == 2 || bytes <= ARK_ONESHOT_MAX_MANY;
	return bytes <= (uint64_t)s->opt.oneshot_max;
}

/* The SUM vCTAs of all_reduce oi on GPU i: its own input and the n - 1 others staged in st (as
 * packets when ll), in GPU order, over the elements of `part`, into out (its activation applied). */
static void sum_part(struct tiling *s, int oi, int i, int st, int out, struct box part, int ll)
{
	const struct op *o = &s->g->ops[oi];
	int n = o->n_in, t0 = o->in[0], wide = ll ? 2 : 1;
	int64_t R = s->rows[t0], C = s->cols[t0], es = esize(s, t0);
	int x = tiling_new_comm(s, oi, s->g->tensors[o->in[i]].gpu, ll ? ARK_T_SUM_LL : ARK_T_SUM);
	s->comm[x].in0 = o->in[i];
	s->comm[x].in1 = st;
	s->comm[x].out = out;
	s->comm[x].in2 = (uint64_t)wide * tensor_bytes(&s->g->tensors[t0]);
	s->comm[x].K = n - 1;
	s->comm[x].splits = (uint32_t)i; /* where its own input comes in the GPU order */
	s->comm[x].act = s->per_op[oi].act;
	int64_t pieces = xfer_pieces(s, part);
	for (int64_t p = 0; p < pieces; p++) {
		struct box q;
		if (!split_box(part, pieces, p, &q))
			continue;
		struct vcta *v = comm_vcta(s, oi, x);
		v->m0 = (uint32_t)q.r0, v->m1 = (uint32_t)q.r1, v->n0 = (uint32_t)q.c0, v->n1 = (uint32_t)q.c1;
		v->k0 = (uint32_t)(q.r0 * C + q.c0), v->k1 = (uint32_t)((q.r1 - 1) * C + q.c1);
		vcta_add_read(v, o->in[i], q.r0, q.r1, q.c0, q.c1);
		for (int k = 0; k < n - 1; k++)
			vcta_add_read(v, st, k * R + q.r0, k * R + q.r1, wide * q.c0, wide * q.c1);
		v->write = (struct region){out, q.r0, q.r1, q.c0, q.c1};
		v->flops = (double)(n * box_elems(q));
		v->bytes = (double)((n + 1) * es * box_elems(q));
	}
}

void lower_all_reduce(struct tiling *s, int oi)
{
	struct graph *g = s->g;
	const struct op *o = &g->ops[oi];
	int n = o->n_in, t0 = o->in[0], st[ARK_MAX_IO];
	int64_t R = s->rows[t0], C = s->cols[t0], es = esize(s, t0);
	uint64_t tb = tensor_bytes(&g->tensors[t0]);
	struct box all = {0, R, 0, C}, part[ARK_MAX_IO];
	int has[ARK_MAX_IO], dma = 0, one = oneshot(s, n, tb), out[ARK_MAX_IO];
	for (int i = 0; i < n; i++) {
		/* with a fused activation, the sums go to the activations' outputs */
		int a = s->per_op[oi].act != ARK_ACT_NONE ? fuse_sole_activation(g, o->out[i]) : -1;
		out[i] = a >= 0 ? g->ops[a].out[0] : o->out[i];
		ARK_ASSERT(a < 0 || s->per_op[a].fused_into == oi);
		if (one) /* GPU i sums all of it */
			has[i] = 1, part[i] = all;
		else
			has[i] = split_box(all, n, i, &part[i]);
		if (has[i] && use_dma(s, o, box_elems(part[i]) * es))
			dma = 1; /* one transport for the whole op: the largest part decides */
	}
	/* Packets (one-shot by p2p, small, every piece on a word): a staging row holds the packets of a
	 * row, twice its bytes. */
	int ll = one && !dma && tb <= (uint64_t)s->opt.ll_max && (C * es) % 4 == 0, wide = ll ? 2 : 1;
	for (int i = 0; i < n; i++)
		st[i] = tiling_add_tensor(s, g->tensors[out[i]].name, ll ? "__ll" : one ? "__os" : "__rs",
					  g->tensors[o->in[i]].gpu, (n - 1) * R, wide * C, g->tensors[t0].dtype);
	/* part i of every other input to GPU i's staging slot of that input */
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n && has[i]; j++)
			if (j != i) {
				int slot = j - (j > i);
				transfer(s, oi, o->in[j], st[i], slot * R, (uint64_t)slot * wide * tb, part[i],
					 ll ? XFER_LL : dma ? XFER_DMA : XFER_P2P);
			}
	/* sum of part i on GPU i */
	for (int i = 0; i < n; i++)
		if (has[i])
			sum_part(s, oi, i, st[i], out[i], part[i], ll);
	if (one)
		return; /* every output was summed where it lives */
	/* all-gather: the summed part i to every other output */
	for (int i = 0; i < n; i++)
		for (int k = 0; k < n && has[i]; k++)
			if (k != i)
				transfer(s, oi, out[i], out[k], 0, 0, part[i], dma ? XFER_DMA : XFER_P2P);
	for (int k = 0; k < n; k++)
		sink(s, oi, out[k]);
}

void lower_all_gather(struct tiling *s, int oi)
{
	struct graph *g = s->g;
	const struct op *o = &g->ops[oi];
	int n = o->n_in, t0 = o->in[0], st[ARK_MAX_IO];
	const struct tensor *T = &g->tensors[t0];
	int64_t R = s->rows[t0], C = s->cols[t0], chunk = 1;
	uint64_t tb = tensor_bytes(T);
	for (int d = o->axis; d < T->ndim; d++)
		chunk *= T->shape[d];
	int dma = use_dma(s, o, (int64_t)tb);
	struct box all = {0, R, 0, C};
	for (int i = 0; i < n; i++)
		st[i] = tiling_add_tensor(s, g->tensors[o->out[i]].name, "__ag", g->tensors[o->in[i]].gpu, (n - 1) * R,
					  C, g->tensors[t0].dtype);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if (j != i) {
				int slot = j - (j > i);
				transfer(s, oi, o->in[j], st[i], slot * R, (uint64_t)slot * tb, all, dma ? XFER_DMA : XFER_P2P);
			}
	for (int i = 0; i < n; i++) {
		int out = o->out[i], x = tiling_new_comm(s, oi, g->tensors[o->in[i]].gpu, ARK_T_GATHER);
		int64_t Ro = s->rows[out], Co = s->cols[out], es = esize(s, out);
		s->comm[x].in0 = o->in[i];
		s->comm[x].in1 = st[i];
		s->comm[x].out = out;
		s->comm[x].in2 = tb;
		s->comm[x].N = chunk;
		s->comm[x].K = n;
		s->comm[x].splits = (uint32_t)i;
		struct box ob = {0, Ro, 0, Co};
		int64_t pieces = xfer_pieces(s, ob);
		for (int64_t p = 0; p < pieces; p++) {
			struct box q;
			if (!split_box(ob, pieces, p, &q))
				continue;
			struct vcta *v = comm_vcta(s, oi, x);
			v->m0 = (uint32_t)q.r0, v->m1 = (uint32_t)q.r1, v->n0 = (uint32_t)q.c0, v->n1 = (uint32_t)q.c1;
			v->k0 = (uint32_t)(q.r0 * Co + q.c0), v->k1 = (uint32_t)((q.r1 - 1) * Co + q.c1);
			vcta_add_read(v, o->in[i], 0, R, 0, C);
			vcta_add_read(v, st[i], 0, (n - 1) * R, 0, C);
			v->write = (struct region){out, q.r0, q.r1, q.c0, q.c1};
			v->bytes = (double)(2 * es * box_elems(q));
		}
	}
}
