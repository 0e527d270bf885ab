/* test_weight_set.c - weights from a set of files (weights/weight_set.c): a checkpoint
 * folder with one model.safetensors, shards named by model.safetensors.index.json,
 * the index itself; every error names its file and tensor; a graph compiled and run
 * against a 2-shard folder through the public API. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graphc/graphc.h"
#include "weights/weight_set.h"
#include "testutil.h"

/* Float data 0, 1, 2, ... scaled by `k`. */
static void fill(float *p, int n, float k) {
  for (int i = 0; i < n; i++) p[i] = k * (float)i;
}

static float w_a[4 * 3], w_b[3], w_c[3 * 2];

/* A 2-D or 1-D f32 tensor description over `data`. */
static gc_st_tensor tensor(const char *name, float *data, int rank, int64_t d0, int64_t d1) {
  gc_st_tensor t = {.name = name, .dtype = GRAPHC_DTYPE_F32, .rank = rank, .data = data};
  t.dims[0] = d0;
  t.dims[1] = d1;
  t.nbytes = (size_t)(d0 * (rank > 1 ? d1 : 1)) * sizeof(float);
  return t;
}

static void write_st(const char *dir, const char *file, const gc_st_tensor *ts, int n) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  ck_assert_int_eq(gc_safetensors_write(path, ts, n, &d), 0);
  gc_diags_free(&d);
}

/* A checkpoint folder: "a" and "b" in shard 1, "c" in shard 2, and the index. */
static const char *sharded_dir(const char *tag) {
  fill(w_a, 12, 0.5f);
  fill(w_b, 3, -1.0f);
  fill(w_c, 6, 0.25f);
  const char *dir = tu_fresh_dir(tag);
  gc_st_tensor s1[] = {tensor("a", w_a, 2, 4, 3), tensor("b", w_b, 1, 3, 0)};
  gc_st_tensor s2[] = {tensor("c", w_c, 2, 3, 2)};
  write_st(dir, "model-00001-of-00002.safetensors", s1, 2);
  write_st(dir, "model-00002-of-00002.safetensors", s2, 1);
  tu_write_text(dir, "model.safetensors.index.json",
                "{\"metadata\": {\"total_size\": 84},\n \"weight_map\": {\n"
                "  \"a\": \"model-00001-of-00002.safetensors\",\n"
                "  \"c\": \"model-00002-of-00002.safetensors\",\n"
                "  \"b\": \"model-00001-of-00002.safetensors\"}}\n");
  return dir;
}

/* Open `path` and expect one error with this status and message ("%s" in `fmt` is
 * replaced by `dir`, up to three times). */
static void expect_open_error(const char *path, graphc_status_t status, const char *fmt, const char *dir) {
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  ck_assert_ptr_null(gc_weights_open(path, &d));
  ck_assert_int_eq(d.n_errors, 1);
  ck_assert_int_eq(d.status, status);
  char want[2048];
  snprintf(want, sizeof want, fmt, dir, dir, dir);
  ck_assert_str_eq(d.items[0].msg, want);
  gc_diags_free(&d);
}

START_TEST(open_sharded_folder) {
  const char *dir = sharded_dir("shards");
  char index[1024];
  snprintf(index, sizeof index, "%s/model.safetensors.index.json", dir);
  const char *paths[] = {dir, index};
  for (int k = 0; k < 2; k++) {
    gc_diags d;
    gc_diags_init(&d, "", NULL, 0);
    gc_safetensors *w = gc_weights_open(paths[k], &d);
    ck_assert_msg(w, "%s", d.n ? d.items[0].msg : "?");
    ck_assert_str_eq(w->path, index);
    ck_assert_int_eq(w->n, 3);
    ck_assert_int_eq(w->n_parts, 2);
    /* the index's order; data in the shards' mappings */
    ck_assert_str_eq(w->tensors[0].name, "a");
    ck_assert_str_eq(w->tensors[1].name, "c");
    ck_assert_str_eq(w->tensors[2].name, "b");
    const gc_st_tensor *c = gc_safetensors_find(w, "c");
    ck_assert_int_eq(c->rank, 2);
    ck_assert_int_eq(c->dims[0], 3);
    ck_assert_int_eq(memcmp(c->data, w_c, sizeof w_c), 0);
    ck_assert_int_eq(memcmp(gc_safetensors_find(w, "b")->data, w_b, sizeof w_b), 0);
    ck_assert(w->parts[0]->mapped && w->parts[1]->mapped);
    gc_safetensors_free(w);
    gc_diags_free(&d);
  }
}
END_TEST

START_TEST(open_single_file_folder) {
  const char *dir = tu_fresh_dir("single");
  fill(w_a, 12, 2.0f);
  gc_st_tensor ts[] = {tensor("a", w_a, 2, 4, 3)};
  write_st(dir, "model.safetensors", ts, 1);
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  gc_safetensors *w = gc_weights_open(dir, &d);
  ck_assert_ptr_nonnull(w);
  ck_assert_int_eq(w->n, 1);
  ck_assert(w->mapped);
  ck_assert_int_eq(memcmp(w->tensors[0].data, w_a, sizeof w_a), 0);
  char want[1024];
  snprintf(want, sizeof want, "%s/model.safetensors", dir);
  ck_assert_str_eq(w->path, want);
  gc_safetensors_free(w);
  gc_diags_free(&d);
  /* a safetensors file given directly */
  gc_diags_init(&d, "", NULL, 0);
  w = gc_weights_open(want, &d);
  ck_assert_ptr_nonnull(w);
  ck_assert_int_eq(w->n, 1);
  gc_safetensors_free(w);
  gc_diags_free(&d);
}
END_TEST

START_TEST(set_errors) {
  /* a missing shard */
  const char *dir = sharded_dir("missing_shard");
  char path[1024];
  snprintf(path, sizeof path, "%s/model-00002-of-00002.safetensors", dir);
  ck_assert_int_eq(unlink(path), 0);
  expect_open_error(dir, GRAPHC_STATUS_IO_ERROR,
                    "%s/model-00002-of-00002.safetensors: cannot open: No such file or directory "
                    "(a shard named by %s/model.safetensors.index.json)",
                    dir);

  /* a tensor the map puts in a shard that does not hold it */
  dir = sharded_dir("wrong_shard");
  tu_write_text(dir, "model.safetensors.index.json",
                "{\"weight_map\": {\"a\": \"model-00001-of-00002.safetensors\", "
                "\"c\": \"model-00001-of-00002.safetensors\"}}");
  expect_open_error(dir, GRAPHC_STATUS_WEIGHTS_ERROR,
                    "%s/model.safetensors.index.json: tensor 'c' is mapped to "
                    "'model-00001-of-00002.safetensors', which does not hold it",
                    dir);

  /* malformed index files */
  dir = sharded_dir("bad_index");
  tu_write_text(dir, "model.safetensors.index.json", "{\"weight_map\": {\"a\": ");
  expect_open_error(dir, GRAPHC_STATUS_WEIGHTS_ERROR,
                    "%s/model.safetensors.index.json: not valid JSON (error at byte 20)", dir);
  tu_write_text(dir, "model.safetensors.index.json", "{\"metadata\": {}}");
  expect_open_error(dir, GRAPHC_STATUS_WEIGHTS_ERROR,
                    "%s/model.safetensors.index.json: no \"weight_map\" object (a safetensors index "
                    "maps tensor names to shard files)",
                    dir);
  tu_write_text(dir, "model.safetensors.index.json", "{\"weight_map\": [1]}");
  expect_open_error(dir, GRAPHC_STATUS_WEIGHTS_ERROR,
                    "%s/model.safetensors.index.json: \"weight_map\" is not an object of tensor "
                    "name -> shard file",
                    dir);
  tu_write_text(dir, "model.safetensors.index.json", "{\"weight_map\": {\"a\": 3}}");
  expect_open_error(dir, GRAPHC_STATUS_WEIGHTS_ERROR,
                    "%s/model.safetensors.index.json: weight_map: the shard of tensor 'a' is not a "
                    "string",
                    dir);
  tu_write_text(dir, "model.safetensors.index.json", "{\"weight_map\": {\"a\": \"../x.safetensors\"}}");
  expect_open_error(dir, GRAPHC_STATUS_WEIGHTS_ERROR,
                    "%s/model.safetensors.index.json: weight_map: shard '../x.safetensors' is not a "
                    "file name in the index's directory",
                    dir);
  tu_write_text(dir, "model.safetensors.index.json",
                "{\"weight_map\": {\"a\": \"model-00001-of-00002.safetensors\", "
                "\"a\": \"model-00001-of-00002.safetensors\"}}");
  expect_open_error(dir, GRAPHC_STATUS_WEIGHTS_ERROR,
                    "%s/model.safetensors.index.json: weight_map: tensor 'a' is mapped twice", dir);

  /* a malformed shard: its own message, the index named */
  tu_write_text(dir, "model.safetensors.index.json",
                "{\"weight_map\": {\"a\": \"model-00001-of-00002.safetensors\"}}");
  tu_write_text(dir, "model-00001-of-00002.safetensors", "");
  expect_open_error(dir, GRAPHC_STATUS_WEIGHTS_ERROR,
                    "%s/model-00001-of-00002.safetensors: file is empty; expected an 8-byte header "
                    "length (a shard named by %s/model.safetensors.index.json)",
                    dir);

  /* a folder with neither file; a path that is not there */
  dir = tu_fresh_dir("empty_folder");
  expect_open_error(dir, GRAPHC_STATUS_WEIGHTS_ERROR,
                    "%s: the directory has no model.safetensors and no model.safetensors.index.json", dir);
  snprintf(path, sizeof path, "%s/nothing", dir);
  expect_open_error(path, GRAPHC_STATUS_IO_ERROR, "%s/nothing: cannot open: No such file or directory", dir);
}
END_TEST

/* A graph whose params lie in two shards, compiled against the folder on the
 * interpreter and the cpu backend: y = x @ a + b, then @ c. */
START_TEST(compile_against_shards) {
  const char *dir = sharded_dir("compile");
  static const char *text =
      "version 1;\n"
      "graph @g(%x: f32[2, 4]) -> (f32[2, 2]) {\n"
      "  param %a: f32[4, 3] = \"a\";\n"
      "  param %b: f32[3] = \"b\";\n"
      "  param %c: f32[3, 2] = \"c\";\n"
      "  %h = matmul(%x, %a);\n"
      "  %hb = add(%h, %b);\n"
      "  %y = matmul(%hb, %c);\n"
      "  return %y;\n"
      "}\n";
  float x[8] = {1, 2, 3, 4, -1, 0, 1, 0.5f}, want[4];
  for (int r = 0; r < 2; r++)
    for (int j = 0; j < 2; j++) {
      double acc = 0;
      for (int k = 0; k < 3; k++) {
        double h = w_b[k];
        for (int i = 0; i < 4; i++) h += (double)x[r * 4 + i] * w_a[i * 3 + k];
        acc += h * w_c[k * 2 + j];
      }
      want[r * 2 + j] = (float)acc;
    }
  graphc_context_t *ctx;
  ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
  graphc_backend_t backends[] = {GRAPHC_BACKEND_INTERP, GRAPHC_BACKEND_CPU};
  for (int b = 0; b < 2; b++) {
    graphc_error_t err;
    graphc_model_t *m;
    ck_assert_int_eq(graphc_model_load_string(ctx, "g.graph", text, strlen(text), &m, &err), GRAPHC_STATUS_OK);
    ck_assert_int_eq(graphc_model_set_weights(m, dir, &err), GRAPHC_STATUS_OK);
    graphc_compile_options_t o;
    graphc_compile_options_init(&o);
    o.backend = backends[b];
    graphc_executable_t *exe;
    graphc_status_t st = graphc_compile(m, &o, &exe, &err);
    ck_assert_msg(st == GRAPHC_STATUS_OK, "%s", err.message);
    float y[4];
    graphc_tensor_t in = {GRAPHC_DTYPE_F32, 2, {2, 4}, x, sizeof x};
    graphc_tensor_t out = {GRAPHC_DTYPE_F32, 2, {2, 2}, y, sizeof y};
    ck_assert_int_eq(graphc_executable_run(exe, &in, 1, &out, 1, &err), GRAPHC_STATUS_OK);
    for (int i = 0; i < 4; i++) ck_assert_float_eq_tol(y[i], want[i], 1e-4 * (1 + fabsf(want[i])));
    graphc_executable_destroy(exe);
    graphc_model_destroy(m);
  }
  /* a param the set lacks: named, with the index */
  static const char *text2 =
      "version 1;\n"
      "graph @g(%x: f32[3]) -> (f32[3]) {\n"
      "  param %d: f32[3] = \"d\";\n"
      "  %y = add(%x, %d);\n"
      "  return %y;\n"
      "}\n";
  graphc_error_t err;
  graphc_model_t *m;
  ck_assert_int_eq(graphc_model_load_string(ctx, "g2.graph", text2, strlen(text2), &m, &err), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_set_weights(m, dir, &err), GRAPHC_STATUS_OK);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_INTERP;
  graphc_executable_t *exe = NULL;
  ck_assert_int_eq(graphc_compile(m, &o, &exe, &err), GRAPHC_STATUS_WEIGHTS_ERROR);
  char want_msg[1200];
  snprintf(want_msg, sizeof want_msg, "param %%d: tensor 'd' not found in %s/model.safetensors.index.json", dir);
  ck_assert_str_eq(err.message, want_msg);
  ck_assert_int_eq(err.line, 3);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("weight_set");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, open_sharded_folder);
  tcase_add_test(tc, open_single_file_folder);
  tcase_add_test(tc, set_errors);
  tcase_add_test(tc, compile_against_shards);
  suite_add_tcase(s, tc);
  return tu_run_suite(s);
}
