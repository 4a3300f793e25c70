#!/usr/bin/env python3
"""torch_baseline.py: runs the graph of an arkgen schedule JSON as PyTorch ops on one GPU and times one
forward in four ways: eager, one captured CUDA graph, torch.compile (default mode) and torch.compile
(mode "reduce-overhead", which replays CUDA graphs).

usage: torch_baseline.py SCHEDULE.json [--iters 1000] [--warmup 100] [--json OUT] [--seed 1]
                         [--variants eager,graph,compile,compile_ro] [--pipelined] [--plan]

The schedule is what `arkgen MODEL.cfg --schedule SCHEDULE.json` writes; its "tensors" and "ops" arrays
describe the graph. Every op of the single-GPU catalog runs as the matching PyTorch op in the tensors'
dtypes; inputs and weights are drawn as the generated binaries draw them (uniform in [-1, 1), weights of
2 or more dimensions scaled by 1/sqrt(rows)), seeded. Each forward is timed by CUDA events recorded
around it; by default the host waits for every forward before starting the next (latency, as the
arkgen binary's --bench measures it), --pipelined leaves the forwards queued back to back instead.
Every variant is checked against eager on freshly drawn inputs (relative error of the outputs).
--plan checks the graph and prints it with the inferred shapes, without torch or a GPU.

Weights of the block-quantized dtypes q4_1 and q8_0 (GGUF's blocks of 32) are drawn, quantised and
dequantised once when the model is built, to the dtype their op computes in (a matmul's a, an
embedding's output, a dequantize's output): PyTorch has no kernel for those blocks, so it runs those
matmuls on the dequantised weight (which reads 3.2x (q4_1) or 1.9x (q8_0) the bytes from bf16), and
says so. A dequantize op (the ones arkgen inserts before a quantized matmul of more than 16 rows, or
one of the model file) is then the weight itself, dequantised once at build: no work per forward.

Exit status: 0 ok, 1 bad schedule or a failure of the eager run, 2 usage error, 77 no CUDA device.
"""

import argparse
import json
import math
import sys
import time

DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "int32": "int32"}
QDTYPES = ("q4_1", "q8_0")  # block-quantized weights: dequantised at build time (quantized_weights)
# op kind -> (fewest inputs, most inputs)
ARITY = {
	"matmul": (2, 3), "add": (2, 2), "mul": (2, 2), "scale": (1, 1), "relu": (1, 1), "gelu": (1, 1),
	"silu": (1, 1), "sigmoid": (1, 1), "swiglu": (2, 2), "softmax": (1, 1), "layernorm": (3, 3), "rmsnorm": (2, 2),
	"copy": (1, 1), "tanh": (1, 1), "reduce_mean": (1, 2), "l2_normalize": (1, 1), "attention": (3, 4),
	"embedding": (2, 2), "reshape": (1, 1), "slice": (1, 1), "transpose": (1, 1), "concat": (1, 8),
	"assign": (2, 2), "advance": (1, 1), "kv_append": (3, 3),
	"rope": (2, 2), "decode_attention": (4, 4), "argmax": (1, 1), "dequantize": (1, 1),
}
STATE_UPDATES = ("assign", "advance")  # ops without an output: they update their state in[0] in place
ROPE_POS_RANGE = 8192  # positions drawn for a rope alone (runtime/ark.h: ARK_ROPE_POS_RANGE)
MULTI_GPU_OPS = ("all_reduce", "all_gather")
DEFAULT_EPS = {"layernorm": 1e-5, "rmsnorm": 1e-6, "l2_normalize": 1e-12}
VARIANTS = ("eager", "graph", "compile", "compile_ro")
# relative error of a variant against eager above which it is flagged (the binaries' --check defaults)
TOLERANCE = {"fp32": 1e-4, "bf16": 3e-2, "fp16": 1e-2}


class GraphError(Exception):
	"""The schedule does not describe a graph this script can run."""


# ---- the graph, in plain Python (no torch needed) ------------------------------------------------

def _shape_str(s):
	return "[" + ", ".join(str(d) for d in s) + "]"


def _broadcast(a, b, where):
	n = max(len(a), len(b))
	out = []
	for x, y in zip([1] * (n - len(a)) + list(a), [1] * (n - len(b)) + list(b)):
		if x != y and x != 1 and y != 1:
			raise GraphError("%s: shapes %s and %s do not broadcast" % (where, _shape_str(a), _shape_str(b)))
		out.append(max(x, y))
	return out


def _infer(kind, shapes, attrs, where):
	"""Output shape of one op from its input shapes; also says whether b of a matmul is [N, K]."""
	a = shapes[0]
	if kind == "matmul":
		b = shapes[1]
		if len(a) < 1 or len(b) != 2:
			raise GraphError("%s: matmul of %s by %s, expected [..., M, K] by [K, N]" %
					 (where, _shape_str(a), _shape_str(b)))
		k = a[-1]
		tb = bool(attrs.get("transpose_b", False))
		if "transpose_b" not in attrs and b[0] != k and b[1] == k:
			tb = True  # [N, K] weight without the attribute: the only reading that fits
		n = b[0] if tb else b[1]
		if (b[1] if tb else b[0]) != k:
			raise GraphError("%s: matmul of %s by %s%s: inner dimensions differ" %
					 (where, _shape_str(a), _shape_str(b), " (transposed)" if tb else ""))
		if len(shapes) == 3 and list(shapes[2]) != [n]:
			raise GraphError("%s: bias %s, expected [%d]" % (where, _shape_str(shapes[2]), n))
		return list(a[:-1]) + [n], tb
	if kind in ("add", "mul"):
		return _broadcast(a, shapes[1], where), False
	if kind in ("embedding", "reshape", "slice", "transpose", "concat"):
		return _infer_view(kind, shapes, attrs, where), False
	if kind == "swiglu" and list(shapes[1]) != list(a):
		raise GraphError("%s: swiglu of %s and %s, expected equal shapes" %
				 (where, _shape_str(a), _shape_str(shapes[1])))
	if kind == "reduce_mean":
		ax = int(attrs["axis"])
		ax = ax + len(a) if ax < 0 else ax
		if not 0 <= ax < len(a):
			raise GraphError("%s: axis %d of %s" % (where, attrs["axis"], _shape_str(a)))
		if len(shapes) == 2 and (list(shapes[1]) != list(a[:-1]) or ax == len(a) - 1):
			raise GraphError("%s: mask %s for %s over axis %d, expected %s and not the last axis" %
					 (where, _shape_str(shapes[1]), _shape_str(a), ax, _shape_str(a[:-1])))
		return [d for i, d in enumerate(a) if i != ax] or [1], False
	if kind == "attention":
		return _infer_attention(shapes, attrs, where), False
	if kind in ("rope", "decode_attention", "argmax"):
		return _infer_decode(kind, shapes, attrs, where), False
	if kind in ("layernorm", "rmsnorm"):
		for s in shapes[1:]:
			if list(s) != [a[-1]]:
				raise GraphError("%s: %s parameter %s, expected [%d]" % (where, kind, _shape_str(s), a[-1]))
	return list(a), False


def _infer_attention(shapes, attrs, where):
	"""attention: q [B, Sq, heads*Dh] or [Sq, heads*Dh], k and v [B, Skv, kv_heads*Dh], mask [B, Skv]."""
	q, k, v = shapes[0], shapes[1], shapes[2]
	h = int(attrs.get("heads", 0))
	hkv = int(attrs.get("kv_heads", h))
	if len(q) not in (2, 3) or h < 1 or hkv < 1 or q[-1] % h or h % hkv:
		raise GraphError("%s: attention of q %s with heads %d, kv_heads %d" % (where, _shape_str(q), h, hkv))
	b = q[0] if len(q) == 3 else 1
	if len(k) != len(q) or list(v) != list(k) or k[-1] != q[-1] // h * hkv or (len(q) == 3 and k[0] != b):
		raise GraphError("%s: attention of q %s, k %s, v %s" % (where, _shape_str(q), _shape_str(k), _shape_str(v)))
	if len(shapes) == 4 and list(shapes[3]) != [b, k[-2]]:
		raise GraphError("%s: attention mask %s, expected [%d, %d]" % (where, _shape_str(shapes[3]), b, k[-2]))
	return list(q)


def _sdpa(torch, a, attrs):
	"""arkgen's attention through F.scaled_dot_product_attention: heads split from the rows' columns,
	kv heads shared (enable_gqa where this torch has it, else repeated), the mask's nonzero keys
	allowed, causal aligned to the bottom right (query i sees key j <= i + Skv - Sq, which is SDPA's
	is_causal only when Sq == Skv)."""
	F = torch.nn.functional
	q, k, v = a[0], a[1], a[2]
	two_d = q.dim() == 2
	if two_d:
		q, k, v = q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0)
	h = int(attrs["heads"])
	hkv = int(attrs.get("kv_heads", h))
	B, sq, e = q.shape
	skv, dh = k.shape[1], e // h
	qh = q.view(B, sq, h, dh).transpose(1, 2)
	kh = k.view(B, skv, hkv, dh).transpose(1, 2)
	vh = v.view(B, skv, hkv, dh).transpose(1, 2)
	causal = bool(attrs.get("causal", False))
	mask = None
	if len(a) == 4:
		mask = (a[3] != 0).view(B, 1, 1, skv)
	if causal and (mask is not None or sq != skv):
		tri = torch.ones(sq, skv, dtype=torch.bool, device=q.device).tril(skv - sq)
		mask = tri if mask is None else mask & tri
		causal = False
	kw = {"attn_mask": mask, "is_causal": causal, "scale": float(attrs.get("scale", 1.0 / math.sqrt(dh)))}
	if hkv != h:
		try:
			y = F.scaled_dot_product_attention(qh, kh, vh, enable_gqa=True, **kw)
		except TypeError:  # torch < 2.5: no enable_gqa
			kh, vh = kh.repeat_interleave(h // hkv, dim=1), vh.repeat_interleave(h // hkv, dim=1)
			y = F.scaled_dot_product_attention(qh, kh, vh, **kw)
	else:
		y = F.scaled_dot_product_attention(qh, kh, vh, **kw)
	y = y.transpose(1, 2).reshape(B, sq, e)
	return y[0] if two_d else y
def _infer_view(kind, shapes, attrs, where):
	"""Output shape of an embedding or a view op (axes as arkgen's schedule gives them, normalised)."""
	a = list(shapes[0])
	if kind == "embedding":
		if len(shapes[1]) != 2:
			raise GraphError("%s: table %s, expected [V, D]" % (where, _shape_str(shapes[1])))
		return a + [shapes[1][1]]
	if kind == "reshape":
		shape = [int(d) for d in attrs["shape"]]
		n, known = math.prod(a), math.prod(d for d in shape if d != -1)
		shape = [n // known if d == -1 else d for d in shape]
		if math.prod(shape) != n:
			raise GraphError("%s: reshape of %s to %s" % (where, _shape_str(a), _shape_str(attrs["shape"])))
		return shape
	if kind == "slice":
		ax, start, end = int(attrs["axis"]), int(attrs["start"]), int(attrs["end"])
		if not 0 <= start < end <= a[ax]:
			raise GraphError("%s: elements %d..%d of axis %d of %s" % (where, start, end, ax, _shape_str(a)))
		return a[:ax] + [end - start] + a[ax + 1:]
	if kind == "transpose":
		d0, d1 = [int(d) % len(a) for d in attrs["dims"]]
		a[d0], a[d1] = a[d1], a[d0]
		return a
	ax = int(attrs["axis"]) % len(a)  # concat
	for s in shapes[1:]:
		if len(s) != len(a) or any(x != y for d, (x, y) in enumerate(zip(s, a)) if d != ax):
			raise GraphError("%s: concat of %s and %s along axis %d" % (where, _shape_str(a), _shape_str(s), ax))
	return a[:ax] + [sum(s[ax] for s in shapes)] + a[ax + 1:]


def _infer_decode(kind, shapes, attrs, where):
	"""rope: x [T, E] or [B, T, E], pos [1]; decode_attention: q [T, heads*Dh], caches [L, kv_heads*Dh],
	pos [1]; argmax: x [..., N] -> [...] ([1] for a 1-D x)."""
	a = list(shapes[0])
	if kind == "argmax":
		return a[:-1] or [1]
	if list(shapes[-1]) != [1]:
		raise GraphError("%s: position %s, expected [1]" % (where, _shape_str(shapes[-1])))
	if kind == "rope":
		if len(a) not in (2, 3) or a[-1] % int(attrs["head_dim"]):
			raise GraphError("%s: rope of %s with head_dim %s" % (where, _shape_str(a), attrs["head_dim"]))
		return a
	h = int(attrs.get("heads", 0))
	hkv = int(attrs.get("kv_heads", h))
	k, v = shapes[1], shapes[2]
	if len(a) != 2 or h < 1 or hkv < 1 or a[-1] % h or h % hkv or len(k) != 2 or list(v) != list(k) or \
			k[-1] != a[-1] // h * hkv or a[0] > k[0]:
		raise GraphError("%s: decode_attention of q %s, caches %s, %s with heads %d, kv_heads %d" %
				 (where, _shape_str(a), _shape_str(k), _shape_str(v), h, hkv))
	return a


def _rope(torch, a, attrs):
	"""arkgen's rope: row t of x at position pos + t (pos read on the GPU, no host sync); angles
	(pos + t) / base^(2i / rotary_dim) in fp32, pairs (i, i + rd/2) ("half") or (2i, 2i + 1)."""
	x, pos = a[0], a[1]
	dh = int(attrs["head_dim"])
	rd = int(attrs.get("rotary_dim", dh))
	base = float(attrs.get("base", 10000.0))
	t = x.shape[-2]
	inv = 1.0 / (base ** (torch.arange(0, rd, 2, device=x.device, dtype=torch.float32) / rd))
	p = pos.float() + torch.arange(t, device=x.device, dtype=torch.float32)  # [T]
	ang = p[:, None] * inv[None, :]  # [T, rd/2]
	c, s = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]  # [T, 1, rd/2]: every head
	xh = x.float().view(*x.shape[:-1], x.shape[-1] // dh, dh)  # [..., T, H, Dh]
	rest = xh[..., rd:]
	if attrs.get("style", "half") == "interleaved":
		xa, xb = xh[..., 0:rd:2], xh[..., 1:rd:2]
		rot = torch.stack((xa * c - xb * s, xb * c + xa * s), dim=-1).flatten(-2)
	else:
		xa, xb = xh[..., :rd // 2], xh[..., rd // 2:rd]
		rot = torch.cat((xa * c - xb * s, xb * c + xa * s), dim=-1)
	return torch.cat((rot, rest), dim=-1).reshape(x.shape)


def _decode_sdpa(torch, a, attrs):
	"""arkgen's decode_attention through SDPA over the whole cache (static shapes, as a CUDA-graph
	decoder does): row t sees the keys j <= pos + t, a boolean mask made on the GPU from pos."""
	F = torch.nn.functional
	q, k, v, pos = a
	t, e = q.shape
	L = k.shape[0]
	h = int(attrs["heads"])
	hkv = int(attrs.get("kv_heads", h))
	dh = e // h
	rows = pos.long() + torch.arange(t, device=q.device)  # [T]: each row's last key
	mask = (torch.arange(L, device=q.device)[None, :] <= rows[:, None]).view(1, 1, t, L)
	qh = q.view(1, t, h, dh).transpose(1, 2)
	kh = k.view(1, L, hkv, dh).transpose(1, 2)
	vh = v.view(1, L, hkv, dh).transpose(1, 2)
	kw = {"attn_mask": mask, "scale": float(attrs.get("scale", 1.0 / math.sqrt(dh)))}
	if hkv != h:
		try:
			y = F.scaled_dot_product_attention(qh, kh, vh, enable_gqa=True, **kw)
		except TypeError:  # torch < 2.5: no enable_gqa
			kh, vh = kh.repeat_interleave(h // hkv, dim=1), vh.repeat_interleave(h // hkv, dim=1)
			y = F.scaled_dot_product_attention(qh, kh, vh, **kw)
	else:
		y = F.scaled_dot_product_attention(qh, kh, vh, **kw)
	return y.transpose(1, 2).reshape(t, e)


def load_graph(doc):
	"""Checks the "tensors" and "ops" of a schedule document and returns the graph as a dict:
	tensors {name: {"shape", "dtype", "role"}}, inputs, weights, outputs (names, in file order) and
	steps: one (kind, input names, output name, attrs) per op, in the file's topological order."""
	if not isinstance(doc, dict) or "tensors" not in doc or "ops" not in doc:
		raise GraphError("the schedule has no \"tensors\" and \"ops\" arrays (written by an older arkgen?)")
	if int(doc.get("gpus", 1)) != 1:
		raise GraphError("model '%s' runs on %s GPUs: this baseline times single-GPU models only" %
				 (doc.get("model", "?"), doc.get("gpus")))
	tensors = {}
	for t in doc["tensors"]:
		role = t.get("role", "activation")
		if role == "internal":
			continue
		name = t["name"]
		if t.get("dtype", "fp16") not in DTYPES and not (t.get("dtype") in QDTYPES and role == "weight"):
			raise GraphError("tensor '%s': dtype '%s' is not one of %s (or, for a weight, %s)" %
					 (name, t.get("dtype"), ", ".join(DTYPES), ", ".join(QDTYPES)))
		if int(t.get("gpu", 0)) != 0:
			raise GraphError("tensor '%s' lives on GPU %s: this baseline times single-GPU models only" %
					 (name, t.get("gpu")))
		tensors[name] = {"shape": [int(d) for d in t["shape"]], "dtype": t.get("dtype", "fp16"), "role": role}
	inputs = [n for n, t in tensors.items() if t["role"] == "input"]
	weights = [n for n, t in tensors.items() if t["role"] == "weight"]
	states = [n for n, t in tensors.items() if t["role"] == "state"]
	outputs = [n for n, t in tensors.items() if t["role"] == "output"]
	if not outputs:
		raise GraphError("the graph has no output tensor")

	have = {n: tensors[n]["shape"] for n in inputs + weights + states}
	steps = []
	for op in doc["ops"]:
		kind, name = op["kind"], op["name"]
		where = "op '%s' (%s%s)" % (name, kind, ", line %d" % op["line"] if "line" in op else "")
		if kind in MULTI_GPU_OPS or int(op.get("gpu", 0)) != 0:
			raise GraphError("%s: a multi-GPU communication op; this baseline times single-GPU models only" % where)
		if kind not in ARITY:
			raise GraphError("%s: no PyTorch equivalent for op kind '%s'" % (where, kind))
		ins, outs = list(op["in"]), list(op["out"]) if isinstance(op["out"], list) else [op["out"]]
		lo, hi = ARITY[kind]
		n_out = 0 if kind in STATE_UPDATES else 1
		if not lo <= len(ins) <= hi or len(outs) != n_out:
			raise GraphError("%s: %d inputs and %d outputs, expected %s inputs and %s output" %
					 (where, len(ins), len(outs), lo if lo == hi else "%d to %d" % (lo, hi), n_out or "no"))
		for i in ins:
			if i not in have:
				raise GraphError("%s: input '%s' is neither an input, a weight nor made by an earlier op" % (where, i))
		if kind in STATE_UPDATES:
			if ins[0] not in states:
				raise GraphError("%s: '%s' is not a state" % (where, ins[0]))
			steps.append((kind, tuple(ins), None, dict(op.get("attrs", {}))))
			continue
		out = outs[0]
		if out in have:
			raise GraphError("%s: output '%s' is already an input, a weight or made by an earlier op" % (where, out))
		attrs = dict(op.get("attrs", {}))
		if kind == "scale" and "factor" not in attrs:
			raise GraphError("%s: scale without a factor" % where)
		if kind == "reduce_mean" and "axis" not in attrs:
			raise GraphError("%s: reduce_mean without an axis" % where)
		if kind in DEFAULT_EPS:
			attrs.setdefault("eps", DEFAULT_EPS[kind])
		shape, tb = _infer(kind, [have[i] for i in ins], attrs, where)
		if tb:
			attrs["transpose_b"] = True
		if out in tensors:
			if tensors[out]["shape"] != shape:
				raise GraphError("%s: output '%s' is declared %s, the op makes %s" %
						 (where, out, _shape_str(tensors[out]["shape"]), _shape_str(shape)))
		else:  # not declared: the dtype of the first input (an embedding's: its table's; argmax: int32)
			tensors[out] = {"shape": shape, "dtype": "int32" if kind == "argmax" else
					tensors[ins[1 if kind == "embedding" else 0]]["dtype"], "role": "activation"}
		if kind == "embedding":  # ids are drawn in 0 .. V - 1 (V: the smallest table that reads them)
			t = tensors[ins[0]]
			t["int_hi"] = min(t.get("int_hi", have[ins[1]][0]), have[ins[1]][0])
		if kind == "kv_append":  # positions are drawn where the rows fit: 0 .. L - T
			t, fit = tensors[ins[2]], have[ins[0]][0] - have[ins[1]][0] + 1
			t["int_hi"] = min(t.get("int_hi", fit), fit)
		if kind in ("rope", "decode_attention"):  # positions: pos + T <= L (a rope alone: 0 .. 8191)
			t = tensors[ins[-1]]
			hi = have[ins[1]][0] - shape[0] + 1 if kind == "decode_attention" else ROPE_POS_RANGE
			t["int_hi"] = min(t.get("int_hi", hi), hi)
		have[out] = shape
		steps.append((kind, tuple(ins), out, attrs))
	for o in outputs:
		if o not in have:
			raise GraphError("output '%s' is made by no op" % o)
	quantized_weights(tensors, steps)
	return {"model": doc.get("model", "?"), "tensors": tensors, "inputs": inputs, "weights": weights,
		"states": states, "outputs": outputs, "steps": steps}


def quantized_weights(tensors, steps):
	"""A q4_1 or q8_0 weight gets "qdtype" (its blocks) and, as "dtype", the dtype it is dequantised
	to: that of the op reading it (a matmul's a, an embedding's or a dequantize's output); only those
	three read one."""
	for kind, ins, out, attrs in steps:
		for j, n in enumerate(ins):
			t = tensors[n]
			if t.get("qdtype", t["dtype"]) not in QDTYPES:
				continue
			if not ((j == 1 and (kind == "embedding" or (kind == "matmul" and attrs.get("transpose_b")))) or
				(j == 0 and kind == "dequantize")):
				raise GraphError("op %s reads the %s weight '%s' as input %d" % (kind, t.get("qdtype", t["dtype"]), n, j))
			if "qdtype" not in t:
				t["qdtype"] = t["dtype"]
				t["dtype"] = tensors[out if kind in ("embedding", "dequantize") else ins[0]]["dtype"]
	for n, t in tensors.items():
		if t["dtype"] in QDTYPES:  # read by no op: dequantised to fp32
			t["qdtype"], t["dtype"] = t["dtype"], "fp32"


def quant_dequant(torch, x, qdtype):
	"""x (fp32, last dimension a multiple of 32) through GGUF's blocks and back, as arkgen's binaries
	draw such weights (runtime/quant.c): q4_1 d = (max - min) / 15 and m = min per block, q8_0
	d = max |x| / 127, d and m rounded to fp16, q to nearest."""
	shape = x.shape
	b = x.reshape(-1, 32)
	if qdtype == "q4_1":
		lo, hi = b.min(dim=1, keepdim=True).values, b.max(dim=1, keepdim=True).values
		d = (hi - lo) / 15
		inv = torch.where(d > 0, 1 / d, torch.zeros_like(d))
		q = torch.round((b - lo) * inv).clamp(0, 15)
		y = d.half().float() * q + lo.half().float()
	else:
		d = b.abs().max(dim=1, keepdim=True).values / 127
		inv = torch.where(d > 0, 1 / d, torch.zeros_like(d))
		y = d.half().float() * torch.round(b * inv).clamp(-127, 127)
	return y.reshape(shape)


def print_plan(g):
	print("model %s: %d inputs, %d weights, %d ops, outputs %s" % (g["model"], len(g["inputs"]),
	      len(g["weights"]), len(g["steps"]), ", ".join(g["outputs"])))
	for kind, ins, out, attrs in g["steps"]:
		t = g["tensors"][out if out is not None else ins[0]]
		extra = "".join(" %s=%s" % (k, v) for k, v in sorted(attrs.items()))
		for n in ins:
			if "qdtype" in g["tensors"][n]:
				extra += " (%s %s dequantised to %s)" % (n, g["tensors"][n]["qdtype"], g["tensors"][n]["dtype"])
		print("  %-9s %s -> %s %s %s%s" % (kind, ", ".join(ins), out if out is not None else "(%s in place)" % ins[0],
						 _shape_str(t["shape"]), t["dtype"], extra))


# ---- the graph as a torch module ----------------------------------------------------------------

def build_module(torch, g, device, gen):
	"""An nn.Module whose forward(*inputs) runs g's steps and returns g's outputs; weights are buffers."""
	F = torch.nn.functional
	tdt = {n: getattr(torch, DTYPES[t["dtype"]]) for n, t in g["tensors"].items()}
	rms_norm = getattr(F, "rms_norm", None)

	def run_op(kind, a, attrs, odt):
		x = a[0]
		if kind == "matmul":
			w = a[1].t() if attrs.get("transpose_b") else a[1]  # w [K, N]
			if w.dtype != x.dtype:
				x, w = x.float(), w.float()
			x2 = x.reshape(-1, x.shape[-1])  # [M', K]
			if len(a) == 3:
				y = torch.addmm(a[2].to(x2.dtype), x2, w)
			else:
				y = torch.mm(x2, w)
			y = y.reshape(tuple(x.shape[:-1]) + (w.shape[1],))
		elif kind == "add":
			y = torch.add(x, a[1])
		elif kind == "mul":
			y = torch.mul(x, a[1])
		elif kind == "scale":
			y = x * attrs["factor"]
		elif kind == "relu":
			y = torch.relu(x)
		elif kind == "gelu":
			y = F.gelu(x, approximate=attrs.get("approximate", "none"))  # "none": erf, as runtime/ref.c
		elif kind == "silu":
			y = F.silu(x)
		elif kind == "sigmoid":
			y = torch.sigmoid(x)
		elif kind == "swiglu":
			y = F.silu(x) * a[1]
		elif kind == "softmax":
			y = torch.softmax(x, dim=-1)
		elif kind == "layernorm":
			y = F.layer_norm(x, (x.shape[-1],), a[1].to(x.dtype), a[2].to(x.dtype), attrs["eps"])
		elif kind == "rmsnorm":
			if rms_norm is not None:
				y = rms_norm(x, (x.shape[-1],), a[1].to(x.dtype), attrs["eps"])
			else:
				xf = x.float()
				y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + attrs["eps"]) * a[1].float()
		elif kind == "copy":
			y = x.clone()
		elif kind == "tanh":
			y = torch.tanh(x)
		elif kind == "l2_normalize":
			y = F.normalize(x, p=2.0, dim=-1, eps=attrs["eps"])
		elif kind == "reduce_mean":
			ax = int(attrs["axis"])
			if len(a) == 1:
				y = x.float().mean(dim=ax)
			else:  # sentence-transformers' mean pooling: the mask over every axis but the last
				m = a[1].float().unsqueeze(-1)
				ax = ax + x.dim() if ax < 0 else ax
				y = (x.float() * m).sum(dim=ax) / torch.clamp(m.sum(dim=ax), min=1e-9)
			if y.dim() == 0:
				y = y.reshape(1)
		elif kind == "attention":
			y = _sdpa(torch, a, attrs)
		elif kind == "embedding":
			y = F.embedding(x.long(), a[1])
		elif kind == "rope":
			y = _rope(torch, a, attrs)
		elif kind == "decode_attention":
			y = _decode_sdpa(torch, a, attrs)
		elif kind == "dequantize":  # the weight, dequantised to this dtype when the module was built
			y = x
		elif kind == "argmax":  # (torch takes NaN as the largest; arkgen never picks it)
			y = torch.argmax(x, dim=-1)
			y = y.reshape(1) if y.dim() == 0 else y
		elif kind == "reshape":
			y = x.reshape([int(d) for d in attrs["shape"]])
		elif kind == "slice":
			y = x.narrow(int(attrs["axis"]), int(attrs["start"]), int(attrs["end"]) - int(attrs["start"]))
			y = y.contiguous() if attrs.get("copy") else y
		elif kind == "transpose":
			y = x.transpose(int(attrs["dims"][0]), int(attrs["dims"][1]))
			y = y.contiguous() if attrs.get("copy") else y
		elif kind == "concat":
			y = torch.cat(a, dim=int(attrs["axis"]))
		elif kind == "kv_append":  # rows pos .. pos + T - 1 of the cache buffer, in place; the cache is the result
			T, L = a[1].shape[0], x.shape[0]
			pos = a[2].long().clamp(0, L - T)  # on the GPU, no sync; a timing loop never leaves the cache
			y = x.index_copy_(0, pos + torch.arange(T, device=x.device), a[1])
		else:
			raise GraphError("no PyTorch equivalent for op kind '%s'" % kind)
		return y if y.dtype == odt else y.to(odt)

	class GraphModule(torch.nn.Module):
		def __init__(self):
			super().__init__()
			self.buf_of = {}
			for i, n in enumerate(g["weights"]):
				self.buf_of[n] = "w%d" % i
				self.register_buffer("w%d" % i, random_tensor(torch, g["tensors"][n], device, gen, True))
			for i, n in enumerate(g.get("states", [])):  # state: zeros, updated in place by the forward
				self.buf_of[n] = "s%d" % i
				t = g["tensors"][n]
				self.register_buffer("s%d" % i, torch.zeros(tuple(t["shape"]), device=device, dtype=tdt[n]))
			self.steps = [(k, ins, out, attrs, tdt[out] if out is not None else None) for k, ins, out, attrs in g["steps"]]
			self.input_names = list(g["inputs"])
			self.output_names = list(g["outputs"])

		def forward(self, *xs):
			env = dict(zip(self.input_names, xs))
			for n, b in self.buf_of.items():
				env[n] = getattr(self, b)
			for kind, ins, out, attrs, odt in self.steps:
				if kind == "assign":
					env[ins[0]].copy_(env[ins[1]])
				elif kind == "advance":
					env[ins[0]].add_(int(attrs.get("by", 1)))
				else:
					env[out] = run_op(kind, [env[i] for i in ins], attrs, odt)
			return tuple(env[o] for o in self.output_names)

	return GraphModule().eval()


def random_tensor(torch, t, device, gen, is_weight):
	"""Uniform in [-1, 1), scaled by 1/sqrt(rows) for weights of 2 or more dimensions (as the binaries)."""
	shape = tuple(t["shape"])
	if t["dtype"] == "int32":  # token ids of a table (0 .. V - 1) or a 0/1 mask, as the binaries draw them
		return torch.randint(0, t.get("int_hi", 2), shape, generator=gen, device=device, dtype=torch.int32)
	x = torch.rand(shape, generator=gen, device=device, dtype=torch.float32) * 2 - 1
	if is_weight and len(shape) >= 2:
		x *= 1.0 / math.sqrt(shape[0])
	if "qdtype" in t:  # a q4_1 / q8_0 weight: its blocks' values, in the dtype its op computes in
		x = quant_dequant(torch, x, t["qdtype"])
	x = x.to(getattr(torch, DTYPES[t["dtype"]]))
	if x.numel() and not bool(x.abs().max() > 0):
		raise GraphError("random tensor of shape %s came out all zeros" % _shape_str(shape))
	return x


# ---- timing -------------------------------------------------------------------------------------

def percentile(sorted_v, q):
	"""The value at rank ceil(q * n) (1-based), as the binaries' --bench computes p99."""
	i = max(0, int(math.ceil(q * len(sorted_v))) - 1)
	return sorted_v[i]


def median(sorted_v):
	n = len(sorted_v)
	return sorted_v[n // 2] if n % 2 else 0.5 * (sorted_v[n // 2 - 1] + sorted_v[n // 2])


def time_forward(torch, fn, iters, warmup, pipelined):
	"""Per-forward times in us: CUDA events around each call, and (unless pipelined) the host clock
	from before the start event to the end event's completion."""
	for _ in range(warmup):
		fn()
	torch.cuda.synchronize()
	starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
	ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
	host = []
	for i in range(iters):
		t0 = time.perf_counter()
		starts[i].record()
		fn()
		ends[i].record()
		if not pipelined:
			ends[i].synchronize()
			host.append((time.perf_counter() - t0) * 1e6)
	torch.cuda.synchronize()
	dev = sorted(s.elapsed_time(e) * 1e3 for s, e in zip(starts, ends))
	r = {"median_us": median(dev), "p99_us": percentile(dev, 0.99), "min_us": dev[0], "iters": iters}
	if host:
		host.sort()
		r["host_median_us"] = median(host)
		r["host_p99_us"] = percentile(host, 0.99)
	return r


def rel_err(torch, got, ref):
	"""max over outputs of ||got - ref|| / ||ref|| in float64; inf when a value is not finite."""
	worst = 0.0
	for a, b in zip(got, ref):
		a, b = a.double(), b.double()
		if not bool(torch.isfinite(a).all()):
			return float("inf")
		den = float(torch.linalg.vector_norm(b))
		num = float(torch.linalg.vector_norm(a - b))
		worst = max(worst, num / den if den > 0 else num)
	return worst


def fail_reason(e):
	line = (str(e).strip().splitlines() or [""])[0]
	s = "%s: %s" % (type(e).__name__, line) if line else type(e).__name__
	return s if len(s) <= 160 else s[:157] + "..."


def main(argv):
	ap = argparse.ArgumentParser(description="PyTorch baselines of a model from arkgen's schedule JSON")
	ap.add_argument("schedule", help="JSON written by arkgen MODEL.cfg --schedule FILE")
	ap.add_argument("--iters", type=int, default=1000, help="timed forwards per variant (default 1000)")
	ap.add_argument("--warmup", type=int, default=100, help="untimed forwards first (default 100)")
	ap.add_argument("--json", metavar="OUT", help="write the results as JSON to OUT")
	ap.add_argument("--seed", type=int, default=1, help="seed of the random inputs and weights (default 1)")
	ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated subset of " + ",".join(VARIANTS))
	ap.add_argument("--pipelined", action="store_true", help="do not wait for each forward before the next")
	ap.add_argument("--plan", action="store_true", help="check the graph, print it and exit (no torch needed)")
	a = ap.parse_args(argv)
	variants = [v for v in a.variants.split(",") if v]
	bad = [v for v in variants if v not in VARIANTS]
	if bad or a.iters < 1 or a.warmup < 0:
		ap.error("bad --variants %s or --iters/--warmup" % ",".join(bad) if bad else "--iters >= 1, --warmup >= 0")
	if "eager" not in variants:
		variants.insert(0, "eager")  # the reference of every check

	try:
		with open(a.schedule) as f:
			doc = json.load(f)
		g = load_graph(doc)
	except (OSError, ValueError, KeyError, TypeError, GraphError) as e:
		print("torch_baseline: %s: %s" % (a.schedule, e if not isinstance(e, KeyError) else "missing key %s" % e),
		      file=sys.stderr)
		return 1
	if a.plan:
		print_plan(g)
		return 0

	try:
		import torch
	except ImportError:
		print("torch_baseline: no torch in this python: nothing timed", file=sys.stderr)
		return 77
	if not torch.cuda.is_available():
		print("torch_baseline: no CUDA device: nothing timed", file=sys.stderr)
		return 77
	dev = torch.device("cuda:0")
	gpu = torch.cuda.get_device_name(dev)
	gen = torch.Generator(device=dev)
	gen.manual_seed(a.seed)
	print("torch_baseline: model %s (%d ops) on %s, torch %s; %d forwards after %d warm-up per variant, %s" %
	      (g["model"], len(g["steps"]), gpu, torch.__version__, a.iters, a.warmup,
	       "queued back to back" if a.pipelined else "each waited for"))

	q = ["%s (%s)" % (n, g["tensors"][n]["qdtype"]) for n in g["weights"] if "qdtype" in g["tensors"][n]]
	if q:
		print("torch_baseline: quantized weights %s dequantised once to their op's dtype: PyTorch runs those "
		      "matmuls and embeddings on the dequantised weights" % ", ".join(q))
	tol = max(TOLERANCE.get(g["tensors"][o]["dtype"], 0.0) for o in g["outputs"])  # int32 (argmax): exact
	results = {"meta": {"model": g["model"], "gpu": gpu, "torch": torch.__version__, "iters": a.iters,
			    "warmup": a.warmup, "seed": a.seed, "pipelined": a.pipelined, "ops": len(g["steps"])}}
	with torch.no_grad():
		try:
			model = build_module(torch, g, dev, gen)
			xs = [random_tensor(torch, g["tensors"][n], dev, gen, False) for n in g["inputs"]]
			model(*xs)
			torch.cuda.synchronize()
		except Exception as e:  # noqa: BLE001 (the eager model is the reference: its failure is fatal)
			print("torch_baseline: the eager model failed: %s" % fail_reason(e), file=sys.stderr)
			return 1

		# state buffers: the check runs the reference and the variant from the same state
		state_bufs = [getattr(model, b) for n, b in model.buf_of.items() if n in g.get("states", [])]

		def fresh_check(fn):
			for x, n in zip(xs, g["inputs"]):
				x.copy_(random_tensor(torch, g["tensors"][n], dev, gen, False))
			saved = [b.clone() for b in state_bufs]
			ref = [o.clone() for o in model(*xs)]
			for b, v in zip(state_bufs, saved):
				b.copy_(v)
			got = [o.clone() for o in fn()]
			torch.cuda.synchronize()
			return rel_err(torch, got, ref)

		for v in VARIANTS:
			if v not in variants:
				continue
			try:
				if v == "eager":
					fn = lambda: model(*xs)  # noqa: E731
				elif v == "graph":
					s = torch.cuda.Stream()
					s.wait_stream(torch.cuda.current_stream())
					with torch.cuda.stream(s):  # warm-up off the capture, as torch.cuda.graphs asks
						for _ in range(3):
							model(*xs)
					torch.cuda.current_stream().wait_stream(s)
					graph = torch.cuda.CUDAGraph()
					with torch.cuda.graph(graph):
						static_out = model(*xs)
					fn = lambda: (graph.replay(), static_out)[1]  # noqa: E731
				else:
					torch._dynamo.reset()
					cm = torch.compile(model, mode=None if v == "compile" else "reduce-overhead")
					for _ in range(3):  # compiles here, so a failure is caught before timing
						cm(*xs)
					torch.cuda.synchronize()
					fn = lambda: cm(*xs)  # noqa: E731
				r = time_forward(torch, fn, a.iters, a.warmup, a.pipelined)
				r["rel_err_vs_eager"] = fresh_check(fn)
			except Exception as e:  # noqa: BLE001 (reported as n/a, the other variants still run)
				results[v] = {"median_us": None, "p99_us": None, "error": fail_reason(e)}
				print("%-11s n/a (%s)" % (v + ":", results[v]["error"]))
				continue
			results[v] = r
			host = ", host-timed median %.2f us" % r["host_median_us"] if "host_median_us" in r else ""
			err = r["rel_err_vs_eager"]
			r["matches_eager"] = err <= tol
			verdict = "" if err <= tol else "  MISMATCH (tolerance %.0e)" % tol
			print("%-11s median %.2f us, p99 %.2f us, min %.2f us (events%s); rel err vs eager %.1e%s" %
			      (v + ":", r["median_us"], r["p99_us"], r["min_us"], host, err, verdict))
	if a.json:
		with open(a.json, "w") as f:
			json.dump(results, f, indent=1)
			f.write("\n")
	return 0


if __name__ == "__main__":
	sys.exit(main(sys.argv[1:]))
