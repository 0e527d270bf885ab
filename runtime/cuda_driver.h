/* cuda_driver.h - the CUDA driver API, opened at run time with dlopen.
 *
 * graphc never links libcuda: the toolkit's <cuda.h> gives the types, and
 * gc_cu_driver_get() opens `libcuda.so.1` once per process (the first call; the
 * only global state graphc keeps) and resolves every function below with
 * dlsym, using the versioned names (_v2, ...) that <cuda.h> maps the plain
 * names to. A build without a GPU therefore runs everywhere; the backend
 * reports GRAPHC_STATUS_BACKEND_UNAVAILABLE when the driver or a device is
 * missing.
 *
 *   const gc_cu_driver *cu = gc_cu_driver_get(s, d);  (NULL: reported to d)
 *   if (GC_CU(cu, d, MemAlloc, &ptr, bytes)) goto fail;
 *
 * GC_CU calls cu->FN(args) and, when the result is not CUDA_SUCCESS, reports
 * "cuFN failed: CUDA_ERROR_X (description)" to d (status DEVICE_ERROR, or
 * OUT_OF_MEMORY for CUDA_ERROR_OUT_OF_MEMORY) and evaluates to -1 (else 0).
 *
 * Settings (runtime/settings.h): GRAPHC_CUDA_DRIVER=PATH opens PATH instead of
 * libcuda.so.1 (for tests of the unavailable path, e.g. the toolkit's stub
 * library, and for the fault-injection shim tests/cuda_fault_shim.c, which
 * forwards to the real driver and fails the Nth call of a class:
 * docs/reliability.md).
 */
#ifndef GC_CUDA_DRIVER_H
#define GC_CUDA_DRIVER_H

#include <pthread.h>
#include <cuda.h>

#include "ir/ir.h"
#include "runtime/settings.h"

/* X(FIELD, "symbol", "alternative symbol or NULL"): every driver function graphc
 * uses. The field's type is the prototype <cuda.h> declares for the symbol. */
#define GC_CU_FUNCS(X)                                                    \
  X(GetErrorName, cuGetErrorName, NULL)                                   \
  X(GetErrorString, cuGetErrorString, NULL)                               \
  X(Init, cuInit, NULL)                                                   \
  X(DriverGetVersion, cuDriverGetVersion, NULL)                           \
  X(DeviceGetCount, cuDeviceGetCount, NULL)                               \
  X(DeviceGet, cuDeviceGet, NULL)                                         \
  X(DeviceGetName, cuDeviceGetName, NULL)                                 \
  X(DeviceGetAttribute, cuDeviceGetAttribute, NULL)                       \
  X(DeviceTotalMem, cuDeviceTotalMem_v2, NULL)                            \
  X(DevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, NULL)               \
  X(DevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, NULL)          \
  X(CtxPushCurrent, cuCtxPushCurrent_v2, NULL)                            \
  X(CtxPopCurrent, cuCtxPopCurrent_v2, NULL)                              \
  X(CtxSynchronize, cuCtxSynchronize, NULL)                               \
  X(CtxGetCurrent, cuCtxGetCurrent, NULL)                                 \
  X(MemGetInfo, cuMemGetInfo_v2, NULL)                                    \
  X(MemAlloc, cuMemAlloc_v2, NULL)                                        \
  X(MemFree, cuMemFree_v2, NULL)                                          \
  X(MemcpyHtoD, cuMemcpyHtoD_v2, NULL)                                    \
  X(MemcpyDtoH, cuMemcpyDtoH_v2, NULL)                                    \
  X(MemcpyHtoDAsync, cuMemcpyHtoDAsync_v2, NULL)                          \
  X(MemcpyDtoHAsync, cuMemcpyDtoHAsync_v2, NULL)                          \
  X(MemcpyDtoDAsync, cuMemcpyDtoDAsync_v2, NULL)                          \
  X(MemsetD8Async, cuMemsetD8Async, NULL)                                 \
  X(ModuleLoadData, cuModuleLoadData, NULL)                               \
  X(ModuleLoadDataEx, cuModuleLoadDataEx, NULL)                           \
  X(ModuleUnload, cuModuleUnload, NULL)                                   \
  X(ModuleGetFunction, cuModuleGetFunction, NULL)                         \
  X(FuncGetAttribute, cuFuncGetAttribute, NULL)                           \
  X(FuncSetAttribute, cuFuncSetAttribute, NULL)                           \
  X(LaunchKernel, cuLaunchKernel, NULL)                                   \
  X(StreamCreate, cuStreamCreate, NULL)                                   \
  X(StreamDestroy, cuStreamDestroy_v2, NULL)                              \
  X(StreamSynchronize, cuStreamSynchronize, NULL)                         \
  X(StreamBeginCapture, cuStreamBeginCapture_v2, NULL)                    \
  X(StreamEndCapture, cuStreamEndCapture, NULL)                           \
  X(GraphInstantiate, cuGraphInstantiateWithFlags, NULL)                  \
  X(GraphLaunch, cuGraphLaunch, NULL)                                     \
  X(GraphExecUpdate, cuGraphExecUpdate_v2, NULL)                          \
  X(GraphExecDestroy, cuGraphExecDestroy, NULL)                           \
  X(GraphDestroy, cuGraphDestroy, NULL)                                   \
  X(GraphCreate, cuGraphCreate, NULL)                                     \
  X(GraphAddKernelNode, cuGraphAddKernelNode_v2, NULL)                    \
  X(GraphAddEmptyNode, cuGraphAddEmptyNode, NULL)                         \
  X(EventCreate, cuEventCreate, NULL)                                     \
  X(EventRecord, cuEventRecord, NULL)                                     \
  X(EventSynchronize, cuEventSynchronize, NULL)                           \
  X(EventElapsedTime, cuEventElapsedTime_v2, "cuEventElapsedTime")        \
  X(EventDestroy, cuEventDestroy_v2, NULL)                                \
  X(TensorMapEncodeTiled, cuTensorMapEncodeTiled, NULL)                   \
  X(PointerGetAttribute, cuPointerGetAttribute, NULL)                     \
  X(StreamGetCtx, cuStreamGetCtx, NULL)                                   \
  X(StreamWaitEvent, cuStreamWaitEvent, NULL)                             \
  X(MemHostAlloc, cuMemHostAlloc, NULL)                                   \
  X(MemFreeHost, cuMemFreeHost, NULL)

typedef struct gc_cu_driver {
#define GC_CU_FIELD(FIELD, SYM, ALT) __typeof__(SYM) *FIELD;
  GC_CU_FUNCS(GC_CU_FIELD)
#undef GC_CU_FIELD
  void *lib;             /* dlopen handle, never closed */
  int version;           /* cuDriverGetVersion: 13000 for CUDA 13.0 */
  int device_count;      /* devices visible after cuInit */
  graphc_status_t status;/* OK, or why the driver cannot be used */
  char why[512];         /* message when status != OK */
} gc_cu_driver;

/* The process-wide driver table (opened on first use, from the library that call's
 * s->cuda_driver names; s may be NULL: libcuda.so.1). On failure reports
 * "CUDA backend unavailable: ..." to d (BACKEND_UNAVAILABLE) and returns NULL;
 * d may be NULL to just ask. A table is returned only when cuInit succeeded and
 * at least one device exists. */
const gc_cu_driver *gc_cu_driver_get(const gc_rt_settings *s, gc_diags *d);

/* The table even when no device exists (symbols resolved), else NULL: for
 * tests of the driver loader. */
const gc_cu_driver *gc_cu_driver_peek(const gc_rt_settings *s);
/* Start opening the driver (dlopen, cuInit, device count) on a new thread, so
 * that cuInit (10 ms when another process holds the GPU, 100-230 ms on an idle
 * H200) runs beside the caller's parsing and compiling. 1: started, join *th
 * (gc_cu_driver_get then returns at once); 0: nothing started (already open,
 * or no thread could be made: the first gc_cu_driver_get does the work). */
int gc_cu_driver_prefetch(const gc_rt_settings *s, pthread_t *th);

/* "CUDA_ERROR_OUT_OF_MEMORY" and "out of memory" for r (never NULL). */
const char *gc_cu_error_name(const gc_cu_driver *cu, CUresult r);
const char *gc_cu_error_string(const gc_cu_driver *cu, CUresult r);

/* Check the result of driver call `call` ("cuMemAlloc"); reports to d and
 * returns -1 when r != CUDA_SUCCESS. `what` (may be NULL) is appended as
 * " [<what>]" to say what the call was doing, e.g. "kernel fused_3". */
int gc_cu_check(const gc_cu_driver *cu, gc_diags *d, CUresult r, const char *call,
                const char *what);

/* Status a CUresult maps to: OUT_OF_MEMORY for CUDA_ERROR_OUT_OF_MEMORY, else DEVICE_ERROR. */
graphc_status_t gc_cu_status(CUresult r);

#define GC_CU(cu, d, FN, ...) gc_cu_check((cu), (d), (cu)->FN(__VA_ARGS__), "cu" #FN, NULL)
#define GC_CU_WHAT(cu, d, what, FN, ...) \
  gc_cu_check((cu), (d), (cu)->FN(__VA_ARGS__), "cu" #FN, (what))

#endif /* GC_CUDA_DRIVER_H */
