/* specialize.c - replace a graph's symbolic dims by their bound values.
 *
 * Every base symbol declared in <...> must be bound (within its range); derived
 * symbols are evaluated from them (gc_graph_eval_syms). Every symbol declared in <...> must be bound (g->sym_values[i] >= 0, e.g. by
 * --bind B=4); then each GC_DIM_SYM(i) in argument types, signature result
 * types, value types and `dims` attributes becomes sym_values[i]. Nothing is
 * changed when a symbol is unbound. The caller re-verifies afterwards, which
 * re-runs inference with concrete sizes (and catches, e.g., a reshape that only
 * worked symbolically, or an element count that overflows once bound).
 * gc_param_type does the same for one param's type without changing the graph
 * (and leaves unbound symbols be), for checking and writing weights files.
 */
#include <string.h>

#include "ir/ir.h"

#define DIM_LIMIT (INT64_C(1) << 62)

/* Substitute bound symbols in one type. */
static void subst_type(const gc_graph *g, gc_type *t) {
  for (int i = 0; i < t->rank && i < GC_MAX_RANK; i++) {
    int64_t v = t->dims[i];
    if (GC_DIM_IS_SYM(v) && v - GC_DIM_SYM_BASE < g->n_syms)
      t->dims[i] = g->sym_values[v - GC_DIM_SYM_BASE];
  }
}

/* The dtype param op's tensor has in the weights file: its `from` dtype, else its own. */
gc_dtype gc_param_file_dtype(const gc_op *op) {
  const gc_attr *from = gc_op_attr(op, "from");
  return from && from->kind == GC_ATTR_DTYPE ? from->u.dt : op->results[0]->type.dtype;
}

/* The declared type of param op with g's bound symbols substituted (unbound ones
 * stay symbolic) and the file's dtype: what a weights file must hold for it, before
 * specialization. */
gc_type gc_param_type(const gc_graph *g, const gc_op *op) {
  gc_type t = op->results[0]->type;
  t.dtype = gc_param_file_dtype(op);
  for (int i = 0; i < t.rank; i++) {
    int64_t dim = t.dims[i];
    if (GC_DIM_IS_SYM(dim) && GC_DIM_SYM_INDEX(dim) < g->n_syms && g->sym_values &&
        g->sym_values[GC_DIM_SYM_INDEX(dim)] >= 0)
      t.dims[i] = g->sym_values[GC_DIM_SYM_INDEX(dim)];
  }
  return t;
}

/* Substitute bound symbols in an attribute value (lists recursively). */
static void subst_attr(const gc_graph *g, gc_attr *a) {
  if (a->kind == GC_ATTR_LIST) {
    for (int i = 0; i < a->u.list.n; i++) subst_attr(g, &a->u.list.items[i]);
  } else if (a->kind == GC_ATTR_INT && GC_DIM_IS_SYM(a->u.i) &&
             a->u.i - GC_DIM_SYM_BASE < g->n_syms) {
    a->u.i = g->sym_values[a->u.i - GC_DIM_SYM_BASE];
  }
}

/* Is attribute `name` of kind `dims` in the op's schema string? */
static int is_dims_attr(const gc_op *op, const char *name) {
  const char *s = gc_op_infos[op->opcode].attrs;
  size_t n = strlen(name);
  while (*s) {
    const char *colon = strchr(s, ':');
    if (!colon) return 0;
    if ((size_t)(colon - s) == n && memcmp(s, name, n) == 0)
      return strncmp(colon + 1, "dims", 4) == 0 && (colon[5] == 0 || colon[5] == ',' ||
                                                     colon[5] == '?');
    const char *comma = strchr(colon, ',');
    if (!comma) return 0;
    s = comma + 1;
  }
  return 0;
}

/* Check every symbol is bound, then substitute values everywhere in g. */
int gc_graph_specialize(gc_graph *g, gc_diags *d) {
  int errs = 0;
  for (int i = 0; i < g->n_syms; i++) {
    if (g->sym_defs && g->sym_defs[i]) continue; /* derived: evaluated below */
    int64_t v = g->sym_values ? g->sym_values[i] : GC_SYM_UNBOUND;
    const char *nm = g->sym_names && g->sym_names[i] ? g->sym_names[i] : "?";
    if (v < 0) {
      gc_error_at(d, GRAPHC_STATUS_VERIFY_ERROR, g->loc,
                  "symbolic dim %s is not bound; use --bind %s=N", nm, nm);
      errs++;
    } else if (v >= DIM_LIMIT) {
      gc_error_at(d, GRAPHC_STATUS_VERIFY_ERROR, g->loc,
                  "symbolic dim %s is bound to %lld, which is too large (at most 2^62 - 1)", nm,
                  (long long)v);
      errs++;
    }
  }
  if (errs) return errs;
  if ((errs = gc_graph_eval_syms(g, d))) return errs;
  for (int i = 0; i < g->n_args; i++)
    if (g->args[i]) subst_type(g, &g->args[i]->type);
  for (int i = 0; i < g->n_result_types; i++) subst_type(g, &g->result_types[i]);
  for (gc_op *op = g->first; op; op = op->next) {
    for (int i = 0; i < op->n_results; i++)
      if (op->results[i]) subst_type(g, &op->results[i]->type);
    if ((unsigned)op->opcode >= GC_OP_COUNT_) continue;
    for (int i = 0; i < op->n_attrs; i++)
      if (op->attrs[i].name && is_dims_attr(op, op->attrs[i].name))
        subst_attr(g, &op->attrs[i].val);
  }
  return 0;
}
