// Ozaki scheme II on the GPU: line statistics, int8 residues, CRT reconstruction.
//
// The INT8 GEMMs between the residue kernels and the reconstruction are cuBLAS's
// (cublasGemmStridedBatchedEx, CUDA_R_8I -> CUDA_R_32I). Every step here is exact integer
// arithmetic carried in int64 or in float64 values that are integers below 2^53, followed by
// one correctly rounded conversion, so the results equal precision/gemm/ozaki.py's emulator bit
// for bit (same formulas: sym_fmod, the limb sums, round_limbs). Built with the project's
// numeric flags (-fmad=false, no FTZ): the float64 steps are the emulator's, op for op.

#include <cstdint>

struct ModConst {
  double m, c27, inv_m, hi, lo, u;
};

// Per-modulus constants, CRT weights w_l in 32-bit limbs and the limbs of M, set by the host
// (precision/gemm/ozaki_cuda.py) before each launch; read warp-uniformly (constant cache).
#define OZ_MAX_MODULI 20
#define OZ_MAX_LIMBS 5
extern "C" {
__constant__ ModConst c_mc[OZ_MAX_MODULI];
__constant__ unsigned int c_W[OZ_MAX_MODULI * OZ_MAX_LIMBS];
__constant__ unsigned int c_Ml[OZ_MAX_LIMBS];
}

namespace {

__device__ __forceinline__ double sym_fmod(double y, double m, double c27, double inv_m, double hi,
                                           double lo) {
  // y integer-valued, |y| <= 2^53: y = yh*2^27 + yl exactly; t = yh*(2^27 mod m) + yl exact.
  double yh = floor(y * 0x1p-27);
  double t = yh * c27 + (y - yh * 0x1p27);
  double r = t - rint(t * inv_m) * m;
  if (r > hi) r -= m;
  if (r < lo) r += m;
  return r;
}

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
// A (M x K row-major float64) -> res[l][i][k] (int8, row length Kp >= K, Kp % 16 == 0, zero
// padding): y = rint(scalbn(A[i,k], shift[i])) (0 for NaN/Inf), res = y mod m_l, symmetric.
// Grid (Kp/4/256 blocks over k, rows); each thread four consecutive k, one char4 per modulus.
extern "C" __global__ void oz2_residues_rows(const double* __restrict__ A, int M, int K, int Kp,
                                             const long long* __restrict__ shift, int L,
                                             int8_t* __restrict__ res) {
  int k = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
  if (k >= Kp) return;
  size_t plane = (size_t)M * Kp;
  for (int i = blockIdx.y; i < M; i += gridDim.y) {
    int sh = (int)shift[i];
    const double* row = A + (size_t)i * K;
    double y[4];
#pragma unroll
    for (int v = 0; v < 4; ++v) {
      y[v] = 0.0;
      if (k + v < K) {
        double x = row[k + v];
        if (isfinite(x)) y[v] = rint(scalbn(x, sh));
      }
    }
    char4* out = reinterpret_cast<char4*>(res + (size_t)i * Kp + k);
    for (int l = 0; l < L; ++l) {
      const ModConst& c = c_mc[l];
      char4 q;
      q.x = (signed char)(int)sym_fmod(y[0], c.m, c.c27, c.inv_m, c.hi, c.lo);
      q.y = (signed char)(int)sym_fmod(y[1], c.m, c.c27, c.inv_m, c.hi, c.lo);
      q.z = (signed char)(int)sym_fmod(y[2], c.m, c.c27, c.inv_m, c.hi, c.lo);
      q.w = (signed char)(int)sym_fmod(y[3], c.m, c.c27, c.inv_m, c.hi, c.lo);
      out[(size_t)l * plane / 4] = q;
    }
  }
}

// Columns c0 .. c0+nb-1 of B (K x N row-major float64) -> res[l][j][k] (int8, B^T with row
// length Kp, rows nbp >= nb, zero padding), through a 64 (k) x 32 (j) shared-memory tile.
// Block (32, 8); grid (nbp/32, Kp/64).
extern "C" __global__ void oz2_residues_cols(const double* __restrict__ B, int K, int N, int c0,
                                             int nb, int Kp, int nbp,
                                             const long long* __restrict__ shift, int L,
                                             int8_t* __restrict__ res) {
  __shared__ double tile[64][33];
  int k0 = blockIdx.y * 64, j0 = blockIdx.x * 32;
  int jl = j0 + threadIdx.x;
  int sh = jl < nb ? (int)shift[c0 + jl] : 0;
  for (int dy = threadIdx.y; dy < 64; dy += blockDim.y) {
    int k = k0 + dy;
    double y = 0.0;
    if (k < K && jl < nb) {
      double x = B[(size_t)k * N + c0 + jl];
      if (isfinite(x)) y = rint(scalbn(x, sh));
    }
    tile[dy][threadIdx.x] = y;
  }
  __syncthreads();
  size_t plane = (size_t)nbp * Kp;
  int tid = threadIdx.y * blockDim.x + threadIdx.x;
  for (int w = tid; w < 32 * 16; w += blockDim.x * blockDim.y) {
    int jj = w / 16, kq = w % 16;
    int j = j0 + jj, k = k0 + 4 * kq;
    if (j >= nbp || k >= Kp) continue;
    char4* out = reinterpret_cast<char4*>(res + (size_t)j * Kp + k);
    for (int l = 0; l < L; ++l) {
      const ModConst& c = c_mc[l];
      char4 q;
      q.x = (signed char)(int)sym_fmod(tile[4 * kq + 0][jj], c.m, c.c27, c.inv_m, c.hi, c.lo);
      q.y = (signed char)(int)sym_fmod(tile[4 * kq + 1][jj], c.m, c.c27, c.inv_m, c.hi, c.lo);
      q.z = (signed char)(int)sym_fmod(tile[4 * kq + 2][jj], c.m, c.c27, c.inv_m, c.hi, c.lo);
      q.w = (signed char)(int)sym_fmod(tile[4 * kq + 3][jj], c.m, c.c27, c.inv_m, c.hi, c.lo);
      out[(size_t)l * plane / 4] = q;
    }
  }
}

// ------------------------------------------------------------------------ reconstruction
// C[l][i][j] (int32, M x nbp per modulus) -> D[i][c0 + j] = RN(T * 2^-(sa_i + sb_j)).
// Grid (nb/256 over j, rows). The residue of C (|C| < 2^31) is r = C - m*rint(C/m) moved
// into the symmetric range: exact, and residues are unique, so it equals the emulator's.
template <int NL, typename Out>
__device__ void reconstruct(const int* __restrict__ C, int M, int nb, int nbp, int L,
                            const long long* __restrict__ sa, const long long* __restrict__ sb,
                            int c0, int N, int p, int emin_sub, Out* __restrict__ D) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= nb) return;
  size_t plane = (size_t)M * nbp;
  long long ebj = sb[c0 + j];
  for (int i = blockIdx.y; i < M; i += gridDim.y) {
    const int* cp = C + (size_t)i * nbp + j;
    long long acc[NL];
#pragma unroll
    for (int t = 0; t < NL; ++t) acc[t] = 0;
    double qest = 0.0;
    for (int l = 0; l < L; ++l) {
      const ModConst& c = c_mc[l];
      double y = (double)__ldg(cp + (size_t)l * plane);
      double r = y - rint(y * c.inv_m) * c.m;
      if (r > c.hi) r -= c.m;
      if (r < c.lo) r += c.m;
      int ri = (int)r;
#pragma unroll
      for (int t = 0; t < NL; ++t) acc[t] += (long long)ri * (long long)c_W[l * NL + t];
      qest = qest + r * c.u;
    }
    long long q = (long long)rint(qest);
#pragma unroll
    for (int t = 0; t < NL; ++t) acc[t] -= q * (long long)c_Ml[t];
    normalize<NL>(acc);
    long long e = -(sa[i] + ebj);
    D[(size_t)i * N + c0 + j] = (Out)round_limbs<NL>(acc, e, p, emin_sub);
  }
}

#define OZ_RECON(NL, NAME, OUT)                                                                    \
  extern "C" __global__ void NAME(                                                                 \
      const int* __restrict__ C, int M, int nb, int nbp, int L, const long long* __restrict__ sa,  \
      const long long* __restrict__ sb, int c0, int N, int p, int emin_sub, OUT* __restrict__ D) { \
    reconstruct<NL, OUT>(C, M, nb, nbp, L, sa, sb, c0, N, p, emin_sub, D);                         \
  }

OZ_RECON(2, oz2_reconstruct_nl2_f64, double)
OZ_RECON(3, oz2_reconstruct_nl3_f64, double)
OZ_RECON(4, oz2_reconstruct_nl4_f64, double)
OZ_RECON(5, oz2_reconstruct_nl5_f64, double)
OZ_RECON(2, oz2_reconstruct_nl2_f32, float)
OZ_RECON(3, oz2_reconstruct_nl3_f32, float)
OZ_RECON(4, oz2_reconstruct_nl4_f32, float)
OZ_RECON(5, oz2_reconstruct_nl5_f32, float)
