// Ozaki scheme I on the GPU: the slices of the scaled lines, and the exact sum of the slice
// products with its one rounding. The slice products between them are cuBLAS GEMMs
// (precision/gemm/ozaki1_cuda.py); the line statistics are ozaki2.cu's.
//
// Spec (precision/gemm/ozaki.py, scheme I): a line (row of A, column of B) with largest finite
// magnitude below 2^emax is scaled by 2^s, s = 7T - emax, and truncated: y = trunc(x 2^s),
// |y| < 2^(7T) (0 for NaN/Inf). Its T signed base-2^7 digits d_0 .. d_{T-1}, most significant
// first, all with the sign of y: |y| = sum_u |d_u| 2^(7(T-1-u)), |d_u| <= 127. The slice
// products G_g = sum_{s+t=g} a_s b_t (1-based s, t; g = 2 .. T+1) are summed exactly into
// X = sum_g G_g 2^(7(T+1-g)), and D = RN(X 2^(emax_a + emax_b - 7T - 7)) in the target. Every
// step is exact integer arithmetic before that rounding, so the bits equal the emulator's.
//
// Layouts (row-major, K padded to kp with zero digits):
//   A's digits  [i][u][k]      (slice u = s - 1, row i of the row block)
//   B's digits  [j][r][k]      (r = T - t: B's slices in *reverse* order, column j)
// so that for one g the pairs s = 1 .. g-1 are one contiguous run of A's slices and one of B's
// (s ascending <-> t descending <-> r ascending): a single GEMM over a concatenated K.
// Digits are int8 (INT8 tensor cores) or the fp16 bits of the same integer (|d| <= 127 is
// exact in fp16).

#include <cstdint>

// The element type of A and B as the digit kernels read them: double, or float when built
// with -DOZ_IN=float (ozaki1_cuda.py picks the module by the inputs' dtype); each entry is
// converted to double in registers (exact), so both give the same digits for the same values.
#ifndef OZ_IN
#define OZ_IN double
#endif

namespace {

#include "ozaki_round.cuh"

// |trunc(x 2^s)| (< 2^56, exact as an integer) and its sign; 0 for NaN/Inf. The scaling is
// exact (a power of two) unless the result is subnormal, and then it is below 1 and the
// truncation gives 0 either way.
__device__ __forceinline__ unsigned long long scaled_mag(double x, int s, bool* neg) {
  *neg = false;
  if (!isfinite(x)) return 0ull;
  double v = trunc(scalbn(x, s));
  *neg = v < 0.0;
  return (unsigned long long)fabs(v);
}

// The fp16 bits of an integer |d| <= 127 (exact: at most 7 significant bits).
__device__ __forceinline__ unsigned half_bits(int d) {
  if (d == 0) return 0u;
  unsigned a = (unsigned)(d < 0 ? -d : d);
  int e = 63 - __clzll((long long)a);  // a in [2^e, 2^(e+1)), e in 0 .. 6
  unsigned mant = (a << (10 - e)) & 0x3FFu;
  return (d < 0 ? 0x8000u : 0u) | ((unsigned)(e + 15) << 10) | mant;
}

// Digit u (0 = most significant) of T, signed.
__device__ __forceinline__ int digit(unsigned long long mag, bool neg, int T, int u) {
  int d = (int)((mag >> (7 * (T - 1 - u))) & 127ull);
  return neg ? -d : d;
}

// Four digits as stored: int8 bytes in one 32-bit word, or fp16 bits in one 64-bit word.
template <typename D>
struct Quad;
template <>
struct Quad<int8_t> {
  using Word = unsigned;
  __device__ __forceinline__ static Word pack(const int (&d)[4]) {
    Word w = 0u;
#pragma unroll
    for (int v = 0; v < 4; ++v) w |= ((unsigned)d[v] & 0xFFu) << (8 * v);
    return w;
  }
};
template <>
struct Quad<uint16_t> {
  using Word = unsigned long long;
  __device__ __forceinline__ static Word pack(const int (&d)[4]) {
    Word w = 0ull;
#pragma unroll
    for (int v = 0; v < 4; ++v) w |= (unsigned long long)half_bits(d[v]) << (16 * v);
    return w;
  }
};

// The T digit quads of four values of one line: out + u * ustride for digit u (in elements).
template <typename D>
__device__ __forceinline__ void store_digits(const double (&x)[4], int s, int T, bool reverse,
                                             D* out, size_t ustride) {
  unsigned long long mag[4];
  bool neg[4];
#pragma unroll
  for (int v = 0; v < 4; ++v) mag[v] = scaled_mag(x[v], s, &neg[v]);
  for (int u = 0; u < T; ++u) {
    int d[4];
#pragma unroll
    for (int v = 0; v < 4; ++v) d[v] = digit(mag[v], neg[v], T, u);
    int slot = reverse ? T - 1 - u : u;
    *reinterpret_cast<typename Quad<D>::Word*>(out + (size_t)slot * ustride) = Quad<D>::pack(d);
  }
}

// Rows r0 .. r0+mb-1 of A (M x K): out[i][u][k] for i < mb, k < kp (multiple of 4). One thread
// per four consecutive k of a row.
template <typename D>
__device__ void digits_rows(const OZ_IN* __restrict__ A, int K, int r0, int mb, int kp,
                            const int* __restrict__ emax, int T, D* __restrict__ out) {
  long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  int quads = kp >> 2;
  int i = (int)(idx / quads);
  int k = 4 * (int)(idx - (long long)i * quads);
  if (i >= mb) return;
  const OZ_IN* row = A + (size_t)(r0 + i) * K;
  double x[4];
#pragma unroll
  for (int v = 0; v < 4; ++v) x[v] = (k + v < K) ? (double)row[k + v] : 0.0;
  store_digits<D>(x, 7 * T - emax[r0 + i], T, false, out + (size_t)i * T * kp + k, kp);
}

// Columns c0 .. c0+nb-1 of B (K x N), transposed: out[j][r][k] for j < nbp (zero digits for
// j >= nb), k < kp. Blocks of 256 threads own 32 columns x 128 k: the tile is read along B's
// rows (coalesced) into shared memory, then each thread writes the digit quads of four
// (column, k-quad) items, consecutive threads along k (coalesced).
template <typename D>
__device__ void digits_cols(const OZ_IN* __restrict__ B, int K, int N, int c0, int nb, int nbp,
                            int kp, const int* __restrict__ emax, int T, D* __restrict__ out) {
  __shared__ double tile[128][33];
  int j0 = 32 * blockIdx.x, k0 = 128 * blockIdx.y;
  for (int e = threadIdx.x; e < 128 * 32; e += blockDim.x) {
    int kk = e >> 5, jj = e & 31;
    int k = k0 + kk, j = j0 + jj;
    tile[kk][jj] = (k < K && j < nb) ? (double)B[(size_t)k * N + c0 + j] : 0.0;
  }
  __syncthreads();
  for (int e = threadIdx.x; e < 32 * 32; e += blockDim.x) {
    int jj = e >> 5, q = e & 31;
    int j = j0 + jj, k = k0 + 4 * q;
    if (j >= nbp || k >= kp) continue;
    double x[4];
#pragma unroll
    for (int v = 0; v < 4; ++v) x[v] = tile[4 * q + v][jj];
    int s = j < nb ? 7 * T - emax[c0 + j] : 0;
    store_digits<D>(x, s, T, true, out + (size_t)j * T * kp + k, kp);
  }
}

// One output per thread (i < mb, j < nb of the block at rows r0, columns c0): X += sum over
// the P planes of G[p][i][j] 2^w[p] (G: int32, or fp32 holding integers below 2^24), X an
// exact 128-bit integer (|X| < 2^94). `first`: X starts at 0, else from acc; `last`: D[r0+i]
// [c0+j] = RN(X 2^(emax_a + emax_b - 7T - 7)), else X goes back to acc.
template <typename Plane, typename Out>
__device__ void combine(const Plane* __restrict__ G, int P, const int* __restrict__ w, int mb,
                        int nb, int nbp, __int128* __restrict__ acc, int first, int last,
                        const int* __restrict__ emax_a, const int* __restrict__ emax_b, int r0,
                        int c0, int T, int N, int p, int emin_sub, Out* __restrict__ D) {
  long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  int i = (int)(idx / nb);
  int j = (int)(idx - (long long)i * nb);
  if (i >= mb) return;
  size_t at = (size_t)i * nbp + j, plane = (size_t)mb * nbp;
  __int128 X = first ? (__int128)0 : acc[at];
  for (int q = 0; q < P; ++q) X += (__int128)(long long)G[(size_t)q * plane + at] << w[q];
  if (!last) {
    acc[at] = X;
    return;
  }
  long long a[3];
  a[0] = (long long)(X & (__int128)0xFFFFFFFFll);
  a[1] = (long long)((X >> 32) & (__int128)0xFFFFFFFFll);
  a[2] = (long long)(X >> 64);
  long long e = (long long)emax_a[r0 + i] + emax_b[c0 + j] - 7ll * T - 7;
  D[(size_t)(r0 + i) * N + c0 + j] = round_out<3, Out>(a, e, p, emin_sub);
}

}  // namespace

#define OZ1_DIGITS(SUFFIX, D)                                                                   \
  extern "C" __global__ void oz1_digits_rows_##SUFFIX(                                          \
      const OZ_IN* __restrict__ A, int K, int r0, int mb, int kp, const int* __restrict__ emax, \
      int T, D* __restrict__ out) {                                                             \
    digits_rows<D>(A, K, r0, mb, kp, emax, T, out);                                             \
  }                                                                                             \
  extern "C" __global__ void oz1_digits_cols_##SUFFIX(                                          \
      const OZ_IN* __restrict__ B, int K, int N, int c0, int nb, int nbp, int kp,               \
      const int* __restrict__ emax, int T, D* __restrict__ out) {                               \
    digits_cols<D>(B, K, N, c0, nb, nbp, kp, emax, T, out);                                     \
  }
OZ1_DIGITS(i8, int8_t)
OZ1_DIGITS(f16, uint16_t)

#define OZ1_COMBINE(NAME, PLANE, OUT)                                                             \
  extern "C" __global__ void NAME(const PLANE* __restrict__ G, int P, const int* __restrict__ w,  \
                                  int mb, int nb, int nbp, __int128* __restrict__ acc, int first, \
                                  int last, const int* __restrict__ emax_a,                       \
                                  const int* __restrict__ emax_b, int r0, int c0, int T, int N,   \
                                  int p, int emin_sub, OUT* __restrict__ D) {                     \
    combine<PLANE, OUT>(G, P, w, mb, nb, nbp, acc, first, last, emax_a, emax_b, r0, c0, T, N, p,  \
                        emin_sub, D);                                                             \
  }
OZ1_COMBINE(oz1_combine_i32_f64, int, double)
OZ1_COMBINE(oz1_combine_i32_f32, int, float)
OZ1_COMBINE(oz1_combine_f32_f64, float, double)
OZ1_COMBINE(oz1_combine_f32_f32, float, float)
