#!/usr/bin/env python3
"""table.py OUT_DIR [MODEL ...]: reads the logs that bench/models.sh leaves in OUT_DIR (--check exit codes,
--bench and --bench-empty lines, torch_baseline.py JSON), writes OUT_DIR/results.json and prints one
markdown table: arkgen with counters and with barriers, the prediction, the PyTorch variants, the best
PyTorch time over arkgen's, and the latency targets."""

import json
import os
import re
import sys

MODELS = ("mlp8", "branchy", "chain64", "mlp")
# latency targets in us, as issue 11 sets them (None: none in us; mlp's is >= 1.0x the CUDA graph, which the
# speed-up column shows)
TARGETS = {"empty": 4.0, "chain64": 18.0, "mlp8": 105.0, "branchy": 40.0, "mlp": None}
TORCH_VARIANTS = ("eager", "graph", "compile", "compile_ro")

NUM = r"([0-9.]+|nan|inf)"
BENCH_RE = re.compile(r"^bench: (\d+) iterations after (\d+) warm-up: median %s us, p99 %s us, min %s us"
		      r"(?: \(predicted %s us\))?" % (NUM, NUM, NUM, NUM), re.M)
EMPTY_RE = re.compile(r"^bench-empty: (\d+) iterations after (\d+) warm-up: median %s us, p99 %s us, min %s us"
		      % (NUM, NUM, NUM), re.M)


def read(path):
	try:
		with open(path) as f:
			return f.read()
	except OSError:
		return None


def read_rc(path):
	s = read(path)
	try:
		return int(s.strip()) if s is not None else None
	except ValueError:
		return None


def parse_bench(text, rx):
	"""The numbers of a bench: / bench-empty: line, or None."""
	m = rx.search(text or "")
	if not m:
		return None
	r = {"iters": int(m.group(1)), "warmup": int(m.group(2)), "median_us": float(m.group(3)),
	     "p99_us": float(m.group(4)), "min_us": float(m.group(5))}
	if m.lastindex >= 6 and m.group(6) is not None:
		r["predicted_us"] = float(m.group(6))
	return r


def collect(out, models):
	res = {"gpu": None, "models": {}, "empty": None}
	gpu = (read(os.path.join(out, "gpu.txt")) or "").strip()
	for m in models:
		e = {"target_us": TARGETS.get(m)}
		for s in ("counters", "barrier"):
			x = os.path.join(out, "%s_%s" % (m, s))
			b = parse_bench(read(x + ".bench.log"), BENCH_RE)
			e[s] = {"check_rc": read_rc(x + ".check.rc"), "bench_rc": read_rc(x + ".bench.rc"), "bench": b}
			if b is None or "predicted_us" not in b:  # the schedule also has the prediction
				try:
					with open(x + ".json") as f:
						e[s]["predicted_us"] = json.load(f).get("predicted_us")
				except (OSError, ValueError):
					pass
			else:
				e[s]["predicted_us"] = b["predicted_us"]
		t = read(os.path.join(out, m + ".torch.json"))
		try:
			e["torch"] = json.loads(t) if t else None
		except ValueError:
			e["torch"] = None
		if e["torch"] is None:
			log = (read(os.path.join(out, m + ".torch.log")) or "").strip().splitlines()
			e["torch_error"] = log[-1] if log else "not run"
		elif not gpu:
			gpu = e["torch"].get("meta", {}).get("gpu", "")
		res["models"][m] = e
	res["empty"] = parse_bench(read(os.path.join(out, "empty.log")), EMPTY_RE)
	res["empty_target_us"] = TARGETS["empty"]
	res["gpu"] = gpu or "unknown GPU"
	return res


def fmt(v, digits=1):
	return "-" if v is None else "%.*f" % (digits, v)


def median_of(e, s):
	b = e[s]["bench"]
	return b["median_us"] if b else None


def torch_cell(e, v):
	t = e.get("torch")
	if t is None:
		return "n/a", None
	r = t.get(v)
	if r is None:
		return "-", None
	if r.get("median_us") is None:
		return "n/a", None
	if r.get("matches_eager") is False:  # left out of the best PyTorch time
		return fmt(r["median_us"]) + " (wrong)", None
	return fmt(r["median_us"]), r["median_us"]


def check_cell(e):
	rcs = [e[s]["check_rc"] for s in ("counters", "barrier")]
	if all(rc == 0 for rc in rcs):
		return "ok"
	return "/".join("ok" if rc == 0 else ("-" if rc is None else "FAIL %d" % rc) for rc in rcs)


def met_cell(value, target):
	if target is None:
		return "-"
	if value is None:
		return "not measured"
	return "met" if value <= target else "missed"


def table(res):
	lines = ["GPU: %s" % res["gpu"], "",
		 "| model | check | arkgen counters (us) | barrier (us) | counters/barrier | predicted (us) "
		 "| PyTorch eager (us) | graph (us) | compile (us) | compile+CUDA graph (us) "
		 "| speed-up: best PyTorch / arkgen | target (us) | met |",
		 "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
	notes = []
	for m, e in res["models"].items():
		c, b = median_of(e, "counters"), median_of(e, "barrier")
		cells = [torch_cell(e, v) for v in TORCH_VARIANTS]
		times = [t for _, t in cells if t is not None]
		best = min(times) if times else None
		e["best_torch_us"] = best
		e["speedup"] = best / c if best is not None and c else None
		e["met"] = met_cell(c, e["target_us"])
		if e["counters"]["check_rc"] not in (0, None) and e["met"] == "met":
			e["met"] = "met, but --check failed"
		lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
			m, check_cell(e), fmt(c), fmt(b), fmt(c / b if c is not None and b else None, 2),
			fmt(e["counters"].get("predicted_us")), cells[0][0], cells[1][0], cells[2][0], cells[3][0],
			"-" if e["speedup"] is None else "%.2fx" % e["speedup"],
			"-" if e["target_us"] is None else "<= %g" % e["target_us"], e["met"]))
		t = e.get("torch") or {}
		for v in TORCH_VARIANTS:
			if isinstance(t.get(v), dict) and t[v].get("error"):
				notes.append("%s, PyTorch %s: n/a (%s)" % (m, v, t[v]["error"]))
		if e.get("torch_error"):
			notes.append("%s, PyTorch: %s" % (m, e["torch_error"]))
	em = res["empty"]["median_us"] if res["empty"] else None
	res["empty_met"] = met_cell(em, res["empty_target_us"])
	lines.append("| empty iteration | - | %s | - | - | - | - | - | - | - | - | <= %g | %s |" %
		     (fmt(em, 2), res["empty_target_us"], res["empty_met"]))
	lines.append("")
	lines.append("Medians per iteration. arkgen: host-timed from doorbell to completion (--bench); PyTorch: "
		     "CUDA events around each forward, each waited for. Speed-up > 1: arkgen (counters) is faster; "
		     "a PyTorch variant whose outputs differ from eager is marked (wrong) and left out of the best.")
	lines.extend(notes)
	return "\n".join(lines)


def main(argv):
	if not argv or argv[0] in ("-h", "--help"):
		print(__doc__.strip())
		return 0 if argv else 2
	out = argv[0]
	res = collect(out, argv[1:] or MODELS)
	text = table(res)
	with open(os.path.join(out, "results.json"), "w") as f:
		json.dump(res, f, indent=1)
		f.write("\n")
	print(text)
	return 0


if __name__ == "__main__":
	sys.exit(main(sys.argv[1:]))
