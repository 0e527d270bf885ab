/* emit_move.c - constant sources and split groups.
 *
 *   param          CONST buffer the driver binds to the weights file (no kernel)
 *   const [list]   CONST buffer, data converted to the dtype in the plan arena
 *   scalar consts  literals rounded like a store to the dtype (gc_ec_scalar_const),
 *                  used by the generator for splats and pad values
 *   state          STATE buffer owned by the executable (no kernel)
 *   split          (when not fused into its users) one kernel over the input: the
 *                  input viewed as [outer, axis, inner], each element stored into
 *                  the piece holding its axis coordinate
 *   cache_write    one kernel over the update: each element stored into the state's
 *                  buffer at its coordinates, the axis one moved by its row's position
 * Every other movement op (reshape, transpose, broadcast, slice, pad, concat,
 * gather) and the splat / iota sources are index maps of the element generator
 * (emit_expr.c) inside loop groups.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/emit.h"
#include "ir/dtype.h"

/* ---- host-side scalar conversion (const data and fill values) ------------------------------ */

/* f16/bf16 bits of a constant by the rounding rule of ir/dtype.h, except that a NaN
 * becomes the default quiet NaN of its sign (0x7e00 / 0x7fc0): its payload is dropped. */
static uint16_t narrow_bits(gc_dtype t, double x) {
  if (isnan(x)) x = copysign(NAN, x);
  return t == GRAPHC_DTYPE_F16 ? gc_f64_to_f16(x) : gc_f64_to_bf16(x);
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
    case GRAPHC_DTYPE_F16:  /* an int rounds once, from the integer (not through a double) */
      *(uint16_t *)dst = from_float ? narrow_bits(t, fv) : gc_i64_to_f16(iv);
      break;
    case GRAPHC_DTYPE_BF16:
      *(uint16_t *)dst = from_float ? narrow_bits(t, fv) : gc_i64_to_bf16(iv);
      break;
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
    case GRAPHC_DTYPE_F8E4M3:
    case GRAPHC_DTYPE_F8E5M2:
    case GRAPHC_DTYPE_F8E4M3FNUZ:
    case GRAPHC_DTYPE_F8E5M2FNUZ: gc_store_f64(dst, t, 0, is_int ? (double)iv : fv); break;
    default: GC_ASSERT(!"bad dtype");
  }
}

/* A stored element as a KIR literal in its compute type (exact). */
static kir_expr *elem_const(gc_lowerer *c, const void *src, gc_dtype t) {
  gc_dtype ct = gc_ec_compute_type(t);
  switch (t) {
    case GRAPHC_DTYPE_F64: return kir_const_f(c->km, ct, *(const double *)src);
    case GRAPHC_DTYPE_F32: return kir_const_f(c->km, ct, *(const float *)src);
    case GRAPHC_DTYPE_F16: return kir_const_f(c->km, ct, gc_f16_to_f64(*(const uint16_t *)src));
    case GRAPHC_DTYPE_BF16: return kir_const_f(c->km, ct, gc_bf16_to_f64(*(const uint16_t *)src));
    case GRAPHC_DTYPE_I64: return kir_const_i(c->km, ct, *(const int64_t *)src);
    case GRAPHC_DTYPE_I32: return kir_const_i(c->km, ct, *(const int32_t *)src);
    case GRAPHC_DTYPE_I8: return kir_const_i(c->km, ct, *(const int8_t *)src);
    case GRAPHC_DTYPE_U8: return kir_const_i(c->km, ct, *(const uint8_t *)src);
    case GRAPHC_DTYPE_BOOL: return kir_const_i(c->km, ct, *(const uint8_t *)src != 0);
    case GRAPHC_DTYPE_F8E4M3:
    case GRAPHC_DTYPE_F8E5M2:
    case GRAPHC_DTYPE_F8E4M3FNUZ:
    case GRAPHC_DTYPE_F8E5M2FNUZ: return kir_const_f(c->km, ct, gc_load_f64(src, t, 0));
    default: GC_ASSERT(!"bad dtype"); return NULL;
  }
}

/* Scalar attribute -> KIR literal of dtype t's compute type, rounded like a store to t. */
kir_expr *gc_ec_scalar_const(gc_lowerer *c, const gc_attr *a, gc_dtype t) {
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

/* param: a CONST buffer with no data, marked as the param's: the driver binds the
 * weights file's tensor `name` to it (gc_plan_bind_weights, driver/launch_build.c),
 * converted from the file's dtype (`from`) when that differs. */
static int lower_param(gc_lowerer *c, const gc_op *op) {
  const gc_value *v = op->results[0];
  const char *name = gc_op_attr_str(op, "name", "");
  size_t bytes = (size_t)gc_type_numel(&v->type) * graphc_dtype_size(v->type.dtype);
  int bi = gc_lower_const_buffer(c, v, name, NULL, bytes);
  if (bi < 0) return -1;
  gc_plan_const *k = &c->p->consts[c->p->buffers[bi].index];
  k->is_param = 1;
  k->file_dtype = gc_param_file_dtype(op);
  k->param = gc_arena_strdup(&c->p->arena, v->name);
  k->loc = op->loc;
  return 0;
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

/* state: a STATE buffer, the plan's state `name` (the executable owns its memory). */
static int lower_state(gc_lowerer *c, const gc_op *op) {
  const gc_value *v = op->results[0];
  gc_plan *p = c->p;
  gc_plan_state *ns = realloc(p->states, ((size_t)p->n_states + 1) * sizeof *ns);
  if (!ns) {
    c->oom = 1;
    return -1;
  }
  p->states = ns;
  gc_plan_state *st = &p->states[p->n_states];
  memset(st, 0, sizeof *st);
  st->name = gc_arena_strdup(&p->arena, gc_op_attr_str(op, "name", ""));
  st->type = v->type;
  st->bytes = (size_t)gc_type_numel(&v->type) * graphc_dtype_size(v->type.dtype);
  int bi = gc_lower_new_buffer(c, GC_BUF_STATE, p->n_states++, &v->type);
  if (bi < 0) return -1;
  c->val_buf[v->id] = bi;
  return 0;
}

/* params and list consts: CONST buffers; states: STATE buffers. */
int gc_emit_const_source(gc_lowerer *c, const gc_op *op) {
  if (op->opcode == GC_OP_PARAM) return lower_param(c, op);
  if (op->opcode == GC_OP_STATE) return lower_state(c, op);
  const gc_attr *val = gc_op_attr(op, "value");
  GC_ASSERT(op->opcode == GC_OP_CONST && val && val->kind == GC_ATTR_LIST);
  return lower_const_list(c, op, val);
}

/* ---- split ------------------------------------------------------------------------------------ */

/* split: the input viewed as [outer, A, inner]; each element goes to the piece
 * holding its axis coordinate (pieces without a buffer are skipped). */
int gc_emit_split(gc_lowerer *c, const gc_fusion_group *grp) {
  const gc_op *op = grp->roots[0];
  const gc_value *in = op->operands[0];
  const gc_type *it = &in->type;
  int axis = gc_ec_axis(gc_op_attr_int(op, "axis", 0), it->rank);
  int64_t dims3[3] = {gc_ec_prod(it->dims, 0, axis), it->dims[axis],
                      gc_ec_prod(it->dims, axis + 1, it->rank)};
  kir_kernel *k = gc_ec_kernel(c, KIR_LAUNCH_ITEMS, gc_type_numel(it), 256);
  gc_gen G;
  gc_gen_init(&G, c, k);
  kir_block *b = &k->body;
  int co[3];
  gc_ec_unravel(c, k, b, k->item_var, 3, dims3, co);
  int x = gc_gen_val(&G, b, in, gc_gen_pt(&G, it, k->item_var, NULL));
  int64_t off = 0;
  for (int i = 0; i < op->n_results; i++) {
    const gc_value *r = op->results[i];
    int64_t ai = r->type.dims[axis];
    kir_block *tb = b;
    if (i + 1 < op->n_results) {
      kir_expr *cond = ec_bin(c, KIR_LT, ec_v(c, k, co[1]), ec_i64(c, off + ai));
      kir_emit_if(c->km, b, cond, &tb, &b);
    }
    if (c->val_buf[r->id] >= 0) {
      int p = gc_gen_wparam(&G, c->val_buf[r->id], r->type.dtype);
      kir_expr *a = ec_bin(c, KIR_SUB, ec_v(c, k, co[1]), ec_i64(c, off));
      kir_expr *row = ec_add(c, ec_mul(c, ec_v(c, k, co[0]), ec_i64(c, ai)), a);
      kir_expr *idx = ec_add(c, ec_mul(c, row, ec_i64(c, dims3[2])), ec_v(c, k, co[2]));
      gc_ec_store(c, k, tb, p, idx, ec_v(c, k, x));
    }
    off += ai;
  }
  k->bytes_moved = gc_gen_bytes(&G, -1);
  gc_gen_free(&G);
  gc_ec_launch(c, k);
  return 0;
}

/* ---- cache_write ------------------------------------------------------------------------------- */

/* cache_write(state, upd, pos, axis): one item per element of upd; its coordinates
 * with the axis one moved by pos (of its row, or the scalar) index the state, which is
 * written in place (the result's buffer is the state's: lower.c). Positions outside
 * [0, T) are dropped. */
int gc_emit_cache_write(gc_lowerer *c, const gc_fusion_group *grp) {
  const gc_op *op = grp->roots[0];
  const gc_value *st = op->operands[0], *upd = op->operands[1], *pos = op->operands[2];
  const gc_type *ut = &upd->type, *tt = &st->type;
  int r = ut->rank, axis = gc_ec_axis(gc_op_attr_int(op, "axis", 0), r);
  kir_kernel *k = gc_ec_kernel(c, KIR_LAUNCH_ITEMS, gc_type_numel(ut), 256);
  gc_gen G;
  gc_gen_init(&G, c, k);
  kir_block *b = &k->body;
  int co[GC_MAX_RANK];
  gc_ec_unravel(c, k, b, k->item_var, r, ut->dims, co);
  int x = gc_gen_val(&G, b, upd, gc_gen_pt(&G, ut, k->item_var, co));
  int pco[1] = {co[0]};
  int pv = pos->type.rank
               ? gc_gen_val(&G, b, pos, gc_gen_pt(&G, &pos->type, co[0], pco))
               : gc_gen_val(&G, b, pos, gc_gen_pt(&G, &pos->type, gc_ec_let(c, k, b, "z", ec_i64(c, 0)), NULL));
  int t = gc_ec_let(c, k, b, "t",
                    ec_add(c, ec_cast(c, GRAPHC_DTYPE_I64, ec_v(c, k, pv)), ec_v(c, k, co[axis])));
  kir_expr *in = ec_bin(c, KIR_AND, ec_bin(c, KIR_GE, ec_v(c, k, t), ec_i64(c, 0)),
                        ec_bin(c, KIR_LT, ec_v(c, k, t), ec_i64(c, tt->dims[axis])));
  kir_block *tb = NULL, *eb = NULL;
  kir_emit_if(c->km, b, in, &tb, &eb);
  kir_expr *idx = NULL;
  for (int i = 0; i < r; i++) {
    kir_expr *ci = ec_v(c, k, i == axis ? t : co[i]);
    idx = idx ? ec_add(c, ec_mul(c, idx, ec_i64(c, tt->dims[i])), ci) : ci;
  }
  int p = gc_gen_wparam(&G, c->val_buf[st->id], tt->dtype);
  gc_ec_store(c, k, tb, p, idx, ec_v(c, k, x));
  k->bytes_moved = 2.0 * gc_ec_bytes(ut);
  gc_gen_free(&G);
  gc_ec_launch(c, k);
  return 0;
}
