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
    return 0


if __name__ == "__main__":
    sys.exit(main())
