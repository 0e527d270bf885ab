#!/usr/bin/env bash
# pack_gpu.sh - build a Release tree and copy what a GPU machine needs to run
# the test suites and benchmarks into .dev/build-gpu (ignored by git), with the
# two shared libraries a machine with only the CUDA toolkit may lack (cJSON,
# subunit). Then carry .dev/build-gpu and run benchmarks/h200_run.sh there.
#   tools/pack_gpu.sh asan   also .dev/asan.tar.xz: test_cuda_faults and libgraphc built with
#                            ASan + UBSan (Release, stripped; the GPU machine's gcc brings
#                            libasan.so.8 and libubsan.so.1), compressed to fit beside .dev/build-gpu in one carry
#                            (benchmarks/h200_sanitize.sh, faults phase)
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build-gpu -j"$(nproc)" >/dev/null
# A copy of the build folder without object files (ctest needs its files;
# the binaries' RUNPATH and test paths point at /work/main/build-gpu, which
# benchmarks/h200_run.sh makes resolve on the GPU machine).
rm -rf .dev/build-gpu && mkdir -p .dev
cp -a build-gpu/. .dev/build-gpu/
find .dev/build-gpu \( -name '*.o' -o -name '*.a' \) -delete
rm -rf .dev/build-gpu/onnx-node-tests   # test_onnx's exports from a local ctest: 56 MB, not for the GPU suites
strip --strip-unneeded .dev/build-gpu/libgraphc.so.0.* .dev/build-gpu/libgraphc_rt.so.* 2>/dev/null || true
mkdir -p .dev/build-gpu/syslibs
for l in libcjson.so.1 libsubunit.so.0; do cp -L "/lib/x86_64-linux-gnu/$l" .dev/build-gpu/syslibs/; done
du -sh .dev/build-gpu
if [ "${1:-}" = asan ]; then
  cmake -S . -B build-gpu-asan -G Ninja -DCMAKE_BUILD_TYPE=Release -DGRAPHC_SANITIZE=ON >/dev/null
  ninja -C build-gpu-asan -j"$(nproc)" test_cuda_faults graphc_cuda_fault_shim graphc_cuda_fake >/dev/null
  P=$(mktemp -d)
  mkdir -p "$P/build-gpu-asan/tests"
  cp -a build-gpu-asan/libgraphc.so* "$P/build-gpu-asan/"
  cp build-gpu-asan/tests/test_cuda_faults build-gpu-asan/tests/*.so "$P/build-gpu-asan/tests/"
  strip --strip-unneeded "$P"/build-gpu-asan/libgraphc.so.0.*   # frames: addr2line on build-gpu-asan here
  tar -C "$P" -cJf .dev/asan.tar.xz build-gpu-asan && rm -rf "$P"
  du -sh .dev/asan.tar.xz
fi
