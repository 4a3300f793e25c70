#!/bin/sh
# tests/ab.sh: bench/ab.sh with a stand-in nvcc whose "binaries" are scripts that answer --check and
# --bench with a median that depends on the templates they were built against, and print ptxas -v
# lines as the real one does: each model built against both trees (A from a revision, B the working
# tree), arkgen run on a model file (for A by another arkgen where one is named), every run and round
# in the table with the ratio and the spills, a build failure and a bad revision reported, and a
# machine without a GPU (exit 77) said so. No GPU, no nvcc.
ARKGEN=${ARKGEN:-build/arkgen}
cd "$(dirname "$0")/.." || exit 1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arkgen-ab.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
. tests/lib/tap.sh
echo "1..15"

# The stand-in nvcc: the "binary" is a script; its median is 10 built against tree_A, 8 against tree_B
# (seen in its -I flags); FAKE_NVCC_FAIL names a model whose build fails.
cat >"$tmp/nvcc" <<'SH'
#!/bin/sh
out= src= med=9
for a in "$@"; do
	case $a in
	-I*tree_A/templates) med=10 ;;
	-I*tree_B/templates) med=8 ;;
	*.cu) src=$a ;;
	esac
done
prev=
for a in "$@"; do [ "$prev" = -o ] && out=$a; prev=$a; done
case $src in *"${FAKE_NVCC_FAIL:-none}"*) echo "error: stand-in failure" >&2; exit 1 ;; esac
echo "ptxas info    : Function properties for _Z11ark_mm_ffmaILb0ELb0EEv9ark_mm_atiiiiiiPc" >&2
echo "    0 bytes stack frame, $((med * 4)) bytes spill stores, $((med * 2)) bytes spill loads" >&2
cat >"$out" <<BIN
#!/bin/sh
[ -n "\${FAKE_NOGPU:-}" ] && { echo "no CUDA device"; exit 77; }
case \$1 in
--check) echo "check 2: output y: rel err 0.0e+00 (tolerance 1e-04) ok" ;;
--bench) echo "bench: \$2 iterations, median $med.00 us, p90 $med.50 us" ;;
esac
BIN
chmod +x "$out"
SH
chmod +x "$tmp/nvcc"
export NVCC="$tmp/nvcc" ARKGEN JOBS=2 ROUNDS=2 BENCH_N=5

cp tests/golden/mlp.cu "$tmp/one.cu"
check "--build: a model file and a generated file, A = HEAD and B = the working tree" \
	sh -c "bench/ab.sh --build '$tmp/d' --a HEAD models/mlp.cfg '$tmp/one.cu' >'$tmp/build.log' 2>&1"
check "--build: A and B of each model" sh -c "[ -x '$tmp/d/mlp.A' ] && [ -x '$tmp/d/mlp.B' ] && [ -x '$tmp/d/one.A' ] && [ -x '$tmp/d/one.B' ]"
check "--build: each tree holds templates and abi" sh -c \
	"[ -f '$tmp/d/tree_A/templates/ark_loop.cuh' ] && [ -f '$tmp/d/tree_B/abi/ark_smem.h' ]"
check "--build: the ptxas output of every build kept" sh -c \
	"grep -q 'spill stores' '$tmp/d/mlp.A.ptxas' && grep -q 'spill stores' '$tmp/d/one.B.ptxas'"
bench/ab.sh --run "$tmp/d" >"$tmp/run.log" 2>&1
check "--run: each model's row with its check, both rounds of A and B, the ratio and the spills" sh -c \
	"grep -q '^| mlp | ok | 10.00 / 10.00 | 8.00 / 8.00 | 0.800 | 40 / 20 | 32 / 16 |$' '$tmp/run.log' &&
	 grep -q '^| one | ok | 10.00 / 10.00 | 8.00 / 8.00 | 0.800 |' '$tmp/run.log'"
check "--run: the geometric mean of B / A and the models on each side of 2%" \
	grep -q '^B / A over 2 models: geometric mean 0.800; 2 faster, 0 slower by more than 2%\.$' "$tmp/run.log"
check "--run: the trees named (A the revision's subject)" sh -c \
	"grep -q \"^A: $(git log -1 --format=%h HEAD) \" '$tmp/run.log' && grep -q '^B: working tree of ' '$tmp/run.log'"
check "--table: the same table again" sh -c "bench/ab.sh --table '$tmp/d' | grep -q '^| mlp | ok | 10.00 / 10.00 |'"
check "--run without a GPU: said, exit 0" sh -c \
	"FAKE_NOGPU=1 bench/ab.sh --run '$tmp/d' >'$tmp/nogpu.log' 2>&1 && grep -q '^== no GPU found' '$tmp/nogpu.log'"
FAKE_NVCC_FAIL=one bench/ab.sh --build "$tmp/e" models/mlp.cfg "$tmp/one.cu" >"$tmp/fail.log" 2>&1
rc=$?
check "--build: a failed build named, exit 1" sh -c "[ $rc -eq 1 ] && grep -q 'one.A: NVCC FAILED' '$tmp/fail.log'"
# another arkgen for A: this one's output with a line of its own
case $ARKGEN in /*) real=$ARKGEN ;; *) real=$PWD/$ARKGEN ;; esac
cat >"$tmp/arkgen-a" <<SH
#!/bin/sh
"$real" "\$@" || exit \$?
for a in "\$@"; do [ "\$prev" = -o ] && echo "/* the other arkgen */" >>"\$a"; prev=\$a; done
exit 0
SH
chmod +x "$tmp/arkgen-a"
bench/ab.sh --build "$tmp/g" --arkgen-a "$tmp/arkgen-a" models/mlp.cfg "$tmp/one.cu" >"$tmp/gen.log" 2>&1
check "--build --arkgen-a: A's files from that arkgen, B's from this one, a .cu the same on both" sh -c \
	"grep -q 'the other arkgen' '$tmp/g/mlp.A.cu' && ! grep -q 'the other arkgen' '$tmp/g/mlp.B.cu' &&
	 cmp -s '$tmp/g/one.A.cu' '$tmp/g/one.B.cu' && [ -x '$tmp/g/mlp.A' ] && [ -x '$tmp/g/mlp.B' ]"
bench/ab.sh --run "$tmp/g" >/dev/null 2>&1
check "--arkgen-a: the table says whose files A's are" sh -c \
	"bench/ab.sh --table '$tmp/g' | grep -q '^A: .*, files of $tmp/arkgen-a$'"
mkdir "$tmp/slim" && cp "$tmp/d"/*.A "$tmp/d"/*.B "$tmp/d"/*.ptxas "$tmp/d/trees.tsv" "$tmp/slim/"
check "--run on a copy without the generated files and trees: the same rows" sh -c \
	"bench/ab.sh --run '$tmp/slim' >'$tmp/slim.log' 2>&1 &&
	 grep -q '^| mlp | ok | 10.00 / 10.00 | 8.00 / 8.00 | 0.800 | 40 / 20 | 32 / 16 |$' '$tmp/slim.log' &&
	 grep -q '^| one | ok |' '$tmp/slim.log'"
# a folder of templates and abi for A (a tree without git): the working tree's, copied
mkdir -p "$tmp/tree" && cp -R templates abi "$tmp/tree/"
bench/ab.sh --build "$tmp/h" --a "$tmp/tree" "$tmp/one.cu" >"$tmp/tree.log" 2>&1
check "--build --a FOLDER: A built against that folder's templates, the table names it" sh -c \
	"[ -f '$tmp/h/tree_A/templates/ark_loop.cuh' ] && [ -x '$tmp/h/one.A' ] &&
	 bench/ab.sh --run '$tmp/h' | grep -q '^A: the templates and abi of $tmp/tree$'"
bench/ab.sh --build "$tmp/f" --a no-such-revision models/mlp.cfg >"$tmp/rev.log" 2>&1
rc=$?
check "--build: a revision that does not exist, exit 1" sh -c "[ $rc -eq 1 ] && grep -q \"no revision 'no-such-revision'\" '$tmp/rev.log'"
