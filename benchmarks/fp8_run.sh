#!/usr/bin/env bash
# fp8_run.sh - fp8 GEMMs on a GPU machine (sm_90) against cuBLASLt through torch._scaled_mm, the
# same random operands: y = (a @ b^T) * sa * sb as bf16, a [M, K] and b [N, K] f8e4m3 (both
# K-major, what Hopper's fp8 tensor cores read), per-tensor f32 scales. graphc: a matmul of two
# fp8 operands (an f32 result) with the scales and the cast in its epilogue, `graphc bench`
# (median of CUDA-graph replays). torch: _scaled_mm captured in a CUDA graph, the median of 200
# replays timed one by one with CUDA events (the same method), after checking its output
# against graphc's. Also the bf16 GEMM of the same shape both ways (torch.matmul = cuBLASLt),
# for the fp8 / bf16 ratio, and the int8 GEMM (i8 x i8 -> i32, graphc's matmul of two 8-bit
# integers against torch._int_mm = cuBLASLt int8, outputs equal exactly).
# Carry .dev/build-gpu (tools/pack_gpu.sh). Env: SHAPES ("M:N:K ...").
set -u
. "$(dirname "$0")/device_env.sh"
SHAPES=${SHAPES:-"4096:4096:4096 8192:8192:8192 4096:14336:4096 2048:4096:14336"}
W=$(mktemp -d)
printf '| M | N | K | graphc fp8 ms | TFLOP/s | cuBLASLt fp8 ms | TFLOP/s | graphc / cuBLASLt | graphc bf16 ms | cuBLASLt bf16 ms | graphc fp8 / bf16 speedup | graphc int8 ms | cuBLASLt int8 ms | graphc / cuBLASLt int8 |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
for mnk in $SHAPES; do
  IFS=: read -r M N K <<< "$mnk"
  g=$W/f8_${M}_${N}_${K}.graph; h=$W/bf_${M}_${N}_${K}.graph; q=$W/i8_${M}_${N}_${K}.graph
  printf 'version 1;\ngraph @g(%%a: f8e4m3[%d, %d], %%b: f8e4m3[%d, %d], %%sa: f32[], %%sb: f32[]) -> (bf16[%d, %d]) {\n  %%y = matmul(%%a, %%b, transpose_b=true);\n  %%z = mul(%%y, %%sa);\n  %%w = mul(%%z, %%sb);\n  %%o = cast(%%w, to=bf16);\n  return %%o;\n}\n' \
    "$M" "$K" "$N" "$K" "$M" "$N" > "$g"
  printf 'version 1;\ngraph @g(%%a: bf16[%d, %d], %%b: bf16[%d, %d]) -> (bf16[%d, %d]) {\n  %%y = matmul(%%a, %%b, transpose_b=true);\n  return %%y;\n}\n' \
    "$M" "$K" "$N" "$K" "$M" "$N" > "$h"
  printf 'version 1;\ngraph @g(%%a: i8[%d, %d], %%b: i8[%d, %d]) -> (i32[%d, %d]) {\n  %%y = matmul(%%a, %%b, transpose_b=true);\n  return %%y;\n}\n' \
    "$M" "$K" "$N" "$K" "$M" "$N" > "$q"
  python3 - "$g" "$h" "$M" "$N" "$K" "$B/graphc" "$q" <<'EOF'
import json, subprocess, sys, torch
from safetensors.torch import save_file, load_file
g, h, M, N, K, graphc, q = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6]), sys.argv[6], sys.argv[7]
torch.manual_seed(0)
a = torch.randn(M, K, device="cuda").to(torch.float8_e4m3fn)
b = torch.randn(N, K, device="cuda").to(torch.float8_e4m3fn)
sa = torch.tensor(0.5, device="cuda"); sb = torch.tensor(0.25, device="cuda")
save_file({"a": a.cpu(), "b": b.cpu(), "sa": sa.cpu(), "sb": sb.cpu()}, g + ".in.safetensors")
save_file({"a": a.to(torch.bfloat16).cpu(), "b": b.to(torch.bfloat16).cpu()}, h + ".in.safetensors")
def scaled():
    return torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
ref = scaled().float()
exact = (a.float() @ b.float().t()) * 0.125
assert ((ref - exact).norm() / exact.norm()).item() < 1e-2
subprocess.run([graphc, "run", g, "--backend", "cuda", "--inputs", g + ".in.safetensors", "--output",
                g + ".out.safetensors"], check=True, stdout=subprocess.DEVNULL)
y = next(iter(load_file(g + ".out.safetensors").values())).cuda().float()
err = ((y - exact).norm() / exact.norm()).item()
assert err < 1e-2, f"graphc vs exact: relative L2 {err}"
def bench(path):
    r = subprocess.run([graphc, "bench", path, "--json", "--runs", "100", "--inputs", path + ".in.safetensors"],
                       check=True, capture_output=True, text=True)
    return json.loads(r.stdout.strip().splitlines()[-1])["median_ms"]
def graph_time(fn):
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.synchronize()
    cg = torch.cuda.CUDAGraph()
    with torch.cuda.graph(cg):
        fn()
    ts = []
    for i in range(220):
        x, y_ = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        x.record(); cg.replay(); y_.record(); y_.synchronize()
        if i >= 20:
            ts.append(x.elapsed_time(y_))
    ts.sort()
    return ts[len(ts) // 2]
gm, gb = bench(g), bench(h)
a16, b16 = a.to(torch.bfloat16), b.to(torch.bfloat16)
out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
tm = graph_time(scaled)
tb = graph_time(lambda: torch.matmul(a16, b16.t(), out=out))
ai = torch.randint(-8, 8, (M, K), device="cuda", dtype=torch.int8)
bi = torch.randint(-8, 8, (N, K), device="cuda", dtype=torch.int8)
save_file({"a": ai.cpu(), "b": bi.cpu()}, q + ".in.safetensors")
subprocess.run([graphc, "run", q, "--backend", "cuda", "--inputs", q + ".in.safetensors", "--output",
                q + ".out.safetensors"], check=True, stdout=subprocess.DEVNULL)
yi = next(iter(load_file(q + ".out.safetensors").values())).cuda()
refi = torch._int_mm(ai, bi.t())
assert torch.equal(yi, refi), "graphc int8 != torch._int_mm"
gi = bench(q)
ti = graph_time(lambda: torch._int_mm(ai, bi.t()))
fl = 2.0 * M * N * K
print(f"| {M} | {N} | {K} | {gm:.4f} | {fl / gm / 1e9:.0f} | {tm:.4f} | {fl / tm / 1e9:.0f} | {tm / gm:.2f} | {gb:.4f} | {tb:.4f} | {gb / gm:.2f} | {gi:.4f} | {ti:.4f} | {ti / gi:.2f} |  (graphc fp8 err {err:.1e})")
EOF
done
rm -rf "$W"
