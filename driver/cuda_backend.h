/* cuda_backend.h - internals of the CUDA backend that `graphc bench`, the AOT
 * tools and the GPU tests use; applications use the public API
 * (include/graphc/graphc.h, include/graphc/graphc_rt.h).
 *
 * The backend has two halves:
 *   compile  (cuda_backend.c, libgraphc only): gc_plan -> CUDA C + NVRTC or
 *            LLVM NVPTX + nvJitLink -> cubin/PTX (through the JIT cache), the
 *            launch plan (launch_build.c, shared with the CPU backend); bundles
 *            for ahead-of-time use.
 *   load/run (cuda_exec.c, also in libgraphc_rt): see cuda_exec.h.
 *
 * Functions taking an executable need one compiled with GRAPHC_BACKEND_CUDA;
 * they make its context current for the call and restore the caller's.
 */
#ifndef GC_CUDA_BACKEND_H
#define GC_CUDA_BACKEND_H

#include "driver/exec.h"
#include "driver/cache.h"
#include "runtime/launch_plan.h"
#include "codegen/lower.h"

typedef struct gc_cuda_info {
  char device[256];       /* "NVIDIA H200" */
  int sm;                 /* compute capability x10 the code was compiled for */
  int device_sm;          /* the device's */
  int num_sms;
  int driver_version;     /* 13000 = CUDA 13.0 */
  size_t total_mem;       /* bytes */
  const gc_plan *plan;    /* kernels, buffers and launch order */
  int from_ptx;           /* 1 when the module was loaded from PTX (driver JIT) */
  int eager;              /* 1 when runs launch kernel by kernel */
  int cache_hit;          /* 1 when the module came from the JIT cache */
} gc_cuda_info;

/* 1 when the CUDA backend can run here; else 0, with the reason ("CUDA backend
 * unavailable: ...") reported to d (BACKEND_UNAVAILABLE) when d is not NULL. */
int gc_cuda_check_available(const gc_rt_settings *s, gc_diags *d);

/* Facts about a CUDA executable; INVALID_ARGUMENT when exe is not one. */
graphc_status_t gc_cuda_exec_info(const gc_exec *exe, gc_cuda_info *info);

/* Launch geometry of kir kernel `kernel` (index into plan->kir->kernels):
 * blocks in the grid and threads per block; INVALID_ARGUMENT when out of range. */
graphc_status_t gc_cuda_kernel_geometry(const gc_exec *exe, int kernel, unsigned *grid,
                                        unsigned *block);

/* Time `runs` executions of the kernels alone (no host copies), each bracketed
 * by CUDA events, after `warmup` untimed ones: CUDA graph replay, or eager
 * launches when the executable is eager. The device buffers keep what the last
 * graphc_executable_run left there. ms[runs] receives milliseconds. */
graphc_status_t gc_cuda_time_runs(gc_exec *exe, int warmup, int runs, float *ms, gc_diags *d);
/* The same runs queued back to back with one event between each two, as the copy
 * baseline's copies are: ms[i] is the device time of run i with no idle wait for the
 * host to issue it. The figure to set against copy bandwidth; time_runs is the one to
 * set against a peer timed one run at a time. */
graphc_status_t gc_cuda_time_queued(gc_exec *exe, int warmup, int runs, float *ms, gc_diags *d);
/* CPU microseconds to issue each of `runs` runs (graph launch or eager launches). */
graphc_status_t gc_cuda_time_issue(gc_exec *exe, int runs, float *us, gc_diags *d);

/* Time every launch separately: eager launches with an event between each, every run
 * queued behind the one before (after one untimed run), so no launch waits for the host.
 * ms[r * n_launches + i] = launch i of run r (n_launches = plan->n_launches). */
graphc_status_t gc_cuda_time_kernels(gc_exec *exe, int runs, float *ms, gc_diags *d);

/* Device-to-device copy bandwidth in GB/s (1e9 bytes; bytes read + written),
 * from `reps` cuMemcpyDtoD of `bytes` (halved down to 64 MiB when memory is short),
 * on the executable's stream; *bytes_used receives the size actually copied. */
graphc_status_t gc_cuda_copy_bandwidth(gc_exec *exe, size_t bytes, int reps, double *gbps,
                                       size_t *bytes_used, gc_diags *d);

/* ---- the compile half (no device needed) ------------------------------------------------ */

/* Module images for one architecture, as the code generators made them. */
typedef struct gc_cuda_code {
  int sm;
  void *cubin;            /* malloc'd; NULL when none could be made */
  size_t cubin_len;
  char *ptx;              /* malloc'd, NUL-terminated */
  char *why_no_cubin;     /* malloc'd: nvJitLink's message when it failed (LLVM path) */
  int cache_hit;          /* 1: read from the JIT cache */
  double ms;              /* wall time of the whole call */
} gc_cuda_code;

/* Generate code for km for sm_<sm> on path cg (NVRTC or LLVM; DEFAULT is
 * LLVM: gc_codegen_resolve): PTX always, a cubin when the compiler can make one,
 * with the toolkit and driver the settings s name. With a cache
 * (may be NULL) the result is looked up first and stored after compiling.
 * Appends "cuda: ..." timing lines to st (may be NULL). 0, or -1 reported to d. */
int gc_cuda_codegen(const kir_module *km, int sm, graphc_codegen_t cg, const gc_settings *s,
                    gc_cache *cache, gc_cuda_code *out, gc_sbuf *st, gc_diags *d);
void gc_cuda_code_free(gc_cuda_code *c);

/* The cache key gc_cuda_codegen uses (exposed for tests and docs). */
void gc_cuda_cache_key(const kir_module *km, int sm, graphc_codegen_t cg, const gc_settings *s,
                       gc_hash128 *key);

/* After gc_launch_plan_build (driver/launch_build.h): kernels the LLVM path
 * compiled once for several identical ones ("// graphc alias" lines of the
 * module's ptx) run the original's code under their own arguments. */
int gc_cuda_apply_aliases(gc_launch_plan *lp, const char *ptx, gc_diags *d);

/* Ahead-of-time options for gc_cuda_build_bundle. */
typedef struct gc_aot_options {
  const int *sms;         /* architectures, compute capability x10 */
  int n_sms;
  graphc_codegen_t codegen;
  int embed_weights;      /* 1: weights go into the bundle */
  int no_ptx;             /* 1: cubins only (no PTX fallback) */
  int eager;              /* recorded: runs launch kernel by kernel */
  int use_cache;          /* 1: consult the JIT cache (its environment settings apply) */
} gc_aot_options;

/* A .gcx bundle for the executable's (specialized, optimized) graph: lowered
 * and compiled once per architecture without a device. exe may come from any
 * backend (the CLI compiles with the interpreter backend to get the graph).
 * *out is malloc'd. Appends stage lines to st (may be NULL). 0, or -1. */
int gc_cuda_build_bundle(gc_exec *exe, const gc_aot_options *o, void **out, size_t *len,
                         gc_sbuf *st, gc_diags *d);

#endif /* GC_CUDA_BACKEND_H */
