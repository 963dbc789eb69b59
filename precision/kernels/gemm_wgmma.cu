// GEMM kernels on wgmma (sm_90a) for f16, bf16 and tf32 inputs: plain, satf (fast launch) and
// corrected (Ootomo-Yokota, Markidis).
//
// Numerical contract (mirrored by precision/gemm/schedule.py, replayed by the emulator):
//  * One wgmma.m64nNk16 (f16/bf16) or m64nNk8 (tf32) computes, for every output element, the
//    same fused block as mma.sync m16n8k16 / m16n8k8 (recorded on the H200: docs/wgmma.md).
//    Operands are K-major in shared memory, k in natural order (Schedule.k_perm = identity).
//  * All fp32 CUDA-core arithmetic is __fadd_rn/__fmul_rn; built by nvcc with -ftz=false
//    -fmad=false, so subnormals are kept and nothing is contracted into an FMA.
//  * plain / satf: the inputs are rounded (f16/bf16 cvt.rn, tf32 RNE on the bits) by the
//    wg_round_operands_* kernel (one launch for both) into K-major operand arrays (B
//    transposed), then
//    acc = mma(A, B, acc) chained over k in increasing order, acc starting at +0.
//    satf (fast launch) computes the plain chain and sets *flag if any result is not finite;
//    the host then runs the per-step-clamp kernel of gemm_mma.cu (see launch.py).
//  * ootomo: the fp32 inputs are split where they are loaded ("load with operation"), never
//    through global memory: hi = fmt(x), lo = fmt(fp32_rn(fp32_rn(x - hi) * lo_scale)) (B by
//    the producers into shared operand tiles, A by the consumers into register fragments).
//    Per k-block (schedule.py OOTOMO_BLOCK_K: f16/bf16 128 k = four k-stages of two
//    instructions, tf32 32 k = two k-stages of two): t = mma(Ahi, Bhi, 0) chained over the
//    block's instructions; per k-stage corr = mma(Alo, Bhi, corr) over its two instructions, then
//    corr = mma(Ahi, Blo, corr) over both; at the end of the block main = fp32_rn(main + t)
//    on CUDA cores. D = fp32_rn(main + fp32_rn(corr * out_scale)). The block's first
//    t-instruction uses scale-d = 0 (the accumulator input is ignored): identical to c = +0
//    for f16, whose products all exceed the 2^-133 zero-anchor; for bf16/tf32 see
//    docs/gemm.md (an explicit +0 accumulator compiles to the same instruction).
//  * markidis: lo unscaled; per instruction: acc = mma(Ahi, Bhi, acc); acc = mma(Alo, Bhi, acc);
//    acc = mma(Ahi, Blo, acc). D = acc.
#include <type_traits>

#include "common.cuh"
#include "sm90_sync.cuh"
#include "wgmma_ops.cuh"

namespace wg {

using namespace pk;

enum Mode { PLAIN = 0, SATF = 1, OOTOMO = 2, MARKIDIS = 3 };

template <int FMT>
struct Elem {
  static constexpr int BYTES = FMT == TF32 ? 4 : 2;  // storage bytes per operand element
  static constexpr int KI = FMT == TF32 ? 8 : 16;    // k of one instruction
};

// Tile shapes (launch.py mirrors them). plain/satf: 128 x 256 CTA tile, two warpgroups of
// m64n256, k-stage of 128 bytes per row (64 f16/bf16 or 32 tf32), PLAIN_STAGES cp.async stages.
// Split kernels: 128 x 128 CTA tile (three fp32 accumulator sets fill the register file),
// k-stage of 64 bytes per row (32 or 16 k), buffers per format in SplitCfg (below).
constexpr int NTHREADS = 256, BM = 128;
constexpr int PLAIN_BN = 256, PLAIN_ROW = 128, PLAIN_STAGES = 4;
constexpr int SPLIT_BN = 128, SPLIT_ROW = 64;
#ifndef WG_RASTER_GROUP
#define WG_RASTER_GROUP 8
#endif
constexpr int RASTER_GROUP = WG_RASTER_GROUP;  // CTA tiles walk 8 M-tiles at a time (L2 reuse)

// ---- rounding (tf32_rne_bits, tf32_cvt_rn_bits, pack2, unpack2: common.cuh) --------------
// Storage bits of one rounded element (16-bit formats in the low half).
template <int FMT>
__device__ __forceinline__ uint32_t storage_bits(float x) {
  if constexpr (FMT == F16)
    return __half_as_ushort(__float2half_rn(x));
  else if constexpr (FMT == BF16)
    return __bfloat16_as_ushort(__float2bfloat16_rn(x));
  else
    return tf32_rne_bits(x);
}

// ---- PTX helpers ----------------------------------------------------------------------------
__device__ __forceinline__ void st_shared_v4(uint32_t s, uint4 v) {
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(s), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w)
               : "memory");
}
// f(std::integral_constant<int, P>) for P = 0 .. N-1, unrolled at compile time.
template <int N, int P = 0, class F>
__device__ __forceinline__ void for_parts(F&& f) {
  if constexpr (P < N) {
    f(std::integral_constant<int, P>{});
    for_parts<N, P + 1>(f);
  }
}
// Keeps the compiler from moving accumulator reads/writes across wgmma issue/wait points.
template <int N>
__device__ __forceinline__ void fence_regs(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
// The same for register-A fragments (N instructions of four 32-bit words): kept in place
// while a wgmma may still read them.
template <int N>
__device__ __forceinline__ void fence_regs(uint32_t (&a)[N][4]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) asm volatile("" : "+r"(a[i][j])::"memory");
}

// Shared-memory matrix descriptor (PTX ISA "matrix descriptor"): start address, leading and
// stride byte offsets (all >> 4) and the swizzle mode in bits 62-63 (1 = 128 B, 2 = 64 B).
__device__ __forceinline__ uint64_t make_desc(uint32_t saddr, uint32_t sbo, uint64_t swizzle) {
  return uint64_t((saddr & 0x3FFFFu) >> 4) | (uint64_t(1) << 16) |
         (uint64_t((sbo >> 4) & 0x3FFFu) << 32) | (swizzle << 62);
}
// K-major tiles with rows of ROW bytes (128 or 64) in the matching swizzle: the 16-byte chunk
// kc of row r sits at chunk kc ^ f(r) of that row; 8-row atoms of 8*ROW bytes.
template <int ROW>
__device__ __forceinline__ uint32_t swz(int r, int kc) {
  if constexpr (ROW == 128)
    return r * 128 + ((kc ^ (r & 7)) << 4);
  else
    return r * 64 + ((kc ^ ((r >> 1) & 3)) << 4);
}
template <int ROW>
__device__ __forceinline__ uint64_t tile_desc(uint32_t s) {
  return make_desc(s, 8 * ROW, ROW == 128 ? 1 : 2);
}

__device__ __forceinline__ uint32_t align1024(uint32_t s) { return (s + 1023u) & ~1023u; }

// D[row0 + .., col0 + ..] from a warpgroup's m64nN accumulators (PTX fragment layout:
// d[4j + r] -> row 16w + g + 8(r/2), column 8j + 2q + (r%2)).
template <int NACC>
__device__ __forceinline__ void store_tile(const float (&v)[NACC], float* __restrict__ D, int ldd,
                                           int row0, int col0) {
  const int t = threadIdx.x & 127, w = t >> 5, lane = t & 31, g = lane >> 2, q = lane & 3;
  float* p0 = D + size_t(row0 + 16 * w + g) * ldd + col0 + 2 * q;
  float* p1 = p0 + size_t(8) * ldd;
#pragma unroll
  for (int j = 0; j < NACC / 4; ++j) {
    *reinterpret_cast<float2*>(p0 + 8 * j) = make_float2(v[4 * j], v[4 * j + 1]);
    *reinterpret_cast<float2*>(p1 + 8 * j) = make_float2(v[4 * j + 2], v[4 * j + 3]);
  }
}

// ---- input rounding (plain / satf) ----------------------------------------------------------
// One launch rounds both operands into zero-padded K-major storage arrays, tile by tile: blocks
// of 32 x 8 threads, each a 32 x 32 tile; the first (Mp/32)(Kp/32) blocks write A's tiles, the
// rest B's, transposed through shared memory. storage_bits<FMT> rounds one fp32 value (f16/bf16
// cvt.rn, tf32 RNE on the bits); padding is +0.

// Y[r][c] = fmt(X[r][c]) (Y: rows_p x cols_p, X: rows x cols) for the tile at (32 tr, 32 tc).
template <int FMT>
__device__ __forceinline__ void round_tile(const float* __restrict__ X, int rows, int cols,
                                           void* __restrict__ Y, int cols_p, int tr, int tc) {
  const int c = tc * 32 + threadIdx.x;
  for (int i = threadIdx.y; i < 32; i += blockDim.y) {
    const int r = tr * 32 + i;
    const float x = (r < rows && c < cols) ? X[size_t(r) * cols + c] : 0.0f;
    const size_t o = size_t(r) * cols_p + c;
    if constexpr (FMT == TF32)
      static_cast<uint32_t*>(Y)[o] = storage_bits<FMT>(x);
    else
      static_cast<uint16_t*>(Y)[o] = uint16_t(storage_bits<FMT>(x));
  }
}
// Y[c][r] = fmt(X[r][c]) (Y: cols_p x rows_p) for the source tile at (32 tr, 32 tc).
template <int FMT>
__device__ __forceinline__ void round_tile_transposed(const float* __restrict__ X, int rows,
                                                      int cols, void* __restrict__ Y, int rows_p,
                                                      int tr, int tc) {
  __shared__ uint32_t t[32][33];
  const int r0 = tr * 32, c0 = tc * 32;
  for (int i = threadIdx.y; i < 32; i += blockDim.y) {
    const int r = r0 + i, c = c0 + threadIdx.x;
    const float x = (r < rows && c < cols) ? X[size_t(r) * cols + c] : 0.0f;
    t[i][threadIdx.x] = storage_bits<FMT>(x);
  }
  __syncthreads();
  for (int i = threadIdx.y; i < 32; i += blockDim.y) {
    const size_t o = size_t(c0 + i) * rows_p + r0 + threadIdx.x;  // output row c, column r
    if constexpr (FMT == TF32)
      static_cast<uint32_t*>(Y)[o] = t[threadIdx.x][i];
    else
      static_cast<uint16_t*>(Y)[o] = uint16_t(t[threadIdx.x][i]);
  }
}
// A (M x K) -> Ar (Mp x Kp); B (K x N) -> Bt (Np x Kp) = fmt(B)^T. Mp, Np, Kp: multiples of 32.
template <int FMT>
__device__ __forceinline__ void round_operands(const float* __restrict__ A, int M, int K,
                                               void* __restrict__ Ar, int Mp, int Kp,
                                               const float* __restrict__ B, int N,
                                               void* __restrict__ Bt, int Np) {
  const int k_tiles = Kp / 32, a_tiles = (Mp / 32) * k_tiles;
  const int t = int(blockIdx.x);
  if (t < a_tiles) {
    round_tile<FMT>(A, M, K, Ar, Kp, t / k_tiles, t % k_tiles);
  } else {
    const int n_tiles = Np / 32, u = t - a_tiles;
    round_tile_transposed<FMT>(B, K, N, Bt, Kp, u / n_tiles, u % n_tiles);
  }
}

// ---- plain / satf: cp.async pipeline of pre-rounded K-major tiles ---------------------------
template <int FMT, int MODE>
__device__ __forceinline__ void plain_body(const uint8_t* __restrict__ A,
                                           const uint8_t* __restrict__ Bt, float* __restrict__ D,
                                           int Mp, int Np, int Kp, int* flag) {
  constexpr int EB = Elem<FMT>::BYTES, KI = Elem<FMT>::KI, BN = PLAIN_BN, ROW = PLAIN_ROW;
  constexpr int BK = ROW / EB, S = PLAIN_STAGES, A_TILE = BM * ROW, STAGE = (BM + BN) * ROW;
  constexpr int CPR = ROW / 16;  // 16-byte chunks per row
  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = align1024(smem_u32(smem_raw));
  const int tid = threadIdx.x, wgi = tid >> 7;
  int tm, tn;
  raster_tile<RASTER_GROUP>(Mp / BM, Np / BN, tm, tn);
  const size_t ld = size_t(Kp) * EB;  // bytes per row of A and of B^T
  const uint8_t* Ag = A + size_t(tm) * BM * ld;
  const uint8_t* Bg = Bt + size_t(tn) * BN * ld;
  const int nk = Kp / BK;

  auto load = [&](int kt) {
    const uint32_t sa = base + (kt % S) * STAGE, sb = sa + A_TILE;
    const size_t koff = size_t(kt) * ROW;
#pragma unroll
    for (int i = 0; i < BM * CPR / NTHREADS; ++i) {
      const int c = tid + i * NTHREADS, r = c / CPR, kc = c % CPR;
      cp_async16(sa + swz<ROW>(r, kc), Ag + r * ld + koff + kc * 16);
    }
#pragma unroll
    for (int i = 0; i < BN * CPR / NTHREADS; ++i) {
      const int c = tid + i * NTHREADS, r = c / CPR, kc = c % CPR;
      cp_async16(sb + swz<ROW>(r, kc), Bg + r * ld + koff + kc * 16);
    }
  };

  float acc[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) acc[i] = 0.0f;

  load(0);
  cp_async_commit();
  if (nk > 1) load(1);
  cp_async_commit();
  for (int kt = 0; kt < nk; ++kt) {
    wgmma_wait<1>();     // this warpgroup's MMAs of stage kt-2 are done
    cp_async_wait<1>();  // this thread's copies of stage kt have landed
    fence_proxy_async();
    __syncthreads();  // stage kt complete for all; stage kt-2's buffer free everywhere
    if (kt + 2 < nk) load(kt + 2);
    cp_async_commit();
    const uint32_t sa = base + (kt % S) * STAGE + wgi * 64 * ROW;
    const uint32_t sb = base + (kt % S) * STAGE + A_TILE;
    fence_regs(acc);
    wgmma_fence();
#pragma unroll
    for (int i = 0; i < BK / KI; ++i)
      Mma<FMT, BN>::run(acc, tile_desc<ROW>(sa + 32 * i), tile_desc<ROW>(sb + 32 * i), 1);
    wgmma_commit();
    fence_regs(acc);
  }
  wgmma_wait<0>();
  fence_regs(acc);
  if constexpr (MODE == SATF) {
    bool bad = false;
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) bad |= !isfinite(acc[i]);
    if (__any_sync(0xffffffffu, bad) && (tid & 31) == 0) atomicOr(flag, 1);
  }
  store_tile(acc, D, Np, tm * BM + wgi * 64, tn * BN);
}

// ---- corrected: warp-specialised split GEMM --------------------------------------------------
// 512 threads: warpgroups 0 and 1 are producers, warpgroups 2 and 3 the consumers (rows 0-63
// and 64-127 of the 128 x 128 CTA tile). setmaxnreg moves registers from the producers to the
// consumers, which hold the three fp32 accumulator sets.
// Shared memory is a ring of S slots, one k-stage each: the swizzled K-major operand tiles
// B_hi and B_lo (128 rows of 64 bytes) and fp32 staging tiles of A (128 x KS) and B (KS x 128).
//  * producers: thread 0 has the TMA unit copy k-stage kt + P (P = S - SLACK) into its slot (the
//    tensor maps are built by launch.py), completing on the slot's mbarrier LOADED[s], while
//    stage kt is converted: producer thread (r, h) reads half h of column r of the B staging
//    tile into registers, splits it there (hi = fmt(x), lo = fmt((x - hi) * lo_scale)) and
//    stores 16-byte chunks of hi and lo into B_hi and B_lo. FULL[s] (an mbarrier the 256
//    producer threads arrive on): slot s holds its stage. Each consumer warpgroup waits on it
//    alone, so the two run out of step and take turns on the tensor cores.
//  * consumers: each thread reads the fp32 values of its own A register fragments from the A
//    staging tile, splits them in registers into hi and lo fragments and issues wgmma with A
//    from registers and B from B_hi / B_lo, then the fp32 adds of the schedule (header
//    comment). EMPTY[s]: the consumers are done with slot s (their reads and their wgmma).
// Neither operand's hi/lo passes through global memory, and A's not even through shared memory.
// A staging layout (bank-conflict-free fragment reads): f16/bf16 as 4 column blocks of 8
// floats (128 rows of 32 bytes each); tf32 as 128 rows of 64 bytes in the TMA 64-byte swizzle
// (16-byte chunk c of row r at c ^ ((r / 2) % 4), like swz<64>). B staging: dense rows.
// Named barriers: 0 is unused after the split, EMPTY[s] = 1 + s (the producers sync, the
// consumers arrive). The mbarriers LOADED[s] and FULL[s] follow the slots in shared memory.
// Tuning knobs, overridable with -D (experiments/tune_split.py times variants; launch.py's
// split_smem_bytes must be given the same slot counts): ring slots for 16-bit formats and for
// tf32, the slots not fetched ahead (SLACK), the unrolling of the producers' B conversion, and
// the producer threads' registers per format (the consumers get the rest of the register
// file: 256 * R + 256 * (256 - R) = 65536). TBLOCK16/TBLOCK32, the k-stages per Ootomo k-block,
// are part of the schedule, not a tuning knob: schedule.py OOTOMO_BLOCK_K must match them.
// Longer k-blocks mean fewer fp32 adds for the consumers (tf32: two k-stages, +6 % at n = 8192;
// f16: four k-stages, -4 % energy per flop at the power cap), but t then stays live across
// k-stages: f16/bf16 need the consumers' 232 registers for that, which the producers can only
// give up (24 left) with their B conversion unrolled twice (UNROLL_B16 = 2; with 1, or with
// 8-byte stores, they spill or slow down, and the producers' pace sets the kernel's).
#ifndef WG_SPLIT_SLOTS16
#define WG_SPLIT_SLOTS16 4  // launch.py WG_SPLIT_SLOTS mirrors these defaults
#endif
#ifndef WG_SPLIT_SLOTS32
#define WG_SPLIT_SLOTS32 6
#endif
#ifndef WG_SPLIT_SLACK
#define WG_SPLIT_SLACK 2  // ring slots minus the stages the TMA fetches ahead (2 .. S - 1)
#endif
#ifndef WG_SPLIT_TBLOCK16
#define WG_SPLIT_TBLOCK16 4  // k-stages per Ootomo k-block (schedule.py OOTOMO_BLOCK_K mirrors)
#endif
#ifndef WG_SPLIT_TBLOCK32
#define WG_SPLIT_TBLOCK32 2
#endif
#ifndef WG_SPLIT_UNROLL_B16
#define WG_SPLIT_UNROLL_B16 2  // producer B chunks converted per loop trip (1 or 2), f16/bf16
#endif
#ifndef WG_SPLIT_UNROLL_B32
#define WG_SPLIT_UNROLL_B32 1  // the same for tf32
#endif
#ifndef WG_SPLIT_PRODUCER_REGS16
#define WG_SPLIT_PRODUCER_REGS16 24  // 232 for the consumers (t across k-stages: TBLOCK16)
#endif
#ifndef WG_SPLIT_CLAMP_TOP
// 1: bf16/tf32 split clamps a finite x above the format's max to +-max instead of Inf. It costs
// 14 % (tf32) / 37 % (bf16) of the corrected kernels' speed on an H200 (tune_split, n = 8192),
// so launch.py runs the non-clamping build and recomputes with the clamping one only when the
// first run flags a non-finite output and an input is beyond the format's range (both builds
// give identical bits wherever nothing overflows). The decision stays on the device: this build
// returns at once unless its flag argument is set (split_body).
#define WG_SPLIT_CLAMP_TOP 0
#endif
#ifndef WG_SPLIT_PRODUCER_REGS32
#define WG_SPLIT_PRODUCER_REGS32 24  // 32: the consumers spill (t lives across two k-stages)
#endif
template <int FMT>
struct SplitCfg {
  static constexpr int KS = SPLIT_ROW / Elem<FMT>::BYTES;  // k per stage: 32 (16-bit), 16 (tf32)
  static constexpr int NI = KS / Elem<FMT>::KI;            // wgmma instructions per stage: 2
  static constexpr int S = FMT == TF32 ? WG_SPLIT_SLOTS32 : WG_SPLIT_SLOTS16;  // ring slots
  static constexpr int P = S - WG_SPLIT_SLACK;  // stages fetched ahead of the one converted
  static constexpr int T_STAGES = FMT == TF32 ? WG_SPLIT_TBLOCK32 : WG_SPLIT_TBLOCK16;
  static_assert(T_STAGES == 1 || T_STAGES == 2 || T_STAGES == 4,
                "k-stages per Ootomo k-block: 1, 2 or 4");
  // registers per producer / consumer thread: 256 * P + 256 * C = the 65536 of the SM
  static constexpr int PRODUCER_REGS =
      FMT == TF32 ? WG_SPLIT_PRODUCER_REGS32 : WG_SPLIT_PRODUCER_REGS16;
  static constexpr int CONSUMER_REGS = 256 - PRODUCER_REGS;
  static constexpr int UNROLL_B = FMT == TF32 ? WG_SPLIT_UNROLL_B32 : WG_SPLIT_UNROLL_B16;
  static constexpr int A_BOX_K = FMT == TF32 ? 16 : 8;  // columns per TMA box of A (launch.py)
  static constexpr int TILE = 128 * SPLIT_ROW;          // bytes of B_hi, B_lo
  static constexpr int ST_A = 2 * TILE, ST_B = ST_A + BM * KS * 4;        // offsets in a slot
  static constexpr int SLOT = ST_B + KS * SPLIT_BN * 4;                   // bytes per slot
  static constexpr uint32_t STAGE_BYTES = (BM * KS + KS * SPLIT_BN) * 4;  // fp32 per k-stage
  static_assert(S >= 3 && S <= 7, "ring slots: 3 .. 7");
  static_assert(P >= 1 && P <= S - 2, "prefetch distance: 1 .. S - 2");
  static_assert(SLOT % 1024 == 0, "slots keep the 1024-byte alignment of the tiles");
};
constexpr int PRODUCERS = 256, SPLIT_THREADS = PRODUCERS + 256;

// The box at coordinates (c0 = column, c1 = row) of the 2-D tensor map at global address tmap
// -> shared memory at dst, by the TMA unit; completion (bytes) is counted on mbarrier bar.
__device__ __forceinline__ void tma_load_2d(uint32_t dst, const void* tmap, int c0, int c1,
                                            uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
      "l"(tmap), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
}

// The split of fp32 values: hi = fmt(x), rounded once (cvt.rn) and widened back exactly to
// form the residual, lo = fmt(fp32_rn(fp32_rn(x - hi) * lo_scale)).
// f16/bf16: two values, hi and lo packed (first value in the low half).
//
// Top binade (bf16, tf32: fp32's exponent range): a finite x above the format's largest finite
// value rounds up to Inf, and x - Inf would make the row NaN. clamp_top replaces such an Inf by
// +-max_normal (the emulator's gemm.operands._clamp_top); real infinities and every other
// value are unchanged, so all other inputs split bit for bit as before. f16 is not clamped:
// fp32 values beyond its range have no f16 approximation at all.
__device__ __forceinline__ uint32_t clamp_top_tf32(uint32_t r, float x) {
  const bool finite_x = (__float_as_uint(x) & 0x7fffffffu) < 0x7f800000u;
  return (WG_SPLIT_CLAMP_TOP && finite_x && (r & 0x7fffffffu) == 0x7f800000u)
             ? (r & 0x80000000u) | 0x7f7fe000u
             : r;
}
__device__ __forceinline__ uint32_t clamp_top_bf16x2(uint32_t r, float x0, float x1) {
  if (!WG_SPLIT_CLAMP_TOP) return r;
  const bool f0 = (__float_as_uint(x0) & 0x7fffffffu) < 0x7f800000u;
  const bool f1 = (__float_as_uint(x1) & 0x7fffffffu) < 0x7f800000u;
  if (f0 && (r & 0x7fffu) == 0x7f80u) r = (r & 0xffff8000u) | 0x7f7fu;
  if (f1 && (r & 0x7fff0000u) == 0x7f800000u) r = (r & 0x8000ffffu) | 0x7f7f0000u;
  return r;
}

template <int FMT>
__device__ __forceinline__ void split2(float x0, float x1, float lo_scale, uint32_t& hi,
                                       uint32_t& lo) {
  hi = pack2<FMT>(x0, x1);
  if constexpr (FMT == BF16) hi = clamp_top_bf16x2(hi, x0, x1);
  const float2 h = unpack2<FMT>(hi);
  const float r0 = __fmul_rn(__fsub_rn(x0, h.x), lo_scale);
  const float r1 = __fmul_rn(__fsub_rn(x1, h.y), lo_scale);
  lo = pack2<FMT>(r0, r1);
  if constexpr (FMT == BF16) lo = clamp_top_bf16x2(lo, r0, r1);
}
// tf32: one value, hi and lo as fp32 bit patterns with the low 13 bits clear.
// tf32: lo = x - hi is at most one ulp of the top binade, far below the range limit, so only
// hi can overflow.
__device__ __forceinline__ void split1_tf32(float x, float lo_scale, uint32_t& hi, uint32_t& lo) {
  hi = clamp_top_tf32(tf32_cvt_rn_bits(x), x);
  lo = tf32_cvt_rn_bits(__fmul_rn(__fsub_rn(x, __uint_as_float(hi)), lo_scale));
}

// One 16-byte chunk of hi and of lo from the fp32 values v[0 .. 16 / BYTES).
template <int FMT>
__device__ __forceinline__ void split_chunk(const float* v, float lo_scale, uint4& hi, uint4& lo) {
  uint32_t h[4], l[4];
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    if constexpr (FMT == TF32)
      split1_tf32(v[e], lo_scale, h[e], l[e]);
    else
      split2<FMT>(v[2 * e], v[2 * e + 1], lo_scale, h[e], l[e]);
  }
  hi = make_uint4(h[0], h[1], h[2], h[3]);
  lo = make_uint4(l[0], l[1], l[2], l[3]);
}

// A consumer thread's hi and lo A fragments of one k-stage, split from the fp32 staging tile
// at a (bytes; layout in the comment above). The thread's rows are row and row + 8 (row = 16 w
// + g of its warpgroup's block, (g, q) = (lane / 4, lane % 4)). Instruction i's four words
// follow the PTX register-fragment order of wgmma m64nNk16 / m64nNk8 (k relative to the
// instruction): f16/bf16 {(row, 2q:2q+1), (row+8, 2q:2q+1), (row, 2q+8:2q+9), (row+8,
// 2q+8:2q+9)}, tf32 {(row, q), (row+8, q), (row, q+4), (row+8, q+4)}.
template <int FMT, int NI>
__device__ __forceinline__ void split_a_fragments(const uint8_t* a, int row, int q, float lo_scale,
                                                  uint32_t (&hi)[NI][4], uint32_t (&lo)[NI][4]) {
  if constexpr (FMT == TF32) {
    const uint8_t* p = a + row * 64 + 4 * q;
    const int sw = (row >> 1) & 3;  // the 64-byte swizzle of rows row and row + 8
#pragma unroll
    for (int i = 0; i < NI; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) {  // j: (row or row+8) x (k or k+4), k = 8 i + q
        const float x = *reinterpret_cast<const float*>(p + (j & 1) * 8 * 64 +
                                                        (((2 * i + (j >> 1)) ^ sw) << 4));
        split1_tf32(x, lo_scale, hi[i][j], lo[i][j]);
      }
  } else {
    const uint8_t* p = a + row * 32 + 8 * q;  // column block 0, k = 2q
#pragma unroll
    for (int i = 0; i < NI; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) {  // j: (row or row+8) x (k or k+8), k = 16 i + 2q
        const float2 x =
            *reinterpret_cast<const float2*>(p + (j & 1) * 8 * 32 + (2 * i + (j >> 1)) * BM * 32);
        split2<FMT>(x.x, x.y, lo_scale, hi[i][j], lo[i][j]);
      }
  }
}

template <int FMT, int MODE>
__device__ __forceinline__ void split_body(const uint8_t* __restrict__ tmaps, float* __restrict__ D,
                                           int Mp, int Np, int Kp, float lo_scale, float out_scale,
                                           int* __restrict__ nonfinite) {
  using Cfg = SplitCfg<FMT>;
  constexpr int BN = SPLIT_BN, ROW = SPLIT_ROW, KS = Cfg::KS, NI = Cfg::NI;
  constexpr int S = Cfg::S, P = Cfg::P, E = 16 / Elem<FMT>::BYTES;  // E: elements per chunk
  constexpr int TILE = Cfg::TILE, SLOT = Cfg::SLOT, T_STAGES = Cfg::T_STAGES;
  constexpr int EMPTY = 1;  // named barriers EMPTY + s
  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = align1024(smem_u32(smem_raw));
  const uint8_t* smem_base = smem_raw + (base - smem_u32(smem_raw));  // generic, of base
  const int tid = threadIdx.x;
  // a wrong launch would deadlock on the barriers; K must hold whole Ootomo k-blocks
  if (blockDim.x != SPLIT_THREADS || Kp % (KS * T_STAGES) != 0) __trap();
#if WG_SPLIT_CLAMP_TOP
  // The clamping build is queued after every bf16/tf32 call; launch.py passes it the flag that
  // any_above set (some |input| beyond the format's largest finite value), so without one every
  // CTA returns here and D keeps the first run's bits.
  if (*reinterpret_cast<volatile int*>(nonfinite) == 0) return;
#endif
  const int nk = Kp / KS;
  // mbarriers per slot: LOADED (the fp32 staging tiles have landed), FULL (B split too)
  const uint32_t loaded = base + S * SLOT, full = loaded + 8 * S;
  if (tid == 0) {
#pragma unroll
    for (int j = 0; j < S; ++j) {
      mbar_init(loaded + 8 * j, 1);
      mbar_init(full + 8 * j, PRODUCERS);
    }
    mbar_init_fence();
  }
  __syncthreads();

  if (tid < PRODUCERS) {  // ---------------------------------------------------- producers
    setmaxnreg_dec<Cfg::PRODUCER_REGS>();
    const int r = tid & 127, h = tid >> 7;
    int tm, tn;
    raster_tile<RASTER_GROUP>(Mp / BM, Np / BN, tm, tn);
    // thread 0: k-stage kt into its slot, A in KS / A_BOX_K boxes of 128 rows, B in one box
    auto fetch = [&](int kt) {
      const uint32_t slot = base + (kt % S) * SLOT, bar = loaded + 8 * (kt % S);
      mbar_arrive_expect_tx(bar, Cfg::STAGE_BYTES);
#pragma unroll
      for (int b = 0; b < KS / Cfg::A_BOX_K; ++b)
        tma_load_2d(slot + Cfg::ST_A + b * BM * Cfg::A_BOX_K * 4, tmaps, kt * KS + b * Cfg::A_BOX_K,
                    tm * BM, bar);
      tma_load_2d(slot + Cfg::ST_B, tmaps + 128, tn * BN, kt * KS, bar);
    };
    if (tid == 0)
      for (int j = 0; j < P && j < nk; ++j) fetch(j);
    for (int kt = 0; kt < nk; ++kt) {
      mbar_wait(loaded + 8 * (kt % S), (kt / S) & 1);  // stage kt's fp32 tiles have landed
      const uint32_t slot = base + (kt % S) * SLOT;
      const float* sb = reinterpret_cast<const float*>(smem_base + (kt % S) * SLOT + Cfg::ST_B);
      constexpr int HALF = KS / E / 2;  // 16-byte chunks per thread
#pragma unroll Cfg::UNROLL_B
      for (int c = h * HALF; c < (h + 1) * HALF; ++c) {  // column r of B (row r of B^T)
        float v[E];
#pragma unroll
        for (int i = 0; i < E; ++i) v[i] = sb[(c * E + i) * BN + r];
        uint4 hi, lo;
        split_chunk<FMT>(v, lo_scale, hi, lo);
        st_shared_v4(slot + swz<ROW>(r, c), hi);
        st_shared_v4(slot + TILE + swz<ROW>(r, c), lo);
      }
      fence_proxy_async();               // st.shared -> visible to wgmma
      mbar_arrive(full + 8 * (kt % S));  // slot kt % S ready
      if (kt + P < nk) {  // refill the slot of stage kt + P - S once the consumers are done
        // (EMPTY also holds every producer until all have finished stage kt: the producers
        // convert stage kt + 1 once the consumers are done with stage kt + P - S)
        if (kt + P >= S) bar_sync(EMPTY + (kt + P) % S, SPLIT_THREADS);
        if (tid == 0) fetch(kt + P);
      }
    }
    return;
  }

  // ----------------------------------------------------------------------------- consumers
  setmaxnreg_inc<Cfg::CONSUMER_REGS>();
  const int t = tid - PRODUCERS, wgi = t >> 7, lane = t & 31;
  const int a_row = 64 * wgi + 16 * ((t >> 5) & 3) + (lane >> 2), a_q = lane & 3;
  float acc[BN / 2];
  float corr[MODE == OOTOMO ? BN / 2 : 1];
  uint32_t a_hi[NI][4], a_lo[NI][4];       // A fragments of the stage being multiplied
  float tmp[MODE == OOTOMO ? BN / 2 : 1];  // t of the current Ootomo k-block
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) acc[i] = 0.0f;
  if constexpr (MODE == OOTOMO) {
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) corr[i] = 0.0f;
  }
  // Stage kt, the part-th (a compile-time constant) of its Ootomo k-block: no run-time branch
  // between the wgmma of a k-block, which would make ptxas serialise them (C7514, C7519).
  auto stage = [&](int kt, auto part_c) {
    constexpr int part = decltype(part_c)::value;
    if (kt > 0) {
      wgmma_wait<0>();  // stage kt-1's wgmma are done: its slot and the A fragments are free
      fence_regs(a_hi);
      fence_regs(a_lo);
      if (kt - 1 + S < nk) bar_arrive(EMPTY + (kt - 1) % S, SPLIT_THREADS);
    }
    mbar_wait(full + 8 * (kt % S), (kt / S) & 1);
    mbar_wait(loaded + 8 * (kt % S), (kt / S) & 1);  // (complete: makes A's staging visible)
    const uint32_t b_hi = base + (kt % S) * SLOT, b_lo = b_hi + TILE;
    split_a_fragments<FMT, NI>(smem_base + (kt % S) * SLOT + Cfg::ST_A, a_row, a_q, lo_scale, a_hi,
                               a_lo);
    fence_regs(acc);
    if constexpr (MODE == OOTOMO) fence_regs(corr);
    wgmma_fence();
    if constexpr (MODE == OOTOMO) {
      // t = A_hi B_hi chained over the T_STAGES stages of a k-block, starting from scale-d = 0
      if constexpr (part == 0)
        MmaRS<FMT, BN>::run_fresh(tmp, a_hi[0], tile_desc<ROW>(b_hi));
      else
        MmaRS<FMT, BN>::run(tmp, a_hi[0], tile_desc<ROW>(b_hi), 1);
#pragma unroll
      for (int i = 1; i < NI; ++i)
        MmaRS<FMT, BN>::run(tmp, a_hi[i], tile_desc<ROW>(b_hi + 32 * i), 1);
      wgmma_commit();
#pragma unroll
      for (int i = 0; i < NI; ++i)
        MmaRS<FMT, BN>::run(corr, a_lo[i], tile_desc<ROW>(b_hi + 32 * i), 1);
#pragma unroll
      for (int i = 0; i < NI; ++i)
        MmaRS<FMT, BN>::run(corr, a_hi[i], tile_desc<ROW>(b_lo + 32 * i), 1);
      wgmma_commit();
      if constexpr (part == T_STAGES - 1) {  // the k-block's t is complete: main += t (fp32 RN)
        wgmma_wait<1>();
        fence_regs(tmp);
        fence_regs(acc);
#pragma unroll
        for (int i = 0; i < BN / 2; ++i) acc[i] = __fadd_rn(acc[i], tmp[i]);
      }
    } else {
#pragma unroll
      for (int i = 0; i < NI; ++i) {
        MmaRS<FMT, BN>::run(acc, a_hi[i], tile_desc<ROW>(b_hi + 32 * i), 1);
        MmaRS<FMT, BN>::run(acc, a_lo[i], tile_desc<ROW>(b_hi + 32 * i), 1);
        MmaRS<FMT, BN>::run(acc, a_hi[i], tile_desc<ROW>(b_lo + 32 * i), 1);
      }
      wgmma_commit();
    }
  };
  for (int kt = 0; kt < nk; kt += T_STAGES)  // (nk is a multiple of T_STAGES: checked above)
    for_parts<T_STAGES>([&](auto part_c) { stage(kt + decltype(part_c)::value, part_c); });
  wgmma_wait<0>();
  fence_regs(acc);
  if constexpr (MODE == OOTOMO) {
    fence_regs(corr);
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) acc[i] = __fadd_rn(acc[i], __fmul_rn(corr[i], out_scale));
  }
  int tm, tn;  // (computed here, not kept in registers through the k-loop)
  raster_tile<RASTER_GROUP>(Mp / BM, Np / BN, tm, tn);
  store_tile(acc, D, Np, tm * BM + wgi * 64, tn * BN);
  // Any non-finite output: launch.py then recomputes with the top-binade clamp where that can
  // matter (bf16/tf32; an input that rounded up to Inf makes its whole row or column non-finite).
  bool bad = false;
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) bad |= !isfinite(acc[i]);
  if (bad) *nonfinite = 1;
}

}  // namespace wg

// ---- entry points ---------------------------------------------------------------------------
#define WG_ROUND_KERNEL(SUFFIX, FMT)                                                    \
  extern "C" __global__ void __launch_bounds__(256) wg_round_operands_##SUFFIX(         \
      const float* __restrict__ A, int M, int K, void* __restrict__ Ar, int Mp, int Kp, \
      const float* __restrict__ B, int N, void* __restrict__ Bt, int Np) {              \
    wg::round_operands<FMT>(A, M, K, Ar, Mp, Kp, B, N, Bt, Np);                         \
  }

#define WG_PLAIN_KERNEL(NAME, FMT, MODE)                                                         \
  extern "C" __global__ void __launch_bounds__(wg::NTHREADS, 1)                                  \
      NAME(const uint8_t* __restrict__ A, const uint8_t* __restrict__ Bt, float* __restrict__ D, \
           int Mp, int Np, int Kp, int* flag) {                                                  \
    wg::plain_body<FMT, MODE>(A, Bt, D, Mp, Np, Kp, flag);                                       \
  }

#define WG_SPLIT_KERNEL(NAME, FMT, MODE)                                                     \
  extern "C" __global__ void __launch_bounds__(wg::SPLIT_THREADS, 1)                         \
      NAME(const uint8_t* __restrict__ tmaps, float* __restrict__ D, int Mp, int Np, int Kp, \
           float lo_scale, float out_scale, int* __restrict__ nonfinite) {                   \
    wg::split_body<FMT, MODE>(tmaps, D, Mp, Np, Kp, lo_scale, out_scale, nonfinite);         \
  }

WG_ROUND_KERNEL(f16, wg::F16)
WG_ROUND_KERNEL(bf16, wg::BF16)
WG_ROUND_KERNEL(tf32, wg::TF32)
WG_PLAIN_KERNEL(wg_plain_f16, wg::F16, wg::PLAIN)
WG_PLAIN_KERNEL(wg_plain_bf16, wg::BF16, wg::PLAIN)
WG_PLAIN_KERNEL(wg_plain_tf32, wg::TF32, wg::PLAIN)
WG_PLAIN_KERNEL(wg_satf_f16, wg::F16, wg::SATF)
WG_PLAIN_KERNEL(wg_satf_bf16, wg::BF16, wg::SATF)
WG_PLAIN_KERNEL(wg_satf_tf32, wg::TF32, wg::SATF)
WG_SPLIT_KERNEL(wg_ootomo_f16, wg::F16, wg::OOTOMO)
WG_SPLIT_KERNEL(wg_ootomo_bf16, wg::BF16, wg::OOTOMO)
WG_SPLIT_KERNEL(wg_ootomo_tf32, wg::TF32, wg::OOTOMO)
WG_SPLIT_KERNEL(wg_markidis_f16, wg::F16, wg::MARKIDIS)
WG_SPLIT_KERNEL(wg_markidis_bf16, wg::BF16, wg::MARKIDIS)
WG_SPLIT_KERNEL(wg_markidis_tf32, wg::TF32, wg::MARKIDIS)
