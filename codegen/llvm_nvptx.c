/* llvm_nvptx.c - Kernel IR to PTX through LLVM's NVPTX backend.
 *
 *   gc_llvm_ptx_ex (what the CUDA backend runs): one LLVM module per kernel
 *
 *     kernel i: [dedup: the same Kernel IR as an earlier kernel, names masked?
 *       then reuse its code]                                        (serial)
 *     kernel i --gc_llvm_emit--> module_i --verify--> [link libdevice, internalize]
 *       --> default<O3> --> verify --NVPTX AsmPrinter--> PTX_i
 *                                         (distinct kernels, on a few threads)
 *     PTX = header + PTX_0 + PTX_1 + ... in kernel order (+ alias comments)
 *
 *   gc_llvm_ptx with ir_text (--emit llvm): the whole kir_module as ONE module,
 *   same passes; the IR text is of that module.
 *
 * Each module owns its LLVMContext and target machine, so modules compile in
 * parallel; the only process-wide state is the one-time NVPTX target
 * registration (pthread_once). The output never depends on the thread count:
 * every kernel is compiled alone and the parts are joined in kernel order.
 * LLVM 19 knows sm_20..sm_90: a newer GPU gets PTX for sm_90 (the newest
 * below it) and nvJitLink / the driver compile that PTX for the real sm.
 * Math (exp, log, tanh, erf, sin, cos, pow, fmod) comes from the toolkit's
 * libdevice.10.bc, linked only into modules that call a __nv_ function and
 * loaded lazily so only the functions used are read; no FTZ (module flag
 * nvvm-reflect-ftz = 0), no FMA contraction, IEEE div and sqrt.
 * NVPTX numbers call sites from a process-wide counter ("// callseq N"); the
 * PTX is renumbered so the same module always gives the same text.
 *
 * Dedup (opts->dedup): kernels whose Kernel IR is the same once the kernel's
 * name, variable and parameter names and buffer bindings are masked (same code,
 * same launch bounds, same shared arrays) are emitted and compiled once (the
 * LLVM IR depends on nothing else); the PTX then has no entry for the
 * copy and ends with "// graphc alias COPY = ORIGINAL" lines, which
 * gc_ptx_kernel_alias reads back (the launch plan runs ORIGINAL's code with
 * COPY's arguments). A transformer with N identical layers compiles one.
 */
#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "codegen/codegen.h"
#include "codegen/llvm_emit.h"

#ifndef GRAPHC_CUDA_HOME
#define GRAPHC_CUDA_HOME "/usr/local/cuda"
#endif

#define NVPTX_TRIPLE "nvptx64-nvidia-cuda"
/* PTX ISA 7.8 (CUDA 11.8): covers sm_50..sm_90 and keeps old drivers able to JIT it.
 * A module with Hopper warpgroup MMAs (kir_module_uses_wgmma) is for sm_90a, PTX ISA 8.0. */
#define NVPTX_FEATURES "+ptx78"
#define NVPTX_FEATURES_A "+ptx83"  /* fence.proxy.tensormap (TMA kernels) needs PTX 8.3 */

static pthread_once_t nvptx_once = PTHREAD_ONCE_INIT;

/* Register the NVPTX target with LLVM (once per process). */
static void nvptx_init(void) {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
}

/* The newest sm LLVM 19 supports that is <= sm; 0 when sm is older than all. */
static int llvm_sm(int sm) {
  static const int known[] = {50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90};
  int best = 0;
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (known[i] <= sm) best = known[i];
  return best;
}

/* Report a compile error carrying LLVM's collected diagnostics. */
static void report(gc_diags *d, const gc_llvm_diag *dg, const char *what, const char *msg) {
  gc_loc noloc = {0, 0};
  gc_error_at(d, GRAPHC_STATUS_COMPILE_ERROR, noloc, "%s%s%s%s%s", what, msg ? ": " : "",
              msg ? msg : "", dg && dg->msgs.len ? "\n" : "", dg && dg->msgs.len ? dg->msgs.data : "");
}

/* Path of libdevice.10.bc into buf: tc's GRAPHC_LIBDEVICE, then <cuda>/nvvm/libdevice
 * for the build's toolkit, CUDA_HOME, CUDA_PATH and /usr/local/cuda. 0 if none exists. */
static int find_libdevice(const gc_toolchain *tc, char *buf, size_t n, gc_sbuf *tried) {
  const char *env = tc ? tc->libdevice : NULL;
  if (env && *env) {
    snprintf(buf, n, "%s", env);
    gc_sbuf_printf(tried, " %s", buf);
    return access(buf, R_OK) == 0;
  }
  const char *homes[] = {GRAPHC_CUDA_HOME, tc ? tc->cuda_home : NULL, tc ? tc->cuda_path : NULL,
                         "/usr/local/cuda"};
  for (size_t i = 0; i < sizeof homes / sizeof homes[0]; i++) {
    if (!homes[i] || !*homes[i]) continue;
    snprintf(buf, n, "%s/nvvm/libdevice/libdevice.10.bc", homes[i]);
    gc_sbuf_printf(tried, " %s", buf);
    if (access(buf, R_OK) == 0) return 1;
  }
  return 0;
}

/* Parse libdevice, retarget it to our triple/layout and link it into mod. */
static int link_libdevice(LLVMContextRef ctx, LLVMModuleRef mod, const gc_toolchain *tc,
                          gc_llvm_diag *dg, gc_diags *d) {
  char path[4096];
  gc_sbuf tried = {0};
  int found = find_libdevice(tc, path, sizeof path, &tried);
  if (!found) {
    gc_loc noloc = {0, 0};
    gc_error_at(d, GRAPHC_STATUS_COMPILE_ERROR, noloc,
                "libdevice (CUDA math library) not found; tried:%s; set GRAPHC_LIBDEVICE to "
                "libdevice.10.bc", tried.data ? tried.data : "");
    gc_sbuf_free(&tried);
    return -1;
  }
  gc_sbuf_free(&tried);
  LLVMMemoryBufferRef mb = NULL;
  char *msg = NULL;
  if (LLVMCreateMemoryBufferWithContentsOfFile(path, &mb, &msg)) {
    char what[4200];
    snprintf(what, sizeof what, "cannot read libdevice %s", path);
    report(d, dg, what, msg);
    LLVMDisposeMessage(msg);
    return -1;
  }
  LLVMModuleRef lib = NULL;
  if (LLVMGetBitcodeModuleInContext2(ctx, mb, &lib)) {  /* lazy: bodies read on demand */
    LLVMDisposeMemoryBuffer(mb);  /* owned by the module only on success */
    char what[4200];
    snprintf(what, sizeof what, "cannot parse libdevice %s", path);
    report(d, dg, what, NULL);
    return -1;
  }
  LLVMSetTarget(lib, LLVMGetTarget(mod));
  LLVMSetDataLayout(lib, LLVMGetDataLayoutStr(mod));
  /* linkonce_odr: the linker then brings in only what mod references (and what
   * those reference), not all ~350 functions: ~2x faster compiles */
  for (LLVMValueRef f = LLVMGetFirstFunction(lib); f; f = LLVMGetNextFunction(f))
    if (LLVMGetLinkage(f) == LLVMExternalLinkage) LLVMSetLinkage(f, LLVMLinkOnceODRLinkage);
  for (LLVMValueRef g = LLVMGetFirstGlobal(lib); g; g = LLVMGetNextGlobal(g))
    if (LLVMGetLinkage(g) == LLVMExternalLinkage) LLVMSetLinkage(g, LLVMLinkOnceODRLinkage);
  if (LLVMLinkModules2(mod, lib)) {  /* lib (and its buffer) is destroyed either way */
    report(d, dg, "linking libdevice failed", NULL);
    return -1;
  }
  return 0;
}

/* Renumber the counters NVPTX prints after `key` ("// callseq 7") in
 * order of first appearance. LLVM takes them from a process-wide atomic, so
 * without this the same module would give different PTX on each call. */
static char *renumber(const char *ptx, const char *key) {
  gc_sbuf out = {0};
  int64_t *seen = NULL;
  int n = 0, cap = 0;
  size_t klen = strlen(key);
  const char *p = ptx;
  for (const char *q; (q = strstr(p, key)) != NULL;) {
    q += klen;
    char *end;
    long long v = strtoll(q, &end, 10);
    gc_sbuf_printf(&out, "%.*s", (int)(q - p), p);
    p = q;
    if (end == q) continue;
    int i = n - 1;
    while (i >= 0 && seen[i] != v) i--;
    if (i < 0) {
      if (n == cap) {
        int64_t *ns = realloc(seen, sizeof *seen * (size_t)(cap = cap ? 2 * cap : 64));
        if (!ns) {
          out.failed = 1;
          break;
        }
        seen = ns;
      }
      seen[i = n++] = v;
    }
    gc_sbuf_printf(&out, "%d", i);
    p = end;
  }
  gc_sbuf_puts(&out, p);
  free(seen);
  if (out.failed) {
    gc_sbuf_free(&out);
    return NULL;
  }
  return gc_sbuf_take(&out);
}

/* Copy an LLVM memory buffer into a NUL-terminated malloc'd string. */
static char *buffer_string(LLVMMemoryBufferRef mb) {
  size_t n = LLVMGetBufferSize(mb);
  char *s = malloc(n + 1);
  if (!s) return NULL;
  memcpy(s, LLVMGetBufferStart(mb), n);
  s[n] = 0;
  return s;
}

/* Copy an LLVM-owned message into a malloc'd string and dispose the original. */
static char *take_message(char *m) {
  char *s = m ? strdup(m) : NULL;
  if (m) LLVMDisposeMessage(m);
  return s;
}

/* Milliseconds of CPU time of the calling thread (phase times) or of wall time. */
static double thread_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}
static double wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* The NVPTX target machine for sm_<target_sm> (sm_90a with arch_a; reported on failure).
 * Code generation at the default level: Aggressive printed the same PTX for every example
 * model and took longer (whole compile to PTX on the 2-core VM, 2026-12-01:
 * transformer_block_f16 726 -> 590-620 ms, resnet_f16 370 -> 305 ms); ptxas redoes the
 * machine-level work anyway. */
static LLVMTargetMachineRef make_tm(int target_sm, int arch_a, gc_diags *d) {
  pthread_once(&nvptx_once, nvptx_init);
  LLVMTargetRef target = NULL;
  char *msg = NULL;
  if (LLVMGetTargetFromTriple(NVPTX_TRIPLE, &target, &msg)) {
    report(d, NULL, "LLVM has no NVPTX target", msg);
    LLVMDisposeMessage(msg);
    return NULL;
  }
  char cpu[16];
  snprintf(cpu, sizeof cpu, "sm_%d%s", target_sm, arch_a ? "a" : "");
  LLVMTargetMachineRef tm =
      LLVMCreateTargetMachine(target, NVPTX_TRIPLE, cpu, arch_a ? NVPTX_FEATURES_A : NVPTX_FEATURES,
                              LLVMCodeGenLevelDefault,
                              LLVMRelocDefault, LLVMCodeModelDefault);
  if (!tm) report(d, NULL, "cannot create the LLVM NVPTX target machine", cpu);
  return tm;
}

/* Build mod from m in ctx for tm (unoptimized, verified); NULL on error. */
static LLVMModuleRef emit_module(LLVMContextRef ctx, LLVMTargetMachineRef tm, const kir_module *m,
                                 int sm, gc_diags *d) {
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  char *layout = LLVMCopyStringRepOfTargetData(td);
  LLVMDisposeTargetData(td);
  gc_llvm_target t = {GC_LLVM_NVPTX, sm, NVPTX_TRIPLE, layout};
  LLVMModuleRef mod = gc_llvm_emit(ctx, m, &t, d);
  LLVMDisposeMessage(layout);
  if (mod && gc_llvm_verify(mod, "after emission", d) != 0) {
    LLVMDisposeModule(mod);
    mod = NULL;
  }
  return mod;
}

/* libdevice when mod calls it, internalize, default<O3>, verify. Adds the
 * CPU times to *t_link and *t_opt. */
static int optimize(LLVMContextRef ctx, LLVMTargetMachineRef tm, LLVMModuleRef mod,
                    const kir_module *m, const gc_toolchain *tc, gc_llvm_diag *dg, gc_diags *d,
                    double *t_link, double *t_opt) {
  double t0 = thread_ms();
  int rc = 0;
  if (gc_llvm_uses_libdevice(mod)) {
    rc = link_libdevice(ctx, mod, tc, dg, d);
    if (rc == 0) gc_llvm_internalize(mod, m);
  }
  double t1 = thread_ms();
  if (rc == 0) rc = gc_llvm_optimize(mod, tm, "default<O3>", d);
  if (rc == 0) rc = gc_llvm_verify(mod, "after optimization", d);
  *t_link += t1 - t0;
  *t_opt += thread_ms() - t1;
  return rc;
}

/* PTX text of mod as NVPTX prints it (not renumbered), malloc'd; NULL on error. */
static char *codegen(LLVMTargetMachineRef tm, LLVMModuleRef mod, gc_llvm_diag *dg, gc_diags *d) {
  LLVMMemoryBufferRef mb = NULL;
  char *msg = NULL, *raw = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &msg, &mb)) {
    report(d, dg, "NVPTX code generation failed", msg);
  } else {
    raw = buffer_string(mb);
    LLVMDisposeMemoryBuffer(mb);
    if (!raw) report(d, NULL, "out of memory copying PTX", NULL);
  }
  if (msg) LLVMDisposeMessage(msg);
  if (raw && dg->n_errors) {
    report(d, dg, "LLVM reported errors", NULL);
    free(raw);
    raw = NULL;
  }
  return raw;
}

/* The whole module as one LLVM module (for the IR text): emit, optimize, print. */
static int compile_whole(LLVMContextRef ctx, LLVMTargetMachineRef tm, const kir_module *m, int sm,
                         char **ptx, char **ir_text, const gc_toolchain *tc, gc_llvm_diag *dg,
                         gc_diags *d) {
  LLVMModuleRef mod = emit_module(ctx, tm, m, sm, d);
  if (!mod) return -1;
  double tl = 0, to = 0;
  int rc = optimize(ctx, tm, mod, m, tc, dg, d, &tl, &to);
  if (rc == 0 && ir_text) {
    *ir_text = take_message(LLVMPrintModuleToString(mod));
    if (!*ir_text) rc = -1, report(d, NULL, "out of memory printing LLVM IR", NULL);
  }
  if (rc == 0 && ptx) {
    char *raw = codegen(tm, mod, dg, d);
    *ptx = raw ? renumber(raw, "// callseq ") : NULL;  /* no indirect calls: no prototypes */
    if (raw && !*ptx) report(d, NULL, "out of memory copying PTX", NULL);
    free(raw);
    if (!*ptx) rc = -1;
  }
  if (rc == 0 && dg->n_errors) {
    report(d, dg, "LLVM reported errors", NULL);
    rc = -1;
  }
  LLVMDisposeModule(mod);
  return rc;
}

/* ---- one module per kernel -------------------------------------------------------------- */

typedef struct nv_job {
  kir_module one;          /* a view of m holding just this kernel */
  const char *name;
  LLVMContextRef ctx;
  LLVMModuleRef mod;       /* until compiled */
  gc_llvm_diag dg;
  gc_diags d;
  char *key;               /* dedup: Kernel IR with names and bindings masked */
  int canon;               /* the job whose code this kernel runs (itself when distinct) */
  char *raw;               /* PTX as printed */
  long size;               /* Kernel IR size (biggest kernels go first) */
  double t_emit, t_link, t_opt, t_cg;  /* CPU ms of the phases */
  int rc;
} nv_job;

typedef struct nv_pool {
  nv_job *jobs;
  const int *order;        /* distinct kernels, biggest first */
  int n, sm, arch_a;
  atomic_int next;
  const gc_toolchain *tc;  /* where libdevice is */
} nv_pool;



/* Give the module's non-kernel definitions (libdevice functions not inlined,
 * its tables) the kernel's name as a prefix, so joined PTX parts never define
 * the same symbol twice. The kernel's shared arrays are already NAME_smemK. */
static void prefix_locals(LLVMModuleRef mod, const char *name) {
  size_t nl = strlen(name);
  char buf[512];
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
    size_t len;
    const char *fn = LLVMGetValueName2(f, &len);
    if (LLVMIsDeclaration(f) || (len == nl && memcmp(fn, name, nl) == 0)) continue;
    snprintf(buf, sizeof buf, "%s__%.*s", name, (int)len, fn);
    LLVMSetValueName2(f, buf, strlen(buf));
  }
  for (LLVMValueRef g = LLVMGetFirstGlobal(mod); g; g = LLVMGetNextGlobal(g)) {
    size_t len;
    const char *gn = LLVMGetValueName2(g, &len);
    if (LLVMIsDeclaration(g) || (len > nl && memcmp(gn, name, nl) == 0 && gn[nl] == '_')) continue;
    snprintf(buf, sizeof buf, "%s__%.*s", name, (int)len, gn);
    LLVMSetValueName2(g, buf, strlen(buf));
  }
}

/* Emit, optimize and generate code for one distinct kernel (any thread). */
static void run_job(nv_job *j, int sm, int arch_a, const gc_toolchain *tc) {
  LLVMTargetMachineRef tm = make_tm(sm, arch_a, &j->d);
  if (!tm) {
    j->rc = -1;
    return;
  }
  double t0 = thread_ms();
  j->ctx = LLVMContextCreate();
  gc_llvm_diag_install(j->ctx, &j->dg);
  j->mod = emit_module(j->ctx, tm, &j->one, sm, &j->d);
  j->t_emit = thread_ms() - t0;
  if (!j->mod) {
    j->rc = -1;
    LLVMDisposeTargetMachine(tm);
    return;
  }
  j->rc = optimize(j->ctx, tm, j->mod, &j->one, tc, &j->dg, &j->d, &j->t_link, &j->t_opt);
  if (j->rc == 0) {
    double t0 = thread_ms();
    prefix_locals(j->mod, j->name);
    j->raw = codegen(tm, j->mod, &j->dg, &j->d);
    if (!j->raw) j->rc = -1;
    j->t_cg += thread_ms() - t0;
  }
  LLVMDisposeModule(j->mod);
  j->mod = NULL;
  LLVMDisposeTargetMachine(tm);
}

/* Worker: take the next distinct kernel until none is left. The order only
 * balances the threads; the output is joined in kernel order. */
static void *worker(void *arg) {
  nv_pool *p = arg;
  for (int i; (i = atomic_fetch_add(&p->next, 1)) < p->n;)
    run_job(&p->jobs[p->order[i]], p->sm, p->arch_a, p->tc);
  return NULL;
}


/* Join the parts in kernel order: the header of the first, then the body of
 * each (everything after ".address_size"), then the alias lines. */
static char *join(nv_job *jobs, int n) {
  gc_sbuf b = {0};
  int first = 1;
  for (int i = 0; i < n; i++) {
    if (jobs[i].canon != i) continue;
    const char *s = jobs[i].raw;
    if (!first) {
      const char *a = strstr(s, "\n.address_size");
      const char *e = a ? strchr(a + 1, '\n') : NULL;
      if (e) s = e + 1;
    }
    gc_sbuf_puts(&b, s);
    first = 0;
  }
  for (int i = 0; i < n; i++)
    if (jobs[i].canon != i)
      gc_sbuf_printf(&b, "// graphc alias %s = %s\n", jobs[i].name, jobs[jobs[i].canon].name);
  if (b.failed) {
    gc_sbuf_free(&b);
    return NULL;
  }
  return gc_sbuf_take(&b);
}

const char *gc_ptx_kernel_alias(const char *ptx, const char *name, char *buf, size_t len) {
  static const char tag[] = "\n// graphc alias ";
  size_t nl = strlen(name);
  for (const char *p = ptx ? strstr(ptx, tag) : NULL; p; p = strstr(p + 1, tag)) {
    const char *q = p + sizeof tag - 1;
    if (strncmp(q, name, nl) != 0 || strncmp(q + nl, " = ", 3) != 0) continue;
    q += nl + 3;
    size_t k = strcspn(q, "\n");
    if (k == 0 || k >= len) break;
    memcpy(buf, q, k);
    buf[k] = 0;
    return buf;
  }
  return name;
}

/* Threads for n distinct kernels (codegen.h). */
int gc_llvm_pick_threads(int want, int configured, int n) {
  if (want <= 0) {
    if (configured >= 1) {
      want = configured > 64 ? 64 : configured;
    } else {
      want = (int)sysconf(_SC_NPROCESSORS_ONLN);
      if (want > 8) want = 8;
    }
  }
  if (want < 1) want = 1;
  if (want > 64) want = 64;
  return want < n ? want : n;
}

int gc_llvm_ptx_ex(const kir_module *m, int sm, const gc_llvm_ptx_opts *opts, char **ptx,
                   gc_llvm_times *times, const gc_toolchain *tc, gc_diags *d) {
  *ptx = NULL;
  double w0 = wall_ms();
  gc_llvm_times tz;
  if (!times) times = &tz;
  memset(times, 0, sizeof *times);
  times->kernels = m->n_kernels;
  int target_sm = llvm_sm(sm);
  if (target_sm == 0) {
    gc_error_at(d, GRAPHC_STATUS_COMPILE_ERROR, (gc_loc){0, 0},
                "LLVM NVPTX backend: sm_%d is not supported (needs sm_50 or newer)", sm);
    return -1;
  }
  int n = m->n_kernels;
  if (n == 0) {  /* nothing to split: the whole (empty) module, a PTX header */
    int rc = gc_llvm_ptx(m, sm, ptx, NULL, tc, d);
    times->wall = wall_ms() - w0;
    return rc;
  }
  nv_job *jobs = calloc((size_t)n, sizeof *jobs);
  int *order = calloc((size_t)n, sizeof *order);
  if (!jobs || !order) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
    free(jobs);
    free(order);
    return -1;
  }
  /* Find copies (Kernel IR with names masked); emission, optimization and code
   * generation of the distinct kernels run on the threads. */
  int rc = 0, distinct = 0;
  for (int i = 0; i < n; i++) {
    nv_job *j = &jobs[i];
    j->one.n_kernels = 1;
    j->one.kernels = &m->kernels[i];
    j->name = m->kernels[i]->name;
    j->canon = i;
    gc_diags_init(&j->d, "", NULL, 0);
  }
  double t0 = thread_ms();
  for (int i = 0; i < n && rc == 0; i++) {
    nv_job *j = &jobs[i];
    const kir_kernel *ki = m->kernels[i];
    j->size = (long)ki->n_vars + 4L * ki->n_params;
    int twin = 0;
    for (int k = 0; opts && opts->dedup && k < n && !twin; k++)
      twin = k != i && kir_maybe_same(m->kernels[k], ki);
    if (twin) {
      if (!(j->key = kir_canonical_text(ki))) {
        gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
        rc = -1;
      }
      for (int k = 0; rc == 0 && k < i; k++)
        if (jobs[k].canon == k && jobs[k].key && strcmp(jobs[k].key, j->key) == 0) {
          j->canon = k;
          break;
        }
    }
    if (rc == 0 && j->canon == i) {  /* insert into order, biggest first, then kernel order */
      int at = distinct++;
      while (at > 0 && jobs[order[at - 1]].size < j->size) order[at] = order[at - 1], at--;
      order[at] = i;
    }
  }
  times->emit += thread_ms() - t0;
  /* Emit, optimize and generate code for the distinct kernels on the threads. */
  int nt = rc == 0 ? gc_llvm_pick_threads(opts ? opts->threads : 0, tc ? tc->compile_threads : 0, distinct) : 0;
  nv_pool pool = {jobs, order, distinct, target_sm, target_sm == 90 && kir_module_uses_wgmma(m), 0, tc};
  pthread_t *th = nt > 1 ? calloc((size_t)nt, sizeof *th) : NULL;
  int started = 0;
  for (int t = 1; th && t < nt; t++, started++)  /* the calling thread is worker 0 */
    if (pthread_create(&th[t], NULL, worker, &pool) != 0) break;
  if (rc == 0) worker(&pool);
  for (int t = 1; t <= started; t++) pthread_join(th[t], NULL);
  free(th);
  times->threads = rc == 0 ? started + 1 : 0;
  times->compiled = distinct;
  /* Errors in kernel order, then join. */
  for (int i = 0; i < n; i++) {
    nv_job *j = &jobs[i];
    times->emit += j->t_emit;
    times->libdevice += j->t_link;
    times->optimize += j->t_opt;
    times->codegen += j->t_cg;
    for (int k = 0; k < j->d.n; k++)  /* only failed jobs have diagnostics */
      gc_error_at(d, j->d.status, (gc_loc){0, 0}, "%s", j->d.items[k].msg);
    if (j->rc != 0) rc = -1;
  }
  if (rc == 0) {
    char *joined = join(jobs, n);
    *ptx = joined ? renumber(joined, "// callseq ") : NULL;
    free(joined);
    if (!*ptx) {
      gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory joining PTX");
      rc = -1;
    }
  }
  for (int i = 0; i < n; i++) {
    nv_job *j = &jobs[i];
    if (j->mod) LLVMDisposeModule(j->mod);
    if (j->ctx) LLVMContextDispose(j->ctx);
    gc_sbuf_free(&j->dg.msgs);
    gc_diags_free(&j->d);
    free(j->key);
    free(j->raw);
  }
  free(jobs);
  free(order);
  times->wall = wall_ms() - w0;
  return rc;
}

int gc_llvm_ptx(const kir_module *m, int sm, char **ptx, char **ir_text, const gc_toolchain *tc,
                gc_diags *d) {
  if (ptx) *ptx = NULL;
  if (ir_text) *ir_text = NULL;
  if (!ir_text) return ptx ? gc_llvm_ptx_ex(m, sm, NULL, ptx, NULL, tc, d) : 0;
  int target_sm = llvm_sm(sm);
  if (target_sm == 0) {
    gc_loc noloc = {0, 0};
    gc_error_at(d, GRAPHC_STATUS_COMPILE_ERROR, noloc,
                "LLVM NVPTX backend: sm_%d is not supported (needs sm_50 or newer)", sm);
    return -1;
  }
  LLVMTargetMachineRef tm = make_tm(target_sm, target_sm == 90 && kir_module_uses_wgmma(m), d);
  if (!tm) return -1;
  LLVMContextRef ctx = LLVMContextCreate();
  gc_llvm_diag dg = {{0}, 0};
  gc_llvm_diag_install(ctx, &dg);
  int rc = compile_whole(ctx, tm, m, target_sm, ptx, ir_text, tc, &dg, d);
  LLVMContextDispose(ctx);
  LLVMDisposeTargetMachine(tm);
  gc_sbuf_free(&dg.msgs);
  if (rc != 0) {
    if (ptx) free(*ptx), *ptx = NULL;
    if (ir_text) free(*ir_text), *ir_text = NULL;
  }
  return rc;
}
