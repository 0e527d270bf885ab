/* cuda_backend.h - internals of the CUDA backend that `graphc bench` and the
 * GPU tests use; applications use the public API (include/graphc/graphc.h).
 *
 * All functions take an executable compiled with GRAPHC_BACKEND_CUDA; they
 * make the executable's context current for the call and restore the caller's.
 */
#ifndef GC_CUDA_BACKEND_H
#define GC_CUDA_BACKEND_H

#include "exec.h"
#include "../codegen/lower.h"

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
} gc_cuda_info;

/* 1 when the CUDA backend can run here; else 0, with the reason ("CUDA backend
 * unavailable: ...") reported to d (BACKEND_UNAVAILABLE) when d is not NULL. */
int gc_cuda_check_available(gc_diags *d);

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

/* Time every launch separately: eager launches with an event between each.
 * ms[r * n_launches + i] = launch i of run r (n_launches = plan->n_launches). */
graphc_status_t gc_cuda_time_kernels(gc_exec *exe, int runs, float *ms, gc_diags *d);

/* Device-to-device copy bandwidth in GB/s (1e9 bytes; bytes read + written),
 * from `reps` cuMemcpyDtoD of `bytes` (halved down to 64 MiB when memory is short),
 * on the executable's stream; *bytes_used receives the size actually copied. */
graphc_status_t gc_cuda_copy_bandwidth(gc_exec *exe, size_t bytes, int reps, double *gbps,
                                       size_t *bytes_used, gc_diags *d);

#endif /* GC_CUDA_BACKEND_H */
