/* reduce_split.c - the "reduce-split" pass: reductions the GPU kernels cannot
 * spread over enough threads become two reductions that they can.
 *
 * 1. Reduced dims on both sides of a kept dim, the innermost dims reduced
 *    (batch-norm statistics over NCHW's N, H and W; axes [0, 2] of [A, K, B]):
 *      reduce(x, axes) -> reduce(reduce(x, axes = the innermost run, keepdims), axes)
 *    The first is a row reduction (a lane group or block per row); the second has
 *    its innermost dims kept. Whole, it got one GPU thread per output, each walking
 *    its elements alone: 1024 threads for [64, 1024, 1024] over [0, 2].
 * 2. One run of reduced dims, the innermost dims kept, few outputs: [K1,] R, K2
 *    with K1 * K2 < SEG_THREADS (a column sum of [65536, 1024]):
 *      x as [K1,] S, R / S, K2; reduce over R / S; then over S
 *    with S the least divisor of R that gives the first reduction SEG_THREADS
 *    outputs (x 4 bytes / x's element: 2^19 for 16-bit x, whose kernel takes two
 *    outputs a thread), else the largest that leaves SEG_MIN elements to each: one
 *    thread per output, adjacent threads reading adjacent addresses. Whole, it ran on
 *    the column kernel: 59% of copy bandwidth on an H200, 85% split.
 *
 * The partial results: sums of f16/bf16 stay f32 (the input is cast first, after
 * rule 2's reshape so that the reshape is a view and the reduction computes the
 * cast; the result cast back), integer sums i64 (wrapping sums commute with the
 * final narrowing); a mean is a mean of means (every partial mean has the same
 * count). Inputs under SPLIT_INNER_MIN / SPLIT_SEG_MIN elements stay whole. Only for
 * the GPU (the CPU backend's items already have enough work each).
 */
#include "passes/rewrite.h"

enum { SEG_THREADS = 1 << 18, SEG_MIN = 8 /* elements per first-stage thread, at least */ };
/* Inputs smaller than these stay whole (a second kernel costs a launch): rule 1's
 * reductions otherwise run on one thread per output, rule 2's on the column kernel. */
enum { SPLIT_INNER_MIN = 1 << 16, SPLIT_SEG_MIN = 1 << 20 };

/* Dims of t grouped into runs of kept / reduced dims (unit dims dropped): the
 * number of runs, the kind (1 reduced) and element count of each, and the
 * innermost run's first axis. */
static int runs_of(const gc_type *t, const int *red, int *kind, int64_t *size, int *inner_first) {
  int n = 0;
  for (int i = 0; i < t->rank; i++) {
    if (t->dims[i] == 1) continue;
    if (n == 0 || kind[n - 1] != red[i]) {
      kind[n] = red[i];
      size[n++] = 1;
      *inner_first = i;
    }
    size[n - 1] *= t->dims[i];
  }
  return n;
}

/* The dtype partial results keep. */
static gc_dtype partial_dtype(const gc_op *op, gc_dtype dt) {
  if (op->opcode != GC_OP_REDUCE_SUM && op->opcode != GC_OP_REDUCE_MEAN) return dt;
  if (dt == GRAPHC_DTYPE_F16 || dt == GRAPHC_DTYPE_BF16) return GRAPHC_DTYPE_F32;
  return gc_dtype_is_int(dt) ? GRAPHC_DTYPE_I64 : dt;
}

/* x cast to pt before op (x itself when it has that dtype); NULL on OOM. */
static gc_value *cast_to(gc_rewriter *rw, gc_op *op, gc_value *x, gc_dtype pt) {
  if (x->type.dtype == pt) return x;
  gc_type ct = x->type;
  ct.dtype = pt;
  gc_named_attr to = {"to", gc_rw_attr_dtype(pt)};
  gc_op *c = gc_rw_new_op(rw, GC_OP_CAST, op, 1, &x, 1, &to, &ct, NULL, op->loc);
  return c ? c->results[0] : NULL;
}

/* A reduction like op's of v over n axes, keepdims or not, with result type t (named
 * as op's result when it will replace it). */
static gc_value *reduce_of(gc_rewriter *rw, gc_op *op, gc_value *v, const int64_t *axes, int n, int keep,
                           const gc_type *t) {
  gc_named_attr at[2] = {{"axes", gc_rw_attr_ints(rw, axes, n)}, {"keepdims", {.kind = GC_ATTR_BOOL, .u.b = 1}}};
  const char *name = gc_type_equal(t, &op->results[0]->type) ? op->results[0]->name : NULL;
  gc_op *r = gc_rw_new_op(rw, op->opcode, op, 1, &v, keep ? 2 : 1, at, t, name, op->loc);
  return r ? r->results[0] : NULL;
}

/* op's result is v (partial dtype): v, or v cast back to op's dtype, or v reshaped to
 * op's result dims, takes op's place. */
static void finish(gc_rewriter *rw, gc_op *op, gc_value *v) {
  const gc_type *rt = &op->results[0]->type;
  if (gc_type_equal(&v->type, &op->results[0]->type)) {
    gc_rw_replace_op(rw, op, &v);
    return;
  }
  if (v->type.dtype != rt->dtype) {
    gc_named_attr to = {"to", gc_rw_attr_dtype(rt->dtype)};
    gc_rw_replace_with_new(rw, op, GC_OP_CAST, 1, &v, 1, &to);
    return;
  }
  int64_t dims[GC_MAX_RANK];
  for (int i = 0; i < rt->rank; i++) dims[i] = rt->dims[i];
  gc_named_attr shape = {"shape", gc_rw_attr_ints(rw, dims, rt->rank)};
  gc_rw_replace_with_new(rw, op, GC_OP_RESHAPE, 1, &v, 1, &shape);
}

/* Rule 1 (see the top): the innermost run of reduced dims first. */
static void split_inner(gc_rewriter *rw, gc_op *op, const int *red, int first) {
  gc_value *x = op->operands[0];
  const gc_type *t = &x->type;
  gc_dtype pt = partial_dtype(op, t->dtype);
  gc_value *src = cast_to(rw, op, x, pt);
  if (!src) return;
  int64_t in_ax[GC_MAX_RANK], out_ax[GC_MAX_RANK];
  int ni = 0, no = 0;
  gc_type p1 = {.dtype = pt, .rank = t->rank};
  for (int i = 0; i < t->rank; i++) {
    p1.dims[i] = i >= first ? 1 : t->dims[i];
    if (i >= first) in_ax[ni++] = i;
    else if (red[i]) out_ax[no++] = i;
  }
  gc_value *pv = reduce_of(rw, op, src, in_ax, ni, 1, &p1);
  if (!pv) return;
  /* the other reduced axes, and the first's (now unit) ones, as op asked */
  for (int i = 0; i < ni; i++) out_ax[no++] = in_ax[i];
  gc_type p2 = op->results[0]->type;
  p2.dtype = pt;
  gc_value *sv = reduce_of(rw, op, pv, out_ax, no, gc_op_attr_bool(op, "keepdims", 0), &p2);
  if (sv) finish(rw, op, sv);
}

/* Rule 2 (see the top): runs [K1,] R, K2 as [K1,] S, R / S, K2. */
static void split_segments(gc_rewriter *rw, gc_op *op, int n, const int64_t *size) {
  int64_t k1 = n == 3 ? size[0] : 1, R = size[n - 2], k2 = size[n - 1];
  gc_value *x = op->operands[0];
  /* 16-bit inputs: the GPU kernel gives each thread 2 adjacent outputs (4 bytes a read) */
  int64_t target = (int64_t)SEG_THREADS * 4 / (int64_t)graphc_dtype_size(x->type.dtype);
  /* S: the least divisor of R that reaches the target, else the largest that leaves
   * SEG_MIN elements to a first-stage thread (a global pool: R = 7 x 7, 28 x 28) */
  int64_t nout = k1 * k2, S = 0;
  if (nout >= target) return;
  for (int64_t d = 2; d <= R / SEG_MIN && d <= target; d++) {
    if (R % d) continue;
    S = d;
    if (nout * d >= target) break;
  }
  if (S < 2) return;
  gc_dtype pt = partial_dtype(op, x->type.dtype);
  int64_t d4[4], *d = d4;
  if (n == 3) *d++ = k1;
  d[0] = S, d[1] = R / S, d[2] = k2;
  int rank = n == 3 ? 4 : 3, seg = rank - 3;  /* axis of S */
  /* the reshape first: a view of x's buffer, then the cast, fused into the reduction */
  gc_value *xr = gc_rw_reshape(rw, op, x, rank, d4);
  gc_value *v = xr ? cast_to(rw, op, xr, pt) : NULL;
  if (!v) return;
  gc_type p1 = {.dtype = pt, .rank = rank - 1};
  for (int i = 0, j = 0; i < rank; i++)
    if (i != seg + 1) p1.dims[j++] = d4[i];
  int64_t ax = seg + 1;
  gc_value *pv = reduce_of(rw, op, v, &ax, 1, 0, &p1);
  if (!pv) return;
  gc_type p2 = {.dtype = pt, .rank = rank - 2};
  for (int i = 0, j = 0; i < rank - 1; i++)
    if (i != seg) p2.dims[j++] = p1.dims[i];
  ax = seg;
  gc_value *sv = reduce_of(rw, op, pv, &ax, 1, 0, &p2);
  if (!sv) return;
  if (pt != x->type.dtype) {
    /* the reshape to op's dims before the cast back (finish casts) */
    const gc_type *rt = &op->results[0]->type;
    sv = gc_rw_reshape(rw, op, sv, rt->rank, rt->dims);
    if (!sv) return;
  }
  finish(rw, op, sv);
}

static void split_reduce(gc_rewriter *rw, gc_op *op) {
  if (gc_op_infos[op->opcode].kind != GC_KIND_REDUCE || op->opcode == GC_OP_ARGMAX) return;
  const gc_type *t = &op->operands[0]->type;
  int r = t->rank;
  const gc_attr *aa = gc_op_attr(op, "axes");
  int64_t ax[GC_MAX_RANK];
  int na = aa ? gc_attr_ints(aa, ax, GC_MAX_RANK) : 0;
  if (!aa || na <= 0 || !gc_type_is_concrete(t) || !gc_type_is_concrete(&op->results[0]->type)) return;
  int red[GC_MAX_RANK] = {0};
  for (int i = 0; i < na; i++) {
    int64_t a = ax[i] < 0 ? ax[i] + r : ax[i];
    if (a < 0 || a >= r) return;
    red[a] = 1;
  }
  int kind[GC_MAX_RANK], first = 0;
  int64_t size[GC_MAX_RANK];
  int n = runs_of(t, red, kind, size, &first);
  int64_t numel = gc_type_numel(t);
  if (n >= 3 && kind[n - 1] && numel >= SPLIT_INNER_MIN)
    split_inner(rw, op, red, first);
  else if (((n == 2 && kind[0]) || (n == 3 && kind[1] && !kind[2])) && numel >= SPLIT_SEG_MIN)
    split_segments(rw, op, n, size);
}

int gc_pass_reduce_split(gc_graph *g, gc_diags *d) {
  gc_rewriter rw;
  if (gc_rw_init(&rw, g, d) != 0) return -1;
  for (gc_op *op = g->first, *next; op && !rw.oom; op = next) {
    next = op->next;
    gc_rw_resolve_operands(&rw, op);
    split_reduce(&rw, op);
  }
  return gc_rw_finish(&rw);
}
