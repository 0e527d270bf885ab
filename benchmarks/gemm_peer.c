/* gemm_peer.c - the cuBLASLt baseline for graphc's matmul benchmarks.
 *
 *   gemm_peer DTYPE BATCH M N K [bias_gelu] [const] [warmup=N]   DTYPE: f16 | bf16 | tf32 (f32 data,
 *                                                                CUBLAS_COMPUTE_32F_FAST_TF32)
 *
 * Row-major D[b] = A[b] (M x K) * B[b] (K x N) with f32 accumulation and output
 * in DTYPE, optionally + bias[N] then GELU (cuBLASLt's GELU_BIAS epilogue), the
 * same problem graphc's generated kernel solves. cuBLASLt is opened with dlopen
 * (only this benchmark uses it); the best heuristic algorithm with a 32 MiB
 * workspace runs 10 times (or N) untimed, then 50 times, each bracketed by events.
 *
 * The operands hold random values drawn like `graphc bench`'s inputs: uniform in
 * [-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in the product of the non-leading dims (K for
 * A, N for B, M K and K N when batched, 1 for the bias); the same distribution, not the
 * same bits. That matters on the H200: a large matmul is power-limited and the tensor
 * cores draw less on constant operands, so the clocks, and the time, depend on the data
 * (12-23% faster on constant operands, docs/performance.md). `const` fills every element
 * with 0.125 instead (this program's fill before 2026-12-03), to show the difference.
 * Prints one line: "cublaslt <dtype> <batch>x<M>x<N>x<K> median_ms <t> tflops <f>".
 *
 * Build (on the GPU machine):
 *   gcc -O2 -I/usr/local/cuda/include benchmarks/gemm_peer.c -L/usr/local/cuda/lib64 -lcuda -ldl -lm -o gemm_peer
 */
#include <cublasLt.h>
#include <cuda.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
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

/* Uniform [-scale, scale) values, converted to the element type (round to nearest even). */
static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static void fill_random(void *host, cudaDataType t, size_t n, double scale, uint64_t seed) {
  for (size_t i = 0; i < n; i++) {
    float f = (float)(((double)(splitmix(&seed) >> 11) * 0x1.0p-53 * 2.0 - 1.0) * scale);
    if (t == CUDA_R_32F) {
      ((float *)host)[i] = f;
    } else if (t == CUDA_R_16F) {
      ((_Float16 *)host)[i] = (_Float16)f;
    } else {  /* bf16: the top half of the f32, rounded to nearest even (values are finite) */
      uint32_t u;
      memcpy(&u, &f, 4);
      ((uint16_t *)host)[i] = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
  }
}

/* Fill device buffer `d` with n elements: random (see the header) or constant 0.125. */
static void fill(CUdeviceptr d, cudaDataType t, size_t es, size_t n, double scale, uint64_t seed, int constant) {
  if (constant) {  /* 0x3e000000 = 0.125f; 0x3000 ~ 0.125 in f16, 0x3e00 ~ 0.125 in bf16 */
    if (es == 4) CK(cuMemsetD32(d, 0x3e000000u, n));
    else CK(cuMemsetD16(d, t == CUDA_R_16F ? 0x3000 : 0x3e00, n));
    return;
  }
  void *h = malloc(n * es);
  if (!h) {
    fprintf(stderr, "gemm_peer: out of host memory\n");
    exit(1);
  }
  fill_random(h, t, n, scale, seed);
  CK(cuMemcpyHtoD(d, h, n * es));
  free(h);
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
    fprintf(stderr, "usage: gemm_peer f16|bf16|tf32 BATCH M N K [bias_gelu] [const] [warmup=N]\n");
    return 2;
  }
  int is_tf32 = strcmp(argv[1], "tf32") == 0;
  cudaDataType t = is_tf32 ? CUDA_R_32F : strcmp(argv[1], "bf16") == 0 ? CUDA_R_16BF : CUDA_R_16F;
  size_t es = is_tf32 ? 4 : 2;
  int batch = atoi(argv[2]);
  long M = atol(argv[3]), N = atol(argv[4]), K = atol(argv[5]);
  int epi = 0, constant = 0, warm = 10;
  for (int i = 6; i < argc; i++) {
    if (strcmp(argv[i], "bias_gelu") == 0) epi = 1;
    else if (strcmp(argv[i], "const") == 0) constant = 1;
    else if (strncmp(argv[i], "warmup=", 7) == 0 && atoi(argv[i] + 7) >= 0) warm = atoi(argv[i] + 7);
    else {
      fprintf(stderr, "gemm_peer: unknown option '%s'\n", argv[i]);
      return 2;
    }
  }
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
  double fan_a = batch > 1 ? (double)M * K : (double)K, fan_b = batch > 1 ? (double)K * N : (double)N;
  fill(a, t, es, (size_t)batch * M * K, 1.0 / sqrt(fan_a), 1, constant);
  fill(b, t, es, (size_t)batch * K * N, 1.0 / sqrt(fan_b), 2, constant);
  fill(bias, t, es, (size_t)N, 1.0, 3, constant);

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
  enum { RUNS = 50 };
  float ms[RUNS];
  for (int i = 0; i < warm + RUNS; i++) {
    CK(cuEventRecord(e0, st));
    LT(lt.matmul(lh, desc, &alpha, (void *)(uintptr_t)b, lb, (void *)(uintptr_t)a, la, &beta,
                 (void *)(uintptr_t)d, ld, (void *)(uintptr_t)d, ld, &res.algo, (void *)(uintptr_t)ws, wsz,
                 (cudaStream_t)st));
    CK(cuEventRecord(e1, st));
    CK(cuEventSynchronize(e1));
    if (i >= warm) CK(cuEventElapsedTime(&ms[i - warm], e0, e1));
  }
  qsort(ms, RUNS, sizeof ms[0], cmpf);
  double med = 0.5 * (ms[RUNS / 2 - 1] + ms[RUNS / 2]);
  double tf = 2.0 * batch * M * N * K / (med * 1e-3) / 1e12;
  printf("cublaslt %s %dx%ldx%ldx%ld%s%s median_ms %.4f tflops %.1f\n", argv[1], batch, M, N, K,
         epi ? " bias_gelu" : "", constant ? " const" : "", med, tf);
  return 0;
}
