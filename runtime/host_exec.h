/* host_exec.h - the load/run half of the host (CPU) backend: a launch plan
 * whose kernels are host functions, run in order over a thread pool.
 *
 *   cpu_backend.c (JIT: LLVM ORC)        ──┐
 *                                          ├─ gc_launch_plan + gc_host_code ─▶ gc_host_exec
 *   rt_api.c (kernels linked into the      │    (launch_plan.h)                 load: arena, consts,
 *   program by `graphc compile --target ───┘                                    slots, thread pool
 *   host --emit c`, bundle.c's HOST)                                            run: bind I/O, launch
 *
 * It needs no LLVM: it is built into libgraphc and into libgraphc_rt, like
 * cuda_exec.c for the CUDA backend. Kernel ABI (codegen/llvm_emit.h):
 * fn(args, begin, end) runs items [begin, end) of the kernel's launch; args
 * holds one 8-byte slot per parameter (a buffer's base pointer, or an I64
 * parameter's value). A launch is split into contiguous chunks across the
 * pool by its modeled work; small launches run inline on the caller.
 *
 * Memory: one 64-byte-aligned arena for TEMP buffers; CONST buffers point at
 * the plan's const data (borrowed: it must outlive the executor), copied only
 * when misaligned for the kernels; INPUT/OUTPUT slots point at the caller's
 * tensors, except that a misaligned tensor or an output overlapping another
 * I/O tensor goes through a scratch copy (kernel buffers are noalias).
 * Runs on one executor are serialized by a mutex.
 */
#ifndef GC_HOST_EXEC_H
#define GC_HOST_EXEC_H

#include <stdint.h>

#include "runtime/launch_plan.h"
#include "runtime/settings.h"

typedef void (*gc_host_kernel_fn)(void *const *args, int64_t begin, int64_t end);

/* The code and facts a launch plan needs to run on the host. */
typedef struct gc_host_code {
  const gc_host_kernel_fn *fns;  /* per plan kernel (lp->kernels order) */
  const double *work;            /* per plan kernel: modeled bytes + flops; NULL: 8 per item */
  const uint32_t *align;         /* per plan buffer: alignment the kernels assume; NULL: 16 */
} gc_host_code;

typedef struct gc_host_exec gc_host_exec;

/* Check lp (gc_launch_plan_check), place memory, bind the slots and start a
 * pool of `threads` participants. Every const must have data. NULL after
 * reporting to d. The plan and the const data are borrowed. */
gc_host_exec *gc_host_exec_load(const gc_launch_plan *lp, const gc_host_code *code, int threads,
                                gc_diags *d);
/* Run every launch in plan order with host tensors (already checked against
 * the signature by the caller). 0, or -1 reported to d (out of memory for a
 * scratch copy). */
int gc_host_exec_run(gc_host_exec *x, const graphc_tensor_t *in, graphc_tensor_t *out,
                     gc_diags *d);
/* For benchmarks: `runs` times, every launch in plan order (the prologue's too),
 * each timed alone (wall clock, from the pool's start to its end):
 * ms[r * lp->n_launches + i]. 0, or -1 reported to d. */
int gc_host_exec_time_launches(gc_host_exec *x, const graphc_tensor_t *in, graphc_tensor_t *out,
                               int runs, float *ms, gc_diags *d);
/* Point const c at new data (same size; borrowed). 0, or -1 reported. */
/* Point the plan's states at store s's host memory (made zero there when missing);
 * before the first run of a plan with states, and again (never during a run) to share. */
struct gc_states;
int gc_host_exec_bind_states(gc_host_exec *x, struct gc_states *s, gc_diags *d);
int gc_host_exec_set_const(gc_host_exec *x, int c, const void *data, gc_diags *d);
/* "2 threads, arena 1024 bytes, 0 of 4 consts copied". */
void gc_host_exec_describe(const gc_host_exec *x, gc_sbuf *out);
/* Stop the pool and free everything; NULL is allowed. */
void gc_host_exec_free(gc_host_exec *x);

/* Threads the host backend uses: s->cpu_threads (GRAPHC_CPU_THREADS) when it is a
 * number in [1, 1024] (else a warning to d, which may be NULL), otherwise the online
 * CPUs this process may run on. s may be NULL (unset). */
int gc_host_threads(const gc_rt_settings *s, gc_diags *d);

#endif /* GC_HOST_EXEC_H */
