/* emit_dwconv.c - grouped and depthwise conv2d (groups > 1), and conv2d in NHWC.
 *
 *   y[n, o, oh, ow] = sum over ci < Cg, kh, kw of x[n, (o / Og) Cg + ci, ih, iw] w[o, ci, kh, kw]
 *
 * with Cg = C / groups input and Og = O / groups output channels per group (depthwise: Cg 1,
 * channel multiplier Og). conv-gemm leaves these convs alone (a depthwise conv is no GEMM worth
 * the name); the direct loops of emit_linalg.c computed one output per thread. Here an item
 * computes a register tile of P adjacent output pixels along W times V adjacent output
 * channels, in f32 (f64 for f64):
 *
 *   NHWC (layout="nhwc": the layout pass's form on CUDA): items (n, oh, ow / P, o / V), the
 *       channel block fastest, so adjacent threads read adjacent channels; V = 4 on CUDA, the
 *       f32 SIMD lanes on the host (at most 8), halved until V divides O; P = 4. A depthwise
 *       conv with multiplier 1 reads the
 *       V channels of an input pixel with one vector load; lanes of one group share one load.
 *   NCHW (the cpu backend keeps it): items (n, o, oh, ow / P), V = 1, P along the contiguous
 *       W (host: one SIMD register of f32 lanes, which LLVM's SLP vectorizer turns into vector
 *       loads at constant offsets and vector FMAs with a broadcast tap; CUDA: 4).
 *
 * Per window row kh (a loop, rows outside the image skipped): the row's KW x V filter taps
 * into registers, then each input position the P windows touch, at most
 * (P - 1) stride + (KW - 1) dilation + 1 of them, loaded once and used by up to KW taps,
 * then P x KW x V multiply-adds. An item whose windows lie inside the image along W loads
 * without tests; the others (image edges, padding, the ragged last block) test each
 * position and read 0 outside it (a select of a load at a clamped index: no branch per
 * element). The epilogue (bias, activation, residual, scale, cast) runs per output as for
 * the matmul; NHWC stores the V lanes with one vector store.
 *
 * Windows wider than DW_MAX_KW taps fall back to emit_linalg.c's direct loops (NCHW only).
 */
#include <stdlib.h>
#include <string.h>

#include "codegen/emit.h"

enum {
  DW_MAX_P = 16,   /* output pixels per item */
  DW_MAX_KW = 16,  /* window width held in registers */
  DW_MAX_J = 64    /* input positions per row */
};

/* The tiling of one conv. */
typedef struct dw_plan {
  int nhwc;
  int64_t N, C, H, W, O, OH, OW, Cg, Og, KH, KW, J;
  gc_window w;
  int P, V;
  int vec_x;   /* depthwise, multiplier 1, NHWC: the V lanes' inputs are one vector load */
  int one_x;   /* the V lanes lie in one group: one input load serves all of them */
} dw_plan;

/* Input positions along W that P pixels' windows touch (the last one + 1). */
static int64_t dw_span(const dw_plan *p, int P) { return (P - 1) * p->w.sw + (p->KW - 1) * p->w.dw + 1; }

/* Width of a padded input row: the left padding and the image, or what the row's windows
 * touch when that is more (padding on the right). */
static int64_t dw_padded_width(const dw_plan *p) {
  int64_t img = p->w.left + p->W, span = dw_span(p, (int)p->OW);
  return img > span ? img : span;
}

/* Pixels per item on CUDA: the largest count in [3 pmax / 4, pmax] that divides OW (no
 * ragged block), else pmax (14 columns: 4 blocks of 4, rather than 7 of 2 with half the
 * reuse of each loaded input); at most OW, and within DW_MAX_J input positions. */
static int dw_pixels(const dw_plan *p, int pmax) {
  if (pmax > p->OW) pmax = (int)p->OW;
  while (pmax > 1 && dw_span(p, pmax) > DW_MAX_J) pmax--;
  for (int q = pmax; q >= (3 * pmax + 3) / 4 && q > 1; q--)
    if (p->OW % q == 0) return q;
  return pmax;
}

/* Pixels per item on the host in NCHW: one SIMD register of lanes (so that the tile is
 * whole vectors: 14 pixels became vectors of 8, 4 and 2), or half of one when that divides
 * OW and the whole does not, else a ragged last block;
 * the whole row when it is narrower. */
static int dw_host_pixels(const dw_plan *p, int lanes) {
  int P = lanes > DW_MAX_P ? DW_MAX_P : lanes;
  if (p->OW % P != 0 && P >= 8 && p->OW % (P / 2) == 0) P /= 2;  /* AVX-512 at OW 56: 8 */
  if (P > p->OW) P = (int)p->OW;
  while (P > 1 && dw_span(p, P) > DW_MAX_J) P--;
  return P;
}

/* Output channels per item: want, halved until it divides O. */
static int dw_lanes(int64_t O, int want) {
  while (want > 1 && O % want != 0) want /= 2;
  return want;
}

static void dw_plan_of(const gc_lowerer *c, const gc_op *op, dw_plan *p) {
  const gc_type *xt = &op->operands[0]->type, *wt = &op->operands[1]->type, *ot = &op->results[0]->type;
  memset(p, 0, sizeof *p);
  p->O = wt->dims[0];
  p->Cg = wt->dims[1];
  p->KH = wt->dims[2];
  p->KW = wt->dims[3];
  gc_window_of(op, p->KH, p->KW, 1, 1, &p->w);
  p->nhwc = p->w.ah == 1;
  int ah = p->w.ah;
  p->N = xt->dims[0];
  p->C = xt->dims[p->nhwc ? 3 : 1];
  p->H = xt->dims[ah];
  p->W = xt->dims[ah + 1];
  p->OH = ot->dims[ah];
  p->OW = ot->dims[ah + 1];
  p->Og = p->O / gc_op_attr_int(op, "groups", 1);
  int host = c->t->kind == KIR_TARGET_HOST;
  /* SIMD lanes of the compute type on the host (f32, f64 for f64) */
  int lanes = host && c->t->simd_bytes >= 16 ? c->t->simd_bytes / 4 : 4;
  if (ot->dtype == GRAPHC_DTYPE_F64) lanes = host ? lanes / 2 : 2;
  if (p->nhwc) {
    p->V = dw_lanes(p->O, lanes > KIR_MAX_VEC ? KIR_MAX_VEC : lanes);
    p->P = dw_pixels(p, 4);
  } else {
    p->V = 1;
    p->P = host ? dw_host_pixels(p, lanes) : dw_pixels(p, 4);
  }
  p->J = dw_span(p, p->P);
  p->vec_x = p->nhwc && p->V > 1 && p->Cg == 1 && p->Og == 1;
  p->one_x = p->V == 1 || p->Og % p->V == 0;
}

/* Does this emitter take conv2d `op`: groups > 1 with a window of at most DW_MAX_KW
 * columns, or layout="nhwc" (always: emit_linalg.c has no NHWC loops; gc_emit_dwconv
 * refuses wider windows, which the layout pass keeps NCHW). */
int gc_dwconv_ok(const gc_lowerer *c, const gc_op *op) {
  (void)c;
  const gc_type *wt = &op->operands[1]->type;
  int nhwc = strcmp(gc_op_attr_str(op, "layout", ""), "nhwc") == 0;
  if (!nhwc && gc_op_attr_int(op, "groups", 1) <= 1) return 0;
  return nhwc || wt->dims[3] <= DW_MAX_KW;
}

/* Emission state of one kernel. */
typedef struct dw_em {
  gc_lowerer *c;
  kir_kernel *k;
  const dw_plan *p;
  gc_dtype at, xdt;
  int px, pw;
  int n, oh, ow0, o0, lo;      /* vars: item coordinates; lo = ow0 * sw - left */
  int ov[KIR_MAX_VEC];         /* o0 + v */
  int cin[KIR_MAX_VEC];        /* first input channel of lane v's group */
  int wbase[KIR_MAX_VEC];      /* o_v * Cg * KH * KW */
  int ci;                      /* var of the channel loop, -1 when Cg is 1 */
  int acc[DW_MAX_P][KIR_MAX_VEC];
  int wr[DW_MAX_KW][KIR_MAX_VEC];
  int chan[KIR_MAX_VEC];       /* per ci: input channel of lane v */
  int row;                     /* per row: NHWC (n H + ih) W; NCHW ((n C + chan) H + ih) W */
} dw_em;

static kir_expr *dw_v(dw_em *e, int var) { return ec_v(e->c, e->k, var); }
static kir_expr *dw_i(dw_em *e, int64_t v) { return ec_i64(e->c, v); }
static kir_expr *dw_ci(dw_em *e) { return e->ci >= 0 ? dw_v(e, e->ci) : dw_i(e, 0); }

/* Element index of x at column iw (an expression, taken) for lane v, in the current row. */
static kir_expr *dw_xindex(dw_em *e, kir_expr *iw, int v) {
  gc_lowerer *c = e->c;
  kir_expr *pix = ec_add(c, dw_v(e, e->row), iw);
  if (!e->p->nhwc) return pix;
  return ec_add(c, ec_mul(c, pix, dw_i(e, e->p->C)), dw_v(e, e->chan[v]));
}

/* Position j of the current row for every lane into xs[0..V): guarded (bounds test, 0
 * outside) or not. */
static void dw_load_pos(dw_em *e, kir_block *b, int64_t j, int guard, int *xs) {
  gc_lowerer *c = e->c;
  kir_kernel *k = e->k;
  const dw_plan *p = e->p;
  int V = p->V, inb = -1, iw;
  iw = gc_ec_let(c, k, b, "iw", ec_add(c, dw_v(e, e->lo), dw_i(e, j)));
  if (guard) {
    kir_expr *t = ec_bin(c, KIR_AND, ec_bin(c, KIR_GE, dw_v(e, iw), dw_i(e, 0)),
                         ec_bin(c, KIR_LT, dw_v(e, iw), dw_i(e, p->W)));
    inb = gc_ec_let(c, k, b, "inb", t);
    kir_expr *cl = ec_bin(c, KIR_MAX, ec_bin(c, KIR_MIN, dw_v(e, iw), dw_i(e, p->W - 1)), dw_i(e, 0));
    iw = gc_ec_let(c, k, b, "iwc", cl);
  }
  int raw[KIR_MAX_VEC];
  if (p->vec_x) {
    for (int v = 0; v < V; v++) raw[v] = gc_ec_var(c, k, "xr", e->xdt);
    kir_emit_load_vec(c->km, b, KIR_GLOBAL, e->px, dw_xindex(e, dw_v(e, iw), 0), V, raw);
    for (int v = 0; v < V; v++) raw[v] = gc_ec_let(c, k, b, "x", ec_cast(c, e->at, dw_v(e, raw[v])));
  } else {
    for (int v = 0; v < V; v++)
      raw[v] = p->one_x && v > 0 ? raw[0]
                                 : gc_ec_let(c, k, b, "x", gc_ec_load(c, k, e->px, dw_xindex(e, dw_v(e, iw), v)));
  }
  for (int v = 0; v < V; v++) {
    xs[v] = raw[v];
    if (guard && !(p->one_x && !p->vec_x && v > 0))
      xs[v] = gc_ec_let(c, k, b, "x", kir_select(c->km, dw_v(e, inb), dw_v(e, raw[v]), gc_ec_num(c, e->at, 0.0)));
    else if (guard)
      xs[v] = xs[0];
  }
}

/* The multiply-adds of one row: every position the windows touch, loaded once. */
static void dw_row_fma(dw_em *e, kir_block *b, int guard) {
  gc_lowerer *c = e->c;
  const dw_plan *p = e->p;
  int V = p->V;
  int *xs = malloc((size_t)p->J * KIR_MAX_VEC * sizeof *xs);
  if (!xs) {
    c->oom = 1;
    return;
  }
  char *used = calloc((size_t)p->J, 1);
  if (!used) {
    free(xs);
    c->oom = 1;
    return;
  }
  for (int q = 0; q < p->P; q++)
    for (int64_t kw = 0; kw < p->KW; kw++) used[q * p->w.sw + kw * p->w.dw] = 1;
  for (int64_t j = 0; j < p->J; j++)
    if (used[j]) dw_load_pos(e, b, j, guard, &xs[j * KIR_MAX_VEC]);
  for (int64_t kw = 0; kw < p->KW; kw++)
    for (int q = 0; q < p->P; q++) {
      int64_t j = q * p->w.sw + kw * p->w.dw;
      for (int v = 0; v < V; v++) {
        kir_expr *m = ec_bin(c, KIR_MUL, dw_v(e, xs[j * KIR_MAX_VEC + v]), dw_v(e, e->wr[kw][v]));
        kir_emit_assign(c->km, b, e->acc[q][v], ec_bin(c, KIR_ADD, dw_v(e, e->acc[q][v]), m));
      }
    }
  free(used);
  free(xs);
}

/* Window row kh (var) of input channel offset ci: taps, then the two paths. */
static void dw_row(dw_em *e, kir_block *b, int kh, int interior) {
  gc_lowerer *c = e->c;
  kir_kernel *k = e->k;
  const dw_plan *p = e->p;
  int ih = gc_ec_tap_coord(c, k, b, e->oh, p->w.sh, p->w.top, kh, p->w.dh);
  kir_block *in;
  kir_expr *t = ec_bin(c, KIR_AND, ec_bin(c, KIR_GE, dw_v(e, ih), dw_i(e, 0)),
                       ec_bin(c, KIR_LT, dw_v(e, ih), dw_i(e, p->H)));
  kir_emit_if(c->km, b, t, &in, NULL);
  /* the row's taps: w[o_v, ci, kh, kw] */
  for (int v = 0; v < p->V; v++) {
    kir_expr *r = ec_add(c, ec_mul(c, dw_ci(e), dw_i(e, p->KH)), dw_v(e, kh));
    int wrow = gc_ec_let(c, k, in, "wrow", ec_add(c, dw_v(e, e->wbase[v]), ec_mul(c, r, dw_i(e, p->KW))));
    for (int64_t kw = 0; kw < p->KW; kw++)
      e->wr[kw][v] = gc_ec_let(c, k, in, "wt", gc_ec_load(c, k, e->pw, ec_add(c, dw_v(e, wrow), dw_i(e, kw))));
  }
  kir_expr *r = dw_v(e, e->n);
  if (!p->nhwc) r = ec_add(c, ec_mul(c, r, dw_i(e, p->C)), dw_v(e, e->chan[0]));
  r = ec_add(c, ec_mul(c, r, dw_i(e, p->H)), dw_v(e, ih));
  e->row = gc_ec_let(c, k, in, "row", ec_mul(c, r, dw_i(e, p->W)));
  kir_block *fast, *slow;
  kir_emit_if(c->km, in, dw_v(e, interior), &fast, &slow);
  dw_row_fma(e, fast, 0);
  dw_row_fma(e, slow, 1);
}

/* The outputs of pixel q of the tile: bind the accumulators, run the epilogue, store. */
static void dw_store_pixel(dw_em *e, gc_gen *G, kir_block *b, const gc_fusion_group *grp, int q) {
  gc_lowerer *c = e->c;
  kir_kernel *k = e->k;
  const dw_plan *p = e->p;
  const gc_value *ov = grp->roots[0]->results[0];
  const gc_type *ot = &ov->type;
  int ow = gc_ec_let(c, k, b, "ow", ec_add(c, dw_v(e, e->ow0), dw_i(e, q)));
  if (p->OW % p->P != 0) {
    kir_block *t;
    kir_emit_if(c->km, b, ec_bin(c, KIR_LT, dw_v(e, ow), dw_i(e, p->OW)), &t, NULL);
    b = t;
  }
  gc_gen_push(G);
  int pts[KIR_MAX_VEC];
  for (int v = 0; v < p->V; v++) {
    int co[4];
    kir_expr *lin;
    if (p->nhwc) {
      co[0] = e->n, co[1] = e->oh, co[2] = ow, co[3] = e->ov[v];
      lin = ec_add(c, ec_mul(c, dw_v(e, e->n), dw_i(e, p->OH)), dw_v(e, e->oh));
      lin = ec_add(c, ec_mul(c, lin, dw_i(e, p->OW)), dw_v(e, ow));
      lin = ec_add(c, ec_mul(c, lin, dw_i(e, p->O)), dw_v(e, e->ov[v]));
    } else {
      co[0] = e->n, co[1] = e->ov[v], co[2] = e->oh, co[3] = ow;
      lin = ec_add(c, ec_mul(c, dw_v(e, e->n), dw_i(e, p->O)), dw_v(e, e->ov[v]));
      lin = ec_add(c, ec_mul(c, lin, dw_i(e, p->OH)), dw_v(e, e->oh));
      lin = ec_add(c, ec_mul(c, lin, dw_i(e, p->OW)), dw_v(e, ow));
    }
    pts[v] = gc_gen_pt(G, ot, gc_ec_let(c, k, b, "lin", lin), co);
    int y = gc_ec_let(c, k, b, ov->name, gc_ec_round(c, ot->dtype, dw_v(e, e->acc[q][v])));
    gc_gen_bind(G, ov, pts[v], y);
  }
  if (p->V > 1) gc_gen_store_outs_vec(G, b, grp, pts, p->V);
  else gc_gen_store_outs(G, b, grp, pts[0]);
  gc_gen_pop(G);
}

/* Item coordinates, per-lane channel bases, the interior test; zeroed accumulators. */
static void dw_prologue(dw_em *e, kir_block *b) {
  gc_lowerer *c = e->c;
  kir_kernel *k = e->k;
  const dw_plan *p = e->p;
  int64_t OWB = (p->OW + p->P - 1) / p->P, OB = p->O / p->V;
  int co[4];
  if (p->nhwc) {
    int64_t dims[4] = {p->N, p->OH, OWB, OB};
    gc_ec_unravel(c, k, b, k->item_var, 4, dims, co);
    e->n = co[0], e->oh = co[1];
    e->ow0 = gc_ec_let(c, k, b, "ow0", ec_mul(c, dw_v(e, co[2]), dw_i(e, p->P)));
    e->o0 = gc_ec_let(c, k, b, "o0", ec_mul(c, dw_v(e, co[3]), dw_i(e, p->V)));
  } else {
    int64_t dims[4] = {p->N, p->O, p->OH, OWB};
    gc_ec_unravel(c, k, b, k->item_var, 4, dims, co);
    e->n = co[0], e->o0 = co[1], e->oh = co[2];
    e->ow0 = gc_ec_let(c, k, b, "ow0", ec_mul(c, dw_v(e, co[3]), dw_i(e, p->P)));
  }
  for (int v = 0; v < p->V; v++) {
    e->ov[v] = v == 0 ? e->o0 : gc_ec_let(c, k, b, "o", ec_add(c, dw_v(e, e->o0), dw_i(e, v)));
    kir_expr *g = p->Og == 1 ? dw_v(e, e->ov[v]) : ec_bin(c, KIR_DIV, dw_v(e, e->ov[v]), dw_i(e, p->Og));
    e->cin[v] = gc_ec_let(c, k, b, "cin", ec_mul(c, g, dw_i(e, p->Cg)));
    e->wbase[v] = gc_ec_let(c, k, b, "wbase", ec_mul(c, dw_v(e, e->ov[v]), dw_i(e, p->Cg * p->KH * p->KW)));
  }
  kir_expr *lo = ec_bin(c, KIR_SUB, ec_mul(c, dw_v(e, e->ow0), dw_i(e, p->w.sw)), dw_i(e, p->w.left));
  e->lo = gc_ec_let(c, k, b, "lo", lo);
  for (int q = 0; q < p->P; q++)
    for (int v = 0; v < p->V; v++) e->acc[q][v] = gc_ec_let(c, k, b, "acc", gc_ec_num(c, e->at, 0.0));
}

/* ---- host, NCHW: a row of outputs per item ------------------------------------------------ */

/* The host's NCHW kernel: items (n, o, oh), each a whole output row. Per input channel of
 * the group and window row kh inside the image, the input row goes to scratch with its
 * padding as zeros (xp, Wp wide), then one loop over the row's outputs adds the KW taps
 * of that window row, acc[ow] += sum_kw xp[ow sw + kw dw] w[kw], into a scratch row; the
 * epilogue (bias, silu, ...) is a loop over the row too. Every loop has constant bounds
 * and no test inside, so LLVM's loop vectorizer takes them all (a stride-2 conv's taps
 * are an interleaved load group). The register tiles of dw_row_fma held P outputs and ran
 * the epilogue once per output, scalar: an EfficientNet depthwise 3x3 + silu over
 * [8, 144, 56, 56] took 8.4 ms. */
enum { DW_ROW_MIN = 32, DW_ROW_MAX = 8192 };

/* The end of a host kernel: the epilogue at output (linear index var lin, coordinates oc)
 * on the accumulated value acc inside loop block eb, the cost model, the launch. */
static int dw_host_finish(gc_lowerer *c, gc_gen *G, const gc_fusion_group *grp, const dw_plan *p, kir_block *eb,
                          int lin, const int *oc, kir_expr *acc) {
  kir_kernel *k = G->k;
  const gc_value *ov = grp->roots[0]->results[0];
  gc_gen_push(G);
  gc_mm_epilogue(G, eb, grp, gc_gen_pt(G, &ov->type, lin, oc), acc);
  gc_gen_pop(G);
  k->bytes_moved = gc_gen_bytes(G, -1);
  k->flops = 2.0 * (double)gc_type_numel(&ov->type) * (double)(p->Cg * p->KH * p->KW);
  gc_gen_free(G);
  gc_ec_launch(c, k);
  return 0;
}

static int dw_host_rows_ok(const gc_lowerer *c, const dw_plan *p) {
  return c->t->kind == KIR_TARGET_HOST && !p->nhwc && p->OW >= DW_ROW_MIN && dw_span(p, (int)p->OW) + p->w.left <= DW_ROW_MAX;
}

static int dw_host_rows(gc_lowerer *c, const gc_fusion_group *grp, const dw_plan *p) {
  const gc_op *op = grp->roots[0];
  const gc_value *xv = op->operands[0], *wv = op->operands[1], *ov = op->results[0];
  gc_dtype at = gc_ec_compute_type(ov->type.dtype);
  int64_t Wp = dw_span(p, (int)p->OW);  /* the input positions the row's windows touch */
  kir_kernel *k = gc_ec_kernel(c, KIR_LAUNCH_ITEMS, p->N * p->O * p->OH, 64);
  gc_gen G;
  gc_gen_init(&G, c, k);
  int px = gc_gen_rparam(&G, c->val_buf[xv->id], xv->type.dtype);
  int pw = gc_gen_rparam(&G, c->val_buf[wv->id], wv->type.dtype);
  int xs = kir_add_scratch(c->km, k, at, Wp), as = kir_add_scratch(c->km, k, at, p->OW);
  kir_block *b = &k->body;
  int64_t dims[3] = {p->N, p->O, p->OH};
  int co[3];
  gc_ec_unravel(c, k, b, k->item_var, 3, dims, co);
  int n = co[0], o = co[1], oh = co[2];
  int ow = gc_ec_var(c, k, "ow", GRAPHC_DTYPE_I64);
  kir_block *zb = kir_emit_for(c->km, b, ow, ec_i64(c, 0), ec_i64(c, p->OW), ec_i64(c, 1));
  kir_emit_store(c->km, zb, KIR_SCRATCH, as, ec_v(c, k, ow), gc_ec_num(c, at, 0.0));
  kir_expr *g = p->Og == 1 ? ec_v(c, k, o) : ec_bin(c, KIR_DIV, ec_v(c, k, o), ec_i64(c, p->Og));
  int cin = gc_ec_let(c, k, b, "cin", ec_mul(c, g, ec_i64(c, p->Cg)));
  kir_block *cb = b;
  int ci = -1;
  if (p->Cg > 1) {
    ci = gc_ec_var(c, k, "ci", GRAPHC_DTYPE_I64);
    cb = kir_emit_for_nounroll(c->km, b, ci, ec_i64(c, 0), ec_i64(c, p->Cg), ec_i64(c, 1));
  }
  kir_expr *cie = ci >= 0 ? ec_v(c, k, ci) : ec_i64(c, 0);
  int kh = gc_ec_var(c, k, "kh", GRAPHC_DTYPE_I64);
  kir_block *hb = kir_emit_for_nounroll(c->km, cb, kh, ec_i64(c, 0), ec_i64(c, p->KH), ec_i64(c, 1));
  int ih = gc_ec_tap_coord(c, k, hb, oh, p->w.sh, p->w.top, kh, p->w.dh);
  kir_block *in;
  kir_emit_if(c->km, hb, ec_bin(c, KIR_AND, ec_bin(c, KIR_GE, ec_v(c, k, ih), ec_i64(c, 0)),
                                ec_bin(c, KIR_LT, ec_v(c, k, ih), ec_i64(c, p->H))), &in, NULL);
  /* x[n, cin + ci, ih, :] at xp[left ..], zeros around it (constant bounds) */
  kir_expr *r = ec_add(c, ec_mul(c, ec_v(c, k, n), ec_i64(c, p->C)), ec_add(c, ec_v(c, k, cin), cie));
  int row = gc_ec_let(c, k, in, "row", ec_mul(c, ec_add(c, ec_mul(c, r, ec_i64(c, p->H)), ec_v(c, k, ih)), ec_i64(c, p->W)));
  int64_t lo = p->w.left < Wp ? p->w.left : Wp, hi = p->w.left + p->W < Wp ? p->w.left + p->W : Wp;
  int j = gc_ec_var(c, k, "j", GRAPHC_DTYPE_I64);
  if (lo > 0) {
    kir_block *pb = kir_emit_for(c->km, in, j, ec_i64(c, 0), ec_i64(c, lo), ec_i64(c, 1));
    kir_emit_store(c->km, pb, KIR_SCRATCH, xs, ec_v(c, k, j), gc_ec_num(c, at, 0.0));
  }
  kir_block *xb = kir_emit_for(c->km, in, j, ec_i64(c, lo), ec_i64(c, hi), ec_i64(c, 1));
  kir_expr *xi = ec_add(c, ec_v(c, k, row), ec_bin(c, KIR_SUB, ec_v(c, k, j), ec_i64(c, p->w.left)));
  kir_emit_store(c->km, xb, KIR_SCRATCH, xs, ec_v(c, k, j), ec_cast(c, at, gc_ec_load(c, k, px, xi)));
  if (hi < Wp) {
    kir_block *pb = kir_emit_for(c->km, in, j, ec_i64(c, hi), ec_i64(c, Wp), ec_i64(c, 1));
    kir_emit_store(c->km, pb, KIR_SCRATCH, xs, ec_v(c, k, j), gc_ec_num(c, at, 0.0));
  }
  /* the row's taps w[o, ci, kh, :] */
  kir_expr *wr = ec_add(c, ec_mul(c, ec_v(c, k, o), ec_i64(c, p->Cg)), cie);
  wr = ec_add(c, ec_mul(c, wr, ec_i64(c, p->KH)), ec_v(c, k, kh));
  int wrow = gc_ec_let(c, k, in, "wrow", ec_mul(c, wr, ec_i64(c, p->KW)));
  int wt[DW_MAX_KW];
  for (int64_t kw = 0; kw < p->KW; kw++)
    wt[kw] = gc_ec_let(c, k, in, "wt", ec_cast(c, at, gc_ec_load(c, k, pw, ec_add(c, ec_v(c, k, wrow), ec_i64(c, kw)))));
  kir_block *fb = kir_emit_for(c->km, in, ow, ec_i64(c, 0), ec_i64(c, p->OW), ec_i64(c, 1));
  int base = gc_ec_let(c, k, fb, "xj", ec_mul(c, ec_v(c, k, ow), ec_i64(c, p->w.sw)));
  kir_expr *sum = kir_load(c->km, k, KIR_SCRATCH, as, ec_v(c, k, ow));
  for (int64_t kw = 0; kw < p->KW; kw++) {
    kir_expr *xe = kir_load(c->km, k, KIR_SCRATCH, xs, ec_add(c, ec_v(c, k, base), ec_i64(c, kw * p->w.dw)));
    sum = ec_bin(c, KIR_ADD, sum, ec_bin(c, KIR_MUL, xe, ec_v(c, k, wt[kw])));
  }
  kir_emit_store(c->km, fb, KIR_SCRATCH, as, ec_v(c, k, ow), sum);
  /* the epilogue along the row: output (n, o, oh, ow) at item * OW + ow */
  kir_block *eb = kir_emit_for(c->km, b, ow, ec_i64(c, 0), ec_i64(c, p->OW), ec_i64(c, 1));
  int lin = gc_ec_let(c, k, eb, "lin", ec_add(c, ec_mul(c, ec_v(c, k, k->item_var), ec_i64(c, p->OW)), ec_v(c, k, ow)));
  int oc[4] = {n, o, oh, ow};
  return dw_host_finish(c, &G, grp, p, eb, lin, oc, kir_load(c->km, k, KIR_SCRATCH, as, ec_v(c, k, ow)));
}

/* ---- host, NCHW, equal strides: a whole plane per item ------------------------------------ */

/* Items (n, o), each a whole output plane. Per input channel of the group, the input plane
 * goes to scratch inside a frame of zeros (its padding), Wp = the padded width; output
 * (oh, ow) then sits at u = oh Wp + ow of a flat accumulator, and its tap (kh, kw) reads the
 * padded plane at s u + kh dh Wp + kw dw (s = the stride along both axes). So each window
 * row is one loop over u in [0, OH Wp) with KW taps in its body: constant bounds, no test,
 * long enough to vectorize whatever the image width (a 7 x 7 map with a 5 x 5 window: 77
 * lanes a loop, where a row of 7 left the register tiles of dw_row_fma scalar). The
 * positions u with ow >= OW compute on the frame and are never stored; the epilogue runs
 * over the plane's rows. */
enum { DW_PLANE_MIN = 4, DW_PLANE_MAX = 65536 };

typedef struct dw_plane {
  int64_t Wp, Hs, U;  /* padded width, rows of the padded scratch, flat positions */
} dw_plane;

static int dw_plane_of(const gc_lowerer *c, const dw_plan *p, dw_plane *q) {
  if (c->t->kind != KIR_TARGET_HOST || p->nhwc || p->w.sh != p->w.sw) return 0;
  int64_t s = p->w.sw;
  q->Wp = dw_padded_width(p);
  q->U = p->OH * q->Wp;
  /* the last tap of the last position: s (U - 1) + (KH - 1) dh Wp + (KW - 1) dw */
  int64_t last = s * (q->U - 1) + (p->KH - 1) * p->w.dh * q->Wp + (p->KW - 1) * p->w.dw;
  int64_t rows = p->w.top + p->H;
  q->Hs = (last + q->Wp) / q->Wp > rows ? (last + q->Wp) / q->Wp : rows;
  return q->Hs * q->Wp <= DW_PLANE_MAX && q->U <= DW_PLANE_MAX;
}

/* Zeros at scratch xs[lo, hi) (expressions) through loop var j. */
static void dw_zero(gc_lowerer *c, kir_kernel *k, kir_block *b, int xs, int j, kir_expr *lo, kir_expr *hi, gc_dtype at) {
  kir_block *zb = kir_emit_for(c->km, b, j, lo, hi, ec_i64(c, 1));
  kir_emit_store(c->km, zb, KIR_SCRATCH, xs, ec_v(c, k, j), gc_ec_num(c, at, 0.0));
}

/* What a pass of dw_host_plane over the flat positions needs. */
typedef struct dw_plane_pass {
  gc_lowerer *c;
  kir_kernel *k;
  const dw_plan *p;
  const dw_plane *q;
  gc_dtype at;
  int pw, xs, as, u, o;
  kir_expr *cie;        /* the input channel offset in the group */
} dw_plane_pass;

/* Window row kh (an expression): its KW taps, then one loop over the flat positions adding
 * them (first: storing them, the accumulator's first writer). */
static void dw_plane_row(const dw_plane_pass *pp, kir_block *b, kir_expr *kh, int first) {
  gc_lowerer *c = pp->c;
  kir_kernel *k = pp->k;
  const dw_plan *p = pp->p;
  kir_expr *wr = ec_add(c, ec_mul(c, ec_v(c, k, pp->o), ec_i64(c, p->Cg)), pp->cie);
  wr = ec_add(c, ec_mul(c, wr, ec_i64(c, p->KH)), kh);
  int wrow = gc_ec_let(c, k, b, "wrow", ec_mul(c, wr, ec_i64(c, p->KW)));
  int wt[DW_MAX_KW];
  for (int64_t kw = 0; kw < p->KW; kw++)
    wt[kw] = gc_ec_let(c, k, b, "wt", ec_cast(c, pp->at, gc_ec_load(c, k, pp->pw, ec_add(c, ec_v(c, k, wrow), ec_i64(c, kw)))));
  int off = gc_ec_let(c, k, b, "off", ec_mul(c, kh, ec_i64(c, p->w.dh * pp->q->Wp)));
  /* unit stride: the vector tail masked (a 7 x 7 map's 77 positions left 13 scalar ones);
   * a stride's masked tail would gather */
  kir_block *fb = p->w.sw == 1 ? kir_emit_for_masked_tail(c->km, b, pp->u, ec_i64(c, 0), ec_i64(c, pp->q->U), ec_i64(c, 1))
                               : kir_emit_for(c->km, b, pp->u, ec_i64(c, 0), ec_i64(c, pp->q->U), ec_i64(c, 1));
  int base = gc_ec_let(c, k, fb, "xj", ec_add(c, ec_mul(c, ec_v(c, k, pp->u), ec_i64(c, p->w.sw)), ec_v(c, k, off)));
  kir_expr *sum = NULL;
  if (!first) sum = kir_load(c->km, k, KIR_SCRATCH, pp->as, ec_v(c, k, pp->u));
  for (int64_t kw = 0; kw < p->KW; kw++) {
    kir_expr *xe = kir_load(c->km, k, KIR_SCRATCH, pp->xs, ec_add(c, ec_v(c, k, base), ec_i64(c, kw * p->w.dw)));
    kir_expr *m = ec_bin(c, KIR_MUL, xe, ec_v(c, k, wt[kw]));
    sum = sum ? ec_bin(c, KIR_ADD, sum, m) : m;
  }
  kir_emit_store(c->km, fb, KIR_SCRATCH, pp->as, ec_v(c, k, pp->u), sum);
}

static int dw_host_plane(gc_lowerer *c, const gc_fusion_group *grp, const dw_plan *p, const dw_plane *q) {
  const gc_op *op = grp->roots[0];
  const gc_value *xv = op->operands[0], *wv = op->operands[1], *ov = op->results[0];
  gc_dtype at = gc_ec_compute_type(ov->type.dtype);
  kir_kernel *k = gc_ec_kernel(c, KIR_LAUNCH_ITEMS, p->N * p->O, 16);
  gc_gen G;
  gc_gen_init(&G, c, k);
  int px = gc_gen_rparam(&G, c->val_buf[xv->id], xv->type.dtype);
  int pw = gc_gen_rparam(&G, c->val_buf[wv->id], wv->type.dtype);
  /* one slack row: the last row's gap in the frame runs into it */
  int xs = kir_add_scratch(c->km, k, at, (q->Hs + 1) * q->Wp), as = kir_add_scratch(c->km, k, at, q->U);
  kir_block *b = &k->body;
  int64_t dims[2] = {p->N, p->O};
  int co[2];
  gc_ec_unravel(c, k, b, k->item_var, 2, dims, co);
  int n = co[0], o = co[1];
  int u = gc_ec_var(c, k, "u", GRAPHC_DTYPE_I64), j = gc_ec_var(c, k, "j", GRAPHC_DTYPE_I64);
  /* the frame, once per item (each channel's rows overwrite only the inside): the rows
   * above and the left margin of the first row, then from each row's right margin to the
   * next row's left one (the last gap runs into the scratch's slack row), then the rows
   * below. Zeroing the whole padded plane cost a fifth of a 112 x 112 depthwise conv. */
  int64_t Wp = q->Wp, top = p->w.top, left = p->w.left;
  dw_zero(c, k, b, xs, j, ec_i64(c, 0), ec_i64(c, top * Wp + left), at);
  int ih = gc_ec_var(c, k, "ih", GRAPHC_DTYPE_I64);
  if (Wp > p->W) {
    kir_block *gb = kir_emit_for_nounroll(c->km, b, ih, ec_i64(c, 0), ec_i64(c, p->H), ec_i64(c, 1));
    int g0 = gc_ec_let(c, k, gb, "g0", ec_add(c, ec_mul(c, ec_add(c, ec_v(c, k, ih), ec_i64(c, top)), ec_i64(c, Wp)),
                                              ec_i64(c, left + p->W)));
    dw_zero(c, k, gb, xs, j, ec_v(c, k, g0), ec_add(c, ec_v(c, k, g0), ec_i64(c, Wp - p->W)), at);
  }
  dw_zero(c, k, b, xs, j, ec_i64(c, (top + p->H) * Wp + left), ec_i64(c, (q->Hs + 1) * Wp), at);
  kir_expr *g = p->Og == 1 ? ec_v(c, k, o) : ec_bin(c, KIR_DIV, ec_v(c, k, o), ec_i64(c, p->Og));
  int cin = gc_ec_let(c, k, b, "cin", ec_mul(c, g, ec_i64(c, p->Cg)));
  kir_block *cb = b;
  int ci = -1;
  if (p->Cg > 1) {
    /* the accumulator starts at 0 for the channel loop; with one channel the first window
     * row writes it (dw_plane_pass) */
    kir_block *zb = kir_emit_for(c->km, b, u, ec_i64(c, 0), ec_i64(c, q->U), ec_i64(c, 1));
    kir_emit_store(c->km, zb, KIR_SCRATCH, as, ec_v(c, k, u), gc_ec_num(c, at, 0.0));
    ci = gc_ec_var(c, k, "ci", GRAPHC_DTYPE_I64);
    cb = kir_emit_for_nounroll(c->km, b, ci, ec_i64(c, 0), ec_i64(c, p->Cg), ec_i64(c, 1));
  }
  kir_expr *cie = ci >= 0 ? ec_v(c, k, ci) : ec_i64(c, 0);
  kir_expr *r = ec_add(c, ec_mul(c, ec_v(c, k, n), ec_i64(c, p->C)), ec_add(c, ec_v(c, k, cin), cie));
  int plane = gc_ec_let(c, k, cb, "plane", ec_mul(c, r, ec_i64(c, p->H * p->W)));
  kir_block *hb = kir_emit_for_nounroll(c->km, cb, ih, ec_i64(c, 0), ec_i64(c, p->H), ec_i64(c, 1));
  int src = gc_ec_let(c, k, hb, "src", ec_add(c, ec_v(c, k, plane), ec_mul(c, ec_v(c, k, ih), ec_i64(c, p->W))));
  int dst = gc_ec_let(c, k, hb, "dst", ec_add(c, ec_mul(c, ec_add(c, ec_v(c, k, ih), ec_i64(c, top)), ec_i64(c, Wp)),
                                              ec_i64(c, left)));
  kir_block *xb = kir_emit_for_masked_tail(c->km, hb, j, ec_i64(c, 0), ec_i64(c, p->W), ec_i64(c, 1));
  kir_emit_store(c->km, xb, KIR_SCRATCH, xs, ec_add(c, ec_v(c, k, dst), ec_v(c, k, j)),
                 ec_cast(c, at, gc_ec_load(c, k, px, ec_add(c, ec_v(c, k, src), ec_v(c, k, j)))));
  /* the window rows: the first writes the accumulator when there is one channel */
  dw_plane_pass pp = {c, k, p, q, at, pw, xs, as, u, o, cie};
  int kh = gc_ec_var(c, k, "kh", GRAPHC_DTYPE_I64);
  if (p->Cg == 1) dw_plane_row(&pp, cb, ec_i64(c, 0), 1);
  if (p->Cg > 1 || p->KH > 1) {
    kir_block *tb = kir_emit_for_nounroll(c->km, cb, kh, ec_i64(c, p->Cg == 1 ? 1 : 0), ec_i64(c, p->KH), ec_i64(c, 1));
    dw_plane_row(&pp, tb, ec_v(c, k, kh), 0);
  }
  /* the valid outputs to the front of the accumulator, in place (oh OW + ow <= oh Wp + ow,
   * in increasing order), then the epilogue over the plane as one loop: output (n, o, t) at
   * item * OH * OW + t (with rows of 7 the epilogue, a silu, stayed scalar) */
  int oh = gc_ec_var(c, k, "oh", GRAPHC_DTYPE_I64), ow = gc_ec_var(c, k, "ow", GRAPHC_DTYPE_I64);
  if (q->Wp != p->OW) {
    kir_block *eh = kir_emit_for_nounroll(c->km, b, oh, ec_i64(c, 1), ec_i64(c, p->OH), ec_i64(c, 1));
    kir_block *eb = kir_emit_for(c->km, eh, ow, ec_i64(c, 0), ec_i64(c, p->OW), ec_i64(c, 1));
    kir_expr *from = ec_add(c, ec_mul(c, ec_v(c, k, oh), ec_i64(c, q->Wp)), ec_v(c, k, ow));
    kir_expr *to = ec_add(c, ec_mul(c, ec_v(c, k, oh), ec_i64(c, p->OW)), ec_v(c, k, ow));
    kir_emit_store(c->km, eb, KIR_SCRATCH, as, to, kir_load(c->km, k, KIR_SCRATCH, as, from));
  }
  kir_block *eb = kir_emit_for_masked_tail(c->km, b, u, ec_i64(c, 0), ec_i64(c, p->OH * p->OW), ec_i64(c, 1));
  kir_expr *lin = ec_add(c, ec_mul(c, ec_v(c, k, k->item_var), ec_i64(c, p->OH * p->OW)), ec_v(c, k, u));
  int li = gc_ec_let(c, k, eb, "lin", lin);
  int oc[4] = {n, o, -1, -1};
  return dw_host_finish(c, &G, grp, p, eb, li, oc, kir_load(c->km, k, KIR_SCRATCH, as, ec_v(c, k, u)));
}

/* ---- host, NCHW, depthwise: every tap of an output in registers ---------------------------- */

/* Items (n, o, band) with one input channel each (Cg 1), a band being R output rows whose
 * input rows fit L1 (DW_DIRECT_BYTES). The band's input rows go to scratch with their
 * padding as zeros and its columns split by phase modulo the W stride s: padded position
 * (r, q) at xs[(r s + q mod s) Wq + q / s], Wq = ceil(Wp / s). Tap (kh, kw) of output
 * (oh, ow) reads padded row r = oh sh + kh dh, phase (kw dw) mod s, at ow + (kw dw) / s:
 * for every tap a unit-stride run along ow, whatever the stride. Each output row is then one
 * loop over ow whose body holds all KH KW taps (the weights in registers), the epilogue and
 * the store: per vector of outputs one load and one FMA a tap, no accumulator in memory,
 * no discarded positions. The planes of dw_host_plane keep maps narrower than
 * DW_DIRECT_MIN, where a row is less than half a vector. */
enum { DW_DIRECT_MIN = 8, DW_DIRECT_TAPS = 64, DW_DIRECT_REGS = 16, DW_DIRECT_BYTES = 24576, DW_DIRECT_SPLIT = 24 };

typedef struct dw_direct {
  int64_t s, Wq, R, Hb;  /* W stride, positions of a phase row, output rows a band, padded rows a band */
  int64_t ja, jb;        /* the phase positions whose columns all lie inside the image */
} dw_direct;

/* Padded input rows that R output rows read. */
static int64_t dw_band_rows(const dw_plan *p, int64_t R) { return (R - 1) * p->w.sh + (p->KH - 1) * p->w.dh + 1; }

/* es: bytes of the compute type */
static int dw_direct_of(const gc_lowerer *c, const dw_plan *p, int64_t es, dw_direct *d) {
  if (c->t->kind != KIR_TARGET_HOST || p->nhwc || p->Cg != 1 || p->OW < DW_DIRECT_MIN) return 0;
  if (p->KH * p->KW > DW_DIRECT_TAPS) return 0;
  int64_t s = p->w.sw, left = p->w.left;
  d->s = s;
  d->Wq = (dw_padded_width(p) + s - 1) / s;
  d->ja = (left + s - 1) / s;
  d->jb = p->W - s + left >= 0 ? (p->W - s + left) / s + 1 : 0;
  if (d->ja > d->Wq) d->ja = d->Wq;
  if (d->jb > d->Wq) d->jb = d->Wq;
  if (d->jb < d->ja) d->jb = d->ja;
  /* a stride splits the rows into phases with an interleaved group of loads, which LLVM
   * vectorizes for DW_DIRECT_SPLIT positions or more; below, scalar, it cost more than the
   * planes' strided taps (5 x 5, stride 2, 28 x 28 -> 14 x 14: 0.29 ms against 0.24) */
  if (s > 1 && d->jb - d->ja < DW_DIRECT_SPLIT) return 0;
  /* past DW_DIRECT_REGS taps LLVM keeps the weights on the stack, a load each beside the
   * input's: at stride 1 over 16 or more columns the planes do better (5 x 5 over 28 x 28 +
   * silu: 1.49 ms against 1.17; over 14 x 14 1.06 against 1.25, stride 2 1.30 against 1.47).
   * (A pass per window row with a row of sums in scratch lost more: each pass's masked load
   * waits for the last pass's masked store, which x86 does not forward.) */
  if (p->KH * p->KW > DW_DIRECT_REGS && s == 1 && p->OW > 16) return 0;
  /* bands of R output rows whose input rows fit DW_DIRECT_BYTES (L1), R dividing OH */
  int64_t RW = d->s * d->Wq;
  d->R = 1;
  for (int64_t R = p->OH; R >= 1; R--)
    if (p->OH % R == 0 && dw_band_rows(p, R) * RW * es <= DW_DIRECT_BYTES) {
      d->R = R;
      break;
    }
  d->Hb = dw_band_rows(p, d->R);
  return d->Hb * RW <= DW_PLANE_MAX;
}

/* Phase ph of padded row (var rb = its first position) for jj in [lo, hi): x's row at src
 * (var), column s jj + ph - left, 0 outside the image (a select of a load at a clamped index). */
static void dw_direct_edge(gc_lowerer *c, kir_kernel *k, kir_block *b, const dw_plan *p, const dw_direct *d,
                           int px, int xs, int rb, int src, int j, int64_t ph, int64_t lo, int64_t hi, gc_dtype at) {
  if (lo >= hi) return;
  kir_block *eb = kir_emit_for(c->km, b, j, ec_i64(c, lo), ec_i64(c, hi), ec_i64(c, 1));
  kir_expr *iw = ec_add(c, ec_mul(c, ec_v(c, k, j), ec_i64(c, d->s)), ec_i64(c, ph - p->w.left));
  int iv = gc_ec_let(c, k, eb, "iw", iw);
  kir_expr *in = ec_bin(c, KIR_AND, ec_bin(c, KIR_GE, ec_v(c, k, iv), ec_i64(c, 0)),
                        ec_bin(c, KIR_LT, ec_v(c, k, iv), ec_i64(c, p->W)));
  kir_expr *cl = ec_bin(c, KIR_MAX, ec_bin(c, KIR_MIN, ec_v(c, k, iv), ec_i64(c, p->W - 1)), ec_i64(c, 0));
  kir_expr *x = ec_cast(c, at, gc_ec_load(c, k, px, ec_add(c, ec_v(c, k, src), cl)));
  kir_expr *at_ = ec_add(c, ec_v(c, k, rb), ec_add(c, ec_i64(c, ph * d->Wq), ec_v(c, k, j)));
  kir_emit_store(c->km, eb, KIR_SCRATCH, xs, at_, kir_select(c->km, in, x, gc_ec_num(c, at, 0.0)));
}

/* What the output loops of dw_host_direct need. */
typedef struct dw_direct_em {
  gc_lowerer *c;
  kir_kernel *k;
  const dw_plan *p;
  const dw_direct *d;
  int xs, pos;  /* pos: the output's first tap in scratch (var) */
} dw_direct_em;

/* The KW taps of window row kh at the current output: one chain of multiply-adds with
 * weights wt (vars). */
static kir_expr *dw_direct_row(const dw_direct_em *de, int64_t kh, const int *wt) {
  gc_lowerer *c = de->c;
  const dw_plan *p = de->p;
  int64_t s = de->d->s, Wq = de->d->Wq;
  kir_expr *sum = NULL;
  for (int64_t kw = 0; kw < p->KW; kw++) {
    int64_t q = kw * p->w.dw;
    kir_expr *at = ec_add(c, ec_v(c, de->k, de->pos), ec_i64(c, (q % s) * Wq + q / s));
    at = ec_add(c, at, ec_i64(c, kh * p->w.dh * s * Wq));
    kir_expr *x = kir_load(c->km, de->k, KIR_SCRATCH, de->xs, at);
    kir_expr *m = ec_bin(c, KIR_MUL, x, ec_v(c, de->k, wt[kw]));
    sum = sum ? ec_bin(c, KIR_ADD, sum, m) : m;
  }
  return sum;
}

static int dw_host_direct(gc_lowerer *c, const gc_fusion_group *grp, const dw_plan *p, const dw_direct *d) {
  const gc_op *op = grp->roots[0];
  const gc_value *xv = op->operands[0], *wv = op->operands[1], *ov = op->results[0];
  gc_dtype at = gc_ec_compute_type(ov->type.dtype);
  int64_t bands = p->OH / d->R;
  kir_kernel *k = gc_ec_kernel(c, KIR_LAUNCH_ITEMS, p->N * p->O * bands, 16);
  gc_gen G;
  gc_gen_init(&G, c, k);
  int px = gc_gen_rparam(&G, c->val_buf[xv->id], xv->type.dtype);
  int pw = gc_gen_rparam(&G, c->val_buf[wv->id], wv->type.dtype);
  int64_t s = d->s, Wq = d->Wq, RW = s * Wq;  /* RW: positions of a padded row */
  int xs = kir_add_scratch(c->km, k, at, d->Hb * RW);
  kir_block *b = &k->body;
  int64_t dims[3] = {p->N, p->O, bands};
  int co[3];
  gc_ec_unravel(c, k, b, k->item_var, 3, dims, co);
  int n = co[0], o = co[1], band = co[2];
  int j = gc_ec_var(c, k, "j", GRAPHC_DTYPE_I64);
  kir_expr *g = p->Og == 1 ? ec_v(c, k, o) : ec_bin(c, KIR_DIV, ec_v(c, k, o), ec_i64(c, p->Og));
  kir_expr *r = ec_add(c, ec_mul(c, ec_v(c, k, n), ec_i64(c, p->C)), g);
  int plane = gc_ec_let(c, k, b, "plane", ec_mul(c, r, ec_i64(c, p->H * p->W)));
  /* the band's padded rows t: input row ih = band R sh + t - top, or zeros outside the image */
  int ih0 = gc_ec_let(c, k, b, "ih0", ec_bin(c, KIR_SUB, ec_mul(c, ec_v(c, k, band), ec_i64(c, d->R * p->w.sh)),
                                             ec_i64(c, p->w.top)));
  int t = gc_ec_var(c, k, "t", GRAPHC_DTYPE_I64);
  kir_block *tb = kir_emit_for_nounroll(c->km, b, t, ec_i64(c, 0), ec_i64(c, d->Hb), ec_i64(c, 1));
  int ih = gc_ec_let(c, k, tb, "ih", ec_add(c, ec_v(c, k, ih0), ec_v(c, k, t)));
  int rb = gc_ec_let(c, k, tb, "rb", ec_mul(c, ec_v(c, k, t), ec_i64(c, RW)));
  kir_block *hb, *zb;
  kir_emit_if(c->km, tb, ec_bin(c, KIR_AND, ec_bin(c, KIR_GE, ec_v(c, k, ih), ec_i64(c, 0)),
                                ec_bin(c, KIR_LT, ec_v(c, k, ih), ec_i64(c, p->H))), &hb, &zb);
  dw_zero(c, k, zb, xs, j, ec_v(c, k, rb), ec_add(c, ec_v(c, k, rb), ec_i64(c, RW)), at);
  /* a row of the image, phase by phase: jj in [ja, jb) has every phase's column inside the
   * image (one loop, s loads of consecutive columns: an interleaved group), the ends and the
   * padding through dw_direct_edge */
  int src = gc_ec_let(c, k, hb, "src", ec_add(c, ec_v(c, k, plane), ec_mul(c, ec_v(c, k, ih), ec_i64(c, p->W))));
  int64_t left = p->w.left, ja = d->ja, jb = d->jb;
  if (jb > ja) {
    /* kept a loop: fully unrolled, its strided loads became gathers (a masked tail, too,
     * keeps the loop vectorizer from the interleaved group) */
    kir_block *ib = kir_emit_for_nounroll(c->km, hb, j, ec_i64(c, ja), ec_i64(c, jb), ec_i64(c, 1));
    for (int64_t ph = 0; ph < s; ph++) {
      kir_expr *xi = ec_add(c, ec_v(c, k, src), ec_add(c, ec_mul(c, ec_v(c, k, j), ec_i64(c, s)), ec_i64(c, ph - left)));
      kir_expr *to = ec_add(c, ec_v(c, k, rb), ec_add(c, ec_i64(c, ph * Wq), ec_v(c, k, j)));
      kir_emit_store(c->km, ib, KIR_SCRATCH, xs, to, ec_cast(c, at, gc_ec_load(c, k, px, xi)));
    }
  }
  for (int64_t ph = 0; ph < s; ph++) {
    dw_direct_edge(c, k, hb, p, d, px, xs, rb, src, j, ph, 0, ja, at);
    dw_direct_edge(c, k, hb, p, d, px, xs, rb, src, j, ph, jb, Wq, at);
  }
  /* the band's output rows: loops along ow */
  int ntap = (int)(p->KH * p->KW);
  int wbase = gc_ec_let(c, k, b, "wbase", ec_mul(c, ec_v(c, k, o), ec_i64(c, ntap)));
  int wt[DW_DIRECT_TAPS];
  for (int q = 0; q < ntap; q++)
    wt[q] = gc_ec_let(c, k, b, "wt", ec_cast(c, at, gc_ec_load(c, k, pw, ec_add(c, ec_v(c, k, wbase), ec_i64(c, q)))));
  dw_direct_em de = {c, k, p, d, xs, -1};
  int u = gc_ec_var(c, k, "u", GRAPHC_DTYPE_I64), ow = gc_ec_var(c, k, "ow", GRAPHC_DTYPE_I64);
  kir_block *ob = kir_emit_for_nounroll(c->km, b, u, ec_i64(c, 0), ec_i64(c, d->R), ec_i64(c, 1));
  int oh = gc_ec_let(c, k, ob, "oh", ec_add(c, ec_mul(c, ec_v(c, k, band), ec_i64(c, d->R)), ec_v(c, k, u)));
  int orow = gc_ec_let(c, k, ob, "orow", ec_mul(c, ec_v(c, k, u), ec_i64(c, p->w.sh * RW)));
  /* every tap in one body, the weights in registers (past 16 or so, on the stack); a chain
   * of multiply-adds per window row, the rows' sums added pairwise (one chain of 25
   * dependent FMAs, 4 cycles each, cost a third more) */
  kir_expr *row[DW_DIRECT_TAPS];
  kir_block *fb = kir_emit_for_masked_tail(c->km, ob, ow, ec_i64(c, 0), ec_i64(c, p->OW), ec_i64(c, 1));
  de.pos = gc_ec_let(c, k, fb, "pos", ec_add(c, ec_v(c, k, orow), ec_v(c, k, ow)));
  for (int64_t kh = 0; kh < p->KH; kh++) row[kh] = dw_direct_row(&de, kh, &wt[kh * p->KW]);
  for (int64_t nr = p->KH; nr > 1; nr = (nr + 1) / 2) {
    for (int64_t i = 0; i < nr / 2; i++) row[i] = ec_bin(c, KIR_ADD, row[2 * i], row[2 * i + 1]);
    if (nr % 2) row[nr / 2] = row[nr - 1];
  }
  kir_expr *sum = row[0];
  /* output (n, o, oh, ow) at ((n O + o) OH + oh) OW + ow */
  kir_expr *no = ec_add(c, ec_mul(c, ec_v(c, k, n), ec_i64(c, p->O)), ec_v(c, k, o));
  kir_expr *lin = ec_add(c, ec_mul(c, ec_add(c, ec_mul(c, no, ec_i64(c, p->OH)), ec_v(c, k, oh)), ec_i64(c, p->OW)),
                         ec_v(c, k, ow));
  int li = gc_ec_let(c, k, fb, "lin", lin);
  int oc[4] = {n, o, oh, ow};
  return dw_host_finish(c, &G, grp, p, fb, li, oc, sum);
}

int gc_emit_dwconv(gc_lowerer *c, const gc_fusion_group *grp) {
  const gc_op *op = grp->roots[0];
  const gc_value *xv = op->operands[0], *wv = op->operands[1], *ov = op->results[0];
  dw_plan p;
  dw_plan_of(c, op, &p);
  if (p.KW > DW_MAX_KW)
    return gc_ec_unsupported(c, op, "an NHWC conv2d window wider than 16 taps");
  /* the host's NCHW kernels: depthwise convs every tap in registers where dw_direct_of
   * takes them (3 x 3 over [8, 88, 28, 28] + relu: 0.24 -> 0.11 ms; stride 2 over
   * [8, 72, 56, 56]: 0.37 -> 0.23), else planes at stride 1 or for short rows, rows of 32
   * or more at larger strides (where a plane computes a frame of s - 1 discarded positions
   * per output), register tiles for maps narrower than 4 (a 7 x 7 map, 5 x 5 window, 576
   * channels + bias + silu on 2 vCPUs: 0.92 ms in tiles, 0.46 as planes; + relu 0.33 / 0.36) */
  dw_plane q;
  dw_direct d;
  if (dw_direct_of(c, &p, ov->type.dtype == GRAPHC_DTYPE_F64 ? 8 : 4, &d)) return dw_host_direct(c, grp, &p, &d);
  if (p.OW >= DW_ROW_MIN && p.w.sw > 1 && dw_host_rows_ok(c, &p)) return dw_host_rows(c, grp, &p);
  if (p.OW >= DW_PLANE_MIN && dw_plane_of(c, &p, &q)) return dw_host_plane(c, grp, &p, &q);
  if (dw_host_rows_ok(c, &p)) return dw_host_rows(c, grp, &p);
  dw_em e = {.c = c, .p = &p, .at = gc_ec_compute_type(ov->type.dtype), .xdt = xv->type.dtype, .ci = -1};
  int64_t items = p.N * p.OH * ((p.OW + p.P - 1) / p.P) * (p.O / p.V);
  kir_kernel *k = gc_ec_kernel(c, KIR_LAUNCH_ITEMS, items, 256);
  e.k = k;
  gc_gen G;
  gc_gen_init(&G, c, k);
  e.px = gc_gen_rparam(&G, c->val_buf[xv->id], xv->type.dtype);
  e.pw = gc_gen_rparam(&G, c->val_buf[wv->id], wv->type.dtype);
  kir_block *b = &k->body;
  dw_prologue(&e, b);
  /* every window of the tile inside the image along W: loads without tests */
  kir_expr *hi = ec_add(c, dw_v(&e, e.lo), dw_i(&e, p.J - 1));
  kir_expr *t = ec_bin(c, KIR_AND, ec_bin(c, KIR_GE, dw_v(&e, e.lo), dw_i(&e, 0)), ec_bin(c, KIR_LT, hi, dw_i(&e, p.W)));
  int interior = gc_ec_let(c, k, b, "interior", t);
  kir_block *cb = b;
  if (p.Cg > 1) {
    e.ci = gc_ec_var(c, k, "ci", GRAPHC_DTYPE_I64);
    cb = kir_emit_for_nounroll(c->km, b, e.ci, dw_i(&e, 0), dw_i(&e, p.Cg), dw_i(&e, 1));
  }
  for (int v = 0; v < p.V; v++)
    e.chan[v] = (p.one_x || p.vec_x) && v > 0 ? e.chan[0]
                                             : gc_ec_let(c, k, cb, "chan", ec_add(c, dw_v(&e, e.cin[v]), dw_ci(&e)));
  int kh = gc_ec_var(c, k, "kh", GRAPHC_DTYPE_I64);
  /* the window rows: ptxas may unroll them on CUDA (independent rows to overlap loads with);
   * on the host a row is already a block of vector FMAs, and unrolling only costs compile time */
  kir_block *hb = c->t->kind == KIR_TARGET_CUDA
                      ? kir_emit_for(c->km, cb, kh, dw_i(&e, 0), dw_i(&e, p.KH), dw_i(&e, 1))
                      : kir_emit_for_nounroll(c->km, cb, kh, dw_i(&e, 0), dw_i(&e, p.KH), dw_i(&e, 1));
  dw_row(&e, hb, kh, interior);
  for (int q = 0; q < p.P; q++) dw_store_pixel(&e, &G, b, grp, q);
  k->bytes_moved = gc_gen_bytes(&G, -1);
  k->flops = 2.0 * (double)gc_type_numel(&ov->type) * (double)(p.Cg * p.KH * p.KW);
  gc_gen_free(&G);
  gc_ec_launch(c, k);
  return 0;
}
