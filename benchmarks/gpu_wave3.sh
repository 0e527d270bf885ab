#!/usr/bin/env bash
# gpu_wave3.sh - one device call after the causal + key-padding attention masks (carry .dev/build-gpu):
#   1. the GPU test suites the change touches (ctest);
#   2. --check of benchmarks/attention_causal_padding.graph against the interpreter, both code paths;
#   3. causal attention with and without a key-padding mask (graphc bench);
#   4. GPT-2 (6 layers) and Llama (4 layers) f16 through the model suite against
#      torch.compile reduce-overhead (run.py, which exports with the attention_mask input).
# Writes $OUT/wave3.txt (and $OUT/results.json, models_table.md).
set -u
. "$(dirname "$0")/device_env.sh"
R=$OUT/wave3.txt
G=$B/graphc
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$R"
echo "==== 1. ctest" | tee -a "$R"
(cd "$B" && timeout "${CTEST_S:-240}" ctest -R "${CTEST_R:-test_lower_matmul|test_fusion|test_examples_gpu|test_cuda_runtime}" 2>&1 | tail -12) | tee -a "$R"
echo "==== 2. --check" | tee -a "$R"
for cg in llvm nvrtc; do
  for s in "1 2 200 64" "2 4 130 128"; do
    set -- $s
    echo "-- padding B=$1 H=$2 S=$3 D=$4 $cg: $(timeout 90 $G run benchmarks/attention_causal_padding.graph --bind B=$1 --bind H=$2 --bind S=$3 --bind D=$4 --backend cuda --codegen $cg --check 2>&1 | grep -iE 'rel_l2|error' | head -3 | tr '\n' ' ')" | tee -a "$R"
  done
done
echo "==== 3. bench" | tee -a "$R"
for g in attention_causal attention_causal_padding; do
  echo "-- $g: $(timeout 90 $G bench benchmarks/$g.graph --bind B=8 --bind H=16 --bind S=1024 --bind D=64 --runs 30 --warmup 5 2>&1 | grep -E '^  median|fusion' | head -3 | tr '\n' ' ')" | tee -a "$R"
done
echo "==== 4. models" | tee -a "$R"
python3 benchmarks/models/run.py --device cuda --graphc "$B/graphc" --out "$OUT/results.json" \
  --budget-s "${BUDGET_S:-260}" --models "${MODELS:-gpt2_6l,llama_4l}" --dtypes f16 --batches "${BATCHES:-8}" \
  --peers reduce-overhead 2>&1 | grep -v -i warn | tail -20 | tee -a "$R"
python3 benchmarks/models/table.py "$OUT/results.json" | tee "$OUT/models_table.md" | tee -a "$R"
