/* test_install.c - packaging: libgraphc_rt's dependencies, `cmake --install`,
 * the pkg-config and CMake package files, and examples/aot_mlp built both ways.
 *
 * Runs without a GPU: libgraphc_rt must need neither NVRTC, nvJitLink, LLVM
 * nor libgraphc and export only the graphc_rt API (readelf, nm); an install
 * into a temporary prefix must hold the libraries, headers, tool and package
 * files, and user programs must configure, build and run against it through
 * find_package(graphc) (graphc::graphc, graphc::graphc_rt, GRAPHC_EXECUTABLE)
 * and pkg-config (graphc, graphc_rt). examples/aot_mlp is built with its
 * Makefile against the build tree and with its CMakeLists against the install;
 * with a GPU it runs and its output is compared with the interpreter's.
 */
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "cuda_testutil.h"
#include "driver/exec.h"

static int g_have_device;


/* ==== libgraphc_rt needs only the driver ===================================================== */

START_TEST(rt_library_needs_only_the_driver) {
  char lib[1024];
  snprintf(lib, sizeof lib, "%s/libgraphc_rt.so", GRAPHC_BINARY_DIR);
  ck_assert_msg(access(lib, R_OK) == 0, "%s missing", lib);
  char *out = NULL;
  ck_assert_int_eq(tu_sh(&out, "readelf -d '%s' | grep NEEDED", lib), 0);
  const char *banned[] = {"nvrtc", "nvJitLink", "LLVM", "llvm", "libgraphc.so", "libstdc++", "libcuda",
                          "cjson", "libz", "zstd"};
  for (size_t i = 0; i < sizeof banned / sizeof banned[0]; i++)
    ck_assert_msg(!strstr(out, banned[i]), "libgraphc_rt needs %s:\n%s", banned[i], out);
  printf("libgraphc_rt NEEDED:\n%s", out);
  free(out);
  /* ldd agrees (resolves the whole closure). */
  ck_assert_int_eq(tu_sh(&out, "ldd '%s'", lib), 0);
  ck_assert_msg(!strstr(out, "nvrtc") && !strstr(out, "nvJitLink") && !strstr(out, "LLVM") &&
                    !strstr(out, "libgraphc.so"),
                "ldd:\n%s", out);
  free(out);
  /* Exported: the runtime API and the shared helpers only. */
  ck_assert_int_eq(tu_sh(&out, "nm -D --defined-only '%s' | awk '{print $3}'", lib), 0);
  int n = 0, rt = 0;
  for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
    if (!*line) continue;
    n++;
    rt += strncmp(line, "graphc_rt_", 10) == 0;
    ck_assert_msg(strncmp(line, "graphc_", 7) == 0, "libgraphc_rt exports '%s'", line);
  }
  ck_assert_msg(rt >= 15 && n < 40, "%d exported, %d of the runtime API", n, rt);
  free(out);
  /* No LLVM, NVRTC, nvJitLink or compiler code inside, exported or not. */
  ck_assert_int_eq(tu_sh(&out, "nm -a '%s' 2>&1; nm -D --undefined-only '%s'", lib, lib), 0);
  const char *inside[] = {"LLVM", "llvm", "nvrtc", "nvJitLink", "kir_", "gc_lower", "gc_parse",
                          "gc_nvrtc", "cJSON"};
  for (size_t i = 0; i < sizeof inside / sizeof inside[0]; i++)
    ck_assert_msg(!strstr(out, inside[i]), "libgraphc_rt contains or needs '%s'", inside[i]);
  ck_assert_msg(strstr(out, "gc_cu_exec_load") || strstr(out, "no symbols"),
                "expected the runtime half's symbols in the symbol table");
  free(out);
}
END_TEST

/* ==== install and use ============================================================================ */

static const char *const k_use_rt =
    "#include <stdio.h>\n#include <string.h>\n#include <graphc/graphc_rt.h>\n"
    "int main(int argc, char **argv) {\n"
    "  graphc_rt_bundle_t *b = NULL; graphc_error_t err;\n"
    "  graphc_status_t st = graphc_rt_bundle_load(argc > 1 ? argv[1] : \"missing.gcx\", &b, &err);\n"
    "  printf(\"rt: %s: %s\\n\", graphc_status_string(st), err.message);\n"
    "  if (st == GRAPHC_STATUS_OK) {\n"
    "    printf(\"rt: graph %s, %zu inputs\\n\", graphc_rt_bundle_meta(b, \"graph\"), graphc_rt_num_inputs(b));\n"
    "    graphc_rt_bundle_destroy(b);\n  }\n"
    "  return st == GRAPHC_STATUS_OK || st == GRAPHC_STATUS_IO_ERROR ? 0 : 1;\n}\n";

static const char *const k_use_full =
    "#include <stdio.h>\n#include <string.h>\n#include <graphc/graphc.h>\n"
    "int main(void) {\n"
    "  const char *src = \"version 1;\\ngraph @g(%x: f32[3]) -> (f32[3]) {\\n  %y = add(%x, %x);\\n  return %y;\\n}\\n\";\n"
    "  graphc_context_t *ctx; graphc_model_t *m; graphc_executable_t *e; graphc_error_t err;\n"
    "  graphc_compile_options_t o; graphc_compile_options_init(&o); o.backend = GRAPHC_BACKEND_INTERP;\n"
    "  if (graphc_context_create(&ctx) || graphc_model_load_string(ctx, \"g\", src, strlen(src), &m, &err) ||\n"
    "      graphc_compile(m, &o, &e, &err)) { printf(\"full: %s\\n\", err.message); return 1; }\n"
    "  float x[3] = {1, 2, 3}, y[3] = {0};\n"
    "  graphc_tensor_t in = {GRAPHC_DTYPE_F32, 1, {3}, x, sizeof x}, out = {GRAPHC_DTYPE_F32, 1, {3}, y, sizeof y};\n"
    "  if (graphc_executable_run(e, &in, 1, &out, 1, &err)) { printf(\"full: %s\\n\", err.message); return 1; }\n"
    "  printf(\"full: %g %g %g\\n\", y[0], y[1], y[2]);\n"
    "  graphc_executable_destroy(e); graphc_model_destroy(m); graphc_context_destroy(ctx);\n"
    "  return y[2] == 6.0f ? 0 : 1;\n}\n";

static const char *const k_user_cmake =
    "cmake_minimum_required(VERSION 3.20)\n"
    "project(graphc_user C)\n"
    "find_package(graphc 0.1 REQUIRED CONFIG)\n"
    "add_executable(use_rt use_rt.c)\n"
    "target_link_libraries(use_rt PRIVATE graphc::graphc_rt)\n"
    "add_executable(use_full use_full.c)\n"
    "target_link_libraries(use_full PRIVATE graphc::graphc)\n"
    "file(WRITE ${CMAKE_BINARY_DIR}/graphc_exe.txt \"${GRAPHC_EXECUTABLE}\")\n";

START_TEST(install_and_build_user_projects) {
  const char *dir = tu_fresh_dir("install");
  char prefix[700];
  snprintf(prefix, sizeof prefix, "%s/prefix", dir);
  TU_SH_OK("cmake --install '%s' --prefix '%s'", GRAPHC_BINARY_DIR, prefix);
  const char *files[] = {"lib/libgraphc.so", "lib/libgraphc_rt.so", "include/graphc/graphc.h",
                         "include/graphc/graphc_rt.h", "bin/graphc", "lib/pkgconfig/graphc.pc",
                         "lib/pkgconfig/graphc_rt.pc", "lib/cmake/graphc/graphcConfig.cmake",
                         "lib/cmake/graphc/graphcConfigVersion.cmake",
                         "lib/cmake/graphc/graphcTargets.cmake"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", prefix, files[i]);
    ck_assert_msg(access(p, R_OK) == 0, "not installed: %s", files[i]);
  }
  /* The installed tool finds its library. */
  char *out = NULL;
  ck_assert_int_eq(tu_sh(&out, "'%s/bin/graphc' --version", prefix), 0);
  ck_assert_msg(strstr(out, "graphc " GRAPHC_VERSION_STRING), "%s", out);
  free(out);

  /* pkg-config: compile and run a program against each library. */
  char user[700];
  snprintf(user, sizeof user, "%s/user", dir);
  ck_assert_int_eq(mkdir(user, 0700), 0);
  tu_write_text(user, "use_rt.c", k_use_rt);
  tu_write_text(user, "use_full.c", k_use_full);
  tu_write_text(user, "CMakeLists.txt", k_user_cmake);
  ck_assert_int_eq(tu_sh(&out, "PKG_CONFIG_PATH='%s/lib/pkgconfig' pkg-config --cflags --libs graphc_rt", prefix), 0);
  ck_assert_msg(strstr(out, "-lgraphc_rt") && strstr(out, "/include"), "%s", out);
  free(out);
  TU_SH_OK("cd '%s' && cc -o pc_rt use_rt.c $(PKG_CONFIG_PATH='%s/lib/pkgconfig' pkg-config --cflags --libs graphc_rt)" TU_SAN_FLAGS
        " && cc -o pc_full use_full.c $(PKG_CONFIG_PATH='%s/lib/pkgconfig' pkg-config --cflags --libs graphc)" TU_SAN_FLAGS,
        user, prefix, prefix);
  ck_assert_int_eq(tu_sh(&out, "cd '%s' && ./pc_rt && ./pc_full", user), 0);
  ck_assert_msg(strstr(out, "rt: I/O error: cannot open 'missing.gcx'") && strstr(out, "full: 2 4 6"), "%s", out);
  free(out);
  ck_assert_int_eq(tu_sh(&out, "readelf -d '%s/pc_rt' | grep NEEDED", user), 0);
  ck_assert_msg(strstr(out, "libgraphc_rt.so") && !strstr(out, "libgraphc.so"), "%s", out);
  free(out);

  /* CMake: find_package(graphc) with both targets and the tool's path. */
  int rc = tu_sh(&out, "cmake -S '%s' -B '%s/build' -DCMAKE_PREFIX_PATH='%s' -DCMAKE_BUILD_TYPE=Release "
                    "-DCMAKE_C_FLAGS='%s' -DCMAKE_EXE_LINKER_FLAGS='%s' && cmake --build '%s/build'",
              user, user, prefix, TU_SAN_FLAGS, TU_SAN_FLAGS, user);
  ck_assert_msg(rc == 0, "user project:\n%s", out);
  free(out);
  ck_assert_int_eq(tu_sh(&out, "cd '%s/build' && ./use_rt && ./use_full && cat graphc_exe.txt", user), 0);
  ck_assert_msg(strstr(out, "rt: I/O error") && strstr(out, "full: 2 4 6") && strstr(out, "/bin/graphc"), "%s", out);
  free(out);
  ck_assert_int_eq(tu_sh(&out, "readelf -d '%s/build/use_rt' | grep NEEDED", user), 0);
  ck_assert_msg(strstr(out, "libgraphc_rt.so") && !strstr(out, "libgraphc.so"), "%s", out);
  free(out);

  /* examples/aot_mlp/CMakeLists.txt against the install: the model is compiled at
   * build time by the installed tool, the program links graphc::graphc_rt only. */
  rc = tu_sh(&out, "GRAPHC_CACHE=off cmake -S '%s/examples/aot_mlp' -B '%s/aot' -DCMAKE_PREFIX_PATH='%s' "
                "-DCMAKE_C_FLAGS='%s' -DCMAKE_EXE_LINKER_FLAGS='%s' && GRAPHC_CACHE=off cmake --build '%s/aot'",
          GRAPHC_SOURCE_DIR, dir, prefix, TU_SAN_FLAGS, TU_SAN_FLAGS, dir);
  ck_assert_msg(rc == 0, "examples/aot_mlp with CMake:\n%s", out);
  free(out);
  rc = tu_sh(&out, "'%s/aot/aot_mlp'", dir);
  ck_assert_msg(rc == (g_have_device ? 0 : 77), "aot_mlp exited %d:\n%s", rc, out);
  if (g_have_device) ck_assert_msg(strstr(out, "module loaded from cubin"), "%s", out);
  free(out);
  /* The example links the runtime only. */
  ck_assert_int_eq(tu_sh(&out, "readelf -d '%s/aot/aot_mlp' | grep NEEDED", dir), 0);
  ck_assert_msg(!strstr(out, "libgraphc.so"), "%s", out);
  free(out);
  TU_SH_OK("rm -rf '%s'", dir);  /* the install is large; kept only when a check failed */
}
END_TEST

/* examples/aot_mlp with its Makefile against the build tree; with a GPU its
 * output is compared with the interpreter's. */
START_TEST(example_make_build_and_run) {
  const char *dir = tu_fresh_dir("aotmlp");
  char *out = NULL;
  int rc = tu_sh(&out, "GRAPHC_CACHE=off make -s -f '%s/examples/aot_mlp/Makefile' GRAPHC='%s' OUT='%s' "
                    "CC='cc%s' RT_CFLAGS='-I%s/include' RT_LIBS='-L%s -Wl,-rpath,%s -lgraphc_rt'",
              GRAPHC_SOURCE_DIR, GRAPHC_CLI, dir, TU_SAN_FLAGS, GRAPHC_SOURCE_DIR, GRAPHC_BINARY_DIR,
              GRAPHC_BINARY_DIR);
  ck_assert_msg(rc == 0, "make:\n%s", out);
  free(out);
  char y_path[700];
  snprintf(y_path, sizeof y_path, "%s/y.bin", dir);
  rc = tu_sh(&out, "'%s/aot_mlp' '%s'", dir, y_path);
  if (!g_have_device) {
    ck_assert_msg(rc == 77 && strstr(out, "backend unavailable"), "without a GPU (%d):\n%s", rc, out);
    free(out);
    return;
  }
  ck_assert_msg(rc == 0, "aot_mlp (%d):\n%s", rc, out);
  printf("%s", out);
  free(out);
  /* The interpreter on the same input and weights. */
  graphc_context_t *ctx;
  graphc_model_t *m;
  graphc_executable_t *exe;
  graphc_error_t err;
  char w[700];
  snprintf(w, sizeof w, "%s/mlp.safetensors", dir);
  ck_assert_int_eq(graphc_context_create(&ctx), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_load_file(ctx, tu_src("examples/mlp.graph"), &m, &err), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_bind(m, "B", 4, &err), GRAPHC_STATUS_OK);
  ck_assert_int_eq(graphc_model_set_weights(m, w, &err), GRAPHC_STATUS_OK);
  graphc_compile_options_t o;
  graphc_compile_options_init(&o);
  o.backend = GRAPHC_BACKEND_INTERP;
  ck_assert_msg(graphc_compile(m, &o, &exe, &err) == GRAPHC_STATUS_OK, "%s", err.message);
  static float x[4 * 784], ref[40];
  for (int i = 0; i < 4 * 784; i++) x[i] = (float)((i * 37) % 101 - 50) / 50.0f;
  graphc_tensor_t in = {GRAPHC_DTYPE_F32, 2, {4, 784}, x, sizeof x};
  graphc_tensor_t o1 = {GRAPHC_DTYPE_F32, 2, {4, 10}, ref, sizeof ref};
  ck_assert_int_eq(graphc_executable_run(exe, &in, 1, &o1, 1, &err), GRAPHC_STATUS_OK);
  size_t len = 0;
  char *got = tu_read_file(y_path, &len);
  ck_assert_msg(got && len == sizeof ref, "y.bin has %zu bytes", len);
  double atol, rtol;
  tu_tolerance(GRAPHC_DTYPE_F32, 1, &atol, &rtol);
  tu_cmp c = tu_compare(ref, got, GRAPHC_DTYPE_F32, 40, atol, rtol);
  ck_assert_msg(c.n_bad == 0, "aot_mlp differs from the interpreter at %lld: ref %.9g got %.9g",
                (long long)c.first_bad, c.ref_bad, c.got_bad);
  free(got);
  graphc_executable_destroy(exe);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
}
END_TEST

int main(void) {
  g_have_device = tu_probe_device();
  printf("test_install: CUDA device: %s\n", g_have_device ? "yes" : "no");
  Suite *s = suite_create("install");
  TCase *tc = tcase_create("install");
  tcase_add_test(tc, rt_library_needs_only_the_driver);
  tcase_add_test(tc, install_and_build_user_projects);
  tcase_add_test(tc, example_make_build_and_run);
  tcase_set_timeout(tc, 900);
  suite_add_tcase(s, tc);
  int rc = tu_run_suite(s);
  if (rc == 0 && !g_have_device) {
    printf("SKIPPED: no CUDA device (everything was built and checked; running the example needs a GPU)\n");
    return 77;
  }
  return rc;
}
