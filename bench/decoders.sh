#!/usr/bin/env bash
# decoders.sh [BUILD_DIR] [OUT_DIR]: the decoder benchmark (issue 13). Builds models/llama1b_decode.cfg
# (Llama-3.2-1B's shape, bf16, KV 512, random weights) and models/llama1b_decode_q4.cfg (q4_1
# projections, q8_0 embedding), and SmolLM2-135M from SMOLLM_DIR when set (a folder that
# `tools/smollm.py prepare` and `build` made), then on a GPU: --check; --bench N (one doorbell per
# decode step: µs per token with a host round trip each); --generate G --doorbell-per-token (G steps
# from one doorbell, then the same steps with one doorbell each: µs/step of both, the same tokens);
# PyTorch's decode step with static caches, eager and one CUDA graph per step (tools/llama_ref.py
# --bench: bf16 weights, as PyTorch has no 4-bit matmul of its own; the same shape with random
# weights, or SmolLM2's dequantised weights); one markdown table with the ratios and the GPU's name. Logs and results.json go to OUT_DIR.
#
# BUILD_DIR defaults to build, OUT_DIR to BUILD_DIR/bench-decoders. Environment:
#   ARKGEN      arkgen binary (default BUILD_DIR/arkgen)
#   NVCC        nvcc (default nvcc)
#   SKIP_BUILD  1: use the binaries already in OUT_DIR
#   BENCH_N     timed iterations of --bench (default 400: with its 50 warm-up iterations, each one a
#               step, inside the 512 positions of the caches)
#   GEN_N       steps of --generate and of the PyTorch loop (default 256)
#   PYTHON      python3 with torch (default python3)
#   SMOLLM_DIR  also SmolLM2-135M (smollm2_bf16, smollm2_fp32 of that folder)
# Without a GPU it builds, says that no GPU was found, and exits 0.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-build}
OUT=${2:-$B/bench-decoders}
ARKGEN=${ARKGEN:-$B/arkgen}
NVCC=${NVCC:-nvcc}
SKIP_BUILD=${SKIP_BUILD:-0}
BENCH_N=${BENCH_N:-400}
GEN_N=${GEN_N:-256}
PYTHON=${PYTHON:-python3}
SMOLLM_DIR=${SMOLLM_DIR:-}
MODELS="llama1b_decode llama1b_decode_q4"

. "$ROOT/bench/lib.sh" # die, usage, limit, nvcc_all
mkdir -p "$OUT" || die "cannot create $OUT"

if [ "$SKIP_BUILD" = 1 ]; then
	for m in $MODELS; do [ -x "$OUT/$m" ] || die "SKIP_BUILD=1 but $OUT/$m is missing"; done
else
	[ -x "$ARKGEN" ] || die "no arkgen at $ARKGEN (run make, or set ARKGEN)"
	flags=$("$ARKGEN" --nvcc-flags) || die "$ARKGEN --nvcc-flags failed"
	for m in $MODELS; do
		"$ARKGEN" "$ROOT/models/$m.cfg" --schedule "$OUT/$m.json" -o "$OUT/$m.cu" >"$OUT/$m.arkgen.log" 2>&1 ||
			{ sed 's/^/  /' "$OUT/$m.arkgen.log" >&2; die "arkgen models/$m.cfg failed"; }
	done
	# shellcheck disable=SC2086
	nvcc_all "$OUT" $MODELS
	echo "== built: $MODELS in $OUT"
fi

rm -f "$OUT"/*.check.log "$OUT"/*.bench.log "$OUT"/*.gen.log "$OUT"/*.torch.json "$OUT"/results.json
runs=""
for m in $MODELS; do runs="$runs $OUT/$m"; done
if [ -n "$SMOLLM_DIR" ]; then
	for dt in bf16 fp32; do
		[ -x "$SMOLLM_DIR/smollm2_$dt" ] && runs="$runs $SMOLLM_DIR/smollm2_$dt"
	done
fi
first=1
for bin in $runs; do
	x=$(basename "$bin")
	w=()
	[ -f "$bin.safetensors" ] && w=(--weights "$bin.safetensors")
	limit 600 "$bin" "${w[@]}" --check >"$OUT/$x.check.log" 2>&1
	rc=$?
	if [ $first = 1 ] && [ $rc -eq 77 ]; then
		echo "== no GPU found ($x --check exits 77): built, nothing ran"
		exit 0
	fi
	first=0
	echo "== $x --check: $([ $rc -eq 0 ] && echo ok || echo "FAILED (exit $rc)")"
	limit 300 "$bin" "${w[@]}" --bench "$BENCH_N" >"$OUT/$x.bench.log" 2>&1
	echo "== $x: $(grep '^bench:' "$OUT/$x.bench.log" || echo "no bench line (exit $?)")"
	limit 300 "$bin" "${w[@]}" --generate "$GEN_N" --doorbell-per-token --tokens-out "$OUT/$x.tokens" \
		>"$OUT/$x.gen.log" 2>&1
	echo "== $x --generate $GEN_N --doorbell-per-token (exit $?):"
	grep '^generate:' "$OUT/$x.gen.log" | sed 's/^/   /'
done
if command -v nvidia-smi >/dev/null 2>&1; then
	nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 >"$OUT/gpu.txt"
fi

limit 900 "$PYTHON" "$ROOT/tools/llama_ref.py" --shape llama3.2-1b --bench "$GEN_N" --max-len 512 --dtype bf16 \
	--json "$OUT/llama1b.torch.json" >"$OUT/llama1b.torch.log" 2>&1
echo "== PyTorch llama3.2-1b shape (exit $?):"
sed 's/^/   /' "$OUT/llama1b.torch.log" | tail -n 4
if [ -n "$SMOLLM_DIR" ]; then
	g=$("$PYTHON" -c "import sys; sys.path.insert(0, '$ROOT/tools'); import smollm; print(smollm.join('$SMOLLM_DIR/smollm2.gguf'))")
	limit 900 "$PYTHON" "$ROOT/tools/llama_ref.py" "$g" --prompt-ids "$SMOLLM_DIR/prompt_0.ids" --bench "$GEN_N" \
		--max-len 512 --dtype bf16 --json "$OUT/smollm2.torch.json" >"$OUT/smollm2.torch.log" 2>&1
	echo "== PyTorch SmolLM2-135M (exit $?):"
	sed 's/^/   /' "$OUT/smollm2.torch.log" | tail -n 4
fi

echo
"$PYTHON" - "$OUT" "$runs" <<'EOF'
import json, os, re, sys
out, runs = sys.argv[1], sys.argv[2].split()
NUM = r"([0-9.]+)"
def grab(path, pat):
	try:
		m = re.search(pat, open(path).read(), re.M)
	except OSError:
		return None
	return float(m.group(1)) if m else None
def torch_us(name, key):
	try:
		return json.load(open(os.path.join(out, name)))["results"][key]["us_per_token"]
	except (OSError, KeyError, ValueError):
		return None
gpu = open(os.path.join(out, "gpu.txt")).read().strip() if os.path.exists(os.path.join(out, "gpu.txt")) else "?"
rows, res = [], {}
for b in runs:
	x = os.path.basename(b)
	bench = grab(os.path.join(out, x + ".bench.log"), r"^bench: \d+ iterations after \d+ warm-up: median %s us" % NUM)
	gen = grab(os.path.join(out, x + ".gen.log"), r"^generate: .* from one doorbell .*: [0-9.]+ steps/s, %s us/step" % NUM)
	per = grab(os.path.join(out, x + ".gen.log"), r"^generate: the same \d+ steps with one doorbell each .*: %s us/step" % NUM)
	ref = "llama1b.torch.json" if x.startswith("llama1b") else "smollm2.torch.json"
	eager, graph = torch_us(ref, "eager"), torch_us(ref, "cuda graph per step")
	res[x] = {"bench_median_us": bench, "generate_us_per_token": gen, "doorbell_per_token_us": per,
		  "torch_eager_us": eager, "torch_graph_us": graph}
	f = lambda v: "%.1f" % v if v else "n/a"
	r = lambda a, b: "%.2fx" % (a / b) if a and b else "n/a"
	saving = "%.1f us" % (per - gen) if per and gen else "n/a"
	rows.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (x, f(bench), f(per), f(gen), f(eager), f(graph), r(graph, gen), saving))
print("Decode step, batch 1, %s: us per token (arkgen: --bench median of single iterations; --generate's "
      "us/step with one doorbell per step and with one for all; PyTorch bf16 with static caches)\n" % gpu)
print("| model | arkgen --bench (median) | arkgen, a doorbell per step | arkgen --generate, one doorbell | PyTorch eager | PyTorch CUDA graph per step | PyTorch graph / arkgen --generate | saved per token by one doorbell |")
print("|---|---|---|---|---|---|---|---|")
print("\n".join(rows))
json.dump({"gpu": gpu, "models": res}, open(os.path.join(out, "results.json"), "w"), indent=1)
EOF
