# device_env.sh - sourced by the device scripts (h200_run.sh, h200_final.sh, h200_conv.sh,
# gpu_smoke.sh), run from the repository root on the GPU machine with .dev/build-gpu carried:
# ROOT, OUT (created), B (the build), the library path, no JIT cache.
ROOT=$PWD
OUT=${OUT:-$ROOT/h200-out}
mkdir -p "$OUT"
# The build records absolute paths (/work/main/...): make them resolve here.
[ -e /work/main/CMakeLists.txt ] || { mkdir -p /work && ln -sfn "$ROOT" /work/main; }
[ -e "$ROOT/build-gpu" ] || ln -sfn "$ROOT/.dev/build-gpu" "$ROOT/build-gpu"
B=$ROOT/build-gpu
export LD_LIBRARY_PATH="$B/syslibs:$B:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export GRAPHC_CACHE=off PYTHONUNBUFFERED=1
