#!/bin/sh
# tests/docs.sh: docs/model-format.md against the code. Every op of the catalog (OP_ROWS, abi/ark_ops.h) has a
# heading with its name in backticks; every attribute of ATTR_LIST is named in backticks; every
# ```cfg block is a model arkgen accepts (exit 0) or, with a file name after the tag, a file later
# blocks @include; every ```cfg-error block is a model arkgen rejects (exit 1); a ```stderr block right
# after one of those is exactly what arkgen prints on stderr for it (the model saved as model.cfg in
# the current directory). Prints TAP.
ARKGEN=${ARKGEN:-build/arkgen}
cd "$(dirname "$0")/.." || exit 1
case $ARKGEN in
*/*) case $ARKGEN in /*) ;; *) ARKGEN=$PWD/$ARKGEN ;; esac ;;
esac
DOC=${DOC:-docs/model-format.md}
OPS=abi/ark_ops.h
tmp=${TMPDIR:-/tmp}/arkgen-docs.$$
mkdir -p "$tmp/blocks" "$tmp/work" || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# Results go to a file first; the plan is printed before them at the end.
res=$tmp/results
: >"$res"
i=0
ok() { i=$((i + 1)); echo "ok $i - $1" >>"$res"; }
notok() { i=$((i + 1)); echo "not ok $i - $1" >>"$res"; }
diag() { sed 's/^/# /' "$1" >>"$res"; }

if [ ! -r "$DOC" ]; then
	echo "1..1"
	echo "not ok 1 - $DOC is missing"
	exit 0
fi

# (a) every op has a heading with its name in backticks
ops=$(sh scripts/catalog-names.sh OP_ROWS)
if [ -n "$ops" ]; then ok "OP_ROWS parsed from $OPS"; else notok "OP_ROWS parsed from $OPS: no op found"; fi
for op in $ops; do
	if grep -q "^#.*\`$op\`" "$DOC"; then
		ok "op $op has a heading in $DOC"
	else
		notok "op $op has a heading in $DOC (a line like '### \`$op\`')"
	fi
done

# (b) every attribute is named
attrs=$(sh scripts/catalog-names.sh ATTR_LIST)
if [ -n "$attrs" ]; then ok "ATTR_LIST parsed from $OPS"; else notok "ATTR_LIST parsed from $OPS: no attribute found"; fi
for a in $attrs; do
	if grep -q "\`$a\`" "$DOC"; then
		ok "attribute $a is documented in $DOC"
	else
		notok "attribute $a is documented in $DOC"
	fi
done

# (c) the fenced blocks: blocks/N holds block N, index lines are "N LINE TAG [NAME]"
awk -v dir="$tmp/blocks" '
	/^```/ {
		if (!inb) { inb = 1; n++; f = dir "/" n; printf "" > f; print n, NR, substr($0, 4) > (dir "/index") }
		else { inb = 0; close(f) }
		next
	}
	inb { print > f }
	END { if (inb) print "unterminated", NR > (dir "/index") }
' "$DOC"
touch "$tmp/blocks/index"
if grep -q '^unterminated' "$tmp/blocks/index"; then
	notok "every fenced block of $DOC is closed"
fi

n_cfg=0
n_err=0
last=""     # tag of the previous block, when it was a checked model
last_line=0
while read -r n line tag name; do
	[ "$n" = unterminated ] && continue
	b=$tmp/blocks/$n
	case $tag in
	cfg | cfg-error)
		if [ -n "$name" ]; then
			case $name in
			*/* | .*) notok "$DOC:$line: include file name '$name' must be a plain name"; continue ;;
			esac
			cp "$b" "$tmp/work/$name"
		fi
		if ! grep -q '^[[:space:]]*version[[:space:]]*[=:]' "$b"; then
			[ -n "$name" ] && [ "$tag" = cfg ] && { last=""; continue; }
			notok "$DOC:$line: a \`\`\`$tag block is a complete model (it has no 'version'); put fragments in plain \`\`\` blocks"
			last=""
			continue
		fi
		cp "$b" "$tmp/work/model.cfg"
		(cd "$tmp/work" && "$ARKGEN" model.cfg >"$tmp/out" 2>"$tmp/err")
		rc=$?
		if [ "$tag" = cfg ]; then
			n_cfg=$((n_cfg + 1))
			want=0
			what="accepted"
		else
			n_err=$((n_err + 1))
			want=1
			what="rejected with exit status 1"
		fi
		if [ "$rc" -eq "$want" ]; then
			ok "$DOC:$line: the model is $what"
		else
			notok "$DOC:$line: the model is $what (exit status $rc)"
			diag "$tmp/err"
		fi
		cp "$tmp/err" "$tmp/last_err"
		last=$tag
		last_line=$line
		;;
	stderr)
		if [ -z "$last" ]; then
			notok "$DOC:$line: a \`\`\`stderr block follows a \`\`\`cfg or \`\`\`cfg-error block"
		elif cmp -s "$b" "$tmp/last_err"; then
			ok "$DOC:$line: arkgen prints this for the model at line $last_line"
		else
			notok "$DOC:$line: arkgen prints this for the model at line $last_line"
			{
				echo "expected (the doc):"
				cat "$b"
				echo "got (arkgen):"
				cat "$tmp/last_err"
			} >"$tmp/d"
			diag "$tmp/d"
		fi
		last=""
		;;
	*)
		last=""
		;;
	esac
done <"$tmp/blocks/index"

# The checks above would pass on a doc without examples: make sure there are some of each kind.
if [ "$n_cfg" -ge 1 ]; then ok "$DOC has $n_cfg \`\`\`cfg models"; else notok "$DOC has \`\`\`cfg models"; fi
if [ "$n_err" -ge 1 ]; then ok "$DOC has $n_err \`\`\`cfg-error models"; else notok "$DOC has \`\`\`cfg-error models"; fi

echo "1..$i"
cat "$res"
