/* cuda_exec.h - the load-and-run half of the CUDA backend, shared by
 * libgraphc (JIT: runtime/cuda_backend.c) and libgraphc_rt (bundles:
 * runtime/rt_api.c). It needs only the CUDA driver: no Kernel IR, no NVRTC,
 * no LLVM.
 *
 *   gc_cu_exec_open      primary context of device 0, device properties
 *   gc_cu_exec_load      module from the best image (cubin, else PTX through
 *                        the driver JIT) -> functions and launch geometry ->
 *                        one arena, one consts block, one I/O block -> stream
 *   gc_cu_exec_run       H2D copies, launches (CUDA graph replay or eager),
 *                        D2H copies, one synchronize
 *   gc_cu_exec_run_device  the caller's device pointers bound as I/O
 *   gc_cu_exec_enqueue   the same on the caller's stream, without waiting;
 *                        pinned host tensors copied on that stream
 *
 * Every entry point makes the executable's context current and restores the
 * caller's before returning.
 *
 * Execution contexts (gc_cu_ctx): the executor holds what every run reads (module,
 * kernels, constants); a context holds what one run in flight writes (arena, I/O
 * buffers, kernel arguments, tensor maps, CUDA graph, stream). The executor has a
 * context of its own, behind gc_cu_exec_run / run_device / enqueue;
 * gc_cu_ctx_new makes more, each with its own device memory (arena + I/O), so runs
 * on different contexts are in flight at once, from different threads and streams.
 * Runs on one context from several threads take turns (its mutex), and each
 * enqueue's work is ordered after the previous one's on the device (an event
 * recorded after it, waited on by the next run or enqueue of that context on any
 * stream). Runtime/cuda_exec_impl.h has the layout.
 * Settings (runtime/settings.h, given to gc_cu_exec_open): GRAPHC_CUDA_SYNC=1
 * launches eagerly and synchronizes after every launch, so an execution error
 * names its kernel.
 */
#ifndef GC_CUDA_EXEC_H
#define GC_CUDA_EXEC_H

#include "runtime/launch_plan.h"
#include "runtime/settings.h"

/* Code for one architecture: a cubin, PTX, or both. */
typedef struct gc_cu_image {
  int sm;                  /* compute capability x10 the code was made for */
  const void *cubin;       /* NULL when none */
  size_t cubin_len;
  const char *ptx;         /* NUL-terminated; NULL when none */
  const char *why_no_cubin;/* optional: why the compiler made no cubin */
} gc_cu_image;

/* One way to load a module: image `image`, its cubin or its PTX. */
typedef struct gc_cu_try {
  int image;
  int ptx;                 /* 0: cubin, 1: PTX through the driver JIT */
} gc_cu_try;

/* The order in which images are tried on a device of compute capability
 * device_sm: a cubin for exactly that sm; then cubins of the same major
 * version and a lower minor (newest first: binary compatible); then PTX for
 * an sm <= device_sm (newest first: the driver JIT compiles it forward).
 * Writes up to 2*n entries to out and returns how many (0: nothing can run).
 * Pure: needs no device. */
int gc_cu_image_order(const gc_cu_image *imgs, int n, int device_sm, gc_cu_try *out);

/* "cubin sm_80, sm_90; PTX sm_90" (or "nothing") into buf. */
void gc_cu_image_list(const gc_cu_image *imgs, int n, char *buf, size_t len);

/* Properties of the device an executor runs on. */
typedef struct gc_cu_props {
  char name[256];          /* "NVIDIA H200" */
  int sm;                  /* compute capability x10 */
  int num_sms, max_threads, shared_bytes, shared_optin, warp;
  size_t total_mem;
  int driver_version;      /* 13000 = CUDA 13.0 */
} gc_cu_props;

typedef struct gc_cu_exec gc_cu_exec;

/* Retain device 0's primary context and read its properties. NULL on failure
 * (reported to d: BACKEND_UNAVAILABLE without a driver or device). s: the driver
 * library and the sync flag (may be NULL: the defaults). */
gc_cu_exec *gc_cu_exec_open(const gc_rt_settings *s, gc_diags *d);
/* The same, but the context is retained on a new thread (100-230 ms on an H200)
 * while the caller compiles: the properties are ready at once; gc_cu_exec_wait
 * (which gc_cu_exec_load calls first) joins it and reports its failure. */
gc_cu_exec *gc_cu_exec_open_async(const gc_rt_settings *s, gc_diags *d);
int gc_cu_exec_wait(gc_cu_exec *x, gc_diags *d);
/* Free everything (module, memory, stream, graph) and release the context;
 * tolerates a partially loaded executor and NULL. */
void gc_cu_exec_free(gc_cu_exec *x);
const gc_cu_props *gc_cu_exec_props(const gc_cu_exec *x);

/* Load the plan's code and set up everything runs need. The plan (and the
 * const data it points at) must outlive the executor; images are only read
 * during the call. Every const must have data. eager: launch kernel by kernel
 * instead of replaying a CUDA graph (GRAPHC_CUDA_SYNC=1 forces it). Appends
 * "cuda: ..." lines to st (may be NULL). 0 on success, -1 reported to d. */
int gc_cu_exec_load(gc_cu_exec *x, const gc_launch_plan *p, const gc_cu_image *imgs, int n_imgs,
                    int eager, gc_sbuf *st, gc_diags *d);

/* Run with validated host tensors (count, dtype, shape and size checked by the caller). */
int gc_cu_exec_run(gc_cu_exec *x, const graphc_tensor_t *in, graphc_tensor_t *out, gc_diags *d);
/* Run with the caller's device pointers as inputs and outputs (no copies); each is
 * checked to be device memory of the executor's device and context (cuPointerGetAttribute):
 * else INVALID_ARGUMENT. */
int gc_cu_exec_run_device(gc_cu_exec *x, const graphc_tensor_t *in, graphc_tensor_t *out,
                          gc_diags *d);
/* Enqueue on the caller's stream (a CUstream of the executor's context; NULL: that
 * context's default stream) and return without waiting. Each tensor is device memory
 * of the executor's device (bound as is) or pinned host memory (copied asynchronously
 * on the stream through the executor's own I/O buffers); anything else, a stream of
 * another context, or too small an allocation is INVALID_ARGUMENT. Kernel faults show
 * at the caller's synchronize. Validated tensors as for run. */
int gc_cu_exec_enqueue(gc_cu_exec *x, const graphc_tensor_t *in, graphc_tensor_t *out, void *stream,
                       gc_diags *d);
/* Execution contexts of a loaded executor (see above). gc_cu_ctx_new: NULL on failure
 * (device OOM: the message says how much the arena needed). gc_cu_ctx_free waits for
 * the context's work (also enqueued work on callers' streams) and frees it; contexts
 * still alive are freed by gc_cu_exec_free. The runs are gc_cu_exec_run & co. on
 * that context. */
typedef struct gc_cu_ctx gc_cu_ctx;
gc_cu_ctx *gc_cu_ctx_new(gc_cu_exec *x, gc_diags *d);
void gc_cu_ctx_free(gc_cu_ctx *c);
gc_cu_ctx *gc_cu_exec_main(gc_cu_exec *x);
int gc_cu_ctx_run(gc_cu_ctx *c, const graphc_tensor_t *in, graphc_tensor_t *out, gc_diags *d);
int gc_cu_ctx_run_device(gc_cu_ctx *c, const graphc_tensor_t *in, graphc_tensor_t *out,
                         gc_diags *d);
int gc_cu_ctx_enqueue(gc_cu_ctx *c, const graphc_tensor_t *in, graphc_tensor_t *out, void *stream,
                      gc_diags *d);

/* Upload new bytes for const i (same size) after loading. Waits for the work of every
 * context first; must not be called while another thread runs the executor. */
/* States (runtime/cuda_states.c): a store of device memory for this executor's device,
 * and pointing the plan's states at a store's memory (made zero there when missing).
 * Bind before the first run and again (never during a run) to share another store. */
struct gc_states;
struct gc_states *gc_cu_exec_states_new(gc_cu_exec *x, gc_diags *d);
int gc_cu_exec_bind_states(gc_cu_exec *x, struct gc_states *s, gc_diags *d);
int gc_cu_exec_set_const(gc_cu_exec *x, int i, const void *data, size_t bytes, gc_diags *d);

/* Facts about a loaded executor. */
int gc_cu_exec_from_ptx(const gc_cu_exec *x);   /* 1: module came from PTX */
int gc_cu_exec_image_sm(const gc_cu_exec *x);   /* sm of the image loaded */
int gc_cu_exec_eager(const gc_cu_exec *x);
/* Grid and block of kernel k (index into plan->kernels); -1 when out of range. */
int gc_cu_exec_geometry(const gc_cu_exec *x, int k, unsigned *grid, unsigned *block);

/* Timing hooks behind graphc bench (see cuda_backend.h for their contracts). */
int gc_cu_exec_time_runs(gc_cu_exec *x, int warmup, int runs, float *ms, gc_diags *d);
/* CPU microseconds to issue each of `runs` runs (launches only, no copies). */
int gc_cu_exec_time_issue(gc_cu_exec *x, int runs, float *us, gc_diags *d);
int gc_cu_exec_time_queued(gc_cu_exec *x, int warmup, int runs, float *ms, gc_diags *d);
int gc_cu_exec_time_kernels(gc_cu_exec *x, int runs, float *ms, gc_diags *d);
int gc_cu_exec_copy_bandwidth(gc_cu_exec *x, size_t bytes, int reps, double *gbps,
                              size_t *bytes_used, gc_diags *d);

#endif /* GC_CUDA_EXEC_H */
