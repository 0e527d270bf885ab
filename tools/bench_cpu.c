/* bench_cpu.c - `graphc bench --backend cpu`: the GPU bench's report for the host.
 *
 * Given a compiled, once-run cpu executable and host tensors: measure the
 * host's copy bandwidth (memcpy of a 256 MiB buffer split over the executor's
 * threads, bytes read + written, best of 10) and a GEMM peak (graphc's own f32
 * matmul of 512 x 512 x 512 on the cpu backend, best of 10), then time the whole graph
 * (graphc_executable_run, median, min, p90) and every launch alone
 * (gc_cpu_time_launches, median over runs). GB/s and GFLOP/s come from the
 * plan's modeled bytes and flops, as percentages of the measured copy and GEMM.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/cpu_backend.h"
#include "driver/exec.h"
#include "runtime/threadpool.h"
#include "tools/cli.h"

#define COPY_BYTES ((size_t)256 << 20)
#define GEMM_N 512

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* Sort v and return its median. */
static double median(float *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_float);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct copy_task {
  char *dst;
  const char *src;
  size_t chunk, total;
} copy_task;

/* Pool callback: copy chunks [begin, end). */
static void copy_range(void *arg, int64_t begin, int64_t end) {
  const copy_task *t = arg;
  for (int64_t c = begin; c < end; c++) {
    size_t off = (size_t)c * t->chunk;
    size_t n = off + t->chunk <= t->total ? t->chunk : t->total - off;
    memcpy(t->dst + off, t->src + off, n);
  }
}

/* Host copy bandwidth in GB/s (read + write) over `threads` threads; 0 on failure. */
static double copy_bandwidth(int threads) {
  char *a = malloc(COPY_BYTES), *b = malloc(COPY_BYTES);
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  gc_threadpool *pool = a && b ? gc_threadpool_create(threads, &d) : NULL;
  double best = 0;
  if (pool) {
    memset(a, 1, COPY_BYTES);
    memset(b, 2, COPY_BYTES);
    int chunks = threads * 4;
    copy_task t = {b, a, (COPY_BYTES + (size_t)chunks - 1) / (size_t)chunks, COPY_BYTES};
    for (int r = 0; r < 10; r++) {  /* the best run: a peak to compare against */
      double t0 = cli_now_ms();
      gc_threadpool_run(pool, copy_range, &t, chunks, threads);
      double ms = cli_now_ms() - t0;
      double g = ms > 0 ? 2.0 * (double)COPY_BYTES / (ms * 1e-3) / 1e9 : 0;
      if (g > best) best = g;
    }
  }
  gc_threadpool_destroy(pool);
  gc_diags_free(&d);
  free(a);
  free(b);
  return best;
}

/* GFLOP/s of graphc's f32 matmul of GEMM_N^3 on the cpu backend (best of 10); 0 on failure. */
static double gemm_peak(graphc_context_t *ctx) {
  char src[512];
  snprintf(src, sizeof src,
           "version 1;\ngraph @gemm(%%a: f32[%d, %d], %%b: f32[%d, %d]) -> (f32[%d, %d]) {\n"
           "  %%c = matmul(%%a, %%b);\n  return %%c;\n}\n",
           GEMM_N, GEMM_N, GEMM_N, GEMM_N, GEMM_N, GEMM_N);
  graphc_error_t err;
  memset(&err, 0, sizeof err);
  graphc_model_t *m = NULL;
  graphc_executable_t *exe = NULL;
  double best = 0;
  size_t n = (size_t)GEMM_N * GEMM_N;
  float *buf = calloc(3 * n, sizeof *buf);
  graphc_compile_options_t co;
  graphc_compile_options_init(&co);
  co.backend = GRAPHC_BACKEND_CPU;
  if (buf && graphc_model_load_string(ctx, "gemm.graph", src, strlen(src), &m, &err) == GRAPHC_STATUS_OK &&
      graphc_compile(m, &co, &exe, &err) == GRAPHC_STATUS_OK) {
    for (size_t i = 0; i < 2 * n; i++) buf[i] = (float)((i * 7919) % 17) * 0.0625f - 0.5f;
    int64_t dims[2] = {GEMM_N, GEMM_N};
    graphc_tensor_t in[2] = {{GRAPHC_DTYPE_F32, 2, {0}, buf, n * sizeof *buf},
                             {GRAPHC_DTYPE_F32, 2, {0}, buf + n, n * sizeof *buf}};
    graphc_tensor_t out[1] = {{GRAPHC_DTYPE_F32, 2, {0}, buf + 2 * n, n * sizeof *buf}};
    for (int i = 0; i < 2; i++) memcpy(in[i].dims, dims, sizeof dims);
    memcpy(out[0].dims, dims, sizeof dims);
    for (int r = 0; r < 11; r++) {
      double t0 = cli_now_ms();
      if (graphc_executable_run(exe, in, 2, out, 1, &err) != GRAPHC_STATUS_OK) break;
      double t = cli_now_ms() - t0;
      double g = t > 0 ? 2.0 * GEMM_N * (double)GEMM_N * GEMM_N / (t * 1e-3) / 1e9 : 0;
      if (r > 0 && g > best) best = g;  /* the first run also runs the prologue */
    }
  }
  graphc_executable_destroy(exe);
  graphc_model_destroy(m);
  free(buf);
  return best;
}

int cli_bench_cpu(graphc_context_t *ctx, graphc_executable_t *exe, const cli_opts *o,
                  const graphc_tensor_t *in, size_t n_in, graphc_tensor_t *out, size_t n_out) {
  gc_cpu_info info;
  if (gc_cpu_exec_info(exe, &info) != GRAPHC_STATUS_OK) return -1;
  const gc_plan *p = info.plan;
  int runs = o->runs > 0 ? o->runs : 100, warmup = o->warmup > 0 ? o->warmup : 10;
  int nl = p->n_launches, kruns = runs < 50 ? runs : 50;
  float *ms = calloc((size_t)runs + 1, sizeof *ms);
  float *kms = calloc((size_t)kruns * (size_t)(nl > 0 ? nl : 1) + 1, sizeof *kms);
  float *col = calloc((size_t)kruns + 1, sizeof *col);
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  graphc_error_t err;
  memset(&err, 0, sizeof err);
  int rc = -1;
  if (!ms || !kms || !col) {
    fprintf(stderr, "graphc bench: out of memory\n");
    goto out;
  }
  printf("graphc bench: %s\n", o->file);
  printf("  host     %s, %d executor thread%s\n", info.target, info.threads,
         info.threads == 1 ? "" : "s");
  printf("  code     LLVM host JIT, %d kernels, %d launches\n", p->kir->n_kernels, nl);
  double copy_gbps = copy_bandwidth(info.threads);
  printf("  copy     %.1f GB/s host copy bandwidth (memcpy of %zu MiB on %d threads, read + write)\n",
         copy_gbps, COPY_BYTES >> 20, info.threads);
  double peak = gemm_peak(ctx);
  printf("  gemm     %.1f GFLOP/s (graphc's f32 matmul %dx%dx%d on the cpu backend, best of 10)\n",
         peak, GEMM_N, GEMM_N, GEMM_N);

  for (int r = 0; r < warmup; r++)
    if (graphc_executable_run(exe, in, n_in, out, n_out, &err) != GRAPHC_STATUS_OK) goto run_err;
  for (int r = 0; r < runs; r++) {
    double t0 = cli_now_ms();
    if (graphc_executable_run(exe, in, n_in, out, n_out, &err) != GRAPHC_STATUS_OK) goto run_err;
    ms[r] = (float)(cli_now_ms() - t0);
  }
  double bytes = 0, flops = 0;
  for (int i = p->n_prologue; i < nl; i++) {  /* the prologue does not run per run */
    const kir_kernel *k = p->kir->kernels[p->launches[i]];
    bytes += k->bytes_moved;
    flops += k->flops;
  }
  double med = median(ms, runs);
  printf("\nwhole graph (graphc_executable_run, %d runs after %d warm-up):\n", runs, warmup);
  printf("  median %.4f ms   min %.4f ms   p90 %.4f ms\n", med, ms[0],
         ms[(int)ceil(0.9 * runs) - 1 < 0 ? 0 : (int)ceil(0.9 * runs) - 1]);
  double gbps = med > 0 ? bytes / (med * 1e-3) / 1e9 : 0;
  double gflops = med > 0 ? flops / (med * 1e-3) / 1e9 : 0;
  printf("  modeled %.3f MB, %.3f GFLOP -> %.1f GB/s (%.1f%% of copy), %.2f GFLOP/s (%.1f%% of gemm)\n",
         bytes / 1e6, flops / 1e9, gbps, copy_gbps > 0 ? 100.0 * gbps / copy_gbps : 0, gflops,
         peak > 0 ? 100.0 * gflops / peak : 0);

  if (nl > 0) {
    if (gc_cpu_time_launches(exe, in, out, kruns, kms, &d) != GRAPHC_STATUS_OK) goto out;
    printf("\nper kernel (each launch alone, median of %d runs):\n", kruns);
    printf("  %3s  %-36s %12s %10s %10s %9s %7s %9s %7s\n", "#", "kernel", "items", "ms", "MB",
           "GB/s", "%copy", "GFLOP/s", "%gemm");
    double sum = 0;
    for (int i = 0; i < nl; i++) {
      const kir_kernel *k = p->kir->kernels[p->launches[i]];
      for (int r = 0; r < kruns; r++) col[r] = kms[(size_t)r * (size_t)nl + (size_t)i];
      double t = median(col, kruns);
      if (i >= p->n_prologue) sum += t;
      double g = t > 0 ? k->bytes_moved / (t * 1e-3) / 1e9 : 0;
      double f = t > 0 ? k->flops / (t * 1e-3) / 1e9 : 0;
      printf("  %3d%c %-36.36s %12lld %10.4f %10.3f %9.1f %6.1f%% %9.2f %6.1f%%\n", i,
             i < p->n_prologue ? '*' : ' ', k->name, (long long)k->launch.n, t, k->bytes_moved / 1e6,
             g, copy_gbps > 0 ? 100.0 * g / copy_gbps : 0, f, peak > 0 ? 100.0 * f / peak : 0);
    }
    printf("  %3s  %-36s %12s %10.4f %10.3f %9.1f %6.1f%%\n", "", "sum of kernels", "", sum,
           bytes / 1e6, sum > 0 ? bytes / (sum * 1e-3) / 1e9 : 0,
           sum > 0 && copy_gbps > 0 ? 100.0 * bytes / (sum * 1e-3) / 1e9 / copy_gbps : 0);
    if (p->n_prologue)
      printf("  (*: reads only weights; runs once per weights, not in the runs above nor in the sum)\n");
  }
  rc = 0;
  goto out;
run_err:
  fprintf(stderr, "graphc bench: run failed: %s\n", err.message);
out:
  if (d.n) {
    char *r = gc_diags_render(&d);
    if (r) fputs(r, stderr);
    free(r);
  }
  gc_diags_free(&d);
  free(ms);
  free(kms);
  free(col);
  return rc;
}
