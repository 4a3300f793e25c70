#!/usr/bin/env python3
"""tests/lib/tinybert.py: the helper of tests/convert.sh, standard library only.

  tinybert.py make DIR [--prefix bert.] [--act gelu] [--gamma-beta] [--seed N] [--big]
      writes DIR/config.json and DIR/model.safetensors: a BERT of 2 layers, hidden 32, 4 heads,
      FFN 64, vocab 50, 16 positions, random fp32 weights (plus an I64 position_ids buffer and pooler
      weights, which the converter must leave out; --big puts 1e5 in a weight, outside fp16's range);
      the first values of the word embeddings are chosen on the rounding ties of bf16 and fp16
  tinybert.py weights CKPT CFG OUT DTYPE
      checks that OUT holds exactly the weight tensors CFG declares, with their shapes, in DTYPE,
      and that each value is CKPT's rounded to nearest even (each element on its own, by bit arithmetic)
  tinybert.py inputs OUT B S
      writes input_ids and attention_mask ([B, S] int32; sequence b has S - 3b tokens, at least 1)
  tinybert.py forward CONFIG CKPT INPUTS OUT
      the encoder with mean pooling and l2 normalisation, in plain Python (double precision)
  tinybert.py close A B NAME TOL
      max |a - b| of tensor NAME of two safetensors files is at most TOL
"""

import json
import math
import os
import random
import re
import struct
import sys

SIZE = {"F32": 4, "F16": 2, "BF16": 2, "I32": 4, "I64": 8}
D, H, F, LAYERS, VOCAB, POS, TYPES = 32, 4, 64, 2, 50, 16, 2


def write_st(path, tensors):
	header, off, blobs = {}, 0, []
	for name, dt, shape, raw in tensors:
		header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(raw)]}
		off += len(raw)
		blobs.append(raw)
	h = json.dumps(header).encode()
	h += b" " * (-len(h) % 8)
	with open(path, "wb") as f:
		f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def read_st(path):
	with open(path, "rb") as f:
		(n,) = struct.unpack("<Q", f.read(8))
		h = json.loads(f.read(n))
		data = f.read()
	h.pop("__metadata__", None)
	return {k: (e["dtype"], e["shape"], data[e["data_offsets"][0]:e["data_offsets"][1]]) for k, e in h.items()}


def floats(dt, raw):
	if dt == "F32":
		return list(struct.unpack("<%df" % (len(raw) // 4), raw))
	if dt == "F16":
		return list(struct.unpack("<%de" % (len(raw) // 2), raw))
	if dt == "BF16":
		return [struct.unpack("<f", struct.pack("<I", u << 16))[0] for u in struct.unpack("<%dH" % (len(raw) // 2), raw)]
	return list(struct.unpack("<%di" % (len(raw) // 4), raw))


def shapes(prefix):
	w = {"embeddings.word_embeddings.weight": [VOCAB, D], "embeddings.position_embeddings.weight": [POS, D],
	     "embeddings.token_type_embeddings.weight": [TYPES, D], "embeddings.LayerNorm.weight": [D],
	     "embeddings.LayerNorm.bias": [D]}
	for i in range(LAYERS):
		L = "encoder.layer.%d." % i
		for m in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
			w[L + m + ".weight"], w[L + m + ".bias"] = [D, D], [D]
		w.update({L + "attention.output.LayerNorm.weight": [D], L + "attention.output.LayerNorm.bias": [D],
			  L + "intermediate.dense.weight": [F, D], L + "intermediate.dense.bias": [F],
			  L + "output.dense.weight": [D, F], L + "output.dense.bias": [D],
			  L + "output.LayerNorm.weight": [D], L + "output.LayerNorm.bias": [D]})
	return {prefix + k: v for k, v in w.items()}


# values on rounding ties: bf16 keeps 8 significant bits, fp16 11
TIES = [1 + 2 ** -8, 1 + 3 * 2 ** -8, -(1 + 2 ** -8), 1 + 2 ** -11, 1 + 3 * 2 ** -11, 2 ** -20 * (1 + 2 ** -8),
	1 + 2 ** -8 + 2 ** -20, 0.0, -0.0, 3.0e-41]


def make(argv):
	out = argv[0]
	prefix = argv[argv.index("--prefix") + 1] if "--prefix" in argv else ""
	act = argv[argv.index("--act") + 1] if "--act" in argv else "gelu"
	seed = int(argv[argv.index("--seed") + 1]) if "--seed" in argv else 1
	rng = random.Random(seed)
	os.makedirs(out, exist_ok=True)
	config = {"architectures": ["BertModel"], "model_type": "bert", "hidden_size": D, "num_hidden_layers": LAYERS,
		  "num_attention_heads": H, "intermediate_size": F, "hidden_act": act, "layer_norm_eps": 1e-12,
		  "max_position_embeddings": POS, "type_vocab_size": TYPES, "vocab_size": VOCAB,
		  "position_embedding_type": "absolute"}
	with open(os.path.join(out, "config.json"), "w") as f:
		json.dump(config, f, indent=2)
	tensors = [(prefix + "embeddings.position_ids", "I64", [1, POS], struct.pack("<%dq" % POS, *range(POS)))]
	for name, s in shapes(prefix).items():
		n = math.prod(s)
		if name.endswith("LayerNorm.weight"):
			v = [1 + 0.2 * rng.uniform(-1, 1) for _ in range(n)]
		elif len(s) == 2 and "embeddings" not in name:
			v = [rng.uniform(-1, 1) / math.sqrt(s[1]) for _ in range(n)]
		else:
			v = [rng.uniform(-1, 1) * 0.5 for _ in range(n)]
		if name.endswith("word_embeddings.weight"):
			v[:len(TIES)] = TIES
		if name.endswith("layer.1.output.dense.bias") and "--big" in argv:
			v[3] = 1e5
		if "--gamma-beta" in argv and "LayerNorm" in name:
			name = name.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
		tensors.append((name, "F32", s, struct.pack("<%df" % n, *v)))
	tensors.append((prefix + "pooler.dense.weight", "F32", [D, D], struct.pack("<%df" % (D * D), *[0.5] * (D * D))))
	rng.shuffle(tensors)  # the converter must not depend on the file's order
	write_st(os.path.join(out, "model.safetensors"), tensors)
	return 0


def rne_bf16(u):
	"""fp32 bits -> bf16 bits, round to nearest even, one element."""
	lower, upper = u & 0xFFFF, u >> 16
	if lower > 0x8000 or (lower == 0x8000 and upper & 1):
		upper += 1
	return upper


def rne_f16(x):
	"""float -> fp16 bits, round to nearest even, by hand (normal, subnormal and zero; no overflow)."""
	sign = 0x8000 if math.copysign(1, x) < 0 else 0
	a = abs(x)
	if a == 0:
		return sign
	e = max(math.floor(math.log2(a)), -14)
	while 2.0 ** e > a:
		e -= 1
	while 2.0 ** (e + 1) <= a:
		e += 1
	e = max(e, -14)
	q = a / 2.0 ** (e - 10)  # significand scaled to 11 bits (or fewer when subnormal)
	r = math.floor(q)
	frac = q - r
	if frac > 0.5 or (frac == 0.5 and r & 1):
		r += 1
	if r == 2048:
		r, e = 1024, e + 1
	if r < 1024:  # subnormal
		return sign | r
	return sign | ((e + 15) << 10) | (r - 1024)


def weights(argv):
	ckpt, cfg, out, dtype = argv
	src = read_st(ckpt)
	got = read_st(out)
	text = open(cfg).read()
	declared = dict((m.group(1), [int(d) for d in m.group(2).split(",")])
			for m in re.finditer(r'name = "([^"]+)"; shape = \[([0-9, ]+)\]; role = "weight"', text))
	bad = []
	if set(declared) != set(got):
		bad.append("weights file holds %s, the model declares %s" % (sorted(set(got) - set(declared)),
									     sorted(set(declared) - set(got))))
	want_dt = {"fp32": "F32", "fp16": "F16", "bf16": "BF16"}[dtype]
	for name, (dt, s, raw) in got.items():
		if dt != want_dt or s != declared.get(name):
			bad.append("%s: %s %s, expected %s %s" % (name, dt, s, want_dt, declared.get(name)))
			continue
		old = name.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
		sdt, ss, sraw = src[name] if name in src else src[old]
		bits = struct.unpack("<%dI" % (len(sraw) // 4), sraw)
		if dtype == "fp32":
			expect = sraw
		elif dtype == "bf16":
			expect = struct.pack("<%dH" % len(bits), *[rne_bf16(u) for u in bits])
		else:
			expect = struct.pack("<%dH" % len(bits), *[rne_f16(x) for x in floats("F32", sraw)])
		if raw != expect:
			k = next(i for i in range(0, len(raw), 2) if raw[i:i + 2] != expect[i:i + 2]) // SIZE[want_dt]
			bad.append("%s: element %d differs" % (name, k))
	for b in bad:
		print("# " + b)
	return 1 if bad else 0


def inputs(argv):
	out, B, S = argv[0], int(argv[1]), int(argv[2])
	rng = random.Random(7)
	ids, mask = [], []
	for b in range(B):
		n = max(1, S - 3 * b)
		ids += [rng.randrange(1, VOCAB) for _ in range(n)] + [0] * (S - n)
		mask += [1] * n + [0] * (S - n)
	write_st(out, [("input_ids", "I32", [B, S], struct.pack("<%di" % (B * S), *ids)),
		       ("attention_mask", "I32", [B, S], struct.pack("<%di" % (B * S), *mask))])
	return 0


def forward(argv):
	cfg_path, ckpt, inp, out = argv
	c = json.load(open(cfg_path))
	w = {k: (s, floats(dt, raw)) for k, (dt, s, raw) in read_st(ckpt).items() if dt != "I64"}
	p = "bert." if "bert.embeddings.word_embeddings.weight" in w else ""

	def W(n):
		n = p + n
		if n not in w:
			n = n.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
		return w[n][1]

	x_in = read_st(inp)
	B, S = x_in["input_ids"][1]
	ids, mask = floats("I32", x_in["input_ids"][2]), floats("I32", x_in["attention_mask"][2])
	eps, Dh = c["layer_norm_eps"], D // H
	tanh = c["hidden_act"] in ("gelu_new", "gelu_pytorch_tanh", "gelu_fast")

	def linear(x, name, n_out, n_in):
		wt, b = W(name + ".weight"), W(name + ".bias")
		return [[b[o] + sum(wt[o * n_in + k] * row[k] for k in range(n_in)) for o in range(n_out)] for row in x]

	def ln(x, name):
		g, b = W(name + ".weight"), W(name + ".bias")
		out = []
		for row in x:
			m = sum(row) / len(row)
			var = sum((v - m) ** 2 for v in row) / len(row)
			out.append([(v - m) / math.sqrt(var + eps) * g[i] + b[i] for i, v in enumerate(row)])
		return out

	def gelu(v):
		if tanh:
			return 0.5 * v * (1 + math.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))
		return 0.5 * v * (1 + math.erf(v / math.sqrt(2)))

	emb = []
	for b in range(B):
		we, pe, te = W("embeddings.word_embeddings.weight"), W("embeddings.position_embeddings.weight"), \
			W("embeddings.token_type_embeddings.weight")
		x = [[we[int(ids[b * S + s]) * D + d] + pe[s * D + d] + te[d] for d in range(D)] for s in range(S)]
		x = ln(x, "embeddings.LayerNorm")
		m = mask[b * S:(b + 1) * S]
		for i in range(LAYERS):
			L = "encoder.layer.%d." % i
			q = linear(x, L + "attention.self.query", D, D)
			k = linear(x, L + "attention.self.key", D, D)
			v = linear(x, L + "attention.self.value", D, D)
			ctx = [[0.0] * D for _ in range(S)]
			for h in range(H):
				for s in range(S):
					sc = [sum(q[s][h * Dh + j] * k[t][h * Dh + j] for j in range(Dh)) / math.sqrt(Dh)
					      for t in range(S) if m[t]]
					keys = [t for t in range(S) if m[t]]
					top = max(sc)
					e = [math.exp(z - top) for z in sc]
					z = sum(e)
					for j in range(Dh):
						ctx[s][h * Dh + j] = sum(e[n] / z * v[t][h * Dh + j] for n, t in enumerate(keys))
			a = linear(ctx, L + "attention.output.dense", D, D)
			x = ln([[a[s][d] + x[s][d] for d in range(D)] for s in range(S)], L + "attention.output.LayerNorm")
			f = [[gelu(t) for t in row] for row in linear(x, L + "intermediate.dense", F, D)]
			o = linear(f, L + "output.dense", D, F)
			x = ln([[o[s][d] + x[s][d] for d in range(D)] for s in range(S)], L + "output.LayerNorm")
		n = sum(m)
		e = [sum(x[s][d] * m[s] for s in range(S)) / max(n, 1e-9) for d in range(D)]
		norm = max(math.sqrt(sum(t * t for t in e)), 1e-12)
		emb += [t / norm for t in e]
	write_st(out, [("sentence_embedding", "F32", [B, D], struct.pack("<%df" % len(emb), *emb))])
	return 0


def close(argv):
	a, b, name, tol = argv[0], argv[1], argv[2], float(argv[3])
	x, y = read_st(a)[name], read_st(b)[name]
	if x[1] != y[1]:
		print("# %s: shapes %s and %s" % (name, x[1], y[1]))
		return 1
	d = max(abs(u - v) for u, v in zip(floats(x[0], x[2]), floats(y[0], y[2])))
	print("# %s: max |a - b| = %.3g (tolerance %.3g)" % (name, d, tol))
	return 0 if d <= tol else 1


if __name__ == "__main__":
	cmds = {"make": make, "weights": weights, "inputs": inputs, "forward": forward, "close": close}
	sys.exit(cmds[sys.argv[1]](sys.argv[2:]))
