/* host_mlp.c - using graphc from C: load a model, bind its batch size,
 * compile for the default backend, run it on host data, read the outputs.
 *
 *   host_mlp [GRAPH [WEIGHTS]]     (defaults: examples/mlp.graph, its own weights)
 *
 * Build: it links libgraphc (see CMakeLists.txt); tests/test_examples.c runs it.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <graphc/graphc.h>

/* Print the error (with its position, if any) and the context's diagnostics. */
static int fail(graphc_context_t *ctx, const char *what, const graphc_error_t *err) {
  fprintf(stderr, "host_mlp: %s failed: %s\n", what, graphc_status_string(err->code));
  const char *diags = graphc_context_diagnostics(ctx);
  if (diags[0])
    fputs(diags, stderr);
  else if (err->line)
    fprintf(stderr, "%s:%d:%d: error: %s\n", err->file, err->line, err->col, err->message);
  else
    fprintf(stderr, "error: %s\n", err->message);
  return 1;
}

int main(int argc, char **argv) {
  const char *graph = argc > 1 ? argv[1] : "examples/mlp.graph";
  const char *weights = argc > 2 ? argv[2] : NULL;
  graphc_context_t *ctx = NULL;
  graphc_model_t *model = NULL;
  graphc_executable_t *exe = NULL;
  graphc_error_t err;
  float *x = NULL, *y = NULL;
  int rc = 1;

  if (graphc_context_create(&ctx) != GRAPHC_STATUS_OK) return 1;
  if (graphc_model_load_file(ctx, graph, &model, &err)) { rc = fail(ctx, "load", &err); goto done; }
  if (graphc_model_bind(model, "B", 4, &err)) { rc = fail(ctx, "bind", &err); goto done; }
  if (weights && graphc_model_set_weights(model, weights, &err)) { rc = fail(ctx, "weights", &err); goto done; }

  graphc_compile_options_t opts;
  graphc_compile_options_init(&opts);  /* default backend: cuda if present, else cpu */
  if (graphc_compile(model, &opts, &exe, &err)) { rc = fail(ctx, "compile", &err); goto done; }

  graphc_tensor_info_t in_info, out_info;
  graphc_executable_input_info(exe, 0, &in_info);
  graphc_executable_output_info(exe, 0, &out_info);
  x = malloc(in_info.nbytes);
  y = malloc(out_info.nbytes);
  if (!x || !y) goto done;
  for (size_t i = 0; i < in_info.nbytes / sizeof(float); i++) x[i] = (float)sin(0.01 * (double)i);

  graphc_tensor_t in = {.dtype = in_info.dtype, .rank = in_info.rank, .data = x, .nbytes = in_info.nbytes};
  graphc_tensor_t out = {.dtype = out_info.dtype, .rank = out_info.rank, .data = y, .nbytes = out_info.nbytes};
  for (int k = 0; k < in_info.rank; k++) in.dims[k] = in_info.dims[k];
  for (int k = 0; k < out_info.rank; k++) out.dims[k] = out_info.dims[k];
  if (graphc_executable_run(exe, &in, 1, &out, 1, &err)) { rc = fail(ctx, "run", &err); goto done; }

  printf("backend: %s\n", graphc_backend_name(graphc_executable_backend(exe)));
  for (int64_t r = 0; r < out_info.dims[0]; r++) {
    printf("y[%lld] =", (long long)r);
    for (int64_t c = 0; c < out_info.dims[1]; c++) printf(" %8.4f", y[r * out_info.dims[1] + c]);
    printf("\n");
  }
  rc = 0;
done:
  free(x);
  free(y);
  graphc_executable_destroy(exe);
  graphc_model_destroy(model);
  graphc_context_destroy(ctx);
  return rc;
}
