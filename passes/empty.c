/* empty.c - the "empty" pass: tensors with a zero dim (ONNX's zero-sized tensors) reduced to
 * what the backends never have to run, the way XLA's algebraic simplifier treats zero-element
 * arrays. It runs first and always (also at -O0: it legalizes rather than optimizes).
 *
 *   an op whose result has no elements     -> a const of that (empty) type; the op goes (a
 *   (params and iotas too)                    param's tensor was checked against the file)
 *   reduce_sum / max / min / mean over an  -> a splat of the reduction's identity: 0, the
 *   empty axis (a non-empty result)           lowest / highest value (-inf / inf for floats,
 *                                             false / true for bool), NaN (0 / 0) for the mean
 *   matmul with K = 0                      -> zeros
 *   concat with empty operands             -> without them
 *
 * Afterwards no op reads an empty value (consts of no elements feed nothing but the graph's
 * outputs), so the backends see empty tensors only as graph inputs, which nothing reads, and
 * outputs, which they write nothing to. An op that would still read one (argmax over an
 * empty axis, a gather from an empty tensor, ...) is an error at the op: its result is
 * undefined. Needs concrete shapes; symbolic dims are left alone.
 */
#include <math.h>
#include <stdint.h>

#include "ir/dtype.h"
#include "passes/rewrite.h"

#define GC_MAX_SPLIT 256

static int is_empty(const gc_type *t) {
  if (!gc_type_is_concrete(t)) return 0;
  for (int i = 0; i < t->rank; i++)
    if (t->dims[i] == 0) return 1;
  return 0;
}

enum { ZERO, LOWEST, HIGHEST, NOT_A_NUMBER };

/* A splat const of type t holding `what` before `before` (NULL when OOM, flagged, or when
 * the value is an int a literal cannot hold: reported at the op). */
static gc_value *splat(gc_rewriter *rw, gc_op *before, const gc_type *t, int what, const char *name) {
  gc_attr val;
  if (gc_dtype_is_float(t->dtype)) {
    double v = what == LOWEST ? -INFINITY : what == HIGHEST ? INFINITY : what == NOT_A_NUMBER ? NAN : 0;
    val = (gc_attr){.kind = GC_ATTR_FLOAT, .u.f = v};
  } else if (t->dtype == GRAPHC_DTYPE_BOOL) {
    val = (gc_attr){.kind = GC_ATTR_BOOL, .u.b = what == HIGHEST};
  } else {
    int64_t lo, hi;
    gc_int_range(t->dtype, &lo, &hi);
    int64_t v = what == LOWEST ? lo : what == HIGHEST ? hi : 0;
    if (v <= -(INT64_C(1) << 62) || v >= (INT64_C(1) << 62)) {
      gc_error_at(rw->d, GRAPHC_STATUS_UNSUPPORTED, before->loc,
                  "%s over an empty axis of %s: its identity %lld is outside graphc's integer literals",
                  gc_op_infos[before->opcode].name, graphc_dtype_name(t->dtype), (long long)v);
      return NULL;
    }
    val = (gc_attr){.kind = GC_ATTR_INT, .u.i = v};
  }
  gc_named_attr at[3] = {{"value", val}, {"dtype", gc_rw_attr_dtype(t->dtype)}};
  int n = 2;
  if (t->rank) at[n++] = (gc_named_attr){"shape", gc_rw_attr_ints(rw, t->dims, t->rank)};
  gc_op *c = gc_rw_new_op(rw, GC_OP_CONST, before, 0, NULL, n, at, t, name, before->loc);
  return c ? c->results[0] : NULL;
}

/* The identity of reduction `opc` (NaN for the mean: 0 / 0). */
static int identity(gc_opcode opc) {
  return opc == GC_OP_REDUCE_MAX ? LOWEST : opc == GC_OP_REDUCE_MIN ? HIGHEST
         : opc == GC_OP_REDUCE_MEAN ? NOT_A_NUMBER : ZERO;
}

static int any_empty_operand(const gc_op *op) {
  for (int i = 0; i < op->n_operands; i++)
    if (is_empty(&op->operands[i]->type)) return 1;
  return 0;
}

int gc_pass_empty(gc_graph *g, gc_diags *d) {
  gc_rewriter rw;
  if (gc_rw_init(&rw, g, d) != 0) return -1;
  for (gc_op *op = g->first, *next; op && !rw.oom; op = next) {
    next = op->next;
    gc_rw_resolve_operands(&rw, op);
    const gc_op_info *in = &gc_op_infos[op->opcode];
    if (op->opcode == GC_OP_CONST || op->opcode == GC_OP_STATE || in->kind == GC_KIND_WRITE) continue;
    int empty_results = 0;
    for (int i = 0; i < op->n_results; i++) empty_results += is_empty(&op->results[i]->type);
    if (empty_results) {
      if (empty_results == op->n_results && op->n_results == 1) {
        gc_value *c = splat(&rw, op, &op->results[0]->type, ZERO, op->results[0]->name);
        if (c) gc_rw_replace_op(&rw, op, &c);
      } else if (op->opcode == GC_OP_SPLIT && op->n_results <= GC_MAX_SPLIT) {
        /* its empty parts as consts, the others as slices: no op keeps an empty result */
        gc_value *to[GC_MAX_SPLIT];
        const gc_type *xt = &op->operands[0]->type;
        int axis = (int)gc_op_attr_int(op, "axis", 0);
        if (axis < 0) axis += xt->rank;
        int64_t off = 0;
        for (int i = 0; i < op->n_results && !rw.oom; i++) {
          const gc_type *t = &op->results[i]->type;
          if (is_empty(t)) {
            to[i] = splat(&rw, op, t, ZERO, op->results[i]->name);
            continue;
          }
          int64_t st[GC_MAX_RANK], en[GC_MAX_RANK];
          for (int k = 0; k < xt->rank; k++) st[k] = 0, en[k] = xt->dims[k];
          st[axis] = off;
          en[axis] = off + t->dims[axis];
          off = en[axis];
          gc_named_attr at[2] = {{"start", gc_rw_attr_ints(&rw, st, xt->rank)},
                                 {"end", gc_rw_attr_ints(&rw, en, xt->rank)}};
          gc_op *sl = gc_rw_new_op(&rw, GC_OP_SLICE, op, 1, op->operands, 2, at, t, op->results[i]->name, op->loc);
          to[i] = sl ? sl->results[0] : NULL;
        }
        if (!rw.oom) gc_rw_replace_op(&rw, op, to);
      } else {
        gc_error_at(d, GRAPHC_STATUS_UNSUPPORTED, op->loc, "%s with an empty result among %d", in->name,
                    op->n_results);
      }
      continue;
    }
    if (!any_empty_operand(op)) continue;
    const gc_type *t = &op->results[0]->type;
    switch (op->opcode) {
      case GC_OP_REDUCE_SUM:
      case GC_OP_REDUCE_MAX:
      case GC_OP_REDUCE_MIN:
      case GC_OP_REDUCE_MEAN:
      case GC_OP_MATMUL: {
        gc_value *c = splat(&rw, op, t, identity(op->opcode), op->results[0]->name);
        if (c) gc_rw_replace_op(&rw, op, &c);
        break;
      }
      case GC_OP_CONCAT: {  /* the result has elements: so has some operand */
        int n = 0;
        for (int i = 0; i < op->n_operands; i++)
          if (!is_empty(&op->operands[i]->type)) op->operands[n++] = op->operands[i];
        op->n_operands = n;
        if (n == 1)
          gc_rw_replace_op(&rw, op, &op->operands[0]);
        else
          rw.changes++;
        break;
      }
      default:
        gc_error_at(d, GRAPHC_STATUS_UNSUPPORTED, op->loc,
                    "%s reads a tensor with no elements, and its (non-empty) result is undefined then",
                    in->name);
        break;
    }
  }
  int rc = gc_rw_finish(&rw);
  if (rc < 0 || d->n_errors) return -1;
  gc_graph_recount_uses(g);
  return rc;
}
