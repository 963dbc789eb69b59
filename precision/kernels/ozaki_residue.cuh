// The symmetric residue of an exact int32 integer modulo an Ozaki-II modulus, with no
// conversion instruction (I2F/F2I run at a quarter of the FP32 rate): shared by the
// reconstruction's int32 reader (ozaki2.cu) and the fused INT8 GEMM's epilogue
// (ozaki2_gemm.cu). Included inside each source's own namespace.
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
