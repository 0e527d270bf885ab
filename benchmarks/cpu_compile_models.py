#!/usr/bin/env python3
"""cpu_compile_models.py OUT_DIR [GRAPHC] - CPU-sized models for the cpu backend's compile time.

Exports torchvision mobilenet_v3_small (1x3x224x224) and transformers BertModel
(d=256, 4 heads, ffn 1024, sequence 128) with 2 and 4 layers to ONNX (random
init, torch.onnx.export with dynamo=False), then `graphc import`s each. Time a
cold compile with an empty cache, then a warm one:
  GRAPHC_CACHE_DIR=$(mktemp -d) graphc run OUT/bert2.graph --backend cpu --time-passes --stats
"""
import os
import subprocess
import sys

import torch


class _Bert(torch.nn.Module):
    def __init__(self, layers):
        super().__init__()
        from transformers import BertConfig, BertModel
        cfg = BertConfig(hidden_size=256, num_hidden_layers=layers, num_attention_heads=4,
                         intermediate_size=1024, vocab_size=1000)
        self.b = BertModel(cfg).eval()

    def forward(self, ids, mask):
        return self.b(input_ids=ids, attention_mask=mask).last_hidden_state


def main():
    out = sys.argv[1]
    graphc = sys.argv[2] if len(sys.argv) > 2 else "build/graphc"
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    import torchvision
    m = torchvision.models.mobilenet_v3_small().eval()
    torch.onnx.export(m, torch.randn(1, 3, 224, 224), f"{out}/mnv3s.onnx", dynamo=False,
                      opset_version=17)
    ids = torch.randint(0, 1000, (1, 128))
    mask = torch.ones(1, 128, dtype=torch.long)
    for layers in (2, 4):
        torch.onnx.export(_Bert(layers).eval(), (ids, mask), f"{out}/bert{layers}.onnx", dynamo=False,
                          opset_version=17, input_names=["input_ids", "attention_mask"])
    for name in ("mnv3s", "bert2", "bert4"):
        subprocess.run([graphc, "import", f"{out}/{name}.onnx", "-o", f"{out}/{name}.graph"], check=True)


if __name__ == "__main__":
    main()
