/* cuda_exec_impl.h - what runtime/cuda_exec.c (the executor: device, module,
 * kernels, constants) and runtime/cuda_context.c (execution contexts: arena, I/O,
 * arguments, tensor maps, CUDA graph, stream) share. Not a public header: only
 * those two files include it.
 *
 * An executor holds what every run reads and nothing writes: the module, the
 * kernels' functions and launch geometry, the constants. An execution context
 * holds what one run in flight writes: the intermediate-buffer arena, the I/O
 * buffers, the kernel arguments (they point into the arena), the tensor map table,
 * the captured graph, a stream and the event that orders its enqueues. Every
 * executor has one context of its own (`main`, behind gc_cu_exec_run & co.);
 * gc_cu_ctx_new makes more, so that runs on different contexts can be in flight at
 * once, from different threads, on different streams.
 */
#ifndef GC_CUDA_EXEC_IMPL_H
#define GC_CUDA_EXEC_IMPL_H

#include <pthread.h>
#include <stdint.h>

#include "runtime/cuda_driver.h"
#include "runtime/cuda_exec.h"
#include "runtime/launch_deps.h"

#define CU_ALIGN 256
#define TMAP_BYTES 128   /* one encoded CUtensorMap in the table (its size and alignment) */

typedef struct cu_kernel {
  const gc_lp_kernel *k;
  CUfunction fn;
  unsigned grid, block;
  int arg0;                /* its first argument slot in a context's `args` */
} cu_kernel;

struct gc_cu_ctx {
  gc_cu_exec *x;
  CUstream stream;                 /* its own (runs and timing; enqueue uses the caller's) */
  CUdeviceptr arena, io;           /* intermediates; its own I/O buffers */
  CUdeviceptr *in_buf, *out_buf;   /* inside io */
  CUdeviceptr *bound_in, *bound_out; /* what the kernel arguments point at now */
  CUdeviceptr *graph_in, *graph_out; /* what the instantiated graph was captured with */
  int bound;                       /* the arguments and tensor maps are bound to bound_in/out */
  unsigned bound_states, graph_states; /* the states generation the arguments / graph have */
  uint64_t *args;                  /* one 8-byte slot per kernel param (CUdeviceptr or int64) */
  void **argp;                     /* argp[i] = &args[i], what cuLaunchKernel reads */
  CUdeviceptr tmaps;               /* the tensor map table: n_tmaps x TMAP_BYTES */
  CUtensorMap *tmap_host;          /* its host copy (TMAP_BYTES aligned) */
  CUdeviceptr *tmap_at;            /* per map: the address it was encoded with */
  unsigned char *tmap_valid;       /* per map: tmap_host holds a good encoding at tmap_at */
  int tmaps_dirty;                 /* tmap_host differs from the device table */
  CUgraphExec gexec;
  CUevent done;                    /* recorded after each enqueue (made at the first) */
  int pending;                     /* an enqueue's work may still be in flight: wait on `done` */
  unsigned prologue_gen;           /* the weights generation its prologue results are of */
  /* The enqueue fast path: what was checked last time, and scratch for one call. A caller
   * pointer or stream equal to the one checked last time is not asked about again. */
  CUstream checked_stream;
  int stream_checked;
  void **checked_in, **checked_out;        /* per I/O tensor: the pointer last accepted */
  unsigned char *checked_in_host, *checked_out_host; /* ... and whether it was pinned host memory */
  CUdeviceptr *scratch_in, *scratch_out;
  unsigned char *scratch_hin, *scratch_hout;
  /* Runs on one context from several threads take turns. */
  pthread_mutex_t run_mu;
  int run_mu_ok;
  gc_cu_ctx *next;                 /* the executor's list of contexts */
};

struct gc_cu_exec {
  const gc_cu_driver *cu;
  CUdevice dev;
  CUcontext ctx;           /* the device's primary context, retained */
  int ctx_retained;
  gc_cu_props props;
  const gc_launch_plan *plan;
  CUmodule mod;
  int from_ptx, image_sm;
  CUdeviceptr consts;              /* the private weights and constants, uploaded once */
  CUdeviceptr *const_ptr;          /* consts[i]'s memory: in `consts`, or a shared weight */
  unsigned char *const_shared;     /* 1: const_ptr[i] is a reference (cuda_weights.c); 2: an
                                      allocation of its own (a shared weight set_const changed) */
  cu_kernel *kernels;              /* per plan kernel */
  int n_args;                      /* argument slots of all kernels */
  int eager, sync_each;
  int branches_on;                 /* GRAPHC_CUDA_BRANCHES */
  gc_launch_deps deps;             /* launches after the prologue; used when deps.branches */
  unsigned weights_gen;            /* bumped by set_const: prologues are due again */
  CUdeviceptr *state_addr;         /* per plan state: its memory (gc_cu_exec_bind_states) */
  unsigned states_gen;             /* bumped by each bind: contexts bind and capture again */
  gc_cu_ctx *main;                 /* the executor's own context */
  gc_cu_ctx *contexts;             /* every context (main included) */
  pthread_mutex_t mu;              /* the context list and the weights */
  int mu_ok;
  /* gc_cu_exec_open_async: the primary context is retained on this thread */
  pthread_t retainer;
  int retaining;                   /* the thread is to be joined */
  CUresult retain_rc;
  double retain_ms, retain_wait_ms;
};

/* Shared helpers (runtime/cuda_exec.c). */
double gc_cu_now_ms(void);
size_t gc_cu_align_up(size_t n);
void gc_cu_fmt_bytes(char *buf, size_t n, double bytes);
int gc_cu_oom(gc_diags *d);
int gc_cu_ctx_push(gc_cu_exec *x, gc_diags *d);
void gc_cu_ctx_pop(gc_cu_exec *x);
int gc_cu_dev_alloc(gc_cu_exec *x, CUdeviceptr *p, size_t bytes, const char *what, gc_diags *d);

/* runtime/cuda_weights.c: device copies of weights shared by the executors of a device.
 * A const is shared when it has data, an origin (gc_lp_const.origin) and at least
 * GC_CU_SHARE_MIN_BYTES (smaller ones stay in the executor's own block). acquire: the
 * copy of c's bytes (*fresh: this call allocated and uploaded it); release drops one
 * reference. Both with the device's primary context pushed. */
#define GC_CU_SHARE_MIN_BYTES ((uint64_t)64 << 10)
int gc_cu_weight_shareable(const gc_lp_const *c);
int gc_cu_weight_acquire(gc_cu_exec *x, const gc_lp_const *c, CUdeviceptr *p, int *fresh, gc_diags *d);
void gc_cu_weight_release(gc_cu_exec *x, CUdeviceptr p);

/* runtime/cuda_context.c: a context's memory, arguments and stream (executor context
 * pushed; NULL on failure, reported), and its release (waits for its work). */
gc_cu_ctx *gc_cu_ctx_make(gc_cu_exec *x, gc_sbuf *st, gc_diags *d);
void gc_cu_ctx_release(gc_cu_ctx *c);

#endif /* GC_CUDA_EXEC_IMPL_H */
