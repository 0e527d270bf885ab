/* states.c - stores of named state memory (see states.h). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/states.h"

typedef struct state_entry {
  char *name;
  gc_dtype dtype;
  int rank;
  int64_t dims[GC_MAX_RANK];
  uint64_t bytes;
  uint64_t addr;
} state_entry;

struct gc_states {
  int refs;
  pthread_mutex_t mu;
  const gc_state_mem_ops *ops;
  void *u;
  int n, cap;
  state_entry *e;
};

static const gc_loc noloc = {0, 0};

/* ---- host memory ---------------------------------------------------------------------------- */

static int host_alloc(void *u, size_t bytes, uint64_t *addr, gc_diags *d) {
  (void)u;
  void *p = calloc(1, bytes ? bytes : 1);
  if (!p) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory allocating a state of %zu bytes",
                bytes);
    return -1;
  }
  *addr = (uint64_t)(uintptr_t)p;
  return 0;
}

static void host_free(void *u, uint64_t addr) {
  (void)u;
  free((void *)(uintptr_t)addr);
}

static int host_read(void *u, void *dst, uint64_t src, size_t bytes, gc_diags *d) {
  (void)u, (void)d;
  memcpy(dst, (const void *)(uintptr_t)src, bytes);
  return 0;
}

static int host_write(void *u, uint64_t dst, const void *src, size_t bytes, gc_diags *d) {
  (void)u, (void)d;
  memcpy((void *)(uintptr_t)dst, src, bytes);
  return 0;
}

static int host_zero(void *u, uint64_t addr, size_t bytes, gc_diags *d) {
  (void)u, (void)d;
  memset((void *)(uintptr_t)addr, 0, bytes);
  return 0;
}

static const gc_state_mem_ops host_ops = {"host", host_alloc, host_free, host_read, host_write, host_zero, NULL};

/* ---- the store -------------------------------------------------------------------------------- */

gc_states *gc_states_new(const gc_state_mem_ops *ops, void *u, gc_diags *d) {
  gc_states *s = calloc(1, sizeof *s);
  if (!s || pthread_mutex_init(&s->mu, NULL) != 0) {
    free(s);
    if (ops && ops->release) ops->release(u);
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory making a state store");
    return NULL;
  }
  s->refs = 1;
  s->ops = ops ? ops : &host_ops;
  s->u = u;
  return s;
}

void gc_states_ref(gc_states *s) {
  if (s) __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
}

void gc_states_unref(gc_states *s) {
  if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
  for (int i = 0; i < s->n; i++) {
    s->ops->free(s->u, s->e[i].addr);
    free(s->e[i].name);
  }
  free(s->e);
  if (s->ops->release) s->ops->release(s->u);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

const char *gc_states_kind(const gc_states *s) { return s->ops->kind; }

/* "f32[4, 8]" into buf. */
static void type_text(char *buf, size_t n, gc_dtype dt, int rank, const int64_t *dims) {
  size_t k = (size_t)snprintf(buf, n, "%s[", graphc_dtype_name(dt));
  for (int i = 0; i < rank && k < n; i++) k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)dims[i]);
  if (k < n) snprintf(buf + k, n - k, "]");
}

/* Entry named `name`, or NULL; mu held. */
static state_entry *find(gc_states *s, const char *name) {
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->e[i].name, name) == 0) return &s->e[i];
  return NULL;
}

/* Add state `want` with new zeroed memory; mu held. */
static int add(gc_states *s, const gc_lp_state *want, uint64_t *addr, gc_diags *d) {
  if (s->n == s->cap) {
    int cap = s->cap ? 2 * s->cap : 8;
    state_entry *ne = realloc(s->e, (size_t)cap * sizeof *ne);
    if (!ne) {
      gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory adding state \"%s\"", want->name);
      return -1;
    }
    s->e = ne;
    s->cap = cap;
  }
  char *nm = strdup(want->name);
  if (!nm) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory adding state \"%s\"", want->name);
    return -1;
  }
  if (s->ops->alloc(s->u, (size_t)want->bytes, addr, d) != 0) {
    free(nm);
    return -1;
  }
  state_entry *n = &s->e[s->n++];
  memset(n, 0, sizeof *n);
  n->name = nm;
  n->dtype = want->dtype;
  n->rank = want->rank;
  memcpy(n->dims, want->dims, sizeof n->dims);
  n->bytes = want->bytes;
  n->addr = *addr;
  return 0;
}

int gc_states_get(gc_states *s, const gc_lp_state *want, uint64_t *addr, gc_diags *d) {
  pthread_mutex_lock(&s->mu);
  int rc = -1;
  state_entry *e = find(s, want->name);
  if (!e) {
    rc = add(s, want, addr, d);
  } else if (e->dtype != want->dtype || e->rank != want->rank ||
             memcmp(e->dims, want->dims, (size_t)want->rank * sizeof *e->dims) != 0) {
    char have[160], need[160];
    type_text(have, sizeof have, e->dtype, e->rank, e->dims);
    type_text(need, sizeof need, want->dtype, want->rank, want->dims);
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, noloc,
                "state \"%s\" is %s in the shared states but %s in this executable", want->name, have, need);
  } else {
    *addr = e->addr;
    rc = 0;
  }
  pthread_mutex_unlock(&s->mu);
  return rc;
}

int gc_states_count(gc_states *s) {
  pthread_mutex_lock(&s->mu);
  int n = s->n;
  pthread_mutex_unlock(&s->mu);
  return n;
}

int gc_states_info(gc_states *s, int i, const char **name, gc_dtype *dtype, int *rank, int64_t *dims) {
  pthread_mutex_lock(&s->mu);
  int rc = -1;
  if (i >= 0 && i < s->n) {
    *name = s->e[i].name;  /* entries are never removed: the name lives as long as the store */
    *dtype = s->e[i].dtype;
    *rank = s->e[i].rank;
    memcpy(dims, s->e[i].dims, (size_t)s->e[i].rank * sizeof *dims);
    rc = 0;
  }
  pthread_mutex_unlock(&s->mu);
  return rc;
}

/* Entry `name` with exactly `bytes` bytes, or report; mu held. */
static state_entry *sized(gc_states *s, const char *name, size_t bytes, gc_diags *d) {
  state_entry *e = find(s, name);
  if (!e) {
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, noloc, "there is no state \"%s\"", name);
    return NULL;
  }
  if (e->bytes != bytes) {
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, noloc, "state \"%s\" has %llu bytes, the tensor %zu",
                name, (unsigned long long)e->bytes, bytes);
    return NULL;
  }
  return e;
}

int gc_states_read(gc_states *s, const char *name, void *dst, size_t bytes, gc_diags *d) {
  pthread_mutex_lock(&s->mu);
  state_entry *e = sized(s, name, bytes, d);
  int rc = e ? s->ops->read(s->u, dst, e->addr, bytes, d) : -1;
  pthread_mutex_unlock(&s->mu);
  return rc;
}

int gc_states_write(gc_states *s, const char *name, const void *src, size_t bytes, gc_diags *d) {
  pthread_mutex_lock(&s->mu);
  state_entry *e = sized(s, name, bytes, d);
  int rc = e ? s->ops->write(s->u, e->addr, src, bytes, d) : -1;
  pthread_mutex_unlock(&s->mu);
  return rc;
}

int gc_states_zero(gc_states *s, gc_diags *d) {
  pthread_mutex_lock(&s->mu);
  int rc = 0;
  for (int i = 0; i < s->n && rc == 0; i++) rc = s->ops->zero(s->u, s->e[i].addr, (size_t)s->e[i].bytes, d);
  pthread_mutex_unlock(&s->mu);
  return rc;
}
