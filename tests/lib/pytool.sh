# tests/lib/pytool.sh: the preamble and helpers of the shell tests of the Python tools (tests/gguf.sh,
# tests/convert.sh), sourced from the repository root: ARKGEN and PYTHON (overridable), a temporary
# folder $tmp of the test's own (removed on exit), tests/lib/tap.sh; a skip of the whole test without
# $PYTHON.
ARKGEN=${ARKGEN:-build/arkgen}
PYTHON=${PYTHON:-python3}
tmp=${TMPDIR:-/tmp}/arkgen-$(basename "$0" .sh).$$
mkdir -p "$tmp" || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

. tests/lib/tap.sh

if ! command -v "$PYTHON" >/dev/null 2>&1; then
	echo "1..0 # SKIP no $PYTHON"
	exit 0
fi

# tool SCRIPT ARGS...: runs a Python tool, its stdout in $tmp/conv.out, its stderr in $tmp/conv.err
tool() { "$PYTHON" "$@" >"$tmp/conv.out" 2>"$tmp/conv.err"; }
# tool_fails SCRIPT WANT MESSAGE ARGS...: the tool exits with status WANT, MESSAGE (a grep pattern)
# on its stderr and no Python traceback. (The helpers' variables start with _: the tests' own are
# global too.)
tool_fails() {
	_tf_script=$1 _tf_want=$2 _tf_msg=$3
	shift 3
	tool "$_tf_script" "$@"
	_tf_rc=$?
	[ $_tf_rc -eq "$_tf_want" ] || { echo "# exit $_tf_rc, expected $_tf_want"; sed 's/^/# /' "$tmp/conv.err"; return 1; }
	grep -q 'Traceback' "$tmp/conv.err" && { echo "# a Python traceback:"; sed 's/^/# /' "$tmp/conv.err"; return 1; }
	has "$_tf_msg" "$tmp/conv.err"
}
# arkgen_or_skip MISSING WHY DESCRIPTION ARKGEN_ARGS...: one TAP line: ok when arkgen accepts the
# arguments; a skip (DESCRIPTION: WHY: the error) while its first error matches MISSING (an extended
# regular expression: what this arkgen lacks); any other error fails.
arkgen_or_skip() {
	_as_missing=$1 _as_why=$2 _as_desc=$3
	shift 3
	i=$((i + 1))
	"$ARKGEN" "$@" >"$tmp/ark.out" 2>"$tmp/ark.err"
	_as_rc=$?
	_as_first=$(head -n 1 "$tmp/ark.err")
	if [ $_as_rc -eq 0 ]; then
		echo "ok $i - $_as_desc"
	elif echo "$_as_first" | grep -q -E "$_as_missing"; then
		echo "ok $i # SKIP $_as_desc: $_as_why: $_as_first"
	else
		echo "not ok $i - $_as_desc"
		sed 's/^/# /' "$tmp/ark.err" | head -n 5
	fi
}
