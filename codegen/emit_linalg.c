/* emit_linalg.c - matmul, conv2d, max_pool2d, avg_pool2d.
 *
 *   matmul, CUDA: shared-memory tiles. A BLOCKS launch over (batch, tile_m,
 *       tile_n) groups of 256 threads; each group computes a 32x32 output tile,
 *       each thread 4 rows of one column; A and B tiles (32x33, padded against
 *       bank conflicts) are staged per 32-wide K step, loaded so that consecutive
 *       threads read consecutive addresses whatever the transpose flags.
 *   matmul, host: ITEMS over outputs, a loop over K.
 *   conv2d, pools: ITEMS over outputs with loops over C/groups, KH, KW and
 *       bounds tests for padding (direct convolution).
 * Accumulation: f32 (f64 for f64, i64 for ints, which wrap on the store).
 */
#include <math.h>

#include "emit.h"

/* Tile geometry of the CUDA matmul kernel. */
enum { MM_T = 32, MM_PAD = MM_T + 1, MM_ROWS = 8, MM_RPT = MM_T / MM_ROWS };

/* i64 bounds test lo <= v < hi on a var (lo omitted when the var cannot be negative). */
static kir_expr *in_range(gc_lowerer *c, kir_kernel *k, int v, int64_t hi, int check_lo) {
  kir_expr *e = ec_bin(c, KIR_LT, ec_v(c, k, v), ec_i64(c, hi));
  if (check_lo) e = ec_bin(c, KIR_AND, ec_bin(c, KIR_GE, ec_v(c, k, v), ec_i64(c, 0)), e);
  return e;
}

/* ---- matmul --------------------------------------------------------------------------------- */

typedef struct mm_shape {
  int64_t M, N, K, batch;
  int ta, tb;
  gc_ec_space bs;            /* batch dims with views 0 (a offset) and 1 (b offset) */
} mm_shape;

/* Sizes, transpose flags and the broadcast batch views of a matmul. */
static void mm_shape_of(const gc_op *op, mm_shape *s) {
  const gc_type *a = &op->operands[0]->type, *b = &op->operands[1]->type, *o = &op->results[0]->type;
  s->ta = gc_op_attr_bool(op, "transpose_a", 0);
  s->tb = gc_op_attr_bool(op, "transpose_b", 0);
  s->M = o->dims[o->rank - 2];
  s->N = o->dims[o->rank - 1];
  s->K = s->ta ? a->dims[a->rank - 2] : a->dims[a->rank - 1];
  int ob = o->rank - 2;
  s->bs.rank = ob;
  s->bs.nv = 0;
  for (int i = 0; i < ob; i++) s->bs.dims[i] = o->dims[i];
  for (int opnd = 0; opnd < 2; opnd++) {
    const gc_type *t = opnd ? b : a;
    int tb_ = t->rank - 2;
    int64_t st[GC_MAX_RANK] = {0}, stride = t->dims[t->rank - 2] * t->dims[t->rank - 1];
    for (int j = tb_ - 1; j >= 0; j--) {
      int i = j + ob - tb_;
      st[i] = t->dims[j] == 1 ? 0 : stride;
      stride *= t->dims[j];
    }
    gc_ec_space_add(&s->bs, 0, st);
  }
  s->batch = gc_ec_space_numel(&s->bs);
  gc_ec_space_simplify(&s->bs);
}

/* Element (row, col) of A [M,K] or B [K,N] with the transpose flag applied. */
static kir_expr *mm_elem(gc_lowerer *c, kir_kernel *k, int off, int row, int col, int trans,
                         int64_t rows, int64_t cols) {
  kir_expr *e = trans ? ec_add(c, ec_mul(c, ec_v(c, k, col), ec_i64(c, rows)), ec_v(c, k, row))
                      : ec_add(c, ec_mul(c, ec_v(c, k, row), ec_i64(c, cols)), ec_v(c, k, col));
  return ec_add(c, ec_v(c, k, off), e);
}

/* One staged element: shared[sr * MM_PAD + sc] = (gr < rows && gc < cols) ? X[gr, gc] : 0. */
static void mm_stage(gc_lowerer *c, kir_kernel *k, kir_block *b, int sh, int pin, int off, int sr,
                     int sc, int gr, int gcol, int trans, int64_t rows, int64_t cols, gc_dtype at) {
  kir_expr *cond = ec_bin(c, KIR_AND, in_range(c, k, gr, rows, 0), in_range(c, k, gcol, cols, 0));
  kir_block *tb, *eb;
  kir_emit_if(c->km, b, cond, &tb, &eb);
  kir_expr *si = ec_add(c, ec_mul(c, ec_v(c, k, sr), ec_i64(c, MM_PAD)), ec_v(c, k, sc));
  kir_expr *x = ec_cast(c, at, gc_ec_load(c, k, pin, mm_elem(c, k, off, gr, gcol, trans, rows, cols)));
  kir_emit_store(c->km, tb, KIR_SHARED, sh, si, x);
  si = ec_add(c, ec_mul(c, ec_v(c, k, sr), ec_i64(c, MM_PAD)), ec_v(c, k, sc));
  kir_emit_store(c->km, eb, KIR_SHARED, sh, si, gc_ec_num(c, at, 0.0));
}

/* The tiled CUDA kernel. */
static kir_kernel *mm_tiled(gc_lowerer *c, const gc_op *op, const mm_shape *s, gc_dtype at) {
  int64_t TM = (s->M + MM_T - 1) / MM_T, TN = (s->N + MM_T - 1) / MM_T;
  kir_kernel *k = gc_ec_kernel(c, op, NULL, KIR_LAUNCH_BLOCKS, s->batch * TM * TN, MM_T * MM_ROWS);
  int pa = gc_ec_param(c, k, "a", op->operands[0], 1);
  int pb = gc_ec_param(c, k, "b", op->operands[1], 1);
  int po = gc_ec_param(c, k, "out", op->results[0], 0);
  int sa = kir_add_shared(c->km, k, at, MM_T * MM_PAD);
  int sb = kir_add_shared(c->km, k, at, MM_T * MM_PAD);
  kir_block *b = &k->body;
  int64_t dims3[3] = {s->batch, TM, TN};
  int co[3];
  gc_ec_unravel(c, k, b, k->item_var, 3, dims3, co);
  kir_expr *boff[GC_EC_MAX_VIEWS];
  gc_ec_space_index(c, k, b, &s->bs, co[0], boff);
  int aoff = gc_ec_let(c, k, b, "aoff", boff[0]);
  int bof = gc_ec_let(c, k, b, "boff", boff[1]);
  int obase = gc_ec_let(c, k, b, "obase", ec_mul(c, ec_v(c, k, co[0]), ec_i64(c, s->M * s->N)));
  int m0 = gc_ec_let(c, k, b, "m0", ec_mul(c, ec_v(c, k, co[1]), ec_i64(c, MM_T)));
  int n0 = gc_ec_let(c, k, b, "n0", ec_mul(c, ec_v(c, k, co[2]), ec_i64(c, MM_T)));
  int tid = gc_ec_let(c, k, b, "tid", ec_thread(c));
  int tx = gc_ec_let(c, k, b, "tx", ec_bin(c, KIR_REM, ec_v(c, k, tid), ec_i64(c, MM_T)));
  int ty = gc_ec_let(c, k, b, "ty", ec_bin(c, KIR_DIV, ec_v(c, k, tid), ec_i64(c, MM_T)));
  int acc[MM_RPT];
  for (int j = 0; j < MM_RPT; j++) acc[j] = gc_ec_let(c, k, b, "acc", gc_ec_num(c, at, 0.0));

  int k0 = gc_ec_var(c, k, "k0", GRAPHC_DTYPE_I64);
  kir_block *kb = kir_emit_for(c->km, b, k0, ec_i64(c, 0), ec_i64(c, s->K), ec_i64(c, MM_T));
  for (int j = 0; j < MM_RPT; j++) {
    int row = gc_ec_let(c, k, kb, "row", ec_add(c, ec_v(c, k, ty), ec_i64(c, MM_ROWS * j)));
    /* A tile: (mm, kk); the contiguous dim of A in memory follows tx. */
    int am = s->ta ? tx : row, ak = s->ta ? row : tx;
    int gm = gc_ec_let(c, k, kb, "gm", ec_add(c, ec_v(c, k, m0), ec_v(c, k, am)));
    int gk = gc_ec_let(c, k, kb, "gk", ec_add(c, ec_v(c, k, k0), ec_v(c, k, ak)));
    mm_stage(c, k, kb, sa, pa, aoff, am, ak, gm, gk, s->ta, s->M, s->K, at);
    /* B tile: (bk, bn). */
    int bn = s->tb ? row : tx, bk = s->tb ? tx : row;
    gk = gc_ec_let(c, k, kb, "gk", ec_add(c, ec_v(c, k, k0), ec_v(c, k, bk)));
    int gn = gc_ec_let(c, k, kb, "gn", ec_add(c, ec_v(c, k, n0), ec_v(c, k, bn)));
    mm_stage(c, k, kb, sb, pb, bof, bk, bn, gk, gn, s->tb, s->K, s->N, at);
  }
  kir_emit_barrier(c->km, kb);
  int kk = gc_ec_var(c, k, "kk", GRAPHC_DTYPE_I64);
  kir_block *ib = kir_emit_for(c->km, kb, kk, ec_i64(c, 0), ec_i64(c, MM_T), ec_i64(c, 1));
  kir_expr *bi = ec_add(c, ec_mul(c, ec_v(c, k, kk), ec_i64(c, MM_PAD)), ec_v(c, k, tx));
  int bv = gc_ec_let(c, k, ib, "bv", kir_load(c->km, k, KIR_SHARED, sb, bi));
  for (int j = 0; j < MM_RPT; j++) {
    kir_expr *r = ec_add(c, ec_v(c, k, ty), ec_i64(c, MM_ROWS * j));
    kir_expr *ai = ec_add(c, ec_mul(c, r, ec_i64(c, MM_PAD)), ec_v(c, k, kk));
    kir_expr *prod = ec_bin(c, KIR_MUL, kir_load(c->km, k, KIR_SHARED, sa, ai), ec_v(c, k, bv));
    kir_emit_assign(c->km, ib, acc[j], ec_bin(c, KIR_ADD, ec_v(c, k, acc[j]), prod));
  }
  kir_emit_barrier(c->km, kb);

  int gn = gc_ec_let(c, k, b, "gn", ec_add(c, ec_v(c, k, n0), ec_v(c, k, tx)));
  for (int j = 0; j < MM_RPT; j++) {
    kir_expr *r = ec_add(c, ec_v(c, k, ty), ec_i64(c, MM_ROWS * j));
    int gm = gc_ec_let(c, k, b, "gm", ec_add(c, ec_v(c, k, m0), r));
    kir_expr *cond = ec_bin(c, KIR_AND, in_range(c, k, gm, s->M, 0), in_range(c, k, gn, s->N, 0));
    kir_block *tb;
    kir_emit_if(c->km, b, cond, &tb, NULL);
    kir_expr *oi = ec_add(c, ec_mul(c, ec_v(c, k, gm), ec_i64(c, s->N)), ec_v(c, k, gn));
    gc_ec_store(c, k, tb, po, ec_add(c, ec_v(c, k, obase), oi), ec_v(c, k, acc[j]));
  }
  return k;
}

/* The host kernel: one item per output, a dot product over K. */
static kir_kernel *mm_items(gc_lowerer *c, const gc_op *op, const mm_shape *s, gc_dtype at) {
  kir_kernel *k = gc_ec_kernel(c, op, NULL, KIR_LAUNCH_ITEMS, s->batch * s->M * s->N, 256);
  int pa = gc_ec_param(c, k, "a", op->operands[0], 1);
  int pb = gc_ec_param(c, k, "b", op->operands[1], 1);
  int po = gc_ec_param(c, k, "out", op->results[0], 0);
  kir_block *b = &k->body;
  int64_t dims3[3] = {s->batch, s->M, s->N};
  int co[3];
  gc_ec_unravel(c, k, b, k->item_var, 3, dims3, co);
  kir_expr *boff[GC_EC_MAX_VIEWS];
  gc_ec_space_index(c, k, b, &s->bs, co[0], boff);
  int aoff = gc_ec_let(c, k, b, "aoff", boff[0]);
  int bof = gc_ec_let(c, k, b, "boff", boff[1]);
  int acc = gc_ec_let(c, k, b, "acc", gc_ec_num(c, at, 0.0));
  int kk = gc_ec_var(c, k, "kk", GRAPHC_DTYPE_I64);
  kir_block *lb = kir_emit_for(c->km, b, kk, ec_i64(c, 0), ec_i64(c, s->K), ec_i64(c, 1));
  kir_expr *x = ec_cast(c, at, gc_ec_load(c, k, pa, mm_elem(c, k, aoff, co[1], kk, s->ta, s->M, s->K)));
  kir_expr *y = ec_cast(c, at, gc_ec_load(c, k, pb, mm_elem(c, k, bof, kk, co[2], s->tb, s->K, s->N)));
  kir_emit_assign(c->km, lb, acc, ec_bin(c, KIR_ADD, ec_v(c, k, acc), ec_bin(c, KIR_MUL, x, y)));
  gc_ec_store(c, k, b, po, ec_v(c, k, k->item_var), ec_v(c, k, acc));
  return k;
}

/* matmul: tiled BLOCKS kernel on CUDA, ITEMS dot products on the host. */
int gc_emit_matmul(gc_lowerer *c, const gc_op *op) {
  mm_shape s;
  mm_shape_of(op, &s);
  gc_dtype ct = gc_ec_compute_type(op->results[0]->type.dtype);
  gc_dtype at = gc_dtype_is_float(ct) ? ct : GRAPHC_DTYPE_I64;
  kir_kernel *k = c->t->kind == KIR_TARGET_CUDA ? mm_tiled(c, op, &s, at) : mm_items(c, op, &s, at);
  k->bytes_moved = gc_ec_bytes(&op->operands[0]->type) + gc_ec_bytes(&op->operands[1]->type) +
                   gc_ec_bytes(&op->results[0]->type);
  k->flops = 2.0 * (double)s.batch * (double)s.M * (double)s.N * (double)s.K;
  gc_ec_launch(c, k);
  return 0;
}

/* ---- conv2d and pools --------------------------------------------------------------------------- */

/* Window geometry shared by conv2d and the pools. */
typedef struct window {
  int64_t sh, sw, dh, dw, top, left;
  int64_t kh, kw;
} window;

/* stride/padding/dilation attributes; padding is [ph, pw] or [top, left, bottom, right]. */
static void window_of(const gc_op *op, int64_t kh, int64_t kw, int64_t dflt_sh, int64_t dflt_sw,
                      window *w) {
  int64_t v[4];
  w->kh = kh;
  w->kw = kw;
  w->sh = dflt_sh;
  w->sw = dflt_sw;
  w->dh = w->dw = 1;
  w->top = w->left = 0;
  const gc_attr *a;
  if ((a = gc_op_attr(op, "stride")) && gc_attr_ints(a, v, 4) == 2) {
    w->sh = v[0];
    w->sw = v[1];
  }
  if ((a = gc_op_attr(op, "dilation")) && gc_attr_ints(a, v, 4) == 2) {
    w->dh = v[0];
    w->dw = v[1];
  }
  if ((a = gc_op_attr(op, "padding")) && gc_attr_ints(a, v, 4) >= 2) {
    w->top = v[0];
    w->left = v[1];
  }
}

/* Input coordinate of a window tap: o * stride - pad + tap * dilation. */
static int tap_coord(gc_lowerer *c, kir_kernel *k, kir_block *b, int o, int64_t stride, int64_t pad,
                     int tap, int64_t dil) {
  kir_expr *e = ec_mul(c, ec_v(c, k, o), ec_i64(c, stride));
  e = ec_bin(c, KIR_SUB, e, ec_i64(c, pad));
  e = ec_add(c, e, ec_mul(c, ec_v(c, k, tap), ec_i64(c, dil)));
  return gc_ec_let(c, k, b, "ih", e);
}

/* conv2d: direct convolution, one item per output element. */
int gc_emit_conv(gc_lowerer *c, const gc_op *op) {
  const gc_value *xv = op->operands[0], *wv = op->operands[1], *ov = op->results[0];
  const gc_type *xt = &xv->type, *wt = &wv->type, *ot = &ov->type;
  int64_t C = xt->dims[1], H = xt->dims[2], W = xt->dims[3];
  int64_t O = wt->dims[0], Cg = wt->dims[1], KH = wt->dims[2], KW = wt->dims[3];
  int64_t G = gc_op_attr_int(op, "groups", 1), Og = O / G;
  window w;
  window_of(op, KH, KW, 1, 1, &w);
  gc_dtype at = gc_ec_compute_type(ot->dtype);
  kir_kernel *k = gc_ec_kernel(c, op, NULL, KIR_LAUNCH_ITEMS, gc_type_numel(ot), 256);
  int px = gc_ec_param(c, k, "x", xv, 1);
  int pw = gc_ec_param(c, k, "w", wv, 1);
  int po = gc_ec_param(c, k, "out", ov, 0);
  kir_block *b = &k->body;
  int co[4];
  gc_ec_unravel(c, k, b, k->item_var, 4, ot->dims, co);
  kir_expr *grp = ec_bin(c, KIR_DIV, ec_v(c, k, co[1]), ec_i64(c, Og));
  /* x[n, g*Cg + ci, ih, iw] and w[o, ci, kh, kw] */
  kir_expr *xb = ec_add(c, ec_mul(c, ec_v(c, k, co[0]), ec_i64(c, C)), ec_mul(c, grp, ec_i64(c, Cg)));
  int xbase = gc_ec_let(c, k, b, "xbase", ec_mul(c, xb, ec_i64(c, H * W)));
  int wbase = gc_ec_let(c, k, b, "wbase", ec_mul(c, ec_v(c, k, co[1]), ec_i64(c, Cg * KH * KW)));
  int acc = gc_ec_let(c, k, b, "acc", gc_ec_num(c, at, 0.0));
  int ci = gc_ec_var(c, k, "ci", GRAPHC_DTYPE_I64);
  kir_block *cb = kir_emit_for(c->km, b, ci, ec_i64(c, 0), ec_i64(c, Cg), ec_i64(c, 1));
  int kh = gc_ec_var(c, k, "kh", GRAPHC_DTYPE_I64);
  kir_block *hb = kir_emit_for(c->km, cb, kh, ec_i64(c, 0), ec_i64(c, KH), ec_i64(c, 1));
  int ih = tap_coord(c, k, hb, co[2], w.sh, w.top, kh, w.dh);
  kir_block *hin;
  kir_emit_if(c->km, hb, in_range(c, k, ih, H, 1), &hin, NULL);
  int kw = gc_ec_var(c, k, "kw", GRAPHC_DTYPE_I64);
  kir_block *wb = kir_emit_for(c->km, hin, kw, ec_i64(c, 0), ec_i64(c, KW), ec_i64(c, 1));
  int iw = tap_coord(c, k, wb, co[3], w.sw, w.left, kw, w.dw);
  kir_block *win;
  kir_emit_if(c->km, wb, in_range(c, k, iw, W, 1), &win, NULL);
  kir_expr *xi = ec_add(c, ec_v(c, k, xbase), ec_mul(c, ec_v(c, k, ci), ec_i64(c, H * W)));
  xi = ec_add(c, xi, ec_add(c, ec_mul(c, ec_v(c, k, ih), ec_i64(c, W)), ec_v(c, k, iw)));
  kir_expr *wi = ec_add(c, ec_v(c, k, wbase), ec_mul(c, ec_v(c, k, ci), ec_i64(c, KH * KW)));
  wi = ec_add(c, wi, ec_add(c, ec_mul(c, ec_v(c, k, kh), ec_i64(c, KW)), ec_v(c, k, kw)));
  kir_expr *prod = ec_bin(c, KIR_MUL, ec_cast(c, at, gc_ec_load(c, k, px, xi)),
                          ec_cast(c, at, gc_ec_load(c, k, pw, wi)));
  kir_emit_assign(c->km, win, acc, ec_bin(c, KIR_ADD, ec_v(c, k, acc), prod));
  gc_ec_store(c, k, b, po, ec_v(c, k, k->item_var), ec_v(c, k, acc));
  k->bytes_moved = gc_ec_bytes(xt) + gc_ec_bytes(wt) + gc_ec_bytes(ot);
  k->flops = 2.0 * (double)gc_type_numel(ot) * (double)(Cg * KH * KW);
  gc_ec_launch(c, k);
  return 0;
}

/* max_pool2d (padding reads -inf) and avg_pool2d (divides by in-bounds taps). */
int gc_emit_pool(gc_lowerer *c, const gc_op *op) {
  const gc_value *xv = op->operands[0], *ov = op->results[0];
  const gc_type *xt = &xv->type, *ot = &ov->type;
  int64_t H = xt->dims[2], W = xt->dims[3], ker[2];
  GC_ASSERT(gc_attr_ints(gc_op_attr(op, "kernel"), ker, 2) == 2);
  window w;
  window_of(op, ker[0], ker[1], ker[0], ker[1], &w);
  int is_max = op->opcode == GC_OP_MAX_POOL2D;
  gc_dtype at = gc_ec_compute_type(ot->dtype);
  kir_kernel *k = gc_ec_kernel(c, op, NULL, KIR_LAUNCH_ITEMS, gc_type_numel(ot), 256);
  int px = gc_ec_param(c, k, "x", xv, 1);
  int po = gc_ec_param(c, k, "out", ov, 0);
  kir_block *b = &k->body;
  int co[4];
  gc_ec_unravel(c, k, b, k->item_var, 4, ot->dims, co);
  /* plane (n, c) of x: (n * C + c) * H * W */
  kir_expr *plane = ec_add(c, ec_mul(c, ec_v(c, k, co[0]), ec_i64(c, xt->dims[1])), ec_v(c, k, co[1]));
  int xbase = gc_ec_let(c, k, b, "xbase", ec_mul(c, plane, ec_i64(c, H * W)));
  int acc = gc_ec_let(c, k, b, "acc", gc_ec_identity(c, is_max ? GC_EC_MAX : GC_EC_SUM, at));
  int cnt = is_max ? -1 : gc_ec_let(c, k, b, "cnt", gc_ec_num(c, at, 0.0));
  int kh = gc_ec_var(c, k, "kh", GRAPHC_DTYPE_I64);
  kir_block *hb = kir_emit_for(c->km, b, kh, ec_i64(c, 0), ec_i64(c, w.kh), ec_i64(c, 1));
  int ih = tap_coord(c, k, hb, co[2], w.sh, w.top, kh, w.dh);
  kir_block *hin;
  kir_emit_if(c->km, hb, in_range(c, k, ih, H, 1), &hin, NULL);
  int kw = gc_ec_var(c, k, "kw", GRAPHC_DTYPE_I64);
  kir_block *wb = kir_emit_for(c->km, hin, kw, ec_i64(c, 0), ec_i64(c, w.kw), ec_i64(c, 1));
  int iw = tap_coord(c, k, wb, co[3], w.sw, w.left, kw, w.dw);
  kir_block *win;
  kir_emit_if(c->km, wb, in_range(c, k, iw, W, 1), &win, NULL);
  kir_expr *xi = ec_add(c, ec_v(c, k, xbase), ec_add(c, ec_mul(c, ec_v(c, k, ih), ec_i64(c, W)), ec_v(c, k, iw)));
  int x = gc_ec_let(c, k, win, "x", gc_ec_load(c, k, px, xi));
  if (is_max) {
    kir_emit_assign(c->km, win, acc, gc_ec_maxmin(c, k, 1, acc, x));
  } else {
    kir_emit_assign(c->km, win, acc, ec_bin(c, KIR_ADD, ec_v(c, k, acc), ec_v(c, k, x)));
    kir_emit_assign(c->km, win, cnt, ec_bin(c, KIR_ADD, ec_v(c, k, cnt), gc_ec_num(c, at, 1.0)));
  }
  kir_expr *y = is_max ? ec_v(c, k, acc) : ec_bin(c, KIR_DIV, ec_v(c, k, acc), ec_v(c, k, cnt));
  gc_ec_store(c, k, b, po, ec_v(c, k, k->item_var), y);
  k->bytes_moved = gc_ec_bytes(xt) + gc_ec_bytes(ot);
  k->flops = (double)gc_type_numel(ot) * (double)(w.kh * w.kw);
  gc_ec_launch(c, k);
  return 0;
}
