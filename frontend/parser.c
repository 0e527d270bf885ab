/* parser.c - recursive-descent parser: .graph text -> graph IR (gc_parse).
 *
 * Each parse function carries its grammar rule (docs/language.md has them all).
 * The parser only builds the IR; types of untyped results, arity and attribute
 * schemas are the verifier's business (ir/verify.c).
 *
 * Errors: every error is reported with gc_error_at(.., SYNTAX_ERROR, loc, ..).
 * After a syntax error inside a statement the parser skips to the next ';' (or
 * up to '}') and goes on, so one run reports many errors. Cascades are avoided:
 * a statement with an error defines its results as "poisoned" values, and uses
 * of poisoned values are silent; an undefined value is reported once. Any error
 * makes gc_parse return NULL. After PARSE_MAX_ERRORS errors the parser stops
 * with a note (as clang's default error limit): a garbage file would otherwise
 * report an error every few bytes.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/lexer.h"
#include "frontend/parser.h"

/* ---- value table: names of the current graph -> values ----------------------------- */
typedef enum vstate { V_DEFINED = 1, V_UNDEFINED_USE } vstate;

typedef struct vent {
  const char *name;      /* without '%', points into the source text */
  size_t len;
  vstate state;
  gc_value *v;           /* NULL: poisoned (definition failed, or undefined): uses are silent */
  gc_loc loc;            /* definition (or first undefined use) */
} vent;

typedef struct vtab {
  vent *e;
  size_t cap, n;         /* cap is 0 or a power of two */
} vtab;

/* FNV-1a over the name bytes. */
static size_t hash_name(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return (size_t)h;
}

/* Slot of `name` in the table: its entry, or the empty slot where it would go. */
static vent *vtab_slot(vtab *t, const char *s, size_t n) {
  size_t i = hash_name(s, n) & (t->cap - 1);
  while (t->e[i].name && !(t->e[i].len == n && memcmp(t->e[i].name, s, n) == 0))
    i = (i + 1) & (t->cap - 1);
  return &t->e[i];
}

/* Existing entry for a name, or NULL. */
static vent *vtab_find(vtab *t, const char *s, size_t n) {
  if (!t->cap) return NULL;
  vent *e = vtab_slot(t, s, n);
  return e->name ? e : NULL;
}

/* Entry for a name, inserted (zeroed) when new; NULL when out of memory. */
static vent *vtab_get(vtab *t, const char *s, size_t n) {
  if ((t->n + 1) * 2 > t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 16;
    vent *e = calloc(cap, sizeof *e);
    if (!e) return NULL;
    vtab old = *t;
    t->e = e;
    t->cap = cap;
    for (size_t i = 0; i < old.cap; i++)
      if (old.e[i].name) *vtab_slot(t, old.e[i].name, old.e[i].len) = old.e[i];
    free(old.e);
  }
  vent *e = vtab_slot(t, s, n);
  if (!e->name) {
    e->name = s;
    e->len = n;
    t->n++;
  }
  return e;
}

/* Drop all entries (between graphs and at the end). */
static void vtab_free(vtab *t) {
  free(t->e);
  memset(t, 0, sizeof *t);
}

/* ---- parser state and helpers ---------------------------------------------------- */
typedef struct parser {
  gc_lexer lx;
  gc_token tok;          /* current token */
  gc_token prev;         /* last consumed token */
  gc_diags *d;
  gc_module *m;
  gc_graph *g;           /* graph being parsed */
  vtab vals;             /* values of g */
  int syms_unsure;       /* g's <...> list failed to parse: unknown names are not reported */
  int oom;
  int errors0;           /* d->n_errors when parsing started */
  int stopped;           /* too many errors: at EOF, nothing more is reported */
} parser;

enum { PARSE_MAX_ERRORS = 20 };

/* A statement being parsed; arrays live in the graph arena. */
typedef struct stmt {
  gc_token *res;         /* result name tokens */
  int *res_ok;           /* 0: redefinition (already reported), not to be defined */
  int n_res, cap_res;
  gc_value **opnds;
  int n_opnds, cap_opnds;
  gc_named_attr *attrs;
  int n_attrs, cap_attrs;
  gc_type *types;
  int n_types, cap_types;
  int bad;               /* an error was reported (or a poisoned value used): don't build */
} stmt;

/* Move to the next token; after too many errors, to the end of the text. */
static void advance(parser *p) {
  p->prev = p->tok;
  p->tok = gc_lex_next(&p->lx);
  if (!p->stopped && p->d->n_errors - p->errors0 >= PARSE_MAX_ERRORS) {
    p->stopped = 1;
    gc_note_at(p->d, p->tok.loc, "too many errors (%d); parsing stopped here",
               p->d->n_errors - p->errors0);
    p->lx.p = p->lx.end;
    p->tok.kind = GC_TOK_EOF;
    p->tok.text = p->lx.end;
    p->tok.len = 0;
  }
}

/* The current token has kind k. */
static int at(const parser *p, gc_tok_kind k) { return p->tok.kind == k; }

/* The token is the identifier `s`. */
static int tok_is(const gc_token *t, const char *s) {
  size_t n = strlen(s);
  return t->kind == GC_TOK_IDENT && t->len == n && memcmp(t->text, s, n) == 0;
}

/* The current token is the keyword kw. */
static int at_kw(const parser *p, const char *kw) { return tok_is(&p->tok, kw); }

/* The token starts a declaration: `param` or `state`. */
static int at_decl(const parser *p) { return at_kw(p, "param") || at_kw(p, "state"); }

/* The token is 'graph' at the start of a line: a new graph, used to stop recovery. */
static int at_graph_start(const parser *p) {
  return at_kw(p, "graph") && (p->prev.loc.line == 0 || p->tok.loc.line > p->prev.loc.line);
}

/* Consume the token if it has kind k. */
static int accept(parser *p, gc_tok_kind k) {
  if (!at(p, k)) return 0;
  advance(p);
  return 1;
}

/* Report an error (status SYNTAX_ERROR). */
static void error_at(parser *p, gc_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void error_at(parser *p, gc_loc loc, const char *fmt, ...) {
  if (p->stopped) return;
  char buf[256]; /* most messages fit: no allocation */
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n >= 0 && (size_t)n < sizeof buf) {
    gc_error_at(p->d, GRAPHC_STATUS_SYNTAX_ERROR, loc, "%s", buf);
    return;
  }
  gc_sbuf b = {0};
  va_start(ap, fmt);
  gc_sbuf_vprintf(&b, fmt, ap);
  va_end(ap);
  char *msg = gc_sbuf_take(&b);
  gc_error_at(p->d, GRAPHC_STATUS_SYNTAX_ERROR, loc, "%s", msg ? msg : "(out of memory)");
  free(msg);
}

/* Report running out of memory once and stop parsing (the lexer jumps to the end). */
static void out_of_memory(parser *p) {
  if (!p->oom) gc_error_at(p->d, GRAPHC_STATUS_OUT_OF_MEMORY, p->tok.loc, "out of memory");
  p->oom = 1;
  p->lx.p = p->lx.end;
  p->tok.kind = GC_TOK_EOF;
}

/* Zeroed memory from the current graph's arena (or the module's). */
static void *palloc(parser *p, size_t n) {
  void *q = gc_arena_alloc(p->g ? &p->g->arena : &p->m->arena, n);
  if (!q) out_of_memory(p);
  return q;
}

/* NUL-terminated arena copy of s[0..n). */
static char *pstrndup(parser *p, const char *s, size_t n) {
  char *q = gc_arena_strndup(p->g ? &p->g->arena : &p->m->arena, s, n);
  if (!q) out_of_memory(p);
  return q;
}

/* Grow an arena array to hold one more element; NULL when out of memory. */
static void *grow(parser *p, void *arr, int n, int *cap, size_t elem) {
  if (n < *cap) return arr;
  int nc = *cap ? *cap * 2 : 4;
  void *q = palloc(p, (size_t)nc * elem);
  if (!q) return NULL;
  if (n) memcpy(q, arr, (size_t)n * elem);
  *cap = nc;
  return q;
}

/* Append to an arena array (arr, n, cap); on out of memory the array is dropped. */
#define PUSH(p, arr, n, cap, val)                              \
  do {                                                         \
    void *q_ = grow((p), (arr), (n), &(cap), sizeof *(arr));   \
    if (!q_) {                                                 \
      (n) = (cap) = 0;                                         \
      (arr) = NULL;                                            \
      break;                                                   \
    }                                                          \
    (arr) = q_;                                                \
    (arr)[(n)++] = (val);                                      \
  } while (0)

/* "'text'" or "end of file" for messages; long tokens are cut. */
static const char *describe(const gc_token *t, char *buf, size_t n) {
  if (t->kind == GC_TOK_EOF) return "end of file";
  if (t->len > 40)
    snprintf(buf, n, "'%.37s...'", t->text);
  else
    snprintf(buf, n, "'%.*s'", (int)t->len, t->text);
  return buf;
}

/* Where "expected X" is reported: at the found token; after the previous token when
 * the found one is the end of file or (for a missing ';') on a later line. */
static gc_loc expect_loc(const parser *p, int semi) {
  if (p->prev.loc.line > 0 &&
      (at(p, GC_TOK_EOF) || (semi && p->tok.loc.line > p->prev.loc.line)))
    return (gc_loc){p->prev.loc.line, p->prev.loc.col + (int)p->prev.len};
  return p->tok.loc;
}

/* Report "expected WHAT, found X" (silent when an unterminated string ate the line). */
static void error_expected_at(parser *p, const char *what, int semi) {
  if (p->prev.bad == 2 || p->tok.bad) return; /* the lexer reported it already */
  char buf[64];
  error_at(p, expect_loc(p, semi), "expected %s, found %s", what,
           describe(&p->tok, buf, sizeof buf));
}

/* "expected WHAT, found X" at the found token. */
static void error_expected(parser *p, const char *what) { error_expected_at(p, what, 0); }

/* Consume a token of kind k or report "expected K CONTEXT, found X". */
static int expect(parser *p, gc_tok_kind k, const char *context) {
  if (accept(p, k)) return 1;
  char what[128];
  snprintf(what, sizeof what, "%s %s", gc_lex_kind_name(k), context);
  error_expected_at(p, what, k == GC_TOK_SEMI);
  return 0;
}

/* The ';' ending a statement. When it is missing but the next token starts a
 * statement (or closes the graph), the error is reported and the ';' assumed. */
static int expect_semi(parser *p, const char *context) {
  if (expect(p, GC_TOK_SEMI, context)) return 1;
  return at(p, GC_TOK_VALUE) || at_decl(p) || at_kw(p, "return") ||
         at(p, GC_TOK_RBRACE) || at(p, GC_TOK_EOF) || at_graph_start(p);
}

/* ---- values ------------------------------------------------------------------------ */
/* Name of a VALUE token without the '%'. */
static const char *vname(const gc_token *t, size_t *n) {
  *n = t->len - 1;
  return t->text + 1;
}

/* Record a definition: v NULL defines the name as poisoned. */
static void define(parser *p, const gc_token *t, gc_value *v) {
  size_t n;
  const char *s = vname(t, &n);
  vent *e = vtab_get(&p->vals, s, n);
  if (!e) {
    out_of_memory(p);
    return;
  }
  e->state = V_DEFINED;
  e->v = v;
  e->loc = t->loc;
}

/* Check that a VALUE token names a new value; reports a redefinition (with a note at
 * the first definition). `earlier` are result names already seen in this statement. */
static int check_new(parser *p, const gc_token *t, const gc_token *earlier, int n_earlier) {
  if (t->bad) return 0;
  size_t n;
  const char *s = vname(t, &n);
  gc_loc first = {0, 0};
  vent *e = vtab_find(&p->vals, s, n);
  if (e && e->state == V_DEFINED) first = e->loc;
  for (int i = 0; i < n_earlier && !first.line; i++)
    if (earlier[i].len == t->len && memcmp(earlier[i].text, t->text, t->len) == 0)
      first = earlier[i].loc;
  if (!first.line) return 1;
  error_at(p, t->loc, "redefinition of %%%.*s", (int)n, s);
  if (!p->stopped) gc_note_at(p->d, first, "previous definition of %%%.*s is here", (int)n, s);
  return 0;
}

/* Resolve a use of a value. NULL when undefined (reported once, then poisoned) or
 * poisoned; *bad is set either way. */
static gc_value *use_value(parser *p, const gc_token *t, int *bad) {
  if (t->bad) {
    *bad = 1;
    return NULL;
  }
  size_t n;
  const char *s = vname(t, &n);
  vent *e = vtab_find(&p->vals, s, n);
  if (!e) {
    error_at(p, t->loc, "use of undefined value %%%.*s", (int)n, s);
    e = vtab_get(&p->vals, s, n);
    if (!e) {
      out_of_memory(p);
    } else {
      e->state = V_UNDEFINED_USE;
      e->loc = t->loc;
    }
  }
  if (!e || !e->v) *bad = 1;
  return e ? e->v : NULL;
}

/* Skip the rest of a broken statement: past the next ';', or up to '}' / EOF / a
 * new graph / a line that starts like a statement (%x, param, return). Names before
 * the '=' (when not seen yet) become poisoned values. */
static void sync_stmt(parser *p, int seen_eq) {
  while (!at(p, GC_TOK_EOF) && !at(p, GC_TOK_RBRACE) && !at_graph_start(p)) {
    if (at(p, GC_TOK_SEMI)) {
      advance(p);
      return;
    }
    if (p->tok.loc.line > p->prev.loc.line &&
        (at(p, GC_TOK_VALUE) || at_decl(p) || at_kw(p, "return")))
      return;
    if (at(p, GC_TOK_EQ)) seen_eq = 1;
    if (at(p, GC_TOK_VALUE) && !seen_eq && !p->tok.bad) {
      size_t n;
      const char *s = vname(&p->tok, &n);
      vent *e = vtab_find(&p->vals, s, n);
      if (!e) define(p, &p->tok, NULL);
    }
    advance(p);
  }
}

/* ---- types ---------------------------------------------------------------------------- */
/* Index of a symbolic dim of the current graph, or -1. */
static int find_sym(const parser *p, const gc_token *t) {
  for (int i = 0; p->g && i < p->g->n_syms; i++)
    if (strlen(p->g->sym_names[i]) == t->len && memcmp(p->g->sym_names[i], t->text, t->len) == 0)
      return i;
  return -1;
}

/* dim = INT | IDENT
 * Returns 0 on a syntax error; semantic errors set *bad. */
static int parse_dim(parser *p, int64_t *out, int *bad) {
  gc_token t = p->tok;
  if (at(p, GC_TOK_INT)) {
    advance(p);
    *out = t.i;  /* 0 is an empty dim */
    if (t.bad) *bad = 1;
    return 1;
  }
  if (at(p, GC_TOK_MINUS)) {
    advance(p);
    if (at(p, GC_TOK_INT)) {
      error_at(p, t.loc, "dimension must be >= 0, got -%.*s", (int)p->tok.len, p->tok.text);
      advance(p);
      *bad = 1;
      return 1;
    }
    error_expected(p, "a dimension (integer or symbolic dim)");
    return 0;
  }
  if (at(p, GC_TOK_IDENT)) {
    advance(p);
    int k = find_sym(p, &t);
    if (k < 0 && p->syms_unsure) {
      *bad = 1;
      *out = 1;
    } else if (k < 0) {
      error_at(p, t.loc, "unknown symbolic dim '%.*s' (declare it in <...> after @%s)", (int)t.len,
               t.text, p->g ? p->g->name : "graph");
      *bad = 1;
      *out = 1;
    } else {
      *out = GC_DIM_SYM(k);
    }
    return 1;
  }
  error_expected(p, "a dimension (integer or symbolic dim)");
  return 0;
}

/* type = DTYPE "[" [ dim { "," dim } ] "]"
 * Returns 0 on a syntax error; semantic errors (unknown dtype, bad dim) set *bad. */
static int parse_type(parser *p, gc_type *t, int *bad) {
  memset(t, 0, sizeof *t);
  if (!at(p, GC_TOK_IDENT)) {
    error_expected(p, "a type like f32[2, 3]");
    return 0;
  }
  int dt = gc_dtype_from_name(p->tok.text, p->tok.len);
  if (dt < 0) {
    error_at(p, p->tok.loc,
             "unknown dtype '%.*s' (expected f64, f32, f16, bf16, i64, i32, i8, u8 or bool)",
             (int)p->tok.len, p->tok.text);
    *bad = 1;
    dt = GRAPHC_DTYPE_F32;
  }
  t->dtype = (gc_dtype)dt;
  advance(p);
  if (!expect(p, GC_TOK_LBRACKET, "after the dtype (scalars are written f32[])")) return 0;
  if (accept(p, GC_TOK_RBRACKET)) return 1;
  gc_loc first = p->tok.loc;
  int rank = 0;
  for (;;) {
    int64_t dim = 1;
    if (!parse_dim(p, &dim, bad)) return 0;
    if (rank < GC_MAX_RANK) t->dims[rank] = dim;
    rank++;
    if (!accept(p, GC_TOK_COMMA)) break;
  }
  if (rank > GC_MAX_RANK) {
    error_at(p, first, "rank %d exceeds the maximum rank %d", rank, GC_MAX_RANK);
    *bad = 1;
    rank = GC_MAX_RANK;
  }
  t->rank = rank;
  return expect(p, GC_TOK_RBRACKET, "to close the dimension list");
}

/* ---- attributes --------------------------------------------------------------------- */
/* attr = INT | FLOAT | STRING | "true" | "false" | DTYPE | IDENT | "[" [ attr { "," attr } ] "]"
 *        (numbers and inf may have a leading "-")
 * Returns 0 on a syntax error; semantic errors set *bad. */
static int parse_attr(parser *p, gc_attr *a, int *bad) {
  memset(a, 0, sizeof *a);
  gc_token t = p->tok;
  a->loc = t.loc;
  if (t.bad) *bad = 1;
  switch (t.kind) {
    case GC_TOK_INT:
      advance(p);
      a->kind = GC_ATTR_INT;
      a->u.i = t.i;
      return 1;
    case GC_TOK_FLOAT:
      advance(p);
      a->kind = GC_ATTR_FLOAT;
      a->u.f = t.f;
      return 1;
    case GC_TOK_MINUS:
      advance(p);
      if (!at(p, GC_TOK_INT) && !at(p, GC_TOK_FLOAT) && !at_kw(p, "inf")) {
        error_expected(p, "a number after '-'");
        return 0;
      }
      if (!parse_attr(p, a, bad)) return 0;
      a->loc = t.loc;
      if (a->kind == GC_ATTR_INT)
        a->u.i = -a->u.i;
      else
        a->u.f = -a->u.f;
      return 1;
    case GC_TOK_STRING: {
      advance(p);
      char *s = palloc(p, t.len + 1);
      if (!s) return 0;
      gc_lex_string(&t, s);
      a->kind = GC_ATTR_STR;
      a->u.s = s;
      return 1;
    }
    case GC_TOK_IDENT: {
      advance(p);
      int dt = gc_dtype_from_name(t.text, t.len), k = find_sym(p, &t);
      if (tok_is(&t, "true") || tok_is(&t, "false")) {
        a->kind = GC_ATTR_BOOL;
        a->u.b = tok_is(&t, "true");
      } else if (dt >= 0) {
        a->kind = GC_ATTR_DTYPE;
        a->u.dt = (gc_dtype)dt;
      } else if (tok_is(&t, "inf") || tok_is(&t, "nan")) {
        a->kind = GC_ATTR_FLOAT;
        a->u.f = tok_is(&t, "inf") ? __builtin_inf() : __builtin_nan("");
      } else if (k >= 0) {
        a->kind = GC_ATTR_INT;
        a->u.i = GC_DIM_SYM(k);
      } else if (p->syms_unsure) {
        *bad = 1;
        a->kind = GC_ATTR_INT;
        a->u.i = 1;
      } else {
        error_at(p, t.loc,
                 "unknown name '%.*s' in attribute value (expected a symbolic dim of @%s, a dtype, "
                 "true, false, inf or nan)",
                 (int)t.len, t.text, p->g ? p->g->name : "graph");
        *bad = 1;
        a->kind = GC_ATTR_INT;
        a->u.i = 1;
      }
      return 1;
    }
    case GC_TOK_LBRACKET: {
      advance(p);
      a->kind = GC_ATTR_LIST;
      int cap = 0;
      if (accept(p, GC_TOK_RBRACKET)) return 1;
      for (;;) {
        gc_attr item;
        if (!parse_attr(p, &item, bad)) return 0;
        PUSH(p, a->u.list.items, a->u.list.n, cap, item);
        if (!accept(p, GC_TOK_COMMA)) break;
      }
      return expect(p, GC_TOK_RBRACKET, "to close the list");
    }
    default:
      error_expected(p, "an attribute value");
      return 0;
  }
}

/* item = VALUE | IDENT "=" attr
 * Returns 0 on a syntax error. */
static int parse_item(parser *p, stmt *s) {
  if (at(p, GC_TOK_VALUE)) {
    gc_token t = p->tok;
    advance(p);
    gc_value *v = use_value(p, &t, &s->bad);
    PUSH(p, s->opnds, s->n_opnds, s->cap_opnds, v);
    return 1;
  }
  if (!at(p, GC_TOK_IDENT)) {
    error_expected(p, "an operand (%x) or an attribute (name=value)");
    return 0;
  }
  gc_token name = p->tok;
  advance(p);
  char ctx[96];
  snprintf(ctx, sizeof ctx, "after attribute name '%.*s'", (int)(name.len > 40 ? 40 : name.len),
           name.text);
  if (!expect(p, GC_TOK_EQ, ctx)) return 0;
  gc_named_attr na = {0};
  if (!parse_attr(p, &na.val, &s->bad)) return 0;
  na.val.loc = name.loc;
  na.name = pstrndup(p, name.text, name.len);
  if (!na.name) return 0;
  for (int i = 0; i < s->n_attrs; i++)
    if (strcmp(s->attrs[i].name, na.name) == 0) {
      error_at(p, name.loc, "duplicate attribute '%s'", na.name);
      s->bad = 1;
      return 1;
    }
  PUSH(p, s->attrs, s->n_attrs, s->cap_attrs, na);
  return 1;
}

/* ---- statements ---------------------------------------------------------------------- */
/* Define the results of a statement: the op's values, or poisoned ones. */
static void define_results(parser *p, stmt *s, gc_op *op) {
  if (p->oom) return; /* the arrays may be gone; nothing is defined any more */
  for (int i = 0; i < s->n_res; i++)
    if (s->res_ok[i]) define(p, &s->res[i], op ? op->results[i] : NULL);
}

/* Build the op of a statement that parsed without errors. */
static gc_op *build_op(parser *p, stmt *s, gc_opcode opc, gc_loc loc) {
  const char **names = palloc(p, (size_t)(s->n_res ? s->n_res : 1) * sizeof *names);
  if (!names) return NULL;
  for (int i = 0; i < s->n_res; i++) {
    size_t n;
    const char *nm = vname(&s->res[i], &n);
    if (!(names[i] = pstrndup(p, nm, n))) return NULL;
  }
  gc_op *op = gc_op_new(p->g, opc, s->n_opnds, s->opnds, s->n_res, names, loc);
  if (!op) {
    out_of_memory(p);
    return NULL;
  }
  for (int i = 0; i < s->n_res; i++) {
    op->results[i]->loc = s->res[i].loc;
    if (s->n_types) op->results[i]->type = s->types[i];
  }
  op->typed = s->n_types > 0;
  gc_op_set_attrs(p->g, op, s->n_attrs, s->attrs);
  if (s->n_attrs && !op->attrs) out_of_memory(p);
  return op;
}

/* op = VALUE { "," VALUE } "=" NAME "(" [ item { "," item } ] ")" [ ":" type { "," type } ] ";" */
static void parse_op(parser *p) {
  stmt s = {0};
  int cap_ok = 0, n_ok = 0, seen_eq = 0;
  for (;;) {
    if (!at(p, GC_TOK_VALUE)) {
      error_expected(p, "a result name (%x)");
      goto fail;
    }
    gc_token t = p->tok;
    int ok = check_new(p, &t, s.res, s.n_res);
    if (t.bad) s.bad = 1;
    PUSH(p, s.res, s.n_res, s.cap_res, t);
    PUSH(p, s.res_ok, n_ok, cap_ok, ok);
    advance(p);
    if (!accept(p, GC_TOK_COMMA)) break;
  }
  if (!expect(p, GC_TOK_EQ, "after the result names")) goto fail;
  seen_eq = 1;
  gc_token name = p->tok;
  int opc = -1;
  if (at(p, GC_TOK_GNAME)) {
    error_at(p, name.loc, "calls to graphs are not supported yet");
    s.bad = 1;
  } else if (at(p, GC_TOK_IDENT)) {
    opc = gc_opcode_from_name(name.text, name.len);
    if (opc == GC_OP_PARAM || opc == GC_OP_STATE) {
      error_at(p, name.loc, "unknown op '%s' (declare %s with a %s statement)", gc_op_infos[opc].name,
               opc == GC_OP_PARAM ? "parameters" : "states", gc_op_infos[opc].name);
      s.bad = 1;
    } else if (opc < 0) {
      error_at(p, name.loc, "unknown op '%.*s'", (int)(name.len > 40 ? 40 : name.len), name.text);
      s.bad = 1;
    }
  } else {
    error_expected(p, "an op name after '='");
    goto fail;
  }
  advance(p);
  if (!expect(p, GC_TOK_LPAREN, "after the op name")) goto fail;
  if (!at(p, GC_TOK_RPAREN)) {
    for (;;) {
      if (!parse_item(p, &s)) goto fail;
      if (!accept(p, GC_TOK_COMMA)) break;
    }
  }
  if (!expect(p, GC_TOK_RPAREN, "to close the operand list")) goto fail;
  if (at(p, GC_TOK_COLON)) {
    advance(p);
    gc_loc first = p->tok.loc;
    for (;;) {
      gc_type ty;
      if (!parse_type(p, &ty, &s.bad)) goto fail;
      PUSH(p, s.types, s.n_types, s.cap_types, ty);
      if (!accept(p, GC_TOK_COMMA)) break;
    }
    if (s.n_types != s.n_res) {
      error_at(p, first, "%d result type%s given for %d result%s", s.n_types,
               s.n_types == 1 ? "" : "s", s.n_res, s.n_res == 1 ? "" : "s");
      s.bad = 1;
    }
  }
  if (!expect_semi(p, "after the statement")) goto fail;
  define_results(p, &s, s.bad || p->oom ? NULL : build_op(p, &s, (gc_opcode)opc, s.res[0].loc));
  return;
fail:
  sync_stmt(p, seen_eq);
  define_results(p, &s, NULL);
}

/* The optional `"from" DTYPE` of a param: pushed as its `from` attribute (the verifier
 * checks the dtype). Returns 0 on a syntax error. */
static int parse_param_from(parser *p, stmt *s) {
  if (!at_kw(p, "from")) return 1;
  advance(p);
  gc_token t = p->tok;
  if (!at(p, GC_TOK_IDENT)) {
    error_expected(p, "a dtype after 'from' (the tensor's dtype in the weights file)");
    return 0;
  }
  advance(p);
  int dt = gc_dtype_from_name(t.text, t.len);
  if (dt < 0) {
    error_at(p, t.loc, "unknown dtype '%.*s' after 'from' (expected f64, f32, f16, bf16 or an fp8 dtype)",
             (int)(t.len > 40 ? 40 : t.len), t.text);
    s->bad = 1;
    return 1;
  }
  gc_named_attr na = {.name = "from", .val = {.kind = GC_ATTR_DTYPE, .loc = t.loc}};
  na.val.u.dt = (gc_dtype)dt;
  PUSH(p, s->attrs, s->n_attrs, s->cap_attrs, na);
  return 1;
}

/* param = "param" VALUE ":" type "=" STRING [ "from" DTYPE ] ";"  (the tensor's name in the weights)
 * state = "state" VALUE ":" type "=" STRING ";"                   (the state's name) */
static void parse_decl(parser *p, gc_opcode opc) {
  const char *kwn = gc_op_infos[opc].name;
  stmt s = {0};
  int cap_ok = 0, n_ok = 0;
  gc_loc kw = p->tok.loc;
  advance(p);
  if (!at(p, GC_TOK_VALUE)) {
    char what[64];
    snprintf(what, sizeof what, "a value name (%%x) after '%s'", kwn);
    error_expected(p, what);
    sync_stmt(p, 0);
    return;
  }
  gc_token t = p->tok;
  int ok = check_new(p, &t, NULL, 0);
  if (t.bad) s.bad = 1;
  PUSH(p, s.res, s.n_res, s.cap_res, t);
  PUSH(p, s.res_ok, n_ok, cap_ok, ok);
  advance(p);
  gc_type ty;
  gc_token str;
  const int param = opc == GC_OP_PARAM;
  if (!expect(p, GC_TOK_COLON, param ? "after the param name" : "after the state name")) goto fail;
  if (!parse_type(p, &ty, &s.bad)) goto fail;
  PUSH(p, s.types, s.n_types, s.cap_types, ty);
  if (!expect(p, GC_TOK_EQ, param ? "after the param type" : "after the state type")) goto fail;
  str = p->tok;
  if (!expect(p, GC_TOK_STRING, param ? "(the tensor name in the weights file)" : "(the state's name)"))
    goto fail;
  if (str.bad) s.bad = 1;
  gc_named_attr na = {.name = "name", .val = {.kind = GC_ATTR_STR, .loc = str.loc}};
  char *sv = palloc(p, str.len + 1);
  if (sv) gc_lex_string(&str, sv);
  na.val.u.s = sv;
  PUSH(p, s.attrs, s.n_attrs, s.cap_attrs, na);
  if (param && !parse_param_from(p, &s)) goto fail;
  if (!expect_semi(p, param ? "after the param statement" : "after the state statement")) goto fail;
  define_results(p, &s, s.bad || p->oom ? NULL : build_op(p, &s, opc, kw));
  return;
fail:
  sync_stmt(p, 1);
  define_results(p, &s, NULL);
}

/* ret = "return" VALUE { "," VALUE } ";" */
static void parse_return(parser *p) {
  gc_graph *g = p->g;
  g->ret_loc = p->tok.loc;
  advance(p);
  gc_value **outs = NULL;
  int n = 0, cap = 0, bad = 0;
  for (;;) {
    if (!at(p, GC_TOK_VALUE)) {
      error_expected(p, "a value name (%x) to return");
      sync_stmt(p, 1);
      return;
    }
    gc_token t = p->tok;
    advance(p);
    gc_value *v = use_value(p, &t, &bad);
    PUSH(p, outs, n, cap, v);
    if (!accept(p, GC_TOK_COMMA)) break;
  }
  if (!expect_semi(p, "after the return statement")) {
    sync_stmt(p, 1);
    return;
  }
  g->outputs = outs;
  g->n_outputs = n;
}

/* stmt = param | op | ret
 * Parses statements up to the closing '}' (not consumed). */
static void parse_body(parser *p) {
  int seen_return = 0, after_reported = 0;
  while (!at(p, GC_TOK_RBRACE) && !at(p, GC_TOK_EOF) && !at_graph_start(p)) {
    if (seen_return && !after_reported) {
      error_at(p, p->tok.loc, "statement after return (return must be the last statement of @%s)",
               p->g->name);
      after_reported = 1;
    }
    if (at_kw(p, "param")) {
      parse_decl(p, GC_OP_PARAM);
    } else if (at_kw(p, "state")) {
      parse_decl(p, GC_OP_STATE);
    } else if (at_kw(p, "return")) {
      parse_return(p);
      seen_return = 1;
    } else if (at(p, GC_TOK_VALUE)) {
      parse_op(p);
    } else {
      error_expected(p, "a statement (an op, param, state or return)");
      sync_stmt(p, 1);
    }
  }
  if (at(p, GC_TOK_RBRACE)) {
    if (!seen_return)
      error_at(p, p->tok.loc, "missing return statement at the end of graph @%s", p->g->name);
    advance(p);
  } else {
    char what[128];
    snprintf(what, sizeof what, "'}' to close graph @%.60s", p->g->name);
    error_expected(p, what);
  }
}

/* ---- graphs --------------------------------------------------------------------------- */
/* Symbol names that would be ambiguous inside attributes. */
static int reserved_sym(const gc_token *t) {
  return gc_dtype_from_name(t->text, t->len) >= 0 || tok_is(t, "true") || tok_is(t, "false") ||
         tok_is(t, "inf") || tok_is(t, "nan");
}

static const gc_sym_expr *parse_sexpr(parser *p);

/* sfactor = INT | IDENT | "(" sexpr ")" | ("floordiv"|"ceildiv"|"min"|"max") "(" sexpr "," sexpr ")"
 * NULL after a reported error. */
static const gc_sym_expr *parse_sfactor(parser *p) {
  gc_graph *g = p->g;
  gc_token t = p->tok;
  if (accept(p, GC_TOK_INT)) return gc_sx_const(g, t.i);
  if (accept(p, GC_TOK_LPAREN)) {
    const gc_sym_expr *e = parse_sexpr(p);
    return e && expect(p, GC_TOK_RPAREN, "to close the expression") ? e : NULL;
  }
  if (!at(p, GC_TOK_IDENT)) {
    error_expected(p, "a symbol, an integer or '('");
    return NULL;
  }
  advance(p);
  static const struct { const char *name; gc_sx_kind k; } fns[] = {
      {"floordiv", GC_SX_FLOORDIV}, {"ceildiv", GC_SX_CEILDIV}, {"min", GC_SX_MIN}, {"max", GC_SX_MAX}};
  if (at(p, GC_TOK_LPAREN)) {
    for (size_t i = 0; i < sizeof fns / sizeof *fns; i++)
      if (tok_is(&t, fns[i].name)) {
        advance(p);
        const gc_sym_expr *a = parse_sexpr(p);
        if (!a || !expect(p, GC_TOK_COMMA, "between the two operands")) return NULL;
        const gc_sym_expr *b = parse_sexpr(p);
        if (!b || !expect(p, GC_TOK_RPAREN, "to close the call")) return NULL;
        if (fns[i].k <= GC_SX_CEILDIV && b->kind == GC_SX_CONST && b->c <= 0) {
          error_at(p, t.loc, "%s by %lld: the divisor must be positive", fns[i].name, (long long)b->c);
          return NULL;
        }
        const gc_sym_expr *e = gc_sx_op(g, fns[i].k, a, b);
        if (!e) error_at(p, t.loc, "the expression overflows");
        return e;
      }
    error_at(p, t.loc, "unknown function '%.*s' (floordiv, ceildiv, min, max)", (int)t.len, t.text);
    return NULL;
  }
  int k = find_sym(p, &t);
  if (k < 0) {
    error_at(p, t.loc, "unknown symbolic dim '%.*s' (a symbol must be declared before it is used)",
             (int)t.len, t.text);
    return NULL;
  }
  return gc_sx_dim(g, GC_DIM_SYM(k));
}

/* sterm = sfactor { "*" sfactor } */
static const gc_sym_expr *parse_sterm(parser *p) {
  const gc_sym_expr *e = parse_sfactor(p);
  while (e && at(p, GC_TOK_STAR)) {
    gc_loc loc = p->tok.loc;
    advance(p);
    const gc_sym_expr *f = parse_sfactor(p);
    if (!f) return NULL;
    if (!(e = gc_sx_mul(p->g, e, f))) error_at(p, loc, "the expression overflows");
  }
  return e;
}

/* sexpr = ["-"] sterm { ("+" | "-") sterm } */
static const gc_sym_expr *parse_sexpr(parser *p) {
  int neg = accept(p, GC_TOK_MINUS);
  const gc_sym_expr *e = parse_sterm(p);
  if (e && neg) e = gc_sx_mul(p->g, gc_sx_const(p->g, -1), e);
  while (e && (at(p, GC_TOK_PLUS) || at(p, GC_TOK_MINUS))) {
    gc_loc loc = p->tok.loc;
    int minus = at(p, GC_TOK_MINUS);
    advance(p);
    const gc_sym_expr *f = parse_sterm(p);
    if (!f) return NULL;
    if (minus) f = gc_sx_mul(p->g, gc_sx_const(p->g, -1), f);
    if (!(e = gc_sx_add(p->g, e, f))) error_at(p, loc, "the expression overflows");
  }
  return e;
}

/* The definition of derived symbol t: a new expression that is not a constant or a
 * single symbol. NULL after a reported error. */
static const gc_sym_expr *parse_sym_def(parser *p, const gc_token *t) {
  gc_loc at_loc = p->tok.loc;
  const gc_sym_expr *e = parse_sexpr(p);
  if (!e) return NULL;
  gc_graph *g = p->g;
  gc_sbuf b = {0};
  gc_sx_print(&b, g, e);
  const char *txt = b.data ? b.data : "?";
  if (e->kind == GC_SX_CONST || e->kind == GC_SX_SYM) {
    error_at(p, at_loc, "derived dim '%.*s' = %s is %s, not an expression", (int)t->len, t->text, txt,
             e->kind == GC_SX_CONST ? "a constant" : "a single symbol");
    e = NULL;
  }
  for (int i = 0; e && i < g->n_syms; i++)
    if (g->sym_defs && g->sym_defs[i] && gc_sx_cmp(g->sym_defs[i], e) == 0) {
      error_at(p, at_loc, "derived dim '%.*s' = %s is the same as '%s'; use that one", (int)t->len,
               t->text, txt, g->sym_names[i]);
      e = NULL;
    }
  gc_sbuf_free(&b);
  return e;
}

/* ":" INT ".." INT  (range of base symbol i; i < 0: parsed and dropped) */
static int parse_sym_range(parser *p, int i) {
  gc_token lo = p->tok;
  if (!expect(p, GC_TOK_INT, "for the lowest value of the symbol")) return 0;
  if (!expect(p, GC_TOK_DOTDOT, "between the bounds of the range")) return 0;
  gc_token hi = p->tok;
  if (!expect(p, GC_TOK_INT, "for the highest value of the symbol")) return 0;
  if (lo.i < 0 || hi.i < lo.i || hi.i > GC_SYM_MAX)
    error_at(p, lo.loc, "bad range %lld..%lld: need 0 <= lo <= hi <= 2^40", (long long)lo.i,
             (long long)hi.i);
  else if (i >= 0) {
    p->g->sym_lo[i] = lo.i;
    p->g->sym_hi[i] = hi.i;
  }
  return 1;
}

/* syms = "<" sym { "," sym } ">"  (symbolic dims of a graph)
 * sym  = IDENT [ ":" INT ".." INT ] | IDENT "=" sexpr */
static int parse_syms(parser *p) {
  gc_graph *g = p->g;
  advance(p);
  for (;;) {
    if (!at(p, GC_TOK_IDENT)) {
      error_expected(p, "a symbolic dim name");
      return 0;
    }
    gc_token t = p->tok;
    advance(p);
    const gc_sym_expr *def = NULL;
    if (accept(p, GC_TOK_EQ) && !(def = parse_sym_def(p, &t)) && (p->oom || !at(p, GC_TOK_COMMA)))
      return 0;
    int bad = 0;
    if (find_sym(p, &t) >= 0) {
      error_at(p, t.loc, "duplicate symbolic dim '%.*s'", (int)t.len, t.text);
      bad = 1;
    } else if (reserved_sym(&t)) {
      error_at(p, t.loc, "'%.*s' cannot name a symbolic dim (it is a dtype or a literal)",
               (int)t.len, t.text);
      bad = 1;
    }
    int i = -1;
    if (!bad) {
      const char *s = pstrndup(p, t.text, t.len);
      if (!s) return 0;
      if ((i = gc_graph_add_sym(g, s, def)) < 0) {
        out_of_memory(p);
        return 0;
      }
    }
    if (!def && accept(p, GC_TOK_COLON)) {
      if (!parse_sym_range(p, i)) return 0;
    }
    if (!accept(p, GC_TOK_COMMA)) break;
  }
  return expect(p, GC_TOK_GT, "to close the symbolic dims");
}

/* arg = VALUE ":" type */
static int parse_arg(parser *p) {
  if (!at(p, GC_TOK_VALUE)) {
    error_expected(p, "an argument (%x: type)");
    return 0;
  }
  gc_token t = p->tok;
  int ok = check_new(p, &t, NULL, 0), bad = t.bad;
  advance(p);
  gc_type ty;
  if (!expect(p, GC_TOK_COLON, "after the argument name") || !parse_type(p, &ty, &bad)) {
    if (ok) define(p, &t, NULL);
    return 0;
  }
  if (!ok) return 1;
  gc_value *v = NULL;
  if (!bad) {
    size_t n;
    const char *s = vname(&t, &n);
    char *nm = pstrndup(p, s, n);
    if (nm && !(v = gc_graph_add_arg(p->g, nm, &ty, t.loc))) out_of_memory(p);
  }
  define(p, &t, v);
  return 1;
}

/* Skip a broken graph header up to its '{' (returns 1) or the next graph / EOF (0);
 * argument names on the way are poisoned. */
static int sync_header(parser *p) {
  while (!at(p, GC_TOK_EOF) && !at_graph_start(p)) {
    if (accept(p, GC_TOK_LBRACE)) return 1;
    if (at(p, GC_TOK_VALUE) && !p->tok.bad) {
      size_t n;
      const char *s = vname(&p->tok, &n);
      if (!vtab_find(&p->vals, s, n)) define(p, &p->tok, NULL);
    }
    advance(p);
  }
  return 0;
}

/* graph = "graph" GNAME [ "<" IDENT { "," IDENT } ">" ] "(" [ arg { "," arg } ] ")"
 *         "->" "(" type { "," type } ")" "{" { stmt } "}" */
static void parse_graph(parser *p) {
  gc_loc kw = p->tok.loc;
  advance(p);
  gc_token name = p->tok;
  char *nm = NULL;
  if (at(p, GC_TOK_GNAME)) {
    advance(p);
    nm = gc_arena_strndup(&p->m->arena, name.text + 1, name.len - 1);
  } else {
    error_expected(p, "a graph name (@name) after 'graph'");
    name.bad = 1;
    if (at(p, GC_TOK_IDENT)) advance(p); /* `graph main(...)`: go on with the header */
    nm = gc_arena_strdup(&p->m->arena, "?");
  }
  if (!nm) {
    out_of_memory(p);
    return;
  }
  gc_graph *prev = name.bad ? NULL : gc_module_find_graph(p->m, nm);
  if (prev) {
    error_at(p, name.loc, "redefinition of graph @%s", nm);
    if (!p->stopped) gc_note_at(p->d, prev->loc, "previous definition of @%s is here", nm);
  }
  p->g = gc_graph_new(p->m, nm, name.bad ? kw : name.loc);
  if (!p->g) {
    out_of_memory(p);
    return;
  }
  vtab_free(&p->vals);
  p->syms_unsure = 1;
  gc_graph *g = p->g;
  if (name.kind != GC_TOK_GNAME && !at(p, GC_TOK_LPAREN) && !at(p, GC_TOK_LT)) goto header_fail;

  if (at(p, GC_TOK_LT) && !parse_syms(p)) goto header_fail;
  p->syms_unsure = 0;
  if (!expect(p, GC_TOK_LPAREN, "to start the argument list")) goto header_fail;
  if (!at(p, GC_TOK_RPAREN)) {
    for (;;) {
      if (!parse_arg(p)) goto header_fail;
      if (!accept(p, GC_TOK_COMMA)) break;
    }
  }
  if (!expect(p, GC_TOK_RPAREN, "to close the argument list")) goto header_fail;
  if (!expect(p, GC_TOK_ARROW, "before the result types")) goto header_fail;
  if (!expect(p, GC_TOK_LPAREN, "to start the result types")) goto header_fail;
  gc_type *types = NULL;
  int n = 0, cap = 0, bad = 0;
  for (;;) {
    gc_type ty;
    if (!parse_type(p, &ty, &bad)) goto header_fail;
    PUSH(p, types, n, cap, ty);
    if (!accept(p, GC_TOK_COMMA)) break;
  }
  g->result_types = types;
  g->n_result_types = n;
  if (!expect(p, GC_TOK_RPAREN, "to close the result types")) goto header_fail;
  if (!expect(p, GC_TOK_LBRACE, "to start the graph body")) goto header_fail;
  parse_body(p);
  return;
header_fail:
  if (sync_header(p)) parse_body(p);
}

/* Skip to the next top-level statement: past ';' or up to 'weights' / 'graph' / EOF. */
static void sync_top(parser *p) {
  while (!at(p, GC_TOK_EOF) && !at_kw(p, "weights") && !at_kw(p, "graph")) {
    int semi = at(p, GC_TOK_SEMI);
    advance(p);
    if (semi) return;
  }
}

/* weights = "weights" STRING ";" */
static void parse_weights(parser *p) {
  gc_loc kw = p->tok.loc;
  advance(p);
  gc_token t = p->tok;
  if (!expect(p, GC_TOK_STRING, "(the weights file) after 'weights'")) {
    sync_top(p);
    return;
  }
  if (p->m->weights) {
    error_at(p, kw, "duplicate weights statement");
    if (!p->stopped) gc_note_at(p->d, p->m->weights_loc, "previous weights statement is here");
  } else {
    char *s = palloc(p, t.len + 1);
    if (s) gc_lex_string(&t, s);
    p->m->weights = s;
    p->m->weights_loc = t.loc;
  }
  if (!expect(p, GC_TOK_SEMI, "after the weights statement")) sync_top(p);
}

/* file = "version" INT ";" { weights } { graph } */
static void parse_file(parser *p) {
  if (at_kw(p, "version")) {
    advance(p);
    gc_token v = p->tok;
    if (!expect(p, GC_TOK_INT, "after 'version'")) {
      sync_top(p);
    } else {
      if (v.i != 1 && !v.bad)
        error_at(p, v.loc, "unsupported version %lld (this compiler reads version 1)",
                 (long long)v.i);
      p->m->version = (int)v.i;
      if (!expect(p, GC_TOK_SEMI, "after the version")) sync_top(p);
    }
  } else {
    error_expected(p, "'version 1;' at the start of the file");
    if (!at_kw(p, "weights") && !at_kw(p, "graph")) sync_top(p);
  }
  while (at_kw(p, "weights")) parse_weights(p);
  while (!at(p, GC_TOK_EOF)) {
    if (at_kw(p, "graph")) {
      parse_graph(p);
      p->g = NULL;
    } else if (at_kw(p, "weights")) {
      error_at(p, p->tok.loc, "the weights statement must come before the first graph");
      parse_weights(p);
    } else {
      error_expected(p, "'graph' or end of file");
      advance(p);
      while (!at(p, GC_TOK_EOF) && !at_kw(p, "graph") && !at_kw(p, "weights")) advance(p);
    }
  }
}

/* Parse a whole file; the module, or NULL (and everything freed) after any error. */
gc_module *gc_parse(const char *file, const char *text, size_t len, gc_diags *d) {
  int errors0 = d->n_errors;
  parser p = {0};
  p.d = d;
  p.errors0 = errors0;
  p.m = gc_module_new(file);
  if (!p.m) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
    return NULL;
  }
  gc_lex_init(&p.lx, text ? text : "", text ? len : 0, d);
  p.lx.max_errors = errors0 + PARSE_MAX_ERRORS;
  advance(&p);
  parse_file(&p);
  vtab_free(&p.vals);
  if (d->n_errors > errors0) {
    gc_module_free(p.m);
    return NULL;
  }
  return p.m;
}
