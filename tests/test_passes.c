/* test_passes.c - graph-level passes: simplify, fold, cse, recognize, dce and the pass manager.
 *
 *   golden        every tests/passes/NN_name.graph runs through the pipeline and
 *                 its printed IR must equal the file's expected block exactly
 *                 (GRAPHC_REGEN=1 rewrites the blocks instead: tests/regen_golden.sh)
 *   equivalence   every example and golden file gives the same interpreter
 *                 results with all passes on and all passes off
 *   fold_oracle   every elementwise op on every dtype it accepts, on constants
 *                 with edge values: folded results equal the interpreter's
 *   fold_eval_oracle  the other ops gc_fold_eval evaluates for the ONNX importer
 *                 (reductions, argmax, iota, concat, split, slice, pad, gather,
 *                 transpose, reshape, broadcast) on every dtype, likewise
 *   controls      --disable-pass, unknown pass names, --print-after re-parses,
 *                 stop after a pass, ops before/after stats, fresh names
 *   dot           Graphviz output, clusters, `graphc dot`
 *
 * Golden file format (the pipeline as for the cuda backend): an input graph,
 * optional `# passes: a,b` (run only these), `# bind: B=2, S=3`,
 * `# precision: f16` and `# keep-f32: REGEX` lines (--precision, --keep-f32), then `# ---- expected ----` and the printed
 * module, each line prefixed with "# " ("#" for an empty line).
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "frontend/parser.h"
#include "ir/ir.h"
#include "passes/pipeline.h"
#include "passes/rewrite.h"
#include "interp/interp.h"
#include "driver/exec.h"
#include "testutil.h"

#define EXPECTED_MARK "# ---- expected ----\n"

/* ---- small helpers ------------------------------------------------------------------ */

/* A seed that differs per run (printed by the tests that use it). */
static uint64_t fresh_seed(void) {
  static uint64_t counter;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40)) +
         ++counter * UINT64_C(0x9e3779b97f4a7c15);
}

/* splitmix64: the next pseudo-random number of a stream. */
static uint64_t rnd(uint64_t *s) {
  uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* Uniform double in [lo, hi). */
static double rnd_range(uint64_t *s, double lo, double hi) {
  return lo + (hi - lo) * (double)(rnd(s) >> 11) / 9007199254740992.0;
}

typedef struct pathlist {
  char **v;
  int n;
} pathlist;

/* Sorted *.graph paths in a source directory. */
static pathlist list_graphs(const char *rel) {
  pathlist pl = {0};
  DIR *dp = opendir(tu_src(rel));
  ck_assert_msg(dp != NULL, "cannot open %s", tu_src(rel));
  struct dirent *e;
  while ((e = readdir(dp))) {
    size_t n = strlen(e->d_name);
    if (n < 7 || strcmp(e->d_name + n - 6, ".graph") != 0) continue;
    pl.v = realloc(pl.v, (size_t)(pl.n + 1) * sizeof *pl.v);
    ck_assert_ptr_nonnull(pl.v);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", tu_src(rel), e->d_name);
    pl.v[pl.n++] = strdup(path);
  }
  closedir(dp);
  for (int i = 1; i < pl.n; i++) /* insertion sort: a handful of names */
    for (int j = i; j > 0 && strcmp(pl.v[j - 1], pl.v[j]) > 0; j--) {
      char *t = pl.v[j];
      pl.v[j] = pl.v[j - 1];
      pl.v[j - 1] = t;
    }
  return pl;
}

/* Free a path list. */
static void pathlist_free(pathlist *pl) {
  for (int i = 0; i < pl->n; i++) free(pl->v[i]);
  free(pl->v);
}

/* The value after "# KEY:" on a line of the text before the expected block, trimmed
 * (into out); 0 when absent. */
static int directive(const char *src, const char *key, char *out, size_t cap) {
  char pat[64];
  snprintf(pat, sizeof pat, "\n# %s:", key);
  const char *end = strstr(src, "\n" EXPECTED_MARK);
  const char *p = strstr(src, pat);
  if (!p || (end && p > end)) return 0;
  p += strlen(pat);
  while (*p == ' ') p++;
  size_t n = strcspn(p, "\n");
  while (n && p[n - 1] == ' ') n--;
  snprintf(out, cap, "%.*s", (int)n, p);
  return 1;
}

/* Parse "B=2, S=3" into names/values; returns the count. */
static int parse_binds(const char *s, char names[][32], int64_t *vals, int max) {
  int n = 0;
  while (*s && n < max) {
    while (*s == ' ' || *s == ',') s++;
    if (!*s) break;
    size_t k = strcspn(s, "=");
    ck_assert_msg(s[k] == '=', "bad bind directive '%s'", s);
    snprintf(names[n], 32, "%.*s", (int)k, s);
    char *end;
    vals[n++] = strtoll(s + k + 1, &end, 10);
    s = end;
  }
  return n;
}

/* The comma list of passes NOT in `keep` (for opts.disable_passes). */
static void complement_passes(const char *keep, char *out, size_t cap) {
  out[0] = 0;
  for (int i = 0; gc_pass_names[i]; i++) {
    char pat[64];
    snprintf(pat, sizeof pat, ",%s,", gc_pass_names[i]);
    char list[256];
    if (snprintf(list, sizeof list, ",%s,", keep) >= (int)sizeof list) return;
    for (char *c = list; *c; c++)
      if (*c == ' ') memmove(c, c + 1, strlen(c));
    if (strstr(list, pat)) continue;
    size_t n = strlen(out);
    snprintf(out + n, cap - n, "%s%s", n ? "," : "", gc_pass_names[i]);
  }
}

/* Parse + verify text that must be valid; the module (caller frees). */
static gc_module *parse_verified(const char *name, const char *text) {
  gc_diags d;
  gc_diags_init(&d, name, text, strlen(text));
  gc_module *m = gc_parse(name, text, strlen(text), &d);
  if (m) gc_verify_module(m, &d);
  char *r = gc_diags_render(&d);
  ck_assert_msg(m && d.n_errors == 0, "%s does not parse/verify:\n%s", name, r ? r : "");
  free(r);
  gc_diags_free(&d);
  return m;
}

/* Print a module to a malloc'd string. */
static char *print_module(const gc_module *m) {
  gc_sbuf b = {0};
  gc_print_module(&b, m);
  char *s = gc_sbuf_take(&b);
  ck_assert_ptr_nonnull(s);
  return s;
}

/* Bind "B=2, S=3" on g, specialize and re-verify. */
static void bind_graph(gc_graph *g, const char *binds) {
  char names[8][32];
  int64_t vals[8];
  int n = parse_binds(binds, names, vals, 8);
  for (int i = 0; i < n; i++) {
    int k = -1;
    for (int j = 0; j < g->n_syms; j++)
      if (strcmp(g->sym_names[j], names[i]) == 0) k = j;
    ck_assert_msg(k >= 0, "no symbolic dim %s", names[i]);
    g->sym_values[k] = vals[i];
  }
  gc_diags d;
  gc_diags_init(&d, "bind", NULL, 0);
  ck_assert_int_eq(gc_graph_specialize(g, &d), 0);
  ck_assert_int_eq(gc_verify_graph(g, &d), 0);
  gc_diags_free(&d);
}

/* ---- golden files ------------------------------------------------------------------------ */

/* Run a golden file's input through the pipeline; the printed module (malloc'd). */
static char *run_golden(const char *path, const char *src) {
  gc_module *m = parse_verified(path, src);
  ck_assert_msg(m->n_graphs == 1, "%s: golden files hold one graph", path);
  char binds[256], passes[256], disable[256] = "";
  if (directive(src, "bind", binds, sizeof binds)) bind_graph(m->graphs[0], binds);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_CUDA;  /* every pass runs as for the GPU (layout is cuda-only) */
  char prec[32], keep[256];
  if (directive(src, "precision", prec, sizeof prec)) {
    ck_assert_msg(gc_precision_parse(prec, &o.precision) == 0, "%s: bad precision '%s'", path, prec);
  }
  if (directive(src, "keep-f32", keep, sizeof keep)) o.keep_f32 = keep;
  if (directive(src, "passes", passes, sizeof passes)) {
    complement_passes(passes, disable, sizeof disable);
    o.disable_passes = disable;
  }
  gc_diags d;
  gc_diags_init(&d, path, src, strlen(src));
  gc_sbuf stats = {0};
  int rc = gc_run_pipeline(m->graphs[0], &o, &stats, &d);
  char *r = gc_diags_render(&d);
  ck_assert_msg(rc == 0 && d.n_errors == 0, "%s: pipeline failed:\n%s", path, r ? r : "");
  free(r);
  gc_diags_free(&d);
  gc_sbuf_free(&stats);
  char *out = print_module(m);
  gc_module_free(m);
  return out;
}

/* The expected block of a golden file, decoded (malloc'd), or NULL when absent. */
static char *golden_expected(const char *src) {
  const char *p = strstr(src, "\n" EXPECTED_MARK);
  if (!p) return NULL;
  p += 1 + strlen(EXPECTED_MARK);
  gc_sbuf b = {0};
  while (*p) {
    size_t n = strcspn(p, "\n");
    if (n >= 2 && p[0] == '#' && p[1] == ' ')
      gc_sbuf_printf(&b, "%.*s\n", (int)(n - 2), p + 2);
    else if (n == 1 && p[0] == '#')
      gc_sbuf_putc(&b, '\n');
    else
      ck_abort_msg("bad line in expected block: '%.*s'", (int)n, p);
    p += n + (p[n] == '\n');
  }
  return gc_sbuf_take(&b);
}

/* Rewrite a golden file: its input part, the mark, `actual` as comment lines. */
static void golden_write(const char *path, const char *src, const char *actual) {
  const char *p = strstr(src, "\n" EXPECTED_MARK);
  size_t keep = p ? (size_t)(p - src) + 1 : strlen(src);
  FILE *f = fopen(path, "w");
  ck_assert_msg(f != NULL, "cannot write %s", path);
  fwrite(src, 1, keep, f);
  if (keep && src[keep - 1] != '\n') fputc('\n', f);
  fputs(EXPECTED_MARK, f);
  for (const char *q = actual; *q;) {
    size_t n = strcspn(q, "\n");
    if (n)
      fprintf(f, "# %.*s\n", (int)n, q);
    else
      fputs("#\n", f);
    q += n + (q[n] == '\n');
  }
  ck_assert_int_eq(fclose(f), 0);
}

/* Every golden file's pipeline output equals its expected block (or is rewritten). */
START_TEST(golden) {
  pathlist pl = list_graphs("tests/passes");
  ck_assert_msg(pl.n >= 25, "only %d golden files", pl.n);
  int regen = getenv("GRAPHC_REGEN") && strcmp(getenv("GRAPHC_REGEN"), "1") == 0;
  int failures = 0;
  for (int i = 0; i < pl.n; i++) {
    char *src = tu_read_file(pl.v[i], NULL);
    ck_assert_msg(src != NULL, "cannot read %s", pl.v[i]);
    char *actual = run_golden(pl.v[i], src);
    char *expected = golden_expected(src);
    if (regen) {
      golden_write(pl.v[i], src, actual);
    } else if (!expected) {
      fprintf(stderr, "%s: no expected block (run tests/regen_golden.sh)\n", pl.v[i]);
      failures++;
    } else if (strcmp(expected, actual) != 0) {
      fprintf(stderr, "%s: output differs\n--- expected\n%s--- actual\n%s", pl.v[i], expected,
              actual);
      failures++;
    } else {
      /* The expected text is canonical: it re-parses and prints identically. */
      gc_module *m = parse_verified("expected", expected);
      char *again = print_module(m);
      if (strcmp(again, expected) != 0) {
        fprintf(stderr, "%s: expected block does not re-print identically\n", pl.v[i]);
        failures++;
      }
      free(again);
      gc_module_free(m);
    }
    free(expected);
    free(actual);
    free(src);
  }
  if (regen) fprintf(stderr, "regenerated %d golden files\n", pl.n);
  ck_assert_msg(failures == 0, "%d of %d golden files failed", failures, pl.n);
  pathlist_free(&pl);
}
END_TEST

/* ---- interpreter equivalence: passes on vs off -------------------------------------------- */

/* Is got within the brief's tolerance of ref for dtype t (NaN matches NaN)? */
static int close_enough(gc_dtype t, double got, double ref) {
  if (isnan(ref) || isnan(got)) return isnan(ref) && isnan(got);
  if (isinf(ref) || isinf(got)) return got == ref;
  double tol;
  switch (t) {
    case GRAPHC_DTYPE_F64: tol = 1e-12; break;
    case GRAPHC_DTYPE_F32: tol = 1e-5; break;
    case GRAPHC_DTYPE_F16: tol = 2e-3; break;
    case GRAPHC_DTYPE_BF16: tol = 2e-2; break;
    default: return got == ref;
  }
  return fabs(got - ref) <= tol + tol * fabs(ref);
}

/* Fill a tensor with fresh random data for its dtype (never all zero). */
static void random_fill(void *data, gc_dtype t, int64_t n, uint64_t *s) {
  for (int64_t i = 0; i < n; i++) {
    double v;
    if (gc_dtype_is_float(t))
      v = rnd_range(s, -2.0, 2.0);
    else if (t == GRAPHC_DTYPE_BOOL)
      v = (double)(rnd(s) & 1);
    else if (t == GRAPHC_DTYPE_U8)
      v = (double)(rnd(s) % 11);
    else
      v = (double)(rnd(s) % 11) - 5.0;
    gc_store_f64(data, t, i, v);
  }
  if (n > 0 && t != GRAPHC_DTYPE_BOOL) gc_store_f64(data, t, 0, 1.0);
}

/* Compile `path` with optimize = 0 (interp) and 1 (on backend `run_on`), run both
 * on the same random inputs and weights, and compare every output. binds: "B=2, S=3"
 * or NULL (then every symbolic dim is bound to 2). Optimized for the interpreter,
 * the passes run as for the GPU; for cpu, as for the cpu. */
static void check_equivalence(const char *path, const char *binds_in, graphc_backend_t run_on) {
  uint64_t seed = fresh_seed(), s = seed;
  char *src = tu_read_file(path, NULL);
  ck_assert_ptr_nonnull(src);
  gc_module *pm = parse_verified(path, src);
  gc_graph *pg = pm->graphs[0];
  char binds[256] = "";
  if (binds_in) {
    snprintf(binds, sizeof binds, "%s", binds_in);
  } else {
    for (int i = 0; i < pg->n_syms; i++) {
      size_t n = strlen(binds);
      snprintf(binds + n, sizeof binds - n, "%s%s=2", i ? ", " : "", pg->sym_names[i]);
    }
  }
  int has_params = 0;
  for (gc_op *op = pg->first; op; op = op->next) has_params |= op->opcode == GC_OP_PARAM;
  gc_module_free(pm);

  graphc_context_t *ctx;
  graphc_error_t err;
  graphc_model_t *m;
  ck_assert_int_eq(graphc_context_create(&ctx), 0);
  ck_assert_msg(graphc_model_load_file(ctx, path, &m, &err) == 0, "%s: %s", path, err.message);
  char names[8][32];
  int64_t vals[8];
  int nb = parse_binds(binds, names, vals, 8);
  for (int i = 0; i < nb; i++)
    ck_assert_msg(graphc_model_bind(m, names[i], vals[i], &err) == 0, "%s", err.message);
  if (has_params) {
    char wpath[4096];
    const char *base = strrchr(path, '/');
    snprintf(wpath, sizeof wpath, "%s/eq-%s.safetensors", tu_tmpdir(), base ? base + 1 : path);
    ck_assert_msg(graphc_model_write_random_weights(m, wpath, seed, &err) == 0, "%s", err.message);
    ck_assert_int_eq(graphc_model_set_weights(m, wpath, &err), 0);
  }
  graphc_executable_t *exe[2];
  for (int k = 0; k < 2; k++) {
    graphc_compile_options_t o;
    graphc_compile_options_init(&o);
    o.backend = k ? run_on : GRAPHC_BACKEND_INTERP;
    o.optimize = k;
    /* optimized: the passes as for the GPU (layout and conv-gemm too), run on the interpreter */
    graphc_backend_t passes_for = k && run_on == GRAPHC_BACKEND_INTERP ? GRAPHC_BACKEND_CUDA : GRAPHC_BACKEND_DEFAULT;
    ck_assert_msg(gc_compile_for(m, &o, passes_for, &exe[k], &err) == 0,
                  "%s -O%d: %s\n%s", path, k, err.message, graphc_context_diagnostics(ctx));
  }
  size_t ni = graphc_executable_num_inputs(exe[0]), no = graphc_executable_num_outputs(exe[0]);
  ck_assert_uint_eq(no, graphc_executable_num_outputs(exe[1]));
  graphc_tensor_t *in = calloc(ni + 1, sizeof *in), *out[2];
  for (size_t i = 0; i < ni; i++) {
    graphc_tensor_info_t info;
    graphc_executable_input_info(exe[0], i, &info);
    in[i] = (graphc_tensor_t){.dtype = info.dtype, .rank = info.rank, .nbytes = info.nbytes};
    memcpy(in[i].dims, info.dims, sizeof in[i].dims);
    in[i].data = malloc(info.nbytes + 1);
    random_fill(in[i].data, info.dtype, (int64_t)(info.nbytes / graphc_dtype_size(info.dtype)), &s);
  }
  for (int k = 0; k < 2; k++) {
    out[k] = calloc(no + 1, sizeof *out[k]);
    for (size_t i = 0; i < no; i++) {
      graphc_tensor_info_t info;
      graphc_executable_output_info(exe[k], i, &info);
      out[k][i] = (graphc_tensor_t){.dtype = info.dtype, .rank = info.rank, .nbytes = info.nbytes};
      memcpy(out[k][i].dims, info.dims, sizeof out[k][i].dims);
      out[k][i].data = malloc(info.nbytes + 1);
    }
    ck_assert_msg(graphc_executable_run(exe[k], in, ni, out[k], no, &err) == 0, "%s -O%d: %s", path,
                  k, err.message);
  }
  for (size_t i = 0; i < no; i++) {
    ck_assert_int_eq(out[0][i].dtype, out[1][i].dtype);
    ck_assert_uint_eq(out[0][i].nbytes, out[1][i].nbytes);
    gc_dtype t = out[0][i].dtype;
    int64_t n = (int64_t)(out[0][i].nbytes / graphc_dtype_size(t));
    for (int64_t j = 0; j < n; j++) {
      double ref = gc_load_f64(out[0][i].data, t, j), got = gc_load_f64(out[1][i].data, t, j);
      ck_assert_msg(close_enough(t, got, ref),
                    "%s output %zu element %lld: optimized %.17g, unoptimized %.17g (seed %llu)",
                    path, i, (long long)j, got, ref, (unsigned long long)seed);
    }
  }
  for (size_t i = 0; i < ni; i++) free(in[i].data);
  for (int k = 0; k < 2; k++) {
    for (size_t i = 0; i < no; i++) free(out[k][i].data);
    free(out[k]);
    graphc_executable_destroy(exe[k]);
  }
  free(in);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
  free(src);
}

/* Every example: passes on and off agree. */
START_TEST(equivalence_examples) {
  pathlist pl = list_graphs("examples");
  ck_assert_int_ge(pl.n, 3);
  for (int i = 0; i < pl.n; i++) check_equivalence(pl.v[i], NULL, GRAPHC_BACKEND_INTERP);
  pathlist_free(&pl);
}
END_TEST

/* Every golden file: passes on and off agree. */
START_TEST(equivalence_golden) {
  pathlist pl = list_graphs("tests/passes");
  for (int i = 0; i < pl.n; i++) {
    char *src = tu_read_file(pl.v[i], NULL);
    char binds[256];
    int has = directive(src, "bind", binds, sizeof binds);
    free(src);
    check_equivalence(pl.v[i], has ? binds : NULL, GRAPHC_BACKEND_INTERP);
  }
  pathlist_free(&pl);
}
END_TEST

/* Layout selection (simplify: matmul(transpose(x)) -> matmul(x, transpose_a=true))
 * runs in the pipeline of every backend: as for interp, cpu and cuda, the matmul
 * golden file gives its expected IR (no convs, so no backend-only pass changes it),
 * and the cpu backend's optimized results equal the unoptimized interpreter's. */
START_TEST(matmul_layout_backends) {
  const char *path = tu_src("tests/passes/37_simplify_matmul_transpose.graph");
  char *src = tu_read_file(path, NULL);
  ck_assert_ptr_nonnull(src);
  char *expected = golden_expected(src);
  ck_assert_ptr_nonnull(expected);
  static const graphc_backend_t backends[] = {GRAPHC_BACKEND_INTERP, GRAPHC_BACKEND_CPU, GRAPHC_BACKEND_CUDA};
  for (int i = 0; i < 3; i++) {
    gc_module *m = parse_verified(path, src);
    graphc_compile_options_t o;
    graphc_compile_options_init(&o);
    o.backend = backends[i];
    gc_diags d;
    gc_diags_init(&d, path, src, strlen(src));
    gc_sbuf stats = {0};
    ck_assert_int_eq(gc_run_pipeline(m->graphs[0], &o, &stats, &d), 0);
    char *actual = print_module(m);
    ck_assert_msg(strcmp(actual, expected) == 0, "backend %d:\n%s", (int)backends[i], actual);
    free(actual);
    gc_sbuf_free(&stats);
    gc_diags_free(&d);
    gc_module_free(m);
  }
  free(expected);
  free(src);
  if (gc_backend_cpu.prepare) check_equivalence(path, NULL, GRAPHC_BACKEND_CPU);
}
END_TEST

/* ---- fold against the interpreter --------------------------------------------------------- */

/* A float literal that reads back to v ("nan", "inf", "-inf" included). */
static void put_float(gc_sbuf *b, double v) {
  if (isnan(v)) {
    gc_sbuf_puts(b, "nan");
  } else if (isinf(v)) {
    gc_sbuf_puts(b, v < 0 ? "-inf" : "inf");
  } else {
    char buf[64];
    snprintf(buf, sizeof buf, "%.17g", v);
    if (!strpbrk(buf, ".e")) strcat(buf, ".0");
    gc_sbuf_puts(b, buf);
  }
}

/* A const list of n edge-case and random values for dtype t. */
static void put_const(gc_sbuf *b, const char *name, gc_dtype t, int n, const char *shape,
                      uint64_t *s) {
  static const double fpool[] = {0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 2.5, 3.75, 1e-3, 1e-8,
                                 100.0, 65504.0, 65520.0, 70000.0, 3.4e38, 1e300, NAN,
                                 INFINITY, -INFINITY, 0.1, -7.0, 1.00390625};
  static const long long ipool[] = {0, 1, -1, 2, -2, 7, -7, 127, -128, 255, 256, 65535,
                                    2147483647, -2147483648LL, 4294967296LL, 1000000000000000LL,
                                    4611686018427387903LL, -4611686018427387903LL};
  gc_sbuf_printf(b, "  %%%s = const(value=[", name);
  for (int i = 0; i < n; i++) {
    if (i) gc_sbuf_puts(b, ", ");
    uint64_t r = rnd(s);
    if (t == GRAPHC_DTYPE_BOOL) {
      gc_sbuf_puts(b, r & 1 ? "true" : "false");
    } else if (gc_dtype_is_float(t)) {
      put_float(b, r % 3 ? fpool[(r >> 8) % (sizeof fpool / sizeof *fpool)]
                         : rnd_range(s, -10.0, 10.0));
    } else {
      gc_sbuf_printf(b, "%lld", r % 3 ? ipool[(r >> 8) % (sizeof ipool / sizeof *ipool)]
                                      : (long long)(rnd(s) % 2001) - 1000);
    }
  }
  gc_sbuf_printf(b, "], shape=%s, dtype=%s);\n", shape, graphc_dtype_name(t));
}

/* Compile text at -O0 and -O1 with the interpreter. Returns 0 when it does not
 * verify (dtype not accepted by the op); else runs both, checks that -O1 folded
 * the graph to `want_ops` ops and that every output element is identical. */
static int fold_case(const char *text, int want_ops, uint64_t seed) {
  graphc_context_t *ctx;
  graphc_model_t *m;
  graphc_error_t err;
  ck_assert_int_eq(graphc_context_create(&ctx), 0);
  if (graphc_model_load_string(ctx, "fold.graph", text, strlen(text), &m, &err) != 0) {
    graphc_context_destroy(ctx);
    return 0;
  }
  graphc_executable_t *exe[2];
  void *outs[2];
  graphc_tensor_info_t info;
  for (int k = 0; k < 2; k++) {
    graphc_compile_options_t o;
    graphc_compile_options_init(&o);
    o.backend = GRAPHC_BACKEND_INTERP;
    o.optimize = k;
    ck_assert_msg(graphc_compile(m, &o, &exe[k], &err) == 0, "%s\n%s", err.message, text);
    graphc_executable_output_info(exe[k], 0, &info);
    outs[k] = malloc(info.nbytes);
    graphc_tensor_t t = {.dtype = info.dtype, .rank = info.rank, .data = outs[k], .nbytes = info.nbytes};
    memcpy(t.dims, info.dims, sizeof t.dims);
    ck_assert_msg(graphc_executable_run(exe[k], NULL, 0, &t, 1, &err) == 0, "%s\n%s", err.message,
                  text);
  }
  int before, after;
  const char *st = strstr(graphc_executable_stats(exe[1]), "pipeline: ");
  ck_assert_msg(st && sscanf(st, "pipeline: %d ops before, %d after", &before, &after) == 2,
                "no pipeline stats");
  size_t es = graphc_dtype_size(info.dtype);
  if (after != want_ops) {
    /* Only i64 results beyond the literal range (|v| >= 2^62) may stay unfolded. */
    int unwritable = 0;
    for (size_t j = 0; info.dtype == GRAPHC_DTYPE_I64 && j < info.nbytes / es; j++) {
      int64_t v;
      memcpy(&v, (char *)outs[0] + j * es, sizeof v);
      unwritable |= v >= (INT64_C(1) << 62) || v <= -(INT64_C(1) << 62);
    }
    ck_assert_msg(unwritable, "not folded (%d ops left):\n%s", after, text);
  }
  for (size_t j = 0; j < info.nbytes / es; j++) {
    double a = gc_load_f64(outs[0], info.dtype, (int64_t)j), b = gc_load_f64(outs[1], info.dtype, (int64_t)j);
    int same = (isnan(a) && isnan(b)) || memcmp((char *)outs[0] + j * es, (char *)outs[1] + j * es, es) == 0;
    ck_assert_msg(same, "element %zu: folded %.17g, interpreter %.17g (seed %llu)\n%s", j, b, a,
                  (unsigned long long)seed, text);
  }
  for (int k = 0; k < 2; k++) {
    free(outs[k]);
    graphc_executable_destroy(exe[k]);
  }
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
  return 1;
}

/* Result dtype of an elementwise op on dtype t (cast: `to`). */
static gc_dtype result_dtype(gc_opcode opc, gc_dtype t, gc_dtype to) {
  switch (opc) {
    case GC_OP_EQ: case GC_OP_NE: case GC_OP_LT: case GC_OP_LE: case GC_OP_GT: case GC_OP_GE:
      return GRAPHC_DTYPE_BOOL;
    case GC_OP_CAST: return to;
    default: return t;
  }
}

/* Every elementwise op x dtype (x cast target): folded == interpreted, bit for bit. */
START_TEST(fold_oracle) {
  uint64_t seed = fresh_seed(), s = seed;
  int cases = 0;
  for (int opc = 0; opc < GC_OP_COUNT_; opc++) {
    const gc_op_info *info = &gc_op_infos[opc];
    if (info->kind != GC_KIND_ELEMENTWISE) continue;
    for (int t = 0; t < GRAPHC_DTYPE_COUNT_; t++)
      for (int to = 0; to < (opc == GC_OP_CAST ? GRAPHC_DTYPE_COUNT_ : 1); to++)
        for (int variant = 0; variant < (opc == GC_OP_CLAMP || opc == GC_OP_GELU ? 2 : 1); variant++) {
          gc_sbuf b = {0};
          gc_dtype rt = result_dtype((gc_opcode)opc, (gc_dtype)t, (gc_dtype)to);
          gc_sbuf_printf(&b, "version 1;\ngraph @g() -> (%s[2, 8]) {\n", graphc_dtype_name(rt));
          put_const(&b, "a", (gc_dtype)t, 16, "[2, 8]", &s);
          put_const(&b, "b", (gc_dtype)t, 8, "[8]", &s);
          put_const(&b, "c", GRAPHC_DTYPE_BOOL, 2, "[2, 1]", &s);
          if (opc == GC_OP_SELECT) {
            gc_sbuf_puts(&b, "  %y = select(%c, %a, %b);\n");
          } else if (info->max_in == 2) {
            gc_sbuf_printf(&b, "  %%y = %s(%%a, %%b);\n", info->name);
          } else if (opc == GC_OP_CAST) {
            gc_sbuf_printf(&b, "  %%y = cast(%%a, to=%s);\n", graphc_dtype_name((gc_dtype)to));
          } else if (opc == GC_OP_CLAMP) {
            gc_sbuf_puts(&b, variant ? "  %y = clamp(%a, min=-3, max=2.5);\n"
                                     : "  %y = clamp(%a, min=-1.5);\n");
          } else if (opc == GC_OP_GELU) {
            gc_sbuf_puts(&b, variant ? "  %y = gelu(%a, approximate=\"tanh\");\n"
                                     : "  %y = gelu(%a);\n");
          } else {
            gc_sbuf_printf(&b, "  %%y = %s(%%a);\n", info->name);
          }
          gc_sbuf_puts(&b, "  return %y;\n}\n");
          char *text = gc_sbuf_take(&b);
          cases += fold_case(text, 1, seed);
          free(text);
        }
  }
  ck_assert_msg(cases > 200, "only %d fold cases verified", cases);
  if (getenv("GRAPHC_TEST_VERBOSE")) fprintf(stderr, "fold_oracle: %d cases (seed %llu)\n", cases, (unsigned long long)seed);
}
END_TEST

/* The list limit: 4096 elements fold, 4098 do not. */
START_TEST(fold_limit) {
  for (int n = 2048; n <= 2049; n++) {
    char text[512];
    snprintf(text, sizeof text,
             "version 1;\ngraph @g() -> (f32[%d, 2]) {\n  %%c = const(value=[1.0, 2.0]);\n"
             "  %%y = broadcast(%%c, shape=[%d, 2]);\n  return %%y;\n}\n", n, n);
    gc_module *m = parse_verified("limit", text);
    gc_diags d;
    gc_diags_init(&d, "limit", text, strlen(text));
    int changes = gc_pass_fold(m->graphs[0], &d);
    ck_assert_int_eq(d.n_errors, 0);
    ck_assert_int_eq(changes, n == 2048 ? 1 : 0);
    const gc_op *last = m->graphs[0]->last;
    ck_assert_int_eq(last->opcode, n == 2048 ? GC_OP_CONST : GC_OP_BROADCAST);
    if (n == 2048) {
      const gc_attr *v = gc_op_attr(last, "value");
      ck_assert_int_eq(v->u.list.n, 4096);
      ck_assert(v->u.list.items[4094].u.f == 1.0 && v->u.list.items[4095].u.f == 2.0);
    }
    gc_diags_free(&d);
    gc_module_free(m);
  }
}
END_TEST

/* ---- gc_fold_eval against the interpreter ------------------------------------------------- */

/* Element i of c written into a buffer of c's dtype (exact: c holds dtype values). */
static void cval_store(const gc_cval *c, void *buf, int64_t i) {
  gc_scalar e = c->e[c->splat ? 0 : i];
  if (gc_dtype_is_float(c->type.dtype)) gc_store_f64(buf, c->type.dtype, i, e.f);
  else if (c->type.dtype == GRAPHC_DTYPE_I64) memcpy((int64_t *)buf + i, &e.i, sizeof e.i);
  else gc_store_f64(buf, c->type.dtype, i, (double)e.i);
}

/* Parse and verify text; evaluate its last op with gc_fold_eval (operands read
 * from their const ops) and run the graph, which returns that op's results, in
 * the interpreter. 0 when it does not verify (a dtype the op does not accept);
 * else every result must be identical, bit for bit. */
static int fold_eval_case(const char *text, uint64_t seed) {
  gc_diags d;
  gc_diags_init(&d, "eval", text, strlen(text));
  gc_module *m = gc_parse("eval", text, strlen(text), &d);
  if (!m || gc_verify_module(m, &d) != 0 || d.n_errors) {
    gc_module_free(m);
    gc_diags_free(&d);
    return 0;
  }
  gc_graph *g = m->graphs[0];
  const gc_op *op = g->last;
  gc_cval in[4], out[4];
  ck_assert_int_le(op->n_operands, 4);
  for (int k = 0; k < op->n_operands; k++)
    ck_assert_int_eq(gc_cval_read(op->operands[k]->def, &in[k]), 1);
  ck_assert_msg(gc_fold_eval(op, in, out, INT64_MAX, &d) == 1, "not evaluated:\n%s", text);
  graphc_tensor_t t[4];
  memset(t, 0, sizeof t);
  for (int r = 0; r < op->n_results; r++) {
    t[r].dtype = op->results[r]->type.dtype;
    t[r].nbytes = (size_t)gc_type_numel(&op->results[r]->type) * graphc_dtype_size(t[r].dtype);
    t[r].data = malloc(t[r].nbytes);
  }
  ck_assert_int_eq(gc_interp_run(g, NULL, NULL, 0, t, op->n_results, &d), GRAPHC_STATUS_OK);
  for (int r = 0; r < op->n_results; r++) {
    size_t es = graphc_dtype_size(t[r].dtype);
    char *mine = malloc(t[r].nbytes);
    for (int64_t i = 0; i < (int64_t)(t[r].nbytes / es); i++) {
      cval_store(&out[r], mine, i);
      ck_assert_msg(memcmp(mine + i * es, (char *)t[r].data + i * es, es) == 0,
                    "result %d element %lld: evaluated %.17g, interpreter %.17g (seed %llu)\n%s",
                    r, (long long)i, gc_load_f64(mine, t[r].dtype, i),
                    gc_load_f64(t[r].data, t[r].dtype, i), (unsigned long long)seed, text);
    }
    free(mine);
    free(t[r].data);
    gc_cval_free(&out[r]);
  }
  for (int k = 0; k < op->n_operands; k++) gc_cval_free(&in[k]);
  gc_module_free(m);
  gc_diags_free(&d);
  return 1;
}

/* The ops gc_fold_eval evaluates beyond the elementwise ones (those are in
 * fold_oracle), on every dtype: evaluated == interpreted, bit for bit; and a
 * gather index out of range is the interpreter's error. */
START_TEST(fold_eval_oracle) {
  static const char *const ops[] = {
      "reduce_sum(%a, axes=[1])", "reduce_sum(%a)", "reduce_max(%a, axes=[0, 2], keepdims=true)",
      "reduce_min(%a, axes=[2])", "reduce_mean(%a, axes=[-1, 0])", "argmax(%a, axis=1)",
      "argmax(%a)", "iota(shape=[2, 3, 4], axis=1, dtype=$T)", "concat(%a, %b, axis=1)",
      "split(%a, axis=1, sizes=[1, 2])", "slice(%a, start=[0, -2, 1], end=[2, 3, 4], step=[1, 1, 2])",
      "pad(%a, pads=[1, 0, 0, 0, 2, 1])", "pad(%a, pads=[0, 1, 0, 1, 0, 2], value=3)",
      "gather(%a, %i, axis=1)", "gather(%a, %j)", "transpose(%a, perm=[2, 0, 1])",
      "reshape(%a, shape=[4, 6])", "broadcast(%c, shape=[2, 3, 4])"};
  uint64_t seed = fresh_seed(), s = seed;
  int cases = 0;
  for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
    for (int t = 0; t < GRAPHC_DTYPE_COUNT_; t++) {
      const char *tn = graphc_dtype_name((gc_dtype)t), *op = ops[o], *tp = strstr(op, "$T");
      int split = strncmp(op, "split", 5) == 0;
      gc_sbuf body = {0};
      put_const(&body, "a", (gc_dtype)t, 24, "[2, 3, 4]", &s);
      put_const(&body, "b", (gc_dtype)t, 16, "[2, 2, 4]", &s);
      put_const(&body, "c", (gc_dtype)t, 3, "[3, 1]", &s);
      gc_sbuf_puts(&body, "  %i = const(value=[-1, 0, 2, 1], shape=[2, 2], dtype=i64);\n");
      gc_sbuf_puts(&body, "  %j = const(value=[1, -2, 0], dtype=i32);\n");
      gc_sbuf_puts(&body, split ? "  %y, %z = " : "  %y = ");
      if (tp) gc_sbuf_printf(&body, "%.*s%s%s;\n", (int)(tp - op), op, tn, tp + 2);
      else gc_sbuf_printf(&body, "%s;\n", op);
      /* The result types are the verifier's: verify once returning %a, read them. */
      gc_sbuf b = {0};
      gc_sbuf_printf(&b, "version 1;\ngraph @g() -> (%s[2, 3, 4]) {\n%s  return %%a;\n}\n", tn,
                     body.data);
      gc_diags d;
      gc_diags_init(&d, "eval", b.data, b.len);
      gc_module *m = gc_parse("eval", b.data, b.len, &d);
      if (m && gc_verify_module(m, &d) == 0 && !d.n_errors) {
        const gc_op *last = m->graphs[0]->last;
        gc_sbuf full = {0}, ty = {0};
        for (int r = 0; r < last->n_results; r++) {
          if (r) gc_sbuf_puts(&ty, ", ");
          gc_type_print(&ty, &last->results[r]->type, NULL);
        }
        gc_sbuf_printf(&full, "version 1;\ngraph @g() -> (%s) {\n%s  return %s;\n}\n", ty.data,
                       body.data, split ? "%y, %z" : "%y");
        char *text = gc_sbuf_take(&full);
        cases += fold_eval_case(text, seed);
        free(text);
        gc_sbuf_free(&ty);
      }
      gc_module_free(m);
      gc_diags_free(&d);
      gc_sbuf_free(&b);
      gc_sbuf_free(&body);
    }
  ck_assert_msg(cases > 100, "only %d evaluation cases verified", cases);
  /* An index out of range: not evaluated, the interpreter's message. */
  const char *bad = "version 1;\ngraph @g() -> (f32[2]) {\n  %a = const(value=[1.0, 2.0, 3.0]);\n"
                    "  %i = const(value=[0, 3]);\n  %y = gather(%a, %i);\n  return %y;\n}\n";
  gc_module *m = parse_verified("bad", bad);
  const gc_op *op = m->graphs[0]->last;
  gc_cval in[2], out[1];
  for (int k = 0; k < 2; k++) ck_assert_int_eq(gc_cval_read(op->operands[k]->def, &in[k]), 1);
  gc_diags d;
  gc_diags_init(&d, "bad", bad, strlen(bad));
  ck_assert_int_eq(gc_fold_eval(op, in, out, INT64_MAX, NULL), 0);
  ck_assert_int_eq(gc_fold_eval(op, in, out, INT64_MAX, &d), 0);
  ck_assert_int_eq(d.status, GRAPHC_STATUS_RUNTIME_ERROR);
  ck_assert_str_eq(d.items[0].msg, "gather index 3 is out of range for axis 0 of size 3");
  for (int k = 0; k < 2; k++) gc_cval_free(&in[k]);
  gc_diags_free(&d);
  gc_module_free(m);
  if (getenv("GRAPHC_TEST_VERBOSE"))
    fprintf(stderr, "fold_eval_oracle: %d cases (seed %llu)\n", cases, (unsigned long long)seed);
}
END_TEST

/* ---- pipeline controls --------------------------------------------------------------------- */

static const char *const small_graph =
    "version 1;\n"
    "graph @g(%x: f32[4]) -> (f32[4]) {\n"
    "  %one = const(value=1.0);\n"
    "  %two = add(%one, %one);\n"
    "  %a = mul(%x, %two);\n"
    "  %b = mul(%a, %one);\n"
    "  return %b;\n"
    "}\n";

/* Run the pipeline on small_graph with options; returns the printed graph
 * (malloc'd) or NULL with the rendered diagnostics in *diags. */
static char *pipeline_text(const graphc_compile_options_t *o, const char *stop, char **diags,
                           char **stats) {
  gc_module *m = parse_verified("small", small_graph);
  gc_diags d;
  gc_diags_init(&d, "small", small_graph, strlen(small_graph));
  gc_sbuf st = {0};
  int rc = gc_run_pipeline_until(m->graphs[0], o, stop, &st, &d);
  char *out = rc == 0 ? print_module(m) : NULL;
  if (diags) *diags = gc_diags_render(&d);
  if (stats)
    *stats = gc_sbuf_take(&st);
  else
    gc_sbuf_free(&st);
  ck_assert_int_eq(rc == 0, d.n_errors == 0);
  if (rc != 0) ck_assert_int_eq(d.status, GRAPHC_STATUS_INVALID_ARGUMENT);
  gc_diags_free(&d);
  gc_module_free(m);
  return out;
}

/* --disable-pass and -O0 keep the rewrites of those passes from happening. */
START_TEST(disable_pass) {
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  char *stats;
  char *all = pipeline_text(&o, NULL, NULL, &stats);
  ck_assert_msg(strstr(all, "%a = mul(%x, %two)") && strstr(all, "%two = const(value=2.0"), "%s", all);
  ck_assert_ptr_null(strstr(all, "%one"));
  ck_assert_msg(strstr(stats, "pipeline: 4 ops before, 2 after"), "%s", stats);
  free(stats);
  free(all);
  o.disable_passes = "fold";
  char *nofold = pipeline_text(&o, NULL, NULL, NULL);
  ck_assert_msg(strstr(nofold, "%two = add(%one, %one)") && strstr(nofold, "return %a;"), "%s", nofold);
  free(nofold);
  o.disable_passes = "simplify,dce";
  char *nosimp = pipeline_text(&o, NULL, NULL, NULL);
  ck_assert_msg(strstr(nosimp, "%b = mul(%a, %one)") && strstr(nosimp, "%two = const"), "%s", nosimp);
  free(nosimp);
  o.disable_passes = NULL;
  o.optimize = 0;
  char *off = pipeline_text(&o, NULL, NULL, &stats);
  ck_assert_msg(strstr(off, "%two = add(%one, %one)") && strstr(stats, "optimizations off"), "%s", off);
  free(off);
  free(stats);
}
END_TEST

/* Unknown pass names are INVALID_ARGUMENT errors naming the valid passes. */
START_TEST(unknown_pass) {
  const char *fields[] = {"disable_passes", "print_after", "print_before", "after"};
  for (int i = 0; i < 4; i++) {
    graphc_compile_options_t o;
    graphc_compile_options_init(&o);
    const char *stop = NULL;
    if (i == 0) o.disable_passes = "cse,bogus";
    if (i == 1) o.print_after = "bogus";
    if (i == 2) o.print_before = "fold,bogus";
    if (i == 3) stop = "bogus";
    char *diags;
    char *out = pipeline_text(&o, stop, &diags, NULL);
    ck_assert_msg(out == NULL, "%s accepted an unknown pass", fields[i]);
    ck_assert_msg(strstr(diags, "unknown pass 'bogus'") &&
                      strstr(diags, "(passes: empty, precision, layout, conv-gemm, reduce-split, qdq-fold, matmul-canon, simplify, fold, cse, recognize, dce"),
                  "%s: %s", fields[i], diags);
    free(diags);
  }
  /* "all" is a name for the print options only. */
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.disable_passes = "all";
  char *diags;
  ck_assert_ptr_null(pipeline_text(&o, NULL, &diags, NULL));
  free(diags);
  /* Through the public API: the status and the message. */
  graphc_context_t *ctx;
  graphc_model_t *m;
  graphc_executable_t *exe = NULL;
  graphc_error_t err;
  ck_assert_int_eq(graphc_context_create(&ctx), 0);
  ck_assert_int_eq(graphc_model_load_string(ctx, "s.graph", small_graph, strlen(small_graph), &m, &err), 0);
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_INTERP;
  o.print_after = "fold,nope";
  ck_assert_int_eq(graphc_compile(m, &o, &exe, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_ptr_null(exe);
  ck_assert_msg(strstr(err.message, "unknown pass 'nope' in --print-after"), "%s", err.message);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
}
END_TEST

/* gc_run_pipeline_until stops after the first run of a pass. */
START_TEST(stop_after) {
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  char *s = pipeline_text(&o, "simplify", NULL, NULL);
  ck_assert_msg(strstr(s, "%two = add(%one, %one)") && strstr(s, "return %a;"), "%s", s);
  free(s);
  s = pipeline_text(&o, "fold", NULL, NULL);
  ck_assert_msg(strstr(s, "%two = const(value=2.0") && strstr(s, "%one = const"), "%s", s);
  free(s);
  s = pipeline_text(&o, "dce", NULL, NULL);
  ck_assert_ptr_null(strstr(s, "%one"));
  free(s);
  o.disable_passes = "fold";
  s = pipeline_text(&o, "fold", NULL, NULL); /* stops where fold would have run */
  ck_assert_msg(strstr(s, "%two = add(%one, %one)"), "%s", s);
  free(s);
}
END_TEST

/* The executable's stats hold ops before/after and, with --time-passes, pass times. */
START_TEST(stats_through_api) {
  graphc_context_t *ctx;
  graphc_model_t *m;
  graphc_executable_t *exe;
  graphc_error_t err;
  ck_assert_int_eq(graphc_context_create(&ctx), 0);
  ck_assert_int_eq(graphc_model_load_string(ctx, "s.graph", small_graph, strlen(small_graph), &m, &err), 0);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_INTERP;
  o.time_passes = 1;
  ck_assert_int_eq(graphc_compile(m, &o, &exe, &err), 0);
  const char *st = graphc_executable_stats(exe);
  ck_assert_msg(strstr(st, "pipeline: 4 ops before, 2 after (2 rounds; empty 0, precision 0, layout 0, conv-gemm 0, reduce-split 0, qdq-fold 0, matmul-canon 0, simplify 1, fold 1, cse 0, recognize 0, dce 1 changes)"),
                "%s", st);
  ck_assert_msg(strstr(st, "pass fold (round 1)") && strstr(st, "pass dce "), "%s", st);
  graphc_executable_destroy(exe);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
}
END_TEST

/* Fresh names come from a counter past the largest numeric name. */
START_TEST(fresh_names) {
  const char *text = "version 1;\ngraph @g(%7: f32[2], %x: f32[2]) -> (f32[2]) {\n"
                     "  %12 = neg(%7);\n  %y = neg(%x);\n  %3 = add(%12, %y);\n  return %3;\n}\n";
  gc_module *m = parse_verified("names", text);
  gc_diags d;
  gc_diags_init(&d, "names", text, strlen(text));
  gc_rewriter rw;
  ck_assert_int_eq(gc_rw_init(&rw, m->graphs[0], &d), 0);
  ck_assert_str_eq(gc_rw_fresh_name(&rw), "13");
  ck_assert_str_eq(gc_rw_fresh_name(&rw), "14");
  gc_type t = {.dtype = GRAPHC_DTYPE_F32, .rank = 1, .dims = {2}};
  gc_op *op = gc_rw_new_op(&rw, GC_OP_EXP, m->graphs[0]->last, 1, m->graphs[0]->args, 0, NULL, &t,
                           NULL, m->graphs[0]->first->loc);
  ck_assert_ptr_nonnull(op);
  ck_assert_str_eq(op->results[0]->name, "15");
  ck_assert_int_eq(gc_rw_finish(&rw), 0);
  ck_assert_int_eq(gc_verify_graph(m->graphs[0], &d), 0);
  gc_diags_free(&d);
  gc_module_free(m);
}
END_TEST

/* Long chains stay linear: 20000 x+0 rewrites and 20000 duplicate exps. */
START_TEST(large_graph) {
  enum { N = 20000 };
  gc_sbuf b = {0};
  gc_sbuf_puts(&b, "version 1;\ngraph @g(%x: f32[4]) -> (f32[4], f32[4]) {\n  %z = const(value=0.0);\n");
  gc_sbuf_puts(&b, "  %v0 = add(%x, %z);\n  %s0 = exp(%x);\n");
  for (int i = 1; i < N; i++)
    gc_sbuf_printf(&b, "  %%v%d = add(%%v%d, %%z);\n  %%e%d = exp(%%x);\n  %%s%d = add(%%s%d, %%e%d);\n",
                   i, i - 1, i, i, i - 1, i);
  gc_sbuf_printf(&b, "  return %%v%d, %%s%d;\n}\n", N - 1, N - 1);
  char *text = gc_sbuf_take(&b);
  gc_module *m = parse_verified("large", text);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  gc_diags d;
  gc_diags_init(&d, "large", text, strlen(text));
  gc_sbuf st = {0};
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ck_assert_int_eq(gc_run_pipeline(m->graphs[0], &o, &st, &d), 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  ck_assert_int_eq(m->graphs[0]->n_ops, N); /* one exp and N - 1 adds of it */
  ck_assert_msg(secs < 3.0, "pipeline took %.2f s on %d ops", secs, 3 * N);
  ck_assert_str_eq(m->graphs[0]->outputs[0]->name, "x");
  gc_sbuf_free(&st);
  gc_diags_free(&d);
  gc_module_free(m);
  free(text);
}
END_TEST

/* The passes accept graphs with unbound symbolic dims (types compare opaquely). */
START_TEST(symbolic_graph) {
  const char *text = "version 1;\ngraph @g<B>(%x: f32[B, 4]) -> (f32[B, 4], f32[B, 4]) {\n"
                     "  %r = reshape(%x, shape=[B, 4]);\n  %one = const(value=1.0, shape=[B, 4]);\n"
                     "  %two = add(%one, %one);\n  %y = mul(%r, %two);\n  %z = mul(%y, %one);\n"
                     "  return %z, %two;\n}\n";
  gc_module *m = parse_verified("sym", text);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  gc_diags d;
  gc_diags_init(&d, "sym", text, strlen(text));
  gc_sbuf st = {0};
  ck_assert_int_eq(gc_run_pipeline(m->graphs[0], &o, &st, &d), 0);
  char *out = print_module(m);
  ck_assert_msg(strstr(out, "%two = const(value=2.0, shape=[B, 4], dtype=f32) : f32[B, 4];") &&
                    strstr(out, "%y = mul(%x, %two) : f32[B, 4];") && strstr(out, "return %y, %two;"),
                "%s", out);
  free(out);
  gc_sbuf_free(&st);
  gc_diags_free(&d);
  gc_module_free(m);
}
END_TEST

/* ---- command line -------------------------------------------------------------------------- */

/* --print-after=all: every printed block re-parses and prints to the same text. */
START_TEST(print_after_reparses) {
  char cmd[8192], *out = NULL;
  snprintf(cmd, sizeof cmd, "%s run %s --backend interp --print-after=all --print-before=dce 2>&1 >/dev/null",
           GRAPHC_CLI, tu_src("tests/passes/27_pipeline_rounds.graph"));
  ck_assert_int_eq(tu_run_cmd(cmd, &out), 0);
  int blocks = 0;
  const char *hdr = "# ----- IR ";
  for (char *p = strstr(out, hdr); p; blocks++) {
    char *body = strchr(p, '\n');
    ck_assert_ptr_nonnull(body);
    body++;
    char *next = strstr(body, hdr);
    char *text = strndup(body, next ? (size_t)(next - body) : strlen(body));
    char *warn = strstr(text, "\n/");  /* the compile's warnings (a path at a line's start) follow the IR */
    if (warn) warn[1] = 0;
    gc_module *m = parse_verified("printed", text);
    char *again = print_module(m);
    ck_assert_msg(strcmp(again, text) == 0, "block %d does not re-print:\n%s\n---\n%s", blocks, text, again);
    free(again);
    gc_module_free(m);
    free(text);
    p = next;
  }
  /* empty and precision (unchanged) + 4 passes x 3 rounds (x*1 appears after round 1's fold,
   * round 3 is quiet) + dce + before dce */
  ck_assert_msg(blocks == 16, "%d blocks:\n%s", blocks, out);
  ck_assert_msg(strstr(out, "# ----- IR after fold (round 2) -----\nversion 1;\n\ngraph @g("), "%s", out);
  ck_assert_msg(strstr(out, "# ----- IR before dce -----"), "%s", out);
  free(out);
}
END_TEST

/* graphc run: an unknown --disable-pass is exit code 1; --stats shows the pipeline line. */
START_TEST(cli_pass_errors) {
  char cmd[8192], *out = NULL;
  snprintf(cmd, sizeof cmd, "%s run %s --backend interp --disable-pass=fold,bogus", GRAPHC_CLI,
           tu_src("tests/passes/27_pipeline_rounds.graph"));
  ck_assert_int_eq(tu_run_cmd(cmd, &out), 1);
  ck_assert_msg(strstr(out, "error: unknown pass 'bogus' in --disable-pass (passes: empty, precision, layout, conv-gemm, reduce-split, qdq-fold, matmul-canon, simplify, fold, cse, recognize, dce, fusion)"),
                "%s", out);
  free(out);
  snprintf(cmd, sizeof cmd, "%s run %s --backend interp --disable-pass=simplify,fold,cse,dce --stats",
           GRAPHC_CLI, tu_src("tests/passes/27_pipeline_rounds.graph"));
  ck_assert_int_eq(tu_run_cmd(cmd, &out), 0);
  ck_assert_msg(strstr(out, "pipeline: 8 ops before, 8 after (1 round; empty 0, precision 0, layout 0, conv-gemm 0, reduce-split 0, qdq-fold 0, matmul-canon 0, simplify 0, fold 0, cse 0, recognize 0, dce 0 changes)"),
                "%s", out);
  free(out);
}
END_TEST

/* Ahead-of-time compiles run the passes for their target: a bundle's convs are GEMMs (NHWC
 * where that pays: f16 with whole 16-byte chunks of channels), and so is the host bundle's
 * (NCHW: no layout pass on the cpu). Before, bundles ran the interpreter's passes and kept
 * direct convolutions. */
START_TEST(aot_passes_for_target) {
  char cmd[8192], *out = NULL;
  snprintf(cmd, sizeof cmd, "%s weights %s --bind N=1 --random -o %s/rw.safetensors", GRAPHC_CLI,
           tu_src("examples/resnet_f16.graph"), tu_tmpdir());
  ck_assert_int_eq(tu_run_cmd(cmd, &out), 0);
  free(out);
  snprintf(cmd, sizeof cmd, "%s compile %s --bind N=1 --weights %s/rw.safetensors -o %s/r.gcx --print-after=dce 2>&1",
           GRAPHC_CLI, tu_src("examples/resnet_f16.graph"), tu_tmpdir(), tu_tmpdir());
  ck_assert_msg(tu_run_cmd(cmd, &out) == 0, "%s", out);
  ck_assert_msg(strstr(out, "layout=\"nhwc\"") && !strstr(out, "conv2d("), "%s", out);
  free(out);
  snprintf(cmd, sizeof cmd, "%s weights %s --bind N=1 --random -o %s/cw.safetensors", GRAPHC_CLI,
           tu_src("examples/cnn.graph"), tu_tmpdir());
  ck_assert_int_eq(tu_run_cmd(cmd, &out), 0);
  free(out);
  snprintf(cmd, sizeof cmd,
           "%s compile %s --bind N=1 --weights %s/cw.safetensors --target host --emit c -o %s/cnn --print-after=dce 2>&1",
           GRAPHC_CLI, tu_src("examples/cnn.graph"), tu_tmpdir(), tu_tmpdir());
  ck_assert_msg(tu_run_cmd(cmd, &out) == 0, "%s", out);
  ck_assert_msg(strstr(out, "im2col(") && !strstr(out, "conv2d(") && !strstr(out, "nhwc"), "%s", out);
  free(out);
}
END_TEST

/* ---- Graphviz --------------------------------------------------------------------------------- */

/* Stand-in fusion groups: exp in group 3, add in group 1, the rest in none. */
static int test_group(void *user, const gc_op *op) {
  (void)user;
  return op->opcode == GC_OP_PARAM ? -1 : op->opcode == GC_OP_EXP ? 3 : op->opcode == GC_OP_ADD ? 1 : -1;
}

/* gc_dot_graph: nodes, escaping, edges, multi-result labels, clusters. */
START_TEST(dot_graph) {
  const char *text = "version 1;\ngraph @g(%x: f32[4], %y: f32[2]) -> (f32[4], f32[2]) {\n"
                     "  param %w: f32[4] = \"a\\\"b\";\n  %c = const(value=0.5);\n"
                     "  %e = exp(%x);\n  %s = add(%e, %w);\n  %t = mul(%s, %c);\n"
                     "  %p, %q = split(%t, axis=0, sizes=[2, 2]);\n  %u = add(%q, %y);\n"
                     "  return %t, %u;\n}\n";
  gc_module *m = parse_verified("dot", text);
  gc_sbuf b = {0};
  gc_dot_graph(&b, m->graphs[0], NULL);
  const char *want[] = {
      "digraph \"g\" {\n",
      "  a0 [label=\"%x\\nf32[4]\", shape=invhouse",
      "  a1 [label=\"%y\\nf32[2]\", shape=invhouse",
      "  n0 [label=\"param %w\\n\\\"a\\\\\\\"b\\\"\\nf32[4]\", shape=box3d",
      "  n1 [label=\"%c = const 0.5\\nf32[]\", shape=box, style=filled",
      "  n2 [label=\"%e = exp\\nf32[4]\", shape=box, style=rounded];\n",
      "  n5 [label=\"%p, %q = split\\nf32[2], f32[2]\"",
      "  a0 -> n2;\n", "  n2 -> n3;\n", "  n0 -> n3;\n", "  n5 -> n6 [label=\"#1\"];\n",
      "  a1 -> n6;\n", "  n4 -> ret [label=\"0\"];\n", "  n6 -> ret [label=\"1\"];\n"};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++)
    ck_assert_msg(strstr(b.data, want[i]), "missing '%s' in:\n%s", want[i], b.data);
  ck_assert_ptr_null(strstr(b.data, "cluster"));
  gc_sbuf_free(&b);
  gc_dot_groups gr = {.group_of = test_group};
  gc_dot_graph(&b, m->graphs[0], &gr);
  const char *c1 = strstr(b.data, "  subgraph cluster_1 {\n    label=\"group 1\";\n    style=dashed;\n"
                                  "    n3 [label=\"%s = add");
  const char *c3 = strstr(b.data, "  subgraph cluster_3 {\n    label=\"group 3\";\n    style=dashed;\n"
                                  "    n2 [label=\"%e = exp");
  ck_assert_msg(c1 && c3 && c1 < c3, "%s", b.data);
  ck_assert_msg(strstr(c1, "    n6 [label=\"%u = add") && strstr(b.data, "\n  n4 [label=\"%t = mul"), "%s", b.data);
  gc_sbuf_free(&b);
  gc_module_free(m);
}
END_TEST

/* graphc dot: full pipeline, --after, -o, --bind, -O0, bad pass name. */
START_TEST(cli_dot) {
  char cmd[16384], *out = NULL, path[1024];
  const char *file = tu_src("tests/passes/27_pipeline_rounds.graph");
  snprintf(cmd, sizeof cmd, "%s dot --help", GRAPHC_CLI);
  int rc = tu_run_cmd(cmd, &out);
  ck_assert_msg(rc == 0 && strstr(out, "usage: graphc dot FILE"),
                "graphc has no dot command (tools/graphc.c must dispatch to cli_cmd_dot):\n%s", out);
  free(out);
  snprintf(cmd, sizeof cmd, "%s dot %s 2>/dev/null", GRAPHC_CLI, file);
  rc = tu_run_cmd(cmd, &out);
  ck_assert_msg(rc == 0 && strncmp(out, "digraph \"g\" {\n", 14) == 0, "%s", out);
  ck_assert_msg(!strstr(out, "= div") && strstr(out, "  a0 -> ret [label=\"1\"];\n"), "%s", out);
  free(out);
  /* After simplify only: the division is still there. To a file with -o. */
  snprintf(path, sizeof path, "%s/g.dot", tu_tmpdir());
  snprintf(cmd, sizeof cmd, "%s dot %s --after=simplify -o %s 2>/dev/null && cat %s", GRAPHC_CLI, file, path, path);
  ck_assert_int_eq(tu_run_cmd(cmd, &out), 0);
  ck_assert_msg(strstr(out, "%q = div\\nf32[]"), "%s", out);
  free(out);
  snprintf(cmd, sizeof cmd, "%s dot %s --after nosuch", GRAPHC_CLI, file);
  ck_assert_int_eq(tu_run_cmd(cmd, &out), 1);
  ck_assert_msg(strstr(out, "unknown pass 'nosuch' in --after (passes: empty, precision, layout, conv-gemm, reduce-split, qdq-fold, matmul-canon, simplify, fold, cse, recognize, dce)"), "%s", out);
  free(out);
  /* Symbolic dims bound with --bind; -O0 keeps the graph as written. */
  snprintf(cmd, sizeof cmd, "%s dot %s --bind B=3 -O0", GRAPHC_CLI, tu_src("examples/mlp.graph"));
  ck_assert_int_eq(tu_run_cmd(cmd, &out), 0);
  ck_assert_msg(strstr(out, "%h = matmul\\nf32[3, 128]") && strstr(out, "param %w1"), "%s", out);
  free(out);
}
END_TEST

/* The suite: golden, equivalence, controls, dot. */
static Suite *passes_suite(void) {
  Suite *s = suite_create("passes");
  TCase *g = tcase_create("golden");
  tcase_add_test(g, golden);
  suite_add_tcase(s, g);
  TCase *e = tcase_create("equivalence");
  tcase_set_timeout(e, 600);
  tcase_add_test(e, equivalence_examples);
  tcase_add_test(e, equivalence_golden);
  tcase_add_test(e, matmul_layout_backends);
  tcase_add_test(e, fold_oracle);
  tcase_add_test(e, fold_limit);
  tcase_add_test(e, fold_eval_oracle);
  suite_add_tcase(s, e);
  TCase *c = tcase_create("controls");
  /* aot_passes_for_target compiles a resnet bundle cold (~2 s alone, more on a loaded machine) */
  tcase_set_timeout(c, 120);
  tcase_add_test(c, disable_pass);
  tcase_add_test(c, unknown_pass);
  tcase_add_test(c, stop_after);
  tcase_add_test(c, stats_through_api);
  tcase_add_test(c, fresh_names);
  tcase_add_test(c, large_graph);
  tcase_add_test(c, symbolic_graph);
  tcase_add_test(c, print_after_reparses);
  tcase_add_test(c, cli_pass_errors);
  tcase_add_test(c, aot_passes_for_target);
  suite_add_tcase(s, c);
  TCase *d = tcase_create("dot");
  tcase_add_test(d, dot_graph);
  tcase_add_test(d, cli_dot);
  suite_add_tcase(s, d);
  return s;
}

int main(void) { return tu_run_suite(passes_suite()); }
