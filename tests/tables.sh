#!/bin/sh
# tests/tables.sh: the tables of the generated files, printed field by field by tests/tables_dump.cc
# (numbers only, however the file spells them), match the canonical dumps tests/golden/*.tables.
# The emitter's layout may change freely (make golden); what the tables say may not, unless the
# dumps are regenerated on purpose:  tests/tables.sh --update
# scripts/tables-compare.sh compares every model against an older revision the same way.
ARKGEN=${ARKGEN:-build/arkgen}
CXX=${CXX:-g++}
cd "$(dirname "$0")/.." || exit 1
tmp=${TMPDIR:-/tmp}/arkgen-tables.$$
case $tmp in /*) ;; *) tmp=$PWD/$tmp ;; esac # #include "PATH" of a relative path would be relative to tests/
mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# dump CU OUT: prints the tables of generated file CU into OUT
dump() {
	"$CXX" -std=c++17 -w -Itests/tables_stub -Iabi -Iruntime -DARK_TABLES_FILE="\"$1\"" tests/tables_dump.cc \
		-o "$tmp/dump" >"$tmp/cxx" 2>&1 && "$tmp/dump" >"$2"
}

update=0
[ "$1" = --update ] && update=1
n=0
for f in tests/golden/*.tables; do [ -e "$f" ] && n=$((n + 1)); done
if ! command -v "$CXX" >/dev/null 2>&1; then
	echo "1..0 # SKIP no C++ compiler ($CXX)"
	exit 0
fi
echo "1..$((2 * n))"
i=0
for f in tests/golden/*.tables; do
	[ -e "$f" ] || continue
	name=$(basename "$f" .tables)
	i=$((i + 1))
	if "$ARKGEN" --gpu analytic "models/$name.cfg" -o "$tmp/$name.cu" >"$tmp/cxx" 2>&1 && dump "$tmp/$name.cu" "$tmp/$name.tables"; then
		echo "ok $i - $name: generated and dumped"
	else
		echo "not ok $i - $name: generated and dumped"
		sed 's/^/# /' "$tmp/cxx" | head -20
	fi
	i=$((i + 1))
	[ $update = 1 ] && cp "$tmp/$name.tables" "$f"
	if cmp -s "$f" "$tmp/$name.tables"; then
		echo "ok $i - $name: its tables match $f"
	else
		echo "not ok $i - $name: its tables differ from $f (if that is meant: tests/tables.sh --update)"
		diff "$f" "$tmp/$name.tables" | head -20 | sed 's/^/# /'
	fi
done
