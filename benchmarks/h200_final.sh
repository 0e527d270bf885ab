#!/usr/bin/env bash
# h200_final.sh - the benchmark half of a device session (after h200_run.sh has run the suites):
# tensor-core GEMMs vs cuBLASLt, bandwidth-bound kernels vs copy, models vs PyTorch / JAX,
# conv2d (ResNet-50 layers, f16) vs cuDNN,
# the f32 examples, then all of it as one table (benchmarks/table.py -> table.txt), and
# compute-sanitizer (memcheck, racecheck) on tensor-core and row kernels.
# Carry .dev/build-gpu; writes to $OUT. Env: SKIP_CONV, SKIP_GEMM, SKIP_BW, SKIP_PEERS (PEER_MODELS), SKIP_CS, SKIP_EXAMPLES, FINAL_SUITES, GEMM_CASES.
set -u
. "$(dirname "$0")/device_env.sh"
[ -z "${FINAL_SUITES-test_aot_host}" ] ||
  ( cd "$B" && ctest -R "${FINAL_SUITES:-test_aot_host}" --output-on-failure 2>&1 | tail -3 ) | tee "$OUT/table.txt"
[ "${SKIP_CONV:-0}" = 1 ] || timeout 200 python3 benchmarks/conv_peer.py --graphc "$B/graphc" --out /tmp/convp 2>&1 \
                               | grep -v -i warn | tee "$OUT/conv.txt"
[ "${SKIP_GEMM:-0}" = 1 ] || bash benchmarks/gemm_run.sh "$B/graphc" /tmp/gemm 2>&1 | tee "$OUT/gemm.txt"
[ "${SKIP_BW:-0}" = 1 ] || { echo "== bandwidth"; bash benchmarks/bandwidth_run.sh "$B/graphc" /tmp/bw 2>&1 | tee "$OUT/bw.txt"; }
[ "${SKIP_PEERS:-0}" = 1 ] || timeout ${PEERS_TIMEOUT:-400} python3 benchmarks/peers.py --graphc "$B/graphc" --out /tmp/peers ${PEER_MODELS:+--models $PEER_MODELS} 2>&1 \
                               | grep -v -i warn | tail -20 | tee "$OUT/peers.txt"
[ "${SKIP_EXAMPLES:-0}" = 1 ] || for a in "mlp --bind B=4096" "cnn --bind N=64" "transformer_block --bind B=8 --bind S=1024"; do
  set -- $a; f=examples/$1.graph; shift
  for cg in nvrtc llvm; do
    printf "%-40s %-6s " "$f $*" $cg; "$B/graphc" bench "$f" "$@" --codegen $cg --runs 50 --warmup 5 2>&1 | awk '/^  median/ {print $2 " ms"} /^  code/ {k=$0} END {}'
  done
done | tee "$OUT/examples.txt"   # the f32 examples, both paths
# Everything above in one table (after the suites' lines; $OUT returns at most 8 files).
echo "== one table" | tee -a "$OUT/table.txt"
python3 benchmarks/table.py "$OUT" 2>&1 | tee -a "$OUT/table.txt"
[ "${SKIP_CS:-0}" = 1 ] && exit 0
echo "== compute-sanitizer"
CS=/usr/local/cuda/bin/compute-sanitizer
CSD=$(mktemp -d)   # the reports, tarred into one file ($OUT takes at most 8 files)
mkdir -p /tmp/peers
[ -f /tmp/peers/transformer_block_f16.safetensors ] ||
  "$B/graphc" weights examples/transformer_block_f16.graph --random --seed 1 -o /tmp/peers/transformer_block_f16.safetensors
[ -f /tmp/peers/resnet_f16.safetensors ] ||
  "$B/graphc" weights examples/resnet_f16.graph --random --seed 1 -o /tmp/peers/resnet_f16.safetensors
printf 'version 1;\ngraph @g(%%a: f16[2, 200, 72], %%b: f16[72, 136], %%c: f16[136]) -> (f16[2, 200, 136]) {\n  %%y = matmul(%%a, %%b);\n  %%z = add(%%y, %%c);\n  %%r = gelu(%%z);\n  return %%r;\n}\n' > /tmp/tc.graph
for tool in memcheck racecheck; do
  for cg in nvrtc llvm; do
    timeout 90 $CS --tool $tool --error-exitcode 9 "$B/graphc" run /tmp/tc.graph --backend cuda --codegen $cg --eager > "$CSD/cs-$tool-tc-$cg.txt" 2>&1
    echo "$tool tc $cg exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$CSD/cs-$tool-tc-$cg.txt" | head -1)"
  done
  for cg in nvrtc llvm; do   # conv as implicit GEMM: im2col staged into tensor-core tiles, K=147 at the stem
    timeout 120 $CS --tool $tool --error-exitcode 9 "$B/graphc" run examples/resnet_f16.graph --bind N=1 \
      --weights /tmp/peers/resnet_f16.safetensors --backend cuda --codegen $cg --eager > "$CSD/cs-$tool-resnet-$cg.txt" 2>&1
    echo "$tool resnet_f16 $cg exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$CSD/cs-$tool-resnet-$cg.txt" | head -1)"
  done
  timeout 120 $CS --tool $tool --error-exitcode 9 "$B/graphc" run examples/transformer_block_f16.graph --bind B=1 --bind S=136 \
    --weights /tmp/peers/transformer_block_f16.safetensors --backend cuda --eager > "$CSD/cs-$tool-tb16.txt" 2>&1
  echo "$tool transformer_f16 nvrtc exit $? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$CSD/cs-$tool-tb16.txt" | head -1)"
done | tee "$OUT/sanitizer.txt"
tar -C "$CSD" -czf "$OUT/cs.tgz" . && rm -rf "$CSD"
