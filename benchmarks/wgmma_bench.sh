#!/usr/bin/env bash
# wgmma_bench.sh - the Hopper warpgroup-MMA matmul kernel (codegen/emit_wgmma.c, the default on
# sm_90) against the mma.sync kernel (GRAPHC_WGMMA=0) in the same run: GEMMs beside cuBLASLt
# (benchmarks/gemm_run.sh) and the f16 models, both codegen paths (graphc bench: CUDA graph
# replay, median of RUNS runs after 5 warm-ups).
# There (GPU machine, carry .dev/build-gpu): benchmarks/wgmma_bench.sh -> $OUT/wgmma.txt
set -u
. "$(dirname "$0")/device_env.sh"
RUNS=${RUNS:-50}
CASES=${WG_GEMM_CASES:-"f16 1 4096 4096 4096 -
f16 1 8192 8192 8192 -
f16 1 4096 4096 4096 bias_gelu"}
for w in 1 0; do
  echo "==== GEMMs, GRAPHC_WGMMA=$w" | tee -a "$OUT/wgmma.txt"
  GRAPHC_WGMMA=$w GEMM_CASES="$CASES" bash benchmarks/gemm_run.sh "$B/graphc" /tmp/wg-gemm-$w 2>&1 | tee -a "$OUT/wgmma.txt"
done
for m in "transformer_block_f16 --bind B=8 --bind S=1024" "resnet_f16 --bind N=64"; do
  set -- $m
  f=examples/$1.graph
  shift
  [ -f "${f%.graph}.safetensors" ] || "$B/graphc" weights "$f" --random --seed 1 -o "${f%.graph}.safetensors"
  for cg in llvm nvrtc; do
    for w in 1 0; do
      echo "==== GRAPHC_WGMMA=$w graphc bench $f $* --codegen $cg" | tee -a "$OUT/wgmma.txt"
      GRAPHC_WGMMA=$w timeout 120 "$B/graphc" bench "$f" "$@" --codegen $cg --runs "$RUNS" --warmup 5 >> "$OUT/wgmma.txt" 2>&1
      echo "exit $?" >> "$OUT/wgmma.txt"
    done
  done
done
grep -E "^====|  median|^exit [1-9]" "$OUT/wgmma.txt" | grep -v "^==== GEMMs"
