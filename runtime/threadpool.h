/* threadpool.h - a persistent pool of worker threads, one per executable.
 *
 *   gc_threadpool_create(n)    n participants: n-1 worker threads + the caller
 *   gc_threadpool_run(fn, n, chunks)
 *                              [0, n) split into `chunks` contiguous ranges of
 *                              (almost) equal size; every participant takes ranges
 *                              until none is left; returns when all are done
 *   gc_threadpool_destroy      stop and join the workers
 *
 * No global state: each pool owns its threads. Runs on one pool are serialized
 * (a second caller waits for the first). A run with one chunk, or on a pool of
 * one participant, calls fn(arg, 0, n) inline with no synchronization at all.
 * Writes made by the chunks are visible to the caller when run returns, and
 * the caller's writes before run are visible to every chunk. Workers have at
 * least 8 MiB of stack (host kernels keep scratch arrays there); the caller's
 * own thread needs what the largest kernel uses (512 KiB: a packed matmul).
 */
#ifndef GC_THREADPOOL_H
#define GC_THREADPOOL_H

#include <stdint.h>

#include "ir/ir.h"

typedef struct gc_threadpool gc_threadpool;

/* The work of one range [begin, end). */
typedef void (*gc_task_fn)(void *arg, int64_t begin, int64_t end);

/* A pool of n_threads participants (clamped to at least 1). Returns NULL and
 * reports to d (OUT_OF_MEMORY, or INTERNAL with strerror when a thread cannot
 * be started). */
gc_threadpool *gc_threadpool_create(int n_threads, gc_diags *d);
/* Participants, including the caller. */
int gc_threadpool_size(const gc_threadpool *p);
/* Run fn over [0, n) in `chunks` contiguous ranges (clamped to [1, min(n, size)]);
 * chunk c is [q*c + min(c, r), q*(c+1) + min(c+1, r)) with q = n / chunks, r = n % chunks. */
void gc_threadpool_run(gc_threadpool *p, gc_task_fn fn, void *arg, int64_t n, int chunks);
/* Stop and join the workers; NULL is allowed. */
void gc_threadpool_destroy(gc_threadpool *p);

#endif
