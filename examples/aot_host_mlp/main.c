/* main.c - the MLP of examples/mlp.graph compiled ahead of time for this
 * machine's CPU, run from C.
 *
 *   graphc compile ../mlp.graph --bind B=64 --target host --embed-weights --emit c -o mlp
 *     -> mlp.h (entry points, shape constants) + mlp.o (native kernels, plan, weights)
 *   cc main.c mlp.o $(pkg-config --cflags --libs graphc_rt) -lm
 *
 * At run time only libgraphc_rt (a thread pool calling the kernels) and libc
 * are needed: no LLVM, no compiler, no GPU. Input: x[i] = ((37 i) mod 101 - 50) / 50.
 * Prints the first rows' scores and argmax and the time of a run; with a
 * path argument, also writes the raw f32 output there. Exit status: 0 ok, 1 error.
 */
#include <stdio.h>
#include <time.h>

#include "mlp.h"

/* Monotonic milliseconds. */
static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

int main(int argc, char **argv) {
  static float x[MLP_IN_X_NUMEL], y[MLP_OUT_Y_NUMEL];
  for (int i = 0; i < MLP_IN_X_NUMEL; i++) x[i] = (float)((i * 37) % 101 - 50) / 50.0f;

  mlp_t *m = NULL;
  graphc_error_t err;
  if (mlp_create(&m, &err) != GRAPHC_STATUS_OK) {
    fprintf(stderr, "aot_host_mlp: %s\n", err.message);
    return 1;
  }
  graphc_status_t st = mlp_run(m, x, y, &err);  /* the first run starts the thread pool */
  double t0 = now_ms();
  int runs = 0;
  while (st == GRAPHC_STATUS_OK && (runs < 10 || now_ms() - t0 < 100)) {
    st = mlp_run(m, x, y, &err);
    runs++;
  }
  double ms = (now_ms() - t0) / (runs ? runs : 1);
  if (st != GRAPHC_STATUS_OK) {
    fprintf(stderr, "aot_host_mlp: %s: %s\n", graphc_status_string(st), err.message);
    mlp_destroy(m);
    return 1;
  }
  for (int b = 0; b < MLP_OUT_Y_DIM0 && b < 4; b++) {
    int best = 0;
    printf("row %d:", b);
    for (int j = 0; j < MLP_OUT_Y_DIM1; j++) {
      float v = y[b * MLP_OUT_Y_DIM1 + j];
      printf(" %8.4f", v);
      if (v > y[b * MLP_OUT_Y_DIM1 + best]) best = j;
    }
    printf("  -> class %d\n", best);
  }
  printf("batch %d: %.4f ms per run (mean of %d)\n", MLP_IN_X_DIM0, ms, runs);
  fputs(graphc_rt_bundle_stats(mlp_bundle(m)), stdout);
  int rc = 0;
  if (argc > 1) {
    FILE *f = fopen(argv[1], "wb");
    if (!f || fwrite(y, sizeof y, 1, f) != 1) {
      perror(argv[1]);
      rc = 1;
    }
    if (f && fclose(f) != 0) rc = 1;
  }
  mlp_destroy(m);
  return rc;
}
