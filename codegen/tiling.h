/* tiling.h: the middle of arkgen: vCTAs (tiles of work) with the regions they read and write, the
 * per-op decisions of the tiler, the memory plan and the dependency edges between vCTAs. */
#ifndef TILING_H
#define TILING_H

#include <stdint.h>
#include <stdio.h>

#include "graph.h"
#include "partition/part.h"
#include "ark_model.h"

/* Rows r0..r1 and columns c0..c1 of a tensor's 2-D view [rows, cols] (leading dims folded). */
struct region {
	int tensor;
	int64_t r0, r1, c0, c1;
};

#define VCTA_MAX_READS (ARK_MAX_IO + 1)

/* One virtual CTA: one tile of one op. */
struct vcta {
	int op;               /* graph op (for a fused group: the first op) */
	int opp;              /* index of its op params: an op, or n_ops + an index into tiling.comm */
	enum ark_tmpl tmpl;
	int gpu;
	uint32_t m0, m1, n0, n1, k0, k1, split;
	int n_reads;
	struct region reads[VCTA_MAX_READS];
	struct region write;
	double flops, bytes;  /* cost */
	double lat_us;        /* latency floor of its arithmetic (a chain's dependent steps), 0: none */
	uint8_t tc;           /* arithmetic on tensor cores */
	int part;             /* which of its op's params entries (0: the first; a copied concat: its input) */
};

/* Per-op facts the tiler decided. */
struct op_tiling {
	int fused_into;       /* op index whose vCTAs compute this op (-1: computed by its own) */
	int act;              /* matmul, all_reduce: fused activation op kind, ARK_ACT_NONE */
	int out_tensor;       /* tensor the op's vCTAs write (the fused activation's or add's output) */
	int residual;         /* matmul: tensor [M, N] its epilogue adds (a fused add), -1 */
	int residual_op;      /* matmul: that add, at whose place in the order its vCTAs come, -1 */
	int pre_op;           /* matmul: the rmsnorm or swiglu its tiles apply to a as they stage it
			       * (they read that op's inputs), -1 */
	int splits;           /* matmul split-K */
	int ws_tensor;        /* matmul split-K workspace tensor, -1 */
	int64_t kchunk;       /* decode_attention: keys per split */
	int att_tile;         /* decode_attention: its tasks run on the attention tile (many query rows
			       * of 16 bits; ark_opp.istride[0][2] = 1, op_decode.cuh) */
	int tm, tn;           /* tile shape of out */
	int first_vcta, n_vcta;
	int chain_next;       /* elementwise chain: the next op of the chain, -1 */
	int chain_len;        /* head of a chain: its number of ops (>= 2), else 0 */
	int chain_gen;        /* head of a chain: the generated file compiles it with its steps (emit.c:
			       * emit_chain_code), else the chain template reads them from its params */
	int sm_share;         /* SMs its tiles may count on: the GPU's, shared among the matmuls of its
			       * dependency level on its GPU (the matmul tiler reads it) */
	int64_t level_tiles;  /* matmul: the tiles of its level's matmuls on its GPU, as the fixed rule
			       * (pick_tn) cuts them; more than the GPU's SMs: a second wave */
};

/* Transfers of a communication op of at most this many bytes go GPU to GPU by SM stores (p2p),
 * larger ones through the DMA engine, when the op's transport is "auto". Measured on 2 x H200 over
 * NVLink (bench/bench_comm.cu, bench/NOTES.md): peer stores beat the DMA engine at every size from
 * 8 B (2.9 against 12.8 us one-way) to 64 MiB (196 against 511 us); past the largest size measured
 * the DMA engine, which leaves the SMs free, takes over. arkgen --p2p-max overrides it. */
#define ARK_P2P_MAX_DEFAULT 67108864
/* all_reduce: -1 picks one-shot for 2 GPUs at every size, and for 3 or more up to this many bytes */
#define ARK_ONESHOT_MAX_AUTO (-1)
#define ARK_ONESHOT_MAX_MANY 262144
/* one-shot all_reduce by p2p: inputs of at most this many bytes go as packets that carry their flag.
 * Off by default, as measured on 2 x H200 (bench/NOTES.md): with the fences that order a path
 * through a packet, the all_reduce of 4 KiB takes 10.6 us in packets against 10.0 with stores +
 * fence + flag (without them packets won, 8.6 against 9.9, but were not ordered enough). */
#define ARK_LL_MAX_DEFAULT 0

/* Op params of a communication vCTA (emitted into the table of GPU `gpu`). Offsets are resolved
 * at emission: in[0] = offset of in0 (+ in0_add), in[1] = offset of in1, out = offset of out
 * (+ out_add), in[2] = in2 as is. */
struct comm_opp {
	int op;
	int gpu;
	enum ark_tmpl tmpl;   /* COPY (p2p push), DMA, SUM, GATHER, NOP */
	int peer;             /* COPY, DMA: the receiving GPU; -1 */
	unsigned flags;       /* ARK_OPP_* */
	int in0, in1, out;    /* tensors, -1 */
	uint64_t out_add, in2;
	int64_t M, N, K;
	uint32_t splits;
	int act;              /* SUM: activation applied to the sum (an op kind), ARK_ACT_NONE */
};

struct tile_opts {
	int sms;              /* SMs of the target GPU */
	int smem;             /* shared memory per CTA, bytes */
	int fuse;             /* fuse activations into the matmul before them */
	int reuse;            /* memory plan reuses activation space: 0 no, MEM_REUSE_LEVELS (tensors that
			       * ops of one dependency level touch never share bytes) or MEM_REUSE_ORDER
			       * (any two whose vCTA index ranges do not overlap) */
	int64_t p2p_max;      /* transport auto: p2p up to this many bytes per transfer, DMA above */
	int64_t oneshot_max;  /* all_reduce: one-shot up to this many bytes per GPU, -1: the default rule */
	int64_t ll_max;       /* one-shot all_reduce by p2p: packets up to this many bytes per GPU */
	int refill;           /* the SMs some matmuls of a level leave idle go to the others (refill_sms) */
	/* the costs the matmul tiler compares candidate tilings by (cost_vcta_us); gpu NULL: fixed rules */
	const struct calib_table *calib;
	const struct part_gpu *gpu;
};

struct tiling {
	struct graph *g;
	struct tile_opts opt;
	struct op_tiling *per_op;       /* per op */
	int refill_differs;             /* refill_sms would give some matmul more SMs (applied with opt.refill) */
	int n_vcta, cap_vcta;
	struct vcta *v;               /* in a topological order */
	int n_comm, cap_comm;
	struct comm_opp *comm;        /* op params of the communication vCTAs */
	/* tensor 2-D views: rows, cols (leading dims folded), cap_views entries (>= g->n_tensors) */
	int64_t *rows, *cols;
	int cap_views;
	/* dependency edges (CSR over vCTAs, u < v), hazards, kept after reduction */
	int64_t *xadj;
	int *adj;
	int64_t *ebytes;
	int64_t n_edges;
	int64_t n_hazards;
	int *hu, *hv;                 /* every hazard pair, for the verifier */
	uint8_t *keep;                /* per edge: survives transitive reduction */
	int64_t n_kept;
	/* memory plan, per GPU */
	uint64_t *offset;             /* per tensor, byte offset in its GPU's arena */
	uint64_t arena[ARK_MAX_GPUS], arena_noreuse[ARK_MAX_GPUS];
	int mem_levels_apart; /* some dependency level holds more than one op: MEM_REUSE_LEVELS and
			       * MEM_REUSE_ORDER may differ */
	/* DAG view for partition/: the vCTAs' costs (from a calibration table where it has their tile) */
	double *flops, *bytes, *lat_us;
	uint8_t *tc;
	int *group;
	double *sm_gbps;              /* per vCTA, 0: the GPU's; NULL without a table */
	int n_calibrated;             /* vCTAs whose cost the table gave */
	uint32_t calib_missing;       /* bit per template: vCTAs of it fell back to the analytic model */
};

/* Passes, in order, after tiling_init. Each returns 0, or -1 after reporting an error. */
void fuse_graph(struct tiling *s);  /* fusion decisions in per_op (opt.fuse) */
/* After fuse_graph: an activation that one matmul's tiles write, or a model input, that only matmuls
 * read, as their a, whose rows are not whole 16-byte vectors, gets rows padded to whole vectors
 * (pitch; lower_pad.c): those matmuls' tiles then copy it as aligned rows. Returns the number padded. */
int tiling_pad_activations(struct tiling *s);
int tile_graph(struct tiling *s);   /* vCTAs of every op, communication ops lowered (lower_comm.c) */
enum { MEM_REUSE_LEVELS = 1, MEM_REUSE_ORDER = 2 };
int mem_plan(struct tiling *s);     /* offsets; adds reuse hazards later found by deps */
/* One tensor to place: its lifetime (first and last vCTA, inclusive) and size. */
struct mem_life {
	int t;
	int birth, death;
	uint64_t bytes;
};
/* mem_plan's placement of n tensors (sorted in place, largest first): off[i] for lv[i] as sorted,
 * tensors of at least reuse_min bytes sharing space when their lifetimes do not overlap. Returns
 * the bytes used. */
uint64_t mem_place(struct mem_life *lv, int n, uint64_t reuse_min, uint64_t *off);
int deps_build(struct tiling *s);   /* hazards from regions (and reused memory), edges, reduction */
/* view.c: regions of views rewritten as regions of their bases (the end of tile_graph); the offsets
 * of views inside their bases (the end of mem_plan). */
void view_regions(struct tiling *s);
void view_offsets(struct tiling *s);
/* A view op that copies (slice, transpose), or input `part` of a concat that copies, as a STRIDED
 * tile copies it (templates/op_view.cuh): the index space oshape (returns its dimensions), for each
 * dimension the stride in elements of the input element it reads (ist[0]) and, for a concat, of the
 * out element it goes to (ist[1]; else 0s); *k: the input element the first reads, *at: the element
 * of out the first goes to. */
int view_copy_params(const struct graph *g, const struct op *o, int part, int64_t oshape[4], int64_t ist[2][4],
		     int64_t *k, int64_t *at);
/* The elements such a tile moves in one copy: the most (16 bytes at most, a power of two) that the
 * last dimension holds whole, where that dimension stays contiguous on both sides and every other
 * stride and both first elements are multiples of it; 1 where the last dimension moves. */
int view_copy_unit(const struct graph *g, const struct op *o, int part);
/* Whether such a tile copies boxes (rows, columns of out's 2-D view) through shared memory: a
 * transpose of the last two dimensions, of elements of 4 bytes or less (ark_opp.boxed). */
int view_copy_boxed(const struct graph *g, const struct op *o);
/* After tile_graph: the vCTAs' costs in the DAG view from a calibration table (cost.c), on gpu (its
 * figures with the table's protocol costs, calib_gpu). */
struct calib_table;
void cost_calibrate(struct tiling *s, const struct calib_table *t, const struct part_gpu *gpu);
/* The time of vCTA v (of an op of s, made or not) with its dispatch, as cost_calibrate and the
 * simulator give it: alone, or stretched by the device memory it shares while `streaming` SMs of the
 * GPU run such tiles (max(alone, busy * streaming / the table's SMs)); the analytic model where the
 * table (t, may be NULL) lacks the tile. The matmul tiler compares tilings by it. */
double cost_vcta_us(const struct tiling *s, const struct vcta *v, const struct calib_table *t,
		    const struct part_gpu *gpu, double streaming);
/* A matmul tile of at most 16 rows whose b is q4_1 or q8_0 costs at least this much of the tile of
 * a's dtype (beyond the dispatch): the dequantising arithmetic binds before the fewer bytes do. The
 * tensor-core stream of fp16/bf16 a: q4_1 fitted to llama1b_decode_q4 on an H100 with the evict-first
 * hint on its copies (1438 us predicted, 1501-1509 measured; that stream copies without the hint,
 * 1577-1724 us on H100s: bench/NOTES.md), q8_0 at the 1.35x a weight bench/stream_probe measured
 * against q4_1; the FMA stream of fp32 a. */
#define ARK_QUANT_ISSUE_Q4_1 0.75
#define ARK_QUANT_ISSUE_Q8_0 (1.35 * ARK_QUANT_ISSUE_Q4_1)
#define ARK_QUANT_ISSUE_FMA 1.3

/* Constructor and growth (tiling.c). tiling_init sizes per_op and the 2-D views of g's tensors. */
void tiling_init(struct tiling *s, struct graph *g, const struct tile_opts *opt);
/* Adds an internal tensor [rows, cols] of dtype on gpu, named base + suffix, with its 2-D view. */
int tiling_add_tensor(struct tiling *s, const char *base, const char *suffix, int gpu, int64_t rows, int64_t cols,
		      enum ark_dtype dtype);
/* Elements from a row of tensor t's 2-D view to the next in its arena: its columns, or its pitch
 * where its rows are padded (lower_pad.c). */
int64_t tiling_mem_cols(const struct tiling *s, int t);
struct vcta *tiling_new_vcta(struct tiling *s, int op, int opp, enum ark_tmpl tmpl);
int tiling_new_comm(struct tiling *s, int op, int gpu, enum ark_tmpl tmpl); /* index into s->comm */
void vcta_add_read(struct vcta *v, int tensor, int64_t r0, int64_t r1, int64_t c0, int64_t c1);
void tiling_free(struct tiling *s);

void tiling_dag(const struct tiling *s, struct part_dag *dag); /* the view partition/ reads */
void tiling_dump(const struct tiling *s, FILE *f);  /* -dT */
void tiling_dot(const struct tiling *s, FILE *f);   /* --dot-vctas: the vCTA graph */
const char *tmpl_name(int tmpl);
/* Dynamic shared memory the generated file's templates need with `threads` threads per CTA: the most
 * any template of the catalog needs (the file asserts that ARK_SMEM_BYTES holds it, whatever the
 * model uses), and in *label (may be NULL) the label of the first template that needs it. */
int tmpl_smem_need(int threads, const char **label);

/* tile.c: x of reduce_mean op o viewed as [P, S, Q, D] (v): the axes before `axis`, the reduced axis, the
 * axes between it and the last, the last (D = 1, Q = 1 when the last is the one reduced). */
void tile_reduce_view(const struct graph *g, const struct op *o, int64_t v[4]);

/* tile.c: whether matmul vCTA v (MATMUL or MATMUL_PARTIAL) runs on the tensor cores, as
 * templates/op_matmul.cuh's ark_mm_sub decides: a of 2 bytes, b not quantized, no fused norm, and
 * more rows in v than the streaming path takes (ARK_MM_SMALL_M), or more rows in its matmul than
 * 16-bit streaming takes (ARK_MM_STREAMS16, abi/ark_smem.h), or rows of b the streaming tiles cannot
 * take (matmul_b_stride not a multiple of 8). */
int tile_matmul_mma(const struct tiling *s, const struct vcta *v);
/* tile.c: whether the tiles of matmul oi, of M rows, stream b (templates/op_matmul.cuh, ark_mm_sub). */
int matmul_streams(const struct tiling *s, int oi, int64_t M);
/* tile.c: elements from a row of matmul oi's b to the next in memory: K with b [N, K], N with b [K, N],
 * or the pitch its rows are padded to (lower_pad.c). */
int64_t matmul_b_stride(const struct tiling *s, int oi);

/* tile.c: whether matmul vCTA v runs on the fp32 FMA tile of shared-memory stages (ark_mm_ffma): a in
 * fp32, b not quantized, no fused norm, and more rows in its matmul than streaming takes
 * (ARK_MM_FFMA, abi/ark_smem.h), whatever rows v itself has, or rows of b the streaming tiles cannot
 * take (matmul_b_stride not a multiple of 4). */
int tile_matmul_ffma(const struct tiling *s, const struct vcta *v);

#endif
