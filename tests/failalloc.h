/* failalloc.h - allocation-failure injection for the fault tests.
 *
 * tests/failalloc.c defines __wrap_malloc, __wrap_calloc, __wrap_realloc,
 * __wrap_strdup, __wrap_strndup and __wrap_free. A program linked with
 *   -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=strndup,--wrap=free
 * routes every such call made by ITS OWN objects through them (the wrap
 * applies only to the objects being linked, so the library sources are
 * compiled into the test program itself). Allocations are counted from
 * failalloc_arm(); the Nth one fails (returns NULL), and with `sticky` every
 * one after it too. Live allocations are tracked to find leaks.
 */
#ifndef GC_FAILALLOC_H
#define GC_FAILALLOC_H

#include <stddef.h>

/* Fail allocation number n (1-based) counted from now; n = 0 disarms. With
 * sticky != 0, every later allocation fails as well. */
void failalloc_arm(long n, int sticky);
/* Allocations attempted since the last arm. */
long failalloc_count(void);
/* Allocations that were made to fail since the last arm. */
long failalloc_injected(void);
/* Allocations made through the wrappers and not yet freed. */
long failalloc_live(void);

/* The wrappers, usable as hooks (cJSON_InitHooks). */
void *__wrap_malloc(size_t n);
void __wrap_free(void *p);

#endif
