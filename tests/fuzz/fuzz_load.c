/* fuzz_load.c - libFuzzer target for the public API's load path on the
 * interpreter backend.
 *
 * Input: arbitrary bytes as .graph text. Steps, each of which must either
 * succeed or fail with a status and a non-empty message (never crash, never
 * leak):
 *   graphc_model_load_string -> graphc_model_print -> graphc_model_set_entry
 *   (a graph picked from a hash of the input) -> graphc_model_bind (every
 *   symbolic dim to a small value, plus one unknown name that must be refused)
 *   -> graphc_model_write_random_weights + graphc_model_set_weights (a scratch
 *   file, so the text's own weights path is never opened) -> graphc_compile
 *   (interp, optimize on or off) -> graphc_executable_run on pseudo-random
 *   inputs.
 * Work is bounded: graphs whose specialized values exceed MAX_NUMEL elements
 * or whose estimated work exceeds MAX_WORK are only loaded, not compiled.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frontend/parser.h"
#include "ir/ir.h"

#define MAX_NUMEL (INT64_C(1) << 17)
#define MAX_WORK (INT64_C(1) << 22)

/* Abort with a description: an API contract was broken. */
static void fail(const char *what, graphc_status_t st, const graphc_error_t *err) {
  fprintf(stderr, "fuzz_load: %s (status %d '%s', message '%s')\n", what, (int)st,
          graphc_status_string(st), err ? err->message : "");
  abort();
}

/* A failing call must fill the error with its status and a message. */
static void check_error(const char *call, graphc_status_t st, const graphc_error_t *err) {
  if (st == GRAPHC_STATUS_OK) return;
  if (st < 0 || st >= GRAPHC_STATUS_COUNT_) fail(call, st, err);
  if (err->code != st || !err->message[0]) fail(call, st, err);
  if (st == GRAPHC_STATUS_INTERNAL) fail(call, st, err);
}

/* splitmix64 step. */
static uint64_t mix(uint64_t *s) {
  uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* Elements of a type (types here are concrete and bounded). */
static int64_t numel(const gc_type *t) {
  int64_t n = gc_type_numel(t);
  return n < 0 ? INT64_MAX / 4 : n;
}

/* Rough element-operation count of one op, for the work bound. */
static int64_t op_work(const gc_op *op) {
  int64_t w = 0, out = 0;
  for (int i = 0; i < op->n_results; i++) out += numel(&op->results[i]->type);
  for (int i = 0; i < op->n_operands; i++) w += numel(&op->operands[i]->type);
  w += out;
  if (op->opcode == GC_OP_MATMUL && op->n_operands == 2) {
    const gc_type *a = &op->operands[0]->type;
    int k = gc_op_attr_bool(op, "transpose_a", 0) ? a->rank - 2 : a->rank - 1;
    if (k >= 0) w += out * a->dims[k];
  } else if (op->opcode == GC_OP_CONV2D && op->n_operands == 2) {
    const gc_type *f = &op->operands[1]->type;
    if (f->rank == 4 && f->dims[0] > 0) w += out * (numel(f) / f->dims[0]);
  } else if (op->opcode == GC_OP_MAX_POOL2D || op->opcode == GC_OP_AVG_POOL2D) {
    int64_t k[2] = {1, 1};
    const gc_attr *a = gc_op_attr(op, "kernel");
    if (a && gc_attr_ints(a, k, 2) == 2 && k[0] > 0 && k[1] > 0 && k[0] < MAX_WORK &&
        k[1] < MAX_WORK)
      w += out * k[0] * k[1];
    else
      w = MAX_WORK;
  }
  return w;
}

/* Is the entry graph, specialized with the given bindings, small enough to
 * run? Works on the harness's own parse of the text (internal API), so the
 * model stays untouched; specializes that copy (the last use of it). */
static int small_enough(gc_module *m, gc_diags *d, int entry, const int64_t *binds,
                        int n_binds) {
  int ok = m && gc_verify_module(m, d) == 0 && entry < m->n_graphs;
  if (ok) {
    gc_graph *g = m->graphs[entry];
    for (int i = 0; i < g->n_syms && i < n_binds; i++) g->sym_values[i] = binds[i];
    ok = g->n_syms <= n_binds && gc_graph_specialize(g, d) == 0 && gc_verify_graph(g, d) == 0;
    int64_t work = 0;
    for (int i = 0; ok && i < g->n_args; i++) ok = numel(&g->args[i]->type) <= MAX_NUMEL;
    for (const gc_op *op = g->first; ok && op; op = op->next) {
      for (int i = 0; ok && i < op->n_results; i++)
        ok = numel(&op->results[i]->type) <= MAX_NUMEL;
      work += op_work(op);
      ok = ok && work <= MAX_WORK;
    }
  }
  return ok;
}

/* Symbol names of graph `entry` (from our own parse); returns the count,
 * names malloc'd into out[] (at most max). */
static int entry_symbols(const gc_module *m, int entry, char **out, int max) {
  int n = 0;
  if (m && entry < m->n_graphs) {
    gc_graph *g = m->graphs[entry];
    for (int i = 0; i < g->n_syms && n < max; i++) out[n++] = strdup(g->sym_names[i]);
  }
  return n;
}

/* Graph count and name of graph `i` (malloc'd) from our own parse. */
static int graph_names(const gc_module *m, int pick, char **name) {
  int n = m ? m->n_graphs : 0;
  *name = n ? strdup(m->graphs[pick % n]->name) : NULL;
  return n;
}

/* Fill a host tensor with pseudo-random data: small numbers, sometimes specials. */
static void fill(void *p, graphc_dtype_t dt, int64_t n, uint64_t *s) {
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = mix(s);
    double v = (double)(int64_t)(r % 17) - 8;
    if ((r >> 20) % 64 == 0) v = (r >> 30) % 2 ? 1e30 : -0.0;
    switch (dt) {
      case GRAPHC_DTYPE_F64: ((double *)p)[i] = v / 4; break;
      case GRAPHC_DTYPE_F32: ((float *)p)[i] = (float)(v / 4); break;
      case GRAPHC_DTYPE_F16:
      case GRAPHC_DTYPE_BF16: ((uint16_t *)p)[i] = (uint16_t)(r >> 40); break;
      case GRAPHC_DTYPE_I64: ((int64_t *)p)[i] = (int64_t)(r % 17) - 8; break;
      case GRAPHC_DTYPE_I32: ((int32_t *)p)[i] = (int32_t)(r % 17) - 8; break;
      case GRAPHC_DTYPE_I8: ((int8_t *)p)[i] = (int8_t)(r >> 56); break;
      case GRAPHC_DTYPE_U8: ((uint8_t *)p)[i] = (uint8_t)(r >> 56); break;
      case GRAPHC_DTYPE_BOOL: ((uint8_t *)p)[i] = (uint8_t)(r & 1); break;
      default: break;
    }
  }
}

/* Compile for the interpreter and run once on pseudo-random inputs. */
static void compile_and_run(graphc_model_t *model, uint64_t seed) {
  graphc_error_t err;
  graphc_compile_options_t opts;
  graphc_compile_options_init(&opts);
  opts.backend = GRAPHC_BACKEND_INTERP;
  opts.optimize = (int)(seed & 1);
  graphc_executable_t *exe = NULL;
  graphc_status_t st = graphc_compile(model, &opts, &exe, &err);
  check_error("graphc_compile", st, &err);
  if (getenv("GRAPHC_FUZZ_VERBOSE"))
    fprintf(stderr, "fuzz_load: compile: %s %s\n", graphc_status_string(st), st ? err.message : "");
  if (st != GRAPHC_STATUS_OK) return;
  if (!exe) fail("graphc_compile returned OK without an executable", st, &err);
  if (graphc_executable_backend(exe) != GRAPHC_BACKEND_INTERP) fail("wrong backend", st, &err);

  size_t ni = graphc_executable_num_inputs(exe), no = graphc_executable_num_outputs(exe);
  graphc_tensor_t *in = calloc(ni + 1, sizeof *in), *out = calloc(no + 1, sizeof *out);
  if (!in || !out) abort();
  uint64_t s = seed;
  for (int pass = 0; pass < 2; pass++) {
    size_t n = pass ? no : ni;
    for (size_t i = 0; i < n; i++) {
      graphc_tensor_info_t info;
      st = pass ? graphc_executable_output_info(exe, i, &info)
                : graphc_executable_input_info(exe, i, &info);
      if (st != GRAPHC_STATUS_OK) fail("tensor info of a valid index failed", st, NULL);
      graphc_tensor_t *t = pass ? &out[i] : &in[i];
      t->dtype = info.dtype;
      t->rank = info.rank;
      memcpy(t->dims, info.dims, sizeof t->dims);
      t->nbytes = info.nbytes;
      t->data = calloc(1, info.nbytes ? info.nbytes : 1);
      if (!t->data) abort();
      if (!pass) fill(t->data, info.dtype, (int64_t)(info.nbytes / graphc_dtype_size(info.dtype)), &s);
    }
  }
  st = graphc_executable_run(exe, in, ni, out, no, &err);
  check_error("graphc_executable_run", st, &err);
  if (getenv("GRAPHC_FUZZ_VERBOSE"))
    fprintf(stderr, "fuzz_load: ran %zu inputs -> %zu outputs: %s %s\n", ni, no,
            graphc_status_string(st), st ? err.message : "");
  if (st != GRAPHC_STATUS_OK && st != GRAPHC_STATUS_RUNTIME_ERROR && st != GRAPHC_STATUS_OUT_OF_MEMORY)
    fail("graphc_executable_run failed with an unexpected status", st, &err);
  for (size_t i = 0; i < ni; i++) free(in[i].data);
  for (size_t i = 0; i < no; i++) free(out[i].data);
  free(in);
  free(out);
  graphc_executable_destroy(exe);
}

/* Path of this process's scratch weights file. */
static const char *scratch_path(void) {
  static char path[512];
  if (!path[0]) {
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/graphc-fuzz-load-%ld.safetensors", dir ? dir : "/tmp",
             (long)getpid());
  }
  return path;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* libFuzzer entry: the load path on one input. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  uint64_t seed = 1469598103934665603ull;
  for (size_t i = 0; i < size; i++) seed = (seed ^ data[i]) * 1099511628211ull;

  graphc_context_t *ctx = NULL;
  if (graphc_context_create(&ctx) != GRAPHC_STATUS_OK) abort();
  graphc_error_t err;
  graphc_model_t *model = NULL;
  graphc_status_t st = graphc_model_load_string(ctx, "fuzz.graph", text, size, &model, &err);
  check_error("graphc_model_load_string", st, &err);
  if (st != GRAPHC_STATUS_OK) {
    if (model) fail("a failed load returned a model", st, &err);
    if (!graphc_context_diagnostics(ctx)[0]) fail("a failed load left no diagnostics", st, &err);
    graphc_context_destroy(ctx);
    return 0;
  }

  char *printed = NULL;
  st = graphc_model_print(model, &printed, &err);
  check_error("graphc_model_print", st, &err);
  graphc_free(printed);

  /* The harness's own parse of the text (one, for the graph names, the entry's
   * symbols and the size bound; the model's module is never looked into). */
  gc_diags d;
  gc_diags_init(&d, "fuzz.graph", text, size);
  gc_module *m = gc_parse("fuzz.graph", text, size, &d);
  if (!m) fail("a text the model loaded does not parse", GRAPHC_STATUS_OK, NULL);

  char *gname = NULL;
  int n_graphs = graph_names(m, (int)(seed >> 8 & 0xff), &gname);
  int entry = 0;
  if (n_graphs > 0 && gname) {
    st = graphc_model_set_entry(model, gname, &err);
    check_error("graphc_model_set_entry", st, &err);
    if (st != GRAPHC_STATUS_OK) fail("set_entry refused a graph that exists", st, &err);
    entry = (int)((seed >> 8 & 0xff) % (uint64_t)n_graphs);
  }
  free(gname);

  char *syms[64];
  int64_t binds[64];
  int n_syms = entry_symbols(m, entry, syms, 64);
  uint64_t bs = seed;
  for (int i = 0; i < n_syms; i++) {
    binds[i] = 1 + (int64_t)(mix(&bs) % 4);
    st = graphc_model_bind(model, syms[i], binds[i], &err);
    check_error("graphc_model_bind", st, &err);
    if (st != GRAPHC_STATUS_OK) fail("bind refused a declared symbol", st, &err);
    free(syms[i]);
  }
  st = graphc_model_bind(model, "no_such_symbol_", 2, &err);
  if (st != GRAPHC_STATUS_INVALID_ARGUMENT) fail("bind accepted an unknown symbol", st, &err);
  check_error("graphc_model_bind", st, &err);

  int small = small_enough(m, &d, entry, binds, n_syms);
  gc_module_free(m);
  gc_diags_free(&d);
  if (small) {
    const char *wpath = scratch_path();
    st = graphc_model_write_random_weights(model, wpath, seed, &err);
    check_error("graphc_model_write_random_weights", st, &err);
    if (st == GRAPHC_STATUS_OK) {
      st = graphc_model_set_weights(model, wpath, &err);
      check_error("graphc_model_set_weights", st, &err);
      compile_and_run(model, seed);
    }
    unlink(wpath);
  }
  graphc_model_destroy(model);
  graphc_context_destroy(ctx);
  return 0;
}
