#!/usr/bin/env python3
"""peers.py - graphc against PyTorch eager, torch.compile and JAX jit on the same GPU.

    python3 benchmarks/peers.py --graphc build/graphc [--out DIR] [--models a,b]

For each model it writes random weights with `graphc weights --random` (the same
safetensors file feeds every framework) and a random input, runs graphc once
(`graphc run --backend cuda`) and each peer once, and checks that every peer's
output matches graphc's before anything is timed (relative L2 error within the
dtype's tolerance). Then it times graphc with `graphc bench` on the same input
(median of CUDA-graph replays) and each peer as the median of 50 runs after 10 warm-ups (CUDA events
for PyTorch, block_until_ready for JAX). Prints one table; "graphc / best" is
graphc's time over the fastest peer's (<= 1.0: graphc is at least as fast).
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_st(path):
    from safetensors.numpy import load_file
    return load_file(path)


def save_st(path, tensors):
    from safetensors.numpy import save_file
    save_file(tensors, path)


# ---- the models, written once per framework ------------------------------------------

def torch_mlp(W, torch):
    w1, b1, w2, b2 = (W[k] for k in ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"))

    def f(x):
        return torch.relu(x @ w1 + b1) @ w2 + b2
    return f


def torch_block(W, torch, heads=16):
    F = torch.nn.functional

    def f(x):
        B, S, D = x.shape
        dh = D // heads
        h = F.layer_norm(x, (D,), W["ln1.weight"], W["ln1.bias"], 1e-5)
        q = (h @ W["attn.q.weight"]).view(B, S, heads, dh).transpose(1, 2)
        k = (h @ W["attn.k.weight"]).view(B, S, heads, dh).transpose(1, 2)
        v = (h @ W["attn.v.weight"]).view(B, S, heads, dh).transpose(1, 2)
        s = (q @ k.transpose(-1, -2)) * (1.0 / dh ** 0.5)
        p = torch.softmax(s, dim=-1)
        c = (p @ v).transpose(1, 2).reshape(B, S, D)
        r1 = x + c @ W["attn.o.weight"]
        h2 = F.layer_norm(r1, (D,), W["ln2.weight"], W["ln2.bias"], 1e-5)
        g = F.gelu(h2 @ W["mlp.fc1.weight"] + W["mlp.fc1.bias"], approximate="tanh")
        return r1 + (g @ W["mlp.fc2.weight"] + W["mlp.fc2.bias"])
    return f


def torch_resnet(W, torch):
    """examples/resnet_f16.graph; NCHW tensors in channels_last memory (cuDNN's fast layout)."""
    F = torch.nn.functional
    cl = torch.channels_last
    Wc = {k: (v.contiguous(memory_format=cl) if v.dim() == 4 else v) for k, v in W.items()}

    def conv(x, name, s=1, p=0, bias=True):
        y = F.conv2d(x, Wc[name + ".weight"], None, stride=s, padding=p)
        return y + Wc[name + ".bias"] if bias else y

    def f(x):
        x = x.contiguous(memory_format=cl)
        r0 = torch.relu(conv(x, "stem", 2, 3))
        p0 = F.max_pool2d(r0, 3, 2, 1)
        r1 = torch.relu(conv(p0, "s1.c1", 1, 1))
        r2 = torch.relu(conv(r1, "s1.c2", 1, 1) + p0)
        r3 = torch.relu(conv(r2, "s2.c1", 2, 1))
        r4 = torch.relu(conv(r3, "s2.c2", 1, 1) + conv(r2, "s2.proj", 2, 0, bias=False))
        g = r4.mean(dim=(2, 3))
        return g @ Wc["fc.weight"] + Wc["fc.bias"]
    return f


def jax_mlp(W, jnp, jax):
    w1, b1, w2, b2 = (W[k] for k in ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"))
    return lambda x: jnp.maximum(x @ w1 + b1, 0) @ w2 + b2


def jax_block(W, jnp, jax, heads=16):
    def ln(x, g, b):
        xf = x.astype(jnp.float32)
        mu = xf.mean(-1, keepdims=True)
        var = ((xf - mu) ** 2).mean(-1, keepdims=True)
        return (((xf - mu) / jnp.sqrt(var + 1e-5)) * g.astype(jnp.float32) + b.astype(jnp.float32)).astype(x.dtype)

    def f(x):
        B, S, D = x.shape
        dh = D // heads
        h = ln(x, W["ln1.weight"], W["ln1.bias"])
        split = lambda t: t.reshape(B, S, heads, dh).transpose(0, 2, 1, 3)
        q, k, v = (split(h @ W[n]) for n in ("attn.q.weight", "attn.k.weight", "attn.v.weight"))
        s = (q @ k.transpose(0, 1, 3, 2)) * jnp.asarray(1.0 / dh ** 0.5, x.dtype)
        p = jax.nn.softmax(s.astype(jnp.float32), axis=-1).astype(x.dtype)
        c = (p @ v).transpose(0, 2, 1, 3).reshape(B, S, D)
        r1 = x + c @ W["attn.o.weight"]
        h2 = ln(r1, W["ln2.weight"], W["ln2.bias"])
        g = jax.nn.gelu(h2 @ W["mlp.fc1.weight"] + W["mlp.fc1.bias"], approximate=True)
        return r1 + (g @ W["mlp.fc2.weight"] + W["mlp.fc2.bias"])
    return f


def jax_resnet(W, jnp, jax):
    lax = jax.lax

    def conv(x, name, s=1, p=0, bias=True):
        y = lax.conv_general_dilated(x, W[name + ".weight"], (s, s), [(p, p), (p, p)],
                                     dimension_numbers=("NCHW", "OIHW", "NCHW"),
                                     preferred_element_type=jnp.float32).astype(x.dtype)
        return y + W[name + ".bias"] if bias else y

    def f(x):
        r0 = jax.nn.relu(conv(x, "stem", 2, 3))
        p0 = lax.reduce_window(r0, jnp.array(-jnp.inf, r0.dtype), lax.max, (1, 1, 3, 3), (1, 1, 2, 2),
                               [(0, 0), (0, 0), (1, 1), (1, 1)])
        r1 = jax.nn.relu(conv(p0, "s1.c1", 1, 1))
        r2 = jax.nn.relu(conv(r1, "s1.c2", 1, 1) + p0)
        r3 = jax.nn.relu(conv(r2, "s2.c1", 2, 1))
        r4 = jax.nn.relu(conv(r3, "s2.c2", 1, 1) + conv(r2, "s2.proj", 2, 0, bias=False))
        g = r4.astype(jnp.float32).mean(axis=(2, 3)).astype(x.dtype)
        return g @ W["fc.weight"] + W["fc.bias"]
    return f


MODELS = {
    # name: (graph file, binds, input name, input shape, dtype, torch model, jax model, rel tol)
    "mlp_b1": ("mlp.graph", {"B": 1}, "x", (1, 784), "float32", torch_mlp, jax_mlp, 1e-4),
    "mlp_b4096": ("mlp.graph", {"B": 4096}, "x", (4096, 784), "float32", torch_mlp, jax_mlp, 1e-4),
    "transformer_f16": ("transformer_block_f16.graph", {"B": 8, "S": 1024}, "x", (8, 1024, 1024), "float16",
                        torch_block, jax_block, 2e-2),
    "resnet_f16_n64": ("resnet_f16.graph", {"N": 64}, "x", (64, 3, 224, 224), "float16", torch_resnet, jax_resnet,
                       2e-2),
}


def rel_l2(a, b):
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def run_graphc(args, name, graph, binds, wpath, xpath, ypath):
    bind = sum([["--bind", "%s=%d" % kv] for kv in binds.items()], [])
    cmd = [args.graphc, "run", graph] + bind + ["--backend", "cuda", "--weights", wpath, "--inputs", xpath,
                                                "--output", ypath]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    out = subprocess.run([args.graphc, "bench", graph] + bind + ["--weights", wpath, "--inputs", xpath,
                                                                 "--runs", "100", "--warmup", "10"],
                         check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.strip().startswith("median"):
            return float(line.split()[1])
    raise RuntimeError("no median in graphc bench output:\n" + out)


def time_torch(f, x, torch, runs=50, warm=10):
    for _ in range(warm):
        f(x)
    torch.cuda.synchronize()
    ts = []
    for _ in range(runs):
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        e0.record()
        f(x)
        e1.record()
        e1.synchronize()
        ts.append(e0.elapsed_time(e1))
    return statistics.median(ts)


def time_host(f, runs=30, warm=3):
    """Median ms of `runs` calls of f() after `warm` untimed ones, by time.perf_counter (CPU
    peers: the caller's work is done when f returns)."""
    for _ in range(warm):
        f()
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        f()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def time_jax(f, x, runs=50, warm=10):
    for _ in range(warm):
        f(x).block_until_ready()
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        f(x).block_until_ready()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphc", default=os.path.join(ROOT, "build", "graphc"))
    ap.add_argument("--out", default="/tmp/graphc-peers")
    ap.add_argument("--models", default=",".join(MODELS))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    import torch
    rows = []
    for name in args.models.split(","):
        gfile, binds, xname, xshape, dt, tmodel, jmodel, tol = MODELS[name]
        graph = os.path.join(ROOT, "examples", gfile)
        wpath = os.path.join(args.out, gfile.replace(".graph", ".safetensors"))
        if not os.path.exists(wpath):
            subprocess.run([args.graphc, "weights", graph, "--random", "--seed", "1", "-o", wpath], check=True)
        x = np.random.default_rng(0).uniform(-1, 1, xshape).astype(dt)
        xpath, ypath = os.path.join(args.out, name + ".in.safetensors"), os.path.join(args.out, name + ".out.safetensors")
        save_st(xpath, {xname: x})
        ms_g = run_graphc(args, name, graph, binds, wpath, xpath, ypath)
        y = list(load_st(ypath).values())[0]
        W = load_st(wpath)
        res = {"graphc": (ms_g, 0.0)}
        # PyTorch eager and torch.compile
        Wt = {k: torch.from_numpy(v).cuda() for k, v in W.items()}
        xt = torch.from_numpy(x).cuda()
        f = tmodel(Wt, torch)
        with torch.no_grad():
            err = rel_l2(f(xt).float().cpu().numpy(), y)
            if err > tol:
                print("%s: PyTorch output differs from graphc's (rel L2 %.3g)" % (name, err), file=sys.stderr)
            res["torch eager"] = (time_torch(f, xt, torch), err)
            try:
                fc = torch.compile(f)
                err = rel_l2(fc(xt).float().cpu().numpy(), y)
                res["torch.compile"] = (time_torch(fc, xt, torch), err)
            except Exception as e:  # noqa: BLE001
                print("%s: torch.compile failed: %s" % (name, str(e).splitlines()[0]), file=sys.stderr)
        del Wt, xt
        torch.cuda.empty_cache()
        # JAX
        try:
            import jax
            import jax.numpy as jnp
            Wj = {k: jnp.asarray(v) for k, v in W.items()}
            xj = jnp.asarray(x)
            fj = jax.jit(jmodel(Wj, jnp, jax))
            err = rel_l2(np.asarray(fj(xj)).astype(np.float32), y)
            res["jax jit"] = (time_jax(fj, xj), err)
        except Exception as e:  # noqa: BLE001
            print("%s: JAX failed: %s" % (name, str(e).splitlines()[0] if str(e) else type(e).__name__),
                  file=sys.stderr)
        rows.append((name, res, tol))
    print("%-18s %-14s %10s %10s %8s" % ("model", "framework", "median ms", "rel L2", "match"))
    for name, res, tol in rows:
        peers = [v[0] for k, v in res.items() if k != "graphc" and v[1] <= tol]
        for k, (ms, err) in res.items():
            print("%-18s %-14s %10.4f %10.2e %8s" % (name, k, ms, err, "ref" if k == "graphc" else
                                                     ("yes" if err <= tol else "NO")))
        if peers:
            print("%-18s %-14s %10.2fx" % (name, "graphc / best", res["graphc"][0] / min(peers)))


if __name__ == "__main__":
    main()
