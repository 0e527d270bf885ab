#!/usr/bin/env bash
# cold_start.sh - a new process's cold compile on a GPU machine, both ways a user meets it:
#   aot  `graphc compile -o x.gcx --stats` (LLVM path, empty JIT cache): no GPU is needed, but
#        nvJitLink calls cuInit itself (for NVIDIA's disk cache), so an idle GPU costs here too;
#   jit  `graphc run --backend cuda --stats` of each example, both codegen paths, without the JIT
#        cache (cold) and with a filled one (hit): the process's wall time, graphc_compile's time
#        (parse to a loaded module: the "run:" line) and its stages;
# and benchmarks/driver_init.c (cuInit, primary context) alone. Each twice: with the GPU idle
# (no other process holds it), then while another process holds a context on it (as in a
# server with a model loaded, or a test suite running). RUNS (3) of each, every line printed.
# There (GPU machine, carry .dev/build-gpu): benchmarks/cold_start.sh  -> $OUT/cold_start.txt
set -u
. "$(dirname "$0")/device_env.sh"
export CUDA_CACHE_DISABLE=1   # ptxas inside nvJitLink would answer repeated PTX from ~/.nv
RUNS=${RUNS:-3}
T=$(mktemp -d)
gcc -O2 -I/usr/local/cuda/include benchmarks/driver_init.c -L/usr/local/cuda/lib64 -lcuda \
  -o "$T/driver_init" || exit 1
"$B/graphc" weights examples/mlp.graph --bind B=64 --random --seed 1 -o "$T/mlp.st" > /dev/null
"$B/graphc" weights benchmarks/resmlp21.graph --bind B=64 --random --seed 1 -o "$T/r.st" > /dev/null
"$B/graphc" weights examples/cnn.graph --bind N=8 --random --seed 1 -o "$T/cnn.st" > /dev/null
"$B/graphc" weights examples/transformer_block.graph --bind B=2 --bind S=64 --random --seed 1 -o "$T/tb.st" > /dev/null
aot() {  # file weights
  for i in $(seq "$RUNS"); do
    echo "  aot $(basename "$1"): $(GRAPHC_CACHE=off "$B/graphc" compile "$1" --bind B=64 --weights "$2" \
      -o "$T/x.gcx" --stats 2>&1 | grep -E 'llvm nvptx|nvjitlink|ptxas|aot: total' | sed 's/ (2 kernels.*//; s/ (parse.*//; s/ ([0-9]* kernels.*//' | tr '\n' ' ')"
  done
}
jit() {  # file weights codegen cache(off|on) binds...
  local f=$1 w=$2 cg=$3 cache=$4
  shift 4
  for i in $(seq "$RUNS"); do
    local s e
    s=$(date +%s%N)
    GRAPHC_CACHE=$cache GRAPHC_CACHE_DIR="$T/cache" "$B/graphc" run "$f" "$@" --weights "$w" --backend cuda \
      --codegen "$cg" --stats > "$T/run.txt" 2>&1
    e=$(date +%s%N)
    echo "  jit $(basename "$f") $cg cache=$cache: process $(( (e - s) / 1000000 )) ms; $(grep -E '^run: |llvm nvptx|nvjitlink|ptxas|cuda: nvrtc|from the JIT cache|cuda: context' "$T/run.txt" | sed 's/ (2 kernels.*//; s/ ([0-9]* kernels.*//; s/ (read, parse, verify)//; s/ (to a loaded module)//' | tr '\n' ' ')"
  done
}
all() {
  for i in $(seq "$RUNS"); do echo "  $("$T/driver_init")"; done
  aot examples/mlp.graph "$T/mlp.st"
  aot benchmarks/resmlp21.graph "$T/r.st"
  for cg in llvm nvrtc; do
    rm -rf "$T/cache"
    jit examples/mlp.graph "$T/mlp.st" $cg off --bind B=64
    jit benchmarks/resmlp21.graph "$T/r.st" $cg off --bind B=64
    jit examples/cnn.graph "$T/cnn.st" $cg off --bind N=8
    jit examples/transformer_block.graph "$T/tb.st" $cg off --bind B=2 --bind S=64
    RUNS=1 jit examples/mlp.graph "$T/mlp.st" $cg on --bind B=64 > /dev/null   # fill the cache
    RUNS=1 jit benchmarks/resmlp21.graph "$T/r.st" $cg on --bind B=64 > /dev/null
    RUNS=1 jit examples/cnn.graph "$T/cnn.st" $cg on --bind N=8 > /dev/null
    RUNS=1 jit examples/transformer_block.graph "$T/tb.st" $cg on --bind B=2 --bind S=64 > /dev/null
    jit examples/mlp.graph "$T/mlp.st" $cg on --bind B=64
    jit benchmarks/resmlp21.graph "$T/r.st" $cg on --bind B=64
    jit examples/cnn.graph "$T/cnn.st" $cg on --bind N=8
    jit examples/transformer_block.graph "$T/tb.st" $cg on --bind B=2 --bind S=64
  done
}
{
  echo "# $(date -u '+%Y-%m-%d %H:%M') UTC, $(nvidia-smi --query-gpu=name,driver_version,persistence_mode --format=csv,noheader), $(nproc) CPUs"
  echo "== GPU idle"
  all
  "$T/driver_init" > /dev/null   # (warm the page cache of the holder's libraries)
  python3 -c '
import ctypes, time
cu = ctypes.CDLL("libcuda.so.1"); cu.cuInit(0); d = ctypes.c_int(); cu.cuDeviceGet(ctypes.byref(d), 0)
c = ctypes.c_void_p(); cu.cuDevicePrimaryCtxRetain(ctypes.byref(c), d); time.sleep(600)' &
  holder=$!
  sleep 2
  echo "== GPU held by another process"
  all
  kill "$holder"
} 2>&1 | tee -a "$OUT/cold_start.txt"
rm -rf "$T"
