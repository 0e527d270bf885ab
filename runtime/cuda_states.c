/* cuda_states.c - states in device memory: the store's memory ops for the CUDA
 * executor (runtime/states.h) and binding a store's states to an executor's plan.
 *
 * The store keeps its own reference to the device's primary context, so state memory
 * outlives the executor that made it (another executable sharing the store may still
 * run on it). Every op pushes that context; copies and zeroing finish before they
 * return (the legacy default stream orders them after earlier work of the context's
 * blocking streams, and the executor's streams are blocking).
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/cuda_exec_impl.h"
#include "runtime/states.h"

typedef struct cu_state_mem {
  const gc_cu_driver *cu;
  CUdevice dev;
  CUcontext ctx;  /* the primary context, retained by this struct */
} cu_state_mem;

/* Push the context; 0 or -1 reported. */
static int push(const cu_state_mem *m, gc_diags *d) { return GC_CU(m->cu, d, CtxPushCurrent, m->ctx); }

static void pop(const cu_state_mem *m) {
  CUcontext dummy;
  m->cu->CtxPopCurrent(&dummy);
}

static int mem_zero(void *u, uint64_t addr, size_t bytes, gc_diags *d) {
  const cu_state_mem *m = u;
  if (push(m, d)) return -1;
  int rc = bytes ? GC_CU(m->cu, d, MemsetD8Async, (CUdeviceptr)addr, 0, bytes, NULL) ||
                       GC_CU(m->cu, d, StreamSynchronize, NULL)
                 : 0;
  pop(m);
  return rc ? -1 : 0;
}

static int mem_alloc(void *u, size_t bytes, uint64_t *addr, gc_diags *d) {
  const cu_state_mem *m = u;
  if (push(m, d)) return -1;
  CUdeviceptr p = 0;
  CUresult r = m->cu->MemAlloc(&p, bytes ? bytes : 1);
  pop(m);
  if (r != CUDA_SUCCESS) {
    char b[64];
    gc_cu_fmt_bytes(b, sizeof b, (double)bytes);
    gc_error_at(d, gc_cu_status(r), (gc_loc){0, 0}, "cuMemAlloc failed: %s (%s) allocating %s for a state",
                gc_cu_error_name(m->cu, r), gc_cu_error_string(m->cu, r), b);
    return -1;
  }
  *addr = (uint64_t)p;
  if (mem_zero(u, *addr, bytes, d)) {
    if (push(m, NULL) == 0) {
      m->cu->MemFree(p);
      pop(m);
    }
    return -1;
  }
  return 0;
}

static void mem_free(void *u, uint64_t addr) {
  const cu_state_mem *m = u;
  if (push(m, NULL)) return;
  m->cu->MemFree((CUdeviceptr)addr);
  pop(m);
}

static int mem_read(void *u, void *dst, uint64_t src, size_t bytes, gc_diags *d) {
  const cu_state_mem *m = u;
  if (push(m, d)) return -1;
  int rc = GC_CU(m->cu, d, MemcpyDtoH, dst, (CUdeviceptr)src, bytes);
  pop(m);
  return rc ? -1 : 0;
}

static int mem_write(void *u, uint64_t dst, const void *src, size_t bytes, gc_diags *d) {
  const cu_state_mem *m = u;
  if (push(m, d)) return -1;
  int rc = GC_CU(m->cu, d, MemcpyHtoD, (CUdeviceptr)dst, src, bytes);
  pop(m);
  return rc ? -1 : 0;
}

static void mem_release(void *u) {
  cu_state_mem *m = u;
  m->cu->DevicePrimaryCtxRelease(m->dev);
  free(m);
}

static const gc_state_mem_ops cu_ops = {"cuda", mem_alloc, mem_free, mem_read, mem_write, mem_zero, mem_release};

gc_states *gc_cu_exec_states_new(gc_cu_exec *x, gc_diags *d) {
  cu_state_mem *m = calloc(1, sizeof *m);
  if (!m) {
    gc_cu_oom(d);
    return NULL;
  }
  m->cu = x->cu;
  m->dev = x->dev;
  if (GC_CU(x->cu, d, DevicePrimaryCtxRetain, &m->ctx, x->dev)) {
    free(m);
    return NULL;
  }
  return gc_states_new(&cu_ops, m, d);
}

int gc_cu_exec_bind_states(gc_cu_exec *x, gc_states *s, gc_diags *d) {
  const gc_launch_plan *p = x->plan;
  if (strcmp(gc_states_kind(s), "cuda") != 0) {
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0},
                "the states are %s memory; this executable runs on the GPU", gc_states_kind(s));
    return -1;
  }
  CUdeviceptr *addr = calloc((size_t)p->n_states + 1, sizeof *addr);
  if (!addr) return gc_cu_oom(d);
  for (int i = 0; i < p->n_states; i++) {
    uint64_t a = 0;
    if (gc_states_get(s, &p->states[i], &a, d)) {
      free(addr);
      return -1;
    }
    addr[i] = (CUdeviceptr)a;
  }
  pthread_mutex_lock(&x->mu);
  free(x->state_addr);
  x->state_addr = addr;
  __atomic_add_fetch(&x->states_gen, 1, __ATOMIC_RELEASE);  /* contexts bind and capture again */
  pthread_mutex_unlock(&x->mu);
  return 0;
}
