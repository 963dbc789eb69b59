// Ozaki scheme II on the GPU: line statistics, int8 residues, CRT reconstruction.
//
// The INT8 GEMMs between the residue kernels and the reconstruction are cuBLAS's
// (cublasGemmStridedBatchedEx, CUDA_R_8I -> CUDA_R_32I). Every step here is exact integer
// arithmetic carried in int64 or in float64 values that are integers below 2^53, followed by
// one correctly rounded conversion, so the results equal precision/gemm/ozaki.py's emulator bit
// for bit (same formulas: sym_fmod, the limb sums, round_limbs). Built with the project's
// numeric flags (-fmad=false, no FTZ): the float64 steps are the emulator's, op for op.

#include <cstdint>

namespace {

__device__ __forceinline__ double sym_fmod(double y, double m, double c27, double inv_m,
                                           double hi, double lo) {
  // y integer-valued, |y| <= 2^53: y = yh*2^27 + yl exactly; t = yh*(2^27 mod m) + yl exact.
  double yh = floor(y * 0x1p-27);
  double t = yh * c27 + (y - yh * 0x1p27);
  double r = t - rint(t * inv_m) * m;
  if (r > hi) r -= m;
  if (r < lo) r += m;
  return r;
}

struct ModConst {
  double m, c27, inv_m, hi, lo, u;
};

template <int NL>
__device__ __forceinline__ void normalize(long long (&a)[NL]) {
#pragma unroll
  for (int t = 0; t < NL - 1; ++t) {
    long long carry = a[t] >> 32;  // arithmetic shift (floor)
    a[t] &= 0xFFFFFFFFll;
    a[t + 1] += carry;
  }
}

// RN(X * 2^e) at precision p with smallest subnormal 2^emin_sub (ozaki.round_limbs).
template <int NL>
__device__ double round_limbs(long long (&a)[NL], long long e, int p, int emin_sub) {
  bool neg = a[NL - 1] < 0;
  if (neg) {
#pragma unroll
    for (int t = 0; t < NL; ++t) a[t] = -a[t];
    normalize<NL>(a);
  }
  long long bl = 0;
#pragma unroll
  for (int t = 0; t < NL; ++t)
    if (a[t] != 0) bl = 32ll * t + (64 - __clzll((unsigned long long)a[t]));
  long long r0 = bl > 64 ? bl - 64 : 0;
  unsigned long long window = 0;
  bool sticky = false;
#pragma unroll
  for (int t = 0; t < NL; ++t) {
    unsigned long long limb = (unsigned long long)a[t];
    long long sh = 32ll * t - r0;
    if (sh >= 0) {
      if (sh < 64) window |= limb << sh;
    } else if (sh > -32) {
      window |= limb >> (-sh);
      sticky |= (limb & ((1ull << (-sh)) - 1ull)) != 0;
    } else {
      sticky |= limb != 0;
    }
  }
  window |= sticky ? 1ull : 0ull;
  long long base = r0 + e;
  long long blw = bl - r0;
  long long r = blw - p;
  if (emin_sub - base > r) r = emin_sub - base;
  unsigned long long mant;
  long long ex;
  if (r <= 0) {
    mant = window;
    ex = base;
  } else if (r > 64) {
    mant = 0;
    ex = 0;
  } else {
    unsigned long long rem;
    if (r == 64) {
      mant = 0;
      rem = window;
    } else {
      mant = window >> r;
      rem = window & ((1ull << r) - 1ull);
    }
    unsigned long long half = 1ull << (r - 1);
    if (rem > half || (rem == half && (mant & 1ull))) mant += 1;
    ex = r + base;
  }
  if (ex > 4000) ex = 4000;  // overflows to inf either way; keeps the int argument in range
  if (ex < -4000) ex = -4000;
  double out = ldexp((double)mant, (int)ex);  // exact: mant <= 2^53 on the target's grid
  return neg ? -out : out;
}

}  // namespace

// ---------------------------------------------------------------------------- line stats
// Rows of a row-major (rows x cols) float64 matrix: one block per row. Outputs: the largest
// finite magnitude (as its bits, int64), the sum and count of the frexp exponents of the
// nonzero finite entries, and whether a NaN/Inf occurs. Exact, so order does not matter.
extern "C" __global__ void oz_stats_rows(const double* __restrict__ X, int rows, int cols,
                                         double* __restrict__ mx, long long* __restrict__ esum,
                                         long long* __restrict__ count, int* __restrict__ bad) {
  int i = blockIdx.x;
  if (i >= rows) return;
  const double* row = X + (size_t)i * cols;
  double m = 0.0;
  long long s = 0, c = 0;
  int b = 0;
  for (int k = threadIdx.x; k < cols; k += blockDim.x) {
    double x = row[k];
    if (isfinite(x)) {
      double ax = fabs(x);
      m = fmax(m, ax);
      if (ax != 0.0) {
        int e;
        frexp(ax, &e);
        s += e;
        c += 1;
      }
    } else {
      b = 1;
    }
  }
  __shared__ double sm[256];
  __shared__ long long ss[256], sc[256];
  __shared__ int sb[256];
  sm[threadIdx.x] = m;
  ss[threadIdx.x] = s;
  sc[threadIdx.x] = c;
  sb[threadIdx.x] = b;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w) {
      sm[threadIdx.x] = fmax(sm[threadIdx.x], sm[threadIdx.x + w]);
      ss[threadIdx.x] += ss[threadIdx.x + w];
      sc[threadIdx.x] += sc[threadIdx.x + w];
      sb[threadIdx.x] |= sb[threadIdx.x + w];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    mx[i] = sm[0];
    esum[i] = ss[0];
    count[i] = sc[0];
    bad[i] = sb[0];
  }
}

// Columns of a row-major (rows x cols) float64 matrix: grid (cols/256, chunks of rows); the
// partial results are combined with atomics (max of non-negative doubles = max of their bits).
extern "C" __global__ void oz_stats_cols(const double* __restrict__ X, int rows, int cols,
                                         int rows_per_chunk, unsigned long long* __restrict__ mx,
                                         unsigned long long* __restrict__ esum,
                                         unsigned long long* __restrict__ count,
                                         int* __restrict__ bad) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= cols) return;
  int r0 = blockIdx.y * rows_per_chunk;
  int r1 = min(rows, r0 + rows_per_chunk);
  double m = 0.0;
  long long s = 0, c = 0;
  int b = 0;
  for (int r = r0; r < r1; ++r) {
    double x = X[(size_t)r * cols + j];
    if (isfinite(x)) {
      double ax = fabs(x);
      m = fmax(m, ax);
      if (ax != 0.0) {
        int e;
        frexp(ax, &e);
        s += e;
        c += 1;
      }
    } else {
      b = 1;
    }
  }
  atomicMax(mx + j, (unsigned long long)__double_as_longlong(m));
  atomicAdd(esum + j, (unsigned long long)s);
  atomicAdd(count + j, (unsigned long long)c);
  if (b) atomicOr(bad + j, 1);
}

// ------------------------------------------------------------------------------ residues
// A (M x K row-major float64) -> res[l][i][k] (int8, row length Kp >= K, zero padding):
// y = rint(scalbn(A[i,k], shift[i])) (0 for NaN/Inf), res = y mod m_l, symmetric.
extern "C" __global__ void oz2_residues_rows(const double* __restrict__ A, int M, int K, int Kp,
                                             const long long* __restrict__ shift,
                                             const ModConst* __restrict__ mc, int L,
                                             int8_t* __restrict__ res) {
  size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  size_t total = (size_t)M * Kp;
  if (idx >= total) return;
  int i = (int)(idx / Kp);
  int k = (int)(idx % Kp);
  double y = 0.0;
  if (k < K) {
    double x = A[(size_t)i * K + k];
    if (isfinite(x)) y = rint(scalbn(x, (int)shift[i]));
  }
  for (int l = 0; l < L; ++l) {
    ModConst c = mc[l];
    res[(size_t)l * total + idx] = (int8_t)(int)sym_fmod(y, c.m, c.c27, c.inv_m, c.hi, c.lo);
  }
}

// Columns c0 .. c0+nb-1 of B (K x N row-major float64) -> res[l][j][k] (int8, B^T with row
// length Kp, rows nbp >= nb, zero padding), through a 32 x 32 shared-memory tile.
extern "C" __global__ void oz2_residues_cols(const double* __restrict__ B, int K, int N, int c0,
                                             int nb, int Kp, int nbp,
                                             const long long* __restrict__ shift,
                                             const ModConst* __restrict__ mc, int L,
                                             int8_t* __restrict__ res) {
  __shared__ double tile[32][33];
  int k0 = blockIdx.y * 32, j0 = blockIdx.x * 32;
  // load: threads (tx over columns j, ty over rows k)
  for (int dy = threadIdx.y; dy < 32; dy += blockDim.y) {
    int k = k0 + dy, j = j0 + threadIdx.x;
    double y = 0.0;
    if (k < K && j < nb) {
      double x = B[(size_t)k * N + c0 + j];
      if (isfinite(x)) y = rint(scalbn(x, (int)shift[c0 + j]));
    }
    tile[dy][threadIdx.x] = y;
  }
  __syncthreads();
  // store: threads (tx over k, ty over j)
  size_t plane = (size_t)nbp * Kp;
  for (int dy = threadIdx.y; dy < 32; dy += blockDim.y) {
    int j = j0 + dy, k = k0 + threadIdx.x;
    if (j >= nbp || k >= Kp) continue;
    double y = tile[threadIdx.x][dy];
    for (int l = 0; l < L; ++l) {
      ModConst c = mc[l];
      res[(size_t)l * plane + (size_t)j * Kp + k] =
          (int8_t)(int)sym_fmod(y, c.m, c.c27, c.inv_m, c.hi, c.lo);
    }
  }
}

// ------------------------------------------------------------------------ reconstruction
// C[l][i][j] (int32, M x nbp per modulus) -> D[i][c0 + j] = RN(T * 2^-(sa_i + sb_j)).
template <int NL, typename Out>
__device__ void reconstruct(const int* __restrict__ C, int M, int nb, int nbp, int L,
                            const ModConst* __restrict__ mc, const long long* __restrict__ W,
                            const long long* __restrict__ Ml, const long long* __restrict__ sa,
                            const long long* __restrict__ sb, int c0, int N, int p, int emin_sub,
                            Out* __restrict__ D) {
  size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= (size_t)M * nb) return;
  int i = (int)(idx / nb), j = (int)(idx % nb);
  size_t plane = (size_t)M * nbp;
  const int* cp = C + (size_t)i * nbp + j;
  long long acc[NL];
#pragma unroll
  for (int t = 0; t < NL; ++t) acc[t] = 0;
  double qest = 0.0;
  for (int l = 0; l < L; ++l) {
    ModConst c = mc[l];
    double r = sym_fmod((double)cp[(size_t)l * plane], c.m, c.c27, c.inv_m, c.hi, c.lo);
    long long ri = (long long)r;
#pragma unroll
    for (int t = 0; t < NL; ++t) acc[t] += ri * W[l * NL + t];
    qest = qest + r * c.u;
  }
  long long q = (long long)rint(qest);
#pragma unroll
  for (int t = 0; t < NL; ++t) acc[t] -= q * Ml[t];
  normalize<NL>(acc);
  long long e = -(sa[i] + sb[c0 + j]);
  D[(size_t)i * N + c0 + j] = (Out)round_limbs<NL>(acc, e, p, emin_sub);
}

#define OZ_RECON(NL, NAME, OUT)                                                                \
  extern "C" __global__ void NAME(const int* __restrict__ C, int M, int nb, int nbp, int L,    \
                                  const ModConst* __restrict__ mc,                             \
                                  const long long* __restrict__ W,                             \
                                  const long long* __restrict__ Ml,                            \
                                  const long long* __restrict__ sa,                            \
                                  const long long* __restrict__ sb, int c0, int N, int p,      \
                                  int emin_sub, OUT* __restrict__ D) {                         \
    reconstruct<NL, OUT>(C, M, nb, nbp, L, mc, W, Ml, sa, sb, c0, N, p, emin_sub, D);          \
  }

OZ_RECON(2, oz2_reconstruct_nl2_f64, double)
OZ_RECON(3, oz2_reconstruct_nl3_f64, double)
OZ_RECON(4, oz2_reconstruct_nl4_f64, double)
OZ_RECON(5, oz2_reconstruct_nl5_f64, double)
OZ_RECON(2, oz2_reconstruct_nl2_f32, float)
OZ_RECON(3, oz2_reconstruct_nl3_f32, float)
OZ_RECON(4, oz2_reconstruct_nl4_f32, float)
OZ_RECON(5, oz2_reconstruct_nl5_f32, float)
