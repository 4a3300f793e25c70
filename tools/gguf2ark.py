#!/usr/bin/env python3
"""gguf2ark.py: a GGUF file (v2 or v3) -> an arkgen decoder model file (.cfg), its weights
(.safetensors), the tokenizer's vocabulary (JSON) and its end-of-sequence id; also a GGUF reader.

usage: gguf2ark.py info FILE.gguf [--keys]
       gguf2ark.py convert FILE.gguf -o OUT.cfg [-w OUT.safetensors] [--vocab OUT.json]
                   [--max-len N] [--dtype bf16|fp16|fp32] [--dequant none|bf16] [--name NAME]
       gguf2ark.py shape PRESET -o OUT.cfg [--max-len N] [--dtype ...] [--quant none|q4_1] [--name NAME]

info prints the header, the metadata (every key with --keys; arrays shortened) and a summary of the
tensors: how many of each GGML type, with their bytes.

convert reads a Llama-architecture GGUF (general.architecture "llama") and writes one decode step of
the model as an arkgen model file, every shape and hyper-parameter from the GGUF's metadata
(llama.block_count, embedding_length, feed_forward_length, attention.head_count, head_count_kv,
rope.freq_base, rope.dimension_count, attention.layer_norm_rms_epsilon, context_length):

  state   token int32 [1] (top-level `token = "token"`: the generated binary's --generate feeds it),
          pos int32 [1], and per layer blk.N.k_cache, blk.N.v_cache [max_len, n_kv_heads * head_dim]
  step    embedding(token, token_embd.weight); per layer: rmsnorm -> matmul q, k, v (transpose_b) ->
          rope q, rope k (style "interleaved": below) -> kv_append k, v -> decode_attention -> matmul
          o -> add -> rmsnorm -> matmul gate, up -> swiglu -> matmul down -> add; final rmsnorm ->
          matmul output.weight (token_embd.weight when the GGUF has no output.weight: tied) -> logits
          [1, vocab] (an output) -> argmax -> next_token (an output) -> assign(token, next_token);
          advance(pos)

Weights keep the GGUF's tensor names. Q4_1 and Q8_0 tensors are kept as they are (arkgen dtypes
"q4_1", "q8_0": safetensors U8 [rows, row_bytes], the GGUF's blocks byte for byte); F32, F16 and BF16
tensors are converted to the model's dtype (rounded to nearest even); every other GGML type is
dequantised into the model's dtype too (bf16 by default; an op reads one dtype, so an fp32 model gets
fp32 weights); --dequant bf16 dequantises Q4_1 and Q8_0 as well (into a bf16 model). --vocab writes {"tokens": [...], "eos": ID, "bos": ID, "model": ...}.

RoPE style: llama.cpp's converter permutes the rows of Llama's Q and K projections (each head's
rows reordered from Hugging Face's two halves to interleaved pairs) and llama.cpp runs Llama with its
"normal" RoPE, which rotates consecutive pairs (2i, 2i + 1): so a GGUF's Llama weights need rope
style "interleaved", whatever checkpoint they came from.

shape writes the same graph for a known shape without a GGUF (random weights in the binary):
llama3.2-1b (16 layers, dim 2048, 32 / 8 heads of 64, FFN 8192, vocab 128256, tied) and
smollm2-135m; --quant q4_1 stores the projections as q4_1 and the embedding as q8_0.

Standard library only (numpy, when installed, makes dequantisation fast). Exit status: 0 ok, 1 bad
or unsupported file, 2 usage error. Errors about the file name it and the byte offset: FILE:OFFSET.
"""

import argparse
import json
import os
import struct
import sys

MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32
MAX_DIMS = 4

# ---- GGUF metadata value types -------------------------------------------------------------------
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)
SCALAR = {UINT8: "<B", INT8: "<b", UINT16: "<H", INT16: "<h", UINT32: "<I", INT32: "<i", FLOAT32: "<f",
	  BOOL: "<B", UINT64: "<Q", INT64: "<q", FLOAT64: "<d"}
VALUE_NAME = {UINT8: "uint8", INT8: "int8", UINT16: "uint16", INT16: "int16", UINT32: "uint32", INT32: "int32",
	      FLOAT32: "float32", BOOL: "bool", STRING: "string", ARRAY: "array", UINT64: "uint64", INT64: "int64",
	      FLOAT64: "float64"}

# ---- GGML tensor types: id -> (name, elements per block, bytes per block) ------------------------
GGML_TYPES = {
	0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22),
	7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36), 10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110),
	12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292),
	16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74), 18: ("IQ3_XXS", 256, 98), 19: ("IQ1_S", 256, 50),
	20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", 256, 110), 22: ("IQ2_S", 256, 82), 23: ("IQ4_XS", 256, 136),
	24: ("I8", 1, 1), 25: ("I16", 1, 2), 26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8),
	29: ("IQ1_M", 256, 56), 30: ("BF16", 1, 2), 34: ("TQ1_0", 256, 54), 35: ("TQ2_0", 256, 66),
}
TYPE_ID = {v[0]: k for k, v in GGML_TYPES.items()}
KEPT = {"Q4_1": "q4_1", "Q8_0": "q8_0"}         # quantized GGML types that arkgen reads as they are
FLOATS = ("F32", "F16", "BF16")                  # converted to the model's dtype


class GGUFError(Exception):
	"""A malformed, truncated or unsupported GGUF file, or a model it cannot convert."""


class ConvertError(Exception):
	"""The model cannot be converted (its message names the file)."""


class Tensor:
	"""One tensor info: name, dims (GGUF order: dims[0] varies fastest), GGML type, data offset."""

	def __init__(self, name, dims, type_id, offset, info_at):
		self.name, self.dims, self.type_id, self.offset, self.info_at = name, dims, type_id, offset, info_at

	@property
	def type_name(self):
		return GGML_TYPES[self.type_id][0]

	@property
	def shape(self):
		"""Row-major shape, as PyTorch and safetensors give it: the GGUF dims reversed."""
		return list(reversed(self.dims))

	@property
	def n_elements(self):
		n = 1
		for d in self.dims:
			n *= d
		return n

	@property
	def n_bytes(self):
		_, block, size = GGML_TYPES[self.type_id]
		return self.n_elements // block * size


class GGUF:
	"""A GGUF file: header, metadata {key: value} (with each value's type in .types), tensor infos in
	file order, alignment and the data's start. Tensor bytes are read on demand (read())."""

	def __init__(self, path):
		self.path = path
		self.f = open(path, "rb")
		self.size = os.fstat(self.f.fileno()).st_size
		self.pos = 0
		self.metadata, self.types, self.key_at, self.tensors = {}, {}, {}, []
		self._parse()

	# -- low-level reads, each checked against the end of the file --
	def error(self, at, msg):
		return GGUFError("%s:%d: %s" % (self.path, at, msg))

	def _take(self, n, what):
		if n > self.size - self.pos:
			raise self.error(self.pos, "truncated: %s needs %d bytes, the file ends %d bytes further (size %d)" %
					 (what, n, self.size - self.pos, self.size))
		b = self.f.read(n)
		self.pos += n
		return b

	def _u32(self, what):
		return struct.unpack("<I", self._take(4, what))[0]

	def _u64(self, what):
		return struct.unpack("<Q", self._take(8, what))[0]

	def _peek_u32(self, at):
		here = self.f.tell()
		self.f.seek(at)
		v = struct.unpack("<I", self.f.read(4))[0]
		self.f.seek(here)
		return v

	def _string(self, what):
		at = self.pos
		n = self._u64(what + " (length)")
		if n > self.size - self.pos:
			raise self.error(at, "truncated: %s has length %d, more than the %d bytes left in the file" %
					 (what, n, self.size - self.pos))
		raw = self._take(n, what)
		try:
			return raw.decode("utf-8")
		except UnicodeDecodeError:
			return raw.decode("utf-8", "replace")

	def _value(self, t, what, at):
		if t in SCALAR:
			fmt = SCALAR[t]
			v = struct.unpack(fmt, self._take(struct.calcsize(fmt), what))[0]
			if t == BOOL:
				if v > 1:
					raise self.error(self.pos - 1, "%s: bool value %d (0 or 1 expected)" % (what, v))
				v = bool(v)
			return v
		if t == STRING:
			return self._string(what)
		if t == ARRAY:
			et_at = self.pos
			et = self._u32(what + " (array type)")
			n_at = self.pos
			n = self._u64(what + " (array length)")
			if et not in VALUE_NAME:
				raise self.error(et_at, "%s: unknown array element type %d" % (what, et))
			if et == ARRAY:
				raise self.error(et_at, "%s: an array of arrays (not supported)" % what)
			least = struct.calcsize(SCALAR[et]) if et in SCALAR else 8
			if n * least > self.size - self.pos:
				raise self.error(n_at, "truncated: %s: an array of %d %s needs at least %d bytes, %d are left" %
						 (what, n, VALUE_NAME[et], n * least, self.size - self.pos))
			if et in SCALAR and et != BOOL:
				fmt = SCALAR[et]
				raw = self._take(n * struct.calcsize(fmt), what)
				return list(struct.unpack("<%d%s" % (n, fmt[1]), raw))
			return [self._value(et, "%s[%d]" % (what, i), at) for i in range(n)]
		raise self.error(at, "%s: unknown value type %d" % (what, t))

	# -- the file --
	def _parse(self):
		magic = self._take(4, "the magic")
		if magic != MAGIC:
			raise self.error(0, "not a GGUF file (magic %r, expected %r)" % (magic, MAGIC))
		v_at = self.pos
		self.version = self._u32("the version")
		if self.version not in (2, 3):
			if self.version & 0xFFFF == 0 and (self.version >> 24) in (2, 3):
				raise self.error(v_at, "a big-endian GGUF file (version bytes %08x): only little-endian files "
						 "are read" % self.version)
			raise self.error(v_at, "GGUF version %d: versions 2 and 3 are read" % self.version)
		n_tensors = self._u64("the tensor count")
		n_kv = self._u64("the metadata count")
		least = 13 * n_kv + 32 * n_tensors  # a key and a one-byte value; a name, one dimension, type, offset
		if least > self.size - self.pos:
			raise self.error(8, "truncated: %d metadata keys and %d tensors need at least %d bytes after the header, "
					 "the file has %d (or the counts are wrong)" % (n_kv, n_tensors, least, self.size - self.pos))
		for i in range(n_kv):
			at = self.pos
			key = self._string("metadata key %d" % i)
			if not key:
				raise self.error(at, "metadata key %d is empty" % i)
			if key in self.metadata:
				raise self.error(at, "metadata key '%s' appears twice" % key)
			t_at = self.pos
			t = self._u32("the type of '%s'" % key)
			if t not in VALUE_NAME:
				raise self.error(t_at, "metadata '%s' has unknown value type %d" % (key, t))
			v_at = self.pos
			self.metadata[key] = self._value(t, "metadata '%s'" % key, t_at)
			# an array's type: (ARRAY, element type), the element type read back from the file
			self.types[key] = t if t != ARRAY else (ARRAY, self._peek_u32(v_at))
			self.key_at[key] = at
		self.alignment = DEFAULT_ALIGNMENT
		if "general.alignment" in self.metadata:
			a = self.metadata["general.alignment"]
			if self.types["general.alignment"] != UINT32 or a == 0 or a & (a - 1):
				raise self.error(self.key_at["general.alignment"], "general.alignment must be a uint32 power of "
						 "two, not %r" % (a,))
			self.alignment = a
		names = set()
		for i in range(n_tensors):
			at = self.pos
			name = self._string("the name of tensor %d" % i)
			if name in names:
				raise self.error(at, "tensor '%s' appears twice" % name)
			names.add(name)
			nd_at = self.pos
			nd = self._u32("the dimension count of '%s'" % name)
			if not 1 <= nd <= MAX_DIMS:
				raise self.error(nd_at, "tensor '%s' has %d dimensions (1 to %d)" % (name, nd, MAX_DIMS))
			dims = [self._u64("dimension %d of '%s'" % (d, name)) for d in range(nd)]
			if min(dims) < 1:
				raise self.error(nd_at + 4, "tensor '%s' has a dimension of 0: %s" % (name, dims))
			t_at = self.pos
			t = self._u32("the type of '%s'" % name)
			if t not in GGML_TYPES:
				raise self.error(t_at, "tensor '%s' has unknown GGML type %d" % (name, t))
			off_at = self.pos
			off = self._u64("the data offset of '%s'" % name)
			block = GGML_TYPES[t][1]
			if dims[0] % block:
				raise self.error(nd_at + 4, "tensor '%s' (%s): its first dimension %d is not a multiple of the "
						 "block size %d" % (name, GGML_TYPES[t][0], dims[0], block))
			if off % self.alignment:
				raise self.error(off_at, "tensor '%s': data offset %d is not a multiple of the alignment %d" %
						 (name, off, self.alignment))
			self.tensors.append(Tensor(name, dims, t, off, at))
		self.data_start = self.pos + (-self.pos % self.alignment)
		ends = []
		for t in self.tensors:
			end = self.data_start + t.offset + t.n_bytes
			if end > self.size:
				raise self.error(t.info_at, "truncated: the data of tensor '%s' (%s %s, %d bytes at %d) ends at %d, "
						 "past the end of the file (size %d)" % (t.name, t.type_name, t.shape, t.n_bytes,
											 self.data_start + t.offset, end, self.size))
			ends.append((t.offset, t.offset + t.n_bytes, t))
		ends.sort(key=lambda e: e[0])
		for (b0, e0, t0), (b1, e1, t1) in zip(ends, ends[1:]):
			if b1 < e0:
				raise self.error(t1.info_at, "the data of tensors '%s' and '%s' overlap" % (t0.name, t1.name))
		self.by_name = {t.name: t for t in self.tensors}

	def read(self, t):
		"""The bytes of tensor t (a Tensor or a name)."""
		if isinstance(t, str):
			t = self.by_name[t]
		self.f.seek(self.data_start + t.offset)
		return self.f.read(t.n_bytes)

	def get(self, key, default=None, need=None):
		"""A metadata value; with need (a type description) a missing key is an error."""
		if key in self.metadata:
			return self.metadata[key]
		if need:
			raise GGUFError("%s: no metadata '%s' (%s)" % (self.path, key, need))
		return default

	def close(self):
		self.f.close()


# ---- half-precision and bf16 conversions (standard library; numpy when it is there) --------------

def _np():
	try:
		import numpy
		return numpy
	except ImportError:
		return None


def f16_to_f32(raw):
	np = _np()
	if np is not None:
		return np.frombuffer(raw, dtype="<f2").astype("<f4").tobytes()
	n = len(raw) // 2
	return struct.pack("<%df" % n, *struct.unpack("<%de" % n, raw))


def bf16_to_f32(raw):
	out = bytearray(2 * len(raw))
	out[2::4] = raw[0::2]
	out[3::4] = raw[1::2]
	return bytes(out)


def f32_to_bf16(raw, name):
	"""fp32 bytes -> bf16 bytes, rounded to nearest even; an inf or NaN is an error."""
	np = _np()
	if np is not None:
		u = np.frombuffer(raw, dtype="<u4")
		if np.any((u & 0x7F800000) == 0x7F800000):
			raise ConvertError("tensor '%s' holds an inf or NaN" % name)
		r = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
		return r.astype("<u2").tobytes()
	n = len(raw) // 4
	out = bytearray(2 * n)
	for i, (u,) in enumerate(struct.iter_unpack("<I", raw)):
		if (u & 0x7F800000) == 0x7F800000:
			raise ConvertError("tensor '%s' holds an inf or NaN" % name)
		struct.pack_into("<H", out, 2 * i, (u + 0x7FFF + ((u >> 16) & 1)) >> 16)
	return bytes(out)


def f32_to_f16(raw, name):
	n = len(raw) // 4
	v = struct.unpack("<%df" % n, raw)
	try:
		return struct.pack("<%de" % n, *v)
	except (OverflowError, struct.error):
		raise ConvertError("tensor '%s' holds a value outside fp16's range (65504): convert to bf16 or fp32" % name)


# ---- dequantisation: GGML block layouts -> fp32 ---------------------------------------------------
# Q4_0: fp16 d, 16 bytes of 4-bit q: x = d * (q - 8)        Q4_1: fp16 d, fp16 m, 16 bytes: x = d * q + m
# Q5_0: fp16 d, 4 bytes of high bits, 16 bytes: x = d * (q - 16)   Q5_1: fp16 d, m, 4 + 16: x = d * q + m
# (in the 4/5-bit forms byte j holds element j in its low nibble and element j + 16 in its high one;
# bit j of the high-bit word is element j's fifth bit)          Q8_0: fp16 d, 32 int8: x = d * q
# Q6_K (256 per block): 128 bytes of low 4 bits, 64 of high 2 bits, 16 int8 scales, fp16 d.
# Q4_K / Q5_K (256): fp16 d, fp16 dmin, 12 bytes of 6-bit scales and mins for 8 sub-blocks of 32,
# (Q5_K: 32 bytes of fifth bits), 128 bytes of nibbles: x = d * sc * q - dmin * m.

def _blocks(np, raw, size):
	return np.frombuffer(raw, dtype=np.uint8).reshape(-1, size)


def _half(np, b, at):
	return b[:, at:at + 2].copy().view("<f2").astype(np.float32)  # [blocks, 1]


def _nibbles(np, qs):
	"""[blocks, 16] bytes -> [blocks, 32] values: low nibbles (elements 0..15), then high ones."""
	return np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float32)


def _fifth_bits(np, qh):
	"""[blocks, 4] bytes (a little-endian 32-bit word) -> [blocks, 32] bits, element j = bit j."""
	w = qh.copy().view("<u4")
	return ((w >> np.arange(32, dtype=np.uint32)) & 1).astype(np.float32)


def _k_scales(np, s):
	"""[blocks, 12] bytes -> (scales, mins) [blocks, 8] of the 6-bit packing of Q4_K and Q5_K."""
	s = s.astype(np.uint32)
	sc = np.empty((s.shape[0], 8), np.float32)
	mn = np.empty((s.shape[0], 8), np.float32)
	for j in range(4):
		sc[:, j] = s[:, j] & 63
		mn[:, j] = s[:, j + 4] & 63
	for j in range(4, 8):
		sc[:, j] = (s[:, j + 4] & 0x0F) | ((s[:, j - 4] >> 6) << 4)
		mn[:, j] = (s[:, j + 4] >> 4) | ((s[:, j] >> 6) << 4)
	return sc, mn


def _deq_q4_0(np, raw):
	b = _blocks(np, raw, 18)
	return _half(np, b, 0) * (_nibbles(np, b[:, 2:18]) - 8)


def _deq_q4_1(np, raw):
	b = _blocks(np, raw, 20)
	return _half(np, b, 0) * _nibbles(np, b[:, 4:20]) + _half(np, b, 2)


def _deq_q5_0(np, raw):
	b = _blocks(np, raw, 22)
	q = _nibbles(np, b[:, 6:22]) + 16 * _fifth_bits(np, b[:, 2:6])
	return _half(np, b, 0) * (q - 16)


def _deq_q5_1(np, raw):
	b = _blocks(np, raw, 24)
	q = _nibbles(np, b[:, 8:24]) + 16 * _fifth_bits(np, b[:, 4:8])
	return _half(np, b, 0) * q + _half(np, b, 2)


def _deq_q8_0(np, raw):
	b = _blocks(np, raw, 34)
	return _half(np, b, 0) * b[:, 2:34].copy().view(np.int8).astype(np.float32)


def _deq_q4_k(np, raw, five=False):
	size = 176 if five else 144
	b = _blocks(np, raw, size)
	d, dmin = _half(np, b, 0), _half(np, b, 2)
	sc, mn = _k_scales(np, b[:, 4:16])
	qh = b[:, 16:48] if five else None
	qs = b[:, 48:176] if five else b[:, 16:144]
	out = np.empty((b.shape[0], 256), np.float32)
	for c in range(4):                      # 64 elements per chunk: 32 low nibbles, 32 high
		byte = qs[:, 32 * c:32 * c + 32]
		for h in range(2):
			q = ((byte >> (4 * h)) & 0x0F).astype(np.float32)
			j = 2 * c + h
			if five:
				q += 16 * ((qh >> j) & 1).astype(np.float32)
			out[:, 64 * c + 32 * h:64 * c + 32 * h + 32] = d * sc[:, j:j + 1] * q - dmin * mn[:, j:j + 1]
	return out


def _deq_q6_k(np, raw):
	b = _blocks(np, raw, 210)
	ql, qh = b[:, 0:128].astype(np.int32), b[:, 128:192].astype(np.int32)
	sc = b[:, 192:208].copy().view(np.int8).astype(np.float32)
	d = _half(np, b, 208)
	out = np.empty((b.shape[0], 256), np.float32)
	for n in range(2):                      # two halves of 128
		L, H = ql[:, 64 * n:64 * n + 64], qh[:, 32 * n:32 * n + 32]
		q = [(L[:, 0:32] & 0x0F) | ((H & 3) << 4), (L[:, 32:64] & 0x0F) | (((H >> 2) & 3) << 4),
		     (L[:, 0:32] >> 4) | (((H >> 4) & 3) << 4), (L[:, 32:64] >> 4) | (((H >> 6) & 3) << 4)]
		for k in range(4):
			for half in range(2):       # 16 elements per scale
				lo = 32 * k + 16 * half
				s = sc[:, 8 * n + 2 * k + half:8 * n + 2 * k + half + 1]
				out[:, 128 * n + lo:128 * n + lo + 16] = d * s * (q[k][:, 16 * half:16 * half + 16] - 32)
	return out


DEQUANT = {"Q4_0": _deq_q4_0, "Q4_1": _deq_q4_1, "Q5_0": _deq_q5_0, "Q5_1": _deq_q5_1, "Q8_0": _deq_q8_0,
	   "Q4_K": _deq_q4_k, "Q5_K": lambda np, raw: _deq_q4_k(np, raw, True), "Q6_K": _deq_q6_k}


def dequantize(type_name, raw, name="tensor"):
	"""Bytes of a GGML type -> fp32 bytes (little-endian), in element order."""
	if type_name == "F32":
		return raw
	if type_name == "F16":
		return f16_to_f32(raw)
	if type_name == "BF16":
		return bf16_to_f32(raw)
	if type_name not in DEQUANT:
		raise ConvertError("tensor '%s' has GGML type %s, which this converter cannot dequantise (it reads %s)" %
				   (name, type_name, ", ".join(list(FLOATS) + sorted(DEQUANT))))
	np = _np()
	if np is None:
		raise ConvertError("dequantising tensor '%s' (%s) needs numpy (pip install numpy)" % (name, type_name))
	return DEQUANT[type_name](np, raw).astype("<f4").tobytes()


# ---- safetensors: the writer of tools/hf2ark.py ---------------------------------------------------

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf2ark import write_safetensors  # noqa: E402


# ---- the Llama hyper-parameters ------------------------------------------------------------------

PRESETS = {
	# Llama-3.2-1B's shape (its rope scaling is not modelled: the weights are random)
	"llama3.2-1b": dict(layers=16, dim=2048, heads=32, kv_heads=8, head_dim=64, ffn=8192, vocab=128256,
			    rope_base=500000.0, rope_dim=64, eps=1e-5, context=131072, tied=True),
	"smollm2-135m": dict(layers=30, dim=576, heads=9, kv_heads=3, head_dim=64, ffn=1536, vocab=49152,
			     rope_base=100000.0, rope_dim=64, eps=1e-5, context=8192, tied=True),
}


def hparams(g):
	"""The Llama hyper-parameters of a GGUF, every one from its metadata; checked against each other."""
	arch = g.get("general.architecture", need="a string: the model's architecture")
	if arch != "llama":
		raise GGUFError("%s: general.architecture is '%s': only Llama-architecture models (\"llama\") are "
				"converted" % (g.path, arch))

	def num(key, kind=int, default=None):
		v = g.get("llama." + key, default)
		if v is None:
			raise GGUFError("%s: no metadata 'llama.%s'" % (g.path, key))
		if isinstance(v, (list, str)) or isinstance(v, bool):
			raise GGUFError("%s: metadata 'llama.%s' is %s, a number expected" % (g.path, key, VALUE_NAME.get(g.types.get("llama." + key), "?")))
		return kind(v)

	h = dict(layers=num("block_count"), dim=num("embedding_length"), ffn=num("feed_forward_length"),
		 heads=num("attention.head_count"), context=num("context_length"),
		 eps=num("attention.layer_norm_rms_epsilon", float), rope_base=num("rope.freq_base", float, 10000.0))
	h["kv_heads"] = num("attention.head_count_kv", int, h["heads"])
	for k in ("layers", "dim", "ffn", "heads", "kv_heads", "context"):
		if h[k] < 1:
			raise GGUFError("%s: llama.%s is %d" % (g.path, k, h[k]))
	if h["dim"] % h["heads"]:
		raise GGUFError("%s: embedding_length %d is not a multiple of head_count %d" % (g.path, h["dim"], h["heads"]))
	if h["heads"] % h["kv_heads"]:
		raise GGUFError("%s: head_count %d is not a multiple of head_count_kv %d" % (g.path, h["heads"], h["kv_heads"]))
	h["head_dim"] = num("attention.key_length", int, h["dim"] // h["heads"])
	if num("attention.value_length", int, h["head_dim"]) != h["head_dim"] or h["head_dim"] * h["heads"] != h["dim"]:
		raise GGUFError("%s: head size %d with %d heads: only head_count * head size = embedding_length %d is "
				"converted" % (g.path, h["head_dim"], h["heads"], h["dim"]))
	h["rope_dim"] = num("rope.dimension_count", int, h["head_dim"])
	if h["rope_dim"] % 2 or not 0 < h["rope_dim"] <= h["head_dim"]:
		raise GGUFError("%s: rope.dimension_count %d: an even number up to the head size %d expected" %
				(g.path, h["rope_dim"], h["head_dim"]))
	scaling = g.get("llama.rope.scaling.type", "none")
	if scaling not in ("none", "") and g.get("llama.rope.scaling.factor", 1.0) not in (0.0, 1.0):
		raise GGUFError("%s: rope scaling '%s' (factor %g) is not converted" %
				(g.path, scaling, g.get("llama.rope.scaling.factor")))
	if "rope_freqs.weight" in g.by_name:
		raise GGUFError("%s: the model has rope_freqs.weight (frequency factors, Llama 3.1's rope scaling): not "
				"converted" % g.path)
	emb = g.by_name.get("token_embd.weight")
	if emb is None:
		raise GGUFError("%s: no tensor token_embd.weight" % g.path)
	h["vocab"] = emb.shape[0]
	toks = g.get("tokenizer.ggml.tokens")
	if isinstance(toks, list) and len(toks) != h["vocab"]:
		raise GGUFError("%s: %d tokens in tokenizer.ggml.tokens, token_embd.weight has %d rows" %
				(g.path, len(toks), h["vocab"]))
	if g.get("llama.vocab_size", h["vocab"]) != h["vocab"]:
		raise GGUFError("%s: llama.vocab_size is %s, token_embd.weight has %d rows" %
				(g.path, g.get("llama.vocab_size"), h["vocab"]))
	h["tied"] = "output.weight" not in g.by_name
	return h


def weight_list(h):
	"""Every weight of the graph: (GGUF name, row-major shape, kind) with kind 'norm', 'proj' or 'embd'."""
	D, F, Dh = h["dim"], h["ffn"], h["head_dim"]
	Q, KV = h["heads"] * Dh, h["kv_heads"] * Dh
	w = [("token_embd.weight", [h["vocab"], D], "embd")]
	for i in range(h["layers"]):
		b = "blk.%d." % i
		w += [(b + "attn_norm.weight", [D], "norm"), (b + "attn_q.weight", [Q, D], "proj"),
		      (b + "attn_k.weight", [KV, D], "proj"), (b + "attn_v.weight", [KV, D], "proj"),
		      (b + "attn_output.weight", [D, Q], "proj"), (b + "ffn_norm.weight", [D], "norm"),
		      (b + "ffn_gate.weight", [F, D], "proj"), (b + "ffn_up.weight", [F, D], "proj"),
		      (b + "ffn_down.weight", [D, F], "proj")]
	w.append(("output_norm.weight", [D], "norm"))
	if not h["tied"]:
		w.append(("output.weight", [h["vocab"], D], "proj"))
	return w


# ---- the model file ------------------------------------------------------------------------------

from hf2ark import _q, _shape, tensor_lines  # noqa: E402


def _num(x):
	"""A float as libconfig reads it back to the same double (always with a '.' or an exponent)."""
	r = repr(float(x))
	return r if ("." in r or "e" in r or "inf" in r or "nan" in r) else r + ".0"


def model_text(h, a, header, wdtype):
	"""The model file: header comment lines, then the graph. wdtype: {weight name: arkgen dtype or None
	(the model's)}."""
	L, Dh = a.max_len, h["head_dim"]
	KV = h["kv_heads"] * Dh
	lines = ["# " + x for x in header] + [
		"version = 1;", "name = %s;" % _q(a.name), "dtype = %s;" % _q(a.dtype), 'token = "token";', "", "tensors = ("]
	rows = [("token", [1], "state", "int32"), ("pos", [1], "state", "int32")]
	for i in range(h["layers"]):
		rows += [("blk.%d.k_cache" % i, [L, KV], "state", None), ("blk.%d.v_cache" % i, [L, KV], "state", None)]
	rows += [(n, s, "weight", wdtype.get(n)) for n, s, _ in weight_list(h)]
	rows += [("logits", None, "output", None), ("next_token", None, "output", None)]
	lines.append(tensor_lines(rows))
	lines += [");", "", "ops = ("]
	body = []

	def op(name, kind, ins, out=None, attrs=""):
		out = name if out is None else out
		t = "  { name = %s; op = \"%s\"; in = %s;" % (_q(name), kind, "[" + ", ".join(_q(x) for x in ins) + "]")
		if out:
			t += " out = %s;" % _q(out)
		body.append(t + (" " + attrs if attrs else "") + " }")
		return out

	eps = "eps = %s;" % _num(h["eps"])
	rope = 'head_dim = %d; base = %s; rotary_dim = %d; style = "interleaved";' % (Dh, _num(h["rope_base"]), h["rope_dim"])
	x = op("embed", "embedding", ["token", "token_embd.weight"])           # [1, D]
	for i in range(h["layers"]):
		b = "blk.%d." % i
		n = op(b + "attn_norm", "rmsnorm", [x, b + "attn_norm.weight"], attrs=eps)
		q = op(b + "q", "matmul", [n, b + "attn_q.weight"], attrs="transpose_b = true;")     # [1, H*Dh]
		k = op(b + "k", "matmul", [n, b + "attn_k.weight"], attrs="transpose_b = true;")     # [1, Hkv*Dh]
		v = op(b + "v", "matmul", [n, b + "attn_v.weight"], attrs="transpose_b = true;")
		q = op(b + "q_rope", "rope", [q, "pos"], attrs=rope)
		k = op(b + "k_rope", "rope", [k, "pos"], attrs=rope)
		kc = op(b + "k_append", "kv_append", [b + "k_cache", k, "pos"], out=b + "k_cache.new")   # [L, Hkv*Dh]
		vc = op(b + "v_append", "kv_append", [b + "v_cache", v, "pos"], out=b + "v_cache.new")
		att = op(b + "attn", "decode_attention", [q, kc, vc, "pos"],
			 attrs="heads = %d; kv_heads = %d;" % (h["heads"], h["kv_heads"]))
		o = op(b + "attn_output", "matmul", [att, b + "attn_output.weight"], attrs="transpose_b = true;")
		x = op(b + "attn_residual", "add", [o, x])
		n = op(b + "ffn_norm", "rmsnorm", [x, b + "ffn_norm.weight"], attrs=eps)
		gt = op(b + "ffn_gate", "matmul", [n, b + "ffn_gate.weight"], attrs="transpose_b = true;")   # [1, F]
		up = op(b + "ffn_up", "matmul", [n, b + "ffn_up.weight"], attrs="transpose_b = true;")
		m = op(b + "ffn_swiglu", "swiglu", [gt, up])
		d = op(b + "ffn_down", "matmul", [m, b + "ffn_down.weight"], attrs="transpose_b = true;")
		x = op(b + "ffn_residual", "add", [d, x])
	n = op("output_norm", "rmsnorm", [x, "output_norm.weight"], attrs=eps)
	op("output", "matmul", [n, "token_embd.weight" if h["tied"] else "output.weight"], out="logits",
	   attrs="transpose_b = true;")                                         # [1, vocab]
	op("argmax", "argmax", ["logits"], out="next_token")                    # int32 [1]
	op("feed", "assign", ["token", "next_token"], out="")
	op("step", "advance", ["pos"], out="", attrs="by = 1;")
	lines.append(",\n".join(body))
	lines.append(");")
	return "\n".join(lines) + "\n"


def _shell(x):
	return x if x and all(ch.isalnum() or ch in "-_./=" for ch in x) else "'%s'" % x.replace("'", "'\\''")


def describe(h, a):
	return ("Llama decoder, one decode step: %d layers, dim %d, %d query / %d kv heads of %d, FFN %d, vocab %d, "
		"%s embeddings;" % (h["layers"], h["dim"], h["heads"], h["kv_heads"], h["head_dim"], h["ffn"], h["vocab"],
				     "tied" if h["tied"] else "untied"),
		"rmsnorm eps %g, rope base %g over %d of %d (interleaved pairs); KV caches of %d positions, %s." %
		(h["eps"], h["rope_base"], h["rope_dim"], h["head_dim"], a.max_len, a.dtype))


# ---- info ----------------------------------------------------------------------------------------

def _short(v, n=8):
	if isinstance(v, list):
		head = ", ".join(_short(x, 40) for x in v[:n])
		return "[%s%s] (%d)" % (head, ", ..." if len(v) > n else "", len(v))
	if isinstance(v, str):
		return json.dumps(v if len(v) <= 60 else v[:57] + "...")
	return repr(v)


def info(a):
	g = GGUF(a.file)
	print("%s: GGUF v%d, %d bytes, %d metadata keys, %d tensors, alignment %d, data at %d" %
	      (a.file, g.version, g.size, len(g.metadata), len(g.tensors), g.alignment, g.data_start))
	keys = g.metadata if a.keys else [k for k in g.metadata if not k.startswith("tokenizer.ggml.")
					  or k in ("tokenizer.ggml.model", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.bos_token_id")]
	for k in keys:
		t = g.types[k]
		tn = "[%s]" % VALUE_NAME[t[1]] if isinstance(t, tuple) else VALUE_NAME[t]
		print("  %-44s %-9s %s" % (k, tn, _short(g.metadata[k])))
	if not a.keys:
		for k in g.metadata:
			if k.startswith("tokenizer.ggml.") and isinstance(g.metadata[k], list):
				print("  %-44s [%s] (%d entries; --keys shows them)" % (k, VALUE_NAME[g.types[k][1]], len(g.metadata[k])))
	count = {}
	for t in g.tensors:
		c = count.setdefault(t.type_name, [0, 0, 0])
		c[0] += 1
		c[1] += t.n_elements
		c[2] += t.n_bytes
	print("tensor types:")
	for name, (n, e, b) in sorted(count.items(), key=lambda x: -x[1][2]):
		print("  %-6s %4d tensors %12d elements %12d bytes (%.2f bits per weight)" % (name, n, e, b, 8.0 * b / e))
	print("tensors (row-major shape):")
	for t in g.tensors if a.tensors else g.tensors[:12]:
		print("  %-28s %-6s %s" % (t.name, t.type_name, _shape(t.shape)))
	if not a.tensors and len(g.tensors) > 12:
		print("  ... (%d more; --tensors lists them all)" % (len(g.tensors) - 12))
	if g.get("general.architecture") == "llama":
		try:
			h = hparams(g)
			print("llama: %d layers, dim %d, %d / %d heads of %d, FFN %d, vocab %d, %s, rope base %g over %d, eps %g, "
			      "context %d" % (h["layers"], h["dim"], h["heads"], h["kv_heads"], h["head_dim"], h["ffn"], h["vocab"],
					      "tied embeddings" if h["tied"] else "output.weight", h["rope_base"], h["rope_dim"],
					      h["eps"], h["context"]))
		except GGUFError as e:
			print("llama: cannot convert: %s" % e)
	return 0


# ---- convert -------------------------------------------------------------------------------------

ST_DTYPE = {"fp32": "F32", "fp16": "F16", "bf16": "BF16"}


def float_bytes(raw, src, dst, name):
	"""F32 / F16 / BF16 bytes -> the bytes of arkgen dtype dst."""
	if ST_DTYPE[dst] == src:
		return raw
	f32 = raw if src == "F32" else f16_to_f32(raw) if src == "F16" else bf16_to_f32(raw)
	if dst == "fp32":
		return f32
	return f32_to_bf16(f32, name) if dst == "bf16" else f32_to_f16(f32, name)


def plan_weights(g, h, a):
	"""{name: arkgen dtype or None (the model's dtype)} and each tensor's source, checked."""
	wdtype = {}
	for name, shape, kind in weight_list(h):
		t = g.by_name.get(name)
		if t is None:
			raise GGUFError("%s: no tensor '%s' (a Llama block of %d layers needs it)" % (g.path, name, h["layers"]))
		if t.shape != shape:
			raise GGUFError("%s:%d: tensor '%s' has shape %s, the metadata gives %s" %
					(g.path, t.info_at, name, _shape(t.shape), _shape(shape)))
		if t.type_name in FLOATS:
			wdtype[name] = None
		elif t.type_name in KEPT and a.dequant == "none":
			wdtype[name] = KEPT[t.type_name]
		elif t.type_name in DEQUANT:
			wdtype[name] = None
		else:
			raise GGUFError("%s:%d: tensor '%s' has GGML type %s: not supported (kept: %s; dequantised: %s)" %
					(g.path, t.info_at, name, t.type_name, ", ".join(sorted(KEPT)),
					 ", ".join(list(FLOATS) + sorted(DEQUANT))))
	return wdtype


def weights_of(g, h, a, wdtype):
	out = []
	for name, shape, _ in weight_list(h):
		t = g.by_name[name]
		raw = g.read(t)
		dt = wdtype[name] or a.dtype
		if dt in ("q4_1", "q8_0"):
			_, block, size = GGML_TYPES[t.type_id]
			out.append((name, "U8", [shape[0], shape[1] // block * size], raw))
		elif t.type_name in FLOATS:
			out.append((name, ST_DTYPE[dt], shape, float_bytes(raw, t.type_name, dt, name)))
		else:
			out.append((name, ST_DTYPE[dt], shape, float_bytes(dequantize(t.type_name, raw, name), "F32", dt, name)))
	return out


def vocabulary(g):
	toks = g.get("tokenizer.ggml.tokens")
	v = {"model": g.get("tokenizer.ggml.model"), "tokens": toks if isinstance(toks, list) else None,
	     "bos": g.get("tokenizer.ggml.bos_token_id"), "eos": g.get("tokenizer.ggml.eos_token_id"),
	     "token_type": g.get("tokenizer.ggml.token_type"), "chat_template": g.get("tokenizer.chat_template")}
	return v


def convert(a, argv):
	g = GGUF(a.file)
	h = hparams(g)
	if a.max_len > h["context"]:
		raise ConvertError("--max-len %d is longer than the model's context_length %d" % (a.max_len, h["context"]))
	wdtype = plan_weights(g, h, a)
	kinds = {}
	for name, _, _ in weight_list(h):
		kinds.setdefault(g.by_name[name].type_name + " -> " + (wdtype[name] or a.dtype), []).append(name)
	header = ["Generated by tools/gguf2ark.py from %s (do not edit: convert again):" % os.path.basename(a.file),
		  "  " + " ".join(["tools/gguf2ark.py"] + [_shell(x) for x in argv]),
		  "%s (%s)" % (g.get("general.name", "?"), g.get("general.architecture"))] + list(describe(h, a)) + [
		  "weights: " + "; ".join("%s: %d tensors" % (k, len(v)) for k, v in sorted(kinds.items())) + "."]
	text = model_text(h, a, header, wdtype)
	tensors = weights_of(g, h, a, wdtype) if a.weights else []
	voc = vocabulary(g)
	with open(a.output, "w") as f:
		f.write(text)
	if a.weights:
		write_safetensors(a.weights, tensors)
	if a.vocab:
		with open(a.vocab, "w") as f:
			json.dump(voc, f, ensure_ascii=False)
	nbytes = sum(len(t[3]) for t in tensors)
	print("gguf2ark: %s: %d layers, dim %d, heads %d/%d, vocab %d, max-len %d, %s%s; eos %s" %
	      (a.output, h["layers"], h["dim"], h["heads"], h["kv_heads"], h["vocab"], a.max_len, a.dtype,
	       "; %s: %d tensors, %d bytes" % (a.weights, len(tensors), nbytes) if a.weights else "", voc["eos"]))
	return 0


def shape(a, argv):
	h = dict(PRESETS[a.preset])
	if a.max_len > h["context"]:
		raise ConvertError("--max-len %d is longer than the preset's context %d" % (a.max_len, h["context"]))
	wdtype = {}
	for name, _, kind in weight_list(h):
		if a.quant == "q4_1" and kind != "norm":
			wdtype[name] = "q8_0" if kind == "embd" else "q4_1"
	header = ["Generated by tools/gguf2ark.py (do not edit: generate again):",
		  "  " + " ".join(["tools/gguf2ark.py"] + [_shell(x) for x in argv]),
		  "%s shape, random weights (the binary's own)%s" %
		  (a.preset, ": q4_1 projections, q8_0 embedding (tied: the lm head too)" if a.quant == "q4_1" else "")
		  ] + list(describe(h, a))
	with open(a.output, "w") as f:
		f.write(model_text(h, a, header, wdtype))
	print("gguf2ark: %s: %s shape, %d layers, max-len %d, %s%s" %
	      (a.output, a.preset, h["layers"], a.max_len, a.dtype, ", q4_1" if a.quant == "q4_1" else ""))
	return 0


# ---- main ----------------------------------------------------------------------------------------

def _identifier(ap, name):
	if not (name[:1].isalpha() or name[:1] == "_") or not all(c.isalnum() or c == "_" for c in name) \
	   or not name.isascii():
		ap.error("--name '%s' is not an identifier [A-Za-z_][A-Za-z0-9_]*" % name)


def parse_args(argv):
	ap = argparse.ArgumentParser(description="GGUF (Llama) -> arkgen decode-step model + weights + vocabulary")
	sub = ap.add_subparsers(dest="cmd", required=True)
	i = sub.add_parser("info", help="the header, metadata and tensor types of a GGUF file")
	i.add_argument("file")
	i.add_argument("--keys", action="store_true", help="every metadata key (the tokenizer's arrays too)")
	i.add_argument("--tensors", action="store_true", help="every tensor")
	c = sub.add_parser("convert", help="a Llama GGUF -> model file, weights, vocabulary")
	c.add_argument("file")
	for p in (c, sub.add_parser("shape", help="a known shape, random weights: the model file only")):
		p.add_argument("-o", "--output", required=True, metavar="OUT.cfg", help="the model file to write")
		p.add_argument("--max-len", type=int, default=2048, help="positions in the KV caches (default 2048)")
		p.add_argument("--dtype", default="bf16", choices=tuple(ST_DTYPE), help="the model's dtype (default bf16)")
		p.add_argument("--name", default=None, help="the model's name, an identifier")
	c.add_argument("-w", "--weights", metavar="OUT.safetensors", help="the weights file to write")
	c.add_argument("--vocab", metavar="OUT.json", help="the vocabulary to write (tokens, eos, bos)")
	c.add_argument("--dequant", default="none", choices=("none", "bf16"),
		       help="none: Q4_1 / Q8_0 kept as they are (default); bf16: every quantized tensor dequantised "
			    "(needs --dtype bf16)")
	s = sub.choices["shape"]
	s.add_argument("preset", choices=sorted(PRESETS))
	s.add_argument("--quant", default="none", choices=("none", "q4_1"),
		       help="q4_1: projections in q4_1, the embedding (and tied lm head) in q8_0")
	a = ap.parse_args(argv)
	if a.cmd == "convert" and a.dequant == "bf16" and a.dtype != "bf16":
		ap.error("--dequant bf16 dequantises into the model's dtype: it needs --dtype bf16, not %s" % a.dtype)
	if a.cmd in ("convert", "shape"):
		if a.max_len < 1:
			ap.error("--max-len must be at least 1")
		if a.name is None:
			a.name = "llama" if a.cmd == "convert" else a.preset.replace(".", "_").replace("-", "_")
		_identifier(ap, a.name)
	return a


def main(argv):
	a = parse_args(argv)
	try:
		if a.cmd == "info":
			return info(a)
		if a.cmd == "convert":
			return convert(a, argv)
		return shape(a, argv)
	except (GGUFError, ConvertError) as e:
		print("gguf2ark: error: %s" % e, file=sys.stderr)
		return 1
	except OSError as e:
		print("gguf2ark: error: %s" % e, file=sys.stderr)
		return 1


if __name__ == "__main__":
	sys.exit(main(sys.argv[1:]))
