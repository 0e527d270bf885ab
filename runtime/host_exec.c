/* host_exec.c - running a launch plan of host kernels (see host_exec.h).
 *
 *   load:  check the plan -> arena (TEMP) -> const pointers (aligned copies
 *          where needed) -> one slot array per kernel (TEMP, CONST, I64 bound
 *          now; INPUT/OUTPUT recorded) -> chunk counts from modeled work -> pool
 *   run:   bind I/O slots (scratch for misaligned or overlapping tensors) ->
 *          each launch in order over the pool -> copy scratch outputs back
 */
#define _GNU_SOURCE
#include "runtime/host_exec.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/states.h"
#include "runtime/threadpool.h"

#define HOST_ARENA_ALIGN 64
#define HOST_DEFAULT_ALIGN 16
/* Modeled bytes + flops of a launch below which it runs inline on the caller
 * (waking the pool costs microseconds), and the least work worth one chunk. */
#define HOST_PAR_MIN_WORK (256.0 * 1024)
#define HOST_CHUNK_WORK (64.0 * 1024)

static const gc_loc noloc = {0, 0};

/* An INPUT/OUTPUT argument slot of a kernel, bound at run time. */
typedef struct io_slot {
  int slot;
  int output;                /* 0: inputs[index], 1: outputs[index] */
  int index;
} io_slot;

typedef struct host_kernel {
  gc_host_kernel_fn fn;
  void **slots;              /* one per param */
  int n_io;
  io_slot *io;
  int chunks;                /* ranges per launch (1: inline on the caller) */
} host_kernel;

struct gc_host_exec {
  const gc_launch_plan *lp;
  gc_threadpool *pool;
  int threads;
  void *arena;
  size_t *const_align;       /* per const */
  void **consts;             /* per const: the pointer kernels read */
  void **const_copies;       /* per const: an aligned copy we own, or NULL */
  int n_copied;
  size_t *in_align, *out_align;
  host_kernel *kernels;      /* per plan kernel */
  void **in_ptr, **out_ptr;  /* per run: what the I/O slots point at */
  void **in_scratch, **out_scratch;
  pthread_mutex_t run_mu;
  int run_mu_ok;
  int prologue_due;          /* the plan's prologue has yet to run on the current consts */
  int states_bound;          /* the plan's states point at memory (gc_host_exec_bind_states) */
};

int gc_host_threads(const gc_rt_settings *s, gc_diags *d) {
  const char *env = s ? s->cpu_threads : NULL;
  if (env && *env) {
    char *end;
    long v = strtol(env, &end, 10);
    if (*end == 0 && v >= 1 && v <= 1024) return (int)v;
    if (d)
      gc_warning_at(d, noloc, "GRAPHC_CPU_THREADS='%s' is not a number in [1, 1024]; ignored", env);
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    long c = CPU_COUNT(&set);
    if (c >= 1 && (n < 1 || c < n)) n = c;
  }
  if (n < 1) n = 1;
  return n > 1024 ? 1024 : (int)n;
}

/* posix_memalign with a reported error; *out NULL when bytes is 0. */
static int alloc_aligned(void **out, size_t align, size_t bytes, const char *what, gc_diags *d) {
  *out = NULL;
  if (bytes == 0) return 0;
  if (align < sizeof(void *)) align = sizeof(void *);
  if (posix_memalign(out, align, bytes) == 0) return 0;
  *out = NULL;
  gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory allocating %zu bytes for %s",
              bytes, what);
  return -1;
}

/* Parallel chunks for a launch of n items with modeled work `work`. */
static int launch_chunks(int64_t n, double work, int threads) {
  if (work <= 0) work = 8.0 * (double)n;
  if (threads <= 1 || n < 2 || work < HOST_PAR_MIN_WORK) return 1;
  double c = work / HOST_CHUNK_WORK;
  int chunks = c >= threads ? threads : (int)c;
  if ((int64_t)chunks > n) chunks = (int)n;
  return chunks < 1 ? 1 : chunks;
}

/* Point const c at data, or at an aligned copy of it when misaligned. */
static int place_const(gc_host_exec *x, int c, const void *data, gc_diags *d) {
  const gc_lp_const *k = &x->lp->consts[c];
  size_t a = x->const_align[c];
  if (x->const_copies[c]) {
    free(x->const_copies[c]);
    x->const_copies[c] = NULL;
    x->n_copied--;
  }
  if (((uintptr_t)data % a) == 0) {
    x->consts[c] = (void *)data;  /* kernels only read CONST buffers */
    return 0;
  }
  if (alloc_aligned(&x->const_copies[c], HOST_ARENA_ALIGN, k->bytes, k->name, d)) return -1;
  if (k->bytes) memcpy(x->const_copies[c], data, k->bytes);
  x->consts[c] = x->const_copies[c];
  x->n_copied++;
  return 0;
}

/* Alignments per I/O tensor and const (the largest of their buffers'), the
 * arena, and the consts. */
static int setup_memory(gc_host_exec *x, const gc_host_code *code, gc_diags *d) {
  const gc_launch_plan *p = x->lp;
  size_t ni = (size_t)p->n_inputs, no = (size_t)p->n_outputs, nc = (size_t)p->n_consts;
  x->const_align = calloc(nc + 1, sizeof *x->const_align);
  x->consts = calloc(nc + 1, sizeof *x->consts);
  x->const_copies = calloc(nc + 1, sizeof *x->const_copies);
  x->in_align = calloc(ni + 1, sizeof *x->in_align);
  x->out_align = calloc(no + 1, sizeof *x->out_align);
  x->in_ptr = calloc(ni + 1, sizeof *x->in_ptr);
  x->out_ptr = calloc(no + 1, sizeof *x->out_ptr);
  x->in_scratch = calloc(ni + 1, sizeof *x->in_scratch);
  x->out_scratch = calloc(no + 1, sizeof *x->out_scratch);
  if (!x->const_align || !x->consts || !x->const_copies || !x->in_align || !x->out_align ||
      !x->in_ptr || !x->out_ptr || !x->in_scratch || !x->out_scratch) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < nc; i++) x->const_align[i] = 1;
  for (int i = 0; i < p->n_buffers; i++) {
    const gc_lp_buffer *b = &p->buffers[i];
    size_t a = code->align ? code->align[i] : HOST_DEFAULT_ALIGN;
    if (a < 1) a = 1;
    size_t *dst = b->kind == GC_LP_INPUT ? &x->in_align[b->index]
                : b->kind == GC_LP_OUTPUT ? &x->out_align[b->index]
                : b->kind == GC_LP_CONST ? &x->const_align[b->index] : NULL;
    if (dst && a > *dst) *dst = a;
  }
  if (alloc_aligned(&x->arena, HOST_ARENA_ALIGN, (size_t)p->arena_bytes,
                    "the intermediate-buffer arena", d))
    return -1;
  for (int i = 0; i < p->n_consts; i++) {
    if (!p->consts[i].data && p->consts[i].bytes) {
      gc_error_at(d, GRAPHC_STATUS_WEIGHTS_ERROR, noloc, "const '%s' has no data",
                  p->consts[i].name);
      return -1;
    }
    if (place_const(x, i, p->consts[i].data, d)) return -1;
  }
  return 0;
}

/* Slot arrays: TEMP, CONST and I64 bound now, INPUT/OUTPUT recorded. */
static int setup_kernels(gc_host_exec *x, const gc_host_code *code, gc_diags *d) {
  const gc_launch_plan *p = x->lp;
  x->kernels = calloc((size_t)p->n_kernels + 1, sizeof *x->kernels);
  if (!x->kernels) goto oom;
  for (int i = 0; i < p->n_kernels; i++) {
    const gc_lp_kernel *k = &p->kernels[i];
    host_kernel *hk = &x->kernels[i];
    hk->fn = code->fns[i];
    if (!hk->fn) {
      gc_error_at(d, GRAPHC_STATUS_INTERNAL, noloc, "host kernel %s has no code", k->name);
      return -1;
    }
    hk->slots = calloc((size_t)k->n_params + 1, sizeof *hk->slots);
    hk->io = calloc((size_t)k->n_params + 1, sizeof *hk->io);
    if (!hk->slots || !hk->io) goto oom;
    hk->chunks = launch_chunks(k->n, code->work ? code->work[i] : 0, x->threads);
    for (int j = 0; j < k->n_params; j++) {
      const gc_lp_param *q = &k->params[j];
      if (q->kind == GC_LP_PARAM_I64) {
        hk->slots[j] = (void *)(intptr_t)q->value;
        continue;
      }
      if (q->kind == GC_LP_PARAM_TMAP) {
        /* TMA tensor maps are a GPU (sm_90) feature: host lowering never makes one */
        gc_error_at(d, GRAPHC_STATUS_INTERNAL, noloc,
                    "host kernel %s: parameter %d is a TMA tensor map, which the host cannot run",
                    k->name, j);
        return -1;
      }
      const gc_lp_buffer *b = &p->buffers[q->value];  /* in range: gc_launch_plan_check */
      switch (b->kind) {
        case GC_LP_INPUT:
        case GC_LP_OUTPUT: hk->io[hk->n_io++] = (io_slot){j, b->kind == GC_LP_OUTPUT, b->index}; break;
        case GC_LP_CONST: hk->slots[j] = x->consts[b->index]; break;
        case GC_LP_TEMP: hk->slots[j] = (char *)x->arena + b->offset; break;
        case GC_LP_STATE: hk->slots[j] = NULL; break;  /* gc_host_exec_bind_states */
      }
    }
  }
  return 0;
oom:
  gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory");
  return -1;
}

gc_host_exec *gc_host_exec_load(const gc_launch_plan *lp, const gc_host_code *code, int threads,
                                gc_diags *d) {
  if (gc_launch_plan_check(lp, GRAPHC_STATUS_INTERNAL, "host launch plan", d)) return NULL;
  gc_host_exec *x = calloc(1, sizeof *x);
  if (!x) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory");
    return NULL;
  }
  x->lp = lp;
  x->threads = threads > 1 ? threads : 1;
  x->prologue_due = 1;
  if (pthread_mutex_init(&x->run_mu, NULL) != 0) {
    gc_error_at(d, GRAPHC_STATUS_INTERNAL, noloc, "host executor: cannot initialize a mutex");
    free(x);
    return NULL;
  }
  x->run_mu_ok = 1;
  if (setup_memory(x, code, d) || setup_kernels(x, code, d) ||
      !(x->pool = gc_threadpool_create(x->threads, d))) {
    gc_host_exec_free(x);
    return NULL;
  }
  return x;
}

int gc_host_exec_set_const(gc_host_exec *x, int c, const void *data, gc_diags *d) {
  GC_ASSERT(x && c >= 0 && c < x->lp->n_consts && data);
  pthread_mutex_lock(&x->run_mu);
  int rc = place_const(x, c, data, d);
  x->prologue_due = 1;  /* what the prologue computed from the old bytes is stale */
  const gc_launch_plan *p = x->lp;
  for (int i = 0; i < p->n_kernels && rc == 0; i++)
    for (int j = 0; j < p->kernels[i].n_params; j++) {
      const gc_lp_param *q = &p->kernels[i].params[j];
      if (q->kind == GC_LP_PARAM_BUFFER && p->buffers[q->value].kind == GC_LP_CONST &&
          p->buffers[q->value].index == c)
        x->kernels[i].slots[j] = x->consts[c];
    }
  pthread_mutex_unlock(&x->run_mu);
  return rc;
}

int gc_host_exec_bind_states(gc_host_exec *x, gc_states *s, gc_diags *d) {
  const gc_launch_plan *p = x->lp;
  if (strcmp(gc_states_kind(s), "host") != 0) {
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, noloc,
                "the states are %s memory; this executable runs on the host", gc_states_kind(s));
    return -1;
  }
  void **ptr = calloc((size_t)p->n_states + 1, sizeof *ptr);
  if (!ptr) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, noloc, "out of memory");
    return -1;
  }
  for (int i = 0; i < p->n_states; i++) {
    uint64_t a = 0;
    if (gc_states_get(s, &p->states[i], &a, d)) {
      free(ptr);
      return -1;
    }
    ptr[i] = (void *)(uintptr_t)a;
  }
  pthread_mutex_lock(&x->run_mu);
  for (int i = 0; i < p->n_kernels; i++)
    for (int j = 0; j < p->kernels[i].n_params; j++) {
      const gc_lp_param *q = &p->kernels[i].params[j];
      if (q->kind == GC_LP_PARAM_BUFFER && p->buffers[q->value].kind == GC_LP_STATE)
        x->kernels[i].slots[j] = ptr[p->buffers[q->value].index];
    }
  x->states_bound = 1;
  pthread_mutex_unlock(&x->run_mu);
  free(ptr);
  return 0;
}

/* 1 when [a, a+na) and [b, b+nb) share a byte. */
static int overlaps(const void *a, size_t na, const void *b, size_t nb) {
  uintptr_t u = (uintptr_t)a, v = (uintptr_t)b;
  return na && nb && u < v + nb && v < u + na;
}

/* Point the I/O slots at the caller's tensors, or at scratch copies. */
static int bind_io(gc_host_exec *x, const graphc_tensor_t *in, const graphc_tensor_t *out,
                   gc_diags *d) {
  const gc_launch_plan *p = x->lp;
  for (int i = 0; i < p->n_inputs; i++) {
    size_t n = p->inputs[i].nbytes, a = x->in_align[i];
    x->in_ptr[i] = in[i].data;
    if (a <= 1 || (uintptr_t)in[i].data % a == 0) continue;
    if (alloc_aligned(&x->in_scratch[i], HOST_ARENA_ALIGN, n, "an aligned copy of an input", d))
      return -1;
    memcpy(x->in_scratch[i], in[i].data, n);
    x->in_ptr[i] = x->in_scratch[i];
  }
  for (int i = 0; i < p->n_outputs; i++) {
    size_t n = p->outputs[i].nbytes, a = x->out_align[i];
    int scratch = a > 1 && (uintptr_t)out[i].data % a != 0;
    for (int j = 0; j < p->n_inputs && !scratch; j++)
      scratch = overlaps(out[i].data, n, in[j].data, p->inputs[j].nbytes);
    for (int j = 0; j < i && !scratch; j++)
      scratch = overlaps(out[i].data, n, out[j].data, p->outputs[j].nbytes);
    x->out_ptr[i] = out[i].data;
    if (!scratch) continue;
    if (alloc_aligned(&x->out_scratch[i], HOST_ARENA_ALIGN, n, "an output buffer", d)) return -1;
    x->out_ptr[i] = x->out_scratch[i];
  }
  for (int i = 0; i < p->n_kernels; i++) {
    host_kernel *hk = &x->kernels[i];
    for (int j = 0; j < hk->n_io; j++) {
      const io_slot *io = &hk->io[j];
      hk->slots[io->slot] = io->output ? x->out_ptr[io->index] : x->in_ptr[io->index];
    }
  }
  return 0;
}

/* One launch's range, as the pool calls it. */
typedef struct host_task {
  gc_host_kernel_fn fn;
  void *const *slots;
} host_task;

/* Pool callback: run the launch's kernel over items [begin, end). */
static void run_range(void *arg, int64_t begin, int64_t end) {
  const host_task *t = arg;
  t->fn(t->slots, begin, end);
}

int gc_host_exec_run(gc_host_exec *x, const graphc_tensor_t *in, graphc_tensor_t *out,
                     gc_diags *d) {
  const gc_launch_plan *p = x->lp;
  pthread_mutex_lock(&x->run_mu);
  int rc = 0;
  if (p->n_states && !x->states_bound) {
    gc_error_at(d, GRAPHC_STATUS_INTERNAL, noloc, "host executor: the plan's states have no memory");
    rc = -1;
  }
  if (rc == 0) rc = bind_io(x, in, out, d);
  /* the prologue (launches reading only consts) once per consts, then the rest */
  int first = x->prologue_due ? 0 : p->n_prologue;
  if (rc == 0) x->prologue_due = 0;
  for (int i = first; i < p->n_launches && rc == 0; i++) {
    int ki = p->launches[i];
    const host_kernel *hk = &x->kernels[ki];
    host_task t = {hk->fn, hk->slots};
    gc_threadpool_run(x->pool, run_range, &t, p->kernels[ki].n, hk->chunks);
  }
  for (int i = 0; i < p->n_outputs; i++) {
    if (x->out_scratch[i] && rc == 0) memcpy(out[i].data, x->out_scratch[i], p->outputs[i].nbytes);
    free(x->out_scratch[i]);
    x->out_scratch[i] = NULL;
  }
  for (int i = 0; i < p->n_inputs; i++) {
    free(x->in_scratch[i]);
    x->in_scratch[i] = NULL;
  }
  pthread_mutex_unlock(&x->run_mu);
  return rc;
}

int gc_host_exec_time_launches(gc_host_exec *x, const graphc_tensor_t *in, graphc_tensor_t *out,
                               int runs, float *ms, gc_diags *d) {
  const gc_launch_plan *p = x->lp;
  pthread_mutex_lock(&x->run_mu);
  int rc = p->n_states && !x->states_bound ? -1 : bind_io(x, in, out, d);
  if (p->n_states && !x->states_bound)
    gc_error_at(d, GRAPHC_STATUS_INTERNAL, noloc, "host executor: the plan's states have no memory");
  for (int r = 0; r < runs && rc == 0; r++)
    for (int i = 0; i < p->n_launches; i++) {
      int ki = p->launches[i];
      const host_kernel *hk = &x->kernels[ki];
      host_task t = {hk->fn, hk->slots};
      struct timespec t0, t1;
      clock_gettime(CLOCK_MONOTONIC, &t0);
      gc_threadpool_run(x->pool, run_range, &t, p->kernels[ki].n, hk->chunks);
      clock_gettime(CLOCK_MONOTONIC, &t1);
      ms[(size_t)r * (size_t)p->n_launches + (size_t)i] =
          (float)((double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6);
    }
  for (int i = 0; i < p->n_outputs; i++) {
    if (x->out_scratch[i] && rc == 0) memcpy(out[i].data, x->out_scratch[i], p->outputs[i].nbytes);
    free(x->out_scratch[i]);
    x->out_scratch[i] = NULL;
  }
  for (int i = 0; i < p->n_inputs; i++) {
    free(x->in_scratch[i]);
    x->in_scratch[i] = NULL;
  }
  pthread_mutex_unlock(&x->run_mu);
  return rc;
}

void gc_host_exec_describe(const gc_host_exec *x, gc_sbuf *out) {
  gc_sbuf_printf(out, "%d thread%s, arena %llu bytes, %d of %d consts copied", x->threads,
                 x->threads == 1 ? "" : "s", (unsigned long long)x->lp->arena_bytes, x->n_copied,
                 x->lp->n_consts);
  if (x->lp->n_prologue)
    gc_sbuf_printf(out, "; the first %d launch%s read only weights: run once per weights", x->lp->n_prologue,
                   x->lp->n_prologue == 1 ? "" : "es");
}

void gc_host_exec_free(gc_host_exec *x) {
  if (!x) return;
  gc_threadpool_destroy(x->pool);
  if (x->kernels)
    for (int i = 0; i < x->lp->n_kernels; i++) {
      free(x->kernels[i].slots);
      free(x->kernels[i].io);
    }
  free(x->kernels);
  if (x->const_copies)
    for (int i = 0; i < x->lp->n_consts; i++) free(x->const_copies[i]);
  free(x->const_copies);
  free(x->consts);
  free(x->const_align);
  free(x->arena);
  free(x->in_align);
  free(x->out_align);
  free(x->in_ptr);
  free(x->out_ptr);
  free(x->in_scratch);
  free(x->out_scratch);
  if (x->run_mu_ok) pthread_mutex_destroy(&x->run_mu);
  free(x);
}
