/* test_states.c - states (`state %c: T = "name"`) and cache_write: memory an executable
 * keeps between runs (issue 38's KV cache).
 *
 *   text            print / re-parse round trip of state statements and cache_write
 *   verify_errors   cache_write of a value that is not a state, a written state read
 *                   elsewhere, two states of one name, an update larger than the state,
 *                   `state` as an op name: each an error at its line
 *   steps           on interp, cpu (and cuda with a device): a "prefill" executable (S = 3)
 *                   and a "decode" one (S = 1) sharing their states run in turn with
 *                   fresh random inputs and positions (some outside the cache: dropped);
 *                   outputs and the whole state (read_state) equal a cache kept in the
 *                   test; write_state and reset_states; the state survives the other
 *                   executable's destruction
 *   api_errors      sharing across backends or with a state of another shape, unknown
 *                   state names, a tensor of the wrong shape, execution contexts, bundles
 *
 * The seed is $GRAPHC_TEST_SEED or fresh (printed on failure).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphc/graphc.h"
#include "driver/cuda_backend.h"
#include "tests/cuda_testutil.h"
#include "tests/testutil.h"

enum { BMAX = 3, B = 2, T = 8, D = 4 };

/* The state holds BMAX rows; runs write rows 0..B-1 at pos[b] + s, return those rows of
 * the cache after the write and their max over the positions. */
static const char *k_step =
    "version 1;\n"
    "graph @step<S>(%x: f32[2, S, 4], %pos: i32[2]) -> (f32[2, 8, 4], f32[2, 4]) {\n"
    "  state %c: f32[3, 8, 4] = \"cache\";\n"
    "  %c1 = cache_write(%c, %x, %pos, axis=1);\n"
    "  %s = slice(%c1, start=[0, 0, 0], end=[2, 8, 4]);\n"
    "  %m = reduce_max(%s, axes=[1]);\n"
    "  return %s, %m;\n"
    "}\n";

static graphc_executable_t *compile(graphc_context_t *ctx, const char *text, int64_t S, graphc_backend_t be) {
  graphc_model_t *m;
  graphc_error_t err;
  ck_assert_msg(graphc_model_load_string(ctx, "step.graph", text, strlen(text), &m, &err) == 0, "%s", err.message);
  if (S) ck_assert_int_eq(graphc_model_bind(m, "S", S, &err), 0);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = be;
  graphc_executable_t *exe = NULL;
  ck_assert_msg(graphc_compile(m, &o, &exe, &err) == 0, "%s", err.message);
  graphc_model_destroy(m);
  return exe;
}

START_TEST(text) {
  graphc_context_t *ctx;
  graphc_model_t *m;
  graphc_error_t err;
  ck_assert_int_eq(graphc_context_create(&ctx), 0);
  ck_assert_int_eq(graphc_model_load_string(ctx, "step.graph", k_step, strlen(k_step), &m, &err), 0);
  char *a = NULL, *b = NULL;
  ck_assert_int_eq(graphc_model_print(m, &a, &err), 0);
  ck_assert_ptr_nonnull(strstr(a, "state %c: f32[3, 8, 4] = \"cache\";"));
  ck_assert_ptr_nonnull(strstr(a, "cache_write(%c, %x, %pos, axis=1)"));
  graphc_model_t *m2;
  ck_assert_msg(graphc_model_load_string(ctx, "again.graph", a, strlen(a), &m2, &err) == 0, "%s", err.message);
  ck_assert_int_eq(graphc_model_print(m2, &b, &err), 0);
  ck_assert_str_eq(a, b);
  graphc_free(a);
  graphc_free(b);
  graphc_model_destroy(m);
  graphc_model_destroy(m2);
  graphc_context_destroy(ctx);
}
END_TEST

/* Loading `body` (inside a graph of inputs %x: f32[2, 1, 4], %pos: i32[2]) fails with a
 * message containing `want`. */
static void load_fails(const char *body, const char *want) {
  char text[2048];
  snprintf(text, sizeof text,
           "version 1;\ngraph @g(%%x: f32[2, 1, 4], %%pos: i32[2]) -> (f32[2, 8, 4]) {\n%s}\n", body);
  graphc_context_t *ctx;
  graphc_model_t *m = NULL;
  graphc_error_t err;
  ck_assert_int_eq(graphc_context_create(&ctx), 0);
  ck_assert_int_ne(graphc_model_load_string(ctx, "bad.graph", text, strlen(text), &m, &err), 0);
  ck_assert_msg(strstr(err.message, want) && err.line > 0 && strstr(err.file, "bad.graph"),
                "want '%s' at a line of bad.graph in: %s:%d: %s", want, err.file, err.line, err.message);
  graphc_context_destroy(ctx);
}

START_TEST(verify_errors) {
  load_fails("  %c = const(value=0.0, shape=[2, 8, 4], dtype=f32);\n"
             "  %c1 = cache_write(%c, %x, %pos, axis=1);\n  return %c1;\n",
             "must be a state");
  load_fails("  state %c: f32[2, 8, 4] = \"k\";\n  %c1 = cache_write(%c, %x, %pos, axis=1);\n"
             "  %y = add(%c, %c1);\n  return %y;\n",
             "must be its only use");
  load_fails("  state %c: f32[2, 8, 4] = \"k\";\n  state %d: f32[2, 8, 4] = \"k\";\n"
             "  %y = add(%c, %d);\n  return %y;\n",
             "declared twice");
  load_fails("  state %c: f32[2, 8, 2] = \"k\";\n  %c1 = cache_write(%c, %x, %pos, axis=1);\n  return %c1;\n",
             "larger than the state");
  load_fails("  %c = state(name=\"k\") : f32[2, 8, 4];\n  return %c;\n", "declare states with a state statement");
  load_fails("  state %c f32[2, 8, 4] = \"k\";\n  return %c;\n", "after the state name");
}
END_TEST

/* The test's own cache: rows 0..B-1 of x [B, S, D] at pos[b] + s. */
static void ref_write(float *cache, const float *x, int S, const int32_t *pos) {
  for (int b = 0; b < B; b++)
    for (int s = 0; s < S; s++) {
      int t = pos[b] + s;
      if (t < 0 || t >= T) continue;
      memcpy(&cache[(b * T + t) * D], &x[(b * S + s) * D], D * sizeof(float));
    }
}

/* Run exe on fresh x, pos; compare its outputs with the reference after the write. */
static void step(graphc_executable_t *exe, int S, float *cache, uint64_t *seed, const char *what) {
  float x[B * 3 * D], s_out[B * T * D], m_out[B * D];
  int32_t pos[B];
  for (int i = 0; i < B * S * D; i++) x[i] = (float)(tu_unit(seed) * 4 - 2);
  for (int b = 0; b < B; b++) pos[b] = (int32_t)tu_int(seed, -2, T);  /* some out of range */
  graphc_tensor_t in[2] = {{GRAPHC_DTYPE_F32, 3, {B, S, D}, x, sizeof(float) * B * S * D},
                           {GRAPHC_DTYPE_I32, 1, {B}, pos, sizeof pos}};
  graphc_tensor_t out[2] = {{GRAPHC_DTYPE_F32, 3, {B, T, D}, s_out, sizeof s_out},
                            {GRAPHC_DTYPE_F32, 2, {B, D}, m_out, sizeof m_out}};
  graphc_error_t err;
  ck_assert_msg(graphc_executable_run(exe, in, 2, out, 2, &err) == 0, "%s: %s", what, err.message);
  ref_write(cache, x, S, pos);
  for (int i = 0; i < B * T * D; i++)
    ck_assert_msg(s_out[i] == cache[i], "%s: cache element %d: %g, want %g (pos %d %d)", what, i, s_out[i],
                  cache[i], pos[0], pos[1]);
  for (int b = 0; b < B; b++)
    for (int d = 0; d < D; d++) {
      float mx = cache[b * T * D + d];
      for (int t = 1; t < T; t++)
        if (cache[(b * T + t) * D + d] > mx) mx = cache[(b * T + t) * D + d];
      ck_assert_msg(m_out[b * D + d] == mx, "%s: max %d %d", what, b, d);
    }
}

/* The whole state equals the reference. */
static void check_state(graphc_executable_t *exe, const float *cache, const char *what) {
  float got[BMAX * T * D];
  graphc_tensor_t t = {GRAPHC_DTYPE_F32, 3, {BMAX, T, D}, got, sizeof got};
  graphc_error_t err;
  ck_assert_msg(graphc_executable_read_state(exe, "cache", &t, &err) == 0, "%s", err.message);
  ck_assert_msg(memcmp(got, cache, sizeof got) == 0, "%s: read_state differs", what);
}

static void steps_on(graphc_backend_t be) {
  uint64_t seed = tu_seed();
  graphc_context_t *ctx;
  graphc_error_t err;
  ck_assert_int_eq(graphc_context_create(&ctx), 0);
  graphc_executable_t *pre = compile(ctx, k_step, 3, be), *dec = compile(ctx, k_step, 1, be);
  ck_assert_uint_eq(graphc_executable_num_states(pre), 1);
  graphc_tensor_info_t info;
  ck_assert_int_eq(graphc_executable_state_info(pre, 0, &info), 0);
  ck_assert_str_eq(info.name, "cache");
  ck_assert_int_eq(info.rank, 3);
  ck_assert_int_eq(info.dims[0], BMAX);
  ck_assert_msg(graphc_executable_share_states(dec, pre, &err) == 0, "%s", err.message);
  static float cache[BMAX * T * D];
  memset(cache, 0, sizeof cache);
  check_state(pre, cache, "fresh");
  char what[96];
  for (int i = 0; i < 6; i++) {
    snprintf(what, sizeof what, "%s step %d (seed %llu)", graphc_backend_name(be), i, (unsigned long long)seed);
    if (i % 3 == 0)
      step(pre, 3, cache, &seed, what);
    else
      step(dec, 1, cache, &seed, what);
  }
  check_state(dec, cache, "after steps");
  /* write_state sets it (row 2 too, which no run writes) */
  for (int i = 0; i < BMAX * T * D; i++) cache[i] = (float)i * 0.25f;
  graphc_tensor_t t = {GRAPHC_DTYPE_F32, 3, {BMAX, T, D}, cache, sizeof cache};
  ck_assert_msg(graphc_executable_write_state(pre, "cache", &t, &err) == 0, "%s", err.message);
  step(dec, 1, cache, &seed, "after write_state");
  check_state(pre, cache, "after write_state");
  /* the decode executable keeps the memory after the prefill one is gone */
  graphc_executable_destroy(pre);
  step(dec, 1, cache, &seed, "after destroying the other");
  ck_assert_int_eq(graphc_executable_reset_states(dec, &err), 0);
  memset(cache, 0, sizeof cache);
  check_state(dec, cache, "after reset");
  step(dec, 1, cache, &seed, "after reset");
  graphc_executable_destroy(dec);
  graphc_context_destroy(ctx);
}

START_TEST(steps) {
  steps_on(GRAPHC_BACKEND_INTERP);
  steps_on(GRAPHC_BACKEND_CPU);
  if (gc_cuda_available(tu_rt_settings()))
    steps_on(GRAPHC_BACKEND_CUDA);
  else
    printf("test_states: no CUDA device, cuda skipped\n");
}
END_TEST

START_TEST(api_errors) {
  graphc_context_t *ctx;
  graphc_error_t err;
  ck_assert_int_eq(graphc_context_create(&ctx), 0);
  graphc_executable_t *a = compile(ctx, k_step, 1, GRAPHC_BACKEND_CPU);
  graphc_executable_t *b = compile(ctx, k_step, 1, GRAPHC_BACKEND_INTERP);
  ck_assert_int_eq(graphc_executable_share_states(b, a, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(err.message, "different backends"));
  /* the same name with another shape */
  char other[1024];
  snprintf(other, sizeof other, "%s", k_step);
  char *at = strstr(other, "f32[3, 8, 4]");
  memcpy(at, "f32[3, 9, 4]", 12);
  at = strstr(other, "f32[2, 8, 4]) {");  /* slice and output stay [2, 8, 4] */
  graphc_executable_t *c = compile(ctx, other, 1, GRAPHC_BACKEND_CPU);
  ck_assert_int_ne(graphc_executable_share_states(c, a, &err), 0);
  ck_assert_msg(strstr(err.message, "state \"cache\" is f32[3, 8, 4] in the shared states but f32[3, 9, 4]"),
                "%s", err.message);
  float buf[BMAX * T * D];
  graphc_tensor_t t = {GRAPHC_DTYPE_F32, 3, {BMAX, T, D}, buf, sizeof buf};
  ck_assert_int_ne(graphc_executable_read_state(a, "nope", &t, &err), 0);
  ck_assert_ptr_nonnull(strstr(err.message, "no state \"nope\""));
  t.dims[1] = 4;
  ck_assert_int_ne(graphc_executable_write_state(a, "cache", &t, &err), 0);
  ck_assert_ptr_nonnull(strstr(err.message, "the tensor differs"));
  graphc_exec_context_t *ec = NULL;
  ck_assert_int_eq(graphc_exec_context_create(a, &ec, &err), GRAPHC_STATUS_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(err.message, "has states"));
  /* a graph without states */
  const char *plain = "version 1;\ngraph @g(%x: f32[2]) -> (f32[2]) {\n  %y = neg(%x);\n  return %y;\n}\n";
  graphc_executable_t *p = compile(ctx, plain, 0, GRAPHC_BACKEND_CPU);
  ck_assert_uint_eq(graphc_executable_num_states(p), 0);
  ck_assert_int_ne(graphc_executable_share_states(p, a, &err), 0);
  ck_assert_ptr_nonnull(strstr(err.message, "declares no states"));
  ck_assert_int_eq(graphc_executable_reset_states(p, &err), 0);
  graphc_executable_destroy(p);
  graphc_executable_destroy(a);
  graphc_executable_destroy(b);
  graphc_executable_destroy(c);
  graphc_context_destroy(ctx);
  /* bundles do not hold states yet: a clear error */
  char path[4096], *out = NULL;
  snprintf(path, sizeof path, "%s/step.graph", tu_tmpdir());
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(k_step, f);
  fclose(f);
  int rc = tu_sh(&out, "%s compile %s --bind S=1 --arch sm_90 -o %s/step.gcx 2>&1", GRAPHC_CLI, path, tu_tmpdir());
  ck_assert_int_ne(rc, 0);
  ck_assert_msg(strstr(out, "bundles and --emit c do not hold states yet"), "%s", out);
  free(out);
}
END_TEST

int main(void) {
  Suite *s = suite_create("states");
  TCase *tc = tcase_create("states");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, text);
  tcase_add_test(tc, verify_errors);
  tcase_add_test(tc, steps);
  tcase_add_test(tc, api_errors);
  suite_add_tcase(s, tc);
  return tu_run_suite(s);
}
