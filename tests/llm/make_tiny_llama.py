#!/usr/bin/env python3
"""make_tiny_llama.py - a tiny random Llama-family checkpoint in Hugging Face's layout,
written with numpy alone: config.json + model.safetensors, or shards named by
model.safetensors.index.json.

    make_tiny_llama.py OUT_DIR [--arch llama|qwen2|mistral] [--dtype f32|f16|bf16]
        [--layers 2] [--hidden 64] [--heads 4] [--kv-heads 2] [--head-dim D]
        [--intermediate 128] [--vocab 256] [--max-pos 256] [--tie] [--rope-llama3]
        [--attention-bias] [--shards N] [--seed 0]
        [--drop TENSOR] [--misshape TENSOR]     (broken checkpoints for error tests)

Weights are drawn so that activations stay O(1) through the layers (linear weights
uniform in +-1/sqrt(fan_in), embeddings normal, norm weights near 1), which makes the
logits discriminative; biases (Qwen2's q/k/v, --attention-bias) are small normals.
"""
import argparse
import json
import os

import numpy as np

import safetensors_np as st

ARCH = {
    "llama": ("LlamaForCausalLM", "llama"),
    "qwen2": ("Qwen2ForCausalLM", "qwen2"),
    "mistral": ("MistralForCausalLM", "mistral"),
}
TORCH_DTYPE = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}
ST_DTYPE = {"f32": "F32", "f16": "F16", "bf16": "BF16"}


def config(a):
    arch, model_type = ARCH[a.arch]
    c = {
        "architectures": [arch],
        "model_type": model_type,
        "hidden_size": a.hidden,
        "intermediate_size": a.intermediate,
        "num_hidden_layers": a.layers,
        "num_attention_heads": a.heads,
        "num_key_value_heads": a.kv_heads,
        "hidden_act": "silu",
        "max_position_embeddings": a.max_pos,
        "rms_norm_eps": 1e-5 if a.arch == "llama" else 1e-6,
        "rope_theta": 10000.0 if a.arch != "qwen2" else 1000000.0,
        "rope_scaling": None,
        "tie_word_embeddings": a.tie,
        "torch_dtype": TORCH_DTYPE[a.dtype],
        "vocab_size": a.vocab,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "use_cache": True,
    }
    if a.head_dim:
        c["head_dim"] = a.head_dim
    if a.arch == "llama":
        c["attention_bias"] = a.attention_bias
        c["mlp_bias"] = False
    if a.arch == "qwen2":
        c["use_sliding_window"] = False
        c["sliding_window"] = 32768
        c["max_window_layers"] = a.layers
    if a.arch == "mistral":
        c["sliding_window"] = a.max_pos
    if a.rope_llama3:
        c["rope_scaling"] = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                             "high_freq_factor": 4.0, "original_max_position_embeddings": 32}
        c["rope_theta"] = 500000.0
        c["eos_token_id"] = [2, 3]
    return c


def tensors(a, rng):
    """[(name, float32 array)] in Hugging Face's order."""
    H, I, V = a.hidden, a.intermediate, a.vocab
    D = a.head_dim or H // a.heads
    qkv_bias = a.arch == "qwen2" or (a.arch == "llama" and a.attention_bias)
    o_bias = a.arch == "llama" and a.attention_bias

    def lin(n, k):
        s = 1.0 / np.sqrt(k)
        return rng.uniform(-s, s, size=(n, k)).astype(np.float32)

    def norm():
        return (1.0 + 0.1 * rng.standard_normal(H)).astype(np.float32)

    def bias(n):
        return (0.1 * rng.standard_normal(n)).astype(np.float32)

    out = [("model.embed_tokens.weight", rng.standard_normal((V, H)).astype(np.float32))]
    for l in range(a.layers):
        p = f"model.layers.{l}."
        out.append((p + "input_layernorm.weight", norm()))
        for name, n in (("q", a.heads * D), ("k", a.kv_heads * D), ("v", a.kv_heads * D)):
            out.append((p + f"self_attn.{name}_proj.weight", lin(n, H)))
            if qkv_bias:
                out.append((p + f"self_attn.{name}_proj.bias", bias(n)))
        out.append((p + "self_attn.o_proj.weight", lin(H, a.heads * D)))
        if o_bias:
            out.append((p + "self_attn.o_proj.bias", bias(H)))
        out.append((p + "post_attention_layernorm.weight", norm()))
        out.append((p + "mlp.gate_proj.weight", lin(I, H)))
        out.append((p + "mlp.up_proj.weight", lin(I, H)))
        out.append((p + "mlp.down_proj.weight", lin(H, I)))
    out.append(("model.norm.weight", norm()))
    if not a.tie:
        out.append(("lm_head.weight", lin(V, H)))
    return out


def encode(arr, dtype):
    if dtype == "f16":
        return arr.astype(np.float16)
    if dtype == "bf16":
        return st.bf16_round(arr)
    return arr


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--arch", choices=sorted(ARCH), default="llama")
    ap.add_argument("--dtype", choices=sorted(ST_DTYPE), default="f32")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--head-dim", type=int, default=0)
    ap.add_argument("--intermediate", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--max-pos", type=int, default=256)
    ap.add_argument("--tie", action="store_true")
    ap.add_argument("--rope-llama3", action="store_true")
    ap.add_argument("--attention-bias", action="store_true")
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--drop", action="append", default=[])
    ap.add_argument("--misshape", action="append", default=[])
    a = ap.parse_args()

    rng = np.random.default_rng(a.seed)
    ts = [(n, x) for n, x in tensors(a, rng) if n not in a.drop]
    for i, (n, x) in enumerate(ts):
        if n in a.misshape:
            ts[i] = (n, np.concatenate([x, x[:1]], axis=0))
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config(a), f, indent=2)
    entries = [(n, encode(x, a.dtype), ST_DTYPE[a.dtype]) for n, x in ts]
    if a.shards == 1:
        st.write(os.path.join(a.out, "model.safetensors"), entries)
        return
    per = -(-len(entries) // a.shards)
    weight_map, total = {}, 0
    for k in range(a.shards):
        part = entries[k * per:(k + 1) * per]
        file = f"model-{k + 1:05d}-of-{a.shards:05d}.safetensors"
        st.write(os.path.join(a.out, file), part)
        for n, x, _ in part:
            weight_map[n] = file
            total += x.nbytes
    with open(os.path.join(a.out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)


if __name__ == "__main__":
    main()
