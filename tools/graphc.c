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
 *
 * Exit codes: 0 ok, 1 user error, 2 internal error.
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
    "\n"
    "graphc <command> --help shows the command's options; graphc --version the version.\n";

static const char *const usage_common =
    "  --bind S=N        bind symbolic dim S of the entry graph to N (repeatable)\n"
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
    "  --tf32            f32 matmuls on the tensor cores, operands rounded to tf32 (GPU)\n"
    "  --tuning FILE     kernel configurations measured by `graphc tune` (GPU)\n"
    "  --stats           print compile statistics\n";

/* Print the context's diagnostics (or the error) and map a status to an exit code. */
int cli_report(graphc_context_t *ctx, graphc_status_t st, const graphc_error_t *err) {
  const char *diags = ctx ? graphc_context_diagnostics(ctx) : "";
  if (diags[0]) fputs(diags, stderr);
  if (st == GRAPHC_STATUS_OK) return 0;
  if (!diags[0]) {
    if (err && err->file[0] && err->line)
      fprintf(stderr, "%s:%d:%d: error: %s\n", err->file, err->line, err->col, err->message);
    else if (err && err->message[0])
      fprintf(stderr, "graphc: error: %s\n", err->message);
    else
      fprintf(stderr, "graphc: error: %s\n", graphc_status_string(st));
  }
  return st == GRAPHC_STATUS_INTERNAL ? 2 : 1;
}

/* Parse the options shared by all commands into `o`; unknown options are errors. */
int cli_parse(int argc, char **argv, cli_opts *o, const char *usage) {
  memset(o, 0, sizeof *o);
  graphc_compile_options_init(&o->copts);
  o->runs = 0;  /* --runs not given: each command's own default (bench 100, tune 30) */
  o->warmup = 10;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    const char *v = NULL;
#define OPT(name) (strcmp(a, name) == 0 && (i + 1 < argc ? (v = argv[++i], 1) : (fprintf(stderr, "graphc: option %s needs a value\n", name), o->bad = 1, 0)))
#define OPT_EQ(name) (strncmp(a, name "=", sizeof(name)) == 0 ? (v = a + sizeof(name), 1) : OPT(name))
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(usage, stdout);
      o->help = 1;
      return 0;
    } else if (OPT_EQ("--bind")) {
      const char *eq = strchr(v, '=');
      char *end = NULL;
      long long n = eq ? strtoll(eq + 1, &end, 10) : 0;
      if (!eq || eq == v || !end || *end || end == eq + 1 || o->n_binds == CLI_MAX_BINDS) {
        fprintf(stderr, "graphc: --bind expects NAME=INT, got '%s'\n", v);
        return -1;
      }
      snprintf(o->bind_names[o->n_binds], sizeof o->bind_names[0], "%.*s", (int)(eq - v), v);
      o->bind_values[o->n_binds++] = n;
    } else if (OPT_EQ("--entry")) {
      o->entry = v;
    } else if (OPT_EQ("--backend")) {
      if (strcmp(v, "interp") == 0) o->copts.backend = GRAPHC_BACKEND_INTERP;
      else if (strcmp(v, "cpu") == 0) o->copts.backend = GRAPHC_BACKEND_CPU;
      else if (strcmp(v, "cuda") == 0) o->copts.backend = GRAPHC_BACKEND_CUDA;
      else if (strcmp(v, "default") == 0) o->copts.backend = GRAPHC_BACKEND_DEFAULT;
      else {
        fprintf(stderr, "graphc: unknown backend '%s' (interp, cpu, cuda)\n", v);
        return -1;
      }
    } else if (OPT_EQ("--codegen")) {
      if (strcmp(v, "nvrtc") == 0) o->copts.codegen = GRAPHC_CODEGEN_NVRTC;
      else if (strcmp(v, "llvm") == 0) o->copts.codegen = GRAPHC_CODEGEN_LLVM;
      else {
        fprintf(stderr, "graphc: unknown codegen '%s' (nvrtc, llvm)\n", v);
        return -1;
      }
    } else if (OPT_EQ("--arch")) {
      o->copts.arch = v;
    } else if (OPT_EQ("--weights")) {
      o->weights = v;
    } else if (OPT_EQ("--inputs")) {
      o->inputs = v;
    } else if (OPT_EQ("--output") || OPT("-o")) {
      o->output = v;
    } else if (OPT_EQ("--emit")) {
      o->emit = v;
    } else if (OPT_EQ("--seed")) {
      char *end;
      o->seed = strtoull(v, &end, 10);
      if (*end || !*v) {
        fprintf(stderr, "graphc: --seed expects an integer, got '%s'\n", v);
        return -1;
      }
    } else if (OPT_EQ("--runs") || OPT_EQ("--warmup")) {
      char *end;
      long n = strtol(v, &end, 10);
      if (*end || n < 1) {
        fprintf(stderr, "graphc: %.8s expects a positive integer, got '%s'\n", a, v);
        return -1;
      }
      if (strncmp(a, "--runs", 6) == 0) o->runs = (int)n; else o->warmup = (int)n;
    } else if (OPT_EQ("--print-after")) {
      o->copts.print_after = v;
    } else if (OPT_EQ("--print-before")) {
      o->copts.print_before = v;
    } else if (OPT_EQ("--disable-pass")) {
      o->copts.disable_passes = v;
    } else if (OPT_EQ("--tuning")) {
      o->copts.tuning = v;
    } else if (strcmp(a, "-O0") == 0) {
      o->copts.optimize = 0;
    } else if (strcmp(a, "--time-passes") == 0) {
      o->copts.time_passes = 1;
    } else if (strcmp(a, "--eager") == 0) {
      o->copts.eager = 1;
    } else if (strcmp(a, "--tf32") == 0) {
      o->copts.allow_tf32 = 1;
    } else if (strcmp(a, "--stats") == 0) {
      o->stats = 1;
    } else if (strcmp(a, "--random") == 0) {
      o->random = 1;
    } else if (strcmp(a, "--full") == 0) {
      o->full = 1;
    } else if (a[0] == '-' && a[1]) {
      if (!o->bad) fprintf(stderr, "graphc: unknown option '%s'\n%s", a, usage);
      return -1;
    } else if (!o->file) {
      o->file = a;
    } else {
      fprintf(stderr, "graphc: unexpected argument '%s'\n", a);
      return -1;
    }
    if (o->bad) return -1;
#undef OPT
#undef OPT_EQ
  }
  if (!o->file) {
    fprintf(stderr, "graphc: no input file\n%s", usage);
    return -1;
  }
  return 0;
}

/* Load the model named in o, apply --entry, --bind and --weights. */
graphc_status_t cli_load(graphc_context_t *ctx, const cli_opts *o, graphc_model_t **model,
                         graphc_error_t *err) {
  graphc_status_t st = graphc_model_load_file(ctx, o->file, model, err);
  if (st != GRAPHC_STATUS_OK) return st;
  if (o->entry && (st = graphc_model_set_entry(*model, o->entry, err)) != GRAPHC_STATUS_OK)
    goto fail;
  for (int i = 0; i < o->n_binds; i++)
    if ((st = graphc_model_bind(*model, o->bind_names[i], o->bind_values[i], err)) != GRAPHC_STATUS_OK)
      goto fail;
  if (o->weights && (st = graphc_model_set_weights(*model, o->weights, err)) != GRAPHC_STATUS_OK)
    goto fail;
  return GRAPHC_STATUS_OK;
fail:
  graphc_model_destroy(*model);
  *model = NULL;
  return st;
}

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
  fprintf(stderr, "graphc: unknown command '%s'\n\n%s", cmd, usage_main);
  return 1;
}
