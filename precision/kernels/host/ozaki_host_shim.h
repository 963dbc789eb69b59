// Host shims to compile precision/kernels/ozaki2.cu and ozaki1.cu with g++ and run their
// kernels on the CPU: CUDA intrinsics by their IEEE definitions (fmaf, round-to-nearest add and
// multiply through volatile, llrint), blockIdx / threadIdx as globals, the block-cooperative
// kernels with one fiber per CUDA thread. Included by ozaki_host_harness.cpp.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
using std::isfinite;
using std::ldexp;
using std::max;
using std::min;
using std::scalbn;
#include <algorithm>
#define OZ_HOST_SHIM 1
#define __device__
#define __launch_bounds__(...)
#define __forceinline__ inline
#define __global__
#define __constant__
#define __restrict__
#define __shared__ static
struct dim3s {
  unsigned x, y, z;
};
extern dim3s blockIdx, blockDim, gridDim;
extern thread_local dim3s threadIdx;
struct int4 {
  int x, y, z, w;
};
struct double2 {
  double x, y;
};
struct float4 {
  float x, y, z, w;
};
inline double2 make_double2(double a, double b) { return {a, b}; }
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
inline float __int_as_float(int i) {
  float f;
  memcpy(&f, &i, 4);
  return f;
}
inline int __float_as_int(float f) {
  int i;
  memcpy(&i, &f, 4);
  return i;
}
inline long long __double_as_longlong(double d) {
  long long i;
  memcpy(&i, &d, 8);
  return i;
}
inline double __longlong_as_double(long long i) {
  double d;
  memcpy(&d, &i, 8);
  return d;
}
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline int __double2loint(double d) {
  unsigned long long b;
  memcpy(&b, &d, 8);
  return (int)(unsigned)(b & 0xFFFFFFFFull);
}
inline unsigned long long __double2ull_ru(double x) { return (unsigned long long)ceil(x); }
inline double __hiloint2double(int hi, int lo) {
  unsigned long long b = ((unsigned long long)(unsigned)hi << 32) | (unsigned)lo;
  double d;
  memcpy(&d, &b, 8);
  return d;
}
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline float __fsub_rn(float a, float b) {
  volatile float r = a - b;
  return r;
}
inline double __dadd_rn(double a, double b) {
  volatile double r = a + b;
  return r;
}
inline double __dsub_rn(double a, double b) {
  volatile double r = a - b;
  return r;
}
inline double __dmul_rn(double a, double b) {
  volatile double r = a * b;
  return r;
}
inline long long __double2ll_rn(double x) { return llrint(x); }
inline double __ull2double_rn(unsigned long long x) { return (double)x; }
inline float __ull2float_rn(unsigned long long x) { return (float)x; }
inline float __fmul_rn(float a, float b) {
  volatile float r = a * b;
  return r;
}
inline float __int2float_rn(int i) { return (float)i; }
inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  unsigned long long v = ((unsigned long long)y << 32) | x;
  unsigned r = 0;
  for (int n = 0; n < 4; ++n) {
    unsigned sel = (s >> (4 * n)) & 7;
    r |= (unsigned)((v >> (8 * sel)) & 0xFF) << (8 * n);
  }
  return r;
}
template <typename T>
inline T __ldg(const T* p) {
  return *p;
}
// Block-cooperative emulation for oz2_stats_rows / oz2_rows_fused: when g_threaded, every
// thread of the block is a fiber (ucontext) of one OS thread. __syncthreads yields to the
// scheduler, which runs the block's fibers in turn up to their next barrier, so one round of the
// scheduler is one barrier interval. Warp shuffles / votes go through shared slots between two
// barriers (all threads of a block call them uniformly in those kernels). Serial launches: no-ops.
extern bool g_threaded;
extern unsigned long long g_slot[1024];
#if defined(__x86_64__) && !defined(OZ_HOST_UCONTEXT)
// A fiber switch without ucontext: swapcontext saves and restores the signal mask with a
// system call, which made the block-cooperative kernels spend most of their time in the
// kernel. This one pushes the callee-saved registers (System V x86-64) on the current
// stack, stores its pointer in *save_sp, loads load_sp and pops the other fiber's registers.
#define OZ_FAST_FIBERS 1
extern "C" void oz_fiber_switch(void** save_sp, void* load_sp);
struct BlockBarrier {
  void* scheduler = nullptr;
  void** current = nullptr;
  void wait() { oz_fiber_switch(current, scheduler); }
};
#else
#define OZ_FAST_FIBERS 0
#include <ucontext.h>
struct BlockBarrier {
  ucontext_t scheduler;
  ucontext_t* current = nullptr;
  void wait() { swapcontext(current, &scheduler); }
};
#endif
extern BlockBarrier g_bar;
inline void __syncthreads() {
  if (g_threaded) g_bar.wait();
}
template <typename T>
inline T __shfl_xor_sync(unsigned, T v, int o) {
  if (!g_threaded) return v;
  unsigned long long b = 0;
  memcpy(&b, &v, sizeof(T));
  g_slot[threadIdx.x] = b;
  g_bar.wait();
  b = g_slot[threadIdx.x ^ (unsigned)o];
  g_bar.wait();
  T r;
  memcpy(&r, &b, sizeof(T));
  return r;
}
inline int __any_sync(unsigned, int v) {
  if (!g_threaded) return v;
  g_slot[threadIdx.x] = v != 0;
  g_bar.wait();
  int r = 0;
  for (unsigned t = threadIdx.x & ~31u; t < (threadIdx.x & ~31u) + 32; ++t) r |= (int)g_slot[t];
  g_bar.wait();
  return r;
}
inline int atomicMax(int* a, int v) {
  int o = *a;
  if (v > o) *a = v;
  return o;
}
inline int atomicAdd(int* a, int v) {
  int o = *a;
  *a += v;
  return o;
}
inline unsigned long long atomicAdd(unsigned long long* a, unsigned long long v) {
  auto o = *a;
  *a += v;
  return o;
}
inline int atomicOr(int* a, int v) {
  int o = *a;
  *a |= v;
  return o;
}
