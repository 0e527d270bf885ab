/* verify.c - the verifier: structural SSA, arity, attribute schemas, types.
 *
 * Run after parsing and after every structural pass. For each op, in program
 * order: operands defined earlier, results defined once and counted as ops.def
 * says, operand count within MIN_IN..MAX_IN, attributes matching the ATTRS
 * schema string, declared types well formed, and then shape/dtype inference
 * (ir/infer.c): declared result types must equal the inferred ones; untyped
 * results receive them. An op with an error poisons its results, and ops that
 * use poisoned values are not inferred, so one mistake gives one error.
 * Unused results get a warning (warnings are not errors).
 */
#define _GNU_SOURCE /* qsort_r */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

#define MAX_SPECS 16
#define DIM_LIMIT (INT64_C(1) << 62)

/* ---- attribute schemas (ATTRS column of ops.def) ----------------------------------- */
typedef enum akind {
  AK_INT, AK_FLOAT, AK_STR, AK_BOOL, AK_DTYPE, AK_INTS, AK_FLOATS, AK_DIMS, AK_SCALAR, AK_ANY
} akind;

static const char *const akind_names[] = {"int",  "float",  "str",  "bool",   "dtype",
                                          "ints", "floats", "dims", "scalar", "any"};

/* What a kind accepts, for "expects ..." messages. */
static const char *const akind_expect[] = {
    "int", "float", "str", "bool", "dtype", "a list of ints", "a list of floats",
    "a list of dims (ints or symbolic dims)", "a scalar (int, float or bool)",
    "a scalar or a list of scalars"};

typedef struct aspec {
  const char *name;      /* points into the schema string */
  int len;
  akind kind;
  int optional;
} aspec;

/* Parse "name:kind?,name:kind" into specs; returns the count. A malformed
 * schema is a bug in ops.def. */
static int parse_schema(const char *s, aspec *out) {
  int n = 0;
  while (*s) {
    GC_ASSERT(n < MAX_SPECS);
    const char *colon = strchr(s, ':');
    GC_ASSERT(colon);
    const char *end = colon + 1;
    while (*end && *end != ',' && *end != '?') end++;
    aspec *a = &out[n++];
    a->name = s;
    a->len = (int)(colon - s);
    a->optional = *end == '?';
    int k = -1;
    for (int i = 0; i < (int)(sizeof akind_names / sizeof *akind_names); i++)
      if ((size_t)(end - colon - 1) == strlen(akind_names[i]) &&
          memcmp(colon + 1, akind_names[i], (size_t)(end - colon - 1)) == 0)
        k = i;
    GC_ASSERT(k >= 0);
    a->kind = (akind)k;
    if (*end == '?') end++;
    if (*end == ',') end++;
    s = end;
  }
  return n;
}

/* Edit distance (for "did you mean"), on short names only. */
static int edit_distance(const char *a, int na, const char *b, int nb) {
  int row[64];
  if (na > 62 || nb > 62) return 99;
  for (int j = 0; j <= nb; j++) row[j] = j;
  for (int i = 1; i <= na; i++) {
    int diag = row[0];
    row[0] = i;
    for (int j = 1; j <= nb; j++) {
      int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      diag = up;
      row[j] = best;
    }
  }
  return row[nb];
}

/* Kind of an attribute value in words, for "got ..." in messages. */
static const char *got_name(const gc_graph *g, const gc_attr *a) {
  switch (a->kind) {
    case GC_ATTR_INT:
      return GC_DIM_IS_SYM(a->u.i) && a->u.i - GC_DIM_SYM_BASE < g->n_syms ? "symbolic dim"
                                                                          : "int";
    case GC_ATTR_FLOAT: return "float";
    case GC_ATTR_STR: return "str";
    case GC_ATTR_BOOL: return "bool";
    case GC_ATTR_DTYPE: return "dtype";
    case GC_ATTR_LIST: return "list";
  }
  return "?";
}

/* Is a an INT naming one of the graph's symbols? */
static int is_sym(const gc_graph *g, const gc_attr *a) {
  return a->kind == GC_ATTR_INT && GC_DIM_IS_SYM(a->u.i) && a->u.i - GC_DIM_SYM_BASE < g->n_syms;
}

/* Does one (non-list) value fit an element of kind k? */
static int scalar_fits(const gc_graph *g, const gc_attr *a, akind k) {
  switch (k) {
    case AK_INT:
    case AK_INTS: return a->kind == GC_ATTR_INT && !is_sym(g, a);
    case AK_DIMS: return a->kind == GC_ATTR_INT && (is_sym(g, a) || !GC_DIM_IS_SYM(a->u.i));
    case AK_FLOAT:
    case AK_FLOATS: return a->kind == GC_ATTR_FLOAT || (a->kind == GC_ATTR_INT && !is_sym(g, a));
    case AK_STR: return a->kind == GC_ATTR_STR;
    case AK_BOOL: return a->kind == GC_ATTR_BOOL;
    case AK_DTYPE: return a->kind == GC_ATTR_DTYPE;
    case AK_SCALAR:
    case AK_ANY:
      return a->kind == GC_ATTR_FLOAT || a->kind == GC_ATTR_BOOL ||
             (a->kind == GC_ATTR_INT && !is_sym(g, a));
  }
  return 0;
}

/* A (nested) list of scalars, for `any`; *bad = the first offending item. */
static int any_fits(const gc_graph *g, const gc_attr *a, const gc_attr **bad) {
  if (a->kind != GC_ATTR_LIST) {
    if (scalar_fits(g, a, AK_SCALAR)) return 1;
    *bad = a;
    return 0;
  }
  for (int i = 0; i < a->u.list.n; i++)
    if (!any_fits(g, &a->u.list.items[i], bad)) return 0;
  return 1;
}

/* Location of an attribute, falling back to the op. */
static gc_loc at_or(gc_loc loc, gc_loc dflt) { return loc.line > 0 ? loc : dflt; }

/* Check one attribute value against its kind; reports and returns 0 on mismatch. */
static int check_attr_kind(const gc_graph *g, const gc_op *op, const gc_named_attr *na,
                           akind k, gc_diags *d) {
  const char *opn = gc_op_infos[op->opcode].name;
  const gc_attr *a = &na->val;
  gc_loc loc = at_or(a->loc, op->loc);
  int list_kind = k == AK_INTS || k == AK_FLOATS || k == AK_DIMS;
  if (k == AK_ANY) {
    const gc_attr *bad = a;
    if (any_fits(g, a, &bad)) return 1;
    if (bad == a) {
      gc_error_at(d, GRAPHC_STATUS_VERIFY_ERROR, loc, "%s: attribute '%s' expects %s, got %s",
                  opn, na->name, akind_expect[k], got_name(g, a));
    } else {
      gc_error_at(d, GRAPHC_STATUS_VERIFY_ERROR, at_or(bad->loc, loc),
                  "%s: attribute '%s' expects %s, got a list containing %s", opn, na->name,
                  akind_expect[k], got_name(g, bad));
    }
    return 0;
  }
  if (list_kind && a->kind == GC_ATTR_LIST) {
    for (int i = 0; i < a->u.list.n; i++) {
      const gc_attr *it = &a->u.list.items[i];
      if (scalar_fits(g, it, k)) continue;
      if (k == AK_DIMS && it->kind == GC_ATTR_INT)
        gc_error_at(d, GRAPHC_STATUS_VERIFY_ERROR, at_or(it->loc, loc),
                    "%s: attribute '%s' entry %d is %lld, too large for a dim", opn, na->name, i,
                    (long long)it->u.i);
      else
        gc_error_at(d, GRAPHC_STATUS_VERIFY_ERROR, at_or(it->loc, loc),
                    "%s: attribute '%s' expects %s, got a list containing %s", opn, na->name,
                    akind_expect[k], got_name(g, it));
      return 0;
    }
    return 1;
  }
  /* A single value also stands for a one-entry list (gc_attr_ints reads both). */
  if (a->kind != GC_ATTR_LIST && scalar_fits(g, a, k)) return 1;
  if (k == AK_DIMS && a->kind == GC_ATTR_INT)
    gc_error_at(d, GRAPHC_STATUS_VERIFY_ERROR, loc, "%s: attribute '%s' value %lld is too large for a dim",
                opn, na->name, (long long)a->u.i);
  else
    gc_error_at(d, GRAPHC_STATUS_VERIFY_ERROR, loc, "%s: attribute '%s' expects %s, got %s", opn,
                na->name, akind_expect[k], got_name(g, a));
  return 0;
}

/* Check an op's attributes against the schema: unknown, duplicate, kind, missing. */
static void check_attrs(const gc_graph *g, const gc_op *op, gc_diags *d) {
  const gc_op_info *info = &gc_op_infos[op->opcode];
  aspec specs[MAX_SPECS];
  int ns = parse_schema(info->attrs, specs);
  int found[MAX_SPECS] = {0};
  for (int i = 0; i < op->n_attrs; i++) {
    const gc_named_attr *na = &op->attrs[i];
    gc_loc loc = at_or(na->val.loc, op->loc);
    const char *nm = na->name ? na->name : "";
    int k = -1;
    for (int j = 0; j < ns; j++)
      if ((int)strlen(nm) == specs[j].len && memcmp(nm, specs[j].name, (size_t)specs[j].len) == 0)
        k = j;
    if (k < 0) {
      if (ns == 0) {
        gc_error_at(d, GRAPHC_STATUS_VERIFY_ERROR, loc,
                    "%s: unknown attribute '%s'; %s takes no attributes", info->name, nm,
                    info->name);
        continue;
      }
      gc_sbuf b = {0};
      int best = -1, best_d = 3;
      for (int j = 0; j < ns; j++) {
        gc_sbuf_printf(&b, "%s%.*s", j ? ", " : "", specs[j].len, specs[j].name);
        int e = edit_distance(nm, (int)strlen(nm), specs[j].name, specs[j].len);
        if (e < best_d) best_d = e, best = j;
      }
      if (best >= 0)
        gc_error_at(d, GRAPHC_STATUS_VERIFY_ERROR, loc,
                    "%s: unknown attribute '%s'; did you mean '%.*s'? (valid: %s)", info->name,
                    nm, specs[best].len, specs[best].name, b.data ? b.data : "");
      else
        gc_error_at(d, GRAPHC_STATUS_VERIFY_ERROR, loc, "%s: unknown attribute '%s' (valid: %s)",
                    info->name, nm, b.data ? b.data : "");
      gc_sbuf_free(&b);
      continue;
    }
    if (found[k]++) {
      gc_error_at(d, GRAPHC_STATUS_VERIFY_ERROR, loc, "%s: duplicate attribute '%s'", info->name,
                  nm);
      continue;
    }
    check_attr_kind(g, op, na, specs[k].kind, d);
  }
  for (int j = 0; j < ns; j++)
    if (!specs[j].optional && !found[j])
      gc_error_at(d, GRAPHC_STATUS_VERIFY_ERROR, op->loc,
                  "%s: missing required attribute '%.*s' (%s)", info->name, specs[j].len,
                  specs[j].name, akind_expect[specs[j].kind]);
}

/* ---- types ------------------------------------------------------------------------------ */

/* Check a type is well formed: valid dtype, rank <= 8, dims >= 0 (0: an empty tensor) or declared
 * symbols, element count <= 2^62. `what` says whose type it is. */
static int check_type(const gc_graph *g, const gc_type *t, gc_loc loc, const char *what,
                      gc_diags *d) {
  if ((unsigned)t->dtype >= GRAPHC_DTYPE_COUNT_) {
    gc_error_at(d, GRAPHC_STATUS_VERIFY_ERROR, loc, "%s has an invalid dtype (%d)", what,
                (int)t->dtype);
    return 0;
  }
  if (t->rank < 0 || t->rank > GC_MAX_RANK) {
    gc_error_at(d, GRAPHC_STATUS_VERIFY_ERROR, loc, "%s has rank %d; the maximum rank is %d",
                what, t->rank, GC_MAX_RANK);
    return 0;
  }
  for (int i = 0; i < t->rank; i++) {
    int64_t v = t->dims[i];
    if (GC_DIM_IS_SYM(v) && v - GC_DIM_SYM_BASE >= g->n_syms) {
      gc_error_at(d, GRAPHC_STATUS_VERIFY_ERROR, loc,
                  "%s: dim %d names symbolic dim #%lld, but @%s declares %d", what, i,
                  (long long)(v - GC_DIM_SYM_BASE), g->name, g->n_syms);
      return 0;
    }
  }
  gc_sbuf b = {0};
  gc_type_print(&b, t, g->sym_names);
  const char *ts = b.data ? b.data : "?";
  int ok = 1;
  for (int i = 0; ok && i < t->rank; i++)
    if (!GC_DIM_IS_SYM(t->dims[i]) && t->dims[i] < 0) {
      gc_error_at(d, GRAPHC_STATUS_VERIFY_ERROR, loc,
                  "%s %s has dim %d = %lld; dims must be >= 0", what, ts, i,
                  (long long)t->dims[i]);
      ok = 0;
    }
  if (ok) {
    int64_t n = 1;
    for (int i = 0; ok && i < t->rank; i++) {
      int64_t v = GC_DIM_IS_SYM(t->dims[i]) || t->dims[i] == 0 ? 1 : t->dims[i];
      if (n > DIM_LIMIT / v) {
        gc_error_at(d, GRAPHC_STATUS_VERIFY_ERROR, loc,
                    "%s %s: element count overflows 2^62", what, ts);
        ok = 0;
        break;
      }
      n *= v;
    }
  }
  gc_sbuf_free(&b);
  return ok;
}

/* "f32[B, 4]" into a malloc'd string (caller frees). */
static char *type_str(const gc_graph *g, const gc_type *t) {
  gc_sbuf b = {0};
  gc_type_print(&b, t, g->sym_names);
  char *s = gc_sbuf_take(&b);
  return s;
}

/* ---- the graph ---------------------------------------------------------------------------- */

/* Per-graph verification state: which values are defined and which are poisoned. */
typedef struct vstate {
  gc_graph *g;
  gc_diags *d;
  int nv;
  unsigned char *defined, *poisoned;
} vstate;

/* Is v a value we can index (id in range)? */
static int id_ok(const vstate *s, const gc_value *v) { return v->id >= 0 && v->id < s->nv; }

/* Check an op's operands; returns 1 when one of them is poisoned. */
static int check_operands(vstate *s, gc_op *op, int *err) {
  const char *opn = gc_op_infos[op->opcode].name;
  int poisoned = 0;
  for (int i = 0; i < op->n_operands; i++) {
    gc_value *v = op->operands[i];
    if (!v) {
      gc_error_at(s->d, GRAPHC_STATUS_VERIFY_ERROR, op->loc, "%s: operand %d is missing", opn, i);
      *err = 1;
    } else if (!id_ok(s, v) || !s->defined[v->id]) {
      gc_error_at(s->d, GRAPHC_STATUS_VERIFY_ERROR, op->loc,
                  "%s: operand %d (%%%s) is not defined before this use", opn, i,
                  v->name ? v->name : "?");
      *err = 1;
    } else if (s->poisoned[v->id]) {
      poisoned = 1;
    }
  }
  return poisoned;
}

/* Check an op's results: present, owned by op, defined once, counted right. */
static void check_results(vstate *s, gc_op *op, int *err) {
  const gc_op_info *info = &gc_op_infos[op->opcode];
  for (int i = 0; i < op->n_results; i++) {
    gc_value *v = op->results[i];
    if (!v || v->def != op || v->def_index != i || !id_ok(s, v)) {
      gc_error_at(s->d, GRAPHC_STATUS_VERIFY_ERROR, op->loc,
                  "%s: result %d is not a value defined by this op", info->name, i);
      *err = 1;
      continue;
    }
    if (s->defined[v->id]) {
      gc_error_at(s->d, GRAPHC_STATUS_VERIFY_ERROR, at_or(v->loc, op->loc),
                  "value %%%s is defined more than once", v->name ? v->name : "?");
      *err = 1;
    }
    s->defined[v->id] = 1;
  }
  int want = gc_op_result_count(op);
  if (want >= 0 && want != op->n_results) {
    if (info->n_out < 0)
      gc_error_at(s->d, GRAPHC_STATUS_VERIFY_ERROR, op->loc,
                  "%s: has %d result%s, but sizes has %d entr%s", info->name, op->n_results,
                  op->n_results == 1 ? "" : "s", want, want == 1 ? "y" : "ies");
    else
      gc_error_at(s->d, GRAPHC_STATUS_VERIFY_ERROR, op->loc, "%s: has %d results, expected %d",
                  info->name, op->n_results, want);
    *err = 1;
  }
}

/* Check the operand count against MIN_IN..MAX_IN. */
static void check_arity(vstate *s, gc_op *op, int *err) {
  const gc_op_info *info = &gc_op_infos[op->opcode];
  int n = op->n_operands;
  if (n >= info->min_in && (info->max_in < 0 || n <= info->max_in)) return;
  if (info->min_in == info->max_in)
    gc_error_at(s->d, GRAPHC_STATUS_VERIFY_ERROR, op->loc, "%s: expects %d operand%s, got %d",
                info->name, info->min_in, info->min_in == 1 ? "" : "s", n);
  else if (info->max_in < 0)
    gc_error_at(s->d, GRAPHC_STATUS_VERIFY_ERROR, op->loc,
                "%s: expects at least %d operand%s, got %d", info->name, info->min_in,
                info->min_in == 1 ? "" : "s", n);
  else
    gc_error_at(s->d, GRAPHC_STATUS_VERIFY_ERROR, op->loc, "%s: expects %d to %d operands, got %d",
                info->name, info->min_in, info->max_in, n);
  *err = 1;
}

/* Infer an op's result types; compare with declared ones or store them. */
static void infer_results(vstate *s, gc_op *op, int *err) {
  const char *opn = gc_op_infos[op->opcode].name;
  gc_type local[4], *out = local;
  if (op->n_results > 4 && !(out = malloc(sizeof *out * (size_t)op->n_results))) {
    gc_error_at(s->d, GRAPHC_STATUS_OUT_OF_MEMORY, op->loc, "out of memory");
    *err = 1;
    return;
  }
  if (!gc_infer_op(s->g, op, out, s->d)) {
    *err = 1;
  } else {
    for (int i = 0; i < op->n_results; i++) {
      gc_value *v = op->results[i];
      if (!op->typed) {
        v->type = out[i];
      } else if (!gc_type_equal(&v->type, &out[i])) {
        char *a = type_str(s->g, &v->type), *b = type_str(s->g, &out[i]);
        if (op->n_results > 1)
          gc_error_at(s->d, GRAPHC_STATUS_VERIFY_ERROR, op->loc,
                      "%s: declared type %s of result %d (%%%s) does not match inferred %s", opn,
                      a ? a : "?", i, v->name ? v->name : "?", b ? b : "?");
        else
          gc_error_at(s->d, GRAPHC_STATUS_VERIFY_ERROR, op->loc,
                      "%s: declared type %s does not match inferred %s", opn, a ? a : "?",
                      b ? b : "?");
        free(a);
        free(b);
        *err = 1;
      }
    }
  }
  if (out != local) free(out);
}

/* Verify one op in program order. */
static void verify_op(vstate *s, gc_op *op) {
  int err = 0;
  if ((unsigned)op->opcode >= GC_OP_COUNT_) {
    gc_error_at(s->d, GRAPHC_STATUS_VERIFY_ERROR, op->loc, "invalid opcode %d", (int)op->opcode);
    err = 1;
  } else {
    int err0 = s->d->n_errors;
    int poisoned = check_operands(s, op, &err);
    check_results(s, op, &err);
    check_arity(s, op, &err);
    check_attrs(s->g, op, s->d);
    /* Declared types (and a param's type, which is always declared) must be well formed. */
    for (int i = 0; i < op->n_results && !err; i++)
      if ((op->typed || op->opcode == GC_OP_PARAM || op->opcode == GC_OP_STATE) &&
          !check_type(s->g, &op->results[i]->type, at_or(op->results[i]->loc, op->loc),
                      "type", s->d))
        err = 1;
    if (s->d->n_errors != err0) err = 1;
    if (!err && !poisoned) infer_results(s, op, &err);
    if (poisoned) err = 1;
  }
  /* Results of a failed op are poisoned: uses are not inferred (no cascades). */
  for (int i = 0; i < op->n_results; i++) {
    gc_value *v = op->results[i];
    if (v && id_ok(s, v) && v->def == op) {
      s->defined[v->id] = 1;
      if (err) s->poisoned[v->id] = 1;
    }
  }
}

/* The return statement must match the signature in count and types. */
static void verify_signature(vstate *s) {
  gc_graph *g = s->g;
  gc_loc loc = at_or(g->ret_loc, g->loc);
  int types_ok = 1;
  for (int i = 0; i < g->n_result_types; i++)
    if (!check_type(g, &g->result_types[i], g->loc, "result type in the signature", s->d))
      types_ok = 0;
  for (int i = 0; i < g->n_outputs; i++) {
    gc_value *v = g->outputs[i];
    if (!v || !id_ok(s, v) || !s->defined[v->id]) {
      gc_error_at(s->d, GRAPHC_STATUS_VERIFY_ERROR, loc, "returned value %d (%%%s) is not defined",
                  i, v && v->name ? v->name : "?");
      return;
    }
  }
  if (g->n_outputs != g->n_result_types) {
    gc_error_at(s->d, GRAPHC_STATUS_VERIFY_ERROR, loc,
                "@%s returns %d value%s, but its signature declares %d result%s", g->name,
                g->n_outputs, g->n_outputs == 1 ? "" : "s", g->n_result_types,
                g->n_result_types == 1 ? "" : "s");
    return;
  }
  for (int i = 0; i < g->n_outputs && types_ok; i++) {
    gc_value *v = g->outputs[i];
    if (s->poisoned[v->id] || gc_type_equal(&v->type, &g->result_types[i])) continue;
    char *a = type_str(g, &v->type), *b = type_str(g, &g->result_types[i]);
    gc_error_at(s->d, GRAPHC_STATUS_VERIFY_ERROR, loc,
                "returned value %d (%%%s) has type %s, but the signature declares %s", i,
                v->name ? v->name : "?", a ? a : "?", b ? b : "?");
    free(a);
    free(b);
  }
}

/* Was this warning already reported (the verifier runs again after binding and
 * after passes; a warning is said once)? */
/* Order warning indices by location (for binary search); ctx is the gc_diags. */
static int cmp_loc(const void *a, const void *b, void *ctx) {
  const gc_diags *d = ctx;
  gc_loc x = d->items[*(const int *)a].loc, y = d->items[*(const int *)b].loc;
  return x.line != y.line ? (x.line < y.line ? -1 : 1) : (x.col > y.col) - (x.col < y.col);
}

/* Is the same warning already in d? `idx` lists d's warnings sorted by location. */
static int has_warning(const gc_diags *d, const int *idx, int n, gc_loc loc, const char *msg) {
  int lo = 0, hi = n;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    gc_loc m = d->items[idx[mid]].loc;
    if (m.line < loc.line || (m.line == loc.line && m.col < loc.col)) lo = mid + 1;
    else hi = mid;
  }
  for (; lo < n; lo++) {
    const gc_diag *g = &d->items[idx[lo]];
    if (g->loc.line != loc.line || g->loc.col != loc.col) break;
    if (strcmp(g->msg, msg) == 0) return 1;
  }
  return 0;
}

/* Warn about op results nobody uses (poisoned ones already have an error).
 * A warning already reported (by an earlier verification of the same graph)
 * is not repeated. */
static void warn_unused(vstate *s) {
  int *uses = calloc((size_t)(s->nv ? s->nv : 1), sizeof *uses);
  int *idx = calloc((size_t)(s->d->n ? s->d->n : 1), sizeof *idx);
  if (!uses || !idx) { /* warnings are best effort */
    free(uses);
    free(idx);
    return;
  }
  int n_idx = 0;
  for (int i = 0; i < s->d->n; i++)
    if (s->d->items[i].level == GC_DIAG_WARNING) idx[n_idx++] = i;
  qsort_r(idx, (size_t)n_idx, sizeof *idx, cmp_loc, s->d);
  for (gc_op *op = s->g->first; op; op = op->next)
    for (int i = 0; i < op->n_operands; i++)
      if (op->operands[i] && id_ok(s, op->operands[i])) uses[op->operands[i]->id]++;
  for (int i = 0; i < s->g->n_outputs; i++)
    if (s->g->outputs[i] && id_ok(s, s->g->outputs[i])) uses[s->g->outputs[i]->id]++;
  for (gc_op *op = s->g->first; op; op = op->next)
    for (int i = 0; i < op->n_results; i++) {
      gc_value *v = op->results[i];
      if (!v || v->def != op || !id_ok(s, v) || s->poisoned[v->id] || uses[v->id]) continue;
      if (gc_op_infos[op->opcode].kind == GC_KIND_WRITE) continue;  /* its effect is the point */
      char msg[256];
      snprintf(msg, sizeof msg, "value %%%s is never used", v->name ? v->name : "?");
      gc_loc loc = at_or(v->loc, op->loc);
      if (!has_warning(s->d, idx, n_idx, loc, msg)) gc_warning_at(s->d, loc, "%s", msg);
    }
  free(uses);
  free(idx);
}

/* States: names unique in the graph; a cache_write writes a state, which has the write
 * as its only use (the write is in place: nothing may read the state from before it). */
static void verify_states(vstate *s) {
  const gc_graph *g = s->g;
  for (const gc_op *op = g->first; op; op = op->next) {
    if (op->opcode == GC_OP_STATE && op->n_results == 1) {
      const char *nm = gc_op_attr_str(op, "name", "");
      for (const gc_op *o = g->first; o != op; o = o->next)
        if (o->opcode == GC_OP_STATE && strcmp(gc_op_attr_str(o, "name", ""), nm) == 0)
          gc_error_at(s->d, GRAPHC_STATUS_VERIFY_ERROR, op->loc,
                      "state \"%s\" is declared twice in @%s (first at line %d)", nm, g->name,
                      o->loc.line);
    }
    if (op->opcode != GC_OP_CACHE_WRITE || op->n_operands < 1 || !op->operands[0]) continue;
    const gc_value *st = op->operands[0];
    if (!st->def || st->def->opcode != GC_OP_STATE) {
      gc_error_at(s->d, GRAPHC_STATUS_VERIFY_ERROR, op->loc,
                  "cache_write writes a state in place: its first operand %%%s must be a state",
                  st->name ? st->name : "?");
      continue;
    }
    int uses = 0;
    for (const gc_op *o = g->first; o; o = o->next)
      for (int i = 0; i < o->n_operands; i++) uses += o->operands[i] == st;
    for (int i = 0; i < g->n_outputs; i++) uses += g->outputs[i] == st;
    if (uses != 1)
      gc_error_at(s->d, GRAPHC_STATUS_VERIFY_ERROR, op->loc,
                  "state %%%s is written here, so this cache_write must be its only use (it has %d): "
                  "read the state through the write's result",
                  st->name ? st->name : "?", uses);
  }
}

/* Verify arguments, ops in program order, the signature; then warn about unused values. */
/* Does e name only base symbols of g (valid indexes) and is it well formed? */
static int sym_expr_ok(const gc_graph *g, const gc_sym_expr *e) {
  if (!e) return 0;
  if (e->kind == GC_SX_SYM)
    return e->sym >= 0 && e->sym < g->n_syms && (!g->sym_defs || !g->sym_defs[e->sym]);
  if (e->kind == GC_SX_CONST) return 1;
  if (e->kind > GC_SX_MAX || e->n < 1 || ((e->kind > GC_SX_MUL) && e->n != 2)) return 0;
  for (int i = 0; i < e->n; i++)
    if (!sym_expr_ok(g, e->a[i])) return 0;
  return 1;
}

/* Symbols: ranges 1 <= lo <= hi, derived ones defined over base symbols, each
 * definition distinct (equal expressions must be one symbol). */
static void verify_syms(gc_graph *g, gc_diags *d) {
  for (int i = 0; i < g->n_syms; i++) {
    const char *nm = g->sym_names && g->sym_names[i] ? g->sym_names[i] : "?";
    const gc_sym_expr *def = g->sym_defs ? g->sym_defs[i] : NULL;
    if (g->sym_lo && g->sym_hi && (g->sym_lo[i] < 0 || g->sym_lo[i] > g->sym_hi[i]))
      gc_error_at(d, GRAPHC_STATUS_VERIFY_ERROR, g->loc, "symbolic dim %s has an invalid range %lld..%lld",
                  nm, (long long)g->sym_lo[i], (long long)g->sym_hi[i]);
    if (!def) continue;
    if (!sym_expr_ok(g, def) || def->kind == GC_SX_CONST || def->kind == GC_SX_SYM)
      gc_error_at(d, GRAPHC_STATUS_VERIFY_ERROR, g->loc,
                  "derived dim %s is malformed (it must be an expression over base symbols)", nm);
    for (int j = 0; j < i; j++)
      if (g->sym_defs[j] && gc_sx_cmp(g->sym_defs[j], def) == 0)
        gc_error_at(d, GRAPHC_STATUS_VERIFY_ERROR, g->loc, "derived dims %s and %s have the same definition",
                    g->sym_names[j], nm);
  }
}

int gc_verify_graph(gc_graph *g, gc_diags *d) {
  int err0 = d->n_errors;
  verify_syms(g, d);
  vstate s = {.g = g, .d = d, .nv = g->next_value_id};
  s.defined = calloc((size_t)(s.nv ? s.nv : 1), 1);
  s.poisoned = calloc((size_t)(s.nv ? s.nv : 1), 1);
  if (!s.defined || !s.poisoned) {
    free(s.defined);
    free(s.poisoned);
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, g->loc, "out of memory");
    return 1;
  }
  for (int i = 0; i < g->n_args; i++) {
    gc_value *v = g->args[i];
    if (!v || v->def || !id_ok(&s, v) || s.defined[v->id]) {
      gc_error_at(d, GRAPHC_STATUS_VERIFY_ERROR, g->loc, "argument %d of @%s is malformed", i,
                  g->name);
      continue;
    }
    s.defined[v->id] = 1;
    if (!check_type(g, &v->type, at_or(v->loc, g->loc), "argument type", d)) s.poisoned[v->id] = 1;
  }
  for (gc_op *op = g->first; op; op = op->next) verify_op(&s, op);
  verify_states(&s);
  verify_signature(&s);
  warn_unused(&s);
  free(s.defined);
  free(s.poisoned);
  return d->n_errors - err0;
}

/* Verify every graph; graph names must be unique. */
int gc_verify_module(gc_module *m, gc_diags *d) {
  int err0 = d->n_errors;
  for (int i = 0; i < m->n_graphs; i++) {
    gc_graph *g = m->graphs[i];
    for (int j = 0; j < i; j++)
      if (strcmp(m->graphs[j]->name, g->name) == 0) {
        gc_error_at(d, GRAPHC_STATUS_VERIFY_ERROR, g->loc, "graph @%s is defined more than once",
                    g->name);
        break;
      }
    gc_verify_graph(g, d);
  }
  return d->n_errors - err0;
}
