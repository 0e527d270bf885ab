#!/usr/bin/env python3
"""What the recognize pass finds in real exporters' output (issue #32).

Exports small random-init transformers with torch.onnx.export (TorchScript at
opset 14 and 17, and dynamo), imports each with `graphc import`, and reports per
model:
  - the recognize stats line (what became gelu, silu, layernorm, rmsnorm, softmax,
    and how many attention scores were normalized);
  - how many fused attention kernels fusion forms for --precision f16 on the cuda
    backend (`graphc dot`, no GPU needed), with and without the pass;
  - the max abs error of `graphc run --backend cpu` (passes on) against onnxruntime
    (when installed) or against the unoptimized interpreter.

    python3 benchmarks/recognize_models.py [--graphc build/graphc] [--only bert14,vit]

Needs torch, transformers, onnx and safetensors; timm and torchvision for vit and
convnext (skipped when missing). No network: every model is random-init.
Exit 0 when every model imports, runs and matches (max abs error <= 1e-4).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import torch
from safetensors.numpy import load_file, save_file

warnings.filterwarnings("ignore")


class LastHidden(torch.nn.Module):
    def __init__(self, m, mask):
        super().__init__()
        self.m, self.mask = m, mask

    def forward(self, ids, *rest):
        kw = {"attention_mask": rest[0]} if self.mask else {"use_cache": False}
        return self.m(input_ids=ids, **kw).last_hidden_state


def bert():
    from transformers import BertConfig, BertModel
    cfg = BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                     vocab_size=100, max_position_embeddings=32)
    return LastHidden(BertModel(cfg), True), (torch.randint(0, 100, (2, 16)), torch.ones(2, 16, dtype=torch.long))


def gpt2():
    from transformers import GPT2Config, GPT2Model
    cfg = GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=100, n_positions=32)
    return LastHidden(GPT2Model(cfg), False), (torch.randint(0, 100, (2, 16)),)


def llama(impl):
    from transformers import LlamaConfig, LlamaModel
    cfg = LlamaConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      intermediate_size=128, vocab_size=100, max_position_embeddings=32, attn_implementation=impl)
    return LastHidden(LlamaModel(cfg), False), (torch.randint(0, 100, (2, 16)),)


def vit():
    import timm
    return timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=32, patch_size=8), (torch.randn(1, 3, 32, 32),)


def convnext():
    from torchvision.models.convnext import CNBlock
    return CNBlock(32, layer_scale=0.5, stochastic_depth_prob=0.0), (torch.randn(1, 32, 8, 8),)


# name: (builder, dynamo, opset)
MODELS = {
    "bert14": (bert, False, 14), "bert17": (bert, False, 17), "bert_dynamo": (bert, True, 18),
    "gpt2_dynamo": (gpt2, True, 18), "llama_sdpa_dynamo": (lambda: llama("sdpa"), True, 18),
    "llama_eager_dynamo": (lambda: llama("eager"), True, 18), "vit14": (vit, False, 14),
    "convnext14": (convnext, False, 14),
}


def sh(args):
    return subprocess.run(args, capture_output=True, text=True)


def attention_groups(graphc, graph, extra):
    r = sh([graphc, "dot", graph, "--precision", "f16", "--backend", "cuda"] + extra)
    return r.stdout.count("(attention)")


def run(graphc, graph, inputs, extra):
    out = graph + ".out.safetensors"
    r = sh([graphc, "run", graph, "--inputs", inputs, "--output", out, "--stats"] + extra)
    if r.returncode:
        raise RuntimeError(r.stderr[-2000:])
    return list(load_file(out).values())[0], r.stdout + r.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphc", default="build/graphc")
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    names = [n for n in MODELS if not a.only or n in a.only.split(",")]
    ok = True
    with tempfile.TemporaryDirectory() as d:
        for name in names:
            build, dynamo, opset = MODELS[name]
            torch.manual_seed(0)
            try:
                model, args = build()
            except ImportError as e:
                print(f"{name:20s} skipped ({e})")
                continue
            model.eval()
            onnx_path, graph = os.path.join(d, name + ".onnx"), os.path.join(d, name + ".graph")
            in_names = ["ids", "am"][: len(args)] if args[0].dtype == torch.long else ["x"]
            torch.onnx.export(model, args, onnx_path, dynamo=dynamo, opset_version=opset, input_names=in_names)
            r = sh([a.graphc, "import", onnx_path, "-o", graph])
            if r.returncode:
                print(f"{name:20s} import failed: {r.stderr[-500:]}")
                ok = False
                continue
            feeds = {n: t.numpy() for n, t in zip(in_names, args)}
            inputs = os.path.join(d, name + ".in.safetensors")
            save_file(feeds, inputs)
            got, stats = run(a.graphc, graph, inputs, ["--backend", "cpu"])
            try:
                import onnxruntime as ort
                ref = ort.InferenceSession(onnx_path).run(None, feeds)[0]
                against = "onnxruntime"
            except ImportError:
                ref, _ = run(a.graphc, graph, inputs, ["--backend", "interp", "-O0"])
                against = "interp -O0"
            err = float(np.abs(got - ref).max())
            rec = "; ".join(re.findall(r"recognize: (.*)", stats)) or "nothing"
            att = attention_groups(a.graphc, graph, [])
            att0 = attention_groups(a.graphc, graph, ["--disable-pass=recognize"])
            ok &= err <= 1e-4
            print(f"{name:20s} max abs err {err:.2e} vs {against}; f16 attention kernels {att} (without recognize {att0}); "
                  f"recognized: {rec}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
