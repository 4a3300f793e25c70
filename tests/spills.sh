#!/bin/sh
# tests/spills.sh: bench/spills.py on ptxas -v output written here (two builds of made-up functions):
# one row per function by its readable name, internal functions of two files matched, changed rows
# marked, a function only one build has, and clear failures on a missing log or one without
# function properties. No GPU, no nvcc.
PYTHON=${PYTHON:-python3}
cd "$(dirname "$0")/.." || exit 1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arkgen-spills.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
. tests/lib/tap.sh
echo "1..7"

cat > "$tmp/a.log" <<'LOG'
ptxas info    : Compiling entry function '_Z15ark_loop_kernel9ark_kargs' for 'sm_90a'
ptxas info    : Function properties for _Z11ark_mm_ffmaILb0ELb0EEv9ark_mm_atiiiiiiPc
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Function properties for _ZN34_INTERNAL_a621f03f_4_A_cu_f0a0b9d621ark_mm_stream_missingERK6ark_mmi
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Function properties for _Z15ark_loop_kernel9ark_kargs
    288 bytes stack frame, 84 bytes spill stores, 152 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 288 bytes cumulative stack size, 896 bytes smem
LOG
sed -e 's/a621f03f_4_A_cu_f0a0b9d6/b4945fd1_4_B_cu_f0a0b9d6/' -e 's/^    288 bytes/    864 bytes/' \
	"$tmp/a.log" > "$tmp/b.log"
# B: the FMA tile spills, and a function A does not have
awk '/ark_mm_ffma/ { print; getline; print "    0 bytes stack frame, 140 bytes spill stores, 328 bytes spill loads"; next } { print }' \
	"$tmp/b.log" > "$tmp/b2.log"
printf '%s\n%s\n' 'ptxas info    : Function properties for _Z11ark_mm_tf32ILb1ELb0EEv9ark_mm_atiiiiiiPc' \
	'    0 bytes stack frame, 368 bytes spill stores, 320 bytes spill loads' >> "$tmp/b2.log"

"$PYTHON" bench/spills.py --log "$tmp/a.log" "$tmp/b2.log" > "$tmp/out" 2> "$tmp/err"; rc=$?
check "two logs: exit status 0" [ "$rc" -eq 0 ]
check "the loop kernel's row, both builds, marked changed" \
	has '^| ark_loop_kernel(ark_kargs) | 288 / 84 / 152 | 864 / 84 / 152 | \* |$' "$tmp/out"
check "a function whose spills grew, marked" \
	has '^| void ark_mm_ffma<false, false>(.*) | 0 / 0 / 0 | 0 / 140 / 328 | \* |$' "$tmp/out"
check "internal functions of the two files matched by name, not marked" \
	has '^| ark_mm_stream_missing(ark_mm const&, int) | 0 / 0 / 0 | 0 / 0 / 0 |  |$' "$tmp/out"
check "a function only the second build has" \
	has '^| void ark_mm_tf32<true, false>(.*) | - | 0 / 368 / 320 | \* |$' "$tmp/out"
"$PYTHON" bench/spills.py --log "$tmp/none.log" > "$tmp/out" 2> "$tmp/err"; rc=$?
check "a missing log: exit status 1 and its name" sh -c "[ $rc -eq 1 ] && grep -q 'none.log' '$tmp/err'"
echo "nothing here" > "$tmp/empty.log"
"$PYTHON" bench/spills.py --log "$tmp/empty.log" > "$tmp/out" 2> "$tmp/err"; rc=$?
check "a log without function properties: exit status 1, said" \
	sh -c "[ $rc -eq 1 ] && grep -q 'no function properties' '$tmp/err'"
