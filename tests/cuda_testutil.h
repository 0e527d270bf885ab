/* cuda_testutil.h - helpers for the GPU suites (test_cuda_runtime, test_backend_ops,
 * test_examples_gpu): random data by kind, host tensors for an executable,
 * comparison with the per-dtype tolerances of the brief, and the seed.
 *
 * Header-only (static functions): each suite includes it once.
 *
 * Data kinds (a letter; the op tests name graph arguments after them):
 *   'x' default   floats uniform in [-3, 3]; ints over a wide range with some
 *                 extremes (INT_MIN, INT_MAX, ...); bools 0/1
 *   'p' positive  floats in [0.1, 4]; ints in [1, 20]
 *   's' small     values in {-2..2} (u8: {0..4}) so equality is common; floats get 10% NaN
 *   'n' nan       like 'x', floats get 10% NaN
 *   'd' divisible ints in [-100, 100] (zero included, never INT_MIN); floats like 'x'
 *   'e' exponent  floats in [-2, 2]
 *   'c' cast      specials (inf, nan, 1e10, 1e19, 300.7, -128.9, ...) and [-300, 300]
 *   'k' moderate  floats [-3, 3] (fp8 too, rounded); ints in [-3, 3] (u8 [0, 3]): matmul/conv operands
 *   'i' index     ints in [-range, range) (gather indices)
 */
#ifndef GC_CUDA_TESTUTIL_H
#define GC_CUDA_TESTUTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "graphc/graphc.h"
#include "interp/interp.h"

/* splitmix64 step. */
static inline uint64_t tu_next(uint64_t *s) {
  uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* Uniform double in [0, 1). */
static inline double tu_unit(uint64_t *s) { return (double)(tu_next(s) >> 11) * 0x1.0p-53; }

/* Uniform integer in [lo, hi]. */
static inline int64_t tu_int(uint64_t *s, int64_t lo, int64_t hi) {
  uint64_t span = (uint64_t)hi - (uint64_t)lo + 1;
  return span == 0 ? (int64_t)tu_next(s) : lo + (int64_t)(tu_next(s) % span);
}

/* The run's seed: $GRAPHC_TEST_SEED, else fresh from the clock and pid. */
static inline uint64_t tu_seed(void) {
  const char *e = getenv("GRAPHC_TEST_SEED");
  if (e && *e) return strtoull(e, NULL, 0);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t s = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40);
  tu_next(&s);
  return s % 1000000007u;
}

/* Store an integer into element i of an int/bool buffer (two's complement). */
static inline void tu_store_int(void *base, graphc_dtype_t t, int64_t i, int64_t v) {
  unsigned char *p = base;
  switch (t) {
    case GRAPHC_DTYPE_I64: memcpy(p + 8 * i, &v, 8); break;
    case GRAPHC_DTYPE_I32: { int32_t w = (int32_t)(uint32_t)(uint64_t)v; memcpy(p + 4 * i, &w, 4); break; }
    case GRAPHC_DTYPE_I8:
    case GRAPHC_DTYPE_U8: p[i] = (unsigned char)(uint64_t)v; break;
    case GRAPHC_DTYPE_BOOL: p[i] = v != 0; break;
    default: gc_store_f64(base, t, i, (double)v); break;
  }
}

/* Compared as floats (NaN matches any NaN); fp8 with tolerance 0: the same value. */
static inline int tu_is_float(graphc_dtype_t t) {
  return t == GRAPHC_DTYPE_F64 || t == GRAPHC_DTYPE_F32 || t == GRAPHC_DTYPE_F16 ||
         t == GRAPHC_DTYPE_BF16 || t == GRAPHC_DTYPE_F8E4M3 || t == GRAPHC_DTYPE_F8E5M2;
}

/* An integer of kind 'x' for dtype t: mostly moderate, 5% extremes. */
static inline int64_t tu_wide_int(uint64_t *s, graphc_dtype_t t) {
  int64_t lo, hi;
  switch (t) {
    case GRAPHC_DTYPE_I8: return tu_int(s, -128, 127);
    case GRAPHC_DTYPE_U8: return tu_int(s, 0, 255);
    case GRAPHC_DTYPE_I32: lo = INT32_MIN; hi = INT32_MAX; break;
    default: lo = INT64_MIN; hi = INT64_MAX; break;
  }
  double r = tu_unit(s);
  if (r < 0.025) return lo;
  if (r < 0.05) return hi;
  if (r < 0.1) return tu_int(s, lo / 2, hi / 2);
  return tu_int(s, -100000, 100000);
}

/* Fill n elements of dtype t with data of `kind` (see the header comment). */
static inline void tu_fill(void *data, graphc_dtype_t t, int64_t n, char kind, int64_t range,
                           uint64_t *s) {
  static const double specials[] = {NAN,   INFINITY, -INFINITY, 1e10,  -1e10, 1e19,  -1e19,
                                    300.7, -300.7,   127.5,     -128.9, 255.9, 65504, 2.5,
                                    -2.5,  0.5,      -0.5,      0.0,   -0.0,  1e-3,  3e9,
                                    -3e9,  70000.0,  -40000.5,  1.0,   -1.0,  0.999, 128.0};
  for (int64_t i = 0; i < n; i++) {
    if (t == GRAPHC_DTYPE_BOOL) {
      tu_store_int(data, t, i, (int64_t)(tu_next(s) & 1));
      continue;
    }
    /* fp8: any bit pattern (NaN, inf too), except 'k': [-3, 3] rounded, for matmul operands */
    if ((t == GRAPHC_DTYPE_F8E4M3 || t == GRAPHC_DTYPE_F8E5M2) && kind != 'k') {
      ((unsigned char *)data)[i] = (unsigned char)(tu_next(s) >> 56);
      continue;
    }
    if (tu_is_float(t)) {
      double v;
      switch (kind) {
        case 'p': v = 0.1 + 3.9 * tu_unit(s); break;
        case 's': v = tu_unit(s) < 0.1 ? NAN : (double)tu_int(s, -2, 2); break;
        case 'n': v = tu_unit(s) < 0.1 ? NAN : -3 + 6 * tu_unit(s); break;
        case 'e': v = -2 + 4 * tu_unit(s); break;
        case 'c':
          v = tu_unit(s) < 0.4 ? specials[tu_next(s) % (sizeof specials / sizeof specials[0])]
                               : -300 + 600 * tu_unit(s);
          break;
        case 'i': v = (double)tu_int(s, -range, range - 1); break;
        default: v = -3 + 6 * tu_unit(s); break;
      }
      gc_store_f64(data, t, i, v);
      continue;
    }
    int64_t v;
    int u8 = t == GRAPHC_DTYPE_U8;
    switch (kind) {
      case 'p': v = tu_int(s, 1, 20); break;
      case 's': v = u8 ? tu_int(s, 0, 4) : tu_int(s, -2, 2); break;
      case 'd': v = u8 ? tu_int(s, 0, 100) : tu_int(s, -100, 100); break;
      case 'k': v = u8 ? tu_int(s, 0, 3) : tu_int(s, -3, 3); break;
      case 'i': v = tu_int(s, -range, range - 1); break;
      case 'e': v = u8 ? tu_int(s, 0, 2) : tu_int(s, -2, 2); break;
      default: v = tu_wide_int(s, t); break;
    }
    tu_store_int(data, t, i, v);
  }
}

/* Tolerances of the brief for dtype t; `chain` selects the looser f32 bound
 * for transcendental / reduction / matmul results. */
static inline void tu_tolerance(graphc_dtype_t t, int chain, double *atol, double *rtol) {
  switch (t) {
    case GRAPHC_DTYPE_F64: *atol = *rtol = 1e-12; break;
    case GRAPHC_DTYPE_F32: *atol = *rtol = chain ? 2e-4 : 1e-5; break;
    case GRAPHC_DTYPE_F16: *atol = *rtol = 2e-3; break;
    case GRAPHC_DTYPE_BF16: *atol = *rtol = 2e-2; break;
    default: *atol = *rtol = 0; break;
  }
}

/* Result of comparing one tensor against its reference. */
typedef struct tu_cmp {
  int64_t n_bad;        /* elements outside tolerance */
  int64_t first_bad;    /* index of the first, -1 if none */
  double ref_bad, got_bad;
  double max_err;       /* max |got - ref| over finite pairs */
  double worst;         /* max |got - ref| / (atol + rtol |ref|): <= 1 passes */
} tu_cmp;

/* Elementwise comparison: ints and bools exactly (bit patterns), floats with
 * atol + rtol*|ref|; NaN matches NaN, inf matches the same inf. */
static inline tu_cmp tu_compare(const void *ref, const void *got, graphc_dtype_t t, int64_t n,
                                double atol, double rtol) {
  tu_cmp c = {0, -1, 0, 0, 0, 0};
  size_t es = graphc_dtype_size(t);
  for (int64_t i = 0; i < n; i++) {
    int ok;
    double r = gc_load_f64(ref, t, i), g = gc_load_f64(got, t, i);
    if (!tu_is_float(t)) {
      ok = memcmp((const char *)ref + i * es, (const char *)got + i * es, es) == 0;
      if (t == GRAPHC_DTYPE_BOOL) ok = (r != 0) == (g != 0);
      double e = fabs(g - r);
      if (e > c.max_err) c.max_err = e;
      if (!ok) c.worst = INFINITY;
    } else if (isnan(r) || isnan(g)) {
      ok = isnan(r) && isnan(g);
      if (!ok) c.worst = INFINITY;
    } else if (isinf(r) || isinf(g)) {
      ok = r == g;
      if (!ok) c.worst = INFINITY;
    } else {
      double e = fabs(g - r), tol = atol + rtol * fabs(r);
      ok = e <= tol;
      if (e > c.max_err) c.max_err = e;
      if (e / tol > c.worst) c.worst = e / tol;
    }
    if (!ok) {
      if (c.n_bad == 0) {
        c.first_bad = i;
        c.ref_bad = r;
        c.got_bad = g;
      }
      c.n_bad++;
    }
  }
  return c;
}

/* Host tensors shaped like an executable's inputs (filled by `kinds`, one letter
 * per input, default 'x') and outputs (zeroed). Returns 0, -1 out of memory. */
static inline int tu_make_io(graphc_executable_t *exe, const char *kinds, uint64_t *seed,
                             graphc_tensor_t **in, graphc_tensor_t **out) {
  size_t ni = graphc_executable_num_inputs(exe), no = graphc_executable_num_outputs(exe);
  *in = calloc(ni + 1, sizeof **in);
  *out = calloc(no + 1, sizeof **out);
  if (!*in || !*out) return -1;
  for (int pass = 0; pass < 2; pass++) {
    size_t n = pass ? no : ni;
    for (size_t i = 0; i < n; i++) {
      graphc_tensor_info_t info;
      if (pass)
        graphc_executable_output_info(exe, i, &info);
      else
        graphc_executable_input_info(exe, i, &info);
      graphc_tensor_t *t = pass ? &(*out)[i] : &(*in)[i];
      t->dtype = info.dtype;
      t->rank = info.rank;
      memcpy(t->dims, info.dims, sizeof t->dims);
      t->nbytes = info.nbytes;
      t->data = calloc(1, info.nbytes ? info.nbytes : 1);
      if (!t->data) return -1;
      if (!pass) {
        char kind = kinds && i < strlen(kinds) ? kinds[i] : 'x';
        tu_fill(t->data, info.dtype, (int64_t)(info.nbytes / graphc_dtype_size(info.dtype)), kind,
                4, seed);
      }
    }
  }
  return 0;
}

/* Fresh zeroed output tensors shaped like `like`. */
static inline graphc_tensor_t *tu_clone_outputs(const graphc_tensor_t *like, size_t n) {
  graphc_tensor_t *o = calloc(n + 1, sizeof *o);
  if (!o) return NULL;
  for (size_t i = 0; i < n; i++) {
    o[i] = like[i];
    o[i].data = calloc(1, like[i].nbytes ? like[i].nbytes : 1);
  }
  return o;
}

/* Make t a host tensor of IR type ty with zeroed data (nbytes + 1 bytes: an empty
 * tensor still gets a pointer). */
static inline void tu_tensor_of_type(graphc_tensor_t *t, const gc_type *ty) {
  t->dtype = ty->dtype;
  t->rank = ty->rank;
  memcpy(t->dims, ty->dims, sizeof t->dims);
  t->nbytes = (size_t)gc_type_numel(ty) * graphc_dtype_size(ty->dtype);
  t->data = calloc(1, t->nbytes + 1);
}

static inline void tu_free_tensors(graphc_tensor_t *t, size_t n) {
  for (size_t i = 0; t && i < n; i++) free(t[i].data);
  free(t);
}

#endif /* GC_CUDA_TESTUTIL_H */
