/* emit_tc.c - what the tensor-core matmul kernels (emit_mma.c, emit_wgmma.c) and the
 * attention kernel (emit_attn.c) share with the matmul dispatcher (emit_linalg.c):
 * the matmul's shape, batch coordinates, output points and epilogue; operands read
 * in place as strided windows of their buffers; the plan that decides how each
 * operand reaches the tensor cores; and the epilogue over a register tile. Every
 * one of those files calls down into this one, which calls none of them.
 */
#include <string.h>

#include "codegen/emit_tc.h"

/* i64 helpers on variables. */
static kir_expr *vx(gc_lowerer *c, kir_kernel *k, int v) { return ec_v(c, k, v); }
static kir_expr *cx(gc_lowerer *c, int64_t v) { return ec_i64(c, v); }
static kir_expr *lt(gc_lowerer *c, kir_expr *a, kir_expr *b) { return ec_bin(c, KIR_LT, a, b); }

/* ---- matmul pieces ------------------------------------------------------------------------ */

/* Sizes, transpose flags and batch dims of a matmul. */
void gc_mm_shape_of(const gc_op *op, gc_mm_shape *s) {
  const gc_type *a = &op->operands[0]->type, *o = &op->results[0]->type;
  s->ta = gc_op_attr_bool(op, "transpose_a", 0);
  s->tb = gc_op_attr_bool(op, "transpose_b", 0);
  s->M = o->dims[o->rank - 2];
  s->N = o->dims[o->rank - 1];
  s->K = s->ta ? a->dims[a->rank - 2] : a->dims[a->rank - 1];
  s->ob = o->rank - 2;
  for (int i = 0; i < s->ob; i++) s->obdims[i] = o->dims[i];
  s->batch = gc_ec_prod(o->dims, 0, s->ob);
}

/* Output batch coordinates of batch index var `bi` (unit dims: GC_PT_ZERO). */
void gc_mm_batch_coords(gc_lowerer *c, kir_kernel *k, kir_block *b, const gc_mm_shape *s, int bi,
                        int *bco) {
  if (s->ob == 0) return;
  gc_ec_unravel(c, k, b, bi, s->ob, s->obdims, bco);
  for (int i = 0; i < s->ob; i++)
    if (s->obdims[i] == 1) bco[i] = GC_PT_ZERO;
}

/* Output point (batch coords, m, n) of the result o. */
int gc_mm_out_point(gc_gen *G, const gc_value *o, const gc_mm_shape *s, const int *bco, int m, int n,
                    int lin) {
  int co[GC_MAX_RANK];
  for (int i = 0; i < s->ob; i++) co[i] = bco[i];
  co[s->ob] = s->M == 1 ? GC_PT_ZERO : m;
  co[s->ob + 1] = s->N == 1 ? GC_PT_ZERO : n;
  return gc_gen_pt(G, &o->type, lin, co);
}

/* Value of operand x at matrix coordinates (r0, r1) (x's own last two dims) and
 * the output batch coordinates bco (numpy-broadcast into x's batch dims). */
int gc_mm_operand(gc_gen *G, kir_block *b, const gc_value *x, const gc_mm_shape *s, const int *bco, int r0,
                  int r1) {
  const gc_type *t = &x->type;
  int bx = t->rank - 2, co[GC_MAX_RANK];
  for (int j = 0; j < bx; j++) co[j] = t->dims[j] == 1 ? GC_PT_ZERO : bco[j + s->ob - bx];
  co[bx] = r0;
  co[bx + 1] = r1;
  return gc_gen_val(G, b, x, gc_gen_pt(G, t, -1, co));
}

/* Bind the root's accumulated value at pt and store the group's outputs (epilogue). */
void gc_mm_epilogue(gc_gen *G, kir_block *b, const gc_fusion_group *grp, int pt, kir_expr *acc) {
  const gc_value *rv = grp->roots[0]->results[0];
  int v = gc_ec_let(G->c, G->k, b, rv->name, gc_ec_round(G->c, rv->type.dtype, acc));
  gc_gen_bind(G, rv, pt, v);
  gc_gen_store_outs(G, b, grp, pt);
}

/* ---- operands as strided windows ---------------------------------------------------------- */

/* Strides of a reshape of a strided view (ir/util.c), or 0 when it is not a view. */
static int tc_reshape(const gc_type *it, const tc_view_t *in, const gc_type *ot, tc_view_t *o) {
  return gc_reshape_strides(it, in->st, ot, o->st);
}

/* Is value v (as the group reads it) a strided window of one buffer? Follows the
 * ops the group computes inline, like emit_linalg.c's view_index. */
static int tc_view(const gc_lowerer *c, const gc_value *v, tc_view_t *o) {
  const gc_type *t = &v->type;
  const gc_op *op = v->def;
  if (!op || !c->inl[op->id]) {
    o->base = v;
    o->off = 0;
    int64_t s = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
      o->st[i] = s;
      s *= t->dims[i];
    }
    return 1;
  }
  if (op->n_operands == 0) return 0;
  const gc_value *x = op->operands[0];
  const gc_type *it = &x->type;
  tc_view_t in;
  if (x->type.dtype != t->dtype || !tc_view(c, x, &in)) return 0;
  o->base = in.base;
  o->off = in.off;
  int64_t a[2 * GC_MAX_RANK];
  switch (op->opcode) {
    case GC_OP_RESHAPE: return tc_reshape(it, &in, t, o);
    case GC_OP_TRANSPOSE:
      if (gc_attr_ints(gc_op_attr(op, "perm"), a, GC_MAX_RANK) != t->rank) return 0;
      for (int i = 0; i < t->rank; i++) o->st[i] = in.st[a[i]];
      return 1;
    case GC_OP_BROADCAST:
      for (int i = 0; i < t->rank; i++) {
        int j = i - (t->rank - it->rank);
        o->st[i] = (j < 0 || it->dims[j] == 1) ? 0 : in.st[j];
      }
      return 1;
    case GC_OP_SLICE: {
      int64_t st[GC_MAX_RANK];
      if (gc_attr_ints(gc_op_attr(op, "start"), a, GC_MAX_RANK) != it->rank) return 0;
      for (int i = 0; i < it->rank; i++) st[i] = 1;
      if (gc_op_attr(op, "step") && gc_attr_ints(gc_op_attr(op, "step"), st, GC_MAX_RANK) != it->rank) return 0;
      for (int i = 0; i < it->rank; i++) {
        if (st[i] < 1) return 0;
        int64_t s0 = a[i] < 0 ? a[i] + it->dims[i] : a[i];
        s0 = s0 < 0 ? 0 : s0 > it->dims[i] ? it->dims[i] : s0;
        o->off += s0 * in.st[i];
        o->st[i] = in.st[i] * st[i];
      }
      return 1;
    }
    case GC_OP_SPLIT: {
      int axis = gc_ec_axis(gc_op_attr_int(op, "axis", 0), it->rank);
      for (int i = 0; i < it->rank; i++) o->st[i] = in.st[i];
      for (int r = 0; r < v->def_index; r++) o->off += op->results[r]->type.dims[axis] * in.st[axis];
      return 1;
    }
    default: return 0;
  }
}

void gc_tc_round_tf32(gc_lowerer *c, kir_kernel *k, kir_block *b, int var) {
  kir_expr *x = vx(c, k, var);
  int bits = x->type != GRAPHC_DTYPE_F32;
  if (bits) x = kir_bitcast(c->km, GRAPHC_DTYPE_F32, x);
  kir_expr *r = kir_unary(c->km, KIR_TF32_ROUND, x);
  kir_emit_assign(c->km, b, var, bits ? kir_bitcast(c->km, GRAPHC_DTYPE_I32, r) : r);
}

/* Fill o for operand x whose logical (row, k) are its (last-2, last-1) dims, or
 * swapped when `swap`; checks 16-byte alignment of every chunk. */
int gc_tc_operand(const gc_lowerer *c, const gc_value *x, int swap, tc_opnd *o) {
  if (!tc_view(c, x, &o->v)) return 0;
  if (c->val_buf[o->v.base->id] < 0) return 0;
  o->rank = x->type.rank;
  int r = o->rank;
  o->s_outer = swap ? o->v.st[r - 1] : o->v.st[r - 2];
  o->s_k = swap ? o->v.st[r - 2] : o->v.st[r - 1];
  return 1;
}

/* Every 8-element chunk along dim `chunk` (stride 1) of operand x starts 16-byte aligned:
 * the offset and every other stride are multiples of 8 elements. */
int gc_tc_aligned(const gc_value *x, const tc_opnd *o, int chunk, int epc) {
  if (o->v.off % epc || o->v.st[chunk] != 1) return 0;
  for (int i = 0; i < o->rank; i++)
    if (i != chunk && x->type.dims[i] > 1 && o->v.st[i] % epc) return 0;
  return 1;
}

/* Element offset of an operand's batch for output batch coordinates bco. */
kir_expr *gc_tc_batch_off(gc_lowerer *c, kir_kernel *k, const gc_value *x, const tc_opnd *o,
                              const gc_mm_shape *s, const int *bco) {
  kir_expr *e = ec_i64(c, o->v.off);
  int bx = o->rank - 2;
  for (int j = 0; j < bx; j++) {
    if (x->type.dims[j] == 1 || o->v.st[j] == 0) continue;
    int v = bco[j + s->ob - bx];
    if (v == GC_PT_ZERO) continue;
    e = ec_add(c, e, ec_mul(c, ec_v(c, k, v), ec_i64(c, o->v.st[j])));
  }
  return e;
}

/* Does an NHWC im2col with half a chunk of channels (C = epc / 2: the layout pass's pair
 * form of a stem) load a chunk at a time? A chunk, 8 K values from a multiple of 8, is
 * taps kw, kw + 1 of one window row (kw even: KW even) at pixels iw, iw + 1 (dilation 1)
 * with iw = ow*stride - pad_left + kw even (stride and left padding even): with W even
 * both pixels are inside x or both outside, one bounds test, and the chunk's offset
 * ((n*H + ih)*W + iw)*C is a multiple of 8 elements (16 bytes). The formulas of the
 * whole-chunk case give its first element unchanged: tap kk / C, channel kk % C = 0. */
static int tc_nhwc_pairs(const gc_im2col_geom *g, int epc) {
  return g->nhwc && g->C * 2 == epc && g->kern[1] % 2 == 0 && g->dil[1] == 1 && g->st[1] % 2 == 0 &&
         g->pad[1] % 2 == 0 && g->W % 2 == 0;
}

/* ---- the plan -------------------------------------------------------------------------------- */

/* How the tensor cores read a matmul group's operands; see emit_tc.h. */
int gc_tc_plan_of(gc_lowerer *c, const gc_fusion_group *grp, const gc_mm_shape *s, gc_tc_plan *p) {
  memset(p, 0, sizeof *p);
  if (c->t->kind != KIR_TARGET_CUDA || c->t->sm < 80) return 0;
  const gc_op *op = grp->roots[0];
  const gc_value *A = op->operands[0], *B = op->operands[1];
  gc_dtype dt = A->type.dtype;
  int tf32 = dt == GRAPHC_DTYPE_F32 && c->t->tf32;  /* f32 operands read as tf32 (opt-in) */
  /* 8-bit operands (fp8 with fp8 into f32, i8 / u8 with i8 / u8 into i32): only the warpgroup
   * kernel (no mma.sync form here) */
  int f8 = (gc_dtype_is_f8(dt) && gc_dtype_is_f8(B->type.dtype)) ||
           (kir_mma_byte_kind(dt) >= KIR_MMA_S8 && B->type.dtype == dt);  /* s8 x u8 needs PTX 8.4 */
  if (f8 && !c->t->wgmma) return 0;
  if (!f8 && ((dt != GRAPHC_DTYPE_F16 && dt != GRAPHC_DTYPE_BF16 && !tf32) || B->type.dtype != dt)) return 0;
  const int epc = tf32 ? 4 : f8 ? 16 : 8, bk = 4 * epc;  /* 16-byte chunks: 4 per tile row of K */
  /* small outputs: below 32 rows or columns most of a 64-wide tile would compute
   * nothing (tf32's 128x128 tiles: below 64). A conv over 7x7 pixels (N 49) still
   * runs far faster on the tensor cores than on the CUDA cores. */
  int64_t min_mn = tf32 || f8 ? 64 : 32;
  if (s->M < min_mn || s->N < min_mn || s->K < 16 || s->batch < 1) return 0;
  /* K not a multiple of a 16-byte chunk (a 7x7 conv over 3 channels: K 147): both operands
   * are staged element by element, the chunks' tails past K zero */
  int odd_k = s->K % epc != 0;
  /* A: K contiguous. B ("outer" is N): N contiguous (stored K x N) or K contiguous.
   * Otherwise the operand is staged element by element (a_gen / b_gen). */
  tc_opnd oa = {0}, ob = {0};
  int ra = A->type.rank, rb = B->type.rank;
  int a_gen = odd_k || !gc_tc_operand(c, A, s->ta, &oa) || !gc_tc_aligned(A, &oa, s->ta ? ra - 2 : ra - 1, epc);
  int b_gen = odd_k || !gc_tc_operand(c, B, !s->tb, &ob), b_nmajor;
  if (!b_gen && s->N % epc == 0 && gc_tc_aligned(B, &ob, s->tb ? rb - 2 : rb - 1, epc))
    b_nmajor = 1;
  else if (!b_gen && gc_tc_aligned(B, &ob, s->tb ? rb - 1 : rb - 2, epc))
    b_nmajor = 0;
  else {
    b_gen = 1;
    b_nmajor = s->N % epc == 0;
  }

  /* B an im2col (of an NCHW conv) the group computes: staged by tc_stage_im2col in
   * chunks along the output pixels, whatever N is (its pixel and in-plane offsets
   * are i32: planes and pixel counts below 2^31, else the generic staging) */
  const gc_op *bic = B->def;
  int b_im2col = !f8 && b_gen && !s->tb && rb == 3 && bic && bic->opcode == GC_OP_IM2COL && c->inl[bic->id] &&
                 !gc_op_attr(bic, "layout") &&
                 s->N < INT32_MAX / 2 && bic->operands[0]->type.dims[2] * bic->operands[0]->type.dims[3] < INT32_MAX / 2;
  if (b_im2col) b_nmajor = 1;
  /* A an NHWC im2col (the layout pass's convs) of a materialized x whose channels come
   * in whole 16-byte chunks, or in half chunks whose pixels pair up (tc_nhwc_pairs): a
   * cp.async per chunk (tc_issue_nhwc) */
  const gc_op *aic = A->def;
  const gc_value *ax = aic && aic->opcode == GC_OP_IM2COL ? aic->operands[0] : NULL;
  gc_im2col_geom age;
  if (ax) gc_im2col_geom_of(aic, &age);
  int a_nhwc = !f8 && a_gen && !s->ta && ra == 2 && ax && age.nhwc && c->inl[aic->id] && ax->type.dtype == dt &&
               (age.C % epc == 0 || tc_nhwc_pairs(&age, epc)) && c->val_buf[ax->id] >= 0 &&
               !(ax->def && c->inl[ax->def->id]);

  char *key = p->key;
  gc_tuning_key_mm(key, dt, s->batch, s->M, s->N, s->K, s->ta, s->tb);
  const gc_tuning_entry *te = gc_tuning_find(c->t->tuning, key);
  /* K of at most two 64-deep steps (attention's batched QK^T and PV, 1x1 convs over 64 or
   * 128 channels) and no tuning entry: the mma.sync kernel, 128x64 tiles first (kir_target
   * short_k_mma). With so little K per tile the tile's loads and stores dominate, and the
   * small tiles keep more blocks per SM. On the H200 (`graphc tune`, 2026-12-01) f16
   * 16 x 1024x1024x64 took 0.026-0.027 ms with 128x64 tiles here, 0.040 with 128x128, and
   * 0.033-0.040 ms with every wgmma tile (0.039 with the heuristic's 128x256); 1 x
   * 4096x4096x128 0.032 against 0.039-0.044 (docs/performance.md). */
  int short_k = !f8 && c->t->short_k_mma && !te && s->K <= 128;
  p->dt = dt;
  p->tf32 = tf32;
  p->f8 = f8;
  p->epc = epc;
  p->bk = bk;
  p->oa = oa;
  p->ob = ob;
  p->a_gen = a_gen;
  p->b_gen = b_gen;
  p->b_nmajor = b_nmajor;
  p->b_im2col = b_im2col;
  p->bic = bic;
  p->aic = aic;
  p->ax = ax;
  p->a_nhwc = a_nhwc;
  p->te = te;
  p->short_k = short_k;
  return 1;
}

/* ---- the epilogue of a register tile --------------------------------------------------------- */

/* Epilogue of a register tile (see emit_tc.h). */
void gc_tc_store_tile(gc_gen *G, kir_block *b, const gc_fusion_group *grp, const gc_mm_shape *s,
                      const int *bco, int nr, const int *rows, int nq, const int (*cols)[2], const int *acc,
                      int adjacent) {
  int pairs = adjacent && s->N % 2 == 0;
  gc_lowerer *c = G->c;
  kir_kernel *k = G->k;
  const gc_op *op = grp->roots[0];
  for (int r = 0; r < nr; r++) {
    kir_block *rb;
    kir_emit_if(c->km, b, lt(c, vx(c, k, rows[r]), cx(c, s->M)), &rb, NULL);
    for (int q = 0; q < nq && pairs; q++) {
      /* N even: both columns of a pair are in range together, and their outputs go
       * out as one 2-element vector store (gc_gen_store_outs_vec) */
      kir_block *tb;
      kir_emit_if(c->km, rb, lt(c, vx(c, k, cols[q][0]), cx(c, s->N)), &tb, NULL);
      gc_gen_push(G);
      const gc_value *rv = op->results[0];
      int pts[2];
      for (int e = 0; e < 2; e++) {
        pts[e] = gc_mm_out_point(G, rv, s, bco, rows[r], cols[q][e], -1);
        kir_expr *y = gc_ec_round(c, rv->type.dtype, vx(c, k, acc[(r * nq + q) * 2 + e]));
        gc_gen_bind(G, rv, pts[e], gc_ec_let(c, k, tb, rv->name, y));
      }
      gc_gen_store_outs_vec(G, tb, grp, pts, 2);
      gc_gen_pop(G);
    }
    for (int q = 0; q < nq && !pairs; q++)
      for (int e = 0; e < 2; e++) {
        kir_block *tb;
        kir_emit_if(c->km, rb, lt(c, vx(c, k, cols[q][e]), cx(c, s->N)), &tb, NULL);
        gc_gen_push(G);
        int pt = gc_mm_out_point(G, op->results[0], s, bco, rows[r], cols[q][e], -1);
        gc_mm_epilogue(G, tb, grp, pt, vx(c, k, acc[(r * nq + q) * 2 + e]));
        gc_gen_pop(G);
      }
  }
}

