/* onnx_build.c - the ONNX importer's toolbox: graphc op construction with
 * type inference and constant folding, constants (TensorProto data, external
 * data read safely), and node accessors.
 *
 * ox_op() appends a graphc op to the graph being built and infers its result
 * type at once (ir/infer.c), so mappings always know shapes. When every
 * operand carries constant data, the op is evaluated with the folding pass's
 * evaluator (gc_fold_eval, passes/fold.h; never the interpreter) and replaced
 * by its result: a `const` op (uniform or at most 16 elements), the iota /
 * compare / select expression of a triangular pattern over the last two dims
 * (causal masks: their structure stays visible to codegen/attn_mask.c), or a
 * `param` that goes to the weights file. An op that evaluator does not evaluate
 * (contractions, convolutions, pools, normalizations) stays in the graph.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "frontend/onnx_internal.h"
#include "ir/dtype.h"
#include "passes/fold.h"

#define FOLD_LIMIT (INT64_C(1) << 24) /* largest constant result folded at import */
#define FOLD_8BIT_WEIGHT 4096          /* 8-bit constants above this stay 8-bit (see foldable) */
#define SMALL_CONST 16                /* constants up to this many elements are written inline */

/* ---- attributes ------------------------------------------------------------------------------- */

/* Next free slot of `at` named `name`. */
static gc_attr *slot(ox_attrs *at, const char *name) {
  GC_ASSERT(at->n < OX_MAX_ATTRS);
  gc_named_attr *na = &at->a[at->n++];
  memset(na, 0, sizeof *na);
  na->name = name;
  return &na->val;
}

/* Add an int attribute. */
void at_int(ox *x, ox_attrs *at, const char *name, int64_t v) {
  gc_attr *a = slot(at, name);
  a->kind = GC_ATTR_INT;
  a->u.i = v;
}

/* Add a list of ints (in the graph arena). */
void at_ints(ox *x, ox_attrs *at, const char *name, const int64_t *v, int n) {
  gc_attr *a = slot(at, name);
  a->kind = GC_ATTR_LIST;
  a->u.list.n = n;
  a->u.list.items = gc_arena_alloc(&x->g->arena, (size_t)(n ? n : 1) * sizeof(gc_attr));
  if (!a->u.list.items) {
    a->u.list.n = 0;
    return;
  }
  for (int i = 0; i < n; i++) {
    a->u.list.items[i].kind = GC_ATTR_INT;
    a->u.list.items[i].u.i = v[i];
  }
}

/* Add a float attribute. */
void at_float(ox *x, ox_attrs *at, const char *name, double v) {
  gc_attr *a = slot(at, name);
  a->kind = GC_ATTR_FLOAT;
  a->u.f = v;
}

/* Add a bool attribute. */
void at_bool(ox *x, ox_attrs *at, const char *name, int v) {
  gc_attr *a = slot(at, name);
  a->kind = GC_ATTR_BOOL;
  a->u.b = v != 0;
}

/* Add a string attribute (copied into the graph arena). */
void at_str(ox *x, ox_attrs *at, const char *name, const char *v) {
  gc_attr *a = slot(at, name);
  a->kind = GC_ATTR_STR;
  a->u.s = gc_arena_strdup(&x->g->arena, v);
}

/* Add a dtype attribute. */
void at_dtype(ox *x, ox_attrs *at, const char *name, gc_dtype v) {
  gc_attr *a = slot(at, name);
  a->kind = GC_ATTR_DTYPE;
  a->u.dt = v;
}

/* v truncated to an int64, saturated (NaN: 0): casting an out-of-range double is UB. */
int64_t ox_f2i(double v) {
  if (v != v) return 0;
  if (v >= 9.2e18) return INT64_MAX;
  if (v <= -9.2e18) return INT64_MIN;
  return (int64_t)v;
}

/* Add a scalar of the kind dtype t takes (bool, int or float). */
void at_scalar(ox *x, ox_attrs *at, const char *name, gc_dtype t, double v) {
  if (t == GRAPHC_DTYPE_BOOL) at_bool(x, at, name, v != 0);
  else if (gc_dtype_is_int(t)) {
    /* Saturated to the dtype's range (e.g. Clip's default min -inf on i8), and
     * i64 to the .graph language's literal range, |v| < 2^62 (found by fuzz_onnx). */
    double lo = t == GRAPHC_DTYPE_I8    ? -128
                : t == GRAPHC_DTYPE_U8  ? 0
                : t == GRAPHC_DTYPE_I32 ? -2147483648.0
                                        : -4.6e18;
    double hi = t == GRAPHC_DTYPE_I8    ? 127
                : t == GRAPHC_DTYPE_U8  ? 255
                : t == GRAPHC_DTYPE_I32 ? 2147483647.0
                                        : 4.6e18;
    at_int(x, at, name, ox_f2i(v < lo ? lo : v > hi ? hi : v));
  }
  else at_float(x, at, name, v);
}

/* ---- constants ----------------------------------------------------------------------------------- */

ox_const *ox_const_new(ox *x, gc_dtype t, int rank, const int64_t *dims) {
  ox_const *k = ox_alloc(x, sizeof *k);
  if (!k) return NULL;
  k->dtype = t;
  k->rank = rank;
  k->numel = 1;
  for (int i = 0; i < rank; i++) {
    k->dims[i] = dims[i];
    if (dims[i] < 0 || __builtin_mul_overflow(k->numel, dims[i], &k->numel) ||
        k->numel > (INT64_C(1) << 62) / 8) {   /* found by fuzz_onnx */
      ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT,
              "a constant with a negative dim or more than 2^59 elements");
      return NULL;
    }
  }
  k->data = ox_alloc(x, (size_t)k->numel * graphc_dtype_size(t));
  return k->data ? k : NULL;
}

double ox_const_get(const ox_const *k, int64_t i) { return gc_load_f64(k->data, k->dtype, i); }

/* Element i as an int64 (exact for i64; floats truncated and saturated). */
int64_t ox_const_geti(const ox_const *k, int64_t i) {
  if (k->dtype == GRAPHC_DTYPE_I64) return ((const int64_t *)k->data)[i];
  return ox_f2i(gc_load_f64(k->data, k->dtype, i));
}

void ox_const_set(ox_const *k, int64_t i, double v) { gc_store_f64(k->data, k->dtype, i, v); }

/* Store an integer into element i (exact for i64). */
void ox_const_seti(ox_const *k, int64_t i, int64_t v) {
  if (k->dtype == GRAPHC_DTYPE_I64) ((int64_t *)k->data)[i] = v;
  else gc_store_f64(k->data, k->dtype, i, (double)v);
}

/* Does p name a path that stays inside the model folder (relative, no "..")? */
static int safe_relpath(const char *p) {
  if (!p[0] || p[0] == '/') return 0;
  const char *s = p;
  while (*s) {
    const char *e = strchr(s, '/');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    if (n == 2 && s[0] == '.' && s[1] == '.') return 0;
    if (n == 0 && !e) break;
    s = e ? e + 1 : s + n;
  }
  return 1;
}

/* Read the external data of initializer t into a fresh constant. */
static int load_external(ox *x, const gc_onnx_tensor *t, ox_const *k) {
  size_t want = (size_t)k->numel * graphc_dtype_size(k->dtype);
  if (!x->model_dir)
    return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT,
                   "initializer '%s' uses external data, which needs the model's folder", t->name);
  if (!safe_relpath(t->location) || strchr(t->location, '\\'))
    return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT,
                   "initializer '%s': external data location '%s' leaves the model's folder "
                   "(absolute paths and '..' are not allowed)",
                   t->name, t->location);
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/%s", x->model_dir, t->location) >= (int)sizeof path)
    return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "initializer '%s': path too long", t->name);
  /* No component below the model folder may be a symbolic link. */
  size_t base = strlen(x->model_dir) + 1;
  for (size_t i = base; path[i - 1]; i++) {
    if (path[i] != '/' && path[i] != 0) continue;
    char save = path[i];
    path[i] = 0;
    struct stat st;
    int bad = lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
    path[i] = save;
    if (bad)
      return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT,
                     "initializer '%s': external data location '%s' goes through a symbolic link",
                     t->name, t->location);
    if (!save) break;
  }
  FILE *f = fopen(path, "rb");
  if (!f)
    return ox_fail(x, GRAPHC_STATUS_IO_ERROR, "initializer '%s': cannot open external data '%s': %s",
                   t->name, path, strerror(errno));
  int rc = 0;
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    rc = ox_fail(x, GRAPHC_STATUS_IO_ERROR, "initializer '%s': '%s' is not a regular file", t->name,
                 path);
  } else if (t->ext_length >= 0 && (uint64_t)t->ext_length != want) {
    rc = ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT,
                 "initializer '%s': external data length %lld, expected %zu bytes", t->name,
                 (long long)t->ext_length, want);
  } else if ((uint64_t)t->ext_offset > (uint64_t)st.st_size ||
             want > (uint64_t)st.st_size - (uint64_t)t->ext_offset) {
    rc = ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT,
                 "initializer '%s': external data at offset %lld (%zu bytes) runs past the end of "
                 "'%s' (%lld bytes)",
                 t->name, (long long)t->ext_offset, want, path, (long long)st.st_size);
  } else if (fseeko(f, (off_t)t->ext_offset, SEEK_SET) != 0 || fread(k->data, 1, want, f) != want) {
    rc = ox_fail(x, GRAPHC_STATUS_IO_ERROR, "initializer '%s': cannot read '%s'", t->name, path);
  }
  fclose(f);
  return rc;
}

/* Constant data of a TensorProto (initializer or Constant value); NULL when
 * graphc cannot hold it (reported when `report`). */
ox_const *ox_tensor_const(ox *x, const gc_onnx_tensor *t, int report) {
  int dt = gc_onnx_dtype(t->data_type);
  if (dt < 0) {
    if (report) ox_dtype(x, t->data_type, &(gc_dtype){0});
    return NULL;
  }
  if (t->rank > GC_MAX_RANK) {
    if (report) ox_unsup(x, "tensor '%s' has rank %d; graphc supports up to %d", t->name, t->rank,
                         GC_MAX_RANK);
    return NULL;
  }
  if (t->numel < 0 || t->numel > (INT64_C(1) << 40)) {   /* -1: the product of the dims overflows */
    if (report) {
      char dims[GC_MAX_RANK * 24 + 2] = "";
      for (int i = 0, at = 0; i < t->rank; i++)
        at += snprintf(dims + at, sizeof dims - (size_t)at, "%s%lld", i ? " x " : "", (long long)t->dims[i]);
      ox_unsup(x, "tensor '%s' (%s) has more than 2^40 elements, the most a constant can hold", t->name,
               dims);
    }
    return NULL;
  }
  ox_const *k = ox_const_new(x, (gc_dtype)dt, t->rank, t->dims);
  if (!k) return NULL;
  size_t want = (size_t)k->numel * graphc_dtype_size(k->dtype);
  if (t->external) {
    if (load_external(x, t, k) != 0) return NULL;
  } else if (t->nbytes == want && t->data) {
    memcpy(k->data, t->data, want);
  } else if (want) {
    ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "tensor '%s' has %zu bytes of data, expected %zu",
            t->name, t->data ? t->nbytes : 0, want);
    return NULL;
  }
  return k;
}

/* Grow the per-value side tables to cover every value id of the graph. */
int ox_ids_ensure(ox *x) {
  int need = x->g->next_value_id;
  if (need <= x->cap_ids) return 0;
  int nc = x->cap_ids ? x->cap_ids : 256;
  while (nc < need) nc *= 2;
  ox_const **kv = realloc(x->kv, (size_t)nc * sizeof *kv);
  if (kv) x->kv = kv;
  ox_const **fz = realloc(x->fz, (size_t)nc * sizeof *fz);
  if (fz) x->fz = fz;
  unsigned char *tp = realloc(x->temp, (size_t)nc);
  if (tp) x->temp = tp;
  if (!kv || !tp || !fz) return ox_fail(x, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
  memset(x->kv + x->cap_ids, 0, (size_t)(nc - x->cap_ids) * sizeof *kv);
  memset(x->fz + x->cap_ids, 0, (size_t)(nc - x->cap_ids) * sizeof *fz);
  memset(x->temp + x->cap_ids, 0, (size_t)(nc - x->cap_ids));
  x->cap_ids = nc;
  return 0;
}

/* Element i of k as a printable attribute; 0 when it cannot be written in .graph text. */
static int elem_attr(const ox_const *k, int64_t i, gc_attr *a) {
  memset(a, 0, sizeof *a);
  if (k->dtype == GRAPHC_DTYPE_BOOL) {
    a->kind = GC_ATTR_BOOL;
    a->u.b = ((const uint8_t *)k->data)[i] != 0;
  } else if (gc_dtype_is_int(k->dtype)) {
    int64_t v = ox_const_geti(k, i);
    if (v >= (INT64_C(1) << 62) || v <= -(INT64_C(1) << 62)) return 0;
    a->kind = GC_ATTR_INT;
    a->u.i = v;
  } else {
    a->kind = GC_ATTR_FLOAT;
    a->u.f = ox_const_get(k, i);
  }
  return 1;
}

/* Append a param op for k named by the weights entry `wname`. */
static gc_value *emit_param(ox *x, ox_const *k, const char *vname, const char *wname) {
  if (x->n_weights == x->cap_weights) {
    int nc = x->cap_weights ? 2 * x->cap_weights : 32;
    gc_st_tensor *w = realloc(x->weights, (size_t)nc * sizeof *w);
    if (!w) {
      ox_fail(x, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
      return NULL;
    }
    x->weights = w;
    x->cap_weights = nc;
  }
  gc_op *op = gc_op_new(x->g, GC_OP_PARAM, 0, NULL, 1, &vname, (gc_loc){0, 0});
  if (!op) {
    ox_fail(x, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  ox_attrs at = {0};
  at_str(x, &at, "name", wname);
  gc_op_set_attrs(x->g, op, at.n, at.a);
  gc_value *v = op->results[0];
  v->type.dtype = k->dtype;
  v->type.rank = k->rank;
  memcpy(v->type.dims, k->dims, sizeof k->dims);
  gc_st_tensor *w = &x->weights[x->n_weights++];
  memset(w, 0, sizeof *w);
  w->name = wname;
  w->dtype = k->dtype;
  w->rank = k->rank;
  memcpy(w->dims, k->dims, sizeof w->dims);
  w->data = k->data;
  w->nbytes = (size_t)k->numel * graphc_dtype_size(k->dtype);
  return v;
}

/* Constant data as a value: const op when small or uniform, else a param. */
gc_value *ox_materialize(ox *x, ox_const *k, const char *hint) {
  return ox_materialize_as(x, k, hint, 0);
}

/* As ox_materialize; `param` forces a param (initializers). */
/* A symbolic int vector as tensor data: each symbolic entry d is computed at run time
 * as reduce_sum(const(1, shape=[d])) (folded to a constant once d is bound), the
 * entries are concatenated. The value keeps k as its constant data, so shape
 * arithmetic on it still folds at import. */
static gc_value *materialize_sym(ox *x, ox_const *k) {
  gc_value **parts = ox_alloc(x, (size_t)k->numel * sizeof *parts);
  if (!parts) return NULL;
  int64_t one = 1, axis0 = 0;
  for (int64_t i = 0; i < k->numel; i++) {
    int64_t v = ox_const_geti(k, i);
    if (ox_is_sym(x, v)) {
      ox_attrs at = {0};
      at_scalar(x, &at, "value", GRAPHC_DTYPE_I64, 1);
      at_ints(x, &at, "shape", &v, 1);
      at_dtype(x, &at, "dtype", GRAPHC_DTYPE_I64);
      parts[i] = ox_reduce(x, GC_OP_REDUCE_SUM, ox_op(x, GC_OP_CONST, 0, NULL, &at), &axis0, 1, 1);
    } else {
      parts[i] = ox_reshape(x, ox_scalar(x, GRAPHC_DTYPE_I64, (double)v), 1, &one);
    }
    if (!parts[i]) return NULL;
  }
  ox_attrs at = {0};
  at_int(x, &at, "axis", 0);
  gc_value *v = k->numel == 1 ? parts[0] : ox_op(x, GC_OP_CONCAT, (int)k->numel, parts, &at);
  v = ox_reshape(x, v, k->rank, k->dims);
  if (!v || ox_ids_ensure(x) != 0) return NULL;
  x->kv[v->id] = k;
  return v;
}

/* ---- triangular constants ----------------------------------------------------------------- */

/* Is k, over its last two dims (i, j), e(i, j) = A for j <= i + off and B elsewhere, the
 * same matrix for every leading index, with A != B (tril / triu of a splat, causal masks)?
 * Fills the element indices of an A and a B and the offset. */
static int tri_pattern(const ox_const *k, int64_t *ia, int64_t *ib, int64_t *off) {
  int r = k->rank;
  if (r < 2 || k->numel <= SMALL_CONST) return 0;
  int64_t R = k->dims[r - 2], C = k->dims[r - 1];
  size_t es = graphc_dtype_size(k->dtype);
  const char *d = k->data;
  *ia = (R - 1) * C;  /* bottom left: A whenever the lower region is not empty */
  *ib = -1;
#define TRI_EQ(p, q) (memcmp(d + (p) * (int64_t)es, d + (q) * (int64_t)es, es) == 0)
  /* the offset from a row with both values: A on keys 0 .. n - 1, B past them */
  for (int64_t i = 0; i < R && *ib < 0; i++) {
    int64_t n = 0;
    while (n < C && TRI_EQ(i * C + n, *ia)) n++;
    if (n > 0 && n < C) {
      *ib = i * C + n;
      *off = n - 1 - i;
    }
  }
  if (*ib < 0) return 0;
  for (int64_t e = 0; e < k->numel; e++) {
    int64_t i = e / C % R, j = e % C;
    if (!TRI_EQ(e, j <= i + *off ? *ia : *ib)) return 0;
  }
#undef TRI_EQ
  return 1;
}

/* Element e of k as a scalar constant (its bytes: exact in every dtype). */
static gc_value *elem_scalar(ox *x, const ox_const *k, int64_t e) {
  ox_const *s = ox_const_new(x, k->dtype, 0, NULL);
  if (!s) return NULL;
  size_t es = graphc_dtype_size(k->dtype);
  memcpy(s->data, (const char *)k->data + e * (int64_t)es, es);
  return ox_materialize(x, s, NULL);
}

/* A triangular constant (tri_pattern) as the expression that computes it from indices,
 * select(ge(add(iota rows, off), iota cols), A, B) (bool: the comparison itself), so
 * that passes and codegen see its structure (attention's causal masks,
 * codegen/attn_mask.c). NULL when it is no such constant or on error. */
static gc_value *materialize_tri(ox *x, ox_const *k) {
  int64_t ia, ib, off;
  if (!tri_pattern(k, &ia, &ib, &off)) return NULL;
  int r = k->rank;
  gc_value *rows = ox_iota(x, r, k->dims, r - 2, GRAPHC_DTYPE_I64);
  gc_value *cols = ox_iota(x, r, k->dims, r - 1, GRAPHC_DTYPE_I64);
  if (off) rows = ox_binc(x, GC_OP_ADD, rows, (double)off);
  gc_value *vis = ox_bin(x, GC_OP_GE, rows, cols);
  if (!vis) return NULL;
  if (k->dtype == GRAPHC_DTYPE_BOOL) {
    if (((const uint8_t *)k->data)[ia]) return vis;
    return ox_bin(x, GC_OP_LT, rows, cols);
  }
  return ox_sel(x, vis, elem_scalar(x, k, ia), elem_scalar(x, k, ib));
}

gc_value *ox_materialize_as(ox *x, ox_const *k, const char *hint, int param) {
  if (!k) return NULL;
  if (ox_const_has_sym(x, k)) return materialize_sym(x, k);
  size_t es = graphc_dtype_size(k->dtype);
  int uniform = 1, printable = 1, errors = x->errors;
  for (int64_t i = 1; i < k->numel && uniform; i++)
    uniform = memcmp((char *)k->data + i * (int64_t)es, k->data, es) == 0;
  gc_attr probe;
  for (int64_t i = 0; i < (uniform ? 1 : k->numel) && i < k->numel && i < SMALL_CONST + 1; i++)
    printable &= elem_attr(k, i, &probe);
  const char *vname = hint ? ox_value_name(x, hint) : ox_temp_name(x);
  if (!vname) return NULL;
  gc_value *v;
  if (!param && printable && (uniform || k->numel <= SMALL_CONST)) {
    ox_attrs at = {0};
    gc_attr *val = slot(&at, "value");
    if (k->numel == 0) {  /* an empty tensor: a splat of no elements */
      *val = gc_dtype_is_float(k->dtype) ? (gc_attr){.kind = GC_ATTR_FLOAT, .u.f = 0}
             : k->dtype == GRAPHC_DTYPE_BOOL ? (gc_attr){.kind = GC_ATTR_BOOL, .u.b = 0}
                                            : (gc_attr){.kind = GC_ATTR_INT, .u.i = 0};
    } else if (uniform) {
      elem_attr(k, 0, val);
    } else {
      val->kind = GC_ATTR_LIST;
      val->u.list.n = (int)k->numel;
      val->u.list.items = gc_arena_alloc(&x->g->arena, (size_t)k->numel * sizeof(gc_attr));
      if (!val->u.list.items) {
        ox_fail(x, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
        return NULL;
      }
      for (int64_t i = 0; i < k->numel; i++) elem_attr(k, i, &val->u.list.items[i]);
    }
    if (k->rank) at_ints(x, &at, "shape", k->dims, k->rank);
    at_dtype(x, &at, "dtype", k->dtype);
    gc_op *op = gc_op_new(x->g, GC_OP_CONST, 0, NULL, 1, &vname, (gc_loc){0, 0});
    if (!op) {
      ox_fail(x, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
      return NULL;
    }
    gc_op_set_attrs(x->g, op, at.n, at.a);
    v = op->results[0];
    v->type.dtype = k->dtype;
    v->type.rank = k->rank;
    memcpy(v->type.dims, k->dims, sizeof k->dims);
  } else if (!param && (v = materialize_tri(x, k))) {
    v->name = vname;
  } else {
    if (x->errors > errors) return NULL;
    const char *wname = ox_weight_name(x, hint);
    if (!wname) return NULL;
    v = emit_param(x, k, vname, wname);
  }
  if (!v || ox_ids_ensure(x) != 0) return NULL;
  x->kv[v->id] = k;
  x->temp[v->id] = hint == NULL;
  return v;
}

/* ---- folding ---------------------------------------------------------------------------------------- */

/* k as a gc_cval of type t, which must be concrete with k's element count
 * (elements read exactly: floats as doubles, ints and bools as int64).
 * 1, 0 when t does not fit, -1 out of memory. */
static int const_to_cval(const ox_const *k, const gc_type *t, gc_cval *c) {
  memset(c, 0, sizeof *c);
  if (k->dtype != t->dtype || gc_type_numel(t) != k->numel || k->numel < 1) return 0;
  c->type = *t;
  c->n = k->numel;
  c->e = malloc((size_t)k->numel * sizeof *c->e);
  if (!c->e) return -1;
  int flt = gc_dtype_is_float(k->dtype);
  for (int64_t i = 0; i < k->numel; i++) {
    if (flt) c->e[i].f = ox_const_get(k, i);
    else c->e[i].i = ox_const_geti(k, i);
  }
  return 1;
}

/* A gc_cval (concrete type) as importer-owned constant data; NULL on error (reported). */
static ox_const *cval_to_const(ox *x, const gc_cval *c) {
  ox_const *k = ox_const_new(x, c->type.dtype, c->type.rank, c->type.dims);
  if (!k) return NULL;
  int flt = gc_dtype_is_float(k->dtype);
  for (int64_t i = 0; i < k->numel; i++) {
    gc_scalar e = c->e[c->splat ? 0 : i];
    if (flt) ox_const_set(k, i, e.f);
    else ox_const_seti(k, i, e.i);
  }
  return k;
}

/* Evaluate op (whose operands are all constants) with gc_fold_eval; fills
 * res[op->n_results]. 1 folded, 0 not evaluated there (the op stays), -1 (reported). */
static int fold(ox *x, const gc_op *op, ox_const **res) {
  gc_cval *in = calloc((size_t)op->n_operands + 1, sizeof *in), out[OX_MAX_OUTS];
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  int rc = in ? 1 : -1, sym = 0;
  for (int i = 0; i < op->n_operands; i++) sym |= ox_const_has_sym(x, x->kv[op->operands[i]->id]);
  if (sym && rc == 1 && (rc = ox_fold_sym(x, op, res)) != 2) {
    free(in);
    gc_diags_free(&d);
    if (rc < 0) ox_fail(x, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory folding symbolic dims");
    return rc;
  }
  rc = in ? 1 : -1;
  for (int i = 0; i < op->n_operands && rc == 1; i++)
    rc = const_to_cval(x->kv[op->operands[i]->id], &op->operands[i]->type, &in[i]);
  if (rc == 1 && (rc = gc_fold_eval(op, in, out, FOLD_LIMIT, &d)) == 1) {
    for (int i = 0; i < op->n_results; i++) {
      if (rc == 1 && !(res[i] = cval_to_const(x, &out[i]))) rc = -2; /* reported */
      gc_cval_free(&out[i]);
    }
  }
  if (rc == 0 && d.n_errors) /* a value the op rejects: an error, as at run time */
    rc = ox_fail(x, d.status, "evaluating %s on constants: %s", gc_op_infos[op->opcode].name,
                 d.items[0].msg);
  else if (rc == -1)
    ox_fail(x, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory folding constants");
  for (int i = 0; in && i < op->n_operands; i++) gc_cval_free(&in[i]);
  free(in);
  gc_diags_free(&d);
  return rc < 0 ? -1 : rc;
}

/* ---- building ops -------------------------------------------------------------------------------- */

/* Should op (just built and typed) be folded? */
static int foldable(ox *x, const gc_op *op) {
  if (!x->fold || op->n_operands == 0) return 0;
  for (int i = 0; i < op->n_operands; i++)
    if (!x->kv[op->operands[i]->id]) return 0;
  for (int i = 0; i < op->n_results; i++) {
    int64_t n = gc_type_numel(&op->results[i]->type);
    if (n < 0 || n > FOLD_LIMIT) return 0;
  }
  /* an 8-bit weight's dequantization (fp8, i8, u8) stays: the weight is stored in 8 bits
   * (folded, it became f32, 4x the bytes) and qdq-fold turns the dequantized matmul into an
   * 8-bit one */
  gc_dtype st = op->n_operands == 1 ? op->operands[0]->type.dtype : GRAPHC_DTYPE_BOOL;
  if (op->opcode == GC_OP_CAST && graphc_dtype_size(st) == 1 && st != GRAPHC_DTYPE_BOOL &&
      gc_type_numel(&op->operands[0]->type) > FOLD_8BIT_WEIGHT)
    return 0;
  return 1;
}

int ox_opn(ox *x, gc_opcode opc, int n, gc_value *const *in, const ox_attrs *at, int n_res,
           gc_value **res) {
  for (int i = 0; i < n; i++)
    if (!in[i]) return -1;
  if (n_res > OX_MAX_OUTS) return ox_unsup(x, "more than %d results", OX_MAX_OUTS);
  const char *names[OX_MAX_OUTS];
  for (int i = 0; i < n_res; i++)
    if (!(names[i] = ox_temp_name(x))) return -1;
  gc_op *op = gc_op_new(x->g, opc, n, in, n_res, names, (gc_loc){0, 0});
  if (!op) return ox_fail(x, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
  if (at) gc_op_set_attrs(x->g, op, at->n, at->a);
  gc_type types[OX_MAX_OUTS];
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  int ok = gc_infer_op(x->g, op, types, &d);
  if (!ok) {
    const char *msg = d.n ? d.items[0].msg : "invalid";
    ox_unsup(x, "graphc %s: %s", gc_op_infos[opc].name, msg);
    gc_diags_free(&d);
    gc_op_remove(x->g, op);
    return -1;
  }
  gc_diags_free(&d);
  if (ox_ids_ensure(x) != 0) return -1;
  for (int i = 0; i < n_res; i++) {
    op->results[i]->type = types[i];
    x->temp[op->results[i]->id] = 1;
  }
  ox_const *ks[OX_MAX_OUTS];
  int folded = foldable(x, op) ? fold(x, op, ks) : 0;
  if (folded < 0) return -1;
  if (folded) {
    gc_op_remove(x->g, op);
    for (int i = 0; i < n_res; i++)
      if (!(res[i] = ox_materialize(x, ks[i], NULL))) return -1;
    return 0;
  }
  for (int i = 0; i < n_res; i++) res[i] = op->results[i];
  return 0;
}

/* One-result op (see ox_opn). */
gc_value *ox_op(ox *x, gc_opcode opc, int n, gc_value *const *in, const ox_attrs *at) {
  gc_value *r = NULL;
  return ox_opn(x, opc, n, in, at, 1, &r) == 0 ? r : NULL;
}

gc_value *ox_un(ox *x, gc_opcode opc, gc_value *a) { return ox_op(x, opc, 1, &a, NULL); }

/* Binary op. */
gc_value *ox_bin(ox *x, gc_opcode opc, gc_value *a, gc_value *b) {
  gc_value *in[2] = {a, b};
  return ox_op(x, opc, 2, in, NULL);
}

/* select(c, a, b). */
gc_value *ox_sel(ox *x, gc_value *c, gc_value *a, gc_value *b) {
  gc_value *in[3] = {c, a, b};
  return ox_op(x, GC_OP_SELECT, 3, in, NULL);
}

/* A scalar constant of dtype t. */
gc_value *ox_scalar(ox *x, gc_dtype t, double v) {
  ox_const *k = ox_const_new(x, t, 0, NULL);
  if (!k) return NULL;
  ox_const_set(k, 0, v);
  return ox_materialize(x, k, NULL);
}

/* op(a, c) with c a scalar of a's dtype. */
gc_value *ox_binc(ox *x, gc_opcode opc, gc_value *a, double c) {
  return a ? ox_bin(x, opc, a, ox_scalar(x, a->type.dtype, c)) : NULL;
}

/* op(c, a) with c a scalar of a's dtype. */
gc_value *ox_cbin(ox *x, gc_opcode opc, double c, gc_value *a) {
  return a ? ox_bin(x, opc, ox_scalar(x, a->type.dtype, c), a) : NULL;
}

/* Reshape (nothing when the shape is already dims). */
gc_value *ox_reshape(ox *x, gc_value *a, int rank, const int64_t *dims) {
  if (!a) return NULL;
  if (a->type.rank == rank &&   /* rank 0: dims may be NULL (found by fuzz_onnx) */
      (rank == 0 || memcmp(a->type.dims, dims, (size_t)rank * sizeof *dims) == 0))
    return a;
  ox_attrs at = {0};
  at_ints(x, &at, "shape", dims, rank);
  return ox_op(x, GC_OP_RESHAPE, 1, &a, &at);
}

/* Transpose (nothing for the identity permutation). */
gc_value *ox_transpose(ox *x, gc_value *a, const int64_t *perm) {
  if (!a) return NULL;
  int id = 1;
  for (int i = 0; i < a->type.rank; i++) id &= perm[i] == i;
  if (id) return a;
  ox_attrs at = {0};
  at_ints(x, &at, "perm", perm, a->type.rank);
  return ox_op(x, GC_OP_TRANSPOSE, 1, &a, &at);
}

/* Cast (nothing when a already has dtype t). */
gc_value *ox_cast(ox *x, gc_value *a, gc_dtype t) {
  if (!a || a->type.dtype == t) return a;
  ox_attrs at = {0};
  at_dtype(x, &at, "to", t);
  return ox_op(x, GC_OP_CAST, 1, &a, &at);
}

/* Broadcast to dims (nothing when a has that shape). */
gc_value *ox_broadcast(ox *x, gc_value *a, int rank, const int64_t *dims) {
  if (!a) return NULL;
  if (a->type.rank == rank &&   /* rank 0: dims may be NULL (found by fuzz_onnx) */
      (rank == 0 || memcmp(a->type.dims, dims, (size_t)rank * sizeof *dims) == 0))
    return a;
  ox_attrs at = {0};
  at_ints(x, &at, "shape", dims, rank);
  return ox_op(x, GC_OP_BROADCAST, 1, &a, &at);
}

/* A reduction over axes. */
gc_value *ox_reduce(ox *x, gc_opcode opc, gc_value *a, const int64_t *axes, int n, int keepdims) {
  if (!a) return NULL;
  ox_attrs at = {0};
  at_ints(x, &at, "axes", axes, n);
  at_bool(x, &at, "keepdims", keepdims);
  return ox_op(x, opc, 1, &a, &at);
}

/* Indices along axis, of shape dims. */
gc_value *ox_iota(ox *x, int rank, const int64_t *dims, int axis, gc_dtype t) {
  ox_attrs at = {0};
  at_ints(x, &at, "shape", dims, rank);
  at_int(x, &at, "axis", axis);
  at_dtype(x, &at, "dtype", t);
  return ox_op(x, GC_OP_IOTA, 0, NULL, &at);
}

/* A dim as an i64[] value (a symbolic one is computed at run time by ox_materialize). */
gc_value *ox_dim_value(ox *x, int64_t dim) {
  if (!ox_is_sym(x, dim)) return ox_scalar(x, GRAPHC_DTYPE_I64, (double)dim);
  ox_const *k = ox_const_new(x, GRAPHC_DTYPE_I64, 0, NULL);
  if (!k) return NULL;
  ox_const_seti(k, 0, dim);
  return ox_materialize(x, k, NULL);
}

/* a * b as a dim; a derived symbol when symbolic. */
int64_t ox_dim_mul(ox *x, int64_t a, int64_t b) {
  return gc_sym_intern(x->g, gc_sx_mul(x->g, gc_sx_dim(x->g, a), gc_sx_dim(x->g, b)));
}

/* ---- the current node ----------------------------------------------------------------------------- */

int ox_n_in(ox *x) { return x->node->n_inputs; }

int ox_has_in(ox *x, int i) { return i < x->node->n_inputs && x->node->inputs[i][0]; }

int ox_want_out(ox *x, int i) { return i < x->node->n_outputs && x->node->outputs[i][0]; }

/* The ox_val of input i, or NULL with an error. */
static ox_val *in_val(ox *x, int i) {
  if (!ox_has_in(x, i)) {
    ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "input %d is missing", i);
    return NULL;
  }
  ox_val *v = ox_lookup(x, x->node->inputs[i]);
  if (!v)
    ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT,
            "input %d '%s' is not defined (not a graph input, an initializer or an earlier output)",
            i, x->node->inputs[i]);
  return v;
}

/* Input i as a value (constants materialized on first use). A one-element
 * initializer (the dynamo exporter's scalars: scales, eps, exponents) is a const
 * like a Constant node's, so that the passes can read it. */
gc_value *ox_in(ox *x, int i) {
  ox_val *v = in_val(x, i);
  if (!v) return NULL;
  if (!v->v && v->k) v->v = ox_materialize_as(x, v->k, v->name, v->init && v->k->numel > 1);
  return v->v;
}

/* Constant data of input i when it is a known constant (no evaluation). */
ox_const *ox_in_const(ox *x, int i) {
  if (!ox_has_in(x, i)) return NULL;
  ox_val *v = ox_lookup(x, x->node->inputs[i]);
  if (!v) return NULL;
  if (v->k) return v->k;
  return v->v && v->v->id < x->cap_ids ? x->kv[v->v->id] : NULL;
}

/* Evaluate v at import time: evaluate the ops it depends on, in program order,
 * with gc_fold_eval, starting from the constants and frozen inputs they read.
 * NULL when v depends on an input without a value, on an op that evaluator
 * does not evaluate, or is too big; *frozen is set when a frozen input was read. */
static ox_const *demand(ox *x, gc_value *v, int *frozen) {
  gc_graph *g = x->g;
  int nops = g->next_op_id, nvals = g->next_value_id;
  unsigned char *mark = calloc((size_t)nops + 1, 1);
  gc_cval *val = calloc((size_t)nvals + 1, sizeof *val); /* by value id; e NULL: not known yet */
  gc_value **stack = calloc((size_t)nvals + 1, sizeof *stack);
  ox_const *res = NULL;
  int sp = 0, ok = mark && val && stack;
  *frozen = 0;
  if (ok) stack[sp++] = v;
  while (ok && sp) { /* mark the ops v depends on, stopping at known values */
    gc_value *u = stack[--sp];
    if (x->kv[u->id] || x->fz[u->id]) continue;
    if (!u->def) ok = 0;                     /* an input without a value */
    else if (!mark[u->def->id]) {
      mark[u->def->id] = 1;
      for (int i = 0; i < u->def->n_operands && sp < nvals; i++) stack[sp++] = u->def->operands[i];
    }
  }
  for (gc_op *op = g->first; ok && op; op = op->next) {
    if (!mark[op->id]) continue;
    gc_cval ins[64], outs[OX_MAX_OUTS];
    if (op->n_operands > 64 || op->n_results > OX_MAX_OUTS) ok = 0;
    for (int i = 0; ok && i < op->n_operands; i++) {
      gc_value *u = op->operands[i];
      if (!val[u->id].e) { /* a leaf: constant or frozen data */
        ox_const *k = x->kv[u->id] ? x->kv[u->id] : x->fz[u->id];
        if (!k || const_to_cval(k, &u->type, &val[u->id]) != 1) {
          ok = 0;
          break;
        }
        if (!x->kv[u->id]) *frozen = 1;
      }
      ins[i] = val[u->id];
    }
    if (ok && gc_fold_eval(op, ins, outs, INT64_MAX, NULL) != 1) ok = 0;
    for (int i = 0; ok && i < op->n_results; i++) val[op->results[i]->id] = outs[i];
  }
  int64_t numel = gc_type_numel(&v->type);
  if (ok && val[v->id].e && numel >= 0 && numel <= FOLD_LIMIT) res = cval_to_const(x, &val[v->id]);
  for (int i = 0; val && i < nvals; i++) gc_cval_free(&val[i]);
  free(mark);
  free(val);
  free(stack);
  return res;
}

/* Input i as constant data, evaluating it (and using frozen inputs) if needed. */
ox_const *ox_in_need(ox *x, int i) {
  ox_const *k = ox_in_const(x, i);
  if (k || !ox_has_in(x, i)) return k;
  ox_val *v = ox_lookup(x, x->node->inputs[i]);
  if (!v || !v->v || ox_ids_ensure(x) != 0) return NULL;
  gc_value *u = v->v;
  if (x->fz[u->id]) {
    x->froze = 1;
    return x->fz[u->id];
  }
  int frozen;
  k = demand(x, u, &frozen);
  if (k && frozen) x->fz[u->id] = k, x->froze = 1;
  else if (k) x->kv[u->id] = k;
  return k;
}

/* Type of input i without materializing it. */
int ox_in_type(ox *x, int i, gc_type *t) {
  ox_val *v = in_val(x, i);
  if (!v) return -1;
  memset(t, 0, sizeof *t);
  if (v->v) {
    *t = v->v->type;
  } else {
    t->dtype = v->k->dtype;
    t->rank = v->k->rank;
    memcpy(t->dims, v->k->dims, sizeof t->dims);
  }
  return 0;
}

/* Constant integer input i; an error names the input when it is dynamic. */
int ox_in_ints(ox *x, int i, const char *what, int64_t *out, int max) {
  return ox_in_ints_sym(x, i, what, out, max, 0);
}

int ox_in_ints_sym(ox *x, int i, const char *what, int64_t *out, int max, int allow_sym) {
  ox_const *k = ox_in_need(x, i);
  if (!k) {
    if (!in_val(x, i)) return -1;
    return ox_unsup(x, "input %d '%s' (%s) must be a constant (an initializer, a Constant node or "
                       "computed from them); dynamic values are not supported",
                    i, x->node->inputs[i], what);
  }
  if (k->numel > max)
    return ox_unsup(x, "input %d '%s' (%s) has %lld values; at most %d are supported", i,
                    x->node->inputs[i], what, (long long)k->numel, max);
  for (int64_t j = 0; j < k->numel; j++) {
    out[j] = ox_const_geti(k, j);
    if (!allow_sym && ox_is_sym(x, out[j]))
      return ox_unsup(x, "input %d '%s' (%s) holds the symbolic dim %s; this op needs it concrete "
                         "(bind it)", i, x->node->inputs[i], what,
                      x->g->sym_names[GC_DIM_SYM_INDEX(out[j])]);
  }
  return (int)k->numel;
}

/* Constant one-element input i as a double. */
int ox_in_scalar(ox *x, int i, const char *what, double *out) {
  ox_const *k = ox_in_need(x, i);
  if (!k) {
    if (!in_val(x, i)) return -1;
    return ox_unsup(x, "input %d '%s' (%s) must be a constant; dynamic values are not supported", i,
                    x->node->inputs[i], what);
  }
  if (k->numel != 1)
    return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "input %d '%s' (%s) must hold one value", i,
                   x->node->inputs[i], what);
  *out = ox_const_get(k, 0);
  return 0;
}

/* Attribute of the current node by name, or NULL. */
const gc_onnx_attr *ox_attr(ox *x, const char *name) {
  for (int i = 0; i < x->node->n_attrs; i++)
    if (strcmp(x->node->attrs[i].name, name) == 0) return &x->node->attrs[i];
  return NULL;
}

/* INT attribute or a default. */
int64_t ox_attr_int(ox *x, const char *name, int64_t dflt) {
  const gc_onnx_attr *a = ox_attr(x, name);
  return a && a->type == GC_ONNX_ATTR_INT ? a->i : dflt;
}

/* FLOAT (or INT) attribute or a default. */
double ox_attr_float(ox *x, const char *name, double dflt) {
  const gc_onnx_attr *a = ox_attr(x, name);
  if (a && a->type == GC_ONNX_ATTR_FLOAT) return a->f;
  if (a && a->type == GC_ONNX_ATTR_INT) return (double)a->i;
  return dflt;
}

/* STRING attribute or a default. */
const char *ox_attr_str(ox *x, const char *name, const char *dflt) {
  const gc_onnx_attr *a = ox_attr(x, name);
  /* A STRING attribute without its value has s NULL (found by fuzz_onnx). */
  return a && a->type == GC_ONNX_ATTR_STRING && a->s ? a->s : dflt;
}

/* INTS attribute into out; count, or -1 when absent. */
int ox_attr_ints(ox *x, const char *name, int64_t *out, int max) {
  const gc_onnx_attr *a = ox_attr(x, name);
  if (!a || a->type != GC_ONNX_ATTR_INTS) return -1;
  int n = a->n_ints < max ? a->n_ints : max;
  if (n > 0) memcpy(out, a->ints, (size_t)n * sizeof *out);   /* no ints: NULL (fuzz_onnx) */
  return a->n_ints > max ? max : n;
}

/* Normalize a (possibly negative) axis for rank r. */
int ox_axis(ox *x, int64_t a, int r, int64_t *out) {
  int64_t v = a < 0 ? a + r : a;
  if (v < 0 || v >= (r ? r : 1))
    return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "axis %lld is out of range for rank %d",
                   (long long)a, r);
  *out = v;
  return 0;
}

/* graphc dtype of an ONNX type; an unsupported type is reported. */
int ox_dtype(ox *x, int onnx_type, gc_dtype *out) {
  int t = gc_onnx_dtype(onnx_type);
  if (t < 0)
    return ox_unsup(x, "element type %s is not supported (graphc has f64 f32 f16 bf16 i64 i32 i8 "
                       "u8 bool f8e4m3 f8e5m2 f8e4m3fnuz f8e5m2fnuz)",
                    gc_onnx_type_name(onnx_type));
  *out = (gc_dtype)t;
  return 0;
}

/* Product of dims [lo, hi): a number, one symbol, or -2. */
int64_t ox_dims_prod(const gc_type *t, int lo, int hi) {
  int64_t p = 1, sym = 0;
  for (int i = lo; i < hi; i++) {
    if (GC_DIM_IS_SYM(t->dims[i])) {
      if (sym) return -2;
      sym = t->dims[i];
    } else {
      p *= t->dims[i];
    }
  }
  if (sym) return p == 1 ? sym : -2;
  return p;
}
