#!/usr/bin/env bash
# tf32_check.sh - f32 matmuls on the tensor cores (--tf32) on a GPU machine: a fused
# matmul + bias + gelu against the interpreter (both codegen paths), then the tf32 rows
# of gemm_run.sh (graphc vs cuBLASLt with CUBLAS_COMPUTE_32F_FAST_TF32). Carry .dev/build-gpu.
set -u
ROOT=$PWD
[ -e /work/main/CMakeLists.txt ] || { mkdir -p /work && ln -sfn "$ROOT" /work/main; }
[ -e "$ROOT/build-gpu" ] || ln -sfn "$ROOT/.dev/build-gpu" "$ROOT/build-gpu"
B=$ROOT/build-gpu
export LD_LIBRARY_PATH="$B/syslibs:$B:/usr/local/cuda/lib64"
export GRAPHC_CACHE=off
printf 'version 1;\ngraph @g(%%a: f32[2, 300, 264], %%b: f32[264, 520], %%c: f32[520]) -> (f32[2, 300, 520]) {\n  %%y = matmul(%%a, %%b);\n  %%z = add(%%y, %%c);\n  %%r = gelu(%%z);\n  return %%r;\n}\n' > /tmp/t.graph
python3 -c "
import numpy as np; from safetensors.numpy import save_file
r=np.random.default_rng(0)
save_file({'a': r.uniform(-1,1,(2,300,264)).astype('float32'), 'b': r.uniform(-1,1,(264,520)).astype('float32'), 'c': r.uniform(-1,1,(520,)).astype('float32')}, '/tmp/in.safetensors')"
for cg in nvrtc llvm; do
  $B/graphc run /tmp/t.graph --inputs /tmp/in.safetensors --backend cuda --codegen $cg --tf32 --output /tmp/y_$cg.safetensors > /dev/null || echo "run $cg failed"
done
$B/graphc run /tmp/t.graph --inputs /tmp/in.safetensors --backend interp --output /tmp/y_ref.safetensors > /dev/null
python3 -c "
import numpy as np; from safetensors.numpy import load_file
ref=list(load_file('/tmp/y_ref.safetensors').values())[0].astype(np.float64)
for cg in ('nvrtc','llvm'):
    y=list(load_file('/tmp/y_%s.safetensors'%cg).values())[0].astype(np.float64)
    print('tf32', cg, 'rel L2 %.3g'%(np.linalg.norm(y-ref)/np.linalg.norm(ref)), 'max abs %.3g of %.3g'%(np.abs(y-ref).max(), np.abs(ref).max()))"
GEMM_CASES="tf32 1 4096 4096 4096 -
tf32 1 8192 8192 8192 -" bash benchmarks/gemm_run.sh $B/graphc /tmp/gemm 2>&1 | grep -E "dtype|tf32"
