#!/usr/bin/env python3
"""llama_ref.py: the reference Llama decoder in plain PyTorch (torch alone), on the weights of a GGUF
file read by tools/gguf2ark.py and dequantised to fp32: greedy generation, one decode step per token,
as the model file tools/gguf2ark.py writes computes it.

usage: llama_ref.py FILE.gguf --prompt-ids IDS.txt --steps N [--eos ID] [--tokens-out FILE]
                    [--logits-out FILE.safetensors] [--device cpu|cuda] [--style interleaved|half]
       llama_ref.py (FILE.gguf [--prompt-ids IDS.txt] | --shape PRESET) --bench N [--max-len L]
                    [--dtype bf16|fp16|fp32] [--json FILE]

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

--bench N times N decode steps of the same model written for speed (class Static: caches allocated
once, token and position on the GPU, the feed inside the step): eager, one CUDA graph replay per step,
and the same reading each step's token on the host; the PyTorch side of the decode tables. With a
GGUF and --prompt-ids it first checks that this step's greedy tokens are the reference's; --shape
PRESET (llama3.2-1b, smollm2-135m) times a shape with random weights.

Import it for load(), generate(), Static and bench().
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


def generate(torch, h, w, prompt, steps, eos=None, style="interleaved", margins=None):
	"""(argmax of every step, last step's logits (vocab,)). Step t's token: prompt[t], else the argmax
	of step t - 1; stops after N steps, or after a step past the prompt whose argmax is eos. margins:
	a list that gets each step's largest logit less the second (how near the choice was to a tie)."""
	cache = [([], []) for _ in range(h["layers"])]
	out, logits, token = [], None, prompt[0]
	with torch.no_grad():
		for t in range(steps):
			logits = step(torch, h, w, cache, token, t, style)
			nxt = int(torch.argmax(logits))
			out.append(nxt)
			if margins is not None:
				top = torch.topk(logits, 2).values
				margins.append(float(top[0] - top[1]))
			if t + 1 < len(prompt):
				token = prompt[t + 1]
			else:
				token = nxt
				if eos is not None and nxt == eos:
					break
	return out, logits


class Static:
	"""The decode step again, for timing: caches of max_len positions allocated once, the token and
	the position as GPU tensors, and the step's feed (token <- argmax, pos += 1) inside the step, so
	that one CUDA graph replay is one decode step (PyTorch's best batch-1 decoding without kernels of
	its own, as static-cache generation does). Matmuls in dtype, RMSNorm, RoPE and softmax in fp32;
	attention reads all max_len positions, those past pos masked."""

	def __init__(self, torch, h, w, max_len, dtype, device):
		self.torch, self.h, self.L, self.dtype = torch, h, max_len, dtype
		self.w = {k: v.to(device, dtype) for k, v in w.items()}
		Hkv, Dh, R = h["kv_heads"], h["head_dim"], h["rope_dim"]
		self.k = [torch.zeros(max_len, Hkv, Dh, dtype=dtype, device=device) for _ in range(h["layers"])]
		self.v = [torch.zeros(max_len, Hkv, Dh, dtype=dtype, device=device) for _ in range(h["layers"])]
		self.token = torch.zeros(1, dtype=torch.long, device=device)
		self.pos = torch.zeros(1, dtype=torch.long, device=device)
		inv = h["rope_base"] ** (-2.0 * torch.arange(R // 2, dtype=torch.float64) / R)
		ang = torch.arange(max_len, dtype=torch.float64)[:, None] * inv[None, :]     # (L, R/2)
		self.cos, self.sin = torch.cos(ang).float().to(device), torch.sin(ang).float().to(device)
		self.idx = torch.arange(max_len, device=device)

	def reset(self, token=0):
		for c in self.k + self.v:
			c.zero_()
		self.token.fill_(token)
		self.pos.zero_()

	def _rope(self, x):
		"""x (heads, Dh) -> fp32, pairs (2i, 2i + 1) rotated at position pos."""
		R = self.h["rope_dim"]
		c, s = self.cos.index_select(0, self.pos), self.sin.index_select(0, self.pos)   # (1, R/2)
		y = x.float()
		a, b = y[:, 0:R:2].clone(), y[:, 1:R:2].clone()
		y[:, 0:R:2] = a * c - b * s
		y[:, 1:R:2] = a * s + b * c
		return y

	def step(self):
		"""One decode step at (token, pos); returns (logits (1, vocab) fp32, next token (1,))."""
		torch, h, w, dt = self.torch, self.h, self.w, self.dtype
		F = torch.nn.functional
		H, Hkv, Dh, eps = h["heads"], h["kv_heads"], h["head_dim"], h["eps"]

		def rms(x, g):
			xf = x.float()
			return (xf * torch.rsqrt((xf * xf).mean(-1, keepdim=True) + eps) * g.float()).to(dt)

		x = w["token_embd.weight"].index_select(0, self.token)                     # (1, D)
		mask = self.idx <= self.pos                                                # (L)
		for i in range(h["layers"]):
			b = "blk.%d." % i
			n = rms(x, w[b + "attn_norm.weight"])
			q = self._rope(F.linear(n, w[b + "attn_q.weight"]).view(H, Dh))
			k = self._rope(F.linear(n, w[b + "attn_k.weight"]).view(Hkv, Dh)).to(dt)
			v = F.linear(n, w[b + "attn_v.weight"]).view(Hkv, Dh)
			self.k[i].index_copy_(0, self.pos, k[None])
			self.v[i].index_copy_(0, self.pos, v[None])
			qg = q.view(Hkv, H // Hkv, Dh).to(dt)
			s = torch.einsum("kgd,lkd->kgl", qg, self.k[i]).float() / (Dh ** 0.5)  # (Hkv, G, L)
			p = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1).to(dt)
			o = torch.einsum("kgl,lkd->kgd", p, self.v[i]).reshape(1, H * Dh)
			x = x + F.linear(o, w[b + "attn_output.weight"])
			n = rms(x, w[b + "ffn_norm.weight"])
			x = x + F.linear(F.silu(F.linear(n, w[b + "ffn_gate.weight"])) * F.linear(n, w[b + "ffn_up.weight"]),
					 w[b + "ffn_down.weight"])
		head = w["output.weight"] if "output.weight" in w else w["token_embd.weight"]
		logits = F.linear(rms(x, w["output_norm.weight"]), head).float()
		nxt = torch.argmax(logits, dim=-1)
		self.token.copy_(nxt)
		self.pos.add_(1)
		return logits, nxt


def random_weights(torch, h, device, seed=0):
	"""Weights of a shape (gguf2ark.PRESETS), normal with std 0.02 (norms 1), for timing."""
	g = torch.Generator(device="cpu").manual_seed(seed)
	w = {}
	for name, shape, kind in gguf2ark.weight_list(h):
		w[name] = torch.ones(shape) if kind == "norm" else torch.randn(shape, generator=g) * 0.02
	return {k: v.to(device) for k, v in w.items()}


def bench(torch, h, w, steps, max_len, dtype, warmup=8):
	"""tokens/s of N decode steps from token 0: eager (a Python loop of the step), one CUDA graph
	replay per step, and the same reading each step's token on the host (as a loop that watches for
	end of sequence must). Returns {name: (tokens/s, us/token)}."""
	import time
	if max(steps, warmup) > max_len:
		raise ValueError("--bench %d: more steps than --max-len %d positions" % (steps, max_len))
	dev = next(iter(w.values())).device
	st = Static(torch, h, w, max_len, dtype, dev)
	out = {}

	def timed(name, fn):
		st.reset()
		for _ in range(warmup):
			fn()
		torch.cuda.synchronize()
		st.reset()
		t0 = time.perf_counter()
		for _ in range(steps):
			fn()
		torch.cuda.synchronize()
		dt = time.perf_counter() - t0
		out[name] = (steps / dt, dt / steps * 1e6)

	with torch.no_grad():
		timed("eager", st.step)
		st.reset()                     # the steps run before capture must stay inside the caches
		side = torch.cuda.Stream()
		side.wait_stream(torch.cuda.current_stream())
		with torch.cuda.stream(side):
			for _ in range(3):
				st.step()
		torch.cuda.current_stream().wait_stream(side)
		graph = torch.cuda.CUDAGraph()
		with torch.cuda.graph(graph):
			_, nxt = st.step()
		timed("cuda graph per step", graph.replay)
		timed("cuda graph per step, token read", lambda: (graph.replay(), int(nxt)))
	return out


def check_static(torch, h, w, prompt, steps, dtype):
	"""The static step's greedy tokens (eager) against generate()'s: the timed code computes the same
	model. Returns (static tokens, generate tokens)."""
	dev = next(iter(w.values())).device
	st = Static(torch, h, w, steps + 1, dtype, dev)
	st.reset(prompt[0])
	got = []
	with torch.no_grad():
		for t in range(steps):
			_, nxt = st.step()
			got.append(int(nxt))
			if t + 1 < len(prompt):
				st.token.fill_(prompt[t + 1])
	ref, _ = generate(torch, h, w, prompt, steps)
	return got, ref


def read_ids(path):
	with open(path) as f:
		return [int(x) for x in f.read().split()]


def write_logits(path, logits):
	v = logits.detach().to("cpu").float().flatten().tolist()
	raw = struct.pack("<%df" % len(v), *v)
	gguf2ark.write_safetensors(path, [("logits", "F32", [1, len(v)], raw)])


def main(argv):
	ap = argparse.ArgumentParser(description="reference Llama decoder (PyTorch) on a GGUF's dequantised weights")
	ap.add_argument("gguf", nargs="?", help="the model (not with --shape)")
	ap.add_argument("--prompt-ids", help="a text file of whitespace-separated token ids")
	ap.add_argument("--steps", type=int, help="decode steps, the prompt's included")
	ap.add_argument("--eos", type=int, default=None)
	ap.add_argument("--tokens-out", help="the argmax of every step, one a line (default: stdout)")
	ap.add_argument("--logits-out", help="the last step's logits (safetensors, F32 [1, vocab])")
	ap.add_argument("--device", default=None, help="cpu or cuda (default: cuda when there is one)")
	ap.add_argument("--style", default="interleaved", choices=("interleaved", "half"))
	ap.add_argument("--bench", type=int, metavar="N", help="time N decode steps instead (CUDA): eager, one CUDA "
			"graph per step, and with the token read each step")
	ap.add_argument("--shape", choices=sorted(gguf2ark.PRESETS), help="--bench on a shape with random weights")
	ap.add_argument("--max-len", type=int, default=512, help="--bench: positions in the caches (default 512)")
	ap.add_argument("--dtype", default="bf16", choices=("bf16", "fp16", "fp32"), help="--bench: weights and "
			"activations (default bf16)")
	ap.add_argument("--json", help="--bench: the results as JSON")
	a = ap.parse_args(argv)
	if (a.gguf is None) == (a.shape is None):
		ap.error("give a GGUF file or --shape (with --bench)")
	if a.shape and a.bench is None:
		ap.error("--shape is for --bench")
	import torch
	dev = torch.device(a.device or ("cuda" if torch.cuda.is_available() else "cpu"))
	if a.bench is not None:
		if dev.type != "cuda":
			ap.error("--bench needs CUDA")
		dt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[a.dtype]
		if a.shape:
			h = dict(gguf2ark.PRESETS[a.shape])
			w = random_weights(torch, h, dev)
		else:
			h, w = load(torch, a.gguf, dev)
		what = a.shape or os.path.basename(a.gguf)
		if a.prompt_ids and not a.shape:
			prompt = read_ids(a.prompt_ids)
			got, ref = check_static(torch, h, w, prompt, len(prompt) + 31, dt)
			same = sum(1 for x, y in zip(got, ref) if x == y)
			print("llama_ref: the timed step (%s) and the reference agree on %d of %d greedy tokens" %
			      (a.dtype, same, len(ref)))
		res = bench(torch, h, w, a.bench, a.max_len, dt)
		gpu = torch.cuda.get_device_name(0)
		for name, (tps, us) in res.items():
			print("llama_ref: %s, %s, %s, %d steps, KV %d: %-32s %9.1f tokens/s %9.1f us/token" %
			      (what, gpu, a.dtype, a.bench, a.max_len, name, tps, us))
		if a.json:
			import json
			with open(a.json, "w") as f:
				json.dump({"model": what, "gpu": gpu, "dtype": a.dtype, "steps": a.bench, "max_len": a.max_len,
					   "torch": torch.__version__,
					   "results": {k: {"tokens_per_s": v[0], "us_per_token": v[1]} for k, v in res.items()}}, f, indent=1)
		return 0
	if not a.prompt_ids or a.steps is None:
		ap.error("--prompt-ids and --steps are needed (or --bench)")
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
