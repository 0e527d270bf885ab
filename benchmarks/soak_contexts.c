/* soak_contexts.c - a soak of execution contexts: THREADS threads, each with its own
 * execution context and stream, enqueue TOTAL/THREADS runs of one executable (device
 * tensors, synchronizing every 64), while the main thread samples resident host memory
 * (/proc/self/statm) and free device memory (cuMemGetInfo). Prints the samples' spread
 * after the first 10% (warm-up) and checks the last outputs against a host run.
 *
 *   soak_contexts MODEL.graph BIND_NAME BIND_VALUE [TOTAL (1000000)] [THREADS (4)]
 * Build (GPU machine): gcc -O2 -Iinclude -I/usr/local/cuda/include benchmarks/soak_contexts.c \
 *   -Lbuild-gpu -lgraphc -L/usr/local/cuda/lib64 -lcuda -lpthread -lm -o soak_contexts
 * Exit 0 when every call succeeded, memory stayed within 1% and the outputs match.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>
#include <graphc/graphc.h>

typedef struct job {
  graphc_executable_t *exe;
  CUcontext pctx;
  long runs;
  graphc_tensor_t *in, *out;      /* device tensors, this thread's */
  size_t n_in, n_out;
  volatile long done;
  int bad;
  char msg[256];
} job;

static void *worker(void *arg) {
  job *j = arg;
  graphc_exec_context_t *ec = NULL;
  graphc_error_t err;
  CUstream s = NULL;
  if (cuCtxSetCurrent(j->pctx) != CUDA_SUCCESS || cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
      graphc_exec_context_create(j->exe, &ec, &err) != GRAPHC_STATUS_OK) {
    j->bad = 1;
    snprintf(j->msg, sizeof j->msg, "setup failed");
    return NULL;
  }
  for (long r = 0; r < j->runs && !j->bad; r++) {
    if (graphc_exec_context_enqueue(ec, j->in, j->n_in, j->out, j->n_out, s, &err) != GRAPHC_STATUS_OK) {
      j->bad = 1;
      snprintf(j->msg, sizeof j->msg, "enqueue %ld: %.200s", r, err.message);
    }
    if (r % 64 == 63 && cuStreamSynchronize(s) != CUDA_SUCCESS) j->bad = 1;
    j->done = r + 1;
  }
  cuStreamSynchronize(s);
  graphc_exec_context_destroy(ec);
  cuStreamDestroy(s);
  return NULL;
}

/* Resident set size in bytes. */
static double rss_bytes(void) {
  long pages = 0, res = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f) return 0;
  if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0;
  fclose(f);
  return (double)res * (double)sysconf(_SC_PAGESIZE);
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: soak_contexts MODEL.graph BIND_NAME BIND_VALUE [TOTAL] [THREADS]\n");
    return 2;
  }
  long total = argc > 4 ? atol(argv[4]) : 1000000;
  int threads = argc > 5 ? atoi(argv[5]) : 4;
  if (threads < 1 || threads > 64 || total < threads) return 2;
  graphc_context_t *ctx = NULL;
  graphc_model_t *m = NULL;
  graphc_executable_t *exe = NULL;
  graphc_error_t err;
  char w[] = "/tmp/soak_weights_XXXXXX";
  int fd = mkstemp(w);
  if (fd < 0) return 1;
  close(fd);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_CUDA;
  if (graphc_context_create(&ctx) || graphc_model_load_file(ctx, argv[1], &m, &err) ||
      graphc_model_bind(m, argv[2], atoll(argv[3]), &err) ||
      graphc_model_write_random_weights(m, w, 1, &err) || graphc_model_set_weights(m, w, &err) ||
      graphc_compile(m, &o, &exe, &err)) {
    fprintf(stderr, "soak_contexts: %s\n", err.message);
    remove(w);
    return 1;
  }
  remove(w);
  CUcontext pctx;
  cuInit(0);
  cuDevicePrimaryCtxRetain(&pctx, 0);
  cuCtxSetCurrent(pctx);
  size_t n_in = graphc_executable_num_inputs(exe), n_out = graphc_executable_num_outputs(exe);
  job *jobs = calloc((size_t)threads, sizeof *jobs);
  graphc_tensor_t *hin = calloc(n_in, sizeof *hin), *hout = calloc(n_out, sizeof *hout);
  for (size_t i = 0; i < n_in; i++) {
    graphc_tensor_info_t info;
    graphc_executable_input_info(exe, i, &info);
    hin[i] = (graphc_tensor_t){info.dtype, info.rank, {0}, calloc(1, info.nbytes), info.nbytes};
    memcpy(hin[i].dims, info.dims, sizeof info.dims);
    for (size_t k = 0; k < info.nbytes; k++) ((unsigned char *)hin[i].data)[k] = (unsigned char)(k * 7 % 61);
    if (info.dtype == GRAPHC_DTYPE_F32)  /* small floats */
      for (size_t k = 0; k < info.nbytes / 4; k++) ((float *)hin[i].data)[k] = (float)(k % 17) / 17.0f - 0.5f;
  }
  for (size_t i = 0; i < n_out; i++) {
    graphc_tensor_info_t info;
    graphc_executable_output_info(exe, i, &info);
    hout[i] = (graphc_tensor_t){info.dtype, info.rank, {0}, calloc(1, info.nbytes), info.nbytes};
    memcpy(hout[i].dims, info.dims, sizeof info.dims);
  }
  if (graphc_executable_run(exe, hin, n_in, hout, n_out, &err)) {
    fprintf(stderr, "soak_contexts: host run: %s\n", err.message);
    return 1;
  }
  for (int t = 0; t < threads; t++) {
    job *j = &jobs[t];
    *j = (job){.exe = exe, .pctx = pctx, .runs = total / threads, .n_in = n_in, .n_out = n_out};
    j->in = calloc(n_in, sizeof *j->in);
    j->out = calloc(n_out, sizeof *j->out);
    for (size_t i = 0; i < n_in; i++) {
      CUdeviceptr p;
      cuMemAlloc(&p, hin[i].nbytes);
      cuMemcpyHtoD(p, hin[i].data, hin[i].nbytes);
      j->in[i] = hin[i];
      j->in[i].data = (void *)(uintptr_t)p;
    }
    for (size_t i = 0; i < n_out; i++) {
      CUdeviceptr p;
      cuMemAlloc(&p, hout[i].nbytes);
      j->out[i] = hout[i];
      j->out[i].data = (void *)(uintptr_t)p;
    }
  }
  pthread_t *th = calloc((size_t)threads, sizeof *th);
  for (int t = 0; t < threads; t++) pthread_create(&th[t], NULL, worker, &jobs[t]);
  enum { MAXS = 4096 };
  static double rss[MAXS], dev[MAXS];
  int ns = 0;
  long per = total / threads;
  for (;;) {
    long done = 0;
    for (int t = 0; t < threads; t++) done += jobs[t].done;
    size_t fr = 0, tot = 0;
    cuMemGetInfo(&fr, &tot);
    if (ns < MAXS && done > per * threads / 10) {  /* after the warm-up tenth */
      rss[ns] = rss_bytes();
      dev[ns] = (double)(tot - fr);
      ns++;
    }
    if (done >= per * threads) break;
    int any_bad = 0;
    for (int t = 0; t < threads; t++) any_bad |= jobs[t].bad;
    if (any_bad) break;
    usleep(20000);
  }
  for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
  double rmin = 1e300, rmax = 0, dmin = 1e300, dmax = 0;
  for (int i = 0; i < ns; i++) {
    rmin = fmin(rmin, rss[i]), rmax = fmax(rmax, rss[i]);
    dmin = fmin(dmin, dev[i]), dmax = fmax(dmax, dev[i]);
  }
  int bad = 0;
  for (int t = 0; t < threads; t++)
    if (jobs[t].bad) {
      fprintf(stderr, "soak_contexts: thread %d: %s\n", t, jobs[t].msg);
      bad = 1;
    }
  /* the last outputs of each thread against the host run */
  double worst = 0;
  for (int t = 0; t < threads && !bad; t++)
    for (size_t i = 0; i < n_out; i++) {
      void *h = malloc(hout[i].nbytes);
      cuMemcpyDtoH(h, (CUdeviceptr)(uintptr_t)jobs[t].out[i].data, hout[i].nbytes);
      if (hout[i].dtype == GRAPHC_DTYPE_F32)
        for (size_t k = 0; k < hout[i].nbytes / 4; k++)
          worst = fmax(worst, fabs(((float *)h)[k] - ((float *)hout[i].data)[k]));
      else if (memcmp(h, hout[i].data, hout[i].nbytes)) worst = INFINITY;
      free(h);
    }
  double rs = rmin > 0 ? (rmax - rmin) / rmin : 0, ds = dmin > 0 ? (dmax - dmin) / dmin : 0;
  printf("soak_contexts: %ld enqueues on %d threads (a context each): %d samples; resident host memory "
         "%.1f..%.1f MiB (spread %.3f%%), device memory in use %.1f..%.1f MiB (spread %.3f%%); last outputs "
         "vs host run: max abs diff %.3g\n",
         per * threads, threads, ns, rmin / 1048576, rmax / 1048576, 100 * rs, dmin / 1048576, dmax / 1048576,
         100 * ds, worst);
  graphc_executable_destroy(exe);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
  return bad || rs > 0.01 || ds > 0.01 || !(worst <= 1e-3) ? 1 : 0;
}
