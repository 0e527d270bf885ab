/* settings.c - libgraphc_rt's environment variables (settings.h, docs/settings.md):
 * the only getenv calls of the runtime library. */
#include "runtime/settings.h"

#include <stdlib.h>
#include <string.h>

/* Read the runtime's variables; unset ones get their defaults. */
void gc_rt_settings_read(gc_rt_settings *s) {
  memset(s, 0, sizeof *s);
  s->cuda_driver = getenv("GRAPHC_CUDA_DRIVER");
  const char *sync = getenv("GRAPHC_CUDA_SYNC");
  s->cuda_sync = sync && strcmp(sync, "1") == 0;
  s->cpu_threads = getenv("GRAPHC_CPU_THREADS");
  const char *br = getenv("GRAPHC_CUDA_BRANCHES");
  s->cuda_branches = !(br && strcmp(br, "0") == 0);
}
