/* async_stream.c - graphc on the caller's own CUDA stream, between the program's own
 * kernels: device buffers allocated by the program; its kernel scales the input in
 * place, graphc's run reads it and writes the output, its kernel adds to the output,
 * all queued on one stream with no copies between them; one synchronize; results
 * checked against the same computation with host tensors (graphc_executable_run).
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

/* The program's own kernel, p[i] = p[i] * a + c (PTX; the driver compiles it for the
 * device it runs on). */
static const char *k_ptx =
    ".version 8.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry affine(.param .u64 p, .param .u32 n, .param .f32 a, .param .f32 c) {\n"
    "  .reg .pred %q; .reg .b32 %r<6>; .reg .f32 %f<4>; .reg .b64 %rd<5>;\n"
    "  ld.param.u64 %rd1, [p]; ld.param.u32 %r1, [n];\n"
    "  ld.param.f32 %f1, [a]; ld.param.f32 %f2, [c];\n"
    "  mov.u32 %r2, %ctaid.x; mov.u32 %r3, %ntid.x; mov.u32 %r4, %tid.x;\n"
    "  mad.lo.s32 %r5, %r2, %r3, %r4;\n"
    "  setp.ge.u32 %q, %r5, %r1; @%q bra DONE;\n"
    "  cvta.to.global.u64 %rd2, %rd1; mul.wide.u32 %rd3, %r5, 4; add.s64 %rd4, %rd2, %rd3;\n"
    "  ld.global.f32 %f3, [%rd4]; fma.rn.f32 %f3, %f3, %f1, %f2; st.global.f32 [%rd4], %f3;\n"
    "DONE:\n  ret;\n}\n";

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
  CUmodule mod;
  CUfunction affine;
  CK(cuModuleLoadData(&mod, k_ptx));
  CK(cuModuleGetFunction(&affine, mod, "affine"));
  /* the program's kernel before graphc's run: x = 2x, in place, on the same stream */
  unsigned nx = M * K, ny = M * N;
  float a_pre = 2.0f, c_pre = 0.0f, a_post = 1.0f, c_post = 1.0f;
  void *pre[] = {&dx, &nx, &a_pre, &c_pre};
  CK(cuLaunchKernel(affine, (nx + 255) / 256, 1, 1, 256, 1, 1, 0, stream, pre, NULL));
  graphc_tensor_t in[3] = {tensor((void *)(uintptr_t)dx, 2, M, K), tensor((void *)(uintptr_t)dw, 2, K, N),
                           tensor((void *)(uintptr_t)db, 1, N, 0)};
  graphc_tensor_t out[1] = {tensor((void *)(uintptr_t)dy, 2, M, N)};
  /* Queued behind the copies and the kernel on the same stream; returns without waiting. */
  if (graphc_executable_enqueue(exe, in, 3, out, 1, stream, &err)) {
    fprintf(stderr, "async_stream: enqueue: %s\n", err.message);
    return 1;
  }
  /* the program's kernel after it: y = y + 1, reading graphc's output in place */
  void *post[] = {&dy, &ny, &a_post, &c_post};
  CK(cuLaunchKernel(affine, (ny + 255) / 256, 1, 1, 256, 1, 1, 0, stream, post, NULL));
  CK(cuMemcpyDtoHAsync(y_dev, dy, sizeof y_dev, stream));
  CK(cuStreamSynchronize(stream));
  /* The same with host tensors, for comparison: 2x in, +1 out. */
  for (int i = 0; i < M * K; i++) x[i] *= 2.0f;
  graphc_tensor_t hin[3] = {tensor(x, 2, M, K), tensor(w, 2, K, N), tensor(b, 1, N, 0)};
  graphc_tensor_t hout[1] = {tensor(y_host, 2, M, N)};
  if (graphc_executable_run(exe, hin, 3, hout, 1, &err)) {
    fprintf(stderr, "async_stream: run: %s\n", err.message);
    return 1;
  }
  double worst = 0;
  for (int i = 0; i < M * N; i++) {
    double e = fabs((double)y_dev[i] - (y_host[i] + 1.0));
    if (!(e <= worst)) worst = e;
  }
  printf("async_stream: y[0][0..3] = %.5f %.5f %.5f %.5f; largest difference from the host run %.3g\n",
         y_dev[0], y_dev[1], y_dev[2], y_dev[3], worst);
  cuModuleUnload(mod);
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
