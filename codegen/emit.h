/* emit.h - internal interface between the lowering driver (lower.c), the op
 * emitters (emit_*.c) and buffer assignment (buffers.c).
 *
 *   lower.c      walks the graph in program order, makes one gc_plan_buffer per
 *                value that needs memory, picks the emitter family from the
 *                KIND column of ir/ops.def and records every launch.
 *   emit_*.c     build Kernel IR for one op (one kernel per op; split too).
 *   emit_util.c  shared pieces: params, loads/stores with dtype casts, index
 *                math over affine views, block reductions.
 *   buffers.c    liveness-based placement of TEMP buffers in one arena.
 *
 * Conventions inside emitters: every kir_expr node is used exactly once (make a
 * variable with gc_ec_let and re-read it with ec_v when a value is needed
 * twice); a variable's first assignment lexically encloses all its uses.
 */
#ifndef GC_EMIT_H
#define GC_EMIT_H

#include "lower.h"

/* ---- lowering state ----------------------------------------------------------------- */
#define GC_MAX_INPLACE 3

/* In-place candidates of a TEMP result: operand buffers read at exactly the
 * element index the kernel writes (recorded by the elementwise emitter). */
typedef struct gc_buf_hint {
  int n;
  int cand[GC_MAX_INPLACE];
} gc_buf_hint;

typedef struct gc_lowerer {
  const gc_graph *g;
  const gc_safetensors *w;
  const kir_target *t;
  gc_diags *d;
  gc_plan *p;
  kir_module *km;
  int *val_buf;              /* value id -> buffer index (-1: none yet) */
  int cap_buffers, cap_consts, cap_launches;
  gc_buf_hint *hints;        /* parallel to p->buffers */
  int oom;                   /* an allocation failed */
} gc_lowerer;

/* An emitter lowers one op; returns 0, or -1 after reporting to c->d. */
typedef int (*gc_emit_fn)(gc_lowerer *c, const gc_op *op);

int gc_emit_source(gc_lowerer *c, const gc_op *op);      /* emit_move.c: param, const, iota */
int gc_emit_elementwise(gc_lowerer *c, const gc_op *op); /* emit_elementwise.c */
int gc_emit_reduce(gc_lowerer *c, const gc_op *op);      /* emit_reduce.c: reduce_*, argmax */
int gc_emit_norm(gc_lowerer *c, const gc_op *op);        /* emit_reduce.c: softmax ... rmsnorm */
int gc_emit_matmul(gc_lowerer *c, const gc_op *op);      /* emit_linalg.c */
int gc_emit_conv(gc_lowerer *c, const gc_op *op);        /* emit_linalg.c */
int gc_emit_pool(gc_lowerer *c, const gc_op *op);        /* emit_linalg.c */
int gc_emit_move(gc_lowerer *c, const gc_op *op);        /* emit_move.c */

/* Copy kernel `name`: buffer src -> buffer dst, both of type t (lower.c uses it
 * for outputs that alias inputs, consts, views or other outputs). */
int gc_emit_copy(gc_lowerer *c, const char *name, int src, int dst, const gc_type *t);

/* lower.c: a CONST buffer (and plan const) for value v backed by `data`, which
 * the weights file or the plan arena owns. Returns the buffer index, -1 on OOM. */
int gc_lower_const_buffer(gc_lowerer *c, const gc_value *v, const char *name, const void *data,
                          size_t bytes);

/* buffers.c: place TEMP buffers (offsets, arena_bytes, arena_lower_bound);
 * hints may let an elementwise result take over a dying operand's slot. */
void gc_assign_buffers(gc_plan *p, const gc_buf_hint *hints);

/* ---- kernels, params, launches (emit_util.c) ------------------------------------------ */
/* Arithmetic type for a storage dtype: f16/bf16 -> f32, i8/u8 -> i32. */
gc_dtype gc_ec_compute_type(gc_dtype t);
/* New kernel "<opname>_<op id><suffix>" (suffix may be NULL). */
kir_kernel *gc_ec_kernel(gc_lowerer *c, const gc_op *op, const char *suffix, kir_launch_kind kind,
                         int64_t n, int block);
/* Buffer parameter bound to value v's buffer. */
int gc_ec_param(gc_lowerer *c, kir_kernel *k, const char *hint, const gc_value *v, int readonly);
/* Buffer parameter bound to plan buffer `buf` with element type dt. */
int gc_ec_param_buf(gc_lowerer *c, kir_kernel *k, const char *hint, int buf, gc_dtype dt,
                    int readonly);
/* Verify k, append a launch of it and extend the live ranges of its buffers. */
void gc_ec_launch(gc_lowerer *c, kir_kernel *k);
/* Fresh variable named after `hint` (kir numbers it). */
int gc_ec_var(gc_lowerer *c, kir_kernel *k, const char *hint, gc_dtype t);
/* Fresh variable assigned `e` at the end of block b. */
int gc_ec_let(gc_lowerer *c, kir_kernel *k, kir_block *b, const char *hint, kir_expr *e);
/* Load param[idx] converted to its compute type. */
kir_expr *gc_ec_load(gc_lowerer *c, kir_kernel *k, int param, kir_expr *idx);
/* Store `value` converted to the param's dtype. */
void gc_ec_store(gc_lowerer *c, kir_kernel *k, kir_block *b, int param, kir_expr *idx,
                 kir_expr *value);
/* Float or int literal of type t. */
kir_expr *gc_ec_num(gc_lowerer *c, gc_dtype t, double v);
/* Normalize a possibly negative axis. */
int gc_ec_axis(int64_t axis, int rank);
/* Product of dims[lo, hi). */
int64_t gc_ec_prod(const int64_t *dims, int lo, int hi);
/* Size in bytes of a value. */
double gc_ec_bytes(const gc_type *t);
/* Report an unsupported case at the op. */
int gc_ec_unsupported(gc_lowerer *c, const gc_op *op, const char *what);

/* ---- index math over affine views (emit_util.c) ------------------------------------- */
#define GC_EC_MAX_VIEWS 4
/* A view maps output coordinates to an element index: offset + sum(coord * st). */
typedef struct gc_ec_view {
  int64_t offset;
  int64_t st[GC_MAX_RANK];
} gc_ec_view;

/* An iteration space (output dims) with the views read or written over it. */
typedef struct gc_ec_space {
  int rank;
  int64_t dims[GC_MAX_RANK];
  int nv;
  gc_ec_view v[GC_EC_MAX_VIEWS];
} gc_ec_space;

/* Space over `out`'s dims with no views yet. */
void gc_ec_space_init(gc_ec_space *s, const gc_type *out);
/* Add a view reading `in` with numpy broadcasting to the space's dims; returns its index. */
int gc_ec_space_bcast(gc_ec_space *s, const gc_type *in);
/* Add a view with explicit offset and strides; returns its index. */
int gc_ec_space_add(gc_ec_space *s, int64_t offset, const int64_t *st);
/* 1 when view i reads exactly the row-major element of the space (identity). */
int gc_ec_space_identity(const gc_ec_space *s, int i);
/* Drop unit dims and merge dims that every view walks contiguously. */
void gc_ec_space_simplify(gc_ec_space *s);
/* Element count of the space. */
int64_t gc_ec_space_numel(const gc_ec_space *s);
/* Emit the index of every view for linear position `pos` (an i64 var);
 * idx[i] receives one fresh expression per view. */
void gc_ec_space_index(gc_lowerer *c, kir_kernel *k, kir_block *b, const gc_ec_space *s, int pos,
                       kir_expr **idx);
/* Decompose var `pos` row-major over dims[0..rank) into coordinate vars. */
void gc_ec_unravel(gc_lowerer *c, kir_kernel *k, kir_block *b, int pos, int rank,
                   const int64_t *dims, int *coord);
/* Vector width for contiguous elementwise access (1 when not worthwhile / host). */
int gc_ec_vec_width(gc_lowerer *c, int64_t numel, const gc_dtype *dts, int n);

/* ---- reductions (emit_util.c) ------------------------------------------------------------ */
typedef enum gc_ec_comb { GC_EC_SUM, GC_EC_MAX, GC_EC_MIN } gc_ec_comb;
/* Neutral element of a combine in type t (max: -inf / type minimum). */
kir_expr *gc_ec_identity(gc_lowerer *c, gc_ec_comb op, gc_dtype t);
/* comb(var a, var b); max/min propagate NaN for floats. */
kir_expr *gc_ec_combine(gc_lowerer *c, kir_kernel *k, gc_ec_comb op, int a, int b);
/* NaN-propagating max (is_max) / min of two vars (ints: plain). */
kir_expr *gc_ec_maxmin(gc_lowerer *c, kir_kernel *k, int is_max, int a, int b);
/* BLOCKS launch: reduce var v across the group; every thread ends with the
 * result in v. `sh` is a shared array of >= block/warp entries of v's type.
 * Ends with a barrier, so `sh` may be reused right away. */
void gc_ec_block_reduce(gc_lowerer *c, kir_kernel *k, kir_block *b, gc_ec_comb op, int v, int sh);
/* BLOCKS launch: for (r = thread; r < n; r += block) -- returns the body. */
kir_block *gc_ec_thread_loop(gc_lowerer *c, kir_kernel *k, kir_block *b, int *r, int64_t n);
/* Threads per group for a row of n elements: a warp multiple, at most 256. */
int gc_ec_row_block(gc_lowerer *c, int64_t n);

/* ---- short expression builders (fold trivial constants) --------------------------------- */
static inline kir_expr *ec_i64(gc_lowerer *c, int64_t v) {
  return kir_const_i(c->km, GRAPHC_DTYPE_I64, v);
}
static inline kir_expr *ec_i32(gc_lowerer *c, int64_t v) {
  return kir_const_i(c->km, GRAPHC_DTYPE_I32, v);
}
static inline kir_expr *ec_v(gc_lowerer *c, const kir_kernel *k, int var) {
  return kir_var_ref(c->km, k, var);
}
static inline int ec_is_const(const kir_expr *e, int64_t v) {
  return e->kind == KIR_E_CONST && !gc_dtype_is_float(e->type) && e->u.i == v;
}
static inline kir_expr *ec_add(gc_lowerer *c, kir_expr *a, kir_expr *b) {
  if (ec_is_const(b, 0)) return a;
  if (ec_is_const(a, 0)) return b;
  return kir_binary(c->km, KIR_ADD, a, b);
}
static inline kir_expr *ec_mul(gc_lowerer *c, kir_expr *a, kir_expr *b) {
  if (ec_is_const(b, 1)) return a;
  if (ec_is_const(a, 1)) return b;
  return kir_binary(c->km, KIR_MUL, a, b);
}
static inline kir_expr *ec_bin(gc_lowerer *c, kir_op op, kir_expr *a, kir_expr *b) {
  return kir_binary(c->km, op, a, b);
}
static inline kir_expr *ec_cast(gc_lowerer *c, gc_dtype t, kir_expr *a) {
  return a->type == t ? a : kir_cast(c->km, t, a);
}
/* i64 thread index of a BLOCKS group. */
static inline kir_expr *ec_thread(gc_lowerer *c) {
  return kir_cast(c->km, GRAPHC_DTYPE_I64, kir_special_ref(c->km, KIR_SP_THREAD));
}

#endif /* GC_EMIT_H */
