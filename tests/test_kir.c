/* test_kir.c - Kernel IR: builder, verifier, dump, CUDA C printer, NVRTC.
 *
 * Hand-built kernels cover every kir_op on every type it accepts, every cast
 * pair, vector loads/stores, shared memory + barriers + shuffles in BLOCKS
 * kernels, loops and ifs, and exact literals. They are printed to CUDA C,
 * compiled by NVRTC for sm_90 and sm_80, and the PTX is re-assembled by ptxas.
 * (test_kir_device.c runs the same kernels on a GPU against host references.)
 * The test evaluator of the lowering suites (lower_eval.h) runs pack2 and exp2.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codegen/codegen.h"
#include "codegen/kir.h"
#include "testutil.h"

#include "kir_test_kernels.h"
#include "tests/lower_eval.h"

/* ---- targets and builder ---------------------------------------------------------------- */

START_TEST(test_targets) {
  kir_target t;
  kir_target_cuda(&t, 80);
  ck_assert_int_eq(t.kind, KIR_TARGET_CUDA);
  ck_assert_int_eq(t.sm, 80);
  ck_assert_int_eq(t.warp_size, 32);
  ck_assert_int_eq(t.max_threads, 1024);
  ck_assert_int_eq(t.shared_bytes, 48 * 1024);
  ck_assert_int_eq(t.vector_bytes, 16);
  ck_assert_int_eq(t.num_sms, 132);
  kir_target_cuda(&t, 0);
  ck_assert_int_eq(t.sm, 90);
  kir_target_host(&t, 6);
  ck_assert_int_eq(t.kind, KIR_TARGET_HOST);
  ck_assert_int_eq(t.num_sms, 6);
  ck_assert_int_eq(t.warp_size, 1);
  kir_target_host(&t, 0);
  ck_assert_int_eq(t.num_sms, 1);
}
END_TEST

START_TEST(test_builder) {
  kir_module *m = kir_module_new();
  char name[32] = "k_first";
  kir_kernel *k = kir_kernel_new(m, name, (kir_launch){KIR_LAUNCH_ITEMS, 10, 128});
  strcpy(name, "clobber");
  ck_assert_str_eq(k->name, "k_first");  /* copied */
  ck_assert_int_eq(k->item_var, 0);
  ck_assert_str_eq(k->vars[0].name, "item_0");
  ck_assert_int_eq(k->vars[0].type, I64);
  /* arrays grow; indices are dense */
  for (int i = 0; i < 300; i++) ck_assert_int_eq(kir_add_var(m, k, "t", F32), i + 1);
  ck_assert_str_eq(k->vars[300].name, "t_300");
  for (int i = 0; i < 40; i++) {
    char pn[16];
    snprintf(pn, sizeof pn, "p%d", i);
    ck_assert_int_eq(kir_add_param(m, k, pn, KIR_PARAM_BUFFER, (gc_dtype)(i % NDT), i & 1, i), i);
  }
  ck_assert_str_eq(k->params[39].name, "p39");
  ck_assert_int_eq(k->params[39].binding, 39);
  ck_assert_int_eq(k->params[39].readonly, 1);
  ck_assert_int_eq(k->params[38].readonly, 0);
  /* names become unique identifiers */
  int q = kir_add_param(m, k, "%h.1", KIR_PARAM_BUFFER, F32, 1, 0);
  ck_assert_str_eq(k->params[q].name, "_h_1");
  int q2 = kir_add_param(m, k, "p3", KIR_PARAM_I64, I64, 0, -1);
  ck_assert_str_eq(k->params[q2].name, "p3_41");
  int q3 = kir_add_param(m, k, "0x", KIR_PARAM_I64, I64, 0, -1);
  ck_assert_str_eq(k->params[q3].name, "_0x");
  ck_assert_int_eq(kir_add_var(m, k, "a-b", F32), 301);
  ck_assert_str_eq(k->vars[301].name, "a_b_301");
  ck_assert_int_eq(kir_add_var(m, k, NULL, F32), 302);
  ck_assert_str_eq(k->vars[302].name, "v_302");
  kir_kernel *k2 = kir_kernel_new(m, "k_second", (kir_launch){KIR_LAUNCH_BLOCKS, 3, 64});
  ck_assert_int_eq(m->n_kernels, 2);
  ck_assert_ptr_eq(m->kernels[1], k2);
  int s0 = kir_add_shared(m, k2, F16, 100);
  ck_assert_int_eq(s0, 0);
  ck_assert_int_eq(k2->shared[0].count, 100);
  /* expression types */
  int ph = kir_add_param(m, k2, "h", KIR_PARAM_BUFFER, F16, 1, 0);
  int pn = kir_add_param(m, k2, "n", KIR_PARAM_I64, I64, 1, -1);
  kir_expr *ld = kir_load(m, k2, KIR_GLOBAL, ph, c64(m, 3));
  ck_assert_int_eq(ld->type, F16);
  ck_assert_int_eq(kir_load(m, k2, KIR_SHARED, s0, c64(m, 0))->type, F16);
  kir_expr *x = kir_cast(m, F32, ld);
  ck_assert_int_eq(x->kind, KIR_E_CAST);
  ck_assert_ptr_eq(kir_cast(m, F32, x), x);  /* identity cast */
  ck_assert_int_eq(kir_binary(m, KIR_LT, x, x)->type, BOOL);
  ck_assert_int_eq(kir_binary(m, KIR_ADD, x, x)->type, F32);
  ck_assert_int_eq(kir_unary(m, KIR_EXP, x)->type, F32);
  ck_assert_int_eq(kir_special_ref(m, KIR_SP_LANE)->type, I32);
  ck_assert_int_eq(kir_param_ref(m, k2, pn)->type, I64);
  ck_assert_int_eq(kir_var_ref(m, k, 5)->type, F32);
  ck_assert_int_eq(kir_const_i(m, BOOL, 7)->u.i, 1);
  ck_assert_int_eq(kir_select(m, kir_const_i(m, BOOL, 1), ld, ld)->type, F16);
  ck_assert_int_eq(kir_shfl_xor(m, ld, 3)->type, F16);
  ck_assert_int_eq(kir_unary(m, KIR_EXP2, x)->type, F32);
  kir_expr *pk = kir_pack2(m, BF16, x, kir_unary(m, KIR_EXP2, x));
  ck_assert_int_eq(pk->kind, KIR_E_PACK2);
  ck_assert_int_eq(pk->type, I32);
  ck_assert_int_eq(pk->u.pack.dtype, BF16);
  ck_assert_ptr_eq(pk->u.pack.lo, x);
  ck_assert(!m->arena.failed);
  kir_module_free(m);
}
END_TEST

/* Statement lists keep order; for/if return blocks inside their statements. */
START_TEST(test_statements) {
  kir_module *m = kir_module_new();
  kir_kernel *k = kir_kernel_new(m, "k", (kir_launch){KIR_LAUNCH_ITEMS, 4, 32});
  int v = kir_add_var(m, k, "v", I64), i = kir_add_var(m, k, "i", I64);
  kir_emit_assign(m, &k->body, v, c64(m, 1));
  kir_block *lb = kir_emit_for(m, &k->body, i, c64(m, 0), c64(m, 3), c64(m, 1));
  kir_block *tb, *eb;
  kir_emit_if(m, lb, kir_binary(m, KIR_LT, kir_var_ref(m, k, i), c64(m, 2)), &tb, &eb);
  kir_emit_assign(m, tb, v, add(m, kir_var_ref(m, k, v), c64(m, 1)));
  kir_emit_assign(m, eb, v, c64(m, 0));
  kir_emit_assign(m, &k->body, v, kir_var_ref(m, k, i));
  const kir_stmt *s = k->body.head;
  ck_assert_int_eq(s->kind, KIR_S_ASSIGN);
  ck_assert_int_eq(s->next->kind, KIR_S_FOR);
  ck_assert_ptr_eq(&s->next->u.loop.body, lb);
  ck_assert_int_eq(s->next->next->kind, KIR_S_ASSIGN);
  ck_assert_ptr_eq(s->next->next, k->body.tail);
  ck_assert_ptr_null(s->next->next->next);
  const kir_stmt *ifs = lb->head;
  ck_assert_int_eq(ifs->kind, KIR_S_IF);
  ck_assert_ptr_eq(&ifs->u.cond.then, tb);
  ck_assert_ptr_eq(&ifs->u.cond.els, eb);
  kir_verify(k);
  kir_module_free(m);
}
END_TEST

/* ---- verifier: good kernels pass, emitter bugs abort ---------------------------------------- */

START_TEST(test_verify_all_ok) {
  kir_module *m = build_all();
  for (int i = 0; i < m->n_kernels; i++) kir_verify(m->kernels[i]);
  kir_module_free(m);
}
END_TEST

/* A kernel with one buffer param "x" (f32, readonly?) and a var of type f32. */
static kir_kernel *small_kernel(kir_module *m, kir_launch_kind lk, int readonly) {
  kir_kernel *k = kir_kernel_new(m, "bad", (kir_launch){lk, 8, 64});
  kir_add_param(m, k, "x", KIR_PARAM_BUFFER, F32, readonly, 0);
  kir_add_var(m, k, "f", F32);
  return k;
}

START_TEST(test_verify_use_before_assign) {
  kir_module *m = kir_module_new();
  kir_kernel *k = small_kernel(m, KIR_LAUNCH_ITEMS, 0);
  kir_emit_store(m, &k->body, KIR_GLOBAL, 0, item_ref(m, k), kir_var_ref(m, k, 1));
  kir_verify(k);  /* aborts */
}
END_TEST

START_TEST(test_verify_store_readonly) {
  kir_module *m = kir_module_new();
  kir_kernel *k = small_kernel(m, KIR_LAUNCH_ITEMS, 1);
  kir_emit_store(m, &k->body, KIR_GLOBAL, 0, item_ref(m, k), kir_const_f(m, F32, 1.0));
  kir_verify(k);
}
END_TEST

START_TEST(test_verify_barrier_in_items) {
  kir_module *m = kir_module_new();
  kir_kernel *k = small_kernel(m, KIR_LAUNCH_ITEMS, 0);
  kir_emit_barrier(m, &k->body);
  kir_verify(k);
}
END_TEST

START_TEST(test_verify_scratch_in_blocks) {
  kir_module *m = kir_module_new();
  kir_kernel *k = small_kernel(m, KIR_LAUNCH_BLOCKS, 0);
  kir_add_scratch(m, k, F32, 16);
  kir_verify(k);  /* aborts: scratch arrays are for ITEMS launches */
}
END_TEST

START_TEST(test_verify_store_type) {
  kir_module *m = kir_module_new();
  kir_kernel *k = small_kernel(m, KIR_LAUNCH_ITEMS, 0);
  kir_emit_store(m, &k->body, KIR_GLOBAL, 0, item_ref(m, k), kir_const_f(m, F64, 1.0));
  kir_verify(k);
}
END_TEST

START_TEST(test_verify_assign_type) {
  kir_module *m = kir_module_new();
  kir_kernel *k = small_kernel(m, KIR_LAUNCH_BLOCKS, 0);
  kir_emit_assign(m, &k->body, 1, kir_const_i(m, I32, 1));
  kir_verify(k);
}
END_TEST

START_TEST(test_binary_type_mismatch) {
  kir_module *m = kir_module_new();
  kir_binary(m, KIR_ADD, kir_const_f(m, F32, 1), kir_const_f(m, F64, 1));
}
END_TEST

START_TEST(test_arith_on_f16) {
  kir_module *m = kir_module_new();
  kir_unary(m, KIR_NEG, kir_const_f(m, F16, 1));
}
END_TEST

START_TEST(test_exp_on_int) {
  kir_module *m = kir_module_new();
  kir_unary(m, KIR_EXP, kir_const_i(m, I32, 1));
}
END_TEST

START_TEST(test_exp2_on_int) {
  kir_module *m = kir_module_new();
  kir_unary(m, KIR_EXP2, kir_const_i(m, I64, 1));
}
END_TEST

START_TEST(test_pack2_f64_operand) {
  kir_module *m = kir_module_new();
  kir_pack2(m, F16, kir_const_f(m, F32, 1), kir_const_f(m, F64, 1));  /* operands are f32 */
}
END_TEST

START_TEST(test_pack2_to_f32) {
  kir_module *m = kir_module_new();
  kir_pack2(m, F32, kir_const_f(m, F32, 1), kir_const_f(m, F32, 1));  /* f16 or bf16 only */
}
END_TEST

/* kir_verify checks a PACK2 built by hand too (an emitter writing the union directly). */
START_TEST(test_verify_pack2_type) {
  kir_module *m = kir_module_new();
  kir_kernel *k = kir_kernel_new(m, "bad", (kir_launch){KIR_LAUNCH_ITEMS, 8, 64});
  int o = kir_add_param(m, k, "o", KIR_PARAM_BUFFER, I32, 0, 0);
  kir_expr *e = kir_pack2(m, F16, kir_const_f(m, F32, 1), kir_const_f(m, F32, 2));
  e->u.pack.dtype = I8;
  kir_emit_store(m, &k->body, KIR_GLOBAL, o, item_ref(m, k), e);
  kir_verify(k);
}
END_TEST

START_TEST(test_bad_kernel_name) {
  kir_module *m = kir_module_new();
  kir_kernel_new(m, "not-an-ident", (kir_launch){KIR_LAUNCH_ITEMS, 1, 32});
}
END_TEST

START_TEST(test_index_must_be_i64) {
  kir_module *m = kir_module_new();
  kir_kernel *k = small_kernel(m, KIR_LAUNCH_ITEMS, 0);
  kir_load(m, k, KIR_GLOBAL, 0, kir_const_i(m, I32, 0));
}
END_TEST

/* ---- the readable dump --------------------------------------------------------------------- */

/* A small BLOCKS kernel exercising every statement kind, for the dump. */
static kir_module *dump_module(void) {
  kir_module *m = kir_module_new();
  kir_kernel *k = kir_kernel_new(m, "dump", (kir_launch){KIR_LAUNCH_BLOCKS, 4, 64});
  int px = kir_add_param(m, k, "x", KIR_PARAM_BUFFER, F16, 1, 0);
  int py = kir_add_param(m, k, "y", KIR_PARAM_BUFFER, F32, 0, 1);
  int pn = kir_add_param(m, k, "n", KIR_PARAM_I64, I64, 1, -1);
  int sm = kir_add_shared(m, k, F32, 64);
  int a = kir_add_var(m, k, "acc", F32), i = kir_add_var(m, k, "i", I64);
  int h0 = kir_add_var(m, k, "h", F16), h1 = kir_add_var(m, k, "h", F16);
  kir_block *b = &k->body;
  kir_emit_assign(m, b, a, kir_const_f(m, F32, 0.5));
  kir_block *lb = kir_emit_for(m, b, i, c64(m, 0), kir_param_ref(m, k, pn), c64(m, 2));
  int hv[2] = {h0, h1};
  kir_emit_load_vec(m, lb, KIR_GLOBAL, px, kir_var_ref(m, k, i), 2, hv);
  kir_emit_assign(m, lb, a,
                  kir_binary(m, KIR_MAX, kir_var_ref(m, k, a), kir_cast(m, F32, kir_var_ref(m, k, h1))));
  kir_emit_store(m, b, KIR_SHARED, sm, kir_cast(m, I64, kir_special_ref(m, KIR_SP_THREAD)),
                 kir_shfl_xor(m, kir_var_ref(m, k, a), 1));
  kir_emit_barrier(m, b);
  kir_block *tb, *eb;
  kir_emit_if(m, b, kir_binary(m, KIR_EQ, kir_special_ref(m, KIR_SP_LANE), kir_const_i(m, I32, 0)), &tb, &eb);
  kir_expr *vals[2] = {kir_unary(m, KIR_EXP, kir_var_ref(m, k, a)),
                       kir_select(m, kir_const_i(m, BOOL, 1), kir_const_f(m, F32, -INFINITY),
                                  kir_load(m, k, KIR_SHARED, sm, c64(m, 3)))};
  kir_emit_store_vec(m, tb, KIR_GLOBAL, py, mul(m, item_ref(m, k), c64(m, 2)), 2, vals);
  kir_emit_store(m, eb, KIR_GLOBAL, py, item_ref(m, k), kir_const_f(m, F32, NAN));
  k->bytes_moved = 1024;
  k->flops = 64;
  return m;
}

static const char dump_expected[] =
    "kernel dump blocks(n=4, block=64) item=%item_0\n"
    "  param x: f16* readonly binding=0\n"
    "  param y: f32* binding=1\n"
    "  param $n: i64\n"
    "  shared smem0: f32[64]\n"
    "  var %item_0: i64\n"
    "  var %acc_1: f32\n"
    "  var %i_2: i64\n"
    "  var %h_3: f16\n"
    "  var %h_4: f16\n"
    "  cost bytes=1024 flops=64\n"
    "{\n"
    "  %acc_1 = 0.5:f32\n"
    "  for %i_2 = 0:i64 to $n step 2:i64 {\n"
    "    %h_3, %h_4 = x[%i_2 x2]\n"
    "    %acc_1 = max(%acc_1, f32(%h_4))\n"
    "  }\n"
    "  smem0[i64(thread)] = shfl_xor(%acc_1, 1)\n"
    "  barrier\n"
    "  if (lane == 0:i32) {\n"
    "    y[(%item_0 * 2:i64) x2] = (exp(%acc_1), select(true, -inf:f32, smem0[3:i64]))\n"
    "  } else {\n"
    "    y[%item_0] = nan:f32\n"
    "  }\n"
    "}\n";

START_TEST(test_print_dump) {
  kir_module *m1 = dump_module(), *m2 = dump_module();
  kir_verify(m1->kernels[0]);
  gc_sbuf b1 = {0}, b2 = {0};
  kir_print(&b1, m1->kernels[0]);
  kir_print(&b2, m2->kernels[0]);
  char *s1 = gc_sbuf_take(&b1), *s2 = gc_sbuf_take(&b2);
  ck_assert_str_eq(s1, dump_expected);
  ck_assert_str_eq(s1, s2);
  free(s1);
  free(s2);
  kir_module_free(m1);
  kir_module_free(m2);
}
END_TEST

/* pack2 and exp2 in the dump; the pack2 test kernel verifies. */
START_TEST(test_print_pack2_exp2) {
  kir_module *m = kir_module_new();
  kir_kernel *k = kir_kernel_new(m, "frag", (kir_launch){KIR_LAUNCH_ITEMS, 4, 32});
  int px = kir_add_param(m, k, "x", KIR_PARAM_BUFFER, F32, 1, 0);
  int po = kir_add_param(m, k, "o", KIR_PARAM_BUFFER, I32, 0, 1);
  int pd = kir_add_param(m, k, "d", KIR_PARAM_BUFFER, F64, 0, 2);
  int a = kir_add_var(m, k, "a", F32), r = kir_add_var(m, k, "r", I32);
  kir_emit_assign(m, &k->body, a, kir_unary(m, KIR_EXP2, kir_load(m, k, KIR_GLOBAL, px, item_ref(m, k))));
  kir_emit_assign(m, &k->body, r, kir_pack2(m, F16, kir_var_ref(m, k, a), kir_const_f(m, F32, -1.5)));
  kir_emit_store(m, &k->body, KIR_GLOBAL, po, item_ref(m, k),
                 kir_binary(m, KIR_XOR, kir_var_ref(m, k, r),
                            kir_pack2(m, BF16, kir_const_f(m, F32, INFINITY), kir_var_ref(m, k, a))));
  kir_emit_store(m, &k->body, KIR_GLOBAL, pd, item_ref(m, k), kir_unary(m, KIR_EXP2, kir_const_f(m, F64, 0.5)));
  kir_verify(k);
  gc_sbuf b = {0};
  kir_print(&b, k);
  static const char *const want[] = {
      "  %a_1 = exp2(x[%item_0])\n",
      "  %r_2 = pack2.f16(%a_1, -1.5:f32)\n",
      "  o[%item_0] = (%r_2 ^ pack2.bf16(inf:f32, %a_1))\n",
      "  d[%item_0] = exp2(0.5:f64)\n",
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    ck_assert_msg(strstr(b.data, want[i]) != NULL, "dump lacks %s in:\n%s", want[i], b.data);
  gc_sbuf_free(&b);
  kir_module_free(m);
  m = kir_module_new();
  kir_verify(build_pack2_kernel(m, PACK2_N));
  kir_module_free(m);
}
END_TEST

/* ---- the test evaluator (lower_eval.h) ----------------------------------------------------- */

/* Run ITEMS kernel k on the evaluator; bufs[i] holds n[i] elements of buffer param i. */
static void eval_items(const kir_kernel *k, void *const *bufs, const int64_t *n) {
  ev_kernel_ctx c;
  memset(&c, 0, sizeof c);
  c.k = k;
  c.params = calloc((size_t)k->n_params, sizeof *c.params);
  for (int i = 0; i < k->n_params; i++) c.params[i] = (ev_mem){bufs[i], n[i], k->params[i].dtype};
  c.nthreads = 1;
  c.vars = calloc((size_t)k->n_vars, sizeof *c.vars);
  c.snap = calloc((size_t)k->n_vars, sizeof *c.snap);
  for (int64_t it = 0; it < k->launch.n && !c.err[0]; it++) {
    c.vars[k->item_var].i = it;
    ev_block(&c, 0, &k->body);
  }
  ck_assert_msg(!c.err[0], "evaluator: %s", c.err);
  free(c.params);
  free(c.vars);
  free(c.snap);
}

/* The evaluator's pack2 gives the bits of nearest-even rounding (exhaustive reference). */
START_TEST(test_eval_pack2) {
  kir_module *m = kir_module_new();
  kir_kernel *k = build_pack2_kernel(m, PACK2_N);
  unsigned seed = (unsigned)time(NULL);
  float x[PACK2_N], y[PACK2_N];
  uint32_t out[2 * PACK2_N];
  make_pack2_inputs(x, y, PACK2_N, seed);
  void *bufs[3] = {x, y, out};
  int64_t n[3] = {PACK2_N, PACK2_N, 2 * PACK2_N};
  eval_items(k, bufs, n);
  check_pack2_all(out, x, y, PACK2_N, seed);
  kir_module_free(m);
}
END_TEST

/* exp2 on the evaluator: exact powers of two in f32 and f64, and a rounded f32 result. */
START_TEST(test_eval_exp2) {
  kir_module *m = kir_module_new();
  kir_kernel *k = kir_kernel_new(m, "e2", (kir_launch){KIR_LAUNCH_ITEMS, 6, 32});
  int pf = kir_add_param(m, k, "f", KIR_PARAM_BUFFER, F32, 0, 0);
  int pd = kir_add_param(m, k, "d", KIR_PARAM_BUFFER, F64, 0, 1);
  kir_emit_store(m, &k->body, KIR_GLOBAL, pf, item_ref(m, k),
                 kir_unary(m, KIR_EXP2, kir_load(m, k, KIR_GLOBAL, pf, item_ref(m, k))));
  kir_emit_store(m, &k->body, KIR_GLOBAL, pd, item_ref(m, k),
                 kir_unary(m, KIR_EXP2, kir_load(m, k, KIR_GLOBAL, pd, item_ref(m, k))));
  kir_verify(k);
  float f[6] = {3.0f, -1.0f, 0.5f, -INFINITY, 200.0f, -150.0f};
  double d[6] = {3.0, -1.0, 0.5, -INFINITY, 2000.0, -1074.0};
  void *bufs[2] = {f, d};
  int64_t n[2] = {6, 6};
  eval_items(k, bufs, n);
  ck_assert(f[0] == 8.0f && f[1] == 0.5f && f[2] == (float)sqrt(2.0) && f[3] == 0.0f);
  ck_assert(isinf(f[4]) && f[5] == ldexpf(1.0f, -150) && f[5] == 0.0f);  /* below the smallest subnormal: 0 */
  ck_assert(d[0] == 8.0 && d[1] == 0.5 && fabs(d[2] - sqrt(2.0)) <= 2.3e-16 && d[3] == 0.0);
  ck_assert(isinf(d[4]) && d[5] == ldexp(1.0, -1074));
  kir_module_free(m);
}
END_TEST

/* ---- CUDA C printer + NVRTC + ptxas ------------------------------------------------------- */

/* Every snippet must occur in s. */
static void expect_contains(const char *s, const char *const *snips, int n) {
  for (int i = 0; i < n; i++)
    ck_assert_msg(strstr(s, snips[i]) != NULL, "generated CUDA C lacks: %s", snips[i]);
}

START_TEST(test_cuda_c_text) {
  kir_module *m = build_all();
  char *src = cuda_source(m);
  static const char *const snips[] = {
      "#include <cuda_fp16.h>",
      "#include <cuda_bf16.h>",
      "extern \"C\" __global__ void __launch_bounds__(128) ops_f32(const float* __restrict__ p_a, "
      "const float* __restrict__ p_b, float* __restrict__ p_out, unsigned char* __restrict__ p_outb)",
      "for (v_item_0 = (long long)blockIdx.x * blockDim.x + threadIdx.x; v_item_0 < 300LL;",
      "for (v_item_0 = (long long)blockIdx.x; v_item_0 < 5LL; v_item_0 += (long long)gridDim.x)",
      "long long p_cols",
      "__shared__ __align__(16) float s_0[8];",
      "__syncthreads();  /* the next group reuses shared memory */",
      "__shfl_xor_sync(0xffffffffu, v_acc_1, 16)",
      "((bool)(__shfl_xor_sync(0xffffffffu, (int)(",
      "gc::div(v_a_1, v_b_2)",
      "gc::min(v_a_1, v_b_2)",
      "expf(v_a_1)",
      "exp(v_a_1)",
      "rsqrtf(v_a_1)",
      "(v_a_1 && v_b_2)",
      "gc::to_i8(__half2float(v_x_1))",
      "__double2bfloat16(v_x_1)",
      "__ll2half_rn(v_x_1)",
      "p_out_bool[v_item_0] = (unsigned char)((v_x_1 != 0.0f));",
      "*reinterpret_cast<const gc::vec<float, 4>*>(&p_in0[gc::mul(v_item_0, 4LL)])",
      "*reinterpret_cast<gc::vec<__half, 8>*>(&p_out1[gc::mul(v_item_0, 8LL)]) = t_;",
      "__ushort_as_half((unsigned short)0x7bffu)",
      "(-9223372036854775807LL - 1LL)",
      "(-2147483647 - 1)",
      "__int_as_float((int)0xff800000u)",
      "0x1.99999ap-4f",
      "0x1.999999999999ap-4",
      "exp2f(v_a_1)",
      "exp2(v_a_1)",
      "((int)((unsigned)__half_as_ushort(__float2half_rn(v_x_1)) | "
      "((unsigned)__half_as_ushort(__float2half_rn(v_y_2)) << 16)))",
      "((int)((unsigned)__bfloat16_as_ushort(__float2bfloat16_rn(v_x_1)) | "
      "((unsigned)__bfloat16_as_ushort(__float2bfloat16_rn(v_y_2)) << 16)))",
  };
  expect_contains(src, snips, (int)(sizeof snips / sizeof snips[0]));
  /* deterministic */
  kir_module *m2 = build_all();
  char *src2 = cuda_source(m2);
  ck_assert_str_eq(src, src2);
  free(src);
  free(src2);
  kir_module_free(m);
  kir_module_free(m2);
}
END_TEST

/* Only-f32 modules do not pull in the 16-bit float headers. */
START_TEST(test_cuda_c_no_fp16_headers) {
  kir_module *m = kir_module_new();
  build_ops_kernel(m, F32, 4);
  char *src = cuda_source(m);
  ck_assert_ptr_null(strstr(src, "cuda_fp16.h"));
  ck_assert_ptr_null(strstr(src, "cuda_bf16.h"));
  free(src);
  kir_module_free(m);
}
END_TEST

/* Compile the whole module for sm, check PTX features and ptxas acceptance. */
static void compile_all_for(int sm) {
  kir_module *m = build_all();
  char *src = cuda_source(m);
  char *ptx = NULL;
  void *cubin = NULL;
  size_t cubin_len = 0;
  compile_or_fail(src, sm, &ptx, &cubin, &cubin_len);
  ck_assert_ptr_nonnull(ptx);
  ck_assert_ptr_nonnull(cubin);
  ck_assert_uint_gt(cubin_len, 1000);
  ck_assert_int_eq(memcmp(cubin, "\x7f" "ELF", 4), 0);
  char target[32];
  snprintf(target, sizeof target, ".target sm_%d", sm);
  ck_assert_ptr_nonnull(strstr(ptx, target));
  for (int i = 0; i < m->n_kernels; i++) {
    char entry[128];
    snprintf(entry, sizeof entry, ".entry %s(", m->kernels[i]->name);
    ck_assert_msg(strstr(ptx, entry) != NULL, "PTX lacks %s", entry);
  }
  ck_assert_ptr_nonnull(strstr(ptx, "shfl.sync.bfly.b32"));
  ck_assert_ptr_nonnull(strstr(ptx, "bar.sync"));
  ck_assert_ptr_nonnull(strstr(ptx, "v4.f32"));  /* 16-byte vector accesses */
  char *out = NULL;
  int st = run_ptxas(ptx, sm, "all", &out);
  ck_assert_msg(st == 0, "ptxas failed (%d): %s", st, out ? out : "");
  free(out);
  /* same input, same bytes */
  char *ptx2 = NULL;
  void *cubin2 = NULL;
  size_t cubin_len2 = 0;
  compile_or_fail(src, sm, &ptx2, &cubin2, &cubin_len2);
  ck_assert_str_eq(ptx, ptx2);
  ck_assert_uint_eq(cubin_len, cubin_len2);
  ck_assert_int_eq(memcmp(cubin, cubin2, cubin_len), 0);
  free(ptx2);
  free(cubin2);
  free(ptx);
  free(cubin);
  free(src);
  kir_module_free(m);
}

START_TEST(test_compile_sm90) { compile_all_for(90); }
END_TEST

START_TEST(test_compile_sm80) { compile_all_for(80); }
END_TEST

/* A scratch array (KIR_SCRATCH, per thread; the host matmul packs into them): verified in
 * an ITEMS launch, dumped, and printed as a local array that NVRTC compiles (test_llvm
 * checks the host alloca). */
START_TEST(test_scratch) {
  kir_module *m = kir_module_new();
  kir_kernel *k = kir_kernel_new(m, "scratch_k", (kir_launch){KIR_LAUNCH_ITEMS, 100, 128});
  kir_add_param(m, k, "y", KIR_PARAM_BUFFER, F32, 0, 0);
  int sc = kir_add_scratch(m, k, F32, 64);
  ck_assert_int_eq(sc, 0);
  ck_assert_int_eq(k->n_scratch, 1);
  kir_expr *slot = kir_binary(m, KIR_REM, item_ref(m, k), c64(m, 64));
  kir_emit_store(m, &k->body, KIR_SCRATCH, sc, slot, kir_cast(m, F32, item_ref(m, k)));
  kir_expr *back = kir_load(m, k, KIR_SCRATCH, sc, kir_binary(m, KIR_REM, item_ref(m, k), c64(m, 64)));
  ck_assert_int_eq(back->type, F32);
  kir_emit_store(m, &k->body, KIR_GLOBAL, 0, item_ref(m, k), back);
  kir_verify(k);
  gc_sbuf dump = {0};
  kir_print(&dump, k);
  ck_assert_ptr_nonnull(strstr(dump.data, "scratch scratch0: f32[64]"));
  ck_assert_ptr_nonnull(strstr(dump.data, "scratch0["));
  gc_sbuf_free(&dump);
  char *src = cuda_source(m);
  ck_assert_ptr_nonnull(strstr(src, "__align__(16) float x_0[64];"));
  char *ptx = NULL;
  compile_or_fail(src, 90, &ptx, NULL, NULL);
  ck_assert_ptr_nonnull(strstr(ptx, ".entry scratch_k("));
  free(ptx);
  free(src);
  kir_module_free(m);
}
END_TEST

/* PTX only (no cubin requested) and cubin only. */
START_TEST(test_compile_partial_outputs) {
  kir_module *m = kir_module_new();
  build_loops_kernel(m, 10);
  char *src = cuda_source(m);
  char *ptx = NULL;
  compile_or_fail(src, 90, &ptx, NULL, NULL);
  ck_assert_ptr_nonnull(strstr(ptx, ".entry loops("));
  void *cubin = NULL;
  size_t n = 0;
  compile_or_fail(src, 90, NULL, &cubin, &n);
  ck_assert_uint_gt(n, 0);
  free(ptx);
  free(cubin);
  free(src);
  kir_module_free(m);
}
END_TEST

/* NVRTC errors come back as COMPILE_ERROR with the log and the source line. */
START_TEST(test_nvrtc_error) {
  const char *src =
      "extern \"C\" __global__ void k(float* p) {\n"
      "  p[0] = undefined_thing_42 + 1.0f;\n"
      "}\n";
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  char *ptx = (char *)1;
  void *cubin = (void *)1;
  size_t n = 7;
  int rc = gc_nvrtc_compile(src, 90, &ptx, &cubin, &n, tu_toolchain(), &d);
  ck_assert_int_eq(rc, -1);
  ck_assert_ptr_null(ptx);
  ck_assert_ptr_null(cubin);
  ck_assert_uint_eq(n, 0);
  ck_assert_int_eq(d.n_errors, 1);
  ck_assert_int_eq(d.status, GRAPHC_STATUS_COMPILE_ERROR);
  const char *msg = d.items[0].msg;
  ck_assert_ptr_nonnull(strstr(msg, "NVRTC compilation failed for sm_90"));
  ck_assert_ptr_nonnull(strstr(msg, "undefined_thing_42"));
  ck_assert_ptr_nonnull(strstr(msg, "graphc_kernels.cu(2)"));
  ck_assert_ptr_nonnull(strstr(msg, "    2 |   p[0] = undefined_thing_42 + 1.0f;"));
  gc_diags_free(&d);
  /* an architecture NVRTC does not know */
  gc_diags_init(&d, "", NULL, 0);
  rc = gc_nvrtc_compile("extern \"C\" __global__ void k() {}\n", 12, &ptx, NULL, NULL, tu_toolchain(), &d);
  ck_assert_int_eq(rc, -1);
  ck_assert_int_eq(d.status, GRAPHC_STATUS_COMPILE_ERROR);
  ck_assert_ptr_nonnull(strstr(d.items[0].msg, "sm_12"));
  gc_diags_free(&d);
}
END_TEST

START_TEST(test_nvrtc_version) {
  const char *v = gc_nvrtc_version();
  int major = 0, minor = -1;
  ck_assert_int_eq(sscanf(v, "%d.%d", &major, &minor), 2);
  ck_assert_int_ge(major, 11);
  ck_assert_int_ge(minor, 0);
  ck_assert_ptr_eq(gc_nvrtc_version(), v);
}
END_TEST

/* ---- exact literals: the printed f16/bf16 bits are the nearest-even values ------------------ */

/* Hex values after each occurrence of `tag` in s, in order. */
static int scan_bits(const char *s, const char *tag, unsigned *out, int max) {
  int n = 0;
  for (const char *p = strstr(s, tag); p && n < max; p = strstr(p + 1, tag))
    out[n++] = (unsigned)strtoul(p + strlen(tag), NULL, 16);
  return n;
}

START_TEST(test_half_literals) {
  unsigned seed = (unsigned)time(NULL);
  srand(seed);
  enum { N = 200 };
  double vals[N];
  for (int i = 0; i < N; i++) {
    double r = ((double)rand() / RAND_MAX - 0.5) * 2;
    int e = rand() % 60 - 30;
    vals[i] = ldexp(r, e);
    if (i % 10 == 0) vals[i] = ldexp((double)(rand() % 2048) + 0.5, rand() % 20 - 24); /* ties */
  }
  for (int h = 0; h < 2; h++) {
    gc_dtype t = h ? BF16 : F16;
    kir_module *m = kir_module_new();
    kir_kernel *k = kir_kernel_new(m, "lits", (kir_launch){KIR_LAUNCH_ITEMS, 1, 32});
    int p = kir_add_param(m, k, "o", KIR_PARAM_BUFFER, t, 0, 0);
    for (int i = 0; i < N; i++) kir_emit_store(m, &k->body, KIR_GLOBAL, p, c64(m, i), kir_const_f(m, t, vals[i]));
    char *src = cuda_source(m);
    unsigned bits[N];
    int n = scan_bits(src, h ? "__ushort_as_bfloat16((unsigned short)0x" : "__ushort_as_half((unsigned short)0x",
                      bits, N);
    ck_assert_int_eq(n, N);
    for (int i = 0; i < N; i++) {
      unsigned want = h ? nearest16(vals[i], 7, 127) : nearest16(vals[i], 10, 15);
      ck_assert_msg(bits[i] == want, "seed %u: %s literal %.17g: printed 0x%04x, want 0x%04x", seed,
                    h ? "bf16" : "f16", vals[i], bits[i], want);
    }
    free(src);
    kir_module_free(m);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("kir");
  TCase *tc = tcase_create("builder");
  tcase_add_test(tc, test_targets);
  tcase_add_test(tc, test_builder);
  tcase_add_test(tc, test_statements);
  tcase_add_test(tc, test_verify_all_ok);
  tcase_add_test(tc, test_print_dump);
  tcase_add_test(tc, test_print_pack2_exp2);
  tcase_add_test(tc, test_eval_pack2);
  tcase_add_test(tc, test_eval_exp2);
  suite_add_tcase(s, tc);

  TCase *tv = tcase_create("verify_aborts");
  tcase_add_test_raise_signal(tv, test_verify_use_before_assign, SIGABRT);
  tcase_add_test_raise_signal(tv, test_verify_store_readonly, SIGABRT);
  tcase_add_test_raise_signal(tv, test_verify_barrier_in_items, SIGABRT);
  tcase_add_test_raise_signal(tv, test_verify_scratch_in_blocks, SIGABRT);
  tcase_add_test_raise_signal(tv, test_verify_store_type, SIGABRT);
  tcase_add_test_raise_signal(tv, test_verify_assign_type, SIGABRT);
  tcase_add_test_raise_signal(tv, test_binary_type_mismatch, SIGABRT);
  tcase_add_test_raise_signal(tv, test_arith_on_f16, SIGABRT);
  tcase_add_test_raise_signal(tv, test_exp_on_int, SIGABRT);
  tcase_add_test_raise_signal(tv, test_exp2_on_int, SIGABRT);
  tcase_add_test_raise_signal(tv, test_pack2_f64_operand, SIGABRT);
  tcase_add_test_raise_signal(tv, test_pack2_to_f32, SIGABRT);
  tcase_add_test_raise_signal(tv, test_verify_pack2_type, SIGABRT);
  tcase_add_test_raise_signal(tv, test_bad_kernel_name, SIGABRT);
  tcase_add_test_raise_signal(tv, test_index_must_be_i64, SIGABRT);
  suite_add_tcase(s, tv);

  TCase *tcc = tcase_create("cuda_c");
  tcase_set_timeout(tcc, 600);
  tcase_add_test(tcc, test_cuda_c_text);
  tcase_add_test(tcc, test_cuda_c_no_fp16_headers);
  tcase_add_test(tcc, test_half_literals);
  tcase_add_test(tcc, test_compile_sm90);
  tcase_add_test(tcc, test_compile_sm80);
  tcase_add_test(tcc, test_compile_partial_outputs);
  tcase_add_test(tcc, test_scratch);
  tcase_add_test(tcc, test_nvrtc_error);
  tcase_add_test(tcc, test_nvrtc_version);
  suite_add_tcase(s, tcc);

  return tu_run_suite(s);
}
