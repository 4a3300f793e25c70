#!/usr/bin/env bash
# models.sh [BUILD_DIR] [OUT_DIR]: the model benchmark. Generates mlp8, branchy, chain64 and mlp twice
# (per-dependency counters, the default, and --sync barrier), compiles the eight loop kernels with nvcc
# in parallel, then on a GPU checks each binary once, times each with --bench, times an empty iteration
# (--bench-empty, mlp binary) and the PyTorch baselines of each model (bench/torch_baseline.py), and
# prints one markdown table (bench/table.py). Raw logs and results.json go to OUT_DIR.
#
# BUILD_DIR defaults to build, OUT_DIR to BUILD_DIR/bench-models. Environment:
#   ARKGEN      arkgen binary (default BUILD_DIR/arkgen)
#   NVCC        nvcc (default nvcc)
#   SKIP_BUILD  1: use the binaries and schedules already in OUT_DIR (no arkgen, no nvcc needed)
#   BENCH_N     timed iterations of --bench and --bench-empty (default 1000)
#   TORCH_ARGS  extra options of torch_baseline.py (default "--iters 1000 --warmup 100")
#   PYTHON      python3 with torch for the baselines (default python3)
#   MODELS      models to run, names in models/ (default "mlp8 branchy chain64 mlp")
# Without a GPU it builds, says that no GPU was found, and exits 0.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-build}
OUT=${2:-$B/bench-models}
ARKGEN=${ARKGEN:-$B/arkgen}
NVCC=${NVCC:-nvcc}
SKIP_BUILD=${SKIP_BUILD:-0}
BENCH_N=${BENCH_N:-1000}
TORCH_ARGS=${TORCH_ARGS:---iters 1000 --warmup 100}
PYTHON=${PYTHON:-python3}
MODELS=${MODELS:-mlp8 branchy chain64 mlp}
SYNCS="counters barrier"

. "$ROOT/bench/lib.sh" # die, usage, limit, nvcc_all

mkdir -p "$OUT" || die "cannot create $OUT"
builds=""
for m in $MODELS; do
	for s in $SYNCS; do builds="$builds ${m}_$s"; done
done
builds=${builds# }

# ---- build: arkgen twice per model, then every nvcc at once -------------------------------------
if [ "$SKIP_BUILD" = 1 ]; then
	for x in $builds; do
		[ -x "$OUT/$x" ] || die "SKIP_BUILD=1 but $OUT/$x is missing"
		[ -f "$OUT/$x.json" ] || die "SKIP_BUILD=1 but $OUT/$x.json is missing"
	done
	echo "== SKIP_BUILD=1: using the binaries in $OUT"
else
	[ -x "$ARKGEN" ] || die "no arkgen at $ARKGEN (run make, or set ARKGEN)"
	command -v "$NVCC" >/dev/null 2>&1 || die "no nvcc ('$NVCC'; set NVCC)"
	flags=$("$ARKGEN" --nvcc-flags) || die "$ARKGEN --nvcc-flags failed"
	for m in $MODELS; do
		cfg=$ROOT/models/$m.cfg
		[ -f "$cfg" ] || die "no model file $cfg"
		for s in $SYNCS; do
			x=${m}_$s
			opt=""
			[ "$s" = barrier ] && opt="--sync barrier"
			# shellcheck disable=SC2086
			"$ARKGEN" "$cfg" $opt --schedule "$OUT/$x.json" -o "$OUT/$x.cu" >"$OUT/$x.arkgen.log" 2>&1 ||
				{ sed 's/^/  /' "$OUT/$x.arkgen.log" >&2; die "arkgen $cfg $opt failed"; }
		done
	done
	# shellcheck disable=SC2086
	nvcc_all "$OUT" $builds
	echo "== built:$builds in $OUT"
fi

# ---- check: once per binary; the first one says whether there is a GPU ------------------------
rm -f "$OUT"/*.rc "$OUT"/*.check.log "$OUT"/*.bench.log "$OUT"/empty.log "$OUT"/*.torch.log \
	"$OUT"/*.torch.json "$OUT"/gpu.txt "$OUT"/results.json
first=1
for x in $builds; do
	limit 300 "$OUT/$x" --check >"$OUT/$x.check.log" 2>&1
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

# ---- timing: each binary, the empty iteration, PyTorch ----------------------------------------
for x in $builds; do
	limit 300 "$OUT/$x" --bench "$BENCH_N" >"$OUT/$x.bench.log" 2>&1
	rc=$?
	echo "$rc" >"$OUT/$x.bench.rc"
	echo "== $x: $(grep '^bench:' "$OUT/$x.bench.log" || echo "no bench line (exit $rc)")"
done
empty_bin=$OUT/mlp_counters
[ -x "$empty_bin" ] || empty_bin=$OUT/${builds%% *}
limit 300 "$empty_bin" --bench-empty "$BENCH_N" >"$OUT/empty.log" 2>&1
echo "$?" >"$OUT/empty.rc"
echo "== $(basename "$empty_bin"): $(grep '^bench-empty:' "$OUT/empty.log" || echo "no bench-empty line")"

for m in $MODELS; do
	# shellcheck disable=SC2086
	limit 600 "$PYTHON" "$ROOT/bench/torch_baseline.py" "$OUT/${m}_counters.json" $TORCH_ARGS \
		--json "$OUT/$m.torch.json" >"$OUT/$m.torch.log" 2>&1
	rc=$?
	echo "$rc" >"$OUT/$m.torch.rc"
	echo "== PyTorch $m (exit $rc):"
	sed 's/^/   /' "$OUT/$m.torch.log" | tail -n 6
done

echo
# shellcheck disable=SC2086
"$PYTHON" "$ROOT/bench/table.py" "$OUT" $MODELS || python3 "$ROOT/bench/table.py" "$OUT" $MODELS
