#!/bin/sh
# tests/gpu_stale.sh: generated binaries on one GPU under the conditions that make a stale read or a
# counter bug show: models/mlp.cfg and tests/models/splitk_chain.cfg (split-K workspaces, an
# elementwise chain) with --check and every counter starting just below 2^32 (--counter-base), the
# soak alternating input sets with outputs and internal buffers poisoned before every checked
# iteration, an iteration aborted half-way followed by a new session in the same process
# (--abort-reopen), and builds with -DARK_JITTER (random delays before every tile and signal). TAP;
# skips without a CUDA device.
#
#   tests/gpu_stale.sh              generates and builds the binaries (arkgen, nvcc), then runs them
#   tests/gpu_stale.sh --build DIR  only builds them into DIR (scripts/gpu-bundle.sh)
#   tests/gpu_stale.sh --bin DIR    runs binaries built by --build (the default when this script lies
#                                   in a bundle next to stale/: scripts/gpu-suite.sh)
# SOAK iterations (default 100000) for the soaks, checked every 1000th: SOAK=1000000 for the long one.
ARKGEN=${ARKGEN:-build/arkgen}
NVCC=${NVCC:-nvcc}
SOAK=${SOAK:-100000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODELS="mlp:$ROOT/models/mlp.cfg splitk_chain:$ROOT/tests/models/splitk_chain.cfg"

build_all() { # DIR: NAME and NAME_jitter of every model
	mkdir -p "$1" || return 1
	pids="" rc=0
	for nm in $MODELS; do
		n=${nm%%:*} cfg=${nm#*:}
		"$ARKGEN" "$cfg" -o "$1/$n.cu" > "$1/$n.report" || return 1
		for v in "" _jitter; do
			def=""
			[ -n "$v" ] && def=-DARK_JITTER
			# shellcheck disable=SC2046,SC2086
			"$NVCC" $("$ARKGEN" --nvcc-flags) $def -cudart shared "$1/$n.cu" -o "$1/$n$v" > "$1/$n$v.nvcc" 2>&1 &
			pids="$pids $!"
		done
	done
	for p in $pids; do wait "$p" || rc=1; done
	return $rc
}

if [ "${1:-}" = --build ]; then
	build_all "$2" || { echo "gpu_stale.sh: build failed (see $2/*.nvcc)" >&2; exit 1; }
	exit 0
fi
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
	echo "1..0 # SKIP no CUDA device"
	exit 0
fi
if [ "${1:-}" = --bin ]; then
	bin=$2
elif [ -z "${1:-}" ] && [ -x "$(dirname "$0")/../stale/mlp" ]; then
	bin=$(dirname "$0")/../stale
else
	if ! command -v "$NVCC" >/dev/null 2>&1 || [ ! -x "$ARKGEN" ]; then
		echo "1..0 # SKIP no nvcc or no $ARKGEN to build the models (or use --bin DIR)"
		exit 0
	fi
	bin=$(mktemp -d)
	trap 'rm -rf "$bin"' EXIT
	build_all "$bin" || { echo "1..1"; echo "not ok 1 - build of the models"; exit 1; }
fi

echo "1..10"
i=0
run() { # description, grep pattern the output must hold (or ""), command...
	what=$1 want=$2
	shift 2
	i=$((i + 1))
	log=$("$@" 2>&1)
	rc=$?
	if [ $rc -eq 0 ] && { [ -z "$want" ] || echo "$log" | grep -q "$want"; }; then
		echo "ok $i - $what"
		echo "$log" | grep -E "^soak:|aborted|us each" | sed 's/^/# /'
	else
		echo "not ok $i - $what (exit $rc)"
		echo "$log" | grep -vE ': ok$' | tail -40 | sed 's/^/# /'
	fi
}
# 0xfffffffe: every counter with 2 or more signals a iteration, and the done counter, wrap in
# iteration 1; 0xfffff000: the soak's counters wrap again and again
for n in mlp splitk_chain; do
	run "$n --check, counters from 2^32 - 2" "counters start at 4294967294" "$bin/$n" --check --counter-base 0xfffffffe
	run "$n --abort-reopen --check: an iteration aborted half-way, then a new session" \
		"a new session opened in the same process" "$bin/$n" --abort-reopen --check
	run "${n}_jitter --check (random delays before every tile and signal), counters from 2^32 - 2" "" \
		"$bin/${n}_jitter" --check --counter-base 0xfffffffe
done
run "splitk_chain --iterations $SOAK: 2 input sets alternating, poisoned buffers, every 1000th checked, counters from 2^32 - 4096" \
	"2 input sets alternating, $((SOAK / 1000)) checked, ok" \
	"$bin/splitk_chain" --iterations "$SOAK" --counter-base 0xfffff000 --timeout 10000
run "mlp --iterations $SOAK --input-sets 3" "3 input sets alternating, $((SOAK / 1000)) checked, ok" \
	"$bin/mlp" --iterations "$SOAK" --input-sets 3
run "splitk_chain_jitter --iterations $((SOAK / 10)), every 100th checked, counters from 2^32 - 4096" \
	"$((SOAK / 1000)) checked, ok" \
	"$bin/splitk_chain_jitter" --iterations $((SOAK / 10)) --check-every 100 --counter-base 0xfffff000 --timeout 10000
run "mlp_jitter --iterations $((SOAK / 10)), every 100th checked" "$((SOAK / 1000)) checked, ok" \
	"$bin/mlp_jitter" --iterations $((SOAK / 10)) --check-every 100
