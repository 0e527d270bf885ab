/* precision.c - the `precision` pass: f32 models computed in f16 or bf16 (or with tf32
 * matmuls), the way TensorRT's builder precision flags work.
 *
 *   --precision f32    nothing changes (the default)
 *   --precision tf32   nothing changes in the graph: f32 matmuls (convolutions too, which
 *                      the conv-gemm pass writes as matmuls) run on the tensor cores with
 *                      operands rounded to tf32 (kir_target.tf32, the CUDA backend); the
 *                      interpreter and the CPU compute them in f32
 *   --precision f16 / bf16   the graph is rewritten:
 *
 * Every op is one of
 *   anchor     matmul, conv2d: always in the reduced type R (f32 accumulation: the
 *              backends accumulate f16 / bf16 products in f32, the interpreter in float64)
 *   chain      elementwise ops with bounded error growth (add, sub, mul, neg, abs, relu,
 *              gelu, silu, tanh, sigmoid, erf, clamp, maximum, minimum, floor, ceil,
 *              select, comparisons, div by a constant of magnitude >= 1) and exact data
 *              movement (reshape, transpose, broadcast, concat, slice, pad, gather, split,
 *              im2col) and pooling: in R when one of their float operands is already an R
 *              value this pass made (the chains between matmuls and convolutions)
 *   attention  a softmax over the last axis whose operand is an R value (the scores of
 *              a matmul made R, scaled and masked) and whose every user is a matmul
 *              reading it as the left operand: in R, as in a model exported in R -- the
 *              fused attention kernel and the row kernels compute softmax in f32 and
 *              round only the probabilities, which the next matmul reads in R anyway;
 *              an additive mask on those scores is in R too (its residual rule below
 *              does not apply: the mask is 0 or a large negative number)
 *   sensitive  everything else (softmax, log_softmax, layernorm, rmsnorm, reductions,
 *              argmax, exp, log, sqrt, rsqrt, pow, sin, cos, div by a tensor): f32; so is
 *              the residual stream: an add / sub whose result feeds a norm or that adds
 *              an f32 activation (not a param or const) to an R value; and every op
 *              with a result whose name matches --keep-f32=REGEX (POSIX extended)
 * An op computed in R gets its other f32 float operands through `cast(v, to=R)`, one per
 * value, placed right after v's definition. A param read only through that cast becomes
 * an R param `from f32` and the cast goes (retype_params): the loader converts its weights
 * once, so the device and a bundle hold only the R tensor. A param with f32 uses too keeps
 * its cast, which reads only the weights: the backends run it once per weights
 * (codegen/prologue.c), never per run. A sensitive op
 * reads R values through `cast(v, to=f32)`; the graph's outputs too, so inputs and outputs
 * keep their declared dtypes. Casts of constants fold (fold.c).
 *
 * Ops with float operands or results that were not f32 to begin with are left as they are:
 * a model already in f16 or bf16 (no f32 matmul or convolution) is left alone, and the
 * stats say so. Runs first in the pipeline, so every backend, the interpreter and
 * --print-after see the same program.
 */
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "passes/rewrite.h"

enum { CLS_OTHER, CLS_ANCHOR, CLS_CHAIN, CLS_SENSITIVE };

int gc_precision_parse(const char *s, graphc_precision_t *out) {
  for (int p = GRAPHC_PRECISION_F32; p <= GRAPHC_PRECISION_FP8; p++)
    if (s && strcmp(s, gc_precision_name((graphc_precision_t)p)) == 0) {
      *out = (graphc_precision_t)p;
      return 0;
    }
  return -1;
}

/* "f32", "tf32", "f16", "bf16", "fp8" (NULL for a value outside the enum). */
const char *gc_precision_name(graphc_precision_t p) {
  switch (p) {
    case GRAPHC_PRECISION_F32: return "f32";
    case GRAPHC_PRECISION_TF32: return "tf32";
    case GRAPHC_PRECISION_F16: return "f16";
    case GRAPHC_PRECISION_BF16: return "bf16";
    case GRAPHC_PRECISION_FP8: return "fp8";
  }
  return NULL;
}

/* Check opts->precision and opts->keep_f32 (compiled with regcomp, extended syntax).
 * Returns 0, or -1 after reporting an INVALID_ARGUMENT error. */
int gc_precision_check(const graphc_compile_options_t *opts, gc_diags *d) {
  if (!gc_precision_name(opts->precision)) {
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0},
                "unknown precision %d (f32, tf32, f16, bf16, fp8)", (int)opts->precision);
    return -1;
  }
  if (!opts->keep_f32) return 0;
  regex_t re;
  int rc = regcomp(&re, opts->keep_f32, REG_EXTENDED | REG_NOSUB);
  if (rc != 0) {
    char msg[256];
    regerror(rc, &re, msg, sizeof msg);
    gc_error_at(d, GRAPHC_STATUS_INVALID_ARGUMENT, (gc_loc){0, 0},
                "invalid --keep-f32 regex '%s': %s", opts->keep_f32, msg);
    return -1;
  }
  regfree(&re);
  return 0;
}

/* The class of op (before the residual and --keep-f32 rules). */
static int op_class(const gc_op *op) {
  switch (op->opcode) {
    case GC_OP_MATMUL:
    case GC_OP_CONV2D: return CLS_ANCHOR;
    case GC_OP_NEG: case GC_OP_ABS: case GC_OP_RELU: case GC_OP_TANH: case GC_OP_SIGMOID:
    case GC_OP_GELU: case GC_OP_SILU: case GC_OP_ERF: case GC_OP_FLOOR: case GC_OP_CEIL:
    case GC_OP_CLAMP: case GC_OP_ADD: case GC_OP_SUB: case GC_OP_MUL: case GC_OP_MAXIMUM:
    case GC_OP_MINIMUM: case GC_OP_SELECT: case GC_OP_EQ: case GC_OP_NE: case GC_OP_LT:
    case GC_OP_LE: case GC_OP_GT: case GC_OP_GE: case GC_OP_RESHAPE: case GC_OP_TRANSPOSE:
    case GC_OP_BROADCAST: case GC_OP_CONCAT: case GC_OP_SLICE: case GC_OP_PAD: case GC_OP_GATHER:
    case GC_OP_SPLIT: case GC_OP_IM2COL: case GC_OP_MAX_POOL2D: case GC_OP_AVG_POOL2D:
      return CLS_CHAIN;
    case GC_OP_DIV: {  /* x / c with |c| >= 1 cannot overflow where x did not */
      gc_scalar s;
      if (gc_dtype_is_float(op->operands[1]->type.dtype) && gc_value_const_splat(op->operands[1], &s) &&
          (s.f >= 1 || s.f <= -1))
        return CLS_CHAIN;
      return CLS_SENSITIVE;
    }
    case GC_OP_PARAM:
    case GC_OP_CONST:
    case GC_OP_IOTA:
    case GC_OP_CAST: return CLS_OTHER;  /* sources stay; a cast reads any dtype */
    default: return CLS_SENSITIVE;
  }
}

typedef struct prec {
  gc_rewriter rw;
  gc_dtype R;
  char *conv;           /* conv[id]: an f32 value this pass made R */
  gc_value **down, **up;/* per value id: its cast to R / back to f32 */
  int n_ids;
  int casts, reduced, kept;
} prec;

/* Where a cast of v goes: right after v's definition (before the first op for an argument). */
static gc_op *after_def(gc_graph *g, const gc_value *v) {
  return v->def ? v->def->next : g->first;
}

/* v cast to dtype `to`, made once per value (memo[v->id]). NULL on OOM (flagged). */
static gc_value *cast_of(prec *P, gc_value *v, gc_dtype to, gc_value **memo) {
  if (v->id < P->n_ids && memo[v->id]) return memo[v->id];
  gc_type t = v->type;
  t.dtype = to;
  gc_named_attr at = {"to", gc_rw_attr_dtype(to)};
  gc_op *c = gc_rw_new_op(&P->rw, GC_OP_CAST, after_def(P->rw.g, v), 1, &v, 1, &at, &t, NULL, v->loc);
  if (!c) return NULL;
  P->casts++;
  if (v->id < P->n_ids) memo[v->id] = c->results[0];
  return c->results[0];
}

/* May op be computed in R: every float operand f32 or made R here, every float result f32? */
static int eligible(const prec *P, const gc_op *op, int *any_conv) {
  *any_conv = 0;
  for (int i = 0; i < op->n_operands; i++) {
    const gc_value *v = op->operands[i];
    if (!gc_dtype_is_float(v->type.dtype)) continue;
    if (P->conv[v->id]) *any_conv = 1;
    else if (v->type.dtype != GRAPHC_DTYPE_F32) return 0;
  }
  for (int i = 0; i < op->n_results; i++)
    if (gc_dtype_is_float(op->results[i]->type.dtype) && op->results[i]->type.dtype != GRAPHC_DTYPE_F32)
      return 0;
  return 1;
}

/* Does a result name of op match the --keep-f32 regex? */
static int kept_by_regex(const gc_op *op, const regex_t *re) {
  if (!re) return 0;
  for (int i = 0; i < op->n_results; i++)
    if (op->results[i]->name && regexec(re, op->results[i]->name, 0, NULL, 0) == 0) return 1;
  return 0;
}

/* Is add / sub op on the residual stream: does it feed a norm, or add to an f32
 * activation (not a weight or constant) that rounding to R would lose bits of? */
static int residual(const prec *P, const gc_op *op, const char *feeds_norm) {
  if (feeds_norm[op->results[0]->id]) return 1;
  for (int i = 0; i < op->n_operands; i++) {
    const gc_value *v = op->operands[i];
    if (v->type.dtype != GRAPHC_DTYPE_F32 || P->conv[v->id]) continue;
    if (!v->def || gc_op_infos[v->def->opcode].kind != GC_KIND_SOURCE) return 1;
  }
  return 0;
}

/* Is softmax op attention's: over the last axis, read only as the left operand of matmuls? */
static int attention_softmax(const gc_graph *g, const gc_op *op) {
  if (op->opcode != GC_OP_SOFTMAX) return 0;
  const gc_value *r = op->results[0];
  int64_t ax = gc_op_attr_int(op, "axis", -1);
  if (r->type.rank < 2 || (ax < 0 ? ax + r->type.rank : ax) != r->type.rank - 1 || r->n_uses == 0) return 0;
  for (int i = 0; i < g->n_outputs; i++)
    if (g->outputs[i] == r) return 0;
  int n = 0;
  for (const gc_op *u = op->next; u; u = u->next)
    for (int i = 0; i < u->n_operands; i++)
      if (u->operands[i] == r) {
        if (u->opcode != GC_OP_MATMUL || i != 0) return 0;
        n++;
      }
  return n == r->n_uses;
}

/* Compute op in R: f32 float operands cast down, f32 float results become R. */
static void reduce_op(prec *P, gc_op *op) {
  for (int i = 0; i < op->n_operands && !P->rw.oom; i++) {
    gc_value *v = op->operands[i];
    if (!gc_dtype_is_float(v->type.dtype) || P->conv[v->id]) continue;
    gc_value *c = cast_of(P, v, P->R, P->down);
    if (c) op->operands[i] = c;
  }
  for (int i = 0; i < op->n_results; i++) {
    gc_value *r = op->results[i];
    if (r->type.dtype != GRAPHC_DTYPE_F32) continue;
    r->type.dtype = P->R;
    P->conv[r->id] = 1;
  }
  P->reduced++;
}

/* op stays f32: its operands made R are read back through casts to f32. */
static void restore_operands(prec *P, gc_op *op) {
  for (int i = 0; i < op->n_operands && !P->rw.oom; i++) {
    gc_value *v = op->operands[i];
    if (v->id >= P->n_ids || !P->conv[v->id]) continue;
    gc_value *c = cast_of(P, v, GRAPHC_DTYPE_F32, P->up);
    if (c) op->operands[i] = c;
  }
}

/* Does another param of g read the tensor op reads? */
static int tensor_shared(const gc_graph *g, const gc_op *op) {
  const char *name = gc_op_attr_str(op, "name", "");
  for (const gc_op *q = g->first; q; q = q->next)
    if (q != op && q->opcode == GC_OP_PARAM && strcmp(gc_op_attr_str(q, "name", ""), name) == 0) return 1;
  return 0;
}

/* Params read only through their cast to R become R params (`from` the file's dtype,
 * none when that is R) and the casts go: the loader converts the weights once and the
 * device (or a bundle) holds only the R tensor. Left as they are: params with other uses,
 * a tensor shared by several params (a bundle holds one tensor per name), and a file in
 * f64 (f64 -> f32 -> R rounds twice, f64 -> R once). Returns the number retyped. */
static int retype_params(prec *P) {
  gc_graph *g = P->rw.g;
  gc_graph_recount_uses(g);
  gc_value **to_param = calloc((size_t)g->next_value_id + 1, sizeof *to_param);  /* cast id -> param */
  if (!to_param) {
    P->rw.oom = 1;
    return 0;
  }
  int n = 0;
  for (gc_op *op = g->first, *next; op; op = next) {
    next = op->next;
    if (op->opcode != GC_OP_PARAM) continue;
    gc_value *v = op->results[0], *c = v->id < P->n_ids ? P->down[v->id] : NULL;
    gc_dtype file = gc_param_file_dtype(op);
    if (!c || v->n_uses != 1 || file == GRAPHC_DTYPE_F64 || tensor_shared(g, op)) continue;
    if (c->def == next) next = next->next;
    gc_op_remove(g, c->def);
    to_param[c->id] = v;
    v->type.dtype = P->R;
    gc_named_attr at[2] = {{"name", *gc_op_attr(op, "name")}, {"from", gc_rw_attr_dtype(file)}};
    gc_op_set_attrs(g, op, file == P->R ? 1 : 2, at);
    P->casts--;
    n++;
  }
  for (gc_op *op = g->first; op && n; op = op->next)
    for (int i = 0; i < op->n_operands; i++)
      if (to_param[op->operands[i]->id]) op->operands[i] = to_param[op->operands[i]->id];
  free(to_param);
  return n;
}

/* Number of f32 matmuls and convolutions in g. */
static int count_f32_anchors(const gc_graph *g) {
  int n = 0;
  for (const gc_op *op = g->first; op; op = op->next)
    if (op_class(op) == CLS_ANCHOR && op->results[0]->type.dtype == GRAPHC_DTYPE_F32) n++;
  return n;
}

int gc_pass_precision(gc_graph *g, const graphc_compile_options_t *opts, gc_sbuf *stats, gc_diags *d) {
  graphc_precision_t mode = opts->precision;
  if (mode == GRAPHC_PRECISION_F32) return 0;
  if (gc_precision_check(opts, d) != 0) return -1;
  if (mode == GRAPHC_PRECISION_FP8) return gc_precision_fp8(g, opts, stats, d);  /* any float model */
  int anchors = count_f32_anchors(g);
  const char *name = gc_precision_name(mode);
  if (anchors == 0) {
    gc_sbuf_printf(stats, "precision: %s: no f32 matmuls or convolutions, model left as it is\n", name);
    return 0;
  }
  if (mode == GRAPHC_PRECISION_TF32) {
    gc_sbuf_printf(stats, "precision: tf32: %d f32 matmul%s and convolution%s on the tensor cores "
                   "(cuda backend; interp and cpu compute f32)\n", anchors, anchors == 1 ? "" : "s",
                   anchors == 1 ? "" : "s");
    return 0;
  }
  prec P;
  memset(&P, 0, sizeof P);
  P.R = mode == GRAPHC_PRECISION_F16 ? GRAPHC_DTYPE_F16 : GRAPHC_DTYPE_BF16;
  regex_t re;
  int have_re = 0;
  if (opts->keep_f32) {
    if (regcomp(&re, opts->keep_f32, REG_EXTENDED | REG_NOSUB) != 0) return -1; /* checked above */
    have_re = 1;
  }
  if (gc_rw_init(&P.rw, g, d) != 0) {
    if (have_re) regfree(&re);
    return -1;
  }
  P.n_ids = g->next_value_id;
  P.conv = calloc((size_t)P.n_ids + 1, 1);
  char *feeds_norm = calloc((size_t)P.n_ids + 1, 1);
  int n_op_ids = g->next_op_id;  /* ops made here (casts) have larger ids */
  char *attn = calloc((size_t)n_op_ids + 1, 1);
  P.down = calloc((size_t)P.n_ids + 1, sizeof *P.down);
  P.up = calloc((size_t)P.n_ids + 1, sizeof *P.up);
  if (!P.conv || !feeds_norm || !attn || !P.down || !P.up) {
    P.rw.oom = 1;
  } else {
    /* the residual stream: values a layernorm / rmsnorm normalizes */
    for (gc_op *op = g->first; op; op = op->next)
      if (gc_op_infos[op->opcode].kind == GC_KIND_NORM && op->opcode != GC_OP_SOFTMAX &&
          op->opcode != GC_OP_LOG_SOFTMAX)
        feeds_norm[op->operands[0]->id] = 1;
    /* attention's softmax (and the mask add before it): 2 marks a softmax operand */
    gc_graph_recount_uses(g);
    for (gc_op *op = g->first; op; op = op->next)
      if (attention_softmax(g, op)) {
        attn[op->id] = 1;
        const gc_value *x = op->operands[0];
        if (x->n_uses == 1 && x->def && (x->def->opcode == GC_OP_ADD || x->def->opcode == GC_OP_SUB))
          attn[x->def->id] = 2;
      }
    for (gc_op *op = g->first, *next; op && !P.rw.oom; op = next) {
      next = op->next;
      int cls = op_class(op), any_conv = 0;
      if (cls == CLS_OTHER) continue;
      int ok = eligible(&P, op, &any_conv);
      if (op->id < n_op_ids && attn[op->id] == 1) cls = CLS_CHAIN;
      if (ok && (op->opcode == GC_OP_ADD || op->opcode == GC_OP_SUB) &&
          !(op->id < n_op_ids && attn[op->id] == 2) && residual(&P, op, feeds_norm))
        cls = CLS_SENSITIVE;
      int want = ok && (cls == CLS_ANCHOR || (cls == CLS_CHAIN && any_conv));
      if (want && kept_by_regex(op, have_re ? &re : NULL)) {
        want = 0;
        P.kept++;
      }
      if (want)
        reduce_op(&P, op);
      else
        restore_operands(&P, op);
    }
    for (int i = 0; i < g->n_outputs && !P.rw.oom; i++) {
      gc_value *v = g->outputs[i];
      if (v->id >= P.n_ids || !P.conv[v->id]) continue;
      gc_named_attr at = {"to", gc_rw_attr_dtype(GRAPHC_DTYPE_F32)};
      gc_value *c = P.up[v->id];
      if (!c) {  /* at the end, beside the return */
        gc_type t = v->type;
        t.dtype = GRAPHC_DTYPE_F32;
        gc_op *op = gc_rw_new_op(&P.rw, GC_OP_CAST, NULL, 1, &v, 1, &at, &t, NULL, v->loc);
        if (!op) break;
        c = P.up[v->id] = op->results[0];
        P.casts++;
      }
      /* the output keeps its name (the executable's output names): the cast takes it */
      if (P.conv[v->id] == 1) {  /* once per value (it may be returned twice) */
        const char *t = v->name;
        v->name = c->name;
        c->name = t;
        P.conv[v->id] = 2;
      }
      g->outputs[i] = c;
    }
  }
  int retyped = P.rw.oom ? 0 : retype_params(&P);
  if (have_re) regfree(&re);
  free(feeds_norm);
  free(attn);
  free(P.conv);
  free(P.down);
  free(P.up);
  int rc = gc_rw_finish(&P.rw);
  if (rc < 0) return -1;
  gc_graph_recount_uses(g);
  gc_sbuf_printf(stats, "precision: %s: %d op%s in %s, %d cast%s inserted", name, P.reduced,
                 P.reduced == 1 ? "" : "s", name, P.casts, P.casts == 1 ? "" : "s");
  if (retyped)
    gc_sbuf_printf(stats, ", %d weight%s stored in %s (converted once at load)", retyped,
                   retyped == 1 ? "" : "s", name);
  if (P.kept) gc_sbuf_printf(stats, ", %d kept in f32 by --keep-f32", P.kept);
  gc_sbuf_puts(stats, "\n");
  return P.reduced + P.casts + retyped;
}
