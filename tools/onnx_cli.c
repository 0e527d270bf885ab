/* onnx_cli.c - the ONNX commands of the graphc tool.
 *
 *   graphc import MODEL.onnx -o MODEL.graph [--weights W.safetensors]
 *   graphc run-pb FILE.graph --inputs-pb in0.pb ... [--expect-pb out0.pb ...] [run options]
 *   graphc run-onnx-test DIR [--backend B] [--data-set N] [--keep] [-v]
 *
 * .pb files are ONNX TensorProto messages (the inputs and expected outputs of
 * the ONNX backend tests). Outputs are compared with ONNX's tolerances:
 * |got - expected| <= 1e-7 + 1e-3 * |expected| for floats (NaN matches NaN),
 * exact for integers and bools. Exit codes: 0 ok, 1 mismatch or user error,
 * 2 internal error, 3 (run-onnx-test) the model uses something unsupported.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "frontend/onnx.h"
#include "frontend/parser.h"
#include "interp/interp.h"
#include "tools/cli.h"

#define PB_RTOL 1e-3
#define PB_ATOL 1e-7
#define MAX_PB 64
#define EXIT_UNSUPPORTED 3

/* Print rendered diagnostics; return the exit code for their status. */
static int report_diags(const gc_diags *d) {
  char *r = gc_diags_render(d);
  if (r) fputs(r, stderr);
  free(r);
  if (!d->n_errors) return 0;
  if (d->status == GRAPHC_STATUS_INTERNAL) return 2;
  return d->status == GRAPHC_STATUS_UNSUPPORTED ? EXIT_UNSUPPORTED : 1;
}

/* ---- import --------------------------------------------------------------------------------------- */

static const char *const usage_import =
    "usage: graphc import MODEL.onnx -o MODEL.graph [--weights W.safetensors]\n"
    "Translate an ONNX model into a .graph file and a safetensors weights file.\n\noptions:\n"
    "  -o, --output F    the .graph file to write (default: MODEL.graph next to the model)\n"
    "  --weights W       the weights file (default: the .graph path with .safetensors)\n"
    "External data files must lie inside the model's folder.\n";

/* `path` with its extension replaced by ext; malloc'd. */
static char *with_ext(const char *path, const char *ext) {
  const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
  size_t n = dot && (!slash || dot > slash) ? (size_t)(dot - path) : strlen(path);
  char *s = malloc(n + strlen(ext) + 1);
  if (s) {
    memcpy(s, path, n);
    strcpy(s + n, ext);
  }
  return s;
}

/* graphc import: ONNX model to .graph and safetensors. */
int cli_cmd_import(int argc, char **argv, const char *usage_common) {
  const char *in = NULL, *out = NULL, *weights = NULL;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(usage_import, stdout);
      return 0;
    } else if ((strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0 || strcmp(a, "--weights") == 0) &&
               i + 1 < argc) {
      if (a[2] == 'w') weights = argv[++i];
      else out = argv[++i];
    } else if (strncmp(a, "--output=", 9) == 0) {
      out = a + 9;
    } else if (strncmp(a, "--weights=", 10) == 0) {
      weights = a + 10;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "graphc: unknown or incomplete option '%s'\n%s", a, usage_import);
      return 1;
    } else if (!in) {
      in = a;
    } else {
      fprintf(stderr, "graphc: unexpected argument '%s'\n", a);
      return 1;
    }
  }
  if (!in) {
    fprintf(stderr, "graphc: no input file\n%s", usage_import);
    return 1;
  }
  char *gpath = out ? strdup(out) : with_ext(in, ".graph");
  char *wpath = weights ? strdup(weights) : gpath ? with_ext(gpath, ".safetensors") : NULL;
  if (!gpath || !wpath) {
    free(gpath);
    free(wpath);
    fprintf(stderr, "graphc: out of memory\n");
    return 2;
  }
  gc_diags d;
  gc_diags_init(&d, in, NULL, 0);
  int rc = gc_onnx_import_file(in, gpath, wpath, NULL, &d) == 0 ? 0 : 1;
  int code = report_diags(&d);
  if (rc == 0) {
    struct stat st;
    printf("%s: wrote %s%s%s\n", in, gpath, stat(wpath, &st) == 0 ? " and " : "",
           stat(wpath, &st) == 0 ? wpath : "");
  }
  gc_diags_free(&d);
  free(gpath);
  free(wpath);
  return rc == 0 ? 0 : (code ? code : 1);
}

/* ---- .pb tensors ------------------------------------------------------------------------------------ */

/* Read a whole file (malloc'd); NULL with a message on failure. */
static void *slurp(const char *path, size_t *len) {
  gc_diags d;
  gc_diags_init(&d, path, NULL, 0);
  void *p = gc_read_file(path, len, &d);
  if (!p) report_diags(&d);
  gc_diags_free(&d);
  return p;
}

/* Load an ONNX TensorProto file into a host tensor (data malloc'd). */
static int load_pb(const char *path, graphc_tensor_t *t) {
  size_t len;
  void *bytes = slurp(path, &len);
  if (!bytes) return -1;
  gc_arena a;
  gc_arena_init(&a);
  gc_diags d;
  gc_diags_init(&d, path, NULL, 0);
  gc_onnx_tensor ot;
  int rc = -1;
  memset(t, 0, sizeof *t);
  if (gc_onnx_tensor_parse(bytes, len, &a, &ot, &d) != 0) {
    report_diags(&d);
  } else if (gc_onnx_dtype(ot.data_type) < 0) {
    fprintf(stderr, "graphc: error: %s: element type %s is not supported\n", path,
            gc_onnx_type_name(ot.data_type));
  } else if (ot.rank > GRAPHC_MAX_RANK || ot.external || ot.numel < 0) {
    fprintf(stderr, "graphc: error: %s: rank %d or external data is not supported\n", path, ot.rank);
  } else {
    t->dtype = (graphc_dtype_t)gc_onnx_dtype(ot.data_type);
    t->rank = ot.rank;
    for (int i = 0; i < ot.rank; i++) t->dims[i] = ot.dims[i];
    t->nbytes = (size_t)ot.numel * graphc_dtype_size(t->dtype);
    if (ot.nbytes != t->nbytes || (t->nbytes && !ot.data)) {
      fprintf(stderr, "graphc: error: %s: %zu bytes of data for %zu expected\n", path, ot.nbytes,
              t->nbytes);
    } else if ((t->data = malloc(t->nbytes ? t->nbytes : 1))) {
      if (t->nbytes) memcpy(t->data, ot.data, t->nbytes);
      rc = 0;
    }
  }
  gc_diags_free(&d);
  gc_arena_free(&a);
  free(bytes);
  return rc;
}

/* "f32[2, 3]" into buf. */
static const char *type_str(char *buf, size_t n, graphc_dtype_t dt, int rank, const int64_t *dims) {
  int k = snprintf(buf, n, "%s[", graphc_dtype_name(dt));
  for (int i = 0; i < rank && k < (int)n; i++)
    k += snprintf(buf + k, n - (size_t)k, "%s%lld", i ? ", " : "", (long long)dims[i]);
  if (k < (int)n) snprintf(buf + k, n - (size_t)k, "]");
  return buf;
}

/* Compare one output with its expected tensor; prints mismatches; 0 when equal. */
static int compare(const char *name, const graphc_tensor_t *got, const graphc_tensor_t *exp) {
  char a[128], b[128];
  if (got->dtype != exp->dtype || got->rank != exp->rank ||
      memcmp(got->dims, exp->dims, (size_t)got->rank * sizeof *got->dims) != 0) {
    printf("output %%%s: got %s, expected %s\n", name,
           type_str(a, sizeof a, got->dtype, got->rank, got->dims),
           type_str(b, sizeof b, exp->dtype, exp->rank, exp->dims));
    return 1;
  }
  int64_t n = 1, bad = 0;
  for (int i = 0; i < got->rank; i++) n *= got->dims[i];
  int fl = gc_dtype_is_float(got->dtype);
  double worst = 0;
  for (int64_t i = 0; i < n; i++) {
    int ok;
    double g = 0, e = 0;
    if (got->dtype == GRAPHC_DTYPE_I64) {
      int64_t gi = ((const int64_t *)got->data)[i], ei = ((const int64_t *)exp->data)[i];
      ok = gi == ei;
      g = (double)gi, e = (double)ei;
    } else {
      g = gc_load_f64(got->data, got->dtype, i);
      e = gc_load_f64(exp->data, exp->dtype, i);
      if (!fl) ok = g == e;
      else if (isnan(e) || isnan(g)) ok = isnan(e) && isnan(g);
      else if (isinf(e) || isinf(g)) ok = g == e;
      else ok = fabs(g - e) <= PB_ATOL + PB_RTOL * fabs(e);
    }
    if (!ok) {
      if (bad < 10) printf("  %%%s[%lld]: got %.9g, expected %.9g\n", name, (long long)i, g, e);
      if (fl && !isnan(g - e) && fabs(g - e) > worst) worst = fabs(g - e);
      bad++;
    }
  }
  if (bad) {
    printf("output %%%s: %lld of %lld elements differ", name, (long long)bad, (long long)n);
    if (fl) printf(" (max abs error %.3g)", worst);
    printf("\n");
  }
  return bad ? 1 : 0;
}

/* Bind the entry graph's symbolic dims from the input tensors' shapes, using
 * the .graph text's argument types. */
static int bind_from_inputs(graphc_model_t *m, const char *gpath, const graphc_tensor_t *in, int n) {
  size_t len;
  char *text = slurp(gpath, &len);
  if (!text) return -1;
  gc_diags d;
  gc_diags_init(&d, gpath, text, len);
  gc_module *mod = gc_parse(gpath, text, len, &d);
  int rc = 0;
  if (mod && mod->n_graphs) {
    gc_graph *g = mod->graphs[0];
    for (int i = 0; i < g->n_args && i < n && rc == 0; i++)
      for (int k = 0; k < g->args[i]->type.rank && k < in[i].rank; k++) {
        int64_t dd = g->args[i]->type.dims[k];
        if (!GC_DIM_IS_SYM(dd)) continue;
        graphc_error_t err;
        if (graphc_model_bind(m, g->sym_names[GC_DIM_SYM_INDEX(dd)], in[i].dims[k], &err) !=
            GRAPHC_STATUS_OK) {
          fprintf(stderr, "graphc: error: %s\n", err.message);
          rc = -1;
          break;
        }
      }
  }
  gc_module_free(mod);
  gc_diags_free(&d);
  free(text);
  return rc;
}

/* Compile the model, run it on .pb inputs and compare with .pb outputs.
 * Returns the exit code; *mismatch set when outputs differ. */
static int run_pb(graphc_context_t *ctx, graphc_model_t *m, const graphc_compile_options_t *copts,
                  const char *gpath, int n_in, char **in_paths, int n_exp, char **exp_paths,
                  int quiet) {
  graphc_tensor_t in[MAX_PB], exp[MAX_PB], *out = NULL;
  int rc = 1, li = 0, le = 0;
  size_t n_out = 0;
  graphc_executable_t *exe = NULL;
  graphc_error_t err;
  memset(in, 0, sizeof in);
  memset(exp, 0, sizeof exp);
  for (; li < n_in; li++)
    if (load_pb(in_paths[li], &in[li]) != 0) goto done;
  for (; le < n_exp; le++)
    if (load_pb(exp_paths[le], &exp[le]) != 0) goto done;
  if (gpath && bind_from_inputs(m, gpath, in, n_in) != 0) goto done;
  graphc_status_t st = graphc_compile(m, copts, &exe, &err);
  if (st == GRAPHC_STATUS_OK) {
    n_out = graphc_executable_num_outputs(exe);
    if ((size_t)n_in != graphc_executable_num_inputs(exe)) {
      fprintf(stderr, "graphc: error: the graph takes %zu inputs; %d .pb files given\n",
              graphc_executable_num_inputs(exe), n_in);
      goto done;
    }
    if (n_exp && (size_t)n_exp != n_out) {
      fprintf(stderr, "graphc: error: the graph returns %zu outputs; %d expected .pb files given\n",
              n_out, n_exp);
      goto done;
    }
    out = calloc(n_out + 1, sizeof *out);
    if (!out) goto done;
    for (size_t i = 0; i < n_out && st == GRAPHC_STATUS_OK; i++) {
      graphc_tensor_info_t info;
      graphc_executable_output_info(exe, i, &info);
      out[i].dtype = info.dtype;
      out[i].rank = info.rank;
      memcpy(out[i].dims, info.dims, sizeof out[i].dims);
      out[i].nbytes = info.nbytes;
      if (!(out[i].data = malloc(info.nbytes ? info.nbytes : 1))) st = GRAPHC_STATUS_OUT_OF_MEMORY;
    }
    if (st == GRAPHC_STATUS_OK) st = graphc_executable_run(exe, in, (size_t)n_in, out, n_out, &err);
  }
  if (st != GRAPHC_STATUS_OK) {
    rc = cli_report(ctx, st, &err);
    goto done;
  }
  int bad = 0;
  for (size_t i = 0; i < n_out; i++) {
    graphc_tensor_info_t info;
    graphc_executable_output_info(exe, i, &info);
    if ((int)i < n_exp) bad |= compare(info.name, &out[i], &exp[i]);
  }
  const char *bk = graphc_backend_name(graphc_executable_backend(exe));
  if (!quiet || bad)
    printf("%s: %zu output%s %s on %s\n", bad ? "FAIL" : "ok", n_out, n_out == 1 ? "" : "s",
           n_exp ? (bad ? "differ" : "match") : "computed", bk);
  rc = bad ? 1 : 0;
done:
  for (int i = 0; i < li; i++) free(in[i].data);
  for (int i = 0; i < le; i++) free(exp[i].data);
  for (size_t i = 0; out && i < n_out; i++) free(out[i].data);
  free(out);
  graphc_executable_destroy(exe);
  return rc;
}

/* ---- run-pb ------------------------------------------------------------------------------------------ */

/* graphc run-pb: run a .graph on .pb inputs, compare with .pb outputs. */
int cli_cmd_run_pb(int argc, char **argv, const char *usage_common, const char *usage_compile) {
  char usage[4096];
  snprintf(usage, sizeof usage,
           "usage: graphc run-pb FILE --inputs-pb A.pb ... [--expect-pb B.pb ...] [options]\n"
           "Run FILE's entry graph on ONNX TensorProto inputs; compare with expected outputs\n"
           "(rtol 1e-3, atol 1e-7 for floats, exact otherwise); exit 1 on a mismatch.\n\n"
           "options:\n%s%s",
           usage_common, usage_compile);
  char **rest = calloc((size_t)argc + 1, sizeof *rest), *ins[MAX_PB], *exps[MAX_PB];
  int nr = 0, ni = 0, ne = 0, mode = 0;
  if (!rest) return 2;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--inputs-pb") == 0) mode = 1;
    else if (strcmp(argv[i], "--expect-pb") == 0) mode = 2;
    else if (mode && argv[i][0] != '-') {
      if ((mode == 1 ? ni : ne) == MAX_PB) {
        fprintf(stderr, "graphc: at most %d .pb files\n", MAX_PB);
        free(rest);
        return 1;
      }
      if (mode == 1) ins[ni++] = argv[i];
      else exps[ne++] = argv[i];
    } else {
      mode = 0;
      rest[nr++] = argv[i];
    }
  }
  cli_opts o;
  int rc = cli_parse(nr, rest, &o, usage);
  free(rest);
  if (rc != 0) return 1;
  if (o.help) return 0;
  graphc_context_t *ctx;
  if (graphc_context_create(&ctx) != GRAPHC_STATUS_OK) return 2;
  graphc_error_t err;
  graphc_model_t *m = NULL;
  graphc_status_t st = cli_load(ctx, &o, &m, &err);
  rc = st == GRAPHC_STATUS_OK ? run_pb(ctx, m, &o.copts, o.n_binds ? NULL : o.file, ni, ins, ne, exps, 0)
                              : cli_report(ctx, st, &err);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
  return rc;
}

/* ---- run-onnx-test --------------------------------------------------------------------------------- */

/* Paths DIR/prefix_0.pb, DIR/prefix_1.pb, ... that exist; returns the count. */
static int list_pb(const char *dir, const char *prefix, char **out) {
  int n = 0;
  for (; n < MAX_PB; n++) {
    char p[4096];
    if (snprintf(p, sizeof p, "%s/%s_%d.pb", dir, prefix, n) >= (int)sizeof p) break;
    struct stat st;
    if (stat(p, &st) != 0) break;
    if (!(out[n] = strdup(p))) break;
  }
  return n;
}

/* Remove the import's temporary folder. */
static void remove_tmp(const char *tmp) {
  DIR *dd = opendir(tmp);
  if (dd) {
    struct dirent *e;
    while ((e = readdir(dd))) {
      if (e->d_name[0] == '.') continue;
      char p[4096];
      snprintf(p, sizeof p, "%s/%s", tmp, e->d_name);
      unlink(p);
    }
    closedir(dd);
  }
  rmdir(tmp);
}

/* The input .pb files of a data set as ONNX tensors, for freezing inputs. */
typedef struct pb_set {
  gc_arena arena;
  void *bytes[MAX_PB];
  gc_onnx_tensor t[MAX_PB];
  int n;
} pb_set;

/* Free the parsed inputs of a data set. */
static void pb_set_free(pb_set *p) {
  for (int i = 0; i < p->n; i++) free(p->bytes[i]);
  gc_arena_free(&p->arena);
}

/* Parse every input .pb (errors are left to load_pb later: unparsable ones are skipped). */
static void pb_set_load(pb_set *p, char **paths, int n) {
  memset(p, 0, sizeof *p);
  gc_arena_init(&p->arena);
  for (; p->n < n; p->n++) {
    size_t len;
    gc_diags d;
    gc_diags_init(&d, paths[p->n], NULL, 0);
    p->bytes[p->n] = slurp(paths[p->n], &len);
    if (!p->bytes[p->n] || gc_onnx_tensor_parse(p->bytes[p->n], len, &p->arena, &p->t[p->n], &d) != 0)
      memset(&p->t[p->n], 0, sizeof p->t[p->n]);
    gc_diags_free(&d);
  }
}

/* Import DIR/model.onnx into tmp (inputs frozen where needed), run one data set. */
static int run_data_set(const cli_opts *o, const char *tmp, const char *dir, int verbose,
                        int *froze) {
  char model[4096], gpath[4096], wpath[4096];
  snprintf(model, sizeof model, "%s/model.onnx", o->file);
  snprintf(gpath, sizeof gpath, "%s/model.graph", tmp);
  snprintf(wpath, sizeof wpath, "%s/model.safetensors", tmp);
  char *ins[MAX_PB], *exps[MAX_PB];
  int ni = list_pb(dir, "input", ins), ne = list_pb(dir, "output", exps), rc;
  pb_set ps;
  pb_set_load(&ps, ins, ni);
  gc_onnx_options opts = {.n_inputs = ps.n, .inputs = ps.t, .froze = froze};
  gc_diags d;
  gc_diags_init(&d, model, NULL, 0);
  int ok = gc_onnx_import_file(model, gpath, wpath, &opts, &d) == 0;
  rc = report_diags(&d);
  gc_diags_free(&d);
  pb_set_free(&ps);
  if (ok) {
    if (verbose) {
      size_t len;
      char *text = slurp(gpath, &len);
      if (text) fwrite(text, 1, len, stdout);
      free(text);
    }
    graphc_context_t *ctx;
    if (graphc_context_create(&ctx) != GRAPHC_STATUS_OK) {
      rc = 2;
    } else {
      graphc_error_t err;
      graphc_model_t *m = NULL;
      graphc_status_t lst = graphc_model_load_file(ctx, gpath, &m, &err);
      rc = lst == GRAPHC_STATUS_OK ? run_pb(ctx, m, &o->copts, gpath, ni, ins, ne, exps, 1)
                                   : cli_report(ctx, lst, &err);
      graphc_model_destroy(m);
      graphc_context_destroy(ctx);
    }
  } else if (!rc) {
    rc = 1;
  }
  for (int i = 0; i < ni; i++) free(ins[i]);
  for (int i = 0; i < ne; i++) free(exps[i]);
  return rc;
}

/* graphc run-onnx-test: import, run and compare every data set of a node test. */
int cli_cmd_run_onnx_test(int argc, char **argv, const char *usage_common, const char *usage_compile) {
  char usage[4096];
  snprintf(usage, sizeof usage,
           "usage: graphc run-onnx-test DIR [options]\n"
           "Import DIR/model.onnx (an ONNX backend test), run it on every\n"
           "DIR/test_data_set_N/input_*.pb and compare with output_*.pb.\n"
           "Inputs the model needs as constants (shapes, axes, pads) are frozen to the\n"
           "data set's values (graphc has no dynamic shapes); the result says so.\n"
           "Exit 0 pass, 1 mismatch or error, 2 internal error, 3 unsupported.\n\noptions:\n"
           "  --data-set N      only test_data_set_N\n"
           "  --keep            keep the imported .graph (its folder is printed)\n"
           "  -v                print the imported .graph\n%s",
           usage_compile);
  char **rest = calloc((size_t)argc + 1, sizeof *rest);
  int nr = 0, keep = 0, verbose = 0, only = -1;
  if (!rest) return 2;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--keep") == 0) keep = 1;
    else if (strcmp(argv[i], "-v") == 0) verbose = 1;
    else if (strcmp(argv[i], "--data-set") == 0 && i + 1 < argc) only = atoi(argv[++i]);
    else rest[nr++] = argv[i];
  }
  cli_opts o;
  int rc = cli_parse(nr, rest, &o, usage);
  free(rest);
  if (rc != 0) return 1;
  if (o.help) return 0;
  char tmp[] = "/tmp/graphc-onnx-XXXXXX";
  if (!mkdtemp(tmp)) {
    fprintf(stderr, "graphc: error: cannot create a temporary folder: %s\n", strerror(errno));
    return 1;
  }
  int sets = 0, worst = 0, froze = 0;
  for (int s = 0; s < 1000; s++) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/test_data_set_%d", o.file, s);
    struct stat st;
    if (stat(dir, &st) != 0) break;
    if (only >= 0 && s != only) continue;
    int fz = 0, r = run_data_set(&o, tmp, dir, verbose, &fz);
    froze |= fz;
    if (r) printf("test_data_set_%d: failed\n", s);
    if (r && (worst == 0 || r == 2)) worst = r;
    sets++;
    if (r == EXIT_UNSUPPORTED) break;
  }
  if (!sets) {
    fprintf(stderr, "graphc: error: %s has no test_data_set_N folder\n", o.file);
    worst = 1;
  } else if (!worst) {
    printf("ok: %s (%d data set%s%s)\n", o.file, sets, sets == 1 ? "" : "s",
           froze ? "; inputs used as shapes frozen to the test data" : "");
  }
  if (keep) printf("imported into %s\n", tmp);
  else remove_tmp(tmp);
  return worst;
}
