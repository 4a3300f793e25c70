#!/usr/bin/env python3
"""trace_phases.py: where a traced iteration's time went, op by op.

Joins the Chrome trace a generated binary writes (`./model --trace T.json`) with the schedule arkgen
wrote for it (`arkgen model.cfg --schedule S.json`) and prints, for every op in the order its first
task started: when its tasks ran (first start, last end, the span between), how many tasks, their
median and longest time, the bytes they read and write (the schedule's estimate) and the rate that
makes over the span. Then, per GPU, how much of the iteration the SMs spent inside tasks.

    bench/trace_phases.py T.json S.json                 every op
    bench/trace_phases.py T.json S.json --match 'blk\\.3\\.|^output'   the ops whose names match

Times are microseconds from the iteration's first task; an op's span includes the waits between its
tasks, which is what a dependent op downstream sees.
"""
import argparse
import json
import re
import statistics
import sys


def load(trace_path, schedule_path):
    with open(trace_path) as f:
        trace = json.load(f)
    with open(schedule_path) as f:
        sched = json.load(f)
    vctas = {v["id"]: v for v in sched.get("vctas", [])}
    tasks = []
    for e in trace.get("traceEvents", []):
        if e.get("ph") != "X":
            continue
        a = e.get("args", {})
        v = vctas.get(a.get("vcta"))
        op = v["op"] if v else e["name"].split(" ")[0]
        tmpl = v["template"] if v else e.get("cat", "?")
        tasks.append({"gpu": e.get("pid", 0), "sm": e.get("tid", 0), "ts": float(e["ts"]),
                      "dur": float(e["dur"]), "op": op, "tmpl": tmpl,
                      "bytes": float(v["bytes"]) if v else 0.0})
    return trace, sched, tasks


def phases(tasks):
    ops = {}
    for t in tasks:
        key = (t["gpu"], t["op"])
        p = ops.setdefault(key, {"gpu": t["gpu"], "op": t["op"], "tmpls": [], "durs": [], "bytes": 0.0,
                                 "start": t["ts"], "end": t["ts"] + t["dur"]})
        if t["tmpl"] not in p["tmpls"]:
            p["tmpls"].append(t["tmpl"])
        p["durs"].append(t["dur"])
        p["bytes"] += t["bytes"]
        p["start"] = min(p["start"], t["ts"])
        p["end"] = max(p["end"], t["ts"] + t["dur"])
    return sorted(ops.values(), key=lambda p: (p["start"], p["gpu"], p["op"]))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace", help="the binary's --trace output")
    ap.add_argument("schedule", help="arkgen's --schedule output for the same model")
    ap.add_argument("--match", help="only the ops whose names match this regular expression")
    args = ap.parse_args(argv)
    try:
        trace, sched, tasks = load(args.trace, args.schedule)
    except (OSError, ValueError, KeyError) as e:
        print(f"trace_phases: {e}", file=sys.stderr)
        return 2
    if not tasks:
        print(f"trace_phases: {args.trace}: no task events (was it written by --trace?)", file=sys.stderr)
        return 2
    pat = re.compile(args.match) if args.match else None
    model = trace.get("otherData", {}).get("model", sched.get("model", "?"))
    gpus = sorted({t["gpu"] for t in tasks})
    multi = len(gpus) > 1
    print(f"# {model}: {len(tasks)} tasks traced")
    print("| " + ("GPU | " if multi else "") + "op | template | start (us) | span (us) | tasks | "
          "median (us) | longest (us) | MB | GB/s over the span |")
    print("|" + "---|" * (10 if multi else 9))
    for p in phases(tasks):
        if pat and not pat.search(p["op"]):
            continue
        span = p["end"] - p["start"]
        rate = p["bytes"] / 1e3 / span if span > 0 else 0.0
        print("| " + (f"{p['gpu']} | " if multi else "") +
              f"{p['op']} | {'+'.join(p['tmpls'])} | {p['start']:.1f} | {span:.1f} | {len(p['durs'])} | "
              f"{statistics.median(p['durs']):.2f} | {max(p['durs']):.2f} | {p['bytes'] / 1e6:.2f} | {rate:.0f} |")
    # the schedule's "sms" counts the SMs of every GPU it places on
    sched_gpus = len({v.get("gpu", 0) for v in sched.get("vctas", [])}) or 1
    for g in gpus:
        mine = [t for t in tasks if t["gpu"] == g]
        t0 = min(t["ts"] for t in mine)
        t1 = max(t["ts"] + t["dur"] for t in mine)
        ran = len({t["sm"] for t in mine})
        sms = sched.get("sms", 0) // sched_gpus or ran
        busy = sum(t["dur"] for t in mine)
        print(f"# GPU {g}: iteration {t1 - t0:.1f} us, {ran} SMs ran tasks, "
              f"inside tasks {100 * busy / (sms * (t1 - t0)) if t1 > t0 else 0:.1f}% of {sms} SMs x the iteration")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
