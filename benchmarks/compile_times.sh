#!/usr/bin/env bash
# compile_times.sh [BUILD_DIR] - where cold compile time goes, per phase, without a GPU.
#
# For each model (the three examples and benchmarks/resmlp21.graph, 21 ops) and
# each CUDA codegen path: `graphc compile -o x.gcx --stats` with an empty JIT
# cache (cold: parse, passes, lowering, LLVM emit / libdevice / O3 / NVPTX, or
# NVRTC, then nvJitLink), then the same again (cache hit). Best of $RUNS (3) by
# the total; the phase lines of that run are printed. GRAPHC_COMPILE_THREADS
# caps the LLVM threads (default: online CPUs, at most 8).
set -u
# nvJitLink's ptxas keeps its own disk cache (the driver's ~/.nv/ComputeCache) once that
# folder exists (the driver makes it on a GPU machine): with it a "cold" compile of the same
# PTX takes ~0.3 ms. Cold here means cold.
export CUDA_CACHE_DISABLE=1
# The JIT cache is this script's to manage (an empty GRAPHC_CACHE_DIR per cold run): the
# device scripts export GRAPHC_CACHE=off, which left the "hit" lines empty.
unset GRAPHC_CACHE
B=${1:-build}
G=$B/graphc
RUNS=${RUNS:-3}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
echo "# $(date -u +%Y-%m-%d) $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $($G --version 2>/dev/null | head -1)"
model() {  # name file binds...
  local name=$1 f=$2; shift 2
  "$G" weights "$f" "$@" --random --seed 1 -o "$T/$name.safetensors" >/dev/null || return 1
  for cg in llvm nvrtc; do
    local best="" best_ms=1e9
    for i in $(seq "$RUNS"); do
      rm -rf "$T/cache"
      GRAPHC_CACHE_DIR=$T/cache "$G" compile "$f" "$@" --weights "$T/$name.safetensors" \
        --codegen $cg -o "$T/x.gcx" --stats > "$T/out" 2>&1 || { cat "$T/out"; return 1; }
      local ms
      ms=$(sed -n 's/^aot: total \([0-9.]*\) ms.*/\1/p' "$T/out")
      if awk "BEGIN{exit !($ms < $best_ms)}"; then best_ms=$ms; best=$(cat "$T/out"); fi
    done
    GRAPHC_CACHE_DIR=$T/cache "$G" compile "$f" "$@" --weights "$T/$name.safetensors" \
      --codegen $cg -o "$T/x.gcx" --stats > "$T/hit" 2>&1
    echo "== $name $* --codegen $cg: cold (best of $RUNS)"
    echo "$best" | grep -E "^(aot: parse|aot: sm_.*: lower|cuda: |aot: total)" | grep -v "JIT cache"
    echo "   hit: $(grep -E 'from the JIT cache' "$T/hit" | sed 's/ (.*//')"
  done
}
model mlp examples/mlp.graph --bind B=64
model cnn examples/cnn.graph --bind N=8
model transformer_block examples/transformer_block.graph --bind B=2 --bind S=64
model resmlp21 benchmarks/resmlp21.graph --bind B=64
