#!/usr/bin/env python3
"""bert_ref.py: the reference BERT encoder forward in plain PyTorch (torch alone), on a Hugging Face
config.json and a safetensors checkpoint (or the weights tools/hf2ark.py wrote: the same names),
with sentence-transformers' mean pooling and l2 normalisation.

usage: bert_ref.py CONFIG.json WEIGHTS.safetensors INPUTS.safetensors -o OUT.safetensors
                   [--pooling none|mean] [--normalize] [--device cpu|cuda]

INPUTS holds input_ids and attention_mask, [B, S] integers. OUT gets sentence_embedding [B, hidden]
(--pooling mean) or last_hidden_state [B, S, hidden], fp32. The arithmetic is fp32 whatever the
weights' dtype (bf16 or fp16 weights are widened), so it is the reference of every converted dtype.
Import it for forward() and read_safetensors().
"""

import argparse
import json
import math
import struct
import sys

ST_TORCH = {"F32": "float32", "F16": "float16", "BF16": "bfloat16", "I32": "int32", "I64": "int64",
	    "F64": "float64", "U8": "uint8", "BOOL": "bool"}
TANH_ACTS = ("gelu_new", "gelu_pytorch_tanh", "gelu_fast")


def read_safetensors(torch, path):
	"""{name: tensor} of a safetensors file, on the CPU, in the file's dtypes."""
	with open(path, "rb") as f:
		(n,) = struct.unpack("<Q", f.read(8))
		header = json.loads(f.read(n))
		data = bytearray(f.read())
	out = {}
	for name, e in header.items():
		if name == "__metadata__":
			continue
		b, end = e["data_offsets"]
		dt = getattr(torch, ST_TORCH[e["dtype"]])
		if end == b:
			out[name] = torch.zeros(e["shape"], dtype=dt)
		else:
			out[name] = torch.frombuffer(data, dtype=dt, count=(end - b) // torch.empty(0, dtype=dt).element_size(),
						     offset=b).reshape(e["shape"]).clone()
	return out


def write_safetensors(torch, path, tensors):
	"""tensors: {name: fp32 tensor}, written as F32."""
	header, blobs, off = {}, [], 0
	for name, t in tensors.items():
		v = t.detach().to("cpu", torch.float32).flatten().tolist()  # no numpy needed
		raw = struct.pack("<%df" % len(v), *v)
		header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
		blobs.append(raw)
		off += len(raw)
	h = json.dumps(header).encode()
	h += b" " * (-len(h) % 8)
	with open(path, "wb") as f:
		f.write(struct.pack("<Q", len(h)))
		f.write(h)
		for b in blobs:
			f.write(b)


def forward(torch, config, w, input_ids, attention_mask, pooling="mean", normalize=True):
	"""The encoder on [B, S] ids and mask; w: {checkpoint name: tensor} (with or without 'bert.')."""
	F = torch.nn.functional
	p = "bert." if "bert.embeddings.word_embeddings.weight" in w else ""
	dev = input_ids.device

	def W(name):
		t = w.get(p + name)
		if t is None and "LayerNorm" in name:  # old checkpoints: gamma and beta
			t = w[p + name.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")]
		if t is None:
			raise KeyError("no tensor '%s'" % (p + name))
		return t.to(dev, torch.float32)

	D = config["hidden_size"]
	H = config["num_attention_heads"]
	Dh = D // H
	eps = config.get("layer_norm_eps", 1e-12)
	act = config.get("hidden_act", "gelu")
	B, S = input_ids.shape
	ids = input_ids.long()
	mask = attention_mask.to(dev, torch.float32)  # [B, S], 1: a token

	def ln(x, name):
		return F.layer_norm(x, (D,), W(name + ".weight"), W(name + ".bias"), eps)

	def linear(x, name):
		return F.linear(x, W(name + ".weight"), W(name + ".bias"))

	x = W("embeddings.word_embeddings.weight")[ids]                         # (B, S, D)
	x = x + W("embeddings.position_embeddings.weight")[:S] + W("embeddings.token_type_embeddings.weight")[0]
	x = ln(x, "embeddings.LayerNorm")
	bias = (1.0 - mask)[:, None, None, :] * torch.finfo(torch.float32).min  # (B, 1, 1, S): padded keys
	for i in range(config["num_hidden_layers"]):
		L = "encoder.layer.%d." % i

		def heads(t):
			return t.view(B, S, H, Dh).transpose(1, 2)                      # (B, H, S, Dh)

		q = heads(linear(x, L + "attention.self.query"))
		k = heads(linear(x, L + "attention.self.key"))
		v = heads(linear(x, L + "attention.self.value"))
		s = q @ k.transpose(-1, -2) / math.sqrt(Dh) + bias                     # (B, H, S, S)
		ctx = (torch.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, S, D)
		x = ln(linear(ctx, L + "attention.output.dense") + x, L + "attention.output.LayerNorm")
		f = linear(x, L + "intermediate.dense")
		f = F.relu(f) if act == "relu" else F.gelu(f, approximate="tanh" if act in TANH_ACTS else "none")
		x = ln(linear(f, L + "output.dense") + x, L + "output.LayerNorm")
	if pooling == "none":
		return x                                                                 # (B, S, D)
	m = mask[:, :, None]
	e = (x * m).sum(1) / m.sum(1).clamp(min=1e-9)                                # (B, D)
	return F.normalize(e, p=2, dim=1, eps=1e-12) if normalize else e


def main(argv):
	ap = argparse.ArgumentParser(description="reference BERT forward (PyTorch) with mean pooling + normalize")
	ap.add_argument("config")
	ap.add_argument("weights")
	ap.add_argument("inputs")
	ap.add_argument("-o", "--output", required=True)
	ap.add_argument("--pooling", default="mean", choices=("none", "mean"))
	ap.add_argument("--normalize", action="store_true")
	ap.add_argument("--device", default=None, help="cpu or cuda (default: cuda when there is one)")
	a = ap.parse_args(argv)
	import torch
	dev = torch.device(a.device or ("cuda" if torch.cuda.is_available() else "cpu"))
	with open(a.config) as f:
		config = json.load(f)
	w = read_safetensors(torch, a.weights)
	x = read_safetensors(torch, a.inputs)
	with torch.no_grad():
		y = forward(torch, config, w, x["input_ids"].to(dev), x["attention_mask"].to(dev), a.pooling, a.normalize)
	name = "last_hidden_state" if a.pooling == "none" else "sentence_embedding"
	write_safetensors(torch, a.output, {name: y})
	print("bert_ref: %s %s -> %s" % (name, list(y.shape), a.output))
	return 0


if __name__ == "__main__":
	sys.exit(main(sys.argv[1:]))
