/* test_aot_host.c - `graphc compile --target host --emit c`: host code ahead of time.
 *
 * Runs without a GPU. examples/aot_host_mlp is built with its Makefile against
 * the build tree (the tool compiles examples/mlp.graph to mlp.h + mlp.o, the
 * system C compiler links a program with libgraphc_rt), run, and its output is
 * compared with the interpreter's (graphc API) within f32 tolerance. ldd and
 * nm check that neither the program nor the object needs LLVM or libgraphc.
 * With --precision f16 the object embeds f16 weights (smaller) and the program
 * matches the interpreter at f16. Two models compiled under two names link into
 * one program (their kernel symbols carry the name); a model without embedded
 * weights reports the missing weight; the CLI rejects bad --target / --cpu
 * combinations.
 */
#include <sys/stat.h>
#include <unistd.h>

#include "graphc/graphc_rt.h"
#include "testutil.h"
#include "cuda_testutil.h"


/* The interpreter's output of examples/mlp.graph (batch B, weights w) on the
 * examples' input x[i] = ((37 i) mod 101 - 50) / 50; ref has B*10 floats. */
static void interp_mlp(int B, const char *w, graphc_precision_t p, float *ref) {
  graphc_context_t *ctx;
  graphc_model_t *m;
  graphc_executable_t *exe;
  graphc_error_t err;
  ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_load_file(ctx, tu_src("examples/mlp.graph"), &m, &err), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_bind(m, "B", B, &err), GRAPHC_STATUS_OK);
  if (w) ck_assert_int_eq(graphc_model_set_weights(m, w, &err), GRAPHC_STATUS_OK);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_INTERP;
  o.precision = p;
  ck_assert_msg(graphc_compile(m, &o, &exe, &err) == GRAPHC_STATUS_OK, "%s", err.message);
  float *x = malloc((size_t)B * 784 * sizeof *x);
  ck_assert_ptr_nonnull(x);
  for (int i = 0; i < B * 784; i++) x[i] = (float)((i * 37) % 101 - 50) / 50.0f;
  graphc_tensor_t in = {GRAPHC_DTYPE_F32, 2, {B, 784}, x, (size_t)B * 784 * sizeof *x};
  graphc_tensor_t out = {GRAPHC_DTYPE_F32, 2, {B, 10}, ref, (size_t)B * 10 * sizeof *ref};
  ck_assert_int_eq(graphc_executable_run(exe, &in, 1, &out, 1, &err), GRAPHC_STATUS_OK);
  free(x);
  graphc_executable_destroy(exe);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
}

/* Compare a y.bin of B*10 floats with the interpreter's output at precision p (f32:
 * f32's tolerance; f16: four times f16's, a whole model as in test_precision). */
static void check_against_interp(const char *y_path, int B, const char *w, graphc_precision_t p) {
  float *ref = calloc((size_t)B * 10, sizeof *ref);
  ck_assert_ptr_nonnull(ref);
  interp_mlp(B, w, p, ref);
  size_t len = 0;
  char *got = tu_read_file(y_path, &len);
  ck_assert_msg(got && len == (size_t)B * 10 * sizeof(float), "%s has %zu bytes", y_path, len);
  double atol, rtol;
  int k = p == GRAPHC_PRECISION_F32 ? 1 : 4;
  tu_tolerance(p == GRAPHC_PRECISION_F32 ? GRAPHC_DTYPE_F32 : GRAPHC_DTYPE_F16, 1, &atol, &rtol);
  tu_cmp c = tu_compare(ref, got, GRAPHC_DTYPE_F32, (int64_t)B * 10, k * atol, k * rtol);
  ck_assert_msg(c.n_bad == 0, "%s differs from the interpreter at %lld: ref %.9g got %.9g", y_path,
                (long long)c.first_bad, c.ref_bad, c.got_bad);
  free(got);
  free(ref);
}

/* Build examples/aot_host_mlp into dir with its Makefile (FLAGS: more compile options). */
static void make_example(const char *dir, const char *flags) {
  char *out = NULL;
  int rc = tu_sh(&out, "make -s -f '%s/examples/aot_host_mlp/Makefile' GRAPHC='%s' OUT='%s' BATCH=64 "
                    "CC='cc%s' RT_CFLAGS='-I%s/include' RT_LIBS='-L%s -Wl,-rpath,%s -lgraphc_rt' FLAGS='%s'",
              GRAPHC_SOURCE_DIR, GRAPHC_CLI, dir, TU_SAN_FLAGS, GRAPHC_SOURCE_DIR, GRAPHC_BINARY_DIR,
              GRAPHC_BINARY_DIR, flags);
  ck_assert_msg(rc == 0, "make:\n%s", out);
  free(out);
}

/* examples/aot_host_mlp built with its Makefile, run, compared, and checked
 * for its dependencies. */
START_TEST(example_builds_runs_and_matches_interp) {
  const char *dir = tu_fresh_dir("aothost");
  char *out = NULL;
  int rc;
  make_example(dir, "");
  char y_path[700], w_path[700];
  snprintf(y_path, sizeof y_path, "%s/y.bin", dir);
  snprintf(w_path, sizeof w_path, "%s/mlp.safetensors", dir);
  for (int threads = 1; threads <= 3; threads += 2) {  /* inline, and over a pool */
    rc = tu_sh(&out, "GRAPHC_CPU_THREADS=%d '%s/aot_host_mlp' '%s'", threads, dir, y_path);
    ck_assert_msg(rc == 0, "aot_host_mlp (%d):\n%s", rc, out);
    ck_assert_msg(strstr(out, "code: host ") && strstr(out, "linked into the program"), "%s", out);
    printf("%s", out);
    free(out);
    check_against_interp(y_path, 64, w_path, GRAPHC_PRECISION_F32);
  }

  /* The program needs libgraphc_rt and libc only: no LLVM, no libgraphc. */
  rc = tu_sh(&out, "ldd '%s/aot_host_mlp'", dir);
  ck_assert_msg(rc == 0 && strstr(out, "libgraphc_rt.so"), "ldd:\n%s", out);
  ck_assert_msg(!strstr(out, "LLVM") && !strstr(out, "libgraphc.so") && !strstr(out, "nvrtc"),
                "the program depends on more than libgraphc_rt:\n%s", out);
  ck_assert_msg(TU_SAN_FLAGS[0] || !strstr(out, "libstdc++"),  /* libasan brings it under ASan */
                "the program needs C++ (LLVM?):\n%s", out);
  free(out);
  /* The object defines its entry points and hidden kernels, and needs only graphc_rt_* and libc. */
  rc = tu_sh(&out, "nm -u '%s/mlp.o' | awk '{print $2}' | grep -v -E "
                "'^(graphc_rt_[a-z_]+|_GLOBAL_OFFSET_TABLE_|calloc|free|memcpy|memset|[a-z0-9]+f?|"
                "__stack_chk_fail|__(a|ub)san_[a-z0-9_]+)$' "
                "|| true", dir);
  ck_assert_msg(rc == 0 && out[strspn(out, " \n")] == 0, "unexpected undefined symbols in mlp.o:\n%s", out);
  free(out);
  rc = tu_sh(&out, "readelf -sW '%s/mlp.o' | awk '$5 == \"GLOBAL\" && $7 != \"UND\" {print $6, $8}'", dir);
  ck_assert_msg(rc == 0 && strstr(out, "DEFAULT mlp_create") && strstr(out, "DEFAULT mlp_run") &&
                    strstr(out, "HIDDEN mlp__"),
                "symbols of mlp.o:\n%s", out);
  ck_assert_msg(!strstr(out, "LLVM") && !strstr(out, " gc_"), "symbols of mlp.o:\n%s", out);
  free(out);
}
END_TEST

/* The example with --precision f16: the object embeds the weights converted to f16
 * (about half the f32 object's 400 KB of weights), and the program matches the
 * interpreter at the same precision. */
START_TEST(example_precision_f16) {
  const char *d32 = tu_fresh_dir("aothost32"), *d16 = tu_fresh_dir("aothost16");
  make_example(d32, "");
  make_example(d16, "--precision f16");
  char o32[700], o16[700], y_path[700], w_path[700];
  snprintf(o32, sizeof o32, "%s/mlp.o", d32);
  snprintf(o16, sizeof o16, "%s/mlp.o", d16);
  snprintf(y_path, sizeof y_path, "%s/y.bin", d16);
  snprintf(w_path, sizeof w_path, "%s/mlp.safetensors", d16);
  struct stat s32, s16, sw;
  ck_assert(stat(o32, &s32) == 0 && stat(o16, &s16) == 0 && stat(w_path, &sw) == 0);
  ck_assert_msg(s16.st_size + sw.st_size / 2 - 16384 <= s32.st_size,
                "mlp.o: %lld bytes with --precision f16, %lld without, %lld bytes of f32 weights",
                (long long)s16.st_size, (long long)s32.st_size, (long long)sw.st_size);
  char *out = NULL;
  int rc = tu_sh(&out, "'%s/aot_host_mlp' '%s'", d16, y_path);
  ck_assert_msg(rc == 0, "aot_host_mlp --precision f16 (%d):\n%s", rc, out);
  free(out);
  check_against_interp(y_path, 64, w_path, GRAPHC_PRECISION_F16);
}
END_TEST

/* Compile dir/main.c into dir/EXE with the objects `objs` (a format whose every %s is
 * dir) and libgraphc_rt, warnings as errors. */
static void link_program(const char *dir, const char *exe, const char *objs) {
  char o[512];
  snprintf(o, sizeof o, objs, dir, dir);
  TU_SH_OK("cc%s -std=c17 -Wall -Wextra -Werror -I'%s' -I'%s/include' -o '%s/%s' '%s/main.c' %s "
           "-L'%s' -Wl,-rpath,'%s' -lgraphc_rt -lm",
           TU_SAN_FLAGS, dir, GRAPHC_SOURCE_DIR, dir, exe, dir, o, GRAPHC_BINARY_DIR, GRAPHC_BINARY_DIR);
}

/* Two models in one program, one without embedded weights. */
static const char *two_models_main =
    "#include <math.h>\n#include <stdio.h>\n#include \"mlp_a.h\"\n#include \"mlp_b.h\"\n"
    "int main(int argc, char **argv) {\n  if (argc < 2) return 2;\n"
    "  static float x[MLP_A_IN_X_NUMEL], ya[MLP_A_OUT_Y_NUMEL], yb[MLP_B_OUT_Y_NUMEL];\n"
    "  for (int i = 0; i < MLP_A_IN_X_NUMEL; i++) x[i] = (float)((i * 37) % 101 - 50) / 50.0f;\n"
    "  mlp_a_t *a = NULL; mlp_b_t *b = NULL; graphc_error_t err;\n"
    "  if (mlp_a_create(&a, &err) || mlp_b_create(&b, &err)) { puts(err.message); return 1; }\n"
    "  if (mlp_a_run(a, x, ya, &err)) { puts(err.message); return 1; }\n"
    "  graphc_status_t st = mlp_b_run(b, x, yb, &err);\n"
    "  printf(\"b without weights: %s: %s\\n\", graphc_status_string(st), err.message);\n"
    "  if (st != GRAPHC_STATUS_WEIGHTS_ERROR) return 1;\n"
    "  graphc_rt_bundle_t *rb = mlp_b_bundle(b);\n"
    "  for (size_t i = 0; i < graphc_rt_num_weights(rb); i++) {\n"
    "    graphc_tensor_info_t info; int emb = 1;\n"
    "    graphc_rt_weight_info(rb, i, &info, &emb);\n"
    "    if (emb) return 1;\n"
    "    /* the raw tensor bytes, written by the test as <dir>/<name>.bin */\n"
    "    static char buf[1 << 20]; char path[600];\n"
    "    snprintf(path, sizeof path, \"%s/%s.bin\", argv[1], info.name);\n"
    "    FILE *f = fopen(path, \"rb\"); if (!f) { perror(path); return 1; }\n"
    "    size_t n = fread(buf, 1, sizeof buf, f); fclose(f);\n"
    "    if (graphc_rt_set_weight(rb, info.name, buf, n, &err)) { puts(err.message); return 1; }\n"
    "  }\n"
    "  if (mlp_b_run(b, x, yb, &err)) { puts(err.message); return 1; }\n"
    "  int same = 1; /* a has no FMAs (x86-64-v2), b may: equal within f32 rounding */\n"
    "  for (int i = 0; i < MLP_A_OUT_Y_NUMEL; i++)\n"
    "    same &= fabsf(ya[i] - yb[i]) <= 1e-4f * (1.0f + fabsf(ya[i]));\n"
    "  printf(\"a and b agree: %d\\n\", same);\n"
    "  mlp_a_destroy(a); mlp_b_destroy(b);\n"
    "  return same ? 0 : 1;\n}\n";

START_TEST(two_models_one_program) {
  const char *dir = tu_fresh_dir("aothost2");
  /* weights of our own: a fresh clone has no examples/mlp.safetensors */
  char w[700];
  snprintf(w, sizeof w, "%s/mlp.safetensors", dir);
  TU_SH_OK("'%s' weights '%s' --random --seed 3 -o '%s'", GRAPHC_CLI, tu_src("examples/mlp.graph"), w);
  TU_SH_OK("'%s' compile '%s' --bind B=4 --weights '%s' --target host --cpu x86-64-v2 --embed-weights --emit c "
        "-o '%s/mlp_a'",
        GRAPHC_CLI, tu_src("examples/mlp.graph"), w, dir);
  TU_SH_OK("'%s' compile '%s' --bind B=4 --weights '%s' --target=host --emit c -o '%s/mlp_b.o'", GRAPHC_CLI,
        tu_src("examples/mlp.graph"), w, dir);
  /* The weights as raw files, for graphc_rt_set_weight. */
  tu_write_text(dir, "split.py",
             "import json, struct, sys\n"
             "b = open(sys.argv[1], 'rb').read(); n = struct.unpack('<Q', b[:8])[0]\n"
             "for k, v in json.loads(b[8:8 + n]).items():\n"
             "    if k == '__metadata__': continue\n"
             "    s, e = v['data_offsets']\n"
             "    open(sys.argv[2] + '/' + k + '.bin', 'wb').write(b[8 + n + s:8 + n + e])\n");
  TU_SH_OK("python3 '%s/split.py' '%s' '%s'", dir, w, dir);
  tu_write_text(dir, "main.c", two_models_main);
  link_program(dir, "two", "'%s/mlp_a.o' '%s/mlp_b.o'");
  char *out = NULL;
  int rc = tu_sh(&out, "'%s/two' '%s'", dir, dir);
  ck_assert_msg(rc == 0, "two models (%d):\n%s", rc, out);
  ck_assert_msg(strstr(out, "b without weights: weights error") && strstr(out, "graphc_rt_set_weight") &&
                    strstr(out, "a and b agree: 1"),
                "%s", out);
  free(out);
}
END_TEST

/* bf16 operations that LLVM narrows from f32 (floor, abs, minimum of widened bf16
 * values): on an x86 CPU without AVX512-BF16 the backend rounds them back by calling
 * __truncsfbf2, which the object must define itself (libgcc 12 has none). */
static const char *bf16_main =
    "#include <math.h>\n#include <stdio.h>\n#include <string.h>\n#include \"bfh.h\"\n"
    "static uint16_t bf(float f) { uint32_t u; memcpy(&u, &f, 4); return (uint16_t)(u >> 16); }\n"
    "static float fl(uint16_t b) { uint32_t u = (uint32_t)b << 16; float f; memcpy(&f, &u, 4); return f; }\n"
    "int main(void) {\n"
    "  static const float xs[8] = {-2.5f, -1.25f, -0.5f, 0.375f, 1.75f, 2.5f, 3.875f, -3.125f};\n"
    "  uint16_t x[8], z[1] = {bf(2.0f)}, y[8];\n"
    "  for (int i = 0; i < 8; i++) x[i] = bf(xs[i]);\n"
    "  bfh_t *m = NULL; graphc_error_t err;\n"
    "  if (bfh_create(&m, &err) || bfh_run(m, x, z, y, &err)) { puts(err.message); return 1; }\n"
    "  for (int i = 0; i < 8; i++)\n"
    "    if (fl(y[i]) != fminf(fabsf(floorf(xs[i])), 2.0f)) { printf(\"y[%d] = %g\\n\", i, fl(y[i])); return 1; }\n"
    "  bfh_destroy(m);\n  puts(\"bf16 ok\");\n  return 0;\n}\n";

START_TEST(bf16_narrowed_ops_link) {
  const char *dir = tu_fresh_dir("aothostbf16");
  tu_write_text(dir, "bfh.graph",
                "version 1;\n"
                "graph @g(%x: bf16[8], %z: bf16[1]) -> (bf16[8]) {\n"
                "  %f = floor(%x);\n  %a = abs(%f);\n  %m = minimum(%a, %z);\n  return %m;\n}\n");
  /* x86-64-v2: no AVX512-BF16 on any machine, so the backend calls __truncsfbf2 even on
   * CPUs that convert natively (the GPU machine's Sapphire Rapids) */
  TU_SH_OK("'%s' compile '%s/bfh.graph' --target host --cpu x86-64-v2 --emit c -o '%s/bfh'", GRAPHC_CLI, dir, dir);
  tu_write_text(dir, "main.c", bf16_main);
  link_program(dir, "bf", "'%s/bfh.o'");
  char *out = NULL;
  int rc = tu_sh(&out, "'%s/bf'", dir);
  ck_assert_msg(rc == 0 && strstr(out, "bf16 ok"), "bf16 program (%d):\n%s", rc, out);
  free(out);
}
END_TEST

/* Bad combinations are user errors with a message (exit status 1). */
START_TEST(cli_rejects_bad_options) {
  const char *dir = tu_fresh_dir("aothostcli");
  const char *g = tu_src("examples/mlp.graph");
  TU_SH_OK("'%s' weights '%s' --random --seed 3 -o '%s/w.safetensors'", GRAPHC_CLI, g, dir);
  static const struct {
    const char *args, *msg;
  } cases[] = {
      {"--target host -o %s/x.gcx", "--target host writes a C header and an object"},
      {"--target host --emit c --cpu pentium9000 -o %s/x", "unknown --cpu 'pentium9000'"},
      {"--target tpu --emit c -o %s/x", "unknown --target 'tpu'"},
      {"--cpu x86-64 --emit c -o %s/x", "--cpu applies to --target host"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char args[1024], *out = NULL;
    snprintf(args, sizeof args, cases[i].args, dir);
    int rc = tu_sh(&out, "'%s' compile '%s' --bind B=2 --weights '%s/w.safetensors' %s", GRAPHC_CLI, g, dir, args);
    ck_assert_msg(rc == 1 && strstr(out, cases[i].msg), "%s: exit %d:\n%s", args, rc, out);
    free(out);
  }
  char *out = NULL;
  int rc = tu_sh(&out, "ls '%s' | grep -v '^w.safetensors$' || true", dir);
  ck_assert_msg(rc == 0 && out[0] == 0, "files left behind:\n%s", out);
  free(out);
}
END_TEST

/* graphc_rt_bundle_load_host on wrong input: statuses and messages, nothing loaded. */
START_TEST(load_host_rejects_bad_input) {
  graphc_rt_bundle_t *rb = (graphc_rt_bundle_t *)1;
  graphc_error_t err;
  ck_assert_int_eq(graphc_rt_bundle_load_host(NULL, 10, NULL, 0, &rb, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_ptr_null(rb);
  ck_assert_msg(strstr(err.message, "NULL argument"), "%s", err.message);
  static const char junk[64] = "this is not a bundle";
  ck_assert_int_ne(graphc_rt_bundle_load_host(junk, sizeof junk, NULL, 0, &rb, &err), GRAPHC_STATUS_OK);
  ck_assert_ptr_null(rb);
  ck_assert_msg(strstr(err.message, "not a graphc bundle"), "%s", err.message);
  /* a GPU bundle is not host code */
  const char *dir = tu_fresh_dir("aothostbad");
  TU_SH_OK("'%s' weights '%s' --random --seed 3 -o '%s/w.safetensors'", GRAPHC_CLI, tu_src("examples/mlp.graph"), dir);
  TU_SH_OK("GRAPHC_CACHE=off '%s' compile '%s' --bind B=2 --weights '%s/w.safetensors' --arch sm_90 -o '%s/gpu.gcx'",
           GRAPHC_CLI, tu_src("examples/mlp.graph"), dir, dir);
  char path[700];
  snprintf(path, sizeof path, "%s/gpu.gcx", dir);
  size_t len = 0;
  char *bytes = tu_read_file(path, &len);
  ck_assert_ptr_nonnull(bytes);
  ck_assert_int_eq(graphc_rt_bundle_load_host(bytes, len, NULL, 0, &rb, &err), GRAPHC_STATUS_INVALID_ARGUMENT);
  ck_assert_ptr_null(rb);
  ck_assert_msg(strstr(err.message, "not a host bundle"), "%s", err.message);
  free(bytes);
}
END_TEST

int main(void) {
  Suite *s = suite_create("aot_host");
  TCase *tc = tcase_create("aot_host");
  tcase_add_test(tc, example_builds_runs_and_matches_interp);
  tcase_add_test(tc, example_precision_f16);
  tcase_add_test(tc, two_models_one_program);
  tcase_add_test(tc, bf16_narrowed_ops_link);
  tcase_add_test(tc, cli_rejects_bad_options);
  tcase_add_test(tc, load_host_rejects_bad_input);
  tcase_set_timeout(tc, 600);
  suite_add_tcase(s, tc);
  return tu_run_suite(s);
}
