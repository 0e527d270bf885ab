#!/bin/sh
# cpu_ratios.sh - the CPU ratios of docs/performance.md in one command:
#   benchmarks/cpu_ratios.sh [BUILD_DIR] [RUNS]
# Builds libgraphc in BUILD_DIR (default build, Release) when needed, compiles
# benchmarks/cpu_ratios.c against it (OpenBLAS is opened at run time with
# dlopen, only by this program; Debian: apt-get install libopenblas-dev) and
# runs it from the source root. GRAPHC_CPU_THREADS sets the thread count.
# OpenBLAS picks its kernels from the CPU model, which VMs often hide (it then
# falls back to Prescott, SSE3): unless OPENBLAS_CORETYPE is set, it is set
# here to the best kernel family the CPU's flags allow, for a fair baseline.
set -e
cd "$(dirname "$0")/.."
BUILD=${1:-build}
RUNS=${2:-11}
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUDAToolkit_ROOT=/usr/local/cuda
fi
ninja -C "$BUILD" graphc
cc -std=gnu17 -O2 -Wall -Wextra -Iinclude benchmarks/cpu_ratios.c -L"$BUILD" -lgraphc \
  -Wl,-rpath,"$PWD/$BUILD" -ldl -lpthread -lm -o "$BUILD/cpu_ratios"
if [ -z "$OPENBLAS_CORETYPE" ]; then
  if grep -q avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX
  elif grep -q avx2 /proc/cpuinfo; then export OPENBLAS_CORETYPE=Haswell; fi
fi
echo "# $(date -u +%Y-%m-%d) $(uname -m), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs"
"$BUILD/cpu_ratios" "$RUNS"
