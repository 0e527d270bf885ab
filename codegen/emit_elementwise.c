/* emit_elementwise.c - unary, binary and select ops: one ITEMS kernel over the
 * output elements. Operands are read through broadcast views (stride 0 on
 * broadcast dims) after merging dims that every view walks contiguously; when
 * nothing broadcasts and the sizes divide, each item handles a 16-byte vector.
 *
 *   out[pos] = f(in0[view0(pos)], in1[view1(pos)], ...)   computed in f32/f64/i32/i64/bool
 */
#include <math.h>
#include <string.h>

#include "emit.h"

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
static double op_flops(gc_opcode opc) {
  switch (opc) {
    case GC_OP_SIGMOID: return 4;
    case GC_OP_SILU: return 5;
    case GC_OP_GELU: return 10;
    case GC_OP_CLAMP:
    case GC_OP_MAXIMUM:
    case GC_OP_MINIMUM: return 2;
    default: return 1;
  }
}

/* 1 / (1 + exp(-x)) in x's float type. */
static kir_expr *sigmoid(gc_lowerer *c, kir_kernel *k, int x) {
  gc_dtype t = k->vars[x].type;
  kir_expr *e = kir_unary(c->km, KIR_EXP, kir_unary(c->km, KIR_NEG, ec_v(c, k, x)));
  return ec_bin(c, KIR_DIV, gc_ec_num(c, t, 1.0), ec_bin(c, KIR_ADD, gc_ec_num(c, t, 1.0), e));
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
    inner = kir_unary(c->km, KIR_ERF,
                      ec_bin(c, KIR_DIV, ec_v(c, k, x), gc_ec_num(c, t, 1.4142135623730951)));
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

/* f(args) for one element; args are vars in compute types; result in the
 * compute type of the output (cast: directly the output dtype). */
static kir_expr *ew_value(gc_lowerer *c, kir_kernel *k, kir_block *b, const gc_op *op,
                          const int *a) {
  kir_op kop;
  gc_dtype t = k->vars[a[0]].type;
  switch (op->opcode) {
    case GC_OP_RELU: {
      kir_expr *pos = ec_bin(c, KIR_GT, ec_v(c, k, a[0]), gc_ec_num(c, t, 0.0));
      return kir_select(c->km, pos, ec_v(c, k, a[0]), gc_ec_num(c, t, 0.0));
    }
    case GC_OP_SIGMOID: return sigmoid(c, k, a[0]);
    case GC_OP_SILU: return ec_bin(c, KIR_MUL, ec_v(c, k, a[0]), sigmoid(c, k, a[0]));
    case GC_OP_GELU: return gelu(c, k, b, op, a[0]);
    case GC_OP_CLAMP: return clamp(c, k, b, op, a[0]);
    case GC_OP_CAST: return ec_cast(c, op->results[0]->type.dtype, ec_v(c, k, a[0]));
    case GC_OP_MAXIMUM: return gc_ec_maxmin(c, k, 1, a[0], a[1]);
    case GC_OP_MINIMUM: return gc_ec_maxmin(c, k, 0, a[0], a[1]);
    case GC_OP_SELECT: return kir_select(c->km, ec_v(c, k, a[0]), ec_v(c, k, a[1]), ec_v(c, k, a[2]));
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
  if (op->n_operands == 1 && direct_unary(op->opcode, &kop))
    return kir_unary(c->km, kop, ec_v(c, k, a[0]));
  if (op->n_operands == 2 && direct_binary(op->opcode, &kop))
    return ec_bin(c, kop, ec_v(c, k, a[0]), ec_v(c, k, a[1]));
  GC_ASSERT(!"elementwise op without a lowering");
  return NULL;
}

/* Vector body: every operand loads `w` elements, the op runs per lane, one vector store. */
static void vector_body(gc_lowerer *c, kir_kernel *k, const gc_op *op, const int *pin, int pout,
                        int w) {
  kir_block *b = &k->body;
  int base = gc_ec_let(c, k, b, "i", ec_mul(c, ec_v(c, k, k->item_var), ec_i64(c, w)));
  int raw[GC_EC_MAX_VIEWS][KIR_MAX_VEC];
  for (int i = 0; i < op->n_operands; i++) {
    for (int l = 0; l < w; l++) raw[i][l] = gc_ec_var(c, k, "x", k->params[pin[i]].dtype);
    kir_emit_load_vec(c->km, b, KIR_GLOBAL, pin[i], ec_v(c, k, base), w, raw[i]);
  }
  kir_expr *vals[KIR_MAX_VEC];
  for (int l = 0; l < w; l++) {
    int a[GC_EC_MAX_VIEWS];
    for (int i = 0; i < op->n_operands; i++) {
      gc_dtype ct = gc_ec_compute_type(k->params[pin[i]].dtype);
      a[i] = raw[i][l];
      if (ct != k->params[pin[i]].dtype)
        a[i] = gc_ec_let(c, k, b, "a", kir_cast(c->km, ct, ec_v(c, k, raw[i][l])));
    }
    int y = gc_ec_let(c, k, b, "y", ew_value(c, k, b, op, a));
    vals[l] = ec_cast(c, k->params[pout].dtype, ec_v(c, k, y));
  }
  kir_emit_store_vec(c->km, b, KIR_GLOBAL, pout, ec_v(c, k, base), w, vals);
}

/* One ITEMS kernel for a unary, binary or select op (see the file comment). */
int gc_emit_elementwise(gc_lowerer *c, const gc_op *op) {
  const gc_value *out = op->results[0];
  GC_ASSERT(op->n_operands >= 1 && op->n_operands <= 3);
  gc_ec_space s;
  gc_ec_space_init(&s, &out->type);
  int all_identity = 1;
  gc_dtype dts[GC_EC_MAX_VIEWS];
  for (int i = 0; i < op->n_operands; i++) {
    gc_ec_space_bcast(&s, &op->operands[i]->type);
    all_identity &= gc_ec_space_identity(&s, i);
    dts[i] = op->operands[i]->type.dtype;
  }
  dts[op->n_operands] = out->type.dtype;
  int64_t numel = gc_type_numel(&out->type);
  int w = all_identity ? gc_ec_vec_width(c, numel, dts, op->n_operands + 1) : 1;

  /* A dying operand read at exactly the written index may donate its buffer. */
  int ob = c->val_buf[out->id];
  for (int i = 0; i < op->n_operands; i++) {
    const gc_value *in = op->operands[i];
    if (gc_ec_space_identity(&s, i) && graphc_dtype_size(in->type.dtype) == graphc_dtype_size(out->type.dtype) &&
        c->hints[ob].n < GC_MAX_INPLACE)
      c->hints[ob].cand[c->hints[ob].n++] = c->val_buf[in->id];
  }
  gc_ec_space_simplify(&s);

  kir_kernel *k = gc_ec_kernel(c, op, NULL, KIR_LAUNCH_ITEMS, numel / w, 256);
  int pin[GC_EC_MAX_VIEWS];
  static const char *const names[] = {"in0", "in1", "in2"};
  for (int i = 0; i < op->n_operands; i++) pin[i] = gc_ec_param(c, k, names[i], op->operands[i], 1);
  int pout = gc_ec_param(c, k, "out", out, 0);
  if (w > 1) {
    vector_body(c, k, op, pin, pout, w);
  } else {
    kir_block *b = &k->body;
    kir_expr *idx[GC_EC_MAX_VIEWS];
    gc_ec_space_index(c, k, b, &s, k->item_var, idx);
    int a[GC_EC_MAX_VIEWS];
    for (int i = 0; i < op->n_operands; i++) a[i] = gc_ec_let(c, k, b, "a", gc_ec_load(c, k, pin[i], idx[i]));
    gc_ec_store(c, k, b, pout, ec_v(c, k, k->item_var), ew_value(c, k, b, op, a));
  }
  k->bytes_moved = gc_ec_bytes(&out->type);
  for (int i = 0; i < op->n_operands; i++) k->bytes_moved += gc_ec_bytes(&op->operands[i]->type);
  k->flops = (double)numel * op_flops(op->opcode);
  gc_ec_launch(c, k);
  return 0;
}
