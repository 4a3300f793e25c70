#!/bin/sh
# tests/chain_dispatch.sh: in the file arkgen generates for every model of models/ and tests/models/,
# each elementwise chain compiled with its steps is run by the tasks of that chain and of no other:
# ark_chain_gen's case for a chain function is the op field of the chain's tasks (its first op's
# place in ops[]), and the chain's descriptor, which those tasks name, has the first op's kind and
# the number of steps the function checks before it runs (ark_chain_gen_mismatch stops the kernel
# otherwise). tests/models/chains_order.cfg lists its ops out of the graph's order, where the op's
# index in the file and its place in ops[] differ.
ARKGEN=${ARKGEN:-build/arkgen}
cd "$(dirname "$0")/.." || exit 1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
models=$(ls models/*.cfg tests/models/*.cfg)
echo "1..$(echo "$models" | wc -l)"
i=0
for m in $models; do
	i=$((i + 1))
	name=$(basename "$m" .cfg)
	if ! "$ARKGEN" "$m" -o "$tmp/$name.cu" >"$tmp/out" 2>&1; then
		echo "not ok $i - $name: arkgen failed"
		sed 's/^/# /' "$tmp/out"
		continue
	fi
	# One record a line: "desc J KIND STEPS" for every chain descriptor of the op-params table (its
	# entry, its first op's kind, its steps), "task OP HEAD J" for every chain task (its op field, the
	# head op its comment names, its params' entry), "fn K HEAD" for every compiled chain (the
	# function's number, the head op of its leading comment), "check K KIND STEPS" for the check of
	# its params that function K makes, and "case K F" for every case of ark_chain_gen
	awk '
		/^\t\/\* [0-9]+: chain of [0-9]+ elementwise ops/ { j = $2; sub(/:/, "", j); n = $5; d = 1; next }
		d { k = $0; sub(/.*\.kind = /, "", k); sub(/,.*/, "", k); print "desc", j, k, n; d = 0 }
		/ARK_T_EW_CHAIN, / && /\/\* v[0-9]+ / {
			f = $0; sub(/^[ \t]*\{[ \t]*/, "", f); split(f, a, /,[ \t]*/)
			head = $0; sub(/.*\/\* v[0-9]+ /, "", head); sub(/ .*/, "", head)
			print "task", a[1], head, a[2]
		}
		/^\tif \(p\.kind != ARK_OP_[A-Z_0-9]+ \|\| p\.splits != [0-9]+\)/ { c = $0; sub(/.*p\.kind != /, "", c); kk = c; sub(/ .*/, "", kk); sub(/.*p\.splits != /, "", c); sub(/\).*/, "", c); print "check", fnk, kk, c }
		/^\/\* The chain of [0-9]+ elementwise ops from / { head = $0; sub(/.* ops from /, "", head); sub(/ .*/, "", head); want = 1 }
		want && /ark_chain_op[0-9]+\(const ark_opp/ { k = $0; sub(/.*ark_chain_op/, "", k); sub(/\(.*/, "", k); print "fn", k, head; fnk = k; want = 0 }
		/^\tcase [0-9]+: ark_chain_op[0-9]+\(/ { k = $2; sub(/:/, "", k); f = $3; sub(/^ark_chain_op/, "", f); sub(/\(.*/, "", f); print "case", k, f }
	' "$tmp/$name.cu" >"$tmp/keys"
	bad=$(awk '
		$1 == "desc" { dkind[$2] = $3; dsteps[$2] = $4 }
		$1 == "task" { optask[$2] = $3; if (!(($2, $4) in seen)) { seen[$2, $4] = 1; opp[$2] = opp[$2] " " $4 } }
		$1 == "fn" { fn[$2] = $3; nfn++ }
		$1 == "check" { ckind[$2] = $3; csteps[$2] = $4 }
		$1 == "case" { cs[$2] = $3; ncase++ }
		END {
			for (k in fn) {
				if (!(k in optask)) { print "chain " fn[k] ": no task has op " k; continue }
				if (optask[k] != fn[k]) print "chain " fn[k] ": op " k " is the tasks of " optask[k]
				if (!(k in ckind)) { print "chain " fn[k] ": no check of its params"; continue }
				n = split(opp[k], js, " ")
				for (i = 1; i <= n; i++)
					if (dkind[js[i]] != ckind[k] || dsteps[js[i]] != csteps[k])
						print "chain " fn[k] ": its tasks name params " js[i] " (" dkind[js[i]] ", " dsteps[js[i]] " steps), it checks " ckind[k] ", " csteps[k]
			}
			for (k in cs)
				if (!(cs[k] in fn) || cs[k] != k) print "case " k " runs ark_chain_op" cs[k]
			if (nfn != ncase) print nfn " chains compiled, " ncase " cases"
		}' "$tmp/keys")
	if [ -z "$bad" ]; then
		echo "ok $i - $name: $(grep -c '^fn' "$tmp/keys") compiled chains, each run by its own tasks"
	else
		echo "not ok $i - $name"
		echo "$bad" | sed 's/^/# /'
	fi
done
