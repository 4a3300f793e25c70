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
	for sync in counters barrier; do
		out="$D/gen/${n}_$sync"
		"$B/arkgen" "$m" --sync "$sync" -o "$out.cu" > "$out.report"
		# shellcheck disable=SC2046
		"$NVCC" $("$B/arkgen" --nvcc-flags) -cudart shared "$out.cu" -o "$out"
		rm "$out.cu"
	done
done
for t in "$B"/tests/gpu_*; do
	case "$t" in *.d) continue ;; esac
	cp "$t" "$D/tests/"
done
strip "$D"/gen/* "$D"/tests/* 2>/dev/null || true
du -sh "$D"
