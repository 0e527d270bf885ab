/* test_lower.c - lowering graphs to execution plans (codegen/lower.c, emit_*.c,
 * buffers.c), without a GPU.
 *
 * Every case is a small graph (built as text, parsed and verified) lowered for
 * both targets (sm_90 and host). For each plan:
 *   structure  every kernel passes kir_verify; host kernels are plain ITEMS
 *              loops; buffers have the right kinds, types and sizes; every
 *              output and every TEMP is written; launches bind buffers only
 *              while they are live; no two simultaneously live TEMP buffers
 *              overlap (all pairs; an in-place pair must share exactly);
 *              arena_bytes >= arena_lower_bound.
 *   values     the plan runs on the host evaluator of lower_eval.h (BLOCKS
 *              groups in lockstep, TEMP buffers at their arena offsets,
 *              bounds-checked) on fresh random inputs and is compared with the
 *              interpreter under the per-dtype tolerances of the brief.
 *   code       the sm_90 plan is printed as CUDA C, compiled with NVRTC and
 *              its PTX accepted by ptxas; the LLVM NVPTX path likewise.
 * The random seed is printed on failure (GRAPHC_TEST_SEED reproduces a run).
 * The matmul family is in test_lower_matmul.c; the builder, the plan checks and
 * the case runner both suites use are in lower_common.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lower_common.h"

static const char *const ALL[] = {"f32", "f16", "bf16", "f64", "i64", "i32", "i8", "u8", "bool"};

/* ---- elementwise --------------------------------------------------------------------------------- */

static const char *const SHAPES[] = {"1", "3", "17", "1023", "4097", "4096", "2, 3, 5"};
#define VEC_SHAPE 5

/* Every float unary op on an awkward shape and on a vectorizable one. */
START_TEST(test_unary_float) {
  const char *T = FLOATS[_i];
  static const char *const ops[] = {"neg",  "abs",     "relu", "exp",  "log",   "sqrt",
                                    "rsqrt", "tanh",   "sigmoid", "gelu", "gelu_tanh", "silu",
                                    "erf",  "sin",     "cos",  "floor", "ceil"};
  gb b = {0};
  for (int s = 0; s < COUNT(SHAPES); s++) {
    char n[16];
    snprintf(n, sizeof n, "x%d", s);
    gb_arg(&b, n, ty(T, SHAPES[s]), 'x');
    snprintf(n, sizeof n, "p%d", s);
    gb_arg(&b, n, ty(T, SHAPES[s]), 'p');
  }
  int r = 0;
  for (int o = 0; o < COUNT(ops); o++) {
    int shapes[2] = {o % COUNT(SHAPES), VEC_SHAPE};
    for (int j = 0; j < 2; j++) {
      int s = shapes[j];
      int pos = !strcmp(ops[o], "log") || !strcmp(ops[o], "sqrt") || !strcmp(ops[o], "rsqrt");
      const char *name = !strcmp(ops[o], "gelu_tanh") ? "gelu" : ops[o];
      const char *attr = !strcmp(ops[o], "gelu_tanh") ? ", approximate=\"tanh\"" : "";
      gb_op(&b, "%%r%d = %s(%%%c%d%s)", r, name, pos ? 'p' : 'x', s, attr);
      char v[16];
      snprintf(v, sizeof v, "r%d", r++);
      gb_ret(&b, v, ty(T, SHAPES[s]));
    }
  }
  run_gb(&b, 1, 0);
}
END_TEST

/* Loop kernels with several 16-byte vectors an item (kir_target.loop_vecs): item i
 * handles vectors i, i + h, ... Identity inputs x (and y), a broadcast b read lane by lane
 * and two outputs; u = 2 and 4 forced, 4 falling back to 2 where the vector count is
 * only even, and the size heuristic on one multiprocessor for a group of at least 2 flops
 * a byte moved (an erf gelu: 13 flops an element over f16 x and two outputs, 6 bytes;
 * u = 4 from 32 Ki vectors, 2 from 16 Ki) and 1 below it (tanh, f32, or a second input). */
START_TEST(test_loop_vecs) {
  const char *T = _i % 2 ? "f16" : "f32";
  int es = _i % 2 ? 2 : 4, w = 16 / es;
  static const struct { const char *rows; int64_t numel; int force, two_in, heavy, u; } cases[] = {
      {"64", 64 * 128, 2, 1, 0, 2},      {"64", 64 * 128, 4, 1, 0, 4},      {"3", 3 * 128, 4, 1, 0, 0},
      {"1024", 1024 * 128, 0, 0, 1, 0},  {"1024", 1024 * 128, 0, 1, 1, 1},  {"1024", 1024 * 128, 0, 0, 0, 1},
      {"2048", 2048 * 128, 0, 0, 1, 0}};
  int c = _i / 2;
  char text[1024], sh[32];
  snprintf(sh, sizeof sh, "%s, 128", cases[c].rows);
  const char *y = cases[c].two_in ? "%y" : "%x";
  snprintf(text, sizeof text,
           "version 1;\n"
           "graph @t(%%x: %s, %%y: %s, %%b: %s) -> (%s, %s) {\n"
           "  %%m = mul(%%x, %s);\n"
           "  %%a = add(%%m, %%b);\n"
           "  %%r = %s(%%a);\n"
           "  %%d = sub(%%x, %s);\n"
           "  return %%r, %%d;\n"
           "}\n",
           ty(T, sh), ty(T, sh), ty(T, "128"), ty(T, sh), ty(T, sh), y, cases[c].heavy ? "gelu" : "tanh", y);
  int64_t nvec = cases[c].numel / w;
  int u = cases[c].u;
  if (!u && cases[c].force) u = nvec % 4 ? 2 : 4;
  if (!u) u = es == 4 ? 1 : nvec >= 4 * 4 * 2048 ? 4 : nvec >= 2 * 4 * 2048 ? 2 : 1;
  g_loop_vecs = cases[c].force;
  if (!cases[c].force) g_tc_sms = 1;
  gc_module *m = parse_ok(text);
  gc_plan *p = lower_ok(m->graphs[0], NULL, KIR_TARGET_CUDA);
  check_plan(p, m->graphs[0], KIR_TARGET_CUDA);
  ck_assert_int_eq(p->kir->n_kernels, 1);
  ck_assert_msg(p->kir->kernels[0]->launch.n == nvec / u, "%s %s: %lld items, expected %lld (u = %d)", T, sh,
                (long long)p->kir->kernels[0]->launch.n, (long long)(nvec / u), u);
  gc_plan_free(p);
  gc_module_free(m);
  gb kinds = {0};
  strcpy(kinds.kinds, "xxx");
  run_case_w(strdup(text), 1, 0, NULL, &kinds);
  g_loop_vecs = 0;
  g_tc_sms = 0;
}
END_TEST

/* neg/abs/relu/clamp on ints (extremes wrap), clamp on floats (NaN passes through). */
START_TEST(test_unary_numeric) {
  const char *T = NUMERIC[_i];
  int fl = is_float_name(T);
  gb b = {0};
  gb_arg(&b, "a", ty(T, "17"), fl ? 'n' : 'x');
  gb_arg(&b, "b", ty(T, "4096"), fl ? 'n' : 'x');
  gb_arg(&b, "c", ty(T, "2, 3, 5"), fl ? 'n' : 'x');
  static const char *const args[] = {"a", "b", "c"};
  static const char *const shapes[] = {"17", "4096", "2, 3, 5"};
  const char *clamps_f[] = {"clamp(%%%s, min=-1.0)", "clamp(%%%s, max=2.0)", "clamp(%%%s, min=-1.5, max=0.5)"};
  const char *clamps_i[] = {"clamp(%%%s, min=-3, max=7)", "clamp(%%%s, min=0)", "clamp(%%%s, max=5)"};
  int r = 0;
  for (int a = 0; a < 3; a++) {
    static const char *const ops[] = {"neg", "abs", "relu"};
    for (int o = 0; o < 3; o++) {
      gb_op(&b, "%%r%d = %s(%%%s)", r, ops[o], args[a]);
      char v[16];
      snprintf(v, sizeof v, "r%d", r++);
      gb_ret(&b, v, ty(T, shapes[a]));
    }
    char call[96];
    snprintf(call, sizeof call, fl ? clamps_f[a] : clamps_i[a], args[a]);
    gb_op(&b, "%%r%d = %s", r, call);
    char v[16];
    snprintf(v, sizeof v, "r%d", r++);
    gb_ret(&b, v, ty(T, shapes[a]));
  }
  run_gb(&b, 0, 0);
}
END_TEST

/* Broadcast pairs: a, b and the result shape. */
static const char *const PAIRS[][3] = {
    {"4, 17", "17", "4, 17"}, {"3, 1, 5", "1, 4, 1", "3, 4, 5"}, {"", "7", "7"},
    {"1023", "1023", "1023"}, {"4096", "4096", "4096"},         {"2, 3", "2, 1", "2, 3"},
    {"5, 1", "", "5, 1"}};
#define VEC_PAIR 4

/* Arithmetic with numpy broadcasting for every numeric dtype. */
START_TEST(test_binary) {
  const char *T = NUMERIC[_i];
  int fl = is_float_name(T);
  static const char *const ops[] = {"add", "sub", "mul", "div", "maximum", "minimum", "pow"};
  gb b = {0};
  for (int k = 0; k < COUNT(PAIRS); k++) {
    char n[16];
    snprintf(n, sizeof n, "a%d", k);
    gb_arg(&b, n, ty(T, PAIRS[k][0]), fl ? 'n' : 'x');
    snprintf(n, sizeof n, "b%d", k);
    gb_arg(&b, n, ty(T, PAIRS[k][1]), fl ? 'x' : 'd');
    if (fl) {
      snprintf(n, sizeof n, "pa%d", k);
      gb_arg(&b, n, ty(T, PAIRS[k][0]), 'p');
      snprintf(n, sizeof n, "pb%d", k);
      gb_arg(&b, n, ty(T, PAIRS[k][1]), 'e');
    }
  }
  int r = 0;
  for (int o = 0; o < COUNT(ops) - !fl; o++) {
    int pairs[2] = {o % COUNT(PAIRS), VEC_PAIR};
    for (int j = 0; j < 2; j++) {
      int k = pairs[j];
      int pw = !strcmp(ops[o], "pow");
      gb_op(&b, "%%r%d = %s(%%%sa%d, %%%sb%d)", r, ops[o], pw ? "p" : "", k, pw ? "p" : "", k);
      char v[16];
      snprintf(v, sizeof v, "r%d", r++);
      gb_ret(&b, v, ty(T, PAIRS[k][2]));
    }
  }
  run_gb(&b, 1, 0);
}
END_TEST

/* Comparisons for every dtype (small values: many ties; floats with NaN). */
START_TEST(test_compare) {
  const char *T = ALL[_i];
  static const char *const ops[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  gb b = {0};
  for (int k = 0; k < COUNT(PAIRS); k++) {
    char n[16];
    snprintf(n, sizeof n, "a%d", k);
    gb_arg(&b, n, ty(T, PAIRS[k][0]), 's');
    snprintf(n, sizeof n, "b%d", k);
    gb_arg(&b, n, ty(T, PAIRS[k][1]), 's');
  }
  int r = 0;
  for (int o = 0; o < COUNT(ops); o++) {
    int pairs[2] = {o % COUNT(PAIRS), VEC_PAIR};
    for (int j = 0; j < 2; j++) {
      gb_op(&b, "%%r%d = %s(%%a%d, %%b%d)", r, ops[o], pairs[j], pairs[j]);
      char v[16];
      snprintf(v, sizeof v, "r%d", r++);
      gb_ret(&b, v, ty("bool", PAIRS[pairs[j]][2]));
    }
  }
  run_gb(&b, 0, 0);
}
END_TEST

/* select with three-way broadcasting, and the bool ops. */
START_TEST(test_select_logic) {
  const char *T = ALL[_i];
  gb b = {0};
  gb_arg(&b, "c0", "bool[4, 1]", 'x');
  gb_arg(&b, "a0", ty(T, "4, 5"), 'x');
  gb_arg(&b, "b0", ty(T, "5"), 'x');
  gb_arg(&b, "c1", "bool[4096]", 'x');
  gb_arg(&b, "a1", ty(T, "4096"), 'x');
  gb_arg(&b, "b1", ty(T, "4096"), 'x');
  gb_arg(&b, "c2", "bool[]", 'x');
  gb_arg(&b, "a2", ty(T, "3"), 'x');
  gb_arg(&b, "b2", ty(T, "2, 1"), 'x');
  gb_arg(&b, "c3", "bool[2, 3]", 'x');
  gb_arg(&b, "a3", ty(T, ""), 'x');
  gb_arg(&b, "b3", ty(T, ""), 'x');
  gb_op(&b, "%%s0 = select(%%c0, %%a0, %%b0)");
  gb_op(&b, "%%s1 = select(%%c1, %%a1, %%b1)");
  gb_op(&b, "%%s2 = select(%%c2, %%a2, %%b2)");
  gb_op(&b, "%%s3 = select(%%c3, %%a3, %%b3)");
  gb_ret(&b, "s0", ty(T, "4, 5"));
  gb_ret(&b, "s1", ty(T, "4096"));
  gb_ret(&b, "s2", ty(T, "2, 3"));
  gb_ret(&b, "s3", ty(T, "2, 3"));
  if (!strcmp(T, "bool")) {
    gb_op(&b, "%%l0 = and(%%a0, %%b0)");
    gb_op(&b, "%%l1 = or(%%a1, %%b1)");
    gb_op(&b, "%%l2 = not(%%a2)");
    gb_op(&b, "%%l3 = not(%%a1)");
    gb_ret(&b, "l0", "bool[4, 5]");
    gb_ret(&b, "l1", "bool[4096]");
    gb_ret(&b, "l2", "bool[3]");
    gb_ret(&b, "l3", "bool[4096]");
  }
  run_gb(&b, 0, 0);
}
END_TEST

/* cast from one dtype to all nine, on special values (NaN, inf, out of range). */
START_TEST(test_cast) {
  const char *S = ALL[_i];
  gb b = {0};
  gb_arg(&b, "x", ty(S, "17"), 'c');
  gb_arg(&b, "y", ty(S, "1024"), 'c');
  int r = 0;
  for (int d = 0; d < COUNT(ALL); d++) {
    gb_op(&b, "%%r%d = cast(%%x, to=%s)", r, ALL[d]);
    char v[16];
    snprintf(v, sizeof v, "r%d", r++);
    gb_ret(&b, v, ty(ALL[d], "17"));
    gb_op(&b, "%%r%d = cast(%%y, to=%s)", r, ALL[d]);
    snprintf(v, sizeof v, "r%d", r++);
    gb_ret(&b, v, ty(ALL[d], "1024"));
  }
  run_gb(&b, 0, 0);
}
END_TEST

/* ---- reductions ------------------------------------------------------------------------------------ */

/* Reductions over every axes pattern: rows (BLOCKS), columns, scattered axes, unit dims, all. */
START_TEST(test_reduce) {
  const char *T = NUMERIC[_i];
  int fl = is_float_name(T);
  gb b = {0};
  static const char *const shp[] = {"17", "3, 1023", "2, 3, 4, 5", "5, 1, 7", "4097", "300, 3, 20", "37, 136", "1100, 3", "70, 9"};
  for (int s = 0; s < 9; s++) {
    char n[16];
    snprintf(n, sizeof n, "p%d", s);
    gb_arg(&b, n, ty(T, shp[s]), fl ? 'p' : 'x');
    snprintf(n, sizeof n, "n%d", s);
    gb_arg(&b, n, ty(T, shp[s]), fl ? 'n' : 'x');
  }
  /* arg index, attributes, result dims */
  static const struct { int arg; const char *attrs, *out; } cases[] = {
      {0, "", ""},
      {1, ", axes=[1]", "3"},
      {1, ", axes=[0], keepdims=true", "1, 1023"},
      {2, ", axes=[1, 3]", "2, 4"},
      {2, ", axes=[0, 2], keepdims=true", "1, 3, 1, 5"},
      {2, ", axes=[-1]", "2, 3, 4"},
      {3, ", axes=[1]", "5, 7"},
      {3, ", axes=[0, 1]", "7"},
      {4, "", ""},
      {2, ", axes=[0, 1, 2, 3]", ""},
      {2, ", axes=[2, 3]", "2, 3"},
      /* column kernels on CUDA: long reduced runs over few contiguous outputs */
      {5, ", axes=[0]", "3, 20"},
      {5, ", axes=[0, 1]", "20"},
      /* row groups on CUDA: 16-byte vectors of rows of 136, rows past the last */
      {6, ", axes=[1]", "37"},
      {6, ", axes=[-1], keepdims=true", "37, 1"},
      /* the column kernel over more rows than its 128 lanes x 8, and on 16 lanes (R = 70) */
      {7, ", axes=[0]", "3"},
      {8, ", axes=[0]", "9"},
  };
  static const char *const ops[] = {"reduce_sum", "reduce_max", "reduce_min", "reduce_mean"};
  int r = 0;
  for (int o = 0; o < 4 - !fl; o++)
    for (int k = 0; k < COUNT(cases); k++) {
      char arg = (o == 1 || o == 2) ? 'n' : 'p';
      gb_op(&b, "%%r%d = %s(%%%c%d%s)", r, ops[o], arg, cases[k].arg, cases[k].attrs);
      char v[16];
      snprintf(v, sizeof v, "r%d", r++);
      gb_ret(&b, v, ty(T, cases[k].out));
    }
  run_gb(&b, 1, 0);
}
END_TEST

/* Reductions of fused inputs: the buffers an input is computed from at its own index
 * are read a vector at a time (row groups: 16 bytes of the input's dtype; items on
 * CUDA: 4 bytes, so 16-bit inputs give two outputs an item), a broadcast operand
 * element by element. */
START_TEST(test_reduce_fused) {
  const char *T = NUMERIC[_i];
  char k = is_float_name(T) ? 'p' : 'x';
  gb b = {0};
  gb_arg(&b, "x", ty(T, "37, 136"), k);
  gb_arg(&b, "y", ty(T, "37, 136"), k);
  gb_arg(&b, "v", ty(T, "136"), k);
  gb_arg(&b, "z", ty(T, "40, 6"), k);
  gb_arg(&b, "w", ty(T, "40, 3, 6"), k);
  /* the f32 sum of a cast gets its own input: wide integers (INT_MIN, INT_MAX, +-2^30)
   * cast to f32 cancel, and an f32 sum in any order but the interpreter's exact one is
   * then off by more than f32's tolerance (seed 502091820: -30848 against -30860) */
  gb_arg(&b, "q", ty(T, "37, 136"), is_float_name(T) ? 'p' : 'd');
  gb_op(&b, "%%c = cast(%%q, to=f32)");
  gb_op(&b, "%%r0 = reduce_sum(%%c, axes=[1])");
  gb_ret(&b, "r0", "f32[37]");
  gb_op(&b, "%%s = add(%%x, %%y)");
  gb_op(&b, "%%r1 = reduce_max(%%s, axes=[1])");
  gb_ret(&b, "r1", ty(T, "37"));
  gb_op(&b, "%%m = mul(%%x, %%v)");
  gb_op(&b, "%%r2 = reduce_sum(%%m, axes=[-1], keepdims=true)");
  gb_ret(&b, "r2", ty(T, "37, 1"));
  gb_op(&b, "%%r3 = reduce_sum(%%z, axes=[0])");
  gb_ret(&b, "r3", ty(T, "6"));
  gb_arg(&b, "zq", ty(T, "40, 6"), is_float_name(T) ? 'p' : 'd');  /* as q */
  gb_op(&b, "%%zc = cast(%%zq, to=f32)");
  gb_op(&b, "%%r4 = reduce_mean(%%zc, axes=[0])");
  gb_ret(&b, "r4", "f32[6]");
  gb_op(&b, "%%r5 = reduce_min(%%w, axes=[1])");
  gb_ret(&b, "r5", ty(T, "40, 6"));
  gb_op(&b, "%%wy = reshape(%%w, shape=[40, 18])");
  gb_op(&b, "%%r6 = reduce_max(%%wy, axes=[0])");
  gb_ret(&b, "r6", ty(T, "18"));
  run_gb(&b, 1, 0);
}
END_TEST

/* argmax: first index of the maximum (ties and NaN), rows and columns. */
START_TEST(test_argmax) {
  const char *T = NUMERIC[_i];
  gb b = {0};
  gb_arg(&b, "a", ty(T, "17"), 's');
  gb_arg(&b, "b", ty(T, "3, 1023"), 's');
  gb_arg(&b, "c", ty(T, "2, 3, 4"), 's');
  gb_arg(&b, "e", ty(T, "4097"), 's');
  gb_arg(&b, "f", ty(T, "5, 1"), 's');
  gb_op(&b, "%%r0 = argmax(%%a)");
  gb_op(&b, "%%r1 = argmax(%%b, axis=1)");
  gb_op(&b, "%%r2 = argmax(%%b, axis=0)");
  gb_op(&b, "%%r3 = argmax(%%c, axis=1, keepdims=true)");
  gb_op(&b, "%%r4 = argmax(%%e, axis=0)");
  gb_op(&b, "%%r5 = argmax(%%f, axis=-1)");
  gb_op(&b, "%%r6 = argmax(%%c, axis=-1)");
  gb_ret(&b, "r0", "i64[]");
  gb_ret(&b, "r1", "i64[3]");
  gb_ret(&b, "r2", "i64[1023]");
  gb_ret(&b, "r3", "i64[2, 1, 4]");
  gb_ret(&b, "r4", "i64[]");
  gb_ret(&b, "r5", "i64[5]");
  gb_ret(&b, "r6", "i64[2, 3]");
  run_gb(&b, 0, 0);
}
END_TEST

/* softmax and log_softmax on rows (BLOCKS) and inner axes (ITEMS). */
START_TEST(test_softmax) {
  const char *T = FLOATS[_i];
  gb b = {0};
  static const struct { const char *shape, *axis; } cases[] = {
      {"3, 1023", "-1"}, {"4, 17, 3", "1"}, {"4097", "0"}, {"1", "0"}, {"2, 1", "1"}, {"2, 5, 33", "2"},
      /* 16-byte row loads and stores on CUDA: whole and partial last vectors per block */
      {"3, 1024", "-1"}, {"2, 1032", "-1"},
      /* row groups (CUDA): 4-32 lanes per row, several rows per block, the last block's
       * rows past the end, a partial last vector per group */
      {"37, 64", "-1"}, {"5, 72", "-1"}, {"3, 40", "-1"}};
  for (int k = 0; k < COUNT(cases); k++) {
    char n[16];
    snprintf(n, sizeof n, "x%d", k);
    gb_arg(&b, n, ty(T, cases[k].shape), 'x');
    for (int l = 0; l < 2; l++) {
      gb_op(&b, "%%%c%d = %s(%%x%d, axis=%s)", l ? 'l' : 's', k, l ? "log_softmax" : "softmax", k,
            cases[k].axis);
      snprintf(n, sizeof n, "%c%d", l ? 'l' : 's', k);
      gb_ret(&b, n, ty(T, cases[k].shape));
    }
  }
  run_gb(&b, 1, 0);
}
END_TEST

/* layernorm over trailing dims (incl. several) and rmsnorm. */
START_TEST(test_norms) {
  const char *T = FLOATS[_i];
  gb b = {0};
  gb_arg(&b, "x0", ty(T, "3, 1023"), 'x');
  gb_arg(&b, "g0", ty(T, "1023"), 'x');
  gb_arg(&b, "b0", ty(T, "1023"), 'x');
  gb_arg(&b, "x1", ty(T, "2, 3, 17"), 'x');
  gb_arg(&b, "g1", ty(T, "3, 17"), 'x');
  gb_arg(&b, "b1", ty(T, "3, 17"), 'x');
  gb_arg(&b, "x2", ty(T, "4, 1"), 'x');
  gb_arg(&b, "g2", ty(T, "1"), 'x');
  gb_arg(&b, "b2", ty(T, "1"), 'x');
  gb_arg(&b, "x3", ty(T, "2, 4097"), 'x');
  gb_arg(&b, "g3", ty(T, "4097"), 'x');
  gb_op(&b, "%%n0 = layernorm(%%x0, %%g0, %%b0)");
  gb_op(&b, "%%n1 = layernorm(%%x1, %%g1, %%b1, axis=1, eps=0.001)");
  gb_op(&b, "%%n2 = layernorm(%%x2, %%g2, %%b2, axis=-1)");
  gb_arg(&b, "g4", ty(T, "17"), 'x');
  gb_op(&b, "%%m0 = rmsnorm(%%x1, %%g4)");
  gb_op(&b, "%%m1 = rmsnorm(%%x3, %%g3, eps=0.0001)");
  gb_op(&b, "%%m2 = rmsnorm(%%x2, %%g2)");
  gb_ret(&b, "n0", ty(T, "3, 1023"));
  gb_ret(&b, "n1", ty(T, "2, 3, 17"));
  gb_ret(&b, "n2", ty(T, "4, 1"));
  gb_ret(&b, "m0", ty(T, "2, 3, 17"));
  gb_ret(&b, "m1", ty(T, "2, 4097"));
  gb_ret(&b, "m2", ty(T, "4, 1"));
  /* rows of R (the last dim) through layernorm and rmsnorm on CUDA:
   * 1032: read and written 16 bytes at a time (a partial last vector per block);
   * 64, 72: row groups (8-32 lanes per row, rows past the last block's end);
   * 4104: a block of 128 threads holding up to 64 elements each (a partial last vector) */
  static const struct { const char *shape, *row; } rows[] = {
      {"3, 1032", "1032"}, {"37, 64", "64"}, {"5, 72", "72"}, {"2, 4104", "4104"}};
  for (int i = 0; i < COUNT(rows); i++) {
    char x[8], g[8], bb[8], n[8], m[8];
    snprintf(x, sizeof x, "x%d", 5 + i);
    snprintf(g, sizeof g, "g%d", 5 + i);
    snprintf(bb, sizeof bb, "b%d", 5 + i);
    snprintf(n, sizeof n, "n%d", 5 + i);
    snprintf(m, sizeof m, "m%d", 5 + i);
    gb_arg(&b, x, ty(T, rows[i].shape), 'x');
    gb_arg(&b, g, ty(T, rows[i].row), 'x');
    gb_arg(&b, bb, ty(T, rows[i].row), 'x');
    gb_op(&b, "%%%s = layernorm(%%%s, %%%s, %%%s)", n, x, g, bb);
    gb_op(&b, "%%%s = rmsnorm(%%%s, %%%s)", m, x, g);
    gb_ret(&b, n, ty(T, rows[i].shape));
    gb_ret(&b, m, ty(T, rows[i].shape));
  }
  /* fused inputs (x + residual, a cast): their sources read a vector at a time, in
   * block mode (rows of 1032) and row groups (64) */
  gb_arg(&b, "y5", ty(T, "3, 1032"), 'x');
  gb_arg(&b, "y6", ty(T, "37, 64"), 'x');
  gb_arg(&b, "gf", "f32[64]", 'x');
  gb_op(&b, "%%a5 = add(%%x5, %%y5)");
  gb_op(&b, "%%f5 = layernorm(%%a5, %%g5, %%b5)");
  gb_op(&b, "%%a6 = add(%%x6, %%y6)");
  gb_op(&b, "%%f6 = rmsnorm(%%a6, %%g6)");
  gb_op(&b, "%%c6 = cast(%%x6, to=f32)");
  gb_op(&b, "%%f7 = rmsnorm(%%c6, %%gf)");
  gb_ret(&b, "f5", ty(T, "3, 1032"));
  gb_ret(&b, "f6", ty(T, "37, 64"));
  gb_ret(&b, "f7", "f32[37, 64]");
  run_gb(&b, 1, 0);
}
END_TEST

/* conv2d: padding forms, stride, dilation, groups, 1x1. */
START_TEST(test_conv) {
  const char *T = FLOATS[_i];
  static const struct { const char *x, *w, *attrs, *out; } cases[] = {
      {"1, 3, 9, 9", "4, 3, 3, 3", ", padding=[1, 1]", "1, 4, 9, 9"},
      {"2, 4, 8, 8", "6, 2, 3, 3", ", stride=[2, 2], groups=2", "2, 6, 3, 3"},
      {"1, 2, 7, 7", "3, 2, 3, 3", ", dilation=[2, 2], padding=[0, 1, 2, 3]", "1, 3, 5, 7"},
      {"1, 5, 4, 4", "2, 5, 1, 1", "", "1, 2, 4, 4"},
      {"1, 1, 5, 6", "1, 1, 2, 3", ", stride=[2, 1], padding=[1, 0]", "1, 1, 3, 4"},
  };
  gb b = {0};
  for (int k = 0; k < COUNT(cases); k++) {
    char n[16];
    snprintf(n, sizeof n, "x%d", k);
    gb_arg(&b, n, ty(T, cases[k].x), 'x');
    snprintf(n, sizeof n, "w%d", k);
    gb_arg(&b, n, ty(T, cases[k].w), 'x');
    gb_op(&b, "%%c%d = conv2d(%%x%d, %%w%d%s)", k, k, k, cases[k].attrs);
    snprintf(n, sizeof n, "c%d", k);
    gb_ret(&b, n, ty(T, cases[k].out));
  }
  run_gb(&b, 1, 0);
}
END_TEST

/* Grouped and depthwise conv2d (codegen/emit_dwconv.c) in NCHW and in NHWC (layout="nhwc"):
 * kernel sizes 1x3 .. 7x7, strides, padding forms, dilation, odd channel counts, channel
 * multiplier > 1, groups of several channels, widths past one register tile (the interior
 * path and ragged last tiles), a window wider than the emitter takes (NCHW: the direct
 * loops), and bias + relu epilogues. */
START_TEST(test_dwconv) {
  const char *T = FLOATS[_i];
  static const struct { const char *x, *w, *attrs, *out; int epi; } cases[] = {
      {"2, 8, 9, 10", "8, 1, 3, 3", ", padding=[1, 1], groups=8", "2, 8, 9, 10", 1},
      {"1, 12, 11, 9", "12, 1, 5, 5", ", stride=[2, 2], padding=[2, 2], groups=12", "1, 12, 6, 5", 0},
      {"1, 6, 9, 9", "6, 1, 7, 7", ", padding=[3, 3], groups=6", "1, 6, 9, 9", 0},
      {"1, 5, 8, 8", "5, 1, 3, 3", ", dilation=[2, 2], padding=[2, 1, 0, 3], groups=5", "1, 5, 6, 8", 0},
      {"1, 4, 7, 7", "8, 1, 3, 3", ", stride=[2, 1], padding=[1, 1], groups=4", "1, 8, 4, 7", 1},
      {"2, 8, 6, 6", "12, 2, 3, 3", ", padding=[1, 1], groups=4", "2, 12, 6, 6", 1},
      {"1, 8, 5, 5", "16, 4, 3, 3", ", padding=[1, 1], groups=2", "1, 16, 5, 5", 0},
      {"1, 4, 3, 40", "4, 1, 1, 3", ", padding=[0, 1], groups=4", "1, 4, 3, 40", 0},
      {"1, 3, 4, 37", "3, 1, 3, 3", ", stride=[1, 2], padding=[1, 1], groups=3", "1, 3, 4, 19", 1},
      {"1, 2, 3, 20", "2, 1, 1, 17", ", groups=2", "1, 2, 3, 4", 0},
  };
  gb b = {0};
  for (int k = 0; k < COUNT(cases); k++) {
    int64_t x[4], o[4], w0;
    ck_assert_int_eq(sscanf(cases[k].x, "%ld, %ld, %ld, %ld", &x[0], &x[1], &x[2], &x[3]), 4);
    ck_assert_int_eq(sscanf(cases[k].out, "%ld, %ld, %ld, %ld", &o[0], &o[1], &o[2], &o[3]), 4);
    ck_assert_int_eq(sscanf(cases[k].w, "%ld", &w0), 1);
    for (int nhwc = 0; nhwc < 2; nhwc++) {
      if (nhwc && k == COUNT(cases) - 1) break;  /* NHWC takes windows of <= 16 columns */
      char n[32], xs[64], os[64], bs[32];
      if (nhwc) {
        snprintf(xs, sizeof xs, "%ld, %ld, %ld, %ld", x[0], x[2], x[3], x[1]);
        snprintf(os, sizeof os, "%ld, %ld, %ld, %ld", o[0], o[2], o[3], o[1]);
        snprintf(bs, sizeof bs, "%ld", w0);
      } else {
        snprintf(xs, sizeof xs, "%s", cases[k].x);
        snprintf(os, sizeof os, "%s", cases[k].out);
        snprintf(bs, sizeof bs, "%ld, 1, 1", w0);
      }
      snprintf(n, sizeof n, "x%d_%d", k, nhwc);
      gb_arg(&b, n, ty(T, xs), 'x');
      snprintf(n, sizeof n, "w%d_%d", k, nhwc);
      gb_arg(&b, n, ty(T, cases[k].w), 'x');
      gb_op(&b, "%%c%d_%d = conv2d(%%x%d_%d, %%w%d_%d%s%s)", k, nhwc, k, nhwc, k, nhwc, cases[k].attrs,
            nhwc ? ", layout=\"nhwc\"" : "");
      if (cases[k].epi) {
        snprintf(n, sizeof n, "b%d_%d", k, nhwc);
        gb_arg(&b, n, ty(T, bs), 'x');
        gb_op(&b, "%%a%d_%d = add(%%c%d_%d, %%b%d_%d)", k, nhwc, k, nhwc, k, nhwc);
        gb_op(&b, "%%r%d_%d = relu(%%a%d_%d)", k, nhwc, k, nhwc);
        snprintf(n, sizeof n, "r%d_%d", k, nhwc);
      } else {
        snprintf(n, sizeof n, "c%d_%d", k, nhwc);
      }
      gb_ret(&b, n, ty(T, os));
    }
  }
  run_gb(&b, 1, 0);
}
END_TEST

/* max/avg pools: default stride, padding (max reads -inf, avg counts only real taps);
 * layout="nhwc" on odd sizes, of an input and of a fused transpose, with an epilogue. */
START_TEST(test_pool) {
  const char *T = FLOATS[_i];
  static const struct { const char *attrs, *out, *nhwc_out; } cases[] = {
      {"kernel=[2, 2]", "1, 2, 4, 4", "2, 3, 4, 5"},
      {"kernel=[3, 3], stride=[2, 2], padding=[1, 1]", "1, 2, 4, 4", "2, 4, 5, 5"},
      {"kernel=[3, 2], stride=[1, 2], padding=[0, 1, 2, 0]", "1, 2, 8, 4", "2, 7, 5, 5"},
  };
  gb b = {0};
  gb_arg(&b, "x", ty(T, "1, 2, 8, 8"), 'n');
  gb_arg(&b, "h", ty(T, "2, 7, 9, 5"), 'n');
  gb_arg(&b, "c", ty(T, "2, 5, 7, 9"), 'n');
  gb_arg(&b, "v", ty(T, "2, 7, 9, 16"), 'n');
  gb_arg(&b, "vb", ty(T, "16"), 'n');
  gb_op(&b, "%%t = transpose(%%c, perm=[0, 2, 3, 1])");
  for (int k = 0; k < COUNT(cases); k++)
    for (int m = 0; m < 2; m++) {
      const char *op = m ? "avg_pool2d" : "max_pool2d";
      char p = m ? 'a' : 'm', n[16];
      gb_op(&b, "%%%c%d = %s(%%x, %s)", p, k, op, cases[k].attrs);
      snprintf(n, sizeof n, "%c%d", p, k);
      gb_ret(&b, n, ty(T, cases[k].out));
      gb_op(&b, "%%%ch%d = %s(%%h, %s, layout=\"nhwc\")", p, k, op, cases[k].attrs);
      snprintf(n, sizeof n, "%ch%d", p, k);
      gb_ret(&b, n, ty(T, cases[k].nhwc_out));
      gb_op(&b, "%%%ct%d = %s(%%t, %s, layout=\"nhwc\")", p, k, op, cases[k].attrs);
      gb_op(&b, "%%%cr%d = relu(%%%ct%d)", p, k, p, k);
      snprintf(n, sizeof n, "%cr%d", p, k);
      gb_ret(&b, n, ty(T, cases[k].nhwc_out));
      /* 16 channels: 16-byte loads and stores on CUDA (codegen/emit_linalg.c pool_nhwc_vec),
       * with a per-channel bias in the epilogue */
      gb_op(&b, "%%%cv%d = %s(%%v, %s, layout=\"nhwc\")", p, k, op, cases[k].attrs);
      gb_op(&b, "%%%cw%d = add(%%%cv%d, %%vb)", p, k, p, k);
      snprintf(n, sizeof n, "%cw%d", p, k);
      char vo[32];
      snprintf(vo, sizeof vo, "%.*s16", (int)(strrchr(cases[k].nhwc_out, ',') - cases[k].nhwc_out + 2), cases[k].nhwc_out);
      gb_ret(&b, n, ty(T, vo));
    }
  run_gb(&b, 1, 0);
}
END_TEST

/* ---- data movement ----------------------------------------------------------------------------------- */

static const char *const MOVE_TYPES[] = {"f32", "f16", "i64", "u8", "bool", "f64"};

/* reshape views, transposes (incl. ones that are plain copies), broadcasts. */
START_TEST(test_reshape_transpose_broadcast) {
  const char *T = MOVE_TYPES[_i];
  gb b = {0};
  gb_arg(&b, "x", ty(T, "2, 3, 5"), 'x');
  gb_arg(&b, "y", ty(T, "17, 33"), 'x');
  gb_arg(&b, "z", ty(T, "4096"), 'x');
  gb_arg(&b, "u", ty(T, "2, 1, 3"), 'x');
  gb_arg(&b, "v", ty(T, "17"), 'x');
  gb_arg(&b, "w", ty(T, "3, 1"), 'x');
  gb_arg(&b, "s", ty(T, ""), 'x');
  gb_op(&b, "%%r = reshape(%%x, shape=[6, 5])");
  gb_op(&b, "%%rt = transpose(%%r, perm=[1, 0])");
  gb_op(&b, "%%t0 = transpose(%%x, perm=[2, 0, 1])");
  gb_op(&b, "%%t1 = transpose(%%y, perm=[1, 0])");
  gb_op(&b, "%%t2 = transpose(%%z, perm=[0])");
  gb_op(&b, "%%t3 = transpose(%%u, perm=[1, 0, 2])");
  gb_op(&b, "%%b0 = broadcast(%%v, shape=[3, 17])");
  gb_op(&b, "%%b1 = broadcast(%%w, shape=[2, 3, 4])");
  gb_op(&b, "%%b2 = broadcast(%%s, shape=[5])");
  gb_op(&b, "%%b3 = broadcast(%%y, shape=[17, 33])");
  gb_op(&b, "%%rr = reshape(%%t1, shape=[3, 11, 17])");
  gb_op(&b, "%%r2 = reshape(%%rr, shape=[561])");
  gb_ret(&b, "r", ty(T, "6, 5"));
  gb_ret(&b, "rt", ty(T, "5, 6"));
  gb_ret(&b, "t0", ty(T, "5, 2, 3"));
  gb_ret(&b, "t1", ty(T, "33, 17"));
  gb_ret(&b, "t2", ty(T, "4096"));
  gb_ret(&b, "t3", ty(T, "1, 2, 3"));
  gb_ret(&b, "b0", ty(T, "3, 17"));
  gb_ret(&b, "b1", ty(T, "2, 3, 4"));
  gb_ret(&b, "b2", ty(T, "5"));
  gb_ret(&b, "b3", ty(T, "17, 33"));
  gb_ret(&b, "r2", ty(T, "561"));
  run_gb(&b, 0, 0);
}
END_TEST

/* concat along every axis kind, slice with negative/clamped bounds and steps, pad. */
START_TEST(test_concat_slice_pad) {
  const char *T = MOVE_TYPES[_i];
  const char *pv = !strcmp(T, "bool") ? "true" : is_float_name(T) ? "1.5" : "7";
  gb b = {0};
  gb_arg(&b, "a", ty(T, "2, 3"), 'x');
  gb_arg(&b, "b", ty(T, "2, 5"), 'x');
  gb_arg(&b, "c", ty(T, "2, 1"), 'x');
  gb_arg(&b, "d", ty(T, "3, 4"), 'x');
  gb_arg(&b, "e", ty(T, "1, 4"), 'x');
  gb_arg(&b, "f", ty(T, "2, 3, 4"), 'x');
  gb_arg(&b, "g", ty(T, "2, 3, 1"), 'x');
  gb_arg(&b, "h", ty(T, "10, 7"), 'x');
  gb_arg(&b, "k", ty(T, "5"), 'x');
  gb_op(&b, "%%c0 = concat(%%a, %%b, %%c, axis=1)");
  gb_op(&b, "%%c1 = concat(%%d, %%e, axis=0)");
  gb_op(&b, "%%c2 = concat(%%f, %%g, axis=-1)");
  gb_op(&b, "%%c3 = concat(%%a, axis=0)");
  gb_op(&b, "%%s0 = slice(%%h, start=[1, -5], end=[9, 7], step=[2, 1])");
  gb_op(&b, "%%s1 = slice(%%h, start=[-100, 0], end=[100, 7])");
  gb_op(&b, "%%s2 = slice(%%h, start=[0, 6], end=[10, 7], step=[3, 1])");
  gb_op(&b, "%%s3 = slice(%%h, start=[2, 1], end=[3, 6], step=[1, 2])");
  gb_op(&b, "%%p0 = pad(%%d, pads=[1, 0, 2, 3])");
  gb_op(&b, "%%p1 = pad(%%k, pads=[0, 2], value=%s)", pv);
  gb_op(&b, "%%p2 = pad(%%f, pads=[0, 1, 0, 0, 0, 2])");
  gb_ret(&b, "c0", ty(T, "2, 9"));
  gb_ret(&b, "c1", ty(T, "4, 4"));
  gb_ret(&b, "c2", ty(T, "2, 3, 5"));
  gb_ret(&b, "c3", ty(T, "2, 3"));
  gb_ret(&b, "s0", ty(T, "4, 5"));
  gb_ret(&b, "s1", ty(T, "10, 7"));
  gb_ret(&b, "s2", ty(T, "4, 1"));
  gb_ret(&b, "s3", ty(T, "1, 3"));
  gb_ret(&b, "p0", ty(T, "6, 7"));
  gb_ret(&b, "p1", ty(T, "7"));
  gb_ret(&b, "p2", ty(T, "2, 4, 6"));
  run_gb(&b, 0, 0);
}
END_TEST

/* gather with negative indices (i32 and i64 index types), and split. */
START_TEST(test_gather_split) {
  const char *T = MOVE_TYPES[_i];
  static const struct { const char *x, *ind, *axis, *out; int64_t range; } cases[] = {
      {"5, 4", "i64[3]", "0", "3, 4", 5},
      {"2, 7, 3", "i32[2, 2]", "1", "2, 2, 2, 3", 7},
      {"6", "i64[]", "0", "", 6},
      {"4, 6", "i32[9]", "-1", "4, 9", 6},
  };
  for (int k = 0; k < COUNT(cases); k++) {
    gb b = {0};
    gb_arg(&b, "x", ty(T, cases[k].x), 'x');
    gb_arg(&b, "i", cases[k].ind, 'i');
    gb_op(&b, "%%g = gather(%%x, %%i, axis=%s)", cases[k].axis);
    gb_ret(&b, "g", ty(T, cases[k].out));
    run_gb(&b, 0, cases[k].range);
  }
  gb b = {0};
  gb_arg(&b, "x", ty(T, "2, 6"), 'x');
  gb_arg(&b, "y", ty(T, "7, 3"), 'x');
  gb_op(&b, "%%a, %%b, %%c = split(%%x, axis=1, sizes=[1, 2, 3])");
  gb_op(&b, "%%d, %%e = split(%%y, axis=0, sizes=[3, 4])");
  gb_op(&b, "%%f = split(%%y, axis=-1, sizes=[3])");
  gb_ret(&b, "a", ty(T, "2, 1"));
  gb_ret(&b, "b", ty(T, "2, 2"));
  gb_ret(&b, "c", ty(T, "2, 3"));
  gb_ret(&b, "e", ty(T, "4, 3"));
  gb_ret(&b, "d", ty(T, "3, 3"));
  gb_ret(&b, "f", ty(T, "7, 3"));
  run_gb(&b, 0, 0);
}
END_TEST

/* const (scalar fills, lists converted at compile time) and iota. */
START_TEST(test_const_iota) {
  gb b = {0};
  gb_arg(&b, "x", "f32[3, 4]", 'x');
  gb_op(&b, "%%c0 = const(value=1.5)");
  gb_op(&b, "%%c1 = const(value=2.5, shape=[3, 4], dtype=f16)");
  gb_op(&b, "%%c2 = const(value=7, shape=[4096], dtype=i32)");
  gb_op(&b, "%%c3 = const(value=true, shape=[5])");
  gb_op(&b, "%%c4 = const(value=[1.0, 2.5, -3.0, 4.0, 5.5, 6.0], shape=[2, 3])");
  gb_op(&b, "%%c5 = const(value=[1, -2, 3], dtype=i8)");
  gb_op(&b, "%%c6 = const(value=0.1, shape=[17], dtype=bf16)");
  gb_op(&b, "%%c7 = const(value=[0.1, 65519.0, 1e-08], dtype=f16)");
  gb_op(&b, "%%c8 = const(value=-2.7, shape=[3], dtype=i32)");
  gb_op(&b, "%%c9 = const(value=[true, false, true])");
  gb_op(&b, "%%s = add(%%x, %%c0)");
  gb_op(&b, "%%i0 = iota(shape=[3, 4], axis=1)");
  gb_op(&b, "%%i1 = iota(shape=[3, 4], axis=0, dtype=f32)");
  gb_op(&b, "%%i2 = iota(shape=[2, 3, 5], axis=1, dtype=i32)");
  gb_op(&b, "%%i3 = iota(shape=[4096], dtype=f16)");
  gb_op(&b, "%%i4 = iota(shape=[7], dtype=u8)");
  gb_op(&b, "%%i5 = iota(shape=[2, 3, 5], axis=-1, dtype=bf16)");
  gb_ret(&b, "c0", "f32[]");
  gb_ret(&b, "c1", "f16[3, 4]");
  gb_ret(&b, "c2", "i32[4096]");
  gb_ret(&b, "c3", "bool[5]");
  gb_ret(&b, "c4", "f32[2, 3]");
  gb_ret(&b, "c5", "i8[3]");
  gb_ret(&b, "c6", "bf16[17]");
  gb_ret(&b, "c7", "f16[3]");
  gb_ret(&b, "c8", "i32[3]");
  gb_ret(&b, "c9", "bool[3]");
  gb_ret(&b, "s", "f32[3, 4]");
  gb_ret(&b, "i0", "i64[3, 4]");
  gb_ret(&b, "i1", "f32[3, 4]");
  gb_ret(&b, "i2", "i32[2, 3, 5]");
  gb_ret(&b, "i3", "f16[4096]");
  gb_ret(&b, "i4", "u8[7]");
  gb_ret(&b, "i5", "bf16[2, 3, 5]");
  run_gb(&b, 0, 0);
}
END_TEST

/* ---- params, outputs, in-place ------------------------------------------------------------------- */

/* Params are CONST buffers on the weights' data; a returned param is copied. */
START_TEST(test_params) {
  static float w[17 * 5], bias[5];
  uint64_t seed = g_seed;
  tu_fill(w, GRAPHC_DTYPE_F32, 17 * 5, 'x', 0, &seed);
  tu_fill(bias, GRAPHC_DTYPE_F32, 5, 'x', 0, &seed);
  gc_st_tensor ts[2] = {{"fc.w", GRAPHC_DTYPE_F32, 2, {17, 5}, w, sizeof w},
                        {"fc.b", GRAPHC_DTYPE_F32, 1, {5}, bias, sizeof bias}};
  gc_safetensors st = {.n = 2, .tensors = ts, .path = (char *)"mem"};
  const char *text =
      "version 1;\n"
      "graph @t(%x: f32[3, 17]) -> (f32[3, 5], f32[5], f32[17, 5]) {\n"
      "  param %w: f32[17, 5] = \"fc.w\";\n"
      "  param %b: f32[5] = \"fc.b\";\n"
      "  %m = matmul(%x, %w);\n"
      "  %y = add(%m, %b);\n"
      "  return %y, %b, %w;\n"
      "}\n";
  gc_module *m = parse_ok(text);
  gc_plan *p = lower_ok(m->graphs[0], &st, KIR_TARGET_CUDA);
  int n_const = 0;
  for (int b = 0; b < p->n_buffers; b++)
    if (p->buffers[b].kind == GC_BUF_CONST) {
      const gc_plan_const *c = &p->consts[p->buffers[b].index];
      ck_assert(c->data == (const void *)w || c->data == (const void *)bias);
      ck_assert_str_eq(c->data == (const void *)w ? "fc.w" : "fc.b", c->name);
      n_const++;
    }
  ck_assert_int_eq(n_const, 2);
  ck_assert_int_eq(p->n_consts, 2);
  gc_plan_free(p);
  /* without weights (code generation only) params have no data but lower fine */
  p = lower_ok(m->graphs[0], NULL, KIR_TARGET_CUDA);
  for (int i = 0; i < p->n_consts; i++) ck_assert_ptr_null(p->consts[i].data);
  gc_plan_free(p);
  gc_module_free(m);
  gb kinds = {0};
  kinds.kinds[0] = 'x';
  run_case_w(strdup(text), 1, 0, &st, &kinds);
}
END_TEST

/* Launches that read only weights (a reduction of a param, a cast of that) move to the front
 * of the plan as its prologue (codegen/prologue.c), their results live to the end, and the
 * plan computes the same values; CUDA and host plans alike. */
START_TEST(test_prologue) {
  static float w[6 * 40], bias[40];
  uint64_t seed = g_seed;
  tu_fill(w, GRAPHC_DTYPE_F32, 6 * 40, 'x', 0, &seed);
  tu_fill(bias, GRAPHC_DTYPE_F32, 40, 'x', 0, &seed);
  gc_st_tensor ts[2] = {{"w", GRAPHC_DTYPE_F32, 2, {6, 40}, w, sizeof w},
                        {"b", GRAPHC_DTYPE_F32, 1, {40}, bias, sizeof bias}};
  gc_safetensors st = {.n = 2, .tensors = ts, .path = (char *)"mem"};
  const char *text =
      "version 1;\n"
      "graph @t(%x: f32[3, 40]) -> (f32[3, 40], f32[3]) {\n"
      "  %e = exp(%x);\n"
      "  %ex = reduce_sum(%e, axes=[1]);\n"
      "  param %w: f32[6, 40] = \"w\";\n"
      "  param %b: f32[40] = \"b\";\n"
      "  %s = reduce_max(%w, axes=[0]);\n"
      "  %t = add(%s, %b);\n"
      "  %u = reduce_sum(%t, axes=[0], keepdims=true);\n"
      "  %y = add(%x, %u);\n"
      "  %z = mul(%y, %t);\n"
      "  return %z, %ex;\n"
      "}\n";
  gc_module *m = parse_ok(text);
  for (int host = 0; host < 2; host++) {
  gc_plan *p = lower_ok(m->graphs[0], &st, host ? KIR_TARGET_HOST : KIR_TARGET_CUDA);
  ck_assert_msg(p->n_prologue >= 1 && p->n_prologue < p->n_launches, "prologue %d of %d launches (%s)",
                p->n_prologue, p->n_launches, host ? "host" : "cuda");
  for (int L = 0; L < p->n_launches; L++) {
    const kir_kernel *k = p->kir->kernels[p->launches[L]];
    int reads_input = 0;
    for (int i = 0; i < k->n_params; i++)
      if (k->params[i].kind == KIR_PARAM_BUFFER) {
        const gc_plan_buffer *b = &p->buffers[k->params[i].binding];
        reads_input |= b->kind == GC_BUF_INPUT || b->kind == GC_BUF_OUTPUT;
        /* what the prologue writes lives to the end of the plan */
        if (L < p->n_prologue && !k->params[i].readonly) ck_assert_int_eq(b->last_use, p->n_launches - 1);
      }
    ck_assert_msg(reads_input == (L >= p->n_prologue), "launch %d (%s): input/output %d, prologue %d", L,
                  k->name, reads_input, p->n_prologue);
  }
  gc_plan_free(p);
  /* GRAPHC_PROLOGUE=0 (kir_target.prologue): every launch in every run */
  setenv("GRAPHC_PROLOGUE", "0", 1);
  p = lower_ok(m->graphs[0], &st, host ? KIR_TARGET_HOST : KIR_TARGET_CUDA);
  unsetenv("GRAPHC_PROLOGUE");
  ck_assert_int_eq(p->n_prologue, 0);
  gc_plan_free(p);
  }
  gc_module_free(m);
  gb kinds = {0};
  kinds.kinds[0] = 'x';
  run_case_w(strdup(text), 2, 0, &st, &kinds);
}
END_TEST

/* Number of TEMP buffers of a plan. */
static int temp_buffers(const gc_plan *p) {
  int n = 0;
  for (int b = 0; b < p->n_buffers; b++) n += p->buffers[b].kind == GC_BUF_TEMP;
  return n;
}

/* The name of the kernel that writes OUTPUT index i. */
static const char *output_writer(const gc_plan *p, int i) {
  for (int b = 0; b < p->n_buffers; b++)
    if (p->buffers[b].kind == GC_BUF_OUTPUT && p->buffers[b].index == i)
      for (int l = 0; l < p->n_launches; l++)
        if (kernel_writes(p->kir->kernels[p->launches[l]], b)) return p->kir->kernels[p->launches[l]]->name;
  return "";
}

/* Outputs that alias args, views, consts or each other get copies; others are written in place. */
START_TEST(test_output_aliases) {
  const char *text =
      "version 1;\n"
      "graph @t(%x: f32[17], %y: f32[4, 17]) -> (f32[17], f32[17], f32[17], f32[1, 17], f32[4, 17], "
      "f32[3], f32[17], f32[1, 17]) {\n"
      "  %a = exp(%x);\n"
      "  %r = reshape(%a, shape=[1, 17]);\n"
      "  %c = const(value=[1.0, 2.0, 3.0]);\n"
      "  %n = neg(%x);\n"
      "  %v = reshape(%x, shape=[1, 17]);\n"
      "  %z = add(%v, %r);\n"
      "  return %x, %a, %a, %r, %y, %c, %n, %z;\n"
      "}\n";
  gc_module *m = parse_ok(text);
  /* one kernel per op: a reshape is a view of its operand's buffer, so returning it copies */
  gc_plan *p = lower_ok_f(m->graphs[0], NULL, KIR_TARGET_CUDA, 0);
  ck_assert_str_eq(output_writer(p, 0), "copy_out0");
  ck_assert_str_eq(output_writer(p, 1), "exp_0");
  ck_assert_str_eq(output_writer(p, 2), "copy_out2");
  ck_assert_str_eq(output_writer(p, 3), "copy_out3");
  ck_assert_str_eq(output_writer(p, 4), "copy_out4");
  ck_assert_str_eq(output_writer(p, 5), "copy_out5");
  ck_assert_str_eq(output_writer(p, 6), "neg_3");
  ck_assert_str_eq(output_writer(p, 7), "add_5");
  ck_assert_int_eq(p->n_consts, 1);
  ck_assert_str_eq(p->consts[0].name, "const.2");
  gc_plan_free(p);
  /* fused: exp and the reshape are computed by add's kernel and written there
   * too (extra outputs at the same index); args, consts and repeats still copy */
  p = lower_ok_f(m->graphs[0], NULL, KIR_TARGET_CUDA, 1);
  ck_assert_str_eq(output_writer(p, 0), "copy_out0");
  ck_assert_str_eq(output_writer(p, 1), "fusion_5");
  ck_assert_str_eq(output_writer(p, 2), "copy_out2");
  ck_assert_str_eq(output_writer(p, 3), "fusion_5");
  ck_assert_str_eq(output_writer(p, 4), "copy_out4");
  ck_assert_str_eq(output_writer(p, 5), "copy_out5");
  ck_assert_str_eq(output_writer(p, 6), "neg_3");
  ck_assert_str_eq(output_writer(p, 7), "fusion_5");
  ck_assert_int_eq(temp_buffers(p), 0);
  gc_plan_free(p);
  gc_module_free(m);
  gb kinds = {0};
  strcpy(kinds.kinds, "xx");
  run_case_w(strdup(text), 0, 0, NULL, &kinds);
}
END_TEST

/* A chain of elementwise ops reuses one slot in place; a value read later does not give its slot away. */
START_TEST(test_inplace) {
  const char *text =
      "version 1;\n"
      "graph @t(%x: f32[4096], %y: f32[4096]) -> (f32[4096], f32[4096]) {\n"
      "  %a = add(%x, %y);\n"
      "  %b = exp(%a);\n"
      "  %c = mul(%b, %b);\n"
      "  %d = neg(%c);\n"
      "  %e = sub(%a, %x);\n"
      "  %f = sigmoid(%e);\n"
      "  %g = add(%f, %a);\n"
      "  return %d, %g;\n"
      "}\n";
  gc_module *m = parse_ok(text);
  for (int ti = 0; ti < 2; ti++) {
    /* one kernel per op (fusion would leave no TEMP at all, see below) */
    gc_plan *p = lower_ok_f(m->graphs[0], NULL, ti ? KIR_TARGET_HOST : KIR_TARGET_CUDA, 0);
    check_plan(p, m->graphs[0], ti ? KIR_TARGET_HOST : KIR_TARGET_CUDA);
    /* TEMPs in creation order: a, b, c, e, f */
    int t[8], n = 0;
    for (int b = 0; b < p->n_buffers; b++)
      if (p->buffers[b].kind == GC_BUF_TEMP) t[n++] = b;
    ck_assert_int_eq(n, 5);
    const gc_plan_buffer *a = &p->buffers[t[0]], *bb = &p->buffers[t[1]], *c = &p->buffers[t[2]];
    const gc_plan_buffer *e = &p->buffers[t[3]], *f = &p->buffers[t[4]];
    ck_assert_uint_ne(bb->offset, a->offset);  /* a is read again by e and g */
    ck_assert_uint_eq(c->offset, bb->offset);  /* c = b * b takes over b */
    ck_assert_uint_eq(f->offset, e->offset);   /* f = sigmoid(e) takes over e */
    /* a lives throughout; b/c, then e/f share the second slot */
    ck_assert_uint_eq(e->offset, bb->offset);
    ck_assert_uint_eq(p->arena_bytes, 2 * 16384);
    ck_assert_uint_eq(p->arena_lower_bound, 2 * 16384);
    /* the launch of c reads b through a param that no longer promises readonly */
    const kir_kernel *kc = p->kir->kernels[p->launches[c->first_use]];
    for (int i = 0; i < kc->n_params; i++)
      if (kc->params[i].binding == t[1]) ck_assert_int_eq(kc->params[i].readonly, 0);
    gc_plan_free(p);
    /* fused: both outputs from one kernel (a duplicated into both chains, the
     * two roots merged as siblings reading x and y), nothing in the arena */
    p = lower_ok_f(m->graphs[0], NULL, ti ? KIR_TARGET_HOST : KIR_TARGET_CUDA, 1);
    check_plan(p, m->graphs[0], ti ? KIR_TARGET_HOST : KIR_TARGET_CUDA);
    ck_assert_int_eq(p->kir->n_kernels, 1);
    ck_assert_str_eq(p->kir->kernels[0]->name, "fusion_3");
    ck_assert_int_eq(temp_buffers(p), 0);
    ck_assert_uint_eq(p->arena_bytes, 0);
    gc_plan_free(p);
  }
  gc_module_free(m);
  gb kinds = {0};
  strcpy(kinds.kinds, "xx");
  run_case_w(strdup(text), 1, 0, NULL, &kinds);
}
END_TEST

/* Buffer assignment on random lifetimes: never overlaps live buffers, 256-aligned,
 * deterministic, and the lower bound is the exact peak of live bytes. */
START_TEST(test_assign_random) {
  uint64_t s = g_seed;
  for (int iter = 0; iter < 300; iter++) {
    int nl = 1 + (int)tu_int(&s, 0, 39), nb = 1 + (int)tu_int(&s, 0, 59);
    gc_plan p;
    memset(&p, 0, sizeof p);
    p.n_launches = nl;
    p.launches = calloc((size_t)nl, sizeof *p.launches);
    p.n_buffers = nb;
    p.buffers = calloc((size_t)nb, sizeof *p.buffers);
    for (int b = 0; b < nb; b++) {
      gc_plan_buffer *pb = &p.buffers[b];
      pb->kind = tu_int(&s, 0, 9) == 0 ? GC_BUF_INPUT : GC_BUF_TEMP;
      pb->type.dtype = GRAPHC_DTYPE_U8;
      pb->type.rank = 1;
      pb->type.dims[0] = tu_int(&s, 1, 3) == 1 ? tu_int(&s, 1, 300) : tu_int(&s, 1, 20000);
      pb->bytes = (size_t)pb->type.dims[0];
      pb->first_use = (int)tu_int(&s, 0, nl - 1);
      pb->last_use = pb->first_use + (int)tu_int(&s, 0, nl - 1 - pb->first_use);
    }
    gc_assign_buffers(&p, NULL);
    size_t *off = malloc((size_t)nb * sizeof *off);
    for (int b = 0; b < nb; b++) off[b] = p.buffers[b].offset;
    size_t arena = p.arena_bytes, bound = p.arena_lower_bound;
    gc_assign_buffers(&p, NULL);
    ck_assert_uint_eq(arena, p.arena_bytes);
    size_t peak = 0;
    for (int l = 0; l < nl; l++) {
      size_t live = 0;
      for (int b = 0; b < nb; b++) {
        const gc_plan_buffer *x = &p.buffers[b];
        ck_assert_uint_eq(off[b], x->offset);
        if (x->kind == GC_BUF_TEMP && x->first_use <= l && l <= x->last_use) live += slot(x);
      }
      if (live > peak) peak = live;
    }
    ck_assert_uint_eq(bound, peak);
    ck_assert_uint_ge(arena, bound);
    for (int a = 0; a < nb; a++) {
      const gc_plan_buffer *x = &p.buffers[a];
      if (x->kind != GC_BUF_TEMP) continue;
      ck_assert_uint_eq(x->offset % 256, 0);
      ck_assert_uint_le(x->offset + slot(x), arena);
      for (int b = a + 1; b < nb; b++) {
        const gc_plan_buffer *y = &p.buffers[b];
        if (y->kind != GC_BUF_TEMP) continue;
        int live = x->first_use <= y->last_use && y->first_use <= x->last_use;
        int mem = x->offset < y->offset + slot(y) && y->offset < x->offset + slot(x);
        ck_assert_msg(!(live && mem), "iteration %d: buffers %d and %d overlap (seed %llu)", iter, a, b,
                      (unsigned long long)g_seed);
      }
    }
    free(off);
    free(p.launches);
    free(p.buffers);
  }
}
END_TEST

/* ---- errors, stats, determinism --------------------------------------------------------------------- */

/* Lowering errors: missing or mismatched weights at the param, unbound dims at the argument. */
START_TEST(test_errors) {
  static float w[10];
  gc_st_tensor ts[1] = {{"w", GRAPHC_DTYPE_F32, 2, {5, 2}, w, sizeof w}};
  gc_safetensors st = {.n = 1, .tensors = ts, .path = (char *)"mem.safetensors"};
  static const struct { const char *text; graphc_status_t status; int line; const char *msg; } cases[] = {
      {"version 1;\ngraph @t(%x: f32[2]) -> (f32[2]) {\n  param %w: f32[2] = \"nope\";\n"
       "  %y = add(%x, %w);\n  return %y;\n}\n",
       GRAPHC_STATUS_WEIGHTS_ERROR, 3, "\"nope\" not found"},
      {"version 1;\ngraph @t(%x: f32[2, 5]) -> (f32[2, 5]) {\n  param %w: f32[2, 5] = \"w\";\n"
       "  %y = add(%x, %w);\n  return %y;\n}\n",
       GRAPHC_STATUS_WEIGHTS_ERROR, 3, "f32[5, 2]"},
      {"version 1;\ngraph @t<B>(%x: f32[B, 4]) -> (f32[B, 4]) {\n  %y = neg(%x);\n  return %y;\n}\n",
       GRAPHC_STATUS_INVALID_ARGUMENT, 2, "symbolic"},
  };
  for (int k = 0; k < COUNT(cases); k++) {
    gc_module *m = parse_ok(cases[k].text);
    kir_target t;
    kir_target_cuda(&t, 90);
    gc_diags d;
    gc_diags_init(&d, "case.graph", cases[k].text, strlen(cases[k].text));
    gc_plan *p = gc_lower(m->graphs[0], &t, &d);
    if (p && gc_plan_bind_weights(p, &st, &d)) {
      gc_plan_free(p);
      p = NULL;
    }
    ck_assert_ptr_null(p);
    ck_assert_int_ge(d.n_errors, 1);
    ck_assert_int_eq(d.status, cases[k].status);
    ck_assert_int_eq(d.items[0].loc.line, cases[k].line);
    ck_assert_msg(strstr(d.items[0].msg, cases[k].msg) != NULL, "message: %s", d.items[0].msg);
    gc_diags_free(&d);
    gc_module_free(m);
  }
}
END_TEST

/* --stats summary: kernels with their model, consts, arena against its bound. */
START_TEST(test_stats) {
  const char *text =
      "version 1;\n"
      "graph @t(%x: f32[8, 64]) -> (f32[8, 10]) {\n"
      "  %w = const(value=0.5, shape=[64, 10]);\n"
      "  %m = matmul(%x, %w);\n"
      "  %c = const(value=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]);\n"
      "  %y = add(%m, %c);\n"
      "  %r = relu(%y);\n"
      "  return %r;\n"
      "}\n";
  gc_module *m = parse_ok(text);
  for (int fu = 0; fu < 2; fu++) {
    gc_plan *p = lower_ok_f(m->graphs[0], NULL, KIR_TARGET_CUDA, fu);
    gc_sbuf b = {0};
    gc_plan_stats(&b, p);
    char *st = gc_sbuf_take(&b);
    /* unfused: every op its kernel; fused: the splat is read by the matmul, bias
     * and relu run in its epilogue: one kernel, no TEMP */
    static const char *const want0[] = {"4 kernels, 4 launches", "fusion: off, 4 ops -> 4 kernels",
                                        "const_0", "matmul_1", "add_3", "relu_4", "10240",
                                        "consts: 1 tensors, 40 B", "arena:", "lower bound"};
    static const char *const want1[] = {"1 kernels, 1 launches", "fusion: on, 4 ops -> 1 kernels",
                                        "fusion_1", "const %w, matmul %m, add %y, relu %r", "10240",
                                        "consts: 1 tensors, 40 B", "arena: 0 bytes (lower bound 0, 0 temps)"};
    const char *const *want = fu ? want1 : want0;
    int nw = fu ? COUNT(want1) : COUNT(want0);
    for (int i = 0; i < nw; i++)
      ck_assert_msg(strstr(st, want[i]) != NULL, "stats lack \"%s\":\n%s", want[i], st);
    const kir_kernel *mm = NULL;
    for (int i = 0; i < p->kir->n_kernels; i++)
      if (!strcmp(p->kir->kernels[i]->name, fu ? "fusion_1" : "matmul_1")) mm = p->kir->kernels[i];
    ck_assert_ptr_nonnull(mm);
    ck_assert_double_eq(mm->flops, 2.0 * 8 * 64 * 10);
    /* reads of the group's inputs + writes of its outputs */
    ck_assert_double_eq(mm->bytes_moved, fu ? 4.0 * (8 * 64 + 10 + 8 * 10) : 4.0 * (8 * 64 + 64 * 10 + 8 * 10));
    free(st);
    gc_plan_free(p);
  }
  gc_module_free(m);
}
END_TEST

/* Same graph, same plan and same CUDA C; every op (unfused) or group (fused)
 * gets a kernel named <op>_<id> (one op) or fusion_<root id>. */
START_TEST(test_determinism) {
  const char *text =
      "version 1;\n"
      "graph @t(%x: f32[4, 33], %g: f32[33]) -> (f32[4, 33], i64[4], f32[4, 33]) {\n"
      "  %a = layernorm(%x, %g, %g);\n"
      "  %s = softmax(%a);\n"
      "  %i = argmax(%s);\n"
      "  %t = transpose(%s, perm=[1, 0]);\n"
      "  %u = reshape(%t, shape=[4, 33]);\n"
      "  %v = mul(%u, %s);\n"
      "  return %v, %i, %a;\n"
      "}\n";
  gc_module *m = parse_ok(text);
  for (int fu = 0; fu < 2; fu++) {
    char *src[2];
    for (int r = 0; r < 2; r++) {
      gc_plan *p = lower_ok_f(m->graphs[0], NULL, KIR_TARGET_CUDA, fu);
      static const char *const names0[] = {"layernorm_0", "softmax_1", "argmax_2", "transpose_3", "mul_5"};
      static const char *const names1[] = {"layernorm_0", "softmax_1", "argmax_2", "fusion_5"};
      const char *const *names = fu ? names1 : names0;
      int nn = fu ? COUNT(names1) : COUNT(names0);
      ck_assert_int_eq(p->kir->n_kernels, nn);
      for (int i = 0; i < nn; i++) ck_assert_str_eq(p->kir->kernels[p->launches[i]]->name, names[i]);
      gc_sbuf b = {0};
      gc_cuda_c_print(&b, p->kir);
      src[r] = gc_sbuf_take(&b);
      gc_plan_free(p);
    }
    ck_assert_str_eq(src[0], src[1]);
    free(src[0]);
    free(src[1]);
  }
  gc_module_free(m);
}
END_TEST

/* ---- suite ------------------------------------------------------------------------------------------ */

/* One test per dtype; one tcase per op family (CK_RUN_CASE=conv runs one). */
static Suite *lower_suite(void) {
  Suite *s = suite_create("lower");
  const struct { const char *name; const TTest *test; int n; } fams[] = {
      {"unary", test_unary_float, COUNT(FLOATS)},
      {"unary", test_unary_numeric, COUNT(NUMERIC)},
      {"unary", test_loop_vecs, 14},
      {"binary", test_binary, COUNT(NUMERIC)},
      {"binary", test_compare, COUNT(ALL)},
      {"binary", test_select_logic, COUNT(ALL)},
      {"cast", test_cast, COUNT(ALL)},
      {"reduce", test_reduce, COUNT(NUMERIC)},
      {"reduce", test_reduce_fused, COUNT(NUMERIC)},
      {"reduce", test_argmax, COUNT(NUMERIC)},
      {"norm", test_softmax, COUNT(FLOATS)},
      {"norm", test_norms, COUNT(FLOATS)},
      {"conv", test_conv, COUNT(FLOATS)},
      {"conv", test_dwconv, COUNT(FLOATS)},
      {"conv", test_pool, COUNT(FLOATS)},
      {"move", test_reshape_transpose_broadcast, COUNT(MOVE_TYPES)},
      {"move", test_concat_slice_pad, COUNT(MOVE_TYPES)},
      {"move", test_gather_split, COUNT(MOVE_TYPES)},
      {"move", test_const_iota, 1},
  };
  TCase *tc = NULL;
  for (int i = 0; i < COUNT(fams); i++) {
    if (!tc || strcmp(fams[i - 1].name, fams[i].name) != 0) {
      tc = tcase_create(fams[i].name);
      tcase_set_timeout(tc, 600);
      suite_add_tcase(s, tc);
    }
    tcase_add_loop_test(tc, fams[i].test, 0, fams[i].n);
  }
  TCase *tp = tcase_create("plan");
  tcase_set_timeout(tp, 600);
  tcase_add_test(tp, test_params);
  tcase_add_test(tp, test_output_aliases);
  tcase_add_test(tp, test_inplace);
  tcase_add_test(tp, test_prologue);
  tcase_add_test(tp, test_assign_random);
  tcase_add_test(tp, test_errors);
  tcase_add_test(tp, test_stats);
  tcase_add_test(tp, test_determinism);
  suite_add_tcase(s, tp);
  return s;
}

/* Seed once per run (printed), then the suite. */
int main(void) {
  g_seed = tu_seed();
  printf("test_lower: seed %llu (set GRAPHC_TEST_SEED to reproduce)\n", (unsigned long long)g_seed);
  fflush(stdout);
  return tu_run_suite(lower_suite());
}
