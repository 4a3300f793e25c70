#!/usr/bin/env python3
"""tests/lib/tinygguf.py: the helper of tests/gguf.sh: a GGUF writer of its own and checks of
tools/gguf2ark.py against it. Standard library, plus numpy for the dequantisation checks.

  tinygguf.py make FILE [--untied] [--version 2|3] [--arch NAME] [--mixed] [--no-meta KEY] [--ctx N]
      a tiny Llama GGUF: 2 layers, dim 256, 4 heads of 64 sharing 2 kv heads, FFN 512, vocab 40,
      token_embd Q8_0, projections Q4_1, norms F32 (blk.1.ffn_norm F16), random values; metadata of
      every value type (test.* keys, arrays of each type and of strings); --untied adds output.weight
      (Q4_1); --mixed stores blk.1's projections as Q4_0, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K and BF16
  tinygguf.py read FILE [--untied] [--mixed] ...
      gguf2ark.GGUF(FILE) gives back every metadata key, value and type, and every tensor's name,
      shape, type and bytes, as make wrote them
  tinygguf.py weights GGUF CFG ST DTYPE [--dequant]
      ST holds exactly CFG's weights: Q4_1 / Q8_0 as U8 [rows, row bytes] equal to the GGUF's bytes
      (with --dequant: each value the dequantised one rounded), floats and other types in DTYPE
      rounded to nearest even; and CFG declares each weight's dtype accordingly
  tinygguf.py deq
      q4_1, q8_0 and q4_0 blocks against values computed by hand; the other types' vectorised
      dequantisation against a loop over elements written from the block layouts
  tinygguf.py shapes CFG
      every op of a model file gguf2ark.py wrote gets inputs of the shapes and dtypes the decoder
      contract (issue 13) asks of it; prints the outputs' shapes
  tinygguf.py generate GGUF IDS N STYLE
      greedy decoding in numpy (fp64) on the dequantised weights, one token a step, RoPE pairs of
      STYLE (interleaved or half); prints the generated ids
  tinygguf.py bad FILE OUT KIND
      OUT is FILE broken in one way (KIND: magic, version1, bigendian, valuetype, ggmltype, dims5,
      dim0, misaligned, alignment, overlap, blockdim, dupkey, duptensor, arraytype, string, bool,
      cut:N: the first N bytes); prints the byte offset the error must name
"""

import json
import os
import random
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import gguf2ark as G  # noqa: E402

LAYERS, DIM, HEADS, KV, FFN, VOCAB, HD = 2, 256, 4, 2, 512, 40, 64
TYPES = {"F32": 0, "F16": 1, "Q4_0": 2, "Q4_1": 3, "Q5_0": 6, "Q5_1": 7, "Q8_0": 8, "Q4_K": 12, "Q5_K": 13,
	 "Q6_K": 14, "BF16": 30, "IQ2_XXS": 16}
BLOCK = {"F32": (1, 4), "F16": (1, 2), "BF16": (1, 2), "Q4_0": (32, 18), "Q4_1": (32, 20), "Q5_0": (32, 22),
	 "Q5_1": (32, 24), "Q8_0": (32, 34), "Q4_K": (256, 144), "Q5_K": (256, 176), "Q6_K": (256, 210),
	 "IQ2_XXS": (256, 66)}
MIXED = {"attn_q": "Q4_0", "attn_k": "Q5_0", "attn_v": "Q5_1", "attn_output": "BF16", "ffn_gate": "Q4_K",
	 "ffn_up": "Q6_K", "ffn_down": "Q5_K"}
# every value type once (the number in the key is the type's), and arrays
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)


def metadata(a):
	m = [("general.architecture", STR, a.arch), ("general.name", STR, "tiny llama é"),
	     ("general.alignment", U32, 64),
	     ("llama.block_count", U32, LAYERS), ("llama.context_length", U32, a.ctx),
	     ("llama.embedding_length", U32, DIM), ("llama.feed_forward_length", U32, FFN),
	     ("llama.attention.head_count", U32, HEADS), ("llama.attention.head_count_kv", U32, KV),
	     ("llama.rope.freq_base", F32, 50000.0), ("llama.rope.dimension_count", U32, HD),
	     ("llama.attention.layer_norm_rms_epsilon", F32, 9.999999974752427e-07),
	     ("test.u8", U8, 200), ("test.i8", I8, -100), ("test.u16", U16, 60000), ("test.i16", I16, -30000),
	     ("test.u32", U32, 4000000000), ("test.i32", I32, -2000000000), ("test.f32", F32, 0.5),
	     ("test.bool", BOOL, True), ("test.u64", U64, 1 << 60), ("test.i64", I64, -(1 << 60)), ("test.f64", F64, 0.1),
	     ("test.empty", STR, ""), ("test.array_i32", (ARR, I32), [1, -2, 3]), ("test.array_f64", (ARR, F64), [0.25]),
	     ("test.array_bool", (ARR, BOOL), [True, False]), ("test.array_empty", (ARR, U8), []),
	     ("tokenizer.ggml.model", STR, "gpt2"),
	     ("tokenizer.ggml.tokens", (ARR, STR), ["<|end|>", "<|start|>"] + ["t%d" % i for i in range(VOCAB - 2)]),
	     ("tokenizer.ggml.token_type", (ARR, I32), [3, 3] + [1] * (VOCAB - 2)),
	     ("tokenizer.ggml.eos_token_id", U32, 0), ("tokenizer.ggml.bos_token_id", U32, 1)]
	return [x for x in m if x[0] not in a.no_meta]


def tensors(a):
	"""(name, row-major shape, type name) in file order."""
	t = [("token_embd.weight", [VOCAB, DIM], "Q8_0")]
	for i in range(LAYERS):
		b = "blk.%d." % i
		for n, s in (("attn_q", [HEADS * HD, DIM]), ("attn_k", [KV * HD, DIM]), ("attn_v", [KV * HD, DIM]),
			     ("attn_output", [DIM, HEADS * HD]), ("ffn_gate", [FFN, DIM]), ("ffn_up", [FFN, DIM]),
			     ("ffn_down", [DIM, FFN])):
			t.append((b + n + ".weight", s, MIXED[n] if (a.mixed and i == 1) else "Q4_1"))
		t += [(b + "attn_norm.weight", [DIM], "F32"), (b + "ffn_norm.weight", [DIM], "F16" if i == 1 else "F32")]
	t.append(("output_norm.weight", [DIM], "F32"))
	if a.untied:
		t.append(("output.weight", [VOCAB, DIM], "Q4_1"))
	return [(n, s, a.type.get(n, tn)) for n, s, tn in t]


def half_bytes(rng, lo=0.001, hi=0.05, sign=False):
	v = rng.uniform(lo, hi) * (rng.choice((-1, 1)) if sign else 1)
	return struct.pack("<e", v)


def tensor_bytes(rng, shape, tn):
	n = 1
	for d in shape:
		n *= d
	block, size = BLOCK[tn]
	if tn == "F32":
		return struct.pack("<%df" % n, *[rng.uniform(0.5, 1.5) for _ in range(n)])
	if tn == "F16":
		return struct.pack("<%de" % n, *[rng.uniform(0.5, 1.5) for _ in range(n)])
	if tn == "BF16":
		return b"".join(struct.pack("<f", rng.uniform(-0.1, 0.1))[2:] for _ in range(n))
	out = bytearray()
	for _ in range(n // block):
		b = bytearray(rng.getrandbits(8) for _ in range(size))
		if tn in ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0"):
			b[0:2] = half_bytes(rng)
			if tn in ("Q4_1", "Q5_1"):
				b[2:4] = half_bytes(rng, sign=True)
		elif tn in ("Q4_K", "Q5_K"):
			b[0:2] = half_bytes(rng, 0.0001, 0.002)
			b[2:4] = half_bytes(rng, 0.0001, 0.002)
		elif tn == "Q6_K":
			b[208:210] = half_bytes(rng, 0.0001, 0.002)
		out += b
	return bytes(out)


def pack_value(t, v):
	if isinstance(t, tuple):
		et = t[1]
		return struct.pack("<IQ", et, len(v)) + b"".join(pack_value(et, x) for x in v)
	if t == STR:
		raw = v.encode()
		return struct.pack("<Q", len(raw)) + raw
	fmt = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<?", U64: "<Q",
	       I64: "<q", F64: "<d"}[t]
	return struct.pack(fmt, v)


def gstr(s):
	raw = s.encode()
	return struct.pack("<Q", len(raw)) + raw


def build(a, rng=None):
	"""(file bytes, {offset name: offset}, metadata, tensors with their bytes)."""
	rng = rng or random.Random(a.seed)
	meta = metadata(a)
	align = 64 if any(k == "general.alignment" for k, _, _ in meta) else 32
	ts = [(n, s, tn, tensor_bytes(rng, s, tn)) for n, s, tn in tensors(a)]
	at = {}
	head = bytearray(b"GGUF" + struct.pack("<IQQ", a.version, len(ts), len(meta)))
	for k, t, v in meta:
		at["key " + k] = len(head)
		head += gstr(k) + struct.pack("<I", t[0] if isinstance(t, tuple) else t)
		at["value " + k] = len(head)
		head += pack_value(t, v)
	off, offs = 0, []
	for n, s, tn, raw in ts:
		offs.append(off)
		off += len(raw) + (-len(raw) % align)
	for (n, s, tn, raw), o in zip(ts, offs):
		at["info " + n] = len(head)
		head += gstr(n) + struct.pack("<I", len(s)) + b"".join(struct.pack("<Q", d) for d in reversed(s))
		at["type " + n] = len(head)
		head += struct.pack("<I", TYPES[tn])
		at["offset " + n] = len(head)
		head += struct.pack("<Q", o)
	head += b"\0" * (-len(head) % align)
	at["data"] = len(head)
	data = bytearray()
	for (n, s, tn, raw), o in zip(ts, offs):
		data += b"\0" * (o - len(data)) + raw
	return bytes(head + data), at, meta, ts


def parse(argv):
	import argparse
	ap = argparse.ArgumentParser()
	ap.add_argument("cmd")
	ap.add_argument("args", nargs="*")
	ap.add_argument("--untied", action="store_true")
	ap.add_argument("--mixed", action="store_true")
	ap.add_argument("--version", type=int, default=3)
	ap.add_argument("--arch", default="llama")
	ap.add_argument("--ctx", type=int, default=256)
	ap.add_argument("--seed", type=int, default=1)
	ap.add_argument("--no-meta", action="append", default=[])
	ap.add_argument("--dequant", action="store_true")
	ap.add_argument("--type", action="append", default=[], help="NAME=TYPE: that tensor in that GGML type")
	a = ap.parse_args(argv)
	a.type = dict(x.split("=", 1) for x in a.type)
	return a


def fail(msg):
	print("# " + msg)
	sys.exit(1)


def cmd_read(a):
	raw, at, meta, ts = build(a)
	g = G.GGUF(a.args[0])
	if g.version != a.version or g.alignment != 64 or g.data_start != at["data"]:
		fail("version %d alignment %d data %d" % (g.version, g.alignment, g.data_start))
	if list(g.metadata) != [k for k, _, _ in meta]:
		fail("keys %s" % list(g.metadata))
	for k, t, v in meta:
		got = g.metadata[k]
		if t in (F32,):
			v = struct.unpack("<f", struct.pack("<f", v))[0]
		if got != v or type(got) is not type(v):
			fail("%s: %r, wrote %r" % (k, got, v))
		want_t = t
		if g.types[k] != want_t:
			fail("%s: type %r, wrote %r" % (k, g.types[k], want_t))
	if [t.name for t in g.tensors] != [n for n, _, _, _ in ts]:
		fail("tensor names")
	for t, (n, s, tn, b) in zip(g.tensors, ts):
		if t.shape != s or t.type_name != tn or g.read(t) != b or t.n_bytes != len(b):
			fail("%s: %s %s, wrote %s %s" % (n, t.shape, t.type_name, s, tn))
	return 0


def st_read(path):
	with open(path, "rb") as f:
		(n,) = struct.unpack("<Q", f.read(8))
		h = json.loads(f.read(n))
		data = f.read()
	h.pop("__metadata__", None)
	return {k: (e["dtype"], e["shape"], data[e["data_offsets"][0]:e["data_offsets"][1]]) for k, e in h.items()}


def bf16_of(f32):
	"""fp32 value -> its bf16 bits, rounded to nearest even (one element, by integer arithmetic)."""
	(u,) = struct.unpack("<I", struct.pack("<f", f32))
	return (u + 0x7FFF + ((u >> 16) & 1)) >> 16


def cmd_weights(a):
	gpath, cfg, st, dtype = a.args
	g = G.GGUF(gpath)
	w = st_read(st)
	text = open(cfg).read()
	import re
	decl = {m.group(1): (json.loads(m.group(2)), m.group(4))
		for m in re.finditer(r'\{ name = "([^"]+)"; shape = (\[[0-9, ]+\]); role = "weight";( dtype = "([a-z0-9_]+)";)? \}', text)}
	if set(decl) != set(w):
		fail("declared %s, file has %s" % (sorted(set(decl) - set(w)), sorted(set(w) - set(decl))))
	stdt = {"fp32": "F32", "fp16": "F16", "bf16": "BF16"}
	for name, (dt, shape, raw) in w.items():
		t = g.by_name[name]
		src = g.read(t)
		decl_shape, decl_dt = decl[name]
		if decl_shape != t.shape:
			fail("%s declared %s, GGUF %s" % (name, decl_shape, t.shape))
		if t.type_name in ("Q4_1", "Q8_0") and not a.dequant:
			block, size = BLOCK[t.type_name]
			want = [t.shape[0], t.shape[1] // block * size]
			if dt != "U8" or shape != want or raw != src or decl_dt != t.type_name.lower():
				fail("%s: %s %s (declared %s), want U8 %s the GGUF's bytes" % (name, dt, shape, decl_dt, want))
			continue
		f32 = struct.unpack("<%df" % t.n_elements, G.dequantize(t.type_name, src, name))
		want_dt = dtype               # floats and dequantised types alike: the model's dtype
		if (decl_dt or dtype) != want_dt or dt != stdt[want_dt] or shape != t.shape:
			fail("%s: %s %s declared %s, want %s" % (name, dt, shape, decl_dt, want_dt))
		if want_dt == "fp32":
			got = struct.unpack("<%df" % t.n_elements, raw)
			if list(got) != list(f32):
				fail("%s: fp32 values differ" % name)
		elif want_dt == "bf16":
			got = struct.unpack("<%dH" % t.n_elements, raw)
			for i, (x, y) in enumerate(zip(got, f32)):
				if x != bf16_of(y):
					fail("%s[%d]: bf16 %04x, want %04x (of %r)" % (name, i, x, bf16_of(y), y))
		else:
			got = struct.unpack("<%de" % t.n_elements, raw)
			if list(got) != [struct.unpack("<e", struct.pack("<e", y))[0] for y in f32]:
				fail("%s: fp16 values differ" % name)
	return 0


# ---- dequantisation: hand-made blocks, and element loops from the block layouts -------------------

def h16(x):
	return struct.pack("<e", x)


def cmd_deq(a):
	close = lambda x, y: all(abs(u - v) <= 1e-6 * max(1.0, abs(v)) for u, v in zip(x, y)) and len(x) == len(y)  # noqa
	deq = lambda tn, raw: list(struct.unpack("<%df" % (len(raw) // BLOCK[tn][1] * BLOCK[tn][0]),  # noqa
						 G.dequantize(tn, raw)))
	# q4_1: d = 0.5, m = -1; byte j = (low j % 16, high 15 - j % 16): element j = 0.5 * j - 1,
	# element j + 16 = 0.5 * (15 - j) - 1
	blk = h16(0.5) + h16(-1.0) + bytes((j | ((15 - j) << 4)) for j in range(16))
	want = [0.5 * j - 1 for j in range(16)] + [0.5 * (15 - j) - 1 for j in range(16)]
	if deq("Q4_1", blk) != want:
		fail("q4_1: %s" % deq("Q4_1", blk))
	# two q4_1 blocks: the second has d = 2, m = 0.25, all nibbles 3 -> 6.25 everywhere
	blk2 = blk + h16(2.0) + h16(0.25) + bytes([0x33] * 16)
	if deq("Q4_1", blk2) != want + [6.25] * 32:
		fail("q4_1, two blocks")
	# q8_0: d = 0.25, q = -128, -127, ..., then 100..: element j = 0.25 * q_j
	qs = [-128, -127, -1, 0, 1, 2, 3, 127] + list(range(100, 124))
	blk = h16(0.25) + struct.pack("<32b", *qs)
	if deq("Q8_0", blk) != [0.25 * q for q in qs]:
		fail("q8_0: %s" % deq("Q8_0", blk))
	# q4_0: d = 2; every byte 0x8F: low 15 -> 2 * (15 - 8) = 14, high 8 -> 0
	if deq("Q4_0", h16(2.0) + bytes([0x8F] * 16)) != [14.0] * 16 + [0.0] * 16:
		fail("q4_0")
	# q5_0: d = 1, qh = 0xFFFF0000 (elements 16..31 get the fifth bit), nibbles 0: -16 then 0
	if deq("Q5_0", h16(1.0) + struct.pack("<I", 0xFFFF0000) + bytes(16)) != [-16.0] * 16 + [0.0] * 16:
		fail("q5_0")
	# q5_1: d = 0.5, m = 1, qh = 1 (element 0), nibbles 1 (low) / 2 (high): 0.5 * 17 + 1, 0.5 + 1, 2
	if deq("Q5_1", h16(0.5) + h16(1.0) + struct.pack("<I", 1) + bytes([0x21] * 16)) != [9.5] + [1.5] * 15 + [2.0] * 16:
		fail("q5_1")
	# fp16 and bf16
	if deq("F16", h16(1.5) + h16(-2.0)) != [1.5, -2.0] or deq("BF16", b"\xc0\x3f\x00\xc0") != [1.5, -2.0]:
		fail("f16/bf16")
	# random blocks: vectorised against a loop over the elements
	rng = random.Random(7)
	for tn, ref in (("Q4_0", ref_q4_0), ("Q4_1", ref_q4_1), ("Q5_0", ref_q5_0), ("Q5_1", ref_q5_1),
			("Q8_0", ref_q8_0), ("Q4_K", lambda b: ref_qk(b, False)), ("Q5_K", lambda b: ref_qk(b, True)),
			("Q6_K", ref_q6_k)):
		raw = tensor_bytes(rng, [3 * BLOCK[tn][0]], tn)
		size = BLOCK[tn][1]
		want = [v for i in range(3) for v in ref(raw[i * size:(i + 1) * size])]
		if not close(deq(tn, raw), want):
			fail("%s: vectorised and element loop differ" % tn)
	return 0


def half(b, at):
	return struct.unpack("<e", b[at:at + 2])[0]


def ref_q4_0(b):
	return [half(b, 0) * (((b[2 + j % 16] >> (4 * (j // 16))) & 15) - 8) for j in range(32)]


def ref_q4_1(b):
	return [half(b, 0) * ((b[4 + j % 16] >> (4 * (j // 16))) & 15) + half(b, 2) for j in range(32)]


def ref_q5_0(b):
	qh = struct.unpack("<I", b[2:6])[0]
	return [half(b, 0) * ((((b[6 + j % 16] >> (4 * (j // 16))) & 15) | (((qh >> j) & 1) << 4)) - 16) for j in range(32)]


def ref_q5_1(b):
	qh = struct.unpack("<I", b[4:8])[0]
	return [half(b, 0) * (((b[8 + j % 16] >> (4 * (j // 16))) & 15) | (((qh >> j) & 1) << 4)) + half(b, 2)
		for j in range(32)]


def ref_q8_0(b):
	return [half(b, 0) * v for v in struct.unpack("<32b", b[2:34])]


def scale_min(j, s):
	if j < 4:
		return s[j] & 63, s[j + 4] & 63
	return (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4), (s[j + 4] >> 4) | ((s[j] >> 6) << 4)


def ref_qk(b, five):
	d, dmin, s = half(b, 0), half(b, 2), b[4:16]
	qh = b[16:48] if five else None
	qs = b[48:176] if five else b[16:144]
	y = []
	for c in range(4):          # 64 elements: sub-blocks 2c (low nibbles) and 2c + 1 (high)
		for hi in range(2):
			sc, m = scale_min(2 * c + hi, s)
			for l in range(32):
				q = (qs[32 * c + l] >> (4 * hi)) & 15
				if five and qh[l] & (1 << (2 * c + hi)):
					q += 16
				y.append(d * sc * q - dmin * m)
	return y


def ref_q6_k(b):
	ql, qh, sc, d = b[0:128], b[128:192], struct.unpack("<16b", b[192:208]), half(b, 208)
	y = [0.0] * 256
	for n in range(2):
		for l in range(32):
			L0, L1, H = ql[64 * n + l], ql[64 * n + l + 32], qh[32 * n + l]
			q = [(L0 & 15) | ((H & 3) << 4), (L1 & 15) | (((H >> 2) & 3) << 4),
			     (L0 >> 4) | (((H >> 4) & 3) << 4), (L1 >> 4) | (((H >> 6) & 3) << 4)]
			for k in range(4):
				y[128 * n + l + 32 * k] = d * sc[8 * n + l // 16 + 2 * k] * (q[k] - 32)
	return y


# ---- broken files --------------------------------------------------------------------------------

def cmd_bad(a):
	src, out, kind = a.args
	raw, at, meta, ts = build(a)
	if open(src, "rb").read() != raw:
		fail("%s is not what make writes with these options" % src)
	b = bytearray(raw)
	first = ts[0][0]
	where = None
	if kind == "magic":
		b[0:4], where = b"GGML", 0
	elif kind == "version1":
		b[4:8], where = struct.pack("<I", 1), 4
	elif kind == "bigendian":
		b[4:8], where = struct.pack(">I", 3), 4
	elif kind == "valuetype":
		k = "test.u8"
		where = at["key " + k] + 8 + len(k)
		b[where:where + 4] = struct.pack("<I", 13)
	elif kind == "arraytype":
		k = "test.array_i32"
		where = at["value " + k]
		b[where:where + 4] = struct.pack("<I", 99)
	elif kind == "bool":
		where = at["value test.bool"]
		b[where] = 2
	elif kind == "string":     # a string length far past the end of the file
		where = at["value general.name"]
		b[where:where + 8] = struct.pack("<Q", 1 << 40)
	elif kind == "dupkey":     # test.i8 renamed test.u8 (same length)
		where = at["key test.i8"]
		b[where + 8:where + 8 + 7] = b"test.u8"
	elif kind == "duptensor":  # blk.0.attn_k renamed blk.0.attn_q
		where = at["info blk.0.attn_k.weight"]
		b[where + 8:where + 8 + 19] = b"blk.0.attn_q.weight"
	elif kind == "ggmltype":
		where = at["type " + first]
		b[where:where + 4] = struct.pack("<I", 4)        # 4 and 5 (Q4_2, Q4_3) were removed
	elif kind == "dims5":
		where = at["info " + first] + 8 + len(first)
		b[where:where + 4] = struct.pack("<I", 5)
	elif kind == "dim0":
		where = at["info " + first] + 8 + len(first)
		b[where + 4:where + 12] = struct.pack("<Q", 0)
		where += 4
	elif kind == "blockdim":   # token_embd's first dimension 256 -> 250: not a multiple of 32
		where = at["info " + first] + 8 + len(first)
		b[where + 4:where + 12] = struct.pack("<Q", 250)
		where += 4
	elif kind == "misaligned":
		where = at["offset blk.0.attn_q.weight"]
		b[where:where + 8] = struct.pack("<Q", struct.unpack("<Q", b[where:where + 8])[0] + 8)
	elif kind == "overlap":    # the second tensor's data offset moved onto the first's
		where = at["info blk.0.attn_q.weight"]
		o = at["offset blk.0.attn_q.weight"]
		b[o:o + 8] = struct.pack("<Q", 64)
	elif kind == "alignment":
		where = at["key general.alignment"]
		v = at["value general.alignment"]
		b[v:v + 4] = struct.pack("<I", 48)
	elif kind.startswith("cut:"):
		n = int(kind[4:])
		b = b[:n]
		where = -1
	else:
		fail("unknown kind %s" % kind)
	with open(out, "wb") as f:
		f.write(b)
	print(where)
	return 0


# ---- the model file's shapes, by the contract's rules ----------------------------------------------

def cmd_shapes(a):
	import re
	text = open(a.args[0]).read()
	top_dt = re.search(r'^dtype = "([a-z0-9]+)";', text, re.M).group(1)
	if not re.search(r'^token = "token";', text, re.M):
		fail("no token = \"token\"")
	T = {}
	for m in re.finditer(r'\{ name = "([^"]+)"; shape = (\[[0-9, ]+\]); role = "(state|weight)";( dtype = "([a-z0-9_]+)";)? \}', text):
		T[m.group(1)] = (json.loads(m.group(2)), m.group(5) or top_dt, m.group(3))
	outputs = re.findall(r'\{ name = "([^"]+)"; role = "output"; \}', text)
	assigned, advanced = set(), set()
	ops = re.findall(r'^  \{ name = "([^"]+)"; op = "([a-z_]+)"; in = \[([^]]*)\];( out = "([^"]*)";)?(.*)\}', text, re.M)
	if not ops:
		fail("no ops")

	def attr(rest, k, kind=int):
		m = re.search(r"\b%s = ([^;]+);" % k, rest)
		return None if m is None else kind(m.group(1).strip('"'))

	def need(c, msg):
		if not c:
			fail("op %s: %s" % (name, msg))

	for name, kind, ins, _, out, rest in ops:
		ins = [x.strip().strip('"') for x in ins.split(",")]
		for x in ins:
			need(x in T, "reads %s, which nothing made before" % x)
		S = [T[x][0] for x in ins]
		D = [T[x][1] for x in ins]
		if kind == "embedding":
			need(D[0] == "int32" and D[1] in (top_dt, "q4_1", "q8_0"), "ids int32, a table of the model's dtype or quantized")
			res = (S[0] + [S[1][1]], top_dt)
		elif kind == "rmsnorm":
			need(S[1] == [S[0][-1]] and D[0] == D[1] == top_dt, "gamma [N] of the input's dtype")
			res = (S[0], D[0])
		elif kind == "matmul":
			need(attr(rest, "transpose_b", str) == "true", "transpose_b")
			need(S[0][-1] == S[1][1] and D[0] == top_dt, "a [M, K] by b [N, K]: %s %s" % (S[0], S[1]))
			need(D[1] in (top_dt, "q4_1", "q8_0"), "b's dtype %s: the model's or quantized" % D[1])
			need(D[1] not in ("q4_1", "q8_0") or S[1][1] % 32 == 0, "quantized K % 32")
			res = (S[0][:-1] + [S[1][0]], D[0])
		elif kind == "rope":
			hd, rd = attr(rest, "head_dim"), attr(rest, "rotary_dim")
			need(S[1] == [1] and D[1] == "int32" and S[0][-1] % hd == 0 and rd % 2 == 0 and rd <= hd, "rope")
			need(attr(rest, "style", str) == "interleaved", "style interleaved")
			res = (S[0], D[0])
		elif kind == "kv_append":
			need(T[ins[0]][2] == "state" and S[0][1] == S[1][-1] and D[0] == D[1] and S[2] == [1] and D[2] == "int32",
			     "cache state [L, D], x [T, D], pos int32 [1]: %s" % S)
			res = (S[0], D[0])
		elif kind == "decode_attention":
			h, kv = attr(rest, "heads"), attr(rest, "kv_heads")
			need(h % kv == 0 and S[0][-1] % h == 0, "heads")
			dh = S[0][-1] // h
			need(S[1] == S[2] and S[1][1] == kv * dh and S[3] == [1] and D[0] == D[1] == D[2], "caches [L, kv*Dh]")
			res = (S[0], D[0])
		elif kind in ("add", "swiglu"):
			need(S[0] == S[1] and D[0] == D[1], "the same shapes")
			res = (S[0], D[0])
		elif kind == "argmax":
			res = (S[0][:-1], "int32")
		elif kind == "assign":
			need(T[ins[0]][2] == "state" and S[0] == S[1] and D[0] == D[1] and out == "", "assign(state, same)")
			assigned.add(ins[0])
			res = None
		elif kind == "advance":
			need(T[ins[0]][2] == "state" and D[0] == "int32" and out == "", "advance(int32 state)")
			advanced.add(ins[0])
			res = None
		else:
			fail("op %s: kind %s not in the decoder contract" % (name, kind))
		if res is not None:
			need(out not in T, "writes %s twice" % out)
			T[out] = (res[0], res[1], "activation")
	need(assigned == {"token"} and advanced == {"pos"}, "assign(token), advance(pos)")
	for o in outputs:
		if o not in T:
			fail("output %s never made" % o)
	print("# logits %s %s, next_token %s %s" % (T["logits"][0], T["logits"][1], T["next_token"][0], T["next_token"][1]))
	return 0


def cmd_generate(a):
	import numpy as np
	path, ids, n, style = a.args[0], [int(x) for x in open(a.args[1]).read().split()], int(a.args[2]), a.args[3]
	g = G.GGUF(path)
	h = G.hparams(g)
	W = {t.name: np.frombuffer(G.dequantize(t.type_name, g.read(t), t.name), "<f4").reshape(t.shape).astype(np.float64)
	     for t in g.tensors}
	H, KV, Dh, R = h["heads"], h["kv_heads"], h["head_dim"], h["rope_dim"]
	inv = h["rope_base"] ** (-np.arange(0, R, 2) / R)

	def rms(x, w):
		return x / np.sqrt((x * x).mean() + h["eps"]) * w

	def rope(x, p):
		c, s = np.cos(p * inv), np.sin(p * inv)
		y = x.copy()
		if style == "interleaved":
			a0, a1 = x[:, 0:R:2], x[:, 1:R:2]
			y[:, 0:R:2], y[:, 1:R:2] = a0 * c - a1 * s, a0 * s + a1 * c
		else:
			a0, a1 = x[:, :R // 2], x[:, R // 2:R]
			y[:, :R // 2], y[:, R // 2:R] = a0 * c - a1 * s, a0 * s + a1 * c
		return y

	K = [[] for _ in range(h["layers"])]
	V = [[] for _ in range(h["layers"])]
	tok, out = ids[0], []
	head = W.get("output.weight", W["token_embd.weight"])
	for p in range(len(ids) + n - 1):
		x = W["token_embd.weight"][tok]
		for i in range(h["layers"]):
			b = "blk.%d." % i
			nx = rms(x, W[b + "attn_norm.weight"])
			q = rope((W[b + "attn_q.weight"] @ nx).reshape(H, Dh), p)
			K[i].append(rope((W[b + "attn_k.weight"] @ nx).reshape(KV, Dh), p))
			V[i].append((W[b + "attn_v.weight"] @ nx).reshape(KV, Dh))
			Kc, Vc = np.stack(K[i]), np.stack(V[i])
			o = np.empty((H, Dh))
			for j in range(H):
				s = Kc[:, j // (H // KV)] @ q[j] / np.sqrt(Dh)
				e = np.exp(s - s.max())
				o[j] = (e / e.sum()) @ Vc[:, j // (H // KV)]
			x = x + W[b + "attn_output.weight"] @ o.reshape(-1)
			nx = rms(x, W[b + "ffn_norm.weight"])
			gt = W[b + "ffn_gate.weight"] @ nx
			x = x + W[b + "ffn_down.weight"] @ (gt / (1 + np.exp(-gt)) * (W[b + "ffn_up.weight"] @ nx))
		nxt = int(np.argmax(head @ rms(x, W["output_norm.weight"])))
		if p + 1 < len(ids):
			tok = ids[p + 1]
		else:
			tok = nxt
			out.append(nxt)
	print(" ".join(str(t) for t in out))
	return 0


def main(argv):
	a = parse(argv)
	if a.cmd == "make":
		raw, at, _, _ = build(a)
		with open(a.args[0], "wb") as f:
			f.write(raw)
		if len(a.args) > 1:      # the offsets, for the tests that cut the file at a known place
			with open(a.args[1], "w") as f:
				json.dump(at, f)
		return 0
	return {"read": cmd_read, "weights": cmd_weights, "deq": cmd_deq, "bad": cmd_bad, "shapes": cmd_shapes,
		"generate": cmd_generate}[a.cmd](a)


if __name__ == "__main__":
	sys.exit(main(sys.argv[1:]))
