/* cuda_fake_driver.c - libgraphc_cuda_fake.so: a pretend CUDA driver with one
 * pretend device, for checking the fault-injection harness on machines
 * without a GPU (test_cuda_faults with GRAPHC_TEST_DRY=1 runs the shim over
 * it: GRAPHC_CUDA_FAULT_REAL=this library).
 *
 * Memory is host memory (cuMemAlloc is calloc, copies are memcpy), kernels do
 * nothing, and every handle (module, stream, event, graph, graph executable)
 * is a small heap block, so LeakSanitizer reports any handle graphc forgets to
 * release. Outputs are therefore meaningless: the dry run checks statuses,
 * messages, leaks and that later compilations work, never values.
 *
 * For the checks of caller pointers and streams (tests/test_async.c) it also
 * keeps a list of its allocations (device and pinned host), which
 * cuPointerGetAttribute answers from (any other pointer is CUDA_ERROR_INVALID_VALUE,
 * as the driver says of pageable host memory); cuCtxCreate_v2 makes a second
 * context, a thread's current context is a stack, and a stream remembers the
 * context it was made in (cuStreamGetCtx).
 */
#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A fresh handle (freed by the matching destroy call). */
static void *handle(void) { return malloc(16); }

CUresult CUDAAPI cuGetErrorName(CUresult e, const char **s) {
  switch (e) {
#define N(X) case X: *s = #X; return CUDA_SUCCESS;
    N(CUDA_SUCCESS) N(CUDA_ERROR_INVALID_VALUE) N(CUDA_ERROR_OUT_OF_MEMORY)
    N(CUDA_ERROR_NOT_INITIALIZED) N(CUDA_ERROR_INVALID_DEVICE) N(CUDA_ERROR_INVALID_IMAGE)
    N(CUDA_ERROR_INVALID_CONTEXT) N(CUDA_ERROR_INVALID_PTX) N(CUDA_ERROR_INVALID_HANDLE)
    N(CUDA_ERROR_NOT_FOUND) N(CUDA_ERROR_LAUNCH_FAILED) N(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
    N(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) N(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE)
#undef N
    default: *s = NULL; return CUDA_ERROR_INVALID_VALUE;
  }
}
CUresult CUDAAPI cuGetErrorString(CUresult e, const char **s) {
  *s = "fake driver error";
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuInit(unsigned int flags) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuDriverGetVersion(int *v) { *v = 13000; return CUDA_SUCCESS; }
CUresult CUDAAPI cuDeviceGetCount(int *n) { *n = 1; return CUDA_SUCCESS; }
CUresult CUDAAPI cuDeviceGet(CUdevice *d, int ordinal) {
  *d = ordinal;
  return ordinal == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}
CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev) {
  strncpy(name, "Fake GPU", (size_t)len);
  if (len > 0) name[len - 1] = 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice dev) {
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 4; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 49152; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 232448; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
    default: *v = 0; break;
  }
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceTotalMem(size_t *bytes, CUdevice dev) {
  *bytes = (size_t)1 << 30;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemGetInfo(size_t *free_, size_t *total) {
  *free_ = *total = (size_t)1 << 30;
  return CUDA_SUCCESS;
}
static int g_ctx;   /* the primary context: its address is the handle */
static int g_ctx2;  /* the one context cuCtxCreate_v2 makes */
static __thread CUcontext t_stack[16];   /* the thread's context stack */
static __thread int t_depth;

/* The thread's current context (the primary one when none was pushed). */
static CUcontext current(void) { return t_depth ? t_stack[t_depth - 1] : (CUcontext)(void *)&g_ctx; }

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice dev) {
  *c = (CUcontext)(void *)&g_ctx;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuCtxPushCurrent(CUcontext c) {
  if (t_depth < 16) t_stack[t_depth++] = c;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxPopCurrent(CUcontext *c) {
  if (c) *c = current();
  if (t_depth) t_depth--;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxCreate_v2(CUcontext *c, unsigned int flags, CUdevice dev) {
  *c = (CUcontext)(void *)&g_ctx2;
  return cuCtxPushCurrent(*c);
}
CUresult CUDAAPI cuCtxDestroy_v2(CUcontext c) {
  if (t_depth && t_stack[t_depth - 1] == c) t_depth--;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSynchronize(void) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuCtxGetCurrent(CUcontext *c) {
  *c = current();
  return CUDA_SUCCESS;
}

/* Every live allocation: where, how big, device or pinned host, in which context. */
typedef struct fake_alloc {
  uintptr_t base;
  size_t size;
  int host;
  CUcontext ctx;
  struct fake_alloc *next;
} fake_alloc;
static fake_alloc *g_allocs;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

/* Remember an allocation (0 when out of memory). */
static int remember(void *m, size_t n, int host) {
  fake_alloc *a = malloc(sizeof *a);
  if (!a) return 0;
  *a = (fake_alloc){(uintptr_t)m, n, host, current(), NULL};
  pthread_mutex_lock(&g_mu);
  a->next = g_allocs;
  g_allocs = a;
  pthread_mutex_unlock(&g_mu);
  return 1;
}

/* Forget the allocation at base. */
static void forget(uintptr_t base) {
  pthread_mutex_lock(&g_mu);
  for (fake_alloc **p = &g_allocs; *p; p = &(*p)->next)
    if ((*p)->base == base) {
      fake_alloc *a = *p;
      *p = a->next;
      free(a);
      break;
    }
  pthread_mutex_unlock(&g_mu);
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr *p, size_t n) {
  void *m = calloc(1, n ? n : 1);
  if (m && !remember(m, n, 0)) {
    free(m);
    m = NULL;
  }
  *p = (CUdeviceptr)(uintptr_t)m;
  return m ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult CUDAAPI cuMemFree(CUdeviceptr p) {
  forget((uintptr_t)p);
  free((void *)(uintptr_t)p);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemHostAlloc(void **p, size_t n, unsigned int flags) {
  void *m = calloc(1, n ? n : 1);
  if (m && !remember(m, n, 1)) {
    free(m);
    m = NULL;
  }
  *p = m;
  return m ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult CUDAAPI cuMemFreeHost(void *p) {
  forget((uintptr_t)p);
  free(p);
  return CUDA_SUCCESS;
}
/* What the driver says of a pointer inside one of the allocations; anything else is
 * CUDA_ERROR_INVALID_VALUE (pageable host memory, freed memory). */
CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute a, CUdeviceptr ptr) {
  CUresult r = CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&g_mu);
  for (fake_alloc *f = g_allocs; f; f = f->next) {
    if (ptr < f->base || ptr >= f->base + (f->size ? f->size : 1)) continue;
    r = CUDA_SUCCESS;
    switch (a) {
      case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(unsigned int *)data = f->host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        break;
      case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *)data = f->ctx; break;
      case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = 0; break;
      case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data = f->base; break;
      case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data = f->size; break;
      default: r = CUDA_ERROR_INVALID_VALUE; break;
    }
    break;
  }
  pthread_mutex_unlock(&g_mu);
  return r;
}
CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t n) {
  memcpy((void *)(uintptr_t)dst, src, n);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t n) {
  memcpy(dst, (const void *)(uintptr_t)src, n);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
  return cuMemcpyHtoD(dst, src, n);
}
CUresult CUDAAPI cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream s) {
  return cuMemcpyDtoH(dst, src, n);
}
CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  memmove((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s) {
  memset((void *)(uintptr_t)dst, v, n);
  return CUDA_SUCCESS;
}
/* A map of zeros; the driver's own check of the address (16-byte aligned). */
CUresult CUDAAPI cuTensorMapEncodeTiled(CUtensorMap *m, CUtensorMapDataType t, cuuint32_t rank, void *addr,
                                        const cuuint64_t *dims, const cuuint64_t *strides,
                                        const cuuint32_t *box, const cuuint32_t *es,
                                        CUtensorMapInterleave il, CUtensorMapSwizzle sw,
                                        CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
  memset(m, 0, sizeof *m);
  return (uintptr_t)addr % 16 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleLoadData(CUmodule *m, const void *image) {
  *m = handle();
  return *m ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned int n, CUjit_option *o,
                                    void **v) {
  return cuModuleLoadData(m, image);
}
CUresult CUDAAPI cuModuleUnload(CUmodule m) {
  free(m);
  return CUDA_SUCCESS;
}
static int g_fn;   /* every function is this one */
CUresult CUDAAPI cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
  *f = (CUfunction)(void *)&g_fn;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f) {
  *v = a == CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK ? 1024 : 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) {
  return f ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                unsigned int bx, unsigned int by, unsigned int bz,
                                unsigned int shared, CUstream s, void **params, void **extra) {
  return gx && bx ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
/* A stream is a block holding the context it was made in. */
CUresult CUDAAPI cuStreamCreate(CUstream *s, unsigned int flags) {
  *s = handle();
  if (*s) *(CUcontext *)(void *)*s = current();
  return *s ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult CUDAAPI cuStreamGetCtx(CUstream s, CUcontext *c) {
  uintptr_t v = (uintptr_t)s;
  *c = v == 0 || v == 1 || v == 2 ? current() : *(CUcontext *)(void *)s;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) {
  return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}
CUresult CUDAAPI cuStreamDestroy(CUstream s) {
  free(s);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamSynchronize(CUstream s) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuStreamBeginCapture(CUstream s, CUstreamCaptureMode mode) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuStreamEndCapture(CUstream s, CUgraph *g) {
  *g = handle();
  return *g ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *e, CUgraph g, unsigned long long flags) {
  *e = handle();
  return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult CUDAAPI cuGraphLaunch(CUgraphExec e, CUstream s) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuGraphExecUpdate(CUgraphExec e, CUgraph g, CUgraphExecUpdateResultInfo *info) {
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec e) {
  free(e);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphCreate(CUgraph *g, unsigned int flags) {
  *g = handle();
  return *g ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
/* Nodes belong to their graph: the graph's own handle stands for each. */
CUresult CUDAAPI cuGraphAddKernelNode(CUgraphNode *n, CUgraph g, const CUgraphNode *deps, size_t nd,
                                      const CUDA_KERNEL_NODE_PARAMS *p) {
  if (!g || !p || !p->func || (nd && !deps)) return CUDA_ERROR_INVALID_VALUE;
  *n = (CUgraphNode)g;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphAddEmptyNode(CUgraphNode *n, CUgraph g, const CUgraphNode *deps, size_t nd) {
  if (!g || (nd && !deps)) return CUDA_ERROR_INVALID_VALUE;
  *n = (CUgraphNode)g;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuGraphDestroy(CUgraph g) {
  free(g);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventCreate(CUevent *e, unsigned int flags) {
  *e = handle();
  return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult CUDAAPI cuEventRecord(CUevent e, CUstream s) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuEventSynchronize(CUevent e) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
  *ms = 0.001f;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventDestroy(CUevent e) {
  free(e);
  return CUDA_SUCCESS;
}
