/* async_stream.c - graphc on the caller's own CUDA stream: device buffers allocated
 * by the program, a run enqueued on its stream, one synchronize, results checked
 * against the same run with host tensors (graphc_executable_run).
 *
 *   async_stream            (needs a CUDA device; links the CUDA driver)
 *
 * Build: CMakeLists.txt (target async_stream). The model is a small relu(x w + b).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <graphc/graphc.h>

enum { M = 64, K = 256, N = 128 };

static const char *k_model =
    "version 1;\n"
    "graph @g(%x: f32[64, 256], %w: f32[256, 128], %b: f32[128]) -> (f32[64, 128]) {\n"
    "  %h = matmul(%x, %w);\n"
    "  %y = add(%h, %b);\n"
    "  %r = relu(%y);\n"
    "  return %r;\n"
    "}\n";

#define CK(call)                                                          \
  do {                                                                    \
    CUresult r_ = (call);                                                 \
    if (r_ != CUDA_SUCCESS) {                                             \
      fprintf(stderr, "async_stream: %s failed (%d)\n", #call, (int)r_); \
      return 1;                                                           \
    }                                                                     \
  } while (0)

/* A dense f32 tensor over data. */
static graphc_tensor_t tensor(void *data, int rank, int64_t d0, int64_t d1) {
  graphc_tensor_t t = {GRAPHC_DTYPE_F32, rank, {d0, d1}, data, 0};
  t.nbytes = (size_t)(rank == 1 ? d0 : d0 * d1) * sizeof(float);
  return t;
}

int main(void) {
  graphc_context_t *ctx = NULL;
  graphc_model_t *m = NULL;
  graphc_executable_t *exe = NULL;
  graphc_error_t err;
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_CUDA;
  if (graphc_context_create(&ctx) ||
      graphc_model_load_string(ctx, "g.graph", k_model, strlen(k_model), &m, &err) ||
      graphc_compile(m, &o, &exe, &err)) {
    fprintf(stderr, "async_stream: %s\n", err.message);
    return 1;
  }
  /* The program's CUDA side: device 0's primary context (the one graphc and the CUDA
   * runtime use), its own stream and buffers. */
  CUdevice dev;
  CUcontext pctx;
  CUstream stream;
  CK(cuInit(0));
  CK(cuDeviceGet(&dev, 0));
  CK(cuDevicePrimaryCtxRetain(&pctx, dev));
  CK(cuCtxSetCurrent(pctx));
  CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  static float x[M * K], w[K * N], b[N], y_dev[M * N], y_host[M * N];
  srand(1);
  for (int i = 0; i < M * K; i++) x[i] = (float)rand() / RAND_MAX - 0.5f;
  for (int i = 0; i < K * N; i++) w[i] = (float)rand() / RAND_MAX - 0.5f;
  for (int i = 0; i < N; i++) b[i] = (float)rand() / RAND_MAX - 0.5f;
  CUdeviceptr dx, dw, db, dy;
  CK(cuMemAlloc(&dx, sizeof x));
  CK(cuMemAlloc(&dw, sizeof w));
  CK(cuMemAlloc(&db, sizeof b));
  CK(cuMemAlloc(&dy, sizeof y_dev));
  CK(cuMemcpyHtoDAsync(dx, x, sizeof x, stream));
  CK(cuMemcpyHtoDAsync(dw, w, sizeof w, stream));
  CK(cuMemcpyHtoDAsync(db, b, sizeof b, stream));
  graphc_tensor_t in[3] = {tensor((void *)(uintptr_t)dx, 2, M, K), tensor((void *)(uintptr_t)dw, 2, K, N),
                           tensor((void *)(uintptr_t)db, 1, N, 0)};
  graphc_tensor_t out[1] = {tensor((void *)(uintptr_t)dy, 2, M, N)};
  /* Queued behind the copies on the same stream; returns without waiting. */
  if (graphc_executable_enqueue(exe, in, 3, out, 1, stream, &err)) {
    fprintf(stderr, "async_stream: enqueue: %s\n", err.message);
    return 1;
  }
  CK(cuMemcpyDtoHAsync(y_dev, dy, sizeof y_dev, stream));
  CK(cuStreamSynchronize(stream));
  /* The same with host tensors, for comparison. */
  graphc_tensor_t hin[3] = {tensor(x, 2, M, K), tensor(w, 2, K, N), tensor(b, 1, N, 0)};
  graphc_tensor_t hout[1] = {tensor(y_host, 2, M, N)};
  if (graphc_executable_run(exe, hin, 3, hout, 1, &err)) {
    fprintf(stderr, "async_stream: run: %s\n", err.message);
    return 1;
  }
  double worst = 0;
  for (int i = 0; i < M * N; i++) {
    double e = fabs((double)y_dev[i] - y_host[i]);
    if (!(e <= worst)) worst = e;
  }
  printf("async_stream: y[0][0..3] = %.5f %.5f %.5f %.5f; largest difference from the host run %.3g\n",
         y_dev[0], y_dev[1], y_dev[2], y_dev[3], worst);
  cuMemFree(dx);
  cuMemFree(dw);
  cuMemFree(db);
  cuMemFree(dy);
  cuStreamDestroy(stream);
  graphc_executable_destroy(exe);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
  cuDevicePrimaryCtxRelease(dev);
  return worst <= 1e-4 ? 0 : 1;
}
