/* onnx.h - ONNX import: the protobuf model in memory, and its translation to .graph.
 *
 * Reading (frontend/onnx_proto.c): gc_onnx_model_load/parse decode a ModelProto
 * with the bounds-checked wire reader of frontend/protobuf.h into plain structs
 * that live in the model's arena. Tensor data stays where it is (raw_data
 * points into the file bytes) or is converted from the typed repeated fields
 * (float_data, int32_data, ...) into the little-endian raw layout.
 *
 * Importing (frontend/onnx.c, frontend/onnx_ops*.c): gc_onnx_import maps the
 * main graph onto graphc ops, folds constant subexpressions with the
 * folding pass's evaluator (passes/fold.h), and produces .graph text (parsed and verified again before it
 * is returned) plus the weight tensors for a safetensors file. Unsupported ops
 * are all collected into one error with status GRAPHC_STATUS_UNSUPPORTED.
 */
#ifndef GC_ONNX_H
#define GC_ONNX_H

#include "ir/ir.h"
#include "weights/safetensors.h"

/* TensorProto.DataType values. */
enum {
  GC_ONNX_UNDEFINED = 0, GC_ONNX_FLOAT = 1, GC_ONNX_UINT8 = 2, GC_ONNX_INT8 = 3,
  GC_ONNX_UINT16 = 4, GC_ONNX_INT16 = 5, GC_ONNX_INT32 = 6, GC_ONNX_INT64 = 7,
  GC_ONNX_STRING = 8, GC_ONNX_BOOL = 9, GC_ONNX_FLOAT16 = 10, GC_ONNX_DOUBLE = 11,
  GC_ONNX_UINT32 = 12, GC_ONNX_UINT64 = 13, GC_ONNX_COMPLEX64 = 14, GC_ONNX_COMPLEX128 = 15,
  GC_ONNX_BFLOAT16 = 16, GC_ONNX_FLOAT8E4M3FN = 17, GC_ONNX_FLOAT8E4M3FNUZ = 18,
  GC_ONNX_FLOAT8E5M2 = 19, GC_ONNX_FLOAT8E5M2FNUZ = 20, GC_ONNX_UINT4 = 21, GC_ONNX_INT4 = 22
};

/* AttributeProto.AttributeType values. */
enum {
  GC_ONNX_ATTR_UNDEFINED = 0, GC_ONNX_ATTR_FLOAT = 1, GC_ONNX_ATTR_INT = 2,
  GC_ONNX_ATTR_STRING = 3, GC_ONNX_ATTR_TENSOR = 4, GC_ONNX_ATTR_GRAPH = 5,
  GC_ONNX_ATTR_FLOATS = 6, GC_ONNX_ATTR_INTS = 7, GC_ONNX_ATTR_STRINGS = 8,
  GC_ONNX_ATTR_TENSORS = 9, GC_ONNX_ATTR_GRAPHS = 10, GC_ONNX_ATTR_SPARSE_TENSOR = 11,
  GC_ONNX_ATTR_SPARSE_TENSORS = 12, GC_ONNX_ATTR_TYPE_PROTO = 13, GC_ONNX_ATTR_TYPE_PROTOS = 14
};

typedef struct gc_onnx_tensor {
  const char *name;        /* "" when absent */
  int data_type;           /* TensorProto.DataType */
  int rank;
  int64_t *dims;           /* rank entries (may be 0: empty tensor) */
  int64_t numel;           /* product of dims; -1 when it overflows */
  const uint8_t *data;     /* little-endian elements, numel x elem size; NULL when none */
  size_t nbytes;
  int external;            /* data_location == EXTERNAL: data is loaded by the importer */
  const char *location;    /* external data: file relative to the model's folder */
  int64_t ext_offset, ext_length; /* -1 length: to the end of the file */
  int has_strings;         /* string_data present (not supported) */
  size_t file_offset;      /* where the message starts, for messages */
} gc_onnx_tensor;

typedef struct gc_onnx_attr {
  const char *name;
  int type;                /* GC_ONNX_ATTR_* (inferred from the fields set when 0) */
  float f;
  int64_t i;
  const char *s;           /* STRING (NUL-terminated copy) */
  size_t s_len;
  gc_onnx_tensor *t;       /* TENSOR */
  int n_floats, n_ints, n_strings;
  float *floats;
  int64_t *ints;
  const char *ref_attr_name; /* attribute reference inside functions (unsupported) */
} gc_onnx_attr;

typedef struct gc_onnx_dim {
  int64_t value;           /* > 0 when known; 0 when only a parameter or nothing is given */
  const char *param;       /* dim_param or NULL */
  int has_value;
} gc_onnx_dim;

/* TypeProto kinds of a value. */
enum { GC_ONNX_TYPE_NONE, GC_ONNX_TYPE_TENSOR, GC_ONNX_TYPE_SEQUENCE, GC_ONNX_TYPE_MAP,
       GC_ONNX_TYPE_OPTIONAL, GC_ONNX_TYPE_SPARSE, GC_ONNX_TYPE_OTHER };

typedef struct gc_onnx_value_info {
  const char *name;
  int kind;                /* GC_ONNX_TYPE_* */
  int elem_type;           /* tensors */
  int has_shape;
  int rank;
  gc_onnx_dim *dims;
} gc_onnx_value_info;

typedef struct gc_onnx_node {
  const char *name, *op_type, *domain;  /* domain "" is ai.onnx */
  int index;               /* position in the graph */
  int n_inputs, n_outputs, n_attrs;
  const char **inputs;     /* "" for an omitted optional input */
  const char **outputs;
  gc_onnx_attr *attrs;
} gc_onnx_node;

typedef struct gc_onnx_graph {
  const char *name;
  int n_nodes, n_inits, n_sparse_inits, n_inputs, n_outputs, n_value_infos;
  gc_onnx_node *nodes;
  gc_onnx_tensor *inits;
  gc_onnx_value_info *inputs, *outputs, *value_infos;
} gc_onnx_graph;

typedef struct gc_onnx_opset {
  const char *domain;
  int64_t version;
} gc_onnx_opset;

typedef struct gc_onnx_model {
  gc_arena arena;
  int64_t ir_version;
  const char *producer;
  int n_opsets;
  gc_onnx_opset *opsets;
  int has_graph;
  gc_onnx_graph graph;
  int n_functions;
  void *bytes;             /* file contents (malloc), raw tensor data points into it */
  size_t len;
} gc_onnx_model;

/* Parse a ModelProto from memory (the bytes are copied) or from a file.
 * Errors (status SYNTAX_ERROR for malformed protobuf, IO_ERROR) go to d with
 * the byte offset in the message. NULL on error. */
gc_onnx_model *gc_onnx_model_parse(const void *bytes, size_t len, gc_diags *d);
gc_onnx_model *gc_onnx_model_load(const char *path, gc_diags *d);
void gc_onnx_model_free(gc_onnx_model *m);
/* Opset version the model imports for a domain ("" and "ai.onnx" are the
 * same); 0 when the domain is not imported. */
int64_t gc_onnx_opset_version(const gc_onnx_model *m, const char *domain);

/* Parse a lone TensorProto (a .pb input/output file of the ONNX test data);
 * the tensor lives in `arena` and points into `bytes` (keep them alive).
 * Returns 0, or -1 with the error in d. */
int gc_onnx_tensor_parse(const void *bytes, size_t len, gc_arena *arena, gc_onnx_tensor *out,
                         gc_diags *d);
/* graphc dtype of an ONNX data type, or -1 when graphc has none. */
int gc_onnx_dtype(int onnx_type);
/* "FLOAT", "UINT16", ... ("type N" for unknown ones; static strings). */
const char *gc_onnx_type_name(int onnx_type);
/* Bytes per element of an ONNX type with a fixed-size layout (0: strings,
 * packed 4-bit types, unknown). */
size_t gc_onnx_type_size(int onnx_type);

/* Result of an import: .graph text (malloc) and the weight tensors, whose data
 * the result owns. */
typedef struct gc_onnx_result {
  char *text;
  int n_tensors;
  gc_st_tensor *tensors;   /* names and data owned by the result */
  void *priv;              /* storage */
} gc_onnx_result;

/* Import options (all optional). */
typedef struct gc_onnx_options {
  const char *model_dir;   /* folder external data is read from (NULL: none allowed) */
  const char *weights_ref; /* written in the `weights` line (NULL: a model with weights fails) */
  /* Values of the graph inputs (those that are not initializers), in order, e.g.
   * a test's input_N.pb. An input whose value graphc needs as a constant (a
   * Reshape shape, Pad pads, ...) is frozen to it; the graph is then only valid
   * for that value. *froze is set to 1 when that happened. */
  int n_inputs;
  const gc_onnx_tensor *inputs;
  int *froze;
} gc_onnx_options;

/* Translate model m; `source` names it in messages. Returns 0, or -1 with
 * every error in d. */
int gc_onnx_import(const gc_onnx_model *m, const char *source, const gc_onnx_options *opts,
                   gc_onnx_result *out, gc_diags *d);
void gc_onnx_result_free(gc_onnx_result *r);

/* Whole import: read onnx_path, write graph_path, and (when the model has
 * weights) weights_path; the .graph names the weights by a path relative to
 * the .graph's folder. opts (may be NULL): only its input values are used.
 * Returns 0 or -1 (errors in d). */
int gc_onnx_import_file(const char *onnx_path, const char *graph_path, const char *weights_path,
                        const gc_onnx_options *opts, gc_diags *d);

#endif
