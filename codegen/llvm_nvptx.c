/* llvm_nvptx.c - Kernel IR to PTX through LLVM's NVPTX backend.
 *
 *   kir_module --gc_llvm_emit--> module --verify--> [link libdevice, internalize]
 *              --default<O3>--> verify --NVPTX AsmPrinter--> PTX text
 *
 * Each call owns its LLVMContext and target machine; the only process-wide
 * state is the one-time NVPTX target registration (pthread_once).
 * LLVM 19 knows sm_20..sm_90: a newer GPU gets PTX for sm_90 (the newest
 * below it) and nvJitLink / the driver compile that PTX for the real sm.
 * Math (exp, log, tanh, erf, sin, cos, pow, fmod) comes from the toolkit's
 * libdevice.10.bc, loaded lazily so only the functions used are linked; no FTZ
 * (module flag nvvm-reflect-ftz = 0), no FMA contraction, IEEE div and sqrt.
 * NVPTX numbers call sites from a process-wide counter ("// callseq N"); the
 * PTX is renumbered so the same module always gives the same text.
 */
#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codegen.h"
#include "llvm_emit.h"

#ifndef GRAPHC_CUDA_HOME
#define GRAPHC_CUDA_HOME "/usr/local/cuda"
#endif

#define NVPTX_TRIPLE "nvptx64-nvidia-cuda"
/* PTX ISA 7.8 (CUDA 11.8): covers sm_50..sm_90 and keeps old drivers able to JIT it. */
#define NVPTX_FEATURES "+ptx78"

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

/* Path of libdevice.10.bc into buf: $GRAPHC_LIBDEVICE, then <cuda>/nvvm/libdevice for
 * the build's toolkit, $CUDA_HOME, $CUDA_PATH and /usr/local/cuda. 0 if none exists. */
static int find_libdevice(char *buf, size_t n, gc_sbuf *tried) {
  const char *env = getenv("GRAPHC_LIBDEVICE");
  if (env && *env) {
    snprintf(buf, n, "%s", env);
    gc_sbuf_printf(tried, " %s", buf);
    return access(buf, R_OK) == 0;
  }
  const char *homes[] = {GRAPHC_CUDA_HOME, getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
  for (size_t i = 0; i < sizeof homes / sizeof homes[0]; i++) {
    if (!homes[i] || !*homes[i]) continue;
    snprintf(buf, n, "%s/nvvm/libdevice/libdevice.10.bc", homes[i]);
    gc_sbuf_printf(tried, " %s", buf);
    if (access(buf, R_OK) == 0) return 1;
  }
  return 0;
}

/* Parse libdevice, retarget it to our triple/layout and link it into mod. */
static int link_libdevice(LLVMContextRef ctx, LLVMModuleRef mod, gc_llvm_diag *dg, gc_diags *d) {
  char path[4096];
  gc_sbuf tried = {0};
  int found = find_libdevice(path, sizeof path, &tried);
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

/* Everything after the target machine exists: emit, link, optimize, print. */
static int compile(LLVMContextRef ctx, LLVMTargetMachineRef tm, const kir_module *m, int sm,
                   char **ptx, char **ir_text, gc_llvm_diag *dg, gc_diags *d) {
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  char *layout = LLVMCopyStringRepOfTargetData(td);
  LLVMDisposeTargetData(td);
  gc_llvm_target t = {GC_LLVM_NVPTX, sm, NVPTX_TRIPLE, layout};
  LLVMModuleRef mod = gc_llvm_emit(ctx, m, &t, d);
  LLVMDisposeMessage(layout);
  if (!mod) return -1;
  int rc = gc_llvm_verify(mod, "after emission", d);
  if (rc == 0 && gc_llvm_uses_libdevice(mod)) {
    rc = link_libdevice(ctx, mod, dg, d);
    if (rc == 0) gc_llvm_internalize(mod, m);
  }
  if (rc == 0) rc = gc_llvm_optimize(mod, tm, "default<O3>", d);
  if (rc == 0) rc = gc_llvm_verify(mod, "after optimization", d);
  if (rc == 0 && ir_text) {
    *ir_text = take_message(LLVMPrintModuleToString(mod));
    if (!*ir_text) rc = -1, report(d, NULL, "out of memory printing LLVM IR", NULL);
  }
  if (rc == 0 && ptx) {
    LLVMMemoryBufferRef mb = NULL;
    char *msg = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &msg, &mb)) {
      report(d, dg, "NVPTX code generation failed", msg);
      rc = -1;
    } else {
      char *raw = buffer_string(mb);
      LLVMDisposeMemoryBuffer(mb);
      *ptx = raw ? renumber(raw, "// callseq ") : NULL;  /* no indirect calls: no prototypes */
      free(raw);
      if (!*ptx) rc = -1, report(d, NULL, "out of memory copying PTX", NULL);
    }
    if (msg) LLVMDisposeMessage(msg);
  }
  if (rc == 0 && dg->n_errors) {
    report(d, dg, "LLVM reported errors", NULL);
    rc = -1;
  }
  LLVMDisposeModule(mod);
  return rc;
}

int gc_llvm_ptx(const kir_module *m, int sm, char **ptx, char **ir_text, gc_diags *d) {
  if (ptx) *ptx = NULL;
  if (ir_text) *ir_text = NULL;
  int target_sm = llvm_sm(sm);
  if (target_sm == 0) {
    gc_loc noloc = {0, 0};
    gc_error_at(d, GRAPHC_STATUS_COMPILE_ERROR, noloc,
                "LLVM NVPTX backend: sm_%d is not supported (needs sm_50 or newer)", sm);
    return -1;
  }
  pthread_once(&nvptx_once, nvptx_init);
  LLVMTargetRef target = NULL;
  char *msg = NULL;
  if (LLVMGetTargetFromTriple(NVPTX_TRIPLE, &target, &msg)) {
    report(d, NULL, "LLVM has no NVPTX target", msg);
    LLVMDisposeMessage(msg);
    return -1;
  }
  char cpu[16];
  snprintf(cpu, sizeof cpu, "sm_%d", target_sm);
  LLVMTargetMachineRef tm =
      LLVMCreateTargetMachine(target, NVPTX_TRIPLE, cpu, NVPTX_FEATURES, LLVMCodeGenLevelAggressive,
                              LLVMRelocDefault, LLVMCodeModelDefault);
  if (!tm) {
    report(d, NULL, "cannot create the LLVM NVPTX target machine", cpu);
    return -1;
  }
  LLVMContextRef ctx = LLVMContextCreate();
  gc_llvm_diag dg = {{0}, 0};
  gc_llvm_diag_install(ctx, &dg);
  int rc = compile(ctx, tm, m, target_sm, ptx, ir_text, &dg, d);
  LLVMContextDispose(ctx);
  LLVMDisposeTargetMachine(tm);
  gc_sbuf_free(&dg.msgs);
  if (rc != 0) {
    if (ptx) free(*ptx), *ptx = NULL;
    if (ir_text) free(*ir_text), *ir_text = NULL;
  }
  return rc;
}
