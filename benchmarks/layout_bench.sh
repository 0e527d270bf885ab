#!/usr/bin/env bash
# layout_bench.sh - the layout pass on the GPU: each conv example with NHWC convs (the
# default on the cuda backend) and with --disable-pass=layout (the NCHW conv-gemm form),
# both codegen paths: kernels and time per run (graphc bench: CUDA graph replay, median
# of RUNS runs after 5 warm-ups, the copy bandwidth of the same process beside it).
# There (GPU machine, carry .dev/build-gpu): benchmarks/layout_bench.sh -> $OUT/layout.txt
set -u
. "$(dirname "$0")/device_env.sh"
RUNS=${RUNS:-50}
for m in "resnet_f16 --bind N=64" "cnn --bind N=64"; do
  set -- $m
  f=examples/$1.graph
  shift
  for cg in llvm nvrtc; do
    for opt in "" "--disable-pass=layout"; do
      echo "==== graphc bench $f $* --codegen $cg $opt" | tee -a "$OUT/layout.txt"
      timeout 120 "$B/graphc" bench "$f" "$@" --codegen $cg $opt --runs "$RUNS" --warmup 5 >> "$OUT/layout.txt" 2>&1
      echo "exit $?" >> "$OUT/layout.txt"
    done
  done
done
grep -E "^====|  code|  median|^exit [1-9]" "$OUT/layout.txt"
