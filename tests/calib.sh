#!/bin/sh
# tests/calib.sh: arkgen --gpu: a hand-written calibration table changes the report's predicted latency
# as its figures say; built-in tables by name; 'analytic'; located errors in a bad table; the usage
# error of an unknown name.
ARKGEN=${ARKGEN:-build/arkgen}
cd "$(dirname "$0")/.." || exit 1
tmp=${TMPDIR:-/tmp}/arkgen-calib.$$
mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

. tests/lib/tap.sh

# relu of [1, 1024] fp16: one vCTA, whose time the table gives (10 us), plus its dispatch (1 us) and
# the doorbell (5 us): 16.0 us predicted.
cat >"$tmp/relu.cfg" <<'CFG'
version = 1;
name = "relu";
dtype = "fp16";
tensors = (
  { name = "x"; shape = [1, 1024]; role = "input"; },
  { name = "y"; role = "output"; }
);
ops = ( { name = "r"; op = "relu"; in = ["x"]; out = "y"; } );
CFG
cat >"$tmp/tiny.txt" <<'TABLE'
# a hand-written table
gpu Test GPU
sms 132
threads 256
date 2026-01-01
source measured
proto task_us 1
proto doorbell_us 5
elementwise fp16 same 1 1024 1 10 12
TABLE
sed 's/ 10 12$/ 30 40/' "$tmp/tiny.txt" >"$tmp/slow.txt"
printf 'gpu Test GPU\nsms 132\nthreads 256\ndate -\nsource measured\nproto task_us 1\nelementwise fp16 same 1 1024 1 10\n' \
	>"$tmp/bad.txt"

echo "1..16"
check "--gpu FILE: compiles" run 0 --gpu "$tmp/tiny.txt" "$tmp/relu.cfg"
check "--gpu FILE: the table's times: predicted 16.0 us" has 'predicted latency 16.0 us' "$tmp/out"
check "--gpu FILE: the report names the table" \
	has "costs: calibration table $tmp/tiny.txt (Test GPU, 132 SMs, measured 2026-01-01) for every vCTA" "$tmp/out"
check "--gpu FILE with a slower tile (30 us): compiles" run 0 --gpu "$tmp/slow.txt" "$tmp/relu.cfg"
check "--gpu FILE with a slower tile (30 us): predicted 36.0 us" has 'predicted latency 36.0 us' "$tmp/out"
check "--gpu analytic: compiles" run 0 --gpu analytic "$tmp/relu.cfg"
check "--gpu analytic: the report says so" has 'costs: the analytic model (no calibration table)' "$tmp/out"
check "--gpu analytic: the analytic model's latency" has 'predicted latency 3\.[0-9] us' "$tmp/out"
check "--gpu h100: the built-in table" run 0 --gpu h100 models/mlp.cfg
check "--gpu h100: the report names it" has 'costs: calibration table h100 (' "$tmp/out"
check "--gpu FILE with an error: exit 1" run 1 --gpu "$tmp/bad.txt" "$tmp/relu.cfg"
check "--gpu FILE with an error: located" \
	has "^$tmp/bad.txt:7: error: a point has 8 fields (template dtype layout m n k alone_us busy_us), this line 7$" "$tmp/err"
check "--gpu with a missing file: exit 1" run 1 --gpu "$tmp/none.txt" "$tmp/relu.cfg"
check "--gpu with a missing file: named" has "^$tmp/none.txt: error: cannot open calibration table" "$tmp/err"
check "--gpu with an unknown name: usage error, exit 2" run 2 --gpu h300 "$tmp/relu.cfg"
check "--gpu with an unknown name: lists the built-in tables" has "not 'h300'" "$tmp/err"
