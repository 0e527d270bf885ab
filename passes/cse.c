/* cse.c - common subexpression elimination.
 *
 * Two ops are the same computation when they have the same opcode, the same
 * operands (the same values, in order), equal attributes (compared deeply and
 * by name, so their order does not matter; floats compare by bits, so 0.0 and
 * -0.0 differ and NaN equals NaN) and equal result types. The later one is
 * removed and its uses take the earlier one's results. Params with the same
 * name and type merge too (same weights tensor). Ops are visited in program
 * order and hashed with value ids, never pointers, so the result is
 * deterministic.
 */
#include <stdlib.h>
#include <string.h>

#include "passes/rewrite.h"

/* ---- hashing (FNV-1a over ids and attribute contents) -------------------------------- */
/* Fold the 8 bytes of v into the hash. */
static uint64_t mix(uint64_t h, uint64_t v) {
  for (int i = 0; i < 8; i++) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= UINT64_C(0x100000001b3);
  }
  return h;
}

/* Fold a NUL-terminated string (and its end) into the hash. */
static uint64_t mix_str(uint64_t h, const char *s) {
  for (; s && *s; s++) h = mix(h, (unsigned char)*s);
  return mix(h, 0);
}

/* Hash of one attribute value (lists recursively). */
static uint64_t attr_hash(uint64_t h, const gc_attr *a) {
  h = mix(h, (uint64_t)a->kind);
  switch (a->kind) {
    case GC_ATTR_INT: return mix(h, (uint64_t)a->u.i);
    case GC_ATTR_FLOAT: {
      uint64_t bits;
      memcpy(&bits, &a->u.f, sizeof bits);
      return mix(h, bits);
    }
    case GC_ATTR_STR: return mix_str(h, a->u.s);
    case GC_ATTR_BOOL: return mix(h, (uint64_t)(a->u.b != 0));
    case GC_ATTR_DTYPE: return mix(h, (uint64_t)a->u.dt);
    case GC_ATTR_LIST:
      h = mix(h, (uint64_t)a->u.list.n);
      for (int i = 0; i < a->u.list.n; i++) h = attr_hash(h, &a->u.list.items[i]);
      return h;
  }
  return h;
}

/* Hash of an op's computation: opcode, operand ids, attributes (order-free sum),
 * result types. */
static uint64_t op_hash(const gc_op *op) {
  uint64_t h = mix(UINT64_C(0xcbf29ce484222325), (uint64_t)op->opcode);
  h = mix(h, (uint64_t)op->n_operands);
  for (int i = 0; i < op->n_operands; i++) h = mix(h, (uint64_t)op->operands[i]->id);
  uint64_t attrs = 0;
  for (int i = 0; i < op->n_attrs; i++)
    attrs += attr_hash(mix_str(UINT64_C(0xcbf29ce484222325), op->attrs[i].name), &op->attrs[i].val);
  h = mix(h, attrs);
  h = mix(h, (uint64_t)op->n_results);
  for (int i = 0; i < op->n_results; i++) {
    const gc_type *t = &op->results[i]->type;
    h = mix(mix(h, (uint64_t)t->dtype), (uint64_t)t->rank);
    for (int k = 0; k < t->rank; k++) h = mix(h, (uint64_t)t->dims[k]);
  }
  return h;
}

/* ---- equality --------------------------------------------------------------------------- */

/* Deep equality of attribute values; floats by bits. */
static int attr_equal(const gc_attr *a, const gc_attr *b) {
  if (a->kind != b->kind) return 0;
  switch (a->kind) {
    case GC_ATTR_INT: return a->u.i == b->u.i;
    case GC_ATTR_FLOAT: return memcmp(&a->u.f, &b->u.f, sizeof a->u.f) == 0;
    case GC_ATTR_STR: return strcmp(a->u.s ? a->u.s : "", b->u.s ? b->u.s : "") == 0;
    case GC_ATTR_BOOL: return (a->u.b != 0) == (b->u.b != 0);
    case GC_ATTR_DTYPE: return a->u.dt == b->u.dt;
    case GC_ATTR_LIST:
      if (a->u.list.n != b->u.list.n) return 0;
      for (int i = 0; i < a->u.list.n; i++)
        if (!attr_equal(&a->u.list.items[i], &b->u.list.items[i])) return 0;
      return 1;
  }
  return 0;
}

/* Same computation (see the file comment)? */
static int op_equal(const gc_op *a, const gc_op *b) {
  if (a->opcode != b->opcode || a->n_operands != b->n_operands || a->n_results != b->n_results ||
      a->n_attrs != b->n_attrs)
    return 0;
  for (int i = 0; i < a->n_operands; i++)
    if (a->operands[i] != b->operands[i]) return 0;
  for (int i = 0; i < a->n_results; i++)
    if (!gc_type_equal(&a->results[i]->type, &b->results[i]->type)) return 0;
  for (int i = 0; i < a->n_attrs; i++) {
    const gc_attr *other = gc_op_attr(b, a->attrs[i].name);
    if (!other || !attr_equal(&a->attrs[i].val, other)) return 0;
  }
  return 1;
}

/* ---- the pass ------------------------------------------------------------------------------ */

/* Keep the first op of each computation in an open-addressing table; later
 * equal ops are replaced by it. Returns the number of ops removed. */
int gc_pass_cse(gc_graph *g, gc_diags *d) {
  gc_rewriter rw;
  if (gc_rw_init(&rw, g, d) != 0) return -1;
  size_t cap = 16;
  while (cap < 2 * (size_t)g->n_ops) cap *= 2;
  gc_op **table = calloc(cap, sizeof *table);
  if (!table) {
    rw.oom = 1;
    return gc_rw_finish(&rw);
  }
  for (gc_op *op = g->first, *next; op; op = next) {
    next = op->next;
    gc_rw_resolve_operands(&rw, op);
    size_t slot = (size_t)op_hash(op) & (cap - 1);
    while (table[slot] && !op_equal(table[slot], op)) slot = (slot + 1) & (cap - 1);
    if (table[slot])
      gc_rw_replace_op(&rw, op, table[slot]->results);
    else
      table[slot] = op;
  }
  free(table);
  return gc_rw_finish(&rw);
}
