#!/usr/bin/env python3
"""llama_ref.py: the reference Llama decoder in plain PyTorch (torch alone), on the weights of a GGUF
file read by tools/gguf2ark.py and dequantised to fp32: greedy generation, one decode step per token,
as the model file tools/gguf2ark.py writes computes it.

usage: llama_ref.py FILE.gguf --prompt-ids IDS.txt --steps N [--eos ID] [--tokens-out FILE]
                    [--logits-out FILE.safetensors] [--device cpu|cuda] [--style interleaved|half]

Step t (t = 0 .. N - 1) runs the model on one token at position t: the prompt's token t while there is
one, then the argmax of the step before (the generated-text loop of the binary's --generate N). It
prints the argmax of every step, one id a line (--tokens-out: to FILE), and stops after the step
whose argmax is --eos once the prompt is consumed. --logits-out writes the last step's logits
[1, vocab] (F32, the name "logits"). The semantics are the model file's: RMSNorm with the GGUF's
epsilon; RoPE on q and k of every head at the step's position, base rope.freq_base over
rope.dimension_count dimensions, pairs (2i, 2i + 1) (style "interleaved": llama.cpp's order for the
Q and K rows of its Llama GGUF files; --style half for Hugging Face's rotate_half, for experiments);
grouped-query attention over the positions 0 .. t with scale 1/sqrt(head size), softmax in fp32;
SwiGLU feed-forward; the lm head is token_embd.weight when the file has no output.weight (tied).
Every product is fp32.

Import it for load() and generate().
"""

import argparse
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gguf2ark  # noqa: E402


def dequantize(torch, t, raw):
	"""A tensor's GGUF bytes -> fp32 torch tensor of its row-major shape (Q8_0, Q4_1 and the float
	types in torch; any other type through gguf2ark's numpy dequantisation)."""
	name = t.type_name
	u8 = torch.frombuffer(bytearray(raw), dtype=torch.uint8)
	if name == "F32":
		x = u8.view(torch.float32)
	elif name == "F16":
		x = u8.view(torch.float16).float()
	elif name == "BF16":
		x = u8.view(torch.bfloat16).float()
	elif name == "Q8_0":
		b = u8.view(-1, 34)
		d = b[:, 0:2].contiguous().view(torch.float16).float()             # (blocks, 1)
		x = d * b[:, 2:34].contiguous().view(torch.int8).float()           # (blocks, 32)
	elif name == "Q4_1":
		b = u8.view(-1, 20)
		d = b[:, 0:2].contiguous().view(torch.float16).float()
		m = b[:, 2:4].contiguous().view(torch.float16).float()
		qs = b[:, 4:20]
		q = torch.cat([qs & 0x0F, qs >> 4], dim=1).float()                 # byte j: elements j, j + 16
		x = d * q + m
	else:
		f32 = gguf2ark.dequantize(name, raw, t.name)
		x = torch.frombuffer(bytearray(f32), dtype=torch.float32)
	return x.reshape(t.shape).clone()


def load(torch, path, device="cpu"):
	"""(hyper-parameters, {GGUF name: fp32 tensor on device}) of a Llama GGUF file."""
	g = gguf2ark.GGUF(path)
	h = gguf2ark.hparams(g)
	w = {}
	for name, shape, _ in gguf2ark.weight_list(h):
		t = g.by_name[name]
		w[name] = dequantize(torch, t, g.read(t)).to(device)
	g.close()
	return h, w


def rope(torch, x, pos, h, style):
	"""x (heads, Dh) at position pos: each pair rotated by pos * base^(-2i/rotary_dim), in fp32."""
	R = h["rope_dim"]
	i = torch.arange(R // 2, dtype=torch.float64, device=x.device)
	ang = (pos * torch.pow(torch.tensor(h["rope_base"], dtype=torch.float64), -2.0 * i / R)).float()
	c, s = torch.cos(ang), torch.sin(ang)                                   # (R/2)
	y = x.clone()
	if style == "interleaved":
		a, b = x[:, 0:R:2], x[:, 1:R:2]
		y[:, 0:R:2] = a * c - b * s
		y[:, 1:R:2] = a * s + b * c
	else:
		a, b = x[:, 0:R // 2], x[:, R // 2:R]
		y[:, 0:R // 2] = a * c - b * s
		y[:, R // 2:R] = a * s + b * c
	return y


def step(torch, h, w, cache, token, pos, style="interleaved"):
	"""One decode step: token at position pos; cache: per layer [k (pos, Hkv, Dh), v] lists, appended.
	Returns the logits (vocab,)."""
	H, Hkv, Dh, eps = h["heads"], h["kv_heads"], h["head_dim"], h["eps"]
	group = H // Hkv

	def rmsnorm(x, g):
		return x * torch.rsqrt((x * x).mean() + eps) * g

	x = w["token_embd.weight"][token]                                      # (D)
	for i in range(h["layers"]):
		b = "blk.%d." % i
		n = rmsnorm(x, w[b + "attn_norm.weight"])
		q = (w[b + "attn_q.weight"] @ n).view(H, Dh)
		k = (w[b + "attn_k.weight"] @ n).view(Hkv, Dh)
		v = (w[b + "attn_v.weight"] @ n).view(Hkv, Dh)
		q, k = rope(torch, q, pos, h, style), rope(torch, k, pos, h, style)
		cache[i][0].append(k)
		cache[i][1].append(v)
		K = torch.stack(cache[i][0]).repeat_interleave(group, dim=1)          # (pos + 1, H, Dh)
		V = torch.stack(cache[i][1]).repeat_interleave(group, dim=1)
		s = torch.einsum("hd,thd->ht", q, K) / (Dh ** 0.5)                     # (H, pos + 1)
		o = torch.einsum("ht,thd->hd", torch.softmax(s, dim=-1), V).reshape(H * Dh)
		x = x + w[b + "attn_output.weight"] @ o
		n = rmsnorm(x, w[b + "ffn_norm.weight"])
		g = w[b + "ffn_gate.weight"] @ n
		x = x + w[b + "ffn_down.weight"] @ (torch.nn.functional.silu(g) * (w[b + "ffn_up.weight"] @ n))
	head = w["output.weight"] if "output.weight" in w else w["token_embd.weight"]
	return head @ rmsnorm(x, w["output_norm.weight"])                     # (vocab)


def generate(torch, h, w, prompt, steps, eos=None, style="interleaved"):
	"""(argmax of every step, last step's logits (vocab,)). Step t's token: prompt[t], else the argmax
	of step t - 1; stops after N steps, or after a step past the prompt whose argmax is eos."""
	cache = [([], []) for _ in range(h["layers"])]
	out, logits, token = [], None, prompt[0]
	with torch.no_grad():
		for t in range(steps):
			logits = step(torch, h, w, cache, token, t, style)
			nxt = int(torch.argmax(logits))
			out.append(nxt)
			if t + 1 < len(prompt):
				token = prompt[t + 1]
			else:
				token = nxt
				if eos is not None and nxt == eos:
					break
	return out, logits


def read_ids(path):
	with open(path) as f:
		return [int(x) for x in f.read().split()]


def write_logits(path, logits):
	v = logits.detach().to("cpu").float().flatten().tolist()
	raw = struct.pack("<%df" % len(v), *v)
	gguf2ark.write_safetensors(path, [("logits", "F32", [1, len(v)], raw)])


def main(argv):
	ap = argparse.ArgumentParser(description="reference Llama decoder (PyTorch) on a GGUF's dequantised weights")
	ap.add_argument("gguf")
	ap.add_argument("--prompt-ids", required=True, help="a text file of whitespace-separated token ids")
	ap.add_argument("--steps", type=int, required=True, help="decode steps, the prompt's included")
	ap.add_argument("--eos", type=int, default=None)
	ap.add_argument("--tokens-out", help="the argmax of every step, one a line (default: stdout)")
	ap.add_argument("--logits-out", help="the last step's logits (safetensors, F32 [1, vocab])")
	ap.add_argument("--device", default=None, help="cpu or cuda (default: cuda when there is one)")
	ap.add_argument("--style", default="interleaved", choices=("interleaved", "half"))
	a = ap.parse_args(argv)
	import torch
	dev = torch.device(a.device or ("cuda" if torch.cuda.is_available() else "cpu"))
	prompt = read_ids(a.prompt_ids)
	if not prompt or a.steps < len(prompt):
		ap.error("--steps %d: at least the prompt's %d tokens" % (a.steps, len(prompt)))
	h, w = load(torch, a.gguf, dev)
	out, logits = generate(torch, h, w, prompt, a.steps, a.eos, a.style)
	text = "".join("%d\n" % t for t in out)
	if a.tokens_out:
		with open(a.tokens_out, "w") as f:
			f.write(text)
	else:
		sys.stdout.write(text)
	if a.logits_out:
		write_logits(a.logits_out, logits[None])
	return 0


if __name__ == "__main__":
	sys.exit(main(sys.argv[1:]))
