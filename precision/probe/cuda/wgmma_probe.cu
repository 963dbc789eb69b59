// wgmma probe kernels, which record what wgmma.mma_async computes (built and run by
// precision/probe/wgmma.py record; recordings in tests/data/sm90_wgmma). One warpgroup
// (128 threads) per 64x8 output tile executes one
// wgmma.mma_async m64n8k* instruction with A and B in shared memory (matrix descriptors,
// no swizzle), C preloaded into the accumulator registers and scale-d = 1.
// Operands travel as raw bits, so the host sees exactly what the tensor core was given and
// what it returned.
//
// Global layouts (per tile t), every row is 32 bytes for all four input types
// (16 x f16/bf16, 8 x tf32, 32 x e4m3/e5m2):
//   A  [T][64][32 bytes]  row-major (K-major)
//   Bt [T][8][32 bytes]   B transposed: row n holds B[:, n] (K-major)
//   C, D [T][64][8] uint32 (f32 bits), row-major.
//
// Shared-memory layout (no swizzle, K-major): core matrices of 8 rows x 16 bytes, each row
// 16 contiguous bytes; core matrix (row group rg, k chunk kc) at byte (rg*2 + kc)*128.
// So the k-direction core-matrix stride is 128 bytes and the m/n-direction one is 256 bytes.
// Which descriptor field (LBO or SBO) takes which stride is passed in (lbo, sbo) so that the
// host can validate the choice with exact small-integer data.
//
// Accumulator fragment (m64nN, f32, N = 8: 4 registers): warp w = tid/32, g = lane/4,
// t = lane%4: register i -> row 16w + g + 8*(i>>1), col 2t + (i&1).
//
// Compile with nvcc -arch=sm_90a -cubin.
#include <stdint.h>

__device__ __forceinline__ uint64_t make_desc(const void* smem_ptr, uint32_t lbo, uint32_t sbo) {
  const uint32_t addr = (uint32_t)__cvta_generic_to_shared(smem_ptr);
  uint64_t d = 0;
  d |= (uint64_t)((addr & 0x3FFFF) >> 4);
  d |= (uint64_t)((lbo & 0x3FFFF) >> 4) << 16;
  d |= (uint64_t)((sbo & 0x3FFFF) >> 4) << 32;
  // base offset 0 (bits 49-51), swizzle mode 0 = none (bits 62-63)
  return d;
}

#define WGMMA_F16STYLE(PTX)                                     \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n" PTX  \
               " {%0,%1,%2,%3}, %4, %5, p, 1, 1, 0, 0;\n}\n"    \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) \
               : "l"(da), "l"(db), "r"(1))
#define WGMMA_NOTRANS(PTX)                                      \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n" PTX  \
               " {%0,%1,%2,%3}, %4, %5, p, 1, 1;\n}\n"          \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) \
               : "l"(da), "l"(db), "r"(1))

#define PROBE(NAME, MMA)                                                                          \
  extern "C" __global__ void __launch_bounds__(128) NAME(                                         \
      const uint4* __restrict__ A, const uint4* __restrict__ Bt, const uint32_t* __restrict__ C,  \
      uint32_t* __restrict__ D, long long T, int lbo, int sbo) {                                  \
    __shared__ __align__(128) uint4 sa[128];                                                      \
    __shared__ __align__(128) uint4 sb[16];                                                       \
    const int tid = threadIdx.x;                                                                  \
    const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;                     \
    for (long long tile = blockIdx.x; tile < T; tile += gridDim.x) {                              \
      { /* piece tid: row = tid/2, chunk kc = tid%2 */                                            \
        const int row = tid >> 1, kc = tid & 1;                                                   \
        sa[((row >> 3) * 2 + kc) * 8 + (row & 7)] = A[tile * 128 + tid];                          \
        if (tid < 16) sb[kc * 8 + (row & 7)] = Bt[tile * 16 + tid];                               \
      }                                                                                           \
      float d[4];                                                                                 \
      _Pragma("unroll") for (int i = 0; i < 4; ++i) d[i] =                                        \
          __uint_as_float(C[tile * 512 + (16 * warp + g + 8 * (i >> 1)) * 8 + 2 * t4 + (i & 1)]); \
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");                              \
      __syncthreads();                                                                            \
      const uint64_t da = make_desc(sa, lbo, sbo), db = make_desc(sb, lbo, sbo);                  \
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");                                   \
      MMA;                                                                                        \
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");                            \
      asm volatile("wgmma.wait_group.sync.aligned 0;\n"                                           \
                   : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])::"memory");                   \
      _Pragma("unroll") for (int i = 0; i < 4; ++i)                                               \
          D[tile * 512 + (16 * warp + g + 8 * (i >> 1)) * 8 + 2 * t4 + (i & 1)] =                 \
              __float_as_uint(d[i]);                                                              \
      __syncthreads();                                                                            \
    }                                                                                             \
  }

PROBE(wgmma_f16_f32, WGMMA_F16STYLE("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16"))
PROBE(wgmma_bf16_f32, WGMMA_F16STYLE("wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16"))
PROBE(wgmma_tf32_f32, WGMMA_NOTRANS("wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32"))
PROBE(wgmma_e4m3_f32, WGMMA_NOTRANS("wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3"))
PROBE(wgmma_e5m2_f32, WGMMA_NOTRANS("wgmma.mma_async.sync.aligned.m64n8k32.f32.e5m2.e5m2"))

// ---- extras: f16 accumulators and integer (s32) accumulators ------------------------------
// Same shared-memory layout and descriptors as above; the accumulator travels as raw 32-bit
// registers. NREG = 4: s32 accumulator, C/D [T][64][8] uint32, register i -> row
// 16w + g + 8*(i>>1), col 2t + (i&1). NREG = 2: f16 accumulator (f16x2 registers), C/D
// [T][64][8] uint16 read as [T][64][4] uint32 words, register i -> row 16w + g + 8*i, word t
// (cols 2t in the low half, 2t+1 in the high half).

#define WGMMA_R4(PTX, TAIL)                                                                     \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n" PTX " {%0,%1,%2,%3}, %4, %5, p" TAIL \
               ";\n}\n"                                                                         \
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])                                 \
               : "l"(da), "l"(db), "r"(1))
#define WGMMA_R2(PTX, TAIL)                                                                        \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %4, 0;\n" PTX " {%0,%1}, %2, %3, p" TAIL ";\n}\n" \
               : "+r"(d[0]), "+r"(d[1])                                                            \
               : "l"(da), "l"(db), "r"(1))
#define WAIT_R4                                     \
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" \
               : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])::"memory")
#define WAIT_R2 \
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" : "+r"(d[0]), "+r"(d[1])::"memory")

__device__ __forceinline__ long long acc_word(long long tile, int nreg, int warp, int g, int t4,
                                              int i) {
  return nreg == 4 ? tile * 512 + (16 * warp + g + 8 * (i >> 1)) * 8 + 2 * t4 + (i & 1)
                   : tile * 256 + (16 * warp + g + 8 * i) * 4 + t4;
}

#define PROBE_REGS(NAME, NREG, MMA, WAIT)                                                        \
  extern "C" __global__ void __launch_bounds__(128) NAME(                                        \
      const uint4* __restrict__ A, const uint4* __restrict__ Bt, const uint32_t* __restrict__ C, \
      uint32_t* __restrict__ D, long long T, int lbo, int sbo) {                                 \
    __shared__ __align__(128) uint4 sa[128];                                                     \
    __shared__ __align__(128) uint4 sb[16];                                                      \
    const int tid = threadIdx.x;                                                                 \
    const int warp = tid >> 5, lane = tid & 31, g = lane >> 2, t4 = lane & 3;                    \
    for (long long tile = blockIdx.x; tile < T; tile += gridDim.x) {                             \
      {                                                                                          \
        const int row = tid >> 1, kc = tid & 1;                                                  \
        sa[((row >> 3) * 2 + kc) * 8 + (row & 7)] = A[tile * 128 + tid];                         \
        if (tid < 16) sb[kc * 8 + (row & 7)] = Bt[tile * 16 + tid];                              \
      }                                                                                          \
      uint32_t d[NREG];                                                                          \
      _Pragma("unroll") for (int i = 0; i < NREG; ++i) d[i] =                                    \
          C[acc_word(tile, NREG, warp, g, t4, i)];                                               \
      asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");                             \
      __syncthreads();                                                                           \
      const uint64_t da = make_desc(sa, lbo, sbo), db = make_desc(sb, lbo, sbo);                 \
      asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");                                  \
      MMA;                                                                                       \
      asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");                           \
      WAIT;                                                                                      \
      _Pragma("unroll") for (int i = 0; i < NREG; ++i) D[acc_word(tile, NREG, warp, g, t4, i)] = \
          d[i];                                                                                  \
      __syncthreads();                                                                           \
    }                                                                                            \
  }

PROBE_REGS(wgmma_f16_f16, 2,
           WGMMA_R2("wgmma.mma_async.sync.aligned.m64n8k16.f16.f16.f16", ", 1, 1, 0, 0"), WAIT_R2)
PROBE_REGS(wgmma_e4m3_f16, 2,
           WGMMA_R2("wgmma.mma_async.sync.aligned.m64n8k32.f16.e4m3.e4m3", ", 1, 1"), WAIT_R2)
PROBE_REGS(wgmma_e5m2_f16, 2,
           WGMMA_R2("wgmma.mma_async.sync.aligned.m64n8k32.f16.e5m2.e5m2", ", 1, 1"), WAIT_R2)
PROBE_REGS(wgmma_e4m3e5m2_f16, 2,
           WGMMA_R2("wgmma.mma_async.sync.aligned.m64n8k32.f16.e4m3.e5m2", ", 1, 1"), WAIT_R2)
PROBE_REGS(wgmma_e5m2e4m3_f16, 2,
           WGMMA_R2("wgmma.mma_async.sync.aligned.m64n8k32.f16.e5m2.e4m3", ", 1, 1"), WAIT_R2)
PROBE_REGS(wgmma_e4m3e5m2_f32, 4,
           WGMMA_R4("wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e5m2", ", 1, 1"), WAIT_R4)
PROBE_REGS(wgmma_e5m2e4m3_f32, 4,
           WGMMA_R4("wgmma.mma_async.sync.aligned.m64n8k32.f32.e5m2.e4m3", ", 1, 1"), WAIT_R4)
PROBE_REGS(wgmma_s8_s32, 4, WGMMA_R4("wgmma.mma_async.sync.aligned.m64n8k32.s32.s8.s8", ""),
           WAIT_R4)
PROBE_REGS(wgmma_u8_s32, 4, WGMMA_R4("wgmma.mma_async.sync.aligned.m64n8k32.s32.u8.u8", ""),
           WAIT_R4)
