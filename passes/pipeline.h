/* pipeline.h - the pass manager: named graph passes run in a fixed order.
 *
 *   empty                     once, always (also -O0; ops on tensors with a zero dim)
 *   precision                 once (f16 / bf16 dtypes and casts; --precision)
 *   layout, conv-gemm,        once each (layout and reduce-split for the GPU,
 *   reduce-split              conv-gemm not for the interpreter backend), then
 *   qdq-fold, matmul-canon    once each (not for the interpreter backend), then
 *   simplify -> fold -> cse   repeated until none changes anything (at most
 *   -> recognize              GC_PIPELINE_MAX_ROUNDS rounds), then
 *   dce                       once
 *
 * Each pass is one file in passes/. A pass returns the number of changes it
 * made (>= 0) or -1 after reporting errors to `d`. The verifier runs after
 * every structural pass that changed something; --print-before/--print-after=
 * NAME|all (comma-separated lists allowed) print the IR to stderr as
 * re-parseable .graph text under a `# ----- IR after NAME -----` comment;
 * --disable-pass=NAME,... skips passes; --time-passes records each pass's time
 * in the stats. Unknown pass names in these options are an error
 * (GRAPHC_STATUS_INVALID_ARGUMENT) reported before any pass runs. Every run
 * records "ops before/after" in the stats.
 */
#ifndef GC_PIPELINE_H
#define GC_PIPELINE_H

#include "ir/ir.h"

#define GC_PIPELINE_MAX_ROUNDS 4

typedef int (*gc_pass_fn)(gc_graph *g, gc_diags *d);

/* passes/empty.c: ops with an empty result as consts, reductions over empty axes and
 * matmuls with K = 0 as splats of their identity, concat without its empty operands. */
int gc_pass_empty(gc_graph *g, gc_diags *d);
/* passes/precision.c: with opts->precision f16 / bf16, matmuls, convs and the
 * elementwise chains between them computed in that type (casts at the boundaries);
 * a line in stats. Nothing changes for f32 and tf32. */
int gc_pass_precision(gc_graph *g, const graphc_compile_options_t *opts, gc_sbuf *stats, gc_diags *d);
/* Check opts->precision and the opts->keep_f32 regex: 0, or -1 after an
 * INVALID_ARGUMENT error naming the regex and regerror's text. */
int gc_precision_check(const graphc_compile_options_t *opts, gc_diags *d);
/* "f32", "tf32", "f16", "bf16", "fp8"; NULL for a value outside graphc_precision_t. */
const char *gc_precision_name(graphc_precision_t p);
/* The precision a name gives (the inverse of gc_precision_name): 0, or -1 for none. */
int gc_precision_parse(const char *s, graphc_precision_t *out);
/* passes/precision_fp8.c: the precision pass under GRAPHC_PRECISION_FP8 (linears as fp8
 * matmuls, scales per channel and per row); a line in stats. */
int gc_precision_fp8(gc_graph *g, const graphc_compile_options_t *opts, gc_sbuf *stats, gc_diags *d);
/* Would gc_precision_fp8 quantize matmul `op` (before --keep-f32)? 1: yes; -1: a linear it
 * keeps (K no multiple of 16); 0: not a linear (or not a matmul). */
int gc_fp8_linear(const gc_op *op);

/* passes/layout.c: conv2d (groups 1) as an NHWC implicit GEMM; transposes sunk
 * below elementwise ops so that NHWC chains meet and cancel. */
int gc_pass_layout(gc_graph *g, gc_diags *d);
/* The same with the options: f32 convs too when tf32 is on. */
int gc_pass_layout_opts(gc_graph *g, const graphc_compile_options_t *opts, gc_sbuf *stats, gc_diags *d);
/* passes/conv_gemm.c: conv2d (groups 1) as reshape(matmul(reshape(w), im2col(x))). */
int gc_pass_conv_gemm(gc_graph *g, gc_diags *d);
/* passes/reduce_split.c: a reduction over reduced dims on both sides of a kept
 * one, innermost dims reduced, as a row reduction then a column one. */
int gc_pass_reduce_split(gc_graph *g, gc_diags *d);
/* passes/qdq_fold.c: matmul(dequantize(a8, sa), dequantize(b8, sb)) of fp8 a8, b8 with
 * per-tensor / per-row sa and per-tensor / per-column sb as matmul(a8, b8) * sa * sb. */
int gc_pass_qdq_fold(gc_graph *g, gc_diags *d);
/* passes/matmul_canon.c: matmul(a [.., M, K], w [K, N]) as reshape(matmul(a as
 * [R, K], w)), the reshape sunk below the elementwise ops reading it. */
int gc_pass_matmul_canon(gc_graph *g, gc_diags *d);
/* passes/simplify.c: algebraic identities (x*1, neg(neg(x)), transpose and
 * reshape chains, exact cast chains, select on a constant condition, ...). */
int gc_pass_simplify(gc_graph *g, gc_diags *d);
/* passes/fold.c: evaluate elementwise/reshape/transpose/broadcast ops whose
 * operands are all consts into consts (lists up to 4096 elements; splats any size). */
int gc_pass_fold(gc_graph *g, gc_diags *d);
/* passes/cse.c: merge ops with equal opcode, operands, attributes and result types. */
int gc_pass_cse(gc_graph *g, gc_diags *d);
/* passes/recognize.c: exporters' decomposed gelu, silu, layernorm, rmsnorm and
 * softmax as the fused ops; attention scores normalized for the fused attention
 * kernel (q/k scales folded into one after the matmul, K's transpose as the
 * transpose_b flag). A stats line with a count per pattern. */
int gc_pass_recognize(gc_graph *g, const graphc_compile_options_t *opts, gc_sbuf *stats, gc_diags *d);
/* passes/dce.c: remove ops none of whose results are used. */
int gc_pass_dce(gc_graph *g, gc_diags *d);

/* Run the pipeline on a verified graph (normally specialized; the passes also
 * accept symbolic dims). Returns 0 or -1. */
int gc_run_pipeline(gc_graph *g, const graphc_compile_options_t *opts, gc_sbuf *stats,
                    gc_diags *d);
/* The same, stopping right after the first run of pass `stop_after` (or where it
 * would have run when disabled); NULL runs everything. An unknown name is an
 * error like the option names. */
int gc_run_pipeline_until(gc_graph *g, const graphc_compile_options_t *opts,
                          const char *stop_after, gc_sbuf *stats, gc_diags *d);

/* Names of all passes in pipeline order, NULL-terminated (for --help and checks). */
extern const char *const gc_pass_names[];

/* ---- passes/dot.c: Graphviz output ------------------------------------------------ */
/* Optional grouping of ops (fusion): ops of group N >= 0 are drawn inside
 * `subgraph cluster_N`; -1 means no group. label_of may be NULL ("group N"). */
typedef struct gc_dot_groups {
  int (*group_of)(void *user, const gc_op *op);
  const char *(*label_of)(void *user, int group);
  void *user;
} gc_dot_groups;

/* Append g as a Graphviz digraph: args, params, consts and ops as nodes (op name
 * and result types), one edge per operand, a return node. groups may be NULL. */
void gc_dot_graph(gc_sbuf *b, const gc_graph *g, const gc_dot_groups *groups);

#endif
