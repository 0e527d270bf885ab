#!/usr/bin/env bash
# dwconv_run.sh - one device call (~3 min) for the grouped / depthwise conv kernel
# (codegen/emit_dwconv.c): every layer of benchmarks/dwconv.graph at N=8 (BENCH_N) in f32
# (NCHW kernel) and f16 (the layout pass's NHWC kernel) with both code paths, then
# test_backend_ops on conv2d and the chains. Compare with a run of the build before the
# kernel (BASE=path of its build: the same benches with it, side by side).
# Here: tools/pack_gpu.sh. There: benchmarks/dwconv_run.sh (carry .dev/build-gpu; writes $OUT).
set -u
. "$(dirname "$0")/device_env.sh"
N=${BENCH_N:-8}
for e in dw3 dw3s2 dw5 dw7 dwx2 grp3 block; do
  for p in f32 f16; do
    for cg in llvm nvrtc; do
      for b in "$B" ${BASE:-}; do
        echo "==== $b/graphc bench @$e N=$N --precision $p --codegen $cg" >> "$OUT/bench.txt"
        timeout 60 "$b/graphc" bench benchmarks/dwconv.graph --entry @$e --bind N=$N --precision $p \
          --codegen $cg --runs 50 --warmup 5 >> "$OUT/bench.txt" 2>&1
      done
    done
  done
done
grep -E "^====|median" "$OUT/bench.txt"
GRAPHC_TEST_OPS=conv2d,chains timeout 400 "$B/tests/test_backend_ops" > "$OUT/ops.txt" 2>&1
echo "test_backend_ops conv2d,chains: exit $?"; tail -3 "$OUT/ops.txt"
