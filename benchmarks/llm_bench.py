#!/usr/bin/env python3
"""llm_bench.py - `graphc generate` against transformers on the same Llama checkpoint (issue 38).

    python3 benchmarks/llm_bench.py [--shape tiny|1b|8b] [--dtype bf16|f16|f32] [--batch 1]
        [--prompt-len 128] [--new 128] [--graphc build/graphc] [--work /tmp/graphc-llm] [--no-peer]

A checkpoint of the shape (random weights, torch.manual_seed(0); 1b: Llama-3.2-1B's dims, 8b:
Llama-3-8B's) is written in Hugging Face's layout (save_pretrained: config.json + safetensors)
and both sides run greedy generation from the same random prompt on the GPU:
  graphc        `graphc generate DIR --prompt-ids ... --backend cuda --stats` (its own decode
                timing: the decode steps' wall time / steps; time to first token = a whole cold
                process with --max-new-tokens 1, the JIT cache off, compile included)
  transformers  LlamaForCausalLM.generate with a static KV cache, which compiles the decoding
                forward itself (generation_config.compile_config: torch.compile
                mode="reduce-overhead", CUDA graphs, as graphc replays), the strongest setting
                transformers documents; decode tokens/s = (new - 1) / (time of
                generate(new) - time of generate(1)), best of 3 after 2 warm-ups, CUDA synchronized.
Both outputs are compared: f32 must match token for token; f16 / bf16 report how many leading
tokens agree (rounding differences flip near-ties). The HBM bound: weight bytes + KV bytes read
per token / measured copy bandwidth (torch: a 2 GiB device copy). Prints a summary and a JSON
line.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

import torch

SHAPES = {
    "tiny": dict(hidden_size=256, intermediate_size=688, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, vocab_size=1024, max_position_embeddings=2048),
    "1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
               num_key_value_heads=8, vocab_size=128256, max_position_embeddings=131072, rope_theta=500000.0,
               tie_word_embeddings=True,
               rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                             "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}),
    "8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
               num_key_value_heads=8, vocab_size=128256, max_position_embeddings=8192, rope_theta=500000.0),
}
DT = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


def make_checkpoint(shape, dtype, path):
    import transformers
    if os.path.exists(os.path.join(path, "config.json")):
        return
    names = {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}
    cfg = transformers.LlamaConfig(**SHAPES[shape], bos_token_id=1, eos_token_id=2, torch_dtype=names[dtype])
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = transformers.LlamaForCausalLM(cfg).to(DT[dtype])
    model.save_pretrained(path, safe_serialization=True)
    del model
    torch.cuda.empty_cache()


def copy_bandwidth():
    a = torch.empty(1 << 30, dtype=torch.uint16, device="cuda")
    b = torch.empty_like(a)
    for _ in range(3):
        b.copy_(a)
    torch.cuda.synchronize()
    best = 1e9
    for _ in range(10):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        b.copy_(a)
        e.record()
        e.synchronize()
        best = min(best, s.elapsed_time(e))
    del a, b
    return 2 * (1 << 31) / (best * 1e-3) / 1e9  # GB/s, read + write


def run_graphc(graphc, path, prompts, new, ctx, extra=(), cold=False):
    cmd = [graphc, "generate", path, "--max-new-tokens", str(new), "--backend", "cuda", "--stats",
           "--max-batch", str(len(prompts)), "--max-context", str(ctx), "--ignore-eos"] + list(extra)
    for p in prompts:
        cmd += ["--prompt-ids", ",".join(map(str, p))]
    env = dict(os.environ)
    if cold:
        env["GRAPHC_CACHE"] = "off"
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError("graphc generate failed: " + r.stderr[-2000:])
    lines = [l for l in r.stdout.strip().splitlines() if l.strip()]
    toks = [list(map(int, l.split())) for l in lines[-len(prompts):]]
    stats = {}
    for m in re.finditer(r"([a-z_ ]+?): ([0-9.]+)", r.stderr):
        stats[m.group(1).strip()] = float(m.group(2))
    return toks, stats, wall, r.stderr


def peer(path, dtype, prompts, new):
    import transformers
    model = transformers.AutoModelForCausalLM.from_pretrained(path, torch_dtype=DT[dtype]).cuda().eval()
    ids = torch.tensor(prompts, device="cuda")
    out = {}
    with torch.no_grad():
        eager = model.generate(ids, max_new_tokens=new, do_sample=False, min_new_tokens=new)
        out["tokens"] = eager[:, ids.shape[1]:].tolist()
        # a static cache: generate compiles the decoding forward itself (its compile_config,
        # torch.compile mode="reduce-overhead": CUDA graphs), what transformers documents
        model.generation_config.cache_implementation = "static"
        t0 = time.perf_counter()

        def timed(n):
            torch.cuda.synchronize()
            s = time.perf_counter()
            model.generate(ids, max_new_tokens=n, min_new_tokens=n, do_sample=False)
            torch.cuda.synchronize()
            return time.perf_counter() - s

        for _ in range(2):
            timed(new), timed(1)
        out["compile_s"] = time.perf_counter() - t0
        t_new = min(timed(new) for _ in range(3))
        t_one = min(timed(1) for _ in range(3))
    out["decode_tok_s"] = (new - 1) * len(prompts) / (t_new - t_one)
    out["ttft_ms"] = t_one * 1e3
    del model
    torch.cuda.empty_cache()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", default="1b", choices=SHAPES)
    ap.add_argument("--dtype", default="bf16", choices=DT)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--prompt-len", type=int, default=128)
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--graphc", default="build/graphc")
    ap.add_argument("--work", default="/tmp/graphc-llm")
    ap.add_argument("--no-peer", action="store_true")
    a = ap.parse_args()
    path = os.path.join(a.work, f"{a.shape}-{a.dtype}")
    make_checkpoint(a.shape, a.dtype, path)
    cfg = SHAPES[a.shape]
    g = torch.Generator().manual_seed(1)
    prompts = torch.randint(3, cfg["vocab_size"], (a.batch, a.prompt_len), generator=g).tolist()
    ctx = a.prompt_len + a.new
    row = {"shape": a.shape, "dtype": a.dtype, "batch": a.batch, "prompt_len": a.prompt_len, "new": a.new,
           "device": torch.cuda.get_device_name()}
    _, _, cold_wall, _ = run_graphc(a.graphc, path, prompts, 1, ctx, cold=True)
    row["graphc_cold_first_token_s"] = cold_wall
    toks, stats, wall, err = run_graphc(a.graphc, path, prompts, a.new, ctx)
    sys.stderr.write(err)
    row["graphc_stats"] = stats
    steps = stats.get("decode steps", 0)
    if steps:
        row["graphc_decode_tok_s"] = steps * a.batch / (stats["decode ms"] * 1e-3)
    bw = copy_bandwidth()
    n_params = sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path) if f.endswith(".safetensors"))
    kv = 2 * cfg["num_hidden_layers"] * cfg["num_key_value_heads"] * (cfg["hidden_size"] // cfg["num_attention_heads"]) \
        * (a.prompt_len + a.new // 2) * a.batch * torch.tensor([], dtype=DT[a.dtype]).element_size()
    row["copy_GBps"] = bw
    row["bound_tok_s"] = a.batch * bw * 1e9 / (n_params + kv)
    print("GRAPHC " + json.dumps(row), flush=True)  # graphc's half, in case the peer fails or runs out of time
    if not a.no_peer:
        try:
            p = peer(path, a.dtype, prompts, a.new)
        except Exception as e:  # noqa: BLE001 - the peer's failure is reported, graphc's row stands
            print(f"peer failed: {type(e).__name__}: {str(e)[-500:]}", flush=True)
            return
        row["peer"] = {k: v for k, v in p.items() if k != "tokens"}
        agree = []
        for x, y in zip(toks, p["tokens"]):
            k = 0
            while k < min(len(x), len(y)) and x[k] == y[k]:
                k += 1
            agree.append(k)
        row["tokens_agree"] = agree
    print(json.dumps(row))
    if "graphc_decode_tok_s" in row:
        print(f"graphc decode {row['graphc_decode_tok_s']:.1f} tok/s ({row['graphc_decode_tok_s'] / row['bound_tok_s']:.0%} "
              f"of the {row['bound_tok_s']:.0f} tok/s bound), cold first token {cold_wall:.2f} s"
              + (f"; transformers static+reduce-overhead {row['peer']['decode_tok_s']:.1f} tok/s, "
                 f"ratio {row['graphc_decode_tok_s'] / row['peer']['decode_tok_s']:.2f}; tokens agree {row['tokens_agree']}"
                 if "peer" in row else ""))


if __name__ == "__main__":
    main()
