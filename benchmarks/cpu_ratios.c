/* cpu_ratios.c - the cpu backend against machine baselines, measured in one run
 * (docs/performance.md, "CPU"):
 *
 *   (a) a fused elementwise chain, y = relu(x * x + x) over 16 Mi f32 (64 MiB in,
 *       64 MiB out), against memcpy of the same 64 MiB (1 thread, and split over
 *       the same threads as graphc): bytes read + written per second;
 *   (b) f32 matmul 1024 x 1024 x 1024 against OpenBLAS cblas_sgemm with the same
 *       thread count (libopenblas.so.0 opened with dlopen: used by this program
 *       only); the results are compared too;
 *   (c) examples/mlp.graph at batch 64 (examples/mlp.safetensors) on the cpu
 *       backend against the interpreter.
 *
 * Each timing is the median of `runs` runs after one warm-up run. Threads:
 * $GRAPHC_CPU_THREADS, else the online CPUs (the same for OpenBLAS and the
 * split memcpy). Run from the source root: benchmarks/cpu_ratios.sh.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "graphc/graphc.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Print the error and exit (a benchmark program, not library code). */
static void check(graphc_status_t st, const graphc_error_t *err, const char *what) {
  if (st == GRAPHC_STATUS_OK) return;
  fprintf(stderr, "cpu_ratios: %s: %s: %s\n", what, graphc_status_string(st), err->message);
  exit(1);
}

/* A compiled executable of `text` (weights from `weights` when not NULL). */
static graphc_executable_t *compile(graphc_context_t *ctx, const char *name, const char *text,
                                    const char *file, const char *weights, int B,
                                    graphc_backend_t backend) {
  graphc_model_t *m = NULL;
  graphc_executable_t *exe = NULL;
  graphc_error_t err;
  if (file)
    check(graphc_model_load_file(ctx, file, &m, &err), &err, file);
  else
    check(graphc_model_load_string(ctx, name, text, strlen(text), &m, &err), &err, name);
  if (B) check(graphc_model_bind(m, "B", B, &err), &err, "bind");
  if (weights) check(graphc_model_set_weights(m, weights, &err), &err, weights);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = backend;
  check(graphc_compile(m, &o, &exe, &err), &err, "compile");
  graphc_model_destroy(m);
  return exe;
}

/* Median ms of `runs` runs of exe after one warm-up. */
static double time_exe(graphc_executable_t *exe, graphc_tensor_t *in, size_t ni, graphc_tensor_t *out,
                       int runs) {
  graphc_error_t err;
  double *t = calloc((size_t)runs, sizeof *t);
  check(graphc_executable_run(exe, in, ni, out, 1, &err), &err, "run");
  for (int r = 0; r < runs; r++) {
    double t0 = now_ms();
    check(graphc_executable_run(exe, in, ni, out, 1, &err), &err, "run");
    t[r] = now_ms() - t0;
  }
  double m = median(t, runs);
  free(t);
  return m;
}

/* Deterministic values in [-1, 1). */
static void fill(float *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    p[i] = (float)((double)(seed >> 8) / (double)(1u << 23) - 1.0);
  }
}

typedef struct copy_job {
  char *dst;
  const char *src;
  size_t n;
} copy_job;

static void *copy_part(void *arg) {
  copy_job *j = arg;
  memcpy(j->dst, j->src, j->n);
  return NULL;
}

/* memcpy of n bytes split across `threads` threads (1: plain memcpy); median ms. */
static double time_memcpy(void *dst, const void *src, size_t n, int threads, int runs) {
  double *t = calloc((size_t)runs + 1, sizeof *t);
  pthread_t th[64];
  copy_job jobs[64];
  if (threads > 64) threads = 64;
  for (int r = -1; r < runs; r++) {
    double t0 = now_ms();
    size_t part = (n / (size_t)threads) & ~(size_t)63;
    for (int i = 0; i < threads; i++) {
      size_t off = part * (size_t)i, len = i == threads - 1 ? n - off : part;
      jobs[i] = (copy_job){(char *)dst + off, (const char *)src + off, len};
      if (i) pthread_create(&th[i], NULL, copy_part, &jobs[i]);
    }
    copy_part(&jobs[0]);
    for (int i = 1; i < threads; i++) pthread_join(th[i], NULL);
    if (r >= 0) t[r] = now_ms() - t0;
  }
  double m = median(t, runs);
  free(t);
  return m;
}

typedef void (*sgemm_fn)(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a,
                         int lda, const float *b, int ldb, float beta, float *c, int ldc);

int main(int argc, char **argv) {
  int runs = argc > 1 ? atoi(argv[1]) : 11;
  if (runs < 1) runs = 1;
  int threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
  const char *env = getenv("GRAPHC_CPU_THREADS");
  if (env && atoi(env) > 0) threads = atoi(env);
  graphc_context_t *ctx;
  if (graphc_context_create(&ctx) != GRAPHC_STATUS_OK) return 1;
  printf("cpu_ratios: %d threads, median of %d runs\n\n", threads, runs);

  /* (a) elementwise chain vs memcpy */
  enum { EW_N = 16 << 20 };
  size_t ew_bytes = (size_t)EW_N * sizeof(float);
  float *x = aligned_alloc(64, ew_bytes), *y = aligned_alloc(64, ew_bytes);
  if (!x || !y) return 1;
  fill(x, EW_N, 1);
  memset(y, 0, ew_bytes);
  char ew_text[512];
  snprintf(ew_text, sizeof ew_text,
           "version 1;\ngraph @chain(%%x: f32[%d]) -> (f32[%d]) {\n  %%a = mul(%%x, %%x);\n"
           "  %%b = add(%%a, %%x);\n  %%y = relu(%%b);\n  return %%y;\n}\n", EW_N, EW_N);
  graphc_executable_t *ew = compile(ctx, "chain.graph", ew_text, NULL, NULL, 0, GRAPHC_BACKEND_CPU);
  graphc_tensor_t ein = {GRAPHC_DTYPE_F32, 1, {EW_N}, x, ew_bytes};
  graphc_tensor_t eout = {GRAPHC_DTYPE_F32, 1, {EW_N}, y, ew_bytes};
  double t_ew = time_exe(ew, &ein, 1, &eout, runs);
  double t_mc1 = time_memcpy(y, x, ew_bytes, 1, runs);
  double t_mcn = time_memcpy(y, x, ew_bytes, threads, runs);
  double gb = 2.0 * (double)ew_bytes / 1e9, best_mc = t_mc1 < t_mcn ? t_mc1 : t_mcn;
  printf("(a) elementwise chain relu(x*x+x), 64 MiB in + 64 MiB out\n");
  printf("    graphc cpu          %8.3f ms  %6.2f GB/s\n", t_ew, gb / (t_ew * 1e-3));
  printf("    memcpy 1 thread     %8.3f ms  %6.2f GB/s\n", t_mc1, gb / (t_mc1 * 1e-3));
  printf("    memcpy %d threads    %8.3f ms  %6.2f GB/s\n", threads, t_mcn, gb / (t_mcn * 1e-3));
  printf("    ratio vs the faster memcpy: %.0f%%\n\n", 100.0 * best_mc / t_ew);
  graphc_executable_destroy(ew);
  free(x);
  free(y);

  /* (b) matmul vs OpenBLAS */
  enum { MM = 1024 };
  size_t mm_bytes = (size_t)MM * MM * sizeof(float);
  float *a = aligned_alloc(64, mm_bytes), *b = aligned_alloc(64, mm_bytes);
  float *c = aligned_alloc(64, mm_bytes), *cref = aligned_alloc(64, mm_bytes);
  if (!a || !b || !c || !cref) return 1;
  fill(a, (size_t)MM * MM, 2);
  fill(b, (size_t)MM * MM, 3);
  char mm_text[512];
  snprintf(mm_text, sizeof mm_text,
           "version 1;\ngraph @mm(%%a: f32[%d, %d], %%b: f32[%d, %d]) -> (f32[%d, %d]) {\n"
           "  %%c = matmul(%%a, %%b);\n  return %%c;\n}\n", MM, MM, MM, MM, MM, MM);
  graphc_executable_t *mm = compile(ctx, "mm.graph", mm_text, NULL, NULL, 0, GRAPHC_BACKEND_CPU);
  graphc_tensor_t min[2] = {{GRAPHC_DTYPE_F32, 2, {MM, MM}, a, mm_bytes},
                            {GRAPHC_DTYPE_F32, 2, {MM, MM}, b, mm_bytes}};
  graphc_tensor_t mout = {GRAPHC_DTYPE_F32, 2, {MM, MM}, c, mm_bytes};
  double t_mm = time_exe(mm, min, 2, &mout, runs);
  double gflop = 2.0 * MM * MM * (double)MM / 1e9;
  printf("(b) f32 matmul %d x %d x %d\n", MM, MM, MM);
  printf("    graphc cpu          %8.3f ms  %6.1f GFLOP/s\n", t_mm, gflop / (t_mm * 1e-3));
  void *blas = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
  sgemm_fn sgemm = blas ? (sgemm_fn)(uintptr_t)dlsym(blas, "cblas_sgemm") : NULL;
  void (*set_threads)(int) = blas ? (void (*)(int))(uintptr_t)dlsym(blas, "openblas_set_num_threads") : NULL;
  const char *(*config)(void) = blas ? (const char *(*)(void))(uintptr_t)dlsym(blas, "openblas_get_config") : NULL;
  if (!sgemm) {
    printf("    OpenBLAS: not found (%s): apt-get install libopenblas-dev\n\n", dlerror());
  } else {
    if (set_threads) set_threads(threads);
    double *t = calloc((size_t)runs, sizeof *t);
    for (int r = -1; r < runs; r++) {
      double t0 = now_ms();
      sgemm(101 /* row major */, 111, 111, MM, MM, MM, 1.0f, a, MM, b, MM, 0.0f, cref, MM);
      if (r >= 0) t[r] = now_ms() - t0;
    }
    double t_blas = median(t, runs);
    free(t);
    double max_err = 0, max_ref = 0;
    for (size_t i = 0; i < (size_t)MM * MM; i++) {
      double e = fabs((double)c[i] - cref[i]);
      if (e > max_err) max_err = e;
      if (fabs(cref[i]) > max_ref) max_ref = fabs(cref[i]);
    }
    printf("    OpenBLAS sgemm      %8.3f ms  %6.1f GFLOP/s  (%s)\n", t_blas, gflop / (t_blas * 1e-3),
           config ? config() : "?");
    printf("    max |graphc - OpenBLAS| = %.3g (max |C| %.3g)\n", max_err, max_ref);
    printf("    ratio graphc / OpenBLAS: %.0f%%\n\n", 100.0 * t_blas / t_mm);
  }
  graphc_executable_destroy(mm);
  free(a);
  free(b);
  free(c);
  free(cref);

  /* (c) mlp batch 64: cpu vs interpreter */
  enum { B = 64 };
  static float mx[B * 784], my[B * 10];
  fill(mx, B * 784, 4);
  graphc_tensor_t lin = {GRAPHC_DTYPE_F32, 2, {B, 784}, mx, sizeof mx};
  graphc_tensor_t lout = {GRAPHC_DTYPE_F32, 2, {B, 10}, my, sizeof my};
  graphc_executable_t *cpu = compile(ctx, NULL, NULL, "examples/mlp.graph", "examples/mlp.safetensors", B,
                                     GRAPHC_BACKEND_CPU);
  graphc_executable_t *itp = compile(ctx, NULL, NULL, "examples/mlp.graph", "examples/mlp.safetensors", B,
                                     GRAPHC_BACKEND_INTERP);
  double t_cpu = time_exe(cpu, &lin, 1, &lout, runs * 10);
  double t_itp = time_exe(itp, &lin, 1, &lout, runs < 5 ? runs : 5);
  printf("(c) examples/mlp.graph, batch %d\n", B);
  printf("    graphc cpu          %8.4f ms\n", t_cpu);
  printf("    interpreter         %8.4f ms\n", t_itp);
  printf("    speedup: %.0fx\n", t_itp / t_cpu);
  graphc_executable_destroy(cpu);
  graphc_executable_destroy(itp);
  graphc_context_destroy(ctx);
  if (blas) dlclose(blas);
  return 0;
}
