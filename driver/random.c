/* random.c - deterministic pseudo-random weights (splitmix64), the same bytes
 * on every machine for a given seed: element i of a tensor is a pure function
 * of (seed, i), and every float step is a correctly rounded IEEE operation.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ir/dtype.h"
#include "weights/safetensors.h"

#define SPLITMIX_GAMMA UINT64_C(0x9e3779b97f4a7c15)

/* splitmix64's output function (Steele, Lea, Flood 2014). */
static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* Fill `out` with numel(t) deterministic values (see safetensors.h). */
void gc_random_fill(void *out, const gc_type *t, uint64_t seed) {
  GC_ASSERT(gc_type_is_concrete(t));
  int64_t numel = gc_type_numel(t);
  GC_ASSERT(numel >= 0);
  double scale = 1.0;
  if (t->rank >= 2) {
    int64_t fan_in = 1;
    for (int i = 1; i < t->rank; i++) fan_in *= t->dims[i];
    if (fan_in > 0) scale = 1.0 / sqrt((double)fan_in);
  }
  unsigned char *p = out;
  for (int64_t i = 0; i < numel; i++) {
    uint64_t x = mix64(seed + (uint64_t)(i + 1) * SPLITMIX_GAMMA);
    double u = (double)(x >> 11) * 0x1.0p-53;       /* [0, 1) */
    double v = (2.0 * u - 1.0) * scale;             /* [-scale, scale) */
    switch (t->dtype) {
      case GRAPHC_DTYPE_F64: memcpy(p + 8 * i, &v, 8); break;
      case GRAPHC_DTYPE_F32: {
        float f = (float)v;
        memcpy(p + 4 * i, &f, 4);
        break;
      }
      case GRAPHC_DTYPE_F16: {  /* f16, bf16: the f32 value above, rounded again */
        uint16_t h = gc_f64_to_f16((float)v);
        memcpy(p + 2 * i, &h, 2);
        break;
      }
      case GRAPHC_DTYPE_BF16: {
        uint16_t h = gc_f64_to_bf16((float)v);
        memcpy(p + 2 * i, &h, 2);
        break;
      }
      case GRAPHC_DTYPE_I64: {
        int64_t k = (int64_t)(x >> 62);
        memcpy(p + 8 * i, &k, 8);
        break;
      }
      case GRAPHC_DTYPE_I32: {
        int32_t k = (int32_t)(x >> 62);
        memcpy(p + 4 * i, &k, 4);
        break;
      }
      case GRAPHC_DTYPE_I8:
      case GRAPHC_DTYPE_U8: p[i] = (unsigned char)(x >> 62); break;
      case GRAPHC_DTYPE_BOOL: p[i] = (unsigned char)(x >> 63); break;
      case GRAPHC_DTYPE_F8E4M3:  /* fp8: the f32 value above, rounded again */
      case GRAPHC_DTYPE_F8E5M2:
      case GRAPHC_DTYPE_F8E4M3FNUZ:
      case GRAPHC_DTYPE_F8E5M2FNUZ: gc_store_f64(p, t->dtype, i, (float)v); break;
      default: GC_ASSERT(!"bad dtype");
    }
  }
}

/* Write a weights file with one random tensor per param of g; a tensor name
 * shared by several params (with the same type) is written once. Returns 0 on
 * success; on errors nothing is written. */
int gc_weights_write_random(const gc_graph *g, const char *path, uint64_t seed, gc_diags *d) {
  int n_params = 0;
  for (const gc_op *op = g->first; op; op = op->next)
    if (op->opcode == GC_OP_PARAM) n_params++;
  gc_st_tensor *ts = calloc((size_t)(n_params ? n_params : 1), sizeof *ts);
  const gc_op **owner = calloc((size_t)(n_params ? n_params : 1), sizeof *owner);
  int n = 0, errors = 0, k = -1;
  if (!ts || !owner) {
    gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, (gc_loc){0, 0}, "%s: out of memory", path);
    errors++;
  }
  for (const gc_op *op = g->first; op && ts && owner; op = op->next) {
    if (op->opcode != GC_OP_PARAM || op->n_results != 1) continue;
    k++;
    const char *pname = op->results[0]->name;
    const char *tname = gc_op_attr_str(op, "name", NULL);
    gc_type t = gc_param_type(g, op);  /* the `from` dtype when given: the loader converts */
    if (!tname) {
      gc_error_at(d, GRAPHC_STATUS_WEIGHTS_ERROR, op->loc, "param %%%s: no tensor name", pname);
      errors++;
      continue;
    }
    if (!gc_type_is_concrete(&t)) {
      gc_error_at(d, GRAPHC_STATUS_WEIGHTS_ERROR, op->loc,
                  "param %%%s: shape has unbound symbolic dims", pname);
      errors++;
      continue;
    }
    int dup = -1;
    for (int i = 0; i < n && dup < 0; i++)
      if (strcmp(ts[i].name, tname) == 0) dup = i;
    if (dup >= 0) {
      gc_type prev = gc_param_type(g, owner[dup]);
      if (!gc_type_equal(&prev, &t)) {
        gc_sbuf b = {0};
        gc_sbuf_printf(&b, "param %%%s: tensor '%s' is also used by param %%%s with type ", pname,
                       tname, owner[dup]->results[0]->name);
        gc_type_print(&b, &prev, NULL);
        char *msg = gc_sbuf_take(&b);
        gc_error_at(d, GRAPHC_STATUS_WEIGHTS_ERROR, op->loc, "%s", msg ? msg : "type conflict");
        free(msg);
        errors++;
      }
      continue;
    }
    int64_t numel = gc_type_numel(&t);
    size_t nbytes = 0;
    void *buf = NULL;
    if (numel >= 0 && !__builtin_mul_overflow((size_t)numel, graphc_dtype_size(t.dtype), &nbytes))
      buf = malloc(nbytes ? nbytes : 1);
    if (!buf) {
      gc_error_at(d, GRAPHC_STATUS_OUT_OF_MEMORY, op->loc,
                  "param %%%s: out of memory for %lld elements", pname, (long long)numel);
      errors++;
      continue;
    }
    gc_random_fill(buf, &t, mix64(seed ^ mix64((uint64_t)k + SPLITMIX_GAMMA)));
    gc_st_tensor *st = &ts[n];
    st->name = tname;
    st->dtype = t.dtype;
    st->rank = t.rank;
    memcpy(st->dims, t.dims, sizeof st->dims);
    st->data = buf;
    st->nbytes = nbytes;
    owner[n++] = op;
  }
  if (!errors && gc_safetensors_write(path, ts, n, d) != 0) errors++;
  for (int i = 0; i < n; i++) free((void *)ts[i].data);
  free(owner);
  free(ts);
  return errors ? -1 : 0;
}
