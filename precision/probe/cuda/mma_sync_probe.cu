// Probe kernels that record what each mma.sync instruction computes (built and run by
// precision/probe/capture.py, `precision capture`; the recordings under tests/data are the
// evidence the emulator is checked against). Each warp executes mma.sync instructions on one
// 16x8 output tile per tile index. Operands travel as raw bit patterns, so the host sees
// exactly what the tensor core was given and what it returned.
//
// Global layouts (row-major, per tile t):  A [T][16][K]  B [T][K][8]  C, D [T][16][8]
// K = k * nchain; with nchain > 1 the instructions are chained along k in increasing order,
// the accumulator registers of one instruction being the C operand of the next.
//
// Fragment layouts follow the PTX ISA ("Matrix fragments for mma.m16n8k*"):
//   g = lane >> 2 (groupID), t = lane & 3 (threadID_in_group).
//   C/D (f32, s32: 4 regs; f16: 2 regs of f16x2, element 2r in the low half):
//     element i in 0..3: row = g + 8*(i>=2), col = 2t + (i&1).
//   16-bit A (m16n8k16), 4 regs of x2, element i in 0..7:
//     row = g + 8*((i>>1)&1), col = 2t + (i&1) + 8*(i>=4).
//   16-bit B, 2 regs of x2, element i in 0..3: k = 2t + (i&1) + 8*(i>=2), n = g.
//   tf32 A (m16n8k8), 4 regs: i in 0..3: row = g + 8*(i&1), col = t + 4*(i>=2).
//   tf32 B, 2 regs: i in 0..1: k = t + 4*i, n = g.
//   8-bit A (m16n8k32), 4 regs of x4, element i in 0..15:
//     row = g + 8*((i>>2)&1), col = 4t + (i&3) + 16*(i>=8).
//   8-bit B, 2 regs of x4, element i in 0..7: k = 4t + (i&3) + 16*(i>=4), n = g.
//
// The instructions themselves are the wrappers of precision/kernels/mma_sync.cuh, the ones the
// GEMM kernels use (here ORDERED = true: asm volatile, accumulators as raw bits). Compile with nvcc
// -arch=sm_90 -cubin -I precision/kernels (no -ftz: nothing here does CUDA-core float math).
#include <stdint.h>

#include "mma_sync.cuh"

#define TILE_LOOP                                                                                 \
  const int lane = threadIdx.x & 31;                                                              \
  const int g = lane >> 2, t4 = lane & 3;                                                         \
  const long long warps = (long long)gridDim.x * (blockDim.x >> 5);                               \
  for (long long tile = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); tile < T; \
       tile += warps)

// ---- accumulators -------------------------------------------------------------------------
__device__ __forceinline__ void load_c32(const uint32_t* C, int g, int t4, uint32_t c[4]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) c[i] = C[(g + 8 * (i >> 1)) * 8 + 2 * t4 + (i & 1)];
}
__device__ __forceinline__ void store_d32(uint32_t* D, int g, int t4, const uint32_t d[4]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) D[(g + 8 * (i >> 1)) * 8 + 2 * t4 + (i & 1)] = d[i];
}
__device__ __forceinline__ void load_c16(const uint16_t* C, int g, int t4, uint32_t c[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const uint16_t* p = C + (g + 8 * r) * 8 + 2 * t4;
    c[r] = (uint32_t)p[0] | ((uint32_t)p[1] << 16);
  }
}
__device__ __forceinline__ void store_d16(uint16_t* D, int g, int t4, const uint32_t d[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    uint16_t* p = D + (g + 8 * r) * 8 + 2 * t4;
    p[0] = (uint16_t)(d[r] & 0xFFFFu);
    p[1] = (uint16_t)(d[r] >> 16);
  }
}

// ---- 16-bit operands (f16, bf16), m16n8k16; k0 = first k column of this instruction ------
__device__ __forceinline__ void load_a16(const uint16_t* A, int K, int k0, int g, int t4,
                                         uint32_t a[4]) {
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int row = g + 8 * (r & 1), col = k0 + 2 * t4 + 8 * (r >> 1);
    const uint16_t* p = A + row * K + col;
    a[r] = (uint32_t)p[0] | ((uint32_t)p[1] << 16);
  }
}
__device__ __forceinline__ void load_b16(const uint16_t* B, int k0, int g, int t4, uint32_t b[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int k = k0 + 2 * t4 + 8 * r;
    b[r] = (uint32_t)B[k * 8 + g] | ((uint32_t)B[(k + 1) * 8 + g] << 16);
  }
}

// ---- tf32 operands, m16n8k8 ----------------------------------------------------------------
__device__ __forceinline__ void load_atf(const uint32_t* A, int K, int k0, int g, int t4,
                                         uint32_t a[4]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = A[(g + 8 * (i & 1)) * K + k0 + t4 + 4 * (i >> 1)];
}
__device__ __forceinline__ void load_btf(const uint32_t* B, int k0, int g, int t4, uint32_t b[2]) {
#pragma unroll
  for (int i = 0; i < 2; ++i) b[i] = B[(k0 + t4 + 4 * i) * 8 + g];
}

// ---- 8-bit operands (e4m3, e5m2, s8), m16n8k32 ---------------------------------------------
__device__ __forceinline__ void load_a8(const uint8_t* A, int K, int k0, int g, int t4,
                                        uint32_t a[4]) {
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const int row = g + 8 * (r & 1), col = k0 + 4 * t4 + 16 * (r >> 1);
    const uint8_t* p = A + row * K + col;
    a[r] = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
  }
}
__device__ __forceinline__ void load_b8(const uint8_t* B, int k0, int g, int t4, uint32_t b[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int k = k0 + 4 * t4 + 16 * r;
    b[r] = (uint32_t)B[k * 8 + g] | ((uint32_t)B[(k + 1) * 8 + g] << 8) |
           ((uint32_t)B[(k + 2) * 8 + g] << 16) | ((uint32_t)B[(k + 3) * 8 + g] << 24);
  }
}

// One kernel per instruction. Generic 32-bit-accumulator body:
#define PROBE_ACC32(NAME, TIN, KI, LOADA, LOADB, MMA)                                       \
  extern "C" __global__ void NAME(const TIN* __restrict__ A, const TIN* __restrict__ B,     \
                                  const uint32_t* __restrict__ C, uint32_t* __restrict__ D, \
                                  long long T, int nchain) {                                \
    const int K = KI * nchain;                                                              \
    TILE_LOOP {                                                                             \
      const TIN* At = A + tile * 16 * K;                                                    \
      const TIN* Bt = B + tile * K * 8;                                                     \
      uint32_t d[4], a[4], b[2];                                                            \
      load_c32(C + tile * 128, g, t4, d);                                                   \
      for (int s = 0; s < nchain; ++s) {                                                    \
        LOADA(At, K, s * KI, g, t4, a);                                                     \
        LOADB(Bt, s * KI, g, t4, b);                                                        \
        MMA<true>(d, a, b, d);                                                              \
      }                                                                                     \
      store_d32(D + tile * 128, g, t4, d);                                                  \
    }                                                                                       \
  }

PROBE_ACC32(probe_f16_f32, uint16_t, 16, load_a16, load_b16, pk::mma_m16n8k16_f32_f16)
PROBE_ACC32(probe_bf16_f32, uint16_t, 16, load_a16, load_b16, pk::mma_m16n8k16_f32_bf16)
PROBE_ACC32(probe_tf32_f32, uint32_t, 8, load_atf, load_btf, pk::mma_m16n8k8_f32_tf32)
PROBE_ACC32(probe_e4m3_f32, uint8_t, 32, load_a8, load_b8, pk::mma_m16n8k32_f32_e4m3)
PROBE_ACC32(probe_e5m2_f32, uint8_t, 32, load_a8, load_b8, pk::mma_m16n8k32_f32_e5m2)
PROBE_ACC32(probe_s8_s32, uint8_t, 32, load_a8, load_b8, pk::mma_m16n8k32_s32_s8)
PROBE_ACC32(probe_s8_s32_satfinite, uint8_t, 32, load_a8, load_b8,
            pk::mma_m16n8k32_s32_s8_satfinite)

// f16 accumulator: C and D are 2 registers of f16x2.
extern "C" __global__ void probe_f16_f16(const uint16_t* __restrict__ A,
                                         const uint16_t* __restrict__ B,
                                         const uint16_t* __restrict__ C, uint16_t* __restrict__ D,
                                         long long T, int nchain) {
  const int K = 16 * nchain;
  TILE_LOOP {
    const uint16_t* At = A + tile * 16 * K;
    const uint16_t* Bt = B + tile * K * 8;
    uint32_t d[2], a[4], b[2];
    load_c16(C + tile * 128, g, t4, d);
    for (int s = 0; s < nchain; ++s) {
      load_a16(At, K, s * 16, g, t4, a);
      load_b16(Bt, s * 16, g, t4, b);
      pk::mma_m16n8k16_f16_f16<true>(d, a, b, d);
    }
    store_d16(D + tile * 128, g, t4, d);
  }
}
