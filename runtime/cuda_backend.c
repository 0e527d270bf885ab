/* cuda_backend.c - the CUDA backend: plan -> module -> launches on a stream.
 *
 *   prepare:  primary context of device 0 -> target from device properties
 *             -> gc_lower -> CUDA C + NVRTC (or LLVM NVPTX + nvJitLink) -> cubin
 *             (PTX through the driver JIT when the cubin cannot be made or loaded)
 *             -> functions and launch geometry -> one arena, one consts block,
 *             one block for the I/O buffers -> non-blocking stream.
 *   run:      H2D copies of the inputs into the executable's input buffers,
 *             the launches (one CUDA graph replay, or eager launches), D2H of
 *             the outputs, one stream synchronize, errors checked after it.
 *   run_device: the caller's device pointers are bound as INPUT/OUTPUT buffers.
 *
 * CUDA graph: only the kernel launches are captured. The copies stay outside
 * because their host pointers change from call to call (and pageable host
 * memory cannot be captured); the launches always read and write the same
 * device buffers, so one capture serves every run(). run_device binds other
 * pointers: the graph is re-captured and the instantiated graph updated in
 * place (cuGraphExecUpdate) whenever they differ from the last ones.
 *
 * Every entry point pushes the executable's (primary) context and pops it
 * before returning, so a caller's current context is left untouched.
 * Environment: GRAPHC_CUDA_SYNC=1 launches eagerly and synchronizes after
 * every launch, so an execution error names its kernel.
 * Threads: different executables may run concurrently (each has its own
 * stream); one executable must not be run from two threads at once.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_backend.h"
#include "cuda_driver.h"
#include "../codegen/codegen.h"

#define CU_ALIGN 256

typedef struct cu_kernel {
  const kir_kernel *k;
  CUfunction fn;
  unsigned grid, block;
  uint64_t *args;          /* one 8-byte slot per kir param (CUdeviceptr or int64) */
  void **argp;             /* argp[i] = &args[i], what cuLaunchKernel reads */
} cu_kernel;

typedef struct cu_state {
  const gc_cu_driver *cu;
  CUdevice dev;
  CUcontext ctx;           /* the device's primary context, retained */
  int ctx_retained;
  char device_name[256];
  int device_sm, sm, num_sms, max_threads, max_threads_sm, shared_bytes, warp;
  size_t total_mem;
  gc_plan *plan;
  CUmodule mod;
  int from_ptx;
  CUstream stream;
  CUdeviceptr arena, consts, io;   /* the three allocations */
  size_t *const_off;               /* offset of consts[i] in `consts` */
  CUdeviceptr *in_buf, *out_buf;   /* the executable's own I/O buffers (inside io) */
  CUdeviceptr *bound_in, *bound_out; /* what the kernel arguments point at now */
  CUdeviceptr *graph_in, *graph_out; /* what the instantiated graph was captured with */
  cu_kernel *kernels;              /* per kir kernel */
  CUgraphExec gexec;
  int eager, sync_each;
} cu_state;

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

/* Make the executable's context current; 0 on success. */
static int ctx_push(cu_state *s, gc_diags *d) { return GC_CU(s->cu, d, CtxPushCurrent, s->ctx); }

/* Restore the caller's context. */
static void ctx_pop(cu_state *s) {
  CUcontext dummy;
  s->cu->CtxPopCurrent(&dummy);
}

/* ---- device and target ------------------------------------------------------------ */
/* Read the device properties the launch geometry and the emitters need. */
static int query_device(cu_state *s, gc_diags *d) {
  const gc_cu_driver *cu = s->cu;
  int major = 0, minor = 0;
  struct { CUdevice_attribute a; int *out; } attrs[] = {
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &major},
      {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, &minor},
      {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &s->num_sms},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &s->max_threads},
      {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, &s->max_threads_sm},
      {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, &s->shared_bytes},
      {CU_DEVICE_ATTRIBUTE_WARP_SIZE, &s->warp},
  };
  for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
    if (GC_CU(cu, d, DeviceGetAttribute, attrs[i].out, attrs[i].a, s->dev)) return -1;
  s->device_sm = major * 10 + minor;
  if (GC_CU(cu, d, DeviceGetName, s->device_name, (int)sizeof s->device_name, s->dev)) return -1;
  if (GC_CU(cu, d, DeviceTotalMem, &s->total_mem, s->dev)) return -1;
  if (s->num_sms < 1) s->num_sms = 1;
  if (s->max_threads_sm < 32) s->max_threads_sm = 2048;
  return 0;
}

/* Compute capability from --arch ("sm_90" -> 90), else the device's. */
static int pick_sm(cu_state *s, const char *arch, gc_diags *d) {
  if (!arch || !*arch) return s->device_sm;
  const char *p = arch;
  if (strncmp(p, "sm_", 3) != 0) goto bad;
  p += 3;
  char *end;
  long v = strtol(p, &end, 10);
  if (end == p || v < 50 || v > 1000) goto bad;
  if (*end == 'a' || *end == 'f')
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0},
                "arch '%s': architecture-specific variants are not supported; use sm_%ld", arch, v);
  else if (*end)
    goto bad;
  else
    return (int)v;
  return -1;
bad:
  gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0},
              "unknown CUDA architecture '%s' (expected e.g. sm_90)", arch);
  return -1;
}

/* ---- code generation and module loading ------------------------------------------------ */
/* Load PTX through the driver JIT; the JIT's error log goes into the message. */
static int load_ptx(cu_state *s, const char *ptx, const char *why_not_cubin, gc_diags *d) {
  char log[8192] = "";
  CUjit_option o[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *v[] = {log, (void *)(uintptr_t)sizeof log};
  CUresult r = s->cu->ModuleLoadDataEx(&s->mod, ptx, 2, o, v);
  if (r == CUDA_SUCCESS) {
    s->from_ptx = 1;
    return 0;
  }
  s->mod = NULL;
  int ver = s->cu->version;
  gc_error_at(d, gc_cu_status(r), (gc_loc){0, 0},
              "cuModuleLoadDataEx failed: %s (%s) loading PTX for sm_%d on %s (sm_%d, driver CUDA "
              "%d.%d)%s%s%s%s",
              gc_cu_error_name(s->cu, r), gc_cu_error_string(s->cu, r), s->sm, s->device_name,
              s->device_sm, ver / 1000, ver % 1000 / 10, log[0] ? ": " : "", log,
              why_not_cubin ? "; cubin not used: " : "", why_not_cubin ? why_not_cubin : "");
  return -1;
}

/* Generate code for the plan per opts->codegen and load it as s->mod. */
static int build_module(cu_state *s, gc_exec *exe, graphc_codegen_t cg, gc_sbuf *st,
                        gc_diags *d) {
  char *ptx = NULL, *why = NULL;
  void *cubin = NULL;
  size_t cubin_len = 0;
  int rc = -1;
  double t0 = now_ms(), t_print = 0;
  if (cg == GRAPHC_CODEGEN_LLVM) {
    if (gc_llvm_ptx(s->plan->kir, s->sm, &ptx, NULL, d) != 0) goto out;
    double t1 = now_ms();
    gc_sbuf_printf(st, "cuda: llvm nvptx %.2f ms\n", t1 - t0);
    gc_diags jd;   /* a failed nvJitLink is not fatal: the driver JITs the PTX */
    gc_diags_init(&jd, "", NULL, 0);
    if (gc_ptx_to_cubin(ptx, s->sm, &cubin, &cubin_len, &jd) != 0) {
      why = strdup(jd.n && jd.items[0].msg ? jd.items[0].msg : "nvJitLink failed");
      free(cubin);
      cubin = NULL;
    }
    gc_diags_free(&jd);
    gc_sbuf_printf(st, "cuda: nvjitlink %.2f ms\n", now_ms() - t1);
  } else {
    gc_sbuf src = {0};
    gc_cuda_c_print(&src, s->plan->kir);
    t_print = now_ms();
    if (src.failed || !src.data) {
      gc_sbuf_free(&src);
      gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory printing CUDA C");
      goto out;
    }
    int nr = gc_nvrtc_compile(src.data, s->sm, &ptx, &cubin, &cubin_len, d);
    gc_sbuf_free(&src);
    gc_sbuf_printf(st, "cuda: codegen cuda-c %.2f ms, nvrtc %s %.2f ms\n", t_print - t0,
                   gc_nvrtc_version(), now_ms() - t_print);
    if (nr != 0) goto out;
  }
  double t2 = now_ms();
  if (cubin) {
    CUresult r = s->cu->ModuleLoadData(&s->mod, cubin);
    if (r != CUDA_SUCCESS) {
      s->mod = NULL;
      char msg[512];
      snprintf(msg, sizeof msg, "cuModuleLoadData(cubin sm_%d) failed: %s (%s)", s->sm,
               gc_cu_error_name(s->cu, r), gc_cu_error_string(s->cu, r));
      why = strdup(msg);
    }
  }
  if (!s->mod) {
    if (!ptx) {
      gc_error_at(d, GRAPHC_STATUS_INTERNAL, (gc_loc){0, 0}, "no PTX to load: %s",
                  why ? why : "code generation produced nothing");
      goto out;
    }
    if (load_ptx(s, ptx, why, d) != 0) goto out;
    gc_sbuf_printf(st, "cuda: module loaded from PTX (driver JIT) because %s\n",
                   why ? why : "no cubin was made");
  } else {
    gc_sbuf_printf(st, "cuda: module loaded from cubin sm_%d (%zu bytes)\n", s->sm, cubin_len);
  }
  gc_sbuf_printf(st, "cuda: module load %.2f ms\n", now_ms() - t2);
  rc = 0;
out:
  free(ptx);
  free(cubin);
  free(why);
  (void)exe;
  return rc;
}

/* Functions and launch geometry of every kernel, argument slots allocated. */
static int setup_kernels(cu_state *s, gc_diags *d) {
  const kir_module *km = s->plan->kir;
  s->kernels = calloc((size_t)km->n_kernels + 1, sizeof *s->kernels);
  if (!s->kernels) goto oom;
  for (int i = 0; i < km->n_kernels; i++) {
    cu_kernel *ck = &s->kernels[i];
    const kir_kernel *k = km->kernels[i];
    ck->k = k;
    if (GC_CU_WHAT(s->cu, d, k->name, ModuleGetFunction, &ck->fn, s->mod, k->name)) return -1;
    int fn_max = 0;
    if (GC_CU_WHAT(s->cu, d, k->name, FuncGetAttribute, &fn_max,
                   CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, ck->fn))
      return -1;
    int64_t n = k->launch.n;
    int64_t grid;
    int block = k->launch.block;
    if (k->launch.kind == KIR_LAUNCH_BLOCKS) {
      /* The group size is part of the kernel's meaning: it cannot shrink. */
      if (block < 1 || block > fn_max) {
        gc_error_at(d, GRAPHC_STATUS_COMPILE_ERROR, (gc_loc){0, 0},
                    "kernel %s needs %d threads per block, but its compiled code allows at most %d "
                    "on %s",
                    k->name, block, fn_max, s->device_name);
        return -1;
      }
      grid = n < (int64_t)s->num_sms * 32 ? n : (int64_t)s->num_sms * 32;
    } else {
      if (block < 1) block = 256;
      if (block > fn_max) block = fn_max >= 32 ? fn_max & ~31 : fn_max;
      if (block < 1) block = 1;
      int64_t need = (n + block - 1) / block;
      int per_sm = s->max_threads_sm / block;
      int64_t cap = (int64_t)s->num_sms * (per_sm > 0 ? per_sm : 1);
      grid = need < cap ? need : cap;
    }
    if (grid < 1) grid = 1;
    if (grid > INT32_MAX) grid = INT32_MAX;
    ck->grid = (unsigned)grid;
    ck->block = (unsigned)block;
    ck->args = calloc((size_t)k->n_params + 1, sizeof *ck->args);
    ck->argp = calloc((size_t)k->n_params + 1, sizeof *ck->argp);
    if (!ck->args || !ck->argp) goto oom;
    for (int p = 0; p < k->n_params; p++) ck->argp[p] = &ck->args[p];
  }
  return 0;
oom:
  gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
  return -1;
}

/* ---- device memory ------------------------------------------------------------------ */
/* cuMemAlloc with a message that says what the memory was for. */
static int dev_alloc(cu_state *s, CUdeviceptr *p, size_t bytes, const char *what, gc_diags *d) {
  *p = 0;
  if (bytes == 0) return 0;
  CUresult r = s->cu->MemAlloc(p, bytes);
  if (r == CUDA_SUCCESS) return 0;
  *p = 0;
  char b[64], t[64];
  fmt_bytes(b, sizeof b, (double)bytes);
  fmt_bytes(t, sizeof t, (double)s->total_mem);
  gc_error_at(d, gc_cu_status(r), (gc_loc){0, 0},
              "cuMemAlloc failed: %s (%s) allocating %s for %s on %s (%s total)",
              gc_cu_error_name(s->cu, r), gc_cu_error_string(s->cu, r), b, what, s->device_name, t);
  return -1;
}

/* Arena, constants (uploaded once) and the executable's I/O buffers. */
static int setup_memory(cu_state *s, gc_exec *exe, gc_sbuf *st, gc_diags *d) {
  const gc_plan *p = s->plan;
  if (dev_alloc(s, &s->arena, align_up(p->arena_bytes), "the intermediate-buffer arena", d))
    return -1;
  s->const_off = calloc((size_t)p->n_consts + 1, sizeof *s->const_off);
  size_t ni = exe->n_inputs, no = exe->n_outputs;
  s->in_buf = calloc(ni + 1, sizeof *s->in_buf);
  s->out_buf = calloc(no + 1, sizeof *s->out_buf);
  s->bound_in = calloc(ni + 1, sizeof *s->bound_in);
  s->bound_out = calloc(no + 1, sizeof *s->bound_out);
  s->graph_in = calloc(ni + 1, sizeof *s->graph_in);
  s->graph_out = calloc(no + 1, sizeof *s->graph_out);
  if (!s->const_off || !s->in_buf || !s->out_buf || !s->bound_in || !s->bound_out ||
      !s->graph_in || !s->graph_out) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
    return -1;
  }
  size_t cbytes = 0;
  for (int i = 0; i < p->n_consts; i++) {
    s->const_off[i] = cbytes;
    cbytes += align_up(p->consts[i].bytes);
  }
  if (dev_alloc(s, &s->consts, cbytes, "weights and constants", d)) return -1;
  for (int i = 0; i < p->n_consts; i++)
    if (p->consts[i].bytes &&
        GC_CU_WHAT(s->cu, d, p->consts[i].name, MemcpyHtoD, s->consts + s->const_off[i],
                   p->consts[i].data, p->consts[i].bytes))
      return -1;
  size_t iobytes = 0;
  for (size_t i = 0; i < ni; i++) iobytes += align_up(exe->inputs[i].nbytes);
  for (size_t i = 0; i < no; i++) iobytes += align_up(exe->outputs[i].nbytes);
  if (dev_alloc(s, &s->io, iobytes, "inputs and outputs", d)) return -1;
  size_t off = 0;
  for (size_t i = 0; i < ni; i++) {
    s->in_buf[i] = s->io + off;
    off += align_up(exe->inputs[i].nbytes);
  }
  for (size_t i = 0; i < no; i++) {
    s->out_buf[i] = s->io + off;
    off += align_up(exe->outputs[i].nbytes);
  }
  char a[64], c[64], io[64];
  fmt_bytes(a, sizeof a, (double)p->arena_bytes);
  fmt_bytes(c, sizeof c, (double)cbytes);
  fmt_bytes(io, sizeof io, (double)iobytes);
  gc_sbuf_printf(st, "cuda: device memory: arena %s, constants %s (%d), inputs+outputs %s\n", a,
                 c, p->n_consts, io);
  return 0;
}

/* Point every kernel argument at the given I/O buffers (TEMP and CONST fixed). */
static void bind_io(cu_state *s, gc_exec *exe, const CUdeviceptr *in, const CUdeviceptr *out) {
  const gc_plan *p = s->plan;
  memcpy(s->bound_in, in, exe->n_inputs * sizeof *in);
  memcpy(s->bound_out, out, exe->n_outputs * sizeof *out);
  for (int i = 0; i < p->kir->n_kernels; i++) {
    cu_kernel *ck = &s->kernels[i];
    for (int j = 0; j < ck->k->n_params; j++) {
      const kir_param *kp = &ck->k->params[j];
      if (kp->kind == KIR_PARAM_I64) {
        /* lower.h does not say where a scalar's value lives; no emitter makes
         * one yet. Convention here: the value is in `binding`. */
        ck->args[j] = (uint64_t)(int64_t)kp->binding;
        continue;
      }
      GC_ASSERT(kp->binding >= 0 && kp->binding < p->n_buffers);
      const gc_plan_buffer *b = &p->buffers[kp->binding];
      CUdeviceptr v = 0;
      switch (b->kind) {
        case GC_BUF_INPUT: v = in[b->index]; break;
        case GC_BUF_OUTPUT: v = out[b->index]; break;
        case GC_BUF_CONST: v = s->consts + s->const_off[b->index]; break;
        case GC_BUF_TEMP: v = s->arena + b->offset; break;
      }
      ck->args[j] = (uint64_t)v;
    }
  }
}

/* ---- launching ---------------------------------------------------------------------- */
/* Launch kernel `i` of the plan's launch order on the stream. */
static int launch_one(cu_state *s, int i, gc_diags *d) {
  cu_kernel *ck = &s->kernels[s->plan->launches[i]];
  if (ck->k->launch.n <= 0) return 0;
  return GC_CU_WHAT(s->cu, d, ck->k->name, LaunchKernel, ck->fn, ck->grid, 1, 1, ck->block, 1, 1,
                    0, s->stream, ck->argp, NULL);
}

/* Every launch in order, directly on the stream; with GRAPHC_CUDA_SYNC=1 each
 * is followed by a synchronize so a failing kernel is named. */
static int launch_eager(cu_state *s, gc_diags *d) {
  for (int i = 0; i < s->plan->n_launches; i++) {
    if (launch_one(s, i, d)) return -1;
    if (s->sync_each) {
      char what[256];
      snprintf(what, sizeof what, "after kernel %s, launch %d of %d",
               s->kernels[s->plan->launches[i]].k->name, i + 1, s->plan->n_launches);
      if (GC_CU_WHAT(s->cu, d, what, StreamSynchronize, s->stream)) return -1;
    }
  }
  return 0;
}

/* Capture the launches (bound to the current pointers) into a CUDA graph and
 * instantiate it, or update the existing instantiation in place. */
static int capture_graph(cu_state *s, gc_exec *exe, gc_diags *d) {
  const gc_cu_driver *cu = s->cu;
  if (GC_CU(cu, d, StreamBeginCapture, s->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)) return -1;
  int bad = 0;
  for (int i = 0; i < s->plan->n_launches && !bad; i++) bad = launch_one(s, i, d);
  CUgraph g = NULL;
  CUresult r = cu->StreamEndCapture(s->stream, &g);
  if (bad) {
    if (g) cu->GraphDestroy(g);
    return -1;
  }
  if (gc_cu_check(cu, d, r, "cuStreamEndCapture", NULL)) return -1;
  int rc = 0;
  if (s->gexec) {
    CUgraphExecUpdateResultInfo info;
    memset(&info, 0, sizeof info);
    if (cu->GraphExecUpdate(s->gexec, g, &info) != CUDA_SUCCESS) {
      cu->GraphExecDestroy(s->gexec);
      s->gexec = NULL;
    }
  }
  if (!s->gexec) rc = GC_CU(cu, d, GraphInstantiate, &s->gexec, g, 0);
  if (rc) s->gexec = NULL;
  cu->GraphDestroy(g);
  if (rc == 0) {
    memcpy(s->graph_in, s->bound_in, exe->n_inputs * sizeof *s->graph_in);
    memcpy(s->graph_out, s->bound_out, exe->n_outputs * sizeof *s->graph_out);
  }
  return rc;
}

/* The plan's launches on the stream, as a graph replay or eagerly. */
static int launch_all(cu_state *s, gc_exec *exe, gc_diags *d) {
  if (s->plan->n_launches == 0) return 0;
  if (s->eager) return launch_eager(s, d);
  int same = s->gexec && memcmp(s->graph_in, s->bound_in, exe->n_inputs * sizeof *s->graph_in) == 0 &&
             memcmp(s->graph_out, s->bound_out, exe->n_outputs * sizeof *s->graph_out) == 0;
  if (!same && capture_graph(s, exe, d)) return -1;
  return GC_CU(s->cu, d, GraphLaunch, s->gexec, s->stream);
}

/* Synchronize the stream; a failure here is an error of some kernel. */
static int sync_stream(cu_state *s, gc_diags *d) {
  CUresult r = s->cu->StreamSynchronize(s->stream);
  if (r == CUDA_SUCCESS) return 0;
  gc_error_at(d, gc_cu_status(r), (gc_loc){0, 0},
              "cuStreamSynchronize failed: %s (%s) [a kernel failed while running; set "
              "GRAPHC_CUDA_SYNC=1 to find which]",
              gc_cu_error_name(s->cu, r), gc_cu_error_string(s->cu, r));
  return -1;
}

/* ---- the backend table ---------------------------------------------------------------- */
static void cuda_release(gc_exec *exe);

/* Compile the executable's graph for the device and set up everything runs need. */
static graphc_status_t cuda_prepare(gc_exec *exe, const graphc_compile_options_t *opts,
                                    gc_diags *d) {
  const gc_cu_driver *cu = gc_cu_driver_get(d);
  if (!cu) return GRAPHC_STATUS_BACKEND_UNAVAILABLE;
  cu_state *s = calloc(1, sizeof *s);
  if (!s) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
    return GRAPHC_STATUS_OUT_OF_MEMORY;
  }
  exe->state = s;
  s->cu = cu;
  const char *sync = getenv("GRAPHC_CUDA_SYNC");
  s->sync_each = sync && strcmp(sync, "1") == 0;
  s->eager = (opts && opts->eager) || s->sync_each;
  graphc_codegen_t cg = opts ? opts->codegen : GRAPHC_CODEGEN_DEFAULT;
  if (cg == GRAPHC_CODEGEN_DEFAULT) cg = GRAPHC_CODEGEN_NVRTC;
  if (cg != GRAPHC_CODEGEN_NVRTC && cg != GRAPHC_CODEGEN_LLVM) {
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0}, "unknown codegen %d", (int)cg);
    return GRAPHC_STATUS_INVALID_ARGUMENT;
  }

  if (GC_CU(cu, d, DeviceGet, &s->dev, 0)) return d->status;
  if (GC_CU(cu, d, DevicePrimaryCtxRetain, &s->ctx, s->dev)) return d->status;
  s->ctx_retained = 1;
  if (ctx_push(s, d)) return d->status;
  gc_sbuf st = {0};
  graphc_status_t rc = GRAPHC_STATUS_OK;
  if (query_device(s, d) || (s->sm = pick_sm(s, opts ? opts->arch : NULL, d)) < 0) goto fail;

  kir_target t;
  kir_target_cuda(&t, s->sm);
  t.sm = s->sm;
  t.warp_size = s->warp;
  t.max_threads = s->max_threads;
  t.num_sms = s->num_sms;
  t.shared_bytes = s->shared_bytes;
  gc_sbuf_printf(&st, "cuda: device 0 \"%s\" sm_%d, %d SMs, driver CUDA %d.%d; code for sm_%d via %s%s\n",
                 s->device_name, s->device_sm, s->num_sms, cu->version / 1000,
                 cu->version % 1000 / 10, s->sm, graphc_codegen_name(cg),
                 s->eager ? ", eager launches" : ", CUDA graph replay");

  double t0 = now_ms();
  s->plan = gc_lower(exe->graph, exe->weights, &t, d);
  if (!s->plan || d->n_errors) goto fail;
  gc_sbuf_printf(&st, "cuda: lower %.2f ms\n", now_ms() - t0);
  if (build_module(s, exe, cg, &st, d) || setup_kernels(s, d)) goto fail;
  if (GC_CU(cu, d, StreamCreate, &s->stream, CU_STREAM_NON_BLOCKING)) goto fail;
  if (setup_memory(s, exe, &st, d)) goto fail;
  bind_io(s, exe, s->in_buf, s->out_buf);
  gc_sbuf_printf(&st, "cuda: %d kernels, %d launches\n", s->plan->kir->n_kernels,
                 s->plan->n_launches);
  for (int i = 0; i < s->plan->kir->n_kernels; i++) {
    const cu_kernel *ck = &s->kernels[i];
    gc_sbuf_printf(&st, "cuda:   %-32s %s n=%" PRId64 " grid=%u block=%u\n", ck->k->name,
                   ck->k->launch.kind == KIR_LAUNCH_BLOCKS ? "blocks" : "items ",
                   ck->k->launch.n, ck->grid, ck->block);
  }
  gc_plan_stats(&st, s->plan);
  ctx_pop(s);
  if (st.data) gc_sbuf_puts(&exe->stats, st.data);
  gc_sbuf_free(&st);
  return GRAPHC_STATUS_OK;
fail:
  ctx_pop(s);
  gc_sbuf_free(&st);
  rc = d->n_errors ? d->status : GRAPHC_STATUS_INTERNAL;
  if (!d->n_errors) gc_error_at(d, rc, (gc_loc){0, 0}, "CUDA backend: prepare failed");
  return rc;
}

/* Run with host tensors: copies in, launches, copies out, one synchronize. */
static graphc_status_t cuda_run(gc_exec *exe, const graphc_tensor_t *in, graphc_tensor_t *out,
                                gc_diags *d) {
  cu_state *s = exe->state;
  if (!s || !s->plan) {
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0}, "executable is not prepared");
    return GRAPHC_STATUS_INVALID_ARGUMENT;
  }
  if (ctx_push(s, d)) return d->status;
  const gc_cu_driver *cu = s->cu;
  int bad = 0;
  bind_io(s, exe, s->in_buf, s->out_buf);
  for (size_t i = 0; i < exe->n_inputs && !bad; i++)
    bad = GC_CU_WHAT(cu, d, exe->inputs[i].name, MemcpyHtoDAsync, s->in_buf[i], in[i].data,
                     exe->inputs[i].nbytes, s->stream);
  if (!bad) bad = launch_all(s, exe, d);
  for (size_t i = 0; i < exe->n_outputs && !bad; i++)
    bad = GC_CU_WHAT(cu, d, exe->outputs[i].name, MemcpyDtoHAsync, out[i].data, s->out_buf[i],
                     exe->outputs[i].nbytes, s->stream);
  /* Synchronize even after a failed enqueue: host buffers must not be in flight. */
  CUresult r = cu->StreamSynchronize(s->stream);
  if (!bad && r != CUDA_SUCCESS) {
    gc_error_at(d, gc_cu_status(r), (gc_loc){0, 0},
                "cuStreamSynchronize failed: %s (%s) [a kernel failed while running; set "
                "GRAPHC_CUDA_SYNC=1 to find which]",
                gc_cu_error_name(cu, r), gc_cu_error_string(cu, r));
    bad = 1;
  }
  ctx_pop(s);
  return bad ? (d->n_errors ? d->status : GRAPHC_STATUS_DEVICE_ERROR) : GRAPHC_STATUS_OK;
}

/* Run with the caller's device pointers bound as the I/O buffers (no copies). */
static graphc_status_t cuda_run_device(gc_exec *exe, const graphc_tensor_t *in,
                                       graphc_tensor_t *out, gc_diags *d) {
  cu_state *s = exe->state;
  if (!s || !s->plan) {
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0}, "executable is not prepared");
    return GRAPHC_STATUS_INVALID_ARGUMENT;
  }
  CUdeviceptr *pin = calloc(exe->n_inputs + 1, sizeof *pin);
  CUdeviceptr *pout = calloc(exe->n_outputs + 1, sizeof *pout);
  if (!pin || !pout) {
    free(pin);
    free(pout);
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
    return GRAPHC_STATUS_OUT_OF_MEMORY;
  }
  for (size_t i = 0; i < exe->n_inputs; i++) pin[i] = (CUdeviceptr)(uintptr_t)in[i].data;
  for (size_t i = 0; i < exe->n_outputs; i++) pout[i] = (CUdeviceptr)(uintptr_t)out[i].data;
  graphc_status_t rc = GRAPHC_STATUS_OK;
  if (ctx_push(s, d)) {
    rc = d->status;
  } else {
    bind_io(s, exe, pin, pout);
    if (launch_all(s, exe, d) || sync_stream(s, d)) rc = d->n_errors ? d->status : GRAPHC_STATUS_DEVICE_ERROR;
    ctx_pop(s);
  }
  free(pin);
  free(pout);
  return rc;
}

/* Free everything prepare made; tolerates any partially prepared state. */
static void cuda_release(gc_exec *exe) {
  cu_state *s = exe->state;
  if (!s) return;
  exe->state = NULL;
  const gc_cu_driver *cu = s->cu;
  if (s->ctx_retained) {
    /* Errors are ignored here: after a sticky kernel error every call fails,
     * and the primary context's release frees what is left. */
    CUcontext dummy;
    if (cu->CtxPushCurrent(s->ctx) == CUDA_SUCCESS) {
      if (s->stream) cu->StreamSynchronize(s->stream);
      if (s->gexec) cu->GraphExecDestroy(s->gexec);
      if (s->stream) cu->StreamDestroy(s->stream);
      if (s->arena) cu->MemFree(s->arena);
      if (s->consts) cu->MemFree(s->consts);
      if (s->io) cu->MemFree(s->io);
      if (s->mod) cu->ModuleUnload(s->mod);
      cu->CtxPopCurrent(&dummy);
    }
    cu->DevicePrimaryCtxRelease(s->dev);
  }
  if (s->kernels && s->plan)
    for (int i = 0; i < s->plan->kir->n_kernels; i++) {
      free(s->kernels[i].args);
      free(s->kernels[i].argp);
    }
  free(s->kernels);
  gc_plan_free(s->plan);
  free(s->const_off);
  free(s->in_buf);
  free(s->out_buf);
  free(s->bound_in);
  free(s->bound_out);
  free(s->graph_in);
  free(s->graph_out);
  free(s);
}

const gc_backend gc_backend_cuda = {
    .name = "cuda",
    .prepare = cuda_prepare,
    .run = cuda_run,
    .run_device = cuda_run_device,
    .release = cuda_release,
};

/* 1 when the driver loads, initializes and has a device. */
int gc_cuda_available(void) { return gc_cu_driver_get(NULL) != NULL; }

/* Like gc_cuda_available, saying why not in d. */
int gc_cuda_check_available(gc_diags *d) { return gc_cu_driver_get(d) != NULL; }

/* ---- internals for graphc bench and the GPU tests (cuda_backend.h) -------------------- */
/* The state of a CUDA executable, or NULL (reported) when exe is not one. */
static cu_state *cuda_state(const gc_exec *exe, gc_diags *d) {
  if (exe && exe->backend == &gc_backend_cuda && exe->state) return exe->state;
  if (d)
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0},
                "not an executable compiled for the cuda backend");
  return NULL;
}

/* Device, arch and plan facts of a CUDA executable (for graphc bench and tests). */
graphc_status_t gc_cuda_exec_info(const gc_exec *exe, gc_cuda_info *info) {
  cu_state *s = cuda_state(exe, NULL);
  if (!s || !info) return GRAPHC_STATUS_INVALID_ARGUMENT;
  memset(info, 0, sizeof *info);
  snprintf(info->device, sizeof info->device, "%s", s->device_name);
  info->sm = s->sm;
  info->device_sm = s->device_sm;
  info->num_sms = s->num_sms;
  info->driver_version = s->cu->version;
  info->total_mem = s->total_mem;
  info->plan = s->plan;
  info->from_ptx = s->from_ptx;
  info->eager = s->eager;
  return GRAPHC_STATUS_OK;
}

/* Grid and block size kernel `kernel` is launched with. */
graphc_status_t gc_cuda_kernel_geometry(const gc_exec *exe, int kernel, unsigned *grid,
                                        unsigned *block) {
  cu_state *s = cuda_state(exe, NULL);
  if (!s || kernel < 0 || kernel >= s->plan->kir->n_kernels) return GRAPHC_STATUS_INVALID_ARGUMENT;
  *grid = s->kernels[kernel].grid;
  *block = s->kernels[kernel].block;
  return GRAPHC_STATUS_OK;
}

/* Create n events (timing enabled); 0 on success, else destroys what it made. */
static int make_events(cu_state *s, CUevent *ev, int n, gc_diags *d) {
  for (int i = 0; i < n; i++)
    if (GC_CU(s->cu, d, EventCreate, &ev[i], CU_EVENT_DEFAULT)) {
      while (i-- > 0) s->cu->EventDestroy(ev[i]);
      return -1;
    }
  return 0;
}

/* Destroy n events (NULL entries skipped). */
static void free_events(cu_state *s, CUevent *ev, int n) {
  for (int i = 0; i < n; i++)
    if (ev[i]) s->cu->EventDestroy(ev[i]);
}

/* Whole-run times: events around each graph replay (or eager run) after warm-up. */
graphc_status_t gc_cuda_time_runs(gc_exec *exe, int warmup, int runs, float *ms, gc_diags *d) {
  cu_state *s = cuda_state(exe, d);
  if (!s) return GRAPHC_STATUS_INVALID_ARGUMENT;
  if (ctx_push(s, d)) return d->status;
  CUevent ev[2] = {0, 0};
  int bad = make_events(s, ev, 2, d);
  bind_io(s, exe, s->in_buf, s->out_buf);
  for (int i = 0; i < warmup && !bad; i++) bad = launch_all(s, exe, d);
  if (!bad) bad = sync_stream(s, d);
  for (int i = 0; i < runs && !bad; i++) {
    bad = GC_CU(s->cu, d, EventRecord, ev[0], s->stream) || launch_all(s, exe, d) ||
          GC_CU(s->cu, d, EventRecord, ev[1], s->stream) ||
          GC_CU(s->cu, d, EventSynchronize, ev[1]) ||
          GC_CU(s->cu, d, EventElapsedTime, &ms[i], ev[0], ev[1]);
  }
  if (bad) s->cu->StreamSynchronize(s->stream);
  if (ev[0]) free_events(s, ev, 2);
  ctx_pop(s);
  return bad ? d->status : GRAPHC_STATUS_OK;
}

/* Per-launch times: eager launches with an event recorded between each two. */
graphc_status_t gc_cuda_time_kernels(gc_exec *exe, int runs, float *ms, gc_diags *d) {
  cu_state *s = cuda_state(exe, d);
  if (!s) return GRAPHC_STATUS_INVALID_ARGUMENT;
  int n = s->plan->n_launches;
  CUevent *ev = calloc((size_t)n + 1, sizeof *ev);
  if (!ev) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
    return GRAPHC_STATUS_OUT_OF_MEMORY;
  }
  if (ctx_push(s, d)) {
    free(ev);
    return d->status;
  }
  int bad = make_events(s, ev, n + 1, d);
  int made = !bad;
  bind_io(s, exe, s->in_buf, s->out_buf);
  for (int r = 0; r < runs && !bad; r++) {
    for (int i = 0; i < n && !bad; i++)
      bad = GC_CU(s->cu, d, EventRecord, ev[i], s->stream) || launch_one(s, i, d);
    if (!bad) bad = GC_CU(s->cu, d, EventRecord, ev[n], s->stream) || sync_stream(s, d);
    for (int i = 0; i < n && !bad; i++)
      bad = GC_CU(s->cu, d, EventElapsedTime, &ms[(size_t)r * n + i], ev[i], ev[i + 1]);
  }
  if (bad) s->cu->StreamSynchronize(s->stream);
  if (made) free_events(s, ev, n + 1);
  free(ev);
  ctx_pop(s);
  return bad ? d->status : GRAPHC_STATUS_OK;
}

/* Device copy bandwidth: `reps` cuMemcpyDtoDAsync of `bytes` between events. */
graphc_status_t gc_cuda_copy_bandwidth(gc_exec *exe, size_t bytes, int reps, double *gbps,
                                       size_t *bytes_used, gc_diags *d) {
  cu_state *s = cuda_state(exe, d);
  if (!s) return GRAPHC_STATUS_INVALID_ARGUMENT;
  if (ctx_push(s, d)) return d->status;
  const gc_cu_driver *cu = s->cu;
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
      ctx_pop(s);
      return d->status;
    }
    bytes /= 2;
  }
  CUevent ev[2] = {0, 0};
  int bad = make_events(s, ev, 2, d);
  float ms = 0;
  if (!bad)
    bad = GC_CU(cu, d, MemsetD8Async, src, 1, bytes, s->stream) ||
          GC_CU(cu, d, MemcpyDtoDAsync, dst, src, bytes, s->stream) ||  /* warm-up */
          GC_CU(cu, d, EventRecord, ev[0], s->stream);
  for (int i = 0; i < reps && !bad; i++)
    bad = GC_CU(cu, d, MemcpyDtoDAsync, dst, src, bytes, s->stream);
  if (!bad)
    bad = GC_CU(cu, d, EventRecord, ev[1], s->stream) || GC_CU(cu, d, EventSynchronize, ev[1]) ||
          GC_CU(cu, d, EventElapsedTime, &ms, ev[0], ev[1]);
  cu->StreamSynchronize(s->stream);
  if (ev[0]) free_events(s, ev, 2);
  cu->MemFree(src);
  cu->MemFree(dst);
  ctx_pop(s);
  if (bad) return d->status;
  *gbps = ms > 0 ? 2.0 * (double)bytes * reps / (ms * 1e-3) / 1e9 : 0;
  if (bytes_used) *bytes_used = bytes;
  return GRAPHC_STATUS_OK;
}
