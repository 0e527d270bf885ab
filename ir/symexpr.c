/* symexpr.c - symbol expressions: canonical sums of products over base symbols.
 *
 * A derived symbol (e.g. the B*S of a reshape to [-1, 64] on f32[B, S, 64]) is a
 * graph symbol with a definition. Definitions are canonical so that building the
 * same expression twice yields the same symbol (gc_sym_intern looks it up):
 *   expr  = CONST c | atom | MUL(c; atom...) | ADD(c; term...)
 *   atom  = SYM i | FLOORDIV(e, e) | CEILDIV(e, e) | MIN(e, e) | MAX(e, e)
 * A MUL's atoms are sorted (gc_sx_cmp) and its coefficient is not 0 (nor 1 with a
 * single atom); an ADD's terms are sorted, have distinct atom lists, and there are
 * at least two of them or a nonzero constant. Expressions only name base symbols:
 * a derived symbol is replaced by its definition when it enters an expression.
 * Sums and products are computed on term lists (coefficient + atom list), then
 * rebuilt in the graph's arena. Overflowing coefficients give NULL.
 */
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

/* One term while computing: coef * atoms[0] * ... * atoms[n-1] (sorted). */
typedef struct term {
  int64_t coef;
  int n;
  const gc_sym_expr **f;   /* malloc'd */
} term;

typedef struct terms {
  term *t;
  int n, cap;
  int failed;
} terms;

static void terms_free(terms *ts) {
  for (int i = 0; i < ts->n; i++) free(ts->t[i].f);
  free(ts->t);
}

static void terms_push(terms *ts, int64_t coef, int n, const gc_sym_expr *const *f) {
  if (ts->failed) return;
  if (ts->n == ts->cap) {
    int cap = ts->cap ? 2 * ts->cap : 8;
    term *t = realloc(ts->t, (size_t)cap * sizeof *t);
    if (!t) { ts->failed = 1; return; }
    ts->t = t;
    ts->cap = cap;
  }
  const gc_sym_expr **fc = malloc((size_t)(n + 1) * sizeof *fc);
  if (!fc) { ts->failed = 1; return; }
  if (n) memcpy(fc, f, (size_t)n * sizeof *fc);
  ts->t[ts->n++] = (term){coef, n, fc};
}

static int kind_rank(gc_sx_kind k) { return (int)k; }

int gc_sx_cmp(const gc_sym_expr *a, const gc_sym_expr *b) {
  if (a == b) return 0;
  if (a->kind != b->kind) return kind_rank(a->kind) < kind_rank(b->kind) ? -1 : 1;
  switch (a->kind) {
    case GC_SX_CONST: return a->c < b->c ? -1 : a->c > b->c;
    case GC_SX_SYM: return a->sym < b->sym ? -1 : a->sym > b->sym;
    default: break;
  }
  if (a->c != b->c) return a->c < b->c ? -1 : 1;
  if (a->n != b->n) return a->n < b->n ? -1 : 1;
  for (int i = 0; i < a->n; i++) {
    int r = gc_sx_cmp(a->a[i], b->a[i]);
    if (r) return r;
  }
  return 0;
}

static int cmp_atom_ptr(const void *x, const void *y) {
  return gc_sx_cmp(*(const gc_sym_expr *const *)x, *(const gc_sym_expr *const *)y);
}

/* Compare atom lists (for sorting terms; the constant term, n = 0, comes first). */
static int cmp_atoms(const term *a, const term *b) {
  if (a->n != b->n) return a->n < b->n ? -1 : 1;
  for (int i = 0; i < a->n; i++) {
    int r = gc_sx_cmp(a->f[i], b->f[i]);
    if (r) return r;
  }
  return 0;
}

static int cmp_term(const void *x, const void *y) { return cmp_atoms(x, y); }

/* Append the terms of canonical e to ts, each multiplied by `mul`. */
static void add_terms(terms *ts, const gc_sym_expr *e, int64_t mul) {
  int64_t c;
  switch (e->kind) {
    case GC_SX_CONST:
      if (__builtin_mul_overflow(e->c, mul, &c)) ts->failed = 1;
      else terms_push(ts, c, 0, NULL);
      return;
    case GC_SX_MUL:
      if (__builtin_mul_overflow(e->c, mul, &c)) ts->failed = 1;
      else terms_push(ts, c, e->n, e->a);
      return;
    case GC_SX_ADD:
      if (e->c) add_terms(ts, &(gc_sym_expr){.kind = GC_SX_CONST, .c = e->c}, mul);
      for (int i = 0; i < e->n; i++) add_terms(ts, e->a[i], mul);
      return;
    default:
      terms_push(ts, mul, 1, &e);
      return;
  }
}

static gc_sym_expr *node(gc_graph *g, gc_sx_kind k, int64_t c, int n) {
  gc_sym_expr *e = gc_arena_alloc(&g->arena, sizeof *e);
  if (!e) return NULL;
  e->kind = k;
  e->c = c;
  e->n = n;
  if (n && !(e->a = gc_arena_alloc(&g->arena, (size_t)n * sizeof *e->a))) return NULL;
  return e;
}

const gc_sym_expr *gc_sx_const(gc_graph *g, int64_t c) { return node(g, GC_SX_CONST, c, 0); }

/* One term as an expression. */
static const gc_sym_expr *build_term(gc_graph *g, const term *t) {
  if (t->n == 0) return gc_sx_const(g, t->coef);
  if (t->n == 1 && t->coef == 1) return t->f[0];
  gc_sym_expr *e = node(g, GC_SX_MUL, t->coef, t->n);
  if (e) memcpy(e->a, t->f, (size_t)t->n * sizeof *e->a);
  return e;
}

/* Sort, merge like terms, drop zeros, build. Frees ts. */
static const gc_sym_expr *build(gc_graph *g, terms *ts) {
  const gc_sym_expr *r = NULL;
  if (ts->failed) goto done;
  for (int i = 0; i < ts->n; i++) qsort(ts->t[i].f, (size_t)ts->t[i].n, sizeof *ts->t[i].f, cmp_atom_ptr);
  qsort(ts->t, (size_t)ts->n, sizeof *ts->t, cmp_term);
  int m = 0;
  for (int i = 0; i < ts->n; i++) {
    if (m && cmp_atoms(&ts->t[m - 1], &ts->t[i]) == 0) {
      if (__builtin_add_overflow(ts->t[m - 1].coef, ts->t[i].coef, &ts->t[m - 1].coef)) goto done;
      free(ts->t[i].f);
    } else {
      ts->t[m++] = ts->t[i];
    }
  }
  ts->n = m;
  int k = 0;
  for (int i = 0; i < ts->n; i++) {
    if (ts->t[i].coef == 0) free(ts->t[i].f);
    else ts->t[k++] = ts->t[i];
  }
  ts->n = k;
  int64_t c0 = ts->n && ts->t[0].n == 0 ? ts->t[0].coef : 0;
  int first = ts->n && ts->t[0].n == 0 ? 1 : 0;
  int nt = ts->n - first;
  if (nt == 0) {
    r = gc_sx_const(g, c0);
  } else if (nt == 1 && c0 == 0) {
    r = build_term(g, &ts->t[first]);
  } else {
    gc_sym_expr *e = node(g, GC_SX_ADD, c0, nt);
    for (int i = 0; e && i < nt; i++)
      if (!(e->a[i] = build_term(g, &ts->t[first + i]))) e = NULL;
    r = e;
  }
done:
  terms_free(ts);
  return r;
}

const gc_sym_expr *gc_sx_dim(gc_graph *g, int64_t dim) {
  if (!GC_DIM_IS_SYM(dim)) return gc_sx_const(g, dim);
  int i = GC_DIM_SYM_INDEX(dim);
  if (i < g->n_syms && g->sym_defs && g->sym_defs[i]) return g->sym_defs[i];
  gc_sym_expr *e = node(g, GC_SX_SYM, 0, 0);
  if (e) e->sym = i;
  return e;
}

const gc_sym_expr *gc_sx_add(gc_graph *g, const gc_sym_expr *a, const gc_sym_expr *b) {
  if (!a || !b) return NULL;
  terms ts = {0};
  add_terms(&ts, a, 1);
  add_terms(&ts, b, 1);
  return build(g, &ts);
}

const gc_sym_expr *gc_sx_mul(gc_graph *g, const gc_sym_expr *a, const gc_sym_expr *b) {
  if (!a || !b) return NULL;
  terms ta = {0}, tb = {0}, ts = {0};
  add_terms(&ta, a, 1);
  add_terms(&tb, b, 1);
  ts.failed = ta.failed || tb.failed;
  for (int i = 0; i < ta.n && !ts.failed; i++)
    for (int j = 0; j < tb.n && !ts.failed; j++) {
      int64_t c;
      int n = ta.t[i].n + tb.t[j].n;
      const gc_sym_expr **f = malloc((size_t)(n + 1) * sizeof *f);
      if (!f || __builtin_mul_overflow(ta.t[i].coef, tb.t[j].coef, &c)) {
        free(f);
        ts.failed = 1;
        break;
      }
      if (ta.t[i].n) memcpy(f, ta.t[i].f, (size_t)ta.t[i].n * sizeof *f);
      if (tb.t[j].n) memcpy(f + ta.t[i].n, tb.t[j].f, (size_t)tb.t[j].n * sizeof *f);
      terms_push(&ts, c, n, f);
      free(f);
    }
  terms_free(&ta);
  terms_free(&tb);
  return build(g, &ts);
}

/* Remove the atoms of d (sorted) from f (sorted) into out; 0 when d is not a sub-multiset. */
static int remove_atoms(const term *t, const term *d, const gc_sym_expr **out, int *n_out) {
  int i = 0, j = 0, k = 0;
  while (i < t->n) {
    int r = j < d->n ? gc_sx_cmp(t->f[i], d->f[j]) : -1;
    if (r == 0) { i++; j++; }
    else if (r < 0) out[k++] = t->f[i++];
    else return 0;
  }
  *n_out = k;
  return j == d->n;
}

/* a / b when b is one term that divides every term of a exactly; NULL otherwise. */
const gc_sym_expr *gc_sx_exact_div(gc_graph *g, const gc_sym_expr *a, const gc_sym_expr *b) {
  terms ta = {0}, tb = {0}, q = {0};
  add_terms(&ta, a, 1);
  add_terms(&tb, b, 1);
  int ok = !ta.failed && !tb.failed && tb.n == 1 && tb.t[0].coef > 0;
  for (int i = 0; ok && i < ta.n; i++) {
    const gc_sym_expr **f = malloc((size_t)(ta.t[i].n + 1) * sizeof *f);
    int n = 0;
    ok = f && ta.t[i].coef % tb.t[0].coef == 0 && remove_atoms(&ta.t[i], &tb.t[0], f, &n);
    if (ok) terms_push(&q, ta.t[i].coef / tb.t[0].coef, n, f);
    free(f);
  }
  terms_free(&ta);
  terms_free(&tb);
  if (!ok) {
    terms_free(&q);
    return NULL;
  }
  return build(g, &q);
}

static int64_t floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* Clamp a 128-bit bound into int64 range; 0 when it does not fit below 2^62. */
static int fit(__int128 v, int64_t *out) {
  if (v >= ((__int128)1 << 62) || v <= -((__int128)1 << 62)) return 0;
  *out = (int64_t)v;
  return 1;
}

int gc_sx_bounds(const gc_graph *g, const gc_sym_expr *e, int64_t *lo, int64_t *hi) {
  int64_t a0, a1, b0, b1;
  switch (e->kind) {
    case GC_SX_CONST: *lo = *hi = e->c; return 1;
    case GC_SX_SYM:
      if (e->sym >= g->n_syms) return 0;
      *lo = g->sym_lo ? g->sym_lo[e->sym] : 1;
      *hi = g->sym_hi ? g->sym_hi[e->sym] : GC_SYM_MAX;
      return 1;
    case GC_SX_ADD:
    case GC_SX_MUL: {
      __int128 l = e->c, h = e->c;
      if (e->kind == GC_SX_MUL) l = h = 1;
      for (int i = 0; i < e->n; i++) {
        if (!gc_sx_bounds(g, e->a[i], &a0, &a1)) return 0;
        if (e->kind == GC_SX_ADD) {
          l += a0, h += a1;
        } else {
          if (a0 < 0 || l < 0) return 0; /* products of non-negative factors only */
          l *= a0, h *= a1;
        }
        if (h >= ((__int128)1 << 62) || l <= -((__int128)1 << 62)) return 0;
      }
      if (e->kind == GC_SX_MUL) {
        __int128 cl = e->c >= 0 ? l * e->c : h * e->c, ch = e->c >= 0 ? h * e->c : l * e->c;
        l = cl, h = ch;
      }
      return fit(l, lo) && fit(h, hi);
    }
    default: break;
  }
  if (!gc_sx_bounds(g, e->a[0], &a0, &a1) || !gc_sx_bounds(g, e->a[1], &b0, &b1)) return 0;
  switch (e->kind) {
    case GC_SX_FLOORDIV:
    case GC_SX_CEILDIV:
      if (b0 < 1 || a0 < 0) return 0;
      *lo = a0 / b1;
      *hi = e->kind == GC_SX_CEILDIV ? (a1 + b0 - 1) / b0 : a1 / b0;
      return 1;
    case GC_SX_MIN: *lo = a0 < b0 ? a0 : b0, *hi = a1 < b1 ? a1 : b1; return 1;
    default: *lo = a0 > b0 ? a0 : b0, *hi = a1 > b1 ? a1 : b1; return 1;
  }
}

const gc_sym_expr *gc_sx_op(gc_graph *g, gc_sx_kind k, const gc_sym_expr *a, const gc_sym_expr *b) {
  if (!a || !b) return NULL;
  int both = a->kind == GC_SX_CONST && b->kind == GC_SX_CONST;
  switch (k) {
    case GC_SX_FLOORDIV:
    case GC_SX_CEILDIV:
      if (b->kind == GC_SX_CONST && b->c <= 0) return NULL;
      if (both) {
        int64_t q = floordiv(a->c, b->c);
        return gc_sx_const(g, k == GC_SX_CEILDIV && q * b->c != a->c ? q + 1 : q);
      }
      {
        const gc_sym_expr *q = gc_sx_exact_div(g, a, b);
        if (q) return q;
      }
      break;
    case GC_SX_MIN:
    case GC_SX_MAX:
      if (both) return gc_sx_const(g, (k == GC_SX_MIN) == (a->c < b->c) ? a->c : b->c);
      if (gc_sx_cmp(a, b) == 0) return a;
      {
        int64_t lo, hi; /* decided by the sign of a - b over the symbols' ranges */
        const gc_sym_expr *d = gc_sx_add(g, a, gc_sx_mul(g, gc_sx_const(g, -1), b));
        if (d && gc_sx_bounds(g, d, &lo, &hi)) {
          /* equal over the whole range (B in 1..1 against 1): keep the symbol, which the
           * other types of the graph are written with */
          if (lo == 0 && hi == 0) return a->kind == GC_SX_CONST ? b : a;
          if (hi <= 0) return k == GC_SX_MIN ? a : b;
          if (lo >= 0) return k == GC_SX_MIN ? b : a;
        }
      }
      if (gc_sx_cmp(a, b) > 0) {
        const gc_sym_expr *t = a;
        a = b;
        b = t;
      }
      break;
    default: return NULL;
  }
  gc_sym_expr *e = node(g, k, 0, 2);
  if (!e) return NULL;
  e->a[0] = a;
  e->a[1] = b;
  return e;
}

const gc_sym_expr *gc_sx_clone(gc_graph *g, const gc_sym_expr *e) {
  gc_sym_expr *r = node(g, e->kind, e->c, e->n);
  if (!r) return NULL;
  r->sym = e->sym;
  for (int i = 0; i < e->n; i++)
    if (!(r->a[i] = gc_sx_clone(g, e->a[i]))) return NULL;
  return r;
}

/* Grow the four symbol arrays by one. */
int gc_graph_add_sym(gc_graph *g, const char *name, const gc_sym_expr *def) {
  int n = g->n_syms;
  const char **names = gc_arena_alloc(&g->arena, (size_t)(n + 1) * sizeof *names);
  int64_t *vals = gc_arena_alloc(&g->arena, (size_t)(n + 1) * sizeof *vals);
  const gc_sym_expr **defs = gc_arena_alloc(&g->arena, (size_t)(n + 1) * sizeof *defs);
  int64_t *lo = gc_arena_alloc(&g->arena, (size_t)(n + 1) * sizeof *lo);
  int64_t *hi = gc_arena_alloc(&g->arena, (size_t)(n + 1) * sizeof *hi);
  if (!names || !vals || !defs || !lo || !hi) return -1;
  for (int i = 0; i < n; i++) {
    names[i] = g->sym_names[i];
    vals[i] = g->sym_values ? g->sym_values[i] : GC_SYM_UNBOUND;
    defs[i] = g->sym_defs ? g->sym_defs[i] : NULL;
    lo[i] = g->sym_lo ? g->sym_lo[i] : 1;
    hi[i] = g->sym_hi ? g->sym_hi[i] : GC_SYM_MAX;
  }
  names[n] = name;
  vals[n] = GC_SYM_UNBOUND;
  defs[n] = def;
  lo[n] = 1;
  hi[n] = GC_SYM_MAX;
  g->sym_names = names;
  g->sym_values = vals;
  g->sym_defs = defs;
  g->sym_lo = lo;
  g->sym_hi = hi;
  g->n_syms = n + 1;
  return n;
}

int64_t gc_sym_intern(gc_graph *g, const gc_sym_expr *e) {
  if (!e) return -1;
  if (e->kind == GC_SX_CONST) return e->c >= 1 ? e->c : -1;
  if (e->kind == GC_SX_SYM) return GC_DIM_SYM(e->sym);
  for (int i = 0; i < g->n_syms; i++)
    if (g->sym_defs && g->sym_defs[i] && gc_sx_cmp(g->sym_defs[i], e) == 0) return GC_DIM_SYM(i);
  char name[32];
  for (int k = g->n_syms;; k++) {
    snprintf(name, sizeof name, "_s%d", k);
    int used = 0;
    for (int i = 0; i < g->n_syms && !used; i++) used = strcmp(g->sym_names[i], name) == 0;
    if (!used) break;
  }
  const char *nm = gc_arena_strdup(&g->arena, name);
  int i = nm ? gc_graph_add_sym(g, nm, e) : -1;
  return i < 0 ? -1 : GC_DIM_SYM(i);
}

int gc_sx_eval(const gc_graph *g, const gc_sym_expr *e, int64_t *out) {
  int64_t x, y;
  int rc;
  switch (e->kind) {
    case GC_SX_CONST: *out = e->c; return 0;
    case GC_SX_SYM:
      if (e->sym >= g->n_syms || !g->sym_values || g->sym_values[e->sym] < 0) return -1;
      *out = g->sym_values[e->sym];
      return 0;
    case GC_SX_ADD:
    case GC_SX_MUL:
      x = e->c;
      for (int i = 0; i < e->n; i++) {
        if ((rc = gc_sx_eval(g, e->a[i], &y))) return rc;
        if (e->kind == GC_SX_ADD ? __builtin_add_overflow(x, y, &x) : __builtin_mul_overflow(x, y, &x))
          return -2;
      }
      *out = x;
      return 0;
    default: break;
  }
  if ((rc = gc_sx_eval(g, e->a[0], &x)) || (rc = gc_sx_eval(g, e->a[1], &y))) return rc;
  switch (e->kind) {
    case GC_SX_FLOORDIV:
    case GC_SX_CEILDIV:
      if (y <= 0) return -2;
      *out = floordiv(x, y);
      if (e->kind == GC_SX_CEILDIV && *out * y != x) (*out)++;
      return 0;
    case GC_SX_MIN: *out = x < y ? x : y; return 0;
    default: *out = x > y ? x : y; return 0;
  }
}

static void print_atom(gc_sbuf *b, const gc_graph *g, const gc_sym_expr *e) {
  static const char *const fn[] = {[GC_SX_FLOORDIV] = "floordiv", [GC_SX_CEILDIV] = "ceildiv",
                                   [GC_SX_MIN] = "min", [GC_SX_MAX] = "max"};
  if (e->kind == GC_SX_SYM) {
    gc_sbuf_puts(b, e->sym < g->n_syms ? g->sym_names[e->sym] : "?");
    return;
  }
  gc_sbuf_printf(b, "%s(", fn[e->kind]);
  gc_sx_print(b, g, e->a[0]);
  gc_sbuf_puts(b, ", ");
  gc_sx_print(b, g, e->a[1]);
  gc_sbuf_putc(b, ')');
}

/* A term; `lead` is 0 after the first term of a sum (sign printed as " + " / " - "). */
static void print_term(gc_sbuf *b, const gc_graph *g, const gc_sym_expr *e, int lead) {
  int64_t c = e->kind == GC_SX_MUL ? e->c : e->kind == GC_SX_CONST ? e->c : 1;
  int neg = c < 0;
  if (!lead) gc_sbuf_puts(b, neg ? " - " : " + ");
  else if (neg) gc_sbuf_putc(b, '-');
  uint64_t m = neg ? (uint64_t)0 - (uint64_t)c : (uint64_t)c;
  if (e->kind == GC_SX_CONST) {
    gc_sbuf_printf(b, "%llu", (unsigned long long)m);
    return;
  }
  int n = e->kind == GC_SX_MUL ? e->n : 1;
  const gc_sym_expr *const *f = e->kind == GC_SX_MUL ? e->a : &e;
  if (m != 1) gc_sbuf_printf(b, "%llu * ", (unsigned long long)m);
  for (int i = 0; i < n; i++) {
    if (i) gc_sbuf_puts(b, " * ");
    print_atom(b, g, f[i]);
  }
}

void gc_sx_print(gc_sbuf *b, const gc_graph *g, const gc_sym_expr *e) {
  if (e->kind != GC_SX_ADD) {
    print_term(b, g, e, 1);
    return;
  }
  for (int i = 0; i < e->n; i++) print_term(b, g, e->a[i], i == 0);
  if (e->c) print_term(b, g, &(gc_sym_expr){.kind = GC_SX_CONST, .c = e->c}, 0);
}

int gc_graph_eval_syms(gc_graph *g, gc_diags *d) {
  int errs = 0;
  for (int i = 0; i < g->n_syms; i++) {
    if (g->sym_defs && g->sym_defs[i]) continue;
    int64_t v = g->sym_values ? g->sym_values[i] : GC_SYM_UNBOUND;
    int64_t lo = g->sym_lo ? g->sym_lo[i] : 1, hi = g->sym_hi ? g->sym_hi[i] : GC_SYM_MAX;
    if (v >= 0 && (v < lo || v > hi)) {
      gc_error_at(d, GRAPHC_STATUS_VERIFY_ERROR, g->loc,
                  "symbolic dim %s is bound to %lld, outside its range %lld..%lld", g->sym_names[i],
                  (long long)v, (long long)lo, (long long)hi);
      errs++;
    }
  }
  if (errs) return errs;
  for (int i = 0; i < g->n_syms; i++) {
    if (!g->sym_defs || !g->sym_defs[i]) continue;
    int64_t v = 0;
    int rc = gc_sx_eval(g, g->sym_defs[i], &v);
    if (rc == -1) continue; /* an unbound base symbol: reported by the caller */
    if (rc == -2 || v < 0 || v >= GC_DIM_SYM_BASE) {
      gc_sbuf b = {0};
      gc_sx_print(&b, g, g->sym_defs[i]);
      if (rc == -2)
        gc_error_at(d, GRAPHC_STATUS_VERIFY_ERROR, g->loc,
                    "derived dim %s = %s overflows or divides by a non-positive value at these bindings",
                    g->sym_names[i], b.data ? b.data : "?");
      else
        gc_error_at(d, GRAPHC_STATUS_VERIFY_ERROR, g->loc,
                    "derived dim %s = %s is %lld at these bindings (a dim must be >= 0)",
                    g->sym_names[i], b.data ? b.data : "?", (long long)v);
      gc_sbuf_free(&b);
      errs++;
      continue;
    }
    g->sym_values[i] = v;
  }
  return errs;
}
