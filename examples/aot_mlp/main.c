/* main.c - the MLP of examples/mlp.graph, compiled ahead of time, run from C.
 *
 *   graphc compile ../mlp.graph --bind B=4 --arch sm_90 --embed-weights --emit c -o mlp
 *     -> mlp.h (entry points, shape constants) + mlp.o (the bundle and wrappers)
 *   cc main.c mlp.o $(pkg-config --cflags --libs graphc_rt)
 *
 * Only libgraphc_rt and the CUDA driver are needed at run time: no compiler.
 * Input: x[i] = ((37 i) mod 101 - 50) / 50. Prints each row's scores and
 * argmax; with a path argument, also writes the raw f32 output there.
 * Exit status: 0 ok, 1 error, 77 no usable GPU.
 */
#include <stdio.h>

#include "mlp.h"

int main(int argc, char **argv) {
  static float x[MLP_IN_X_NUMEL], y[MLP_OUT_Y_NUMEL];
  for (int i = 0; i < MLP_IN_X_NUMEL; i++) x[i] = (float)((i * 37) % 101 - 50) / 50.0f;

  mlp_t *m = NULL;
  graphc_error_t err;
  if (mlp_create(&m, &err) != GRAPHC_STATUS_OK) {
    fprintf(stderr, "aot_mlp: %s\n", err.message);
    return 1;
  }
  graphc_status_t st = mlp_run(m, x, y, &err);
  if (st != GRAPHC_STATUS_OK) {
    fprintf(stderr, "aot_mlp: %s: %s\n", graphc_status_string(st), err.message);
    mlp_destroy(m);
    return st == GRAPHC_STATUS_BACKEND_UNAVAILABLE ? 77 : 1;
  }
  for (int b = 0; b < MLP_OUT_Y_DIM0; b++) {
    int best = 0;
    printf("row %d:", b);
    for (int j = 0; j < MLP_OUT_Y_DIM1; j++) {
      float v = y[b * MLP_OUT_Y_DIM1 + j];
      printf(" %8.4f", v);
      if (v > y[b * MLP_OUT_Y_DIM1 + best]) best = j;
    }
    printf("  -> class %d\n", best);
  }
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
