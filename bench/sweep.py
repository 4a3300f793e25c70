#!/usr/bin/env python3
"""sweep.py: the shape sweep's seeded random model generator, and its table.

usage:
  sweep.py gen --seed S --count N --out DIR [--index I]
      writes DIR/swS_000.cfg .. DIR/swS_<N-1>.cfg (with --index I: only model I). Model I depends on
      S and I alone, so any one of them is replayed with --index. Same seed: byte-identical files.
  sweep.py table OUT [OUT ...] [--models DIR] [--json FILE]
      reads the logs that `bench/sweep.sh --run` left in OUT, OUT/logs or OUT/logs.tar.gz (name the
      file) (the OUT dirs of one draw run in parts, MODELS=..., are merged) and prints one markdown row per model, the 10 worst ratios
      first in their own table, and the geometric means. --models DIR: where the .cfg and schedule
      .json files are when OUT lacks them.

Models are single-GPU graphs over the op catalog of abi/ark_ops.h (matmul with and without bias and
transpose_b, add, mul, scale, relu, gelu of both forms, silu, sigmoid, tanh, swiglu, softmax, layernorm,
rmsnorm, l2_normalize, reduce_mean, attention, embedding, reshape, slice, transpose, concat, rope,
decode_attention, argmax, dequantize, and the state ops assign, advance, kv_append), made of
blocks: elementwise/row-op chains, diamonds, parallel branches joined by adds, MLP blocks (matmul,
activation, matmul), GLU blocks (two matmuls, swiglu, matmul), residuals with a norm (pre- or
post-norm), attention blocks (q, k and v transpose_b projections, attention with or without GQA,
causal and a key padding mask, output projection, residual, layernorm), views (matmuls concatenated
in place, sliced, transposed through a size-1 axis or copied) and token embeddings (int32 ids of the
activation's leading shape) added to the activation, state blocks (the rows appended to a cache at an
input position, the cache's mean added, an accumulator updated by assign, a counter by advance),
decode steps (q projection, rope at an int32 position, decode_attention against cache inputs, output
projection, residual, and the argmax of logits or of the activation as an int32 output), and
sometimes a pooled output after them
(reduce_mean, under a mask of any dtype for 3-D activations, then perhaps l2_normalize). Rows
M from 1 to 512, mostly 1-16 (batch-1 decode); widths from 32 to 4096, drawn as primes, odd numbers,
multiples of 8, 16 or 64 and powers of two; 2-D [M, H] or 3-D [B, S, H] activations; broadcast
operands [H] (bias-like), per-row [M, 1] / [B, S, 1] / [S, 1] / [B, 1, 1] and [1]; fp16, bf16 or fp32;
at most 64 MiB of weights per model; transpose_b weights and embedding tables whose last dimension is
a multiple of 32 are sometimes block-quantized (q4_1 or q8_0), a quantized matmul weight sometimes read
through a dequantize op of the model file (a matmul of more than 16 rows gets one from arkgen
anyway). Python 3 standard library only.
"""

import argparse
import collections
import json
import math
import os
import random
import re
import sys
import tarfile
import tempfile

# ---- a random generator that every Python 3 draws the same way ---------------------------------
# random.Random seeded with a str is stable across versions (sha512 of the text) and so is random();
# its higher-level helpers (randrange, choice) are not promised to be, so only random() is used.


class Rng:
	def __init__(self, seed, index):
		self.r = random.Random("arkgen-sweep:%d:%d" % (seed, index))

	def u(self):
		return self.r.random()

	def int(self, lo, hi):
		"""Uniform integer in [lo, hi]."""
		return lo + min(int(self.u() * (hi - lo + 1)), hi - lo)

	def pick(self, seq):
		return seq[self.int(0, len(seq) - 1)]

	def weighted(self, pairs):
		"""One value of [(weight, value), ...]."""
		x = self.u() * sum(w for w, _ in pairs)
		for w, v in pairs:
			x -= w
			if x < 0:
				return v
		return pairs[-1][1]

	def chance(self, p):
		return self.u() < p

	def shuffle(self, a):
		for i in range(len(a) - 1, 0, -1):
			j = self.int(0, i)
			a[i], a[j] = a[j], a[i]


def is_prime(n):
	if n < 2:
		return False
	for p in range(2, int(math.isqrt(n)) + 1):
		if n % p == 0:
			return False
	return True


DTYPES = ("fp16", "bf16", "fp32")
DSIZE = {"fp16": 2, "bf16": 2, "fp32": 4}
QDTYPES = ("q4_1", "q8_0")  # block-quantized weights: a transpose_b matmul's b, an embedding table
QBLOCK = {"q4_1": 20, "q8_0": 34}  # bytes per block of 32 elements
WEIGHT_BUDGET = 64 << 20  # bytes of weights per model
KINDS = ("chain", "diamond", "branches", "mlp", "glu", "resnorm", "attn", "views", "embed", "state", "decode")
ACTS = ("relu", "gelu", "silu", "sigmoid", "tanh")
FACTORS = ("0.5", "0.125", "0.75", "1.5", "2.0", "-1.0", "0.3333", "1.25", "-0.6")


def dim(rng, lo, hi):
	"""A size in [lo, hi] (mostly 256 or more), log-uniform, of a random kind: prime, odd, multiple of 8
	(not 16), of 16 (not 64), of 64, or a power of two. Any size in range when the kind has none near."""
	if lo < 256 < hi and rng.chance(0.7):  # most widths of real layers are in the hundreds or more
		lo = 256
	target = math.exp(math.log(lo) + rng.u() * (math.log(hi) - math.log(lo)))
	kind = rng.weighted([(25, "prime"), (15, "odd"), (15, "m8"), (15, "m16"), (20, "m64"), (10, "pow2")])
	t = int(round(target))
	cands = []
	if kind == "prime":
		n = t
		while n <= hi and not is_prime(n):
			n += 1
		cands = [n] if n <= hi else []
	elif kind == "odd":
		cands = [t | 1]
	elif kind == "m8":
		cands = [8 * (2 * max(0, round((t / 8 - 1) / 2)) + 1)]
	elif kind == "m16":
		cands = [16 * (2 * max(0, round((t / 16 - 1) / 2)) + 1)]
	elif kind == "m64":
		cands = [64 * max(1, round(t / 64))]
	else:
		cands = [1 << max(0, round(math.log2(max(t, 1))))]
	cands = [c for c in cands if lo <= c <= hi]
	return cands[0] if cands else max(lo, min(hi, t))


def shape_text(s):
	return "[" + ", ".join(str(d) for d in s) + "]"


def broadcast(a, b):
	n = max(len(a), len(b))
	a, b = [1] * (n - len(a)) + list(a), [1] * (n - len(b)) + list(b)
	out = []
	for x, y in zip(a, b):
		if x != y and x != 1 and y != 1:
			raise AssertionError("generator bug: %s and %s do not broadcast" % (a, b))
		out.append(max(x, y))
	return out


class Model:
	"""A graph being drawn: tensors, ops in creation (topological) order, and shapes inferred as
	codegen/graph.c infers them (an assertion here is a generator bug, never arkgen's)."""

	def __init__(self, name, dtype, rng, hmax):
		self.name, self.dtype, self.rng, self.hmax = name, dtype, rng, hmax
		self.tensors = []  # (name, shape, role) of inputs and weights, in order
		self.tdtype = {}  # name -> dtype of the inputs whose dtype is not the model's (masks)
		self.ops = []  # {"name", "op", "in", "out", "attrs": [(key, text)]}
		self.shape = {}
		self.count = {}
		self.weight_bytes = 0
		self.kinds = []
		self.matmuls = []  # (K, N, transpose_b, bias)
		self.shrink = 0  # muls/swiglus since the last norm: values get small in fp16 without norms
		self.int32 = set()  # int32 inputs (token ids, positions)
		self.side = []  # outputs a block adds beside the activation (argmax's token ids)

	def fresh(self, prefix):
		self.count[prefix] = self.count.get(prefix, 0) + 1
		return "%s%d" % (prefix, self.count[prefix])

	def leaf(self, prefix, shape, role, name=None):
		n = name or self.fresh(prefix)
		self.tensors.append((n, list(shape), role))
		self.shape[n] = list(shape)
		if role == "weight":
			self.weight_bytes += math.prod(shape) * DSIZE[self.dtype]
		return n

	def weight(self, prefix, shape):
		return self.leaf(prefix, shape, "weight")

	def quantize(self, w):
		"""Sometimes stores weight w (last dimension a multiple of 32) as q4_1 or q8_0 blocks: a
		transpose_b matmul's b or an embedding table, the two places that take them."""
		s = self.shape[w]
		if s[-1] % 32 or not self.rng.chance(0.4):
			return
		q = self.rng.pick(QDTYPES)
		self.tdtype[w] = q
		self.weight_bytes -= math.prod(s) * DSIZE[self.dtype] - math.prod(s) // 32 * QBLOCK[q]

	def op(self, kind, ins, attrs=()):
		s = [self.shape[i] for i in ins]
		if kind == "matmul":
			tb = dict(attrs).get("transpose_b") == "true"
			a, b = s[0], s[1]
			assert len(a) >= 2 and len(b) == 2 and a[-1] == (b[1] if tb else b[0]), (kind, s, attrs)
			n = b[0] if tb else b[1]
			assert len(s) == 2 or s[2] == [n], (kind, s)
			out = a[:-1] + [n]
		elif kind in ("add", "mul"):
			out = broadcast(s[0], s[1])
		elif kind == "swiglu":
			assert s[0] == s[1], (kind, s)
			out = s[0]
		elif kind in ("layernorm", "rmsnorm"):
			assert all(v == [s[0][-1]] for v in s[1:]), (kind, s)
			out = s[0]
		elif kind == "reduce_mean":
			ax = int(dict(attrs)["axis"])
			ax = ax + len(s[0]) if ax < 0 else ax
			assert len(s) == 1 or (s[1] == s[0][:-1] and ax < len(s[0]) - 1), (kind, s, attrs)
			out = [d for i, d in enumerate(s[0]) if i != ax] or [1]
		elif kind == "attention":
			a = dict(attrs)
			h, hkv = int(a["heads"]), int(a.get("kv_heads", a["heads"]))
			q, k = s[0], s[1]
			assert len(q) in (2, 3) and q[-1] % h == 0 and h % hkv == 0 and s[2] == k, (kind, s, attrs)
			assert len(k) == len(q) and k[-1] == q[-1] // h * hkv and (len(q) == 2 or k[0] == q[0]), (kind, s)
			assert len(s) == 3 or s[3] == [q[0] if len(q) == 3 else 1, k[-2]], (kind, s)
			out = q
		elif kind in ("embedding", "reshape", "slice", "transpose", "concat", "kv_append"):
			out = view_shape(kind, s, dict(attrs))
		elif kind == "rope":
			assert len(s[0]) in (2, 3) and s[0][-1] % int(dict(attrs)["head_dim"]) == 0 and s[1] == [1], (kind, s)
			out = s[0]
		elif kind == "decode_attention":
			a = dict(attrs)
			h, hkv = int(a["heads"]), int(a.get("kv_heads", a["heads"]))
			q, k = s[0], s[1]
			assert len(q) == 2 and q[-1] % h == 0 and h % hkv == 0 and s[2] == k and s[3] == [1], (kind, s, attrs)
			assert len(k) == 2 and k[-1] == q[-1] // h * hkv and q[0] <= k[0], (kind, s)
			out = q
		elif kind == "argmax":
			out = s[0][:-1] or [1]
		else:
			assert len(ins) == 1
			out = s[0]
		o = self.fresh("t")
		self.shape[o] = list(out)
		self.ops.append({"name": self.fresh(OP_PREFIX[kind]), "op": kind, "in": list(ins), "out": o,
				 "attrs": list(attrs)})
		return o

	# ---- ops with their operands ----------------------------------------------------------------

	def matmul(self, x, n, bias=None, tb=None):
		k = self.shape[x][-1]
		tb = self.rng.chance(0.5) if tb is None else tb
		w = self.weight("w", [n, k] if tb else [k, n])
		if tb:
			self.quantize(w)
		if w in self.tdtype and self.rng.chance(0.25):  # the float weight made by a dequantize op of its own
			w = self.op("dequantize", [w])
		ins = [x, w]
		if bias if bias is not None else self.rng.chance(0.35):
			ins.append(self.weight("b", [n]))
		attrs = [("transpose_b", "true")] if tb else ([("transpose_b", "false")] if self.rng.chance(0.2) else [])
		self.matmuls.append((k, n, tb, len(ins) == 3))
		return self.op("matmul", ins, attrs)

	def norm(self, x, kind=None):
		kind = kind or self.rng.pick(("layernorm", "rmsnorm"))
		h = self.shape[x][-1]
		ins = [x, self.weight("g", [h])]
		if kind == "layernorm":
			ins.append(self.weight("be", [h]))
		attrs = []
		if self.rng.chance(0.3):
			attrs = [("eps", self.rng.pick(("1e-5", "1e-6", "0.0001")))]
		self.shrink = 0
		return self.op(kind, ins, attrs)

	def act(self, x, kind=None):
		kind = kind or self.rng.pick(ACTS)
		attrs = []
		if kind == "gelu":  # both forms, the default sometimes said out loud
			attrs = self.rng.weighted([(5, []), (4, [("approximate", '"tanh"')]), (1, [("approximate", '"none"')])])
		return self.op(kind, [x], attrs)

	def pool(self, x):
		"""A pooled output: the mean over the tokens of a 3-D [B, S, H] activation under a mask [B, S]
		of any dtype (an input), or over an axis of a 2-D one; then l2_normalize, sometimes."""
		s = self.shape[x]
		if len(s) == 3:
			m = self.leaf("mask", s[:-1], "input")
			dt = self.rng.pick(DTYPES)
			if dt != self.dtype:
				self.tdtype[m] = dt
			# weights in (0, 1) whatever the random input (--check fills inputs with values of
			# both signs, whose sums over S may come near 0): the sigmoid keeps the mask's dtype
			w = self.op("sigmoid", [m])
			self.shape[w] = list(s[:-1])
			y = self.op("reduce_mean", [x, w], [("axis", self.rng.pick(("1", "-2")))])
		else:
			y = self.op("reduce_mean", [x], [("axis", self.rng.pick(("0", "1", "-1")))])
		if self.rng.chance(0.6):
			attrs = [("eps", "1e-6")] if self.rng.chance(0.3) else []
			y = self.op("l2_normalize", [y], attrs)
		return y

	def operand(self, x):
		"""A second operand for add/mul with x: full shape, bias-like [H], per-row, [1] or [1, H], a
		weight or (sometimes) a second model input."""
		s = self.shape[x]
		lead, h = s[:-1], s[-1]
		kind = self.rng.weighted([(30, "full"), (30, "bias"), (20, "row"), (8, "scalar"), (12, "bias2")])
		if kind == "full":
			shape = list(s)
		elif kind == "bias":
			shape = [h]
		elif kind == "bias2":
			shape = [1, h]
		elif kind == "scalar":
			shape = [1]
		elif len(lead) == 1:
			shape = [lead[0], 1]
		else:  # 3-D: per row, per row of one sequence (broadcast over the batch), or per batch
			shape = self.rng.pick((lead + [1], lead[1:] + [1], [lead[0]] + [1] * (len(lead) - 1) + [1]))
		role = "input" if kind in ("full", "row") and self.rng.chance(0.3) else "weight"
		return self.leaf("v" if role == "weight" else "in", shape, role)

	def binary(self, x, kind):
		v = self.operand(x)
		if kind == "mul":
			self.shrink += 1
		return self.op(kind, [v, x] if self.rng.chance(0.3) else [x, v])

	def elementwise(self, x):
		"""One op of a chain on x, same shape out."""
		choices = [(14, "act"), (8, "scale"), (14, "add"), (6, "softmax"), (7, "norm"), (2, "l2norm")]
		if self.shrink < 2:
			choices += [(9, "mul"), (5, "swiglu")]
		k = self.rng.weighted(choices)
		if k == "act":
			return self.act(x)
		if k == "scale":
			return self.op("scale", [x], [("factor", self.rng.pick(FACTORS))])
		if k in ("add", "mul"):
			return self.binary(x, k)
		if k == "softmax":
			return self.op("softmax", [x])
		if k == "norm":
			return self.norm(x)
		if k == "l2norm":
			return self.op("l2_normalize", [x])
		self.shrink += 1
		w = self.weight("v", self.shape[x])
		return self.op("swiglu", [w, x] if self.rng.chance(0.3) else [x, w])

	def width(self):
		return dim(self.rng, 32, self.hmax)

	def views(self, x):
		"""x viewed as rows [M, H] (reshape), two matmuls written side by side into a concat along
		rows, a slice of M rows of it, a transpose (a view through a size-1 axis, or a copy there and
		back), a matmul back to H, and the result viewed in x's shape again."""
		rng, s = self.rng, self.shape[x]
		m = math.prod(s[:-1])
		x2 = self.op("reshape", [x], [("shape", "[%d, -1]" % m)]) if len(s) > 2 or rng.chance(0.5) else x
		n = self.width()
		parts = [self.matmul(x2, n) for _ in range(rng.int(2, 3))]
		if rng.chance(0.5):
			parts[-1] = self.act(parts[-1])
		c = self.op("concat", parts, [("axis", rng.pick(("0", "-2")))])
		start = rng.int(0, (len(parts) - 1) * m)
		y = self.op("slice", [c], [("axis", "0"), ("start", str(start)), ("end", str(start + m))])
		if rng.chance(0.5):
			y = self.op("transpose", [y], [("dims", "[0, 1]"), ("copy", "true")])
			if rng.chance(0.5):
				y = self.op("slice", [y], [("axis", "1"), ("start", "0"), ("end", str(m)), ("copy", "true")])
			y = self.op("transpose", [y], [("dims", "[1, 0]"), ("copy", "true")])
		else:
			y = self.op("reshape", [y], [("shape", "[1, %d, %d]" % (m, n))])
			y = self.op("transpose", [y], [("dims", "[0, 1]")])
		y = self.matmul(y, s[-1])
		return self.op("reshape", [y], [("shape", shape_text(s))]) if self.shape[y] != s else y

	def embed(self, x):
		"""x plus the embedding of token ids of x's leading shape, from a table of V rows."""
		s = self.shape[x]
		v_max = max(2, min(50000, WEIGHT_BUDGET // 4 // (s[-1] * DSIZE[self.dtype])))
		v = self.rng.int(2, v_max) if self.rng.chance(0.3) else dim(self.rng, 2, v_max)
		ids = self.leaf("ids", s[:-1], "input")
		self.int32.add(ids)
		tab = self.weight("tab", [v, s[-1]])
		self.quantize(tab)
		e = self.op("embedding", [ids, tab])
		return self.op("add", [x, e] if self.rng.chance(0.5) else [e, x])

	def update(self, kind, ins, attrs=()):
		"""An op that updates the state ins[0] in place (assign, advance): no output."""
		self.ops.append({"name": self.fresh(OP_PREFIX[kind]), "op": kind, "in": list(ins), "out": None,
				 "attrs": list(attrs)})

	def decode(self, x):
		"""A decode step over x's rows (T = M query rows, viewed [T, H]): q projected (transpose_b) and
		turned by rope at an int32 position (either pair order, a base, sometimes part of each head),
		decode_attention against key and value caches (inputs here) of L >= T rows, grouped-query
		sometimes, the output projection and the residual; and beside it, as an int32 output, the
		greedy token of every row: argmax over logits of a vocabulary (split across SMs when the rows
		are few and the vocabulary large) or over the activation itself."""
		rng, s = self.rng, self.shape[x]
		t, h = math.prod(s[:-1]), s[-1]
		x2 = self.op("reshape", [x], [("shape", "[%d, -1]" % t)]) if len(s) > 2 else x
		dh = rng.weighted([(4, 64), (2, 128), (1, 32), (1, 8 * rng.int(1, 16))])
		heads = rng.int(1, 16)
		while heads > 1 and heads * dh * h * 2 * DSIZE[self.dtype] > WEIGHT_BUDGET // 4:
			heads //= 2
		kv = rng.pick([d for d in range(1, heads + 1) if heads % d == 0]) if rng.chance(0.6) else heads
		cache = t + rng.weighted([(1, 0), (3, rng.int(1, 63)), (3, rng.int(64, 2048))])
		pos = self.leaf("pos", [1], "input")
		self.int32.add(pos)
		q = self.matmul(x2, heads * dh, bias=rng.chance(0.3), tb=True)
		rattrs = [("head_dim", str(dh))]
		if rng.chance(0.5):
			rattrs.append(("base", rng.pick(("10000.0", "100000.0", "500000.0"))))
		if rng.chance(0.3):
			rattrs.append(("rotary_dim", str(2 * rng.int(1, dh // 2))))
		if rng.chance(0.6):
			rattrs.append(("style", rng.pick(('"half"', '"interleaved"'))))
		qr = self.op("rope", [q, pos], rattrs)
		kc = self.leaf("kc", [cache, kv * dh], "input")
		vc = self.leaf("vc", [cache, kv * dh], "input")
		attrs = [("heads", str(heads))]
		if kv != heads or rng.chance(0.2):
			attrs.append(("kv_heads", str(kv)))
		if rng.chance(0.2):
			attrs.append(("scale", rng.pick(("0.125", "0.1", "0.25"))))
		y = self.matmul(self.op("decode_attention", [qr, kc, vc, pos], attrs), h, bias=rng.chance(0.5), tb=True)
		r = self.op("add", [x2, y] if rng.chance(0.5) else [y, x2])
		if rng.chance(0.6):  # logits of a vocabulary, its weight under a quarter of the budget
			v_max = max(2, min(131072, WEIGHT_BUDGET // 4 // (h * DSIZE[self.dtype])))
			v = rng.int(2, v_max) if rng.chance(0.3) else dim(rng, 2, v_max)
			self.side.append(self.op("argmax", [self.matmul(r, v, bias=False, tb=True)]))
		else:
			self.side.append(self.op("argmax", [r]))
		return self.op("reshape", [r], [("shape", shape_text(s))]) if self.shape[r] != s else r

	# ---- blocks: each takes the activation x and returns the next one ---------------------------

	def state(self, x):
		"""State across iterations: x's rows [M, H] appended to a cache [L, H] (L >= M) at a position
		drawn as an input (so any number of iterations fits), the cache's mean over its rows (the new
		rows included) added to x; an accumulator of x's shape whose old value is added too and which
		takes the result (assign); sometimes a step counter (advance)."""
		rng, s = self.rng, self.shape[x]
		m, h = math.prod(s[:-1]), s[-1]
		rows = x if len(s) == 2 else self.op("reshape", [x], [("shape", "[%d, %d]" % (m, h))])
		cache = self.leaf("cache", [m + rng.int(0, 64), h], "state")
		pos = self.leaf("pos", [1], "input")
		self.int32.add(pos)
		c2 = self.op("kv_append", [cache, rows, pos])
		y = self.op("add", [x, self.op("reduce_mean", [c2], [("axis", "0")])])
		acc = self.leaf("acc", s, "state")
		y = self.op("add", [y, self.op("scale", [acc], [("factor", "0.5")])])
		self.update("assign", [acc, y])
		if rng.chance(0.5):
			steps = self.leaf("steps", [1], "state")
			self.int32.add(steps)
			self.update("advance", [steps], [("by", str(rng.int(1, 3)))])
		return y

	def chain(self, x):
		n = self.rng.int(12, 24) if self.rng.chance(0.15) else self.rng.int(2, 7)
		for _ in range(n):
			x = self.elementwise(x)
		return x

	def diamond(self, x):
		h = self.shape[x][-1]
		for _ in range(self.rng.weighted([(6, 1), (3, 2), (1, 3)])):
			sides = []
			for side in range(2):
				y = x
				if side == 1 and self.rng.chance(0.25):
					sides.append(y)  # one side is x itself: a skip connection
					continue
				for _ in range(self.rng.int(1, 2)):
					k = self.rng.weighted([(5, "matmul"), (3, "act"), (1, "scale"), (1, "norm")])
					if k == "matmul":
						y = self.matmul(y, h)
					elif k == "act":
						y = self.act(y)
					elif k == "scale":
						y = self.op("scale", [y], [("factor", self.rng.pick(FACTORS))])
					else:
						y = self.norm(y)
				sides.append(y)
			if sides[0] == sides[1]:
				sides[1] = self.act(x)
			join = self.rng.weighted([(7, "add"), (2, "mul"), (1, "swiglu")])
			x = self.op(join, sides)
		return x

	def branches(self, x):
		n = self.width()
		ys = []
		for _ in range(self.rng.int(2, 6)):
			y = self.matmul(x, n)
			if self.rng.chance(0.6):
				y = self.act(y)
			if self.rng.chance(0.3):
				y = self.matmul(y, n)
			ys.append(y)
		while len(ys) > 1:  # a tree of adds
			ys = [self.op("add", ys[i:i + 2]) if i + 1 < len(ys) else ys[i] for i in range(0, len(ys), 2)]
		return ys[0]

	def mlp(self, x):
		h = self.shape[x][-1]
		y = self.act(self.matmul(x, self.width()))
		return self.matmul(y, h if self.rng.chance(0.7) else self.width())

	def glu(self, x):
		h = self.shape[x][-1]
		f = self.width()
		tb = self.rng.chance(0.5)  # gate and up share a layout, as in a checkpoint
		g = self.matmul(x, f, tb=tb)
		u = self.matmul(x, f, tb=tb)
		self.shrink = 0
		y = self.op("swiglu", [g, u])
		return self.matmul(y, h if self.rng.chance(0.8) else self.width())

	def resnorm(self, x):
		h = self.shape[x][-1]
		pre = self.rng.chance(0.5)
		y = self.norm(x) if pre else x
		k = self.rng.weighted([(4, "matmul"), (3, "mlp"), (1, "ew")])
		if k == "matmul":
			y = self.matmul(y, h)
			if self.rng.chance(0.5):
				y = self.act(y)
		elif k == "mlp":
			f = self.width()
			y = self.matmul(self.act(self.matmul(y, f)), h)
		else:
			y = self.elementwise(y)
		r = self.op("add", [x, y] if self.rng.chance(0.5) else [y, x])
		return r if pre else self.norm(r)

	def attn(self, x):
		"""Self-attention over x's rows ([M, H]: one sequence; [B, S, H]: B of them): q, k and v
		projections as a checkpoint's Linears (transpose_b), heads of 8 to 128 columns (multiples of 8),
		sometimes fewer kv heads, causal, a scale or a key padding mask, then the output projection,
		the residual and a layernorm."""
		rng, s = self.rng, self.shape[x]
		h = s[-1]
		dh = rng.weighted([(3, 64), (2, 32), (2, 128), (2, 8 * rng.int(1, 16))])
		heads = rng.int(1, 16)
		while heads > 1 and heads * dh * h * 4 * DSIZE[self.dtype] > WEIGHT_BUDGET // 2:
			heads //= 2
		kv = rng.pick([d for d in range(1, heads + 1) if heads % d == 0]) if rng.chance(0.4) else heads
		q = self.matmul(x, heads * dh, bias=rng.chance(0.5), tb=True)
		k = self.matmul(x, kv * dh, bias=False, tb=True)
		v = self.matmul(x, kv * dh, bias=rng.chance(0.5), tb=True)
		ins = [q, k, v]
		if rng.chance(0.4):
			ins.append(self.leaf("mask", [s[0] if len(s) == 3 else 1, s[-2]], "input"))
		attrs = [("heads", str(heads))]
		if kv != heads or rng.chance(0.2):
			attrs.append(("kv_heads", str(kv)))
		if rng.chance(0.4):
			attrs.append(("causal", "true"))
		if rng.chance(0.2):
			attrs.append(("scale", rng.pick(("0.125", "0.1", "0.25"))))
		y = self.matmul(self.op("attention", ins, attrs), h, bias=rng.chance(0.5), tb=True)
		r = self.op("add", [x, y] if rng.chance(0.5) else [y, x])
		return self.norm(r, "layernorm")

	# ---- the whole model ------------------------------------------------------------------------

	def draw(self, kind, three_d):
		rng = self.rng
		m = rng.weighted([(45, "decode"), (30, "mid"), (25, "large")])
		m = rng.int(1, 16) if m == "decode" else dim(rng, 17, 128) if m == "mid" else dim(rng, 129, 512)
		h = self.width()
		if three_d:
			b = rng.pick((1, 2, 3, 4, 8))
			lead = [b, max(1, int(round(m / b)))]
		else:
			lead = [m]
		x = self.leaf("x", lead + [h], "input", "x")
		self.x = x
		blocks = [kind]
		for _ in range(rng.weighted([(5, 0), (3, 1), (2, 2)])):
			blocks.insert(rng.int(0, len(blocks)), rng.pick(KINDS))
		outs = []
		for i, b in enumerate(blocks):
			x = getattr(self, b)(x)
			if i + 1 < len(blocks) and rng.chance(0.1):
				outs.append(x)  # an intermediate result is an output too
		if rng.chance(0.25):  # a pooled output beside the last activation, or instead of it
			p = self.pool(x)
			if rng.chance(0.5):
				outs.append(x)
			x = p
			blocks.append("pool")
		self.kinds = blocks
		outs.append(x)
		return self.side + outs


OP_PREFIX = {"rope": "rope", "decode_attention": "dec", "argmax": "amax","matmul": "mm", "add": "add", "mul": "mul", "scale": "sc", "relu": "relu", "gelu": "gelu",
	     "silu": "silu", "sigmoid": "sigm", "swiglu": "swiglu", "softmax": "smax", "layernorm": "ln", "rmsnorm": "rms",
	     "tanh": "tanh", "reduce_mean": "mean", "l2_normalize": "l2n", "attention": "attn",
	     "embedding": "emb", "reshape": "rs", "slice": "sl", "transpose": "tr", "concat": "cat",
	     "kv_append": "kv", "assign": "asg", "advance": "adv", "dequantize": "dq"}


def view_shape(kind, s, attrs):
	"""Output shape of an embedding or a view op, from its input shapes and attributes (as text)."""
	nums = lambda t: [int(d) for d in t.strip("[]").split(",")]  # noqa: E731
	a = list(s[0])
	if kind == "embedding":
		assert len(s[1]) == 2, (kind, s)
		return a + [s[1][1]]
	if kind == "kv_append":
		assert len(a) == 2 and len(s[1]) == 2 and s[1][1] == a[1] and s[1][0] <= a[0] and s[2] == [1], (kind, s)
		return a
	if kind == "reshape":
		shape, n = nums(attrs["shape"]), math.prod(a)
		known = math.prod(d for d in shape if d != -1)
		shape = [n // known if d == -1 else d for d in shape]
		assert math.prod(shape) == n, (kind, s, attrs)
		return shape
	if kind == "slice":
		ax, start, end = int(attrs["axis"]) % len(a), int(attrs["start"]), int(attrs["end"])
		assert 0 <= start < end <= a[ax], (kind, s, attrs)
		return a[:ax] + [end - start] + a[ax + 1:]
	if kind == "transpose":
		d0, d1 = [d % len(a) for d in nums(attrs["dims"])]
		a[d0], a[d1] = a[d1], a[d0]
		return a
	ax = int(attrs["axis"]) % len(a)  # concat
	assert all(len(b) == len(a) and all(x == y for d, (x, y) in enumerate(zip(a, b)) if d != ax) for b in s), (kind, s)
	return a[:ax] + [sum(b[ax] for b in s)] + a[ax + 1:]


def render(m, outs, seed, index):
	"""The model file's text: header comment, then version, name, dtype, tensors, ops."""
	names = {}  # the outputs are y (the last one) and y1, y2 (intermediate ones)
	for i, o in enumerate(outs):
		names[o] = "y" if o == outs[-1] else "y%d" % (i + 1)
	ren = lambda t: names.get(t, t)  # noqa: E731
	ops = list(m.ops)
	shuffled = m.rng.chance(0.2)  # the format says op order does not matter: hold arkgen to it
	if shuffled:
		m.rng.shuffle(ops)
	x = m.shape[m.x]
	mm = m.matmuls
	widths = []
	for k, n, _, _ in mm:
		for d in (k, n):
			if d not in widths:
				widths.append(d)
	summ = "%s %s x%s, %d ops" % ("+".join(m.kinds), m.dtype, shape_text(x).replace(" ", ""), len(ops))
	if mm:
		summ += ", %d matmul (%d transpose_b, %d bias) over %s" % (
			len(mm), sum(1 for t in mm if t[2]), sum(1 for t in mm if t[3]), ",".join(str(w) for w in widths))
	nq = sum(1 for n, _, r in m.tensors if m.tdtype.get(n) in QDTYPES)
	if nq:
		summ += ", %d of them q4_1/q8_0" % nq if mm else ", %d q4_1/q8_0 table%s" % (nq, "s" if nq > 1 else "")
	wb = m.weight_bytes
	summ += ", %s of weights" % ("%.1f MiB" % (wb / (1 << 20)) if wb >= 1 << 20 else "%.1f KiB" % (wb / 1024))
	lines = ["# sweep seed %d, index %d: %s" % (seed, index, summ),
		 "# drawn by bench/sweep.py gen --seed %d --index %d%s" % (
			 seed, index, " (ops listed in shuffled order)" if shuffled else ""),
		 "version = 1;", 'name = "%s";' % m.name, 'dtype = "%s";' % m.dtype, "", "tensors = ("]
	ts = ['  { name = "%s"; shape = %s; role = "%s";%s }' % (
		n, shape_text(s), r, ' dtype = "%s";' % ("int32" if n in m.int32 else m.tdtype[n])
		if n in m.int32 or n in m.tdtype else "") for n, s, r in m.tensors]
	ts += ['  { name = "%s"; role = "output"; }' % names[o] for o in outs]
	lines.append(",\n".join(ts))
	lines += [");", "", "ops = ("]
	os_ = []
	for o in ops:
		ins = ", ".join('"%s"' % ren(i) for i in o["in"])
		at = "".join(" %s = %s;" % kv for kv in o["attrs"])
		if o["out"] is None:  # an update in place (assign, advance): no output
			os_.append('  { name = "%s"; op = "%s"; in = [%s];%s }' % (o["name"], o["op"], ins, at))
			continue
		os_.append('  { name = "%s"; op = "%s"; in = [%s]; out = "%s";%s }' % (
			o["name"], o["op"], ins, ren(o["out"]), at))
	lines.append(",\n".join(os_))
	lines.append(");")
	return "\n".join(lines) + "\n", summ


def model_name(seed, index):
	return "sw%d_%03d" % (seed, index)


def generate(seed, index):
	"""The text of model `index` of `seed`. Draws again with smaller widths while the weights exceed
	the budget (deterministic: the retries are part of the draw)."""
	rng = Rng(seed, index)
	kind = KINDS[index % len(KINDS)]
	dtype = rng.pick(DTYPES)
	three_d = rng.chance(0.35)
	hmax = 4096
	for _ in range(40):
		m = Model(model_name(seed, index), dtype, rng, hmax)
		outs = m.draw(kind, three_d)
		if m.weight_bytes <= WEIGHT_BUDGET:
			return render(m, outs, seed, index)[0]
		hmax = max(64, int(hmax * 0.8))
	raise AssertionError("no model under the weight budget after 40 draws (seed %d, index %d)" % (seed, index))


def cmd_gen(a):
	if a.seed < 0 or a.count < 0:
		print("sweep.py gen: --seed and --count must be >= 0", file=sys.stderr)
		return 2
	os.makedirs(a.out, exist_ok=True)
	idx = [a.index] if a.index is not None else range(a.count)
	for i in idx:
		path = os.path.join(a.out, model_name(a.seed, i) + ".cfg")
		with open(path, "w") as f:
			f.write(generate(a.seed, i))
	return 0


# ---- the table ------------------------------------------------------------------------------------

# the log formats and readers of the model benchmark (bench/table.py, beside this file)
from table import BENCH_RE, TORCH_VARIANTS, read, read_rc  # noqa: E402


def find(dirs, fname):
	"""The first DIR/fname or DIR/logs/fname of dirs."""
	for d in dirs:
		for p in (os.path.join(d, fname), os.path.join(d, "logs", fname)):
			if os.path.exists(p):
				return p
	return None


def collect_one(name, dirs):
	e = {"name": name}
	cfg = read(find(dirs, name + ".cfg") or "") or ""
	m = re.match(r"# sweep seed \d+, index \d+: (.*)", cfg)
	e["shape"] = m.group(1) if m else "?"
	e["skip"] = (read(find(dirs, name + ".skip") or "") or "").strip() or None
	e["check_rc"] = read_rc(find(dirs, name + ".check.rc") or "")
	log = read(find(dirs, name + ".check.log") or "") or ""
	e["check_note"] = next((ln.strip() for ln in log.splitlines() if "error" in ln.lower() or "MISMATCH" in ln), None)
	b = BENCH_RE.search(read(find(dirs, name + ".bench.log") or "") or "")
	e["arkgen_us"] = float(b.group(3)) if b else None
	e["predicted_us"] = float(b.group(6)) if b and b.group(6) else None
	if e["predicted_us"] is None:
		try:
			with open(find(dirs, name + ".json") or "") as f:
				e["predicted_us"] = json.load(f).get("predicted_us")
		except (OSError, ValueError):
			pass
	# the costs the prediction came from (arkgen's report: "costs: calibration table NAME (GPU, N SMs, ...")
	rep = read(find(dirs, name + ".report") or "") or ""
	c = re.search(r"costs: calibration table (\S+) \(([^,]+), \d+ SMs, (measured [0-9-]+|uncalibrated)", rep)
	e["calib"] = "%s (%s, %s)" % c.groups() if c else "the analytic model" if "costs: the analytic model" in rep else None
	e["calib_gpu"] = c.group(2) if c else None
	pm = re.search(r"^  placement (\w+):", rep, re.M)  # the policy arkgen kept (--policy auto: by prediction)
	e["placement"] = pm.group(1) if pm else None
	e["torch"], e["best_us"], e["best_variant"] = None, None, None
	try:
		with open(find(dirs, name + ".torch.json") or "") as f:
			t = json.load(f)
	except (OSError, ValueError):
		t = None
	if t:
		e["gpu"] = t.get("meta", {}).get("gpu")
		e["torch"] = {}
		for v in TORCH_VARIANTS:
			r = t.get(v)
			if not isinstance(r, dict) or r.get("median_us") is None:
				continue
			e["torch"][v] = r["median_us"]
			if r.get("matches_eager") is False:  # wrong results: not a baseline
				continue
			if e["best_us"] is None or r["median_us"] < e["best_us"]:
				e["best_us"], e["best_variant"] = r["median_us"], v
	else:
		tl = (read(find(dirs, name + ".torch.log") or "") or "").strip().splitlines()
		e["torch_note"] = tl[-1] if tl else None
	a, p = e["arkgen_us"], e["best_us"]
	e["ratio"] = p / a if a and p else None
	e["pred_ratio"] = e["predicted_us"] / a if a and e["predicted_us"] else None
	return e


def fmt(v, d=1):
	return "-" if v is None else "%.*f" % (d, v)


def check_cell(e):
	if e["skip"]:
		return "not built"
	rc = e["check_rc"]
	return "-" if rc is None else "ok" if rc == 0 else "FAIL (exit %d)" % rc


def row(e):
	return "| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
		e["name"], e["shape"], check_cell(e), fmt(e["arkgen_us"]), fmt(e["best_us"]), e["best_variant"] or "-",
		"-" if e["ratio"] is None else "%.2fx" % e["ratio"], fmt(e["predicted_us"]), fmt(e["pred_ratio"], 2))


HEAD = ["| model | shape | check | arkgen (us) | best PyTorch (us) | variant | best PyTorch / arkgen "
	"| predicted (us) | predicted / measured |", "|---|---|---|---|---|---|---|---|---|"]


def geomean(v):
	return math.exp(sum(math.log(x) for x in v) / len(v)) if v else None


def classes(e):
	"""The classes a model's row counts in: its dtype, the rows of its input x (M: the product of x's
	leading dimensions) as at most 16, 17-128 or more, and the two together; none where the shape is
	not a sweep model's."""
	m = re.search(r" (fp16|bf16|fp32) x\[([0-9,]+)\]", e["shape"] or "")
	if not m:
		return []
	rows = 1
	for d in m.group(2).split(",")[:-1]:
		rows *= int(d)
	rg = "M <= 16" if rows <= 16 else "M 17-128" if rows <= 128 else "M > 128"
	return [m.group(1), rg, "%s, %s" % (m.group(1), rg)]


def by_class(ok):
	"""The table of geometric means by class: dtypes, then rows, then the two together."""
	cl = collections.defaultdict(list)
	for e in ok:
		if e["ratio"] is not None:
			for c in classes(e):
				cl[c].append(e["ratio"])
	if not cl:
		return []
	rank = {"fp16": 0, "bf16": 1, "fp32": 2, "M <= 16": 3, "M 17-128": 4, "M > 128": 5}
	order = sorted(cl, key=lambda c: (c.count(","), [rank[x] for x in c.split(", ")]))
	out = ["", "By class (dtype; M: the rows of the input x, its leading dimensions together):", "",
	       "| class | models | best PyTorch / arkgen, geometric mean | arkgen at least as fast |", "|---|---|---|---|"]
	for c in order:
		v = cl[c]
		out.append("| %s | %d | %.2fx | %d |" % (c, len(v), geomean(v), sum(1 for x in v if x >= 1)))
	return out


def table(rows, gpu):
	out = ["GPU: %s; %d models" % (gpu or "unknown (nothing measured)", len(rows)), ""]
	ranked = sorted((e for e in rows if e["ratio"] is not None), key=lambda e: e["ratio"])
	out += ["The 10 worst ratios (best PyTorch / arkgen; below 1: PyTorch is faster):", ""] + HEAD
	out += [row(e) for e in ranked[:10]] or ["| (nothing measured) |||||||||"]
	out += ["", "Every model:", ""] + HEAD + [row(e) for e in rows]
	ok = [e for e in rows if e["check_rc"] == 0]
	r = [e["ratio"] for e in ok if e["ratio"] is not None]
	p = [e["pred_ratio"] for e in ok if e["pred_ratio"] is not None]
	g, gp = geomean(r), geomean(p)
	out += ["",
		"Geometric mean of best PyTorch / arkgen: %s over %d models whose --check passed; arkgen at least "
		"as fast on %d of them." % ("-" if g is None else "%.2fx" % g, len(r), sum(1 for x in r if x >= 1)),
		"Geometric mean of predicted / measured: %s over %d models; within [0.67, 1.5] on %d." % (
			fmt(gp, 2), len(p), sum(1 for x in p if 0.67 <= x <= 1.5))]
	out += by_class(ok)
	pl = collections.Counter(e["placement"] for e in rows if e.get("placement"))
	if pl:
		out.append("Placement kept: %s." % ", ".join("%s on %d" % (k, pl[k]) for k in sorted(pl)))
	tabs = sorted({e["calib"] for e in rows if e.get("calib")})
	if tabs:
		out.append("Predictions from %s." % "; ".join(tabs))
	other = sorted({e["calib_gpu"] for e in rows if e.get("calib_gpu") and gpu and e["calib_gpu"] != gpu})
	if other:
		out.append("- the predictions are of %s, not of %s that ran them: build with ARKGEN_FLAGS=\"--gpu "
			   "NAME\" naming this GPU's table to predict for it" % (" and ".join(other), gpu))
	bad = [e for e in rows if e["skip"] or (e["check_rc"] not in (0, None))]
	for e in bad:
		out.append("- %s: %s" % (e["name"], e["skip"] or "--check failed: %s" % (e["check_note"] or "see log")))
	for e in rows:
		if e["torch"] is None and e.get("torch_note"):
			out.append("- %s, PyTorch: %s" % (e["name"], e["torch_note"]))
	out += ["", "Medians per iteration: arkgen host-timed from doorbell to completion (--bench), PyTorch "
		"by CUDA events around each forward (bench/torch_baseline.py), which leave out the host's launch "
		"and its wait for completion; a PyTorch variant whose outputs differ from eager is left out of "
		"the best."]
	return "\n".join(out)


def unpack(paths, tmp):
	"""paths, with each .tar.gz of logs (sweep.sh --run's OUT/logs.tar.gz) replaced by its contents."""
	out = []
	for i, p in enumerate(paths):
		if os.path.isfile(p) and p.endswith((".tar.gz", ".tgz")):
			d = os.path.join(tmp, str(i))
			with tarfile.open(p) as t:
				for m in t.getmembers():  # logs/NAME.*: plain files, no links, nothing outside d
					if m.isfile() and re.fullmatch(r"(logs/)?[A-Za-z0-9_.-]+", m.name):
						t.extract(m, d)
			p = d
		out.append(p)
	return out


def cmd_table(a):
	with tempfile.TemporaryDirectory() as tmp:
		return table_of(unpack(a.dirs, tmp) + ([a.models] if a.models else []), a.json)


def table_of(dirs, json_path):
	names = set()
	for d in dirs:
		if not os.path.isdir(d):
			print("sweep.py table: no folder %s" % d, file=sys.stderr)
			return 1
		for sub in (d, os.path.join(d, "logs")):
			if os.path.isdir(sub):
				names.update(f[:-4] for f in os.listdir(sub) if f.endswith(".cfg"))
	if not names:
		print("sweep.py table: no model files (.cfg) in %s" % ", ".join(dirs), file=sys.stderr)
		return 1
	rows = [collect_one(n, dirs) for n in sorted(names)]
	gpu = (read(find(dirs, "gpu.txt") or "") or "").strip().splitlines()
	gpu = gpu[0] if gpu else next((e.get("gpu") for e in rows if e.get("gpu")), None)
	print(table(rows, gpu))
	if json_path:
		with open(json_path, "w") as f:
			json.dump({"gpu": gpu, "models": rows}, f, indent=1)
			f.write("\n")
	return 0


def main(argv):
	ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
	sub = ap.add_subparsers(dest="cmd", required=True)
	g = sub.add_parser("gen", help="write random models")
	g.add_argument("--seed", type=int, required=True)
	g.add_argument("--count", type=int, default=40)
	g.add_argument("--index", type=int, help="write only model INDEX")
	g.add_argument("--out", required=True, help="folder for the .cfg files")
	t = sub.add_parser("table", help="the markdown table of a run")
	t.add_argument("dirs", nargs="+", help="output folders of sweep.sh --run, or their logs.tar.gz")
	t.add_argument("--models", help="folder of the built models (.cfg, schedule .json)")
	t.add_argument("--json", help="also write the rows as JSON to this file")
	a = ap.parse_args(argv)
	return cmd_gen(a) if a.cmd == "gen" else cmd_table(a)


if __name__ == "__main__":
	sys.exit(main(sys.argv[1:]))
