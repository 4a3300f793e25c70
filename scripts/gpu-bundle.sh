#!/bin/sh
# gpu-bundle.sh [DIR]: builds, on a machine with nvcc but perhaps no GPU, everything the GPU suite
# runs into DIR (default .devcarry), with the shared libraries they need, to be run by gpu-suite.sh:
# the generated binaries of every model in models/ and tests/models/, with counters and with grid
# barriers (DIR/gen/NAME_SYNC, with the schedule as NAME_SYNC.json; the barrier builds run every
# elementwise chain on the template that reads its steps, -DARK_CHAIN_TEMPLATE, the counter builds
# the chains compiled with their steps), the binaries of tests/gpu_stale.sh
# (DIR/stale: mlp and splitk_chain, also built with -DARK_JITTER) and of tests/gpu_backends.sh
# (DIR/backends: every one-GPU model with every stream backend and policy), the GPU tests, and the benchmark
# programs, and bench/allreduce.sh's models on 2 GPUs (DIR/ar: default algorithm, DIR/ar2ph: two-phase,
# DIR/arst: one-shot with stores and flags instead of packets, up to 1 MiB).
# MULTI_ONLY=1 leaves out the single-GPU models and tests; SINGLE_ONLY=1 the multi-GPU models and
# bench/allreduce.sh's; SKIP_BACKENDS=1 the stream backends' binaries. The nvcc jobs run in parallel (JOBS, default: the number of CPUs).
# It can also run on the GPU machine itself (more CPUs for nvcc), given build/, the shared
# libraries arkgen loads (libconfig, libmetis) and libcjson.so.1 on LD_LIBRARY_PATH, and a
# libcjson.so to link with on LIBRARY_PATH.
set -eu
D=${1:-.devcarry}
B=${B:-build}
NVCC=${NVCC:-nvcc}
JOBS=${JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)}
rm -rf "$D"
mkdir -p "$D/gen" "$D/tests" "$D/lib" "$D/bench"
# The shared library $1 as the loader finds it: LD_LIBRARY_PATH first, then its cache.
find_lib() {
	ifs=$IFS
	IFS=:
	for d in ${LD_LIBRARY_PATH:-}; do
		if [ -n "$d" ] && [ -e "$d/$1" ]; then
			IFS=$ifs
			echo "$d/$1"
			return 0
		fi
	done
	IFS=$ifs
	ldconfig -p 2>/dev/null | awk -v n="$1" '$1 == n { print $NF; exit }'
}
cjson=$(find_lib libcjson.so.1)
[ -n "$cjson" ] || { echo "gpu-bundle: no libcjson.so.1 (install libcjson1, or put it on LD_LIBRARY_PATH)" >&2; exit 1; }
cp -L "$cjson" "$D/lib/"
flags=$("$B/arkgen" --nvcc-flags)
running=0
for m in models/*.cfg tests/models/*.cfg; do
	[ "${MULTI_ONLY:-0}" = 1 ] && break
	n=$(basename "$m" .cfg)
	# models on several GPUs: built below by tests/gpu_comm.sh, run by gpu-suite-multi.sh
	grep -qE '^ *gpus *= *[2-9]' "$m" && continue
	for sync in counters barrier; do
		out="$D/gen/${n}_$sync"
		"$B/arkgen" "$m" --sync "$sync" --schedule "$out.json" -o "$out.cu" > "$out.report"
		chains=
		[ "$sync" = barrier ] && chains=-DARK_CHAIN_TEMPLATE
		# shellcheck disable=SC2086
		(if "$NVCC" $flags $chains -cudart shared "$out.cu" -o "$out" 2> "$out.nvcc.log"; then rm -f "$out.cu" "$out.nvcc.log"; \
		 else echo "nvcc failed on $out.cu: see $out.nvcc.log" >&2; fi) &
		running=$((running + 1))
		if [ "$running" -ge "$JOBS" ]; then
			wait
			running=0
		fi
	done
done
wait
ls "$D"/gen/*.nvcc.log >/dev/null 2>&1 && { echo "gpu-bundle: an nvcc job failed" >&2; exit 1; }
if [ "${MULTI_ONLY:-0}" != 1 ]; then
	ARKGEN="$B/arkgen" NVCC="$NVCC" tests/gpu_stale.sh --build "$D/stale"
	rm -f "$D"/stale/*.cu
	if [ "${SKIP_BACKENDS:-0}" != 1 ]; then
		ARKGEN="$B/arkgen" NVCC="$NVCC" tests/gpu_backends.sh --build "$D/backends"
		rm -f "$D"/backends/*.cu
	fi
fi
if [ "${SINGLE_ONLY:-0}" != 1 ]; then
ARKGEN="$B/arkgen" NVCC="$NVCC" tests/gpu_comm.sh --build "$D/gen-multi"
rm -f "$D"/gen-multi/*.cu
ARKGEN="$B/arkgen" NVCC="$NVCC" sh bench/allreduce.sh --build "$D/ar" 2
ARKGEN="$B/arkgen" NVCC="$NVCC" ARKGEN_FLAGS="--oneshot-max 0" sh bench/allreduce.sh --build "$D/ar2ph" 2
ARKGEN="$B/arkgen" NVCC="$NVCC" ARKGEN_FLAGS="--ll-max 0" SIZES="4096 65536 262144 1048576" \
	sh bench/allreduce.sh --build "$D/arst" 2
fi
cp tests/gpu_comm.sh "$D/"
cp tests/models/embed_views_bad_ids.safetensors "$D/" # an id out of range: gpu-suite.sh expects the abort
[ "${MULTI_ONLY:-0}" = 1 ] || cp tests/gpu_stale.sh "$D/tests/"
for t in "$B"/tests/gpu_*; do
	[ "${MULTI_ONLY:-0}" = 1 ] && break
	case "$t" in *.d) continue ;; esac
	cp "$t" "$D/tests/"
done
for t in "$B"/bench/bench_comm "$B"/bench/bench_nccl "$B"/bench/stream_probe; do
	[ -x "$t" ] && cp "$t" "$D/bench/"
done
strip "$D"/gen/*_counters "$D"/gen/*_barrier "$D"/stale/mlp* "$D"/stale/splitk_chain* "$D"/gen-multi/* "$D"/ar*/ar?_* "$D"/tests/* "$D"/bench/* 2>/dev/null || true
du -sh "$D"
