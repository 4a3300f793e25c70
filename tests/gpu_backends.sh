#!/bin/sh
# tests/gpu_backends.sh: every one-GPU model of models/ and tests/models/ built with every multi-stream
# backend and stream policy (--backend streams and graph with each --stream-policy, dynamic) and
# --check'ed on the GPU: fresh random inputs, outputs and internal buffers poisoned first, compared
# with the CPU reference. The dynamic binaries run again under random issue delays
# (ARK_DYNAMIC_DELAY_US, three seeds) and in a soak of alternating inputs. TAP; skips without a CUDA
# device.
#
#   tests/gpu_backends.sh              generates and builds the binaries (arkgen, nvcc), then runs them
#   tests/gpu_backends.sh --build DIR  only builds them into DIR (scripts/gpu-bundle.sh)
#   tests/gpu_backends.sh --bin DIR    runs binaries built by --build (the default when this script
#                                      lies in a bundle next to backends/: scripts/gpu-suite.sh)
# POLICIES (default: every one) narrows the policies; JOBS (default: the CPUs) the parallel nvcc builds.
ARKGEN=${ARKGEN:-build/arkgen}
NVCC=${NVCC:-nvcc}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
POLICIES=${POLICIES:-xla single wavefront asap ios nnc}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}

# the models on one GPU (the stream backends refuse the others)
models() {
	for m in "$ROOT"/models/*.cfg "$ROOT"/tests/models/*.cfg; do
		grep -q '^ *gpus *= *[2-9]' "$m" || echo "$m"
	done
}

# NAME BACKEND POLICY: the variants, one per line
variants() {
	for m in $(models); do
		n=$(basename "$m" .cfg)
		for p in $POLICIES; do
			echo "$m ${n}__streams_$p streams $p"
			echo "$m ${n}__graph_$p graph $p"
		done
		echo "$m ${n}__dynamic dynamic xla"
	done
}

build_all() { # DIR
	mkdir -p "$1" || return 1
	rc=0 running=0 pids=""
	variants > "$1/variants"
	while read -r cfg name backend policy; do
		"$ARKGEN" "$cfg" --backend "$backend" --stream-policy "$policy" -o "$1/$name.cu" > "$1/$name.report" 2>&1 || {
			echo "gpu_backends.sh: arkgen failed on $name (see $1/$name.report)" >&2
			rc=1
			continue
		}
		# shellcheck disable=SC2046
		"$NVCC" $("$ARKGEN" --nvcc-flags) -cudart shared "$1/$name.cu" -o "$1/$name" > "$1/$name.nvcc" 2>&1 &
		pids="$pids $!"
		running=$((running + 1))
		if [ "$running" -ge "$JOBS" ]; then
			for p in $pids; do wait "$p" || rc=1; done
			pids="" running=0
		fi
	done < "$1/variants"
	for p in $pids; do wait "$p" || rc=1; done
	return $rc
}

if [ "${1:-}" = --build ]; then
	build_all "$2" || { echo "gpu_backends.sh: build failed (see $2/*.nvcc)" >&2; exit 1; }
	exit 0
fi
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
	echo "1..0 # SKIP no CUDA device"
	exit 0
fi
if [ "${1:-}" = --bin ]; then
	bin=$2
elif [ -z "${1:-}" ] && [ -f "$(dirname "$0")/../backends/variants" ]; then
	bin=$(dirname "$0")/../backends # in a bundle of scripts/gpu-bundle.sh
else
	if ! command -v "$NVCC" >/dev/null 2>&1 || [ ! -x "$ARKGEN" ]; then
		echo "1..0 # SKIP no nvcc or no $ARKGEN to build the models (or use --bin DIR)"
		exit 0
	fi
	bin=$(mktemp -d)
	trap 'rm -rf "$bin"' EXIT
	build_all "$bin" || { echo "1..1"; echo "not ok 1 - build of the variants"; exit 1; }
fi

i=0
n_var=$(wc -l < "$bin/variants")
n_dyn=$(grep -c '__dynamic ' "$bin/variants")
echo "1..$((n_var + 4 * n_dyn + 1))"
ok() { i=$((i + 1)); echo "ok $i - $1"; }
nok() { i=$((i + 1)); echo "not ok $i - $1"; sed 's/^/# /' "$2" | tail -20; }
while read -r cfg name backend policy; do
	if [ ! -x "$bin/$name" ]; then
		i=$((i + 1)); echo "not ok $i - $name: not built"
		continue
	fi
	if "$bin/$name" --check > "$bin/$name.run" 2>&1; then
		ok "$name: --check"
	else
		nok "$name: --check" "$bin/$name.run"
	fi
	[ "$backend" = dynamic ] || continue
	for seed in 1 2 3; do
		if ARK_DYNAMIC_DELAY_US=20 ARK_DYNAMIC_SEED=$seed "$bin/$name" --check > "$bin/$name.delay$seed" 2>&1; then
			ok "$name: --check under random issue delays (0..20 us, seed $seed)"
		else
			nok "$name: --check under random issue delays (seed $seed)" "$bin/$name.delay$seed"
		fi
	done
	if ARK_DYNAMIC_DELAY_US=5 "$bin/$name" --iterations 2000 --check-every 100 > "$bin/$name.soak" 2>&1; then
		ok "$name: soak of 2000 iterations on alternating inputs under issue delays"
	else
		nok "$name: soak under issue delays" "$bin/$name.soak"
	fi
done < "$bin/variants"
# the trace of a stream backend: one span per task
first=$(awk '$3 == "streams" { print $2; exit }' "$bin/variants")
if "$bin/$first" --trace "$bin/trace.json" > "$bin/trace.run" 2>&1 && grep -q '"ph"' "$bin/trace.json"; then
	ok "$first: --trace writes a Chrome trace of the op kernels' tasks"
else
	nok "$first: --trace" "$bin/trace.run"
fi
