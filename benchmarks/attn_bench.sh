#!/usr/bin/env bash
# attn_bench.sh - the attention fusion (codegen/emit_attn.c) on the GPU, in one run:
#   1. the f16 transformer block (B=2, S=200) on both codegen paths, fused (default) and
#      unfused (GRAPHC_FLASH=0), against the interpreter: largest error of each;
#   2. benchmarks/attention.graph alone (B=8, H=16, S=1024, D=64) against PyTorch's
#      scaled_dot_product_attention (flash) on the same inputs;
#   3. the transformer block at B=8, S=1024, fused and unfused, both paths.
# There (GPU machine, carry .dev/build-gpu): benchmarks/attn_bench.sh -> $OUT/attn.txt
set -u
. "$(dirname "$0")/device_env.sh"
RUNS=${RUNS:-50}
R=$OUT/attn.txt
f=examples/transformer_block_f16.graph
W=/tmp/tb16.safetensors
[ -f $W ] || "$B/graphc" weights $f --random --seed 1 -o $W
echo "==== 1. transformer_block_f16 B=2 S=200 against the interpreter" | tee -a "$R"
"$B/graphc" run $f --bind B=2 --bind S=200 --weights $W --backend interp --seed 3 --output /tmp/tb_interp.safetensors > /dev/null
for cg in llvm nvrtc; do
  for fl in 1 0; do
    GRAPHC_FLASH=$fl "$B/graphc" run $f --bind B=2 --bind S=200 --weights $W --backend cuda --codegen $cg --seed 3 \
      --output /tmp/tb_${cg}_$fl.safetensors > /dev/null || echo "run failed: $cg flash=$fl" | tee -a "$R"
  done
done
python3 - >> "$R" 2>&1 <<'PY'
from safetensors.numpy import load_file
import numpy as np
ref = load_file("/tmp/tb_interp.safetensors")["y"].astype(np.float64)
for cg in ("llvm", "nvrtc"):
    for fl in (1, 0):
        got = load_file(f"/tmp/tb_{cg}_{fl}.safetensors")["y"].astype(np.float64)
        e = np.abs(got - ref)
        print(f"{cg:5s} flash={fl}: max |err| {e.max():.4g}, mean {e.mean():.3g}, max |ref| {np.abs(ref).max():.3g}")
PY
tail -4 "$R"
echo "==== 2. attention alone, B=8 H=16 S=1024 D=64" | tee -a "$R"
A="--bind B=8 --bind H=16 --bind S=1024 --bind D=64"
for cg in llvm nvrtc; do
  echo "== graphc bench --codegen $cg" >> "$R"
  timeout 120 "$B/graphc" bench benchmarks/attention.graph $A --codegen $cg --runs $RUNS --warmup 5 >> "$R" 2>&1
  echo "== GRAPHC_FLASH=0 graphc bench --codegen $cg" >> "$R"
  GRAPHC_FLASH=0 timeout 120 "$B/graphc" bench benchmarks/attention.graph $A --codegen $cg --runs $RUNS --warmup 5 >> "$R" 2>&1
done
python3 - >> "$R" 2>&1 <<'PY'
import torch, torch.nn.functional as F
q, k, v = (torch.randn(8, 16, 1024, 64, device="cuda", dtype=torch.float16) for _ in range(3))
for name, fn in (("sdpa", lambda: F.scaled_dot_product_attention(q, k, v)),
                 ("eager", lambda: torch.softmax((q @ k.transpose(-1, -2)) * 0.125, -1) @ v)):
    for _ in range(5): fn()
    ts = []
    for _ in range(50):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize(); ts.append(a.elapsed_time(b))
    ts.sort()
    print(f"torch {name}: median {ts[len(ts)//2]:.4f} ms")
PY
echo "==== 3. transformer_block_f16 B=8 S=1024" | tee -a "$R"
for cg in llvm nvrtc; do
  for fl in 1 0; do
    echo "== GRAPHC_FLASH=$fl graphc bench --codegen $cg" >> "$R"
    GRAPHC_FLASH=$fl timeout 120 "$B/graphc" bench $f --bind B=8 --bind S=1024 --weights $W --codegen $cg --runs $RUNS --warmup 5 >> "$R" 2>&1
  done
done
grep -E "^====|^==|median|flash=|torch|failed" "$R"
