#!/bin/sh
# tests/sweep.sh: bench/sweep.py, the shape sweep's model generator. 30 models of a fixed seed and 10 of
# a seed from the clock (printed; SWEEP_SEED=S replays it): arkgen accepts each one without a warning
# and predicts its latency, its weights stay under 64 MiB, bench/torch_baseline.py can read its
# schedule; the same seed gives the same bytes, --index replays one model, and the fixed draw covers
# the whole single-GPU op catalog, every dtype (q4_1 and q8_0 weights too, a quantized matmul of more than 16
# rows among them), transpose_b, biases, 3-D and broadcast operands,
# M <= 16 and M > 128, and widths that are primes and not multiples of 8; sweep.py table names the
# calibration table its predictions came from, warning when it is another GPU's; sweep.sh --run starts
# no model past SWEEP_SECONDS (stand-in model binaries). No nvcc, no GPU.
ARKGEN=${ARKGEN:-build/arkgen}
PYTHON=${PYTHON:-python3}
cd "$(dirname "$0")/.." || exit 1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arkgen-sweep.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

FIXED=42
CLOCK=${SWEEP_SEED:-$(date +%s)}
NFIX=30
NCLK=10
. tests/lib/tap.sh

# accepted FILE: arkgen emits the model, exit 0, a predicted latency, no warning, weights <= 64 MiB
accepted() {
	rm -f "$tmp/m.json"
	"$ARKGEN" "$1" -o "$tmp/m.cu" --schedule "$tmp/m.json" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	case $1 in "$tmp/a/"*) grep -q '\.b_dequant' "$tmp/m.cu" && : >"$tmp/bdq" ;; esac
	if [ $rc -ne 0 ] || ! grep -q 'predicted latency [0-9.]* us' "$tmp/out" || [ -s "$tmp/err" ]; then
		echo "# arkgen $1: exit status $rc"
		sed 's/^/#   /' "$tmp/err" "$tmp/out" | head -n 20
		return 1
	fi
	sed -n 's/.* \([0-9.]*\) \(B\|KiB\|MiB\|GiB\) of weights.*/\1 \2/p' "$tmp/out" | awk '
		{ n++; if ($2 == "GiB" || ($2 == "MiB" && $1 > 64)) { print "# weights: " $1 " " $2 " (over 64 MiB)"; bad = 1 } }
		END { if (n != 1) print "# no weight size in the report"; exit bad || n != 1 }'
}
planned() { # torch_baseline.py --plan reads the schedule of the last accepted model (no torch needed)
	"$PYTHON" bench/torch_baseline.py "$tmp/m.json" --plan >"$tmp/plan" 2>&1 || { sed 's/^/# /' "$tmp/plan"; return 1; }
}
headed() { # headed FILE SEED INDEX: the first line gives seed, index and a summary; the name matches
	want=$(printf '# sweep seed %s, index %s: ' "$2" "$3")
	line=$(head -n 1 "$1" 2>/dev/null) || { echo "# no file $1"; return 1; }
	case $line in "$want"?*) ;; *) echo "# first line of $1: $line"; return 1 ;; esac
	grep -q "^name = \"$(basename "$1" .cfg)\";" "$1"
}
have() { # have DESCRIPTION PATTERN: some fixed-seed model matches the extended regular expression
	grep -Eq -e "$2" "$tmp/a"/*.cfg || { echo "# no model has $1 ($2)"; return 1; }
}
# rows PRED: some model's x has M (the product of its leading dimensions) with PRED true (awk)
rows() {
	sed -n 's/^ *{ name = "x"; shape = \[\(.*\)\];.*/\1/p' "$tmp/a"/*.cfg |
		awk -F', ' "{ m = 1; for (k = 1; k < NF; k++) m *= \$k; if ($1) found = 1 } END { exit !found }"
}
# widths PRED: some matmul weight [A, B] has a dimension d with PRED true (awk)
widths() {
	sed -n 's/^ *{ name = "w[0-9]*"; shape = \[\([0-9]*\), \([0-9]*\)\];.*/\1 \2/p' "$tmp/a"/*.cfg |
		awk "function prime(n,  p) { if (n < 2) return 0; for (p = 2; p * p <= n; p++) if (n % p == 0) return 0; return 1 }
			{ for (k = 1; k <= 2; k++) { d = \$k; if ($1) found = 1 } } END { exit !found }"
}

other_seed() { # model 1 of seed FIXED+1 differs from model 1 of FIXED past the lines that name it
	"$PYTHON" bench/sweep.py gen --seed $((FIXED + 1)) --count 2 --out "$tmp/d" || return 1
	tail -n +5 "$tmp/d/sw$((FIXED + 1))_001.cfg" >"$tmp/d1"
	tail -n +5 "$tmp/a/sw${FIXED}_001.cfg" >"$tmp/a1"
	! cmp -s "$tmp/d1" "$tmp/a1"
}

again() { # the same seed again, into another folder: the same files, byte for byte
	"$PYTHON" bench/sweep.py gen --seed $FIXED --count $NFIX --out "$tmp/b" && diff -r "$tmp/a" "$tmp/b"
}
replay() { # --index 17 writes model 17 alone, as the whole draw wrote it
	"$PYTHON" bench/sweep.py gen --seed $FIXED --index 17 --out "$tmp/c" &&
		[ "$(ls "$tmp/c")" = "sw${FIXED}_017.cfg" ] && cmp "$tmp/c/sw${FIXED}_017.cfg" "$tmp/a/sw${FIXED}_017.cfg"
}
usage_error() { "$PYTHON" bench/sweep.py gen --count 3 --out "$tmp/e" 2>/dev/null; [ $? -eq 2 ]; }

# the single-GPU ops of the catalog (abi/ark_ops.h: every row not flagged ARK_OPF_COMM)
ops=$(sh scripts/catalog-names.sh OP_ROWS ARK_OPF_COMM | tr '\n' ' ')
echo "1..$((8 + 2 * (NFIX + NCLK) + 3 + $(echo $ops | wc -w) + 12 + 5))"
echo "# fixed seed $FIXED, clock seed $CLOCK (replay: SWEEP_SEED=$CLOCK tests/sweep.sh, or"
echo "#   bench/sweep.py gen --seed $CLOCK --count $NCLK --out DIR)"

check "gen --seed $FIXED --count $NFIX exits 0" "$PYTHON" bench/sweep.py gen --seed $FIXED --count $NFIX --out "$tmp/a"
check "it writes $NFIX model files" test "$(find "$tmp/a" -name '*.cfg' | wc -l)" -eq $NFIX
check "the same seed again: byte-identical files" again
check "--index 17 alone: the same file as model 17 of the draw" replay
check "another seed: other models" other_seed
check "gen --seed $CLOCK --count $NCLK exits 0" "$PYTHON" bench/sweep.py gen --seed "$CLOCK" --count $NCLK --out "$tmp/k"
check "no --seed: usage error, exit 2" usage_error
hdr=1
for k in $(seq 0 $((NFIX - 1))); do
	headed "$tmp/a/$(printf 'sw%s_%03d.cfg' $FIXED "$k")" $FIXED "$k" || hdr=0
done
for k in $(seq 0 $((NCLK - 1))); do
	headed "$tmp/k/$(printf 'sw%s_%03d.cfg' "$CLOCK" "$k")" "$CLOCK" "$k" || hdr=0
done
check "every file starts with '# sweep seed S, index I: summary' and has its name" test $hdr = 1

for k in $(seq 0 $((NFIX + NCLK - 1))); do
	if [ "$k" -lt $NFIX ]; then seed=$FIXED d=a j=$k; else seed=$CLOCK d=k j=$((k - NFIX)); fi
	n=$(printf 'sw%s_%03d' "$seed" "$j")
	f=$tmp/$d/$n.cfg
	check "$n: arkgen accepts it ($(sed -n '1s/^# sweep seed [0-9]*, index [0-9]*: //p' "$f" 2>/dev/null))" accepted "$f"
	check "$n: torch_baseline.py --plan reads its schedule" planned
done

check "fixed draw: some model is 3-D" rows "NF == 3"
check "fixed draw: some model has M <= 16" rows "m <= 16"
check "fixed draw: some model has M > 128" rows "m > 128"
for o in $ops; do
	check "fixed draw: op $o appears" have "op $o" "op = \"$o\";"
done
check "fixed draw: transpose_b = true" have "transpose_b" 'transpose_b = true;'
check "fixed draw: a matmul with a bias" have "a bias" 'op = "matmul"; in = \["[^"]*", "[^"]*", "[^"]*"\]'
check "fixed draw: a per-row broadcast operand [.., 1]" have "a per-row operand" 'name = "(v|in)[0-9]+"; shape = \[[0-9, ]*[0-9]+, 1\]'
check "fixed draw: a bias-like broadcast operand [N]" have "a [N] operand" 'name = "v[0-9]+"; shape = \[[0-9]+\]'
for dt in fp16 bf16 fp32; do
	check "fixed draw: dtype $dt" have "$dt" "^dtype = \"$dt\";"
done
check "fixed draw: a matmul width that is prime" widths "d > 100 && prime(d)"
check "fixed draw: a matmul width that is not a multiple of 8" widths "d % 8 != 0"
for dt in q4_1 q8_0; do
	check "fixed draw: a $dt weight" have "a $dt weight" "role = \"weight\"; dtype = \"$dt\";"
done
check "fixed draw: a quantized matmul of more than 16 rows (arkgen's <op>.b_dequant)" test -e "$tmp/bdq"

# sweep.py table names the calibration table the predictions came from, and says so when it is
# another GPU's than the one that ran the models
tabled() { # tabled REPORT_GPU: a run on an NVIDIA H200 of one model whose report names REPORT_GPU's table
	rm -rf "$tmp/run" "$tmp/mod" && mkdir -p "$tmp/run/logs" "$tmp/mod" || return 1
	echo "# sweep seed 1, index 0: a model" >"$tmp/run/logs/sw1_000.cfg"
	echo "NVIDIA H200" >"$tmp/run/gpu.txt"
	echo 0 >"$tmp/run/logs/sw1_000.check.rc"
	echo "bench: 300 iterations after 50 warm-up: median 10.00 us, p99 11.00 us, min 9.00 us (predicted 12.00 us)" \
		>"$tmp/run/logs/sw1_000.bench.log"
	echo "  costs: calibration table t ($1, 132 SMs, measured 2026-11-28) for every vCTA" >"$tmp/mod/sw1_000.report"
	"$PYTHON" bench/sweep.py table "$tmp/run" --models "$tmp/mod" >"$tmp/table" 2>&1
}
named() {
	tabled "NVIDIA H200" && grep -q "^Predictions from t (NVIDIA H200, measured 2026-11-28)\.$" "$tmp/table" &&
		! grep -q "not of" "$tmp/table"
}
foreign() { tabled "NVIDIA H100 80GB HBM3" && grep -q "are of NVIDIA H100 80GB HBM3, not of NVIDIA H200 that ran" "$tmp/table"; }
check "sweep.py table: the predictions' table named" named
check "sweep.py table: another GPU's table said so" foreign
# the geometric means by class: dtype, the rows of x (its leading dimensions together), both
classed() {
	rm -rf "$tmp/run" && mkdir -p "$tmp/run/logs" || return 1
	for m in "0 fp32 x[4,80,1024] 10 5" "1 fp32 x[2,64] 10 20" "2 bf16 x[3,5] 10 40"; do
		set -- $m
		echo "# sweep seed 1, index $1: mlp $2 $3, 2 ops" >"$tmp/run/logs/sw1_00$1.cfg"
		echo 0 >"$tmp/run/logs/sw1_00$1.check.rc"
		echo "bench: 300 iterations after 50 warm-up: median $4.00 us, p99 11.00 us, min 9.00 us" \
			>"$tmp/run/logs/sw1_00$1.bench.log"
		echo "{\"meta\": {\"gpu\": \"NVIDIA H200\"}, \"graph\": {\"median_us\": $5, \"matches_eager\": true}}" \
			>"$tmp/run/logs/sw1_00$1.torch.json"
	done
	"$PYTHON" bench/sweep.py table "$tmp/run" >"$tmp/table" 2>&1 &&
		grep -q '^| fp32 | 2 | 1.00x | 1 |$' "$tmp/table" && grep -q '^| bf16 | 1 | 4.00x | 1 |$' "$tmp/table" &&
		grep -q '^| M > 128 | 1 | 0.50x | 0 |$' "$tmp/table" && grep -q '^| M <= 16 | 2 | 2.83x | 2 |$' "$tmp/table" &&
		grep -q '^| fp32, M > 128 | 1 | 0.50x | 0 |$' "$tmp/table" && ! grep -q '^| M 17-128 ' "$tmp/table"
}
check "sweep.py table: the geometric means by dtype and rows" classed
# SWEEP_SECONDS: --run starts no model past the budget; those that ran get their table and logs
budgeted() {
	rm -rf "$tmp/s" "$tmp/so" && mkdir -p "$tmp/s" || return 1
	for x in 0 1; do
		echo "# sweep seed 1, index $x: mlp fp32 x[4,64], 2 ops" >"$tmp/s/sw1_00$x.cfg"
		cat >"$tmp/s/sw1_00$x" <<'STANDIN'
#!/bin/sh
case $1 in
--check) echo "check 2: output y: rel err 0.0e+00 (tolerance 1e-04) ok" ;;
--bench) sleep 2; echo "bench: 200 iterations after 20 warm-up: median 5.00 us, p99 6.00 us, min 4.00 us (predicted 5.00 us)" ;;
esac
STANDIN
		chmod +x "$tmp/s/sw1_00$x" || return 1
	done
	SWEEP_SECONDS=1 TORCH_VARIANTS=none bench/sweep.sh --run "$tmp/s" "$tmp/so" >"$tmp/so.log" 2>&1 || return 1
	grep -q '^== sw1_000: check ok, arkgen 5.00 us' "$tmp/so.log" &&
		grep -q '^== sw1_001: not run (SWEEP_SECONDS=1 spent)' "$tmp/so.log" &&
		grep -q 'SWEEP_SECONDS=1 spent' "$tmp/so/logs/sw1_001.skip" && [ ! -e "$tmp/so/logs/sw1_001.bench.log" ] &&
		[ -s "$tmp/so/table.md" ] && [ -s "$tmp/so/logs.tar.gz" ]
}
check "sweep.sh --run: SWEEP_SECONDS stops starting models, the table has those that ran" budgeted
bad_budget() { SWEEP_SECONDS=1m bench/sweep.sh --run "$tmp/s" "$tmp/sb" >"$tmp/sb.log" 2>&1; [ $? -ne 0 ] && grep -q 'whole number' "$tmp/sb.log"; }
check "sweep.sh --run: SWEEP_SECONDS=1m is refused" bad_budget

