#!/usr/bin/env bash
# gpu_wave2.sh - one device call for the deployment wave's kernels (carry .dev/build-gpu):
#   1. correctness against the interpreter (graphc run --check) of the causal attention,
#      the ConvNeXt MLP (matmul-canon) and the depthwise / grouped conv layers, both code paths;
#   2. causal attention (issue #37's causal shapes) against torch SDPA (cuDNN and flash, is_causal);
#   3. the ConvNeXt MLP with and without matmul-canon;
#   4. the depthwise / grouped conv layers, f32 and f16 (llvm path).
# Writes $OUT/wave2.txt.
set -u
. "$(dirname "$0")/device_env.sh"
R=$OUT/wave2.txt
G=$B/graphc
CN=/tmp/cn.safetensors
for e in dw3 dw3s2 dw5 dw7 dwx2 grp3 block; do
  $G weights benchmarks/dwconv.graph --entry @$e --random --seed 1 -o /tmp/dw_$e.safetensors >/dev/null
done
$G weights benchmarks/convnext_mlp_f16.graph --random --seed 1 -o $CN >/dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$R"
echo "==== 1. --check against the interpreter" | tee -a "$R"
for cg in llvm nvrtc; do
  for a in "benchmarks/attention_causal.graph --bind B=1 --bind H=2 --bind S=200 --bind D=64" \
           "benchmarks/attention_causal.graph --bind B=1 --bind H=2 --bind S=130 --bind D=128" \
           "benchmarks/convnext_mlp_f16.graph --weights $CN --bind N=2"; do
    echo "-- $a --codegen $cg: $(timeout 120 $G run $a --backend cuda --codegen $cg --check 2>&1 | grep -iE 'rel_l2|error' | head -3 | tr '\n' ' ')" | tee -a "$R"
  done
  for e in dw3 dw3s2 dw5 dw7 dwx2 grp3 block; do
    for p in f32 f16; do
      echo "-- dwconv @$e $p $cg: $(timeout 60 $G run benchmarks/dwconv.graph --weights /tmp/dw_$e.safetensors --entry @$e --bind N=2 --precision $p --backend cuda --codegen $cg --check 2>&1 | grep -iE 'rel_l2|error' | head -2 | tr '\n' ' ')" | tee -a "$R"
    done
  done
done
echo "==== 2. causal attention vs torch SDPA" | tee -a "$R"
for s in "8 16 1024 64" "4 16 4096 128" "4 16 4096 64" "2 16 8192 128"; do
  set -- $s
  for cg in llvm nvrtc; do
    echo "-- graphc B=$1 H=$2 S=$3 D=$4 $cg: $(timeout 90 $G bench benchmarks/attention_causal.graph --bind B=$1 --bind H=$2 --bind S=$3 --bind D=$4 --codegen $cg --runs 30 --warmup 5 2>&1 | grep -E '^  median|causal' | head -3 | tr '\n' ' ')" | tee -a "$R"
  done
  timeout 120 python3 - "$@" <<'PY' 2>&1 | grep -v -i warn | tee -a "$R"
import sys, torch, torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
B, H, S, D = map(int, sys.argv[1:5])
q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16) for _ in range(3))
fl = 4 * B * H * S * S * D / 2
for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
    try:
        with sdpa_kernel(be):
            for _ in range(5): F.scaled_dot_product_attention(q, k, v, is_causal=True)
            ts = []
            for _ in range(30):
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record(); F.scaled_dot_product_attention(q, k, v, is_causal=True); b.record()
                torch.cuda.synchronize(); ts.append(a.elapsed_time(b))
        ts.sort(); m = ts[len(ts) // 2]
        print(f"-- torch sdpa {name} B={B} H={H} S={S} D={D}: median {m:.4f} ms  {fl / m / 1e9:.0f} TFLOP/s")
    except Exception as e:
        print(f"-- torch sdpa {name}: {type(e).__name__}: {e}")
PY
done
echo "==== 3. ConvNeXt MLP f16 N=64, with and without matmul-canon" | tee -a "$R"
for d in "" "--disable-pass=matmul-canon"; do
  echo "-- convnext_mlp_f16 $d: $(timeout 90 $G bench benchmarks/convnext_mlp_f16.graph --weights $CN --bind N=64 $d --runs 50 --warmup 5 2>&1 | grep -E '^  median' | head -1)" | tee -a "$R"
done
echo "==== 4. depthwise / grouped conv layers, N=8, llvm path" | tee -a "$R"
for e in dw3 dw3s2 dw5 dw7 dwx2 grp3 block; do
  for p in f32 f16; do
    echo "-- dwconv @$e $p: $(timeout 60 $G bench benchmarks/dwconv.graph --weights /tmp/dw_$e.safetensors --entry @$e --bind N=8 --precision $p --runs 50 --warmup 5 2>&1 | grep -E '^  median' | head -1)" | tee -a "$R"
  done
done
