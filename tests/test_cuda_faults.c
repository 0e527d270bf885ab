/* test_cuda_faults.c - CUDA driver failures, one at a time, through the fault
 * shim (tests/cuda_fault_shim.c, loaded with GRAPHC_CUDA_DRIVER).
 *
 * For each model (examples/mlp.graph with B=2, examples/transformer_block.graph
 * with B=1, S=4, and tests/cuda_faults_f16.graph, an f16 matmul whose kernel asks
 * for dynamic shared memory on sm_90) and each class of driver call (alloc, module, launch, graph,
 * copy, sync, stream, device, and ctx on request: see tests/cuda_fault_shim.h), for N = 1, 2, ...
 * until the Nth call of the class is never reached: compile for the cuda
 * backend and run, with the Nth call of the class failing. Each time:
 *   - a compile or run that fails returns OUT_OF_MEMORY for an injected
 *     CUDA_ERROR_OUT_OF_MEMORY and DEVICE_ERROR otherwise, with a message that
 *     names the failed call ("cuMemAlloc") and the CUresult's name;
 *   - one that succeeds anyway (a fallback, or a failure during teardown)
 *     gives the interpreter's results;
 *   - after the executable is destroyed nothing is live on the device (the
 *     shim counts allocations, modules, streams, events, graphs, graph
 *     executables, context retains and pushes): nothing leaked;
 *   - the context is usable afterwards: a fresh compile + run in the same
 *     graphc context gives the interpreter's results.
 * Host leaks are LeakSanitizer's job (the ASan suite runs this too).
 * Compiled modules come from a private JIT cache (one compile per model).
 *
 * No device: "SKIPPED", exit 77. GRAPHC_TEST_DRY=1 without a device runs the
 * same loops over tests/cuda_fake_driver.c (a pretend driver: statuses,
 * messages, leaks and later compilations are checked, values are not), and
 * still exits 77 when they pass. GRAPHC_CUDA_FAULT_CLASSES=alloc,launch limits
 * the classes. The ctx class (cuCtxPushCurrent) runs only when named there:
 * when the push fails in teardown, graphc still releases everything without the
 * context current, which the pretend driver accepts and a real driver may
 * refuse (a real push fails only on a destroyed context). Seed: $GRAPHC_TEST_SEED.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <sys/wait.h>

#include "testutil.h"
#include "cuda_testutil.h"
#include "cuda_fault_shim.h"
#include "driver/exec.h"
#include "weights/safetensors.h"

#ifndef GRAPHC_CUDA_SHIM
#error "GRAPHC_CUDA_SHIM (path of libgraphc_cuda_fault_shim.so) must be defined"
#endif

static const char *const k_classes[] = {"alloc", "module", "launch", "graph",
                                        "copy",  "sync",   "stream", "device", "ctx"};
#define N_CLASSES (int)(sizeof k_classes / sizeof k_classes[0])

static const struct {
  const char *file;
  const char *syms[2];
  int64_t vals[2];
} k_models[] = {
    {"examples/mlp.graph", {"B", NULL}, {2, 0}},
    {"examples/transformer_block.graph", {"B", "S"}, {1, 4}},
    {"tests/cuda_faults_f16.graph", {NULL, NULL}, {0, 0}},  /* wgmma on sm_90: cuFuncSetAttribute */
};
#define N_MODELS (int)(sizeof k_models / sizeof k_models[0])

static uint64_t g_seed;
static int g_dry;            /* pretend driver: values are not compared */
static char g_cache_dir[512];

/* The shim's control calls. */
static struct {
  graphc_cushim_arm_fn *arm;
  graphc_cushim_fired_fn *fired;
  graphc_cushim_calls_fn *calls;
  graphc_cushim_live_fn *live;
  graphc_cushim_kind_fn *kind;
  graphc_cushim_result_name_fn *result_name;
} shim;

/* Resolve the control calls from the instance the runtime loaded. */
static void shim_bind(void) {
  void *h = dlopen(GRAPHC_CUDA_SHIM, RTLD_NOW | RTLD_LOCAL);
  ck_assert_msg(h != NULL, "cannot open the shim %s: %s", GRAPHC_CUDA_SHIM, dlerror());
  shim.arm = (graphc_cushim_arm_fn *)dlsym(h, "graphc_cushim_arm");
  shim.fired = (graphc_cushim_fired_fn *)dlsym(h, "graphc_cushim_fired");
  shim.calls = (graphc_cushim_calls_fn *)dlsym(h, "graphc_cushim_calls");
  shim.live = (graphc_cushim_live_fn *)dlsym(h, "graphc_cushim_live");
  shim.kind = (graphc_cushim_kind_fn *)dlsym(h, "graphc_cushim_kind");
  shim.result_name = (graphc_cushim_result_name_fn *)dlsym(h, "graphc_cushim_result_name");
  ck_assert(shim.arm && shim.fired && shim.calls && shim.live && shim.kind && shim.result_name);
}

/* Everything the device holds now must equal `base`. */
static void check_nothing_live(const long *base, const char *what, const char *cls, int n) {
  long now[GRAPHC_CUSHIM_KINDS];
  shim.live(now);
  for (int k = 0; k < GRAPHC_CUSHIM_KINDS; k++)
    ck_assert_msg(now[k] == base[k], "%s, %s call %d failing: %ld %s live afterwards (%ld before)",
                  what, cls, n, now[k], shim.kind(k), base[k]);
}

/* Outputs against the interpreter (skipped over the pretend driver). */
static void check_outputs(const graphc_tensor_t *ref, const graphc_tensor_t *got, size_t n,
                          const char *what, const char *cls, int fail_n) {
  if (g_dry) return;
  for (size_t i = 0; i < n; i++) {
    double atol, rtol;
    tu_tolerance(ref[i].dtype, 1, &atol, &rtol);
    int64_t numel = (int64_t)(ref[i].nbytes / graphc_dtype_size(ref[i].dtype));
    tu_cmp c = tu_compare(ref[i].data, got[i].data, ref[i].dtype, numel, atol, rtol);
    ck_assert_msg(c.n_bad == 0,
                  "%s, %s call %d failing: output %zu: %lld of %lld differ; first [%lld] ref %.9g "
                  "got %.9g (seed %llu)",
                  what, cls, fail_n, i, (long long)c.n_bad, (long long)numel, (long long)c.first_bad,
                  c.ref_bad, c.got_bad, (unsigned long long)g_seed);
  }
}

/* Compile for cuda and run once; the status of the first failing step. */
static graphc_status_t compile_run(graphc_model_t *m, const graphc_tensor_t *in, size_t ni,
                                   graphc_tensor_t *out, size_t no, graphc_error_t *err) {
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_CUDA;
  graphc_executable_t *exe = NULL;
  graphc_status_t st = graphc_compile(m, &o, &exe, err);
  if (st == GRAPHC_STATUS_OK) st = graphc_executable_run(exe, in, ni, out, no, err);
  graphc_executable_destroy(exe);
  return st;
}

START_TEST(driver_faults) {
  int mi = _i / N_CLASSES;
  const char *cls = k_classes[_i % N_CLASSES];
  const char *file = k_models[mi].file;
  const char *only = getenv("GRAPHC_CUDA_FAULT_CLASSES");
  if (only && *only ? !strstr(only, cls) : strcmp(cls, "ctx") == 0) return;

  graphc_context_t *ctx;
  ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
  graphc_model_t *m = NULL;
  graphc_error_t err;
  ck_assert_msg(graphc_model_load_file(ctx, tu_src(file), &m, &err) == GRAPHC_STATUS_OK, "%s: %s",
                file, err.message);
  for (int k = 0; k < 2 && k_models[mi].syms[k]; k++)
    ck_assert_msg(graphc_model_bind(m, k_models[mi].syms[k], k_models[mi].vals[k], &err) ==
                      GRAPHC_STATUS_OK, "%s", err.message);
  char wpath[4200];
  snprintf(wpath, sizeof wpath, "%s/faults-%d.safetensors", tu_tmpdir(), (int)getpid());
  ck_assert_msg(graphc_model_write_random_weights(m, wpath, g_seed + (uint64_t)mi, &err) ==
                    GRAPHC_STATUS_OK, "%s: weights: %s", file, err.message);
  ck_assert_int_eq(graphc_model_set_weights(m, wpath, &err), GRAPHC_STATUS_OK);

  /* The reference: the interpreter, on the inputs every run uses. */
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_INTERP;
  graphc_executable_t *ref = NULL;
  ck_assert_msg(graphc_compile(m, &o, &ref, &err) == GRAPHC_STATUS_OK, "%s", err.message);
  size_t ni = graphc_executable_num_inputs(ref), no = graphc_executable_num_outputs(ref);
  graphc_tensor_t *in, *rout;
  uint64_t s = g_seed;
  ck_assert_int_eq(tu_make_io(ref, NULL, &s, &in, &rout), 0);
  for (size_t i = 0; i < ni; i++) {   /* as test_examples_gpu: gc_random_fill's ranges */
    gc_type ty = {.dtype = in[i].dtype, .rank = in[i].rank};
    memcpy(ty.dims, in[i].dims, sizeof ty.dims);
    gc_random_fill(in[i].data, &ty, g_seed * 31 + i);
  }
  ck_assert_int_eq(graphc_executable_run(ref, in, ni, rout, no, &err), GRAPHC_STATUS_OK);
  graphc_executable_destroy(ref);

  /* A clean run first: the driver is open, the module is in the cache, the
   * shim is bound, and what is live now is the baseline. */
  graphc_tensor_t *out = tu_clone_outputs(rout, no);
  graphc_status_t st = compile_run(m, in, ni, out, no, &err);
  ck_assert_msg(st == GRAPHC_STATUS_OK, "%s: clean run: %s", file, err.message);
  check_outputs(rout, out, no, file, "no", 0);
  tu_free_tensors(out, no);
  shim_bind();
  long base[GRAPHC_CUSHIM_KINDS];
  shim.live(base);

  int n = 1, failed = 0, survived = 0;
  for (;; n++) {
    ck_assert_msg(n < 100000, "%s: %s: no end to the calls", file, cls);
    shim.arm(cls, n);
    out = tu_clone_outputs(rout, no);
    memset(&err, 0, sizeof err);
    st = compile_run(m, in, ni, out, no, &err);
    const char *call = NULL;
    int result = 0;
    int fired = shim.fired(&call, &result);
    shim.arm(NULL, 0);
    check_nothing_live(base, file, cls, n);
    if (!fired) {   /* past the last call of the class: a clean run */
      ck_assert_msg(st == GRAPHC_STATUS_OK, "%s: %s call %d was never made, yet: %s: %s", file, cls,
                    n, graphc_status_string(st), err.message);
      check_outputs(rout, out, no, file, cls, n);
      tu_free_tensors(out, no);
      break;
    }
    const char *rname = shim.result_name(result);
    if (st != GRAPHC_STATUS_OK) {
      failed++;
      graphc_status_t want = strcmp(rname, "CUDA_ERROR_OUT_OF_MEMORY") == 0
                                 ? GRAPHC_STATUS_OUT_OF_MEMORY
                                 : GRAPHC_STATUS_DEVICE_ERROR;
      ck_assert_msg(st == want && err.code == st,
                    "%s: %s call %d (%s -> %s): status %s, expected %s: %s", file, cls, n, call,
                    rname, graphc_status_string(st), graphc_status_string(want), err.message);
      ck_assert_msg(strstr(err.message, call) && strstr(err.message, rname),
                    "%s: %s call %d (%s -> %s): the message does not name both: '%s'", file, cls,
                    n, call, rname, err.message);
    } else {
      survived++;   /* handled (fallback, or a failure in teardown): results must be right */
      check_outputs(rout, out, no, file, cls, n);
    }
    tu_free_tensors(out, no);
    /* The context is usable afterwards. */
    out = tu_clone_outputs(rout, no);
    st = compile_run(m, in, ni, out, no, &err);
    ck_assert_msg(st == GRAPHC_STATUS_OK, "%s: after %s call %d (%s) failed, a new compile + run: %s",
                  file, cls, n, call, err.message);
    check_outputs(rout, out, no, file, cls, n);
    tu_free_tensors(out, no);
    check_nothing_live(base, file, cls, n);
  }
  ck_assert_msg(n > 1, "%s: no %s call was ever made (is the shim loaded?)", file, cls);
  printf("%-34s %-7s %3d calls: %3d failed with a status, %3d handled%s\n", file, cls, n - 1, failed,
         survived, g_dry ? " (pretend driver)" : "");
  tu_free_tensors(in, ni);
  tu_free_tensors(rout, no);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
  remove(wpath);
}
END_TEST

/* A graphc context keeps the primary context retained from its first CUDA
 * executable until it is destroyed: destroying the last executable does not
 * reset it (the next compile would pay for a new one), and nothing else stays. */
START_TEST(context_holds_primary_context) {
  graphc_context_t *ctx;
  ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
  graphc_model_t *m = NULL;
  graphc_error_t err;
  ck_assert_msg(graphc_model_load_file(ctx, tu_src("examples/mlp.graph"), &m, &err) == GRAPHC_STATUS_OK,
                "%s", err.message);
  ck_assert_int_eq(graphc_model_bind(m, "B", 2, &err), GRAPHC_STATUS_OK);
  char wpath[4200];
  snprintf(wpath, sizeof wpath, "%s/hold-%d.safetensors", tu_tmpdir(), (int)getpid());
  ck_assert_int_eq(graphc_model_write_random_weights(m, wpath, g_seed, &err), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_set_weights(m, wpath, &err), GRAPHC_STATUS_OK);
  shim_bind();
  int retains = -1;
  for (int k = 0; k < GRAPHC_CUSHIM_KINDS; k++)
    if (strcmp(shim.kind(k), "primary context retains") == 0) retains = k;
  ck_assert_int_ge(retains, 0);
  long base[GRAPHC_CUSHIM_KINDS], now[GRAPHC_CUSHIM_KINDS];
  shim.live(base);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_CUDA;
  for (int round = 0; round < 2; round++) {
    graphc_executable_t *exe = NULL;
    ck_assert_msg(graphc_compile(m, &o, &exe, &err) == GRAPHC_STATUS_OK, "%s", err.message);
    graphc_tensor_t *in, *out;
    uint64_t s = g_seed;
    ck_assert_int_eq(tu_make_io(exe, NULL, &s, &in, &out), 0);
    ck_assert_msg(graphc_executable_run(exe, in, graphc_executable_num_inputs(exe), out,
                                        graphc_executable_num_outputs(exe), &err) == GRAPHC_STATUS_OK,
                  "%s", err.message);
    tu_free_tensors(in, graphc_executable_num_inputs(exe));
    tu_free_tensors(out, graphc_executable_num_outputs(exe));
    graphc_executable_destroy(exe);
    shim.live(now);
    for (int k = 0; k < GRAPHC_CUSHIM_KINDS; k++)
      ck_assert_msg(now[k] == base[k] + (k == retains), "round %d, executable destroyed: %ld %s live (%ld before)",
                    round, now[k], shim.kind(k), base[k]);
  }
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
  shim.live(now);
  for (int k = 0; k < GRAPHC_CUSHIM_KINDS; k++)
    ck_assert_msg(now[k] == base[k], "context destroyed: %ld %s live (%ld before)", now[k], shim.kind(k),
                  base[k]);
  remove(wpath);
}
END_TEST

/* Remove the private cache directory. */
static void remove_cache_dir(void) {
  DIR *d = opendir(g_cache_dir);
  if (!d) return;
  struct dirent *e;
  char path[1024];
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "%s/%s", g_cache_dir, e->d_name);
    remove(path);
  }
  closedir(d);
  rmdir(g_cache_dir);
}

int main(void) {
  setenv("GRAPHC_CUDA_DRIVER", GRAPHC_CUDA_SHIM, 1);
  unsetenv("GRAPHC_CUDA_FAULT");   /* the test arms the shim itself */
  unsetenv("GRAPHC_CUDA_SYNC");
  if (!tu_probe_device()) {
    const char *dry = getenv("GRAPHC_TEST_DRY");
    g_dry = dry && strcmp(dry, "1") == 0;
#ifdef GRAPHC_CUDA_FAKE
    if (g_dry) setenv("GRAPHC_CUDA_FAULT_REAL", GRAPHC_CUDA_FAKE, 1);
#endif
    if (!g_dry || !tu_probe_device()) {
      printf("SKIPPED: no CUDA device (GRAPHC_TEST_DRY=1 runs the loops over a pretend driver)\n");
      return 77;
    }
  }
  g_seed = tu_seed();
  snprintf(g_cache_dir, sizeof g_cache_dir, "%s/cuda-faults-cache-%d", tu_tmpdir(), (int)getpid());
  setenv("GRAPHC_CACHE_DIR", g_cache_dir, 1);
  setenv("GRAPHC_CACHE", "on", 1);
  printf("test_cuda_faults: %d models x %d classes, seed %llu (GRAPHC_TEST_SEED=%llu reproduces)%s\n",
         N_MODELS, N_CLASSES, (unsigned long long)g_seed, (unsigned long long)g_seed,
         g_dry ? ", pretend driver" : "");
  Suite *s = suite_create("cuda_faults");
  TCase *tc = tcase_create("faults");
  tcase_add_test(tc, context_holds_primary_context);
  tcase_add_loop_test(tc, driver_faults, 0, N_MODELS * N_CLASSES);
  tcase_set_timeout(tc, 900);
  suite_add_tcase(s, tc);
  int rc = tu_run_suite(s);
  remove_cache_dir();
  if (g_dry) {
    printf("SKIPPED: no CUDA device (dry run over the pretend driver %s)\n",
           rc == 0 ? "passed" : "FAILED");
    return rc == 0 ? 77 : 1;
  }
  return rc;
}
