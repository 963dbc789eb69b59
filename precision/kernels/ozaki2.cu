// Ozaki scheme II on the GPU: line statistics and shifts, int8 residues, CRT reconstruction.
//
// The INT8 GEMMs between the residue kernels and the reconstruction are cuBLAS's
// (cublasGemmStridedBatchedEx, int32 planes) or the fused GEMM (int8 residue planes). Every
// step here is exact integer arithmetic (int32/int64, or float32/float64 values that are
// integers inside the format's exact range), followed by one correctly rounded conversion to
// the target, so the results are a function of the inputs alone (see precision/gemm/ozaki.py
// and precision/gemm/ozaki_cuda.py for the spec). Built with -fmad=false: every fused
// multiply-add below is an explicit __fmaf_rn / __fma_rn, every other op an explicit _rn op.
//
// Spec of the shifts (one per row of A / column of B, "line"): over the nonzero finite entries
// x (NaN/Inf: `bad` set, entry treated as 0), e = frexp exponent of |x|, emax = max e,
// mu = ceil(|x|*2^(8-e)) in [128, 256], d = 2(e - emax) + 24,
// nfix = sum (d >= 0 ? mu^2 << d : ceil(mu^2 / 2^-d)), and
// s = min(floor((Q2 + 40 - clog2(nfix)) / 2), 62) - emax (0 for an all-zero line), with
// clog2(n) = bit length of n - 1. Scaled integers y = rint(x*2^s), |y| <= 2^62.

#include <cstdint>

// The element type of A and B as the kernels read them: double, or float when built with
// -DOZ_IN=float (ozaki_cuda.py builds both modules and picks one by the inputs' dtype). Every
// entry is converted to double in registers as it is read (exact), so both modules compute the
// same values from a float32 matrix and from its float64 copy; buffers other than A and B
// (statistics, residues, planes, output) do not depend on it.
#ifndef OZ_IN
#define OZ_IN double
#endif

// Per-modulus constants of the residue steps, set by the host (ozaki_cuda.py) before a call:
// m, fl32(1/m), -m (int32), c[p-1] = the symmetric residue of 2^(14p) mod m (p = 1..4, as
// float), c16m = (symmetric residue of 2^16 mod m) - 65536 (int32 reader). Moduli are odd in
// (128, 255] or exactly 256 (checked by the host).
struct ResConst {
  float m, inv_m;
  int neg_m;
  float c[4];
  int c16m;
};

#define OZ_MAX_MODULI 20
#define OZ_MAX_LIMBS 5
extern "C" {
__constant__ ResConst c_rc[OZ_MAX_MODULI];
// CRT weights w_l in 32-bit limbs (c_W[l * NL + t]), the limbs of M and fl64(1/M).
__constant__ unsigned int c_W[OZ_MAX_MODULI * OZ_MAX_LIMBS];
// The same weights in 40-bit parts as doubles (c_Wd[l * 4 + k] = bits 40k .. 40k + 39 of w_l,
// exact), and how many parts w_l < M needs (ceil(bit length of M / 40)): the fp64 path.
__constant__ double c_Wd[OZ_MAX_MODULI * 4];
__constant__ int c_nparts;
__constant__ unsigned int c_Ml[OZ_MAX_LIMBS];
__constant__ double c_invM;
}

namespace {

#include "ozaki_residue.cuh"         // kMagic, kMagicBits, residue_low_byte
constexpr int kSentinelE = -100000;  // "no entry yet" for the column emax atomics

// frexp exponent e and mu = ceil(|x| * 2^(8-e)) of a finite nonzero |x| given as its bits:
// |x| = f * 2^e, f in [0.5, 1); mu = ceil(256 f) in [128, 256]. Subnormals are normalised.
__device__ __forceinline__ int exp_mu(unsigned long long ab, int* mu) {
  int be = (int)(ab >> 52);
  unsigned long long mant = ab & 0xFFFFFFFFFFFFFull;
  int e;
  if (be == 0) {
    int bl = 64 - __clzll(mant);  // value = mant * 2^-1074
    e = bl - 1074;
    mant <<= (53 - bl);
  } else {
    e = be - 1022;  // value = (mant | 2^52) * 2^(be - 1075)
    mant |= 1ull << 52;
  }
  // f = mant / 2^53 with mant in [2^52, 2^53): 256 f = mant / 2^45.
  *mu = (int)((mant + (1ull << 45) - 1) >> 45);
  return e;
}

// frexp exponent only (same rules as exp_mu).
__device__ __forceinline__ int exp_of(unsigned long long ab) {
  int be = (int)(ab >> 52);
  if (be == 0) return 64 - __clzll(ab & 0xFFFFFFFFFFFFFull) - 1074;
  return be - 1022;
}

// One nfix term: d = 2(e - emax) + 24 <= 24; mu^2 <= 2^16, so the term is <= 2^40.
__device__ __forceinline__ unsigned long long nfix_term(int e, int mu, int emax) {
  int d = 2 * (e - emax) + 24;
  unsigned long long mu2 = (unsigned long long)(mu * mu);
  if (d >= 0) return mu2 << d;
  int k = -d;
  if (k >= 17) return 1ull;  // 2^14 <= mu^2 <= 2^16 < 2^k: ceil = 1
  return (mu2 + (1ull << k) - 1ull) >> k;
}

// nfix_term of a finite nonzero |x| (bits ab) with fewer integer instructions, for lines with
// emax >= -1003 (p2 = 2^(20 - emax) normal): for normal x with e - emax >= -20, xs = |x| p2 is
// exact and normal, in [2^(e-emax+19), 2^(e-emax+20)); rounding its significand up to 8 bits
// (bits + 2^45 - 1, low 45 bits cleared; a carry into the exponent is mu = 256) gives
// mu 2^(e-emax+12), whose square mu^2 2^d (d = 2(e-emax) + 24 >= -16) is exact and normal;
// the round-up conversion to an integer is the term. e - emax < -20 means d <= -18: term 1.
// Subnormal x: nfix_term.
__device__ __forceinline__ unsigned long long nfix_term_fast(unsigned long long ab, int emax,
                                                             double p2) {
  int be = (int)(ab >> 52);
  if (be == 0) {
    int mu;
    int e = exp_mu(ab, &mu);
    return nfix_term(e, mu, emax);
  }
  if (be - 1022 - emax < -20) return 1ull;
  unsigned long long xb =
      (unsigned long long)__double_as_longlong(__dmul_rn(__longlong_as_double((long long)ab), p2));
  double x8 = __longlong_as_double((long long)((xb + 0x1FFFFFFFFFFFull) & ~0x1FFFFFFFFFFFull));
  return __double2ull_ru(__dmul_rn(x8, x8));
}

// The line's shift s (spec above). nfix >= 1 for a nonzero line (every term is >= 1).
__device__ __forceinline__ long long line_shift(int count, int emax, unsigned long long nfix,
                                                int q2) {
  if (count == 0) return 0;
  int cl = 64 - __clzll(nfix - 1ull);  // bit length of nfix - 1 (0 for nfix = 1)
  long long v = (long long)q2 + 40 - cl;
  long long h = v >= 0 ? v / 2 : -((-v + 1) / 2);  // floor(v / 2), also for v < 0
  if (h > 62) h = 62;
  return h - emax;
}

__device__ __forceinline__ void finite_bits(double x, unsigned long long* ab, int* bad) {
  unsigned long long b = (unsigned long long)__double_as_longlong(x) & 0x7FFFFFFFFFFFFFFFull;
  if (b >= 0x7FF0000000000000ull) {  // NaN or Inf: flagged, counted as 0
    *bad = 1;
    b = 0;
  }
  *ab = b;
}

// The nfix term of any entry of a line with largest exponent emax: 0 for zero and NaN/Inf
// entries, nfix_term_fast where it applies (emax >= -1003, uniform per line), else nfix_term.
struct NfixTerm {
  int emax;
  bool fast;
  double p2;  // 2^(20 - emax) on the fast path
  __device__ __forceinline__ explicit NfixTerm(int em)
      : emax(em),
        fast(em >= -1003),
        p2(em >= -1003 ? __hiloint2double((20 - em + 1023) << 20, 0) : 0.0) {}
  __device__ __forceinline__ unsigned long long operator()(double x) const {
    unsigned long long ab;
    int dummy = 0;
    finite_bits(x, &ab, &dummy);
    if (ab == 0) return 0ull;
    if (fast) return nfix_term_fast(ab, emax, p2);
    int mu;
    int e = exp_mu(ab, &mu);
    return nfix_term(e, mu, emax);
  }
};

// Pass 1 of the line statistics for one entry x: NaN/Inf sets bad; a nonzero finite x updates
// the running emax (max), exponent sum and count.
__device__ __forceinline__ void pass1_entry(double x, int& em, long long& es, int& cnt, int& bad) {
  unsigned long long ab;
  finite_bits(x, &ab, &bad);
  if (ab != 0) {
    int e = exp_of(ab);
    em = max(em, e);
    es += e;
    cnt += 1;
  }
}

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
  return v;
}

__device__ __forceinline__ int warp_max(int v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xFFFFFFFFu, v, o));
  return v;
}

#include "ozaki_round.cuh"

// A line's scaling: v = x * 2^s exactly (0 for NaN/Inf); the scaled integer is y = rint(v),
// |y| <= 2^62 by the choice of s, taken apart by digits(). One multiplication by p2 = 2^s
// for s in [-1022, 1023] (x * p2 is exact unless it is subnormal, and then it is below 1/2
// before and after its rounding, so y = 0 either way), scalbn otherwise (exact or, below 1/2,
// likewise y = 0).
struct LineScale {
  int s;
  bool fast;
  double p2;
  __device__ __forceinline__ explicit LineScale(long long sh)
      : s((int)sh),
        fast(sh >= -1022 && sh <= 1023),
        p2(fast ? __hiloint2double(((int)sh + 1023) << 20, 0) : 0.0) {}
  __device__ __forceinline__ double operator()(double x) const {
    if (!isfinite(x)) return 0.0;
    return fast ? __dmul_rn(x, p2) : scalbn(x, s);
  }
};

// 1.5 * 2^52: for |u| <= 2^51, R = RN(u + kM52) is rint(u) + kM52 exactly, the low word of
// R's bits is rint(u) (two's complement) and R - kM52 is rint(u) as a double.
constexpr double kM52 = 6755399441055744.0;
__device__ __forceinline__ double rint_magic(double R, int* r) {
  *r = __double2loint(R);
  return __dsub_rn(R, kM52);
}

// Signed base-2^14 digits of y = rint(v) for an exactly scaled value v (|v| <= 2^62, the
// output of LineScale): y = sum_{p<4} d_p 2^(14p) + d_4 2^56 with |d_p| <= 2^13 for p < 4 and
// |d_4| <= 2^62/2^56 + 1 = 65. Computed in fp64, every step exact: H = rint(v 2^-42) (FMA
// with the magic constant: one rounding of the exact v 2^-42 + kM52), L = v - H 2^42 (an FMA
// whose exact result, |L| <= 2^41 and a multiple of v's ulp, is representable), likewise
// M = rint(L 2^-28), L2 = L - M 2^28, N = rint(L2 2^-14), L3 = L2 - N 2^14, d_0 = rint(L3),
// then d_4 = rint(H 2^-14), d_3 = H - d_4 2^14 (integers). rint(L3) is the units digit of
// rint(v) also for a tie (v - L3 is a multiple of 2^14, so the parities agree). No int64
// shifts and no conversion instruction: the integers are the low words of the magic sums.
// Returned as floats: f[0] = magic + d_0 (exact: its bits are 0x4B400000 + d_0), f[p] = d_p.
__device__ __forceinline__ void digits(double v, float (&f)[5]) {
  int h, d4, d2, d1, d0;
  double H = rint_magic(__fma_rn(v, 0x1p-42, kM52), &h);
  double L = __fma_rn(-H, 0x1p42, v);
  (void)rint_magic(__fma_rn(H, 0x1p-14, kM52), &d4);
  double M = rint_magic(__fma_rn(L, 0x1p-28, kM52), &d2);
  double L2 = __fma_rn(-M, 0x1p28, L);
  double N = rint_magic(__fma_rn(L2, 0x1p-14, kM52), &d1);
  double L3 = __fma_rn(-N, 0x1p14, L2);
  d0 = __double2loint(__dadd_rn(L3, kM52));
  int d3 = h - (d4 << 14);
  f[0] = __int_as_float(kMagicBits + d0);
  f[1] = __fsub_rn(__int_as_float(kMagicBits + d1), kMagic);
  f[2] = __fsub_rn(__int_as_float(kMagicBits + d2), kMagic);
  f[3] = __fsub_rn(__int_as_float(kMagicBits + d3), kMagic);
  f[4] = __fsub_rn(__int_as_float(kMagicBits + d4), kMagic);
}

// An int whose low byte is r (two's complement), r = the symmetric residue of y (digits f)
// modulo m_l. m odd, 128 < m <= 255: tb = magic + t, t = d_0 + sum_{p>=1} d_p c_p == y (mod m);
// every partial |t| <= 2^13 + 3*2^13*127 + 65*127 < 2^22, so each FMA result is an integer in
// [2^23, 2^24): exact. qm = magic + q with q = rint(t * fl(1/m)) (one rounding of the exact
// product, through the magic add): |fl(1/m) - 1/m| <= 2^-32 (half an ulp of a number in
// [2^-8, 2^-7)), so the product is within 2^22 * 2^-32 = 2^-10 of t/m, while t/m (m odd) is at
// least 1/(2m) >= 2^-9 away from every half-integer: q = rint(t/m) exactly, and r = t - q*m
// lies in [-(m-1)/2, (m-1)/2], the symmetric range. In integers, with K = 0x4B400000 the bits of
// magic: bits(tb) - m bits(qm) = r + K (1 - m), and K (1 - m) has 22 zero low bits, so one IMAD
// gives r's low byte. m = 256: r = the low byte of y, read as signed (its symmetric range is
// [-128, 127]), i.e. the low byte of f[0]'s bits.
__device__ __forceinline__ int residue_bits(const float (&f)[5], const ResConst& c, float inv_m,
                                            int neg_m) {
  float tb = __fmaf_rn(f[1], c.c[0], f[0]);
  tb = __fmaf_rn(f[2], c.c[1], tb);
  tb = __fmaf_rn(f[3], c.c[2], tb);
  tb = __fmaf_rn(f[4], c.c[3], tb);
  float qm = __fmaf_rn(__fsub_rn(tb, kMagic), inv_m, kMagic);
  return __float_as_int(qm) * neg_m + __float_as_int(tb);
}

// Keeps a constant in a register once loaded: without it ptxas reloads fl(1/m) and m from the
// constant bank (LDC, a slow memory-pipe instruction) for every value that uses them, because
// an FFMA with an immediate operand cannot also take a constant-bank one.
#ifdef __CUDA_ARCH__
#define OZ_PIN(x) asm("" : "+f"(x))
#else
#define OZ_PIN(x) (void)0
#endif

// The low bytes of four words as one word (byte v from word v): the int8 residues.
__device__ __forceinline__ unsigned pack4(int r0, int r1, int r2, int r3) {
  unsigned lo = __byte_perm((unsigned)r0, (unsigned)r1, 0x0040);
  unsigned hi = __byte_perm((unsigned)r2, (unsigned)r3, 0x0040);
  return __byte_perm(lo, hi, 0x5410);
}

// Residues of four consecutive values for all L moduli: one 32-bit store per modulus at
// out + l * plane (bytes; out and plane 4-byte aligned).
__device__ __forceinline__ void emit_residues(const double (&y)[4], int L, int8_t* out,
                                              size_t plane) {
  float f[4][5];
#pragma unroll
  for (int v = 0; v < 4; ++v) digits(y[v], f[v]);
  // Unrolled over the largest modulus count: every c_rc[l] is then a constant-bank operand of
  // the instructions that use it (a runtime index costs one LDC per constant and modulus).
#pragma unroll
  for (int l = 0; l < OZ_MAX_MODULI; ++l) {
    if (l >= L) break;
    const ResConst& c = c_rc[l];
    unsigned w;
    if (c.m == 256.0f) {  // the low bytes of y (one uniform branch per modulus)
      w = pack4(__float_as_int(f[0][0]), __float_as_int(f[1][0]), __float_as_int(f[2][0]),
                __float_as_int(f[3][0]));
    } else {
      float inv_m = c.inv_m;
      int neg_m = c.neg_m;
      OZ_PIN(inv_m);
      w = pack4(residue_bits(f[0], c, inv_m, neg_m), residue_bits(f[1], c, inv_m, neg_m),
                residue_bits(f[2], c, inv_m, neg_m), residue_bits(f[3], c, inv_m, neg_m));
    }
    *reinterpret_cast<unsigned*>(out + (size_t)l * plane) = w;
  }
}

// Four consecutive entries of a row (16-byte aligned), as doubles: two double2 loads, or one
// float4 load converted (exactly) in registers.
__device__ __forceinline__ void load_quad(const double* p, double (&x)[4]) {
  double2 lo = __ldg(reinterpret_cast<const double2*>(p));
  double2 hi = __ldg(reinterpret_cast<const double2*>(p + 2));
  x[0] = lo.x;
  x[1] = lo.y;
  x[2] = hi.x;
  x[3] = hi.y;
}
__device__ __forceinline__ void load_quad(const float* p, double (&x)[4]) {
  float4 f = __ldg(reinterpret_cast<const float4*>(p));
  x[0] = (double)f.x;
  x[1] = (double)f.y;
  x[2] = (double)f.z;
  x[3] = (double)f.w;
}

// Block-wide reduction of a line's first-pass statistics (every thread of the block calls it;
// blockDim.x a multiple of 32): emax = max, esum and count = sums, bad = or; every thread gets
// the totals, emax = 0 for a line without a nonzero finite entry.
__device__ __forceinline__ void block_reduce_pass1(int& em, long long& es, int& cnt, int& bad) {
  __shared__ int s_e[32], s_c[32], s_b[32];
  __shared__ long long s_s[32];
  int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
  em = warp_max(em);
  es = warp_sum(es);
  cnt = warp_sum(cnt);
  bad = __any_sync(0xFFFFFFFFu, bad) ? 1 : 0;
  if (lane == 0) {
    s_e[wid] = em;
    s_s[wid] = es;
    s_c[wid] = cnt;
    s_b[wid] = bad;
  }
  __syncthreads();
  em = kSentinelE;
  cnt = 0;
  es = 0;
  bad = 0;
  for (int w = 0; w < nw; ++w) {
    em = max(em, s_e[w]);
    es += s_s[w];
    cnt += s_c[w];
    bad |= s_b[w];
  }
  if (cnt == 0) em = 0;
}

// Block-wide sum of v (exact in uint64), valid in thread 0.
__device__ __forceinline__ unsigned long long block_sum_u64(unsigned long long v) {
  __shared__ unsigned long long s_n[32];
  int lane = threadIdx.x & 31, wid = threadIdx.x >> 5, nw = blockDim.x >> 5;
  v = warp_sum(v);
  if (lane == 0) s_n[wid] = v;
  __syncthreads();
  if (threadIdx.x != 0) return 0;
  v = 0;
  for (int w = 0; w < nw; ++w) v += s_n[w];
  return v;
}

}  // namespace

// ---------------------------------------------------------------------------- line stats
// Rows of a row-major (rows x cols) OZ_IN matrix, one block (blockDim.x = 256) per row.
// Pass 1: emax, esum, count, bad; block reduction; pass 2 (the row again, from L1/L2): nfix.
// Writes emax (0 for an all-zero row), esum, count, nfix, bad and, when has_q2, the shift.
extern "C" __global__ void oz2_stats_rows(const OZ_IN* __restrict__ X, int rows, int cols, int q2,
                                          int has_q2, int* __restrict__ emax_out,
                                          long long* __restrict__ esum_out,
                                          int* __restrict__ count_out,
                                          unsigned long long* __restrict__ nfix_out,
                                          int* __restrict__ bad_out,
                                          long long* __restrict__ shift_out) {
  int i = blockIdx.x;
  if (i >= rows) return;
  const OZ_IN* row = X + (size_t)i * cols;
  int em = kSentinelE, cnt = 0, bad = 0;
  long long es = 0;
  for (int k = threadIdx.x; k < cols; k += blockDim.x) {
    pass1_entry((double)row[k], em, es, cnt, bad);
  }
  block_reduce_pass1(em, es, cnt, bad);
  unsigned long long nf = 0;
  if (cnt > 0) {
    NfixTerm term(em);
    for (int k = threadIdx.x; k < cols; k += blockDim.x) nf += term((double)row[k]);
  }
  nf = block_sum_u64(nf);
  if (threadIdx.x == 0) {
    emax_out[i] = em;
    esum_out[i] = es;
    count_out[i] = cnt;
    nfix_out[i] = nf;
    bad_out[i] = bad;
    if (has_q2) shift_out[i] = line_shift(cnt, em, nf, q2);
  }
}

// Start values of the column statistics, one launch for all six arrays: emax = kSentinelE
// (-100000, "no entry yet"), esum = count = nfix = bad = shift = 0.
extern "C" __global__ void oz2_stats_cols_init(
    int n, int* __restrict__ emax, unsigned long long* __restrict__ esum, int* __restrict__ count,
    unsigned long long* __restrict__ nfix, int* __restrict__ bad, long long* __restrict__ shift) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n) return;
  emax[j] = kSentinelE;
  esum[j] = 0ull;
  count[j] = 0;
  nfix[j] = 0ull;
  bad[j] = 0;
  shift[j] = 0;
}

// Columns of a row-major (rows x cols) OZ_IN matrix, pass 1: grid (cols/256, row chunks),
// one thread per column and chunk; partial results combined with atomics into emax, esum,
// count and bad (started by oz2_stats_cols_init).
extern "C" __global__ void oz2_stats_cols_max(const OZ_IN* __restrict__ X, int rows, int cols,
                                              int rows_per_chunk, int* __restrict__ emax,
                                              unsigned long long* __restrict__ esum,
                                              int* __restrict__ count, int* __restrict__ bad) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= cols) return;
  int r0 = blockIdx.y * rows_per_chunk;
  int r1 = min(rows, r0 + rows_per_chunk);
  int em = kSentinelE, cnt = 0, b = 0;
  long long es = 0;
  for (int r = r0; r < r1; ++r) {
    pass1_entry((double)X[(size_t)r * cols + j], em, es, cnt, b);
  }
  if (cnt > 0) {
    atomicMax(emax + j, em);
    atomicAdd(esum + j, (unsigned long long)es);
    atomicAdd(count + j, cnt);
  }
  if (b) atomicOr(bad + j, 1);
}

// Columns, pass 2 (after pass 1 completed): nfix partial sums, atomically added (zeroed).
extern "C" __global__ void oz2_stats_cols_nfix(const OZ_IN* __restrict__ X, int rows, int cols,
                                               int rows_per_chunk, const int* __restrict__ emax,
                                               unsigned long long* __restrict__ nfix) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= cols) return;
  int r0 = blockIdx.y * rows_per_chunk;
  int r1 = min(rows, r0 + rows_per_chunk);
  NfixTerm term(emax[j]);
  unsigned long long nf = 0;
  for (int r = r0; r < r1; ++r) nf += term((double)X[(size_t)r * cols + j]);
  if (nf != 0) atomicAdd(nfix + j, nf);
}

// Per line: emax := 0 for an all-zero line (the column sentinel), then (when has_q2) the shift.
extern "C" __global__ void oz2_shifts(int n, int* __restrict__ emax, const int* __restrict__ count,
                                      const unsigned long long* __restrict__ nfix, int q2,
                                      int has_q2, long long* __restrict__ shift) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n) return;
  int c = count[j];
  int em = c == 0 ? 0 : emax[j];
  emax[j] = em;
  if (has_q2) shift[j] = line_shift(c, em, nfix[j], q2);
}

// terms="auto" without a host copy of the statistics (ozaki.auto_terms): per line with a
// nonzero entry and no NaN/Inf (a line with one gives non-finite outputs whatever the count),
// the smallest budget Q2 that keeps its mean-exponent entry p bits,
// need = 2 min(62, p + spread) + clog2(nfix) - 40 with spread = emax - floor(esum / count),
// maxed atomically into *need (the host initialises it to INT_MIN = "no such line" and reads
// the one int back). One thread per line; esum is read as int64 (the column kernels sum it
// in uint64, two's complement, the same bits).
extern "C" __global__ void oz2_auto_need(int n, const int* __restrict__ emax,
                                         const long long* __restrict__ esum,
                                         const int* __restrict__ count,
                                         const unsigned long long* __restrict__ nfix,
                                         const int* __restrict__ bad, int p,
                                         int* __restrict__ need) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= n || count[j] <= 0 || bad[j]) return;
  long long c = count[j], s = esum[j];
  long long mean = s >= 0 ? s / c : -((-s + c - 1) / c);  // floor(s / c)
  long long t = (long long)p + (emax[j] - mean);
  if (t > 62) t = 62;
  unsigned long long nf = nfix[j];
  int cl = nf > 1ull ? 64 - __clzll(nf - 1ull) : 0;  // clog2(nfix) (0 for nfix <= 1)
  atomicMax(need, (int)(2 * t + cl - 40));
}

// ------------------------------------------------------------------------------ residues
// A (M x K row-major OZ_IN) -> res[l][i][k] (int8, Mp >= M rows of Kp >= K bytes, Kp % 4 ==
// 0, zero padding): y = rint(A[i,k] * 2^shift[i]) (0 for NaN/Inf), residue symmetric.
// 1-D grid over Mp * Kp/4 quads, each thread four consecutive k, one 32-bit store per modulus.
extern "C" __global__ void oz2_residues_rows(const OZ_IN* __restrict__ A, int M, int K, int Mp,
                                             int Kp, const long long* __restrict__ shift, int L,
                                             int8_t* __restrict__ res) {
  long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  int quads = Kp >> 2;
  if (idx >= (long long)Mp * quads) return;
  int i = (int)(idx / quads);
  int k = 4 * (int)(idx - (long long)i * quads);
  double y[4] = {0.0, 0.0, 0.0, 0.0};
  if (i < M) {
    LineScale scale(shift[i]);
    const OZ_IN* row = A + (size_t)i * K;
#pragma unroll
    for (int v = 0; v < 4; ++v)
      if (k + v < K) y[v] = scale((double)row[k + v]);
  }
  emit_residues(y, L, res + (size_t)i * Kp + k, (size_t)Mp * Kp);
}

// Statistics, shift and residues of A's rows in one pass over A (a fixed Q2): one block per
// row i < Mp (blockDim.x = OZ_ROWS_T), the row staged in dynamic shared memory (Kp doubles,
// Kp % 4 == 0, zeros beyond K). The same per-entry rules and reductions as oz2_stats_rows
// (pass 1 while loading: emax, esum, count, bad; pass 2 from shared memory: nfix relative to
// emax), the shift by line_shift, then the residues exactly as oz2_residues_rows writes them;
// rows i >= M are the zero padding (zero residues, no statistics written). A is read from DRAM
// once, instead of twice (statistics) plus once (residues).
// 384 threads, <= 56 registers: three blocks (rows) per SM for Kp <= 9600 (shared memory).
#define OZ_ROWS_T 384
#define OZ_ROWS_MAX_KP 24576  // 192 KiB of shared memory (ozaki_cuda.ROWS_FUSED_MAX_KP)
extern "C" __global__ void __launch_bounds__(OZ_ROWS_T, 3)
    oz2_rows_fused(const OZ_IN* __restrict__ A, int M, int K, int Mp, int Kp, int q2,
                   int* __restrict__ emax_out, long long* __restrict__ esum_out,
                   int* __restrict__ count_out, unsigned long long* __restrict__ nfix_out,
                   int* __restrict__ bad_out, long long* __restrict__ shift_out, int L,
                   int8_t* __restrict__ res) {
#ifdef OZ_HOST_SHIM
  static double2 s_row2[OZ_ROWS_MAX_KP / 2];  // host replay (ozaki_cuda_check): one block at once
#else
  extern __shared__ double2 s_row2[];  // the row: s_row2[2q], s_row2[2q + 1] = quad q
#endif
  __shared__ long long s_shift;
  int i = blockIdx.x;
  int T = blockDim.x;
  int quads = Kp >> 2;
  bool vec = (K & 3) == 0;  // rows start at a multiple of 4 entries: aligned quad loads
  const OZ_IN* row = A + (size_t)i * K;
  int em = kSentinelE, cnt = 0, bad = 0;
  long long es = 0;
  for (int q0 = threadIdx.x; q0 < quads; q0 += 4 * T) {
    double x[4][4];  // four quads in flight per thread: all loads issued before any use
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      int k = 4 * (q0 + j * T);
#pragma unroll
      for (int v = 0; v < 4; ++v) x[j][v] = 0.0;
      if (i >= M || k >= K) continue;
      if (vec) {
        load_quad(row + k, x[j]);
      } else {
#pragma unroll
        for (int v = 0; v < 4; ++v)
          if (k + v < K) x[j][v] = (double)row[k + v];
      }
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      int q = q0 + j * T;
      if (q >= quads) break;
#pragma unroll
      for (int v = 0; v < 4; ++v) {
        pass1_entry(x[j][v], em, es, cnt, bad);
      }
      s_row2[2 * q] = make_double2(x[j][0], x[j][1]);
      s_row2[2 * q + 1] = make_double2(x[j][2], x[j][3]);
    }
  }
  block_reduce_pass1(em, es, cnt, bad);
  unsigned long long nf = 0;
  if (cnt > 0) {
    NfixTerm term(em);  // its fast/slow branch is uniform per block
    for (int q = threadIdx.x; q < quads; q += T) {
      double2 lo = s_row2[2 * q], hi = s_row2[2 * q + 1];
      nf += term(lo.x) + term(lo.y) + term(hi.x) + term(hi.y);
    }
  }
  nf = block_sum_u64(nf);
  if (threadIdx.x == 0) {
    long long sh = line_shift(cnt, em, nf, q2);
    s_shift = sh;
    if (i < M) {
      emax_out[i] = em;
      esum_out[i] = es;
      count_out[i] = cnt;
      nfix_out[i] = nf;
      bad_out[i] = bad;
      shift_out[i] = sh;
    }
  }
  __syncthreads();
  LineScale scale(s_shift);
  size_t plane = (size_t)Mp * Kp;
  for (int q = threadIdx.x; q < quads; q += T) {
    double2 lo = s_row2[2 * q], hi = s_row2[2 * q + 1];
    double y[4] = {scale(lo.x), scale(lo.y), scale(hi.x), scale(hi.y)};  // 0: pad, NaN, Inf
    emit_residues(y, L, res + (size_t)i * Kp + 4 * q, plane);
  }
}

// Columns c0 .. c0+nb-1 of B (K x N row-major OZ_IN) -> res[l][j][k] (int8, B^T: nbp >= nb
// rows of Kp bytes, zero padding), through a shared tile of 128 (k) x 32 (j) scaled values,
// stored as tile[j][k % 4][k / 4] with a row stride of 129 words (conflict-free both ways).
// Block 256 threads; grid (ceil(nbp/32), ceil(Kp/128)).
#define OZ_TK 128
#define OZ_TJ 32
#define OZ_TROW (OZ_TK + 1)
extern "C" __global__ void oz2_residues_cols(const OZ_IN* __restrict__ B, int K, int N, int c0,
                                             int nb, int Kp, int nbp,
                                             const long long* __restrict__ shift, int L,
                                             int8_t* __restrict__ res) {
  __shared__ double tile[OZ_TJ * OZ_TROW];
  int k0 = blockIdx.y * OZ_TK, j0 = blockIdx.x * OZ_TJ;
  int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
  {
    int jl = j0 + lane;
    bool colok = jl < nb;
    LineScale scale(colok ? shift[c0 + jl] : 0);
    for (int kk = wid; kk < OZ_TK; kk += 8) {
      int k = k0 + kk;
      double y = 0.0;
      if (colok && k < K) y = scale((double)B[(size_t)k * N + c0 + jl]);
      tile[lane * OZ_TROW + (kk & 3) * 32 + (kk >> 2)] = y;
    }
  }
  __syncthreads();
  int k = k0 + 4 * lane;
  if (k >= Kp) return;
  size_t plane = (size_t)nbp * Kp;
  for (int jj = wid; jj < OZ_TJ; jj += 8) {
    int j = j0 + jj;
    if (j >= nbp) break;
    double y[4];
#pragma unroll
    for (int v = 0; v < 4; ++v) y[v] = tile[jj * OZ_TROW + v * 32 + lane];
    emit_residues(y, L, res + (size_t)j * Kp + k, plane);
  }
}

// ------------------------------------------------------------------------ reconstruction
// Planes C[l][i][j] (l < L, i < Mp, j < nbp; int32 products or int8 residues) -> D[i][c0 + j]
// for i < M, j < nb: D = RN(T * 2^-(sa_i + sb_j)) in the target.
//
// Per modulus the residue r_l (symmetric) enters as r'_l = r_l + 128 in [0, 255], so
// S' = sum_l r'_l w_l = S + 128 sum_l w_l == S + 128 (mod M) (sum_l w_l == 1 mod every m_l).
// X = S' - 128 == S, and T = X - q M with q = rint(X / M) (|T| <= M (1/2 - 2^-20)).
// S' is accumulated in NL 32-bit limbs held in uint64: r' * W[l,t] < 2^40, at most 20 terms,
// < 2^45 (exact, one IMAD.WIDE.U32 per limb). For NL <= 4 (at most 16 moduli: 17 is the
// first count whose M exceeds 2^128) S' is accumulated in fp64 instead (the FP64 pipe issues
// these multiply-adds about twice as fast): with w_l = sum_k w_lk 2^(40k), w_lk < 2^40 exact
// doubles, each part sum P_k = sum_l r'_l w_lk is an integer below 16 * 255 * 2^40 < 2^52,
// so every DFMA is exact in any order; P_k's bits are those of P_k + 2^52, and the parts
// enter the limbs at bit 40k (accumulate_fp64). q: after an unsigned carry pass the limbs a_t
// are non-negative, top < 2^45. z = fl(a_{NL-1} 2^32 + a_{NL-2}') with a_{NL-2}' = a_0 - 128
// for NL = 2 (exact; nothing else is dropped) and a_{NL-2} otherwise, x = fl(z 2^(32(NL-2))
// fl(1/M)) (exact scaling, two roundings). For NL >= 3, M >= 2^(32(NL-1)-1) (NL = bit
// length / 32 + 1), so the dropped limbs and the 128 are below 2^(32(NL-2)) + 128 < M 2^-30.9;
// with S'/M < 255 * 20 < 2^13 the three roundings add < 2^13 * 3 * 2^-53:
// |x - X/M| < 2^-30 < 2^-20 (the margin), so rint(x) = q exactly, taken through the magic add
// x + 1.5 * 2^52 (x < 2^13: the sum's low bits are q, two's complement).
//
// int32 reader (|C| < 2^31): residue_low_byte (ozaki_residue.cuh, with its proof) gives r's
// low byte; m = 256: the low byte of C. int8 reader: the stored byte, xor 0x80, is r + 128.
template <typename Plane>
struct PlaneQuad;
template <>
struct PlaneQuad<int> {
  using Raw = int4;
  static constexpr int kGroup = 4;  // planes loaded ahead (4 registers each)
  __device__ __forceinline__ static Raw load(const int* p) {
    return __ldg(reinterpret_cast<const int4*>(p));
  }
  // r'_v = r_v + 128 of the four int32 products in q.
  __device__ __forceinline__ static void decode(const Raw& q, const ResConst& c, unsigned (&r)[4]) {
    int cv[4] = {q.x, q.y, q.z, q.w};
    if (c.m == 256.0f) {
#pragma unroll
      for (int v = 0; v < 4; ++v) r[v] = ((unsigned)cv[v] & 0xFFu) ^ 0x80u;
      return;
    }
    float inv_m = c.inv_m;
    OZ_PIN(inv_m);
#pragma unroll
    for (int v = 0; v < 4; ++v)  // r + 128
      r[v] = ((unsigned)residue_low_byte(cv[v], inv_m, c.c16m, c.neg_m) & 0xFFu) ^ 0x80u;
  }
};
template <>
struct PlaneQuad<int8_t> {
  using Raw = unsigned;
  static constexpr int kGroup = OZ_MAX_MODULI;  // every plane loaded ahead (one word each)
  __device__ __forceinline__ static Raw load(const int8_t* p) {
    return __ldg(reinterpret_cast<const unsigned*>(p));
  }
  __device__ __forceinline__ static void decode(Raw w, const ResConst&, unsigned (&r)[4]) {
    w ^= 0x80808080u;
#pragma unroll
    for (int v = 0; v < 4; ++v) r[v] = __byte_perm(w, 0u, 0x4440 + v);
  }
};

// Exact double of a non-negative integer u < 2^52 without a conversion instruction (those run
// at a quarter of the FP64 rate): the bits 0x433 << 52 | u are the double 2^52 + u.
__device__ __forceinline__ double small_u64_to_double(unsigned long long u) {
  return __dsub_rn(__hiloint2double(0x43300000 | (int)(u >> 32), (int)(unsigned)u), 0x1p52);
}

// Calls use(l, r) for l < min(L, LMAX) with r the four residues r'_v = r_v + 128 of plane l at
// cp. Unrolled over LMAX (the constants c_rc[l], c_W/c_Wd of the caller's use become
// constant-bank operands, see emit_residues); the loads of a group of planes are issued
// together, ahead of their use, so their latency is paid once per group, not per modulus.
template <int LMAX, typename Plane, typename Use>
__device__ __forceinline__ void for_each_plane(const Plane* cp, size_t plane, int L, Use use) {
  using PQ = PlaneQuad<Plane>;
  constexpr int G = PQ::kGroup;
#pragma unroll
  for (int l0 = 0; l0 < LMAX; l0 += G) {
    if (l0 >= L) break;
    typename PQ::Raw raw[G];
#pragma unroll
    for (int g = 0; g < G; ++g)
      if (l0 + g < L && l0 + g < LMAX) raw[g] = PQ::load(cp + (size_t)(l0 + g) * plane);
#pragma unroll
    for (int g = 0; g < G; ++g) {
      int l = l0 + g;
      if (l >= L || l >= LMAX) break;
      unsigned r[4];
      PQ::decode(raw[g], c_rc[l], r);
      use(l, r);
    }
  }
}

// S' (see above) of four outputs into the uint64 limbs acc (zeroed) through P parts of 40 bits:
// part k enters at bit 40k = 32 t0 + sh, its low 32 - sh bits into limb t0 (shifted), the rest
// into limb t0 + 1 (below 2^52 each, so no limb overflows). Part P - 1 may start in the top
// limb, where S' < 2^(32(NL - 1) + 45) bounds it: it is added there whole.
template <int NL, int P, typename Plane>
__device__ __forceinline__ void accumulate_fp64(const Plane* cp, size_t plane, int L,
                                                unsigned long long (&acc)[4][NL]) {
  double part[4][P];
#pragma unroll
  for (int v = 0; v < 4; ++v)
#pragma unroll
    for (int k = 0; k < P; ++k) part[v][k] = 0.0;
  for_each_plane<16>(cp, plane, L, [&](int l, const unsigned (&r)[4]) {
#pragma unroll
    for (int v = 0; v < 4; ++v) {
      double rv = __dsub_rn(__hiloint2double(0x43300000, (int)r[v]), 0x1p52);  // r' exactly
#pragma unroll
      for (int k = 0; k < P; ++k) part[v][k] = __fma_rn(rv, c_Wd[l * 4 + k], part[v][k]);
    }
  });
#pragma unroll
  for (int v = 0; v < 4; ++v) {
#pragma unroll
    for (int k = 0; k < P; ++k) {
      unsigned long long u =
          (unsigned long long)__double_as_longlong(__dadd_rn(part[v][k], 0x1p52)) -
          0x4330000000000000ull;  // P_k < 2^52: 2^52 + P_k is exact
      constexpr int kBits = 40;
      const int t0 = (kBits * k) >> 5, sh = (kBits * k) & 31;
      if (t0 + 1 < NL) {
        acc[v][t0] += (u << sh) & 0xFFFFFFFFull;
        acc[v][t0 + 1] += u >> (32 - sh);
      } else {
        acc[v][t0] += u << sh;
      }
    }
  }
}

template <int NL, typename Plane, typename Out>
__device__ void reconstruct(const Plane* __restrict__ C, int M, int Mp, int nb, int nbp, int L,
                            const long long* __restrict__ sa, const long long* __restrict__ sb,
                            int c0, int N, int p, int emin_sub, Out* __restrict__ D) {
  long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  int quads = nbp >> 2;
  int i = (int)(idx / quads);
  int j = 4 * (int)(idx - (long long)i * quads);
  if (i >= M || j >= nb) return;
  size_t plane = (size_t)Mp * nbp;
  const Plane* cp = C + (size_t)i * nbp + j;
  long long ea = sa[i], eb[4];
#pragma unroll
  for (int v = 0; v < 4; ++v) eb[v] = (j + v < nb) ? sb[c0 + j + v] : 0;
  unsigned long long acc[4][NL];
#pragma unroll
  for (int v = 0; v < 4; ++v)
#pragma unroll
    for (int t = 0; t < NL; ++t) acc[v][t] = 0;
  if constexpr (NL <= 4) {
    // <= 16 moduli: fp64 parts, ceil(bits(M) / 40) of them (c_nparts, uniform per call)
    constexpr int kParts = (32 * NL + 39) / 40;
    if (c_nparts == kParts)
      accumulate_fp64<NL, kParts, Plane>(cp, plane, L, acc);
    else
      accumulate_fp64<NL, (kParts > 1 ? kParts - 1 : 1), Plane>(cp, plane, L, acc);
  } else {  // 17..20 moduli: one IMAD.WIDE.U32 per residue and limb
    for_each_plane<OZ_MAX_MODULI>(cp, plane, L, [&](int l, const unsigned (&r)[4]) {
#pragma unroll
      for (int t = 0; t < NL; ++t) {
        unsigned w = c_W[l * NL + t];
#pragma unroll
        for (int v = 0; v < 4; ++v) acc[v][t] += (unsigned long long)r[v] * w;
      }
    });
  }
  Out out[4];
#pragma unroll
  for (int v = 0; v < 4; ++v) {
#pragma unroll
    for (int t = 0; t < NL - 1; ++t) {
      acc[v][t + 1] += acc[v][t] >> 32;
      acc[v][t] &= 0xFFFFFFFFull;
    }
    // q = rint(x) from the top two limbs (proof above), through the 1.5 * 2^52 magic add
    double top = small_u64_to_double(acc[v][NL - 1]);
    double nxt = small_u64_to_double(acc[v][NL - 2]);
    if (NL == 2) nxt = __dsub_rn(nxt, 128.0);  // exact (|nxt| < 2^33)
    double z = __fma_rn(top, 0x1p32, nxt);
    double x = __dmul_rn(__dmul_rn(z, __hiloint2double((1023 + 32 * (NL - 2)) << 20, 0)), c_invM);
    long long q = __double_as_longlong(__dadd_rn(x, 0x1.8p52)) - 0x4338000000000000ll;
    long long a[NL];
#pragma unroll
    for (int t = 0; t < NL; ++t) a[t] = (long long)acc[v][t] - q * (long long)c_Ml[t];
    a[0] -= 128;
    normalize<NL>(a);
    long long e = (j + v < nb) ? -(ea + eb[v]) : 0;
    out[v] = round_out<NL, Out>(a, e, p, emin_sub);
  }
  Out* dp = D + (size_t)i * N + c0 + j;
  if (j + 4 <= nb && ((size_t)dp & 15) == 0) {
    if (sizeof(Out) == 8) {
      reinterpret_cast<double2*>(dp)[0] = make_double2((double)out[0], (double)out[1]);
      reinterpret_cast<double2*>(dp)[1] = make_double2((double)out[2], (double)out[3]);
    } else {
      *reinterpret_cast<float4*>(dp) =
          make_float4((float)out[0], (float)out[1], (float)out[2], (float)out[3]);
    }
  } else {
#pragma unroll
    for (int v = 0; v < 4; ++v)
      if (j + v < nb) dp[v] = out[v];
  }
}

// At least OZ_RECON_MINB 256-thread blocks per SM. 3 keeps every value in registers; 4 (64
// registers, a few spilled) measured the same on the H200 (1.26-1.36 ms per n = 8192 call).
#ifndef OZ_RECON_MINB
#define OZ_RECON_MINB 3
#endif
#define OZ_RECON(NL, NAME, PLANE, OUT)                                                        \
  extern "C" __global__ void __launch_bounds__(256, OZ_RECON_MINB)                            \
      NAME(const PLANE* __restrict__ C, int M, int Mp, int nb, int nbp, int L,                \
           const long long* __restrict__ sa, const long long* __restrict__ sb, int c0, int N, \
           int p, int emin_sub, OUT* __restrict__ D) {                                        \
    reconstruct<NL, PLANE, OUT>(C, M, Mp, nb, nbp, L, sa, sb, c0, N, p, emin_sub, D);         \
  }

OZ_RECON(2, oz2_recon_i32_nl2_f64, int, double)
OZ_RECON(3, oz2_recon_i32_nl3_f64, int, double)
OZ_RECON(4, oz2_recon_i32_nl4_f64, int, double)
OZ_RECON(5, oz2_recon_i32_nl5_f64, int, double)
OZ_RECON(2, oz2_recon_i32_nl2_f32, int, float)
OZ_RECON(3, oz2_recon_i32_nl3_f32, int, float)
OZ_RECON(4, oz2_recon_i32_nl4_f32, int, float)
OZ_RECON(5, oz2_recon_i32_nl5_f32, int, float)
OZ_RECON(2, oz2_recon_i8_nl2_f64, int8_t, double)
OZ_RECON(3, oz2_recon_i8_nl3_f64, int8_t, double)
OZ_RECON(4, oz2_recon_i8_nl4_f64, int8_t, double)
OZ_RECON(5, oz2_recon_i8_nl5_f64, int8_t, double)
OZ_RECON(2, oz2_recon_i8_nl2_f32, int8_t, float)
OZ_RECON(3, oz2_recon_i8_nl3_f32, int8_t, float)
OZ_RECON(4, oz2_recon_i8_nl4_f32, int8_t, float)
OZ_RECON(5, oz2_recon_i8_nl5_f32, int8_t, float)

// ---------------------------------------------------------------------------- special values
// For every output (i, j) of D (M x N, row-major) whose row i of A or column j of B holds a
// NaN or +-Inf (bad[i] or bad[M + j] nonzero, as the statistics kernels set them), the value
// that native GEMM gives, as precision.gemm.ozaki.special_block defines it: each product a*b
// rounded to the target first, so a NaN operand or Inf*0 gives NaN, and an Inf factor, or a
// finite product beyond the target's range, an Inf of the product's sign; the output is the
// target's quiet NaN (canonical bits) if some product is NaN or a +Inf meets a -Inf, else that
// Inf. Every other output is left as it is, so the call needs no host synchronisation to find
// out whether there is anything to do: with no bad line a block reads the flags and ends.
//
// The product's rounding to fp64 is the float64 multiply (it overflows exactly where the
// exact product reaches 2^1024 - 2^970). For fp32, the float64 product p of two float64 (or
// float32) factors is the exact one unless rounded; fp32 rounding overflows where the exact
// product reaches kF32Overflow = 2^128 - 2^103 (half an ulp above FLT_MAX); |p| > that, or
// |p| == that with the rounding error e = fma(a, b, -p) (exact at this magnitude) zero or of
// p's sign, says so exactly.
//
// Which products to look at: where no finite product can overflow (emax_a[i] + emax_b[j],
// the frexp exponents of the lines' largest finite magnitudes as the statistics kernels leave
// them, below 1024 for fp64 or 128 for fp32), only the products with a NaN/Inf factor decide,
// so only the k where the bad lines hold one are visited (a bad row's listed in shared memory,
// at most kSpecialList of them; a bad column's, where a bad row meets it, by its thread, at
// most kColList); elsewhere, or when a list is full, every k.
//
// Blocks (a 1-D grid): blockDim.x (<= 256) columns x kSpecialRows rows of D each. The bad rows'
// outputs: one column per thread (B's rows read coalesced). The bad columns' outputs in the
// other rows: one row per thread.
constexpr int kSpecialRows = 256;
constexpr int kSpecialList = 1024;
constexpr int kColList = 4;
constexpr double kF32Overflow = 0x1.ffffffp+127;  // 2^128 - 2^103

// Which kinds of product an output's sum has met.
struct SpecialFlags {
  bool nan = false, pinf = false, ninf = false;
  // the output is NaN whatever comes next
  __device__ __forceinline__ bool settled() const { return nan || (pinf && ninf); }
  __device__ __forceinline__ void add(double a, double b, bool fp32) {
    const double p = __dmul_rn(a, b);
    if (p != p) {
      nan = true;
      return;
    }
    const long long pb = __double_as_longlong(p);
    bool inf = (pb & 0x7FFFFFFFFFFFFFFFll) == 0x7FF0000000000000ll;
    if (fp32 && !inf) {
      const double mag = __longlong_as_double(pb & 0x7FFFFFFFFFFFFFFFll);
      const double e = __fma_rn(a, b, -p);
      inf = mag > kF32Overflow || (mag == kF32Overflow && (e == 0.0 || (e > 0.0) == (p > 0.0)));
    }
    if (inf) {
      if (p > 0.0)
        pinf = true;
      else
        ninf = true;
    }
  }
};

// The special value's bits in the output format: the canonical quiet NaN (0x7FF8... /
// 0x7FC00000, what precision.formats calls ieee_quiet_nan_bits), else +Inf if a +Inf product
// was met, else -Inf (an affected output always meets a NaN or an Inf product; "neither"
// writes -Inf, as special_block does). Written as bits: a conversion would give the GPU's own
// NaN, 0x7FFFFFFF for float.
__device__ __forceinline__ void store_special(double* d, bool nan, bool pinf, bool ninf) {
  *d = __longlong_as_double(nan || (pinf && ninf) ? 0x7FF8000000000000ll
                            : pinf                ? 0x7FF0000000000000ll
                                                  : (long long)0xFFF0000000000000ull);
}
__device__ __forceinline__ void store_special(float* d, bool nan, bool pinf, bool ninf) {
  *d = __int_as_float(nan || (pinf && ninf) ? 0x7FC00000 : pinf ? 0x7F800000 : (int)0xFF800000u);
}

// The k of line x (n entries, stride ld) whose entry is NaN or +-Inf, into list[0 .. *count)
// (order unspecified); *count may exceed kSpecialList (then the list is incomplete). The whole
// block takes part.
__device__ __forceinline__ void list_nonfinite(const OZ_IN* __restrict__ x, int n, size_t ld,
                                               int* list, int* count) {
  if (threadIdx.x == 0) *count = 0;
  __syncthreads();
  for (int k = threadIdx.x; k < n; k += blockDim.x) {
    const double v = (double)x[(size_t)k * ld];
    if (!isfinite(v)) {
      const int at = atomicAdd(count, 1);
      if (at < kSpecialList) list[at] = k;
    }
  }
  __syncthreads();
}

// f over the products a[k] * b[k * ldb] of a row a of A and a column b of B: for the n k of
// list, or for every k < n when list is null; stops once the output is settled.
__device__ __forceinline__ void add_products(SpecialFlags& f, const OZ_IN* __restrict__ a,
                                             const OZ_IN* __restrict__ b, int ldb, const int* list,
                                             int n, bool fp32) {
  for (int q = 0; q < n && !f.settled(); ++q) {
    const int k = list != nullptr ? list[q] : q;
    f.add((double)a[k], (double)b[(size_t)k * ldb], fp32);
  }
}

template <class OUT>
__device__ __forceinline__ void special_values(const OZ_IN* __restrict__ A,
                                               const OZ_IN* __restrict__ B, int M, int N, int K,
                                               const int* __restrict__ bad,
                                               const int* __restrict__ emax_a,
                                               const int* __restrict__ emax_b, bool fp32,
                                               OUT* __restrict__ D) {
  __shared__ int s_cols[256], s_ncols, s_list[kSpecialList], s_nlist;
  const int t = threadIdx.x, nt = blockDim.x;
  const int least = fp32 ? 128 : 1024;  // |a| < 2^ea, |b| < 2^eb: |ab| < 2^(ea + eb)
  const int nbx = (N + nt - 1) / nt;
  const int j0 = (int)(blockIdx.x % nbx) * nt, j = j0 + t;
  const int i0 = (int)(blockIdx.x / nbx) * kSpecialRows, i1 = min(M, i0 + kSpecialRows);
  // the bad rows: every output of the row, one column per thread; a thread whose column is
  // bad too lists that column's NaN/Inf entries once (at most kColList of them)
  const bool col_bad = j < N && bad[M + j] != 0;
  int col_list[kColList], col_n = -1;  // (-1: not listed yet)
  for (int i = i0; i < i1; ++i) {
    if (bad[i] == 0) continue;  // (the same for every thread)
    list_nonfinite(A + (size_t)i * K, K, 1, s_list, &s_nlist);
    if (col_bad && col_n < 0) {
      col_n = 0;
      for (int k = 0; k < K; ++k) {
        const double v = (double)B[(size_t)k * N + j];
        if (!isfinite(v)) {
          if (col_n < kColList) col_list[col_n] = k;
          ++col_n;
        }
      }
    }
    if (j < N) {
      const OZ_IN* a = A + (size_t)i * K;
      SpecialFlags f;
      if (s_nlist <= kSpecialList && (!col_bad || col_n <= kColList) &&
          emax_a[i] + emax_b[j] < least) {
        add_products(f, a, B + j, N, s_list, s_nlist, fp32);
        if (col_bad) add_products(f, a, B + j, N, col_list, col_n, fp32);
      } else {
        add_products(f, a, B + j, N, nullptr, K, fp32);
      }
      store_special(&D[(size_t)i * N + j], f.nan, f.pinf, f.ninf);
    }
    __syncthreads();  // (before the next row's list)
  }
  // the bad columns of this block, against the other rows: one row per thread
  if (t == 0) s_ncols = 0;
  __syncthreads();
  if (j < N && bad[M + j] != 0) s_cols[atomicAdd(&s_ncols, 1)] = j;
  __syncthreads();
  const int ncols = s_ncols;
  for (int c = 0; c < ncols; ++c) {
    const int jc = s_cols[c];
    list_nonfinite(B + jc, K, (size_t)N, s_list, &s_nlist);
    for (int i = i0 + t; i < i1; i += nt) {
      if (bad[i] != 0) continue;  // written above
      const OZ_IN* a = A + (size_t)i * K;
      SpecialFlags f;
      if (s_nlist <= kSpecialList && emax_a[i] + emax_b[jc] < least)
        add_products(f, a, B + jc, N, s_list, s_nlist, fp32);
      else
        add_products(f, a, B + jc, N, nullptr, K, fp32);
      store_special(&D[(size_t)i * N + jc], f.nan, f.pinf, f.ninf);
    }
    __syncthreads();  // (before the next column's list)
  }
}

#define OZ_SPECIALS(NAME, OUT, FP32)                                                      \
  extern "C" __global__ void __launch_bounds__(256)                                       \
      NAME(const OZ_IN* __restrict__ A, const OZ_IN* __restrict__ B, int M, int N, int K, \
           const int* __restrict__ bad, const int* __restrict__ emax_a,                   \
           const int* __restrict__ emax_b, OUT* __restrict__ D) {                         \
    special_values<OUT>(A, B, M, N, K, bad, emax_a, emax_b, FP32, D);                     \
  }

OZ_SPECIALS(oz2_specials_f64, double, false)
OZ_SPECIALS(oz2_specials_f32, float, true)
