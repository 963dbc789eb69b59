// Exact integers in 32-bit limbs and their one correctly rounded conversion to fp64/fp32:
// shared by the Ozaki kernels (ozaki2.cu: the CRT result, ozaki1.cu: the slice sum). The
// integer X = sum_t a[t] 2^(32t) is held in NL signed 64-bit containers; normalized limbs have
// a[0..NL-2] in [0, 2^32) and a signed top limb. The rounding is ozaki.round_limbs's: round to
// nearest even at precision p, gradual underflow to the smallest subnormal 2^emin_sub,
// overflow to +-Inf. Included inside each source's anonymous namespace.
#pragma once

template <int NL>
__device__ __forceinline__ void normalize(long long (&a)[NL]) {
#pragma unroll
  for (int t = 0; t < NL - 1; ++t) {
    long long carry = a[t] >> 32;  // arithmetic shift (floor)
    a[t] &= 0xFFFFFFFFll;
    a[t + 1] += carry;
  }
}

// RN(X * 2^e) at precision p with smallest subnormal 2^emin_sub (ozaki.round_limbs).
template <int NL>
__device__ double round_limbs(long long (&a)[NL], long long e, int p, int emin_sub) {
  bool neg = a[NL - 1] < 0;
  if (neg) {
#pragma unroll
    for (int t = 0; t < NL; ++t) a[t] = -a[t];
    normalize<NL>(a);
  }
  long long bl = 0;
#pragma unroll
  for (int t = 0; t < NL; ++t)
    if (a[t] != 0) bl = 32ll * t + (64 - __clzll((unsigned long long)a[t]));
  long long r0 = bl > 64 ? bl - 64 : 0;
  unsigned long long window = 0;
  bool sticky = false;
#pragma unroll
  for (int t = 0; t < NL; ++t) {
    unsigned long long limb = (unsigned long long)a[t];
    long long sh = 32ll * t - r0;
    if (sh >= 0) {
      if (sh < 64) window |= limb << sh;
    } else if (sh > -32) {
      window |= limb >> (-sh);
      sticky |= (limb & ((1ull << (-sh)) - 1ull)) != 0;
    } else {
      sticky |= limb != 0;
    }
  }
  window |= sticky ? 1ull : 0ull;
  long long base = r0 + e;
  long long blw = bl - r0;
  long long r = blw - p;
  if (emin_sub - base > r) r = emin_sub - base;
  unsigned long long mant;
  long long ex;
  if (r <= 0) {
    mant = window;
    ex = base;
  } else if (r > 64) {
    mant = 0;
    ex = 0;
  } else {
    unsigned long long rem;
    if (r == 64) {
      mant = 0;
      rem = window;
    } else {
      mant = window >> r;
      rem = window & ((1ull << r) - 1ull);
    }
    unsigned long long half = 1ull << (r - 1);
    if (rem > half || (rem == half && (mant & 1ull))) mant += 1;
    ex = r + base;
  }
  if (ex > 4000) ex = 4000;  // overflows to inf either way; keeps the int argument in range
  if (ex < -4000) ex = -4000;
  double out = ldexp((double)mant, (int)ex);  // exact: mant <= 2^53 on the target's grid
  return neg ? -out : out;
}

// RN(X * 2^e) in the target (Out = double: fp64, float: fp32), X = sum_t a[t] 2^(32t)
// (normalized limbs, top signed, |X| < 2^(32 NL - 2)). Fast path for normal results: the top
// 64 bits W of |X| (three limbs around the highest nonzero one, shifted so bit 63 is set) with
// every lower bit ORed into bit 0 (W keeps 63 bits above the sticky bit, enough for a correct
// single rounding to <= 53 bits), rounded to the target's p bits in integer arithmetic and
// assembled with the exponent: |X| 2^e ~ (W / 2^64) 2^E. Results that may be subnormal or
// overflow (E outside [emin_normal + 1, emax]) and X = 0 go to round_limbs.
template <int NL, typename Out>
__device__ __forceinline__ Out round_out(long long (&a)[NL], long long e, int p, int emin_sub) {
  long long m[NL];
#pragma unroll
  for (int t = 0; t < NL; ++t) m[t] = a[t];
  bool neg = m[NL - 1] < 0;
  if (neg) {
#pragma unroll
    for (int t = 0; t < NL; ++t) m[t] = -m[t];
    normalize<NL>(m);
  }
  unsigned long long x2 = 0, x1 = 0, x0 = 0;
  bool rest = false, below = false;
  int h = -1;
#pragma unroll
  for (int t = 0; t < NL; ++t) {
    if (t >= 3) below |= m[t - 3] != 0;
    if (m[t] != 0) {
      h = t;
      x2 = (unsigned long long)m[t];
      x1 = t >= 1 ? (unsigned long long)m[t - 1] : 0ull;
      x0 = t >= 2 ? (unsigned long long)m[t - 2] : 0ull;
      rest = below;
    }
  }
  if (h >= 0 && (x2 >> 32) == 0) {
    int c = __clzll((long long)x2) - 32;  // x2 in [1, 2^32): c in [0, 31]
    unsigned long long w = (((x2 << 32) | x1) << c) | (x0 >> (32 - c));
    bool lost = rest || (x0 & ((1ull << (32 - c)) - 1ull)) != 0;
    w |= lost ? 1ull : 0ull;
    long long E = 64 + 32ll * (h - 1) - c + e;  // |X| 2^e = (w / 2^64) 2^E, w in [2^63, 2^64)
    // RN of w to p bits in integers (no conversion instruction): mant = w >> (64 - p) rounded
    // half to even on the dropped bits, in [2^(p-1), 2^p]; the result's bits are
    // ((E + bias - 2) << (p - 1)) + mant (a carry into 2^p bumps the exponent; E = emax with
    // mant = 2^p gives the infinity's bits: RN overflow).
    if (sizeof(Out) == 8) {
      if (E >= -1021 && E <= 1023) {
        unsigned long long mant = w >> 11, rem = w & 0x7FFull;
        mant += (rem > 0x400ull || (rem == 0x400ull && (mant & 1ull))) ? 1ull : 0ull;
        unsigned long long bits = ((unsigned long long)(E + 1021) << 52) + mant;
        return (Out)__longlong_as_double((long long)(bits | (neg ? (1ull << 63) : 0ull)));
      }
    } else {
      if (E >= -125 && E <= 127) {
        unsigned long long mant = w >> 40, rem = w & 0xFFFFFFFFFFull;
        mant += (rem > (1ull << 39) || (rem == (1ull << 39) && (mant & 1ull))) ? 1ull : 0ull;
        unsigned bits = ((unsigned)(E + 125) << 23) + (unsigned)mant;
        return (Out)__int_as_float((int)(bits | (neg ? 0x80000000u : 0u)));
      }
    }
  }
  return (Out)round_limbs<NL>(a, e, p, emin_sub);
}
