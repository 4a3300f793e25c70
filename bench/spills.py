#!/usr/bin/env python3
"""spills.py: every device function's stack frame and spills in a generated file's build, and the
difference between two builds (say a template change, or one ARK_TILES_* switch, in and out).

A function added under the loop kernel can make ptxas split the registers of the whole call tree
differently and raise the spills of functions the model runs, so a model can lose by a tile it never
calls (bench/NOTES.md, the TF32 tile). This puts those figures side by side before anything is timed.

  bench/spills.py A.cu [B.cu]          compile each with nvcc -Xptxas -v (flags below), one row per
                                       function: stack, spill stores, spill loads (bytes), A then B
  bench/spills.py --log A.log [B.log]  the same from ptxas -v output already written
  options: --nvcc PATH (default nvcc), --flags "..." (default: -O3 -std=c++17 -gencode
           arch=compute_90a,code=sm_90a and -I the repository's abi, templates, runtime, dma),
           -D NAME=VALUE (added to B's build only; with one file, A is built without it)

Rows are sorted by name; functions that differ between the two builds are marked with '*'.
Exit status: 0, 1 when a build or a log could not be read, 2 on bad arguments.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
PROPS = re.compile(r"Function properties for (\S+)")
INTERNAL = re.compile(r"_INTERNAL_[0-9a-f]+_\w*?_cu_[0-9a-f]+::")
FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def parse(text):
    """{mangled name: (stack, spill stores, spill loads)} from ptxas -v output."""
    out, name = {}, None
    for line in text.splitlines():
        m = PROPS.search(line)
        if m:
            name = m.group(1)
            continue
        m = FRAME.search(line)
        if m and name:
            out[name] = tuple(int(x) for x in m.groups())
            name = None
    return out


def demangle(names):
    """mangled -> readable (c++filt where there is one; else as they are)"""
    tool = shutil.which("c++filt")
    if not tool or not names:
        return {n: n for n in names}
    r = subprocess.run([tool], input="\n".join(names), capture_output=True, text=True)
    lines = r.stdout.splitlines() if r.returncode == 0 else []
    return dict(zip(names, lines)) if len(lines) == len(names) else {n: n for n in names}


def build(nvcc, flags, src, defs):
    with tempfile.TemporaryDirectory() as d:
        cmd = [nvcc] + flags + defs + ["-Xptxas", "-v", "-c", src, "-o", os.path.join(d, "x.o")]
        r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stderr[-4000:])
        raise RuntimeError(f"nvcc failed on {src} (exit {r.returncode})")
    return r.stdout + r.stderr


def main(argv):
    ap = argparse.ArgumentParser(description=" ".join(__doc__.strip().split("\n\n")[0].split()))
    ap.add_argument("files", nargs="+", metavar="FILE", help="A.cu [B.cu], or with --log A.log [B.log]")
    ap.add_argument("--log", action="store_true", help="the files are ptxas -v output already written")
    ap.add_argument("--nvcc", default="nvcc")
    ap.add_argument("--flags", help="nvcc flags (default: see the module's text)")
    ap.add_argument("-D", dest="defs", action="append", default=[], metavar="NAME=VALUE",
                    help="added to B's build only; with one file, A is built without it")
    a = ap.parse_args(argv)
    files = a.files
    if len(files) > 2 or (a.log and a.defs):
        ap.error("one or two files; -D only with .cu files")
    flags = a.flags.split() if a.flags is not None else [
        "-O3", "-std=c++17", "-gencode", "arch=compute_90a,code=sm_90a"] + [
        "-I" + os.path.join(ROOT, d) for d in ("abi", "templates", "runtime", "dma")]
    defs = ["-D" + d for d in a.defs]
    if len(files) == 1 and defs:
        files = files * 2  # A without the definitions, B with them
    tables = []
    try:
        for k, f in enumerate(files):
            if a.log:
                with open(f) as fh:
                    text = fh.read()
            else:
                text = build(a.nvcc, flags, f, defs if k == 1 else [])
            t = parse(text)
            if not t:
                raise RuntimeError(f"{f}: no function properties in the ptxas output")
            tables.append(t)
    except (OSError, RuntimeError) as e:
        sys.stderr.write(f"spills.py: {e}\n")
        return 1
    # by readable name, without the per-file prefix of internal functions (_INTERNAL_<hash>_..._cu_<hash>)
    readable = demangle(sorted(set().union(*tables)))
    tables = [{INTERNAL.sub("", readable[n]): v for n, v in t.items()} for t in tables]
    names = sorted(set().union(*tables))
    cell = lambda t, n: "%d / %d / %d" % t[n] if n in t else "-"
    head = ["function", "A stack / stores / loads"] + (["B stack / stores / loads", ""] if len(tables) == 2 else [])
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for n in names:
        row = [n.replace("|", "/"), cell(tables[0], n)]
        if len(tables) == 2:
            row += [cell(tables[1], n), "*" if tables[0].get(n) != tables[1].get(n) else ""]
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
