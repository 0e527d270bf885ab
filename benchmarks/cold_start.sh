#!/usr/bin/env bash
# cold_start.sh - a new process's cold compile on a GPU machine, both ways a user meets it:
#   aot  `graphc compile -o x.gcx --stats` (LLVM path, empty JIT cache): no GPU is needed, but
#        nvJitLink calls cuInit itself (for NVIDIA's disk cache), so an idle GPU costs here too;
#   jit  `graphc run --backend cuda --stats`: the whole process, wall time, and its stages;
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
aot() {  # file weights
  for i in $(seq "$RUNS"); do
    echo "  aot $(basename "$1"): $(GRAPHC_CACHE=off "$B/graphc" compile "$1" --bind B=64 --weights "$2" \
      -o "$T/x.gcx" --stats 2>&1 | grep -E 'llvm nvptx|nvjitlink|aot: total' | sed 's/ (2 kernels.*//; s/ (parse.*//; s/ ([0-9]* kernels.*//' | tr '\n' ' ')"
  done
}
jit() {
  for i in $(seq "$RUNS"); do
    local s e
    s=$(date +%s%N)
    GRAPHC_CACHE=off "$B/graphc" run "$1" --bind B=64 --weights "$2" --backend cuda --stats > "$T/run.txt" 2>&1
    e=$(date +%s%N)
    echo "  jit $(basename "$1"): process $(( (e - s) / 1000000 )) ms; $(grep -E 'llvm nvptx|nvjitlink|cuda: context' "$T/run.txt" | sed 's/ (2 kernels.*//; s/ ([0-9]* kernels.*//' | tr '\n' ' ')"
  done
}
all() {
  for i in $(seq "$RUNS"); do echo "  $("$T/driver_init")"; done
  aot examples/mlp.graph "$T/mlp.st"
  aot benchmarks/resmlp21.graph "$T/r.st"
  jit examples/mlp.graph "$T/mlp.st"
  jit benchmarks/resmlp21.graph "$T/r.st"
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
