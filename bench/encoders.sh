#!/usr/bin/env bash
# encoders.sh [BUILD_DIR] [OUT_DIR]: the transformer encoder benchmark (issue 12). Builds
# models/bert_base.cfg and models/minilm_l6.cfg (bf16, batch 1, sequence 128), the attention op alone
# ([12 heads, 128, 64] bf16) and each matmul shape of the two models alone ([128, K] by a [N, K] weight,
# transpose_b, bf16), compiles the loop kernels with nvcc in parallel, then on a GPU: --check and
# --bench of every binary; PyTorch eager / CUDA graph / torch.compile of both models
# (bench/torch_baseline.py on their schedules); torch.nn.functional.scaled_dot_product_attention and
# torch.matmul (cuBLAS) on the same shapes in CUDA graphs (bench/encoder_parts.py); and one markdown
# table with the ratios and the GPU's name (bench/encoder_parts.py table). Logs and results.json go to
# OUT_DIR.
#
# BUILD_DIR defaults to build, OUT_DIR to BUILD_DIR/bench-encoders. Environment:
#   ARKGEN      arkgen binary (default BUILD_DIR/arkgen)
#   NVCC        nvcc (default nvcc)
#   SKIP_BUILD  1: use the binaries and schedules already in OUT_DIR (no arkgen, no nvcc needed)
#   BENCH_N     timed iterations of --bench (default 1000)
#   TORCH_ARGS  extra options of torch_baseline.py (default "--iters 1000 --warmup 100"); its --iters,
#               --warmup and --seed also go to encoder_parts.py
#   PYTHON      python3 with torch for the baselines (default python3)
#   MODELS      models of models/ to run (default "bert_base minilm_l6")
#   PARTS       parts to run (default: attention and every mm_NAME of MATMULS below)
# Without a GPU it builds, says that no GPU was found, and exits 0.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-build}
OUT=${2:-$B/bench-encoders}
ARKGEN=${ARKGEN:-$B/arkgen}
NVCC=${NVCC:-nvcc}
SKIP_BUILD=${SKIP_BUILD:-0}
BENCH_N=${BENCH_N:-1000}
TORCH_ARGS=${TORCH_ARGS:---iters 1000 --warmup 100}
PYTHON=${PYTHON:-python3}
MODELS=${MODELS-bert_base minilm_l6}
# the matmuls of the two models at sequence 128: NAME N K (the weight is [N, K])
MATMULS="bert_qkvo 768 768
bert_ffn1 3072 768
bert_ffn2 768 3072
minilm_qkvo 384 384
minilm_ffn1 1536 384
minilm_ffn2 384 1536"
ALL_PARTS="attention $(echo "$MATMULS" | awk '{printf "mm_%s ", $1}')"
PARTS=${PARTS-${ALL_PARTS% }}

. "$ROOT/bench/lib.sh" # die, usage, limit, nvcc_all

mkdir -p "$OUT" || die "cannot create $OUT"
builds=$(echo $MODELS $PARTS)

# ---- the parts' model files ---------------------------------------------------------------------
write_parts() {
	cat >"$OUT/attention.cfg" <<EOF
# The attention op alone: 12 heads of 64, sequence 128, batch 1, bf16, no mask (bench/encoders.sh).
version = 1;
name = "attention";
dtype = "bf16";
tensors = (
  { name = "q"; shape = [1, 128, 768]; role = "input"; },
  { name = "k"; shape = [1, 128, 768]; role = "input"; },
  { name = "v"; shape = [1, 128, 768]; role = "input"; },
  { name = "o"; role = "output"; }
);
ops = ( { name = "attn"; op = "attention"; in = ["q", "k", "v"]; out = "o"; heads = 12; } );
EOF
	echo "$MATMULS" | while read -r name n k; do
		cat >"$OUT/mm_$name.cfg" <<EOF
# One matmul of the encoders alone: [128, $k] by a [$n, $k] weight (transpose_b), bf16 (bench/encoders.sh).
version = 1;
name = "mm_$name";
dtype = "bf16";
tensors = (
  { name = "x"; shape = [128, $k]; role = "input"; },
  { name = "w"; shape = [$n, $k]; role = "weight"; },
  { name = "y"; role = "output"; }
);
ops = ( { name = "mm"; op = "matmul"; in = ["x", "w"]; out = "y"; transpose_b = true; } );
EOF
	done
}

# ---- build: arkgen per model file, then every nvcc at once ---------------------------------------
if [ "$SKIP_BUILD" = 1 ]; then
	for x in $builds; do
		[ -x "$OUT/$x" ] || die "SKIP_BUILD=1 but $OUT/$x is missing"
	done
	echo "== SKIP_BUILD=1: using the binaries in $OUT"
else
	[ -x "$ARKGEN" ] || die "no arkgen at $ARKGEN (run make, or set ARKGEN)"
	command -v "$NVCC" >/dev/null 2>&1 || die "no nvcc ('$NVCC'; set NVCC)"
	flags=$("$ARKGEN" --nvcc-flags) || die "$ARKGEN --nvcc-flags failed"
	write_parts
	for x in $builds; do
		cfg=$OUT/$x.cfg
		[ -f "$ROOT/models/$x.cfg" ] && cfg=$ROOT/models/$x.cfg
		"$ARKGEN" "$cfg" --schedule "$OUT/$x.json" -o "$OUT/$x.cu" >"$OUT/$x.arkgen.log" 2>&1 ||
			{ sed 's/^/  /' "$OUT/$x.arkgen.log" >&2; die "arkgen $cfg failed"; }
	done
	# shellcheck disable=SC2086
	nvcc_all "$OUT" $builds
	echo "== built: $builds in $OUT"
fi

# ---- check, then time, every binary -------------------------------------------------------------
rm -f "$OUT"/*.rc "$OUT"/*.check.log "$OUT"/*.bench.log "$OUT"/*.torch.log "$OUT"/*.torch.json \
	"$OUT"/parts.torch.json "$OUT"/gpu.txt "$OUT"/results.json
first=1
for x in $builds; do
	limit 600 "$OUT/$x" --check >"$OUT/$x.check.log" 2>&1
	rc=$?
	echo "$rc" >"$OUT/$x.check.rc"
	if [ $first = 1 ] && [ $rc -eq 77 ]; then
		echo "== no GPU found ($x --check exits 77): built, nothing ran"
		exit 0
	fi
	first=0
	if [ $rc -eq 0 ]; then echo "== $x --check: ok"; else echo "== $x --check: FAILED (exit $rc)"; fi
done
if command -v nvidia-smi >/dev/null 2>&1; then
	nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 >"$OUT/gpu.txt"
fi
for x in $builds; do
	limit 300 "$OUT/$x" --bench "$BENCH_N" >"$OUT/$x.bench.log" 2>&1
	echo "$?" >"$OUT/$x.bench.rc"
	echo "== $x: $(grep '^bench:' "$OUT/$x.bench.log" || echo "no bench line")"
done

# ---- PyTorch: the two models, then attention and the matmuls alone -------------------------------
for m in $MODELS; do
	# shellcheck disable=SC2086
	limit 900 "$PYTHON" "$ROOT/bench/torch_baseline.py" "$OUT/$m.json" $TORCH_ARGS \
		--json "$OUT/$m.torch.json" >"$OUT/$m.torch.log" 2>&1
	rc=$?
	echo "$rc" >"$OUT/$m.torch.rc"
	echo "== PyTorch $m (exit $rc):"
	sed 's/^/   /' "$OUT/$m.torch.log" | tail -n 6
done
# shellcheck disable=SC2086
# encoder_parts.py takes --iters, --warmup and --seed of TORCH_ARGS, not torch_baseline.py's others
parts_args=$(echo $TORCH_ARGS | awk '{ for (i = 1; i < NF; i++) if ($i == "--iters" || $i == "--warmup" || $i == "--seed") { printf "%s %s ", $i, $(i + 1); i++ } }')
# shellcheck disable=SC2086
limit 600 "$PYTHON" "$ROOT/bench/encoder_parts.py" torch "$OUT/parts.torch.json" --matmuls "$(echo "$MATMULS" | tr '\n' ';')" \
	$parts_args >"$OUT/parts.torch.log" 2>&1
echo "== PyTorch parts (exit $?):"
sed 's/^/   /' "$OUT/parts.torch.log" | tail -n 10

echo
"$PYTHON" "$ROOT/bench/encoder_parts.py" table "$OUT" --models "$MODELS" --parts "$PARTS" ||
	python3 "$ROOT/bench/encoder_parts.py" table "$OUT" --models "$MODELS" --parts "$PARTS"
