#!/usr/bin/env python3
"""hf2ark.py: a Hugging Face BERT-family encoder (config.json + model.safetensors) -> an arkgen model
file (.cfg) and its weights (.safetensors) in the dtype the model file names.

usage: hf2ark.py CONFIG.json [CHECKPOINT.safetensors] -o OUT.cfg [-w OUT.safetensors]
                 [--batch B] [--seq S] [--dtype fp32|fp16|bf16] [--pooling none|mean] [--normalize]
                 [--name NAME]

Without a checkpoint only the model file is written (its weights are then random in the generated
binary: models/bert_base.cfg is made this way from a synthetic config). With one, every tensor the
graph reads is checked against the config's shapes and written to -w in the model's dtype (fp16 and
bf16 rounded to nearest even); a non-finite value or one outside fp16's range is an error. Names are
the checkpoint's, with its `bert.` prefix when it has one.

The graph (docs/model-format.md has every op):
  inputs  input_ids [B, S] int32, attention_mask [B, S] int32 (1: a token, 0: padding)
  embeddings  embedding(input_ids, word_embeddings) + slice(position_embeddings, rows 0..S)
              + slice(token_type_embeddings, row 0), layernorm
  per layer   q, k, v = matmul(h, W, b, transpose_b); attention(q, k, v, attention_mask, heads);
              matmul (attention.output.dense) + h, layernorm; matmul (intermediate.dense), gelu
              (erf form; tanh for hidden_act gelu_new / gelu_pytorch_tanh / gelu_fast), matmul
              (output.dense) + the layernorm's output, layernorm
  output  last_hidden_state [B, S, hidden] (--pooling none), or sentence_embedding [B, hidden]:
          reduce_mean over the sequence with attention_mask as the mask (--pooling mean), then
          l2_normalize with --normalize (all-MiniLM-L6-v2's sentence embedding: mean + normalize).

Standard library only. Exit status: 0 ok, 1 bad config or checkpoint, 2 usage error.
"""

import argparse
import json
import math
import os
import struct
import sys

DTYPES = ("fp32", "fp16", "bf16")
ST_DTYPE = {"fp32": "F32", "fp16": "F16", "bf16": "BF16"}
ST_SIZE = {"F32": 4, "F16": 2, "BF16": 2, "I32": 4, "I64": 8, "U8": 1, "BOOL": 1, "F64": 8}
GELU_ACT = {"gelu": "none", "gelu_new": "tanh", "gelu_pytorch_tanh": "tanh", "gelu_fast": "tanh"}


class ConvertError(Exception):
	"""The config or the checkpoint cannot be converted."""


# ---- safetensors ---------------------------------------------------------------------------------

class Checkpoint:
	"""A safetensors file: the header, and each tensor's bytes read on demand."""

	def __init__(self, path):
		self.path = path
		self.f = open(path, "rb")
		size = os.fstat(self.f.fileno()).st_size
		raw = self.f.read(8)
		if len(raw) != 8:
			raise ConvertError("%s: not a safetensors file (shorter than 8 bytes)" % path)
		(n,) = struct.unpack("<Q", raw)
		if n > size - 8:
			raise ConvertError("%s: header length %d runs past the end of the file" % (path, n))
		try:
			self.header = json.loads(self.f.read(n))
		except ValueError as e:
			raise ConvertError("%s: header is not JSON: %s" % (path, e))
		self.base = 8 + n
		self.header.pop("__metadata__", None)
		for name, e in self.header.items():
			b, end = e["data_offsets"]
			want = ST_SIZE.get(e["dtype"], 0) * math.prod(e["shape"])
			if e["dtype"] not in ST_SIZE or end - b != want or self.base + end > size:
				raise ConvertError("%s: tensor '%s' (%s %s) has bad data offsets [%d, %d]" %
						   (path, name, e["dtype"], e["shape"], b, end))

	def __contains__(self, name):
		return name in self.header

	def read(self, name):
		e = self.header[name]
		b, end = e["data_offsets"]
		self.f.seek(self.base + b)
		return e["dtype"], list(e["shape"]), self.f.read(end - b)


def write_safetensors(path, tensors):
	"""tensors: list of (name, safetensors dtype, shape, bytes), written in that order."""
	header, off = {}, 0
	for name, dt, shape, data in tensors:
		header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(data)]}
		off += len(data)
	header["__metadata__"] = {"format": "pt"}
	h = json.dumps(header, separators=(",", ":")).encode()
	h += b" " * (-len(h) % 8)
	tmp = path + ".tmp"
	with open(tmp, "wb") as f:
		f.write(struct.pack("<Q", len(h)))
		f.write(h)
		for _, _, _, data in tensors:
			f.write(data)
	os.replace(tmp, path)


# ---- dtype conversion, whole tensors at a time ---------------------------------------------------
# The 32-bit words of a tensor are handled as one big integer (little-endian), each word in a 32-bit
# slot: masks repeated once per slot do per-element arithmetic without a Python loop per element.

def _rep(word, n):
	return int.from_bytes(struct.pack("<I", word) * n, "little")


def _check_finite(u, n, name):
	"""u: n fp32 words in one integer; raises when an exponent field is all ones (inf or NaN)."""
	e = (u >> 23) & _rep(0xFF, n)
	if (e + _rep(1, n)) & _rep(0x100, n):
		raise ConvertError("tensor '%s' holds an inf or NaN" % name)


def f32_to_bf16(data, name):
	"""fp32 bytes -> bf16 bytes, rounded to nearest even."""
	n = len(data) // 4
	if n == 0:
		return b""
	u = int.from_bytes(data, "little")
	_check_finite(u, n, name)
	lo, hi = u & _rep(0xFFFF, n), (u >> 16) & _rep(0xFFFF, n)
	# round up when the dropped half is above 0x8000, or exactly 0x8000 and the kept part is odd
	carry = ((lo + _rep(0x7FFF, n) + (hi & _rep(1, n))) >> 16) & _rep(1, n)
	r = (hi + carry).to_bytes(4 * n, "little")  # each slot < 0x10000: finite inputs never reach it
	out = bytearray(2 * n)
	out[0::2] = r[0::4]
	out[1::2] = r[1::4]
	return bytes(out)


def bf16_to_f32(data):
	out = bytearray(2 * len(data))
	out[2::4] = data[0::2]
	out[3::4] = data[1::2]
	return bytes(out)


def f32_to_f16(data, name, chunk=1 << 20):
	"""fp32 bytes -> fp16 bytes through struct's half format (rounds to nearest even)."""
	n = len(data) // 4
	if n:
		_check_finite(int.from_bytes(data, "little"), n, name)
	out = []
	for i in range(0, n, chunk):
		m = min(chunk, n - i)
		v = struct.unpack_from("<%df" % m, data, 4 * i)
		try:
			out.append(struct.pack("<%de" % m, *v))
		except OverflowError:
			big = max(abs(x) for x in v)
			raise ConvertError("tensor '%s' holds %g, outside fp16's range (65504): convert to bf16 or fp32" %
					   (name, big))
	return b"".join(out)


def f16_to_f32(data, chunk=1 << 20):
	n = len(data) // 2
	out = []
	for i in range(0, n, chunk):
		m = min(chunk, n - i)
		out.append(struct.pack("<%df" % m, *struct.unpack_from("<%de" % m, data, 2 * i)))
	return b"".join(out)


def convert(src_dt, data, dst, name):
	"""Bytes of safetensors dtype src_dt -> bytes of arkgen dtype dst."""
	if src_dt == ST_DTYPE[dst]:
		return data
	if src_dt == "F32":
		f32 = data
	elif src_dt == "BF16":
		f32 = bf16_to_f32(data)
	elif src_dt == "F16":
		f32 = f16_to_f32(data)
	else:
		raise ConvertError("tensor '%s' has dtype %s; floating-point weights (F32, F16, BF16) expected" %
				   (name, src_dt))
	if dst == "fp32":
		return f32
	return f32_to_bf16(f32, name) if dst == "bf16" else f32_to_f16(f32, name)


# ---- the config ----------------------------------------------------------------------------------

def read_config(path):
	try:
		with open(path) as f:
			c = json.load(f)
	except (OSError, ValueError) as e:
		raise ConvertError("%s: %s" % (path, e))

	def get(key, default=None):
		v = c.get(key, default)
		if v is None:
			raise ConvertError("%s: no '%s'" % (path, key))
		return v

	if c.get("model_type", "bert") != "bert":
		raise ConvertError("%s: model_type '%s': only BERT encoders (model_type \"bert\") are converted" %
				   (path, c.get("model_type")))
	if c.get("position_embedding_type", "absolute") != "absolute":
		raise ConvertError("%s: position_embedding_type '%s': only \"absolute\" is converted" %
				   (path, c.get("position_embedding_type")))
	cfg = {
		"hidden": int(get("hidden_size")), "layers": int(get("num_hidden_layers")),
		"heads": int(get("num_attention_heads")), "ffn": int(get("intermediate_size")),
		"act": get("hidden_act", "gelu"), "eps": float(get("layer_norm_eps", 1e-12)),
		"max_pos": int(get("max_position_embeddings")), "types": int(get("type_vocab_size", 2)),
		"vocab": int(get("vocab_size")),
	}
	if cfg["act"] not in GELU_ACT and cfg["act"] != "relu":
		raise ConvertError("%s: hidden_act '%s': expected one of %s" %
				   (path, cfg["act"], ", ".join(sorted(list(GELU_ACT) + ["relu"]))))
	if min(cfg["hidden"], cfg["layers"], cfg["heads"], cfg["ffn"], cfg["max_pos"], cfg["types"], cfg["vocab"]) < 1:
		raise ConvertError("%s: sizes must be at least 1" % path)
	if cfg["hidden"] % cfg["heads"]:
		raise ConvertError("%s: hidden_size %d is not a multiple of num_attention_heads %d" %
				   (path, cfg["hidden"], cfg["heads"]))
	return cfg


# ---- the graph -----------------------------------------------------------------------------------

def weight_shapes(c, p):
	"""Every checkpoint tensor the graph reads, in order: (name, shape)."""
	D, F = c["hidden"], c["ffn"]
	w = [(p + "embeddings.word_embeddings.weight", [c["vocab"], D]),
	     (p + "embeddings.position_embeddings.weight", [c["max_pos"], D]),
	     (p + "embeddings.token_type_embeddings.weight", [c["types"], D]),
	     (p + "embeddings.LayerNorm.weight", [D]), (p + "embeddings.LayerNorm.bias", [D])]
	for i in range(c["layers"]):
		L = "%sencoder.layer.%d." % (p, i)
		for m in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
			w += [(L + m + ".weight", [D, D]), (L + m + ".bias", [D])]
		w += [(L + "attention.output.LayerNorm.weight", [D]), (L + "attention.output.LayerNorm.bias", [D]),
		      (L + "intermediate.dense.weight", [F, D]), (L + "intermediate.dense.bias", [F]),
		      (L + "output.dense.weight", [D, F]), (L + "output.dense.bias", [D]),
		      (L + "output.LayerNorm.weight", [D]), (L + "output.LayerNorm.bias", [D])]
	return w


def _q(s):
	return '"%s"' % s


def _arr(names):
	return "[" + ", ".join(_q(n) for n in names) + "]"


def graph_ops(c, p, a):
	"""The ops as (name, op, inputs, output, attributes text); also the output's name."""
	ops = []

	def op(name, kind, ins, out=None, attrs=""):
		ops.append((name, kind, ins, out or name, attrs))
		return out or name

	def linear(name, x):
		return op(name, "matmul", [x, name + ".weight", name + ".bias"], attrs="transpose_b = true;")

	def layernorm(name, x):
		return op(name, "layernorm", [x, name + ".weight", name + ".bias"], attrs="eps = %r;" % c["eps"])

	E = p + "embeddings."
	h = op(E + "word", "embedding", ["input_ids", E + "word_embeddings.weight"])
	pos = op(E + "position", "slice", [E + "position_embeddings.weight"],
		 attrs="axis = 0; start = 0; end = %d;" % a.seq)
	typ = op(E + "token_type", "slice", [E + "token_type_embeddings.weight"], attrs="axis = 0; start = 0; end = 1;")
	h = op(E + "sum", "add", [h, pos])
	h = op(E + "sum_type", "add", [h, typ])
	h = layernorm(E + "LayerNorm", h)
	for i in range(c["layers"]):
		L = "%sencoder.layer.%d." % (p, i)
		q = linear(L + "attention.self.query", h)
		k = linear(L + "attention.self.key", h)
		v = linear(L + "attention.self.value", h)
		ctx = op(L + "attention.self", "attention", [q, k, v, "attention_mask"], attrs="heads = %d;" % c["heads"])
		o = linear(L + "attention.output.dense", ctx)
		r = op(L + "attention.output.residual", "add", [o, h])
		h1 = layernorm(L + "attention.output.LayerNorm", r)
		f = linear(L + "intermediate.dense", h1)
		if c["act"] == "relu":
			g = op(L + "intermediate.act", "relu", [f])
		else:
			g = op(L + "intermediate.act", "gelu", [f], attrs='approximate = "%s";' % GELU_ACT[c["act"]])
		f2 = linear(L + "output.dense", g)
		r2 = op(L + "output.residual", "add", [f2, h1])
		h = layernorm(L + "output.LayerNorm", r2)
	if a.pooling == "none":
		return ops, _rename_last(ops, "last_hidden_state")
	if a.normalize:
		m = op("pooling.mean", "reduce_mean", [h, "attention_mask"], attrs="axis = 1;")
		out = op("sentence_embedding", "l2_normalize", [m])
	else:
		out = op("sentence_embedding", "reduce_mean", [h, "attention_mask"], attrs="axis = 1;")
	return ops, out


def _rename_last(ops, out):
	"""The last op writes the model's output under that name (no copy)."""
	name, kind, ins, _, attrs = ops[-1]
	ops[-1] = (name, kind, ins, out, attrs)
	return out


def model_text(c, p, a, argv, out_shape):
	D = c["hidden"]
	lines = ["# Generated by tools/hf2ark.py from %s (do not edit: convert again):" % os.path.basename(a.config),
		 "#   " + " ".join(["tools/hf2ark.py"] + [_shell(x) for x in _without_notes(argv)]),
		 "# BERT encoder: %d layers, hidden %d, %d heads, FFN %d, hidden_act %s, layernorm eps %g;" %
		 (c["layers"], D, c["heads"], c["ffn"], c["act"], c["eps"]),
		 "# batch %d, sequence %d, %s; output %s %s." %
		 (a.batch, a.seq, a.dtype, out_shape[0], _shape(out_shape[1])),
		 ] + ["# " + n for n in a.note] + [
		 "version = 1;", 'name = "%s";' % a.name, 'dtype = "%s";' % a.dtype, "", "tensors = ("]
	rows = [("input_ids", [a.batch, a.seq], "input", "int32"),
		("attention_mask", [a.batch, a.seq], "input", "int32")]
	rows += [(n, s, "weight", None) for n, s in weight_shapes(c, p)]
	rows.append((out_shape[0], None, "output", None))
	lines.append(tensor_lines(rows))
	lines += [");", "", "ops = ("]
	ops, _ = graph_ops(c, p, a)
	body = []
	for name, kind, ins, out, attrs in ops:
		t = "  { name = %s; op = \"%s\"; in = %s; out = %s;" % (_q(name), kind, _arr(ins), _q(out))
		if attrs:
			t += " " + attrs
		body.append(t + " }")
	lines.append(",\n".join(body))
	lines.append(");")
	return "\n".join(lines) + "\n"


def _without_notes(argv):
	out, skip = [], False
	for x in argv:
		if skip or x == "--note" or x.startswith("--note="):
			skip = x == "--note"
			continue
		out.append(x)
	return out


def _shape(s):
	return "[" + ", ".join(str(d) for d in s) + "]"


def tensor_lines(rows):
	"""The entries of a model file's tensors list: rows of (name, shape or None, role, dtype or None)."""
	body = []
	for n, s, role, dt in rows:
		t = "  { name = %s;" % _q(n)
		if s:
			t += " shape = %s;" % _shape(s)
		t += ' role = "%s";' % role
		if dt:
			t += ' dtype = "%s";' % dt
		body.append(t + " }")
	return ",\n".join(body)


def _shell(x):
	return x if all(ch.isalnum() or ch in "-_./=" for ch in x) else "'%s'" % x.replace("'", "'\\''")


# ---- main ----------------------------------------------------------------------------------------

def parse_args(argv):
	ap = argparse.ArgumentParser(description="Hugging Face BERT config + safetensors -> arkgen model + weights")
	ap.add_argument("config", help="config.json of the checkpoint (or a synthetic one)")
	ap.add_argument("checkpoint", nargs="?", help="model.safetensors (optional: without it, the model file only)")
	ap.add_argument("-o", "--output", required=True, metavar="OUT.cfg", help="the arkgen model file to write")
	ap.add_argument("-w", "--weights", metavar="OUT.safetensors", help="the weights file to write (needs CHECKPOINT)")
	ap.add_argument("--batch", type=int, default=1, help="batch size B (default 1)")
	ap.add_argument("--seq", type=int, default=128, help="sequence length S (default 128)")
	ap.add_argument("--dtype", default="fp32", choices=DTYPES, help="dtype of the model and its weights (default fp32)")
	ap.add_argument("--pooling", default="none", choices=("none", "mean"),
			help="none: output last_hidden_state [B, S, hidden]; mean: sentence_embedding [B, hidden] "
			     "(mean over the tokens attention_mask counts)")
	ap.add_argument("--normalize", action="store_true", help="l2-normalize the sentence embedding (needs --pooling mean)")
	ap.add_argument("--name", default="bert", help="the model's name, an identifier (default bert)")
	ap.add_argument("--note", action="append", default=[], help="a comment line for the model file's header")
	a = ap.parse_args(argv)
	if a.batch < 1 or a.seq < 1:
		ap.error("--batch and --seq must be at least 1")
	if a.normalize and a.pooling != "mean":
		ap.error("--normalize normalizes the sentence embedding: it needs --pooling mean")
	if a.weights and not a.checkpoint:
		ap.error("-w needs a CHECKPOINT to read the weights from")
	if not (a.name[:1].isalpha() or a.name[:1] == "_") or not all(ch.isalnum() or ch == "_" for ch in a.name) \
	   or not a.name.isascii():
		ap.error("--name '%s' is not an identifier [A-Za-z_][A-Za-z0-9_]*" % a.name)
	return a


def run(argv):
	a = parse_args(argv)
	c = read_config(a.config)
	if a.seq > c["max_pos"]:
		raise ConvertError("--seq %d is longer than max_position_embeddings %d" % (a.seq, c["max_pos"]))
	p = ""
	ck = None
	if a.checkpoint:
		ck = Checkpoint(a.checkpoint)
		if "bert.embeddings.word_embeddings.weight" in ck:
			p = "bert."
		elif "embeddings.word_embeddings.weight" not in ck:
			raise ConvertError("%s: no embeddings.word_embeddings.weight (nor bert.embeddings...): "
					   "not a BERT checkpoint" % a.checkpoint)
	out_shape = ("last_hidden_state", [a.batch, a.seq, c["hidden"]]) if a.pooling == "none" else \
		    ("sentence_embedding", [a.batch, c["hidden"]])
	text = model_text(c, p, a, argv, out_shape)

	tensors = []
	if ck:
		for name, shape in weight_shapes(c, p):
			if name not in ck:
				# old checkpoints name the layernorm parameters gamma and beta
				old = name.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
				if "LayerNorm" not in name or old not in ck:
					raise ConvertError("%s: no tensor '%s'" % (a.checkpoint, name))
				dt, s, data = ck.read(old)
			else:
				dt, s, data = ck.read(name)
			if s != shape:
				raise ConvertError("%s: tensor '%s' has shape %s, the config gives %s" %
						   (a.checkpoint, name, _shape(s), _shape(shape)))
			if a.weights:
				tensors.append((name, ST_DTYPE[a.dtype], shape, convert(dt, data, a.dtype, name)))
	with open(a.output, "w") as f:
		f.write(text)
	if a.weights:
		write_safetensors(a.weights, tensors)
	nbytes = sum(len(t[3]) for t in tensors)
	print("hf2ark: %s: %d layers, hidden %d, %d heads, batch %d, seq %d, %s, output %s %s%s" %
	      (a.output, c["layers"], c["hidden"], c["heads"], a.batch, a.seq, a.dtype, out_shape[0],
	       _shape(out_shape[1]), "; %s: %d tensors, %d bytes" % (a.weights, len(tensors), nbytes) if a.weights else ""))
	return 0


def main(argv):
	try:
		return run(argv)
	except ConvertError as e:
		print("hf2ark: error: %s" % e, file=sys.stderr)
		return 1
	except OSError as e:
		print("hf2ark: error: %s" % e, file=sys.stderr)
		return 1


if __name__ == "__main__":
	sys.exit(main(sys.argv[1:]))
