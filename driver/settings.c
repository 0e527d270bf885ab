/* settings.c - the compiler's environment variables (settings.h, docs/settings.md):
 * with runtime/settings.c, the only getenv calls of the library. */
#include "driver/settings.h"

#include <stdlib.h>
#include <string.h>

/* 1 when variable `name` is set to "0" (the kernel choices' "off"). */
static int is_zero(const char *name) {
  const char *v = getenv(name);
  return v && strcmp(v, "0") == 0;
}

/* GRAPHC_COMPILE_THREADS: a positive integer (at most 64); anything else is ignored (0). */
static int compile_threads(void) {
  const char *env = getenv("GRAPHC_COMPILE_THREADS");
  char *end = NULL;
  long v = env && *env ? strtol(env, &end, 10) : 0;
  if (v < 1 || !end || *end) return 0;
  return v > 64 ? 64 : (int)v;
}

void gc_settings_read(gc_settings *s) {
  memset(s, 0, sizeof *s);
  s->no_wgmma = is_zero("GRAPHC_WGMMA");
  s->no_tma = is_zero("GRAPHC_TMA");
  s->no_flash = is_zero("GRAPHC_FLASH");
  s->no_simt_blocked = is_zero("GRAPHC_SIMT");
  s->no_prologue = is_zero("GRAPHC_PROLOGUE");
  s->no_row_groups = is_zero("GRAPHC_ROW_GROUPS");
  s->no_tf32_round = is_zero("GRAPHC_TF32_ROUND");
  const char *lv = getenv("GRAPHC_LOOP_VECS");
  s->loop_vecs = lv ? atoi(lv) : 0;
  s->cuda_home = getenv("CUDA_HOME");
  s->cuda_path = getenv("CUDA_PATH");
  s->ptxas = getenv("GRAPHC_PTXAS");
  s->libdevice = getenv("GRAPHC_LIBDEVICE");
  s->tmpdir = getenv("TMPDIR");
  s->compile_threads = compile_threads();
  s->cache = getenv("GRAPHC_CACHE");
  s->cache_dir = getenv("GRAPHC_CACHE_DIR");
  s->cache_max_mb = getenv("GRAPHC_CACHE_MAX_MB");
  s->xdg_cache_home = getenv("XDG_CACHE_HOME");
  s->home = getenv("HOME");
  s->cpu_passes = getenv("GRAPHC_CPU_PASSES");
  s->cpu_no_dedup = is_zero("GRAPHC_CPU_DEDUP");
  gc_rt_settings_read(&s->rt);
}

/* The CUDA knobs only turn features off; the host target has only the prologue. */
void gc_settings_apply_target(const gc_settings *s, kir_target *t) {
  t->prologue = t->prologue && !s->no_prologue;
  if (t->kind != KIR_TARGET_CUDA) return;
  t->wgmma = t->wgmma && !s->no_wgmma;
  t->tma = t->tma && t->wgmma && !s->no_tma;
  t->attention = t->attention && !s->no_flash;
  t->simt_blocked = t->simt_blocked && !s->no_simt_blocked;
  t->row_groups = t->row_groups && !s->no_row_groups;
  t->tf32_round = t->tf32_round && !s->no_tf32_round;
  if (s->loop_vecs) t->loop_vecs = s->loop_vecs;
}

void gc_settings_toolchain(const gc_settings *s, gc_toolchain *tc) {
  memset(tc, 0, sizeof *tc);
  tc->cuda_home = s->cuda_home;
  tc->cuda_path = s->cuda_path;
  tc->ptxas = s->ptxas;
  tc->libdevice = s->libdevice;
  tc->tmpdir = s->tmpdir;
  tc->compile_threads = s->compile_threads;
}
