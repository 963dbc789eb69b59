// Tensor-core MMA emulation on CUDA cores, the engine of mma(..., device="cuda") (compiled by
// CuPy's NVRTC in precision/tensorcore/gpu_engine.py): the same fused-block arithmetic as
// precision/tensorcore/fdpa.py, in integers only (immune to CuPy's forced -ftz).
//
// Operands are pre-decoded by `decode_operand` into a signed integer significand normalised
// to 11 bits (value = sig * 2^(exp - 10)) and the leading-bit ("anchor") exponent, with
// zeros at ZERO_EXP and Inf/NaN at special codes. A product's exact value is
// sa*sb * 2^(ea + eb - 20); truncated to the block grid 2^(E - F) it is the integer
// trunc(sa*sb * 2^(F - 20) / 2^(E - ea - eb)). A's significands carry the factor 2^(F-20)
// when F >= 20 (PRE), otherwise the shift grows by 20 - F (RS). |term| < 2^(F+2) <= 2^27, so
// 16 terms sum exactly in int32; c's term is added in int64.

#ifdef __CUDACC_RTC__
typedef unsigned int uint32_t;
typedef unsigned short uint16_t;
typedef unsigned char uint8_t;
typedef signed char int8_t;
#else
#include <stdint.h>
#endif

#define ZERO_EXP (-16000)
#define INF_CODE 30000
#define NAN_CODE 30001
#define BM 64
#define BN 64
#define BK 32
#define TM 4
#define TN 4

// Output formats (mode): 0 fp32 RZ, 1 fp32 RZ with 13 fraction bits (e8m13), 2 fp16 RNE,
// 3 fp32 RNE (used by the RN add of the fp8 schedule).
struct OutFmt {
  int p, emin, emax, cfrac, bias, rne, wide;
};

__device__ __forceinline__ OutFmt out_fmt(int mode) {
  OutFmt f;
  if (mode == 2) {
    f.p = 11;
    f.emin = -14;
    f.emax = 15;
    f.cfrac = 10;
    f.bias = 15;
    f.rne = 1;
    f.wide = 0;
  } else {
    f.p = (mode == 1) ? 14 : 24;
    f.emin = -126;
    f.emax = 127;
    f.cfrac = 23;
    f.bias = 127;
    f.rne = (mode == 3);
    f.wide = 1;
  }
  return f;
}

__device__ __forceinline__ uint32_t inf_bits(int wide, int neg) {
  return wide ? (neg ? 0xFF800000u : 0x7F800000u) : (neg ? 0xFC00u : 0x7C00u);
}
__device__ __forceinline__ uint32_t nan_bits(int wide) { return wide ? 0x7FFFFFFFu : 0x7FFFu; }

// The exact value S * 2^q rounded once into the output format (RZ or RNE, subnormals kept,
// overflow -> Inf); an exact or rounded zero is +0.
__device__ uint32_t round_exact(long long S, int q, int mode) {
  const OutFmt f = out_fmt(mode);
  if (S == 0) return 0u;
  const int neg = S < 0;
  unsigned long long mag = neg ? (unsigned long long)(-S) : (unsigned long long)S;
  const int bl = 64 - __clzll((long long)mag);
  const int e = q + bl - 1;
  const int keep = (e >= f.emin) ? f.p : f.p - (f.emin - e);
  const int drop = bl - keep;
  unsigned long long r;
  int qq = q;
  if (drop <= 0) {
    r = mag;
  } else if (drop > 63) {
    r = 0;  // below half the smallest subnormal (mag < 2^63 <= half)
    qq = q + drop;
  } else {
    r = mag >> drop;
    if (f.rne) {
      const unsigned long long rem = mag & ((1ull << drop) - 1ull);
      const unsigned long long half = 1ull << (drop - 1);
      if (rem > half || (rem == half && (r & 1ull))) r += 1ull;
    }
    qq = q + drop;
  }
  if (r == 0) return 0u;
  int blr = 64 - __clzll((long long)r);
  if (blr > f.p) {
    r >>= 1;
    qq += 1;
    blr -= 1;
  }  // RNE carry: r was 2^p
  const int er = qq + blr - 1;
  if (er > f.emax) return inf_bits(f.wide, neg);
  uint32_t bits;
  if (er >= f.emin) {
    const unsigned long long frac = (r << (f.p - blr)) & ((1ull << (f.p - 1)) - 1ull);
    bits = ((uint32_t)(er + f.bias) << f.cfrac) | (uint32_t)(frac << (f.cfrac - (f.p - 1)));
  } else {
    // Subnormal: qq >= emin - (p - 1) by construction of `keep`.
    const int sh = qq - (f.emin - (f.p - 1));
    bits = (uint32_t)((r << sh) << (f.cfrac - (f.p - 1)));
  }
  const uint32_t sign = neg ? (f.wide ? 0x80000000u : 0x8000u) : 0u;
  return bits | sign;
}

// Accumulator value (fp32 bits, or fp16 bits in the low half) as sig * 2^(ex - frac).
// kind: 0 finite nonzero, 1 zero, 2 +Inf, 3 -Inf, 4 NaN.
struct AccVal {
  long long sig;
  int ex;
  int kind;
};

__device__ __forceinline__ AccVal decode_acc(uint32_t bits, int wide) {
  AccVal v;
  const int ebits_max = wide ? 255 : 31;
  const int ef = wide ? (int)((bits >> 23) & 0xFF) : (int)((bits >> 10) & 0x1F);
  const uint32_t mant = wide ? (bits & 0x7FFFFF) : (bits & 0x3FF);
  const int neg = wide ? (int)(bits >> 31) : (int)((bits >> 15) & 1);
  const int frac = wide ? 23 : 10;
  const int bias = wide ? 127 : 15;
  if (ef == ebits_max) {
    v.sig = 0;
    v.ex = ZERO_EXP;
    v.kind = mant ? 4 : (neg ? 3 : 2);
    return v;
  }
  long long s = ef ? (long long)(mant | (1u << frac)) : (long long)mant;
  v.kind = (s == 0) ? 1 : 0;
  v.ex = (s == 0) ? ZERO_EXP : (ef ? ef - bias : 1 - bias);
  v.sig = neg ? -s : s;
  return v;
}

// trunc(sig * 2^(ex - frac) / 2^(E - F)) for ex <= E, in int64 (c's term of a block).
__device__ __forceinline__ long long acc_term(const AccVal& v, int E, int F, int frac) {
  if (v.kind != 0) return 0;
  const int sh = v.ex - frac - E + F;
  const long long m = v.sig < 0 ? -v.sig : v.sig;
  long long t;
  if (sh >= 0)
    t = m << sh;
  else
    t = (-sh > 62) ? 0 : (m >> (-sh));
  return v.sig < 0 ? -t : t;
}

__device__ __forceinline__ uint32_t satf_bits(uint32_t bits, int wide) {
  if (wide) {
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return 0u;
    if (bits == 0x7F800000u) return 0x7F7FFFFFu;
    if (bits == 0xFF800000u) return 0xFF7FFFFFu;
  } else {
    if ((bits & 0x7FFFu) > 0x7C00u) return 0u;
    if (bits == 0x7C00u) return 0x7BFFu;
    if (bits == 0xFC00u) return 0xFBFFu;
  }
  return bits;
}

__device__ __forceinline__ double bits_to_double(uint32_t bits, int wide) {
  // Exact conversion by integer decoding (no FTZ), finite or not.
  const AccVal v = decode_acc(bits, wide);
  if (v.kind == 4) return __longlong_as_double(0x7FF8000000000000ll);
  if (v.kind == 2) return __longlong_as_double(0x7FF0000000000000ll);
  if (v.kind == 3) return __longlong_as_double((long long)0xFFF0000000000000ull);
  if (v.kind == 1) return 0.0;
  return scalbn((double)v.sig, v.ex - (wide ? 23 : 10));
}

// x + y rounded to nearest even in the accumulator format (the fp8 schedule's final add).
// The double sum is exact for fp16 and innocuous-double-rounded for fp32 (53 >= 2*24 + 2).
__device__ uint32_t rn_add(uint32_t x, uint32_t y, int wide) {
  const double s = bits_to_double(x, wide) + bits_to_double(y, wide);
  if (isnan(s)) return nan_bits(wide);
  if (isinf(s)) return inf_bits(wide, s < 0);
  if (s == 0.0) return 0u;  // +0 (both -0 cannot occur: block results are never -0)
  const long long b = __double_as_longlong(s);
  const int ef = (int)((b >> 52) & 0x7FF);
  long long m = (b & 0xFFFFFFFFFFFFFll) | (1ll << 52);  // s is far from double subnormals
  if (b < 0) m = -m;
  return round_exact(m, ef - 1075, wide ? 3 : 2);
}

// ---------------------------------------------------------------------------------- decode

// fmt: 0 fp16, 1 bf16, 2 tf32 (fp32 container), 3 e4m3 (fn), 4 e5m2, 5 int8, 6 e4m3 read as
// f16 (Hopper's fp8 lowering: a subnormal e4m3 is a normal f16 and anchors at its own exponent).
extern "C" __global__ void decode_operand(const void* __restrict__ src, int fmt, long long n,
                                          int pre, int* __restrict__ sig, int* __restrict__ ex) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const bool f16_view = fmt == 6;
  if (f16_view) fmt = 3;
  if (fmt == 5) {  // int8: the integer itself
    sig[i] = (int)((const int8_t*)src)[i];
    ex[i] = 0;
    return;
  }
  if (fmt == 7) {  // uint8
    sig[i] = (int)((const uint8_t*)src)[i];
    ex[i] = 0;
    return;
  }
  uint32_t b;
  int ebits, mbits;
  switch (fmt) {
    case 0:
      b = ((const uint16_t*)src)[i];
      ebits = 5;
      mbits = 10;
      break;
    case 1:
      b = ((const uint16_t*)src)[i];
      ebits = 8;
      mbits = 7;
      break;
    case 2:
      b = ((const uint32_t*)src)[i] >> 13;
      ebits = 8;
      mbits = 10;
      break;
    case 3:
      b = ((const uint8_t*)src)[i];
      ebits = 4;
      mbits = 3;
      break;
    default:
      b = ((const uint8_t*)src)[i];
      ebits = 5;
      mbits = 2;
      break;
  }
  const int neg = (b >> (ebits + mbits)) & 1;
  const int ef = (b >> mbits) & ((1 << ebits) - 1);
  const int mant = b & ((1 << mbits) - 1);
  const int bias = (1 << (ebits - 1)) - 1;
  const int emax_field = (1 << ebits) - 1;
  if (fmt == 3 ? (ef == emax_field && mant == (1 << mbits) - 1) : (ef == emax_field)) {
    if (fmt != 3 && mant == 0) {
      ex[i] = INF_CODE;
      sig[i] = neg ? -1 : 1;
    } else {
      ex[i] = NAN_CODE;
      sig[i] = 0;
    }
    return;
  }
  int s = ef ? (mant | (1 << mbits)) : mant;
  if (s == 0) {
    sig[i] = 0;
    ex[i] = ZERO_EXP;
    return;
  }
  int e = ef ? ef - bias : 1 - bias;
  if (f16_view && !ef) {  // normalise: put the leading bit of the subnormal at position mbits
    const int sh = mbits - (31 - __clz(s));
    s <<= sh;
    e -= sh;
  }
  s <<= (10 - mbits);
  s <<= pre;
  sig[i] = neg ? -s : s;
  ex[i] = e;
}

// ---------------------------------------------------------------------------------- chain

// One thread block computes a BM x BN output tile of one batch entry; each thread a TM x TN
// sub-tile. Operands: AT (sig/exp) is A transposed, [K, M]; B is [K, N]; C/D are bit arrays.
// L: products per fused block (INT8: per partial sum, 16 or 32; an instruction of k products
// is per_ins = k / L of them, and .satfinite clamps after each instruction).
// sched: 0 chain (each block's result is the next block's c); 1 fp8 via f16 (K pre-permuted
// so each 32-k instruction is block(k%4 in {0,1}) then block(k%4 in {2,3})).
template <int L, bool SPECIAL, bool INT8, int BITOP = 0>
__device__ void mma_tile(const int* __restrict__ ATs, const int* __restrict__ ATe,
                         const int* __restrict__ Bs_, const int* __restrict__ Be_,
                         const void* __restrict__ C, void* __restrict__ D, int M, int N, int K,
                         long long sA, long long sB, long long sC, int F, int e_zero, int mode,
                         int satf, int per_ins, int sched) {
  __shared__ __align__(16) int As[BK][BM];
  __shared__ __align__(16) int Ae[BK][BM];
  __shared__ __align__(16) int Bsg[BK][BN];
  __shared__ __align__(16) int Bex[BK][BN];

  const int z = blockIdx.z;
  ATs += z * sA;
  ATe += z * sA;
  Bs_ += z * sB;
  Be_ += z * sB;
  const int wide = (mode != 2);
  const int frac = wide ? 23 : 10;
  const int RS = F >= 20 ? 0 : 20 - F;
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const int row0 = blockIdx.y * BM + ty * TM, col0 = blockIdx.x * BN + tx * TN;

  uint32_t acc[TM][TN];
  _Pragma("unroll") for (int i = 0; i < TM; ++i) _Pragma("unroll") for (int j = 0; j < TN; ++j) {
    const int r = row0 + i, c = col0 + j;
    uint32_t v = 0;
    if (r < M && c < N) {
      const long long o = z * sC + (long long)r * N + c;
      v = wide ? ((const uint32_t*)C)[o] : (uint32_t)((const uint16_t*)C)[o];
    }
    acc[i][j] = v;
  }
  uint32_t s1[TM][TN];     // fp8 schedule: result of the instruction's first block
  long long pend[TM][TN];  // integers: the current instruction's exact sum so far
  _Pragma("unroll") for (int i = 0; i < TM; ++i) _Pragma("unroll") for (int j = 0; j < TN; ++j)
      pend[i][j] = 0;

  int blk_global = 0;
  for (int k0 = 0; k0 < K; k0 += BK) {
    for (int t = threadIdx.x; t < BK * BM; t += blockDim.x) {
      const int kk = t / BM, mm = t % BM;
      const int k = k0 + kk, m = blockIdx.y * BM + mm;
      const bool ok = (k < K) && (m < M);
      As[kk][mm] = ok ? ATs[(long long)k * M + m] : 0;
      Ae[kk][mm] = ok ? ATe[(long long)k * M + m] : ZERO_EXP;
    }
    for (int t = threadIdx.x; t < BK * BN; t += blockDim.x) {
      const int kk = t / BN, nn = t % BN;
      const int k = k0 + kk, n = blockIdx.x * BN + nn;
      const bool ok = (k < K) && (n < N);
      Bsg[kk][nn] = ok ? Bs_[(long long)k * N + n] : 0;
      Bex[kk][nn] = ok ? Be_[(long long)k * N + n] : ZERO_EXP;
    }
    __syncthreads();

    for (int b0 = 0; b0 < BK && k0 + b0 < K; b0 += L, ++blk_global) {
      if (INT8) {
        int s[TM][TN];
        _Pragma("unroll") for (int i = 0; i < TM; ++i)
            _Pragma("unroll") for (int j = 0; j < TN; ++j) s[i][j] = 0;
#pragma unroll 8
        for (int kk = b0; kk < b0 + L; ++kk) {
          const int4 a4 = *(const int4*)&As[kk][ty * TM];
          const int4 b4 = *(const int4*)&Bsg[kk][tx * TN];
          const int av[4] = {a4.x, a4.y, a4.z, a4.w};
          const int bv[4] = {b4.x, b4.y, b4.z, b4.w};
          _Pragma("unroll") for (int i = 0; i < TM; ++i)
              _Pragma("unroll") for (int j = 0; j < TN; ++j) {
            if (BITOP == 0) s[i][j] += av[i] * bv[j];        // integers: the exact product
            if (BITOP == 1) s[i][j] += (av[i] & bv[j]) & 1;  // b1 and.popc (bit 0 only)
            if (BITOP == 2) s[i][j] += (av[i] ^ bv[j]) & 1;  // b1 xor.popc
          }
        }
        // An instruction of k = per_ins * L products adds its exact sum to c once, wrapping
        // modulo 2^32 or (.satfinite) clamped to the int32 range.
        const bool ins_end = (blk_global + 1) % per_ins == 0;
        _Pragma("unroll") for (int i = 0; i < TM; ++i)
            _Pragma("unroll") for (int j = 0; j < TN; ++j) {
          pend[i][j] += s[i][j];
          if (!ins_end) continue;
          if (satf) {
            long long v = (long long)(int)acc[i][j] + pend[i][j];
            v = v > 2147483647ll ? 2147483647ll : (v < -2147483648ll ? -2147483648ll : v);
            acc[i][j] = (uint32_t)(int)v;
          } else {
            acc[i][j] = acc[i][j] + (uint32_t)pend[i][j];
          }
          pend[i][j] = 0;
        }
        continue;
      }
      // Which c enters this block: the chain's accumulator, or for the fp8 schedule +0
      // (first block of an instruction) / s1 (second block).
      const int phase = sched ? (blk_global & 1) : 0;
      uint32_t cin[TM][TN];
      _Pragma("unroll") for (int i = 0; i < TM; ++i) _Pragma("unroll") for (int j = 0; j < TN; ++j)
          cin[i][j] = sched ? (phase ? s1[i][j] : 0u) : acc[i][j];

      // Pass 1: block anchor E = max(e_zero, anchor of c, anchors of nonzero products).
      int E[TM][TN];
      _Pragma("unroll") for (int i = 0; i < TM; ++i)
          _Pragma("unroll") for (int j = 0; j < TN; ++j) {
        const AccVal cv = decode_acc(cin[i][j], wide);
        E[i][j] = max(e_zero, cv.ex);
      }
#pragma unroll 4
      for (int kk = b0; kk < b0 + L; ++kk) {
        const int4 ea4 = *(const int4*)&Ae[kk][ty * TM];
        const int4 eb4 = *(const int4*)&Bex[kk][tx * TN];
        const int ea[4] = {ea4.x, ea4.y, ea4.z, ea4.w};
        const int eb[4] = {eb4.x, eb4.y, eb4.z, eb4.w};
        _Pragma("unroll") for (int i = 0; i < TM; ++i)
            _Pragma("unroll") for (int j = 0; j < TN; ++j) {
          int an = ea[i] + eb[j];
          if (SPECIAL && (ea[i] >= INF_CODE || eb[j] >= INF_CODE)) an = ZERO_EXP;
          E[i][j] = max(E[i][j], an);
        }
      }
      // Pass 2: exact integer sum of the truncated products (units 2^(E - F)).
      int S[TM][TN];
      int flags[TM][TN];  // bit0 NaN, bit1 +Inf, bit2 -Inf
      _Pragma("unroll") for (int i = 0; i < TM; ++i)
          _Pragma("unroll") for (int j = 0; j < TN; ++j) {
        S[i][j] = 0;
        flags[i][j] = 0;
        E[i][j] += RS;
      }
#pragma unroll 4
      for (int kk = b0; kk < b0 + L; ++kk) {
        const int4 sa4 = *(const int4*)&As[kk][ty * TM];
        const int4 sb4 = *(const int4*)&Bsg[kk][tx * TN];
        const int4 ea4 = *(const int4*)&Ae[kk][ty * TM];
        const int4 eb4 = *(const int4*)&Bex[kk][tx * TN];
        const int sa[4] = {sa4.x, sa4.y, sa4.z, sa4.w};
        const int sb[4] = {sb4.x, sb4.y, sb4.z, sb4.w};
        const int ea[4] = {ea4.x, ea4.y, ea4.z, ea4.w};
        const int eb[4] = {eb4.x, eb4.y, eb4.z, eb4.w};
        _Pragma("unroll") for (int i = 0; i < TM; ++i)
            _Pragma("unroll") for (int j = 0; j < TN; ++j) {
          if (SPECIAL && (ea[i] >= INF_CODE || eb[j] >= INF_CODE)) {
            const bool an = ea[i] == NAN_CODE, bn = eb[j] == NAN_CODE;
            const bool ai = ea[i] == INF_CODE, bi = eb[j] == INF_CODE;
            if (an || bn || (ai && sb[j] == 0) || (bi && sa[i] == 0)) {
              flags[i][j] |= 1;
            } else {
              const bool neg = (sa[i] < 0) != (sb[j] < 0);
              flags[i][j] |= neg ? 4 : 2;
            }
            continue;
          }
          const int p = sa[i] * sb[j];
          const int sg = p >> 31;
          const uint32_t d = (uint32_t)(E[i][j] - ea[i] - eb[j]);
          const uint32_t t = __funnelshift_rc((uint32_t)abs(p), 0u, d);
          S[i][j] += ((int)t ^ sg) - sg;
        }
      }
      // Finalise: add c's term, round once, resolve specials.
      _Pragma("unroll") for (int i = 0; i < TM; ++i)
          _Pragma("unroll") for (int j = 0; j < TN; ++j) {
        const AccVal cv = decode_acc(cin[i][j], wide);
        int fl = flags[i][j];
        if (cv.kind == 4) fl |= 1;
        if (cv.kind == 2) fl |= 2;
        if (cv.kind == 3) fl |= 4;
        const int Eb = E[i][j] - RS;
        uint32_t out;
        if ((fl & 1) || (fl & 6) == 6)
          out = nan_bits(wide);
        else if (fl & 2)
          out = inf_bits(wide, 0);
        else if (fl & 4)
          out = inf_bits(wide, 1);
        else
          out = round_exact((long long)S[i][j] + acc_term(cv, Eb, F, frac), Eb - F, mode);
        if (!sched) {
          acc[i][j] = out;
        } else if (phase == 0) {
          s1[i][j] = out;
        } else {
          acc[i][j] = rn_add(acc[i][j], out, wide);
        }
      }
      const bool ins_end = sched ? (phase == 1) : ((blk_global + 1) % per_ins == 0);
      if (satf && ins_end)
        _Pragma("unroll") for (int i = 0; i < TM; ++i)
            _Pragma("unroll") for (int j = 0; j < TN; ++j) acc[i][j] = satf_bits(acc[i][j], wide);
    }
    __syncthreads();
  }
  _Pragma("unroll") for (int i = 0; i < TM; ++i) _Pragma("unroll") for (int j = 0; j < TN; ++j) {
    const int r = row0 + i, c = col0 + j;
    if (r < M && c < N) {
      const long long o = z * sC + (long long)r * N + c;
      if (wide)
        ((uint32_t*)D)[o] = acc[i][j];
      else
        ((uint16_t*)D)[o] = (uint16_t)acc[i][j];
    }
  }
}

#define MMA_KERNEL(NAME, L, SPECIAL, INT8)                                                         \
  extern "C" __global__ void __launch_bounds__(256)                                                \
      NAME(const int* ATs, const int* ATe, const int* Bs, const int* Be, const void* C, void* D,   \
           int M, int N, int K, long long sA, long long sB, long long sC, int F, int e_zero,       \
           int mode, int satf, int per_ins, int sched) {                                           \
    mma_tile<L, SPECIAL, INT8>(ATs, ATe, Bs, Be, C, D, M, N, K, sA, sB, sC, F, e_zero, mode, satf, \
                               per_ins, sched);                                                    \
  }

MMA_KERNEL(mma_l32, 32, false, false)
MMA_KERNEL(mma_l32_special, 32, true, false)
MMA_KERNEL(mma_l16, 16, false, false)
MMA_KERNEL(mma_l16_special, 16, true, false)
MMA_KERNEL(mma_l8, 8, false, false)
MMA_KERNEL(mma_l8_special, 8, true, false)
MMA_KERNEL(mma_l4, 4, false, false)
MMA_KERNEL(mma_l4_special, 4, true, false)
MMA_KERNEL(mma_int8, 32, false, true)
MMA_KERNEL(mma_int8_k16, 16, false, true)

// Single-bit mma (.b1, one bit per uint8 container element): popc(a AND b) or popc(a XOR b).
#define MMA_B1_KERNEL(NAME, BITOP)                                                                 \
  extern "C" __global__ void __launch_bounds__(256)                                                \
      NAME(const int* ATs, const int* ATe, const int* Bs, const int* Be, const void* C, void* D,   \
           int M, int N, int K, long long sA, long long sB, long long sC, int F, int e_zero,       \
           int mode, int satf, int per_ins, int sched) {                                           \
    mma_tile<32, false, true, BITOP>(ATs, ATe, Bs, Be, C, D, M, N, K, sA, sB, sC, F, e_zero, mode, \
                                     satf, per_ins, sched);                                        \
  }

MMA_B1_KERNEL(mma_b1_and, 1)
MMA_B1_KERNEL(mma_b1_xor, 2)

// ---- f64 (DMMA): a chain of binary64 FMAs with the H200's NaN payloads ---------------------
// d = c; for k = 0, 1, ..., K-1: d = RN(a_k b_k + d) (fma: one IEEE binary64 rounding). At each
// step (precision/tensorcore/dmma_nan.py, recorded on the H200): if any of (b_k, d, a_k) is a
// NaN, d becomes the first NaN in that order with the quiet bit set; otherwise an invalid FMA
// (Inf*0, Inf - Inf: the only way to a NaN without a NaN operand) gives 0xFFF8000000000000.
__device__ __forceinline__ double quieted(double x) {
  return __longlong_as_double(__double_as_longlong(x) | (1ll << 51));
}
__device__ __forceinline__ double dmma_step(double a, double b, double d) {
  if (isnan(b)) return quieted(b);
  if (isnan(d)) return quieted(d);
  if (isnan(a)) return quieted(a);
  const double r = fma(a, b, d);
  return isnan(r) ? __longlong_as_double((long long)0xFFF8000000000000ull) : r;
}

#define F64_TILE 16
// A [R or 1, M, K], B [R or 1, K, N] (batch strides sA, sB: 0 when broadcast), C/D [R, M, N].
extern "C" __global__ void __launch_bounds__(F64_TILE* F64_TILE)
    mma_f64(const double* __restrict__ A, const double* __restrict__ B,
            const double* __restrict__ C, double* __restrict__ D, int M, int N, int K, long long sA,
            long long sB, long long sC) {
  __shared__ double As[F64_TILE][F64_TILE + 1];
  __shared__ double Bs[F64_TILE][F64_TILE + 1];
  const int z = blockIdx.z, tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * F64_TILE + ty, col = blockIdx.x * F64_TILE + tx;
  A += z * sA;
  B += z * sB;
  const bool inside = row < M && col < N;
  double d = inside ? C[z * sC + (long long)row * N + col] : 0.0;
  for (int k0 = 0; k0 < K; k0 += F64_TILE) {
    const int ka = k0 + tx, kb = k0 + ty;
    As[ty][tx] = (row < M && ka < K) ? A[(long long)row * K + ka] : 0.0;
    Bs[ty][tx] = (kb < K && col < N) ? B[(long long)kb * N + col] : 0.0;
    __syncthreads();
    const int kn = min(F64_TILE, K - k0);
    for (int kk = 0; kk < kn; ++kk) d = dmma_step(As[ty][kk], Bs[kk][tx], d);
    __syncthreads();
  }
  if (inside) D[z * sC + (long long)row * N + col] = d;
}
