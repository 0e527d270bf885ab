#!/usr/bin/env bash
# gemv_run.sh - matmuls of a few rows (a decode step's linears: codegen/emit_gemv.c) on a GPU
# machine against PyTorch: y = x @ W^T with W [N, K] (transpose_b, Hugging Face's layout),
# x [M, K], bf16, for M in 1 4 8 and the Llama-3.2-1B / 8B projection shapes. graphc: `graphc
# bench` (median of CUDA-graph replays, random inputs); torch: F.linear captured in a CUDA
# graph, the median of 200 replays timed one by one with CUDA events (the same method), after
# checking its output against graphc's on the same inputs. GB/s counts W and x read, y written.
# Carry .dev/build-gpu (tools/pack_gpu.sh). Env: DTYPE (bf16), SHAPES ("N:K ...").
set -u
. "$(dirname "$0")/device_env.sh"
DT=${DTYPE:-bf16}
SHAPES=${SHAPES:-"2048:2048 512:2048 8192:2048 2048:8192 128256:2048 14336:4096 4096:14336"}
W=$(mktemp -d)
printf '| M | N | K | graphc ms | GB/s | torch ms | GB/s | torch / graphc |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n'
for M in 1 4 8; do
  for nk in $SHAPES; do
    N=${nk%:*}; K=${nk#*:}
    g=$W/g_${M}_${N}_${K}.graph
    printf 'version 1;\ngraph @g(%%x: %s[%d, %d], %%w: %s[%d, %d]) -> (%s[%d, %d]) {\n  %%y = matmul(%%x, %%w, transpose_b=true);\n  return %%y;\n}\n' \
      "$DT" "$M" "$K" "$DT" "$N" "$K" "$DT" "$M" "$N" > "$g"
    python3 - "$g" "$M" "$N" "$K" "$DT" "$B/graphc" <<'EOF'
import json, subprocess, sys, torch
import torch.nn.functional as F
from safetensors.torch import save_file, load_file
g, M, N, K, dt, graphc = sys.argv[1], *map(int, sys.argv[2:5]), sys.argv[5], sys.argv[6]
T = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[dt]
torch.manual_seed(0)
x = torch.randn(M, K, device="cuda").to(T)
w = (torch.randn(N, K, device="cuda") / K ** 0.5).to(T)
save_file({"x": x.cpu(), "w": w.cpu()}, g + ".in.safetensors")
subprocess.run([graphc, "run", g, "--backend", "cuda", "--inputs", g + ".in.safetensors", "--output",
                g + ".out.safetensors"], check=True, stdout=subprocess.DEVNULL)
y = load_file(g + ".out.safetensors")
y = next(iter(y.values())).cuda().float()
ref = F.linear(x, w).float()
err = ((y - ref).norm() / ref.norm()).item()
assert err < 2e-2, f"graphc vs torch: relative L2 {err}"
r = subprocess.run([graphc, "bench", g, "--json", "--runs", "200", "--inputs", g + ".in.safetensors"],
                   check=True, capture_output=True, text=True)
gm = json.loads(r.stdout.strip().splitlines()[-1])["median_ms"]
out = torch.empty(M, N, device="cuda", dtype=T)
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    for _ in range(3):
        torch.matmul(x, w.t(), out=out)
torch.cuda.synchronize()
cg = torch.cuda.CUDAGraph()
with torch.cuda.graph(cg):
    torch.matmul(x, w.t(), out=out)
ts = []
for i in range(220):
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record(); cg.replay(); b.record(); b.synchronize()
    if i >= 20:
        ts.append(a.elapsed_time(b))
ts.sort()
tm = ts[len(ts) // 2]
by = (N * K + M * K + M * N) * x.element_size()
print(f"| {M} | {N} | {K} | {gm:.4f} | {by / gm / 1e6:.0f} | {tm:.4f} | {by / tm / 1e6:.0f} | {tm / gm:.2f} |")
EOF
  done
done
rm -rf "$W"
