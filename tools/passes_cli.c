/* passes_cli.c - the `dot` command of the graphc tool: the entry graph after
 * the pass pipeline (or after one pass) as Graphviz text.
 *
 *   graphc dot FILE [--bind S=N]... [--entry @g] [--after=PASS] [-o OUT.dot]
 *              [-O0] [--disable-pass=P] [--print-after=P] [--stats]
 *
 * The model is loaded (and specialized when dims are bound) through the public
 * API; its canonical text is then parsed into a private module that the
 * pipeline rewrites, so the model itself is never changed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/fusion.h"
#include "codegen/lower.h"
#include "driver/settings.h"
#include "frontend/parser.h"
#include "passes/pipeline.h"
#include "tools/cli.h"

static const char *const usage_dot_head =
    "usage: graphc dot FILE [options]\n"
    "Write the entry graph as Graphviz (ops as nodes with their result types, one edge per\n"
    "operand) after the optimization pipeline.\n\noptions:\n"
    "  --after=PASS      stop after the first run of PASS (simplify, fold, cse, recognize, dce)\n"
    "  -o, --output F    write to F instead of stdout\n"
    "  -O0               no optimization passes (the graph as written)\n"
    "  --disable-pass=P  skip pass P (comma-separated list)\n"
    "  --print-after=P   also print the IR after pass P (or all) to stderr\n"
    "  --precision P     f32 | tf32 | f16 | bf16 | fp8 (the precision pass; default f32)\n"
    "  --keep-f32=REGEX  ops whose result name matches REGEX stay f32\n"
    "  --stats           print the pipeline statistics to stderr\n";

/* Take --after=PASS / --after PASS out of argv (cli_parse does not know it).
 * rest gets the other arguments; returns their count, or -1 when the value is missing. */
static int strip_after(int argc, char **argv, char **rest, const char **after) {
  int n = 0;
  for (int i = 0; i < argc; i++) {
    if (strncmp(argv[i], "--after=", 8) == 0) {
      *after = argv[i] + 8;
    } else if (strcmp(argv[i], "--after") == 0) {
      if (i + 1 >= argc) return -1;
      *after = argv[++i];
    } else {
      rest[n++] = argv[i];
    }
  }
  return n;
}

/* Fusion groups as dot clusters: the group writing an op (none for views). */
static int fusion_group_of(void *user, const gc_op *op) {
  const gc_fusion *f = user;
  if (op->id < 0 || op->id >= f->n_op_ids) return -1;
  int k = f->home[op->id];
  return k >= 0 && f->groups[k].kind != GC_FUSION_VIEW ? k : -1;
}

/* Cluster label: kernel name and group kind. */
static const char *fusion_label_of(void *user, int group) {
  const gc_fusion *f = user;
  const gc_fusion_group *gr = &f->groups[group];
  return gc_arena_printf((gc_arena *)&f->arena, "%s (%s)", gr->name, gc_fusion_kind_name(gr->kind));
}

/* Run the pipeline on a private copy of the model's text and write the dot. */
static int dot_of_text(const cli_opts *o, const char *after, const char *text) {
  gc_diags d;
  gc_diags_init(&d, o->file, text, strlen(text));
  gc_sbuf stats = {0}, dot = {0};
  gc_module *mod = gc_parse(o->file, text, strlen(text), &d);
  gc_graph *g = NULL;
  if (mod && gc_verify_module(mod, &d) == 0 && !d.n_errors)
    g = o->entry ? gc_module_find_graph(mod, o->entry) : mod->graphs[0];
  if (g && gc_run_pipeline_until(g, &o->copts, after, &stats, &d) == 0) {
    /* After the whole pipeline of a fully bound graph, draw the kernels (sm_90 plan). */
    gc_fusion *fus = NULL;
    int bound = 1; /* --bind gave every dim a value */
    for (int i = 0; i < g->n_args; i++) bound &= gc_type_is_concrete(&g->args[i]->type);
    for (const gc_op *op = g->first; op; op = op->next)
      for (int i = 0; i < op->n_results; i++) bound &= gc_type_is_concrete(&op->results[i]->type);
    if (!after && bound && gc_lower_fusion_enabled(&o->copts)) {
      kir_target t;
      kir_target_cuda(&t, 90);
      gc_settings s;
      gc_settings_read(&s);
      gc_settings_apply_target(&s, &t);
      fus = gc_fusion_plan(g, &t, 1);
    }
    gc_dot_groups groups = {fusion_group_of, fusion_label_of, fus};
    gc_dot_graph(&dot, g, fus ? &groups : NULL);
    gc_fusion_free(fus);
  }
  int rc = 0;
  if (d.n_errors) {
    char *r = gc_diags_render(&d);
    fputs(r ? r : "graphc: error\n", stderr);
    free(r);
    rc = d.status == GRAPHC_STATUS_INTERNAL ? 2 : 1;
  } else if (!g || dot.failed || !dot.data) {
    fprintf(stderr, "graphc: error: %s\n", g ? "out of memory" : "no entry graph");
    rc = g ? 2 : 1;
  } else {
    FILE *f = o->output ? fopen(o->output, "w") : stdout;
    int ok = f && fwrite(dot.data, 1, dot.len, f) == dot.len;
    if (f && f != stdout && fclose(f) != 0) ok = 0;
    if (!ok) {
      fprintf(stderr, "graphc: error: cannot write '%s': %s\n", o->output ? o->output : "stdout",
              strerror(errno));
      rc = 1;
    }
  }
  if (rc == 0 && o->stats) fprintf(stderr, "# stats\n%s", stats.data ? stats.data : "");
  gc_sbuf_free(&stats);
  gc_sbuf_free(&dot);
  gc_module_free(mod);
  gc_diags_free(&d);
  return rc;
}

/* graphc dot: load, bind, run the pipeline (up to --after), write Graphviz. */
int cli_cmd_dot(int argc, char **argv, const char *usage_common) {
  char usage[4096];
  snprintf(usage, sizeof usage, "%s%s", usage_dot_head, usage_common);
  char **rest = malloc((size_t)(argc + 1) * sizeof *rest);
  if (!rest) return 2;
  const char *after = NULL;
  int n = strip_after(argc, argv, rest, &after);
  cli_opts o;
  if (n < 0) fprintf(stderr, "graphc: option --after needs a value\n");
  if (n < 0 || cli_parse(n, rest, &o, usage) != 0) {
    free(rest);
    return 1;
  }
  free(rest);
  if (o.help) return 0;
  graphc_context_t *ctx;
  if (graphc_context_create(&ctx) != GRAPHC_STATUS_OK) return 2;
  graphc_error_t err;
  graphc_model_t *m = NULL;
  char *text = NULL;
  graphc_status_t st = cli_load(ctx, &o, &m, &err);
  if (st == GRAPHC_STATUS_OK && o.n_binds) st = graphc_model_specialize(m, &err);
  if (st == GRAPHC_STATUS_OK) st = graphc_model_print(m, &text, &err);
  int rc = cli_report(ctx, st, &err);
  if (rc == 0) rc = dot_of_text(&o, after, text);
  graphc_free(text);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
  return rc;
}
