/* print.c - the graph IR as .graph text, in the canonical form the parser reads back:
 *
 *   version 1;
 *   weights "mlp.safetensors";
 *
 *   graph @mlp<B>(%x: f32[B, 784]) -> (f32[B, 10]) {
 *     param %w1: f32[784, 128] = "fc1.weight";
 *     param %w2: f16[128, 10] = "fc2.weight" from f32;
 *     %h = matmul(%x, %w1) : f32[B, 128];
 *     return %h;
 *   }
 *
 * Two-space indent, a blank line before each graph, attributes in their stored
 * order, result types always printed, symbolic dims by name, floats in the
 * shortest form that reads back to the same double (print_float). Printing, parsing and
 * printing again gives identical text.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/ir.h"

/* Shortest round-tripping float, like Python's repr: the fewest significant digits
 * that strtod reads back exactly; fixed notation for exponents -4..15 (with ".0"
 * added to whole numbers), else "1e-05" style; inf, -inf and nan spelled out. */
static void print_float(gc_sbuf *b, double f) {
  if (isnan(f)) {
    gc_sbuf_puts(b, "nan");
    return;
  }
  if (isinf(f)) {
    gc_sbuf_puts(b, f < 0 ? "-inf" : "inf");
    return;
  }
  char buf[64];
  int prec = 1;
  for (; prec < 17; prec++) {
    snprintf(buf, sizeof buf, "%.*e", prec - 1, f);
    if (strtod(buf, NULL) == f) break;
  }
  snprintf(buf, sizeof buf, "%.*e", prec - 1, f);
  int exp = atoi(strchr(buf, 'e') + 1);
  if (exp >= -4 && exp < 16) {
    snprintf(buf, sizeof buf, "%.*f", prec - 1 - exp > 0 ? prec - 1 - exp : 0, f);
    if (!strchr(buf, '.')) strcat(buf, ".0");
  }
  gc_sbuf_puts(b, buf);
}

/* A string literal with \" \\ \n \t escapes. */
static void print_string(gc_sbuf *b, const char *s) {
  gc_sbuf_putc(b, '"');
  for (; *s; s++) {
    switch (*s) {
      case '"': gc_sbuf_puts(b, "\\\""); break;
      case '\\': gc_sbuf_puts(b, "\\\\"); break;
      case '\n': gc_sbuf_puts(b, "\\n"); break;
      case '\t': gc_sbuf_puts(b, "\\t"); break;
      default: gc_sbuf_putc(b, *s); break;
    }
  }
  gc_sbuf_putc(b, '"');
}

/* An attribute value; INT values that are symbolic dims print the graph's name. */
static void print_attr(gc_sbuf *b, const gc_graph *g, const gc_attr *a) {
  switch (a->kind) {
    case GC_ATTR_INT:
      if (GC_DIM_IS_SYM(a->u.i)) {
        int k = GC_DIM_SYM_INDEX(a->u.i);
        if (k < g->n_syms)
          gc_sbuf_puts(b, g->sym_names[k]);
        else
          gc_sbuf_printf(b, "?%d", k);
      } else {
        gc_sbuf_printf(b, "%lld", (long long)a->u.i);
      }
      break;
    case GC_ATTR_FLOAT: print_float(b, a->u.f); break;
    case GC_ATTR_STR: print_string(b, a->u.s ? a->u.s : ""); break;
    case GC_ATTR_BOOL: gc_sbuf_puts(b, a->u.b ? "true" : "false"); break;
    case GC_ATTR_DTYPE: {
      const char *n = graphc_dtype_name(a->u.dt);
      gc_sbuf_puts(b, n ? n : "?dtype");
      break;
    }
    case GC_ATTR_LIST:
      gc_sbuf_putc(b, '[');
      for (int i = 0; i < a->u.list.n; i++) {
        if (i) gc_sbuf_puts(b, ", ");
        print_attr(b, g, &a->u.list.items[i]);
      }
      gc_sbuf_putc(b, ']');
      break;
  }
}

/* A type with the graph's symbol names. */
static void print_type(gc_sbuf *b, const gc_graph *g, const gc_type *t) {
  gc_type_print(b, t, g->n_syms ? g->sym_names : NULL);
}

/* "%name" of a value ("%?" for a missing one, which no valid graph has). */
static void print_value(gc_sbuf *b, const gc_value *v) {
  gc_sbuf_printf(b, "%%%s", v && v->name ? v->name : "?");
}

/* One statement: a param or state, or results = op(operands, attrs) : types. */
static void print_op(gc_sbuf *b, const gc_graph *g, const gc_op *op) {
  gc_sbuf_puts(b, "  ");
  if ((op->opcode == GC_OP_PARAM || op->opcode == GC_OP_STATE) && op->n_results == 1) {
    gc_sbuf_printf(b, "%s ", gc_op_infos[op->opcode].name);
    print_value(b, op->results[0]);
    gc_sbuf_puts(b, ": ");
    print_type(b, g, &op->results[0]->type);
    gc_sbuf_puts(b, " = ");
    print_string(b, gc_op_attr_str(op, "name", ""));
    const gc_attr *from = gc_op_attr(op, "from");
    if (from && from->kind == GC_ATTR_DTYPE) gc_sbuf_printf(b, " from %s", graphc_dtype_name(from->u.dt));
    gc_sbuf_puts(b, ";\n");
    return;
  }
  for (int i = 0; i < op->n_results; i++) {
    if (i) gc_sbuf_puts(b, ", ");
    print_value(b, op->results[i]);
  }
  gc_sbuf_printf(b, " = %s(", gc_op_infos[op->opcode].name);
  int first = 1;
  for (int i = 0; i < op->n_operands; i++, first = 0) {
    if (!first) gc_sbuf_puts(b, ", ");
    print_value(b, op->operands[i]);
  }
  for (int i = 0; i < op->n_attrs; i++, first = 0) {
    if (!first) gc_sbuf_puts(b, ", ");
    gc_sbuf_printf(b, "%s=", op->attrs[i].name);
    print_attr(b, g, &op->attrs[i].val);
  }
  gc_sbuf_puts(b, ")");
  for (int i = 0; i < op->n_results; i++) {
    gc_sbuf_puts(b, i ? ", " : " : ");
    print_type(b, g, &op->results[i]->type);
  }
  gc_sbuf_puts(b, ";\n");
}

/* Signature, statements in program order, return. */
void gc_print_graph(gc_sbuf *b, const gc_graph *g) {
  gc_sbuf_printf(b, "graph @%s", g->name);
  if (g->n_syms) {
    gc_sbuf_putc(b, '<');
    for (int i = 0; i < g->n_syms; i++) {
      if (i) gc_sbuf_puts(b, ", ");
      gc_sbuf_puts(b, g->sym_names[i]);
      const gc_sym_expr *def = g->sym_defs ? g->sym_defs[i] : NULL;
      int64_t lo = g->sym_lo ? g->sym_lo[i] : 1, hi = g->sym_hi ? g->sym_hi[i] : GC_SYM_MAX;
      if (def) {
        gc_sbuf_puts(b, " = ");
        gc_sx_print(b, g, def);
      } else if (lo != 1 || hi != GC_SYM_MAX) {
        gc_sbuf_printf(b, ": %lld..%lld", (long long)lo, (long long)hi);
      }
    }
    gc_sbuf_putc(b, '>');
  }
  gc_sbuf_putc(b, '(');
  for (int i = 0; i < g->n_args; i++) {
    if (i) gc_sbuf_puts(b, ", ");
    print_value(b, g->args[i]);
    gc_sbuf_puts(b, ": ");
    print_type(b, g, &g->args[i]->type);
  }
  gc_sbuf_puts(b, ") -> (");
  for (int i = 0; i < g->n_result_types; i++) {
    if (i) gc_sbuf_puts(b, ", ");
    print_type(b, g, &g->result_types[i]);
  }
  gc_sbuf_puts(b, ") {\n");
  for (const gc_op *op = g->first; op; op = op->next) print_op(b, g, op);
  gc_sbuf_puts(b, "  return");
  for (int i = 0; i < g->n_outputs; i++) {
    gc_sbuf_puts(b, i ? ", " : " ");
    print_value(b, g->outputs[i]);
  }
  gc_sbuf_puts(b, ";\n}\n");
}

/* Header lines, then each graph after a blank line. */
void gc_print_module(gc_sbuf *b, const gc_module *m) {
  gc_sbuf_printf(b, "version %d;\n", m->version ? m->version : 1);
  if (m->weights) {
    gc_sbuf_puts(b, "weights ");
    print_string(b, m->weights);
    gc_sbuf_puts(b, ";\n");
  }
  for (int i = 0; i < m->n_graphs; i++) {
    gc_sbuf_putc(b, '\n');
    gc_print_graph(b, m->graphs[i]);
  }
}
