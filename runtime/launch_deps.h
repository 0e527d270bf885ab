/* launch_deps.h - the dependency graph of a launch plan's launches, for building a
 * CUDA graph whose independent kernels may run at once (runtime/cuda_context.c).
 * Pure: no driver, no device (tests/test_launch_deps.c).
 */
#ifndef GC_LAUNCH_DEPS_H
#define GC_LAUNCH_DEPS_H

#include "runtime/launch_plan.h"

typedef struct gc_launch_deps {
  int n;          /* launches from .. to - 1, numbered 0 .. n - 1 */
  int *off;       /* off[j] .. off[j + 1] - 1 index idx: the launches j waits for (each < j) */
  int *idx;
  int branches;   /* 1: not a chain (some launch does not wait for the one before it) */
} gc_launch_deps;

/* Build the graph of launches [from, to) of p (a checked plan). 0, or -1 when out of
 * memory (g zeroed). */
int gc_launch_deps_build(const gc_launch_plan *p, int from, int to, gc_launch_deps *g);
void gc_launch_deps_free(gc_launch_deps *g);

#endif /* GC_LAUNCH_DEPS_H */
