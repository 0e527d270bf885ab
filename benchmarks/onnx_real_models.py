#!/usr/bin/env python3
"""Real models through ONNX: export from PyTorch, import with graphc, compare.

Exports an MLP, a ResNet-18-shaped CNN and a transformer encoder layer from
PyTorch with random weights (eval mode), imports each with `graphc import`,
runs it with `graphc run` on the same random input, and compares the output
with PyTorch's by relative error ||graphc - torch|| / ||torch||.

    python3 benchmarks/onnx_real_models.py [--graphc build/graphc] [--backend cuda|cpu|interp]

Needs torch, onnx, numpy and safetensors (the GPU machine has them). Exit 0 when
every model matches (relative error <= 1e-4 in f32).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn
from safetensors.numpy import load_file, save_file


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(784, 256), nn.Linear(256, 10)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class Block(nn.Module):
    """ResNet basic block: conv-bn-relu-conv-bn + (projected) shortcut, relu."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.short = None
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        y = self.b2(self.c2(y))
        return torch.relu(y + (self.short(x) if self.short is not None else x))


class ResNet18(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        layers, cin = [], 64
        for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
            layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.layers(self.stem(x))), 1))


def randomize_bn(model, gen):
    """Give batch norms non-trivial running statistics, so they are really tested."""
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=gen) + 0.5)
            m.bias.data.copy_(torch.randn(m.num_features, generator=gen) * 0.1)


def export(model, x, path, input_names=("input",), output_names=("output",)):
    """torch.onnx.export (opset 17) with the TorchScript exporter when available, else dynamo.
    x: one input tensor or a tuple of them (named input_names, in order)."""
    args = x if isinstance(x, tuple) else (x,)
    kw = dict(opset_version=17, input_names=list(input_names), output_names=list(output_names))
    try:
        torch.onnx.export(model, args, path, dynamo=False, **kw)
    except TypeError:
        torch.onnx.export(model, args, path, **kw)


def graph_io(text):
    """The entry graph of a .graph text: its arguments [(name, [dims as strings])] and the
    names of the values it returns (the keys of `graphc run --output`)."""
    head = re.search(r"graph @\w+(?:<[^>]*>)?\((.*?)\) ->", text)
    args = [(n, d.split(", ")) for n, d in re.findall(r"%([\w.]+): \w+\[([^\]]*)\]", head.group(1))]
    ret = re.search(r"\n\s*return ([^;]*);", text[head.end():])
    return args, [r.strip().lstrip("%") for r in ret.group(1).split(",")]


def graph_binds(args, shapes):
    """`--bind S=N` options for the symbolic dims of args (from graph_io), given the inputs'
    shapes by argument name."""
    binds = {}
    for name, dims in args:
        for d, n in zip(dims, shapes[name]):
            if not d.isdigit():
                binds[d] = n
    return sum([["--bind", f"{d}={n}"] for d, n in binds.items()], [])


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphc", default="build/graphc")
    ap.add_argument("--backend", default="default")
    args = ap.parse_args()
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    torch.backends.mha.set_fastpath_enabled(False)
    enc = nn.TransformerEncoderLayer(d_model=256, nhead=8, dim_feedforward=1024, dropout=0.0,
                                     batch_first=True, activation="gelu")
    resnet = ResNet18()
    randomize_bn(resnet, gen)
    models = [("mlp", MLP(), torch.randn(8, 784, generator=gen)),
              ("resnet18", resnet, torch.randn(2, 3, 224, 224, generator=gen)),
              ("transformer_encoder", enc, torch.randn(4, 64, 256, generator=gen))]
    failed = 0
    print(f"{'model':<22} {'rel err':>10}  result")
    with tempfile.TemporaryDirectory() as tmp:
        for name, model, x in models:
            model.eval()
            with torch.no_grad():
                ref = model(x).numpy()
            onnx_path = os.path.join(tmp, f"{name}.onnx")
            graph_path = os.path.join(tmp, f"{name}.graph")
            try:
                export(model, x, onnx_path)
                run([args.graphc, "import", onnx_path, "-o", graph_path])
                args_, _ = graph_io(open(graph_path).read())
                arg = args_[0][0]
                inputs = os.path.join(tmp, f"{name}.in.safetensors")
                outputs = os.path.join(tmp, f"{name}.out.safetensors")
                save_file({arg: x.numpy()}, inputs)
                binds = graph_binds(args_, {arg: x.shape})  # dynamic dims, from the input's shape
                run([args.graphc, "run", graph_path, "--inputs", inputs, "--output", outputs,
                     "--backend", args.backend] + binds)
                got = list(load_file(outputs).values())[0]
                err = float(np.linalg.norm(got.astype(np.float64) - ref) / np.linalg.norm(ref))
                ok = err <= 1e-4 and np.isfinite(got).all()
                print(f"{name:<22} {err:10.2e}  {'pass' if ok else 'FAIL'}")
                failed += not ok
            except Exception as e:  # report and go on with the next model
                print(f"{name:<22} {'-':>10}  FAIL: {str(e)[:2000]}")
                failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
