/* emit.h - internal interface between the lowering driver (lower.c), the
 * fusion-group emitters (emit_*.c) and buffer assignment (buffers.c).
 *
 *   lower.c          asks fusion.c for the groups, makes one gc_plan_buffer per
 *                    materialized value, emits each group in launch order with
 *                    the emitter of its kind and records every launch.
 *   emit_expr.c      the element generator: the value of any graph value at a
 *                    point of its index space, computed inline through the ops
 *                    of the current group (loop fusion) or loaded from a buffer.
 *   emit_elementwise.c  loop groups;  emit_reduce.c  reduce and norm groups;
 *   emit_linalg.c    matmul, conv, pool groups;  emit_move.c  const sources, split;
 *   emit_dwconv.c    grouped / depthwise conv groups (register tiles along W and C);
 *   emit_attn.c      attention groups (flash attention on the tensor cores).
 *   emit_util.c      shared pieces: params, loads/stores with dtype casts, index
 *                    decomposition, block reductions.
 *   buffers.c        the plan's buffers and consts as lower.c and the emitters
 *                    create them; liveness-based placement of TEMP buffers in
 *                    one arena. Emitters call down into it, never into lower.c.
 *
 * Conventions inside emitters: every kir_expr node is used exactly once (make a
 * variable with gc_ec_let and re-read it with ec_v when a value is needed
 * twice); a variable's first assignment lexically encloses all its uses (the
 * generator's scopes, gc_gen_push/pop, keep its cached variables that way).
 */
#ifndef GC_EMIT_H
#define GC_EMIT_H

#include "codegen/fusion.h"
#include "codegen/lower.h"

/* ---- lowering state ----------------------------------------------------------------- */
#define GC_MAX_INPLACE 3

/* In-place candidates of a TEMP result: operand buffers read at exactly the
 * element index the kernel writes (recorded by the loop emitter). */
typedef struct gc_buf_hint {
  int n;
  int cand[GC_MAX_INPLACE];
} gc_buf_hint;

typedef struct gc_lowerer {
  const gc_graph *g;
  const kir_target *t;
  gc_diags *d;
  gc_plan *p;
  kir_module *km;
  int *val_buf;              /* value id -> buffer index (-1: none yet) */
  int cap_buffers, cap_consts, cap_launches;
  gc_buf_hint *hints;        /* parallel to p->buffers */
  int oom;                   /* an allocation failed */
  const gc_fusion *fz;       /* the groups */
  unsigned char *inl;        /* op id -> 1 while the group being emitted computes it */
  const char *kname;         /* name of the group's kernel */
} gc_lowerer;

/* An emitter lowers one fusion group; returns 0, or -1 after reporting to c->d. */
typedef int (*gc_emit_fn)(gc_lowerer *c, const gc_fusion_group *grp);

int gc_emit_loop(gc_lowerer *c, const gc_fusion_group *grp);   /* emit_elementwise.c */
int gc_emit_reduce(gc_lowerer *c, const gc_fusion_group *grp); /* emit_reduce.c: reduce_*, argmax */
int gc_emit_norm(gc_lowerer *c, const gc_fusion_group *grp);   /* emit_reduce.c: softmax ... rmsnorm */
int gc_emit_matmul(gc_lowerer *c, const gc_fusion_group *grp); /* emit_linalg.c */
int gc_emit_conv(gc_lowerer *c, const gc_fusion_group *grp);   /* emit_linalg.c */
/* emit_dwconv.c: grouped / depthwise conv2d and any NHWC conv2d, when gc_dwconv_ok. */
int gc_dwconv_ok(const gc_lowerer *c, const gc_op *op);
int gc_emit_dwconv(gc_lowerer *c, const gc_fusion_group *grp);
int gc_emit_pool(gc_lowerer *c, const gc_fusion_group *grp);   /* emit_linalg.c */
int gc_emit_split(gc_lowerer *c, const gc_fusion_group *grp);  /* emit_move.c */
int gc_emit_cache_write(gc_lowerer *c, const gc_fusion_group *grp);  /* emit_move.c */
int gc_emit_attention(gc_lowerer *c, const gc_fusion_group *grp); /* emit_attn.c (CUDA, sm_80+) */
/* emit_move.c: params and list consts become CONST buffers (no kernel). */
int gc_emit_const_source(gc_lowerer *c, const gc_op *op);
/* emit_move.c: scalar attribute as a literal of t's compute type, rounded like a store to t. */
kir_expr *gc_ec_scalar_const(gc_lowerer *c, const gc_attr *a, gc_dtype t);

/* Copy kernel `name`: buffer src -> buffer dst, both of type t (lower.c uses it
 * for outputs that alias inputs, consts, views or other outputs). */
int gc_emit_copy(gc_lowerer *c, const char *name, int src, int dst, const gc_type *t);

/* buffers.c: append a plan buffer of `kind` (its `index`) for a value of type t, with
 * no uses yet. Returns the buffer index, -1 on OOM (c->oom set). */
int gc_lower_new_buffer(gc_lowerer *c, gc_buf_kind kind, int index, const gc_type *t);
/* buffers.c: a CONST buffer (and plan const) for value v backed by `data` (NULL for a
 * param: the driver binds it), which the plan arena owns. Returns the buffer index,
 * -1 on OOM. */
int gc_lower_const_buffer(gc_lowerer *c, const gc_value *v, const char *name, const void *data,
                          size_t bytes);

/* buffers.c: place TEMP buffers (offsets, arena_bytes, arena_lower_bound);
 * hints may let an elementwise result take over a dying operand's slot. */
void gc_assign_buffers(gc_plan *p, const gc_buf_hint *hints);

/* prologue.c: launches that read only constants move to the front, counted in
 * n_prologue, their results live to the end (run once by the CUDA runtime).
 * 0, or -1 when out of memory. */
int gc_plan_hoist_prologue(gc_plan *p);

/* ---- the element generator (emit_expr.c) -------------------------------------------------- */
#define GC_PT_ZERO (-2)      /* a coordinate (or linear index) known to be 0 */

/* A point of a value's index space: its linear (row-major) index and/or its
 * coordinates, as i64 variables (-1: not computed yet; GC_PT_ZERO: 0). */
typedef struct gc_pt {
  int rank;
  int64_t dims[GC_MAX_RANK];
  int lin;
  int co[GC_MAX_RANK];
} gc_pt;

typedef struct gc_memo {
  int value, pt, var;
} gc_memo;

typedef struct gc_gen_frame {
  int n_pts, n_memo;
  gc_pt *saved;              /* the points as they were at the push */
} gc_gen_frame;

/* Generator state for one kernel. */
typedef struct gc_gen {
  gc_lowerer *c;
  kir_kernel *k;
  gc_pt *pts;
  int n_pts, cap_pts;
  gc_memo *memo;             /* (value, point) -> variable holding the value */
  int n_memo, cap_memo;
  int *rparam, *wparam;      /* plan buffer -> kernel param reading / writing it (-1) */
  int n_bufs;
  gc_gen_frame *frames;
  int n_frames, cap_frames;
} gc_gen;

void gc_gen_init(gc_gen *G, gc_lowerer *c, kir_kernel *k);
void gc_gen_free(gc_gen *G);
/* A new point of type t's dims with the linear index in var `lin` (-1: unknown)
 * and coordinates co (NULL: unknown; entries -1 unknown, GC_PT_ZERO zero). */
int gc_gen_pt(gc_gen *G, const gc_type *t, int lin, const int *co);
/* Linear index of point pt (computed from its coordinates once). */
kir_expr *gc_gen_lin(gc_gen *G, kir_block *b, int pt);
/* Coordinate d of point pt as an expression (unravelled from the linear index once). */
kir_expr *gc_gen_coord(gc_gen *G, kir_block *b, int pt, int d);
/* Open a scope before emitting into a nested block; close it after: what the
 * block computed is forgotten. */
void gc_gen_push(gc_gen *G);
void gc_gen_pop(gc_gen *G);
/* Variable holding value v at point pt, in v's compute type (rounded through
 * v's dtype): computed inline when the group computes v's op, else loaded. */
int gc_gen_val(gc_gen *G, kir_block *b, const gc_value *v, int pt);
/* Declare that var holds v at pt (a root's result, a vector lane). */
void gc_gen_bind(gc_gen *G, const gc_value *v, int pt, int var);
/* Kernel params for plan buffer buf (created on first use). */
int gc_gen_rparam(gc_gen *G, int buf, gc_dtype dt);
int gc_gen_wparam(gc_gen *G, int buf, gc_dtype dt);
/* Compute every output of grp at point pt (all of the same index space as the
 * point: loop roots, a root and its epilogue) and store each into its buffer. */
void gc_gen_store_outs(gc_gen *G, kir_block *b, const gc_fusion_group *grp, int pt);
/* The same at w points with consecutive linear indices (the first a multiple of w):
 * outputs of those dims are written with one w-wide vector store each. */
void gc_gen_store_outs_vec(gc_gen *G, kir_block *b, const gc_fusion_group *grp, const int *pts, int w);
/* Modeled bytes: every buffer read (at most `items` elements of it when
 * items > 0) plus every buffer written. */
double gc_gen_bytes(const gc_gen *G, int64_t items);
/* Value e (any type) as dtype t would store it, in t's compute type. */
kir_expr *gc_ec_round(gc_lowerer *c, gc_dtype t, kir_expr *e);
/* Per-element arithmetic of one elementwise op (args: vars in compute types);
 * result in the compute type of its output (cast: the output dtype). */
kir_expr *gc_ec_elementwise(gc_lowerer *c, kir_kernel *k, kir_block *b, const gc_op *op, const int *a);
/* Modeled flops per element of an elementwise op. */
double gc_ec_op_flops(const gc_op *op);

/* ---- matmul pieces shared by emit_linalg.c and the tensor-core kernels (emit_tc.c) -------- */
typedef struct gc_mm_shape {
  int64_t M, N, K, batch;
  int ta, tb;
  int ob;                    /* output batch rank */
  int64_t obdims[GC_MAX_RANK];
} gc_mm_shape;
/* Sizes, transpose flags and batch dims of matmul op. */
void gc_mm_shape_of(const gc_op *op, gc_mm_shape *s);
/* Output batch coordinates of batch index var `bi` (unit dims: GC_PT_ZERO). */
void gc_mm_batch_coords(gc_lowerer *c, kir_kernel *k, kir_block *b, const gc_mm_shape *s, int bi, int *bco);
/* Output point (batch coords, m, n) of the result o. */
int gc_mm_out_point(gc_gen *G, const gc_value *o, const gc_mm_shape *s, const int *bco, int m, int n, int lin);
/* Value of operand x at matrix coordinates (r0, r1) (x's own last two dims, vars) and the
 * output batch coordinates bco (numpy-broadcast into x's batch dims): a variable. */
int gc_mm_operand(gc_gen *G, kir_block *b, const gc_value *x, const gc_mm_shape *s, const int *bco, int r0,
                  int r1);
/* Bind the root's accumulated value at pt and store the group's outputs (epilogue). */
void gc_mm_epilogue(gc_gen *G, kir_block *b, const gc_fusion_group *grp, int pt, kir_expr *acc);

/* ---- kernels, params, launches (emit_util.c) ------------------------------------------ */
/* Arithmetic type for a storage dtype: f16/bf16 -> f32, i8/u8 -> i32. */
gc_dtype gc_ec_compute_type(gc_dtype t);
/* New kernel named after the group being emitted (c->kname). */
kir_kernel *gc_ec_kernel(gc_lowerer *c, kir_launch_kind kind, int64_t n, int block);
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

/* ---- index math (emit_util.c) -------------------------------------------------------------- */
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
/* BLOCKS launch: reduce var v across each aligned group of `width` lanes of a
 * warp (a power of two, shuffles only); every lane ends with its group's value. */
void gc_ec_group_reduce(gc_lowerer *c, kir_kernel *k, kir_block *b, gc_ec_comb op, int v, int width);
/* BLOCKS launch: reduce var v across the group; every thread ends with the
 * result in v. `sh` is a shared array of >= block/warp entries of v's type.
 * Ends with a barrier, so `sh` may be reused right away. */
void gc_ec_block_reduce(gc_lowerer *c, kir_kernel *k, kir_block *b, gc_ec_comb op, int v, int sh);
/* BLOCKS launch: for (r = thread; r < n; r += block) -- returns the body. */
kir_block *gc_ec_thread_loop(gc_lowerer *c, kir_kernel *k, kir_block *b, int *r, int64_t n);
/* Threads per group for a row of n elements: a warp multiple, at most 256. */
int gc_ec_row_block(gc_lowerer *c, int64_t n);

/* The window geometry of an im2col op: kernel, stride, dilation (h, w), padding
 * (top, left, bottom, right), the input's H, W and C, the output's OH and OW, and
 * the layout (nhwc: x [N, H, W, C], im2col [N*OH*OW, KH*KW*C]). */
typedef struct gc_im2col_geom {
  int64_t kern[2], st[2], dil[2], pad[4], H, W, C, OH, OW;
  int nhwc;
} gc_im2col_geom;
void gc_im2col_geom_of(const gc_op *op, gc_im2col_geom *g);

/* Window geometry of conv2d and the pools: stride, dilation, top/left padding, kernel, and
 * ah, the axis of H in the input and output (W follows): 2, or 1 for layout="nhwc". */
typedef struct gc_window {
  int64_t sh, sw, dh, dw, top, left;
  int64_t kh, kw;
  int ah;
} gc_window;
/* stride/padding/dilation/layout attributes of op (stride default dflt_sh, dflt_sw). */
void gc_window_of(const gc_op *op, int64_t kh, int64_t kw, int64_t dflt_sh, int64_t dflt_sw,
                  gc_window *w);
/* Input coordinate of a window tap as a new var: o * stride - pad + tap * dilation. */
int gc_ec_tap_coord(gc_lowerer *c, kir_kernel *k, kir_block *b, int o, int64_t stride, int64_t pad,
                    int tap, int64_t dil);

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
/* Does the group read v from its plan buffer (not computed inline)? Then it may load
 * whole 16-byte vectors of it. */
static inline int ec_reads_buffer(const gc_lowerer *c, const gc_value *v) {
  return !(v->def && c->inl[v->def->id]) && c->val_buf[v->id] >= 0;
}
/* i64 thread index of a BLOCKS group. */
static inline kir_expr *ec_thread(gc_lowerer *c) {
  return kir_cast(c->km, GRAPHC_DTYPE_I64, kir_special_ref(c->km, KIR_SP_THREAD));
}

#endif /* GC_EMIT_H */
