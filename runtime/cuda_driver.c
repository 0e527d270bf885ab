/* cuda_driver.c - opening libcuda.so.1 with dlopen and checking driver calls.
 *
 * The table is filled once per process (under a mutex, by the first caller: its
 * gc_rt_settings name the library) and is read-only afterwards: it is the one
 * piece of global state graphc keeps (see docs/architecture.md). Nothing here
 * links against libcuda.
 */
#include "runtime/cuda_driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static gc_cu_driver g_cu;            /* written only inside cu_load (under g_cu_mu) */
static int g_cu_resolved;            /* every symbol found */
static pthread_mutex_t g_cu_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_cu_loaded;              /* cu_load has finished (read atomically without the mutex) */

/* Names of the CUresults users are most likely to meet, for when the driver's
 * own cuGetErrorName is unusable (a stub library, or the driver failed to init). */
static const char *cu_builtin_name(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS: return "CUDA_SUCCESS";
    case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
    case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_DEINITIALIZED: return "CUDA_ERROR_DEINITIALIZED";
    case CUDA_ERROR_STUB_LIBRARY: return "CUDA_ERROR_STUB_LIBRARY";
    case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    case CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: return "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE";
    case CUDA_ERROR_INVALID_PTX: return "CUDA_ERROR_INVALID_PTX";
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION: return "CUDA_ERROR_UNSUPPORTED_PTX_VERSION";
    case CUDA_ERROR_NO_BINARY_FOR_GPU: return "CUDA_ERROR_NO_BINARY_FOR_GPU";
    case CUDA_ERROR_INVALID_IMAGE: return "CUDA_ERROR_INVALID_IMAGE";
    case CUDA_ERROR_ILLEGAL_ADDRESS: return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case CUDA_ERROR_LAUNCH_FAILED: return "CUDA_ERROR_LAUNCH_FAILED";
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
    case CUDA_ERROR_NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
    default: return NULL;
  }
}

/* Where each function pointer goes in the table, and the symbols to look up. */
static const struct cu_sym {
  const char *name, *alt;
  size_t offset;
} cu_syms[] = {
#define GC_CU_SYM(FIELD, SYM, ALT) {#SYM, ALT, offsetof(gc_cu_driver, FIELD)},
    GC_CU_FUNCS(GC_CU_SYM)
#undef GC_CU_SYM
};

/* Set the table's failure status and message (printf-style). */
static void cu_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void cu_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_cu.why, sizeof g_cu.why, fmt, ap);
  va_end(ap);
  g_cu.status = GRAPHC_STATUS_BACKEND_UNAVAILABLE;
}

/* Open the driver at path (NULL or "": libcuda.so.1), resolve every function, cuInit,
 * count devices. Runs once. */
static void cu_load(const char *path) {
  if (!path || !*path) path = "libcuda.so.1";
  g_cu.status = GRAPHC_STATUS_OK;
  dlerror();
  g_cu.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!g_cu.lib) {
    const char *e = dlerror();
    if (!e || strstr(e, "No such file") || strstr(e, "cannot open shared object"))
      cu_fail("%s not found (no NVIDIA driver)", path);
    else
      cu_fail("cannot load %s: %s", path, e);
    return;
  }
  for (size_t i = 0; i < sizeof cu_syms / sizeof cu_syms[0]; i++) {
    void *p = dlsym(g_cu.lib, cu_syms[i].name);
    if (!p && cu_syms[i].alt) p = dlsym(g_cu.lib, cu_syms[i].alt);
    if (!p) {
      cu_fail("%s lacks %s: not a CUDA driver, or one too old for graphc (needs CUDA 12 or newer)", path,
              cu_syms[i].name);
      return;
    }
    memcpy((char *)&g_cu + cu_syms[i].offset, &p, sizeof p);
  }
  g_cu_resolved = 1;
  CUresult r = g_cu.Init(0);
  if (r != CUDA_SUCCESS) {
    cu_fail("cuInit failed: %s (%s)", gc_cu_error_name(&g_cu, r), gc_cu_error_string(&g_cu, r));
    return;
  }
  if (g_cu.DriverGetVersion(&g_cu.version) != CUDA_SUCCESS) g_cu.version = 0;
  r = g_cu.DeviceGetCount(&g_cu.device_count);
  if (r != CUDA_SUCCESS) {
    cu_fail("cuDeviceGetCount failed: %s (%s)", gc_cu_error_name(&g_cu, r),
            gc_cu_error_string(&g_cu, r));
    return;
  }
  if (g_cu.device_count <= 0) cu_fail("no CUDA device found");
}

/* cu_load(path) the first time; later calls (whatever their path) return at once. */
static void cu_load_once(const char *path) {
  if (__atomic_load_n(&g_cu_loaded, __ATOMIC_ACQUIRE)) return;
  pthread_mutex_lock(&g_cu_mu);
  if (!g_cu_loaded) {
    cu_load(path);
    __atomic_store_n(&g_cu_loaded, 1, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&g_cu_mu);
}

/* The library s names (NULL: the default). */
static const char *driver_path(const gc_rt_settings *s) { return s ? s->cuda_driver : NULL; }

/* Thread body of gc_cu_driver_prefetch: arg is a malloc'd copy of the path, or NULL. */
static void *prefetch_main(void *arg) {
  cu_load_once(arg);
  free(arg);
  return NULL;
}

int gc_cu_driver_prefetch(const gc_rt_settings *s, pthread_t *th) {
  if (__atomic_load_n(&g_cu_loaded, __ATOMIC_ACQUIRE)) return 0;
  /* the thread outlives the caller's environment strings: it gets its own copy */
  const char *path = driver_path(s);
  char *copy = path ? strdup(path) : NULL;
  if (path && !copy) return 0;
  if (pthread_create(th, NULL, prefetch_main, copy) == 0) return 1;
  free(copy);
  return 0;
}

/* The table when usable; else report why to d (when not NULL). */
const gc_cu_driver *gc_cu_driver_get(const gc_rt_settings *s, gc_diags *d) {
  cu_load_once(driver_path(s));
  if (g_cu.status == GRAPHC_STATUS_OK) return &g_cu;
  if (d)
    gc_error_at(d, GRAPHC_STATUS_BACKEND_UNAVAILABLE, (gc_loc){0, 0},
                "CUDA backend unavailable: %s; use --backend cpu or interp", g_cu.why);
  return NULL;
}

/* The table with symbols resolved, usable device or not; NULL when not loaded. */
const gc_cu_driver *gc_cu_driver_peek(const gc_rt_settings *s) {
  cu_load_once(driver_path(s));
  return g_cu_resolved ? &g_cu : NULL;
}

/* Symbolic name of a CUresult, from the driver when it can tell. */
const char *gc_cu_error_name(const gc_cu_driver *cu, CUresult r) {
  const char *s = NULL;
  if (cu && cu->GetErrorName && cu->GetErrorName(r, &s) == CUDA_SUCCESS && s) return s;
  s = cu_builtin_name(r);
  return s ? s : "CUDA_ERROR_UNKNOWN_CODE";
}

/* Description of a CUresult, from the driver when it can tell. */
const char *gc_cu_error_string(const gc_cu_driver *cu, CUresult r) {
  const char *s = NULL;
  if (cu && cu->GetErrorString && cu->GetErrorString(r, &s) == CUDA_SUCCESS && s) return s;
  return r == CUDA_ERROR_STUB_LIBRARY ? "CUDA driver is a stub library" : "no description";
}

/* OOM is its own status so callers can tell it from broken devices. */
graphc_status_t gc_cu_status(CUresult r) {
  return r == CUDA_ERROR_OUT_OF_MEMORY ? GRAPHC_STATUS_OUT_OF_MEMORY : GRAPHC_STATUS_DEVICE_ERROR;
}

/* Report a failed driver call: "cuX failed: NAME (description)[ (what)]". */
int gc_cu_check(const gc_cu_driver *cu, gc_diags *d, CUresult r, const char *call,
                const char *what) {
  if (r == CUDA_SUCCESS) return 0;
  if (d)
    gc_error_at(d, gc_cu_status(r), (gc_loc){0, 0}, "%s failed: %s (%s)%s%s%s", call,
                gc_cu_error_name(cu, r), gc_cu_error_string(cu, r), what ? " [" : "",
                what ? what : "", what ? "]" : "");
  return -1;
}
