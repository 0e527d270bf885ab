/* kir.c - Kernel IR: targets, builders, the verifier and the readable dump.
 *
 *   emitter --kir_kernel_new / kir_add_* / kir_<expr> / kir_emit_*--> kir_kernel
 *           --kir_verify--> (asserts: emitter bugs)   --kir_print--> text
 *
 * Typing rules (checked by the constructors, re-checked by kir_verify):
 *   arithmetic types   f32 f64 i32 i64 bool; loads, stores, casts, selects,
 *                      shuffles and variables may use any dtype (f16 bf16 i8 u8).
 *   NEG ABS ADD SUB MUL DIV REM MIN MAX     numeric: f32 f64 i32 i64
 *   EXP LOG SQRT RSQRT TANH ERF SIN COS FLOOR CEIL POW   float: f32 f64
 *   NOT AND OR XOR                          bool, i32, i64 (bitwise on ints)
 *   EQ NE LT LE GT GE                       any arithmetic type; result bool
 *   indices, loop bounds, scalar params     i64;  specials i32
 *
 * kir_kernel_new creates variable 0, "item" (i64), as the kernel's item_var;
 * it counts as assigned on entry.
 *
 * Out of memory: constructors return NULL (and NULL operands propagate),
 * emitters skip statements they cannot allocate, and the module arena's
 * `failed` flag is set. Callers check `m->arena.failed` after building and
 * report GRAPHC_STATUS_OUT_OF_MEMORY before verifying or printing.
 */
#include "codegen/kir.h"
#include "ir/dtype.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The module as allocated: the public part plus a block that absorbs
 * statements when the arena is out of memory. */
typedef struct kir_module_priv {
  kir_module pub;
  kir_block sink;
} kir_module_priv;

/* ---- targets ------------------------------------------------------------------------ */

/* Defaults for an NVIDIA GPU of compute capability sm/10 (the runtime
 * overwrites num_sms and shared_bytes from the device's properties; the driver
 * applies the GRAPHC_* kernel settings: driver/settings.c). */
void kir_target_cuda(kir_target *t, int sm) {
  memset(t, 0, sizeof *t);
  t->kind = KIR_TARGET_CUDA;
  t->sm = sm > 0 ? sm : 90;
  t->warp_size = 32;
  t->max_threads = 1024;
  t->num_sms = 132;
  t->shared_bytes = 48 * 1024;
  t->vector_bytes = 16;
  /* wgmma exists on sm_90 only (sm_90a code; Blackwell has other instructions) */
  t->wgmma = t->sm == 90;
  t->tma = t->wgmma;
  t->short_k_mma = 1;
  t->attention = t->sm >= 80;
  t->simt_blocked = 1;
  t->simt_unroll_macs = (int64_t)1 << 25;
  t->prologue = 1;
  t->row_groups = 1;
  t->loop_vecs = 0;
  t->tf32_round = 1;
}

/* Defaults for the host: one "thread" per group, `cores` workers (GRAPHC_PROLOGUE:
 * driver/settings.c). */
void kir_target_host(kir_target *t, int cores) {
  memset(t, 0, sizeof *t);
  t->kind = KIR_TARGET_HOST;
  t->sm = 0;
  t->warp_size = 1;
  t->max_threads = 1;
  t->num_sms = cores > 0 ? cores : 1;
  t->shared_bytes = 0;
  t->vector_bytes = 16;
  t->simd_bytes = 16;
  t->prologue = 1;
}

/* ---- type classes --------------------------------------------------------------------- */

/* Arithmetic happens only in these types. */
static int is_arith(gc_dtype t) {
  return t == GRAPHC_DTYPE_F32 || t == GRAPHC_DTYPE_F64 || t == GRAPHC_DTYPE_I32 ||
         t == GRAPHC_DTYPE_I64 || t == GRAPHC_DTYPE_BOOL;
}

/* f32 or f64: the types transcendental ops run in. */
static int is_arith_float(gc_dtype t) { return t == GRAPHC_DTYPE_F32 || t == GRAPHC_DTYPE_F64; }

/* f32, f64, i32, i64. */
static int is_numeric(gc_dtype t) { return is_arith(t) && t != GRAPHC_DTYPE_BOOL; }

/* Types the bitwise/logical ops accept. */
static int is_logical(gc_dtype t) {
  return t == GRAPHC_DTYPE_BOOL || t == GRAPHC_DTYPE_I32 || t == GRAPHC_DTYPE_I64;
}

/* One of the nine dtypes? */
static int is_valid_dtype(gc_dtype t) { return (unsigned)t < GRAPHC_DTYPE_COUNT_; }

/* Does op take one operand? */
static int op_is_unary(kir_op op) { return op >= KIR_NEG && op <= KIR_F8E5M2_SAT; }
/* Does op compare (result bool)? */
static int op_is_compare(kir_op op) { return op >= KIR_EQ && op <= KIR_GE; }

/* Is `t` a valid operand type for op (unary or binary)? */
static int op_accepts(kir_op op, gc_dtype t) {
  switch (op) {
    case KIR_NEG: case KIR_ABS: case KIR_ADD: case KIR_SUB: case KIR_MUL: case KIR_DIV:
    case KIR_REM: case KIR_MIN: case KIR_MAX:
      return is_numeric(t);
    case KIR_EXP: case KIR_EXP2: case KIR_LOG: case KIR_SQRT: case KIR_RSQRT: case KIR_TANH:
    case KIR_ERF: case KIR_SIN: case KIR_COS: case KIR_FLOOR: case KIR_CEIL: case KIR_POW:
      return is_arith_float(t);
    case KIR_NOT: case KIR_AND: case KIR_OR: case KIR_XOR:
      return is_logical(t);
    case KIR_SIGMOID: case KIR_TANH_APPROX: case KIR_RCP_APPROX: case KIR_TF32_ROUND:
    case KIR_F8E4M3_SAT: case KIR_F8E5M2_SAT:
      return t == GRAPHC_DTYPE_F32;
    case KIR_EQ: case KIR_NE: case KIR_LT: case KIR_LE: case KIR_GT: case KIR_GE:
      return is_arith(t);
    case KIR_OP_COUNT_:
      break;
  }
  return 0;
}

/* ---- module, kernels, params, shared, vars ------------------------------------------------ */

/* New empty module with its own arena. NULL when out of memory. */
kir_module *kir_module_new(void) {
  kir_module_priv *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  gc_arena_init(&p->pub.arena);
  return &p->pub;
}

/* Free the module, its kernels and every expression and statement. */
void kir_module_free(kir_module *m) {
  if (!m) return;
  gc_arena_free(&m->arena);
  free((kir_module_priv *)m);
}

/* Grow an arena-held array of `elem`-byte items to hold at least n+1. */
static void *grow(kir_module *m, void *arr, int n, int *cap, size_t elem) {
  if (n < *cap) return arr;
  int nc = *cap ? *cap * 2 : 8;
  void *p = gc_arena_alloc(&m->arena, (size_t)nc * elem);
  if (!p) return NULL;
  if (n) memcpy(p, arr, (size_t)n * elem);
  *cap = nc;
  return p;
}

/* Is s a C identifier (letters, digits, '_', not starting with a digit)? */
static int is_c_ident(const char *s) {
  if (!s || !*s || (*s >= '0' && *s <= '9')) return 0;
  for (const char *p = s; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '_'))
      return 0;
  return 1;
}

/* Copy `s` into the arena as an identifier: other characters become '_',
 * a leading digit gets a '_' prefix, empty/NULL becomes `dflt`. */
static char *sanitize(kir_module *m, const char *s, const char *dflt) {
  if (!s || !*s) s = dflt;
  size_t n = strlen(s);
  int lead = (s[0] >= '0' && s[0] <= '9');
  char *p = gc_arena_alloc(&m->arena, n + 1 + (size_t)lead);
  if (!p) return NULL;
  if (lead) p[0] = '_';
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    p[i + (size_t)lead] = ok ? c : '_';
  }
  return p;
}

/* New kernel appended to the module; creates the item variable (var 0). */
kir_kernel *kir_kernel_new(kir_module *m, const char *name, kir_launch launch) {
  GC_ASSERT(is_c_ident(name));
  for (int i = 0; i < m->n_kernels; i++) GC_ASSERT(strcmp(m->kernels[i]->name, name) != 0);
  GC_ASSERT(launch.kind == KIR_LAUNCH_ITEMS || launch.kind == KIR_LAUNCH_BLOCKS);
  GC_ASSERT(launch.n >= 0 && launch.block >= 1 && launch.block <= 1024);
  kir_kernel **ks = grow(m, m->kernels, m->n_kernels, &m->cap_kernels, sizeof *ks);
  kir_kernel *k = gc_arena_alloc(&m->arena, sizeof *k);
  char *nm = gc_arena_strdup(&m->arena, name);
  if (!ks || !k || !nm) return NULL;
  m->kernels = ks;
  k->name = nm;
  k->launch = launch;
  k->item_var = kir_add_var(m, k, "item", GRAPHC_DTYPE_I64);
  if (k->item_var < 0) return NULL;
  m->kernels[m->n_kernels++] = k;
  return k;
}

/* Append a parameter; returns its index (-1 when out of memory). Names are
 * made identifiers and unique (a clash gets "_<index>"). */
int kir_add_param(kir_module *m, kir_kernel *k, const char *name, kir_param_kind kind,
                  gc_dtype dtype, int readonly, int binding) {
  GC_ASSERT(kind == KIR_PARAM_BUFFER || kind == KIR_PARAM_I64 || kind == KIR_PARAM_TMAP);
  GC_ASSERT(is_valid_dtype(dtype));
  if (kind == KIR_PARAM_I64) GC_ASSERT(dtype == GRAPHC_DTYPE_I64);
  char *nm = sanitize(m, name, "p");
  if (!nm) return -1;
  for (int i = 0; i < k->n_params; i++)
    if (strcmp(k->params[i].name, nm) == 0) {
      nm = gc_arena_printf(&m->arena, "%s_%d", nm, k->n_params);
      if (!nm) return -1;
      break;
    }
  kir_param *ps = grow(m, k->params, k->n_params, &k->cap_params, sizeof *ps);
  if (!ps) return -1;
  k->params = ps;
  kir_param *p = &k->params[k->n_params];
  p->name = nm;
  p->kind = kind;
  p->dtype = dtype;
  p->readonly = kind == KIR_PARAM_BUFFER ? (readonly != 0) : 1;
  p->binding = binding;
  memset(&p->tmap, 0, sizeof p->tmap);
  return k->n_params++;
}

int kir_add_tmap(kir_module *m, kir_kernel *k, const char *name, gc_dtype dtype, int binding,
                 const kir_tmap *tm) {
  GC_ASSERT(tm->rank >= 2 && tm->rank <= KIR_TMAP_MAX_RANK && (tm->swizzle == 0 || tm->swizzle == 128));
  GC_ASSERT(tm->strides[0] == (int64_t)graphc_dtype_size(dtype) && tm->offset % 16 == 0);
  for (int i = 0; i < tm->rank; i++) GC_ASSERT(tm->dims[i] >= 1 && tm->box[i] >= 1 && tm->box[i] <= 256);
  GC_ASSERT(!tm->swizzle || tm->box[0] * tm->strides[0] <= tm->swizzle);
  int i = kir_add_param(m, k, name, KIR_PARAM_TMAP, dtype, 1, binding);
  if (i >= 0) k->params[i].tmap = *tm;
  return i;
}

/* Append a shared-memory array of `count` elements; returns its index. */
int kir_add_shared(kir_module *m, kir_kernel *k, gc_dtype dtype, int64_t count) {
  GC_ASSERT(is_valid_dtype(dtype) && count >= 1);
  kir_shared *ss = grow(m, k->shared, k->n_shared, &k->cap_shared, sizeof *ss);
  if (!ss) return -1;
  k->shared = ss;
  k->shared[k->n_shared].dtype = dtype;
  k->shared[k->n_shared].count = count;
  return k->n_shared++;
}

/* Append a per-thread scratch array of `count` elements; returns its index. */
int kir_add_scratch(kir_module *m, kir_kernel *k, gc_dtype dtype, int64_t count) {
  GC_ASSERT(is_valid_dtype(dtype) && count >= 1);
  kir_shared *ss = grow(m, k->scratch, k->n_scratch, &k->cap_scratch, sizeof *ss);
  if (!ss) return -1;
  k->scratch = ss;
  k->scratch[k->n_scratch].dtype = dtype;
  k->scratch[k->n_scratch].count = count;
  return k->n_scratch++;
}

/* Append a local variable named "<hint>_<index>"; returns its index. */
int kir_add_var(kir_module *m, kir_kernel *k, const char *hint, gc_dtype type) {
  GC_ASSERT(is_valid_dtype(type));
  char *h = sanitize(m, hint, "v");
  char *nm = h ? gc_arena_printf(&m->arena, "%s_%d", h, k->n_vars) : NULL;
  kir_var *vs = grow(m, k->vars, k->n_vars, &k->cap_vars, sizeof *vs);
  if (!nm || !vs) return -1;
  k->vars = vs;
  k->vars[k->n_vars].name = nm;
  k->vars[k->n_vars].type = type;
  return k->n_vars++;
}

/* ---- expressions ------------------------------------------------------------------------- */

/* Fresh expression node of `kind` and `type` (NULL when out of memory). */
static kir_expr *new_expr(kir_module *m, kir_expr_kind kind, gc_dtype type) {
  kir_expr *e = gc_arena_alloc(&m->arena, sizeof *e);
  if (!e) return NULL;
  e->kind = kind;
  e->type = type;
  return e;
}

/* Integer or bool literal (bool: v != 0 stored as 1). */
kir_expr *kir_const_i(kir_module *m, gc_dtype t, int64_t v) {
  GC_ASSERT(gc_dtype_is_int(t) || t == GRAPHC_DTYPE_BOOL);
  kir_expr *e = new_expr(m, KIR_E_CONST, t);
  if (e) e->u.i = t == GRAPHC_DTYPE_BOOL ? (v != 0) : v;
  return e;
}

/* Float literal of a float dtype (printers round it to the dtype). */
kir_expr *kir_const_f(kir_module *m, gc_dtype t, double v) {
  GC_ASSERT(gc_dtype_is_float(t));
  if (gc_dtype_is_f8(t))  /* fp8 literals are their bits (rounded like a store) */
    return kir_bitcast(m, t, kir_const_i(m, GRAPHC_DTYPE_U8, gc_f64_to_f8(t, v, !isinf(v))));
  kir_expr *e = new_expr(m, KIR_E_CONST, t);
  if (e) e->u.f = v;
  return e;
}

/* Read of a local variable; typed as the variable. */
kir_expr *kir_var_ref(kir_module *m, const kir_kernel *k, int var) {
  GC_ASSERT(var >= 0 && var < k->n_vars);
  kir_expr *e = new_expr(m, KIR_E_VAR, k->vars[var].type);
  if (e) e->u.var = var;
  return e;
}

/* Read of a scalar (i64) parameter. */
kir_expr *kir_param_ref(kir_module *m, const kir_kernel *k, int param) {
  GC_ASSERT(param >= 0 && param < k->n_params && k->params[param].kind == KIR_PARAM_I64);
  kir_expr *e = new_expr(m, KIR_E_PARAM, GRAPHC_DTYPE_I64);
  if (e) e->u.param = param;
  return e;
}

/* Thread / block-size / lane / warp index (i32). */
kir_expr *kir_special_ref(kir_module *m, kir_special sp) {
  GC_ASSERT(sp >= KIR_SP_THREAD && sp <= KIR_SP_WARP);
  kir_expr *e = new_expr(m, KIR_E_SPECIAL, GRAPHC_DTYPE_I32);
  if (e) e->u.special = sp;
  return e;
}

/* Unary op; the result has the operand's type. */
kir_expr *kir_f8_hw(kir_module *m, gc_dtype to, kir_expr *a) {
  GC_ASSERT(to == GRAPHC_DTYPE_F8E4M3 || to == GRAPHC_DTYPE_F8E5M2);
  if (!a) return NULL;
  GC_ASSERT(a->type == GRAPHC_DTYPE_F32);
  kir_expr *e = new_expr(m, KIR_E_UNARY, to);
  if (e) {
    e->u.op.op = to == GRAPHC_DTYPE_F8E4M3 ? KIR_F8E4M3_SAT : KIR_F8E5M2_SAT;
    e->u.op.a = a;
  }
  return e;
}

kir_expr *kir_unary(kir_module *m, kir_op op, kir_expr *a) {
  GC_ASSERT(op_is_unary(op) && op != KIR_F8E4M3_SAT && op != KIR_F8E5M2_SAT);
  if (!a) return NULL;
  GC_ASSERT(op_accepts(op, a->type));
  kir_expr *e = new_expr(m, KIR_E_UNARY, a->type);
  if (e) {
    e->u.op.op = op;
    e->u.op.a = a;
  }
  return e;
}

/* Binary op on equal types; comparisons give bool. */
kir_expr *kir_binary(kir_module *m, kir_op op, kir_expr *a, kir_expr *b) {
  GC_ASSERT(op >= KIR_ADD && op < KIR_OP_COUNT_);
  if (!a || !b) return NULL;
  GC_ASSERT(a->type == b->type);
  GC_ASSERT(op_accepts(op, a->type));
  kir_expr *e = new_expr(m, KIR_E_BINARY, op_is_compare(op) ? GRAPHC_DTYPE_BOOL : a->type);
  if (e) {
    e->u.op.op = op;
    e->u.op.a = a;
    e->u.op.b = b;
  }
  return e;
}

/* c ? a : b with c bool and a, b of one type (any dtype). */
kir_expr *kir_select(kir_module *m, kir_expr *c, kir_expr *a, kir_expr *b) {
  if (!c || !a || !b) return NULL;
  GC_ASSERT(c->type == GRAPHC_DTYPE_BOOL && a->type == b->type);
  kir_expr *e = new_expr(m, KIR_E_SELECT, a->type);
  if (e) {
    e->u.op.a = c;
    e->u.op.b = a;
    e->u.op.c = b;
  }
  return e;
}

/* Conversion to `t` (semantics in kir.h / the op table's cast). A cast to
 * the operand's own type returns the operand. */
kir_expr *kir_cast(kir_module *m, gc_dtype t, kir_expr *a) { return kir_cast_sat(m, t, a, -1); }

/* A cast; one to or from fp8 expands into exact integer and float steps (kir_f8.c). */
kir_expr *kir_cast_sat(kir_module *m, gc_dtype t, kir_expr *a, int saturate) {
  GC_ASSERT(is_valid_dtype(t));
  if (!a) return NULL;
  if (a->type == t) return a;
  if (gc_dtype_is_f8(t) || gc_dtype_is_f8(a->type)) return kir_f8_cast(m, t, a, saturate);
  kir_expr *e = new_expr(m, KIR_E_CAST, t);
  if (e) e->u.op.a = a;
  return e;
}

/* a's bits as dtype t of the same size. */
kir_expr *kir_bitcast(kir_module *m, gc_dtype t, kir_expr *a) {
  GC_ASSERT(is_valid_dtype(t));
  if (!a) return NULL;
  GC_ASSERT(graphc_dtype_size(t) == graphc_dtype_size(a->type) && t != GRAPHC_DTYPE_BOOL);
  if (a->type == t) return a;
  kir_expr *e = new_expr(m, KIR_E_BITCAST, t);
  if (e) e->u.op.a = a;
  return e;
}

/* Element `index` (i64) of a buffer parameter or shared array. */
kir_expr *kir_load(kir_module *m, const kir_kernel *k, kir_space sp, int buf, kir_expr *index) {
  gc_dtype t;
  if (sp == KIR_GLOBAL) {
    GC_ASSERT(buf >= 0 && buf < k->n_params && k->params[buf].kind == KIR_PARAM_BUFFER);
    t = k->params[buf].dtype;
  } else if (sp == KIR_SCRATCH) {
    GC_ASSERT(buf >= 0 && buf < k->n_scratch);
    t = k->scratch[buf].dtype;
  } else {
    GC_ASSERT(sp == KIR_SHARED && buf >= 0 && buf < k->n_shared);
    t = k->shared[buf].dtype;
  }
  if (!index) return NULL;
  GC_ASSERT(index->type == GRAPHC_DTYPE_I64);
  kir_expr *e = new_expr(m, KIR_E_LOAD, t);
  if (e) {
    e->u.mem.space = sp;
    e->u.mem.buf = buf;
    e->u.mem.index = index;
  }
  return e;
}

/* Value of `a` in lane (lane ^ mask); mask in 1..31. */
kir_expr *kir_shfl_xor(kir_module *m, kir_expr *a, int mask) {
  GC_ASSERT(mask >= 1 && mask <= 31);
  if (!a) return NULL;
  kir_expr *e = new_expr(m, KIR_E_SHFL_XOR, a->type);
  if (e) {
    e->u.shfl.a = a;
    e->u.shfl.mask = mask;
  }
  return e;
}

/* lo, hi (f32) rounded to t (f16 / bf16) and packed into an i32, lo in bits 0..15. */
kir_expr *kir_pack2(kir_module *m, gc_dtype t, kir_expr *lo, kir_expr *hi) {
  GC_ASSERT(t == GRAPHC_DTYPE_F16 || t == GRAPHC_DTYPE_BF16);
  if (!lo || !hi) return NULL;
  GC_ASSERT(lo->type == GRAPHC_DTYPE_F32 && hi->type == GRAPHC_DTYPE_F32);
  kir_expr *e = new_expr(m, KIR_E_PACK2, GRAPHC_DTYPE_I32);
  if (e) {
    e->u.pack.dtype = t;
    e->u.pack.lo = lo;
    e->u.pack.hi = hi;
  }
  return e;
}

/* ---- statements ---------------------------------------------------------------------------- */

/* Append a fresh statement of `kind` to b (NULL when out of memory). */
static kir_stmt *new_stmt(kir_module *m, kir_block *b, kir_stmt_kind kind) {
  kir_stmt *s = gc_arena_alloc(&m->arena, sizeof *s);
  if (!s) return NULL;
  s->kind = kind;
  if (b->tail)
    b->tail->next = s;
  else
    b->head = s;
  b->tail = s;
  return s;
}

/* Block handed out when a statement could not be allocated: stays empty. */
static kir_block *sink(kir_module *m) {
  kir_module_priv *p = (kir_module_priv *)m;
  p->sink.head = p->sink.tail = NULL;
  return &p->sink;
}

/* var = value. Types are checked by kir_verify (the var is not known here). */
void kir_emit_assign(kir_module *m, kir_block *b, int var, kir_expr *value) {
  GC_ASSERT(var >= 0);
  if (!value) return;
  kir_stmt *s = new_stmt(m, b, KIR_S_ASSIGN);
  if (!s) return;
  s->u.assign.var = var;
  s->u.assign.value = value;
}

/* buf[index] = value. */
void kir_emit_store(kir_module *m, kir_block *b, kir_space sp, int buf, kir_expr *index,
                    kir_expr *value) {
  GC_ASSERT(sp == KIR_GLOBAL || sp == KIR_SHARED || sp == KIR_SCRATCH);
  if (!index || !value) return;
  GC_ASSERT(index->type == GRAPHC_DTYPE_I64);
  kir_stmt *s = new_stmt(m, b, KIR_S_STORE);
  if (!s) return;
  s->u.store.space = sp;
  s->u.store.buf = buf;
  s->u.store.index = index;
  s->u.store.value = value;
}

/* vars[0..width) = buf[index .. index+width). */
void kir_emit_load_vec(kir_module *m, kir_block *b, kir_space sp, int buf, kir_expr *index,
                       int width, const int *vars) {
  GC_ASSERT(sp == KIR_GLOBAL || sp == KIR_SHARED || sp == KIR_SCRATCH);
  GC_ASSERT(width >= 1 && width <= KIR_MAX_VEC);
  if (!index) return;
  kir_stmt *s = new_stmt(m, b, KIR_S_LOAD_VEC);
  if (!s) return;
  s->u.vec.space = sp;
  s->u.vec.buf = buf;
  s->u.vec.index = index;
  s->u.vec.width = width;
  for (int i = 0; i < width; i++) s->u.vec.vars[i] = vars[i];
}

/* buf[index .. index+width) = values[0..width). */
void kir_emit_store_vec(kir_module *m, kir_block *b, kir_space sp, int buf, kir_expr *index,
                        int width, kir_expr *const *values) {
  GC_ASSERT(sp == KIR_GLOBAL || sp == KIR_SHARED || sp == KIR_SCRATCH);
  GC_ASSERT(width >= 1 && width <= KIR_MAX_VEC);
  if (!index) return;
  for (int i = 0; i < width; i++)
    if (!values[i]) return;
  kir_stmt *s = new_stmt(m, b, KIR_S_STORE_VEC);
  if (!s) return;
  s->u.vec.space = sp;
  s->u.vec.buf = buf;
  s->u.vec.index = index;
  s->u.vec.width = width;
  for (int i = 0; i < width; i++) s->u.vec.values[i] = values[i];
}

/* for (var = lo; var < hi; var += step); returns the body block. */
kir_block *kir_emit_for(kir_module *m, kir_block *b, int var, kir_expr *lo, kir_expr *hi,
                        kir_expr *step) {
  GC_ASSERT(var >= 0);
  if (!lo || !hi || !step) return sink(m);
  kir_stmt *s = new_stmt(m, b, KIR_S_FOR);
  if (!s) return sink(m);
  s->u.loop.var = var;
  s->u.loop.lo = lo;
  s->u.loop.hi = hi;
  s->u.loop.step = step;
  return &s->u.loop.body;
}

kir_block *kir_emit_for_nounroll(kir_module *m, kir_block *b, int var, kir_expr *lo, kir_expr *hi,
                                 kir_expr *step) {
  kir_block *body = kir_emit_for(m, b, var, lo, hi, step);
  if (b->tail && b->tail->kind == KIR_S_FOR && &b->tail->u.loop.body == body) b->tail->u.loop.nounroll = 1;
  return body;
}

kir_block *kir_emit_for_masked_tail(kir_module *m, kir_block *b, int var, kir_expr *lo, kir_expr *hi,
                                    kir_expr *step) {
  kir_block *body = kir_emit_for(m, b, var, lo, hi, step);
  if (b->tail && b->tail->kind == KIR_S_FOR && &b->tail->u.loop.body == body) b->tail->u.loop.masked_tail = 1;
  return body;
}

/* if (cond) *then_b else *else_b (else_b NULL: no else branch). */
void kir_emit_if(kir_module *m, kir_block *b, kir_expr *cond, kir_block **then_b,
                 kir_block **else_b) {
  GC_ASSERT(then_b);
  kir_stmt *s = cond ? new_stmt(m, b, KIR_S_IF) : NULL;
  if (!s) {
    *then_b = sink(m);
    if (else_b) *else_b = sink(m);
    return;
  }
  GC_ASSERT(cond->type == GRAPHC_DTYPE_BOOL);
  s->u.cond.cond = cond;
  *then_b = &s->u.cond.then;
  if (else_b) *else_b = &s->u.cond.els;
}

/* Barrier over the threads of the group. */
void kir_emit_barrier(kir_module *m, kir_block *b) { new_stmt(m, b, KIR_S_BARRIER); }

/* ---- tensor-core building blocks ---------------------------------------------------------- */

/* 16-byte asynchronous copy global -> shared (zero-fill when !pred). */
void kir_emit_cp_async(kir_module *m, kir_block *b, int sbuf, kir_expr *sindex, int gbuf,
                       kir_expr *gindex, kir_expr *pred) {
  if (!sindex || !gindex || !pred) return;
  kir_stmt *s = new_stmt(m, b, KIR_S_CP_ASYNC);
  if (!s) return;
  s->u.copy.sbuf = sbuf;
  s->u.copy.sindex = sindex;
  s->u.copy.gbuf = gbuf;
  s->u.copy.gindex = gindex;
  s->u.copy.pred = pred;
}

void kir_emit_cp_commit(kir_module *m, kir_block *b) { new_stmt(m, b, KIR_S_CP_COMMIT); }

void kir_emit_cp_wait(kir_module *m, kir_block *b, int pending) {
  GC_ASSERT(pending >= 0 && pending < 8);
  kir_stmt *s = new_stmt(m, b, KIR_S_CP_WAIT);
  if (s) s->u.wait = pending;
}

/* Four 8x8 b16 matrices from shared array buf into vars[0..4). */
void kir_emit_ldmatrix(kir_module *m, kir_block *b, int buf, kir_expr *index, int trans,
                       const int *vars) {
  if (!index) return;
  kir_stmt *s = new_stmt(m, b, KIR_S_LDMATRIX);
  if (!s) return;
  s->u.ldm.buf = buf;
  s->u.ldm.index = index;
  s->u.ldm.trans = trans;
  for (int i = 0; i < 4; i++) s->u.ldm.vars[i] = vars[i];
}

/* d += a * bfrag (warp-wide). */
void kir_emit_mma(kir_module *m, kir_block *b, kir_mma_kind kind, const int *d, const int *a,
                  const int *bfrag) {
  kir_stmt *s = new_stmt(m, b, KIR_S_MMA);
  if (!s) return;
  s->u.mma.kind = kind;
  for (int i = 0; i < 4; i++) {
    s->u.mma.d[i] = d[i];
    s->u.mma.a[i] = a[i];
  }
  s->u.mma.b[0] = bfrag[0];
  s->u.mma.b[1] = bfrag[1];
}

const char *kir_mma_ptx(kir_mma_kind kind) {
  switch (kind) {
    case KIR_MMA_F16: return "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32";
    case KIR_MMA_BF16: return "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32";
    case KIR_MMA_TF32: return "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32";
    case KIR_MMA_E4M3: case KIR_MMA_E5M2: case KIR_MMA_S8: case KIR_MMA_U8: break;  /* warpgroup MMAs only */
  }
  GC_ASSERT(!"bad mma kind");
  return NULL;
}

int kir_mma_k(kir_mma_kind kind) { return kind == KIR_MMA_TF32 ? 8 : kind >= KIR_MMA_E4M3 ? 32 : 16; }

gc_dtype kir_mma_dtype(kir_mma_kind kind) {
  switch (kind) {
    case KIR_MMA_F16: return GRAPHC_DTYPE_F16;
    case KIR_MMA_BF16: return GRAPHC_DTYPE_BF16;
    case KIR_MMA_TF32: return GRAPHC_DTYPE_F32;
    case KIR_MMA_E4M3: return GRAPHC_DTYPE_F8E4M3;
    case KIR_MMA_E5M2: return GRAPHC_DTYPE_F8E5M2;
    case KIR_MMA_S8: return GRAPHC_DTYPE_I8;
    case KIR_MMA_U8: return GRAPHC_DTYPE_U8;
  }
  return GRAPHC_DTYPE_F32;
}

const char *kir_mma_type(kir_mma_kind kind) {
  static const char *const names[] = {"f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8"};
  return names[kind];
}

int kir_mma_byte_kind(gc_dtype t) {
  switch (t) {
    case GRAPHC_DTYPE_F8E4M3: return KIR_MMA_E4M3;
    case GRAPHC_DTYPE_F8E5M2: return KIR_MMA_E5M2;
    case GRAPHC_DTYPE_I8: return KIR_MMA_S8;
    case GRAPHC_DTYPE_U8: return KIR_MMA_U8;
    default: return -1;
  }
}

/* ---- Hopper warpgroup MMA ---------------------------------------------------------------- */

void kir_emit_fence_async(kir_module *m, kir_block *b) { new_stmt(m, b, KIR_S_FENCE_ASYNC); }
void kir_emit_wg_fence(kir_module *m, kir_block *b) { new_stmt(m, b, KIR_S_WG_FENCE); }
void kir_emit_wg_commit(kir_module *m, kir_block *b) { new_stmt(m, b, KIR_S_WG_COMMIT); }

void kir_emit_wg_wait(kir_module *m, kir_block *b, int pending) {
  GC_ASSERT(pending >= 0 && pending < 8);
  kir_stmt *s = new_stmt(m, b, KIR_S_WG_WAIT);
  if (s) s->u.wait = pending;
}

/* A WGMMA statement with n / 2 accumulators d and shared operand b (NULL when out of memory). */
static kir_stmt *wgmma_stmt(kir_module *m, kir_block *b, kir_mma_kind kind, int n, const int *d,
                            const kir_wg_opnd *bop) {
  GC_ASSERT(n >= 8 && n <= 256 && n % 8 == 0);
  int *dv = gc_arena_alloc(&m->arena, (size_t)(n / 2) * sizeof *dv);
  kir_stmt *s = dv ? new_stmt(m, b, KIR_S_WGMMA) : NULL;
  if (!s) return NULL;
  memcpy(dv, d, (size_t)(n / 2) * sizeof *dv);
  s->u.wg.kind = s->u.wg.kind_b = kind;
  s->u.wg.n = n;
  s->u.wg.d = dv;
  s->u.wg.b = *bop;
  return s;
}

void kir_emit_wgmma(kir_module *m, kir_block *b, kir_mma_kind kind, kir_mma_kind kind_b, int n, const int *d,
                    int overwrite, const kir_wg_opnd *a, const kir_wg_opnd *bop) {
  GC_ASSERT(kind != KIR_MMA_TF32 && (kind_b == kind || (kind >= KIR_MMA_E4M3 && kind_b >= KIR_MMA_E4M3 &&
                                                          !KIR_MMA_IS_INT(kind) && !KIR_MMA_IS_INT(kind_b))));
  if (!a->index || !bop->index) return;
  kir_stmt *s = wgmma_stmt(m, b, kind, n, d, bop);
  if (!s) return;
  s->u.wg.a = *a;
  s->u.wg.kind_b = kind_b;
  s->u.wg.overwrite = overwrite;
}

void kir_emit_wgmma_ra(kir_module *m, kir_block *b, int n, const int *d, const int *a,
                       const kir_wg_opnd *bop) {
  GC_ASSERT(!bop->mn_major);
  if (!bop->index) return;
  kir_stmt *s = wgmma_stmt(m, b, KIR_MMA_TF32, n, d, bop);
  if (!s) return;
  s->u.wg.a_in_regs = 1;
  memcpy(s->u.wg.a_regs, a, sizeof s->u.wg.a_regs);
}

/* ---- bulk tensor copies and shared-memory barriers --------------------------------------- */

static kir_stmt *mbar_stmt(kir_module *m, kir_block *b, kir_stmt_kind kind, int buf, kir_expr *index) {
  if (!index) return NULL;
  kir_stmt *s = new_stmt(m, b, kind);
  if (s) {
    s->u.mbar.buf = buf;
    s->u.mbar.index = index;
  }
  return s;
}

void kir_emit_mbar_init(kir_module *m, kir_block *b, int buf, kir_expr *index, int count) {
  GC_ASSERT(count >= 1);
  kir_stmt *s = mbar_stmt(m, b, KIR_S_MBAR_INIT, buf, index);
  if (s) s->u.mbar.count = count;
}

void kir_emit_mbar_expect(kir_module *m, kir_block *b, int buf, kir_expr *index, int bytes) {
  GC_ASSERT(bytes >= 0 && bytes < (1 << 20));  /* the tx-count's range */
  kir_stmt *s = mbar_stmt(m, b, KIR_S_MBAR_EXPECT, buf, index);
  if (s) s->u.mbar.count = bytes;
}

void kir_emit_mbar_wait(kir_module *m, kir_block *b, int buf, kir_expr *index, kir_expr *parity) {
  if (!parity) return;
  kir_stmt *s = mbar_stmt(m, b, KIR_S_MBAR_WAIT, buf, index);
  if (s) s->u.mbar.parity = parity;
}

void kir_emit_tmap_acquire(kir_module *m, kir_block *b, int tmap) {
  kir_stmt *s = new_stmt(m, b, KIR_S_TMAP_ACQUIRE);
  if (s) s->u.tma.tmap = tmap;
}

void kir_emit_tma_load(kir_module *m, kir_block *b, int sbuf, kir_expr *sindex, int tmap,
                       kir_expr *const *coord, int mbuf, kir_expr *mindex) {
  if (!sindex || !mindex) return;
  kir_stmt *s = new_stmt(m, b, KIR_S_TMA_LOAD);
  if (!s) return;
  s->u.tma.sbuf = sbuf;
  s->u.tma.sindex = sindex;
  s->u.tma.tmap = tmap;
  s->u.tma.mbuf = mbuf;
  s->u.tma.mindex = mindex;
  /* the rank is the tensor map's: the verifier checks it */
  int r = 0;
  while (r < KIR_TMAP_MAX_RANK && coord[r]) {
    s->u.tma.coord[r] = coord[r];
    r++;
  }
  s->u.tma.rank = r;
}

/* PTX ISA, "Matrix Descriptor Format": bits 16-29 lbo >> 4, 32-45 sbo >> 4, 62-63 the
 * swizzle (1: 128 bytes); the start address (bits 0-13) comes at run time. */
uint64_t kir_wg_desc_bits(const kir_wg_opnd *o) {
  return ((uint64_t)((o->lbo & 0x3FFFF) >> 4) << 16) | ((uint64_t)((o->sbo & 0x3FFFF) >> 4) << 32) |
         ((uint64_t)1 << 62);
}

static int block_uses_wgmma(const kir_block *b) {
  for (const kir_stmt *s = b->head; s; s = s->next) {
    if (s->kind == KIR_S_WGMMA) return 1;
    if (s->kind == KIR_S_FOR && block_uses_wgmma(&s->u.loop.body)) return 1;
    if (s->kind == KIR_S_IF && (block_uses_wgmma(&s->u.cond.then) || block_uses_wgmma(&s->u.cond.els)))
      return 1;
  }
  return 0;
}

int kir_uses_wgmma(const kir_kernel *k) { return block_uses_wgmma(&k->body); }

int kir_module_uses_wgmma(const kir_module *m) {
  for (int i = 0; i < m->n_kernels; i++)
    if (kir_uses_wgmma(m->kernels[i])) return 1;
  return 0;
}

/* Static arrays are 16-byte aligned; dynamic ones 1024-byte (a swizzle atom of wgmma). */
int64_t kir_shared_offset(const kir_kernel *k, int i) {
  int64_t align = k->shared_dynamic ? 1024 : 16, off = 0;
  for (int j = 0; j < i; j++) {
    off += k->shared[j].count * (int64_t)graphc_dtype_size(k->shared[j].dtype);
    off = (off + align - 1) & ~(align - 1);
  }
  return off;
}

int64_t kir_shared_bytes(const kir_kernel *k) {
  if (k->n_shared == 0) return 0;
  int64_t end = kir_shared_offset(k, k->n_shared - 1) +
                k->shared[k->n_shared - 1].count * (int64_t)graphc_dtype_size(k->shared[k->n_shared - 1].dtype);
  return k->shared_dynamic ? end + 1024 : end;
}

/* Any tensor-core statement in block b? */
static int block_uses_tc(const kir_block *b) {
  for (const kir_stmt *s = b->head; s; s = s->next) {
    switch (s->kind) {
      case KIR_S_CP_ASYNC: case KIR_S_CP_COMMIT: case KIR_S_CP_WAIT: case KIR_S_LDMATRIX: case KIR_S_MMA:
      case KIR_S_FENCE_ASYNC: case KIR_S_WG_FENCE: case KIR_S_WG_COMMIT: case KIR_S_WG_WAIT: case KIR_S_WGMMA:
      case KIR_S_MBAR_INIT: case KIR_S_MBAR_EXPECT: case KIR_S_MBAR_WAIT: case KIR_S_TMA_LOAD:
      case KIR_S_TMAP_ACQUIRE:
        return 1;
      case KIR_S_FOR:
        if (block_uses_tc(&s->u.loop.body)) return 1;
        break;
      case KIR_S_IF:
        if (block_uses_tc(&s->u.cond.then) || block_uses_tc(&s->u.cond.els)) return 1;
        break;
      default: break;
    }
  }
  return 0;
}

int kir_uses_tensor_cores(const kir_kernel *k) { return block_uses_tc(&k->body); }

/* ---- verifier ---------------------------------------------------------------------------- */

typedef struct verify_ctx {
  const kir_kernel *k;
  unsigned char *assigned;   /* per var: assigned earlier in program order */
  int blocks;                /* BLOCKS launch */
  int uses_shfl;
} verify_ctx;

/* Dtype of buffer `buf` in space sp (asserts it exists). */
static gc_dtype buf_dtype(const kir_kernel *k, kir_space sp, int buf) {
  if (sp == KIR_GLOBAL) {
    GC_ASSERT(buf >= 0 && buf < k->n_params && k->params[buf].kind == KIR_PARAM_BUFFER);
    return k->params[buf].dtype;
  }
  if (sp == KIR_SCRATCH) {
    GC_ASSERT(buf >= 0 && buf < k->n_scratch);
    return k->scratch[buf].dtype;
  }
  GC_ASSERT(sp == KIR_SHARED && buf >= 0 && buf < k->n_shared);
  return k->shared[buf].dtype;
}

/* Check one expression tree: kinds, types, uses of vars/params/specials. */
static void verify_expr(verify_ctx *c, const kir_expr *e) {
  const kir_kernel *k = c->k;
  GC_ASSERT(e != NULL);
  GC_ASSERT(is_valid_dtype(e->type));
  switch (e->kind) {
    case KIR_E_CONST:
      if (gc_dtype_is_float(e->type)) break;
      if (e->type == GRAPHC_DTYPE_BOOL) GC_ASSERT(e->u.i == 0 || e->u.i == 1);
      if (e->type == GRAPHC_DTYPE_I32) GC_ASSERT(e->u.i >= INT32_MIN && e->u.i <= INT32_MAX);
      if (e->type == GRAPHC_DTYPE_I8) GC_ASSERT(e->u.i >= -128 && e->u.i <= 127);
      if (e->type == GRAPHC_DTYPE_U8) GC_ASSERT(e->u.i >= 0 && e->u.i <= 255);
      break;
    case KIR_E_VAR:
      GC_ASSERT(e->u.var >= 0 && e->u.var < k->n_vars);
      GC_ASSERT(e->type == k->vars[e->u.var].type);
      GC_ASSERT(c->assigned[e->u.var]);  /* read before any assignment */
      break;
    case KIR_E_PARAM:
      GC_ASSERT(e->u.param >= 0 && e->u.param < k->n_params);
      GC_ASSERT(k->params[e->u.param].kind == KIR_PARAM_I64 && e->type == GRAPHC_DTYPE_I64);
      break;
    case KIR_E_SPECIAL:
      GC_ASSERT(c->blocks);  /* thread indices only mean something in BLOCKS launches */
      GC_ASSERT(e->u.special >= KIR_SP_THREAD && e->u.special <= KIR_SP_WARP);
      GC_ASSERT(e->type == GRAPHC_DTYPE_I32);
      break;
    case KIR_E_UNARY:
      verify_expr(c, e->u.op.a);
      GC_ASSERT(op_is_unary(e->u.op.op) && op_accepts(e->u.op.op, e->u.op.a->type));
      GC_ASSERT(e->u.op.op == KIR_F8E4M3_SAT ? e->type == GRAPHC_DTYPE_F8E4M3
                : e->u.op.op == KIR_F8E5M2_SAT ? e->type == GRAPHC_DTYPE_F8E5M2 : e->type == e->u.op.a->type);
      break;
    case KIR_E_BINARY:
      verify_expr(c, e->u.op.a);
      verify_expr(c, e->u.op.b);
      GC_ASSERT(e->u.op.op >= KIR_ADD && e->u.op.op < KIR_OP_COUNT_);
      GC_ASSERT(e->u.op.a->type == e->u.op.b->type && op_accepts(e->u.op.op, e->u.op.a->type));
      GC_ASSERT(e->type == (op_is_compare(e->u.op.op) ? GRAPHC_DTYPE_BOOL : e->u.op.a->type));
      break;
    case KIR_E_SELECT:
      verify_expr(c, e->u.op.a);
      verify_expr(c, e->u.op.b);
      verify_expr(c, e->u.op.c);
      GC_ASSERT(e->u.op.a->type == GRAPHC_DTYPE_BOOL);
      GC_ASSERT(e->u.op.b->type == e->type && e->u.op.c->type == e->type);
      break;
    case KIR_E_CAST:
      GC_ASSERT(!gc_dtype_is_f8(e->type) && !gc_dtype_is_f8(e->u.op.a->type));
      verify_expr(c, e->u.op.a);
      break;
    case KIR_E_BITCAST:
      GC_ASSERT(graphc_dtype_size(e->type) == graphc_dtype_size(e->u.op.a->type));
      verify_expr(c, e->u.op.a);
      break;
    case KIR_E_LOAD:
      if (e->u.mem.space == KIR_SHARED) GC_ASSERT(c->blocks);
      GC_ASSERT(e->type == buf_dtype(k, e->u.mem.space, e->u.mem.buf));
      verify_expr(c, e->u.mem.index);
      GC_ASSERT(e->u.mem.index->type == GRAPHC_DTYPE_I64);
      break;
    case KIR_E_SHFL_XOR:
      GC_ASSERT(c->blocks);
      GC_ASSERT(e->u.shfl.mask >= 1 && e->u.shfl.mask <= 31);
      verify_expr(c, e->u.shfl.a);
      GC_ASSERT(e->type == e->u.shfl.a->type);
      c->uses_shfl = 1;
      break;
    case KIR_E_PACK2:
      GC_ASSERT(e->u.pack.dtype == GRAPHC_DTYPE_F16 || e->u.pack.dtype == GRAPHC_DTYPE_BF16);
      GC_ASSERT(e->type == GRAPHC_DTYPE_I32);
      verify_expr(c, e->u.pack.lo);
      verify_expr(c, e->u.pack.hi);
      GC_ASSERT(e->u.pack.lo->type == GRAPHC_DTYPE_F32 && e->u.pack.hi->type == GRAPHC_DTYPE_F32);
      break;
    default:
      GC_ASSERT(!"unknown kir expression kind");
  }
}

/* Check a store/vector target: existing buffer, writable, right space. */
static gc_dtype verify_target(verify_ctx *c, kir_space sp, int buf) {
  gc_dtype t = buf_dtype(c->k, sp, buf);
  if (sp == KIR_SHARED)
    GC_ASSERT(c->blocks);
  return t;
}

/* Check the statements of one block in program order. */
static void verify_block(verify_ctx *c, const kir_block *b) {
  const kir_kernel *k = c->k;
  for (const kir_stmt *s = b->head; s; s = s->next) {
    GC_ASSERT(s->next || s == b->tail);
    switch (s->kind) {
      case KIR_S_ASSIGN:
        GC_ASSERT(s->u.assign.var >= 0 && s->u.assign.var < k->n_vars);
        verify_expr(c, s->u.assign.value);
        GC_ASSERT(s->u.assign.value->type == k->vars[s->u.assign.var].type);
        c->assigned[s->u.assign.var] = 1;
        break;
      case KIR_S_STORE: {
        gc_dtype t = verify_target(c, s->u.store.space, s->u.store.buf);
        if (s->u.store.space == KIR_GLOBAL) GC_ASSERT(!k->params[s->u.store.buf].readonly);
        verify_expr(c, s->u.store.index);
        verify_expr(c, s->u.store.value);
        GC_ASSERT(s->u.store.index->type == GRAPHC_DTYPE_I64);
        GC_ASSERT(s->u.store.value->type == t);
        break;
      }
      case KIR_S_LOAD_VEC:
      case KIR_S_STORE_VEC: {
        gc_dtype t = verify_target(c, s->u.vec.space, s->u.vec.buf);
        int w = s->u.vec.width;
        /* power of two, at most 16 bytes: one aligned vector access */
        GC_ASSERT(w >= 1 && w <= KIR_MAX_VEC && (w & (w - 1)) == 0);
        GC_ASSERT((size_t)w * graphc_dtype_size(t) <= 16);
        verify_expr(c, s->u.vec.index);
        GC_ASSERT(s->u.vec.index->type == GRAPHC_DTYPE_I64);
        for (int i = 0; i < w; i++) {
          if (s->kind == KIR_S_LOAD_VEC) {
            int v = s->u.vec.vars[i];
            GC_ASSERT(v >= 0 && v < k->n_vars && k->vars[v].type == t);
          } else {
            verify_expr(c, s->u.vec.values[i]);
            GC_ASSERT(s->u.vec.values[i]->type == t);
          }
        }
        if (s->kind == KIR_S_LOAD_VEC)
          for (int i = 0; i < w; i++) c->assigned[s->u.vec.vars[i]] = 1;
        else if (s->u.vec.space == KIR_GLOBAL)
          GC_ASSERT(!k->params[s->u.vec.buf].readonly);
        break;
      }
      case KIR_S_FOR:
        GC_ASSERT(s->u.loop.var >= 0 && s->u.loop.var < k->n_vars);
        GC_ASSERT(k->vars[s->u.loop.var].type == GRAPHC_DTYPE_I64);
        verify_expr(c, s->u.loop.lo);
        verify_expr(c, s->u.loop.hi);
        verify_expr(c, s->u.loop.step);
        GC_ASSERT(s->u.loop.lo->type == GRAPHC_DTYPE_I64 && s->u.loop.hi->type == GRAPHC_DTYPE_I64 &&
                  s->u.loop.step->type == GRAPHC_DTYPE_I64);
        if (s->u.loop.step->kind == KIR_E_CONST) GC_ASSERT(s->u.loop.step->u.i >= 1);
        c->assigned[s->u.loop.var] = 1;
        verify_block(c, &s->u.loop.body);
        break;
      case KIR_S_IF:
        verify_expr(c, s->u.cond.cond);
        GC_ASSERT(s->u.cond.cond->type == GRAPHC_DTYPE_BOOL);
        verify_block(c, &s->u.cond.then);
        verify_block(c, &s->u.cond.els);
        break;
      case KIR_S_BARRIER:
        GC_ASSERT(c->blocks);
        break;
      case KIR_S_CP_ASYNC:
        GC_ASSERT(c->blocks);
        buf_dtype(k, KIR_SHARED, s->u.copy.sbuf);
        buf_dtype(k, KIR_GLOBAL, s->u.copy.gbuf);
        GC_ASSERT(k->shared[s->u.copy.sbuf].dtype == k->params[s->u.copy.gbuf].dtype);
        verify_expr(c, s->u.copy.sindex);
        verify_expr(c, s->u.copy.gindex);
        verify_expr(c, s->u.copy.pred);
        GC_ASSERT(s->u.copy.sindex->type == GRAPHC_DTYPE_I64 && s->u.copy.gindex->type == GRAPHC_DTYPE_I64 &&
                  s->u.copy.pred->type == GRAPHC_DTYPE_BOOL);
        break;
      case KIR_S_CP_COMMIT:
      case KIR_S_CP_WAIT:
        GC_ASSERT(c->blocks);
        break;
      case KIR_S_LDMATRIX:
        GC_ASSERT(c->blocks);
        GC_ASSERT(graphc_dtype_size(buf_dtype(k, KIR_SHARED, s->u.ldm.buf)) <= 4);
        verify_expr(c, s->u.ldm.index);
        GC_ASSERT(s->u.ldm.index->type == GRAPHC_DTYPE_I64);
        for (int i = 0; i < 4; i++) {
          int v = s->u.ldm.vars[i];
          GC_ASSERT(v >= 0 && v < k->n_vars && k->vars[v].type == GRAPHC_DTYPE_I32);
          c->assigned[v] = 1;
        }
        c->uses_shfl = 1;  /* warp-collective: whole warps */
        break;
      case KIR_S_MMA:
        GC_ASSERT(c->blocks);
        for (int i = 0; i < 4; i++) {
          int d = s->u.mma.d[i], a = s->u.mma.a[i];
          GC_ASSERT(d >= 0 && d < k->n_vars && k->vars[d].type == GRAPHC_DTYPE_F32 && c->assigned[d]);
          GC_ASSERT(a >= 0 && a < k->n_vars && c->assigned[a]);
          GC_ASSERT(k->vars[a].type == GRAPHC_DTYPE_I32 ||
                    (s->u.mma.kind == KIR_MMA_TF32 && k->vars[a].type == GRAPHC_DTYPE_F32));
        }
        for (int i = 0; i < 2; i++) {
          int v = s->u.mma.b[i];
          GC_ASSERT(v >= 0 && v < k->n_vars && c->assigned[v]);
          GC_ASSERT(k->vars[v].type == GRAPHC_DTYPE_I32 ||
                    (s->u.mma.kind == KIR_MMA_TF32 && k->vars[v].type == GRAPHC_DTYPE_F32));
        }
        c->uses_shfl = 1;
        break;
      case KIR_S_FENCE_ASYNC:
      case KIR_S_WG_FENCE:
      case KIR_S_WG_COMMIT:
      case KIR_S_WG_WAIT:
        GC_ASSERT(c->blocks && k->shared_dynamic);
        break;
      case KIR_S_WGMMA: {
        GC_ASSERT(c->blocks && k->shared_dynamic && k->launch.block % 128 == 0);
        const kir_wg_opnd *ops[2] = {&s->u.wg.a, &s->u.wg.b};
        /* tf32: A from registers, B K-major; f16 / bf16: both from shared memory */
        GC_ASSERT((s->u.wg.kind == KIR_MMA_TF32) == (s->u.wg.a_in_regs != 0));
        GC_ASSERT((s->u.wg.kind != KIR_MMA_TF32 && s->u.wg.kind < KIR_MMA_E4M3) || !s->u.wg.b.mn_major);
        GC_ASSERT(s->u.wg.kind == s->u.wg.kind_b ||
                  (s->u.wg.kind >= KIR_MMA_E4M3 && s->u.wg.kind_b >= KIR_MMA_E4M3 &&
                   !KIR_MMA_IS_INT(s->u.wg.kind) && !KIR_MMA_IS_INT(s->u.wg.kind_b)));
        for (int i = 0; i < 4 && s->u.wg.a_in_regs; i++) {
          int a = s->u.wg.a_regs[i];
          GC_ASSERT(a >= 0 && a < k->n_vars && c->assigned[a] &&
                    (k->vars[a].type == GRAPHC_DTYPE_F32 || k->vars[a].type == GRAPHC_DTYPE_I32));
        }
        for (int i = s->u.wg.a_in_regs ? 1 : 0; i < 2; i++) {
          GC_ASSERT(buf_dtype(k, KIR_SHARED, ops[i]->buf) == kir_mma_dtype(i ? s->u.wg.kind_b : s->u.wg.kind));
          verify_expr(c, ops[i]->index);
          GC_ASSERT(ops[i]->index->type == GRAPHC_DTYPE_I64);
          GC_ASSERT(ops[i]->lbo >= 0 && ops[i]->lbo % 16 == 0 && ops[i]->sbo > 0 && ops[i]->sbo % 16 == 0);
        }
        GC_ASSERT(!s->u.wg.a.mn_major);  /* A is K-major */
        for (int i = 0; i < s->u.wg.n / 2; i++) {
          int d = s->u.wg.d[i];
          GC_ASSERT(d >= 0 && d < k->n_vars && c->assigned[d] &&
                    k->vars[d].type == (KIR_MMA_IS_INT(s->u.wg.kind) ? GRAPHC_DTYPE_I32 : GRAPHC_DTYPE_F32));
        }
        c->uses_shfl = 1;
        break;
      }
      case KIR_S_MBAR_INIT:
      case KIR_S_MBAR_EXPECT:
      case KIR_S_MBAR_WAIT:
        GC_ASSERT(c->blocks && k->shared_dynamic);
        GC_ASSERT(buf_dtype(k, KIR_SHARED, s->u.mbar.buf) == GRAPHC_DTYPE_I64);
        verify_expr(c, s->u.mbar.index);
        GC_ASSERT(s->u.mbar.index->type == GRAPHC_DTYPE_I64);
        if (s->kind == KIR_S_MBAR_WAIT) {
          verify_expr(c, s->u.mbar.parity);
          GC_ASSERT(s->u.mbar.parity->type == GRAPHC_DTYPE_I64);
        }
        break;
      case KIR_S_TMAP_ACQUIRE:
        GC_ASSERT(c->blocks && s->u.tma.tmap >= 0 && s->u.tma.tmap < k->n_params &&
                  k->params[s->u.tma.tmap].kind == KIR_PARAM_TMAP);
        break;
      case KIR_S_TMA_LOAD: {
        GC_ASSERT(c->blocks && k->shared_dynamic);
        int t = s->u.tma.tmap;
        GC_ASSERT(t >= 0 && t < k->n_params && k->params[t].kind == KIR_PARAM_TMAP);
        GC_ASSERT(s->u.tma.rank == k->params[t].tmap.rank);
        GC_ASSERT(buf_dtype(k, KIR_SHARED, s->u.tma.sbuf) == k->params[t].dtype);
        GC_ASSERT(buf_dtype(k, KIR_SHARED, s->u.tma.mbuf) == GRAPHC_DTYPE_I64);
        verify_expr(c, s->u.tma.sindex);
        verify_expr(c, s->u.tma.mindex);
        GC_ASSERT(s->u.tma.sindex->type == GRAPHC_DTYPE_I64 && s->u.tma.mindex->type == GRAPHC_DTYPE_I64);
        for (int i = 0; i < s->u.tma.rank; i++) {
          verify_expr(c, s->u.tma.coord[i]);
          GC_ASSERT(s->u.tma.coord[i]->type == GRAPHC_DTYPE_I64);
        }
        break;
      }
      default:
        GC_ASSERT(!"unknown kir statement kind");
    }
  }
}

/* Check the kernel's invariants; any violation is an emitter bug. */
void kir_verify(const kir_kernel *k) {
  GC_ASSERT(k && is_c_ident(k->name));
  GC_ASSERT(k->launch.kind == KIR_LAUNCH_ITEMS || k->launch.kind == KIR_LAUNCH_BLOCKS);
  GC_ASSERT(k->launch.n >= 0 && k->launch.block >= 1 && k->launch.block <= 1024);
  GC_ASSERT(!k->one_pass || (k->launch.kind == KIR_LAUNCH_BLOCKS && k->launch.n <= INT32_MAX));
  GC_ASSERT(k->item_var >= 0 && k->item_var < k->n_vars);
  GC_ASSERT(k->vars[k->item_var].type == GRAPHC_DTYPE_I64);
  int blocks = k->launch.kind == KIR_LAUNCH_BLOCKS;
  GC_ASSERT(blocks || k->n_shared == 0);
  GC_ASSERT(!blocks || k->n_scratch == 0);
  for (int i = 0; i < k->n_scratch; i++) GC_ASSERT(k->scratch[i].count >= 1);
  for (int i = 0; i < k->n_shared; i++) GC_ASSERT(k->shared[i].count >= 1);
  /* static shared memory limit; dynamic: the opt-in limit */
  GC_ASSERT(kir_shared_bytes(k) <= (k->shared_dynamic ? KIR_MAX_DYNAMIC_SHARED : 48 * 1024));
  for (int i = 0; i < k->n_params; i++) {
    GC_ASSERT(is_c_ident(k->params[i].name));
    for (int j = 0; j < i; j++) GC_ASSERT(strcmp(k->params[i].name, k->params[j].name) != 0);
  }
  for (int i = 0; i < k->n_vars; i++) GC_ASSERT(is_c_ident(k->vars[i].name));
  verify_ctx c = {0};
  c.k = k;
  c.blocks = blocks;
  c.assigned = calloc((size_t)k->n_vars, 1);
  GC_ASSERT(c.assigned != NULL);
  c.assigned[k->item_var] = 1;
  verify_block(&c, &k->body);
  free(c.assigned);
  /* full-warp shuffles need whole warps */
  if (c.uses_shfl) GC_ASSERT(k->launch.block % 32 == 0);
}

/* ---- readable dump ---------------------------------------------------------------------- */

static const char *const op_names[KIR_OP_COUNT_] = {
    "neg", "abs", "not", "exp", "exp2", "log", "sqrt", "rsqrt", "tanh", "erf", "sin", "cos",
    "floor", "ceil", "sigmoid", "tanh.approx", "rcp.approx", "tf32.rna", "e4m3.satfinite", "e5m2.satfinite", "+", "-", "*", "/", "%", "min", "max", "pow", "&", "|", "^", "==", "!=", "<", "<=",
    ">", ">="};

static const char *const special_names[] = {"thread", "block_dim", "lane", "warp"};

/* Print an expression in a compact infix syntax. */
static void print_expr(gc_sbuf *b, const kir_kernel *k, const kir_expr *e) {
  switch (e->kind) {
    case KIR_E_CONST:
      if (gc_dtype_is_float(e->type)) {
        double v = e->u.f;
        if (isnan(v))
          gc_sbuf_puts(b, "nan");
        else if (isinf(v))
          gc_sbuf_puts(b, v < 0 ? "-inf" : "inf");
        else
          gc_sbuf_printf(b, "%.17g", v);
      } else if (e->type == GRAPHC_DTYPE_BOOL) {
        gc_sbuf_puts(b, e->u.i ? "true" : "false");
        return;
      } else {
        gc_sbuf_printf(b, "%lld", (long long)e->u.i);
      }
      gc_sbuf_printf(b, ":%s", graphc_dtype_name(e->type));
      break;
    case KIR_E_VAR: gc_sbuf_printf(b, "%%%s", k->vars[e->u.var].name); break;
    case KIR_E_PARAM: gc_sbuf_printf(b, "$%s", k->params[e->u.param].name); break;
    case KIR_E_SPECIAL: gc_sbuf_puts(b, special_names[e->u.special]); break;
    case KIR_E_UNARY:
      gc_sbuf_printf(b, "%s(", op_names[e->u.op.op]);
      print_expr(b, k, e->u.op.a);
      gc_sbuf_putc(b, ')');
      break;
    case KIR_E_BINARY:
      if (e->u.op.op == KIR_MIN || e->u.op.op == KIR_MAX || e->u.op.op == KIR_POW) {
        gc_sbuf_printf(b, "%s(", op_names[e->u.op.op]);
        print_expr(b, k, e->u.op.a);
        gc_sbuf_puts(b, ", ");
        print_expr(b, k, e->u.op.b);
        gc_sbuf_putc(b, ')');
      } else {
        gc_sbuf_putc(b, '(');
        print_expr(b, k, e->u.op.a);
        gc_sbuf_printf(b, " %s ", op_names[e->u.op.op]);
        print_expr(b, k, e->u.op.b);
        gc_sbuf_putc(b, ')');
      }
      break;
    case KIR_E_SELECT:
      gc_sbuf_puts(b, "select(");
      print_expr(b, k, e->u.op.a);
      gc_sbuf_puts(b, ", ");
      print_expr(b, k, e->u.op.b);
      gc_sbuf_puts(b, ", ");
      print_expr(b, k, e->u.op.c);
      gc_sbuf_putc(b, ')');
      break;
    case KIR_E_CAST:
    case KIR_E_BITCAST:
      gc_sbuf_printf(b, e->kind == KIR_E_BITCAST ? "bits.%s(" : "%s(", graphc_dtype_name(e->type));
      print_expr(b, k, e->u.op.a);
      gc_sbuf_putc(b, ')');
      break;
    case KIR_E_LOAD:
      if (e->u.mem.space == KIR_GLOBAL)
        gc_sbuf_puts(b, k->params[e->u.mem.buf].name);
      else
        gc_sbuf_printf(b, e->u.mem.space == KIR_SCRATCH ? "scratch%d" : "smem%d", e->u.mem.buf);
      gc_sbuf_putc(b, '[');
      print_expr(b, k, e->u.mem.index);
      gc_sbuf_putc(b, ']');
      break;
    case KIR_E_SHFL_XOR:
      gc_sbuf_puts(b, "shfl_xor(");
      print_expr(b, k, e->u.shfl.a);
      gc_sbuf_printf(b, ", %d)", e->u.shfl.mask);
      break;
    case KIR_E_PACK2:
      gc_sbuf_printf(b, "pack2.%s(", graphc_dtype_name(e->u.pack.dtype));
      print_expr(b, k, e->u.pack.lo);
      gc_sbuf_puts(b, ", ");
      print_expr(b, k, e->u.pack.hi);
      gc_sbuf_putc(b, ')');
      break;
  }
}

/* Name of buffer `buf` in space sp, for the dump. */
static void print_buf(gc_sbuf *b, const kir_kernel *k, kir_space sp, int buf) {
  if (sp == KIR_GLOBAL)
    gc_sbuf_puts(b, k->params[buf].name);
  else
    gc_sbuf_printf(b, sp == KIR_SCRATCH ? "scratch%d" : "smem%d", buf);
}

/* Print a block's statements at `depth` levels of two-space indentation. */
static void print_block(gc_sbuf *b, const kir_kernel *k, const kir_block *blk, int depth) {
  for (const kir_stmt *s = blk->head; s; s = s->next) {
    for (int i = 0; i < depth; i++) gc_sbuf_puts(b, "  ");
    switch (s->kind) {
      case KIR_S_ASSIGN:
        gc_sbuf_printf(b, "%%%s = ", k->vars[s->u.assign.var].name);
        print_expr(b, k, s->u.assign.value);
        gc_sbuf_putc(b, '\n');
        break;
      case KIR_S_STORE:
        print_buf(b, k, s->u.store.space, s->u.store.buf);
        gc_sbuf_putc(b, '[');
        print_expr(b, k, s->u.store.index);
        gc_sbuf_puts(b, "] = ");
        print_expr(b, k, s->u.store.value);
        gc_sbuf_putc(b, '\n');
        break;
      case KIR_S_LOAD_VEC:
        for (int i = 0; i < s->u.vec.width; i++)
          gc_sbuf_printf(b, "%s%%%s", i ? ", " : "", k->vars[s->u.vec.vars[i]].name);
        gc_sbuf_puts(b, " = ");
        print_buf(b, k, s->u.vec.space, s->u.vec.buf);
        gc_sbuf_putc(b, '[');
        print_expr(b, k, s->u.vec.index);
        gc_sbuf_printf(b, " x%d]\n", s->u.vec.width);
        break;
      case KIR_S_STORE_VEC:
        print_buf(b, k, s->u.vec.space, s->u.vec.buf);
        gc_sbuf_putc(b, '[');
        print_expr(b, k, s->u.vec.index);
        gc_sbuf_printf(b, " x%d] = (", s->u.vec.width);
        for (int i = 0; i < s->u.vec.width; i++) {
          if (i) gc_sbuf_puts(b, ", ");
          print_expr(b, k, s->u.vec.values[i]);
        }
        gc_sbuf_puts(b, ")\n");
        break;
      case KIR_S_FOR:
        gc_sbuf_printf(b, "for %%%s = ", k->vars[s->u.loop.var].name);
        print_expr(b, k, s->u.loop.lo);
        gc_sbuf_puts(b, " to ");
        print_expr(b, k, s->u.loop.hi);
        gc_sbuf_puts(b, " step ");
        print_expr(b, k, s->u.loop.step);
        gc_sbuf_puts(b, s->u.loop.nounroll ? " nounroll {\n" : s->u.loop.masked_tail ? " masked_tail {\n" : " {\n");
        print_block(b, k, &s->u.loop.body, depth + 1);
        for (int i = 0; i < depth; i++) gc_sbuf_puts(b, "  ");
        gc_sbuf_puts(b, "}\n");
        break;
      case KIR_S_IF:
        gc_sbuf_puts(b, "if ");
        print_expr(b, k, s->u.cond.cond);
        gc_sbuf_puts(b, " {\n");
        print_block(b, k, &s->u.cond.then, depth + 1);
        for (int i = 0; i < depth; i++) gc_sbuf_puts(b, "  ");
        if (s->u.cond.els.head) {
          gc_sbuf_puts(b, "} else {\n");
          print_block(b, k, &s->u.cond.els, depth + 1);
          for (int i = 0; i < depth; i++) gc_sbuf_puts(b, "  ");
        }
        gc_sbuf_puts(b, "}\n");
        break;
      case KIR_S_BARRIER:
        gc_sbuf_puts(b, "barrier\n");
        break;
      case KIR_S_CP_ASYNC:
        gc_sbuf_printf(b, "cp.async smem%d[", s->u.copy.sbuf);
        print_expr(b, k, s->u.copy.sindex);
        gc_sbuf_printf(b, " x16B] = %s[", k->params[s->u.copy.gbuf].name);
        print_expr(b, k, s->u.copy.gindex);
        gc_sbuf_puts(b, "] if ");
        print_expr(b, k, s->u.copy.pred);
        gc_sbuf_puts(b, "\n");
        break;
      case KIR_S_CP_COMMIT:
        gc_sbuf_puts(b, "cp.async.commit\n");
        break;
      case KIR_S_CP_WAIT:
        gc_sbuf_printf(b, "cp.async.wait %d\n", s->u.wait);
        break;
      case KIR_S_LDMATRIX: {
        const int *v = s->u.ldm.vars;
        gc_sbuf_printf(b, "%%%s, %%%s, %%%s, %%%s = ldmatrix.x4%s smem%d[", k->vars[v[0]].name,
                       k->vars[v[1]].name, k->vars[v[2]].name, k->vars[v[3]].name,
                       s->u.ldm.trans ? ".trans" : "", s->u.ldm.buf);
        print_expr(b, k, s->u.ldm.index);
        gc_sbuf_puts(b, "]\n");
        break;
      }
      case KIR_S_FENCE_ASYNC:
        gc_sbuf_puts(b, "fence.proxy.async\n");
        break;
      case KIR_S_WG_FENCE:
        gc_sbuf_puts(b, "wgmma.fence\n");
        break;
      case KIR_S_WG_COMMIT:
        gc_sbuf_puts(b, "wgmma.commit\n");
        break;
      case KIR_S_WG_WAIT:
        gc_sbuf_printf(b, "wgmma.wait %d\n", s->u.wait);
        break;
      case KIR_S_WGMMA: {
        int n = s->u.wg.n, ra = s->u.wg.a_in_regs;
        gc_sbuf_printf(b, "(%%%s .. %%%s) %s wgmma.m64n%dk%d.%s.%s", k->vars[s->u.wg.d[0]].name,
                       k->vars[s->u.wg.d[n / 2 - 1]].name, s->u.wg.overwrite ? "=" : "+=", n, kir_mma_k(s->u.wg.kind),
                       kir_mma_type(s->u.wg.kind), kir_mma_type(s->u.wg.kind_b));
        const kir_wg_opnd *ops[2] = {&s->u.wg.a, &s->u.wg.b};
        if (ra)
          gc_sbuf_printf(b, " (%%%s, %%%s, %%%s, %%%s) x", k->vars[s->u.wg.a_regs[0]].name,
                         k->vars[s->u.wg.a_regs[1]].name, k->vars[s->u.wg.a_regs[2]].name,
                         k->vars[s->u.wg.a_regs[3]].name);
        for (int i = ra; i < 2; i++) {
          gc_sbuf_printf(b, " smem%d[", ops[i]->buf);
          print_expr(b, k, ops[i]->index);
          gc_sbuf_printf(b, "]%s(lbo %d, sbo %d)", ops[i]->mn_major ? ".mn" : ".k", ops[i]->lbo, ops[i]->sbo);
          if (!i) gc_sbuf_puts(b, " x");
        }
        gc_sbuf_puts(b, "\n");
        break;
      }
      case KIR_S_MMA: {
        const int *d = s->u.mma.d, *a = s->u.mma.a, *bf = s->u.mma.b;
        gc_sbuf_printf(b, "(%%%s, %%%s, %%%s, %%%s) += %s (%%%s, %%%s, %%%s, %%%s) x (%%%s, %%%s)\n",
                       k->vars[d[0]].name, k->vars[d[1]].name, k->vars[d[2]].name, k->vars[d[3]].name,
                       kir_mma_ptx(s->u.mma.kind), k->vars[a[0]].name, k->vars[a[1]].name,
                       k->vars[a[2]].name, k->vars[a[3]].name, k->vars[bf[0]].name, k->vars[bf[1]].name);
        break;
      }
      case KIR_S_MBAR_INIT:
      case KIR_S_MBAR_EXPECT:
      case KIR_S_MBAR_WAIT:
        gc_sbuf_printf(b, "mbarrier.%s smem%d[", s->kind == KIR_S_MBAR_INIT ? "init" : s->kind == KIR_S_MBAR_EXPECT ? "expect_tx" : "wait",
                       s->u.mbar.buf);
        print_expr(b, k, s->u.mbar.index);
        gc_sbuf_puts(b, "]");
        if (s->kind == KIR_S_MBAR_WAIT) {
          gc_sbuf_puts(b, " parity ");
          print_expr(b, k, s->u.mbar.parity);
        } else {
          gc_sbuf_printf(b, s->kind == KIR_S_MBAR_INIT ? " count %d" : " bytes %d", s->u.mbar.count);
        }
        gc_sbuf_puts(b, "\n");
        break;
      case KIR_S_TMAP_ACQUIRE:
        gc_sbuf_printf(b, "fence.tensormap.acquire %s\n", k->params[s->u.tma.tmap].name);
        break;
      case KIR_S_TMA_LOAD:
        gc_sbuf_printf(b, "tma.load smem%d[", s->u.tma.sbuf);
        print_expr(b, k, s->u.tma.sindex);
        gc_sbuf_printf(b, "] = %s[", k->params[s->u.tma.tmap].name);
        for (int i = 0; i < s->u.tma.rank; i++) {
          if (i) gc_sbuf_puts(b, ", ");
          print_expr(b, k, s->u.tma.coord[i]);
        }
        gc_sbuf_printf(b, "] on smem%d[", s->u.tma.mbuf);
        print_expr(b, k, s->u.tma.mindex);
        gc_sbuf_puts(b, "]\n");
        break;
    }
  }
}

/* Human-readable dump: header, params, shared arrays, vars, then the body. */
void kir_print(gc_sbuf *b, const kir_kernel *k) {
  gc_sbuf_printf(b, "kernel %s %s(n=%lld, block=%d) item=%%%s\n", k->name,
                 k->launch.kind == KIR_LAUNCH_ITEMS ? "items" : "blocks",
                 (long long)k->launch.n, k->launch.block, k->vars[k->item_var].name);
  if (k->tune_key[0]) gc_sbuf_printf(b, "  tune \"%s\"\n", k->tune_key);
  if (k->min_blocks) gc_sbuf_printf(b, "  min_blocks %d\n", k->min_blocks);
  if (k->one_pass) gc_sbuf_puts(b, "  one_pass\n");
  for (int i = 0; i < k->n_params; i++) {
    const kir_param *p = &k->params[i];
    if (p->kind == KIR_PARAM_I64) {
      gc_sbuf_printf(b, "  param $%s: i64\n", p->name);
    } else if (p->kind == KIR_PARAM_TMAP) {
      const kir_tmap *t = &p->tmap;
      gc_sbuf_printf(b, "  param %s: tensormap %s binding=%d +%lldB dims", p->name, graphc_dtype_name(p->dtype),
                     p->binding, (long long)t->offset);
      for (int d = 0; d < t->rank; d++) gc_sbuf_printf(b, "%s%lld", d ? "x" : " ", (long long)t->dims[d]);
      gc_sbuf_puts(b, " strides");
      for (int d = 1; d < t->rank; d++) gc_sbuf_printf(b, "%s%lldB", d > 1 ? "," : " ", (long long)t->strides[d]);
      gc_sbuf_puts(b, " box");
      for (int d = 0; d < t->rank; d++) gc_sbuf_printf(b, "%s%d", d ? "x" : " ", t->box[d]);
      gc_sbuf_printf(b, " swizzle %d\n", t->swizzle);
    } else
      gc_sbuf_printf(b, "  param %s: %s*%s binding=%d\n", p->name, graphc_dtype_name(p->dtype),
                     p->readonly ? " readonly" : "", p->binding);
  }
  for (int i = 0; i < k->n_shared; i++)
    gc_sbuf_printf(b, "  shared smem%d: %s[%lld]%s\n", i, graphc_dtype_name(k->shared[i].dtype),
                   (long long)k->shared[i].count, k->shared_dynamic ? " dynamic" : "");
  for (int i = 0; i < k->n_scratch; i++)
    gc_sbuf_printf(b, "  scratch scratch%d: %s[%lld]\n", i, graphc_dtype_name(k->scratch[i].dtype),
                   (long long)k->scratch[i].count);
  for (int i = 0; i < k->n_vars; i++)
    gc_sbuf_printf(b, "  var %%%s: %s\n", k->vars[i].name, graphc_dtype_name(k->vars[i].type));
  if (k->bytes_moved > 0 || k->flops > 0)
    gc_sbuf_printf(b, "  cost bytes=%.0f flops=%.0f\n", k->bytes_moved, k->flops);
  gc_sbuf_puts(b, "{\n");
  print_block(b, k, &k->body, 1);
  gc_sbuf_puts(b, "}\n");
}

char *kir_canonical_text(const kir_kernel *k) {
  kir_kernel copy = *k;
  kir_var *vars = malloc(((size_t)k->n_vars + 1) * sizeof *vars);
  kir_param *params = malloc(((size_t)k->n_params + 1) * sizeof *params);
  char *names = malloc(((size_t)k->n_vars + (size_t)k->n_params + 1) * 16);
  char *key = NULL;
  if (vars && params && names) {
    for (int i = 0; i < k->n_vars; i++) {
      vars[i] = k->vars[i];
      vars[i].name = names + (size_t)i * 16;
      snprintf(names + (size_t)i * 16, 16, "v%d", i);
    }
    for (int i = 0; i < k->n_params; i++) {
      params[i] = k->params[i];
      params[i].name = names + ((size_t)k->n_vars + (size_t)i) * 16;
      params[i].binding = 0;
      snprintf(names + ((size_t)k->n_vars + (size_t)i) * 16, 16, "p%d", i);
    }
    copy.name = "K";
    copy.vars = vars;
    copy.params = params;
    gc_sbuf b = {0};
    kir_print(&b, &copy);
    key = b.failed ? NULL : gc_sbuf_take(&b);
    gc_sbuf_free(&b);
  }
  free(vars);
  free(params);
  free(names);
  return key;
}

int kir_maybe_same(const kir_kernel *a, const kir_kernel *b) {
  if (a->launch.kind != b->launch.kind || a->launch.n != b->launch.n ||
      a->launch.block != b->launch.block || a->n_params != b->n_params ||
      a->n_shared != b->n_shared || a->n_vars != b->n_vars)
    return 0;
  for (int i = 0; i < a->n_params; i++)
    if (a->params[i].kind != b->params[i].kind || a->params[i].dtype != b->params[i].dtype ||
        a->params[i].readonly != b->params[i].readonly)
      return 0;
  for (int i = 0; i < a->n_shared; i++)
    if (a->shared[i].dtype != b->shared[i].dtype || a->shared[i].count != b->shared[i].count)
      return 0;
  return 1;
}
