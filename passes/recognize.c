/* recognize.c - the patterns exporters write, as graphc's fused ops.
 *
 * torch.onnx.export (TorchScript and dynamo) decomposes normalizations and
 * activations into elementwise ops and reductions. This pass finds them, after
 * simplify / fold / cse have put the graph in canonical form, and writes the
 * fused op in their place (the pipeline rounds again when it rewrote anything):
 *
 *   gelu       0.5 * x * (1 + erf(x / sqrt(2)))           (x * 1/sqrt(2) too)
 *              0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))  approximate="tanh"
 *              the products in any order and grouping; x^3 as pow(x, 3) or x*x*x
 *   silu       x * sigmoid(x)
 *   layernorm  d = x - mean(x), d / sqrt(mean(d^2) + eps) [* gamma] [+ beta]
 *              (d * rsqrt(.), d * (1 / sqrt(.)) too); the means over the same
 *              trailing dims with keepdims; gamma and beta vary only along them
 *   rmsnorm    x / sqrt(mean(x^2) + eps) [* gamma], over the last dim (the forms of
 *              the reciprocal as for layernorm)
 *   softmax    e = exp(x - max(x)), e / sum(e), max and sum over one axis
 *   attention  a scores matmul that reaches softmax over its last axis (through an
 *              optional scale and an additive mask), as codegen/fusion.c's
 *              attention chain wants it: the scalar scales of q and of k (each
 *              d^-1/4) and one after the matmul become one scale after it (their
 *              product rounded once to the dtype; powers of two are exact); K read
 *              through a transpose that moves its last dim (perm [0,2,3,1] of
 *              [B,S,H,D]) or through reshape -> batch transpose -> reshape becomes
 *              the matmul's transpose_b flag over a plain view of K.
 *              In f16/bf16 the q/k scales fold only for the CUDA backend (its
 *              attention group keeps the scores in f32); elsewhere they stay.
 *
 * Every rewrite is exact up to the rounding of the fused op (the constants must be
 * the exporter's constants rounded to the dtype; eps is taken from the graph):
 * the matcher bails out when an axis, keepdims, a constant or a shape differs, or
 * when an intermediate value has a use outside the pattern (counted over the ops
 * that reach the outputs, so dead ops simplify left behind do not block). Ops the
 * pattern no longer needs are left for dce. The stats get one line per run that
 * recognized something, with a count per pattern.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/dtype.h"
#include "passes/rewrite.h"

enum { RZ_GELU, RZ_SILU, RZ_LAYERNORM, RZ_RMSNORM, RZ_SOFTMAX, RZ_ATTN_SCALE, RZ_ATTN_KT, RZ_N };
static const char *const rz_names[RZ_N] = {"gelu",    "silu",         "layernorm", "rmsnorm",
                                           "softmax", "attention-scale", "attention-k"};

typedef struct rz {
  gc_rewriter rw;
  int n_vals;       /* values that existed when the pass started */
  int *uses;        /* uses[id]: operand slots of live ops (and outputs) reading value id */
  gc_op **user;     /* user[id]: the live op reading it when uses[id] == 1 */
  int fold_narrow;  /* fold q/k scales of f16/bf16 scores too (see match_attention) */
  int count[RZ_N];
} rz;

/* ---- uses over the live ops ------------------------------------------------------------ */

/* Count each value's uses by ops that reach an output (backwards in program order). */
static int count_uses(rz *z, gc_graph *g) {
  z->n_vals = g->next_value_id;
  z->uses = calloc((size_t)(z->n_vals ? z->n_vals : 1), sizeof *z->uses);
  z->user = calloc((size_t)(z->n_vals ? z->n_vals : 1), sizeof *z->user);
  if (!z->uses || !z->user) return -1;
  for (int i = 0; i < g->n_outputs; i++) z->uses[g->outputs[i]->id]++;
  for (gc_op *op = g->last; op; op = op->prev) {
    int live = 0;
    for (int r = 0; r < op->n_results; r++) live |= z->uses[op->results[r]->id] > 0;
    if (!live) continue;
    for (int i = 0; i < op->n_operands; i++) {
      z->uses[op->operands[i]->id]++;
      z->user[op->operands[i]->id] = op;
    }
  }
  return 0;
}

/* Live uses of v (values made by this pass: unknown, so "many"). */
static int uses(const rz *z, const gc_value *v) {
  return v->id < z->n_vals ? z->uses[v->id] : 1 << 20;
}

/* The only live user of v, or NULL. */
static gc_op *sole_user(const rz *z, const gc_value *v) {
  return uses(z, v) == 1 ? z->user[v->id] : NULL;
}

/* ---- small matchers -------------------------------------------------------------------- */

/* The defining op of v if it has opcode opc, else NULL. */
static gc_op *def_of(const gc_value *v, gc_opcode opc) {
  return v && v->def && v->def->opcode == opc ? v->def : NULL;
}

/* def_of, and v is read only by the pattern (one use). */
static gc_op *inner(const rz *z, const gc_value *v, gc_opcode opc) {
  gc_op *d = def_of(v, opc);
  return d && uses(z, v) == 1 ? d : NULL;
}

/* Relative rounding step of a float dtype. */
static double dtype_eps(gc_dtype t) {
  switch (t) {
    case GRAPHC_DTYPE_F16: return 0x1p-10;
    case GRAPHC_DTYPE_BF16: return 0x1p-7;
    case GRAPHC_DTYPE_F64: return 0x1p-52;
    default: return 0x1p-23;
  }
}

/* Is v a float splat const? Its value (as the dtype holds it) into *x. */
static int splat_f(const gc_value *v, double *x) {
  gc_scalar s;
  if (!gc_dtype_is_float(v->type.dtype) || !gc_value_const_splat(v, &s)) return 0;
  *x = s.f;
  return 1;
}

/* Is v a float splat const equal to `want` rounded to its dtype (within one step)? */
static int splat_near(const gc_value *v, double want) {
  double x;
  return splat_f(v, &x) && fabs(x - want) <= fabs(want) * dtype_eps(v->type.dtype);
}

/* Is v a splat const exactly `want`? */
static int splat_is(const gc_value *v, double want) {
  double x;
  return splat_f(v, &x) && x == want;
}

/* Binary op `op`: the operand that is not `known` (for commutative matching), or NULL. */
static gc_value *other(const gc_op *op, const gc_value *known) {
  if (op->operands[0] == known) return op->operands[1];
  if (op->operands[1] == known) return op->operands[0];
  return NULL;
}

/* Binary op with a splat const on one side (either side when `commutes`): the other
 * operand, whose type must be the result's (the const broadcasts nothing); the
 * constant into *c. */
static gc_value *with_const(const gc_op *op, int commutes, double *c) {
  const gc_type *rt = &op->results[0]->type;
  if (splat_f(op->operands[1], c) && gc_type_equal(&op->operands[0]->type, rt)) return op->operands[0];
  if (commutes && splat_f(op->operands[0], c) && gc_type_equal(&op->operands[1]->type, rt))
    return op->operands[1];
  return NULL;
}

/* The op's result replaced by a new op of the same type (name and place kept). */
static gc_op *replace(rz *z, gc_op *op, gc_opcode opc, int n, gc_value *const *in, int n_at,
                      const gc_named_attr *at, int pattern) {
  gc_op *r = gc_rw_replace_with_new(&z->rw, op, opc, n, in, n_at, at);
  if (r) z->count[pattern]++;
  return r;
}

/* A float splat const of type t before `before`. */
static gc_value *new_splat(rz *z, gc_op *before, const gc_type *t, double v) {
  gc_named_attr at[2] = {{"value", {.kind = GC_ATTR_FLOAT, .u.f = v}},
                         {"dtype", gc_rw_attr_dtype(t->dtype)}};
  int n = 2;
  gc_named_attr all[3] = {at[0], at[1]};
  if (t->rank) all[n++] = (gc_named_attr){"shape", gc_rw_attr_ints(&z->rw, t->dims, t->rank)};
  gc_op *c = gc_rw_new_op(&z->rw, GC_OP_CONST, before, 0, NULL, n, all, t, NULL, before->loc);
  return c ? c->results[0] : NULL;
}

/* ---- activations ----------------------------------------------------------------------- */

/* Leaves of a product tree rooted at mul `op`: inner muls read only by the tree
 * (and of the root's type) are opened; splat consts multiply into *c. Returns the
 * number of non-const leaves (at most max), or -1. */
static int product_leaves(const rz *z, const gc_op *op, gc_value **leaf, int max, double *c, int n) {
  for (int i = 0; i < 2; i++) {
    gc_value *v = op->operands[i];
    double k;
    gc_op *m = inner(z, v, GC_OP_MUL);
    if (m && gc_type_equal(&v->type, &op->results[0]->type)) {
      n = product_leaves(z, m, leaf, max, c, n);
    } else if (splat_f(v, &k) && v->type.rank == 0) {
      *c *= k;
    } else if (splat_f(v, &k) && gc_type_equal(&op->operands[1 - i]->type, &op->results[0]->type)) {
      *c *= k;
    } else {
      if (n < 0 || n >= max) return -1;
      leaf[n++] = v;
    }
    if (n < 0) return -1;
  }
  return n;
}

/* Is u = x * sqrt(2/pi) * (x + 0.044715 * x^3) (tanh gelu's argument)? */
static int gelu_tanh_arg(const rz *z, const gc_value *u, const gc_value *x) {
  gc_op *m = inner(z, u, GC_OP_MUL);
  double c;
  gc_value *s = m ? with_const(m, 1, &c) : NULL;
  gc_op *a = s ? inner(z, s, GC_OP_ADD) : NULL;
  if (!a || !splat_near(m->operands[s == m->operands[0] ? 1 : 0], sqrt(2.0 / M_PI))) return 0;
  gc_value *cube = other(a, x);
  gc_op *cm = cube ? inner(z, cube, GC_OP_MUL) : NULL;
  gc_value *p = cm ? with_const(cm, 1, &c) : NULL;
  if (!p || !splat_near(cm->operands[p == cm->operands[0] ? 1 : 0], 0.044715)) return 0;
  gc_op *pw = inner(z, p, GC_OP_POW);
  if (pw) return pw->operands[0] == x && splat_is(pw->operands[1], 3.0);
  gc_op *m1 = inner(z, p, GC_OP_MUL);   /* x * (x * x) or (x * x) * x */
  gc_value *sq = m1 ? other(m1, x) : NULL;
  gc_op *m2 = sq ? inner(z, sq, GC_OP_MUL) : NULL;
  return m2 && m2->operands[0] == x && m2->operands[1] == x;
}

/* Is t = 1 + erf(x / sqrt 2) (approx "none") or 1 + tanh(...) ("tanh")? */
static const char *gelu_term(const rz *z, const gc_value *t, const gc_value *x) {
  gc_op *a = inner(z, t, GC_OP_ADD);
  double one;
  gc_value *f = a ? with_const(a, 1, &one) : NULL;
  if (!f || one != 1.0 || !gc_type_equal(&t->type, &x->type)) return NULL;
  gc_op *e = inner(z, f, GC_OP_ERF);
  if (e) {
    double c;
    gc_op *s = inner(z, e->operands[0], GC_OP_DIV);
    if (s && s->operands[0] == x && splat_near(s->operands[1], M_SQRT2) && with_const(s, 0, &c)) return "none";
    s = inner(z, e->operands[0], GC_OP_MUL);
    gc_value *k = s ? other(s, x) : NULL;
    if (k && splat_near(k, M_SQRT1_2) && with_const(s, 1, &c)) return "none";
    return NULL;
  }
  gc_op *th = inner(z, f, GC_OP_TANH);
  return th && gelu_tanh_arg(z, th->operands[0], x) ? "tanh" : NULL;
}

/* 0.5 * x * (1 + erf(x / sqrt 2)), the tanh form, in any order: gelu(x). */
static int match_gelu(rz *z, gc_op *op) {
  gc_value *leaf[2];
  double c = 1;
  const gc_type *rt = &op->results[0]->type;
  if (!gc_dtype_is_float(rt->dtype) || product_leaves(z, op, leaf, 2, &c, 0) != 2 ||
      fabs(c - 0.5) > 0.5 * dtype_eps(rt->dtype))
    return 0;
  for (int i = 0; i < 2; i++) {
    gc_value *x = leaf[i];
    const char *approx = gc_type_equal(&x->type, rt) ? gelu_term(z, leaf[1 - i], x) : NULL;
    if (!approx) continue;
    gc_named_attr at = {"approximate", {.kind = GC_ATTR_STR, .u.s = approx}};
    return replace(z, op, GC_OP_GELU, 1, &x, strcmp(approx, "tanh") == 0, &at, RZ_GELU) != NULL;
  }
  return 0;
}

/* x * sigmoid(x): silu(x). */
static int match_silu(rz *z, gc_op *op) {
  for (int i = 0; i < 2; i++) {
    gc_op *s = inner(z, op->operands[i], GC_OP_SIGMOID);
    gc_value *x = op->operands[1 - i];
    if (s && s->operands[0] == x && gc_type_equal(&x->type, &op->results[0]->type))
      return replace(z, op, GC_OP_SILU, 1, &x, 0, NULL, RZ_SILU) != NULL;
  }
  return 0;
}

/* ---- normalizations -------------------------------------------------------------------- */

/* A reduction of x over a tail of dims [axis, rank) with keepdims: axis, else -1. */
static int tail_reduce(const gc_op *r) {
  const gc_type *xt = &r->operands[0]->type;
  int64_t ax[GC_MAX_RANK];
  const gc_attr *a = gc_op_attr(r, "axes");
  if (!gc_op_attr_bool(r, "keepdims", 0) || !a) return -1;
  int n = gc_attr_ints(a, ax, GC_MAX_RANK);
  if (n < 1 || n > xt->rank) return -1;
  for (int i = 0; i < n; i++) ax[i] = ax[i] < 0 ? ax[i] + xt->rank : ax[i];
  for (int i = 0; i < n; i++)   /* exactly the last n dims, in any order */
    for (int j = 0; j < n; j++)
      if (i != j && ax[i] == ax[j]) return -1;
  for (int i = 0; i < n; i++)
    if (ax[i] < xt->rank - n || ax[i] >= xt->rank) return -1;
  return xt->rank - n;
}

/* A normalization's core: x * inv(sqrt(var + eps)). */
typedef struct norm {
  gc_value *x;      /* layernorm: the input (d = x - mean(x)); rmsnorm: x */
  int axis;         /* first normalized dim */
  double eps;
  int layer;        /* 1 layernorm, 0 rmsnorm */
} norm;

/* a = mean(p) + eps with the mean over a tail of dims, or mean(p) (eps 0: simplify
 * drops an eps that rounds to 0 in the dtype); p into *p. */
static int mean_eps(const rz *z, const gc_value *a, gc_value **p, int *axis, double *eps) {
  gc_op *ad = inner(z, a, GC_OP_ADD);
  gc_value *var = ad ? with_const(ad, 1, eps) : NULL;
  if (!ad) *eps = 0, var = (gc_value *)a;
  gc_op *m = var ? inner(z, var, GC_OP_REDUCE_MEAN) : NULL;
  if (!m || (*axis = tail_reduce(m)) < 0 || !(*eps >= 0) || !isfinite(*eps)) return 0;
  *p = m->operands[0];
  return 1;
}

/* s = sqrt(mean(p) + eps) with the mean over a tail of dims; p into *p. */
static int sqrt_mean_eps(const rz *z, const gc_value *s, gc_value **p, int *axis, double *eps) {
  gc_op *sq = inner(z, s, GC_OP_SQRT);
  return sq && mean_eps(z, sq->operands[0], p, axis, eps);
}

/* Is v = y * inv(s) for one of the forms of the reciprocal of a sqrt: y / s,
 * y * rsqrt(a), y * (1 / s)? y into *y; s (or rsqrt's a, as sqrt(a)) checked by
 * sqrt_mean_eps with the mean's operand into *p. */
static int scaled_by_inv_sqrt(const rz *z, const gc_value *v, gc_value **y, gc_value **p, int *axis,
                              double *eps) {
  gc_op *op = v->def;
  if (!op) return 0;
  if (op->opcode == GC_OP_DIV) {
    *y = op->operands[0];
    return sqrt_mean_eps(z, op->operands[1], p, axis, eps);
  }
  if (op->opcode != GC_OP_MUL) return 0;
  for (int i = 0; i < 2; i++) {
    gc_value *r = op->operands[i];
    gc_op *rs = inner(z, r, GC_OP_RSQRT), *dv = inner(z, r, GC_OP_DIV);
    *y = op->operands[1 - i];
    if (rs) {
      if (mean_eps(z, rs->operands[0], p, axis, eps)) return 1;
    } else if (dv && splat_is(dv->operands[0], 1.0) && sqrt_mean_eps(z, dv->operands[1], p, axis, eps)) {
      return 1;
    }
  }
  return 0;
}

/* Is p = y^2 (pow(y, 2) or y * y), read only by the pattern? */
static int square_of(const rz *z, const gc_value *p, const gc_value *y) {
  gc_op *pw = inner(z, p, GC_OP_POW);
  if (pw) return pw->operands[0] == y && splat_is(pw->operands[1], 2.0);
  gc_op *m = inner(z, p, GC_OP_MUL);
  return m && m->operands[0] == y && m->operands[1] == y;
}

/* Is v a decomposed layernorm or rmsnorm (without gamma and beta)? */
static int match_norm(const rz *z, const gc_value *v, norm *n) {
  gc_value *y, *p;
  const gc_type *vt = &v->type;
  if (!gc_dtype_is_float(vt->dtype) || !scaled_by_inv_sqrt(z, v, &y, &p, &n->axis, &n->eps) ||
      !gc_type_equal(&y->type, vt) || !square_of(z, p, y) || !gc_type_equal(&p->type, vt))
    return 0;
  /* layernorm: y = x - mean(x) over the same dims, read by the square and the scaling */
  gc_op *sub = def_of(y, GC_OP_SUB);
  gc_op *m = sub ? inner(z, sub->operands[1], GC_OP_REDUCE_MEAN) : NULL;
  int d_uses = def_of(p, GC_OP_POW) ? 2 : 3;
  if (m && m->operands[0] == sub->operands[0] && tail_reduce(m) == n->axis && uses(z, y) == d_uses &&
      gc_type_equal(&sub->operands[0]->type, vt)) {
    n->x = sub->operands[0];
    n->layer = 1;
    return 1;
  }
  if (n->axis != vt->rank - 1) return 0;   /* rmsnorm: the last dim only */
  n->x = y;
  n->layer = 0;
  return 1;
}

/* Can g (the other operand of a mul or add with the normalized value, of type t)
 * be the op's gamma or beta: g's dtype, a result of type t, and g varying only
 * along the normalized dims [axis, rank)? */
static int affine_ok(const gc_op *op, const gc_value *g, const gc_type *t, int axis) {
  const gc_type *gt = &g->type;
  if (!gc_type_equal(&op->results[0]->type, t) || gt->dtype != t->dtype || gt->rank > t->rank) return 0;
  int lead = t->rank - gt->rank;
  for (int i = 0; i < gt->rank; i++) {
    int d = lead + i;
    if (d < axis ? gt->dims[i] != 1 : gt->dims[i] != t->dims[d] && gt->dims[i] != 1) return 0;
  }
  double c;
  if (splat_f(g, &c)) return 1;
  for (int i = 0; i < gt->rank; i++)   /* a broadcast over a normalized dim needs a splat */
    if (lead + i >= axis && gt->dims[i] != t->dims[lead + i]) return 0;
  return 1;
}

/* The normalized value's gamma or beta op: its only user, of opcode opc, with an
 * affine_ok other operand (into *g). */
static gc_op *affine_user(const rz *z, const gc_value *v, gc_opcode opc, int axis, gc_value **g) {
  gc_op *u = sole_user(z, v);
  if (!u || u->opcode != opc) return NULL;
  *g = other(u, v);
  return *g && *g != v && affine_ok(u, *g, &v->type, axis) ? u : NULL;
}

/* g as the fused op's parameter: shaped t.dims[axis:] (a reshape, or a new splat). */
static gc_value *as_param(rz *z, gc_op *before, gc_value *g, const gc_type *t, int axis, double dflt) {
  gc_type pt = {.dtype = t->dtype, .rank = t->rank - axis};
  for (int i = 0; i < pt.rank; i++) pt.dims[i] = t->dims[axis + i];
  double c = dflt;
  if (!g || splat_f(g, &c)) return new_splat(z, before, &pt, c);
  if (gc_type_equal(&g->type, &pt)) return g;
  return gc_rw_reshape(&z->rw, before, g, pt.rank, pt.dims);
}

/* Replace `op` (the last op of the pattern) by layernorm / rmsnorm. */
static int write_norm(rz *z, gc_op *op, const norm *n, gc_value *gamma, gc_value *beta) {
  const gc_type *t = &n->x->type;
  gc_value *in[3] = {n->x, as_param(z, op, gamma, t, n->axis, 1.0), NULL};
  if (n->layer) in[2] = as_param(z, op, beta, t, n->axis, 0.0);
  if (!in[1] || (n->layer && !in[2])) return 0;
  gc_named_attr at[2] = {{"axis", gc_rw_attr_int(n->axis)},
                         {"eps", {.kind = GC_ATTR_FLOAT, .u.f = n->eps}}};
  if (n->layer) return replace(z, op, GC_OP_LAYERNORM, 3, in, 2, at, RZ_LAYERNORM) != NULL;
  return beta == NULL && replace(z, op, GC_OP_RMSNORM, 2, in, 1, at + 1, RZ_RMSNORM) != NULL;
}

/* Is c (read only by op) a normalization core whose gamma (op a mul) or beta (op an
 * add; layernorm only) is op's other operand g? The core into *n. */
static int affine_of(const rz *z, gc_op *op, gc_value *c, gc_value *g, norm *n) {
  return g != c && uses(z, c) == 1 && match_norm(z, c, n) && (op->opcode == GC_OP_MUL || n->layer) &&
         affine_ok(op, g, &c->type, n->axis);
}

/* A normalization ending at op: core, core * gamma, core * gamma + beta, core + beta.
 * A core (or core * gamma) whose only user would take it further waits for it. */
static int match_norms(rz *z, gc_op *op) {
  norm n;
  gc_value *g;
  for (int i = 0; i < 2 && op->opcode == GC_OP_ADD; i++) {
    gc_value *c = op->operands[i], *b = op->operands[1 - i];
    gc_op *m = def_of(c, GC_OP_MUL);
    for (int k = 0; m && uses(z, c) == 1 && c != b && k < 2; k++)
      if (affine_of(z, m, m->operands[k], m->operands[1 - k], &n) && n.layer &&
          affine_ok(op, b, &c->type, n.axis))
        return write_norm(z, op, &n, m->operands[1 - k], b);
    if (affine_of(z, op, c, b, &n)) return write_norm(z, op, &n, NULL, b);
  }
  for (int i = 0; i < 2 && op->opcode == GC_OP_MUL; i++)
    if (affine_of(z, op, op->operands[i], op->operands[1 - i], &n)) {
      if (n.layer && affine_user(z, op->results[0], GC_OP_ADD, n.axis, &g)) return 0;
      return write_norm(z, op, &n, op->operands[1 - i], NULL);
    }
  if (!match_norm(z, op->results[0], &n)) return 0;
  if (affine_user(z, op->results[0], GC_OP_MUL, n.axis, &g) ||
      (n.layer && affine_user(z, op->results[0], GC_OP_ADD, n.axis, &g)))
    return 0;
  return write_norm(z, op, &n, NULL, NULL);
}

/* exp(x - max(x)) / sum(exp(x - max(x))) over one axis: softmax(x). */
static int match_softmax(rz *z, gc_op *op) {
  gc_value *e = op->operands[0];
  gc_op *ex = def_of(e, GC_OP_EXP), *sum = inner(z, op->operands[1], GC_OP_REDUCE_SUM);
  gc_op *sub = ex ? inner(z, ex->operands[0], GC_OP_SUB) : NULL;
  if (!sum || !sub || sum->operands[0] != e || uses(z, e) != 2) return 0;
  gc_value *x = sub->operands[0];
  gc_op *mx = inner(z, sub->operands[1], GC_OP_REDUCE_MAX);
  int64_t a1[2], a2[2];
  const gc_type *t = &op->results[0]->type;
  if (!mx || mx->operands[0] != x || !gc_type_equal(&x->type, t) || !gc_type_equal(&e->type, t) ||
      !gc_op_attr_bool(mx, "keepdims", 0) || !gc_op_attr_bool(sum, "keepdims", 0) ||
      !gc_op_attr(mx, "axes") || !gc_op_attr(sum, "axes") ||
      gc_attr_ints(gc_op_attr(mx, "axes"), a1, 2) != 1 || gc_attr_ints(gc_op_attr(sum, "axes"), a2, 2) != 1)
    return 0;
  int r = t->rank;
  if ((a1[0] < 0 ? a1[0] + r : a1[0]) != (a2[0] < 0 ? a2[0] + r : a2[0])) return 0;
  gc_named_attr at = {"axis", gc_rw_attr_int(a1[0] < 0 ? a1[0] + r : a1[0])};
  return replace(z, op, GC_OP_SOFTMAX, 1, &x, 1, &at, RZ_SOFTMAX) != NULL;
}

/* ---- attention ---------------------------------------------------------------------------- */

/* Does v reach softmax over its last axis through [a scalar scale] [an additive
 * mask], each the only user of the one before? */
static int reaches_softmax(const rz *z, const gc_value *v) {
  gc_op *u = sole_user(z, v);
  double c;
  if (u && (u->opcode == GC_OP_MUL || u->opcode == GC_OP_DIV) && with_const(u, u->opcode == GC_OP_MUL, &c) == v)
    u = sole_user(z, u->results[0]);
  if (u && u->opcode == GC_OP_ADD) u = sole_user(z, u->results[0]);
  if (!u || u->opcode != GC_OP_SOFTMAX) return 0;
  int r = u->results[0]->type.rank;
  int64_t ax = gc_op_attr_int(u, "axis", -1);
  return (ax < 0 ? ax + r : ax) == r - 1;
}

/* A scaled matmul operand: mul(v, c) / mul(c, v) / div(v, c), c a scalar splat,
 * read only by the matmul: v, with the factor multiplied into *f. */
static gc_value *unscaled(const rz *z, gc_value *v, double *f) {
  double c;
  gc_op *m = inner(z, v, GC_OP_MUL), *d = inner(z, v, GC_OP_DIV);
  gc_value *x;
  if (m && (x = with_const(m, 1, &c)) && isfinite(c)) {
    *f *= c;
    return x;
  }
  if (d && (x = with_const(d, 0, &c)) && isfinite(c) && c != 0) {
    *f /= c;
    return x;
  }
  return v;
}

/* matmul flags into at[], returning how many (false ones left out). */
static int mm_flags(int ta, int tb, gc_named_attr *at) {
  int n = 0;
  if (ta) at[n++] = (gc_named_attr){"transpose_a", {.kind = GC_ATTR_BOOL, .u.b = 1}};
  if (tb) at[n++] = (gc_named_attr){"transpose_b", {.kind = GC_ATTR_BOOL, .u.b = 1}};
  return n;
}

/* K^T as a view of K: b = transpose(y, p) whose perm moves the last dim (p with its
 * last two entries swapped keeps the batch dims' order), or reshape(transpose_[0,2,1](
 * reshape(y, [N, m, n])), [..., n, m]) with the leading dims merged: the plain view
 * (transpose(y, p') or reshape(y, [..., m, n])) into *y, returning 1. */
static int k_transposed(rz *z, gc_op *before, gc_value *b, gc_value **y) {
  gc_op *t = inner(z, b, GC_OP_TRANSPOSE);
  const gc_type *bt = &b->type;
  int r = bt->rank;
  int64_t p[GC_MAX_RANK];
  if (t && r >= 3 && gc_attr_ints(gc_op_attr(t, "perm"), p, GC_MAX_RANK) == r) {
    int64_t q = p[r - 1];
    p[r - 1] = p[r - 2], p[r - 2] = q;
    if (p[r - 1] != r - 1) return 0;   /* K's rows: its last dim, contiguous */
    int id = 1;
    for (int i = 0; i < r; i++) id &= p[i] == i;
    if (id) {
      *y = t->operands[0];
      return 1;
    }
    gc_type yt = *bt;
    yt.dims[r - 2] = bt->dims[r - 1], yt.dims[r - 1] = bt->dims[r - 2];
    gc_named_attr at = {"perm", gc_rw_attr_ints(&z->rw, p, r)};
    gc_op *n = gc_rw_new_op(&z->rw, GC_OP_TRANSPOSE, before, 1, &t->operands[0], 1, &at, &yt, NULL, before->loc);
    if (!n) return 0;
    *y = n->results[0];
    return 1;
  }
  gc_op *ro = inner(z, b, GC_OP_RESHAPE);
  gc_op *tr = ro ? inner(z, ro->operands[0], GC_OP_TRANSPOSE) : NULL;
  gc_op *ri = tr ? inner(z, tr->operands[0], GC_OP_RESHAPE) : NULL;
  if (!ri || tr->results[0]->type.rank != 3 || gc_attr_ints(gc_op_attr(tr, "perm"), p, 3) != 3 ||
      p[0] != 0 || p[1] != 2 || p[2] != 1 || r < 3)
    return 0;
  const gc_type *mt = &ri->results[0]->type, *src = &ri->operands[0]->type;
  /* the inner reshape merges the leading dims of its operand (its last two kept) */
  if (src->rank < 3 || src->dims[src->rank - 2] != mt->dims[1] || src->dims[src->rank - 1] != mt->dims[2] ||
      bt->dims[r - 2] != mt->dims[2] || bt->dims[r - 1] != mt->dims[1])
    return 0;
  gc_type yt = *bt;
  yt.dims[r - 2] = mt->dims[1], yt.dims[r - 1] = mt->dims[2];
  *y = gc_type_equal(&yt, src) ? ri->operands[0] : gc_rw_reshape(&z->rw, before, ri->operands[0], r, yt.dims);
  return *y != NULL;
}

/* Attention scores: scalar scales of q and k (and one after the matmul) folded into
 * one after it; K read through a transpose as the transpose_b flag. Matched at the
 * scores matmul when no scale follows it, else at that scale. */
static int match_attention(rz *z, gc_op *op) {
  gc_op *mm = op;
  double f = 1, c;
  if (op->opcode != GC_OP_MATMUL) {
    gc_value *s = with_const(op, op->opcode == GC_OP_MUL, &c);
    if (!s || !(mm = inner(z, s, GC_OP_MATMUL)) || !isfinite(c) || c == 0) return 0;
    f = op->opcode == GC_OP_MUL ? c : 1 / c;
  } else {
    gc_op *u = sole_user(z, op->results[0]);
    if (u && (u->opcode == GC_OP_MUL || u->opcode == GC_OP_DIV) &&
        with_const(u, u->opcode == GC_OP_MUL, &c) == op->results[0])
      return 0;  /* the scale after it is the root */
  }
  const gc_type *rt = &mm->results[0]->type;
  if (!gc_dtype_is_float(rt->dtype) || rt->rank < 3 || !reaches_softmax(z, op->results[0]) ||
      gc_op_attr_bool(mm, "transpose_a", 0))
    return 0;
  /* In f16/bf16 the exporter's d^-1/4 scales keep q.k in range and round q and k
   * first; moved after the matmul they would round differently and the unscaled
   * scores could overflow. Only the CUDA attention group, which keeps the scores in
   * f32, gains from the fold, so narrow floats fold only there. */
  double f0 = f;
  int narrow = rt->dtype != GRAPHC_DTYPE_F32 && rt->dtype != GRAPHC_DTYPE_F64;
  gc_value *a = mm->operands[0], *b = mm->operands[1];
  if (!narrow || z->fold_narrow) a = unscaled(z, a, &f), b = unscaled(z, b, &f);
  if (a == mm->operands[0] && b == mm->operands[1]) f = f0;
  int scaled = a != mm->operands[0] || b != mm->operands[1], tb = gc_op_attr_bool(mm, "transpose_b", 0);
  gc_value *kb = b;
  int kt = k_transposed(z, op, b, &kb);
  if (!scaled && !kt) return 0;
  if (kt) tb = !tb;
  gc_named_attr at[2];
  int nat = mm_flags(0, tb, at);
  gc_value *in[2] = {a, kb};
  if (z->rw.oom) return 0;
  z->count[RZ_ATTN_KT] += kt;
  if (op == mm && !scaled) return gc_rw_replace_with_new(&z->rw, op, GC_OP_MATMUL, 2, in, nat, at) != NULL;
  gc_op *n = gc_rw_new_op(&z->rw, GC_OP_MATMUL, op, 2, in, nat, at, rt, NULL, mm->loc);
  if (!n) return 0;
  if (!scaled) {   /* K's transpose only: the scale after the matmul stays as written */
    gc_value *sc[2];
    for (int i = 0; i < 2; i++) sc[i] = op->operands[i] == mm->results[0] ? n->results[0] : op->operands[i];
    return gc_rw_replace_with_new(&z->rw, op, op->opcode, 2, sc, 0, NULL) != NULL;
  }
  gc_type st = {.dtype = rt->dtype, .rank = 0};
  double fr;                        /* f rounded once to the dtype */
  gc_store_f64(&fr, rt->dtype, 0, f);
  gc_value *k = new_splat(z, op, &st, gc_load_f64(&fr, rt->dtype, 0));
  if (!k) return 0;
  gc_value *sc[2] = {n->results[0], k};
  return replace(z, op, GC_OP_MUL, 2, sc, 0, NULL, RZ_ATTN_SCALE) != NULL;
}

/* ---- the pass ---------------------------------------------------------------------------- */

/* Try the patterns whose last op has op's opcode. */
static void recognize_op(rz *z, gc_op *op) {
  switch (op->opcode) {
    case GC_OP_MUL:
      if (match_attention(z, op) || match_gelu(z, op) || match_silu(z, op)) return;
      match_norms(z, op);
      return;
    case GC_OP_DIV:
      if (match_attention(z, op) || match_softmax(z, op)) return;
      match_norms(z, op);
      return;
    case GC_OP_ADD: match_norms(z, op); return;
    case GC_OP_MATMUL: match_attention(z, op); return;
    default: return;
  }
}

/* One walk in program order (see rewrite.h); a stats line when anything was recognized. */
int gc_pass_recognize(gc_graph *g, const graphc_compile_options_t *opts, gc_sbuf *stats, gc_diags *d) {
  rz z = {0};
  z.fold_narrow = opts && opts->backend == GRAPHC_BACKEND_CUDA;
  if (gc_rw_init(&z.rw, g, d) != 0) return -1;
  if (count_uses(&z, g) != 0) z.rw.oom = 1;
  for (gc_op *op = g->first, *next; op && !z.rw.oom; op = next) {
    next = op->next;
    gc_rw_resolve_operands(&z.rw, op);
    recognize_op(&z, op);
  }
  free(z.uses);
  free(z.user);
  int changes = gc_rw_finish(&z.rw);
  if (changes > 0) {
    gc_sbuf_puts(stats, "recognize:");
    for (int i = 0, first = 1; i < RZ_N; i++)
      if (z.count[i]) {
        gc_sbuf_printf(stats, "%s %s %d", first ? "" : ",", rz_names[i], z.count[i]);
        first = 0;
      }
    gc_sbuf_puts(stats, "\n");
  }
  return changes;
}
