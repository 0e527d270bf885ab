/* pipeline.h - the pass manager: named graph passes run in a fixed order.
 *
 * Each pass is one file in passes/. A pass returns the number of changes it
 * made (>= 0) or -1 after reporting errors to `d`. The verifier runs after
 * every structural pass; --print-before/--print-after=NAME|all print the IR
 * (re-parseable .graph text) to stderr; --disable-pass=NAME skips a pass;
 * --time-passes records each pass's time in the stats.
 */
#ifndef GC_PIPELINE_H
#define GC_PIPELINE_H

#include "../ir/ir.h"

typedef int (*gc_pass_fn)(gc_graph *g, gc_diags *d);

/* passes/dce.c: remove ops none of whose results are used. */
int gc_pass_dce(gc_graph *g, gc_diags *d);

/* Run the pipeline on a specialized, verified graph. Returns 0 or -1. */
int gc_run_pipeline(gc_graph *g, const graphc_compile_options_t *opts, gc_sbuf *stats,
                    gc_diags *d);

/* Names of all passes in pipeline order, NULL-terminated (for --help and checks). */
extern const char *const gc_pass_names[];

#endif
