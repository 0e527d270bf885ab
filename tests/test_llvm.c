/* test_llvm.c - Kernel IR -> LLVM IR -> PTX (NVPTX backend) and PTX -> cubin
 * (the ptxas program, else nvJitLink). No GPU needed: checks that ptxas and nvJitLink accept the PTX,
 * that the PTX has the instructions each construct must produce, determinism,
 * and that errors carry the tool's message.
 *
 * Kernels are built by hand with the kir.h builders and cover every kir_op,
 * every cast (9 x 9 dtypes), vector loads/stores of every dtype, a BLOCKS
 * kernel with shared memory + barrier + shuffles, loops and ifs, and pack2 (f16x2 / bf16x2
 * fragment registers), which also runs through the host JIT against known bit patterns.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "driver/cpu_backend.h"
#include "interp/interp.h"
#include "ir/dtype.h"
#include "testutil.h"

/* LeakSanitizer: nvJitLink 13.0 leaks ~100 KB inside nvJitLinkAddData on every
 * PTX compile for an arch newer than the PTX's .target (sm_90 PTX -> sm_100
 * cubin, test_newer_sm); same-arch compiles do not. Not ours to free. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:nvJitLinkAddData\n"; }

/* From codegen/llvm_emit.h (which needs the LLVM-C headers). */
int gc_llvm_host_ir(const kir_module *m, int optimize, char **ir_text, gc_diags *d);

#define DT(x) GRAPHC_DTYPE_##x
#define NDT GRAPHC_DTYPE_COUNT_

static const char *const dt_names[NDT] = {"f64", "f32", "f16", "bf16", "i64", "i32", "i8", "u8", "bool"};

/* ---- builder shorthands ----------------------------------------------------------- */

/* i64 literal. */
static kir_expr *ci(kir_module *m, int64_t v) { return kir_const_i(m, DT(I64), v); }

/* The kernel's item (or group) index. */
static kir_expr *item(kir_module *m, kir_kernel *k) { return kir_var_ref(m, k, k->item_var); }

/* item * stride + j (i64). */
static kir_expr *at(kir_module *m, kir_kernel *k, int64_t stride, int64_t j) {
  return kir_binary(m, KIR_ADD, kir_binary(m, KIR_MUL, item(m, k), ci(m, stride)), ci(m, j));
}

/* Buffer parameter named `<pre>_<dtype>`. */
static int buf(kir_module *m, kir_kernel *k, const char *pre, gc_dtype t, int ro) {
  char name[32];
  snprintf(name, sizeof name, "%s_%s", pre, dt_names[t]);
  return kir_add_param(m, k, name, KIR_PARAM_BUFFER, t, ro, k->n_params);
}

/* A value of dtype t that is not a literal: in[item] for a read-only buffer. */
static kir_expr *ld(kir_module *m, kir_kernel *k, int b) {
  return kir_load(m, k, KIR_GLOBAL, b, item(m, k));
}

/* ---- kernels ------------------------------------------------------------------------ */

/* Every float op on f32 and f64: unary, binary, comparisons (to a bool buffer). */
static void k_float_ops(kir_module *m) {
  static const kir_op un[] = {KIR_NEG, KIR_ABS, KIR_EXP, KIR_EXP2, KIR_LOG, KIR_SQRT, KIR_RSQRT,
                              KIR_TANH, KIR_ERF, KIR_SIN, KIR_COS, KIR_FLOOR, KIR_CEIL};
  static const kir_op bin[] = {KIR_ADD, KIR_SUB, KIR_MUL, KIR_DIV, KIR_REM, KIR_MIN, KIR_MAX, KIR_POW};
  static const kir_op cmp[] = {KIR_EQ, KIR_NE, KIR_LT, KIR_LE, KIR_GT, KIR_GE};
  gc_dtype ts[2] = {DT(F32), DT(F64)};
  for (int ti = 0; ti < 2; ti++) {
    gc_dtype t = ts[ti];
    char name[32];
    snprintf(name, sizeof name, "float_ops_%s", dt_names[t]);
    kir_kernel *k = kir_kernel_new(m, name, (kir_launch){KIR_LAUNCH_ITEMS, 1000, 256});
    int x = buf(m, k, "x", t, 1), y = buf(m, k, "y", t, 1);
    int o = buf(m, k, "out", t, 0), ob = buf(m, k, "cmp", DT(BOOL), 0);
    int nu = (int)(sizeof un / sizeof un[0]), nb = (int)(sizeof bin / sizeof bin[0]);
    int nc = (int)(sizeof cmp / sizeof cmp[0]);
    int j = 0;
    for (int i = 0; i < nu; i++)
      kir_emit_store(m, &k->body, KIR_GLOBAL, o, at(m, k, nu + nb + 1, j++), kir_unary(m, un[i], ld(m, k, x)));
    for (int i = 0; i < nb; i++)
      kir_emit_store(m, &k->body, KIR_GLOBAL, o, at(m, k, nu + nb + 1, j++),
                     kir_binary(m, bin[i], ld(m, k, x), ld(m, k, y)));
    /* select on a comparison, with literals inf and nan */
    kir_expr *c = kir_binary(m, KIR_LT, ld(m, k, x), kir_const_f(m, t, 0.5));
    kir_emit_store(m, &k->body, KIR_GLOBAL, o, at(m, k, nu + nb + 1, j++),
                   kir_select(m, c, kir_const_f(m, t, INFINITY), kir_const_f(m, t, NAN)));
    for (int i = 0; i < nc; i++)
      kir_emit_store(m, &k->body, KIR_GLOBAL, ob, at(m, k, nc, i),
                     kir_binary(m, cmp[i], ld(m, k, x), ld(m, k, y)));
  }
}

/* Every integer op on i32 and i64, and the bool ops. */
static void k_int_ops(kir_module *m) {
  static const kir_op un[] = {KIR_NEG, KIR_ABS, KIR_NOT};
  static const kir_op bin[] = {KIR_ADD, KIR_SUB, KIR_MUL, KIR_DIV, KIR_REM, KIR_MIN, KIR_MAX,
                               KIR_AND, KIR_OR, KIR_XOR};
  static const kir_op cmp[] = {KIR_EQ, KIR_NE, KIR_LT, KIR_LE, KIR_GT, KIR_GE};
  gc_dtype ts[2] = {DT(I32), DT(I64)};
  for (int ti = 0; ti < 2; ti++) {
    gc_dtype t = ts[ti];
    char name[32];
    snprintf(name, sizeof name, "int_ops_%s", dt_names[t]);
    kir_kernel *k = kir_kernel_new(m, name, (kir_launch){KIR_LAUNCH_ITEMS, 777, 128});
    int x = buf(m, k, "x", t, 1), y = buf(m, k, "y", t, 1);
    int o = buf(m, k, "out", t, 0), ob = buf(m, k, "cmp", DT(BOOL), 0);
    int n = 3 + 10, j = 0;
    for (int i = 0; i < 3; i++)
      kir_emit_store(m, &k->body, KIR_GLOBAL, o, at(m, k, n, j++), kir_unary(m, un[i], ld(m, k, x)));
    for (int i = 0; i < 10; i++)
      kir_emit_store(m, &k->body, KIR_GLOBAL, o, at(m, k, n, j++),
                     kir_binary(m, bin[i], ld(m, k, x), ld(m, k, y)));
    for (int i = 0; i < 6; i++)
      kir_emit_store(m, &k->body, KIR_GLOBAL, ob, at(m, k, 6, i),
                     kir_binary(m, cmp[i], ld(m, k, x), ld(m, k, y)));
  }
  /* bool: not and or xor and comparisons */
  kir_kernel *k = kir_kernel_new(m, "bool_ops", (kir_launch){KIR_LAUNCH_ITEMS, 100, 64});
  int a = buf(m, k, "a", DT(BOOL), 1), b = buf(m, k, "b", DT(BOOL), 1), o = buf(m, k, "out", DT(BOOL), 0);
  kir_op ops[] = {KIR_AND, KIR_OR, KIR_XOR, KIR_EQ, KIR_NE, KIR_LT, KIR_LE, KIR_GT, KIR_GE};
  for (int i = 0; i < 9; i++)
    kir_emit_store(m, &k->body, KIR_GLOBAL, o, at(m, k, 10, i), kir_binary(m, ops[i], ld(m, k, a), ld(m, k, b)));
  kir_emit_store(m, &k->body, KIR_GLOBAL, o, at(m, k, 10, 9), kir_unary(m, KIR_NOT, ld(m, k, a)));
}

/* Every cast: out_<to>[item*9 + from] = cast(to, in_<from>[item]). */
static void k_casts(kir_module *m) {
  kir_kernel *k = kir_kernel_new(m, "casts", (kir_launch){KIR_LAUNCH_ITEMS, 4096, 256});
  int in[NDT], out[NDT];
  for (int t = 0; t < NDT; t++) in[t] = buf(m, k, "in", (gc_dtype)t, 1);
  for (int t = 0; t < NDT; t++) out[t] = buf(m, k, "out", (gc_dtype)t, 0);
  for (int to = 0; to < NDT; to++)
    for (int from = 0; from < NDT; from++)
      kir_emit_store(m, &k->body, KIR_GLOBAL, out[to], at(m, k, NDT, from),
                     kir_cast(m, (gc_dtype)to, ld(m, k, in[from])));
}

/* Vector loads and stores of every dtype, 16 bytes (8 elements at most), plus a
 * narrower f32 x2; values pass through variables (f32 gets +1). */
static void k_vectors(kir_module *m) {
  kir_kernel *k = kir_kernel_new(m, "vectors", (kir_launch){KIR_LAUNCH_ITEMS, 512, 128});
  for (int t = 0; t < NDT; t++) {
    int w = 16 / (int)graphc_dtype_size((gc_dtype)t);
    if (w > KIR_MAX_VEC) w = KIR_MAX_VEC;
    int in = buf(m, k, "vin", (gc_dtype)t, 1), out = buf(m, k, "vout", (gc_dtype)t, 0);
    int vars[KIR_MAX_VEC];
    kir_expr *vals[KIR_MAX_VEC];
    for (int i = 0; i < w; i++) vars[i] = kir_add_var(m, k, dt_names[t], (gc_dtype)t);
    kir_emit_load_vec(m, &k->body, KIR_GLOBAL, in, at(m, k, w, 0), w, vars);
    for (int i = 0; i < w; i++) {
      vals[i] = kir_var_ref(m, k, vars[i]);
      if (t == DT(F32)) vals[i] = kir_binary(m, KIR_ADD, vals[i], kir_const_f(m, DT(F32), 1.0));
    }
    kir_emit_store_vec(m, &k->body, KIR_GLOBAL, out, at(m, k, w, 0), w, vals);
  }
  int in = buf(m, k, "pair_in", DT(F32), 1), out = buf(m, k, "pair_out", DT(F32), 0);
  int v2[2] = {kir_add_var(m, k, "p", DT(F32)), kir_add_var(m, k, "q", DT(F32))};
  kir_emit_load_vec(m, &k->body, KIR_GLOBAL, in, at(m, k, 2, 0), 2, v2);
  kir_expr *sw[2] = {kir_var_ref(m, k, v2[1]), kir_var_ref(m, k, v2[0])};
  kir_emit_store_vec(m, &k->body, KIR_GLOBAL, out, at(m, k, 2, 0), 2, sw);
}

/* BLOCKS row sum: strided loop, warp shuffle tree, shared memory across warps,
 * barrier, if/else on the thread index. out[row] = sum(x[row, :cols]). */
static void k_rowsum(kir_module *m) {
  kir_kernel *k = kir_kernel_new(m, "rowsum", (kir_launch){KIR_LAUNCH_BLOCKS, 300, 128});
  int x = buf(m, k, "x", DT(F32), 1), out = buf(m, k, "out", DT(F32), 0);
  int cols = kir_add_param(m, k, "cols", KIR_PARAM_I64, DT(I64), 1, -1);
  int sm = kir_add_shared(m, k, DT(F32), 4);
  int acc = kir_add_var(m, k, "acc", DT(F32)), j = kir_add_var(m, k, "j", DT(I64));
  kir_block *b = &k->body;
  kir_expr *tid = kir_cast(m, DT(I64), kir_special_ref(m, KIR_SP_THREAD));
  kir_expr *bdim = kir_cast(m, DT(I64), kir_special_ref(m, KIR_SP_BLOCK_DIM));
  kir_emit_assign(m, b, acc, kir_const_f(m, DT(F32), 0.0));
  kir_block *body = kir_emit_for(m, b, j, tid, kir_param_ref(m, k, cols), bdim);
  kir_expr *xi = kir_load(m, k, KIR_GLOBAL, x,
                          kir_binary(m, KIR_ADD, kir_binary(m, KIR_MUL, item(m, k), kir_param_ref(m, k, cols)),
                                     kir_var_ref(m, k, j)));
  kir_emit_assign(m, body, acc, kir_binary(m, KIR_ADD, kir_var_ref(m, k, acc), xi));
  for (int mask = 16; mask >= 1; mask /= 2)
    kir_emit_assign(m, b, acc, kir_binary(m, KIR_ADD, kir_var_ref(m, k, acc),
                                          kir_shfl_xor(m, kir_var_ref(m, k, acc), mask)));
  kir_block *th, *el;
  kir_emit_if(m, b, kir_binary(m, KIR_EQ, kir_special_ref(m, KIR_SP_LANE), kir_const_i(m, DT(I32), 0)), &th, NULL);
  kir_emit_store(m, th, KIR_SHARED, sm, kir_cast(m, DT(I64), kir_special_ref(m, KIR_SP_WARP)),
                 kir_var_ref(m, k, acc));
  kir_emit_barrier(m, b);
  kir_emit_if(m, b, kir_binary(m, KIR_EQ, kir_special_ref(m, KIR_SP_THREAD), kir_const_i(m, DT(I32), 0)), &th, &el);
  kir_emit_assign(m, th, acc, kir_const_f(m, DT(F32), 0.0));
  kir_block *wb = kir_emit_for(m, th, j, ci(m, 0), ci(m, 4), ci(m, 1));
  kir_emit_assign(m, wb, acc, kir_binary(m, KIR_ADD, kir_var_ref(m, k, acc),
                                         kir_load(m, k, KIR_SHARED, sm, kir_var_ref(m, k, j))));
  kir_emit_store(m, th, KIR_GLOBAL, out, item(m, k), kir_var_ref(m, k, acc));
  kir_emit_assign(m, el, acc, kir_const_f(m, DT(F32), -1.0));
}

/* BLOCKS kernel shuffling every dtype: out_t[g*64 + thread] = shfl_xor(in_t[...], 1 or 16). */
static void k_shuffles(kir_module *m) {
  kir_kernel *k = kir_kernel_new(m, "shuffles", (kir_launch){KIR_LAUNCH_BLOCKS, 10, 64});
  kir_expr *tid = kir_cast(m, DT(I64), kir_special_ref(m, KIR_SP_THREAD));
  kir_expr *idx = kir_binary(m, KIR_ADD, kir_binary(m, KIR_MUL, item(m, k), ci(m, 64)), tid);
  for (int t = 0; t < NDT; t++) {
    int in = buf(m, k, "sin", (gc_dtype)t, 1), out = buf(m, k, "sout", (gc_dtype)t, 0);
    kir_expr *v = kir_load(m, k, KIR_GLOBAL, in, idx);
    kir_emit_store(m, &k->body, KIR_GLOBAL, out, idx, kir_shfl_xor(m, v, t % 2 ? 1 : 16));
  }
}

/* ITEMS kernel with an i64 parameter, nested loops and if/else:
 * out[i] = sum_{j < n, j odd} (j < i ? j : -j) as i64. */
static void k_loops(kir_module *m) {
  kir_kernel *k = kir_kernel_new(m, "loops", (kir_launch){KIR_LAUNCH_ITEMS, 2000, 256});
  int out = buf(m, k, "out", DT(I64), 0);
  int n = kir_add_param(m, k, "n", KIR_PARAM_I64, DT(I64), 1, -1);
  int s = kir_add_var(m, k, "s", DT(I64)), j = kir_add_var(m, k, "j", DT(I64));
  kir_emit_assign(m, &k->body, s, ci(m, 0));
  kir_block *lb = kir_emit_for(m, &k->body, j, ci(m, 1), kir_param_ref(m, k, n), ci(m, 2));
  kir_block *th, *el;
  kir_emit_if(m, lb, kir_binary(m, KIR_LT, kir_var_ref(m, k, j), item(m, k)), &th, &el);
  kir_emit_assign(m, th, s, kir_binary(m, KIR_ADD, kir_var_ref(m, k, s), kir_var_ref(m, k, j)));
  kir_emit_assign(m, el, s, kir_binary(m, KIR_SUB, kir_var_ref(m, k, s), kir_var_ref(m, k, j)));
  kir_emit_store(m, &k->body, KIR_GLOBAL, out, item(m, k), kir_var_ref(m, k, s));
}

/* ITEMS kernel "pack2" over n items: out[2i] = pack2.f16(x[i], y[i]),
 * out[2i + 1] = pack2.bf16(x[i], y[i]), e2[i] = exp2(x[i]) (f32). */
static void k_pack2(kir_module *m, int64_t n) {
  kir_kernel *k = kir_kernel_new(m, "pack2", (kir_launch){KIR_LAUNCH_ITEMS, n, 128});
  int x = buf(m, k, "x", DT(F32), 1), y = buf(m, k, "y", DT(F32), 1);
  int o = buf(m, k, "out", DT(I32), 0), e2 = buf(m, k, "e2", DT(F32), 0);
  for (int h = 0; h < 2; h++)
    kir_emit_store(m, &k->body, KIR_GLOBAL, o, at(m, k, 2, h),
                   kir_pack2(m, h ? DT(BF16) : DT(F16), ld(m, k, x), ld(m, k, y)));
  kir_emit_store(m, &k->body, KIR_GLOBAL, e2, item(m, k), kir_unary(m, KIR_EXP2, ld(m, k, x)));
}

/* The whole test module: every kernel above. */
static kir_module *build_all(void) {
  kir_module *m = kir_module_new();
  ck_assert_ptr_nonnull(m);
  k_float_ops(m);
  k_int_ops(m);
  k_casts(m);
  k_vectors(m);
  k_rowsum(m);
  k_shuffles(m);
  k_loops(m);
  k_pack2(m, 100);
  return m;
}

/* ---- helpers -------------------------------------------------------------------------- */

/* PTX of m for sm (fails the test with the diagnostics on error). */
static char *ptx_of(const kir_module *m, int sm, char **ir) {
  gc_diags d;
  gc_diags_init(&d, "test", NULL, 0);
  char *ptx = NULL;
  int rc = gc_llvm_ptx(m, sm, &ptx, ir, tu_toolchain(), &d);
  if (rc != 0) {
    char *msg = gc_diags_render(&d);
    fprintf(stderr, "gc_llvm_ptx(sm_%d) failed:\n%s\n", sm, msg ? msg : "?");
    free(msg);
  }
  ck_assert_int_eq(rc, 0);
  ck_assert_int_eq(d.n_errors, 0);
  gc_diags_free(&d);
  ck_assert_ptr_nonnull(ptx);
  return ptx;
}

/* Write text to <tmpdir>/<name> and return the path (static buffer ring). */
static const char *write_tmp(const char *name, const char *text) {
  static char paths[4][512];
  static int r;
  char *p = paths[r++ & 3];
  snprintf(p, 512, "%s/%s", tu_tmpdir(), name);
  FILE *f = fopen(p, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(fputs(text, f) >= 0, 1);
  fclose(f);
  return p;
}

/* The text of the PTX function `name` (from its .entry line to the closing brace). */
static char *ptx_function(const char *ptx, const char *name) {
  char key[128];
  snprintf(key, sizeof key, ".entry %s(", name);
  const char *s = strstr(ptx, key);
  ck_assert_msg(s != NULL, "no %s in PTX", key);
  const char *e = strstr(s, "\n}\n");
  ck_assert_ptr_nonnull(e);
  return strndup(s, (size_t)(e - s) + 2);
}

/* ptxas accepts the PTX for sm (GRAPHC_PTXAS from the toolkit). */
static void check_ptxas(const char *ptx, int sm) {
  char name[64], cmd[2048];
  snprintf(name, sizeof name, "llvm_sm%d.ptx", sm);
  const char *path = write_tmp(name, ptx);
  snprintf(cmd, sizeof cmd, "%s -arch=sm_%d %s -o %s.cubin", GRAPHC_PTXAS, sm, path, path);
  char *out = NULL;
  int rc = tu_run_cmd(cmd, &out);
  ck_assert_msg(rc == 0, "ptxas rejected the PTX for sm_%d:\n%s", sm, out ? out : "");
  free(out);
}

/* nvJitLink turns the PTX into an ELF cubin for sm. */
static void check_cubin(const char *ptx, int sm) {
  gc_diags d;
  gc_diags_init(&d, "test", NULL, 0);
  void *cubin = NULL;
  size_t len = 0;
  int rc = gc_ptx_to_cubin(ptx, sm, &cubin, &len, tu_toolchain(), &d);
  if (rc != 0) {
    char *msg = gc_diags_render(&d);
    fprintf(stderr, "gc_ptx_to_cubin(sm_%d) failed:\n%s\n", sm, msg ? msg : "?");
    free(msg);
  }
  ck_assert_int_eq(rc, 0);
  ck_assert_ptr_nonnull(cubin);
  ck_assert_uint_gt(len, 64);
  ck_assert_int_eq(memcmp(cubin, "\177ELF", 4), 0);
  free(cubin);
  gc_diags_free(&d);
}

/* ---- tests ------------------------------------------------------------------------------ */

/* Every kernel compiles for sm_90 and sm_80; ptxas and nvJitLink accept the PTX. */
START_TEST(test_ptx_assembles) {
  int sms[2] = {90, 80};
  kir_module *m = build_all();
  for (int i = 0; i < 2; i++) {
    char *ptx = ptx_of(m, sms[i], NULL);
    char target[32];
    snprintf(target, sizeof target, ".target sm_%d", sms[i]);
    ck_assert_ptr_nonnull(strstr(ptx, target));
    for (int k = 0; k < m->n_kernels; k++) free(ptx_function(ptx, m->kernels[k]->name));
    ck_assert_ptr_null(strstr(ptx, ".extern"));     /* libdevice linked, nothing unresolved */
    ck_assert_ptr_null(strstr(ptx, "__nvvm_reflect"));
    check_ptxas(ptx, sms[i]);
    check_cubin(ptx, sms[i]);
    free(ptx);
  }
  kir_module_free(m);
}
END_TEST

/* Newer GPUs than LLVM 19 knows get sm_90 PTX that nvJitLink compiles for them. */
START_TEST(test_newer_sm) {
  kir_module *m = kir_module_new();
  k_loops(m);
  k_float_ops(m);
  char *ptx = ptx_of(m, 100, NULL);
  ck_assert_ptr_nonnull(strstr(ptx, ".target sm_90"));
  check_cubin(ptx, 100);
  free(ptx);
  kir_module_free(m);
}
END_TEST

/* Texts a and b are equal; else both are written to the temp dir for diffing. */
static void same_text(const char *what, const char *a, const char *b) {
  if (strcmp(a, b) == 0) return;
  char na[64], nb[64];
  snprintf(na, sizeof na, "%s.a", what);
  snprintf(nb, sizeof nb, "%s.b", what);
  const char *pa = write_tmp(na, a), *pb = write_tmp(nb, b);
  ck_abort_msg("%s differs between two emissions: diff %s %s", what, pa, pb);
}

/* Same module twice, and a rebuilt module: identical PTX and IR. */
START_TEST(test_deterministic) {
  kir_module *m1 = build_all(), *m2 = build_all();
  char *ir1 = NULL, *ir2 = NULL, *ir3 = NULL;
  char *p1 = ptx_of(m1, 90, &ir1), *p2 = ptx_of(m1, 90, &ir2), *p3 = ptx_of(m2, 90, &ir3);
  same_text("ptx", p1, p2);
  same_text("ptx", p1, p3);
  same_text("ir", ir1, ir2);
  same_text("ir", ir1, ir3);
  free(p1), free(p2), free(p3), free(ir1), free(ir2), free(ir3);
  kir_module_free(m1);
  kir_module_free(m2);
}
END_TEST

/* The launch mapping, specials, shared memory, barriers and shuffles appear as PTX. */
START_TEST(test_ptx_content) {
  kir_module *m = build_all();
  char *ir = NULL;
  char *ptx = ptx_of(m, 90, &ir);
  /* IR handed back is the optimized module with kernels as ptx_kernel functions */
  ck_assert_ptr_nonnull(strstr(ir, "define ptx_kernel void @rowsum("));
  ck_assert_ptr_nonnull(strstr(ir, "!\"kernel\""));
  ck_assert_ptr_nonnull(strstr(ir, "noalias nocapture readonly"));

  char *f = ptx_function(ptx, "rowsum");  /* BLOCKS: grid-stride over blocks */
  ck_assert_ptr_nonnull(strstr(f, "%ctaid.x"));
  ck_assert_ptr_nonnull(strstr(f, "%nctaid.x"));
  ck_assert_ptr_nonnull(strstr(f, "shfl.sync.bfly.b32"));
  ck_assert_ptr_nonnull(strstr(f, "bar.sync"));
  ck_assert_ptr_nonnull(strstr(f, "st.shared.f32"));
  ck_assert_ptr_nonnull(strstr(f, "ld.shared.v4.f32"));  /* the 4 partial sums at once */
  ck_assert_ptr_nonnull(strstr(f, ".maxntid 128"));
  ck_assert_ptr_nonnull(strstr(f, "ld.global.nc.f32"));  /* readonly noalias buffer */
  free(f);
  ck_assert_ptr_nonnull(strstr(ptx, ".shared .align 16 .b8 rowsum_smem0[16]"));

  f = ptx_function(ptx, "loops");         /* ITEMS: ctaid*ntid + tid, stride nctaid*ntid */
  ck_assert_ptr_nonnull(strstr(f, "%ntid.x"));
  ck_assert_ptr_nonnull(strstr(f, "%tid.x"));
  ck_assert_ptr_nonnull(strstr(f, "%nctaid.x"));
  ck_assert_ptr_nonnull(strstr(f, "st.global.u64"));
  free(f);

  f = ptx_function(ptx, "float_ops_f32");
  ck_assert_ptr_nonnull(strstr(f, "min.NaN.f32"));     /* NaN-propagating min/max */
  ck_assert_ptr_nonnull(strstr(f, "max.NaN.f32"));
  ck_assert_ptr_nonnull(strstr(f, "sqrt.rn.f32"));
  ck_assert_ptr_nonnull(strstr(f, "div.rn.f32"));
  ck_assert_ptr_nonnull(strstr(f, "cvt.rmi.f32.f32"));  /* floor */
  ck_assert_ptr_nonnull(strstr(f, "cvt.rpi.f32.f32"));  /* ceil */
  ck_assert_ptr_nonnull(strstr(f, "ex2.approx"));       /* libdevice expf, inlined */
  ck_assert_ptr_nonnull(strstr(f, "0f7F800000"));       /* inf literal */
  ck_assert_ptr_null(strstr(f, "call"));                 /* all math inlined */
  free(f);

  f = ptx_function(ptx, "int_ops_i32");    /* division guarded: no trap, div.s32 present */
  ck_assert_ptr_nonnull(strstr(f, "div.s32"));
  ck_assert_ptr_nonnull(strstr(f, "selp.b32"));     /* the guards */
  /* i32 min as compare + select, never min.s32 (ptxas 13.0 folds min.s32 of negations into
   * VIMNMX3 and drops a negation: F29, docs/reliability.md) */
  ck_assert_ptr_nonnull(strstr(f, "setp.lt.s32"));
  ck_assert_ptr_null(strstr(f, "min.s32"));
  free(f);

  f = ptx_function(ptx, "casts");
  ck_assert_ptr_nonnull(strstr(f, "cvt.rzi.s32.f32"));
  ck_assert_ptr_nonnull(strstr(f, "cvt.rn.bf16.f32"));
  ck_assert_ptr_nonnull(strstr(f, "cvt.rn.f16.f64"));
  ck_assert_ptr_nonnull(strstr(f, "cvt.rn.bf16.f64"));
  ck_assert_ptr_nonnull(strstr(f, "cvt.rn.bf16.s32"));  /* sm_90: int -> bf16 in one rounding */
  free(f);

  f = ptx_function(ptx, "pack2");           /* pack2: both conversions, exp2 from libdevice */
  ck_assert_ptr_nonnull(strstr(f, "cvt.rn.f16.f32"));
  ck_assert_ptr_nonnull(strstr(f, "cvt.rn.bf16.f32"));
  ck_assert_ptr_nonnull(strstr(f, "ex2.approx"));
  ck_assert_ptr_null(strstr(f, "call"));
  free(f);

  f = ptx_function(ptx, "vectors");
  ck_assert_ptr_nonnull(strstr(f, "ld.global.nc.v4.f32"));
  ck_assert_ptr_nonnull(strstr(f, "st.global.v4.f32"));
  ck_assert_ptr_nonnull(strstr(f, "ld.global.nc.v2.f64"));
  ck_assert_ptr_nonnull(strstr(f, "st.global.v2.f32"));
  free(f);
  free(ptx);
  free(ir);
  kir_module_free(m);
}
END_TEST

/* nvJitLink's log reaches the diagnostics for bad PTX (ptxas rejects it first, and
 * nvJitLink, the fallback, reports). */
START_TEST(test_jitlink_error) {
  gc_diags d;
  gc_diags_init(&d, "test", NULL, 0);
  void *cubin = (void *)1;
  size_t len = 1;
  const char *bad = ".version 7.8\n.target sm_90\n.address_size 64\n.visible .entry k() { bogus; }\n";
  ck_assert_int_eq(gc_ptx_to_cubin(bad, 90, &cubin, &len, tu_toolchain(), &d), -1);
  ck_assert_ptr_null(cubin);
  ck_assert_uint_eq(len, 0);
  ck_assert_int_eq(d.n_errors, 1);
  ck_assert_int_eq(d.status, GRAPHC_STATUS_COMPILE_ERROR);
  ck_assert_ptr_nonnull(strstr(d.items[0].msg, "nvJitLink"));
  ck_assert_ptr_nonnull(strstr(d.items[0].msg, "bogus"));  /* ptxas' message names the token */
  gc_diags_free(&d);

  gc_diags_init(&d, "test", NULL, 0);
  ck_assert_int_eq(gc_ptx_to_cubin("this is not ptx", 90, &cubin, &len, tu_toolchain(), &d), -1);
  ck_assert_int_eq(d.n_errors, 1);
  ck_assert_ptr_nonnull(strstr(d.items[0].msg, "nvJitLink"));
  gc_diags_free(&d);
}
END_TEST

/* kir_kernel.min_blocks reaches both printers: .minnctapersm in the PTX, the second
 * __launch_bounds__ argument in the CUDA C; 0 emits neither. */
START_TEST(test_min_blocks) {
  kir_module *m = kir_module_new();
  k_loops(m);
  char *ptx = ptx_of(m, 90, NULL);
  ck_assert_ptr_null(strstr(ptx, ".minnctapersm"));
  free(ptx);
  gc_sbuf c0 = {0};
  gc_cuda_c_print(&c0, m);
  char want[96];
  snprintf(want, sizeof want, "__launch_bounds__(%d) ", m->kernels[0]->launch.block);
  ck_assert_ptr_nonnull(strstr(c0.data, want));
  gc_sbuf_free(&c0);
  m->kernels[0]->min_blocks = 1;
  ptx = ptx_of(m, 90, NULL);
  ck_assert_ptr_nonnull(strstr(ptx, ".minnctapersm 1"));
  check_ptxas(ptx, 90);
  free(ptx);
  gc_sbuf c1 = {0};
  gc_cuda_c_print(&c1, m);
  snprintf(want, sizeof want, "__launch_bounds__(%d, 1) ", m->kernels[0]->launch.block);
  ck_assert_ptr_nonnull(strstr(c1.data, want));
  gc_sbuf_free(&c1);
  kir_module_free(m);
}
END_TEST

/* kir_kernel.one_pass: one block per group, so neither printer loops over groups
 * (no nctaid / gridDim), and the kernel still exits past the last group. */
START_TEST(test_one_pass) {
  kir_module *m = kir_module_new();
  k_rowsum(m);
  char *ptx = ptx_of(m, 90, NULL);
  ck_assert_ptr_nonnull(strstr(ptx, "%nctaid.x"));
  free(ptx);
  m->kernels[0]->one_pass = 1;
  ptx = ptx_of(m, 90, NULL);
  ck_assert_ptr_null(strstr(ptx, "%nctaid.x"));
  ck_assert_ptr_nonnull(strstr(ptx, "%ctaid.x"));
  check_ptxas(ptx, 90);
  free(ptx);
  gc_sbuf c = {0};
  gc_cuda_c_print(&c, m);
  ck_assert_ptr_null(strstr(c.data, "gridDim"));
  ck_assert_ptr_nonnull(strstr(c.data, "= (long long)blockIdx.x;\n  if (v_"));
  ck_assert_ptr_nonnull(strstr(c.data, " < 300LL) {"));
  gc_sbuf_free(&c);
  gc_sbuf k = {0};
  kir_print(&k, m->kernels[0]);
  ck_assert_ptr_nonnull(strstr(k.data, "\n  one_pass\n"));
  gc_sbuf_free(&k);
  kir_module_free(m);
}
END_TEST

/* ITEMS kernel summing 4 inputs per item in a loop, kept a loop when nounroll:
 * out[i] = sum_{j < 4} in[4i + j]. */
static void k_sum4(kir_module *m, int nounroll) {
  kir_kernel *k = kir_kernel_new(m, "sum4", (kir_launch){KIR_LAUNCH_ITEMS, 1000, 128});
  int in = buf(m, k, "in", DT(F32), 1), out = buf(m, k, "out", DT(F32), 0);
  int s = kir_add_var(m, k, "s", DT(F32)), j = kir_add_var(m, k, "j", DT(I64));
  kir_emit_assign(m, &k->body, s, kir_const_f(m, DT(F32), 0.0));
  kir_block *lb = (nounroll ? kir_emit_for_nounroll : kir_emit_for)(m, &k->body, j, ci(m, 0), ci(m, 4), ci(m, 1));
  kir_expr *at4 = kir_binary(m, KIR_ADD, kir_binary(m, KIR_MUL, item(m, k), ci(m, 4)), kir_var_ref(m, k, j));
  kir_emit_assign(m, lb, s, kir_binary(m, KIR_ADD, kir_var_ref(m, k, s), kir_load(m, k, KIR_GLOBAL, in, at4)));
  kir_emit_store(m, &k->body, KIR_GLOBAL, out, item(m, k), kir_var_ref(m, k, s));
}

/* kir_emit_for_nounroll: LLVM keeps the loop and NVPTX marks it .pragma "nounroll" (O3
 * unrolls the same loop without the flag), CUDA C says #pragma unroll 1, the KIR prints it. */
START_TEST(test_nounroll) {
  for (int nu = 0; nu < 2; nu++) {
    kir_module *m = kir_module_new();
    k_sum4(m, nu);
    char *ptx = ptx_of(m, 90, NULL);
    ck_assert_msg((strstr(ptx, ".pragma \"nounroll\"") != NULL) == nu, "nounroll %d:\n%s", nu, ptx);
    int loads = 0;
    for (const char *p = ptx; (p = strstr(p, "ld.global")); p++) loads++;
    ck_assert_int_eq(loads, nu ? 1 : 4);  /* one load in the loop, four unrolled */
    check_ptxas(ptx, 90);
    free(ptx);
    gc_sbuf c = {0}, k = {0};
    gc_cuda_c_print(&c, m);
    ck_assert((strstr(c.data, "#pragma unroll 1\n") != NULL) == nu);
    kir_print(&k, m->kernels[0]);
    ck_assert((strstr(k.data, " step 1:i64 nounroll {") != NULL) == nu);
    gc_sbuf_free(&c);
    gc_sbuf_free(&k);
    kir_module_free(m);
  }
}
END_TEST

/* Files left in directory dir (not . or ..). */
static int dir_entries(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "ls -A %s | wc -l", dir);
  char *out = NULL;
  ck_assert_int_eq(tu_run_cmd(cmd, &out), 0);
  int n = atoi(out ? out : "-1");
  free(out);
  return n;
}

/* PTX -> cubin through the ptxas program when there is one (codegen/ptxas.c), else
 * nvJitLink: GRAPHC_PTXAS picks or disables it, a missing or failing ptxas falls back,
 * the output is reproducible, and no temporary file stays behind. */
START_TEST(test_ptxas_program) {
  char tmp[512];
  snprintf(tmp, sizeof tmp, "%s/ptxas-tmp", tu_tmpdir());
  char cmd[1100];
  snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", tmp, tmp);
  ck_assert_int_eq(system(cmd), 0);
  setenv("TMPDIR", tmp, 1);  /* forked test: local */
  kir_module *m = kir_module_new();
  k_loops(m);
  k_float_ops(m);
  char *ptx = ptx_of(m, 90, NULL);
  char path[4096];
  ck_assert_int_eq(gc_ptxas_find(tu_toolchain(), path, sizeof path), 1);  /* the toolkit's, as the build found it */
  /* id: the compiler the cache key names (a ptxas that fails is still the one found) */
  const struct { const char *env, *via, *id; } cases[] = {
      {NULL, "ptxas", "ptxas"}, {GRAPHC_PTXAS, "ptxas", "ptxas"}, {"off", "nvjitlink", "nvjitlink"},
      {"0", "nvjitlink", "nvjitlink"}, {"/nonexistent/ptxas", "nvjitlink", "nvjitlink"},
      {"/bin/false", "nvjitlink", "ptxas /bin/false"}, {"/tmp", "nvjitlink", "nvjitlink"}};  /* a directory */
  void *first = NULL;
  size_t first_len = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (cases[i].env) setenv("GRAPHC_PTXAS", cases[i].env, 1);
    else unsetenv("GRAPHC_PTXAS");
    gc_diags d;
    gc_diags_init(&d, "test", NULL, 0);
    void *cubin = NULL;
    size_t len = 0;
    const char *via = NULL;
    ck_assert_int_eq(gc_ptx_to_cubin_ex(ptx, 90, &cubin, &len, &via, tu_toolchain(), &d), 0);
    ck_assert_int_eq(d.n_errors, 0);
    ck_assert_msg(via && strcmp(via, cases[i].via) == 0, "GRAPHC_PTXAS=%s: via %s, want %s",
                  cases[i].env ? cases[i].env : "(unset)", via ? via : "?", cases[i].via);
    ck_assert_int_eq(memcmp(cubin, "\177ELF", 4), 0);
    char id[4200];
    gc_ptx_compiler_id(tu_toolchain(), id, sizeof id);
    ck_assert_msg(strncmp(id, cases[i].id, strlen(cases[i].id)) == 0, "compiler id %s", id);
    if (!first) {
      first = cubin, first_len = len;
    } else {
      if (strcmp(cases[i].via, "ptxas") == 0)  /* same program, same options: same bytes */
        ck_assert(len == first_len && memcmp(cubin, first, len) == 0);
      free(cubin);
    }
    gc_diags_free(&d);
    ck_assert_int_eq(dir_entries(tmp), 0);
  }
  /* ptxas' own message for bad PTX */
  gc_diags d;
  gc_diags_init(&d, "test", NULL, 0);
  void *cubin = (void *)1;
  size_t len = 1;
  const char *bad = ".version 7.8\n.target sm_90\n.address_size 64\n.visible .entry k() { bogus; }\n";
  ck_assert_int_eq(gc_ptxas_compile(path, bad, 90, 0, 2, &cubin, &len, tu_toolchain(), &d), -1);
  ck_assert_ptr_null(cubin);
  ck_assert_int_eq(d.n_errors, 1);
  ck_assert_int_eq(d.status, GRAPHC_STATUS_COMPILE_ERROR);
  ck_assert_ptr_nonnull(strstr(d.items[0].msg, "ptxas"));
  ck_assert_ptr_nonnull(strstr(d.items[0].msg, "bogus"));
  gc_diags_free(&d);
  gc_diags_init(&d, "test", NULL, 0);
  ck_assert_int_eq(gc_ptxas_compile("/nonexistent/ptxas", ptx, 90, 0, 2, &cubin, &len, tu_toolchain(), &d), -1);
  ck_assert_ptr_nonnull(strstr(d.items[0].msg, "/nonexistent/ptxas"));
  gc_diags_free(&d);
  ck_assert_int_eq(dir_entries(tmp), 0);
  unsetenv("GRAPHC_PTXAS");
  free(first);
  free(ptx);
  kir_module_free(m);
}
END_TEST

/* Unsupported sm and a missing libdevice are reported, not fatal. */
START_TEST(test_llvm_errors) {
  kir_module *m = kir_module_new();
  k_float_ops(m);
  gc_diags d;
  gc_diags_init(&d, "test", NULL, 0);
  char *ptx = (char *)1;
  ck_assert_int_eq(gc_llvm_ptx(m, 30, &ptx, NULL, tu_toolchain(), &d), -1);
  ck_assert_ptr_null(ptx);
  ck_assert_int_eq(d.status, GRAPHC_STATUS_COMPILE_ERROR);
  ck_assert_ptr_nonnull(strstr(d.items[0].msg, "sm_30"));
  gc_diags_free(&d);

  setenv("GRAPHC_LIBDEVICE", "/nonexistent/libdevice.10.bc", 1);  /* forked test: local */
  gc_diags_init(&d, "test", NULL, 0);
  ck_assert_int_eq(gc_llvm_ptx(m, 90, &ptx, NULL, tu_toolchain(), &d), -1);
  ck_assert_int_eq(d.status, GRAPHC_STATUS_COMPILE_ERROR);
  ck_assert_ptr_nonnull(strstr(d.items[0].msg, "libdevice"));
  ck_assert_ptr_nonnull(strstr(d.items[0].msg, "/nonexistent/libdevice.10.bc"));
  gc_diags_free(&d);

  /* a kernel named like a math function would capture the calls */
  kir_module *m3 = kir_module_new();
  kir_kernel *k = kir_kernel_new(m3, "expf", (kir_launch){KIR_LAUNCH_ITEMS, 10, 32});
  int o = buf(m3, k, "o", DT(F32), 0);
  kir_emit_store(m3, &k->body, KIR_GLOBAL, o, item(m3, k),
                 kir_unary(m3, KIR_EXP, kir_const_f(m3, DT(F32), 1.0)));
  gc_diags_init(&d, "test", NULL, 0);
  ck_assert_int_eq(gc_llvm_ptx(m3, 90, &ptx, NULL, tu_toolchain(), &d), -1);
  ck_assert_ptr_nonnull(strstr(d.items[0].msg, "kernel name expf clashes"));
  gc_diags_free(&d);
  kir_module_free(m3);
  m3 = kir_module_new();
  k = kir_kernel_new(m3, "exp2f", (kir_launch){KIR_LAUNCH_ITEMS, 10, 32});
  o = buf(m3, k, "o", DT(F32), 0);
  kir_emit_store(m3, &k->body, KIR_GLOBAL, o, item(m3, k),
                 kir_unary(m3, KIR_EXP2, kir_const_f(m3, DT(F32), 1.0)));
  gc_diags_init(&d, "test", NULL, 0);
  ck_assert_int_eq(gc_llvm_ptx(m3, 90, &ptx, NULL, tu_toolchain(), &d), -1);
  ck_assert_ptr_nonnull(strstr(d.items[0].msg, "kernel name exp2f clashes"));
  gc_diags_free(&d);
  kir_module_free(m3);

  /* a kernel without math needs no libdevice */
  kir_module *m2 = kir_module_new();
  k_loops(m2);
  gc_diags_init(&d, "test", NULL, 0);
  ck_assert_int_eq(gc_llvm_ptx(m2, 90, &ptx, NULL, tu_toolchain(), &d), 0);
  free(ptx);
  gc_diags_free(&d);
  unsetenv("GRAPHC_LIBDEVICE");
  kir_module_free(m2);
  kir_module_free(m);
}
END_TEST

/* The same emitter targets the host: libm calls (f64), no NVVM intrinsics, args ABI. */
START_TEST(test_host_ir) {
  kir_module *m = kir_module_new();
  k_float_ops(m);
  k_casts(m);
  k_vectors(m);
  k_loops(m);
  k_pack2(m, 10);
  gc_diags d;
  gc_diags_init(&d, "test", NULL, 0);
  for (int opt = 0; opt < 2; opt++) {
    char *ir = NULL;
    int rc = gc_llvm_host_ir(m, opt, &ir, &d);
    if (rc) {
      char *msg = gc_diags_render(&d);
      fprintf(stderr, "%s\n", msg);
      free(msg);
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_ptr_nonnull(strstr(ir, "define void @loops(ptr"));
    /* f32 exp / exp2 inline (llvm_hostmath.c: loops vectorize), f64 through libm */
    ck_assert_ptr_null(strstr(ir, "@expf("));
    ck_assert_ptr_null(strstr(ir, "@exp2f("));
    ck_assert_ptr_nonnull(strstr(ir, "@erf("));
    ck_assert_ptr_nonnull(strstr(ir, "@exp2("));
    ck_assert_ptr_null(strstr(ir, "nvvm"));
    ck_assert_ptr_null(strstr(ir, "__nv_"));
    free(ir);
  }
  gc_diags_free(&d);
  kir_module_free(m);

  /* a scratch array is a 64-byte aligned alloca per call */
  m = kir_module_new();
  kir_kernel *k = kir_kernel_new(m, "scratch_k", (kir_launch){KIR_LAUNCH_ITEMS, 100, 1});
  int y = kir_add_param(m, k, "y", KIR_PARAM_BUFFER, DT(F32), 0, 0);
  int sc = kir_add_scratch(m, k, DT(F32), 64);
  kir_emit_store(m, &k->body, KIR_SCRATCH, sc, kir_const_i(m, DT(I64), 5), kir_const_f(m, DT(F32), 2.0));
  kir_emit_store(m, &k->body, KIR_GLOBAL, y, item(m, k),
                 kir_load(m, k, KIR_SCRATCH, sc, kir_const_i(m, DT(I64), 5)));
  gc_diags_init(&d, "test", NULL, 0);
  char *sir = NULL;
  ck_assert_int_eq(gc_llvm_host_ir(m, 0, &sir, &d), 0);
  ck_assert_ptr_nonnull(strstr(sir, "alloca [64 x float], align 64"));
  free(sir);
  gc_diags_free(&d);
  kir_module_free(m);

  /* BLOCKS launches with more than one thread cannot run on the host */
  m = kir_module_new();
  k_rowsum(m);
  gc_diags_init(&d, "test", NULL, 0);
  char *ir = (char *)1;
  ck_assert_int_eq(gc_llvm_host_ir(m, 0, &ir, &d), -1);
  ck_assert_ptr_null(ir);
  ck_assert_ptr_nonnull(strstr(d.items[0].msg, "rowsum"));
  gc_diags_free(&d);
  kir_module_free(m);
}
END_TEST

/* ITEMS kernel `name`: <pre>_out[i] = tanh(<pre>_in[i]) * factor (libdevice). */
static void k_scale(kir_module *m, const char *name, const char *pre, double factor) {
  kir_kernel *k = kir_kernel_new(m, name, (kir_launch){KIR_LAUNCH_ITEMS, 1000, 256});
  char in_name[32], out_name[32];
  snprintf(in_name, sizeof in_name, "%s_in", pre);
  snprintf(out_name, sizeof out_name, "%s_out", pre);
  int in = kir_add_param(m, k, in_name, KIR_PARAM_BUFFER, DT(F32), 1, k->n_params);
  int out = kir_add_param(m, k, out_name, KIR_PARAM_BUFFER, DT(F32), 0, k->n_params);
  int v = kir_add_var(m, k, pre, DT(F32));
  kir_emit_assign(m, &k->body, v, kir_unary(m, KIR_TANH, ld(m, k, in)));
  kir_emit_store(m, &k->body, KIR_GLOBAL, out, item(m, k),
                 kir_binary(m, KIR_MUL, kir_var_ref(m, k, v), kir_const_f(m, DT(F32), factor)));
}

/* gc_llvm_ptx_ex: the same PTX on 1 and 4 threads and on every call; every
 * kernel present without dedup; with dedup an identical kernel (other names)
 * is compiled once and named by an alias line, a different one is not. */
START_TEST(test_parallel_dedup) {
  kir_module *m = build_all();
  gc_diags d;
  gc_diags_init(&d, "test", NULL, 0);
  char *p1 = NULL, *p4 = NULL, *again = NULL;
  gc_llvm_ptx_opts one = {1, 0}, four = {4, 0};
  gc_llvm_times t;
  ck_assert_int_eq(gc_llvm_ptx_ex(m, 90, &one, &p1, &t, tu_toolchain(), &d), 0);
  ck_assert_int_eq(t.threads, 1);
  ck_assert_int_eq(gc_llvm_ptx_ex(m, 90, &four, &p4, &t, tu_toolchain(), &d), 0);
  ck_assert_int_eq(t.threads, 4);
  ck_assert_int_eq(t.compiled, m->n_kernels);
  ck_assert(t.optimize > 0 && t.codegen > 0 && t.wall > 0);
  ck_assert_int_eq(gc_llvm_ptx_ex(m, 90, &four, &again, NULL, tu_toolchain(), &d), 0);
  same_text("ptx (threads)", p1, p4);
  same_text("ptx (threads)", p4, again);
  for (int k = 0; k < m->n_kernels; k++) free(ptx_function(p4, m->kernels[k]->name));
  ck_assert_ptr_null(strstr(p4, ".extern"));
  check_ptxas(p4, 90);
  check_cubin(p4, 90);
  free(p1), free(p4), free(again);
  kir_module_free(m);

  m = kir_module_new();
  k_scale(m, "scale_a", "a", 2.0);
  k_scale(m, "scale_b", "bee", 2.0);   /* the same code under other names */
  k_scale(m, "scale_c", "c", 3.0);     /* different */
  k_scale(m, "scale_d", "dd", 2.0);
  gc_llvm_ptx_opts dd = {2, 1};
  char *p = NULL;
  ck_assert_int_eq(gc_llvm_ptx_ex(m, 90, &dd, &p, &t, tu_toolchain(), &d), 0);
  ck_assert_int_eq(d.n_errors, 0);
  ck_assert_int_eq(t.kernels, 4);
  ck_assert_int_eq(t.compiled, 2);
  free(ptx_function(p, "scale_a"));
  free(ptx_function(p, "scale_c"));
  ck_assert_ptr_null(strstr(p, ".entry scale_b("));
  ck_assert_ptr_null(strstr(p, ".entry scale_d("));
  ck_assert_ptr_nonnull(strstr(p, "\n// graphc alias scale_b = scale_a\n"));
  char buf[64];
  ck_assert_str_eq(gc_ptx_kernel_alias(p, "scale_b", buf, sizeof buf), "scale_a");
  ck_assert_str_eq(gc_ptx_kernel_alias(p, "scale_d", buf, sizeof buf), "scale_a");
  ck_assert_str_eq(gc_ptx_kernel_alias(p, "scale_c", buf, sizeof buf), "scale_c");
  ck_assert_str_eq(gc_ptx_kernel_alias(p, "scale_a", buf, sizeof buf), "scale_a");
  ck_assert_str_eq(gc_ptx_kernel_alias(NULL, "x", buf, sizeof buf), "x");
  check_ptxas(p, 90);
  check_cubin(p, 90);
  char *q = NULL;
  ck_assert_int_eq(gc_llvm_ptx_ex(m, 90, &dd, &q, NULL, tu_toolchain(), &d), 0);
  same_text("ptx (dedup)", p, q);
  free(p), free(q);
  gc_diags_free(&d);
  kir_module_free(m);
}
END_TEST

/* pack2 and exp2 run through the host JIT: known bit patterns (ties to even, overflow,
 * subnormal, inf, -0, NaN), then random values against the interpreter's conversions. */
START_TEST(test_host_pack2) {
  enum { N = 64, NK = 6 };
  /* lo, hi, want f16x2, want bf16x2 (NaN halves: any NaN) */
  static const struct { float lo, hi; uint32_t h, b; } known[NK] = {
      {1.0f, -2.5f, 0xc1003c00u, 0xc0203f80u},
      {65520.0f, 1.00048828125f, 0x3c007c00u, 0x3f804780u},         /* f16 inf; ties to even */
      {1.00146484375f, 1.00390625f, 0x3c043c02u, 0x3f803f80u},     /* f16 tie up; bf16 tie down */
      {1.01171875f, INFINITY, 0x7c003c0cu, 0x7f803f82u},           /* bf16 tie up */
      {-INFINITY, -0.0f, 0x8000fc00u, 0x8000ff80u},
      {5.9604645e-8f, NAN, 0x00000001u, 0x00003380u},              /* 2^-24: f16 subnormal */
  };
  float x[N], y[N], e2[N];
  int32_t out[2 * N];
  uint32_t r = 12345;
  for (int i = 0; i < N; i++) {
    if (i < NK) {
      x[i] = known[i].lo;
      y[i] = known[i].hi;
      continue;
    }
    float v[2];
    for (int j = 0; j < 2; j++) {
      r = r * 1664525u + 1013904223u;
      float mant = 1.0f + (float)(r >> 9) / 8388608.0f;
      r = r * 1664525u + 1013904223u;
      v[j] = ldexpf(mant, (int)(r >> 27) % 51 - 30) * ((r >> 8) & 1 ? -1.0f : 1.0f);
    }
    x[i] = v[0];
    y[i] = v[1];
  }
  kir_module *m = kir_module_new();
  k_pack2(m, N);
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  gc_cpu_jit *j = gc_cpu_jit_compile(m, NULL, NULL, &d);
  ck_assert_msg(j != NULL, "%s", d.n ? d.items[0].msg : "?");
  void *args[4] = {x, y, out, e2};
  gc_cpu_jit_kernel(j, 0)(args, 0, N);
  for (int i = 0; i < NK; i++) {
    uint32_t h = (uint32_t)out[2 * i], b = (uint32_t)out[2 * i + 1];
    if (isnan(known[i].hi)) {  /* a NaN half: exponent all ones, fraction nonzero */
      ck_assert_uint_eq(h & 0xffffu, known[i].h);
      ck_assert_uint_eq(b & 0xffffu, known[i].b);
      ck_assert((h >> 16 & 0x7c00u) == 0x7c00u && (h >> 16 & 0x03ffu) != 0);
      ck_assert((b >> 16 & 0x7f80u) == 0x7f80u && (b >> 16 & 0x007fu) != 0);
    } else {
      ck_assert_msg(h == known[i].h, "f16 item %d: 0x%08x want 0x%08x", i, h, known[i].h);
      ck_assert_msg(b == known[i].b, "bf16 item %d: 0x%08x want 0x%08x", i, b, known[i].b);
    }
  }
  for (int i = NK; i < N; i++) {
    uint32_t h = (uint32_t)gc_f64_to_f16(x[i]) | (uint32_t)gc_f64_to_f16(y[i]) << 16;
    uint32_t b = (uint32_t)gc_f64_to_bf16(x[i]) | (uint32_t)gc_f64_to_bf16(y[i]) << 16;
    ck_assert_msg((uint32_t)out[2 * i] == h, "f16 (%.9g, %.9g): 0x%08x want 0x%08x", x[i], y[i], out[2 * i], h);
    ck_assert_msg((uint32_t)out[2 * i + 1] == b, "bf16 (%.9g, %.9g): 0x%08x want 0x%08x", x[i], y[i],
                  out[2 * i + 1], b);
  }
  for (int i = 0; i < N; i++) {
    float want = exp2f(x[i]);
    ck_assert_msg(e2[i] == want || (isnan(e2[i]) && isnan(want)) || fabsf(e2[i] - want) <= 2e-7f * fabsf(want),
                  "exp2(%.9g) = %.9g, want %.9g", x[i], e2[i], want);
  }
  ck_assert(e2[0] == 2.0f && isinf(e2[1]) && e2[4] == 0.0f);  /* 2^1, 2^65520, 2^-inf */
  gc_cpu_jit_free(j);
  gc_diags_free(&d);
  kir_module_free(m);
}
END_TEST

/* Suite: everything above. */
static Suite *llvm_suite(void) {
  Suite *s = suite_create("llvm");
  TCase *tc = tcase_create("nvptx");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_ptx_assembles);
  tcase_add_test(tc, test_newer_sm);
  tcase_add_test(tc, test_deterministic);
  tcase_add_test(tc, test_parallel_dedup);
  tcase_add_test(tc, test_ptx_content);
  tcase_add_test(tc, test_jitlink_error);
  tcase_add_test(tc, test_ptxas_program);
  tcase_add_test(tc, test_min_blocks);
  tcase_add_test(tc, test_one_pass);
  tcase_add_test(tc, test_nounroll);
  tcase_add_test(tc, test_llvm_errors);
  tcase_add_test(tc, test_host_ir);
  tcase_add_test(tc, test_host_pack2);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return tu_run_suite(llvm_suite()); }
