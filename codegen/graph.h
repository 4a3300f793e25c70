/* graph.h: the graph IR. A model is two flat arrays, tensors and ops; passes are functions over them. */
#ifndef GRAPH_H
#define GRAPH_H

#include <stdint.h>
#include <stdio.h>

#include "ark_ops.h"

/* Static facts about each op kind, derived from OP_LIST. */
struct op_info {
	const char *name;
	int min_in, max_in;
	int n_out;          /* 0: one output per input */
	unsigned attrs;     /* mask of ARK_A(...) */
	unsigned flags;     /* ARK_OPF_* */
};
extern const struct op_info op_info[ARK_OP__COUNT];
extern const char *const attr_name[ARK_ATTR__COUNT];
extern const char *const dtype_name[ARK_DTYPE__COUNT];
extern const char *const role_name[ARK_ROLE__COUNT];
extern const char *const transport_name[3];

struct tensor {
	char *name;
	int line;              /* line of its declaration, or of the op that produces it */
	int ndim;              /* 0 until known */
	int64_t shape[ARK_MAX_DIMS];
	enum ark_dtype dtype;
	enum ark_role role;
	int gpu;
	int producer;          /* op index, -1 if none */
	int n_readers;
	unsigned declared : 1; /* listed in `tensors` */
	unsigned shape_given : 1;
	unsigned dtype_given : 1;
	unsigned gpu_given : 1;
	unsigned role_given : 1;
	const char *file;      /* file of `line` when it is not the model file (an @include'd one) */
	int view_of;           /* a view (codegen/view.c): the tensor whose bytes it aliases, -1: none */
	int64_t view_off;      /* a view: its first element's index in view_of's elements */
	int64_t pitch;         /* elements from one row (last dimension) to the next in memory where
				* rows are padded to whole 16-byte vectors (lower_pad.c); 0: rows packed */
};

struct op {
	char *name;
	int line;
	enum ark_op_kind kind;
	int gpu;
	int n_in, n_out;
	int in[ARK_MAX_IO], out[ARK_MAX_IO]; /* tensor indices */
	int transpose_b;
	double factor, eps;
	int axis;              /* as written; normalised to 0..ndim-1 by inference */
	enum ark_transport transport;
	int heads, kv_heads;   /* attention: kv_heads 0 until inference sets its default (heads) */
	int causal;            /* attention */
	double scale;          /* attention: 0 until inference sets its default (1/sqrt(head size)) */
	int n_shape;           /* reshape: `shape`, one -1 allowed (inferred) */
	int64_t shape[ARK_MAX_DIMS];
	int64_t start, end;    /* slice: elements start..end (exclusive) of `axis`; as written, then normalised */
	int dims[2];           /* transpose: the two axes swapped, normalised to 0..ndim-1 */
	int copy;              /* views: copy when the result cannot alias its input */
	int copied;            /* a view op that copies (graph_check: copy = true and no view possible) */
	int64_t by;            /* advance: added to the state (default 1) */
	int head_dim, rotary_dim; /* rope: rotary_dim 0 until inference sets its default (head_dim) */
	int style;             /* rope: 0 "half" (rotate_half), 1 "interleaved" */
	double base;           /* rope: 10000 unless given */
	unsigned attrs_given;  /* mask of ARK_A(...) */
	const char *file;      /* file of `line` when it is not the model file (an @include'd one) */
};

struct graph {
	char *file;            /* model file path, as given */
	char *name;
	enum ark_dtype dtype;
	int gpus;
	char *token_name;      /* top-level `token`: the int32 [1] state the generation loop feeds, or NULL */
	int token_line;
	int token;             /* its tensor index (graph_check), -1: none */
	int n_tensors, n_ops;
	struct tensor *tensors;
	struct op *ops;
	int *order;            /* ops in a topological order (after graph_check) */
	char **files;          /* (n_files) the @include'd files that tensor and op `file`s point to */
	int n_files;
	struct name_index *tensor_index, *op_index; /* for graph_find_*, made by graph_index_names */
};

/* Parse a model file into g. Returns 0, or -1 after reporting FILE:LINE: error: ... */
int cfg_load(struct graph *g, const char *path);
/* Same, from text in memory (path used in messages only). */
int cfg_load_string(struct graph *g, const char *path, const char *text);

/* Resolve, infer shapes and dtypes, reject cycles, compute g->order. 0, or -1 after an error. */
int graph_check(struct graph *g);

/* After graph_check: every matmul whose b is q4_1 or q8_0 and whose a has more than ARK_MM_SMALL_M
 * rows reads b through a new activation `<matmul>.b_dequant` of a's dtype, made by a new dequantize op
 * placed right before it (lower_quant.c); matmuls that read the same b in the same dtype share the
 * first one's. 0. */
int graph_lower_quant(struct graph *g);

/* After graph_lower_quant: a weight of 2 or 4-byte elements whose rows are not whole 16-byte vectors,
 * and that only matmuls read, as their b, gets rows padded to whole vectors in memory (pitch), so that
 * its tiles stream it as 16-byte vectors (lower_pad.c). Returns the number of weights padded. */
int graph_pad_weights(struct graph *g);

void graph_free(struct graph *g);
/* The tensor whose bytes t aliases through views (t itself if it is no view), and in *off (may be
 * NULL) t's first element's index in it. */
int graph_view_base(const struct graph *g, int t, int64_t *off);
/* Every op's dependency level into level[n_ops] (the longest path from the graph's inputs, in ops;
 * 0: reads no computed tensor), once ops are ordered; returns the largest. */
int graph_levels(const struct graph *g, int *level);
/* Index of the tensor or op called name, or -1. Hashed once graph_index_names has run (cfg_load runs
 * it); tensors and ops appended since are hashed on the next lookup. Without an index, a scan. */
int graph_find_tensor(const struct graph *g, const char *name);
int graph_find_op(const struct graph *g, const char *name);
void graph_index_names(struct graph *g);
/* The file a tensor or op was written in: its own (an @include'd file), or the model's. */
const char *graph_file_of(const struct graph *g, const char *file);

/* Byte size of a tensor; its element count times the dtype size (checked not to overflow by graph_check). */
uint64_t tensor_bytes(const struct tensor *t);
/* The bytes it takes in the arena: tensor_bytes, or its rows at their pitch where padded. */
uint64_t tensor_arena_bytes(const struct tensor *t);
/* Its element count (checked not to overflow by graph_check, as its bytes). */
uint64_t tensor_elems(const struct tensor *t);
/* Whether a and b have the same shape (dimensions and sizes). */
int tensor_same_shape(const struct tensor *a, const struct tensor *b);
/* "[8, 1024]" into buf. */
const char *shape_str(char *buf, size_t n, int ndim, const int64_t *shape);

/* Dumps: the checked graph as text (-dG), the op graph as Graphviz. */
void graph_dump(const struct graph *g, FILE *f);
void graph_dot(const struct graph *g, FILE *f);

#endif
