/* ir.h - the graph IR: arenas, types, attributes, SSA values, ops, graphs, modules.
 *
 * Prefixes: gc_ for IR and utilities. A module owns one arena for itself and
 * each graph owns its own arena; destroying a module frees everything.
 * Values are SSA: defined once (by an op result or a graph argument), typed
 * with dtype + static shape. Every op carries its source location.
 */
#ifndef GC_IR_H
#define GC_IR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "graphc/graphc.h"

/* ---- internal assertions: bugs in graphc, never user errors ------------------ */
void gc_assert_fail(const char *expr, const char *file, int line);
#define GC_ASSERT(e) ((e) ? (void)0 : gc_assert_fail(#e, __FILE__, __LINE__))

/* ---- arena: grows by chunks, freed in one call ------------------------------- */
typedef struct gc_arena_chunk gc_arena_chunk;
typedef struct gc_arena {
  gc_arena_chunk *head;
  size_t total;          /* bytes handed out, for stats */
  int failed;            /* set once an allocation failed */
} gc_arena;

void gc_arena_init(gc_arena *a);
void gc_arena_free(gc_arena *a);
/* Zeroed, 16-byte aligned; NULL (and a->failed set) when out of memory. */
void *gc_arena_alloc(gc_arena *a, size_t size);
char *gc_arena_strdup(gc_arena *a, const char *s);
char *gc_arena_strndup(gc_arena *a, const char *s, size_t n);
char *gc_arena_printf(gc_arena *a, const char *fmt, ...);

/* ---- growable string buffer (malloc) ----------------------------------------- */
typedef struct gc_sbuf {
  char *data;
  size_t len, cap;
  int failed;            /* an allocation failed; contents truncated */
} gc_sbuf;

void gc_sbuf_printf(gc_sbuf *b, const char *fmt, ...);
void gc_sbuf_vprintf(gc_sbuf *b, const char *fmt, va_list ap);
void gc_sbuf_puts(gc_sbuf *b, const char *s);
void gc_sbuf_putc(gc_sbuf *b, char c);
/* Take ownership of the string (never NULL unless out of memory); resets b. */
char *gc_sbuf_take(gc_sbuf *b);
void gc_sbuf_free(gc_sbuf *b);

/* ---- source locations and diagnostics ---------------------------------------- */
typedef struct gc_loc {
  int line, col;         /* 1-based; 0 = unknown */
} gc_loc;

typedef enum gc_diag_level { GC_DIAG_ERROR, GC_DIAG_WARNING, GC_DIAG_NOTE } gc_diag_level;

typedef struct gc_diag {
  gc_diag_level level;
  gc_loc loc;
  char *msg;             /* malloc'd */
} gc_diag;

/* A list of diagnostics for one source text. Not an arena: survives modules. */
typedef struct gc_diags {
  char *file;            /* malloc'd copy, "" when none */
  const char *source;    /* borrowed text for rendering source lines, may be NULL */
  size_t source_len;
  gc_diag *items;
  int n, cap;
  int n_errors;
  graphc_status_t status;/* status of the first error */
} gc_diags;

void gc_diags_init(gc_diags *d, const char *file, const char *source, size_t len);
void gc_diags_free(gc_diags *d);
/* Report an error. `status` classifies it (syntax, verify, weights, ...). */
void gc_error_at(gc_diags *d, graphc_status_t status, gc_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Report a warning (not counted in n_errors). */
void gc_warning_at(gc_diags *d, gc_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void gc_note_at(gc_diags *d, gc_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Render all diagnostics: "file:line:col: error: msg\n<line>\n<caret>\n". malloc'd. */
char *gc_diags_render(const gc_diags *d);
/* The whole file at path, malloc'd, with a NUL after its *len bytes. NULL on failure, reported
 * to d (unless d is NULL): IO_ERROR "cannot open 'P': why" / "cannot read 'P'", or OUT_OF_MEMORY. */
char *gc_read_file(const char *path, size_t *len, gc_diags *d);
/* Copy the first error into a public error struct (err may be NULL). */
void gc_diags_to_error(const gc_diags *d, graphc_error_t *err);
/* Fill a public error struct without a position (err may be NULL); returns status. */
graphc_status_t gc_set_error(graphc_error_t *err, graphc_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- dtypes --------------------------------------------------------------------- */
typedef graphc_dtype_t gc_dtype;
int gc_dtype_is_float(gc_dtype t);   /* f64 f32 f16 bf16 and the fp8 dtypes */
int gc_dtype_is_f8(gc_dtype t);      /* f8e4m3 f8e5m2 and the fnuz pair: storage formats,
                                        arithmetic in f32 */
int gc_dtype_is_fnuz(gc_dtype t);    /* f8e4m3fnuz f8e5m2fnuz (no inf, no -0, NaN 0x80): no
                                        tensor-core matmul (Hopper has none) */
int gc_dtype_is_int(gc_dtype t);     /* i64 i32 i8 u8 */
int gc_dtype_is_signed(gc_dtype t);  /* floats and signed ints */
/* Parse "f32" etc. Returns -1 when not a dtype name. */
int gc_dtype_from_name(const char *s, size_t n);

/* ---- shapes and types ----------------------------------------------------------- */
#define GC_MAX_RANK GRAPHC_MAX_RANK
/* A dim is a positive int, or a symbolic dim: GC_DIM_SYM(i) names the graph's
 * i-th symbol (declared in <...>). Symbols are replaced by values at binding. */
#define GC_DIM_SYM_BASE (INT64_C(1) << 62)
#define GC_DIM_SYM(i) (GC_DIM_SYM_BASE + (int64_t)(i))
#define GC_DIM_IS_SYM(d) ((d) >= GC_DIM_SYM_BASE)
#define GC_DIM_SYM_INDEX(d) ((int)((d) - GC_DIM_SYM_BASE))

/* ---- symbols: base and derived (ir/symexpr.c) -------------------------------------- */
/* A graph symbol is a base symbol (bound by the user, with a range lo..hi) or a
 * derived symbol defined by an expression over base symbols. Expressions are kept
 * canonical: a sum of products (ADD of MUL terms, each term a coefficient times a
 * sorted list of atoms; an atom is a base symbol or floordiv/ceildiv/min/max of two
 * canonical expressions), so equal expressions compare equal and a graph holds at
 * most one derived symbol per expression. Built in the graph's arena. */
typedef enum gc_sx_kind {
  GC_SX_CONST, GC_SX_SYM, GC_SX_ADD, GC_SX_MUL,
  GC_SX_FLOORDIV, GC_SX_CEILDIV, GC_SX_MIN, GC_SX_MAX
} gc_sx_kind;

typedef struct gc_sym_expr gc_sym_expr;
struct gc_sym_expr {
  gc_sx_kind kind;
  int64_t c;             /* CONST: value; ADD: constant term; MUL: coefficient */
  int sym;               /* SYM: base symbol index */
  int n;                 /* ADD: terms, MUL: factors, the others: 2 */
  const gc_sym_expr **a;
};

#define GC_SYM_MAX (INT64_C(1) << 40)  /* largest value a base symbol may be bound to */
#define GC_SYM_UNBOUND (-1)            /* sym_values of a symbol not bound (0 is an empty dim) */

typedef struct gc_type {
  gc_dtype dtype;
  int rank;
  int64_t dims[GC_MAX_RANK];
} gc_type;

int gc_type_equal(const gc_type *a, const gc_type *b);
int gc_type_same_dims(const gc_type *a, const gc_type *b);  /* rank and dims (dtypes may differ) */
int gc_type_is_concrete(const gc_type *t);   /* no symbolic dims */
/* Element count of a concrete type; -1 on overflow past 2^62 or symbolic dims. */
int64_t gc_type_numel(const gc_type *t);
/* The hash_uniform op's value for (a, b): ((x mod 2^24) + 0.5) / 2^24, an f32 exactly, x
 * from a and b (each taken modulo the prime p = 2^31 - 1) by four rounds of x ^= x >> s,
 * x = (x * M + c) mod p (every product below 2^62, so every backend computes it exactly in
 * 64-bit integers; measured: uniform within 0.5% over 20 bins and pairs of neighbours
 * uncorrelated, 1.3M values). codegen/emit_expr.c builds the same rounds in Kernel IR from
 * gc_hu_rounds. */
double gc_hash_uniform(int64_t a, int64_t b);
#define GC_HU_P 2147483647LL
typedef struct gc_hu_round { int shift; int64_t mul; int add_a, add_b; int64_t add; } gc_hu_round;
/* round r: x = ((x ^ (x >> shift)) * mul + (add_a ? a' : 0) + (add_b ? b' : 0) + add) mod p;
 * x starts as a' (round 0 has shift 0: no xor), a', b' the operands mod p; then x ^= x >> 11 */
extern const gc_hu_round gc_hu_rounds[4];
/* Strides ost (element units) of a reshape to ot of a strided view of a value of type it
 * with strides ist; 0 when that reshape is no strided view (merged dims not contiguous). */
int gc_reshape_strides(const gc_type *it, const int64_t *ist, const gc_type *ot, int64_t *ost);
/* Print "f32[B, 128]" (symbol names from `syms`, may be NULL -> "?i"). */
void gc_type_print(gc_sbuf *b, const gc_type *t, const char *const *syms);

/* ---- attributes ----------------------------------------------------------------- */
typedef enum gc_attr_kind {
  GC_ATTR_INT, GC_ATTR_FLOAT, GC_ATTR_STR, GC_ATTR_BOOL, GC_ATTR_DTYPE, GC_ATTR_LIST
} gc_attr_kind;

typedef struct gc_attr gc_attr;
struct gc_attr {
  gc_attr_kind kind;
  gc_loc loc;
  union {
    int64_t i;           /* INT; a symbolic dim name is stored as GC_DIM_SYM(idx) */
    double f;            /* FLOAT */
    const char *s;       /* STR (arena) */
    int b;               /* BOOL */
    gc_dtype dt;         /* DTYPE */
    struct { gc_attr *items; int n; } list;  /* LIST */
  } u;
};

typedef struct gc_named_attr {
  const char *name;      /* arena */
  gc_attr val;
} gc_named_attr;

/* ---- ops -------------------------------------------------------------------------- */
typedef enum gc_opcode {
#define OP(ID, NAME, MIN_IN, MAX_IN, N_OUT, ATTRS, RULE, EVAL, KIND) GC_OP_##ID,
#include "ir/ops.def"
#undef OP
  GC_OP_COUNT_
} gc_opcode;

typedef enum gc_kind {
  GC_KIND_SOURCE, GC_KIND_ELEMENTWISE, GC_KIND_REDUCE, GC_KIND_NORM,
  GC_KIND_MATMUL, GC_KIND_CONV, GC_KIND_POOL, GC_KIND_MOVE,
  GC_KIND_WRITE          /* cache_write: updates a state in place, its own kernel */
} gc_kind;

typedef struct gc_op_info {
  const char *name;
  int min_in, max_in, n_out;
  const char *attrs;     /* schema string, see ops.def */
  gc_kind kind;
} gc_op_info;

extern const gc_op_info gc_op_infos[GC_OP_COUNT_];
/* Opcode for an op name, or -1. */
int gc_opcode_from_name(const char *s, size_t n);

typedef struct gc_op gc_op;
typedef struct gc_graph gc_graph;

typedef struct gc_value {
  int id;                /* dense per graph, in definition order */
  const char *name;      /* without '%', arena */
  gc_type type;
  gc_op *def;            /* NULL for graph arguments */
  int def_index;         /* result index in def, or argument index */
  gc_loc loc;            /* where it is defined */
  int n_uses;            /* maintained by gc_graph_recount_uses */
} gc_value;

struct gc_op {
  gc_opcode opcode;
  gc_loc loc;
  int id;                /* unique per graph, stable */
  int n_operands;
  gc_value **operands;
  int n_results;
  gc_value **results;
  int n_attrs;
  gc_named_attr *attrs;
  int typed;             /* result types were written in the source */
  gc_op *prev, *next;    /* program order */
};

struct gc_graph {
  gc_arena arena;
  const char *name;      /* without '@' */
  gc_loc loc;
  int n_syms;
  const char **sym_names;
  int64_t *sym_values;   /* GC_SYM_UNBOUND (-1) = unbound; 0 is a valid (empty) dim */
  const gc_sym_expr **sym_defs; /* NULL for a base symbol; else its canonical definition */
  int64_t *sym_lo, *sym_hi;     /* range of a base symbol (default 1..GC_SYM_MAX; lo may be 0) */
  int n_args;
  gc_value **args;
  int n_result_types;
  gc_type *result_types; /* declared in the signature */
  int n_outputs;
  gc_value **outputs;    /* return statement */
  gc_loc ret_loc;
  gc_op *first, *last;
  int n_ops;
  int next_value_id;
  int next_op_id;
};

typedef struct gc_module {
  gc_arena arena;
  const char *file;      /* path as given, for diagnostics */
  int version;
  const char *weights;   /* path as written (NULL when no weights statement) */
  gc_loc weights_loc;
  int n_graphs;
  gc_graph **graphs;
} gc_module;

/* ---- construction ---------------------------------------------------------------- */
gc_module *gc_module_new(const char *file);
void gc_module_free(gc_module *m);
/* A deep copy of m (graphs, ops, values with their ids, names, types, attributes,
 * source locations and symbol bindings) sharing nothing with it; NULL when out of memory. */
gc_module *gc_module_clone(const gc_module *m);
gc_graph *gc_graph_new(gc_module *m, const char *name, gc_loc loc);
gc_graph *gc_module_find_graph(const gc_module *m, const char *name);

gc_value *gc_graph_add_arg(gc_graph *g, const char *name, const gc_type *type, gc_loc loc);
/* New op with room for operands/results/attrs; results get fresh values named
 * `result_names[i]` (NULL -> numbered automatically). Appended at the end. */
gc_op *gc_op_new(gc_graph *g, gc_opcode opc, int n_operands, gc_value *const *operands,
                 int n_results, const char *const *result_names, gc_loc loc);
void gc_op_set_attrs(gc_graph *g, gc_op *op, int n, const gc_named_attr *attrs);
/* Unlink op (its results must be unused). */
void gc_op_remove(gc_graph *g, gc_op *op);
/* Insert a detached op before `before` (NULL = at end). */
void gc_op_insert_before(gc_graph *g, gc_op *op, gc_op *before);
/* Replace every use of `from` (operands and outputs) by `to`. */
void gc_value_replace_uses(gc_graph *g, gc_value *from, gc_value *to);
void gc_graph_recount_uses(gc_graph *g);
/* Fresh numeric value name not used in g. */
const char *gc_graph_fresh_name(gc_graph *g);

/* Attribute lookup by name; NULL when absent. */
const gc_attr *gc_op_attr(const gc_op *op, const char *name);
int64_t gc_op_attr_int(const gc_op *op, const char *name, int64_t dflt);
double gc_op_attr_float(const gc_op *op, const char *name, double dflt);
int gc_op_attr_bool(const gc_op *op, const char *name, int dflt);
const char *gc_op_attr_str(const gc_op *op, const char *name, const char *dflt);
/* Attribute as a number: int, float or bool. */
double gc_attr_number(const gc_attr *a);
/* Copy a list of ints (or a single int) into out[max]; returns count, -1 if not ints. */
int gc_attr_ints(const gc_attr *a, int64_t *out, int max);

/* ---- passes over the IR (files in ir/) --------------------------------------------------- */
/* Shape/dtype inference for one op (ir/infer.c): computes result types into
 * `out` (n_results entries) or reports an error at the op and returns 0. */
int gc_infer_op(const gc_graph *g, const gc_op *op, gc_type *out, gc_diags *d);
/* Result count of an op whose N_OUT is -1 (split), from its attributes; -1 if bad. */
int gc_op_result_count(const gc_op *op);
/* Verifier (ir/verify.c): SSA, arity, attribute schema, types; returns #errors. */
int gc_verify_graph(gc_graph *g, gc_diags *d);
int gc_verify_module(gc_module *m, gc_diags *d);
/* Replace symbolic dims by bound values everywhere in g (types and dims attrs);
 * errors name unbound symbols. Returns #errors. */
int gc_graph_specialize(gc_graph *g, gc_diags *d);
/* The dtype a param op's tensor has in the weights file: its `from` attribute (the
 * loader converts the tensor to the param's dtype), else the param's own dtype. */
gc_dtype gc_param_file_dtype(const gc_op *op);
/* A param op's declared type with g's bound symbols substituted (unbound ones stay)
 * and gc_param_file_dtype as dtype: the tensor a weights file must hold for it. */
gc_type gc_param_type(const gc_graph *g, const gc_op *op);

/* Symbols (ir/symexpr.c). Builders return canonical expressions over base symbols
 * (a derived symbol is replaced by its definition), NULL when out of memory or on
 * overflow or a division by a non-positive constant. */
const gc_sym_expr *gc_sx_const(gc_graph *g, int64_t c);
const gc_sym_expr *gc_sx_dim(gc_graph *g, int64_t dim);  /* an int or GC_DIM_SYM(i) */
const gc_sym_expr *gc_sx_add(gc_graph *g, const gc_sym_expr *a, const gc_sym_expr *b);
const gc_sym_expr *gc_sx_mul(gc_graph *g, const gc_sym_expr *a, const gc_sym_expr *b);
/* FLOORDIV, CEILDIV, MIN or MAX; an exact division gives the quotient polynomial. */
const gc_sym_expr *gc_sx_op(gc_graph *g, gc_sx_kind k, const gc_sym_expr *a, const gc_sym_expr *b);
/* a / b when b is a single term dividing every term of a; NULL when not exact (or OOM). */
const gc_sym_expr *gc_sx_exact_div(gc_graph *g, const gc_sym_expr *a, const gc_sym_expr *b);
/* Bounds lo..hi of e over the ranges of its symbols; 0 when not known (or too large). */
int gc_sx_bounds(const gc_graph *g, const gc_sym_expr *e, int64_t *lo, int64_t *hi);
int gc_sx_cmp(const gc_sym_expr *a, const gc_sym_expr *b);  /* total order; 0 = equal */
/* The dim for e: an int when constant, GC_DIM_SYM(i) of a base symbol or of the
 * derived symbol with that definition (added, named "_sN", when new); -1 when out of
 * memory or e is a constant below 1. */
int64_t gc_sym_intern(gc_graph *g, const gc_sym_expr *e);
/* Add a symbol (def NULL: base, with the default range); its index, -1 out of memory. */
int gc_graph_add_sym(gc_graph *g, const char *name, const gc_sym_expr *def);
/* Value of e under the graph's bound base symbols; 0 with *out set, or -1 when a symbol
 * is unbound, -2 on overflow or division by a non-positive value. */
int gc_sx_eval(const gc_graph *g, const gc_sym_expr *e, int64_t *out);
/* Write e in the .graph syntax (names of g's symbols). */
void gc_sx_print(gc_sbuf *b, const gc_graph *g, const gc_sym_expr *e);
/* Evaluate every derived symbol from the bound base symbols into sym_values; checks
 * base values against their ranges and derived values are positive. Returns #errors. */
int gc_graph_eval_syms(gc_graph *g, gc_diags *d);
/* Deep copy of e into g's arena. */
const gc_sym_expr *gc_sx_clone(gc_graph *g, const gc_sym_expr *e);

/* Printer (ir/print.c): exact .graph syntax that re-parses to the same text. */
void gc_print_module(gc_sbuf *b, const gc_module *m);
void gc_print_graph(gc_sbuf *b, const gc_graph *g);

#endif /* GC_IR_H */
