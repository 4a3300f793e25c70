#!/usr/bin/env bash
# backends.sh [BUILD_DIR] [OUT_DIR]: the backend benchmark, one table, one run: every one-GPU model
# of models/ (and the shape sweep's, with SWEEP=DIR of bench/sweep.py gen), each as loop (counters),
# loop (--sync barrier), streams with every --stream-policy, graph with every policy (the table shows
# the best, named), dynamic, and PyTorch eager / CUDA graph / torch.compile (bench/torch_baseline.py on
# the loop build's schedule). Every binary is --check'ed before it is timed (--bench BENCH_N); a
# failed check shows as "FAIL" in its cell. Prints a markdown table (also OUT_DIR/backends.md) with
# the GPU's name, and the ratios of the best stream backend and of PyTorch's best to the loop kernel.
# Raw logs go to OUT_DIR. Without a GPU it builds, says so, and exits 0.
#
# Environment: ARKGEN (default BUILD_DIR/arkgen), NVCC, BENCH_N (1000), PYTHON (python3 with torch),
# TORCH_ARGS ("--iters 1000 --warmup 100"), MODELS (names in models/, default: every one-GPU model),
# SWEEP (a folder of sweep models, *.cfg, added to the models), POLICIES (default: all six), JOBS
# (parallel nvcc, default the CPUs), CHECK_JOBS (binaries --check'ed at a time, default 4: the CPU
# reference is the slow part), SKIP_BUILD=1 (reuse OUT_DIR's binaries; without it, a binary whose
# generated file is unchanged is kept, so a build cut short goes on where it stopped), RESUME=1 (a
# model measured to the end by an earlier run in OUT_DIR, on the same GPU, is not run again).
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-build}
OUT=${2:-$B/bench-backends}
ARKGEN=${ARKGEN:-$B/arkgen}
NVCC=${NVCC:-nvcc}
BENCH_N=${BENCH_N:-1000}
PYTHON=${PYTHON:-python3}
TORCH_ARGS=${TORCH_ARGS:---iters 1000 --warmup 100}
POLICIES=${POLICIES:-xla single wavefront asap ios nnc}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
SKIP_BUILD=${SKIP_BUILD:-0}
CHECK_JOBS=${CHECK_JOBS:-4}
RESUME=${RESUME:-0}

. "$ROOT/bench/lib.sh" # die, usage, limit

mkdir -p "$OUT" || die "cannot create $OUT"
cfgs=""
if [ -n "${MODELS:-}" ]; then
	for m in $MODELS; do
		[ -f "$ROOT/models/$m.cfg" ] || die "MODELS: no models/$m.cfg (MODELS names files of models/; SWEEP=DIR adds others)"
		cfgs="$cfgs $ROOT/models/$m.cfg"
	done
else
	for m in "$ROOT"/models/*.cfg; do grep -q '^ *gpus *= *[2-9]' "$m" || cfgs="$cfgs $m"; done
fi
if [ -n "${SWEEP:-}" ]; then
	for m in "$SWEEP"/*.cfg; do [ -f "$m" ] && cfgs="$cfgs $m"; done
fi
[ -n "$cfgs" ] || die "no models"

# VARIANT ARKGEN_OPTIONS, one per line
variants() {
	echo "loop_counters --backend loop"
	echo "loop_barrier --backend loop --sync barrier"
	for p in $POLICIES; do echo "streams_$p --backend streams --stream-policy $p"; done
	for p in $POLICIES; do echo "graph_$p --backend graph --stream-policy $p"; done
	echo "dynamic --backend dynamic"
}

# ---- build -----------------------------------------------------------------------------------
names=""
for cfg in $cfgs; do names="$names $(basename "$cfg" .cfg)"; done
if [ "$SKIP_BUILD" != 1 ]; then
	[ -x "$ARKGEN" ] || die "no arkgen at $ARKGEN"
	command -v "$NVCC" >/dev/null 2>&1 || die "no nvcc ('$NVCC')"
	flags=$("$ARKGEN" --nvcc-flags) || die "$ARKGEN --nvcc-flags failed"
	running=0 failed=0
	for cfg in $cfgs; do
		m=$(basename "$cfg" .cfg)
		while read -r v opts; do
			x=${m}__$v
			extra=""
			[ "$v" = loop_counters ] && extra="--schedule $OUT/$m.json"
			# shellcheck disable=SC2086
			"$ARKGEN" "$cfg" $opts $extra -o "$OUT/$x.cu.new" >"$OUT/$x.arkgen.log" 2>&1 || { echo "arkgen failed: $x" >&2; failed=1; continue; }
			# a binary built from the same generated file is kept (a run cut short goes on where it stopped)
			if [ -x "$OUT/$x" ] && cmp -s "$OUT/$x.cu.new" "$OUT/$x.cu"; then
				rm -f "$OUT/$x.cu.new"
				continue
			fi
			rm -f "$OUT/$x" "$OUT/$m.done" # rebuilt: measured again
			mv "$OUT/$x.cu.new" "$OUT/$x.cu"
			# shellcheck disable=SC2086
			{ "$NVCC" $flags "$OUT/$x.cu" -o "$OUT/$x.part" >"$OUT/$x.nvcc.log" 2>&1 && mv "$OUT/$x.part" "$OUT/$x"; } &
			running=$((running + 1))
			if [ $running -ge "$JOBS" ]; then # the next build starts as soon as one ends
				wait -n || failed=1
				running=$((running - 1))
			fi
		done < <(variants)
	done
	while [ $running -gt 0 ]; do
		wait -n || failed=1
		running=$((running - 1))
	done
	[ $failed = 0 ] || die "a build failed (see $OUT/*.nvcc.log, *.arkgen.log)"
fi

# ---- run -------------------------------------------------------------------------------------
# check: CHECK_JOBS binaries at a time (the CPU reference is the slow part; nothing is timed)
check() { # X
	limit 600 "$OUT/$1" --check >"$OUT/$1.check.log" 2>&1
	echo $? >"$OUT/$1.check.rc"
}
first=1
for m in $names; do
	if [ "$RESUME" = 1 ] && [ -f "$OUT/$m.done" ]; then
		echo "== $m: measured before (RESUME=1)"
		continue
	fi
	pids="" running=0
	while read -r v _; do
		x=${m}__$v
		if [ $first = 1 ]; then
			check "$x"
			if [ "$(cat "$OUT/$x.check.rc")" = 77 ]; then
				echo "== no GPU found ($x --check exits 77): built, nothing ran"
				exit 0
			fi
			first=0
			continue
		fi
		check "$x" &
		pids="$pids $!"
		running=$((running + 1))
		if [ $running -ge "$CHECK_JOBS" ]; then
			for p in $pids; do wait "$p"; done
			pids="" running=0
		fi
	done < <(variants)
	for p in $pids; do wait "$p"; done
	while read -r v _; do
		x=${m}__$v
		limit 300 "$OUT/$x" --bench "$BENCH_N" >"$OUT/$x.bench.log" 2>&1
		echo "== $x: check exit $(cat "$OUT/$x.check.rc"); $(grep '^bench:' "$OUT/$x.bench.log" || echo 'no bench line')"
	done < <(variants)
	# shellcheck disable=SC2086
	limit 600 "$PYTHON" "$ROOT/bench/torch_baseline.py" "$OUT/$m.json" $TORCH_ARGS --json "$OUT/$m.torch.json" \
		>"$OUT/$m.torch.log" 2>&1 || echo "== PyTorch $m failed: $(tail -n 1 "$OUT/$m.torch.log")"
	touch "$OUT/$m.done"
done
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 >"$OUT/gpu.txt"

# ---- the table -------------------------------------------------------------------------------
python3 - "$OUT" "$POLICIES" $names <<'EOF' | tee "$OUT/backends.md"
import json, os, re, sys
out, policies, models = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
BENCH = re.compile(r"^bench: \d+ iterations after \d+ warm-up: median ([0-9.]+) us")
def cell(m, v):
	x = os.path.join(out, "%s__%s" % (m, v))
	try:
		rc = int(open(x + ".check.rc").read())
	except OSError:
		return None, "n/a"
	med = None
	try:
		for line in open(x + ".bench.log"):
			r = BENCH.match(line)
			if r:
				med = float(r.group(1))
	except OSError:
		pass
	if rc != 0:
		return None, "FAIL"
	return med, "%.1f" % med if med is not None else "n/a"
gpu = open(os.path.join(out, "gpu.txt")).read().strip() if os.path.exists(os.path.join(out, "gpu.txt")) else "?"
head = ["model", "loop counters", "loop barrier"] + ["streams %s" % p for p in policies] + ["graph (best)", "dynamic",
	"torch eager", "torch graph", "torch compile", "best stream / loop", "best torch / loop"]
print("Median latency per iteration, us, batch as in each model; GPU: %s\n" % gpu)
print("| " + " | ".join(head) + " |")
print("|" + "---|" * len(head))
for m in models:
	loop, lc = cell(m, "loop_counters")
	row = [m, lc, cell(m, "loop_barrier")[1]]
	best = None
	for p in policies:
		t, c = cell(m, "streams_" + p)
		row.append(c)
		best = t if t is not None and (best is None or t < best) else best
	g = [(cell(m, "graph_" + p)[0], p) for p in policies]
	g = [x for x in g if x[0] is not None]
	gb = min(g) if g else None
	row.append("%.1f (%s)" % gb if gb else "n/a")
	best = gb[0] if gb and (best is None or gb[0] < best) else best
	t, c = cell(m, "dynamic")
	row.append(c)
	best = t if t is not None and (best is None or t < best) else best
	tb = None
	try:
		tj = json.load(open(os.path.join(out, m + ".torch.json")))
	except (OSError, ValueError):
		tj = {}
	for v in ("eager", "graph", "compile"):
		r = tj.get(v) or {}
		med = r.get("median_us")
		row.append("%.1f" % med if med is not None else "n/a")
		if med is not None and r.get("matches_eager") is not False:
			tb = med if tb is None or med < tb else tb
	row.append("%.2fx" % (best / loop) if best and loop else "n/a")
	row.append("%.2fx" % (tb / loop) if tb and loop else "n/a")
	print("| " + " | ".join(row) + " |")
EOF
