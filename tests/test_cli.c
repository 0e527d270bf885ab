/* test_cli.c - the graphc command: every subcommand, --help, --version, exit
 * codes, and its messages for bad command lines and bad input. Also runs every
 * example end to end on the interpreter and examples/host_mlp. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* Run `graphc ARGS`, return the exit code; *out receives the output. */
static int gc(const char *args, char **out) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "cd %s && %s %s", GRAPHC_SOURCE_DIR, GRAPHC_CLI, args);
  return tu_run_cmd(cmd, out);
}

#define EXPECT(args, code, needle)                                                   \
  do {                                                                               \
    char *out_ = NULL;                                                               \
    int rc_ = gc(args, &out_);                                                       \
    ck_assert_msg(rc_ == (code), "graphc %s: exit %d, wanted %d\n%s", args, rc_, code, \
                  out_ ? out_ : "");                                                 \
    ck_assert_msg(out_ && strstr(out_, needle), "graphc %s: no '%s' in:\n%s", args,   \
                  needle, out_ ? out_ : "");                                         \
    free(out_);                                                                      \
  } while (0)

START_TEST(version_and_help) {
  EXPECT("--version", 0, "graphc 0.");
  EXPECT("--help", 0, "commands:");
  EXPECT("", 1, "usage: graphc");
  EXPECT("frobnicate x", 1, "unknown command 'frobnicate'");
  const char *cmds[] = {"check", "print", "run", "weights", "compile", "bench"};
  for (int i = 0; i < 6; i++) {
    char a[64];
    snprintf(a, sizeof a, "%s --help", cmds[i]);
    EXPECT(a, 0, "usage: graphc");
  }
}
END_TEST

START_TEST(check_and_print) {
  EXPECT("check examples/mlp.graph", 0, "examples/mlp.graph: ok");
  EXPECT("check examples/transformer_block.graph --bind B=2 --bind S=8", 0, "ok");
  EXPECT("print examples/mlp.graph", 0, "%h = matmul(%x, %w1) : f32[B, 128];");
  EXPECT("print examples/mlp.graph --bind B=3", 0, "%y = add(%o, %b2) : f32[3, 10];");
  EXPECT("check /nonexistent.graph", 1, "cannot open '/nonexistent.graph'");
  /* run-pb's tensor files go through the same reader (gc_read_file) */
  EXPECT("run-pb examples/mlp.graph --bind B=1 --inputs-pb /nonexistent.pb", 1,
         "/nonexistent.pb: error: cannot open '/nonexistent.pb'");
  EXPECT("run-pb examples/mlp.graph --bind B=1 --inputs-pb examples", 1, "cannot read 'examples'");
  EXPECT("check examples/mlp.graph --bind B", 1, "--bind expects NAME=INT");
  EXPECT("check examples/mlp.graph --bind Q=3", 1, "no symbolic dim 'Q'");
  EXPECT("check examples/mlp.graph --frob", 1, "unknown option '--frob'");
  EXPECT("check", 1, "no input file");
  /* timing and code-path options: bad values are refused before anything runs */
  EXPECT("tune examples/mlp.graph --runs 0", 1, "--runs expects a positive integer, got '0'");
  EXPECT("bench examples/mlp.graph --runs 1x", 1, "--runs expects a positive integer, got '1x'");
  EXPECT("compile examples/mlp.graph --emit kir --codegen ptxas", 1, "unknown codegen 'ptxas' (nvrtc, llvm)");
  /* --tf32 is a flag: f32 matmuls take tf32 tensor-core kernels; no value, no effect on cpu */
  EXPECT("check examples/mlp.graph --tf32=1", 1, "unknown option '--tf32=1'");
  EXPECT("compile examples/transformer_block.graph --bind B=2 --bind S=64 --emit kir --arch sm_90 --tf32", 0,
         "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32");
  {
    /* weights of our own: a fresh clone has no examples/mlp.safetensors */
    char tw[512], targs[1024];
    snprintf(tw, sizeof tw, "%s/tf32_mlp.safetensors", tu_tmpdir());
    snprintf(targs, sizeof targs, "weights examples/mlp.graph --random -o %s", tw);
    EXPECT(targs, 0, "");
    snprintf(targs, sizeof targs, "run examples/mlp.graph --bind B=2 --backend cpu --random --tf32 --weights %s", tw);
    EXPECT(targs, 0, "%y: f32[2, 10]");
    /* bench on the cpu backend: whole runs, the tables or one JSON object */
    snprintf(targs, sizeof targs, "bench examples/mlp.graph --bind B=2 --backend cpu --runs 3 --warmup 1 --weights %s",
             tw);
    EXPECT(targs, 0, "3 runs after 1 warm-up");
    snprintf(targs, sizeof targs,
             "bench examples/mlp.graph --bind B=2 --backend cpu --runs 3 --warmup 1 --json --weights %s", tw);
    EXPECT(targs, 0, "{\"backend\": \"cpu\", \"runs\": 3, \"warmup\": 1, \"median_ms\": ");
    EXPECT("bench examples/mlp.graph --bind B=2 --backend cpu --pipeline 2", 1, "--pipeline is for the cuda");
    EXPECT("bench examples/mlp.graph --bind B=2 --backend interp", 1, "only the cuda and cpu backends");
  }
  /* Fusion groups of a bound graph are drawn as clusters named after their kernels. */
  EXPECT("dot examples/transformer_block.graph --bind B=2 --bind S=8", 0,
         "label=\"fusion_22 (matmul)\"");
  EXPECT("dot examples/mlp.graph --bind B=2 --disable-pass=fusion", 0, "digraph");
}
END_TEST

START_TEST(errors_point_at_source) {
  char path[512], *out = NULL;
  snprintf(path, sizeof path, "%s/bad.graph", tu_tmpdir());
  FILE *f = fopen(path, "w");
  fputs("version 1;\ngraph @g(%x: f32[2]) -> (f32[2]) {\n  %y = nag(%x);\n  return %y;\n}\n", f);
  fclose(f);
  char args[600];
  snprintf(args, sizeof args, "check %s", path);
  int rc = gc(args, &out);
  ck_assert_int_eq(rc, 1);
  ck_assert_msg(strstr(out, "bad.graph:3:8: error: unknown op 'nag'"), "%s", out);
  ck_assert_msg(strstr(out, "%y = nag(%x);"), "%s", out);
  ck_assert_msg(strstr(out, "       ^"), "%s", out);
  free(out);
}
END_TEST

/* --outputs naming a result the entry does not return: the return statement with a caret, the
 * results it has, exit status 1; a name given twice likewise. */
START_TEST(outputs_option_errors) {
  char path[512], *out = NULL;
  snprintf(path, sizeof path, "%s/outs.graph", tu_tmpdir());
  FILE *f = fopen(path, "w");
  fputs("version 1;\ngraph @g(%x: f32[2]) -> (f32[2], f32[2]) {\n  %y = neg(%x);\n  %z = relu(%x);\n"
        "  return %y, %z;\n}\n", f);
  fclose(f);
  char args[700];
  snprintf(args, sizeof args, "run %s --backend interp --outputs z,w", path);
  ck_assert_int_eq(gc(args, &out), 1);
  ck_assert_msg(strstr(out, "outs.graph:5:3: error: outputs: graph @g returns no '%w' (it returns %y, %z)"), "%s", out);
  ck_assert_msg(strstr(out, "  return %y, %z;") && strstr(out, "  ^"), "%s", out);
  free(out);
  snprintf(args, sizeof args, "run %s --backend cpu --outputs z,%%z", path);
  ck_assert_int_eq(gc(args, &out), 1);
  ck_assert_msg(strstr(out, "outs.graph:5:3: error: outputs: '%z' is named twice"), "%s", out);
  free(out);
  snprintf(args, sizeof args, "run %s --backend interp --outputs z", path);
  ck_assert_int_eq(gc(args, &out), 0);
  ck_assert_msg(strstr(out, "%z: f32[2]") && !strstr(out, "%y:"), "%s", out);
  free(out);
}
END_TEST

START_TEST(weights_and_run_every_example) {
  const char *ex[][2] = {{"mlp", "--bind B=2"}, {"cnn", "--bind N=2"},
                         {"transformer_block", "--bind B=2 --bind S=8"}};
  for (int i = 0; i < 3; i++) {
    char args[1024];
    snprintf(args, sizeof args, "weights examples/%s.graph --random --seed 3 -o %s/%s.safetensors %s",
             ex[i][0], tu_tmpdir(), ex[i][0], ex[i][1]);
    EXPECT(args, 0, "");
    snprintf(args, sizeof args,
             "run examples/%s.graph %s --backend interp --weights %s/%s.safetensors --seed 5 "
             "--output %s/%s.out.safetensors",
             ex[i][0], ex[i][1], tu_tmpdir(), ex[i][0], tu_tmpdir(), ex[i][0]);
    EXPECT(args, 0, "on interp");
    /* The outputs file is a valid safetensors file that run accepts as inputs of nothing. */
    snprintf(args, sizeof args, "%s/%s.out.safetensors", tu_tmpdir(), ex[i][0]);
    size_t len = 0;
    char *bytes = tu_read_file(args, &len);
    ck_assert_ptr_nonnull(bytes);
    ck_assert_int_gt(len, 8);
    free(bytes);
  }
  EXPECT("weights examples/mlp.graph -o /tmp/x.safetensors", 1, "needs --random");
  EXPECT("run examples/mlp.graph --backend interp", 1, "B is not bound");
  EXPECT("run examples/mlp.graph --bind B=2 --backend interp --weights /nonexistent.st", 1,
         "/nonexistent.st");
  EXPECT("run examples/mlp.graph --backend quantum", 1, "unknown backend 'quantum'");
  EXPECT("compile examples/mlp.graph --bind B=2", 1, "needs --emit");
  EXPECT("compile examples/mlp.graph --bind B=2 --emit cubin", 1, "give -o FILE");
}
END_TEST

/* graphc bench --backend cpu: the GPU bench's report for the host, without a GPU. */
START_TEST(bench_cpu_backend) {
  char *out = NULL;
  int rc = gc("bench examples/mlp.graph --bind B=64 --backend cpu --runs 5 --warmup 1", &out);
  ck_assert_msg(rc == 0, "exit %d\n%s", rc, out ? out : "");
  const char *needles[] = {"host copy bandwidth", "GFLOP/s (graphc's f32 matmul", "whole graph",
                           "median", "% of copy", "per kernel", "sum of kernels", "%gemm"};
  for (size_t i = 0; i < sizeof needles / sizeof *needles; i++)
    ck_assert_msg(strstr(out, needles[i]), "no '%s' in:\n%s", needles[i], out);
  /* the measured baselines and the whole-graph median are positive numbers */
  double copy = 0, gemm = 0, med = 0;
  const char *c = strstr(out, "  copy "), *g = strstr(out, "  gemm "), *m = strstr(out, "median ");
  ck_assert(c && sscanf(c, " copy %lf", &copy) == 1 && copy > 0);
  ck_assert(g && sscanf(g, " gemm %lf", &gemm) == 1 && gemm > 0);
  ck_assert(m && sscanf(m, "median %lf", &med) == 1 && med > 0);
  /* one row per launch: the mlp's kernels by name */
  ck_assert_msg(strstr(out, "matmul") || strstr(out, "fusion"), "%s", out);
  free(out);
  EXPECT("bench examples/mlp.graph --bind B=2 --backend interp", 1, "only the cuda and cpu backends");
}
END_TEST

START_TEST(run_with_inputs_file) {
  /* Outputs of one run become inputs of another graph: @id(%y) reads tensor "y". */
  char g[512], w[512], o[512], args[2048];
  snprintf(g, sizeof g, "%s/id.graph", tu_tmpdir());
  snprintf(w, sizeof w, "%s/mlp_in.safetensors", tu_tmpdir());
  snprintf(o, sizeof o, "%s/mlp_out.safetensors", tu_tmpdir());
  FILE *f = fopen(g, "w");
  fputs("version 1;\ngraph @id(%y: f32[2, 10]) -> (f32[2, 10]) {\n  %z = neg(%y);\n  return %z;\n}\n", f);
  fclose(f);
  snprintf(args, sizeof args, "weights examples/mlp.graph --random -o %s", w);
  EXPECT(args, 0, "");
  snprintf(args, sizeof args,
           "run examples/mlp.graph --bind B=2 --backend interp --weights %s --output %s", w, o);
  EXPECT(args, 0, "%y: f32[2, 10]");
  snprintf(args, sizeof args, "run %s --backend interp --inputs %s", g, o);
  EXPECT(args, 0, "%z: f32[2, 10]");
  snprintf(args, sizeof args, "run %s --backend interp --inputs %s", g, w);
  EXPECT(args, 1, "has no tensor 'y'");
  snprintf(args, sizeof args, "run %s --backend interp --inputs /nonexistent.st", g);
  EXPECT(args, 1, "/nonexistent.st: cannot open");
}
END_TEST

/* An integer const stored as bf16 rounds once, from the integer: 2^61 + 2^53 + 1
 * is bf16 2^61 + 2^54 (through a double it would round to 2^61 + 2^53 first, then
 * to the tie's even 2^61). The cpu backend writes the interpreter's bytes. */
START_TEST(const_int_rounds_once) {
  char g[512], a[512], b[512], args[2048];
  snprintf(g, sizeof g, "%s/cbf.graph", tu_tmpdir());
  snprintf(a, sizeof a, "%s/cbf_interp.safetensors", tu_tmpdir());
  snprintf(b, sizeof b, "%s/cbf_cpu.safetensors", tu_tmpdir());
  FILE *f = fopen(g, "w");
  fputs("version 1;\ngraph @g(%x: bf16[2]) -> (bf16[2]) {\n"
        "  %c = const(value=[2314850208468434945, 1], dtype=bf16);\n"
        "  %y = mul(%c, %x);\n  return %y;\n}\n", f);
  fclose(f);
  snprintf(args, sizeof args, "run %s --backend interp --output %s", g, a);
  EXPECT(args, 0, "%y: bf16[2]");
  snprintf(args, sizeof args, "run %s --backend cpu --output %s", g, b);
  EXPECT(args, 0, "%y: bf16[2]");
  char cmd[2048], *out = NULL;
  snprintf(cmd, sizeof cmd, "cmp %s %s", a, b);
  int rc = tu_run_cmd(cmd, &out);
  ck_assert_msg(rc == 0, "interp and cpu outputs differ: %s", out);
  free(out);
}
END_TEST

START_TEST(host_program) {
  char w[512], cmd[2048], *out = NULL;
  snprintf(w, sizeof w, "%s/host_mlp.safetensors", tu_tmpdir());
  char args[1024];
  snprintf(args, sizeof args, "weights examples/mlp.graph --random --seed 1 -o %s", w);
  EXPECT(args, 0, "");
  snprintf(cmd, sizeof cmd, "cd %s && %s/host_mlp examples/mlp.graph %s", GRAPHC_SOURCE_DIR,
           GRAPHC_BINARY_DIR, w);
  int rc = tu_run_cmd(cmd, &out);
  ck_assert_msg(rc == 0, "host_mlp exit %d:\n%s", rc, out);
  ck_assert_msg(strstr(out, "y[3] ="), "%s", out);
  free(out);
  snprintf(cmd, sizeof cmd, "cd %s && %s/host_mlp examples/mlp.graph /nonexistent.st",
           GRAPHC_SOURCE_DIR, GRAPHC_BINARY_DIR);
  rc = tu_run_cmd(cmd, &out);
  ck_assert_int_eq(rc, 1);
  ck_assert_msg(strstr(out, "compile failed"), "%s", out);
  free(out);
}
END_TEST

/* Tuning files: --tuning picks the tensor-core tile per problem (the KIR shows it), the
 * same file gives the same bytes, and every malformed file is a clear error. graphc tune
 * itself measures on a GPU: without one it says so; with one it writes a file that
 * --tuning reads back. */
START_TEST(tuning_files) {
  char g[512], t[512], a[2048], b[2048];
  snprintf(g, sizeof g, "%s/mm.graph", tu_tmpdir());
  tu_write_text(tu_tmpdir(), "mm.graph", "version 1;\ngraph @g(%a: f16[127, 4096], %b: f16[4096, 4096]) -> (f16[127, 4096]) {\n"
                   "  %y = matmul(%a, %b);\n  return %y;\n}\n");
  snprintf(t, sizeof t, "%s/t.tuning", tu_tmpdir());
  /* the heuristic on sm_90: the warpgroup-MMA kernel, 64x128 tiles (64 blocks of 128
   * threads: 128-row tiles would leave more SMs idle); on sm_80 the mma.sync kernel's 64x64
   * (128 blocks on 132 SMs) */
  snprintf(a, sizeof a, "compile %s --emit kir --arch sm_90", g);
  EXPECT(a, 0, "kernel matmul_0 blocks(n=64, block=128)");
  EXPECT(a, 0, "wgmma.m64n128k16");
  EXPECT(a, 0, "tune \"matmul f16 b=1 m=127 n=4096 k=4096 ab=nn\"");
  snprintf(a, sizeof a, "compile %s --emit kir --arch sm_80", g);
  EXPECT(a, 0, "kernel matmul_0 blocks(n=128, block=128)");
  tu_write_text(tu_tmpdir(), "t.tuning", "graphc-tuning 1\n# a comment\n\nmatmul f16 b=1 m=127 n=4096 k=4096 ab=nn tile=128x64  # 64 blocks\n"
                   "matmul bf16 b=2 m=8 n=8 k=8 ab=tn tile=64x64\n");
  snprintf(a, sizeof a, "compile %s --emit kir --arch sm_90 --tuning %s", g, t);
  EXPECT(a, 0, "kernel matmul_0 blocks(n=64, block=128)");
  /* a tile of the warpgroup-MMA kernel */
  tu_write_text(tu_tmpdir(), "t.tuning", "graphc-tuning 1\nmatmul f16 b=1 m=127 n=4096 k=4096 ab=nn tile=wg128x256\n");
  EXPECT(a, 0, "kernel matmul_0 blocks(n=16, block=256)");
  tu_write_text(tu_tmpdir(), "t.tuning", "graphc-tuning 1\n# a comment\n\nmatmul f16 b=1 m=127 n=4096 k=4096 ab=nn tile=128x64  # 64 blocks\n"
                   "matmul bf16 b=2 m=8 n=8 k=8 ab=tn tile=64x64\n");
  /* same inputs, same bytes: two compiles of PTX with the tuning file */
  snprintf(a, sizeof a, "compile %s --emit ptx --arch sm_90 --tuning %s -o %s/a.ptx", g, t, tu_tmpdir());
  EXPECT(a, 0, "");
  snprintf(a, sizeof a, "compile %s --emit ptx --arch sm_90 --tuning %s -o %s/b.ptx", g, t, tu_tmpdir());
  EXPECT(a, 0, "");
  snprintf(a, sizeof a, "cmp %s/a.ptx %s/b.ptx", tu_tmpdir(), tu_tmpdir());
  ck_assert_int_eq(system(a), 0);
  /* tf32 (f32 matmuls with --tf32): the transposed warpgroup-MMA kernel's tiles; the
   * heuristic gives 256 x 384 64x64 tiles (the larger grids would leave SMs idle) */
  char g32[512];
  snprintf(g32, sizeof g32, "%s/mm32.graph", tu_tmpdir());
  tu_write_text(tu_tmpdir(), "mm32.graph", "version 1;\ngraph @g(%a: f32[256, 512], %b: f32[512, 384]) -> (f32[256, 384]) {\n"
                   "  %y = matmul(%a, %b);\n  return %y;\n}\n");
  snprintf(a, sizeof a, "compile %s --emit kir --arch sm_90 --tf32", g32);
  EXPECT(a, 0, "tune \"matmul tf32 b=1 m=256 n=384 k=512 ab=nn\"");
  EXPECT(a, 0, "kernel matmul_0 blocks(n=24, block=128)");
  tu_write_text(tu_tmpdir(), "t.tuning", "graphc-tuning 1\nmatmul tf32 b=1 m=256 n=384 k=512 ab=nn tile=wg256x128\n");
  snprintf(a, sizeof a, "compile %s --emit kir --arch sm_90 --tf32 --tuning %s", g32, t);
  EXPECT(a, 0, "kernel matmul_0 blocks(n=3, block=256)");
  EXPECT(a, 0, "wgmma.m64n256k8.tf32");
  /* bad files */
  static const char *const bad[][2] = {
      {"matmul f16 b=1 m=127 n=4096 k=4096 ab=nn tile=64x64\n", ":1:1: not a graphc tuning file"},
      {"graphc-tuning 2\n", ":1:15: tuning file version '2' is not supported"},
      {"graphc-tuning 1\nconv f16 tile=64x64\n", ":2:1: unknown kernel family 'conv'"},
      {"graphc-tuning 1\nmatmul f16 b=1 m=127 n=4096 k=4096 ab=nn\n", ":2:1: a matmul entry needs 8 fields"},
      {"graphc-tuning 1\nmatmul f17 b=1 m=1 n=1 k=1 ab=nn tile=64x64\n", ":2:8: unknown dtype 'f17'"},
      {"graphc-tuning 1\nmatmul f16 b=1 m=0 n=1 k=1 ab=nn tile=64x64\n", ":2:16: expected m=N (N >= 1)"},
      {"graphc-tuning 1\nmatmul f16 b=1 m=1 n=1 k=1 ab=nx tile=64x64\n", ":2:28: expected ab=nn, nt, tn or tt"},
      {"graphc-tuning 1\nmatmul f16 b=1 m=1 n=1 k=1 ab=nn tile=96x64\n", ":2:34: expected tile=BMxBN"},
      {"graphc-tuning 1\nmatmul f16 b=1 m=1 n=1 k=1 ab=nn tile=wg64x256\n", ":2:34: expected tile=BMxBN"},
      {"graphc-tuning 1\nmatmul f16 b=1 m=1 n=1 k=1 ab=nn tile=wg256x128\n", ":2:34: expected tile=BMxBN"},
      {"graphc-tuning 1\nmatmul f32 b=1 m=1 n=1 k=1 ab=nn tile=wg64x64\n",
       ":2:8: f32 matmuls are tuned on the tensor cores: write 'tf32'"},
      {"graphc-tuning 1\nmatmul tf32 b=1 m=1 n=1 k=1 ab=nn tile=64x64\n", ":2:35: expected tile=wgBMxBN (256x128"},
      {"graphc-tuning 1\nmatmul tf32 b=1 m=1 n=1 k=1 ab=nn tile=wg128x256\n", ":2:35: expected tile=wgBMxBN (256x128"},
      {"graphc-tuning 1\nmatmul f16 b=1 m=1 n=1 k=1 ab=nn tile=64x64\nmatmul f16 b=1 m=1 n=1 k=1 ab=nn tile=64x128\n",
       ":3:1: a second entry for the same problem"},
      {"", ":1:1: not a graphc tuning file"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tu_write_text(tu_tmpdir(), "t.tuning", bad[i][0]);
    snprintf(a, sizeof a, "compile %s --emit kir --tuning %s", g, t);
    snprintf(b, sizeof b, "%s%s", t, bad[i][1]);
    EXPECT(a, 1, b);
    snprintf(a, sizeof a, "run %s --backend cpu --random --tuning %s", g, t);
    EXPECT(a, 1, b);
  }
  snprintf(a, sizeof a, "compile %s --emit kir --tuning %s/missing.tuning", g, tu_tmpdir());
  EXPECT(a, 1, "missing.tuning: cannot open the tuning file");
  /* graphc tune */
  snprintf(a, sizeof a, "tune %s", g);
  EXPECT(a, 1, "give -o TUNING");
  snprintf(a, sizeof a, "tune %s -o %s --tuning %s", g, t, t);
  EXPECT(a, 1, "does not read one");
  char *out = NULL;
  snprintf(a, sizeof a, "tune %s -o %s --runs 5", g, t);
  int rc = gc(a, &out);
  if (rc == 1 && out && strstr(out, "graphc tune: no GPU to measure on: CUDA backend unavailable")) {
    free(out);
    return;  /* no device here: that is the message */
  }
  ck_assert_msg(rc == 0 && out && strstr(out, "1 tunable problem"), "graphc %s: exit %d\n%s", a, rc,
                out ? out : "");
  free(out);
  snprintf(a, sizeof a, "run %s --random --tuning %s", g, t);
  EXPECT(a, 0, "%y: f16[127, 4096]");
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli");
  TCase *tc = tcase_create("cli");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, version_and_help);
  tcase_add_test(tc, check_and_print);
  tcase_add_test(tc, errors_point_at_source);
  tcase_add_test(tc, outputs_option_errors);
  tcase_add_test(tc, bench_cpu_backend);
  tcase_add_test(tc, weights_and_run_every_example);
  tcase_add_test(tc, run_with_inputs_file);
  tcase_add_test(tc, host_program);
  tcase_add_test(tc, const_int_rounds_once);
  tcase_add_test(tc, tuning_files);
  suite_add_tcase(s, tc);
  return tu_run_suite(s);
}
