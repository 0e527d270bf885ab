/* jitlink.c - PTX to cubin: the toolkit's ptxas program when there is one (ptxas.c:
 * whole-program code, fewer registers), else nvJitLink (libnvJitLink.so of the CUDA toolkit).
 *
 *   PTX text --nvJitLinkAddData(PTX)--> nvJitLinkComplete(-arch=sm_NN -O3) --> cubin
 *
 * Needs no GPU. Errors carry nvJitLink's error log (ptxas messages). ptxas
 * runs its per-kernel work on GC_PTXAS_THREADS threads (-split-compile).
 */
#include <nvJitLink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"

#define GC_STR_(x) #x
#define GC_STR(x) GC_STR_(x)
#define GC_PTXAS_THREADS 8

/* Readable name of an nvJitLink result code. */
static const char *jl_result_name(nvJitLinkResult r) {
  switch (r) {
  case NVJITLINK_SUCCESS: return "NVJITLINK_SUCCESS";
  case NVJITLINK_ERROR_UNRECOGNIZED_OPTION: return "NVJITLINK_ERROR_UNRECOGNIZED_OPTION";
  case NVJITLINK_ERROR_MISSING_ARCH: return "NVJITLINK_ERROR_MISSING_ARCH";
  case NVJITLINK_ERROR_INVALID_INPUT: return "NVJITLINK_ERROR_INVALID_INPUT";
  case NVJITLINK_ERROR_PTX_COMPILE: return "NVJITLINK_ERROR_PTX_COMPILE";
  case NVJITLINK_ERROR_NVVM_COMPILE: return "NVJITLINK_ERROR_NVVM_COMPILE";
  case NVJITLINK_ERROR_INTERNAL: return "NVJITLINK_ERROR_INTERNAL";
  case NVJITLINK_ERROR_THREADPOOL: return "NVJITLINK_ERROR_THREADPOOL";
  case NVJITLINK_ERROR_UNRECOGNIZED_INPUT: return "NVJITLINK_ERROR_UNRECOGNIZED_INPUT";
  case NVJITLINK_ERROR_UNSUPPORTED_ARCH: return "NVJITLINK_ERROR_UNSUPPORTED_ARCH";
  case NVJITLINK_ERROR_UNRECOGNIZED_ARCH: return "NVJITLINK_ERROR_UNRECOGNIZED_ARCH";
  default: return "nvJitLink error";
  }
}

/* nvJitLink's error log as a malloc'd string ("" when empty or unavailable). */
static char *jl_error_log(nvJitLinkHandle h) {
  size_t n = 0;
  if (nvJitLinkGetErrorLogSize(h, &n) != NVJITLINK_SUCCESS) n = 0;
  char *log = malloc(n + 1);
  if (!log) return NULL;
  log[0] = 0;
  if (n && nvJitLinkGetErrorLog(h, log) != NVJITLINK_SUCCESS) log[0] = 0;
  log[n] = 0;
  /* drop trailing newlines so the message ends cleanly */
  size_t len = strlen(log);
  while (len && (log[len - 1] == '\n' || log[len - 1] == '\r')) log[--len] = 0;
  return log;
}

/* Report a failed nvJitLink call `what` with its result and log. */
static void jl_report(gc_diags *d, nvJitLinkHandle h, const char *what, nvJitLinkResult r, int sm) {
  char *log = h ? jl_error_log(h) : NULL;
  gc_loc noloc = {0, 0};
  gc_error_at(d, GRAPHC_STATUS_COMPILE_ERROR, noloc, "nvJitLink %s for sm_%d failed (%s)%s%s", what,
              sm, jl_result_name(r), log && *log ? ":\n" : "", log ? log : "");
  free(log);
}

void gc_nvjitlink_id(char *out, size_t cap) {
  unsigned a = 0, b = 0;
  if (nvJitLinkVersion(&a, &b) != NVJITLINK_SUCCESS) a = b = 0;
  snprintf(out, cap, "nvjitlink %u.%u", a, b);
}

int gc_ptx_to_cubin(const char *ptx, int sm, void **cubin, size_t *cubin_len, const gc_toolchain *tc,
                    gc_diags *d) {
  return gc_ptx_to_cubin_ex(ptx, sm, cubin, cubin_len, NULL, tc, d);
}

int gc_ptx_to_cubin_ex(const char *ptx, int sm, void **cubin, size_t *cubin_len, const char **via,
                       const gc_toolchain *tc, gc_diags *d) {
  *cubin = NULL;
  *cubin_len = 0;
  char arch[32];
  int arch_a = (sm & GC_SM_ARCH_A) != 0;
  sm &= ~GC_SM_ARCH_A;
  /* PTX for sm_90a (wgmma) links only for sm_90a */
  char tgt[32];
  snprintf(tgt, sizeof tgt, ".target sm_%da", sm);
  if (strstr(ptx, tgt)) arch_a = 1;
  /* the compiler gc_ptx_compiler_pick picks (ptxas first: see ptxas.c); on any failure
   * of ptxas (an older toolkit's, no temporary directory, bad PTX) nvJitLink decides and
   * reports */
  char px[4096];
  if (gc_ptx_compiler_pick(tc, px, sizeof px) == GC_PTXC_PTXAS) {
    gc_diags pd;
    gc_diags_init(&pd, "", NULL, 0);
    int rc = gc_ptxas_compile(px, ptx, sm, arch_a, GC_PTXAS_THREADS, cubin, cubin_len, tc, &pd);
    gc_diags_free(&pd);
    if (rc == 0) {
      if (via) *via = "ptxas";
      return 0;
    }
  }
  if (via) *via = "nvjitlink";
  snprintf(arch, sizeof arch, "-arch=sm_%d%s", sm, arch_a ? "a" : "");
  /* ptxas compiles the kernels on up to GC_PTXAS_THREADS threads. The count is
   * fixed, not the host's cores: ptxas records its command line in the cubin
   * (.note.nv.tkinfo), so a count that followed the machine would change the
   * bytes. The code itself is the one-thread code (every .text section equal). */
  const char *opts[] = {arch, "-O3", "-Xptxas=-split-compile=" GC_STR(GC_PTXAS_THREADS)};
  nvJitLinkHandle h = NULL;
  nvJitLinkResult r = nvJitLinkCreate(&h, 3, opts);
  if (r != NVJITLINK_SUCCESS) {
    jl_report(d, NULL, "create", r, sm);
    return -1;
  }
  int rc = -1;
  r = nvJitLinkAddData(h, NVJITLINK_INPUT_PTX, ptx, strlen(ptx) + 1, "graphc.ptx");
  if (r != NVJITLINK_SUCCESS) {
    jl_report(d, h, "adding PTX", r, sm);
    goto done;
  }
  r = nvJitLinkComplete(h);
  if (r != NVJITLINK_SUCCESS) {
    jl_report(d, h, "compiling PTX", r, sm);
    goto done;
  }
  size_t n = 0;
  r = nvJitLinkGetLinkedCubinSize(h, &n);
  if (r != NVJITLINK_SUCCESS) {
    jl_report(d, h, "getting the cubin size", r, sm);
    goto done;
  }
  void *buf = malloc(n ? n : 1);
  if (!buf) {
    gc_loc noloc = {0, 0};
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory for a %zu-byte cubin", n);
    goto done;
  }
  r = nvJitLinkGetLinkedCubin(h, buf);
  if (r != NVJITLINK_SUCCESS) {
    free(buf);
    jl_report(d, h, "getting the cubin", r, sm);
    goto done;
  }
  *cubin = buf;
  *cubin_len = n;
  rc = 0;
done:
  nvJitLinkDestroy(&h);
  return rc;
}
