/* test_frontend.c - lexer, parser and printer: tokens and positions, every grammar
 * construct, error messages with line:col, and print -> parse -> print round trips
 * for every .graph file under examples/ and tests/ (except tests/errors/), which
 * gc_module_clone must also reproduce exactly. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "frontend/lexer.h"
#include "frontend/parser.h"
#include "ir/ir.h"
#include "testutil.h"

/* ---- helpers ------------------------------------------------------------------------ */
/* Lex all of `src` into toks (at most max); returns the count including EOF. */
static int lex_all(const char *src, gc_token *toks, int max, gc_diags *d) {
  gc_lexer lx;
  gc_lex_init(&lx, src, strlen(src), d);
  int n = 0;
  for (;;) {
    gc_token t = gc_lex_next(&lx);
    ck_assert_int_lt(n, max);
    toks[n++] = t;
    if (t.kind == GC_TOK_EOF) return n;
  }
}

/* Parse text that must be valid; fails the test with the rendered diagnostics. */
static gc_module *parse_ok(const char *src) {
  gc_diags d;
  gc_diags_init(&d, "test.graph", src, strlen(src));
  gc_module *m = gc_parse("test.graph", src, strlen(src), &d);
  char *r = gc_diags_render(&d);
  ck_assert_msg(m != NULL && d.n_errors == 0, "unexpected errors:\n%s", r);
  free(r);
  gc_diags_free(&d);
  return m;
}

/* Print a module to a malloc'd string. */
static char *print_module(const gc_module *m) {
  gc_sbuf b = {0};
  gc_print_module(&b, m);
  char *s = gc_sbuf_take(&b);
  ck_assert_ptr_nonnull(s);
  return s;
}

/* Parse text that must fail; returns the rendered diagnostics and the error count. */
static char *parse_fail(const char *src, int *n_errors) {
  gc_diags d;
  gc_diags_init(&d, "t.graph", src, strlen(src));
  gc_module *m = gc_parse("t.graph", src, strlen(src), &d);
  char *r = gc_diags_render(&d);
  ck_assert_msg(m == NULL, "parse succeeded but should fail:\n%s", src);
  ck_assert_int_gt(d.n_errors, 0);
  ck_assert_int_eq(d.status, GRAPHC_STATUS_SYNTAX_ERROR);
  if (n_errors) *n_errors = d.n_errors;
  gc_diags_free(&d);
  return r;
}

/* The n-th op of g in program order (fails the test when missing). */
static const gc_op *nth_op(const gc_graph *g, int n) {
  const gc_op *op = g->first;
  while (op && n--) op = op->next;
  ck_assert_ptr_nonnull(op);
  return op;
}

/* ---- lexer ------------------------------------------------------------------------------ */
START_TEST(lex_tokens_and_positions) {
  const char *src =
      "version 1; # comment\n"
      "graph @g<B>(%x: f32[B, 2]) -> (f32[]) {\n"
      "  %0 = f(a=-1.5e3, b=\"s\", c=[1]);\n"
      "}";
  static const struct {
    gc_tok_kind k;
    const char *text;
    int line, col;
  } want[] = {
      {GC_TOK_IDENT, "version", 1, 1}, {GC_TOK_INT, "1", 1, 9},       {GC_TOK_SEMI, ";", 1, 10},
      {GC_TOK_IDENT, "graph", 2, 1},   {GC_TOK_GNAME, "@g", 2, 7},    {GC_TOK_LT, "<", 2, 9},
      {GC_TOK_IDENT, "B", 2, 10},      {GC_TOK_GT, ">", 2, 11},       {GC_TOK_LPAREN, "(", 2, 12},
      {GC_TOK_VALUE, "%x", 2, 13},     {GC_TOK_COLON, ":", 2, 15},    {GC_TOK_IDENT, "f32", 2, 17},
      {GC_TOK_LBRACKET, "[", 2, 20},   {GC_TOK_IDENT, "B", 2, 21},    {GC_TOK_COMMA, ",", 2, 22},
      {GC_TOK_INT, "2", 2, 24},        {GC_TOK_RBRACKET, "]", 2, 25}, {GC_TOK_RPAREN, ")", 2, 26},
      {GC_TOK_ARROW, "->", 2, 28},     {GC_TOK_LPAREN, "(", 2, 31},   {GC_TOK_IDENT, "f32", 2, 32},
      {GC_TOK_LBRACKET, "[", 2, 35},   {GC_TOK_RBRACKET, "]", 2, 36}, {GC_TOK_RPAREN, ")", 2, 37},
      {GC_TOK_LBRACE, "{", 2, 39},     {GC_TOK_VALUE, "%0", 3, 3},    {GC_TOK_EQ, "=", 3, 6},
      {GC_TOK_IDENT, "f", 3, 8},       {GC_TOK_LPAREN, "(", 3, 9},    {GC_TOK_IDENT, "a", 3, 10},
      {GC_TOK_EQ, "=", 3, 11},         {GC_TOK_MINUS, "-", 3, 12},    {GC_TOK_FLOAT, "1.5e3", 3, 13},
      {GC_TOK_COMMA, ",", 3, 18},      {GC_TOK_IDENT, "b", 3, 20},    {GC_TOK_EQ, "=", 3, 21},
      {GC_TOK_STRING, "\"s\"", 3, 22}, {GC_TOK_COMMA, ",", 3, 25},    {GC_TOK_IDENT, "c", 3, 27},
      {GC_TOK_EQ, "=", 3, 28},         {GC_TOK_LBRACKET, "[", 3, 29}, {GC_TOK_INT, "1", 3, 30},
      {GC_TOK_RBRACKET, "]", 3, 31},   {GC_TOK_RPAREN, ")", 3, 32},   {GC_TOK_SEMI, ";", 3, 33},
      {GC_TOK_RBRACE, "}", 4, 1},      {GC_TOK_EOF, "", 4, 2},
  };
  gc_diags d;
  gc_diags_init(&d, "t", src, strlen(src));
  gc_token toks[64];
  int n = lex_all(src, toks, 64, &d);
  ck_assert_int_eq(d.n_errors, 0);
  ck_assert_int_eq(n, (int)(sizeof want / sizeof want[0]));
  for (int i = 0; i < n; i++) {
    ck_assert_msg(toks[i].kind == want[i].k, "token %d ('%s'): kind %s, want %s", i, want[i].text,
                  gc_lex_kind_name(toks[i].kind), gc_lex_kind_name(want[i].k));
    ck_assert_int_eq((int)toks[i].len, (int)strlen(want[i].text));
    ck_assert(memcmp(toks[i].text, want[i].text, toks[i].len) == 0);
    ck_assert_msg(toks[i].loc.line == want[i].line && toks[i].loc.col == want[i].col,
                  "token %d '%s' at %d:%d, want %d:%d", i, want[i].text, toks[i].loc.line,
                  toks[i].loc.col, want[i].line, want[i].col);
  }
  ck_assert_int_eq(toks[1].i, 1);
  ck_assert(toks[32].f == 1.5e3);
  gc_diags_free(&d);
}
END_TEST

START_TEST(lex_numbers) {
  gc_diags d;
  gc_token t[16];
  gc_diags_init(&d, "t", NULL, 0);
  int n = lex_all("0 4611686018427387903 1.5 2e-3 1.0E+10 0.044715 7e2", t, 16, &d);
  ck_assert_int_eq(d.n_errors, 0);
  ck_assert_int_eq(n, 8);
  ck_assert_int_eq(t[0].kind, GC_TOK_INT);
  ck_assert_int_eq(t[0].i, 0);
  ck_assert_int_eq(t[1].kind, GC_TOK_INT);
  ck_assert_int_eq(t[1].i, (INT64_C(1) << 62) - 1);
  double want[] = {1.5, 2e-3, 1.0e10, 0.044715, 700.0};
  for (int i = 0; i < 5; i++) {
    ck_assert_int_eq(t[2 + i].kind, GC_TOK_FLOAT);
    ck_assert(t[2 + i].f == want[i]);
  }
  gc_diags_free(&d);

  /* 2^62 and beyond are rejected, as are malformed numbers. */
  const char *bad[] = {"4611686018427387904", "99999999999999999999999", "1.", "12abc", "1e999",
                       "1.5.2"};
  const char *msg[] = {"too large", "too large", "expected a digit after '.'", "invalid suffix 'abc'",
                       "out of range", "invalid suffix '.2'"};
  for (int i = 0; i < 6; i++) {
    gc_diags_init(&d, "t", bad[i], strlen(bad[i]));
    lex_all(bad[i], t, 16, &d);
    ck_assert_msg(d.n_errors == 1, "%s: %d errors", bad[i], d.n_errors);
    ck_assert_msg(strstr(d.items[0].msg, msg[i]), "%s: got '%s'", bad[i], d.items[0].msg);
    ck_assert(t[0].bad);
    gc_diags_free(&d);
  }
}
END_TEST

START_TEST(lex_strings) {
  gc_diags d;
  gc_token t[8];
  const char *src = "\"a\\\"b\\\\c\\nd\\te\" \"\"";
  gc_diags_init(&d, "t", src, strlen(src));
  int n = lex_all(src, t, 8, &d);
  ck_assert_int_eq(d.n_errors, 0);
  ck_assert_int_eq(n, 3);
  char buf[64];
  ck_assert_int_eq(t[0].kind, GC_TOK_STRING);
  ck_assert_uint_eq(gc_lex_string(&t[0], buf), 9);
  ck_assert_str_eq(buf, "a\"b\\c\nd\te");
  ck_assert_uint_eq(gc_lex_string(&t[1], buf), 0);
  ck_assert_str_eq(buf, "");
  gc_diags_free(&d);

  static const struct {
    const char *src, *msg;
    int line, col;
  } bad[] = {
      {"\"ab\\qc\" x", "unknown escape sequence '\\q'", 1, 4},
      {"x \"abc\ny", "unterminated string (newline", 1, 3},
      {"\"abc", "unterminated string (end of file", 1, 1},
      {"\"a\\", "unterminated string", 1, 1},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    gc_diags_init(&d, "t", bad[i].src, strlen(bad[i].src));
    lex_all(bad[i].src, t, 8, &d);
    ck_assert_msg(d.n_errors == 1, "%s: %d errors", bad[i].src, d.n_errors);
    ck_assert_msg(strstr(d.items[0].msg, bad[i].msg), "got '%s'", d.items[0].msg);
    ck_assert_int_eq(d.items[0].loc.line, bad[i].line);
    ck_assert_int_eq(d.items[0].loc.col, bad[i].col);
    gc_diags_free(&d);
  }
}
END_TEST

START_TEST(lex_names_comments_and_bad_chars) {
  gc_diags d;
  gc_token t[16];
  const char *src = "%x1 %_y %42 @main_2 -> - # all of this is a comment -> %z\n ab_9";
  gc_diags_init(&d, "t", src, strlen(src));
  int n = lex_all(src, t, 16, &d);
  ck_assert_int_eq(d.n_errors, 0);
  ck_assert_int_eq(n, 8);
  gc_tok_kind kinds[] = {GC_TOK_VALUE, GC_TOK_VALUE, GC_TOK_VALUE, GC_TOK_GNAME,
                         GC_TOK_ARROW, GC_TOK_MINUS, GC_TOK_IDENT, GC_TOK_EOF};
  for (int i = 0; i < n; i++) ck_assert_int_eq(t[i].kind, kinds[i]);
  ck_assert_int_eq(t[6].loc.line, 2);
  ck_assert_int_eq(t[6].loc.col, 2);
  gc_diags_free(&d);

  /* A bad character is reported and skipped; lexing goes on. */
  src = "a $ b\n  `c";
  gc_diags_init(&d, "t", src, strlen(src));
  n = lex_all(src, t, 16, &d);
  ck_assert_int_eq(d.n_errors, 2);
  ck_assert_str_eq(d.items[0].msg, "unexpected character '$'");
  ck_assert_int_eq(d.items[0].loc.col, 3);
  ck_assert_int_eq(d.items[1].loc.line, 2);
  ck_assert_int_eq(d.items[1].loc.col, 3);
  ck_assert_int_eq(n, 4); /* a b c EOF */
  gc_diags_free(&d);

  const char *bad[] = {"% x", "@ y", "%1a", "@1"};
  for (int i = 0; i < 4; i++) {
    gc_diags_init(&d, "t", bad[i], strlen(bad[i]));
    lex_all(bad[i], t, 16, &d);
    ck_assert_msg(d.n_errors == 1, "%s: %d errors", bad[i], d.n_errors);
    ck_assert(t[0].bad);
    gc_diags_free(&d);
  }
}
END_TEST

/* ---- parser -------------------------------------------------------------------------------- */
static const char *mlp_src =
    "version 1;\n"
    "weights \"mlp.safetensors\";\n"
    "# Two-layer perceptron; B is bound at compile time.\n"
    "graph @mlp<B>(%x: f32[B, 784]) -> (f32[B, 64], f32[B, 64]) {\n"
    "  param %w1: f32[784, 128] = \"fc1.weight\";\n"
    "  %h = matmul(%x, %w1) : f32[B, 128];\n"
    "  %a, %b = split(%h, axis=1, sizes=[64, 64]) : f32[B, 64], f32[B, 64];\n"
    "  %s = softmax(%a, axis=-1);\n"
    "  return %s, %b;\n"
    "}\n";

START_TEST(parse_module_structure) {
  gc_module *m = parse_ok(mlp_src);
  ck_assert_int_eq(m->version, 1);
  ck_assert_str_eq(m->weights, "mlp.safetensors");
  ck_assert_int_eq(m->weights_loc.line, 2);
  ck_assert_int_eq(m->weights_loc.col, 9);
  ck_assert_int_eq(m->n_graphs, 1);
  gc_graph *g = m->graphs[0];
  ck_assert_str_eq(g->name, "mlp");
  ck_assert_ptr_eq(gc_module_find_graph(m, "@mlp"), g);
  ck_assert_int_eq(g->n_syms, 1);
  ck_assert_str_eq(g->sym_names[0], "B");
  ck_assert_int_eq(g->sym_values[0], GC_SYM_UNBOUND);
  ck_assert_int_eq(g->n_args, 1);
  ck_assert_str_eq(g->args[0]->name, "x");
  ck_assert_int_eq(g->args[0]->type.dtype, GRAPHC_DTYPE_F32);
  ck_assert_int_eq(g->args[0]->type.rank, 2);
  ck_assert(g->args[0]->type.dims[0] == GC_DIM_SYM(0));
  ck_assert_int_eq(g->args[0]->type.dims[1], 784);
  ck_assert_int_eq(g->args[0]->loc.line, 4);
  ck_assert_int_eq(g->args[0]->loc.col, 15);
  ck_assert_int_eq(g->n_result_types, 2);
  ck_assert(g->result_types[0].dims[0] == GC_DIM_SYM(0));
  ck_assert_int_eq(g->result_types[0].dims[1], 64);
  ck_assert_int_eq(g->n_ops, 4);

  const gc_op *param = nth_op(g, 0);
  ck_assert_int_eq(param->opcode, GC_OP_PARAM);
  ck_assert_int_eq(param->n_operands, 0);
  ck_assert_int_eq(param->n_results, 1);
  ck_assert(param->typed);
  ck_assert_str_eq(gc_op_attr_str(param, "name", ""), "fc1.weight");
  ck_assert_int_eq(param->loc.line, 5);
  ck_assert_int_eq(param->loc.col, 3);
  ck_assert_int_eq(param->results[0]->loc.col, 9);
  ck_assert_int_eq(param->results[0]->type.dims[1], 128);

  const gc_op *mm = nth_op(g, 1);
  ck_assert_int_eq(mm->opcode, GC_OP_MATMUL);
  ck_assert_int_eq(mm->n_operands, 2);
  ck_assert_ptr_eq(mm->operands[0], g->args[0]);
  ck_assert_ptr_eq(mm->operands[1], param->results[0]);
  ck_assert(mm->typed);
  ck_assert_int_eq(mm->loc.line, 6);
  ck_assert_int_eq(mm->loc.col, 3);

  const gc_op *split = nth_op(g, 2);
  ck_assert_int_eq(split->opcode, GC_OP_SPLIT);
  ck_assert_int_eq(split->n_results, 2);
  ck_assert_str_eq(split->results[0]->name, "a");
  ck_assert_str_eq(split->results[1]->name, "b");
  ck_assert_int_eq(split->results[1]->loc.col, 7);
  ck_assert_ptr_eq(split->results[1]->def, split);
  ck_assert_int_eq(split->results[1]->def_index, 1);
  ck_assert_int_eq(split->n_attrs, 2);
  ck_assert_str_eq(split->attrs[0].name, "axis");
  ck_assert_int_eq(split->attrs[0].val.loc.col, 22);
  ck_assert_str_eq(split->attrs[1].name, "sizes");
  int64_t sizes[4];
  ck_assert_int_eq(gc_attr_ints(&split->attrs[1].val, sizes, 4), 2);
  ck_assert_int_eq(sizes[0], 64);
  ck_assert_int_eq(sizes[1], 64);

  const gc_op *sm = nth_op(g, 3);
  ck_assert_int_eq(sm->opcode, GC_OP_SOFTMAX);
  ck_assert(!sm->typed);
  ck_assert_int_eq(gc_op_attr_int(sm, "axis", 0), -1);

  ck_assert_int_eq(g->n_outputs, 2);
  ck_assert_ptr_eq(g->outputs[0], sm->results[0]);
  ck_assert_ptr_eq(g->outputs[1], split->results[1]);
  ck_assert_int_eq(g->ret_loc.line, 9);
  ck_assert_int_eq(g->ret_loc.col, 3);
  gc_module_free(m);
}
END_TEST

START_TEST(parse_attributes) {
  const char *src =
      "version 1;\n"
      "graph @g<B, S>(%x: f32[B, S]) -> (f32[B, S]) {\n"
      "  %y = neg(%x, i=7, n=-3, f=2.5, nf=-0.25, pinf=inf, ninf=-inf, qnan=nan, s=\"a\\tb\",\n"
      "           t=true, fa=false, dt=bf16, dims=[B, -1, S], e=[], nest=[[1, 2], [3.5]],\n"
      "           big=4611686018427387903) : f32[B, S];\n"
      "  return %y;\n"
      "}\n";
  gc_module *m = parse_ok(src);
  const gc_op *op = m->graphs[0]->first;
  ck_assert_int_eq(op->n_attrs, 15);
  const gc_attr *a;
  a = gc_op_attr(op, "i");
  ck_assert(a->kind == GC_ATTR_INT && a->u.i == 7);
  ck_assert_int_eq(a->loc.line, 3);
  ck_assert_int_eq(a->loc.col, 16);
  a = gc_op_attr(op, "n");
  ck_assert(a->kind == GC_ATTR_INT && a->u.i == -3);
  a = gc_op_attr(op, "f");
  ck_assert(a->kind == GC_ATTR_FLOAT && a->u.f == 2.5);
  a = gc_op_attr(op, "nf");
  ck_assert(a->kind == GC_ATTR_FLOAT && a->u.f == -0.25);
  a = gc_op_attr(op, "pinf");
  ck_assert(a->kind == GC_ATTR_FLOAT && isinf(a->u.f) && a->u.f > 0);
  a = gc_op_attr(op, "ninf");
  ck_assert(a->kind == GC_ATTR_FLOAT && isinf(a->u.f) && a->u.f < 0);
  a = gc_op_attr(op, "qnan");
  ck_assert(a->kind == GC_ATTR_FLOAT && isnan(a->u.f));
  a = gc_op_attr(op, "s");
  ck_assert(a->kind == GC_ATTR_STR);
  ck_assert_str_eq(a->u.s, "a\tb");
  a = gc_op_attr(op, "t");
  ck_assert(a->kind == GC_ATTR_BOOL && a->u.b == 1);
  a = gc_op_attr(op, "fa");
  ck_assert(a->kind == GC_ATTR_BOOL && a->u.b == 0);
  a = gc_op_attr(op, "dt");
  ck_assert(a->kind == GC_ATTR_DTYPE && a->u.dt == GRAPHC_DTYPE_BF16);
  a = gc_op_attr(op, "dims");
  ck_assert(a->kind == GC_ATTR_LIST && a->u.list.n == 3);
  ck_assert(a->u.list.items[0].kind == GC_ATTR_INT && a->u.list.items[0].u.i == GC_DIM_SYM(0));
  ck_assert(a->u.list.items[1].u.i == -1);
  ck_assert(a->u.list.items[2].u.i == GC_DIM_SYM(1));
  ck_assert_int_eq(a->u.list.items[2].loc.line, 4);
  ck_assert_int_eq(a->u.list.items[2].loc.col, 52);
  a = gc_op_attr(op, "e");
  ck_assert(a->kind == GC_ATTR_LIST && a->u.list.n == 0);
  a = gc_op_attr(op, "nest");
  ck_assert(a->kind == GC_ATTR_LIST && a->u.list.n == 2);
  ck_assert(a->u.list.items[0].kind == GC_ATTR_LIST && a->u.list.items[0].u.list.n == 2);
  ck_assert(a->u.list.items[1].u.list.items[0].kind == GC_ATTR_FLOAT);
  a = gc_op_attr(op, "big");
  ck_assert(a->kind == GC_ATTR_INT && a->u.i == (INT64_C(1) << 62) - 1);

  char *text = print_module(m);
  ck_assert_msg(strstr(text, "%y = neg(%x, i=7, n=-3, f=2.5, nf=-0.25, pinf=inf, ninf=-inf, "
                             "qnan=nan, s=\"a\\tb\", t=true, fa=false, dt=bf16, dims=[B, -1, S], "
                             "e=[], nest=[[1, 2], [3.5]], big=4611686018427387903) : f32[B, S];"),
                "printed:\n%s", text);
  free(text);
  gc_module_free(m);
}
END_TEST

START_TEST(parse_multiple_graphs_and_forms) {
  const char *src =
      "version 1;\n"
      "graph @a() -> (i64[], bool[2]) {\n"
      "  %0 = const(value=3) : i64[];\n"
      "  %1 = const(value=[true, false]) : bool[2];\n"
      "  return %0, %1;\n"
      "}\n"
      "graph @b(%p: f16[1, 2, 3, 4, 5, 6, 7, 8], %q: u8[3]) -> (f16[1, 2, 3, 4, 5, 6, 7, 8]) {\n"
      "  %r = relu(%p);\n"
      "  return %r;\n"
      "}\n";
  gc_module *m = parse_ok(src);
  ck_assert_ptr_null(m->weights);
  ck_assert_int_eq(m->n_graphs, 2);
  ck_assert_int_eq(m->graphs[0]->n_args, 0);
  ck_assert_int_eq(m->graphs[0]->n_syms, 0);
  ck_assert_int_eq(m->graphs[0]->n_result_types, 2);
  ck_assert_int_eq(m->graphs[0]->result_types[0].rank, 0);
  ck_assert_int_eq(m->graphs[0]->result_types[1].dtype, GRAPHC_DTYPE_BOOL);
  ck_assert_str_eq(m->graphs[0]->first->results[0]->name, "0");
  ck_assert_int_eq(m->graphs[1]->args[0]->type.rank, 8);
  ck_assert_int_eq(m->graphs[1]->args[1]->type.dtype, GRAPHC_DTYPE_U8);
  ck_assert_int_eq(m->graphs[1]->args[1]->def_index, 1);
  ck_assert_ptr_null(m->graphs[1]->args[1]->def);
  /* Names are per graph: %0 of @a is not visible in @b, and @b may reuse names. */
  ck_assert_ptr_eq(gc_module_find_graph(m, "b"), m->graphs[1]);
  gc_module_free(m);
}
END_TEST

/* Canonical printing of the brief's example, exactly. */
START_TEST(print_canonical_form) {
  gc_module *m = parse_ok(
      "version 1; weights \"mlp.safetensors\";\n"
      "graph @mlp<B>(%x:f32[B,784])->(f32[B,64],f32[B,64]){param %w1:f32[784,128]=\"fc1.weight\";\n"
      "%h=matmul(%x,%w1):f32[B,128];%a,%b=split(%h,axis=1,sizes=[64,64]):f32[B,64],f32[B,64];\n"
      "%s=softmax(%a,axis=-1):f32[B,64];return %s,%b;}"
      "graph @second() -> (f32[]) { %c = const(value=1e-5) : f32[]; return %c; }");
  char *text = print_module(m);
  ck_assert_str_eq(text,
                   "version 1;\n"
                   "weights \"mlp.safetensors\";\n"
                   "\n"
                   "graph @mlp<B>(%x: f32[B, 784]) -> (f32[B, 64], f32[B, 64]) {\n"
                   "  param %w1: f32[784, 128] = \"fc1.weight\";\n"
                   "  %h = matmul(%x, %w1) : f32[B, 128];\n"
                   "  %a, %b = split(%h, axis=1, sizes=[64, 64]) : f32[B, 64], f32[B, 64];\n"
                   "  %s = softmax(%a, axis=-1) : f32[B, 64];\n"
                   "  return %s, %b;\n"
                   "}\n"
                   "\n"
                   "graph @second() -> (f32[]) {\n"
                   "  %c = const(value=1e-05) : f32[];\n"
                   "  return %c;\n"
                   "}\n");
  gc_sbuf b = {0};
  gc_print_graph(&b, m->graphs[1]);
  char *gt = gc_sbuf_take(&b);
  ck_assert_str_eq(gt, "graph @second() -> (f32[]) {\n  %c = const(value=1e-05) : f32[];\n"
                       "  return %c;\n}\n");
  free(gt);
  free(text);
  gc_module_free(m);
}
END_TEST

/* Floats print in the shortest form that round-trips and looks like a float. */
START_TEST(print_floats) {
  static const struct {
    double v;
    const char *s;
  } cases[] = {
      {1.0, "1.0"},         {-2.0, "-2.0"},         {0.5, "0.5"},
      {1e-5, "1e-05"},      {0.044715, "0.044715"}, {0.1, "0.1"},
      {1e22, "1e+22"},      {100.0, "100.0"},       {123456789.0, "123456789.0"},
      {-0.0, "-0.0"},       {0.0, "0.0"},           {1.0 / 3.0, "0.3333333333333333"},
      {5e-324, "5e-324"},   {1.7976931348623157e308, "1.7976931348623157e+308"},
      {0.17677669529663687, "0.17677669529663687"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    gc_module *m = gc_module_new("t");
    gc_graph *g = gc_graph_new(m, "g", (gc_loc){0, 0});
    gc_op *op = gc_op_new(g, GC_OP_CONST, 0, NULL, 1, (const char *[]){"c"}, (gc_loc){0, 0});
    gc_named_attr na = {.name = "value", .val = {.kind = GC_ATTR_FLOAT, .u.f = cases[i].v}};
    gc_op_set_attrs(g, op, 1, &na);
    op->results[0]->type = (gc_type){.dtype = GRAPHC_DTYPE_F64};
    g->outputs = &op->results[0];
    g->n_outputs = 1;
    g->result_types = &op->results[0]->type;
    g->n_result_types = 1;
    char *text = print_module(m);
    char want[128];
    snprintf(want, sizeof want, "%%c = const(value=%s) : f64[];", cases[i].s);
    ck_assert_msg(strstr(text, want), "%.17g printed as:\n%s", cases[i].v, text);
    /* and it parses back to the same bits */
    gc_module *m2 = parse_ok(text);
    double back = m2->graphs[0]->first->attrs[0].val.u.f;
    ck_assert_msg(memcmp(&back, &cases[i].v, sizeof back) == 0, "%s read back as %.17g",
                  cases[i].s, back);
    gc_module_free(m2);
    free(text);
    g->outputs = NULL;
    g->result_types = NULL;
    gc_module_free(m);
  }
}
END_TEST

/* A graph built through the API (numbered names, no source) prints and re-parses. */
START_TEST(print_built_graph) {
  gc_module *m = gc_module_new(NULL);
  gc_graph *g = gc_graph_new(m, "built", (gc_loc){0, 0});
  const char *syms[] = {"N"};
  g->sym_names = syms;
  g->n_syms = 1;
  gc_type t = {.dtype = GRAPHC_DTYPE_F32, .rank = 2, .dims = {GC_DIM_SYM(0), 4}};
  gc_value *x = gc_graph_add_arg(g, "in", &t, (gc_loc){0, 0});
  gc_op *r = gc_op_new(g, GC_OP_RELU, 1, &x, 1, (const char *[]){"0"}, (gc_loc){0, 0});
  r->results[0]->type = t;
  gc_value *ops[2] = {r->results[0], x};
  gc_op *a = gc_op_new(g, GC_OP_ADD, 2, ops, 1, (const char *[]){"1"}, (gc_loc){0, 0});
  a->results[0]->type = t;
  gc_attr dims[2] = {{.kind = GC_ATTR_INT, .u.i = GC_DIM_SYM(0)}, {.kind = GC_ATTR_INT, .u.i = 4}};
  gc_named_attr na = {.name = "shape", .val = {.kind = GC_ATTR_LIST, .u.list = {dims, 2}}};
  gc_op *rs = gc_op_new(g, GC_OP_RESHAPE, 1, &a->results[0], 1, (const char *[]){"2"},
                        (gc_loc){0, 0});
  gc_op_set_attrs(g, rs, 1, &na);
  rs->results[0]->type = t;
  g->outputs = &rs->results[0];
  g->n_outputs = 1;
  g->result_types = &t;
  g->n_result_types = 1;
  char *text = print_module(m);
  ck_assert_str_eq(text,
                   "version 1;\n\n"
                   "graph @built<N>(%in: f32[N, 4]) -> (f32[N, 4]) {\n"
                   "  %0 = relu(%in) : f32[N, 4];\n"
                   "  %1 = add(%0, %in) : f32[N, 4];\n"
                   "  %2 = reshape(%1, shape=[N, 4]) : f32[N, 4];\n"
                   "  return %2;\n"
                   "}\n");
  gc_module *m2 = parse_ok(text);
  char *text2 = print_module(m2);
  ck_assert_str_eq(text, text2);
  free(text);
  free(text2);
  gc_module_free(m2);
  g->sym_names = NULL;
  g->n_syms = 0;
  gc_module_free(m);
}
END_TEST

/* ---- error messages and positions -------------------------------------------------------- */
static const char *hdr = "version 1;\ngraph @g<B>(%x: f32[B, 4]) -> (f32[B, 4]) {\n";

START_TEST(parse_error_positions) {
  int bad = 0;
  static const struct {
    const char *body; /* lines 3.. of a graph body (after hdr) */
    int line, col;
    const char *msg;
  } cases[] = {
      {"  %y = relu(%x) : f32[B, 4]\n  return %y;\n}\n", 3, 28,
       "expected ';' after the statement, found 'return'"},
      {"  %y = relu(%x : f32[B, 4];\n  return %y;\n}\n", 3, 16,
       "expected ')' to close the operand list, found ':'"},
      {"  %y = relu(%z);\n  return %y;\n}\n", 3, 13, "use of undefined value %z"},
      {"  %x = relu(%x);\n  return %x;\n}\n", 3, 3, "redefinition of %x"},
      {"  %y = frobnicate(%x);\n  return %y;\n}\n", 3, 8, "unknown op 'frobnicate'"},
      {"  %y = @g(%x);\n  return %y;\n}\n", 3, 8, "calls to graphs are not supported yet"},
      {"  %y = relu(%x) : f32[C, 4];\n  return %y;\n}\n", 3, 23, "unknown symbolic dim 'C'"},
      {"  %y = relu(%x) : f17[B, 4];\n  return %y;\n}\n", 3, 19, "unknown dtype 'f17'"},
      {"  %y = relu(%x);\n}\n", 4, 1, "missing return statement"},
      {"  return %x;\n  %y = relu(%x);\n}\n", 4, 3, "statement after return"},
      {"  %y = softmax(%x, axis=);\n  return %y;\n}\n", 3, 25,
       "expected an attribute value, found ')'"},
      {"  %y = cast(%x, to=f99);\n  return %y;\n}\n", 3, 20, "unknown name 'f99'"},
      {"  %y = reshape(%x, shape=[B, 4], shape=[4, B]);\n  return %y;\n}\n", 3, 34,
       "duplicate attribute 'shape'"},
      {"  %y = relu(%x);\n  return %y;\n", 4, 13, "expected '}' to close graph @g, found end of file"},
      {"  %y = relu(%x);\n  return %y;\n}\nextra", 6, 1,
       "expected 'graph' or end of file, found 'extra'"},
      {"  param %w: f32[4] \"w\";\n  return %x;\n}\n", 3, 20, "expected '=' after the param type"},
      {"  %a, %b = split(%x, axis=1, sizes=[2, 2]) : f32[B, 2];\n  return %a;\n}\n", 3, 46,
       "1 result type given for 2 results"},
      {"  %y = relu(%x) : f32[B, -2];\n  return %y;\n}\n", 3, 26, "dimension must be >= 0, got -2"},
      {"  %y = relu(%x) ? ;\n  return %y;\n}\n", 3, 17, "unexpected character '?'"},
      {"  %y = param(name=\"w\") : f32[4];\n  return %y;\n}\n", 3, 8, "unknown op 'param'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char src[1024];
    snprintf(src, sizeof src, "%s%s", hdr, cases[i].body);
    gc_diags d;
    gc_diags_init(&d, "t.graph", src, strlen(src));
    gc_module *m = gc_parse("t.graph", src, strlen(src), &d);
    char *r = gc_diags_render(&d);
    ck_assert_msg(m == NULL, "case %zu parsed", i);
    ck_assert_msg(d.n_errors == 1, "case %zu: %d errors:\n%s", i, d.n_errors, r);
    char want[256];
    snprintf(want, sizeof want, "t.graph:%d:%d: error: ", cases[i].line, cases[i].col);
    const char *at = strstr(r, want);
    if (!(at && strstr(at, cases[i].msg))) {
      fprintf(stderr, "case %zu: want %s%s, got:\n%s", i, want, cases[i].msg, r);
      bad++;
    }
    free(r);
    gc_diags_free(&d);
  }
  ck_assert_int_eq(bad, 0);
}
END_TEST

START_TEST(parse_error_recovery) {
  /* Several independent errors in one run; no cascades from failed definitions. */
  const char *src =
      "version 1;\n"
      "graph @g(%x: f32[4]) -> (f32[4]) {\n"
      "  %a = bogus(%x) : f32[4];\n"    /* unknown op: %a poisoned */
      "  %b = relu(%a) : f32[4];\n"     /* silent: %a is poisoned */
      "  %c = relu(%x : f32[4];\n"      /* missing ')' */
      "  %d = add(%b, %c) : f32[4];\n"  /* silent */
      "  %e = relu(%nope) : f32[4];\n"  /* undefined, reported once */
      "  %f = add(%nope, %e) : f32[4];\n"
      "  return %f;\n"
      "}\n";
  int n;
  char *r = parse_fail(src, &n);
  ck_assert_msg(n == 3, "%d errors:\n%s", n, r);
  ck_assert(strstr(r, "t.graph:3:8: error: unknown op 'bogus'"));
  ck_assert(strstr(r, "t.graph:5:16: error: expected ')'"));
  ck_assert(strstr(r, "t.graph:7:13: error: use of undefined value %nope"));
  /* Rendered with the source line and a caret under the column. */
  ck_assert(strstr(r, "    3 |   %a = bogus(%x) : f32[4];\n      |        ^\n"));
  free(r);

  /* A redefinition points at the first definition with a note. */
  src = "version 1;\ngraph @g(%x: f32[4]) -> (f32[4]) {\n  %x = relu(%x);\n  return %x;\n}\n"
        "graph @g() -> (f32[]) {\n  %c = const(value=1.0);\n  return %c;\n}\n";
  r = parse_fail(src, &n);
  ck_assert_msg(n == 2, "%d errors:\n%s", n, r);
  ck_assert(strstr(r, "t.graph:3:3: error: redefinition of %x"));
  ck_assert(strstr(r, "t.graph:2:10: note: previous definition of %x is here"));
  ck_assert(strstr(r, "t.graph:6:7: error: redefinition of graph @g"));
  ck_assert(strstr(r, "t.graph:2:7: note: previous definition of @g is here"));
  free(r);

  /* Header errors. */
  src = "version 3;\ngraph @g<N, N>(%x: f32[M]) -> (f32[4]) {\n  return %x;\n}\n";
  r = parse_fail(src, &n);
  ck_assert_msg(n == 3, "%d errors:\n%s", n, r);
  ck_assert(strstr(r, "t.graph:1:9: error: unsupported version 3"));
  ck_assert(strstr(r, "t.graph:2:13: error: duplicate symbolic dim 'N'"));
  ck_assert(strstr(r, "t.graph:2:24: error: unknown symbolic dim 'M'"));
  free(r);

  /* Recovery at the start of the next line that looks like a statement. */
  src = "version 1;\ngraph @g(%x: f32[4]) -> (f32[4]) {\n  oops here\n  %h = relu(%x);\n"
        "  return %h;\n}\n";
  r = parse_fail(src, &n);
  ck_assert_msg(n == 1, "%d errors:\n%s", n, r);
  ck_assert(strstr(r, "t.graph:3:3: error: expected a statement (an op, param, state or return), found "
                      "'oops'"));
  free(r);

  /* A broken <...> list does not make every later use of its symbols an error. */
  src = "version 1;\ngraph @g<B, >(%x: f32[B, 4]) -> (f32[B, 4]) {\n"
        "  %y = reshape(%x, shape=[B, 4]) : f32[B, 4];\n  return %y;\n}\n";
  r = parse_fail(src, &n);
  ck_assert_msg(n == 1, "%d errors:\n%s", n, r);
  ck_assert(strstr(r, "t.graph:2:13: error: expected a symbolic dim name, found '>'"));
  free(r);

  /* Missing version; empty input. */
  r = parse_fail("graph @g() -> (f32[]) { %c = const(value=1.0); return %c; }", &n);
  ck_assert_int_eq(n, 1);
  ck_assert(strstr(r, "t.graph:1:1: error: expected 'version 1;' at the start of the file"));
  free(r);
  r = parse_fail("", &n);
  ck_assert_int_eq(n, 1);
  free(r);
}
END_TEST

/* ---- round trip over every .graph file --------------------------------------------------- */
typedef struct pathlist {
  char **v;
  int n, cap;
} pathlist;

/* Collect *.graph under dir (recursively), skipping any directory named "errors". */
static void collect(const char *dir, pathlist *pl) {
  DIR *dp = opendir(dir);
  if (!dp) return;
  struct dirent *e;
  while ((e = readdir(dp))) {
    if (e->d_name[0] == '.') continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(path, &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      if (strcmp(e->d_name, "errors") != 0) collect(path, pl);
      continue;
    }
    size_t n = strlen(e->d_name);
    if (n < 7 || strcmp(e->d_name + n - 6, ".graph") != 0) continue;
    if (pl->n == pl->cap) {
      pl->cap = pl->cap ? pl->cap * 2 : 32;
      pl->v = realloc(pl->v, (size_t)pl->cap * sizeof *pl->v);
      ck_assert_ptr_nonnull(pl->v);
    }
    pl->v[pl->n++] = strdup(path);
  }
  closedir(dp);
}

/* qsort comparator for C strings. */
static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Parse + verify text; returns the printed module or NULL (with *why rendered). */
static char *parse_verify_print(const char *name, const char *text, size_t len, char **why) {
  gc_diags d;
  gc_diags_init(&d, name, text, len);
  gc_module *m = gc_parse(name, text, len, &d);
  if (m) gc_verify_module(m, &d);
  char *out = NULL;
  if (m && d.n_errors == 0) out = print_module(m);
  *why = gc_diags_render(&d);
  gc_module_free(m);
  gc_diags_free(&d);
  return out;
}

START_TEST(round_trip_all_files) {
  pathlist pl = {0};
  collect(tu_src("examples"), &pl);
  collect(tu_src("tests"), &pl);
  qsort(pl.v, (size_t)pl.n, sizeof *pl.v, cmp_str);
  ck_assert_msg(pl.n > 0, "no .graph files under examples/ and tests/");
  int failures = 0;
  for (int i = 0; i < pl.n; i++) {
    size_t len;
    char *src = tu_read_file(pl.v[i], &len);
    ck_assert_msg(src != NULL, "cannot read %s", pl.v[i]);
    char *why = NULL, *why2 = NULL, *why3 = NULL;
    char *t1 = parse_verify_print(pl.v[i], src, len, &why);
    char *t2 = t1 ? parse_verify_print("printed", t1, strlen(t1), &why2) : NULL;
    char *t3 = t2 ? parse_verify_print("printed2", t2, strlen(t2), &why3) : NULL;
    if (!t1) {
      fprintf(stderr, "round trip: %s does not parse/verify:\n%s", pl.v[i], why);
      failures++;
    } else if (!t2) {
      fprintf(stderr, "round trip: printed %s does not re-parse:\n%s\n%s", pl.v[i], why2, t1);
      failures++;
    } else if (strcmp(t1, t2) != 0 || strcmp(t2, t3) != 0) {
      fprintf(stderr, "round trip: %s prints differently after re-parsing:\n%s\n---\n%s",
              pl.v[i], t1, t2);
      failures++;
    }
    free(t1);
    free(t2);
    free(t3);
    free(why);
    free(why2);
    free(why3);
    free(src);
    free(pl.v[i]);
  }
  free(pl.v);
  ck_assert_msg(failures == 0, "%d of %d files failed the round trip", failures, pl.n);
}
END_TEST

/* gc_module_clone: for every file, the clone prints exactly like the original
 * (verified or not), keeps value and op ids and locations, verifies cleanly, and
 * outlives the original (it shares no memory with it). */
START_TEST(clone_all_files) {
  pathlist pl = {0};
  collect(tu_src("examples"), &pl);
  collect(tu_src("tests"), &pl);
  qsort(pl.v, (size_t)pl.n, sizeof *pl.v, cmp_str);
  int cloned = 0;
  for (int i = 0; i < pl.n; i++) {
    size_t len;
    char *src = tu_read_file(pl.v[i], &len);
    ck_assert_msg(src != NULL, "cannot read %s", pl.v[i]);
    for (int verify = 0; verify < 2; verify++) {
      gc_diags d;
      gc_diags_init(&d, pl.v[i], src, len);
      gc_module *m = gc_parse(pl.v[i], src, len, &d);
      if (m && verify) gc_verify_module(m, &d);
      if (m && d.n_errors == 0) {
        gc_module *c = gc_module_clone(m);
        ck_assert_ptr_nonnull(c);
        char *a = print_module(m), *b = print_module(c);
        ck_assert_msg(strcmp(a, b) == 0, "%s: the clone prints differently:\n%s\n---\n%s",
                      pl.v[i], a, b);
        ck_assert_int_eq(c->n_graphs, m->n_graphs);
        for (int k = 0; k < m->n_graphs; k++) {
          const gc_graph *g = m->graphs[k], *h = c->graphs[k];
          ck_assert_int_eq(h->next_value_id, g->next_value_id);
          ck_assert_int_eq(h->next_op_id, g->next_op_id);
          ck_assert_int_eq(h->n_ops, g->n_ops);
          for (const gc_op *x = g->first, *y = h->first; x; x = x->next, y = y->next) {
            ck_assert(y && y->id == x->id && y->loc.line == x->loc.line && y->loc.col == x->loc.col);
            for (int r = 0; r < x->n_results; r++) {
              ck_assert_int_eq(y->results[r]->id, x->results[r]->id);
              ck_assert_ptr_eq(y->results[r]->def, y);
            }
          }
        }
        gc_module_free(m);
        m = NULL;
        gc_diags v;
        gc_diags_init(&v, pl.v[i], src, len);
        ck_assert_int_eq(gc_verify_module(c, &v), 0);
        char *b2 = print_module(c); /* verifying a verified clone changes nothing */
        if (verify) ck_assert_str_eq(b, b2);
        free(a);
        free(b);
        free(b2);
        gc_diags_free(&v);
        gc_module_free(c);
        cloned++;
      }
      gc_module_free(m);
      gc_diags_free(&d);
    }
    free(src);
    free(pl.v[i]);
  }
  free(pl.v);
  ck_assert_msg(cloned > 50, "only %d modules cloned", cloned);
}
END_TEST

/* Round trip of the inline sources above (fully typed, so they need no inference). */
START_TEST(round_trip_inline) {
  char *why = NULL, *why2 = NULL;
  char *t1 = parse_verify_print("a", mlp_src, strlen(mlp_src), &why);
  ck_assert_msg(t1 != NULL, "%s", why);
  char *t2 = parse_verify_print("b", t1, strlen(t1), &why2);
  ck_assert_msg(t2 != NULL, "%s", why2);
  ck_assert_str_eq(t1, t2);
  free(t1);
  free(t2);
  free(why);
  free(why2);
}
END_TEST

/* All cases, grouped by component. */
static Suite *frontend_suite(void) {
  Suite *s = suite_create("frontend");
  TCase *lex = tcase_create("lexer");
  tcase_add_test(lex, lex_tokens_and_positions);
  tcase_add_test(lex, lex_numbers);
  tcase_add_test(lex, lex_strings);
  tcase_add_test(lex, lex_names_comments_and_bad_chars);
  suite_add_tcase(s, lex);
  TCase *parse = tcase_create("parser");
  tcase_add_test(parse, parse_module_structure);
  tcase_add_test(parse, parse_attributes);
  tcase_add_test(parse, parse_multiple_graphs_and_forms);
  tcase_add_test(parse, parse_error_positions);
  tcase_add_test(parse, parse_error_recovery);
  suite_add_tcase(s, parse);
  TCase *print = tcase_create("printer");
  tcase_add_test(print, print_canonical_form);
  tcase_add_test(print, print_floats);
  tcase_add_test(print, print_built_graph);
  tcase_add_test(print, round_trip_inline);
  tcase_add_test(print, round_trip_all_files);
  tcase_add_test(print, clone_all_files);
  suite_add_tcase(s, print);
  return s;
}

/* Run the suite; exit status 0 when all pass. */
int main(void) { return tu_run_suite(frontend_suite()); }
