/* run.c - the `run`, `weights` and `compile` commands of the graphc tool. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp/interp.h"
#include "passes/pipeline.h"
#include "weights/safetensors.h"
#include "tools/aot_cli.h"
#include "tools/cli.h"

/* Print one tensor: its type and values (first 16 unless full), min/max/mean. */
static void print_tensor(const graphc_tensor_info_t *info, const void *data, int full) {
  int64_t n = 1;
  for (int k = 0; k < info->rank; k++) n *= info->dims[k];
  printf("%%%s: %s[", info->name, graphc_dtype_name(info->dtype));
  for (int k = 0; k < info->rank; k++) printf("%s%lld", k ? ", " : "", (long long)info->dims[k]);
  printf("] = [");
  int64_t shown = full || n <= 16 ? n : 16;
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  for (int64_t i = 0; i < n; i++) {
    double v = gc_load_f64(data, info->dtype, i);
    if (i < shown) printf("%s%.6g", i ? ", " : "", v);
    lo = fmin(lo, v);
    hi = fmax(hi, v);
    sum += v;
  }
  if (shown < n) printf(", ... (%lld more)", (long long)(n - shown));
  if (n == 0) {
    printf("]  (empty)\n");
    return;
  }
  printf("]\n    min %.6g  max %.6g  mean %.6g\n", lo, hi, sum / (double)n);
}

static const char *const usage_run_head =
    "usage: graphc run FILE [options]\n"
    "Compile FILE's entry graph and run it once; print (or save) the outputs.\n\noptions:\n"
    "  --inputs F.safetensors  inputs by argument name (without %)\n"
    "  --random               random inputs (default when --inputs is absent)\n"
    "  --seed N               seed for random inputs (default 0)\n"
    "  --output F.safetensors save the outputs by value name\n"
    "  --full                 print every output value\n"
    "  --check                also run the f32 interpreter on the same inputs; print each output's\n"
    "                         relative L2 error and max abs error against it (for --precision)\n";

/* Take --check out of argv (cli_parse does not know it); returns the new argc. */
static int strip_check(int argc, char **argv, int *check) {
  int n = 0;
  *check = 0;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--check") == 0) *check = 1;
    else argv[n++] = argv[i];
  }
  return n;
}

/* --check: compile m again for the interpreter at f32 (the reference), run it on `in`
 * and print per output "rel_l2 X max_abs Y" of `out` against it. */
static graphc_status_t check_outputs(graphc_model_t *m, const cli_opts *o, const graphc_tensor_t *in,
                                     size_t n_in, const graphc_tensor_t *out, size_t n_out,
                                     graphc_error_t *err) {
  graphc_compile_options_t ro = o->copts;
  ro.backend = GRAPHC_BACKEND_INTERP;
  ro.precision = GRAPHC_PRECISION_F32;
  ro.allow_tf32 = 0;
  ro.keep_f32 = NULL;
  ro.print_after = ro.print_before = NULL;
  graphc_executable_t *ref = NULL;
  graphc_tensor_t *rout = calloc(n_out + 1, sizeof *rout);
  if (!rout) return gc_set_error(err, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory for host tensors");
  graphc_status_t st = graphc_compile(m, &ro, &ref, err);
  for (size_t i = 0; st == GRAPHC_STATUS_OK && i < n_out; i++) {
    rout[i] = out[i];
    if (!(rout[i].data = malloc(out[i].nbytes ? out[i].nbytes : 1)))
      st = gc_set_error(err, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory for host tensors");
  }
  if (st == GRAPHC_STATUS_OK) st = graphc_executable_run(ref, in, n_in, rout, n_out, err);
  if (st == GRAPHC_STATUS_OK) {
    printf("# check against the f32 interpreter (precision %s)\n", gc_precision_name(o->copts.precision)
                                                                        ? gc_precision_name(o->copts.precision) : "?");
    for (size_t i = 0; i < n_out; i++) {
      graphc_tensor_info_t info;
      graphc_executable_output_info(ref, i, &info);
      int64_t n = 1;
      for (int k = 0; k < info.rank; k++) n *= info.dims[k];
      double num = 0, den = 0, mx = 0;
      for (int64_t j = 0; j < n; j++) {
        double a = gc_load_f64(out[i].data, info.dtype, j), b = gc_load_f64(rout[i].data, info.dtype, j);
        num += (a - b) * (a - b);
        den += b * b;
        if (fabs(a - b) > mx || a != a) mx = a != a ? NAN : fabs(a - b);
      }
      printf("%%%s: rel_l2 %.3g max_abs %.3g\n", info.name, den > 0 ? sqrt(num / den) : sqrt(num), mx);
    }
  }
  for (size_t i = 0; i < n_out; i++) free(rout[i].data);
  free(rout);
  graphc_executable_destroy(ref);
  return st;
}

/* Save outputs to a safetensors file named by output value names. */
static int save_outputs(graphc_executable_t *exe, const graphc_tensor_t *out, const char *path) {
  size_t n = graphc_executable_num_outputs(exe);
  gc_st_tensor *ts = calloc(n + 1, sizeof *ts);
  if (!ts) return -1;
  for (size_t i = 0; i < n; i++) {
    graphc_tensor_info_t info;
    graphc_executable_output_info(exe, i, &info);
    ts[i].name = info.name;
    ts[i].dtype = info.dtype;
    ts[i].rank = info.rank;
    memcpy(ts[i].dims, info.dims, sizeof ts[i].dims);
    ts[i].data = out[i].data;
    ts[i].nbytes = info.nbytes;
  }
  /* The same value returned twice is saved once. */
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    int dup = 0;
    for (size_t j = 0; j < k; j++) dup |= strcmp(ts[j].name, ts[i].name) == 0;
    if (!dup) ts[k++] = ts[i];
  }
  gc_diags d;
  gc_diags_init(&d, path, NULL, 0);
  int rc = gc_safetensors_write(path, ts, (int)k, &d);
  if (rc != 0) {
    char *r = gc_diags_render(&d);
    fputs(r ? r : "graphc: cannot write outputs\n", stderr);
    free(r);
  }
  gc_diags_free(&d);
  free(ts);
  return rc;
}

int cli_cmd_run(int argc, char **argv, const char *usage_common, const char *usage_compile) {
  char usage[4096];
  snprintf(usage, sizeof usage, "%s%s%s", usage_run_head, usage_common, usage_compile);
  cli_opts o;
  int check;
  argc = strip_check(argc, argv, &check);
  if (cli_parse(argc, argv, &o, usage) != 0) return 1;
  if (o.help) return 0;
  graphc_context_t *ctx;
  if (graphc_context_create(&ctx) != GRAPHC_STATUS_OK) return 2;
  graphc_error_t err;
  graphc_model_t *m = NULL;
  graphc_executable_t *exe = NULL;
  graphc_tensor_t *in = NULL, *out = NULL;
  gc_safetensors *file = NULL;
  size_t n_in = 0, n_out = 0;
  double t0 = cli_now_ms();
  graphc_status_t st = cli_load(ctx, &o, &m, &err);
  double t1 = cli_now_ms();
  if (st == GRAPHC_STATUS_OK) st = graphc_compile(m, &o.copts, &exe, &err);
  if (st == GRAPHC_STATUS_OK) cli_print_warnings(ctx);  /* the run's call replaces them */
  double t2 = cli_now_ms(), t3, t4;
  if (st == GRAPHC_STATUS_OK) {
    n_in = graphc_executable_num_inputs(exe);
    n_out = graphc_executable_num_outputs(exe);
    in = calloc(n_in + 1, sizeof *in);
    out = calloc(n_out + 1, sizeof *out);
    st = in && out ? cli_make_tensors(exe, &o, in, out, &file, &err)
                   : gc_set_error(&err, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory for host tensors");
  }
  t3 = cli_now_ms();
  if (st == GRAPHC_STATUS_OK) st = graphc_executable_run(exe, in, n_in, out, n_out, &err);
  t4 = cli_now_ms();
  if (st == GRAPHC_STATUS_OK) {
    printf("# %s on %s\n", o.file, graphc_backend_name(graphc_executable_backend(exe)));
    for (size_t i = 0; i < n_out; i++) {
      graphc_tensor_info_t info;
      graphc_executable_output_info(exe, i, &info);
      print_tensor(&info, out[i].data, o.full);
    }
    if (o.stats)
      printf("# stats\nrun: model %.2f ms (read, parse, verify), compile %.2f ms (to a loaded module), "
             "first run %.2f ms\n%s",
             t1 - t0, t2 - t1, t4 - t3, graphc_executable_stats(exe));
    if (o.output && save_outputs(exe, out, o.output) != 0) st = GRAPHC_STATUS_IO_ERROR;
    if (st == GRAPHC_STATUS_OK && check) st = check_outputs(m, &o, in, n_in, out, n_out, &err);
  }
  int rc = cli_report(ctx, st, &err);
  for (size_t i = 0; in && i < n_in; i++) free(in[i].data);
  for (size_t i = 0; out && i < n_out; i++) free(out[i].data);
  free(in);
  free(out);
  gc_safetensors_free(file);
  graphc_executable_destroy(exe);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
  return rc;
}

int cli_cmd_weights(int argc, char **argv, const char *usage_common) {
  char usage[2048];
  snprintf(usage, sizeof usage,
           "usage: graphc weights FILE --random [--seed N] -o W.safetensors [options]\n"
           "Write deterministic random data for every param of the entry graph.\n\noptions:\n"
           "  --random          random data (the only mode)\n"
           "  --seed N          seed (default 0)\n"
           "  -o, --output W    the weights file to write\n%s",
           usage_common);
  cli_opts o;
  if (cli_parse(argc, argv, &o, usage) != 0) return 1;
  if (o.help) return 0;
  if (!o.random || !o.output) {
    fprintf(stderr, "graphc: weights needs --random and -o FILE\n");
    return 1;
  }
  graphc_context_t *ctx;
  if (graphc_context_create(&ctx) != GRAPHC_STATUS_OK) return 2;
  graphc_error_t err;
  graphc_model_t *m = NULL;
  graphc_status_t st = cli_load(ctx, &o, &m, &err);
  if (st == GRAPHC_STATUS_OK && o.n_binds) st = graphc_model_specialize(m, &err);
  if (st == GRAPHC_STATUS_OK) st = graphc_model_write_random_weights(m, o.output, o.seed, &err);
  int rc = cli_report(ctx, st, &err);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
  return rc;
}

int cli_cmd_compile(int argc, char **argv, const char *usage_common, const char *usage_compile) {
  /* Bundles and C (ahead of time): tools/aot_cli.c. */
  if (cli_aot_wanted(argc, argv)) return cli_cmd_compile_aot(argc, argv, usage_common, usage_compile);
  char usage[4096];
  snprintf(usage, sizeof usage,
           "usage: graphc compile FILE --emit WHAT [-o OUT] [options]\n"
           "Write generated code for the entry graph (all symbolic dims bound).\n\noptions:\n"
           "  --emit WHAT       kir | cuda | llvm | ptx | cubin | bundle | c (see --emit bundle --help)\n"
           "  -o, --output OUT  output file (default: stdout, except cubin)\n%s%s",
           usage_common, usage_compile);
  cli_opts o;
  if (cli_parse(argc, argv, &o, usage) != 0) return 1;
  if (o.help) return 0;
  if (!o.emit) {
    fprintf(stderr, "graphc: compile needs --emit kir|cuda|llvm|ptx|cubin\n");
    return 1;
  }
  if (strcmp(o.emit, "cubin") == 0 && !o.output) {
    fprintf(stderr, "graphc: --emit cubin writes a binary: give -o FILE\n");
    return 1;
  }
  graphc_context_t *ctx;
  if (graphc_context_create(&ctx) != GRAPHC_STATUS_OK) return 2;
  graphc_error_t err;
  graphc_model_t *m = NULL;
  void *bytes = NULL;
  size_t len = 0;
  graphc_status_t st = cli_load(ctx, &o, &m, &err);
  if (st == GRAPHC_STATUS_OK) st = graphc_model_emit(m, &o.copts, o.emit, &bytes, &len, &err);
  if (st == GRAPHC_STATUS_OK) {
    FILE *f = o.output ? fopen(o.output, "wb") : stdout;
    if (!f || fwrite(bytes, 1, len, f) != len) {
      fprintf(stderr, "graphc: error: cannot write '%s': %s\n", o.output, strerror(errno));
      st = GRAPHC_STATUS_IO_ERROR;
      err.message[0] = 0;
    }
    if (f && f != stdout && fclose(f) != 0) st = GRAPHC_STATUS_IO_ERROR;
  }
  int rc = st == GRAPHC_STATUS_IO_ERROR && !err.message[0] ? 1 : cli_report(ctx, st, &err);
  graphc_free(bytes);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
  return rc;
}
