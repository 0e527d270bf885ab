/* llvm_hostmath.c - exp, exp2, tanh, erf and sigmoid on f32 as plain LLVM IR, for the host.
 *
 * A call to libm's expf in a loop body keeps LLVM's vectorizers off the whole loop:
 * a silu epilogue after a 1x1 convolution ran at 2.3 GB/s against 18 GB/s without it
 * (docs/performance.md, twenty-fourth session). Written as multiplies, adds, a
 * round-to-even and integer bit moves, the same functions vectorize with the rest.
 *
 *   exp(x)   n = roundeven(x log2 e), r = x - n ln2 (two-part ln2, exact products),
 *            e^r = 1 + r + r^2 P(r) on |r| <= ln2/2, times 2^n applied as 2^(n>>1)
 *            and 2^(n - (n>>1)) so that subnormal results round once; x clamped to
 *            [-104, 89] first (beyond: inf, and 0 below -103.97 by a factor 0 instead
 *            of an underflowing product: scaled_exp), NaN passed through.
 *   exp2(x)  the same with n = roundeven(x), r = (x - n) ln2.
 *   tanh(x)  |x| < 0.625: x + x^3 Q(x^2); else sign(x) (1 - 2 / (e^(2|x|) + 1)).
 *   erf(x)   |x| < 1: x A(x^2); |x| < 4: sign(x) (1 - e^(-x^2) G((|x| - 2.5) / 1.5)),
 *            G approximating erfc(x) e^(x^2); beyond: sign(x).
 *   sigmoid(x)  1 / (1 + e^-x), e^-x as exp's with -x clamped to [-87, 88] (one 2^n scale),
 *            the division an `arcp` one (a reciprocal estimate and a Newton step when
 *            vectorized); 0 for x < -88, NaN kept. Within 4 ulps above 1e-30.
 *
 * The polynomials are least-squares fits on Chebyshev nodes against 30-digit values
 * (mpmath), coefficients rounded to f32. Measured on 400k points each, against f64:
 * exp <= 1.21 ulp, tanh <= 1.33 ulp, erf <= 2.28 ulp (libm's expf is < 1 ulp, CUDA's
 * erff 2 ulp); the interpreter comparisons of every backend test hold them.
 */
#include "codegen/llvm_hostmath.h"

#include <string.h>

#include "ir/ir.h"

typedef struct hm {
  LLVMBuilderRef b;
  LLVMModuleRef mod;
  LLVMTypeRef f, i;  /* float and the integer of its width (f32 / i32) */
} hm;

static const float EXP_P[] = {0.5f, 0.166666672f, 0.041666463f, 0.00833329838f, 0.00139339024f,
                              0.000198996117f};
static const float TANH_Q[] = {-0.333333284f, 0.133327827f, -0.0538524985f, 0.0210036412f, -0.006104948f};
static const float ERF_A[] = {1.12837911f,     -0.37612626f,     0.112835974f, -0.0268543288f,
                              0.00518931216f, -0.000801885501f, 7.88249745e-05f};
static const float ERF_G[] = {0.210806355f,    -0.111521006f,    0.0561109595f,    -0.0270057246f,
                              0.0124840355f,   -0.00556733273f,  0.00242588506f,   -0.00101711776f,
                              0.000367868663f, -0.000143948593f, 9.64045175e-05f, -3.69287227e-05f};

static LLVMValueRef num(hm *h, double v) { return LLVMConstReal(h->f, v); }

/* Intrinsic `name` overloaded on the float type. */
static LLVMValueRef call(hm *h, const char *name, LLVMValueRef *args, unsigned n) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  GC_ASSERT(id != 0);
  LLVMContextRef ctx = LLVMGetModuleContext(h->mod);
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(h->mod, id, &h->f, 1);
  return LLVMBuildCall2(h->b, LLVMIntrinsicGetType(ctx, id, &h->f, 1), fn, args, n, "");
}

static LLVMValueRef call1(hm *h, const char *name, LLVMValueRef a) { return call(h, name, &a, 1); }

static LLVMValueRef call2(hm *h, const char *name, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef args[2] = {a, b};
  return call(h, name, args, 2);
}

/* a*b + c, fused where the target has an FMA (llvm.fmuladd). */
static LLVMValueRef madd(hm *h, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
  LLVMValueRef args[3] = {a, b, c};
  return call(h, "llvm.fmuladd", args, 3);
}

static LLVMValueRef fmul(hm *h, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFMul(h->b, a, b, ""); }
static LLVMValueRef fadd(hm *h, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFAdd(h->b, a, b, ""); }
static LLVMValueRef fsub(hm *h, LLVMValueRef a, LLVMValueRef b) { return LLVMBuildFSub(h->b, a, b, ""); }

/* c[0] + c[1] x + ... + c[n-1] x^(n-1). */
static LLVMValueRef horner(hm *h, const float *c, int n, LLVMValueRef x) {
  LLVMValueRef r = num(h, c[n - 1]);
  for (int k = n - 2; k >= 0; k--) r = madd(h, r, x, num(h, c[k]));
  return r;
}

/* 2^k for an integer k in [-126, 127]: the exponent field alone. */
static LLVMValueRef pow2i(hm *h, LLVMValueRef k) {
  LLVMValueRef e = LLVMBuildAdd(h->b, k, LLVMConstInt(h->i, 127, 0), "");
  return LLVMBuildBitCast(h->b, LLVMBuildShl(h->b, e, LLVMConstInt(h->i, 23, 0), ""), h->f, "");
}

/* e^r (|r| <= ln2/2 or so) times 2^n, n an integral float in [-151, 129]; 0 where `zero`
 * (an i1: the result rounds to 0), multiplying by 0 rather than by 2^n2: a product that
 * underflows to 0 takes a microcode assist on x86 (~150 cycles), and a softmax's masked
 * scores (exp(-inf - max)) made a 128 x 128 causal softmax 10x slower with it. */
static LLVMValueRef scaled_exp(hm *h, LLVMValueRef n, LLVMValueRef r, LLVMValueRef zero) {
  LLVMValueRef p = madd(h, fmul(h, r, r), horner(h, EXP_P, 6, r), fadd(h, r, num(h, 1.0)));
  LLVMValueRef ni = LLVMBuildFPToSI(h->b, n, h->i, "");
  LLVMValueRef n1 = LLVMBuildAShr(h->b, ni, LLVMConstInt(h->i, 1, 0), "");
  LLVMValueRef n2 = LLVMBuildSub(h->b, ni, n1, "");
  LLVMValueRef s2 = LLVMBuildSelect(h->b, zero, num(h, 0.0), pow2i(h, n2), "");
  return fmul(h, fmul(h, p, pow2i(h, n1)), s2);
}

/* x itself where x is NaN, else v. */
static LLVMValueRef keep_nan(hm *h, LLVMValueRef x, LLVMValueRef v) {
  return LLVMBuildSelect(h->b, LLVMBuildFCmp(h->b, LLVMRealUNO, x, x, ""), x, v, "");
}

/* x clamped to [lo, hi]; NaN becomes a bound (the caller passes NaN through). */
static LLVMValueRef clampf(hm *h, LLVMValueRef x, double lo, double hi) {
  return call2(h, "llvm.minnum", call2(h, "llvm.maxnum", x, num(h, lo)), num(h, hi));
}

/* exp's range reduction of c (clamped): *n = roundeven(c log2 e), returns r = c - n ln2 with
 * ln2 = 0.693145752 (16 bits: n * it is exact) + 1.42860677e-06. */
static LLVMValueRef exp_reduce(hm *h, LLVMValueRef c, LLVMValueRef *n) {
  *n = call1(h, "llvm.roundeven", fmul(h, c, num(h, 1.44269502f)));
  LLVMValueRef r = madd(h, *n, num(h, -0.693145752f), c);
  return madd(h, *n, num(h, -1.42860677e-06f), r);
}

static LLVMValueRef h_exp(hm *h, LLVMValueRef x) {
  LLVMValueRef n, r = exp_reduce(h, clampf(h, x, -104.0, 89.0), &n);
  /* below ln(2^-150) = -103.972084 the result rounds to 0 */
  LLVMValueRef zero = LLVMBuildFCmp(h->b, LLVMRealOLT, x, num(h, -103.972084f), "");
  return keep_nan(h, x, scaled_exp(h, n, r, zero));
}

static LLVMValueRef h_exp2(hm *h, LLVMValueRef x) {
  LLVMValueRef c = clampf(h, x, -151.0, 129.0);
  LLVMValueRef n = call1(h, "llvm.roundeven", c);
  LLVMValueRef r = fmul(h, fsub(h, c, n), num(h, 0.693147182f));
  LLVMValueRef zero = LLVMBuildFCmp(h->b, LLVMRealOLE, x, num(h, -150.0), "");  /* 2^-150: a tie, to 0 */
  return keep_nan(h, x, scaled_exp(h, n, r, zero));
}

/* 1 / (1 + e^-x). Where e^-x matters, -x lies in [-17, 88], so the exponent is clamped to
 * [-87, 88] (n in [-126, 127]): one 2^n scale, no zero or subnormal case; the reciprocal is
 * an `arcp` division of a finite sum, which LLVM vectorizes as an estimate and one Newton
 * step. Below -88 the result is 0 (the true one is under 6e-39), and NaN stays NaN. About
 * 26 instructions a vector against the 35 of the general exp and the selects around it. */
static LLVMValueRef h_sigmoid(hm *h, LLVMValueRef x) {
  LLVMValueRef nx = LLVMBuildFNeg(h->b, x, "");
  LLVMValueRef n, r = exp_reduce(h, clampf(h, nx, -87.0, 88.0), &n);
  LLVMValueRef p = madd(h, fmul(h, r, r), horner(h, EXP_P, 6, r), fadd(h, r, num(h, 1.0)));
  LLVMValueRef e = fmul(h, p, pow2i(h, LLVMBuildFPToSI(h->b, n, h->i, "")));
  LLVMValueRef y = LLVMBuildFDiv(h->b, num(h, 1.0), fadd(h, e, num(h, 1.0)), "");
  if (LLVMCanValueUseFastMathFlags(y))
    LLVMSetFastMathFlags(y, LLVMFastMathAllowReciprocal | LLVMFastMathNoInfs | LLVMFastMathAllowContract);
  y = LLVMBuildSelect(h->b, LLVMBuildFCmp(h->b, LLVMRealOGT, nx, num(h, 88.0), ""), num(h, 0.0), y, "");
  /* above 17.5, e^-x < 2^-25 and the f32 result is 1 exactly, which the reciprocal estimate's
   * Newton step need not give (AMD's vrcpps: 1 / (1 + 0) came out 0.99999994) */
  y = LLVMBuildSelect(h->b, LLVMBuildFCmp(h->b, LLVMRealOLT, nx, num(h, -17.5), ""), num(h, 1.0), y, "");
  return keep_nan(h, x, y);
}

static LLVMValueRef h_tanh(hm *h, LLVMValueRef x) {
  LLVMValueRef a = call1(h, "llvm.fabs", x), z = fmul(h, x, x);
  /* odd, |x^3 Q| < |x|: the sign is x's, -0 included (+0 from -0 * 0 * Q + -0) */
  LLVMValueRef small = call2(h, "llvm.copysign", madd(h, fmul(h, x, z), horner(h, TANH_Q, 5, z), x), x);
  LLVMValueRef e = h_exp(h, fmul(h, a, num(h, 2.0)));
  LLVMValueRef big = fsub(h, num(h, 1.0), LLVMBuildFDiv(h->b, num(h, 2.0), fadd(h, e, num(h, 1.0)), ""));
  big = call2(h, "llvm.copysign", big, x);
  return LLVMBuildSelect(h->b, LLVMBuildFCmp(h->b, LLVMRealOLT, a, num(h, 0.625), ""), small, big, "");
}

static LLVMValueRef h_erf(hm *h, LLVMValueRef x) {
  LLVMValueRef a = call1(h, "llvm.fabs", x), z = fmul(h, x, x);
  LLVMValueRef small = fmul(h, x, horner(h, ERF_A, 7, z));
  LLVMValueRef t = fmul(h, fsub(h, call2(h, "llvm.minnum", a, num(h, 4.0)), num(h, 2.5)), num(h, 0.666666687f));
  LLVMValueRef big = fsub(h, num(h, 1.0), fmul(h, h_exp(h, LLVMBuildFNeg(h->b, z, "")), horner(h, ERF_G, 12, t)));
  big = LLVMBuildSelect(h->b, LLVMBuildFCmp(h->b, LLVMRealOGE, a, num(h, 4.0), ""), num(h, 1.0), big, "");
  big = call2(h, "llvm.copysign", big, x);
  return LLVMBuildSelect(h->b, LLVMBuildFCmp(h->b, LLVMRealOLT, a, num(h, 1.0), ""), small, big, "");
}

LLVMValueRef gc_llvm_host_math_f32(LLVMBuilderRef b, LLVMModuleRef mod, kir_op op, LLVMValueRef a) {
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  hm h = {b, mod, LLVMFloatTypeInContext(ctx), LLVMInt32TypeInContext(ctx)};
  if (LLVMTypeOf(a) != h.f) return NULL;
  switch (op) {
  case KIR_EXP: return h_exp(&h, a);
  case KIR_EXP2: return h_exp2(&h, a);
  case KIR_TANH: case KIR_TANH_APPROX: return h_tanh(&h, a);
  case KIR_ERF: return h_erf(&h, a);
  case KIR_SIGMOID: return h_sigmoid(&h, a);
  default: return NULL;
  }
}
