/* test_infer.c - shape/dtype inference (ir/infer.c) for every op in ops.def.
 *
 * Each case is one statement parsed inside a graph @t<B, T>(ARGS); its op is
 * handed to gc_infer_op directly. A case expects either the result types
 * ("f32[4, 3]", results joined by ", ") or an error: its message must contain
 * a substring and its column must be the op's (the first result) or, when
 * `at` is given, that of the text `at` in the statement (an attribute name or
 * a list entry). `all_ops_covered` checks that every op of ops.def has a case
 * that passes and one that is rejected. The verifier and specialization are
 * tested in test_infer2.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/parser.h"
#include "ir/ir.h"
#include "tests/testutil.h"

#define STMT_LINE 3
#define STMT_COL 3

/* One statement: args of @t, the statement, the expectation, where the error points. */
typedef struct tcase {
  const char *args, *stmt;
  const char *want; /* result types, or "!substring" of the expected error */
  const char *at;   /* error location: this text in stmt (NULL: the op) */
} tcase;

/* Name of the op a statement uses ("param", "state" or the word before '('). */
static void stmt_op(const char *stmt, char *out, size_t n) {
  if (strncmp(stmt, "param", 5) == 0 || strncmp(stmt, "state", 5) == 0) {
    snprintf(out, n, "%.5s", stmt);
    return;
  }
  const char *eq = strchr(stmt, '='), *lp = strchr(stmt, '(');
  ck_assert_msg(eq && lp && lp > eq, "bad statement %s", stmt);
  eq++;
  while (*eq == ' ') eq++;
  snprintf(out, n, "%.*s", (int)(lp - eq), eq);
}

/* Parse the case's graph and infer its op. Returns "types" or "ERR L:C: msg" (malloc'd). */
static char *run_case(const tcase *tc) {
  char res[64] = "";
  const char *p = tc->stmt;
  if (strncmp(p, "param", 5) == 0 || strncmp(p, "state", 5) == 0) p += 6;
  size_t k = 0;
  while (p[k] && p[k] != ' ' && p[k] != ',' && p[k] != ':' && k < sizeof res - 1) k++;
  memcpy(res, p, k);
  res[k] = 0;
  char src[2048];
  snprintf(src, sizeof src, "version 1;\ngraph @t<B, T>(%s) -> (f32[]) {\n  %s;\n  return %s;\n}\n",
           tc->args, tc->stmt, res);
  gc_diags d;
  gc_diags_init(&d, "case.graph", src, strlen(src));
  gc_module *m = gc_parse("case.graph", src, strlen(src), &d);
  if (!m) {
    char *r = gc_diags_render(&d);
    ck_abort_msg("case does not parse: %s\n%s", tc->stmt, r);
  }
  gc_graph *g = m->graphs[0];
  gc_op *op = g->last;
  ck_assert_ptr_nonnull(op);
  gc_type *out = calloc((size_t)op->n_results + 1, sizeof *out);
  gc_sbuf b = {0};
  int ok = gc_infer_op(g, op, out, &d);
  if (ok) {
    ck_assert_msg(d.n_errors == 0, "%s: success with errors", tc->stmt);
    for (int i = 0; i < op->n_results; i++) {
      if (i) gc_sbuf_puts(&b, ", ");
      gc_type_print(&b, &out[i], g->sym_names);
    }
  } else {
    ck_assert_msg(d.n_errors == 1, "%s: %d errors", tc->stmt, d.n_errors);
    const gc_diag *e = &d.items[d.n - 1];
    gc_sbuf_printf(&b, "ERR %d:%d: %s", e->loc.line, e->loc.col, e->msg);
  }
  free(out);
  gc_module_free(m);
  gc_diags_free(&d);
  return gc_sbuf_take(&b);
}

/* Run one case and check its expectation. */
static void check_case(const tcase *tc) {
  char *got = run_case(tc);
  if (tc->want[0] != '!') {
    ck_assert_msg(strcmp(got, tc->want) == 0, "%s (%s): got '%s', want '%s'", tc->stmt, tc->args,
                  got, tc->want);
  } else {
    int col = STMT_COL;
    if (tc->at) {
      const char *w = strstr(tc->stmt, tc->at);
      ck_assert_msg(w, "'at' text %s not in %s", tc->at, tc->stmt);
      col = STMT_COL + (int)(w - tc->stmt);
    }
    char prefix[32];
    snprintf(prefix, sizeof prefix, "ERR %d:%d: ", STMT_LINE, col);
    ck_assert_msg(strncmp(got, prefix, strlen(prefix)) == 0 && strstr(got, tc->want + 1),
                  "%s (%s): got '%s', want '%s...%s'", tc->stmt, tc->args, got, prefix,
                  tc->want + 1);
  }
  free(got);
}

/* Run a table of cases. */
static void check_cases(const tcase *cs, size_t n) {
  for (size_t i = 0; i < n; i++) check_case(&cs[i]);
}
#define RUN(cs) check_cases(cs, sizeof cs / sizeof cs[0])

/* ---- sources --------------------------------------------------------------------- */
static const tcase source_cases[] = {
    {"", "param %r: f32[B, 3] = \"w\"", "f32[B, 3]", NULL},
    {"", "param %r: bool[] = \"flag\"", "bool[]", NULL},
    {"", "state %r: f16[B, 4, T] = \"cache.k\"", "f16[B, 4, T]", NULL},
    {"", "%r = const(value=1.5)", "f32[]", NULL},
    {"", "%r = const(value=[1, 2, 3])", "i64[3]", NULL},
    {"", "%r = const(value=[1, 2.5])", "f32[2]", NULL},
    {"", "%r = const(value=true, shape=[B, 2])", "bool[B, 2]", NULL},
    {"", "%r = const(value=[1, 2, 3, 4, 5, 6], shape=[2, 3], dtype=f16)", "f16[2, 3]", NULL},
    {"", "%r = const(value=-inf, shape=[4], dtype=bf16)", "bf16[4]", NULL},
    {"", "%r = const(value=[1, 2, 3], shape=[2, 2])",
     "!shape [2, 2] has 4 elements but the value list has 3", "shape="},
    {"", "%r = const(value=[1, [2]])", "!flat list of scalars, got list at entry 1", "[2]"},
    {"", "%r = const(value=[true, 1])", "!mixes bool and numbers", "value"},
    {"", "%r = const(value=[1, 2], shape=[B, 2])", "!bind symbolic dim B", "shape="},
    {"", "%r = const(value=1, shape=[3, 0])", "i64[3, 0]", NULL},
    {"", "%r = const(value=1, shape=[3, -2])", "!'shape' entry 1 is -2; dims must be >= 0", "-2]"},
    {"", "%r = const(value=\"x\")", "!attribute 'value' expects a scalar or a list, got str",
     "value"},
    {"", "%r = const(value=[])", "!empty list", "value"},
    {"", "%r = iota(shape=[3, 4], axis=1)", "i64[3, 4]", NULL},
    {"", "%r = iota(shape=[B, 4], axis=-1, dtype=f32)", "f32[B, 4]", NULL},
    {"", "%r = iota(shape=[5])", "i64[5]", NULL},
    {"", "%r = iota(shape=[3], dtype=bool)", "!dtype bool is not allowed; expected a numeric",
     "dtype"},
    {"", "%r = iota(shape=[3], axis=1)", "!axis 1 out of range for rank 1", "axis"},
    {"", "%r = iota(shape=[3], axis=-2)", "!axis -2 out of range for rank 1", "axis"},
    {"", "%r = iota(axis=0)", "!missing required attribute 'shape'", NULL},
};

/* param, const, iota. */
START_TEST(sources) { RUN(source_cases); }
END_TEST

/* A param whose name is not a string (only code can build one). */
START_TEST(param_rejects_bad_name) {
  gc_module *m = gc_module_new("x.graph");
  gc_graph *g = gc_graph_new(m, "t", (gc_loc){1, 1});
  gc_op *op = gc_op_new(g, GC_OP_PARAM, 0, NULL, 1, (const char *[]){"w"}, (gc_loc){2, 3});
  op->results[0]->type = (gc_type){.dtype = GRAPHC_DTYPE_F32, .rank = 1, .dims = {4}};
  op->typed = 1;
  gc_named_attr na = {.name = "name", .val = {.kind = GC_ATTR_INT, .loc = {2, 9}, .u.i = 3}};
  gc_op_set_attrs(g, op, 1, &na);
  gc_diags d;
  gc_diags_init(&d, "x.graph", NULL, 0);
  gc_type out;
  ck_assert_int_eq(gc_infer_op(g, op, &out, &d), 0);
  ck_assert_int_eq(d.n_errors, 1);
  ck_assert_str_eq(d.items[0].msg, "param: attribute 'name' expects str, got int");
  ck_assert_int_eq(d.items[0].loc.col, 9);
  gc_diags_free(&d);
  gc_module_free(m);
}
END_TEST

/* ---- unary elementwise --------------------------------------------------------------- */
static const char *const num_unary[] = {"neg", "abs", "relu"};
static const char *const float_unary[] = {"exp",     "log",  "sqrt", "rsqrt", "tanh", "sigmoid",
                                          "silu",    "erf",  "sin",  "cos",   "floor", "ceil",
                                          "gelu"};

/* Build and check a case for op `name` from a template with %s for the op name. */
static void check_named(const char *name, const char *args, const char *tmpl, const char *want,
                        const char *at) {
  char stmt[256];
  snprintf(stmt, sizeof stmt, tmpl, name);
  tcase tc = {args, stmt, want, at};
  check_case(&tc);
}

/* neg abs relu: numeric dtypes only. */
START_TEST(unary_numeric) {
  for (size_t i = 0; i < sizeof num_unary / sizeof *num_unary; i++) {
    const char *n = num_unary[i];
    check_named(n, "%a: i32[B, 3]", "%%r = %s(%%a)", "i32[B, 3]", NULL);
    check_named(n, "%a: f16[]", "%%r = %s(%%a)", "f16[]", NULL);
    check_named(n, "%a: u8[2, 2, 2]", "%%r = %s(%%a)", "u8[2, 2, 2]", NULL);
    check_named(n, "%a: bool[2]", "%%r = %s(%%a)",
                "!operand %a has dtype bool; expected a numeric dtype", NULL);
  }
}
END_TEST

/* exp log ... gelu: float dtypes only. */
START_TEST(unary_float) {
  for (size_t i = 0; i < sizeof float_unary / sizeof *float_unary; i++) {
    const char *n = float_unary[i];
    check_named(n, "%a: f32[2, T]", "%%r = %s(%%a)", "f32[2, T]", NULL);
    check_named(n, "%a: bf16[]", "%%r = %s(%%a)", "bf16[]", NULL);
    check_named(n, "%a: f64[1, 1, 1, 1, 1, 1, 1, 7]", "%%r = %s(%%a)",
                "f64[1, 1, 1, 1, 1, 1, 1, 7]", NULL);
    check_named(n, "%a: i32[4]", "%%r = %s(%%a)",
                "!operand %a has dtype i32; expected a float dtype (f64, f32, f16, bf16)", NULL);
  }
}
END_TEST

static const tcase unary_cases[] = {
    {"%a: f32[4]", "%r = gelu(%a, approximate=\"tanh\")", "f32[4]", NULL},
    {"%a: f16[4]", "%r = gelu(%a, approximate=\"none\")", "f16[4]", NULL},
    {"%a: f32[4]", "%r = gelu(%a, approximate=\"fast\")",
     "!approximate must be \"none\" or \"tanh\", got \"fast\"", "approximate"},
    {"%a: f32[4]", "%r = gelu(%a, approximate=1)", "!'approximate' expects str, got int",
     "approximate"},
    {"%a: bool[3, B]", "%r = not(%a)", "bool[3, B]", NULL},
    {"%a: i8[3]", "%r = not(%a)", "!operand %a has dtype i8; expected bool", NULL},
    {"%a: f32[3]", "%r = clamp(%a, min=0.0)", "f32[3]", NULL},
    {"%a: i32[B]", "%r = clamp(%a, max=5)", "i32[B]", NULL},
    {"%a: f64[2, 2]", "%r = clamp(%a, min=-1, max=1.5)", "f64[2, 2]", NULL},
    {"%a: f32[3]", "%r = clamp(%a)", "!needs at least one of the attributes 'min' and 'max'",
     NULL},
    {"%a: bool[3]", "%r = clamp(%a, min=0)", "!has dtype bool; expected a numeric", NULL},
    {"%a: f32[3]", "%r = clamp(%a, min=[1])", "!attribute 'min' expects a scalar, got list",
     "min"},
    {"%a: f32[2, 3]", "%r = cast(%a, to=i8)", "i8[2, 3]", NULL},
    {"%a: bool[B]", "%r = cast(%a, to=f16)", "f16[B]", NULL},
    {"%a: i64[]", "%r = cast(%a, to=bool)", "bool[]", NULL},
    {"%a: f32[2]", "%r = cast(%a, to=1)", "!attribute 'to' expects dtype, got int", "to"},
    {"%a: f32[2]", "%r = cast(%a)", "!missing required attribute 'to'", NULL},
};

/* gelu attributes, not, clamp, cast. */
START_TEST(unary_other) { RUN(unary_cases); }
END_TEST

/* ---- binary elementwise ---------------------------------------------------------------- */
static const char *const num_binary[] = {"add", "sub", "mul", "div", "maximum", "minimum"};
static const char *const cmp_binary[] = {"eq", "ne", "lt", "le", "gt", "ge"};

/* add sub mul div maximum minimum: broadcasting and dtypes. */
START_TEST(binary_numeric) {
  for (size_t i = 0; i < sizeof num_binary / sizeof *num_binary; i++) {
    const char *n = num_binary[i];
    const char *t = "%%r = %s(%%a, %%b)";
    check_named(n, "%a: f32[4, 1], %b: f32[3]", t, "f32[4, 3]", NULL);
    check_named(n, "%a: i64[], %b: i64[2, 2]", t, "i64[2, 2]", NULL);
    check_named(n, "%a: f32[B, 1], %b: f32[1, T]", t, "f32[B, T]", NULL);
    check_named(n, "%a: f32[B, 3], %b: f32[B, 3]", t, "f32[B, 3]", NULL);
    check_named(n, "%a: f32[4, 1, 5], %b: f32[2, 1]", t, "f32[4, 2, 5]", NULL);
    check_named(n, "%a: f32[2], %b: f16[2]", t, "!dtypes differ: f32 and f16", NULL);
    check_named(n, "%a: f32[3, 4], %b: f32[5]", t, "!cannot broadcast f32[3, 4] with f32[5]",
                NULL);
    check_named(n, "%a: f32[B], %b: f32[T]", t, "!cannot broadcast f32[B] with f32[T]", NULL);
    check_named(n, "%a: f32[B], %b: f32[4]", t, "!cannot broadcast f32[B] with f32[4]", NULL);
    check_named(n, "%a: bool[2], %b: bool[2]", t, "!has dtype bool; expected a numeric", NULL);
  }
}
END_TEST

/* eq ne lt le gt ge: bool results. */
START_TEST(binary_compare) {
  for (size_t i = 0; i < sizeof cmp_binary / sizeof *cmp_binary; i++) {
    const char *n = cmp_binary[i];
    const char *t = "%%r = %s(%%a, %%b)";
    check_named(n, "%a: f32[2, 3], %b: f32[3]", t, "bool[2, 3]", NULL);
    check_named(n, "%a: bool[B], %b: bool[1]", t, "bool[B]", NULL);
    check_named(n, "%a: u8[], %b: u8[]", t, "bool[]", NULL);
    check_named(n, "%a: i32[2], %b: i64[2]", t, "!dtypes differ: i32 and i64", NULL);
    check_named(n, "%a: i32[2], %b: i32[3]", t, "!cannot broadcast i32[2] with i32[3]", NULL);
  }
}
END_TEST

static const tcase binary_cases[] = {
    {"%a: f32[2, 3], %b: f32[2, 1]", "%r = pow(%a, %b)", "f32[2, 3]", NULL},
    {"%a: f64[], %b: f64[B]", "%r = pow(%a, %b)", "f64[B]", NULL},
    {"%a: i32[2], %b: i32[2]", "%r = pow(%a, %b)", "!has dtype i32; expected a float dtype",
     NULL},
    {"%a: bool[2], %b: bool[3, 1]", "%r = and(%a, %b)", "bool[3, 2]", NULL},
    {"%a: bool[B], %b: bool[B]", "%r = or(%a, %b)", "bool[B]", NULL},
    {"%a: f32[2], %b: f32[2]", "%r = and(%a, %b)", "!has dtype f32; expected bool", NULL},
    {"%a: i8[2], %b: i8[2]", "%r = or(%a, %b)", "!has dtype i8; expected bool", NULL},
    {"%a: i64[B, 1], %b: i32[1, T]", "%r = hash_uniform(%a, %b)", "f32[B, T]", NULL},
    {"%a: i32[], %b: i32[7]", "%r = hash_uniform(%a, %b)", "f32[7]", NULL},
    {"%a: f32[4], %b: i32[4]", "%r = hash_uniform(%a, %b)", "!operand %a has dtype f32; expected an index dtype", NULL},
    {"%c: bool[4, 1], %a: f32[3], %b: f32[1]", "%r = select(%c, %a, %b)", "f32[4, 3]", NULL},
    {"%c: bool[B, 1], %a: i32[1, T], %b: i32[]", "%r = select(%c, %a, %b)", "i32[B, T]", NULL},
    {"%c: bool[], %a: bool[2], %b: bool[2]", "%r = select(%c, %a, %b)", "bool[2]", NULL},
    {"%c: f32[4], %a: f32[4], %b: f32[4]", "%r = select(%c, %a, %b)",
     "!operand %c has dtype f32; expected bool", NULL},
    {"%c: bool[4], %a: f32[4], %b: f16[4]", "%r = select(%c, %a, %b)",
     "!dtypes differ: f32 and f16", NULL},
    {"%c: bool[5], %a: f32[3], %b: f32[3]", "%r = select(%c, %a, %b)",
     "!cannot broadcast condition bool[5] with f32[3]", NULL},
    {"%c: bool[3], %a: f32[2, 3], %b: f32[4, 3]", "%r = select(%c, %a, %b)",
     "!cannot broadcast f32[2, 3] with f32[4, 3]", NULL},
};

/* pow, and, or, select. */
START_TEST(binary_other) { RUN(binary_cases); }
END_TEST

/* ---- reductions ------------------------------------------------------------------------ */
START_TEST(reductions) {
  static const char *const names[] = {"reduce_sum", "reduce_max", "reduce_min", "reduce_mean"};
  for (int i = 0; i < 4; i++) {
    const char *n = names[i];
    check_named(n, "%a: f32[2, 3, 4]", "%%r = %s(%%a, axes=[0, -1])", "f32[3]", NULL);
    check_named(n, "%a: f32[2, 3, 4]", "%%r = %s(%%a, axes=[0, 2], keepdims=true)",
                "f32[1, 3, 1]", NULL);
    check_named(n, "%a: f32[2, 3, 4]", "%%r = %s(%%a)", "f32[]", NULL);
    check_named(n, "%a: f16[2, 3]", "%%r = %s(%%a, keepdims=true)", "f16[1, 1]", NULL);
    check_named(n, "%a: f32[B, 4]", "%%r = %s(%%a, axes=[1])", "f32[B]", NULL);
    check_named(n, "%a: f32[B, 4]", "%%r = %s(%%a, axes=[0], keepdims=true)", "f32[1, 4]", NULL);
    check_named(n, "%a: f32[2, 3]", "%%r = %s(%%a, axes=[])", "f32[2, 3]", NULL);
    check_named(n, "%a: f32[2, 3]", "%%r = %s(%%a, axes=[0, -2])",
                "!axis -2 appears twice in axes", "-2");
    check_named(n, "%a: f32[2, 3]", "%%r = %s(%%a, axes=[0, 3])",
                "!axis 3 out of range for rank 2", "3]");
    check_named(n, "%a: f32[2, 3]", "%%r = %s(%%a, keepdims=1)",
                "!attribute 'keepdims' expects bool, got int", "keepdims");
    check_named(n, "%a: bool[2, 3]", "%%r = %s(%%a)", "!has dtype bool; expected a", NULL);
    if (i < 3)
      check_named(n, "%a: i32[2, 3]", "%%r = %s(%%a, axes=[1])", "i32[2]", NULL);
    else
      check_named(n, "%a: i32[2, 3]", "%%r = %s(%%a, axes=[1])",
                  "!operand %a has dtype i32; expected a float dtype", NULL);
  }
}
END_TEST

static const tcase argmax_cases[] = {
    {"%a: f32[2, 5]", "%r = argmax(%a)", "i64[2]", NULL},
    {"%a: f32[2, 5]", "%r = argmax(%a, axis=0, keepdims=true)", "i64[1, 5]", NULL},
    {"%a: i8[B, T, 3]", "%r = argmax(%a, axis=1)", "i64[B, 3]", NULL},
    {"%a: f32[7]", "%r = argmax(%a, keepdims=true)", "i64[1]", NULL},
    {"%a: f32[]", "%r = argmax(%a)", "!axis -1 out of range for rank 0", NULL},
    {"%a: f32[2, 5]", "%r = argmax(%a, axis=2)", "!axis 2 out of range for rank 2", "axis"},
    {"%a: bool[2]", "%r = argmax(%a)", "!has dtype bool; expected a numeric", NULL},
};

/* argmax: i64 result, axis, keepdims. */
START_TEST(argmax) { RUN(argmax_cases); }
END_TEST

/* ---- normalizations --------------------------------------------------------------------- */
static const tcase norm_cases[] = {
    {"%a: f32[2, 3]", "%r = softmax(%a)", "f32[2, 3]", NULL},
    {"%a: f16[B, T, 8]", "%r = softmax(%a, axis=1)", "f16[B, T, 8]", NULL},
    {"%a: f32[2, 3]", "%r = softmax(%a, axis=3)", "!softmax: axis 3 out of range for rank 2",
     "axis"},
    {"%a: f32[2, 3]", "%r = softmax(%a, axis=-3)", "!axis -3 out of range for rank 2", "axis"},
    {"%a: i32[2, 3]", "%r = softmax(%a)", "!expected a float dtype", NULL},
    {"%a: f64[4]", "%r = log_softmax(%a, axis=0)", "f64[4]", NULL},
    {"%a: f32[B, 3]", "%r = log_softmax(%a, axis=-2)", "f32[B, 3]", NULL},
    {"%a: f32[]", "%r = log_softmax(%a)", "!log_softmax: axis -1 out of range for rank 0", NULL},
    {"%a: f32[2, 3]", "%r = log_softmax(%a, axis=1.5)", "!'axis' expects int, got float", "axis"},
    {"%x: f32[B, 4, 8], %g: f32[8], %b: f32[8]", "%r = layernorm(%x, %g, %b)", "f32[B, 4, 8]",
     NULL},
    {"%x: f32[B, 4, 8], %g: f32[4, 8], %b: f32[4, 8]", "%r = layernorm(%x, %g, %b, axis=1, eps=1e-3)",
     "f32[B, 4, 8]", NULL},
    {"%x: f32[2, T], %g: f32[T], %b: f32[T]", "%r = layernorm(%x, %g, %b, eps=0)", "f32[2, T]",
     NULL},
    {"%x: f32[2, 8], %g: f32[4], %b: f32[8]", "%r = layernorm(%x, %g, %b)",
     "!gamma must have shape [8] (x.shape[1:] of f32[2, 8]), got f32[4]", NULL},
    {"%x: f32[2, 8], %g: f32[8], %b: f32[2, 8]", "%r = layernorm(%x, %g, %b)",
     "!beta must have shape [8]", NULL},
    {"%x: f32[2, 8], %g: f16[8], %b: f32[8]", "%r = layernorm(%x, %g, %b)",
     "!dtypes differ: x is f32, gamma is f16", NULL},
    {"%x: f32[2, 8], %g: f32[8], %b: f32[8]", "%r = layernorm(%x, %g, %b, axis=2)",
     "!axis 2 out of range for rank 2", "axis"},
    {"%x: f32[2, 8], %g: f32[8], %b: f32[8]", "%r = layernorm(%x, %g, %b, eps=true)",
     "!'eps' expects float, got bool", "eps"},
    {"%x: i32[2, 8], %g: i32[8], %b: i32[8]", "%r = layernorm(%x, %g, %b)",
     "!expected a float dtype", NULL},
    {"%x: f32[B, 8], %g: f32[8]", "%r = rmsnorm(%x, %g)", "f32[B, 8]", NULL},
    {"%x: bf16[8], %g: bf16[8]", "%r = rmsnorm(%x, %g, eps=1e-5)", "bf16[8]", NULL},
    {"%x: f32[B, 8], %g: f32[4]", "%r = rmsnorm(%x, %g)",
     "!gamma must have shape [8] (x.shape[1:] of f32[B, 8]), got f32[4]", NULL},
    {"%x: f32[], %g: f32[]", "%r = rmsnorm(%x, %g)", "!x must have rank >= 1, got f32[]", NULL},
    {"%x: f32[4], %g: f64[4]", "%r = rmsnorm(%x, %g)", "!dtypes differ: x is f32, gamma is f64",
     NULL},
};

/* softmax, log_softmax, layernorm, rmsnorm. */
START_TEST(normalizations) { RUN(norm_cases); }
END_TEST

/* ---- contractions ---------------------------------------------------------------------- */
static const tcase matmul_cases[] = {
    {"%a: f32[4, 8], %b: f32[8, 3]", "%r = matmul(%a, %b)", "f32[4, 3]", NULL},
    {"%a: f32[8, 4], %b: f32[8, 3]", "%r = matmul(%a, %b, transpose_a=true)", "f32[4, 3]", NULL},
    {"%a: f32[4, 8], %b: f32[3, 8]", "%r = matmul(%a, %b, transpose_b=true)", "f32[4, 3]", NULL},
    {"%a: f32[8, 4], %b: f32[3, 8]", "%r = matmul(%a, %b, transpose_a=true, transpose_b=true)",
     "f32[4, 3]", NULL},
    {"%a: f16[2, 1, 4, 8], %b: f16[5, 8, 3]", "%r = matmul(%a, %b)", "f16[2, 5, 4, 3]", NULL},
    {"%a: f32[B, T, 8], %b: f32[8, 3]", "%r = matmul(%a, %b)", "f32[B, T, 3]", NULL},
    {"%a: f32[B, 4, T], %b: f32[B, T, 5]", "%r = matmul(%a, %b)", "f32[B, 4, 5]", NULL},
    {"%a: i32[4, 8], %b: i32[8, 2]", "%r = matmul(%a, %b)", "i32[4, 2]", NULL},
    {"%a: f32[4, 8], %b: f32[7, 3]", "%r = matmul(%a, %b)",
     "!matmul: contracting dims differ: a is f32[4, 8] (K=8), b is f32[7, 3] (K=7)", NULL},
    {"%a: f32[4, B], %b: f32[T, 3]", "%r = matmul(%a, %b)",
     "!contracting dims differ: a is f32[4, B] (K=B), b is f32[T, 3] (K=T)", NULL},
    {"%a: f32[4, 8], %b: f32[8, 3]", "%r = matmul(%a, %b, transpose_a=true)",
     "!contracting dims differ: a is f32[4, 8] (K=4), b is f32[8, 3] (K=8)", NULL},
    {"%a: f32[8], %b: f32[8, 3]", "%r = matmul(%a, %b)", "!a must have rank >= 2, got f32[8]",
     NULL},
    {"%a: f32[2, 8], %b: f32[8]", "%r = matmul(%a, %b)", "!b must have rank >= 2, got f32[8]",
     NULL},
    {"%a: bool[2, 2], %b: bool[2, 2]", "%r = matmul(%a, %b)", "!has dtype bool", NULL},
    {"%a: f32[2, 2], %b: f16[2, 2]", "%r = matmul(%a, %b)", "!dtypes differ: f32 and f16", NULL},
    {"%a: f32[2, 4, 8], %b: f32[3, 8, 5]", "%r = matmul(%a, %b)",
     "!batch dims do not broadcast: a is f32[2, 4, 8], b is f32[3, 8, 5]", NULL},
    {"%a: f32[2, 2], %b: f32[2, 2]", "%r = matmul(%a, %b, transpose_a=1)",
     "!'transpose_a' expects bool, got int", "transpose_a"},
};

/* matmul: transposes, batch broadcasting, K checks. */
START_TEST(matmul) { RUN(matmul_cases); }
END_TEST

static const tcase conv_cases[] = {
    {"%x: f32[1, 3, 8, 8], %w: f32[16, 3, 3, 3]", "%r = conv2d(%x, %w)", "f32[1, 16, 6, 6]", NULL},
    {"%x: f32[1, 3, 8, 8], %w: f32[16, 3, 3, 3]", "%r = conv2d(%x, %w, padding=[1, 1])",
     "f32[1, 16, 8, 8]", NULL},
    {"%x: f32[1, 3, 8, 8], %w: f32[16, 3, 3, 3]",
     "%r = conv2d(%x, %w, stride=[2, 2], padding=[1, 1])", "f32[1, 16, 4, 4]", NULL},
    {"%x: f32[1, 3, 8, 8], %w: f32[16, 3, 3, 3]", "%r = conv2d(%x, %w, dilation=[2, 1])",
     "f32[1, 16, 4, 6]", NULL},
    {"%x: f32[1, 3, 8, 8], %w: f32[16, 3, 3, 3]", "%r = conv2d(%x, %w, padding=[1, 0, 2, 0])",
     "f32[1, 16, 9, 6]", NULL},
    {"%x: f32[2, 6, 7, 9], %w: f32[6, 2, 3, 3]", "%r = conv2d(%x, %w, groups=3, stride=[2, 3])",
     "f32[2, 6, 3, 3]", NULL},
    {"%x: f16[B, 3, 5, 5], %w: f16[8, 3, 5, 5]", "%r = conv2d(%x, %w)", "f16[B, 8, 1, 1]", NULL},
    {"%x: f32[1, T, 5, 5], %w: f32[8, T, 1, 1]", "%r = conv2d(%x, %w)", "f32[1, 8, 5, 5]", NULL},
    {"%x: f32[1, 6, 8, 8], %w: f32[8, 2, 3, 3]", "%r = conv2d(%x, %w, groups=4)",
     "!input channels 6 of x f32[1, 6, 8, 8] are not divisible by groups=4", "groups"},
    {"%x: f32[1, 6, 8, 8], %w: f32[9, 3, 3, 3]", "%r = conv2d(%x, %w, groups=2)",
     "!output channels 9 of w f32[9, 3, 3, 3] are not divisible by groups=2", "groups"},
    {"%x: f32[1, 3, 8, 8], %w: f32[16, 2, 3, 3]", "%r = conv2d(%x, %w)",
     "!w has 2 input channels per group, expected 3 (C=3 / groups=1)", NULL},
    {"%x: f32[1, 3, T, 8], %w: f32[16, 3, 3, 3]", "%r = conv2d(%x, %w)",
     "!needs a concrete size for axis 2; bind symbolic dim T", NULL},
    {"%x: f32[1, B, 8, 8], %w: f32[4, 1, 3, 3]", "%r = conv2d(%x, %w, groups=2)",
     "!needs a concrete size for axis 1; bind symbolic dim B", NULL},
    {"%x: f32[1, 3, 2, 2], %w: f32[16, 3, 3, 3]", "%r = conv2d(%x, %w)",
     "!output size along axis 2 would be < 1", NULL},
    {"%x: f32[3, 8, 8], %w: f32[16, 3, 3, 3]", "%r = conv2d(%x, %w)",
     "!x must have rank 4 [N, C, H, W], got f32[3, 8, 8]", NULL},
    {"%x: f32[1, 3, 8, 8], %w: f32[3, 3, 3]", "%r = conv2d(%x, %w)", "!w must have rank 4", NULL},
    {"%x: f32[1, 3, 8, 8], %w: f32[16, 3, 3, 3]", "%r = conv2d(%x, %w, stride=[0, 1])",
     "!'stride' entries must be >= 1, got 0", "0,"},
    {"%x: f32[1, 3, 8, 8], %w: f32[16, 3, 3, 3]", "%r = conv2d(%x, %w, stride=[1, 1, 1])",
     "!'stride' needs 2 entries, got 3", "stride"},
    {"%x: f32[1, 3, 8, 8], %w: f32[16, 3, 3, 3]", "%r = conv2d(%x, %w, padding=[1, 1, 1])",
     "!'padding' needs 2 or 4 entries, got 3", "padding"},
    {"%x: f32[1, 3, 8, 8], %w: f32[16, 3, 3, 3]", "%r = conv2d(%x, %w, groups=0)",
     "!groups must be >= 1, got 0", "groups"},
    {"%x: i32[1, 3, 8, 8], %w: i32[16, 3, 3, 3]", "%r = conv2d(%x, %w)",
     "!expected a float dtype", NULL},
    /* im2col: conv2d's windows as columns [N, C*KH*KW, OH*OW] */
    {"%x: f32[2, 3, 8, 8]", "%r = im2col(%x, kernel=[3, 3], padding=[1, 1])", "f32[2, 27, 64]", NULL},
    {"%x: f16[B, 4, 9, 7]", "%r = im2col(%x, kernel=[3, 2], stride=[2, 1], padding=[1, 0, 0, 1], dilation=[1, 2])",
     "f16[B, 24, 24]", NULL},
    {"%x: i32[1, 2, 5, 5]", "%r = im2col(%x, kernel=[1, 1])", "i32[1, 2, 25]", NULL},
    {"%x: f32[1, 3, 8, 8]", "%r = im2col(%x)", "!missing required attribute 'kernel'", NULL},
    {"%x: f32[1, 3, 2, 2]", "%r = im2col(%x, kernel=[3, 3])", "!output size along axis 2 would be < 1", NULL},
    {"%x: f32[3, 8, 8]", "%r = im2col(%x, kernel=[3, 3])", "!x must have rank 4 [N, C, H, W]", NULL},
    {"%x: f32[1, T, 8, 8]", "%r = im2col(%x, kernel=[3, 3])",
     "!needs a concrete size for axis 1; bind symbolic dim T", NULL},
};

/* conv2d: stride, padding, dilation, groups. */
START_TEST(conv2d) { RUN(conv_cases); }
END_TEST

/* max_pool2d and avg_pool2d. */
START_TEST(pool2d) {
  static const char *const names[] = {"max_pool2d", "avg_pool2d"};
  for (int i = 0; i < 2; i++) {
    const char *n = names[i], *x = "%x: f32[1, 3, 8, 8]";
    check_named(n, x, "%%r = %s(%%x, kernel=[2, 2])", "f32[1, 3, 4, 4]", NULL);
    check_named(n, x, "%%r = %s(%%x, kernel=[2, 2], stride=[1, 1])", "f32[1, 3, 7, 7]", NULL);
    check_named(n, x, "%%r = %s(%%x, kernel=[3, 3], stride=[2, 2], padding=[1, 1])",
                "f32[1, 3, 4, 4]", NULL);
    check_named(n, x, "%%r = %s(%%x, kernel=[3, 2], padding=[1, 0, 2, 1])", "f32[1, 3, 3, 4]",
                NULL);
    check_named(n, "%x: f16[B, T, 5, 4]", "%%r = %s(%%x, kernel=[5, 1])", "f16[B, T, 1, 4]",
                NULL);
    check_named(n, x, "%%r = %s(%%x)", "!missing required attribute 'kernel'", NULL);
    check_named(n, x, "%%r = %s(%%x, kernel=[2, 2], padding=[2, 0])",
                "!padding 2 must be smaller than the kernel size 2 along axis 2", "padding");
    check_named(n, x, "%%r = %s(%%x, kernel=[9, 2])", "!output size along axis 2 would be < 1",
                NULL);
    check_named(n, "%x: f32[1, 3, B, 8]", "%%r = %s(%%x, kernel=[2, 2])",
                "!needs a concrete size for axis 2; bind symbolic dim B", NULL);
    check_named(n, "%x: i32[1, 3, 8, 8]", "%%r = %s(%%x, kernel=[2, 2])",
                "!expected a float dtype", NULL);
    check_named(n, "%x: f32[3, 8, 8]", "%%r = %s(%%x, kernel=[2, 2])",
                "!x must have rank 4 [N, C, H, W], got f32[3, 8, 8]", NULL);
    check_named(n, x, "%%r = %s(%%x, kernel=[2, 0])", "!'kernel' entries must be >= 1, got 0",
                "0]");
    /* layout="nhwc": x [N, H, W, C] -> [N, OH, OW, C]; "nchw" is the default spelled out */
    const char *xh = "%x: f16[2, 9, 7, 16]";
    check_named(n, xh, "%%r = %s(%%x, kernel=[3, 3], stride=[2, 2], padding=[1, 1], layout=\"nhwc\")",
                "f16[2, 5, 4, 16]", NULL);
    check_named(n, xh, "%%r = %s(%%x, kernel=[3, 2], padding=[1, 0, 2, 1], layout=\"nhwc\")",
                "f16[2, 4, 4, 16]", NULL);
    check_named(n, x, "%%r = %s(%%x, kernel=[2, 2], layout=\"nchw\")", "f32[1, 3, 4, 4]", NULL);
    check_named(n, "%x: f32[B, 8, 8, T]", "%%r = %s(%%x, kernel=[2, 2], layout=\"nhwc\")",
                "f32[B, 4, 4, T]", NULL);
    check_named(n, "%x: f32[1, B, 8, 3]", "%%r = %s(%%x, kernel=[2, 2], layout=\"nhwc\")",
                "!needs a concrete size for axis 1; bind symbolic dim B", NULL);
    check_named(n, xh, "%%r = %s(%%x, kernel=[2, 2], padding=[0, 2], layout=\"nhwc\")",
                "!padding 2 must be smaller than the kernel size 2 along axis 2", "padding");
    check_named(n, xh, "%%r = %s(%%x, kernel=[2, 2], layout=\"NHWC\")",
                "!layout must be \"nchw\" or \"nhwc\", got \"NHWC\"", "layout");
    check_named(n, xh, "%%r = %s(%%x, kernel=[2, 2], layout=[1])", "!attribute 'layout' expects str",
                "layout");
    check_named(n, "%x: f32[8, 8, 3]", "%%r = %s(%%x, kernel=[2, 2], layout=\"nhwc\")",
                "!x must have rank 4 [N, H, W, C], got f32[8, 8, 3]", NULL);
  }
}
END_TEST

/* ---- data movement ------------------------------------------------------------------------ */
static const tcase reshape_cases[] = {
    {"%a: f32[4, 6]", "%r = reshape(%a, shape=[2, 12])", "f32[2, 12]", NULL},
    {"%a: f32[4, 6]", "%r = reshape(%a, shape=[-1, 3])", "f32[8, 3]", NULL},
    {"%a: i8[4, 6]", "%r = reshape(%a, shape=[2, -1, 2])", "i8[2, 6, 2]", NULL},
    {"%a: f32[4, 6]", "%r = reshape(%a, shape=[-1])", "f32[24]", NULL},
    {"%a: f32[]", "%r = reshape(%a, shape=[1, 1])", "f32[1, 1]", NULL},
    {"%a: f32[1, 1]", "%r = reshape(%a, shape=[])", "f32[]", NULL},
    {"%a: f32[B, 6]", "%r = reshape(%a, shape=[B, 2, 3])", "f32[B, 2, 3]", NULL},
    {"%a: f32[B, 6]", "%r = reshape(%a, shape=[-1, 6])", "f32[B, 6]", NULL},
    {"%a: f32[B, T, 4]", "%r = reshape(%a, shape=[4, -1, T])", "f32[4, B, T]", NULL},
    {"%a: f32[2, B, 3]", "%r = reshape(%a, shape=[6, -1])", "f32[6, B]", NULL},
    {"%a: f32[B, T, 4]", "%r = reshape(%a, shape=[T, 2, B, -1])", "f32[T, 2, B, 2]", NULL},
    {"%a: f32[B, T]", "%r = reshape(%a, shape=[T, B])", "f32[T, B]", NULL},
    {"%a: f32[4, 6]", "%r = reshape(%a, shape=[5, 5])",
     "!cannot reshape f32[4, 6] (24 elements) to [5, 5] (25 elements)", "shape="},
    {"%a: f32[4, 6]", "%r = reshape(%a, shape=[-1, 5])",
     "!cannot infer -1 in [-1, 5] for f32[4, 6]: 24 elements are not divisible by 5", "shape="},
    {"%a: f32[4, 6]", "%r = reshape(%a, shape=[-1, -1])", "!more than one -1", "-1])"},
    {"%a: f32[4, 6]", "%r = reshape(%a, shape=[-2, 24])",
     "!'shape' entry 0 is -2; dims must be >= 0 (or -1 once)", "-2,"},
    {"%a: f32[4, 6]", "%r = reshape(%a, shape=[0, 24])", "!cannot reshape f32[4, 6] (24 elements) to [0, 24]", "shape="},
    {"%a: f32[0, 6]", "%r = reshape(%a, shape=[3, 0, 2])", "f32[3, 0, 2]", NULL},
    {"%a: f32[0, 6]", "%r = reshape(%a, shape=[-1, 0])", "!cannot infer -1 in [-1, 0]: the other entries have zero elements", "shape="},
    {"%a: f32[4, 6]", "%r = reshape(%a, shape=[-2, 12])", "!'shape' entry 0 is -2", "-2"},
    {"%a: f32[B, 6]", "%r = reshape(%a, shape=[T, 6])",
     "!cannot reshape f32[B, 6] (6 * B elements) to [T, 6] (6 * T elements)", "shape="},
    {"%a: f32[B, T, 4]", "%r = reshape(%a, shape=[B, -1])",
     "f32[B, _s2]", NULL},
    {"%a: f32[B, T, 4]", "%r = reshape(%a, shape=[-1, 4])", "f32[_s2, 4]", NULL},
    {"%a: f32[B, 4]", "%r = reshape(%a, shape=[T, -1])",
     "!4 * B elements are not divisible by T", "shape="},
    {"%a: f32[4, 6]", "%r = reshape(%a)", "!missing required attribute 'shape'", NULL},
};

/* reshape: products of dims and symbols, -1. */
START_TEST(reshape) { RUN(reshape_cases); }
END_TEST

static const tcase move_cases[] = {
    {"%a: f32[2, 3, 4]", "%r = transpose(%a, perm=[2, 0, 1])", "f32[4, 2, 3]", NULL},
    {"%a: f32[B, T]", "%r = transpose(%a, perm=[1, 0])", "f32[T, B]", NULL},
    {"%a: i32[]", "%r = transpose(%a, perm=[])", "i32[]", NULL},
    {"%a: f32[2, 3, 4]", "%r = transpose(%a, perm=[0, 0, 1])",
     "!perm [0, 0, 1] is not a permutation of 0..2", "0, 1]"},
    {"%a: f32[2, 3]", "%r = transpose(%a, perm=[-1, 0])",
     "!perm [-1, 0] is not a permutation of 0..1", "-1"},
    {"%a: f32[2, 3]", "%r = transpose(%a, perm=[1, 0, 2])",
     "!perm has 3 entries, but the input f32[2, 3] has rank 2", "perm"},
    {"%a: f32[3, 1]", "%r = broadcast(%a, shape=[2, 3, 4])", "f32[2, 3, 4]", NULL},
    {"%a: f32[]", "%r = broadcast(%a, shape=[B])", "f32[B]", NULL},
    {"%a: bool[B, 1]", "%r = broadcast(%a, shape=[B, T])", "bool[B, T]", NULL},
    {"%a: f32[3, 4]", "%r = broadcast(%a, shape=[5, 4])",
     "!cannot broadcast f32[3, 4] to [5, 4]: dim 0 is 3, target 5", "shape="},
    {"%a: f32[3, 4]", "%r = broadcast(%a, shape=[4])",
     "!cannot broadcast f32[3, 4] to [4]: the target rank 1 is smaller", "shape="},
    {"%a: f32[B]", "%r = broadcast(%a, shape=[T])", "!dim 0 is B, target T", "shape="},
    {"%a: f32[2, 3], %b: f32[4, 3]", "%r = concat(%a, %b, axis=0)", "f32[6, 3]", NULL},
    {"%a: f32[2, 3], %b: f32[2, 1], %c: f32[2, 4]", "%r = concat(%a, %b, %c, axis=-1)",
     "f32[2, 8]", NULL},
    {"%a: f32[B, 3], %b: f32[B, 5]", "%r = concat(%a, %b, axis=1)", "f32[B, 8]", NULL},
    {"%a: f32[B, 3]", "%r = concat(%a, axis=0)", "f32[B, 3]", NULL},
    {"%a: f32[2, 3], %b: f32[2, 4]", "%r = concat(%a, %b, axis=0)",
     "!operand 1 is f32[2, 4], which does not match f32[2, 3] outside axis 0", NULL},
    {"%a: f32[2, 3], %b: f32[3]", "%r = concat(%a, %b, axis=1)",
     "!operand 1 is f32[3], which does not match", NULL},
    {"%a: f32[2, 3], %b: f16[2, 3]", "%r = concat(%a, %b, axis=0)",
     "!dtypes differ: operand 0 is f32, operand 1 is f16", NULL},
    {"%a: f32[B, 3], %b: f32[2, 3]", "%r = concat(%a, %b, axis=0)", "f32[_s2, 3]", NULL},
    {"%a: f32[2, 3], %b: f32[2, 3]", "%r = concat(%a, %b)", "!missing required attribute 'axis'",
     NULL},
    {"%a: f32[2, 3], %b: f32[2, 3]", "%r = concat(%a, %b, axis=2)",
     "!axis 2 out of range for rank 2", "axis"},
};

/* transpose, broadcast, concat. */
START_TEST(transpose_broadcast_concat) { RUN(move_cases); }
END_TEST

static const tcase slice_pad_cases[] = {
    {"%a: f32[10, 8]", "%r = slice(%a, start=[2, 0], end=[8, 8])", "f32[6, 8]", NULL},
    {"%a: f32[10, 8]", "%r = slice(%a, start=[2, 0], end=[8, 8], step=[2, 3])", "f32[3, 3]", NULL},
    {"%a: f32[10, 8]", "%r = slice(%a, start=[-3, 0], end=[10, -1])", "f32[3, 7]", NULL},
    {"%a: f32[10, 8]", "%r = slice(%a, start=[-100, 0], end=[100, 4])", "f32[10, 4]", NULL},
    {"%a: f32[10]", "%r = slice(%a, start=[9], end=[10], step=[5])", "f32[1]", NULL},
    {"%a: f32[B, 8]", "%r = slice(%a, start=[0, 2], end=[4611686018427387903, 4])",
     "f32[B, 2]", NULL},
    {"%a: f32[10, 8]", "%r = slice(%a, start=[5, 0], end=[3, 8])", "f32[0, 8]", NULL},
    {"%a: f32[10, 8]", "%r = slice(%a, start=[0, 0], end=[10, 8], step=[1, 0])",
     "!step must be >= 1, got 0 at axis 1", "0])"},
    {"%a: f32[B, 8]", "%r = slice(%a, start=[1, 0], end=[4, 8])", "f32[_s2, 8]", NULL},
    {"%a: f32[B, 8]", "%r = slice(%a, start=[-2, 0], end=[4, 8])",
     "!needs a concrete size for axis 0 (a negative start); bind symbolic dim B", NULL},
    {"%a: f32[10, 8]", "%r = slice(%a, start=[0], end=[10, 8])",
     "!attribute 'start' has 1 entries, expected 2 (one per dim)", "start"},
    {"%a: f32[10, 8]", "%r = slice(%a, start=[0, 0])", "!missing required attribute 'end'", NULL},
    {"%a: f32[2, 3]", "%r = pad(%a, pads=[1, 0, 1, 2])", "f32[4, 5]", NULL},
    {"%a: i32[2, 3]", "%r = pad(%a, pads=[0, 0, 0, 0], value=7)", "i32[2, 3]", NULL},
    {"%a: f32[B, 3]", "%r = pad(%a, pads=[0, 1, 0, 1], value=-inf)", "f32[B, 5]", NULL},
    {"%a: f32[]", "%r = pad(%a, pads=[])", "f32[]", NULL},
    {"%a: f32[2, 3]", "%r = pad(%a, pads=[1, 1])",
     "!'pads' has 2 entries, expected 4 (begin and end for each of 2 dims)", "pads"},
    {"%a: f32[2, 3]", "%r = pad(%a, pads=[0, -1, 0, 0])", "!pads entries must be >= 0, got -1",
     "-1"},
    {"%a: f32[B, 3]", "%r = pad(%a, pads=[1, 0, 0, 0])",
     "!needs a concrete size for axis 0; bind symbolic dim B", NULL},
    {"%a: f32[2]", "%r = pad(%a, pads=[1, 1], value=[0])",
     "!attribute 'value' expects a scalar, got list", "value"},
};

/* slice and pad. */
START_TEST(slice_pad) { RUN(slice_pad_cases); }
END_TEST

static const tcase gather_split_cases[] = {
    {"%a: f32[10, 4], %i: i64[3]", "%r = gather(%a, %i)", "f32[3, 4]", NULL},
    {"%a: f32[2, 10, 4], %i: i32[5, 6]", "%r = gather(%a, %i, axis=1)", "f32[2, 5, 6, 4]", NULL},
    {"%a: f16[B, 10], %i: i64[T]", "%r = gather(%a, %i, axis=-1)", "f16[B, T]", NULL},
    {"%a: f32[10], %i: i64[]", "%r = gather(%a, %i)", "f32[]", NULL},
    {"%a: f32[10, 4], %i: f32[3]", "%r = gather(%a, %i)",
     "!operand %i has dtype f32; expected an index dtype (i32 or i64)", NULL},
    {"%a: f32[10, 4], %i: i64[3]", "%r = gather(%a, %i, axis=2)",
     "!axis 2 out of range for rank 2", "axis"},
    {"%a: f32[2, 2, 2, 2, 2], %i: i64[2, 2, 2, 2, 2]", "%r = gather(%a, %i)",
     "!result rank 9", NULL},
    {"%s: f32[4, 2, 16, 8], %u: f32[2, 2, 3, 8], %p: i32[2]", "%r = cache_write(%s, %u, %p, axis=2)",
     "f32[4, 2, 16, 8]", NULL},
    {"%s: f16[4, T, 8], %u: f16[B, 1, 8], %p: i64[B]", "%r = cache_write(%s, %u, %p, axis=-2)", "f16[4, T, 8]",
     NULL},
    {"%s: f32[4, 16], %u: f32[4, 3], %p: i64[]", "%r = cache_write(%s, %u, %p, axis=1)", "f32[4, 16]", NULL},
    {"%s: f32[4, 16, 8], %u: f16[2, 1, 8], %p: i32[2]", "%r = cache_write(%s, %u, %p, axis=1)",
     "!must have the state's dtype and rank", NULL},
    {"%s: f32[4, 16, 8], %u: f32[2, 1, 9], %p: i32[2]", "%r = cache_write(%s, %u, %p, axis=1)",
     "!update dim 2 is 9, larger than the state's 8", NULL},
    {"%s: f32[4, 16, 8], %u: f32[2, 1, 8], %p: f32[2]", "%r = cache_write(%s, %u, %p, axis=1)",
     "!expected an index dtype", NULL},
    {"%s: f32[4, 16, 8], %u: f32[2, 1, 8], %p: i32[3]", "%r = cache_write(%s, %u, %p, axis=1)",
     "!positions i32[3] must be a scalar or one per update row", NULL},
    {"%s: f32[4, 16, 8], %u: f32[2, 1, 8], %p: i32[2]", "%r = cache_write(%s, %u, %p, axis=0)",
     "!with axis 0 the positions must be a scalar", NULL},
    {"%s: f32[4, 16, 8], %u: f32[2, 1, 8], %p: i32[2]", "%r = cache_write(%s, %u, %p)",
     "!missing required attribute 'axis'", NULL},
    {"%a: f32[4, 6]", "%r, %s = split(%a, axis=1, sizes=[2, 4])", "f32[4, 2], f32[4, 4]", NULL},
    {"%a: f32[B, 6]", "%r, %s, %t = split(%a, axis=-1, sizes=[1, 2, 3])",
     "f32[B, 1], f32[B, 2], f32[B, 3]", NULL},
    {"%a: f32[4, 6]", "%r = split(%a, axis=0, sizes=[4])", "f32[4, 6]", NULL},
    {"%a: f32[4, 6]", "%r, %s = split(%a, axis=1, sizes=[2, 3])",
     "!sizes sum to 5, but axis 1 of f32[4, 6] has size 6", "sizes"},
    {"%a: f32[4, 6]", "%r = split(%a, axis=1, sizes=[3, 3])",
     "!has 1 result, but sizes has 2 entries", NULL},
    {"%a: f32[4, 6]", "%r, %s = split(%a, axis=1, sizes=[0, 6])", "f32[4, 0], f32[4, 6]", NULL},
    {"%a: f32[4, 6]", "%r, %s = split(%a, axis=1, sizes=[-1, 7])",
     "!sizes entries must be >= 0, got -1", "-1,"},
    {"%a: f32[B, 6]", "%r, %s = split(%a, axis=0, sizes=[1, 1])",
     "!needs a concrete size for axis 0; bind symbolic dim B", NULL},
    {"%a: f32[4, 6]", "%r, %s = split(%a, axis=2, sizes=[3, 3])",
     "!axis 2 out of range for rank 2", "axis"},
};

/* gather and split. */
START_TEST(gather_split) { RUN(gather_split_cases); }
END_TEST

/* Results whose element count passes 2^62 are rejected. */
static const tcase overflow_cases[] = {
    {"%a: f32[2147483648, 2147483648]", "%r = broadcast(%a, shape=[2, 2147483648, 2147483648])",
     "!element count of f32[2, 2147483648, 2147483648] overflows 2^62", NULL},
    {"%a: f32[1073741824, 1], %b: f32[1, 1073741824]", "%r = mul(%a, %b)", "f32[1073741824, 1073741824]",
     NULL},
    {"%a: f32[2147483648, 2147483648], %i: i64[2147483648, 4]", "%r = gather(%a, %i, axis=1)",
     "!element count of f32[2147483648, 2147483648, 4] overflows", NULL},
    {"%a: f32[4611686018427387903]", "%r = pad(%a, pads=[1, 1])", "!result dim 0 overflows 2^62",
     NULL},
};

/* Element counts past 2^62. */
START_TEST(overflow) { RUN(overflow_cases); }
END_TEST

/* ---- coverage: every op in ops.def has a passing and a rejected case ---------------------- */
START_TEST(all_ops_covered) {
  static const struct {
    const tcase *cs;
    size_t n;
  } tables[] = {
#define T(x) {x, sizeof x / sizeof x[0]}
      T(source_cases), T(unary_cases), T(binary_cases), T(argmax_cases), T(norm_cases),
      T(matmul_cases), T(conv_cases), T(reshape_cases), T(move_cases), T(slice_pad_cases),
      T(gather_split_cases),
#undef T
  };
  int ok[GC_OP_COUNT_] = {0}, bad[GC_OP_COUNT_] = {0};
  for (size_t t = 0; t < sizeof tables / sizeof *tables; t++)
    for (size_t i = 0; i < tables[t].n; i++) {
      char name[64];
      stmt_op(tables[t].cs[i].stmt, name, sizeof name);
      int opc = gc_opcode_from_name(name, strlen(name));
      ck_assert_msg(opc >= 0, "unknown op %s", name);
      if (tables[t].cs[i].want[0] == '!')
        bad[opc]++;
      else
        ok[opc]++;
    }
  /* Families tested by loops over names above, and param's rejected case. */
  const char *const *lists[] = {num_unary, float_unary, num_binary, cmp_binary};
  size_t lens[] = {3, sizeof float_unary / sizeof *float_unary, 6, 6};
  for (int l = 0; l < 4; l++)
    for (size_t i = 0; i < lens[l]; i++) {
      int opc = gc_opcode_from_name(lists[l][i], strlen(lists[l][i]));
      ck_assert_int_ge(opc, 0);
      ok[opc]++, bad[opc]++;
    }
  const char *const looped[] = {"reduce_sum", "reduce_max", "reduce_min", "reduce_mean",
                                "max_pool2d", "avg_pool2d"};
  for (int i = 0; i < 6; i++) {
    int opc = gc_opcode_from_name(looped[i], strlen(looped[i]));
    ok[opc]++, bad[opc]++;
  }
  bad[GC_OP_PARAM]++; /* param_rejects_bad_name */
  bad[GC_OP_STATE]++; /* the same rule as param (gc_infer_param) */
  for (int i = 0; i < GC_OP_COUNT_; i++) {
    ck_assert_msg(ok[i] > 0, "op %s has no passing inference case", gc_op_infos[i].name);
    ck_assert_msg(bad[i] > 0, "op %s has no rejected inference case", gc_op_infos[i].name);
  }
}
END_TEST

/* gc_op_result_count: N_OUT from the table, split from its sizes. */
START_TEST(result_count) {
  tcase tc = {"%a: f32[4, 6]", "%r, %s, %t = split(%a, axis=1, sizes=[2, 2, 2])",
              "f32[4, 2], f32[4, 2], f32[4, 2]", NULL};
  check_case(&tc);
  gc_module *m = gc_module_new("x");
  gc_graph *g = gc_graph_new(m, "t", (gc_loc){0, 0});
  gc_op *op = gc_op_new(g, GC_OP_SPLIT, 0, NULL, 0, NULL, (gc_loc){0, 0});
  ck_assert_int_eq(gc_op_result_count(op), -1);
  gc_attr items[3] = {{.kind = GC_ATTR_INT, .u.i = 1}, {.kind = GC_ATTR_INT, .u.i = 2},
                      {.kind = GC_ATTR_INT, .u.i = 3}};
  gc_named_attr na = {.name = "sizes", .val = {.kind = GC_ATTR_LIST, .u.list = {items, 3}}};
  gc_op_set_attrs(g, op, 1, &na);
  ck_assert_int_eq(gc_op_result_count(op), 3);
  items[1].kind = GC_ATTR_FLOAT;
  ck_assert_int_eq(gc_op_result_count(op), -1);
  gc_op *add = gc_op_new(g, GC_OP_ADD, 0, NULL, 0, NULL, (gc_loc){0, 0});
  ck_assert_int_eq(gc_op_result_count(add), 1);
  gc_module_free(m);
}
END_TEST

/* gc_infer_op checks arity itself (callers other than the verifier). */
START_TEST(infer_checks_arity) {
  gc_module *m = gc_module_new("x");
  gc_graph *g = gc_graph_new(m, "t", (gc_loc){1, 1});
  gc_type t = {.dtype = GRAPHC_DTYPE_F32, .rank = 1, .dims = {4}};
  gc_value *a = gc_graph_add_arg(g, "a", &t, (gc_loc){1, 5});
  gc_op *op = gc_op_new(g, GC_OP_ADD, 1, &a, 1, (const char *[]){"r"}, (gc_loc){2, 3});
  gc_diags d;
  gc_diags_init(&d, "x", NULL, 0);
  gc_type out;
  ck_assert_int_eq(gc_infer_op(g, op, &out, &d), 0);
  ck_assert_str_eq(d.items[0].msg, "add: expects 2 operands, got 1");
  gc_value *two[2] = {a, NULL};
  gc_op *op2 = gc_op_new(g, GC_OP_ADD, 2, two, 1, (const char *[]){"s"}, (gc_loc){3, 3});
  ck_assert_int_eq(gc_infer_op(g, op2, &out, &d), 0);
  ck_assert_str_eq(d.items[1].msg, "add: operand 1 is missing");
  gc_diags_free(&d);
  gc_module_free(m);
}
END_TEST

/* Build the suite. */
static Suite *infer_suite(void) {
  Suite *s = suite_create("infer");
  TCase *tc = tcase_create("ops");
  tcase_add_test(tc, sources);
  tcase_add_test(tc, param_rejects_bad_name);
  tcase_add_test(tc, unary_numeric);
  tcase_add_test(tc, unary_float);
  tcase_add_test(tc, unary_other);
  tcase_add_test(tc, binary_numeric);
  tcase_add_test(tc, binary_compare);
  tcase_add_test(tc, binary_other);
  tcase_add_test(tc, reductions);
  tcase_add_test(tc, argmax);
  tcase_add_test(tc, normalizations);
  tcase_add_test(tc, matmul);
  tcase_add_test(tc, conv2d);
  tcase_add_test(tc, pool2d);
  tcase_add_test(tc, reshape);
  tcase_add_test(tc, transpose_broadcast_concat);
  tcase_add_test(tc, slice_pad);
  tcase_add_test(tc, gather_split);
  tcase_add_test(tc, overflow);
  tcase_add_test(tc, all_ops_covered);
  tcase_add_test(tc, result_count);
  tcase_add_test(tc, infer_checks_arity);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run_suite(infer_suite()); }
