/* cuda_exec.c - the load-and-run half of the CUDA backend (see cuda_exec.h).
 *
 * Built into libgraphc (behind the JIT backend, runtime/cuda_backend.c) and
 * into libgraphc_rt (behind bundles, runtime/rt_api.c) from this one source.
 * It sees a gc_launch_plan, never Kernel IR, and calls only the CUDA driver.
 *
 * CUDA graph: only the kernel launches are captured. The copies stay outside
 * because their host pointers change from call to call (and pageable host
 * memory cannot be captured); the launches always read and write the same
 * device buffers, so one capture serves every run. run_device binds other
 * pointers: the graph is re-captured and the instantiated graph updated in
 * place (cuGraphExecUpdate) whenever they differ from the last ones.
 *
 * TMA tensor maps: the plan's maps live in one device table of 128-byte
 * CUtensorMaps, and a kernel's TMAP argument is its map's address in the table,
 * which never changes, so the captured graph stays valid. A map embeds its
 * buffer's address: it is encoded into a host copy of the table whenever that
 * address changes (at load; when run_device binds other pointers), and the copy
 * is uploaded on the stream before the next launches, after earlier runs'
 * kernels have read the old maps.
 */
#include "runtime/cuda_exec.h"

#include <inttypes.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "runtime/cuda_driver.h"

#define CU_ALIGN 256
#define TMAP_BYTES 128   /* one encoded CUtensorMap in the table (its size and alignment) */

_Static_assert(sizeof(CUtensorMap) == TMAP_BYTES, "CUtensorMap is not 128 bytes");

typedef struct cu_kernel {
  const gc_lp_kernel *k;
  CUfunction fn;
  unsigned grid, block;
  uint64_t *args;          /* one 8-byte slot per param (CUdeviceptr or int64) */
  void **argp;             /* argp[i] = &args[i], what cuLaunchKernel reads */
} cu_kernel;

struct gc_cu_exec {
  const gc_cu_driver *cu;
  CUdevice dev;
  CUcontext ctx;           /* the device's primary context, retained */
  int ctx_retained;
  gc_cu_props props;
  const gc_launch_plan *plan;
  CUmodule mod;
  int from_ptx, image_sm;
  CUstream stream;
  CUdeviceptr arena, consts, io;   /* the three allocations */
  size_t *const_off;               /* offset of consts[i] in `consts` */
  CUdeviceptr *in_buf, *out_buf;   /* the executor's own I/O buffers (inside io) */
  CUdeviceptr *bound_in, *bound_out; /* what the kernel arguments point at now */
  CUdeviceptr *graph_in, *graph_out; /* what the instantiated graph was captured with */
  cu_kernel *kernels;              /* per plan kernel */
  CUdeviceptr tmaps;               /* the tensor map table: n_tmaps x TMAP_BYTES */
  CUtensorMap *tmap_host;          /* its host copy (TMAP_BYTES aligned) */
  CUdeviceptr *tmap_at;            /* per map: the address it was encoded with */
  unsigned char *tmap_valid;       /* per map: tmap_host holds a good encoding at tmap_at */
  int tmaps_dirty;                 /* tmap_host differs from the device table */
  CUgraphExec gexec;
  int eager, sync_each;
  CUevent done;                    /* recorded after each enqueue (made at the first) */
  int pending;                     /* an enqueue's work may still be in flight: wait on `done` */
  int prologue_due;                /* the plan's prologue has yet to run on the current consts */
  /* gc_cu_exec_open_async: the primary context is retained on this thread */
  pthread_t retainer;
  int retaining;                   /* the thread is to be joined */
  CUresult retain_rc;
  double retain_ms, retain_wait_ms;
  /* Runs from several threads take turns: the I/O buffers, the bound arguments, the
   * tensor maps and the CUDA graph are the executor's, one set for one run at a time. */
  pthread_mutex_t run_mu;
  int run_mu_ok;
};

/* Monotonic milliseconds, for stage timings. */
static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static size_t align_up(size_t n) { return (n + CU_ALIGN - 1) & ~(size_t)(CU_ALIGN - 1); }

/* Human-readable byte count for messages and stats. */
static void fmt_bytes(char *buf, size_t n, double bytes) {
  if (bytes >= 1024.0 * 1024 * 1024)
    snprintf(buf, n, "%.2f GiB", bytes / (1024.0 * 1024 * 1024));
  else if (bytes >= 1024.0 * 1024)
    snprintf(buf, n, "%.2f MiB", bytes / (1024.0 * 1024));
  else if (bytes >= 1024.0)
    snprintf(buf, n, "%.2f KiB", bytes / 1024.0);
  else
    snprintf(buf, n, "%.0f B", bytes);
}

/* Report out of memory (host) and return -1. */
static int oom(gc_diags *d) {
  gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
  return -1;
}

/* Make the executor's context current; 0 on success. */
static int ctx_push(gc_cu_exec *x, gc_diags *d) { return GC_CU(x->cu, d, CtxPushCurrent, x->ctx); }

/* Restore the caller's context. */
static void ctx_pop(gc_cu_exec *x) {
  CUcontext dummy;
  x->cu->CtxPopCurrent(&dummy);
}

/* ---- picking an image --------------------------------------------------------------- */
int gc_cu_image_order(const gc_cu_image *imgs, int n, int device_sm, gc_cu_try *out) {
  int k = 0;
  /* Cubins: exact match first, then same major, lower minor, newest first. */
  for (int pass = 0; pass < 2; pass++) {
    for (;;) {
      int best = -1;
      for (int i = 0; i < n; i++) {
        if (!imgs[i].cubin || !imgs[i].cubin_len) continue;
        int s = imgs[i].sm;
        int ok = pass == 0 ? s == device_sm : s / 10 == device_sm / 10 && s < device_sm;
        for (int j = 0; j < k && ok; j++) ok = !(out[j].image == i && !out[j].ptx);
        if (ok && (best < 0 || s > imgs[best].sm)) best = i;
      }
      if (best < 0) break;
      out[k++] = (gc_cu_try){best, 0};
    }
  }
  /* PTX for any sm up to the device's, newest first. */
  for (;;) {
    int best = -1;
    for (int i = 0; i < n; i++) {
      if (!imgs[i].ptx || imgs[i].sm > device_sm) continue;
      int ok = 1;
      for (int j = 0; j < k && ok; j++) ok = !(out[j].image == i && out[j].ptx);
      if (ok && (best < 0 || imgs[i].sm > imgs[best].sm)) best = i;
    }
    if (best < 0) break;
    out[k++] = (gc_cu_try){best, 1};
  }
  return k;
}

void gc_cu_image_list(const gc_cu_image *imgs, int n, char *buf, size_t len) {
  gc_sbuf b = {0};
  for (int ptx = 0; ptx < 2; ptx++) {
    int first = 1;
    for (int i = 0; i < n; i++) {
      if (ptx ? !imgs[i].ptx : !(imgs[i].cubin && imgs[i].cubin_len)) continue;
      gc_sbuf_printf(&b, "%s%ssm_%d", first ? (b.len ? "; " : "") : ", ",
                     first ? (ptx ? "PTX " : "cubin ") : "", imgs[i].sm);
      first = 0;
    }
  }
  snprintf(buf, len, "%s", b.len ? b.data : "nothing");
  gc_sbuf_free(&b);
}

/* ---- device ------------------------------------------------------------------------- */
/* Read the device properties the launch geometry and the emitters need. */
static int query_device(gc_cu_exec *x, gc_diags *d) {
  const gc_cu_driver *cu = x->cu;
  gc_cu_props *p = &x->props;
  int major = 0, minor = 0;
  struct { CUdevice_attribute a; int *out; } attrs[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &major},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &minor},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &p->num_sms},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &p->max_threads},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, &p->shared_bytes},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, &p->shared_optin},
      {CU_DEVICE_ATTRIBUTE_WARP_SIZE, &p->warp},
  };
  for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
    if (GC_CU(cu, d, DeviceGetAttribute, attrs[i].out, attrs[i].a, x->dev)) return -1;
  p->sm = major * 10 + minor;
  if (GC_CU(cu, d, DeviceGetName, p->name, (int)sizeof p->name, x->dev)) return -1;
  if (GC_CU(cu, d, DeviceTotalMem, &p->total_mem, x->dev)) return -1;
  if (p->num_sms < 1) p->num_sms = 1;
  p->driver_version = cu->version;
  return 0;
}

/* Retain device x->dev's primary context (on the retainer thread, or inline). */
static void *retain_main(void *arg) {
  gc_cu_exec *x = arg;
  double t0 = now_ms();
  x->retain_rc = x->cu->DevicePrimaryCtxRetain(&x->ctx, x->dev);
  x->ctx_retained = x->retain_rc == CUDA_SUCCESS;
  x->retain_ms = now_ms() - t0;
  return NULL;
}

/* Join the retainer thread if there is one. */
static void retain_join(gc_cu_exec *x) {
  if (!x->retaining) return;
  double t0 = now_ms();
  pthread_join(x->retainer, NULL);
  x->retain_wait_ms = now_ms() - t0;
  x->retaining = 0;
}

/* The device and its properties (no context needed), then the context: on a
 * new thread when async (inline when no thread can be made). */
static gc_cu_exec *exec_open(int async, const gc_rt_settings *s, gc_diags *d) {
  const gc_cu_driver *cu = gc_cu_driver_get(s, d);
  if (!cu) return NULL;
  gc_cu_exec *x = calloc(1, sizeof *x);
  if (!x) {
    oom(d);
    return NULL;
  }
  x->cu = cu;
  x->sync_each = s && s->cuda_sync;
  if (pthread_mutex_init(&x->run_mu, NULL) != 0) {
    free(x);
    gc_error_at(d, GRAPHC_STATUS_INTERNAL, (gc_loc){0, 0}, "CUDA executor: cannot initialize a mutex");
    return NULL;
  }
  x->run_mu_ok = 1;
  if (GC_CU(cu, d, DeviceGet, &x->dev, 0) || query_device(x, d)) {
    pthread_mutex_destroy(&x->run_mu);
    free(x);
    return NULL;
  }
  if (async && pthread_create(&x->retainer, NULL, retain_main, x) == 0) {
    x->retaining = 1;
    return x;
  }
  retain_main(x);
  if (gc_cu_exec_wait(x, d)) {
    gc_cu_exec_free(x);
    return NULL;
  }
  return x;
}

gc_cu_exec *gc_cu_exec_open(const gc_rt_settings *s, gc_diags *d) { return exec_open(0, s, d); }

gc_cu_exec *gc_cu_exec_open_async(const gc_rt_settings *s, gc_diags *d) { return exec_open(1, s, d); }

int gc_cu_exec_wait(gc_cu_exec *x, gc_diags *d) {
  retain_join(x);
  if (x->ctx_retained) return 0;
  return gc_cu_check(x->cu, d, x->retain_rc, "cuDevicePrimaryCtxRetain", NULL);
}

const gc_cu_props *gc_cu_exec_props(const gc_cu_exec *x) { return &x->props; }
int gc_cu_exec_from_ptx(const gc_cu_exec *x) { return x->from_ptx; }
int gc_cu_exec_image_sm(const gc_cu_exec *x) { return x->image_sm; }
int gc_cu_exec_eager(const gc_cu_exec *x) { return x->eager; }

/* ---- module loading ----------------------------------------------------------------- */
/* Load PTX through the driver JIT; on failure *why gets the message (malloc'd). */
static int load_ptx(gc_cu_exec *x, const gc_cu_image *img, char **why) {
  char log[8192] = "";
  CUjit_option o[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *v[] = {log, (void *)(uintptr_t)sizeof log};
  CUresult r = x->cu->ModuleLoadDataEx(&x->mod, img->ptx, 2, o, v);
  if (r == CUDA_SUCCESS) return 0;
  x->mod = NULL;
  int ver = x->cu->version;
  gc_sbuf b = {0};
  gc_sbuf_printf(&b, "cuModuleLoadDataEx failed: %s (%s) loading PTX for sm_%d on %s (sm_%d, driver "
                 "CUDA %d.%d)%s%s",
                 gc_cu_error_name(x->cu, r), gc_cu_error_string(x->cu, r), img->sm, x->props.name,
                 x->props.sm, ver / 1000, ver % 1000 / 10, log[0] ? ": " : "", log);
  *why = gc_sbuf_take(&b);
  return -1;
}

/* Load a cubin; on failure *why gets the message (malloc'd). */
static int load_cubin(gc_cu_exec *x, const gc_cu_image *img, char **why) {
  CUresult r = x->cu->ModuleLoadData(&x->mod, img->cubin);
  if (r == CUDA_SUCCESS) return 0;
  x->mod = NULL;
  gc_sbuf b = {0};
  gc_sbuf_printf(&b, "cuModuleLoadData(cubin sm_%d) failed: %s (%s)", img->sm,
                 gc_cu_error_name(x->cu, r), gc_cu_error_string(x->cu, r));
  *why = gc_sbuf_take(&b);
  return -1;
}

/* Load the module from the best image for this device; say which in st. */
static int load_module(gc_cu_exec *x, const gc_cu_image *imgs, int n, gc_sbuf *st, gc_diags *d) {
  gc_cu_try *order = calloc(2 * (size_t)n + 1, sizeof *order);
  if (!order) return oom(d);
  int nt = gc_cu_image_order(imgs, n, x->props.sm, order);
  gc_sbuf why = {0};   /* why earlier choices were not used */
  /* Why no cubin of the preferred kind was there to try. */
  int have_exact = 0;
  for (int i = 0; i < nt; i++) have_exact |= !order[i].ptx && imgs[order[i].image].sm == x->props.sm;
  if (!have_exact) {
    char list[256];
    gc_cu_image_list(imgs, n, list, sizeof list);
    int noted = 0;
    for (int i = 0; i < n && !noted; i++)
      if (imgs[i].why_no_cubin && !(imgs[i].cubin && imgs[i].cubin_len)) {
        gc_sbuf_puts(&why, imgs[i].why_no_cubin);
        noted = 1;
      }
    if (!noted)
      gc_sbuf_printf(&why, "no cubin for sm_%d (the code has %s)", x->props.sm, list);
  }
  int rc = -1;
  double t0 = now_ms();
  for (int i = 0; i < nt && rc; i++) {
    const gc_cu_image *img = &imgs[order[i].image];
    char *msg = NULL;
    rc = order[i].ptx ? load_ptx(x, img, &msg) : load_cubin(x, img, &msg);
    if (rc == 0) {
      x->from_ptx = order[i].ptx;
      x->image_sm = img->sm;
      if (!st) break;
      if (order[i].ptx)
        gc_sbuf_printf(st, "cuda: module loaded from PTX (driver JIT) for sm_%d because %s\n", img->sm,
                       why.len ? why.data : "no cubin was made");
      else
        gc_sbuf_printf(st, "cuda: module loaded from cubin sm_%d (%zu bytes)\n", img->sm,
                       img->cubin_len);
    } else {
      gc_sbuf_printf(&why, "%s%s", why.len ? "; " : "", msg ? msg : "out of memory");
    }
    free(msg);
  }
  if (rc && nt == 0) {
    char list[256];
    gc_cu_image_list(imgs, n, list, sizeof list);
    gc_error_at(d, GRAPHC_STATUS_UNSUPPORTED, (gc_loc){0, 0},
                "no code this device can run: %s is sm_%d, the code has %s (a cubin runs on its "
                "own sm and newer minor versions of the same major; PTX on its sm and newer); "
                "compile for --arch sm_%d",
                x->props.name, x->props.sm, list, x->props.sm);
  } else if (rc) {
    gc_error_at(d, GRAPHC_STATUS_DEVICE_ERROR, (gc_loc){0, 0}, "cannot load the module: %s",
                why.len ? why.data : "unknown reason");
  } else if (st) {
    gc_sbuf_printf(st, "cuda: module load %.2f ms\n", now_ms() - t0);
  }
  gc_sbuf_free(&why);
  free(order);
  return rc;
}

/* Functions and launch geometry of every kernel, argument slots allocated. */
static int setup_kernels(gc_cu_exec *x, gc_diags *d) {
  const gc_launch_plan *p = x->plan;
  const gc_cu_props *pr = &x->props;
  x->kernels = calloc((size_t)p->n_kernels + 1, sizeof *x->kernels);
  if (!x->kernels) return oom(d);
  for (int i = 0; i < p->n_kernels; i++) {
    cu_kernel *ck = &x->kernels[i];
    const gc_lp_kernel *k = &p->kernels[i];
    ck->k = k;
    if (GC_CU_WHAT(x->cu, d, k->name, ModuleGetFunction, &ck->fn, x->mod, k->name)) return -1;
    int fn_max = 0;
    if (GC_CU_WHAT(x->cu, d, k->name, FuncGetAttribute, &fn_max,
                   CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, ck->fn))
      return -1;
    /* dynamic shared memory beyond 48 KiB needs the function's opt-in */
    if (k->smem > 0) {
      if (k->smem > pr->shared_optin) {
        gc_error_at(d, GRAPHC_STATUS_COMPILE_ERROR, (gc_loc){0, 0},
                    "kernel %s needs %d bytes of shared memory per block, but %s allows at most %d",
                    k->name, k->smem, pr->name, pr->shared_optin);
        return -1;
      }
      if (GC_CU_WHAT(x->cu, d, k->name, FuncSetAttribute, ck->fn,
                     CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, k->smem))
        return -1;
    }
    int64_t n = k->n;
    int64_t grid;
    int block = k->block;
    if (k->kind != GC_LP_ITEMS) {
      /* The group size is part of the kernel's meaning: it cannot shrink. */
      if (block < 1 || block > fn_max) {
        gc_error_at(d, GRAPHC_STATUS_COMPILE_ERROR, (gc_loc){0, 0},
                    "kernel %s needs %d threads per block, but its compiled code allows at most %d "
                    "on %s",
                    k->name, block, fn_max, pr->name);
        return -1;
      }
      /* BLOCKS_ONE: the code has no loop over groups (one block each); BLOCKS loops, over at
       * most 32 blocks an SM (a block a group instead moved the H200's reductions both ways:
       * f16 column sums 90.5 -> 85.0% of copy, outer+inner 93.3 -> 96.9%: docs/performance.md). */
      grid = k->kind == GC_LP_BLOCKS_ONE ? n : n < (int64_t)pr->num_sms * 32 ? n : (int64_t)pr->num_sms * 32;
    } else {
      if (block < 1) block = 256;
      if (block > fn_max) block = fn_max >= 32 ? fn_max & ~31 : fn_max;
      if (block < 1) block = 1;
      /* One item a thread: the grid covers every item (the kernel's grid-stride loop runs
       * once) up to INT32_MAX blocks. H200, f32 neg over 256 MB against cuMemcpyDtoD: 100%
       * with a block per 256 items, 91.5% with one resident wave looping (132 x 8 blocks),
       * whatever cache hints the loads and stores carry (docs/performance.md). */
      grid = (n + block - 1) / block;
    }
    if (grid < 1) grid = 1;
    if (grid > INT32_MAX) grid = INT32_MAX;
    ck->grid = (unsigned)grid;
    ck->block = (unsigned)block;
    ck->args = calloc((size_t)k->n_params + 1, sizeof *ck->args);
    ck->argp = calloc((size_t)k->n_params + 1, sizeof *ck->argp);
    if (!ck->args || !ck->argp) return oom(d);
    for (int q = 0; q < k->n_params; q++) ck->argp[q] = &ck->args[q];
  }
  return 0;
}

/* ---- device memory ------------------------------------------------------------------ */
/* cuMemAlloc with a message that says what the memory was for. */
static int dev_alloc(gc_cu_exec *x, CUdeviceptr *p, size_t bytes, const char *what, gc_diags *d) {
  *p = 0;
  if (bytes == 0) return 0;
  CUresult r = x->cu->MemAlloc(p, bytes);
  if (r == CUDA_SUCCESS) return 0;
  *p = 0;
  char b[64], t[64];
  fmt_bytes(b, sizeof b, (double)bytes);
  fmt_bytes(t, sizeof t, (double)x->props.total_mem);
  gc_error_at(d, gc_cu_status(r), (gc_loc){0, 0},
              "cuMemAlloc failed: %s (%s) allocating %s for %s on %s (%s total)",
              gc_cu_error_name(x->cu, r), gc_cu_error_string(x->cu, r), b, what, x->props.name, t);
  return -1;
}

/* Arena, constants (uploaded once) and the executor's I/O buffers. */
static int setup_memory(gc_cu_exec *x, gc_sbuf *st, gc_diags *d) {
  const gc_launch_plan *p = x->plan;
  if (dev_alloc(x, &x->arena, align_up(p->arena_bytes), "the intermediate-buffer arena", d))
    return -1;
  size_t ni = (size_t)p->n_inputs, no = (size_t)p->n_outputs;
  x->const_off = calloc((size_t)p->n_consts + 1, sizeof *x->const_off);
  x->in_buf = calloc(ni + 1, sizeof *x->in_buf);
  x->out_buf = calloc(no + 1, sizeof *x->out_buf);
  x->bound_in = calloc(ni + 1, sizeof *x->bound_in);
  x->bound_out = calloc(no + 1, sizeof *x->bound_out);
  x->graph_in = calloc(ni + 1, sizeof *x->graph_in);
  x->graph_out = calloc(no + 1, sizeof *x->graph_out);
  if (!x->const_off || !x->in_buf || !x->out_buf || !x->bound_in || !x->bound_out ||
      !x->graph_in || !x->graph_out)
    return oom(d);
  size_t cbytes = 0;
  for (int i = 0; i < p->n_consts; i++) {
    x->const_off[i] = cbytes;
    cbytes += align_up(p->consts[i].bytes);
  }
  if (dev_alloc(x, &x->consts, cbytes, "weights and constants", d)) return -1;
  for (int i = 0; i < p->n_consts; i++)
    if (p->consts[i].bytes &&
        GC_CU_WHAT(x->cu, d, p->consts[i].name, MemcpyHtoD, x->consts + x->const_off[i],
                   p->consts[i].data, p->consts[i].bytes))
      return -1;
  size_t iobytes = 0;
  for (size_t i = 0; i < ni; i++) iobytes += align_up(p->inputs[i].nbytes);
  for (size_t i = 0; i < no; i++) iobytes += align_up(p->outputs[i].nbytes);
  if (dev_alloc(x, &x->io, iobytes, "inputs and outputs", d)) return -1;
  size_t off = 0;
  for (size_t i = 0; i < ni; i++) {
    x->in_buf[i] = x->io + off;
    off += align_up(p->inputs[i].nbytes);
  }
  for (size_t i = 0; i < no; i++) {
    x->out_buf[i] = x->io + off;
    off += align_up(p->outputs[i].nbytes);
  }
  if (p->n_tmaps) {
    size_t nt = (size_t)p->n_tmaps, tbytes = nt * TMAP_BYTES;
    /* cuTensorMapEncodeTiled writes only to aligned maps (64 bytes; CUDA 13's
     * CUtensorMap says 128) */
    x->tmap_host = aligned_alloc(TMAP_BYTES, tbytes);
    x->tmap_at = calloc(nt, sizeof *x->tmap_at);
    x->tmap_valid = calloc(nt, 1);
    if (!x->tmap_host || !x->tmap_at || !x->tmap_valid) return oom(d);
    memset(x->tmap_host, 0, tbytes);
    if (dev_alloc(x, &x->tmaps, tbytes, "TMA tensor maps", d)) return -1;
  }
  if (st) {
    char a[64], c[64], io[64];
    fmt_bytes(a, sizeof a, (double)p->arena_bytes);
    fmt_bytes(c, sizeof c, (double)cbytes);
    fmt_bytes(io, sizeof io, (double)iobytes);
    gc_sbuf_printf(st, "cuda: device memory: arena %s, constants %s (%d), inputs+outputs %s\n", a,
                   c, p->n_consts, io);
  }
  return 0;
}

/* Device address of plan buffer `buf` with the given I/O buffers bound. */
static CUdeviceptr buffer_addr(const gc_cu_exec *x, int buf, const CUdeviceptr *in,
                               const CUdeviceptr *out) {
  const gc_lp_buffer *b = &x->plan->buffers[buf];
  switch (b->kind) {
    case GC_LP_INPUT: return in[b->index];
    case GC_LP_OUTPUT: return out[b->index];
    case GC_LP_CONST: return x->consts + x->const_off[b->index];
    case GC_LP_TEMP: return x->arena + b->offset;
  }
  return 0;
}

/* The first kernel reading tensor map i, for messages. */
static const char *tmap_kernel(const gc_cu_exec *x, int i) {
  const gc_launch_plan *p = x->plan;
  for (int k = 0; k < p->n_kernels; k++)
    for (int j = 0; j < p->kernels[k].n_params; j++)
      if (p->kernels[k].params[j].kind == GC_LP_PARAM_TMAP && p->kernels[k].params[j].value == i)
        return p->kernels[k].name;
  return "(no kernel)";
}

/* Report a failed encode of tensor map i at addr: the kernel, the tensor, the CUresult.
 * A misaligned address is the caller's (run_device pointers): INVALID_ARGUMENT. */
static int tmap_failed(gc_cu_exec *x, int i, CUdeviceptr addr, CUresult r, gc_diags *d) {
  const gc_launch_plan *p = x->plan;
  const gc_lp_tmap *t = &p->tmaps[i];
  const gc_lp_buffer *b = &p->buffers[t->buffer];
  char tensor[600];
  if (b->kind == GC_LP_INPUT || b->kind == GC_LP_OUTPUT)
    snprintf(tensor, sizeof tensor, "%s '%s'", b->kind == GC_LP_INPUT ? "input" : "output",
             b->kind == GC_LP_INPUT ? p->inputs[b->index].name : p->outputs[b->index].name);
  else
    snprintf(tensor, sizeof tensor, "%s buffer %d", b->kind == GC_LP_CONST ? "const" : "temp",
             t->buffer);
  int misaligned = addr % 16 != 0;
  gc_error_at(d, misaligned ? GRAPHC_STATUS_INVALID_ARGUMENT : gc_cu_status(r), (gc_loc){0, 0},
              "kernel %s: tensor map %d over %s at 0x%llx: cuTensorMapEncodeTiled failed: %s (%s)%s",
              tmap_kernel(x, i), i, tensor, (unsigned long long)addr, gc_cu_error_name(x->cu, r),
              gc_cu_error_string(x->cu, r),
              misaligned ? " [TMA needs 16-byte aligned tensors: pass 16-byte aligned device pointers]"
                         : "");
  return -1;
}

/* Encode tensor map i, whose element (0, .., 0) is at addr, into the host table. */
static CUresult encode_tmap(gc_cu_exec *x, int i, CUdeviceptr addr) {
  const gc_lp_tmap *t = &x->plan->tmaps[i];
  cuuint64_t dims[GC_LP_TMAP_MAX_RANK], strides[GC_LP_TMAP_MAX_RANK];
  cuuint32_t box[GC_LP_TMAP_MAX_RANK], ones[GC_LP_TMAP_MAX_RANK];
  for (int k = 0; k < t->rank; k++) {
    dims[k] = (cuuint64_t)t->dims[k];
    strides[k] = k + 1 < t->rank ? (cuuint64_t)t->strides[k + 1] : 0;  /* strides[0] is implied */
    box[k] = (cuuint32_t)t->box[k];
    ones[k] = 1;
  }
  CUtensorMapDataType dt = t->dtype == GRAPHC_DTYPE_F16    ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                           : t->dtype == GRAPHC_DTYPE_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                           : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  return x->cu->TensorMapEncodeTiled(
      &x->tmap_host[i], dt, (cuuint32_t)t->rank, (void *)(uintptr_t)addr, dims, strides, box, ones,
      CU_TENSOR_MAP_INTERLEAVE_NONE,
      t->swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

/* Re-encode the tensor maps whose buffer moved (only I/O buffers move: run_device)
 * and mark the table for upload. A map that fails to encode is left invalid, so the
 * next bind tries it again; nothing launches with it (the caller fails). */
static int bind_tmaps(gc_cu_exec *x, const CUdeviceptr *in, const CUdeviceptr *out, gc_diags *d) {
  const gc_launch_plan *p = x->plan;
  for (int i = 0; i < p->n_tmaps; i++) {
    CUdeviceptr addr = buffer_addr(x, p->tmaps[i].buffer, in, out) + p->tmaps[i].offset;
    if (x->tmap_valid[i] && x->tmap_at[i] == addr) continue;
    x->tmaps_dirty = 1;
    x->tmap_valid[i] = 0;
    CUresult r = encode_tmap(x, i, addr);
    if (r != CUDA_SUCCESS) return tmap_failed(x, i, addr, r, d);
    x->tmap_at[i] = addr;
    x->tmap_valid[i] = 1;
  }
  return 0;
}

/* Point every kernel argument at the given I/O buffers (TEMP and CONST fixed), and
 * the tensor maps over them. */
static int bind_io(gc_cu_exec *x, const CUdeviceptr *in, const CUdeviceptr *out, gc_diags *d) {
  const gc_launch_plan *p = x->plan;
  memcpy(x->bound_in, in, (size_t)p->n_inputs * sizeof *in);
  memcpy(x->bound_out, out, (size_t)p->n_outputs * sizeof *out);
  for (int i = 0; i < p->n_kernels; i++) {
    cu_kernel *ck = &x->kernels[i];
    for (int j = 0; j < ck->k->n_params; j++) {
      const gc_lp_param *q = &ck->k->params[j];
      switch (q->kind) {
        case GC_LP_PARAM_I64: ck->args[j] = (uint64_t)q->value; break;
        case GC_LP_PARAM_TMAP: ck->args[j] = x->tmaps + (uint64_t)q->value * TMAP_BYTES; break;
        case GC_LP_PARAM_BUFFER: ck->args[j] = buffer_addr(x, (int)q->value, in, out); break;
      }
    }
  }
  return bind_tmaps(x, in, out, d);
}

int gc_cu_exec_load(gc_cu_exec *x, const gc_launch_plan *p, const gc_cu_image *imgs, int n_imgs,
                    int eager, gc_sbuf *st, gc_diags *d) {
  GC_ASSERT(!x->plan);
  int was_async = x->retaining;
  if (gc_cu_exec_wait(x, d)) return -1;
  if (st && was_async)
    gc_sbuf_printf(st, "cuda: context %.2f ms beside the compile (then waited %.2f ms)\n", x->retain_ms,
                   x->retain_wait_ms);
  if (gc_launch_plan_check(p, GRAPHC_STATUS_INTERNAL, "launch plan", d)) return -1;
  for (int i = 0; i < p->n_consts; i++)
    if (!p->consts[i].data && p->consts[i].bytes) {
      gc_error_at(d, GRAPHC_STATUS_WEIGHTS_ERROR, (gc_loc){0, 0},
                  "weight '%s' (%" PRIu64 " bytes) has no data: embed the weights when compiling "
                  "(--embed-weights) or provide it before the first run",
                  p->consts[i].name, p->consts[i].bytes);
      return -1;
    }
  x->plan = p;
  x->eager = eager || x->sync_each;
  if (ctx_push(x, d)) return -1;
  int rc = -1;
  if (load_module(x, imgs, n_imgs, st, d) || setup_kernels(x, d)) goto out;
  if (GC_CU(x->cu, d, StreamCreate, &x->stream, CU_STREAM_NON_BLOCKING)) goto out;
  if (setup_memory(x, st, d) || bind_io(x, x->in_buf, x->out_buf, d)) goto out;
  x->prologue_due = 1;
  if (st) {
    gc_sbuf_printf(st, "cuda: %d kernels, %d launches (%s)\n", p->n_kernels, p->n_launches,
                   x->eager ? "eager launches" : "CUDA graph replay");
    if (p->n_prologue)
      gc_sbuf_printf(st, "cuda: the first %d launches read only weights: run once per weights\n",
                     p->n_prologue);
    if (p->n_tmaps)
      gc_sbuf_printf(st, "cuda: %d tensor maps (%d bytes each, one device table), encoded again "
                     "when a buffer they view moves\n", p->n_tmaps, TMAP_BYTES);
    for (int i = 0; i < p->n_kernels; i++) {
      const cu_kernel *ck = &x->kernels[i];
      gc_sbuf_printf(st, "cuda:   %-32s %s n=%" PRId64 " grid=%u block=%u\n", ck->k->name,
                     ck->k->kind != GC_LP_ITEMS ? "blocks" : "items ", ck->k->n, ck->grid,
                     ck->block);
    }
  }
  rc = 0;
out:
  ctx_pop(x);
  return rc;
}

int gc_cu_exec_set_const(gc_cu_exec *x, int i, const void *data, size_t bytes, gc_diags *d) {
  GC_ASSERT(x->plan && i >= 0 && i < x->plan->n_consts && bytes == x->plan->consts[i].bytes);
  if (!x->consts || !bytes) return 0;
  pthread_mutex_lock(&x->run_mu);
  int rc = -1;
  if (ctx_push(x, d) == 0) {
    rc = GC_CU_WHAT(x->cu, d, x->plan->consts[i].name, MemcpyHtoD, x->consts + x->const_off[i], data,
                    bytes);
    x->prologue_due = 1;  /* what the prologue computed from the old bytes is stale */
    ctx_pop(x);
  }
  pthread_mutex_unlock(&x->run_mu);
  return rc;
}

/* ---- launching ---------------------------------------------------------------------- */
/* Upload the tensor map table when bind_tmaps changed it. Stream order puts the copy
 * after the kernels of earlier runs that read the old maps and before every launch
 * that reads the new ones (a replayed graph reads the table at the same address). The
 * copy is never captured: its source is pageable host memory, which the driver stages
 * before returning (so binding again right after an enqueue cannot change what it
 * uploads). */
static int upload_tmaps(gc_cu_exec *x, CUstream s, gc_diags *d) {
  if (!x->tmaps_dirty) return 0;
  if (GC_CU_WHAT(x->cu, d, "TMA tensor maps", MemcpyHtoDAsync, x->tmaps, x->tmap_host,
                 (size_t)x->plan->n_tmaps * TMAP_BYTES, s))
    return -1;
  x->tmaps_dirty = 0;
  return 0;
}

/* Launch the i-th launch of the plan on stream s (kernel arguments are copied at the
 * launch, so binding other pointers afterwards cannot change it). */
static int launch_one(gc_cu_exec *x, int i, CUstream s, gc_diags *d) {
  cu_kernel *ck = &x->kernels[x->plan->launches[i]];
  if (ck->k->n <= 0) return 0;
  return GC_CU_WHAT(x->cu, d, ck->k->name, LaunchKernel, ck->fn, ck->grid, 1, 1, ck->block, 1, 1,
                    (unsigned)ck->k->smem, s, ck->argp, NULL);
}

/* Launches [from, to) in order, directly on the stream; with GRAPHC_CUDA_SYNC=1 each
 * is followed by a synchronize so a failing kernel is named. */
static int launch_range(gc_cu_exec *x, int from, int to, CUstream s, gc_diags *d) {
  for (int i = from; i < to; i++) {
    if (launch_one(x, i, s, d)) return -1;
    if (x->sync_each) {
      char what[256];
      snprintf(what, sizeof what, "after kernel %s, launch %d of %d",
               x->kernels[x->plan->launches[i]].k->name, i + 1, x->plan->n_launches);
      if (GC_CU_WHAT(x->cu, d, what, StreamSynchronize, s)) return -1;
    }
  }
  return 0;
}

/* Capture the launches (bound to the current pointers) into a CUDA graph and
 * instantiate it, or update the existing instantiation in place. The capture is on
 * the executor's own stream whatever stream the graph is launched on; an update
 * (or a new instantiation; cuGraphExecDestroy of a graph in flight frees it when it
 * completes) affects only later launches, never one already enqueued, so enqueued
 * work still in flight keeps the pointers it was launched with. */
static int capture_graph(gc_cu_exec *x, gc_diags *d) {
  const gc_cu_driver *cu = x->cu;
  size_t ni = (size_t)x->plan->n_inputs, no = (size_t)x->plan->n_outputs;
  if (GC_CU(cu, d, StreamBeginCapture, x->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)) return -1;
  int bad = 0;
  for (int i = x->plan->n_prologue; i < x->plan->n_launches && !bad; i++)
    bad = launch_one(x, i, x->stream, d);
  CUgraph g = NULL;
  CUresult r = cu->StreamEndCapture(x->stream, &g);
  if (bad) {
    if (g) cu->GraphDestroy(g);
    return -1;
  }
  if (gc_cu_check(cu, d, r, "cuStreamEndCapture", NULL)) return -1;
  int rc = 0;
  if (x->gexec) {
    CUgraphExecUpdateResultInfo info;
    memset(&info, 0, sizeof info);
    if (cu->GraphExecUpdate(x->gexec, g, &info) != CUDA_SUCCESS) {
      cu->GraphExecDestroy(x->gexec);
      x->gexec = NULL;
    }
  }
  if (!x->gexec) rc = GC_CU(cu, d, GraphInstantiate, &x->gexec, g, 0);
  if (rc) x->gexec = NULL;
  cu->GraphDestroy(g);
  if (rc == 0) {
    memcpy(x->graph_in, x->bound_in, ni * sizeof *x->graph_in);
    memcpy(x->graph_out, x->bound_out, no * sizeof *x->graph_out);
  }
  return rc;
}

/* The plan's launches on stream s: the prologue first when it is due (eagerly, once
 * per weights), then the rest as a graph replay or eagerly. */
static int launch_all(gc_cu_exec *x, CUstream s, gc_diags *d) {
  const int np = x->plan->n_prologue, nl = x->plan->n_launches;
  if (upload_tmaps(x, s, d)) return -1;
  if (x->prologue_due) {
    if (launch_range(x, 0, np, s, d)) return -1;
    x->prologue_due = 0;
  }
  if (nl == np) return 0;
  if (x->eager) return launch_range(x, np, nl, s, d);
  size_t ni = (size_t)x->plan->n_inputs, no = (size_t)x->plan->n_outputs;
  int same = x->gexec && memcmp(x->graph_in, x->bound_in, ni * sizeof *x->graph_in) == 0 &&
             memcmp(x->graph_out, x->bound_out, no * sizeof *x->graph_out) == 0;
  if (!same && capture_graph(x, d)) return -1;
  return GC_CU(x->cu, d, GraphLaunch, x->gexec, s);
}

/* Synchronize the stream; a failure here is an error of some kernel (reported to d
 * unless d is NULL). */
static int sync_stream(gc_cu_exec *x, gc_diags *d) {
  CUresult r = x->cu->StreamSynchronize(x->stream);
  if (r == CUDA_SUCCESS) return 0;
  if (!d) return -1;
  gc_error_at(d, gc_cu_status(r), (gc_loc){0, 0},
              "cuStreamSynchronize failed: %s (%s) [a kernel failed while running; set "
              "GRAPHC_CUDA_SYNC=1 to find which]",
              gc_cu_error_name(x->cu, r), gc_cu_error_string(x->cu, r));
  return -1;
}

/* Report that the executor has nothing loaded. */
static int not_loaded(const gc_cu_exec *x, gc_diags *d) {
  if (x && x->plan && x->kernels && x->stream) return 0;
  gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0}, "executable is not prepared");
  return -1;
}

/* ---- caller pointers and streams ------------------------------------------------------ */
/* Check the caller's pointers for I/O tensors t[0..n) (inputs, or outputs when `output`)
 * with cuPointerGetAttribute: device memory of this executor's device and context, large
 * enough from the pointer on. When host_ok (enqueue), pinned host memory (cuMemHostAlloc,
 * graphc_host_alloc) is accepted too and host[i] set to 1; pageable host memory is never
 * accepted (the driver cannot copy it asynchronously). Context pushed. */
static int check_ptrs(gc_cu_exec *x, const graphc_tensor_t *t, int n, int output, int host_ok,
                      unsigned char *host, gc_diags *d) {
  const gc_cu_driver *cu = x->cu;
  const gc_launch_plan *p = x->plan;
  const char *what = output ? "output" : "input";
  const char *need = host_ok ? "device memory of this executable's device or pinned host memory "
                               "(graphc_host_alloc)"
                             : "device memory of this executable's device";
  for (int i = 0; i < n; i++) {
    const char *name = output ? p->outputs[i].name : p->inputs[i].name;
    size_t bytes = output ? p->outputs[i].nbytes : p->inputs[i].nbytes;
    CUdeviceptr ptr = (CUdeviceptr)(uintptr_t)t[i].data;
    unsigned int type = 0;
    if (host) host[i] = 0;
    CUresult r = cu->PointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr);
    if (r == CUDA_ERROR_INVALID_VALUE) {
      gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0},
                  "%s %d (%%%s): %p is not memory CUDA knows (pageable host memory, or freed): "
                  "needs %s", what, i, name, t[i].data, need);
      return -1;
    }
    if (gc_cu_check(cu, d, r, "cuPointerGetAttribute", name)) return -1;
    if (type == CU_MEMORYTYPE_HOST && host_ok) {
      host[i] = 1;
    } else if (type != CU_MEMORYTYPE_DEVICE) {
      gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0},
                  "%s %d (%%%s): %p is %s memory, not device memory: needs %s%s", what, i, name,
                  t[i].data, type == CU_MEMORYTYPE_HOST ? "pinned host" : "non-device", need,
                  type == CU_MEMORYTYPE_HOST ? " (graphc_executable_enqueue copies pinned host "
                                               "tensors)" : "");
      return -1;
    } else {
      int ordinal = -1;
      CUcontext owner = NULL;
      if (GC_CU_WHAT(cu, d, name, PointerGetAttribute, &ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                     ptr) ||
          GC_CU_WHAT(cu, d, name, PointerGetAttribute, &owner, CU_POINTER_ATTRIBUTE_CONTEXT, ptr))
        return -1;
      if (ordinal != (int)x->dev) {
        gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0},
                    "%s %d (%%%s): %p is memory of device %d, not device memory of this "
                    "executable's device (%d)", what, i, name, t[i].data, ordinal, (int)x->dev);
        return -1;
      }
      /* NULL: memory of no one context (cuMemMap, memory pools), usable from any */
      if (owner && owner != x->ctx) {
        gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0},
                    "%s %d (%%%s): %p is device memory of another CUDA context: this executable "
                    "runs in device %d's primary context (allocate with it current, as the CUDA "
                    "runtime does)", what, i, name, t[i].data, (int)x->dev);
        return -1;
      }
    }
    /* The allocation must hold the tensor from the pointer on (when the driver says). */
    CUdeviceptr start = 0;
    size_t size = 0;
    if (cu->PointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, ptr) == CUDA_SUCCESS &&
        cu->PointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, ptr) == CUDA_SUCCESS &&
        size && start <= ptr && (size_t)(start + size - ptr) < bytes) {
      gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0},
                  "%s %d (%%%s): the allocation at %p holds %zu bytes from there, the tensor "
                  "needs %zu", what, i, name, t[i].data, (size_t)(start + size - ptr), bytes);
      return -1;
    }
  }
  return 0;
}

/* Order work about to go on stream s after every earlier enqueue still in flight (they
 * share the arena, the I/O buffers and the tensor map table). */
static int wait_pending(gc_cu_exec *x, CUstream s, gc_diags *d) {
  if (!x->pending) return 0;
  return GC_CU_WHAT(x->cu, d, "waiting for earlier enqueued work", StreamWaitEvent, s, x->done, 0);
}

/* One run with host tensors; run_mu held. */
static int run_host(gc_cu_exec *x, const graphc_tensor_t *in, graphc_tensor_t *out, gc_diags *d) {
  if (ctx_push(x, d)) return -1;
  const gc_cu_driver *cu = x->cu;
  const gc_launch_plan *p = x->plan;
  int bad = wait_pending(x, x->stream, d) || bind_io(x, x->in_buf, x->out_buf, d);
  for (int i = 0; i < p->n_inputs && !bad; i++)
    bad = GC_CU_WHAT(cu, d, p->inputs[i].name, MemcpyHtoDAsync, x->in_buf[i], in[i].data,
                     p->inputs[i].nbytes, x->stream);
  if (!bad) bad = launch_all(x, x->stream, d);
  for (int i = 0; i < p->n_outputs && !bad; i++)
    bad = GC_CU_WHAT(cu, d, p->outputs[i].name, MemcpyDtoHAsync, out[i].data, x->out_buf[i],
                     p->outputs[i].nbytes, x->stream);
  /* Synchronize even after a failed enqueue: host buffers must not be in flight. */
  CUresult r = cu->StreamSynchronize(x->stream);
  if (!bad && r != CUDA_SUCCESS) {
    gc_error_at(d, gc_cu_status(r), (gc_loc){0, 0},
                "cuStreamSynchronize failed: %s (%s) [a kernel failed while running; set "
                "GRAPHC_CUDA_SYNC=1 to find which]",
                gc_cu_error_name(cu, r), gc_cu_error_string(cu, r));
    bad = 1;
  }
  if (r == CUDA_SUCCESS) x->pending = 0;   /* what it waited on has finished too */
  ctx_pop(x);
  return bad ? -1 : 0;
}

int gc_cu_exec_run(gc_cu_exec *x, const graphc_tensor_t *in, graphc_tensor_t *out, gc_diags *d) {
  if (not_loaded(x, d)) return -1;
  pthread_mutex_lock(&x->run_mu);
  int rc = run_host(x, in, out, d);
  pthread_mutex_unlock(&x->run_mu);
  return rc;
}

int gc_cu_exec_run_device(gc_cu_exec *x, const graphc_tensor_t *in, graphc_tensor_t *out,
                          gc_diags *d) {
  if (not_loaded(x, d)) return -1;
  size_t ni = (size_t)x->plan->n_inputs, no = (size_t)x->plan->n_outputs;
  CUdeviceptr *pin = calloc(ni + 1, sizeof *pin);
  CUdeviceptr *pout = calloc(no + 1, sizeof *pout);
  if (!pin || !pout) {
    free(pin);
    free(pout);
    return oom(d);
  }
  for (size_t i = 0; i < ni; i++) pin[i] = (CUdeviceptr)(uintptr_t)in[i].data;
  for (size_t i = 0; i < no; i++) pout[i] = (CUdeviceptr)(uintptr_t)out[i].data;
  int rc = -1;
  pthread_mutex_lock(&x->run_mu);
  if (ctx_push(x, d) == 0) {
    rc = check_ptrs(x, in, (int)ni, 0, 0, NULL, d) || check_ptrs(x, out, (int)no, 1, 0, NULL, d) ||
                 wait_pending(x, x->stream, d) || bind_io(x, pin, pout, d) ||
                 launch_all(x, x->stream, d)
             ? -1
             : 0;
    /* Synchronize even after a failed enqueue: nothing of this run stays in flight. */
    if (sync_stream(x, rc ? NULL : d) == 0) x->pending = 0;
    else rc = -1;
    ctx_pop(x);
  }
  pthread_mutex_unlock(&x->run_mu);
  free(pin);
  free(pout);
  return rc;
}

/* One enqueue; run_mu held. */
static int enqueue(gc_cu_exec *x, const graphc_tensor_t *in, graphc_tensor_t *out, CUstream s,
                   gc_diags *d) {
  const gc_cu_driver *cu = x->cu;
  const gc_launch_plan *p = x->plan;
  size_t ni = (size_t)p->n_inputs, no = (size_t)p->n_outputs;
  CUcontext sctx = NULL;
  CUresult r = cu->StreamGetCtx(s, &sctx);
  if (r == CUDA_SUCCESS && sctx != x->ctx) {
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0},
                "stream %p belongs to another CUDA context: this executable runs in device %d's "
                "primary context (create the stream with it current, as the CUDA runtime does)",
                (void *)s, (int)x->dev);
    return -1;
  }
  if (gc_cu_check(cu, d, r, "cuStreamGetCtx", "the caller's stream")) return -1;
  CUdeviceptr *pin = calloc(ni + 1, sizeof *pin), *pout = calloc(no + 1, sizeof *pout);
  unsigned char *hin = calloc(ni + 1, 1), *hout = calloc(no + 1, 1);
  int bad = !pin || !pout || !hin || !hout ? oom(d) : 0;
  if (!bad) bad = check_ptrs(x, in, (int)ni, 0, 1, hin, d) || check_ptrs(x, out, (int)no, 1, 1, hout, d);
  if (!bad && !x->done) bad = GC_CU(cu, d, EventCreate, &x->done, CU_EVENT_DISABLE_TIMING);
  if (!bad) {
    /* Pinned host tensors go through the executor's own I/O buffers. */
    for (size_t i = 0; i < ni; i++) pin[i] = hin[i] ? x->in_buf[i] : (CUdeviceptr)(uintptr_t)in[i].data;
    for (size_t i = 0; i < no; i++)
      pout[i] = hout[i] ? x->out_buf[i] : (CUdeviceptr)(uintptr_t)out[i].data;
    bad = wait_pending(x, s, d) || bind_io(x, pin, pout, d);
  }
  int queued = 0;   /* something went on the stream: later work must wait for it */
  for (size_t i = 0; i < ni && !bad; i++)
    if (hin[i]) {
      bad = GC_CU_WHAT(cu, d, p->inputs[i].name, MemcpyHtoDAsync, pin[i], in[i].data,
                       p->inputs[i].nbytes, s);
      queued = 1;
    }
  if (!bad) {
    queued = 1;
    bad = launch_all(x, s, d);
  }
  for (size_t i = 0; i < no && !bad; i++)
    if (hout[i])
      bad = GC_CU_WHAT(cu, d, p->outputs[i].name, MemcpyDtoHAsync, out[i].data, pout[i],
                       p->outputs[i].nbytes, s);
  if (queued) {
    r = cu->EventRecord(x->done, s);
    if (r == CUDA_SUCCESS) {
      x->pending = 1;
    } else {
      /* Nothing to wait on: drain the stream so no later run overlaps this one. */
      if (!bad) bad = gc_cu_check(cu, d, r, "cuEventRecord", "after the enqueued work");
      cu->StreamSynchronize(s);
    }
  }
  free(pin);
  free(pout);
  free(hin);
  free(hout);
  return bad ? -1 : 0;
}

int gc_cu_exec_enqueue(gc_cu_exec *x, const graphc_tensor_t *in, graphc_tensor_t *out, void *stream,
                       gc_diags *d) {
  if (not_loaded(x, d)) return -1;
  pthread_mutex_lock(&x->run_mu);
  int rc = -1;
  if (ctx_push(x, d) == 0) {
    rc = enqueue(x, in, out, (CUstream)stream, d);
    ctx_pop(x);
  }
  pthread_mutex_unlock(&x->run_mu);
  return rc;
}

void gc_cu_exec_free(gc_cu_exec *x) {
  if (!x) return;
  retain_join(x);
  const gc_cu_driver *cu = x->cu;
  if (x->ctx_retained) {
    /* Errors are ignored here: after a sticky kernel error every call fails,
     * and the primary context's release frees what is left. Everything is
     * released even when the push fails: the handles and (unified) device
     * pointers name their context, and skipping would leak them for as long
     * as the primary context lives (found with the driver fault shim). */
    CUcontext dummy;
    int pushed = cu->CtxPushCurrent(x->ctx) == CUDA_SUCCESS;
    if (x->stream) cu->StreamSynchronize(x->stream);
    /* Work enqueued on callers' streams: destroying waits for it to finish. */
    if (x->done) {
      if (x->pending) cu->EventSynchronize(x->done);
      cu->EventDestroy(x->done);
    }
    if (x->gexec) cu->GraphExecDestroy(x->gexec);
    if (x->stream) cu->StreamDestroy(x->stream);
    if (x->arena) cu->MemFree(x->arena);
    if (x->consts) cu->MemFree(x->consts);
    if (x->io) cu->MemFree(x->io);
    if (x->tmaps) cu->MemFree(x->tmaps);
    if (x->mod) cu->ModuleUnload(x->mod);
    if (pushed) cu->CtxPopCurrent(&dummy);
    cu->DevicePrimaryCtxRelease(x->dev);
  }
  if (x->kernels && x->plan)
    for (int i = 0; i < x->plan->n_kernels; i++) {
      free(x->kernels[i].args);
      free(x->kernels[i].argp);
    }
  free(x->kernels);
  free(x->const_off);
  free(x->in_buf);
  free(x->out_buf);
  free(x->bound_in);
  free(x->bound_out);
  free(x->graph_in);
  free(x->graph_out);
  free(x->tmap_host);
  free(x->tmap_at);
  free(x->tmap_valid);
  if (x->run_mu_ok) pthread_mutex_destroy(&x->run_mu);
  free(x);
}

int gc_cu_exec_geometry(const gc_cu_exec *x, int k, unsigned *grid, unsigned *block) {
  if (!x || !x->plan || !x->kernels || k < 0 || k >= x->plan->n_kernels) return -1;
  *grid = x->kernels[k].grid;
  *block = x->kernels[k].block;
  return 0;
}

/* ---- timing hooks (graphc bench, GPU tests) ------------------------------------------- */
/* Create n events (timing enabled); 0 on success, else destroys what it made. */
static int make_events(gc_cu_exec *x, CUevent *ev, int n, gc_diags *d) {
  for (int i = 0; i < n; i++)
    if (GC_CU(x->cu, d, EventCreate, &ev[i], CU_EVENT_DEFAULT)) {
      while (i-- > 0) x->cu->EventDestroy(ev[i]);
      return -1;
    }
  return 0;
}

/* Destroy n events (NULL entries skipped). */
static void free_events(gc_cu_exec *x, CUevent *ev, int n) {
  for (int i = 0; i < n; i++)
    if (ev[i]) x->cu->EventDestroy(ev[i]);
}

int gc_cu_exec_time_runs(gc_cu_exec *x, int warmup, int runs, float *ms, gc_diags *d) {
  if (not_loaded(x, d) || ctx_push(x, d)) return -1;
  CUevent ev[2] = {0, 0};
  int bad = make_events(x, ev, 2, d) || bind_io(x, x->in_buf, x->out_buf, d);
  for (int i = 0; i < warmup && !bad; i++) bad = launch_all(x, x->stream, d);
  if (!bad) bad = sync_stream(x, d);
  for (int i = 0; i < runs && !bad; i++) {
    bad = GC_CU(x->cu, d, EventRecord, ev[0], x->stream) || launch_all(x, x->stream, d) ||
          GC_CU(x->cu, d, EventRecord, ev[1], x->stream) ||
          GC_CU(x->cu, d, EventSynchronize, ev[1]) ||
          GC_CU(x->cu, d, EventElapsedTime, &ms[i], ev[0], ev[1]);
  }
  if (bad) x->cu->StreamSynchronize(x->stream);
  if (ev[0]) free_events(x, ev, 2);
  ctx_pop(x);
  return bad ? -1 : 0;
}

/* Host time to issue one run (graph launch, or every eager launch), in microseconds:
 * the CPU clock around each launch_all; the stream is drained every 8 runs so the
 * launches never wait for queue space. */
int gc_cu_exec_time_issue(gc_cu_exec *x, int runs, float *us, gc_diags *d) {
  if (not_loaded(x, d) || ctx_push(x, d)) return -1;
  /* capture the graph first */
  int bad = bind_io(x, x->in_buf, x->out_buf, d) || launch_all(x, x->stream, d) || sync_stream(x, d);
  for (int i = 0; i < runs && !bad; i++) {
    double t0 = now_ms();
    bad = launch_all(x, x->stream, d);
    us[i] = (float)((now_ms() - t0) * 1e3);
    if (!bad && i % 8 == 7) bad = sync_stream(x, d);
  }
  if (!bad) bad = sync_stream(x, d);
  else x->cu->StreamSynchronize(x->stream);
  ctx_pop(x);
  return bad ? -1 : 0;
}

/* Runs queued back to back (as the copy baseline's copies are): events[i] after run i-1,
 * so ms[i] is the interval between the ends of two runs: one run's device time, with no
 * idle wait for the host to issue it (the host issues faster than a run takes). */
int gc_cu_exec_time_queued(gc_cu_exec *x, int warmup, int runs, float *ms, gc_diags *d) {
  if (not_loaded(x, d) || runs < 1) return -1;
  CUevent *ev = calloc((size_t)runs + 1, sizeof *ev);
  if (!ev) return oom(d);
  if (ctx_push(x, d)) {
    free(ev);
    return -1;
  }
  int bad = make_events(x, ev, runs + 1, d);
  int made = !bad;
  if (!bad) bad = bind_io(x, x->in_buf, x->out_buf, d);
  for (int i = 0; i < warmup && !bad; i++) bad = launch_all(x, x->stream, d);
  if (!bad) bad = GC_CU(x->cu, d, EventRecord, ev[0], x->stream);
  for (int i = 0; i < runs && !bad; i++)
    bad = launch_all(x, x->stream, d) || GC_CU(x->cu, d, EventRecord, ev[i + 1], x->stream);
  if (!bad) bad = sync_stream(x, d);
  for (int i = 0; i < runs && !bad; i++)
    bad = GC_CU(x->cu, d, EventElapsedTime, &ms[i], ev[i], ev[i + 1]);
  if (bad) x->cu->StreamSynchronize(x->stream);
  if (made) free_events(x, ev, runs + 1);
  free(ev);
  ctx_pop(x);
  return bad ? -1 : 0;
}

/* Per-launch times. Two sets of n + 1 events take turns: run r is queued behind run r - 1
 * before the host waits for run r - 1 and reads its times, so no launch but the very first
 * starts on an idle device (whose wait for the host would count as the first kernel's). */
int gc_cu_exec_time_kernels(gc_cu_exec *x, int runs, float *ms, gc_diags *d) {
  if (not_loaded(x, d)) return -1;
  int n = x->plan->n_launches;
  CUevent *ev = calloc(2 * ((size_t)n + 1), sizeof *ev);
  if (!ev) return oom(d);
  if (ctx_push(x, d)) {
    free(ev);
    return -1;
  }
  int bad = make_events(x, ev, 2 * (n + 1), d);
  int made = !bad;
  if (!bad) bad = bind_io(x, x->in_buf, x->out_buf, d) || upload_tmaps(x, x->stream, d);
  /* one untimed run first, so that run 0 is queued behind work too */
  if (!bad) bad = launch_range(x, 0, n, x->stream, d);
  for (int r = 0; r <= runs && !bad; r++) {
    if (r < runs) {
      CUevent *e = ev + (size_t)(r & 1) * (n + 1);
      for (int i = 0; i < n && !bad; i++)
        bad = GC_CU(x->cu, d, EventRecord, e[i], x->stream) || launch_one(x, i, x->stream, d);
      if (!bad) bad = GC_CU(x->cu, d, EventRecord, e[n], x->stream);
    }
    if (r == 0 || bad) continue;
    CUevent *p = ev + (size_t)((r - 1) & 1) * (n + 1);  /* run r - 1: read its times */
    bad = GC_CU(x->cu, d, EventSynchronize, p[n]);
    for (int i = 0; i < n && !bad; i++)
      bad = GC_CU(x->cu, d, EventElapsedTime, &ms[(size_t)(r - 1) * n + i], p[i], p[i + 1]);
  }
  if (!bad) bad = sync_stream(x, d);
  else x->cu->StreamSynchronize(x->stream);
  if (made) free_events(x, ev, 2 * (n + 1));
  free(ev);
  ctx_pop(x);
  return bad ? -1 : 0;
}

int gc_cu_exec_copy_bandwidth(gc_cu_exec *x, size_t bytes, int reps, double *gbps,
                              size_t *bytes_used, gc_diags *d) {
  if (not_loaded(x, d) || ctx_push(x, d)) return -1;
  const gc_cu_driver *cu = x->cu;
  CUdeviceptr src = 0, dst = 0;
  /* Halve the size while memory is short; other failures are errors. */
  for (;;) {
    CUresult r = cu->MemAlloc(&src, bytes);
    if (r == CUDA_SUCCESS) {
      r = cu->MemAlloc(&dst, bytes);
      if (r != CUDA_SUCCESS) {
        cu->MemFree(src);
        src = 0;
      }
    }
    if (r == CUDA_SUCCESS) break;
    if (r != CUDA_ERROR_OUT_OF_MEMORY || bytes <= ((size_t)64 << 20)) {
      gc_cu_check(cu, d, r, "cuMemAlloc", "copy-bandwidth buffers");
      ctx_pop(x);
      return -1;
    }
    bytes /= 2;
  }
  CUevent ev[2] = {0, 0};
  int bad = make_events(x, ev, 2, d);
  float ms = 0;
  if (!bad)
    bad = GC_CU(cu, d, MemsetD8Async, src, 1, bytes, x->stream) ||
          GC_CU(cu, d, MemcpyDtoDAsync, dst, src, bytes, x->stream) ||  /* warm-up */
          GC_CU(cu, d, EventRecord, ev[0], x->stream);
  for (int i = 0; i < reps && !bad; i++)
    bad = GC_CU(cu, d, MemcpyDtoDAsync, dst, src, bytes, x->stream);
  if (!bad)
    bad = GC_CU(cu, d, EventRecord, ev[1], x->stream) || GC_CU(cu, d, EventSynchronize, ev[1]) ||
          GC_CU(cu, d, EventElapsedTime, &ms, ev[0], ev[1]);
  cu->StreamSynchronize(x->stream);
  if (ev[0]) free_events(x, ev, 2);
  cu->MemFree(src);
  cu->MemFree(dst);
  ctx_pop(x);
  if (bad) return -1;
  *gbps = ms > 0 ? 2.0 * (double)bytes * reps / (ms * 1e-3) / 1e9 : 0;
  if (bytes_used) *bytes_used = bytes;
  return 0;
}
