/* cli.c - the helpers the commands of the graphc tool share: option parsing
 * (cli_parse), loading the model the options name (cli_load), reporting a
 * status as diagnostics and an exit code (cli_report), host tensors for a run
 * (cli_make_tensors), and the GPU check and CUDA compile that bench and tune
 * share (cli_have_gpu, cli_compile_cuda). tools/graphc.c holds main and the
 * command dispatch; each command lives in its own file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "graphc/graphc.h"
#include "driver/cuda_backend.h"
#include "driver/settings.h"
#include "weights/safetensors.h"
#include "tools/cli.h"
#include "passes/pipeline.h"

/* Print the warnings of the context's last call (a compile's, before a run's call replaces them). */
void cli_print_warnings(graphc_context_t *ctx) {
  const char *w = graphc_context_diagnostics(ctx);
  if (w[0]) fputs(w, stderr);
}

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
    } else if (OPT_EQ("--range")) {
      const char *eq = strchr(v, '=');
      char *colon = NULL, *end = NULL;
      long long lo = eq ? strtoll(eq + 1, &colon, 10) : 0, hi = 0;
      if (colon && *colon == ':') hi = strtoll(colon + 1, &end, 10);
      if (!eq || eq == v || !colon || *colon != ':' || colon == eq + 1 || !end || *end ||
          end == colon + 1 || o->n_ranges == CLI_MAX_BINDS) {
        fprintf(stderr, "graphc: --range expects NAME=LO:HI, got '%s'\n", v);
        return -1;
      }
      snprintf(o->range_names[o->n_ranges], sizeof o->range_names[0], "%.*s", (int)(eq - v), v);
      o->range_lo[o->n_ranges] = lo;
      o->range_hi[o->n_ranges++] = hi;
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
    } else if (OPT_EQ("--runs") || OPT_EQ("--warmup") || OPT_EQ("--pipeline")) {
      char *end;
      long n = strtol(v, &end, 10);
      if (*end || n < 1 || n > 1000000) {
        fprintf(stderr, "graphc: %.10s expects a positive integer, got '%s'\n", a, v);
        return -1;
      }
      if (strncmp(a, "--runs", 6) == 0) o->runs = (int)n;
      else if (strncmp(a, "--warmup", 8) == 0) o->warmup = (int)n;
      else o->pipeline = (int)n;
    } else if (OPT_EQ("--print-after")) {
      o->copts.print_after = v;
    } else if (OPT_EQ("--print-before")) {
      o->copts.print_before = v;
    } else if (OPT_EQ("--disable-pass")) {
      o->copts.disable_passes = v;
    } else if (OPT_EQ("--precision")) {
      if (gc_precision_parse(v, &o->copts.precision) != 0) {
        fprintf(stderr, "graphc: unknown precision '%s' (f32, tf32, f16, bf16, fp8)\n", v);
        return -1;
      }
    } else if (OPT_EQ("--calibrate")) {
      o->calibrate = v;
    } else if (OPT_EQ("--keep-f32")) {
      o->copts.keep_f32 = v;  /* checked by graphc_compile (regcomp) */
    } else if (OPT_EQ("--outputs")) {
      o->copts.outputs = v;  /* checked by graphc_compile against the entry's results */
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
    } else if (strcmp(a, "--json") == 0) {
      o->json = 1;
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
  if (o->calibrate && o->copts.precision != GRAPHC_PRECISION_FP8) {
    fprintf(stderr, "graphc: --calibrate measures the activation ranges of --precision fp8; add --precision fp8\n");
    return -1;
  }
  return 0;
}

/* Bind the symbolic dims the --bind options left from the shapes in the --inputs file or,
 * with calibrate set, calibrate the model on its tensors (graphc_model_calibrate). */
static graphc_status_t from_inputs_file(graphc_model_t *m, const char *path, const graphc_compile_options_t *calibrate,
                                        graphc_error_t *err) {
  gc_diags d;
  gc_diags_init(&d, path, NULL, 0);
  gc_safetensors *f = gc_safetensors_load(path, &d);
  if (!f) {
    gc_diags_to_error(&d, err);
    gc_diags_free(&d);
    return GRAPHC_STATUS_WEIGHTS_ERROR;
  }
  gc_diags_free(&d);
  const char **names = calloc((size_t)f->n + 1, sizeof *names);
  graphc_tensor_t *ts = calloc((size_t)f->n + 1, sizeof *ts);
  graphc_status_t st = GRAPHC_STATUS_OUT_OF_MEMORY;
  if (names && ts) {
    for (int i = 0; i < f->n; i++) {
      names[i] = f->tensors[i].name;
      ts[i].dtype = f->tensors[i].dtype;
      ts[i].rank = f->tensors[i].rank;
      memcpy(ts[i].dims, f->tensors[i].dims, sizeof ts[i].dims);
      ts[i].data = (void *)f->tensors[i].data;
      ts[i].nbytes = f->tensors[i].nbytes;
    }
    st = calibrate ? graphc_model_calibrate(m, calibrate, (size_t)f->n, names, ts, err)
                   : graphc_model_bind_inputs(m, (size_t)f->n, names, ts, err);
  } else {
    gc_set_error(err, st, "out of memory");
  }
  free(names);
  free(ts);
  gc_safetensors_free(f);
  return st;
}

/* Load the model named in o, apply --entry, --bind, --range, --weights, bind what is left
 * from the shapes of the --inputs file, and calibrate on the --calibrate file. */
graphc_status_t cli_load(graphc_context_t *ctx, const cli_opts *o, graphc_model_t **model,
                         graphc_error_t *err) {
  graphc_status_t st = graphc_model_load_file(ctx, o->file, model, err);
  if (st != GRAPHC_STATUS_OK) return st;
  if (o->entry && (st = graphc_model_set_entry(*model, o->entry, err)) != GRAPHC_STATUS_OK)
    goto fail;
  for (int i = 0; i < o->n_ranges; i++)  /* first: a binding is checked against the range */
    if ((st = graphc_model_set_range(*model, o->range_names[i], o->range_lo[i], o->range_hi[i], err)) !=
        GRAPHC_STATUS_OK)
      goto fail;
  for (int i = 0; i < o->n_binds; i++)
    if ((st = graphc_model_bind(*model, o->bind_names[i], o->bind_values[i], err)) != GRAPHC_STATUS_OK)
      goto fail;
  if (o->weights && (st = graphc_model_set_weights(*model, o->weights, err)) != GRAPHC_STATUS_OK)
    goto fail;
  if (o->inputs && (st = from_inputs_file(*model, o->inputs, NULL, err)) != GRAPHC_STATUS_OK) goto fail;
  if (o->calibrate && (st = from_inputs_file(*model, o->calibrate, &o->copts, err)) != GRAPHC_STATUS_OK) goto fail;
  return GRAPHC_STATUS_OK;
fail:
  graphc_model_destroy(*model);
  *model = NULL;
  return st;
}

/* Host tensors for the inputs (from o->inputs by argument name, or random from o->seed) and
 * the outputs. *file holds the loaded inputs file (the caller frees it, also on failure). */
graphc_status_t cli_make_tensors(graphc_executable_t *exe, const cli_opts *o, graphc_tensor_t *in,
                                 graphc_tensor_t *out, gc_safetensors **file, graphc_error_t *err) {
  *file = NULL;
  if (o->inputs) {
    gc_diags d;
    gc_diags_init(&d, o->inputs, NULL, 0);
    *file = gc_safetensors_load(o->inputs, &d);
    if (!*file) {
      gc_diags_to_error(&d, err);
      gc_diags_free(&d);
      return GRAPHC_STATUS_WEIGHTS_ERROR;
    }
    gc_diags_free(&d);
  }
  for (int pass = 0; pass < 2; pass++) {
    size_t n = pass ? graphc_executable_num_outputs(exe) : graphc_executable_num_inputs(exe);
    for (size_t i = 0; i < n; i++) {
      graphc_tensor_info_t info;
      if (pass)
        graphc_executable_output_info(exe, i, &info);
      else
        graphc_executable_input_info(exe, i, &info);
      graphc_tensor_t *t = pass ? &out[i] : &in[i];
      t->dtype = info.dtype;
      t->rank = info.rank;
      memcpy(t->dims, info.dims, sizeof t->dims);
      t->nbytes = info.nbytes;
      const gc_st_tensor *ft = NULL;
      if (!pass && *file && !(ft = gc_safetensors_find(*file, info.name)))
        return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "%s has no tensor '%s' for input %%%s",
                            o->inputs, info.name, info.name);
      if (ft) {  /* shape and dtype are checked by graphc_executable_run */
        t->dtype = ft->dtype;
        t->rank = ft->rank;
        memcpy(t->dims, ft->dims, sizeof t->dims);
        t->nbytes = ft->nbytes;
      }
      t->data = malloc(t->nbytes ? t->nbytes : 1);
      if (!t->data) return gc_set_error(err, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory for host tensors");
      if (ft) {
        memcpy(t->data, ft->data, ft->nbytes);
      } else if (!pass) {
        gc_type ty = {.dtype = info.dtype, .rank = info.rank};
        memcpy(ty.dims, info.dims, sizeof ty.dims);
        gc_random_fill(t->data, &ty, o->seed * 7919 + i + 1);
      }
    }
  }
  return GRAPHC_STATUS_OK;
}

/* Is there a GPU to run on? If not, print "what: why" and return 0. */
int cli_have_gpu(const char *what) {
  gc_diags d;
  gc_diags_init(&d, "", NULL, 0);
  gc_settings s;
  gc_settings_read(&s);
  int ok = gc_cuda_check_available(&s.rt, &d);
  if (!ok) fprintf(stderr, "%s: %s\n", what, d.n ? d.items[0].msg : "CUDA backend unavailable");
  gc_diags_free(&d);
  return ok;
}

/* Compile for CUDA; when the model's weights file is missing (and no --weights
 * was given), retry with random weights written to a temporary file. */
graphc_status_t cli_compile_cuda(graphc_model_t *m, const cli_opts *o, graphc_executable_t **exe,
                                 char *tmp_weights, size_t tmp_len, graphc_error_t *err) {
  graphc_status_t st = graphc_compile(m, &o->copts, exe, err);
  if (st != GRAPHC_STATUS_IO_ERROR || o->weights) return st;
  snprintf(tmp_weights, tmp_len, "/tmp/graphc-bench-%ld.safetensors", (long)getpid());
  graphc_error_t werr;
  if (graphc_model_write_random_weights(m, tmp_weights, o->seed, &werr) != GRAPHC_STATUS_OK ||
      graphc_model_set_weights(m, tmp_weights, &werr) != GRAPHC_STATUS_OK) {
    tmp_weights[0] = 0;
    return st;
  }
  fprintf(stderr, "graphc bench: note: %s; using random weights (%s)\n", err->message, tmp_weights);
  return graphc_compile(m, &o->copts, exe, err);
}
