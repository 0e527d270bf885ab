/* cli.h - shared pieces of the graphc command-line tool (tools/cli.c) and its commands. */
#ifndef GC_CLI_H
#define GC_CLI_H

#include <stdint.h>
#include <time.h>

#include "graphc/graphc.h"

#define CLI_MAX_BINDS 32

typedef struct cli_opts {
  const char *file;
  const char *entry;
  int n_binds;
  char bind_names[CLI_MAX_BINDS][64];
  int64_t bind_values[CLI_MAX_BINDS];
  int n_ranges;                       /* --range NAME=LO:HI */
  char range_names[CLI_MAX_BINDS][64];
  int64_t range_lo[CLI_MAX_BINDS], range_hi[CLI_MAX_BINDS];
  graphc_compile_options_t copts;
  const char *weights, *inputs, *output, *emit;
  const char *calibrate;  /* --calibrate F: fp8 activation ranges from F's sample inputs */
  uint64_t seed;
  int random, full, stats, help, bad;
  int runs, warmup;
  int pipeline;        /* graphc bench --pipeline N: contexts in flight (0: off) */
  int json;            /* graphc bench --json: one JSON object of the whole-graph times */
} cli_opts;

/* tools/cli.c */
/* Parse options shared by all commands; -1 on a bad command line (message printed). */
int cli_parse(int argc, char **argv, cli_opts *o, const char *usage);
/* Load o->file, apply --entry, --bind, --weights. */
graphc_status_t cli_load(graphc_context_t *ctx, const cli_opts *o, graphc_model_t **model,
                         graphc_error_t *err);
/* Print the warnings of the context's last call (after a successful compile). */
void cli_print_warnings(graphc_context_t *ctx);
/* Print diagnostics; return the exit code for a status (0, 1 user error, 2 internal). */
int cli_report(graphc_context_t *ctx, graphc_status_t st, const graphc_error_t *err);
/* Is there a GPU to run on? If not, print "what: why" to stderr and return 0. */
int cli_have_gpu(const char *what);
/* Compile for CUDA; random weights in tmp_weights (removed by the caller) when the
 * model's weights file is missing and no --weights was given. */
graphc_status_t cli_compile_cuda(graphc_model_t *m, const cli_opts *o, graphc_executable_t **exe,
                                 char *tmp_weights, size_t tmp_len, graphc_error_t *err);
/* Host tensors for the executable's inputs (from o->inputs by argument name,
 * else random from o->seed) and outputs; *file is the loaded inputs file, NULL without
 * --inputs, for the caller to free with gc_safetensors_free (also on failure). */
struct gc_safetensors;
graphc_status_t cli_make_tensors(graphc_executable_t *exe, const cli_opts *o, graphc_tensor_t *in,
                                 graphc_tensor_t *out, struct gc_safetensors **file, graphc_error_t *err);

/* tools/bench_pipeline.c: graphc bench --pipeline N, given a compiled, once-run CUDA
 * executable and host tensors; 0 on success. */
int cli_bench_pipeline(graphc_executable_t *exe, const graphc_tensor_t *in, size_t n_in,
                       graphc_tensor_t *out, size_t n_out, int depth, int runs, int warmup);

/* tools/run.c: graphc run, weights, compile */
int cli_cmd_run(int argc, char **argv, const char *usage_common, const char *usage_compile);
int cli_cmd_weights(int argc, char **argv, const char *usage_common);
int cli_cmd_compile(int argc, char **argv, const char *usage_common, const char *usage_compile);
/* tools/onnx_cli.c: graphc import, run-pb, run-onnx-test */
int cli_cmd_import(int argc, char **argv, const char *usage_common);
int cli_cmd_run_pb(int argc, char **argv, const char *usage_common, const char *usage_compile);
int cli_cmd_run_onnx_test(int argc, char **argv, const char *usage_common, const char *usage_compile);
/* tools/passes_cli.c */
int cli_cmd_dot(int argc, char **argv, const char *usage_common);
/* tools/bench.c */
int gc_cli_bench(int argc, char **argv);
/* tools/bench_cpu.c: graphc bench --backend cpu, given a compiled, once-run cpu
 * executable and host tensors; 0 on success. */
int cli_bench_cpu(graphc_context_t *ctx, graphc_executable_t *exe, const cli_opts *o,
                  const graphc_tensor_t *in, size_t n_in, graphc_tensor_t *out, size_t n_out);
/* tools/tune.c */
int gc_cli_tune(int argc, char **argv);
/* tools/generate.c: graphc generate (a Hugging Face checkpoint folder) */
int cli_cmd_generate(int argc, char **argv);

/* Monotonic milliseconds, for --stats. */
static inline double cli_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

#endif
