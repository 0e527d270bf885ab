/* fusion.h - fusion decisions: which graph ops share a kernel.
 *
 *   gc_graph --gc_fusion_plan(target, fuse)--> gc_fusion { groups in launch order }
 *   gc_lower turns each group into one kernel (codegen/lower.c).
 *
 * Decisions are deterministic (program order, op ids) and made over the
 * specialized graph, identically for both targets but for step 0 (CUDA only):
 *   1. roots      every reduce/argmax, norm, matmul, conv and pool op starts a group;
 *                 output fusion grows its epilogue: the chain of elementwise
 *                 consumers of the root's shape whose other operands do not
 *                 depend on the group (bias, activation, residual, scale, cast);
 *                 a consumer is left to its own users instead when the chain
 *                 value is stored anyway and those users can compute it inline.
 *   2. producers  in reverse program order, an elementwise / movement / splat /
 *                 iota op joins the groups of all its users when each accepts it
 *                 (loop and input fusion: computed inline through the index map;
 *                 matmul operands accept only index maps -- reshape, transpose,
 *                 broadcast, slice, split -- which become strided loads, and
 *                 splat / iota sources); cheap
 *                 producers with users in several groups are duplicated, costly
 *                 ones (transcendentals) and all reductions/contractions never.
 *                 A producer that is a graph output joins its single user group
 *                 only as an extra output written at the same index (loop groups).
 *                 Anything else starts a loop group of its own.
 *   3. siblings   loop groups of the same shape reading a common buffer, and
 *                 reductions over the same input shape and axes reading a common
 *                 buffer, merge into one kernel with several outputs (already in
 *                 step 2 when they share a costly producer: it then stays inline).
 * 0. attention  (CUDA targets with tensor cores, before step 1) the chain
 *                ctx = matmul(softmax(matmul(q, k) [* or / a scalar const] [+ mask]), v)
 *                in f16 / bf16, head dims 16, 32, 64 or 128, each value
 *                used only by the next: one group (roots[0] the second matmul),
 *                its operands read through index maps; the scores never reach
 *                memory (codegen/emit_attn.c). When ctx's only use is a chain of
 *                transposes / reshapes (the head merge), they join as its output
 *                views: the kernel writes their result directly. A causal mask
 *                (codegen/attn_mask.c: a const or iota / compare / select form that is
 *                0 on and below the diagonal j <= i + off, -inf or <= -1e4 above) marks
 *                the group causal: no mask reads, key blocks above the diagonal skipped.
 *                A causal mask combined with another (and / or of conditions, a sum of
 *                additive masks: key padding) marks it causal too, and the kernel reads
 *                only the other one (gc_fusion_group.resid).
 * No merge may create a cycle between groups (checked on the group graph).
 * Softmax, log_softmax, layernorm and rmsnorm stay whole row kernels (input and
 * output fusion around them, never decomposed into reductions + elementwise
 * ops): one pass over a row in registers / L1 beats separate kernels; how a row
 * is split across threads or blocks is a measured choice for later, on the GPU.
 * Layout stays row-major: transposes are absorbed as index maps (strided loads
 * into matmul tiles, permuted indices in loop kernels), never materialized in
 * another layout; NHWC selection for conv is out of scope here.
 * fuse = 0: one group per op (reshapes of buffers stay views), as before fusion.
 */
#ifndef GC_FUSION_H
#define GC_FUSION_H

#include "codegen/kir.h"

typedef enum gc_fusion_kind {
  GC_FUSION_VIEW,    /* no kernel: a reshape sharing its operand's buffer */
  GC_FUSION_LOOP,    /* elementwise and movement ops: one ITEMS kernel over the roots' shape */
  GC_FUSION_REDUCE,  /* reduce_* / argmax with fused input producers and epilogue */
  GC_FUSION_NORM,    /* softmax, log_softmax, layernorm, rmsnorm: one row kernel */
  GC_FUSION_MATMUL,  /* matmul with absorbed operand index maps and an epilogue */
  GC_FUSION_CONV,    /* conv2d with an epilogue */
  GC_FUSION_POOL,    /* max/avg pool with fused input producers and an epilogue */
  GC_FUSION_SPLIT,   /* split writing all its results */
  GC_FUSION_ATTENTION, /* matmul -> [scale] -> [+ mask] -> softmax -> matmul: one flash-attention kernel */
  GC_FUSION_STATE_WRITE /* cache_write: its operands from buffers, the state written in place */
} gc_fusion_kind;

/* Role bits of an op inside a group. */
enum {
  GC_FROLE_ROOT = 1,     /* defines the iteration space (or is a sibling root) */
  GC_FROLE_EPILOGUE = 2, /* output fusion: computed at the root's output index */
  GC_FROLE_WRITE = 4,    /* its result is written by this group (when materialized) */
  GC_FROLE_ELEM = 8,     /* producer computed inline per element */
  GC_FROLE_VIEW = 16,    /* producer absorbed as an index map (matmul operands) */
  GC_FROLE_MMA = 32,     /* attention's scores matmul: its operands are index maps too */
  GC_FROLE_CHEAP = 64    /* host matmul operand: cheap elementwise producers inline too */
};

/* An attention mask beside its causal part (codegen/attn_mask.c, gc_attn_causal_resid): the
 * kernel still reads it where keys are visible. */
typedef struct gc_attn_resid {
  const gc_value *v;       /* NULL: none; else the additive residual mask, or (sel) its condition */
  int sel;                 /* the residual is select(v, t, f) */
  double t, f;             /* sel: its values, in the mask's dtype (f may be -inf) */
} gc_attn_resid;

/* Most roots a sibling merge gives a reduce group (the row kernels keep a register per root). */
#define GC_FUSION_MAX_ROOTS 16

typedef struct gc_fusion_group {
  gc_fusion_kind kind;
  int n_roots;
  const gc_op **roots;     /* roots[0] names the kernel; program order */
  int n_ops;
  const gc_op **ops;       /* every member, program order */
  int *roles;              /* parallel to ops: GC_FROLE_* bits */
  int n_outs;
  const gc_value **outs;   /* values this group writes (materialized results of members) */
  const char *name;        /* kernel name: "<op>_<id>" (one op) or "fusion_<root id>"
                              ("fusion_causal_<root id>": a causal attention group) */
  int causal;              /* attention: the mask is causal (gc_attn_causal_mask), not read */
  int64_t causal_off;      /* causal: key j is visible to query row i when j <= i + causal_off */
  gc_attn_resid resid;     /* causal: a residual mask (key padding) the kernel still reads */
  int nan_guard;           /* attention: softmax -> select(ne(p, p), 0, p) -> matmul (torch SDPA's
                              guard): rows whose every key is masked give 0 */
} gc_fusion_group;

typedef struct gc_fusion {
  gc_arena arena;
  int n_groups;
  gc_fusion_group *groups; /* in launch order: every group after the groups it reads */
  int n_op_ids;
  int *home;               /* op id -> group that writes (or first computes) it; -1: none */
  int *n_homes;            /* op id -> number of groups the op is a member of */
  int n_value_ids;
  unsigned char *materialized; /* value id -> 1 when the value has a buffer */
  int fused;               /* the `fuse` argument */
} gc_fusion;

/* Decide the groups of g (specialized, verified) for target t. NULL when out
 * of memory. */
gc_fusion *gc_fusion_plan(const gc_graph *g, const kir_target *t, int fuse);
void gc_fusion_free(gc_fusion *f);

/* 1 for the ops that live in CONST buffers, not in kernels (params and consts
 * with a value list): never fused, lowered by gc_emit_const_source. */
int gc_fusion_is_const_source(const gc_op *op);
/* A const source or a state: a buffer of its own, no kernel. */
int gc_fusion_is_buffer_source(const gc_op *op);

/* Role bits of op in group gi (0: not a member). */
int gc_fusion_role(const gc_fusion *f, int gi, const gc_op *op);

/* For `graphc dot`: group_of_op_id[op id] (an array of g->next_op_id ints) gets
 * the group computing the op (the one writing it when it is duplicated), -1
 * for ops without a kernel (params, list consts, reshapes of buffers).
 * Returns the number of groups (kernels), or -1 when out of memory. */
int gc_fusion_groups(const gc_graph *g, const kir_target *t, int *group_of_op_id);

/* The decisions as text, one line per group (golden tests, --stats):
 *   "  0 matmul fusion_4: matmul %h, add %hb, relu %a -> %a"
 * Members are listed in program order; '*' marks a duplicated op, '^' an
 * absorbed index map (matmul operand). */
void gc_fusion_print(gc_sbuf *b, const gc_graph *g, const gc_fusion *f);

/* An attention group's output views (codegen/emit_attn.c): strides of chain[0]'s operand
 * in the row-major buffer of chain[n-1]'s result, through the chain's transposes and
 * reshapes (each reading the one before). 0 when a reshape is no view of it. */
#define GC_MAX_VIEW_CHAIN 8
int gc_fusion_view_strides(const gc_op *const *chain, int n, int64_t *st);

/* Is `mask`, added to attention scores of type st ([batch..., Sq, Sk]), causal: for every
 * batch entry 0 at (i, j) for j <= i + off and <= -1e4 (-inf, finfo.min) above, off >= 0?
 * Sets *off (codegen/attn_mask.c). */
int gc_attn_causal_mask(const gc_value *mask, const gc_type *st, int64_t *off);

/* Is `mask` a causal mask combined with another one (select(and(C, R), a, b), select(or(F, R),
 * b, a), add(C, R))? Sets *off and the residual *r (codegen/attn_mask.c). */
int gc_attn_causal_resid(const gc_value *mask, const gc_type *st, int64_t *off, gc_attn_resid *r);

/* Name of a group kind ("loop", "reduce", ...). */
const char *gc_fusion_kind_name(gc_fusion_kind k);

#endif /* GC_FUSION_H */
