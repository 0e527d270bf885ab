#!/usr/bin/env bash
# h200_conv.sh - one device call (~8 min) after a change to the tensor-core or conv path:
#   1. benchmarks on a quiet GPU: ResNet-50 conv layers vs cuDNN, resnet_f16 and cnn with
#      both code paths, the f16 models against PyTorch / torch.compile / JAX;
#   2. then, side by side, the GPU suites (test_backend_ops on $GRAPHC_TEST_OPS, default
#      conv2d,im2col,matmul,chains, in shards) and compute-sanitizer (memcheck, racecheck)
#      on the tensor-core and conv kernels, and (RANDOM_WORKERS, RANDOM_SECONDS) the
#      random-graph differential test on the cuda backend.
# Here: tools/pack_gpu.sh. There: benchmarks/h200_conv.sh (carry .dev/build-gpu; writes to $OUT,
# at most 8 files: the logs go into logs.tgz).
set -u
. "$(dirname "$0")/device_env.sh"
export GRAPHC_TEST_OPS=${GRAPHC_TEST_OPS:-conv2d,im2col,matmul,chains}
t0=$(date +%s)
SKIP_GEMM=1 SKIP_BW=1 SKIP_EXAMPLES=1 SKIP_CS=1 FINAL_SUITES= PEERS_TIMEOUT=200 \
  PEER_MODELS=${PEER_MODELS:-resnet_f16_n64,transformer_f16} bash benchmarks/h200_final.sh
for a in "resnet_f16 --bind N=64" "cnn --bind N=64"; do
  set -- $a; f=examples/$1.graph; shift
  for cg in llvm nvrtc; do
    echo "==== graphc bench $f $* --codegen $cg" >> "$OUT/bench.txt"
    timeout 60 "$B/graphc" bench "$f" "$@" --codegen $cg --runs 50 --warmup 5 >> "$OUT/bench.txt" 2>&1
  done
done
grep -E "^====|median" "$OUT/bench.txt"
echo "benchmarks done in $(( $(date +%s) - t0 )) s"
( SKIP_CONV=1 SKIP_GEMM=1 SKIP_BW=1 SKIP_PEERS=1 SKIP_EXAMPLES=1 FINAL_SUITES= bash benchmarks/h200_final.sh \
    > "$OUT/sanitizer-run.txt" 2>&1 ) &
# random-graph differential on the cuda backend: RANDOM_WORKERS processes, each running
# batches of 50 graphs (fresh seeds) until RANDOM_SECONDS have passed
rg_worker() {  # worker index
  local end=$(( $(date +%s) + ${RANDOM_SECONDS:-0} )) i=0
  while [ "$(date +%s)" -lt "$end" ]; do
    local log=/tmp/rg-$1-$i.log
    ( cd "$B" && GRAPHC_TEST_SEED=$(( (t0 << 8) + $1 * 100000 + i )) GRAPHC_RANDOM_GRAPHS=50 \
      GRAPHC_RANDOM_GRAPHS_CONFIGS=cuda GRAPHC_COMPILE_THREADS=1 timeout 300 ./tests/test_random_graphs > "$log" 2>&1 ) ||
      head -c 20000 "$log" >> "$OUT/random-$1.txt"   # a failure: its reproducers
    grep -E "^random graphs: (cuda|.*seed)" "$log" >> "$OUT/random-$1.txt"
    i=$((i + 1))
  done
}
for w in $(seq 1 "${RANDOM_WORKERS:-0}"); do rg_worker "$w" & done
SKIP_BENCH=1 SKIP_TUNE=1 SKIP_ONNX=1 bash benchmarks/h200_run.sh > /dev/null 2>&1
wait
if [ "${RANDOM_WORKERS:-0}" -gt 0 ]; then
  cat "$OUT"/random-*.txt > "$OUT/random.txt"; rm -f "$OUT"/random-*.txt
  awk '/^random graphs: cuda/ {c += $5; s += $7; m += $9} END {printf "random graphs on cuda: compared %d, skipped %d, mismatches %d\n", c, s, m}' \
    "$OUT/random.txt" | tee -a "$OUT/random.txt"
fi
echo "all done in $(( $(date +%s) - t0 )) s"
cat "$OUT/summary.txt"; cat "$OUT/sanitizer.txt"
tar -C "$OUT" -czf "$OUT/logs.tgz" ctest-gpu.log ops.log cs.tgz sanitizer-run.txt 2>/dev/null &&
  rm -f "$OUT/ctest-gpu.log" "$OUT/ops.log" "$OUT/cs.tgz" "$OUT/sanitizer-run.txt"
ls "$OUT"
