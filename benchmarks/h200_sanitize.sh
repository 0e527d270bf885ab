#!/usr/bin/env bash
# h200_sanitize.sh - the reliability issue's device half (not yet run: written 2026-11-30 for
# the next session with device time):
#   1. the GPU test suites under compute-sanitizer memcheck (test_backend_ops in SHARDS
#      processes, the other GPU suites one process each; Check's forked tests are followed
#      with --target-processes all), then racecheck on the ops whose kernels use shared
#      memory (matmul, conv2d, im2col, the row and reduction kernels, the chains);
#   2. the random-graph differential test on the cuda backend for RANDOM_SECONDS.
# Here: tools/pack_gpu.sh. There: benchmarks/h200_sanitize.sh (carry .dev/build-gpu).
# Writes $OUT/sanitize.txt (one line per run: tool, suite, exit status, summary) and the
# reports of failing runs, tarred (the device returns at most 8 files).
set -u
. "$(dirname "$0")/device_env.sh"
CS="${CS_BIN:-/usr/local/cuda/bin/compute-sanitizer} --target-processes all --error-exitcode 9"
SHARDS=${SHARDS:-12}
L=$(mktemp -d)
t0=$(date +%s)
cs_run() {  # tool label command... : one sanitized run, its summary line in sanitize.txt
  local tool=$1 label=$2; shift 2
  ( cd "$B" && timeout "${CS_TIMEOUT:-540}" $CS --tool "$tool" "$@" > "$L/$tool-$label.log" 2>&1 )
  local rc=$?
  echo "$tool $label exit $rc $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$L/$tool-$label.log" | sort | uniq -c | tr -s ' ' | head -3 | tr '\n' ';')" \
    >> "$OUT/sanitize.txt"
  [ $rc = 0 ] && rm -f "$L/$tool-$label.log"
}
for k in $(seq 0 $((SHARDS - 1))); do
  ( export GRAPHC_TEST_SHARD=$k/$SHARDS; cs_run memcheck "backend_ops-$k" ./tests/test_backend_ops ) &
done
for s in test_cuda_runtime test_examples_gpu test_fusion test_kir_device test_bundle; do
  cs_run memcheck "$s" "./tests/$s" &
done
wait
export GRAPHC_TEST_OPS=${RACE_OPS:-matmul,conv2d,im2col,softmax,layernorm,rmsnorm,reduce_sum,reduce_max,reduce_mean,chains}
for k in $(seq 0 5); do ( export GRAPHC_TEST_SHARD=$k/6; cs_run racecheck "backend_ops-$k" ./tests/test_backend_ops ) & done
wait
unset GRAPHC_TEST_OPS
echo "sanitizers done in $(( $(date +%s) - t0 )) s" | tee -a "$OUT/sanitize.txt"
if [ "${RANDOM_SECONDS:-0}" -gt 0 ]; then
  end=$(( $(date +%s) + RANDOM_SECONDS ))
  for w in $(seq 1 "${RANDOM_WORKERS:-12}"); do
    ( i=0; while [ "$(date +%s)" -lt "$end" ]; do
        ( cd "$B" && GRAPHC_TEST_SEED=$(( (t0 << 8) + w * 100000 + i )) GRAPHC_RANDOM_GRAPHS=50 \
          GRAPHC_RANDOM_GRAPHS_CONFIGS=cuda GRAPHC_COMPILE_THREADS=1 timeout 300 ./tests/test_random_graphs \
          > "$L/rg-$w-$i.log" 2>&1 ) && rm -f "$L/rg-$w-$i.log.keep" || cp "$L/rg-$w-$i.log" "$L/rg-$w-$i.log.keep"
        grep -h "^random graphs: cuda" "$L/rg-$w-$i.log" >> "$L/rg-summary.txt"; rm -f "$L/rg-$w-$i.log"
        i=$((i + 1))
      done ) &
  done
  wait
  awk '{c += $5; s += $7; m += $9} END {printf "random graphs on cuda: compared %d, skipped %d, mismatches %d\n", c, s, m}' \
    "$L/rg-summary.txt" | tee -a "$OUT/sanitize.txt"
fi
tar -C "$L" -czf "$OUT/sanitize-logs.tgz" . && rm -rf "$L"
cat "$OUT/sanitize.txt"
