// WMMA API probe kernels (nvcuda::wmma), one warp per tile, one mma_sync (or bmma_sync) per
// tile. Operands travel as raw bits between the host and the tensor core:
//
//   A    [T][M][K]  row-major, ldm = K        (wmma::row_major matrix_a)
//   B    [T][N][K]  column-major, ldm = K     (wmma::col_major matrix_b), or
//        [T][K][N]  row-major, ldm = N        (the *_brow kernels, wmma::row_major matrix_b)
//   C, D [T][M][N]  row-major, ldm = N        (accumulator, wmma::mem_row_major)
//
// Elements are stored in their natural container (f16/bf16 2 bytes, tf32 as a 4-byte f32
// container passed unmodified, f64 8 bytes, s8/u8 1 byte, s32/f32 4 bytes). Sub-byte types are
// packed along K: s4/u4 two per byte (element 2i in the low nibble), b1 eight per byte (element
// 8i in bit 0); A's rows and B's columns are packed the same way, so the exact integer dot
// product does not depend on the bit order the hardware uses inside a word.
//
// Each kernel is named wmma_<a>_<acc>_m<M>n<N>k<K>[_brow|_xor|_and] and is one line of the
// kernel table below the marker line; precision/probe/wmma.py holds the matching probe table.
// When the whole file does not build for a target, it builds every line alone (recording the
// compiler's refusal) and then the file from the accepted lines. With nvcc 13: sm_90 accepts
// all 22; sm_75 refuses bf16, tf32, f64 and b1 AND.POPC (sm_80 features).
//
// Compile with nvcc -arch=sm_90 -cubin.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>
#include <stdint.h>

namespace probe {
using namespace nvcuda;

template <int R>
struct BLayout {
  using type = wmma::col_major;
};
template <>
struct BLayout<1> {
  using type = wmma::row_major;
};

// M, N, K: tile shape. Prec: WMMA element type of A and B. Store: the pointer type one loads
// A and B from. EPS: elements per Store unit (1; 2 for s4/u4; 8 for b1). BROW: B row-major.
// Acc: accumulator element type. Op: a callable op(d, a, b) doing d = a.b + d (mma_sync or
// bmma_sync); it is written in the kernel line so that an instruction the target lacks (e.g.
// bmmaBitOpAND before sm_80) fails only the kernels that use it.
template <int M, int N, int K, typename Prec, typename Store, int EPS, int BROW, typename Acc,
          typename Op>
__device__ __forceinline__ void tiles(const Store* __restrict__ A, const Store* __restrict__ B,
                                      const Acc* __restrict__ C, Acc* __restrict__ D, long long T,
                                      Op op) {
  const long long warp = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const long long nwarps = (static_cast<long long>(gridDim.x) * blockDim.x) >> 5;
  for (long long t = warp; t < T; t += nwarps) {
    wmma::fragment<wmma::matrix_a, M, N, K, Prec, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, M, N, K, Prec, typename BLayout<BROW>::type> fb;
    wmma::fragment<wmma::accumulator, M, N, K, Acc> acc;
    wmma::load_matrix_sync(fa, A + t * (M * K / EPS), K);
    wmma::load_matrix_sync(fb, B + t * (K * N / EPS), BROW ? N : K);
    wmma::load_matrix_sync(acc, C + t * (M * N), N, wmma::mem_row_major);
    op(acc, fa, fb);
    wmma::store_matrix_sync(D + t * (M * N), acc, N, wmma::mem_row_major);
  }
}
}  // namespace probe

// The operation of a kernel line: MMA (mma_sync), XOR / AND (bmma_sync with .popc).
#define OP_MMA nvcuda::wmma::mma_sync(d, a, b, d)
#define OP_XOR                                                                  \
  nvcuda::wmma::bmma_sync(d, a, b, d, nvcuda::wmma::experimental::bmmaBitOpXOR, \
                          nvcuda::wmma::experimental::bmmaAccumulateOpPOPC)
#define OP_AND                                                                  \
  nvcuda::wmma::bmma_sync(d, a, b, d, nvcuda::wmma::experimental::bmmaBitOpAND, \
                          nvcuda::wmma::experimental::bmmaAccumulateOpPOPC)

#define WMMA_KERNEL(NAME, M, N, K, PREC, STORE, EPS, BROW, ACC, OP)                             \
  extern "C" __global__ void __launch_bounds__(128)                                             \
      NAME(const STORE* __restrict__ A, const STORE* __restrict__ B, const ACC* __restrict__ C, \
           ACC* __restrict__ D, long long T) {                                                  \
    probe::tiles<M, N, K, PREC, STORE, EPS, BROW, ACC>(                                         \
        A, B, C, D, T, [](auto& d, const auto& a, const auto& b) { OP_##OP; });                 \
  }

#define F16 half
#define BF16 __nv_bfloat16
#define TF32 nvcuda::wmma::precision::tf32
#define S4 nvcuda::wmma::experimental::precision::s4
#define U4 nvcuda::wmma::experimental::precision::u4
#define B1 nvcuda::wmma::experimental::precision::b1

// ---- kernels (one per line: name, M, N, K, element, storage, per-storage, B row-major, acc, op)
WMMA_KERNEL(wmma_f16_f32_m16n16k16, 16, 16, 16, F16, F16, 1, 0, float, MMA)
WMMA_KERNEL(wmma_f16_f32_m32n8k16, 32, 8, 16, F16, F16, 1, 0, float, MMA)
WMMA_KERNEL(wmma_f16_f32_m8n32k16, 8, 32, 16, F16, F16, 1, 0, float, MMA)
WMMA_KERNEL(wmma_f16_f32_m16n16k16_brow, 16, 16, 16, F16, F16, 1, 1, float, MMA)
WMMA_KERNEL(wmma_f16_f16_m16n16k16, 16, 16, 16, F16, F16, 1, 0, half, MMA)
WMMA_KERNEL(wmma_f16_f16_m32n8k16, 32, 8, 16, F16, F16, 1, 0, half, MMA)
WMMA_KERNEL(wmma_f16_f16_m8n32k16, 8, 32, 16, F16, F16, 1, 0, half, MMA)
WMMA_KERNEL(wmma_bf16_f32_m16n16k16, 16, 16, 16, BF16, BF16, 1, 0, float, MMA)
WMMA_KERNEL(wmma_bf16_f32_m32n8k16, 32, 8, 16, BF16, BF16, 1, 0, float, MMA)
WMMA_KERNEL(wmma_bf16_f32_m8n32k16, 8, 32, 16, BF16, BF16, 1, 0, float, MMA)
WMMA_KERNEL(wmma_tf32_f32_m16n16k8, 16, 16, 8, TF32, float, 1, 0, float, MMA)
WMMA_KERNEL(wmma_f64_f64_m8n8k4, 8, 8, 4, double, double, 1, 0, double, MMA)
WMMA_KERNEL(wmma_s8_s32_m16n16k16, 16, 16, 16, signed char, signed char, 1, 0, int, MMA)
WMMA_KERNEL(wmma_s8_s32_m32n8k16, 32, 8, 16, signed char, signed char, 1, 0, int, MMA)
WMMA_KERNEL(wmma_s8_s32_m8n32k16, 8, 32, 16, signed char, signed char, 1, 0, int, MMA)
WMMA_KERNEL(wmma_u8_s32_m16n16k16, 16, 16, 16, unsigned char, unsigned char, 1, 0, int, MMA)
WMMA_KERNEL(wmma_u8_s32_m32n8k16, 32, 8, 16, unsigned char, unsigned char, 1, 0, int, MMA)
WMMA_KERNEL(wmma_u8_s32_m8n32k16, 8, 32, 16, unsigned char, unsigned char, 1, 0, int, MMA)
WMMA_KERNEL(wmma_s4_s32_m8n8k32, 8, 8, 32, S4, uint8_t, 2, 0, int, MMA)
WMMA_KERNEL(wmma_u4_s32_m8n8k32, 8, 8, 32, U4, uint8_t, 2, 0, int, MMA)
WMMA_KERNEL(wmma_b1_s32_m8n8k128_xor, 8, 8, 128, B1, uint8_t, 8, 0, int, XOR)
WMMA_KERNEL(wmma_b1_s32_m8n8k128_and, 8, 8, 128, B1, uint8_t, 8, 0, int, AND)
