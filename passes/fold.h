/* fold.h - evaluating graphc ops on constant operands (passes/fold.c).
 *
 * The constant-folding pass evaluates ops with it, and so does the ONNX
 * importer (frontend/onnx_build.c), which folds shape arithmetic and
 * initializer preprocessing at import time. It is the compiler's own scalar
 * code, not the interpreter: the interpreter stays an independent oracle that
 * only backends, tests and the CLI run.
 *
 * A constant is held as a gc_cval: each element in its dtype (floats as the
 * double value they hold after rounding to the dtype; ints and bools as int64
 * wrapped into the dtype's range), one element when all are equal (splat).
 */
#ifndef GC_PASSES_FOLD_H
#define GC_PASSES_FOLD_H

#include "ir/ir.h"

typedef union gc_scalar {
  double f;              /* float dtypes: the value after rounding to the dtype */
  int64_t i;             /* ints: wrapped into the dtype's range; bool: 0 or 1 */
} gc_scalar;

/* A constant tensor: `n` elements are stored, 1 when splat (all equal), else numel. */
typedef struct gc_cval {
  gc_type type;
  int splat;
  int64_t n;
  gc_scalar *e;          /* malloc'd */
} gc_cval;

void gc_cval_free(gc_cval *c);

/* Evaluate `op` on constant operands: in[k] holds operand k (with that operand's
 * concrete type); out[r] is filled for each result r (free each with
 * gc_cval_free). A result that is not a splat may hold at most max_elems
 * elements. Evaluated: const, iota, the elementwise ops, reductions, argmax,
 * reshape, transpose, broadcast, concat, slice, pad, gather and split; never
 * param, contractions, convolutions, pools, im2col or the row normalizations.
 * Returns 1 when evaluated; 0 when not (an op it does not evaluate, a symbolic or
 * too large result, or a value the op rejects: a gather index out of range,
 * reported into d as a run-time error unless d is NULL); -1 out of memory. */
int gc_fold_eval(const gc_op *op, const gc_cval *in, gc_cval *out, int64_t max_elems,
                 gc_diags *d);

#endif
