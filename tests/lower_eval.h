/* lower_eval.h - a host evaluator for execution plans, for test_lower.c.
 *
 * Runs every launch of a gc_plan on the CPU, so the lowering's index math,
 * buffer bindings and buffer assignment are checked numerically (against the
 * interpreter) on a machine without a GPU:
 *   ITEMS   the body once per item
 *   BLOCKS  per group, all `block` threads in lockstep over the statements that
 *           contain a barrier or a shuffle (those must be reached uniformly),
 *           each thread alone through the others; shuffles read the other
 *           lanes' values from before the statement.
 * Memory: INPUT/OUTPUT/CONST buffers are the caller's; TEMP buffers live at
 * their offsets in one arena, so overlapping live buffers corrupt results.
 * Every load and store is bounds-checked against its buffer; the arena and
 * shared memory start poisoned, scratch arrays again before every item. Arithmetic follows the CUDA printer's
 * semantics (f32 ops rounded to float, wrapping ints, x/0 = 0, saturating
 * casts, NaN-propagating min/max).
 *
 * Header-only (static functions) for one suite.
 */
#ifndef GC_LOWER_EVAL_H
#define GC_LOWER_EVAL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/lower.h"
#include "interp/interp.h"
#include "ir/dtype.h"

/* A scalar: floats in f (already rounded to their type), ints and bools in i. */
typedef struct ev_val {
  double f;
  int64_t i;
} ev_val;

typedef struct ev_mem {
  unsigned char *p;
  int64_t n;       /* elements */
  gc_dtype t;
} ev_mem;

typedef struct ev_kernel_ctx {
  const kir_kernel *k;
  ev_mem *params;  /* one per kernel param (buffers only) */
  ev_mem *shared;
  ev_mem *scratch;            /* per item: poisoned again before each one */
  int nthreads;    /* 1 for ITEMS */
  ev_val *vars;    /* nthreads x n_vars */
  ev_val *snap;    /* shuffle snapshot */
  struct ev_mbar **mbar;      /* per shared array of I64: the barrier state of each element */
  char err[256];   /* first error */
} ev_kernel_ctx;

/* A shared-memory barrier (KIR_S_MBAR_*): `phase` phases have completed; the current one
 * waits for `pending` arrivals and `tx` bytes of bulk copies. */
typedef struct ev_mbar {
  int init, count, pending;
  int64_t tx, phase;
} ev_mbar;

/* Record the first evaluation error (bounds, non-uniform barrier). */
static void ev_fail(ev_kernel_ctx *c, const char *fmt, const char *a, long long x, long long y) {
  if (c->err[0]) return;
  snprintf(c->err, sizeof c->err, fmt, a, x, y);
}

/* Wrap an integer to the width of t. */
static int64_t ev_wrap(gc_dtype t, int64_t v) {
  switch (t) {
    case GRAPHC_DTYPE_I32: return (int32_t)(uint32_t)(uint64_t)v;
    case GRAPHC_DTYPE_I8: return (int8_t)(uint8_t)(uint64_t)v;
    case GRAPHC_DTYPE_U8: return (uint8_t)(uint64_t)v;
    case GRAPHC_DTYPE_BOOL: return v != 0;
    default: return v;
  }
}

/* Round a double to float type t. */
static double ev_round(gc_dtype t, double v) {
  unsigned char tmp[8];
  switch (t) {
    case GRAPHC_DTYPE_F32: return (double)(float)v;
    case GRAPHC_DTYPE_F16:
    case GRAPHC_DTYPE_BF16:
      gc_store_f64(tmp, t, 0, v);
      return gc_load_f64(tmp, t, 0);
    default: return v;
  }
}

/* Read element i of memory m. */
static ev_val ev_read(const ev_mem *m, int64_t i) {
  ev_val v = {0, 0};
  const unsigned char *p = m->p;
  switch (m->t) {
    case GRAPHC_DTYPE_I64: memcpy(&v.i, p + 8 * i, 8); break;
    case GRAPHC_DTYPE_I32: { int32_t x; memcpy(&x, p + 4 * i, 4); v.i = x; break; }
    case GRAPHC_DTYPE_I8: v.i = (int8_t)p[i]; break;
    case GRAPHC_DTYPE_U8:
    case GRAPHC_DTYPE_F8E4M3:  /* fp8 values are their bits (KIR_E_BITCAST) */
    case GRAPHC_DTYPE_F8E5M2: v.i = p[i]; break;
    case GRAPHC_DTYPE_BOOL: v.i = p[i] != 0; break;
    default: v.f = gc_load_f64(p, m->t, i); break;
  }
  return v;
}

/* Write element i of memory m (v already of m's type). */
static void ev_write(ev_mem *m, int64_t i, ev_val v) {
  unsigned char *p = m->p;
  switch (m->t) {
    case GRAPHC_DTYPE_I64: memcpy(p + 8 * i, &v.i, 8); break;
    case GRAPHC_DTYPE_I32: { int32_t x = (int32_t)v.i; memcpy(p + 4 * i, &x, 4); break; }
    case GRAPHC_DTYPE_I8:
    case GRAPHC_DTYPE_U8:
    case GRAPHC_DTYPE_F8E4M3:
    case GRAPHC_DTYPE_F8E5M2:
    case GRAPHC_DTYPE_BOOL: p[i] = (unsigned char)v.i; break;
    default: gc_store_f64(p, m->t, i, v.f); break;
  }
}

/* Convert v from type `from` to `to` like the printers (saturating float->int). */
static ev_val ev_convert(ev_val v, gc_dtype from, gc_dtype to) {
  ev_val r = {0, 0};
  int ff = gc_dtype_is_float(from), tf = gc_dtype_is_float(to);
  if (to == GRAPHC_DTYPE_BOOL) {
    r.i = ff ? v.f != 0.0 : v.i != 0;
  } else if (tf) {
    r.f = ev_round(to, ff ? v.f : (to == GRAPHC_DTYPE_F32 ? (double)(float)v.i : (double)v.i));
  } else if (ff) {
    double lo, hi;
    switch (to) {
      case GRAPHC_DTYPE_I64: lo = -0x1p63; hi = 0x1p63; break;
      case GRAPHC_DTYPE_I32: lo = INT32_MIN; hi = INT32_MAX; break;
      case GRAPHC_DTYPE_I8: lo = -128; hi = 127; break;
      default: lo = 0; hi = 255; break;
    }
    if (isnan(v.f)) r.i = 0;
    else if (v.f <= lo) r.i = to == GRAPHC_DTYPE_I64 ? INT64_MIN : (int64_t)lo;
    else if (v.f >= hi) r.i = to == GRAPHC_DTYPE_I64 ? INT64_MAX : (int64_t)hi;
    else r.i = (int64_t)trunc(v.f);
  } else {
    r.i = ev_wrap(to, v.i);
  }
  return r;
}

static ev_val ev_expr(ev_kernel_ctx *c, int th, const kir_expr *e);

/* v's bits as `to` (f32/f64 <-> i32/i64; fp8 <-> u8 are bits in .i on both sides). */
static ev_val ev_bitcast(ev_val v, gc_dtype from, gc_dtype to) {
  ev_val r = {0, 0};
  if (from == GRAPHC_DTYPE_F32) { float f = (float)v.f; int32_t x; memcpy(&x, &f, 4); r.i = x; }
  else if (to == GRAPHC_DTYPE_F32) { int32_t x = (int32_t)v.i; float f; memcpy(&f, &x, 4); r.f = f; }
  else if (from == GRAPHC_DTYPE_F64) memcpy(&r.i, &v.f, 8);
  else if (to == GRAPHC_DTYPE_F64) memcpy(&r.f, &v.i, 8);
  else r.i = v.i & 0xff;
  return r;
}

/* Unary op on a value of type t. */
static ev_val ev_unary(kir_op op, gc_dtype t, ev_val a) {
  ev_val r = {0, 0};
  int f32 = t == GRAPHC_DTYPE_F32;
  if (gc_dtype_is_float(t)) {
    double x = a.f, y;
    switch (op) {
      case KIR_NEG: y = -x; break;
      case KIR_ABS: y = fabs(x); break;
      case KIR_EXP: y = f32 ? expf((float)x) : exp(x); break;
      case KIR_EXP2: y = f32 ? exp2f((float)x) : exp2(x); break;
      case KIR_LOG: y = f32 ? logf((float)x) : log(x); break;
      case KIR_SQRT: y = f32 ? sqrtf((float)x) : sqrt(x); break;
      case KIR_RSQRT: y = f32 ? 1.0f / sqrtf((float)x) : 1.0 / sqrt(x); break;
      case KIR_TANH: case KIR_TANH_APPROX: y = f32 ? tanhf((float)x) : tanh(x); break;
      case KIR_RCP_APPROX: y = 1.0f / (float)x; break;
      case KIR_TF32_ROUND: {  /* nearest, ties away: add half of the 13 dropped bits */
        float fx = (float)x;
        uint32_t u;
        memcpy(&u, &fx, 4);
        if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & ~0x1fffu;
        memcpy(&fx, &u, 4);
        y = fx;
        break;
      }
      case KIR_SIGMOID: y = x < -88.0 ? 0.0 : 1.0 / (1.0 + exp(-x)); break;
      case KIR_ERF: y = f32 ? erff((float)x) : erf(x); break;
      case KIR_SIN: y = f32 ? sinf((float)x) : sin(x); break;
      case KIR_COS: y = f32 ? cosf((float)x) : cos(x); break;
      case KIR_FLOOR: y = floor(x); break;
      case KIR_CEIL: y = ceil(x); break;
      default: y = NAN; break;
    }
    r.f = ev_round(t, y);
    return r;
  }
  switch (op) {
    case KIR_NEG: r.i = ev_wrap(t, (int64_t)(0 - (uint64_t)a.i)); break;
    case KIR_ABS: r.i = a.i < 0 ? ev_wrap(t, (int64_t)(0 - (uint64_t)a.i)) : a.i; break;
    case KIR_NOT: r.i = t == GRAPHC_DTYPE_BOOL ? !a.i : ev_wrap(t, ~a.i); break;
    default: break;
  }
  return r;
}

/* Binary op on two values of type t (comparisons return bool in i). */
static ev_val ev_binary(kir_op op, gc_dtype t, ev_val a, ev_val b) {
  ev_val r = {0, 0};
  if (gc_dtype_is_float(t)) {
    double x = a.f, y = b.f, z = 0;
    int f32 = t == GRAPHC_DTYPE_F32;
    switch (op) {
      case KIR_ADD: z = x + y; break;
      case KIR_SUB: z = x - y; break;
      case KIR_MUL: z = x * y; break;
      case KIR_DIV: z = x / y; break;
      case KIR_REM: z = fmod(x, y); break;
      case KIR_POW: z = f32 ? powf((float)x, (float)y) : pow(x, y); break;
      case KIR_MIN: z = (isnan(x) || isnan(y)) ? NAN : (x < y ? x : y); break;
      case KIR_MAX: z = (isnan(x) || isnan(y)) ? NAN : (x > y ? x : y); break;
      case KIR_EQ: r.i = x == y; return r;
      case KIR_NE: r.i = x != y; return r;
      case KIR_LT: r.i = x < y; return r;
      case KIR_LE: r.i = x <= y; return r;
      case KIR_GT: r.i = x > y; return r;
      case KIR_GE: r.i = x >= y; return r;
      default: z = NAN; break;
    }
    r.f = ev_round(t, z);
    return r;
  }
  int64_t x = a.i, y = b.i;
  uint64_t ux = (uint64_t)x, uy = (uint64_t)y;
  switch (op) {
    case KIR_ADD: r.i = ev_wrap(t, (int64_t)(ux + uy)); break;
    case KIR_SUB: r.i = ev_wrap(t, (int64_t)(ux - uy)); break;
    case KIR_MUL: r.i = ev_wrap(t, (int64_t)(ux * uy)); break;
    case KIR_DIV: r.i = y == 0 ? 0 : y == -1 ? ev_wrap(t, (int64_t)(0 - ux)) : x / y; break;
    case KIR_REM: r.i = (y == 0 || y == -1) ? 0 : x % y; break;
    case KIR_MIN: r.i = x < y ? x : y; break;
    case KIR_MAX: r.i = x > y ? x : y; break;
    case KIR_AND: r.i = x & y; break;
    case KIR_OR: r.i = x | y; break;
    case KIR_XOR: r.i = x ^ y; break;
    case KIR_EQ: r.i = x == y; break;
    case KIR_NE: r.i = x != y; break;
    case KIR_LT: r.i = x < y; break;
    case KIR_LE: r.i = x <= y; break;
    case KIR_GT: r.i = x > y; break;
    case KIR_GE: r.i = x >= y; break;
    default: break;
  }
  return r;
}

/* Memory of a load/store target with a bounds check; NULL when out of range. */
static ev_mem *ev_target(ev_kernel_ctx *c, kir_space sp, int buf, int64_t idx, int width) {
  ev_mem *m = sp == KIR_GLOBAL ? &c->params[buf] : sp == KIR_SCRATCH ? &c->scratch[buf] : &c->shared[buf];
  if (idx < 0 || idx + width > m->n) {
    ev_fail(c, "%s: index %lld out of range (%lld elements)",
            sp == KIR_GLOBAL ? c->k->params[buf].name : sp == KIR_SCRATCH ? "scratch" : "shared",
            (long long)idx, (long long)m->n);
    return NULL;
  }
  if (width > 1 && idx % width != 0)
    ev_fail(c, "%s: vector index %lld not a multiple of %lld", sp == KIR_GLOBAL ? c->k->params[buf].name : "shared",
            (long long)idx, width);
  return m;
}

/* Value of expression e in thread th. */
static ev_val ev_expr(ev_kernel_ctx *c, int th, const kir_expr *e) {
  ev_val r = {0, 0};
  ev_val *vars = c->vars + (size_t)th * (size_t)c->k->n_vars;
  switch (e->kind) {
    case KIR_E_CONST:
      if (gc_dtype_is_float(e->type))
        r.f = ev_round(e->type, e->u.f);
      else
        r.i = e->u.i;
      return r;
    case KIR_E_VAR: return vars[e->u.var];
    case KIR_E_PARAM: return r;
    case KIR_E_SPECIAL:
      switch (e->u.special) {
        case KIR_SP_THREAD: r.i = th; break;
        case KIR_SP_BLOCK_DIM: r.i = c->nthreads; break;
        case KIR_SP_LANE: r.i = th % 32; break;
        case KIR_SP_WARP: r.i = th / 32; break;
      }
      return r;
    case KIR_E_UNARY:
      if (e->u.op.op == KIR_F8E4M3_SAT || e->u.op.op == KIR_F8E5M2_SAT) {  /* bits in .i */
        ev_val r = {0, 0};
        r.i = gc_f64_to_f8(e->type, (float)ev_expr(c, th, e->u.op.a).f, 1);
        return r;
      }
      return ev_unary(e->u.op.op, e->type, ev_expr(c, th, e->u.op.a));
    case KIR_E_BINARY:
      return ev_binary(e->u.op.op, e->u.op.a->type, ev_expr(c, th, e->u.op.a), ev_expr(c, th, e->u.op.b));
    case KIR_E_SELECT:
      return ev_expr(c, th, e->u.op.a).i ? ev_expr(c, th, e->u.op.b) : ev_expr(c, th, e->u.op.c);
    case KIR_E_CAST: return ev_convert(ev_expr(c, th, e->u.op.a), e->u.op.a->type, e->type);
    case KIR_E_BITCAST: return ev_bitcast(ev_expr(c, th, e->u.op.a), e->u.op.a->type, e->type);
    case KIR_E_LOAD: {
      int64_t idx = ev_expr(c, th, e->u.mem.index).i;
      ev_mem *m = ev_target(c, e->u.mem.space, e->u.mem.buf, idx, 1);
      return m ? ev_read(m, idx) : r;
    }
    case KIR_E_SHFL_XOR: {
      /* the operand is read in the source lane, from the snapshot taken before the statement */
      int src = (th & ~31) | ((th % 32) ^ e->u.shfl.mask);
      ev_val *saved = c->vars;
      c->vars = c->snap;
      r = ev_expr(c, src, e->u.shfl.a);
      c->vars = saved;
      return r;
    }
    case KIR_E_PACK2: {
      /* f32 operands rounded to nearest even, as a cast or store to f16/bf16 would */
      int h = e->u.pack.dtype == GRAPHC_DTYPE_F16;
      float lo = (float)ev_expr(c, th, e->u.pack.lo).f, hi = (float)ev_expr(c, th, e->u.pack.hi).f;
      uint32_t l = h ? gc_f64_to_f16(lo) : gc_f64_to_bf16(lo);
      uint32_t u = h ? gc_f64_to_f16(hi) : gc_f64_to_bf16(hi);
      r.i = (int32_t)(l | u << 16);
      return r;
    }
  }
  return r;
}

/* Does statement s (or anything inside) need the group in lockstep? */
static int ev_expr_sync(const kir_expr *e) {
  if (!e) return 0;
  switch (e->kind) {
    case KIR_E_SHFL_XOR: return 1;
    case KIR_E_UNARY:
    case KIR_E_BITCAST:
    case KIR_E_CAST: return ev_expr_sync(e->u.op.a);
    case KIR_E_BINARY: return ev_expr_sync(e->u.op.a) || ev_expr_sync(e->u.op.b);
    case KIR_E_SELECT: return ev_expr_sync(e->u.op.a) || ev_expr_sync(e->u.op.b) || ev_expr_sync(e->u.op.c);
    case KIR_E_LOAD: return ev_expr_sync(e->u.mem.index);
    case KIR_E_PACK2: return ev_expr_sync(e->u.pack.lo) || ev_expr_sync(e->u.pack.hi);
    default: return 0;
  }
}

static int ev_block_sync(const kir_block *b);

/* Statement-level version of ev_expr_sync. */
static int ev_stmt_sync(const kir_stmt *s) {
  switch (s->kind) {
    case KIR_S_BARRIER: case KIR_S_LDMATRIX: case KIR_S_MMA: case KIR_S_WGMMA: return 1;
    case KIR_S_ASSIGN: return ev_expr_sync(s->u.assign.value);
    case KIR_S_STORE: return ev_expr_sync(s->u.store.value) || ev_expr_sync(s->u.store.index);
    case KIR_S_FOR: return ev_block_sync(&s->u.loop.body);
    case KIR_S_IF: return ev_block_sync(&s->u.cond.then) || ev_block_sync(&s->u.cond.els);
    default: return 0;
  }
}

/* Any statement of b needs lockstep. */
static int ev_block_sync(const kir_block *b) {
  for (const kir_stmt *s = b->head; s; s = s->next)
    if (ev_stmt_sync(s)) return 1;
  return 0;
}

static void ev_block(ev_kernel_ctx *c, int th, const kir_block *b);

static void ev_tma_load(ev_kernel_ctx *c, int th, const kir_stmt *s);
static void ev_mbar_stmt(ev_kernel_ctx *c, int th, const kir_stmt *s);

/* One statement in one thread. */
static void ev_stmt(ev_kernel_ctx *c, int th, const kir_stmt *s) {
  ev_val *vars = c->vars + (size_t)th * (size_t)c->k->n_vars;
  switch (s->kind) {
    case KIR_S_ASSIGN: vars[s->u.assign.var] = ev_expr(c, th, s->u.assign.value); break;
    case KIR_S_STORE: {
      int64_t idx = ev_expr(c, th, s->u.store.index).i;
      ev_val v = ev_expr(c, th, s->u.store.value);
      ev_mem *m = ev_target(c, s->u.store.space, s->u.store.buf, idx, 1);
      if (m) ev_write(m, idx, v);
      break;
    }
    case KIR_S_LOAD_VEC: {
      int64_t idx = ev_expr(c, th, s->u.vec.index).i;
      ev_mem *m = ev_target(c, s->u.vec.space, s->u.vec.buf, idx, s->u.vec.width);
      for (int i = 0; m && i < s->u.vec.width; i++) vars[s->u.vec.vars[i]] = ev_read(m, idx + i);
      break;
    }
    case KIR_S_STORE_VEC: {
      int64_t idx = ev_expr(c, th, s->u.vec.index).i;
      ev_val v[KIR_MAX_VEC];
      for (int i = 0; i < s->u.vec.width; i++) v[i] = ev_expr(c, th, s->u.vec.values[i]);
      ev_mem *m = ev_target(c, s->u.vec.space, s->u.vec.buf, idx, s->u.vec.width);
      for (int i = 0; m && i < s->u.vec.width; i++) ev_write(m, idx + i, v[i]);
      break;
    }
    case KIR_S_FOR: {
      int64_t lo = ev_expr(c, th, s->u.loop.lo).i, hi = ev_expr(c, th, s->u.loop.hi).i;
      int64_t st = ev_expr(c, th, s->u.loop.step).i;
      for (int64_t i = lo; i < hi && !c->err[0]; i += st) {
        vars[s->u.loop.var].i = i;
        ev_block(c, th, &s->u.loop.body);
      }
      break;
    }
    case KIR_S_IF:
      if (ev_expr(c, th, s->u.cond.cond).i)
        ev_block(c, th, &s->u.cond.then);
      else
        ev_block(c, th, &s->u.cond.els);
      break;
    case KIR_S_CP_ASYNC: {
      /* done at once: cp.async.wait + barrier order it before any use */
      ev_mem *sm = &c->shared[s->u.copy.sbuf];
      int64_t es = (int64_t)graphc_dtype_size(sm->t), w = 16 / es;
      int64_t si = ev_expr(c, th, s->u.copy.sindex).i;
      int pred = (int)ev_expr(c, th, s->u.copy.pred).i;
      ev_mem *dst = ev_target(c, KIR_SHARED, s->u.copy.sbuf, si, (int)w);
      if (!dst) break;
      if (!pred) {
        memset(dst->p + si * es, 0, 16);
        break;
      }
      int64_t gi = ev_expr(c, th, s->u.copy.gindex).i;
      ev_mem *src = ev_target(c, KIR_GLOBAL, s->u.copy.gbuf, gi, (int)w);
      if (src) memcpy(dst->p + si * es, src->p + gi * es, 16);
      break;
    }
    case KIR_S_CP_COMMIT: case KIR_S_CP_WAIT: case KIR_S_BARRIER: break;
    /* copies land at once and wgmmas complete at once: the fences and groups order nothing */
    case KIR_S_FENCE_ASYNC: case KIR_S_WG_FENCE: case KIR_S_WG_COMMIT: case KIR_S_WG_WAIT: break;
    case KIR_S_LDMATRIX: case KIR_S_MMA: case KIR_S_WGMMA: ev_fail(c, "%swarp-collective statement outside lockstep%lld%lld", "", 0, 0); break;
    case KIR_S_MBAR_INIT: case KIR_S_MBAR_EXPECT: case KIR_S_MBAR_WAIT: ev_mbar_stmt(c, th, s); break;
    case KIR_S_TMA_LOAD: ev_tma_load(c, th, s); break;
    case KIR_S_TMAP_ACQUIRE: break;  /* the maps are the kernel's params, unchanged while it runs */
  }
}

/* The barrier a KIR_S_MBAR_* or TMA statement names in thread th (NULL after an error). */
static ev_mbar *ev_mbar_at(ev_kernel_ctx *c, int th, int buf, const kir_expr *index) {
  int64_t i = ev_expr(c, th, index).i;
  if (!ev_target(c, KIR_SHARED, buf, i, 1)) return NULL;
  return &c->mbar[buf][i];
}

/* The current phase completes once every arrival and every byte is in. */
static void ev_mbar_step(ev_mbar *b) {
  if (b->pending == 0 && b->tx == 0) {
    b->phase++;
    b->pending = b->count;
  }
}

/* cp.async.bulk.tensor, done at once: the box at the coordinates (zeros outside the tensor)
 * into shared memory, 128-byte rows swizzled as TMA does, then the bytes complete on the
 * barrier. */
static void ev_tma_load(ev_kernel_ctx *c, int th, const kir_stmt *s) {
  const kir_param *q = &c->k->params[s->u.tma.tmap];
  const kir_tmap *t = &q->tmap;
  const ev_mem *src = &c->params[s->u.tma.tmap];
  int64_t es = (int64_t)graphc_dtype_size(q->dtype), co[KIR_TMAP_MAX_RANK], n = 1;
  for (int i = 0; i < t->rank; i++) {
    co[i] = ev_expr(c, th, s->u.tma.coord[i]).i;
    n *= t->box[i];
  }
  int64_t si = ev_expr(c, th, s->u.tma.sindex).i;
  ev_mem *dst = &c->shared[s->u.tma.sbuf];
  if (si < 0 || si + n > dst->n) {
    ev_fail(c, "%stma.load: shared elements %lld.. of %lld", "", (long long)si, (long long)dst->n);
    return;
  }
  ev_mbar *b = ev_mbar_at(c, th, s->u.tma.mbuf, s->u.tma.mindex);
  if (!b) return;
  if (t->swizzle && (si * es) % 1024 != 0) {
    ev_fail(c, "%stma.load: swizzled destination at byte %lld, %lld past a 1024-byte boundary", "",
            (long long)(si * es), (long long)(si * es % 1024));
    return;
  }
  for (int64_t l = 0; l < n; l++) {
    int64_t r = l, off = (int64_t)t->offset;
    int in = 1;
    for (int i = 0; i < t->rank; i++) {
      int64_t x = co[i] + r % t->box[i];
      r /= t->box[i];
      in = in && x >= 0 && x < t->dims[i];
      off += x * t->strides[i];
    }
    int64_t db = l * es;
    if (t->swizzle) db = db / 128 * 128 + (((db % 128) / 16) ^ (db / 128 % 8)) * 16 + db % 16;
    unsigned char *d = dst->p + si * es + db;
    if (!in) {
      memset(d, 0, (size_t)es);
    } else if (off < 0 || off + es > src->n * es) {
      ev_fail(c, "%s: tensor map reads byte %lld of %lld", q->name, (long long)off, (long long)(src->n * es));
      return;
    } else {
      memcpy(d, src->p + off, (size_t)es);
    }
  }
  if (!b->init) {
    ev_fail(c, "%stma.load completes on a barrier never initialized", "", 0, 0);
    return;
  }
  b->tx -= n * es;
  ev_mbar_step(b);
}

/* The barrier statements; a wait that would block is an error (copies land at once, so
 * only a missing arrival or a wrong parity can leave a phase open). */
static void ev_mbar_stmt(ev_kernel_ctx *c, int th, const kir_stmt *s) {
  ev_mbar *b = ev_mbar_at(c, th, s->u.mbar.buf, s->u.mbar.index);
  if (!b) return;
  if (s->kind == KIR_S_MBAR_INIT) {
    *b = (ev_mbar){1, s->u.mbar.count, s->u.mbar.count, 0, 0};
    return;
  }
  if (!b->init) {
    ev_fail(c, "%smbarrier used before mbarrier.init", "", 0, 0);
    return;
  }
  if (s->kind == KIR_S_MBAR_EXPECT) {
    b->tx += s->u.mbar.count;
    b->pending--;
    ev_mbar_step(b);
    return;
  }
  int64_t parity = ev_expr(c, th, s->u.mbar.parity).i;
  if ((b->phase & 1) == (parity & 1))
    ev_fail(c, "%smbarrier wait on parity %lld would block: phase %lld still open", "", (long long)parity,
            (long long)b->phase);
}

/* 16-bit element (row, col) of an 8x8 matrix whose row r starts at byte rows[r] of m. */
static uint32_t ev_b16(const ev_mem *m, const int64_t *rows, int r, int col) {
  uint16_t x;
  memcpy(&x, m->p + rows[r] + 2 * col, 2);
  return x;
}

/* ldmatrix.x4 for the 32 lanes of warp w. */
static void ev_ldmatrix(ev_kernel_ctx *c, int w, const kir_stmt *s) {
  ev_mem *m = &c->shared[s->u.ldm.buf];
  int64_t es = (int64_t)graphc_dtype_size(m->t), rows[32];
  int nv = c->k->n_vars;
  for (int l = 0; l < 32; l++) {
    int64_t idx = ev_expr(c, w * 32 + l, s->u.ldm.index).i;
    if (!ev_target(c, KIR_SHARED, s->u.ldm.buf, idx, (int)(16 / es))) return;
    rows[l] = idx * es;
  }
  for (int l = 0; l < 32; l++) {
    int g = l / 4, t = l % 4;
    for (int q = 0; q < 4; q++) {
      const int64_t *mr = rows + 8 * q;
      uint32_t lo, hi;
      if (s->u.ldm.trans) {
        lo = ev_b16(m, mr, 2 * t, g);
        hi = ev_b16(m, mr, 2 * t + 1, g);
      } else {
        lo = ev_b16(m, mr, g, 2 * t);
        hi = ev_b16(m, mr, g, 2 * t + 1);
      }
      c->vars[(size_t)(w * 32 + l) * nv + s->u.ldm.vars[q]].i = (int32_t)(lo | hi << 16);
    }
  }
}

/* Operand value of a fragment register: half h (0 low, 1 high) of a 16-bit pair, or a tf32
 * (from an i32 variable's bits or an f32 variable's value). */
static double ev_frag(kir_mma_kind kind, ev_val reg, gc_dtype vt, int h) {
  uint32_t u = (uint32_t)reg.i;
  if (vt == GRAPHC_DTYPE_F32) {
    float f = (float)reg.f;
    memcpy(&u, &f, 4);
  }
  if (kind == KIR_MMA_TF32) {
    float f;
    u &= ~(uint32_t)0x1fff;  /* the tensor cores read 10 mantissa bits */
    memcpy(&f, &u, 4);
    return f;
  }
  unsigned char b[2] = {(unsigned char)(u >> (16 * h)), (unsigned char)(u >> (16 * h + 8))};
  return gc_load_f64(b, kind == KIR_MMA_F16 ? GRAPHC_DTYPE_F16 : GRAPHC_DTYPE_BF16, 0);
}

/* mma.sync for the 32 lanes of warp w (products exact, sum in double, rounded to f32). */
static void ev_mma(ev_kernel_ctx *c, int w, const kir_stmt *s) {
  kir_mma_kind kind = s->u.mma.kind;
  int K = kir_mma_k(kind), nv = c->k->n_vars;
  double A[16][16], B[16][8], C[16][8];
  for (int l = 0; l < 32; l++) {
    ev_val *v = c->vars + (size_t)(w * 32 + l) * nv;
    int g = l / 4, t = l % 4;
    const int *a = s->u.mma.a, *bf = s->u.mma.b, *d = s->u.mma.d;
    if (kind == KIR_MMA_TF32) {
      A[g][t] = ev_frag(kind, v[a[0]], c->k->vars[a[0]].type, 0);
      A[g + 8][t] = ev_frag(kind, v[a[1]], c->k->vars[a[1]].type, 0);
      A[g][t + 4] = ev_frag(kind, v[a[2]], c->k->vars[a[2]].type, 0);
      A[g + 8][t + 4] = ev_frag(kind, v[a[3]], c->k->vars[a[3]].type, 0);
      B[t][g] = ev_frag(kind, v[bf[0]], c->k->vars[bf[0]].type, 0);
      B[t + 4][g] = ev_frag(kind, v[bf[1]], c->k->vars[bf[1]].type, 0);
    } else {
      for (int h = 0; h < 2; h++) {
        A[g][2 * t + h] = ev_frag(kind, v[a[0]], c->k->vars[a[0]].type, h);
        A[g + 8][2 * t + h] = ev_frag(kind, v[a[1]], c->k->vars[a[1]].type, h);
        A[g][2 * t + 8 + h] = ev_frag(kind, v[a[2]], c->k->vars[a[2]].type, h);
        A[g + 8][2 * t + 8 + h] = ev_frag(kind, v[a[3]], c->k->vars[a[3]].type, h);
        B[2 * t + h][g] = ev_frag(kind, v[bf[0]], c->k->vars[bf[0]].type, h);
        B[2 * t + 8 + h][g] = ev_frag(kind, v[bf[1]], c->k->vars[bf[1]].type, h);
      }
    }
    C[g][2 * t] = v[d[0]].f;
    C[g][2 * t + 1] = v[d[1]].f;
    C[g + 8][2 * t] = v[d[2]].f;
    C[g + 8][2 * t + 1] = v[d[3]].f;
  }
  for (int l = 0; l < 32; l++) {
    ev_val *v = c->vars + (size_t)(w * 32 + l) * nv;
    int g = l / 4, t = l % 4;
    for (int j = 0; j < 4; j++) {
      int r = g + 8 * (j >> 1), col = 2 * t + (j & 1);
      double acc = C[r][col];
      for (int kk = 0; kk < K; kk++) acc += A[r][kk] * B[kk][col];
      v[s->u.mma.d[j]].f = (double)(float)acc;
    }
  }
}

/* Byte offset in its shared array of element (mn, kk) of a WGMMA operand starting at byte
 * `start` (kir_wg_opnd): K-major rows are M or N (128 bytes of K each, 8-row groups sbo
 * apart); MN-major rows are K (128 bytes of N each, 8-row groups sbo apart, 64-wide N
 * blocks lbo apart). Then the 128-byte swizzle: address bits 4-6 ^= bits 7-9 (arrays are
 * 1024-byte aligned on the device, so offsets in the array swizzle alike). */
static int64_t ev_wg_byte(const kir_wg_opnd *o, int64_t start, int mn, int kk, int esz) {
  int64_t lin = o->mn_major ? start + (mn / 64) * o->lbo + (kk / 8) * o->sbo + (kk % 8) * 128 + (mn % 64) * 2
                            : start + (mn / 8) * o->sbo + (mn % 8) * 128 + kk * esz;
  return lin ^ (((lin >> 7) & 7) << 4);
}

/* wgmma.m64nNk16 (f16 / bf16), m64nNk32 (fp8, A's and B's kinds apart) or m64nNk8 (tf32, A
 * from registers) for the 128 threads of
 * warpgroup wgi (products exact, sum in double, rounded to f32), shared operands read
 * through the swizzled layout (tf32: 10 mantissa bits, as ev_frag). */
static void ev_wgmma(ev_kernel_ctx *c, int wgi, const kir_stmt *s) {
  int nv = c->k->n_vars, N = s->u.wg.n, t0 = wgi * 128;
  const kir_wg_opnd *ops[2] = {&s->u.wg.a, &s->u.wg.b};
  int tf32 = s->u.wg.kind == KIR_MMA_TF32, K = kir_mma_k(s->u.wg.kind);
  static double A[64][32], B[32][256];
  if (s->u.wg.a_in_regs)
    for (int l = 0; l < 128; l++) {
      ev_val *v = c->vars + (size_t)(t0 + l) * nv;
      int w = l / 32, g = (l % 32) / 4, tq = l % 4;
      const int *a = s->u.wg.a_regs;
      for (int q = 0; q < 4; q++)
        A[16 * w + g + 8 * (q % 2)][tq + 4 * (q / 2)] = ev_frag(KIR_MMA_TF32, v[a[q]], c->k->vars[a[q]].type, 0);
    }
  for (int o = s->u.wg.a_in_regs ? 1 : 0; o < 2; o++) {
    int64_t start = ev_expr(c, t0, ops[o]->index).i;
    for (int t = 1; t < 128; t++)
      if (ev_expr(c, t0 + t, ops[o]->index).i != start) {
        ev_fail(c, "%swgmma operand address differs within a warpgroup%lld%lld", "", 0, 0);
        return;
      }
    const ev_mem *m = &c->shared[ops[o]->buf];
    gc_dtype dt = kir_mma_dtype(o ? s->u.wg.kind_b : s->u.wg.kind);
    int esz = (int)graphc_dtype_size(dt), rows = o ? N : 64;
    for (int mn = 0; mn < rows; mn++)
      for (int kk = 0; kk < K; kk++) {
        int64_t at = ev_wg_byte(ops[o], start * esz, mn, kk, esz);
        if (at < 0 || at + esz > m->n * esz) {
          ev_fail(c, "%swgmma reads shared byte %lld of %lld", "", at, m->n * esz);
          return;
        }
        double x;
        if (tf32) {
          uint32_t u;
          memcpy(&u, m->p + at, 4);  /* the bits, read as tf32 */
          ev_val r = {.i = u};
          x = ev_frag(KIR_MMA_TF32, r, GRAPHC_DTYPE_I32, 0);
        } else {
          x = gc_load_f64(m->p + at, dt, 0);
        }
        if (o) B[kk][mn] = x;
        else A[mn][kk] = x;
      }
  }
  int in = KIR_MMA_IS_INT(s->u.wg.kind);  /* i32 accumulators, wrapping */
  for (int l = 0; l < 128; l++) {
    ev_val *v = c->vars + (size_t)(t0 + l) * nv;
    int w = l / 32, g = (l % 32) / 4, tq = l % 4;
    for (int i = 0; i < N / 2; i++) {
      int row = 16 * w + g + 8 * ((i % 4) / 2), col = 8 * (i / 4) + 2 * tq + i % 2;
      if (in) {
        uint32_t acc = s->u.wg.overwrite ? 0 : (uint32_t)v[s->u.wg.d[i]].i;
        for (int kk = 0; kk < K; kk++) acc += (uint32_t)(int64_t)(A[row][kk] * B[kk][col]);
        v[s->u.wg.d[i]].i = (int32_t)acc;
        continue;
      }
      double acc = s->u.wg.overwrite ? 0 : v[s->u.wg.d[i]].f;  /* overwrite: scale-d 0 */
      for (int kk = 0; kk < K; kk++) acc += A[row][kk] * B[kk][col];
      v[s->u.wg.d[i]].f = (double)(float)acc;
    }
  }
}

/* The statements of b in one thread. */
static void ev_block(ev_kernel_ctx *c, int th, const kir_block *b) {
  for (const kir_stmt *s = b->head; s && !c->err[0]; s = s->next) ev_stmt(c, th, s);
}

/* A uniform i64 over the group (evaluated per thread; they must agree). */
static int64_t ev_uniform(ev_kernel_ctx *c, const kir_expr *e) {
  int64_t v = ev_expr(c, 0, e).i;
  for (int t = 1; t < c->nthreads; t++)
    if (ev_expr(c, t, e).i != v) ev_fail(c, "%snon-uniform value around a barrier (%lld vs %lld)", "", v, ev_expr(c, t, e).i);
  return v;
}

/* All threads of a group through block b, in lockstep where it matters. */
static void ev_group_block(ev_kernel_ctx *c, const kir_block *b) {
  int nv = c->k->n_vars;
  for (const kir_stmt *s = b->head; s && !c->err[0]; s = s->next) {
    if (!ev_stmt_sync(s)) {
      for (int t = 0; t < c->nthreads; t++) ev_stmt(c, t, s);
      continue;
    }
    switch (s->kind) {
      case KIR_S_BARRIER: break;
      case KIR_S_ASSIGN:
      case KIR_S_STORE: {
        memcpy(c->snap, c->vars, (size_t)c->nthreads * (size_t)nv * sizeof *c->vars);
        if (s->kind == KIR_S_ASSIGN) {
          /* compute every lane's value before any lane assigns */
          ev_val *vals = malloc((size_t)c->nthreads * sizeof *vals);
          for (int t = 0; t < c->nthreads; t++) vals[t] = ev_expr(c, t, s->u.assign.value);
          for (int t = 0; t < c->nthreads; t++) c->vars[(size_t)t * nv + s->u.assign.var] = vals[t];
          free(vals);
        } else {
          for (int t = 0; t < c->nthreads; t++) ev_stmt(c, t, s);
        }
        break;
      }
      case KIR_S_FOR: {
        int64_t lo = ev_uniform(c, s->u.loop.lo), hi = ev_uniform(c, s->u.loop.hi);
        int64_t st = ev_uniform(c, s->u.loop.step);
        for (int64_t i = lo; i < hi && !c->err[0]; i += st) {
          for (int t = 0; t < c->nthreads; t++) c->vars[(size_t)t * nv + s->u.loop.var].i = i;
          ev_group_block(c, &s->u.loop.body);
        }
        break;
      }
      case KIR_S_IF: {
        int64_t v = ev_expr(c, 0, s->u.cond.cond).i;
        for (int t = 1; t < c->nthreads; t++)
          if (ev_expr(c, t, s->u.cond.cond).i != v) ev_fail(c, "%sbarrier or shuffle under a divergent if%lld%lld", "", 0, 0);
        ev_group_block(c, v ? &s->u.cond.then : &s->u.cond.els);
        break;
      }
      case KIR_S_LDMATRIX:
      case KIR_S_MMA:
        if (c->nthreads % 32) {
          ev_fail(c, "%swarp-collective statement in a group of %lld threads%lld", "", c->nthreads, 0);
          break;
        }
        for (int w = 0; w < c->nthreads / 32 && !c->err[0]; w++) {
          if (s->kind == KIR_S_LDMATRIX) ev_ldmatrix(c, w, s);
          else ev_mma(c, w, s);
        }
        break;
      case KIR_S_WGMMA:
        if (c->nthreads % 128) {
          ev_fail(c, "%swgmma in a group of %lld threads%lld", "", c->nthreads, 0);
          break;
        }
        for (int wgi = 0; wgi < c->nthreads / 128 && !c->err[0]; wgi++) ev_wgmma(c, wgi, s);
        break;
      default: ev_fail(c, "%sunexpected statement %lld%lld", "", s->kind, 0); break;
    }
  }
}

/* Element pointer of plan buffer b: caller's arrays for I/O and consts, the arena for TEMP. */
static ev_mem ev_buffer(const gc_plan *p, int b, unsigned char **inputs, unsigned char **outputs,
                        unsigned char *arena, unsigned char **states) {
  const gc_plan_buffer *pb = &p->buffers[b];
  ev_mem m = {NULL, (int64_t)(pb->bytes / graphc_dtype_size(pb->type.dtype)), pb->type.dtype};
  switch (pb->kind) {
    case GC_BUF_INPUT: m.p = inputs[pb->index]; break;
    case GC_BUF_OUTPUT: m.p = outputs[pb->index]; break;
    case GC_BUF_CONST: m.p = (unsigned char *)p->consts[pb->index].data; break;
    case GC_BUF_TEMP: m.p = arena + pb->offset; break;
    case GC_BUF_STATE: m.p = states[pb->index]; break;
  }
  return m;
}

/* Run every launch of p. inputs/outputs: one byte array per graph arg/output.
 * Returns NULL on success, else a static-lifetime copy of the first error. */
static const char *ev_run_plan(const gc_plan *p, unsigned char **inputs, unsigned char **outputs) {
  static char err[512];
  err[0] = 0;
  unsigned char *arena = malloc(p->arena_bytes + 1);
  memset(arena, 0xA5, p->arena_bytes + 1);  /* poison: unwritten reads show up */
  unsigned char **states = calloc((size_t)p->n_states + 1, sizeof *states);  /* zero, like a new executable's */
  for (int i = 0; i < p->n_states; i++) states[i] = calloc(1, p->states[i].bytes + 1);
  for (int li = 0; li < p->n_launches && !err[0]; li++) {
    const kir_kernel *k = p->kir->kernels[p->launches[li]];
    ev_kernel_ctx c;
    memset(&c, 0, sizeof c);
    c.k = k;
    c.params = calloc((size_t)k->n_params + 1, sizeof *c.params);
    for (int i = 0; i < k->n_params; i++) {
      if (k->params[i].kind == KIR_PARAM_I64) continue;  /* buffers and tensor maps' buffers */
      c.params[i] = ev_buffer(p, k->params[i].binding, inputs, outputs, arena, states);
      c.params[i].t = k->params[i].dtype;
    }
    c.nthreads = k->launch.kind == KIR_LAUNCH_BLOCKS ? k->launch.block : 1;
    c.shared = calloc((size_t)k->n_shared + 1, sizeof *c.shared);
    c.mbar = calloc((size_t)k->n_shared + 1, sizeof *c.mbar);
    for (int i = 0; i < k->n_shared; i++) {
      size_t bytes = (size_t)k->shared[i].count * graphc_dtype_size(k->shared[i].dtype);
      c.shared[i].p = malloc(bytes);
      memset(c.shared[i].p, 0xFF, bytes);  /* NaN for floats */
      c.shared[i].n = k->shared[i].count;
      c.shared[i].t = k->shared[i].dtype;
      if (k->shared[i].dtype == GRAPHC_DTYPE_I64) c.mbar[i] = calloc((size_t)k->shared[i].count, sizeof **c.mbar);
    }
    c.scratch = calloc((size_t)k->n_scratch + 1, sizeof *c.scratch);
    for (int i = 0; i < k->n_scratch; i++) {
      c.scratch[i].p = malloc((size_t)k->scratch[i].count * graphc_dtype_size(k->scratch[i].dtype));
      c.scratch[i].n = k->scratch[i].count;
      c.scratch[i].t = k->scratch[i].dtype;
    }
    size_t nv = (size_t)c.nthreads * (size_t)k->n_vars;
    c.vars = calloc(nv + 1, sizeof *c.vars);
    c.snap = calloc(nv + 1, sizeof *c.snap);
    for (int64_t it = 0; it < k->launch.n && !c.err[0]; it++) {
      for (int t = 0; t < c.nthreads; t++) c.vars[(size_t)t * k->n_vars + k->item_var].i = it;
      for (int i = 0; i < k->n_scratch; i++)  /* undefined at the start of an item: NaN / junk */
        memset(c.scratch[i].p, 0xFF, (size_t)c.scratch[i].n * graphc_dtype_size(c.scratch[i].t));
      if (c.nthreads == 1 && k->launch.kind == KIR_LAUNCH_ITEMS)
        ev_block(&c, 0, &k->body);
      else
        ev_group_block(&c, &k->body);
    }
    if (c.err[0]) snprintf(err, sizeof err, "launch %d (%s): %s", li, k->name, c.err);
    for (int i = 0; i < k->n_shared; i++) {
      free(c.shared[i].p);
      free(c.mbar[i]);
    }
    free(c.shared);
    free(c.mbar);
    for (int i = 0; i < k->n_scratch; i++) free(c.scratch[i].p);
    free(c.scratch);
    free(c.params);
    free(c.vars);
    free(c.snap);
  }
  free(arena);
  for (int i = 0; i < p->n_states; i++) free(states[i]);
  free(states);
  return err[0] ? err : NULL;
}

#endif /* GC_LOWER_EVAL_H */
