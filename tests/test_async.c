/* test_async.c - device tensors, enqueue on a caller's stream, from several threads.
 *
 * Checked on a CUDA device against the interpreter, with fresh random inputs per
 * run (examples/mlp.graph, B=4, random weights):
 *   - graphc_executable_run_device with caller-allocated device buffers (new ones
 *     each round: the CUDA graph is re-bound);
 *   - graphc_executable_enqueue on the caller's stream, several enqueues queued
 *     back to back with different buffers before one cuStreamSynchronize, and on
 *     the NULL stream;
 *   - 8 threads enqueueing on one executable, each on its own stream;
 *   - destroying the executable with work in flight waits for it;
 *   - enqueue with pinned host tensors (graphc_host_alloc), alone and mixed with
 *     device tensors;
 *   - bad input: pageable host memory, pinned host memory where device memory is
 *     required, too small an allocation, a stream of another context (each
 *     INVALID_ARGUMENT naming the tensor), run_device / enqueue on the interpreter
 *     (UNSUPPORTED).
 *
 * No device: "SKIPPED", exit 77. GRAPHC_TEST_PRETEND=1 (the ctest test_async_pretend)
 * runs everything over the pretend driver tests/cuda_fake_driver.c instead (kernels do
 * nothing: statuses, messages and the pointer and stream checks are checked, values
 * are not) and exits 0 when it passes. Seed: $GRAPHC_TEST_SEED.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <sys/wait.h>

#include "testutil.h"
#include "cuda_testutil.h"
#include "driver/exec.h"
#include "runtime/cuda_driver.h"

#define B 4
#define N_THREADS 8

static uint64_t g_seed;
static int g_pretend;            /* pretend driver: values are not compared */
static const gc_cu_driver *g_cu; /* set up in each test (Check forks) */
static CUcontext g_pctx;         /* device 0's primary context, current in the test thread */

/* The driver, and the primary context made current in this thread. */
static void cuda_setup(void) {
  g_cu = gc_cu_driver_get(tu_rt_settings(), NULL);
  ck_assert_ptr_nonnull(g_cu);
  ck_assert_int_eq(g_cu->DevicePrimaryCtxRetain(&g_pctx, 0), CUDA_SUCCESS);
  ck_assert_int_eq(g_cu->CtxPushCurrent(g_pctx), CUDA_SUCCESS);
}

/* Undo cuda_setup. */
static void cuda_teardown(void) {
  CUcontext c;
  g_cu->CtxPopCurrent(&c);
  g_cu->DevicePrimaryCtxRelease(0);
}

/* The model, compiled for `backend` (and the interpreter's reference in *ref when not NULL). */
typedef struct model {
  graphc_context_t *ctx;
  graphc_executable_t *exe, *ref;
  char wpath[4200];
} model;

static void model_open(model *m, graphc_backend_t backend) {
  memset(m, 0, sizeof *m);
  ck_assert_int_eq(graphc_context_create(&m->ctx), GRAPHC_STATUS_OK);
  graphc_model_t *gm = NULL;
  graphc_error_t err;
  ck_assert_msg(graphc_model_load_file(m->ctx, tu_src("examples/mlp.graph"), &gm, &err) ==
                    GRAPHC_STATUS_OK, "%s", err.message);
  ck_assert_int_eq(graphc_model_bind(gm, "B", B, &err), GRAPHC_STATUS_OK);
  snprintf(m->wpath, sizeof m->wpath, "%s/async-%d.safetensors", tu_tmpdir(), (int)getpid());
  ck_assert_int_eq(graphc_model_write_random_weights(gm, m->wpath, g_seed, &err), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_set_weights(gm, m->wpath, &err), GRAPHC_STATUS_OK);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_INTERP;
  ck_assert_msg(graphc_compile(gm, &o, &m->ref, &err) == GRAPHC_STATUS_OK, "%s", err.message);
  o.backend = backend;
  ck_assert_msg(graphc_compile(gm, &o, &m->exe, &err) == GRAPHC_STATUS_OK, "compile for %s: %s",
                graphc_backend_name(backend), err.message);
  graphc_model_destroy(gm);
}

static void model_close(model *m) {
  graphc_executable_destroy(m->exe);
  graphc_executable_destroy(m->ref);
  graphc_context_destroy(m->ctx);
  remove(m->wpath);
}

/* One request: fresh host inputs, the interpreter's outputs, device buffers. */
typedef struct request {
  graphc_tensor_t *hin, *ref, *hout;   /* host: inputs, reference, results */
  graphc_tensor_t din[1], dout[1];     /* device (data = CUdeviceptr) */
} request;

/* Fresh random inputs (seed *s), their reference, device buffers with the inputs in. */
static void request_make(request *q, const model *m, uint64_t *s) {
  memset(q, 0, sizeof *q);
  ck_assert_int_eq(tu_make_io(m->ref, NULL, s, &q->hin, &q->ref), 0);
  graphc_error_t err;
  ck_assert_msg(graphc_executable_run(m->ref, q->hin, 1, q->ref, 1, &err) == GRAPHC_STATUS_OK, "%s",
                err.message);
  q->hout = tu_clone_outputs(q->ref, 1);
  q->din[0] = q->hin[0];
  q->dout[0] = q->ref[0];
  CUdeviceptr p = 0;
  ck_assert_int_eq(g_cu->MemAlloc(&p, q->hin[0].nbytes), CUDA_SUCCESS);
  ck_assert_int_eq(g_cu->MemcpyHtoD(p, q->hin[0].data, q->hin[0].nbytes), CUDA_SUCCESS);
  q->din[0].data = (void *)(uintptr_t)p;
  ck_assert_int_eq(g_cu->MemAlloc(&p, q->ref[0].nbytes), CUDA_SUCCESS);
  ck_assert_int_eq(g_cu->MemsetD8Async(p, 0xff, q->ref[0].nbytes, NULL), CUDA_SUCCESS);  /* NaN */
  ck_assert_int_eq(g_cu->CtxSynchronize(), CUDA_SUCCESS);
  q->dout[0].data = (void *)(uintptr_t)p;
}

/* Copy the device outputs back and compare them with the reference. */
static void request_check(request *q, const char *what, int i) {
  ck_assert_int_eq(g_cu->MemcpyDtoH(q->hout[0].data, (CUdeviceptr)(uintptr_t)q->dout[0].data,
                                    q->hout[0].nbytes), CUDA_SUCCESS);
  if (g_pretend) return;
  double atol, rtol;
  tu_tolerance(q->ref[0].dtype, 2, &atol, &rtol);
  int64_t n = (int64_t)(q->ref[0].nbytes / graphc_dtype_size(q->ref[0].dtype));
  tu_cmp c = tu_compare(q->ref[0].data, q->hout[0].data, q->ref[0].dtype, n, atol, rtol);
  ck_assert_msg(c.n_bad == 0, "%s %d: %lld of %lld differ; first [%lld] ref %.9g got %.9g (seed %llu)",
                what, i, (long long)c.n_bad, (long long)n, (long long)c.first_bad, c.ref_bad,
                c.got_bad, (unsigned long long)g_seed);
}

static void request_free(request *q) {
  g_cu->MemFree((CUdeviceptr)(uintptr_t)q->din[0].data);
  g_cu->MemFree((CUdeviceptr)(uintptr_t)q->dout[0].data);
  tu_free_tensors(q->hin, 1);
  tu_free_tensors(q->ref, 1);
  tu_free_tensors(q->hout, 1);
}

/* run_device against the interpreter, new buffers each round. */
START_TEST(run_device_matches_interp) {
  cuda_setup();
  model m;
  model_open(&m, GRAPHC_BACKEND_CUDA);
  uint64_t s = g_seed;
  for (int r = 0; r < 4; r++) {
    request q;
    request_make(&q, &m, &s);
    graphc_error_t err;
    ck_assert_msg(graphc_executable_run_device(m.exe, q.din, 1, q.dout, 1, &err) == GRAPHC_STATUS_OK,
                  "round %d: %s", r, err.message);
    request_check(&q, "run_device round", r);
    request_free(&q);
  }
  model_close(&m);
  cuda_teardown();
}
END_TEST

/* Several enqueues back to back on the caller's stream, different buffers each, one
 * synchronize; then on the NULL stream. */
START_TEST(enqueue_on_caller_stream) {
  cuda_setup();
  model m;
  model_open(&m, GRAPHC_BACKEND_CUDA);
  CUstream st;
  ck_assert_int_eq(g_cu->StreamCreate(&st, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  enum { R = 6 };
  request q[R];
  uint64_t s = g_seed + 1;
  for (int r = 0; r < R; r++) request_make(&q[r], &m, &s);
  graphc_error_t err;
  for (int r = 0; r < R; r++)
    ck_assert_msg(graphc_executable_enqueue(m.exe, q[r].din, 1, q[r].dout, 1, st, &err) ==
                      GRAPHC_STATUS_OK, "enqueue %d: %s", r, err.message);
  ck_assert_int_eq(g_cu->StreamSynchronize(st), CUDA_SUCCESS);
  for (int r = 0; r < R; r++) request_check(&q[r], "enqueue", r);
  /* the NULL stream: the context's default stream */
  for (int r = 0; r < 2; r++)
    ck_assert_msg(graphc_executable_enqueue(m.exe, q[r].din, 1, q[r + 2].dout, 1, NULL, &err) ==
                      GRAPHC_STATUS_OK, "NULL stream %d: %s", r, err.message);
  ck_assert_int_eq(g_cu->CtxSynchronize(), CUDA_SUCCESS);
  for (int r = 0; r < 2; r++) {
    graphc_tensor_t *t = q[r + 2].ref;   /* outputs of q[r]'s inputs now */
    q[r + 2].ref = q[r].ref;
    request_check(&q[r + 2], "NULL stream", r);
    q[r + 2].ref = t;
  }
  /* a synchronous run after enqueues in flight waits for them */
  for (int r = 0; r < R; r++)
    ck_assert_int_eq(graphc_executable_enqueue(m.exe, q[r].din, 1, q[r].dout, 1, st, &err),
                     GRAPHC_STATUS_OK);
  ck_assert_msg(graphc_executable_run(m.exe, q[0].hin, 1, q[0].hout, 1, &err) == GRAPHC_STATUS_OK,
                "%s", err.message);
  ck_assert_int_eq(g_cu->StreamSynchronize(st), CUDA_SUCCESS);
  for (int r = 0; r < R; r++) request_check(&q[r], "enqueue then run", r);
  for (int r = 0; r < R; r++) request_free(&q[r]);
  g_cu->StreamDestroy(st);
  model_close(&m);
  cuda_teardown();
}
END_TEST

/* Threads enqueueing on one executable, each on its own stream. */
typedef struct worker {
  model *m;
  int use_ctx;          /* enqueue on an execution context of its own */
  uint64_t seed;
  int bad;
  char msg[512];
  request q[4];
} worker;

static void *enqueue_worker(void *arg) {
  worker *w = arg;
  CUstream st = NULL;
  if (g_cu->CtxPushCurrent(g_pctx) != CUDA_SUCCESS || g_cu->StreamCreate(&st, CU_STREAM_NON_BLOCKING)) {
    w->bad = 1;
    snprintf(w->msg, sizeof w->msg, "cannot make a stream");
    return NULL;
  }
  graphc_error_t err;
  graphc_exec_context_t *ec = NULL;
  if (w->use_ctx && graphc_exec_context_create(w->m->exe, &ec, &err)) {
    w->bad = 1;
    snprintf(w->msg, sizeof w->msg, "context: %.400s", err.message);
  }
  for (int r = 0; r < 4 && !w->bad; r++)
    if (ec ? graphc_exec_context_enqueue(ec, w->q[r].din, 1, w->q[r].dout, 1, st, &err)
           : graphc_executable_enqueue(w->m->exe, w->q[r].din, 1, w->q[r].dout, 1, st, &err)) {
      w->bad = 1;
      snprintf(w->msg, sizeof w->msg, "enqueue %d: %.400s", r, err.message);
    }
  if (g_cu->StreamSynchronize(st) != CUDA_SUCCESS && !w->bad) {
    w->bad = 1;
    snprintf(w->msg, sizeof w->msg, "cuStreamSynchronize failed");
  }
  /* the context's host run too, on its own memory */
  if (ec && !w->bad) {
    graphc_tensor_t *hout = tu_clone_outputs(w->q[0].ref, 1);
    if (graphc_exec_context_run(ec, w->q[0].hin, 1, hout, 1, &err)) {
      w->bad = 1;
      snprintf(w->msg, sizeof w->msg, "context run: %.400s", err.message);
    } else if (!g_pretend) {
      double atol, rtol;
      tu_tolerance(hout[0].dtype, 2, &atol, &rtol);
      int64_t n = (int64_t)(hout[0].nbytes / graphc_dtype_size(hout[0].dtype));
      tu_cmp c = tu_compare(w->q[0].ref[0].data, hout[0].data, hout[0].dtype, n, atol, rtol);
      if (c.n_bad) {
        w->bad = 1;
        snprintf(w->msg, sizeof w->msg, "context run: %lld of %lld differ", (long long)c.n_bad, (long long)n);
      }
    }
    tu_free_tensors(hout, 1);
  }
  graphc_exec_context_destroy(ec);
  g_cu->StreamDestroy(st);
  CUcontext c;
  g_cu->CtxPopCurrent(&c);
  return NULL;
}

/* Threads enqueueing on one executable (use_ctx: each on an execution context of its own). */
static void threads_enqueue(int use_ctx) {
  cuda_setup();
  model m;
  model_open(&m, GRAPHC_BACKEND_CUDA);
  worker w[N_THREADS];
  pthread_t th[N_THREADS];
  for (int t = 0; t < N_THREADS; t++) {
    memset(&w[t], 0, sizeof w[t]);
    w[t].m = &m;
    w[t].use_ctx = use_ctx;
    uint64_t s = g_seed + 100 + (uint64_t)t;
    for (int r = 0; r < 4; r++) request_make(&w[t].q[r], &m, &s);
  }
  for (int t = 0; t < N_THREADS; t++) ck_assert_int_eq(pthread_create(&th[t], NULL, enqueue_worker, &w[t]), 0);
  for (int t = 0; t < N_THREADS; t++) pthread_join(th[t], NULL);
  for (int t = 0; t < N_THREADS; t++) {
    ck_assert_msg(!w[t].bad, "thread %d: %s", t, w[t].msg);
    for (int r = 0; r < 4; r++) {
      char what[64];
      snprintf(what, sizeof what, "thread %d enqueue", t);
      request_check(&w[t].q[r], what, r);
      request_free(&w[t].q[r]);
    }
  }
  model_close(&m);
  cuda_teardown();
}

START_TEST(threads_enqueue_one_executable) { threads_enqueue(0); }
END_TEST

/* Execution contexts: each thread its own, requests in flight at once. */
START_TEST(threads_enqueue_contexts) { threads_enqueue(1); }
END_TEST

/* Contexts still alive when their executable is destroyed go with it, after their
 * enqueued work; a context on its own stream never waits for another's. */
START_TEST(contexts_destroyed_with_executable) {
  cuda_setup();
  model m;
  model_open(&m, GRAPHC_BACKEND_CUDA);
  uint64_t s = g_seed + 7;
  request q[3];
  graphc_exec_context_t *ec[3];
  graphc_error_t err;
  for (int i = 0; i < 3; i++) {
    request_make(&q[i], &m, &s);
    ck_assert_msg(graphc_exec_context_create(m.exe, &ec[i], &err) == GRAPHC_STATUS_OK, "%s", err.message);
    ck_assert_int_eq(graphc_exec_context_enqueue(ec[i], q[i].din, 1, q[i].dout, 1, NULL, &err),
                     GRAPHC_STATUS_OK);
  }
  /* a bad call on a context is a status, as on the executable */
  ck_assert_int_eq(graphc_exec_context_enqueue(ec[0], q[0].din, 2, q[0].dout, 1, NULL, &err),
                   GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(err.message, "expected 1 inputs"));
  ck_assert_int_eq(graphc_exec_context_run(NULL, q[0].hin, 1, q[0].hout, 1, &err),
                   GRAPHC_STATUS_INVALID_ARGUMENT);
  graphc_exec_context_destroy(ec[1]);   /* one by hand, two with the executable */
  graphc_executable_destroy(m.exe);
  m.exe = NULL;
  for (int i = 0; i < 3; i++) {
    request_check(&q[i], "context enqueue", i);
    request_free(&q[i]);
  }
  model_close(&m);
  cuda_teardown();
}
END_TEST

/* Another executable compiled from the weights file at path, and its interpreter reference. */
static graphc_executable_t *compile_more(graphc_context_t *ctx, const char *path, graphc_backend_t be) {
  graphc_model_t *gm = NULL;
  graphc_executable_t *exe = NULL;
  graphc_error_t err;
  ck_assert_msg(graphc_model_load_file(ctx, tu_src("examples/mlp.graph"), &gm, &err) == GRAPHC_STATUS_OK, "%s",
                err.message);
  ck_assert_int_eq(graphc_model_bind(gm, "B", B, &err), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_set_weights(gm, path, &err), GRAPHC_STATUS_OK);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = be;
  ck_assert_msg(graphc_compile(gm, &o, &exe, &err) == GRAPHC_STATUS_OK, "%s", err.message);
  graphc_model_destroy(gm);
  return exe;
}

/* The stats line of the weights: "... weights X (N) shared ... (R of them already there)". */
static int weights_already_there(const graphc_executable_t *exe) {
  const char *st = graphc_executable_stats(exe), *w = strstr(st, "shared with other executables");
  ck_assert_msg(w != NULL, "no shared weights line in the stats:\n%s", st);
  const char *r = strstr(w, "(");
  ck_assert_ptr_nonnull(r);
  return strncmp(r, "(0 B of them", 12) != 0;
}

/* Executables compiled apart from one weights file share one device copy of each large
 * weight (runtime/cuda_weights.c): the second finds the first's copy, outlives the
 * first's destruction with right results, and a rewritten file (new weights, same path,
 * same size) is uploaded anew, never taken for the old one. */
START_TEST(weights_shared_between_executables) {
  cuda_setup();
  model m;
  model_open(&m, GRAPHC_BACKEND_CUDA);
  ck_assert_msg(!weights_already_there(m.exe), "the first executable found its weights on the device");
  graphc_executable_t *b = compile_more(m.ctx, m.wpath, GRAPHC_BACKEND_CUDA);
  ck_assert_msg(weights_already_there(b), "the second executable uploaded its own copy:\n%s",
                graphc_executable_stats(b));
  uint64_t s = g_seed + 23;
  graphc_error_t err;
  request q;
  request_make(&q, &m, &s);
  ck_assert_int_eq(graphc_executable_run_device(b, q.din, 1, q.dout, 1, &err), GRAPHC_STATUS_OK);
  request_check(&q, "second executable", 0);
  graphc_executable_destroy(m.exe);  /* the weights stay for b */
  m.exe = NULL;
  ck_assert_int_eq(g_cu->MemsetD8Async((CUdeviceptr)(uintptr_t)q.dout[0].data, 0xff, q.ref[0].nbytes, NULL),
                   CUDA_SUCCESS);
  ck_assert_int_eq(graphc_executable_run_device(b, q.din, 1, q.dout, 1, &err), GRAPHC_STATUS_OK);
  request_check(&q, "second executable, the first destroyed", 0);
  request_free(&q);

  /* new weights in the same file */
  graphc_model_t *gm = NULL;
  ck_assert_int_eq(graphc_model_load_file(m.ctx, tu_src("examples/mlp.graph"), &gm, &err), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_bind(gm, "B", B, &err), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_write_random_weights(gm, m.wpath, g_seed + 1, &err), GRAPHC_STATUS_OK);
  graphc_model_destroy(gm);
  graphc_executable_t *c = compile_more(m.ctx, m.wpath, GRAPHC_BACKEND_CUDA);
  ck_assert_msg(!weights_already_there(c), "new weights taken for the old ones:\n%s", graphc_executable_stats(c));
  graphc_executable_destroy(m.ref);
  m.ref = compile_more(m.ctx, m.wpath, GRAPHC_BACKEND_INTERP);
  request_make(&q, &m, &s);
  ck_assert_int_eq(graphc_executable_run_device(c, q.din, 1, q.dout, 1, &err), GRAPHC_STATUS_OK);
  request_check(&q, "rewritten weights", 0);
  request_free(&q);
  graphc_executable_destroy(b);
  graphc_executable_destroy(c);
  model_close(&m);
  cuda_teardown();
}
END_TEST

/* Destroying the executable with enqueued work in flight waits for it. */
START_TEST(destroy_waits_for_enqueued_work) {
  cuda_setup();
  model m;
  model_open(&m, GRAPHC_BACKEND_CUDA);
  CUstream st;
  ck_assert_int_eq(g_cu->StreamCreate(&st, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  request q[4];
  uint64_t s = g_seed + 7;
  for (int r = 0; r < 4; r++) request_make(&q[r], &m, &s);
  graphc_error_t err;
  for (int r = 0; r < 4; r++)
    ck_assert_int_eq(graphc_executable_enqueue(m.exe, q[r].din, 1, q[r].dout, 1, st, &err),
                     GRAPHC_STATUS_OK);
  graphc_executable_destroy(m.exe);
  m.exe = NULL;
  ck_assert_int_eq(g_cu->StreamSynchronize(st), CUDA_SUCCESS);
  for (int r = 0; r < 4; r++) {
    request_check(&q[r], "enqueued before destroy", r);
    request_free(&q[r]);
  }
  g_cu->StreamDestroy(st);
  model_close(&m);
  cuda_teardown();
}
END_TEST

/* Enqueue with pinned host tensors (graphc_host_alloc): copied on the stream. Mixed
 * too: a pinned input with a device output. */
START_TEST(enqueue_pinned_host_tensors) {
  cuda_setup();
  model m;
  model_open(&m, GRAPHC_BACKEND_CUDA);
  CUstream st;
  ck_assert_int_eq(g_cu->StreamCreate(&st, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  enum { R = 4 };
  request q[R];
  graphc_tensor_t pin[R], pout[R];
  uint64_t s = g_seed + 11;
  graphc_error_t err;
  for (int r = 0; r < R; r++) {
    request_make(&q[r], &m, &s);
    pin[r] = q[r].hin[0];
    pout[r] = q[r].ref[0];
    ck_assert_msg(graphc_host_alloc(pin[r].nbytes, &pin[r].data, &err) == GRAPHC_STATUS_OK, "%s",
                  err.message);
    ck_assert_int_eq(graphc_host_alloc(pout[r].nbytes, &pout[r].data, &err), GRAPHC_STATUS_OK);
    memcpy(pin[r].data, q[r].hin[0].data, pin[r].nbytes);
    memset(pout[r].data, 0xff, pout[r].nbytes);
  }
  for (int r = 0; r < R; r++)
    ck_assert_msg(graphc_executable_enqueue(m.exe, &pin[r], 1, r % 2 ? q[r].dout : &pout[r], 1, st,
                                            &err) == GRAPHC_STATUS_OK,
                  "enqueue %d: %s", r, err.message);
  ck_assert_int_eq(g_cu->StreamSynchronize(st), CUDA_SUCCESS);
  for (int r = 0; r < R; r++) {
    if (r % 2 == 0)   /* the pinned output, through the device buffer request_check reads */
      ck_assert_int_eq(g_cu->MemcpyHtoD((CUdeviceptr)(uintptr_t)q[r].dout[0].data, pout[r].data,
                                        pout[r].nbytes), CUDA_SUCCESS);
    request_check(&q[r], "pinned enqueue", r);
    graphc_host_free(pin[r].data);
    graphc_host_free(pout[r].data);
    request_free(&q[r]);
  }
  g_cu->StreamDestroy(st);
  model_close(&m);
  cuda_teardown();
}
END_TEST

/* Expect status `want` and a message holding both `a` and `b`. */
static void expect(graphc_status_t st, const graphc_error_t *err, graphc_status_t want, const char *a,
                   const char *b, const char *what) {
  ck_assert_msg(st == want, "%s: status %s, expected %s: %s", what, graphc_status_string(st),
                graphc_status_string(want), err->message);
  ck_assert_msg(strstr(err->message, a) && strstr(err->message, b),
                "%s: message lacks '%s' or '%s': %s", what, a, b, err->message);
}

START_TEST(bad_pointers_and_streams) {
  cuda_setup();
  model m;
  model_open(&m, GRAPHC_BACKEND_CUDA);
  uint64_t s = g_seed + 3;
  request q;
  request_make(&q, &m, &s);
  graphc_error_t err;
  graphc_tensor_t in = q.din[0], out = q.dout[0];
  /* pageable host memory */
  in.data = q.hin[0].data;
  expect(graphc_executable_run_device(m.exe, &in, 1, &out, 1, &err), &err,
         GRAPHC_STATUS_INVALID_ARGUMENT, "input 0 (%x)", "not memory CUDA knows", "run_device, host input");
  expect(graphc_executable_enqueue(m.exe, &in, 1, &out, 1, NULL, &err), &err,
         GRAPHC_STATUS_INVALID_ARGUMENT, "input 0 (%x)", "pinned host memory", "enqueue, pageable input");
  in = q.din[0];
  out.data = q.hout[0].data;
  expect(graphc_executable_run_device(m.exe, &in, 1, &out, 1, &err), &err,
         GRAPHC_STATUS_INVALID_ARGUMENT, "output 0 (%y)", "not memory CUDA knows", "run_device, host output");
  /* pinned host memory where device memory is required */
  void *pinned = NULL;
  ck_assert_int_eq(g_cu->MemHostAlloc(&pinned, q.hin[0].nbytes, CU_MEMHOSTALLOC_PORTABLE), CUDA_SUCCESS);
  in.data = pinned;
  out = q.dout[0];
  expect(graphc_executable_run_device(m.exe, &in, 1, &out, 1, &err), &err,
         GRAPHC_STATUS_INVALID_ARGUMENT, "input 0 (%x)", "pinned host memory, not device memory",
         "run_device, pinned input");
  g_cu->MemFreeHost(pinned);
  /* too small an allocation: the tensor starts 16 bytes before its end */
  in = q.din[0];
  in.data = (char *)in.data + in.nbytes - 16;
  expect(graphc_executable_run_device(m.exe, &in, 1, &out, 1, &err), &err,
         GRAPHC_STATUS_INVALID_ARGUMENT, "input 0 (%x)", "bytes from there",
         "run_device, short allocation");
  /* a stream of another context */
  CUresult (*ctx_create)(CUcontext *, unsigned, CUdevice) =
      (CUresult(*)(CUcontext *, unsigned, CUdevice))dlsym(g_cu->lib, "cuCtxCreate_v2");
  CUresult (*ctx_destroy)(CUcontext) = (CUresult(*)(CUcontext))dlsym(g_cu->lib, "cuCtxDestroy_v2");
  ck_assert_msg(ctx_create && ctx_destroy, "cuCtxCreate_v2 / cuCtxDestroy_v2 not in the driver");
  CUcontext other = NULL;
  CUstream ost = NULL;
  ck_assert_int_eq(ctx_create(&other, 0, 0), CUDA_SUCCESS);   /* current now */
  ck_assert_int_eq(g_cu->StreamCreate(&ost, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  CUdeviceptr foreign = 0;
  ck_assert_int_eq(g_cu->MemAlloc(&foreign, q.hin[0].nbytes), CUDA_SUCCESS);
  CUcontext c;
  ck_assert_int_eq(g_cu->CtxPopCurrent(&c), CUDA_SUCCESS);
  in = q.din[0];
  expect(graphc_executable_enqueue(m.exe, &in, 1, &out, 1, ost, &err), &err,
         GRAPHC_STATUS_INVALID_ARGUMENT, "another CUDA context", "stream", "enqueue, foreign stream");
  in.data = (void *)(uintptr_t)foreign;
  expect(graphc_executable_run_device(m.exe, &in, 1, &out, 1, &err), &err,
         GRAPHC_STATUS_INVALID_ARGUMENT, "input 0 (%x)", "another CUDA context",
         "run_device, memory of another context");
  ck_assert_int_eq(g_cu->CtxPushCurrent(other), CUDA_SUCCESS);
  g_cu->MemFree(foreign);
  g_cu->StreamDestroy(ost);
  ck_assert_int_eq(ctx_destroy(other), CUDA_SUCCESS);
  /* the executable still works */
  ck_assert_msg(graphc_executable_run_device(m.exe, q.din, 1, q.dout, 1, &err) == GRAPHC_STATUS_OK,
                "%s", err.message);
  request_check(&q, "after bad calls", 0);
  request_free(&q);
  model_close(&m);
  /* the interpreter has no device memory */
  model_open(&m, GRAPHC_BACKEND_INTERP);
  graphc_tensor_t *hin, *hout;
  s = g_seed;
  ck_assert_int_eq(tu_make_io(m.exe, NULL, &s, &hin, &hout), 0);
  expect(graphc_executable_run_device(m.exe, hin, 1, hout, 1, &err), &err, GRAPHC_STATUS_UNSUPPORTED,
         "interp backend", "graphc_executable_run", "run_device on interp");
  expect(graphc_executable_enqueue(m.exe, hin, 1, hout, 1, NULL, &err), &err,
         GRAPHC_STATUS_UNSUPPORTED, "interp backend", "graphc_executable_enqueue", "enqueue on interp");
  tu_free_tensors(hin, 1);
  tu_free_tensors(hout, 1);
  model_close(&m);
  cuda_teardown();
}
END_TEST

int main(void) {
  const char *pretend = getenv("GRAPHC_TEST_PRETEND");
  g_pretend = pretend && strcmp(pretend, "1") == 0;
#ifdef GRAPHC_CUDA_FAKE
  if (g_pretend) setenv("GRAPHC_CUDA_DRIVER", GRAPHC_CUDA_FAKE, 1);
#else
  g_pretend = 0;
#endif
  unsetenv("GRAPHC_CUDA_SYNC");
  if (!tu_probe_device()) {
    printf("SKIPPED: no CUDA device (GRAPHC_TEST_PRETEND=1 runs the checks over a pretend driver)\n");
    return 77;
  }
  g_seed = tu_seed();
  printf("test_async: seed %llu (GRAPHC_TEST_SEED=%llu reproduces)%s\n", (unsigned long long)g_seed,
         (unsigned long long)g_seed, g_pretend ? ", pretend driver: values not compared" : "");
  Suite *s = suite_create("async");
  TCase *tc = tcase_create("async");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, run_device_matches_interp);
  tcase_add_test(tc, enqueue_on_caller_stream);
  tcase_add_test(tc, threads_enqueue_one_executable);
  tcase_add_test(tc, threads_enqueue_contexts);
  tcase_add_test(tc, contexts_destroyed_with_executable);
  tcase_add_test(tc, destroy_waits_for_enqueued_work);
  tcase_add_test(tc, enqueue_pinned_host_tensors);
  tcase_add_test(tc, bad_pointers_and_streams);
  tcase_add_test(tc, weights_shared_between_executables);
  suite_add_tcase(s, tc);
  return tu_run_suite(s);
}
