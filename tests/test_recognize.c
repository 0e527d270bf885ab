/* test_recognize.c - the recognize pass (passes/recognize.c) against the interpreter.
 *
 *   numerics   every tests/passes/NN_recognize_*.graph, in f32 and (every f32 in the
 *              text made f16) in f16: compiled with the passes on (the fused ops the
 *              pass writes) for the interpreter and for the cpu backend, run on fresh
 *              random inputs, and compared with the unoptimized interpreter run of the
 *              decomposed graph (the f16 tolerance is looser: the decomposed graph
 *              rounds every intermediate to f16, the fused op does not)
 *   counts     the stats line names what was recognized, per pattern, in both dtypes
 *              (so the comparisons above compare a rewritten graph, not the same one)
 *   disabled   --disable-pass=recognize leaves the decomposed ops
 *
 * The golden files themselves (expected IR, negative cases) run in test_passes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "driver/exec.h"
#include "ir/dtype.h"
#include "testutil.h"

/* A golden file and what its stats must say (a substring of the recognize line);
 * half_host: in f16 off CUDA, where the attention scales of q and k stay as written
 * (K's transpose behind k's scale then stays too). */
typedef struct rcase {
  const char *file;
  const char *stats;
  const char *half_host;
  int differs;  /* half_host differs from stats */
} rcase;

static const rcase cases[] = {
    {"50_recognize_gelu_erf.graph", "recognize: gelu 2\n"},
    {"51_recognize_gelu_tanh.graph", "recognize: gelu 2\n"},
    {"52_recognize_gelu_negative.graph", NULL},
    {"53_recognize_silu.graph", "recognize: silu 2\n"},
    {"54_recognize_layernorm.graph", "recognize: layernorm 3\n"},
    {"55_recognize_layernorm_negative.graph", "recognize: layernorm 1, rmsnorm 1\n"},
    {"56_recognize_rmsnorm.graph", "recognize: rmsnorm 2\n"},
    {"57_recognize_softmax.graph", "recognize: softmax 1\n"},
    {"58_recognize_attention_scale.graph", "recognize: attention-scale 2, attention-k 1\n", NULL, 1},
    {"59_recognize_attention_negative.graph", "recognize: attention-scale 1, attention-k 2\n", "recognize: attention-k 1\n", 1},
    {"60_recognize_attention_k.graph", "recognize: attention-scale 1, attention-k 1\n", NULL, 1},
    {"61_recognize_attention_div.graph", "recognize: attention-scale 1, attention-k 1\n", "recognize: attention-k 1\n", 1},
};
#define N_CASES (int)(sizeof cases / sizeof cases[0])

/* splitmix64. */
static uint64_t rnd(uint64_t *s) {
  uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* A seed that differs per run (printed on failure; GRAPHC_TEST_SEED replays one). */
static uint64_t fresh_seed(void) {
  const char *env = getenv("GRAPHC_TEST_SEED");
  if (env && *env) return strtoull(env, NULL, 10);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40);
}

/* The golden file's graph (the text above its expected block), f32 -> f16 when half. */
static char *case_text(const rcase *c, int half) {
  char rel[256];
  snprintf(rel, sizeof rel, "tests/passes/%s", c->file);
  char *src = tu_read_file(tu_src(rel), NULL);
  ck_assert_ptr_nonnull(src);
  char *end = strstr(src, "# ---- expected ----");
  if (end) *end = 0;
  for (char *p = src; half && (p = strstr(p, "f32")); p += 3) p[2] = '6', p[1] = '1';
  return src;
}

/* Is got within tolerance of ref for dtype t? */
static int close_enough(gc_dtype t, double got, double ref) {
  if (isnan(ref) || isnan(got)) return isnan(ref) && isnan(got);
  if (isinf(ref) || isinf(got)) return got == ref; /* inf - inf is NaN: compare infinities exactly */
  double tol = t == GRAPHC_DTYPE_F16 ? 2e-2 : 2e-5;
  return fabs(got - ref) <= tol + tol * fabs(ref);
}

/* Tensors for an executable's inputs or outputs. */
static graphc_tensor_t *alloc_io(graphc_executable_t *exe, int outputs, size_t *n) {
  *n = outputs ? graphc_executable_num_outputs(exe) : graphc_executable_num_inputs(exe);
  graphc_tensor_t *t = calloc(*n + 1, sizeof *t);
  ck_assert_ptr_nonnull(t);
  for (size_t i = 0; i < *n; i++) {
    graphc_tensor_info_t info;
    if (outputs)
      graphc_executable_output_info(exe, i, &info);
    else
      graphc_executable_input_info(exe, i, &info);
    t[i] = (graphc_tensor_t){.dtype = info.dtype, .rank = info.rank, .nbytes = info.nbytes};
    memcpy(t[i].dims, info.dims, sizeof t[i].dims);
    t[i].data = calloc(1, info.nbytes + 1);
    ck_assert_ptr_nonnull(t[i].data);
  }
  return t;
}

static void free_io(graphc_tensor_t *t, size_t n) {
  for (size_t i = 0; i < n; i++) free(t[i].data);
  free(t);
}

/* Compile case c (half: in f16) unoptimized for the interpreter and optimized for
 * `backend`; run both on one random input set; compare; check the stats line. */
static void check_case(const rcase *c, int half, graphc_backend_t backend) {
  uint64_t seed = fresh_seed(), s = seed;
  char *text = case_text(c, half);
  graphc_context_t *ctx;
  graphc_model_t *m;
  graphc_error_t err;
  ck_assert_int_eq(graphc_context_create(&ctx), 0);
  ck_assert_msg(graphc_model_load_string(ctx, c->file, text, strlen(text), &m, &err) == 0, "%s: %s", c->file,
                err.message);
  graphc_executable_t *exe[2];
  for (int k = 0; k < 2; k++) {
    graphc_compile_options_t o;
    graphc_compile_options_init(&o);
    o.backend = k ? backend : GRAPHC_BACKEND_INTERP;
    o.optimize = k;
    ck_assert_msg(gc_compile_for(m, &o, GRAPHC_BACKEND_DEFAULT, &exe[k], &err) == 0, "%s -O%d: %s", c->file, k,
                  err.message);
  }
  const char *st = graphc_executable_stats(exe[1]);
  const char *want = half && c->differs && backend != GRAPHC_BACKEND_CUDA ? c->half_host : c->stats;
  if (want)
    ck_assert_msg(strstr(st, want), "%s (%s): stats lack '%s':\n%s", c->file, half ? "f16" : "f32", want, st);
  else
    ck_assert_msg(!strstr(st, "recognize:"), "%s: recognized something:\n%s", c->file, st);
  size_t ni, no, no1;
  graphc_tensor_t *in = alloc_io(exe[0], 0, &ni), *out[2] = {alloc_io(exe[0], 1, &no), alloc_io(exe[1], 1, &no1)};
  ck_assert_uint_eq(no, no1);
  for (size_t i = 0; i < ni; i++) {
    int64_t n = (int64_t)(in[i].nbytes / graphc_dtype_size(in[i].dtype));
    for (int64_t j = 0; j < n; j++)
      gc_store_f64(in[i].data, in[i].dtype, j, (double)(rnd(&s) >> 11) / 9007199254740992.0 * 4.0 - 2.0);
  }
  for (int k = 0; k < 2; k++)
    ck_assert_msg(graphc_executable_run(exe[k], in, ni, out[k], no, &err) == 0, "%s -O%d: %s", c->file, k,
                  err.message);
  for (size_t i = 0; i < no; i++) {
    gc_dtype t = out[0][i].dtype;
    ck_assert_int_eq(t, half ? GRAPHC_DTYPE_F16 : GRAPHC_DTYPE_F32);
    int64_t n = (int64_t)(out[0][i].nbytes / graphc_dtype_size(t));
    for (int64_t j = 0; j < n; j++) {
      double ref = gc_load_f64(out[0][i].data, t, j), got = gc_load_f64(out[1][i].data, t, j);
      ck_assert_msg(close_enough(t, got, ref), "%s (%s, backend %d) output %zu element %lld: %.9g, decomposed %.9g (seed %llu)",
                    c->file, half ? "f16" : "f32", (int)backend, i, (long long)j, got, ref, (unsigned long long)seed);
    }
  }
  free_io(in, ni);
  for (int k = 0; k < 2; k++) {
    free_io(out[k], no);
    graphc_executable_destroy(exe[k]);
  }
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
  free(text);
}

START_TEST(numerics_interp_f32) { check_case(&cases[_i], 0, GRAPHC_BACKEND_INTERP); }
END_TEST

START_TEST(numerics_interp_f16) { check_case(&cases[_i], 1, GRAPHC_BACKEND_INTERP); }
END_TEST

START_TEST(numerics_cpu_f32) { check_case(&cases[_i], 0, GRAPHC_BACKEND_CPU); }
END_TEST

START_TEST(numerics_cpu_f16) { check_case(&cases[_i], 1, GRAPHC_BACKEND_CPU); }
END_TEST

/* --disable-pass=recognize: the decomposed gelu stays; the stats have no recognize line. */
START_TEST(disabled) {
  char *out = NULL;
  ck_assert_int_eq(tu_sh(&out, "%s run %s --backend interp --disable-pass=recognize --stats --print-after=dce 2>&1",
                         GRAPHC_CLI, tu_src("tests/passes/50_recognize_gelu_erf.graph")), 0);
  ck_assert_msg(strstr(out, "erf(") && !strstr(out, "gelu(") && !strstr(out, "recognize:"), "%s", out);
  free(out);
  ck_assert_int_eq(tu_sh(&out, "%s run %s --backend interp --stats --print-after=recognize 2>&1", GRAPHC_CLI,
                         tu_src("tests/passes/50_recognize_gelu_erf.graph")), 0);
  ck_assert_msg(strstr(out, "# ----- IR after recognize (round 1) -----") && strstr(out, "gelu(%x)") &&
                    strstr(out, "recognize: gelu 2\n"),
                "%s", out);
  free(out);
}
END_TEST

static Suite *recognize_suite(void) {
  Suite *s = suite_create("recognize");
  TCase *t = tcase_create("numerics");
  tcase_add_loop_test(t, numerics_interp_f32, 0, N_CASES);
  tcase_add_loop_test(t, numerics_interp_f16, 0, N_CASES);
  tcase_add_loop_test(t, numerics_cpu_f32, 0, N_CASES);
  tcase_add_loop_test(t, numerics_cpu_f16, 0, N_CASES);
  suite_add_tcase(s, t);
  t = tcase_create("controls");
  tcase_add_test(t, disabled);
  suite_add_tcase(s, t);
  return s;
}

int main(void) { return tu_run_suite(recognize_suite()); }
