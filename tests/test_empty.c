/* test_empty.c - tensors with a zero dim (ONNX's zero-sized tensors; passes/empty.c).
 *
 *   backends      one graph with empty inputs, empty results and ops that read empty tensors
 *                 (matmul with K = 0, reductions over an empty axis, concat and split with
 *                 empty parts) on interp, cpu (and cuda when present), optimized and at -O0:
 *                 the identities, the non-empty operand's data, empty outputs with no buffer
 *                 (one of them an empty input returned as is)
 *   undefined     an op whose non-empty result would read an empty tensor (argmax over an
 *                 empty axis) is an UNSUPPORTED error at the op
 *   bad_dims      a negative dim is still an error; a reshape's -1 among zero elements too
 *   empty_batch   a symbolic dim bound to 0 (`--range B=0:8`, or declared `<B: 0..8>`, then
 *                 bound directly or from a [0, ...] input): the MLP and the transformer block
 *                 run on interp and cpu and give empty outputs; a derived dim may be 0; the
 *                 default range refuses 0, a declared range that starts above 1 cannot start
 *                 at 0
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graphc/graphc.h"
#include "driver/exec.h"
#include "tests/cuda_testutil.h"
#include "tests/testutil.h"

static const char k_graph[] =
    "version 1;\n"
    "graph @g(%x: f32[3, 0], %y: f32[0, 4], %z: f32[2, 5], %i: i32[0, 2]) -> (f32[3, 4], f32[3, 0], f32[3],\n"
    "    f32[3], f32[3], f32[3], i32[2], f32[2, 5], f32[0, 5], f32[2, 0], f32[4, 5], f32[2, 5], f32[0, 4]) {\n"
    "  %m = matmul(%x, %y);\n"
    "  %e = relu(%x);\n"
    "  %s = reduce_sum(%x, axes=[1]);\n"
    "  %mx = reduce_max(%x, axes=[1]);\n"
    "  %mn = reduce_min(%x, axes=[1]);\n"
    "  %me = reduce_mean(%x, axes=[1]);\n"
    "  %im = reduce_max(%i, axes=[0]);\n"
    "  %w = slice(%z, start=[2, 0], end=[2, 5]);\n"
    "  %c = concat(%z, %w, axis=0);\n"
    "  %a, %b = split(%z, axis=1, sizes=[0, 5]);\n"
    "  %c2 = concat(%z, %w, %z, axis=0);\n"
    "  %n = neg(%b);\n"
    "  return %m, %e, %s, %mx, %mn, %me, %im, %c, %w, %a, %c2, %n, %y;\n"
    "}\n";

START_TEST(backends) {
  graphc_context_t *ctx;
  ck_assert_int_eq(graphc_context_create(&ctx), 0);
  graphc_error_t err;
  graphc_model_t *m;
  ck_assert_msg(graphc_model_load_string(ctx, "empty.graph", k_graph, strlen(k_graph), &m, &err) == 0, "%s",
                err.message);
  float z[10];
  uint64_t seed = tu_seed();
  tu_fill(z, GRAPHC_DTYPE_F32, 10, 'x', 4, &seed);
  graphc_tensor_t in[4] = {
      {.dtype = GRAPHC_DTYPE_F32, .rank = 2, .dims = {3, 0}},
      {.dtype = GRAPHC_DTYPE_F32, .rank = 2, .dims = {0, 4}},
      {.dtype = GRAPHC_DTYPE_F32, .rank = 2, .dims = {2, 5}, .data = z, .nbytes = sizeof z},
      {.dtype = GRAPHC_DTYPE_I32, .rank = 2, .dims = {0, 2}},
  };
  int cuda = gc_cuda_available(tu_rt_settings());
  graphc_backend_t bes[3] = {GRAPHC_BACKEND_INTERP, GRAPHC_BACKEND_CPU, GRAPHC_BACKEND_CUDA};
  for (int b = 0; b < 2 + cuda; b++)
    for (int opt = 0; opt < 2; opt++) {
      graphc_compile_options_t o;
      graphc_compile_options_init(&o);
      o.backend = bes[b];
      o.optimize = opt;
      graphc_executable_t *exe = NULL;
      ck_assert_msg(graphc_compile(m, &o, &exe, &err) == 0, "%s -O%d: %s", graphc_backend_name(bes[b]), opt,
                    err.message);
      size_t no = graphc_executable_num_outputs(exe);
      ck_assert_uint_eq(no, 13);
      graphc_tensor_t out[13];
      for (size_t i = 0; i < no; i++) {
        graphc_tensor_info_t info;
        graphc_executable_output_info(exe, i, &info);
        out[i] = (graphc_tensor_t){.dtype = info.dtype, .rank = info.rank, .nbytes = info.nbytes};
        memcpy(out[i].dims, info.dims, sizeof out[i].dims);
        out[i].data = info.nbytes ? malloc(info.nbytes) : NULL;  /* empty outputs: no buffer */
        if (info.nbytes) memset(out[i].data, 0x7f, info.nbytes);
      }
      ck_assert_msg(graphc_executable_run(exe, in, 4, out, no, &err) == 0, "%s -O%d: %s",
                    graphc_backend_name(bes[b]), opt, err.message);
      const char *be = graphc_backend_name(bes[b]);
      for (int k = 0; k < 12; k++) ck_assert_msg(((float *)out[0].data)[k] == 0, "%s: matmul K=0", be);
      ck_assert_uint_eq(out[1].nbytes, 0);
      for (int k = 0; k < 3; k++) {
        ck_assert_msg(((float *)out[2].data)[k] == 0, "%s: sum", be);
        ck_assert_msg(isinf(((float *)out[3].data)[k]) && ((float *)out[3].data)[k] < 0, "%s: max", be);
        ck_assert_msg(isinf(((float *)out[4].data)[k]) && ((float *)out[4].data)[k] > 0, "%s: min", be);
        ck_assert_msg(isnan(((float *)out[5].data)[k]), "%s: mean", be);
      }
      for (int k = 0; k < 2; k++) ck_assert_msg(((int32_t *)out[6].data)[k] == INT32_MIN, "%s: i32 max", be);
      ck_assert_msg(memcmp(out[7].data, z, sizeof z) == 0, "%s: concat with an empty part", be);
      ck_assert_uint_eq(out[8].nbytes + out[9].nbytes + out[12].nbytes, 0);
      ck_assert_msg(memcmp(out[10].data, z, sizeof z) == 0 && memcmp((float *)out[10].data + 10, z, sizeof z) == 0,
                    "%s: concat of three", be);
      for (int k = 0; k < 10; k++) ck_assert_msg(((float *)out[11].data)[k] == -z[k], "%s: split's other part", be);
      for (size_t i = 0; i < no; i++) free(out[i].data);
      graphc_executable_destroy(exe);
    }
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
}
END_TEST

START_TEST(undefined) {
  graphc_context_t *ctx;
  ck_assert_int_eq(graphc_context_create(&ctx), 0);
  graphc_error_t err;
  graphc_model_t *m;
  static const char src[] = "version 1;\ngraph @g(%x: f32[3, 0]) -> (i64[3]) {\n"
                            "  %a = argmax(%x, axis=1);\n  return %a;\n}\n";
  ck_assert_int_eq(graphc_model_load_string(ctx, "u.graph", src, strlen(src), &m, &err), 0);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_INTERP;
  graphc_executable_t *exe = NULL;
  ck_assert_int_eq(graphc_compile(m, &o, &exe, &err), GRAPHC_STATUS_UNSUPPORTED);
  ck_assert_msg(err.line == 3 && strstr(err.message, "argmax reads a tensor with no elements"), "%d: %s", err.line,
                err.message);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
}
END_TEST

START_TEST(bad_dims) {
  graphc_context_t *ctx;
  ck_assert_int_eq(graphc_context_create(&ctx), 0);
  graphc_error_t err;
  graphc_model_t *m = NULL;
  static const char neg[] = "version 1;\ngraph @g(%x: f32[3, -1]) -> (f32[3, 1]) {\n  return %x;\n}\n";
  ck_assert_int_ne(graphc_model_load_string(ctx, "n.graph", neg, strlen(neg), &m, &err), 0);
  ck_assert_msg(strstr(err.message, "dimension must be >= 0"), "%s", err.message);
  static const char hole[] = "version 1;\ngraph @g(%x: f32[0, 6]) -> (f32[0, 6]) {\n"
                             "  %r = reshape(%x, shape=[-1, 0]);\n  return %x;\n}\n";
  ck_assert_int_eq(graphc_model_load_string(ctx, "h.graph", hole, strlen(hole), &m, &err), GRAPHC_STATUS_VERIFY_ERROR);
  ck_assert_msg(strstr(err.message, "cannot infer -1 in [-1, 0]"), "%s", err.message);
  graphc_context_destroy(ctx);
}
END_TEST

START_TEST(empty_batch) {
  graphc_context_t *ctx;
  ck_assert_int_eq(graphc_context_create(&ctx), 0);
  graphc_error_t err;
  static const char *files[2] = {"examples/mlp.graph", "examples/transformer_block.graph"};
  for (int f = 0; f < 2; f++) {
    graphc_model_t *m;
    ck_assert_int_eq(graphc_model_load_file(ctx, tu_src(files[f]), &m, &err), 0);
    ck_assert_int_eq(graphc_model_bind(m, "B", 0, &err), GRAPHC_STATUS_INVALID_ARGUMENT);  /* 1..2^40 */
    ck_assert_msg(strstr(err.message, "outside its range 1.."), "%s", err.message);
    ck_assert_msg(graphc_model_set_range(m, "B", 0, 8, &err) == 0, "%s", err.message);
    if (f) ck_assert_int_eq(graphc_model_bind(m, "S", 8, &err), 0);
    char w[4096];
    snprintf(w, sizeof w, "%s/empty-batch-%d.safetensors", tu_tmpdir(), f);
    ck_assert_int_eq(graphc_model_bind(m, "B", 1, &err), 0);  /* weights need no B, but concrete shapes */
    ck_assert_msg(graphc_model_write_random_weights(m, w, 7, &err) == 0, "%s", err.message);
    ck_assert_int_eq(graphc_model_set_weights(m, w, &err), 0);
    /* B from an input of 0 rows */
    graphc_tensor_t x = {.dtype = GRAPHC_DTYPE_F32, .rank = f ? 3 : 2, .dims = {0, f ? 8 : 784, 256}};
    const char *names[1] = {"x"};
    ck_assert_int_eq(graphc_model_bind(m, "B", 0, &err), 0);
    ck_assert_msg(graphc_model_bind_inputs(m, 1, names, &x, &err) == 0, "%s", err.message);
    for (int b = 0; b < 2; b++) {
      graphc_compile_options_t o;
      graphc_compile_options_init(&o);
      o.backend = b ? GRAPHC_BACKEND_CPU : GRAPHC_BACKEND_INTERP;
      graphc_executable_t *exe = NULL;
      ck_assert_msg(graphc_compile(m, &o, &exe, &err) == 0, "%s on %s: %s", files[f], graphc_backend_name(o.backend),
                    err.message);
      graphc_tensor_info_t info;
      graphc_executable_output_info(exe, 0, &info);
      ck_assert_msg(info.dims[0] == 0 && info.nbytes == 0, "%s: output dim 0 = %lld", files[f],
                    (long long)info.dims[0]);
      graphc_tensor_t out = {.dtype = info.dtype, .rank = info.rank};
      memcpy(out.dims, info.dims, sizeof out.dims);
      ck_assert_msg(graphc_executable_run(exe, &x, 1, &out, 1, &err) == 0, "%s: %s", files[f], err.message);
      graphc_executable_destroy(exe);
    }
    graphc_model_destroy(m);
  }
  /* a range may not start below 0 (API and CLI) */
  graphc_model_t *mm;
  ck_assert_int_eq(graphc_model_load_file(ctx, tu_src("examples/mlp.graph"), &mm, &err), 0);
  ck_assert_int_eq(graphc_model_set_range(mm, "B", -1, 4, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_msg(strstr(err.message, "cannot narrow the range of B to -1..4"), "%s", err.message);
  graphc_model_destroy(mm);
  char *out = NULL;
  int rc = tu_sh(&out, "%s run %s --range B=-1:4 --bind B=0 2>&1", GRAPHC_CLI, tu_src("examples/mlp.graph"));
  ck_assert_msg(rc == 1 && strstr(out, "cannot narrow the range of B to -1..4"), "rc %d: %s", rc, out);
  free(out);
  /* a derived dim of 0; a declared range above 1 stays above 1 */
  static const char src[] = "version 1;\ngraph @g<S: 2..9, T = S - 3>(%x: f32[S, 2]) -> (f32[T, 2]) {\n"
                            "  %y = slice(%x, start=[3, 0], end=[S, 2]);\n  return %y;\n}\n";
  graphc_model_t *m;
  ck_assert_int_eq(graphc_model_load_string(ctx, "d.graph", src, strlen(src), &m, &err), 0);
  ck_assert_int_eq(graphc_model_set_range(m, "S", 0, 9, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_int_eq(graphc_model_bind(m, "S", 3, &err), 0);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_CPU;
  graphc_executable_t *exe = NULL;
  ck_assert_msg(graphc_compile(m, &o, &exe, &err) == 0, "%s", err.message);
  graphc_tensor_info_t info;
  graphc_executable_output_info(exe, 0, &info);
  ck_assert_int_eq(info.dims[0], 0);
  graphc_executable_destroy(exe);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("empty");
  TCase *c = tcase_create("empty");
  tcase_set_timeout(c, 300);
  tcase_add_test(c, backends);
  tcase_add_test(c, undefined);
  tcase_add_test(c, bad_dims);
  tcase_add_test(c, empty_batch);
  suite_add_tcase(s, c);
  return tu_run_suite(s);
}
