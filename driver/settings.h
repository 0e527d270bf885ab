/* settings.h - the environment variables the compiler reads, read in one place.
 *
 *   entry (graphc_compile, the backends' prepare, bundle builds, emit)
 *     --gc_settings_read--> gc_settings --const pointer--> the consumers:
 *       gc_settings_apply_target -> kir_target     (kernel choices: GRAPHC_WGMMA ...)
 *       gc_settings_toolchain    -> gc_toolchain   (codegen: CUDA_HOME, GRAPHC_PTXAS ...)
 *       gc_cache_open(c, s)                        (GRAPHC_CACHE, GRAPHC_CACHE_DIR ...)
 *       s->cpu_passes                              (the cpu backend's LLVM pipeline)
 *       s->rt                                      (runtime/settings.h: the driver
 *                                                   library, sync, host threads)
 *
 * driver/settings.c and runtime/settings.c are the only library files that read the environment.
 * Settings are read at each entry that needs them, not once per process, so a
 * program (or a test) that changes its environment between compiles sees the
 * change. docs/settings.md lists every variable with its default.
 */
#ifndef GC_SETTINGS_H
#define GC_SETTINGS_H

#include "codegen/codegen.h"
#include "runtime/settings.h"

/* The strings point into the environment: use them during the call that read them. */
typedef struct gc_settings {
  /* kernel choices, applied to a kir_target by gc_settings_apply_target; 1 when the
   * variable is "0" */
  int no_wgmma;             /* GRAPHC_WGMMA=0: no Hopper warpgroup MMAs */
  int no_tma;               /* GRAPHC_TMA=0: wgmma stages filled by cp.async, not TMA */
  int no_flash;             /* GRAPHC_FLASH=0: no fused attention kernel */
  int no_simt_blocked;      /* GRAPHC_SIMT=0: the 32x32 f32 matmul, not the register-blocked one */
  int no_prologue;          /* GRAPHC_PROLOGUE=0: every launch in every run */
  int no_tf32_round;        /* GRAPHC_TF32_ROUND=0: tf32 MMA operands truncated by the tensor cores */
  int no_row_groups;        /* GRAPHC_ROW_GROUPS=0: a block per row in row reductions */
  int loop_vecs;            /* GRAPHC_LOOP_VECS=N (atoi): vectors an item of a loop kernel; 0 unset */
  /* the toolkit (gc_settings_toolchain) */
  const char *cuda_home;    /* CUDA_HOME */
  const char *cuda_path;    /* CUDA_PATH */
  const char *ptxas;        /* GRAPHC_PTXAS: a path, "off" or "0" */
  const char *libdevice;    /* GRAPHC_LIBDEVICE */
  const char *tmpdir;       /* TMPDIR */
  int compile_threads;      /* GRAPHC_COMPILE_THREADS as a positive integer (at most 64); 0 otherwise */
  /* the JIT cache (gc_cache_open checks and reports them) */
  const char *cache;        /* GRAPHC_CACHE: off, 0, no, false or OFF disables */
  const char *cache_dir;    /* GRAPHC_CACHE_DIR */
  const char *cache_max_mb; /* GRAPHC_CACHE_MAX_MB */
  const char *xdg_cache_home; /* XDG_CACHE_HOME */
  const char *home;         /* HOME */
  /* the cpu backend */
  const char *cpu_passes;   /* GRAPHC_CPU_PASSES: an LLVM pass pipeline for the JIT (NULL: the default) */
  int cpu_no_dedup;         /* GRAPHC_CPU_DEDUP=0: identical kernels compiled separately */
  gc_rt_settings rt;        /* the runtime's: GRAPHC_CUDA_DRIVER, GRAPHC_CUDA_SYNC, GRAPHC_CPU_THREADS */
} gc_settings;

/* Fill s from the environment (s->rt with gc_rt_settings_read). */
void gc_settings_read(gc_settings *s);
/* Apply the kernel choices to a target that kir_target_cuda / kir_target_host filled. */
void gc_settings_apply_target(const gc_settings *s, kir_target *t);
/* The toolkit locations codegen needs (tc borrows s's strings). */
void gc_settings_toolchain(const gc_settings *s, gc_toolchain *tc);

#endif /* GC_SETTINGS_H */
