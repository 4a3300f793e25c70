#!/bin/sh
# comm.sh: runs the GPU-to-GPU communication benchmarks (built by `make bench-comm`) and tees their
# output. Usage: bench/comm.sh [BUILD_DIR] [bench_comm options...]; the log goes to $LOG (default
# BUILD_DIR/bench/comm.log). Builds nothing. Exits 0 with a SKIP line on fewer than 2 GPUs, else
# with the first failing benchmark's status.
B=${1:-build}
[ $# -gt 0 ] && shift
LOG=${LOG:-$B/bench/comm.log}

for bin in "$B/bench/bench_comm" "$B/bench/bench_nccl"; do
	if [ ! -x "$bin" ]; then
		echo "comm.sh: $bin not built (run: make bench-comm)" >&2
		exit 1
	fi
done

# GPUs the programs will see: nvidia-smi's list, narrowed by CUDA_VISIBLE_DEVICES. Without
# nvidia-smi the programs decide (each prints its own SKIP line on fewer than 2 GPUs).
n=2
if command -v nvidia-smi >/dev/null 2>&1; then
	n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
	if [ -n "${CUDA_VISIBLE_DEVICES+x}" ]; then
		v=$(printf '%s' "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c .)
		[ "$v" -lt "$n" ] && n=$v
	fi
fi
if [ "$n" -lt 2 ]; then
	echo "SKIP: fewer than 2 GPUs ($n)"
	exit 0
fi

mkdir -p "$(dirname "$LOG")"
: >"$LOG"
status=0
run() {
	echo "## $*" | tee -a "$LOG"
	# the status of the benchmark, not of tee
	{ "$@" 2>&1; echo $? >"$LOG.rc"; } | tee -a "$LOG"
	rc=$(cat "$LOG.rc")
	rm -f "$LOG.rc"
	if [ "$rc" -ne 0 ]; then
		echo "comm.sh: $1 exited with status $rc" | tee -a "$LOG"
		[ "$status" -eq 0 ] && status=$rc
	fi
}
export NCCL_NVLS_ENABLE="${NCCL_NVLS_ENABLE:-0}"
run "$B/bench/bench_comm" "$@"
# shellcheck disable=SC2086 # NCCL_ARGS is a list of options
run "$B/bench/bench_nccl" ${NCCL_ARGS:-}
echo "comm.sh: log in $LOG" >&2
exit "$status"
