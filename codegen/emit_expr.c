/* emit_expr.c - the element generator: the value of a graph value at one point
 * of its index space, inside the kernel of a fusion group.
 *
 *   gc_gen_val(v, pt)   v's op in the group (c->inl)?  compute it: map pt to
 *                                                      each operand's point and recurse
 *                       otherwise                      load v's buffer at lin(pt)
 *
 * Index maps (operand point from result point):
 *   elementwise, broadcast   numpy broadcasting: dims of 1 read coordinate 0
 *   reshape                  the same linear index; or, from coordinates, dims
 *                            grouped by equal products (split heads: j = h*32 + d)
 *   transpose / slice / split   permuted / start + step * c / offset on the axis
 *   pad, concat              an if-chain (the pad value or the piece holding the
 *                            coordinate), so no load leaves its buffer
 *   gather                   the index value (computed or loaded), wrapped and clamped
 *   iota / const splat       the coordinate / the literal
 * Points keep their linear index and coordinates as variables computed on
 * demand and cached; (value, point) -> variable is memoized, so a value read
 * twice at the same point (x * x, diamonds) is computed once. Scopes
 * (gc_gen_push/pop) forget what a nested block computed.
 *
 * Every computed value is rounded through its dtype (f16, bf16, i8, u8), so a
 * fused kernel produces exactly what the unfused kernels would have stored.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/emit.h"

/* ---- elementwise arithmetic ----------------------------------------------------------------- */

/* The KIR unary op for the ops that map one to one. */
static int direct_unary(gc_opcode opc, kir_op *out) {
  switch (opc) {
    case GC_OP_NEG: *out = KIR_NEG; return 1;
    case GC_OP_ABS: *out = KIR_ABS; return 1;
    case GC_OP_EXP: *out = KIR_EXP; return 1;
    case GC_OP_LOG: *out = KIR_LOG; return 1;
    case GC_OP_SQRT: *out = KIR_SQRT; return 1;
    case GC_OP_RSQRT: *out = KIR_RSQRT; return 1;
    case GC_OP_TANH: *out = KIR_TANH; return 1;
    case GC_OP_ERF: *out = KIR_ERF; return 1;
    case GC_OP_SIN: *out = KIR_SIN; return 1;
    case GC_OP_COS: *out = KIR_COS; return 1;
    case GC_OP_FLOOR: *out = KIR_FLOOR; return 1;
    case GC_OP_CEIL: *out = KIR_CEIL; return 1;
    case GC_OP_NOT: *out = KIR_NOT; return 1;
    default: return 0;
  }
}

/* The KIR binary op for arithmetic, comparisons and logic. */
static int direct_binary(gc_opcode opc, kir_op *out) {
  switch (opc) {
    case GC_OP_ADD: *out = KIR_ADD; return 1;
    case GC_OP_SUB: *out = KIR_SUB; return 1;
    case GC_OP_MUL: *out = KIR_MUL; return 1;
    case GC_OP_DIV: *out = KIR_DIV; return 1;
    case GC_OP_POW: *out = KIR_POW; return 1;
    case GC_OP_AND: *out = KIR_AND; return 1;
    case GC_OP_OR: *out = KIR_OR; return 1;
    case GC_OP_EQ: *out = KIR_EQ; return 1;
    case GC_OP_NE: *out = KIR_NE; return 1;
    case GC_OP_LT: *out = KIR_LT; return 1;
    case GC_OP_LE: *out = KIR_LE; return 1;
    case GC_OP_GT: *out = KIR_GT; return 1;
    case GC_OP_GE: *out = KIR_GE; return 1;
    default: return 0;
  }
}

/* Modeled arithmetic per element (transcendentals count a few). */
double gc_ec_op_flops(const gc_op *op) {
  switch (op->opcode) {
    case GC_OP_SIGMOID: return 4;
    case GC_OP_SILU: return 5;
    case GC_OP_GELU: return 10;
    case GC_OP_CLAMP:
    case GC_OP_MAXIMUM:
    case GC_OP_MINIMUM: return 2;
    default: return 1;
  }
}

/* Is op's f32 result rounded to f16 / bf16 on a GPU, where an approximation within an
 * f32 ulp or so (tanh.approx, rcp.approx) rounds to the same or a neighbouring value? */
static int rounded_to_16(const gc_lowerer *c, const kir_kernel *k, const gc_op *op, int x) {
  gc_dtype rt = op->results[0]->type.dtype;
  return c->t->kind == KIR_TARGET_CUDA && c->t->sm >= 75 && (rt == GRAPHC_DTYPE_F16 || rt == GRAPHC_DTYPE_BF16) &&
         k->vars[x].type == GRAPHC_DTYPE_F32;
}

/* 1 / (1 + exp(-x)) in x's float type. Rounded to f16 / bf16 on the GPU, the reciprocal is
 * rcp.approx (one MUFU instruction against a correctly rounded division's dozen and its
 * slow-path branch): an f16 silu over 256 MB read 85.7% of copy bandwidth on the H200
 * with the division (docs/performance.md). exp(-x) = inf gives rcp(inf) = 0, as 1/inf. */
static kir_expr *sigmoid(gc_lowerer *c, kir_kernel *k, const gc_op *op, int x) {
  gc_dtype t = k->vars[x].type;
  /* the host's f32: one op (codegen/llvm_hostmath.c), e^-x only where it matters and a
   * reciprocal estimate with one Newton step. The general exp, the selects that kept the
   * estimate's operand finite and a division were most of a depthwise conv + silu. */
  if (c->t->kind == KIR_TARGET_HOST && t == GRAPHC_DTYPE_F32) return kir_unary(c->km, KIR_SIGMOID, ec_v(c, k, x));
  kir_expr *nx = kir_unary(c->km, KIR_NEG, ec_v(c, k, x));
  kir_expr *e = kir_unary(c->km, KIR_EXP, nx);
  kir_expr *d = ec_bin(c, KIR_ADD, gc_ec_num(c, t, 1.0), e);
  if (rounded_to_16(c, k, op, x)) return kir_unary(c->km, KIR_RCP_APPROX, d);
  return ec_bin(c, KIR_DIV, gc_ec_num(c, t, 1.0), d);
}

/* gelu: 0.5x(1+erf(x/sqrt2)) or 0.5x(1+tanh(sqrt(2/pi)(x+0.044715x^3))). */
static kir_expr *gelu(gc_lowerer *c, kir_kernel *k, kir_block *b, const gc_op *op, int x) {
  gc_dtype t = k->vars[x].type;
  const char *approx = gc_op_attr_str(op, "approximate", "none");
  kir_expr *inner;
  if (strcmp(approx, "tanh") == 0) {
    int x3 = gc_ec_let(c, k, b, "x3",
                       ec_bin(c, KIR_MUL, ec_v(c, k, x), ec_bin(c, KIR_MUL, ec_v(c, k, x), ec_v(c, k, x))));
    kir_expr *poly = ec_bin(c, KIR_ADD, ec_v(c, k, x),
                            ec_bin(c, KIR_MUL, gc_ec_num(c, t, 0.044715), ec_v(c, k, x3)));
    inner = kir_unary(c->km, KIR_TANH,
                      ec_bin(c, KIR_MUL, gc_ec_num(c, t, 0.7978845608028654), poly));
  } else {
    /* x * (1 / sqrt 2), not x / sqrt 2: a correctly rounded f32 division is a dozen
     * instructions and a slow-path branch on the GPU (128 of them in each thread of a
     * 256x128 f16 wgmma epilogue); the two differ by an ulp of erf's argument */
    inner = kir_unary(c->km, KIR_ERF,
                      ec_bin(c, KIR_MUL, ec_v(c, k, x), gc_ec_num(c, t, 0.70710678118654752440)));
  }
  kir_expr *half_x = ec_bin(c, KIR_MUL, gc_ec_num(c, t, 0.5), ec_v(c, k, x));
  return ec_bin(c, KIR_MUL, half_x, ec_bin(c, KIR_ADD, gc_ec_num(c, t, 1.0), inner));
}

/* clamp(x, min?, max?) = min(max(x, lo), hi) with NaN propagation. */
static kir_expr *clamp(gc_lowerer *c, kir_kernel *k, kir_block *b, const gc_op *op, int x) {
  gc_dtype t = k->vars[x].type;
  const gc_attr *lo = gc_op_attr(op, "min"), *hi = gc_op_attr(op, "max");
  int v = x;
  if (lo) {
    int l = gc_ec_let(c, k, b, "lo", gc_ec_num(c, t, gc_attr_number(lo)));
    v = gc_ec_let(c, k, b, "cl", gc_ec_maxmin(c, k, 1, v, l));
  }
  if (hi) {
    int h = gc_ec_let(c, k, b, "hi", gc_ec_num(c, t, gc_attr_number(hi)));
    v = gc_ec_let(c, k, b, "cl", gc_ec_maxmin(c, k, 0, v, h));
  }
  return ec_v(c, k, v);
}

/* Comparisons order bools as 0/1 in i32 (KIR compares numbers). */
static kir_expr *compare(gc_lowerer *c, kir_kernel *k, kir_op op, int a, int b) {
  kir_expr *x = ec_v(c, k, a), *y = ec_v(c, k, b);
  if (x->type == GRAPHC_DTYPE_BOOL) {
    x = kir_cast(c->km, GRAPHC_DTYPE_I32, x);
    y = kir_cast(c->km, GRAPHC_DTYPE_I32, y);
  }
  return ec_bin(c, op, x, y);
}

/* f(args) for one element (see emit.h). */
/* hash_uniform (ir/util.c gc_hash_uniform): its rounds in 64-bit integers, every value
 * non-negative (a shift is a division by a power of two) and every product below 2^62; the
 * result ((x mod 2^24) + 0.5) * 2^-24 is exact in f32. */
static kir_expr *hash_uniform(gc_lowerer *c, kir_kernel *k, kir_block *b, const int *a) {
  kir_expr *p = ec_i64(c, GC_HU_P);
  int v[2];
  for (int i = 0; i < 2; i++) {  /* operand mod p, in [0, p) also for negative ones */
    kir_expr *o = ec_cast(c, GRAPHC_DTYPE_I64, ec_v(c, k, a[i]));
    v[i] = gc_ec_let(c, k, b, "hu", ec_bin(c, KIR_REM, ec_bin(c, KIR_ADD, ec_bin(c, KIR_REM, o, p), p), p));
  }
  int x = v[0];
  for (int r = 0; r < 4; r++) {
    const gc_hu_round *h = &gc_hu_rounds[r];
    kir_expr *e = ec_v(c, k, x);
    if (h->shift) e = ec_bin(c, KIR_XOR, e, ec_bin(c, KIR_DIV, ec_v(c, k, x), ec_i64(c, (int64_t)1 << h->shift)));
    e = ec_bin(c, KIR_ADD, ec_bin(c, KIR_MUL, e, ec_i64(c, h->mul)), ec_i64(c, h->add));
    if (h->add_a) e = ec_bin(c, KIR_ADD, e, ec_v(c, k, v[0]));
    if (h->add_b) e = ec_bin(c, KIR_ADD, e, ec_v(c, k, v[1]));
    x = gc_ec_let(c, k, b, "hu", ec_bin(c, KIR_REM, e, p));
  }
  kir_expr *fin = ec_bin(c, KIR_XOR, ec_v(c, k, x), ec_bin(c, KIR_DIV, ec_v(c, k, x), ec_i64(c, 2048)));
  kir_expr *lo = ec_cast(c, GRAPHC_DTYPE_F32, ec_bin(c, KIR_REM, fin, ec_i64(c, 16777216)));
  return ec_bin(c, KIR_MUL, ec_bin(c, KIR_ADD, lo, gc_ec_num(c, GRAPHC_DTYPE_F32, 0.5)),
                gc_ec_num(c, GRAPHC_DTYPE_F32, 0x1p-24));
}

kir_expr *gc_ec_elementwise(gc_lowerer *c, kir_kernel *k, kir_block *b, const gc_op *op, const int *a) {
  kir_op kop;
  gc_dtype t = k->vars[a[0]].type;
  switch (op->opcode) {
    case GC_OP_RELU: {
      kir_expr *pos = ec_bin(c, KIR_GT, ec_v(c, k, a[0]), gc_ec_num(c, t, 0.0));
      return kir_select(c->km, pos, ec_v(c, k, a[0]), gc_ec_num(c, t, 0.0));
    }
    case GC_OP_SIGMOID: return sigmoid(c, k, op, a[0]);
    case GC_OP_SILU: return ec_bin(c, KIR_MUL, ec_v(c, k, a[0]), sigmoid(c, k, op, a[0]));
    case GC_OP_GELU: return gelu(c, k, b, op, a[0]);
    case GC_OP_CLAMP: return clamp(c, k, b, op, a[0]);
    case GC_OP_CAST:
      if (gc_dtype_is_f8(op->results[0]->type.dtype))  /* saturate as the attribute says */
        return kir_cast_sat(c->km, op->results[0]->type.dtype, ec_v(c, k, a[0]),
                            gc_op_attr_bool(op, "saturate", 1));
      return ec_cast(c, op->results[0]->type.dtype, ec_v(c, k, a[0]));
    case GC_OP_MAXIMUM: return gc_ec_maxmin(c, k, 1, a[0], a[1]);
    case GC_OP_MINIMUM: return gc_ec_maxmin(c, k, 0, a[0], a[1]);
    case GC_OP_SELECT: return kir_select(c->km, ec_v(c, k, a[0]), ec_v(c, k, a[1]), ec_v(c, k, a[2]));
    case GC_OP_HASH_UNIFORM: return hash_uniform(c, k, b, a);
    case GC_OP_EQ:
    case GC_OP_NE:
    case GC_OP_LT:
    case GC_OP_LE:
    case GC_OP_GT:
    case GC_OP_GE:
      direct_binary(op->opcode, &kop);
      return compare(c, k, kop, a[0], a[1]);
    default: break;
  }
  if (op->n_operands == 1 && direct_unary(op->opcode, &kop)) {
    /* tanh rounded to f16 / bf16 at once on the GPU: tanh.approx.f32, whose error (below
     * 2^-10.9 relative) is under the half ulp of f16 (2^-11) plus rounding, about 1 ulp at
     * most; tanhf costs ~20 instructions an element, enough to hold an f16 chain at 74% of
     * copy bandwidth on the H200 (docs/performance.md) */
    if (kop == KIR_TANH && rounded_to_16(c, k, op, a[0])) kop = KIR_TANH_APPROX;
    return kir_unary(c->km, kop, ec_v(c, k, a[0]));
  }
  if (op->n_operands == 2 && direct_binary(op->opcode, &kop))
    return ec_bin(c, kop, ec_v(c, k, a[0]), ec_v(c, k, a[1]));
  GC_ASSERT(!"elementwise op without a lowering");
  return NULL;
}

/* Round e through dtype t, in t's compute type (see emit.h). */
kir_expr *gc_ec_round(gc_lowerer *c, gc_dtype t, kir_expr *e) {
  gc_dtype ct = gc_ec_compute_type(t);
  if (!e) return NULL;
  if (ct != t) return ec_cast(c, ct, ec_cast(c, t, e));
  return ec_cast(c, t, e);
}

/* ---- state, points, scopes ------------------------------------------------------------------ */

/* Empty generator for kernel k; buffer -> param maps sized for the plan's buffers. */
void gc_gen_init(gc_gen *G, gc_lowerer *c, kir_kernel *k) {
  memset(G, 0, sizeof *G);
  G->c = c;
  G->k = k;
  G->n_bufs = c->p->n_buffers;
  G->rparam = malloc(((size_t)G->n_bufs + 1) * sizeof *G->rparam);
  G->wparam = malloc(((size_t)G->n_bufs + 1) * sizeof *G->wparam);
  if (!G->rparam || !G->wparam) {
    c->oom = 1;
    G->n_bufs = 0;
    return;
  }
  for (int i = 0; i < G->n_bufs; i++) G->rparam[i] = G->wparam[i] = -1;
}

/* Release the generator (the kernel stays). */
void gc_gen_free(gc_gen *G) {
  for (int i = 0; i < G->n_frames; i++) free(G->frames[i].saved);
  free(G->frames);
  free(G->pts);
  free(G->memo);
  free(G->rparam);
  free(G->wparam);
}

/* Grow an array of `size`-byte items so index n fits; 0 on OOM (and c->oom set). */
static int grow(gc_gen *G, void **arr, int n, int *cap, size_t size) {
  if (n < *cap) return 1;
  int nc = *cap ? 2 * *cap : 16;
  void *na = realloc(*arr, (size_t)nc * size);
  if (!na) {
    G->c->oom = 1;
    return 0;
  }
  *arr = na;
  *cap = nc;
  return 1;
}

/* A new point (see emit.h); unit dims always have coordinate 0. On OOM: point 0. */
int gc_gen_pt(gc_gen *G, const gc_type *t, int lin, const int *co) {
  if (!grow(G, (void **)&G->pts, G->n_pts, &G->cap_pts, sizeof *G->pts)) return 0;
  gc_pt *p = &G->pts[G->n_pts];
  p->rank = t->rank;
  p->lin = t->rank == 0 || gc_type_numel(t) == 1 ? GC_PT_ZERO : lin;
  for (int i = 0; i < t->rank; i++) {
    p->dims[i] = t->dims[i];
    p->co[i] = t->dims[i] == 1 ? GC_PT_ZERO : co ? co[i] : -1;
  }
  return G->n_pts++;
}

/* The type whose dims point pt walks (dtype irrelevant). */
static gc_type pt_type(const gc_gen *G, int pt) {
  gc_type t = {GRAPHC_DTYPE_I64, G->pts[pt].rank, {0}};
  memcpy(t.dims, G->pts[pt].dims, sizeof t.dims);
  return t;
}

/* Are all coordinates of pt known? */
static int coords_known(const gc_gen *G, int pt) {
  const gc_pt *p = &G->pts[pt];
  for (int i = 0; i < p->rank; i++)
    if (p->co[i] == -1) return 0;
  return 1;
}

/* Compute every unknown coordinate of pt from its linear index (mod / div). */
static void unravel(gc_gen *G, kir_block *b, int pt) {
  gc_lowerer *c = G->c;
  kir_kernel *k = G->k;
  GC_ASSERT(G->pts[pt].lin != -1);
  if (G->pts[pt].lin == GC_PT_ZERO) {
    for (int i = 0; i < G->pts[pt].rank; i++) G->pts[pt].co[i] = GC_PT_ZERO;
    return;
  }
  int rank = G->pts[pt].rank, rem = G->pts[pt].lin;
  int first = 0;  /* leading unit dims need no division */
  while (first < rank && G->pts[pt].dims[first] == 1) first++;
  for (int i = rank - 1; i > first; i--) {
    int64_t d = G->pts[pt].dims[i];
    if (d == 1) continue;
    if (G->pts[pt].co[i] == -1)
      G->pts[pt].co[i] = gc_ec_let(c, k, b, "c", ec_bin(c, KIR_REM, ec_v(c, k, rem), ec_i64(c, d)));
    rem = gc_ec_let(c, k, b, "q", ec_bin(c, KIR_DIV, ec_v(c, k, rem), ec_i64(c, d)));
  }
  if (first < rank && G->pts[pt].co[first] == -1) G->pts[pt].co[first] = rem;
}

/* Coordinate d of pt as a variable or GC_PT_ZERO. */
static int co_var(gc_gen *G, kir_block *b, int pt, int d) {
  if (G->pts[pt].co[d] == -1) unravel(G, b, pt);
  return G->pts[pt].co[d];
}

/* Expression for a variable-or-zero index. */
static kir_expr *vz(gc_gen *G, int v) { return v == GC_PT_ZERO ? ec_i64(G->c, 0) : ec_v(G->c, G->k, v); }

/* Coordinate d of pt (see emit.h). */
kir_expr *gc_gen_coord(gc_gen *G, kir_block *b, int pt, int d) { return vz(G, co_var(G, b, pt, d)); }

/* The linear index variable of pt (or GC_PT_ZERO), computed from coordinates once. */
static int lin_var(gc_gen *G, kir_block *b, int pt) {
  if (G->pts[pt].lin != -1) return G->pts[pt].lin;
  gc_lowerer *c = G->c;
  kir_expr *e = ec_i64(c, 0);
  int64_t st = 1;
  for (int i = G->pts[pt].rank - 1; i >= 0; i--) {
    int co = G->pts[pt].co[i];
    GC_ASSERT(co != -1);  /* a point knows its linear index or all its coordinates */
    if (co != GC_PT_ZERO) e = ec_add(c, e, ec_mul(c, ec_v(c, G->k, co), ec_i64(c, st)));
    st *= G->pts[pt].dims[i];
  }
  G->pts[pt].lin = ec_is_const(e, 0) ? GC_PT_ZERO : e->kind == KIR_E_VAR ? e->u.var : gc_ec_let(c, G->k, b, "l", e);
  return G->pts[pt].lin;
}

/* Linear index of pt (see emit.h). */
kir_expr *gc_gen_lin(gc_gen *G, kir_block *b, int pt) { return vz(G, lin_var(G, b, pt)); }

/* Open a scope: remember the points (their cached variables) and the memo. */
void gc_gen_push(gc_gen *G) {
  if (!grow(G, (void **)&G->frames, G->n_frames, &G->cap_frames, sizeof *G->frames)) return;
  gc_gen_frame *fr = &G->frames[G->n_frames];
  fr->n_pts = G->n_pts;
  fr->n_memo = G->n_memo;
  fr->saved = malloc(((size_t)G->n_pts + 1) * sizeof *fr->saved);
  if (!fr->saved) {
    G->c->oom = 1;
    return;
  }
  if (G->n_pts) memcpy(fr->saved, G->pts, (size_t)G->n_pts * sizeof *G->pts);
  G->n_frames++;
}

/* Close the innermost scope: variables assigned inside it are not used outside. */
void gc_gen_pop(gc_gen *G) {
  if (G->n_frames == 0) return;  /* only after OOM */
  gc_gen_frame *fr = &G->frames[--G->n_frames];
  if (fr->n_pts) memcpy(G->pts, fr->saved, (size_t)fr->n_pts * sizeof *G->pts);
  G->n_pts = fr->n_pts;
  G->n_memo = fr->n_memo;
  free(fr->saved);
  fr->saved = NULL;
}

/* Variable memoized for (value id, point), or -1. */
static int memo_find(const gc_gen *G, int vid, int pt) {
  for (int i = G->n_memo - 1; i >= 0; i--)
    if (G->memo[i].value == vid && G->memo[i].pt == pt) return G->memo[i].var;
  return -1;
}

/* Variable memoized for value id at any point whose linear index is var `lin`, or -1. */
static int memo_find_lin(const gc_gen *G, int vid, int lin) {
  if (lin == -1) return -1;
  for (int i = G->n_memo - 1; i >= 0; i--)
    if (G->memo[i].value == vid && G->pts[G->memo[i].pt].lin == lin) return G->memo[i].var;
  return -1;
}

/* Declare that var holds v at pt (see emit.h). */
void gc_gen_bind(gc_gen *G, const gc_value *v, int pt, int var) {
  if (!grow(G, (void **)&G->memo, G->n_memo, &G->cap_memo, sizeof *G->memo)) return;
  G->memo[G->n_memo++] = (gc_memo){v->id, pt, var};
}

/* Param reading (w = 0) or writing (w = 1) plan buffer buf, named after `hint`. */
static int buf_param(gc_gen *G, int buf, gc_dtype dt, int w, const char *hint) {
  GC_ASSERT(buf >= 0);
  if (buf >= G->n_bufs) {
    GC_ASSERT(G->c->oom);
    return 0;
  }
  int *map = w ? G->wparam : G->rparam;
  if (map[buf] < 0) map[buf] = gc_ec_param_buf(G->c, G->k, hint, buf, dt, !w);
  return map[buf];
}

/* Public param helpers (see emit.h). */
int gc_gen_rparam(gc_gen *G, int buf, gc_dtype dt) { return buf_param(G, buf, dt, 0, "in"); }
int gc_gen_wparam(gc_gen *G, int buf, gc_dtype dt) { return buf_param(G, buf, dt, 1, "out"); }

/* ---- index maps ------------------------------------------------------------------------------ */

/* Point of an operand of type `in` broadcast (numpy) to pt's dims. */
static int map_bcast(gc_gen *G, kir_block *b, int pt, const gc_type *in) {
  gc_type ot = pt_type(G, pt);
  if (in->rank == ot.rank && memcmp(in->dims, ot.dims, (size_t)in->rank * sizeof in->dims[0]) == 0)
    return pt;
  int64_t n_in = gc_type_numel(in);
  if (n_in == 1) return gc_gen_pt(G, in, GC_PT_ZERO, NULL);
  if (n_in == gc_type_numel(&ot) && G->pts[pt].lin != -1 && !coords_known(G, pt))
    return gc_gen_pt(G, in, G->pts[pt].lin, NULL);  /* only unit dims differ */
  int co[GC_MAX_RANK];
  for (int j = 0; j < in->rank; j++)
    co[j] = in->dims[j] == 1 ? GC_PT_ZERO : co_var(G, b, pt, j + ot.rank - in->rank);
  return gc_gen_pt(G, in, -1, co);
}

/* Point of a reshape's operand: the same linear index, or from coordinates dim
 * groups of equal products (copy, merge by strides, split by div/mod). */
static int map_reshape(gc_gen *G, kir_block *b, int pt, const gc_type *in) {
  if (G->pts[pt].lin != -1 || !coords_known(G, pt)) return gc_gen_pt(G, in, lin_var(G, b, pt), NULL);
  gc_lowerer *c = G->c;
  kir_kernel *k = G->k;
  gc_type ot = pt_type(G, pt);
  int co[GC_MAX_RANK];
  int i = 0, j = 0, ro = ot.rank, ri = in->rank;
  while (i < ro || j < ri) {
    if (i < ro && ot.dims[i] == 1) {
      i++;
      continue;
    }
    if (j < ri && in->dims[j] == 1) {
      co[j++] = GC_PT_ZERO;
      continue;
    }
    GC_ASSERT(i < ro && j < ri);
    int i0 = i, j0 = j;
    int64_t po = ot.dims[i++], pi = in->dims[j++];
    while (po != pi) {
      if (po < pi) {
        GC_ASSERT(i < ro);
        po *= ot.dims[i++];
      } else {
        GC_ASSERT(j < ri);
        pi *= in->dims[j++];
      }
    }
    if (i - i0 == 1 && j - j0 == 1) {
      co[j0] = co_var(G, b, pt, i0);
      continue;
    }
    kir_expr *e = ec_i64(c, 0);
    int64_t st = 1;
    for (int d = i - 1; d >= i0; d--) {
      if (ot.dims[d] != 1) e = ec_add(c, e, ec_mul(c, gc_gen_coord(G, b, pt, d), ec_i64(c, st)));
      st *= ot.dims[d];
    }
    int rem = e->kind == KIR_E_VAR ? e->u.var : gc_ec_let(c, k, b, "g", e);
    int first = j0;
    while (in->dims[first] == 1) co[first++] = GC_PT_ZERO;
    for (int d = j - 1; d > first; d--) {
      if (in->dims[d] == 1) {
        co[d] = GC_PT_ZERO;
        continue;
      }
      co[d] = gc_ec_let(c, k, b, "c", ec_bin(c, KIR_REM, ec_v(c, k, rem), ec_i64(c, in->dims[d])));
      rem = gc_ec_let(c, k, b, "q", ec_bin(c, KIR_DIV, ec_v(c, k, rem), ec_i64(c, in->dims[d])));
    }
    co[first] = rem;
  }
  /* the linear index too (the same on both sides, affine in pt's coordinates): a load
   * of the operand then indexes with it, not with the coordinates split above put back
   * together ((p / W) * W + p % W, which LLVM leaves as divisions and defeats its
   * vectorizers); unused, it is dead code */
  return gc_gen_pt(G, in, lin_var(G, b, pt), co);
}

/* Point of a transpose's operand: in coordinate perm[i] is out coordinate i. */
static int map_transpose(gc_gen *G, kir_block *b, int pt, const gc_op *op) {
  int64_t perm[GC_MAX_RANK];
  const gc_type *in = &op->operands[0]->type;
  GC_ASSERT(gc_attr_ints(gc_op_attr(op, "perm"), perm, GC_MAX_RANK) == in->rank);
  int co[GC_MAX_RANK];
  for (int i = 0; i < in->rank; i++) co[perm[i]] = co_var(G, b, pt, i);
  return gc_gen_pt(G, in, -1, co);
}

/* Normalized, clamped slice start on dim d (as the shape rule computes it). */
static int64_t slice_start(int64_t s, int64_t dim) {
  if (s < 0) s += dim;
  if (s < 0) s = 0;
  if (s > dim) s = dim;
  return s;
}

/* Point of a slice's operand: start + step * coordinate. */
static int map_slice(gc_gen *G, kir_block *b, int pt, const gc_op *op) {
  gc_lowerer *c = G->c;
  const gc_type *in = &op->operands[0]->type;
  int64_t start[GC_MAX_RANK], step[GC_MAX_RANK];
  GC_ASSERT(gc_attr_ints(gc_op_attr(op, "start"), start, GC_MAX_RANK) == in->rank);
  const gc_attr *sa = gc_op_attr(op, "step");
  for (int i = 0; i < in->rank; i++) step[i] = 1;
  if (sa) GC_ASSERT(gc_attr_ints(sa, step, GC_MAX_RANK) == in->rank);
  int co[GC_MAX_RANK];
  for (int d = 0; d < in->rank; d++) {
    int64_t s0 = slice_start(start[d], in->dims[d]);
    int cv = co_var(G, b, pt, d);
    if (in->dims[d] == 1 || (cv == GC_PT_ZERO && s0 == 0)) {
      co[d] = GC_PT_ZERO;
    } else if (s0 == 0 && step[d] == 1) {
      co[d] = cv;
    } else {
      kir_expr *e = ec_add(c, ec_i64(c, s0), ec_mul(c, vz(G, cv), ec_i64(c, step[d])));
      co[d] = gc_ec_let(c, G->k, b, "s", e);
    }
  }
  return gc_gen_pt(G, in, -1, co);
}

/* Point of x for result r of a split: the axis coordinate moves by the sizes before r. */
static int map_split(gc_gen *G, kir_block *b, int pt, const gc_op *op, int r) {
  const gc_type *in = &op->operands[0]->type;
  int axis = gc_ec_axis(gc_op_attr_int(op, "axis", 0), in->rank);
  int64_t off = 0;
  for (int i = 0; i < r; i++) off += op->results[i]->type.dims[axis];
  int co[GC_MAX_RANK];
  for (int d = 0; d < in->rank; d++) co[d] = co_var(G, b, pt, d);
  if (off) co[axis] = gc_ec_let(G->c, G->k, b, "s", ec_add(G->c, vz(G, co[axis]), ec_i64(G->c, off)));
  return gc_gen_pt(G, in, -1, co);
}

/* ---- ops computed inline ----------------------------------------------------------------------- */

/* pad: r = value; if (every padded coordinate inside) r = x[coordinate - begin]. */
static int gen_pad(gc_gen *G, kir_block *b, const gc_op *op, int pt) {
  gc_lowerer *c = G->c;
  kir_kernel *k = G->k;
  const gc_value *x = op->operands[0], *out = op->results[0];
  const gc_type *it = &x->type;
  int r = it->rank;
  int64_t pads[2 * GC_MAX_RANK];
  GC_ASSERT(gc_attr_ints(gc_op_attr(op, "pads"), pads, 2 * GC_MAX_RANK) == 2 * r);
  const gc_attr *va = gc_op_attr(op, "value");
  gc_attr zero = {.kind = GC_ATTR_INT};
  int res = gc_ec_let(c, k, b, out->name, gc_ec_scalar_const(c, va ? va : &zero, out->type.dtype));
  kir_expr *cond = NULL;
  int co[GC_MAX_RANK];
  for (int d = 0; d < r; d++) {
    int cv = co_var(G, b, pt, d);
    if (pads[d] > 0) {
      kir_expr *ge = ec_bin(c, KIR_GE, vz(G, cv), ec_i64(c, pads[d]));
      cond = cond ? ec_bin(c, KIR_AND, cond, ge) : ge;
    }
    if (pads[r + d] > 0) {
      kir_expr *lt = ec_bin(c, KIR_LT, vz(G, cv), ec_i64(c, pads[d] + it->dims[d]));
      cond = cond ? ec_bin(c, KIR_AND, cond, lt) : lt;
    }
    if (it->dims[d] == 1)
      co[d] = GC_PT_ZERO;
    else if (pads[d] == 0)
      co[d] = cv;
    else
      co[d] = gc_ec_let(c, k, b, "s", ec_bin(c, KIR_SUB, vz(G, cv), ec_i64(c, pads[d])));
  }
  kir_block *tb = b;
  if (cond) kir_emit_if(c->km, b, cond, &tb, NULL);
  gc_gen_push(G);
  int ipt = gc_gen_pt(G, it, -1, co);
  int xv = gc_gen_val(G, tb, x, ipt);
  kir_emit_assign(c->km, tb, res, ec_v(c, k, xv));
  gc_gen_pop(G);
  return res;
}

/* Pair attribute `name` of op (2 ints), else (d, d). */
static void attr_pair(const gc_op *op, const char *name, int64_t d, int64_t *p) {
  const gc_attr *a = gc_op_attr(op, name);
  if (!a || gc_attr_ints(a, p, 2) != 2) p[0] = p[1] = d;
}

/* The window geometry of im2col op `op` (see emit.h). */
void gc_im2col_geom_of(const gc_op *op, gc_im2col_geom *g) {
  attr_pair(op, "kernel", 1, g->kern);
  attr_pair(op, "stride", 1, g->st);
  attr_pair(op, "dilation", 1, g->dil);
  int64_t *pad = g->pad;
  pad[0] = pad[1] = pad[2] = pad[3] = 0;
  const gc_attr *pa = gc_op_attr(op, "padding");
  if (pa && gc_attr_ints(pa, pad, 4) == 2) pad[2] = pad[0], pad[3] = pad[1];
  const gc_type *it = &op->operands[0]->type;
  const gc_attr *la = gc_op_attr(op, "layout");
  g->nhwc = la && la->kind == GC_ATTR_STR && strcmp(la->u.s, "nhwc") == 0;
  g->H = it->dims[g->nhwc ? 1 : 2];
  g->W = it->dims[g->nhwc ? 2 : 3];
  g->C = it->dims[g->nhwc ? 3 : 1];
  g->OH = (g->H + pad[0] + pad[2] - g->dil[0] * (g->kern[0] - 1) - 1) / g->st[0] + 1;
  g->OW = (g->W + pad[1] + pad[3] - g->dil[1] * (g->kern[1] - 1) - 1) / g->st[1] + 1;
}

/* im2col at (n, row, col): row = (c*KH + kh)*KW + kw, col = oh*OW + ow; r = 0, and
 * r = x[n, c, ih, iw] when (ih, iw) = (oh, ow) * stride - pad + (kh, kw) * dilation
 * is inside x. */
static int gen_im2col(gc_gen *G, kir_block *b, const gc_op *op, int pt) {
  gc_lowerer *c = G->c;
  kir_kernel *k = G->k;
  const gc_value *x = op->operands[0], *out = op->results[0];
  const gc_type *it = &x->type;
  gc_im2col_geom ge;
  gc_im2col_geom_of(op, &ge);
  const int64_t *kern = ge.kern, *st = ge.st, *dil = ge.dil, *pad = ge.pad;
  int64_t H = ge.H, W = ge.W, OW = ge.OW;
  gc_attr zero = {.kind = GC_ATTR_INT};
  int res = gc_ec_let(c, k, b, out->name, gc_ec_scalar_const(c, &zero, out->type.dtype));
  int64_t kk = kern[0] * kern[1];
  int ci, kr, oh, ow, n = -1;
  if (ge.nhwc) {  /* row (n*OH + oh)*OW + ow, column (kh*KW + kw)*C + c */
    int64_t P = ge.OH * OW;
    kir_expr *row = gc_gen_coord(G, b, pt, 0);
    n = gc_ec_let(c, k, b, "n", ec_bin(c, KIR_DIV, row, ec_i64(c, P)));
    int p = gc_ec_let(c, k, b, "p", ec_bin(c, KIR_REM, gc_gen_coord(G, b, pt, 0), ec_i64(c, P)));
    oh = gc_ec_let(c, k, b, "oh", ec_bin(c, KIR_DIV, ec_v(c, k, p), ec_i64(c, OW)));
    ow = gc_ec_let(c, k, b, "ow", ec_bin(c, KIR_REM, ec_v(c, k, p), ec_i64(c, OW)));
    kr = gc_ec_let(c, k, b, "kr", ec_bin(c, KIR_DIV, gc_gen_coord(G, b, pt, 1), ec_i64(c, ge.C)));
    ci = gc_ec_let(c, k, b, "ci", ec_bin(c, KIR_REM, gc_gen_coord(G, b, pt, 1), ec_i64(c, ge.C)));
  } else {
    kir_expr *row = gc_gen_coord(G, b, pt, 1), *col = gc_gen_coord(G, b, pt, 2);
    ci = gc_ec_let(c, k, b, "ci", ec_bin(c, KIR_DIV, row, ec_i64(c, kk)));
    kr = gc_ec_let(c, k, b, "kr", ec_bin(c, KIR_REM, gc_gen_coord(G, b, pt, 1), ec_i64(c, kk)));
    oh = gc_ec_let(c, k, b, "oh", ec_bin(c, KIR_DIV, col, ec_i64(c, OW)));
    ow = gc_ec_let(c, k, b, "ow", ec_bin(c, KIR_REM, gc_gen_coord(G, b, pt, 2), ec_i64(c, OW)));
  }
  kir_expr *kh = ec_bin(c, KIR_DIV, ec_v(c, k, kr), ec_i64(c, kern[1]));
  kir_expr *kw = ec_bin(c, KIR_REM, ec_v(c, k, kr), ec_i64(c, kern[1]));
  kir_expr *eh = ec_add(c, ec_bin(c, KIR_SUB, ec_mul(c, ec_v(c, k, oh), ec_i64(c, st[0])), ec_i64(c, pad[0])),
                        ec_mul(c, kh, ec_i64(c, dil[0])));
  kir_expr *ew = ec_add(c, ec_bin(c, KIR_SUB, ec_mul(c, ec_v(c, k, ow), ec_i64(c, st[1])), ec_i64(c, pad[1])),
                        ec_mul(c, kw, ec_i64(c, dil[1])));
  int ih = gc_ec_let(c, k, b, "ih", eh), iw = gc_ec_let(c, k, b, "iw", ew);
  kir_expr *cond = ec_bin(c, KIR_AND, ec_bin(c, KIR_GE, ec_v(c, k, ih), ec_i64(c, 0)),
                          ec_bin(c, KIR_LT, ec_v(c, k, ih), ec_i64(c, H)));
  cond = ec_bin(c, KIR_AND, cond, ec_bin(c, KIR_GE, ec_v(c, k, iw), ec_i64(c, 0)));
  cond = ec_bin(c, KIR_AND, cond, ec_bin(c, KIR_LT, ec_v(c, k, iw), ec_i64(c, W)));
  kir_block *tb;
  kir_emit_if(c->km, b, cond, &tb, NULL);
  gc_gen_push(G);
  int nv = it->dims[0] == 1 ? GC_PT_ZERO : ge.nhwc ? n : co_var(G, tb, pt, 0);
  int cv = ge.C == 1 ? GC_PT_ZERO : ci, hv = H == 1 ? GC_PT_ZERO : ih, wv = W == 1 ? GC_PT_ZERO : iw;
  int co[4] = {nv, ge.nhwc ? hv : cv, ge.nhwc ? wv : hv, ge.nhwc ? cv : wv};
  int xv = gc_gen_val(G, tb, x, gc_gen_pt(G, it, -1, co));
  kir_emit_assign(c->km, tb, res, ec_v(c, k, xv));
  gc_gen_pop(G);
  return res;
}

/* concat: the piece holding the axis coordinate, an if-chain over the pieces. */
static int gen_concat(gc_gen *G, kir_block *b, const gc_op *op, int pt) {
  gc_lowerer *c = G->c;
  kir_kernel *k = G->k;
  const gc_value *out = op->results[0];
  int rank = out->type.rank;
  int axis = gc_ec_axis(gc_op_attr_int(op, "axis", 0), rank);
  gc_dtype ct = gc_ec_compute_type(out->type.dtype);
  int res = gc_ec_let(c, k, b, out->name, gc_ec_num(c, ct, 0.0));
  int co[GC_MAX_RANK];
  for (int d = 0; d < rank; d++) co[d] = co_var(G, b, pt, d);
  int64_t off = 0;
  for (int i = 0; i < op->n_operands; i++) {
    const gc_value *x = op->operands[i];
    int64_t ai = x->type.dims[axis];
    kir_block *tb = b;
    if (i + 1 < op->n_operands) {
      kir_expr *cond = ec_bin(c, KIR_LT, vz(G, co[axis]), ec_i64(c, off + ai));
      kir_emit_if(c->km, b, cond, &tb, &b);
    }
    gc_gen_push(G);
    int xc[GC_MAX_RANK];
    memcpy(xc, co, sizeof xc);
    if (ai == 1)
      xc[axis] = GC_PT_ZERO;
    else if (off)
      xc[axis] = gc_ec_let(c, k, tb, "s", ec_bin(c, KIR_SUB, vz(G, co[axis]), ec_i64(c, off)));
    int ipt = gc_gen_pt(G, &x->type, -1, xc);
    kir_emit_assign(c->km, tb, res, ec_v(c, k, gc_gen_val(G, tb, x, ipt)));
    gc_gen_pop(G);
    off += ai;
  }
  return res;
}

/* gather: x at the index value (computed at the index's point), wrapped once
 * if negative, then clamped into range. */
static int gen_gather(gc_gen *G, kir_block *b, const gc_op *op, int pt) {
  gc_lowerer *c = G->c;
  kir_kernel *k = G->k;
  const gc_value *x = op->operands[0], *ind = op->operands[1];
  const gc_type *xt = &x->type;
  int axis = gc_ec_axis(gc_op_attr_int(op, "axis", 0), xt->rank);
  int ri = ind->type.rank;
  int64_t dim = xt->dims[axis];
  int ico[GC_MAX_RANK];
  for (int d = 0; d < ri; d++) ico[d] = co_var(G, b, pt, axis + d);
  int ipt = gc_gen_pt(G, &ind->type, -1, ico);
  int jv = gc_gen_val(G, b, ind, ipt);
  int j = gc_ec_let(c, k, b, "j", ec_cast(c, GRAPHC_DTYPE_I64, ec_v(c, k, jv)));
  kir_expr *neg = ec_bin(c, KIR_LT, ec_v(c, k, j), ec_i64(c, 0));
  kir_expr *wrapped = ec_bin(c, KIR_ADD, ec_v(c, k, j), ec_i64(c, dim));
  int jw = gc_ec_let(c, k, b, "j", kir_select(c->km, neg, wrapped, ec_v(c, k, j)));
  kir_expr *hi = ec_bin(c, KIR_MIN, ec_v(c, k, jw), ec_i64(c, dim - 1));
  int jc = gc_ec_let(c, k, b, "j", ec_bin(c, KIR_MAX, hi, ec_i64(c, 0)));
  int xc[GC_MAX_RANK];
  for (int d = 0; d < axis; d++) xc[d] = co_var(G, b, pt, d);
  xc[axis] = dim == 1 ? GC_PT_ZERO : jc;
  for (int d = axis + 1; d < xt->rank; d++) xc[d] = co_var(G, b, pt, d + ri - 1);
  int xpt = gc_gen_pt(G, xt, -1, xc);
  return gc_gen_val(G, b, x, xpt);
}

/* The value of v (result of an op the group computes) at pt. */
static int compute(gc_gen *G, kir_block *b, const gc_value *v, int pt) {
  gc_lowerer *c = G->c;
  kir_kernel *k = G->k;
  const gc_op *op = v->def;
  gc_dtype dt = v->type.dtype;
  switch (op->opcode) {
    case GC_OP_CONST: {
      const gc_attr *val = gc_op_attr(op, "value");
      GC_ASSERT(val && val->kind != GC_ATTR_LIST);
      return gc_ec_let(c, k, b, v->name, gc_ec_scalar_const(c, val, dt));
    }
    case GC_OP_IOTA: {
      int rank = v->type.rank;
      int axis = rank ? gc_ec_axis(gc_op_attr_int(op, "axis", 0), rank) : 0;
      kir_expr *e = rank ? gc_gen_coord(G, b, pt, axis) : ec_i64(c, 0);
      return gc_ec_let(c, k, b, v->name, gc_ec_round(c, dt, e));
    }
    case GC_OP_RESHAPE: return gc_gen_val(G, b, op->operands[0], map_reshape(G, b, pt, &op->operands[0]->type));
    case GC_OP_BROADCAST: return gc_gen_val(G, b, op->operands[0], map_bcast(G, b, pt, &op->operands[0]->type));
    case GC_OP_TRANSPOSE: return gc_gen_val(G, b, op->operands[0], map_transpose(G, b, pt, op));
    case GC_OP_SLICE: return gc_gen_val(G, b, op->operands[0], map_slice(G, b, pt, op));
    case GC_OP_SPLIT: return gc_gen_val(G, b, op->operands[0], map_split(G, b, pt, op, v->def_index));
    case GC_OP_PAD: return gen_pad(G, b, op, pt);
    case GC_OP_IM2COL: return gen_im2col(G, b, op, pt);
    case GC_OP_CONCAT: return gen_concat(G, b, op, pt);
    case GC_OP_GATHER: return gen_gather(G, b, op, pt);
    default: break;
  }
  GC_ASSERT(gc_op_infos[op->opcode].kind == GC_KIND_ELEMENTWISE);  /* roots are bound, not computed */
  int a[3];
  GC_ASSERT(op->n_operands <= 3);
  for (int i = 0; i < op->n_operands; i++) {
    int opt = map_bcast(G, b, pt, &op->operands[i]->type);
    a[i] = gc_gen_val(G, b, op->operands[i], opt);
  }
  kir_expr *e = gc_ec_elementwise(c, k, b, op, a);
  return gc_ec_let(c, k, b, v->name, gc_ec_round(c, dt, e));
}

/* Value of v at pt (see emit.h). An element is known by its linear index, so
 * a memo entry at another point with the same index variable is reused (the
 * same element reached through a reshape, or a vector lane's preloaded value). */
int gc_gen_val(gc_gen *G, kir_block *b, const gc_value *v, int pt) {
  int var = memo_find(G, v->id, pt);
  if (var < 0) var = memo_find_lin(G, v->id, G->pts[pt].lin);
  if (var >= 0) return var;
  if (v->def && G->c->inl[v->def->id]) {
    var = compute(G, b, v, pt);
  } else {
    int buf = G->c->val_buf[v->id];
    int p = buf_param(G, buf, v->type.dtype, 0, v->name);
    var = gc_ec_let(G->c, G->k, b, v->name, gc_ec_load(G->c, G->k, p, gc_gen_lin(G, b, pt)));
  }
  gc_gen_bind(G, v, pt, var);
  return var;
}

/* Does point pt walk exactly the dims of t? */
static int pt_has_dims(const gc_gen *G, int pt, const gc_type *t) {
  const gc_pt *p = &G->pts[pt];
  if (p->rank != t->rank) return 0;
  for (int i = 0; i < t->rank; i++)
    if (p->dims[i] != t->dims[i]) return 0;
  return 1;
}

/* Compute all of grp's outputs at pt, then store them (loads before stores, so
 * a buffer donated to an output is read first). */
void gc_gen_store_outs(gc_gen *G, kir_block *b, const gc_fusion_group *grp, int pt) {
  gc_gen_store_outs_vec(G, b, grp, &pt, 1);
}

/* gc_gen_store_outs at w points whose linear indices are consecutive, the first a
 * multiple of w: an output of the points' dims with w elements in at most 16 bytes
 * is written with one vector store, any other output element by element. */
void gc_gen_store_outs_vec(gc_gen *G, kir_block *b, const gc_fusion_group *grp, const int *pts, int w) {
  GC_ASSERT(w >= 1 && w <= KIR_MAX_VEC);
  gc_lowerer *c = G->c;
  int n = grp->n_outs;
  int *vals = malloc(((size_t)n * (size_t)w + 1) * 2 * sizeof *vals);
  if (!vals) {
    c->oom = 1;
    return;
  }
  int *opt = vals + (size_t)n * (size_t)w + 1;  /* point of output i, element e */
  /* every value first, then the stores: loads before stores, so an output may take over the
   * slot of an operand it reads */
  for (int i = 0; i < n; i++) {
    const gc_value *o = grp->outs[i];
    for (int e = 0; e < w; e++) {
      int pt = pts[e];
      /* another shape: a reshape of the points' dims (coordinates kept where dims match) */
      opt[i * w + e] = pt_has_dims(G, pt, &o->type) ? pt : map_reshape(G, b, pt, &o->type);
      vals[i * w + e] = gc_gen_val(G, b, o, opt[i * w + e]);
    }
  }
  for (int i = 0; i < n; i++) {
    const gc_value *o = grp->outs[i];
    gc_dtype dt = o->type.dtype;
    int p = gc_gen_wparam(G, c->val_buf[o->id], dt);
    int vec = w > 1 && dt != GRAPHC_DTYPE_BOOL && graphc_dtype_size(dt) * (size_t)w <= 16;
    /* the points' own dims, or a reshape of them: the same linear indices */
    for (int e = 0; e < w && vec; e++)
      vec = opt[i * w + e] == pts[e] || (G->pts[pts[e]].lin >= 0 && G->pts[opt[i * w + e]].lin == G->pts[pts[e]].lin);
    if (vec) {
      kir_expr *ve[KIR_MAX_VEC];
      for (int e = 0; e < w; e++) ve[e] = ec_cast(c, dt, ec_v(c, G->k, vals[i * w + e]));
      kir_emit_store_vec(c->km, b, KIR_GLOBAL, p, gc_gen_lin(G, b, pts[0]), w, ve);
    } else {
      for (int e = 0; e < w; e++)
        gc_ec_store(c, G->k, b, p, gc_gen_lin(G, b, opt[i * w + e]), ec_v(c, G->k, vals[i * w + e]));
    }
  }
  free(vals);
}

/* Bytes read and written by the kernel's buffer params (see emit.h). */
double gc_gen_bytes(const gc_gen *G, int64_t items) {
  double n = 0;
  for (int i = 0; i < G->n_bufs; i++) {
    const gc_plan_buffer *pb = &G->c->p->buffers[i];
    double size = (double)graphc_dtype_size(pb->type.dtype);
    if (G->rparam[i] >= 0) {
      double r = (double)pb->bytes;
      if (items > 0 && (double)items * size < r) r = (double)items * size;
      n += r;
    }
    if (G->wparam[i] >= 0) n += (double)pb->bytes;
  }
  return n;
}
