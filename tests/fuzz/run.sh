#!/usr/bin/env bash
# run.sh - run one fuzz target for a while and report executions and findings.
#
#   tests/fuzz/run.sh TARGET SECONDS      TARGET: parse | safetensors | load |
#                                         bundle | cache | onnx (or fuzz_parse, ...)
#
# First replays every input in tests/fuzz/regressions/<target>/ (each must
# pass), then fuzzes for SECONDS over the corpus (build-fuzz/fuzz/corpus/
# <target>/, grown in place) plus the regressions. Crashing inputs land in
# build-fuzz/fuzz/findings/<target>/. Builds the targets first when missing
# (or when GRAPHC_FUZZ_REBUILD=1). Prints one summary line:
#   fuzz_parse: 123456 executions in 60 s, 0 findings, corpus 812 files
# and exits 1 when there were findings. Extra arguments after SECONDS go to
# libFuzzer (e.g. -seed=1).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=${GRAPHC_FUZZ_DIR:-$ROOT/build-fuzz/fuzz}
if [ $# -lt 2 ]; then
  echo "usage: tests/fuzz/run.sh parse|safetensors|load|bundle|cache|onnx SECONDS [libFuzzer args]" >&2
  exit 2
fi
T=${1#fuzz_}
T=fuzz_$T
SECS=$2
shift 2
case $T in
  fuzz_parse | fuzz_load) EXTRA=(-dict="$OUT/graph.dict" -max_len=8192) ;;
  fuzz_safetensors) EXTRA=(-max_len=4096) ;;
  fuzz_bundle | fuzz_cache) EXTRA=(-max_len=32768) ;;
  fuzz_onnx) EXTRA=(-max_len=16384) ;;
  *) echo "unknown target $T (parse, safetensors, load, bundle, cache, onnx)" >&2; exit 2 ;;
esac
if [ ! -x "$OUT/$T" ] || [ "${GRAPHC_FUZZ_REBUILD:-0}" = 1 ]; then
  tests/fuzz/build.sh "$OUT" >/dev/null
fi

REG=$ROOT/tests/fuzz/regressions/$T
CORPUS=$OUT/corpus/$T
FIND=$OUT/findings/$T
LOG=$OUT/$T.log
mkdir -p "$CORPUS" "$FIND" "$REG"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

findings=0
# 1. Replay the regressions: each input runs once and must not crash.
regs=("$REG"/*)
if [ -e "${regs[0]}" ]; then
  if ! "$OUT/$T" -runs=1 "${EXTRA[@]}" "${regs[@]}" >"$OUT/$T.regressions.log" 2>&1; then
    echo "$T: a regression input fails; see $OUT/$T.regressions.log" >&2
    tail -40 "$OUT/$T.regressions.log" >&2
    findings=$((findings + 1))
  fi
fi

# 2. Fuzz for SECS seconds over corpus + regressions (new inputs go to the corpus).
before=$(find "$FIND" -type f | wc -l)
set +e
"$OUT/$T" -max_total_time="$SECS" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$FIND/" "${EXTRA[@]}" "$@" "$CORPUS" "$REG" >"$LOG" 2>&1
rc=$?
set -e
after=$(find "$FIND" -type f | wc -l)
new=$((after - before))
if [ $rc -ne 0 ] && [ $new -eq 0 ]; then new=1; fi   # crashed without an artifact
findings=$((findings + new))
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$LOG" | tail -1)
[ -n "$execs" ] || execs=$(sed -n 's/^#\([0-9]*\).*/\1/p' "$LOG" | tail -1)
echo "$T: ${execs:-0} executions in $SECS s, $findings findings, corpus $(ls "$CORPUS" | wc -l) files"
if [ $findings -ne 0 ]; then
  [ $rc -ne 0 ] && grep -m1 -A30 -E "ERROR: |runtime error|fuzz_[a-z]*: " "$LOG" >&2 || true
  echo "$T: findings in $FIND, log $LOG" >&2
  exit 1
fi
