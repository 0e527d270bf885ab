/* ranged_switch.c - what a ranged executable (graphc_compile_ranged) adds per run once its
 * bindings are compiled: a small graph run at two alternating shapes through one ranged
 * executable, against two executables compiled for exactly those shapes, same inputs, same
 * backend. Prints the median host time per run of each and the difference (issue 35's bar:
 * switching between cached shapes adds <= 5 us). Public API only.
 *
 *   ranged_switch [--backend cpu|cuda|interp] [--runs N]
 *
 * Build (not part of the CMake targets):
 *   gcc -std=gnu17 -O2 -Iinclude benchmarks/ranged_switch.c -Lbuild -lgraphc \
 *       -Wl,-rpath,$PWD/build -lm -o build/ranged_switch
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graphc/graphc.h"

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static void check(graphc_status_t st, const graphc_error_t *err, const char *what) {
  if (st == GRAPHC_STATUS_OK) return;
  fprintf(stderr, "ranged_switch: %s: %s\n", what, err->message);
  exit(1);
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static const char k_src[] = "version 1;\ngraph @g<B: 1..64>(%x: f32[B, 64]) -> (f32[B, 64]) {\n"
                            "  %y = relu(%x);\n  %z = mul(%y, %x);\n  return %z;\n}\n";

int main(int argc, char **argv) {
  graphc_backend_t be = GRAPHC_BACKEND_CPU;
  int runs = 2000;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--backend") && i + 1 < argc) {
      const char *b = argv[++i];
      be = !strcmp(b, "cuda") ? GRAPHC_BACKEND_CUDA : !strcmp(b, "interp") ? GRAPHC_BACKEND_INTERP : GRAPHC_BACKEND_CPU;
    } else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
      runs = atoi(argv[++i]);
    }
  }
  graphc_context_t *ctx;
  graphc_error_t err;
  graphc_context_create(&ctx);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = be;
  const int64_t bs[2] = {4, 16};
  graphc_executable_t *exact[2], *ranged;
  for (int k = 0; k < 2; k++) {
    graphc_model_t *m;
    check(graphc_model_load_string(ctx, "s.graph", k_src, strlen(k_src), &m, &err), &err, "load");
    check(graphc_model_bind(m, "B", bs[k], &err), &err, "bind");
    check(graphc_compile(m, &o, &exact[k], &err), &err, "compile");
    graphc_model_destroy(m);
  }
  graphc_model_t *m;
  check(graphc_model_load_string(ctx, "s.graph", k_src, strlen(k_src), &m, &err), &err, "load");
  check(graphc_compile_ranged(m, &o, &ranged, &err), &err, "compile_ranged");
  static float x[2][16 * 64], y[2][16 * 64];
  for (int i = 0; i < 16 * 64; i++) x[0][i] = x[1][i] = (float)(i % 7) - 3;
  graphc_tensor_t in[2], out[2];
  for (int k = 0; k < 2; k++) {
    in[k] = (graphc_tensor_t){GRAPHC_DTYPE_F32, 2, {bs[k], 64}, x[k], sizeof(float) * (size_t)bs[k] * 64};
    out[k] = (graphc_tensor_t){GRAPHC_DTYPE_F32, 2, {bs[k], 64}, y[k], sizeof(float) * (size_t)bs[k] * 64};
    check(graphc_executable_run(ranged, &in[k], 1, &out[k], 1, &err), &err, "warm-up");
  }
  double *te = malloc(sizeof(double) * (size_t)runs), *tr = malloc(sizeof(double) * (size_t)runs);
  for (int r = 0; r < runs; r++) {
    int k = r & 1;
    double t0 = now_us();
    check(graphc_executable_run(exact[k], &in[k], 1, &out[k], 1, &err), &err, "exact run");
    double t1 = now_us();
    check(graphc_executable_run(ranged, &in[k], 1, &out[k], 1, &err), &err, "ranged run");
    double t2 = now_us();
    te[r] = t1 - t0;
    tr[r] = t2 - t1;
  }
  qsort(te, (size_t)runs, sizeof *te, cmp);
  qsort(tr, (size_t)runs, sizeof *tr, cmp);
  printf("backend %s, B alternating 4 / 16, %d runs: exact executables %.2f us, ranged %.2f us (median), "
         "switching adds %.2f us\n%s", graphc_backend_name(be), runs, te[runs / 2], tr[runs / 2],
         tr[runs / 2] - te[runs / 2], graphc_executable_stats(ranged));
  free(te);
  free(tr);
  for (int k = 0; k < 2; k++) graphc_executable_destroy(exact[k]);
  graphc_executable_destroy(ranged);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
  return 0;
}
