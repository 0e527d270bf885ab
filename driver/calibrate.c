/* calibrate.c - graphc_model_calibrate: static activation ranges for --precision fp8, the way
 * TensorRT's calibrators set a tensor's dynamic range from sample inputs.
 *
 * A private copy of the model is bound to the sample inputs' shapes and specialized; every
 * linear --precision fp8 would quantize (gc_fp8_linear, passes/precision_fp8.c) gets an extra
 * graph output, max |x| of its activation operand (reduce_max of abs, in f32); that graph is
 * compiled as written (f32, no tf32) for the options' backend and run once on the samples.
 * Each measured maximum goes into the model's own matmul as its `act_amax` attribute (the
 * larger of the old and the new one, so several calls calibrate on several batches), which
 * the fp8 pass turns into a constant per-tensor scale. The attribute is part of the model:
 * graphc_model_print shows it and the printed text keeps it.
 */
#include <stdlib.h>
#include <string.h>

#include "driver/exec.h"
#include "passes/pipeline.h"

/* A new op after the ops of g with one result of type t (a fresh name). */
static gc_value *add_op(gc_graph *g, gc_opcode opc, gc_value *in, int n_at, const gc_named_attr *at,
                        const gc_type *t) {
  gc_op *o = gc_op_new(g, opc, 1, &in, 1, NULL, in->loc);
  if (!o) return NULL;
  if (n_at) gc_op_set_attrs(g, o, n_at, at);
  o->results[0]->type = *t;
  return o->results[0];
}

/* Add max |x| of each fp8 linear's activation as an output of g; names[i] gets the i-th
 * linear's result name. Returns the count, or -1 when out of memory. */
static int instrument(gc_graph *g, const char ***names) {
  int n = 0;
  for (gc_op *op = g->first; op; op = op->next) n += gc_fp8_linear(op) > 0;
  *names = NULL;
  if (!n) return 0;
  gc_value **outs = gc_arena_alloc(&g->arena, sizeof *outs * (size_t)(g->n_outputs + n));
  gc_type *types = gc_arena_alloc(&g->arena, sizeof *types * (size_t)(g->n_result_types + n));
  const char **nm = calloc((size_t)n, sizeof *nm);
  if (!outs || !types || !nm) {
    free(nm);
    return -1;
  }
  memcpy(outs, g->outputs, sizeof *outs * (size_t)g->n_outputs);
  memcpy(types, g->result_types, sizeof *types * (size_t)g->n_result_types);
  gc_op *last = g->last;
  int k = 0;
  for (gc_op *op = g->first; op; op = op == last ? NULL : op->next) {
    if (gc_fp8_linear(op) <= 0) continue;
    gc_value *x = op->operands[0];
    gc_type t = x->type;
    t.dtype = GRAPHC_DTYPE_F32;
    if (x->type.dtype != GRAPHC_DTYPE_F32) {
      gc_named_attr to = {"to", {.kind = GC_ATTR_DTYPE, .u.dt = GRAPHC_DTYPE_F32}};
      x = add_op(g, GC_OP_CAST, x, 1, &to, &t);
    }
    gc_value *a = x ? add_op(g, GC_OP_ABS, x, 0, NULL, &t) : NULL;
    gc_attr ax = {.kind = GC_ATTR_LIST, .u.list = {gc_arena_alloc(&g->arena, sizeof(gc_attr) * GC_MAX_RANK), t.rank}};
    for (int i = 0; ax.u.list.items && i < t.rank; i++)
      ax.u.list.items[i] = (gc_attr){.kind = GC_ATTR_INT, .u.i = i};
    gc_named_attr red[2] = {{"axes", ax}, {"keepdims", {.kind = GC_ATTR_BOOL, .u.b = 0}}};
    gc_type s = {.dtype = GRAPHC_DTYPE_F32, .rank = 0};
    gc_value *m = a && ax.u.list.items ? add_op(g, GC_OP_REDUCE_MAX, a, 2, red, &s) : NULL;
    if (!m) {
      free(nm);
      return -1;
    }
    nm[k] = op->results[0]->name;
    outs[g->n_outputs + k] = m;
    types[g->n_result_types + k] = s;
    k++;
  }
  g->outputs = outs;
  g->n_outputs += n;
  g->result_types = types;
  g->n_result_types += n;
  gc_graph_recount_uses(g);
  *names = nm;
  return n;
}

/* Record amax on the matmul of g whose result is `name` (the larger of any earlier value). */
static int record(gc_graph *g, const char *name, double amax) {
  for (gc_op *op = g->first; op; op = op->next) {
    if (op->opcode != GC_OP_MATMUL || strcmp(op->results[0]->name, name) != 0) continue;
    gc_named_attr at[8];  /* matmul has three attributes */
    int n = 0;
    for (int i = 0; i < op->n_attrs && n < 7; i++) {
      if (strcmp(op->attrs[i].name, "act_amax") == 0) {
        double old = gc_attr_number(&op->attrs[i].val);
        if (old > amax) amax = old;
        continue;
      }
      at[n++] = op->attrs[i];
    }
    at[n++] = (gc_named_attr){"act_amax", {.kind = GC_ATTR_FLOAT, .u.f = amax}};
    const gc_named_attr *before = op->attrs;
    gc_op_set_attrs(g, op, n, at);
    return op->attrs == before ? -1 : 1;  /* set_attrs keeps the old array when out of memory */
  }
  return 0;
}

graphc_status_t graphc_model_calibrate(graphc_model_t *m, const graphc_compile_options_t *opts,
                                       size_t n, const char *const *names, const graphc_tensor_t *inputs,
                                       graphc_error_t *err) {
  if (!m || (n && (!names || !inputs)))
    return gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_model_calibrate: NULL argument");
  graphc_compile_options_t o;
  if (opts)
    o = *opts;
  else
    graphc_compile_options_init(&o);
  o.precision = GRAPHC_PRECISION_F32;  /* the model as written measures the ranges */
  o.allow_tf32 = 0;
  o.print_after = o.print_before = NULL;
  o.keep_f32 = o.outputs = NULL;  /* every matmul's input is measured, whatever the results */

  graphc_model_t t = *m;  /* shares name, source and weights; owns only its module */
  t.module = gc_module_clone(m->module);
  if (!t.module) return gc_set_error(err, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
  gc_graph *g = t.module->graphs[t.entry];
  for (int i = 0; i < g->n_syms; i++) g->sym_values[i] = GC_SYM_UNBOUND;  /* the samples' shapes rule */
  const char **lin = NULL;
  graphc_executable_t *exe = NULL;
  graphc_tensor_t *in = NULL, *out = NULL;
  size_t n_in = 0, n_out = 0;
  int n_lin = 0;
  graphc_status_t st = GRAPHC_STATUS_OK;
  for (int a = 0; a < g->n_args; a++) {
    size_t j = 0;
    while (j < n && (!names[j] || strcmp(names[j], g->args[a]->name) != 0)) j++;
    if (j == n) {
      st = gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT, "graphc_model_calibrate: no sample for input %%%s",
                        g->args[a]->name);
      goto done;
    }
  }
  if ((st = graphc_model_bind_inputs(&t, n, names, inputs, err)) != GRAPHC_STATUS_OK) goto done;
  gc_diags d;
  gc_diags_init(&d, m->name, m->source, m->source_len);
  if (gc_graph_specialize(g, &d) > 0 || gc_verify_graph(g, &d) > 0) {
    st = gc_api_finish(m->ctx, &d, err);
    goto done;
  }
  gc_diags_free(&d);
  n_lin = instrument(g, &lin);
  if (n_lin < 0) {
    st = gc_set_error(err, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  if (n_lin == 0) goto done;  /* no linear to calibrate: nothing to run */
  if ((st = graphc_compile(&t, &o, &exe, err)) != GRAPHC_STATUS_OK) goto done;
  n_in = graphc_executable_num_inputs(exe);
  n_out = graphc_executable_num_outputs(exe);
  in = calloc(n_in + 1, sizeof *in);
  out = calloc(n_out + 1, sizeof *out);
  if (!in || !out) {
    st = gc_set_error(err, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  for (size_t i = 0; i < n_in; i++) {
    graphc_tensor_info_t info;
    graphc_executable_input_info(exe, i, &info);
    size_t j = 0;
    while (j < n && (!names[j] || strcmp(names[j], info.name) != 0)) j++;
    if (j == n) {  /* checked above: the executable's inputs are the graph's arguments */
      st = gc_set_error(err, GRAPHC_STATUS_INTERNAL, "graphc_model_calibrate: input %%%s vanished", info.name);
      goto done;
    }
    in[i] = inputs[j];
  }
  for (size_t i = 0; i < n_out; i++) {
    graphc_tensor_info_t info;
    graphc_executable_output_info(exe, i, &info);
    out[i] = (graphc_tensor_t){.dtype = info.dtype, .rank = info.rank, .nbytes = info.nbytes};
    memcpy(out[i].dims, info.dims, sizeof out[i].dims);
    if (!(out[i].data = malloc(info.nbytes ? info.nbytes : 1))) {
      st = gc_set_error(err, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
      goto done;
    }
  }
  if ((st = graphc_executable_run(exe, in, n_in, out, n_out, err)) != GRAPHC_STATUS_OK) goto done;
  gc_graph *mg = m->module->graphs[m->entry];
  for (int k = 0; k < n_lin; k++) {
    double amax = *(const float *)out[n_out - (size_t)n_lin + (size_t)k].data;
    if (!(amax >= 0 && amax <= 3.0e38)) {
      st = gc_set_error(err, GRAPHC_STATUS_INVALID_ARGUMENT,
                        "graphc_model_calibrate: the input of %%%s has non-finite values (max |x| = %g)",
                        lin[k], amax);
      goto done;
    }
    if (record(mg, lin[k], amax) < 0) {
      st = gc_set_error(err, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
      goto done;
    }
  }
done:
  if (out)
    for (size_t i = 0; i < n_out; i++) free(out[i].data);
  free(out);
  free(in);
  graphc_executable_destroy(exe);
  free(lin);
  gc_module_free(t.module);
  return st;
}
