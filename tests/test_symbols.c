/* test_symbols.c - derived symbols and ranges: canonical expressions, the .graph
 * syntax round trip, inference that introduces derived symbols, binding (ranges,
 * evaluation, errors) through the IR and the C API.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/parser.h"
#include "graphc/graphc.h"
#include "ir/ir.h"
#include "tests/testutil.h"

/* Parse and verify src; returns the module (NULL on errors) and leaves diagnostics in d. */
static gc_module *load(const char *src, gc_diags *d) {
  gc_diags_init(d, "t.graph", src, strlen(src));
  gc_module *m = gc_parse("t.graph", src, strlen(src), d);
  if (m && gc_verify_module(m, d)) {
    gc_module_free(m);
    return NULL;
  }
  return m;
}

/* Printed text of a module (malloc'd). */
static char *print(const gc_module *m) {
  gc_sbuf b = {0};
  gc_print_module(&b, m);
  return gc_sbuf_take(&b);
}

/* The first error message, or "" (for messages in failed asserts). */
static const char *first_error(const gc_diags *d) { return d->n ? d->items[0].msg : ""; }

/* Type of value %name, printed. */
static char *type_of(gc_graph *g, const char *name) {
  for (gc_op *op = g->first; op; op = op->next)
    for (int i = 0; i < op->n_results; i++)
      if (strcmp(op->results[i]->name, name) == 0) {
        gc_sbuf b = {0};
        gc_type_print(&b, &op->results[i]->type, g->sym_names);
        return gc_sbuf_take(&b);
      }
  ck_abort_msg("no value %s", name);
  return NULL;
}

static const char *const roundtrip_src =
    "version 1;\n"
    "graph @m<B: 1..64, S: 2..512, BS = S * B, H = floordiv(B * S * 3 + 3, 3), "
    "M = max(S, B) - 1, C = ceildiv(S, 4) * 2 - min(B, 8)>"
    "(%x: f32[B, S, 4]) -> (f32[BS, 4]) {\n"
    "  %y = reshape(%x, shape=[BS, 4]);\n"
    "  return %y;\n"
    "}\n";

/* Derived symbols print canonically (sorted terms) and the printed text re-parses to itself. */
START_TEST(roundtrip) {
  gc_diags d;
  gc_module *m = load(roundtrip_src, &d);
  ck_assert_msg(m != NULL, "%s", first_error(&d));
  char *t1 = print(m);
  ck_assert_msg(strstr(t1, "graph @m<B: 1..64, S: 2..512, BS = B * S, H = B * S + 1, "
                           "M = max(B, S) - 1, C = 2 * ceildiv(S, 4) - min(8, B)>") != NULL,
                "%s", t1);
  gc_diags d2;
  gc_module *m2 = load(t1, &d2);
  ck_assert_msg(m2 != NULL, "%s", first_error(&d2));
  char *t2 = print(m2);
  ck_assert_str_eq(t1, t2);
  /* A clone keeps definitions and ranges. */
  gc_module *m3 = gc_module_clone(m2);
  char *t3 = print(m3);
  ck_assert_str_eq(t1, t3);
  free(t1);
  free(t2);
  free(t3);
  gc_module_free(m);
  gc_module_free(m2);
  gc_module_free(m3);
  gc_diags_free(&d);
  gc_diags_free(&d2);
}
END_TEST

/* Equal expressions are one canonical form and intern to one symbol. */
START_TEST(canonical_and_interned) {
  gc_module *m = gc_module_new("t");
  gc_graph *g = gc_graph_new(m, "g", (gc_loc){0, 0});
  int b = gc_graph_add_sym(g, "B", NULL), s = gc_graph_add_sym(g, "S", NULL);
  const gc_sym_expr *B = gc_sx_dim(g, GC_DIM_SYM(b)), *S = gc_sx_dim(g, GC_DIM_SYM(s));
  const gc_sym_expr *one = gc_sx_const(g, 1), *m1 = gc_sx_const(g, -1);
  ck_assert_int_eq(gc_sx_cmp(gc_sx_mul(g, B, S), gc_sx_mul(g, S, B)), 0);
  /* (B + 1) * (B - 1) == B*B - 1 */
  const gc_sym_expr *l = gc_sx_mul(g, gc_sx_add(g, B, one), gc_sx_add(g, B, m1));
  const gc_sym_expr *r = gc_sx_add(g, gc_sx_mul(g, B, B), m1);
  ck_assert_int_eq(gc_sx_cmp(l, r), 0);
  /* floordiv(6*B*S, 3*S) == 2*B (exact), floordiv(B, 2) stays an atom */
  const gc_sym_expr *q = gc_sx_op(g, GC_SX_FLOORDIV, gc_sx_mul(g, gc_sx_const(g, 6), gc_sx_mul(g, B, S)),
                                  gc_sx_mul(g, gc_sx_const(g, 3), S));
  ck_assert_int_eq(gc_sx_cmp(q, gc_sx_mul(g, gc_sx_const(g, 2), B)), 0);
  ck_assert_int_eq(gc_sx_op(g, GC_SX_FLOORDIV, B, gc_sx_const(g, 2))->kind, GC_SX_FLOORDIV);
  ck_assert_ptr_null(gc_sx_exact_div(g, B, gc_sx_const(g, 2)));
  /* min is commutative; min(B, B) is B */
  ck_assert_int_eq(gc_sx_cmp(gc_sx_op(g, GC_SX_MIN, B, S), gc_sx_op(g, GC_SX_MIN, S, B)), 0);
  ck_assert_int_eq(gc_sx_cmp(gc_sx_op(g, GC_SX_MIN, B, B), B), 0);
  /* decided by the sign of the difference: min(S + 1, S) = S, max(S + 1, S) = S + 1 */
  const gc_sym_expr *s1 = gc_sx_add(g, S, one);
  ck_assert_int_eq(gc_sx_cmp(gc_sx_op(g, GC_SX_MIN, s1, S), S), 0);
  ck_assert_int_eq(gc_sx_cmp(gc_sx_op(g, GC_SX_MAX, S, s1), s1), 0);
  /* and by ranges: with B in 1..8, min(B, 8) = B; min(B, S) stays */
  g->sym_hi[b] = 8;
  ck_assert_int_eq(gc_sx_cmp(gc_sx_op(g, GC_SX_MIN, B, gc_sx_const(g, 8)), B), 0);
  ck_assert_int_eq(gc_sx_op(g, GC_SX_MIN, B, S)->kind, GC_SX_MIN);
  int64_t lo, hi;
  ck_assert(gc_sx_bounds(g, gc_sx_add(g, gc_sx_mul(g, gc_sx_const(g, 3), B), m1), &lo, &hi));
  ck_assert_int_eq(lo, 2);
  ck_assert_int_eq(hi, 23);
  g->sym_hi[b] = GC_SYM_MAX;
  /* intern: constants and base symbols are dims as they are; a product is one new symbol */
  ck_assert_int_eq(gc_sym_intern(g, gc_sx_const(g, 7)), 7);
  ck_assert_int_eq(gc_sym_intern(g, S), GC_DIM_SYM(s));
  int64_t d1 = gc_sym_intern(g, gc_sx_mul(g, B, S)), d2 = gc_sym_intern(g, gc_sx_mul(g, S, B));
  ck_assert(GC_DIM_IS_SYM(d1));
  ck_assert_int_eq(d1, d2);
  ck_assert_int_eq(g->n_syms, 3);
  /* a derived symbol entering an expression is replaced by its definition */
  ck_assert_int_eq(gc_sx_cmp(gc_sx_dim(g, d1), gc_sx_mul(g, B, S)), 0);
  /* evaluation */
  g->sym_values[b] = 3;
  g->sym_values[s] = 5;
  int64_t v = 0;
  ck_assert_int_eq(gc_sx_eval(g, l, &v), 0);
  ck_assert_int_eq(v, 8);
  ck_assert_int_eq(gc_sx_eval(g, gc_sx_op(g, GC_SX_CEILDIV, S, B), &v), 0);
  ck_assert_int_eq(v, 2);
  gc_module_free(m);
}
END_TEST

/* Inference adds derived symbols: reshape -1, concat along a symbolic axis, a slice. */
START_TEST(inference_derives) {
  const char *src =
      "version 1;\n"
      "graph @m<B, S>(%x: f32[B, S, 4], %y: f32[B, 3, 4]) -> (f32[B, S, 4]) {\n"
      "  %a = reshape(%x, shape=[-1, 4]);\n"
      "  %b = reshape(%x, shape=[-1, 2, 2]);\n"
      "  %c = concat(%x, %y, axis=1);\n"
      "  %d = slice(%c, start=[0, 1, 0], end=[4611686018427387903, 4611686018427387903, 4]);\n"
      "  %e = reshape(%a, shape=[B, S, -1]);\n"
      "  return %e;\n"
      "}\n";
  gc_diags d;
  gc_module *m = load(src, &d);
  ck_assert_msg(m != NULL, "%s", first_error(&d));
  gc_graph *g = m->graphs[0];
  char *ta = type_of(g, "a"), *tb = type_of(g, "b"), *tc = type_of(g, "c"), *td = type_of(g, "d"),
       *te = type_of(g, "e");
  ck_assert_str_eq(ta, "f32[_s2, 4]");
  ck_assert_str_eq(tb, "f32[_s2, 2, 2]"); /* the same B*S: one symbol */
  ck_assert_str_eq(tc, "f32[B, _s3, 4]");
  ck_assert_str_eq(td, "f32[B, _s4, 4]");
  ck_assert_str_eq(te, "f32[B, S, 4]");
  char *t = print(m);
  ck_assert_msg(strstr(t, "graph @m<B, S, _s2 = B * S, _s3 = S + 3, _s4 = S + 2>") != NULL, "%s", t);
  /* bind and specialize: derived symbols are evaluated */
  g->sym_values[0] = 2;
  g->sym_values[1] = 5;
  ck_assert_int_eq(gc_graph_specialize(g, &d), 0);
  ck_assert_int_eq(gc_verify_graph(g, &d), 0);
  free(ta);
  ta = type_of(g, "a");
  free(td);
  td = type_of(g, "d");
  ck_assert_str_eq(ta, "f32[10, 4]");
  ck_assert_str_eq(td, "f32[2, 7, 4]");
  free(ta);
  free(tb);
  free(tc);
  free(td);
  free(te);
  free(t);
  gc_module_free(m);
  gc_diags_free(&d);
}
END_TEST

/* Errors when binding: out of range, a derived value that is not positive. */
START_TEST(binding_errors) {
  const char *src =
      "version 1;\n"
      "graph @m<B: 2..8, S, T = S - 3>(%x: f32[B, T]) -> (f32[B, T]) {\n"
      "  return %x;\n"
      "}\n";
  gc_diags d;
  gc_module *m = load(src, &d);
  ck_assert_msg(m != NULL, "%s", first_error(&d));
  gc_graph *g = m->graphs[0];
  g->sym_values[0] = 9;
  g->sym_values[1] = 5;
  ck_assert_int_eq(gc_graph_specialize(g, &d), 1);
  ck_assert_str_eq(d.items[d.n - 1].msg, "symbolic dim B is bound to 9, outside its range 2..8");
  g->sym_values[0] = 4;
  g->sym_values[1] = 2;
  ck_assert_int_eq(gc_graph_specialize(g, &d), 1);
  ck_assert_str_eq(d.items[d.n - 1].msg,
                   "derived dim T = S - 3 is -1 at these bindings (a dim must be >= 0)");
  g->sym_values[1] = 7;
  ck_assert_int_eq(gc_graph_specialize(g, &d), 0);
  ck_assert_int_eq(g->args[0]->type.dims[1], 4);
  gc_module_free(m);
  gc_diags_free(&d);
}
END_TEST

/* Parse errors in the symbol list, with positions. */
START_TEST(parse_errors) {
  static const struct { const char *syms, *at, *msg; } cases[] = {
      {"<B, T = B * X>", "X", "unknown symbolic dim 'X'"},
      {"<B, S, T = B * S, U = S * B>", "S * B", "derived dim 'U' = B * S is the same as 'T'"},
      {"<B: 5..2>", "5..", "bad range 5..2"},
      {"<B, T = 2 * B - B - B + 4>", "2 *", "derived dim 'T' = 4 is a constant"},
      {"<B, T = floordiv(B, 0)>", "floordiv", "floordiv by 0: the divisor must be positive"},
      {"<B, T = pow(B, 2)>", "pow", "unknown function 'pow'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char src[256];
    snprintf(src, sizeof src, "version 1;\ngraph @m%s(%%x: f32[B]) -> (f32[B]) {\n  return %%x;\n}\n",
             cases[i].syms);
    gc_diags d;
    gc_module *m = load(src, &d);
    ck_assert_msg(m == NULL, "%s: parsed", cases[i].syms);
    ck_assert_msg(d.n_errors >= 1 && strstr(d.items[0].msg, cases[i].msg), "%s: got '%s'",
                  cases[i].syms, first_error(&d));
    int col = 9 + (int)(strstr(cases[i].syms, cases[i].at) - cases[i].syms); /* after "graph @m" */
    ck_assert_msg(d.items[0].loc.line == 2 && d.items[0].loc.col == col, "%s: at %d:%d",
                  cases[i].syms, d.items[0].loc.line, d.items[0].loc.col);
    gc_diags_free(&d);
  }
}
END_TEST

/* The C API: set_range narrows, bind checks the range and refuses derived symbols. */
START_TEST(api_range_and_bind) {
  const char *src =
      "version 1;\n"
      "graph @m<B, S, N = B * S>(%x: f32[B, S]) -> (f32[N]) {\n"
      "  %y = reshape(%x, shape=[N]);\n"
      "  return %y;\n"
      "}\n";
  graphc_context_t *ctx = NULL;
  graphc_model_t *m = NULL;
  graphc_error_t err;
  ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_load_string(ctx, "t.graph", src, strlen(src), &m, &err), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_set_range(m, "B", 1, 16, &err), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_set_range(m, "B", 1, 32, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_str_eq(err.message, "cannot narrow the range of B to 1..32: it must lie within 1..16");
  ck_assert_int_eq(graphc_model_bind(m, "B", 17, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_str_eq(err.message, "cannot bind B=17: outside its range 1..16");
  ck_assert_int_eq(graphc_model_bind(m, "N", 4, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_str_eq(err.message,
                   "cannot bind N: it is derived (N = B * S); bind the symbols it is computed from");
  ck_assert_int_eq(graphc_model_bind(m, "B", 3, &err), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_bind(m, "S", 5, &err), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_specialize(m, &err), GRAPHC_STATUS_OK);
  char *text = NULL;
  ck_assert_int_eq(graphc_model_print(m, &text, &err), GRAPHC_STATUS_OK);
  ck_assert_msg(strstr(text, "-> (f32[15])") != NULL, "%s", text);
  graphc_free(text);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
}
END_TEST

static Suite *symbols_suite(void) {
  Suite *s = suite_create("symbols");
  TCase *tc = tcase_create("symbols");
  tcase_add_test(tc, roundtrip);
  tcase_add_test(tc, canonical_and_interned);
  tcase_add_test(tc, inference_derives);
  tcase_add_test(tc, binding_errors);
  tcase_add_test(tc, parse_errors);
  tcase_add_test(tc, api_range_and_bind);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run_suite(symbols_suite()); }
