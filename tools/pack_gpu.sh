#!/usr/bin/env bash
# pack_gpu.sh - build a Release tree and gather what a GPU machine needs to run
# the test suites and benchmarks into .dev/gpu (ignored by git): the stripped
# library, the tool, the test programs, and the two shared libraries that a
# machine with only the CUDA toolkit may lack (cJSON, subunit).
# On the GPU machine:  GRAPHC_TEST_SOURCE_DIR=$PWD GRAPHC_TEST_BINARY_DIR=$PWD/.dev/gpu \
#                      LD_LIBRARY_PATH=$PWD/.dev/gpu:/usr/local/cuda/lib64 .dev/gpu/tests/test_backend_ops
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build-gpu -j"$(nproc)" >/dev/null
rm -rf .dev/gpu && mkdir -p .dev/gpu/tests
cp -L build-gpu/libgraphc.so.0 .dev/gpu/
strip --strip-unneeded .dev/gpu/libgraphc.so.0
cp build-gpu/graphc build-gpu/host_mlp .dev/gpu/
cp build-gpu/tests/test_* .dev/gpu/tests/
strip .dev/gpu/graphc .dev/gpu/host_mlp .dev/gpu/tests/*
for l in libcjson.so.1 libsubunit.so.0; do cp -L "/lib/x86_64-linux-gnu/$l" .dev/gpu/; done
du -sh .dev/gpu
