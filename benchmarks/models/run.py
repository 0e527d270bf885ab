#!/usr/bin/env python3
"""run.py - the model suite: real models through ONNX into graphc, checked and timed against peers.

    python3 benchmarks/models/run.py [--device cuda|cpu] [--models a,b] [--dtypes f32,f16]
        [--batches 1,32] [--precisions tf32,f16,bf16] [--budget-s S] [--resume] [--out results.json]
        [--work DIR] [--graphc PATH]

For each model of zoo.py x dtype x batch: export ONNX (opset 17, the TorchScript exporter;
f16: the model.half() on CUDA), `graphc import`, `graphc run` on the same inputs as PyTorch
(--backend cuda or cpu) with the cache off, timed as a whole process (graphc's cold compile), the
output checked against PyTorch eager's (relative L2 error, max over the outputs, within TOL of
the dtype), then `graphc bench --json` (the median of runs alone). Peers on the same inputs:
  --device cuda: PyTorch eager, torch.compile (default) and torch.compile(mode="reduce-overhead"),
                 CUDA events, the median of --runs after --warmup (peers.time_torch, as graphc bench);
                 f32 without TF32 on either side; compile time = the first call(s) of the compiled
                 function (3 for reduce-overhead, which records its CUDA graph on the third).
  --device cpu:  onnxruntime (CPU provider, the same ONNX file, intra-op threads = graphc's) and
                 PyTorch eager (torch.set_num_threads: the same), time.perf_counter, the median of
                 30 after 3 warm-ups (peers.time_host; graphc bench --backend cpu the same counts).
A peer whose output differs from PyTorch eager's beyond TOL is listed but not raced. Each row goes
to --out (default benchmarks/models/results.json) as soon as it is done:
  {"model", "dtype", "batch", "device", "graphc_ms", "best_peer", "best_peer_ms", "peers": {name:
   {"ms", "rel_err", "compile_s"?}}, "output_ok", "rel_err", "compile_s" (graphc run, whole process,
   GRAPHC_CACHE=off), "peer_compile_s" (torch.compile default / onnxruntime session), "error"}
  and more: "graphc_compile_only_s" (graphc run --stats: the compile alone), "import_s", "onnx_mb",
  "threads" (cpu), "device_name", "row_s" ("precision_fill_s": the seconds a resume spent adding
  precision modes).
With --precisions (issue #33), an f32 row also runs graphc on the same f32 import with --precision P
for each mode P (tf32, f16, bf16): `graphc run` (cold compile, output against PyTorch eager f32's)
and `graphc bench --json`, stored as "precision": {P: {"ms", "rel_err", "compile_s"}} ({P: {"error"}}
when a mode fails; the row's own fields are the f32 run's). table.py's second table compares them
with the f32 row and the same model's f16 export (the row of dtype f16).
A model that fails anywhere is a row with "error" (the stage and the message's tail), never a crash.
Rows of other models stay in --out; --resume skips rows already there (an f32 row lacking some of
the --precisions modes gets only those: the model is built, exported and imported again, no peers).
--budget-s stops before a row that would not fit (estimated by the slowest row so far) and bounds
every graphc process.
"""
import argparse
import collections
import gc
import json
import os
import platform
import re
import subprocess
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
ROOT = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402
import torch  # noqa: E402

import zoo  # noqa: E402
from onnx_real_models import export, graph_binds, graph_io  # noqa: E402
from peers import load_st, rel_l2, save_st, time_host, time_torch  # noqa: E402

TOL = {"f32": 1e-3, "f16": 3e-2}  # relative L2 error of an output against PyTorch eager's
KEY = ("model", "dtype", "batch", "device")
PRECISIONS = ("tf32", "f16", "bf16")  # graphc's --precision modes for f32 models (--precisions)


class Stage(Exception):
    """A failure of one stage of a row: its name and the message's useful part."""

    def __init__(self, stage, msg):
        super().__init__(f"{stage}: {msg}")


def tail(text, n=600):
    """The last n characters of text (the end of a tool's output says what went wrong)."""
    text = text.strip()
    return text if len(text) <= n else "..." + text[-n:]


def sh(cmd, stage, timeout, env=None):
    """Run cmd; its stdout, or Stage with the tail of stderr/stdout. Also the wall seconds."""
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=max(timeout, 1), env=env)
    except subprocess.TimeoutExpired:
        raise Stage(stage, f"timed out after {timeout:.0f} s") from None
    except OSError as e:  # no such program, ...
        raise Stage(stage, str(e)) from None
    if p.returncode != 0:
        raise Stage(stage, f"exit {p.returncode}: " + tail(p.stderr + "\n" + p.stdout))
    return p.stdout, time.perf_counter() - t0


def outputs_np(y):
    ys = y if isinstance(y, (tuple, list)) else (y,)
    return [t.detach().float().cpu().numpy() for t in ys]


def max_err(got, ref):
    """Max relative L2 error over paired outputs (inf on a shape mismatch or a non-finite value)."""
    if len(got) != len(ref):
        return float("inf")
    errs = [rel_l2(g, r) if g.shape == r.shape and np.isfinite(g).all() else float("inf")
            for g, r in zip(got, ref)]
    return max(errs)


def match_outputs(got, rets, ref):
    """graphc's outputs (a dict by value name) in the graph's return order. An output may be
    saved under another name than the .graph's return (the optimizer replaces a value, e.g.
    x * 1.0 by x, and the output takes the name of what remains): such outputs are paired with
    the returns left by shape, in order."""
    if len(got) != len(rets):
        raise Stage("graphc run", f"{len(got)} outputs {sorted(got)} for {len(rets)} returns {rets}")
    left = [k for k in got if k not in rets]
    outs = []
    for r, want in zip(rets, ref):
        if r in got:
            outs.append(got[r])
            continue
        k = next((k for k in left if got[k].shape == want.shape), None)
        if k is None:
            raise Stage("graphc run", f"no output of shape {want.shape} for {r} among {left}")
        left.remove(k)
        outs.append(got[k])
    return outs


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


def prepare(name, dtype, batch, device):
    """The built model on the device in the dtype, and its inputs there (floats cast)."""
    b = zoo.build(name, batch)
    m = b.module.to(device)
    if dtype == "f16":
        m = m.half()
    fdt = torch.float16 if dtype == "f16" else torch.float32
    ins = [t.to(device=device, dtype=fdt if t.is_floating_point() else t.dtype) for t in b.inputs.values()]
    return b, m, ins


Graph = collections.namedtuple("Graph", "onnx path inputs binds rets")


def graphc_setup(args, row, b, m, ins, base, budget_left):
    """Export the model to ONNX and `graphc import` it; the inputs as a tensor file. Returns the
    Graph (ONNX path, .graph path, inputs file, --bind options, returned value names)."""
    onnx_path, graph_path = base + ".onnx", base + ".graph"
    try:
        with torch.no_grad():
            export(m, tuple(ins), onnx_path, list(b.inputs), b.outputs)
    except Exception as e:  # noqa: BLE001  (the exporter raises anything)
        raise Stage("onnx export", tail(f"{type(e).__name__}: {e}")) from None
    row["onnx_mb"] = round(os.path.getsize(onnx_path) / 2**20, 1)
    _, row["import_s"] = sh([args.graphc, "import", onnx_path, "-o", graph_path], "graphc import",
                            budget_left())
    gargs, rets = graph_io(open(graph_path).read())
    by_name = dict(zip(b.inputs, ins))  # the exporter may drop an input the model does not use
    unknown = [g for g, _ in gargs if g not in by_name]
    if unknown:
        raise Stage("graphc import", f"graph arguments {unknown} are none of the inputs {list(b.inputs)}")
    arrays = {g: by_name[g].cpu().numpy() for g, _ in gargs}
    in_path = base + ".in.safetensors"
    save_st(in_path, arrays)
    binds = graph_binds(gargs, {k: v.shape for k, v in arrays.items()})
    return Graph(onnx_path, graph_path, in_path, binds, rets)


def graphc_run(args, g, flags, ref, out_path, budget_left):
    """`graphc run` of g with flags, cache off, timed as a whole process (the cold compile); its
    outputs against ref. Returns (max relative L2 error, process seconds, the compile alone in
    seconds or None)."""
    env = dict(os.environ, GRAPHC_CACHE="off")
    run_cmd = [args.graphc, "run", g.path, "--inputs", g.inputs, "--output", out_path, "--backend",
               args.backend, "--stats"] + g.binds + flags
    out, secs = sh(run_cmd, "graphc run", budget_left(), env)
    m_stats = re.search(r"compile ([0-9.]+) ms \(to a loaded module\)", out)
    only = float(m_stats.group(1)) / 1e3 if m_stats else None  # without the process, parse, first run
    outs = match_outputs(load_st(out_path), g.rets, ref)
    return max_err([o.astype(np.float32) for o in outs], ref), secs, only


def graphc_bench(args, g, flags, budget_left):
    """`graphc bench --json` of g with flags: (median ms, the cpu backend's thread count or 0)."""
    out, _ = sh([args.graphc, "bench", g.path, "--inputs", g.inputs, "--backend", args.backend, "--json",
                 "--runs", str(args.runs), "--warmup", str(args.warmup)] + g.binds + flags, "graphc bench",
                budget_left())
    res = json.loads(out.strip().splitlines()[-1])
    return res["median_ms"], res.get("threads", 0)


def graphc_part(args, row, g, ref, base, budget_left):
    """Run (checked) and bench graphc on g; fills row. Returns the thread count graphc's cpu runs
    used (0 on cuda)."""
    # torch's exporter leaves parts of a half model in f32 (an SDPA whose mask is f32 promotes
    # the scores, and every layer after it keeps f32 weights in the ONNX file): graphc compiles
    # f16 rows with --precision f16, as TensorRT's users build with its fp16 flag
    flags = ["--precision", "f16"] if row["dtype"] == "f16" else []
    row["rel_err"], row["compile_s"], only = graphc_run(args, g, flags, ref, base + ".out.safetensors", budget_left)
    if only is not None:
        row["graphc_compile_only_s"] = only
    row["output_ok"] = bool(row["rel_err"] <= TOL[row["dtype"]])
    row["graphc_ms"], threads = graphc_bench(args, g, flags, budget_left)
    return threads


def precision_part(args, row, g, ref, base, budget_left):
    """The f32 row's model compiled with --precision P for each P of --precisions not yet in
    row["precision"]: {P: {"ms", "rel_err" (against PyTorch eager f32), "compile_s"}} or
    {P: {"error"}}; a failing mode is an entry with its error, never the row's."""
    modes = row.setdefault("precision", {})
    for p in args.precisions:
        if p in modes:
            continue
        try:
            flags = ["--precision", p]
            err, comp, _ = graphc_run(args, g, flags, ref, f"{base}.{p}.out.safetensors", budget_left)
            ms, _ = graphc_bench(args, g, flags, budget_left)
            modes[p] = {"ms": ms, "rel_err": err, "compile_s": comp}
        except Stage as e:
            modes[p] = {"error": str(e)}


def peers_cuda(args, row, m, ins, ref, graphc_ok):
    """PyTorch eager, torch.compile and its reduce-overhead mode on the GPU."""
    peers = row["peers"]
    call = lambda _: m(*ins)  # noqa: E731
    with torch.no_grad():
        if "eager" in args.peers:
            peers["torch eager"] = {"ms": time_torch(call, None, torch, args.runs, args.warmup), "rel_err": 0.0}
        if "tf32" in args.precisions and row["dtype"] == "f32":
            # the reference for graphc's tf32 error: PyTorch with TF32 matmuls and convolutions
            mm, cd = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
            try:
                err = max_err(outputs_np(m(*ins)), ref)
                peers["torch eager tf32"] = {"ms": time_torch(call, None, torch, args.runs, args.warmup), "rel_err": err}
            finally:
                torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = mm, cd
        if not graphc_ok:
            return  # graphc failed: no ratio to measure, spare the compile time
        for label, mode, first in (("torch.compile", None, 1), ("torch.compile reduce-overhead", "reduce-overhead", 3)):
            if (mode or "compile") not in args.peers:
                continue
            try:
                torch._dynamo.reset()
                fc = torch.compile(m, mode=mode) if mode else torch.compile(m)
                t0 = time.perf_counter()
                for _ in range(first):
                    y = fc(*ins)
                torch.cuda.synchronize()
                comp = time.perf_counter() - t0
                err = max_err(outputs_np(y), ref)
                ms = time_torch(lambda _: fc(*ins), None, torch, args.runs, args.warmup)  # noqa: B023
                peers[label] = {"ms": ms, "rel_err": err, "compile_s": comp}
            except Exception as e:  # noqa: BLE001
                peers[label] = {"error": tail(f"{type(e).__name__}: {e}", 300)}
        row["peer_compile_s"] = peers.get("torch.compile", {}).get("compile_s")
        torch._dynamo.reset()


def peers_cpu(args, row, b, m, ins, ref, onnx_path, threads):
    """onnxruntime (CPU provider) on the same ONNX file and PyTorch eager, both on graphc's threads."""
    peers = row["peers"]
    if threads:
        torch.set_num_threads(threads)
    if "eager" in args.peers:
        with torch.no_grad():
            peers["torch eager"] = {"ms": time_host(lambda: m(*ins), args.runs, args.warmup), "rel_err": 0.0}
    if not onnx_path or "onnxruntime" not in args.peers:
        return
    try:
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads or 0
        so.inter_op_num_threads = 1
        t0 = time.perf_counter()
        sess = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
        comp = time.perf_counter() - t0
        names = [i.name for i in sess.get_inputs()]
        feed = {n: t.numpy() for n, t in zip(b.inputs, ins) if n in names}
        y = sess.run(None, feed)
        err = max_err([np.asarray(v, np.float32) for v in y], ref)
        ms = time_host(lambda: sess.run(None, feed), args.runs, args.warmup)
        peers["onnxruntime"] = {"ms": ms, "rel_err": err, "compile_s": comp}
        row["peer_compile_s"] = comp
    except Exception as e:  # noqa: BLE001
        peers["onnxruntime"] = {"error": tail(f"{type(e).__name__}: {e}", 300)}


def one_row(args, name, dtype, batch, budget_left):
    row = {"model": name, "dtype": dtype, "batch": batch, "device": args.device, "graphc_ms": None,
           "best_peer": None, "best_peer_ms": None, "peers": {}, "output_ok": False, "rel_err": None,
           "compile_s": None, "peer_compile_s": None, "error": None}
    if dtype == "f16" and args.device != "cuda":
        row["error"] = "setup: f16 rows run on --device cuda (PyTorch's f16 on the CPU is no peer)"
        return row
    m = ins = None
    try:
        b, m, ins = prepare(name, dtype, batch, args.device)
        with torch.no_grad():
            ref = outputs_np(m(*ins))
    except Exception as e:  # noqa: BLE001
        row["error"] = "build: " + tail(f"{type(e).__name__}: {e}")
        return row
    base = os.path.join(args.work, f"{name}_{dtype}_b{batch}")
    threads, onnx_path, g = 0, None, None
    try:
        g = graphc_setup(args, row, b, m, ins, base, budget_left)
        onnx_path = g.onnx
        threads = graphc_part(args, row, g, ref, base, budget_left)
    except Stage as e:
        row["error"] = str(e)
        if e.args[0].startswith("graphc"):
            onnx_path = base + ".onnx"
    if g and dtype == "f32" and args.precisions:
        precision_part(args, row, g, ref, base, budget_left)
    elif dtype == "f32" and args.precisions:
        row["precision"] = {p: {"error": "skipped: " + row["error"]} for p in args.precisions}
    if threads:
        row["threads"] = threads
    try:
        if args.device == "cuda":
            peers_cuda(args, row, m, ins, ref, row["error"] is None)
        else:
            peers_cpu(args, row, b, m, ins, ref, onnx_path,
                      threads or int(os.environ.get("GRAPHC_CPU_THREADS", 0)) or len(os.sched_getaffinity(0)))
    except Exception as e:  # noqa: BLE001
        row["error"] = (row["error"] + "; " if row["error"] else "") + "peers: " + tail(f"{type(e).__name__}: {e}")
    fair = [(p["ms"], k) for k, p in row["peers"].items()
            if "ms" in p and p["rel_err"] <= TOL[dtype] and "tf32" not in k]  # f32 rows race exact f32
    if fair:
        row["best_peer_ms"], row["best_peer"] = min(fair)
    del m, ins
    gc.collect()
    if args.device == "cuda":
        torch.cuda.empty_cache()
    return row


def fill_precisions(args, row, budget_left):
    """A resumed f32 row without some of the --precisions modes: the model built, exported and
    imported again (PyTorch eager's output as the reference), only the missing modes run."""
    name, batch = row["model"], row["batch"]
    try:
        b, m, ins = prepare(name, "f32", batch, args.device)
        with torch.no_grad():
            ref = outputs_np(m(*ins))
        base = os.path.join(args.work, f"{name}_f32_b{batch}")
        g = graphc_setup(args, {}, b, m, ins, base, budget_left)
    except Stage as e:
        for p in args.precisions:
            row.setdefault("precision", {}).setdefault(p, {"error": str(e)})
        return
    except Exception as e:  # noqa: BLE001
        for p in args.precisions:
            row.setdefault("precision", {}).setdefault(p, {"error": "build: " + tail(f"{type(e).__name__}: {e}")})
        return
    precision_part(args, row, g, ref, base, budget_left)
    del m, ins
    gc.collect()


def missing_precisions(args, row):
    """The --precisions modes an f32 row has no entry for (none for other rows, or a row whose
    model did not build)."""
    if row["dtype"] != "f32" or (row.get("error") or "").startswith(("build", "onnx export", "setup")):
        return []
    return [p for p in args.precisions if p not in row.get("precision", {})]


def precision_summary(row):
    """" | f16 0.1234 ms (rel err 1.2e-03)" per mode, for the progress line."""
    out = ""
    for p, e in row.get("precision", {}).items():
        out += f" | {p} " + ("ERROR" if "error" in e else f"{e['ms']:.4f} ms (rel err {e['rel_err']:.1e})")
    return out


def save(path, rows):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(rows, f, indent=1)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--backend", choices=("cuda", "cpu"), help="graphc's backend (default: the device)")
    ap.add_argument("--models", help="comma-separated zoo names (default: zoo.gpu_models() / cpu_models())")
    ap.add_argument("--dtypes", help="f32,f16 (default: both on cuda, f32 on cpu)")
    ap.add_argument("--batches", help="comma-separated batch sizes (default: each model's, per device)")
    ap.add_argument("--budget-s", type=float, default=float("inf"), help="stop before this many seconds")
    ap.add_argument("--resume", action="store_true", help="skip rows already in --out")
    ap.add_argument("--out", default=os.path.join(HERE, "results.json"))
    ap.add_argument("--work", default="/tmp/graphc-models", help="ONNX, .graph and tensor files")
    ap.add_argument("--graphc", default=os.path.join(ROOT, "build", "graphc"))
    ap.add_argument("--runs", type=int, help="timed runs (default 50 on cuda, 30 on cpu)")
    ap.add_argument("--warmup", type=int, help="untimed runs first (default 10 on cuda, 3 on cpu)")
    ap.add_argument("--peers", help="peers to run (cuda: eager,compile,reduce-overhead; cpu: eager,onnxruntime; "
                                    "default: all of the device's)")
    ap.add_argument("--precisions", help="for f32 rows, also graphc with --precision P for each P of this "
                                         "comma-separated list (tf32,f16,bf16): the row's \"precision\"")
    ap.add_argument("--list", action="store_true", help="list the models and exit")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")  # the exporter's tracer warnings, one per model, say nothing here
    if args.list:
        for n, s in zoo.MODELS.items():
            print(f"{n:<20} gpu {s.gpu_batches} cpu {s.cpu_batches}{' small' if s.small else ''}  {s.what}")
        return 0
    cuda = args.device == "cuda"
    args.backend = args.backend or args.device
    args.runs = args.runs or (50 if cuda else 30)
    args.warmup = args.warmup or (10 if cuda else 3)
    known = ("eager", "compile", "reduce-overhead") if cuda else ("eager", "onnxruntime")
    args.peers = args.peers.split(",") if args.peers else list(known)
    if any(p not in known for p in args.peers):
        ap.error(f"--peers: {', '.join(known)} on {args.device}, got {args.peers}")
    models = args.models.split(",") if args.models else (zoo.gpu_models() if cuda else zoo.cpu_models())
    unknown = [n for n in models if n not in zoo.MODELS]
    if unknown:
        ap.error(f"unknown models {unknown}; --list shows them")
    args.precisions = args.precisions.split(",") if args.precisions else []
    if any(p not in PRECISIONS for p in args.precisions):
        ap.error(f"--precisions: {', '.join(PRECISIONS)}, got {args.precisions}")
    dtypes = args.dtypes.split(",") if args.dtypes else (["f32", "f16"] if cuda else ["f32"])
    if any(d not in TOL for d in dtypes):
        ap.error(f"--dtypes: f32 and f16 only, got {dtypes}")
    os.makedirs(args.work, exist_ok=True)
    if cuda:  # f32 is f32 on both sides (graphc's f32 uses no TF32); peers at their fastest otherwise
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = True
    rows = json.load(open(args.out)) if os.path.exists(args.out) else []
    t_start, slowest = time.perf_counter(), 0.0

    def budget_left():
        return min(args.budget_s - (time.perf_counter() - t_start), 580.0)

    device_name = torch.cuda.get_device_name() if cuda else cpu_name()
    for name in models:
        spec = zoo.MODELS[name]
        batches = [int(x) for x in args.batches.split(",")] if args.batches else \
            list(spec.gpu_batches if cuda else spec.cpu_batches)
        for dtype in dtypes:
            for batch in batches:
                key = (name, dtype, batch, args.device)
                old = next((r for r in rows if tuple(r[k] for k in KEY) == key), None) if args.resume else None
                if old and not missing_precisions(args, old):
                    print(f"{name} {dtype} b{batch}: in {args.out}, skipped", flush=True)
                    continue
                elapsed = time.perf_counter() - t_start
                if elapsed + slowest > args.budget_s:
                    print(f"budget: {elapsed:.0f} s spent, the slowest row took {slowest:.0f} s of "
                          f"{args.budget_s:.0f} s: stopping before {name} {dtype} b{batch}", flush=True)
                    return 0
                t0 = time.perf_counter()
                if old:  # resumed: only the precision modes it lacks
                    print(f"{name} {dtype} b{batch}: in {args.out}, adding --precision "
                          f"{','.join(missing_precisions(args, old))}", flush=True)
                    row = old
                    fill_precisions(args, row, budget_left)
                    secs = row["precision_fill_s"] = round(time.perf_counter() - t0, 1)
                else:
                    row = one_row(args, name, dtype, batch, budget_left)
                    row["device_name"] = device_name
                    secs = row["row_s"] = round(time.perf_counter() - t0, 1)
                slowest = max(slowest, secs)
                rows = [r for r in rows if tuple(r[k] for k in KEY) != key] + [row]
                save(args.out, rows)
                g = "%.4f ms" % row["graphc_ms"] if row["graphc_ms"] is not None else "-"
                p = "%s %.4f ms" % (row["best_peer"], row["best_peer_ms"]) if row["best_peer"] else "-"
                err = "%.2e" % row["rel_err"] if row["rel_err"] is not None else "-"
                print(f"{name} {dtype} b{batch}: graphc {g} (rel err {err}{'' if row['output_ok'] else ', NOT OK'}), "
                      f"best peer {p}{precision_summary(row)}, {secs} s"
                      f"{'  ERROR ' + row['error'] if row['error'] else ''}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
