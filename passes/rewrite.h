/* rewrite.h - shared machinery of the rewriting passes (simplify, fold, cse).
 *
 * A rewriting pass walks the ops once in program order. Every value it
 * replaces goes into a forwarding map (by value id) instead of rewriting all
 * uses at once (gc_value_replace_uses is a scan per call); each op's operands
 * are resolved through the map when the walk reaches it, and the graph's
 * outputs at the end. SSA uses follow their definition in program order, so one
 * walk sees every use. The whole pass is O(ops).
 *
 * New ops keep the source location of the op they replace and, when they take
 * over its single result, its name (so printed IR stays readable); other new
 * values get fresh numeric names from a counter seeded by one scan of the graph.
 *
 * Constants: a const op's elements are read into a gc_cval in the element's
 * dtype (floats as the double value they hold after rounding to the dtype; ints
 * and bools as int64 wrapped into the dtype's range). fold.c owns the scalar
 * semantics; simplify.c reads splat constants through it.
 */
#ifndef GC_PASSES_REWRITE_H
#define GC_PASSES_REWRITE_H

#include "passes/fold.h"
#include "passes/pipeline.h"

/* ---- forwarding map and op construction (rewrite.c) ------------------------------ */
typedef struct gc_rewriter {
  gc_graph *g;
  gc_diags *d;
  gc_value **fwd;        /* fwd[id]: replacement of value id, NULL when none */
  int n_fwd;             /* ids below this can be forwarded (values that existed at init) */
  long long next_name;   /* next fresh numeric value name */
  int changes;           /* rewrites done, the pass's return value */
  int oom;               /* an allocation failed; reported by gc_rw_finish */
} gc_rewriter;

/* Set up for one pass over g; returns 0, or -1 after reporting out of memory. */
int gc_rw_init(gc_rewriter *rw, gc_graph *g, gc_diags *d);
/* Resolve the op's operands through the map (call first when the walk reaches an op). */
void gc_rw_resolve_operands(gc_rewriter *rw, gc_op *op);
/* Uses of `from` (later ops and the outputs) become `to`. */
void gc_rw_forward(gc_rewriter *rw, gc_value *from, gc_value *to);
/* Forward every result of `op` to `to[i]` and unlink op; counts one change. */
void gc_rw_replace_op(gc_rewriter *rw, gc_op *op, gc_value *const *to);
/* Resolve the outputs, free the map; returns the change count or -1 (OOM reported). */
int gc_rw_finish(gc_rewriter *rw);
/* A value name not used in the graph (counter, no scan). */
const char *gc_rw_fresh_name(gc_rewriter *rw);
/* A new one-result op of `type` inserted before `before`, at `loc`, with a copy of
 * attrs (n of them); its result is named `name` (NULL: fresh). NULL on OOM (flagged). */
gc_op *gc_rw_new_op(gc_rewriter *rw, gc_opcode opc, gc_op *before, int n_operands,
                    gc_value *const *operands, int n_attrs, const gc_named_attr *attrs,
                    const gc_type *type, const char *name, gc_loc loc);
/* Replace `op` (one result) by a new op computing the same value; the new op takes
 * op's place, location and result name. Returns the new op or NULL (OOM flagged). */
gc_op *gc_rw_replace_with_new(gc_rewriter *rw, gc_op *op, gc_opcode opc, int n_operands,
                              gc_value *const *operands, int n_attrs,
                              const gc_named_attr *attrs);

/* ---- conv2d as a GEMM (conv_gemm.c, layout.c) ------------------------------------------ */
/* Can conv2d `op` be a GEMM: groups 1, NCHW and every shape concrete? */
int gc_conv_gemm_ok(const gc_op *op);
/* Is its window 1x1 with stride 1 and no padding (x read through a reshape)? */
int gc_conv_is_pointwise(const gc_op *op);
/* The im2col attributes of conv2d `op` into at (kernel from its weights, then stride,
 * padding and dilation when present; layout when not NULL). Returns how many (<= 5). */
int gc_conv_im2col_attrs(gc_rewriter *rw, const gc_op *op, const char *layout, gc_named_attr *at);
/* A one-result reshape of v to (rank, dims), before `before`. NULL on OOM (flagged). */
gc_value *gc_rw_reshape(gc_rewriter *rw, gc_op *before, gc_value *v, int rank, const int64_t *dims);

/* Attribute builders (arena of rw->g). */
gc_attr gc_rw_attr_int(int64_t v);
gc_attr gc_rw_attr_dtype(gc_dtype t);
/* A list of n ints, or an INT-kind attr with u.list.items NULL on OOM (flagged). */
gc_attr gc_rw_attr_ints(gc_rewriter *rw, const int64_t *v, int n);

/* ---- constants (fold.c; gc_cval and gc_scalar in passes/fold.h) --------------------------- */
/* Read a const op's value (concrete shape required). 1 ok, 0 not readable, -1 OOM. */
int gc_cval_read(const gc_op *op, gc_cval *out);
/* Is v defined by a const op whose elements are all equal? Then *s is that element. */
int gc_value_const_splat(const gc_value *v, gc_scalar *s);
/* Replace `op` (one result, same type as c) by a const op holding c. Returns the
 * new op, or NULL when c cannot be written as an attribute (ints outside the
 * literal range (-2^62, 2^62)) or out of memory (flagged in rw). */
gc_op *gc_fold_replace_by_const(gc_rewriter *rw, gc_op *op, const gc_cval *c);

#endif
