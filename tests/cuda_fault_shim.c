/* cuda_fault_shim.c - libgraphc_cuda_fault_shim.so: a test-only CUDA driver
 * that forwards to the real one and fails the Nth call of a class (see
 * cuda_fault_shim.h for the classes, the environment and the control calls).
 *
 * It exports every symbol runtime/cuda_driver.c resolves (GC_CU_FUNCS), each
 * defined with the prototype <cuda.h> declares, so the compiler checks every
 * signature. A wrapper is one SHIM(...) line: class, injected CUresult, the
 * function, its parameters, the arguments, and what to count on success.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_fault_shim.h"

enum { K_MEM, K_MODULE, K_STREAM, K_EVENT, K_GRAPH, K_GRAPHEXEC, K_CTX, K_PUSH, K_HOST };
static const char *const k_kinds[GRAPHC_CUSHIM_KINDS] = {
    "device allocations", "modules", "streams", "events", "graphs", "graph executables",
    "primary context retains", "context pushes", "pinned host allocations"};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static void *g_real;              /* the real driver */
static char g_class[128];         /* armed class ("" when disarmed) */
static int g_n;                   /* the call that fails */
static int g_calls;               /* calls of the class since arming */
static int g_fired;
static const char *g_failed_call;
static CUresult g_failed_result;
static int g_verbose;
static long g_live[GRAPHC_CUSHIM_KINDS];

/* Open the real driver and read GRAPHC_CUDA_FAULT (once). */
static void shim_init(void) {
  const char *path = getenv("GRAPHC_CUDA_FAULT_REAL");
  const char *v = getenv("GRAPHC_CUDA_FAULT_VERBOSE");
  g_verbose = v && strcmp(v, "1") == 0;
  g_real = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!g_real && g_verbose)
    fprintf(stderr, "cuda fault shim: cannot open the real driver: %s\n", dlerror());
  const char *f = getenv("GRAPHC_CUDA_FAULT");
  const char *colon = f ? strrchr(f, ':') : NULL;
  if (colon && (size_t)(colon - f) < sizeof g_class) {
    memcpy(g_class, f, (size_t)(colon - f));
    g_class[colon - f] = 0;
    g_n = atoi(colon + 1);
    if (g_n <= 0) g_class[0] = 0;
  }
}

/* The real driver's symbol, or NULL. */
static void *real_sym(const char *name) {
  pthread_once(&g_once, shim_init);
  return g_real ? dlsym(g_real, name) : NULL;
}

/* 1 when this call (class cls, name `name`) is the armed one: it fails with err. */
static int inject(const char *cls, const char *name, CUresult err) {
  pthread_once(&g_once, shim_init);
  if (!cls) return 0;
  int hit = 0;
  pthread_mutex_lock(&g_mu);
  if (g_class[0] && (strcmp(g_class, cls) == 0 || strcmp(g_class, name) == 0 ||
                     strcmp(g_class, "any") == 0)) {
    g_calls++;
    if (g_calls == g_n && !g_fired) {
      hit = g_fired = 1;
      g_failed_call = name;
      g_failed_result = err;
    }
  }
  pthread_mutex_unlock(&g_mu);
  if (hit && g_verbose)
    fprintf(stderr, "cuda fault shim: %s call %d (%s) fails with %d\n", cls, g_n, name, (int)err);
  return hit;
}

/* Count a live object of kind k (+1 made, -1 released). */
static void track(int k, int delta) {
  pthread_mutex_lock(&g_mu);
  g_live[k] += delta;
  pthread_mutex_unlock(&g_mu);
}

#define STR_(x) #x
#define STR(x) STR_(x)

/* One wrapper: CLS (NULL: never fails), ERR injected, FN as <cuda.h> names it
 * (its macro gives the exported, versioned symbol; #FN the name graphc prints),
 * PARAMS, ARGS, and POST run after a successful real call. */
#define SHIM(CLS, ERR, FN, PARAMS, ARGS, POST)                             \
  CUresult CUDAAPI FN PARAMS {                                             \
    static __typeof__(FN) *real_;                                          \
    if (inject(CLS, #FN, ERR)) return ERR;                                 \
    if (!real_) real_ = (__typeof__(FN) *)real_sym(STR(FN));               \
    if (!real_) return CUDA_ERROR_NOT_INITIALIZED;                         \
    CUresult r_ = real_ ARGS;                                              \
    if (r_ == CUDA_SUCCESS) { POST; }                                      \
    return r_;                                                             \
  }
#define NOTHING (void)0

/* Never failed. */
SHIM(NULL, CUDA_SUCCESS, cuGetErrorName, (CUresult e, const char **s), (e, s), NOTHING)
SHIM(NULL, CUDA_SUCCESS, cuGetErrorString, (CUresult e, const char **s), (e, s), NOTHING)
SHIM(NULL, CUDA_SUCCESS, cuInit, (unsigned int flags), (flags), NOTHING)
SHIM(NULL, CUDA_SUCCESS, cuDriverGetVersion, (int *v), (v), NOTHING)
SHIM(NULL, CUDA_SUCCESS, cuDeviceGetCount, (int *n), (n), NOTHING)
SHIM(NULL, CUDA_SUCCESS, cuCtxGetCurrent, (CUcontext *c), (c), NOTHING)
SHIM(NULL, CUDA_SUCCESS, cuDevicePrimaryCtxRelease, (CUdevice dev), (dev), track(K_CTX, -1))
SHIM(NULL, CUDA_SUCCESS, cuCtxPopCurrent, (CUcontext *c), (c), track(K_PUSH, -1))
SHIM(NULL, CUDA_SUCCESS, cuMemFree, (CUdeviceptr p), (p), track(K_MEM, -1))
SHIM(NULL, CUDA_SUCCESS, cuModuleUnload, (CUmodule m), (m), track(K_MODULE, -1))
SHIM(NULL, CUDA_SUCCESS, cuStreamDestroy, (CUstream s), (s), track(K_STREAM, -1))
SHIM(NULL, CUDA_SUCCESS, cuEventDestroy, (CUevent e), (e), track(K_EVENT, -1))
SHIM(NULL, CUDA_SUCCESS, cuGraphDestroy, (CUgraph g), (g), track(K_GRAPH, -1))
SHIM(NULL, CUDA_SUCCESS, cuGraphExecDestroy, (CUgraphExec g), (g), track(K_GRAPHEXEC, -1))
SHIM(NULL, CUDA_SUCCESS, cuMemFreeHost, (void *p), (p), track(K_HOST, -1))

/* device */
SHIM("device", CUDA_ERROR_INVALID_DEVICE, cuDeviceGet, (CUdevice *dev, int ordinal), (dev, ordinal),
     NOTHING)
SHIM("device", CUDA_ERROR_INVALID_DEVICE, cuDeviceGetName, (char *name, int len, CUdevice dev),
     (name, len, dev), NOTHING)
SHIM("device", CUDA_ERROR_INVALID_DEVICE, cuDeviceGetAttribute,
     (int *v, CUdevice_attribute a, CUdevice dev), (v, a, dev), NOTHING)
SHIM("device", CUDA_ERROR_INVALID_DEVICE, cuDeviceTotalMem, (size_t *bytes, CUdevice dev),
     (bytes, dev), NOTHING)
SHIM("device", CUDA_ERROR_INVALID_DEVICE, cuMemGetInfo, (size_t *free_, size_t *total),
     (free_, total), NOTHING)
SHIM("device", CUDA_ERROR_OUT_OF_MEMORY, cuDevicePrimaryCtxRetain, (CUcontext *c, CUdevice dev),
     (c, dev), track(K_CTX, +1))
SHIM("device", CUDA_ERROR_INVALID_DEVICE, cuPointerGetAttribute,
     (void *data, CUpointer_attribute a, CUdeviceptr p), (data, a, p), NOTHING)
/* ctx */
SHIM("ctx", CUDA_ERROR_INVALID_CONTEXT, cuCtxPushCurrent, (CUcontext c), (c), track(K_PUSH, +1))
/* alloc */
SHIM("alloc", CUDA_ERROR_OUT_OF_MEMORY, cuMemAlloc, (CUdeviceptr *p, size_t n), (p, n),
     track(K_MEM, +1))
SHIM("alloc", CUDA_ERROR_OUT_OF_MEMORY, cuMemHostAlloc, (void **p, size_t n, unsigned int flags),
     (p, n, flags), track(K_HOST, +1))
/* module */
SHIM("module", CUDA_ERROR_INVALID_IMAGE, cuModuleLoadData, (CUmodule *m, const void *image),
     (m, image), track(K_MODULE, +1))
SHIM("module", CUDA_ERROR_INVALID_PTX, cuModuleLoadDataEx,
     (CUmodule *m, const void *image, unsigned int n, CUjit_option *o, void **v), (m, image, n, o, v),
     track(K_MODULE, +1))
SHIM("module", CUDA_ERROR_NOT_FOUND, cuModuleGetFunction, (CUfunction *f, CUmodule m, const char *name),
     (f, m, name), NOTHING)
SHIM("module", CUDA_ERROR_INVALID_HANDLE, cuFuncGetAttribute,
     (int *v, CUfunction_attribute a, CUfunction f), (v, a, f), NOTHING)
SHIM("module", CUDA_ERROR_INVALID_HANDLE, cuFuncSetAttribute,
     (CUfunction f, CUfunction_attribute a, int v), (f, a, v), NOTHING)
/* launch */
SHIM("launch", CUDA_ERROR_LAUNCH_FAILED, cuLaunchKernel,
     (CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
      unsigned int by, unsigned int bz, unsigned int shared, CUstream s, void **params, void **extra),
     (f, gx, gy, gz, bx, by, bz, shared, s, params, extra), NOTHING)
SHIM("launch", CUDA_ERROR_LAUNCH_FAILED, cuGraphLaunch, (CUgraphExec g, CUstream s), (g, s), NOTHING)
/* graph (cuStreamEndCapture is written out below) */
SHIM("graph", CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, cuStreamBeginCapture,
     (CUstream s, CUstreamCaptureMode mode), (s, mode), NOTHING)
SHIM("graph", CUDA_ERROR_OUT_OF_MEMORY, cuGraphInstantiate,
     (CUgraphExec *e, CUgraph g, unsigned long long flags), (e, g, flags), track(K_GRAPHEXEC, +1))
SHIM("graph", CUDA_ERROR_OUT_OF_MEMORY, cuGraphCreate, (CUgraph *g, unsigned int flags), (g, flags),
     track(K_GRAPH, +1))
SHIM("graph", CUDA_ERROR_INVALID_VALUE, cuGraphAddKernelNode,
     (CUgraphNode *n, CUgraph g, const CUgraphNode *deps, size_t nd, const CUDA_KERNEL_NODE_PARAMS *p),
     (n, g, deps, nd, p), NOTHING)
SHIM("graph", CUDA_ERROR_INVALID_VALUE, cuGraphAddEmptyNode,
     (CUgraphNode *n, CUgraph g, const CUgraphNode *deps, size_t nd), (n, g, deps, nd), NOTHING)
SHIM("graph", CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, cuGraphExecUpdate,
     (CUgraphExec e, CUgraph g, CUgraphExecUpdateResultInfo *info), (e, g, info), NOTHING)
/* copy */
SHIM("copy", CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoD, (CUdeviceptr dst, const void *src, size_t n),
     (dst, src, n), NOTHING)
SHIM("copy", CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoH, (void *dst, CUdeviceptr src, size_t n),
     (dst, src, n), NOTHING)
SHIM("copy", CUDA_ERROR_INVALID_VALUE, cuMemcpyHtoDAsync,
     (CUdeviceptr dst, const void *src, size_t n, CUstream s), (dst, src, n, s), NOTHING)
SHIM("copy", CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoHAsync,
     (void *dst, CUdeviceptr src, size_t n, CUstream s), (dst, src, n, s), NOTHING)
SHIM("copy", CUDA_ERROR_INVALID_VALUE, cuMemcpyDtoDAsync,
     (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s), (dst, src, n, s), NOTHING)
SHIM("copy", CUDA_ERROR_INVALID_VALUE, cuMemsetD8Async,
     (CUdeviceptr dst, unsigned char v, size_t n, CUstream s), (dst, v, n, s), NOTHING)
SHIM("copy", CUDA_ERROR_INVALID_VALUE, cuTensorMapEncodeTiled,
     (CUtensorMap *m, CUtensorMapDataType t, cuuint32_t rank, void *addr, const cuuint64_t *dims,
      const cuuint64_t *strides, const cuuint32_t *box, const cuuint32_t *es,
      CUtensorMapInterleave il, CUtensorMapSwizzle sw, CUtensorMapL2promotion l2,
      CUtensorMapFloatOOBfill oob),
     (m, t, rank, addr, dims, strides, box, es, il, sw, l2, oob), NOTHING)
/* sync */
SHIM("sync", CUDA_ERROR_LAUNCH_FAILED, cuStreamSynchronize, (CUstream s), (s), NOTHING)
SHIM("sync", CUDA_ERROR_LAUNCH_FAILED, cuCtxSynchronize, (void), (), NOTHING)
SHIM("sync", CUDA_ERROR_LAUNCH_FAILED, cuEventSynchronize, (CUevent e), (e), NOTHING)
/* stream */
SHIM("stream", CUDA_ERROR_OUT_OF_MEMORY, cuStreamCreate, (CUstream *s, unsigned int flags),
     (s, flags), track(K_STREAM, +1))
SHIM("stream", CUDA_ERROR_OUT_OF_MEMORY, cuEventCreate, (CUevent *e, unsigned int flags), (e, flags),
     track(K_EVENT, +1))
SHIM("stream", CUDA_ERROR_INVALID_HANDLE, cuEventRecord, (CUevent e, CUstream s), (e, s), NOTHING)
SHIM("stream", CUDA_ERROR_INVALID_HANDLE, cuStreamWaitEvent, (CUstream s, CUevent e, unsigned int f),
     (s, e, f), NOTHING)
SHIM("stream", CUDA_ERROR_INVALID_HANDLE, cuStreamGetCtx, (CUstream s, CUcontext *c), (s, c), NOTHING)

/* The capture always ends (as in the driver); an injected failure then
 * destroys the graph it produced and reports the error. */
CUresult CUDAAPI cuStreamEndCapture(CUstream s, CUgraph *g) {
  static __typeof__(cuStreamEndCapture) *real_;
  static __typeof__(cuGraphDestroy) *destroy_;
  int hit = inject("graph", "cuStreamEndCapture", CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  if (!real_) real_ = (__typeof__(cuStreamEndCapture) *)real_sym("cuStreamEndCapture");
  if (!destroy_) destroy_ = (__typeof__(cuGraphDestroy) *)real_sym("cuGraphDestroy");
  if (!real_ || !destroy_) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult r = real_(s, g);
  if (r == CUDA_SUCCESS && *g) track(K_GRAPH, +1);
  if (!hit) return r;
  if (r == CUDA_SUCCESS && *g) {
    destroy_(*g);
    track(K_GRAPH, -1);
  }
  *g = NULL;
  return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
}

/* The versioned symbol, or the older one on drivers without it. */
CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
  static __typeof__(cuEventElapsedTime) *real_;
  if (!real_) real_ = (__typeof__(cuEventElapsedTime) *)real_sym(STR(cuEventElapsedTime));
  if (!real_) real_ = (__typeof__(cuEventElapsedTime) *)real_sym("cuEventElapsedTime");
  return real_ ? real_(ms, a, b) : CUDA_ERROR_NOT_INITIALIZED;
}

/* ---- control (cuda_fault_shim.h) ---------------------------------------------------- */
void graphc_cushim_arm(const char *cls, int n);
int graphc_cushim_fired(const char **call, int *result);
int graphc_cushim_calls(void);
void graphc_cushim_live(long *counts);
const char *graphc_cushim_kind(int k);
const char *graphc_cushim_result_name(int result);

void graphc_cushim_arm(const char *cls, int n) {
  pthread_once(&g_once, shim_init);
  pthread_mutex_lock(&g_mu);
  snprintf(g_class, sizeof g_class, "%s", cls && n > 0 ? cls : "");
  g_n = n;
  g_calls = 0;
  g_fired = 0;
  g_failed_call = NULL;
  g_failed_result = CUDA_SUCCESS;
  pthread_mutex_unlock(&g_mu);
}

int graphc_cushim_fired(const char **call, int *result) {
  pthread_mutex_lock(&g_mu);
  int f = g_fired;
  if (call) *call = g_failed_call;
  if (result) *result = (int)g_failed_result;
  pthread_mutex_unlock(&g_mu);
  return f;
}

int graphc_cushim_calls(void) {
  pthread_mutex_lock(&g_mu);
  int n = g_calls;
  pthread_mutex_unlock(&g_mu);
  return n;
}

void graphc_cushim_live(long *counts) {
  pthread_mutex_lock(&g_mu);
  memcpy(counts, g_live, sizeof g_live);
  pthread_mutex_unlock(&g_mu);
}

const char *graphc_cushim_kind(int k) {
  return k >= 0 && k < GRAPHC_CUSHIM_KINDS ? k_kinds[k] : "?";
}

const char *graphc_cushim_result_name(int result) {
  const char *s = NULL;
  if (cuGetErrorName((CUresult)result, &s) == CUDA_SUCCESS && s) return s;
  return "CUDA_ERROR_UNKNOWN_CODE";
}
