/* server_contexts.c - a server-style program: one executable, one execution context
 * per worker thread, each thread serving requests (host tensors in, host tensors
 * out) on its own context, so requests from different threads run at once.
 *
 *   server_contexts [THREADS] [REQUESTS_PER_THREAD] [cuda|cpu]   (defaults 8, 2000, cuda)
 *
 * It serves the same total number of requests with 1 thread and with THREADS
 * threads and prints the throughput of each; every response is checked against
 * the interpreter's answer for its request. Model: a 784-256-10 MLP at batch 1.
 * Build: CMakeLists.txt (target server_contexts; needs only libgraphc).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <graphc/graphc.h>

static const char *k_model =
    "version 1;\n"
    "graph @mlp(%x: f32[1, 784]) -> (f32[1, 10]) {\n"
    "  param %w1: f32[784, 256] = \"fc1.weight\";\n"
    "  param %b1: f32[256] = \"fc1.bias\";\n"
    "  param %w2: f32[256, 10] = \"fc2.weight\";\n"
    "  param %b2: f32[10] = \"fc2.bias\";\n"
    "  %h = matmul(%x, %w1);\n"
    "  %hb = add(%h, %b1);\n"
    "  %r = relu(%hb);\n"
    "  %o = matmul(%r, %w2);\n"
    "  %y = add(%o, %b2);\n"
    "  return %y;\n"
    "}\n";

enum { N_REQ_KINDS = 16 };   /* distinct requests, answers precomputed */

typedef struct server {
  graphc_executable_t *exe;
  int pinned;                    /* request buffers in pinned host memory */
  float x[N_REQ_KINDS][784], want[N_REQ_KINDS][10];
} server;

typedef struct worker {
  server *s;
  int requests, id, wrong;
  char error[256];
} worker;

/* A dense f32 tensor [1, n]. */
static graphc_tensor_t tensor(float *data, int64_t n) {
  graphc_tensor_t t = {GRAPHC_DTYPE_F32, 2, {1, n}, data, (size_t)n * sizeof(float)};
  return t;
}

/* One worker thread: its own context, `requests` requests served one after another. */
static void *serve(void *arg) {
  worker *w = arg;
  graphc_exec_context_t *ec = NULL;
  graphc_error_t err;
  if (graphc_exec_context_create(w->s->exe, &ec, &err)) {
    snprintf(w->error, sizeof w->error, "%.250s", err.message);
    return NULL;
  }
  /* request and response buffers of this thread: pinned host memory on the GPU (the
   * copies then go straight to and from the device, no staging), else plain memory */
  float *xin = NULL, *y = NULL;
  if (w->s->pinned) {
    if (graphc_host_alloc(784 * sizeof *xin, (void **)&xin, &err) ||
        graphc_host_alloc(10 * sizeof *y, (void **)&y, &err)) {
      snprintf(w->error, sizeof w->error, "%.250s", err.message);
      graphc_host_free(xin);
      graphc_exec_context_destroy(ec);
      return NULL;
    }
  } else {
    xin = malloc(784 * sizeof *xin);
    y = malloc(10 * sizeof *y);
  }
  for (int r = 0; r < w->requests && xin && y; r++) {
    int k = (r * 7 + w->id) % N_REQ_KINDS;
    memcpy(xin, w->s->x[k], sizeof w->s->x[k]);   /* the request arrives */
    graphc_tensor_t in = tensor(xin, 784), out = tensor(y, 10);
    if (graphc_exec_context_run(ec, &in, 1, &out, 1, &err)) {
      snprintf(w->error, sizeof w->error, "%.250s", err.message);
      break;
    }
    for (int i = 0; i < 10; i++)
      if (!(fabsf(y[i] - w->s->want[k][i]) <= 1e-3f * (1 + fabsf(w->s->want[k][i])))) {
        w->wrong++;
        break;
      }
  }
  if (w->s->pinned) {
    graphc_host_free(xin);
    graphc_host_free(y);
  } else {
    free(xin);
    free(y);
  }
  graphc_exec_context_destroy(ec);
  return NULL;
}

/* Serve `total` requests on `threads` threads; requests per second, -1 on an error. */
static double serve_all(server *s, int threads, int total) {
  pthread_t th[64];
  worker w[64];
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (int t = 0; t < threads; t++) {
    w[t] = (worker){.s = s, .requests = total / threads, .id = t};
    pthread_create(&th[t], NULL, serve, &w[t]);
  }
  int bad = 0;
  for (int t = 0; t < threads; t++) {
    pthread_join(th[t], NULL);
    if (w[t].error[0] || w[t].wrong) {
      fprintf(stderr, "server_contexts: thread %d: %s (%d wrong responses)\n", t, w[t].error, w[t].wrong);
      bad = 1;
    }
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double sec = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  return bad ? -1 : (double)(total / threads * threads) / sec;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 8, per = argc > 2 ? atoi(argv[2]) : 2000;
  const char *backend = argc > 3 ? argv[3] : "cuda";
  if (threads < 1 || threads > 64 || per < 1) {
    fprintf(stderr, "usage: server_contexts [THREADS (1..64)] [REQUESTS_PER_THREAD] [cuda|cpu]\n");
    return 2;
  }
  static server s;
  graphc_context_t *ctx = NULL;
  graphc_model_t *m = NULL;
  graphc_executable_t *ref = NULL;
  graphc_error_t err;
  char wpath[] = "/tmp/server_contexts_XXXXXX";
  int fd = mkstemp(wpath);
  if (fd < 0) return 1;
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = strcmp(backend, "cpu") == 0 ? GRAPHC_BACKEND_CPU : GRAPHC_BACKEND_CUDA;
  graphc_compile_options_t oi = o;
  oi.backend = GRAPHC_BACKEND_INTERP;
  if (graphc_context_create(&ctx) ||
      graphc_model_load_string(ctx, "mlp.graph", k_model, strlen(k_model), &m, &err) ||
      graphc_model_write_random_weights(m, wpath, 1, &err) || graphc_model_set_weights(m, wpath, &err) ||
      graphc_compile(m, &o, &s.exe, &err) || graphc_compile(m, &oi, &ref, &err)) {
    fprintf(stderr, "server_contexts: %s\n", err.message);
    remove(wpath);
    return 1;
  }
  remove(wpath);
  srand(7);
  for (int k = 0; k < N_REQ_KINDS; k++) {
    for (int i = 0; i < 784; i++) s.x[k][i] = (float)rand() / RAND_MAX - 0.5f;
    graphc_tensor_t in = tensor(s.x[k], 784), out = tensor(s.want[k], 10);
    if (graphc_executable_run(ref, &in, 1, &out, 1, &err)) {
      fprintf(stderr, "server_contexts: reference: %s\n", err.message);
      return 1;
    }
  }
  s.pinned = o.backend == GRAPHC_BACKEND_CUDA;
  int total = threads * per;
  serve_all(&s, 1, threads > 4 ? 4 * 50 : 50);   /* warm-up: graph capture, caches */
  double one = serve_all(&s, 1, total);
  double many = serve_all(&s, threads, total);
  int rc = one > 0 && many > 0 ? 0 : 1;
  if (!rc)
    printf("server_contexts (%s): %d requests: 1 thread %.0f req/s, %d threads with a context each "
           "%.0f req/s (%.2fx)\n",
           graphc_backend_name(graphc_executable_backend(s.exe)), total, one, threads, many, many / one);
  graphc_executable_destroy(s.exe);
  graphc_executable_destroy(ref);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
  return rc;
}
