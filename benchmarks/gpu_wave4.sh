#!/usr/bin/env bash
# gpu_wave4.sh - one device call after the 8-bit matmuls (#34; carry .dev/build-gpu):
#   1. the GPU tests the changes touch: test_backend_ops' matmul cases (fp8, int8, gemv),
#      ctest test_cuda_runtime / test_precision (fp8 calibration) / test_lower_matmul / test_empty
#      (empty tensors on cuda) / test_api;
#   2. --precision fp8 transformer blocks --check against the interpreter (both code paths);
#   3. fp8 + int8 GEMMs against cuBLASLt (benchmarks/fp8_run.sh);
#   4. transformer_block_f16 with and without --precision fp8 (per-row and calibrated scales; graphc bench);
#   5. benchmarks/ranged_bench.c: one ranged executable against exact ones at six shapes (#35);
#   6. benchmarks/llm_bench.py: graphc generate against transformers (static cache, reduce-overhead),
#      Llama-3.2-1B's shape in bf16 (#38; env LLM_BATCH, LLM_NEW, LLM_S seconds).
# Writes $OUT/wave4.txt. Env: SHAPES (fp8_run.sh), SKIP (phase numbers to skip, "3 4").
set -u
. "$(dirname "$0")/device_env.sh"
R=$OUT/wave4.txt
G=$B/graphc
skip() { case " ${SKIP:-} " in *" $1 "*) return 0;; esac; return 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$R"
if ! skip 1; then
  echo "==== 1. tests" | tee -a "$R"
  (GRAPHC_TEST_OPS=${TEST_OPS:-matmul} timeout 200 $B/tests/test_backend_ops 2>&1 | grep -E 'FAIL|differ|====' | head -40) | tee -a "$R"
  (GRAPHC_TEST_ONLY=8bit timeout 200 $B/tests/test_lower_matmul 2>&1 | tail -4) | tee -a "$R"
  (cd "$B" && timeout "${CTEST_S:-200}" ctest -R "${CTEST_R:-test_cuda_runtime|test_precision|test_lower_matmul|test_empty|test_api|test_ranged|test_f8}" 2>&1 | tail -10) | tee -a "$R"
fi
if ! skip 2; then
  echo "==== 2. --precision fp8 --check" | tee -a "$R"
  for m in transformer_block transformer_block_f16; do
    [ -f /tmp/$m.w ] || $G weights examples/$m.graph --random --seed 1 -o /tmp/$m.w >/dev/null
    for cg in nvrtc llvm; do
      echo "-- $m $cg: $(timeout 90 $G run examples/$m.graph --weights /tmp/$m.w --bind B=2 --bind S=200 --backend cuda --codegen $cg --precision fp8 --check 2>&1 | grep -iE 'rel_l2|error|tolerance|fail' | head -4 | tr '\n' ' ')" | tee -a "$R"
    done
  done
fi
if ! skip 3; then
  echo "==== 3. fp8 / int8 GEMMs" | tee -a "$R"
  SHAPES=${SHAPES:-"4096:4096:4096 8192:8192:8192"} timeout 300 bash benchmarks/fp8_run.sh 2>&1 | tail -8 | tee -a "$R"
fi
if ! skip 4; then
  echo "==== 4. transformer_block_f16 bf16/f16 vs --precision fp8" | tee -a "$R"
  python3 -c "
import numpy as np; from safetensors.numpy import save_file
save_file({'x': np.random.default_rng(0).standard_normal((1, 512, 1024)).astype('float16')}, '/tmp/cal16.st')"
  for p in "" "--precision fp8" "--precision fp8 --calibrate /tmp/cal16.st"; do
    [ -f /tmp/transformer_block_f16.w ] || $G weights examples/transformer_block_f16.graph --random --seed 1 -o /tmp/transformer_block_f16.w >/dev/null
    timeout 90 $G bench examples/transformer_block_f16.graph --weights /tmp/transformer_block_f16.w --bind B=8 --bind S=1024 --backend cuda $p --runs 50 --warmup 10 > /tmp/b4.txt 2>&1
    echo "-- '$p': $(grep -E 'median|error' /tmp/b4.txt | head -2 | tr '\n' ' ')" | tee -a "$R"
    [ -n "${KERNELS:-}" ] && sed -n '/per kernel/,$p' /tmp/b4.txt | head -24 | tee -a "$R"
  done
fi
if ! skip 5; then
  echo "==== 5. one ranged executable against exact ones (transformer_block_f16, six shapes)" | tee -a "$R"
  [ -f /tmp/transformer_block_f16.w ] || $G weights examples/transformer_block_f16.graph --random --seed 1 -o /tmp/transformer_block_f16.w >/dev/null
  gcc -std=gnu17 -O2 -Iinclude benchmarks/ranged_bench.c -L"$B" -lgraphc -Wl,-rpath,"$B" -Wl,-rpath-link,"$B/syslibs" -lm -o /tmp/ranged_bench &&
    timeout 300 /tmp/ranged_bench examples/transformer_block_f16.graph --weights /tmp/transformer_block_f16.w --backend cuda \
      --runs 30 --shape B=1,S=16 --shape B=1,S=128 --shape B=8,S=128 --shape B=8,S=512 --shape B=32,S=256 \
      --shape B=64,S=512 2>&1 | head -12 | tee -a "$R"
fi
if ! skip 6; then
  echo "==== 6a. sampling on the device: cuda draws what cpu draws (tiny f32 checkpoint, temperature 1.3)" | tee -a "$R"
  rm -rf /tmp/tiny6 && (cd tests/llm && python3 make_tiny_llama.py /tmp/tiny6 --seed 15 --max-pos 64 >/dev/null)
  for be in cuda cpu; do
    timeout 60 $G generate /tmp/tiny6 --prompt-ids 7,100,33,250 --prompt-ids 9,41 --max-new-tokens 16 --ignore-eos \
      --temperature 1.3 --seed 5 --backend $be > /tmp/tiny6_$be.txt 2>&1
  done
  cmp -s /tmp/tiny6_cuda.txt /tmp/tiny6_cpu.txt && echo "cuda = cpu: $(tail -1 /tmp/tiny6_cuda.txt)" | tee -a "$R" ||
    { echo "DIFFER"; cat /tmp/tiny6_cuda.txt /tmp/tiny6_cpu.txt; } | tee -a "$R"
  echo "==== 6. llm_bench 1b bf16 batch ${LLM_BATCH:-1}" | tee -a "$R"
  timeout "${LLM_S:-240}" python3 benchmarks/llm_bench.py --shape 1b --dtype bf16 --batch "${LLM_BATCH:-1}" \
    --new "${LLM_NEW:-64}" --graphc "$G" --work /tmp/graphc-llm 2>&1 | grep -E '^GRAPHC|^graphc decode|peer|^\{|rror' | tail -6 | tee -a "$R"
fi
