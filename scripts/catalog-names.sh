#!/bin/sh
# scripts/catalog-names.sh LIST [SKIP]: the names of an X-macro list of abi/ark_ops.h, one a line: the
# first quoted argument of every row of `#define LIST(...)` (X(...) rows, or R(X, ...) rows for the
# op catalog OP_ROWS), leaving out the rows that match the awk pattern SKIP (e.g. ARK_OPF_COMM).
# For the shell tests that check something against the catalog (docs.sh, sweep.sh).
cd "$(dirname "$0")/.." || exit 1
awk -v list="$1" -v skip="${2:-}" '
	$0 ~ "^#define " list "\\(" { on = 1; next }
	on && /[XR]\(/ && (skip == "" || $0 !~ skip) { if (match($0, /"[^"]*"/)) print substr($0, RSTART + 1, RLENGTH - 2) }
	on && !/\\$/ { on = 0 }
' abi/ark_ops.h
