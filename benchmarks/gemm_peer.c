/* gemm_peer.c - the cuBLASLt baseline for graphc's matmul benchmarks.
 *
 *   gemm_peer DTYPE BATCH M N K [bias_gelu]     DTYPE: f16 | bf16 | tf32 (f32 data,
 *                                               CUBLAS_COMPUTE_32F_FAST_TF32)
 *
 * Row-major D[b] = A[b] (M x K) * B[b] (K x N) with f32 accumulation and output
 * in DTYPE, optionally + bias[N] then GELU (cuBLASLt's GELU_BIAS epilogue), the
 * same problem graphc's generated kernel solves. cuBLASLt is opened with dlopen
 * (only this benchmark uses it); the best heuristic algorithm with a 32 MiB
 * workspace runs 10 times untimed, then 50 times, each bracketed by events.
 * Prints one line: "cublaslt <dtype> <batch>x<M>x<N>x<K> median_ms <t> tflops <f>".
 *
 * Build (on the GPU machine):
 *   gcc -O2 -I/usr/local/cuda/include benchmarks/gemm_peer.c -L/usr/local/cuda/lib64 -lcuda -ldl -o gemm_peer
 */
#include <cublasLt.h>
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_NAME "gemm_peer"
#include "bench_check.h"
#define LT(x) CK_STATUS(x, CUBLAS_STATUS_SUCCESS)

/* The cuBLASLt entry points used, resolved with dlsym. */
static struct {
  cublasStatus_t (*create)(cublasLtHandle_t *);
  cublasStatus_t (*desc_create)(cublasLtMatmulDesc_t *, cublasComputeType_t, cudaDataType_t);
  cublasStatus_t (*desc_set)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, const void *, size_t);
  cublasStatus_t (*layout_create)(cublasLtMatrixLayout_t *, cudaDataType, uint64_t, uint64_t, int64_t);
  cublasStatus_t (*layout_set)(cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t, const void *, size_t);
  cublasStatus_t (*pref_create)(cublasLtMatmulPreference_t *);
  cublasStatus_t (*pref_set)(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t, const void *,
                             size_t);
  cublasStatus_t (*heuristic)(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
                              cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                              cublasLtMatmulPreference_t, int, cublasLtMatmulHeuristicResult_t *, int *);
  cublasStatus_t (*matmul)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *, const void *,
                           cublasLtMatrixLayout_t, const void *, cublasLtMatrixLayout_t, const void *,
                           const void *, cublasLtMatrixLayout_t, void *, cublasLtMatrixLayout_t,
                           const cublasLtMatmulAlgo_t *, void *, size_t, cudaStream_t);
} lt;

static void *sym(void *h, const char *name) {
  void *p = dlsym(h, name);
  if (!p) {
    fprintf(stderr, "gemm_peer: %s not found in libcublasLt\n", name);
    exit(1);
  }
  return p;
}

static int cmpf(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* A column-major rows x cols layout with `batch` matrices `stride` elements apart. */
static cublasLtMatrixLayout_t layout(cudaDataType t, uint64_t rows, uint64_t cols, int batch, int64_t stride) {
  cublasLtMatrixLayout_t l;
  LT(lt.layout_create(&l, t, rows, cols, (int64_t)rows));
  if (batch > 1) {
    LT(lt.layout_set(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof batch));
    LT(lt.layout_set(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
  }
  return l;
}

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: gemm_peer f16|bf16 BATCH M N K [bias_gelu]\n");
    return 2;
  }
  int is_tf32 = strcmp(argv[1], "tf32") == 0;
  cudaDataType t = is_tf32 ? CUDA_R_32F : strcmp(argv[1], "bf16") == 0 ? CUDA_R_16BF : CUDA_R_16F;
  size_t es = is_tf32 ? 4 : 2;
  int batch = atoi(argv[2]);
  long M = atol(argv[3]), N = atol(argv[4]), K = atol(argv[5]);
  int epi = argc > 6 && strcmp(argv[6], "bias_gelu") == 0;
  void *h = dlopen("libcublasLt.so.13", RTLD_NOW);
  if (!h) h = dlopen("libcublasLt.so", RTLD_NOW);
  if (!h) {
    fprintf(stderr, "gemm_peer: cannot open libcublasLt: %s\n", dlerror());
    return 1;
  }
  *(void **)&lt.create = sym(h, "cublasLtCreate");
  *(void **)&lt.desc_create = sym(h, "cublasLtMatmulDescCreate");
  *(void **)&lt.desc_set = sym(h, "cublasLtMatmulDescSetAttribute");
  *(void **)&lt.layout_create = sym(h, "cublasLtMatrixLayoutCreate");
  *(void **)&lt.layout_set = sym(h, "cublasLtMatrixLayoutSetAttribute");
  *(void **)&lt.pref_create = sym(h, "cublasLtMatmulPreferenceCreate");
  *(void **)&lt.pref_set = sym(h, "cublasLtMatmulPreferenceSetAttribute");
  *(void **)&lt.heuristic = sym(h, "cublasLtMatmulAlgoGetHeuristic");
  *(void **)&lt.matmul = sym(h, "cublasLtMatmul");

  CUdevice dev;
  CUcontext ctx;
  CK(cuInit(0));
  CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  CUdeviceptr a, b, d, bias, ws;
  size_t wsz = 32u << 20;
  CK(cuMemAlloc(&a, (size_t)batch * M * K * es));
  CK(cuMemAlloc(&b, (size_t)batch * K * N * es));
  CK(cuMemAlloc(&d, (size_t)batch * M * N * es));
  CK(cuMemAlloc(&bias, (size_t)N * es));
  CK(cuMemAlloc(&ws, wsz));
  /* small values (0x3000 ~ 0.125 in f16, 0x3e00 ~ 0.125 in bf16): no overflow, nonzero work */
  if (is_tf32) {  /* 0x3e000000 = 0.125f */
    CK(cuMemsetD32(a, 0x3e000000u, (size_t)batch * M * K));
    CK(cuMemsetD32(b, 0x3e000000u, (size_t)batch * K * N));
    CK(cuMemsetD32(bias, 0, (size_t)N));
  } else {
    CK(cuMemsetD16(a, t == CUDA_R_16F ? 0x3000 : 0x3e00, (size_t)batch * M * K));
    CK(cuMemsetD16(b, t == CUDA_R_16F ? 0x3000 : 0x3e00, (size_t)batch * K * N));
    CK(cuMemsetD16(bias, 0, (size_t)N));
  }

  cublasLtHandle_t lh;
  LT(lt.create(&lh));
  cublasLtMatmulDesc_t desc;
  LT(lt.desc_create(&desc, is_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F));
  if (epi) {
    cublasLtEpilogue_t e = CUBLASLT_EPILOGUE_GELU_BIAS;
    void *bp = (void *)(uintptr_t)bias;
    LT(lt.desc_set(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof e));
    LT(lt.desc_set(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp));
  }
  /* row-major D = A B  <=>  column-major D^T (N x M) = B^T (N x K) A^T (K x M) */
  cublasLtMatrixLayout_t lb = layout(t, (uint64_t)N, (uint64_t)K, batch, (int64_t)K * N);
  cublasLtMatrixLayout_t la = layout(t, (uint64_t)K, (uint64_t)M, batch, (int64_t)M * K);
  cublasLtMatrixLayout_t ld = layout(t, (uint64_t)N, (uint64_t)M, batch, (int64_t)M * N);
  cublasLtMatmulPreference_t pref;
  LT(lt.pref_create(&pref));
  LT(lt.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsz, sizeof wsz));
  cublasLtMatmulHeuristicResult_t res;
  int nres = 0;
  LT(lt.heuristic(lh, desc, lb, la, ld, ld, pref, 1, &res, &nres));
  if (nres < 1) {
    fprintf(stderr, "gemm_peer: no cuBLASLt algorithm for this problem\n");
    return 1;
  }
  float alpha = 1.0f, beta = 0.0f;
  CUstream st;
  CK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
  CUevent e0, e1;
  CK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
  CK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
  enum { WARM = 10, RUNS = 50 };
  float ms[RUNS];
  for (int i = 0; i < WARM + RUNS; i++) {
    CK(cuEventRecord(e0, st));
    LT(lt.matmul(lh, desc, &alpha, (void *)(uintptr_t)b, lb, (void *)(uintptr_t)a, la, &beta,
                 (void *)(uintptr_t)d, ld, (void *)(uintptr_t)d, ld, &res.algo, (void *)(uintptr_t)ws, wsz,
                 (cudaStream_t)st));
    CK(cuEventRecord(e1, st));
    CK(cuEventSynchronize(e1));
    if (i >= WARM) CK(cuEventElapsedTime(&ms[i - WARM], e0, e1));
  }
  qsort(ms, RUNS, sizeof ms[0], cmpf);
  double med = 0.5 * (ms[RUNS / 2 - 1] + ms[RUNS / 2]);
  double tf = 2.0 * batch * M * N * K / (med * 1e-3) / 1e12;
  printf("cublaslt %s %dx%ldx%ldx%ld%s median_ms %.4f tflops %.1f\n", argv[1], batch, M, N, K,
         epi ? " bias_gelu" : "", med, tf);
  return 0;
}
