#!/bin/sh
# tests/backends.sh: the multi-stream backends from the command line: --backend, --streams and
# --stream-policy (help, usage errors, refusals), every backend and policy on models/branchy.cfg
# (report, generated file, byte-identical twice, --schedule, --dot), --backend loop unchanged, and
# one generated file per backend built with nvcc, whose binary without a GPU says so and exits 77.
# ARK_SKIP_NVCC=1 leaves the nvcc builds out.
ARKGEN=${ARKGEN:-build/arkgen}
NVCC=${NVCC:-nvcc}
cd "$(dirname "$0")/.." || exit 1
tmp=${TMPDIR:-/tmp}/arkgen-backends.$$
mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

. tests/lib/tap.sh

policies="xla single wavefront asap ios nnc"
echo "1..64"
check "--help exits 0" run 0 --help
for opt in --backend --streams --stream-policy; do
	check "--help mentions $opt" has " $opt" "$tmp/out"
done
check "--help names every policy" has 'xla (default), single, wavefront, asap, ios or nnc' "$tmp/out"
check "--streams without a stream backend: exit 2" run 2 --streams 2 models/mlp.cfg
check "--streams without a stream backend: says why" has 'need --backend streams, graph or dynamic' "$tmp/err"
check "--stream-policy without a stream backend: exit 2" run 2 --stream-policy asap models/mlp.cfg
check "--backend bogus: exit 2" run 2 --backend bogus models/mlp.cfg
check "--streams 0: exit 2" run 2 --backend streams --streams 0 models/mlp.cfg
check "--streams 65: exit 2" run 2 --backend streams --streams 65 models/mlp.cfg
check "--stream-policy bogus: exit 2" run 2 --backend streams --stream-policy bogus models/mlp.cfg
check "a model on 2 GPUs: refused, exit 1" run 1 --backend graph models/comm2.cfg -o "$tmp/c.cu"
check "a model on 2 GPUs: located error" has '^models/comm2.cfg: error: --backend graph runs a model on one GPU' "$tmp/err"
check "a model on 2 GPUs: no file written" test ! -e "$tmp/c.cu"
for b in streams graph; do
	for p in $policies; do
		check "$b $p: exit 0" run 0 --gpu analytic --backend $b --stream-policy $p models/branchy.cfg -o "$tmp/$b-$p.cu"
		check "$b $p: report names backend, policy, streams, events, proof" \
			has "backend $b, stream policy $p: 36 ops in 36 launches on [0-9]* streams*, [0-9]* events*.*proved" "$tmp/out"
		check "$b $p: byte-identical twice, the program in the file" sh -c "'$ARKGEN' --gpu analytic --backend $b --stream-policy $p models/branchy.cfg -o '$tmp/again.cu' >/dev/null && cmp -s '$tmp/$b-$p.cu' '$tmp/again.cu' && grep -q '^ARK_DEFINE_STREAMS()' '$tmp/again.cu' && grep -q 'options: .*--backend $b' '$tmp/again.cu'"
	done
done
check "single: one stream, no event" has 'stream policy single: 36 ops in 36 launches on 1 stream, 0 events recorded, 0 waits' \
	"$(run 0 --gpu analytic --backend streams --stream-policy single models/branchy.cfg; echo "$tmp/out")"
check "xla on branchy: 4 streams" has 'stream policy xla: 36 ops in 36 launches on 4 streams' \
	"$(run 0 --gpu analytic --backend streams models/branchy.cfg; echo "$tmp/out")"
check "--streams 2: at most 2 streams" has 'on 2 streams' \
	"$(run 0 --gpu analytic --backend streams --streams 2 models/branchy.cfg; echo "$tmp/out")"
check "predicted latency of the backend, constants said not measured" \
	has 'predicted latency of the streams backend [0-9.]* us (launch .*not measured)' "$tmp/out"
check "dynamic: exit 0, the pool in the report" has 'dynamic: streams and events are chosen at run time from a pool of 4' \
	"$(run 0 --gpu analytic --backend dynamic models/branchy.cfg -o "$tmp/dyn.cu"; echo "$tmp/out")"
check "dynamic: the bytes each op touches in the file" has 'static const struct ark_srange stream_ranges' "$tmp/dyn.cu"
check "split-K op: two launches (partials, then the sum)" has 'fc2, level 2 of 2' \
	"$(run 0 --gpu analytic --backend streams models/mlp.cfg -o "$tmp/mlp.cu"; echo "$tmp/mlp.cu")"
check "--schedule: a streams member with every op's stream" sh -c "'$ARKGEN' --gpu analytic --backend streams models/branchy.cfg --schedule - 2>/dev/null | python3 -c 'import json,sys; s=json.load(sys.stdin)[\"streams\"]; assert s[\"policy\"]==\"xla\" and len(s[\"ops\"])==36 and all(\"stream\" in o for o in s[\"ops\"])'"
check "--dot: the ops by stream, events dashed" sh -c "'$ARKGEN' --gpu analytic --backend streams models/branchy.cfg --dot - 2>/dev/null | grep -q 'subgraph cluster_s3' && '$ARKGEN' --gpu analytic --backend streams models/branchy.cfg --dot - 2>/dev/null | grep -q 'style=dashed'"
check "--backend loop: the same file as without" sh -c "'$ARKGEN' --gpu analytic models/mlp.cfg -o '$tmp/l1.cu' >/dev/null && '$ARKGEN' --gpu analytic --backend loop models/mlp.cfg -o '$tmp/l2.cu' >/dev/null && cmp -s '$tmp/l1.cu' '$tmp/l2.cu' && ! grep -q ark_streams '$tmp/l1.cu'"
for b in streams graph dynamic; do
	if [ "${ARK_SKIP_NVCC:-0}" = 1 ] || ! command -v "$NVCC" >/dev/null 2>&1; then
		i=$((i + 1)); echo "ok $i # SKIP $b: nvcc build (ARK_SKIP_NVCC=1 or no nvcc)"
		continue
	fi
	"$ARKGEN" --backend $b tests/models/splitk_chain.cfg -o "$tmp/nv-$b.cu" >/dev/null 2>&1
	# shellcheck disable=SC2046
	if "$NVCC" $("$ARKGEN" --nvcc-flags) -cudart shared "$tmp/nv-$b.cu" -o "$tmp/nv-$b" >"$tmp/nv-$b.nvcc" 2>&1; then
		"$tmp/nv-$b" --check >"$tmp/nv-$b.run" 2>&1
		rc=$?
		if [ $rc -eq 77 ] && grep -q "no CUDA device" "$tmp/nv-$b.run"; then
			i=$((i + 1)); echo "ok $i - $b: nvcc build of splitk_chain; without a GPU the binary says so, exit 77"
		elif [ $rc -eq 0 ]; then
			i=$((i + 1)); echo "ok $i - $b: nvcc build of splitk_chain; --check passed on this GPU"
		else
			i=$((i + 1)); echo "not ok $i - $b: binary exit $rc"; sed 's/^/# /' "$tmp/nv-$b.run"
		fi
	else
		i=$((i + 1)); echo "not ok $i - $b: nvcc build"; sed 's/^/# /' "$tmp/nv-$b.nvcc" | head -30
	fi
done
