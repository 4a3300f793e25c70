# bench/lib.sh: the helpers the bench scripts share, sourced after they set ROOT.
# shellcheck shell=bash

# die MESSAGE: the script's name and the message on stderr, exit 1
die() { echo "${0##*/}: $*" >&2; exit 1; }

# usage [STATUS]: the script's header comment (from line 2 to its 'set -u'), exit STATUS (default 2)
usage() { sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit "${1:-2}"; }

# limit SECONDS CMD...: runs CMD under coreutils' timeout when there is one
limit() {
	local s=$1
	shift
	if command -v timeout >/dev/null 2>&1; then timeout "$s" "$@"; else "$@"; fi
}

# libs_of BINARY DIR: copies into DIR the shared libraries of BINARY that a GPU machine may lack
# (cudart, cJSON), where the binaries' runs put DIR first on LD_LIBRARY_PATH
libs_of() {
	mkdir -p "$2" || return 1
	ldd "$1" 2>/dev/null | awk '/libcudart|libcjson/ && $3 ~ /^\// {print $3}' | while read -r l; do
		cp -L "$l" "$2/"
	done
}

# nvcc_all DIR NAME...: every DIR/NAME.cu built into DIR/NAME by "$NVCC" $flags, all at once; the
# output of each in DIR/NAME.nvcc.log; dies naming those that failed, with their logs' last lines
nvcc_all() {
	local d=$1 x p pids="" failed=""
	shift
	echo "== nvcc: $# loop kernels in parallel"
	for x in "$@"; do
		rm -f "$d/$x"
		# shellcheck disable=SC2086
		"$NVCC" $flags "$d/$x.cu" -o "$d/$x" >"$d/$x.nvcc.log" 2>&1 &
		pids="$pids $!:$x"
	done
	for p in $pids; do
		wait "${p%%:*}" || failed="$failed ${p#*:}"
	done
	for x in $failed; do
		echo "nvcc failed for $x:" >&2
		tail -n 20 "$d/$x.nvcc.log" | sed 's/^/  /' >&2
	done
	[ -z "$failed" ] || die "nvcc failed for:$failed"
}
