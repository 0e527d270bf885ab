#!/usr/bin/env python3
"""table.py DIR - the one table of a benchmark run (benchmarks/h200_final.sh writes DIR).

Reads what the parts of the run wrote into DIR, each measured in that run:
  gemm.txt      benchmarks/gemm_run.sh: generated matmuls (both paths) vs cuBLASLt
  bw.txt        benchmarks/bandwidth_run.sh: bandwidth-bound kernels vs the device's copy bandwidth
  conv.txt      benchmarks/conv_peer.py: ResNet-50 conv layers vs cuDNN (PyTorch, channels_last)
  peers.txt     benchmarks/peers.py: whole models vs PyTorch eager, torch.compile, JAX jit
  examples.txt  the f32 examples through `graphc bench` (both paths)
and prints one row per case: what, shape, dtype, graphc's median time (the default LLVM path where
both were timed), its rate (TFLOP/s or GB/s), % of the roofline measured in the same run (copy
bandwidth; for compute-bound rows the peer is the bar), the peer and its time, and peer time /
graphc time (above 1: graphc is faster). Memory rows time runs queued back to back, as the copy
baseline queues its copies; every other row times each run alone, as its peer does. Parts that are missing are skipped; a line that does not
parse is reported, not guessed.
"""
import math
import os
import re
import sys

COLS = ("kind", "case", "dtype", "graphc ms", "rate", "% roofline", "peer", "peer ms", "peer/graphc")


def num(s):
    try:
        return float(s)
    except ValueError:
        return float("nan")


def fmt(x, digits=4):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def gemm(path, rows, bad):
    for line in open(path):
        if "|" not in line or line.startswith("dtype"):
            continue
        cells = [c.split() for c in line.split("|")]
        try:
            dtype, shape, epi = cells[0]
            _, _ = cells[1]
            llvm_ms, llvm_tf = cells[2]
            peer_ms, _ = cells[3]
        except ValueError:
            bad.append(("gemm.txt", line))
            continue
        g, p = num(llvm_ms), num(peer_ms)
        rows.append(("matmul", shape + ("" if epi == "-" else " +" + epi), dtype, g,
                     f"{fmt(num(llvm_tf), 1)} TFLOP/s", "-", "cuBLASLt", p, p / g if g > 0 else float("nan")))


def bandwidth(path, rows, bad):
    for line in open(path):
        f = line.split()
        if len(f) != 4 or f[0] == "case":
            continue
        m = re.match(r"(.*?)_(f32|f16|bf16)(?:_(\w+))?$", f[0])
        if not m:
            bad.append(("bw.txt", line))
            continue
        rows.append(("memory", f"{m.group(1)} {m.group(3) or ''}".strip(), m.group(2), num(f[1]), f"{fmt(num(f[2]), 1)} GB/s",
                     f"{fmt(num(f[3]), 1)}% copy", "-", None, None))


def conv(path, rows, bad):
    for line in open(path):
        if "|" not in line or line.startswith("layer"):
            continue
        cells = [c.strip() for c in line.split("|")]
        try:
            layer, geom = cells[0].split(None, 1)
            g_ms, g_tf = cells[1].split()
            p_ms, _ = cells[2].split()
        except ValueError:
            bad.append(("conv.txt", line))
            continue
        g, p = num(g_ms), num(p_ms)
        rows.append(("conv2d", f"{layer} {geom}", "f16", g, f"{fmt(num(g_tf), 1)} TFLOP/s", "-", "cuDNN", p,
                     p / g if g > 0 else float("nan")))


def peers(path, rows, bad):
    models = {}
    for line in open(path):
        f = line.split()
        if len(f) < 3 or f[0] == "model" or "/" in line:
            continue
        m = re.match(r"(\S+)\s+(graphc|torch eager|torch\.compile|jax jit)\s+([0-9.]+)", line)
        if not m:
            bad.append(("peers.txt", line))
            continue
        if f[-1] == "NO":  # its output did not match graphc's: not a peer to race (as in peers.py)
            continue
        models.setdefault(m.group(1), {})[m.group(2)] = num(m.group(3))
    for model, t in models.items():
        g = t.get("graphc", float("nan"))
        others = [(ms, name) for name, ms in t.items() if name != "graphc" and not math.isnan(ms)]
        if not others:
            continue
        p, name = min(others)
        dtype = "f16" if "f16" in model else "bf16" if "bf16" in model else "f32"
        rows.append(("model", model, dtype, g, "-", "-", f"{name} (fastest matching)", p, p / g if g > 0 else float("nan")))


def examples(path, rows, bad):
    for line in open(path):
        m = re.match(r"examples/(\S+)\.graph (.*?)\s+(llvm|nvrtc)\s+([0-9.]+) ms", line)
        if not m:
            if line.strip():
                bad.append(("examples.txt", line))
            continue
        if m.group(3) != "llvm":
            continue
        rows.append(("model", f"{m.group(1)} {m.group(2).replace('--bind ', '')}", "f32", num(m.group(4)), "-", "-",
                     "-", None, None))


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    d = sys.argv[1]
    rows, bad = [], []
    for name, fn in (("gemm.txt", gemm), ("conv.txt", conv), ("bw.txt", bandwidth), ("peers.txt", peers),
                     ("examples.txt", examples)):
        p = os.path.join(d, name)
        if os.path.exists(p):
            fn(p, rows, bad)
    if not rows:
        print(f"table.py: no results in {d}", file=sys.stderr)
        return 1
    cells = [COLS] + [(k, c, t, fmt(g), r, pr, pn, fmt(pm), fmt(ra, 2)) for k, c, t, g, r, pr, pn, pm, ra in rows]
    widths = [max(len(str(r[i])) for r in cells) for i in range(len(COLS))]
    for i, r in enumerate(cells):
        print("  ".join(str(v).ljust(widths[j]) if j < 3 or j == 6 else str(v).rjust(widths[j])
                        for j, v in enumerate(r)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))
    for name, line in bad:
        print(f"table.py: {name}: cannot read: {line.rstrip()}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
