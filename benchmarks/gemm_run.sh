#!/usr/bin/env bash
# gemm_run.sh - graphc's generated matmul kernels against cuBLASLt, on the GPU.
#
#   benchmarks/gemm_run.sh [GRAPHC] [OUTDIR]
#
# For each problem (dtype, batch, M, N, K, epilogue) it writes a one-op .graph,
# times it with `graphc bench` (median of 50 CUDA-graph replays, each run alone,
# NVRTC and LLVM paths) and times the same problem with cuBLASLt
# (benchmarks/gemm_peer.c, built here with gcc; median of 50, operands random like
# graphc bench's). The three run in turn GEMM_ROUNDS times (default 3) and each
# column shows the median of its rounds, so that one clock or power state of the
# GPU does not decide a ratio. A large matmul on the H200 is power-limited and its
# clocks settle over tens of ms, so both sides first run untimed for about
# GEMM_WARM_MS (default 200) ms of work, 10 to 2000 runs. Prints one table;
# "vs cuBLASLt" is cuBLASLt's time / graphc's time (1.0 = as fast, higher is better).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
G=${1:-$ROOT/build/graphc}
OUT=${2:-/tmp/gemm-bench}
mkdir -p "$OUT"
CUDA=${CUDA_HOME:-/usr/local/cuda}
gcc -O2 -I"$CUDA/include" "$ROOT/benchmarks/gemm_peer.c" -L"$CUDA/lib64" -L"$CUDA/lib64/stubs" -lcuda -ldl -lm \
  -o "$OUT/gemm_peer" || { echo "gemm_run: cannot build gemm_peer"; exit 1; }
export LD_LIBRARY_PATH="$CUDA/lib64:${LD_LIBRARY_PATH:-}"

# dtype batch M N K epilogue (GEMM_CASES overrides, same format)
CASES=${GEMM_CASES:-"f16 1 4096 4096 4096 -
bf16 1 4096 4096 4096 -
f16 1 8192 8192 8192 -
bf16 1 8192 8192 8192 -
f16 1 4096 4096 1000 -
bf16 1 127 4096 4096 -
f16 16 1024 1024 64 -
f16 1 4096 4096 4096 bias_gelu
bf16 1 4096 4096 4096 bias_gelu
tf32 1 4096 4096 4096 -
tf32 1 8192 8192 8192 -"}

graph_for() {  # dtype batch M N K epi -> file (tf32: f32 data, compiled with --tf32)
  local t=$1 bt=$2 M=$3 N=$4 K=$5 epi=$6 f=$OUT/mm_$1_$2_$3_$4_$5_$6.graph
  [ "$t" = tf32 ] && t=f32
  local pre="" 
  [ "$bt" -gt 1 ] && pre="$bt, "
  {
    echo "version 1;"
    if [ "$epi" = bias_gelu ]; then
      echo "graph @g(%a: $t[$pre$M, $K], %b: $t[$pre$K, $N], %c: $t[$N]) -> ($t[$pre$M, $N]) {"
      echo "  %y = matmul(%a, %b);"
      echo "  %z = add(%y, %c);"
      echo "  %r = gelu(%z, approximate=\"tanh\");"
      echo "  return %r;"
    else
      echo "graph @g(%a: $t[$pre$M, $K], %b: $t[$pre$K, $N]) -> ($t[$pre$M, $N]) {"
      echo "  %y = matmul(%a, %b);"
      echo "  return %y;"
    fi
    echo "}"
  } > "$f"
  echo "$f"
}

printf "%-5s %-22s %-9s | %9s %7s | %9s %7s | %9s %7s | %6s %6s\n" dtype "batch x M x N x K" epilogue \
  "nvrtc ms" TFLOP/s "llvm ms" TFLOP/s "cuBLASLt" TFLOP/s "nvrtc" "llvm"
printf "%s\n" "------------------------------------------------------------------------------------------------------------------"
echo "$CASES" | while read -r t bt M N K epi; do
  f=$(graph_for "$t" "$bt" "$M" "$N" "$K" "$epi")
  flop=$(python3 -c "print(2*$bt*$M*$N*$K)")
  # warm-up runs: about GEMM_WARM_MS of work at 700 TFLOP/s, 10 to 2000 of them
  warm=$(python3 -c "print(min(2000, max(10, int(${GEMM_WARM_MS:-200} * 1e-3 * 700e12 / $flop))))")
  nv="" ll="" pe=""
  for r in $(seq "${GEMM_ROUNDS:-3}"); do
    for cg in nvrtc llvm; do
      ms=$(timeout 300 "$G" bench "$f" --codegen $cg --runs 50 --warmup "$warm" $([ "$t" = tf32 ] && echo --tf32) \
             2>"$OUT/err.txt" | awk '/^  median/ {print $2; exit}')
      [ -n "$ms" ] || { ms=nan; sed -n 1,5p "$OUT/err.txt" >&2; }
      if [ $cg = nvrtc ]; then nv="$nv,$ms"; else ll="$ll,$ms"; fi
    done
    ms=$("$OUT/gemm_peer" "$t" "$bt" "$M" "$N" "$K" warmup="$warm" $([ "$epi" = bias_gelu ] && echo bias_gelu) | awk '{print $(NF-2)}')
    pe="$pe,${ms:-nan}"
  done
  res="${nv#,} ${ll#,}"
  peer=${pe#,}
  python3 - "$t" "$bt" "$M" "$N" "$K" "$epi" "$flop" $res "$peer" <<'EOF'
import sys, math
t, bt, M, N, K, epi, flop, nv, ll, pe = sys.argv[1:]
flop = float(flop)
def f(xs):  # the median of the rounds' comma-separated times; nan when any failed
    try: v = sorted(float(x) for x in xs.split(","))
    except ValueError: return float("nan")
    n = len(v)
    if any(x != x for x in v): return float("nan")
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])
nv, ll, pe = f(nv), f(ll), f(pe)
tf = lambda ms: flop / (ms * 1e-3) / 1e12 if ms == ms and ms > 0 else float("nan")
print("%-5s %-22s %-9s | %9.4f %7.1f | %9.4f %7.1f | %9.4f %7.1f | %6.2f %6.2f" % (
    t, "%sx%sx%sx%s" % (bt, M, N, K), epi, nv, tf(nv), ll, tf(ll), pe, tf(pe), pe / nv, pe / ll))
print("      rounds (ms, in run order): nvrtc %s  llvm %s  cuBLASLt %s" % tuple(sys.argv[8:11]))
EOF
done
