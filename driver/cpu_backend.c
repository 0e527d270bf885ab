/* cpu_backend.c - the host backend: the plan's Kernel IR JIT-compiled with LLVM.
 *
 *   prepare:  threads (online CPUs or $GRAPHC_CPU_THREADS) -> kir_target_host
 *             -> gc_lower_opts (fused unless -O0) -> gc_llvm_emit (host triple,
 *             the host CPU's features)
 *             -> verify -> default<O3> ($GRAPHC_CPU_PASSES overrides) -> verify
 *             -> ORC LLJIT (libm and friends from the process) -> one entry per
 *             kernel -> the launch plan (gc_launch_plan_build: no Kernel IR in
 *             it), each kernel's modeled work and each buffer's alignment
 *             -> host_exec.c (arena, consts, slots, thread pool).
 *   run:      host_exec.c: I/O bound to the caller's tensors, every launch in
 *             order, its items split into chunks across the pool.
 *   release:  executor, JIT, plans freed; any field may be NULL.
 *
 * The same host_exec.c runs code compiled ahead of time (cpu_aot.c writes
 * the object, libgraphc_rt runs it), as cuda_exec.c serves both CUDA paths.
 * The JIT's own optimization pipeline stays off (LLJIT compiles what it gets):
 * the module is optimized once, here, with a target machine for the host CPU.
 */
#define _GNU_SOURCE
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver/cache.h"
#include "driver/cpu_backend.h"
#include "driver/exec.h"
#include "runtime/states.h"
#include "driver/launch_build.h"
#include "driver/settings.h"
#include "runtime/host_exec.h"
#include "codegen/llvm_emit.h"
#include "codegen/lower.h"

static const gc_loc noloc = {0, 0};

/* Monotonic milliseconds, for stage timings. */
static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* ==== the JIT ======================================================================= */

struct gc_cpu_jit {
  LLVMOrcLLJITRef jit;
  gc_llvm_diag *dg;          /* diagnostics of the module's context; outlives the JIT */
  int n;
  gc_cpu_kernel_fn *fns;
  char *target;              /* "triple (cpu)" */
};

static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static int host_init_failed;  /* written once, under host_once */

/* Register the native target and its asm printer with LLVM (once per process). */
static void host_init(void) {
  host_init_failed = LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter();
}

/* Report a compile error: what failed, LLVM's message, and collected diagnostics. */
static void report(gc_diags *d, const gc_llvm_diag *dg, const char *what, const char *msg) {
  int extra = dg && dg->msgs.len && dg->msgs.data;
  gc_error_at(d, GRAPHC_STATUS_COMPILE_ERROR, noloc, "cpu backend: %s%s%s%s%s", what,
              msg ? ": " : "", msg ? msg : "", extra ? "\n" : "", extra ? dg->msgs.data : "");
}

/* Report (and consume) an LLVMErrorRef; returns -1 when there was an error. */
static int check_err(LLVMErrorRef e, const char *what, const gc_llvm_diag *dg, gc_diags *d) {
  if (!e) return 0;
  char *msg = LLVMGetErrorMessage(e);
  report(d, dg, what, msg);
  LLVMDisposeErrorMessage(msg);
  return -1;
}

/* A new LLJIT for this host that resolves libm and friends from the process. */
static int jit_create(gc_cpu_jit *j, gc_diags *d) {
  if (check_err(LLVMOrcCreateLLJIT(&j->jit, NULL), "creating the LLVM ORC JIT", j->dg, d)) {
    j->jit = NULL;
    return -1;
  }
  LLVMOrcDefinitionGeneratorRef gen = NULL;
  if (check_err(LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
                    &gen, LLVMOrcLLJITGetGlobalPrefix(j->jit), NULL, NULL),
                "creating the process symbol generator", j->dg, d))
    return -1;
  LLVMOrcJITDylibAddGenerator(LLVMOrcLLJITGetMainJITDylib(j->jit), gen);  /* consumes gen */
  return 0;
}

/* Link the objects into the JIT and look up every kernel's function. */
static int jit_link(gc_cpu_jit *j, const kir_module *m, const gc_cpu_objects *o, gc_diags *d) {
  if (jit_create(j, d)) return -1;
  LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(j->jit);
  for (int i = 0; i < o->n_objects; i++) {
    LLVMMemoryBufferRef mb = LLVMCreateMemoryBufferWithMemoryRangeCopy(o->objects[i], o->object_lens[i],
                                                                       "graphc-cpu-object");
    if (check_err(LLVMOrcLLJITAddObjectFile(j->jit, jd, mb), "adding an object to the JIT", j->dg,
                  d))  /* consumes mb */
      return -1;
  }
  gc_cpu_kernel_fn *by_sym = calloc((size_t)o->n_syms + 1, sizeof *by_sym);
  if (!by_sym) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory");
    return -1;
  }
  int rc = 0;
  for (int u = 0; u < o->n_syms && rc == 0; u++) {
    LLVMOrcExecutorAddress addr = 0;
    char what[320];
    snprintf(what, sizeof what, "JIT linking of %s", o->syms[u]);
    if (check_err(LLVMOrcLLJITLookup(j->jit, &addr, o->syms[u]), what, j->dg, d)) {
      rc = -1;
    } else if (!addr) {
      report(d, j->dg, what, "the JIT returned a null address");
      rc = -1;
    }
    by_sym[u] = (gc_cpu_kernel_fn)(uintptr_t)addr;
  }
  for (int i = 0; i < m->n_kernels && rc == 0; i++) j->fns[i] = by_sym[o->kernel_sym[i]];
  free(by_sym);
  return rc;
}

gc_cpu_jit *gc_cpu_jit_compile_ex(const kir_module *m, const gc_cpu_compile_opts *opts,
                                  gc_sbuf *times, gc_diags *d) {
  pthread_once(&host_once, host_init);
  if (host_init_failed) {
    gc_error_at(d, GRAPHC_STATUS_UNSUPPORTED, noloc,
                "cpu backend: this build of LLVM has no code generator for the host");
    return NULL;
  }
  gc_cpu_jit *j = calloc(1, sizeof *j);
  if (j) {
    j->dg = calloc(1, sizeof *j->dg);
    j->fns = calloc((size_t)m->n_kernels + 1, sizeof *j->fns);
  }
  if (!j || !j->dg || !j->fns) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory");
    gc_cpu_jit_free(j);
    return NULL;
  }
  j->n = m->n_kernels;
  gc_cpu_objects o;
  if (gc_cpu_compile_objects(m, opts, &o, d) != 0) {
    if (!d->n_errors) report(d, NULL, "JIT compilation failed", NULL);
    gc_cpu_jit_free(j);
    return NULL;
  }
  j->target = o.target;
  o.target = NULL;
  double t0 = now_ms();
  int rc = jit_link(j, m, &o, d);
  double t1 = now_ms();
  if (rc == 0 && times) {
    const char *passes = opts && opts->passes && *opts->passes ? opts->passes : NULL;
    gc_sbuf_printf(times, "cpu: %d kernels, %d distinct, %d object%s (%d from the cache)",
                   m->n_kernels, o.n_syms, o.n_objects, o.n_objects == 1 ? "" : "s", o.cached);
    if (opts && opts->timings)
      gc_sbuf_printf(times,
                     " on %d thread%s: llvm emit %.2f ms, %s %.2f ms, codegen %.2f ms (CPU time), "
                     "wall %.2f ms; jit link %.2f ms",
                     o.threads, o.threads == 1 ? "" : "s", o.t_emit,
                     passes ? passes : "O3 without DSE (compute) / default<O2> (memory-bound)", o.t_opt,
                     o.t_cg, o.wall, t1 - t0);
    gc_sbuf_putc(times, '\n');
  }
  gc_cpu_objects_free(&o);
  if (rc != 0) {
    if (!d->n_errors) report(d, j->dg, "JIT linking failed", NULL);
    gc_cpu_jit_free(j);
    return NULL;
  }
  return j;
}

gc_cpu_jit *gc_cpu_jit_compile(const kir_module *m, const char *passes, gc_sbuf *times,
                               gc_diags *d) {
  gc_cpu_compile_opts o = {0};
  o.passes = passes;
  o.timings = 1;
  return gc_cpu_jit_compile_ex(m, &o, times, d);
}

gc_cpu_kernel_fn gc_cpu_jit_kernel(const gc_cpu_jit *j, int i) {
  GC_ASSERT(j && i >= 0 && i < j->n);
  return j->fns[i];
}

const char *gc_cpu_jit_target(const gc_cpu_jit *j) { return j && j->target ? j->target : "?"; }

void gc_cpu_jit_free(gc_cpu_jit *j) {
  if (!j) return;
  if (j->jit) {
    LLVMErrorRef e = LLVMOrcDisposeLLJIT(j->jit);
    if (e) LLVMConsumeError(e);  /* nothing to report to at teardown */
  }
  if (j->dg) gc_sbuf_free(&j->dg->msgs);
  free(j->dg);
  free(j->fns);
  free(j->target);
  free(j);
}

int gc_cpu_threads(const gc_rt_settings *s, gc_diags *d) { return gc_host_threads(s, d); }

/* ==== the backend =================================================================== */

typedef struct cpu_state {
  gc_plan *plan;
  gc_cpu_jit *jit;
  gc_launch_plan lp;         /* the plan without Kernel IR, as host_exec.c runs it */
  gc_host_exec *hx;
  int threads;
} cpu_state;

/* Status to return after an error was reported to d. */
static graphc_status_t failed(gc_diags *d) {
  return d->n_errors ? d->status : GRAPHC_STATUS_INTERNAL;
}

/* Raise buf_align for the vector statements of block b on global buffers. */
static void vec_aligns(const kir_kernel *k, const kir_block *b, uint32_t *buf_align) {
  for (const kir_stmt *s = b->head; s; s = s->next) {
    switch (s->kind) {
      case KIR_S_LOAD_VEC:
      case KIR_S_STORE_VEC: {
        if (s->u.vec.space != KIR_GLOBAL) break;
        const kir_param *p = &k->params[s->u.vec.buf];
        size_t a = graphc_dtype_size(p->dtype) * (size_t)s->u.vec.width;
        if (a > 16) a = 16;
        if (a > buf_align[p->binding]) buf_align[p->binding] = (uint32_t)a;
        break;
      }
      case KIR_S_FOR: vec_aligns(k, &s->u.loop.body, buf_align); break;
      case KIR_S_IF:
        vec_aligns(k, &s->u.cond.then, buf_align);
        vec_aligns(k, &s->u.cond.els, buf_align);
        break;
      default: break;
    }
  }
}

void gc_cpu_buffer_aligns(const gc_plan *p, uint32_t *align) {
  for (int i = 0; i < p->n_buffers; i++) {
    size_t a = graphc_dtype_size(p->buffers[i].type.dtype);
    align[i] = a ? (uint32_t)a : 1;
  }
  for (int i = 0; i < p->kir->n_kernels; i++)
    vec_aligns(p->kir->kernels[i], &p->kir->kernels[i]->body, align);
}

/* Lower, JIT-compile, then hand the launch plan and the entry points to host_exec.c. */
static graphc_status_t cpu_prepare(gc_exec *exe, const graphc_compile_options_t *opts,
                                   gc_diags *d) {
  cpu_state *s = calloc(1, sizeof *s);
  if (!s) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory");
    return GRAPHC_STATUS_OUT_OF_MEMORY;
  }
  exe->state = s;
  gc_launch_plan_init(&s->lp);
  gc_settings set;
  gc_settings_read(&set);
  int threads = gc_host_threads(&set.rt, d);
  s->threads = threads;
  kir_target t;
  kir_target_host(&t, threads);
  gc_settings_apply_target(&set, &t);
  t.simd_bytes = gc_llvm_host_simd_bytes(NULL);  /* the JIT compiles for this CPU */
  double t0 = now_ms();
  /* -O0 or --disable-pass=fusion lowers one op per kernel, unfused. */
  s->plan = gc_lower_opts(exe->graph, &t, exe->fuse, d);
  if (!s->plan || gc_plan_bind_weights(s->plan, exe->weights, d)) return failed(d);
  double t1 = now_ms();
  gc_plan_stats(&exe->stats, s->plan);
  gc_sbuf times = {0};
  gc_cache cache;
  gc_cache_open(&cache, &set);
  gc_cpu_compile_opts co = {0};
  co.passes = set.cpu_passes;
  co.configured_threads = set.compile_threads;
  co.no_dedup = set.cpu_no_dedup;
  co.timings = opts && opts->time_passes;
  co.cache = &cache;
  s->jit = gc_cpu_jit_compile_ex(s->plan->kir, &co, &times, d);
  char line[700];
  gc_cache_describe(&cache, line, sizeof line);
  gc_cache_close(&cache);
  if (!s->jit) {
    gc_sbuf_free(&times);
    return failed(d);
  }
  gc_sbuf_printf(&exe->stats, "cpu: %s\n", line);
  if (opts && opts->time_passes) gc_sbuf_printf(&exe->stats, "cpu: lower %.2f ms\n", t1 - t0);
  if (times.data) gc_sbuf_puts(&exe->stats, times.data);
  gc_sbuf_free(&times);
  if (gc_launch_plan_build(s->plan, exe->inputs, exe->n_inputs, exe->outputs, exe->n_outputs,
                           &s->lp, d))
    return failed(d);
  const kir_module *m = s->plan->kir;
  gc_host_kernel_fn *fns = calloc((size_t)m->n_kernels + 1, sizeof *fns);
  double *work = calloc((size_t)m->n_kernels + 1, sizeof *work);
  uint32_t *align = calloc((size_t)s->plan->n_buffers + 1, sizeof *align);
  if (fns && work && align) {
    for (int i = 0; i < m->n_kernels; i++) {
      fns[i] = gc_cpu_jit_kernel(s->jit, i);
      work[i] = m->kernels[i]->bytes_moved + m->kernels[i]->flops;
    }
    gc_cpu_buffer_aligns(s->plan, align);
    gc_host_code code = {fns, work, align};
    s->hx = gc_host_exec_load(&s->lp, &code, threads, d);
  } else {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory");
  }
  free(fns);
  free(work);
  free(align);
  if (!s->hx) return failed(d);
  gc_sbuf_printf(&exe->stats, "cpu: %s, ", gc_cpu_jit_target(s->jit));
  gc_host_exec_describe(s->hx, &exe->stats);
  gc_sbuf_putc(&exe->stats, '\n');
  return GRAPHC_STATUS_OK;
}

/* Run every launch in plan order with the caller's tensors (host_exec.c). */
static graphc_status_t cpu_run(gc_exec *exe, const graphc_tensor_t *in, graphc_tensor_t *out,
                               gc_diags *d) {
  cpu_state *s = exe->state;
  if (!s || !s->hx) {
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, noloc, "executable is not prepared");
    return GRAPHC_STATUS_INVALID_ARGUMENT;
  }
  return gc_host_exec_run(s->hx, in, out, d) == 0 ? GRAPHC_STATUS_OK : failed(d);
}

/* Free everything prepare made; tolerates a partially prepared state. */
static void cpu_release(gc_exec *exe) {
  cpu_state *s = exe->state;
  if (!s) return;
  exe->state = NULL;
  gc_host_exec_free(s->hx);
  gc_cpu_jit_free(s->jit);
  gc_launch_plan_free(&s->lp);
  gc_plan_free(s->plan);
  free(s);
}

/* The state of a prepared cpu executable, or NULL (reported when d is not NULL). */
static cpu_state *cpu_state_of(const gc_exec *exe, gc_diags *d) {
  if (exe && exe->backend == &gc_backend_cpu && exe->state && ((cpu_state *)exe->state)->hx)
    return exe->state;
  if (d)
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, noloc,
                "not an executable compiled for the cpu backend");
  return NULL;
}

graphc_status_t gc_cpu_exec_info(const gc_exec *exe, gc_cpu_info *info) {
  cpu_state *s = cpu_state_of(exe, NULL);
  if (!s || !info) return GRAPHC_STATUS_INVALID_ARGUMENT;
  memset(info, 0, sizeof *info);
  info->plan = s->plan;
  info->target = gc_cpu_jit_target(s->jit);
  info->threads = s->threads;
  return GRAPHC_STATUS_OK;
}

graphc_status_t gc_cpu_time_launches(gc_exec *exe, const graphc_tensor_t *in, graphc_tensor_t *out,
                                     int runs, float *ms, gc_diags *d) {
  cpu_state *s = cpu_state_of(exe, d);
  if (!s) return GRAPHC_STATUS_INVALID_ARGUMENT;
  return gc_host_exec_time_launches(s->hx, in, out, runs, ms, d) == 0 ? GRAPHC_STATUS_OK : failed(d);
}

static gc_states *cpu_states_new(gc_exec *exe, gc_diags *d) {
  (void)exe;
  return gc_states_new(NULL, NULL, d);
}

static graphc_status_t cpu_bind_states(gc_exec *exe, gc_states *st, gc_diags *d) {
  cpu_state *s = exe->state;
  if (!s || !s->hx) {
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, noloc, "executable is not prepared");
    return GRAPHC_STATUS_INVALID_ARGUMENT;
  }
  return gc_host_exec_bind_states(s->hx, st, d) ? GRAPHC_STATUS_INVALID_ARGUMENT : GRAPHC_STATUS_OK;
}

const gc_backend gc_backend_cpu = {
    .name = "cpu",
    .prepare = cpu_prepare,
    .run = cpu_run,
    .run_device = NULL,
    .states_new = cpu_states_new,
    .bind_states = cpu_bind_states,
    .release = cpu_release,
};
