#!/bin/sh
# tests/trace_phases.sh: bench/trace_phases.py on a trace made up from arkgen's schedule of
# tests/models/gates.cfg (each vCTA a task of known start and length on its SM): one row per op with
# its task count, start, span and bytes as the schedule and the made-up times give them, --match,
# and clear failures on a trace with no tasks or a missing file. No GPU.
ARKGEN=${ARKGEN:-build/arkgen}
PYTHON=${PYTHON:-python3}
cd "$(dirname "$0")/.." || exit 1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/arkgen-trace.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
. tests/lib/tap.sh
echo "1..6"

"$ARKGEN" tests/models/gates.cfg -o "$tmp/m.cu" --schedule "$tmp/s.json" > /dev/null || echo "# arkgen failed"
# vCTA v starts at 10 * pos + v / 100 us on its SM and lasts 2 us (Chrome trace events, as --trace writes)
"$PYTHON" - "$tmp/s.json" "$tmp/t.json" "$tmp/want" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
ev, ops = [], {}
for v in s["vctas"]:
    ts = 10.0 * v["pos"] + v["id"] / 100.0
    ev.append({"name": f"{v['op']} {v['template']}", "cat": "x", "ph": "X", "pid": 0, "tid": v["sm"],
               "ts": ts, "dur": 2.0, "args": {"task": v["id"], "vcta": v["id"], "op": 0, "waits": 0, "signal": -1}})
    o = ops.setdefault(v["op"], [0, ts, ts + 2.0, 0.0])
    o[0] += 1; o[1] = min(o[1], ts); o[2] = max(o[2], ts + 2.0); o[3] += v["bytes"]
t0 = min(e["ts"] for e in ev)
json.dump({"otherData": {"model": s["model"]}, "traceEvents": ev}, open(sys.argv[2], "w"))
with open(sys.argv[3], "w") as f:
    for name, (n, a, b, by) in sorted(ops.items()):
        f.write(f"| {name} | {n} | {a - t0:.1f} | {b - a:.1f} | {by / 1e6:.2f} |\n")
PY
"$PYTHON" bench/trace_phases.py "$tmp/t.json" "$tmp/s.json" > "$tmp/out" 2> "$tmp/err"
check "trace_phases.py reads the trace and the schedule" test $? -eq 0
# op | template | start | span | tasks | median | longest | MB | rate -> op | tasks | start | span | MB
awk -F' \\| ' '/^\| [^-o]/ { sub(/^\| /, "", $1); printf "| %s | %s | %s | %s | %s |\n", $1, $5, $3, $4, $8 }' "$tmp/out" |
	sort > "$tmp/got"
sort "$tmp/want" > "$tmp/w2"
check "one row per op: its tasks, start, span and bytes" cmp -s "$tmp/got" "$tmp/w2"
[ -s "$tmp/got" ] || echo "# no rows"; cmp -s "$tmp/got" "$tmp/w2" || diff "$tmp/w2" "$tmp/got" | sed 's/^/# /' | head -20
first=$(head -1 "$tmp/w2" | cut -d' ' -f2)
"$PYTHON" bench/trace_phases.py "$tmp/t.json" "$tmp/s.json" --match "^$first\$" > "$tmp/one" 2>&1
check "--match keeps only the ops it matches" test "$(grep -c '^| [^-o]' "$tmp/one")" -eq 1
check "the SMs' share of the iteration inside tasks" grep -q '^# GPU 0: iteration [0-9.]* us, [0-9]* SMs ran tasks, inside tasks [0-9.]*% of' "$tmp/out"
echo '{"traceEvents": []}' > "$tmp/empty.json"
"$PYTHON" bench/trace_phases.py "$tmp/empty.json" "$tmp/s.json" > /dev/null 2> "$tmp/err"
check "a trace without tasks: exit 2, said so" sh -c "test $? -eq 2 && grep -q 'no task events' '$tmp/err'"
"$PYTHON" bench/trace_phases.py "$tmp/nothere.json" "$tmp/s.json" > /dev/null 2> "$tmp/err"
check "a missing file: exit 2, named" sh -c "test $? -eq 2 && grep -q 'nothere.json' '$tmp/err'"
