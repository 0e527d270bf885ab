/* cpu_backend.h - internals of the host backend (runtime/cpu_backend.c), shared
 * with its tests and benchmarks. The backend itself is gc_backend_cpu (exec.h).
 *
 *   kir_module --cpu_objects.c: distinct kernels, groups, JIT cache, threads:
 *                gc_llvm_emit(host), verify, default<O3|O2>, object file-->
 *              objects --ORC LLJIT (process symbols: libm)--> one function per kernel
 *
 * Host kernel ABI (codegen/llvm_emit.h): fn(args, begin, end) runs items
 * [begin, end) of the kernel's launch; args holds one 8-byte slot per
 * kir_param (a buffer's base pointer or an I64 parameter's value).
 */
#ifndef GC_CPU_BACKEND_H
#define GC_CPU_BACKEND_H

#include "codegen/lower.h"
#include "runtime/settings.h"

typedef void (*gc_cpu_kernel_fn)(void *const *args, int64_t begin, int64_t end);

/* Compiled code of one kir_module; owns the LLVM JIT that holds it. */
typedef struct gc_cpu_jit gc_cpu_jit;

struct gc_cache;

/* Optimization levels of host kernels (gc_cpu_level). */
enum { GC_CPU_LEVEL_O3, GC_CPU_LEVEL_O2, GC_CPU_LEVELS };
/* The level kernel k is compiled at: O3 for compute-bound kernels (at least 4
 * modeled flops per byte: matmuls, convolutions), O2 for the rest. */
int gc_cpu_level(const kir_kernel *k);

/* How to compile the kernels of a module (zeroed: every default, no cache). */
typedef struct gc_cpu_compile_opts {
  const char *passes;        /* one new-PM pipeline for every kernel (GRAPHC_CPU_PASSES);
                                NULL or "": per kernel, gc_cpu_level */
  int threads;               /* groups compiled at once; 0: configured_threads, else the
                                online CPUs, at most 8. Never changes the code. */
  int configured_threads;    /* GRAPHC_COMPILE_THREADS (settings.compile_threads), 0 unset */
  int no_dedup;              /* 1: compile identical kernels separately (tests) */
  struct gc_cache *cache;    /* the JIT cache of objects, or NULL */
  int timings;               /* gc_cpu_jit_compile_ex's line also gives the times */
} gc_cpu_compile_opts;

/* The host objects of a module (driver/cpu_objects.c). */
typedef struct gc_cpu_objects {
  int n_objects;
  void **objects;            /* relocatable ELF (PIC), malloc'd */
  size_t *object_lens;
  int n_syms;                /* distinct kernels */
  char **syms;               /* their functions' symbols, "gck_<hash>" */
  int n_kernels;
  int *kernel_sym;           /* per kernel of the module: index into syms */
  char *target;              /* "triple (cpu)" */
  int cached;                /* objects read from the cache */
  int threads;               /* threads that compiled (0: every object was cached) */
  double t_prepare, t_emit, t_opt, t_cg;  /* CPU ms summed over groups */
  double wall;               /* the call, ms */
} gc_cpu_objects;

/* Compile every kernel of m for this host into objects: kernels with the same
 * canonical text (kir_canonical_text) share one function; the distinct ones
 * are split into groups by level and size, each group one object, looked up
 * in opts->cache or compiled on a thread (and stored). The objects depend only
 * on the kernels' canonical texts, the host CPU and the pipelines. 0, or -1
 * after reporting to d (o is then empty). */
int gc_cpu_compile_objects(const kir_module *m, const gc_cpu_compile_opts *opts,
                           gc_cpu_objects *o, gc_diags *d);
void gc_cpu_objects_free(gc_cpu_objects *o);

/* JIT-compile every kernel of m for this host (gc_cpu_compile_objects, then
 * the objects linked into one ORC LLJIT). When `times` is not NULL, a line with
 * the kernel, distinct kernel and object counts is appended, with opts->timings
 * also the threads and the emit / optimize / codegen / link times. */
gc_cpu_jit *gc_cpu_jit_compile_ex(const kir_module *m, const gc_cpu_compile_opts *opts,
                                  gc_sbuf *times, gc_diags *d);
/* JIT-compile every kernel of m for this host with the new-PM pipeline
 * `passes` (NULL or "": "default<O3>"). When `times` is not NULL, a line with
 * the emit / optimize / JIT times is appended to it. Returns NULL after
 * reporting to d (COMPILE_ERROR carrying LLVM's message). */
gc_cpu_jit *gc_cpu_jit_compile(const kir_module *m, const char *passes, gc_sbuf *times,
                               gc_diags *d);
/* Entry point of kernel i (index into m->kernels). */
gc_cpu_kernel_fn gc_cpu_jit_kernel(const gc_cpu_jit *j, int i);
/* "x86_64-pc-linux-gnu (znver4)": the target the code was compiled for. */
const char *gc_cpu_jit_target(const gc_cpu_jit *j);
/* Dispose the JIT and everything it compiled; NULL is allowed. */
void gc_cpu_jit_free(gc_cpu_jit *j);

/* Threads the cpu backend uses: gc_host_threads (host_exec.h). */
int gc_cpu_threads(const gc_rt_settings *s, gc_diags *d);

/* Alignment the kernels of p assume for each plan buffer: its element size,
 * or the width of a vector load/store on it (at most 16). align[n_buffers]. */
void gc_cpu_buffer_aligns(const gc_plan *p, uint32_t *align);

/* Facts of a cpu executable (graphc bench --backend cpu). */

typedef struct gc_cpu_info {
  const gc_plan *plan;
  const char *target;        /* "triple (cpu)" */
  int threads;               /* of the executor */
} gc_cpu_info;
/* INVALID_ARGUMENT when exe is not a prepared cpu executable. */
graphc_status_t gc_cpu_exec_info(const struct graphc_executable *exe, gc_cpu_info *info);
/* gc_host_exec_time_launches on exe's executor with host tensors in/out (checked
 * by the caller): ms[r * plan->n_launches + i]. */
graphc_status_t gc_cpu_time_launches(struct graphc_executable *exe, const graphc_tensor_t *in,
                                     graphc_tensor_t *out, int runs, float *ms, gc_diags *d);

#endif
