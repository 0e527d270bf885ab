/* onnx.c - the ONNX importer's driver: model -> graphc module -> .graph text.
 *
 *   check opsets and list every unsupported op (one error)
 *   graph inputs      -> graph arguments (dim_param -> symbolic dims)
 *   initializers      -> constants (loaded, external data read safely)
 *   nodes, in order   -> op mappings (onnx_ops*.c), constants folded
 *   graph outputs     -> return
 *   dead ops removed, params that remain -> weights tensors
 *   print, then parse and verify the text again
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx_internal.h"
#include "frontend/parser.h"

#define OX_MAX_OPSET 28 /* newest ai.onnx opset whose op versions were reviewed */

/* ---- the translation ------------------------------------------------------------------------------ */

/* What a result keeps alive: the importer's owned blocks. */
typedef struct ox_store {
  void **owned;
  int n;
} ox_store;


/* List every node graphc cannot translate (domain, op type, opset) in one error. */
static int check_ops(ox *x) {
  const gc_onnx_graph *g = &x->model->graph;
  gc_sbuf b = {0};
  int bad = 0;
  for (int i = 0; i < g->n_nodes; i++) {
    const gc_onnx_node *n = &g->nodes[i];
    const char *dom = n->domain;
    int main = !dom[0] || strcmp(dom, "ai.onnx") == 0;
    int64_t ver = gc_onnx_opset_version(x->model, dom);
    const ox_opdef *def = main ? ox_find_op(n->op_type) : NULL;
    const char *why = NULL;
    char range[64] = "";
    if (!main) why = "operator domain not supported";
    else if (!def) why = "no graphc mapping";
    else if (ver < def->min_opset || ver > def->max_opset) {
      snprintf(range, sizeof range, "mapped for opsets %d to %d", def->min_opset, def->max_opset);
      why = range;
    }
    if (!why) continue;
    bad++;
    gc_sbuf_printf(&b, "\n  node %s%s%s#%d: %s (domain '%s', opset %lld): %s", n->name[0] ? "'" : "",
                   n->name, n->name[0] ? "' " : "", i, n->op_type, main ? "ai.onnx" : dom,
                   (long long)ver, why);
  }
  if (bad) {
    char *s = gc_sbuf_take(&b);
    gc_error_at(x->d, GRAPHC_STATUS_UNSUPPORTED, (gc_loc){0, 0}, "%d unsupported ONNX node%s:%s",
                bad, bad == 1 ? "" : "s", s ? s : " (out of memory)");
    free(s);
    x->errors++;
    return -1;
  }
  gc_sbuf_free(&b);
  return 0;
}

/* Symbol index of a dim_param, adding it to the graph's symbols. */
static int64_t sym_dim(ox *x, const char *param) {
  gc_graph *g = x->g;
  char *s = ox_sanitize(x, param, "S");
  if (!s) return -1;
  static const char *const reserved[] = {"true", "false", "inf", "nan", "f64", "f32", "f16",
                                         "bf16", "i64", "i32", "i8", "u8", "bool"};
  for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++)
    if (strcmp(s, reserved[i]) == 0) s = gc_arena_printf(&g->arena, "%s_", s);
  for (int i = 0; i < g->n_syms; i++)
    if (strcmp(g->sym_names[i], s) == 0) return GC_DIM_SYM(i);
  int i = gc_graph_add_sym(g, s, NULL);
  return i < 0 ? -1 : GC_DIM_SYM(i);
}

/* Graph inputs that are not initializers become arguments. */
static int add_inputs(ox *x) {
  const gc_onnx_graph *og = &x->model->graph;
  int pos = -1;
  for (int i = 0; i < og->n_inputs; i++) {
    const gc_onnx_value_info *vi = &og->inputs[i];
    if (ox_lookup(x, vi->name)) continue; /* an initializer (IR < 4 lists them as inputs) */
    pos++;
    gc_type t = {0};
    gc_dtype dt;
    ox_val *bad = NULL; /* a rejected input: its users are skipped quietly */
    if (vi->kind != GC_ONNX_TYPE_TENSOR) {
      ox_unsup(x, "graph input '%s' is not a tensor (sequences, maps, optionals and sparse tensors "
                  "are not supported)", vi->name);
      if ((bad = ox_bind(x, vi->name, NULL, NULL))) bad->bad = 1;
      continue;
    }
    if (ox_dtype(x, vi->elem_type, &dt) != 0) {
      if ((bad = ox_bind(x, vi->name, NULL, NULL))) bad->bad = 1;
      continue;
    }
    if (!vi->has_shape) {
      ox_unsup(x, "graph input '%s' has no shape (dynamic rank is not supported)", vi->name);
      if ((bad = ox_bind(x, vi->name, NULL, NULL))) bad->bad = 1;
      continue;
    }
    if (vi->rank > GC_MAX_RANK) {
      ox_unsup(x, "graph input '%s' has rank %d; graphc supports up to %d", vi->name, vi->rank,
               GC_MAX_RANK);
      if ((bad = ox_bind(x, vi->name, NULL, NULL))) bad->bad = 1;
      continue;
    }
    t.dtype = dt;
    t.rank = vi->rank;
    int ok = 1;
    for (int k = 0; k < vi->rank && ok; k++) {
      const gc_onnx_dim *dd = &vi->dims[k];
      if (dd->has_value && dd->value >= 0) {
        t.dims[k] = dd->value;  /* 0: an empty tensor */
      } else if (dd->has_value) {
        ok = 0;
        ox_unsup(x, "graph input '%s' has a dim of size %lld", vi->name, (long long)dd->value);
      } else if (dd->param && dd->param[0]) {
        if ((t.dims[k] = sym_dim(x, dd->param)) < 0) return -1;
      } else {
        ok = 0;
        ox_unsup(x, "graph input '%s': dim %d has neither a size nor a name (dynamic shapes are "
                    "not supported)", vi->name, k);
      }
    }
    /* Like the verifier: at most 2^62 elements, so products of dims never
     * overflow in the translation (found by fuzz_onnx). */
    int64_t numel = 1;
    for (int k = 0; k < t.rank && ok; k++)
      if (!GC_DIM_IS_SYM(t.dims[k]) && (__builtin_mul_overflow(numel, t.dims[k], &numel) ||
                                        numel > (INT64_C(1) << 62))) {
        ok = 0;
        ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "graph input '%s' has more than 2^62 elements",
                vi->name);
      }
    if (!ok) {
      if ((bad = ox_bind(x, vi->name, NULL, NULL))) bad->bad = 1;
      continue;
    }
    const char *nm = ox_value_name(x, vi->name);
    gc_value *v = nm ? gc_graph_add_arg(x->g, nm, &t, (gc_loc){0, 0}) : NULL;
    ox_val *ov = v ? ox_bind(x, vi->name, v, NULL) : NULL;
    if (!ov) return -1;
    const gc_onnx_tensor *fz = pos < x->opts->n_inputs ? &x->opts->inputs[pos] : NULL;
    int fdt = fz ? gc_onnx_dtype(fz->data_type) : -1;
    if (fz && fdt >= 0 && !fz->external && fz->rank <= GC_MAX_RANK && fz->numel >= 0 &&
        fz->nbytes == (size_t)fz->numel * graphc_dtype_size((gc_dtype)fdt))
      ov->frozen = ox_tensor_const(x, fz, 0); /* a value graphc cannot hold is not frozen */
    if (ov->frozen && ox_ids_ensure(x) == 0) x->fz[v->id] = ov->frozen;
  }
  return 0;
}

/* Initializers become constants (params when used). */
static int add_initializers(ox *x) {
  const gc_onnx_graph *og = &x->model->graph;
  if (og->n_sparse_inits)
    ox_unsup(x, "sparse initializers are not supported (%d found)", og->n_sparse_inits);
  for (int i = 0; i < og->n_inits; i++) {
    const gc_onnx_tensor *t = &og->inits[i];
    int errs = x->errors;
    ox_const *k = ox_tensor_const(x, t, 0);
    if (x->errors != errs) return -1;   /* bad external data: stop */
    ox_val *v = ox_bind(x, t->name, NULL, k);
    if (!v) return -1;
    v->onnx_type = t->data_type;
    v->init = 1;
    if (!k) v->bad = 2;                 /* unsupported dtype or rank: reported at first use */
  }
  return 0;
}

/* Translate one node with its mapping; bind its outputs. */
static void translate_node(ox *x, const gc_onnx_node *n) {
  x->node = n;
  int skip = 0;
  for (int i = 0; i < n->n_inputs; i++) {
    if (!n->inputs[i][0]) continue;
    ox_val *v = ox_lookup(x, n->inputs[i]);
    if (!v) {
      ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT,
              "input '%s' is not defined (not a graph input, an initializer or an earlier output)",
              n->inputs[i]);
      skip = 1;
    } else if (v->bad == 2) {
      for (int j = 0; j < x->model->graph.n_inits; j++) /* report why it is unusable */
        if (strcmp(x->model->graph.inits[j].name, n->inputs[i]) == 0)
          ox_tensor_const(x, &x->model->graph.inits[j], 1);
      skip = 1;
    } else if (v->bad) {
      skip = 1;
    }
  }
  if (n->n_outputs > OX_MAX_OUTS) {
    ox_unsup(x, "more than %d outputs", OX_MAX_OUTS);
    skip = 1;
  }
  int ok = 0;
  if (!skip) {
    memset(x->out_v, 0, sizeof x->out_v);
    memset(x->out_k, 0, sizeof x->out_k);
    int errs = x->errors;
    const ox_opdef *def = ox_find_op(n->op_type);
    int rc = def->fn(x, def->arg);
    ok = rc == 0 && x->errors == errs;
    if (rc != 0 && x->errors == errs)   /* a mapping that failed silently (found by fuzz_onnx) */
      ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT,
              "%s could not be translated (invalid inputs or attributes, or out of memory)",
              n->op_type);
    for (int i = 0; ok && i < n->n_outputs; i++) {
      if (!n->outputs[i][0]) continue;
      if (!x->out_v[i] && !x->out_k[i]) {
        ox_unsup(x, "output %d ('%s') is not supported", i, n->outputs[i]);
        ok = 0;
      }
    }
  }
  for (int i = 0; i < n->n_outputs; i++) {
    const char *name = n->outputs[i];
    if (!name[0]) continue;
    if (ox_lookup(x, name)) {
      ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "output '%s' is defined twice", name);
      continue;
    }
    gc_value *v = ok ? x->out_v[i] : NULL;
    ox_const *k = ok ? x->out_k[i] : NULL;
    if (v && !k && v->id < x->cap_ids) k = x->kv[v->id];
    if (v && v->id < x->cap_ids && x->temp[v->id] && v->def) {
      const char *nm = ox_value_name(x, name);
      if (nm) v->name = nm;
      x->temp[v->id] = 0;
    }
    ox_val *ov = ox_bind(x, name, v, k);
    if (ov && !ok) ov->bad = 1;
  }
  x->node = NULL;
}

/* Graph outputs: the return statement and the signature. */
static int add_outputs(ox *x) {
  const gc_onnx_graph *og = &x->model->graph;
  gc_graph *g = x->g;
  g->outputs = gc_arena_alloc(&g->arena, (size_t)(og->n_outputs + 1) * sizeof *g->outputs);
  g->result_types = gc_arena_alloc(&g->arena, (size_t)(og->n_outputs + 1) * sizeof *g->result_types);
  if (!g->outputs || !g->result_types) return ox_fail(x, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
  if (og->n_outputs == 0) return ox_unsup(x, "the graph has no outputs");
  for (int i = 0; i < og->n_outputs; i++) {
    const gc_onnx_value_info *vi = &og->outputs[i];
    ox_val *v = ox_lookup(x, vi->name);
    if (!v) {
      ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "graph output '%s' is never defined", vi->name);
      continue;
    }
    if (v->bad == 1) {   /* its node failed; say so if that went unreported (fuzz_onnx) */
      if (!x->errors) ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "graph output '%s' has no value", vi->name);
      continue;
    }
    if (!v->v && v->k) v->v = ox_materialize_as(x, v->k, v->name, v->init);
    if (!v->v) {
      if (v->bad == 2)
        ox_unsup(x, "graph output '%s' is an initializer of type %s, which graphc cannot hold",
                 vi->name, gc_onnx_type_name(v->onnx_type));
      else if (!x->errors)
        ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "graph output '%s' has no value", vi->name);
      continue;
    }
    if (vi->kind == GC_ONNX_TYPE_TENSOR && gc_onnx_dtype(vi->elem_type) >= 0 &&
        gc_onnx_dtype(vi->elem_type) != (int)v->v->type.dtype)
      /* A model whose nodes contradict its declared output type is bad input,
       * not a graphc bug (found by fuzz_onnx). */
      ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "graph output '%s' is declared %s but computes %s",
              vi->name, gc_onnx_type_name(vi->elem_type), graphc_dtype_name(v->v->type.dtype));
    else if (vi->kind == GC_ONNX_TYPE_TENSOR && gc_onnx_dtype(vi->elem_type) < 0)
      ox_dtype(x, vi->elem_type, &(gc_dtype){0});
    g->outputs[g->n_outputs++] = v->v;
    g->result_types[g->n_result_types++] = v->v->type;
  }
  return 0;
}

/* Remove ops none of whose results is used (backwards, so chains go at once). */
static void remove_dead(gc_graph *g) {
  gc_graph_recount_uses(g);
  for (gc_op *op = g->last, *prev; op; op = prev) {
    prev = op->prev;
    int used = 0;
    for (int i = 0; i < op->n_results; i++) used |= op->results[i]->n_uses > 0;
    if (used) continue;
    for (int i = 0; i < op->n_operands; i++) op->operands[i]->n_uses--;
    gc_op_remove(g, op);
  }
}

/* Keep the weights of the params that survived, in program order. */
static int collect_weights(ox *x, gc_onnx_result *out) {
  ox_map *idx = ox_map_new();
  if (!idx) return ox_fail(x, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; i < x->n_weights; i++)
    if (ox_map_put(idx, x->weights[i].name, &x->weights[i]) != 0) {
      ox_map_free(idx);
      return ox_fail(x, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
    }
  int n = 0;
  for (gc_op *op = x->g->first; op; op = op->next)
    if (op->opcode == GC_OP_PARAM) n++;
  out->tensors = calloc((size_t)(n ? n : 1), sizeof *out->tensors);
  if (!out->tensors) {
    ox_map_free(idx);
    return ox_fail(x, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  for (gc_op *op = x->g->first; op; op = op->next) {
    if (op->opcode != GC_OP_PARAM) continue;
    gc_st_tensor *w = ox_map_get(idx, gc_op_attr_str(op, "name", ""));
    GC_ASSERT(w);
    gc_st_tensor *t = &out->tensors[out->n_tensors++];
    *t = *w;
    /* The name must outlive the graph arena: copy it into owned memory. */
    t->name = ox_own(x, strdup(w->name));
    if (!t->name) {
      ox_map_free(idx);
      return -1;
    }
  }
  ox_map_free(idx);
  return 0;
}

/* Parse and verify the text we produced; a failure is a bug in the importer. */
static int reverify(ox *x, const char *text) {
  gc_diags d;
  gc_diags_init(&d, "imported.graph", text, strlen(text));
  gc_module *m = gc_parse("imported.graph", text, strlen(text), &d);
  int bad = !m || gc_verify_module(m, &d) > 0;
  if (bad) {
    char *r = gc_diags_render(&d);
    ox_fail(x, GRAPHC_STATUS_INTERNAL, "the generated .graph does not verify:\n%s", r ? r : "");
    free(r);
  }
  gc_module_free(m);
  gc_diags_free(&d);
  return bad ? -1 : 0;
}

/* Free the importer state, except what `keep` (the result) took over. */
static void ox_free(ox *x, int keep_owned) {
  ox_map_free(x->vals);
  ox_map_free(x->names);
  ox_map_free(x->wnames);
  free(x->kv);
  free(x->fz);
  free(x->temp);
  free(x->weights);
  gc_module_free(x->mod);
  if (!keep_owned) {
    for (int i = 0; i < x->n_owned; i++) free(x->owned[i]);
    free(x->owned);
  }
}

int gc_onnx_import(const gc_onnx_model *m, const char *source, const gc_onnx_options *opts,
                   gc_onnx_result *out, gc_diags *d) {
  gc_onnx_options none = {0};
  if (!opts) opts = &none;
  const char *weights_ref = opts->weights_ref;
  memset(out, 0, sizeof *out);
  ox *x = calloc(1, sizeof *x);
  if (!x) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
    return -1;
  }
  x->model = m;
  x->source = source ? source : "model.onnx";
  x->model_dir = opts->model_dir;
  x->opts = opts;
  x->d = d;
  x->fold = 1;
  x->opset = gc_onnx_opset_version(m, "");
  x->vals = ox_map_new();
  x->names = ox_map_new();
  x->wnames = ox_map_new();
  x->mod = gc_module_new(x->source);
  if (!x->vals || !x->names || !x->wnames || !x->mod) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
    ox_free(x, 0);
    free(x);
    return -1;
  }
  x->mod->version = 1;
  const char *gname = m->graph.name[0] ? m->graph.name : "main";
  char *gn = NULL;
  x->g = gc_graph_new(x->mod, "main", (gc_loc){0, 0});
  if (x->g) gn = ox_sanitize(x, gname, "g");
  if (!x->g || !gn) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
    ox_free(x, 0);
    free(x);
    return -1;
  }
  x->g->name = gn;
  int rc = -1;
  if (m->n_functions)
    gc_warning_at(d, (gc_loc){0, 0}, "the model's %d local function(s) are ignored",
                  m->n_functions);
  if (x->opset > OX_MAX_OPSET) {
    ox_unsup(x, "ai.onnx opset %lld is newer than the newest supported (%d)", (long long)x->opset,
             OX_MAX_OPSET);
    goto done;
  }
  if (check_ops(x) != 0) goto done;
  if (add_initializers(x) != 0 || add_inputs(x) != 0) goto done;
  for (int i = 0; i < m->graph.n_nodes; i++) translate_node(x, &m->graph.nodes[i]);
  if (add_outputs(x) != 0 || x->errors) goto done;
  remove_dead(x->g);
  if (collect_weights(x, out) != 0) goto done;
  if (out->n_tensors && !weights_ref) {
    ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "the model has weights but no weights file was given");
    goto done;
  }
  if (out->n_tensors) x->mod->weights = gc_arena_strdup(&x->mod->arena, weights_ref);
  gc_sbuf b = {0};
  gc_print_module(&b, x->mod);
  out->text = gc_sbuf_take(&b);
  if (!out->text) {
    ox_fail(x, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  if (reverify(x, out->text) != 0) goto done;
  rc = 0;
done:
  if (opts->froze) *opts->froze = x->froze;
  if (rc != 0) {
    gc_onnx_result_free(out);
    if (!d->n_errors)
      gc_error_at(d, GRAPHC_STATUS_INTERNAL, (gc_loc){0, 0}, "import failed without a message");
    ox_free(x, 0);
    free(x);
    return -1;
  }
  /* The result keeps the owned blocks (weight data and names). */
  ox_store *keep = malloc(sizeof *keep);
  if (!keep) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
    gc_onnx_result_free(out);
    ox_free(x, 0);
    free(x);
    return -1;
  }
  keep->owned = x->owned;
  keep->n = x->n_owned;
  out->priv = keep;
  ox_free(x, 1);
  free(x);
  return 0;
}

/* Free the text, the tensor list and the data the result keeps. */
void gc_onnx_result_free(gc_onnx_result *r) {
  if (!r) return;
  free(r->text);
  free(r->tensors);
  ox_store *s = r->priv;
  if (s) {
    for (int i = 0; i < s->n; i++) free(s->owned[i]);
    free(s->owned);
    free(s);
  }
  memset(r, 0, sizeof *r);
}

/* ---- files ---------------------------------------------------------------------------------------- */

/* Folder part of a path ("." when none), malloc'd. */
static char *dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return strdup(".");
  if (slash == path) return strdup("/");
  return strndup(path, (size_t)(slash - path));
}

/* Path of `target` relative to folder `from` (both made absolute); malloc'd. */
static char *relative_to(const char *from, const char *target) {
  char *tdir = dir_of(target), *out = NULL;
  char a[PATH_MAX], b[PATH_MAX];
  const char *base = strrchr(target, '/') ? strrchr(target, '/') + 1 : target;
  if (tdir && realpath(from, a) && realpath(tdir, b)) {
    size_t i = 0, common = 0;
    while (a[i] && a[i] == b[i]) {
      i++;
      if (a[i] == '/' || a[i] == 0) common = i;
    }
    if ((a[i] == 0 && (b[i] == '/' || b[i] == 0))) common = i;
    gc_sbuf s = {0};
    for (const char *p = a + common; *p; p++)
      if (*p == '/') gc_sbuf_puts(&s, "../");
    const char *rest = b + common;
    while (*rest == '/') rest++;
    if (*rest) gc_sbuf_printf(&s, "%s/", rest);
    gc_sbuf_puts(&s, base);
    out = gc_sbuf_take(&s);
  }
  free(tdir);
  return out;
}

/* Write a whole text file; reports I/O errors. */
static int write_text(const char *path, const char *text, gc_diags *d) {
  FILE *f = fopen(path, "w");
  size_t n = strlen(text);
  int ok = f && fwrite(text, 1, n, f) == n;
  if (f && fclose(f) != 0) ok = 0;
  if (!ok)
    gc_error_at(d, GRAPHC_STATUS_IO_ERROR, (gc_loc){0, 0}, "cannot write '%s': %s", path,
                strerror(errno));
  return ok ? 0 : -1;
}

int gc_onnx_import_file(const char *onnx_path, const char *graph_path, const char *weights_path,
                        const gc_onnx_options *opts, gc_diags *d) {
  gc_onnx_model *m = gc_onnx_model_load(onnx_path, d);
  if (!m) return -1;
  char *mdir = dir_of(onnx_path), *gdir = dir_of(graph_path);
  char *ref = mdir && gdir ? relative_to(gdir, weights_path) : NULL;
  int rc = -1;
  gc_onnx_result r;
  if (!mdir || !gdir || !ref) {
    gc_error_at(d, GRAPHC_STATUS_IO_ERROR, (gc_loc){0, 0},
                "cannot resolve the folders of '%s' and '%s': %s", graph_path, weights_path,
                strerror(errno));
  } else {
    gc_onnx_options o = {0};
    if (opts) o = *opts;
    o.model_dir = mdir;
    o.weights_ref = ref;
    if (gc_onnx_import(m, onnx_path, &o, &r, d) != 0) goto done;
    rc = write_text(graph_path, r.text, d);
    if (rc == 0 && r.n_tensors) rc = gc_safetensors_write(weights_path, r.tensors, r.n_tensors, d);
    gc_onnx_result_free(&r);
  }
done:
  free(ref);
  free(mdir);
  free(gdir);
  gc_onnx_model_free(m);
  return rc;
}
