#!/usr/bin/env python3
"""conv_peer.py - graphc's conv2d (conv-gemm: implicit GEMM) against cuDNN through PyTorch.

    python3 benchmarks/conv_peer.py --graphc build/graphc [--n 32] [--dtype f16]
                                    [--layers a,b] [--out DIR] [--backend cuda|cpu]
                                    [--layout nhwc|nchw]

Each ResNet-50 layer shape is one graph: conv2d + bias + relu, weights in a
safetensors file. First graphc runs it once (`graphc run`) and its output is
compared with the peer's on the same data (PyTorch F.conv2d, cuDNN with
cudnn.benchmark; numpy in float64 when PyTorch or a GPU is missing): relative L2 error within the dtype's tolerance, or the
layer is reported as a mismatch and not timed. Then graphc is timed with
`graphc bench` on the same input (median of CUDA-graph replays) and PyTorch as the median of 50
runs after 10 warm-ups (CUDA events). "graphc/cuDNN" is cuDNN's time over
graphc's (1.0 = as fast; the goal is >= 0.7).

Both sides hold the tensors in one memory layout. --layout nhwc (the default):
PyTorch's NCHW tensors in channels_last memory, and graphc's graph takes and
returns NHWC tensors (a transpose to NCHW before the conv and one back after it,
which the layout pass cancels against the conv's own NHWC form). --layout nchw:
contiguous NCHW on both sides.

Needs only numpy here (safetensors files are written and read by this script);
PyTorch only for the peer.
"""
import argparse
import json
import os
import re
import statistics
import struct
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name, C, H(=W), O, kernel, stride, padding (ResNet-50, torchvision layout)
LAYERS = [
    ("conv1", 3, 224, 64, 7, 2, 3),
    ("l1.1x1a", 64, 56, 64, 1, 1, 0),
    ("l1.3x3", 64, 56, 64, 3, 1, 1),
    ("l1.1x1b", 64, 56, 256, 1, 1, 0),
    ("l1.1x1c", 256, 56, 64, 1, 1, 0),
    ("l2.3x3s2", 128, 56, 128, 3, 2, 1),
    ("l2.1x1", 128, 28, 512, 1, 1, 0),
    ("l3.3x3", 256, 14, 256, 3, 1, 1),
    ("l3.1x1", 256, 14, 1024, 1, 1, 0),
    ("l4.3x3", 512, 7, 512, 3, 1, 1),
    ("l4.1x1", 512, 7, 2048, 1, 1, 0),
]

NP = {"f16": np.float16, "f32": np.float32}
ST = {"f16": "F16", "f32": "F32"}
TOL = {"f16": 1e-2, "f32": 1e-4}


def save_st(path, tensors):
    """A safetensors file (header JSON, then the raw little-endian data)."""
    header, blobs, off = {}, [], 0
    for name, a in tensors.items():
        a = np.ascontiguousarray(a)
        dt = {np.float16: "F16", np.float32: "F32"}[a.dtype.type]
        header[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        blobs.append(a.tobytes())
        off += a.nbytes
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def load_st(path):
    with open(path, "rb") as f:
        d = f.read()
    n = struct.unpack("<Q", d[:8])[0]
    h = json.loads(d[8:8 + n])
    out = {}
    for k, v in h.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        dt = {"F16": np.float16, "F32": np.float32, "F64": np.float64}[v["dtype"]]
        out[k] = np.frombuffer(d[8 + n + a:8 + n + b], dtype=dt).reshape(v["shape"])
    return out


def out_size(h, k, s, p):
    return (h + 2 * p - k) // s + 1


def graph_text(t, n, c, h, o, k, s, p, layout):
    oh = out_size(h, k, s, p)
    if layout == "nhwc":
        sig = f"(%x: {t}[{n}, {h}, {h}, {c}]) -> ({t}[{n}, {oh}, {oh}, {o}])"
        x, ret = "%xt", "%z"
        pre = "  %xt = transpose(%x, perm=[0, 3, 1, 2]);\n"
        post = "  %z = transpose(%r, perm=[0, 2, 3, 1]);\n"
    else:
        sig = f"(%x: {t}[{n}, {c}, {h}, {h}]) -> ({t}[{n}, {o}, {oh}, {oh}])"
        x, ret, pre, post = "%x", "%r", "", ""
    return (f"version 1;\nweights \"w.safetensors\";\n"
            f"graph @conv{sig} {{\n"
            f"  param %w: {t}[{o}, {c}, {k}, {k}] = \"w\";\n"
            f"  param %b: {t}[{o}, 1, 1] = \"b\";\n{pre}"
            f"  %c = conv2d({x}, %w, stride=[{s}, {s}], padding=[{p}, {p}]);\n"
            f"  %y = add(%c, %b);\n  %r = relu(%y);\n{post}  return {ret};\n}}\n")


def numpy_ref(x, w, b, s, p):
    """conv + bias + relu in float64 (im2col), for machines without PyTorch."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, c, h, _ = x.shape
    o, _, k, _ = w.shape
    oh = out_size(h, k, s, p)
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    cols = np.empty((n, c, k, k, oh, oh))
    for i in range(k):
        for j in range(k):
            cols[:, :, i, j] = xp[:, :, i:i + s * oh:s, j:j + s * oh:s]
    y = np.einsum("nckluv,ockl->nouv", cols, w) + b.astype(np.float64)[None]
    return np.maximum(y, 0)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphc", default=os.path.join(ROOT, "build", "graphc"))
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--dtype", default="f16", choices=sorted(NP))
    ap.add_argument("--layers", default="")
    ap.add_argument("--out", default="/tmp/conv-peer")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--layout", default="nhwc", choices=["nhwc", "nchw"])
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    try:
        import torch
        have_torch = torch.cuda.is_available()
    except ImportError:
        torch, have_torch = None, False
    rng = np.random.default_rng(1)
    t = a.dtype
    mem = "channels_last" if a.layout == "nhwc" else "contiguous NCHW"
    print(f"# conv_peer: N={a.n} {t}, {a.layout.upper()} on both sides, graphc {a.backend}, peer "
          f"{'PyTorch ' + torch.__version__ + ' cuDNN (' + mem + ')' if have_torch else 'numpy float64 (check only)'}")
    print(f"{'layer':10} {'C->O k/s @HxW':22} | {'graphc ms':>9} {'TFLOP/s':>7} | {'cuDNN ms':>9} {'TFLOP/s':>7} | "
          f"{'graphc/cuDNN':>12} | check")
    ratios = []
    for name, c, h, o, k, s, p in LAYERS:
        if a.layers and name not in a.layers.split(","):
            continue
        d = os.path.join(a.out, name)
        os.makedirs(d, exist_ok=True)
        g = os.path.join(d, "conv.graph")
        with open(g, "w") as f:
            f.write(graph_text(t, a.n, c, h, o, k, s, p, a.layout))
        x = rng.standard_normal((a.n, c, h, h)).astype(NP[t])
        w = (rng.standard_normal((o, c, k, k)) / np.sqrt(c * k * k)).astype(NP[t])
        b = (0.1 * rng.standard_normal((o, 1, 1))).astype(NP[t])
        save_st(os.path.join(d, "w.safetensors"), {"w": w, "b": b})
        save_st(os.path.join(d, "in.safetensors"), {"x": x.transpose(0, 2, 3, 1) if a.layout == "nhwc" else x})
        oh = out_size(h, k, s, p)
        flop = 2.0 * a.n * o * oh * oh * c * k * k
        r = run([a.graphc, "run", g, "--backend", a.backend, "--inputs", os.path.join(d, "in.safetensors"),
                 "--output", os.path.join(d, "out.safetensors")])
        if r.returncode != 0:
            print(f"{name:10} graphc run failed: {r.stderr.strip()[:300]}")
            continue
        outs = load_st(os.path.join(d, "out.safetensors"))  # one tensor (its name is the passes')
        got = next(iter(outs.values())).astype(np.float64)
        if a.layout == "nhwc":
            got = got.transpose(0, 3, 1, 2)
        if have_torch:
            F = torch.nn.functional
            dev = torch.device("cuda")
            tdt = {"f16": torch.float16, "f32": torch.float32}[t]
            fmt = torch.channels_last if a.layout == "nhwc" else torch.contiguous_format
            tx = torch.from_numpy(x).to(dev, tdt).contiguous(memory_format=fmt)
            tw = torch.from_numpy(w).to(dev, tdt).contiguous(memory_format=fmt)
            tb = torch.from_numpy(b.reshape(o)).to(dev, tdt)
            torch.backends.cudnn.benchmark = True
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            fn = lambda: torch.relu(F.conv2d(tx, tw, tb, stride=s, padding=p))  # noqa: E731
            ref = fn().float().cpu().numpy().astype(np.float64)
        else:
            ref = numpy_ref(x, w, b, s, p)
        err = float(np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30))
        ok = err <= TOL[t]
        if not ok:
            print(f"{name:10} {c}->{o} {k}/{s} @{h}: MISMATCH (relative L2 error {err:.2e} > {TOL[t]:.0e}); not timed")
            continue
        gms = float("nan")
        if a.backend == "cuda":
            r = run([a.graphc, "bench", g, "--inputs", os.path.join(d, "in.safetensors"), "--runs", str(a.runs),
                     "--warmup", "10"])
            m = re.search(r"^  median ([0-9.]+) ms", r.stdout, re.M)
            gms = float(m.group(1)) if m else float("nan")
        pms = float("nan")
        if have_torch:
            for _ in range(10):
                fn()
            ts = []
            for _ in range(a.runs):
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                fn()
                e1.record()
                torch.cuda.synchronize()
                ts.append(e0.elapsed_time(e1))
            pms = statistics.median(ts)
        tf = lambda ms: flop / (ms * 1e-3) / 1e12 if ms == ms and ms > 0 else float("nan")  # noqa: E731
        ratio = pms / gms if gms == gms and pms == pms else float("nan")
        if ratio == ratio:
            ratios.append(ratio)
        print(f"{name:10} {f'{c}->{o} {k}/{s} @{h}x{h}':22} | {gms:9.4f} {tf(gms):7.1f} | {pms:9.4f} {tf(pms):7.1f} | "
              f"{ratio:12.2f} | rel L2 {err:.1e}")
    if ratios:
        print(f"# geometric mean graphc/cuDNN {float(np.exp(np.mean(np.log(ratios)))):.2f} over {len(ratios)} layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
