// The symmetric residue of an exact int32 integer modulo an Ozaki-II modulus, with no
// conversion instruction (I2F/F2I run at a quarter of the FP32 rate): shared by the
// reconstruction's int32 reader (ozaki2.cu) and the fused INT8 GEMM's epilogue
// (ozaki2_gemm.cu); and sym_mod, the general path of that epilogue for any modulus in [2, 256].
// Included inside each source's own namespace.
#pragma once

// 1.5 * 2^23: floats in [2^23, 2^24) are the integers; magic + t for -2^22 <= t < 2^22 is exact
// and its bits are 0x4B400000 + t (two's complement add), so int <-> float costs one add.
constexpr float kMagic = 12582912.0f;
constexpr int kMagicBits = 0x4B400000;

// c16m of an odd modulus m in (128, 255]: c16 - 65536, c16 the symmetric residue of 2^16 mod m
// (|c16| <= 127).
__device__ __forceinline__ int residue_c16m(int m) {
  int c16 = 65536 % m;
  if (c16 > (m - 1) / 2) c16 -= m;
  return c16 - 65536;
}

// An int whose low byte is r, the symmetric residue in [-(m-1)/2, (m-1)/2] of c modulo an odd m
// in (128, 255], for any int32 c; inv_m = fl32(1/m), neg_m = -m, c16m = residue_c16m(m).
//   hi = floor((c + 2^15) / 2^16), computed as ((c >> 15) + 1) >> 1 (no overflow), lies in
//   [-2^15, 2^15] and lo = c - hi 2^16 in [-2^15, 2^15). t = lo + hi c16 == c (mod m), and
//   |c16| <= 127 gives t in [-2^22, 2^22): formed modulo 2^32 as c + hi c16m, it is exact, and
//   so is magic + t (bits 0x4B400000 + t).
//   qm = magic + q with q = rint(t fl(1/m)) (one rounding of the exact product, through the
//   magic add): |fl(1/m) - 1/m| <= 2^-32 (half an ulp of a number in [2^-8, 2^-7)), so the
//   product is within 2^22 2^-32 = 2^-10 of t/m, while t/m (m odd) is at least 1/(2m) >= 2^-9
//   away from every half-integer: q = rint(t/m) exactly and r = t - q m is the symmetric
//   residue. In integers, with K = 0x4B400000 the bits of magic: bits(tb) - m bits(qm) =
//   r + K (1 - m), and K (1 - m) has 22 zero low bits, so one IMAD gives r's low byte.
// (m = 256 needs none of this: r is the low byte of c.)
__device__ __forceinline__ int residue_low_byte(int c, float inv_m, int c16m, int neg_m) {
  const int hi = ((c >> 15) + 1) >> 1;
  const int t = (int)((unsigned)c + (unsigned)hi * (unsigned)c16m);  // lo + hi * c16
  const float tb = __int_as_float(kMagicBits + t);
  const float qm = __fmaf_rn(__fsub_rn(tb, kMagic), inv_m, kMagic);
  return __float_as_int(qm) * neg_m + __float_as_int(tb);
}

// The symmetric residue of any int32 c modulo any m in [2, 256], in [lo, hi] =
// [-floor(m/2), ceil(m/2) - 1], from fp32 estimates of the quotient (inv = fl32(1/m); every
// fp32 operation rounds to nearest even). Two conversions each way: the general path, for the
// moduli that residue_low_byte does not serve.
// Step 1: q1 = rint(fl(fl(c) inv)), r1 = c - q1 m, formed modulo 2^32 (exact: the true value is
//   small). |fl(c) - c| <= 64 (half an ulp below 2^31), |inv - 1/m| <= 2^-24 / m, and the
//   product's rounding adds at most 2^-24 |fl(c) inv| <= 2^-24 2^31 (1 + 2^-24) / m; so
//   |fl(fl(c) inv) - c/m| <= (64 + 128 + 128.01) / m < 321 / m, |q1 - c/m| < 321 / m + 1/2 and
//   |r1| < 321 + m/2 <= 449.
// Step 2: q2 = rint(fl(r1 inv)) (r1 exact in fp32), r = r1 - q2 m. The two roundings put
//   fl(r1 inv) within 449 * 2^-23 (1 + 2^-23) / m < 2^-14 / m of r1/m, while r1/m = (2 r1) / (2m)
//   is either a half-integer (an exact tie, m even) or at least 1/(2m) away from every one; so
//   q2 is a nearest integer to r1/m and r lies in [-m/2, m/2], at an end only at a tie.
// Step 3: r > hi happens only for even m and r = m/2 (-> -m/2 = lo); for odd m, |r| < m/2
//   already means r in [lo, hi]. The r < lo (+m) branch is a guard that the bound never takes.
// The host check (precision/gemm/ozaki_cuda_check.py --host) runs this on every m in [2, 256].
__device__ __forceinline__ int sym_mod(int c, int m, float inv, int lo, int hi) {
  const int q1 = __float2int_rn(__fmul_rn(__int2float_rn(c), inv));
  const int r1 = int(uint32_t(c) - uint32_t(q1) * uint32_t(m));
  const int q2 = __float2int_rn(__fmul_rn(__int2float_rn(r1), inv));
  int r = r1 - q2 * m;
  r = r > hi ? r - m : r;
  r = r < lo ? r + m : r;
  return r;
}
