/* interp_internal.h - shared pieces of the reference interpreter.
 *
 *   interp.c     driver (value table, use counts, outputs), scalar conversions,
 *                element loads/stores, the dispatch table built from ops.def
 *   interp_ops.c sources, elementwise ops, data movement
 *   interp_nn.c  reductions, softmax, norms, matmul, conv2d, pools
 *
 * Every value lives in its own dtype, row-major and contiguous. Float math is
 * done in double and rounded once when stored; integer math is exact int64
 * (wrapping) and truncated to the dtype when stored.
 */
#ifndef GC_INTERP_INTERNAL_H
#define GC_INTERP_INTERNAL_H

#include <math.h>

#include "interp/interp.h"

#define GC_INTERP_HIDDEN __attribute__((visibility("hidden")))

/* A tensor during interpretation: the value's (concrete) type and its data. */
typedef struct itensor {
  const gc_type *type;
  void *data;
  int64_t numel;
} itensor;

/* What every kernel can see. */
typedef struct interp_ctx {
  const gc_graph *g;
  const gc_safetensors *weights;
  gc_diags *d;
  const gc_interp_state *states;
  int n_states;
} interp_ctx;

/* A kernel reads `in` (op->n_operands tensors) and fills `out` (op->n_results
 * tensors whose buffers the driver allocated and zeroed; PARAM instead points
 * its result at the weights, STATE at the state's memory and CACHE_WRITE at its first
 * operand's, which it updates in place). Returns OK or the status of the error it reported. */
typedef graphc_status_t (*interp_eval_fn)(interp_ctx *cx, const gc_op *op, const itensor *in,
                                          itensor *out);

#define OP(ID, NAME, MIN_IN, MAX_IN, N_OUT, ATTRS, RULE, EVAL, KIND) \
  GC_INTERP_HIDDEN graphc_status_t interp_##EVAL(interp_ctx *cx, const gc_op *op,       \
                                                 const itensor *in, itensor *out);
#include "ir/ops.def"
#undef OP

/* ---- element access ------------------------------------------------ */
/* Loads and stores of elements: gc_load_f64 / gc_store_f64 / gc_load_i64 / gc_store_i64
 * (ir/dtype.h). */
/* Store an attribute number (int, float or bool) into element i of dtype t:
 * INT attributes stay exact, FLOAT ones convert like cast. */
GC_INTERP_HIDDEN void interp_store_attr(void *base, gc_dtype t, int64_t i, const gc_attr *a);

/* ---- helpers for kernels (interp.c) ------------------------------------------- */
/* malloc that reports out of memory at the op (count x size, overflow checked). */
GC_INTERP_HIDDEN void *interp_alloc(interp_ctx *cx, const gc_op *op, size_t count, size_t size);
/* A whole tensor widened to double (malloc'd; NULL after reporting OOM). */
GC_INTERP_HIDDEN double *interp_to_f64(interp_ctx *cx, const gc_op *op, const itensor *t);
/* Normalize a possibly negative axis against rank. */
GC_INTERP_HIDDEN int interp_axis(int64_t axis, int rank);
/* Row-major strides of a type (elements). */
GC_INTERP_HIDDEN void interp_strides(const gc_type *t, int64_t *strides);
/* Strides of `in` seen through numpy broadcasting to `out` (right-aligned, 0 where
 * in has no such dim or size 1). */
GC_INTERP_HIDDEN void interp_bcast_strides(const gc_type *in, const gc_type *out,
                                           int64_t *strides);
/* Advance the multi-index idx over dims (row-major) and the n offsets that move by
 * strides[k][dim]; returns 0 after the last element. */
GC_INTERP_HIDDEN int interp_next(int rank, const int64_t *dims, int64_t *idx, int n,
                                 int64_t *offs, int64_t (*strides)[GC_MAX_RANK]);

/* maximum as the ops define it: NaN if either is NaN; +0 is above -0. */
static inline double interp_fmax(double a, double b) {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  if (a == b) return signbit(a) ? b : a;
  return a > b ? a : b;
}

/* minimum as the ops define it: NaN if either is NaN; -0 is below +0. */
static inline double interp_fmin(double a, double b) {
  if (isnan(a)) return a;
  if (isnan(b)) return b;
  if (a == b) return signbit(a) ? a : b;
  return a < b ? a : b;
}

#endif /* GC_INTERP_INTERNAL_H */
