#!/bin/sh
# gpu-bundle.sh [DIR]: builds, on a machine with nvcc but perhaps no GPU, everything the GPU suite
# runs (generated binaries of every model, with counters and with grid barriers, and the GPU tests)
# into DIR (default .devcarry), with the shared libraries they need, to be run by gpu-suite.sh.
set -eu
D=${1:-.devcarry}
B=${B:-build}
NVCC=${NVCC:-nvcc}
rm -rf "$D"
mkdir -p "$D/gen" "$D/tests" "$D/lib"
cp -L /usr/lib/x86_64-linux-gnu/libcjson.so.1 "$D/lib/"
for m in models/*.cfg; do
	n=$(basename "$m" .cfg)
	# models on several GPUs: built below by tests/gpu_comm.sh, run by gpu-suite-multi.sh
	grep -qE '^ *gpus *= *[2-9]' "$m" && continue
	for sync in counters barrier; do
		out="$D/gen/${n}_$sync"
		"$B/arkgen" "$m" --sync "$sync" -o "$out.cu" > "$out.report"
		# shellcheck disable=SC2046
		"$NVCC" $("$B/arkgen" --nvcc-flags) -cudart shared "$out.cu" -o "$out"
		rm "$out.cu"
	done
done
ARKGEN="$B/arkgen" NVCC="$NVCC" tests/gpu_comm.sh --build "$D/gen-multi"
rm -f "$D"/gen-multi/*.cu
cp tests/gpu_comm.sh "$D/"
for t in "$B"/tests/gpu_*; do
	case "$t" in *.d) continue ;; esac
	cp "$t" "$D/tests/"
done
strip "$D"/gen/* "$D"/gen-multi/* "$D"/tests/* 2>/dev/null || true
du -sh "$D"
