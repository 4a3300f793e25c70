#!/bin/sh
# tests/bad.sh: every tests/bad/*.cfg must be rejected with exit status 1 (not a crash) and the exact
# first stderr line written on its first line as "# expect: ...". (tests/bad/inc/ holds the files
# that some of them @include.) Then the models that cannot be files: a directory.
ARKGEN=${ARKGEN:-build/arkgen}
cd "$(dirname "$0")/.." || exit 1
tmp=${TMPDIR:-/tmp}/arkgen-bad.$$
trap 'rm -f "$tmp"' EXIT INT TERM

n=0
for f in tests/bad/*.cfg; do n=$((n + 1)); done
echo "1..$((n + 1))"
i=0
for f in tests/bad/*.cfg; do
	i=$((i + 1))
	want=$(sed -n '1s/^# expect: //p' "$f")
	"$ARKGEN" "$f" >/dev/null 2>"$tmp"
	rc=$?
	got=$(head -n 1 "$tmp")
	if [ -z "$want" ]; then
		echo "not ok $i - $f: no '# expect:' line"
	elif [ "$rc" -ne 1 ]; then
		echo "not ok $i - $f: exit status $rc, expected 1"
		sed 's/^/# /' "$tmp"
	elif [ "$got" != "$want" ]; then
		echo "not ok $i - $f: first stderr line differs"
		echo "#   expected: $want"
		echo "#   got:      $got"
	else
		echo "ok $i - $f"
	fi
done

# A directory as the model: one located line, and nothing from libconfig's scanner.
i=$((i + 1))
"$ARKGEN" tests/bad >/dev/null 2>"$tmp"
rc=$?
got=$(cat "$tmp")
if [ "$rc" -eq 1 ] && [ "$got" = "tests/bad: error: is a directory" ]; then
	echo "ok $i - a directory as the model"
else
	echo "not ok $i - a directory as the model: exit status $rc"
	sed 's/^/# /' "$tmp"
fi
