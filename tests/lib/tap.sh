# tests/lib/tap.sh: the TAP helpers of the shell tests, sourced after they set ARKGEN and tmp (a folder
# of their own) and cd to the repository root.
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
