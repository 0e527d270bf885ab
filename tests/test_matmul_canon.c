/* test_matmul_canon.c - the matmul-canon pass (passes/matmul_canon.c) end to end.
 *
 *   cpu_vs_interp  linears over rank-3..5 activations (2-D weights, transpose_b,
 *                  unit batch dims on w, a 2-D a against a batched-1 w) with bias,
 *                  activations, layer scale, residual adds and casts, the ConvNeXt
 *                  MLP, and the forms the pass leaves alone (attention's q k^T,
 *                  transpose_a, a broadcast a, a per-row bias): in f32 and f16 the
 *                  cpu backend (which runs the pass) must match the interpreter
 *                  (which does not) within the per-dtype tolerances on random data
 *                  (norm-relative: the bound scales with the output's largest value);
 *                  and the cpu pipeline leaves exactly the expected matmuls batched.
 *   cuda_gemm      the f16 ConvNeXt MLP lowered for sm_90 without a GPU: with the
 *                  pass, two kernels, each a tensor-core GEMM with its epilogue, and
 *                  CUDA C that uses the tensor cores; without it (M = W = 4 per
 *                  batch) the matmuls miss the tensor cores.
 * The random seed is printed (GRAPHC_TEST_SEED reproduces a run).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen/kir.h"
#include "codegen/lower.h"
#include "frontend/parser.h"
#include "passes/pipeline.h"
#include "tests/cuda_testutil.h"
#include "tests/testutil.h"

static uint64_t g_seed;

/* A case: graph text with `T` for the dtype, and how many matmuls stay batched
 * (result rank > 2) after the cpu pipeline. */
typedef struct mc_case {
  const char *name;
  const char *text;
  int batched_left;
} mc_case;

static const mc_case k_cases[] = {
    {"rank3", "graph @g(%x: T[2, 5, 12], %w: T[12, 7]) -> (T[2, 5, 7]) {\n"
              "  %m = matmul(%x, %w);\n  return %m;\n}\n", 0},
    {"rank4_bias_gelu",
     "graph @g(%x: T[2, 3, 4, 12], %w: T[12, 16], %b: T[16]) -> (T[2, 3, 4, 16]) {\n"
     "  %m = matmul(%x, %w);\n  %a = add(%m, %b);\n  %y = gelu(%a);\n  return %y;\n}\n", 0},
    {"rank3_tb_relu_residual_cast",
     "graph @g(%x: T[3, 5, 16], %w: T[16, 16], %b: T[1, 1, 16]) -> (f32[3, 5, 16], T[3, 5, 16]) {\n"
     "  %m = matmul(%x, %w, transpose_b=true);\n  %a = add(%b, %m);\n  %r = relu(%a);\n"
     "  %s = add(%r, %x);\n  %c = cast(%s, to=f32);\n  return %c, %m;\n}\n", 0},
    {"convnext_mlp",
     "graph @g(%x: T[2, 4, 4, 8], %w1: T[8, 32], %b1: T[32], %w2: T[32, 8], %b2: T[8], %gm: T[8])\n"
     "    -> (T[2, 4, 4, 8]) {\n"
     "  %m1 = matmul(%x, %w1);\n  %a1 = add(%m1, %b1);\n  %g = gelu(%a1);\n"
     "  %m2 = matmul(%g, %w2);\n  %a2 = add(%m2, %b2);\n  %s = mul(%a2, %gm);\n"
     "  %y = add(%x, %s);\n  return %y;\n}\n", 0},
    {"rank5_unit_batch_w",
     "graph @g(%x: T[2, 2, 2, 3, 6], %w: T[1, 6, 5], %b: T[1, 1, 5]) -> (T[2, 2, 2, 3, 5]) {\n"
     "  %m = matmul(%x, %w);\n  %a = sub(%m, %b);\n  %y = sigmoid(%a);\n  return %y;\n}\n", 0},
    {"rank2_a_unit_batch_w",
     "graph @g(%x: T[5, 6], %w: T[1, 1, 6, 4]) -> (T[1, 1, 5, 4]) {\n"
     "  %m = matmul(%x, %w);\n  %y = tanh(%m);\n  return %y;\n}\n", 0},
    /* the matmul's result also read by a reduction and returned in its own shape */
    {"shared_result",
     "graph @g(%x: T[2, 3, 8], %w: T[8, 6], %s: T[]) -> (T[2, 3, 6], T[2, 3], T[2, 3, 6]) {\n"
     "  %m = matmul(%x, %w);\n  %r = reduce_sum(%m, axes=[2]);\n  %y = mul(%m, %s);\n"
     "  return %m, %r, %y;\n}\n", 0},
    /* left alone: both sides batched, transpose_a, a broadcast a; the per-row bias
     * stops the sinking (its matmul is still flattened) */
    {"left_alone",
     "graph @g(%q: T[2, 3, 4, 5], %k: T[2, 3, 4, 5], %xt: T[2, 6, 3], %w: T[6, 7], %x2: T[3, 6],\n"
     "         %x: T[2, 3, 6], %rb: T[2, 3, 1]) -> (T[2, 3, 4, 4], T[2, 3, 7], T[2, 3, 7], T[2, 3, 7]) {\n"
     "  %s = matmul(%q, %k, transpose_b=true);\n  %t = matmul(%xt, %w, transpose_a=true);\n"
     "  %xb = broadcast(%x2, shape=[2, 3, 6]);\n  %u = matmul(%xb, %w);\n"
     "  %m = matmul(%x, %w);\n  %v = add(%m, %rb);\n  return %s, %t, %u, %v;\n}\n", 3},
};
#define N_CASES ((int)(sizeof k_cases / sizeof k_cases[0]))

/* "version 1;" + the case's text with T replaced by dtype (malloc'd). */
static char *case_text(const mc_case *c, const char *dtype) {
  size_t n = strlen(c->text), cap = 32 + n * 4;
  char *s = malloc(cap), *o = s + snprintf(s, cap, "version 1;\n");
  for (const char *p = c->text; *p; p++)
    if (*p == 'T' && (p[1] == '[' )) o += sprintf(o, "%s", dtype);
    else *o++ = *p;
  *o = 0;
  return s;
}

/* Parse and verify text; the module (caller frees). */
static gc_module *parse_ok(const char *label, const char *text) {
  gc_diags d;
  gc_diags_init(&d, label, text, strlen(text));
  gc_module *m = gc_parse(label, text, strlen(text), &d);
  int ok = m && gc_verify_module(m, &d) == 0;
  char *r = gc_diags_render(&d);
  ck_assert_msg(ok, "%s does not load:\n%s\n%s", label, r ? r : "", text);
  free(r);
  gc_diags_free(&d);
  return m;
}

/* Run the pipeline as for backend be (disable: passes to skip, or NULL). */
static void run_pipeline(gc_graph *g, graphc_backend_t be, const char *disable) {
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = be;
  o.disable_passes = disable;
  gc_sbuf stats = {0};
  gc_diags d;
  gc_diags_init(&d, "pipeline", NULL, 0);
  ck_assert_int_eq(gc_run_pipeline(g, &o, &stats, &d), 0);
  gc_diags_free(&d);
  gc_sbuf_free(&stats);
}

/* Matmuls whose result has rank > 2. */
static int batched_matmuls(const gc_graph *g) {
  int n = 0;
  for (const gc_op *op = g->first; op; op = op->next)
    n += op->opcode == GC_OP_MATMUL && op->results[0]->type.rank > 2;
  return n;
}

/* Compile for be through the public API (aborts with the diagnostics). */
static graphc_executable_t *compile_for(graphc_context_t *ctx, graphc_model_t *m, graphc_backend_t be,
                                        const char *label) {
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = be;
  graphc_executable_t *exe = NULL;
  graphc_error_t err;
  graphc_status_t st = graphc_compile(m, &o, &exe, &err);
  ck_assert_msg(st == GRAPHC_STATUS_OK, "%s: compile for %s: %s\n%.4000s", label, graphc_backend_name(be),
                err.message, graphc_context_diagnostics(ctx));
  return exe;
}

/* One case in one dtype: the pipeline's form, then cpu against the interpreter. */
static void check_case(const mc_case *c, const char *dtype, uint64_t seed) {
  char label[128];
  snprintf(label, sizeof label, "%s_%s", c->name, dtype);
  char *text = case_text(c, dtype);
  gc_module *mod = parse_ok(label, text);
  run_pipeline(mod->graphs[0], GRAPHC_BACKEND_CPU, NULL);
  ck_assert_msg(batched_matmuls(mod->graphs[0]) == c->batched_left, "%s: %d batched matmuls left, %d expected",
                label, batched_matmuls(mod->graphs[0]), c->batched_left);
  gc_module_free(mod);

  graphc_context_t *ctx = NULL;
  graphc_model_t *m = NULL;
  graphc_error_t err;
  ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
  ck_assert_msg(graphc_model_load_string(ctx, label, text, strlen(text), &m, &err) == GRAPHC_STATUS_OK,
                "%s: %s", label, err.message);
  graphc_executable_t *ref = compile_for(ctx, m, GRAPHC_BACKEND_INTERP, label);
  graphc_executable_t *cpu = compile_for(ctx, m, GRAPHC_BACKEND_CPU, label);
  graphc_tensor_t *in, *rout;
  uint64_t s = seed;
  ck_assert_int_eq(tu_make_io(ref, "kkkkkkk", &s, &in, &rout), 0);
  size_t ni = graphc_executable_num_inputs(ref), no = graphc_executable_num_outputs(ref);
  graphc_tensor_t *cout = tu_clone_outputs(rout, no);
  ck_assert_ptr_nonnull(cout);
  for (size_t i = 0; i < no; i++) memset(cout[i].data, 0xa5, cout[i].nbytes);  /* poison */
  ck_assert_msg(graphc_executable_run(ref, in, ni, rout, no, &err) == GRAPHC_STATUS_OK, "%s: interp: %s", label,
                err.message);
  ck_assert_msg(graphc_executable_run(cpu, in, ni, cout, no, &err) == GRAPHC_STATUS_OK, "%s: cpu: %s", label,
                err.message);
  for (size_t i = 0; i < no; i++) {
    double atol, rtol;
    /* an f32 output of an f16 case (a cast at the end) carries the f16 roundings before it:
     * one flipped rounding of the matmul's f16 result moves it by an f16 ulp */
    tu_tolerance(strcmp(dtype, "f16") == 0 ? GRAPHC_DTYPE_F16 : rout[i].dtype, 1, &atol, &rtol);
    int64_t n = (int64_t)(rout[i].nbytes / graphc_dtype_size(rout[i].dtype));
    /* chained contractions cancel: the absolute bound scales with the output's largest
     * magnitude (norm-relative, as test_fusion does; NaN never passes) */
    double mx = 0;
    for (int64_t e = 0; e < n; e++) {
      double v = fabs(gc_load_f64(rout[i].data, rout[i].dtype, e));
      if (v > mx) mx = v;
    }
    if (rtol * mx > atol) atol = rtol * mx;
    tu_cmp cm = tu_compare(rout[i].data, cout[i].data, rout[i].dtype, n, atol, rtol);
    ck_assert_msg(cm.n_bad == 0, "%s (seed %llu): output %zu: %lld of %lld differ, first at [%lld]: interp %.9g cpu %.9g",
                  label, (unsigned long long)seed, i, (long long)cm.n_bad, (long long)n, (long long)cm.first_bad,
                  cm.ref_bad, cm.got_bad);
  }
  tu_free_tensors(in, ni);
  tu_free_tensors(rout, no);
  tu_free_tensors(cout, no);
  graphc_executable_destroy(ref);
  graphc_executable_destroy(cpu);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
  free(text);
}

START_TEST(test_cpu_vs_interp) {
  const mc_case *c = &k_cases[_i / 2];
  check_case(c, _i % 2 ? "f16" : "f32", g_seed + (uint64_t)_i * 7919);
}
END_TEST

/* ---- CUDA code without a GPU ------------------------------------------------------------------- */

static const mc_case k_convnext_f16 = {
    "convnext_f16",
    "graph @g(%x: T[2, 4, 4, 64], %w1: T[64, 256], %b1: T[256], %w2: T[256, 64], %b2: T[64], %gm: T[64])\n"
    "    -> (T[2, 4, 4, 64]) {\n"
    "  %m1 = matmul(%x, %w1);\n  %a1 = add(%m1, %b1);\n  %g = gelu(%a1);\n"
    "  %m2 = matmul(%g, %w2);\n  %a2 = add(%m2, %b2);\n  %s = mul(%a2, %gm);\n"
    "  %y = add(%x, %s);\n  return %y;\n}\n", 0};

/* The sm_90 plan of the f16 ConvNeXt MLP after the cuda pipeline (disable: passes off). */
static gc_plan *convnext_plan(gc_module **mod, const char *disable) {
  char *text = case_text(&k_convnext_f16, "f16");
  *mod = parse_ok("convnext_f16", text);
  free(text);
  gc_graph *g = (*mod)->graphs[0];
  run_pipeline(g, GRAPHC_BACKEND_CUDA, disable);
  kir_target t;
  kir_target_cuda(&t, 90);
  gc_diags d;
  gc_diags_init(&d, "lower", NULL, 0);
  gc_plan *p = gc_lower_opts(g, &t, 1, &d);
  char *r = gc_diags_render(&d);
  ck_assert_msg(p != NULL, "lowering failed: %s", r ? r : "");
  free(r);
  gc_diags_free(&d);
  return p;
}

/* Kernels computing a matmul, and how many of them use the tensor cores. */
static void matmul_kernels(const gc_plan *p, int *n_mm, int *n_tc) {
  *n_mm = *n_tc = 0;
  for (int i = 0; i < p->kir->n_kernels; i++) {
    if (!strstr(p->kernel_ops[i], "matmul")) continue;
    (*n_mm)++;
    *n_tc += kir_uses_tensor_cores(p->kir->kernels[i]);
  }
}

START_TEST(test_cuda_gemm) {
  gc_module *mod;
  gc_plan *p = convnext_plan(&mod, NULL);
  int n_mm, n_tc;
  matmul_kernels(p, &n_mm, &n_tc);
  ck_assert_msg(p->kir->n_kernels == 2, "%d kernels, 2 expected (each GEMM with its epilogue)", p->kir->n_kernels);
  ck_assert_int_eq(n_mm, 2);
  ck_assert_int_eq(n_tc, 2);
  ck_assert_msg(strstr(p->kernel_ops[0], "gelu") && strstr(p->kernel_ops[1], "mul") &&
                    strstr(p->kernel_ops[1], "reshape %y"),
                "epilogues: %s | %s", p->kernel_ops[0], p->kernel_ops[1]);
  gc_sbuf cu = {0};
  gc_cuda_c_print(&cu, p->kir);
  ck_assert_msg(cu.data && (strstr(cu.data, "mma.sync") || strstr(cu.data, "wgmma")), "no tensor-core code");
  gc_sbuf_free(&cu);
  gc_plan_free(p);
  gc_module_free(mod);

  p = convnext_plan(&mod, "matmul-canon");
  matmul_kernels(p, &n_mm, &n_tc);
  ck_assert_int_eq(n_mm, 2);
  ck_assert_msg(n_tc == 0, "without matmul-canon %d matmuls of M 4 used the tensor cores", n_tc);
  gc_plan_free(p);
  gc_module_free(mod);
}
END_TEST

int main(void) {
  const char *env = getenv("GRAPHC_TEST_SEED");
  g_seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
  printf("test_matmul_canon: seed %llu (set GRAPHC_TEST_SEED to reproduce)\n", (unsigned long long)g_seed);
  Suite *s = suite_create("matmul_canon");
  TCase *tc = tcase_create("cpu_vs_interp");
  tcase_set_timeout(tc, 600);
  tcase_add_loop_test(tc, test_cpu_vs_interp, 0, 2 * N_CASES);
  suite_add_tcase(s, tc);
  TCase *tg = tcase_create("cuda_gemm");
  tcase_add_test(tg, test_cuda_gemm);
  suite_add_tcase(s, tg);
  return tu_run_suite(s);
}
