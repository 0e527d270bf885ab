/* ranged.c - graphc_compile_ranged: one executable for every binding of a model's unbound
 * symbolic dims within their ranges (issue 35's "compile once, run any batch and sequence").
 *
 * A ranged executable is a gc_exec whose backend is the table below. It keeps a private copy of
 * the model (its symbolic module, the dims the caller did bind, the ranges) and a small cache of
 * specialized executables, one per binding, least recently used out first (GC_RANGED_CACHE).
 * A run binds the free symbols from the inputs' shapes (graphc_model_bind_inputs: mismatched
 * ranks, inputs that disagree on a symbol and values out of range are errors there), finds the
 * binding's executable or compiles it (the compile cache, driver/cache.c, makes a binding seen
 * by an earlier process cheap), and runs it; the specialized executable checks the tensors.
 * Kernels are therefore always specialized to their shapes (as fast as an executable compiled
 * for exactly that shape); what a new binding costs is one compile on its first run. Memory is
 * planned per binding. Execution contexts and graphs with states are not supported yet.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "driver/exec.h"

#define GC_RANGED_CACHE 8

typedef struct ranged_entry {
  int64_t *key;              /* the free symbols' values */
  graphc_executable_t *exe;  /* NULL: an empty slot */
  uint64_t last_use;
} ranged_entry;

typedef struct gc_ranged {
  graphc_model_t model;      /* private: owns its strings and module */
  graphc_compile_options_t opts;
  char *arch, *tuning, *keep_f32, *disable;  /* copies of the options' strings */
  int n_free, *free_syms;    /* the symbols bound per run */
  const char **in_names;     /* the inputs' names, for graphc_model_bind_inputs */
  int64_t *key;              /* this run's values of the free symbols (scratch, under mu) */
  ranged_entry cache[GC_RANGED_CACHE];
  uint64_t clock;
  ranged_entry *last;        /* the last run's binding (stats) */
  long compiles, hits, evictions;
  pthread_mutex_t mu;
} gc_ranged;

static char *dup_or_null(const char *s, int *bad) {
  if (!s) return NULL;
  char *c = strdup(s);
  if (!c) *bad = 1;
  return c;
}

/* The executable of the binding the inputs give (compiled on a miss). NULL with errors in d. */
static graphc_executable_t *resolve(gc_exec *exe, const graphc_tensor_t *in, gc_diags *d) {
  gc_ranged *r = exe->state;
  gc_graph *g = r->model.module->graphs[r->model.entry];
  graphc_error_t err;
  for (int k = 0; k < r->n_free; k++) g->sym_values[r->free_syms[k]] = GC_SYM_UNBOUND;
  graphc_status_t st = graphc_model_bind_inputs(&r->model, exe->n_inputs, r->in_names, in, &err);
  if (st != GRAPHC_STATUS_OK) {
    gc_error_at(d, st, (gc_loc){0, 0}, "%s", err.message);
    return NULL;
  }
  int64_t *key = r->key;
  for (int k = 0; k < r->n_free; k++) key[k] = g->sym_values[r->free_syms[k]];
  ranged_entry *e = NULL, *victim = &r->cache[0];
  for (int i = 0; i < GC_RANGED_CACHE && !e; i++) {
    ranged_entry *c = &r->cache[i];
    if (c->exe && memcmp(c->key, key, sizeof *key * (size_t)r->n_free) == 0) e = c;
    if (!c->exe ? victim->exe != NULL : victim->exe && c->last_use < victim->last_use) victim = c;
  }
  if (e) {
    r->hits++;
  } else {
    graphc_executable_t *x = NULL;
    int64_t *kept = malloc(sizeof *kept * (size_t)(r->n_free + 1));
    if (!kept) {
      gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
      return NULL;
    }
    memcpy(kept, key, sizeof *key * (size_t)r->n_free);
    if ((st = graphc_compile(&r->model, &r->opts, &x, &err)) != GRAPHC_STATUS_OK) {
      gc_error_at(d, st, (gc_loc){err.line, err.col}, "%s", err.message);
      free(kept);
      return NULL;
    }
    if (victim->exe) r->evictions++;
    if (r->last == victim) r->last = NULL;
    graphc_executable_destroy(victim->exe);
    free(victim->key);
    *victim = (ranged_entry){kept, x, 0};
    e = victim;
    r->compiles++;
  }
  e->last_use = ++r->clock;
  r->last = e;
  return e->exe;
}

const char *gc_ranged_stats(gc_exec *exe) {
  gc_ranged *r = exe->state;
  pthread_mutex_lock(&r->mu);
  if (r->last) {  /* built here, not per run: the ranged line, then the last binding's own */
    gc_graph *g = exe->graph;
    gc_sbuf_free(&exe->stats);
    gc_sbuf_printf(&exe->stats, "ranged: %ld binding%s compiled, %ld runs from the cache, %ld evicted; last run:",
                   r->compiles, r->compiles == 1 ? "" : "s", r->hits, r->evictions);
    for (int k = 0; k < r->n_free; k++)
      gc_sbuf_printf(&exe->stats, " %s=%lld", g->sym_names[r->free_syms[k]], (long long)r->last->key[k]);
    gc_sbuf_printf(&exe->stats, "\n%s", graphc_executable_stats(r->last->exe));
  }
  pthread_mutex_unlock(&r->mu);
  return exe->stats.data ? exe->stats.data : "";
}

/* Run the binding's executable (kind 0 host tensors, 1 device, 2 enqueue) under the lock. */
static graphc_status_t ranged_call(gc_exec *exe, int kind, const graphc_tensor_t *in, graphc_tensor_t *out,
                                   void *stream, gc_diags *d) {
  gc_ranged *r = exe->state;
  pthread_mutex_lock(&r->mu);
  graphc_executable_t *x = resolve(exe, in, d);
  graphc_status_t st = d->n_errors ? d->status : GRAPHC_STATUS_INTERNAL;
  if (x) {
    graphc_error_t err;
    st = kind == 0   ? graphc_executable_run(x, in, exe->n_inputs, out, exe->n_outputs, &err)
         : kind == 1 ? graphc_executable_run_device(x, in, exe->n_inputs, out, exe->n_outputs, &err)
                     : graphc_executable_enqueue(x, in, exe->n_inputs, out, exe->n_outputs, stream, &err);
    if (st != GRAPHC_STATUS_OK) gc_error_at(d, st, (gc_loc){err.line, err.col}, "%s", err.message);
  }
  pthread_mutex_unlock(&r->mu);
  return st;
}

static graphc_status_t ranged_run(gc_exec *exe, const graphc_tensor_t *in, graphc_tensor_t *out, gc_diags *d) {
  return ranged_call(exe, 0, in, out, NULL, d);
}
static graphc_status_t ranged_run_device(gc_exec *exe, const graphc_tensor_t *in, graphc_tensor_t *out,
                                         gc_diags *d) {
  return ranged_call(exe, 1, in, out, NULL, d);
}
static graphc_status_t ranged_enqueue(gc_exec *exe, const graphc_tensor_t *in, graphc_tensor_t *out,
                                      void *stream, gc_diags *d) {
  return ranged_call(exe, 2, in, out, stream, d);
}

static void ranged_release(gc_exec *exe) {
  gc_ranged *r = exe->state;
  if (!r) return;
  for (int i = 0; i < GC_RANGED_CACHE; i++) {
    graphc_executable_destroy(r->cache[i].exe);
    free(r->cache[i].key);
  }
  r->model.module = NULL;  /* exe->module: freed by graphc_executable_destroy */
  free(r->model.name);
  free(r->model.dir);
  free(r->model.source);
  free(r->model.weights_override);
  free(r->arch);
  free(r->tuning);
  free(r->keep_f32);
  free(r->disable);
  free(r->free_syms);
  free(r->in_names);
  free(r->key);
  pthread_mutex_destroy(&r->mu);
  free(r);
  exe->state = NULL;
}

static graphc_status_t ranged_prepare(gc_exec *exe, const graphc_compile_options_t *o, gc_diags *d) {
  (void)exe, (void)o;
  gc_error_at(d, GRAPHC_STATUS_INTERNAL, (gc_loc){0, 0}, "a ranged executable is made by graphc_compile_ranged");
  return GRAPHC_STATUS_INTERNAL;
}

static const gc_backend gc_backend_ranged = {
    .name = "ranged", .prepare = ranged_prepare, .run = ranged_run, .run_device = ranged_run_device,
    .enqueue = ranged_enqueue, .release = ranged_release};

int gc_exec_is_ranged(const gc_exec *exe) { return exe && exe->backend == &gc_backend_ranged; }

graphc_status_t gc_ranged_resolve(gc_exec *exe, const graphc_tensor_t *in, graphc_tensor_info_t *out, gc_diags *d) {
  gc_ranged *r = exe->state;
  pthread_mutex_lock(&r->mu);
  graphc_executable_t *x = resolve(exe, in, d);
  for (size_t i = 0; x && i < exe->n_outputs; i++) {
    graphc_executable_output_info(x, i, &out[i]);
    out[i].name = exe->outputs[i].name;  /* the ranged executable's: they outlive an eviction */
  }
  pthread_mutex_unlock(&r->mu);
  return x ? GRAPHC_STATUS_OK : d->status ? d->status : GRAPHC_STATUS_INTERNAL;
}

graphc_status_t gc_ranged_setup(gc_exec *exe, const graphc_model_t *m, const graphc_compile_options_t *opts,
                                gc_diags *d) {
  gc_ranged *r = calloc(1, sizeof *r);
  if (!r) goto oom;
  pthread_mutex_init(&r->mu, NULL);
  exe->state = r;
  exe->backend = &gc_backend_ranged;
  gc_graph *g = exe->graph;
  r->free_syms = calloc((size_t)g->n_syms + 1, sizeof *r->free_syms);
  if (!r->free_syms) goto oom;
  for (int i = 0; i < g->n_syms; i++)
    if ((!g->sym_defs || !g->sym_defs[i]) && g->sym_values[i] == GC_SYM_UNBOUND) r->free_syms[r->n_free++] = i;
  int bad = 0;
  r->model = (graphc_model_t){.ctx = m->ctx, .module = exe->module, .entry = m->entry};
  r->model.name = dup_or_null(m->name, &bad);
  r->model.dir = dup_or_null(m->dir, &bad);
  r->model.weights_override = dup_or_null(m->weights_override, &bad);
  r->model.source = malloc(m->source_len + 1);
  if (r->model.source) memcpy(r->model.source, m->source, m->source_len + 1);
  r->model.source_len = m->source_len;
  r->opts = *opts;
  r->opts.arch = r->arch = dup_or_null(opts->arch, &bad);
  r->opts.tuning = r->tuning = dup_or_null(opts->tuning, &bad);
  r->opts.keep_f32 = r->keep_f32 = dup_or_null(opts->keep_f32, &bad);
  r->opts.disable_passes = r->disable = dup_or_null(opts->disable_passes, &bad);
  r->opts.print_after = r->opts.print_before = NULL;
  r->opts.outputs = NULL;  /* the module's entry returns only those already */
  if (bad || !r->model.source) goto oom;
  /* inputs and outputs: names and dtypes; a symbolic dim is -1 and the size 0 */
  exe->n_inputs = (size_t)g->n_args;
  exe->n_outputs = (size_t)g->n_outputs;
  exe->inputs = calloc(exe->n_inputs + 1, sizeof *exe->inputs);
  exe->outputs = calloc(exe->n_outputs + 1, sizeof *exe->outputs);
  r->in_names = calloc(exe->n_inputs + 1, sizeof *r->in_names);
  r->key = calloc((size_t)r->n_free + 1, sizeof *r->key);
  if (!exe->inputs || !exe->outputs || !r->in_names || !r->key) goto oom;
  for (int i = 0; i < g->n_args; i++) r->in_names[i] = g->args[i]->name;
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < (pass ? g->n_outputs : g->n_args); i++) {
      const gc_value *v = pass ? g->outputs[i] : g->args[i];
      graphc_tensor_info_t *t = pass ? &exe->outputs[i] : &exe->inputs[i];
      t->name = v->name;
      t->dtype = v->type.dtype;
      t->rank = v->type.rank;
      int free_dims = 0;
      for (int k = 0; k < v->type.rank; k++) {
        int64_t dim = v->type.dims[k];
        int s = GC_DIM_IS_SYM(dim) ? GC_DIM_SYM_INDEX(dim) : -1;
        int bound = s >= 0 && (!g->sym_defs || !g->sym_defs[s]) && g->sym_values[s] != GC_SYM_UNBOUND;
        t->dims[k] = s < 0 ? dim : bound ? g->sym_values[s] : -1;
        free_dims += t->dims[k] == -1;
      }
      t->nbytes = 0;
      if (!free_dims) {
        gc_type c = v->type;
        memcpy(c.dims, t->dims, sizeof c.dims);
        t->nbytes = (size_t)gc_type_numel(&c) * graphc_dtype_size(t->dtype);
      }
    }
  gc_sbuf_printf(&exe->stats, "ranged: nothing compiled yet (%d free symbolic dim%s)\n", r->n_free,
                 r->n_free == 1 ? "" : "s");
  return GRAPHC_STATUS_OK;
oom:
  gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
  return GRAPHC_STATUS_OUT_OF_MEMORY;
}
