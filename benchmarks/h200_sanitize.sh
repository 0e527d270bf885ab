#!/usr/bin/env bash
# h200_sanitize.sh - the reliability issue's device half. PHASES (default all, in this order):
#   jit       PTX -> loaded module three ways (nvJitLink, the driver's linker, driver JIT) on the
#             LLVM path's PTX of three models (benchmarks/ptx_jit_bench.c), nothing else running;
#   jitx      nvJitLink inside graphc against the same call alone: graphc compile with 1 and
#             with the default LLVM threads, the bench with libgraphc preloaded and without
#             the driver initialized;
#   faults    test_cuda_faults built with ASan + UBSan (.dev/asan.tar.xz from
#             tools/pack_gpu.sh asan) over the real driver, beside the random graphs;
#   random    the random-graph differential test on the cuda backend: RANDOM_WORKERS processes
#             run batches of RANDOM_BATCH (25) graphs (fresh seeds) until RANDOM_GRAPHS (10000) are
#             compared or RANDOM_SECONDS (420) have passed;
#   racecheck racecheck on the ops whose kernels use shared memory (matmul, conv2d, im2col,
#             the row and reduction kernels, the chains) in RACE_SHARDS (12) processes, and on
#             test_examples_gpu.
#   memcheck  the GPU test suites under compute-sanitizer memcheck with device leak checking
#             (test_backend_ops in SHARDS processes, the other GPU suites one process each;
#             Check's forked tests are followed with --target-processes all); test_cuda_faults
#             is left to the faults phase (its shim stands between the sanitizer and graphc);
# API errors are not reported as sanitizer errors (--report-api-errors no): the suites provoke
# driver errors on purpose (device out of memory, a cubin for another architecture).
# Phases run in the order above, except faults, which runs in the background from the start.
# Here: tools/pack_gpu.sh [asan]. There: PHASES="..." benchmarks/h200_sanitize.sh (carry
# .dev/build-gpu, and .dev/asan.tar.xz for the faults phase). Every result is appended to $OUT
# as soon as it exists (a run cut short by the device's time limit keeps what finished):
# sanitize.txt (one line per run: tool, suite, exit status, summary), random.txt (one line per
# batch of graphs), jit.txt; the logs of failing runs go into sanitize-logs.tgz at the end (the
# device returns at most 8 files). CS_BIN overrides the sanitizer (a dry run without a GPU).
set -u
. "$(dirname "$0")/device_env.sh"
PHASES=${PHASES:-faults jit jitx random racecheck memcheck}
CS="${CS_BIN:-/usr/local/cuda/bin/compute-sanitizer} --target-processes all --error-exitcode 9 --report-api-errors no"
SHARDS=${SHARDS:-12}
L=$(mktemp -d)
t0=$(date +%s)
has() { case " $PHASES " in *" $1 "*) return 0 ;; esac; return 1; }
note() { echo "$*" | tee -a "$OUT/sanitize.txt"; }
cs_run() {  # tool label command... : one sanitized run, its summary line in sanitize.txt
  local tool=$1 label=$2; shift 2
  local extra=""
  [ "$tool" = memcheck ] && extra="--leak-check full"
  local s=$(date +%s)
  ( cd "$B" && timeout "${CS_TIMEOUT:-540}" $CS --tool "$tool" $extra "$@" > "$L/$tool-$label.log" 2>&1 )
  local rc=$?
  echo "$tool $label exit $rc in $(( $(date +%s) - s )) s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|LEAK SUMMARY' "$L/$tool-$label.log" | sort | uniq -c | tr -s ' ' | head -4 | tr '\n' ';') $(grep -E '^[0-9]+%: Checks' "$L/$tool-$label.log" | tail -1)" \
    >> "$OUT/sanitize.txt"
  [ $rc = 0 ] && rm -f "$L/$tool-$label.log"
}

faults_pid=""
if has faults; then
  if [ -f .dev/asan.tar.xz ]; then
    tar -C "$ROOT" -xJf .dev/asan.tar.xz   # build-gpu-asan/ (its RUNPATH: /work/main/build-gpu-asan)
    printf 'leak:libcuda.so\nleak:libnvidia-\n' > "$L/lsan.supp"
    ( s=$(date +%s)
      ASAN_OPTIONS=protect_shadow_gap=0:detect_leaks=1:abort_on_error=0 \
        LSAN_OPTIONS="suppressions=$L/lsan.supp" CK_DEFAULT_TIMEOUT=1200 \
        timeout "${FAULTS_TIMEOUT:-500}" "$ROOT/build-gpu-asan/tests/test_cuda_faults" > "$L/asan-faults.log" 2>&1
      rc=$?
      note "asan test_cuda_faults exit $rc in $(( $(date +%s) - s )) s: $(grep -cE 'ERROR: (Address|Leak)Sanitizer|runtime error' "$L/asan-faults.log") sanitizer reports; $(grep -E '^[0-9]+%: Checks' "$L/asan-faults.log" | tail -1)"
      grep -E "calls:" "$L/asan-faults.log" | head -40 >> "$OUT/sanitize.txt"
      if [ $rc = 0 ]; then rm -f "$L/asan-faults.log"; else head -c 30000 "$L/asan-faults.log" > "$OUT/faults-fail.txt"; fi ) &
    faults_pid=$!
  else
    note "faults: .dev/asan.tar.xz not carried (tools/pack_gpu.sh asan)"
  fi
fi

if has jit; then
  gcc -O2 -I/usr/local/cuda/include benchmarks/ptx_jit_bench.c -L/usr/local/cuda/lib64 -lcuda -lnvJitLink \
    -o "$L/ptx_jit_bench" || note "jit: cannot build ptx_jit_bench"
  "$B/graphc" compile examples/mlp.graph --bind B=64 --emit ptx -o "$L/mlp.ptx"
  "$B/graphc" compile benchmarks/resmlp21.graph --bind B=64 --emit ptx -o "$L/resmlp21.ptx"
  "$B/graphc" compile examples/transformer_block.graph --bind B=2 --bind S=64 --emit ptx -o "$L/transformer.ptx"
  for m in mlp resmlp21 transformer; do
    for mode in nvjitlink nvjitlink1 culink culink1 modload; do
      for rep in 1 2 3; do CUDA_CACHE_DISABLE=1 "$L/ptx_jit_bench" $mode "$L/$m.ptx" 4; done
    done
  done >> "$OUT/jit.txt" 2>&1
  RUNS=5 bash benchmarks/compile_times.sh "$B" >> "$OUT/jit.txt" 2>&1
fi

if has jitx; then
  ccd=${CUDA_CACHE_DISABLE-unset}
  export CUDA_CACHE_DISABLE=1   # ptxas inside nvJitLink would answer repeated PTX from ~/.nv
  [ -x "$L/ptx_jit_bench" ] || gcc -O2 -I/usr/local/cuda/include benchmarks/ptx_jit_bench.c \
    -L/usr/local/cuda/lib64 -lcuda -lnvJitLink -o "$L/ptx_jit_bench"
  "$B/graphc" compile examples/mlp.graph --bind B=64 --emit ptx -o "$L/mlp.ptx"
  "$B/graphc" weights examples/mlp.graph --bind B=64 --random --seed 1 -o "$L/mlp.safetensors" > /dev/null
  {
    for th in 1 0; do for rep in 1 2 3 4 5; do
      rm -rf "$L/cache"
      echo "graphc compile mlp, GRAPHC_COMPILE_THREADS=$th: $(GRAPHC_COMPILE_THREADS=$th GRAPHC_CACHE=on \
        GRAPHC_CACHE_DIR=$L/cache "$B/graphc" compile examples/mlp.graph --bind B=64 --weights "$L/mlp.safetensors" \
        -o "$L/x.gcx" --stats 2>&1 | grep -E 'nvjitlink|aot: total' | tr '\n' ' ')"
    done; done
    for rep in 1 2 3; do "$L/ptx_jit_bench" nvjitlink "$L/mlp.ptx" 4; done
    for rep in 1 2 3; do LD_PRELOAD="$B/libgraphc.so.0" "$L/ptx_jit_bench" nvjitlink "$L/mlp.ptx" 4; done
    echo "without the driver initialized (as graphc compile -o x.gcx):"
    for rep in 1 2 3; do PTX_JIT_BENCH_NO_CUDA=1 "$L/ptx_jit_bench" nvjitlink "$L/mlp.ptx" 4; done
    if command -v perf > /dev/null; then
      rm -rf "$L/cache"
      GRAPHC_CACHE_DIR=$L/cache perf stat -e task-clock,context-switches,cpu-migrations,page-faults "$B/graphc" \
        compile examples/mlp.graph --bind B=64 --weights "$L/mlp.safetensors" -o "$L/x.gcx" 2>&1 | tail -12
      perf stat -e task-clock,context-switches,cpu-migrations,page-faults "$L/ptx_jit_bench" nvjitlink "$L/mlp.ptx" 1 2>&1 | tail -12
    else
      echo "no perf on this machine"
    fi
  } >> "$OUT/jit.txt" 2>&1
  if [ "$ccd" = unset ]; then unset CUDA_CACHE_DISABLE; else export CUDA_CACHE_DISABLE=$ccd; fi
fi

if has random; then
  W=${RANDOM_WORKERS:-16}
  per=$(( (${RANDOM_GRAPHS:-10000} + W - 1) / W ))
  end=$(( $(date +%s) + ${RANDOM_SECONDS:-420} ))
  s=$(date +%s)
  pids=""
  for w in $(seq 1 "$W"); do
    ( i=0 done_n=0
      while [ "$(date +%s)" -lt "$end" ] && [ $done_n -lt $per ]; do
        n=$(( per - done_n < ${RANDOM_BATCH:-25} ? per - done_n : ${RANDOM_BATCH:-25} ))
        log=$L/rg-$w-$i.log
        ( cd "$B" && GRAPHC_TEST_SEED=$(( (t0 << 8) + w * 100000 + i )) GRAPHC_RANDOM_GRAPHS=$n \
          GRAPHC_RANDOM_GRAPHS_CONFIGS=cuda GRAPHC_COMPILE_THREADS=1 timeout 240 ./tests/test_random_graphs \
          > "$log" 2>&1 ) || { echo "== worker $w batch $i failed" >> "$OUT/random-fail.txt"
                                head -c 20000 "$log" >> "$OUT/random-fail.txt"; }
        echo "$(grep -h '^random graphs: cuda' "$log") (worker $w batch $i, $(grep -h 'seed [0-9]* (GRAPHC_TEST_SEED)' "$log" | sed 's/.*seed \([0-9]*\).*/seed \1/'), nvrtc= $(sed -n 's/^random graphs: NVRTC path: \([0-9]*\).*/\1/p' "$log"))" \
          >> "$OUT/random.txt"
        done_n=$(( done_n + $(sed -n 's/^random graphs: cuda *compared \([0-9]*\).*/\1/p' "$log" | head -1) + 0 ))
        rm -f "$log"
        i=$((i + 1))
      done ) &
    pids="$pids $!"
  done
  wait $pids
  awk '/^random graphs: cuda/ {c += $5; s += $7; m += $9; for (i = 1; i < NF; i++) if ($i == "nvrtc=") n += $(i + 1)}
       END {printf "random graphs on cuda: compared %d (%d on the NVRTC path), skipped %d, mismatches %d", c, n, s, m}' \
    "$OUT/random.txt" | tee -a "$OUT/sanitize.txt"
  note " ($W workers, $(( $(date +%s) - s )) s, seeds from $(( t0 << 8 )))"
fi

if has racecheck; then
  s=$(date +%s)
  export GRAPHC_TEST_OPS=${RACE_OPS:-matmul,conv2d,im2col,softmax,layernorm,rmsnorm,reduce_sum,reduce_max,reduce_mean,chains}
  RS=${RACE_SHARDS:-12}
  for k in $(seq 0 $((RS - 1))); do
    ( export GRAPHC_TEST_SHARD=$k/$RS; cs_run racecheck "backend_ops-$k" ./tests/test_backend_ops ) &
  done
  cs_run racecheck test_examples_gpu ./tests/test_examples_gpu &
  wait $(jobs -p | grep -vx "${faults_pid:-x}")
  unset GRAPHC_TEST_OPS
  note "racecheck done in $(( $(date +%s) - s )) s"
fi

if has memcheck; then
  s=$(date +%s)
  for k in $(seq 0 $((SHARDS - 1))); do
    ( export GRAPHC_TEST_SHARD=$k/$SHARDS; cs_run memcheck "backend_ops-$k" ./tests/test_backend_ops ) &
  done
  # (test_aot_host runs host code only: the sanitizer refuses a program that makes no CUDA call)
  for t in test_cuda_runtime test_examples_gpu test_fusion test_kir_device test_bundle test_cache test_install; do
    cs_run memcheck "$t" "./tests/$t" &
  done
  wait $(jobs -p | grep -vx "${faults_pid:-x}")
  note "memcheck done in $(( $(date +%s) - s )) s"
fi
[ -n "$faults_pid" ] && wait "$faults_pid"
note "all done in $(( $(date +%s) - t0 )) s"
tar -C "$L" -czf "$OUT/sanitize-logs.tgz" --exclude ptx_jit_bench --exclude x.cubin --exclude x.gcx \
  --exclude cache --exclude '*.ptx' --exclude '*.safetensors' . && rm -rf "$L"
cat "$OUT/sanitize.txt"
