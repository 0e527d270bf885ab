#!/usr/bin/env bash
# h200_run.sh - one device call that validates and measures graphc on a GPU.
#
# Here (build machine):   tools/pack_gpu.sh          (Release build -> .dev/build-gpu, no objects)
# There (GPU machine):    benchmarks/h200_run.sh     (carry .dev/build-gpu; writes to $OUT)
#
#   1. the GPU suites under ctest            -> $OUT/ctest-gpu.log
#      test_backend_ops in SHARDS processes   -> $OUT/ops.log
#   2. graphc bench: every example, nvrtc and llvm, fused and unfused
#                                            -> $OUT/bench.txt
#   3. graphc tune on three f16 shapes, and the bundle-bytes check -> $OUT/tune.txt
#   4. ONNX real models exported from PyTorch -> $OUT/onnx-models.txt
# Env: SUITES (ctest regex), SHARDS, SKIP_OPS (GRAPHC_TEST_OPS limits the ops), SKIP_BENCH, SKIP_TUNE, SKIP_ONNX.
# A summary is printed last.
set -u
. "$(dirname "$0")/device_env.sh"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/device.txt"

# 1. GPU suites (and the AOT/cache suites, whose GPU cases run only here).
#    test_backend_ops (one process, ~330 s alone) runs as SHARDS processes beside ctest.
t0=$(date +%s)
SHARDS=${SHARDS:-10}
if [ "${SKIP_OPS:-0}" != 1 ]; then
  for k in $(seq 0 $((SHARDS - 1))); do
    ( cd "$B" && GRAPHC_TEST_SHARD=$k/$SHARDS timeout 500 ./tests/test_backend_ops > "$OUT/ops-$k.log" 2>&1; echo "shard $k exit $?" >> "$OUT/ops-$k.log" ) &
  done
fi
( cd "$B" && ctest -j4 --output-on-failure -R "${SUITES:-test_(cuda_runtime|examples_gpu|kir_device|bundle|cache|install|fusion|cuda_faults|aot_host)}" ) \
  > "$OUT/ctest-gpu.log" 2>&1
echo "ctest exit $? in $(( $(date +%s) - t0 )) s" | tee "$OUT/summary.txt"
wait
echo "backend_ops shards done in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.txt"
cat "$OUT"/ops-*.log > "$OUT/ops.log" 2>/dev/null; rm -f "$OUT"/ops-*.log
grep -E "^shard|Checks|:F:|:E:" "$OUT/ops.log" | tee -a "$OUT/summary.txt"
grep -E "Test +#|tests passed|Skipped|Failed" "$OUT/ctest-gpu.log" | tee -a "$OUT/summary.txt"
grep -E "^==== [0-9]+ pass|  FAIL " "$OUT/ctest-gpu.log" "$OUT/ops.log" | awk '!seen[$0]++' | head -30 | tee -a "$OUT/summary.txt"

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
  for cg in nvrtc llvm; do   # the direct convolution, for comparison
    echo "==== graphc bench examples/cnn.graph --bind N=64 --codegen $cg --disable-pass=conv-gemm" >> "$OUT/bench.txt"
    timeout 120 "$B/graphc" bench examples/cnn.graph --bind N=64 --codegen $cg --disable-pass=conv-gemm \
      --runs 50 --warmup 5 >> "$OUT/bench.txt" 2>&1
    echo "exit $?" >> "$OUT/bench.txt"
  done
  bench resnet_f16 --bind N=64
  bench transformer_block --bind B=8 --bind S=1024
}

# 3. ONNX: real models from PyTorch, on the GPU.
# 3. graphc tune: every tensor-core tile timed on awkward shapes.
[ "${SKIP_TUNE:-0}" = 1 ] || {
T=$(mktemp -d)
for shp in "127 4096 4096" "4096 4096 1000" "2048 2048 2048"; do
  set -- $shp
  printf 'version 1;\ngraph @g(%%a: f16[%s, %s], %%b: f16[%s, %s]) -> (f16[%s, %s]) {\n  %%y = matmul(%%a, %%b);\n  return %%y;\n}\n' \
    $1 $3 $3 $2 $1 $2 > "$T/mm.graph"
  echo "==== graphc tune f16 m=$1 n=$2 k=$3" >> "$OUT/tune.txt"
  timeout 40 "$B/graphc" tune "$T/mm.graph" -o "$T/mm.tuning" --runs 20 --codegen llvm >> "$OUT/tune.txt" 2>&1
  echo "exit $?" >> "$OUT/tune.txt"; cat "$T/mm.tuning" >> "$OUT/tune.txt" 2>/dev/null
  timeout 40 "$B/graphc" compile "$T/mm.graph" --tuning "$T/mm.tuning" -o "$T/a.gcx" >> "$OUT/tune.txt" 2>&1 &&
  timeout 40 "$B/graphc" compile "$T/mm.graph" --tuning "$T/mm.tuning" -o "$T/b.gcx" >> "$OUT/tune.txt" 2>&1 &&
    cmp "$T/a.gcx" "$T/b.gcx" >> "$OUT/tune.txt" 2>&1 && echo "same bundle bytes" >> "$OUT/tune.txt"
done
rm -rf "$T"
}

# 4. ONNX
[ "${SKIP_ONNX:-0}" = 1 ] || timeout 240 python3 benchmarks/onnx_real_models.py --graphc "$B/graphc" --backend cuda \
  > "$OUT/onnx-models.txt" 2>&1
echo "==== summary"
cat "$OUT/summary.txt"
grep -E "^====|median|copy|kernels|exit [1-9]" "$OUT/bench.txt" 2>/dev/null | head -80
cat "$OUT/tune.txt" 2>/dev/null
cat "$OUT/onnx-models.txt" 2>/dev/null | tail -8
