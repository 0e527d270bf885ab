/* nvrtc.c - CUDA C to PTX and cubin with NVRTC, in one compilation.
 *
 *   CUDA C --nvrtcCompileProgram(--gpu-architecture=sm_XX)--> PTX (nvrtcGetPTX)
 *                                                          + cubin (nvrtcGetCUBIN)
 *
 * Compiling for a real architecture (sm_XX, not compute_XX) makes NVRTC keep
 * the PTX it generated and also run ptxas, so one program yields both. Options
 * are fixed: no fast math (accuracy matters), C++17, functions default to
 * __device__. cuda_fp16.h / cuda_bf16.h are not built into NVRTC 13 (only their
 * function bodies are, in the builtins library), so the toolkit's include
 * directory is passed: GRAPHC_CUDA_HOME/include from the build, else the
 * gc_toolchain's CUDA_HOME/include, CUDA_PATH/include, or /usr/local/cuda/include,
 * whichever has cuda_fp16.h. The include path does not affect the output bytes.
 */
#include "codegen/codegen.h"

#include <nvrtc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef GRAPHC_CUDA_HOME
#define GRAPHC_CUDA_HOME "/usr/local/cuda"
#endif

#define PROGRAM_NAME "graphc_kernels.cu"

/* Does dir/cuda_fp16.h exist? */
static int has_fp16_header(const char *dir) {
  char path[4096];
  if (snprintf(path, sizeof path, "%s/cuda_fp16.h", dir) >= (int)sizeof path) return 0;
  return access(path, R_OK) == 0;
}

/* Write the include directory to use into out[n]. */
static void include_dir(const gc_toolchain *tc, char *out, size_t n) {
  const char *homes[] = {GRAPHC_CUDA_HOME, tc ? tc->cuda_home : NULL, tc ? tc->cuda_path : NULL,
                         "/usr/local/cuda"};
  for (size_t i = 0; i < sizeof homes / sizeof homes[0]; i++) {
    if (!homes[i] || !homes[i][0]) continue;
    snprintf(out, n, "%s/include", homes[i]);
    if (has_fp16_header(out)) return;
  }
  snprintf(out, n, "%s/include", GRAPHC_CUDA_HOME);
}

/* Append the generated-source lines that the NVRTC log points at
 * ("graphc_kernels.cu(N): error ...") so the message shows the code. */
static void append_source_lines(gc_sbuf *b, const char *log, const char *src) {
  int lines[8], n = 0;
  const char *tag = PROGRAM_NAME "(";
  for (const char *p = strstr(log, tag); p && n < 8; p = strstr(p + 1, tag)) {
    int ln = atoi(p + strlen(tag));
    int seen = 0;
    for (int i = 0; i < n; i++) seen |= lines[i] == ln;
    if (ln > 0 && !seen) lines[n++] = ln;
  }
  if (n == 0) return;
  gc_sbuf_puts(b, "\ngenerated source:");
  for (int i = 0; i < n; i++) {
    const char *p = src;
    for (int l = 1; l < lines[i] && p; l++) {
      p = strchr(p, '\n');
      if (p) p++;
    }
    if (!p) continue;
    const char *e = strchr(p, '\n');
    int len = e ? (int)(e - p) : (int)strlen(p);
    gc_sbuf_printf(b, "\n%5d | %.*s", lines[i], len, p);
  }
}

/* Report a failed NVRTC call (with the program log when there is one). */
static void report(gc_diags *d, const char *what, nvrtcResult r, nvrtcProgram prog, int sm,
                   const char *src) {
  gc_sbuf b = {0};
  gc_sbuf_printf(&b, "NVRTC %s failed for sm_%d: %s", what, sm, nvrtcGetErrorString(r));
  size_t n = 0;
  if (prog && nvrtcGetProgramLogSize(prog, &n) == NVRTC_SUCCESS && n > 1) {
    char *log = malloc(n);
    if (log && nvrtcGetProgramLog(prog, log) == NVRTC_SUCCESS) {
      gc_sbuf_printf(&b, "\n%s", log);
      append_source_lines(&b, log, src);
    }
    free(log);
  }
  char *msg = gc_sbuf_take(&b);
  gc_error_at(d, GRAPHC_STATUS_COMPILE_ERROR, (gc_loc){0, 0}, "%s",
              msg ? msg : "NVRTC failed (and out of memory for its log)");
  free(msg);
}

/* Compile `src` for sm_<sm>; fills *ptx and/or *cubin (malloc'd). */
int gc_nvrtc_compile(const char *src, int sm, char **ptx, void **cubin, size_t *cubin_len,
                     const gc_toolchain *tc, gc_diags *d) {
  if (ptx) *ptx = NULL;
  if (cubin) *cubin = NULL;
  if (cubin_len) *cubin_len = 0;
  char arch[64], inc[4200];
  const char *sfx = sm & GC_SM_ARCH_A ? "a" : "";
  sm &= ~GC_SM_ARCH_A;
  snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%s", sm, sfx);
  char incdir[4096];
  include_dir(tc, incdir, sizeof incdir);
  snprintf(inc, sizeof inc, "--include-path=%s", incdir);
  /* ptxas on a fixed number of threads (see jitlink.c: the count is recorded in
   * the cubin, so it must not follow the host). */
  const char *opts[] = {arch, "-std=c++17", "-default-device", "--fmad=true", inc,
                        "--ptxas-options=-split-compile=8"};

  nvrtcProgram prog = NULL;
  nvrtcResult r = nvrtcCreateProgram(&prog, src, PROGRAM_NAME, 0, NULL, NULL);
  if (r != NVRTC_SUCCESS) {
    report(d, "program creation", r, NULL, sm, src);
    return -1;
  }
  int rc = -1;
  char *p = NULL;
  char *c = NULL;
  size_t n = 0;
  r = nvrtcCompileProgram(prog, (int)(sizeof opts / sizeof opts[0]), opts);
  if (r != NVRTC_SUCCESS) {
    report(d, "compilation", r, prog, sm, src);
    goto done;
  }
  if (ptx) {
    if ((r = nvrtcGetPTXSize(prog, &n)) != NVRTC_SUCCESS) {
      report(d, "nvrtcGetPTXSize", r, prog, sm, src);
      goto done;
    }
    p = malloc(n + 1);
    if (!p) {
      gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory for PTX (%zu bytes)", n);
      goto done;
    }
    if ((r = nvrtcGetPTX(prog, p)) != NVRTC_SUCCESS) {
      report(d, "nvrtcGetPTX", r, prog, sm, src);
      goto done;
    }
    p[n] = 0;
  }
  if (cubin) {
    if ((r = nvrtcGetCUBINSize(prog, &n)) != NVRTC_SUCCESS) {
      report(d, "nvrtcGetCUBINSize", r, prog, sm, src);
      goto done;
    }
    if (n == 0) {
      gc_error_at(d, GRAPHC_STATUS_COMPILE_ERROR, (gc_loc){0, 0},
                  "NVRTC produced no cubin for sm_%d", sm);
      goto done;
    }
    c = malloc(n);
    if (!c) {
      gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory for cubin (%zu bytes)", n);
      goto done;
    }
    if ((r = nvrtcGetCUBIN(prog, c)) != NVRTC_SUCCESS) {
      report(d, "nvrtcGetCUBIN", r, prog, sm, src);
      goto done;
    }
    *cubin = c;
    if (cubin_len) *cubin_len = n;
    c = NULL;
  }
  if (ptx) {
    *ptx = p;
    p = NULL;
  }
  rc = 0;
done:
  free(p);
  free(c);
  nvrtcDestroyProgram(&prog);
  return rc;
}

static pthread_once_t version_once = PTHREAD_ONCE_INIT;
static char version_str[32];

/* Fill version_str once ("13.0"; "unknown" when NVRTC does not say). */
static void version_init(void) {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) == NVRTC_SUCCESS)
    snprintf(version_str, sizeof version_str, "%d.%d", major, minor);
  else
    snprintf(version_str, sizeof version_str, "unknown");
}

/* NVRTC version, e.g. "13.0" (static, initialized once). */
const char *gc_nvrtc_version(void) {
  pthread_once(&version_once, version_init);
  return version_str;
}
