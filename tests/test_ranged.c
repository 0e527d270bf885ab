/* test_ranged.c - graphc_compile_ranged: compile once, run at any binding in range (issue 35).
 *
 *   shapes        the transformer block compiled once with B and S free, run at five shapes
 *                 (twice each, in an order that revisits) on interp, cpu (and cuda): every result
 *                 equals an executable compiled for exactly that shape on the same inputs,
 *                 bit for bit; the stats count the compiles and the cached runs; resolve gives
 *                 the output shapes; a model with one dim bound ranges over the other
 *   eviction      more bindings than the cache holds: the least recently used goes, results
 *                 stay right, the stats count the evictions
 *   errors        inputs that disagree on B, a value out of the range, a wrong rank and a
 *                 wrong output shape are clear errors; a model with nothing free is an
 *                 ordinary executable; a graph with states is refused
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphc/graphc.h"
#include "driver/exec.h"
#include "tests/cuda_testutil.h"
#include "tests/testutil.h"

static graphc_context_t *ctx;
static char weights[4096];

static void setup(void) {
  ck_assert_int_eq(graphc_context_create(&ctx), 0);
  graphc_model_t *m;
  graphc_error_t err;
  ck_assert_int_eq(graphc_model_load_file(ctx, tu_src("examples/transformer_block.graph"), &m, &err), 0);
  ck_assert_int_eq(graphc_model_bind(m, "B", 1, &err), 0);
  ck_assert_int_eq(graphc_model_bind(m, "S", 1, &err), 0);
  snprintf(weights, sizeof weights, "%s/ranged-tb.safetensors", tu_tmpdir());
  ck_assert_msg(graphc_model_write_random_weights(m, weights, 11, &err) == 0, "%s", err.message);
  graphc_model_destroy(m);
}
static void teardown(void) { graphc_context_destroy(ctx); }

static graphc_model_t *load_tb(void) {
  graphc_model_t *m;
  graphc_error_t err;
  ck_assert_int_eq(graphc_model_load_file(ctx, tu_src("examples/transformer_block.graph"), &m, &err), 0);
  ck_assert_int_eq(graphc_model_set_weights(m, weights, &err), 0);
  ck_assert_int_eq(graphc_model_set_range(m, "S", 1, 64, &err), 0);
  return m;
}

static graphc_tensor_t make_x(int64_t b, int64_t s, uint64_t seed) {
  graphc_tensor_t x = {.dtype = GRAPHC_DTYPE_F32, .rank = 3, .dims = {b, s, 256}};
  x.nbytes = (size_t)(b * s * 256) * sizeof(float);
  x.data = malloc(x.nbytes ? x.nbytes : 1);
  tu_fill(x.data, GRAPHC_DTYPE_F32, b * s * 256, 'x', 4, &seed);
  return x;
}

/* The output of an executable compiled for exactly (b, s) on backend be. */
static float *exact_run(graphc_backend_t be, const graphc_tensor_t *x) {
  graphc_model_t *m = load_tb();
  graphc_error_t err;
  ck_assert_int_eq(graphc_model_bind(m, "B", x->dims[0], &err), 0);
  ck_assert_int_eq(graphc_model_bind(m, "S", x->dims[1], &err), 0);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = be;
  graphc_executable_t *e = NULL;
  ck_assert_msg(graphc_compile(m, &o, &e, &err) == 0, "%s", err.message);
  float *y = malloc(x->nbytes);
  graphc_tensor_t out = *x;
  out.data = y;
  ck_assert_msg(graphc_executable_run(e, x, 1, &out, 1, &err) == 0, "%s", err.message);
  graphc_executable_destroy(e);
  graphc_model_destroy(m);
  return y;
}

/* Run the ranged executable at x; the output compared with the exact executable's. */
static void check_run(graphc_executable_t *r, graphc_backend_t be, const graphc_tensor_t *x) {
  graphc_error_t err;
  graphc_tensor_info_t info;
  graphc_tensor_t shape = *x;  /* resolve reads shapes only */
  shape.data = NULL;
  shape.nbytes = 0;
  ck_assert_msg(graphc_executable_resolve(r, &shape, 1, &info, 1, &err) == 0, "%s", err.message);
  ck_assert_msg(info.rank == 3 && info.dims[0] == x->dims[0] && info.dims[1] == x->dims[1] &&
                    info.nbytes == x->nbytes && strcmp(info.name, "y") == 0,
                "resolve: %s %lld x %lld", info.name, (long long)info.dims[0], (long long)info.dims[1]);
  graphc_tensor_t out = *x;
  out.data = malloc(x->nbytes);
  ck_assert_msg(graphc_executable_run(r, x, 1, &out, 1, &err) == 0, "%s", err.message);
  float *want = exact_run(be, x);
  ck_assert_msg(memcmp(out.data, want, x->nbytes) == 0, "%s B=%lld S=%lld: differs from the exact executable",
                graphc_backend_name(be), (long long)x->dims[0], (long long)x->dims[1]);
  free(want);
  free(out.data);
}

START_TEST(shapes) {
  static const int64_t bs[][2] = {{1, 5}, {2, 16}, {1, 5}, {3, 64}, {2, 16}, {4, 1}, {1, 33}, {3, 64}};
  int cuda = gc_cuda_available(tu_rt_settings());
  graphc_backend_t bes[3] = {GRAPHC_BACKEND_INTERP, GRAPHC_BACKEND_CPU, GRAPHC_BACKEND_CUDA};
  for (int b = 0; b < 2 + cuda; b++) {
    graphc_model_t *m = load_tb();
    graphc_compile_options_t o;
    graphc_compile_options_init(&o);
    o.backend = bes[b];
    graphc_executable_t *r = NULL;
    graphc_error_t err;
    ck_assert_msg(graphc_compile_ranged(m, &o, &r, &err) == 0, "%s", err.message);
    graphc_model_destroy(m);  /* the ranged executable keeps its own copy */
    ck_assert_int_eq(graphc_executable_backend(r), bes[b]);
    graphc_tensor_info_t in;
    ck_assert_int_eq(graphc_executable_input_info(r, 0, &in), 0);
    ck_assert_msg(in.dims[0] == -1 && in.dims[1] == -1 && in.dims[2] == 256 && in.nbytes == 0, "input info");
    for (size_t i = 0; i < sizeof bs / sizeof *bs; i++) {
      graphc_tensor_t x = make_x(bs[i][0], bs[i][1], 100 + i);
      check_run(r, bes[b], &x);
      free(x.data);
    }
    /* 5 distinct bindings compiled; 3 repeated runs and 8 resolves (one before each run) hit */
    ck_assert_msg(strstr(graphc_executable_stats(r), "ranged: 5 bindings compiled, 11 runs from the cache, 0 evicted; last run: B=3 S=64"),
                  "%s", graphc_executable_stats(r));
    graphc_executable_destroy(r);
  }
  /* one dim bound: B = 2 stays, S ranges */
  graphc_model_t *m = load_tb();
  graphc_error_t err;
  ck_assert_int_eq(graphc_model_bind(m, "B", 2, &err), 0);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_CPU;
  graphc_executable_t *r = NULL;
  ck_assert_msg(graphc_compile_ranged(m, &o, &r, &err) == 0, "%s", err.message);
  graphc_tensor_info_t in;
  graphc_executable_input_info(r, 0, &in);
  ck_assert(in.dims[0] == 2 && in.dims[1] == -1);
  graphc_tensor_t x = make_x(2, 7, 5);
  check_run(r, GRAPHC_BACKEND_CPU, &x);
  free(x.data);
  x = make_x(3, 7, 5);  /* B is bound to 2 */
  graphc_tensor_t out = x;
  ck_assert_int_eq(graphc_executable_run(r, &x, 1, &out, 1, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_msg(strstr(err.message, "expected f32[2, ?, 256], got f32[3, 7, 256]"), "%s", err.message);
  free(x.data);
  graphc_executable_destroy(r);
  graphc_model_destroy(m);
}
END_TEST

START_TEST(eviction) {
  graphc_model_t *m = load_tb();
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_INTERP;
  graphc_executable_t *r = NULL;
  graphc_error_t err;
  ck_assert_msg(graphc_compile_ranged(m, &o, &r, &err) == 0, "%s", err.message);
  graphc_model_destroy(m);
  /* S = 1..10, then S = 1 again: 10 bindings through a cache of 8 evict S = 1 and 2, so the
   * last run compiles S = 1 once more */
  for (int s = 1; s <= 11; s++) {
    graphc_tensor_t x = make_x(1, s <= 10 ? s : 1, (uint64_t)s);
    graphc_tensor_t out = x;
    out.data = malloc(x.nbytes);
    ck_assert_msg(graphc_executable_run(r, &x, 1, &out, 1, &err) == 0, "%s", err.message);
    if (s == 11) {
      float *want = exact_run(GRAPHC_BACKEND_INTERP, &x);
      ck_assert(memcmp(out.data, want, x.nbytes) == 0);
      free(want);
    }
    free(out.data);
    free(x.data);
  }
  ck_assert_msg(strstr(graphc_executable_stats(r), "ranged: 11 bindings compiled, 0 runs from the cache, 3 evicted"),
                "%s", graphc_executable_stats(r));
  graphc_executable_destroy(r);
}
END_TEST

START_TEST(errors) {
  static const char src[] = "version 1;\ngraph @g<B: 1..4>(%x: f32[B, 3], %z: f32[B, 3]) -> (f32[B, 3]) {\n"
                            "  %y = add(%x, %z);\n  return %y;\n}\n";
  graphc_model_t *m;
  graphc_error_t err;
  ck_assert_int_eq(graphc_model_load_string(ctx, "e.graph", src, strlen(src), &m, &err), 0);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_CPU;
  graphc_executable_t *r = NULL;
  ck_assert_msg(graphc_compile_ranged(m, &o, &r, &err) == 0, "%s", err.message);
  float a[30] = {0}, b[30] = {0}, y[30];
  graphc_tensor_t in[2] = {{GRAPHC_DTYPE_F32, 2, {2, 3}, a, sizeof a}, {GRAPHC_DTYPE_F32, 2, {3, 3}, b, sizeof b}};
  graphc_tensor_t out = {GRAPHC_DTYPE_F32, 2, {2, 3}, y, sizeof y};
  ck_assert_int_eq(graphc_executable_run(r, in, 2, &out, 1, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_msg(strstr(err.message, "inputs disagree on symbolic dim B"), "%s", err.message);
  in[1].dims[0] = 2;
  in[0].dims[0] = in[1].dims[0] = 5;
  out.dims[0] = 5;
  ck_assert_int_eq(graphc_executable_run(r, in, 2, &out, 1, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_msg(strstr(err.message, "outside its range 1..4"), "%s", err.message);
  in[0].dims[0] = in[1].dims[0] = 2;
  out.dims[0] = 3;  /* the binding's executable checks the outputs */
  ck_assert_int_eq(graphc_executable_run(r, in, 2, &out, 1, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_msg(strstr(err.message, "expected f32[2, 3], got f32[3, 3]"), "%s", err.message);
  in[0].rank = 3;
  ck_assert_int_eq(graphc_executable_run(r, in, 2, &out, 1, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  in[0].rank = 2;
  out.dims[0] = 2;
  ck_assert_msg(graphc_executable_run(r, in, 2, &out, 1, &err) == 0, "%s", err.message);
  graphc_executable_destroy(r);
  /* nothing free: an ordinary executable */
  ck_assert_int_eq(graphc_model_bind(m, "B", 2, &err), 0);
  ck_assert_int_eq(graphc_compile_ranged(m, &o, &r, &err), 0);
  graphc_tensor_info_t info;
  graphc_executable_input_info(r, 0, &info);
  ck_assert_int_eq(info.dims[0], 2);
  ck_assert_msg(!strstr(graphc_executable_stats(r), "ranged:"), "%s", graphc_executable_stats(r));
  graphc_executable_destroy(r);
  graphc_model_destroy(m);
  /* states */
  static const char st[] = "version 1;\ngraph @g<B>(%x: f32[B, 4]) -> (f32[B, 4]) {\n"
                           "  state %k: f32[B, 4] = \"k\";\n  %y = add(%x, %k);\n  return %y;\n}\n";
  ck_assert_int_eq(graphc_model_load_string(ctx, "s.graph", st, strlen(st), &m, &err), 0);
  ck_assert_int_eq(graphc_compile_ranged(m, &o, &r, &err), GRAPHC_STATUS_UNSUPPORTED);
  ck_assert_msg(strstr(err.message, "states cannot be compiled for a range"), "%s", err.message);
  ck_assert_ptr_null(r);
  graphc_model_destroy(m);
  ck_assert_int_eq(graphc_compile_ranged(NULL, &o, &r, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  /* resolve: NULL arguments, a wrong output count, a wrong dtype */
  ck_assert_int_eq(graphc_model_load_string(ctx, "e.graph", src, strlen(src), &m, &err), 0);
  ck_assert_int_eq(graphc_compile_ranged(m, &o, &r, &err), 0);
  graphc_tensor_info_t infos[2];
  ck_assert_int_eq(graphc_executable_resolve(r, NULL, 2, infos, 1, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_int_eq(graphc_executable_resolve(r, in, 2, infos, 2, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_msg(strstr(err.message, "expected 1 outputs, got 2"), "%s", err.message);
  in[1].dtype = GRAPHC_DTYPE_F16;
  ck_assert_int_eq(graphc_executable_resolve(r, in, 2, infos, 1, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_msg(strstr(err.message, "inputs 1 (%z): expected f32[?, 3], got f16[2, 3]"), "%s", err.message);
  graphc_executable_destroy(r);
  graphc_model_destroy(m);
}
END_TEST

int main(void) {
  Suite *s = suite_create("ranged");
  TCase *c = tcase_create("ranged");
  tcase_add_checked_fixture(c, setup, teardown);
  tcase_set_timeout(c, 600);
  tcase_add_test(c, shapes);
  tcase_add_test(c, eviction);
  tcase_add_test(c, errors);
  suite_add_tcase(s, c);
  return tu_run_suite(s);
}
