#!/usr/bin/env bash
# dev.sh - set up, build, and run graphc on a fresh Debian 12 machine with the
# CUDA 13 toolkit in /usr/local/cuda.
#
#   tools/dev.sh example   install what is missing, build, run examples/mlp.graph
#                          (on the GPU when one is present, else on the CPU)
#   tools/dev.sh test      install what is missing, build, run the whole test suite
#   tools/dev.sh asan      the test suite again, built with ASan + UBSan
#   tools/dev.sh build     install what is missing and build (build/)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
JOBS=$(nproc 2>/dev/null || echo 2)

PACKAGES="build-essential cmake ninja-build pkg-config llvm-19-dev libzstd-dev zlib1g-dev
          check libsubunit-dev libcjson-dev"

# Install the Debian packages that are missing (apt-get update only if needed).
install_deps() {
  local missing=""
  for p in $PACKAGES; do
    dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
  done
  if [ -n "$missing" ]; then
    echo "== installing:$missing"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends $missing
  fi
  if [ ! -x /usr/local/cuda/bin/ptxas ] && ! command -v ptxas >/dev/null; then
    echo "error: the CUDA 13 toolkit is needed in /usr/local/cuda (NVRTC, nvJitLink, ptxas)" >&2
    exit 1
  fi
}

# Configure and build into $1 with extra cmake arguments.
build() {
  local dir=$1; shift
  cmake -S "$ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCUDAToolkit_ROOT=/usr/local/cuda "$@" >/dev/null
  ninja -C "$dir" -j"$JOBS"
}

case "${1:-}" in
  example)
    install_deps
    build build
    for g in mlp cnn transformer_block; do
      [ -f "examples/$g.safetensors" ] ||
        build/graphc weights "examples/$g.graph" --random --seed 1 -o "examples/$g.safetensors"
    done
    echo "== graphc run examples/mlp.graph --bind B=4"
    build/graphc run examples/mlp.graph --bind B=4 --stats
    ;;
  test)
    install_deps
    build build
    ctest --test-dir build --output-on-failure -j"$JOBS"
    ;;
  asan)
    install_deps
    build build-asan -DGRAPHC_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
    LSAN_OPTIONS=suppressions=$ROOT/tests/lsan.supp:print_suppressions=0 \
      ctest --test-dir build-asan --output-on-failure -j"$JOBS"
    ;;
  build)
    install_deps
    build build
    ;;
  *)
    echo "usage: tools/dev.sh example|test|asan|build" >&2
    exit 1
    ;;
esac
