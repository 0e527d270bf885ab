/* pipeline.c - the pass pipeline, as a list. See pipeline.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pipeline.h"

typedef struct pass_run {
  const graphc_compile_options_t *opts;
  gc_graph *g;
  gc_sbuf *stats;
  gc_diags *d;
  int failed;
} pass_run;

/* Is `name` in the comma-separated `list` (or is the list "all")? */
static int in_list(const char *list, const char *name) {
  if (!list || !*list) return 0;
  if (strcmp(list, "all") == 0) return 1;
  size_t n = strlen(name);
  for (const char *p = list; *p;) {
    const char *e = strchr(p, ',');
    size_t k = e ? (size_t)(e - p) : strlen(p);
    if (k == n && strncmp(p, name, n) == 0) return 1;
    p += k + (e ? 1 : 0);
  }
  return 0;
}

static void print_ir(const gc_graph *g, const char *when, const char *name) {
  gc_sbuf b = {0};
  gc_print_graph(&b, g);
  fprintf(stderr, "// ----- IR %s %s -----\n%s", when, name, b.data ? b.data : "");
  gc_sbuf_free(&b);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Run one pass with the manager's controls; structural passes are verified after. */
static void run_pass(pass_run *r, const char *name, gc_pass_fn fn, int structural) {
  if (r->failed || in_list(r->opts->disable_passes, name)) return;
  if (in_list(r->opts->print_before, name)) print_ir(r->g, "before", name);
  double t0 = now_ms();
  int changes = fn(r->g, r->d);
  double t1 = now_ms();
  if (changes < 0 || r->d->n_errors) {
    r->failed = 1;
    return;
  }
  if (structural && changes > 0 && gc_verify_graph(r->g, r->d) > 0) {
    gc_note_at(r->d, (gc_loc){0, 0}, "the IR became invalid after pass '%s' (a graphc bug)", name);
    r->failed = 1;
    return;
  }
  if (r->opts->time_passes)
    gc_sbuf_printf(r->stats, "pass %-24s %8.3f ms  %d changes\n", name, t1 - t0, changes);
  if (in_list(r->opts->print_after, name)) print_ir(r->g, "after", name);
}

const char *const gc_pass_names[] = {"dce", NULL};

int gc_run_pipeline(gc_graph *g, const graphc_compile_options_t *opts, gc_sbuf *stats,
                    gc_diags *d) {
  pass_run r = {.opts = opts, .g = g, .stats = stats, .d = d};
  if (opts->optimize) {
    run_pass(&r, "dce", gc_pass_dce, 1);
  }
  return r.failed ? -1 : 0;
}
