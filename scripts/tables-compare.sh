#!/bin/sh
# scripts/tables-compare.sh REV: do this tree's generated files describe the same computation as
# those of revision REV? Builds REV's arkgen in a temporary worktree, generates every models/*.cfg
# with both (and a few with the options that change what is emitted), and prints the tables of each file with tests/tables_dump.cc (every field of every
# table as numbers), each against the headers of its own revision; the golden files of both
# revisions are dumped too. Diffs the dumps, ignoring the op index of the tasks (" op=..."), which
# older revisions do not have. Prints one line per file; exit status 0 when every pair agrees.
#   scripts/tables-compare.sh 9a810e5
set -u
rev=${1:?usage: scripts/tables-compare.sh REV}
CXX=${CXX:-g++}
cd "$(dirname "$0")/.." || exit 1
make -s build/arkgen || exit 1
tmp=$(mktemp -d) || exit 1
trap 'git worktree remove --force "$tmp/base" >/dev/null 2>&1; rm -rf "$tmp"' EXIT INT TERM
git worktree add --detach "$tmp/base" "$rev" >/dev/null 2>&1 || { echo "cannot check out $rev"; exit 1; }
make -s -C "$tmp/base" build/arkgen >/dev/null || { echo "cannot build arkgen at $rev"; exit 1; }

# dump ROOT CU OUT: the tables of generated file CU, built against the headers of tree ROOT
dump() {
	"$CXX" -std=c++17 -w -Itests/tables_stub -I"$1/abi" -I"$1/runtime" -DARK_TABLES_FILE="\"$2\"" \
		tests/tables_dump.cc -o "$tmp/dump" && "$tmp/dump" | sed 's/ op=.*$//' >"$3"
}

bad=0
# compare NAME OLD_CU NEW_CU
compare() {
	if dump "$tmp/base" "$2" "$tmp/old.txt" && dump "$PWD" "$3" "$tmp/new.txt" && cmp -s "$tmp/old.txt" "$tmp/new.txt"; then
		echo "same: $1 ($(wc -l <"$tmp/new.txt") lines of tables)"
	else
		echo "DIFFERENT: $1"
		diff "$tmp/old.txt" "$tmp/new.txt" | head -20
		bad=1
	fi
}

# every model with the default options, then the options that change what is emitted
n=0
for args in $(ls models/*.cfg) "--sync barrier models/mlp8.cfg" "--sync barrier models/branchy.cfg" \
	"--ll-max 4096 models/comm2.cfg" "--p2p-max 0 models/mlp_tp2.cfg" "--oneshot-max 0 models/mlp_tp4.cfg" \
	"--no-fuse --no-reuse models/mlp.cfg" "--policy wavefront --sms 16 models/branchy.cfg"; do
	n=$((n + 1))
	# shellcheck disable=SC2086
	"$tmp/base/build/arkgen" $args -o "$tmp/$n.old.cu" >/dev/null 2>&1 &&
		build/arkgen $args -o "$tmp/$n.new.cu" >/dev/null 2>&1 || { echo "FAILED: arkgen $args"; bad=1; continue; }
	compare "arkgen $args" "$tmp/$n.old.cu" "$tmp/$n.new.cu"
done
for gf in "$tmp"/base/tests/golden/*.cu; do
	name=$(basename "$gf")
	[ -e "tests/golden/$name" ] && compare "tests/golden/$name" "$gf" "$PWD/tests/golden/$name"
done
exit $bad
