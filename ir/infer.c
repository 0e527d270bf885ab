/* infer.c - shape and dtype inference: one rule per RULE family of ops.def.
 *
 * gc_infer_op dispatches through `rules`, a table built by expanding ops.def,
 * to gc_infer_<RULE>(). A rule reads the operand types and attributes of one
 * op, computes its result types, or reports one error (at the attribute when an
 * attribute is wrong, at the op otherwise) and returns 0. The semantics are the
 * ones in the brief: numpy broadcasting, negative axes, no implicit promotion,
 * symbolic dims compared as opaque names, reshape by products of symbols.
 *
 * Rules are defensive: they never trust that the verifier has run, so an
 * attribute of the wrong kind is an error here too, never a crash.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

#define DIM_LIMIT (INT64_C(1) << 62) /* dims and element counts stay at or below 2^62 */
#define MAX_LIST (2 * GC_MAX_RANK)    /* longest int list a rule reads into a buffer */

typedef int (*rule_fn)(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d);

/* Everything one rule needs to report: the op, and scratch buffers for types. */
typedef struct ictx {
  const gc_graph *g;
  const gc_op *op;
  gc_diags *d;
  const char *name; /* op name for message prefixes */
  char buf[8][320];
  int k;
} ictx;

#define CTX                                                        \
  ictx cx_ = {.g = g, .op = op, .d = d, .name = gc_op_infos[op->opcode].name}; \
  ictx *c = &cx_

/* ---- messages ----------------------------------------------------------------- */

/* Dtype name, safe for out-of-range values. */
static const char *dtn(gc_dtype t) {
  const char *s = graphc_dtype_name(t);
  return s ? s : "?dtype";
}

/* Append a dim: its value, or the symbol's name (safe for bad indices). */
static void put_dim(gc_sbuf *b, const gc_graph *g, int64_t v) {
  if (GC_DIM_IS_SYM(v)) {
    int64_t i = v - GC_DIM_SYM_BASE;
    if (g && i < g->n_syms && g->sym_names && g->sym_names[i])
      gc_sbuf_puts(b, g->sym_names[i]);
    else
      gc_sbuf_printf(b, "?%lld", (long long)i);
  } else {
    gc_sbuf_printf(b, "%lld", (long long)v);
  }
}

/* Copy an sbuf into one of the context's ring buffers and return it. */
static const char *ring(ictx *c, gc_sbuf *b) {
  char *out = c->buf[c->k++ & 7];
  snprintf(out, sizeof c->buf[0], "%s", b->data ? b->data : "?");
  gc_sbuf_free(b);
  return out;
}

/* "f32[B, 128]" for messages. */
static const char *ty(ictx *c, const gc_type *t) {
  gc_sbuf b = {0};
  gc_sbuf_printf(&b, "%s[", dtn(t->dtype));
  for (int i = 0; i < t->rank && i < GC_MAX_RANK; i++) {
    if (i) gc_sbuf_puts(&b, ", ");
    put_dim(&b, c->g, t->dims[i]);
  }
  gc_sbuf_putc(&b, ']');
  return ring(c, &b);
}

/* "[2, B, -1]" for a list of dims. */
static const char *dims_str(ictx *c, const int64_t *v, int n) {
  gc_sbuf b = {0};
  gc_sbuf_putc(&b, '[');
  for (int i = 0; i < n; i++) {
    if (i) gc_sbuf_puts(&b, ", ");
    put_dim(&b, c->g, v[i]);
  }
  gc_sbuf_putc(&b, ']');
  return ring(c, &b);
}

/* One dim as text ("8" or "B"). */
static const char *dim_str(ictx *c, int64_t v) {
  gc_sbuf b = {0};
  put_dim(&b, c->g, v);
  return ring(c, &b);
}

/* Report "<op>: <message>" at loc (op->loc when loc is unknown); returns 0. */
__attribute__((format(printf, 3, 4))) static int fail(ictx *c, gc_loc loc, const char *fmt, ...) {
  gc_sbuf b = {0};
  va_list ap;
  va_start(ap, fmt);
  gc_sbuf_vprintf(&b, fmt, ap);
  va_end(ap);
  if (loc.line <= 0) loc = c->op->loc;
  gc_error_at(c->d, GRAPHC_STATUS_VERIFY_ERROR, loc, "%s: %s", c->name,
              b.data ? b.data : "(out of memory)");
  gc_sbuf_free(&b);
  return 0;
}

/* ---- operands and attributes ---------------------------------------------------- */

/* Type of operand i. */
static const gc_type *in(ictx *c, int i) { return &c->op->operands[i]->type; }

/* "%name" of operand i, for messages. */
static const char *in_name(ictx *c, int i) {
  const char *n = c->op->operands[i]->name;
  return n ? n : "?";
}

/* Where to report a problem with attribute a (the op when a is absent). */
static gc_loc aloc(ictx *c, const gc_attr *a) {
  return a && a->loc.line > 0 ? a->loc : c->op->loc;
}

/* Where to report a problem with entry i of list attribute a. */
static gc_loc iloc(ictx *c, const gc_attr *a, int i) {
  if (a && a->kind == GC_ATTR_LIST && i >= 0 && i < a->u.list.n &&
      a->u.list.items[i].loc.line > 0)
    return a->u.list.items[i].loc;
  return aloc(c, a);
}

/* Kind of an attribute as a word for messages. */
static const char *kind_name(const gc_attr *a) {
  switch (a->kind) {
    case GC_ATTR_INT: return GC_DIM_IS_SYM(a->u.i) ? "symbolic dim" : "int";
    case GC_ATTR_FLOAT: return "float";
    case GC_ATTR_STR: return "str";
    case GC_ATTR_BOOL: return "bool";
    case GC_ATTR_DTYPE: return "dtype";
    case GC_ATTR_LIST: return "list";
  }
  return "?";
}

/* Optional int attribute (dflt when absent); 0 after an error. */
static int attr_int(ictx *c, const char *name, int64_t dflt, int64_t *v) {
  const gc_attr *a = gc_op_attr(c->op, name);
  *v = dflt;
  if (!a) return 1;
  if (a->kind != GC_ATTR_INT || GC_DIM_IS_SYM(a->u.i))
    return fail(c, aloc(c, a), "attribute '%s' expects int, got %s", name, kind_name(a));
  *v = a->u.i;
  return 1;
}

/* Optional bool attribute (dflt when absent); 0 after an error. */
static int attr_bool(ictx *c, const char *name, int dflt, int *v) {
  const gc_attr *a = gc_op_attr(c->op, name);
  *v = dflt;
  if (!a) return 1;
  if (a->kind != GC_ATTR_BOOL)
    return fail(c, aloc(c, a), "attribute '%s' expects bool, got %s", name, kind_name(a));
  *v = a->u.b;
  return 1;
}

/* Optional float attribute (an int is accepted); 0 after an error. */
static int attr_float(ictx *c, const char *name, double *v) {
  const gc_attr *a = gc_op_attr(c->op, name);
  if (!a) return 1;
  if (a->kind != GC_ATTR_FLOAT && !(a->kind == GC_ATTR_INT && !GC_DIM_IS_SYM(a->u.i)))
    return fail(c, aloc(c, a), "attribute '%s' expects float, got %s", name, kind_name(a));
  *v = gc_attr_number(a);
  return 1;
}

/* A list of ints (a single int counts as a one-entry list) into v[MAX_LIST];
 * *n = -1 when absent, *ap = the attribute. 0 after an error. */
static int attr_ints(ictx *c, const char *name, int64_t *v, int *n, const gc_attr **ap) {
  const gc_attr *a = gc_op_attr(c->op, name);
  *ap = a;
  *n = -1;
  if (!a) return 1;
  if (a->kind == GC_ATTR_INT) {
    v[0] = a->u.i;
    *n = 1;
    return 1;
  }
  if (a->kind != GC_ATTR_LIST)
    return fail(c, aloc(c, a), "attribute '%s' expects a list of ints, got %s", name,
                kind_name(a));
  if (a->u.list.n > MAX_LIST)
    return fail(c, aloc(c, a), "attribute '%s' has %d entries; at most %d are allowed", name,
                a->u.list.n, MAX_LIST);
  for (int i = 0; i < a->u.list.n; i++) {
    const gc_attr *it = &a->u.list.items[i];
    if (it->kind != GC_ATTR_INT)
      return fail(c, iloc(c, a, i), "attribute '%s' expects a list of ints, got %s at entry %d",
                  name, kind_name(it), i);
    v[i] = it->u.i;
  }
  *n = a->u.list.n;
  return 1;
}

/* Is v a symbol declared by the graph? */
static int is_graph_sym(ictx *c, int64_t v) {
  return GC_DIM_IS_SYM(v) && v - GC_DIM_SYM_BASE < c->g->n_syms;
}

/* A `dims` attribute: entries >= 0 or symbols of the graph (or one -1 when
 * minus1 is set). Required: a missing attribute is an error. */
static int attr_dims(ictx *c, const char *name, int minus1, int64_t *v, int *n,
                     const gc_attr **ap) {
  if (!attr_ints(c, name, v, n, ap)) return 0;
  if (*n < 0) return fail(c, c->op->loc, "missing required attribute '%s'", name);
  if (*n > GC_MAX_RANK)
    return fail(c, aloc(c, *ap), "attribute '%s' has %d entries; the maximum rank is %d", name,
                *n, GC_MAX_RANK);
  int seen_minus1 = 0;
  for (int i = 0; i < *n; i++) {
    if (GC_DIM_IS_SYM(v[i]) ? is_graph_sym(c, v[i]) : v[i] >= 0) continue;
    if (minus1 && v[i] == -1 && !seen_minus1) {
      seen_minus1 = 1;
      continue;
    }
    if (minus1 && v[i] == -1)
      return fail(c, iloc(c, *ap, i), "attribute '%s' has more than one -1", name);
    return fail(c, iloc(c, *ap, i), "attribute '%s' entry %d is %lld; dims must be >= 0%s", name,
                i, (long long)v[i], minus1 ? " (or -1 once)" : "");
  }
  return 1;
}

/* Normalize an axis against rank (negative counts from the end). */
static int norm_axis(ictx *c, gc_loc loc, int64_t axis, int rank, int *out) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    return fail(c, loc, "axis %lld out of range for rank %d", (long long)axis, rank);
  *out = (int)a;
  return 1;
}

/* Optional `axis` attribute (default dflt), normalized against rank. */
static int get_axis(ictx *c, const char *name, int64_t dflt, int rank, int *out) {
  int64_t a;
  if (!attr_int(c, name, dflt, &a)) return 0;
  return norm_axis(c, aloc(c, gc_op_attr(c->op, name)), a, rank, out);
}

/* Error for arithmetic on a symbolic dim. */
static int need_concrete(ictx *c, int axis, int64_t dim, const char *of) {
  return fail(c, c->op->loc, "needs a concrete size for axis %d%s; bind symbolic dim %s", axis,
              of, dim_str(c, dim));
}

/* A computed dim must stay below 2^62 (larger values would read as symbols). */
static int dim_fits(ictx *c, __int128 v, int axis) {
  if (v >= DIM_LIMIT)
    return fail(c, c->op->loc, "result dim %d overflows 2^62", axis);
  return 1;
}

/* ---- dtype classes ------------------------------------------------------------------ */
/* fp8 (f8e4m3, f8e5m2) is a storage dtype: params, consts, casts and data movement
 * take it; arithmetic and comparisons do not (cast to f32 first). */
enum { DT_NUM, DT_FLOAT, DT_BOOL, DT_INDEX, DT_VALUE };
static const char *const dt_expect[] = {
    "a numeric dtype (any but bool and fp8)", "a float dtype (f64, f32, f16, bf16)", "bool",
    "an index dtype (i32 or i64)", "a dtype other than fp8 (cast f8e4m3/f8e5m2 to f32 first)"};

/* Does dtype t belong to class cls? */
static int dt_in(gc_dtype t, int cls) {
  switch (cls) {
    case DT_NUM: return (gc_dtype_is_float(t) && !gc_dtype_is_f8(t)) || gc_dtype_is_int(t);
    case DT_FLOAT: return gc_dtype_is_float(t) && !gc_dtype_is_f8(t);
    case DT_VALUE: return !gc_dtype_is_f8(t);
    case DT_BOOL: return t == GRAPHC_DTYPE_BOOL;
    case DT_INDEX: return t == GRAPHC_DTYPE_I32 || t == GRAPHC_DTYPE_I64;
  }
  return 0;
}

/* Operand i must have a dtype of class cls. */
static int want_dt(ictx *c, int i, int cls) {
  gc_dtype t = in(c, i)->dtype;
  if (dt_in(t, cls)) return 1;
  return fail(c, c->op->loc, "operand %%%s has dtype %s; expected %s", in_name(c, i), dtn(t),
              dt_expect[cls]);
}

/* Operands i and j must have the same dtype. */
static int same_dt(ictx *c, int i, int j) {
  if (in(c, i)->dtype == in(c, j)->dtype) return 1;
  return fail(c, c->op->loc, "dtypes differ: %s and %s", dtn(in(c, i)->dtype),
              dtn(in(c, j)->dtype));
}

/* ---- broadcasting ---------------------------------------------------------------- */

/* Broadcast two dim lists (right-aligned) into out; 0 when they do not. */
static int bcast_dims(const int64_t *a, int ra, const int64_t *b, int rb, int64_t *out, int *ro) {
  int r = ra > rb ? ra : rb;
  for (int i = 0; i < r; i++) {
    int ia = i - (r - ra), ib = i - (r - rb);
    int64_t x = ia >= 0 ? a[ia] : 1, y = ib >= 0 ? b[ib] : 1;
    if (x == y || y == 1)
      out[i] = x;
    else if (x == 1)
      out[i] = y;
    else
      return 0;
  }
  *ro = r;
  return 1;
}

/* Broadcast two types' shapes into out (dtype from a); error names both types. */
static int bcast2(ictx *c, const gc_type *a, const gc_type *b, gc_type *out) {
  gc_type t = {.dtype = a->dtype};
  if (!bcast_dims(a->dims, a->rank, b->dims, b->rank, t.dims, &t.rank))
    return fail(c, c->op->loc, "cannot broadcast %s with %s", ty(c, a), ty(c, b));
  *out = t;
  return 1;
}

/* ---- products of dims (reshape) ---------------------------------------------------- */
typedef struct prod {
  int64_t c;                    /* constant factor */
  int n;                        /* number of symbols */
  int64_t syms[2 * GC_MAX_RANK];/* sorted symbol dims */
  int ovf;                      /* constant factor overflowed 2^62 */
} prod;

/* Multiply a dim into a product (symbols kept sorted). */
static void prod_mul(prod *p, int64_t d) {
  if (GC_DIM_IS_SYM(d)) {
    int i = p->n++;
    while (i > 0 && p->syms[i - 1] > d) {
      p->syms[i] = p->syms[i - 1];
      i--;
    }
    p->syms[i] = d;
  } else if (d <= 0) {
    p->c = 0; /* malformed type (the verifier rejects it); keep the arithmetic defined */
  } else if (p->c > DIM_LIMIT / d) {
    p->ovf = 1;
  } else {
    p->c *= d;
  }
}

/* "6*B*T" / "B" / "24". */
static const char *prod_str(ictx *c, const prod *p) {
  gc_sbuf b = {0};
  if (p->c != 1 || p->n == 0) gc_sbuf_printf(&b, "%lld", (long long)p->c);
  for (int i = 0; i < p->n; i++) {
    if (i || p->c != 1) gc_sbuf_putc(&b, '*');
    put_dim(&b, c->g, p->syms[i]);
  }
  return ring(c, &b);
}

/* ---- rules: sources ------------------------------------------------------------------ */

/* param: the declared result type; `from` (the file's dtype) a different float dtype. */
static int gc_infer_param(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  const gc_attr *a = gc_op_attr(op, "name");
  if (!a) return fail(c, op->loc, "missing required attribute 'name'");
  if (a->kind != GC_ATTR_STR)
    return fail(c, aloc(c, a), "attribute 'name' expects str, got %s", kind_name(a));
  const gc_attr *f = gc_op_attr(op, "from");
  gc_dtype t = op->results[0]->type.dtype;
  if (f && f->kind != GC_ATTR_DTYPE)
    return fail(c, aloc(c, f), "attribute 'from' expects dtype, got %s", kind_name(f));
  if (f && (!gc_dtype_is_float(f->u.dt) || !gc_dtype_is_float(t)))
    return fail(c, aloc(c, f),
                "'from %s': a param converts only between float dtypes (f64, f32, f16, bf16, "
                "f8e4m3, f8e5m2), not %s from %s",
                graphc_dtype_name(f->u.dt), graphc_dtype_name(t), graphc_dtype_name(f->u.dt));
  if (f && f->u.dt == t)
    return fail(c, aloc(c, f), "'from %s': the param is already %s (drop 'from')",
                graphc_dtype_name(t), graphc_dtype_name(t));
  out[0] = op->results[0]->type;
  return 1;
}

/* Optional `dtype` attribute; 0 after an error. */
static int attr_dtype(ictx *c, gc_dtype dflt, gc_dtype *t, const gc_attr **ap) {
  const gc_attr *a = gc_op_attr(c->op, "dtype");
  *ap = a;
  *t = dflt;
  if (!a) return 1;
  if (a->kind != GC_ATTR_DTYPE)
    return fail(c, aloc(c, a), "attribute 'dtype' expects dtype, got %s", kind_name(a));
  *t = a->u.dt;
  return 1;
}

/* const: a scalar broadcast to `shape` or a flat list filling it. */
static int gc_infer_const_(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  const gc_attr *v = gc_op_attr(op, "value"), *sa = NULL, *da;
  if (!v) return fail(c, op->loc, "missing required attribute 'value'");
  int has_f = 0, has_i = 0, has_b = 0, len = -1;
  if (v->kind == GC_ATTR_LIST) {
    len = v->u.list.n;
    if (len == 0) return fail(c, aloc(c, v), "attribute 'value' is an empty list");
    for (int i = 0; i < len; i++) {
      const gc_attr *it = &v->u.list.items[i];
      switch (it->kind) {
        case GC_ATTR_FLOAT: has_f = 1; break;
        case GC_ATTR_BOOL: has_b = 1; break;
        case GC_ATTR_INT:
          if (!GC_DIM_IS_SYM(it->u.i)) {
            has_i = 1;
            break;
          }
          /* fallthrough */
        default:
          return fail(c, iloc(c, v, i),
                      "attribute 'value' must be a scalar or a flat list of scalars, got %s at "
                      "entry %d",
                      kind_name(it), i);
      }
    }
    if (has_b && (has_f || has_i))
      return fail(c, aloc(c, v), "attribute 'value' mixes bool and numbers");
  } else if (v->kind == GC_ATTR_FLOAT) {
    has_f = 1;
  } else if (v->kind == GC_ATTR_INT && !GC_DIM_IS_SYM(v->u.i)) {
    has_i = 1;
  } else if (v->kind == GC_ATTR_BOOL) {
    has_b = 1;
  } else {
    return fail(c, aloc(c, v), "attribute 'value' expects a scalar or a list, got %s",
                kind_name(v));
  }
  gc_dtype dflt = has_f ? GRAPHC_DTYPE_F32 : has_i ? GRAPHC_DTYPE_I64 : GRAPHC_DTYPE_BOOL;
  gc_type t = {0};
  if (!attr_dtype(c, dflt, &t.dtype, &da)) return 0;
  if (gc_op_attr(op, "shape")) {
    int n;
    if (!attr_dims(c, "shape", 0, t.dims, &n, &sa)) return 0;
    t.rank = n;
  } else if (len >= 0) {
    t.rank = 1;
    t.dims[0] = len;
  }
  if (len >= 0) {
    prod p = {.c = 1};
    for (int i = 0; i < t.rank; i++) prod_mul(&p, t.dims[i]);
    if (p.n > 0)
      return fail(c, aloc(c, sa),
                  "shape %s must be concrete for a list value; bind symbolic dim %s",
                  dims_str(c, t.dims, t.rank), dim_str(c, p.syms[0]));
    if (p.ovf || p.c != len)
      return fail(c, aloc(c, sa), "shape %s has %s elements but the value list has %d",
                  dims_str(c, t.dims, t.rank), p.ovf ? "too many" : prod_str(c, &p), len);
  }
  out[0] = t;
  return 1;
}

/* iota: index along `axis` of a tensor of `shape`. */
static int gc_infer_iota(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  gc_type t = {0};
  const gc_attr *sa, *da;
  int n, axis;
  if (!attr_dims(c, "shape", 0, t.dims, &n, &sa)) return 0;
  t.rank = n;
  if (!get_axis(c, "axis", 0, t.rank, &axis)) return 0;
  if (!attr_dtype(c, GRAPHC_DTYPE_I64, &t.dtype, &da)) return 0;
  if (!dt_in(t.dtype, DT_NUM))
    return fail(c, aloc(c, da), "dtype %s is not allowed; expected %s", dtn(t.dtype),
                dt_expect[DT_NUM]);
  out[0] = t;
  return 1;
}

/* ---- rules: unary elementwise ------------------------------------------------------------ */

/* neg abs relu: numeric, same type. */
static int gc_infer_unary_num(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  if (!want_dt(c, 0, DT_NUM)) return 0;
  out[0] = *in(c, 0);
  return 1;
}

/* exp log sqrt ...: float, same type. */
static int gc_infer_unary_float(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  if (!want_dt(c, 0, DT_FLOAT)) return 0;
  out[0] = *in(c, 0);
  return 1;
}

/* not: bool, same type. */
static int gc_infer_unary_bool(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  if (!want_dt(c, 0, DT_BOOL)) return 0;
  out[0] = *in(c, 0);
  return 1;
}

/* gelu: float; approximate is "none" or "tanh". */
static int gc_infer_gelu(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  const gc_attr *a = gc_op_attr(op, "approximate");
  if (a && a->kind != GC_ATTR_STR)
    return fail(c, aloc(c, a), "attribute 'approximate' expects str, got %s", kind_name(a));
  if (a && strcmp(a->u.s, "none") != 0 && strcmp(a->u.s, "tanh") != 0)
    return fail(c, aloc(c, a), "approximate must be \"none\" or \"tanh\", got \"%s\"", a->u.s);
  if (!want_dt(c, 0, DT_FLOAT)) return 0;
  out[0] = *in(c, 0);
  return 1;
}

/* Is a a scalar attribute (int, float or bool)? */
static int is_scalar(const gc_attr *a) {
  return a->kind == GC_ATTR_FLOAT || a->kind == GC_ATTR_BOOL ||
         (a->kind == GC_ATTR_INT && !GC_DIM_IS_SYM(a->u.i));
}

/* clamp: numeric; at least one of min and max. */
static int gc_infer_clamp(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  const gc_attr *lo = gc_op_attr(op, "min"), *hi = gc_op_attr(op, "max");
  if (!lo && !hi) return fail(c, op->loc, "needs at least one of the attributes 'min' and 'max'");
  if (lo && !is_scalar(lo))
    return fail(c, aloc(c, lo), "attribute 'min' expects a scalar, got %s", kind_name(lo));
  if (hi && !is_scalar(hi))
    return fail(c, aloc(c, hi), "attribute 'max' expects a scalar, got %s", kind_name(hi));
  if (!want_dt(c, 0, DT_NUM)) return 0;
  out[0] = *in(c, 0);
  return 1;
}

/* cast: same shape, dtype `to`. */
static int gc_infer_cast(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  const gc_attr *a = gc_op_attr(op, "to");
  if (!a) return fail(c, op->loc, "missing required attribute 'to'");
  if (a->kind != GC_ATTR_DTYPE)
    return fail(c, aloc(c, a), "attribute 'to' expects dtype, got %s", kind_name(a));
  out[0] = *in(c, 0);
  out[0].dtype = a->u.dt;
  return 1;
}

/* ---- rules: binary elementwise ---------------------------------------------------------- */

/* Shared: same dtype of class cls, broadcast shapes; result dtype res (-1: operand's). */
static int binary(ictx *c, int cls, int res, gc_type *out) {
  if (!same_dt(c, 0, 1) || (cls >= 0 && !want_dt(c, 0, cls))) return 0;
  if (!bcast2(c, in(c, 0), in(c, 1), out)) return 0;
  if (res >= 0) out->dtype = (gc_dtype)res;
  return 1;
}

/* add sub mul div maximum minimum. */
static int gc_infer_binary_num(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  return binary(c, DT_NUM, -1, out);
}

/* pow. */
static int gc_infer_binary_float(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  return binary(c, DT_FLOAT, -1, out);
}

/* and or. */
static int gc_infer_binary_bool(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  return binary(c, DT_BOOL, -1, out);
}

/* hash_uniform: two index-typed operands (i32 / i64, each its own), broadcast; f32. */
static int gc_infer_hash_uniform(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  if (!want_dt(c, 0, DT_INDEX) || !want_dt(c, 1, DT_INDEX) || !bcast2(c, in(c, 0), in(c, 1), out)) return 0;
  out->dtype = GRAPHC_DTYPE_F32;
  return 1;
}

/* eq ne lt le gt ge: any dtype, bool result. */
static int gc_infer_compare(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  return binary(c, DT_VALUE, GRAPHC_DTYPE_BOOL, out);
}

/* select(cond, a, b): cond bool, a and b one dtype, all three broadcast. */
static int gc_infer_select(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  if (!want_dt(c, 0, DT_BOOL) || !want_dt(c, 1, DT_VALUE)) return 0;
  if (in(c, 1)->dtype != in(c, 2)->dtype)
    return fail(c, op->loc, "dtypes differ: %s and %s", dtn(in(c, 1)->dtype),
                dtn(in(c, 2)->dtype));
  gc_type ab;
  if (!bcast2(c, in(c, 1), in(c, 2), &ab)) return 0;
  gc_type t = {.dtype = ab.dtype};
  if (!bcast_dims(in(c, 0)->dims, in(c, 0)->rank, ab.dims, ab.rank, t.dims, &t.rank))
    return fail(c, op->loc, "cannot broadcast condition %s with %s", ty(c, in(c, 0)), ty(c, &ab));
  out[0] = t;
  return 1;
}

/* ---- rules: reductions ------------------------------------------------------------------ */

/* Shared: reduce over `axes` (default all, unique) with keepdims. */
static int reduce(ictx *c, int cls, gc_type *out) {
  if (!want_dt(c, 0, cls)) return 0;
  const gc_type *x = in(c, 0);
  int64_t axes[MAX_LIST];
  int n, keep, red[GC_MAX_RANK] = {0};
  const gc_attr *aa;
  if (!attr_ints(c, "axes", axes, &n, &aa) || !attr_bool(c, "keepdims", 0, &keep)) return 0;
  if (n < 0)
    for (int i = 0; i < x->rank; i++) red[i] = 1;
  for (int i = 0; i < n; i++) {
    int ax = 0;
    if (!norm_axis(c, iloc(c, aa, i), axes[i], x->rank, &ax)) return 0;
    if (red[ax])
      return fail(c, iloc(c, aa, i), "axis %lld appears twice in axes (rank %d)",
                  (long long)axes[i], x->rank);
    red[ax] = 1;
  }
  gc_type t = {.dtype = x->dtype};
  for (int i = 0; i < x->rank; i++) {
    if (!red[i])
      t.dims[t.rank++] = x->dims[i];
    else if (keep)
      t.dims[t.rank++] = 1;
  }
  out[0] = t;
  return 1;
}

/* reduce_sum reduce_max reduce_min: numeric. */
static int gc_infer_reduce(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  return reduce(c, DT_NUM, out);
}

/* reduce_mean: float. */
static int gc_infer_reduce_float(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  return reduce(c, DT_FLOAT, out);
}

/* argmax: numeric, i64 result without (or with size 1 at) axis. */
static int gc_infer_argmax(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  const gc_type *x = in(c, 0);
  int axis, keep;
  if (!want_dt(c, 0, DT_NUM) || !get_axis(c, "axis", -1, x->rank, &axis) ||
      !attr_bool(c, "keepdims", 0, &keep))
    return 0;
  gc_type t = {.dtype = GRAPHC_DTYPE_I64};
  for (int i = 0; i < x->rank; i++) {
    if (i != axis)
      t.dims[t.rank++] = x->dims[i];
    else if (keep)
      t.dims[t.rank++] = 1;
  }
  out[0] = t;
  return 1;
}

/* ---- rules: normalizations -------------------------------------------------------------- */

/* softmax log_softmax: float, axis in range. */
static int gc_infer_softmax(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  int axis;
  if (!want_dt(c, 0, DT_FLOAT) || !get_axis(c, "axis", -1, in(c, 0)->rank, &axis)) return 0;
  out[0] = *in(c, 0);
  return 1;
}

/* Operand i (a scale/shift) must be dtype of x and shape x.shape[axis:]. */
static int norm_param(ictx *c, int i, const char *what, int axis) {
  const gc_type *x = in(c, 0), *p = in(c, i);
  if (p->dtype != x->dtype)
    return fail(c, c->op->loc, "dtypes differ: x is %s, %s is %s", dtn(x->dtype), what,
                dtn(p->dtype));
  int ok = p->rank == x->rank - axis;
  for (int k = 0; ok && k < p->rank; k++) ok = p->dims[k] == x->dims[axis + k];
  if (!ok)
    return fail(c, c->op->loc, "%s must have shape %s (x.shape[%d:] of %s), got %s", what,
                dims_str(c, x->dims + axis, x->rank - axis), axis, ty(c, x), ty(c, p));
  return 1;
}

/* Optional eps attribute (any number). */
static int check_eps(ictx *c) {
  double eps = 0;
  return attr_float(c, "eps", &eps);
}

/* layernorm(x, gamma, beta): float; gamma, beta shaped x.shape[axis:]. */
static int gc_infer_layernorm(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  int axis;
  if (!want_dt(c, 0, DT_FLOAT) || !get_axis(c, "axis", -1, in(c, 0)->rank, &axis) ||
      !check_eps(c))
    return 0;
  if (!norm_param(c, 1, "gamma", axis) || !norm_param(c, 2, "beta", axis)) return 0;
  out[0] = *in(c, 0);
  return 1;
}

/* rmsnorm(x, gamma): float; gamma shaped [last]. */
static int gc_infer_rmsnorm(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  if (!want_dt(c, 0, DT_FLOAT) || !check_eps(c)) return 0;
  if (in(c, 0)->rank < 1)
    return fail(c, op->loc, "x must have rank >= 1, got %s", ty(c, in(c, 0)));
  if (!norm_param(c, 1, "gamma", in(c, 0)->rank - 1)) return 0;
  out[0] = *in(c, 0);
  return 1;
}

/* ---- rules: contractions ---------------------------------------------------------------- */

/* matmul: [..., M, K] x [..., K, N] -> [..., M, N] with batch broadcasting; same dtype in and
 * out, except that two fp8 operands (f8e4m3 / f8e5m2, either with either) give f32 (the
 * products are exact in f32 and summed there, as fp8 tensor cores do; scales go in the
 * epilogue: passes/qdq_fold.c writes this form), and two 8-bit integer operands (i8 / u8,
 * either with either) give i32, summed with wrapping like the integer tensor cores and ONNX
 * MatMulInteger. `act_amax` (a finite number >= 0) is a hint only --precision fp8 reads: the
 * calibrated max |a| (graphc_model_calibrate), which makes a's fp8 scale a constant. */
static int gc_infer_matmul(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  const gc_type *a = in(c, 0), *b = in(c, 1);
  int ta, tb;
  double amax = 0;
  if (!attr_bool(c, "transpose_a", 0, &ta) || !attr_bool(c, "transpose_b", 0, &tb) ||
      !attr_float(c, "act_amax", &amax))
    return 0;
  if (!(amax >= 0 && amax <= 3.0e38))
    return fail(c, aloc(c, gc_op_attr(op, "act_amax")), "attribute 'act_amax' must be finite and >= 0, got %g",
                amax);
  if (a->rank < 2) return fail(c, op->loc, "a must have rank >= 2, got %s", ty(c, a));
  if (b->rank < 2) return fail(c, op->loc, "b must have rank >= 2, got %s", ty(c, b));
  int f8 = gc_dtype_is_f8(a->dtype) && gc_dtype_is_f8(b->dtype) && !gc_dtype_is_fnuz(a->dtype) &&
           !gc_dtype_is_fnuz(b->dtype);  /* no fnuz matmul: no tensor core reads it */
  int i8 = (a->dtype == GRAPHC_DTYPE_I8 || a->dtype == GRAPHC_DTYPE_U8) &&
           (b->dtype == GRAPHC_DTYPE_I8 || b->dtype == GRAPHC_DTYPE_U8);
  if (!f8 && !i8 && (!same_dt(c, 0, 1) || !want_dt(c, 0, DT_NUM))) return 0;
  int ra = a->rank, rb = b->rank;
  int64_t m = a->dims[ra - (ta ? 1 : 2)], ka = a->dims[ra - (ta ? 2 : 1)];
  int64_t kb = b->dims[rb - (tb ? 1 : 2)], n = b->dims[rb - (tb ? 2 : 1)];
  if (ka != kb)
    return fail(c, op->loc, "contracting dims differ: a is %s (K=%s), b is %s (K=%s)", ty(c, a),
                dim_str(c, ka), ty(c, b), dim_str(c, kb));
  gc_type t = {.dtype = f8 ? GRAPHC_DTYPE_F32 : i8 ? GRAPHC_DTYPE_I32 : a->dtype};
  if (!bcast_dims(a->dims, ra - 2, b->dims, rb - 2, t.dims, &t.rank))
    return fail(c, op->loc, "batch dims do not broadcast: a is %s, b is %s", ty(c, a), ty(c, b));
  t.dims[t.rank++] = m;
  t.dims[t.rank++] = n;
  out[0] = t;
  return 1;
}

/* A list of exactly 2 ints >= lo (default dflt0, dflt1 when absent). */
static int pair_attr(ictx *c, const char *name, int64_t lo, int64_t dflt0, int64_t dflt1,
                     int64_t *v) {
  const gc_attr *a;
  int n;
  if (!attr_ints(c, name, v, &n, &a)) return 0;
  if (n < 0) {
    if (dflt0 < 0) return fail(c, c->op->loc, "missing required attribute '%s'", name);
    v[0] = dflt0;
    v[1] = dflt1;
    return 1;
  }
  if (n != 2) return fail(c, aloc(c, a), "attribute '%s' needs 2 entries, got %d", name, n);
  for (int i = 0; i < 2; i++)
    if (v[i] < lo || v[i] >= DIM_LIMIT)
      return fail(c, iloc(c, a, i), "attribute '%s' entries must be >= %lld, got %lld", name,
                  (long long)lo, (long long)v[i]);
  return 1;
}

/* padding: [ph, pw] or [top, left, bottom, right], all >= 0, into p[4] (t, l, b, r). */
static int padding_attr(ictx *c, int64_t *p) {
  const gc_attr *a;
  int64_t v[MAX_LIST];
  int n;
  if (!attr_ints(c, "padding", v, &n, &a)) return 0;
  if (n < 0) {
    p[0] = p[1] = p[2] = p[3] = 0;
    return 1;
  }
  if (n != 2 && n != 4)
    return fail(c, aloc(c, a), "attribute 'padding' needs 2 or 4 entries, got %d", n);
  for (int i = 0; i < n; i++)
    if (v[i] < 0 || v[i] >= DIM_LIMIT)
      return fail(c, iloc(c, a, i), "attribute 'padding' entries must be >= 0, got %lld",
                  (long long)v[i]);
  p[0] = v[0];
  p[1] = v[1];
  p[2] = n == 4 ? v[2] : v[0];
  p[3] = n == 4 ? v[3] : v[1];
  return 1;
}

/* Output size of a window op along one spatial axis (>= 1 or an error). */
static int window_out(ictx *c, int axis, int64_t size, int64_t lo, int64_t hi, int64_t dil,
                      int64_t k, int64_t stride, int64_t *out) {
  __int128 num = (__int128)size + lo + hi - (__int128)dil * (k - 1) - 1;
  if (num < 0)
    return fail(c, c->op->loc,
                "output size along axis %d would be < 1: input %lld, padding %lld+%lld, "
                "kernel %lld, dilation %lld",
                axis, (long long)size, (long long)lo, (long long)hi, (long long)k,
                (long long)dil);
  __int128 o = num / stride + 1;
  if (!dim_fits(c, o, axis)) return 0;
  *out = (int64_t)o;
  return 1;
}

/* The input of conv/pool must be rank 4 [N, C, H, W] and float. */
static int check_nchw(ictx *c, int i, const char *what, const char *layout) {
  if (in(c, i)->rank != 4)
    return fail(c, c->op->loc, "%s must have rank 4 %s, got %s", what, layout, ty(c, in(c, i)));
  return 1;
}

/* layout attribute: absent or "nchw" -> 0, "nhwc" -> 1; -1 reported. */
static int layout_attr(ictx *c) {
  const gc_attr *a = gc_op_attr(c->op, "layout");
  if (!a) return 0;
  if (a->kind != GC_ATTR_STR)
    return fail(c, aloc(c, a), "attribute 'layout' expects str, got %s", kind_name(a)) - 1;
  if (strcmp(a->u.s, "nchw") == 0) return 0;
  if (strcmp(a->u.s, "nhwc") == 0) return 1;
  return fail(c, aloc(c, a), "layout must be \"nchw\" or \"nhwc\", got \"%s\"", a->u.s) - 1;
}

/* conv2d(x [N, C, H, W], w [O, C/groups, KH, KW]); layout="nhwc": x [N, H, W, C] -> [N, OH, OW, O]. */
static int gc_infer_conv2d(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  const gc_type *x = in(c, 0), *w = in(c, 1);
  int64_t stride[MAX_LIST], dil[MAX_LIST], pad[4], groups;
  if (!pair_attr(c, "stride", 1, 1, 1, stride) || !pair_attr(c, "dilation", 1, 1, 1, dil) ||
      !padding_attr(c, pad) || !attr_int(c, "groups", 1, &groups))
    return 0;
  if (groups < 1)
    return fail(c, aloc(c, gc_op_attr(op, "groups")), "groups must be >= 1, got %lld",
                (long long)groups);
  int nhwc = layout_attr(c);
  if (nhwc < 0) return 0;
  int ac = nhwc ? 3 : 1, ah = nhwc ? 1 : 2;  /* axes of C and H (W follows) */
  if (!check_nchw(c, 0, "x", nhwc ? "[N, H, W, C]" : "[N, C, H, W]") ||
      !check_nchw(c, 1, "w", "[O, C/groups, KH, KW]"))
    return 0;
  if (!same_dt(c, 0, 1) || !want_dt(c, 0, DT_FLOAT)) return 0;
  int64_t C = x->dims[ac], O = w->dims[0];
  if (groups > 1) {
    if (GC_DIM_IS_SYM(C)) return need_concrete(c, ac, C, "");
    if (GC_DIM_IS_SYM(O)) return need_concrete(c, 0, O, " of w");
    if (C % groups)
      return fail(c, aloc(c, gc_op_attr(op, "groups")),
                  "input channels %lld of x %s are not divisible by groups=%lld", (long long)C,
                  ty(c, x), (long long)groups);
    if (O % groups)
      return fail(c, aloc(c, gc_op_attr(op, "groups")),
                  "output channels %lld of w %s are not divisible by groups=%lld", (long long)O,
                  ty(c, w), (long long)groups);
  }
  int64_t cg = groups > 1 ? C / groups : C;
  if (w->dims[1] != cg)
    return fail(c, op->loc,
                "w has %s input channels per group, expected %s (C=%s / groups=%lld); x is %s, "
                "w is %s",
                dim_str(c, w->dims[1]), dim_str(c, cg), dim_str(c, C), (long long)groups,
                ty(c, x), ty(c, w));
  gc_type t = {.dtype = x->dtype, .rank = 4};
  t.dims[0] = x->dims[0];
  t.dims[ac] = O;
  for (int s = 0; s < 2; s++) {
    int64_t size = x->dims[ah + s], k = w->dims[2 + s];
    if (GC_DIM_IS_SYM(k)) return need_concrete(c, 2 + s, k, " of w");
    if (GC_DIM_IS_SYM(size)) return need_concrete(c, ah + s, size, "");
    if (!window_out(c, ah + s, size, pad[s], pad[2 + s], dil[s], k, stride[s], &t.dims[ah + s]))
      return 0;
  }
  out[0] = t;
  return 1;
}

/* max_pool2d avg_pool2d(x [N, C, H, W], kernel, stride=kernel, padding);
 * layout="nhwc": x [N, H, W, C] -> [N, OH, OW, C]. */
static int gc_infer_pool2d(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  const gc_type *x = in(c, 0);
  int64_t k[MAX_LIST], stride[MAX_LIST], pad[4];
  if (!pair_attr(c, "kernel", 1, -1, -1, k) || !pair_attr(c, "stride", 1, k[0], k[1], stride) ||
      !padding_attr(c, pad))
    return 0;
  int nhwc = layout_attr(c);
  if (nhwc < 0) return 0;
  int ah = nhwc ? 1 : 2;  /* axis of H (W follows) */
  for (int i = 0; i < 4; i++)
    if (pad[i] >= k[i & 1])
      return fail(c, aloc(c, gc_op_attr(op, "padding")),
                  "padding %lld must be smaller than the kernel size %lld along axis %d",
                  (long long)pad[i], (long long)k[i & 1], ah + (i & 1));
  if (!check_nchw(c, 0, "x", nhwc ? "[N, H, W, C]" : "[N, C, H, W]") || !want_dt(c, 0, DT_FLOAT))
    return 0;
  gc_type t = *x;
  for (int s = 0; s < 2; s++) {
    int64_t size = x->dims[ah + s];
    if (GC_DIM_IS_SYM(size)) return need_concrete(c, ah + s, size, "");
    if (!window_out(c, ah + s, size, pad[s], pad[2 + s], 1, k[s], stride[s], &t.dims[ah + s]))
      return 0;
  }
  out[0] = t;
  return 1;
}

/* im2col(x [N, C, H, W], kernel, stride, padding, dilation) -> [N, C*KH*KW, OH*OW];
 * layout="nhwc": x [N, H, W, C] -> [N*OH*OW, KH*KW*C]. */
static int gc_infer_im2col(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  const gc_type *x = in(c, 0);
  int64_t k[MAX_LIST], stride[MAX_LIST], dil[MAX_LIST], pad[4], o[2];
  if (!pair_attr(c, "kernel", 1, -1, -1, k) || !pair_attr(c, "stride", 1, 1, 1, stride) ||
      !pair_attr(c, "dilation", 1, 1, 1, dil) || !padding_attr(c, pad))
    return 0;
  int nhwc = layout_attr(c);
  if (nhwc < 0) return 0;
  if (!check_nchw(c, 0, "x", nhwc ? "[N, H, W, C]" : "[N, C, H, W]")) return 0;
  int ac = nhwc ? 3 : 1, ah = nhwc ? 1 : 2;  /* axes of C and H (W follows H) */
  int64_t C = x->dims[ac];
  if (GC_DIM_IS_SYM(C)) return need_concrete(c, ac, C, "");
  for (int s = 0; s < 2; s++) {
    int64_t size = x->dims[ah + s];
    if (GC_DIM_IS_SYM(size)) return need_concrete(c, ah + s, size, "");
    if (!window_out(c, ah + s, size, pad[s], pad[2 + s], dil[s], k[s], stride[s], &o[s])) return 0;
  }
  gc_type t = {.dtype = x->dtype, .rank = nhwc ? 2 : 3};
  if (!dim_fits(c, (__int128)C * k[0] * k[1], 1) || !dim_fits(c, (__int128)o[0] * o[1], 2)) return 0;
  if (nhwc) {
    if (GC_DIM_IS_SYM(x->dims[0])) return need_concrete(c, 0, x->dims[0], "");
    if (!dim_fits(c, (__int128)x->dims[0] * o[0] * o[1], 0)) return 0;
    t.dims[0] = x->dims[0] * o[0] * o[1];
    t.dims[1] = k[0] * k[1] * C;
  } else {
    t.dims[0] = x->dims[0];
    t.dims[1] = C * k[0] * k[1];
    t.dims[2] = o[0] * o[1];
  }
  out[0] = t;
  return 1;
}

/* ---- rules: data movement ------------------------------------------------------------ */

/* The graph whose symbol table inference may extend with derived symbols (a
 * reshape's -1 over symbolic dims, a concat along a symbolic axis). Adding a
 * symbol does not change any existing type, so inference stays a query. */
static gc_graph *sym_graph(ictx *c) { return (gc_graph *)c->g; }

/* Product of dims[0..n) as a symbol expression (skipping index `skip`). */
static const gc_sym_expr *dims_prod(ictx *c, const int64_t *dims, int n, int skip) {
  gc_graph *g = sym_graph(c);
  const gc_sym_expr *e = gc_sx_const(g, 1);
  for (int i = 0; i < n && e; i++)
    if (i != skip) e = gc_sx_mul(g, e, gc_sx_dim(g, dims[i]));
  return e;
}

/* An expression as text, for messages. */
static const char *sx_str(ictx *c, const gc_sym_expr *e) {
  gc_sbuf b = {0};
  if (e) gc_sx_print(&b, c->g, e);
  else gc_sbuf_puts(&b, "(too large)");
  return ring(c, &b);
}

/* A symbolic result dim for e: a constant, a base symbol or a derived one. */
static int sym_dim(ictx *c, const gc_sym_expr *e, int axis, int64_t *out) {
  if (!e) return fail(c, c->op->loc, "result dim %d overflows", axis);
  if (e->kind == GC_SX_CONST && (e->c < 1 || e->c >= DIM_LIMIT))
    return fail(c, c->op->loc, "result dim %d is %lld", axis, (long long)e->c);
  int64_t v = gc_sym_intern(sym_graph(c), e);
  if (v < 0) return fail(c, c->op->loc, "out of memory adding a derived symbol");
  *out = v;
  return 1;
}

/* Are the dims (a -1 allowed) all integers? */
static int concrete_dims(const int64_t *d, int n) {
  for (int i = 0; i < n; i++)
    if (GC_DIM_IS_SYM(d[i])) return 0;
  return 1;
}

/* reshape of concrete dims: integer element counts, no symbol expressions built. */
static int reshape_concrete(ictx *c, const gc_type *x, gc_type *t, int hole, const gc_attr *sa,
                            gc_type *out) {
  prod px = {.c = 1}, ps = {.c = 1};
  for (int i = 0; i < x->rank; i++) prod_mul(&px, x->dims[i]);
  for (int i = 0; i < t->rank; i++)
    if (i != hole) prod_mul(&ps, t->dims[i]);
  if (px.ovf || ps.ovf)
    return fail(c, aloc(c, sa), "element count of %s or of shape %s overflows", ty(c, x),
                dims_str(c, t->dims, t->rank));
  if (hole >= 0 && ps.c == 0)
    return fail(c, aloc(c, sa), "cannot infer -1 in %s: the other entries have zero elements",
                dims_str(c, t->dims, t->rank));
  if (hole < 0 ? px.c != ps.c : px.c % ps.c != 0)
    return fail(c, aloc(c, sa), hole < 0 ? "cannot reshape %s (%s elements) to %s (%s elements)"
                                         : "cannot infer -1 in %s for %s: %s elements are not divisible by %s",
                hole < 0 ? ty(c, x) : dims_str(c, t->dims, t->rank),
                hole < 0 ? prod_str(c, &px) : ty(c, x), hole < 0 ? dims_str(c, t->dims, t->rank)
                                                                : prod_str(c, &px),
                prod_str(c, &ps));
  if (hole >= 0) t->dims[hole] = px.c / ps.c;
  out[0] = *t;
  return 1;
}

/* reshape: same element count (as canonical products); one -1 solved, a derived
 * symbol when the quotient is not a constant or a base symbol. */
static int gc_infer_reshape(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  const gc_type *x = in(c, 0);
  gc_type t = {.dtype = x->dtype};
  const gc_attr *sa;
  int n, hole = -1;
  if (!attr_dims(c, "shape", 1, t.dims, &n, &sa)) return 0;
  t.rank = n;
  for (int i = 0; i < n; i++)
    if (t.dims[i] == -1) hole = i;
  if (gc_type_is_concrete(x) && concrete_dims(t.dims, n)) return reshape_concrete(c, x, &t, hole, sa, out);
  const gc_sym_expr *px = dims_prod(c, x->dims, x->rank, -1), *ps = dims_prod(c, t.dims, n, hole);
  if (!px || !ps)
    return fail(c, aloc(c, sa), "element count of %s or of shape %s overflows", ty(c, x),
                dims_str(c, t.dims, n));
  if (hole < 0) {
    if (gc_sx_cmp(px, ps) != 0)
      return fail(c, aloc(c, sa), "cannot reshape %s (%s elements) to %s (%s elements)",
                  ty(c, x), sx_str(c, px), dims_str(c, t.dims, n), sx_str(c, ps));
    out[0] = t;
    return 1;
  }
  const gc_sym_expr *q = gc_sx_exact_div(sym_graph(c), px, ps);
  if (!q)
    return fail(c, aloc(c, sa), "cannot infer -1 in %s for %s: %s elements are not divisible by %s",
                dims_str(c, t.dims, n), ty(c, x), sx_str(c, px), sx_str(c, ps));
  if (!sym_dim(c, q, hole, &t.dims[hole])) return 0;
  out[0] = t;
  return 1;
}

/* transpose: out.dims[i] = in.dims[perm[i]], perm a permutation of 0..rank-1. */
static int gc_infer_transpose(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  const gc_type *x = in(c, 0);
  const gc_attr *pa;
  int64_t perm[MAX_LIST];
  int n, seen[GC_MAX_RANK] = {0};
  if (!attr_ints(c, "perm", perm, &n, &pa)) return 0;
  if (n < 0) return fail(c, op->loc, "missing required attribute 'perm'");
  if (n != x->rank)
    return fail(c, aloc(c, pa), "perm has %d entries, but the input %s has rank %d", n,
                ty(c, x), x->rank);
  gc_type t = {.dtype = x->dtype, .rank = n};
  for (int i = 0; i < n; i++) {
    if (perm[i] < 0 || perm[i] >= n || seen[perm[i]])
      return fail(c, iloc(c, pa, i), "perm %s is not a permutation of 0..%d",
                  dims_str(c, perm, n), n - 1);
    seen[perm[i]] = 1;
    t.dims[i] = x->dims[perm[i]];
  }
  out[0] = t;
  return 1;
}

/* broadcast: numpy broadcast of the input to `shape`. */
static int gc_infer_broadcast(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  const gc_type *x = in(c, 0);
  gc_type t = {.dtype = x->dtype};
  const gc_attr *sa;
  int n;
  if (!attr_dims(c, "shape", 0, t.dims, &n, &sa)) return 0;
  t.rank = n;
  if (n < x->rank)
    return fail(c, aloc(c, sa), "cannot broadcast %s to %s: the target rank %d is smaller",
                ty(c, x), dims_str(c, t.dims, n), n);
  for (int i = 0; i < x->rank; i++) {
    int64_t s = x->dims[i], o = t.dims[n - x->rank + i];
    if (s != 1 && s != o)
      return fail(c, aloc(c, sa), "cannot broadcast %s to %s: dim %d is %s, target %s", ty(c, x),
                  dims_str(c, t.dims, n), i, dim_str(c, s), dim_str(c, o));
  }
  out[0] = t;
  return 1;
}

/* concat: same dtype and rank, dims equal except along axis (summed). */
static int gc_infer_concat(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  const gc_type *x = in(c, 0);
  int axis;
  const gc_attr *aa = gc_op_attr(op, "axis");
  if (!aa) return fail(c, op->loc, "missing required attribute 'axis'");
  if (!get_axis(c, "axis", 0, x->rank, &axis)) return 0;
  __int128 sum = 0;
  int symbolic = 0;
  for (int i = 0; i < op->n_operands; i++) {
    const gc_type *y = in(c, i);
    if (y->dtype != x->dtype)
      return fail(c, op->loc, "dtypes differ: operand 0 is %s, operand %d is %s", dtn(x->dtype),
                  i, dtn(y->dtype));
    int ok = y->rank == x->rank;
    for (int k = 0; ok && k < x->rank; k++) ok = k == axis || y->dims[k] == x->dims[k];
    if (!ok)
      return fail(c, op->loc, "operand %d is %s, which does not match %s outside axis %d", i,
                  ty(c, y), ty(c, x), axis);
    if (GC_DIM_IS_SYM(y->dims[axis])) symbolic = 1;
    else sum += y->dims[axis];
  }
  gc_type t = *x;
  if (op->n_operands > 1 && symbolic) {
    const gc_sym_expr *e = gc_sx_const(sym_graph(c), 0);
    for (int i = 0; i < op->n_operands; i++)
      e = gc_sx_add(sym_graph(c), e, gc_sx_dim(sym_graph(c), in(c, i)->dims[axis]));
    if (!sym_dim(c, e, axis, &t.dims[axis])) return 0;
  } else if (op->n_operands > 1) {
    if (!dim_fits(c, sum, axis)) return 0;
    t.dims[axis] = (int64_t)sum;
  }
  out[0] = t;
  return 1;
}

/* Read a per-dim int list (one entry per dim); dflt fills it when absent (NULL: required). */
static int per_dim(ictx *c, const char *name, int rank, const int64_t *dflt, int64_t *v,
                   const gc_attr **ap) {
  int n;
  if (!attr_ints(c, name, v, &n, ap)) return 0;
  if (n < 0) {
    if (!dflt) return fail(c, c->op->loc, "missing required attribute '%s'", name);
    memcpy(v, dflt, sizeof(int64_t) * (size_t)rank);
    return 1;
  }
  if (n != rank)
    return fail(c, aloc(c, *ap), "attribute '%s' has %d entries, expected %d (one per dim)", name,
                n, rank);
  return 1;
}

/* Length of a slice of symbolic dim D: start >= 0 (or D + start when start < 0 and
 * the range of D keeps it in bounds is not known: then an error); end >= 0 gives
 * min(D, end), end < 0 gives D + end; length ceildiv(end - start, step). A length
 * that is not positive at some binding is an error then (gc_graph_eval_syms). */
static int sym_slice(ictx *c, int axis, int64_t dim, int64_t s, int64_t e, int64_t step, int64_t *out) {
  gc_graph *g = sym_graph(c);
  const gc_sym_expr *D = gc_sx_dim(g, dim), *end;
  if (s < 0) return need_concrete(c, axis, dim, " (a negative start)");
  if (GC_DIM_IS_SYM(e)) end = gc_sx_op(g, GC_SX_MIN, D, gc_sx_dim(g, e));
  else if (e >= DIM_LIMIT - 1) end = D;
  else if (e >= 0) end = gc_sx_op(g, GC_SX_MIN, D, gc_sx_const(g, e));
  else end = gc_sx_add(g, D, gc_sx_const(g, e));
  const gc_sym_expr *len = gc_sx_op(g, GC_SX_CEILDIV, gc_sx_add(g, end, gc_sx_const(g, -s)),
                                    gc_sx_const(g, step));
  return sym_dim(c, len, axis, out);
}

/* slice: per-dim start/end (negative from the end, clamped) and step >= 1. */
static int gc_infer_slice(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  const gc_type *x = in(c, 0);
  int64_t st[MAX_LIST], en[MAX_LIST], sp[MAX_LIST], ones[GC_MAX_RANK];
  const gc_attr *sa, *ea, *pa;
  for (int i = 0; i < GC_MAX_RANK; i++) ones[i] = 1;
  if (!per_dim(c, "start", x->rank, NULL, st, &sa) || !per_dim(c, "end", x->rank, NULL, en, &ea) ||
      !per_dim(c, "step", x->rank, ones, sp, &pa))
    return 0;
  gc_type t = *x;
  for (int i = 0; i < x->rank; i++) {
    int64_t dim = x->dims[i];
    if (sp[i] < 1)
      return fail(c, iloc(c, pa, i), "step must be >= 1, got %lld at axis %d", (long long)sp[i],
                  i);
    if (GC_DIM_IS_SYM(dim) || is_graph_sym(c, en[i])) {
      if (st[i] == 0 && sp[i] == 1 && en[i] >= DIM_LIMIT - 1 && !is_graph_sym(c, en[i]))
        continue; /* the whole range */
      if (!sym_slice(c, i, dim, st[i], en[i], sp[i], &t.dims[i])) return 0;
      continue;
    }
    int64_t s = st[i] < 0 ? st[i] + dim : st[i], e = en[i] < 0 ? en[i] + dim : en[i];
    s = s < 0 ? 0 : s > dim ? dim : s;
    e = e < 0 ? 0 : e > dim ? dim : e;
    int64_t len = e > s ? (e - s) / sp[i] + ((e - s) % sp[i] != 0) : 0;
    t.dims[i] = len;  /* 0: an empty slice */
  }
  out[0] = t;
  return 1;
}

/* pad: pads = [begin_0..begin_{r-1}, end_0..end_{r-1}], all >= 0. */
static int gc_infer_pad(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  const gc_type *x = in(c, 0);
  const gc_attr *pa, *va = gc_op_attr(op, "value");
  int64_t p[MAX_LIST];
  int n, r = x->rank;
  if (va && !is_scalar(va))
    return fail(c, aloc(c, va), "attribute 'value' expects a scalar, got %s", kind_name(va));
  if (!attr_ints(c, "pads", p, &n, &pa)) return 0;
  if (n < 0) return fail(c, op->loc, "missing required attribute 'pads'");
  if (n != 2 * r)
    return fail(c, aloc(c, pa),
                "attribute 'pads' has %d entries, expected %d (begin and end for each of %d dims)",
                n, 2 * r, r);
  gc_type t = *x;
  for (int i = 0; i < n; i++)
    if (p[i] < 0 || p[i] >= DIM_LIMIT)
      return fail(c, iloc(c, pa, i), "pads entries must be >= 0, got %lld", (long long)p[i]);
  for (int i = 0; i < r; i++) {
    if (p[i] == 0 && p[r + i] == 0) continue;
    if (GC_DIM_IS_SYM(x->dims[i])) return need_concrete(c, i, x->dims[i], "");
    if (!dim_fits(c, (__int128)x->dims[i] + p[i] + p[r + i], i)) return 0;
    t.dims[i] = x->dims[i] + p[i] + p[r + i];
  }
  out[0] = t;
  return 1;
}

/* gather: x.shape[:axis] + indices.shape + x.shape[axis+1:]. */
static int gc_infer_gather(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  const gc_type *x = in(c, 0), *ix = in(c, 1);
  int axis;
  if (!want_dt(c, 1, DT_INDEX) || !get_axis(c, "axis", 0, x->rank, &axis)) return 0;
  int r = x->rank - 1 + ix->rank;
  if (r > GC_MAX_RANK)
    return fail(c, op->loc, "result rank %d (x %s, indices %s) exceeds the maximum %d", r,
                ty(c, x), ty(c, ix), GC_MAX_RANK);
  gc_type t = {.dtype = x->dtype, .rank = r};
  int k = 0;
  for (int i = 0; i < axis; i++) t.dims[k++] = x->dims[i];
  for (int i = 0; i < ix->rank; i++) t.dims[k++] = ix->dims[i];
  for (int i = axis + 1; i < x->rank; i++) t.dims[k++] = x->dims[i];
  out[0] = t;
  return 1;
}

/* cache_write(state, upd, pos, axis): upd of the state's dtype and rank, each dim but
 * `axis` at most the state's (symbolic dims: equal, or decided once bound); pos an index
 * dtype, [upd.dims[0]] or a scalar. The result is the state's type. */
static int gc_infer_cache_write(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  const gc_type *st = in(c, 0), *u = in(c, 1), *pos = in(c, 2);
  int axis;
  if (!gc_op_attr(op, "axis")) return fail(c, op->loc, "missing required attribute 'axis'");
  if (!get_axis(c, "axis", 0, st->rank, &axis) || !want_dt(c, 2, DT_INDEX)) return 0;
  if (u->dtype != st->dtype || u->rank != st->rank)
    return fail(c, op->loc, "the update %s must have the state's dtype and rank (%s)", ty(c, u),
                ty(c, st));
  if (axis == 0 && pos->rank != 0)
    return fail(c, op->loc, "with axis 0 the positions must be a scalar, got %s", ty(c, pos));
  for (int i = 0; i < st->rank; i++) {
    if (i == axis || u->dims[i] == st->dims[i]) continue;
    if (GC_DIM_IS_SYM(u->dims[i]) || GC_DIM_IS_SYM(st->dims[i])) continue;
    if (u->dims[i] > st->dims[i])
      return fail(c, op->loc, "update dim %d is %lld, larger than the state's %lld", i,
                  (long long)u->dims[i], (long long)st->dims[i]);
  }
  if (pos->rank > 1 || (pos->rank == 1 && pos->dims[0] != u->dims[0]))
    return fail(c, op->loc, "positions %s must be a scalar or one per update row ([%s])", ty(c, pos),
                "dim 0 of the update");
  out[0] = *st;
  return 1;
}

/* split: one result per entry of sizes (>= 0, summing to the dim). */
static int gc_infer_split(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  CTX;
  const gc_type *x = in(c, 0);
  const gc_attr *sa = gc_op_attr(op, "sizes");
  int axis;
  if (!gc_op_attr(op, "axis")) return fail(c, op->loc, "missing required attribute 'axis'");
  if (!get_axis(c, "axis", 0, x->rank, &axis)) return 0;
  int n = gc_op_result_count(op);
  if (!sa) return fail(c, op->loc, "missing required attribute 'sizes'");
  if (n < 0)
    return fail(c, aloc(c, sa), "attribute 'sizes' expects a list of ints, got %s",
                kind_name(sa));
  if (n != op->n_results)
    return fail(c, op->loc, "has %d result%s, but sizes has %d entr%s", op->n_results,
                op->n_results == 1 ? "" : "s", n, n == 1 ? "y" : "ies");
  int64_t dim = x->dims[axis];
  if (GC_DIM_IS_SYM(dim)) return need_concrete(c, axis, dim, "");
  __int128 sum = 0;
  for (int i = 0; i < n; i++) {
    int64_t s = sa->kind == GC_ATTR_LIST ? sa->u.list.items[i].u.i : sa->u.i;
    if (s < 0 || s >= DIM_LIMIT)
      return fail(c, iloc(c, sa, i), "sizes entries must be >= 0, got %lld", (long long)s);
    sum += s;
    out[i] = *x;
    out[i].dims[axis] = s;
  }
  if (sum != dim)
    return fail(c, aloc(c, sa), "sizes sum to %lld, but axis %d of %s has size %lld",
                (long long)sum, axis, ty(c, x), (long long)dim);
  return 1;
}

/* ---- dispatch ------------------------------------------------------------------------ */
static const rule_fn rules[GC_OP_COUNT_] = {
#define OP(ID, NAME, MIN_IN, MAX_IN, N_OUT, ATTRS, RULE, EVAL, KIND) [GC_OP_##ID] = gc_infer_##RULE,
#include "ir/ops.def"
#undef OP
};

/* Results of an op: N_OUT, or for split the number of sizes (-1 when unusable). */
int gc_op_result_count(const gc_op *op) {
  GC_ASSERT((unsigned)op->opcode < GC_OP_COUNT_);
  int n = gc_op_infos[op->opcode].n_out;
  if (n >= 0) return n;
  /* split: one result per entry of `sizes` */
  const gc_attr *a = gc_op_attr(op, "sizes");
  if (!a) return -1;
  if (a->kind == GC_ATTR_INT) return 1;
  if (a->kind != GC_ATTR_LIST) return -1;
  for (int i = 0; i < a->u.list.n; i++)
    if (a->u.list.items[i].kind != GC_ATTR_INT) return -1;
  return a->u.list.n;
}

/* Check the op's shape (arity, results), run its rule, bound the result sizes. */
int gc_infer_op(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d) {
  GC_ASSERT((unsigned)op->opcode < GC_OP_COUNT_);
  const gc_op_info *info = &gc_op_infos[op->opcode];
  ictx cx = {.g = g, .op = op, .d = d, .name = info->name};
  if (op->n_operands < info->min_in || (info->max_in >= 0 && op->n_operands > info->max_in)) {
    if (info->max_in == info->min_in)
      return fail(&cx, op->loc, "expects %d operand%s, got %d", info->min_in,
                  info->min_in == 1 ? "" : "s", op->n_operands);
    if (info->max_in < 0)
      return fail(&cx, op->loc, "expects at least %d operand%s, got %d", info->min_in,
                  info->min_in == 1 ? "" : "s", op->n_operands);
    return fail(&cx, op->loc, "expects %d to %d operands, got %d", info->min_in, info->max_in,
                op->n_operands);
  }
  for (int i = 0; i < op->n_operands; i++) {
    if (!op->operands[i]) return fail(&cx, op->loc, "operand %d is missing", i);
    int r = op->operands[i]->type.rank;
    if (r < 0 || r > GC_MAX_RANK)
      return fail(&cx, op->loc, "operand %d has rank %d; the maximum rank is %d", i, r,
                  GC_MAX_RANK);
  }
  for (int i = 0; i < op->n_results; i++)
    if (!op->results[i]) return fail(&cx, op->loc, "result %d is missing", i);
  if (info->n_out >= 0 && op->n_results != info->n_out)
    return fail(&cx, op->loc, "expects %d result%s, got %d", info->n_out,
                info->n_out == 1 ? "" : "s", op->n_results);
  if (op->n_results > 0) memset(out, 0, sizeof *out * (size_t)op->n_results);
  if (!rules[op->opcode](g, op, out, d)) return 0;
  /* Every result: rank within bounds, element count (symbols count as 1) within 2^62. */
  for (int i = 0; i < op->n_results; i++) {
    GC_ASSERT(out[i].rank >= 0 && out[i].rank <= GC_MAX_RANK);
    prod p = {.c = 1};
    for (int k = 0; k < out[i].rank; k++) prod_mul(&p, out[i].dims[k]);
    if (p.ovf) return fail(&cx, op->loc, "element count of %s overflows 2^62", ty(&cx, &out[i]));
  }
  return 1;
}
