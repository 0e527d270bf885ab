/* test_examples_gpu.c - every examples/ .graph file and every fusion golden graph
 * (tests/fusion/: loop, input, output and multi-output fusion, absorbed
 * transposes, f16 rounding) end to end on the CUDA backend (nvrtc and llvm
 * paths, fused plans) against the interpreter.
 *
 * For each example: every symbolic dim of the entry graph is bound to 2, then
 * to 5 (an odd size); params get fresh random weights written to a temporary
 * file; inputs are fresh random data (gc_random_fill, ints in [0, 4) so token
 * ids stay valid). Outputs must match the interpreter within the brief's
 * tolerances for chains (f32 2e-4, f16 2e-3, bf16 2e-2, ints exact).
 * No device: "SKIPPED: no CUDA device", exit 77 (GRAPHC_TEST_DRY=1: the examples
 * on the interpreter only, to check the harness). Seed: $GRAPHC_TEST_SEED.
 */
#include <glob.h>
#include <sys/wait.h>

#include "testutil.h"
#include "cuda_testutil.h"
#include "driver/exec.h"
#include "frontend/parser.h"
#include "weights/safetensors.h"

static uint64_t g_seed;
static glob_t g_examples;
static int g_dry;   /* GRAPHC_TEST_DRY=1 without a device: interpreter only */

/* Names of the entry graph's symbolic dims (parsed here; the API does not list them). */
static int symbols_of(const char *text, size_t len, char names[][64], int max) {
  gc_diags d;
  gc_diags_init(&d, "example", text, len);
  gc_module *m = gc_parse("example", text, len, &d);
  int n = 0;
  if (m && m->n_graphs > 0)
    for (int i = 0; i < m->graphs[0]->n_syms && n < max; i++)
      snprintf(names[n++], 64, "%s", m->graphs[0]->sym_names[i]);
  gc_module_free(m);
  gc_diags_free(&d);
  return n;
}

/* Compile m for a backend or fail the test with diagnostics. */
static graphc_executable_t *must_compile(graphc_context_t *ctx, graphc_model_t *m,
                                         graphc_backend_t be, graphc_codegen_t cg,
                                         const char *file) {
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = be;
  o.codegen = cg;
  graphc_executable_t *exe = NULL;
  graphc_error_t err;
  graphc_status_t st = graphc_compile(m, &o, &exe, &err);
  ck_assert_msg(st == GRAPHC_STATUS_OK, "%s: compile for %s/%s: %s: %s\n%s", file,
                graphc_backend_name(be), graphc_codegen_name(cg), graphc_status_string(st),
                err.message, graphc_context_diagnostics(ctx));
  return exe;
}

START_TEST(example_against_interpreter) {
  const char *file = g_examples.gl_pathv[_i];
  size_t len = 0;
  char *text = tu_read_file(file, &len);
  ck_assert_msg(text != NULL, "cannot read %s", file);
  char syms[16][64];
  int n_syms = symbols_of(text, len, syms, 16);
  free(text);
  static const int64_t sizes[] = {2, 5};
  for (int si = 0; si < 2; si++) {
    graphc_context_t *ctx;
    ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
    graphc_model_t *m = NULL;
    graphc_error_t err;
    ck_assert_msg(graphc_model_load_file(ctx, file, &m, &err) == GRAPHC_STATUS_OK, "%s: %s", file,
                  err.message);
    for (int k = 0; k < n_syms; k++)
      ck_assert_msg(graphc_model_bind(m, syms[k], sizes[si], &err) == GRAPHC_STATUS_OK, "%s", err.message);
    char wpath[4200];
    snprintf(wpath, sizeof wpath, "%s/ex-%d.safetensors", tu_tmpdir(), (int)getpid());
    uint64_t seed = g_seed + (uint64_t)_i * 977 + (uint64_t)si;
    text = tu_read_file(file, &len);
    int has_params = text && strstr(text, "param ") != NULL;
    free(text);
    if (has_params) {
      ck_assert_msg(graphc_model_write_random_weights(m, wpath, seed, &err) == GRAPHC_STATUS_OK,
                    "%s: weights: %s", file, err.message);
      ck_assert_int_eq(graphc_model_set_weights(m, wpath, &err), GRAPHC_STATUS_OK);
    }
    graphc_executable_t *ref = must_compile(ctx, m, GRAPHC_BACKEND_INTERP, GRAPHC_CODEGEN_DEFAULT, file);
    size_t ni = graphc_executable_num_inputs(ref), no = graphc_executable_num_outputs(ref);
    graphc_tensor_t *in, *rout;
    uint64_t s = seed;
    ck_assert_int_eq(tu_make_io(ref, NULL, &s, &in, &rout), 0);
    for (size_t i = 0; i < ni; i++) { /* gc_random_fill: valid ids for integer inputs */
      gc_type ty = {.dtype = in[i].dtype, .rank = in[i].rank};
      memcpy(ty.dims, in[i].dims, sizeof ty.dims);
      gc_random_fill(in[i].data, &ty, seed * 31 + i);
    }
    graphc_status_t st = graphc_executable_run(ref, in, ni, rout, no, &err);
    ck_assert_msg(st == GRAPHC_STATUS_OK, "%s: interpreter: %s", file, err.message);
    if (g_dry) printf("%-40s dims=%lld interpreter ok (dry run)\n", file, (long long)sizes[si]);
    for (int cg = GRAPHC_CODEGEN_NVRTC; cg <= GRAPHC_CODEGEN_LLVM && !g_dry; cg++) {
      graphc_executable_t *exe = must_compile(ctx, m, GRAPHC_BACKEND_CUDA, (graphc_codegen_t)cg, file);
      graphc_tensor_t *out = tu_clone_outputs(rout, no);
      st = graphc_executable_run(exe, in, ni, out, no, &err);
      ck_assert_msg(st == GRAPHC_STATUS_OK, "%s (%s): run: %s", file,
                    graphc_codegen_name((graphc_codegen_t)cg), err.message);
      double worst = 0;
      for (size_t i = 0; i < no; i++) {
        double atol, rtol;
        tu_tolerance(rout[i].dtype, 1, &atol, &rtol);
        int64_t n = (int64_t)(rout[i].nbytes / graphc_dtype_size(rout[i].dtype));
        tu_cmp c = tu_compare(rout[i].data, out[i].data, rout[i].dtype, n, atol, rtol);
        if (c.worst > worst) worst = c.worst;
        ck_assert_msg(c.n_bad == 0,
                      "%s (dims=%lld, %s): output %zu: %lld of %lld differ; first [%lld] ref %.9g "
                      "got %.9g (seed %llu)",
                      file, (long long)sizes[si], graphc_codegen_name((graphc_codegen_t)cg), i,
                      (long long)c.n_bad, (long long)n, (long long)c.first_bad, c.ref_bad,
                      c.got_bad, (unsigned long long)g_seed);
      }
      printf("%-40s dims=%lld %-5s pass (worst err/tol %.3g)\n", file, (long long)sizes[si],
             graphc_codegen_name((graphc_codegen_t)cg), worst);
      tu_free_tensors(out, no);
      graphc_executable_destroy(exe);
    }
    tu_free_tensors(in, ni);
    tu_free_tensors(rout, no);
    graphc_executable_destroy(ref);
    graphc_model_destroy(m);
    graphc_context_destroy(ctx);
    remove(wpath);
  }
}
END_TEST

int main(void) {
  const char *dry = getenv("GRAPHC_TEST_DRY");
  if (!tu_probe_device()) {
    g_dry = dry && strcmp(dry, "1") == 0;
    if (!g_dry) {
      printf("SKIPPED: no CUDA device (GRAPHC_TEST_DRY=1 runs the examples on the interpreter)\n");
      return 77;
    }
  }
  g_seed = tu_seed();
  if (glob(tu_src("examples/*.graph"), 0, NULL, &g_examples) != 0 || g_examples.gl_pathc == 0) {
    printf("SKIPPED: no examples/*.graph\n");
    globfree(&g_examples);
    return 77;
  }
  glob(tu_src("tests/fusion/*.graph"), GLOB_APPEND, NULL, &g_examples);
  printf("test_examples_gpu: %zu graphs, seed %llu (GRAPHC_TEST_SEED=%llu reproduces)\n",
         g_examples.gl_pathc, (unsigned long long)g_seed, (unsigned long long)g_seed);
  Suite *s = suite_create("examples_gpu");
  TCase *tc = tcase_create("examples");
  tcase_add_loop_test(tc, example_against_interpreter, 0, (int)g_examples.gl_pathc);
  tcase_set_timeout(tc, 600);
  suite_add_tcase(s, tc);
  int rc = tu_run_suite(s);
  globfree(&g_examples);
  if (g_dry) {
    printf("SKIPPED: no CUDA device (dry run %s)\n", rc == 0 ? "passed" : "FAILED");
    return rc == 0 ? 77 : 1;
  }
  return rc;
}
