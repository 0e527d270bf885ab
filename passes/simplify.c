/* simplify.c - algebraic simplification: local rewrites that remove work
 * without changing any result.
 *
 *   x*1, 1*x, x+0, 0+x, x-0, x/1 -> x   the constant is a splat (every element the
 *                                       identity) and the result type is x's type,
 *                                       so no broadcasting is lost
 *   x-x -> 0                            integers only (for floats inf-inf and NaN)
 *   neg(neg(x)) -> x
 *   transpose(transpose(x)) -> transpose(x) with the composed perm, or x
 *   reshape(reshape(x)) -> reshape(x);  reshape/broadcast/cast to x's own type -> x
 *   broadcast(broadcast(x)) -> broadcast(x)
 *   cast(cast(x, B), C) -> cast(x, C)   when the inner cast is exact for every value
 *                                       of x and the outer sees the same value
 *   select(c, a, b), c a splat const   -> a or b (broadcast to the result if needed)
 *   select(c, a, a) -> a
 *   matmul(transpose(x), y, transpose_a=t) -> matmul(x, y, transpose_a=!t)
 *                                       layout selection: a transpose that swaps
 *                                       exactly the last two dims (batch dims in
 *                                       place) is the operand's majorness flag, so
 *                                       the printed IR says which layout the matmul
 *                                       reads; the same for b with transpose_b. The
 *                                       transpose stays while it has other users.
 *                                       Not for an 8-bit operand whose flag would then
 *                                       say it is stored with K outermost: the 8-bit
 *                                       tensor cores read K-major operands only, and
 *                                       fusion materializes such a weight's transpose
 *                                       once (codegen/fusion.c).
 *
 * New ops keep the replaced op's location and result name. Operands that become
 * dead are left for dce.
 */
#include "passes/rewrite.h"

/* ---- helpers -------------------------------------------------------------------- */

/* The op's single result now stands for `x`. */
static void forward(gc_rewriter *rw, gc_op *op, gc_value *x) {
  gc_rw_replace_op(rw, op, &x);
}

/* Is v a splat const equal to the identity of opc on that side? 0 for add/sub,
 * 1 for mul/div (-0.0 counts as 0: x + -0.0 is x, x + 0.0 only differs for -0.0). */
static int is_identity(const gc_value *v, gc_opcode opc) {
  gc_scalar s;
  if (!gc_value_const_splat(v, &s)) return 0;
  int one = opc == GC_OP_MUL || opc == GC_OP_DIV;
  if (gc_dtype_is_float(v->type.dtype)) return s.f == (one ? 1.0 : 0.0);
  return s.i == (one ? 1 : 0);
}

/* The defining op of v if it has opcode opc, else NULL. */
static gc_op *def_of(const gc_value *v, gc_opcode opc) {
  return v->def && v->def->opcode == opc ? v->def : NULL;
}

/* ---- rewrites ---------------------------------------------------------------------- */

/* add sub mul div with an identity operand; x - x for integers. */
static void simplify_binary(gc_rewriter *rw, gc_op *op) {
  gc_value *a = op->operands[0], *b = op->operands[1];
  const gc_type *rt = &op->results[0]->type;
  int commutes = op->opcode == GC_OP_ADD || op->opcode == GC_OP_MUL;
  if (is_identity(b, op->opcode) && gc_type_equal(&a->type, rt)) {
    forward(rw, op, a);
  } else if (commutes && is_identity(a, op->opcode) && gc_type_equal(&b->type, rt)) {
    forward(rw, op, b);
  } else if (op->opcode == GC_OP_SUB && a == b && gc_dtype_is_int(rt->dtype)) {
    gc_scalar zero = {.i = 0};
    gc_cval c = {.type = *rt, .splat = 1, .n = 1, .e = &zero};
    gc_fold_replace_by_const(rw, op, &c);
  }
}

/* transpose(transpose(x)): out[i] = mid[po[i]] = x[pi[po[i]]]. */
static void simplify_transpose(gc_rewriter *rw, gc_op *op) {
  gc_op *inner = def_of(op->operands[0], GC_OP_TRANSPOSE);
  if (!inner) return;
  int64_t po[GC_MAX_RANK], pi[GC_MAX_RANK], pc[GC_MAX_RANK];
  const gc_attr *ao = gc_op_attr(op, "perm"), *ai = gc_op_attr(inner, "perm");
  int r = op->results[0]->type.rank, identity = 1;
  if (!ao || !ai || gc_attr_ints(ao, po, GC_MAX_RANK) != r || gc_attr_ints(ai, pi, GC_MAX_RANK) != r)
    return;
  for (int i = 0; i < r; i++) {
    pc[i] = pi[po[i]];
    identity &= pc[i] == i;
  }
  gc_value *x = inner->operands[0];
  if (identity) {
    forward(rw, op, x);
    return;
  }
  gc_named_attr perm = {"perm", gc_rw_attr_ints(rw, pc, r)};
  gc_rw_replace_with_new(rw, op, GC_OP_TRANSPOSE, 1, &x, 1, &perm);
}

/* reshape or broadcast: to x's own type -> x; of the same op -> one op on the
 * inner operand with the outer attributes (both compose that way). */
static void simplify_move(gc_rewriter *rw, gc_op *op) {
  gc_value *x = op->operands[0];
  if (gc_type_equal(&x->type, &op->results[0]->type)) {
    forward(rw, op, x);
    return;
  }
  gc_op *inner = def_of(x, op->opcode);
  if (!inner) return;
  x = inner->operands[0];
  if (gc_type_equal(&x->type, &op->results[0]->type))
    forward(rw, op, x);
  else
    gc_rw_replace_with_new(rw, op, op->opcode, 1, &x, op->n_attrs, op->attrs);
}

/* Is every value of int dtype a inside the range of int dtype b? */
static int int_range_within(gc_dtype a, gc_dtype b) {
  if (a == b || b == GRAPHC_DTYPE_I64) return 1;
  if (a == GRAPHC_DTYPE_U8) return b == GRAPHC_DTYPE_I32;
  if (a == GRAPHC_DTYPE_I8) return b == GRAPHC_DTYPE_I32;
  return 0;
}

/* Does int dtype a convert to float dtype b exactly (every value representable)? */
static int int_fits_float(gc_dtype a, gc_dtype b) {
  if (a == GRAPHC_DTYPE_I8 || a == GRAPHC_DTYPE_U8) return 1; /* 8 significant bits */
  return a == GRAPHC_DTYPE_I32 && b == GRAPHC_DTYPE_F64;
}

/* Does float dtype a widen to float dtype b exactly? */
static int float_widens(gc_dtype a, gc_dtype b) {
  if (a == b || b == GRAPHC_DTYPE_F64) return 1;
  return b == GRAPHC_DTYPE_F32 && (a == GRAPHC_DTYPE_F16 || a == GRAPHC_DTYPE_BF16);
}

/* Is cast(cast(x: a, to=b), to=c) == cast(x, to=c) for every x? The inner cast
 * must keep every value, and the outer one must treat it as the direct cast
 * does: casts from floats truncate and saturate while casts from ints wrap, so
 * int -> float -> int is only safe when a's range fits in c's. */
static int cast_chain_exact(gc_dtype a, gc_dtype b, gc_dtype c) {
  if (a == GRAPHC_DTYPE_BOOL) return 1; /* 0/1 survive any cast */
  if (b == GRAPHC_DTYPE_BOOL) return 0;
  int af = gc_dtype_is_float(a), bf = gc_dtype_is_float(b);
  if (af) return bf && float_widens(a, b);
  if (!bf) return int_range_within(a, b);
  if (!int_fits_float(a, b)) return 0;
  return gc_dtype_is_float(c) || c == GRAPHC_DTYPE_BOOL || int_range_within(a, c);
}

/* cast to the same dtype -> x; exact cast chains -> one cast. */
static void simplify_cast(gc_rewriter *rw, gc_op *op) {
  gc_value *x = op->operands[0];
  if (gc_type_equal(&x->type, &op->results[0]->type)) {
    forward(rw, op, x);
    return;
  }
  gc_op *inner = def_of(x, GC_OP_CAST);
  if (!inner) return;
  gc_value *src = inner->operands[0];
  if (!cast_chain_exact(src->type.dtype, x->type.dtype, op->results[0]->type.dtype)) return;
  if (gc_type_equal(&src->type, &op->results[0]->type))
    forward(rw, op, src);
  else
    gc_rw_replace_with_new(rw, op, GC_OP_CAST, 1, &src, op->n_attrs, op->attrs);
}

/* select with a splat constant condition, or with both branches the same value. */
static void simplify_select(gc_rewriter *rw, gc_op *op) {
  gc_scalar c;
  gc_value *pick;
  if (op->operands[1] == op->operands[2])
    pick = op->operands[1];
  else if (gc_value_const_splat(op->operands[0], &c))
    pick = op->operands[c.i ? 1 : 2];
  else
    return;
  const gc_type *rt = &op->results[0]->type;
  if (gc_type_equal(&pick->type, rt)) {
    forward(rw, op, pick);
    return;
  }
  gc_named_attr shape = {"shape", gc_rw_attr_ints(rw, rt->dims, rt->rank)};
  gc_rw_replace_with_new(rw, op, GC_OP_BROADCAST, 1, &pick, 1, &shape);
}

/* Is transpose op a matrix transpose: perm swaps the last two dims, keeps the rest? */
static int is_matrix_transpose(const gc_op *op) {
  int64_t p[GC_MAX_RANK];
  const gc_attr *a = gc_op_attr(op, "perm");
  int r = op->results[0]->type.rank;
  if (r < 2 || !a || gc_attr_ints(a, p, GC_MAX_RANK) != r) return 0;
  for (int i = 0; i < r - 2; i++)
    if (p[i] != i) return 0;
  return p[r - 2] == r - 1 && p[r - 1] == r - 2;
}

/* matmul with a matrix-transposed operand reads the transpose's input with its
 * transpose flag flipped (exact: the same products, summed in the same order).
 * Flags left false are dropped (the default); unchanged operands keep theirs. */
static void simplify_matmul(gc_rewriter *rw, gc_op *op) {
  static const char *const flag[2] = {"transpose_a", "transpose_b"};
  gc_value *in[2] = {op->operands[0], op->operands[1]};
  gc_named_attr at[2];
  int n = 0, changed = 0;
  for (int i = 0; i < 2; i++) {
    gc_op *t = def_of(in[i], GC_OP_TRANSPOSE);
    const gc_attr *a = gc_op_attr(op, flag[i]);
    /* fp8: A K-major is transpose_a false, B K-major is transpose_b true; keep them so */
    int keep = graphc_dtype_size(in[i]->type.dtype) == 1 && in[i]->type.dtype != GRAPHC_DTYPE_BOOL &&
               gc_op_attr_bool(op, flag[i], 0) == i;
    if (t && is_matrix_transpose(t) && !keep) {
      in[i] = t->operands[0];
      changed = 1;
      if (!gc_op_attr_bool(op, flag[i], 0))
        at[n++] = (gc_named_attr){flag[i], {.kind = GC_ATTR_BOOL, .u.b = 1}};
    } else if (a) {
      at[n++] = (gc_named_attr){flag[i], *a};
    }
  }
  if (changed) gc_rw_replace_with_new(rw, op, GC_OP_MATMUL, 2, in, n, at);
}

/* Apply the rewrite for op's opcode, if any matches. */
static void simplify_op(gc_rewriter *rw, gc_op *op) {
  switch (op->opcode) {
    case GC_OP_ADD:
    case GC_OP_SUB:
    case GC_OP_MUL:
    case GC_OP_DIV: simplify_binary(rw, op); break;
    case GC_OP_NEG: {
      gc_op *inner = def_of(op->operands[0], GC_OP_NEG);
      if (inner) forward(rw, op, inner->operands[0]);
      break;
    }
    case GC_OP_TRANSPOSE: simplify_transpose(rw, op); break;
    case GC_OP_RESHAPE:
    case GC_OP_BROADCAST: simplify_move(rw, op); break;
    case GC_OP_CAST: simplify_cast(rw, op); break;
    case GC_OP_SELECT: simplify_select(rw, op); break;
    case GC_OP_MATMUL: simplify_matmul(rw, op); break;
    default: break;
  }
}

/* One walk in program order; rewrites see the already simplified operands, so
 * chains (neg(neg(neg(neg(x))))) collapse in one run. Returns the rewrite count. */
int gc_pass_simplify(gc_graph *g, gc_diags *d) {
  gc_rewriter rw;
  if (gc_rw_init(&rw, g, d) != 0) return -1;
  for (gc_op *op = g->first, *next; op && !rw.oom; op = next) {
    next = op->next;
    gc_rw_resolve_operands(&rw, op);
    simplify_op(&rw, op);
  }
  return gc_rw_finish(&rw);
}
