// Helpers shared by the GEMM kernels (gemm_mma.cu, gemm_wgmma.cu, ozaki2_gemm.cu): the input
// formats, their rounding (bit-exact, no FTZ: the files are built with nvcc -ftz=false) and
// cp.async.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

namespace pk {

enum Fmt { F16 = 0, BF16 = 1, TF32 = 2, E4M3 = 3, E5M2 = 4, S8 = 5 };

// fp32 bits rounded to nearest even at bit 13 (tf32: 10 fraction bits), low 13 bits cleared;
// Inf/NaN unchanged, subnormals rounded like normals (no flush).
__device__ __forceinline__ uint32_t tf32_rne_bits(float x) {
  uint32_t u = __float_as_uint(x);
  if ((u & 0x7f800000u) == 0x7f800000u) return u;  // Inf / NaN unchanged
  u += 0x0fffu + ((u >> 13) & 1u);                 // round to nearest even at bit 13
  return u & 0xffffe000u;
}

// The same bits as tf32_rne_bits for every input that is not a NaN (NaN stays a NaN), in one
// cvt.rn.tf32.f32 (sm_90 and later; checked exhaustively over all 2^32 inputs on the H200 by
// precision.probe.tf32_cvt).
__device__ __forceinline__ uint32_t tf32_cvt_rn_bits(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  uint32_t r;
  asm("cvt.rn.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
#else
  return tf32_rne_bits(x);
#endif
}

// Two fp32 values rounded (cvt.rn) and packed, the first in the low 16 bits.
template <int FMT>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  static_assert(FMT == F16 || FMT == BF16, "pack2: f16 or bf16");
  if constexpr (FMT == F16) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  } else {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
  }
}

// The two values of a pack2 word, widened exactly to fp32 (first = low 16 bits).
template <int FMT>
__device__ __forceinline__ float2 unpack2(uint32_t u) {
  static_assert(FMT == F16 || FMT == BF16, "unpack2: f16 or bf16");
  if constexpr (FMT == F16)
    return __half22float2(*reinterpret_cast<__half2*>(&u));
  else
    return __bfloat1622float2(*reinterpret_cast<__nv_bfloat162*>(&u));
}

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// 16 bytes global -> shared, bypassing L1 (cp.async.cg); s is a shared-window address.
__device__ __forceinline__ void cp_async16(uint32_t s, const void* g) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(g));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// CTA tile (tm, tn) of blockIdx.x in an mt x nt grid of output tiles, walked GROUP M-tiles at a
// time (consecutive CTAs share B tiles while a group of A rows stays in L2).
template <int GROUP>
__device__ __forceinline__ void raster_tile(int mt, int nt, int& tm, int& tn) {
  const int pid = blockIdx.x, per_group = GROUP * nt;
  const int first = (pid / per_group) * GROUP;
  const int gsize = min(mt - first, GROUP);
  const int in = pid % per_group;
  tm = first + in % gsize;
  tn = in / gsize;
}

}  // namespace pk
