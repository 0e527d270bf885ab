/* cpu_aot.c - host code compiled ahead of time into an object (see cpu_aot.h).
 *
 * The kernels keep the host ABI of the JIT (codegen/llvm_emit.h); what
 * differs from cpu_backend.c is only the end of the pipeline: a target
 * machine with PIC relocations emits an object file into memory instead of
 * ORC compiling it in process, and the plan goes into a bundle instead of
 * straight into host_exec.c. Kernel symbols carry the model's prefix and
 * hidden visibility, everything else is internal, so two models link into
 * one program without clashes and nothing leaks out of a shared library.
 */
#include "driver/cpu_aot.h"

#include <inttypes.h>
#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/bundle.h"
#include "driver/cpu_backend.h"
#include "driver/launch_build.h"
#include "driver/settings.h"
#include "runtime/host_exec.h"
#include "codegen/llvm_emit.h"

static const gc_loc noloc = {0, 0};

/* CPU names --cpu accepts besides "native" (checked here: LLVM only warns on
 * stderr about a name it does not know). */
static const char *const known_cpus[] = {"generic", "x86-64", "x86-64-v2", "x86-64-v3",
                                         "x86-64-v4", NULL};

static pthread_once_t aot_once = PTHREAD_ONCE_INIT;
static int aot_init_failed;  /* written once, under aot_once */

/* Register the native target and its asm printer with LLVM (once per process). */
static void aot_init(void) {
  aot_init_failed = LLVMInitializeNativeTarget() || LLVMInitializeNativeAsmPrinter();
}

/* Monotonic milliseconds, for stage timings. */
static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Report out of memory; returns -1. */
static int oom(gc_diags *d) {
  gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory");
  return -1;
}

/* A PIC target machine for this host's triple and the chosen CPU. *cpu_used
 * is an LLVM message (LLVMDisposeMessage). NULL after reporting. */
static LLVMTargetMachineRef make_tm(const char *triple, const char *cpu, char **cpu_used,
                                    gc_diags *d) {
  int native = !cpu || !*cpu || strcmp(cpu, "native") == 0;
  if (!native) {
    int ok = 0;
    for (int i = 0; known_cpus[i] && !ok; i++) ok = strcmp(cpu, known_cpus[i]) == 0;
    if (!ok || (strncmp(triple, "x86_64", 6) != 0 && strcmp(cpu, "generic") != 0)) {
      gc_error_at(d, GRAPHC_STATUS_UNSUPPORTED, noloc,
                  "unknown --cpu '%s' for %s (expected native, generic%s)", cpu, triple,
                  strncmp(triple, "x86_64", 6) == 0 ? ", x86-64, x86-64-v2, x86-64-v3 or x86-64-v4"
                                                    : "");
      return NULL;
    }
  }
  char *msg = NULL;
  LLVMTargetRef target = NULL;
  if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
    gc_error_at(d, GRAPHC_STATUS_COMPILE_ERROR, noloc, "LLVM has no target for the host triple %s: %s",
                triple, msg ? msg : "");
    LLVMDisposeMessage(msg);
    return NULL;
  }
  *cpu_used = native ? LLVMGetHostCPUName() : LLVMCreateMessage(cpu);
  char *features = native ? gc_llvm_host_features() : LLVMCreateMessage("");
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, triple, *cpu_used, features,
                                                    LLVMCodeGenLevelAggressive, LLVMRelocPIC,
                                                    LLVMCodeModelDefault);
  LLVMDisposeMessage(features);
  if (!tm)
    gc_error_at(d, GRAPHC_STATUS_COMPILE_ERROR, noloc,
                "cannot create an LLVM target machine for %s (%s)", triple, *cpu_used);
  return tm;
}

/* Kernel names and their object symbols <prefix>__<name>. */
static int name_kernels(gc_host_aot *a, const kir_module *m, const char *prefix, gc_diags *d) {
  a->n_kernels = m->n_kernels;
  a->kernels = calloc((size_t)m->n_kernels + 1, sizeof *a->kernels);
  a->symbols = calloc((size_t)m->n_kernels + 1, sizeof *a->symbols);
  if (!a->kernels || !a->symbols) return oom(d);
  for (int i = 0; i < m->n_kernels; i++) {
    size_t n = strlen(prefix) + strlen(m->kernels[i]->name) + 3;
    a->kernels[i] = strdup(m->kernels[i]->name);
    a->symbols[i] = malloc(n);
    if (!a->kernels[i] || !a->symbols[i]) return oom(d);
    snprintf(a->symbols[i], n, "%s__%s", prefix, m->kernels[i]->name);
  }
  return 0;
}

/* Emit, optimize and compile the kernels of m to an object in memory. */
static int build_object(gc_host_aot *a, const kir_module *m, const gc_host_aot_options *o,
                        gc_sbuf *st, gc_diags *d) {
  char *triple = LLVMGetDefaultTargetTriple(), *cpu = NULL, *layout = NULL, *msg = NULL;
  LLVMContextRef ctx = LLVMContextCreate();
  gc_llvm_diag dg = {{0}, 0};
  gc_llvm_diag_install(ctx, &dg);
  LLVMModuleRef mod = NULL;
  LLVMMemoryBufferRef buf = NULL;
  int rc = -1;
  LLVMTargetMachineRef tm = make_tm(triple, o->cpu, &cpu, d);
  if (!tm) goto out;
  size_t tlen = strlen(triple) + strlen(cpu) + 4;
  if (!(a->target = malloc(tlen))) {
    oom(d);
    goto out;
  }
  snprintf(a->target, tlen, "%s (%s)", triple, cpu);
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  layout = LLVMCopyStringRepOfTargetData(td);
  LLVMDisposeTargetData(td);
  double t0 = now_ms();
  gc_llvm_target lt = {GC_LLVM_HOST, 0, triple, layout};
  mod = gc_llvm_emit(ctx, m, &lt, d);
  if (!mod || gc_llvm_verify(mod, "after emission", d) != 0) goto out;
  gc_llvm_prefer_wide_vectors(mod, gc_llvm_host_simd_bytes(o->cpu));  /* 512 bits on AVX-512 */
  gc_llvm_internalize(mod, m);  /* by the kernels' own names, before renaming them */
  for (int i = 0; i < m->n_kernels; i++) {
    LLVMValueRef f = LLVMGetNamedFunction(mod, m->kernels[i]->name);
    GC_ASSERT(f);
    LLVMSetValueName2(f, a->symbols[i], strlen(a->symbols[i]));
    LLVMSetVisibility(f, LLVMHiddenVisibility);
  }
  double t1 = now_ms();
  if (gc_llvm_optimize(mod, tm, "default<O3>", d) != 0 ||
      gc_llvm_verify(mod, "after optimization", d) != 0)
    goto out;
  double t2 = now_ms();
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &msg, &buf)) {
    gc_error_at(d, GRAPHC_STATUS_COMPILE_ERROR, noloc, "LLVM could not emit the host object: %s%s%s",
                msg ? msg : "", dg.msgs.len ? "\n" : "", dg.msgs.len ? dg.msgs.data : "");
    goto out;
  }
  if (dg.n_errors) {
    gc_error_at(d, GRAPHC_STATUS_COMPILE_ERROR, noloc, "LLVM reported errors:\n%s", dg.msgs.data);
    goto out;
  }
  a->object_len = LLVMGetBufferSize(buf);
  if (!(a->object = malloc(a->object_len ? a->object_len : 1))) {
    oom(d);
    goto out;
  }
  memcpy(a->object, LLVMGetBufferStart(buf), a->object_len);
  if (st)
    gc_sbuf_printf(st, "aot: host %s: llvm emit %.2f ms, default<O3> %.2f ms, object %.2f ms "
                       "(%zu bytes)\n", a->target, t1 - t0, t2 - t1, now_ms() - t2, a->object_len);
  rc = 0;
out:
  if (buf) LLVMDisposeMemoryBuffer(buf);
  if (mod) LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  gc_sbuf_free(&dg.msgs);
  if (tm) LLVMDisposeTargetMachine(tm);
  if (layout) LLVMDisposeMessage(layout);
  if (msg) LLVMDisposeMessage(msg);
  if (cpu) LLVMDisposeMessage(cpu);
  LLVMDisposeMessage(triple);
  return rc;
}

/* The bundle: META, the signature and plan, the weights, the HOST section. */
static int build_bundle(gc_host_aot *a, gc_exec *exe, const gc_plan *plan,
                        const gc_host_aot_options *o, const char *cpu, gc_diags *d) {
  gc_bundle b;
  memset(&b, 0, sizeof b);
  gc_arena_init(&b.arena);
  gc_launch_plan lp;
  gc_launch_plan_init(&lp);
  gc_bundle_host h = {0};
  int rc = -1, cap = 0;
  if (gc_launch_plan_build(plan, exe->inputs, exe->n_inputs, exe->outputs, exe->n_outputs, &lp, d))
    goto out;
  h.n_kernels = plan->kir->n_kernels;
  h.n_buffers = plan->n_buffers;
  h.work = calloc((size_t)h.n_kernels + 1, sizeof *h.work);
  h.align = calloc((size_t)h.n_buffers + 1, sizeof *h.align);
  if (!h.work || !h.align) {
    oom(d);
    goto out;
  }
  for (int i = 0; i < h.n_kernels; i++) {
    double w = plan->kir->kernels[i]->bytes_moved + plan->kir->kernels[i]->flops;
    h.work[i] = w > 0 && w < 1e18 ? (uint64_t)w : 0;
  }
  gc_cpu_buffer_aligns(plan, h.align);
  char *triple = LLVMGetDefaultTargetTriple();
  h.triple = gc_arena_strdup(&b.arena, triple);
  LLVMDisposeMessage(triple);
  h.cpu = gc_arena_strdup(&b.arena, cpu);
  b.plans = &lp;
  b.n_plans = 1;
  b.host = &h;
  gc_bundle_meta_head(&b, &cap, exe->graph->name, exe->graph->n_syms, exe->graph->sym_names,
                      exe->graph->sym_values);
  gc_bundle_meta_add(&b, &cap, "target", "host");
  gc_bundle_meta_add(&b, &cap, "archs", h.triple ? h.triple : "");
  gc_bundle_meta_add(&b, &cap, "cpu", cpu);
  unsigned v1 = 0, v2 = 0, v3 = 0;
  LLVMGetVersion(&v1, &v2, &v3);
  char ver[64];
  snprintf(ver, sizeof ver, "%u.%u.%u", v1, v2, v3);
  gc_bundle_meta_add(&b, &cap, "llvm", ver);
  gc_bundle_meta_add(&b, &cap, "optimize", exe->opts.optimize ? "1" : "0");
  gc_bundle_meta_add(&b, &cap, "embed_weights", o->embed_weights ? "1" : "0");
  gc_bundle_meta_add(&b, &cap, "weights", exe->module->weights ? exe->module->weights : "");
  if (b.arena.failed || !h.triple || !h.cpu) {
    oom(d);
    goto out;
  }
  rc = gc_bundle_write(&b, o->embed_weights, &a->bundle, &a->bundle_len, d);
out:
  free(h.work);
  free(h.align);
  gc_launch_plan_free(&lp);
  gc_arena_free(&b.arena);
  return rc;
}

int gc_host_build_aot(gc_exec *exe, const gc_host_aot_options *o, gc_host_aot *out, gc_sbuf *st,
                      gc_diags *d) {
  memset(out, 0, sizeof *out);
  pthread_once(&aot_once, aot_init);
  if (aot_init_failed) {
    gc_error_at(d, GRAPHC_STATUS_UNSUPPORTED, noloc,
                "this build of LLVM has no code generator for the host");
    return -1;
  }
  gc_settings set;
  gc_settings_read(&set);
  kir_target t;
  kir_target_host(&t, gc_host_threads(&set.rt, NULL));
  gc_settings_apply_target(&set, &t);
  t.simd_bytes = gc_llvm_host_simd_bytes(o->cpu);  /* tile shapes for the CPU compiled for */
  double t0 = now_ms();
  gc_plan *plan = gc_lower_opts(exe->graph, &t, exe->fuse, d);
  if (!plan) return -1;
  if (gc_plan_bind_weights(plan, exe->weights, d)) {
    gc_plan_free(plan);
    return -1;
  }
  if (st) {
    gc_sbuf_printf(st, "aot: host: lower %.2f ms, %d kernels\naot: host: ", now_ms() - t0, plan->kir->n_kernels);
    gc_plan_consts_stats(st, plan);
  }
  int rc = -1;
  if (name_kernels(out, plan->kir, o->prefix, d) == 0 && build_object(out, plan->kir, o, st, d) == 0) {
    const char *cpu = strrchr(out->target, '(');
    char cpubuf[128];
    snprintf(cpubuf, sizeof cpubuf, "%s", cpu ? cpu + 1 : "?");
    char *close = strrchr(cpubuf, ')');
    if (close) *close = 0;
    rc = build_bundle(out, exe, plan, o, cpubuf, d);
  }
  gc_plan_free(plan);
  if (rc != 0) gc_host_aot_free(out);
  return rc;
}

void gc_host_aot_free(gc_host_aot *a) {
  if (!a) return;
  for (int i = 0; i < a->n_kernels; i++) {
    if (a->kernels) free(a->kernels[i]);
    if (a->symbols) free(a->symbols[i]);
  }
  free(a->kernels);
  free(a->symbols);
  free(a->object);
  free(a->bundle);
  free(a->target);
  memset(a, 0, sizeof *a);
}
