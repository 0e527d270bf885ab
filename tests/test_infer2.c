/* test_infer2.c - the verifier (ir/verify.c) and specialization of symbolic
 * dims (ir/specialize.c). Op-by-op inference is in test_infer.c.
 *
 * Most graphs come from text through gc_parse; structural errors the parser
 * cannot produce (operands used before their definition, missing operands,
 * zero dims, rank 9) are built directly with gc_op_new.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/parser.h"
#include "ir/ir.h"
#include "tests/testutil.h"

/* A parsed module with its diagnostics. */
typedef struct parsed {
  gc_module *m;
  gc_diags d;
  char *src;
} parsed;

/* Parse `src` (must parse without errors). */
static parsed parse(const char *src) {
  parsed p;
  p.src = strdup(src);
  gc_diags_init(&p.d, "t.graph", p.src, strlen(p.src));
  p.m = gc_parse("t.graph", p.src, strlen(p.src), &p.d);
  if (!p.m) {
    char *r = gc_diags_render(&p.d);
    ck_abort_msg("does not parse:\n%s\n%s", src, r);
  }
  return p;
}

/* Free a parsed module. */
static void done(parsed *p) {
  gc_module_free(p->m);
  gc_diags_free(&p->d);
  free(p->src);
}

/* Index of the first diagnostic at level lvl containing `sub`, or -1. */
static int find_diag(const gc_diags *d, gc_diag_level lvl, const char *sub) {
  for (int i = 0; i < d->n; i++)
    if (d->items[i].level == lvl && strstr(d->items[i].msg, sub)) return i;
  return -1;
}

/* Assert an error containing `sub` at line:col. */
static void want_error(const gc_diags *d, int line, int col, const char *sub) {
  int i = find_diag(d, GC_DIAG_ERROR, sub);
  if (i < 0) {
    char *r = gc_diags_render(d);
    ck_abort_msg("no error containing '%s'; got:\n%s", sub, r ? r : "");
  }
  ck_assert_msg(d->items[i].loc.line == line && d->items[i].loc.col == col,
                "'%s' at %d:%d, want %d:%d", d->items[i].msg, d->items[i].loc.line,
                d->items[i].loc.col, line, col);
}

/* Verify a text module; returns the verifier's error count. */
static int verify_text(parsed *p, const char *src) {
  *p = parse(src);
  int n = gc_verify_module(p->m, &p->d);
  ck_assert_int_eq(n, p->d.n_errors);
  return n;
}

/* Find a value by name among args and op results. */
static gc_value *find_value(gc_graph *g, const char *name) {
  for (int i = 0; i < g->n_args; i++)
    if (strcmp(g->args[i]->name, name) == 0) return g->args[i];
  for (gc_op *op = g->first; op; op = op->next)
    for (int i = 0; i < op->n_results; i++)
      if (strcmp(op->results[i]->name, name) == 0) return op->results[i];
  ck_abort_msg("no value %s", name);
  return NULL;
}

/* Type of a value as text. */
static char *type_of(gc_graph *g, const char *name) {
  gc_sbuf b = {0};
  gc_type_print(&b, &find_value(g, name)->type, g->sym_names);
  return gc_sbuf_take(&b);
}

/* Assert the type of a value. */
static void want_type(gc_graph *g, const char *name, const char *want) {
  char *t = type_of(g, name);
  ck_assert_msg(strcmp(t, want) == 0, "%%%s: %s, want %s", name, t, want);
  free(t);
}

static const char *const MLP =
    "version 1;\n"
    "graph @mlp<B>(%x: f32[B, 784]) -> (f32[B, 10], f32[B, 2, 5]) {\n"
    "  param %w1: f32[784, 128] = \"fc1.weight\";\n"
    "  param %b1: f32[128] = \"fc1.bias\";\n"
    "  param %w2: f32[128, 10] = \"fc2.weight\";\n"
    "  %h = matmul(%x, %w1) : f32[B, 128];\n"
    "  %hb = add(%h, %b1);\n"
    "  %a = gelu(%hb, approximate=\"tanh\");\n"
    "  %o = matmul(%a, %w2);\n"
    "  %s = softmax(%o, axis=-1);\n"
    "  %r = reshape(%s, shape=[B, 2, -1]);\n"
    "  return %s, %r;\n"
    "}\n";

/* A valid graph verifies cleanly and untyped results get their types. */
START_TEST(valid_graph_gets_types) {
  parsed p;
  ck_assert_int_eq(verify_text(&p, MLP), 0);
  ck_assert_int_eq(p.d.n, 0); /* no warnings either */
  gc_graph *g = p.m->graphs[0];
  want_type(g, "hb", "f32[B, 128]");
  want_type(g, "a", "f32[B, 128]");
  want_type(g, "o", "f32[B, 10]");
  want_type(g, "r", "f32[B, 2, 5]");
  ck_assert_int_eq(find_value(g, "hb")->def->typed, 0);
  /* Verifying again is stable (types stored, no duplicates). */
  ck_assert_int_eq(gc_verify_module(p.m, &p.d), 0);
  done(&p);
}
END_TEST

/* Declared result types must equal the inferred ones. */
START_TEST(declared_type_mismatch) {
  parsed p;
  ck_assert_int_eq(verify_text(&p,
                               "version 1;\n"
                               "graph @g(%x: f32[4, 6]) -> (f32[4, 6]) {\n"
                               "  %h = add(%x, %x) : f32[4, 5];\n"
                               "  %k, %l = split(%x, axis=1, sizes=[2, 4]) : f32[4, 2], f32[4, 3];\n"
                               "  %m = concat(%k, %l, axis=1);\n"
                               "  return %x;\n"
                               "}\n"),
                   2);
  want_error(&p.d, 3, 3, "add: declared type f32[4, 5] does not match inferred f32[4, 6]");
  want_error(&p.d, 4, 3, "split: declared type f32[4, 3] of result 1 (%l) does not match inferred f32[4, 4]");
  done(&p);
}
END_TEST

/* The ATTRS schema: unknown, missing, wrong kind, symbols. */
START_TEST(attribute_schema) {
  parsed p;
  ck_assert_int_eq(
      verify_text(&p,
                  "version 1;\n"
                  "graph @g<B>(%x: f32[B, 6], %y: f32[2, 3], %g3: f32[3]) -> (f32[B, 6]) {\n"
                  "  %a = reduce_sum(%x, axis=[1]);\n"
                  "  %b = add(%x, %x, axis=1);\n"
                  "  %c = cast(%x);\n"
                  "  %d = reduce_sum(%x, keepdims=1);\n"
                  "  %e = transpose(%y, perm=[B, 0]);\n"
                  "  %f = clamp(%x, min=[1]);\n"
                  "  %g = const(value=\"x\");\n"
                  "  %h = softmax(%x, axis=1.0);\n"
                  "  %i = reshape(%x, shape=[B, 3, 2]);\n"
                  "  %j = rmsnorm(%y, %g3, eps=1);\n"
                  "  %k = const(value=[[1.0, 2.0, 3.0]], shape=[3]);\n"
                  "  %l = gelu(%x, approx=\"tanh\");\n"
                  "  %m = iota(shape=[2], dtype=\"f32\");\n"
                  "  return %x;\n"
                  "}\n"),
      11);
  gc_diags *d = &p.d;
  want_error(d, 3, 23,
             "reduce_sum: unknown attribute 'axis'; did you mean 'axes'? (valid: axes, keepdims)");
  want_error(d, 4, 20, "add: unknown attribute 'axis'; add takes no attributes");
  want_error(d, 5, 3, "cast: missing required attribute 'to' (dtype)");
  want_error(d, 6, 23, "reduce_sum: attribute 'keepdims' expects bool, got int");
  want_error(d, 7, 28,
             "transpose: attribute 'perm' expects a list of ints, got a list containing symbolic "
             "dim");
  want_error(d, 8, 18, "clamp: attribute 'min' expects a scalar (int, float or bool), got list");
  want_error(d, 9, 14, "const: attribute 'value' expects a scalar or a list of scalars, got str");
  want_error(d, 10, 20, "softmax: attribute 'axis' expects int, got float");
  want_error(d, 13, 21, "const: attribute 'value' must be a scalar or a flat list of scalars");
  want_error(d, 14, 17, "gelu: unknown attribute 'approx' (valid: approximate)");
  want_error(d, 15, 24, "iota: attribute 'dtype' expects dtype, got str");
  done(&p);
}
END_TEST

/* Attributes built by code: a duplicate name, and a dims entry that is too large. */
START_TEST(attribute_duplicate) {
  gc_module *m = gc_module_new("x");
  gc_graph *g = gc_graph_new(m, "t", (gc_loc){1, 1});
  gc_type t = {.dtype = GRAPHC_DTYPE_F32, .rank = 2, .dims = {2, 3}};
  gc_value *x = gc_graph_add_arg(g, "x", &t, (gc_loc){1, 10});
  gc_op *op = gc_op_new(g, GC_OP_SOFTMAX, 1, &x, 1, (const char *[]){"s"}, (gc_loc){2, 3});
  gc_named_attr na[2] = {{.name = "axis", .val = {.kind = GC_ATTR_INT, .loc = {2, 20}, .u.i = 0}},
                         {.name = "axis", .val = {.kind = GC_ATTR_INT, .loc = {2, 28}, .u.i = 1}}};
  gc_op_set_attrs(g, op, 2, na);
  gc_attr big = {.kind = GC_ATTR_INT, .loc = {3, 30}, .u.i = GC_DIM_SYM(5)};
  gc_named_attr sa = {.name = "shape", .val = {.kind = GC_ATTR_LIST, .loc = {3, 20}, .u.list = {&big, 1}}};
  gc_op *r = gc_op_new(g, GC_OP_RESHAPE, 1, &x, 1, (const char *[]){"r"}, (gc_loc){3, 3});
  gc_op_set_attrs(g, r, 1, &sa);
  g->n_outputs = 1;
  g->outputs = &op->results[0];
  g->n_result_types = 1;
  g->result_types = &t;
  gc_diags d;
  gc_diags_init(&d, "x", NULL, 0);
  ck_assert_int_eq(gc_verify_graph(g, &d), 2);
  want_error(&d, 2, 28, "softmax: duplicate attribute 'axis'");
  want_error(&d, 3, 30, "reshape: attribute 'shape' entry 0 is 4611686018427387909, too large");
  gc_diags_free(&d);
  gc_module_free(m);
}
END_TEST

/* Operand counts (MIN_IN..MAX_IN) and result counts. */
START_TEST(arity_and_result_count) {
  parsed p;
  ck_assert_int_eq(verify_text(&p,
                               "version 1;\n"
                               "graph @g(%x: f32[4, 6]) -> (f32[4, 6]) {\n"
                               "  %a = add(%x);\n"
                               "  %b = concat(axis=0);\n"
                               "  %c = layernorm(%x, %x);\n"
                               "  %d, %e = relu(%x);\n"
                               "  %f, %g, %h = split(%x, axis=1, sizes=[3, 3]);\n"
                               "  %i = neg(%x, %x);\n"
                               "  return %x;\n"
                               "}\n"),
                   6);
  want_error(&p.d, 3, 3, "add: expects 2 operands, got 1");
  want_error(&p.d, 4, 3, "concat: expects at least 1 operand, got 0");
  want_error(&p.d, 5, 3, "layernorm: expects 3 operands, got 2");
  want_error(&p.d, 6, 3, "relu: has 2 results, expected 1");
  want_error(&p.d, 7, 3, "split: has 3 results, but sizes has 2 entries");
  want_error(&p.d, 8, 3, "neg: expects 1 operand, got 2");
  done(&p);
}
END_TEST

/* One mistake, one error: uses of a failed op are not inferred; other ops still are. */
START_TEST(no_cascades) {
  parsed p;
  ck_assert_int_eq(verify_text(&p,
                               "version 1;\n"
                               "graph @g(%x: f32[4, 6], %y: f16[4, 6]) -> (f32[4, 6], f32[4]) {\n"
                               "  %a = add(%x, %y);\n"
                               "  %b = mul(%a, %a);\n"
                               "  %c = matmul(%b, %x);\n"
                               "  %d = softmax(%x, axis=5);\n"
                               "  %e = reduce_sum(%c, axes=[0]);\n"
                               "  return %b, %e;\n"
                               "}\n"),
                   2);
  want_error(&p.d, 3, 3, "add: dtypes differ: f32 and f16");
  want_error(&p.d, 6, 20, "softmax: axis 5 out of range for rank 2");
  done(&p);
}
END_TEST

/* Return values against the signature: count and types. */
START_TEST(signature_checks) {
  parsed p;
  ck_assert_int_eq(verify_text(&p,
                               "version 1;\n"
                               "graph @g(%x: f32[4, 6]) -> (f32[4, 6], f32[6]) {\n"
                               "  %a = relu(%x);\n"
                               "  return %a;\n"
                               "}\n"
                               "\n"
                               "graph @h(%x: f32[4, 6]) -> (f32[4, 5]) {\n"
                               "  %a = relu(%x);\n"
                               "  return %a;\n"
                               "}\n"
                               "\n"
                               "graph @k(%x: f32[4, 6]) -> (f16[4, 6]) {\n"
                               "  return %x;\n"
                               "}\n"),
                   3);
  want_error(&p.d, 4, 3, "@g returns 1 value, but its signature declares 2 results");
  want_error(&p.d, 9, 3,
             "returned value 0 (%a) has type f32[4, 6], but the signature declares f32[4, 5]");
  want_error(&p.d, 13, 3,
             "returned value 0 (%x) has type f32[4, 6], but the signature declares f16[4, 6]");
  done(&p);
}
END_TEST

/* Unused results are warnings, said once, not errors. */
START_TEST(unused_values_warn) {
  parsed p;
  ck_assert_int_eq(verify_text(&p,
                               "version 1;\n"
                               "graph @g(%x: f32[4, 6], %unused_arg: f32[2]) -> (f32[4, 6]) {\n"
                               "  param %w: f32[6] = \"w\";\n"
                               "  %a = relu(%x);\n"
                               "  %t = exp(%a);\n"
                               "  %p, %q = split(%x, axis=1, sizes=[3, 3]);\n"
                               "  %r = add(%p, %p);\n"
                               "  return %a;\n"
                               "}\n"),
                   0);
  ck_assert_int_eq(p.d.n_errors, 0);
  ck_assert_int_eq(p.d.n, 4);
  const char *names[] = {"value %w is never used", "value %t is never used",
                         "value %q is never used", "value %r is never used"};
  int lines[] = {3, 5, 6, 7}, cols[] = {9, 3, 7, 3};
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(p.d.items[i].level, GC_DIAG_WARNING);
    ck_assert_str_eq(p.d.items[i].msg, names[i]);
    ck_assert_int_eq(p.d.items[i].loc.line, lines[i]);
    ck_assert_int_eq(p.d.items[i].loc.col, cols[i]);
  }
  char *r = gc_diags_render(&p.d);
  ck_assert_ptr_nonnull(strstr(r, "t.graph:5:3: warning: value %t is never used"));
  free(r);
  /* Verifying again (after binding, after passes) does not repeat them. */
  ck_assert_int_eq(gc_verify_module(p.m, &p.d), 0);
  ck_assert_int_eq(p.d.n, 4);
  done(&p);
}
END_TEST

/* Argument and param types: element counts within 2^62. */
START_TEST(type_limits) {
  parsed p;
  ck_assert_int_eq(
      verify_text(&p,
                  "version 1;\n"
                  "graph @g(%x: f32[2147483648, 2147483648, 2], %y: f32[2147483648, 2147483648]) "
                  "-> (f32[2]) {\n"
                  "  param %w: f32[4294967296, 4294967296] = \"w\";\n"
                  "  %z = relu(%x);\n"
                  "  %v = relu(%y);\n"
                  "  %u = reduce_sum(%w);\n"
                  "  return %z;\n"
                  "}\n"),
      2);
  want_error(&p.d, 2, 10,
             "argument type f32[2147483648, 2147483648, 2]: element count overflows 2^62");
  want_error(&p.d, 3, 9, "type f32[4294967296, 4294967296]: element count overflows 2^62");
  done(&p);
}
END_TEST

/* Graphs built by code: bad structure the parser never produces. */
START_TEST(structural_errors) {
  gc_module *m = gc_module_new("x");
  gc_graph *g = gc_graph_new(m, "t", (gc_loc){1, 1});
  gc_type t = {.dtype = GRAPHC_DTYPE_F32, .rank = 2, .dims = {2, 3}};
  gc_type zero = {.dtype = GRAPHC_DTYPE_F32, .rank = 2, .dims = {2, -3}};
  gc_type r9 = {.dtype = GRAPHC_DTYPE_F32, .rank = 9};
  gc_type bad_sym = {.dtype = GRAPHC_DTYPE_F32, .rank = 1, .dims = {GC_DIM_SYM(2)}};
  gc_value *x = gc_graph_add_arg(g, "x", &t, (gc_loc){1, 10});
  gc_graph_add_arg(g, "z", &zero, (gc_loc){1, 20});
  gc_graph_add_arg(g, "n", &r9, (gc_loc){1, 30});
  gc_graph_add_arg(g, "s", &bad_sym, (gc_loc){1, 40});
  gc_op *a = gc_op_new(g, GC_OP_RELU, 1, &x, 1, (const char *[]){"a"}, (gc_loc){2, 3});
  gc_op *b = gc_op_new(g, GC_OP_EXP, 1, &a->results[0], 1, (const char *[]){"b"}, (gc_loc){3, 3});
  /* Move b before a: %a is used before it is defined. */
  gc_op_remove(g, b);
  gc_op_insert_before(g, b, a);
  gc_value *ops2[2] = {x, NULL};
  gc_op *c = gc_op_new(g, GC_OP_ADD, 2, ops2, 1, (const char *[]){"c"}, (gc_loc){4, 3});
  gc_op *e = gc_op_new(g, GC_OP_NEG, 1, &x, 1, (const char *[]){"e"}, (gc_loc){5, 3});
  e->results[0] = a->results[0]; /* a value defined by another op */
  g->n_outputs = 1;
  g->outputs = &c->results[0];
  g->n_result_types = 1;
  g->result_types = &t;
  gc_diags d;
  gc_diags_init(&d, "x", NULL, 0);
  ck_assert_int_eq(gc_verify_graph(g, &d), 6);
  want_error(&d, 1, 20, "argument type f32[2, -3] has dim 1 = -3; dims must be >= 0");
  want_error(&d, 1, 30, "argument type has rank 9; the maximum rank is 8");
  want_error(&d, 1, 40, "argument type: dim 0 names symbolic dim #2, but @t declares 0");
  want_error(&d, 3, 3, "exp: operand 0 (%a) is not defined before this use");
  want_error(&d, 4, 3, "add: operand 1 is missing");
  want_error(&d, 5, 3, "neg: result 0 is not a value defined by this op");
  gc_diags_free(&d);
  gc_module_free(m);
}
END_TEST

/* Graph names are unique in a module. */
START_TEST(duplicate_graph_names) {
  gc_module *m = gc_module_new("x");
  gc_graph *g1 = gc_graph_new(m, "f", (gc_loc){1, 7});
  gc_graph *g2 = gc_graph_new(m, "f", (gc_loc){5, 7});
  (void)g1, (void)g2;
  gc_diags d;
  gc_diags_init(&d, "x", NULL, 0);
  ck_assert_int_eq(gc_verify_module(m, &d), 1);
  want_error(&d, 5, 7, "graph @f is defined more than once");
  gc_diags_free(&d);
  gc_module_free(m);
}
END_TEST

/* ---- specialization ---------------------------------------------------------------------- */
START_TEST(specialize_binds_everything) {
  parsed p;
  ck_assert_int_eq(verify_text(&p, MLP), 0);
  gc_graph *g = p.m->graphs[0];
  g->sym_values[0] = 3;
  ck_assert_int_eq(gc_graph_specialize(g, &p.d), 0);
  /* Types everywhere, including declared ones and the signature. */
  char *x = type_of(g, "x");
  ck_assert_str_eq(x, "f32[3, 784]");
  free(x);
  want_type(g, "h", "f32[3, 128]");
  want_type(g, "r", "f32[3, 2, 5]");
  ck_assert_int_eq(g->result_types[1].dims[0], 3);
  /* The dims attribute of the reshape. */
  const gc_attr *sh = gc_op_attr(find_value(g, "r")->def, "shape");
  ck_assert_int_eq(sh->u.list.items[0].u.i, 3);
  ck_assert_int_eq(sh->u.list.items[2].u.i, -1);
  for (gc_op *op = g->first; op; op = op->next)
    for (int i = 0; i < op->n_results; i++)
      ck_assert(gc_type_is_concrete(&op->results[i]->type));
  ck_assert_int_eq(gc_verify_graph(g, &p.d), 0);
  want_type(g, "o", "f32[3, 10]");
  done(&p);
}
END_TEST

/* Unbound symbols are errors naming them; nothing is substituted. */
START_TEST(specialize_unbound) {
  parsed p;
  ck_assert_int_eq(verify_text(&p,
                               "version 1;\n"
                               "graph @g<B, T, H>(%x: f32[B, T, H]) -> (f32[B, T, H]) {\n"
                               "  return %x;\n"
                               "}\n"),
                   0);
  gc_graph *g = p.m->graphs[0];
  g->sym_values[1] = 5;
  ck_assert_int_eq(gc_graph_specialize(g, &p.d), 2);
  want_error(&p.d, 2, 7, "symbolic dim B is not bound; use --bind B=N");
  ck_assert_int_ge(find_diag(&p.d, GC_DIAG_ERROR, "symbolic dim H is not bound; use --bind H=N"), 0);
  /* Nothing substituted on errors. */
  want_type(g, "x", "f32[B, T, H]");
  ck_assert_int_eq(p.d.status, GRAPHC_STATUS_VERIFY_ERROR);
  done(&p);
}
END_TEST

/* Concat and slice on symbolic dims give derived symbols; overflow shows up after binding. */
START_TEST(specialize_then_verify) {
  parsed p;
  const char *src =
      "version 1;\n"
      "graph @g<B, N>(%x: f32[B, 4], %y: f32[2, 4], %z: f32[N, N]) -> (f32[B, 4]) {\n"
      "  %c = concat(%x, %y, axis=0);\n"
      "  %s = slice(%c, start=[1, 0], end=[-1, 4]);\n"
      "  %w = reshape(%z, shape=[N, N]);\n"
      "  return %s;\n"
      "}\n";
  ck_assert_int_eq(verify_text(&p, src), 0);
  gc_graph *g = p.m->graphs[0];
  want_type(g, "c", "f32[_s2, 4]"); /* _s2 = B + 2; the slice is B again */
  want_type(g, "s", "f32[B, 4]");
  g->sym_values[0] = 6;
  g->sym_values[1] = INT64_C(1) << 32;
  ck_assert_int_eq(gc_graph_specialize(g, &p.d), 0);
  gc_diags d2;
  gc_diags_init(&d2, "t.graph", p.src, strlen(p.src));
  ck_assert_int_eq(gc_verify_graph(g, &d2), 1);
  want_type(g, "c", "f32[8, 4]");
  want_type(g, "s", "f32[6, 4]");
  want_error(&d2, 2, 46, "argument type f32[4294967296, 4294967296]: element count overflows");
  gc_diags_free(&d2);
  done(&p);
}
END_TEST

/* Bound values must be below 2^62. */
START_TEST(specialize_rejects_huge_binding) {
  parsed p;
  ck_assert_int_eq(verify_text(&p,
                               "version 1;\n"
                               "graph @g<B>(%x: f32[B]) -> (f32[B]) {\n"
                               "  return %x;\n"
                               "}\n"),
                   0);
  p.m->graphs[0]->sym_values[0] = INT64_C(1) << 62;
  ck_assert_int_eq(gc_graph_specialize(p.m->graphs[0], &p.d), 1);
  want_error(&p.d, 2, 7, "symbolic dim B is bound to 4611686018427387904, which is too large");
  done(&p);
}
END_TEST

/* Build the suite. */
static Suite *verify_suite(void) {
  Suite *s = suite_create("verify");
  TCase *tc = tcase_create("verify");
  tcase_add_test(tc, valid_graph_gets_types);
  tcase_add_test(tc, declared_type_mismatch);
  tcase_add_test(tc, attribute_schema);
  tcase_add_test(tc, attribute_duplicate);
  tcase_add_test(tc, arity_and_result_count);
  tcase_add_test(tc, no_cascades);
  tcase_add_test(tc, signature_checks);
  tcase_add_test(tc, unused_values_warn);
  tcase_add_test(tc, type_limits);
  tcase_add_test(tc, structural_errors);
  tcase_add_test(tc, duplicate_graph_names);
  suite_add_tcase(s, tc);
  TCase *ts = tcase_create("specialize");
  tcase_add_test(ts, specialize_binds_everything);
  tcase_add_test(ts, specialize_unbound);
  tcase_add_test(ts, specialize_then_verify);
  tcase_add_test(ts, specialize_rejects_huge_binding);
  suite_add_tcase(s, ts);
  return s;
}

int main(void) { return tu_run_suite(verify_suite()); }
