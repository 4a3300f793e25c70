#!/bin/sh
# gpu-suite-multi.sh [DIR]: on a machine with 2 or more GPUs, runs the multi-GPU tests of a bundle made
# by gpu-bundle.sh (tests/gpu_comm.sh on the binaries of DIR/gen-multi: copy, all_reduce, all_gather
# over every transport and size, the tensor-parallel MLPs with --check and a soak), then a benchmark of
# the TP models (and a trace of mlp_tp2), the DMA engine's host call costs (bench_comm --api), the
# transport benchmarks (COMM_ARGS: extra bench_comm options, e.g. --flags both) and the all_reduce
# against NCCL; logs to $OUT (default ./gpu-out).
set -u
D=${1:-.devcarry}
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/$D/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi -L | tee "$OUT/gpus.txt"
nvidia-smi topo -m > "$OUT/topo.txt" 2>&1
echo "== multi-GPU tests"
sh "$D/gpu_comm.sh" --bin "$D/gen-multi" > "$OUT/gpu_comm.log" 2>&1; echo "gpu_comm exit $?"
grep -E "^(not )?ok|^1\.\." "$OUT/gpu_comm.log"
echo "== TP models: --bench 1000"
for b in "$D"/gen-multi/mlp_tp2 "$D"/gen-multi/mlp_tp4; do
	[ -x "$b" ] || continue
	timeout 120 "$b" --bench 1000 > "$OUT/bench_$(basename "$b").log" 2>&1
	echo "$(basename "$b"): $(grep -iE 'median|error' "$OUT/bench_$(basename "$b").log" | tr '\n' ' ' | cut -c1-300)"
done
[ -x "$D/gen-multi/mlp_tp2" ] && timeout 120 "$D/gen-multi/mlp_tp2" --trace "$OUT/mlp_tp2.trace.json" > /dev/null 2>&1 &&
	echo "mlp_tp2 trace: $OUT/mlp_tp2.trace.json"
echo "== GPU-to-GPU transports (bench_comm) and ncclAllReduce (bench_nccl)"
if [ -x "$D/bench/bench_comm" ] && [ -x "$D/bench/bench_nccl" ]; then
	timeout 300 "$D/bench/bench_comm" --api > "$OUT/api.log" 2>&1; echo "bench_comm --api exit $?"
	grep -E '^\|' "$OUT/api.log"
	# shellcheck disable=SC2086 # a list of options
	LOG="$OUT/comm.log" sh bench/comm.sh "$D" ${COMM_ARGS:-} > "$OUT/comm.stdout" 2>&1; echo "comm.sh exit $?"
	grep -E '^\||crossover|SKIP|FAIL' "$OUT/comm.log" | head -80
fi
echo "== arkgen all_reduce (bench/allreduce.sh)"
ngpu=$(nvidia-smi -L | grep -c '^GPU')
for n in 2 4; do
	for alg in ar ar2ph arst; do # default, two-phase (--oneshot-max 0), no packets (--ll-max 0)
		[ "$ngpu" -ge $n ] && [ -x "$D/$alg/ar${n}_4096" ] || continue
		echo "-- $n GPUs, $alg"
		sh bench/allreduce.sh --bin "$D/$alg" $n | tee "$OUT/${alg}_$n.txt"
	done
done
