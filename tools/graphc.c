/* graphc.c - the command-line tool.
 *
 *   graphc check   FILE [--bind S=N]... [--entry @g]
 *   graphc print   FILE [--bind S=N]... [--entry @g]
 *   graphc run     FILE [--bind S=N]... [--backend B] [--codegen C] [--inputs F | --random]
 *                       [--seed N] [--weights W] [--output F] [--full] [--stats] [--eager]
 *   graphc weights FILE --random [--seed N] -o W.safetensors [--bind S=N]...
 *   graphc compile FILE --emit kir|cuda|llvm|ptx|cubin|bundle|c -o OUT [--codegen C] [--arch sm_90[,sm_80]]
 *                       [--embed-weights] [--no-ptx]
 *   graphc bench   FILE ...           (tools/bench.c)
 *   graphc generate MODEL_DIR --emit-graph   (tools/generate.c: a Hugging Face checkpoint)
 *
 * This file holds main and the command dispatch (and the small check and print
 * commands); the options, model loading and error reporting every command shares
 * are in tools/cli.c. Exit codes: 0 ok, 1 user error, 2 internal error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graphc/graphc.h"
#include "tools/cli.h"

static const char *const usage_main =
    "usage: graphc <command> [options]\n"
    "\n"
    "commands:\n"
    "  check    parse and verify a .graph file\n"
    "  print    print a .graph file in canonical form (re-parses to the same text)\n"
    "  run      compile and run a graph, print or save its outputs\n"
    "  weights  write a deterministic random weights file for a graph\n"
    "  compile  write generated code (Kernel IR, CUDA C, LLVM IR, PTX, cubin), a .gcx bundle, or C (.h + .o)\n"
    "  bench    time a graph on the GPU against the device's copy bandwidth\n"
    "  tune     time the configurations of a graph's tunable kernels on the GPU; write a tuning file\n"
    "  dot      write the graph after the optimization passes as Graphviz\n"
    "  import   translate an ONNX model into a .graph file and a safetensors weights file\n"
    "  run-pb   run a graph on ONNX .pb tensors; compare with expected .pb outputs\n"
    "  run-onnx-test  import, run and check an ONNX backend test folder\n"
    "  generate a Hugging Face Llama-family checkpoint folder: --emit-graph prints its graph\n"
    "\n"
    "graphc <command> --help shows the command's options; graphc --version the version.\n";

static const char *const usage_common =
    "  --bind S=N        bind symbolic dim S of the entry graph to N (repeatable); run: symbols\n"
    "                    left unbound are bound from the shapes of the --inputs tensors\n"
    "  --range S=LO:HI   narrow the range of symbolic dim S (repeatable)\n"
    "  --entry @name     entry graph (default: the first)\n";

static const char *const usage_compile_opts =
    "  --backend B       interp | cpu | cuda (default: cuda when a GPU is present, else cpu)\n"
    "  --codegen C       llvm | nvrtc (CUDA code path, default llvm)\n"
    "  --arch sm_XX      GPU architecture (default: the device's, else sm_90)\n"
    "  --weights W       weights file instead of the one the .graph names\n"
    "  -O0               no optimization passes\n"
    "  --print-before=P  print the IR before pass P (or all) to stderr\n"
    "  --print-after=P   print the IR after pass P (or all) to stderr\n"
    "  --disable-pass=P  skip pass P (comma-separated list)\n"
    "  --time-passes     time passes and compile stages (shown with --stats; compile --emit: stderr)\n"
    "  --eager           launch kernel by kernel instead of replaying a CUDA graph\n"
    "  --precision P     f32 | tf32 | f16 | bf16 | fp8: matmuls, convs and the elementwise ops between\n"
    "                    them in P (f32 accumulation; softmax, norms, reductions stay f32; default f32);\n"
    "                    fp8: linears in e4m3, weights scaled per channel, activations per row\n"
    "  --calibrate F     with --precision fp8: activations scaled per tensor by the ranges they reach\n"
    "                    on F's sample inputs (safetensors, by argument name) instead of per row at run\n"
    "                    time (`graphc print` shows them as matmuls' act_amax attributes)\n"
    "  --keep-f32=REGEX  ops whose result name matches REGEX (POSIX extended) stay f32\n"
    "  --outputs LIST    keep only these results of the entry (comma-separated names, in that\n"
    "                    order); what only the others need is not computed\n"
    "  --tf32            f32 matmuls on the tensor cores, operands rounded to tf32 (GPU; = --precision tf32)\n"
    "  --tuning FILE     kernel configurations measured by `graphc tune` (GPU)\n"
    "  --stats           print compile statistics\n";

static const char *const usage_check = "usage: graphc check FILE [options]\n"
                                       "Parse and verify FILE; print diagnostics.\n\noptions:\n";
static const char *const usage_print = "usage: graphc print FILE [options]\n"
                                       "Print FILE in canonical form (types inferred).\n\noptions:\n";

static int cmd_check_or_print(int argc, char **argv, int print) {
  char usage[2048];
  snprintf(usage, sizeof usage, "%s%s", print ? usage_print : usage_check, usage_common);
  cli_opts o;
  if (cli_parse(argc, argv, &o, usage) != 0) return 1;
  if (o.help) return 0;
  graphc_context_t *ctx;
  if (graphc_context_create(&ctx) != GRAPHC_STATUS_OK) return 2;
  graphc_error_t err;
  graphc_model_t *m = NULL;
  graphc_status_t st = cli_load(ctx, &o, &m, &err);
  if (st == GRAPHC_STATUS_OK && o.n_binds) st = graphc_model_specialize(m, &err);
  if (st == GRAPHC_STATUS_OK && print) {
    char *text = NULL;
    st = graphc_model_print(m, &text, &err);
    if (text) fputs(text, stdout);
    graphc_free(text);
  }
  int rc = cli_report(ctx, st, &err);
  if (rc == 0 && !print) printf("%s: ok\n", o.file);
  graphc_model_destroy(m);
  graphc_context_destroy(ctx);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    fputs(usage_main, argc < 2 ? stderr : stdout);
    return argc < 2 ? 1 : 0;
  }
  if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
    printf("graphc %s\n", GRAPHC_VERSION_STRING);
    return 0;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "check") == 0) return cmd_check_or_print(argc - 2, argv + 2, 0);
  if (strcmp(cmd, "print") == 0) return cmd_check_or_print(argc - 2, argv + 2, 1);
  if (strcmp(cmd, "run") == 0) return cli_cmd_run(argc - 2, argv + 2, usage_common, usage_compile_opts);
  if (strcmp(cmd, "weights") == 0) return cli_cmd_weights(argc - 2, argv + 2, usage_common);
  if (strcmp(cmd, "compile") == 0)
    return cli_cmd_compile(argc - 2, argv + 2, usage_common, usage_compile_opts);
  if (strcmp(cmd, "bench") == 0) return gc_cli_bench(argc - 2, argv + 2);
  if (strcmp(cmd, "tune") == 0) return gc_cli_tune(argc - 2, argv + 2);
  if (strcmp(cmd, "dot") == 0) return cli_cmd_dot(argc - 2, argv + 2, usage_common);
  if (strcmp(cmd, "import") == 0) return cli_cmd_import(argc - 2, argv + 2, usage_common);
  if (strcmp(cmd, "run-pb") == 0)
    return cli_cmd_run_pb(argc - 2, argv + 2, usage_common, usage_compile_opts);
  if (strcmp(cmd, "run-onnx-test") == 0)
    return cli_cmd_run_onnx_test(argc - 2, argv + 2, usage_common, usage_compile_opts);
  if (strcmp(cmd, "generate") == 0) return cli_cmd_generate(argc - 2, argv + 2);
  fprintf(stderr, "graphc: unknown command '%s'\n\n%s", cmd, usage_main);
  return 1;
}
