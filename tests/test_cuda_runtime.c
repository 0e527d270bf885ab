/* test_cuda_runtime.c - the CUDA backend's runtime: driver loading, the
 * unavailable path, host runs, run_device, CUDA graph vs eager, validation,
 * device OOM, contexts, both codegen paths, and the bench hooks.
 *
 * Runs everywhere. Without a CUDA device only the "no device" cases run (they
 * check the BACKEND_UNAVAILABLE path and the driver loader, in child processes
 * with GRAPHC_CUDA_DRIVER pointing at a missing file and at the toolkit's stub
 * libcuda); then the suite prints "SKIPPED: no CUDA device" and exits 77.
 * With a device every case runs; each prints what it compares.
 *
 * CUDA must not be initialized before Check forks a test: main() probes for a
 * device in a child process.  Seed: $GRAPHC_TEST_SEED, else fresh (printed).
 */
#include <math.h>
#include <sys/wait.h>

#include "testutil.h"
#include "cuda_testutil.h"
#include "driver/cuda_backend.h"
#include "runtime/cuda_driver.h"
#include "driver/exec.h"
#include "weights/safetensors.h"

static uint64_t g_seed;
static int g_have_device;

/* Elementwise + broadcast + a row reduction: odd sizes on purpose. */
static const char *const k_small =
    "version 1;\n"
    "graph @small(%x: f32[17, 33], %y: f32[33]) -> (f32[17, 33], f32[17]) {\n"
    "  %a = mul(%x, %y);\n"
    "  %b = add(%a, %x);\n"
    "  %s = reduce_sum(%b, axes=[1]);\n"
    "  return %b, %s;\n"
    "}\n";

/* Several kernels of different kinds, for eager vs graph replay. */
static const char *const k_multi =
    "version 1;\n"
    "graph @multi(%x: f32[37, 64], %w: f32[64, 48], %b: f32[48], %g: f32[48], %be: f32[48])\n"
    "    -> (f32[37, 48], f32[37, 48], f32[37]) {\n"
    "  %h = matmul(%x, %w);\n"
    "  %hb = add(%h, %b);\n"
    "  %a = gelu(%hb);\n"
    "  %s = softmax(%a, axis=-1);\n"
    "  %n = layernorm(%a, %g, %be);\n"
    "  %m = reduce_max(%n, axes=[1]);\n"
    "  return %s, %n, %m;\n"
    "}\n";

/* 2^30 x 64 floats = 256 GiB per input: more than any GPU has. */
static const char *const k_huge =
    "version 1;\n"
    "graph @huge(%x: f32[1073741824, 64]) -> (f32[1073741824, 64]) {\n"
    "  %y = add(%x, %x);\n"
    "  return %y;\n"
    "}\n";

/* A compiled text: context, model, executable, last status and error. */
typedef struct tx {
  graphc_context_t *ctx;
  graphc_model_t *m;
  graphc_executable_t *exe;
  graphc_error_t err;
  graphc_status_t st;
} tx;

/* Load `text` and compile it with the given backend/codegen/eager. */
static graphc_status_t tx_compile(tx *t, const char *text, graphc_backend_t be,
                                  graphc_codegen_t cg, int eager, const char *arch) {
  memset(t, 0, sizeof *t);
  ck_assert_int_eq(graphc_context_create(&t->ctx), GRAPHC_STATUS_OK);
  t->st = graphc_model_load_string(t->ctx, "test.graph", text, strlen(text), &t->m, &t->err);
  ck_assert_msg(t->st == GRAPHC_STATUS_OK, "load failed: %s", t->err.message);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = be;
  o.codegen = cg;
  o.eager = eager;
  o.arch = arch;
  t->st = graphc_compile(t->m, &o, &t->exe, &t->err);
  return t->st;
}

static void tx_free(tx *t) {
  graphc_executable_destroy(t->exe);
  graphc_model_destroy(t->m);
  graphc_context_destroy(t->ctx);
  memset(t, 0, sizeof *t);
}

/* Compile or fail the test with the full diagnostics. */
static void tx_must_compile(tx *t, const char *text, graphc_backend_t be, graphc_codegen_t cg,
                            int eager) {
  tx_compile(t, text, be, cg, eager, NULL);
  ck_assert_msg(t->st == GRAPHC_STATUS_OK, "compile (%s, %s, eager=%d) failed: %s: %s\n%s",
                graphc_backend_name(be), graphc_codegen_name(cg), eager,
                graphc_status_string(t->st), t->err.message, graphc_context_diagnostics(t->ctx));
}

/* Run exe on inputs into outputs or fail the test. */
static void must_run(tx *t, const graphc_tensor_t *in, graphc_tensor_t *out) {
  graphc_status_t st = graphc_executable_run(t->exe, in, graphc_executable_num_inputs(t->exe), out,
                                             graphc_executable_num_outputs(t->exe), &t->err);
  ck_assert_msg(st == GRAPHC_STATUS_OK, "run failed: %s: %s", graphc_status_string(st),
                t->err.message);
}

/* Compare outputs against reference outputs with the chain tolerance. */
static void expect_close(const graphc_tensor_t *ref, const graphc_tensor_t *got, size_t n,
                         const char *what) {
  for (size_t i = 0; i < n; i++) {
    double atol, rtol;
    tu_tolerance(ref[i].dtype, 1, &atol, &rtol);
    int64_t numel = (int64_t)(ref[i].nbytes / graphc_dtype_size(ref[i].dtype));
    tu_cmp c = tu_compare(ref[i].data, got[i].data, ref[i].dtype, numel, atol, rtol);
    ck_assert_msg(c.n_bad == 0,
                  "%s: output %zu: %lld of %lld elements differ; first at %lld: ref %.9g got %.9g "
                  "(seed %llu)",
                  what, i, (long long)c.n_bad, (long long)numel, (long long)c.first_bad, c.ref_bad,
                  c.got_bad, (unsigned long long)g_seed);
  }
}

/* Outputs must be bit-identical. */
static void expect_identical(const graphc_tensor_t *a, const graphc_tensor_t *b, size_t n,
                             const char *what) {
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(a[i].nbytes == b[i].nbytes && memcmp(a[i].data, b[i].data, a[i].nbytes) == 0,
                  "%s: output %zu differs (seed %llu)", what, i, (unsigned long long)g_seed);
}

/* Skip the body of a device-only test (the suite as a whole reports 77). */
#define NEED_DEVICE()                  \
  do {                                 \
    if (!g_have_device) return;        \
  } while (0)

/* ==== runs everywhere ================================================================== */

/* Without a device: cuda compile fails cleanly with the unavailable message. */
START_TEST(no_device_compile_unavailable) {
  if (g_have_device) return;
  ck_assert_int_eq(gc_cuda_available(tu_rt_settings()), 0);
  tx t;
  graphc_status_t st = tx_compile(&t, k_small, GRAPHC_BACKEND_CUDA, GRAPHC_CODEGEN_NVRTC, 0, NULL);
  ck_assert_int_eq(st, GRAPHC_STATUS_BACKEND_UNAVAILABLE);
  ck_assert_ptr_null(t.exe);
  ck_assert_msg(strstr(t.err.message, "CUDA backend unavailable"), "message: %s", t.err.message);
  ck_assert_msg(strstr(t.err.message, "use --backend cpu or interp"), "message: %s", t.err.message);
  ck_assert_msg(strstr(graphc_context_diagnostics(t.ctx), "CUDA backend unavailable"),
                "diagnostics: %s", graphc_context_diagnostics(t.ctx));
  /* A second attempt says the same (the driver table is loaded once). */
  graphc_executable_t *exe = NULL;
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_CUDA;
  ck_assert_int_eq(graphc_compile(t.m, &o, &exe, &t.err), GRAPHC_STATUS_BACKEND_UNAVAILABLE);
  ck_assert_ptr_null(exe);
  /* The default backend does not pick cuda here. */
  o.backend = GRAPHC_BACKEND_DEFAULT;
  if (graphc_compile(t.m, &o, &exe, &t.err) == GRAPHC_STATUS_OK) {
    ck_assert_int_ne(graphc_executable_backend(exe), GRAPHC_BACKEND_CUDA);
    graphc_executable_destroy(exe);
  }
  tx_free(&t);
}
END_TEST

/* gc_cuda_check_available agrees with gc_cuda_available and says why. */
START_TEST(available_reports_reason) {
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  int ok = gc_cuda_check_available(tu_rt_settings(), &d);
  ck_assert_int_eq(ok, gc_cuda_available(tu_rt_settings()));
  ck_assert_int_eq(ok, g_have_device);
  if (ok) {
    ck_assert_int_eq(d.n_errors, 0);
  } else {
    ck_assert_int_eq(d.n_errors, 1);
    ck_assert_int_eq(d.status, GRAPHC_STATUS_BACKEND_UNAVAILABLE);
    ck_assert_msg(strstr(d.items[0].msg, "CUDA backend unavailable: "), "%s", d.items[0].msg);
  }
  gc_diags_free(&d);
}
END_TEST

/* In a child process with GRAPHC_CUDA_DRIVER=driver: compile for cuda and
 * check status and message. Returns the child's exit status (0 = as expected;
 * nonzero also when LeakSanitizer finds a leak at the child's exit). */
static int child_compile_with_driver(const char *driver, const char *expect_msg, int expect_peek,
                                     char *why, size_t why_len) {
  int pfd[2];
  if (pipe(pfd) != 0) return -1;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    close(pfd[0]);
    setenv("GRAPHC_CUDA_DRIVER", driver, 1);
    char msg[2048] = "";
    int bad = 0;
    graphc_context_t *ctx = NULL;
    graphc_model_t *m = NULL;
    graphc_executable_t *exe = NULL;
    graphc_error_t err;
    graphc_context_create(&ctx);
    if (graphc_model_load_string(ctx, "t.graph", k_small, strlen(k_small), &m, &err) != GRAPHC_STATUS_OK) {
      snprintf(msg, sizeof msg, "load failed: %s", err.message);
      bad = 1;
    } else {
      graphc_compile_options_t o;
      graphc_compile_options_init(&o);
      o.backend = GRAPHC_BACKEND_CUDA;
      graphc_status_t st = graphc_compile(m, &o, &exe, &err);
      if (st != GRAPHC_STATUS_BACKEND_UNAVAILABLE || exe) {
        snprintf(msg, sizeof msg, "status %s, expected backend unavailable (%s)",
                 graphc_status_string(st), err.message);
        bad = 1;
      } else if (!strstr(err.message, expect_msg) || !strstr(err.message, "CUDA backend unavailable")) {
        snprintf(msg, sizeof msg, "message '%s' lacks '%s'", err.message, expect_msg);
        bad = 1;
      } else if (gc_cuda_available(tu_rt_settings())) {
        snprintf(msg, sizeof msg, "gc_cuda_available() is 1");
        bad = 1;
      } else if ((gc_cu_driver_peek(tu_rt_settings()) != NULL) != expect_peek) {
        snprintf(msg, sizeof msg, "driver symbols %s resolved",
                 expect_peek ? "were not all" : "unexpectedly");
        bad = 1;
      }
    }
    graphc_executable_destroy(exe);
    graphc_model_destroy(m);
    graphc_context_destroy(ctx);
    if (write(pfd[1], msg, strlen(msg)) < 0) bad = 1;
    close(pfd[1]);
    exit(bad); /* exit, not _exit: LeakSanitizer checks the child too */
  }
  close(pfd[1]);
  ssize_t n = read(pfd[0], why, why_len - 1);
  why[n > 0 ? n : 0] = 0;
  close(pfd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* No libcuda at all: "not found (no NVIDIA driver)". */
START_TEST(driver_missing) {
  const char *f = getenv("CK_FORK");
  if (f && strcmp(f, "no") == 0) return; /* the driver table is per process */
  char why[2048];
  int rc = child_compile_with_driver("/nonexistent/libcuda.so.1", "not found (no NVIDIA driver)", 0,
                                     why, sizeof why);
  ck_assert_msg(rc == 0, "child exit %d: %s", rc, why);
}
END_TEST

/* The toolkit's stub libcuda: every symbol resolves, cuInit says STUB_LIBRARY. */
START_TEST(driver_stub) {
  const char *f = getenv("CK_FORK");
  if (f && strcmp(f, "no") == 0) return;
  char stub[4096];
  snprintf(stub, sizeof stub, "%s", GRAPHC_PTXAS);           /* .../bin/ptxas */
  char *slash = strrchr(stub, '/');
  if (slash) *slash = 0;
  slash = strrchr(stub, '/');
  if (slash) *slash = 0;
  strncat(stub, "/lib64/stubs/libcuda.so", sizeof stub - strlen(stub) - 1);
  if (access(stub, R_OK) != 0) {
    printf("driver_stub: %s not present, case not run\n", stub);
    return;
  }
  char why[2048];
  int rc = child_compile_with_driver(stub, "cuInit failed: CUDA_ERROR_STUB_LIBRARY", 1, why,
                                     sizeof why);
  ck_assert_msg(rc == 0, "child exit %d: %s", rc, why);
}
END_TEST

/* The bench hooks refuse executables of other backends. */
START_TEST(hooks_reject_other_backends) {
  tx t;
  tx_must_compile(&t, k_small, GRAPHC_BACKEND_INTERP, GRAPHC_CODEGEN_DEFAULT, 0);
  gc_cuda_info info;
  ck_assert_int_eq(gc_cuda_exec_info(t.exe, &info), GRAPHC_STATUS_INVALID_ARGUMENT);
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  float ms[2];
  ck_assert_int_eq(gc_cuda_time_runs(t.exe, 1, 2, ms, &d), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_int_eq(d.n_errors, 1);
  ck_assert_int_eq(gc_cuda_time_queued(t.exe, 1, 2, ms, NULL), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_msg(strstr(d.items[0].msg, "cuda backend"), "%s", d.items[0].msg);
  gc_diags_free(&d);
  ck_assert_ptr_null(gc_backend_interp.run_device);
  tx_free(&t);
}
END_TEST

/* `graphc bench` without a GPU exits 1 and says why; with one it prints the tables. */
START_TEST(bench_cli) {
  char path[4096], cmd[16384];
  snprintf(path, sizeof path, "%s/bench_small.graph", tu_tmpdir());
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(k_small, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "%s bench %s --runs 5 --warmup 2", GRAPHC_CLI, path);
  char *out = NULL;
  int rc = tu_run_cmd(cmd, &out);
  if (g_have_device) {
    ck_assert_msg(rc == 0, "bench exit %d:\n%s", rc, out);
    ck_assert_msg(strstr(out, "whole graph") && strstr(out, "GB/s") && strstr(out, "per kernel"),
                  "%s", out);
    printf("%s\n", out);
    /* --inputs: the inputs from a file by argument name; a missing one is an error */
    static float x[17 * 33], y[33];
    for (int i = 0; i < 17 * 33; i++) x[i] = 1.0f;
    for (int i = 0; i < 33; i++) y[i] = 2.0f;
    gc_st_tensor ts[2] = {
        {.name = "x", .dtype = GRAPHC_DTYPE_F32, .rank = 2, .dims = {17, 33}, .data = x, .nbytes = sizeof x},
        {.name = "y", .dtype = GRAPHC_DTYPE_F32, .rank = 1, .dims = {33}, .data = y, .nbytes = sizeof y}};
    char in[4096];
    gc_diags d;
    for (int n = 2; n >= 1; n--) {
      snprintf(in, sizeof in, "%s/bench_in%d.safetensors", tu_tmpdir(), n);
      gc_diags_init(&d, in, NULL, 0);
      ck_assert_int_eq(gc_safetensors_write(in, ts + 2 - n, n, &d), 0);
      gc_diags_free(&d);
      snprintf(cmd, sizeof cmd, "%s bench %s --runs 3 --warmup 1 --inputs %s", GRAPHC_CLI, path, in);
      free(out);
      out = NULL;
      rc = tu_run_cmd(cmd, &out);
      if (n == 2)
        ck_assert_msg(rc == 0 && strstr(out, "whole graph"), "bench --inputs exit %d:\n%s", rc, out);
      else
        ck_assert_msg(rc == 1 && strstr(out, "has no tensor 'x' for input %x"), "bench exit %d:\n%s", rc, out);
    }
  } else {
    ck_assert_msg(rc == 1, "bench exit %d:\n%s", rc, out);
    ck_assert_msg(strstr(out, "no GPU") && strstr(out, "CUDA backend unavailable"), "%s", out);
  }
  free(out);
}
END_TEST

/* ==== device cases ===================================================================== */

/* Host runs on both codegen paths match the interpreter. */
START_TEST(host_run_matches_interp) {
  NEED_DEVICE();
  const char *texts[] = {k_small, k_multi};
  for (int ti = 0; ti < 2; ti++) {
    tx ref;
    tx_must_compile(&ref, texts[ti], GRAPHC_BACKEND_INTERP, GRAPHC_CODEGEN_DEFAULT, 0);
    graphc_tensor_t *in, *rout;
    uint64_t s = g_seed + (uint64_t)ti;
    ck_assert_int_eq(tu_make_io(ref.exe, NULL, &s, &in, &rout), 0);
    must_run(&ref, in, rout);
    size_t no = graphc_executable_num_outputs(ref.exe), ni = graphc_executable_num_inputs(ref.exe);
    for (int cg = GRAPHC_CODEGEN_NVRTC; cg <= GRAPHC_CODEGEN_LLVM; cg++) {
      tx t;
      tx_must_compile(&t, texts[ti], GRAPHC_BACKEND_CUDA, (graphc_codegen_t)cg, 0);
      ck_assert_int_eq(graphc_executable_backend(t.exe), GRAPHC_BACKEND_CUDA);
      graphc_tensor_t *out = tu_clone_outputs(rout, no);
      must_run(&t, in, out);
      char what[64];
      snprintf(what, sizeof what, "graph %d via %s", ti, graphc_codegen_name((graphc_codegen_t)cg));
      expect_close(rout, out, no, what);
      /* Run again with new inputs: the executable is reusable. */
      graphc_tensor_t *in2, *rout2;
      uint64_t s2 = g_seed * 31 + (uint64_t)cg;
      ck_assert_int_eq(tu_make_io(ref.exe, NULL, &s2, &in2, &rout2), 0);
      must_run(&ref, in2, rout2);
      must_run(&t, in2, out);
      expect_close(rout2, out, no, what);
      tu_free_tensors(in2, ni);
      tu_free_tensors(rout2, no);
      tu_free_tensors(out, no);
      tx_free(&t);
    }
    tu_free_tensors(in, ni);
    tu_free_tensors(rout, no);
    tx_free(&ref);
  }
}
END_TEST

/* Compile `text` for CUDA with tf32 allowed on code path cg, or fail naming case ci. */
static void tx_compile_tf32(tx *t, const char *text, graphc_codegen_t cg, int ci) {
  memset(t, 0, sizeof *t);
  ck_assert_int_eq(graphc_context_create(&t->ctx), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_load_string(t->ctx, "tf32.graph", text, strlen(text), &t->m, &t->err),
                   GRAPHC_STATUS_OK);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_CUDA;
  o.codegen = cg;
  o.allow_tf32 = 1;
  t->st = graphc_compile(t->m, &o, &t->exe, &t->err);
  ck_assert_msg(t->st == GRAPHC_STATUS_OK, "case %d (%s): %s\n%s", ci, graphc_codegen_name(cg), t->err.message,
                graphc_context_diagnostics(t->ctx));
}

/* tf32 operands are rounded to nearest, not truncated: with every input in [1, 2) the
 * truncated tensor cores shrink each product by about 6.5e-4 on average (both operands lose
 * a uniform [0, 2^-10) of a value near 1.5), rounding leaves no bias. The mean signed relative
 * error of all outputs must stay below 1.5e-4: a matmul (the wgmma kernel: A rounded in
 * shared memory, B as it reaches registers) and a convolution (the mma.sync implicit GEMM,
 * both operands from ldmatrix / shared loads), both codegen paths. */
START_TEST(tf32_rounding) {
  NEED_DEVICE();
  static const char *const bodies[] = {
      "(%a: f32[256, 1024], %b: f32[1024, 256]) -> (f32[256, 256]) {\n"
      "  %y = matmul(%a, %b);\n  return %y;\n}\n",
      "(%x: f32[2, 64, 16, 16], %w: f32[64, 64, 3, 3]) -> (f32[2, 64, 16, 16]) {\n"
      "  %y = conv2d(%x, %w, padding=[1, 1]);\n  return %y;\n}\n",
  };
  for (int ci = 0; ci < 2; ci++) {
    char text[512];
    snprintf(text, sizeof text, "version 1;\ngraph @g%s", bodies[ci]);
    tx ref;
    tx_must_compile(&ref, text, GRAPHC_BACKEND_INTERP, GRAPHC_CODEGEN_DEFAULT, 0);
    graphc_tensor_t *in, *rout;
    uint64_t seed = g_seed + 77 + (uint64_t)ci, s = seed | 1;
    ck_assert_int_eq(tu_make_io(ref.exe, NULL, &seed, &in, &rout), 0);
    size_t ni = graphc_executable_num_inputs(ref.exe);
    for (size_t i = 0; i < ni; i++) {  /* every input in [1, 2) */
      float *p = in[i].data;
      for (size_t j = 0; j < in[i].nbytes / 4; j++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        p[j] = 1.0f + (float)(s >> 40) / (float)(1 << 24);
      }
    }
    must_run(&ref, in, rout);
    for (int cg = GRAPHC_CODEGEN_NVRTC; cg <= GRAPHC_CODEGEN_LLVM; cg++) {
      tx t;
      tx_compile_tf32(&t, text, (graphc_codegen_t)cg, ci);
      graphc_tensor_t *out = tu_clone_outputs(rout, 1);
      must_run(&t, in, out);
      const float *rf = rout[0].data, *gf = out[0].data;
      int64_t n = (int64_t)(rout[0].nbytes / 4);
      double mean = 0, amax = 0;
      for (int64_t i = 0; i < n; i++) {
        double r = ((double)gf[i] - rf[i]) / rf[i];
        mean += r;
        amax = fmax(amax, fabs(r));
      }
      mean /= (double)n;
      printf("tf32 rounding case %d %-5s: mean relative error %.3g, max %.3g\n", ci,
             graphc_codegen_name((graphc_codegen_t)cg), mean, amax);
      ck_assert_msg(fabs(mean) < 1.5e-4 && amax > 0 && amax < 4e-3,
                    "case %d (%s): mean relative error %.3g (truncated operands: about -6.5e-4), max %.3g "
                    "(seed %llu)", ci, graphc_codegen_name((graphc_codegen_t)cg), mean, amax, (unsigned long long)g_seed);
      tu_free_tensors(out, 1);
      tx_free(&t);
    }
    tu_free_tensors(in, ni);
    tu_free_tensors(rout, 1);
    tx_free(&ref);
  }
}
END_TEST

/* allow_tf32: f32 matmuls on the tensor cores (on the H200 the transposed wgmma kernel of
 * emit_wgmma.c: B N- or K-contiguous, 256-, 128- and 64-row tiles, 64-column tiles, an odd
 * count of K tiles, rows and columns past the tiles, batches, a fused epilogue) against the
 * interpreter, both codegen paths. tf32 keeps 10 mantissa bits: relative L2 error at most
 * 4e-3 and no error above 1% of the largest output. */
START_TEST(tf32_matmuls) {
  NEED_DEVICE();
  static const char *const bodies[] = {
      "(%a: f32[300, 200], %b: f32[200, 520], %c: f32[520]) -> (f32[300, 520]) {\n"
      "  %y = matmul(%a, %b);\n  %z = add(%y, %c);\n  %r = relu(%z);\n  return %r;\n}\n",
      "(%a: f32[2, 130, 96], %b: f32[2, 136, 96]) -> (f32[2, 130, 136]) {\n"
      "  %y = matmul(%a, %b, transpose_b=true);\n  return %y;\n}\n",
      "(%a: f32[1000, 256], %b: f32[256, 64]) -> (f32[1000, 64]) {\n"
      "  %y = matmul(%a, %b);\n  %g = gelu(%y, approximate=\"tanh\");\n  return %g;\n}\n",
      "(%a: f32[64, 1000], %b: f32[1000, 72]) -> (f32[64, 72]) {\n"
      "  %y = matmul(%a, %b);\n  return %y;\n}\n",
      "(%a: f32[4, 128, 64], %b: f32[4, 64, 128]) -> (f32[4, 128, 128]) {\n"
      "  %y = matmul(%a, %b);\n  return %y;\n}\n",
      "(%a: f32[512, 1024], %b: f32[1024, 384]) -> (f32[512, 384]) {\n"
      "  %y = matmul(%a, %b);\n  return %y;\n}\n",
  };
  for (int ci = 0; ci < (int)(sizeof bodies / sizeof bodies[0]); ci++) {
    char text[1024];
    snprintf(text, sizeof text, "version 1;\ngraph @g%s", bodies[ci]);
    tx ref;
    tx_must_compile(&ref, text, GRAPHC_BACKEND_INTERP, GRAPHC_CODEGEN_DEFAULT, 0);
    graphc_tensor_t *in, *rout;
    uint64_t seed = g_seed + (uint64_t)ci;
    ck_assert_int_eq(tu_make_io(ref.exe, NULL, &seed, &in, &rout), 0);
    must_run(&ref, in, rout);
    size_t ni = graphc_executable_num_inputs(ref.exe);
    for (int cg = GRAPHC_CODEGEN_NVRTC; cg <= GRAPHC_CODEGEN_LLVM; cg++) {
      tx t;
      tx_compile_tf32(&t, text, (graphc_codegen_t)cg, ci);
      graphc_tensor_t *out = tu_clone_outputs(rout, 1);
      must_run(&t, in, out);
      const float *rf = rout[0].data, *gf = out[0].data;
      int64_t n = (int64_t)(rout[0].nbytes / 4);
      double e2 = 0, r2 = 0, emax = 0, rmax = 0;
      for (int64_t i = 0; i < n; i++) {
        double e = (double)gf[i] - rf[i];
        e2 += e * e;
        r2 += (double)rf[i] * rf[i];
        emax = fmax(emax, fabs(e));
        rmax = fmax(rmax, fabs((double)rf[i]));
      }
      printf("tf32 case %d %-5s: rel L2 %.3g, max error %.3g of %.3g\n", ci, graphc_codegen_name((graphc_codegen_t)cg),
             sqrt(e2 / r2), emax, rmax);
      ck_assert_msg(sqrt(e2) <= 4e-3 * sqrt(r2) && emax <= 1e-2 * rmax && emax > 0,
                    "case %d (%s): rel L2 %.3g, max error %.3g of %.3g (seed %llu)\n%s", ci,
                    graphc_codegen_name((graphc_codegen_t)cg), sqrt(e2 / r2), emax, rmax, (unsigned long long)g_seed, text);
      tu_free_tensors(out, 1);
      tx_free(&t);
    }
    tu_free_tensors(in, ni);
    tu_free_tensors(rout, 1);
    tx_free(&ref);
  }
}
END_TEST

/* CUDA graph replay and eager launches give bit-identical results, every replay. */
START_TEST(eager_vs_graph_identical) {
  NEED_DEVICE();
  tx g, e;
  tx_must_compile(&g, k_multi, GRAPHC_BACKEND_CUDA, GRAPHC_CODEGEN_NVRTC, 0);
  tx_must_compile(&e, k_multi, GRAPHC_BACKEND_CUDA, GRAPHC_CODEGEN_NVRTC, 1);
  gc_cuda_info gi, ei;
  ck_assert_int_eq(gc_cuda_exec_info(g.exe, &gi), GRAPHC_STATUS_OK);
  ck_assert_int_eq(gc_cuda_exec_info(e.exe, &ei), GRAPHC_STATUS_OK);
  ck_assert_int_eq(gi.eager, getenv("GRAPHC_CUDA_SYNC") ? gi.eager : 0);
  ck_assert_int_eq(ei.eager, 1);
  graphc_tensor_t *in, *og;
  uint64_t s = g_seed;
  ck_assert_int_eq(tu_make_io(g.exe, NULL, &s, &in, &og), 0);
  size_t ni = graphc_executable_num_inputs(g.exe), no = graphc_executable_num_outputs(g.exe);
  graphc_tensor_t *oe = tu_clone_outputs(og, no), *og2 = tu_clone_outputs(og, no);
  must_run(&g, in, og);
  must_run(&e, in, oe);
  expect_identical(og, oe, no, "graph replay vs eager");
  for (int r = 0; r < 3; r++) {
    must_run(&g, in, og2);
    expect_identical(og, og2, no, "graph replay vs its own earlier replay");
  }
  tu_free_tensors(in, ni);
  tu_free_tensors(og, no);
  tu_free_tensors(oe, no);
  tu_free_tensors(og2, no);
  tx_free(&g);
  tx_free(&e);
}
END_TEST

/* GRAPHC_CUDA_SYNC=1 forces eager launches with a sync after each; same results. */
START_TEST(sync_env_eager) {
  NEED_DEVICE();
  tx g;
  tx_must_compile(&g, k_multi, GRAPHC_BACKEND_CUDA, GRAPHC_CODEGEN_NVRTC, 0);
  setenv("GRAPHC_CUDA_SYNC", "1", 1);
  tx e;
  tx_must_compile(&e, k_multi, GRAPHC_BACKEND_CUDA, GRAPHC_CODEGEN_NVRTC, 0);
  unsetenv("GRAPHC_CUDA_SYNC");
  gc_cuda_info ei;
  ck_assert_int_eq(gc_cuda_exec_info(e.exe, &ei), GRAPHC_STATUS_OK);
  ck_assert_int_eq(ei.eager, 1);
  ck_assert_msg(strstr(graphc_executable_stats(e.exe), "eager"), "%s",
                graphc_executable_stats(e.exe));
  graphc_tensor_t *in, *og;
  uint64_t s = g_seed + 7;
  ck_assert_int_eq(tu_make_io(g.exe, NULL, &s, &in, &og), 0);
  size_t ni = graphc_executable_num_inputs(g.exe), no = graphc_executable_num_outputs(g.exe);
  graphc_tensor_t *oe = tu_clone_outputs(og, no);
  must_run(&g, in, og);
  must_run(&e, in, oe);
  expect_identical(og, oe, no, "GRAPHC_CUDA_SYNC=1 vs graph replay");
  tu_free_tensors(in, ni);
  tu_free_tensors(og, no);
  tu_free_tensors(oe, no);
  tx_free(&g);
  tx_free(&e);
}
END_TEST

/* Device buffers for tensors like `t` (in the primary context, which is current). */
static CUdeviceptr *dev_alloc_like(const gc_cu_driver *cu, const graphc_tensor_t *t, size_t n,
                                   graphc_tensor_t **dt) {
  CUdeviceptr *p = calloc(n + 1, sizeof *p);
  *dt = calloc(n + 1, sizeof **dt);
  for (size_t i = 0; i < n; i++) {
    ck_assert_int_eq(cu->MemAlloc(&p[i], t[i].nbytes), CUDA_SUCCESS);
    ck_assert_int_eq(cu->MemsetD8Async(p[i], 0xff, t[i].nbytes, NULL), CUDA_SUCCESS);
    (*dt)[i] = t[i];
    (*dt)[i].data = (void *)(uintptr_t)p[i];
  }
  ck_assert_int_eq(cu->CtxSynchronize(), CUDA_SUCCESS);
  return p;
}

/* run_device with caller-owned pointers: no copies; changing pointers re-binds
 * (graph re-capture), returning to earlier pointers and mixing with host runs works. */
START_TEST(run_device_pointers) {
  NEED_DEVICE();
  for (int eager = 0; eager <= 1; eager++) {
    tx t;
    tx_must_compile(&t, k_multi, GRAPHC_BACKEND_CUDA, GRAPHC_CODEGEN_NVRTC, eager);
    ck_assert_ptr_nonnull(t.exe->backend->run_device);
    graphc_tensor_t *in, *ref;
    uint64_t s = g_seed + 11;
    ck_assert_int_eq(tu_make_io(t.exe, NULL, &s, &in, &ref), 0);
    size_t ni = graphc_executable_num_inputs(t.exe), no = graphc_executable_num_outputs(t.exe);
    must_run(&t, in, ref);  /* host run: the reference for run_device */

    const gc_cu_driver *cu = gc_cu_driver_get(tu_rt_settings(), NULL);
    ck_assert_ptr_nonnull(cu);
    CUdevice dev;
    CUcontext pctx, cur;
    ck_assert_int_eq(cu->DeviceGet(&dev, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cu->DevicePrimaryCtxRetain(&pctx, dev), CUDA_SUCCESS);
    ck_assert_int_eq(cu->CtxPushCurrent(pctx), CUDA_SUCCESS);
    graphc_tensor_t *din, *dout1, *dout2;
    CUdeviceptr *pin = dev_alloc_like(cu, in, ni, &din);
    CUdeviceptr *po1 = dev_alloc_like(cu, ref, no, &dout1);
    CUdeviceptr *po2 = dev_alloc_like(cu, ref, no, &dout2);
    for (size_t i = 0; i < ni; i++)
      ck_assert_int_eq(cu->MemcpyHtoD(pin[i], in[i].data, in[i].nbytes), CUDA_SUCCESS);
    graphc_tensor_t *host = tu_clone_outputs(ref, no);
    /* Order: outputs 1, outputs 2, outputs 1 again (cached pointers), host run. */
    CUdeviceptr *seq[] = {po1, po2, po1};
    graphc_tensor_t *dseq[] = {dout1, dout2, dout1};
    for (int k = 0; k < 3; k++) {
      for (size_t i = 0; i < no; i++) /* poison: a stale result cannot pass */
        ck_assert_int_eq(cu->MemsetD8Async(seq[k][i], 0xff, ref[i].nbytes, NULL), CUDA_SUCCESS);
      ck_assert_int_eq(cu->CtxSynchronize(), CUDA_SUCCESS);
      gc_diags d;
      gc_diags_init(&d, "", NULL, 0);
      graphc_status_t st = t.exe->backend->run_device(t.exe, din, dseq[k], &d);
      ck_assert_msg(st == GRAPHC_STATUS_OK, "run_device %d: %s", k,
                    d.n ? d.items[0].msg : graphc_status_string(st));
      gc_diags_free(&d);
      ck_assert_int_eq(cu->CtxGetCurrent(&cur), CUDA_SUCCESS);
      ck_assert_msg(cur == pctx, "run_device changed the current context");
      for (size_t i = 0; i < no; i++)
        ck_assert_int_eq(cu->MemcpyDtoH(host[i].data, seq[k][i], ref[i].nbytes), CUDA_SUCCESS);
      char what[64];
      snprintf(what, sizeof what, "run_device step %d (eager=%d)", k, eager);
      expect_identical(ref, host, no, what);
    }
    /* A host run after run_device binds the executable's own buffers again. */
    graphc_tensor_t *again = tu_clone_outputs(ref, no);
    must_run(&t, in, again);
    expect_identical(ref, again, no, "host run after run_device");
    for (size_t i = 0; i < ni; i++) cu->MemFree(pin[i]);
    for (size_t i = 0; i < no; i++) {
      cu->MemFree(po1[i]);
      cu->MemFree(po2[i]);
    }
    free(pin);
    free(po1);
    free(po2);
    free(din);
    free(dout1);
    free(dout2);
    ck_assert_int_eq(cu->CtxPopCurrent(&cur), CUDA_SUCCESS);
    cu->DevicePrimaryCtxRelease(dev);
    tu_free_tensors(in, ni);
    tu_free_tensors(ref, no);
    tu_free_tensors(host, no);
    tu_free_tensors(again, no);
    tx_free(&t);
  }
}
END_TEST

/* Wrong inputs are rejected with INVALID_ARGUMENT and a message; a good run still works. */
START_TEST(input_validation) {
  NEED_DEVICE();
  tx t;
  tx_must_compile(&t, k_small, GRAPHC_BACKEND_CUDA, GRAPHC_CODEGEN_NVRTC, 0);
  graphc_tensor_t *in, *out;
  uint64_t s = g_seed + 3;
  ck_assert_int_eq(tu_make_io(t.exe, NULL, &s, &in, &out), 0);
  graphc_error_t err;
  graphc_status_t st;
  st = graphc_executable_run(t.exe, in, 1, out, 2, &err);
  ck_assert_int_eq(st, GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_msg(strstr(err.message, "expected 2 inputs"), "%s", err.message);
  graphc_tensor_t bad = in[0];
  bad.dtype = GRAPHC_DTYPE_F16;
  graphc_tensor_t in2[2] = {bad, in[1]};
  st = graphc_executable_run(t.exe, in2, 2, out, 2, &err);
  ck_assert_int_eq(st, GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_msg(strstr(err.message, "f32[17, 33]") && strstr(err.message, "f16[17, 33]"), "%s",
                err.message);
  in2[0] = in[0];
  in2[0].dims[1] = 32;
  st = graphc_executable_run(t.exe, in2, 2, out, 2, &err);
  ck_assert_int_eq(st, GRAPHC_STATUS_INVALID_ARGUMENT);
  in2[0] = in[0];
  in2[0].nbytes = 16;
  st = graphc_executable_run(t.exe, in2, 2, out, 2, &err);
  ck_assert_int_eq(st, GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_msg(strstr(err.message, "bytes"), "%s", err.message);
  in2[0] = in[0];
  in2[0].data = NULL;
  st = graphc_executable_run(t.exe, in2, 2, out, 2, &err);
  ck_assert_int_eq(st, GRAPHC_STATUS_INVALID_ARGUMENT);
  graphc_tensor_t o2[2] = {out[0], out[1]};
  o2[1].rank = 2;
  st = graphc_executable_run(t.exe, in, 2, o2, 2, &err);
  ck_assert_int_eq(st, GRAPHC_STATUS_INVALID_ARGUMENT);
  /* Still usable, and correct. */
  tx ref;
  tx_must_compile(&ref, k_small, GRAPHC_BACKEND_INTERP, GRAPHC_CODEGEN_DEFAULT, 0);
  graphc_tensor_t *rout = tu_clone_outputs(out, 2);
  must_run(&ref, in, rout);
  must_run(&t, in, out);
  expect_close(rout, out, 2, "run after rejected runs");
  tu_free_tensors(in, 2);
  tu_free_tensors(out, 2);
  tu_free_tensors(rout, 2);
  tx_free(&ref);
  tx_free(&t);
}
END_TEST

/* A graph too large for the device fails with OUT_OF_MEMORY; the next compile works. */
START_TEST(device_oom_then_recover) {
  NEED_DEVICE();
  for (int round = 0; round < 2; round++) {
    tx h;
    graphc_status_t st = tx_compile(&h, k_huge, GRAPHC_BACKEND_CUDA, GRAPHC_CODEGEN_NVRTC, 0, NULL);
    ck_assert_msg(st == GRAPHC_STATUS_OUT_OF_MEMORY, "status %s: %s", graphc_status_string(st),
                  h.err.message);
    ck_assert_ptr_null(h.exe);
    ck_assert_msg(strstr(h.err.message, "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY"), "%s",
                  h.err.message);
    printf("device OOM message: %s\n", h.err.message);
    tx_free(&h);
    tx t, ref;
    tx_must_compile(&t, k_small, GRAPHC_BACKEND_CUDA, GRAPHC_CODEGEN_NVRTC, 0);
    tx_must_compile(&ref, k_small, GRAPHC_BACKEND_INTERP, GRAPHC_CODEGEN_DEFAULT, 0);
    graphc_tensor_t *in, *out;
    uint64_t s = g_seed + 5 + (uint64_t)round;
    ck_assert_int_eq(tu_make_io(t.exe, NULL, &s, &in, &out), 0);
    graphc_tensor_t *rout = tu_clone_outputs(out, 2);
    must_run(&t, in, out);
    must_run(&ref, in, rout);
    expect_close(rout, out, 2, "run after device OOM");
    tu_free_tensors(in, 2);
    tu_free_tensors(out, 2);
    tu_free_tensors(rout, 2);
    tx_free(&t);
    tx_free(&ref);
  }
}
END_TEST

/* The caller's current context (none, or its own) is the same after every call. */
START_TEST(context_untouched) {
  NEED_DEVICE();
  const gc_cu_driver *cu = gc_cu_driver_get(tu_rt_settings(), NULL);
  ck_assert_ptr_nonnull(cu);
  CUcontext cur = (CUcontext)1;
  ck_assert_int_eq(cu->CtxGetCurrent(&cur), CUDA_SUCCESS);
  ck_assert_ptr_null(cur);
  tx t;
  tx_must_compile(&t, k_small, GRAPHC_BACKEND_CUDA, GRAPHC_CODEGEN_NVRTC, 0);
  ck_assert_int_eq(cu->CtxGetCurrent(&cur), CUDA_SUCCESS);
  ck_assert_msg(cur == NULL, "compile left a context current");
  graphc_tensor_t *in, *out;
  uint64_t s = g_seed + 9;
  ck_assert_int_eq(tu_make_io(t.exe, NULL, &s, &in, &out), 0);
  must_run(&t, in, out);
  ck_assert_int_eq(cu->CtxGetCurrent(&cur), CUDA_SUCCESS);
  ck_assert_msg(cur == NULL, "run left a context current");
  /* With a context of the caller's own current. */
  CUdevice dev;
  CUcontext mine;
  ck_assert_int_eq(cu->DeviceGet(&dev, 0), CUDA_SUCCESS);
  ck_assert_int_eq(cu->DevicePrimaryCtxRetain(&mine, dev), CUDA_SUCCESS);
  ck_assert_int_eq(cu->CtxPushCurrent(mine), CUDA_SUCCESS);
  must_run(&t, in, out);
  ck_assert_int_eq(cu->CtxGetCurrent(&cur), CUDA_SUCCESS);
  ck_assert_msg(cur == mine, "run replaced the caller's context");
  graphc_executable_destroy(t.exe);
  t.exe = NULL;
  ck_assert_int_eq(cu->CtxGetCurrent(&cur), CUDA_SUCCESS);
  ck_assert_msg(cur == mine, "destroy replaced the caller's context");
  ck_assert_int_eq(cu->CtxPopCurrent(&cur), CUDA_SUCCESS);
  cu->DevicePrimaryCtxRelease(dev);
  tu_free_tensors(in, 2);
  tu_free_tensors(out, 2);
  tx_free(&t);
}
END_TEST

/* --arch: bad names are INVALID_ARGUMENT; an older arch loads through the PTX JIT. */
START_TEST(arch_option) {
  NEED_DEVICE();
  tx t;
  graphc_status_t st = tx_compile(&t, k_small, GRAPHC_BACKEND_CUDA, GRAPHC_CODEGEN_NVRTC, 0, "ampere");
  ck_assert_int_eq(st, GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_msg(strstr(t.err.message, "unknown CUDA architecture 'ampere'"), "%s", t.err.message);
  tx_free(&t);
  st = tx_compile(&t, k_small, GRAPHC_BACKEND_CUDA, GRAPHC_CODEGEN_NVRTC, 0, "sm_90a");
  ck_assert_int_eq(st, GRAPHC_STATUS_INVALID_ARGUMENT);
  tx_free(&t);
  tx_must_compile(&t, k_small, GRAPHC_BACKEND_CUDA, GRAPHC_CODEGEN_NVRTC, 0);
  gc_cuda_info info;
  ck_assert_int_eq(gc_cuda_exec_info(t.exe, &info), GRAPHC_STATUS_OK);
  ck_assert_int_eq(info.sm, info.device_sm);
  ck_assert_int_eq(info.from_ptx, 0);
  int dsm = info.device_sm;
  tx_free(&t);
  if (dsm / 10 > 8) {
    /* sm_80 cubin cannot load on a newer major version: PTX fallback. */
    for (int cg = GRAPHC_CODEGEN_NVRTC; cg <= GRAPHC_CODEGEN_LLVM; cg++) {
      st = tx_compile(&t, k_small, GRAPHC_BACKEND_CUDA, (graphc_codegen_t)cg, 0, "sm_80");
      ck_assert_msg(st == GRAPHC_STATUS_OK, "sm_80 via %s: %s", graphc_codegen_name(cg),
                    t.err.message);
      ck_assert_int_eq(gc_cuda_exec_info(t.exe, &info), GRAPHC_STATUS_OK);
      ck_assert_int_eq(info.sm, 80);
      ck_assert_msg(info.from_ptx == 1, "expected the PTX fallback:\n%s",
                    graphc_executable_stats(t.exe));
      ck_assert_msg(strstr(graphc_executable_stats(t.exe), "PTX (driver JIT)"), "%s",
                    graphc_executable_stats(t.exe));
      graphc_tensor_t *in, *out;
      uint64_t s = g_seed + 13;
      ck_assert_int_eq(tu_make_io(t.exe, NULL, &s, &in, &out), 0);
      tx ref;
      tx_must_compile(&ref, k_small, GRAPHC_BACKEND_INTERP, GRAPHC_CODEGEN_DEFAULT, 0);
      graphc_tensor_t *rout = tu_clone_outputs(out, 2);
      must_run(&t, in, out);
      must_run(&ref, in, rout);
      expect_close(rout, out, 2, "sm_80 PTX on a newer device");
      tu_free_tensors(in, 2);
      tu_free_tensors(out, 2);
      tu_free_tensors(rout, 2);
      tx_free(&ref);
      tx_free(&t);
    }
  }
}
END_TEST

/* Several executables share the primary context; destroying one leaves the others working. */
START_TEST(many_executables) {
  NEED_DEVICE();
  tx t[3], ref;
  for (int i = 0; i < 3; i++)
    tx_must_compile(&t[i], i == 1 ? k_multi : k_small, GRAPHC_BACKEND_CUDA,
                    i == 2 ? GRAPHC_CODEGEN_LLVM : GRAPHC_CODEGEN_NVRTC, i == 2);
  graphc_executable_destroy(t[1].exe);
  t[1].exe = NULL;
  tx_must_compile(&ref, k_small, GRAPHC_BACKEND_INTERP, GRAPHC_CODEGEN_DEFAULT, 0);
  graphc_tensor_t *in, *rout;
  uint64_t s = g_seed + 17;
  ck_assert_int_eq(tu_make_io(ref.exe, NULL, &s, &in, &rout), 0);
  must_run(&ref, in, rout);
  for (int i = 0; i < 3; i += 2) {
    graphc_tensor_t *out = tu_clone_outputs(rout, 2);
    must_run(&t[i], in, out);
    expect_close(rout, out, 2, i ? "third executable (llvm, eager)" : "first executable");
    tu_free_tensors(out, 2);
  }
  tu_free_tensors(in, 2);
  tu_free_tensors(rout, 2);
  for (int i = 0; i < 3; i++) tx_free(&t[i]);
  tx_free(&ref);
}
END_TEST

/* Stats name the device, the stages and their times. */
START_TEST(stats_text) {
  NEED_DEVICE();
  for (int cg = GRAPHC_CODEGEN_NVRTC; cg <= GRAPHC_CODEGEN_LLVM; cg++) {
    tx t;
    tx_must_compile(&t, k_multi, GRAPHC_BACKEND_CUDA, (graphc_codegen_t)cg, 0);
    const char *st = graphc_executable_stats(t.exe);
    ck_assert_msg(strstr(st, "cuda: device 0") && strstr(st, "cuda: lower") &&
                      strstr(st, "cuda: module load") && strstr(st, "cuda: device memory"),
                  "%s", st);
    ck_assert_msg(strstr(st, cg == GRAPHC_CODEGEN_LLVM ? "llvm nvptx" : "nvrtc"), "%s", st);
    printf("stats (%s):\n%s\n", graphc_codegen_name((graphc_codegen_t)cg), st);
    tx_free(&t);
  }
}
END_TEST

/* The bench hooks: positive times per run and per launch, a copy bandwidth. */
START_TEST(bench_hooks) {
  NEED_DEVICE();
  tx t;
  tx_must_compile(&t, k_multi, GRAPHC_BACKEND_CUDA, GRAPHC_CODEGEN_NVRTC, 0);
  graphc_tensor_t *in, *out;
  uint64_t s = g_seed + 19;
  ck_assert_int_eq(tu_make_io(t.exe, NULL, &s, &in, &out), 0);
  must_run(&t, in, out);
  gc_cuda_info info;
  ck_assert_int_eq(gc_cuda_exec_info(t.exe, &info), GRAPHC_STATUS_OK);
  int nl = info.plan->n_launches;
  ck_assert_int_gt(nl, 0);
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  float ms[8];
  ck_assert_int_eq(gc_cuda_time_runs(t.exe, 2, 8, ms, &d), GRAPHC_STATUS_OK);
  for (int i = 0; i < 8; i++) ck_assert_msg(ms[i] > 0 && ms[i] < 1000, "run %d: %g ms", i, ms[i]);
  float qms[8];
  ck_assert_int_eq(gc_cuda_time_queued(t.exe, 1, 8, qms, &d), GRAPHC_STATUS_OK);
  for (int i = 0; i < 8; i++) ck_assert_msg(qms[i] > 0 && qms[i] < 1000, "queued run %d: %g ms", i, qms[i]);
  ck_assert_int_eq(gc_cuda_time_queued(t.exe, 0, 0, qms, &d), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_msg(d.n_errors == 1 && strstr(d.items[0].msg, "runs must be at least 1 (got 0)"),
                "%s", d.n_errors ? d.items[0].msg : "no error");
  gc_diags_free(&d);
  gc_diags_init(&d, "", NULL, 0);
  float *kms = calloc((size_t)nl * 3, sizeof *kms);
  ck_assert_int_eq(gc_cuda_time_kernels(t.exe, 3, kms, &d), GRAPHC_STATUS_OK);
  for (int i = 0; i < nl * 3; i++) ck_assert_msg(kms[i] > 0, "launch %d: %g ms", i, kms[i]);
  free(kms);
  double gbps = 0;
  size_t used = 0;
  ck_assert_int_eq(gc_cuda_copy_bandwidth(t.exe, (size_t)256 << 20, 3, &gbps, &used, &d),
                   GRAPHC_STATUS_OK);
  ck_assert_msg(gbps > 10 && used >= ((size_t)64 << 20), "copy bandwidth %g GB/s over %zu bytes",
                gbps, used);
  printf("bench hooks: run %.4f ms, copy %.1f GB/s on %s\n", ms[0], gbps, info.device);
  gc_diags_free(&d);
  /* Results after timing are still right (timing reuses the uploaded inputs). */
  graphc_tensor_t *again = tu_clone_outputs(out, 3);
  must_run(&t, in, again);
  expect_identical(out, again, 3, "run after timing");
  tu_free_tensors(again, 3);
  tu_free_tensors(in, 5);
  tu_free_tensors(out, 3);
  tx_free(&t);
}
END_TEST

int main(void) {
  g_seed = tu_seed();
  g_have_device = tu_probe_device();
  printf("test_cuda_runtime: seed %llu (GRAPHC_TEST_SEED=%llu reproduces), CUDA device: %s\n",
         (unsigned long long)g_seed, (unsigned long long)g_seed, g_have_device ? "yes" : "no");
  Suite *s = suite_create("cuda_runtime");
  TCase *tc = tcase_create("no_device");
  tcase_add_test(tc, no_device_compile_unavailable);
  tcase_add_test(tc, available_reports_reason);
  tcase_add_test(tc, driver_missing);
  tcase_add_test(tc, driver_stub);
  tcase_add_test(tc, hooks_reject_other_backends);
  tcase_add_test(tc, bench_cli);
  tcase_set_timeout(tc, 300);
  suite_add_tcase(s, tc);
  TCase *td = tcase_create("device");
  tcase_add_test(td, host_run_matches_interp);
  tcase_add_test(td, eager_vs_graph_identical);
  tcase_add_test(td, sync_env_eager);
  tcase_add_test(td, run_device_pointers);
  tcase_add_test(td, input_validation);
  tcase_add_test(td, device_oom_then_recover);
  tcase_add_test(td, context_untouched);
  tcase_add_test(td, arch_option);
  tcase_add_test(td, many_executables);
  tcase_add_test(td, stats_text);
  tcase_add_test(td, bench_hooks);
  tcase_add_test(td, tf32_matmuls);
  tcase_add_test(td, tf32_rounding);
  tcase_set_timeout(td, 600);
  suite_add_tcase(s, td);
  int rc = tu_run_suite(s);
  if (rc == 0 && !g_have_device) {
    printf("SKIPPED: no CUDA device (the no-device cases passed; the device cases need a GPU)\n");
    return 77;
  }
  return rc;
}
