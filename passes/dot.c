/* dot.c - a graph as Graphviz text (`graphc dot`).
 *
 *   digraph "mlp" {
 *     a0 [label="%x\nf32[4, 784]", shape=invhouse, ...];        graph arguments
 *     n1 [label="param %w1\n\"fc1.weight\"\nf32[784, 128]", ...]; params
 *     n5 [label="%h = matmul\nf32[4, 128]", shape=box, ...];      other ops
 *     a0 -> n5; n1 -> n5;                                         one edge per operand
 *     ret [label="return", shape=house]; n9 -> ret [label="0"];   outputs
 *   }
 *
 * Node names come from argument indexes and op ids (never pointers), and ops are
 * written in program order, so the text is deterministic. With groups (fusion),
 * the ops of group N are drawn inside `subgraph cluster_N`.
 */
#include <stdlib.h>
#include <string.h>

#include "passes/pipeline.h"

/* Text inside a DOT string: quotes and backslashes escaped, newlines as \n. */
static void put_escaped(gc_sbuf *b, const char *s) {
  for (; s && *s; s++) {
    if (*s == '"' || *s == '\\') gc_sbuf_putc(b, '\\');
    if (*s == '\n')
      gc_sbuf_puts(b, "\\n");
    else
      gc_sbuf_putc(b, *s);
  }
}

/* A type with the graph's symbol names. */
static void put_type(gc_sbuf *b, const gc_graph *g, const gc_type *t) {
  gc_type_print(b, t, g->n_syms ? g->sym_names : NULL);
}

/* Short text of a const's value: the scalar, or "[N values]". */
static void put_const_value(gc_sbuf *b, const gc_op *op) {
  const gc_attr *v = gc_op_attr(op, "value");
  if (!v) return;
  switch (v->kind) {
    case GC_ATTR_INT: gc_sbuf_printf(b, " %lld", (long long)v->u.i); break;
    case GC_ATTR_FLOAT: gc_sbuf_printf(b, " %.9g", v->u.f); break;
    case GC_ATTR_BOOL: gc_sbuf_puts(b, v->u.b ? " true" : " false"); break;
    case GC_ATTR_LIST: gc_sbuf_printf(b, " [%d values]", v->u.list.n); break;
    default: break;
  }
}

/* One op as a node: params and consts styled apart from computations. */
static void put_op_node(gc_sbuf *b, const gc_graph *g, const gc_op *op, const char *indent) {
  gc_sbuf label = {0};
  if (op->opcode == GC_OP_PARAM) {
    gc_sbuf_printf(&label, "param %%%s\n\"", op->results[0]->name);
    for (const char *s = gc_op_attr_str(op, "name", ""); *s; s++) /* as a .graph string */
      gc_sbuf_printf(&label, *s == '"' || *s == '\\' ? "\\%c" : "%c", *s);
    gc_sbuf_puts(&label, "\"\n");
  } else {
    for (int i = 0; i < op->n_results; i++)
      gc_sbuf_printf(&label, "%s%%%s", i ? ", " : "", op->results[i]->name);
    gc_sbuf_printf(&label, " = %s", gc_op_infos[op->opcode].name);
    if (op->opcode == GC_OP_CONST) put_const_value(&label, op);
    gc_sbuf_putc(&label, '\n');
  }
  for (int i = 0; i < op->n_results; i++) {
    if (i) gc_sbuf_puts(&label, ", ");
    put_type(&label, g, &op->results[i]->type);
  }
  gc_sbuf_printf(b, "%sn%d [label=\"", indent, op->id);
  put_escaped(b, label.data);
  gc_sbuf_free(&label);
  if (op->opcode == GC_OP_PARAM)
    gc_sbuf_puts(b, "\", shape=box3d, style=filled, fillcolor=\"#fff2cc\"];\n");
  else if (op->opcode == GC_OP_CONST || op->opcode == GC_OP_IOTA)
    gc_sbuf_puts(b, "\", shape=box, style=filled, fillcolor=\"#eeeeee\"];\n");
  else
    gc_sbuf_puts(b, "\", shape=box, style=rounded];\n");
}

/* Node name of a value: its argument or its defining op. */
static void put_value_node(gc_sbuf *b, const gc_value *v) {
  if (v->def)
    gc_sbuf_printf(b, "n%d", v->def->id);
  else
    gc_sbuf_printf(b, "a%d", v->def_index);
}

/* Group of op, or -1 (no groups given). */
static int group_of(const gc_dot_groups *gr, const gc_op *op) {
  return gr && gr->group_of ? gr->group_of(gr->user, op) : -1;
}

/* qsort comparator for ints. */
static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* Header, argument nodes, op nodes (clustered by group), edges, return node. */
void gc_dot_graph(gc_sbuf *b, const gc_graph *g, const gc_dot_groups *groups) {
  gc_sbuf_puts(b, "digraph \"");
  put_escaped(b, g->name);
  gc_sbuf_puts(b, "\" {\n  rankdir=TB;\n  node [fontname=\"monospace\", fontsize=10];\n"
                  "  edge [fontname=\"monospace\", fontsize=9];\n");
  for (int i = 0; i < g->n_args; i++) {
    gc_sbuf label = {0};
    gc_sbuf_printf(&label, "%%%s\n", g->args[i]->name);
    put_type(&label, g, &g->args[i]->type);
    gc_sbuf_printf(b, "  a%d [label=\"", i);
    put_escaped(b, label.data);
    gc_sbuf_puts(b, "\", shape=invhouse, style=filled, fillcolor=\"#dbe9f6\"];\n");
    gc_sbuf_free(&label);
  }
  /* Ops outside any group, then each group's ops in a cluster (ascending ids). */
  int *ids = calloc((size_t)(g->n_ops ? g->n_ops : 1), sizeof *ids), n_ids = 0;
  for (const gc_op *op = g->first; op; op = op->next) {
    int k = group_of(groups, op);
    if (k < 0) {
      put_op_node(b, g, op, "  ");
    } else if (ids) {
      int seen = 0;
      for (int j = 0; j < n_ids && !seen; j++) seen = ids[j] == k;
      if (!seen) ids[n_ids++] = k;
    }
  }
  if (ids) qsort(ids, (size_t)n_ids, sizeof *ids, cmp_int);
  for (int j = 0; j < n_ids; j++) {
    const char *label = groups->label_of ? groups->label_of(groups->user, ids[j]) : NULL;
    gc_sbuf_printf(b, "  subgraph cluster_%d {\n    label=\"", ids[j]);
    if (label)
      put_escaped(b, label);
    else
      gc_sbuf_printf(b, "group %d", ids[j]);
    gc_sbuf_puts(b, "\";\n    style=dashed;\n");
    for (const gc_op *op = g->first; op; op = op->next)
      if (group_of(groups, op) == ids[j]) put_op_node(b, g, op, "    ");
    gc_sbuf_puts(b, "  }\n");
  }
  if (!ids) b->failed = 1; /* grouped ops are missing: report out of memory */
  free(ids);
  for (const gc_op *op = g->first; op; op = op->next)
    for (int i = 0; i < op->n_operands; i++) {
      const gc_value *v = op->operands[i];
      gc_sbuf_puts(b, "  ");
      put_value_node(b, v);
      gc_sbuf_printf(b, " -> n%d", op->id);
      if (v->def && v->def->n_results > 1) gc_sbuf_printf(b, " [label=\"#%d\"]", v->def_index);
      gc_sbuf_puts(b, ";\n");
    }
  gc_sbuf_puts(b, "  ret [label=\"return\", shape=house];\n");
  for (int i = 0; i < g->n_outputs; i++) {
    gc_sbuf_puts(b, "  ");
    put_value_node(b, g->outputs[i]);
    gc_sbuf_printf(b, " -> ret [label=\"%d\"];\n", i);
  }
  gc_sbuf_puts(b, "}\n");
}
