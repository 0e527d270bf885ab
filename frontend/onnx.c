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
#include <sys/stat.h>

#include "frontend/onnx_internal.h"
#include "frontend/parser.h"

#define OX_MAX_OPSET 28 /* newest ai.onnx opset whose op versions were reviewed */

/* ---- string-keyed hash map (open addressing) ------------------------------------------------- */

struct ox_map {
  const char **keys;
  void **vals;
  size_t cap, n;
};

/* FNV-1a. */
static size_t hash_str(const char *s) {
  size_t h = 1469598103934665603u;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211u;
  return h;
}

/* An empty map. */
static ox_map *map_new(void) {
  ox_map *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  m->cap = 64;
  m->keys = calloc(m->cap, sizeof *m->keys);
  m->vals = calloc(m->cap, sizeof *m->vals);
  if (!m->keys || !m->vals) {
    free(m->keys);
    free(m->vals);
    free(m);
    return NULL;
  }
  return m;
}

/* Free a map (not its keys or values). */
static void map_free(ox_map *m) {
  if (!m) return;
  free(m->keys);
  free(m->vals);
  free(m);
}

/* Value stored under k, or NULL. */
static void *map_get(const ox_map *m, const char *k) {
  for (size_t i = hash_str(k) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    if (!m->keys[i]) return NULL;
    if (strcmp(m->keys[i], k) == 0) return m->vals[i];
  }
}

/* Insert or replace; the key must outlive the map. 0 or -1 (out of memory). */
static int map_put(ox_map *m, const char *k, void *v) {
  if (2 * (m->n + 1) > m->cap) {
    size_t nc = m->cap * 2;
    const char **nk = calloc(nc, sizeof *nk);
    void **nv = calloc(nc, sizeof *nv);
    if (!nk || !nv) {
      free(nk);
      free(nv);
      return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
      if (!m->keys[i]) continue;
      size_t j = hash_str(m->keys[i]) & (nc - 1);
      while (nk[j]) j = (j + 1) & (nc - 1);
      nk[j] = m->keys[i];
      nv[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = nk;
    m->vals = nv;
    m->cap = nc;
  }
  size_t i = hash_str(k) & (m->cap - 1);
  while (m->keys[i] && strcmp(m->keys[i], k) != 0) i = (i + 1) & (m->cap - 1);
  if (!m->keys[i]) m->n++;
  m->keys[i] = k;
  m->vals[i] = v;
  return 0;
}

ox_val *ox_lookup(ox *x, const char *name) { return map_get(x->vals, name); }

/* ---- names ----------------------------------------------------------------------------------- */

/* Register a name as used (the string must live in the graph arena). */
static const char *claim(ox *x, const char *s) {
  if (!s || map_put(x->names, s, (void *)s) != 0) {
    ox_fail(x, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  return s;
}

/* A fresh temporary value name "tN" not used yet. */
const char *ox_temp_name(ox *x) {
  for (;;) {
    char buf[32];
    snprintf(buf, sizeof buf, "t%d", x->n_tmp++);
    if (!map_get(x->names, buf)) return claim(x, gc_arena_strdup(&x->g->arena, buf));
  }
}

/* An identifier made of [A-Za-z0-9_] from an ONNX name, starting with a letter or '_'. */
static char *sanitize(ox *x, const char *s, const char *prefix) {
  size_t n = strlen(s);
  if (n > 200) n = 200;
  char *buf = gc_arena_alloc(&x->g->arena, n + strlen(prefix) + 2);
  if (!buf) return NULL;
  size_t k = 0;
  if (!n || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_'))
    for (const char *p = prefix; *p; p++) buf[k++] = *p;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    buf[k++] = ok ? c : '_';
  }
  buf[k] = 0;
  return buf;
}

/* `base`, or base_1, base_2, ... : the first not in `set`. */
static const char *unique_in(ox *x, ox_map *set, const char *base) {
  if (!map_get(set, base)) return base;
  for (int i = 1;; i++) {
    const char *s = gc_arena_printf(&x->g->arena, "%s_%d", base, i);
    if (!s) return NULL;
    if (!map_get(set, s)) return s;
  }
}

/* A unique graphc value name for an ONNX name (sanitized, suffixed). */
const char *ox_value_name(ox *x, const char *onnx_name) {
  char *s = sanitize(x, onnx_name, "v");
  return s ? claim(x, unique_in(x, x->names, s)) : NULL;
}

/* ---- the translation ------------------------------------------------------------------------------ */

/* What a result keeps alive: the importer's owned blocks. */
typedef struct ox_store {
  void **owned;
  int n;
} ox_store;

typedef struct ox_priv {
  ox x;
  ox_map *wnames;          /* weights tensor names in use */
} ox_priv;

/* Weight tensor names: the ONNX name when free, else suffixed. */
const char *ox_weight_name(ox *x, const char *hint) {
  ox_priv *p = (ox_priv *)x;
  const char *s;
  if (!hint || strcmp(hint, "__metadata__") == 0)
    s = gc_arena_printf(&x->g->arena, "const_%d", x->n_weights);
  else
    s = gc_arena_strdup(&x->g->arena, hint);
  s = s ? unique_in(x, p->wnames, s) : NULL;
  if (!s || map_put(p->wnames, s, (void *)s) != 0) {
    ox_fail(x, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  return s;
}

/* Bind an ONNX name to a value / constant. */
static ox_val *bind(ox *x, const char *name, gc_value *v, ox_const *k) {
  ox_val *ov = ox_alloc(x, sizeof *ov);
  if (!ov) return NULL;
  ov->name = name;
  ov->v = v;
  ov->k = k;
  if (map_put(x->vals, name, ov) != 0) {
    ox_fail(x, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
    return NULL;
  }
  return ov;
}

/* Does p name a path that stays inside the model folder (relative, no "..")? */
static int safe_relpath(const char *p) {
  if (!p[0] || p[0] == '/') return 0;
  const char *s = p;
  while (*s) {
    const char *e = strchr(s, '/');
    size_t n = e ? (size_t)(e - s) : strlen(s);
    if (n == 2 && s[0] == '.' && s[1] == '.') return 0;
    if (n == 0 && !e) break;
    s = e ? e + 1 : s + n;
  }
  return 1;
}

/* Read the external data of initializer t into a fresh constant. */
static int load_external(ox *x, const gc_onnx_tensor *t, ox_const *k) {
  size_t want = (size_t)k->numel * graphc_dtype_size(k->dtype);
  if (!x->model_dir)
    return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT,
                   "initializer '%s' uses external data, which needs the model's folder", t->name);
  if (!safe_relpath(t->location) || strchr(t->location, '\\'))
    return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT,
                   "initializer '%s': external data location '%s' leaves the model's folder "
                   "(absolute paths and '..' are not allowed)",
                   t->name, t->location);
  char path[PATH_MAX];
  if (snprintf(path, sizeof path, "%s/%s", x->model_dir, t->location) >= (int)sizeof path)
    return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "initializer '%s': path too long", t->name);
  /* No component below the model folder may be a symbolic link. */
  size_t base = strlen(x->model_dir) + 1;
  for (size_t i = base; path[i - 1]; i++) {
    if (path[i] != '/' && path[i] != 0) continue;
    char save = path[i];
    path[i] = 0;
    struct stat st;
    int bad = lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
    path[i] = save;
    if (bad)
      return ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT,
                     "initializer '%s': external data location '%s' goes through a symbolic link",
                     t->name, t->location);
    if (!save) break;
  }
  FILE *f = fopen(path, "rb");
  if (!f)
    return ox_fail(x, GRAPHC_STATUS_IO_ERROR, "initializer '%s': cannot open external data '%s': %s",
                   t->name, path, strerror(errno));
  int rc = 0;
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    rc = ox_fail(x, GRAPHC_STATUS_IO_ERROR, "initializer '%s': '%s' is not a regular file", t->name,
                 path);
  } else if (t->ext_length >= 0 && (uint64_t)t->ext_length != want) {
    rc = ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT,
                 "initializer '%s': external data length %lld, expected %zu bytes", t->name,
                 (long long)t->ext_length, want);
  } else if ((uint64_t)t->ext_offset > (uint64_t)st.st_size ||
             want > (uint64_t)st.st_size - (uint64_t)t->ext_offset) {
    rc = ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT,
                 "initializer '%s': external data at offset %lld (%zu bytes) runs past the end of "
                 "'%s' (%lld bytes)",
                 t->name, (long long)t->ext_offset, want, path, (long long)st.st_size);
  } else if (fseeko(f, (off_t)t->ext_offset, SEEK_SET) != 0 || fread(k->data, 1, want, f) != want) {
    rc = ox_fail(x, GRAPHC_STATUS_IO_ERROR, "initializer '%s': cannot read '%s'", t->name, path);
  }
  fclose(f);
  return rc;
}

/* Constant data of a TensorProto (initializer or Constant value); NULL when
 * graphc cannot hold it (reported when `report`). */
ox_const *ox_tensor_const(ox *x, const gc_onnx_tensor *t, int report) {
  int dt = gc_onnx_dtype(t->data_type);
  if (dt < 0) {
    if (report) ox_dtype(x, t->data_type, &(gc_dtype){0});
    return NULL;
  }
  if (t->rank > GC_MAX_RANK) {
    if (report) ox_unsup(x, "tensor '%s' has rank %d; graphc supports up to %d", t->name, t->rank,
                         GC_MAX_RANK);
    return NULL;
  }
  if (t->numel < 0 || t->numel > (INT64_C(1) << 40)) {   /* -1: the product of the dims overflows */
    if (report) {
      char dims[GC_MAX_RANK * 24 + 2] = "";
      for (int i = 0, at = 0; i < t->rank; i++)
        at += snprintf(dims + at, sizeof dims - (size_t)at, "%s%lld", i ? " x " : "", (long long)t->dims[i]);
      ox_unsup(x, "tensor '%s' (%s) has more than 2^40 elements, the most a constant can hold", t->name,
               dims);
    }
    return NULL;
  }
  ox_const *k = ox_const_new(x, (gc_dtype)dt, t->rank, t->dims);
  if (!k) return NULL;
  size_t want = (size_t)k->numel * graphc_dtype_size(k->dtype);
  if (t->external) {
    if (load_external(x, t, k) != 0) return NULL;
  } else if (t->nbytes == want && t->data) {
    memcpy(k->data, t->data, want);
  } else if (want) {
    ox_fail(x, GRAPHC_STATUS_INVALID_ARGUMENT, "tensor '%s' has %zu bytes of data, expected %zu",
            t->name, t->data ? t->nbytes : 0, want);
    return NULL;
  }
  return k;
}

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
  char *s = sanitize(x, param, "S");
  if (!s) return -1;
  static const char *const reserved[] = {"true", "false", "inf", "nan", "f64", "f32", "f16",
                                         "bf16", "i64", "i32", "i8", "u8", "bool"};
  for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++)
    if (strcmp(s, reserved[i]) == 0) s = gc_arena_printf(&g->arena, "%s_", s);
  for (int i = 0; i < g->n_syms; i++)
    if (strcmp(g->sym_names[i], s) == 0) return GC_DIM_SYM(i);
  const char **names = gc_arena_alloc(&g->arena, (size_t)(g->n_syms + 1) * sizeof *names);
  int64_t *vals = gc_arena_alloc(&g->arena, (size_t)(g->n_syms + 1) * sizeof *vals);
  if (!names || !vals) return -1;
  if (g->n_syms) {
    memcpy(names, g->sym_names, (size_t)g->n_syms * sizeof *names);
    memcpy(vals, g->sym_values, (size_t)g->n_syms * sizeof *vals);
  }
  names[g->n_syms] = s;
  vals[g->n_syms] = 0;
  g->sym_names = names;
  g->sym_values = vals;
  return GC_DIM_SYM(g->n_syms++);
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
      if ((bad = bind(x, vi->name, NULL, NULL))) bad->bad = 1;
      continue;
    }
    if (ox_dtype(x, vi->elem_type, &dt) != 0) {
      if ((bad = bind(x, vi->name, NULL, NULL))) bad->bad = 1;
      continue;
    }
    if (!vi->has_shape) {
      ox_unsup(x, "graph input '%s' has no shape (dynamic rank is not supported)", vi->name);
      if ((bad = bind(x, vi->name, NULL, NULL))) bad->bad = 1;
      continue;
    }
    if (vi->rank > GC_MAX_RANK) {
      ox_unsup(x, "graph input '%s' has rank %d; graphc supports up to %d", vi->name, vi->rank,
               GC_MAX_RANK);
      if ((bad = bind(x, vi->name, NULL, NULL))) bad->bad = 1;
      continue;
    }
    t.dtype = dt;
    t.rank = vi->rank;
    int ok = 1;
    for (int k = 0; k < vi->rank && ok; k++) {
      const gc_onnx_dim *dd = &vi->dims[k];
      if (dd->has_value && dd->value > 0) {
        t.dims[k] = dd->value;
      } else if (dd->has_value) {
        ok = 0;
        ox_unsup(x, "graph input '%s' has a dim of size %lld (graphc has no empty tensors)",
                 vi->name, (long long)dd->value);
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
      if ((bad = bind(x, vi->name, NULL, NULL))) bad->bad = 1;
      continue;
    }
    const char *nm = ox_value_name(x, vi->name);
    gc_value *v = nm ? gc_graph_add_arg(x->g, nm, &t, (gc_loc){0, 0}) : NULL;
    ox_val *ov = v ? bind(x, vi->name, v, NULL) : NULL;
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
    ox_val *v = bind(x, t->name, NULL, k);
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
    ox_val *ov = bind(x, name, v, k);
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
  ox_map *idx = map_new();
  if (!idx) return ox_fail(x, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
  for (int i = 0; i < x->n_weights; i++)
    if (map_put(idx, x->weights[i].name, &x->weights[i]) != 0) {
      map_free(idx);
      return ox_fail(x, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
    }
  int n = 0;
  for (gc_op *op = x->g->first; op; op = op->next)
    if (op->opcode == GC_OP_PARAM) n++;
  out->tensors = calloc((size_t)(n ? n : 1), sizeof *out->tensors);
  if (!out->tensors) {
    map_free(idx);
    return ox_fail(x, GRAPHC_STATUS_OUT_OF_MEMORY, "out of memory");
  }
  for (gc_op *op = x->g->first; op; op = op->next) {
    if (op->opcode != GC_OP_PARAM) continue;
    gc_st_tensor *w = map_get(idx, gc_op_attr_str(op, "name", ""));
    GC_ASSERT(w);
    gc_st_tensor *t = &out->tensors[out->n_tensors++];
    *t = *w;
    /* The name must outlive the graph arena: copy it into owned memory. */
    t->name = ox_own(x, strdup(w->name));
    if (!t->name) {
      map_free(idx);
      return -1;
    }
  }
  map_free(idx);
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
static void ox_free(ox_priv *p, int keep_owned) {
  ox *x = &p->x;
  map_free(x->vals);
  map_free(x->names);
  map_free(p->wnames);
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
  ox_priv *p = calloc(1, sizeof *p);
  if (!p) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
    return -1;
  }
  ox *x = &p->x;
  x->model = m;
  x->source = source ? source : "model.onnx";
  x->model_dir = opts->model_dir;
  x->opts = opts;
  x->d = d;
  x->fold = 1;
  x->opset = gc_onnx_opset_version(m, "");
  x->vals = map_new();
  x->names = map_new();
  p->wnames = map_new();
  x->mod = gc_module_new(x->source);
  if (!x->vals || !x->names || !p->wnames || !x->mod) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
    ox_free(p, 0);
    free(p);
    return -1;
  }
  x->mod->version = 1;
  const char *gname = m->graph.name[0] ? m->graph.name : "main";
  char *gn = NULL;
  x->g = gc_graph_new(x->mod, "main", (gc_loc){0, 0});
  if (x->g) gn = sanitize(x, gname, "g");
  if (!x->g || !gn) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
    ox_free(p, 0);
    free(p);
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
    ox_free(p, 0);
    free(p);
    return -1;
  }
  /* The result keeps the owned blocks (weight data and names). */
  ox_store *keep = malloc(sizeof *keep);
  if (!keep) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "out of memory");
    gc_onnx_result_free(out);
    ox_free(p, 0);
    free(p);
    return -1;
  }
  keep->owned = x->owned;
  keep->n = x->n_owned;
  out->priv = keep;
  ox_free(p, 1);
  free(p);
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
