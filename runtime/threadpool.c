/* threadpool.c - a persistent pool of worker threads (see threadpool.h).
 *
 * One job at a time. The caller publishes a job under the mutex and bumps the
 * generation; workers wake (after a spin of GC_POOL_SPIN_US on the generation, then on the
 * condition variable), copy the job and take chunk numbers from `ticket`,
 * which packs (generation << 32 | next chunk). A worker that woke late, for a
 * job that is already finished, finds either another generation or no chunk
 * left in the ticket, so it can never run a chunk of one job with another
 * job's function. The caller takes chunks too, then waits until `done`
 * reaches the chunk count; the last finisher signals it under the mutex.
 */
#include "runtime/threadpool.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Microseconds a worker (and the caller, for the workers to finish) spins before sleeping,
 * so that the launches of one run, with serial work between them (launches small enough
 * to run on the caller alone), find the workers awake: a sleeping worker's wake-up (a
 * futex, on a VM an interrupt to a halted vCPU) costs tens of microseconds. The spin was
 * 2000 pauses, 30 us on a Xeon whose pause takes 15 ns (Skylake's take 140 cycles): it is
 * timed now. A 2-layer BERT at batch 1 (2 vCPUs, medians of 30 runs, in turn): 30 us
 * 1.20-1.52 ms, 300 us 1.02-1.45. */
#define GC_POOL_SPIN_US 300
/* Least stack of a worker thread. */
#define GC_POOL_STACK ((size_t)8 << 20)

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif

typedef struct pool_job {
  gc_task_fn fn;
  void *arg;
  int64_t n;
  int chunks;
} pool_job;

struct gc_threadpool {
  int size;                   /* participants, caller included */
  int n_started;              /* worker threads running */
  pthread_t *threads;
  pthread_mutex_t mu;         /* guards job, stop and the condition variables */
  pthread_cond_t wake;        /* workers: a new generation or stop */
  pthread_cond_t finished;    /* caller: done == job.chunks */
  pthread_mutex_t run_mu;     /* serializes gc_threadpool_run callers */
  pool_job job;
  _Atomic uint32_t gen;       /* generation of `job` */
  _Atomic uint64_t ticket;    /* gen << 32 | next chunk number */
  _Atomic int done;           /* chunks finished in this generation */
  _Atomic int stop;
  int sync_ok;                /* mutexes and condition variables were initialized */
};

/* First item of chunk c of n items split into `chunks` ranges. */
static int64_t chunk_begin(int64_t n, int chunks, int c) {
  int64_t q = n / chunks, r = n % chunks;
  return q * c + (c < r ? c : r);
}

/* Take and run chunks of generation `gen` until none is left. */
static void take_chunks(gc_threadpool *p, const pool_job *j, uint32_t gen) {
  for (;;) {
    uint64_t t = atomic_load(&p->ticket);
    do {
      if ((uint32_t)(t >> 32) != gen || (int64_t)(t & 0xffffffffu) >= j->chunks) return;
    } while (!atomic_compare_exchange_weak(&p->ticket, &t, t + 1));
    int c = (int)(t & 0xffffffffu);
    j->fn(j->arg, chunk_begin(j->n, j->chunks, c), chunk_begin(j->n, j->chunks, c + 1));
    if (atomic_fetch_add(&p->done, 1) + 1 == j->chunks) {
      pthread_mutex_lock(&p->mu);
      pthread_cond_signal(&p->finished);
      pthread_mutex_unlock(&p->mu);
    }
  }
}

/* Monotonic microseconds. */
static int64_t now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

/* One step of a spin of GC_POOL_SPIN_US (i counts the steps from 0, *end starts at 0): a
 * pause, and 0 once the time is up (the clock read every 64 pauses, about 1 us). */
static int spin_step(int64_t i, int64_t *end) {
  if ((i & 63) == 0) {
    int64_t t = now_us();
    if (!*end) *end = t + GC_POOL_SPIN_US;
    else if (t >= *end) return 0;
  }
  cpu_relax();
  return 1;
}

/* Worker loop: wait for a generation it has not seen, run its chunks, repeat. */
static void *worker_main(void *arg) {
  gc_threadpool *p = arg;
  uint32_t seen = atomic_load(&p->gen);
  for (;;) {
    for (int64_t i = 0, end = 0; atomic_load_explicit(&p->gen, memory_order_relaxed) == seen &&
                                 !atomic_load_explicit(&p->stop, memory_order_relaxed) && spin_step(i, &end);
         i++) {
    }
    pthread_mutex_lock(&p->mu);
    while (atomic_load(&p->gen) == seen && !atomic_load(&p->stop)) pthread_cond_wait(&p->wake, &p->mu);
    if (atomic_load(&p->stop)) {
      pthread_mutex_unlock(&p->mu);
      return NULL;
    }
    seen = atomic_load(&p->gen);
    pool_job j = p->job;
    pthread_mutex_unlock(&p->mu);
    take_chunks(p, &j, seen);
  }
}

gc_threadpool *gc_threadpool_create(int n_threads, gc_diags *d) {
  gc_threadpool *p = calloc(1, sizeof *p);
  if (!p) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory creating a thread pool");
    return NULL;
  }
  p->size = n_threads > 1 ? n_threads : 1;
  int rc = pthread_mutex_init(&p->mu, NULL);
  if (rc == 0 && (rc = pthread_mutex_init(&p->run_mu, NULL)) != 0) pthread_mutex_destroy(&p->mu);
  if (rc == 0 && (rc = pthread_cond_init(&p->wake, NULL)) != 0) {
    pthread_mutex_destroy(&p->mu);
    pthread_mutex_destroy(&p->run_mu);
  }
  if (rc == 0 && (rc = pthread_cond_init(&p->finished, NULL)) != 0) {
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
    pthread_mutex_destroy(&p->run_mu);
  }
  if (rc != 0) {
    gc_error_at(d, GRAPHC_STATUS_INTERNAL, (gc_loc){0, 0},
                "thread pool: cannot initialize a mutex or condition variable: %s", strerror(rc));
    free(p);
    return NULL;
  }
  p->sync_ok = 1;
  if (p->size > 1) {
    p->threads = calloc((size_t)p->size - 1, sizeof *p->threads);
    if (!p->threads) {
      gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory creating a thread pool");
      gc_threadpool_destroy(p);
      return NULL;
    }
  }
  /* workers get at least GC_POOL_STACK of stack whatever RLIMIT_STACK says: host kernels
   * keep scratch arrays there (a packed matmul up to 512 KiB, codegen/emit_linalg.c) */
  pthread_attr_t attr;
  int attr_ok = pthread_attr_init(&attr) == 0;
  size_t stack = 0;
  if (attr_ok && pthread_attr_getstacksize(&attr, &stack) == 0 && stack < GC_POOL_STACK)
    pthread_attr_setstacksize(&attr, GC_POOL_STACK);
  for (int i = 0; i < p->size - 1; i++) {
    rc = pthread_create(&p->threads[i], attr_ok ? &attr : NULL, worker_main, p);
    if (rc != 0) {
      gc_error_at(d, GRAPHC_STATUS_INTERNAL, (gc_loc){0, 0},
                  "thread pool: cannot start worker thread %d of %d: %s", i + 1, p->size - 1,
                  strerror(rc));
      if (attr_ok) pthread_attr_destroy(&attr);
      gc_threadpool_destroy(p);
      return NULL;
    }
    p->n_started++;
  }
  if (attr_ok) pthread_attr_destroy(&attr);
  return p;
}

int gc_threadpool_size(const gc_threadpool *p) { return p ? p->size : 1; }

void gc_threadpool_run(gc_threadpool *p, gc_task_fn fn, void *arg, int64_t n, int chunks) {
  if (n <= 0) return;
  if (chunks > p->size) chunks = p->size;
  if ((int64_t)chunks > n) chunks = (int)n;
  if (chunks <= 1 || p->n_started == 0) {
    fn(arg, 0, n);
    return;
  }
  pthread_mutex_lock(&p->run_mu);
  pthread_mutex_lock(&p->mu);
  p->job = (pool_job){fn, arg, n, chunks};
  uint32_t gen = atomic_load(&p->gen) + 1;
  atomic_store(&p->done, 0);
  atomic_store(&p->ticket, (uint64_t)gen << 32);
  atomic_store(&p->gen, gen);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);

  pool_job j = {fn, arg, n, chunks};
  take_chunks(p, &j, gen);
  for (int64_t i = 0, end = 0; atomic_load_explicit(&p->done, memory_order_relaxed) < chunks && spin_step(i, &end); i++) {
  }
  if (atomic_load(&p->done) < chunks) {
    pthread_mutex_lock(&p->mu);
    while (atomic_load(&p->done) < chunks) pthread_cond_wait(&p->finished, &p->mu);
    pthread_mutex_unlock(&p->mu);
  }
  pthread_mutex_unlock(&p->run_mu);
}

void gc_threadpool_destroy(gc_threadpool *p) {
  if (!p) return;
  if (p->sync_ok) {
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
  }
  for (int i = 0; i < p->n_started; i++) pthread_join(p->threads[i], NULL);
  if (p->sync_ok) {
    pthread_cond_destroy(&p->finished);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->run_mu);
    pthread_mutex_destroy(&p->mu);
  }
  free(p->threads);
  free(p);
}
