#!/usr/bin/env python3
"""table.py [RESULTS.json] - the model suite's rows (benchmarks/models/run.py) as markdown for
docs/performance.md.

One table per device: model, dtype, batch, graphc's median ms, the fastest peer whose output
matched PyTorch's and its median ms, graphc / peer (below 1: graphc is faster), graphc's relative
error against PyTorch eager, graphc's cold compile (the whole `graphc run` process, cache off) and
the peer's compile (torch.compile default's first call on cuda, onnxruntime's session on cpu).
A row with an error shows its stage and the start of the message instead of times; a row whose
output did not match shows its times with "output differs". Under each table: the geometric mean
of graphc / best peer per dtype, over the rows with a matching output and both times.

Then, per device with f32 rows run with `run.py --precisions`, the precision modes (issue #33):
model, batch, graphc's f32 ms, --precision tf32 / f16 / bf16 ms on the same f32 import, the f16
export's ms (the row of dtype f16 of the same model and batch), and the issue's targets as PASS /
FAIL with the measured figure: f16 mode within 10% of the f16 export (f16 / export <= 1.10), f16
mode >= 3x faster than f32, tf32 >= 2x faster than f32 on matmul / conv-heavy models (n/a for the
depthwise-conv ones, DEPTHWISE), and the relative error against PyTorch eager f32 <= 1e-2 for tf32
and f16 (tf32: or within 2x of PyTorch's own TF32 error, "torch eager tf32", when the row has it:
the tensor cores truncate tf32 operands, as in cuBLAS), <= 4e-2 for bf16. "-": a figure is missing (a mode not run, a failed one, no f16 row).
"""
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def fmt(x, digits=3):
    return "-" if x is None else f"{x:.{digits}f}"


def ratio(r):
    if r.get("graphc_ms") and r.get("best_peer_ms") and r.get("output_ok"):
        return r["graphc_ms"] / r["best_peer_ms"]
    return None


def note(r):
    if r.get("error"):
        return r["error"].replace("|", "/").replace("\n", " ")[:90]
    if not r.get("output_ok"):
        return "output differs"
    return ""


def table(rows, device):
    names = sorted({r.get("device_name", "?") for r in rows})
    print(f"**{device}** ({', '.join(names)}):\n")
    print("| model | dtype | batch | graphc ms | best peer | peer ms | graphc / peer | rel err | graphc compile s "
          "| peer compile s | note |")
    print("|---|---|---:|---:|---|---:|---:|---:|---:|---:|---|")
    for r in rows:
        rel = "-" if r.get("rel_err") is None else f"{r['rel_err']:.1e}"
        print(f"| {r['model']} | {r['dtype']} | {r['batch']} | {fmt(r.get('graphc_ms'), 4)} | "
              f"{r.get('best_peer') or '-'} | {fmt(r.get('best_peer_ms'), 4)} | {fmt(ratio(r), 2)} | {rel} | "
              f"{fmt(r.get('compile_s'), 1)} | {fmt(r.get('peer_compile_s'), 1)} | {note(r)} |")
    print()
    for dtype in sorted({r["dtype"] for r in rows}):
        rs = [ratio(r) for r in rows if r["dtype"] == dtype]
        rs = [x for x in rs if x]
        n = sum(1 for r in rows if r["dtype"] == dtype)
        if rs:
            gm = math.exp(sum(math.log(x) for x in rs) / len(rs))
            print(f"- {dtype}: geometric mean of graphc / best peer **{gm:.2f}** over {len(rs)} of {n} rows")
        else:
            print(f"- {dtype}: no row with a matching output and both times ({n} rows)")
    print()


MODES = ("tf32", "f16", "bf16")
ERR_MAX = {"tf32": 1e-2, "f16": 1e-2, "bf16": 4e-2}  # relative L2 error against PyTorch eager f32
# zoo.py's models whose time is mostly depthwise convolutions and small 1x1 ones, not dense
# GEMMs: the tf32 target (>= 2x f32) does not apply to them
DEPTHWISE = {"mobilenet_v3_small", "efficientnet_b0", "lraspp"}


def mode_ms(r, p):
    e = r.get("precision", {}).get(p, {})
    return e.get("ms")


def target(value, ok):
    """"PASS 1.04" / "FAIL 1.68" for a measured figure and whether it meets its target; "-" without one."""
    return "-" if value is None else f"{'PASS' if ok else 'FAIL'} {value:.2f}"


def speedup(r, p):
    """f32 ms / mode ms (how many times faster the mode is), or None."""
    ms = mode_ms(r, p)
    return r["graphc_ms"] / ms if ms and r.get("graphc_ms") else None


def err_check(r):
    """PASS when every mode run is within its error bound, else FAIL and the modes over it."""
    modes = r.get("precision", {})
    errs = {p: modes[p]["rel_err"] for p in MODES if p in modes and modes[p].get("rel_err") is not None}
    if not errs:
        return "-"
    torch_tf32 = r.get("peers", {}).get("torch eager tf32", {}).get("rel_err")
    bound = dict(ERR_MAX)
    if torch_tf32 is not None:  # tf32 is as exact as the hardware: within 2x of PyTorch's TF32 error
        bound["tf32"] = max(ERR_MAX["tf32"], 2 * torch_tf32)
    bad = [f"{p} {e:.1e} (bound {bound[p]:.1e})" for p, e in errs.items() if not e <= bound[p]]
    return "FAIL " + ", ".join(bad) if bad else "PASS"


def precision_table(rows, f16_rows, device):
    """The precision modes of the f32 rows of one device against f32 and the f16 export."""
    print(f"**{device}: precision modes** (`--precision P` on the f32 import; issue #33's targets):\n")
    print("| model | batch | f32 ms | tf32 ms | f16-mode ms | bf16-mode ms | f16 export ms | f16-mode / export "
          "(<= 1.10) | f32 / f16-mode (>= 3) | f32 / tf32 (>= 2) | rel err tf32 / f16 / bf16 | error bounds | note |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---|---|---|---|---|")
    counts = {k: [0, 0] for k in ("export", "f16x3", "tf32x2", "err")}

    def tally(key, cell):
        if cell.startswith(("PASS", "FAIL")):
            counts[key][0] += cell.startswith("PASS")
            counts[key][1] += 1
        return cell

    for r in rows:
        modes = r.get("precision", {})
        exp = f16_rows.get((r["model"], r["batch"]), {}).get("graphc_ms")
        f16 = mode_ms(r, "f16")
        vs_export = f16 / exp if f16 and exp else None
        x3, x2 = speedup(r, "f16"), speedup(r, "tf32")
        tf32_cell = "n/a" if r["model"] in DEPTHWISE else target(x2, x2 is not None and x2 >= 2)
        errs = " / ".join("-" if modes.get(p, {}).get("rel_err") is None else f"{modes[p]['rel_err']:.1e}"
                          for p in MODES)
        notes = [f"{p}: {modes[p]['error']}" for p in MODES
                 if "error" in modes.get(p, {}) and not modes[p]["error"].startswith("skipped")]
        if r.get("error"):
            notes.insert(0, r["error"])
        note_s = "; ".join(notes).replace("|", "/").replace("\n", " ")[:90]
        print(f"| {r['model']} | {r['batch']} | {fmt(r.get('graphc_ms'), 4)} | {fmt(mode_ms(r, 'tf32'), 4)} | "
              f"{fmt(f16, 4)} | {fmt(mode_ms(r, 'bf16'), 4)} | {fmt(exp, 4)} | "
              f"{tally('export', target(vs_export, vs_export is not None and vs_export <= 1.10))} | "
              f"{tally('f16x3', target(x3, x3 is not None and x3 >= 3))} | {tally('tf32x2', tf32_cell)} | {errs} | "
              f"{tally('err', err_check(r))} | {note_s} |")
    print()
    for key, what in (("export", "f16 mode within 10% of the f16 export"), ("f16x3", "f16 mode >= 3x f32"),
                      ("tf32x2", "tf32 >= 2x f32 (matmul / conv-heavy models)"), ("err", "errors within bounds")):
        passed, n = counts[key]
        print(f"- {what}: {passed} of {n} rows pass" if n else f"- {what}: no row with the figures")
    print()


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "results.json")
    if len(sys.argv) > 2 or path in ("-h", "--help"):
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    try:
        rows = json.load(open(path))
    except (OSError, ValueError) as e:
        print(f"table.py: {path}: {e}", file=sys.stderr)
        return 1
    if not rows:
        print(f"table.py: no rows in {path}", file=sys.stderr)
        return 1
    order = {"f32": 0, "f16": 1}
    for device in sorted({r["device"] for r in rows}):
        rs = sorted((r for r in rows if r["device"] == device),
                    key=lambda r: (r["model"], order.get(r["dtype"], 9), r["batch"]))
        table(rs, device)
    for device in sorted({r["device"] for r in rows}):
        rs = [r for r in rows if r["device"] == device]
        prec = sorted((r for r in rs if r["dtype"] == "f32" and r.get("precision")),
                      key=lambda r: (r["model"], r["batch"]))
        if prec:
            f16_rows = {(r["model"], r["batch"]): r for r in rs if r["dtype"] == "f16"}
            precision_table(prec, f16_rows, device)
    return 0


if __name__ == "__main__":
    sys.exit(main())
