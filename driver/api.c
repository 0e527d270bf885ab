/* api.c - the public C API: contexts, models, compilation, execution.
 *
 * The API layer owns argument checking and I/O validation; work is done by
 * the frontend (gc_parse), the verifier, the weights reader and a backend
 * behind the gc_backend table (runtime/exec.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver/exec.h"
#include "runtime/states.h"
#include "driver/settings.h"
#include "frontend/parser.h"
#include "interp/interp.h"
#include "passes/pipeline.h"
#include "codegen/codegen.h"
#include "codegen/lower.h"
#include "codegen/tuning.h"
#include "weights/weight_set.h"

/* The rendered diagnostics of one thread's last call on a context. */
typedef struct ctx_diag_slot {
  pthread_t thread;
  char *text;
} ctx_diag_slot;

struct graphc_context {
  /* Several threads may call into one context at once (graphc.h): each keeps its
   * own last diagnostics, so a string one thread reads is never freed by another
   * thread's call. Slots live until the context is destroyed. */
  pthread_mutex_t mu;
  ctx_diag_slot *diags;
  int n_diags, cap_diags;
  /* After the first CUDA executable: a reference to device 0's primary context,
   * held until the context is destroyed. Executables retain it too, but without
   * this one the last executable's release resets the primary context, and the
   * next compile pays for a new one (hundreds of ms on an H200, serialized
   * between processes). Set under mu. */
  void *cuda_hold;
};


/* ---- context ------------------------------------------------------------------ */
graphc_status_t graphc_context_create(graphc_context_t **out) {
  if (!out) return GRAPHC_STATUS_INVALID_ARGUMENT;
  *out = calloc(1, sizeof **out);
  if (!*out) return GRAPHC_STATUS_OUT_OF_MEMORY;
  if (pthread_mutex_init(&(*out)->mu, NULL) != 0) {
    free(*out);
    *out = NULL;
    return GRAPHC_STATUS_OUT_OF_MEMORY;
  }
  return GRAPHC_STATUS_OK;
}

void graphc_context_destroy(graphc_context_t *ctx) {
  if (!ctx) return;
  gc_cuda_hold_free(ctx->cuda_hold);
  for (int i = 0; i < ctx->n_diags; i++) free(ctx->diags[i].text);
  free(ctx->diags);
  pthread_mutex_destroy(&ctx->mu);
  free(ctx);
}

/* The calling thread's slot (created when `make`), or NULL; ctx->mu held. */
static ctx_diag_slot *ctx_slot(graphc_context_t *ctx, int make) {
  pthread_t self = pthread_self();
  for (int i = 0; i < ctx->n_diags; i++)
    if (pthread_equal(ctx->diags[i].thread, self)) return &ctx->diags[i];
  if (!make) return NULL;
  if (ctx->n_diags == ctx->cap_diags) {
    int cap = ctx->cap_diags ? 2 * ctx->cap_diags : 4;
    ctx_diag_slot *d = realloc(ctx->diags, (size_t)cap * sizeof *d);
    if (!d) return NULL;
    ctx->diags = d;
    ctx->cap_diags = cap;
  }
  ctx->diags[ctx->n_diags] = (ctx_diag_slot){self, NULL};
  return &ctx->diags[ctx->n_diags++];
}

const char *graphc_context_diagnostics(const graphc_context_t *cctx) {
  if (!cctx) return "";
  graphc_context_t *ctx = (graphc_context_t *)cctx;  /* the lock only */
  pthread_mutex_lock(&ctx->mu);
  ctx_diag_slot *slot = ctx_slot(ctx, 0);
  const char *text = slot && slot->text ? slot->text : "";
  pthread_mutex_unlock(&ctx->mu);
  return text;
}

/* Keep the rendered form of `d` as the calling thread's diagnostics on ctx
 * (errors and warnings; none: ""). Rendering happens outside the lock. */
static void ctx_keep_diags(graphc_context_t *ctx, const gc_diags *d) {
  if (!ctx) return;
  char *text = d->n ? gc_diags_render(d) : NULL;
  pthread_mutex_lock(&ctx->mu);
  ctx_diag_slot *slot = ctx_slot(ctx, text != NULL);
  if (slot) {
    free(slot->text);
    slot->text = text;
    text = NULL;
  }
  pthread_mutex_unlock(&ctx->mu);
  free(text);  /* no slot could be made: the diagnostics are lost, the error is not */
}

/* Finish a call: copy the first error to `err`, keep diagnostics, return status. */
static graphc_status_t finish(graphc_context_t *ctx, gc_diags *d, graphc_error_t *err) {
  graphc_status_t st = d->n_errors ? d->status : GRAPHC_STATUS_OK;
  if (st == GRAPHC_STATUS_OK && err) memset(err, 0, sizeof *err);
  if (st != GRAPHC_STATUS_OK) gc_diags_to_error(d, err);
  ctx_keep_diags(ctx, d);
  gc_diags_free(d);
  return st;
}

void graphc_compile_options_init(graphc_compile_options_t *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->optimize = 1;
}

/* ---- loading ---------------------------------------------------------------------- */
/* Parse + verify `src` into a module; NULL with errors in d. */
static gc_module *parse_and_verify(const char *name, const char *src, size_t len, gc_diags *d) {
  gc_module *m = gc_parse(name, src, len, d);
  if (!m) return NULL;
  if (m->n_graphs == 0) {
    gc_error_at(d, GRAPHC_STATUS_VERIFY_ERROR, (gc_loc){1, 1}, "the file defines no graph");
    gc_module_free(m);
    return NULL;
  }
  if (gc_verify_module(m, d) > 0 || d->n_errors) {
    gc_module_free(m);
    return NULL;
  }
  return m;
}

/* Keep only the results of g named in `list` (graphc_compile_options_t.outputs: comma-
 * separated names as the return statement writes them, in the order given); the passes'
 * dead-code elimination then drops what only the others needed. 0, or -1 with an error. */
static int keep_outputs(gc_graph *g, const char *list, gc_diags *d) {
  int n = 0, cap = 1;
  for (const char *p = list; *p; p++) cap += *p == ',';
  gc_value **outs = gc_arena_alloc(&g->arena, sizeof *outs * (size_t)cap);
  gc_type *types = gc_arena_alloc(&g->arena, sizeof *types * (size_t)cap);
  if (!outs || !types) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
    return -1;
  }
  for (const char *p = list;;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len && *p == '%') p++, len--;
    int found = -1;
    for (int i = 0; i < g->n_outputs && found < 0; i++)
      if (strlen(g->outputs[i]->name) == len && strncmp(g->outputs[i]->name, p, len) == 0) found = i;
    for (int j = 0; j < n && found >= 0; j++)
      if (outs[j] == g->outputs[found]) {
        gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, g->ret_loc, "outputs: '%%%.*s' is named twice", (int)len, p);
        return -1;
      }
    if (found < 0) {
      gc_sbuf names = {0};
      for (int i = 0; i < g->n_outputs; i++) gc_sbuf_printf(&names, "%s%%%s", i ? ", " : "", g->outputs[i]->name);
      gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, g->ret_loc,
                  "outputs: graph @%s returns no '%%%.*s' (it returns %s)", g->name, (int)len, p,
                  names.data ? names.data : "nothing");
      gc_sbuf_free(&names);
      return -1;
    }
    types[n] = g->result_types[found];
    outs[n++] = g->outputs[found];
    if (!e) break;
    p = e + 1;
  }
  g->outputs = outs;
  g->result_types = types;
  g->n_outputs = g->n_result_types = n;
  return 0;
}

/* A private copy of the model's module for compile and emit (its text is not
 * parsed again), verified again so that its warnings come with the call as
 * they did from the load, the entry's results narrowed to `outputs` (NULL: all);
 * NULL with errors in d. */
static gc_module *clone_and_verify(const graphc_model_t *m, const char *outputs, gc_diags *d) {
  gc_module *c = gc_module_clone(m->module);
  if (!c) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
    return NULL;
  }
  if (gc_verify_module(c, d) > 0 || d->n_errors || (outputs && keep_outputs(c->graphs[m->entry], outputs, d))) {
    gc_module_free(c);
    return NULL;
  }
  return c;
}

static graphc_status_t model_load(graphc_context_t *ctx, const char *name, const char *dir,
                                  char *src, size_t len, graphc_model_t **out,
                                  graphc_error_t *err) {
  gc_diags d;
  gc_diags_init(&d, name, src, len);
  graphc_model_t *m = calloc(1, sizeof *m);
  if (m) {
    m->ctx = ctx;
    m->name = strdup(name);
    m->dir = strdup(dir);
    m->source = src;
    m->source_len = len;
  }
  if (!m || !m->name || !m->dir) {
    if (m) m->source = NULL;
    graphc_model_destroy(m);
    gc_error_at(&d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
    graphc_status_t st = finish(ctx, &d, err); /* renders d, which points into src */
    free(src);
    return st;
  }
  m->module = parse_and_verify(name, src, len, &d);
  graphc_status_t st = finish(ctx, &d, err);
  if (st != GRAPHC_STATUS_OK) {
    graphc_model_destroy(m);
    return st;
  }
  *out = m;
  return GRAPHC_STATUS_OK;
}

graphc_status_t graphc_model_load_file(graphc_context_t *ctx, const char *path,
                                       graphc_model_t **out, graphc_error_t *err) {
  if (out) *out = NULL;
  if (!ctx || !path || !out)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT,
                        "graphc_model_load_file: NULL context, path or out");
  gc_diags d;
  gc_diags_init(&d, path, NULL, 0);
  size_t len = 0;
  char *src = gc_read_file(path, &len, &d);
  if (!src) return finish(ctx, &d, err);
  gc_diags_free(&d);
  char *dir = strdup(path);
  if (!dir) {
    free(src);
    return gc_set_error(err, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  char *slash = strrchr(dir, '/');
  if (slash)
    slash[1] = 0;
  else
    dir[0] = 0;
  graphc_status_t st = model_load(ctx, path, dir, src, len, out, err);
  free(dir);
  return st;
}

graphc_status_t graphc_model_load_string(graphc_context_t *ctx, const char *name,
                                         const char *text, size_t len, graphc_model_t **out,
                                         graphc_error_t *err) {
  if (out) *out = NULL;
  if (!ctx || !text || !out)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT,
                        "graphc_model_load_string: NULL context, text or out");
  char *src = malloc(len + 1);
  if (!src) return gc_set_error(err, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
  memcpy(src, text, len);
  src[len] = 0;
  return model_load(ctx, name ? name : "<string>", "", src, len, out, err);
}

void graphc_model_destroy(graphc_model_t *m) {
  if (!m) return;
  gc_module_free(m->module);
  free(m->name);
  free(m->dir);
  free(m->source);
  free(m->weights_override);
  free(m);
}

graphc_status_t graphc_model_set_entry(graphc_model_t *m, const char *graph, graphc_error_t *err) {
  if (!m || !graph)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_model_set_entry: NULL argument");
  const char *name = graph[0] == '@' ? graph + 1 : graph;
  for (int i = 0; i < m->module->n_graphs; i++)
    if (strcmp(m->module->graphs[i]->name, name) == 0) {
      m->entry = i;
      if (err) memset(err, 0, sizeof *err);
      return GRAPHC_STATUS_OK;
    }
  return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "%s: no graph named @%s", m->name,
                      name);
}

static int base_sym(const gc_graph *g, const char *symbol, const char *what, graphc_error_t *err);

graphc_status_t graphc_model_bind(graphc_model_t *m, const char *symbol, int64_t value,
                                  graphc_error_t *err) {
  if (!m || !symbol)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_model_bind: NULL argument");
  gc_graph *g = m->module->graphs[m->entry];
  int i = base_sym(g, symbol, "bind", err);
  if (i < 0) return GRAPHC_STATUS_INVALID_ARGUMENT;
  int64_t lo = g->sym_lo ? g->sym_lo[i] : 1, hi = g->sym_hi ? g->sym_hi[i] : GC_SYM_MAX;
  if (value < lo || value > hi)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT,
                        "cannot bind %s=%lld: outside its range %lld..%lld", symbol, (long long)value,
                        (long long)lo, (long long)hi);
  g->sym_values[i] = value;
  if (err) memset(err, 0, sizeof *err);
  return GRAPHC_STATUS_OK;
}

/* Which input and axis gave a symbol its value (graphc_model_bind_inputs). */
typedef struct bind_src {
  int arg;               /* argument index, -1: bound before the call */
  int axis;
} bind_src;

/* "%name (dim k = v)" for messages. */
static void put_src(gc_sbuf *b, const gc_graph *g, bind_src s, int64_t v) {
  if (s.arg < 0) gc_sbuf_printf(b, "an earlier binding (%lld)", (long long)v);
  else gc_sbuf_printf(b, "%%%s (dim %d = %lld)", g->args[s.arg]->name, s.axis, (long long)v);
}

/* Check input i (argument a) against the graph's type, binding its base symbols into
 * vals/src. 0, or -1 with err set. */
static int bind_one(const gc_graph *g, int a, const graphc_tensor_t *t, int64_t *vals, bind_src *src,
                    graphc_error_t *err) {
  const gc_type *ty = &g->args[a]->type;
  gc_sbuf b = {0};
  gc_type_print(&b, ty, g->sym_names);
  if (t->rank != ty->rank) {
    gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "input %%%s has rank %d; the graph wants %s",
                 g->args[a]->name, t->rank, b.data ? b.data : "?");
    gc_sbuf_free(&b);
    return -1;
  }
  gc_sbuf_free(&b);
  for (int k = 0; k < ty->rank; k++) {
    int64_t d = ty->dims[k], v = t->dims[k];
    if (!GC_DIM_IS_SYM(d)) {
      if (d != v)
        return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT,
                            "input %%%s has dim %d = %lld; the graph wants %lld", g->args[a]->name, k,
                            (long long)v, (long long)d), -1;
      continue;
    }
    int i = GC_DIM_SYM_INDEX(d);
    if (g->sym_defs && g->sym_defs[i]) continue; /* derived: checked once all are bound */
    if (vals[i] == GC_SYM_UNBOUND) {
      int64_t lo = g->sym_lo ? g->sym_lo[i] : 1, hi = g->sym_hi ? g->sym_hi[i] : GC_SYM_MAX;
      if (v < lo || v > hi)
        return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT,
                            "input %%%s dim %d = %lld binds %s outside its range %lld..%lld",
                            g->args[a]->name, k, (long long)v, g->sym_names[i], (long long)lo,
                            (long long)hi), -1;
      vals[i] = v;
      src[i] = (bind_src){a, k};
    } else if (vals[i] != v) {
      gc_sbuf m = {0};
      gc_sbuf_printf(&m, "inputs disagree on symbolic dim %s: ", g->sym_names[i]);
      put_src(&m, g, src[i], vals[i]);
      gc_sbuf_puts(&m, " and ");
      put_src(&m, g, (bind_src){a, k}, v);
      gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "%s", m.data ? m.data : "inputs disagree");
      gc_sbuf_free(&m);
      return -1;
    }
  }
  return 0;
}

graphc_status_t graphc_model_bind_inputs(graphc_model_t *m, size_t n, const char *const *names,
                                         const graphc_tensor_t *inputs, graphc_error_t *err) {
  if (!m || (n && (!names || !inputs)))
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_model_bind_inputs: NULL argument");
  gc_graph *g = m->module->graphs[m->entry];
  int64_t *vals = calloc((size_t)g->n_syms + 1, sizeof *vals);
  bind_src *src = calloc((size_t)g->n_syms + 1, sizeof *src);
  if (!vals || !src) {
    free(vals);
    free(src);
    return gc_set_error(err, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  for (int i = 0; i < g->n_syms; i++) {
    vals[i] = g->sym_values[i];
    src[i] = (bind_src){-1, 0};
  }
  int rc = 0;
  for (int a = 0; a < g->n_args && rc == 0; a++)
    for (size_t j = 0; j < n && rc == 0; j++)
      if (names[j] && strcmp(names[j], g->args[a]->name) == 0)
        rc = bind_one(g, a, &inputs[j], vals, src, err);
  if (rc == 0) {
    for (int i = 0; i < g->n_syms; i++)
      if (!g->sym_defs || !g->sym_defs[i]) g->sym_values[i] = vals[i];
    if (err) memset(err, 0, sizeof *err);
  }
  free(vals);
  free(src);
  return rc == 0 ? GRAPHC_STATUS_OK : GRAPHC_STATUS_INVALID_ARGUMENT;
}

graphc_status_t graphc_model_set_range(graphc_model_t *m, const char *symbol, int64_t lo, int64_t hi,
                                       graphc_error_t *err) {
  if (!m || !symbol)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_model_set_range: NULL argument");
  gc_graph *g = m->module->graphs[m->entry];
  int i = base_sym(g, symbol, "set the range of", err);
  if (i < 0) return GRAPHC_STATUS_INVALID_ARGUMENT;
  if (!g->sym_lo || !g->sym_hi)
    return gc_set_error(err, GRAPHC_STATUS_OUT_OF_MEMORY, "graph @%s has no symbol ranges", g->name);
  /* the range may also start at 0 where it started at 1 (the default): an empty batch is opt-in */
  int64_t floor_lo = g->sym_lo[i] == 1 ? 0 : g->sym_lo[i];
  if (lo < floor_lo || hi > g->sym_hi[i] || lo > hi)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT,
                        "cannot narrow the range of %s to %lld..%lld: it must lie within %lld..%lld",
                        symbol, (long long)lo, (long long)hi, (long long)g->sym_lo[i],
                        (long long)g->sym_hi[i]);
  if (g->sym_values[i] >= 0 && (g->sym_values[i] < lo || g->sym_values[i] > hi))
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT,
                        "cannot narrow the range of %s to %lld..%lld: it is bound to %lld", symbol,
                        (long long)lo, (long long)hi, (long long)g->sym_values[i]);
  g->sym_lo[i] = lo;
  g->sym_hi[i] = hi;
  if (err) memset(err, 0, sizeof *err);
  return GRAPHC_STATUS_OK;
}

/* Index of base symbol `symbol` of g, or -1 with err set (no such symbol, or a derived one). */
static int base_sym(const gc_graph *g, const char *symbol, const char *what, graphc_error_t *err) {
  for (int i = 0; i < g->n_syms; i++)
    if (strcmp(g->sym_names[i], symbol) == 0) {
      if (!g->sym_defs || !g->sym_defs[i]) return i;
      gc_sbuf b = {0};
      gc_sx_print(&b, g, g->sym_defs[i]);
      gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT,
                   "cannot %s %s: it is derived (%s = %s); bind the symbols it is computed from",
                   what, symbol, symbol, b.data ? b.data : "?");
      gc_sbuf_free(&b);
      return -1;
    }
  gc_sbuf b = {0};
  for (int i = 0; i < g->n_syms; i++) gc_sbuf_printf(&b, "%s%s", i ? ", " : "", g->sym_names[i]);
  gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graph @%s has no symbolic dim '%s' (it has: %s)",
               g->name, symbol, b.len ? b.data : "none");
  gc_sbuf_free(&b);
  return -1;
}

graphc_status_t graphc_model_set_weights(graphc_model_t *m, const char *path, graphc_error_t *err) {
  if (!m) return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_model_set_weights: NULL model");
  char *p = NULL;
  if (path && !(p = strdup(path))) return gc_set_error(err, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
  free(m->weights_override);
  m->weights_override = p;
  if (err) memset(err, 0, sizeof *err);
  return GRAPHC_STATUS_OK;
}

graphc_status_t graphc_model_print(const graphc_model_t *m, char **out, graphc_error_t *err) {
  if (!m || !out) return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_model_print: NULL argument");
  gc_sbuf b = {0};
  gc_print_module(&b, m->module);
  *out = gc_sbuf_take(&b);
  if (!*out) return gc_set_error(err, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
  if (err) memset(err, 0, sizeof *err);
  return GRAPHC_STATUS_OK;
}

/* ---- compilation ------------------------------------------------------------------ */
/* Resolve the weights path: the override as given, else the module's relative to
 * the model's directory (absolute paths kept). malloc'd; NULL when none. */
static char *weights_path(const graphc_model_t *m, const gc_module *mod) {
  if (m->weights_override) return strdup(m->weights_override);
  if (!mod->weights) return NULL;
  if (mod->weights[0] == '/' || !m->dir[0]) return strdup(mod->weights);
  size_t n = strlen(m->dir) + strlen(mod->weights) + 1;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s%s", m->dir, mod->weights);
  return p;
}

static int graph_has_params(const gc_graph *g) {
  for (const gc_op *op = g->first; op; op = op->next)
    if (op->opcode == GC_OP_PARAM) return 1;
  return 0;
}

/* Signature info (names point into the executable's module arena). */
static int fill_infos(gc_exec *exe) {
  gc_graph *g = exe->graph;
  exe->n_inputs = (size_t)g->n_args;
  exe->n_outputs = (size_t)g->n_outputs;
  exe->inputs = calloc(exe->n_inputs + 1, sizeof *exe->inputs);
  exe->outputs = calloc(exe->n_outputs + 1, sizeof *exe->outputs);
  if (!exe->inputs || !exe->outputs) return -1;
  for (int pass = 0; pass < 2; pass++) {
    int n = pass ? g->n_outputs : g->n_args;
    for (int i = 0; i < n; i++) {
      gc_value *v = pass ? g->outputs[i] : g->args[i];
      graphc_tensor_info_t *t = pass ? &exe->outputs[i] : &exe->inputs[i];
      t->name = pass && exe->out_names ? exe->out_names[i] : v->name;
      t->dtype = v->type.dtype;
      t->rank = v->type.rank;
      memcpy(t->dims, v->type.dims, sizeof t->dims);
      t->nbytes = (size_t)gc_type_numel(&v->type) * graphc_dtype_size(v->type.dtype);
    }
  }
  return 0;
}

/* The backend table for a kind; DEFAULT picks cuda when a device is present (the
 * driver rt names), else the best host backend this build has. */
static const gc_backend *backend_for(graphc_backend_t *kind, const gc_rt_settings *rt) {
  if (*kind == GRAPHC_BACKEND_DEFAULT)
    *kind = gc_cuda_available(rt) ? GRAPHC_BACKEND_CUDA
                                  : (gc_backend_cpu.prepare ? GRAPHC_BACKEND_CPU : GRAPHC_BACKEND_INTERP);
  switch (*kind) {
    case GRAPHC_BACKEND_INTERP: return &gc_backend_interp;
    case GRAPHC_BACKEND_CUDA: return &gc_backend_cuda;
    case GRAPHC_BACKEND_CPU: return gc_backend_cpu.prepare ? &gc_backend_cpu : NULL;
    default: return NULL;
  }
}

graphc_status_t graphc_compile(graphc_model_t *m, const graphc_compile_options_t *opts_in,
                               graphc_executable_t **out, graphc_error_t *err) {
  return gc_compile_for(m, opts_in, GRAPHC_BACKEND_DEFAULT, out, err);
}

/* A new executable for model m: the options (without the caller's strings, which the compile
 * has used by the time it returns), the file name and source for diagnostics. NULL with an
 * error in d when out of memory. */
static gc_exec *exec_new(const graphc_model_t *m, const graphc_compile_options_t *opts, gc_diags *d) {
  gc_exec *exe = calloc(1, sizeof *exe);
  if (!exe) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
    return NULL;
  }
  pthread_mutex_init(&exe->contexts_mu, NULL);  /* default attributes: cannot fail on Linux */
  exe->ctx = m->ctx;
  exe->opts = *opts;
  exe->opts.arch = exe->opts.print_after = exe->opts.print_before = exe->opts.disable_passes = NULL;
  exe->opts.keep_f32 = exe->opts.outputs = NULL;
  exe->file = strdup(m->name);
  exe->source = malloc(m->source_len + 1);
  if (!exe->file || !exe->source) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
    graphc_executable_destroy(exe);
    return NULL;
  }
  memcpy(exe->source, m->source, m->source_len + 1);
  exe->source_len = m->source_len;
  return exe;
}

graphc_status_t gc_compile_for(graphc_model_t *m, const graphc_compile_options_t *opts_in,
                               graphc_backend_t target, graphc_executable_t **out, graphc_error_t *err) {
  if (out) *out = NULL;
  if (!m || !out)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_compile: NULL model or out");
  graphc_compile_options_t opts;
  if (opts_in)
    opts = *opts_in;
  else
    graphc_compile_options_init(&opts);

  /* --tf32 and --precision tf32 are one setting */
  if (opts.precision == GRAPHC_PRECISION_TF32) opts.allow_tf32 = 1;
  if (opts.allow_tf32 && opts.precision == GRAPHC_PRECISION_F32) opts.precision = GRAPHC_PRECISION_TF32;

  gc_diags d;
  gc_diags_init(&d, m->name, m->source, m->source_len);
  if (gc_precision_check(&opts, &d) != 0) return finish(m->ctx, &d, err);
  gc_exec *exe = exec_new(m, &opts, &d);
  if (!exe) return finish(m->ctx, &d, err);
  gc_settings set;  /* this call's environment (a backend's prepare reads its own) */
  gc_settings_read(&set);
  /* cuInit (up to ~230 ms on an idle H200) runs beside parsing, weights and passes. */
  void *cuda_pre = opts.backend == GRAPHC_BACKEND_CUDA || opts.backend == GRAPHC_BACKEND_DEFAULT
                       ? gc_cuda_prefetch_start(&set.rt)
                       : NULL;
  exe->fuse = gc_lower_fusion_enabled(&opts);

  /* A private copy of the module (bound dims included), specialized to them. */
  exe->module = clone_and_verify(m, opts.outputs, &d);
  if (!exe->module) goto fail;
  exe->graph = exe->module->graphs[m->entry];
  if (gc_graph_specialize(exe->graph, &d) > 0 || gc_verify_graph(exe->graph, &d) > 0) goto fail;

  /* Weights: loaded once, checked against every param. */
  if (graph_has_params(exe->graph)) {
    char *wp = weights_path(m, exe->module);
    if (!wp && (m->weights_override || exe->module->weights)) {
      gc_error_at(&d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
      goto fail;
    }
    if (!wp) {
      const gc_op *p = exe->graph->first;
      while (p->opcode != GC_OP_PARAM) p = p->next;
      gc_error_at(&d, GRAPHC_STATUS_WEIGHTS_ERROR, p->loc,
                  "graph @%s has params but the file names no weights file (add `weights \"FILE\";` "
                  "or pass one with --weights)",
                  exe->graph->name);
      goto fail;
    }
    gc_diags wd;
    gc_diags_init(&wd, wp, NULL, 0);
    exe->weights = gc_weights_open(wp, &wd);  /* a file, a checkpoint folder or an index */
    for (int i = 0; i < wd.n; i++)
      gc_error_at(&d, wd.status ? wd.status : GRAPHC_STATUS_WEIGHTS_ERROR, (gc_loc){0, 0}, "%s",
                  wd.items[i].msg);
    if (wd.n_errors && wd.n == 0) /* the message itself could not be allocated */
      gc_error_at(&d, wd.status ? wd.status : GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0},
                  "%s: cannot load the weights (out of memory)", wp);
    gc_diags_free(&wd);
    free(wp);
    if (!exe->weights) goto fail;
    if (gc_weights_check(exe->graph, exe->weights, &d) > 0) goto fail;
  }

  /* Measured kernel configurations (graphc tune), read before any work on them. */
  if (opts.tuning && !(exe->tuning = gc_tuning_load(opts.tuning, &d))) goto fail;
  exe->opts.tuning = NULL;

  /* Graph-level passes, for the backend that will run the graph (the default one
   * resolved first: the passes' lowering choices depend on it). */
  if (opts.backend == GRAPHC_BACKEND_DEFAULT) {
    gc_cuda_prefetch_join(cuda_pre);
    cuda_pre = NULL;
    backend_for(&opts.backend, &set.rt);
  }
  graphc_compile_options_t popts = opts;
  if (target != GRAPHC_BACKEND_DEFAULT) popts.backend = target;
  exe->out_names = calloc((size_t)exe->graph->n_outputs + 1, sizeof *exe->out_names);
  if (!exe->out_names) {
    gc_error_at(&d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
    goto fail;
  }
  for (int i = 0; i < exe->graph->n_outputs; i++) exe->out_names[i] = exe->graph->outputs[i]->name;
  if (gc_run_pipeline(exe->graph, &popts, &exe->stats, &d) != 0) goto fail;

  if (fill_infos(exe) != 0) {
    gc_error_at(&d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
    goto fail;
  }
  gc_cuda_prefetch_join(cuda_pre);
  cuda_pre = NULL;
  exe->kind = opts.backend;
  exe->backend = backend_for(&exe->kind, &set.rt);
  if (!exe->backend) {
    if (exe->kind == GRAPHC_BACKEND_CPU)
      gc_error_at(&d, GRAPHC_STATUS_UNSUPPORTED, (gc_loc){0, 0},
                  "the cpu backend is not part of this build; use --backend interp");
    else
      gc_error_at(&d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0}, "unknown backend %d",
                  (int)opts.backend);
    goto fail;
  }
  if (exe->backend->prepare(exe, opts_in ? opts_in : &opts, &d) != GRAPHC_STATUS_OK ||
      d.n_errors || gc_exec_states_init(exe, &d) != GRAPHC_STATUS_OK || d.n_errors)
    goto fail;
  if (exe->kind == GRAPHC_BACKEND_CUDA) {
    pthread_mutex_lock(&m->ctx->mu);
    if (!m->ctx->cuda_hold) m->ctx->cuda_hold = gc_cuda_hold_open(&set.rt);
    pthread_mutex_unlock(&m->ctx->mu);
  }
  *out = exe;
  return finish(m->ctx, &d, err);

fail:
  gc_cuda_prefetch_join(cuda_pre);
  if (!d.n_errors) gc_error_at(&d, GRAPHC_STATUS_INTERNAL, (gc_loc){0, 0}, "compile failed");
  graphc_executable_destroy(exe);
  return finish(m->ctx, &d, err);
}

static graphc_status_t check_tensors(const char *what, const graphc_tensor_info_t *info,
                                     size_t n_info, const graphc_tensor_t *t, size_t n,
                                     graphc_error_t *err);

graphc_status_t graphc_compile_ranged(graphc_model_t *m, const graphc_compile_options_t *opts_in,
                                      graphc_executable_t **out, graphc_error_t *err) {
  if (out) *out = NULL;
  if (!m || !out)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_compile_ranged: NULL model or out");
  const gc_graph *mg = m->module->graphs[m->entry];
  int n_free = 0;
  for (int i = 0; i < mg->n_syms; i++)
    n_free += (!mg->sym_defs || !mg->sym_defs[i]) && mg->sym_values[i] == GC_SYM_UNBOUND;
  if (!n_free) return graphc_compile(m, opts_in, out, err);  /* nothing left to range over */
  graphc_compile_options_t opts;
  if (opts_in)
    opts = *opts_in;
  else
    graphc_compile_options_init(&opts);
  gc_diags d;
  gc_diags_init(&d, m->name, m->source, m->source_len);
  if (gc_precision_check(&opts, &d) != 0) return finish(m->ctx, &d, err);
  gc_settings set;
  gc_settings_read(&set);
  graphc_backend_t kind = opts.backend;
  if (!backend_for(&kind, &set.rt)) {
    gc_error_at(&d, GRAPHC_STATUS_UNSUPPORTED, (gc_loc){0, 0}, "the %s backend is not part of this build",
                graphc_backend_name(kind));
    return finish(m->ctx, &d, err);
  }
  opts.backend = kind;  /* every binding compiles for the same backend */
  gc_exec *exe = exec_new(m, &opts, &d);
  if (!exe) return finish(m->ctx, &d, err);
  exe->opts.tuning = NULL;
  exe->kind = kind;
  if (!(exe->module = clone_and_verify(m, opts.outputs, &d))) goto fail;
  exe->graph = exe->module->graphs[m->entry];
  for (const gc_op *op = exe->graph->first; op; op = op->next)
    if (op->opcode == GC_OP_STATE) {
      gc_error_at(&d, GRAPHC_STATUS_UNSUPPORTED, op->loc,
                  "a graph with states cannot be compiled for a range yet: bind its symbolic dims");
      goto fail;
    }
  if (gc_ranged_setup(exe, m, &opts, &d) != GRAPHC_STATUS_OK) goto fail;
  *out = exe;
  return finish(m->ctx, &d, err);
fail:
  graphc_executable_destroy(exe);
  return finish(m->ctx, &d, err);
}

graphc_status_t graphc_executable_resolve(graphc_executable_t *exe, const graphc_tensor_t *inputs,
                                          size_t n_inputs, graphc_tensor_info_t *outputs, size_t n_outputs,
                                          graphc_error_t *err) {
  if (!exe || (n_outputs && !outputs) || (n_inputs && !inputs))
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_executable_resolve: NULL argument");
  /* shapes only: the inputs' buffers are not read, so check them as if each had one */
  graphc_tensor_t *shapes = calloc(n_inputs + 1, sizeof *shapes);
  if (!shapes) return gc_set_error(err, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
  for (size_t i = 0; i < n_inputs; i++) {
    shapes[i] = inputs[i];
    shapes[i].data = shapes;
    shapes[i].nbytes = SIZE_MAX;
  }
  graphc_status_t st = check_tensors("inputs", exe->inputs, exe->n_inputs, shapes, n_inputs, err);
  free(shapes);
  if (st != GRAPHC_STATUS_OK) return st;
  if (n_outputs != exe->n_outputs)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "expected %zu outputs, got %zu", exe->n_outputs,
                        n_outputs);
  if (!gc_exec_is_ranged(exe)) {
    memcpy(outputs, exe->outputs, sizeof *outputs * n_outputs);
    if (err) memset(err, 0, sizeof *err);
    return GRAPHC_STATUS_OK;
  }
  gc_diags d;
  gc_diags_init(&d, exe->file, exe->source, exe->source_len);
  gc_ranged_resolve(exe, inputs, outputs, &d);
  return finish(exe->ctx, &d, err);
}

void graphc_executable_destroy(graphc_executable_t *exe) {
  if (!exe) return;
  gc_exec_contexts_free(exe);
  if (exe->backend) exe->backend->release(exe);
  gc_states_unref(exe->states);  /* after the backend: its work on them has finished */
  pthread_mutex_destroy(&exe->contexts_mu);
  gc_module_free(exe->module);
  gc_safetensors_free(exe->weights);
  gc_tuning_free(exe->tuning);
  free(exe->inputs);
  free(exe->outputs);
  free(exe->out_names);
  free(exe->file);
  free(exe->source);
  gc_sbuf_free(&exe->stats);
  free(exe);
}

graphc_backend_t graphc_executable_backend(const graphc_executable_t *exe) {
  return exe ? exe->kind : GRAPHC_BACKEND_DEFAULT;
}
size_t graphc_executable_num_inputs(const graphc_executable_t *exe) { return exe ? exe->n_inputs : 0; }
size_t graphc_executable_num_outputs(const graphc_executable_t *exe) { return exe ? exe->n_outputs : 0; }

graphc_status_t graphc_executable_input_info(const graphc_executable_t *exe, size_t i,
                                             graphc_tensor_info_t *info) {
  if (!exe || !info || i >= exe->n_inputs) return GRAPHC_STATUS_INVALID_ARGUMENT;
  *info = exe->inputs[i];
  return GRAPHC_STATUS_OK;
}

graphc_status_t graphc_executable_output_info(const graphc_executable_t *exe, size_t i,
                                              graphc_tensor_info_t *info) {
  if (!exe || !info || i >= exe->n_outputs) return GRAPHC_STATUS_INVALID_ARGUMENT;
  *info = exe->outputs[i];
  return GRAPHC_STATUS_OK;
}

const char *graphc_executable_stats(const graphc_executable_t *exe) {
  if (gc_exec_is_ranged(exe)) return gc_ranged_stats((graphc_executable_t *)exe);  /* assembled on demand */
  return exe && exe->stats.data ? exe->stats.data : "";
}

/* ---- running ---------------------------------------------------------------------- */
static void shape_str(char *buf, size_t n, graphc_dtype_t dt, int rank, const int64_t *dims) {
  if (rank < 0 || rank > GC_MAX_RANK || !graphc_dtype_name(dt)) {
    snprintf(buf, n, "<invalid dtype %d / rank %d>", (int)dt, rank);
    return;
  }
  size_t k = (size_t)snprintf(buf, n, "%s[", graphc_dtype_name(dt));
  for (int i = 0; i < rank && k < n; i++)  /* -1: a ranged executable's free dim, "?" */
    k += dims[i] == -1 ? (size_t)snprintf(buf + k, n - k, "%s?", i ? ", " : "")
                       : (size_t)snprintf(buf + k, n - k, "%s%lld", i ? ", " : "", (long long)dims[i]);
  if (k < n) snprintf(buf + k, n - k, "]");
}

/* Check caller tensors against the signature: count, dtype, shape, nbytes, data. */
static graphc_status_t check_tensors(const char *what, const graphc_tensor_info_t *info,
                                     size_t n_info, const graphc_tensor_t *t, size_t n,
                                     graphc_error_t *err) {
  if (n != n_info)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "expected %zu %s, got %zu", n_info,
                        what, n);
  if (n && !t)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "%s array is NULL", what);
  for (size_t i = 0; i < n; i++) {
    const graphc_tensor_info_t *e = &info[i];
    int same = t[i].dtype == e->dtype && t[i].rank == e->rank;
    /* a ranged executable's symbolic dims are -1: the binding's executable checks them */
    for (int k = 0; same && k < e->rank; k++) same = t[i].dims[k] == e->dims[k] || e->dims[k] == -1;
    if (!same) {
      char got[256], want[256];
      shape_str(got, sizeof got, t[i].dtype, t[i].rank, t[i].dims);
      shape_str(want, sizeof want, e->dtype, e->rank, e->dims);
      return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "%s %zu (%%%s): expected %s, got %s",
                          what, i, e->name, want, got);
    }
    if (!t[i].data && e->nbytes)  /* an empty tensor (a zero dim) may have no buffer */
      return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "%s %zu (%%%s): data is NULL", what,
                          i, e->name);
    if (t[i].nbytes < e->nbytes)
      return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT,
                          "%s %zu (%%%s): buffer has %zu bytes, needs %zu", what, i, e->name,
                          t[i].nbytes, e->nbytes);
  }
  return GRAPHC_STATUS_OK;
}

graphc_status_t graphc_executable_run(graphc_executable_t *exe, const graphc_tensor_t *inputs,
                                      size_t n_inputs, graphc_tensor_t *outputs, size_t n_outputs,
                                      graphc_error_t *err) {
  if (!exe) return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_executable_run: NULL executable");
  graphc_status_t st = check_tensors("inputs", exe->inputs, exe->n_inputs, inputs, n_inputs, err);
  if (st == GRAPHC_STATUS_OK)
    st = check_tensors("outputs", exe->outputs, exe->n_outputs, outputs, n_outputs, err);
  if (st != GRAPHC_STATUS_OK) return st;
  gc_diags d;
  gc_diags_init(&d, exe->file, exe->source, exe->source_len);
  st = exe->backend->run(exe, inputs, outputs, &d);
  if (st != GRAPHC_STATUS_OK && !d.n_errors)
    gc_error_at(&d, st, (gc_loc){0, 0}, "%s backend: run failed", exe->backend->name);
  return finish(exe->ctx, &d, err);
}

/* Shared body of run_device and enqueue: check, then the backend's entry (NULL: a
 * backend without device memory, UNSUPPORTED). */
static graphc_status_t run_on_device(graphc_executable_t *exe, const char *call,
                                     const graphc_tensor_t *inputs, size_t n_inputs,
                                     graphc_tensor_t *outputs, size_t n_outputs, int async,
                                     void *stream, graphc_error_t *err) {
  if (!exe) return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "%s: NULL executable", call);
  graphc_status_t st = check_tensors("inputs", exe->inputs, exe->n_inputs, inputs, n_inputs, err);
  if (st == GRAPHC_STATUS_OK)
    st = check_tensors("outputs", exe->outputs, exe->n_outputs, outputs, n_outputs, err);
  if (st != GRAPHC_STATUS_OK) return st;
  if (async ? !exe->backend->enqueue : !exe->backend->run_device)
    return gc_set_error(err, GRAPHC_STATUS_UNSUPPORTED,
                        "%s: the %s backend has no device memory or streams: use "
                        "graphc_executable_run", call, exe->backend->name);
  gc_diags d;
  gc_diags_init(&d, exe->file, exe->source, exe->source_len);
  st = async ? exe->backend->enqueue(exe, inputs, outputs, stream, &d)
             : exe->backend->run_device(exe, inputs, outputs, &d);
  if (st != GRAPHC_STATUS_OK && !d.n_errors)
    gc_error_at(&d, st, (gc_loc){0, 0}, "%s backend: %s failed", exe->backend->name, call);
  return finish(exe->ctx, &d, err);
}

graphc_status_t graphc_executable_run_device(graphc_executable_t *exe,
                                             const graphc_tensor_t *inputs, size_t n_inputs,
                                             graphc_tensor_t *outputs, size_t n_outputs,
                                             graphc_error_t *err) {
  return run_on_device(exe, "graphc_executable_run_device", inputs, n_inputs, outputs, n_outputs,
                       0, NULL, err);
}

graphc_status_t graphc_executable_enqueue(graphc_executable_t *exe, const graphc_tensor_t *inputs,
                                          size_t n_inputs, graphc_tensor_t *outputs,
                                          size_t n_outputs, void *stream, graphc_error_t *err) {
  return run_on_device(exe, "graphc_executable_enqueue", inputs, n_inputs, outputs, n_outputs, 1,
                       stream, err);
}

/* ---- the interpreter backend ------------------------------------------------------- */
static graphc_status_t interp_prepare(gc_exec *exe, const graphc_compile_options_t *o, gc_diags *d) {
  return GRAPHC_STATUS_OK;
}

const gc_backend gc_backend_interp = {.name = "interp",
                                      .prepare = interp_prepare,
                                      .run = gc_interp_states_run,
                                      .states_new = gc_interp_states_new,
                                      .bind_states = gc_interp_bind_states,
                                      .release = gc_interp_states_free};

/* ---- model utilities: specialize, random weights, emit ------------------------------ */
graphc_status_t graphc_model_specialize(graphc_model_t *m, graphc_error_t *err) {
  if (!m) return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_model_specialize: NULL model");
  gc_diags d;
  gc_diags_init(&d, m->name, m->source, m->source_len);
  gc_graph *g = m->module->graphs[m->entry];
  if (gc_graph_specialize(g, &d) == 0) gc_verify_graph(g, &d);
  return finish(m->ctx, &d, err);
}

graphc_status_t graphc_model_write_random_weights(graphc_model_t *m, const char *path,
                                                  uint64_t seed, graphc_error_t *err) {
  if (!m || !path)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_model_write_random_weights: NULL argument");
  gc_diags d;
  gc_diags_init(&d, m->name, m->source, m->source_len);
  gc_weights_write_random(m->module->graphs[m->entry], path, seed, &d);
  return finish(m->ctx, &d, err);
}

/* Parse "sm_90" / "sm_90a" into 90; 0 when malformed. */
int gc_parse_arch(const char *arch) {
  if (!arch || strncmp(arch, "sm_", 3) != 0) return 0;
  char *end;
  long v = strtol(arch + 3, &end, 10);
  if (end == arch + 3 || (*end && strcmp(end, "a") != 0) || v < 50 || v > 200) return 0;
  return (int)v;
}

/* Monotonic milliseconds (graphc_model_emit's --time-passes report). */
static double emit_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

graphc_status_t graphc_model_emit(graphc_model_t *m, const graphc_compile_options_t *opts_in,
                                  const char *what, void **out, size_t *len, graphc_error_t *err) {
  if (!m || !what || !out || !len)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_model_emit: NULL argument");
  *out = NULL;
  *len = 0;
  graphc_compile_options_t opts;
  if (opts_in)
    opts = *opts_in;
  else
    graphc_compile_options_init(&opts);
  int sm = opts.arch ? gc_parse_arch(opts.arch) : 90;
  if (!sm)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "bad --arch '%s' (expected e.g. sm_90)", opts.arch);
  int kind = strcmp(what, "kir") == 0 ? 0 : strcmp(what, "cuda") == 0 ? 1 : strcmp(what, "llvm") == 0 ? 2
           : strcmp(what, "ptx") == 0 ? 3 : strcmp(what, "cubin") == 0 ? 4 : -1;
  if (kind < 0)
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT,
                        "cannot emit '%s' (kir, cuda, llvm, ptx, cubin)", what);
  gc_settings set;
  gc_settings_read(&set);
  gc_toolchain tc;
  gc_settings_toolchain(&set, &tc);
  gc_diags d;
  gc_diags_init(&d, m->name, m->source, m->source_len);
  gc_sbuf stats = {0};
  gc_plan *plan = NULL;
  gc_tuning *tuning = NULL;
  double t0 = emit_now_ms();
  gc_module *mod = opts.tuning && !(tuning = gc_tuning_load(opts.tuning, &d))
                       ? NULL
                       : clone_and_verify(m, opts.outputs, &d);
  gc_sbuf_printf(&stats, "time: clone + verify %.2f ms\n", emit_now_ms() - t0);
  if (mod) {
    gc_graph *g = mod->graphs[m->entry];
    graphc_compile_options_t popts = opts;  /* passes as for the cuda backend */
    popts.backend = GRAPHC_BACKEND_CUDA;
    if (opts.precision == GRAPHC_PRECISION_TF32) opts.allow_tf32 = 1;
    if (gc_graph_specialize(g, &d) == 0 && gc_verify_graph(g, &d) == 0 &&
        gc_run_pipeline(g, &popts, &stats, &d) == 0) {
      kir_target t;
      kir_target_cuda(&t, sm);
      gc_settings_apply_target(&set, &t);
      t.tf32 = opts.allow_tf32;
      t.tuning = tuning;
      t0 = emit_now_ms();
      plan = gc_lower_opts(g, &t, gc_lower_fusion_enabled(&opts), &d);
      gc_sbuf_printf(&stats, "time: lower %.2f ms\n", emit_now_ms() - t0);
    }
  }
  if (plan) {
    gc_sbuf b = {0};
    char *text = NULL;
    int rc = 0;
    int llvm = gc_codegen_resolve(opts.codegen) == GRAPHC_CODEGEN_LLVM;
    switch (kind) {
      case 0:
        for (int i = 0; i < plan->kir->n_kernels; i++) kir_print(&b, plan->kir->kernels[i]);
        break;
      case 1: gc_cuda_c_print(&b, plan->kir); break;
      case 2: rc = gc_llvm_ptx(plan->kir, sm, NULL, &text, &tc, &d); break;
      case 3:
      case 4:
        if (llvm) {
          gc_llvm_times lt;
          rc = gc_llvm_ptx_ex(plan->kir, sm, NULL, &text, &lt, &tc, &d);
          gc_sbuf_printf(&stats,
                         "time: llvm nvptx %.2f ms (%d kernels, %d threads; cpu ms: emit %.2f, "
                         "libdevice %.2f, optimize O3 %.2f, codegen %.2f)\n",
                         lt.wall, lt.kernels, lt.threads, lt.emit, lt.libdevice, lt.optimize,
                         lt.codegen);
          if (rc == 0 && kind == 4) {
            t0 = emit_now_ms();
            const char *via = "nvjitlink";
            rc = gc_ptx_to_cubin_ex(text, gc_module_sm(plan->kir, sm), out, len, &via, &tc, &d);
            gc_sbuf_printf(&stats, "time: %s %.2f ms\n", via, emit_now_ms() - t0);
            free(text);
            text = NULL;
          }
        } else {
          gc_cuda_c_print(&b, plan->kir);
          char *src = gc_sbuf_take(&b);
          t0 = emit_now_ms();
          rc = src ? gc_nvrtc_compile(src, gc_module_sm(plan->kir, sm), kind == 3 ? &text : NULL,
                                      kind == 4 ? out : NULL, kind == 4 ? len : NULL, &tc, &d)
                   : -1;
          gc_sbuf_printf(&stats, "time: nvrtc %.2f ms\n", emit_now_ms() - t0);
          free(src);
        }
        break;
    }
    if (rc == 0 && !*out) {
      if (text) {
        *out = text;
        *len = strlen(text);
        text = NULL;
      } else {
        *len = b.len;
        *out = gc_sbuf_take(&b);
        if (!*out) gc_error_at(&d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
      }
    }
    free(text);
    gc_sbuf_free(&b);
    gc_plan_free(plan);
  }
  if (opts.time_passes && stats.data) fputs(stats.data, stderr);  /* like --print-after */
  gc_sbuf_free(&stats);
  gc_module_free(mod);
  gc_tuning_free(tuning);
  if (!d.n_errors && !*out) gc_error_at(&d, GRAPHC_STATUS_INTERNAL, (gc_loc){0, 0}, "emit failed");
  graphc_status_t st = finish(m->ctx, &d, err);
  if (st != GRAPHC_STATUS_OK) {
    free(*out);
    *out = NULL;
    *len = 0;
  }
  return st;
}

/* ---- for driver/exec_context.c ------------------------------------------------------ */
graphc_status_t gc_api_check_io(const gc_exec *exe, const graphc_tensor_t *inputs, size_t n_inputs,
                                const graphc_tensor_t *outputs, size_t n_outputs, graphc_error_t *err) {
  graphc_status_t st = check_tensors("inputs", exe->inputs, exe->n_inputs, inputs, n_inputs, err);
  if (st == GRAPHC_STATUS_OK)
    st = check_tensors("outputs", exe->outputs, exe->n_outputs, outputs, n_outputs, err);
  return st;
}

graphc_status_t gc_api_finish(graphc_context_t *ctx, gc_diags *d, graphc_error_t *err) {
  return finish(ctx, d, err);
}
