/* cpu_backend.c - the host backend: the plan's Kernel IR JIT-compiled with LLVM.
 *
 *   prepare:  threads (online CPUs or $GRAPHC_CPU_THREADS) -> kir_target_host
 *             -> gc_lower_opts (fused unless -O0) -> gc_llvm_emit (host triple,
 *             the host CPU's features)
 *             -> verify -> default<O3> ($GRAPHC_CPU_PASSES overrides) -> verify
 *             -> ORC LLJIT (libm and friends from the process) -> one entry per
 *             kernel -> one arena for TEMP buffers, CONST buffers pointing at
 *             the weights (copied only when misaligned) -> argument slots per
 *             kernel -> a thread pool of `threads` participants.
 *   run:      INPUT/OUTPUT slots bound to the caller's tensors (no copies, except
 *             a scratch buffer for a misaligned tensor or an output overlapping
 *             another I/O tensor); then every launch in order, its items split
 *             into contiguous chunks across the pool (small launches inline).
 *   release:  pool joined, JIT disposed, memory freed; any field may be NULL.
 *
 * The JIT's own optimization pipeline stays off (LLJIT compiles what it gets):
 * the module is optimized once, here, with a target machine for the host CPU.
 * Runs of one executable are serialized by a mutex (the slots are shared).
 */
#define _GNU_SOURCE
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpu_backend.h"
#include "exec.h"
#include "threadpool.h"
#include "../codegen/llvm_emit.h"
#include "../codegen/lower.h"

#define CPU_ARENA_ALIGN 64
/* Modeled bytes + flops of a launch below which it runs inline on the caller
 * (waking the pool costs microseconds), and the least work worth one chunk. */
#define CPU_PAR_MIN_WORK (256.0 * 1024)
#define CPU_CHUNK_WORK (64.0 * 1024)

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

/* Hand the optimized module to a new LLJIT (consumes *mod and our reference
 * to *tsc) and look up every kernel. */
static int jit_load(gc_cpu_jit *j, const kir_module *m, LLVMModuleRef *mod,
                    LLVMOrcThreadSafeContextRef *tsc, gc_diags *d) {
  LLVMOrcJITTargetMachineBuilderRef jtmb = NULL;
  if (check_err(LLVMOrcJITTargetMachineBuilderDetectHost(&jtmb), "detecting the host for the JIT",
                j->dg, d))
    return -1;
  LLVMOrcLLJITBuilderRef b = LLVMOrcCreateLLJITBuilder();
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(b, jtmb);  /* consumes jtmb */
  if (check_err(LLVMOrcCreateLLJIT(&j->jit, b), "creating the LLVM ORC JIT", j->dg, d)) {  /* consumes b */
    j->jit = NULL;
    return -1;
  }
  LLVMOrcDefinitionGeneratorRef gen = NULL;
  if (check_err(LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
                    &gen, LLVMOrcLLJITGetGlobalPrefix(j->jit), NULL, NULL),
                "creating the process symbol generator", j->dg, d))
    return -1;
  LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(j->jit);
  LLVMOrcJITDylibAddGenerator(jd, gen);  /* consumes gen */
  LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(*mod, *tsc);
  *mod = NULL;
  LLVMOrcDisposeThreadSafeContext(*tsc);  /* the module keeps the context alive */
  *tsc = NULL;
  if (check_err(LLVMOrcLLJITAddLLVMIRModule(j->jit, jd, tsm), "adding the module to the JIT", j->dg,
                d))  /* consumes tsm */
    return -1;
  for (int i = 0; i < m->n_kernels; i++) {
    LLVMOrcExecutorAddress addr = 0;
    char what[320];
    snprintf(what, sizeof what, "JIT compilation of kernel %s", m->kernels[i]->name);
    if (check_err(LLVMOrcLLJITLookup(j->jit, &addr, m->kernels[i]->name), what, j->dg, d))
      return -1;
    if (!addr) {
      report(d, j->dg, what, "the JIT returned a null address");
      return -1;
    }
    j->fns[i] = (gc_cpu_kernel_fn)(uintptr_t)addr;
  }
  if (j->dg->n_errors) {
    report(d, j->dg, "LLVM reported errors", NULL);
    return -1;
  }
  return 0;
}

/* Emit, verify, optimize and JIT m; stage times into `times` when not NULL. */
static int jit_build(gc_cpu_jit *j, const kir_module *m, const char *passes, gc_sbuf *times,
                     gc_diags *d) {
  char *triple = LLVMGetDefaultTargetTriple();
  char *cpu = LLVMGetHostCPUName();
  char *features = LLVMGetHostCPUFeatures();
  LLVMTargetMachineRef tm = NULL;
  LLVMOrcThreadSafeContextRef tsc = NULL;
  LLVMModuleRef mod = NULL;
  char *layout = NULL, *msg = NULL;
  int rc = -1;
  LLVMTargetRef target = NULL;
  size_t tlen = strlen(triple) + strlen(cpu) + 4;
  j->target = malloc(tlen);
  if (!j->target) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory");
    goto out;
  }
  snprintf(j->target, tlen, "%s (%s)", triple, cpu);
  if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
    char what[300];
    snprintf(what, sizeof what, "LLVM has no target for the host triple %s", triple);
    report(d, NULL, what, msg);
    goto out;
  }
  tm = LLVMCreateTargetMachine(target, triple, cpu, features, LLVMCodeGenLevelAggressive,
                               LLVMRelocDefault, LLVMCodeModelJITDefault);
  if (!tm) {
    report(d, NULL, "cannot create an LLVM target machine for the host", j->target);
    goto out;
  }
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  layout = LLVMCopyStringRepOfTargetData(td);
  LLVMDisposeTargetData(td);

  tsc = LLVMOrcCreateNewThreadSafeContext();
  gc_llvm_diag_install(LLVMOrcThreadSafeContextGetContext(tsc), j->dg);
  double t0 = now_ms();
  gc_llvm_target lt = {GC_LLVM_HOST, 0, triple, layout};
  mod = gc_llvm_emit(LLVMOrcThreadSafeContextGetContext(tsc), m, &lt, d);
  if (!mod || gc_llvm_verify(mod, "after emission", d) != 0) goto out;
  double t1 = now_ms();
  if (gc_llvm_optimize(mod, tm, passes, d) != 0 ||
      gc_llvm_verify(mod, "after optimization", d) != 0)
    goto out;
  double t2 = now_ms();
  if (jit_load(j, m, &mod, &tsc, d) != 0) goto out;
  double t3 = now_ms();
  if (times)
    gc_sbuf_printf(times, "cpu: llvm emit %.2f ms, %s %.2f ms, jit %.2f ms\n", t1 - t0, passes,
                   t2 - t1, t3 - t2);
  rc = 0;
out:
  if (mod) LLVMDisposeModule(mod);
  if (tsc) LLVMOrcDisposeThreadSafeContext(tsc);
  if (tm) LLVMDisposeTargetMachine(tm);
  if (layout) LLVMDisposeMessage(layout);
  if (msg) LLVMDisposeMessage(msg);
  LLVMDisposeMessage(triple);
  LLVMDisposeMessage(cpu);
  LLVMDisposeMessage(features);
  return rc;
}

gc_cpu_jit *gc_cpu_jit_compile(const kir_module *m, const char *passes, gc_sbuf *times,
                               gc_diags *d) {
  if (!passes || !*passes) passes = "default<O3>";
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
  if (jit_build(j, m, passes, times, d) != 0) {
    if (!d->n_errors) report(d, j->dg, "JIT compilation failed", NULL);
    gc_cpu_jit_free(j);
    return NULL;
  }
  return j;
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

int gc_cpu_threads(gc_diags *d) {
  const char *env = getenv("GRAPHC_CPU_THREADS");
  if (env && *env) {
    char *end;
    long v = strtol(env, &end, 10);
    if (*end == 0 && v >= 1 && v <= 1024) return (int)v;
    if (d)
      gc_warning_at(d, noloc, "GRAPHC_CPU_THREADS='%s' is not a number in [1, 1024]; ignored", env);
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    long c = CPU_COUNT(&set);
    if (c >= 1 && (n < 1 || c < n)) n = c;
  }
  if (n < 1) n = 1;
  return n > 1024 ? 1024 : (int)n;
}

/* ==== the backend =================================================================== */

/* An INPUT/OUTPUT argument slot of a kernel, bound at run time. */
typedef struct io_slot {
  int slot;
  int output;                /* 0: inputs[index], 1: outputs[index] */
  int index;
} io_slot;

typedef struct cpu_kernel {
  gc_cpu_kernel_fn fn;
  void **slots;              /* one per kir param */
  int n_io;
  io_slot *io;
  int chunks;                /* ranges per launch (1: inline on the caller) */
} cpu_kernel;

typedef struct cpu_state {
  gc_plan *plan;
  gc_cpu_jit *jit;
  gc_threadpool *pool;
  int threads;
  void *arena;
  void **consts;             /* per plan const: the pointer kernels read */
  void **const_copies;       /* per plan const: an aligned copy we own, or NULL */
  int n_copied;
  size_t *buf_align;         /* per plan buffer: the alignment kernels assume */
  size_t *in_align, *out_align;
  cpu_kernel *kernels;       /* per kir kernel */
  void **in_ptr, **out_ptr;  /* per run: what the I/O slots point at */
  void **in_scratch, **out_scratch;
  pthread_mutex_t run_mu;
  int run_mu_ok;
} cpu_state;

/* Status to return after an error was reported to d. */
static graphc_status_t failed(gc_diags *d) {
  return d->n_errors ? d->status : GRAPHC_STATUS_INTERNAL;
}

/* Alignment that vector statements in block b need on their global buffers. */
static void vec_aligns(const kir_kernel *k, const kir_block *b, size_t *buf_align) {
  for (const kir_stmt *s = b->head; s; s = s->next) {
    switch (s->kind) {
      case KIR_S_LOAD_VEC:
      case KIR_S_STORE_VEC: {
        if (s->u.vec.space != KIR_GLOBAL) break;
        const kir_param *p = &k->params[s->u.vec.buf];
        size_t a = graphc_dtype_size(p->dtype) * (size_t)s->u.vec.width;
        if (a > 16) a = 16;
        if (a > buf_align[p->binding]) buf_align[p->binding] = a;
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

/* Per-buffer alignment (element size, or a vector access's), folded per I/O tensor and const. */
static void compute_aligns(cpu_state *s, size_t *const_align) {
  const gc_plan *p = s->plan;
  for (int i = 0; i < p->n_buffers; i++) {
    size_t a = graphc_dtype_size(p->buffers[i].type.dtype);
    s->buf_align[i] = a ? a : 1;
  }
  for (int i = 0; i < p->kir->n_kernels; i++)
    vec_aligns(p->kir->kernels[i], &p->kir->kernels[i]->body, s->buf_align);
  for (int i = 0; i < p->n_buffers; i++) {
    const gc_plan_buffer *b = &p->buffers[i];
    size_t *dst = b->kind == GC_BUF_INPUT ? &s->in_align[b->index]
                : b->kind == GC_BUF_OUTPUT ? &s->out_align[b->index]
                : b->kind == GC_BUF_CONST ? &const_align[b->index] : NULL;
    if (dst && s->buf_align[i] > *dst) *dst = s->buf_align[i];
  }
}

/* posix_memalign with a reported error; *out NULL when bytes is 0. */
static int aligned_alloc_checked(void **out, size_t align, size_t bytes, const char *what,
                                 gc_diags *d) {
  *out = NULL;
  if (bytes == 0) return 0;
  if (align < sizeof(void *)) align = sizeof(void *);
  int rc = posix_memalign(out, align, bytes);
  if (rc == 0) return 0;
  *out = NULL;
  gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory allocating %zu bytes for %s",
              bytes, what);
  return -1;
}

/* The arena for TEMP buffers, and CONST buffers in place (or aligned copies). */
static int setup_memory(cpu_state *s, gc_exec *exe, gc_diags *d) {
  const gc_plan *p = s->plan;
  size_t ni = exe->n_inputs, no = exe->n_outputs;
  size_t *const_align = calloc((size_t)p->n_consts + 1, sizeof *const_align);
  s->buf_align = calloc((size_t)p->n_buffers + 1, sizeof *s->buf_align);
  s->in_align = calloc(ni + 1, sizeof *s->in_align);
  s->out_align = calloc(no + 1, sizeof *s->out_align);
  s->consts = calloc((size_t)p->n_consts + 1, sizeof *s->consts);
  s->const_copies = calloc((size_t)p->n_consts + 1, sizeof *s->const_copies);
  s->in_ptr = calloc(ni + 1, sizeof *s->in_ptr);
  s->out_ptr = calloc(no + 1, sizeof *s->out_ptr);
  s->in_scratch = calloc(ni + 1, sizeof *s->in_scratch);
  s->out_scratch = calloc(no + 1, sizeof *s->out_scratch);
  if (!const_align || !s->buf_align || !s->in_align || !s->out_align || !s->consts ||
      !s->const_copies || !s->in_ptr || !s->out_ptr || !s->in_scratch || !s->out_scratch) {
    free(const_align);
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory");
    return -1;
  }
  compute_aligns(s, const_align);
  int rc = aligned_alloc_checked(&s->arena, CPU_ARENA_ALIGN, p->arena_bytes,
                                 "the intermediate-buffer arena", d);
  for (int i = 0; i < p->n_consts && rc == 0; i++) {
    const gc_plan_const *c = &p->consts[i];
    size_t a = const_align[i] ? const_align[i] : 1;
    if (((uintptr_t)c->data % a) == 0) {
      s->consts[i] = (void *)c->data;  /* kernels only read CONST buffers */
      continue;
    }
    rc = aligned_alloc_checked(&s->const_copies[i], CPU_ARENA_ALIGN, c->bytes, c->name, d);
    if (rc == 0 && c->bytes) memcpy(s->const_copies[i], c->data, c->bytes);
    s->consts[i] = s->const_copies[i];
    s->n_copied++;
  }
  free(const_align);
  return rc;
}

/* Parallel chunks for a kernel's launch, from its modeled work. */
static int launch_chunks(const kir_kernel *k, int threads) {
  int64_t n = k->launch.n;
  double work = k->bytes_moved + k->flops;
  if (work <= 0) work = 8.0 * (double)n;
  if (threads <= 1 || n < 2 || work < CPU_PAR_MIN_WORK) return 1;
  double c = work / CPU_CHUNK_WORK;
  int chunks = c >= threads ? threads : (int)c;
  if ((int64_t)chunks > n) chunks = (int)n;
  return chunks < 1 ? 1 : chunks;
}

/* Entry points and argument slots of every kernel: TEMP and CONST bound now,
 * INPUT/OUTPUT recorded for run time, I64 scalars from `binding` (lower.h). */
static int setup_kernels(cpu_state *s, gc_diags *d) {
  const gc_plan *p = s->plan;
  const kir_module *m = p->kir;
  s->kernels = calloc((size_t)m->n_kernels + 1, sizeof *s->kernels);
  if (!s->kernels) goto oom;
  for (int i = 0; i < m->n_kernels; i++) {
    const kir_kernel *k = m->kernels[i];
    cpu_kernel *ck = &s->kernels[i];
    ck->fn = gc_cpu_jit_kernel(s->jit, i);
    ck->slots = calloc((size_t)k->n_params + 1, sizeof *ck->slots);
    ck->io = calloc((size_t)k->n_params + 1, sizeof *ck->io);
    if (!ck->slots || !ck->io) goto oom;
    ck->chunks = launch_chunks(k, s->threads);
    for (int j = 0; j < k->n_params; j++) {
      const kir_param *kp = &k->params[j];
      if (kp->kind == KIR_PARAM_I64) {
        ck->slots[j] = (void *)(intptr_t)(int64_t)kp->binding;
        continue;
      }
      GC_ASSERT(kp->binding >= 0 && kp->binding < p->n_buffers);
      const gc_plan_buffer *b = &p->buffers[kp->binding];
      switch (b->kind) {
        case GC_BUF_INPUT:
        case GC_BUF_OUTPUT:
          ck->io[ck->n_io++] = (io_slot){j, b->kind == GC_BUF_OUTPUT, b->index};
          break;
        case GC_BUF_CONST:
          GC_ASSERT(b->index >= 0 && b->index < p->n_consts);
          ck->slots[j] = s->consts[b->index];
          break;
        case GC_BUF_TEMP:
          GC_ASSERT(b->offset + b->bytes <= p->arena_bytes && s->arena);
          ck->slots[j] = (char *)s->arena + b->offset;
          break;
      }
    }
  }
  return 0;
oom:
  gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory");
  return -1;
}

/* Lower, JIT-compile, place memory, bind slots, start the pool (see the header comment). */
static graphc_status_t cpu_prepare(gc_exec *exe, const graphc_compile_options_t *opts,
                                   gc_diags *d) {
  cpu_state *s = calloc(1, sizeof *s);
  if (!s) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory");
    return GRAPHC_STATUS_OUT_OF_MEMORY;
  }
  exe->state = s;
  if (pthread_mutex_init(&s->run_mu, NULL) != 0) {
    gc_error_at(d, GRAPHC_STATUS_INTERNAL, noloc, "cpu backend: cannot initialize a mutex");
    return GRAPHC_STATUS_INTERNAL;
  }
  s->run_mu_ok = 1;
  s->threads = gc_cpu_threads(d);
  kir_target t;
  kir_target_host(&t, s->threads);
  double t0 = now_ms();
  /* -O0 or --disable-pass=fusion lowers one op per kernel, unfused. */
  s->plan = gc_lower_opts(exe->graph, exe->weights, &t, exe->fuse, d);
  if (!s->plan) return failed(d);
  double t1 = now_ms();
  gc_plan_stats(&exe->stats, s->plan);
  gc_sbuf times = {0};
  const char *passes = getenv("GRAPHC_CPU_PASSES");
  s->jit = gc_cpu_jit_compile(s->plan->kir, passes, opts && opts->time_passes ? &times : NULL, d);
  if (!s->jit) {
    gc_sbuf_free(&times);
    return failed(d);
  }
  if (opts && opts->time_passes) {
    gc_sbuf_printf(&exe->stats, "cpu: lower %.2f ms\n", t1 - t0);
    if (times.data) gc_sbuf_puts(&exe->stats, times.data);
  }
  gc_sbuf_free(&times);
  if (setup_memory(s, exe, d) != 0 || setup_kernels(s, d) != 0) return failed(d);
  s->pool = gc_threadpool_create(s->threads, d);
  if (!s->pool) return failed(d);
  gc_sbuf_printf(&exe->stats, "cpu: %s, %d threads, arena %zu bytes, %d of %d consts copied\n",
                 gc_cpu_jit_target(s->jit), s->threads, s->plan->arena_bytes, s->n_copied,
                 s->plan->n_consts);
  return GRAPHC_STATUS_OK;
}

/* One launch's range, as the pool calls it. */
typedef struct cpu_task {
  gc_cpu_kernel_fn fn;
  void *const *slots;
} cpu_task;

/* Pool callback: run the launch's kernel over items [begin, end). */
static void run_range(void *arg, int64_t begin, int64_t end) {
  const cpu_task *t = arg;
  t->fn(t->slots, begin, end);
}

/* 1 when [a, a+na) and [b, b+nb) share a byte. */
static int overlaps(const void *a, size_t na, const void *b, size_t nb) {
  uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return na && nb && x < y + nb && y < x + na;
}

/* Point the I/O slots at the caller's tensors, or at scratch copies where a
 * tensor is misaligned for the kernels or an output overlaps another tensor
 * (kernel buffers are noalias). */
static int bind_io(cpu_state *s, gc_exec *exe, const graphc_tensor_t *in,
                   const graphc_tensor_t *out, gc_diags *d) {
  for (size_t i = 0; i < exe->n_inputs; i++) {
    s->in_ptr[i] = in[i].data;
    size_t a = s->in_align[i];
    if (a <= 1 || (uintptr_t)in[i].data % a == 0) continue;
    if (aligned_alloc_checked(&s->in_scratch[i], CPU_ARENA_ALIGN, exe->inputs[i].nbytes,
                              "an aligned copy of an input", d))
      return -1;
    memcpy(s->in_scratch[i], in[i].data, exe->inputs[i].nbytes);
    s->in_ptr[i] = s->in_scratch[i];
  }
  for (size_t i = 0; i < exe->n_outputs; i++) {
    size_t n = exe->outputs[i].nbytes, a = s->out_align[i];
    int scratch = a > 1 && (uintptr_t)out[i].data % a != 0;
    for (size_t j = 0; j < exe->n_inputs && !scratch; j++)
      scratch = overlaps(out[i].data, n, in[j].data, exe->inputs[j].nbytes);
    for (size_t j = 0; j < i && !scratch; j++)
      scratch = overlaps(out[i].data, n, out[j].data, exe->outputs[j].nbytes);
    s->out_ptr[i] = out[i].data;
    if (!scratch) continue;
    if (aligned_alloc_checked(&s->out_scratch[i], CPU_ARENA_ALIGN, n, "an output buffer", d))
      return -1;
    s->out_ptr[i] = s->out_scratch[i];
  }
  const kir_module *m = s->plan->kir;
  for (int i = 0; i < m->n_kernels; i++) {
    cpu_kernel *ck = &s->kernels[i];
    for (int j = 0; j < ck->n_io; j++) {
      const io_slot *io = &ck->io[j];
      ck->slots[io->slot] = io->output ? s->out_ptr[io->index] : s->in_ptr[io->index];
    }
  }
  return 0;
}

/* Free the scratch buffers of one run. */
static void free_scratch(cpu_state *s, gc_exec *exe) {
  for (size_t i = 0; i < exe->n_inputs; i++) {
    free(s->in_scratch[i]);
    s->in_scratch[i] = NULL;
  }
  for (size_t i = 0; i < exe->n_outputs; i++) {
    free(s->out_scratch[i]);
    s->out_scratch[i] = NULL;
  }
}

/* Bind the I/O, run every launch in plan order (each waits for the previous one). */
static graphc_status_t cpu_run(gc_exec *exe, const graphc_tensor_t *in, graphc_tensor_t *out,
                               gc_diags *d) {
  cpu_state *s = exe->state;
  if (!s || !s->pool) {
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, noloc, "executable is not prepared");
    return GRAPHC_STATUS_INVALID_ARGUMENT;
  }
  pthread_mutex_lock(&s->run_mu);
  int rc = bind_io(s, exe, in, out, d);
  const gc_plan *p = s->plan;
  for (int i = 0; i < p->n_launches && rc == 0; i++) {
    int ki = p->launches[i];
    const cpu_kernel *ck = &s->kernels[ki];
    cpu_task t = {ck->fn, ck->slots};
    gc_threadpool_run(s->pool, run_range, &t, p->kir->kernels[ki]->launch.n, ck->chunks);
  }
  for (size_t i = 0; i < exe->n_outputs && rc == 0; i++)
    if (s->out_scratch[i]) memcpy(out[i].data, s->out_scratch[i], exe->outputs[i].nbytes);
  free_scratch(s, exe);
  pthread_mutex_unlock(&s->run_mu);
  return rc == 0 ? GRAPHC_STATUS_OK : failed(d);
}

/* Free everything prepare made; tolerates a partially prepared state. */
static void cpu_release(gc_exec *exe) {
  cpu_state *s = exe->state;
  if (!s) return;
  exe->state = NULL;
  gc_threadpool_destroy(s->pool);
  if (s->kernels && s->plan)
    for (int i = 0; i < s->plan->kir->n_kernels; i++) {
      free(s->kernels[i].slots);
      free(s->kernels[i].io);
    }
  free(s->kernels);
  gc_cpu_jit_free(s->jit);
  if (s->const_copies && s->plan)
    for (int i = 0; i < s->plan->n_consts; i++) free(s->const_copies[i]);
  free(s->const_copies);
  free(s->consts);
  free(s->arena);
  free(s->buf_align);
  free(s->in_align);
  free(s->out_align);
  free(s->in_ptr);
  free(s->out_ptr);
  free(s->in_scratch);
  free(s->out_scratch);
  gc_plan_free(s->plan);
  if (s->run_mu_ok) pthread_mutex_destroy(&s->run_mu);
  free(s);
}

const gc_backend gc_backend_cpu = {
    .name = "cpu",
    .prepare = cpu_prepare,
    .run = cpu_run,
    .run_device = NULL,
    .release = cpu_release,
};
