/* graphc.h - public C API of the graphc graph compiler.
 *
 * All state lives in handles: a context, models loaded into it, and executables
 * compiled from models. Every call that can fail returns a graphc_status_t and,
 * when `err` is not NULL, fills it with the first error's message and source
 * position. The full rendered diagnostics of the last failing call (every
 * error, with source line and caret) are kept by the context, for each thread
 * that calls into it.
 *
 * Threads: a context may be used from several threads at once (loading and
 * compiling models on each, each thread reading its own diagnostics). A model
 * is one thread's at a time (bind, set weights, compile). An executable may be
 * run from several threads at once (run, run_device, enqueue): its runs take
 * turns (each sees its own inputs and writes its own outputs, never another's).
 * For runs that overlap in time, give each thread (or each request stream) an
 * execution context (graphc_exec_context_create): contexts share the compiled code
 * and the weights, each has its own working memory, and runs on different contexts
 * proceed at once. Destroy a handle only when no call on it is in flight (work
 * already enqueued on a stream is waited for).
 *
 * Ownership: strings returned through `char **` are malloc'd and freed by the
 * caller with graphc_free(). `const char *` results are owned by the handle
 * they came from and live as long as it does.
 */
#ifndef GRAPHC_GRAPHC_H
#define GRAPHC_GRAPHC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GRAPHC_VERSION_MAJOR 0
#define GRAPHC_VERSION_MINOR 1
#define GRAPHC_VERSION_PATCH 0
#define GRAPHC_VERSION_STRING "0.1.0"

#define GRAPHC_MAX_RANK 8

typedef enum graphc_status {
  GRAPHC_STATUS_OK = 0,
  GRAPHC_STATUS_INVALID_ARGUMENT,   /* NULL handle, bad option, wrong input count/shape */
  GRAPHC_STATUS_SYNTAX_ERROR,       /* .graph text does not parse */
  GRAPHC_STATUS_VERIFY_ERROR,       /* parses, but types/shapes/attributes are wrong */
  GRAPHC_STATUS_IO_ERROR,           /* file cannot be opened, read or written */
  GRAPHC_STATUS_WEIGHTS_ERROR,      /* safetensors malformed or not matching params */
  GRAPHC_STATUS_OUT_OF_MEMORY,      /* host or device allocation failed */
  GRAPHC_STATUS_UNSUPPORTED,        /* valid request this build/backend cannot do */
  GRAPHC_STATUS_BACKEND_UNAVAILABLE,/* e.g. no libcuda.so.1 or no CUDA device */
  GRAPHC_STATUS_COMPILE_ERROR,      /* NVRTC / LLVM / ptxas rejected generated code */
  GRAPHC_STATUS_DEVICE_ERROR,       /* CUDA driver call failed at run time */
  GRAPHC_STATUS_RUNTIME_ERROR,      /* e.g. gather index out of range */
  GRAPHC_STATUS_INTERNAL,           /* a bug in graphc */
  GRAPHC_STATUS_COUNT_
} graphc_status_t;

/* Short, static, human-readable name of a status ("ok", "syntax error", ...). */
const char *graphc_status_string(graphc_status_t status);

typedef struct graphc_error {
  graphc_status_t code;
  char file[512];    /* source file of the error, "" when none */
  int line;          /* 1-based, 0 when the error has no position */
  int col;           /* 1-based, 0 when the error has no position */
  char message[1024];/* first error, without position prefix */
} graphc_error_t;

typedef enum graphc_dtype {
  GRAPHC_DTYPE_F64 = 0,
  GRAPHC_DTYPE_F32,
  GRAPHC_DTYPE_F16,
  GRAPHC_DTYPE_BF16,
  GRAPHC_DTYPE_I64,
  GRAPHC_DTYPE_I32,
  GRAPHC_DTYPE_I8,
  GRAPHC_DTYPE_U8,
  GRAPHC_DTYPE_BOOL,
  GRAPHC_DTYPE_F8E4M3,   /* fp8 1-4-3, finite (ONNX FLOAT8E4M3FN): max 448, no inf, NaN S.1111.111 */
  GRAPHC_DTYPE_F8E5M2,   /* fp8 1-5-2, IEEE-like (ONNX FLOAT8E5M2): max 57344, inf and NaN */
  GRAPHC_DTYPE_F8E4M3FNUZ, /* fp8 1-4-3, bias 8 (ONNX FLOAT8E4M3FNUZ): max 240, no inf, no -0, NaN 0x80 */
  GRAPHC_DTYPE_F8E5M2FNUZ, /* fp8 1-5-2, bias 16 (ONNX FLOAT8E5M2FNUZ): max 57344, no inf, no -0, NaN 0x80 */
  GRAPHC_DTYPE_COUNT_
} graphc_dtype_t;

/* "f32", "bf16", ...; NULL for an invalid value. */
const char *graphc_dtype_name(graphc_dtype_t dtype);
/* Bytes per element (bool is one byte); 0 for an invalid value. */
size_t graphc_dtype_size(graphc_dtype_t dtype);

/* A dense, row-major host (or device) tensor described by the caller. */
typedef struct graphc_tensor {
  graphc_dtype_t dtype;
  int rank;
  int64_t dims[GRAPHC_MAX_RANK];
  void *data;        /* host pointer (graphc_executable_run) or device pointer (run_device) */
  size_t nbytes;     /* size of the buffer at data, checked against dtype x dims */
} graphc_tensor_t;

/* Name, dtype and shape of an executable's input or output. */
typedef struct graphc_tensor_info {
  const char *name;  /* owned by the executable */
  graphc_dtype_t dtype;
  int rank;
  int64_t dims[GRAPHC_MAX_RANK];
  size_t nbytes;
} graphc_tensor_info_t;

typedef enum graphc_backend {
  GRAPHC_BACKEND_DEFAULT = 0, /* cuda when a device is present, else cpu, else interp */
  GRAPHC_BACKEND_INTERP,      /* reference interpreter (float64 accumulation) */
  GRAPHC_BACKEND_CPU,         /* LLVM host JIT */
  GRAPHC_BACKEND_CUDA         /* CUDA driver API */
} graphc_backend_t;

typedef enum graphc_codegen {
  GRAPHC_CODEGEN_DEFAULT = 0, /* llvm for cuda (faster kernels and compiles on sm_90) */
  GRAPHC_CODEGEN_NVRTC,       /* Kernel IR -> CUDA C -> NVRTC */
  GRAPHC_CODEGEN_LLVM         /* Kernel IR -> LLVM IR -> NVPTX */
} graphc_codegen_t;

/* "default", "interp", "cpu", "cuda" / "default", "nvrtc", "llvm". */
const char *graphc_backend_name(graphc_backend_t backend);
const char *graphc_codegen_name(graphc_codegen_t codegen);

/* Precision of an f32 model's compute (the `precision` graph pass, passes/precision.c). */
typedef enum graphc_precision {
  GRAPHC_PRECISION_F32 = 0,  /* as written (default) */
  GRAPHC_PRECISION_TF32,     /* f32 matmuls and convolutions on the tensor cores with operands
                                rounded to tf32 (= allow_tf32; the cuda backend) */
  GRAPHC_PRECISION_F16,      /* matmuls, convolutions and the elementwise chains between them in
                                f16 with f32 accumulation; softmax, norms, reductions, exp/log/pow
                                and the residual stream into a norm stay f32; inputs and outputs
                                keep their dtypes; weights converted once when loaded */
  GRAPHC_PRECISION_BF16,     /* likewise in bf16 */
  GRAPHC_PRECISION_FP8       /* linears (matmuls with a 2-D weight, K a multiple of 16) as fp8
                                e4m3 matmuls with f32 accumulation: weights scaled per output
                                channel (once per weights), activations per row at run time,
                                the scales in the epilogue; everything else as written. Tensor
                                cores on sm_90; other targets convert on load (slow, exact) */
} graphc_precision_t;

typedef struct graphc_compile_options {
  graphc_backend_t backend;
  graphc_codegen_t codegen;
  const char *arch;          /* "sm_90"; NULL: the device's, else sm_90 */
  int eager;                 /* 1: launch kernel by kernel, no CUDA graph replay */
  int optimize;              /* 0: no optimization passes; 1 (default): all */
  const char *print_after;   /* pass name or "all": IR printed to stderr after it */
  const char *print_before;  /* likewise, before */
  const char *disable_passes;/* comma-separated pass names */
  int time_passes;           /* 1: time each pass and stage, see graphc_executable_stats;
                                graphc_model_emit prints them to stderr */
  int allow_tf32;            /* 1: f32 matmuls may run on the tensor cores with operands
                                rounded to tf32 (10-bit mantissa; like TensorRT's TF32 flag
                                and XLA's default precision); 0 (default): full f32 */
  const char *tuning;        /* a tuning file written by `graphc tune` (kernel configurations
                                measured on a GPU), or NULL: the built-in heuristics */
  graphc_precision_t precision; /* GRAPHC_PRECISION_F32 (default), TF32, F16, BF16 or FP8; TF32 sets
                                allow_tf32, and allow_tf32 alone means TF32 */
  const char *keep_f32;      /* POSIX extended regex on value names: ops with a matching result
                                stay f32 under F16 / BF16 (NULL: none); an invalid one is
                                GRAPHC_STATUS_INVALID_ARGUMENT */
  const char *outputs;       /* comma-separated names of the entry's results to keep, in the order
                                given ("next" or "%next,%logits"); the others are not computed
                                unless a kept one needs them, and are not copied back (NULL: all).
                                A name the graph does not return is GRAPHC_STATUS_INVALID_ARGUMENT */
} graphc_compile_options_t;

/* Fill `opts` with the defaults. */
void graphc_compile_options_init(graphc_compile_options_t *opts);

typedef struct graphc_context graphc_context_t;
typedef struct graphc_model graphc_model_t;
typedef struct graphc_executable graphc_executable_t;

/* Free memory that graphc returned through a `char **` or `void **`. */
void graphc_free(void *ptr);

/* ---- context ---------------------------------------------------------- */
/* After its first CUDA executable, a context keeps device 0's primary context
 * retained until it is destroyed (as the CUDA runtime keeps it until exit), so
 * that destroying the last executable does not tear the device context down and
 * the next compile does not pay for a new one. */
graphc_status_t graphc_context_create(graphc_context_t **out);
void graphc_context_destroy(graphc_context_t *ctx);
/* Rendered diagnostics of the calling thread's last call on this context (all
 * errors and warnings, each "file:line:col: error: msg", the source line and a
 * caret), "" if it made none. Valid until that thread's next call on ctx. */
const char *graphc_context_diagnostics(const graphc_context_t *ctx);

/* ---- model ------------------------------------------------------------ */
/* Parse and verify a .graph file. Weights are resolved relative to it. */
graphc_status_t graphc_model_load_file(graphc_context_t *ctx, const char *path,
                                       graphc_model_t **out, graphc_error_t *err);
/* Parse and verify .graph text; `name` is used in diagnostics, and relative
 * weights paths resolve against the current directory. */
graphc_status_t graphc_model_load_string(graphc_context_t *ctx, const char *name,
                                         const char *text, size_t len,
                                         graphc_model_t **out, graphc_error_t *err);
void graphc_model_destroy(graphc_model_t *model);

/* Choose the entry graph by name (with or without '@'); default: the first. */
graphc_status_t graphc_model_set_entry(graphc_model_t *model, const char *graph,
                                       graphc_error_t *err);
/* Bind a symbolic dim of the entry graph, e.g. ("B", 64). Only base symbols are
 * bound; derived ones (`BS = B * S`) are computed from them. A value outside the
 * symbol's range is an INVALID_ARGUMENT error. */
graphc_status_t graphc_model_bind(graphc_model_t *model, const char *symbol,
                                  int64_t value, graphc_error_t *err);
/* Bind the entry graph's symbolic dims from the shapes of inputs given by argument
 * name (without '%'; only rank and dims of each tensor are read). Every input named
 * must match its argument's rank and concrete dims; a symbol is bound from the first
 * input that has it and every other input (and an earlier binding) must agree:
 * "inputs disagree on symbolic dim B: %x (dim 0 = 2) and %y (dim 0 = 3)"; a value
 * outside the symbol's range is an error. Nothing is bound on an error. Derived
 * symbols follow when the graph is specialized or compiled. */
graphc_status_t graphc_model_bind_inputs(graphc_model_t *model, size_t n, const char *const *names,
                                         const graphc_tensor_t *inputs, graphc_error_t *err);
/* Narrow the range lo..hi of a base symbol of the entry graph (it starts as declared,
 * `<B: 1..64>`, or 1..2^40); the new range must lie within the old one, except that a
 * range starting at 1 may start at 0 instead: a symbol bound to 0 makes empty tensors
 * (an empty batch), which the default range leaves out. */
graphc_status_t graphc_model_set_range(graphc_model_t *model, const char *symbol, int64_t lo,
                                       int64_t hi, graphc_error_t *err);
/* Override the weights file named in the model (NULL: back to the model's). */
graphc_status_t graphc_model_set_weights(graphc_model_t *model, const char *path,
                                         graphc_error_t *err);
/* Apply the bound dims to the entry graph now (substitute and re-verify), so
 * that printing shows concrete shapes. Every symbolic dim must be bound. */
graphc_status_t graphc_model_specialize(graphc_model_t *model, graphc_error_t *err);
/* Calibrate the activations of --precision fp8 (static scales, like TensorRT's calibrators):
 * run the model as written (f32, on opts' backend; NULL: the default one) on sample inputs
 * given by argument name (every input of the entry graph; symbolic dims are taken from
 * their shapes, whatever the model is bound to) and record, for every linear that FP8
 * quantizes, the largest |x| its activation reaches as the matmul's `act_amax` attribute
 * (the larger of it and an earlier calibration's: call once per sample batch). Executables
 * compiled afterwards with GRAPHC_PRECISION_FP8 then scale those activations by the
 * constant act_amax / 448 instead of computing per-row scales at run time (values beyond
 * it saturate); other precisions ignore it. graphc_model_print shows the attributes. */
graphc_status_t graphc_model_calibrate(graphc_model_t *model, const graphc_compile_options_t *opts,
                                       size_t n, const char *const *names,
                                       const graphc_tensor_t *inputs, graphc_error_t *err);
/* Write a safetensors file with deterministic random data (splitmix64 from
 * `seed`) for every param of the entry graph; param shapes must be concrete. */
graphc_status_t graphc_model_write_random_weights(graphc_model_t *model, const char *path,
                                                  uint64_t seed, graphc_error_t *err);
/* Generated code for the entry graph without running it: `what` is "kir"
 * (Kernel IR dump), "cuda" (CUDA C), "llvm" (LLVM IR), "ptx" or "cubin".
 * opts->codegen picks the path for ptx/cubin and opts->arch the target.
 * *out is malloc'd (free with graphc_free), *len its size in bytes. */
graphc_status_t graphc_model_emit(graphc_model_t *model, const graphc_compile_options_t *opts,
                                  const char *what, void **out, size_t *len, graphc_error_t *err);
/* The model as .graph text (re-parses to the same text). Free with graphc_free. */
graphc_status_t graphc_model_print(const graphc_model_t *model, char **out_text,
                                   graphc_error_t *err);

/* ---- executable ------------------------------------------------------- */
/* Compile the entry graph (all symbolic dims bound) for a backend. Loads the
 * weights file and checks it against every param. `opts` may be NULL.
 * For the cuda (or default) backend, opening the GPU (cuInit, the primary
 * context) runs on a helper thread beside parsing and code generation; the
 * thread has ended when the call returns. */
graphc_status_t graphc_compile(graphc_model_t *model, const graphc_compile_options_t *opts,
                               graphc_executable_t **out, graphc_error_t *err);
/* Compile once for every binding of the entry graph's unbound symbolic dims within their
 * ranges (graphc_model_set_range); dims the model has bound stay bound. Runs take the free
 * dims from the inputs' shapes (inconsistent inputs and values out of range are errors);
 * each distinct binding is specialized and compiled on its first run and then kept, up to
 * 8, the least recently used dropped first, so its kernels are those of an executable
 * compiled for exactly that shape; graphc_executable_stats says how many were compiled.
 * input_info / output_info give -1 for a free dim (and nbytes 0); graphc_executable_resolve
 * gives the output shapes for given inputs. With no free dim this is graphc_compile. Not
 * supported yet: graphs with states, execution contexts with their own memory (contexts
 * take turns), bundles. */
graphc_status_t graphc_compile_ranged(graphc_model_t *model, const graphc_compile_options_t *opts,
                                      graphc_executable_t **out, graphc_error_t *err);
/* The output infos (shapes, sizes) a run with these inputs makes (only their dtype, rank and
 * dims are read); for a ranged executable the binding is compiled here if new. */
graphc_status_t graphc_executable_resolve(graphc_executable_t *exe, const graphc_tensor_t *inputs,
                                          size_t n_inputs, graphc_tensor_info_t *outputs, size_t n_outputs,
                                          graphc_error_t *err);
void graphc_executable_destroy(graphc_executable_t *exe);

graphc_backend_t graphc_executable_backend(const graphc_executable_t *exe);
size_t graphc_executable_num_inputs(const graphc_executable_t *exe);
size_t graphc_executable_num_outputs(const graphc_executable_t *exe);
graphc_status_t graphc_executable_input_info(const graphc_executable_t *exe, size_t i,
                                             graphc_tensor_info_t *info);
graphc_status_t graphc_executable_output_info(const graphc_executable_t *exe, size_t i,
                                              graphc_tensor_info_t *info);

/* ---- states (a KV cache) ----------------------------------------------------------
 * A graph may declare states, `state %k: f32[B, H, T, D] = "cache.k.0";`: memory the
 * executable owns (host memory on the interp and cpu backends, device memory on cuda),
 * zero when compiled, kept between runs and updated in place by cache_write. A state
 * is known by its name.
 * - share_states: `dst` uses `src`'s states from now on (its own are dropped): every
 *   state dst declares must have the same dtype and shape in src's (one missing there is
 *   added, zero). Both on the same backend. Executables sharing states see each other's
 *   writes: the prefill and decode executables of one model, or one per batch bucket.
 *   The memory lives until the last executable sharing it is destroyed.
 * - read_state / write_state copy one state to / from host memory (tensor of exactly its
 *   dtype and shape); reset_states zeroes every state exe uses.
 * - num_states / state_info list them (info.name lives as long as the states).
 * Runs of executables that share states must not overlap, and none of these calls may
 * overlap a run of exe (or of one sharing its states); executables with states refuse
 * execution contexts (graphc_exec_context_create) for the same reason. Bundles do not
 * hold states yet. */
graphc_status_t graphc_executable_share_states(graphc_executable_t *dst, graphc_executable_t *src,
                                               graphc_error_t *err);
size_t graphc_executable_num_states(const graphc_executable_t *exe);
graphc_status_t graphc_executable_state_info(const graphc_executable_t *exe, size_t i,
                                             graphc_tensor_info_t *info);
graphc_status_t graphc_executable_read_state(graphc_executable_t *exe, const char *name,
                                             graphc_tensor_t *out, graphc_error_t *err);
graphc_status_t graphc_executable_write_state(graphc_executable_t *exe, const char *name,
                                              const graphc_tensor_t *in, graphc_error_t *err);
graphc_status_t graphc_executable_reset_states(graphc_executable_t *exe, graphc_error_t *err);

/* Run with host tensors. Inputs and outputs are checked for count, dtype, shape
 * and buffer size; outputs are caller-allocated and written in full. */
graphc_status_t graphc_executable_run(graphc_executable_t *exe,
                                      const graphc_tensor_t *inputs, size_t n_inputs,
                                      graphc_tensor_t *outputs, size_t n_outputs,
                                      graphc_error_t *err);

/* Run with device tensors: `data` holds a CUdeviceptr (cast to void *) of memory
 * on the executable's device, in its context (device 0's primary context, which the
 * CUDA runtime uses too), and large enough; no copies. Synchronous like
 * graphc_executable_run. Each pointer is checked with cuPointerGetAttribute: host
 * memory (pageable or pinned), memory of another device or context, freed memory or
 * an allocation too small is INVALID_ARGUMENT ("input 0 (%x): ..."). Backends
 * without device memory (cpu, interp): UNSUPPORTED. Threads: as
 * graphc_executable_run (calls take turns). */
graphc_status_t graphc_executable_run_device(graphc_executable_t *exe,
                                             const graphc_tensor_t *inputs, size_t n_inputs,
                                             graphc_tensor_t *outputs, size_t n_outputs,
                                             graphc_error_t *err);

/* Enqueue a run on the caller's CUDA stream (a CUstream or cudaStream_t, passed as
 * void *) and return without waiting for it. The stream must belong to the
 * executable's context (device 0's primary context: streams made by the CUDA
 * runtime, or by the driver with that context current); NULL means that context's
 * legacy default stream. A stream of another context is INVALID_ARGUMENT.
 *
 * Each tensor is either device memory (as for run_device; used in place) or pinned
 * host memory (graphc_host_alloc or cuMemHostAlloc; copied asynchronously on the
 * same stream, before and after the kernels). Pageable host memory is refused
 * (INVALID_ARGUMENT): it cannot be copied asynchronously. Inputs must stay unchanged
 * and outputs unread until the work completes: synchronize the stream, or record an
 * event on it after this call and wait for that (graphc records none for you).
 * A kernel fault shows up at that synchronization, not here. The fast path: a stream
 * and pointers equal to those the previous enqueue accepted are not asked about again
 * (no cuPointerGetAttribute), so do not free and reallocate a buffer at the same
 * address with a smaller size between enqueues.
 *
 * Ordering: the executable has one set of working memory, so each enqueue (or run)
 * waits on the device for the previous one to finish, whatever streams they were on
 * (an event, cuStreamWaitEvent); enqueues never run two at a time on one
 * executable: for work that overlaps use an execution context per request stream
 * (graphc_exec_context_enqueue).
 * Threads: any thread may enqueue; calls take turns on the host, and the device work
 * follows in the order the calls took. graphc_executable_destroy waits for enqueued
 * work to finish. Backends without streams (cpu, interp): UNSUPPORTED. */
graphc_status_t graphc_executable_enqueue(graphc_executable_t *exe, const graphc_tensor_t *inputs,
                                          size_t n_inputs, graphc_tensor_t *outputs,
                                          size_t n_outputs, void *stream, graphc_error_t *err);

/* Pinned (page-locked) host memory for graphc_executable_enqueue's host tensors,
 * allocated with cuMemHostAlloc (portable) on device 0's primary context, which the
 * buffer keeps retained until graphc_host_free. BACKEND_UNAVAILABLE without a CUDA
 * driver or device, OUT_OF_MEMORY when the driver cannot pin that much. Free only
 * with graphc_host_free (NULL is fine), after the work using it has completed. Both
 * may be called from any thread. (Also in libgraphc_rt.) */
graphc_status_t graphc_host_alloc(size_t bytes, void **out, graphc_error_t *err);
void graphc_host_free(void *ptr);

/* Execution contexts: the working memory of one run in flight, the way TensorRT's
 * IExecutionContext is. Each context of a CUDA executable has its own intermediate
 * buffers, I/O buffers, CUDA graph and stream and shares the executable's module and
 * weights (device memory per context: the arena and I/O sizes in the stats), so
 * N threads with N contexts run N requests at once. The runs are those of the
 * executable (same checks, same statuses), on the context's memory:
 *   - run, run_device: synchronous; enqueue: on the caller's stream, as
 *     graphc_executable_enqueue, ordered after the previous work of the same
 *     context only (contexts never wait for each other);
 *   - a context used from several threads at once is safe: its calls take turns;
 *   - the cpu and interp backends have no per-context memory: their contexts run
 *     the executable itself, taking turns (a cpu run already uses every core).
 * Create: OUT_OF_MEMORY / DEVICE_ERROR when the device memory cannot be had.
 * Destroy waits for the context's work (enqueued work too). Contexts still alive
 * are destroyed with their executable (graphc_executable_destroy); their handles
 * are invalid afterwards. */
typedef struct graphc_exec_context graphc_exec_context_t;
graphc_status_t graphc_exec_context_create(graphc_executable_t *exe, graphc_exec_context_t **out,
                                           graphc_error_t *err);
void graphc_exec_context_destroy(graphc_exec_context_t *ctx);
graphc_status_t graphc_exec_context_run(graphc_exec_context_t *ctx, const graphc_tensor_t *inputs,
                                        size_t n_inputs, graphc_tensor_t *outputs, size_t n_outputs,
                                        graphc_error_t *err);
graphc_status_t graphc_exec_context_run_device(graphc_exec_context_t *ctx,
                                               const graphc_tensor_t *inputs, size_t n_inputs,
                                               graphc_tensor_t *outputs, size_t n_outputs,
                                               graphc_error_t *err);
graphc_status_t graphc_exec_context_enqueue(graphc_exec_context_t *ctx, const graphc_tensor_t *inputs,
                                            size_t n_inputs, graphc_tensor_t *outputs,
                                            size_t n_outputs, void *stream, graphc_error_t *err);

/* Compile statistics as text (kernels, bytes, peak memory, stage times).
 * Owned by the executable. */
const char *graphc_executable_stats(const graphc_executable_t *exe);

#ifdef __cplusplus
}
#endif
#endif /* GRAPHC_GRAPHC_H */
