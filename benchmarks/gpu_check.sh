#!/usr/bin/env bash
# gpu_check.sh - validate graphc on a GPU machine and benchmark the examples.
#
#   benchmarks/gpu_check.sh [BUILD_DIR]        (default BUILD_DIR: build-cuda)
#
# Run from the repository root with the build directory carried over. Steps:
#   1. nvidia-smi, driver and device facts           -> $OUT/nvidia-smi.txt
#   2. the GPU suites under ctest (test_cuda_runtime, test_backend_ops,
#      test_examples_gpu), verbose                    -> $OUT/ctest-gpu.log
#      (ALL=1 runs the whole ctest instead)
#   3. graphc bench on every examples/*.graph, nvrtc and llvm paths, every
#      symbolic dim bound to $BENCH_DIM (default 256)  -> $OUT/bench.txt
#   4. a short summary, printed last (also $OUT/summary.txt)
# $OUT gets four files (summary.txt, nvidia-smi.txt, ctest-gpu.log, bench.txt),
# within what the device tool brings back.
# Environment: OUT (default ./gpu-check-out), BENCH_DIM, RUNS (default 100),
# GRAPHC_TEST_SEED (reproduce a failing random case), ALL.
# Exit status: 0 when every GPU suite passed and every bench ran, else 1.
set -u
BUILD=${1:-build-cuda}
OUT=${OUT:-$PWD/gpu-check-out}
BENCH_DIM=${BENCH_DIM:-256}
RUNS=${RUNS:-100}
mkdir -p "$OUT"
SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"
note() { echo "$*" | tee -a "$SUMMARY"; }

if [ ! -x "$BUILD/graphc" ]; then
  echo "gpu_check: $BUILD/graphc not found; build first (cmake -S . -B $BUILD -G Ninja && ninja -C $BUILD)" >&2
  exit 1
fi

# The build has absolute paths (test sources, RPATH). When this copy of the
# tree lives elsewhere, point the recorded source path at it.
SRC_RECORDED=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD/CMakeCache.txt" 2>/dev/null)
if [ -n "$SRC_RECORDED" ] && [ ! -e "$SRC_RECORDED/CMakeLists.txt" ]; then
  mkdir -p "$(dirname "$SRC_RECORDED")" 2>/dev/null && ln -s "$PWD" "$SRC_RECORDED" 2>/dev/null &&
    echo "gpu_check: linked $SRC_RECORDED -> $PWD (the build's recorded source path)"
fi

# Libraries the GPU image may lack (libcjson, libsubunit): copy them into
# $BUILD/syslibs here before carrying the build, e.g.
#   mkdir -p build-cuda/syslibs && cp -L /lib/x86_64-linux-gnu/{libcjson.so.1,libsubunit.so.0} build-cuda/syslibs/
BUILD_ABS=$(cd "$BUILD" && pwd)
export LD_LIBRARY_PATH="$BUILD_ABS/syslibs:$BUILD_ABS:${LD_LIBRARY_PATH:-}"
missing=$(ldd "$BUILD/tests/test_cuda_runtime" "$BUILD/graphc" 2>/dev/null | grep "not found" | sort -u)
[ -n "$missing" ] && echo "gpu_check: warning: missing libraries:" && echo "$missing"

# 1. the device
{ nvidia-smi 2>&1 || echo "nvidia-smi failed"; } > "$OUT/nvidia-smi.txt"
DEVICE=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
note "device: ${DEVICE:-unknown (nvidia-smi failed)}"

# 2. the GPU suites
if [ "${ALL:-0}" = 1 ]; then FILTER=""; else FILTER="test_(cuda_runtime|backend_ops|examples_gpu)"; fi
start=$(date +%s)
( cd "$BUILD" && ctest ${FILTER:+-R "$FILTER"} -V --output-on-failure ) > "$OUT/ctest-gpu.log" 2>&1
ctest_rc=$?
note "ctest (${FILTER:-all}): exit $ctest_rc in $(( $(date +%s) - start )) s; log: $OUT/ctest-gpu.log"
grep -E "^ *[0-9]+/[0-9]+ Test +#[0-9]+: " "$OUT/ctest-gpu.log" | sed 's/^ */  /' | tee -a "$SUMMARY"
grep -E "tests passed, " "$OUT/ctest-gpu.log" | sed 's/^/  /' | tee -a "$SUMMARY"
grep -q "\*\*\*Skipped" "$OUT/ctest-gpu.log" &&
  note "  WARNING: suites were SKIPPED (exit 77: no CUDA device seen by the tests?)"
# The op table's totals and its failing rows, if the op suite ran.
grep -E "^==== [0-9]+ pass" "$OUT/ctest-gpu.log" | sed 's/^[0-9]*: //; s/^/  backend ops: /' | tee -a "$SUMMARY"
# Failing rows of the op table, once each (the table is printed twice in the log).
failing=$(grep -E "  FAIL " "$OUT/ctest-gpu.log" | sed 's/^[0-9]*: //' | awk '!seen[$0]++' | head -40)
if [ -n "$failing" ]; then
  note "  failing op rows (first 40; the messages are in $OUT/ctest-gpu.log):"
  echo "$failing" | sed 's/^/    /' | tee -a "$SUMMARY"
fi
grep -E ":[FE]:" "$OUT/ctest-gpu.log" | sed 's/^[0-9]*: //' | awk '!seen[$0]++' | cut -c1-400 | head -20 |
  sed 's/^/  /' | tee -a "$SUMMARY"
grep -E "seed [0-9]+" "$OUT/ctest-gpu.log" | grep -E "^[0-9]*: ?test_" | sed 's/^[0-9]*: /  /' | head -3 | tee -a "$SUMMARY"

# 3. bench every example on both paths
bench_fail=0
BENCH="$OUT/bench.txt"
: > "$BENCH"
shopt -s nullglob
for f in examples/*.graph; do
  name=$(basename "$f" .graph)
  # Symbolic dims of the first graph: "graph @g<B, S>(" -> "--bind B=64 --bind S=64".
  syms=$(grep -m1 -E '^ *graph +@' "$f" | sed -n 's/.*<\([^>]*\)>.*/\1/p' | tr ',' ' ')
  binds=""
  for s in $syms; do binds="$binds --bind $s=$BENCH_DIM"; done
  for cg in nvrtc llvm; do
    log=$(mktemp)
    "$BUILD/graphc" bench "$f" $binds --codegen $cg --runs "$RUNS" --warmup 10 > "$log" 2>&1
    rc=$?
    { echo "==== graphc bench $f$binds --codegen $cg --runs $RUNS (exit $rc)"; cat "$log"; echo; } >> "$BENCH"
    if [ $rc -ne 0 ]; then
      bench_fail=1
      note "bench $name ($cg${binds:+,$binds}): FAILED (exit $rc): $(grep -m1 -iE 'error|fail|unavailable' "$log" || tail -1 "$log")"
    else
      med=$(grep -m1 -E '^  median' "$log" | sed 's/^ *//')
      bw=$(grep -m1 -E '^  modeled' "$log" | sed 's/.*-> //')
      note "bench $name ($cg): $med | $bw"
    fi
    rm -f "$log"
  done
done
copy=$(grep -h -m1 -E '^  copy ' "$BENCH" 2>/dev/null | head -1 | sed 's/^ *//')
[ -n "$copy" ] && note "$copy"

echo
echo "==== gpu_check summary ($OUT) ===="
cat "$SUMMARY"
if [ $ctest_rc -eq 0 ] && [ $bench_fail -eq 0 ]; then
  echo "==== OK ===="
  exit 0
fi
echo "==== FAILURES: ctest exit $ctest_rc, bench failures: $bench_fail ===="
exit 1
