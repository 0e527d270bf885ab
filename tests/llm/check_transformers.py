#!/usr/bin/env python3
"""check_transformers.py - ref_llama.py against transformers itself, on the tiny checkpoints
of make_tiny_llama.py (where torch and transformers are installed: the GPU machines; the
Check suite needs neither). For each variant: the logits of every position of a batch from
transformers' AutoModelForCausalLM (float32, eager attention, on the CPU) against
ref_llama.py's, and greedy generation (transformers' generate vs ref_llama.py's steps).

    check_transformers.py WORK_DIR [--graphc build/graphc]

With --graphc, the same batch also runs through `graphc generate --emit-graph --stateless`
and `graphc run` (the cpu backend, and cuda when a GPU is there) against transformers, and
`graphc generate --prompt-ids` (the generate loop over the KV cache) against transformers'
generate (token for token in f32).
Prints one line per check and exits 1 on any failure.
"""
import argparse
import os
import subprocess
import sys

import numpy as np
import torch
import transformers

import safetensors_np as st

HERE = os.path.dirname(os.path.abspath(__file__))
VARIANTS = [
    ("llama_gqa", []),
    ("llama_tied", ["--tie", "--seed", "3"]),
    ("llama3_bias", ["--rope-llama3", "--attention-bias", "--heads", "2", "--kv-heads", "2", "--seed", "4"]),
    ("qwen2", ["--arch", "qwen2", "--seed", "5"]),
    ("mistral", ["--arch", "mistral", "--seed", "6"]),
    ("shards", ["--shards", "2", "--seed", "7"]),
    ("bf16", ["--dtype", "bf16", "--seed", "8"]),
    ("f16", ["--dtype", "f16", "--seed", "9"]),
]
TOL = {"F32": 1e-4, "F16": 3e-3, "BF16": 3e-2}


def rel(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())


def ref_logits(model_dir, work, ids, steps=0):
    """ref_llama.py's logits of the last token of each row, and its greedy tokens [steps + 1, B]."""
    B, S = ids.shape
    inp, out = os.path.join(work, "in.safetensors"), os.path.join(work, "ref.safetensors")
    st.write(inp, [("ids", ids.astype(np.int32), "I32"), ("pos", np.zeros(B, np.int32), "I32"),
                   ("last", np.full(B, S - 1, np.int32), "I32")])
    subprocess.check_call([sys.executable, os.path.join(HERE, "ref_llama.py"), model_dir, "--inputs", inp,
                           "--output", out, "--steps", str(steps)])
    r = st.read(out)
    return r["logits"][0], r["next"][0]


def graphc_logits(graphc, model_dir, work, ids, backend):
    B, S = ids.shape
    g = os.path.join(work, "m.graph")
    with open(g, "w") as f:
        subprocess.check_call([graphc, "generate", model_dir, "--emit-graph", "--stateless", "--max-batch", str(B),
                               "--max-context", "64"], stdout=f)
    inp, out = os.path.join(work, "gin.safetensors"), os.path.join(work, "gout.safetensors")
    st.write(inp, [("ids", ids.astype(np.int32), "I32"), ("pos", np.zeros(B, np.int32), "I32"),
                   ("last", np.full(B, S - 1, np.int32), "I32")])
    subprocess.check_call([graphc, "run", g, "--backend", backend, "--inputs", inp, "--output", out],
                          stdout=subprocess.DEVNULL)
    return st.read(out)["logits"][0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("work")
    ap.add_argument("--graphc")
    a = ap.parse_args()
    backends = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    failed = 0
    rng = np.random.default_rng(0)
    for name, args in VARIANTS:
        d = os.path.join(a.work, name)
        subprocess.check_call([sys.executable, os.path.join(HERE, "make_tiny_llama.py"), d] + args)
        dtype = st.read(os.path.join(d, "model.safetensors") if "--shards" not in args else
                        os.path.join(d, "model-00001-of-00002.safetensors"))["model.embed_tokens.weight"][1]
        m = transformers.AutoModelForCausalLM.from_pretrained(d, attn_implementation="eager").eval()
        ids = rng.integers(0, 256, size=(2, 7))
        with torch.no_grad():
            hf = m(torch.tensor(ids)).logits[:, -1, :].float().numpy()
            gen = m.generate(torch.tensor(ids[:1]), max_new_tokens=4, do_sample=False, pad_token_id=0)
        r, _ = ref_logits(d, a.work, ids)
        e = rel(r, hf)
        ok = e <= TOL[dtype]
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name} ({dtype}): ref_llama vs transformers, max error {e:.2e}")
        _, nxt = ref_logits(d, a.work, ids[:1], steps=3)
        toks = [int(t) for t in nxt[:, 0]]
        hf_toks = gen[0, ids.shape[1]:].tolist()
        ok = toks == hf_toks or dtype != "F32"  # half precision may break a near tie differently
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {name}: greedy tokens {toks}, transformers' generate {hf_toks}")
        if a.graphc:
            for be in backends:  # the generate loop (prefill + decode over the KV cache)
                r = subprocess.run([a.graphc, "generate", d, "--prompt-ids", ",".join(map(str, ids[0])),
                                    "--max-new-tokens", "4", "--ignore-eos", "--backend", be, "--max-context", "64"],
                                   capture_output=True, text=True)
                g_toks = list(map(int, r.stdout.split())) if r.returncode == 0 else r.stderr.strip()
                ok = g_toks == hf_toks or (dtype != "F32" and r.returncode == 0)
                failed += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {name}: graphc generate ({be}) {g_toks}, transformers' {hf_toks}")
            for be in backends:
                e = rel(graphc_logits(a.graphc, d, a.work, ids, be), hf)
                tol = TOL[dtype] * (4 if be == "cuda" and dtype != "F32" else 1)
                ok = e <= tol
                failed += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {name}: graphc ({be}) vs transformers, max error {e:.2e}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
