/* onnx_internal.h - shared state of the ONNX importer (onnx.c and onnx_ops*.c).
 *
 * The files call only down this list, never back up:
 *   onnx.c            the driver: inputs, initializers, nodes, outputs, the text
 *   onnx_ops.c        the op table (ONNX op type -> mapping)
 *   onnx_shape.c, onnx_nn.c, onnx_composite.c   the mappings
 *   onnx_build.c      the toolbox: ops built with inference and folding, constants,
 *                     node accessors
 *   onnx_sym.c        shape arithmetic on symbolic dims (folding, run-time dim values)
 *   onnx_names.c      bookkeeping: errors, owned memory, maps, bindings, names
 *
 * The importer walks the ONNX nodes in order. Every ONNX value name maps to an
 * ox_val: a graphc value, constant data known at import time, or both.
 * Op mappings (onnx_ops*.c) build graphc ops with ox_op(), which infers result
 * types right away and folds the op (gc_fold_eval, passes/fold.h) when every
 * operand is a known constant, so shape arithmetic (Shape -> Gather -> Concat ->
 * Reshape) ends up as attributes. Helpers prefixed ox_.
 */
#ifndef GC_ONNX_INTERNAL_H
#define GC_ONNX_INTERNAL_H

#include "frontend/onnx.h"

#define OX_MAX_ATTRS 8
#define OX_MAX_OUTS 64

/* Constant data known at import time (dims may be 0: empty tensors). */
typedef struct ox_const {
  gc_dtype dtype;
  int rank;
  int64_t dims[GC_MAX_RANK];
  int64_t numel;
  void *data;              /* numel x dtype size, aligned, owned by the importer */
} ox_const;

/* What an ONNX value name stands for. */
typedef struct ox_val {
  const char *name;        /* ONNX name */
  gc_value *v;             /* graphc value; NULL until a constant is materialized */
  ox_const *k;             /* constant data, or NULL */
  ox_const *frozen;        /* graph input: its given value, used only where a constant is needed */
  int init;                /* an initializer: becomes a param */
  int bad;                 /* produced by a node that failed: uses are skipped quietly */
  int onnx_type;           /* declared element type, for messages */
} ox_val;

typedef struct ox_map ox_map;

typedef struct ox {
  const gc_onnx_model *model;
  const char *source;      /* model name for messages */
  const char *model_dir;
  gc_diags *d;
  gc_module *mod;
  gc_graph *g;
  int64_t opset;           /* ai.onnx opset of the model */
  const gc_onnx_node *node;/* node being translated */
  ox_map *vals;            /* ONNX name -> ox_val */
  ox_map *names;           /* graphc value names in use */
  ox_map *wnames;          /* weights tensor names in use */
  ox_const **kv;           /* constant data of graphc values, by value id */
  ox_const **fz;           /* values known only from frozen inputs, by value id */
  unsigned char *temp;     /* graphc value is an unnamed temporary, by value id */
  int cap_ids;
  void **owned;            /* malloc'd blocks freed with the importer */
  int n_owned, cap_owned;
  gc_st_tensor *weights;   /* params written to the weights file */
  int n_weights, cap_weights;
  int n_tmp;               /* counter for temporary names */
  int errors;
  int fold;                /* 1: fold ops whose operands are all constants */
  int froze;               /* a frozen input value was used */
  const gc_onnx_options *opts;
  /* outputs of the node being translated, set by the op mapping */
  gc_value *out_v[OX_MAX_OUTS];
  ox_const *out_k[OX_MAX_OUTS];
} ox;

/* Attributes under construction for one graphc op. */
typedef struct ox_attrs {
  int n;
  gc_named_attr a[OX_MAX_ATTRS];
} ox_attrs;

/* ---- errors (message prefixed with the node) and ownership (onnx_names.c) ------------------ */
int ox_unsup(ox *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int ox_fail(ox *x, graphc_status_t st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Grow the per-value side tables (kv, fz, temp) to the graph's value count. */
int ox_ids_ensure(ox *x);
/* Remember a malloc'd block to free with the importer; returns p (NULL on OOM). */
void *ox_own(ox *x, void *p);
void *ox_alloc(ox *x, size_t n);

/* ---- maps, bindings and names (onnx_names.c) ------------------------------------------- */
/* String-keyed maps (keys must outlive the map; values are not freed). */
ox_map *ox_map_new(void);
void ox_map_free(ox_map *m);
void *ox_map_get(const ox_map *m, const char *k);
int ox_map_put(ox_map *m, const char *k, void *v);     /* 0, or -1 out of memory */
ox_val *ox_lookup(ox *x, const char *name);
/* Bind an ONNX name to a value and/or constant data (NULL: out of memory, reported). */
ox_val *ox_bind(ox *x, const char *name, gc_value *v, ox_const *k);
const char *ox_temp_name(ox *x);                       /* fresh "tN" */
const char *ox_value_name(ox *x, const char *onnx_name);/* unique sanitized name */
const char *ox_weight_name(ox *x, const char *hint);   /* unique weights tensor name */
/* s as an identifier of [A-Za-z0-9_] (`prefix` first unless s starts with a letter or '_'), in
 * the graph arena; NULL when out of memory. */
char *ox_sanitize(ox *x, const char *s, const char *prefix);

/* ---- attributes for graphc ops (arena lists) ------------------------------------------- */
void at_int(ox *x, ox_attrs *at, const char *name, int64_t v);
void at_ints(ox *x, ox_attrs *at, const char *name, const int64_t *v, int n);
void at_float(ox *x, ox_attrs *at, const char *name, double v);
void at_bool(ox *x, ox_attrs *at, const char *name, int v);
void at_str(ox *x, ox_attrs *at, const char *name, const char *v);
void at_dtype(ox *x, ox_attrs *at, const char *name, gc_dtype v);
/* A scalar in the kind that suits dtype t (int, float or bool). */
void at_scalar(ox *x, ox_attrs *at, const char *name, gc_dtype t, double v);

/* ---- building graphc ops ------------------------------------------------------------------- */
/* One-result op; NULL when an operand is NULL or the op is invalid (reported). */
gc_value *ox_op(ox *x, gc_opcode opc, int n, gc_value *const *in, const ox_attrs *at);
/* Multi-result op (split); fills res[n_res]; 0 or -1. */
int ox_opn(ox *x, gc_opcode opc, int n, gc_value *const *in, const ox_attrs *at, int n_res,
           gc_value **res);
gc_value *ox_un(ox *x, gc_opcode opc, gc_value *a);
gc_value *ox_bin(ox *x, gc_opcode opc, gc_value *a, gc_value *b);
gc_value *ox_sel(ox *x, gc_value *c, gc_value *a, gc_value *b);
/* Binary op with a scalar constant of a's dtype as the other operand. */
gc_value *ox_binc(ox *x, gc_opcode opc, gc_value *a, double c);
gc_value *ox_cbin(ox *x, gc_opcode opc, double c, gc_value *a);
gc_value *ox_scalar(ox *x, gc_dtype t, double v);
gc_value *ox_reshape(ox *x, gc_value *a, int rank, const int64_t *dims);
gc_value *ox_transpose(ox *x, gc_value *a, const int64_t *perm);
gc_value *ox_cast(ox *x, gc_value *a, gc_dtype t);
gc_value *ox_broadcast(ox *x, gc_value *a, int rank, const int64_t *dims);
gc_value *ox_reduce(ox *x, gc_opcode opc, gc_value *a, const int64_t *axes, int n, int keepdims);
gc_value *ox_iota(ox *x, int rank, const int64_t *dims, int axis, gc_dtype t);
/* A dim (int or symbol) as an i64[] value computed at run time; NULL after an error. */
gc_value *ox_dim_value(ox *x, int64_t dim);
/* a * b as a dim (a derived symbol when symbolic); -1 out of memory or overflow. */
int64_t ox_dim_mul(ox *x, int64_t a, int64_t b);
gc_value *ox_round_even(ox *x, gc_value *a);  /* onnx_ops.c: np.rint on a float value */
/* onnx_nn.c: Conv of values a, w (float) with the node's conv attributes and an optional
 * per-channel bias; NULL after an error. */
gc_value *ox_conv_values(ox *x, gc_value *a, gc_value *w, gc_value *bias);
/* onnx_nn.c: MatMul of values with numpy's rules for 1-D operands; NULL after an error. */
gc_value *ox_matmul_values(ox *x, gc_value *a, gc_value *b);
/* Constant data as a graphc value: a const op when small or uniform, else a
 * param (always a param when `param`). `hint` names it (NULL: a temporary). */
gc_value *ox_materialize(ox *x, ox_const *k, const char *hint);
gc_value *ox_materialize_as(ox *x, ox_const *k, const char *hint, int param);
/* A new constant of the given type (data zeroed), owned by the importer. */
ox_const *ox_const_new(ox *x, gc_dtype t, int rank, const int64_t *dims);
/* Constant data of a TensorProto (reads external data); NULL when graphc
 * cannot hold it (reported when `report`). */
ox_const *ox_tensor_const(ox *x, const gc_onnx_tensor *t, int report);
double ox_const_get(const ox_const *k, int64_t i);
int64_t ox_const_geti(const ox_const *k, int64_t i);
/* A double truncated to int64, saturated; NaN gives 0 (never the UB of a plain cast). */
int64_t ox_f2i(double v);
void ox_const_set(ox_const *k, int64_t i, double v);
void ox_const_seti(ox_const *k, int64_t i, int64_t v);

/* ---- reading the current node -------------------------------------------------------------- */
int ox_n_in(ox *x);
int ox_has_in(ox *x, int i);          /* present and not "" */
gc_value *ox_in(ox *x, int i);        /* materialized; reports a missing input */
ox_const *ox_in_const(ox *x, int i);  /* constant data or NULL (never evaluates or freezes) */
/* Constant data of input i when graphc needs it as a constant: known
 * constants, else the value evaluated at import time from constants and
 * frozen graph inputs (see gc_onnx_options.inputs); NULL when it depends on
 * real inputs. */
ox_const *ox_in_need(ox *x, int i);
/* Type of input i without materializing it (dims may hold 0 for empty constants). */
int ox_in_type(ox *x, int i, gc_type *t);
/* Constant integer input i (initializer, Constant, or folded); -1 and an error
 * naming the input when it is not constant. */
int ox_in_ints(ox *x, int i, const char *what, int64_t *out, int max);
/* Same, where entries may be symbolic dims (from Shape of a symbolic tensor); allow_sym 0
 * reports those as unsupported. ox_in_dims(...) = ox_in_ints_sym(..., 1). */
int ox_in_ints_sym(ox *x, int i, const char *what, int64_t *out, int max, int allow_sym);
int ox_in_dims(ox *x, int i, const char *what, int64_t *out, int max);
/* Symbolic int vectors (onnx_sym.c). */
int ox_is_sym(const ox *x, int64_t v);
int ox_const_has_sym(const ox *x, const ox_const *k);
/* Fold op whose constant operands hold symbolic dims: 1 folded (res[0] set), 2 fold it
 * as usual (data movement copies them), 0 not foldable, -1 out of memory. */
int ox_fold_sym(ox *x, const gc_op *op, ox_const **res);

int ox_in_scalar(ox *x, int i, const char *what, double *out);
const gc_onnx_attr *ox_attr(ox *x, const char *name);
int64_t ox_attr_int(ox *x, const char *name, int64_t dflt);
double ox_attr_float(ox *x, const char *name, double dflt);
const char *ox_attr_str(ox *x, const char *name, const char *dflt);
/* INTS attribute into out[max]; returns the count, or -1 when absent. */
int ox_attr_ints(ox *x, const char *name, int64_t *out, int max);
/* Node outputs requested (present and not ""). */
int ox_want_out(ox *x, int i);
/* Normalize axis a against rank r (negative from the end); -1 and an error if out of range. */
int ox_axis(ox *x, int64_t a, int r, int64_t *out);
/* Product of dims [lo, hi) as a dim: a number, a single symbol, or -2 when it
 * would need arithmetic on symbols. */
int64_t ox_dims_prod(const gc_type *t, int lo, int hi);
/* graphc dtype of an ONNX type, with an error naming it when unsupported. */
int ox_dtype(ox *x, int onnx_type, gc_dtype *out);

/* Gather elements of a along axis at idx (same rank; negative indices wrap):
 * numpy take_along_axis, as one flat gather (onnx_composite.c). */
gc_value *ox_take_elements(ox *x, gc_value *a, gc_value *idx, int axis);

/* ---- the op table (onnx_ops.c) ------------------------------------------------------------- */
typedef int (*ox_fn)(ox *x, int arg);
typedef struct ox_opdef {
  const char *name;
  ox_fn fn;
  int arg;
  int min_opset, max_opset;
} ox_opdef;
const ox_opdef *ox_find_op(const char *name);

#endif
