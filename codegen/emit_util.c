/* emit_util.c - pieces every op emitter uses: kernels and params bound to plan
 * buffers, loads/stores that convert between storage and compute dtypes,
 * index decomposition, and warp/block reductions. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/emit.h"

/* ---- kernels, params, launches --------------------------------------------------------- */

/* Arithmetic happens in f32/f64/i32/i64/bool only: widen the narrow dtypes. */
gc_dtype gc_ec_compute_type(gc_dtype t) {
  switch (t) {
    case GRAPHC_DTYPE_F16:
    case GRAPHC_DTYPE_BF16:
    case GRAPHC_DTYPE_F8E4M3:
    case GRAPHC_DTYPE_F8E5M2:
    case GRAPHC_DTYPE_F8E4M3FNUZ:
    case GRAPHC_DTYPE_F8E5M2FNUZ: return GRAPHC_DTYPE_F32;
    case GRAPHC_DTYPE_I8:
    case GRAPHC_DTYPE_U8: return GRAPHC_DTYPE_I32;
    default: return t;
  }
}

/* Kernels are named after their fusion group ("<op>_<id>" or "fusion_<id>"): deterministic. */
kir_kernel *gc_ec_kernel(gc_lowerer *c, kir_launch_kind kind, int64_t n, int block) {
  kir_launch l = {kind, n < 1 ? 1 : n, block};
  return kir_kernel_new(c->km, gc_arena_strdup(&c->km->arena, c->kname), l);
}

/* A buffer parameter for plan buffer `buf`. */
int gc_ec_param_buf(gc_lowerer *c, kir_kernel *k, const char *hint, int buf, gc_dtype dt,
                    int readonly) {
  GC_ASSERT(buf >= 0 && buf < c->p->n_buffers);
  return kir_add_param(c->km, k, hint, KIR_PARAM_BUFFER, dt, readonly, buf);
}

/* Launch k next: it runs after every earlier launch, so its buffers are live now. */
void gc_ec_launch(gc_lowerer *c, kir_kernel *k) {
  if (c->oom || c->km->arena.failed) return;  /* the driver reports it */
  kir_verify(k);
  int ki = -1;
  for (int i = c->km->n_kernels - 1; i >= 0; i--)
    if (c->km->kernels[i] == k) {
      ki = i;
      break;
    }
  GC_ASSERT(ki >= 0);
  gc_plan *p = c->p;
  if (p->n_launches == c->cap_launches) {
    int cap = c->cap_launches ? 2 * c->cap_launches : 16;
    int *nl = realloc(p->launches, (size_t)cap * sizeof *nl);
    if (!nl) {
      c->oom = 1;
      return;
    }
    p->launches = nl;
    c->cap_launches = cap;
  }
  int li = p->n_launches++;
  p->launches[li] = ki;
  for (int i = 0; i < k->n_params; i++) {
    if (k->params[i].kind != KIR_PARAM_BUFFER) continue;
    gc_plan_buffer *b = &p->buffers[k->params[i].binding];
    if (b->first_use < 0 || li < b->first_use) b->first_use = li;
    if (li > b->last_use) b->last_use = li;
  }
}

/* A fresh variable (kir_add_var numbers the hint, so names stay unique). */
int gc_ec_var(gc_lowerer *c, kir_kernel *k, const char *hint, gc_dtype t) {
  return kir_add_var(c->km, k, hint, t);
}

/* Bind an expression to a fresh variable so it can be read several times. */
int gc_ec_let(gc_lowerer *c, kir_kernel *k, kir_block *b, const char *hint, kir_expr *e) {
  int v = gc_ec_var(c, k, hint, e->type);
  kir_emit_assign(c->km, b, v, e);
  return v;
}

/* Loads widen narrow storage types to the compute type. */
kir_expr *gc_ec_load(gc_lowerer *c, kir_kernel *k, int param, kir_expr *idx) {
  kir_expr *e = kir_load(c->km, k, KIR_GLOBAL, param, idx);
  return ec_cast(c, gc_ec_compute_type(k->params[param].dtype), e);
}

/* Stores narrow the value back to the buffer's dtype. */
void gc_ec_store(gc_lowerer *c, kir_kernel *k, kir_block *b, int param, kir_expr *idx,
                 kir_expr *value) {
  kir_emit_store(c->km, b, KIR_GLOBAL, param, idx, ec_cast(c, k->params[param].dtype, value));
}

/* A literal of type t (bool: v != 0). */
kir_expr *gc_ec_num(gc_lowerer *c, gc_dtype t, double v) {
  if (gc_dtype_is_float(t)) return kir_const_f(c->km, t, v);
  if (t == GRAPHC_DTYPE_BOOL) return kir_const_i(c->km, t, v != 0.0);
  return kir_const_i(c->km, t, (int64_t)v);
}

/* Negative axes count from the end. */
int gc_ec_axis(int64_t axis, int rank) {
  if (axis < 0) axis += rank;
  GC_ASSERT(axis >= 0 && axis <= rank);
  return (int)axis;
}

/* Product of a range of dims (1 when empty). */
int64_t gc_ec_prod(const int64_t *dims, int lo, int hi) {
  int64_t p = 1;
  for (int i = lo; i < hi; i++) p *= dims[i];
  return p;
}

/* Bytes of a (concrete) value, for the traffic model. */
double gc_ec_bytes(const gc_type *t) {
  return (double)gc_type_numel(t) * (double)graphc_dtype_size(t->dtype);
}

/* Cases the emitters cannot lower are user-visible errors, not crashes. */
int gc_ec_unsupported(gc_lowerer *c, const gc_op *op, const char *what) {
  gc_error_at(c->d, GRAPHC_STATUS_UNSUPPORTED, op->loc, "%s: %s is not supported by codegen",
              gc_op_infos[op->opcode].name, what);
  return -1;
}

/* ---- index math ------------------------------------------------------------------------------ */

/* Row-major decomposition: innermost coordinate first, by mod and div. */
void gc_ec_unravel(gc_lowerer *c, kir_kernel *k, kir_block *b, int pos, int rank,
                   const int64_t *dims, int *coord) {
  int rem = pos;
  for (int i = rank - 1; i >= 1; i--) {
    if (dims[i] == 1) {
      coord[i] = gc_ec_let(c, k, b, "c", ec_i64(c, 0));
      continue;
    }
    coord[i] = gc_ec_let(c, k, b, "c", ec_bin(c, KIR_REM, ec_v(c, k, rem), ec_i64(c, dims[i])));
    rem = gc_ec_let(c, k, b, "q", ec_bin(c, KIR_DIV, ec_v(c, k, rem), ec_i64(c, dims[i])));
  }
  if (rank >= 1) coord[0] = dims[0] == 1 ? gc_ec_let(c, k, b, "c", ec_i64(c, 0)) : rem;
}

/* 16-byte accesses when every dtype allows a whole vector and numel divides. */
int gc_ec_vec_width(gc_lowerer *c, int64_t numel, const gc_dtype *dts, int n) {
  if (c->t->kind != KIR_TARGET_CUDA) return 1;
  size_t widest = 1;
  for (int i = 0; i < n; i++)
    if (graphc_dtype_size(dts[i]) > widest) widest = graphc_dtype_size(dts[i]);
  int w = c->t->vector_bytes > 0 ? (int)((size_t)c->t->vector_bytes / widest) : 1;
  if (w > KIR_MAX_VEC) w = KIR_MAX_VEC;
  if (w < 2 || numel % w != 0) return 1;
  return w;
}

/* ---- reductions -------------------------------------------------------------------------- */

/* Identity of each combine in type t. */
kir_expr *gc_ec_identity(gc_lowerer *c, gc_ec_comb op, gc_dtype t) {
  if (op == GC_EC_SUM) return gc_ec_num(c, t, 0.0);
  int mx = op == GC_EC_MAX;
  if (gc_dtype_is_float(t)) return kir_const_f(c->km, t, mx ? -INFINITY : INFINITY);
  if (t == GRAPHC_DTYPE_I64) return kir_const_i(c->km, t, mx ? INT64_MIN : INT64_MAX);
  GC_ASSERT(t == GRAPHC_DTYPE_I32);
  return kir_const_i(c->km, t, mx ? INT32_MIN : INT32_MAX);
}

/* max(a, b) with a NaN on either side winning. On the GPU, KIR_MAX: LLVM's llvm.maximum,
 * one max.NaN.f32 / FMNMX.NAN (sm_80 and later) where the select below takes a compare, a
 * NaN test and a select (the f16 softmax over rows of 8192: 680 -> 584 SASS instructions,
 * up to 1 point more of copy bandwidth on rows of 1024; docs/performance.md). On the host,
 * (a > b || a != a) ? a : b, which x86 vectorizes (llvm.maximum has no x86 instruction). */
kir_expr *gc_ec_maxmin(gc_lowerer *c, kir_kernel *k, int is_max, int a, int b) {
  kir_op cmp = is_max ? KIR_GT : KIR_LT;
  if (!gc_dtype_is_float(k->vars[a].type) || c->t->kind == KIR_TARGET_CUDA)
    return ec_bin(c, is_max ? KIR_MAX : KIR_MIN, ec_v(c, k, a), ec_v(c, k, b));
  kir_expr *better = ec_bin(c, cmp, ec_v(c, k, a), ec_v(c, k, b));
  kir_expr *nan = ec_bin(c, KIR_NE, ec_v(c, k, a), ec_v(c, k, a));
  return kir_select(c->km, ec_bin(c, KIR_OR, better, nan), ec_v(c, k, a), ec_v(c, k, b));
}

/* One combine step on two variables. */
kir_expr *gc_ec_combine(gc_lowerer *c, kir_kernel *k, gc_ec_comb op, int a, int b) {
  if (op == GC_EC_SUM) return ec_bin(c, KIR_ADD, ec_v(c, k, a), ec_v(c, k, b));
  return gc_ec_maxmin(c, k, op == GC_EC_MAX, a, b);
}

/* Butterfly over aligned groups of `width` lanes (a power of two <= the warp):
 * every lane ends with its group's value. */
void gc_ec_group_reduce(gc_lowerer *c, kir_kernel *k, kir_block *b, gc_ec_comb op, int v, int width) {
  GC_ASSERT(width >= 1 && width <= c->t->warp_size && (width & (width - 1)) == 0);
  int tmp = gc_ec_var(c, k, "o", k->vars[v].type);
  for (int off = width / 2; off >= 1; off /= 2) {
    kir_emit_assign(c->km, b, tmp, kir_shfl_xor(c->km, ec_v(c, k, v), off));
    kir_emit_assign(c->km, b, v, gc_ec_combine(c, k, op, v, tmp));
  }
}

/* Warp butterfly (every lane ends with the warp's value), one slot per warp in
 * shared memory, then every thread folds the warp slots in the same order. */
void gc_ec_block_reduce(gc_lowerer *c, kir_kernel *k, kir_block *b, gc_ec_comb op, int v, int sh) {
  gc_dtype t = k->vars[v].type;
  int ws = c->t->warp_size;
  int nw = k->launch.block / ws;
  GC_ASSERT(nw >= 1 && nw * ws == k->launch.block);
  gc_ec_group_reduce(c, k, b, op, v, ws);
  if (nw == 1) return;
  int tmp = gc_ec_var(c, k, "o", t);
  kir_block *then_b;
  kir_expr *lane0 = ec_bin(c, KIR_EQ, kir_special_ref(c->km, KIR_SP_LANE), ec_i32(c, 0));
  kir_emit_if(c->km, b, lane0, &then_b, NULL);
  kir_expr *wi = kir_cast(c->km, GRAPHC_DTYPE_I64, kir_special_ref(c->km, KIR_SP_WARP));
  kir_emit_store(c->km, then_b, KIR_SHARED, sh, wi, ec_v(c, k, v));
  kir_emit_barrier(c->km, b);
  kir_emit_assign(c->km, b, v, kir_load(c->km, k, KIR_SHARED, sh, ec_i64(c, 0)));
  for (int w = 1; w < nw; w++) {
    kir_emit_assign(c->km, b, tmp, kir_load(c->km, k, KIR_SHARED, sh, ec_i64(c, w)));
    kir_emit_assign(c->km, b, v, gc_ec_combine(c, k, op, v, tmp));
  }
  kir_emit_barrier(c->km, b);
}

/* Threads of a group stride over a row together. */
kir_block *gc_ec_thread_loop(gc_lowerer *c, kir_kernel *k, kir_block *b, int *r, int64_t n) {
  *r = gc_ec_var(c, k, "r", GRAPHC_DTYPE_I64);
  return kir_emit_for(c->km, b, *r, ec_thread(c), ec_i64(c, n), ec_i64(c, k->launch.block));
}

/* Short rows get fewer threads (still whole warps), long rows 256. */
int gc_ec_row_block(gc_lowerer *c, int64_t n) {
  int ws = c->t->warp_size > 0 ? c->t->warp_size : 32;
  int64_t b = (n + ws - 1) / ws * ws;
  int cap = c->t->max_threads > 0 && c->t->max_threads < 256 ? c->t->max_threads : 256;
  return b > cap ? cap : (int)b;
}

/* ---- windows (conv2d, pools) ------------------------------------------------------------ */

/* stride/padding/dilation/layout attributes; padding is [ph, pw] or [top, left, bottom, right]. */
void gc_window_of(const gc_op *op, int64_t kh, int64_t kw, int64_t dflt_sh, int64_t dflt_sw,
                  gc_window *w) {
  int64_t v[4];
  w->ah = strcmp(gc_op_attr_str(op, "layout", ""), "nhwc") == 0 ? 1 : 2;
  w->kh = kh;
  w->kw = kw;
  w->sh = dflt_sh;
  w->sw = dflt_sw;
  w->dh = w->dw = 1;
  w->top = w->left = 0;
  const gc_attr *a;
  if ((a = gc_op_attr(op, "stride")) && gc_attr_ints(a, v, 4) == 2) {
    w->sh = v[0];
    w->sw = v[1];
  }
  if ((a = gc_op_attr(op, "dilation")) && gc_attr_ints(a, v, 4) == 2) {
    w->dh = v[0];
    w->dw = v[1];
  }
  if ((a = gc_op_attr(op, "padding")) && gc_attr_ints(a, v, 4) >= 2) {
    w->top = v[0];
    w->left = v[1];
  }
}

/* Input coordinate of a window tap: o * stride - pad + tap * dilation. */
int gc_ec_tap_coord(gc_lowerer *c, kir_kernel *k, kir_block *b, int o, int64_t stride, int64_t pad,
                    int tap, int64_t dil) {
  kir_expr *e = ec_mul(c, ec_v(c, k, o), ec_i64(c, stride));
  e = ec_bin(c, KIR_SUB, e, ec_i64(c, pad));
  e = ec_add(c, e, ec_mul(c, ec_v(c, k, tap), ec_i64(c, dil)));
  return gc_ec_let(c, k, b, "ih", e);
}
