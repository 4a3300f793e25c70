#!/usr/bin/env bash
# ab.sh: the same generated files built against two trees of templates (A and B) and timed in
# alternating rounds on one GPU: what a template change does to models before it lands, with every
# build's spills beside it (a function added or removed under the loop kernel moves the spills of the
# others, bench/NOTES.md).
#
#   bench/ab.sh --build DIR [--a REV] [--b REV] [--arkgen-a PATH] [--arkgen-b PATH] MODEL...
#                       MODEL: a model file (.cfg, generated with ARKGEN_FLAGS by this checkout's
#                       arkgen, or for one side by the arkgen --arkgen-a / -b names: a tiler change
#                       measured with its templates) or a generated file (.cu, both sides), several
#                       of them. A's and B's templates and abi: a git revision of this repository
#                       (git archive), '.' for this working tree, or a folder holding templates/ and
#                       abi/ (a tree without git, such as the GPU machine's copy); default A = HEAD,
#                       B = '.'.
#                       Builds DIR/NAME.A and DIR/NAME.B with nvcc -Xptxas -v (the output in
#                       DIR/NAME.A.ptxas, .B.ptxas), JOBS at a time; DIR/lib gets the shared
#                       libraries the binaries load. No GPU.
#   bench/ab.sh --run DIR   on the GPU machine: every NAME.B --check, then ROUNDS rounds of --bench N of
#                       every NAME.A and NAME.B, alternating; the medians to DIR/ab.tsv and the table
#                       to DIR/ab.md and stdout. Without a GPU it says so and exits 0.
#   bench/ab.sh --table DIR   the table again, from DIR/ab.tsv and the ptxas output.
#
# DIR holds everything --run needs under relative names: build on one machine, run on another.
# --run and --table read only the binaries, their .ptxas, trees.tsv and lib/: the generated .cu files
# and tree_A/, tree_B/ may be left behind when DIR is carried (most of its bytes for big models).
# Environment: ARKGEN (default build/arkgen of this checkout), ARKGEN_FLAGS (default --gpu h200),
# NVCC (default nvcc), JOBS (default: the CPUs), ROUNDS (default 2), BENCH_N (--bench, default 300),
# CHECK_TIMEOUT, BENCH_TIMEOUT (seconds a run, default 120).
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
ARKGEN=${ARKGEN:-$ROOT/build/arkgen}
ARKGEN_FLAGS=${ARKGEN_FLAGS---gpu h200}
NVCC=${NVCC:-nvcc}
JOBS=${JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)}
ROUNDS=${ROUNDS:-2}
BENCH_N=${BENCH_N:-300}
CHECK_TIMEOUT=${CHECK_TIMEOUT:-120}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-120}

. "$ROOT/bench/lib.sh" # die, usage, limit, libs_of
names() { # the models of DIR, sorted: every DIR/NAME.A.cu, or DIR/NAME.A.ptxas where the sources are gone
	for f in "$1"/*.A.cu "$1"/*.A.ptxas; do
		[ -f "$f" ] || continue
		f=$(basename "$f")
		echo "${f%.A.*}"
	done | sort -u
}

# ---- build ------------------------------------------------------------------------------------

tree() { # tree REV DEST: the templates and abi of REV ('.': the working tree; a folder holding
	 # templates/ and abi/: those) into DEST
	local rev=$1 dest=$2
	rm -rf "$dest" && mkdir -p "$dest" || return 1
	if [ "$rev" = . ]; then
		cp -R "$ROOT/templates" "$ROOT/abi" "$dest/"
	elif [ -d "$rev/templates" ] && [ -d "$rev/abi" ]; then
		cp -R "$rev/templates" "$rev/abi" "$dest/"
	else
		git -C "$ROOT" rev-parse --verify -q "$rev^{commit}" >/dev/null || { echo "no revision '$rev'" >&2; return 1; }
		git -C "$ROOT" archive "$rev" templates abi | tar -x -C "$dest"
	fi
}

nvcc_one() { # nvcc_one DIR NAME V: DIR/NAME.V.cu against DIR/tree_V -> DIR/NAME.V, ptxas output beside it
	local d=$1 n=$2 v=$3 f
	# this checkout's abi and templates in arkgen's flags become the tree's
	f=$(printf '%s' "$flags" | sed "s|-I$ROOT/abi|-I$d/tree_$v/abi|; s|-I$ROOT/templates|-I$d/tree_$v/templates|")
	# shellcheck disable=SC2086
	if "$NVCC" $f -cudart shared -Xptxas -v "$d/$n.$v.cu" -o "$d/$n.$v" >"$d/$n.$v.ptxas" 2>&1; then
		strip "$d/$n.$v" 2>/dev/null # a quarter less to carry to the GPU machine
		echo "  $n.$v: built"
	else
		rm -f "$d/$n.$v"
		echo "  $n.$v: NVCC FAILED (see $d/$n.$v.ptxas)" >&2
		return 1
	fi
}

build() {
	local d=$1 a=$2 b=$3 ga=$4 gb=$5 m n v gen failed=0
	shift 5
	[ $# -gt 0 ] || die "no models (give .cfg or .cu files)"
	command -v "$NVCC" >/dev/null 2>&1 || die "no nvcc ('$NVCC'; set NVCC)"
	[ -x "$ARKGEN" ] || die "no arkgen at $ARKGEN (run make, or set ARKGEN)"
	for gen in "$ga" "$gb"; do [ -x "$gen" ] || die "no arkgen at $gen"; done
	flags=$("$ARKGEN" --nvcc-flags) || die "$ARKGEN --nvcc-flags failed"
	mkdir -p "$d" || die "cannot create $d"
	d=$(cd "$d" && pwd)
	tree "$a" "$d/tree_A" || die "A: cannot take the templates of '$a'"
	tree "$b" "$d/tree_B" || die "B: cannot take the templates of '$b'"
	printf 'A\t%s%s\nB\t%s%s\n' "$(label "$a")" "$([ "$ga" = "$ARKGEN" ] || echo ", files of $ga")" \
		"$(label "$b")" "$([ "$gb" = "$ARKGEN" ] || echo ", files of $gb")" >"$d/trees.tsv"
	for m in "$@"; do
		n=$(basename "$m")
		n=${n%.*}
		case $m in
		*.cfg)
			for v in A B; do
				gen=$ga
				[ $v = B ] && gen=$gb
				# shellcheck disable=SC2086
				"$gen" $ARKGEN_FLAGS "$m" -o "$d/$n.$v.cu" >"$d/$n.$v.report" 2>&1 ||
					die "arkgen ($gen) rejected $m: $(tail -n 1 "$d/$n.$v.report")"
			done ;;
		*.cu) { cp "$m" "$d/$n.A.cu" && cp "$m" "$d/$n.B.cu"; } || die "cannot read $m" ;;
		*) die "$m: neither a model file (.cfg) nor a generated file (.cu)" ;;
		esac
	done
	echo "== nvcc: $(names "$d" | wc -w) models, A ($a) and B ($b), $JOBS at a time"
	for n in $(names "$d"); do
		for v in A B; do
			while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
			nvcc_one "$d" "$n" "$v" &
		done
	done
	wait
	for n in $(names "$d"); do
		for v in A B; do [ -x "$d/$n.$v" ] || failed=1; done
	done
	for n in $(names "$d"); do # the shared libraries a GPU machine may lack, as bench/sweep.sh gives them
		[ -x "$d/$n.B" ] || continue
		libs_of "$d/$n.B" "$d/lib"
		break
	done
	[ $failed = 0 ] || die "some builds failed"
	echo "== built in $d"
}

label() { # what a tree was: the revision's short hash and subject, or the working tree
	if [ "$1" = . ]; then
		echo "working tree of $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)"
	elif [ -d "$1/templates" ]; then
		echo "the templates and abi of $1"
	else
		git -C "$ROOT" log -1 --format='%h %s' "$1" 2>/dev/null | cut -c1-72
	fi
}

# ---- run --------------------------------------------------------------------------------------

run() {
	local d=$1 n v rc med
	d=$(cd "$d" && pwd) || die "no folder $1"
	[ -n "$(names "$d")" ] || die "no models in $d (bench/ab.sh --build first)"
	export LD_LIBRARY_PATH="$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	if command -v nvidia-smi >/dev/null 2>&1; then
		nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 >"$d/gpu.txt"
	fi
	: >"$d/ab.tsv"
	echo "$BENCH_N" >"$d/bench_n"
	for n in $(names "$d"); do
		if [ ! -x "$d/$n.A" ] || [ ! -x "$d/$n.B" ]; then die "$n: not built (bench/ab.sh --build)"; fi
		limit "$CHECK_TIMEOUT" "$d/$n.B" --check >"$d/$n.check.log" 2>&1
		rc=$?
		if [ $rc -eq 77 ]; then
			echo "== no GPU found ($n.B --check exits 77: $(tail -n 1 "$d/$n.check.log")): built, nothing ran"
			rm -f "$d/ab.tsv"
			return 0
		fi
		printf '%s\tcheck\t%s\n' "$n" "$([ $rc -eq 0 ] && echo ok || echo "FAILED (exit $rc)")" >>"$d/ab.tsv"
	done
	for _ in $(seq 1 "$ROUNDS"); do
		for n in $(names "$d"); do
			for v in A B; do
				limit "$BENCH_TIMEOUT" "$d/$n.$v" --bench "$BENCH_N" >"$d/$n.$v.bench.log" 2>&1
				med=$(sed -n 's/^bench: .*median \([0-9.]*\) us.*/\1/p' "$d/$n.$v.bench.log" | head -n 1)
				printf '%s\t%s\t%s\n' "$n" "$v" "${med:--}" >>"$d/ab.tsv"
			done
		done
	done
	table "$d" | tee "$d/ab.md"
}

# ---- table ------------------------------------------------------------------------------------

spills() { # spills LOG: the spill stores and loads of every function of a ptxas -v output, in bytes
	awk '/bytes spill stores/ { for (i = 1; i < NF; i++) { if ($(i + 1) == "bytes" && $(i + 2) == "spill") {
		if ($(i + 3) == "stores,") s += $i; else if ($(i + 3) == "loads") l += $i } } }
		END { printf "%d / %d", s, l }' "$1" 2>/dev/null
}

table() {
	local d=$1 n
	[ -f "$d/ab.tsv" ] || die "no results in $d (bench/ab.sh --run)"
	echo "A: $(sed -n 's/^A\t//p' "$d/trees.tsv" 2>/dev/null)"
	echo "B: $(sed -n 's/^B\t//p' "$d/trees.tsv" 2>/dev/null)"
	[ -f "$d/gpu.txt" ] && echo "GPU: $(cat "$d/gpu.txt")"
	echo
	echo "| model | check (B) | A (us) | B (us) | B / A | spills, all functions: A | B |"
	echo "|---|---|---|---|---|---|---|"
	# the models (in order) with their spills first, then the runs: a row each, then the summary
	for n in $(names "$d"); do
		printf '%s\t%s\t%s\n' "$n" "$(spills "$d/$n.A.ptxas")" "$(spills "$d/$n.B.ptxas")"
	done | awk -F'\t' '
		FNR == NR { sp[$1] = $2 " | " $3; order[++no] = $1; next }
		$2 == "check" { check[$1] = $3; next }
		$2 == "A" || $2 == "B" { v[$1, $2] = v[$1, $2] (v[$1, $2] == "" ? "" : " / ") $3
			if ($3 != "-") { sum[$1, $2] += $3; cnt[$1, $2]++ } }
		END {
			for (i = 1; i <= no; i++) {
				n = order[i]
				ratio = "-"
				if (cnt[n, "A"] && cnt[n, "B"]) {
					r = (sum[n, "B"] / cnt[n, "B"]) / (sum[n, "A"] / cnt[n, "A"])
					ratio = sprintf("%.3f", r)
					l += log(r); k++
					if (r < 0.98) f++; else if (r > 1.02) w++
				}
				printf "| %s | %s | %s | %s | %s | %s |\n", n, check[n], v[n, "A"], v[n, "B"], ratio, sp[n]
			}
			print ""
			if (k) printf "B / A over %d models: geometric mean %.3f; %d faster, %d slower by more than 2%%.\n", k, exp(l / k), f, w
		}' - "$d/ab.tsv"
	echo "Medians of --bench $(cat "$d/bench_n" 2>/dev/null || echo "$BENCH_N") per round, A and B alternating; B / A: the ratio of their means over the rounds."
}

case ${1:-} in -h | --help) usage 0 ;; esac
[ $# -ge 2 ] || usage 2
cmd=$1
dir=$2
shift 2
case $cmd in
--build)
	a=HEAD b=. ga=$ARKGEN gb=$ARKGEN
	while [ $# -gt 0 ]; do
		case $1 in
		--a) [ $# -ge 2 ] || usage 2; a=$2; shift 2 ;;
		--b) [ $# -ge 2 ] || usage 2; b=$2; shift 2 ;;
		--arkgen-a) [ $# -ge 2 ] || usage 2; ga=$2; shift 2 ;;
		--arkgen-b) [ $# -ge 2 ] || usage 2; gb=$2; shift 2 ;;
		-*) usage 2 ;;
		*) break ;;
		esac
	done
	build "$dir" "$a" "$b" "$ga" "$gb" "$@"
	;;
--run) [ $# -eq 0 ] || usage 2; run "$dir" ;;
--table) [ $# -eq 0 ] || usage 2; table "$dir" ;;
*) usage 2 ;;
esac
