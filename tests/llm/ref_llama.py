#!/usr/bin/env python3
"""ref_llama.py - an independent numpy forward pass of a Llama-family checkpoint
(transformers' LlamaForCausalLM math written plainly: RMSNorm, RoPE with the
rotate_half convention and llama3 scaling, grouped-query causal attention, SwiGLU),
the reference that tests/test_llm.c compares graphc's generated graph with.

    ref_llama.py MODEL_DIR --inputs IN.safetensors --output OUT.safetensors [--steps N]

IN holds ids i32[B, S], pos i32[B], last i32[B]: row b's tokens sit at positions
pos[b] + i and attend causally to each other (the tokens before them are not seen:
pos is 0 for whole sequences). OUT gets logits f32[N+1, B, V] (those of token last[b])
and next i32[N+1, B] (their argmax, the greedy token): step 0 is the input itself,
step t > 0 the rows with the t greedy tokens appended after their last token (pos 0).

Every op's result is rounded to the model's dtype as torch does for f16 / bf16 weights
(RMSNorm's statistics and the softmax in float32, cos / sin computed in float32);
arithmetic is float64 between roundings.
"""
import argparse
import json
import math
import os

import numpy as np

import safetensors_np as st


def load_weights(d):
    index = os.path.join(d, "model.safetensors.index.json")
    files = [os.path.join(d, "model.safetensors")]
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(os.path.join(d, v) for v in json.load(f)["weight_map"].values()))
    w = {}
    for p in files:
        w.update(st.read(p))
    return w


def rounder(dtype):
    if dtype == "F16":
        return lambda x: np.asarray(x, dtype=np.float64).astype(np.float16).astype(np.float64)
    if dtype == "BF16":
        return lambda x: st.bf16_to_f32(st.bf16_round(np.asarray(x, dtype=np.float32))).astype(np.float64)
    return lambda x: np.asarray(x, dtype=np.float64).astype(np.float32).astype(np.float64)


def inv_freq(cfg, dim):
    """transformers' default and llama3 inverse frequencies, in float32 as torch computes them."""
    base = cfg.get("rope_theta", 10000.0)
    f = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.int64).astype(np.float32) / dim))
    rs = cfg.get("rope_scaling")
    if not rs or rs.get("rope_type", rs.get("type")) in (None, "default"):
        return f.astype(np.float32)
    factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    old = rs["original_max_position_embeddings"]
    low_wl, high_wl = old / low, old / high
    wavelen = np.float32(2 * math.pi) / f
    f_llama = np.where(wavelen > low_wl, f / np.float32(factor), f)
    smooth = (np.float32(old) / wavelen - np.float32(low)) / np.float32(high - low)
    smoothed = (1 - smooth) * f_llama / np.float32(factor) + smooth * f_llama
    medium = ~(wavelen < high_wl) & ~(wavelen > low_wl)
    return np.where(medium, smoothed, f_llama).astype(np.float32)


class Model:
    def __init__(self, d):
        with open(os.path.join(d, "config.json")) as f:
            self.cfg = c = json.load(f)
        self.w = load_weights(d)
        self.dtype = self.w["model.embed_tokens.weight"][1]
        self.R = rounder(self.dtype)
        self.H = c["num_attention_heads"]
        self.Hkv = c.get("num_key_value_heads") or self.H
        self.D = c.get("head_dim") or c["hidden_size"] // self.H
        self.eps = c.get("rms_norm_eps", 1e-6)
        arch = c["architectures"][0]
        self.qkv_bias = arch == "Qwen2ForCausalLM" or (arch == "LlamaForCausalLM" and c.get("attention_bias"))
        self.o_bias = arch == "LlamaForCausalLM" and c.get("attention_bias")

    def p(self, name):
        a, dt = self.w[name]
        return st.as_f32(a, dt).astype(np.float64)

    def rmsnorm(self, x, name):
        x32 = x.astype(np.float32).astype(np.float64)
        var = np.mean(x32 * x32, axis=-1, keepdims=True)
        h = (x32 / np.sqrt(var + self.eps)).astype(np.float32).astype(np.float64)
        return self.R(self.p(name) * self.R(h))

    def linear(self, x, base, bias):
        y = self.R(x @ self.p(base + ".weight").T)
        return self.R(y + self.p(base + ".bias")) if bias else y

    def rope(self, x, cos, sin):
        h = x.shape[-1] // 2
        rot = np.concatenate([-x[..., h:], x[..., :h]], axis=-1)
        return self.R(self.R(x * cos) + self.R(rot * sin))

    def forward(self, ids, pos, last):
        R, H, Hkv, D = self.R, self.H, self.Hkv, self.D
        B, S = ids.shape
        x = self.p("model.embed_tokens.weight")[ids]
        positions = (pos[:, None] + np.arange(S)[None, :]).astype(np.float32)
        freqs = positions[..., None] * inv_freq(self.cfg, D)[None, None, :]
        emb = np.concatenate([freqs, freqs], axis=-1)
        cos = R(np.cos(emb).astype(np.float32))[:, None, :, :]
        sin = R(np.sin(emb).astype(np.float32))[:, None, :, :]
        future = np.arange(S)[None, :] > np.arange(S)[:, None]
        scale = R(1.0 / math.sqrt(D))
        for l in range(self.cfg["num_hidden_layers"]):
            pre = f"model.layers.{l}."
            h = self.rmsnorm(x, pre + "input_layernorm.weight")
            q = self.linear(h, pre + "self_attn.q_proj", self.qkv_bias).reshape(B, S, H, D).transpose(0, 2, 1, 3)
            k = self.linear(h, pre + "self_attn.k_proj", self.qkv_bias).reshape(B, S, Hkv, D).transpose(0, 2, 1, 3)
            v = self.linear(h, pre + "self_attn.v_proj", self.qkv_bias).reshape(B, S, Hkv, D).transpose(0, 2, 1, 3)
            q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
            k = np.repeat(k, H // Hkv, axis=1)  # repeat_kv: head h reads kv head h // (H / Hkv)
            v = np.repeat(v, H // Hkv, axis=1)
            s = R(R(q @ k.transpose(0, 1, 3, 2)) * scale)
            s = np.where(future, -np.inf, s)
            s = s - s.max(axis=-1, keepdims=True)
            e = np.exp(s.astype(np.float32).astype(np.float64))
            pr = R((e / e.sum(axis=-1, keepdims=True)).astype(np.float32))
            a = R(pr @ v).transpose(0, 2, 1, 3).reshape(B, S, H * D)
            x = R(x + self.linear(a, pre + "self_attn.o_proj", self.o_bias))
            h = self.rmsnorm(x, pre + "post_attention_layernorm.weight")
            g = self.linear(h, pre + "mlp.gate_proj", False)
            u = self.linear(h, pre + "mlp.up_proj", False)
            act = R(g / (1.0 + np.exp(-g)))
            x = R(x + self.linear(R(act * u), pre + "mlp.down_proj", False))
        xl = x[np.arange(B), last]
        hn = self.rmsnorm(xl, "model.norm.weight")
        lm = "model.embed_tokens.weight" if self.cfg.get("tie_word_embeddings") else "lm_head.weight"
        logits = R(hn @ self.p(lm).T).astype(np.float32)
        return logits, np.argmax(logits, axis=-1).astype(np.int32)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--inputs", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--steps", type=int, default=0)
    a = ap.parse_args()
    m = Model(a.model)
    inp = st.read(a.inputs)
    ids = inp["ids"][0].astype(np.int64)
    pos = inp["pos"][0].astype(np.int64)
    last = inp["last"][0].astype(np.int64)
    all_logits, all_next = [], []
    rows = [list(ids[b, :last[b] + 1]) for b in range(ids.shape[0])]
    for step in range(a.steps + 1):
        if step > 0:  # the rows so far, padded with token 0 after their last token
            width = max(len(r) for r in rows)
            ids = np.array([r + [0] * (width - len(r)) for r in rows], dtype=np.int64)
            pos = np.zeros(len(rows), dtype=np.int64)
            last = np.array([len(r) - 1 for r in rows], dtype=np.int64)
        logits, nxt = m.forward(ids, pos, last)
        all_logits.append(logits)
        all_next.append(nxt)
        for b, t in enumerate(nxt):
            rows[b].append(int(t))
    st.write(a.output, [("logits", np.stack(all_logits), "F32"), ("next", np.stack(all_next), "I32")])


if __name__ == "__main__":
    main()
