#!/bin/sh
# gpu-suite.sh [DIR]: on the GPU machine, runs every GPU test and benchmark of a bundle made by
# gpu-bundle.sh, writing logs to $OUT (default ./gpu-out) and a summary table last.
# SOAK_N (default 100000): iterations of the soak of tests/models/splitk_chain.cfg (split-K and an
# elementwise chain; input sets alternating, buffers poisoned, every 1000th checked, counters from
# 2^32 - 4096); SOAK_N=1000000 for the long soak. SOAK (default 100000): tests/gpu_stale.sh's soaks.
set -u
SOAK_N=${SOAK_N:-100000}
D=${1:-.devcarry}
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/$D/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi -L | tee "$OUT/gpu.txt"
echo "== GPU tests"
prove -v "$D"/tests/gpu_* > "$OUT/gpu_tests.log" 2>&1; echo "prove exit $?"; grep -E "^not ok|^ok|^Result|SKIP" "$OUT/gpu_tests.log" | tail -80
echo "== models: --check (two iterations, fresh inputs, poisoned outputs)"
for b in "$D"/gen/*_counters "$D"/gen/*_barrier; do
	case "$b" in *.report) continue ;; esac
	timeout 120 "$b" --check > "$OUT/check_$(basename "$b").log" 2>&1; rc=$?
	echo "$(basename "$b"): check exit $rc: $(grep -E 'rel err|MISMATCH|error' "$OUT/check_$(basename "$b").log" | tr '\n' ' ' | cut -c1-300)"
done
echo "== embedding: an id out of range (embed_views_bad_ids.safetensors: id 101 of a 101-row table) aborts the iteration"
for b in "$D"/gen/embed_views_counters "$D"/gen/embed_views_barrier; do
	[ -x "$b" ] || continue
	log="$OUT/bad_ids_$(basename "$b").log"
	timeout 60 "$b" --inputs "$D/embed_views_bad_ids.safetensors" --outputs "$OUT/bad_ids.safetensors" > "$log" 2>&1; rc=$?
	if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "read index 101, outside 0 to 100" "$log" &&
	   grep -q "row 4 of its output has index 101" "$log"; then
		echo "$(basename "$b"): bad ids: ok (exit $rc, the task and the id named)"
	else
		echo "$(basename "$b"): bad ids: FAILED (exit $rc): $(tr '\n' ' ' < "$log" | cut -c1-300)"
	fi
done
echo "== generation (tests/models/tokens.cfg): 10,000 steps from one doorbell, then the same with one doorbell per step"
if [ -x "$D/gen/tokens_counters" ]; then
	printf '5 9 2\n' > "$OUT/prompt.txt"
	timeout 120 "$D/gen/tokens_counters" --generate 10000 --prompt-ids "$OUT/prompt.txt" --doorbell-per-token \
		--tokens-out "$OUT/tokens.txt" > "$OUT/generate.log" 2>&1; rc=$?
	echo "tokens: generate exit $rc: $(grep -E '^generate|error' "$OUT/generate.log" | tr '\n' ' ' | cut -c1-400)"
fi
echo "== models: --bench 1000"
for b in "$D"/gen/*_counters "$D"/gen/*_barrier; do
	case "$b" in *.report) continue ;; esac
	timeout 120 "$b" --bench 1000 > "$OUT/bench_$(basename "$b").log" 2>&1
	echo "$(basename "$b"): $(grep -iE 'median|error' "$OUT/bench_$(basename "$b").log" | tr '\n' ' ' | cut -c1-300)"
done
for b in mlp_counters chain64_counters; do
	timeout 60 "$D/gen/$b" --bench-empty 1000 > "$OUT/empty_$b.log" 2>&1
	echo "$b: $(grep -iE 'median|error' "$OUT/empty_$b.log" | tr '\n' ' ' | cut -c1-300)"
done
echo "== soak: 100000 iterations of mlp, 2 input sets alternating, every 1000th checked"
timeout 300 "$D/gen/mlp_counters" --iterations 100000 > "$OUT/soak.log" 2>&1; echo "soak exit $?: $(tail -3 "$OUT/soak.log" | tr '\n' ' ')"
echo "== soak: $SOAK_N iterations of splitk_chain (split-K, a chain), every 1000th checked, counters from 2^32 - 4096"
timeout $((SOAK_N / 1000 + 300)) "$D/gen/splitk_chain_counters" --iterations "$SOAK_N" --counter-base 0xfffff000 --timeout 10000 \
	> "$OUT/soak_splitk_chain.log" 2>&1
echo "soak splitk_chain exit $?: $(grep -E '^soak|MISMATCH|error' "$OUT/soak_splitk_chain.log" | tail -3 | tr '\n' ' ')"
echo "== jitter builds (-DARK_JITTER: random delays before every tile and signal): --check"
for b in "$D"/stale/*_jitter; do
	[ -x "$b" ] || continue
	timeout 120 "$b" --check --counter-base 0xfffffffe > "$OUT/check_$(basename "$b").log" 2>&1; rc=$?
	echo "$(basename "$b"): check exit $rc: $(grep -E 'rel err|MISMATCH|error' "$OUT/check_$(basename "$b").log" | tr '\n' ' ' | cut -c1-300)"
done
echo "== trace"
"$D/gen/mlp_counters" --trace "$OUT/mlp_trace.json" > "$OUT/trace.log" 2>&1; echo "trace exit $?: $(wc -c < "$OUT/mlp_trace.json") bytes"
echo "== compute-sanitizer"
for m in mlp chain64 chains; do
	for tool in memcheck racecheck; do
		timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 "$D/gen/${m}_counters" --check > "$OUT/sanitizer_${m}_$tool.log" 2>&1
		echo "$m $tool exit $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/sanitizer_${m}_$tool.log" | tr '\n' ' ')"
	done
done
if [ -x "$D/bench/stream_probe" ]; then
	echo "== weight-streaming probe"
	"$D/bench/stream_probe" | tee "$OUT/stream_probe.log"
fi
