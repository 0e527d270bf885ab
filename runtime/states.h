/* states.h - the memory of states: named buffers an executable keeps between runs (a
 * KV cache), declared in a graph with `state %k: T = "name";` and updated in place by
 * cache_write.
 *
 * A store holds states by name: each zero when made, with its dtype and shape. Every
 * executable has one; executables that share a store (graphc_executable_share_states:
 * the prefill and decode executables of one model) see the same memory for a name. The
 * store is reference counted: the last executable using it frees it. Memory is host
 * memory (calloc) or the device memory of a backend (ops given when the store is made:
 * the CUDA executor's, runtime/cuda_exec.c, which keep the device's primary context
 * alive until the store is freed). Thread safety: a store's table is guarded by a mutex;
 * the bytes are the executables' to order (runs of executables sharing a store must not
 * overlap: the API says so).
 */
#ifndef GC_STATES_H
#define GC_STATES_H

#include <stddef.h>
#include <stdint.h>

#include "runtime/launch_plan.h"

typedef struct gc_state_mem_ops {
  const char *kind;  /* "host", "cuda": stores of different kinds never share */
  /* bytes of zeroed memory at *addr */
  int (*alloc)(void *u, size_t bytes, uint64_t *addr, gc_diags *d);
  void (*free)(void *u, uint64_t addr);
  int (*read)(void *u, void *dst, uint64_t src, size_t bytes, gc_diags *d);
  int (*write)(void *u, uint64_t dst, const void *src, size_t bytes, gc_diags *d);
  int (*zero)(void *u, uint64_t addr, size_t bytes, gc_diags *d);
  void (*release)(void *u);  /* the store is done with u (may be NULL) */
} gc_state_mem_ops;

typedef struct gc_states gc_states;

/* A new, empty store (one reference) whose memory the ops manage; NULL ops: host
 * memory. NULL after reporting out of memory (u is then released). */
gc_states *gc_states_new(const gc_state_mem_ops *ops, void *u, gc_diags *d);
void gc_states_ref(gc_states *s);
void gc_states_unref(gc_states *s);   /* NULL is fine */
const char *gc_states_kind(const gc_states *s);

/* The memory of the state `want` names: the store's (its dtype and shape must be
 * `want`'s: else an error naming both) or new zeroed memory added to the store. */
int gc_states_get(gc_states *s, const gc_lp_state *want, uint64_t *addr, gc_diags *d);

/* The store's states, for the API: count, name and type of entry i. */
int gc_states_count(gc_states *s);
int gc_states_info(gc_states *s, int i, const char **name, gc_dtype *dtype, int *rank,
                   int64_t *dims);
/* Copy state `name` to or from host memory of exactly its size; zero every state. */
int gc_states_read(gc_states *s, const char *name, void *dst, size_t bytes, gc_diags *d);
int gc_states_write(gc_states *s, const char *name, const void *src, size_t bytes, gc_diags *d);
int gc_states_zero(gc_states *s, gc_diags *d);

#endif
