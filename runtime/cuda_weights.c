/* cuda_weights.c - one device copy of a weight for every executor on the device that
 * reads it.
 *
 * Executables compiled apart from one model (a language model's prefill and decode
 * shapes, a CNN at two batch sizes) borrow the same tensors of the same weights file.
 * Each used to upload its own copy: two copies of an 8B model's 16 GB. A weight whose
 * launch-plan const names its origin (the file's identity and the byte offset,
 * gc_lp_const.origin, zeros for bundles and folded constants; a `from` param converted at
 * bind time has its file tensor's, and its dtype tells the conversion) is looked up here
 * by (driver, device, origin, dtype, bytes): the first executor allocates and uploads it, later
 * ones take a reference, the last release frees it. Executors of one device share its
 * primary context, so one device pointer serves them all; the caller has that context
 * pushed for every call. One process-wide list under one mutex (held through an upload,
 * so that two executors loading the same model at once upload once).
 * The origin's file identity has the modification time, which the kernel keeps to a few
 * ms: a file rewritten in place within that time (same inode, same size) would look the
 * same, so a match also needs equal fingerprints, XXH64 of 64 spans of 64 bytes spread
 * over the tensor (all of a small one).
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/cuda_exec_impl.h"
#include "runtime/hash.h"

typedef struct cu_weight {
  const gc_cu_driver *cu;
  CUdevice dev;
  uint64_t origin[5], bytes, print;
  gc_dtype dtype;
  CUdeviceptr ptr;
  int refs;
  struct cu_weight *next;
} cu_weight;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static cu_weight *g_list;

/* XXH64 of 64 spans of 64 bytes from the first byte to the last. */
static uint64_t fingerprint(const void *data, uint64_t bytes) {
  enum { SPANS = 64, SPAN = 64 };
  const unsigned char *p = data;
  gc_xxh64_state s;
  gc_xxh64_init(&s, bytes);
  if (bytes <= (uint64_t)SPANS * SPAN)
    gc_xxh64_update(&s, p, (size_t)bytes);
  else
    for (uint64_t i = 0; i < SPANS; i++) gc_xxh64_update(&s, p + (bytes - SPAN) * i / (SPANS - 1), SPAN);
  return gc_xxh64_digest(&s);
}

int gc_cu_weight_shareable(const gc_lp_const *c) {
  return c->data && c->bytes >= GC_CU_SHARE_MIN_BYTES && c->origin[1] != 0;
}

int gc_cu_weight_acquire(gc_cu_exec *x, const gc_lp_const *c, CUdeviceptr *p, int *fresh, gc_diags *d) {
  *p = 0;
  *fresh = 0;
  uint64_t print = fingerprint(c->data, c->bytes);
  pthread_mutex_lock(&g_mu);
  cu_weight *w = g_list;
  while (w && !(w->cu == x->cu && w->dev == x->dev && w->bytes == c->bytes && w->print == print &&
                w->dtype == c->dtype &&
                memcmp(w->origin, c->origin, sizeof w->origin) == 0))
    w = w->next;
  int rc = -1;
  if (w) {
    w->refs++;
    *p = w->ptr;
    rc = 0;
  } else if (!(w = calloc(1, sizeof *w))) {
    gc_cu_oom(d);
  } else if (gc_cu_dev_alloc(x, &w->ptr, c->bytes, c->name, d) ||
             GC_CU_WHAT(x->cu, d, c->name, MemcpyHtoD, w->ptr, c->data, c->bytes)) {
    if (w->ptr) x->cu->MemFree(w->ptr);
    free(w);
  } else {
    w->cu = x->cu;
    w->dev = x->dev;
    memcpy(w->origin, c->origin, sizeof w->origin);
    w->bytes = c->bytes;
    w->print = print;
    w->dtype = c->dtype;
    w->refs = 1;
    w->next = g_list;
    g_list = w;
    *p = w->ptr;
    *fresh = 1;
    rc = 0;
  }
  pthread_mutex_unlock(&g_mu);
  return rc;
}

void gc_cu_weight_release(gc_cu_exec *x, CUdeviceptr p) {
  if (!p) return;
  pthread_mutex_lock(&g_mu);
  for (cu_weight **at = &g_list; *at; at = &(*at)->next) {
    cu_weight *w = *at;
    if (w->cu != x->cu || w->dev != x->dev || w->ptr != p) continue;
    if (--w->refs == 0) {
      *at = w->next;
      x->cu->MemFree(w->ptr);
      free(w);
    }
    break;
  }
  pthread_mutex_unlock(&g_mu);
}
