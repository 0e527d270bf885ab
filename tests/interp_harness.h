/* interp_harness.h - shared by test_interp.c and test_interp2.c: parse a graph,
 * feed it inputs, run the reference interpreter, compare with expected numbers
 * written in the tests (computed by hand, never by the interpreter).
 *
 *   it_run r;
 *   it_begin(&r, "graph @g(%a: f32[2]) -> (f32[2]) {\n  %y = neg(%a) : f32[2];\n  return %y;\n}\n");
 *   IN_F(&r, 1, -2);              // one call per graph argument, in order
 *   it_exec(&r);                  // asserts GRAPHC_STATUS_OK
 *   EXPECT_F(&r, 0, 0.0, -1, 2);  // output 0, tolerance, values
 *   it_end(&r);
 *
 * it_begin prepends "version 1;\n", so the graph's first line is line 2.
 */
#ifndef GC_INTERP_HARNESS_H
#define GC_INTERP_HARNESS_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/parser.h"
#include "ir/ir.h"
#include "interp/interp.h"
#include "testutil.h"

#define F64 GRAPHC_DTYPE_F64
#define F32 GRAPHC_DTYPE_F32
#define F16 GRAPHC_DTYPE_F16
#define BF16 GRAPHC_DTYPE_BF16
#define I64 GRAPHC_DTYPE_I64
#define I32 GRAPHC_DTYPE_I32
#define I8 GRAPHC_DTYPE_I8
#define U8 GRAPHC_DTYPE_U8
#define BOOL GRAPHC_DTYPE_BOOL

#define IT_MAX 12

typedef struct it_run {
  char *src;
  gc_module *m;
  gc_graph *g;
  gc_diags d;
  graphc_status_t st;
  int n_in;
  graphc_tensor_t in[IT_MAX], out[IT_MAX];
  gc_st_tensor wt[IT_MAX];
  void *wdata[IT_MAX];
  gc_safetensors weights;
} it_run;

/* Exact integer element i of a buffer (ints sign/zero-extended, bool 0/1). */
static int64_t it_load_i(const void *p, gc_dtype t, int64_t i) {
  const unsigned char *b = p;
  switch (t) {
    case I64: { int64_t v; memcpy(&v, b + 8 * i, 8); return v; }
    case I32: { int32_t v; memcpy(&v, b + 4 * i, 4); return v; }
    case I8: return (int8_t)b[i];
    case U8: return b[i];
    case BOOL: return b[i];
    default: ck_abort_msg("it_load_i: not an int dtype"); return 0;
  }
}

/* Store an integer (in range for the dtype) into element i. */
static void it_store_i(void *p, gc_dtype t, int64_t i, int64_t v) {
  unsigned char *b = p;
  switch (t) {
    case I64: memcpy(b + 8 * i, &v, 8); return;
    case I32: { int32_t w = (int32_t)v; memcpy(b + 4 * i, &w, 4); return; }
    case I8: case U8: case BOOL: b[i] = (unsigned char)v; return;
    default: ck_abort_msg("it_store_i: not an int dtype");
  }
}

/* Parse and verify `body` (after "version 1;\n"); allocate one zeroed buffer
 * per graph output. */
static void it_begin(it_run *r, const char *body) {
  memset(r, 0, sizeof *r);
  size_t n = strlen(body) + 16;
  r->src = malloc(n);
  ck_assert_ptr_nonnull(r->src);
  snprintf(r->src, n, "version 1;\n%s", body);
  gc_diags_init(&r->d, "t.graph", r->src, strlen(r->src));
  r->m = gc_parse("t.graph", r->src, strlen(r->src), &r->d);
  if (r->m && r->d.n_errors == 0) gc_verify_module(r->m, &r->d);
  if (!r->m || r->d.n_errors) {
    char *s = gc_diags_render(&r->d);
    ck_abort_msg("graph does not parse/verify:\n%s\n%s", r->src, s ? s : "");
  }
  r->g = r->m->graphs[0];
  r->weights.tensors = r->wt;
  ck_assert_int_le(r->g->n_outputs, IT_MAX);
  for (int i = 0; i < r->g->n_outputs; i++) {
    const gc_type *t = &r->g->outputs[i]->type;
    graphc_tensor_t *o = &r->out[i];
    o->dtype = t->dtype;
    o->rank = t->rank;
    memcpy(o->dims, t->dims, sizeof o->dims);
    if (gc_type_numel(t) < 0) continue;  /* symbolic: the test allocates after binding */
    o->nbytes = (size_t)gc_type_numel(t) * graphc_dtype_size(t->dtype);
    o->data = calloc(1, o->nbytes);
    ck_assert_ptr_nonnull(o->data);
  }
}

/* Next input buffer, typed like the next graph argument; n must be its numel. */
static graphc_tensor_t *it_next_input(it_run *r, int n) {
  ck_assert_int_lt(r->n_in, r->g->n_args);
  const gc_type *t = &r->g->args[r->n_in]->type;
  ck_assert_int_eq(gc_type_numel(t), n);
  graphc_tensor_t *x = &r->in[r->n_in++];
  x->dtype = t->dtype;
  x->rank = t->rank;
  memcpy(x->dims, t->dims, sizeof x->dims);
  x->nbytes = (size_t)n * graphc_dtype_size(t->dtype);
  x->data = calloc(1, x->nbytes);
  ck_assert_ptr_nonnull(x->data);
  return x;
}

/* Input from doubles (values should be exact in the argument's dtype). */
static void it_in_f(it_run *r, int n, const double *v) {
  graphc_tensor_t *x = it_next_input(r, n);
  for (int i = 0; i < n; i++) gc_store_f64(x->data, x->dtype, i, v[i]);
}

/* Input from exact integers (int or bool arguments). */
static void it_in_i(it_run *r, int n, const int64_t *v) {
  graphc_tensor_t *x = it_next_input(r, n);
  for (int i = 0; i < n; i++) it_store_i(x->data, x->dtype, i, v[i]);
}

/* Add a weights tensor (float values through gc_store_f64). */
static void it_weight(it_run *r, const char *name, gc_dtype dt, int rank, const int64_t *dims,
                      int n, const double *v) {
  ck_assert_int_lt(r->weights.n, IT_MAX);
  gc_st_tensor *t = &r->wt[r->weights.n];
  void *data = calloc((size_t)n, graphc_dtype_size(dt));
  ck_assert_ptr_nonnull(data);
  for (int i = 0; i < n; i++) gc_store_f64(data, dt, i, v[i]);
  r->wdata[r->weights.n++] = data;
  t->name = name;
  t->dtype = dt;
  t->rank = rank;
  memcpy(t->dims, dims, (size_t)rank * sizeof *dims);
  t->data = data;
  t->nbytes = (size_t)n * graphc_dtype_size(dt);
}

/* Run; returns the status (diagnostics stay in r->d). */
static graphc_status_t it_exec_status(it_run *r) {
  ck_assert_int_eq(r->n_in, r->g->n_args);
  r->st = gc_interp_run(r->g, r->weights.n ? &r->weights : NULL, r->in, r->n_in, r->out,
                        r->g->n_outputs, &r->d);
  return r->st;
}

/* Run and require success. */
static void it_exec(it_run *r) {
  if (it_exec_status(r) != GRAPHC_STATUS_OK) {
    char *s = gc_diags_render(&r->d);
    ck_abort_msg("interpreter failed (%s):\n%s", graphc_status_string(r->st), s ? s : "");
  }
}

/* Compare output o with expected doubles: |got - want| <= tol * (1 + |want|);
 * NaN must be NaN, infinities exact. */
static void it_expect_f(it_run *r, int o, double tol, int n, const double *want) {
  graphc_tensor_t *t = &r->out[o];
  ck_assert_int_eq((int)(t->nbytes / graphc_dtype_size(t->dtype)), n);
  for (int i = 0; i < n; i++) {
    double got = gc_load_f64(t->data, t->dtype, i);
    if (isnan(want[i]))
      ck_assert_msg(isnan(got), "out %d [%d]: got %.17g, want nan", o, i, got);
    else if (isinf(want[i]))
      ck_assert_msg(got == want[i], "out %d [%d]: got %.17g, want %g", o, i, got, want[i]);
    else
      ck_assert_msg(fabs(got - want[i]) <= tol * (1 + fabs(want[i])),
                    "out %d [%d] (%s): got %.17g, want %.17g", o, i,
                    graphc_dtype_name(t->dtype), got, want[i]);
  }
}

/* Compare an int/bool output exactly. */
static void it_expect_i(it_run *r, int o, int n, const int64_t *want) {
  graphc_tensor_t *t = &r->out[o];
  ck_assert_int_eq((int)(t->nbytes / graphc_dtype_size(t->dtype)), n);
  for (int i = 0; i < n; i++) {
    int64_t got = it_load_i(t->data, t->dtype, i);
    ck_assert_msg(got == want[i], "out %d [%d] (%s): got %lld, want %lld", o, i,
                  graphc_dtype_name(t->dtype), (long long)got, (long long)want[i]);
  }
}

/* Raw 16-bit pattern of element i of a f16/bf16 output. */
__attribute__((unused)) static uint16_t it_bits16(it_run *r, int o, int i) {
  uint16_t h;
  memcpy(&h, (unsigned char *)r->out[o].data + 2 * i, 2);
  return h;
}

/* Free everything. */
static void it_end(it_run *r) {
  for (int i = 0; i < IT_MAX; i++) {
    free(r->in[i].data);
    free(r->out[i].data);
    free(r->wdata[i]);
  }
  gc_module_free(r->m);
  gc_diags_free(&r->d);
  free(r->src);
}

#define IT_NARGS_F(...) ((int)(sizeof((double[]){__VA_ARGS__}) / sizeof(double)))
#define IT_NARGS_I(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define IN_F(r, ...) it_in_f((r), IT_NARGS_F(__VA_ARGS__), (double[]){__VA_ARGS__})
#define IN_I(r, ...) it_in_i((r), IT_NARGS_I(__VA_ARGS__), (int64_t[]){__VA_ARGS__})
#define EXPECT_F(r, o, tol, ...) \
  it_expect_f((r), (o), (tol), IT_NARGS_F(__VA_ARGS__), (double[]){__VA_ARGS__})
#define EXPECT_I(r, o, ...) it_expect_i((r), (o), IT_NARGS_I(__VA_ARGS__), (int64_t[]){__VA_ARGS__})

#endif /* GC_INTERP_HARNESS_H */
