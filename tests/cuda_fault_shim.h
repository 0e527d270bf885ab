/* cuda_fault_shim.h - the control interface of tests/cuda_fault_shim.c, a
 * test-only stand-in for libcuda.so.1 that forwards every driver call graphc
 * makes to the real driver and makes the Nth call of a chosen class fail.
 *
 * Use: GRAPHC_CUDA_DRIVER=/path/to/libgraphc_cuda_fault_shim.so makes the
 * runtime open the shim instead of libcuda.so.1 (runtime/cuda_driver.c). The
 * shim opens the real driver itself ($GRAPHC_CUDA_FAULT_REAL, default
 * libcuda.so.1). What fails is set either by the environment, read on the
 * first driver call:
 *
 *   GRAPHC_CUDA_FAULT=CLASS:N       the Nth call of CLASS (N >= 1) fails, once
 *   GRAPHC_CUDA_FAULT_VERBOSE=1     each injected failure is printed to stderr
 *
 * or, from a test, with the functions below (dlsym them from the shim's
 * handle: dlopen of the same path returns the instance the runtime uses).
 *
 * Classes (the call returns the CUresult in brackets; a failed call does
 * nothing, except cuStreamEndCapture, which ends the capture and destroys the
 * graph it made before failing, as the driver does):
 *   alloc     cuMemAlloc, cuMemHostAlloc [OUT_OF_MEMORY]
 *   module    cuModuleLoadData [INVALID_IMAGE], cuModuleLoadDataEx [INVALID_PTX],
 *             cuModuleGetFunction [NOT_FOUND], cuFuncGetAttribute, cuFuncSetAttribute
 *             [INVALID_HANDLE]
 *   launch    cuLaunchKernel, cuGraphLaunch [LAUNCH_FAILED]
 *   graph     cuStreamBeginCapture [STREAM_CAPTURE_UNSUPPORTED], cuStreamEndCapture
 *             [STREAM_CAPTURE_INVALIDATED], cuGraphInstantiate [OUT_OF_MEMORY],
 *             cuGraphExecUpdate [GRAPH_EXEC_UPDATE_FAILURE]
 *   copy      cuMemcpyHtoD, cuMemcpyDtoH, cuMemcpyHtoDAsync, cuMemcpyDtoHAsync,
 *             cuMemcpyDtoDAsync, cuMemsetD8Async, cuTensorMapEncodeTiled [INVALID_VALUE]
 *   sync      cuStreamSynchronize, cuCtxSynchronize, cuEventSynchronize [LAUNCH_FAILED]
 *   stream    cuStreamCreate, cuEventCreate [OUT_OF_MEMORY], cuEventRecord, cuStreamWaitEvent,
 *             cuStreamGetCtx [INVALID_HANDLE]
 *   device    cuDeviceGet, cuDeviceGetAttribute, cuDeviceGetName, cuDeviceTotalMem,
 *             cuMemGetInfo, cuPointerGetAttribute [INVALID_DEVICE],
 *             cuDevicePrimaryCtxRetain [OUT_OF_MEMORY]
 *   ctx       cuCtxPushCurrent [INVALID_CONTEXT]
 *   any       every call above
 * A CLASS may also be one call's name ("cuGraphLaunch"). Never failed: cuInit,
 * cuDriverGetVersion, cuDeviceGetCount (the driver is opened once per process),
 * cuGetErrorName/String, cuCtxGetCurrent, cuEventElapsedTime, and every call that
 * releases something.
 *
 * The shim also counts what is live, by kind (see graphc_cushim_kind): device
 * allocations, modules, streams, events, graphs, graph executables, primary
 * context retains, context pushes not yet popped, and pinned host allocations. A test compares the
 * counts before and after to see that a failure leaked nothing on the device.
 */
#ifndef GC_CUDA_FAULT_SHIM_H
#define GC_CUDA_FAULT_SHIM_H

#define GRAPHC_CUSHIM_KINDS 9

/* Fail the nth call (n >= 1) of `cls` from now on (counters reset); n <= 0 or
 * cls NULL disarms. */
typedef void graphc_cushim_arm_fn(const char *cls, int n);
/* 1 when the armed call has failed; then *call is its name ("cuMemAlloc") and
 * *result its CUresult. */
typedef int graphc_cushim_fired_fn(const char **call, int *result);
/* Calls of the armed class since arming. */
typedef int graphc_cushim_calls_fn(void);
/* Live objects per kind into counts[GRAPHC_CUSHIM_KINDS]. */
typedef void graphc_cushim_live_fn(long *counts);
/* Name of kind k ("device allocations", ...). */
typedef const char *graphc_cushim_kind_fn(int k);
/* "CUDA_ERROR_OUT_OF_MEMORY" for a CUresult, as the driver names it. */
typedef const char *graphc_cushim_result_name_fn(int result);

#endif /* GC_CUDA_FAULT_SHIM_H */
