/* cpu_bench.c - time a graph on the cpu backend (LLVM host JIT), against itself
 * on one thread and against the interpreter.
 *
 *   cpu_bench FILE [S=N ...] [--runs N] [--threads a,b,c] [--no-interp] [--disable-pass LIST]
 *
 * Binds each S=N, writes random weights (seed 1) next to a temp file when the
 * graph has params, compiles for the cpu backend once per thread count
 * (GRAPHC_CPU_THREADS), runs once to warm up, then `runs` times, and prints
 * the compile time, the median and minimum run time and the speedup over one
 * thread; the interpreter is timed once for scale. Public API only.
 *
 * Build (not part of the CMake targets):
 *   gcc -std=gnu17 -O2 -Iinclude benchmarks/cpu_bench.c -Lbuild-cpu -lgraphc \
 *       -Wl,-rpath,$PWD/build-cpu -lm -o build-cpu/cpu_bench
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "graphc/graphc.h"

/* Monotonic milliseconds. */
static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Print the error and exit (a benchmark tool, not library code). */
static void die(const char *what, graphc_status_t st, const graphc_error_t *err,
                graphc_context_t *ctx) {
  fprintf(stderr, "cpu_bench: %s: %s: %s\n%s", what, graphc_status_string(st),
          err ? err->message : "", ctx ? graphc_context_diagnostics(ctx) : "");
  exit(1);
}

/* Host tensors for an executable's inputs (random in [-1, 1) for floats, small
 * non-negative ints otherwise) and outputs. */
static void make_io(graphc_executable_t *exe, graphc_tensor_t **in, graphc_tensor_t **out) {
  size_t ni = graphc_executable_num_inputs(exe), no = graphc_executable_num_outputs(exe);
  *in = calloc(ni + 1, sizeof **in);
  *out = calloc(no + 1, sizeof **out);
  unsigned seed = 12345;
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i < (pass ? no : ni); i++) {
      graphc_tensor_info_t info;
      if (pass)
        graphc_executable_output_info(exe, i, &info);
      else
        graphc_executable_input_info(exe, i, &info);
      graphc_tensor_t *t = pass ? &(*out)[i] : &(*in)[i];
      t->dtype = info.dtype;
      t->rank = info.rank;
      memcpy(t->dims, info.dims, sizeof t->dims);
      t->nbytes = info.nbytes;
      t->data = calloc(1, info.nbytes ? info.nbytes : 1);
      if (!t->data) die("out of memory", GRAPHC_STATUS_OUT_OF_MEMORY, NULL, NULL);
      if (pass) continue;
      size_t n = info.nbytes / graphc_dtype_size(info.dtype);
      for (size_t k = 0; k < n; k++) {
        seed = seed * 1103515245u + 12345u;
        double u = (double)(seed >> 8) / (double)(1u << 24);
        if (info.dtype == GRAPHC_DTYPE_F32)
          ((float *)t->data)[k] = (float)(2 * u - 1);
        else if (info.dtype == GRAPHC_DTYPE_F64)
          ((double *)t->data)[k] = 2 * u - 1;
        else if (info.dtype == GRAPHC_DTYPE_I64)
          ((int64_t *)t->data)[k] = (int64_t)(u * 4);
        else if (info.dtype == GRAPHC_DTYPE_I32)
          ((int32_t *)t->data)[k] = (int32_t)(u * 4);
        else if (graphc_dtype_size(info.dtype) == 1)
          ((unsigned char *)t->data)[k] = (unsigned char)(u * 2);
      }
    }
}

/* Free tensors made by make_io. */
static void free_io(graphc_tensor_t *t, size_t n) {
  for (size_t i = 0; t && i < n; i++) free(t[i].data);
  free(t);
}

/* qsort order for doubles. */
static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static const char *g_disable;  /* --disable-pass: passes to skip (before/after comparisons) */

/* Compile for backend `be` and time `runs` runs; median and min in ms. */
static void bench(graphc_context_t *ctx, graphc_model_t *m, graphc_backend_t be, int runs,
                  double *compile_ms, double *median, double *best) {
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = be;
  o.disable_passes = g_disable;
  graphc_executable_t *exe = NULL;
  graphc_error_t err;
  double t0 = now_ms();
  graphc_status_t st = graphc_compile(m, &o, &exe, &err);
  if (st != GRAPHC_STATUS_OK) die("compile", st, &err, ctx);
  *compile_ms = now_ms() - t0;
  graphc_tensor_t *in, *out;
  make_io(exe, &in, &out);
  size_t ni = graphc_executable_num_inputs(exe), no = graphc_executable_num_outputs(exe);
  st = graphc_executable_run(exe, in, ni, out, no, &err);  /* warm-up */
  if (st != GRAPHC_STATUS_OK) die("run", st, &err, ctx);
  double *t = calloc((size_t)runs, sizeof *t);
  for (int r = 0; r < runs; r++) {
    double a = now_ms();
    graphc_executable_run(exe, in, ni, out, no, &err);
    t[r] = now_ms() - a;
  }
  qsort(t, (size_t)runs, sizeof *t, cmp_double);
  *median = t[runs / 2];
  *best = t[0];
  free(t);
  free_io(in, ni);
  free_io(out, no);
  graphc_executable_destroy(exe);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: cpu_bench FILE [S=N ...] [--runs N] [--threads a,b,c] [--no-interp] "
                    "[--disable-pass LIST]\n");
    return 2;
  }
  int runs = 20, interp = 1;
  char threads[256] = "";
  graphc_context_t *ctx;
  graphc_context_create(&ctx);
  graphc_model_t *m = NULL;
  graphc_error_t err;
  graphc_status_t st = graphc_model_load_file(ctx, argv[1], &m, &err);
  if (st != GRAPHC_STATUS_OK) die(argv[1], st, &err, ctx);
  for (int i = 2; i < argc; i++) {
    char *eq = strchr(argv[i], '=');
    if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      runs = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      snprintf(threads, sizeof threads, "%s", argv[++i]);
    } else if (strcmp(argv[i], "--no-interp") == 0) {
      interp = 0;
    } else if (strcmp(argv[i], "--disable-pass") == 0 && i + 1 < argc) {
      g_disable = argv[++i];
    } else if (eq) {
      *eq = 0;
      st = graphc_model_bind(m, argv[i], atoll(eq + 1), &err);
      if (st != GRAPHC_STATUS_OK) die("bind", st, &err, ctx);
    } else {
      fprintf(stderr, "cpu_bench: unknown argument '%s'\n", argv[i]);
      return 2;
    }
  }
  if (runs < 1) runs = 1;
  if (!threads[0]) snprintf(threads, sizeof threads, "1,%ld", sysconf(_SC_NPROCESSORS_ONLN));
  char wpath[] = "/tmp/cpu_bench_XXXXXX";
  int fd = mkstemp(wpath);
  if (fd < 0) die("mkstemp", GRAPHC_STATUS_IO_ERROR, NULL, NULL);
  close(fd);
  st = graphc_model_specialize(m, &err);
  if (st != GRAPHC_STATUS_OK) die("specialize", st, &err, ctx);
  if (graphc_model_write_random_weights(m, wpath, 1, &err) == GRAPHC_STATUS_OK)
    graphc_model_set_weights(m, wpath, &err);
  printf("%-12s %10s %10s %10s %8s\n", "backend", "compile", "median", "min", "speedup");
  double one = 0, c, med, best;
  for (char *p = threads; *p;) {
    char *end;
    long n = strtol(p, &end, 10);
    if (end == p || n < 1) break;
    char buf[32];
    snprintf(buf, sizeof buf, "%ld", n);
    setenv("GRAPHC_CPU_THREADS", buf, 1);
    bench(ctx, m, GRAPHC_BACKEND_CPU, runs, &c, &med, &best);
    if (!one) one = med;
    char name[32];
    snprintf(name, sizeof name, "cpu x%ld", n);
    printf("%-12s %8.1f ms %7.3f ms %7.3f ms %7.2fx\n", name, c, med, best, one / med);
    p = *end == ',' ? end + 1 : end;
  }
  if (interp) {
    bench(ctx, m, GRAPHC_BACKEND_INTERP, 1, &c, &med, &best);
    printf("%-12s %8.1f ms %7.3f ms %7.3f ms %7.2fx\n", "interp", c, med, best, one / med);
  }
  unlink(wpath);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
  return 0;
}
