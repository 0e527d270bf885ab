/* cuda_exec.c - the load-and-run half of the CUDA backend (see cuda_exec.h): the
 * executor, which holds what every run reads (device, module, kernels, constants).
 * What one run in flight writes lives in an execution context (runtime/cuda_context.c);
 * runtime/cuda_exec_impl.h says how the two divide the work.
 *
 * Built into libgraphc (behind the JIT backend, driver/cuda_backend.c) and
 * into libgraphc_rt (behind bundles, runtime/rt_api.c) from this one source.
 * It sees a gc_launch_plan, never Kernel IR, and calls only the CUDA driver.
 */
#include "runtime/cuda_exec.h"

#include <inttypes.h>
#include <stdlib.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "runtime/cuda_exec_impl.h"

/* Monotonic milliseconds, for stage timings. */
double gc_cu_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

size_t gc_cu_align_up(size_t n) { return (n + CU_ALIGN - 1) & ~(size_t)(CU_ALIGN - 1); }

/* Human-readable byte count for messages and stats. */
void gc_cu_fmt_bytes(char *buf, size_t n, double bytes) {
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
int gc_cu_oom(gc_diags *d) {
  gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
  return -1;
}

/* Make the executor's context current; 0 on success. */
int gc_cu_ctx_push(gc_cu_exec *x, gc_diags *d) { return GC_CU(x->cu, d, CtxPushCurrent, x->ctx); }

/* Restore the caller's context. */
void gc_cu_ctx_pop(gc_cu_exec *x) {
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
  double t0 = gc_cu_now_ms();
  x->retain_rc = x->cu->DevicePrimaryCtxRetain(&x->ctx, x->dev);
  x->ctx_retained = x->retain_rc == CUDA_SUCCESS;
  x->retain_ms = gc_cu_now_ms() - t0;
  return NULL;
}

/* Join the retainer thread if there is one. */
static void retain_join(gc_cu_exec *x) {
  if (!x->retaining) return;
  double t0 = gc_cu_now_ms();
  pthread_join(x->retainer, NULL);
  x->retain_wait_ms = gc_cu_now_ms() - t0;
  x->retaining = 0;
}

/* The device and its properties (no context needed), then the context: on a
 * new thread when async (inline when no thread can be made). */
static gc_cu_exec *exec_open(int async, const gc_rt_settings *s, gc_diags *d) {
  const gc_cu_driver *cu = gc_cu_driver_get(s, d);
  if (!cu) return NULL;
  gc_cu_exec *x = calloc(1, sizeof *x);
  if (!x) {
    gc_cu_oom(d);
    return NULL;
  }
  x->cu = cu;
  x->sync_each = s && s->cuda_sync;
  x->branches_on = !s || s->cuda_branches;
  if (pthread_mutex_init(&x->mu, NULL) != 0) {
    free(x);
    gc_error_at(d, GRAPHC_STATUS_INTERNAL, (gc_loc){0, 0}, "CUDA executor: cannot initialize a mutex");
    return NULL;
  }
  x->mu_ok = 1;
  if (GC_CU(cu, d, DeviceGet, &x->dev, 0) || query_device(x, d)) {
    pthread_mutex_destroy(&x->mu);
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
  if (!order) return gc_cu_oom(d);
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
  double t0 = gc_cu_now_ms();
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
    gc_sbuf_printf(st, "cuda: module load %.2f ms\n", gc_cu_now_ms() - t0);
  }
  gc_sbuf_free(&why);
  free(order);
  return rc;
}

/* Functions and launch geometry of every kernel; argument slots numbered. */
static int setup_kernels(gc_cu_exec *x, gc_diags *d) {
  const gc_launch_plan *p = x->plan;
  const gc_cu_props *pr = &x->props;
  x->kernels = calloc((size_t)p->n_kernels + 1, sizeof *x->kernels);
  if (!x->kernels) return gc_cu_oom(d);
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
    ck->arg0 = x->n_args;
    x->n_args += k->n_params;
  }
  return 0;
}

/* ---- device memory ------------------------------------------------------------------ */
/* cuMemAlloc with a message that says what the memory was for. */
int gc_cu_dev_alloc(gc_cu_exec *x, CUdeviceptr *p, size_t bytes, const char *what, gc_diags *d) {
  *p = 0;
  if (bytes == 0) return 0;
  CUresult r = x->cu->MemAlloc(p, bytes);
  if (r == CUDA_SUCCESS) return 0;
  *p = 0;
  char b[64], t[64];
  gc_cu_fmt_bytes(b, sizeof b, (double)bytes);
  gc_cu_fmt_bytes(t, sizeof t, (double)x->props.total_mem);
  gc_error_at(d, gc_cu_status(r), (gc_loc){0, 0},
              "cuMemAlloc failed: %s (%s) allocating %s for %s on %s (%s total)",
              gc_cu_error_name(x->cu, r), gc_cu_error_string(x->cu, r), b, what, x->props.name, t);
  return -1;
}

/* The constants, every one uploaded once (context pushed): weights borrowed from a file
 * through the device's shared copies (cuda_weights.c), the rest in one block of our own. */
static int setup_consts(gc_cu_exec *x, gc_sbuf *st, gc_diags *d) {
  const gc_launch_plan *p = x->plan;
  x->const_ptr = calloc((size_t)p->n_consts + 1, sizeof *x->const_ptr);
  x->const_shared = calloc((size_t)p->n_consts + 1, 1);
  if (!x->const_ptr || !x->const_shared) return gc_cu_oom(d);
  size_t cbytes = 0, sbytes = 0, reused = 0;
  int n_shared = 0;
  for (int i = 0; i < p->n_consts; i++) {
    if (gc_cu_weight_shareable(&p->consts[i])) continue;
    x->const_ptr[i] = cbytes;  /* the offset, until the block is there */
    cbytes += gc_cu_align_up(p->consts[i].bytes);
  }
  if (gc_cu_dev_alloc(x, &x->consts, cbytes, "weights and constants", d)) return -1;
  for (int i = 0; i < p->n_consts; i++) {
    const gc_lp_const *c = &p->consts[i];
    if (gc_cu_weight_shareable(c)) {
      int fresh;
      if (gc_cu_weight_acquire(x, c, &x->const_ptr[i], &fresh, d)) return -1;
      x->const_shared[i] = 1;
      n_shared++;
      sbytes += c->bytes;
      reused += fresh ? 0 : c->bytes;
      continue;
    }
    x->const_ptr[i] += x->consts;
    if (c->bytes && GC_CU_WHAT(x->cu, d, c->name, MemcpyHtoD, x->const_ptr[i], c->data, c->bytes)) return -1;
  }
  if (st) {
    char c[64], s[64], r[64];
    gc_cu_fmt_bytes(c, sizeof c, (double)cbytes);
    gc_cu_fmt_bytes(s, sizeof s, (double)sbytes);
    gc_cu_fmt_bytes(r, sizeof r, (double)reused);
    gc_sbuf_printf(st, "cuda: device memory: constants %s (%d) and weights %s (%d) shared with other executables"
                       " of the device (%s of them already there), all shared by every context\n",
                   c, p->n_consts - n_shared, s, n_shared, r);
  }
  return 0;
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
  if (gc_cu_ctx_push(x, d)) return -1;
  int rc = -1;
  if (load_module(x, imgs, n_imgs, st, d) || setup_kernels(x, d) || setup_consts(x, st, d)) goto out;
  x->weights_gen = 1;   /* contexts start at 0: their prologue is due */
  if (!x->eager && x->branches_on &&
      gc_launch_deps_build(p, p->n_prologue, p->n_launches, &x->deps) != 0) {
    gc_cu_oom(d);
    goto out;
  }
  if (!(x->main = gc_cu_ctx_make(x, st, d))) goto out;
  if (st) {
    gc_sbuf_printf(st, "cuda: %d kernels, %d launches (%s%s)\n", p->n_kernels, p->n_launches,
                   x->eager ? "eager launches" : "CUDA graph replay",
                   x->eager ? "" : x->deps.branches ? ", independent kernels as parallel branches" : ", one chain");
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
  gc_cu_ctx_pop(x);
  return rc;
}

int gc_cu_exec_set_const(gc_cu_exec *x, int i, const void *data, size_t bytes, gc_diags *d) {
  GC_ASSERT(x->plan && i >= 0 && i < x->plan->n_consts && bytes == x->plan->consts[i].bytes);
  if (!x->const_ptr || !bytes) return 0;
  pthread_mutex_lock(&x->mu);
  int rc = -1;
  if (gc_cu_ctx_push(x, d) == 0) {
    /* no run of any context may read the old bytes while they change */
    for (gc_cu_ctx *c = x->contexts; c; c = c->next) {
      if (c->pending) x->cu->EventSynchronize(c->done);
      if (c->stream) x->cu->StreamSynchronize(c->stream);
    }
    /* a shared weight is other executables' too: this one gets a copy of its own, and its
     * contexts bind and capture again (the pointer moved) */
    CUdeviceptr own = 0;
    if (x->const_shared[i] == 1 && gc_cu_dev_alloc(x, &own, bytes, x->plan->consts[i].name, d) == 0) {
      gc_cu_weight_release(x, x->const_ptr[i]);
      x->const_ptr[i] = own;
      x->const_shared[i] = 2;
      __atomic_add_fetch(&x->states_gen, 1, __ATOMIC_RELEASE);
    }
    if (x->const_shared[i] != 1)
      rc = GC_CU_WHAT(x->cu, d, x->plan->consts[i].name, MemcpyHtoD, x->const_ptr[i], data, bytes);
    __atomic_add_fetch(&x->weights_gen, 1, __ATOMIC_RELEASE);  /* prologue results are stale */
    gc_cu_ctx_pop(x);
  }
  pthread_mutex_unlock(&x->mu);
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
    /* every context, the executor's own last: each waits for its work first */
    while (x->contexts) {
      gc_cu_ctx *c = x->contexts;
      x->contexts = c->next;
      gc_cu_ctx_release(c);
    }
    x->main = NULL;
    if (x->consts) cu->MemFree(x->consts);
    for (int i = 0; x->const_shared && i < x->plan->n_consts; i++) {
      if (x->const_shared[i] == 1) gc_cu_weight_release(x, x->const_ptr[i]);
      if (x->const_shared[i] == 2) cu->MemFree(x->const_ptr[i]);
    }
    if (x->mod) cu->ModuleUnload(x->mod);
    if (pushed) cu->CtxPopCurrent(&dummy);
    cu->DevicePrimaryCtxRelease(x->dev);
  }
  free(x->kernels);
  free(x->const_ptr);
  free(x->const_shared);
  free(x->state_addr);
  gc_launch_deps_free(&x->deps);
  if (x->mu_ok) pthread_mutex_destroy(&x->mu);
  free(x);
}

int gc_cu_exec_geometry(const gc_cu_exec *x, int k, unsigned *grid, unsigned *block) {
  if (!x || !x->plan || !x->kernels || k < 0 || k >= x->plan->n_kernels) return -1;
  *grid = x->kernels[k].grid;
  *block = x->kernels[k].block;
  return 0;
}
