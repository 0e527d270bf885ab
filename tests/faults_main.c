/* faults_main.c - allocation-failure injection through the whole interpreter
 * path: load (parse + verify), weights (read, check, write), compile for the
 * interpreter, run, print, and the error paths.
 *
 * This program compiles the library sources itself and is linked with
 * -Wl,--wrap=malloc,... (tests/failalloc.c), so every host allocation the
 * library makes can be failed. For N = 1, 2, 3, ... a child process fails the
 * Nth allocation (and, in the sticky test, every one after it) while it runs a
 * scenario, and checks:
 *   - nothing crashes (a signal or an assertion in the child is a failure);
 *   - every failing call returns a status and fills a non-empty message;
 *   - a call that fails under injection reports GRAPHC_STATUS_OUT_OF_MEMORY
 *     (or the error the scenario expects); any other status is listed, and is
 *     a failure with GRAPHC_FAULTS_STRICT=1;
 *   - when every call succeeds, the outputs equal the reference bit for bit;
 *   - after everything is destroyed, no allocation made through the wrappers is
 *     still live (and, under ASan, LeakSanitizer finds nothing at exit).
 * The loop ends at the first N beyond the scenario's allocation count.
 * GRAPHC_FAULTS_N=K runs only N=K in-process (for a debugger; with
 * GRAPHC_FAULTS_SCENARIO=file|string|errors and GRAPHC_FAULTS_STICKY=1).
 * GRAPHC_FAULTS_MODE=each|sticky runs one of the two tests.
 * GRAPHC_FAULTS_VERBOSE=1 lists statuses other than out of memory.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "failalloc.h"
#include "testutil.h"
#include "ir/ir.h"

/* The test's own buffers bypass the wrappers (never failed, never tracked). */
void *__real_calloc(size_t n, size_t size);
void __real_free(void *p);

/* ---- the model ----------------------------------------------------------------------- */
/* One graph touching every family of ops (and so every interpreter kernel
 * file), with params, a symbolic dim and several outputs. */
static const char k_rich[] =
    "version 1;\n"
    "weights \"rich.safetensors\";\n"
    "graph @main<B>(%x: f32[B, 8], %idx: i64[3], %img: f32[1, 2, 5, 5]) -> (f32[3, 2], i32[3], "
    "f32[2, 3], f32[1, 3, 5, 5], f32[2, 2], f32[B, 8]) {\n"
    "  param %w: f32[8, 6] = \"w\";\n"
    "  param %b: f32[6] = \"b\";\n"
    "  param %g: f32[6] = \"g\";\n"
    "  param %k: f32[3, 2, 3, 3] = \"k\";\n"
    "  param %g8: f32[8] = \"g8\";\n"
    "  %h = matmul(%x, %w);\n"
    "  %hb = add(%h, %b);\n"
    "  %a = gelu(%hb, approximate=\"tanh\");\n"
    "  %n = layernorm(%a, %g, %b);\n"
    "  %s = softmax(%n, axis=-1);\n"
    "  %t = transpose(%s, perm=[1, 0]);\n"
    "  %r = reduce_sum(%t, axes=[1], keepdims=true);\n"
    "  %c = const(value=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], shape=[6, 1]);\n"
    "  %m = mul(%r, %c);\n"
    "  %cat = concat(%m, %c, axis=1);\n"
    "  %p, %q = split(%cat, axis=0, sizes=[2, 4]);\n"
    "  %gth = gather(%q, %idx, axis=0);\n"
    "  %io = iota(shape=[3, 2], axis=1, dtype=f32);\n"
    "  %cmp = gt(%gth, %io);\n"
    "  %sel = select(%cmp, %gth, %io);\n"
    "  %cv = conv2d(%img, %k, padding=[1, 1]);\n"
    "  %mp = max_pool2d(%cv, kernel=[2, 2]);\n"
    "  %ap = avg_pool2d(%cv, kernel=[3, 3], stride=[1, 1], padding=[1, 1]);\n"
    "  %rs = reshape(%mp, shape=[3, 4]);\n"
    "  %am = argmax(%rs, axis=1);\n"
    "  %ci = cast(%am, to=i32);\n"
    "  %pd = pad(%sel, pads=[1, 0, 0, 1], value=0.5);\n"
    "  %sl = slice(%pd, start=[0, 0], end=[4, 3], step=[2, 1]);\n"
    "  %ex = exp(%sl);\n"
    "  %lsm = log_softmax(%ex, axis=0);\n"
    "  %rm = rmsnorm(%x, %g8);\n"
    "  %bc = broadcast(%rm, shape=[2, B, 8]);\n"
    "  %mx = reduce_max(%bc, axes=[0]);\n"
    "  %cl = clamp(%mx, min=-1.0, max=1.0);\n"
    "  %mn = reduce_mean(%p, axes=[1]);\n"
    "  %mn2 = reshape(%mn, shape=[2, 1]);\n"
    "  %pp = add(%p, %mn2);\n"
    "  return %sel, %ci, %lsm, %ap, %pp, %cl;\n"
    "}\n";

#define N_IN 3
#define N_OUT 6
#define B 3

static char g_dir[512];          /* scratch directory: rich.graph, rich.safetensors */
static char g_graph_path[600], g_weights_path[600], g_out_weights[600];
static float g_x[B * 8], g_img[50];
static int64_t g_idx[3] = {0, 3, -1};
static void *g_ref[N_OUT];        /* reference outputs (no injection) */
static size_t g_ref_bytes[N_OUT];
static int g_strict;

/* ---- problems found in one child ------------------------------------------------------ */
static int g_problems;
static int g_verbose;
static int g_sticky;          /* every allocation after the Nth fails too */
static int g_lost_messages;   /* sticky mode: errors whose message could not be kept */

/* Record a problem (printed with the N it happened at). */
static void problem(long n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(long n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "  N=%ld: ", n);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  g_problems++;
}

/* Check one call's outcome. `expect` is the status the call returns without
 * injection. Returns 1 when the scenario may continue (status == expect). */
static int check_call(long n, const char *call, graphc_status_t st, const graphc_error_t *err,
                      graphc_status_t expect) {
  if (st == expect) {
    if (st != GRAPHC_STATUS_OK && err && !err->message[0])
      problem(n, "%s: status '%s' without a message", call, graphc_status_string(st));
    return 1;
  }
  if (st == GRAPHC_STATUS_OK) {
    problem(n, "%s: returned ok, expected '%s'", call, graphc_status_string(expect));
    return 0;
  }
  if (err && !err->message[0]) {
    /* With every allocation failing (sticky), even the message may be lost. */
    if (g_sticky && !g_strict) {
      g_lost_messages++;
      if (g_verbose)
        fprintf(stderr, "  note: N=%ld: %s: status '%s' without a message\n", n, call,
                graphc_status_string(st));
    } else {
      problem(n, "%s: status '%s' without a message", call, graphc_status_string(st));
    }
  } else if (err && err->code != st)
    problem(n, "%s: returned '%s' but the error says '%s'", call, graphc_status_string(st),
            graphc_status_string(err->code));
  if (st != GRAPHC_STATUS_OUT_OF_MEMORY) {
    if (g_strict)
      problem(n, "%s: an allocation failure surfaced as '%s': %s", call,
              graphc_status_string(st), err ? err->message : "");
    else if (g_verbose)
      fprintf(stderr, "  note: N=%ld: %s: an allocation failure surfaced as '%s': %s\n", n, call,
              graphc_status_string(st), err ? err->message : "");
  }
  if (failalloc_injected() == 0)
    problem(n, "%s: failed with '%s' although no allocation failed: %s", call,
            graphc_status_string(st), err ? err->message : "");
  return 0;
}

/* Input tensors of the rich model. */
static void make_inputs(graphc_tensor_t *in) {
  in[0] = (graphc_tensor_t){.dtype = GRAPHC_DTYPE_F32, .rank = 2, .dims = {B, 8},
                            .data = g_x, .nbytes = sizeof g_x};
  in[1] = (graphc_tensor_t){.dtype = GRAPHC_DTYPE_I64, .rank = 1, .dims = {3},
                            .data = g_idx, .nbytes = sizeof g_idx};
  in[2] = (graphc_tensor_t){.dtype = GRAPHC_DTYPE_F32, .rank = 4, .dims = {1, 2, 5, 5},
                            .data = g_img, .nbytes = sizeof g_img};
}

/* Compile, run and compare with the reference (or record it when ref != 0). */
static void compile_run(long n, graphc_model_t *m, int optimize, int record) {
  graphc_error_t err;
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_INTERP;
  o.optimize = optimize;
  graphc_executable_t *exe = NULL;
  graphc_status_t st = graphc_compile(m, &o, &exe, &err);
  if (!check_call(n, "graphc_compile", st, &err, GRAPHC_STATUS_OK)) return;
  graphc_tensor_t in[N_IN], out[N_OUT];
  make_inputs(in);
  int ok = graphc_executable_num_outputs(exe) == N_OUT;
  if (!ok) problem(n, "the executable has %zu outputs", graphc_executable_num_outputs(exe));
  for (int i = 0; ok && i < N_OUT; i++) {
    graphc_tensor_info_t info;
    graphc_executable_output_info(exe, (size_t)i, &info);
    out[i] = (graphc_tensor_t){.dtype = info.dtype, .rank = info.rank, .nbytes = info.nbytes};
    memcpy(out[i].dims, info.dims, sizeof out[i].dims);
    out[i].data = record ? NULL : __real_calloc(1, info.nbytes);
    if (record) {
      g_ref[i] = __real_calloc(1, info.nbytes);
      out[i].data = g_ref[i];
      g_ref_bytes[i] = info.nbytes;
    }
  }
  if (ok) {
    st = graphc_executable_run(exe, in, N_IN, out, N_OUT, &err);
    if (check_call(n, "graphc_executable_run", st, &err, GRAPHC_STATUS_OK) && !record)
      for (int i = 0; i < N_OUT; i++)
        if (out[i].nbytes != g_ref_bytes[i] || memcmp(out[i].data, g_ref[i], g_ref_bytes[i]) != 0)
          problem(n, "run succeeded but output %d differs from the reference", i);
    for (int i = 0; !record && i < N_OUT; i++) __real_free(out[i].data);
  }
  graphc_executable_destroy(exe);
}

/* Scenario 1: load from a file (weights relative to it), bind, compile,
 * run, print, write random weights. */
static void scenario_file(long n, int record) {
  graphc_context_t *ctx = NULL;
  graphc_error_t err;
  graphc_status_t st = graphc_context_create(&ctx);
  if (!check_call(n, "graphc_context_create", st, NULL, GRAPHC_STATUS_OK)) return;
  graphc_model_t *m = NULL;
  st = graphc_model_load_file(ctx, g_graph_path, &m, &err);
  if (check_call(n, "graphc_model_load_file", st, &err, GRAPHC_STATUS_OK)) {
    st = graphc_model_set_entry(m, "@main", &err);
    if (check_call(n, "graphc_model_set_entry", st, &err, GRAPHC_STATUS_OK)) {
      st = graphc_model_bind(m, "B", B, &err);
      if (check_call(n, "graphc_model_bind", st, &err, GRAPHC_STATUS_OK)) {
        compile_run(n, m, 1, record);
        char *text = NULL;
        st = graphc_model_print(m, &text, &err);
        check_call(n, "graphc_model_print", st, &err, GRAPHC_STATUS_OK);
        graphc_free(text);
        st = graphc_model_write_random_weights(m, g_out_weights, 7, &err);
        check_call(n, "graphc_model_write_random_weights", st, &err, GRAPHC_STATUS_OK);
        st = graphc_model_specialize(m, &err);
        check_call(n, "graphc_model_specialize", st, &err, GRAPHC_STATUS_OK);
      }
    }
  }
  graphc_model_destroy(m);
  (void)graphc_context_diagnostics(ctx);
  graphc_context_destroy(ctx);
}

/* Scenario 2: load from a string, weights given by path, compile without
 * optimization, run. */
static void scenario_string(long n) {
  graphc_context_t *ctx = NULL;
  graphc_error_t err;
  graphc_status_t st = graphc_context_create(&ctx);
  if (!check_call(n, "graphc_context_create", st, NULL, GRAPHC_STATUS_OK)) return;
  graphc_model_t *m = NULL;
  st = graphc_model_load_string(ctx, "rich.graph", k_rich, sizeof k_rich - 1, &m, &err);
  if (check_call(n, "graphc_model_load_string", st, &err, GRAPHC_STATUS_OK)) {
    st = graphc_model_bind(m, "B", B, &err);
    if (check_call(n, "graphc_model_bind", st, &err, GRAPHC_STATUS_OK)) {
      st = graphc_model_set_weights(m, g_weights_path, &err);
      if (check_call(n, "graphc_model_set_weights", st, &err, GRAPHC_STATUS_OK))
        compile_run(n, m, 0, 0);
    }
  }
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
}

/* Scenario 3: the error paths must report their error (or out of memory). */
static void scenario_errors(long n) {
  graphc_context_t *ctx = NULL;
  graphc_error_t err;
  graphc_status_t st = graphc_context_create(&ctx);
  if (!check_call(n, "graphc_context_create", st, NULL, GRAPHC_STATUS_OK)) return;
  static const char syntax[] =
      "version 1;\ngraph @g(%x: f32[4]) -> (f32[4]) {\n  %y = relu(%x)\n  %z = $;\n"
      "  return %q;\n}\n";
  static const char verify[] =
      "version 1;\ngraph @g(%x: f32[4], %i: i32[2]) -> (f32[4]) {\n  %y = add(%x, %i);\n"
      "  %z = reshape(%x, shape=[3]);\n  return %y;\n}\n";
  static const char gather[] =
      "version 1;\ngraph @g(%x: f32[4], %i: i32[2]) -> (f32[2]) {\n"
      "  %y = gather(%x, %i, axis=0);\n  return %y;\n}\n";
  static const char params[] =
      "version 1;\nweights \"does-not-exist.safetensors\";\n"
      "graph @g(%x: f32[4]) -> (f32[4]) {\n  param %w: f32[4] = \"w\";\n"
      "  %y = add(%x, %w);\n  return %y;\n}\n";
  graphc_model_t *m = NULL;
  st = graphc_model_load_string(ctx, "syntax.graph", syntax, sizeof syntax - 1, &m, &err);
  check_call(n, "load (syntax errors)", st, &err, GRAPHC_STATUS_SYNTAX_ERROR);
  graphc_model_destroy(m);
  m = NULL;
  st = graphc_model_load_string(ctx, "verify.graph", verify, sizeof verify - 1, &m, &err);
  check_call(n, "load (verify errors)", st, &err, GRAPHC_STATUS_VERIFY_ERROR);
  graphc_model_destroy(m);
  m = NULL;

  st = graphc_model_load_string(ctx, "params.graph", params, sizeof params - 1, &m, &err);
  if (check_call(n, "load (params)", st, &err, GRAPHC_STATUS_OK)) {
    graphc_executable_t *exe = NULL;
    graphc_compile_options_t o;
    graphc_compile_options_init(&o);
    o.backend = GRAPHC_BACKEND_INTERP;
    st = graphc_compile(m, &o, &exe, &err);
    check_call(n, "compile (missing weights)", st, &err, GRAPHC_STATUS_IO_ERROR);
    graphc_executable_destroy(exe);
    st = graphc_model_bind(m, "B", 4, &err);
    check_call(n, "bind (unknown symbol)", st, &err, GRAPHC_STATUS_INVALID_ARGUMENT);
  }
  graphc_model_destroy(m);
  m = NULL;

  st = graphc_model_load_string(ctx, "gather.graph", gather, sizeof gather - 1, &m, &err);
  if (check_call(n, "load (gather)", st, &err, GRAPHC_STATUS_OK)) {
    graphc_executable_t *exe = NULL;
    graphc_compile_options_t o;
    graphc_compile_options_init(&o);
    o.backend = GRAPHC_BACKEND_INTERP;
    st = graphc_compile(m, &o, &exe, &err);
    if (check_call(n, "compile (gather)", st, &err, GRAPHC_STATUS_OK)) {
      float x[4] = {1, 2, 3, 4}, y[2];
      int32_t idx[2] = {1, 9};
      graphc_tensor_t in[2] = {
          {.dtype = GRAPHC_DTYPE_F32, .rank = 1, .dims = {4}, .data = x, .nbytes = sizeof x},
          {.dtype = GRAPHC_DTYPE_I32, .rank = 1, .dims = {2}, .data = idx, .nbytes = sizeof idx}};
      graphc_tensor_t out = {.dtype = GRAPHC_DTYPE_F32, .rank = 1, .dims = {2}, .data = y,
                             .nbytes = sizeof y};
      st = graphc_executable_run(exe, in, 2, &out, 1, &err);
      check_call(n, "run (gather out of range)", st, &err, GRAPHC_STATUS_RUNTIME_ERROR);
    }
    graphc_executable_destroy(exe);
  }
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
}

typedef void (*scenario_fn)(long n);
static void scenario_file_run(long n) { scenario_file(n, 0); }

/* Run scenario s with allocation n failed in this process; returns 0 when
 * clean with an injected failure, 4 the same but an error message was lost
 * (sticky mode), 3 when clean and allocation n never came (the loop is
 * done), 1 on problems. */
static int run_one(scenario_fn s, long n, int sticky) {
  g_problems = 0;
  g_sticky = sticky;
  g_lost_messages = 0;
  long live0 = failalloc_live();
  failalloc_arm(n, sticky);
  s(n);
  long injected = failalloc_injected();
  failalloc_arm(0, 0);
  long leaked = failalloc_live() - live0;
  if (leaked != 0) problem(n, "%ld allocation(s) still live after everything was destroyed", leaked);
  if (g_problems) return 1;
  if (!injected) return 3;
  return g_lost_messages ? 4 : 0;
}

/* Loop N = 1, 2, ... over one scenario, each N in a child process. */
static int fault_loop(const char *name, scenario_fn s, int sticky) {
  const char *only = getenv("GRAPHC_FAULTS_N");
  if (only) return run_one(s, atol(only), sticky) == 1;
  int failures = 0, crashes = 0, lost = 0;
  long n;
  for (n = 1; n < 1000000; n++) {
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
      perror("fork");
      return 1;
    }
    if (pid == 0) {
      /* A hang (e.g. a loop that waits for memory) is a failure too. Check's
       * own SIGALRM handler would kill the whole process group: reset it. */
      signal(SIGALRM, SIG_DFL);
      setpgid(0, 0);
      alarm(60);
      exit(run_one(s, n, sticky));
    }
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(ws)) {
      fprintf(stderr, "  N=%ld: %s (signal %d); reproduce: GRAPHC_FAULTS_N=%ld\n", n,
              WTERMSIG(ws) == SIGALRM ? "hangs" : "crashed", WTERMSIG(ws), n);
      crashes++;
      continue;
    }
    int code = WEXITSTATUS(ws);
    if (code == 3) break;
    if (code == 4) {
      lost++;
      continue;
    }
    if (code != 0) {
      if (code != 1) fprintf(stderr, "  N=%ld: child exited with %d (sanitizer report above?)\n", n, code);
      failures++;
    }
  }
  fprintf(stderr, "faults: %s%s: %ld allocation points, %d with problems, %d crashes or hangs",
          name, sticky ? " (sticky)" : "", n - 1, failures, crashes);
  if (sticky) fprintf(stderr, ", %d with an error message lost", lost);
  fprintf(stderr, "\n");
  return failures + crashes;
}

/* ---- tests -------------------------------------------------------------------------- */
/* Every scenario with one failure mode; all run before the verdict. */
static int all_scenarios(int sticky) {
  int bad = 0;
  bad += fault_loop("load file + compile + run + print + weights", scenario_file_run, sticky);
  bad += fault_loop("load string + compile -O0 + run", scenario_string, sticky);
  bad += fault_loop("error paths", scenario_errors, sticky);
  return bad;
}

/* GRAPHC_FAULTS_MODE=each|sticky limits the run to one of the two tests. */
static int mode_enabled(const char *mode) {
  const char *m = getenv("GRAPHC_FAULTS_MODE");
  return !m || !*m || strcmp(m, mode) == 0;
}

START_TEST(test_fail_each_allocation) {
  if (mode_enabled("each")) ck_assert_int_eq(all_scenarios(0), 0);
}
END_TEST

START_TEST(test_fail_from_allocation_on) {
  if (mode_enabled("sticky")) ck_assert_int_eq(all_scenarios(1), 0);
}
END_TEST

/* Scratch files and reference outputs, made before any injection. */
static void setup_files(void) {
  snprintf(g_dir, sizeof g_dir, "%s", tu_tmpdir());
  snprintf(g_graph_path, sizeof g_graph_path, "%s/rich.graph", g_dir);
  snprintf(g_weights_path, sizeof g_weights_path, "%s/rich.safetensors", g_dir);
  snprintf(g_out_weights, sizeof g_out_weights, "%s/out.safetensors", g_dir);
  FILE *f = fopen(g_graph_path, "w");
  if (!f || fwrite(k_rich, 1, sizeof k_rich - 1, f) != sizeof k_rich - 1 || fclose(f) != 0) {
    perror(g_graph_path);
    exit(1);
  }
  for (int i = 0; i < B * 8; i++) g_x[i] = (float)((i * 37) % 19 - 9) / 7.0f;
  for (int i = 0; i < 50; i++) g_img[i] = (float)((i * 11) % 13 - 6) / 5.0f;
  graphc_context_t *ctx;
  graphc_model_t *m;
  graphc_error_t err;
  if (graphc_context_create(&ctx) || graphc_model_load_file(ctx, g_graph_path, &m, &err) ||
      graphc_model_bind(m, "B", B, &err) ||
      graphc_model_write_random_weights(m, g_weights_path, 42, &err)) {
    fprintf(stderr, "faults: setup failed: %s\n", err.message);
    exit(1);
  }
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
  g_problems = 0;
  scenario_file(0, 1); /* records g_ref */
  if (g_problems || !g_ref[0]) {
    fprintf(stderr, "faults: the scenario fails without injection\n");
    exit(1);
  }
}

/* cJSON through the wrappers, scratch files and reference, then the suite. */
int main(void) {
  /* cJSON (safetensors headers) allocates through the wrappers too. */
  cJSON_Hooks hooks = {.malloc_fn = __wrap_malloc, .free_fn = __wrap_free};
  cJSON_InitHooks(&hooks);
  g_strict = getenv("GRAPHC_FAULTS_STRICT") && atoi(getenv("GRAPHC_FAULTS_STRICT"));
  g_verbose = g_strict || (getenv("GRAPHC_FAULTS_VERBOSE") && atoi(getenv("GRAPHC_FAULTS_VERBOSE")));
  setup_files();
  if (getenv("GRAPHC_FAULTS_N")) {
    const char *sc = getenv("GRAPHC_FAULTS_SCENARIO");
    scenario_fn s = !sc || !strcmp(sc, "file") ? scenario_file_run
                    : !strcmp(sc, "string") ? scenario_string : scenario_errors;
    return fault_loop("single", s, getenv("GRAPHC_FAULTS_STICKY") != NULL);
  }
  Suite *s = suite_create("faults");
  TCase *tc = tcase_create("alloc");
  tcase_set_timeout(tc, 1200);
  tcase_add_test(tc, test_fail_each_allocation);
  tcase_add_test(tc, test_fail_from_allocation_on);
  suite_add_tcase(s, tc);
  return tu_run_suite(s);
}
