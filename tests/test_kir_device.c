/* test_kir_device.c - run the hand-built Kernel IR on a GPU and compare with
 * host references of the op semantics (BRIEF "Op semantics"): every op on
 * every type it accepts (special values included: NaN, inf, -0, INT_MIN, /0),
 * every cast pair, vector loads/stores, shared memory + barriers + shuffles,
 * loops/ifs, exact literals and pack2 fragment registers (bits against an exhaustive
 * nearest-even reference). Kernels come from kir_test_kernels.h, go
 * through gc_cuda_c_print + gc_nvrtc_compile (cubin; PTX is JIT-loaded too)
 * and run through the driver API opened with dlopen. Without libcuda.so.1 or
 * a device: "SKIPPED: no CUDA device", exit 77.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ir/dtype.h"
#include "kir_test_kernels.h"

/* ---- a minimal driver table --------------------------------------------------------------- */
typedef struct drv {
  void *lib;
  CUresult (*init)(unsigned);
  CUresult (*device_get_count)(int *);
  CUresult (*device_get)(CUdevice *, int);
  CUresult (*device_get_attribute)(int *, CUdevice_attribute, CUdevice);
  CUresult (*primary_retain)(CUcontext *, CUdevice);
  CUresult (*primary_release)(CUdevice);
  CUresult (*ctx_set_current)(CUcontext);
  CUresult (*ctx_synchronize)(void);
  CUresult (*module_load_data)(CUmodule *, const void *);
  CUresult (*module_unload)(CUmodule);
  CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
  CUresult (*mem_alloc)(CUdeviceptr *, size_t);
  CUresult (*mem_free)(CUdeviceptr);
  CUresult (*htod)(CUdeviceptr, const void *, size_t);
  CUresult (*dtoh)(void *, CUdeviceptr, size_t);
  CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                     CUstream, void **, void **);
  CUresult (*error_string)(CUresult, const char **);
  CUdevice dev;
  CUcontext ctx;
  int sm;
} drv;

static drv D;          /* test-only process state: the opened driver */
static unsigned SEED;  /* random seed of this run, printed on failure */

/* Fail the test with the driver's message when r is not success. */
#define CK_CU(call)                                                                  \
  do {                                                                               \
    CUresult r_ = (call);                                                            \
    const char *s_ = "?";                                                            \
    if (r_ != CUDA_SUCCESS) D.error_string(r_, &s_);                                 \
    ck_assert_msg(r_ == CUDA_SUCCESS, "%s failed: %s (%d)", #call, s_, (int)r_);     \
  } while (0)

/* Open libcuda and resolve the entry points (does not initialize CUDA). */
static int drv_open(void) {
  D.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!D.lib) return 0;
#define SYM(field, name)                                  \
  do {                                                    \
    *(void **)&D.field = dlsym(D.lib, name);              \
    if (!D.field) return 0;                               \
  } while (0)
  SYM(init, "cuInit");
  SYM(device_get_count, "cuDeviceGetCount");
  SYM(device_get, "cuDeviceGet");
  SYM(device_get_attribute, "cuDeviceGetAttribute");
  SYM(primary_retain, "cuDevicePrimaryCtxRetain");
  SYM(primary_release, "cuDevicePrimaryCtxRelease_v2");
  SYM(ctx_set_current, "cuCtxSetCurrent");
  SYM(ctx_synchronize, "cuCtxSynchronize");
  SYM(module_load_data, "cuModuleLoadData");
  SYM(module_unload, "cuModuleUnload");
  SYM(module_get_function, "cuModuleGetFunction");
  SYM(mem_alloc, "cuMemAlloc_v2");
  SYM(mem_free, "cuMemFree_v2");
  SYM(htod, "cuMemcpyHtoD_v2");
  SYM(dtoh, "cuMemcpyDtoH_v2");
  SYM(launch, "cuLaunchKernel");
  SYM(error_string, "cuGetErrorString");
#undef SYM
  return 1;
}

/* Compute capability x10 of device 0, found in a child process so that this
 * (parent) process never initializes CUDA: Check forks every test, and CUDA
 * does not survive fork. 0 when there is no device. */
static int probe_sm(void) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    int n = 0, major = 0, minor = 0;
    CUdevice dev;
    if (D.init(0) != CUDA_SUCCESS || D.device_get_count(&n) != CUDA_SUCCESS || n < 1 ||
        D.device_get(&dev, 0) != CUDA_SUCCESS)
      _exit(0);
    D.device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    D.device_get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    _exit(major * 10 + minor);
  }
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) return 0;
  return WEXITSTATUS(st);
}

/* Per test (in the forked child): initialize CUDA and make the primary
 * context of device 0 current. */
static void dev_begin(void) {
  CK_CU(D.init(0));
  CK_CU(D.device_get(&D.dev, 0));
  CK_CU(D.primary_retain(&D.ctx, D.dev));
  CK_CU(D.ctx_set_current(D.ctx));
}

/* The test module, compiled and loaded once per test (forked tests). */
typedef struct loaded {
  kir_module *m;
  CUmodule mod;
} loaded;

/* Build, compile (cubin for the device) and load the test module. */
static loaded load_all(void) {
  loaded L;
  dev_begin();
  L.m = build_all();
  char *src = cuda_source(L.m);
  void *cubin = NULL;
  size_t n = 0;
  compile_or_fail(src, D.sm, NULL, &cubin, &n);
  CK_CU(D.module_load_data(&L.mod, cubin));
  free(cubin);
  free(src);
  return L;
}

/* Unload the module and release the primary context. */
static void unload(loaded *L) {
  CK_CU(D.module_unload(L->mod));
  kir_module_free(L->m);
  CK_CU(D.primary_release(D.dev));
}

/* Device copy of host data (bytes). */
static CUdeviceptr up(const void *h, size_t bytes) {
  CUdeviceptr p;
  CK_CU(D.mem_alloc(&p, bytes ? bytes : 1));
  if (bytes) CK_CU(D.htod(p, h, bytes));
  return p;
}

/* Zeroed device buffer. */
static CUdeviceptr zeros(size_t bytes) {
  void *z = calloc(1, bytes ? bytes : 1);
  CUdeviceptr p = up(z, bytes);
  free(z);
  return p;
}

/* Copy device bytes back to the host. */
static void down(void *h, CUdeviceptr p, size_t bytes) { CK_CU(D.dtoh(h, p, bytes)); }

/* Launch kernel `name` of module mod with `grid` blocks of its launch.block threads;
 * args are device pointers (buffers) or int64 values, in parameter order. */
static void run(CUmodule mod, const kir_module *m, const char *name, unsigned grid, void **args) {
  const kir_kernel *k = NULL;
  for (int i = 0; i < m->n_kernels; i++)
    if (!strcmp(m->kernels[i]->name, name)) k = m->kernels[i];
  ck_assert_ptr_nonnull(k);
  CUfunction f;
  CK_CU(D.module_get_function(&f, mod, name));
  CK_CU(D.launch(f, grid, 1, 1, (unsigned)k->launch.block, 1, 1, 0, NULL, args, NULL));
  CK_CU(D.ctx_synchronize());
}

/* ---- random values ------------------------------------------------------------------------- */
/* xorshift64: reproducible from SEED (test-only state). */
static uint64_t rng_state;
static uint64_t rnd64(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}
/* Uniform in [0, 1). */
static double rnd_unit(void) { return (double)(rnd64() >> 11) / 9007199254740992.0; }
/* Restart the sequence (each test sees the same values for a seed). */
static void rng_reset(void) { rng_state = 0x9e3779b97f4a7c15ull ^ ((uint64_t)SEED << 1) ^ 1; }

/* ---- host references ---------------------------------------------------------------------- */

/* Same value for comparison: equal, or both NaN. */
static int same(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

/* Close: same, or within atol + rtol*|ref|. */
static int close_to(double got, double ref, double atol, double rtol) {
  if (same(got, ref)) return 1;
  if (isnan(got) || isnan(ref) || isinf(got) || isinf(ref)) return 0;
  return fabs(got - ref) <= atol + rtol * fabs(ref);
}

/* NaN-propagating min/max. */
static double nmin(double a, double b) { return isnan(a) || isnan(b) ? NAN : (a < b ? a : b); }
static double nmax(double a, double b) { return isnan(a) || isnan(b) ? NAN : (a > b ? a : b); }

/* Float op reference in double (f64) or float (f32) precision. */
static double ref_float(kir_op op, double a, double b, int f32) {
  switch (op) {
    case KIR_NEG: return -a;
    case KIR_ABS: return fabs(a);
    case KIR_EXP: return f32 ? expf((float)a) : exp(a);
    case KIR_EXP2: return f32 ? exp2f((float)a) : exp2(a);
    case KIR_LOG: return f32 ? logf((float)a) : log(a);
    case KIR_SQRT: return f32 ? sqrtf((float)a) : sqrt(a);
    case KIR_RSQRT: return 1.0 / sqrt(a);
    case KIR_TANH: return f32 ? tanhf((float)a) : tanh(a);
    case KIR_ERF: return f32 ? erff((float)a) : erf(a);
    case KIR_SIN: return f32 ? sinf((float)a) : sin(a);
    case KIR_COS: return f32 ? cosf((float)a) : cos(a);
    case KIR_FLOOR: return floor(a);
    case KIR_CEIL: return ceil(a);
    case KIR_ADD: return f32 ? (double)((float)a + (float)b) : a + b;
    case KIR_SUB: return f32 ? (double)((float)a - (float)b) : a - b;
    case KIR_MUL: return f32 ? (double)((float)a * (float)b) : a * b;
    case KIR_DIV: return f32 ? (double)((float)a / (float)b) : a / b;
    case KIR_REM: return fmod(a, b);
    case KIR_MIN: return nmin(a, b);
    case KIR_MAX: return nmax(a, b);
    case KIR_POW: return f32 ? powf((float)a, (float)b) : pow(a, b);
    case KIR_EQ: return a == b;
    case KIR_NE: return a != b;
    case KIR_LT: return a < b;
    case KIR_LE: return a <= b;
    case KIR_GT: return a > b;
    case KIR_GE: return a >= b;
    default: break;
  }
  ck_abort_msg("no float reference for op %d", op);
  return 0;
}

/* Ops whose float result must be exact (correctly rounded in IEEE). */
static int float_exact(kir_op op) {
  return op == KIR_NEG || op == KIR_ABS || op == KIR_SQRT || op == KIR_FLOOR || op == KIR_CEIL ||
         op == KIR_ADD || op == KIR_SUB || op == KIR_MUL || op == KIR_DIV || op == KIR_REM ||
         op == KIR_MIN || op == KIR_MAX || op >= KIR_EQ;
}

/* Wrap a 64-bit pattern to an int type of `bits` (two's complement). */
static int64_t wrap_int(uint64_t v, int bits) {
  if (bits == 64) return (int64_t)v;
  uint64_t m = (1ull << bits) - 1;
  v &= m;
  if (v >> (bits - 1)) return (int64_t)(v | ~m);
  return (int64_t)v;
}

/* Integer op reference with wrapping (bits = 32 or 64); truncating division,
 * x/0 = x%0 = 0; bool ops on 0/1 (bits = 1). */
static int64_t ref_int(kir_op op, int64_t a, int64_t b, int bits) {
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
  int64_t mn = bits == 64 ? INT64_MIN : INT32_MIN;
  switch (op) {
    case KIR_NEG: return wrap_int(0 - ua, bits);
    case KIR_ABS: return a < 0 ? wrap_int(0 - ua, bits) : a;
    case KIR_NOT: return bits == 1 ? !a : wrap_int(~ua, bits);
    case KIR_ADD: return wrap_int(ua + ub, bits);
    case KIR_SUB: return wrap_int(ua - ub, bits);
    case KIR_MUL: return wrap_int(ua * ub, bits);
    case KIR_DIV: return b == 0 ? 0 : (a == mn && b == -1) ? mn : a / b;
    case KIR_REM: return b == 0 || b == -1 ? 0 : a % b;
    case KIR_MIN: return a < b ? a : b;
    case KIR_MAX: return a > b ? a : b;
    case KIR_AND: return a & b;
    case KIR_OR: return a | b;
    case KIR_XOR: return a ^ b;
    case KIR_EQ: return a == b;
    case KIR_NE: return a != b;
    case KIR_LT: return a < b;
    case KIR_LE: return a <= b;
    case KIR_GT: return a > b;
    case KIR_GE: return a >= b;
    default: break;
  }
  ck_abort_msg("no int reference for op %d", op);
  return 0;
}

/* Element i of a host buffer of dtype t as double / int64 (f16/bf16 decoded). */
static double get_f(const void *buf, gc_dtype t, size_t i) {
  switch (t) {
    case F64: return ((const double *)buf)[i];
    case F32: return ((const float *)buf)[i];
    case F16: return decode16(((const uint16_t *)buf)[i], 10, 15);
    case BF16: return decode16(((const uint16_t *)buf)[i], 7, 127);
    case GRAPHC_DTYPE_F8E4M3:
    case GRAPHC_DTYPE_F8E5M2: return gc_f8_to_f64(t, ((const uint8_t *)buf)[i]);
    default: break;
  }
  ck_abort_msg("not a float dtype");
  return 0;
}

/* Element i of a host int/bool buffer as int64. */
static int64_t get_i(const void *buf, gc_dtype t, size_t i) {
  switch (t) {
    case I64: return ((const int64_t *)buf)[i];
    case I32: return ((const int32_t *)buf)[i];
    case I8: return ((const int8_t *)buf)[i];
    case U8: return ((const uint8_t *)buf)[i];
    case BOOL: return ((const uint8_t *)buf)[i];
    default: break;
  }
  ck_abort_msg("not an int dtype");
  return 0;
}

/* ---- every op on every type ------------------------------------------------------------------ */

static const double fspecial[] = {0.0, -0.0, 1.0, -1.0, NAN, INFINITY, -INFINITY, 2.5, -2.5, 1e30, -7.0, 3.0};
static const int64_t ispecial[] = {0, 1, -1, INT32_MIN, INT32_MAX, 7, -7, 3, 100000, -2, INT64_MIN, INT64_MAX};
#define NFS 12
#define NIS 12

/* Inputs a[i], b[i] for type t: the special cross product first, then random. */
static void make_op_inputs(gc_dtype t, void *a, void *b) {
  for (int i = 0; i < OPS_N; i++) {
    double fa, fb;
    int64_t ia, ib;
    if (i < NFS * NFS) {
      fa = fspecial[i % NFS];
      fb = fspecial[i / NFS];
      ia = ispecial[i % NIS];
      ib = ispecial[i / NIS];
    } else {
      fa = (rnd_unit() - 0.5) * 20;
      fb = (rnd_unit() - 0.5) * 20;
      if (i % 3 == 0) fb = floor(fb);  /* integral exponents for pow of negatives */
      ia = (int64_t)rnd64();
      ib = i % 2 ? (int64_t)(rnd64() % 41) - 20 : (int64_t)rnd64();
    }
    switch (t) {
      case F64: ((double *)a)[i] = fa; ((double *)b)[i] = fb; break;
      case F32: ((float *)a)[i] = (float)fa; ((float *)b)[i] = (float)fb; break;
      case I64: ((int64_t *)a)[i] = ia; ((int64_t *)b)[i] = ib; break;
      case I32: ((int32_t *)a)[i] = (int32_t)wrap_int((uint64_t)ia, 32); ((int32_t *)b)[i] = (int32_t)wrap_int((uint64_t)ib, 32); break;
      case BOOL: ((uint8_t *)a)[i] = (uint8_t)(ia & 1); ((uint8_t *)b)[i] = (uint8_t)((ib >> 1) & 1); break;
      default: ck_abort();
    }
  }
}

START_TEST(test_dev_ops) {
  loaded L = load_all();
  for (size_t ti = 0; ti < sizeof arith_types / sizeof arith_types[0]; ti++) {
    gc_dtype t = arith_types[ti];
    size_t es = graphc_dtype_size(t);
    rng_reset();
    void *a = calloc(OPS_N, es), *b = calloc(OPS_N, es);
    make_op_inputs(t, a, b);
    size_t nout = (size_t)OPS_N * NOPS;
    CUdeviceptr da = up(a, OPS_N * es), db = up(b, OPS_N * es), dout = zeros(nout * es), doutb = zeros(nout);
    void *args[] = {&da, &db, &dout, &doutb};
    char name[32];
    snprintf(name, sizeof name, "ops_%s", graphc_dtype_name(t));
    run(L.mod, L.m, name, 1, args);  /* one block: the grid-stride loop runs 3 times */
    void *out = malloc(nout * es);
    uint8_t *outb = malloc(nout);
    down(out, dout, nout * es);
    down(outb, doutb, nout);
    int fails = 0;
    for (int i = 0; i < OPS_N && fails < 10; i++) {
      for (int op = 0; op < NOPS; op++) {
        if (!test_op_accepts((kir_op)op, t)) continue;
        size_t j = (size_t)i * NOPS + (size_t)op;
        int ok;
        char gs[64], rs[64], as[64];
        if (gc_dtype_is_float(t)) {
          double x = get_f(a, t, i), y = get_f(b, t, i);
          double ref = ref_float((kir_op)op, x, y, t == F32);
          double got = op_cmp((kir_op)op) ? outb[j] : get_f(out, t, j);
          if (t == F32) ref = (double)(float)ref;
          if (float_exact((kir_op)op))
            ok = same(got, ref);
          else if (t == F32)
            ok = close_to(got, ref, 2e-7, 2e-6);
          else
            ok = close_to(got, ref, 1e-15, 1e-14);
          snprintf(gs, sizeof gs, "%.17g", got);
          snprintf(rs, sizeof rs, "%.17g", ref);
          snprintf(as, sizeof as, "%.9g, %.9g", x, y);
        } else {
          int64_t x = get_i(a, t, i), y = get_i(b, t, i);
          int bits = t == I64 ? 64 : t == I32 ? 32 : 1;
          int64_t ref = ref_int((kir_op)op, x, y, bits);
          int64_t got = op_cmp((kir_op)op) ? outb[j] : get_i(out, t, j);
          ok = got == ref;
          snprintf(gs, sizeof gs, "%lld", (long long)got);
          snprintf(rs, sizeof rs, "%lld", (long long)ref);
          snprintf(as, sizeof as, "%lld, %lld", (long long)x, (long long)y);
        }
        if (!ok) {
          fprintf(stderr, "seed %u: %s op %d (%s) item %d: got %s want %s\n", SEED, name, op, as, i, gs, rs);
          fails++;
        }
      }
    }
    ck_assert_msg(fails == 0, "seed %u: %s: %d mismatches (see stderr)", SEED, name, fails);
    free(a); free(b); free(out); free(outb);
    CK_CU(D.mem_free(da)); CK_CU(D.mem_free(db)); CK_CU(D.mem_free(dout)); CK_CU(D.mem_free(doutb));
  }
  unload(&L);
}
END_TEST

/* ---- every cast pair --------------------------------------------------------------------------- */

static const double cast_fspecial[] = {0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5e9, -3e9, 1e20, -1e20, NAN,
                                       INFINITY, -INFINITY, 127.9, -128.9, 255.5, 300.0, 65504.0, 65520.0,
                                       1e-40, 9.3e18, -9.3e18, 2147483520.0, -2147483648.0, 0.1, 1.0 / 3};
static const int64_t cast_ispecial[] = {0, 1, -1, 127, 128, -128, -129, 255, 256, INT32_MAX, INT32_MIN,
                                        (int64_t)INT32_MAX + 1, INT64_MIN, INT64_MAX, 65504, 65520, 16777217,
                                        -16777217, 33554435, (1LL << 53) - 1};
#define NCFS ((int)(sizeof cast_fspecial / sizeof cast_fspecial[0]))
#define NCIS ((int)(sizeof cast_ispecial / sizeof cast_ispecial[0]))

/* Input values for a cast from s: specials, then random (wide exponents /
 * random bit patterns). */
static void make_cast_inputs(gc_dtype s, void *in) {
  for (int i = 0; i < CAST_N; i++) {
    double f = i < NCFS ? cast_fspecial[i] : ldexp(rnd_unit() - 0.5, (int)(rnd64() % 80) - 40);
    int64_t v = i < NCIS ? cast_ispecial[i] : (int64_t)rnd64() >> (rnd64() % 64);
    switch (s) {
      case F64: ((double *)in)[i] = f; break;
      case F32: ((float *)in)[i] = (float)f; break;
      case F16: case BF16: ((uint16_t *)in)[i] = (uint16_t)rnd64(); break;
      case I64: ((int64_t *)in)[i] = v; break;
      case I32: ((int32_t *)in)[i] = (int32_t)wrap_int((uint64_t)v, 32); break;
      case I8: ((int8_t *)in)[i] = (int8_t)wrap_int((uint64_t)v, 8); break;
      case U8: ((uint8_t *)in)[i] = (uint8_t)v; break;
      case BOOL: ((uint8_t *)in)[i] = (uint8_t)(v & 1); break;
      default: ck_abort();
    }
  }
}

/* Saturating float -> int reference (truncate, clamp, NaN -> 0). */
static int64_t f2i(double x, gc_dtype t) {
  if (isnan(x)) return 0;
  double lo, hi;
  switch (t) {
    case I64: lo = -9223372036854775808.0; hi = 9223372036854775807.0; break;
    case I32: lo = INT32_MIN; hi = INT32_MAX; break;
    case I8: lo = -128; hi = 127; break;
    case U8: lo = 0; hi = 255; break;
    default: ck_abort(); return 0;
  }
  x = trunc(x);
  if (x <= lo) return t == I64 ? INT64_MIN : (int64_t)lo;
  if (x >= hi) return t == I64 ? INT64_MAX : (int64_t)hi;
  return (int64_t)x;
}

/* Compare element i of out (dtype t) with the cast of source element i. */
static int check_cast(const void *in, gc_dtype s, const void *out, gc_dtype t, int i, char *msg, size_t n) {
  int from_float = gc_dtype_is_float(s);
  double xf = from_float ? get_f(in, s, i) : 0;
  int64_t xi = from_float ? 0 : get_i(in, s, i);
  if (t == BOOL) {
    int64_t want = from_float ? (xf != 0) : (xi != 0), got = get_i(out, t, i);
    snprintf(msg, n, "got %lld want %lld", (long long)got, (long long)want);
    return got == want;
  }
  if (gc_dtype_is_int(t)) {
    int bits = t == I64 ? 64 : t == I32 ? 32 : 8;
    int64_t want = from_float ? f2i(xf, t) : wrap_int((uint64_t)xi, bits);
    if (t == U8 && !from_float) want = (int64_t)((uint64_t)xi & 0xff);
    int64_t got = get_i(out, t, i);
    snprintf(msg, n, "got %lld want %lld", (long long)got, (long long)want);
    return got == want;
  }
  double got = get_f(out, t, i), want;
  switch (t) {
    case F64: want = from_float ? xf : (double)xi; break;
    case F32: want = from_float ? (double)(float)xf : (double)(float)xi; break;
    case F16: want = decode16(nearest16(from_float ? xf : (double)xi, 10, 15), 10, 15); break;
    case BF16: want = decode16(nearest16(from_float ? xf : (double)xi, 7, 127), 7, 127); break;
    default: ck_abort(); return 0;
  }
  if (isnan(want)) want = NAN;
  snprintf(msg, n, "got %.17g want %.17g", got, want);
  /* signed zeros must match too */
  return same(got, want) && (got != 0 || signbit(got) == signbit(want));
}

/* fp8 is storage in Kernel IR: a value is its bits (lower_eval.h), and codegen decodes and
 * encodes it with integer ops, never a cast; its casts are not checked here (test_f8 checks
 * the conversions). */
START_TEST(test_dev_casts) {
  loaded L = load_all();
  for (int s = 0; s < NDT; s++) {
    if (gc_dtype_is_f8((gc_dtype)s)) continue;
    size_t es = graphc_dtype_size((gc_dtype)s);
    rng_reset();
    void *in = calloc(CAST_N, es);
    make_cast_inputs((gc_dtype)s, in);
    CUdeviceptr din = up(in, CAST_N * es), dout[NDT];
    void *args[1 + NDT];
    args[0] = &din;
    for (int t = 0; t < NDT; t++) {
      dout[t] = zeros(CAST_N * graphc_dtype_size((gc_dtype)t));
      args[1 + t] = &dout[t];
    }
    char name[32];
    snprintf(name, sizeof name, "cast_%s", graphc_dtype_name((gc_dtype)s));
    run(L.mod, L.m, name, 2, args);
    int fails = 0;
    for (int t = 0; t < NDT; t++) {
      size_t et = graphc_dtype_size((gc_dtype)t);
      void *out = malloc(CAST_N * et);
      down(out, dout[t], CAST_N * et);
      for (int i = 0; i < CAST_N && !gc_dtype_is_f8((gc_dtype)t); i++) {
        char msg[128];
        if (!check_cast(in, (gc_dtype)s, out, (gc_dtype)t, i, msg, sizeof msg) && fails++ < 20) {
          double x = gc_dtype_is_float((gc_dtype)s) ? get_f(in, (gc_dtype)s, i) : (double)get_i(in, (gc_dtype)s, i);
          fprintf(stderr, "seed %u: cast %s -> %s of %.17g (item %d): %s\n", SEED, graphc_dtype_name((gc_dtype)s),
                  graphc_dtype_name((gc_dtype)t), x, i, msg);
        }
      }
      free(out);
      CK_CU(D.mem_free(dout[t]));
    }
    ck_assert_msg(fails == 0, "seed %u: casts from %s: %d mismatches (see stderr)", SEED,
                  graphc_dtype_name((gc_dtype)s), fails);
    free(in);
    CK_CU(D.mem_free(din));
  }
  unload(&L);
}
END_TEST

/* ---- vectors, shared memory, shuffles, loops, literals --------------------------------------------- */

START_TEST(test_dev_vec) {
  loaded L = load_all();
  rng_reset();
  CUdeviceptr din[NVEC], dout[NVEC];
  void *hin[NVEC], *args[2 * NVEC];
  for (int c = 0; c < NVEC; c++) {
    size_t bytes = (size_t)VEC_N * vec_cases[c].w * graphc_dtype_size(vec_cases[c].t);
    uint8_t *h = malloc(bytes);
    for (size_t i = 0; i < bytes; i++) h[i] = vec_cases[c].t == BOOL ? (uint8_t)(rnd64() & 1) : (uint8_t)rnd64();
    hin[c] = h;
    din[c] = up(h, bytes);
    dout[c] = zeros(bytes);
    args[2 * c] = &din[c];
    args[2 * c + 1] = &dout[c];
  }
  run(L.mod, L.m, "vec_copy", 1, args);
  for (int c = 0; c < NVEC; c++) {
    size_t es = graphc_dtype_size(vec_cases[c].t), w = (size_t)vec_cases[c].w;
    size_t bytes = (size_t)VEC_N * w * es;
    uint8_t *h = malloc(bytes), *src = hin[c];
    down(h, dout[c], bytes);
    for (size_t v = 0; v < (size_t)VEC_N; v++)
      for (size_t e = 0; e < w; e++)
        ck_assert_msg(!memcmp(h + (v * w + e) * es, src + (v * w + (w - 1 - e)) * es, es),
                      "vec case %d (%s x%d): vector %zu element %zu", c, graphc_dtype_name(vec_cases[c].t),
                      vec_cases[c].w, v, e);
    free(h);
    free(src);
    CK_CU(D.mem_free(din[c]));
    CK_CU(D.mem_free(dout[c]));
  }
  unload(&L);
}
END_TEST

START_TEST(test_dev_rowsum) {
  loaded L = load_all();
  rng_reset();
  size_t n = (size_t)ROWS * COLS;
  float *in = malloc(n * sizeof *in);
  for (size_t i = 0; i < n; i++) in[i] = (float)(rnd_unit() * 2 - 1);
  CUdeviceptr din = up(in, n * sizeof *in), dout = zeros(ROWS * sizeof(float)),
              dout2 = zeros((size_t)ROWS * 1024 * sizeof(float));
  int64_t cols = COLS;
  void *args[] = {&din, &dout, &dout2, &cols};
  run(L.mod, L.m, "rowsum", 2, args);  /* 2 blocks for 5 groups: shared memory is reused */
  float out[ROWS], *out2 = malloc((size_t)ROWS * 1024 * sizeof(float));
  down(out, dout, sizeof out);
  down(out2, dout2, (size_t)ROWS * 1024 * sizeof(float));
  for (int r = 0; r < ROWS; r++) {
    double ref = 0, mag = 0;
    for (int j = 0; j < COLS; j++) {
      ref += in[(size_t)r * COLS + j];
      mag += fabs(in[(size_t)r * COLS + j]);
    }
    ck_assert_msg(fabs(out[r] - ref) <= 1e-5 * mag, "seed %u: row %d sum %.9g want %.9g", SEED, r, out[r], ref);
    for (int t = 0; t < 256; t++)
      for (int e = 0; e < 4; e++)
        ck_assert_msg(out2[(size_t)r * 1024 + t * 4 + e] == in[(size_t)r * COLS + (255 - t) * 4 + e],
                      "row %d thread %d element %d", r, t, e);
  }
  free(in);
  free(out2);
  CK_CU(D.mem_free(din)); CK_CU(D.mem_free(dout)); CK_CU(D.mem_free(dout2));
  unload(&L);
}
END_TEST

START_TEST(test_dev_shfl) {
  loaded L = load_all();
  rng_reset();
  size_t n = (size_t)SHFL_G * 64;
  CUdeviceptr din[NDT], dout[NDT];
  uint8_t *hin[NDT];
  void *args[2 * NDT];
  for (int t = 0; t < NDT; t++) {
    size_t bytes = n * graphc_dtype_size((gc_dtype)t);
    hin[t] = malloc(bytes);
    for (size_t i = 0; i < bytes; i++) hin[t][i] = t == BOOL ? (uint8_t)(rnd64() & 1) : (uint8_t)rnd64();
    din[t] = up(hin[t], bytes);
    dout[t] = zeros(bytes);
    args[2 * t] = &din[t];
    args[2 * t + 1] = &dout[t];
  }
  run(L.mod, L.m, "shfl_all", 1, args);
  for (int t = 0; t < NDT; t++) {
    size_t es = graphc_dtype_size((gc_dtype)t);
    uint8_t *h = malloc(n * es);
    down(h, dout[t], n * es);
    for (size_t i = 0; i < n; i++) {
      size_t g = i / 64, th = i % 64, from = g * 64 + (th ^ 5);
      ck_assert_msg(!memcmp(h + i * es, hin[t] + from * es, es), "shfl %s: element %zu",
                    graphc_dtype_name((gc_dtype)t), i);
    }
    free(h);
    free(hin[t]);
    CK_CU(D.mem_free(din[t]));
    CK_CU(D.mem_free(dout[t]));
  }
  unload(&L);
}
END_TEST

START_TEST(test_dev_loops) {
  loaded L = load_all();
  CUdeviceptr dout = zeros(LOOPS_N * sizeof(int64_t));
  void *args[] = {&dout};
  run(L.mod, L.m, "loops", 1, args);
  int64_t out[LOOPS_N];
  down(out, dout, sizeof out);
  for (int i = 0; i < LOOPS_N; i++) {
    int64_t s = 0;
    for (int64_t j = 0; j < i % 7; j++) s += (j & 1) ? j * j : -j;
    int64_t want = s > 10 ? s - 100 : s + 1000;
    ck_assert_int_eq(out[i], want);
  }
  CK_CU(D.mem_free(dout));
  unload(&L);
}
END_TEST

START_TEST(test_dev_consts) {
  loaded L = load_all();
  CUdeviceptr d[NDT];
  void *args[NDT];
  for (int t = 0; t < NDT; t++) {
    d[t] = zeros(NLITS * 8);
    args[t] = &d[t];
  }
  run(L.mod, L.m, "consts", 1, args);
  for (int t = 0; t < NDT; t++) {
    uint8_t h[NLITS * 8];
    down(h, d[t], sizeof h);
    if (gc_dtype_is_float((gc_dtype)t)) {
      for (int i = 0; i < NLITS; i++) {
        double lit = float_lits[i], got = get_f(h, (gc_dtype)t, i), want;
        switch (t) {
          case F64: want = lit; break;
          case F32: want = (float)lit; break;
          case F16: want = decode16(nearest16(lit, 10, 15), 10, 15); break;
          case GRAPHC_DTYPE_F8E4M3:  /* a literal's encoding (kir.c): saturating but for inf */
          case GRAPHC_DTYPE_F8E5M2: want = gc_f8_to_f64((gc_dtype)t, gc_f64_to_f8((gc_dtype)t, lit, !isinf(lit))); break;
          default: want = decode16(nearest16(lit, 7, 127), 7, 127); break;
        }
        ck_assert_msg(same(got, want) && signbit(got) == signbit(isnan(want) ? got : want),
                      "%s literal %.17g: got %.17g want %.17g", graphc_dtype_name((gc_dtype)t), lit, got, want);
      }
    } else {
      int slot = 0;
      for (int i = 0; i < NILITS; i++)
        if (lit_fits((gc_dtype)t, int_lits[i])) {
          ck_assert_msg(get_i(h, (gc_dtype)t, slot) == int_lits[i], "%s literal %lld",
                        graphc_dtype_name((gc_dtype)t), (long long)int_lits[i]);
          slot++;
        }
    }
    CK_CU(D.mem_free(d[t]));
  }
  unload(&L);
}
END_TEST

/* pack2 on the GPU: known bit patterns, then every register against nearest16's rounding. */
START_TEST(test_dev_pack2) {
  loaded L = load_all();
  float x[PACK2_N], y[PACK2_N];
  make_pack2_inputs(x, y, PACK2_N, SEED);
  CUdeviceptr dx = up(x, sizeof x), dy = up(y, sizeof y), dout = zeros(2 * PACK2_N * sizeof(uint32_t));
  void *args[] = {&dx, &dy, &dout};
  run(L.mod, L.m, "pack2", 2, args);
  uint32_t out[2 * PACK2_N];
  down(out, dout, sizeof out);
  check_pack2_all(out, x, y, PACK2_N, SEED);
  CK_CU(D.mem_free(dx)); CK_CU(D.mem_free(dy)); CK_CU(D.mem_free(dout));
  unload(&L);
}
END_TEST

/* NVRTC's PTX (not only its cubin) loads through the driver's JIT and runs. */
START_TEST(test_dev_ptx_jit) {
  dev_begin();
  kir_module *m = kir_module_new();
  build_loops_kernel(m, LOOPS_N);
  char *src = cuda_source(m);
  char *ptx = NULL;
  compile_or_fail(src, D.sm, &ptx, NULL, NULL);
  CUmodule mod;
  CK_CU(D.module_load_data(&mod, ptx));
  CUdeviceptr dout = zeros(LOOPS_N * sizeof(int64_t));
  void *args[] = {&dout};
  run(mod, m, "loops", 3, args);
  int64_t out[LOOPS_N];
  down(out, dout, sizeof out);
  /* item 6: j = 0..5 gives -0 + 1 - 2 + 9 - 4 + 25 = 29 > 10, so 29 - 100 */
  ck_assert_int_eq(out[6], -71);
  ck_assert_int_eq(out[2], 1001);
  CK_CU(D.mem_free(dout));
  CK_CU(D.module_unload(mod));
  CK_CU(D.primary_release(D.dev));
  free(ptx);
  free(src);
  kir_module_free(m);
}
END_TEST

int main(void) {
  if (!drv_open() || (D.sm = probe_sm()) == 0) {
    printf("SKIPPED: no CUDA device\n");
    return 77;
  }
  const char *env = getenv("GRAPHC_TEST_SEED");
  SEED = env ? (unsigned)strtoul(env, NULL, 10) : (unsigned)time(NULL);
  printf("kir device tests on sm_%d, seed %u\n", D.sm, SEED);
  Suite *s = suite_create("kir_device");
  TCase *tc = tcase_create("device");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_dev_ops);
  tcase_add_test(tc, test_dev_casts);
  tcase_add_test(tc, test_dev_vec);
  tcase_add_test(tc, test_dev_rowsum);
  tcase_add_test(tc, test_dev_shfl);
  tcase_add_test(tc, test_dev_loops);
  tcase_add_test(tc, test_dev_consts);
  tcase_add_test(tc, test_dev_pack2);
  tcase_add_test(tc, test_dev_ptx_jit);
  suite_add_tcase(s, tc);
  return tu_run_suite(s);
}
