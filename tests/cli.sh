#!/bin/sh
# tests/cli.sh: the arkgen command line: help, version, usage errors, model errors, -dG and --dot.
ARKGEN=${ARKGEN:-build/arkgen}
cd "$(dirname "$0")/.." || exit 1
tmp=${TMPDIR:-/tmp}/arkgen-cli.$$
mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

i=0
check() { # check DESCRIPTION COMMAND...: ok when the command succeeds
	i=$((i + 1))
	desc=$1
	shift
	if "$@"; then echo "ok $i - $desc"; else echo "not ok $i - $desc"; fi
}
# run EXPECTED_STATUS ARGS...: runs arkgen, keeps stdout/stderr in $tmp, checks the exit status
run() {
	want=$1
	shift
	"$ARKGEN" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ "$rc" -eq "$want" ] || { echo "# arkgen $*: exit status $rc, expected $want"; sed 's/^/# /' "$tmp/err"; return 1; }
}
has() { grep -q -e "$1" "$2" || { echo "# '$1' not found in $2:"; sed 's/^/#   /' "$2" | head -20; return 1; }; }

echo "1..50"
check "--help exits 0" run 0 --help
check "--help shows the usage line" has '^usage: arkgen \[options\] MODEL.cfg' "$tmp/out"
for opt in --help --version -o --output -dG -dT -dP --dot --dot-vctas --sms --smem --policy --sync --no-fuse --no-reuse --p2p-max --oneshot-max --ll-max --schedule --nvcc-flags -h -V; do
	check "--help mentions $opt" has " $opt" "$tmp/out"
done
check "--version exits 0" run 0 --version
check "--version prints the version" has '^arkgen [0-9][0-9.]*$' "$tmp/out"
check "no arguments: usage error, exit 2" run 2
check "no arguments: says what is missing" has 'no model file' "$tmp/err"
check "unknown option: exit 2" run 2 --frobnicate models/mlp.cfg
check "unknown option: named" has "unknown option '--frobnicate'" "$tmp/err"
check "missing model file: exit 1" run 1 tests/no-such-model.cfg
check "missing model file: FILE: error: message" \
	has '^tests/no-such-model.cfg: error: cannot open model file: No such file or directory$' "$tmp/err"
check "-dG on branchy exits 0" run 0 -dG models/branchy.cfg
check "-dG prints the shape of x" has '^  x .*\[1, 1024\] *bf16 *input' "$tmp/out"
check "-dG prints ops with inferred shapes" has 'out y .*\[1, 1024\] bf16' "$tmp/out"
check "--dot writes a Graphviz file" sh -c "'$ARKGEN' --dot '$tmp/g.dot' models/mlp.cfg >/dev/null && head -n 1 '$tmp/g.dot' | grep -q '^digraph'"
check "no -o: summary of the model" sh -c "'$ARKGEN' models/mlp.cfg | grep -q '^models/mlp.cfg: mlp checked: 3 ops, 7 tensors .* 1 GPU'"
check "-o: writes the loop file, exit 0" run 0 models/mlp.cfg -o "$tmp/mlp.cu"
check "-o: the file defines the loop kernel" has '^ARK_DEFINE_LOOP()' "$tmp/mlp.cu"
check "-o: the report gives the predicted latency" has 'predicted latency [0-9.]* us' "$tmp/out"
check "bad -d letter: exit 2" run 2 -dQ models/mlp.cfg
check "bad --p2p-max: exit 2" run 2 --p2p-max -1 models/comm2.cfg
check "comm2 by default: all_reduce over p2p stores" has ' ar COPY ' "$(run 0 models/comm2.cfg -o "$tmp/c.cu"; echo "$tmp/c.cu")"
check "--ll-max 4096: all_reduce over p2p in packets" sh -c "'$ARKGEN' --ll-max 4096 models/comm2.cfg -o '$tmp/s.cu' >/dev/null && grep -q ' ar SEND_LL ' '$tmp/s.cu' && grep -q 'options: .*--ll-max 4096' '$tmp/s.cu'"
check "--oneshot-max 0: all_reduce in two phases" sh -c "'$ARKGEN' --oneshot-max 0 models/comm2.cfg -o '$tmp/t.cu' >/dev/null && grep -q 's0__rs' '$tmp/t.cu' && grep -q 'options: .*--oneshot-max 0' '$tmp/t.cu'"
check "bad --ll-max: exit 2" run 2 --ll-max x models/comm2.cfg
check "bad --oneshot-max: exit 2" run 2 --oneshot-max -5 models/comm2.cfg
check "--p2p-max 0: all_reduce through the DMA engine" sh -c "'$ARKGEN' --p2p-max 0 models/comm2.cfg -o '$tmp/d.cu' >/dev/null && grep -q ' ar DMA ' '$tmp/d.cu' && grep -q 'options: .*--p2p-max 0' '$tmp/d.cu'"
check "--sync barrier on 2 GPUs: refused" run 1 --sync barrier models/comm2.cfg
check "--sync barrier on 2 GPUs: says why" has 'single-GPU models only' "$tmp/err"
