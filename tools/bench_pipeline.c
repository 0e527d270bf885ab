/* bench_pipeline.c - `graphc bench --pipeline N`: throughput with inputs and
 * outputs in host memory, serial against pipelined.
 *
 *   serial     graphc_executable_run, one request at a time: copy in, compute, copy
 *              out, wait (pageable host buffers, as a naive caller has them)
 *   pipelined  N execution contexts, each on its own stream, requests dealt round
 *              robin; request i+1's host-to-device copy, request i's kernels and
 *              request i-1's device-to-host copy run at once (pinned host buffers,
 *              graphc_host_alloc; the caller waits for request i-N before reusing
 *              its slot)
 *   bound      max(H2D copy, compute, D2H copy) per request: copies in the two
 *              directions use separate copy engines, so the slowest of the three
 *              stages sets the pace (H2D and D2H measured here with the same pinned
 *              buffers, compute as the queued CUDA graph replay time)
 * Wall-clock time around `runs` requests (after N warm-up requests), for both modes.
 * Also the host cost of one enqueue with device tensors (the same buffers each time:
 * the cached CUDA graph is replayed): the CPU clock around graphc_exec_context_enqueue,
 * the stream drained every 8 calls so that none waits for queue space.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver/cuda_backend.h"
#include "runtime/cuda_driver.h"
#include "tools/cli.h"

/* Monotonic seconds. */
static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct slot {
  graphc_exec_context_t *ec;
  CUstream stream;
  graphc_tensor_t *in, *out;   /* pinned copies of the request's tensors */
} slot;

/* Pinned copies of n tensors t (NULL on failure). */
static graphc_tensor_t *pinned_copy(const graphc_tensor_t *t, size_t n, graphc_error_t *err) {
  graphc_tensor_t *p = calloc(n + 1, sizeof *p);
  if (!p) return NULL;
  for (size_t i = 0; i < n; i++) {
    p[i] = t[i];
    p[i].data = NULL;
    if (graphc_host_alloc(t[i].nbytes ? t[i].nbytes : 1, &p[i].data, err) != GRAPHC_STATUS_OK) {
      for (size_t j = 0; j < i; j++) graphc_host_free(p[j].data);
      free(p);
      return NULL;
    }
    memcpy(p[i].data, t[i].data, t[i].nbytes);
  }
  return p;
}

static void pinned_free(graphc_tensor_t *p, size_t n) {
  for (size_t i = 0; p && i < n; i++) graphc_host_free(p[i].data);
  free(p);
}

/* Milliseconds per copy of `bytes` in direction h2d (else d2h), pinned, median-free mean of 20. */
static double copy_ms(const gc_cu_driver *cu, CUstream s, void *host, size_t bytes, int h2d) {
  if (bytes == 0) return 0;
  CUdeviceptr dev = 0;
  CUevent e0 = NULL, e1 = NULL;
  double ms = -1;
  if (cu->MemAlloc(&dev, bytes) != CUDA_SUCCESS) return -1;
  if (cu->EventCreate(&e0, CU_EVENT_DEFAULT) == CUDA_SUCCESS &&
      cu->EventCreate(&e1, CU_EVENT_DEFAULT) == CUDA_SUCCESS) {
    int bad = 0;
    for (int r = 0; r < 21 && !bad; r++) {  /* the first is a warm-up */
      if (r == 1) bad |= cu->EventRecord(e0, s) != CUDA_SUCCESS;
      bad |= (h2d ? cu->MemcpyHtoDAsync(dev, host, bytes, s) : cu->MemcpyDtoHAsync(host, dev, bytes, s)) !=
             CUDA_SUCCESS;
    }
    float t = 0;
    if (!bad && cu->EventRecord(e1, s) == CUDA_SUCCESS && cu->EventSynchronize(e1) == CUDA_SUCCESS &&
        cu->EventElapsedTime(&t, e0, e1) == CUDA_SUCCESS)
      ms = t / 20.0;
  }
  if (e0) cu->EventDestroy(e0);
  if (e1) cu->EventDestroy(e1);
  cu->MemFree(dev);
  return ms;
}

int cli_bench_pipeline(graphc_executable_t *exe, const graphc_tensor_t *in, size_t n_in,
                       graphc_tensor_t *out, size_t n_out, int depth, int runs, int warmup) {
  gc_rt_settings rs;
  gc_rt_settings_read(&rs);
  const gc_cu_driver *cu = gc_cu_driver_get(&rs, NULL);
  if (!cu) return -1;
  CUcontext pctx = NULL, dummy;
  if (cu->DevicePrimaryCtxRetain(&pctx, 0) != CUDA_SUCCESS) return -1;
  cu->CtxPushCurrent(pctx);
  graphc_error_t err;
  memset(&err, 0, sizeof err);
  int rc = -1;
  slot *sl = calloc((size_t)depth, sizeof *sl);
  size_t in_bytes = 0, out_bytes = 0;
  for (size_t i = 0; i < n_in; i++) in_bytes += in[i].nbytes;
  for (size_t i = 0; i < n_out; i++) out_bytes += out[i].nbytes;
  if (!sl) goto out;
  for (int k = 0; k < depth; k++) {
    if (graphc_exec_context_create(exe, &sl[k].ec, &err) != GRAPHC_STATUS_OK ||
        cu->StreamCreate(&sl[k].stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
        !(sl[k].in = pinned_copy(in, n_in, &err)) || !(sl[k].out = pinned_copy(out, n_out, &err))) {
      fprintf(stderr, "graphc bench --pipeline: context %d: %s\n", k, err.message[0] ? err.message : "failed");
      goto out;
    }
  }
  /* serial: the synchronous host-tensor run */
  for (int r = 0; r < warmup; r++)
    if (graphc_executable_run(exe, in, n_in, out, n_out, &err) != GRAPHC_STATUS_OK) goto fail;
  double t0 = now_s();
  for (int r = 0; r < runs; r++)
    if (graphc_executable_run(exe, in, n_in, out, n_out, &err) != GRAPHC_STATUS_OK) goto fail;
  double serial = (now_s() - t0) / runs * 1e3;
  /* pipelined: round robin over the contexts, waiting for a slot's previous request */
  double piped = 0;
  for (int pass = 0; pass < 2; pass++) {  /* pass 0 warms up every context (graph capture) */
    int n = pass ? runs : (warmup > depth ? warmup : depth);
    t0 = now_s();
    for (int r = 0; r < n; r++) {
      slot *s = &sl[r % depth];
      if (r >= depth && cu->StreamSynchronize(s->stream) != CUDA_SUCCESS) goto fail;
      if (graphc_exec_context_enqueue(s->ec, s->in, n_in, s->out, n_out, s->stream, &err) != GRAPHC_STATUS_OK)
        goto fail;
    }
    for (int k = 0; k < depth; k++)
      if (cu->StreamSynchronize(sl[k].stream) != CUDA_SUCCESS) goto fail;
    piped = (now_s() - t0) / n * 1e3;
  }
  /* the host cost of an enqueue: device tensors, the same each time */
  double enq_us = -1;
  {
    graphc_tensor_t *din = calloc(n_in + 1, sizeof *din), *dout = calloc(n_out + 1, sizeof *dout);
    float *us = calloc((size_t)runs + 1, sizeof *us);
    int ok = din && dout && us;
    for (size_t i = 0; ok && i < n_in; i++) {
      CUdeviceptr p = 0;
      ok = cu->MemAlloc(&p, in[i].nbytes ? in[i].nbytes : 1) == CUDA_SUCCESS &&
           cu->MemcpyHtoD(p, in[i].data, in[i].nbytes) == CUDA_SUCCESS;
      din[i] = in[i];
      din[i].data = (void *)(uintptr_t)p;
    }
    for (size_t i = 0; ok && i < n_out; i++) {
      CUdeviceptr p = 0;
      ok = cu->MemAlloc(&p, out[i].nbytes ? out[i].nbytes : 1) == CUDA_SUCCESS;
      dout[i] = out[i];
      dout[i].data = (void *)(uintptr_t)p;
    }
    if (ok && graphc_exec_context_enqueue(sl[0].ec, din, n_in, dout, n_out, sl[0].stream, &err) == GRAPHC_STATUS_OK &&
        cu->StreamSynchronize(sl[0].stream) == CUDA_SUCCESS) {
      for (int r = 0; r < runs && ok; r++) {
        double a = now_s();
        ok = graphc_exec_context_enqueue(sl[0].ec, din, n_in, dout, n_out, sl[0].stream, &err) == GRAPHC_STATUS_OK;
        us[r] = (float)((now_s() - a) * 1e6);
        if (r % 8 == 7) cu->StreamSynchronize(sl[0].stream);
      }
      cu->StreamSynchronize(sl[0].stream);
      if (ok) {
        for (int a = 1; a < runs; a++)  /* insertion sort: runs is small */
          for (int b = a; b > 0 && us[b - 1] > us[b]; b--) {
            float t = us[b];
            us[b] = us[b - 1];
            us[b - 1] = t;
          }
        enq_us = us[runs / 2];
      }
    }
    for (size_t i = 0; din && i < n_in; i++) cu->MemFree((CUdeviceptr)(uintptr_t)din[i].data);
    for (size_t i = 0; dout && i < n_out; i++) cu->MemFree((CUdeviceptr)(uintptr_t)dout[i].data);
    free(din);
    free(dout);
    free(us);
  }
  /* the bound */
  float *ms = calloc((size_t)runs + 1, sizeof *ms);
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  double compute = -1;
  if (ms && gc_cuda_time_queued(exe, warmup, runs, ms, &d) == GRAPHC_STATUS_OK) {
    double sum = 0;
    for (int r = 0; r < runs; r++) sum += ms[r];
    compute = sum / runs;
  }
  gc_diags_free(&d);
  free(ms);
  /* one buffer as large as all inputs (outputs) together, so one copy a direction */
  void *h = NULL;
  size_t big = in_bytes > out_bytes ? in_bytes : out_bytes;
  double h2d = -1, d2h = -1;
  if (graphc_host_alloc(big ? big : 1, &h, &err) == GRAPHC_STATUS_OK) {
    memset(h, 0, big);
    h2d = copy_ms(cu, sl[0].stream, h, in_bytes, 1);
    d2h = copy_ms(cu, sl[0].stream, h, out_bytes, 0);
    graphc_host_free(h);
  }
  double bound = compute;
  if (h2d > bound) bound = h2d;
  if (d2h > bound) bound = d2h;
  printf("\npipelined with host inputs and outputs (%d runs, wall clock per request):\n", runs);
  printf("  serial     %.4f ms  (graphc_executable_run: copy in, compute, copy out, wait)\n", serial);
  printf("  pipelined  %.4f ms  (%d contexts, a stream each, pinned buffers)  %.2fx serial\n", piped, depth,
         piped > 0 ? serial / piped : 0);
  printf("  stages     H2D %.4f ms (%.1f MB)  compute %.4f ms  D2H %.4f ms (%.1f MB)\n", h2d, in_bytes / 1e6,
         compute, d2h, out_bytes / 1e6);
  printf("  bound      %.4f ms  (slowest stage)  pipelined reaches %.1f%% of it\n", bound,
         piped > 0 ? 100.0 * bound / piped : 0);
  printf("  enqueue    %.2f us host time per graphc_exec_context_enqueue (device tensors, cached CUDA graph; "
         "median of %d)\n", enq_us, runs);
  rc = 0;
  goto out;
fail:
  fprintf(stderr, "graphc bench --pipeline: %s\n", err.message);
out:
  for (int k = 0; sl && k < depth; k++) {
    if (sl[k].stream) cu->StreamSynchronize(sl[k].stream);
    graphc_exec_context_destroy(sl[k].ec);
    if (sl[k].stream) cu->StreamDestroy(sl[k].stream);
    pinned_free(sl[k].in, n_in);
    pinned_free(sl[k].out, n_out);
  }
  free(sl);
  cu->CtxPopCurrent(&dummy);
  cu->DevicePrimaryCtxRelease(0);
  return rc;
}
