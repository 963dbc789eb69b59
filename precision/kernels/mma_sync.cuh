// The mma.sync instructions as inline-asm wrappers, one function per PTX instruction, used by
// both the GEMM kernels (precision/kernels/gemm_mma.cu) and the probe kernels that record what
// the instructions compute (precision/probe/cuda/mma_sync_probe.cu), so the probes test the
// very wrappers the GEMMs run. d = a * b + c; registers in the PTX fragment layouts of
// "Matrix fragments for mma.m16n8k*" (a: 4 x b32, b: 2 x b32). Self-contained (stdint only).
//
// Each wrapper is a template on ORDERED: false (the default, the GEMMs) lets the compiler
// schedule the instruction like any other expression; true (the probes) makes it `asm volatile`,
// issued exactly where and as often as written. fp32-accumulator instructions take c/d as float
// ("f" registers, the GEMMs) or as raw uint32_t bit patterns ("r" registers, the probes); the
// instruction is the same either way.
#pragma once
#include <stdint.h>

namespace pk {

// d = a * b + c with four 32-bit accumulator registers of type T held in constraint class R.
#define PK_MMA_SYNC_ACC4(NAME, PTX, T, R)                                                        \
  template <bool ORDERED = false>                                                                \
  __device__ __forceinline__ void NAME(T(&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2], \
                                       const T(&c)[4]) {                                         \
    if constexpr (ORDERED) {                                                                     \
      asm volatile(PTX " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"            \
                   : "=" R(d[0]), "=" R(d[1]), "=" R(d[2]), "=" R(d[3])                          \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), R(c[0]),  \
                     R(c[1]), R(c[2]), R(c[3]));                                                 \
    } else {                                                                                     \
      asm(PTX " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};\n"                     \
          : "=" R(d[0]), "=" R(d[1]), "=" R(d[2]), "=" R(d[3])                                   \
          : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), R(c[0]), R(c[1]),  \
            R(c[2]), R(c[3]));                                                                   \
    }                                                                                            \
  }

// fp32 accumulators: as float (the GEMMs) or as their bit patterns (the probes).
#define PK_MMA_SYNC_F32(NAME, PTX)        \
  PK_MMA_SYNC_ACC4(NAME, PTX, float, "f") \
  PK_MMA_SYNC_ACC4(NAME, PTX, uint32_t, "r")

PK_MMA_SYNC_F32(mma_m16n8k16_f32_f16, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")
PK_MMA_SYNC_F32(mma_m16n8k16_f32_bf16, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32")
PK_MMA_SYNC_F32(mma_m16n8k8_f32_tf32, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32")
PK_MMA_SYNC_F32(mma_m16n8k32_f32_e4m3, "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32")
PK_MMA_SYNC_F32(mma_m16n8k32_f32_e5m2, "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32")
// s32 accumulators (c, d: 4 x s32 bit patterns); satfinite clamps to [INT32_MIN, INT32_MAX].
PK_MMA_SYNC_ACC4(mma_m16n8k32_s32_s8, "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", uint32_t,
                 "r")
PK_MMA_SYNC_ACC4(mma_m16n8k32_s32_s8_satfinite,
                 "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32", uint32_t, "r")

#undef PK_MMA_SYNC_F32
#undef PK_MMA_SYNC_ACC4

// f16 accumulators (c, d: 2 x f16x2, element 2r in the low half of register r).
template <bool ORDERED = false>
__device__ __forceinline__ void mma_m16n8k16_f16_f16(uint32_t (&d)[2], const uint32_t (&a)[4],
                                                     const uint32_t (&b)[2],
                                                     const uint32_t (&c)[2]) {
  if constexpr (ORDERED) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, "
        "{%8,%9};\n"
        : "=r"(d[0]), "=r"(d[1])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, "
        "{%8,%9};\n"
        : "=r"(d[0]), "=r"(d[1])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(c[0]), "r"(c[1]));
  }
}

}  // namespace pk
