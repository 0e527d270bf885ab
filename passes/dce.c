/* dce.c - dead code elimination: drop ops whose results nobody uses.
 * One backward sweep suffices: removing a user can only make earlier ops dead,
 * and those are visited later in the sweep. */
#include "passes/pipeline.h"

int gc_pass_dce(gc_graph *g, gc_diags *d) {
  gc_graph_recount_uses(g);
  int removed = 0;
  for (gc_op *op = g->last, *prev; op; op = prev) {
    prev = op->prev;
    int used = 0;
    for (int i = 0; i < op->n_results; i++) used |= op->results[i]->n_uses > 0;
    if (used || gc_op_infos[op->opcode].kind == GC_KIND_WRITE) continue;  /* a state write is its effect */
    for (int i = 0; i < op->n_operands; i++) op->operands[i]->n_uses--;
    gc_op_remove(g, op);
    removed++;
  }
  return removed;
}
