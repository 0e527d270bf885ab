/* cuda_backend.c - the CUDA backend's compile half, and the backend table.
 *
 *   prepare:  primary context of device 0 (cuda_exec.c) -> target from device
 *             properties -> gc_lower -> gc_cuda_codegen: CUDA C + NVRTC (or LLVM
 *             NVPTX + nvJitLink) -> cubin + PTX, through the JIT cache ->
 *             gc_launch_plan_build -> gc_cu_exec_load (cuda_exec.c: module,
 *             arena, consts, stream; runs replay the launches as a CUDA graph).
 *   run / run_device / release: cuda_exec.c.
 *   bundles:  gc_cuda_build_bundle lowers and compiles the same graph once per
 *             architecture, without a device, and writes a .gcx (bundle.c).
 *
 * This half needs NVRTC, nvJitLink and LLVM and stays in libgraphc; the load
 * and run half (cuda_exec.c) needs only the driver and is also built into
 * libgraphc_rt. They meet at gc_launch_plan (launch_plan.h) and gc_cu_image.
 *
 * JIT cache key (cache.h): the generated CUDA C (the whole module as one
 * translation unit: a complete rendering of the Kernel IR), plus for the LLVM
 * path the Kernel IR dump; sm; codegen path; NVRTC, or LLVM and nvJitLink,
 * versions; graphc's version; and the identity (size, mtime) of the library
 * holding the code generators, so a rebuilt graphc never reads entries made by
 * another build. Values: the cubin and the PTX.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <llvm-c/Core.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "runtime/bundle.h"
#include "driver/cuda_backend.h"
#include "driver/launch_build.h"
#include "runtime/cuda_driver.h"
#include "runtime/cuda_exec.h"
#include "runtime/states.h"
#include "codegen/codegen.h"
#include "driver/settings.h"

typedef struct cu_state {
  gc_cu_exec *x;
  gc_plan *plan;
  gc_launch_plan lp;
  int sm;                  /* compiled for */
  int cache_hit;
} cu_state;

/* Monotonic milliseconds, for stage timings. */
static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Report out of memory; returns -1. */
static int oom(gc_diags *d) {
  gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
  return -1;
}

/* Compute capability from --arch ("sm_90" -> 90), else the device's. */
static int pick_sm(int device_sm, const char *arch, gc_diags *d) {
  if (!arch || !*arch) return device_sm;
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

/* ---- code generation and the JIT cache ------------------------------------------------- */
/* Add a string field to key. */
static void key_str(gc_hash128 *key, const char *name, const char *v) {
  gc_hash128_field(key, name, v, strlen(v));
}

/* The key of km for codegen cg: its CUDA C text `src` (NVRTC) or its Kernel IR (LLVM),
 * and for LLVM the PTX compiler that toolkit tc has. */
static void cache_key(const kir_module *km, const gc_sbuf *src, int sm, graphc_codegen_t cg,
                      const gc_toolchain *tc, gc_hash128 *key) {
  gc_hash128_init(key);
  char buf[64];
  gc_cache_key_identity(key);
  snprintf(buf, sizeof buf, "sm_%d", sm);
  key_str(key, "arch", buf);
  if (cg == GRAPHC_CODEGEN_LLVM) {
    unsigned a = 0, b = 0, c = 0;
    LLVMGetVersion(&a, &b, &c);
    snprintf(buf, sizeof buf, "llvm %u.%u.%u", a, b, c);
    key_str(key, "codegen", buf);
    char pc[4200];  /* ptxas (whole-program) and nvJitLink make different code */
    gc_ptx_compiler_id(tc, pc, sizeof pc);
    key_str(key, "ptx compiler", pc);
    /* the LLVM IR is made from the Kernel IR by this build: the Kernel IR text is the code */
    gc_sbuf kir = {0};
    for (int i = 0; i < km->n_kernels; i++) kir_print(&kir, km->kernels[i]);
    gc_hash128_field(key, "kir", kir.data ? kir.data : "", kir.len);
    gc_sbuf_free(&kir);
  } else {
    snprintf(buf, sizeof buf, "nvrtc %s", gc_nvrtc_version());
    key_str(key, "codegen", buf);
    gc_hash128_field(key, "cuda", src->data ? src->data : "", src->len);
  }
}

void gc_cuda_cache_key(const kir_module *km, int sm, graphc_codegen_t cg, const gc_settings *s,
                       gc_hash128 *key) {
  gc_sbuf src = {0};
  gc_toolchain tc;
  gc_settings_toolchain(s, &tc);
  cg = gc_codegen_resolve(cg);
  if (cg != GRAPHC_CODEGEN_LLVM) gc_cuda_c_print(&src, km);
  cache_key(km, &src, sm, cg, &tc, key);
  gc_sbuf_free(&src);
}

void gc_cuda_code_free(gc_cuda_code *c) {
  if (!c) return;
  free(c->cubin);
  free(c->ptx);
  free(c->why_no_cubin);
  memset(c, 0, sizeof *c);
}

/* Compile without the cache: NVRTC on src (km printed), or LLVM NVPTX then ptxas or
 * nvJitLink, with the toolkit tc (and the driver library rt names, for nvJitLink). */
static int compile_module(const kir_module *km, const char *src, int sm, graphc_codegen_t cg,
                          const gc_toolchain *tc, const gc_rt_settings *rt, gc_cuda_code *out,
                          gc_sbuf *st, gc_diags *d) {
  double t0 = now_ms();
  if (cg == GRAPHC_CODEGEN_LLVM) {
    /* nvJitLink calls cuInit itself (for NVIDIA's disk cache), which takes 100-230 ms on
     * an idle H200: when the driver is not open yet, open it beside the LLVM stage. The
     * ptxas program (the default, codegen/ptxas.c) needs no driver: a bundle compile then
     * never opens it. */
    char px[4096];
    int nvjitlink = gc_ptx_compiler_pick(tc, px, sizeof px) == GC_PTXC_NVJITLINK;
    void *pre = nvjitlink ? gc_cuda_prefetch_start(rt) : NULL;
    gc_llvm_ptx_opts lo = {0, 1};  /* automatic threads, identical kernels compiled once */
    gc_llvm_times lt;
    if (gc_llvm_ptx_ex(km, sm, &lo, &out->ptx, &lt, tc, d) != 0) {
      gc_cuda_prefetch_join(pre);
      return -1;
    }
    double t1 = now_ms();
    if (st)
      gc_sbuf_printf(st,
                     "cuda: llvm nvptx %.2f ms (%d kernels, %d compiled, %d threads; cpu ms: emit %.2f,"
                     " libdevice %.2f, optimize O3 %.2f, codegen %.2f)\n",
                     t1 - t0, lt.kernels, lt.compiled, lt.threads, lt.emit, lt.libdevice,
                     lt.optimize, lt.codegen);
    gc_diags jd;   /* no cubin is not fatal: the driver JITs the PTX */
    gc_diags_init(&jd, "", NULL, 0);
    const char *via = "nvjitlink";
    if (gc_ptx_to_cubin_ex(out->ptx, gc_module_sm(km, sm), &out->cubin, &out->cubin_len, &via, tc,
                           &jd) != 0) {
      out->why_no_cubin = strdup(jd.n && jd.items[0].msg ? jd.items[0].msg : "nvJitLink failed");
      free(out->cubin);
      out->cubin = NULL;
      out->cubin_len = 0;
    }
    gc_diags_free(&jd);
    gc_cuda_prefetch_join(pre);
    if (st) gc_sbuf_printf(st, "cuda: %s %.2f ms\n", via, now_ms() - t1);
    return 0;
  }
  int rc = gc_nvrtc_compile(src, gc_module_sm(km, sm), &out->ptx, &out->cubin, &out->cubin_len, tc, d);
  if (st) gc_sbuf_printf(st, "cuda: nvrtc %s %.2f ms\n", gc_nvrtc_version(), now_ms() - t0);
  return rc;
}

int gc_cuda_codegen(const kir_module *km, int sm, graphc_codegen_t cg, const gc_settings *s,
                    gc_cache *cache, gc_cuda_code *out, gc_sbuf *st, gc_diags *d) {
  memset(out, 0, sizeof *out);
  gc_toolchain tc;
  gc_settings_toolchain(s, &tc);
  out->sm = sm;
  cg = gc_codegen_resolve(cg);
  if (cg != GRAPHC_CODEGEN_NVRTC && cg != GRAPHC_CODEGEN_LLVM) {
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0}, "unknown codegen %d", (int)cg);
    return -1;
  }
  double t0 = now_ms();
  gc_hash128 key;
  int use_cache = cache && cache->enabled;
  gc_sbuf src = {0};
  if (cg == GRAPHC_CODEGEN_NVRTC) {  /* the LLVM path keys on the Kernel IR */
    gc_cuda_c_print(&src, km);
    if (src.failed || !src.data) {
      gc_sbuf_free(&src);
      return oom(d);
    }
    if (st) gc_sbuf_printf(st, "cuda: codegen cuda-c %.2f ms\n", now_ms() - t0);
  }
  if (use_cache) {
    cache_key(km, &src, sm, cg, &tc, &key);
    gc_cache_blob b[2];
    if (gc_cache_get(cache, &key, 2, b)) {
      /* Blob 0 the cubin (may be empty), blob 1 the PTX (never empty). */
      if (b[1].len && memchr(b[1].data, 0, b[1].len) == NULL) {
        out->cubin = b[0].len ? b[0].data : NULL;
        out->cubin_len = b[0].len;
        if (!b[0].len) free(b[0].data);
        out->ptx = b[1].data;
        out->cache_hit = 1;
        out->ms = now_ms() - t0;
        gc_sbuf_free(&src);
        if (st)
          gc_sbuf_printf(st, "cuda: module sm_%d from the JIT cache %.2f ms (%016" PRIx64 "%016" PRIx64 ")\n",
                         sm, out->ms, key.a, key.b);
        return 0;
      }
      free(b[0].data);
      free(b[1].data);
    }
  }
  int rc = compile_module(km, src.data, sm, cg, &tc, &s->rt, out, st, d);
  gc_sbuf_free(&src);
  if (rc != 0) {
    gc_cuda_code_free(out);
    return -1;
  }
  if (use_cache && out->ptx) {
    /* nvJitLink failures are not cached: the next compile tries again. */
    if (cg != GRAPHC_CODEGEN_LLVM || out->cubin) {
      gc_cache_blob b[2] = {{out->cubin, out->cubin_len}, {out->ptx, strlen(out->ptx)}};
      gc_cache_put(cache, &key, 2, b);
    }
  }
  out->ms = now_ms() - t0;
  return 0;
}

/* ---- launch plans ------------------------------------------------------------------------ */
/* Point each kernel that the LLVM path compiled as a copy of another
 * ("// graphc alias COPY = ORIGINAL" in ptx) at the original's code. */
int gc_cuda_apply_aliases(gc_launch_plan *lp, const char *ptx, gc_diags *d) {
  if (!ptx || !strstr(ptx, "\n// graphc alias ")) return 0;
  char buf[256];
  for (int i = 0; i < lp->n_kernels; i++) {
    const char *to = gc_ptx_kernel_alias(ptx, lp->kernels[i].name, buf, sizeof buf);
    if (to != lp->kernels[i].name && !(lp->kernels[i].name = gc_arena_strdup(&lp->arena, to)))
      return oom(d);
  }
  return 0;
}

/* ---- the backend table ------------------------------------------------------------------ */
static void cuda_release(gc_exec *exe);

/* 8-bit matmuls (fp8, i8 / u8) reach tensor cores only through the sm_90 warpgroup kernel:
 * elsewhere they run on CUDA cores, converting every element, slower than f16. Say so once, at
 * the first such matmul. */
static void warn_8bit_matmuls(const gc_graph *g, int sm, gc_diags *d) {
  for (const gc_op *op = g->first; op; op = op->next) {
    if (op->opcode != GC_OP_MATMUL || graphc_dtype_size(op->operands[0]->type.dtype) != 1 ||
        graphc_dtype_size(op->operands[1]->type.dtype) != 1)
      continue;
    gc_warning_at(d, op->loc,
                  "8-bit matmuls run on CUDA cores on sm_%d (the fp8 / int8 tensor-core kernel needs sm_90): "
                  "expect them slower than f16 (--precision f16 or bf16 is faster here)", sm);
    return;
  }
}

/* Compile the executable's graph for the device and set up everything runs need. */
static graphc_status_t cuda_prepare(gc_exec *exe, const graphc_compile_options_t *opts,
                                    gc_diags *d) {
  gc_settings set;
  gc_settings_read(&set);
  if (!gc_cu_driver_get(&set.rt, d)) return GRAPHC_STATUS_BACKEND_UNAVAILABLE;
  cu_state *s = calloc(1, sizeof *s);
  if (!s) {
    oom(d);
    return GRAPHC_STATUS_OUT_OF_MEMORY;
  }
  exe->state = s;
  gc_launch_plan_init(&s->lp);
  graphc_codegen_t cg = opts ? opts->codegen : GRAPHC_CODEGEN_DEFAULT;
  cg = gc_codegen_resolve(cg);
  if (cg != GRAPHC_CODEGEN_NVRTC && cg != GRAPHC_CODEGEN_LLVM) {
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0}, "unknown codegen %d", (int)cg);
    return GRAPHC_STATUS_INVALID_ARGUMENT;
  }
  s->x = gc_cu_exec_open_async(&set.rt, d);
  if (!s->x) return d->n_errors ? d->status : GRAPHC_STATUS_DEVICE_ERROR;
  const gc_cu_props *pr = gc_cu_exec_props(s->x);
  gc_sbuf st = {0};
  gc_cache cache;
  gc_cache_open(&cache, &set);
  gc_cuda_code code;
  memset(&code, 0, sizeof code);
  graphc_status_t rc = GRAPHC_STATUS_OK;
  if ((s->sm = pick_sm(pr->sm, opts ? opts->arch : NULL, d)) < 0) goto fail;
  if (s->sm < 90) warn_8bit_matmuls(exe->graph, s->sm, d);

  kir_target t;
  kir_target_cuda(&t, s->sm);
  gc_settings_apply_target(&set, &t);
  t.tf32 = exe->opts.allow_tf32;  /* --tf32 or --precision tf32 (graphc_compile) */
  t.tuning = exe->tuning;
  t.sm = s->sm;
  t.warp_size = pr->warp;
  t.max_threads = pr->max_threads;
  t.num_sms = pr->num_sms;
  t.shared_bytes = pr->shared_bytes;
  int eager = (opts && opts->eager) || set.rt.cuda_sync;
  gc_sbuf_printf(&st, "cuda: device 0 \"%s\" sm_%d, %d SMs, driver CUDA %d.%d; code for sm_%d via %s%s\n",
                 pr->name, pr->sm, pr->num_sms, pr->driver_version / 1000,
                 pr->driver_version % 1000 / 10, s->sm, graphc_codegen_name(cg),
                 eager ? ", eager launches" : ", CUDA graph replay");

  double t0 = now_ms();
  s->plan = gc_lower_opts(exe->graph, &t, exe->fuse, d);
  if (!s->plan || d->n_errors || gc_plan_bind_weights(s->plan, exe->weights, d)) goto fail;
  gc_sbuf_printf(&st, "cuda: lower %.2f ms\n", now_ms() - t0);
  if (gc_cuda_codegen(s->plan->kir, s->sm, cg, &set, &cache, &code, &st, d)) goto fail;
  s->cache_hit = code.cache_hit;
  if (gc_launch_plan_build(s->plan, exe->inputs, exe->n_inputs, exe->outputs, exe->n_outputs,
                           &s->lp, d) ||
      gc_cuda_apply_aliases(&s->lp, code.ptx, d))
    goto fail;
  gc_cu_image img = {code.sm, code.cubin, code.cubin_len, code.ptx, code.why_no_cubin};
  if (gc_cu_exec_load(s->x, &s->lp, &img, 1, eager, &st, d)) goto fail;
  gc_plan_stats(&st, s->plan);
  char line[1200];
  gc_cache_describe(&cache, line, sizeof line);
  gc_sbuf_printf(&st, "cuda: %s\n", line);
  if (st.data) gc_sbuf_puts(&exe->stats, st.data);
  gc_sbuf_free(&st);
  gc_cuda_code_free(&code);
  gc_cache_close(&cache);
  return GRAPHC_STATUS_OK;
fail:
  gc_sbuf_free(&st);
  gc_cuda_code_free(&code);
  gc_cache_close(&cache);
  rc = d->n_errors ? d->status : GRAPHC_STATUS_INTERNAL;
  if (!d->n_errors) gc_error_at(d, rc, (gc_loc){0, 0}, "CUDA backend: prepare failed");
  return rc;
}

/* The state of a prepared executable, or NULL (reported). */
static cu_state *prepared(gc_exec *exe, gc_diags *d) {
  cu_state *s = exe ? exe->state : NULL;
  if (s && s->x && s->plan) return s;
  gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0}, "executable is not prepared");
  return NULL;
}

/* Status of a failed call into cuda_exec.c. */
static graphc_status_t failed(gc_diags *d) {
  return d->n_errors ? d->status : GRAPHC_STATUS_DEVICE_ERROR;
}

/* Run with host tensors: copies in, launches, copies out, one synchronize. */
static graphc_status_t cuda_run(gc_exec *exe, const graphc_tensor_t *in, graphc_tensor_t *out,
                                gc_diags *d) {
  cu_state *s = prepared(exe, d);
  if (!s) return GRAPHC_STATUS_INVALID_ARGUMENT;
  return gc_cu_exec_run(s->x, in, out, d) ? failed(d) : GRAPHC_STATUS_OK;
}

/* Run with the caller's device pointers bound as the I/O buffers (no copies). */
static graphc_status_t cuda_run_device(gc_exec *exe, const graphc_tensor_t *in,
                                       graphc_tensor_t *out, gc_diags *d) {
  cu_state *s = prepared(exe, d);
  if (!s) return GRAPHC_STATUS_INVALID_ARGUMENT;
  return gc_cu_exec_run_device(s->x, in, out, d) ? failed(d) : GRAPHC_STATUS_OK;
}

/* Enqueue on the caller's stream without waiting (device or pinned host tensors). */
static graphc_status_t cuda_enqueue(gc_exec *exe, const graphc_tensor_t *in, graphc_tensor_t *out,
                                    void *stream, gc_diags *d) {
  cu_state *s = prepared(exe, d);
  if (!s) return GRAPHC_STATUS_INVALID_ARGUMENT;
  return gc_cu_exec_enqueue(s->x, in, out, stream, d) ? failed(d) : GRAPHC_STATUS_OK;
}

/* Execution contexts: a gc_cu_ctx each (own arena, I/O, graph and stream). */
static void *cuda_ctx_new(gc_exec *exe, gc_diags *d) {
  cu_state *s = prepared(exe, d);
  return s ? gc_cu_ctx_new(s->x, d) : NULL;
}

static void cuda_ctx_free(gc_exec *exe, void *c) { gc_cu_ctx_free(c); }

/* A run on context c: host tensors (kind 0), device tensors (1), or an enqueue (2). */
static graphc_status_t cuda_ctx_run(gc_exec *exe, void *c, int kind, const graphc_tensor_t *in,
                                    graphc_tensor_t *out, void *stream, gc_diags *d) {
  int rc = kind == 0   ? gc_cu_ctx_run(c, in, out, d)
           : kind == 1 ? gc_cu_ctx_run_device(c, in, out, d)
                       : gc_cu_ctx_enqueue(c, in, out, stream, d);
  return rc ? failed(d) : GRAPHC_STATUS_OK;
}

/* Free everything prepare made; tolerates any partially prepared state. */
static void cuda_release(gc_exec *exe) {
  cu_state *s = exe->state;
  if (!s) return;
  exe->state = NULL;
  gc_cu_exec_free(s->x);
  gc_launch_plan_free(&s->lp);
  gc_plan_free(s->plan);
  free(s);
}

static gc_states *cuda_states_new(gc_exec *exe, gc_diags *d) {
  cu_state *s = exe->state;
  return s && s->x ? gc_cu_exec_states_new(s->x, d) : NULL;
}

static graphc_status_t cuda_bind_states(gc_exec *exe, gc_states *st, gc_diags *d) {
  cu_state *s = exe->state;
  if (!s || !s->x) {
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0}, "executable is not prepared");
    return GRAPHC_STATUS_INVALID_ARGUMENT;
  }
  return gc_cu_exec_bind_states(s->x, st, d) ? GRAPHC_STATUS_INVALID_ARGUMENT : GRAPHC_STATUS_OK;
}

const gc_backend gc_backend_cuda = {
    .name = "cuda",
    .states_new = cuda_states_new,
    .bind_states = cuda_bind_states,
    .prepare = cuda_prepare,
    .run = cuda_run,
    .run_device = cuda_run_device,
    .enqueue = cuda_enqueue,
    .ctx_new = cuda_ctx_new,
    .ctx_free = cuda_ctx_free,
    .ctx_run = cuda_ctx_run,
    .release = cuda_release,
};

/* 1 when the driver loads, initializes and has a device. */
int gc_cuda_available(const gc_rt_settings *s) { return gc_cu_driver_get(s, NULL) != NULL; }

/* An executor with nothing loaded: it only retains the primary context. */
void *gc_cuda_hold_open(const gc_rt_settings *s) {
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  gc_cu_exec *x = gc_cu_exec_open(s, &d);
  gc_diags_free(&d);
  return x;
}

void gc_cuda_hold_free(void *hold) { gc_cu_exec_free(hold); }

void *gc_cuda_prefetch_start(const gc_rt_settings *s) {
  pthread_t *th = malloc(sizeof *th);
  if (th && gc_cu_driver_prefetch(s, th)) return th;
  free(th);
  return NULL;
}

void gc_cuda_prefetch_join(void *p) {
  if (!p) return;
  pthread_join(*(pthread_t *)p, NULL);
  free(p);
}

/* Like gc_cuda_available, saying why not in d. */
int gc_cuda_check_available(const gc_rt_settings *s, gc_diags *d) {
  return gc_cu_driver_get(s, d) != NULL;
}

/* ---- internals for graphc bench and the GPU tests (cuda_backend.h) -------------------- */
/* The state of a CUDA executable, or NULL (reported) when exe is not one. */
static cu_state *cuda_state(const gc_exec *exe, gc_diags *d) {
  if (exe && exe->backend == &gc_backend_cuda && exe->state &&
      ((cu_state *)exe->state)->plan && ((cu_state *)exe->state)->x)
    return exe->state;
  if (d)
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0},
                "not an executable compiled for the cuda backend");
  return NULL;
}

/* Device, arch and plan facts of a CUDA executable (for graphc bench and tests). */
graphc_status_t gc_cuda_exec_info(const gc_exec *exe, gc_cuda_info *info) {
  cu_state *s = cuda_state(exe, NULL);
  if (!s || !info) return GRAPHC_STATUS_INVALID_ARGUMENT;
  const gc_cu_props *pr = gc_cu_exec_props(s->x);
  memset(info, 0, sizeof *info);
  snprintf(info->device, sizeof info->device, "%s", pr->name);
  info->sm = s->sm;
  info->device_sm = pr->sm;
  info->num_sms = pr->num_sms;
  info->driver_version = pr->driver_version;
  info->total_mem = pr->total_mem;
  info->plan = s->plan;
  info->from_ptx = gc_cu_exec_from_ptx(s->x);
  info->eager = gc_cu_exec_eager(s->x);
  info->cache_hit = s->cache_hit;
  return GRAPHC_STATUS_OK;
}

/* Grid and block size kernel `kernel` is launched with. */
graphc_status_t gc_cuda_kernel_geometry(const gc_exec *exe, int kernel, unsigned *grid,
                                        unsigned *block) {
  cu_state *s = cuda_state(exe, NULL);
  if (!s || gc_cu_exec_geometry(s->x, kernel, grid, block)) return GRAPHC_STATUS_INVALID_ARGUMENT;
  return GRAPHC_STATUS_OK;
}

/* Whole-run times: events around each graph replay (or eager run) after warm-up. */
graphc_status_t gc_cuda_time_runs(gc_exec *exe, int warmup, int runs, float *ms, gc_diags *d) {
  cu_state *s = cuda_state(exe, d);
  if (!s) return GRAPHC_STATUS_INVALID_ARGUMENT;
  return gc_cu_exec_time_runs(s->x, warmup, runs, ms, d) ? failed(d) : GRAPHC_STATUS_OK;
}

/* Runs queued back to back, one event between each two (see gc_cu_exec_time_queued). */
graphc_status_t gc_cuda_time_queued(gc_exec *exe, int warmup, int runs, float *ms, gc_diags *d) {
  cu_state *s = cuda_state(exe, d);
  if (!s) return GRAPHC_STATUS_INVALID_ARGUMENT;
  if (runs < 1 || warmup < 0 || !ms) {
    if (d)
      gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0},
                  "time_queued: runs must be at least 1 (got %d), warm-up at least 0 (got %d)",
                  runs, warmup);
    return GRAPHC_STATUS_INVALID_ARGUMENT;
  }
  return gc_cu_exec_time_queued(s->x, warmup, runs, ms, d) ? failed(d) : GRAPHC_STATUS_OK;
}

/* Host time to issue a run, per run (see gc_cu_exec_time_issue). */
graphc_status_t gc_cuda_time_issue(gc_exec *exe, int runs, float *us, gc_diags *d) {
  cu_state *s = cuda_state(exe, d);
  if (!s) return GRAPHC_STATUS_INVALID_ARGUMENT;
  return gc_cu_exec_time_issue(s->x, runs, us, d) ? failed(d) : GRAPHC_STATUS_OK;
}

/* Per-launch times: eager launches with an event recorded between each two; each run is
 * queued behind the one before. */
graphc_status_t gc_cuda_time_kernels(gc_exec *exe, int runs, float *ms, gc_diags *d) {
  cu_state *s = cuda_state(exe, d);
  if (!s) return GRAPHC_STATUS_INVALID_ARGUMENT;
  return gc_cu_exec_time_kernels(s->x, runs, ms, d) ? failed(d) : GRAPHC_STATUS_OK;
}

/* Device copy bandwidth: `reps` cuMemcpyDtoDAsync of `bytes` between events. */
graphc_status_t gc_cuda_copy_bandwidth(gc_exec *exe, size_t bytes, int reps, double *gbps,
                                       size_t *bytes_used, gc_diags *d) {
  cu_state *s = cuda_state(exe, d);
  if (!s) return GRAPHC_STATUS_INVALID_ARGUMENT;
  return gc_cu_exec_copy_bandwidth(s->x, bytes, reps, gbps, bytes_used, d) ? failed(d)
                                                                           : GRAPHC_STATUS_OK;
}

/* ---- bundles ------------------------------------------------------------------------------ */
/* The META pairs: what was compiled, how, and with which tools. */
static void bundle_meta(gc_bundle *b, const gc_exec *exe, const gc_aot_options *o,
                        graphc_codegen_t cg) {
  int cap = 0;
  char buf[1024];
  gc_sbuf s = {0};
  gc_bundle_meta_head(b, &cap, exe->graph->name, exe->graph->n_syms, exe->graph->sym_names,
                      exe->graph->sym_values);
  for (int i = 0; i < o->n_sms; i++) gc_sbuf_printf(&s, "%ssm_%d", i ? "," : "", o->sms[i]);
  gc_bundle_meta_add(b, &cap, "archs", s.data ? s.data : "");
  gc_sbuf_free(&s);
  gc_bundle_meta_add(b, &cap, "codegen", graphc_codegen_name(cg));
  if (cg == GRAPHC_CODEGEN_LLVM) {
    unsigned a = 0, v = 0, c = 0;
    LLVMGetVersion(&a, &v, &c);
    snprintf(buf, sizeof buf, "%u.%u.%u", a, v, c);
    gc_bundle_meta_add(b, &cap, "llvm", buf);
  } else {
    gc_bundle_meta_add(b, &cap, "nvrtc", gc_nvrtc_version());
  }
  gc_bundle_meta_add(b, &cap, "ptx", o->no_ptx ? "0" : "1");
  gc_bundle_meta_add(b, &cap, "eager", o->eager ? "1" : "0");
  gc_bundle_meta_add(b, &cap, "optimize", exe->opts.optimize ? "1" : "0");
  gc_bundle_meta_add(b, &cap, "tf32", exe->opts.allow_tf32 ? "1" : "0");
  gc_bundle_meta_add(b, &cap, "embed_weights", o->embed_weights ? "1" : "0");
  gc_bundle_meta_add(b, &cap, "weights", exe->module->weights ? exe->module->weights : "");
}

int gc_cuda_build_bundle(gc_exec *exe, const gc_aot_options *o, void **out, size_t *len,
                         gc_sbuf *st, gc_diags *d) {
  *out = NULL;
  *len = 0;
  gc_settings set;
  gc_settings_read(&set);
  graphc_codegen_t cg = gc_codegen_resolve(o->codegen);
  if (o->n_sms < 1) {
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0}, "no architecture to compile for");
    return -1;
  }
  gc_bundle b;
  memset(&b, 0, sizeof b);
  gc_arena_init(&b.arena);
  gc_plan **plans = calloc((size_t)o->n_sms, sizeof *plans);
  gc_cuda_code *codes = calloc((size_t)o->n_sms, sizeof *codes);
  b.plans = calloc((size_t)o->n_sms, sizeof *b.plans);
  b.images = calloc((size_t)o->n_sms, sizeof *b.images);
  gc_cache cache;
  memset(&cache, 0, sizeof cache);
  if (o->use_cache) gc_cache_open(&cache, &set);
  int rc = -1, made = 0;
  if (!plans || !codes || !b.plans || !b.images) {
    oom(d);
    goto out;
  }
  for (; made < o->n_sms; made++) {
    int sm = o->sms[made];
    kir_target t;
    kir_target_cuda(&t, sm);
    gc_settings_apply_target(&set, &t);
    t.tf32 = exe->opts.allow_tf32;
    t.tuning = exe->tuning;
    double t0 = now_ms();
    plans[made] = gc_lower_opts(exe->graph, &t, exe->fuse, d);
    if (!plans[made] || d->n_errors || gc_plan_bind_weights(plans[made], exe->weights, d)) goto out;
    if (st) {
      gc_sbuf_printf(st, "aot: sm_%d: lower %.2f ms\naot: sm_%d: ", sm, now_ms() - t0, sm);
      gc_plan_consts_stats(st, plans[made]);
    }
    if (gc_cuda_codegen(plans[made]->kir, sm, cg, &set, o->use_cache ? &cache : NULL, &codes[made], st,
                        d))
      goto out;
    if (st)
      gc_sbuf_printf(st, "aot: sm_%d: module %s %.2f ms (cubin %zu bytes, PTX %zu bytes)\n", sm,
                     codes[made].cache_hit ? "from cache" : "compiled", codes[made].ms,
                     codes[made].cubin_len, codes[made].ptx ? strlen(codes[made].ptx) : (size_t)0);
    if (gc_launch_plan_build(plans[made], exe->inputs, exe->n_inputs, exe->outputs, exe->n_outputs,
                             &b.plans[made], d) ||
        gc_cuda_apply_aliases(&b.plans[made], codes[made].ptx, d))
      goto out;
    if (o->no_ptx && !codes[made].cubin) {
      gc_error_at(d, GRAPHC_STATUS_COMPILE_ERROR, (gc_loc){0, 0},
                  "no cubin for sm_%d (%s) and PTX was excluded (--no-ptx)", sm,
                  codes[made].why_no_cubin ? codes[made].why_no_cubin : "the compiler made none");
      made++;
      goto out;
    }
    b.images[made] = (gc_bundle_image){sm, made, codes[made].cubin, codes[made].cubin_len,
                                       o->no_ptx ? NULL : codes[made].ptx};
  }
  b.n_plans = b.n_images = o->n_sms;
  bundle_meta(&b, exe, o, cg);
  if (b.arena.failed) {
    oom(d);
    goto out;
  }
  double t0 = now_ms();
  rc = gc_bundle_write(&b, o->embed_weights, out, len, d);
  if (rc == 0 && st) {
    gc_sbuf_printf(st, "aot: bundle %zu bytes written %.2f ms\n", *len, now_ms() - t0);
    char line[1200];
    gc_cache_describe(&cache, line, sizeof line);
    gc_sbuf_printf(st, "aot: %s\n", line);
  }
out:
  for (int i = 0; i < o->n_sms && plans && codes && b.plans; i++) {
    gc_plan_free(plans[i]);
    gc_cuda_code_free(&codes[i]);
    gc_launch_plan_free(&b.plans[i]);
  }
  gc_cache_close(&cache);
  free(plans);
  free(codes);
  free(b.plans);
  free(b.images);
  gc_arena_free(&b.arena);
  return rc;
}
