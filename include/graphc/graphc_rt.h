/* graphc_rt.h - the graphc runtime: load a compiled .gcx bundle and run it
 * with nothing but the CUDA driver (libgraphc_rt.so needs no NVRTC, nvJitLink
 * or LLVM; it opens libcuda.so.1 at run time), or run host code compiled
 * ahead of time and linked into the program (graphc_rt_bundle_load_host).
 *
 *   graphc compile model.graph --arch sm_90,sm_80 --embed-weights -o model.gcx
 *
 *   graphc_rt_bundle_t *b;
 *   graphc_error_t err;
 *   if (graphc_rt_bundle_load("model.gcx", &b, &err) != GRAPHC_STATUS_OK) ...
 *   graphc_rt_run(b, inputs, 1, outputs, 1, &err);   (host tensors)
 *   graphc_rt_bundle_destroy(b);
 *
 * Types, statuses and errors are those of graphc.h (graphc_status_t,
 * graphc_error_t, graphc_tensor_t, graphc_tensor_info_t); libgraphc_rt
 * provides graphc_status_string, graphc_dtype_name, graphc_dtype_size and
 * graphc_free too. The compiler API declared in graphc.h is not part of
 * libgraphc_rt. (libgraphc also contains the functions declared here.)
 *
 * Loading parses and checks the whole file (format version, size, checksum,
 * every field) and needs no GPU: a damaged or truncated file, or one of
 * another format version, is an error with a message, never a crash. The
 * device is set up on the first run (or graphc_rt_bundle_prepare): device 0's
 * primary context, the best code for the device (a cubin for its sm, else
 * one of the same major version, else PTX compiled by the driver), one memory
 * arena, weights uploaded once.
 *
 * Threads: the first run (or graphc_rt_bundle_prepare) and graphc_rt_set_weight
 * must not overlap other calls on the same bundle; after that, a bundle may be run
 * from several threads at once (run, run_device, enqueue take turns, as an
 * executable's do). Different handles run concurrently.
 */
#ifndef GRAPHC_GRAPHC_RT_H
#define GRAPHC_GRAPHC_RT_H

#include "graphc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct graphc_rt_bundle graphc_rt_bundle_t;

/* Read and check a .gcx file. No device needed. */
graphc_status_t graphc_rt_bundle_load(const char *path, graphc_rt_bundle_t **out,
                                      graphc_error_t *err);
/* The same from memory, which is NOT copied: `data` must stay valid and
 * unchanged until graphc_rt_bundle_destroy (e.g. bytes linked into the
 * program, as `graphc compile --emit c` does). */
graphc_status_t graphc_rt_bundle_load_memory(const void *data, size_t len,
                                             graphc_rt_bundle_t **out, graphc_error_t *err);
/* A function of host code linked into the program, by the name the bundle's
 * plan gives it. `graphc compile --target host --emit c` writes a table of
 * these, and the call below, into NAME.o; fn(args, begin, end) runs items
 * [begin, end) of a launch (args: one 8-byte slot per kernel parameter). */
typedef struct graphc_rt_host_kernel {
  const char *name;
  void (*fn)(void *const *args, int64_t begin, int64_t end);
} graphc_rt_host_kernel_t;

/* Load a host bundle from memory (NOT copied, as for _load_memory) whose
 * kernels are the given functions, matched by name: every kernel of the plan
 * must be there. Runs split each launch over a pool of threads
 * ($GRAPHC_CPU_THREADS, else the online CPUs); no GPU, no compiler, no LLVM.
 * A CUDA bundle given here is INVALID_ARGUMENT; a host bundle loaded with the
 * other load calls is UNSUPPORTED on the first run (its code is not in it). */
graphc_status_t graphc_rt_bundle_load_host(const void *data, size_t len,
                                           const graphc_rt_host_kernel_t *kernels,
                                           size_t n_kernels, graphc_rt_bundle_t **out,
                                           graphc_error_t *err);
/* Free everything, device memory included. NULL is allowed. */
void graphc_rt_bundle_destroy(graphc_rt_bundle_t *b);

/* Signature. Names are owned by the bundle. */
size_t graphc_rt_num_inputs(const graphc_rt_bundle_t *b);
size_t graphc_rt_num_outputs(const graphc_rt_bundle_t *b);
graphc_status_t graphc_rt_input_info(const graphc_rt_bundle_t *b, size_t i,
                                     graphc_tensor_info_t *info);
graphc_status_t graphc_rt_output_info(const graphc_rt_bundle_t *b, size_t i,
                                      graphc_tensor_info_t *info);

/* What the bundle says about itself: "graph", "binds", "archs", "codegen",
 * "graphc", "nvrtc" or "llvm", "ptx", "eager", "optimize", "embed_weights",
 * "weights"; NULL for a key it does not have. Owned by the bundle. */
const char *graphc_rt_bundle_meta(const graphc_rt_bundle_t *b, const char *key);

/* Weights (the graph's params): info->name is the tensor name in the weights
 * file; *embedded (may be NULL) is 1 when the bundle carries its bytes or
 * graphc_rt_set_weight provided them. */
size_t graphc_rt_num_weights(const graphc_rt_bundle_t *b);
graphc_status_t graphc_rt_weight_info(const graphc_rt_bundle_t *b, size_t i,
                                      graphc_tensor_info_t *info, int *embedded);
/* Provide (or replace) a weight's bytes: nbytes must match. The bytes are
 * copied; after the device is set up they are uploaded at once. */
graphc_status_t graphc_rt_set_weight(graphc_rt_bundle_t *b, const char *name, const void *data,
                                     size_t nbytes, graphc_error_t *err);

/* Set up the device now (else the first run does): BACKEND_UNAVAILABLE without
 * a driver or device, UNSUPPORTED when the bundle has no code the device can
 * run, WEIGHTS_ERROR when a weight is missing. */
graphc_status_t graphc_rt_bundle_prepare(graphc_rt_bundle_t *b, graphc_error_t *err);

/* Run with host tensors; count, dtype, shape and buffer size are checked;
 * outputs are caller-allocated and written in full. */
graphc_status_t graphc_rt_run(graphc_rt_bundle_t *b, const graphc_tensor_t *inputs,
                              size_t n_inputs, graphc_tensor_t *outputs, size_t n_outputs,
                              graphc_error_t *err);
/* Run with device pointers (CUdeviceptr values in `data`, in the primary
 * context of device 0); synchronous like graphc_rt_run. Pointers are checked as
 * graphc_executable_run_device checks them (INVALID_ARGUMENT for host memory,
 * memory of another device or context, or too small an allocation). */
graphc_status_t graphc_rt_run_device(graphc_rt_bundle_t *b, const graphc_tensor_t *inputs,
                                     size_t n_inputs, graphc_tensor_t *outputs,
                                     size_t n_outputs, graphc_error_t *err);
/* Enqueue on the caller's stream and return without waiting: the semantics of
 * graphc_executable_enqueue (graphc.h): device or pinned host tensors, a stream of
 * device 0's primary context (NULL: its default stream), each enqueue ordered after
 * the previous one on the device, destroy waits for enqueued work. Host bundles:
 * UNSUPPORTED. */
graphc_status_t graphc_rt_enqueue(graphc_rt_bundle_t *b, const graphc_tensor_t *inputs,
                                  size_t n_inputs, graphc_tensor_t *outputs, size_t n_outputs,
                                  void *stream, graphc_error_t *err);

/* Execution contexts of a bundle: the semantics of graphc_exec_context_* (graphc.h).
 * Each context of a CUDA bundle has its own working memory (arena, I/O buffers, CUDA
 * graph, stream) and shares the code and weights, so requests on different contexts
 * are in flight at once; a context used from several threads takes turns. Create
 * prepares the bundle first (its errors); contexts of a host bundle run on the
 * bundle's executor, taking turns. Destroy waits for the context's work; contexts
 * still alive go with graphc_rt_bundle_destroy. Any call of a bundle may come from
 * any thread (the first run or context prepares it once), but graphc_rt_set_weight
 * must not overlap runs. */
typedef struct graphc_rt_context graphc_rt_context_t;
graphc_status_t graphc_rt_context_create(graphc_rt_bundle_t *b, graphc_rt_context_t **out,
                                         graphc_error_t *err);
void graphc_rt_context_destroy(graphc_rt_context_t *c);
graphc_status_t graphc_rt_context_run(graphc_rt_context_t *c, const graphc_tensor_t *inputs,
                                      size_t n_inputs, graphc_tensor_t *outputs, size_t n_outputs,
                                      graphc_error_t *err);
graphc_status_t graphc_rt_context_run_device(graphc_rt_context_t *c, const graphc_tensor_t *inputs,
                                             size_t n_inputs, graphc_tensor_t *outputs,
                                             size_t n_outputs, graphc_error_t *err);
graphc_status_t graphc_rt_context_enqueue(graphc_rt_context_t *c, const graphc_tensor_t *inputs,
                                          size_t n_inputs, graphc_tensor_t *outputs, size_t n_outputs,
                                          void *stream, graphc_error_t *err);

/* Text about the bundle and, once prepared, the device and the code chosen
 * ("module loaded from cubin sm_90", memory, kernels). Owned by the bundle. */
const char *graphc_rt_bundle_stats(const graphc_rt_bundle_t *b);

#ifdef __cplusplus
}
#endif
#endif /* GRAPHC_GRAPHC_RT_H */
