#!/usr/bin/env bash
# h200_run.sh - one device call that validates and measures graphc on a GPU.
#
# Here (build machine):   tools/pack_gpu.sh          (Release build -> .dev/build-gpu, no objects)
# There (GPU machine):    benchmarks/h200_run.sh     (carry .dev/build-gpu; writes to $OUT)
#
#   1. the GPU suites under ctest            -> $OUT/ctest-gpu.log
#   2. graphc bench: every example, nvrtc and llvm, fused and unfused
#                                            -> $OUT/bench.txt
#   3. ONNX real models exported from PyTorch -> $OUT/onnx-models.txt
# A summary is printed last.
set -u
ROOT=$PWD
OUT=${OUT:-$ROOT/h200-out}
mkdir -p "$OUT"
# The build records absolute paths (/work/main/...): make them resolve here.
if [ ! -e /work/main/CMakeLists.txt ]; then mkdir -p /work && ln -sfn "$ROOT" /work/main; fi
[ -e "$ROOT/build-gpu" ] || ln -sfn "$ROOT/.dev/build-gpu" "$ROOT/build-gpu"
B=$ROOT/build-gpu
export LD_LIBRARY_PATH="$B/syslibs:$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export GRAPHC_CACHE=off
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/device.txt"

# 1. GPU suites (and the AOT/cache suites, whose GPU cases run only here).
t0=$(date +%s)
( cd "$B" && ctest -j6 --output-on-failure -R "${SUITES:-test_(cuda_runtime|backend_ops|examples_gpu|kir_device|bundle|cache|install|fusion)}" ) \
  > "$OUT/ctest-gpu.log" 2>&1
echo "ctest exit $? in $(( $(date +%s) - t0 )) s" | tee "$OUT/summary.txt"
grep -E "Test +#|tests passed|Skipped|Failed" "$OUT/ctest-gpu.log" | tee -a "$OUT/summary.txt"
grep -E "^==== [0-9]+ pass|  FAIL " "$OUT/ctest-gpu.log" | awk '!seen[$0]++' | head -30 | tee -a "$OUT/summary.txt"

# 2. Benchmarks: sizes from the performance issue where the examples allow.
bench() {  # name binds...
  local f=examples/$1.graph; shift
  for cg in nvrtc llvm; do
    for opt in "" "--disable-pass=fusion"; do
      echo "==== graphc bench $f $* --codegen $cg $opt" >> "$OUT/bench.txt"
      timeout 120 "$B/graphc" bench "$f" "$@" --codegen $cg $opt --runs 50 --warmup 5 >> "$OUT/bench.txt" 2>&1
      echo "exit $?" >> "$OUT/bench.txt"
    done
  done
}
[ "${SKIP_BENCH:-0}" = 1 ] || {
  bench mlp --bind B=4096
  bench mlp --bind B=1
  bench cnn --bind N=64
  bench resnet_f16 --bind N=64
  bench transformer_block --bind B=8 --bind S=1024
}

# 3. ONNX: real models from PyTorch, on the GPU.
[ "${SKIP_ONNX:-0}" = 1 ] || timeout 240 python3 benchmarks/onnx_real_models.py --graphc "$B/graphc" --backend cuda \
  > "$OUT/onnx-models.txt" 2>&1
echo "==== summary"
cat "$OUT/summary.txt"
grep -E "^====|median|copy|kernels|exit [1-9]" "$OUT/bench.txt" 2>/dev/null | head -80
cat "$OUT/onnx-models.txt" 2>/dev/null | tail -8
