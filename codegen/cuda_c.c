/* cuda_c.c - Kernel IR to one CUDA C translation unit for NVRTC.
 *
 *   kir_module --gc_cuda_c_print--> preamble (helpers in namespace gc)
 *                                   + one `extern "C" __global__` function per kernel
 *
 * Conventions of the generated code:
 *   params     buffer: `T* __restrict__ p_<name>` (const when readonly); i64: `long long p_<name>`
 *   variables  `v_<name>`, all declared (zeroed) at the top of the kernel
 *   shared     `__shared__ __align__(16) T s_<i>[count]` (static; kir_verify caps it at 48 KiB),
 *              or with shared_dynamic `T *const s_<i>` into the block's dynamic shared
 *              memory, 1024-byte aligned (the launch passes kir_shared_bytes)
 *   bool       `bool` in registers, `unsigned char` (0/1) in memory
 *   f16 / bf16 `__half` / `__nv_bfloat16` (cuda_fp16.h / cuda_bf16.h, included only when used)
 *   launch     ITEMS: grid-stride loop over items; BLOCKS: grid-stride loop over
 *              groups, one group per thread block, with a trailing barrier when
 *              the kernel has shared memory (the next group reuses it).
 * The runtime launches kernel k with exactly k->launch.block threads per block
 * (it is the __launch_bounds__) and any grid size.
 *
 * Semantics follow the op table: integer add/sub/mul/neg wrap (done in unsigned
 * arithmetic), integer x/0 = x%0 = 0, INT_MIN/-1 wraps, float min/max propagate
 * NaN, float->int truncates and saturates with NaN -> 0 (PTX cvt.rzi saturates;
 * NaN is tested explicitly: measured on sm_90, cvt.rzi from f64 turns NaN into
 * INT_MIN), int->int wraps, ->bool is != 0, ->f16/bf16
 * round to nearest even (one rounding: f64 and i64 convert directly).
 */
#include "codegen/codegen.h"
#include "ir/dtype.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* Device helpers shared by all kernels. Overloads on int / long long / float /
 * double keep the expression printer uniform; all live in namespace gc so no
 * kernel or parameter name can clash with them. */
static const char preamble[] =
    "namespace gc {\n"
    "#define GC_D static __device__ __forceinline__\n"
    "/* integer arithmetic wraps (two's complement) */\n"
    "GC_D int neg(int a) { return (int)(0u - (unsigned)a); }\n"
    "GC_D long long neg(long long a) { return (long long)(0ull - (unsigned long long)a); }\n"
    "GC_D int add(int a, int b) { return (int)((unsigned)a + (unsigned)b); }\n"
    "GC_D long long add(long long a, long long b) {\n"
    "  return (long long)((unsigned long long)a + (unsigned long long)b); }\n"
    "GC_D int sub(int a, int b) { return (int)((unsigned)a - (unsigned)b); }\n"
    "GC_D long long sub(long long a, long long b) {\n"
    "  return (long long)((unsigned long long)a - (unsigned long long)b); }\n"
    "GC_D int mul(int a, int b) { return (int)((unsigned)a * (unsigned)b); }\n"
    "GC_D long long mul(long long a, long long b) {\n"
    "  return (long long)((unsigned long long)a * (unsigned long long)b); }\n"
    "GC_D int abs(int a) { return a < 0 ? neg(a) : a; }\n"
    "GC_D long long abs(long long a) { return a < 0 ? neg(a) : a; }\n"
    "/* truncating division; x/0 = 0, x%0 = 0, MIN/-1 wraps */\n"
    "GC_D int div(int a, int b) { return b == 0 ? 0 : (b == -1 ? neg(a) : a / b); }\n"
    "GC_D long long div(long long a, long long b) {\n"
    "  return b == 0 ? 0 : (b == -1 ? neg(a) : a / b); }\n"
    "GC_D int rem(int a, int b) { return (b == 0 || b == -1) ? 0 : a % b; }\n"
    "GC_D long long rem(long long a, long long b) { return (b == 0 || b == -1) ? 0 : a % b; }\n"
    "GC_D float rem(float a, float b) { return fmodf(a, b); }\n"
    "GC_D double rem(double a, double b) { return fmod(a, b); }\n"
    "/* min/max: NaN when either operand is NaN */\n"
    "/* int: setp + selp, never min.s32/max.s32: ptxas 13.0 folds a tree of those over negated\n"
    "   operands into VIMNMX3 and drops a negation (docs/reliability.md, F29) */\n"
    "GC_D int min(int a, int b) {\n"
    "  int r;\n"
    "  asm(\"{ .reg .pred p; setp.lt.s32 p, %1, %2; selp.b32 %0, %1, %2, p; }\"\n"
    "      : \"=r\"(r) : \"r\"(a), \"r\"(b));\n"
    "  return r; }\n"
    "GC_D long long min(long long a, long long b) { return a < b ? a : b; }\n"
    "GC_D int max(int a, int b) {\n"
    "  int r;\n"
    "  asm(\"{ .reg .pred p; setp.gt.s32 p, %1, %2; selp.b32 %0, %1, %2, p; }\"\n"
    "      : \"=r\"(r) : \"r\"(a), \"r\"(b));\n"
    "  return r; }\n"
    "GC_D long long max(long long a, long long b) { return a > b ? a : b; }\n"
    "GC_D float min(float a, float b) { return (isnan(a) || isnan(b)) ? a + b : fminf(a, b); }\n"
    "GC_D double min(double a, double b) { return (isnan(a) || isnan(b)) ? a + b : fmin(a, b); }\n"
    "GC_D float max(float a, float b) { return (isnan(a) || isnan(b)) ? a + b : fmaxf(a, b); }\n"
    "GC_D double max(double a, double b) { return (isnan(a) || isnan(b)) ? a + b : fmax(a, b); }\n"
    "/* float -> int: truncate, saturate (cvt.rzi clamps), NaN -> 0 */\n"
    "GC_D int to_i32(float x) { return isnan(x) ? 0 : __float2int_rz(x); }\n"
    "GC_D int to_i32(double x) { return isnan(x) ? 0 : __double2int_rz(x); }\n"
    "GC_D long long to_i64(float x) { return isnan(x) ? 0 : __float2ll_rz(x); }\n"
    "GC_D long long to_i64(double x) { return isnan(x) ? 0 : __double2ll_rz(x); }\n"
    "GC_D int clampi(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }\n"
    "GC_D signed char to_i8(float x) { return (signed char)clampi(to_i32(x), -128, 127); }\n"
    "GC_D signed char to_i8(double x) { return (signed char)clampi(to_i32(x), -128, 127); }\n"
    "GC_D unsigned char to_u8(float x) { return (unsigned char)clampi(to_i32(x), 0, 255); }\n"
    "GC_D unsigned char to_u8(double x) { return (unsigned char)clampi(to_i32(x), 0, 255); }\n"
    "/* one aligned vector access of N elements of T */\n"
    "template <typename T, int N> struct __align__(sizeof(T) * N) vec { T v[N]; };\n"
    "/* KIR_TANH_APPROX */\n"
    "GC_D float tanh_approx(float a) { float r; asm(\"tanh.approx.f32 %0, %1;\" : \"=f\"(r) : \"f\"(a)); return r; }\n"
    "/* KIR_SIGMOID (the cuda backend's sigmoid is exp and a division in Kernel IR; this is for\n"
    " * kernels written by hand) */\n"
    "GC_D float sigmoid(float a) { return a < -88.0f ? 0.0f : 1.0f / (1.0f + expf(-a)); }\n"
    "/* KIR_RCP_APPROX */\n"
    "GC_D float rcp_approx(float a) { float r; asm(\"rcp.approx.ftz.f32 %0, %1;\" : \"=f\"(r) : \"f\"(a)); return r; }\n"
    "/* KIR_TF32_ROUND */\n"
    "GC_D float tf32_rna(float a) { unsigned r; asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(r) : \"f\"(a)); return __uint_as_float(r); }\n"
    "/* KIR_F8E4M3_SAT, KIR_F8E5M2_SAT (sm_89+): a converted into both bytes; the low one */\n"
    "#if __CUDA_ARCH__ >= 890\n"
    "GC_D unsigned char f8e4m3_sat(float a) { unsigned short r; asm(\"cvt.rn.satfinite.e4m3x2.f32 %0, %1, %1;\" : \"=h\"(r) : \"f\"(a)); return (unsigned char)r; }\n"
    "GC_D unsigned char f8e5m2_sat(float a) { unsigned short r; asm(\"cvt.rn.satfinite.e5m2x2.f32 %0, %1, %1;\" : \"=h\"(r) : \"f\"(a)); return (unsigned char)r; }\n"
    "#endif\n"
    "#undef GC_D\n"
    "}  // namespace gc\n";

/* Printing context for one kernel. */
typedef struct cprint {
  gc_sbuf *b;
  const kir_kernel *k;
} cprint;

/* C type of a value of dtype t in registers. */
static const char *reg_type(gc_dtype t) {
  switch (t) {
    case GRAPHC_DTYPE_F64: return "double";
    case GRAPHC_DTYPE_F32: return "float";
    case GRAPHC_DTYPE_F16: return "__half";
    case GRAPHC_DTYPE_BF16: return "__nv_bfloat16";
    case GRAPHC_DTYPE_I64: return "long long";
    case GRAPHC_DTYPE_I32: return "int";
    case GRAPHC_DTYPE_I8: return "signed char";
    case GRAPHC_DTYPE_U8: return "unsigned char";
    case GRAPHC_DTYPE_BOOL: return "bool";
    case GRAPHC_DTYPE_F8E4M3:
    case GRAPHC_DTYPE_F8E5M2:
    case GRAPHC_DTYPE_F8E4M3FNUZ:
    case GRAPHC_DTYPE_F8E5M2FNUZ: return "unsigned char";  /* the bits; see KIR_E_BITCAST */
    default: break;
  }
  GC_ASSERT(!"bad dtype");
  return "";
}

/* C type of an element of dtype t in memory (bool is a byte). */
static const char *mem_type(gc_dtype t) {
  return t == GRAPHC_DTYPE_BOOL ? "unsigned char" : reg_type(t);
}

/* ---- literals ------------------------------------------------------------------------- */

/* f16 / bf16 bits of a literal by the rounding rule of ir/dtype.h; every NaN prints as one
 * fixed pattern (0x7e00 / 0x7fc0), sign and payload dropped, as f32 and f64 NaNs do. */
static unsigned f16_bits(double v) { return isnan(v) ? 0x7e00u : gc_f64_to_f16(v); }
static unsigned bf16_bits(double v) { return isnan(v) ? 0x7fc0u : gc_f64_to_bf16(v); }

/* Print a literal exactly: hex floats, bit patterns for inf/nan/f16/bf16. */
static void print_const(gc_sbuf *b, const kir_expr *e) {
  double v = e->u.f;
  int64_t i = e->u.i;
  switch (e->type) {
    case GRAPHC_DTYPE_F32: {
      float f = (float)v;
      if (isnan(f))
        gc_sbuf_puts(b, "__int_as_float(0x7fffffff)");
      else if (isinf(f))
        gc_sbuf_puts(b, f < 0 ? "__int_as_float((int)0xff800000u)" : "__int_as_float(0x7f800000)");
      else
        gc_sbuf_printf(b, f < 0 || signbit(f) ? "(%af)" : "%af", (double)f);
      break;
    }
    case GRAPHC_DTYPE_F64:
      if (isnan(v))
        gc_sbuf_puts(b, "__longlong_as_double(0x7ff8000000000000LL)");
      else if (isinf(v))
        gc_sbuf_puts(b, v < 0 ? "__longlong_as_double((long long)0xfff0000000000000ULL)"
                              : "__longlong_as_double(0x7ff0000000000000LL)");
      else
        gc_sbuf_printf(b, signbit(v) ? "(%a)" : "%a", v);
      break;
    case GRAPHC_DTYPE_F16:
      gc_sbuf_printf(b, "__ushort_as_half((unsigned short)0x%04xu)", f16_bits(v));
      break;
    case GRAPHC_DTYPE_BF16:
      gc_sbuf_printf(b, "__ushort_as_bfloat16((unsigned short)0x%04xu)", bf16_bits(v));
      break;
    case GRAPHC_DTYPE_I64:
      if (i == INT64_MIN)
        gc_sbuf_puts(b, "(-9223372036854775807LL - 1LL)");
      else
        gc_sbuf_printf(b, i < 0 ? "(%lldLL)" : "%lldLL", (long long)i);
      break;
    case GRAPHC_DTYPE_I32:
      if (i == INT32_MIN)
        gc_sbuf_puts(b, "(-2147483647 - 1)");
      else
        gc_sbuf_printf(b, i < 0 ? "(%lld)" : "%lld", (long long)i);
      break;
    case GRAPHC_DTYPE_I8: gc_sbuf_printf(b, "((signed char)%lld)", (long long)i); break;
    case GRAPHC_DTYPE_U8: gc_sbuf_printf(b, "((unsigned char)%lld)", (long long)i); break;
    case GRAPHC_DTYPE_BOOL: gc_sbuf_puts(b, i ? "true" : "false"); break;
    default: GC_ASSERT(!"bad constant dtype");
  }
}

/* ---- expressions ------------------------------------------------------------------------- */

static void print_expr(cprint *c, const kir_expr *e);

/* Print `pre` expr `post`. */
static void wrap(cprint *c, const char *pre, const kir_expr *e, const char *post) {
  gc_sbuf_puts(c->b, pre);
  print_expr(c, e);
  gc_sbuf_puts(c->b, post);
}

/* Print `name(a, b)`. */
static void call2(cprint *c, const char *name, const kir_expr *a, const kir_expr *b) {
  gc_sbuf_printf(c->b, "%s(", name);
  print_expr(c, a);
  gc_sbuf_puts(c->b, ", ");
  print_expr(c, b);
  gc_sbuf_putc(c->b, ')');
}

/* Print `(a op b)`. */
static void infix(cprint *c, const char *op, const kir_expr *a, const kir_expr *b) {
  gc_sbuf_putc(c->b, '(');
  print_expr(c, a);
  gc_sbuf_printf(c->b, " %s ", op);
  print_expr(c, b);
  gc_sbuf_putc(c->b, ')');
}

/* Unary op; f32 and f64 use the f-suffixed / plain CUDA math functions. */
static void print_unary(cprint *c, const kir_expr *e) {
  const kir_expr *a = e->u.op.a;
  int f32 = a->type == GRAPHC_DTYPE_F32, fl = gc_dtype_is_float(a->type);
  const char *fn = NULL;
  switch (e->u.op.op) {
    case KIR_NEG: wrap(c, fl ? "(-" : "gc::neg(", a, ")"); return;
    case KIR_ABS: wrap(c, fl ? (f32 ? "fabsf(" : "fabs(") : "gc::abs(", a, ")"); return;
    case KIR_NOT: wrap(c, a->type == GRAPHC_DTYPE_BOOL ? "(!" : "(~", a, ")"); return;
    case KIR_EXP: fn = f32 ? "expf(" : "exp("; break;
    case KIR_EXP2: fn = f32 ? "exp2f(" : "exp2("; break;
    case KIR_LOG: fn = f32 ? "logf(" : "log("; break;
    case KIR_SQRT: fn = f32 ? "sqrtf(" : "sqrt("; break;
    case KIR_RSQRT: fn = f32 ? "rsqrtf(" : "rsqrt("; break;
    case KIR_TANH: fn = f32 ? "tanhf(" : "tanh("; break;
    case KIR_TANH_APPROX: fn = "gc::tanh_approx("; break;
    case KIR_RCP_APPROX: fn = "gc::rcp_approx("; break;
    case KIR_TF32_ROUND: fn = "gc::tf32_rna("; break;
    case KIR_F8E4M3_SAT: fn = "gc::f8e4m3_sat("; break;
    case KIR_F8E5M2_SAT: fn = "gc::f8e5m2_sat("; break;
    case KIR_SIGMOID: fn = "gc::sigmoid("; break;
    case KIR_ERF: fn = f32 ? "erff(" : "erf("; break;
    case KIR_SIN: fn = f32 ? "sinf(" : "sin("; break;
    case KIR_COS: fn = f32 ? "cosf(" : "cos("; break;
    case KIR_FLOOR: fn = f32 ? "floorf(" : "floor("; break;
    case KIR_CEIL: fn = f32 ? "ceilf(" : "ceil("; break;
    default: GC_ASSERT(!"not a unary kir op");
  }
  wrap(c, fn, a, ")");
}

/* Binary op: infix for float arithmetic and comparisons, gc:: helpers for
 * wrapping integer arithmetic and NaN-propagating min/max. */
static void print_binary(cprint *c, const kir_expr *e) {
  const kir_expr *a = e->u.op.a, *b = e->u.op.b;
  int fl = gc_dtype_is_float(a->type), f32 = a->type == GRAPHC_DTYPE_F32;
  int bl = a->type == GRAPHC_DTYPE_BOOL;
  switch (e->u.op.op) {
    case KIR_ADD: fl ? infix(c, "+", a, b) : call2(c, "gc::add", a, b); return;
    case KIR_SUB: fl ? infix(c, "-", a, b) : call2(c, "gc::sub", a, b); return;
    case KIR_MUL: fl ? infix(c, "*", a, b) : call2(c, "gc::mul", a, b); return;
    case KIR_DIV: fl ? infix(c, "/", a, b) : call2(c, "gc::div", a, b); return;
    case KIR_REM: call2(c, "gc::rem", a, b); return;
    case KIR_MIN: call2(c, "gc::min", a, b); return;
    case KIR_MAX: call2(c, "gc::max", a, b); return;
    case KIR_POW: call2(c, f32 ? "powf" : "pow", a, b); return;
    case KIR_AND: infix(c, bl ? "&&" : "&", a, b); return;
    case KIR_OR: infix(c, bl ? "||" : "|", a, b); return;
    case KIR_XOR: infix(c, bl ? "!=" : "^", a, b); return;
    case KIR_EQ: infix(c, "==", a, b); return;
    case KIR_NE: infix(c, "!=", a, b); return;
    case KIR_LT: infix(c, "<", a, b); return;
    case KIR_LE: infix(c, "<=", a, b); return;
    case KIR_GT: infix(c, ">", a, b); return;
    case KIR_GE: infix(c, ">=", a, b); return;
    default: GC_ASSERT(!"not a binary kir op");
  }
}

/* Is t a 16-bit float stored as __half / __nv_bfloat16? */
static int is_f16ish(gc_dtype t) { return t == GRAPHC_DTYPE_F16 || t == GRAPHC_DTYPE_BF16; }

/* Conversion from a->type to `to`; see the semantics in the file comment.
 * f16/bf16 sources first widen exactly to float. */
static void print_cast(cprint *c, gc_dtype to, const kir_expr *a) {
  gc_dtype from = a->type;
  const char *widen = from == GRAPHC_DTYPE_F16 ? "__half2float(" : "__bfloat162float(";
  int from_h = is_f16ish(from), from_f = from == GRAPHC_DTYPE_F32, from_d = from == GRAPHC_DTYPE_F64;
  int from_float = from_h || from_f || from_d;
  int from_i64 = from == GRAPHC_DTYPE_I64;
  if (from == to) {
    print_expr(c, a);
    return;
  }
  switch (to) {
    case GRAPHC_DTYPE_BOOL:
      if (from_h)
        wrap(c, from == GRAPHC_DTYPE_F16 ? "(__half2float(" : "(__bfloat162float(", a, ") != 0.0f)");
      else
        wrap(c, "(", a, from_f ? " != 0.0f)" : from_d ? " != 0.0)" : " != 0)");
      return;
    case GRAPHC_DTYPE_I64:
    case GRAPHC_DTYPE_I32:
    case GRAPHC_DTYPE_I8:
    case GRAPHC_DTYPE_U8: {
      if (!from_float) {  /* int/bool -> int: wraps */
        gc_sbuf_printf(c->b, "((%s)(", reg_type(to));
        print_expr(c, a);
        gc_sbuf_puts(c->b, "))");
        return;
      }
      const char *fn = to == GRAPHC_DTYPE_I64 ? "gc::to_i64(" : to == GRAPHC_DTYPE_I32 ? "gc::to_i32("
                       : to == GRAPHC_DTYPE_I8 ? "gc::to_i8(" : "gc::to_u8(";
      gc_sbuf_puts(c->b, fn);
      if (from_h) gc_sbuf_puts(c->b, widen);
      print_expr(c, a);
      gc_sbuf_puts(c->b, from_h ? "))" : ")");
      return;
    }
    case GRAPHC_DTYPE_F32:
    case GRAPHC_DTYPE_F64: {
      const char *ct = to == GRAPHC_DTYPE_F32 ? "((float)(" : "((double)(";
      gc_sbuf_puts(c->b, ct);
      if (from_h) gc_sbuf_puts(c->b, widen);
      print_expr(c, a);
      gc_sbuf_puts(c->b, from_h ? ")))" : "))");
      return;
    }
    case GRAPHC_DTYPE_F16:
    case GRAPHC_DTYPE_BF16: {
      int h = to == GRAPHC_DTYPE_F16;
      if (from_h)  /* the other 16-bit float: exact widening, one rounding */
        wrap(c, h ? "__float2half_rn(__bfloat162float(" : "__float2bfloat16_rn(__half2float(", a, "))");
      else if (from_f)
        wrap(c, h ? "__float2half_rn(" : "__float2bfloat16_rn(", a, ")");
      else if (from_d)
        wrap(c, h ? "__double2half(" : "__double2bfloat16(", a, ")");
      else if (from_i64)
        wrap(c, h ? "__ll2half_rn(" : "__ll2bfloat16_rn(", a, ")");
      else
        wrap(c, h ? "__int2half_rn((int)(" : "__int2bfloat16_rn((int)(", a, "))");
      return;
    }
    default: break;
  }
  GC_ASSERT(!"bad cast target");
}

/* a's bits as `to` (same size): f32/f64 <-> i32/i64 by the intrinsics, fp8 <-> u8 are
 * both unsigned char already. */
static void print_bitcast(cprint *c, gc_dtype to, const kir_expr *a) {
  switch (to) {
    case GRAPHC_DTYPE_F32: wrap(c, "__int_as_float(", a, ")"); return;
    case GRAPHC_DTYPE_I32: wrap(c, "__float_as_int(", a, ")"); return;
    case GRAPHC_DTYPE_F64: wrap(c, "__longlong_as_double(", a, ")"); return;
    case GRAPHC_DTYPE_I64: wrap(c, "__double_as_longlong(", a, ")"); return;
    default: wrap(c, "((unsigned char)(", a, "))"); return;
  }
}

/* Print an expression, fully parenthesized. */
static void print_expr(cprint *c, const kir_expr *e) {
  gc_sbuf *b = c->b;
  switch (e->kind) {
    case KIR_E_CONST: print_const(b, e); break;
    case KIR_E_VAR: gc_sbuf_printf(b, "v_%s", c->k->vars[e->u.var].name); break;
    case KIR_E_PARAM: gc_sbuf_printf(b, "p_%s", c->k->params[e->u.param].name); break;
    case KIR_E_SPECIAL:
      switch (e->u.special) {
        case KIR_SP_THREAD: gc_sbuf_puts(b, "((int)threadIdx.x)"); break;
        case KIR_SP_BLOCK_DIM: gc_sbuf_puts(b, "((int)blockDim.x)"); break;
        case KIR_SP_LANE: gc_sbuf_puts(b, "((int)threadIdx.x & 31)"); break;
        case KIR_SP_WARP: gc_sbuf_puts(b, "((int)threadIdx.x >> 5)"); break;
      }
      break;
    case KIR_E_UNARY: print_unary(c, e); break;
    case KIR_E_BINARY: print_binary(c, e); break;
    case KIR_E_SELECT:
      gc_sbuf_putc(b, '(');
      print_expr(c, e->u.op.a);
      gc_sbuf_puts(b, " ? ");
      print_expr(c, e->u.op.b);
      gc_sbuf_puts(b, " : ");
      print_expr(c, e->u.op.c);
      gc_sbuf_putc(b, ')');
      break;
    case KIR_E_CAST: print_cast(c, e->type, e->u.op.a); break;
    case KIR_E_BITCAST: print_bitcast(c, e->type, e->u.op.a); break;
    case KIR_E_LOAD:
      if (e->type == GRAPHC_DTYPE_BOOL) gc_sbuf_putc(b, '(');
      if (e->u.mem.space == KIR_GLOBAL)
        gc_sbuf_printf(b, "p_%s[", c->k->params[e->u.mem.buf].name);
      else
        gc_sbuf_printf(b, e->u.mem.space == KIR_SCRATCH ? "x_%d[" : "s_%d[", e->u.mem.buf);
      print_expr(c, e->u.mem.index);
      gc_sbuf_putc(b, ']');
      if (e->type == GRAPHC_DTYPE_BOOL) gc_sbuf_puts(b, " != 0)");
      break;
    case KIR_E_SHFL_XOR: {
      gc_dtype t = e->type;
      if (t == GRAPHC_DTYPE_BOOL || t == GRAPHC_DTYPE_I8 || t == GRAPHC_DTYPE_U8) {
        /* narrow types travel as int */
        gc_sbuf_printf(b, "((%s)(__shfl_xor_sync(0xffffffffu, (int)(", reg_type(t));
        print_expr(c, e->u.shfl.a);
        gc_sbuf_printf(b, "), %d)%s))", e->u.shfl.mask, t == GRAPHC_DTYPE_BOOL ? " != 0" : "");
      } else {
        gc_sbuf_puts(b, "__shfl_xor_sync(0xffffffffu, ");
        print_expr(c, e->u.shfl.a);
        gc_sbuf_printf(b, ", %d)", e->u.shfl.mask);
      }
      break;
    }
    case KIR_E_PACK2: {
      /* each half rounded like a cast to f16/bf16 (__float2half_rn / __float2bfloat16_rn) */
      int h = e->u.pack.dtype == GRAPHC_DTYPE_F16;
      const char *half = h ? "(unsigned)__half_as_ushort(__float2half_rn("
                           : "(unsigned)__bfloat16_as_ushort(__float2bfloat16_rn(";
      gc_sbuf_printf(b, "((int)(%s", half);
      print_expr(c, e->u.pack.lo);
      gc_sbuf_printf(b, ")) | (%s", half);
      print_expr(c, e->u.pack.hi);
      gc_sbuf_puts(b, ")) << 16)))");
      break;
    }
  }
}

/* ---- statements -------------------------------------------------------------------------- */

/* Indentation of `depth` levels (two spaces each). */
static void indent(gc_sbuf *b, int depth) {
  for (int i = 0; i < depth; i++) gc_sbuf_puts(b, "  ");
}

/* Name of buffer `buf` of space sp in the generated code. */
static void print_buf_name(cprint *c, kir_space sp, int buf) {
  if (sp == KIR_GLOBAL)
    gc_sbuf_printf(c->b, "p_%s", c->k->params[buf].name);
  else
    gc_sbuf_printf(c->b, sp == KIR_SCRATCH ? "x_%d" : "s_%d", buf);
}

/* Element dtype of buffer `buf` in space sp. */
static gc_dtype buf_dtype(const kir_kernel *k, kir_space sp, int buf) {
  return sp == KIR_GLOBAL ? k->params[buf].dtype
         : sp == KIR_SCRATCH ? k->scratch[buf].dtype : k->shared[buf].dtype;
}

/* Vector access: one aligned gc::vec<T, width> load or store. */
static void print_vec(cprint *c, const kir_stmt *s, int depth) {
  gc_sbuf *b = c->b;
  gc_dtype t = buf_dtype(c->k, s->u.vec.space, s->u.vec.buf);
  int w = s->u.vec.width, bl = t == GRAPHC_DTYPE_BOOL;
  const char *mt = mem_type(t);
  indent(b, depth);
  if (s->kind == KIR_S_LOAD_VEC) {
    gc_sbuf_printf(b, "{ const gc::vec<%s, %d> t_ = *reinterpret_cast<const gc::vec<%s, %d>*>(&", mt,
                   w, mt, w);
    print_buf_name(c, s->u.vec.space, s->u.vec.buf);
    gc_sbuf_putc(b, '[');
    print_expr(c, s->u.vec.index);
    gc_sbuf_puts(b, "]);\n");
    for (int i = 0; i < w; i++) {
      indent(b, depth + 1);
      gc_sbuf_printf(b, "v_%s = t_.v[%d]%s;\n", c->k->vars[s->u.vec.vars[i]].name, i,
                     bl ? " != 0" : "");
    }
  } else {
    gc_sbuf_printf(b, "{ gc::vec<%s, %d> t_;\n", mt, w);
    for (int i = 0; i < w; i++) {
      indent(b, depth + 1);
      gc_sbuf_printf(b, "t_.v[%d] = %s", i, bl ? "(unsigned char)(" : "");
      print_expr(c, s->u.vec.values[i]);
      gc_sbuf_puts(b, bl ? ");\n" : ";\n");
    }
    indent(b, depth + 1);
    gc_sbuf_printf(b, "*reinterpret_cast<gc::vec<%s, %d>*>(&", mt, w);
    print_buf_name(c, s->u.vec.space, s->u.vec.buf);
    gc_sbuf_putc(b, '[');
    print_expr(c, s->u.vec.index);
    gc_sbuf_puts(b, "]) = t_;\n");
  }
  indent(b, depth);
  gc_sbuf_puts(b, "}\n");
}

static void print_block(cprint *c, const kir_block *blk, int depth);

/* Name of variable v. */
static const char *vn(const cprint *c, int v) { return c->k->vars[v].name; }

/* WGMMA: the two matrix descriptors from the operands' shared addresses, then one
 * wgmma.mma_async with the accumulators read and written in place ("+f"). */
static void print_wgmma(cprint *c, const kir_stmt *s, int depth) {
  gc_sbuf *b = c->b;
  const kir_wg_opnd *ops[2] = {&s->u.wg.a, &s->u.wg.b};
  int n = s->u.wg.n, nd = n / 2, ra = s->u.wg.a_in_regs;
  gc_sbuf_puts(b, "{\n");
  for (int i = ra; i < 2; i++) {
    indent(b, depth + 1);
    gc_sbuf_printf(b, "const unsigned long long d%c_ = (unsigned long long)(((unsigned)__cvta_generic_to_shared(&",
                   i ? 'b' : 'a');
    print_buf_name(c, KIR_SHARED, ops[i]->buf);
    gc_sbuf_putc(b, '[');
    print_expr(c, ops[i]->index);
    gc_sbuf_printf(b, "]) & 0x3FFFFu) >> 4) | 0x%llxULL;\n", (unsigned long long)kir_wg_desc_bits(ops[i]));
  }
  /* operands after the accumulators: descriptor a (or 4 A registers), descriptor b, scale-d */
  int na = ra ? 4 : 1;
  indent(b, depth + 1);
  gc_sbuf_printf(b, "asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %%%d, 0;\\n\"\n", nd + na + 1);
  indent(b, depth + 1);
  int f8 = s->u.wg.kind >= KIR_MMA_E4M3;  /* 8-bit: no transpose operands (K-major only) */
  int in = KIR_MMA_IS_INT(s->u.wg.kind);  /* i32 accumulators */
  gc_sbuf_printf(b, "\"wgmma.mma_async.sync.aligned.m64n%dk%d.%s.%s.%s {", n, kir_mma_k(s->u.wg.kind),
                 in ? "s32" : "f32", kir_mma_type(s->u.wg.kind), kir_mma_type(s->u.wg.kind_b));
  for (int i = 0; i < nd; i++) gc_sbuf_printf(b, "%s%%%d", i ? ", " : "", i);
  if (ra)
    gc_sbuf_printf(b, "}, {%%%d, %%%d, %%%d, %%%d}, %%%d, p, 1, 1;\\n}\\n\"\n", nd, nd + 1, nd + 2, nd + 3, nd + 4);
  else if (in)  /* integers: no scale operands either */
    gc_sbuf_printf(b, "}, %%%d, %%%d, p;\\n}\\n\"\n", nd, nd + 1);
  else if (f8)
    gc_sbuf_printf(b, "}, %%%d, %%%d, p, 1, 1;\\n}\\n\"\n", nd, nd + 1);
  else
    gc_sbuf_printf(b, "}, %%%d, %%%d, p, 1, 1, 0, %d;\\n}\\n\"\n", nd, nd + 1, ops[1]->mn_major);
  indent(b, depth + 1);
  gc_sbuf_puts(b, ": ");
  for (int i = 0; i < nd; i++) gc_sbuf_printf(b, "%s\"+%c\"(v_%s)", i ? ", " : "", in ? 'r' : 'f', vn(c, s->u.wg.d[i]));
  gc_sbuf_puts(b, "\n");
  indent(b, depth + 1);
  if (ra) {
    /* the A registers' bits (f32 variables: __float_as_uint) */
    gc_sbuf_puts(b, ": ");
    for (int i = 0; i < 4; i++) {
      int v = s->u.wg.a_regs[i];
      gc_sbuf_printf(b, c->k->vars[v].type == GRAPHC_DTYPE_F32 ? "\"r\"(__float_as_uint(v_%s)), " : "\"r\"(v_%s), ",
                     vn(c, v));
    }
    gc_sbuf_printf(b, "\"l\"(db_), \"r\"(%d) : \"memory\");\n", !s->u.wg.overwrite);
  } else {
    gc_sbuf_printf(b, ": \"l\"(da_), \"l\"(db_), \"r\"(%d) : \"memory\");\n", !s->u.wg.overwrite);
  }
  indent(b, depth);
  gc_sbuf_puts(b, "}\n");
}

/* `const unsigned name = shared address of element index of shared array buf;` */
static void print_shared_addr(cprint *c, const char *name, int buf, const kir_expr *index) {
  gc_sbuf_printf(c->b, "const unsigned %s = (unsigned)__cvta_generic_to_shared(&", name);
  print_buf_name(c, KIR_SHARED, buf);
  gc_sbuf_putc(c->b, '[');
  print_expr(c, index);
  gc_sbuf_puts(c->b, "]); ");
}

/* Shared-memory barriers and bulk tensor copies (kir.h KIR_S_MBAR_*, KIR_S_TMA_LOAD), as the
 * LLVM printer emits them. The wait spins on try_wait; its labels are local to the braces. */
static void print_tma(cprint *c, const kir_stmt *s, int depth) {
  gc_sbuf *b = c->b;
  if (s->kind == KIR_S_TMAP_ACQUIRE) {
    gc_sbuf_printf(b, "asm volatile(\"fence.proxy.tensormap::generic.acquire.gpu [%%0], 128;\\n\" :: \"l\"(p_%s) : "
                      "\"memory\");\n",
                   c->k->params[s->u.tma.tmap].name);
    return;
  }
  gc_sbuf_puts(b, "{ ");
  if (s->kind == KIR_S_TMA_LOAD) {
    print_shared_addr(c, "s_", s->u.tma.sbuf, s->u.tma.sindex);
    print_shared_addr(c, "m_", s->u.tma.mbuf, s->u.tma.mindex);
    gc_sbuf_puts(b, "\n");
    indent(b, depth + 1);
    int r = s->u.tma.rank;
    gc_sbuf_printf(b, "asm volatile(\"cp.async.bulk.tensor.%dd.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                      " [%%0], [%%1, {", r);
    for (int i = 0; i < r; i++) gc_sbuf_printf(b, "%s%%%d", i ? ", " : "", i + 3);
    gc_sbuf_printf(b, "}], [%%2];\\n\" :: \"r\"(s_), \"l\"(p_%s), \"r\"(m_)", c->k->params[s->u.tma.tmap].name);
    for (int i = 0; i < r; i++) {
      gc_sbuf_puts(b, ", \"r\"((int)(");
      print_expr(c, s->u.tma.coord[i]);
      gc_sbuf_puts(b, "))");
    }
    gc_sbuf_puts(b, " : \"memory\"); }\n");
    return;
  }
  print_shared_addr(c, "m_", s->u.mbar.buf, s->u.mbar.index);
  switch (s->kind) {
    case KIR_S_MBAR_INIT:
      gc_sbuf_printf(b, "asm volatile(\"mbarrier.init.shared::cta.b64 [%%0], %d;\\n"
                        "fence.mbarrier_init.release.cluster;\\n\" :: \"r\"(m_) : \"memory\"); }\n",
                     s->u.mbar.count);
      break;
    case KIR_S_MBAR_EXPECT:
      gc_sbuf_printf(b, "asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%%0], %d;\\n\" :: \"r\"(m_) : "
                        "\"memory\"); }\n",
                     s->u.mbar.count);
      break;
    default:
      gc_sbuf_puts(b, "const unsigned q_ = (unsigned)(");
      print_expr(c, s->u.mbar.parity);
      gc_sbuf_puts(b, ");\n");
      indent(b, depth + 1);
      gc_sbuf_puts(b, "asm volatile(\"{\\n.reg .pred p;\\nGC_WAIT:\\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\\n"
                      "@!p bra GC_WAIT;\\n}\\n\" :: \"r\"(m_), \"r\"(q_) : \"memory\"); }\n");
      break;
  }
}

/* Tensor-core statements as inline PTX (the LLVM printer emits the same instructions). */
static void print_tensor_core(cprint *c, const kir_stmt *s, int depth) {
  gc_sbuf *b = c->b;
  indent(b, depth);
  switch (s->kind) {
    case KIR_S_CP_ASYNC:
      gc_sbuf_puts(b, "{ const bool q_ = ");
      print_expr(c, s->u.copy.pred);
      gc_sbuf_puts(b, "; const unsigned s_ = (unsigned)__cvta_generic_to_shared(&");
      print_buf_name(c, KIR_SHARED, s->u.copy.sbuf);
      gc_sbuf_putc(b, '[');
      print_expr(c, s->u.copy.sindex);
      gc_sbuf_puts(b, "]); const void *g_ = &");
      print_buf_name(c, KIR_GLOBAL, s->u.copy.gbuf);
      gc_sbuf_puts(b, "[q_ ? (");
      print_expr(c, s->u.copy.gindex);
      gc_sbuf_puts(b, ") : 0LL];\n");
      indent(b, depth + 1);
      gc_sbuf_puts(b, "asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\\n\" :: \"r\"(s_), "
                      "\"l\"(g_), \"r\"(q_ ? 16 : 0) : \"memory\"); }\n");
      break;
    case KIR_S_CP_COMMIT:
      gc_sbuf_puts(b, "asm volatile(\"cp.async.commit_group;\\n\" ::: \"memory\");\n");
      break;
    case KIR_S_CP_WAIT:
      gc_sbuf_printf(b, "asm volatile(\"cp.async.wait_group %d;\\n\" ::: \"memory\");\n", s->u.wait);
      break;
    case KIR_S_LDMATRIX: {
      const int *v = s->u.ldm.vars;
      gc_sbuf_puts(b, "{ const unsigned s_ = (unsigned)__cvta_generic_to_shared(&");
      print_buf_name(c, KIR_SHARED, s->u.ldm.buf);
      gc_sbuf_putc(b, '[');
      print_expr(c, s->u.ldm.index);
      gc_sbuf_puts(b, "]);\n");
      indent(b, depth + 1);
      gc_sbuf_printf(b,
                     "asm volatile(\"ldmatrix.sync.aligned.m8n8.x4%s.shared.b16 {%%0, %%1, %%2, %%3}, [%%4];\\n\""
                     " : \"=r\"(v_%s), \"=r\"(v_%s), \"=r\"(v_%s), \"=r\"(v_%s) : \"r\"(s_) : \"memory\"); }\n",
                     s->u.ldm.trans ? ".trans" : "", vn(c, v[0]), vn(c, v[1]), vn(c, v[2]), vn(c, v[3]));
      break;
    }
    case KIR_S_MMA: {
      const int *d = s->u.mma.d, *a = s->u.mma.a, *bf = s->u.mma.b;
      gc_sbuf_printf(b,
                     "asm volatile(\"%s {%%0, %%1, %%2, %%3}, {%%4, %%5, %%6, %%7}, {%%8, %%9}, "
                     "{%%0, %%1, %%2, %%3};\\n\"\n",
                     kir_mma_ptx(s->u.mma.kind));
      indent(b, depth + 1);
      gc_sbuf_printf(b, ": \"+f\"(v_%s), \"+f\"(v_%s), \"+f\"(v_%s), \"+f\"(v_%s)\n", vn(c, d[0]), vn(c, d[1]),
                     vn(c, d[2]), vn(c, d[3]));
      indent(b, depth + 1);
      /* fragments are .b32 registers: f32 variables (tf32 operands) pass their bits */
      int ops[6] = {a[0], a[1], a[2], a[3], bf[0], bf[1]};
      gc_sbuf_puts(b, ": ");
      for (int i = 0; i < 6; i++)
        gc_sbuf_printf(b, c->k->vars[ops[i]].type == GRAPHC_DTYPE_F32 ? "%s\"r\"(__float_as_uint(v_%s))" : "%s\"r\"(v_%s)",
                       i ? ", " : "", vn(c, ops[i]));
      gc_sbuf_puts(b, ");\n");
      break;
    }
    case KIR_S_FENCE_ASYNC:
      gc_sbuf_puts(b, "asm volatile(\"fence.proxy.async.shared::cta;\\n\" ::: \"memory\");\n");
      break;
    case KIR_S_WG_FENCE:
      gc_sbuf_puts(b, "asm volatile(\"wgmma.fence.sync.aligned;\\n\" ::: \"memory\");\n");
      break;
    case KIR_S_WG_COMMIT:
      gc_sbuf_puts(b, "asm volatile(\"wgmma.commit_group.sync.aligned;\\n\" ::: \"memory\");\n");
      break;
    case KIR_S_WG_WAIT:
      gc_sbuf_printf(b, "asm volatile(\"wgmma.wait_group.sync.aligned %d;\\n\" ::: \"memory\");\n", s->u.wait);
      break;
    case KIR_S_WGMMA: print_wgmma(c, s, depth); break;
    case KIR_S_MBAR_INIT: case KIR_S_MBAR_EXPECT: case KIR_S_MBAR_WAIT: case KIR_S_TMA_LOAD:
    case KIR_S_TMAP_ACQUIRE:
      print_tma(c, s, depth);
      break;
    default: GC_ASSERT(!"not a tensor-core statement");
  }
}

/* One statement at `depth`. */
static void print_stmt(cprint *c, const kir_stmt *s, int depth) {
  gc_sbuf *b = c->b;
  const kir_kernel *k = c->k;
  switch (s->kind) {
    case KIR_S_ASSIGN:
      indent(b, depth);
      gc_sbuf_printf(b, "v_%s = ", k->vars[s->u.assign.var].name);
      print_expr(c, s->u.assign.value);
      gc_sbuf_puts(b, ";\n");
      break;
    case KIR_S_STORE: {
      int bl = s->u.store.value->type == GRAPHC_DTYPE_BOOL;
      indent(b, depth);
      print_buf_name(c, s->u.store.space, s->u.store.buf);
      gc_sbuf_putc(b, '[');
      print_expr(c, s->u.store.index);
      gc_sbuf_puts(b, bl ? "] = (unsigned char)(" : "] = ");
      print_expr(c, s->u.store.value);
      gc_sbuf_puts(b, bl ? ");\n" : ";\n");
      break;
    }
    case KIR_S_LOAD_VEC:
    case KIR_S_STORE_VEC:
      print_vec(c, s, depth);
      break;
    case KIR_S_FOR: {
      const char *v = k->vars[s->u.loop.var].name;
      if (s->u.loop.nounroll) {
        indent(b, depth);
        gc_sbuf_puts(b, "#pragma unroll 1\n");
      }
      indent(b, depth);
      gc_sbuf_printf(b, "for (v_%s = ", v);
      print_expr(c, s->u.loop.lo);
      gc_sbuf_printf(b, "; v_%s < ", v);
      print_expr(c, s->u.loop.hi);
      gc_sbuf_printf(b, "; v_%s += ", v);
      print_expr(c, s->u.loop.step);
      gc_sbuf_puts(b, ") {\n");
      print_block(c, &s->u.loop.body, depth + 1);
      indent(b, depth);
      gc_sbuf_puts(b, "}\n");
      break;
    }
    case KIR_S_IF:
      indent(b, depth);
      gc_sbuf_puts(b, "if (");
      print_expr(c, s->u.cond.cond);
      gc_sbuf_puts(b, ") {\n");
      print_block(c, &s->u.cond.then, depth + 1);
      indent(b, depth);
      if (s->u.cond.els.head) {
        gc_sbuf_puts(b, "} else {\n");
        print_block(c, &s->u.cond.els, depth + 1);
        indent(b, depth);
      }
      gc_sbuf_puts(b, "}\n");
      break;
    case KIR_S_BARRIER:
      indent(b, depth);
      gc_sbuf_puts(b, "__syncthreads();\n");
      break;
    case KIR_S_CP_ASYNC:
    case KIR_S_CP_COMMIT:
    case KIR_S_CP_WAIT:
    case KIR_S_LDMATRIX:
    case KIR_S_MMA:
    case KIR_S_FENCE_ASYNC:
    case KIR_S_WG_FENCE:
    case KIR_S_WG_COMMIT:
    case KIR_S_WG_WAIT:
    case KIR_S_WGMMA:
    case KIR_S_MBAR_INIT:
    case KIR_S_MBAR_EXPECT:
    case KIR_S_MBAR_WAIT:
    case KIR_S_TMA_LOAD:
    case KIR_S_TMAP_ACQUIRE:
      print_tensor_core(c, s, depth);
      break;
  }
}

/* Statements of a block in order. */
static void print_block(cprint *c, const kir_block *blk, int depth) {
  for (const kir_stmt *s = blk->head; s; s = s->next) print_stmt(c, s, depth);
}

/* ---- which dtypes a module uses (to include the 16-bit float headers only when needed) --- */

/* Add the dtypes appearing in expression e to *mask (bit per dtype). */
static void expr_types(const kir_expr *e, unsigned *mask) {
  if (!e) return;
  *mask |= 1u << e->type;
  switch (e->kind) {
    case KIR_E_UNARY: case KIR_E_BINARY: case KIR_E_SELECT: case KIR_E_CAST: case KIR_E_BITCAST:
      expr_types(e->u.op.a, mask);
      if (e->kind == KIR_E_BINARY || e->kind == KIR_E_SELECT) expr_types(e->u.op.b, mask);
      if (e->kind == KIR_E_SELECT) expr_types(e->u.op.c, mask);
      break;
    case KIR_E_LOAD: expr_types(e->u.mem.index, mask); break;
    case KIR_E_SHFL_XOR: expr_types(e->u.shfl.a, mask); break;
    case KIR_E_PACK2:  /* needs the 16-bit type's header */
      *mask |= 1u << e->u.pack.dtype;
      expr_types(e->u.pack.lo, mask);
      expr_types(e->u.pack.hi, mask);
      break;
    default: break;
  }
}

/* Add the dtypes appearing in a block's statements to *mask. */
static void block_types(const kir_block *blk, unsigned *mask) {
  for (const kir_stmt *s = blk->head; s; s = s->next) {
    switch (s->kind) {
      case KIR_S_ASSIGN: expr_types(s->u.assign.value, mask); break;
      case KIR_S_STORE:
        expr_types(s->u.store.index, mask);
        expr_types(s->u.store.value, mask);
        break;
      case KIR_S_LOAD_VEC: expr_types(s->u.vec.index, mask); break;
      case KIR_S_STORE_VEC:
        expr_types(s->u.vec.index, mask);
        for (int i = 0; i < s->u.vec.width; i++) expr_types(s->u.vec.values[i], mask);
        break;
      case KIR_S_FOR:
        expr_types(s->u.loop.lo, mask);
        expr_types(s->u.loop.hi, mask);
        expr_types(s->u.loop.step, mask);
        block_types(&s->u.loop.body, mask);
        break;
      case KIR_S_IF:
        expr_types(s->u.cond.cond, mask);
        block_types(&s->u.cond.then, mask);
        block_types(&s->u.cond.els, mask);
        break;
      case KIR_S_CP_ASYNC:
        expr_types(s->u.copy.sindex, mask);
        expr_types(s->u.copy.gindex, mask);
        expr_types(s->u.copy.pred, mask);
        break;
      case KIR_S_LDMATRIX: expr_types(s->u.ldm.index, mask); break;
      case KIR_S_WGMMA:
        if (!s->u.wg.a_in_regs) expr_types(s->u.wg.a.index, mask);
        expr_types(s->u.wg.b.index, mask);
        break;
      case KIR_S_MBAR_INIT: case KIR_S_MBAR_EXPECT: expr_types(s->u.mbar.index, mask); break;
      case KIR_S_MBAR_WAIT:
        expr_types(s->u.mbar.index, mask);
        expr_types(s->u.mbar.parity, mask);
        break;
      case KIR_S_TMA_LOAD:
        expr_types(s->u.tma.sindex, mask);
        expr_types(s->u.tma.mindex, mask);
        for (int i = 0; i < s->u.tma.rank; i++) expr_types(s->u.tma.coord[i], mask);
        break;
      case KIR_S_BARRIER: case KIR_S_CP_COMMIT: case KIR_S_CP_WAIT: case KIR_S_MMA: case KIR_S_TMAP_ACQUIRE:
      case KIR_S_FENCE_ASYNC: case KIR_S_WG_FENCE: case KIR_S_WG_COMMIT: case KIR_S_WG_WAIT: break;
    }
  }
}

/* Bit mask of every dtype used by a kernel (params, shared, vars, expressions). */
static unsigned kernel_types(const kir_kernel *k) {
  unsigned mask = 0;
  for (int i = 0; i < k->n_params; i++) mask |= 1u << k->params[i].dtype;
  for (int i = 0; i < k->n_shared; i++) mask |= 1u << k->shared[i].dtype;
  for (int i = 0; i < k->n_scratch; i++) mask |= 1u << k->scratch[i].dtype;
  for (int i = 0; i < k->n_vars; i++) mask |= 1u << k->vars[i].type;
  block_types(&k->body, &mask);
  return mask;
}

/* ---- kernels and the module ------------------------------------------------------------ */

/* One kernel: signature, shared arrays, variables, the launch loop, the body. */
static void print_kernel(gc_sbuf *b, const kir_kernel *k) {
  cprint c = {b, k};
  int blocks = k->launch.kind == KIR_LAUNCH_BLOCKS;
  if (k->min_blocks)
    gc_sbuf_printf(b, "extern \"C\" __global__ void __launch_bounds__(%d, %d) %s(", k->launch.block,
                   k->min_blocks, k->name);
  else
    gc_sbuf_printf(b, "extern \"C\" __global__ void __launch_bounds__(%d) %s(", k->launch.block, k->name);
  for (int i = 0; i < k->n_params; i++) {
    const kir_param *p = &k->params[i];
    if (i) gc_sbuf_puts(b, ", ");
    if (p->kind == KIR_PARAM_I64)
      gc_sbuf_printf(b, "long long p_%s", p->name);
    else if (p->kind == KIR_PARAM_TMAP)  /* the device address of the encoded tensor map */
      gc_sbuf_printf(b, "unsigned long long p_%s", p->name);
    else
      gc_sbuf_printf(b, "%s%s* __restrict__ p_%s", p->readonly ? "const " : "", mem_type(p->dtype),
                     p->name);
  }
  gc_sbuf_puts(b, ") {\n");
  if (k->shared_dynamic && k->n_shared > 0) {
    gc_sbuf_puts(b, "  extern __shared__ __align__(1024) unsigned char gc_dsmem_[];\n"
                    "  unsigned char *const gc_ds_ = gc_dsmem_ + ((1024u - ((unsigned)__cvta_generic_to_shared(gc_dsmem_)"
                    " & 1023u)) & 1023u);\n");
    for (int i = 0; i < k->n_shared; i++)
      gc_sbuf_printf(b, "  %s *const s_%d = (%s *)(gc_ds_ + %lld);\n", mem_type(k->shared[i].dtype), i,
                     mem_type(k->shared[i].dtype), (long long)kir_shared_offset(k, i));
  }
  for (int i = 0; i < k->n_shared && !k->shared_dynamic; i++)
    gc_sbuf_printf(b, "  __shared__ __align__(16) %s s_%d[%lld];\n", mem_type(k->shared[i].dtype), i,
                   (long long)k->shared[i].count);
  for (int i = 0; i < k->n_scratch; i++)  /* per thread (local memory); GPU emitters make none */
    gc_sbuf_printf(b, "  __align__(16) %s x_%d[%lld];\n", mem_type(k->scratch[i].dtype), i,
                   (long long)k->scratch[i].count);
  for (int i = 0; i < k->n_vars; i++)  /* value-initialized: zero */
    gc_sbuf_printf(b, "  %s v_%s{};\n", reg_type(k->vars[i].type), k->vars[i].name);
  const char *item = k->vars[k->item_var].name;
  int one = k->one_pass;
  if (one)  /* one block per group (kir.h) */
    gc_sbuf_printf(b, "  v_%s = (long long)blockIdx.x;\n  if (v_%s < %lldLL) {\n", item, item,
                   (long long)k->launch.n);
  else if (blocks)
    gc_sbuf_printf(b,
                   "  for (v_%s = (long long)blockIdx.x; v_%s < %lldLL; v_%s += (long long)gridDim.x) {\n",
                   item, item, (long long)k->launch.n, item);
  else
    gc_sbuf_printf(b,
                   "  for (v_%s = (long long)blockIdx.x * blockDim.x + threadIdx.x; v_%s < %lldLL;\n"
                   "       v_%s += (long long)gridDim.x * blockDim.x) {\n",
                   item, item, (long long)k->launch.n, item);
  print_block(&c, &k->body, 2);
  if (blocks && !one && k->n_shared > 0)
    gc_sbuf_puts(b, "    __syncthreads();  /* the next group reuses shared memory */\n");
  gc_sbuf_puts(b, "  }\n}\n");
}

/* The whole module as one translation unit; verifies every kernel first. */
void gc_cuda_c_print(gc_sbuf *b, const kir_module *m) {
  unsigned mask = 0;
  for (int i = 0; i < m->n_kernels; i++) {
    kir_verify(m->kernels[i]);
    mask |= kernel_types(m->kernels[i]);
  }
  gc_sbuf_puts(b, "// generated by graphc: Kernel IR -> CUDA C (NVRTC)\n");
  if (mask & (1u << GRAPHC_DTYPE_F16)) gc_sbuf_puts(b, "#include <cuda_fp16.h>\n");
  if (mask & (1u << GRAPHC_DTYPE_BF16)) gc_sbuf_puts(b, "#include <cuda_bf16.h>\n");
  gc_sbuf_puts(b, preamble);
  for (int i = 0; i < m->n_kernels; i++) {
    gc_sbuf_putc(b, '\n');
    print_kernel(b, m->kernels[i]);
  }
}
