#!/usr/bin/env python3
"""encoder_parts.py: the PyTorch side and the table of bench/encoders.sh.

  encoder_parts.py torch OUT.json --matmuls "NAME N K;..." [--iters 1000] [--warmup 100] [--seed 1]
      times, each in one captured CUDA graph, torch.nn.functional.scaled_dot_product_attention on
      q, k, v [1, 12, 128, 64] bf16 (no mask), and torch.matmul(x, w.t()) (cuBLAS) for x [128, K] and
      each weight [N, K] bf16; writes {"gpu", "torch", "attention": {...}, "mm_NAME": {...}} to OUT.json
  encoder_parts.py table OUT_DIR --models "bert_base minilm_l6" --parts "attention mm_..."
      reads what bench/encoders.sh left in OUT_DIR (--check exit codes, --bench lines, the
      torch_baseline.py JSON of the models, the JSON above), writes OUT_DIR/results.json and prints
      one markdown table with the ratios and the targets of issue 12.
"""

import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
NUM = r"([0-9.]+|nan|inf)"
BENCH_RE = re.compile(r"^bench: (\d+) iterations after (\d+) warm-up: median %s us, p99 %s us, min %s us"
		      r"(?: \(predicted %s us\))?" % (NUM, NUM, NUM, NUM), re.M)
VARIANTS = ("eager", "graph", "compile", "compile_ro")
# issue 12's targets: BERT-base at most 150 us; MiniLM 3x faster than the best PyTorch variant;
# attention within 1.5x of SDPA in a CUDA graph
MODEL_TARGET = {"bert_base": ("<= 150 us", lambda us, best: us <= 150.0),
		"minilm_l6": (">= 3x best PyTorch", lambda us, best: best is not None and best >= 3.0 * us)}


# ---- PyTorch -----------------------------------------------------------------------------------

def time_in_graph(torch, tb, fn, iters, warmup):
	"""fn() captured once in a CUDA graph, then replayed; median and p99 from torch_baseline's timer."""
	s = torch.cuda.Stream()
	s.wait_stream(torch.cuda.current_stream())
	with torch.cuda.stream(s):
		for _ in range(3):
			fn()
	torch.cuda.current_stream().wait_stream(s)
	g = torch.cuda.CUDAGraph()
	with torch.cuda.graph(g):
		fn()
	return tb.time_forward(torch, g.replay, iters, warmup, False)


def run_torch(a):
	try:
		import torch
	except ImportError:
		print("encoder_parts: no torch: nothing timed", file=sys.stderr)
		return 77
	if not torch.cuda.is_available():
		print("encoder_parts: no CUDA device: nothing timed", file=sys.stderr)
		return 77
	sys.path.insert(0, HERE)
	import torch_baseline as tb
	F = torch.nn.functional
	dev = torch.device("cuda:0")
	gen = torch.Generator(device=dev)
	gen.manual_seed(a.seed)
	bf = torch.bfloat16

	def rand(*shape, scale=1.0):
		return ((torch.rand(shape, generator=gen, device=dev) * 2 - 1) * scale).to(bf)

	res = {"gpu": torch.cuda.get_device_name(dev), "torch": torch.__version__, "iters": a.iters}
	with torch.no_grad():
		q, k, v = rand(1, 12, 128, 64), rand(1, 12, 128, 64), rand(1, 12, 128, 64)
		r = time_in_graph(torch, tb, lambda: F.scaled_dot_product_attention(q, k, v), a.iters, a.warmup)
		r["what"] = "scaled_dot_product_attention [1, 12, 128, 64] bf16, CUDA graph"
		res["attention"] = r
		print("attention (SDPA, graph): median %.2f us, p99 %.2f us" % (r["median_us"], r["p99_us"]))
		for spec in a.matmuls.split(";"):
			if not spec.strip():
				continue
			name, n, kk = spec.split()
			n, kk = int(n), int(kk)
			x, w = rand(128, kk), rand(n, kk, scale=kk ** -0.5)
			r = time_in_graph(torch, tb, lambda x=x, w=w: torch.matmul(x, w.t()), a.iters, a.warmup)
			r["what"] = "torch.matmul [128, %d] x [%d, %d]^T bf16 (cuBLAS), CUDA graph" % (kk, n, kk)
			r["flops"] = 2.0 * 128 * n * kk
			res["mm_" + name] = r
			print("mm_%s (cuBLAS, graph): median %.2f us, p99 %.2f us" % (name, r["median_us"], r["p99_us"]))
	with open(a.out, "w") as f:
		json.dump(res, f, indent=1)
		f.write("\n")
	return 0


# ---- the table ---------------------------------------------------------------------------------

def read(path):
	try:
		with open(path) as f:
			return f.read()
	except OSError:
		return None


def read_json(path):
	s = read(path)
	try:
		return json.loads(s) if s else None
	except ValueError:
		return None


def bench_of(out, x):
	"""(median, p99, predicted) of a binary's --bench line, or Nones."""
	m = BENCH_RE.search(read(os.path.join(out, x + ".bench.log")) or "")
	if not m:
		return None, None, None
	return float(m.group(3)), float(m.group(4)), float(m.group(6)) if m.group(6) else None


def check_of(out, x):
	rc = (read(os.path.join(out, x + ".check.rc")) or "").strip()
	return "ok" if rc == "0" else ("n/a" if rc == "" else "FAILED (%s)" % rc)


def us(v):
	return "n/a" if v is None else "%.1f" % v


def ratio(a, b):
	return "n/a" if a is None or b is None or b == 0 else "%.2fx" % (a / b)


def table(a):
	out = a.dir
	models, parts = a.models.split(), a.parts.split()
	gpu = (read(os.path.join(out, "gpu.txt")) or "").strip()
	pt = read_json(os.path.join(out, "parts.torch.json")) or {}
	gpu = gpu or pt.get("gpu", "unknown GPU")
	results = {"gpu": gpu, "models": {}, "parts": {}}
	print("Transformer encoders, batch 1, sequence 128, bf16, on %s (medians of --bench %s; PyTorch %s)\n" %
	      (gpu, "and CUDA-event times", pt.get("torch", "?")))
	print("| model | check | arkgen us (p99) | predicted | eager | CUDA graph | compile | compile + graphs | "
	      "best PyTorch / arkgen | target |")
	print("|---|---|---|---|---|---|---|---|---|---|")
	for m in models:
		med, p99, pred = bench_of(out, m)
		tj = read_json(os.path.join(out, m + ".torch.json")) or {}
		vals = {v: (tj.get(v) or {}).get("median_us") for v in VARIANTS}
		best = min([t for t in vals.values() if t is not None], default=None)
		tgt, ok = MODEL_TARGET.get(m, ("", None))
		verdict = "" if ok is None or med is None else (" (met)" if ok(med, best) else " (missed)")
		print("| %s | %s | %s (%s) | %s | %s | %s | %s | %s | %s | %s%s |" %
		      (m, check_of(out, m), us(med), us(p99), us(pred), us(vals["eager"]), us(vals["graph"]),
		       us(vals["compile"]), us(vals["compile_ro"]), ratio(best, med), tgt, verdict))
		results["models"][m] = {"check": check_of(out, m), "median_us": med, "p99_us": p99, "predicted_us": pred,
					"torch": vals, "best_torch_over_arkgen": best / med if best and med else None}
	print("\n| part | check | arkgen us (p99) | PyTorch in a CUDA graph us | arkgen / PyTorch | "
	      "arkgen TFLOP/s | target |")
	print("|---|---|---|---|---|---|---|")
	for p in parts:
		med, p99, _ = bench_of(out, p)
		r = pt.get(p) or {}
		tmed = r.get("median_us")
		what = "SDPA" if p == "attention" else "cuBLAS"
		tf = "%.1f" % (r["flops"] / med / 1e6) if med and r.get("flops") else ""
		tgt = ""
		if p == "attention":
			tgt = "<= 1.5x SDPA"
			if med is not None and tmed:
				tgt += " (met)" if med <= 1.5 * tmed else " (missed)"
		print("| %s | %s | %s (%s) | %s %s | %s | %s | %s |" %
		      (p, check_of(out, p), us(med), us(p99), what, us(tmed), ratio(med, tmed), tf, tgt))
		results["parts"][p] = {"check": check_of(out, p), "median_us": med, "p99_us": p99, "torch_median_us": tmed,
				       "torch_what": r.get("what")}
	with open(os.path.join(out, "results.json"), "w") as f:
		json.dump(results, f, indent=1)
		f.write("\n")
	return 0


def main(argv):
	ap = argparse.ArgumentParser(description="PyTorch parts and table of bench/encoders.sh")
	sub = ap.add_subparsers(dest="cmd", required=True)
	t = sub.add_parser("torch")
	t.add_argument("out")
	t.add_argument("--matmuls", required=True, help='"NAME N K;..."')
	t.add_argument("--iters", type=int, default=1000)
	t.add_argument("--warmup", type=int, default=100)
	t.add_argument("--seed", type=int, default=1)
	b = sub.add_parser("table")
	b.add_argument("dir")
	b.add_argument("--models", default="bert_base minilm_l6")
	b.add_argument("--parts", default="attention")
	a = ap.parse_args(argv)
	return run_torch(a) if a.cmd == "torch" else table(a)


if __name__ == "__main__":
	sys.exit(main(sys.argv[1:]))
