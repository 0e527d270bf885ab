/* codegen.h - Kernel IR to device code: the two printers and the compilers
 * behind them. One kir_module becomes ONE CUDA C program (one NVRTC call), or
 * one LLVM module per kernel compiled in parallel and joined into ONE PTX text.
 *
 *   kir_module --gc_cuda_c_print--> CUDA C --gc_nvrtc_compile--> PTX + cubin
 *   kir_module --gc_llvm_ptx------> LLVM IR (nvptx64-nvidia-cuda) --NVPTX--> PTX
 *   PTX        --gc_ptx_to_cubin--> cubin (ptxas, whole-program; else nvJitLink)
 *
 * All functions return 0 on success; on failure they report to `d` with status
 * GRAPHC_STATUS_COMPILE_ERROR (NVRTC log / LLVM message included) and return -1.
 * Returned buffers are malloc'd; the caller frees them. Where the toolkit is comes
 * in a gc_toolchain that the driver fills from its settings: nothing here reads
 * the environment.
 */
#ifndef GC_CODEGEN_H
#define GC_CODEGEN_H

#include "codegen/kir.h"

/* The CUDA code path an option names: GRAPHC_CODEGEN_DEFAULT stands for LLVM NVPTX,
 * which measured faster than NVRTC on the H200 for every example (docs/performance.md)
 * and compiles faster; NVRTC stays one option away. */
static inline graphc_codegen_t gc_codegen_resolve(graphc_codegen_t c) {
  return c == GRAPHC_CODEGEN_DEFAULT ? GRAPHC_CODEGEN_LLVM : c;
}

/* Where the CUDA toolkit's pieces are, for the compilers below: filled by the driver
 * (driver/settings.c, docs/settings.md lists the variables). A NULL gc_toolchain, like
 * a zeroed one, means: only the toolkit this build was configured with, then
 * /usr/local/cuda. The strings are borrowed for the call. */
typedef struct gc_toolchain {
  const char *cuda_home;    /* CUDA_HOME: a toolkit to search (NULL or "": none) */
  const char *cuda_path;    /* CUDA_PATH: likewise, after cuda_home */
  const char *ptxas;        /* GRAPHC_PTXAS: the ptxas program; "off" or "0": none; NULL or "": search */
  const char *libdevice;    /* GRAPHC_LIBDEVICE: libdevice.10.bc (NULL or "": search the toolkits) */
  const char *tmpdir;       /* TMPDIR: where ptxas' files go (NULL or "": /tmp) */
  int compile_threads;      /* GRAPHC_COMPILE_THREADS: kernels LLVM compiles at once when
                               gc_llvm_ptx_opts.threads is 0 (0: the online CPUs, at most 8) */
} gc_toolchain;

/* codegen/cuda_c.c: the whole module as one CUDA C translation unit; each
 * kernel is `extern "C" __global__`, named kir_kernel.name. */
void gc_cuda_c_print(gc_sbuf *b, const kir_module *m);

/* OR'ed into the `sm` of gc_nvrtc_compile / gc_ptx_to_cubin: arch-specific code (sm_90a:
 * the module has Hopper warpgroup MMAs, kir_module_uses_wgmma). gc_ptx_to_cubin also
 * follows the PTX's own `.target sm_90a` (PTX given without its module). */
#define GC_SM_ARCH_A 0x10000
/* The `sm` argument for module m's code: sm, with GC_SM_ARCH_A when m has wgmma. */
static inline int gc_module_sm(const kir_module *m, int sm) {
  return sm | (kir_module_uses_wgmma(m) ? GC_SM_ARCH_A : 0);
}

/* codegen/nvrtc.c: compile CUDA C for sm_<sm>. *ptx always (may be NULL to skip),
 * *cubin when cubin != NULL. Options fixed and deterministic; tc gives the include path. */
int gc_nvrtc_compile(const char *src, int sm, char **ptx, void **cubin, size_t *cubin_len,
                     const gc_toolchain *tc, gc_diags *d);
/* NVRTC version as "13.0". Static string. */
const char *gc_nvrtc_version(void);

/* codegen/llvm_nvptx.c: build the module with the LLVM-C API for
 * nvptx64-nvidia-cuda, optimize (O3) and emit PTX for sm_<sm>. When ir_text is
 * not NULL it receives the LLVM IR text (before codegen) of the whole module
 * compiled as one; else this is gc_llvm_ptx_ex with automatic threads, no dedup. */
int gc_llvm_ptx(const kir_module *m, int sm, char **ptx, char **ir_text, const gc_toolchain *tc,
                gc_diags *d);

/* Options of gc_llvm_ptx_ex. Zeroed: automatic threads, no dedup. */
typedef struct gc_llvm_ptx_opts {
  int threads;   /* kernels compiled at once: 0 automatic (gc_toolchain.compile_threads,
                    else the online CPUs, at most 8), 1 serial. Never changes the output. */
  int dedup;     /* 1: compile identical kernels once (see llvm_nvptx.c, gc_ptx_kernel_alias) */
} gc_llvm_ptx_opts;

/* Threads for n distinct units of LLVM work: `want` (> 0), else `configured`
 * (GRAPHC_COMPILE_THREADS, from the settings), else the online CPUs, at most 8;
 * never more than n. Callers keep their output independent of it. */
int gc_llvm_pick_threads(int want, int configured, int n);

/* Where the time of one gc_llvm_ptx_ex went, in ms. The phases are CPU time
 * summed over all kernels (they overlap when threads > 1); wall is the call. */
typedef struct gc_llvm_times {
  double emit;        /* Kernel IR -> LLVM IR, verify (and the dedup comparison) */
  double libdevice;   /* read and link libdevice (modules calling __nv_* only) */
  double optimize;    /* default<O3>, verify */
  double codegen;     /* NVPTX instruction selection .. PTX text */
  double wall;
  int kernels, compiled, threads;  /* kernels in m; compiled (distinct); threads used */
} gc_llvm_times;

/* codegen/llvm_nvptx.c: PTX for every kernel of m, one LLVM module per kernel
 * compiled on opts->threads threads (opts may be NULL); times may be NULL; tc says
 * where libdevice is. */
int gc_llvm_ptx_ex(const kir_module *m, int sm, const gc_llvm_ptx_opts *opts, char **ptx,
                   gc_llvm_times *times, const gc_toolchain *tc, gc_diags *d);

/* The kernel whose PTX entry kernel `name` runs: the ORIGINAL of a
 * "// graphc alias name = ORIGINAL" line of ptx (copied into buf), else name. */
const char *gc_ptx_kernel_alias(const char *ptx, const char *name, char *buf, size_t len);

/* codegen/jitlink.c: PTX to cubin for sm_<sm>, by the compiler gc_ptx_compiler_pick
 * picks: the toolkit's ptxas program (codegen/ptxas.c), or nvJitLink; nvJitLink also
 * when ptxas fails. *via (when via is not NULL) is set to "ptxas" or "nvjitlink",
 * the one that made it. */
int gc_ptx_to_cubin(const char *ptx, int sm, void **cubin, size_t *cubin_len, const gc_toolchain *tc,
                    gc_diags *d);
int gc_ptx_to_cubin_ex(const char *ptx, int sm, void **cubin, size_t *cubin_len, const char **via,
                       const gc_toolchain *tc, gc_diags *d);
/* "nvjitlink MAJOR.MINOR" (for cache keys). */
void gc_nvjitlink_id(char *out, size_t cap);

/* The programs that can turn PTX into a cubin. */
typedef enum gc_ptx_compiler { GC_PTXC_NVJITLINK, GC_PTXC_PTXAS } gc_ptx_compiler;
/* codegen/ptxas.c: THE rule for PTX to cubin, "the ptxas program first, else nvJitLink"
 * (whole-program ptxas code keeps fewer registers: see ptxas.c). GC_PTXC_PTXAS with
 * its path in ptxas[cap] when gc_ptxas_find finds one, else GC_PTXC_NVJITLINK.
 * gc_ptx_to_cubin, gc_ptx_compiler_id and the CUDA backend all ask it. */
gc_ptx_compiler gc_ptx_compiler_pick(const gc_toolchain *tc, char *ptxas, size_t cap);
/* codegen/ptxas.c: the ptxas program (see ptxas.c for where it looks; tc->ptxas
 * "off": none): 1 and its path in out, else 0. */
int gc_ptxas_find(const gc_toolchain *tc, char *out, size_t cap);
/* The PTX compiler gc_ptx_to_cubin uses now, for cache keys: "ptxas PATH SIZE MTIME",
 * else gc_nvjitlink_id. */
void gc_ptx_compiler_id(const gc_toolchain *tc, char *out, size_t cap);
/* Run ptxas (whole-program, -O3, `threads` split-compile threads) on ptx for
 * sm_<sm>[a], its files in a new folder under tc->tmpdir; ptxas' messages go to d. */
int gc_ptxas_compile(const char *ptxas, const char *ptx, int sm, int arch_a, int threads, void **cubin,
                     size_t *cubin_len, const gc_toolchain *tc, gc_diags *d);

#endif
