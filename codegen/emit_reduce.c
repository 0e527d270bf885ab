/* emit_reduce.c - reductions (reduce_sum/max/min/mean, argmax) and row-wise
 * normalizations (softmax, log_softmax, layernorm, rmsnorm).
 *
 * Reductions: the input's dims are grouped into runs of kept and reduced dims
 * (unit dims dropped, neighbours of the same kind merged).
 *   one reduced run, innermost (a row), CUDA: BLOCKS, one group per output;
 *       threads stride over the row, warp shuffles, shared memory across warps.
 *   otherwise: ITEMS over outputs, each looping over the reduced elements
 *       (for [outer, R, inner] consecutive items read consecutive addresses).
 * Normalizations view the input as [outer, R, inner] around the axis:
 *   inner == 1 on CUDA: BLOCKS per row with block reductions;
 *   otherwise ITEMS per (outer, inner) with sequential loops.
 * Sums accumulate in f32 (f64 for f64, i64 for ints).
 */
#include <math.h>

#include "emit.h"

/* ---- reductions ----------------------------------------------------------------------------- */

/* Input dims grouped into kept and reduced runs with their element strides. */
typedef struct red_groups {
  int nk, nr;
  int64_t kdims[GC_MAX_RANK], kst[GC_MAX_RANK];
  int64_t rdims[GC_MAX_RANK], rst[GC_MAX_RANK];
  int row;                   /* a single reduced run, innermost: in index = out * R + r */
} red_groups;

/* Group dims by the reduce mask: drop unit dims, merge same-kind neighbours. */
static void group_dims(const gc_type *t, const int *red, red_groups *g) {
  int64_t size[GC_MAX_RANK], st[GC_MAX_RANK];
  int kind[GC_MAX_RANK], n = 0;
  int64_t stride = gc_type_numel(t);
  for (int i = 0; i < t->rank; i++) {
    stride /= t->dims[i];
    if (t->dims[i] == 1) continue;
    if (n > 0 && kind[n - 1] == red[i]) {
      size[n - 1] *= t->dims[i];
      st[n - 1] = stride;
      continue;
    }
    size[n] = t->dims[i];
    st[n] = stride;
    kind[n] = red[i];
    n++;
  }
  g->nk = g->nr = 0;
  for (int i = 0; i < n; i++) {
    if (kind[i]) {
      g->rdims[g->nr] = size[i];
      g->rst[g->nr++] = st[i];
    } else {
      g->kdims[g->nk] = size[i];
      g->kst[g->nk++] = st[i];
    }
  }
  g->row = g->nr == 1 && kind[n - 1];
}

/* Reduced-axis mask from `axes` (default: all). */
static void reduce_mask(const gc_op *op, int rank, int *red) {
  const gc_attr *a = gc_op_attr(op, "axes");
  int64_t axes[GC_MAX_RANK];
  int n = a ? gc_attr_ints(a, axes, GC_MAX_RANK) : -1;
  for (int i = 0; i < rank; i++) red[i] = n < 0;
  for (int i = 0; i < n; i++) red[gc_ec_axis(axes[i], rank)] = 1;
}

/* sum x stride over coordinate vars (i64). */
static kir_expr *dot_coords(gc_lowerer *c, kir_kernel *k, int n, const int *coord, const int64_t *st) {
  kir_expr *e = ec_i64(c, 0);
  for (int i = 0; i < n; i++) e = ec_add(c, e, ec_mul(c, ec_v(c, k, coord[i]), ec_i64(c, st[i])));
  return e;
}

/* Final value of a reduction: mean divides by the count. */
static kir_expr *finish(gc_lowerer *c, kir_kernel *k, const gc_op *op, int acc, int64_t count) {
  kir_expr *e = ec_v(c, k, acc);
  if (op->opcode == GC_OP_REDUCE_MEAN)
    e = ec_bin(c, KIR_DIV, e, gc_ec_num(c, e->type, (double)count));
  return e;
}

/* reduce_sum/max/min/mean. */
static int lower_reduce(gc_lowerer *c, const gc_op *op) {
  const gc_value *in = op->operands[0], *out = op->results[0];
  int red[GC_MAX_RANK];
  reduce_mask(op, in->type.rank, red);
  red_groups g;
  group_dims(&in->type, red, &g);
  int64_t nout = gc_ec_prod(g.kdims, 0, g.nk), R = gc_ec_prod(g.rdims, 0, g.nr);
  GC_ASSERT(nout == gc_type_numel(&out->type));
  gc_ec_comb comb = op->opcode == GC_OP_REDUCE_MAX ? GC_EC_MAX
                    : op->opcode == GC_OP_REDUCE_MIN ? GC_EC_MIN : GC_EC_SUM;
  gc_dtype ct = gc_ec_compute_type(in->type.dtype);
  gc_dtype at = comb == GC_EC_SUM && !gc_dtype_is_float(ct) ? GRAPHC_DTYPE_I64 : ct;
  int blocks = c->t->kind == KIR_TARGET_CUDA && g.row;
  kir_kernel *k = blocks ? gc_ec_kernel(c, op, NULL, KIR_LAUNCH_BLOCKS, nout, gc_ec_row_block(c, R))
                         : gc_ec_kernel(c, op, NULL, KIR_LAUNCH_ITEMS, nout, 256);
  int pin = gc_ec_param(c, k, "in", in, 1);
  int pout = gc_ec_param(c, k, "out", out, 0);
  kir_block *b = &k->body;
  int acc = gc_ec_let(c, k, b, "acc", gc_ec_identity(c, comb, at));
  int x = gc_ec_var(c, k, "x", at);
  if (blocks) {
    int sh = kir_add_shared(c->km, k, at, k->launch.block / c->t->warp_size);
    int base = gc_ec_let(c, k, b, "base", ec_mul(c, ec_v(c, k, k->item_var), ec_i64(c, R)));
    int r;
    kir_block *body = gc_ec_thread_loop(c, k, b, &r, R);
    kir_expr *idx = ec_add(c, ec_v(c, k, base), ec_v(c, k, r));
    kir_emit_assign(c->km, body, x, ec_cast(c, at, gc_ec_load(c, k, pin, idx)));
    kir_emit_assign(c->km, body, acc, gc_ec_combine(c, k, comb, acc, x));
    gc_ec_block_reduce(c, k, b, comb, acc, sh);
    kir_block *tb;
    kir_emit_if(c->km, b, ec_bin(c, KIR_EQ, kir_special_ref(c->km, KIR_SP_THREAD), ec_i32(c, 0)), &tb, NULL);
    gc_ec_store(c, k, tb, pout, ec_v(c, k, k->item_var), finish(c, k, op, acc, R));
  } else {
    int kc[GC_MAX_RANK], rc[GC_MAX_RANK];
    gc_ec_unravel(c, k, b, k->item_var, g.nk, g.kdims, kc);
    int base = gc_ec_let(c, k, b, "base", dot_coords(c, k, g.nk, kc, g.kst));
    int r = gc_ec_var(c, k, "r", GRAPHC_DTYPE_I64);
    kir_block *body = kir_emit_for(c->km, b, r, ec_i64(c, 0), ec_i64(c, R), ec_i64(c, 1));
    gc_ec_unravel(c, k, body, r, g.nr, g.rdims, rc);
    kir_expr *idx = ec_add(c, ec_v(c, k, base), dot_coords(c, k, g.nr, rc, g.rst));
    kir_emit_assign(c->km, body, x, ec_cast(c, at, gc_ec_load(c, k, pin, idx)));
    kir_emit_assign(c->km, body, acc, gc_ec_combine(c, k, comb, acc, x));
    gc_ec_store(c, k, b, pout, ec_v(c, k, k->item_var), finish(c, k, op, acc, R));
  }
  k->bytes_moved = gc_ec_bytes(&in->type) + gc_ec_bytes(&out->type);
  k->flops = (double)gc_type_numel(&in->type);
  gc_ec_launch(c, k);
  return 0;
}

/* ---- argmax ------------------------------------------------------------------------------------ */

/* (av, ai) := the better of (av, ai) and (bv, bi): larger wins, NaN beats
 * numbers, ties (and NaN vs NaN) go to the lower index -- the first maximum. */
static void argmax_step(gc_lowerer *c, kir_kernel *k, kir_block *b, int av, int ai, int bv, int bi) {
  kir_expr *better = ec_bin(c, KIR_GT, ec_v(c, k, bv), ec_v(c, k, av));
  kir_expr *same = ec_bin(c, KIR_EQ, ec_v(c, k, bv), ec_v(c, k, av));
  if (gc_dtype_is_float(k->vars[av].type)) {
    kir_expr *bn = ec_bin(c, KIR_NE, ec_v(c, k, bv), ec_v(c, k, bv));
    kir_expr *an = ec_bin(c, KIR_EQ, ec_v(c, k, av), ec_v(c, k, av));
    better = ec_bin(c, KIR_OR, better, ec_bin(c, KIR_AND, bn, an));
    kir_expr *bn2 = ec_bin(c, KIR_NE, ec_v(c, k, bv), ec_v(c, k, bv));
    kir_expr *an2 = ec_bin(c, KIR_NE, ec_v(c, k, av), ec_v(c, k, av));
    same = ec_bin(c, KIR_OR, same, ec_bin(c, KIR_AND, bn2, an2));
  }
  kir_expr *tie = ec_bin(c, KIR_AND, same, ec_bin(c, KIR_LT, ec_v(c, k, bi), ec_v(c, k, ai)));
  int take = gc_ec_let(c, k, b, "take", ec_bin(c, KIR_OR, better, tie));
  kir_emit_assign(c->km, b, av, kir_select(c->km, ec_v(c, k, take), ec_v(c, k, bv), ec_v(c, k, av)));
  kir_emit_assign(c->km, b, ai, kir_select(c->km, ec_v(c, k, take), ec_v(c, k, bi), ec_v(c, k, ai)));
}

/* Block-wide argmax of (bv, bi): shuffles, then per-warp slots in two shared arrays. */
static void argmax_block(gc_lowerer *c, kir_kernel *k, kir_block *b, int bv, int bi) {
  int ws = c->t->warp_size, nw = k->launch.block / ws;
  int xv = gc_ec_var(c, k, "ov", k->vars[bv].type), xi = gc_ec_var(c, k, "oi", GRAPHC_DTYPE_I64);
  for (int off = ws / 2; off >= 1; off /= 2) {
    kir_emit_assign(c->km, b, xv, kir_shfl_xor(c->km, ec_v(c, k, bv), off));
    kir_emit_assign(c->km, b, xi, kir_shfl_xor(c->km, ec_v(c, k, bi), off));
    argmax_step(c, k, b, bv, bi, xv, xi);
  }
  if (nw == 1) return;
  int shv = kir_add_shared(c->km, k, k->vars[bv].type, nw);
  int shi = kir_add_shared(c->km, k, GRAPHC_DTYPE_I64, nw);
  kir_block *tb;
  kir_emit_if(c->km, b, ec_bin(c, KIR_EQ, kir_special_ref(c->km, KIR_SP_LANE), ec_i32(c, 0)), &tb, NULL);
  kir_expr *w = kir_cast(c->km, GRAPHC_DTYPE_I64, kir_special_ref(c->km, KIR_SP_WARP));
  kir_emit_store(c->km, tb, KIR_SHARED, shv, w, ec_v(c, k, bv));
  w = kir_cast(c->km, GRAPHC_DTYPE_I64, kir_special_ref(c->km, KIR_SP_WARP));
  kir_emit_store(c->km, tb, KIR_SHARED, shi, w, ec_v(c, k, bi));
  kir_emit_barrier(c->km, b);
  kir_emit_assign(c->km, b, bv, kir_load(c->km, k, KIR_SHARED, shv, ec_i64(c, 0)));
  kir_emit_assign(c->km, b, bi, kir_load(c->km, k, KIR_SHARED, shi, ec_i64(c, 0)));
  for (int i = 1; i < nw; i++) {
    kir_emit_assign(c->km, b, xv, kir_load(c->km, k, KIR_SHARED, shv, ec_i64(c, i)));
    kir_emit_assign(c->km, b, xi, kir_load(c->km, k, KIR_SHARED, shi, ec_i64(c, i)));
    argmax_step(c, k, b, bv, bi, xv, xi);
  }
  kir_emit_barrier(c->km, b);
}

/* argmax over one axis of [outer, R, inner]: i64 index of the first maximum. */
static int lower_argmax(gc_lowerer *c, const gc_op *op) {
  const gc_value *in = op->operands[0], *out = op->results[0];
  const gc_type *t = &in->type;
  int axis = t->rank ? gc_ec_axis(gc_op_attr_int(op, "axis", -1), t->rank) : 0;
  int64_t outer = t->rank ? gc_ec_prod(t->dims, 0, axis) : 1, R = t->rank ? t->dims[axis] : 1;
  int64_t inner = t->rank ? gc_ec_prod(t->dims, axis + 1, t->rank) : 1;
  gc_dtype ct = gc_ec_compute_type(t->dtype);
  int blocks = c->t->kind == KIR_TARGET_CUDA && inner == 1 && R > 1;
  kir_kernel *k = blocks ? gc_ec_kernel(c, op, NULL, KIR_LAUNCH_BLOCKS, outer, gc_ec_row_block(c, R))
                         : gc_ec_kernel(c, op, NULL, KIR_LAUNCH_ITEMS, outer * inner, 256);
  int pin = gc_ec_param(c, k, "in", in, 1);
  int pout = gc_ec_param(c, k, "out", out, 0);
  kir_block *b = &k->body;
  int xv = gc_ec_var(c, k, "xv", ct), xi = gc_ec_var(c, k, "xi", GRAPHC_DTYPE_I64);
  if (blocks) {
    int bv = gc_ec_let(c, k, b, "bv", gc_ec_identity(c, GC_EC_MAX, ct));
    int bi = gc_ec_let(c, k, b, "bi", ec_i64(c, INT64_MAX));
    int base = gc_ec_let(c, k, b, "base", ec_mul(c, ec_v(c, k, k->item_var), ec_i64(c, R)));
    int r;
    kir_block *body = gc_ec_thread_loop(c, k, b, &r, R);
    kir_emit_assign(c->km, body, xv, gc_ec_load(c, k, pin, ec_add(c, ec_v(c, k, base), ec_v(c, k, r))));
    kir_emit_assign(c->km, body, xi, ec_v(c, k, r));
    argmax_step(c, k, body, bv, bi, xv, xi);
    argmax_block(c, k, b, bv, bi);
    kir_block *tb;
    kir_emit_if(c->km, b, ec_bin(c, KIR_EQ, kir_special_ref(c->km, KIR_SP_THREAD), ec_i32(c, 0)), &tb, NULL);
    gc_ec_store(c, k, tb, pout, ec_v(c, k, k->item_var), ec_v(c, k, bi));
  } else {
    int64_t dims2[2] = {outer, inner};
    int co[2];
    gc_ec_unravel(c, k, b, k->item_var, 2, dims2, co);
    kir_expr *base_e = ec_add(c, ec_mul(c, ec_v(c, k, co[0]), ec_i64(c, R * inner)), ec_v(c, k, co[1]));
    int base = gc_ec_let(c, k, b, "base", base_e);
    int bv = gc_ec_let(c, k, b, "bv", gc_ec_load(c, k, pin, ec_v(c, k, base)));
    int bi = gc_ec_let(c, k, b, "bi", ec_i64(c, 0));
    int r = gc_ec_var(c, k, "r", GRAPHC_DTYPE_I64);
    kir_block *body = kir_emit_for(c->km, b, r, ec_i64(c, 1), ec_i64(c, R), ec_i64(c, 1));
    kir_expr *idx = ec_add(c, ec_v(c, k, base), ec_mul(c, ec_v(c, k, r), ec_i64(c, inner)));
    kir_emit_assign(c->km, body, xv, gc_ec_load(c, k, pin, idx));
    kir_emit_assign(c->km, body, xi, ec_v(c, k, r));
    argmax_step(c, k, body, bv, bi, xv, xi);
    gc_ec_store(c, k, b, pout, ec_v(c, k, k->item_var), ec_v(c, k, bi));
  }
  k->bytes_moved = gc_ec_bytes(t) + gc_ec_bytes(&out->type);
  k->flops = (double)gc_type_numel(t);
  gc_ec_launch(c, k);
  return 0;
}

/* reduce_* and argmax. */
int gc_emit_reduce(gc_lowerer *c, const gc_op *op) {
  return op->opcode == GC_OP_ARGMAX ? lower_argmax(c, op) : lower_reduce(c, op);
}

/* ---- row-wise normalizations ------------------------------------------------------------------ */

/* A row kernel over [outer, R, inner]: BLOCKS (one group per row, inner == 1)
 * or ITEMS (one item per (outer, inner) pair, looping over the row). */
typedef struct row_kernel {
  kir_kernel *k;
  int blocks;
  int64_t R, inner;
  int base;                  /* var: element index of r = 0 */
  int sh;                    /* BLOCKS: shared slots for block reductions */
} row_kernel;

/* Create the kernel and compute the row base. */
static void row_open(gc_lowerer *c, const gc_op *op, row_kernel *rk, int64_t outer, int64_t R,
                     int64_t inner, gc_dtype acc_t) {
  rk->R = R;
  rk->inner = inner;
  rk->blocks = c->t->kind == KIR_TARGET_CUDA && inner == 1;
  if (rk->blocks) {
    rk->k = gc_ec_kernel(c, op, NULL, KIR_LAUNCH_BLOCKS, outer, gc_ec_row_block(c, R));
    kir_kernel *k = rk->k;
    rk->sh = kir_add_shared(c->km, k, acc_t, k->launch.block / c->t->warp_size);
    rk->base = gc_ec_let(c, k, &k->body, "base", ec_mul(c, ec_v(c, k, k->item_var), ec_i64(c, R)));
  } else {
    rk->k = gc_ec_kernel(c, op, NULL, KIR_LAUNCH_ITEMS, outer * inner, 256);
    kir_kernel *k = rk->k;
    int64_t dims2[2] = {outer, inner};
    int co[2];
    gc_ec_unravel(c, k, &k->body, k->item_var, 2, dims2, co);
    kir_expr *e = ec_add(c, ec_mul(c, ec_v(c, k, co[0]), ec_i64(c, R * inner)), ec_v(c, k, co[1]));
    rk->base = gc_ec_let(c, k, &k->body, "base", e);
  }
}

/* Loop over the row: threads stride (BLOCKS) or one item walks it (ITEMS). */
static kir_block *row_loop(gc_lowerer *c, row_kernel *rk, int *r) {
  kir_kernel *k = rk->k;
  if (rk->blocks) return gc_ec_thread_loop(c, k, &k->body, r, rk->R);
  *r = gc_ec_var(c, k, "r", GRAPHC_DTYPE_I64);
  return kir_emit_for(c->km, &k->body, *r, ec_i64(c, 0), ec_i64(c, rk->R), ec_i64(c, 1));
}

/* Element index of row position r. */
static kir_expr *row_index(gc_lowerer *c, row_kernel *rk, int r) {
  kir_expr *off = ec_mul(c, ec_v(c, rk->k, r), ec_i64(c, rk->inner));
  return ec_add(c, ec_v(c, rk->k, rk->base), off);
}

/* Combine per-thread partials across the group (BLOCKS only). */
static void row_reduce(gc_lowerer *c, row_kernel *rk, gc_ec_comb op, int v) {
  if (rk->blocks) gc_ec_block_reduce(c, rk->k, &rk->k->body, op, v, rk->sh);
}

/* A new var holding the reduction (op) over the row of f(x), where f subtracts
 * var `sub` (when >= 0), then exponentiates (ex) or squares (sq). */
static int row_accumulate(gc_lowerer *c, row_kernel *rk, int pin, gc_ec_comb op, gc_dtype t, int sub,
                          int sq, int ex) {
  kir_kernel *k = rk->k;
  int acc = gc_ec_let(c, k, &k->body, "acc", gc_ec_identity(c, op, t));
  int r;
  kir_block *body = row_loop(c, rk, &r);
  kir_expr *x = gc_ec_load(c, k, pin, row_index(c, rk, r));
  if (sub >= 0) x = ec_bin(c, KIR_SUB, x, ec_v(c, k, sub));
  if (ex) x = kir_unary(c->km, KIR_EXP, x);
  int xv = gc_ec_let(c, k, body, "x", x);
  if (sq) xv = gc_ec_let(c, k, body, "x", ec_bin(c, KIR_MUL, ec_v(c, k, xv), ec_v(c, k, xv)));
  kir_emit_assign(c->km, body, acc, gc_ec_combine(c, k, op, acc, xv));
  row_reduce(c, rk, op, acc);
  return acc;
}

/* softmax = exp(x - max) / sum;  log_softmax = x - max - log(sum). */
static int lower_softmax(gc_lowerer *c, const gc_op *op) {
  const gc_value *in = op->operands[0], *out = op->results[0];
  const gc_type *t = &in->type;
  int axis = t->rank ? gc_ec_axis(gc_op_attr_int(op, "axis", -1), t->rank) : 0;
  int64_t outer = t->rank ? gc_ec_prod(t->dims, 0, axis) : 1, R = t->rank ? t->dims[axis] : 1;
  int64_t inner = t->rank ? gc_ec_prod(t->dims, axis + 1, t->rank) : 1;
  gc_dtype ct = gc_ec_compute_type(t->dtype);
  row_kernel rk;
  row_open(c, op, &rk, outer, R, inner, ct);
  kir_kernel *k = rk.k;
  int pin = gc_ec_param(c, k, "in", in, 1);
  int pout = gc_ec_param(c, k, "out", out, 0);
  int mx = row_accumulate(c, &rk, pin, GC_EC_MAX, ct, -1, 0, 0);
  int sum = row_accumulate(c, &rk, pin, GC_EC_SUM, ct, mx, 0, 1);
  int r, fin;
  if (op->opcode == GC_OP_LOG_SOFTMAX)
    fin = gc_ec_let(c, k, &k->body, "ls", kir_unary(c->km, KIR_LOG, ec_v(c, k, sum)));
  else
    fin = sum;
  kir_block *body = row_loop(c, &rk, &r);
  int xv = gc_ec_let(c, k, body, "x", ec_bin(c, KIR_SUB, gc_ec_load(c, k, pin, row_index(c, &rk, r)),
                                             ec_v(c, k, mx)));
  kir_expr *y = op->opcode == GC_OP_LOG_SOFTMAX
                    ? ec_bin(c, KIR_SUB, ec_v(c, k, xv), ec_v(c, k, fin))
                    : ec_bin(c, KIR_DIV, kir_unary(c->km, KIR_EXP, ec_v(c, k, xv)), ec_v(c, k, fin));
  gc_ec_store(c, k, body, pout, row_index(c, &rk, r), y);
  k->bytes_moved = 3.0 * gc_ec_bytes(t) + gc_ec_bytes(&out->type);
  k->flops = 6.0 * (double)gc_type_numel(t);
  gc_ec_launch(c, k);
  return 0;
}

/* layernorm over dims [axis, rank): (x - mean) / sqrt(var + eps) * gamma + beta,
 * two passes (mean, then centered squares) for accuracy. */
static int lower_layernorm(gc_lowerer *c, const gc_op *op) {
  const gc_value *in = op->operands[0], *out = op->results[0];
  const gc_type *t = &in->type;
  int axis = t->rank ? gc_ec_axis(gc_op_attr_int(op, "axis", -1), t->rank) : 0;
  int64_t outer = gc_ec_prod(t->dims, 0, axis), R = gc_ec_prod(t->dims, axis, t->rank);
  gc_dtype ct = gc_ec_compute_type(t->dtype);
  double eps = gc_op_attr_float(op, "eps", 1e-5);
  row_kernel rk;
  row_open(c, op, &rk, outer, R, 1, ct);
  kir_kernel *k = rk.k;
  int pin = gc_ec_param(c, k, "in", in, 1);
  int pg = gc_ec_param(c, k, "gamma", op->operands[1], 1);
  int pb = gc_ec_param(c, k, "beta", op->operands[2], 1);
  int pout = gc_ec_param(c, k, "out", out, 0);
  kir_block *kb = &k->body;
  int sum = row_accumulate(c, &rk, pin, GC_EC_SUM, ct, -1, 0, 0);
  int mean = gc_ec_let(c, k, kb, "mean", ec_bin(c, KIR_DIV, ec_v(c, k, sum), gc_ec_num(c, ct, (double)R)));
  int ss = row_accumulate(c, &rk, pin, GC_EC_SUM, ct, mean, 1, 0);
  kir_expr *var = ec_bin(c, KIR_DIV, ec_v(c, k, ss), gc_ec_num(c, ct, (double)R));
  kir_expr *den = kir_unary(c->km, KIR_SQRT, ec_bin(c, KIR_ADD, var, gc_ec_num(c, ct, eps)));
  int rstd = gc_ec_let(c, k, kb, "rstd", ec_bin(c, KIR_DIV, gc_ec_num(c, ct, 1.0), den));
  int r;
  kir_block *body = row_loop(c, &rk, &r);
  kir_expr *xc = ec_bin(c, KIR_SUB, gc_ec_load(c, k, pin, row_index(c, &rk, r)), ec_v(c, k, mean));
  kir_expr *y = ec_bin(c, KIR_MUL, ec_bin(c, KIR_MUL, xc, ec_v(c, k, rstd)),
                       gc_ec_load(c, k, pg, ec_v(c, k, r)));
  y = ec_bin(c, KIR_ADD, y, gc_ec_load(c, k, pb, ec_v(c, k, r)));
  gc_ec_store(c, k, body, pout, row_index(c, &rk, r), y);
  k->bytes_moved = 3.0 * gc_ec_bytes(t) + gc_ec_bytes(&out->type) + 2.0 * gc_ec_bytes(&op->operands[1]->type);
  k->flops = 8.0 * (double)gc_type_numel(t);
  gc_ec_launch(c, k);
  return 0;
}

/* rmsnorm over the last dim: x / sqrt(mean(x^2) + eps) * gamma. */
static int lower_rmsnorm(gc_lowerer *c, const gc_op *op) {
  const gc_value *in = op->operands[0], *out = op->results[0];
  const gc_type *t = &in->type;
  int64_t R = t->rank ? t->dims[t->rank - 1] : 1, outer = gc_type_numel(t) / R;
  gc_dtype ct = gc_ec_compute_type(t->dtype);
  double eps = gc_op_attr_float(op, "eps", 1e-6);
  row_kernel rk;
  row_open(c, op, &rk, outer, R, 1, ct);
  kir_kernel *k = rk.k;
  int pin = gc_ec_param(c, k, "in", in, 1);
  int pg = gc_ec_param(c, k, "gamma", op->operands[1], 1);
  int pout = gc_ec_param(c, k, "out", out, 0);
  kir_block *kb = &k->body;
  int ss = row_accumulate(c, &rk, pin, GC_EC_SUM, ct, -1, 1, 0);
  kir_expr *ms = ec_bin(c, KIR_DIV, ec_v(c, k, ss), gc_ec_num(c, ct, (double)R));
  kir_expr *den = kir_unary(c->km, KIR_SQRT, ec_bin(c, KIR_ADD, ms, gc_ec_num(c, ct, eps)));
  int inv = gc_ec_let(c, k, kb, "inv", ec_bin(c, KIR_DIV, gc_ec_num(c, ct, 1.0), den));
  int r;
  kir_block *body = row_loop(c, &rk, &r);
  kir_expr *y = ec_bin(c, KIR_MUL, gc_ec_load(c, k, pin, row_index(c, &rk, r)), ec_v(c, k, inv));
  y = ec_bin(c, KIR_MUL, y, gc_ec_load(c, k, pg, ec_v(c, k, r)));
  gc_ec_store(c, k, body, pout, row_index(c, &rk, r), y);
  k->bytes_moved = 2.0 * gc_ec_bytes(t) + gc_ec_bytes(&out->type) + gc_ec_bytes(&op->operands[1]->type);
  k->flops = 4.0 * (double)gc_type_numel(t);
  gc_ec_launch(c, k);
  return 0;
}

/* softmax, log_softmax, layernorm, rmsnorm. */
int gc_emit_norm(gc_lowerer *c, const gc_op *op) {
  switch (op->opcode) {
    case GC_OP_SOFTMAX:
    case GC_OP_LOG_SOFTMAX: return lower_softmax(c, op);
    case GC_OP_LAYERNORM: return lower_layernorm(c, op);
    case GC_OP_RMSNORM: return lower_rmsnorm(c, op);
    default: GC_ASSERT(!"not a normalization op"); return -1;
  }
}
