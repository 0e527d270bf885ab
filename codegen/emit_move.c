/* emit_move.c - sources (param, const, iota) and data movement (reshape,
 * transpose, broadcast, concat, slice, pad, gather, split).
 *
 *   param          CONST buffer pointing into the weights file (no kernel)
 *   const [list]   CONST buffer, data converted to the dtype in the plan arena
 *   const scalar   fill kernel;   iota: fill kernel with the coordinate on `axis`
 *   reshape        a view: the driver gives the result its operand's buffer
 *   transpose, broadcast, slice   out[pos] = in[view(pos)] through an affine view
 *   concat, split  [outer, axis, inner] decomposition and an if-chain over pieces
 *   pad            bounds test per padded dim; gather: clamped data-dependent index
 *
 * Movement kernels copy raw elements (no widening); only fills convert.
 */
#include <math.h>
#include <string.h>

#include "emit.h"

/* ---- host-side scalar conversion (const data and fill values) ------------------------------ */

/* double -> IEEE binary16, rounding to nearest even once. */
static uint16_t f16_bits(double x) {
  uint16_t sign = signbit(x) ? 0x8000 : 0;
  if (isnan(x)) return sign | 0x7e00;
  double a = fabs(x);
  if (a >= 65520.0) return sign | 0x7c00;
  if (a < 0x1p-14) return sign | (uint16_t)nearbyint(a * 0x1p24);  /* subnormal, units 2^-24 */
  int e;
  double f = frexp(a, &e);                      /* a = f * 2^e, f in [0.5, 1) */
  uint32_t mant = (uint32_t)nearbyint(ldexp(f, 11));  /* [1024, 2048] */
  int exp = e - 1 + 15;
  if (mant == 2048) {
    mant = 1024;
    exp++;
  }
  if (exp >= 31) return sign | 0x7c00;
  return sign | (uint16_t)(exp << 10) | (uint16_t)(mant - 1024);
}

/* double -> bfloat16, rounding to nearest even once. */
static uint16_t bf16_bits(double x) {
  uint16_t sign = signbit(x) ? 0x8000 : 0;
  if (isnan(x)) return sign | 0x7fc0;
  double a = fabs(x);
  if (a >= 0x1.ffp127) return sign | 0x7f80;   /* halfway between max and 2^128 */
  if (a < 0x1p-126) return sign | (uint16_t)nearbyint(a * 0x1p133);  /* subnormal, units 2^-133 */
  int e;
  double f = frexp(a, &e);
  uint32_t mant = (uint32_t)nearbyint(ldexp(f, 8));  /* [128, 256] */
  int exp = e - 1 + 127;
  if (mant == 256) {
    mant = 128;
    exp++;
  }
  if (exp >= 255) return sign | 0x7f80;
  return sign | (uint16_t)(exp << 7) | (uint16_t)(mant - 128);
}

/* binary16 bits -> double (exact). */
static double f16_value(uint16_t h) {
  int exp = (h >> 10) & 31, mant = h & 1023;
  double v = exp == 0 ? ldexp(mant, -24) : exp == 31 ? (mant ? NAN : INFINITY)
                                                     : ldexp(mant + 1024, exp - 25);
  return (h & 0x8000) ? -v : v;
}

/* bfloat16 bits -> double (exact). */
static double bf16_value(uint16_t h) {
  int exp = (h >> 7) & 255, mant = h & 127;
  double v = exp == 0 ? ldexp(mant, -133) : exp == 255 ? (mant ? NAN : INFINITY)
                                                       : ldexp(mant + 128, exp - 134);
  return (h & 0x8000) ? -v : v;
}

/* float -> int like cast: truncate toward zero, saturate, NaN -> 0. */
static int64_t sat_trunc(double v, double lo, double hi, int64_t ilo, int64_t ihi) {
  if (isnan(v)) return 0;
  if (v <= lo) return ilo;
  if (v >= hi) return ihi;
  return (int64_t)trunc(v);
}

/* Write scalar attribute a as one element of dtype t at dst (cast semantics). */
static void put_scalar(void *dst, gc_dtype t, const gc_attr *a) {
  int is_int = a->kind == GC_ATTR_INT;
  int64_t iv = is_int ? a->u.i : a->kind == GC_ATTR_BOOL ? a->u.b : 0;
  double fv = gc_attr_number(a);
  int from_float = a->kind == GC_ATTR_FLOAT;
  switch (t) {
    case GRAPHC_DTYPE_F64: *(double *)dst = is_int ? (double)iv : fv; break;
    case GRAPHC_DTYPE_F32: *(float *)dst = is_int ? (float)iv : (float)fv; break;
    case GRAPHC_DTYPE_F16: *(uint16_t *)dst = f16_bits(fv); break;
    case GRAPHC_DTYPE_BF16: *(uint16_t *)dst = bf16_bits(fv); break;
    case GRAPHC_DTYPE_I64:
      *(int64_t *)dst = from_float ? sat_trunc(fv, -0x1p63, 0x1p63, INT64_MIN, INT64_MAX) : iv;
      break;
    case GRAPHC_DTYPE_I32:
      *(int32_t *)dst = from_float ? (int32_t)sat_trunc(fv, INT32_MIN, INT32_MAX, INT32_MIN, INT32_MAX)
                                   : (int32_t)(uint32_t)(uint64_t)iv;
      break;
    case GRAPHC_DTYPE_I8:
      *(int8_t *)dst = from_float ? (int8_t)sat_trunc(fv, -128, 127, -128, 127)
                                  : (int8_t)(uint8_t)(uint64_t)iv;
      break;
    case GRAPHC_DTYPE_U8:
      *(uint8_t *)dst = from_float ? (uint8_t)sat_trunc(fv, 0, 255, 0, 255) : (uint8_t)(uint64_t)iv;
      break;
    case GRAPHC_DTYPE_BOOL: *(uint8_t *)dst = from_float ? fv != 0.0 : iv != 0; break;
    default: GC_ASSERT(!"bad dtype");
  }
}

/* A stored element as a KIR literal in its compute type (exact). */
static kir_expr *elem_const(gc_lowerer *c, const void *src, gc_dtype t) {
  gc_dtype ct = gc_ec_compute_type(t);
  switch (t) {
    case GRAPHC_DTYPE_F64: return kir_const_f(c->km, ct, *(const double *)src);
    case GRAPHC_DTYPE_F32: return kir_const_f(c->km, ct, *(const float *)src);
    case GRAPHC_DTYPE_F16: return kir_const_f(c->km, ct, f16_value(*(const uint16_t *)src));
    case GRAPHC_DTYPE_BF16: return kir_const_f(c->km, ct, bf16_value(*(const uint16_t *)src));
    case GRAPHC_DTYPE_I64: return kir_const_i(c->km, ct, *(const int64_t *)src);
    case GRAPHC_DTYPE_I32: return kir_const_i(c->km, ct, *(const int32_t *)src);
    case GRAPHC_DTYPE_I8: return kir_const_i(c->km, ct, *(const int8_t *)src);
    case GRAPHC_DTYPE_U8: return kir_const_i(c->km, ct, *(const uint8_t *)src);
    case GRAPHC_DTYPE_BOOL: return kir_const_i(c->km, ct, *(const uint8_t *)src != 0);
    default: GC_ASSERT(!"bad dtype"); return NULL;
  }
}

/* Scalar attribute -> KIR literal of dtype t's compute type, rounded like a store to t. */
static kir_expr *scalar_const(gc_lowerer *c, const gc_attr *a, gc_dtype t) {
  unsigned char tmp[8];
  put_scalar(tmp, t, a);
  return elem_const(c, tmp, t);
}

/* Leaves of a (nested) list attribute. */
static int64_t count_leaves(const gc_attr *a) {
  if (a->kind != GC_ATTR_LIST) return 1;
  int64_t n = 0;
  for (int i = 0; i < a->u.list.n; i++) n += count_leaves(&a->u.list.items[i]);
  return n;
}

/* Convert leaves in order into dst; returns the next write position. */
static unsigned char *fill_leaves(unsigned char *dst, gc_dtype t, const gc_attr *a) {
  if (a->kind != GC_ATTR_LIST) {
    put_scalar(dst, t, a);
    return dst + graphc_dtype_size(t);
  }
  for (int i = 0; i < a->u.list.n; i++) dst = fill_leaves(dst, t, &a->u.list.items[i]);
  return dst;
}

/* ---- sources --------------------------------------------------------------------------------- */

/* param: a CONST buffer on the tensor named by `name`, checked against the declared
 * type; without weights (code generation only) the buffer has no data. */
static int lower_param(gc_lowerer *c, const gc_op *op) {
  const gc_value *v = op->results[0];
  const char *name = gc_op_attr_str(op, "name", "");
  if (!c->w) {  /* code generation only (graphc compile): no data behind the buffer */
    size_t bytes = (size_t)gc_type_numel(&v->type) * graphc_dtype_size(v->type.dtype);
    return gc_lower_const_buffer(c, v, name, NULL, bytes) < 0 ? -1 : 0;
  }
  const gc_st_tensor *st = gc_safetensors_find(c->w, name);
  if (!st) {
    gc_error_at(c->d, GRAPHC_STATUS_WEIGHTS_ERROR, op->loc, "tensor \"%s\" not found in weights %s",
                name, c->w->path ? c->w->path : "");
    return -1;
  }
  gc_type t = {st->dtype, st->rank, {0}};
  memcpy(t.dims, st->dims, sizeof t.dims);
  size_t want = (size_t)gc_type_numel(&v->type) * graphc_dtype_size(v->type.dtype);
  if (!gc_type_equal(&t, &v->type) || st->nbytes != want) {
    gc_sbuf got = {0}, exp = {0};
    gc_type_print(&got, &t, NULL);
    gc_type_print(&exp, &v->type, NULL);
    gc_error_at(c->d, GRAPHC_STATUS_WEIGHTS_ERROR, op->loc, "tensor \"%s\" is %s, param %%%s is %s",
                name, got.data ? got.data : "?", v->name, exp.data ? exp.data : "?");
    gc_sbuf_free(&got);
    gc_sbuf_free(&exp);
    return -1;
  }
  return gc_lower_const_buffer(c, v, name, st->data, st->nbytes) < 0 ? -1 : 0;
}

/* const with a list: convert to the dtype once, at compile time. */
static int lower_const_list(gc_lowerer *c, const gc_op *op, const gc_attr *val) {
  const gc_value *v = op->results[0];
  int64_t n = gc_type_numel(&v->type);
  if (count_leaves(val) != n) return gc_ec_unsupported(c, op, "a value list not matching the shape");
  size_t bytes = (size_t)n * graphc_dtype_size(v->type.dtype);
  unsigned char *data = gc_arena_alloc(&c->p->arena, bytes ? bytes : 1);
  if (!data) {
    c->oom = 1;
    return -1;
  }
  fill_leaves(data, v->type.dtype, val);
  char name[32];
  snprintf(name, sizeof name, "const.%d", op->id);
  return gc_lower_const_buffer(c, v, name, data, bytes) < 0 ? -1 : 0;
}

/* Fill: out[pos] = value, vector stores when they fit. */
static int lower_fill(gc_lowerer *c, const gc_op *op, const gc_attr *val) {
  const gc_value *v = op->results[0];
  gc_dtype dt = v->type.dtype;
  int64_t n = gc_type_numel(&v->type);
  int w = gc_ec_vec_width(c, n, &dt, 1);
  kir_kernel *k = gc_ec_kernel(c, op, NULL, KIR_LAUNCH_ITEMS, n / w, 256);
  int pout = gc_ec_param(c, k, "out", v, 0);
  kir_block *b = &k->body;
  if (w > 1) {
    kir_expr *vals[KIR_MAX_VEC];
    for (int i = 0; i < w; i++) vals[i] = ec_cast(c, dt, scalar_const(c, val, dt));
    kir_expr *base = ec_mul(c, ec_v(c, k, k->item_var), ec_i64(c, w));
    kir_emit_store_vec(c->km, b, KIR_GLOBAL, pout, base, w, vals);
  } else {
    gc_ec_store(c, k, b, pout, ec_v(c, k, k->item_var), scalar_const(c, val, dt));
  }
  k->bytes_moved = gc_ec_bytes(&v->type);
  gc_ec_launch(c, k);
  return 0;
}

/* iota: the element's coordinate along `axis`, converted to the dtype. */
static int lower_iota(gc_lowerer *c, const gc_op *op) {
  const gc_value *v = op->results[0];
  const gc_type *t = &v->type;
  int axis = t->rank ? gc_ec_axis(gc_op_attr_int(op, "axis", 0), t->rank) : 0;
  int64_t n = gc_type_numel(t);
  int64_t inner = t->rank ? gc_ec_prod(t->dims, axis + 1, t->rank) : 1;
  int64_t dim = t->rank ? t->dims[axis] : 1;
  kir_kernel *k = gc_ec_kernel(c, op, NULL, KIR_LAUNCH_ITEMS, n, 256);
  int pout = gc_ec_param(c, k, "out", v, 0);
  kir_expr *e = ec_v(c, k, k->item_var);
  if (inner > 1) e = ec_bin(c, KIR_DIV, e, ec_i64(c, inner));
  if (dim > 1 && n / inner > dim) e = ec_bin(c, KIR_REM, e, ec_i64(c, dim));
  if (dim == 1) e = ec_i64(c, 0);
  gc_ec_store(c, k, &k->body, pout, ec_v(c, k, k->item_var), e);
  k->bytes_moved = gc_ec_bytes(t);
  gc_ec_launch(c, k);
  return 0;
}

/* param, const and iota. */
int gc_emit_source(gc_lowerer *c, const gc_op *op) {
  switch (op->opcode) {
    case GC_OP_PARAM: return lower_param(c, op);
    case GC_OP_CONST: {
      const gc_attr *val = gc_op_attr(op, "value");
      GC_ASSERT(val);
      return val->kind == GC_ATTR_LIST ? lower_const_list(c, op, val) : lower_fill(c, op, val);
    }
    case GC_OP_IOTA: return lower_iota(c, op);
    default: GC_ASSERT(!"not a source op"); return -1;
  }
}

/* ---- movement ---------------------------------------------------------------------------------- */

/* Row-major strides of a type. */
static void contig_strides(const gc_type *t, int64_t *st) {
  int64_t s = 1;
  for (int i = t->rank - 1; i >= 0; i--) {
    st[i] = s;
    s *= t->dims[i];
  }
}

/* out[pos] = in[view 0 of s (pos)]: raw copy through an affine view. */
static int view_copy(gc_lowerer *c, const gc_op *op, gc_ec_space *s) {
  const gc_value *in = op->operands[0], *out = op->results[0];
  int64_t n = gc_type_numel(&out->type);
  if (gc_ec_space_identity(s, 0)) {
    return gc_emit_copy(c, gc_arena_printf(&c->km->arena, "%s_%d", gc_op_infos[op->opcode].name, op->id),
                        c->val_buf[in->id], c->val_buf[out->id], &out->type);
  }
  gc_ec_space_simplify(s);
  kir_kernel *k = gc_ec_kernel(c, op, NULL, KIR_LAUNCH_ITEMS, n, 256);
  int pin = gc_ec_param(c, k, "in", in, 1);
  int pout = gc_ec_param(c, k, "out", out, 0);
  kir_expr *idx[GC_EC_MAX_VIEWS];
  gc_ec_space_index(c, k, &k->body, s, k->item_var, idx);
  kir_emit_store(c->km, &k->body, KIR_GLOBAL, pout, ec_v(c, k, k->item_var),
                 kir_load(c->km, k, KIR_GLOBAL, pin, idx[0]));
  k->bytes_moved = 2.0 * gc_ec_bytes(&out->type);
  gc_ec_launch(c, k);
  return 0;
}

/* transpose: out dim i walks input dim perm[i]. */
static int lower_transpose(gc_lowerer *c, const gc_op *op) {
  const gc_type *it = &op->operands[0]->type;
  int64_t perm[GC_MAX_RANK], ist[GC_MAX_RANK], st[GC_MAX_RANK];
  int n = gc_attr_ints(gc_op_attr(op, "perm"), perm, GC_MAX_RANK);
  GC_ASSERT(n == it->rank);
  contig_strides(it, ist);
  for (int i = 0; i < n; i++) st[i] = ist[perm[i]];
  gc_ec_space s;
  gc_ec_space_init(&s, &op->results[0]->type);
  gc_ec_space_add(&s, 0, st);
  return view_copy(c, op, &s);
}

/* broadcast: numpy broadcasting view of the input. */
static int lower_broadcast(gc_lowerer *c, const gc_op *op) {
  gc_ec_space s;
  gc_ec_space_init(&s, &op->results[0]->type);
  gc_ec_space_bcast(&s, &op->operands[0]->type);
  return view_copy(c, op, &s);
}

/* slice: offset at the (normalized, clamped) starts, strides times steps. */
static int lower_slice(gc_lowerer *c, const gc_op *op) {
  const gc_type *it = &op->operands[0]->type;
  int64_t start[GC_MAX_RANK], step[GC_MAX_RANK], ist[GC_MAX_RANK], st[GC_MAX_RANK];
  int ns = gc_attr_ints(gc_op_attr(op, "start"), start, GC_MAX_RANK);
  GC_ASSERT(ns == it->rank);
  const gc_attr *sa = gc_op_attr(op, "step");
  for (int i = 0; i < it->rank; i++) step[i] = 1;
  if (sa) GC_ASSERT(gc_attr_ints(sa, step, GC_MAX_RANK) == it->rank);
  contig_strides(it, ist);
  int64_t off = 0;
  for (int i = 0; i < it->rank; i++) {
    int64_t s0 = start[i] < 0 ? start[i] + it->dims[i] : start[i];
    if (s0 < 0) s0 = 0;
    if (s0 > it->dims[i]) s0 = it->dims[i];
    off += s0 * ist[i];
    st[i] = ist[i] * step[i];
  }
  gc_ec_space s;
  gc_ec_space_init(&s, &op->results[0]->type);
  gc_ec_space_add(&s, off, st);
  return view_copy(c, op, &s);
}

/* pad: in range on every padded dim -> copy, else the pad value. */
static int lower_pad(gc_lowerer *c, const gc_op *op) {
  const gc_value *in = op->operands[0], *out = op->results[0];
  const gc_type *it = &in->type, *ot = &out->type;
  int r = it->rank;
  int64_t pads[2 * GC_MAX_RANK], ist[GC_MAX_RANK];
  GC_ASSERT(gc_attr_ints(gc_op_attr(op, "pads"), pads, 2 * GC_MAX_RANK) == 2 * r);
  contig_strides(it, ist);
  int64_t n = gc_type_numel(ot);
  kir_kernel *k = gc_ec_kernel(c, op, NULL, KIR_LAUNCH_ITEMS, n, 256);
  int pin = gc_ec_param(c, k, "in", in, 1);
  int pout = gc_ec_param(c, k, "out", out, 0);
  kir_block *b = &k->body;
  int coord[GC_MAX_RANK];
  gc_ec_unravel(c, k, b, k->item_var, r, ot->dims, coord);
  kir_expr *cond = NULL, *idx = ec_i64(c, 0);
  for (int d = 0; d < r; d++) {
    kir_expr *cd = ec_v(c, k, coord[d]);
    if (pads[d] > 0) {
      cd = ec_bin(c, KIR_SUB, cd, ec_i64(c, pads[d]));
      kir_expr *ge = ec_bin(c, KIR_GE, ec_v(c, k, coord[d]), ec_i64(c, pads[d]));
      cond = cond ? ec_bin(c, KIR_AND, cond, ge) : ge;
    }
    if (pads[r + d] > 0) {
      kir_expr *lt = ec_bin(c, KIR_LT, ec_v(c, k, coord[d]), ec_i64(c, pads[d] + it->dims[d]));
      cond = cond ? ec_bin(c, KIR_AND, cond, lt) : lt;
    }
    if (it->dims[d] > 1) idx = ec_add(c, idx, ec_mul(c, cd, ec_i64(c, ist[d])));
  }
  const gc_attr *va = gc_op_attr(op, "value");
  gc_attr zero = {.kind = GC_ATTR_INT};
  kir_expr *pv = scalar_const(c, va ? va : &zero, ot->dtype);
  if (!cond) {
    kir_emit_store(c->km, b, KIR_GLOBAL, pout, ec_v(c, k, k->item_var),
                   kir_load(c->km, k, KIR_GLOBAL, pin, idx));
  } else {
    kir_block *tb, *eb;
    kir_emit_if(c->km, b, cond, &tb, &eb);
    kir_emit_store(c->km, tb, KIR_GLOBAL, pout, ec_v(c, k, k->item_var),
                   kir_load(c->km, k, KIR_GLOBAL, pin, idx));
    gc_ec_store(c, k, eb, pout, ec_v(c, k, k->item_var), pv);
  }
  k->bytes_moved = gc_ec_bytes(it) + gc_ec_bytes(ot);
  gc_ec_launch(c, k);
  return 0;
}

/* concat: out viewed as [outer, A, inner]; the piece holding coordinate a is
 * the first whose end exceeds a (an if/else chain). */
static int lower_concat(gc_lowerer *c, const gc_op *op) {
  const gc_value *out = op->results[0];
  const gc_type *ot = &out->type;
  int axis = gc_ec_axis(gc_op_attr_int(op, "axis", 0), ot->rank);
  int64_t dims3[3] = {gc_ec_prod(ot->dims, 0, axis), ot->dims[axis],
                      gc_ec_prod(ot->dims, axis + 1, ot->rank)};
  kir_kernel *k = gc_ec_kernel(c, op, NULL, KIR_LAUNCH_ITEMS, gc_type_numel(ot), 256);
  int pout = gc_ec_param(c, k, "out", out, 0);
  int *pin = gc_arena_alloc(&c->km->arena, (size_t)op->n_operands * sizeof *pin);
  if (!pin) {
    c->oom = 1;
    return -1;
  }
  for (int i = 0; i < op->n_operands; i++) {
    const char *nm = gc_arena_printf(&c->km->arena, "in%d", i);
    pin[i] = gc_ec_param(c, k, nm, op->operands[i], 1);
  }
  kir_block *b = &k->body;
  int co[3];
  gc_ec_unravel(c, k, b, k->item_var, 3, dims3, co);
  int64_t off = 0;
  for (int i = 0; i < op->n_operands; i++) {
    int64_t ai = op->operands[i]->type.dims[axis];
    kir_block *tb = b;
    if (i + 1 < op->n_operands) {
      kir_expr *cond = ec_bin(c, KIR_LT, ec_v(c, k, co[1]), ec_i64(c, off + ai));
      kir_emit_if(c->km, b, cond, &tb, &b);
    }
    /* in_i[(o * ai + (a - off)) * inner + i] */
    kir_expr *a = ec_bin(c, KIR_SUB, ec_v(c, k, co[1]), ec_i64(c, off));
    kir_expr *row = ec_add(c, ec_mul(c, ec_v(c, k, co[0]), ec_i64(c, ai)), a);
    kir_expr *idx = ec_add(c, ec_mul(c, row, ec_i64(c, dims3[2])), ec_v(c, k, co[2]));
    kir_emit_store(c->km, tb, KIR_GLOBAL, pout, ec_v(c, k, k->item_var),
                   kir_load(c->km, k, KIR_GLOBAL, pin[i], idx));
    off += ai;
  }
  k->bytes_moved = 2.0 * gc_ec_bytes(ot);
  gc_ec_launch(c, k);
  return 0;
}

/* split: the input viewed as [outer, A, inner]; each element goes to the piece
 * holding its axis coordinate. */
static int lower_split(gc_lowerer *c, const gc_op *op) {
  const gc_value *in = op->operands[0];
  const gc_type *it = &in->type;
  int axis = gc_ec_axis(gc_op_attr_int(op, "axis", 0), it->rank);
  int64_t dims3[3] = {gc_ec_prod(it->dims, 0, axis), it->dims[axis],
                      gc_ec_prod(it->dims, axis + 1, it->rank)};
  kir_kernel *k = gc_ec_kernel(c, op, NULL, KIR_LAUNCH_ITEMS, gc_type_numel(it), 256);
  int pin = gc_ec_param(c, k, "in", in, 1);
  int *pout = gc_arena_alloc(&c->km->arena, (size_t)op->n_results * sizeof *pout);
  if (!pout) {
    c->oom = 1;
    return -1;
  }
  for (int i = 0; i < op->n_results; i++) {
    const char *nm = gc_arena_printf(&c->km->arena, "out%d", i);
    pout[i] = gc_ec_param(c, k, nm, op->results[i], 0);
  }
  kir_block *b = &k->body;
  int co[3];
  gc_ec_unravel(c, k, b, k->item_var, 3, dims3, co);
  int x = gc_ec_let(c, k, b, "x", kir_load(c->km, k, KIR_GLOBAL, pin, ec_v(c, k, k->item_var)));
  int64_t off = 0;
  for (int i = 0; i < op->n_results; i++) {
    int64_t ai = op->results[i]->type.dims[axis];
    kir_block *tb = b;
    if (i + 1 < op->n_results) {
      kir_expr *cond = ec_bin(c, KIR_LT, ec_v(c, k, co[1]), ec_i64(c, off + ai));
      kir_emit_if(c->km, b, cond, &tb, &b);
    }
    kir_expr *a = ec_bin(c, KIR_SUB, ec_v(c, k, co[1]), ec_i64(c, off));
    kir_expr *row = ec_add(c, ec_mul(c, ec_v(c, k, co[0]), ec_i64(c, ai)), a);
    kir_expr *idx = ec_add(c, ec_mul(c, row, ec_i64(c, dims3[2])), ec_v(c, k, co[2]));
    kir_emit_store(c->km, tb, KIR_GLOBAL, pout[i], idx, ec_v(c, k, x));
    off += ai;
  }
  k->bytes_moved = 2.0 * gc_ec_bytes(it);
  gc_ec_launch(c, k);
  return 0;
}

/* gather: out viewed as [outer, J, inner]; index wraps once if negative, then clamps. */
static int lower_gather(gc_lowerer *c, const gc_op *op) {
  const gc_value *x = op->operands[0], *ind = op->operands[1], *out = op->results[0];
  const gc_type *xt = &x->type;
  int axis = gc_ec_axis(gc_op_attr_int(op, "axis", 0), xt->rank);
  int64_t dim = xt->dims[axis];
  int64_t dims3[3] = {gc_ec_prod(xt->dims, 0, axis), gc_type_numel(&ind->type),
                      gc_ec_prod(xt->dims, axis + 1, xt->rank)};
  kir_kernel *k = gc_ec_kernel(c, op, NULL, KIR_LAUNCH_ITEMS, gc_type_numel(&out->type), 256);
  int px = gc_ec_param(c, k, "x", x, 1);
  int pi = gc_ec_param(c, k, "ind", ind, 1);
  int pout = gc_ec_param(c, k, "out", out, 0);
  kir_block *b = &k->body;
  int co[3];
  gc_ec_unravel(c, k, b, k->item_var, 3, dims3, co);
  int j = gc_ec_let(c, k, b, "j", ec_cast(c, GRAPHC_DTYPE_I64, gc_ec_load(c, k, pi, ec_v(c, k, co[1]))));
  kir_expr *neg = ec_bin(c, KIR_LT, ec_v(c, k, j), ec_i64(c, 0));
  kir_expr *wrapped = ec_bin(c, KIR_ADD, ec_v(c, k, j), ec_i64(c, dim));
  int jw = gc_ec_let(c, k, b, "j", kir_select(c->km, neg, wrapped, ec_v(c, k, j)));
  kir_expr *hi = ec_bin(c, KIR_MIN, ec_v(c, k, jw), ec_i64(c, dim - 1));
  int jc = gc_ec_let(c, k, b, "j", ec_bin(c, KIR_MAX, hi, ec_i64(c, 0)));
  kir_expr *row = ec_add(c, ec_mul(c, ec_v(c, k, co[0]), ec_i64(c, dim)), ec_v(c, k, jc));
  kir_expr *idx = ec_add(c, ec_mul(c, row, ec_i64(c, dims3[2])), ec_v(c, k, co[2]));
  kir_emit_store(c->km, b, KIR_GLOBAL, pout, ec_v(c, k, k->item_var),
                 kir_load(c->km, k, KIR_GLOBAL, px, idx));
  k->bytes_moved = 2.0 * gc_ec_bytes(&out->type) + gc_ec_bytes(&ind->type);
  gc_ec_launch(c, k);
  return 0;
}

/* Data movement ops; reshape needs no kernel. */
int gc_emit_move(gc_lowerer *c, const gc_op *op) {
  switch (op->opcode) {
    case GC_OP_RESHAPE: return 0;  /* a view: the driver shares the operand's buffer */
    case GC_OP_TRANSPOSE: return lower_transpose(c, op);
    case GC_OP_BROADCAST: return lower_broadcast(c, op);
    case GC_OP_CONCAT: return lower_concat(c, op);
    case GC_OP_SLICE: return lower_slice(c, op);
    case GC_OP_PAD: return lower_pad(c, op);
    case GC_OP_GATHER: return lower_gather(c, op);
    case GC_OP_SPLIT: return lower_split(c, op);
    default: GC_ASSERT(!"not a movement op"); return -1;
  }
}
