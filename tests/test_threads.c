/* test_threads.c - the JIT API from several threads at once.
 *
 * The rules graphc.h states: models compile on many threads at once (a
 * context each, or one shared context); an executable may be run from several
 * threads at once, and its runs are serialized (each sees its own inputs and
 * writes its own outputs, never another's). Checked on every backend present
 * (interp, cpu, and cuda where a device exists) with fresh random inputs per
 * run, against a float64 reference computed here.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "cuda_testutil.h"
#include "driver/exec.h"

#define N_THREADS 8
#define M 4
#define K 64
#define N 32

static const char *k_model =
    "version 1;\n"
    "graph @g(%x: f32[4, 64], %w: f32[64, 32], %b: f32[32]) -> (f32[4, 32]) {\n"
    "  %h = matmul(%x, %w);\n"
    "  %y = add(%h, %b);\n"
    "  %r = relu(%y);\n"
    "  return %r;\n"
    "}\n";

/* splitmix64: a thread's own random stream. */
static uint64_t next_u64(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Uniform in [-1, 1). */
static float next_f(uint64_t *s) { return (float)((next_u64(s) >> 11) * 0x1.0p-53 * 2.0 - 1.0); }

/* relu(x w + b) in float64. */
static void reference(const float *x, const float *w, const float *b, double *y) {
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      double acc = b[j];
      for (int k = 0; k < K; k++) acc += (double)x[i * K + k] * w[k * N + j];
      y[i * N + j] = acc > 0 ? acc : 0;
    }
}

/* A tensor over caller memory. */
static graphc_tensor_t tensor(float *data, int rank, int64_t d0, int64_t d1) {
  graphc_tensor_t t = {GRAPHC_DTYPE_F32, rank, {d0, d1}, data, 0};
  t.nbytes = (size_t)(rank == 1 ? d0 : d0 * d1) * sizeof(float);
  return t;
}

/* Compile k_model for `backend` in ctx; NULL (with a message) on failure. */
static graphc_executable_t *compile_model(graphc_context_t *ctx, graphc_backend_t backend) {
  graphc_model_t *m = NULL;
  graphc_error_t err;
  graphc_status_t st = graphc_model_load_string(ctx, "threads.graph", k_model, strlen(k_model), &m, &err);
  ck_assert_msg(st == GRAPHC_STATUS_OK, "load: %s", err.message);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = backend;
  graphc_executable_t *exe = NULL;
  st = graphc_compile(m, &o, &exe, &err);
  graphc_model_destroy(m);
  ck_assert_msg(st == GRAPHC_STATUS_OK, "compile for %s: %s", graphc_backend_name(backend), err.message);
  return exe;
}

typedef struct worker {
  graphc_executable_t *exe;     /* shared, or NULL: compile one of its own */
  int use_ctx;                  /* run on an execution context of its own */
  graphc_exec_context_t *ec;
  graphc_context_t *ctx;        /* for compiling when exe is NULL */
  graphc_backend_t backend;
  uint64_t seed;
  int runs;
  int bad_status, wrong;        /* results */
  double worst;                 /* largest relative error seen */
  char first_error[256];
} worker;

/* One run with fresh inputs; counts a bad status or a wrong output. */
static void run_once(worker *w, graphc_executable_t *exe) {
  float x[M * K], wt[K * N], b[N], y[M * N];
  double ref[M * N];
  for (int i = 0; i < M * K; i++) x[i] = next_f(&w->seed);
  for (int i = 0; i < K * N; i++) wt[i] = next_f(&w->seed);
  for (int i = 0; i < N; i++) b[i] = next_f(&w->seed);
  memset(y, 0xff, sizeof y);  /* NaN: an output never written is wrong */
  reference(x, wt, b, ref);
  graphc_tensor_t in[3] = {tensor(x, 2, M, K), tensor(wt, 2, K, N), tensor(b, 1, N, 0)};
  graphc_tensor_t out[1] = {tensor(y, 2, M, N)};
  graphc_error_t err;
  if ((w->ec ? graphc_exec_context_run(w->ec, in, 3, out, 1, &err)
             : graphc_executable_run(exe, in, 3, out, 1, &err)) != GRAPHC_STATUS_OK) {
    if (!w->bad_status++) snprintf(w->first_error, sizeof w->first_error, "%.200s", err.message);
    return;
  }
  double num = 0, den = 0;
  for (int i = 0; i < M * N; i++) {
    double e = (double)y[i] - ref[i];
    num += isnan(e) ? INFINITY : e * e;
    den += ref[i] * ref[i];
  }
  double rel = sqrt(num / (den > 0 ? den : 1));
  if (rel > w->worst || isnan(rel)) w->worst = rel;
  if (!(rel <= 1e-5)) w->wrong++;
}

/* A thread: compile its own executable when none is shared, then run. */
static void *work(void *arg) {
  worker *w = arg;
  graphc_executable_t *exe = w->exe;
  if (!exe) {
    graphc_model_t *m = NULL;
    graphc_error_t err;
    graphc_compile_options_t o;
    graphc_compile_options_init(&o);
    o.backend = w->backend;
    if (graphc_model_load_string(w->ctx, "threads.graph", k_model, strlen(k_model), &m, &err) ||
        graphc_compile(m, &o, &exe, &err)) {
      w->bad_status++;
      snprintf(w->first_error, sizeof w->first_error, "compile: %.200s", err.message);
      graphc_model_destroy(m);
      return NULL;
    }
    graphc_model_destroy(m);
  }
  graphc_error_t err;
  if (w->use_ctx && graphc_exec_context_create(exe, &w->ec, &err) != GRAPHC_STATUS_OK) {
    w->bad_status++;
    snprintf(w->first_error, sizeof w->first_error, "context: %.200s", err.message);
  }
  for (int r = 0; r < w->runs && (!w->use_ctx || w->ec); r++) run_once(w, exe);
  graphc_exec_context_destroy(w->ec);
  w->ec = NULL;
  if (!w->exe) graphc_executable_destroy(exe);
  return NULL;
}

/* Start N_THREADS workers and check that every run was right. */
static void run_threads(worker *ws, const char *what) {
  pthread_t th[N_THREADS];
  for (int t = 0; t < N_THREADS; t++) ck_assert_int_eq(pthread_create(&th[t], NULL, work, &ws[t]), 0);
  for (int t = 0; t < N_THREADS; t++) pthread_join(th[t], NULL);
  for (int t = 0; t < N_THREADS; t++)
    ck_assert_msg(ws[t].bad_status == 0 && ws[t].wrong == 0,
                  "%s: thread %d: %d bad statuses (first: %s), %d wrong outputs of %d runs (worst rel. "
                  "L2 %g)",
                  what, t, ws[t].bad_status, ws[t].first_error, ws[t].wrong, ws[t].runs, ws[t].worst);
}

/* The backends to test here: interp and cpu always, cuda with a device. */
static int backends(graphc_backend_t *out) {
  int n = 0;
  out[n++] = GRAPHC_BACKEND_INTERP;
  if (gc_backend_cpu.prepare) out[n++] = GRAPHC_BACKEND_CPU;
  if (gc_cuda_available(tu_rt_settings())) out[n++] = GRAPHC_BACKEND_CUDA;
  return n;
}

/* One executable, 8 threads running it at once (on the executable, or each on an
 * execution context of its own): every output right. */
static void shared(int use_ctx) {
  graphc_backend_t bs[3];
  int nb = backends(bs);
  for (int i = 0; i < nb; i++) {
    graphc_context_t *ctx = NULL;
    ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
    graphc_executable_t *exe = compile_model(ctx, bs[i]);
    worker ws[N_THREADS];
    for (int t = 0; t < N_THREADS; t++)
      ws[t] = (worker){.exe = exe, .use_ctx = use_ctx, .backend = bs[i],
                       .seed = tu_seed() + 7919u * (t + 1),
                       .runs = bs[i] == GRAPHC_BACKEND_INTERP ? 50 : 300};
    char what[64];
    snprintf(what, sizeof what, "shared %s executable%s", graphc_backend_name(bs[i]),
             use_ctx ? ", a context a thread" : "");
    run_threads(ws, what);
    graphc_executable_destroy(exe);
    graphc_context_destroy(ctx);
  }
}

START_TEST(shared_executable) { shared(0); }
END_TEST

START_TEST(shared_executable_contexts) { shared(1); }
END_TEST

/* Compiling on 8 threads at once in one shared context, each then running its own executable. */
START_TEST(compile_many_threads) {
  graphc_backend_t bs[3];
  int nb = backends(bs);
  for (int i = 0; i < nb; i++) {
    graphc_context_t *ctx = NULL;
    ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
    worker ws[N_THREADS];
    for (int t = 0; t < N_THREADS; t++)
      ws[t] = (worker){.ctx = ctx, .backend = bs[i], .seed = tu_seed() + 104729u * (t + 1), .runs = 20};
    char what[64];
    snprintf(what, sizeof what, "compile on threads, %s", graphc_backend_name(bs[i]));
    run_threads(ws, what);
    graphc_context_destroy(ctx);
  }
}
END_TEST

/* A thread that loads a malformed model again and again on a shared context:
 * every call fails with its own error at its own position. */
static void *load_bad(void *arg) {
  worker *w = arg;
  char src[128];
  int line = 2 + (int)(w->seed % 5);
  for (int r = 0; r < w->runs; r++) {
    int n = snprintf(src, sizeof src, "version 1;\n");
    for (int l = 2; l < line; l++) n += snprintf(src + n, sizeof src - n, "\n");
    snprintf(src + n, sizeof src - n, "graph @g(%%x: f32[4]) -> (f32[4]) { %%y = nosuchop(%%x); return %%y; }\n");
    graphc_model_t *m = NULL;
    graphc_error_t err;
    graphc_status_t st = graphc_model_load_string(w->ctx, "bad.graph", src, strlen(src), &m, &err);
    if (st == GRAPHC_STATUS_OK || err.line != line || !strstr(err.message, "nosuchop")) {
      if (!w->bad_status++)
        snprintf(w->first_error, sizeof w->first_error, "status %d, line %d (want %d): %.150s", st, err.line,
                 line, err.message);
    }
    graphc_model_destroy(m);
    /* This thread's own diagnostics: its message at its line, with the caret. */
    char want[32];
    snprintf(want, sizeof want, "bad.graph:%d:", line);
    const char *diag = graphc_context_diagnostics(w->ctx);
    if ((!strstr(diag, want) || !strstr(diag, "nosuchop") || !strstr(diag, "^")) && !w->bad_status++)
      snprintf(w->first_error, sizeof w->first_error, "diagnostics lack '%s': %.150s", want, diag);
  }
  return NULL;
}

/* Errors from several threads at once on one context: each call's error is
 * its own, and so are each thread's diagnostics (kept per thread, without a
 * race: before, one string per context was freed by one thread while another
 * rendered or read it, a double free). */
START_TEST(errors_many_threads) {
  graphc_context_t *ctx = NULL;
  ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
  worker ws[N_THREADS];
  pthread_t th[N_THREADS];
  for (int t = 0; t < N_THREADS; t++) ws[t] = (worker){.ctx = ctx, .seed = (uint64_t)t, .runs = 200};
  for (int t = 0; t < N_THREADS; t++) ck_assert_int_eq(pthread_create(&th[t], NULL, load_bad, &ws[t]), 0);
  for (int t = 0; t < N_THREADS; t++) pthread_join(th[t], NULL);
  for (int t = 0; t < N_THREADS; t++)
    ck_assert_msg(ws[t].bad_status == 0, "thread %d: %d wrong errors (first: %s)", t, ws[t].bad_status,
                  ws[t].first_error);
  /* This thread made no call on ctx: its diagnostics are empty, not another thread's. */
  ck_assert_str_eq(graphc_context_diagnostics(ctx), "");
  graphc_context_destroy(ctx);
}
END_TEST

int main(void) {
  Suite *s = suite_create("threads");
  TCase *tc = tcase_create("api");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, shared_executable);
  tcase_add_test(tc, shared_executable_contexts);
  tcase_add_test(tc, compile_many_threads);
  tcase_add_test(tc, errors_many_threads);
  suite_add_tcase(s, tc);
  return tu_run_suite(s);
}
