#!/usr/bin/env bash
# gpu_smoke.sh - a short device call (about 100 s) for a small device budget:
# the GPU op tests of the ops a change touched, one `graphc tune` run (whose table
# is a timing of every tensor-core tile) and a before/after bench pair.
#
# Here:   tools/pack_gpu.sh            There: benchmarks/gpu_smoke.sh (carry .dev/build-gpu)
# Env:    OPS (GRAPHC_TEST_OPS list, default conv2d,im2col,matmul)
set -u
. "$(dirname "$0")/device_env.sh"
T=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "== test_backend_ops (${OPS:-conv2d,im2col,matmul})"
( cd "$B" && GRAPHC_TEST_OPS=${OPS:-conv2d,im2col,matmul} timeout 45 ./tests/test_backend_ops 2>&1 | grep -E "^==== |  FAIL |Checks|:F:|:E:" | head -14 )
echo "== graphc tune, f16 127x4096x4096 (every tile timed)"
printf 'version 1;\ngraph @g(%%a: f16[127, 4096], %%b: f16[4096, 4096]) -> (f16[127, 4096]) {\n  %%y = matmul(%%a, %%b);\n  return %%y;\n}\n' > "$T/mm.graph"
timeout 25 "$B/graphc" tune "$T/mm.graph" -o "$T/mm.tuning" --runs 10 --codegen llvm 2>&1 | tail -4
echo "== cnn N=64, conv-gemm on / off (llvm)"
for dp in "" "--disable-pass=conv-gemm"; do
  timeout 12 "$B/graphc" bench examples/cnn.graph --bind N=64 --codegen llvm --runs 20 --warmup 3 $dp 2>&1 | grep -E "median" | head -1
done
rm -rf "$T"
