/* qdq_fold.c - the "qdq-fold" pass: a matmul of two dequantized 8-bit tensors (fp8, or i8 / u8)
 * becomes an 8-bit matmul with the scales in its epilogue (TensorRT's explicit quantization).
 *
 *   y = matmul(DQ(a8, sa), DQ(b8, sb))        DQ(x8, s) = mul(cast(x8, f32), s), y f32
 *     ->
 *   m = matmul(a8, b8)                        f32 (ir/infer.c: fp8 operands give f32)
 *   y = mul(mul(m, sa'), sb')
 *
 * A matmul in f16 / bf16 of dequantized operands cast to it is left alone: there the graph
 * rounds every dequantized element to 11 (8) bits before the products, which the fp8 form
 * would not, and on cancelling sums that differs by far more than a rounding of the result.
 *
 * what the ONNX importer writes for DequantizeLinear of f8e4m3 / f8e5m2 (frontend/onnx_quant.c)
 * and what a .graph author writes by hand. a8 may be anything of an fp8 dtype: a param
 * (weights stored quantized), or a QuantizeLinear's cast(div(x, s), f8e4m3) computed at run
 * time (activations), which fusion then computes in its own kernel or the matmul's operand.
 *
 * The scales must factor out of the sum over K: sa per tensor or per row of A (every dim of
 * its shape 1 but M's), sb per tensor or per column of B (all 1 but N's); batch dims of the
 * scales 1. sa' is sa as [M, 1] (or a scalar), sb' as [N] (or a scalar). The rewrite is exact
 * up to f32 rounding: the fp8 products are exact in f32 either way, and sum(a sa b sb) equals
 * sa sb sum(a b) in real arithmetic; the error bound of the f32 sum over K is unchanged.
 * Scales that vary along K (block-wise quantization) are left alone, as are matmuls of which
 * only one side is fp8 (weight-only quantization keeps its f32 or f16 matmul). A 2-D fp8
 * weight stored K x N (ONNX MatMul's layout) is read as transpose(b8) with transpose_b: the
 * fp8 tensor cores read K-major operands only; fusion materializes the transpose once per
 * weights (codegen/fusion.c) and simplify leaves it (passes/simplify.c).
 *
 * 8-bit integers (what onnxruntime's static QDQ quantizer writes): DQ(x8, s, z) =
 * mul(sub(cast(x8, f32), z), s) with z a splat constant. An i8 / u8 A with any zero point za
 * against an i8 B without one becomes
 *   m = matmul(a', b8) + (off - za) colsum(b8)   i32, a' = a8 - off as i8 (off 128 for u8)
 *   y = cast(m, f32) * sa' * sb'
 * (the integer tensor cores take one kind for both operands; colsum reads the weights alone,
 * so the prologue computes it once; i32 sums wrap, and the result is exact while |m| < 2^31,
 * so K is at most 32768).
 *
 * Runs once before matmul-canon (which would put a reshape between the DQ and the matmul)
 * and not for the interpreter: the float64 reference keeps the dequantized form, so the
 * backends are checked against the graph as written.
 */
#include <math.h>
#include <string.h>

#include "passes/rewrite.h"

/* Is t one of the 8-bit integer dtypes? */
static int int8_dtype(gc_dtype t) { return t == GRAPHC_DTYPE_I8 || t == GRAPHC_DTYPE_U8; }

/* v = mul(c, s) or mul(s, c), f32, with c = cast(x8, f32) of an 8-bit x8 (fp8, i8, u8), or for
 * integers c = sub(cast(x8, f32), z) with z a splat constant (the zero point): x8, s and the
 * zero point (0 without one), else 0. */
static int dq_of(const gc_value *v, gc_value **x8, gc_value **s, double *zp) {
  const gc_op *m = v->def;
  if (!m || m->opcode != GC_OP_MUL || v->type.dtype != GRAPHC_DTYPE_F32) return 0;
  for (int i = 0; i < 2; i++) {
    const gc_op *c = m->operands[i]->def;
    *zp = 0;
    gc_scalar z;
    if (c && c->opcode == GC_OP_SUB && gc_value_const_splat(c->operands[1], &z) && isfinite(z.f) &&
        z.f == floor(z.f) && c->operands[0]->def) {
      *zp = z.f;
      c = c->operands[0]->def;
      if (c->opcode != GC_OP_CAST || !int8_dtype(c->operands[0]->type.dtype)) continue;
    }
    if (c && c->opcode == GC_OP_CAST && graphc_dtype_size(c->operands[0]->type.dtype) == 1 &&
        c->operands[0]->type.dtype != GRAPHC_DTYPE_BOOL) {
      *x8 = c->operands[0];
      *s = m->operands[1 - i];
      return 1;
    }
  }
  return 0;
}

/* Is v a weight: a param or const, through reshapes? */
static int weight_of(const gc_value *v) {
  const gc_op *d = v->def;
  while (d && d->opcode == GC_OP_RESHAPE) d = d->operands[0]->def;
  return d && (d->opcode == GC_OP_PARAM || d->opcode == GC_OP_CONST);
}


/* A scale s of an operand of rank r (right-aligned against it) whose only non-unit dim is
 * axis `keep` (of the operand): its element count (1 or the operand's dims[keep]), else 0. */
static int64_t scale_extent(const gc_value *s, int r, int keep) {
  const gc_type *t = &s->type;
  if (!gc_type_is_concrete(t) || t->rank > r) return 0;
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) {
    int axis = i + r - t->rank;
    if (t->dims[i] != 1 && axis != keep) return 0;
    n *= t->dims[i];
  }
  return n;
}

/* s reshaped to (rank, dims) before op unless it already has that shape; NULL on OOM. */
static gc_value *shaped(gc_rewriter *rw, gc_op *op, gc_value *s, int rank, const int64_t *dims) {
  if (s->type.rank == rank) {
    int same = 1;
    for (int i = 0; i < rank; i++) same &= s->type.dims[i] == dims[i];
    if (same) return s;
  }
  return gc_rw_reshape(rw, op, s, rank, dims);
}

/* A new binary op `opc` of a and b with result type t, before op; NULL on OOM. */
static gc_value *bin(gc_rewriter *rw, gc_op *op, gc_opcode opc, gc_value *a, gc_value *b, const gc_type *t,
                     const char *name) {
  gc_value *ab[2] = {a, b};
  gc_op *n = gc_rw_new_op(rw, opc, op, 2, ab, 0, NULL, t, name, op->loc);
  return n ? n->results[0] : NULL;
}

/* A splat i32 constant before op. */
static gc_value *i32_const(gc_rewriter *rw, gc_op *op, int64_t v) {
  gc_type t = {.dtype = GRAPHC_DTYPE_I32};
  gc_named_attr at[2] = {{"value", {.kind = GC_ATTR_INT, .u.i = v}}, {"dtype", gc_rw_attr_dtype(GRAPHC_DTYPE_I32)}};
  gc_op *c = gc_rw_new_op(rw, GC_OP_CONST, op, 0, NULL, 2, at, &t, NULL, op->loc);
  return c ? c->results[0] : NULL;
}

/* cast(v, to=dt) before op (v when it has dt). */
static gc_value *cast_to(gc_rewriter *rw, gc_op *op, gc_value *v, gc_dtype dt) {
  if (!v || v->type.dtype == dt) return v;
  gc_type t = v->type;
  t.dtype = dt;
  gc_named_attr to = {"to", gc_rw_attr_dtype(dt)};
  gc_op *c = gc_rw_new_op(rw, GC_OP_CAST, op, 1, &v, 1, &to, &t, NULL, op->loc);
  return c ? c->results[0] : NULL;
}

static void fold_matmul(gc_rewriter *rw, gc_op *op) {
  if (op->opcode != GC_OP_MATMUL) return;
  const gc_type *yt = &op->results[0]->type;
  gc_dtype dt = yt->dtype;
  if (dt != GRAPHC_DTYPE_F32) return;  /* see the top: f16 / bf16 round the operands first */
  if (!gc_type_is_concrete(yt)) return;
  gc_value *a8, *sa, *b8, *sb;
  double za, zb;
  if (!dq_of(op->operands[0], &a8, &sa, &za) || !dq_of(op->operands[1], &b8, &sb, &zb)) return;
  /* fp8 with fp8; or an 8-bit integer A (any zero point) with an i8 B without one */
  int f8 = gc_dtype_is_f8(a8->type.dtype) && gc_dtype_is_f8(b8->type.dtype) &&
           !gc_dtype_is_fnuz(a8->type.dtype) && !gc_dtype_is_fnuz(b8->type.dtype);
  int in = int8_dtype(a8->type.dtype) && b8->type.dtype == GRAPHC_DTYPE_I8 && zb == 0 &&
           za >= -255 && za <= 255;
  if (!f8 && !in) return;
  int ta = gc_op_attr_bool(op, "transpose_a", 0), tb = gc_op_attr_bool(op, "transpose_b", 0);
  int ra = op->operands[0]->type.rank, rb = op->operands[1]->type.rank;
  int64_t M = yt->dims[yt->rank - 2], N = yt->dims[yt->rank - 1], K = op->operands[0]->type.dims[ta ? ra - 2 : ra - 1];
  int64_t na = scale_extent(sa, ra, ta ? ra - 1 : ra - 2), nb = scale_extent(sb, rb, tb ? rb - 2 : rb - 1);
  if (!na || !nb || (na != 1 && na != M) || (nb != 1 && nb != N)) return;
  if (sa->type.dtype != GRAPHC_DTYPE_F32 || sb->type.dtype != GRAPHC_DTYPE_F32) return;
  /* integers: B's column sums correct A's offset below, for a 2-D B; the sums wrap in i32, and
   * the result is exact while |sum (a - za) b| < 2^31: K up to 32768 (383 x 128 x K) */
  if (in && (rb != 2 || K > 32768)) return;

  gc_type mt = *yt;
  mt.dtype = in ? GRAPHC_DTYPE_I32 : GRAPHC_DTYPE_F32;
  /* integers: (a - za) b = a' b + (off - za) colsum(b), a' = a - off as i8 (off 128 for a u8 A:
   * the integer tensor cores take one kind for both operands) */
  int64_t off = in && a8->type.dtype == GRAPHC_DTYPE_U8 ? 128 : 0, corr = off - (int64_t)za;
  gc_value *ai = a8;
  if (off) {
    gc_value *w = cast_to(rw, op, a8, GRAPHC_DTYPE_I32), *c = i32_const(rw, op, off);
    ai = w && c ? cast_to(rw, op, bin(rw, op, GC_OP_SUB, w, c, &w->type, NULL), GRAPHC_DTYPE_I8) : NULL;
    if (!ai) return;
  }
  /* m = matmul(a8, b8) in f32 (fp8) or i32, op's shape. A 2-D weight stored K x N is read
   * through its transpose, transpose_b set: the 8-bit tensor cores take K-major operands only,
   * and fusion materializes the transposed weight once per weights */
  gc_value *ab[2] = {ai, b8};
  gc_named_attr at[2];
  int nat = 0;
  for (int i = 0; i < op->n_attrs && nat < 1; i++)
    if (strcmp(op->attrs[i].name, "transpose_b") != 0) at[nat++] = op->attrs[i];
  if (!tb && rb == 2 && weight_of(b8)) {
    int64_t perm[2] = {1, 0}, d[2] = {b8->type.dims[1], b8->type.dims[0]};
    gc_named_attr pa = {"perm", gc_rw_attr_ints(rw, perm, 2)};
    gc_type tt = {.dtype = b8->type.dtype, .rank = 2, .dims = {d[0], d[1]}};
    gc_op *t = gc_rw_new_op(rw, GC_OP_TRANSPOSE, op, 1, &b8, 1, &pa, &tt, NULL, op->loc);
    if (!t) return;
    ab[1] = t->results[0];
    tb = 1;
  }
  if (tb) at[nat++] = (gc_named_attr){"transpose_b", {.kind = GC_ATTR_BOOL, .u.b = 1}};
  gc_op *mm = gc_rw_new_op(rw, GC_OP_MATMUL, op, 2, ab, nat, at, &mt, NULL, op->loc);
  if (!mm) return;
  gc_value *m = mm->results[0];
  if (corr) {  /* + corr * colsum(b): from the weights alone when b is one (the prologue) */
    int64_t kax = tb ? 1 : 0;
    gc_value *bw = cast_to(rw, op, ab[1], GRAPHC_DTYPE_I32);
    gc_named_attr ra_[1] = {{"axes", gc_rw_attr_ints(rw, &kax, 1)}};
    gc_type st = {.dtype = GRAPHC_DTYPE_I32, .rank = 1, .dims = {N}};
    gc_op *cs = bw ? gc_rw_new_op(rw, GC_OP_REDUCE_SUM, op, 1, &bw, 1, ra_, &st, NULL, op->loc) : NULL;
    gc_value *k = i32_const(rw, op, corr);
    gc_value *sc = cs && k ? bin(rw, op, GC_OP_MUL, cs->results[0], k, &st, NULL) : NULL;
    m = sc ? bin(rw, op, GC_OP_ADD, m, sc, &mt, NULL) : NULL;
  }
  gc_type ft = *yt;
  ft.dtype = GRAPHC_DTYPE_F32;
  m = cast_to(rw, op, m, GRAPHC_DTYPE_F32);
  int64_t da[2] = {M, 1}, db[1] = {N};
  gc_value *sa2 = na == 1 ? shaped(rw, op, sa, 0, NULL) : shaped(rw, op, sa, 2, da);
  gc_value *sb2 = nb == 1 ? shaped(rw, op, sb, 0, NULL) : shaped(rw, op, sb, 1, db);
  gc_value *v = m && sa2 && sb2 ? bin(rw, op, GC_OP_MUL, m, sa2, &ft, NULL) : NULL;
  v = v ? bin(rw, op, GC_OP_MUL, v, sb2, &ft, op->results[0]->name) : NULL;  /* takes op's name */
  if (v) gc_rw_replace_op(rw, op, &v);
}

int gc_pass_qdq_fold(gc_graph *g, gc_diags *d) {
  gc_rewriter rw;
  if (gc_rw_init(&rw, g, d) != 0) return -1;
  for (gc_op *op = g->first, *next; op && !rw.oom; op = next) {
    next = op->next;
    gc_rw_resolve_operands(&rw, op);
    fold_matmul(&rw, op);
  }
  return gc_rw_finish(&rw);
}
