// INT8 tensor-core GEMM with a fused modular epilogue for Ozaki scheme II (sm_90a, wgmma).
//
// oz2_gemm_mod: for every modulus l (blockIdx.z) and every output element,
//   C = sum_k A_l[i][k] * Bt_l[j][k]     exact in int32 (|A|, |Bt| <= 128, Kp <= 131071:
//                                        |C| <= 131071 * 2^14 < 2^31)
//   R_l[i][j] = C mod m_l, the symmetric residue in [-floor(m/2), ceil(m/2) - 1], as int8
//                                        (m = moduli[l] in [2, 256], so R fits int8;
//                                        Ozaki-II uses 173..256).
// The int32 accumulators never leave the registers: the epilogue reduces them and writes one
// byte per element, instead of 4 bytes to DRAM that a second kernel reads back.
//
// Layouts (row-major, one byte per element, l-th matrix at base + l * stride bytes):
//   A  M x Kp (K contiguous), Bt Nbp x Kp (B transposed, K contiguous), R M x Nbp.
//   Requirements (the launcher, precision/gemm/ozaki_gemm_launch.py, checks them): Kp, Nbp and
//   the three strides multiples of 16 (TMA row pitch, 16-byte stores), Kp <= 131071, any M.
//   Tiles that overhang M, Nbp or Kp are read as zeros by the TMA unit (out-of-bounds fill),
//   which is exact, and their rows/columns beyond M / Nbp are not stored.
//
// Structure: 128 x 256 CTA tile, k-stage of 128 int8 (128 bytes per row), OZ_STAGES-slot ring.
//   384 threads: warpgroup 0 is the producer (one thread issues the TMA copies of A's 128 x 128
//   and Bt's 256 x 128 box per stage, 128-byte swizzle, completing on the slot's FULL
//   mbarrier); warpgroups 1 and 2 are the consumers (rows 0-63 and 64-127), each issuing per
//   stage four wgmma.m64n256k32.s32.s8.s8 (written inline below, not through wgmma_ops.cuh)
//   into 128 int32 accumulators per thread, and releasing the slot (EMPTY mbarrier, one
//   arrival per consumer warp) once the stage's wgmma group has completed. setmaxnreg moves
//   registers from the producer (40) to the consumers (232).
//   Epilogue: residues in registers (the low byte for m = 256; residue_low_byte of
//   ozaki_residue.cuh, integer and fp32 steps without conversions, for odd m in (128, 255];
//   sym_mod of ozaki_residue.cuh, two conversions each way, for every other m in [2, 256]),
//   staged as bytes through shared memory (row pitch 272 bytes: conflict-free 2-byte writes)
//   and written with 16-byte stores.
//   CTA order: raster_tile (common.cuh) walks OZ_RASTER_GROUP M-tiles at a time (L2 reuse of Bt
//   tiles).
//
// Measured on an H200 (python -m precision.gemm.ozaki_gemm_check, 700 W cap, same process as
// cuBLAS gemmStridedBatchedEx int8 -> int32; M = Nbp = Kp = n, L = 15, median of 10 calls):
//   exactness: identical to cuBLAS's int32 product reduced with integer ops on every case
//   (random; all -128; mixed -128/127 up to |C| = 2145386496; ragged M = 200, Nbp = 272,
//   Kp = 400; the full n = 8192 and 16384 outputs).
//   n = 8192 (three runs): cuBLAS 14.93 / 14.70 / 14.82 ms, this kernel 11.32 / 11.78 / 11.80
//   ms (1456 / 1400 / 1397 TOPS vs cuBLAS's 1105-1146: 1.25-1.32x). OZ_RASTER_GROUP 4 / 8 / 16
//   (one run): 12.28 / 11.92 / 11.32 ms, 16 is the default.
//   n = 16384: cuBLAS 114.9 / 119.4 ms (1148 / 1105 TOPS), this kernel 95.2 / 97.0 ms (1386 /
//   1360 TOPS, 1.21-1.23x).
//   Both run into the power cap (SM clock 1.5-1.7 GHz, not 1.98). A persistent variant (one
//   CTA per SM, the producer loading the next tile during the epilogue, a dedicated staging
//   tile) ran 1-12 % slower in the same process (lower clocks at the cap), so it was dropped.
#include <stdint.h>

#include "common.cuh"
#include "sm90_sync.cuh"

namespace oz {

using namespace pk;

#include "ozaki_residue.cuh"  // residue_low_byte, residue_c16m, sym_mod

constexpr int BM = 128, BN = 256, BK = 128;  // CTA tile; BK = k per stage = bytes per row
#ifndef OZ_STAGES
#define OZ_STAGES 4
#endif
#ifndef OZ_RASTER_GROUP
#define OZ_RASTER_GROUP 16
#endif
constexpr int S = OZ_STAGES, RASTER_GROUP = OZ_RASTER_GROUP;
constexpr int THREADS = 384, CONSUMER_THREADS = 256;
constexpr int A_TILE = BM * BK, B_TILE = BN * BK, STAGE = A_TILE + B_TILE;  // bytes
constexpr int OUT_PITCH = BN + 16;  // bytes per row of the epilogue's staging tile
// dynamic shared memory: 1024-byte alignment slack, the ring, FULL[S] and EMPTY[S] (launcher)
constexpr int SMEM_BYTES = 1024 + S * STAGE + 16 * S;
static_assert(BM * OUT_PITCH <= S * STAGE, "the staging tile reuses the ring");
static_assert(SMEM_BYTES <= 232448, "shared memory per block");

// The box at (c0 = byte column, c1 = row, c2 = matrix) of the 3-D tensor map at global address
// tmap -> shared memory at dst by the TMA unit; completion (bytes) counted on mbarrier bar.
__device__ __forceinline__ void tma_load_3d(uint32_t dst, const void* tmap, int c0, int c1, int c2,
                                            uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
      "l"(tmap), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}
template <int N>
__device__ __forceinline__ void fence_regs(int (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+r"(d[i])::"memory");
}
// Shared-memory matrix descriptor of a K-major tile with 128-byte rows in the 128-byte swizzle
// (8-row atoms of 1024 bytes: stride byte offset 1024; swizzle mode 1 in bits 62-63).
__device__ __forceinline__ uint64_t tile_desc(uint32_t saddr) {
  return uint64_t((saddr & 0x3FFFFu) >> 4) | (uint64_t(1) << 16) | (uint64_t(1024 >> 4) << 32) |
         (uint64_t(1) << 62);
}

// d += A * B for a warpgroup: wgmma.m64n256k32 with s8 operands from shared memory (K-major)
// and 128 int32 accumulators per thread in the PTX fragment order (d[4j + r] -> row
// 16 w + g + 8 (r / 2), column 8 j + 2 q + (r % 2); w warp, g = lane / 4, q = lane % 4).
// Integer products and sums are exact (no saturation: .satfinite is not used and |C| < 2^31).
__device__ __forceinline__ void mma_s8_n256(int (&d)[128], uint64_t da, uint64_t db) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
      "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
      "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "
      "%56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, "
      "%74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, "
      "%92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, "
      "%108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, "
      "%123, %124, %125, %126, %127}, %128, %129, 1;\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3]), "+r"(d[4]), "+r"(d[5]), "+r"(d[6]),
        "+r"(d[7]), "+r"(d[8]), "+r"(d[9]), "+r"(d[10]), "+r"(d[11]), "+r"(d[12]), "+r"(d[13]),
        "+r"(d[14]), "+r"(d[15]), "+r"(d[16]), "+r"(d[17]), "+r"(d[18]), "+r"(d[19]), "+r"(d[20]),
        "+r"(d[21]), "+r"(d[22]), "+r"(d[23]), "+r"(d[24]), "+r"(d[25]), "+r"(d[26]), "+r"(d[27]),
        "+r"(d[28]), "+r"(d[29]), "+r"(d[30]), "+r"(d[31]), "+r"(d[32]), "+r"(d[33]), "+r"(d[34]),
        "+r"(d[35]), "+r"(d[36]), "+r"(d[37]), "+r"(d[38]), "+r"(d[39]), "+r"(d[40]), "+r"(d[41]),
        "+r"(d[42]), "+r"(d[43]), "+r"(d[44]), "+r"(d[45]), "+r"(d[46]), "+r"(d[47]), "+r"(d[48]),
        "+r"(d[49]), "+r"(d[50]), "+r"(d[51]), "+r"(d[52]), "+r"(d[53]), "+r"(d[54]), "+r"(d[55]),
        "+r"(d[56]), "+r"(d[57]), "+r"(d[58]), "+r"(d[59]), "+r"(d[60]), "+r"(d[61]), "+r"(d[62]),
        "+r"(d[63]), "+r"(d[64]), "+r"(d[65]), "+r"(d[66]), "+r"(d[67]), "+r"(d[68]), "+r"(d[69]),
        "+r"(d[70]), "+r"(d[71]), "+r"(d[72]), "+r"(d[73]), "+r"(d[74]), "+r"(d[75]), "+r"(d[76]),
        "+r"(d[77]), "+r"(d[78]), "+r"(d[79]), "+r"(d[80]), "+r"(d[81]), "+r"(d[82]), "+r"(d[83]),
        "+r"(d[84]), "+r"(d[85]), "+r"(d[86]), "+r"(d[87]), "+r"(d[88]), "+r"(d[89]), "+r"(d[90]),
        "+r"(d[91]), "+r"(d[92]), "+r"(d[93]), "+r"(d[94]), "+r"(d[95]), "+r"(d[96]), "+r"(d[97]),
        "+r"(d[98]), "+r"(d[99]), "+r"(d[100]), "+r"(d[101]), "+r"(d[102]), "+r"(d[103]),
        "+r"(d[104]), "+r"(d[105]), "+r"(d[106]), "+r"(d[107]), "+r"(d[108]), "+r"(d[109]),
        "+r"(d[110]), "+r"(d[111]), "+r"(d[112]), "+r"(d[113]), "+r"(d[114]), "+r"(d[115]),
        "+r"(d[116]), "+r"(d[117]), "+r"(d[118]), "+r"(d[119]), "+r"(d[120]), "+r"(d[121]),
        "+r"(d[122]), "+r"(d[123]), "+r"(d[124]), "+r"(d[125]), "+r"(d[126]), "+r"(d[127])
      : "l"(da), "l"(db));
}

__device__ __forceinline__ void gemm_mod_body(int8_t* __restrict__ R, int M, int Nbp, int Kp,
                                              long long strideR, const int* __restrict__ moduli,
                                              const uint8_t* __restrict__ tmaps) {
  extern __shared__ uint8_t smem_raw[];
  const uint32_t raw = smem_u32(smem_raw);
  const uint32_t base = (raw + 1023u) & ~1023u;  // the 128-byte swizzle needs 1024-byte tiles
  uint8_t* const sbase = smem_raw + (base - raw);
  const uint32_t full = base + S * STAGE, empty = full + 8 * S;
  const int tid = threadIdx.x, l = blockIdx.z;
  const int nk = (Kp + BK - 1) / BK;
  int tm, tn;
  raster_tile<RASTER_GROUP>((M + BM - 1) / BM, (Nbp + BN - 1) / BN, tm, tn);
  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < S; ++s) {
      mbar_init(full + 8 * s, 1);
      mbar_init(empty + 8 * s, 8);  // one arrival per consumer warp
    }
    mbar_init_fence();
  }
  __syncthreads();

  if (tid < 128) {  // ------------------------------------------------------------ producer
    setmaxnreg_dec<40>();
    if (tid == 0) {
      for (int kt = 0; kt < nk; ++kt) {
        const int s = kt % S;
        if (kt >= S) mbar_wait(empty + 8 * s, ((kt / S) - 1) & 1);  // slot s free again
        const uint32_t slot = base + s * STAGE, bar = full + 8 * s;
        mbar_arrive_expect_tx(bar, STAGE);  // (boxes overhanging the matrix count in full)
        tma_load_3d(slot, tmaps, kt * BK, tm * BM, l, bar);
        tma_load_3d(slot + A_TILE, tmaps + 128, kt * BK, tn * BN, l, bar);
      }
    }
    return;
  }

  // ---------------------------------------------------------------------------- consumers
  setmaxnreg_inc<232>();
  const int t = tid - 128, wgi = t >> 7, lane = t & 31;
  int acc[128];
#pragma unroll
  for (int i = 0; i < 128; ++i) acc[i] = 0;
  for (int kt = 0; kt < nk; ++kt) {
    const int s = kt % S;
    mbar_wait(full + 8 * s, (kt / S) & 1);
    const uint32_t sa = base + s * STAGE + wgi * 64 * BK, sb = base + s * STAGE + A_TILE;
    fence_regs(acc);
    wgmma_fence();
#pragma unroll
    for (int i = 0; i < BK / 32; ++i)
      mma_s8_n256(acc, tile_desc(sa + 32 * i), tile_desc(sb + 32 * i));
    wgmma_commit();
    fence_regs(acc);
    wgmma_wait<1>();  // the previous stage's group has completed: release its slot
    if (kt > 0 && lane == 0) mbar_arrive(empty + 8 * ((kt - 1) % S));
  }
  wgmma_wait<0>();
  fence_regs(acc);

  // ---- epilogue: residues -> bytes in shared memory -> 16-byte stores
  const int m = moduli[l];
  const float inv = __frcp_rn(float(m));
  bar_sync(1, CONSUMER_THREADS);  // both consumers' wgmma are done: the ring is free
  {
    const int w = (t >> 5) & 3, g = lane >> 2, q = lane & 3;
    uint8_t* p0 = sbase + (wgi * 64 + 16 * w + g) * OUT_PITCH + 2 * q;
    uint8_t* p1 = p0 + 8 * OUT_PITCH;
    // byte(c): an int whose low byte is the residue of c (one of three per modulus, uniform
    // over the CTA, so the branch below is taken once)
    auto stage = [&](auto byte) {
#pragma unroll
      for (int j = 0; j < 32; ++j) {
        const uint32_t r0 = uint32_t(byte(acc[4 * j])) & 0xffu;
        const uint32_t r1 = uint32_t(byte(acc[4 * j + 1])) & 0xffu;
        const uint32_t r2 = uint32_t(byte(acc[4 * j + 2])) & 0xffu;
        const uint32_t r3 = uint32_t(byte(acc[4 * j + 3])) & 0xffu;
        *reinterpret_cast<uint16_t*>(p0 + 8 * j) = uint16_t(r0 | (r1 << 8));
        *reinterpret_cast<uint16_t*>(p1 + 8 * j) = uint16_t(r2 | (r3 << 8));
      }
    };
#ifndef OZ_EPILOGUE_SYM_MOD  // (defined: the general path for every modulus, for A/B timing)
    if (m == 256) {          // the symmetric residue is the low byte
      stage([](int c) { return c; });
    } else if ((m & 1) && m > 128 && m < 256) {  // the other Ozaki-II moduli: no conversions
      const int c16m = residue_c16m(m), neg_m = -m;
      stage([=](int c) { return residue_low_byte(c, inv, c16m, neg_m); });
    } else
#endif
    {
      const int lo = -(m / 2), hi = (m + 1) / 2 - 1;
      stage([=](int c) { return sym_mod(c, m, inv, lo, hi); });
    }
  }
  bar_sync(1, CONSUMER_THREADS);
  int8_t* const Rl = R + l * strideR;
  constexpr int CHUNKS = BN / 16;  // 16-byte chunks per tile row
#pragma unroll
  for (int i = 0; i < BM * CHUNKS / CONSUMER_THREADS; ++i) {
    const int c = t + i * CONSUMER_THREADS, row = c / CHUNKS, cc = c % CHUNKS;
    const int gr = tm * BM + row, gc = tn * BN + 16 * cc;
    if (gr < M && gc < Nbp)
      *reinterpret_cast<uint4*>(Rl + size_t(gr) * Nbp + gc) =
          *reinterpret_cast<const uint4*>(sbase + row * OUT_PITCH + 16 * cc);
  }
}

}  // namespace oz

// A and Bt are read through the two tensor maps at tmaps (A's, then Bt's; 128 bytes each, built
// by the launcher from A, Bt, M, Nbp, Kp, strideA, strideB); the pointers are passed for the
// record only. Grid: (tiles of 128 x 256 over M x Nbp, 1, L); block 384; SMEM_BYTES dynamic.
extern "C" __global__ void __launch_bounds__(oz::THREADS, 1)
    oz2_gemm_mod(const int8_t* __restrict__ A, const int8_t* __restrict__ Bt,
                 int8_t* __restrict__ R, int M, int Nbp, int Kp, long long strideA,
                 long long strideB, long long strideR, const int* __restrict__ moduli,
                 const uint8_t* __restrict__ tmaps) {
  (void)A;
  (void)Bt;
  (void)strideA;
  (void)strideB;
  oz::gemm_mod_body(R, M, Nbp, Kp, strideR, moduli, tmaps);
}
