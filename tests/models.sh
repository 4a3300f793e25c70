#!/bin/sh
# tests/models.sh: every model in models/ generates twice to the same bytes, the small ones match
# their golden files (tests/golden, regenerated only by `make golden`, both with the analytic costs:
# --gpu analytic, whatever calibration table is the default), and each generated file compiles with
# nvcc (arkgen --nvcc-flags: the ARCH arkgen was built for) and links into a binary that, without a
# GPU, says so and exits 77.
# Set ARK_SKIP_NVCC=1 to leave the nvcc builds out (the sanitized run does: they do not change).
ARKGEN=${ARKGEN:-build/arkgen}
NVCC=${NVCC:-nvcc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
i=0
ok() { i=$((i + 1)); echo "ok $i - $1"; }
nok() { i=$((i + 1)); echo "not ok $i - $1"; }
models=$(ls models/*.cfg)
n=$(echo "$models" | wc -l)
golden=$(ls tests/golden/*.cu 2>/dev/null | wc -l)
echo "1..$((3 * n + golden))"
for m in $models; do
	name=$(basename "$m" .cfg)
	if "$ARKGEN" "$m" -o "$tmp/$name.cu" >"$tmp/$name.out" 2>&1 &&
		"$ARKGEN" "$m" -o "$tmp/$name.2.cu" >/dev/null 2>&1 && cmp -s "$tmp/$name.cu" "$tmp/$name.2.cu"; then
		ok "$name: generated, byte-identical twice"
	else
		nok "$name: generated, byte-identical twice"; sed 's/^/# /' "$tmp/$name.out"
	fi
	if grep -q "predicted latency [0-9.]* us" "$tmp/$name.out"; then
		ok "$name: report gives the predicted latency"
	else
		nok "$name: report gives the predicted latency"
	fi
	if [ "${ARK_SKIP_NVCC:-0}" = 1 ] || ! command -v "$NVCC" >/dev/null 2>&1; then
		i=$((i + 1)); echo "ok $i # SKIP $name: nvcc build (ARK_SKIP_NVCC=1 or no nvcc)"
		continue
	fi
	# shellcheck disable=SC2046
	if "$NVCC" $("$ARKGEN" --nvcc-flags) -cudart shared "$tmp/$name.cu" -o "$tmp/$name" >"$tmp/$name.nvcc" 2>&1; then
		"$tmp/$name" --check >"$tmp/$name.run" 2>&1
		rc=$?
		if [ $rc -eq 77 ] && grep -q "no CUDA device" "$tmp/$name.run"; then
			ok "$name: nvcc build; without a GPU the binary says so, exit 77"
		elif [ $rc -eq 0 ]; then
			ok "$name: nvcc build; --check passed on this GPU"
		else
			nok "$name: binary exit $rc"; sed 's/^/# /' "$tmp/$name.run"
		fi
	else
		nok "$name: nvcc build"; sed 's/^/# /' "$tmp/$name.nvcc" | head -30
	fi
done
for gf in tests/golden/*.cu; do
	[ -e "$gf" ] || continue
	name=$(basename "$gf" .cu)
	"$ARKGEN" --gpu analytic "models/$name.cfg" -o "$tmp/golden.cu" >/dev/null 2>&1
	if cmp -s "$gf" "$tmp/golden.cu"; then
		ok "$name: matches tests/golden/$name.cu"
	else
		nok "$name: differs from tests/golden/$name.cu (make golden regenerates it)"
		diff "$gf" "$tmp/golden.cu" | head -20 | sed 's/^/# /'
	fi
done
