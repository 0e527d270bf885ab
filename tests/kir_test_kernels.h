/* kir_test_kernels.h - hand-built Kernel IR modules shared by test_kir.c
 * (print, compile, ptxas) and test_kir_device.c (run and compare on a GPU).
 * Header-only: static functions, included by one suite each. */
#ifndef GC_KIR_TEST_KERNELS_H
#define GC_KIR_TEST_KERNELS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen/kir.h"
#include "testutil.h"

/* Not every suite uses every builder. */
#pragma GCC diagnostic ignored "-Wunused-function"

#define F64 GRAPHC_DTYPE_F64
#define F32 GRAPHC_DTYPE_F32
#define F16 GRAPHC_DTYPE_F16
#define BF16 GRAPHC_DTYPE_BF16
#define I64 GRAPHC_DTYPE_I64
#define I32 GRAPHC_DTYPE_I32
#define I8 GRAPHC_DTYPE_I8
#define U8 GRAPHC_DTYPE_U8
#define BOOL GRAPHC_DTYPE_BOOL
#define NDT GRAPHC_DTYPE_COUNT_

/* ---- small builders ------------------------------------------------------------------ */

/* Shorthands: i64 literal, the item index, i64 add and mul. */
static kir_expr *c64(kir_module *m, int64_t v) { return kir_const_i(m, I64, v); }
static kir_expr *item_ref(kir_module *m, kir_kernel *k) { return kir_var_ref(m, k, k->item_var); }
static kir_expr *add(kir_module *m, kir_expr *a, kir_expr *b) { return kir_binary(m, KIR_ADD, a, b); }
static kir_expr *mul(kir_module *m, kir_expr *a, kir_expr *b) { return kir_binary(m, KIR_MUL, a, b); }

/* Operand classes of each op, written independently of kir.c. */
static int test_op_accepts(kir_op op, gc_dtype t) {
  int num = t == F32 || t == F64 || t == I32 || t == I64;
  int fl = t == F32 || t == F64;
  int logic = t == BOOL || t == I32 || t == I64;
  if (op <= KIR_ABS) return num;
  if (op == KIR_NOT) return logic;
  if (op <= KIR_CEIL) return fl;
  /* tanh.approx, rcp.approx (CUDA, f32): the f16 / bf16 tanh, sigmoid and silu of
   * test_backend_ops check them on the GPU */
  if (op == KIR_TANH_APPROX || op == KIR_RCP_APPROX) return 0;
  /* tf32.rna (CUDA, f32): test_cuda_runtime's tf32_rounding checks it has no bias */
  if (op == KIR_TF32_ROUND) return 0;
  /* fp8 conversions (CUDA sm_89+, a result type of their own): test_f8 and test_backend_ops */
  if (op == KIR_F8E4M3_SAT || op == KIR_F8E5M2_SAT) return 0;
  /* sigmoid (f32): test_cpu_backend's host_math_ulps and every sigmoid and silu test */
  if (op == KIR_SIGMOID) return 0;
  if (op <= KIR_MAX) return num;
  if (op == KIR_POW) return fl;
  if (op <= KIR_XOR) return logic;
  return num || t == BOOL;
}

/* Unary op? Comparison (bool result)? */
static int op_unary(kir_op op) { return op <= KIR_F8E5M2_SAT; }
static int op_cmp(kir_op op) { return op >= KIR_EQ; }

#define NOPS ((int)KIR_OP_COUNT_)
static const gc_dtype arith_types[] = {F32, F64, I32, I64, BOOL};

/* Kernel "ops_<T>": params a, b (T, readonly), out (T), outb (bool); for every
 * op accepting T: (cmp ? outb : out)[item*NOPS + op] = op(a[item], b[item]). */
static kir_kernel *build_ops_kernel(kir_module *m, gc_dtype t, int64_t n) {
  char name[32];
  snprintf(name, sizeof name, "ops_%s", graphc_dtype_name(t));
  kir_kernel *k = kir_kernel_new(m, name, (kir_launch){KIR_LAUNCH_ITEMS, n, 128});
  int pa = kir_add_param(m, k, "a", KIR_PARAM_BUFFER, t, 1, 0);
  int pb = kir_add_param(m, k, "b", KIR_PARAM_BUFFER, t, 1, 1);
  int po = kir_add_param(m, k, "out", KIR_PARAM_BUFFER, t, 0, 2);
  int pob = kir_add_param(m, k, "outb", KIR_PARAM_BUFFER, BOOL, 0, 3);
  int va = kir_add_var(m, k, "a", t), vb = kir_add_var(m, k, "b", t);
  kir_emit_assign(m, &k->body, va, kir_load(m, k, KIR_GLOBAL, pa, item_ref(m, k)));
  kir_emit_assign(m, &k->body, vb, kir_load(m, k, KIR_GLOBAL, pb, item_ref(m, k)));
  for (int op = 0; op < NOPS; op++) {
    if (!test_op_accepts((kir_op)op, t)) continue;
    kir_expr *idx = add(m, mul(m, item_ref(m, k), c64(m, NOPS)), c64(m, op));
    kir_expr *a = kir_var_ref(m, k, va), *b = kir_var_ref(m, k, vb);
    kir_expr *r = op_unary((kir_op)op) ? kir_unary(m, (kir_op)op, a) : kir_binary(m, (kir_op)op, a, b);
    kir_emit_store(m, &k->body, KIR_GLOBAL, op_cmp((kir_op)op) ? pob : po, idx, r);
  }
  return k;
}

/* Kernel "cast_<S>": x = in[item] (a var of type S); out_T[item] = cast(T, x)
 * for every dtype T (params: in, then out_T in dtype order). */
static kir_kernel *build_cast_kernel(kir_module *m, gc_dtype s, int64_t n) {
  char name[32];
  snprintf(name, sizeof name, "cast_%s", graphc_dtype_name(s));
  kir_kernel *k = kir_kernel_new(m, name, (kir_launch){KIR_LAUNCH_ITEMS, n, 64});
  int pin = kir_add_param(m, k, "in", KIR_PARAM_BUFFER, s, 1, 0);
  int pout[NDT];
  for (int t = 0; t < NDT; t++) {
    char pn[32];
    snprintf(pn, sizeof pn, "out_%s", graphc_dtype_name((gc_dtype)t));
    pout[t] = kir_add_param(m, k, pn, KIR_PARAM_BUFFER, (gc_dtype)t, 0, 1 + t);
  }
  int vx = kir_add_var(m, k, "x", s);
  kir_emit_assign(m, &k->body, vx, kir_load(m, k, KIR_GLOBAL, pin, item_ref(m, k)));
  for (int t = 0; t < NDT; t++)
    kir_emit_store(m, &k->body, KIR_GLOBAL, pout[t], item_ref(m, k),
                   kir_cast(m, (gc_dtype)t, kir_var_ref(m, k, vx)));
  return k;
}

/* Vector cases: (dtype, width) pairs, each one full 16-byte access or less. */
static const struct { gc_dtype t; int w; } vec_cases[] = {
    {F32, 4}, {F16, 8}, {F64, 2}, {BOOL, 8}, {I8, 4}, {BF16, 2}, {I32, 1}, {U8, 8}, {I64, 2}};
#define NVEC ((int)(sizeof vec_cases / sizeof vec_cases[0]))

/* Kernel "vec_copy": for each case c, items 0..n: out_c[w*i .. w*i+w) = in_c[w*i ..]
 * reversed within the vector (so element order is checked). */
static kir_kernel *build_vec_kernel(kir_module *m, int64_t n) {
  kir_kernel *k = kir_kernel_new(m, "vec_copy", (kir_launch){KIR_LAUNCH_ITEMS, n, 256});
  for (int c = 0; c < NVEC; c++) {
    char pn[32];
    snprintf(pn, sizeof pn, "in%d", c);
    int pin = kir_add_param(m, k, pn, KIR_PARAM_BUFFER, vec_cases[c].t, 1, 2 * c);
    snprintf(pn, sizeof pn, "out%d", c);
    int pout = kir_add_param(m, k, pn, KIR_PARAM_BUFFER, vec_cases[c].t, 0, 2 * c + 1);
    int w = vec_cases[c].w, vars[KIR_MAX_VEC];
    for (int i = 0; i < w; i++) vars[i] = kir_add_var(m, k, "e", vec_cases[c].t);
    kir_emit_load_vec(m, &k->body, KIR_GLOBAL, pin, mul(m, item_ref(m, k), c64(m, w)), w, vars);
    kir_expr *vals[KIR_MAX_VEC];
    for (int i = 0; i < w; i++) vals[i] = kir_var_ref(m, k, vars[w - 1 - i]);
    kir_emit_store_vec(m, &k->body, KIR_GLOBAL, pout, mul(m, item_ref(m, k), c64(m, w)), w, vals);
  }
  return k;
}

/* Kernel "rowsum": BLOCKS over rows of `cols` f32; block 256: strided partial
 * sums, warp shuffle tree, per-warp partials in shared memory, barrier, warp 0
 * reduces them. Also copies the row's first 4*256 elements through shared
 * memory with vector accesses, reversed by thread (out2). */
static kir_kernel *build_rowsum_kernel(kir_module *m, int64_t rows, int64_t cols) {
  const int block = 256;
  kir_kernel *k = kir_kernel_new(m, "rowsum", (kir_launch){KIR_LAUNCH_BLOCKS, rows, block});
  int pin = kir_add_param(m, k, "in", KIR_PARAM_BUFFER, F32, 1, 0);
  int pout = kir_add_param(m, k, "out", KIR_PARAM_BUFFER, F32, 0, 1);
  int pout2 = kir_add_param(m, k, "out2", KIR_PARAM_BUFFER, F32, 0, 2);
  int pcols = kir_add_param(m, k, "cols", KIR_PARAM_I64, I64, 1, -1);
  int sm = kir_add_shared(m, k, F32, block / 32);
  int sv = kir_add_shared(m, k, F32, 4 * block);
  int acc = kir_add_var(m, k, "acc", F32), j = kir_add_var(m, k, "j", I64);
  int tid = kir_add_var(m, k, "tid", I64);
  kir_block *b = &k->body;
  kir_emit_assign(m, b, acc, kir_const_f(m, F32, 0.0));
  kir_emit_assign(m, b, tid, kir_cast(m, I64, kir_special_ref(m, KIR_SP_THREAD)));
  kir_expr *row0 = mul(m, item_ref(m, k), kir_param_ref(m, k, pcols));
  kir_block *lb = kir_emit_for(m, b, j, kir_var_ref(m, k, tid), kir_param_ref(m, k, pcols),
                               kir_cast(m, I64, kir_special_ref(m, KIR_SP_BLOCK_DIM)));
  kir_emit_assign(m, lb, acc,
                  add(m, kir_var_ref(m, k, acc),
                      kir_load(m, k, KIR_GLOBAL, pin, add(m, row0, kir_var_ref(m, k, j)))));
  for (int mask = 16; mask >= 1; mask /= 2)
    kir_emit_assign(m, b, acc, add(m, kir_var_ref(m, k, acc), kir_shfl_xor(m, kir_var_ref(m, k, acc), mask)));
  kir_block *tb, *eb;
  kir_expr *lane = kir_special_ref(m, KIR_SP_LANE);
  kir_emit_if(m, b, kir_binary(m, KIR_EQ, lane, kir_const_i(m, I32, 0)), &tb, NULL);
  kir_emit_store(m, tb, KIR_SHARED, sm, kir_cast(m, I64, kir_special_ref(m, KIR_SP_WARP)),
                 kir_var_ref(m, k, acc));
  kir_emit_barrier(m, b);
  kir_emit_if(m, b, kir_binary(m, KIR_EQ, kir_special_ref(m, KIR_SP_WARP), kir_const_i(m, I32, 0)), &tb,
              NULL);
  kir_block *t2, *e2;
  kir_emit_if(m, tb, kir_binary(m, KIR_LT, kir_special_ref(m, KIR_SP_LANE), kir_const_i(m, I32, block / 32)),
              &t2, &e2);
  kir_emit_assign(m, t2, acc, kir_load(m, k, KIR_SHARED, sm, kir_cast(m, I64, kir_special_ref(m, KIR_SP_LANE))));
  kir_emit_assign(m, e2, acc, kir_const_f(m, F32, 0.0));
  for (int mask = 16; mask >= 1; mask /= 2)
    kir_emit_assign(m, tb, acc, add(m, kir_var_ref(m, k, acc), kir_shfl_xor(m, kir_var_ref(m, k, acc), mask)));
  kir_emit_if(m, tb, kir_binary(m, KIR_EQ, kir_special_ref(m, KIR_SP_LANE), kir_const_i(m, I32, 0)), &t2,
              &eb);
  kir_emit_store(m, t2, KIR_GLOBAL, pout, item_ref(m, k), kir_var_ref(m, k, acc));
  /* vector round trip through shared memory: thread t writes 4 values at 4t,
   * then reads the 4 values of thread (255 - t) */
  int v[4], w[4];
  for (int i = 0; i < 4; i++) v[i] = kir_add_var(m, k, "v", F32);
  for (int i = 0; i < 4; i++) w[i] = kir_add_var(m, k, "w", F32);
  kir_expr *base = mul(m, item_ref(m, k), kir_param_ref(m, k, pcols));
  kir_emit_load_vec(m, b, KIR_GLOBAL, pin, add(m, base, mul(m, kir_var_ref(m, k, tid), c64(m, 4))), 4, v);
  kir_expr *vals[4];
  for (int i = 0; i < 4; i++) vals[i] = kir_var_ref(m, k, v[i]);
  kir_emit_store_vec(m, b, KIR_SHARED, sv, mul(m, kir_var_ref(m, k, tid), c64(m, 4)), 4, vals);
  kir_emit_barrier(m, b);
  kir_expr *other = kir_binary(m, KIR_SUB, c64(m, block - 1), kir_var_ref(m, k, tid));
  kir_emit_load_vec(m, b, KIR_SHARED, sv, mul(m, other, c64(m, 4)), 4, w);
  for (int i = 0; i < 4; i++) vals[i] = kir_var_ref(m, k, w[i]);
  kir_expr *obase = mul(m, item_ref(m, k), c64(m, 4 * block));
  kir_emit_store_vec(m, b, KIR_GLOBAL, pout2, add(m, obase, mul(m, kir_var_ref(m, k, tid), c64(m, 4))), 4,
                     vals);
  (void)eb;
  return k;
}

/* Kernel "shfl_all": BLOCKS of 64 threads; for every dtype T:
 * out_T[g*64 + t] = shfl_xor(in_T[g*64 + t], 5). */
static kir_kernel *build_shfl_kernel(kir_module *m, int64_t groups) {
  kir_kernel *k = kir_kernel_new(m, "shfl_all", (kir_launch){KIR_LAUNCH_BLOCKS, groups, 64});
  kir_expr *idx = add(m, mul(m, item_ref(m, k), c64(m, 64)), kir_cast(m, I64, kir_special_ref(m, KIR_SP_THREAD)));
  for (int t = 0; t < NDT; t++) {
    char pn[32];
    snprintf(pn, sizeof pn, "in_%s", graphc_dtype_name((gc_dtype)t));
    int pin = kir_add_param(m, k, pn, KIR_PARAM_BUFFER, (gc_dtype)t, 1, 2 * t);
    snprintf(pn, sizeof pn, "out_%s", graphc_dtype_name((gc_dtype)t));
    int pout = kir_add_param(m, k, pn, KIR_PARAM_BUFFER, (gc_dtype)t, 0, 2 * t + 1);
    kir_emit_store(m, &k->body, KIR_GLOBAL, pout, idx,
                   kir_shfl_xor(m, kir_load(m, k, KIR_GLOBAL, pin, idx), 5));
  }
  return k;
}

/* Kernel "loops": out[item] = sum_{j < item % 7} (j odd ? j*j : -j), then
 * (if the sum > 10: sum - 100 else sum + 1000), using a nested if/else and a
 * loop whose bound is an expression; i64 throughout. */
static kir_kernel *build_loops_kernel(kir_module *m, int64_t n) {
  kir_kernel *k = kir_kernel_new(m, "loops", (kir_launch){KIR_LAUNCH_ITEMS, n, 64});
  int pout = kir_add_param(m, k, "out", KIR_PARAM_BUFFER, I64, 0, 0);
  int s = kir_add_var(m, k, "s", I64), j = kir_add_var(m, k, "j", I64);
  kir_block *b = &k->body;
  kir_emit_assign(m, b, s, c64(m, 0));
  kir_block *lb = kir_emit_for(m, b, j, c64(m, 0), kir_binary(m, KIR_REM, item_ref(m, k), c64(m, 7)), c64(m, 1));
  kir_block *tb, *eb;
  kir_emit_if(m, lb, kir_binary(m, KIR_EQ, kir_binary(m, KIR_AND, kir_var_ref(m, k, j), c64(m, 1)), c64(m, 1)),
              &tb, &eb);
  kir_emit_assign(m, tb, s, add(m, kir_var_ref(m, k, s), mul(m, kir_var_ref(m, k, j), kir_var_ref(m, k, j))));
  kir_emit_assign(m, eb, s, kir_binary(m, KIR_SUB, kir_var_ref(m, k, s), kir_var_ref(m, k, j)));
  kir_emit_if(m, b, kir_binary(m, KIR_GT, kir_var_ref(m, k, s), c64(m, 10)), &tb, &eb);
  kir_emit_store(m, tb, KIR_GLOBAL, pout, item_ref(m, k), kir_binary(m, KIR_SUB, kir_var_ref(m, k, s), c64(m, 100)));
  kir_emit_store(m, eb, KIR_GLOBAL, pout, item_ref(m, k), add(m, kir_var_ref(m, k, s), c64(m, 1000)));
  return k;
}

/* Float literals exercised by "consts" (every float dtype stores each). */
static const double float_lits[] = {0.0,     -0.0,    1.0,        -1.5,     0.1,       1e-5,
                                    3.14159265358979, 65504.0, 65519.99, 65520.0, 1e-8, 5.960464477539063e-8,
                                    2.98e-8, 3e38,    1e300,      1.17549435e-38, 1e-45, 0.044715,
                                    INFINITY, -INFINITY, NAN,     -2.5e-6,  7.0e10,   1.0 / 3.0};
#define NLITS ((int)(sizeof float_lits / sizeof float_lits[0]))
static const int64_t int_lits[] = {0, 1, -1, 127, -128, 255, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN,
                                   123456789012345LL};
#define NILITS ((int)(sizeof int_lits / sizeof int_lits[0]))

/* Fits integer literal v in dtype t? */
static int lit_fits(gc_dtype t, int64_t v) {
  switch (t) {
    case I64: return 1;
    case I32: return v >= INT32_MIN && v <= INT32_MAX;
    case I8: return v >= -128 && v <= 127;
    case U8: return v >= 0 && v <= 255;
    case BOOL: return v == 0 || v == 1;
    default: return 0;
  }
}

/* Kernel "consts": ITEMS n=1; out_T[i] = literal i, for every dtype T. */
static kir_kernel *build_consts_kernel(kir_module *m) {
  kir_kernel *k = kir_kernel_new(m, "consts", (kir_launch){KIR_LAUNCH_ITEMS, 1, 32});
  for (int t = 0; t < NDT; t++) {
    char pn[32];
    snprintf(pn, sizeof pn, "out_%s", graphc_dtype_name((gc_dtype)t));
    int p = kir_add_param(m, k, pn, KIR_PARAM_BUFFER, (gc_dtype)t, 0, t);
    if (gc_dtype_is_float((gc_dtype)t)) {
      for (int i = 0; i < NLITS; i++)
        kir_emit_store(m, &k->body, KIR_GLOBAL, p, c64(m, i), kir_const_f(m, (gc_dtype)t, float_lits[i]));
    } else {
      int slot = 0;
      for (int i = 0; i < NILITS; i++)
        if (lit_fits((gc_dtype)t, int_lits[i]))
          kir_emit_store(m, &k->body, KIR_GLOBAL, p, c64(m, slot++), kir_const_i(m, (gc_dtype)t, int_lits[i]));
    }
  }
  return k;
}

/* ---- pack2: two f32 values to one f16x2 / bf16x2 fragment register ------------------------ */

/* Values needing rounding in one format or both: ties to even (1 + 2^-11 and 1 + 3 * 2^-11
 * for f16, 1 + 2^-8 and 1 + 3 * 2^-8 for bf16), overflow (65520 in f16, 3.4e38 in bf16),
 * subnormal results, negative, large, inf and NaN. */
static const float pack_vals[] = {1.0f,          -2.5f,        0.1f,         1.0f / 3.0f, -0.0f,
                                  0.0f,          65504.0f,     65519.0f,     65520.0f,    -1e5f,
                                  1.00048828125f, 1.00146484375f, 1.00390625f, 1.01171875f, 5.9604645e-8f,
                                  2.98e-8f,      -1e-8f,       3e38f,        3.4e38f,     -1e-40f,
                                  INFINITY,      -INFINITY,    NAN,          1234.5678f,  -0.000123f,
                                  448.0f,        6.1035156e-05f, -65535.0f};
#define NPACK ((int)(sizeof pack_vals / sizeof pack_vals[0]))
#define PACK2_N 256

/* Inputs of "pack2": pack_vals paired with themselves reversed, then values of random
 * magnitude 2^-30 .. 2^20 and sign (an LCG seeded with `seed`). */
static void make_pack2_inputs(float *x, float *y, int n, unsigned seed) {
  uint32_t r = seed * 2654435761u + 1u;
  for (int i = 0; i < n; i++) {
    if (i < NPACK) {
      x[i] = pack_vals[i];
      y[i] = pack_vals[NPACK - 1 - i];
      continue;
    }
    float v[2];
    for (int j = 0; j < 2; j++) {
      r = r * 1664525u + 1013904223u;
      float mant = 1.0f + (float)(r >> 9) / 8388608.0f;  /* 23 random fraction bits */
      r = r * 1664525u + 1013904223u;
      v[j] = ldexpf(mant, (int)(r >> 27) % 51 - 30) * ((r >> 8) & 1 ? -1.0f : 1.0f);
    }
    x[i] = v[0];
    y[i] = v[1];
  }
}

/* Kernel "pack2": x, y (f32, readonly), out (i32): out[2 item] = pack2.f16(x, y),
 * out[2 item + 1] = pack2.bf16(x, y) (x = x[item], y = y[item], read into variables). */
static kir_kernel *build_pack2_kernel(kir_module *m, int64_t n) {
  kir_kernel *k = kir_kernel_new(m, "pack2", (kir_launch){KIR_LAUNCH_ITEMS, n, 64});
  int px = kir_add_param(m, k, "x", KIR_PARAM_BUFFER, F32, 1, 0);
  int py = kir_add_param(m, k, "y", KIR_PARAM_BUFFER, F32, 1, 1);
  int po = kir_add_param(m, k, "out", KIR_PARAM_BUFFER, I32, 0, 2);
  int vx = kir_add_var(m, k, "x", F32), vy = kir_add_var(m, k, "y", F32);
  kir_emit_assign(m, &k->body, vx, kir_load(m, k, KIR_GLOBAL, px, item_ref(m, k)));
  kir_emit_assign(m, &k->body, vy, kir_load(m, k, KIR_GLOBAL, py, item_ref(m, k)));
  for (int h = 0; h < 2; h++)
    kir_emit_store(m, &k->body, KIR_GLOBAL, po, add(m, mul(m, item_ref(m, k), c64(m, 2)), c64(m, h)),
                   kir_pack2(m, h ? BF16 : F16, kir_var_ref(m, k, vx), kir_var_ref(m, k, vy)));
  return k;
}

/* The full test module (every kernel above). Sizes are small; the device
 * part uses the same sizes. */
#define OPS_N 300
#define CAST_N 256
#define VEC_N 40
#define ROWS 5
#define COLS 1100
#define SHFL_G 3
#define LOOPS_N 50

/* All test kernels in one module. */
static kir_module *build_all(void) {
  kir_module *m = kir_module_new();
  ck_assert_ptr_nonnull(m);
  for (size_t i = 0; i < sizeof arith_types / sizeof arith_types[0]; i++)
    build_ops_kernel(m, arith_types[i], OPS_N);
  for (int s = 0; s < NDT; s++) build_cast_kernel(m, (gc_dtype)s, CAST_N);
  build_vec_kernel(m, VEC_N);
  build_rowsum_kernel(m, ROWS, COLS);
  build_shfl_kernel(m, SHFL_G);
  build_loops_kernel(m, LOOPS_N);
  build_consts_kernel(m);
  build_pack2_kernel(m, PACK2_N);
  ck_assert(!m->arena.failed);
  return m;
}

/* CUDA C of a module (malloc'd). */
static char *cuda_source(const kir_module *m) {
  gc_sbuf b = {0};
  gc_cuda_c_print(&b, m);
  char *s = gc_sbuf_take(&b);
  ck_assert_ptr_nonnull(s);
  return s;
}

/* Compile src for sm; on failure print diagnostics and fail the test. */
static void compile_or_fail(const char *src, int sm, char **ptx, void **cubin, size_t *cubin_len) {
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  int rc = gc_nvrtc_compile(src, sm, ptx, cubin, cubin_len, tu_toolchain(), &d);
  if (rc != 0) {
    char *r = gc_diags_render(&d);
    fprintf(stderr, "%s\n", r ? r : "?");
    free(r);
  }
  ck_assert_int_eq(d.n_errors, 0);
  gc_diags_free(&d);
  ck_assert_int_eq(rc, 0);
}

/* Run ptxas on PTX text for sm; returns its exit status, output in *out. */
static int run_ptxas(const char *ptx, int sm, const char *tag, char **out) {
  char path[512], cmd[1200];
  snprintf(path, sizeof path, "%s/%s_sm%d.ptx", tu_tmpdir(), tag, sm);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(ptx, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "%s -arch=sm_%d %s -o /dev/null", GRAPHC_PTXAS, sm, path);
  return tu_run_cmd(cmd, out);
}

/* Decode 16-bit float bits (mant fraction bits, bias) exactly. */
static double decode16(unsigned bits, int mant, int bias) {
  int ebits = 15 - mant;
  unsigned e = (bits >> mant) & ((1u << ebits) - 1), f = bits & ((1u << mant) - 1);
  double s = (bits & 0x8000u) ? -1.0 : 1.0;
  if (e == (1u << ebits) - 1) return f ? NAN : s * INFINITY;
  if (e == 0) return s * ldexp((double)f, 1 - bias - mant);
  return s * ldexp((double)(f | (1u << mant)), (int)e - bias - mant);
}

/* Reference rounding by exhaustive search: nearest pattern, ties to even;
 * infinity counts as the value one step past the largest finite. */
static unsigned nearest16(double x, int mant, int bias) {
  if (isnan(x)) return 0xffffu;
  unsigned sign = signbit(x) ? 0x8000u : 0;
  double a = fabs(x);
  unsigned inf = ((1u << (15 - mant)) - 1) << mant;
  unsigned best = 0;
  double bestd = INFINITY;
  for (unsigned bits = 0; bits <= inf; bits++) {
    double v = bits == inf ? ldexp(1.0, (int)((1u << (15 - mant)) - 1) - bias) : decode16(bits, mant, bias);
    double dd = fabs(v - a);
    if (dd < bestd || (dd == bestd && !(bits & 1))) {
      best = bits;
      bestd = dd;
    }
  }
  return sign | best;
}

/* Check one packed register: each half is nearest16's exhaustive nearest-even rounding
 * of its f32 input; a NaN input needs only a NaN half (payloads differ between targets).
 * Returns 1 when right, else 0 with a description in msg. */
static int check_pack2(uint32_t got, gc_dtype t, float lo, float hi, char *msg, size_t n) {
  int mant = t == F16 ? 10 : 7, bias = t == F16 ? 15 : 127;
  float in[2] = {lo, hi};
  for (int h = 0; h < 2; h++) {
    unsigned bits = (got >> (16 * h)) & 0xffffu;
    int ok = isnan(in[h]) ? isnan(decode16(bits, mant, bias)) : bits == nearest16(in[h], mant, bias);
    if (!ok) {
      snprintf(msg, n, "pack2.%s(%.9g, %.9g) = 0x%08x: %s half 0x%04x, want 0x%04x",
               graphc_dtype_name(t), (double)lo, (double)hi, got, h ? "high" : "low", bits,
               isnan(in[h]) ? 0x7fffu : nearest16(in[h], mant, bias));
      return 0;
    }
  }
  return 1;
}

/* The pack2 kernel's output for n items (out[2i]: f16 of (x[i], y[i]), out[2i + 1]: bf16),
 * item 0 being (1.0, -65535): f16 1.0 = 0x3c00, -65535 overflows to -inf; bf16 1.0 =
 * 0x3f80, -65535 rounds to -65536 = 0xc780. Check-asserts every word. */
static void check_pack2_all(const uint32_t *out, const float *x, const float *y, int n, unsigned seed) {
  ck_assert_uint_eq(out[0], 0xfc003c00u);
  ck_assert_uint_eq(out[1], 0xc7803f80u);
  char msg[256];
  for (int i = 0; i < n; i++)
    for (int h = 0; h < 2; h++)
      ck_assert_msg(check_pack2(out[2 * i + h], h ? BF16 : F16, x[i], y[i], msg, sizeof msg), "seed %u item %d: %s",
                    seed, i, msg);
}

#endif
