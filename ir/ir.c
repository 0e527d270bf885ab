/* ir.c - building and editing graphs: modules, graphs, values, ops, attributes. */
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

const gc_op_info gc_op_infos[GC_OP_COUNT_] = {
#define OP(ID, NAME, MIN_IN, MAX_IN, N_OUT, ATTRS, RULE, EVAL, KIND) \
  [GC_OP_##ID] = {NAME, MIN_IN, MAX_IN, N_OUT, ATTRS, GC_KIND_##KIND},
#include "ir/ops.def"
#undef OP
};

int gc_opcode_from_name(const char *s, size_t n) {
  for (int i = 0; i < GC_OP_COUNT_; i++)
    if (strlen(gc_op_infos[i].name) == n && memcmp(gc_op_infos[i].name, s, n) == 0) return i;
  return -1;
}

gc_module *gc_module_new(const char *file) {
  gc_module *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  gc_arena_init(&m->arena);
  m->file = gc_arena_strdup(&m->arena, file ? file : "<string>");
  if (!m->file) {
    gc_module_free(m);
    return NULL;
  }
  return m;
}

void gc_module_free(gc_module *m) {
  if (!m) return;
  for (int i = 0; i < m->n_graphs; i++) {
    if (!m->graphs[i]) continue;
    gc_arena_free(&m->graphs[i]->arena);
    free(m->graphs[i]);
  }
  free(m->graphs);
  gc_arena_free(&m->arena);
  free(m);
}

gc_graph *gc_graph_new(gc_module *m, const char *name, gc_loc loc) {
  gc_graph **gs = realloc(m->graphs, (size_t)(m->n_graphs + 1) * sizeof *gs);
  if (!gs) return NULL;
  m->graphs = gs;
  gc_graph *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  gc_arena_init(&g->arena);
  g->name = gc_arena_strdup(&g->arena, name);
  if (!g->name) {
    gc_arena_free(&g->arena);
    free(g);
    return NULL;
  }
  g->loc = loc;
  m->graphs[m->n_graphs++] = g;
  return g;
}

gc_graph *gc_module_find_graph(const gc_module *m, const char *name) {
  if (name && name[0] == '@') name++;
  for (int i = 0; i < m->n_graphs; i++)
    if (strcmp(m->graphs[i]->name, name) == 0) return m->graphs[i];
  return NULL;
}

static gc_value *value_new(gc_graph *g, const char *name, gc_loc loc) {
  gc_value *v = gc_arena_alloc(&g->arena, sizeof *v);
  if (!v) return NULL;
  v->id = g->next_value_id++;
  v->name = name ? gc_arena_strdup(&g->arena, name) : gc_graph_fresh_name(g);
  v->loc = loc;
  return v->name ? v : NULL;
}

gc_value *gc_graph_add_arg(gc_graph *g, const char *name, const gc_type *type, gc_loc loc) {
  gc_value **args = gc_arena_alloc(&g->arena, (size_t)(g->n_args + 1) * sizeof *args);
  gc_value *v = value_new(g, name, loc);
  if (!args || !v) return NULL;
  if (g->n_args) memcpy(args, g->args, (size_t)g->n_args * sizeof *args);
  v->type = *type;
  v->def_index = g->n_args;
  args[g->n_args++] = v;
  g->args = args;
  return v;
}

/* Names of the form "%<digits>" are numbered; a fresh name is one past the
 * largest number in use, scanning values through the ops (rarely called). */
const char *gc_graph_fresh_name(gc_graph *g) {
  long long max = -1;
  for (int i = 0; i < g->n_args; i++) {
    char *end;
    long long k = strtoll(g->args[i]->name, &end, 10);
    if (*end == 0 && end != g->args[i]->name && k > max) max = k;
  }
  for (gc_op *op = g->first; op; op = op->next)
    for (int i = 0; i < op->n_results; i++) {
      if (!op->results[i]) continue; /* results of an op under construction */
      const char *s = op->results[i]->name;
      if (!s) continue;
      char *end;
      long long k = strtoll(s, &end, 10);
      if (*end == 0 && end != s && k > max) max = k;
    }
  return gc_arena_printf(&g->arena, "%lld", max + 1);
}

gc_op *gc_op_new(gc_graph *g, gc_opcode opc, int n_operands, gc_value *const *operands,
                 int n_results, const char *const *result_names, gc_loc loc) {
  gc_op *op = gc_arena_alloc(&g->arena, sizeof *op);
  if (!op) return NULL;
  op->opcode = opc;
  op->loc = loc;
  op->id = g->next_op_id++;
  op->n_operands = n_operands;
  op->operands = gc_arena_alloc(&g->arena, (size_t)(n_operands ? n_operands : 1) * sizeof(gc_value *));
  op->n_results = n_results;
  op->results = gc_arena_alloc(&g->arena, (size_t)(n_results ? n_results : 1) * sizeof(gc_value *));
  if (!op->operands || !op->results) return NULL;
  for (int i = 0; i < n_operands; i++) op->operands[i] = operands ? operands[i] : NULL;
  /* Link first so that fresh names see earlier results of this op. */
  gc_op_insert_before(g, op, NULL);
  for (int i = 0; i < n_results; i++) {
    gc_value *v = value_new(g, result_names ? result_names[i] : NULL, loc);
    if (!v) return NULL;
    v->def = op;
    v->def_index = i;
    op->results[i] = v;
  }
  return op;
}

void gc_op_set_attrs(gc_graph *g, gc_op *op, int n, const gc_named_attr *attrs) {
  gc_named_attr *a = gc_arena_alloc(&g->arena, (size_t)(n ? n : 1) * sizeof *a);
  if (!a) return;
  if (n) memcpy(a, attrs, (size_t)n * sizeof *a);
  op->attrs = a;
  op->n_attrs = n;
}

void gc_op_insert_before(gc_graph *g, gc_op *op, gc_op *before) {
  op->next = before;
  op->prev = before ? before->prev : g->last;
  if (op->prev)
    op->prev->next = op;
  else
    g->first = op;
  if (before)
    before->prev = op;
  else
    g->last = op;
  g->n_ops++;
}

void gc_op_remove(gc_graph *g, gc_op *op) {
  if (op->prev)
    op->prev->next = op->next;
  else
    g->first = op->next;
  if (op->next)
    op->next->prev = op->prev;
  else
    g->last = op->prev;
  op->prev = op->next = NULL;
  g->n_ops--;
}

void gc_value_replace_uses(gc_graph *g, gc_value *from, gc_value *to) {
  for (gc_op *op = g->first; op; op = op->next)
    for (int i = 0; i < op->n_operands; i++)
      if (op->operands[i] == from) op->operands[i] = to;
  for (int i = 0; i < g->n_outputs; i++)
    if (g->outputs[i] == from) g->outputs[i] = to;
}

void gc_graph_recount_uses(gc_graph *g) {
  for (int i = 0; i < g->n_args; i++) g->args[i]->n_uses = 0;
  for (gc_op *op = g->first; op; op = op->next)
    for (int i = 0; i < op->n_results; i++) op->results[i]->n_uses = 0;
  for (gc_op *op = g->first; op; op = op->next)
    for (int i = 0; i < op->n_operands; i++)
      if (op->operands[i]) op->operands[i]->n_uses++;
  for (int i = 0; i < g->n_outputs; i++)
    if (g->outputs[i]) g->outputs[i]->n_uses++;
}

/* ---- attributes ---------------------------------------------------------------- */
const gc_attr *gc_op_attr(const gc_op *op, const char *name) {
  for (int i = 0; i < op->n_attrs; i++)
    if (strcmp(op->attrs[i].name, name) == 0) return &op->attrs[i].val;
  return NULL;
}

double gc_attr_number(const gc_attr *a) {
  switch (a->kind) {
    case GC_ATTR_INT: return (double)a->u.i;
    case GC_ATTR_FLOAT: return a->u.f;
    case GC_ATTR_BOOL: return a->u.b ? 1.0 : 0.0;
    default: return 0.0;
  }
}

int64_t gc_op_attr_int(const gc_op *op, const char *name, int64_t dflt) {
  const gc_attr *a = gc_op_attr(op, name);
  return a && a->kind == GC_ATTR_INT ? a->u.i : dflt;
}

double gc_op_attr_float(const gc_op *op, const char *name, double dflt) {
  const gc_attr *a = gc_op_attr(op, name);
  return a && (a->kind == GC_ATTR_INT || a->kind == GC_ATTR_FLOAT) ? gc_attr_number(a) : dflt;
}

int gc_op_attr_bool(const gc_op *op, const char *name, int dflt) {
  const gc_attr *a = gc_op_attr(op, name);
  return a && a->kind == GC_ATTR_BOOL ? a->u.b : dflt;
}

const char *gc_op_attr_str(const gc_op *op, const char *name, const char *dflt) {
  const gc_attr *a = gc_op_attr(op, name);
  return a && a->kind == GC_ATTR_STR ? a->u.s : dflt;
}

int gc_attr_ints(const gc_attr *a, int64_t *out, int max) {
  if (a->kind == GC_ATTR_INT) {
    if (max < 1) return -1;
    out[0] = a->u.i;
    return 1;
  }
  if (a->kind != GC_ATTR_LIST || a->u.list.n > max) return -1;
  for (int i = 0; i < a->u.list.n; i++) {
    if (a->u.list.items[i].kind != GC_ATTR_INT) return -1;
    out[i] = a->u.list.items[i].u.i;
  }
  return a->u.list.n;
}

/* ---- cloning ------------------------------------------------------------------- */

/* Deep copy of an attribute value into arena a (strings and lists copied). */
static int clone_attr(gc_arena *a, gc_attr *dst, const gc_attr *src) {
  *dst = *src;
  if (src->kind == GC_ATTR_STR && src->u.s)
    return (dst->u.s = gc_arena_strdup(a, src->u.s)) != NULL;
  if (src->kind != GC_ATTR_LIST) return 1;
  int n = src->u.list.n;
  dst->u.list.items = gc_arena_alloc(a, (size_t)(n ? n : 1) * sizeof *dst->u.list.items);
  if (!dst->u.list.items) return 0;
  for (int i = 0; i < n; i++)
    if (!clone_attr(a, &dst->u.list.items[i], &src->u.list.items[i])) return 0;
  return 1;
}

/* A copy of value v in graph g (same id, name, type, location), recorded in map[id]. */
static gc_value *clone_value(gc_graph *g, gc_value **map, const gc_value *v, gc_op *def) {
  gc_value *c = gc_arena_alloc(&g->arena, sizeof *c);
  if (!c) return NULL;
  *c = *v;
  c->def = def;
  if (v->name && !(c->name = gc_arena_strdup(&g->arena, v->name))) return NULL;
  map[v->id] = c;
  return c;
}

/* Copy graph s into the new graph g: everything, ids and source locations included. */
static int clone_graph(gc_graph *g, const gc_graph *s) {
  gc_arena *a = &g->arena;
  gc_value **map = calloc((size_t)s->next_value_id + 1, sizeof *map);
  int ok = map != NULL;
  for (int i = 0; ok && i < s->n_syms; i++) {
    const char *nm = s->sym_names[i] ? gc_arena_strdup(a, s->sym_names[i]) : NULL;
    const gc_sym_expr *def = s->sym_defs && s->sym_defs[i] ? gc_sx_clone(g, s->sym_defs[i]) : NULL;
    ok = (nm || !s->sym_names[i]) && (def || !s->sym_defs || !s->sym_defs[i]) &&
         gc_graph_add_sym(g, nm, def) == i;
    if (ok) {
      g->sym_values[i] = s->sym_values ? s->sym_values[i] : GC_SYM_UNBOUND;
      if (s->sym_lo) g->sym_lo[i] = s->sym_lo[i];
      if (s->sym_hi) g->sym_hi[i] = s->sym_hi[i];
    }
  }
  g->n_args = s->n_args;
  g->args = gc_arena_alloc(a, (size_t)(s->n_args ? s->n_args : 1) * sizeof *g->args);
  ok = ok && g->args;
  for (int i = 0; ok && i < s->n_args; i++)
    ok = (g->args[i] = clone_value(g, map, s->args[i], NULL)) != NULL;
  g->n_result_types = s->n_result_types;
  g->result_types =
      gc_arena_alloc(a, (size_t)(s->n_result_types ? s->n_result_types : 1) * sizeof(gc_type));
  ok = ok && g->result_types;
  if (ok && s->n_result_types)
    memcpy(g->result_types, s->result_types, (size_t)s->n_result_types * sizeof *g->result_types);
  for (const gc_op *so = s->first; ok && so; so = so->next) {
    gc_op *op = gc_arena_alloc(a, sizeof *op);
    if (!(ok = op != NULL)) break;
    *op = *so;
    size_t no = (size_t)(so->n_operands ? so->n_operands : 1);
    size_t nr = (size_t)(so->n_results ? so->n_results : 1);
    size_t na = (size_t)(so->n_attrs ? so->n_attrs : 1);
    op->operands = gc_arena_alloc(a, no * sizeof *op->operands);
    op->results = gc_arena_alloc(a, nr * sizeof *op->results);
    op->attrs = gc_arena_alloc(a, na * sizeof *op->attrs);
    if (!(ok = op->operands && op->results && op->attrs)) break;
    for (int i = 0; i < so->n_operands; i++) /* SSA: operands are defined earlier */
      op->operands[i] = so->operands[i] ? map[so->operands[i]->id] : NULL;
    for (int i = 0; ok && i < so->n_results; i++)
      ok = (op->results[i] = clone_value(g, map, so->results[i], op)) != NULL;
    for (int i = 0; ok && i < so->n_attrs; i++) {
      op->attrs[i].name = gc_arena_strdup(a, so->attrs[i].name);
      ok = op->attrs[i].name && clone_attr(a, &op->attrs[i].val, &so->attrs[i].val);
    }
    op->prev = op->next = NULL;
    if (ok) gc_op_insert_before(g, op, NULL);
  }
  g->n_outputs = s->n_outputs;
  g->outputs = gc_arena_alloc(a, (size_t)(s->n_outputs ? s->n_outputs : 1) * sizeof *g->outputs);
  ok = ok && g->outputs;
  for (int i = 0; ok && i < s->n_outputs; i++)
    g->outputs[i] = s->outputs[i] ? map[s->outputs[i]->id] : NULL;
  g->ret_loc = s->ret_loc;
  g->next_value_id = s->next_value_id;
  g->next_op_id = s->next_op_id;
  free(map);
  return ok ? 0 : -1;
}

/* A deep copy of m that shares nothing with it (NULL when out of memory). */
gc_module *gc_module_clone(const gc_module *m) {
  gc_module *c = gc_module_new(m->file);
  if (!c) return NULL;
  c->version = m->version;
  c->weights_loc = m->weights_loc;
  int ok = !m->weights || (c->weights = gc_arena_strdup(&c->arena, m->weights)) != NULL;
  for (int i = 0; ok && i < m->n_graphs; i++) {
    gc_graph *g = gc_graph_new(c, m->graphs[i]->name, m->graphs[i]->loc);
    ok = g && clone_graph(g, m->graphs[i]) == 0;
  }
  if (!ok) {
    gc_module_free(c);
    return NULL;
  }
  return c;
}
