/* precision_fp8.c - `--precision fp8` (part of the precision pass, passes/precision.c): the
 * linears of a float model as fp8 matmuls, the way TensorRT's FP8 mode and DeepGEMM's
 * per-channel / per-token scaling work.
 *
 * Every matmul y = matmul(x, w [, transpose_b]) whose w is a 2-D weight (a param or const, through
 * casts, reshapes and transposes) and whose K is a multiple of 16 (the fp8 kernel's 16-byte
 * chunks) becomes
 *
 *   wt  = w as [N, K] (a transpose when w is stored K x N), f32
 *   sw  = max(reduce_max(abs(wt), axes=[1], keepdims), 2^-100) / 448        [N, 1]
 *   w8  = cast(wt / sw, to=f8e4m3)                                          [N, K], saturating
 *   sx  = max(reduce_max(abs(x), axes=[-1], keepdims), 2^-100) / 448        [.., M, 1]
 *   x8  = cast(x / sx, to=f8e4m3)
 *   y   = matmul(x8, w8, transpose_b=true) * sx * reshape(sw, [N])          f32, cast to y's dtype
 *
 * Per output channel for the weights (computed from the weights alone: the backends run it
 * once per weights, codegen/prologue.c, not per run), per row (token) for the activations,
 * computed on the device at run time; 448 is e4m3's largest finite value, so each row and
 * channel uses the whole range. A matmul with an `act_amax` attribute (the max |x| that
 * graphc_model_calibrate, driver/calibrate.c, measured on sample inputs: TensorRT's static
 * calibration) uses the constant sx = act_amax / 448 for the whole tensor instead, and no
 * reduction runs; values beyond it saturate. The products are exact in f32 and summed there (the
 * warpgroup kernel on sm_90, emit_wgmma.c; CUDA cores and the host convert on load); the
 * scales go in the epilogue. Matmuls with transpose_a, batched weights, or a K that is no
 * multiple of 16, and ops whose result name matches --keep-f32, keep their dtype; every
 * other op is left as written.
 */
#include <regex.h>
#include <stdlib.h>

#include "passes/rewrite.h"

typedef struct pf8 {
  gc_rewriter rw;
  gc_op *at;     /* new ops go before it */
  int quantized, kept, calibrated;
} pf8;

/* Is v computed from weights alone (a param or const through casts, reshapes, transposes)? */
static int weight_value(const gc_value *v) {
  for (int depth = 0; depth < 8; depth++) {
    const gc_op *d = v->def;
    if (!d) return 0;
    if (d->opcode == GC_OP_PARAM || d->opcode == GC_OP_CONST) return 1;
    if (d->opcode != GC_OP_CAST && d->opcode != GC_OP_RESHAPE && d->opcode != GC_OP_TRANSPOSE) return 0;
    v = d->operands[0];
  }
  return 0;
}

/* A new one-result op before P->at; NULL on OOM (flagged). */
static gc_value *op1(pf8 *P, gc_opcode opc, int n, gc_value *const *in, int n_at, const gc_named_attr *at,
                     gc_dtype dt, int rank, const int64_t *dims) {
  gc_type t = {.dtype = dt, .rank = rank};
  for (int i = 0; i < rank; i++) t.dims[i] = dims[i];
  for (int i = 0; i < n; i++)
    if (!in[i]) return NULL;
  gc_op *o = gc_rw_new_op(&P->rw, opc, P->at, n, in, n_at, at, &t, NULL, P->at->loc);
  return o ? o->results[0] : NULL;
}

static gc_value *bin(pf8 *P, gc_opcode opc, gc_value *a, gc_value *b) {
  gc_value *ab[2] = {a, b};
  const gc_type *t = a && b && a->type.rank >= b->type.rank ? &a->type : b ? &b->type : NULL;
  return t ? op1(P, opc, 2, ab, 0, NULL, t->dtype, t->rank, t->dims) : NULL;
}

static gc_value *cast(pf8 *P, gc_value *v, gc_dtype dt) {
  if (!v || v->type.dtype == dt) return v;
  gc_named_attr to = {"to", gc_rw_attr_dtype(dt)};
  return op1(P, GC_OP_CAST, 1, &v, 1, &to, dt, v->type.rank, v->type.dims);
}

static gc_value *scalar(pf8 *P, double v) {
  gc_named_attr at[2] = {{"value", {.kind = GC_ATTR_FLOAT, .u.f = v}}, {"dtype", gc_rw_attr_dtype(GRAPHC_DTYPE_F32)}};
  return op1(P, GC_OP_CONST, 0, NULL, 2, at, GRAPHC_DTYPE_F32, 0, NULL);
}

/* (v as f32 / its scale along the last axis) as f8e4m3, and that scale: max |v| over the
 * last axis (at least 2^-100) / 448, shaped like v with a last dim of 1. */
static gc_value *quantize_rows(pf8 *P, gc_value *v, gc_value **scale) {
  v = cast(P, v, GRAPHC_DTYPE_F32);
  if (!v) return NULL;
  int r = v->type.rank;
  int64_t dims[GC_MAX_RANK], ax = r - 1;
  for (int i = 0; i < r; i++) dims[i] = i == r - 1 ? 1 : v->type.dims[i];
  gc_value *a = op1(P, GC_OP_ABS, 1, &v, 0, NULL, GRAPHC_DTYPE_F32, r, v->type.dims);
  gc_named_attr red[2] = {{"axes", gc_rw_attr_ints(&P->rw, &ax, 1)}, {"keepdims", {.kind = GC_ATTR_BOOL, .u.b = 1}}};
  gc_value *m = a ? op1(P, GC_OP_REDUCE_MAX, 1, &a, 2, red, GRAPHC_DTYPE_F32, r, dims) : NULL;
  gc_value *s = bin(P, GC_OP_DIV, bin(P, GC_OP_MAXIMUM, m, scalar(P, 0x1p-100)), scalar(P, 448.0));
  *scale = s;
  return cast(P, bin(P, GC_OP_DIV, v, s), GRAPHC_DTYPE_F8E4M3);
}

int gc_fp8_linear(const gc_op *op) {
  if (op->opcode != GC_OP_MATMUL) return 0;
  const gc_type *yt = &op->results[0]->type;
  const gc_value *x = op->operands[0], *w = op->operands[1];
  gc_dtype dt = yt->dtype;
  if (dt != GRAPHC_DTYPE_F32 && dt != GRAPHC_DTYPE_F16 && dt != GRAPHC_DTYPE_BF16) return 0;
  if (gc_op_attr_bool(op, "transpose_a", 0) || w->type.rank != 2 || !weight_value(w) ||
      !gc_type_is_concrete(yt) || !gc_type_is_concrete(&x->type))
    return 0;
  return x->type.dims[x->type.rank - 1] % 16 ? -1 : 1;
}

/* x as f32 / a constant scale (max(amax, 2^-100) / 448, amax calibrated) as f8e4m3, and that
 * scale: values beyond the calibrated range saturate at +-448. */
static gc_value *quantize_static(pf8 *P, gc_value *x, double amax, gc_value **scale) {
  x = cast(P, x, GRAPHC_DTYPE_F32);
  gc_value *s = scalar(P, (amax > 0x1p-100 ? amax : 0x1p-100) / 448.0);
  *scale = s;
  return cast(P, bin(P, GC_OP_DIV, x, s), GRAPHC_DTYPE_F8E4M3);
}

static void quantize_matmul(pf8 *P, gc_op *op, regex_t *re) {
  const gc_type *yt = &op->results[0]->type;
  gc_value *x = op->operands[0], *w = op->operands[1];
  gc_dtype dt = yt->dtype;
  int lin = gc_fp8_linear(op);
  if (lin == 0) return;
  int tb = gc_op_attr_bool(op, "transpose_b", 0);
  int64_t K = x->type.dims[x->type.rank - 1], N = yt->dims[yt->rank - 1];
  if (lin < 0 || (re && regexec(re, op->results[0]->name, 0, NULL, 0) == 0)) {
    P->kept++;
    return;
  }
  P->at = op;
  gc_value *wt = w;
  if (!tb) {
    int64_t perm[2] = {1, 0}, d[2] = {N, K};
    gc_named_attr pa = {"perm", gc_rw_attr_ints(&P->rw, perm, 2)};
    wt = op1(P, GC_OP_TRANSPOSE, 1, &w, 1, &pa, w->type.dtype, 2, d);
  }
  gc_value *sw = NULL, *sx = NULL;
  gc_value *w8 = wt ? quantize_rows(P, wt, &sw) : NULL;
  const gc_attr *amax = gc_op_attr(op, "act_amax");
  gc_value *x8 = !w8 ? NULL : amax ? quantize_static(P, x, gc_attr_number(amax), &sx) : quantize_rows(P, x, &sx);
  if (!x8) return;
  gc_named_attr tr = {"transpose_b", {.kind = GC_ATTR_BOOL, .u.b = 1}};
  gc_value *mm_in[2] = {x8, w8};
  gc_value *m = op1(P, GC_OP_MATMUL, 2, mm_in, 1, &tr, GRAPHC_DTYPE_F32, yt->rank, yt->dims);
  gc_value *swn = sw ? gc_rw_reshape(&P->rw, op, sw, 1, &N) : NULL;
  gc_value *y = bin(P, GC_OP_MUL, m, sx), *ab[2] = {y, swn};
  /* the last op takes the result's name (an output keeps its name) */
  const char *name = dt == GRAPHC_DTYPE_F32 ? op->results[0]->name : NULL;
  gc_op *last = y && swn ? gc_rw_new_op(&P->rw, GC_OP_MUL, op, 2, ab, 0, NULL, &m->type, name, op->loc) : NULL;
  if (!last) return;
  y = last->results[0];
  if (dt != GRAPHC_DTYPE_F32) {
    gc_named_attr to = {"to", gc_rw_attr_dtype(dt)};
    if (gc_rw_replace_with_new(&P->rw, op, GC_OP_CAST, 1, &y, 1, &to)) {
      P->quantized++;
      P->calibrated += amax != NULL;
    }
    return;
  }
  gc_rw_replace_op(&P->rw, op, &y);
  P->quantized++;
  P->calibrated += amax != NULL;
}

int gc_precision_fp8(gc_graph *g, const graphc_compile_options_t *opts, gc_sbuf *stats, gc_diags *d) {
  regex_t re;
  int have_re = opts->keep_f32 && regcomp(&re, opts->keep_f32, REG_EXTENDED | REG_NOSUB) == 0;
  pf8 P = {0};
  if (gc_rw_init(&P.rw, g, d) != 0) {
    if (have_re) regfree(&re);
    return -1;
  }
  int n_op_ids = g->next_op_id;  /* ops made here have larger ids */
  for (gc_op *op = g->first, *next; op && !P.rw.oom; op = next) {
    next = op->next;
    gc_rw_resolve_operands(&P.rw, op);
    if (op->opcode == GC_OP_MATMUL && op->id < n_op_ids) quantize_matmul(&P, op, have_re ? &re : NULL);
  }
  if (have_re) regfree(&re);
  int rc = gc_rw_finish(&P.rw);
  if (rc < 0) return -1;
  gc_graph_recount_uses(g);
  gc_sbuf_printf(stats, "precision: fp8: %d matmul%s in f8e4m3 (weights per channel; activations per row",
                 P.quantized, P.quantized == 1 ? "" : "s");
  if (P.calibrated) gc_sbuf_printf(stats, ", %d per tensor from calibration", P.calibrated);
  gc_sbuf_puts(stats, ")");
  if (P.kept) gc_sbuf_printf(stats, ", %d kept (K not a multiple of 16, or --keep-f32)", P.kept);
  gc_sbuf_puts(stats, "\n");
  return rc;
}
