/* test_cpu_compile.c - how the cpu backend compiles (driver/cpu_objects.c): identical
 * kernels compiled once, groups compiled on several threads, the objects in the JIT
 * cache.
 *
 *   dedup_and_threads_random_graphs  random graphs (tests/random_graph_gen.c) compiled
 *       serially without dedup (GRAPHC_COMPILE_THREADS=1, GRAPHC_CPU_DEDUP=0) and with
 *       dedup on 3 threads: outputs bit-identical, both within tolerance of the interpreter;
 *       the cache entries each writes (the objects) are byte-identical across thread counts
 *   dedup_repeated_layers  identical layers share one function (stats), same outputs
 *   cache_hit_corrupt_options  a second compile hits; truncated and bit-flipped entries are
 *       rejected, rebuilt and rewritten; another pipeline gets other keys; a second process
 *       (the graphc command) reads the first one's objects
 *
 * Environment: GRAPHC_TEST_SEED (base seed, printed), GRAPHC_CPU_COMPILE_GRAPHS (graphs, 24).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "cuda_testutil.h"
#include "ir/ir.h"
#include "random_graph_gen.h"

static uint64_t g_seed;

/* A compiled model with host tensors for its I/O. */
typedef struct model_run {
  graphc_context_t *ctx;
  graphc_model_t *m;
  graphc_executable_t *exe;
  size_t ni, no;
  graphc_tensor_t *in, *out;
} model_run;

/* Tensors for exe's I/O (outputs poisoned); inputs filled from seed ('x' values). */
static void alloc_io(model_run *r, uint64_t seed) {
  r->ni = graphc_executable_num_inputs(r->exe);
  r->no = graphc_executable_num_outputs(r->exe);
  r->in = calloc(r->ni + 1, sizeof *r->in);
  r->out = calloc(r->no + 1, sizeof *r->out);
  ck_assert(r->in && r->out);
  for (int pass = 0; pass < 2; pass++)
    for (size_t i = 0; i < (pass ? r->no : r->ni); i++) {
      graphc_tensor_info_t info;
      if (pass)
        graphc_executable_output_info(r->exe, i, &info);
      else
        graphc_executable_input_info(r->exe, i, &info);
      graphc_tensor_t *t = pass ? &r->out[i] : &r->in[i];
      t->dtype = info.dtype;
      t->rank = info.rank;
      memcpy(t->dims, info.dims, sizeof t->dims);
      t->nbytes = info.nbytes;
      t->data = malloc(info.nbytes + 1);
      ck_assert_ptr_nonnull(t->data);
      memset(t->data, 0xa5, info.nbytes + 1);
      if (!pass)
        tu_fill(t->data, info.dtype, (int64_t)(info.nbytes / graphc_dtype_size(info.dtype)), 'x', 4,
                &seed);
    }
}

/* Load text (random weights for params), compile for `be`, make I/O; NULL exe on a
 * compile error (the message in err). */
static graphc_status_t model_open(model_run *r, const char *label, const char *text, graphc_backend_t be,
                                  graphc_error_t *err) {
  memset(r, 0, sizeof *r);
  ck_assert_int_eq(graphc_context_create(&r->ctx), GRAPHC_STATUS_OK);
  graphc_status_t st = graphc_model_load_string(r->ctx, label, text, strlen(text), &r->m, err);
  ck_assert_msg(st == GRAPHC_STATUS_OK, "%s: load: %s\n%s", label, err->message, text);
  if (strstr(text, "param ")) {
    char wpath[4200];
    snprintf(wpath, sizeof wpath, "%s/cc-w-%d.safetensors", tu_tmpdir(), (int)getpid());
    ck_assert_int_eq(graphc_model_write_random_weights(r->m, wpath, 7, err), GRAPHC_STATUS_OK);
    ck_assert_int_eq(graphc_model_set_weights(r->m, wpath, err), GRAPHC_STATUS_OK);
  }
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = be;
  st = graphc_compile(r->m, &o, &r->exe, err);
  if (st == GRAPHC_STATUS_OK) alloc_io(r, 99);
  return st;
}

static void model_run_once(model_run *r, const char *label) {
  graphc_error_t err;
  graphc_status_t st = graphc_executable_run(r->exe, r->in, r->ni, r->out, r->no, &err);
  ck_assert_msg(st == GRAPHC_STATUS_OK, "%s: run: %s", label, err.message);
}

static void model_close(model_run *r) {
  tu_free_tensors(r->in, r->ni);
  tu_free_tensors(r->out, r->no);
  graphc_executable_destroy(r->exe);
  graphc_model_destroy(r->m);
  graphc_context_destroy(r->ctx);
  memset(r, 0, sizeof *r);
}

/* Same inputs in b as in a (both compiled from the same graph). */
static void copy_inputs(const model_run *a, model_run *b) {
  ck_assert_int_eq(a->ni, b->ni);
  for (size_t i = 0; i < a->ni; i++) {
    ck_assert_int_eq(a->in[i].nbytes, b->in[i].nbytes);
    memcpy(b->in[i].data, a->in[i].data, a->in[i].nbytes);
  }
}

/* 1 when every output of a and b is byte-identical. */
static int same_outputs(const model_run *a, const model_run *b) {
  for (size_t i = 0; i < a->no; i++)
    if (a->out[i].nbytes != b->out[i].nbytes || memcmp(a->out[i].data, b->out[i].data, a->out[i].nbytes))
      return 0;
  return 1;
}

/* The cache line of exe's stats: "cpu: cache: H hits, M misses, S stored, E evicted, R rejected". */
typedef struct cache_line {
  long hits, misses, stored, evicted, rejected;
} cache_line;
static cache_line cache_stats(const graphc_executable_t *exe) {
  cache_line c = {-1, -1, -1, -1, -1};
  const char *s = strstr(graphc_executable_stats(exe), "cpu: cache: ");
  ck_assert_msg(s && sscanf(s, "cpu: cache: %ld %*s %ld %*s %ld stored, %ld evicted, %ld rejected",
                            &c.hits, &c.misses, &c.stored, &c.evicted, &c.rejected) == 5,
                "no cache line in stats:\n%s", graphc_executable_stats(exe));
  return c;
}

/* The compile line of exe's stats: "cpu: K kernels, D distinct, O objects (C from the cache)". */
typedef struct compile_line {
  long kernels, distinct, objects, cached;
} compile_line;
static compile_line compiled(const graphc_executable_t *exe) {
  compile_line c = {-1, -1, -1, -1};
  const char *st = graphc_executable_stats(exe);
  for (const char *l = st; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
    if (sscanf(l, "cpu: %ld kernels, %ld distinct, %ld %*s (%ld from the cache)", &c.kernels,
               &c.distinct, &c.objects, &c.cached) == 4)
      return c;
  ck_abort_msg("no compile line in stats:\n%s", st);
  return c;
}

/* Inputs of r from the random graph's arguments (the executable's inputs are its
 * live, used arguments in order). */
static void fill_rg_inputs(const rg_graph *g, model_run *r) {
  int used[RG_MAX_VALS];
  uses(g, used);
  for (int i = 0; i < g->n_outs; i++) used[g->outs[i]]++;
  size_t k = 0;
  for (int i = 0; i < g->n_vals; i++) {
    const rg_val *v = &g->vals[i];
    if (!v->is_arg || v->dead || !used[i]) continue;
    ck_assert_uint_lt(k, r->ni);
    ck_assert_uint_eq(r->in[k].nbytes, (size_t)numel_of(&v->t) * graphc_dtype_size(v->t.dtype));
    rg_fill_input(g, v, r->in[k++].data);
  }
  ck_assert_uint_eq(k, r->ni);
}

/* The ".gcm" entries of dir, sorted; returns their count. */
static int list_entries(const char *dir, char names[][64], int max) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)) != NULL)
    if (strlen(e->d_name) == 36 && strcmp(e->d_name + 32, ".gcm") == 0 && n < max)
      snprintf(names[n++], 64, "%s", e->d_name);
  if (d) closedir(d);
  qsort(names, (size_t)n, 64, (int (*)(const void *, const void *))strcmp);
  return n;
}

static size_t file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (size_t)st.st_size : 0;
}

/* ---- dedup and threads on random graphs --------------------------------------------------- */
START_TEST(dedup_and_threads_random_graphs) {
  const char *env = getenv("GRAPHC_CPU_COMPILE_GRAPHS");
  int graphs = env && atoi(env) > 0 ? atoi(env) : 24;
  rg_graph *g = malloc(sizeof *g);
  ck_assert_ptr_nonnull(g);
  g_max_ops = 60;  /* bigger graphs: more of them split into several objects */
  int compared = 0, files = 0, multi = 0;
  for (int i = 0; i < graphs; i++) {
    uint64_t seed = rmix(g_seed, (uint64_t)i);
    if (generate(g, seed, -1) < 0) continue;
    char *text = graph_text(g, 1);
    ck_assert_ptr_nonnull(text);
    char label[64];
    snprintf(label, sizeof label, "random graph seed %llu", (unsigned long long)seed);
    graphc_error_t err;
    /* serial, every kernel compiled on its own; entries into dir a */
    const char *dir_a = tu_fresh_dir("cc-serial");
    setenv("GRAPHC_CACHE", "on", 1);
    setenv("GRAPHC_CACHE_DIR", dir_a, 1);
    setenv("GRAPHC_COMPILE_THREADS", "1", 1);
    setenv("GRAPHC_CPU_DEDUP", "0", 1);
    model_run ser, par, ref;
    if (model_open(&ser, label, text, GRAPHC_BACKEND_CPU, &err) != GRAPHC_STATUS_OK) {
      /* a graph the cpu backend rejects (test_random_graphs covers those): skip it */
      model_close(&ser);
      free(text);
      continue;
    }
    /* with dedup on 3 threads; entries into dir b, then dir c serially with dedup */
    const char *dir_b = tu_fresh_dir("cc-threads");
    setenv("GRAPHC_CACHE_DIR", dir_b, 1);
    setenv("GRAPHC_COMPILE_THREADS", "3", 1);
    unsetenv("GRAPHC_CPU_DEDUP");
    ck_assert_int_eq(model_open(&par, label, text, GRAPHC_BACKEND_CPU, &err), GRAPHC_STATUS_OK);
    const char *dir_c = tu_fresh_dir("cc-serial-dedup");
    setenv("GRAPHC_CACHE_DIR", dir_c, 1);
    setenv("GRAPHC_COMPILE_THREADS", "1", 1);
    model_run ser_d;
    ck_assert_int_eq(model_open(&ser_d, label, text, GRAPHC_BACKEND_CPU, &err), GRAPHC_STATUS_OK);
    ck_assert_int_le(compiled(par.exe).distinct, compiled(ser.exe).distinct);
    /* the objects do not depend on the thread count */
    char na[64][64], nc[64][64];
    int n_b = list_entries(dir_b, na, 64), n_c = list_entries(dir_c, nc, 64);
    ck_assert_int_eq(n_b, n_c);
    ck_assert_int_eq(n_b, compiled(par.exe).objects);
    multi += n_b > 1;
    for (int k = 0; k < n_b; k++) {
      ck_assert_str_eq(na[k], nc[k]);
      char pb[4200], pc[4200];
      snprintf(pb, sizeof pb, "%s/%s", dir_b, na[k]);
      snprintf(pc, sizeof pc, "%s/%s", dir_c, nc[k]);
      size_t lb = 0, lc = 0;
      char *b = tu_read_file(pb, &lb), *c = tu_read_file(pc, &lc);
      ck_assert_msg(b && c && lb == lc && memcmp(b, c, lb) == 0, "%s: %s differs between 3 and 1 threads",
                    label, na[k]);
      free(b);
      free(c);
      files++;
    }
    /* outputs: bit-identical across the three, and close to the interpreter */
    ck_assert_int_eq(model_open(&ref, label, text, GRAPHC_BACKEND_INTERP, &err), GRAPHC_STATUS_OK);
    fill_rg_inputs(g, &ser);
    copy_inputs(&ser, &par);
    copy_inputs(&ser, &ser_d);
    copy_inputs(&ser, &ref);
    model_run_once(&ser, label);
    model_run_once(&par, label);
    model_run_once(&ser_d, label);
    model_run_once(&ref, label);
    ck_assert_msg(same_outputs(&ser, &par), "%s: dedup + 3 threads differ from serial\n%s", label, text);
    ck_assert_msg(same_outputs(&ser, &ser_d), "%s: dedup differs from no dedup\n%s", label, text);
    ck_assert_int_eq(ser.no, g->n_outs);
    for (size_t k = 0; k < ser.no; k++) {
      const rg_val *ov = &g->vals[g->outs[k]];
      char why[300];
      ck_assert_msg(rg_close(&ref.out[k], &ser.out[k], ov->exact, ov->tol, why, sizeof why),
                    "%s: output %zu differs from the interpreter: %s\n%s", label, k, why, text);
    }
    compared++;
    model_close(&ser);
    model_close(&par);
    model_close(&ser_d);
    model_close(&ref);
    free(text);
  }
  unsetenv("GRAPHC_COMPILE_THREADS");
  unsetenv("GRAPHC_CPU_DEDUP");
  unsetenv("GRAPHC_CACHE_DIR");
  setenv("GRAPHC_CACHE", "off", 1);
  free(g);
  printf("dedup_and_threads_random_graphs: %d of %d graphs compared (%d in several objects), %d "
         "objects byte-identical\n", compared, graphs, multi, files);
  ck_assert_int_ge(compared, graphs / 2);
}
END_TEST

/* Four identical layers (same shapes, different weights): one function per kind of kernel. */
static const char *const layers_src =
    "version 1;\n"
    "graph @layers(%x: f32[8, 64]) -> (f32[8, 64]) {\n"
    "  param %w0: f32[64, 64] = \"w0\";\n  param %b0: f32[64] = \"b0\";\n"
    "  param %w1: f32[64, 64] = \"w1\";\n  param %b1: f32[64] = \"b1\";\n"
    "  param %w2: f32[64, 64] = \"w2\";\n  param %b2: f32[64] = \"b2\";\n"
    "  param %w3: f32[64, 64] = \"w3\";\n  param %b3: f32[64] = \"b3\";\n"
    "  %m0 = matmul(%x, %w0);\n  %a0 = add(%m0, %b0);\n  %h0 = tanh(%a0);\n"
    "  %m1 = matmul(%h0, %w1);\n  %a1 = add(%m1, %b1);\n  %h1 = tanh(%a1);\n"
    "  %m2 = matmul(%h1, %w2);\n  %a2 = add(%m2, %b2);\n  %h2 = tanh(%a2);\n"
    "  %m3 = matmul(%h2, %w3);\n  %a3 = add(%m3, %b3);\n  %h3 = tanh(%a3);\n"
    "  return %h3;\n}\n";

START_TEST(dedup_repeated_layers) {
  setenv("GRAPHC_CACHE", "off", 1);
  graphc_error_t err;
  model_run dd, nd, ref;
  ck_assert_int_eq(model_open(&dd, "layers", layers_src, GRAPHC_BACKEND_CPU, &err), GRAPHC_STATUS_OK);
  setenv("GRAPHC_CPU_DEDUP", "0", 1);
  ck_assert_int_eq(model_open(&nd, "layers", layers_src, GRAPHC_BACKEND_CPU, &err), GRAPHC_STATUS_OK);
  unsetenv("GRAPHC_CPU_DEDUP");
  ck_assert_int_eq(model_open(&ref, "layers", layers_src, GRAPHC_BACKEND_INTERP, &err), GRAPHC_STATUS_OK);
  long kernels = compiled(dd.exe).kernels;
  long distinct = compiled(dd.exe).distinct;
  ck_assert_int_ge(kernels, 4);
  ck_assert_msg(distinct * 4 <= kernels + 3, "%ld kernels, %ld distinct:\n%s", kernels, distinct,
                graphc_executable_stats(dd.exe));
  ck_assert_int_eq(compiled(nd.exe).distinct, kernels);
  copy_inputs(&dd, &nd);
  copy_inputs(&dd, &ref);
  model_run_once(&dd, "layers");
  model_run_once(&nd, "layers");
  model_run_once(&ref, "layers");
  ck_assert(same_outputs(&dd, &nd));
  double atol, rtol;
  tu_tolerance(GRAPHC_DTYPE_F32, 4, &atol, &rtol);
  tu_cmp c = tu_compare(ref.out[0].data, dd.out[0].data, GRAPHC_DTYPE_F32, 8 * 64, atol, rtol);
  ck_assert_msg(c.n_bad == 0, "%lld differ from the interpreter", (long long)c.n_bad);
  model_close(&dd);
  model_close(&nd);
  model_close(&ref);
}
END_TEST

/* ---- the cache ------------------------------------------------------------------------- */
START_TEST(cache_hit_corrupt_options) {
  const char *dir = tu_fresh_dir("cc-cache");
  setenv("GRAPHC_CACHE", "on", 1);
  setenv("GRAPHC_CACHE_DIR", dir, 1);
  graphc_error_t err;
  model_run first, again;
  ck_assert_int_eq(model_open(&first, "layers", layers_src, GRAPHC_BACKEND_CPU, &err), GRAPHC_STATUS_OK);
  long objects = compiled(first.exe).objects;
  ck_assert_int_ge(objects, 1);
  cache_line cl = cache_stats(first.exe);
  ck_assert_int_eq(cl.hits, 0);
  ck_assert_int_eq(cl.misses, objects);
  ck_assert_int_eq(cl.stored, objects);
  model_run_once(&first, "first");
  char names[64][64];
  ck_assert_int_eq(list_entries(dir, names, 64), objects);

  /* a second compile: every object from the cache, the same outputs */
  ck_assert_int_eq(model_open(&again, "layers", layers_src, GRAPHC_BACKEND_CPU, &err), GRAPHC_STATUS_OK);
  cl = cache_stats(again.exe);
  ck_assert_int_eq(cl.hits, objects);
  ck_assert_int_eq(cl.misses, 0);
  ck_assert_int_eq(compiled(again.exe).cached, objects);
  copy_inputs(&first, &again);
  model_run_once(&again, "again");
  ck_assert(same_outputs(&first, &again));
  model_close(&again);

  /* damaged entries: truncated, and one byte flipped; both rejected and rewritten */
  char p0[4200], p1[4200];
  snprintf(p0, sizeof p0, "%s/%s", dir, names[0]);
  size_t whole = file_size(p0);
  ck_assert_int_eq(truncate(p0, (off_t)(whole / 2)), 0);
  if (objects > 1) {
    snprintf(p1, sizeof p1, "%s/%s", dir, names[1]);
    FILE *f = fopen(p1, "r+b");
    ck_assert_ptr_nonnull(f);
    fseek(f, (long)(file_size(p1) / 2), SEEK_SET);
    int ch = fgetc(f);
    fseek(f, (long)(file_size(p1) / 2), SEEK_SET);
    fputc(ch ^ 0x40, f);
    fclose(f);
  }
  long damaged = objects > 1 ? 2 : 1;
  ck_assert_int_eq(model_open(&again, "layers", layers_src, GRAPHC_BACKEND_CPU, &err), GRAPHC_STATUS_OK);
  cl = cache_stats(again.exe);
  ck_assert_int_eq(cl.rejected, damaged);
  ck_assert_int_eq(cl.stored, damaged);
  ck_assert_int_eq(cl.hits, objects - damaged);
  ck_assert_int_eq(compiled(again.exe).cached, objects - damaged);
  copy_inputs(&first, &again);
  model_run_once(&again, "rebuilt");
  ck_assert(same_outputs(&first, &again));
  ck_assert_int_eq(file_size(p0), whole);  /* rewritten whole */
  model_close(&again);

  /* another pipeline: other keys, nothing hit */
  setenv("GRAPHC_CPU_PASSES", "default<O1>", 1);
  ck_assert_int_eq(model_open(&again, "layers", layers_src, GRAPHC_BACKEND_CPU, &err), GRAPHC_STATUS_OK);
  unsetenv("GRAPHC_CPU_PASSES");
  ck_assert_int_eq(cache_stats(again.exe).hits, 0);
  ck_assert_int_eq(list_entries(dir, names, 64), objects + compiled(again.exe).objects);
  model_close(&again);

  /* a second process reads what this one stored */
  char wpath[4200];
  snprintf(wpath, sizeof wpath, "%s/cc-w-%d.safetensors", tu_tmpdir(), (int)getpid());
  tu_write_text(dir, "layers.graph", layers_src);
  char *out = NULL;
  int rc = tu_sh(&out, "GRAPHC_CACHE_DIR=%s %s run %s/layers.graph --backend cpu --weights %s --stats",
                 dir, GRAPHC_CLI, dir, wpath);
  ck_assert_msg(rc == 0, "%s", out ? out : "");
  char want[64];
  snprintf(want, sizeof want, "(%ld from the cache)", objects);
  ck_assert_msg(out && strstr(out, want), "no '%s' in:\n%s", want, out ? out : "");
  free(out);
  model_close(&first);
  unsetenv("GRAPHC_CACHE_DIR");
  setenv("GRAPHC_CACHE", "off", 1);
}
END_TEST

int main(void) {
  g_seed = tu_seed();
  printf("test_cpu_compile: seed %llu (GRAPHC_TEST_SEED=%llu reproduces)\n", (unsigned long long)g_seed,
         (unsigned long long)g_seed);
  fflush(stdout);
  unsetenv("GRAPHC_CPU_PASSES");
  Suite *s = suite_create("cpu_compile");
  TCase *tc = tcase_create("cpu_compile");
  tcase_set_timeout(tc, 1200);
  tcase_add_test(tc, dedup_repeated_layers);
  tcase_add_test(tc, cache_hit_corrupt_options);
  tcase_add_test(tc, dedup_and_threads_random_graphs);
  suite_add_tcase(s, tc);
  return tu_run_suite(s);
}
