/* failalloc.c - link-time wrappers that can fail the Nth host allocation and
 * track live allocations (see failalloc.h). Single-threaded by design: the
 * fault test runs the interpreter path, which allocates from one thread.
 */
#include "failalloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void __real_free(void *p);

void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);

static long fail_at;      /* 0: never */
static int sticky;
static long count;        /* allocations since arm */
static long injected;

/* ---- live set: open addressing on pointer values, tombstones on removal ------- */
#define TOMB ((uintptr_t)1)
static uintptr_t *slots;
static size_t cap, used, live; /* used counts live + tombstones */

/* Slot index for pointer p (linear probing). */
static size_t slot_hash(uintptr_t p) {
  uint64_t h = (uint64_t)p * UINT64_C(0x9e3779b97f4a7c15);
  return (size_t)(h >> 17) & (cap - 1);
}

/* Insert p without growing. */
static void set_put(uintptr_t p) {
  size_t i = slot_hash(p);
  while (slots[i] && slots[i] != TOMB) i = (i + 1) & (cap - 1);
  if (!slots[i]) used++;
  slots[i] = p;
  live++;
}

/* Rebuild the table at twice the live size (at least 1024 slots). */
static void set_grow(void) {
  size_t old_cap = cap;
  uintptr_t *old = slots;
  cap = 1024;
  while (cap < 4 * (live + 1)) cap *= 2;
  slots = __real_calloc(cap, sizeof *slots);
  if (!slots) {
    fprintf(stderr, "failalloc: cannot grow the live-allocation table\n");
    abort();
  }
  used = live = 0;
  for (size_t i = 0; i < old_cap; i++)
    if (old[i] && old[i] != TOMB) set_put(old[i]);
  __real_free(old);
}

/* Remember a live allocation. */
static void track(void *p) {
  if (!p) return;
  if (2 * (used + 1) > cap) set_grow();
  set_put((uintptr_t)p);
}

/* Forget an allocation; pointers the wrappers never saw are ignored. */
static void untrack(void *p) {
  if (!p || !cap) return;
  size_t i = slot_hash((uintptr_t)p);
  while (slots[i]) {
    if (slots[i] == (uintptr_t)p) {
      slots[i] = TOMB;
      live--;
      return;
    }
    i = (i + 1) & (cap - 1);
  }
}

/* Count an allocation attempt; 1 when it must fail. */
static int should_fail(void) {
  count++;
  if (fail_at > 0 && (count == fail_at || (sticky && count > fail_at))) {
    injected++;
    return 1;
  }
  return 0;
}

/* See failalloc.h for the public functions. */
void failalloc_arm(long n, int is_sticky) {
  fail_at = n;
  sticky = is_sticky;
  count = 0;
  injected = 0;
}

long failalloc_count(void) { return count; }
long failalloc_injected(void) { return injected; }
long failalloc_live(void) { return (long)live; }

/* malloc that can be made to fail; successful blocks are tracked. */
void *__wrap_malloc(size_t n) {
  if (should_fail()) return NULL;
  void *p = __real_malloc(n);
  track(p);
  return p;
}

/* calloc that can be made to fail. */
void *__wrap_calloc(size_t n, size_t size) {
  if (should_fail()) return NULL;
  void *p = __real_calloc(n, size);
  track(p);
  return p;
}

/* realloc that fails leaves the old block alone (C semantics). */
void *__wrap_realloc(void *p, size_t n) {
  if (should_fail()) return NULL;
  void *q = __real_realloc(p, n);
  if (q || n == 0) untrack(p);
  track(q);
  return q;
}

/* strdup that can be made to fail (libc's own malloc call is not wrapped). */
char *__wrap_strdup(const char *s) {
  if (should_fail()) return NULL;
  char *p = __real_strdup(s);
  track(p);
  return p;
}

/* strndup that can be made to fail. */
char *__wrap_strndup(const char *s, size_t n) {
  if (should_fail()) return NULL;
  char *p = __real_strndup(s, n);
  track(p);
  return p;
}

/* free that forgets the block. */
void __wrap_free(void *p) {
  untrack(p);
  __real_free(p);
}
