/* test_api.c - the public C API, including misuse: NULL handles, bad text,
 * unbound dims, wrong input count/dtype/shape/size, missing weights. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "graphc/graphc.h"
#include "testutil.h"

static const char *const add_src =
    "version 1;\n"
    "graph @add<N>(%a: f32[N, 3], %b: f32[3]) -> (f32[N, 3], f32[N, 3]) {\n"
    "  %s = add(%a, %b);\n"
    "  %m = mul(%s, %a);\n"
    "  return %s, %m;\n"
    "}\n"
    "graph @other(%x: f32[2]) -> (f32[2]) {\n"
    "  %y = neg(%x);\n"
    "  return %y;\n"
    "}\n";

static graphc_context_t *ctx;

static void setup(void) { ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK); }
static void teardown(void) { graphc_context_destroy(ctx); }

START_TEST(status_and_dtype_names) {
  for (int s = 0; s < GRAPHC_STATUS_COUNT_; s++) {
    ck_assert_ptr_nonnull(graphc_status_string(s));
    for (int t = 0; t < s; t++) ck_assert_str_ne(graphc_status_string(s), graphc_status_string(t));
  }
  ck_assert_str_eq(graphc_status_string(GRAPHC_STATUS_OK), "ok");
  ck_assert_str_eq(graphc_status_string((graphc_status_t)999), "unknown status");
  ck_assert_str_eq(graphc_dtype_name(GRAPHC_DTYPE_BF16), "bf16");
  ck_assert_int_eq(graphc_dtype_size(GRAPHC_DTYPE_F16), 2);
  ck_assert_int_eq(graphc_dtype_size(GRAPHC_DTYPE_BOOL), 1);
  ck_assert_int_eq(graphc_dtype_size(GRAPHC_DTYPE_I64), 8);
  ck_assert_ptr_null(graphc_dtype_name((graphc_dtype_t)42));
  ck_assert_int_eq(graphc_dtype_size((graphc_dtype_t)42), 0);
  ck_assert_str_eq(graphc_backend_name(GRAPHC_BACKEND_CUDA), "cuda");
  ck_assert_str_eq(graphc_codegen_name(GRAPHC_CODEGEN_LLVM), "llvm");
}
END_TEST

START_TEST(null_handles) {
  graphc_error_t err;
  graphc_model_t *m = (graphc_model_t *)1;
  graphc_executable_t *e = (graphc_executable_t *)1;
  ck_assert_int_eq(graphc_context_create(NULL), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_int_eq(graphc_model_load_file(NULL, "x", &m, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_ptr_null(m);
  ck_assert_int_eq(graphc_model_load_file(ctx, NULL, &m, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_int_eq(graphc_model_load_string(ctx, "s", NULL, 0, &m, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_int_eq(graphc_model_bind(NULL, "B", 2, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_int_eq(graphc_model_set_entry(NULL, "g", &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_int_eq(graphc_compile(NULL, NULL, &e, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_ptr_null(e);
  ck_assert_str_ne(err.message, "");
  ck_assert_int_eq(graphc_executable_run(NULL, NULL, 0, NULL, 0, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_int_eq(graphc_executable_num_inputs(NULL), 0);
  ck_assert_int_eq(graphc_executable_input_info(NULL, 0, NULL), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_str_eq(graphc_context_diagnostics(NULL), "");
  /* Destroying NULL is allowed. */
  graphc_context_destroy(NULL);
  graphc_model_destroy(NULL);
  graphc_executable_destroy(NULL);
  /* err may be NULL. */
  ck_assert_int_eq(graphc_compile(NULL, NULL, NULL, NULL), GRAPHC_STATUS_INVALID_ARGUMENT);
}
END_TEST

START_TEST(syntax_error_has_position_and_caret) {
  const char *src = "version 1;\ngraph @g(%x: f32[2]) -> (f32[2]) {\n  %y = neg(%x)\n  return %y;\n}\n";
  graphc_model_t *m = NULL;
  graphc_error_t err;
  graphc_status_t st = graphc_model_load_string(ctx, "bad.graph", src, strlen(src), &m, &err);
  ck_assert_int_eq(st, GRAPHC_STATUS_SYNTAX_ERROR);
  ck_assert_ptr_null(m);
  ck_assert_int_eq(err.code, GRAPHC_STATUS_SYNTAX_ERROR);
  ck_assert_str_eq(err.file, "bad.graph");
  ck_assert_int_eq(err.line, 3); /* just after `neg(%x)` */
  ck_assert_ptr_nonnull(strstr(err.message, "';'"));
  const char *diags = graphc_context_diagnostics(ctx);
  ck_assert_ptr_nonnull(strstr(diags, "bad.graph:3:"));
  ck_assert_ptr_nonnull(strstr(diags, "^"));
}
END_TEST

START_TEST(missing_file_is_io_error) {
  graphc_model_t *m = NULL;
  graphc_error_t err;
  ck_assert_int_eq(graphc_model_load_file(ctx, "/nonexistent/x.graph", &m, &err), GRAPHC_STATUS_IO_ERROR);
  ck_assert_ptr_nonnull(strstr(err.message, "/nonexistent/x.graph"));
}
END_TEST

START_TEST(bind_errors) {
  graphc_model_t *m = NULL;
  graphc_error_t err;
  ck_assert_int_eq(graphc_model_load_string(ctx, "add.graph", add_src, strlen(add_src), &m, &err), 0);
  ck_assert_int_eq(graphc_model_bind(m, "Q", 2, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(err.message, "it has: N"));
  ck_assert_int_eq(graphc_model_bind(m, "N", 0, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_int_eq(graphc_model_bind(m, "N", -5, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  /* Compiling with N unbound names the symbol. */
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_INTERP;
  graphc_executable_t *e = NULL;
  ck_assert_int_eq(graphc_compile(m, &o, &e, &err), GRAPHC_STATUS_VERIFY_ERROR);
  ck_assert_ptr_null(e);
  ck_assert_ptr_nonnull(strstr(err.message, "N"));
  ck_assert_int_eq(graphc_model_set_entry(m, "@nope", &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  graphc_model_destroy(m);
}
END_TEST

/* Compile @add with N=2 for the interpreter. */
static graphc_executable_t *compile_add(graphc_model_t **m) {
  graphc_error_t err;
  ck_assert_int_eq(graphc_model_load_string(ctx, "add.graph", add_src, strlen(add_src), m, &err), 0);
  ck_assert_int_eq(graphc_model_bind(*m, "N", 2, &err), 0);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_INTERP;
  graphc_executable_t *e = NULL;
  graphc_status_t st = graphc_compile(*m, &o, &e, &err);
  ck_assert_msg(st == GRAPHC_STATUS_OK, "compile: %s", err.message);
  return e;
}

START_TEST(run_and_validate_io) {
  graphc_model_t *m;
  graphc_executable_t *e = compile_add(&m);
  graphc_error_t err;
  ck_assert_int_eq(graphc_executable_backend(e), GRAPHC_BACKEND_INTERP);
  ck_assert_int_eq(graphc_executable_num_inputs(e), 2);
  ck_assert_int_eq(graphc_executable_num_outputs(e), 2);
  graphc_tensor_info_t info;
  ck_assert_int_eq(graphc_executable_input_info(e, 0, &info), 0);
  ck_assert_str_eq(info.name, "a");
  ck_assert_int_eq(info.rank, 2);
  ck_assert_int_eq(info.dims[0], 2);
  ck_assert_int_eq(info.nbytes, 24);
  ck_assert_int_eq(graphc_executable_output_info(e, 1, &info), 0);
  ck_assert_str_eq(info.name, "m");
  ck_assert_int_eq(graphc_executable_output_info(e, 2, &info), GRAPHC_STATUS_INVALID_ARGUMENT);

  float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, 20, 30}, s[6], p[6];
  graphc_tensor_t in[2] = {{GRAPHC_DTYPE_F32, 2, {2, 3}, a, sizeof a},
                           {GRAPHC_DTYPE_F32, 1, {3}, b, sizeof b}};
  graphc_tensor_t out[2] = {{GRAPHC_DTYPE_F32, 2, {2, 3}, s, sizeof s},
                            {GRAPHC_DTYPE_F32, 2, {2, 3}, p, sizeof p}};
  ck_assert_int_eq(graphc_executable_run(e, in, 2, out, 2, &err), 0);
  for (int i = 0; i < 6; i++) {
    ck_assert_float_eq(s[i], a[i] + b[i % 3]);
    ck_assert_float_eq(p[i], (a[i] + b[i % 3]) * a[i]);
  }
  /* Wrong count. */
  ck_assert_int_eq(graphc_executable_run(e, in, 1, out, 2, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(err.message, "expected 2 inputs, got 1"));
  /* Wrong shape. */
  in[1].dims[0] = 4;
  ck_assert_int_eq(graphc_executable_run(e, in, 2, out, 2, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(err.message, "expected f32[3], got f32[4]"));
  in[1].dims[0] = 3;
  /* Wrong dtype. */
  in[0].dtype = GRAPHC_DTYPE_F16;
  ck_assert_int_eq(graphc_executable_run(e, in, 2, out, 2, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(err.message, "f16[2, 3]"));
  in[0].dtype = GRAPHC_DTYPE_F32;
  /* Invalid dtype value. */
  in[0].dtype = (graphc_dtype_t)77;
  ck_assert_int_eq(graphc_executable_run(e, in, 2, out, 2, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  in[0].dtype = GRAPHC_DTYPE_F32;
  /* NULL data, short buffer, NULL arrays. */
  out[0].data = NULL;
  ck_assert_int_eq(graphc_executable_run(e, in, 2, out, 2, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(err.message, "data is NULL"));
  out[0].data = s;
  out[1].nbytes = 8;
  ck_assert_int_eq(graphc_executable_run(e, in, 2, out, 2, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(err.message, "needs 24"));
  ck_assert_int_eq(graphc_executable_run(e, NULL, 2, out, 2, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  graphc_executable_destroy(e);
  graphc_model_destroy(m);
}
END_TEST

START_TEST(entry_and_print) {
  graphc_model_t *m = NULL;
  graphc_error_t err;
  ck_assert_int_eq(graphc_model_load_string(ctx, "add.graph", add_src, strlen(add_src), &m, &err), 0);
  ck_assert_int_eq(graphc_model_set_entry(m, "@other", &err), 0);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_INTERP;
  graphc_executable_t *e = NULL;
  ck_assert_int_eq(graphc_compile(m, &o, &e, &err), 0);
  float x[2] = {1.5f, -2}, y[2];
  graphc_tensor_t in = {GRAPHC_DTYPE_F32, 1, {2}, x, sizeof x};
  graphc_tensor_t out = {GRAPHC_DTYPE_F32, 1, {2}, y, sizeof y};
  ck_assert_int_eq(graphc_executable_run(e, &in, 1, &out, 1, &err), 0);
  ck_assert_float_eq(y[0], -1.5f);
  ck_assert_float_eq(y[1], 2.0f);
  graphc_executable_destroy(e);

  char *text = NULL;
  ck_assert_int_eq(graphc_model_print(m, &text, &err), 0);
  ck_assert_ptr_nonnull(strstr(text, "%s = add(%a, %b) : f32[N, 3];"));
  graphc_model_t *m2 = NULL;
  ck_assert_int_eq(graphc_model_load_string(ctx, "again", text, strlen(text), &m2, &err), 0);
  char *text2 = NULL;
  ck_assert_int_eq(graphc_model_print(m2, &text2, &err), 0);
  ck_assert_str_eq(text, text2);
  graphc_free(text);
  graphc_free(text2);
  graphc_model_destroy(m2);
  graphc_model_destroy(m);
}
END_TEST

START_TEST(weights_missing_and_random) {
  char wpath[512];
  snprintf(wpath, sizeof wpath, "%s/api_mlp.safetensors", tu_tmpdir());
  graphc_model_t *m = NULL;
  graphc_error_t err;
  ck_assert_int_eq(graphc_model_load_file(ctx, tu_src("examples/mlp.graph"), &m, &err), 0);
  ck_assert_int_eq(graphc_model_bind(m, "B", 3, &err), 0);
  ck_assert_int_eq(graphc_model_set_weights(m, "/nonexistent/w.safetensors", &err), 0);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_INTERP;
  graphc_executable_t *e = NULL;
  ck_assert_int_eq(graphc_compile(m, &o, &e, &err), GRAPHC_STATUS_IO_ERROR);
  ck_assert_ptr_nonnull(strstr(err.message, "/nonexistent/w.safetensors"));
  ck_assert_int_eq(graphc_model_write_random_weights(m, wpath, 7, &err), 0);
  ck_assert_int_eq(graphc_model_set_weights(m, wpath, &err), 0);
  ck_assert_int_eq(graphc_compile(m, &o, &e, &err), 0);
  float x[3 * 784], y[30];
  for (int i = 0; i < 3 * 784; i++) x[i] = (float)sin(i * 0.37);
  graphc_tensor_t in = {GRAPHC_DTYPE_F32, 2, {3, 784}, x, sizeof x};
  graphc_tensor_t out = {GRAPHC_DTYPE_F32, 2, {3, 10}, y, sizeof y};
  ck_assert_int_eq(graphc_executable_run(e, &in, 1, &out, 1, &err), 0);
  int nonzero = 0;
  for (int i = 0; i < 30; i++) {
    ck_assert(isfinite(y[i]));
    nonzero += y[i] != 0;
  }
  ck_assert_int_gt(nonzero, 20);
  graphc_executable_destroy(e);
  graphc_model_destroy(m);
}
END_TEST

START_TEST(params_without_weights_statement) {
  const char *src = "version 1;\ngraph @g(%x: f32[2]) -> (f32[2]) {\n"
                    "  param %w: f32[2] = \"w\";\n  %y = add(%x, %w);\n  return %y;\n}\n";
  graphc_model_t *m = NULL;
  graphc_error_t err;
  ck_assert_int_eq(graphc_model_load_string(ctx, "p.graph", src, strlen(src), &m, &err), 0);
  graphc_executable_t *e = NULL;
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_INTERP;
  ck_assert_int_eq(graphc_compile(m, &o, &e, &err), GRAPHC_STATUS_WEIGHTS_ERROR);
  ck_assert_int_eq(err.line, 3);
  ck_assert_ptr_nonnull(strstr(err.message, "no weights file"));
  graphc_model_destroy(m);
}
END_TEST

START_TEST(emit_code_without_a_gpu) {
  graphc_model_t *m = NULL;
  graphc_error_t err;
  ck_assert_int_eq(graphc_model_load_string(ctx, "add.graph", add_src, strlen(add_src), &m, &err), 0);
  ck_assert_int_eq(graphc_model_bind(m, "N", 5, &err), 0);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  void *out = NULL;
  size_t len = 0;
  ck_assert_int_eq(graphc_model_emit(m, &o, "cuda", &out, &len, &err), 0);
  ck_assert_ptr_nonnull(strstr(out, "__global__"));
  ck_assert_int_eq(strlen(out), len);
  graphc_free(out);
  ck_assert_int_eq(graphc_model_emit(m, &o, "ptx", &out, &len, &err), 0);
  ck_assert_ptr_nonnull(strstr(out, ".entry"));
  graphc_free(out);
  o.codegen = GRAPHC_CODEGEN_LLVM;
  ck_assert_int_eq(graphc_model_emit(m, &o, "ptx", &out, &len, &err), 0);
  ck_assert_ptr_nonnull(strstr(out, ".entry"));
  graphc_free(out);
  ck_assert_int_eq(graphc_model_emit(m, &o, "bogus", &out, &len, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  o.arch = "sm_x";
  ck_assert_int_eq(graphc_model_emit(m, &o, "ptx", &out, &len, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(err.message, "sm_x"));
  graphc_model_destroy(m);
}
END_TEST

START_TEST(cpu_or_cuda_unavailable_is_clean) {
  graphc_model_t *m;
  graphc_error_t err;
  ck_assert_int_eq(graphc_model_load_string(ctx, "add.graph", add_src, strlen(add_src), &m, &err), 0);
  ck_assert_int_eq(graphc_model_bind(m, "N", 2, &err), 0);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_CUDA;
  graphc_executable_t *e = NULL;
  graphc_status_t st = graphc_compile(m, &o, &e, &err);
  if (st == GRAPHC_STATUS_OK) {
    graphc_executable_destroy(e); /* a GPU is present */
  } else {
    ck_assert_int_eq(st, GRAPHC_STATUS_BACKEND_UNAVAILABLE);
    ck_assert_ptr_null(e);
    ck_assert_ptr_nonnull(strstr(err.message, "CUDA"));
  }
  graphc_model_destroy(m);
}
END_TEST

/* Outputs keep the names they were written with, also when the passes make two of them one
 * value (cse) or an empty one a const (the empty pass). */
START_TEST(output_names_as_written) {
  static const char src[] = "version 1;\ngraph @g(%x: f32[4], %z: f32[0]) -> (f32[4], f32[4], f32[0]) {\n"
                            "  %a = relu(%x);\n  %b = relu(%x);\n  %e = neg(%z);\n  return %a, %b, %e;\n}\n";
  graphc_model_t *m;
  graphc_error_t err;
  ck_assert_int_eq(graphc_model_load_string(ctx, "n.graph", src, strlen(src), &m, &err), 0);
  for (int b = 0; b < 2; b++) {
    graphc_compile_options_t o;
    graphc_compile_options_init(&o);
    o.backend = b ? GRAPHC_BACKEND_CPU : GRAPHC_BACKEND_INTERP;
    graphc_executable_t *e = NULL;
    ck_assert_msg(graphc_compile(m, &o, &e, &err) == 0, "%s", err.message);
    static const char *want[3] = {"a", "b", "e"};
    for (size_t i = 0; i < 3; i++) {
      graphc_tensor_info_t info;
      ck_assert_int_eq(graphc_executable_output_info(e, i, &info), 0);
      ck_assert_str_eq(info.name, want[i]);
    }
    graphc_executable_destroy(e);
  }
  graphc_model_destroy(m);
}
END_TEST

/* graphc_compile_options_t.outputs: the results named, in the order named, equal to the
 * same results of a full compile (interp, cpu, cuda when there is a GPU; a ranged
 * executable too); names the entry does not return, or twice, are errors. Fresh data. */
START_TEST(selected_outputs) {
  static const char src[] = "version 1;\ngraph @g<B>(%x: f32[B, 8], %w: f32[8, 4]) -> (f32[B, 4], f32[B, 4], f32[B]) {\n"
                            "  %y = matmul(%x, %w);\n  %z = relu(%y);\n  %s = reduce_sum(%z, axes=[1]);\n"
                            "  return %y, %z, %s;\n}\n";
  unsigned seed = (unsigned)time(NULL);
  printf("selected_outputs: seed %u\n", seed);
  float x[3 * 8], w[8 * 4], full_y[12], full_z[12], full_s[3], got_s[3], got_y[12];
  for (int i = 0; i < 24; i++) x[i] = (float)rand_r(&seed) / RAND_MAX * 2 - 1;
  for (int i = 0; i < 32; i++) w[i] = (float)rand_r(&seed) / RAND_MAX * 2 - 1;
  graphc_tensor_t in[2] = {{GRAPHC_DTYPE_F32, 2, {3, 8}, x, sizeof x}, {GRAPHC_DTYPE_F32, 2, {8, 4}, w, sizeof w}};
  graphc_model_t *m;
  graphc_error_t err;
  ck_assert_int_eq(graphc_model_load_string(ctx, "o.graph", src, strlen(src), &m, &err), 0);
  ck_assert_int_eq(graphc_model_bind(m, "B", 3, &err), 0);
  for (int b = 0; b < 4; b++) {
    graphc_compile_options_t o;
    graphc_compile_options_init(&o);
    o.backend = b == 1 ? GRAPHC_BACKEND_CPU : b == 2 ? GRAPHC_BACKEND_CUDA : GRAPHC_BACKEND_INTERP;
    if (b == 2 && !tu_probe_device()) continue;
    graphc_executable_t *e = NULL;
    ck_assert_msg(graphc_compile(m, &o, &e, &err) == 0, "%s", err.message);
    graphc_tensor_t out3[3] = {{GRAPHC_DTYPE_F32, 2, {3, 4}, full_y, sizeof full_y},
                               {GRAPHC_DTYPE_F32, 2, {3, 4}, full_z, sizeof full_z},
                               {GRAPHC_DTYPE_F32, 1, {3}, full_s, sizeof full_s}};
    ck_assert_msg(graphc_executable_run(e, in, 2, out3, 3, &err) == 0, "%s", err.message);
    graphc_executable_destroy(e);
    o.outputs = "s,%y";
    ck_assert_msg(graphc_compile(m, &o, &e, &err) == 0, "%s", err.message);
    ck_assert_uint_eq(graphc_executable_num_outputs(e), 2);
    graphc_tensor_info_t info;
    ck_assert_int_eq(graphc_executable_output_info(e, 0, &info), 0);
    ck_assert_str_eq(info.name, "s");
    ck_assert_int_eq(graphc_executable_output_info(e, 1, &info), 0);
    ck_assert_str_eq(info.name, "y");
    graphc_tensor_t out2[2] = {{GRAPHC_DTYPE_F32, 1, {3}, got_s, sizeof got_s},
                               {GRAPHC_DTYPE_F32, 2, {3, 4}, got_y, sizeof got_y}};
    ck_assert_msg(graphc_executable_run(e, in, 2, out2, 2, &err) == 0, "%s", err.message);
    for (int i = 0; i < 3; i++) ck_assert_float_eq_tol(got_s[i], full_s[i], 1e-5);
    for (int i = 0; i < 12; i++) ck_assert_float_eq_tol(got_y[i], full_y[i], 1e-5);
    graphc_executable_destroy(e);
  }
  /* a ranged executable keeps the selection at every binding */
  graphc_model_t *m2;
  ck_assert_int_eq(graphc_model_load_string(ctx, "o.graph", src, strlen(src), &m2, &err), 0);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_CPU;
  o.outputs = "s";
  graphc_executable_t *e = NULL;
  ck_assert_msg(graphc_compile_ranged(m2, &o, &e, &err) == 0, "%s", err.message);
  ck_assert_uint_eq(graphc_executable_num_outputs(e), 1);
  graphc_tensor_t out1 = {GRAPHC_DTYPE_F32, 1, {3}, got_s, sizeof got_s};
  ck_assert_msg(graphc_executable_run(e, in, 2, &out1, 1, &err) == 0, "%s", err.message);
  for (int i = 0; i < 3; i++) ck_assert_float_eq_tol(got_s[i], full_s[i], 1e-5);
  graphc_executable_destroy(e);
  graphc_model_destroy(m2);
  /* errors */
  static const char *const bad[][2] = {{"q", "returns no '%q' (it returns %y, %z, %s)"},
                                       {"y,z,%y", "'%y' is named twice"},
                                       {"", "returns no '%'"}};
  for (int i = 0; i < 3; i++) {
    o.outputs = bad[i][0];
    e = NULL;
    ck_assert_int_eq(graphc_compile(m, &o, &e, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
    ck_assert_ptr_null(e);
    ck_assert_msg(strstr(err.message, bad[i][1]), "%s", err.message);
  }
  graphc_model_destroy(m);
}
END_TEST

int main(void) {
  Suite *s = suite_create("api");
  TCase *tc = tcase_create("api");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, status_and_dtype_names);
  tcase_add_test(tc, null_handles);
  tcase_add_test(tc, syntax_error_has_position_and_caret);
  tcase_add_test(tc, missing_file_is_io_error);
  tcase_add_test(tc, bind_errors);
  tcase_add_test(tc, run_and_validate_io);
  tcase_add_test(tc, entry_and_print);
  tcase_add_test(tc, weights_missing_and_random);
  tcase_add_test(tc, params_without_weights_statement);
  tcase_add_test(tc, emit_code_without_a_gpu);
  tcase_add_test(tc, cpu_or_cuda_unavailable_is_clean);
  tcase_add_test(tc, output_names_as_written);
  tcase_add_test(tc, selected_outputs);
  suite_add_tcase(s, tc);
  return tu_run_suite(s);
}
