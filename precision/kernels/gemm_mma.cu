// GEMM kernels on mma.sync (sm_90): plain and satf for e4m3/e5m2/int8, and the satf kernels
// (fast launch + per-step clamp) for f16/bf16/tf32, which the wgmma satf path of
// gemm_wgmma.cu falls back to when a result is not finite. The f16/bf16/tf32 plain and
// corrected GEMMs run on wgmma (gemm_wgmma.cu).
//
// Numerical contract (mirrored by precision/gemm/schedule.py, replayed by the emulator):
//  * A (M x K) and B (K x N) are fp32, row-major, M % BM == N % BN == K % BK == 0 (the host
//    zero-pads). Each thread reads fp32 values from shared memory and rounds them in registers
//    ("load with operation"): no pre-pass over global memory.
//  * Input rounding: f16/bf16 RNE (cvt.rn), tf32 RNE (integer bit trick, no ftz), e4m3/e5m2
//    RNE with satfinite (|x| > MAX_NORM -> +-MAX_NORM), int8 RNE then clamp to [-128, 127].
//  * k-slot permutation: inside one instruction's k-range the thread with lane%4 == q holds the
//    physical k's q, q+4, q+8, ... (conflict-free scalar shared loads). The slot->k map is
//    declared as Schedule.k_perm; the emulator applies the same permutation.
//  * All fp32 CUDA-core arithmetic uses __fadd_rn/__fmul_rn (never contracted to FMA); built
//    with nvcc, -ftz=false, -fmad=false: subnormals are kept.
//  * plain:    acc = mma(A, B, acc) chained over k in increasing k-blocks.
//  * satf:     after every mma: +Inf -> +FLT_MAX, -Inf -> -FLT_MAX, NaN -> +0 (software; int8
//              uses the hardware .satfinite on s32). Floating-point satf runs in two launches:
//              gemm_satf_* computes the plain chain and sets *flag when any final accumulator
//              is not finite; gemm_satfstrict_* then returns at once if *flag == 0 and else
//              recomputes everything with the clamp after every mma. Equal to clamping always:
//              a chain whose every step stays finite is unchanged by the clamp, and a step with
//              a non-finite c yields a non-finite d (Inf + finite = Inf, NaN propagates), so a
//              non-finite intermediate always leaves a non-finite final value and the flag.
#include <cuda_fp8.h>

#include "common.cuh"
#include "mma_sync.cuh"

namespace prec {

using namespace pk;

enum Mode { PLAIN = 0, SATF = 1, SATF_STRICT = 2 };

constexpr int BM = 128, BN = 128, BK = 32, STAGES = 3, NTHREADS = 256;
constexpr int WM = 64, WN = 32;           // warp tile; warps laid out 2 (M) x 4 (N)
constexpr int MT = WM / 16, NT = WN / 8;  // m16 and n8 tiles per warp
constexpr int LDA = BK + 4;               // floats; 36 = 4 mod 32 -> conflict-free A reads
constexpr int LDB = BN + 8;               // floats; 136 = 8 mod 32 -> conflict-free B reads
constexpr int SMEM_A = BM * LDA, SMEM_B = BK * LDB;

// k of one mma.sync instruction: m16n8k16 (f16, bf16), m16n8k8 (tf32), m16n8k32 (8-bit).
template <int FMT>
struct Traits {
  static constexpr int KI = FMT == TF32 ? 8 : (FMT == F16 || FMT == BF16) ? 16 : 32;
};

// ---- packing of four rounded 8-bit values into one mma operand register ---------------
template <int FMT>
__device__ __forceinline__ uint32_t pack4(const float* v);
template <>
__device__ __forceinline__ uint32_t pack4<E4M3>(const float* v) {
  uint32_t lo = __nv_cvt_float2_to_fp8x2(make_float2(v[0], v[1]), __NV_SATFINITE, __NV_E4M3);
  uint32_t hi = __nv_cvt_float2_to_fp8x2(make_float2(v[2], v[3]), __NV_SATFINITE, __NV_E4M3);
  return (lo & 0xffffu) | (hi << 16);
}
template <>
__device__ __forceinline__ uint32_t pack4<E5M2>(const float* v) {
  uint32_t lo = __nv_cvt_float2_to_fp8x2(make_float2(v[0], v[1]), __NV_SATFINITE, __NV_E5M2);
  uint32_t hi = __nv_cvt_float2_to_fp8x2(make_float2(v[2], v[3]), __NV_SATFINITE, __NV_E5M2);
  return (lo & 0xffffu) | (hi << 16);
}
template <>
__device__ __forceinline__ uint32_t pack4<S8>(const float* v) {
  uint32_t r = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    int q = __float2int_rn(v[i]);
    q = min(max(q, -128), 127);
    r |= (uint32_t(q) & 0xffu) << (8 * i);
  }
  return r;
}

// Operand registers from the KI/4 = 8 values x[j] = M[row][k0 + q + 4j] (two rows for A) of
// an 8-bit format (the register path serves only fp8/int8): slots 4q+i+16h <- j = i+4h.
template <int FMT>
__device__ __forceinline__ void make_a(uint32_t (&a)[4], const float* x0, const float* x1) {
  static_assert(FMT == E4M3 || FMT == E5M2 || FMT == S8, "make_a: 8-bit formats only");
  a[0] = pack4<FMT>(x0);
  a[1] = pack4<FMT>(x1);
  a[2] = pack4<FMT>(x0 + 4);
  a[3] = pack4<FMT>(x1 + 4);
}

template <int FMT>
__device__ __forceinline__ void make_b(uint32_t (&b)[2], const float* y) {
  static_assert(FMT == E4M3 || FMT == E5M2 || FMT == S8, "make_b: 8-bit formats only");
  b[0] = pack4<FMT>(y);
  b[1] = pack4<FMT>(y + 4);
}

// ---- the mma instructions (wrappers: mma_sync.cuh) ------------------------------------------
template <int FMT, bool SAT>
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2],
                                    const float (&c)[4]) {
  if constexpr (FMT == F16) {
    mma_m16n8k16_f32_f16(d, a, b, c);
  } else if constexpr (FMT == BF16) {
    mma_m16n8k16_f32_bf16(d, a, b, c);
  } else if constexpr (FMT == TF32) {
    mma_m16n8k8_f32_tf32(d, a, b, c);
  } else if constexpr (FMT == E4M3) {
    mma_m16n8k32_f32_e4m3(d, a, b, c);
  } else if constexpr (FMT == E5M2) {
    mma_m16n8k32_f32_e5m2(d, a, b, c);
  } else {  // S8: accumulators hold s32 bit patterns in float registers
    const uint32_t (&ci)[4] = reinterpret_cast<const uint32_t (&)[4]>(c);
    uint32_t (&di)[4] = reinterpret_cast<uint32_t (&)[4]>(d);
    if constexpr (SAT) {
      mma_m16n8k32_s32_s8_satfinite(di, a, b, ci);
    } else {
      mma_m16n8k32_s32_s8(di, a, b, ci);
    }
  }
}

// Floating-point satf: +Inf -> +FLT_MAX, -Inf -> -FLT_MAX, NaN -> +0.
__device__ __forceinline__ float satf(float v) {
  return isnan(v) ? 0.0f : fminf(fmaxf(v, -3.402823466e38f), 3.402823466e38f);
}

// Copy the fp32 tiles A[bm:bm+BM, k0:k0+BK] and B[k0:k0+BK, bn:bn+BN] into one stage
// (row strides LA, LB floats) with NTH threads.
template <int LA = LDA, int LB = LDB, int NTH = NTHREADS>
__device__ __forceinline__ void load_stage(float* sA, float* sB, const float* A, const float* B,
                                           int K, int N, int bm, int bn, int k0, int tid) {
#pragma unroll
  for (int i = 0; i < (BM * BK / 4) / NTH; ++i) {
    int c = tid + i * NTH;
    int row = c / (BK / 4), col = (c % (BK / 4)) * 4;
    cp_async16(smem_u32(sA + row * LA + col), A + size_t(bm + row) * K + k0 + col);
  }
#pragma unroll
  for (int i = 0; i < (BK * BN / 4) / NTH; ++i) {
    int c = tid + i * NTH;
    int row = c / (BN / 4), col = (c % (BN / 4)) * 4;
    cp_async16(smem_u32(sB + row * LB + col), B + size_t(k0 + row) * N + bn + col);
  }
}

template <int MT>
__device__ __forceinline__ void zero_acc(float (&acc)[MT][NT][4]) {
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[i][j][r] = 0.0f;
}

// Flag (floating-point satf fast launch) and epilogue of a warp tile at (row0, col0):
// D[row, col..col+1] from c0,c1 (row g) and c2,c3 (row g+8).
template <int FMT, int MODE, int MT>
__device__ __forceinline__ void finish(float (&acc)[MT][NT][4], float* __restrict__ D, int N,
                                       int row0, int col0, int lane, int* flag) {
  const int g = lane >> 2, q = lane & 3;
  if constexpr (MODE == SATF && FMT != S8) {
    bool bad = false;
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int r = 0; r < 4; ++r) bad |= !isfinite(acc[i][j][r]);
    if (__any_sync(0xffffffffu, bad) && lane == 0) atomicOr(flag, 1);
  }
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      float v[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        if constexpr (FMT == S8) {
          v[r] = __int2float_rn(__float_as_int(acc[i][j][r]));
        } else {
          v[r] = acc[i][j][r];
        }
      }
      int row = row0 + i * 16 + g, col = col0 + j * 8 + 2 * q;
      *reinterpret_cast<float2*>(D + size_t(row) * N + col) = make_float2(v[0], v[1]);
      *reinterpret_cast<float2*>(D + size_t(row + 8) * N + col) = make_float2(v[2], v[3]);
    }
}

// ---- converted-tile path (f16, bf16, tf32) ----------------------------------------------
// The fp32 tiles arrive by cp.async in CVT_STAGES staging buffers. Once per CTA tile, each
// element is rounded and stored as a 16-bit (f16/bf16) or 32-bit (tf32) operand tile in shared
// memory; warps then feed mma.sync through ldmatrix. The conversion stores each k at the
// column of its k-slot (Schedule.k_perm of the mma.sync kernels: f16/bf16 slot 2q+e+8h <- k =
// q+4e+8h; tf32 slot = k). Conversion of tile kt+1 overlaps the MMAs of tile kt
// (double-buffered operand tiles, one barrier per k-tile). 16-bit: 108.5 KiB (two CTAs per
// SM); tf32: one CTA per SM. launch.py's smem_bytes mirrors this.
constexpr int CVT_STAGES = 2;
constexpr int CLDA = BK + 4;  // fp32 staging: A [BM][36], B [BK][132] (conflict-free float4)
constexpr int CLDB = BN + 4;
constexpr int CSTAGE = BM * CLDA + BK * CLDB;  // floats per staging stage
constexpr int H_LDA = BK + 8;  // 16-bit operand tiles: A [BM][40], B [BK][136] (halves)
constexpr int H_LDB = BN + 8;
constexpr int H_A = BM * H_LDA, H_B = BK * H_LDB;  // halves
constexpr int T_LD = BK + 4;  // tf32 operand tiles: A [BM][36], B^T [BN][36] (words)
constexpr int T_A = BM * T_LD, T_B = BN * T_LD;  // words

__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const void* p) {
  uint32_t s = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
}
__device__ __forceinline__ void ldsm_x4_t(uint32_t (&r)[4], const void* p) {
  uint32_t s = static_cast<uint32_t>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
}

// hi (and lo) of four fp32 values, exactly as the register path computes them.
// Four fp32 values rounded to the operand format: tf32 one word each, f16/bf16 two packed
// pairs in hi[0], hi[1].
template <int FMT>
__device__ __forceinline__ void round4(const float4 v, uint32_t (&hi)[4]) {
  if constexpr (FMT == TF32) {
    hi[0] = tf32_rne_bits(v.x);
    hi[1] = tf32_rne_bits(v.y);
    hi[2] = tf32_rne_bits(v.z);
    hi[3] = tf32_rne_bits(v.w);
  } else {
    hi[0] = pack2<FMT>(v.x, v.y);
    hi[1] = pack2<FMT>(v.z, v.w);
  }
}

// Round one fp32 staging stage into the operand tiles oh.
template <int FMT>
__device__ __forceinline__ void convert_stage(const float* st, uint32_t* oh, int tid) {
  constexpr int NTH = NTHREADS;
  const float* sA = st;
  const float* sB = st + BM * CLDA;
  if constexpr (FMT == TF32) {
    uint32_t* hA = oh;
    uint32_t* hB = oh + T_A;
#pragma unroll
    for (int i = 0; i < (BM * BK / 4) / NTH; ++i) {
      int c = tid + i * NTH;
      int row = c / (BK / 4), col = (c % (BK / 4)) * 4;
      float4 v = *reinterpret_cast<const float4*>(sA + row * CLDA + col);
      uint32_t h[4];
      round4<FMT>(v, h);
      *reinterpret_cast<uint4*>(hA + row * T_LD + col) = make_uint4(h[0], h[1], h[2], h[3]);
    }
#pragma unroll
    for (int i = 0; i < (BK * BN / 4) / NTH; ++i) {  // B stored transposed: [n][k]
      int c = tid + i * NTH;
      int k = c % BK, n = (c / BK) * 4;
      float4 v = *reinterpret_cast<const float4*>(sB + k * CLDB + n);
      uint32_t h[4];
      round4<FMT>(v, h);
#pragma unroll
      for (int e = 0; e < 4; ++e) hB[(n + e) * T_LD + k] = h[e];
    }
  } else {
    uint16_t* hA = reinterpret_cast<uint16_t*>(oh);
    uint16_t* hB = hA + H_A;
    // A: 8 consecutive k = 8h + r (r = q + 4e) go to columns 8h + 2q + e (Schedule.k_perm),
    // i.e. the u32 at column 8h + 2q packs (k = 8h + q, k = 8h + q + 4): the old register path.
#pragma unroll
    for (int i = 0; i < (BM * BK / 8) / NTH; ++i) {
      int c = tid + i * NTH;
      int row = c / (BK / 8), col = (c % (BK / 8)) * 8;
      float4 v0 = *reinterpret_cast<const float4*>(sA + row * CLDA + col);
      float4 v1 = *reinterpret_cast<const float4*>(sA + row * CLDA + col + 4);
      uint32_t h[4], h2[4];
      round4<FMT>(make_float4(v0.x, v1.x, v0.y, v1.y), h);
      round4<FMT>(make_float4(v0.z, v1.z, v0.w, v1.w), h2);
      *reinterpret_cast<uint4*>(hA + row * H_LDA + col) = make_uint4(h[0], h[1], h2[0], h2[1]);
    }
    // B: physical k row -> slot row (k & ~15) + 8h + 2q + e for k % 16 = 8h + 4e + q.
#pragma unroll
    for (int i = 0; i < (BK * BN / 4) / NTH; ++i) {
      int c = tid + i * NTH;
      int row = c / (BN / 4), col = (c % (BN / 4)) * 4;
      int kl = row & 15;
      int srow = (row & ~15) + (kl & 8) + 2 * (kl & 3) + ((kl >> 2) & 1);
      float4 v = *reinterpret_cast<const float4*>(sB + row * CLDB + col);
      uint32_t h[4];
      round4<FMT>(v, h);
      *reinterpret_cast<uint2*>(hB + srow * H_LDB + col) = make_uint2(h[0], h[1]);
    }
  }
}

// A fragments (MT m16 tiles) and B fragments (NT n8 tiles) of one instruction k-block kk.
template <int FMT, int MT>
__device__ __forceinline__ void load_frags(const uint32_t* o, int wm, int wn, int kk, int lane,
                                           uint32_t (&a)[MT][4], uint32_t (&b)[NT][2]) {
  if constexpr (FMT == TF32) {
    const uint32_t* oA = o;
    const uint32_t* oB = o + T_A;
#pragma unroll
    for (int i = 0; i < MT; ++i)
      ldsm_x4(a[i], oA + (wm + i * 16 + (lane & 15)) * T_LD + kk + (lane >> 4) * 4);
#pragma unroll
    for (int jp = 0; jp < NT / 2; ++jp) {
      uint32_t r[4];
      ldsm_x4(r, oB + (wn + jp * 16 + (lane & 7) + (lane >> 4) * 8) * T_LD + kk +
                     ((lane >> 3) & 1) * 4);
      b[2 * jp][0] = r[0];
      b[2 * jp][1] = r[1];
      b[2 * jp + 1][0] = r[2];
      b[2 * jp + 1][1] = r[3];
    }
  } else {
    const uint16_t* oA = reinterpret_cast<const uint16_t*>(o);
    const uint16_t* oB = oA + H_A;
#pragma unroll
    for (int i = 0; i < MT; ++i)
      ldsm_x4(a[i], oA + (wm + i * 16 + (lane & 15)) * H_LDA + kk + (lane >> 4) * 8);
#pragma unroll
    for (int jp = 0; jp < NT / 2; ++jp) {
      uint32_t r[4];
      ldsm_x4_t(r, oB + (kk + (lane & 7) + ((lane >> 3) & 1) * 8) * H_LDB + wn + jp * 16 +
                       (lane >> 4) * 8);
      b[2 * jp][0] = r[0];
      b[2 * jp][1] = r[1];
      b[2 * jp + 1][0] = r[2];
      b[2 * jp + 1][1] = r[3];
    }
  }
}

template <int FMT>
__host__ __device__ constexpr int cvt_part_words() {  // one operand tile pair (A and B), words
  return FMT == TF32 ? (T_A + T_B) : (H_A + H_B) / 2;
}

template <int FMT, int MODE>
__device__ __forceinline__ void gemm_body_cvt(const float* __restrict__ A,
                                              const float* __restrict__ B, float* __restrict__ D,
                                              int M, int N, int K, int* flag) {
  constexpr int KI = Traits<FMT>::KI;
  constexpr int S = CVT_STAGES;
  constexpr bool SAT = (MODE == SATF_STRICT);
  constexpr int PW = cvt_part_words<FMT>();
  if constexpr (MODE == SATF_STRICT) {
    if (*reinterpret_cast<volatile int*>(flag) == 0) return;  // fast launch was all finite
  }
  extern __shared__ float4 smem4[];
  float* stage = reinterpret_cast<float*>(smem4);
  uint32_t* ops = reinterpret_cast<uint32_t*>(stage + S * CSTAGE);  // [2 buffers][PW words]

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int wm = (warp / 4) * WM, wn = (warp % 4) * WN;
  const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
  const int KT = K / BK;

  float acc[MT][NT][4];
  zero_acc(acc);

#pragma unroll
  for (int s = 0; s < S; ++s) {
    if (s < KT) {
      float* st = stage + s * CSTAGE;
      load_stage<CLDA, CLDB>(st, st + BM * CLDA, A, B, K, N, bm, bn, s * BK, tid);
    }
    cp_async_commit();
  }
  cp_async_wait<S - 1>();
  __syncthreads();
  convert_stage<FMT>(stage, ops, tid);
  cp_async_wait<S - 2>();
  __syncthreads();

  for (int kt = 0; kt < KT; ++kt) {
    if (kt + S < KT) {
      float* st = stage + (kt % S) * CSTAGE;
      load_stage<CLDA, CLDB>(st, st + BM * CLDA, A, B, K, N, bm, bn, (kt + S) * BK, tid);
    }
    cp_async_commit();
    if (kt + 1 < KT) {
      convert_stage<FMT>(stage + ((kt + 1) % S) * CSTAGE, ops + ((kt + 1) & 1) * PW, tid);
    }
    const uint32_t* oh = ops + (kt & 1) * PW;
#pragma unroll
    for (int kk = 0; kk < BK; kk += KI) {
      uint32_t a[MT][4], b[NT][2];
      load_frags<FMT, MT>(oh, wm, wn, kk, lane, a, b);
#pragma unroll
      for (int j = 0; j < NT; ++j) {
#pragma unroll
        for (int i = 0; i < MT; ++i) {
          mma<FMT, false>(acc[i][j], a[i], b[j], acc[i][j]);
          if constexpr (SAT) {
#pragma unroll
            for (int r = 0; r < 4; ++r) acc[i][j][r] = satf(acc[i][j][r]);
          }
        }
      }
    }
    cp_async_wait<S - 2>();
    __syncthreads();
  }
  cp_async_wait<0>();
  finish<FMT, MODE>(acc, D, N, bm + wm, bn + wn, lane, flag);
}

template <int FMT, int MODE>
__device__ __forceinline__ void gemm_body(const float* __restrict__ A, const float* __restrict__ B,
                                          float* __restrict__ D, int M, int N, int K, int* flag) {
  constexpr int KI = Traits<FMT>::KI;
  constexpr int NV = KI / 4;  // values per thread per row per instruction
  constexpr bool SAT = (MODE == SATF_STRICT) || (MODE == SATF && FMT == S8);
  if constexpr (MODE == SATF_STRICT) {
    if (*reinterpret_cast<volatile int*>(flag) == 0) return;  // fast launch was all finite
  }
  extern __shared__ float4 smem4[];
  float* smem = reinterpret_cast<float*>(smem4);
  float* sA = smem;
  float* sB = smem + STAGES * SMEM_A;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, q = lane & 3;
  const int wm = (warp / 4) * WM, wn = (warp % 4) * WN;
  const int bm = blockIdx.y * BM, bn = blockIdx.x * BN;
  const int KT = K / BK;

  float acc[MT][NT][4];
  zero_acc(acc);

#pragma unroll
  for (int s = 0; s < STAGES - 1; ++s) {
    if (s < KT) load_stage(sA + s * SMEM_A, sB + s * SMEM_B, A, B, K, N, bm, bn, s * BK, tid);
    cp_async_commit();
  }

  for (int kt = 0; kt < KT; ++kt) {
    cp_async_wait<STAGES - 2>();
    __syncthreads();
    {
      int nk = kt + STAGES - 1;
      int st = nk % STAGES;
      if (nk < KT) load_stage(sA + st * SMEM_A, sB + st * SMEM_B, A, B, K, N, bm, bn, nk * BK, tid);
      cp_async_commit();
    }
    const float* a_s = sA + (kt % STAGES) * SMEM_A;
    const float* b_s = sB + (kt % STAGES) * SMEM_B;

#pragma unroll
    for (int kk = 0; kk < BK; kk += KI) {
      uint32_t a[MT][4];
#pragma unroll
      for (int i = 0; i < MT; ++i) {
        float x0[NV], x1[NV];
        const float* p0 = a_s + (wm + i * 16 + g) * LDA + kk + q;
        const float* p1 = p0 + 8 * LDA;
#pragma unroll
        for (int j = 0; j < NV; ++j) {
          x0[j] = p0[4 * j];
          x1[j] = p1[4 * j];
        }
        make_a<FMT>(a[i], x0, x1);
      }
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        uint32_t b[2];
        float y[NV];
        const float* p = b_s + (kk + q) * LDB + wn + j * 8 + g;
#pragma unroll
        for (int t = 0; t < NV; ++t) y[t] = p[4 * t * LDB];
        make_b<FMT>(b, y);
#pragma unroll
        for (int i = 0; i < MT; ++i) {
          mma<FMT, SAT>(acc[i][j], a[i], b, acc[i][j]);
          if constexpr (SAT && FMT != S8) {
#pragma unroll
            for (int r = 0; r < 4; ++r) acc[i][j][r] = satf(acc[i][j][r]);
          }
        }
      }
    }
  }
  cp_async_wait<0>();
  finish<FMT, MODE>(acc, D, N, bm + wm, bn + wn, lane, flag);
}

// f16/bf16/tf32: converted operand tiles + ldmatrix; fp8/int8: register conversion path.
template <int FMT, int MODE>
__device__ __forceinline__ void gemm_dispatch(const float* __restrict__ A,
                                              const float* __restrict__ B, float* __restrict__ D,
                                              int M, int N, int K, int* flag) {
  if constexpr (FMT == F16 || FMT == BF16 || FMT == TF32)
    gemm_body_cvt<FMT, MODE>(A, B, D, M, N, K, flag);
  else
    gemm_body<FMT, MODE>(A, B, D, M, N, K, flag);
}

}  // namespace prec

#define PREC_GEMM_KERNEL(NAME, FMT, MODE, MINB)                                                    \
  extern "C" __global__ void __launch_bounds__(prec::NTHREADS, MINB)                               \
      NAME(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ D, int M, \
           int N, int K, int* flag) {                                                              \
    prec::gemm_dispatch<FMT, MODE>(A, B, D, M, N, K, flag);                                        \
  }

PREC_GEMM_KERNEL(gemm_plain_e4m3, prec::E4M3, prec::PLAIN, 1)
PREC_GEMM_KERNEL(gemm_plain_e5m2, prec::E5M2, prec::PLAIN, 1)
PREC_GEMM_KERNEL(gemm_plain_int8, prec::S8, prec::PLAIN, 1)
PREC_GEMM_KERNEL(gemm_satf_f16, prec::F16, prec::SATF, 2)
PREC_GEMM_KERNEL(gemm_satf_bf16, prec::BF16, prec::SATF, 2)
PREC_GEMM_KERNEL(gemm_satf_tf32, prec::TF32, prec::SATF, 1)
PREC_GEMM_KERNEL(gemm_satf_e4m3, prec::E4M3, prec::SATF, 1)
PREC_GEMM_KERNEL(gemm_satf_e5m2, prec::E5M2, prec::SATF, 1)
PREC_GEMM_KERNEL(gemm_satf_int8, prec::S8, prec::SATF, 1)
PREC_GEMM_KERNEL(gemm_satfstrict_f16, prec::F16, prec::SATF_STRICT, 2)
PREC_GEMM_KERNEL(gemm_satfstrict_bf16, prec::BF16, prec::SATF_STRICT, 2)
PREC_GEMM_KERNEL(gemm_satfstrict_tf32, prec::TF32, prec::SATF_STRICT, 1)
PREC_GEMM_KERNEL(gemm_satfstrict_e4m3, prec::E4M3, prec::SATF_STRICT, 1)
PREC_GEMM_KERNEL(gemm_satfstrict_e5m2, prec::E5M2, prec::SATF_STRICT, 1)
