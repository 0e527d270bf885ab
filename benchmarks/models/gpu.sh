#!/usr/bin/env bash
# gpu.sh - one device call of the model suite (benchmarks/models/README.md): run.py on the GPU with
# the budget of one call, resuming from the rows the tree already carries, then the rows and their
# table into $OUT. Carry .dev/build-gpu (tools/pack_gpu.sh). Env: MODELS, DTYPES, BATCHES, PEERS
# (run.py's options; unset: all), PRECISIONS (run.py --precisions, e.g. tf32,f16,bf16; unset: none),
# BUDGET_S (default 540: a call may run 600 s).
set -u
. "$(dirname "$0")/../device_env.sh"
R=benchmarks/models/results.json
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 benchmarks/models/run.py --device cuda --graphc "$B/graphc" --out "$R" --resume \
  --budget-s "${BUDGET_S:-540}" ${MODELS:+--models $MODELS} ${DTYPES:+--dtypes $DTYPES} \
  ${BATCHES:+--batches $BATCHES} ${PEERS:+--peers $PEERS} ${PRECISIONS:+--precisions $PRECISIONS} 2>&1 \
  | grep -v -i warn
cp "$R" "$OUT/results.json"
python3 benchmarks/models/table.py "$R" | tee "$OUT/models_table.md"
