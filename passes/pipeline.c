/* pipeline.c - the pass pipeline, as a list. See pipeline.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "passes/pipeline.h"

const char *const gc_pass_names[] = {"empty", "precision", "layout", "conv-gemm", "reduce-split", "qdq-fold", "matmul-canon", "simplify", "fold", "cse", "recognize", "dce", NULL};
#define N_PASSES 12
_Static_assert(sizeof gc_pass_names / sizeof *gc_pass_names == N_PASSES + 1, "one entry per pass");

typedef struct pass_run {
  const graphc_compile_options_t *opts;
  gc_graph *g;
  gc_sbuf *stats;
  gc_diags *d;
  const char *stop_after; /* stop after the first run of this pass (NULL: never) */
  int round;              /* round of the repeated passes, 0 outside the loop */
  int rounds;             /* rounds run */
  int changes[N_PASSES];  /* per pass, summed over rounds */
  int failed, stopped;
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

/* Index of a pass name in gc_pass_names, or -1. */
static int pass_index(const char *name, size_t n) {
  for (int i = 0; gc_pass_names[i]; i++)
    if (strlen(gc_pass_names[i]) == n && strncmp(gc_pass_names[i], name, n) == 0) return i;
  return -1;
}

/* "empty, precision, layout, conv-gemm, reduce-split, qdq-fold, matmul-canon, simplify, fold, cse, recognize, dce" into b. */
static void pass_names_str(gc_sbuf *b) {
  for (int i = 0; gc_pass_names[i]; i++) gc_sbuf_printf(b, "%s%s", i ? ", " : "", gc_pass_names[i]);
}

/* Every entry of a comma-separated option must name a pass ("all" too when
 * allow_all); reports each unknown one with the valid names. Returns #errors. */
static int check_pass_list(const char *list, const char *option, int allow_all, gc_diags *d) {
  int errs = 0;
  for (const char *p = list; p && *p;) {
    const char *e = strchr(p, ',');
    size_t k = e ? (size_t)(e - p) : strlen(p);
    /* "fusion" is decided in codegen (codegen/fusion.c); it can be disabled here too. */
    int ok = k == 0 || pass_index(p, k) >= 0 || (allow_all && k == 3 && strncmp(p, "all", 3) == 0) ||
             (!allow_all && k == 6 && strncmp(p, "fusion", 6) == 0);
    if (!ok) {
      gc_sbuf names = {0};
      pass_names_str(&names);
      gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0},
                  "unknown pass '%.*s' in %s (passes: %s%s)", (int)k, p, option,
                  names.data ? names.data : "", allow_all ? "; or all" : ", fusion");
      gc_sbuf_free(&names);
      errs++;
    }
    p += k + (e ? 1 : 0);
  }
  return errs;
}

/* Print the IR to stderr as a file that re-parses on its own. */
static void print_ir(const pass_run *r, const char *when, const char *name) {
  gc_sbuf b = {0};
  gc_print_graph(&b, r->g);
  char round[32] = "";
  if (r->round) snprintf(round, sizeof round, " (round %d)", r->round);
  fprintf(stderr, "# ----- IR %s %s%s -----\nversion 1;\n\n%s", when, name, round,
          b.data ? b.data : "");
  gc_sbuf_free(&b);
}

/* Monotonic clock in milliseconds. */
static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Verify after a pass. Errors are copied into d: an invalid IR after a pass is a
 * graphc bug (INTERNAL), except when the verifier ran out of memory. The
 * verifier's warnings (values a pass left unused until dce) are dropped.
 * Returns #errors. */
static int verify_after(pass_run *r, const char *name) {
  gc_diags vd;
  gc_diags_init(&vd, r->d->file, r->d->source, r->d->source_len);
  int errs = gc_verify_graph(r->g, &vd), copied = 0;
  graphc_status_t st = vd.status == GRAPHC_STATUS_OUT_OF_MEMORY ? GRAPHC_STATUS_OUT_OF_MEMORY
                                                                 : GRAPHC_STATUS_INTERNAL;
  for (int i = 0; i < vd.n; i++)
    if (vd.items[i].level == GC_DIAG_ERROR) {
      gc_error_at(r->d, st, vd.items[i].loc, "%s", vd.items[i].msg);
      copied++;
    }
  if (errs && !copied)
    gc_error_at(r->d, st, (gc_loc){0, 0}, "%s verifying the IR after pass '%s'",
                st == GRAPHC_STATUS_OUT_OF_MEMORY ? "out of memory" : "errors", name);
  if (errs && st != GRAPHC_STATUS_OUT_OF_MEMORY)
    gc_note_at(r->d, (gc_loc){0, 0}, "the IR became invalid after pass '%s' (a graphc bug)", name);
  gc_diags_free(&vd);
  return errs;
}

/* Run one pass with the manager's controls; structural passes are verified
 * after they change something. A pass that reads the options and writes its own
 * stats line (precision) comes as fn_opts instead of fn. Returns the pass's
 * change count (0 if skipped). */
static int run_pass_with(pass_run *r, const char *name, gc_pass_fn fn,
                         int (*fn_opts)(gc_graph *, const graphc_compile_options_t *, gc_sbuf *, gc_diags *),
                         int structural) {
  if (r->failed || r->stopped) return 0;
  int changes = 0;
  /* "empty" legalizes (the backends run no op on an empty tensor): never skipped */
  if (!in_list(r->opts->disable_passes, name) || strcmp(name, "empty") == 0) {
    if (in_list(r->opts->print_before, name)) print_ir(r, "before", name);
    double t0 = now_ms();
    changes = fn ? fn(r->g, r->d) : fn_opts(r->g, r->opts, r->stats, r->d);
    double t1 = now_ms();
    if (changes < 0 || r->d->n_errors) {
      r->failed = 1;
      return 0;
    }
    if (structural && changes > 0 && verify_after(r, name) > 0) {
      r->failed = 1;
      return 0;
    }
    r->changes[pass_index(name, strlen(name))] += changes;
    if (r->opts->time_passes) {
      char label[64];
      snprintf(label, sizeof label, r->round ? "%s (round %d)" : "%s", name, r->round);
      gc_sbuf_printf(r->stats, "pass %-24s %8.3f ms  %d changes\n", label, t1 - t0, changes);
    }
    if (in_list(r->opts->print_after, name)) print_ir(r, "after", name);
  }
  if (r->stop_after && strcmp(r->stop_after, name) == 0) r->stopped = 1;
  return changes;
}

/* run_pass_with for the passes that take only the graph. */
static int run_pass(pass_run *r, const char *name, gc_pass_fn fn, int structural) {
  return run_pass_with(r, name, fn, NULL, structural);
}

/* The pipeline: canonicalize and recognize fused patterns until nothing changes,
 * then drop dead ops. */
static void run_passes(pass_run *r) {
  /* lowering choices first, so canonicalization sees their ops; the interpreter
   * (the float64 reference) keeps conv2d whole; the precision's dtypes before them,
   * so that every backend computes the same program */
  run_pass_with(r, "precision", NULL, gc_pass_precision, 1);
  if (r->opts->backend == GRAPHC_BACKEND_CUDA) run_pass_with(r, "layout", NULL, gc_pass_layout_opts, 1);
  if (r->opts->backend != GRAPHC_BACKEND_INTERP) run_pass(r, "conv-gemm", gc_pass_conv_gemm, 1);
  if (r->opts->backend == GRAPHC_BACKEND_CUDA) run_pass(r, "reduce-split", gc_pass_reduce_split, 1);
  /* fp8 matmuls from their dequantized operands, before matmul-canon puts a reshape
   * between them; not for the reference (it checks the backends against the graph as written) */
  if (r->opts->backend != GRAPHC_BACKEND_INTERP) run_pass(r, "qdq-fold", gc_pass_qdq_fold, 1);
  /* after conv-gemm (its matmuls are 3-D with a 2-D a: left alone), before the
   * canonicalization that merges the reshapes it leaves; not for the reference */
  if (r->opts->backend != GRAPHC_BACKEND_INTERP) run_pass(r, "matmul-canon", gc_pass_matmul_canon, 1);
  for (r->round = 1; r->round <= GC_PIPELINE_MAX_ROUNDS; r->round++) {
    r->rounds = r->round;
    int changed = run_pass(r, "simplify", gc_pass_simplify, 1);
    changed += run_pass(r, "fold", gc_pass_fold, 1);
    changed += run_pass(r, "cse", gc_pass_cse, 1);
    /* on the canonical form; what it writes is canonicalized in the next round */
    changed += run_pass_with(r, "recognize", NULL, gc_pass_recognize, 1);
    if (!changed || r->failed || r->stopped) break;
  }
  r->round = 0;
  run_pass(r, "dce", gc_pass_dce, 1);
}

/* Check the option names, run the passes, record ops before/after. */
int gc_run_pipeline_until(gc_graph *g, const graphc_compile_options_t *opts,
                          const char *stop_after, gc_sbuf *stats, gc_diags *d) {
  int errs = check_pass_list(opts->print_before, "--print-before", 1, d) +
             check_pass_list(opts->print_after, "--print-after", 1, d) +
             check_pass_list(opts->disable_passes, "--disable-pass", 0, d);
  if (stop_after && pass_index(stop_after, strlen(stop_after)) < 0) {
    gc_sbuf names = {0};
    pass_names_str(&names);
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0},
                "unknown pass '%s' in --after (passes: %s)", stop_after,
                names.data ? names.data : "");
    gc_sbuf_free(&names);
    errs++;
  }
  if (gc_precision_check(opts, d) != 0) errs++;
  if (errs) return -1;
  pass_run r = {.opts = opts, .g = g, .stats = stats, .d = d, .stop_after = stop_after};
  int before = g->n_ops;
  run_pass(&r, "empty", gc_pass_empty, 1);  /* also at -O0 */
  if (opts->optimize) run_passes(&r);
  if (r.failed) return -1;
  if (!opts->optimize) {
    gc_sbuf_printf(stats, "pipeline: %d ops before, %d after (optimizations off%s)\n", before,
                   g->n_ops, r.changes[0] ? "; empty tensors legalized" : "");
  } else {
    gc_sbuf_printf(stats, "pipeline: %d ops before, %d after (%d round%s;", before, g->n_ops,
                   r.rounds, r.rounds == 1 ? "" : "s");
    for (int i = 0; i < N_PASSES; i++)
      gc_sbuf_printf(stats, " %s %d%s", gc_pass_names[i], r.changes[i], i + 1 < N_PASSES ? "," : "");
    gc_sbuf_puts(stats, " changes)\n");
  }
  return 0;
}

/* The whole pipeline. */
int gc_run_pipeline(gc_graph *g, const graphc_compile_options_t *opts, gc_sbuf *stats,
                    gc_diags *d) {
  return gc_run_pipeline_until(g, opts, NULL, stats, d);
}
