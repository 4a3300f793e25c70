#!/usr/bin/env bash
# sweep.sh: the shape sweep, on models drawn by bench/sweep.py (random shapes nobody tuned for).
#
#   bench/sweep.py gen --seed S --count N --out DIR     draw the models (DIR/swS_*.cfg)
#   bench/sweep.sh --build DIR     arkgen every DIR/*.cfg (schedule DIR/NAME.json, report NAME.report),
#                                  then nvcc JOBS at a time into DIR/NAME; DIR/lib gets the shared
#                                  libraries the binaries load. Needs arkgen and nvcc, no GPU. A model
#                                  that fails is reported and the others go on; exit 1 if any failed.
#   bench/sweep.sh --run DIR [OUT] on the GPU machine: per model --check, --bench, then
#                                  bench/torch_baseline.py on its schedule, each under a timeout; logs
#                                  and a copy of each model file go to OUT/logs (OUT: default DIR/run),
#                                  packed into OUT/logs.tar.gz; the table to OUT/table.md and
#                                  OUT/sweep.json. Without a GPU it says so and exits 0.
#   bench/sweep.sh --table DIR [OUT]   the table of a run (bench/sweep.py table OUT --models DIR)
#
# Everything --run needs lies in DIR under relative names, so DIR can be built on one machine and run
# on another. Environment:
#   ARKGEN        arkgen binary (default build/arkgen of this checkout)   ARKGEN_FLAGS  extra options
#   NVCC          nvcc (default nvcc)           JOBS  parallel nvcc jobs (default: the number of CPUs)
#   MODELS        names to run (default: every DIR/*.cfg), to split a long run over several calls
#   BENCH_N       --bench iterations (default 1000)
#   TORCH_VARIANTS  torch_baseline.py variants (default eager,graph,compile,compile_ro; "none": skip)
#   TORCH_ARGS    more torch_baseline.py options (default "--iters 1000 --warmup 100")
#   CHECK_TIMEOUT, BENCH_TIMEOUT, TORCH_TIMEOUT   seconds per step (default 120, 120, 300)
#   PYTHON        python3 with torch for the baselines (default python3)
#   PACK          1: keep the logs in OUT/logs.tar.gz only (OUT then holds 4 files)
#   SWEEP_SECONDS --run starts no model once this many seconds have passed: the rest are listed as
#                 not run and the table and logs of those that ran are written as usual (a GPU
#                 machine lent for a fixed time; default: no limit)
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
ARKGEN=${ARKGEN:-$ROOT/build/arkgen}
ARKGEN_FLAGS=${ARKGEN_FLAGS:-}
NVCC=${NVCC:-nvcc}
JOBS=${JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)}
BENCH_N=${BENCH_N:-1000}
TORCH_VARIANTS=${TORCH_VARIANTS:-eager,graph,compile,compile_ro}
TORCH_ARGS=${TORCH_ARGS:---iters 1000 --warmup 100}
CHECK_TIMEOUT=${CHECK_TIMEOUT:-120}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-120}
TORCH_TIMEOUT=${TORCH_TIMEOUT:-300}
PYTHON=${PYTHON:-python3}
PACK=${PACK:-0}
SWEEP_SECONDS=${SWEEP_SECONDS:-}

. "$ROOT/bench/lib.sh" # die, usage, limit, libs_of

# Model names of DIR (every DIR/*.cfg, or $MODELS), sorted.
models() {
	if [ -n "${MODELS:-}" ]; then
		# shellcheck disable=SC2086
		printf '%s\n' $MODELS
	else
		for f in "$1"/*.cfg; do [ -f "$f" ] && basename "$f" .cfg; done
	fi
}

# ---- build ------------------------------------------------------------------------------------

nvcc_one() { # nvcc_one DIR NAME: DIR/NAME.cu -> DIR/NAME; the outcome in DIR/NAME.build
	local d=$1 n=$2
	# shellcheck disable=SC2086
	if "$NVCC" $flags -cudart shared "$d/$n.cu" -o "$d/$n" >"$d/$n.nvcc.log" 2>&1; then
		strip "$d/$n" 2>/dev/null
		rm -f "$d/$n.cu" "$d/$n.nvcc.log"
		echo ok >"$d/$n.build"
		echo "  $n: built"
	else
		echo "nvcc failed: see $n.nvcc.log" >"$d/$n.build"
		echo "  $n: NVCC FAILED (see $d/$n.nvcc.log)" >&2
	fi
}

build() {
	local d=$1 n cfg
	[ -x "$ARKGEN" ] || die "no arkgen at $ARKGEN (run make, or set ARKGEN)"
	command -v "$NVCC" >/dev/null 2>&1 || die "no nvcc ('$NVCC'; set NVCC)"
	flags=$("$ARKGEN" --nvcc-flags) || die "$ARKGEN --nvcc-flags failed"
	local names
	names=$(models "$d")
	[ -n "$names" ] || die "no model files in $d (draw some: bench/sweep.py gen --seed S --count N --out $d)"
	local total=0 rejected=""
	echo "== arkgen: $(echo "$names" | wc -w) models in $d"
	for n in $names; do
		total=$((total + 1))
		cfg=$d/$n.cfg
		rm -f "$d/$n" "$d/$n.cu" "$d/$n.json" "$d/$n.build" "$d/$n.nvcc.log"
		[ -f "$cfg" ] || { echo "no model file" >"$d/$n.build"; rejected="$rejected $n"; continue; }
		# shellcheck disable=SC2086
		if ! "$ARKGEN" $ARKGEN_FLAGS "$cfg" --schedule "$d/$n.json" -o "$d/$n.cu" >"$d/$n.report" 2>&1; then
			echo "arkgen rejected it: $(grep -m 1 'error' "$d/$n.report")" >"$d/$n.build"
			echo "  $n: ARKGEN REJECTED IT:" >&2
			sed 's/^/    /' "$d/$n.report" | head -n 8 >&2
			rejected="$rejected $n"
			rm -f "$d/$n.cu" "$d/$n.json"
		fi
	done
	echo "== nvcc: $JOBS at a time"
	for n in $names; do
		[ -f "$d/$n.cu" ] || continue
		while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
		nvcc_one "$d" "$n" &
	done
	wait
	# the shared libraries of the binaries that a GPU machine may lack (as scripts/gpu-bundle.sh),
	# where the loader finds them (LD_LIBRARY_PATH first, as on a machine that carries its own)
	mkdir -p "$d/lib"
	for n in $names; do
		[ -x "$d/$n" ] || continue
		libs_of "$d/$n" "$d/lib"
		break
	done
	ls "$d"/lib/libcjson.so* >/dev/null 2>&1 || echo "sweep.sh: no libcjson.so.1 found for $d/lib" >&2
	local built=0 failed=""
	for n in $names; do
		if [ -x "$d/$n" ]; then built=$((built + 1)); else failed="$failed $n"; fi
	done
	echo "== built $built of $total models in $d"
	[ -z "$failed" ] && return 0
	for n in $failed; do echo "   $n: $(cat "$d/$n.build" 2>/dev/null || echo 'not built')"; done
	return 1
}

# ---- run --------------------------------------------------------------------------------------

run() {
	local d=$1 out=$2 n rc first=1 torch=1
	d=$(cd "$d" && pwd) || die "no folder $1"
	local L=$out/logs
	mkdir -p "$L" || die "cannot create $L"
	export LD_LIBRARY_PATH="$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	local names
	names=$(models "$d")
	[ -n "$names" ] || die "no model files in $d"
	[ "$TORCH_VARIANTS" = none ] && torch=0
	if command -v nvidia-smi >/dev/null 2>&1; then
		nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 >"$out/gpu.txt"
	fi
	case $SWEEP_SECONDS in *[!0-9]*) die "SWEEP_SECONDS is a whole number of seconds, not '$SWEEP_SECONDS'" ;; esac
	local start=$SECONDS
	for n in $names; do
		rm -f "$L/$n".*
		cp "$d/$n.cfg" "$L/" 2>/dev/null
		if [ -n "$SWEEP_SECONDS" ] && [ $((SECONDS - start)) -ge "$SWEEP_SECONDS" ]; then
			echo "not run: SWEEP_SECONDS=$SWEEP_SECONDS spent" >"$L/$n.skip"
			echo "== $n: not run (SWEEP_SECONDS=$SWEEP_SECONDS spent)"
			continue
		fi
		if [ ! -x "$d/$n" ]; then
			cat "$d/$n.build" >"$L/$n.skip" 2>/dev/null || echo "not built" >"$L/$n.skip"
			echo "== $n: not built ($(cat "$L/$n.skip"))"
			continue
		fi
		limit "$CHECK_TIMEOUT" "$d/$n" --check >"$L/$n.check.log" 2>&1
		rc=$?
		echo "$rc" >"$L/$n.check.rc"
		if [ $first = 1 ] && [ $rc -eq 77 ]; then
			echo "== no GPU found ($n --check exits 77: $(tail -n 1 "$L/$n.check.log")): built, nothing ran"
			rm -f "$L/$n.check.rc" "$L/$n.check.log"
			return 0
		fi
		first=0
		local verdict="check ok"
		[ $rc -eq 0 ] || verdict="CHECK FAILED (exit $rc: $(grep -m 1 -iE 'error|mismatch|timed out' "$L/$n.check.log" | cut -c1-120))"
		limit "$BENCH_TIMEOUT" "$d/$n" --bench "$BENCH_N" >"$L/$n.bench.log" 2>&1
		echo "$?" >"$L/$n.bench.rc"
		local bench
		bench=$(sed -n 's/^bench: .*median \([0-9.]*\) us.*/\1 us/p' "$L/$n.bench.log")
		local pt=""
		if [ $torch = 1 ]; then
			# shellcheck disable=SC2086
			limit "$TORCH_TIMEOUT" "$PYTHON" "$ROOT/bench/torch_baseline.py" "$d/$n.json" --variants "$TORCH_VARIANTS" \
				$TORCH_ARGS --json "$L/$n.torch.json" >"$L/$n.torch.log" 2>&1
			rc=$?
			echo "$rc" >"$L/$n.torch.rc"
			if [ $rc -eq 77 ]; then
				echo "== PyTorch: $(tail -n 1 "$L/$n.torch.log"); no baselines for the rest"
				torch=0
			fi
			pt=", PyTorch $(sed -n 's/^\([a-z_]*\): *median \([0-9.]*\) us.*/\1 \2/p' "$L/$n.torch.log" | tr '\n' ' ')(exit $rc)"
		fi
		echo "== $n: $verdict, arkgen ${bench:-no bench line}$pt"
	done
	echo
	{ "$PYTHON" "$ROOT/bench/sweep.py" table "$out" --models "$d" --json "$out/sweep.json" 2>/dev/null ||
		python3 "$ROOT/bench/sweep.py" table "$out" --models "$d" --json "$out/sweep.json"; } | tee "$out/table.md"
	# one file for every log, for machines that hand back few files
	tar -C "$out" -czf "$out/logs.tar.gz" logs || return 1
	if [ "$PACK" = 1 ]; then
		rm -rf "$L"
		echo "== logs in $out/logs.tar.gz"
	else
		echo "== logs in $L and $out/logs.tar.gz"
	fi
}

case ${1:-} in -h | --help) usage 0 ;; esac
[ $# -ge 2 ] || usage 2
case $1 in
--build) build "$2" ;;
--run) run "$2" "${3:-$2/run}" ;;
--table)
	out=${3:-$2/run}
	[ -d "$out" ] || out=$2
	python3 "$ROOT/bench/sweep.py" table "$out" --models "$2"
	;;
*) usage 2 ;;
esac
