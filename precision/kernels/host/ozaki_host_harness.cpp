// Host harness: precision/kernels/ozaki2.cu and ozaki1.cu compiled by g++ (with the shims of
// ozaki_host_shim.h) into a shared library that precision.gemm.ozaki_host loads with ctypes.
// Built once per input type (A and B as OZ_IN: double, or float with -DOZ_IN=float).
// Serial drivers: one call per (block, thread); oz2_residues_cols runs every block twice (the
// first pass fills the shared tile, the second computes from it).
// clang-format off
// (in this order: the shims, the globals the kernels use, then the kernels' sources)
#include "ozaki_host_shim.h"
#include <functional>
#include <memory>
#include <vector>
dim3s blockIdx, blockDim, gridDim;
thread_local dim3s threadIdx;
bool g_threaded = false;
unsigned long long g_slot[1024];
BlockBarrier g_bar;
#include "ozaki2.cu"
#include "ozaki1.cu"
// clang-format on
// A block-cooperative kernel body run as `blocks` blocks of nt CUDA threads, one fiber per CUDA
// thread, one block at a time (nt: any multiple of 32). Deterministic: fibers run in thread
// order within each barrier interval. Returns 1 if the threads of a block diverge at a barrier
// (some end while others wait: a deadlock on the GPU), else 0.
static std::function<void()> g_body;
static bool g_fiber_ended;
#if OZ_FAST_FIBERS
asm(".text\n.globl oz_fiber_switch\n.type oz_fiber_switch,@function\noz_fiber_switch:\n"
    " pushq %rbp\n pushq %rbx\n pushq %r12\n pushq %r13\n pushq %r14\n pushq %r15\n"
    " movq %rsp, (%rdi)\n movq %rsi, %rsp\n"
    " popq %r15\n popq %r14\n popq %r13\n popq %r12\n popq %rbx\n popq %rbp\n ret\n"
    ".size oz_fiber_switch, .-oz_fiber_switch\n");
// A fiber's first switch "returns" here; an ended fiber hands control back for good (the
// scheduler never resumes it).
static void fiber_entry() {
  g_body();
  g_fiber_ended = true;
  for (;;) g_bar.wait();
}
using Fiber = void*;  // the fiber's saved stack pointer
static void fiber_start(Fiber& fiber, char* stack, size_t size) {
  // registers popped by the first switch (zeros), then its return address; the slot above
  // is where a call would have left fiber_entry's own return address (16-byte alignment)
  void** sp = reinterpret_cast<void**>(reinterpret_cast<uintptr_t>(stack + size) & ~uintptr_t{15});
  *--sp = nullptr;
  *--sp = reinterpret_cast<void*>(&fiber_entry);
  for (int i = 0; i < 6; ++i) *--sp = nullptr;
  fiber = sp;
}
static void fiber_resume(Fiber& fiber) {
  g_bar.current = &fiber;
  oz_fiber_switch(&g_bar.scheduler, fiber);
}
#else
static void fiber_entry() {
  g_body();
  g_fiber_ended = true;
}
using Fiber = ucontext_t;
static void fiber_start(Fiber& fiber, char* stack, size_t size) {
  getcontext(&fiber);
  fiber.uc_stack.ss_sp = stack;
  fiber.uc_stack.ss_size = size;
  fiber.uc_link = &g_bar.scheduler;  // where it goes when it ends
  makecontext(&fiber, fiber_entry, 0);
}
static void fiber_resume(Fiber& fiber) {
  g_bar.current = &fiber;
  swapcontext(&g_bar.scheduler, &fiber);
}
#endif
template <class Body>
static int blocks_threaded(unsigned blocks, unsigned nt, Body body) {
  constexpr size_t kStack = 256 * 1024;
  blockDim = {nt, 1, 1};
  gridDim = {blocks, 1, 1};
  g_threaded = true;
  g_body = body;
  std::vector<Fiber> fib(nt);
  // Not value-initialised: a stack's pages are touched (and committed) only as deep as
  // the kernel goes.
  std::unique_ptr<char[]> stacks(new char[kStack * nt]);
  for (unsigned r = 0; r < blocks; ++r) {
    blockIdx = {r, 0, 0};
    for (unsigned t = 0; t < nt; ++t) fiber_start(fib[t], stacks.get() + kStack * t, kStack);
    // One round runs every fiber to its next barrier. All of them wait there (next round), or
    // all end (the block is done); anything else is a divergent barrier.
    for (unsigned ended = 0; ended < nt;) {
      ended = 0;
      for (unsigned t = 0; t < nt; ++t) {
        threadIdx = {t, 0, 0};
        // Returns when the fiber waits at a barrier, or when it ends (after fiber_entry has
        // set g_fiber_ended).
        g_fiber_ended = false;
        fiber_resume(fib[t]);
        ended += g_fiber_ended;
      }
      if (ended != 0 && ended != nt) {  // the rest wait at a barrier the ended ones never reach
        g_threaded = false;
        return 1;
      }
    }
  }
  g_threaded = false;
  return 0;
}
// Self-test of the fiber scheduler: a block whose threads exchange values through shared
// memory across a barrier (must see every other thread's write: returns 0 when all did), and
// one whose thread 0 skips the barrier (must be reported as divergent: returns 1).
extern "C" int barrier_selftest(int divergent) {
  static int slot[64], wrong;
  wrong = 0;
  int rc = blocks_threaded(2, 64, [=] {
    const unsigned t = threadIdx.x;
    slot[t] = (int)(t + 100 * blockIdx.x);
    if (divergent && t == 0) return;
    __syncthreads();
    if (slot[63 - t] != (int)(63 - t + 100 * blockIdx.x)) wrong = 1;
    __syncthreads();
  });
  return divergent ? rc : rc + 2 * wrong;
}
// oz2_stats_rows, one block per row (the GPU uses 256 threads).
extern "C" int stats_rows_threaded(const OZ_IN* X, int rows, int cols, int q2, int has_q2,
                                   int* emax, long long* esum, int* count, unsigned long long* nfix,
                                   int* bad, long long* shift, unsigned nt) {
  return blocks_threaded((unsigned)rows, nt, [=] {
    oz2_stats_rows(X, rows, cols, q2, has_q2, emax, esum, count, nfix, bad, shift);
  });
}
// oz2_rows_fused, one block per padded row.
extern "C" int rows_fused_threaded(const OZ_IN* A, int M, int K, int Mp, int Kp, int q2, int* emax,
                                   long long* esum, int* count, unsigned long long* nfix, int* bad,
                                   long long* shift, int L, int8_t* res, unsigned nt) {
  return blocks_threaded((unsigned)Mp, nt, [=] {
    oz2_rows_fused(A, M, K, Mp, Kp, q2, emax, esum, count, nfix, bad, shift, L, res);
  });
}
// oz2_specials_f64 / _f32: blocks of nt columns x kSpecialRows rows (a 1-D grid).
extern "C" int specials_f64_threaded(const OZ_IN* A, const OZ_IN* B, int M, int N, int K,
                                     const int* bad, const int* ea, const int* eb, double* D,
                                     unsigned nt) {
  unsigned blocks = (unsigned)(((N + nt - 1) / nt) * ((M + kSpecialRows - 1) / kSpecialRows));
  return blocks_threaded(blocks, nt, [=] { oz2_specials_f64(A, B, M, N, K, bad, ea, eb, D); });
}
extern "C" int specials_f32_threaded(const OZ_IN* A, const OZ_IN* B, int M, int N, int K,
                                     const int* bad, const int* ea, const int* eb, float* D,
                                     unsigned nt) {
  unsigned blocks = (unsigned)(((N + nt - 1) / nt) * ((M + kSpecialRows - 1) / kSpecialRows));
  return blocks_threaded(blocks, nt, [=] { oz2_specials_f32(A, B, M, N, K, bad, ea, eb, D); });
}
static void grid1(long long threads, void (*f)()) {
  blockDim = {256, 1, 1};
  long long nb = (threads + 255) / 256;
  for (long long b = 0; b < nb; ++b)
    for (unsigned t = 0; t < 256; ++t) {
      blockIdx = {(unsigned)b, 0, 0};
      threadIdx = {t, 0, 0};
      f();
    }
}
static const OZ_IN* gA;
static int gM, gK, gMp, gKp, gL;
static const long long* gS;
static int8_t* gR;
static void res_rows_k() { oz2_residues_rows(gA, gM, gK, gMp, gKp, gS, gL, gR); }
extern "C" void residues_rows(const OZ_IN* A, int M, int K, int Mp, int Kp, const long long* s,
                              int L, int8_t* r) {
  gA = A;
  gM = M;
  gK = K;
  gMp = Mp;
  gKp = Kp;
  gS = s;
  gL = L;
  gR = r;
  grid1((long long)Mp * (Kp / 4), res_rows_k);
}
static const void* gC;
static int gnb, gnbp, gc0, gN, gp, gemin, gNL, gi8, gf64;
static const long long *gsa, *gsb;
static void* gD;
template <int NL>
static void rk() {
  if (gi8) {
    if (gf64)
      reconstruct<NL, int8_t, double>((const int8_t*)gC, gM, gMp, gnb, gnbp, gL, gsa, gsb, gc0, gN,
                                      gp, gemin, (double*)gD);
    else
      reconstruct<NL, int8_t, float>((const int8_t*)gC, gM, gMp, gnb, gnbp, gL, gsa, gsb, gc0, gN,
                                     gp, gemin, (float*)gD);
  } else {
    if (gf64)
      reconstruct<NL, int, double>((const int*)gC, gM, gMp, gnb, gnbp, gL, gsa, gsb, gc0, gN, gp,
                                   gemin, (double*)gD);
    else
      reconstruct<NL, int, float>((const int*)gC, gM, gMp, gnb, gnbp, gL, gsa, gsb, gc0, gN, gp,
                                  gemin, (float*)gD);
  }
}
extern "C" void recon(const void* C, int i8, int M, int Mp, int nb, int nbp, int L,
                      const long long* sa, const long long* sb, int c0, int N, int p, int emin,
                      int nl, int f64, void* D) {
  gC = C;
  gi8 = i8;
  gM = M;
  gMp = Mp;
  gnb = nb;
  gnbp = nbp;
  gL = L;
  gsa = sa;
  gsb = sb;
  gc0 = c0;
  gN = N;
  gp = p;
  gemin = emin;
  gf64 = f64;
  gD = D;
  void (*f)() = nl == 2 ? rk<2> : nl == 3 ? rk<3> : nl == 4 ? rk<4> : rk<5>;
  grid1((long long)M * (nbp / 4), f);
}
extern "C" void stats_cols(const OZ_IN* X, int rows, int cols, int q2, int* emax,
                           unsigned long long* esum, int* count, unsigned long long* nfix, int* bad,
                           long long* shift) {
  int chunk = 128;
  blockDim = {256, 1, 1};
  for (int pass = 0; pass < 2; ++pass)
    for (unsigned by = 0; by < (unsigned)((rows + chunk - 1) / chunk); ++by)
      for (unsigned bx = 0; bx < (unsigned)((cols + 255) / 256); ++bx)
        for (unsigned t = 0; t < 256; ++t) {
          blockIdx = {bx, by, 0};
          threadIdx = {t, 0, 0};
          if (pass == 0)
            oz2_stats_cols_max(X, rows, cols, chunk, emax, esum, count, bad);
          else
            oz2_stats_cols_nfix(X, rows, cols, chunk, emax, nfix);
        }
  for (unsigned bx = 0; bx < (unsigned)((cols + 255) / 256); ++bx)
    for (unsigned t = 0; t < 256; ++t) {
      blockIdx = {bx, 0, 0};
      threadIdx = {t, 0, 0};
      oz2_shifts(cols, emax, count, nfix, q2, 1, shift);
    }
}
extern "C" void residues_cols(const OZ_IN* B, int K, int N, int c0, int nb, int Kp, int nbp,
                              const long long* s, int L, int8_t* r) {
  blockDim = {256, 1, 1};
  for (unsigned by = 0; by < (unsigned)((Kp + 127) / 128); ++by)
    for (unsigned bx = 0; bx < (unsigned)((nbp + 31) / 32); ++bx)
      for (int pass = 0; pass < 2; ++pass)  // pass 0 fills the shared tile, pass 1 computes
        for (unsigned t = 0; t < 256; ++t) {
          blockIdx = {bx, by, 0};
          threadIdx = {t, 0, 0};
          oz2_residues_cols(B, K, N, c0, nb, Kp, nbp, s, L, r);
        }
}
template <int NL>
static void round_n(const long long* a, const long long* e, int n, int f64, int p, int emin,
                    void* out) {
  for (int i = 0; i < n; ++i) {
    long long l[NL];
    for (int t = 0; t < NL; ++t) l[t] = a[(size_t)i * NL + t];
    if (f64)
      ((double*)out)[i] = round_out<NL, double>(l, e[i], p, emin);
    else
      ((float*)out)[i] = round_out<NL, float>(l, e[i], p, emin);
  }
}
// residue_low_byte (ozaki_residue.cuh: the fused GEMM's epilogue and the int32 reader) on n
// int32 values for one odd modulus m in (128, 255]: the low bytes, as signed bytes.
extern "C" void residue_bytes(const int* c, int n, int m, signed char* out) {
  const float inv = 1.0f / (float)m;  // fl32(1/m), as __frcp_rn on the GPU
  const int c16m = residue_c16m(m);
  for (int i = 0; i < n; ++i) out[i] = (signed char)residue_low_byte(c[i], inv, c16m, -m);
}
// sym_mod (ozaki_residue.cuh: the fused GEMM's epilogue for any other modulus) on n int32 values
// for one modulus m in [2, 256], with the kernel's inv, lo and hi: the residues.
extern "C" void sym_mod_values(const int* c, int n, int m, int* out) {
  const float inv = 1.0f / (float)m;  // fl32(1/m), as __frcp_rn on the GPU
  const int lo = -(m / 2), hi = (m + 1) / 2 - 1;
  for (int i = 0; i < n; ++i) out[i] = sym_mod(c[i], m, inv, lo, hi);
}
extern "C" void round_test(const long long* a, const long long* e, int n, int nl, int f64, int p,
                           int emin, void* out) {
  if (nl == 2) round_n<2>(a, e, n, f64, p, emin, out);
  if (nl == 3) round_n<3>(a, e, n, f64, p, emin, out);
  if (nl == 4) round_n<4>(a, e, n, f64, p, emin, out);
  if (nl == 5) round_n<5>(a, e, n, f64, p, emin, out);
}
// Generic launcher: `a` holds pointers to the argument values (as cuLaunchKernel's
// kernelParams); every block runs `passes` times (2 for kernels with a shared-memory tile).
#define OZ_ARG(i, T) (*(T*)a[i])
#define OZ_GRID(passes, ...)                \
  for (unsigned y = 0; y < gy; ++y)         \
    for (unsigned x = 0; x < gx; ++x)       \
      for (int ps = 0; ps < passes; ++ps)   \
        for (unsigned t = 0; t < bx; ++t) { \
          blockIdx = {x, y, 0};             \
          threadIdx = {t, 0, 0};            \
          __VA_ARGS__;                      \
        }
#define OZ_RECON_CASE(NM, NL, PL, OT)                                                            \
  if (!strcmp(name, #NM)) {                                                                      \
    OZ_GRID(1, reconstruct<NL, PL, OT>(OZ_ARG(0, const PL*), OZ_ARG(1, int), OZ_ARG(2, int),     \
                                       OZ_ARG(3, int), OZ_ARG(4, int), OZ_ARG(5, int),           \
                                       OZ_ARG(6, const long long*), OZ_ARG(7, const long long*), \
                                       OZ_ARG(8, int), OZ_ARG(9, int), OZ_ARG(10, int),          \
                                       OZ_ARG(11, int), OZ_ARG(12, OT*)));                       \
    return 0;                                                                                    \
  }
// Scheme I (ozaki1.cu): oz1_digits_cols fills a shared tile first (two passes per block).
#define OZ1_DIGITS_CASES(SUF, D)                                                                   \
  if (!strcmp(name, "oz1_digits_rows_" #SUF)) {                                                    \
    OZ_GRID(                                                                                       \
        1, digits_rows<D>(OZ_ARG(0, const OZ_IN*), OZ_ARG(1, int), OZ_ARG(2, int), OZ_ARG(3, int), \
                          OZ_ARG(4, int), OZ_ARG(5, const int*), OZ_ARG(6, int), OZ_ARG(7, D*)));  \
    return 0;                                                                                      \
  }                                                                                                \
  if (!strcmp(name, "oz1_digits_cols_" #SUF)) {                                                    \
    OZ_GRID(2, digits_cols<D>(OZ_ARG(0, const OZ_IN*), OZ_ARG(1, int), OZ_ARG(2, int),             \
                              OZ_ARG(3, int), OZ_ARG(4, int), OZ_ARG(5, int), OZ_ARG(6, int),      \
                              OZ_ARG(7, const int*), OZ_ARG(8, int), OZ_ARG(9, D*)));              \
    return 0;                                                                                      \
  }
#define OZ1_COMBINE_CASE(NM, PL, OT)                                                               \
  if (!strcmp(name, #NM)) {                                                                        \
    OZ_GRID(1, combine<PL, OT>(OZ_ARG(0, const PL*), OZ_ARG(1, int), OZ_ARG(2, const int*),        \
                               OZ_ARG(3, int), OZ_ARG(4, int), OZ_ARG(5, int),                     \
                               OZ_ARG(6, __int128*), OZ_ARG(7, int), OZ_ARG(8, int),               \
                               OZ_ARG(9, const int*), OZ_ARG(10, const int*), OZ_ARG(11, int),     \
                               OZ_ARG(12, int), OZ_ARG(13, int), OZ_ARG(14, int), OZ_ARG(15, int), \
                               OZ_ARG(16, int), OZ_ARG(17, OT*)));                                 \
    return 0;                                                                                      \
  }
extern "C" int launch(const char* name, unsigned gx, unsigned gy, unsigned bx, void** a) {
  blockDim = {bx, 1, 1};
  gridDim = {gx, gy, 1};
  if (!strcmp(name, "oz2_stats_cols_max")) {
    OZ_GRID(1, oz2_stats_cols_max(OZ_ARG(0, const OZ_IN*), OZ_ARG(1, int), OZ_ARG(2, int),
                                  OZ_ARG(3, int), OZ_ARG(4, int*), OZ_ARG(5, unsigned long long*),
                                  OZ_ARG(6, int*), OZ_ARG(7, int*)));
    return 0;
  }
  if (!strcmp(name, "oz2_stats_cols_nfix")) {
    OZ_GRID(1, oz2_stats_cols_nfix(OZ_ARG(0, const OZ_IN*), OZ_ARG(1, int), OZ_ARG(2, int),
                                   OZ_ARG(3, int), OZ_ARG(4, const int*),
                                   OZ_ARG(5, unsigned long long*)));
    return 0;
  }
  if (!strcmp(name, "oz2_shifts")) {
    OZ_GRID(1, oz2_shifts(OZ_ARG(0, int), OZ_ARG(1, int*), OZ_ARG(2, const int*),
                          OZ_ARG(3, const unsigned long long*), OZ_ARG(4, int), OZ_ARG(5, int),
                          OZ_ARG(6, long long*)));
    return 0;
  }
  if (!strcmp(name, "oz2_stats_cols_init")) {
    OZ_GRID(1, oz2_stats_cols_init(OZ_ARG(0, int), OZ_ARG(1, int*), OZ_ARG(2, unsigned long long*),
                                   OZ_ARG(3, int*), OZ_ARG(4, unsigned long long*), OZ_ARG(5, int*),
                                   OZ_ARG(6, long long*)));
    return 0;
  }
  if (!strcmp(name, "oz2_auto_need")) {
    OZ_GRID(1, oz2_auto_need(OZ_ARG(0, int), OZ_ARG(1, const int*), OZ_ARG(2, const long long*),
                             OZ_ARG(3, const int*), OZ_ARG(4, const unsigned long long*),
                             OZ_ARG(5, const int*), OZ_ARG(6, int), OZ_ARG(7, int*)));
    return 0;
  }
  if (!strcmp(name, "oz2_residues_rows")) {
    OZ_GRID(1, oz2_residues_rows(OZ_ARG(0, const OZ_IN*), OZ_ARG(1, int), OZ_ARG(2, int),
                                 OZ_ARG(3, int), OZ_ARG(4, int), OZ_ARG(5, const long long*),
                                 OZ_ARG(6, int), OZ_ARG(7, int8_t*)));
    return 0;
  }
  if (!strcmp(name, "oz2_residues_cols")) {
    OZ_GRID(2, oz2_residues_cols(OZ_ARG(0, const OZ_IN*), OZ_ARG(1, int), OZ_ARG(2, int),
                                 OZ_ARG(3, int), OZ_ARG(4, int), OZ_ARG(5, int), OZ_ARG(6, int),
                                 OZ_ARG(7, const long long*), OZ_ARG(8, int), OZ_ARG(9, int8_t*)));
    return 0;
  }
  OZ_RECON_CASE(oz2_recon_i32_nl2_f64, 2, int, double)
  OZ_RECON_CASE(oz2_recon_i32_nl3_f64, 3, int, double)
  OZ_RECON_CASE(oz2_recon_i32_nl4_f64, 4, int, double)
  OZ_RECON_CASE(oz2_recon_i32_nl5_f64, 5, int, double)
  OZ_RECON_CASE(oz2_recon_i32_nl2_f32, 2, int, float)
  OZ_RECON_CASE(oz2_recon_i32_nl3_f32, 3, int, float)
  OZ_RECON_CASE(oz2_recon_i32_nl4_f32, 4, int, float)
  OZ_RECON_CASE(oz2_recon_i32_nl5_f32, 5, int, float)
  OZ_RECON_CASE(oz2_recon_i8_nl2_f64, 2, int8_t, double)
  OZ_RECON_CASE(oz2_recon_i8_nl3_f64, 3, int8_t, double)
  OZ_RECON_CASE(oz2_recon_i8_nl4_f64, 4, int8_t, double)
  OZ_RECON_CASE(oz2_recon_i8_nl5_f64, 5, int8_t, double)
  OZ_RECON_CASE(oz2_recon_i8_nl2_f32, 2, int8_t, float)
  OZ_RECON_CASE(oz2_recon_i8_nl3_f32, 3, int8_t, float)
  OZ_RECON_CASE(oz2_recon_i8_nl4_f32, 4, int8_t, float)
  OZ_RECON_CASE(oz2_recon_i8_nl5_f32, 5, int8_t, float)
  OZ1_DIGITS_CASES(i8, int8_t)
  OZ1_DIGITS_CASES(f16, uint16_t)
  OZ1_COMBINE_CASE(oz1_combine_i32_f64, int, double)
  OZ1_COMBINE_CASE(oz1_combine_i32_f32, int, float)
  OZ1_COMBINE_CASE(oz1_combine_f32_f64, float, double)
  OZ1_COMBINE_CASE(oz1_combine_f32_f32, float, float)
  return 1;  // unknown kernel
}
extern "C" int set_global(const char* name, const void* src, size_t n) {
  void* dst = !strcmp(name, "c_rc")       ? (void*)c_rc
              : !strcmp(name, "c_W")      ? (void*)c_W
              : !strcmp(name, "c_Ml")     ? (void*)c_Ml
              : !strcmp(name, "c_invM")   ? (void*)&c_invM
              : !strcmp(name, "c_Wd")     ? (void*)c_Wd
              : !strcmp(name, "c_nparts") ? (void*)&c_nparts
                                          : nullptr;
  if (dst == nullptr) return 1;
  memcpy(dst, src, n);
  return 0;
}
