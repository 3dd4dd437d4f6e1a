#include "bench/harness/peaks.h"

#include <immintrin.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <thread>
#include <tuple>

#include "bench/harness/json_text.h"
#include "bench/harness/probes.h"
#include "bench/harness/sysinfo.h"
#include "kernels/device.h"
#ifdef LB_HAVE_CPU
#include "kernels/cpu/gemm.h"
#endif

namespace lb::bench {
namespace {

// Each loop runs independent accumulators, more than latency × pipes (FMA: 4 cycles × 2),
// so that the pipes never wait on a result; it returns a value derived from every chain so
// nothing is optimised away, and counts operations per iteration in `ops`. zmm loops: 24
// (of 32 registers): with 12, vdpbf16ps measured 432 GFLOP/s on the 2-core AMD EPYC Zen 5
// VM and oneDNN's bf16 GEMM ran at 101 % of it; with 24, 463-476 (2.0× the f32 rate, as
// the instruction's width says), f32 232-239 against 231. The chains unrolled (GCC leaves
// a 24-long loop rolled, the accumulators in memory: half the f32 rate). vpdpbusd: 24 as
// well, in assembly (GCC spilled or copied its accumulators, see i8_dot_avx512). ymm loops:
// 12 (of 16 registers).
constexpr int kChains512 = 24, kChains256 = 12;

// A value that depends on the accumulators (GCC 12 warns wrongly inside _mm512_reduce_*).
__attribute__((target("avx512f"))) float first_and_last(__m512 v) {
  float out[16];
  _mm512_storeu_ps(out, v);
  return out[0] + out[15];
}

__attribute__((target("avx512f"))) float f32_fma_avx512(long iters) {
  __m512 acc[kChains512];
  for (int j = 0; j < kChains512; ++j)
    acc[j] = _mm512_set1_ps(float(j));
  const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-7f);
  for (long i = 0; i < iters; ++i)
#pragma GCC unroll 32
    for (int j = 0; j < kChains512; ++j)
      acc[j] = _mm512_fmadd_ps(acc[j], x, y);
  __m512 s = acc[0];
  for (int j = 1; j < kChains512; ++j)
    s = _mm512_add_ps(s, acc[j]);
  return first_and_last(s);
}

__attribute__((target("avx2,fma"))) float f32_fma_avx2(long iters) {
  __m256 acc[kChains256];
  for (int j = 0; j < kChains256; ++j)
    acc[j] = _mm256_set1_ps(float(j));
  const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-7f);
  for (long i = 0; i < iters; ++i)
#pragma GCC unroll 32
    for (int j = 0; j < kChains256; ++j)
      acc[j] = _mm256_fmadd_ps(acc[j], x, y);
  __m256 s = acc[0];
  for (int j = 1; j < kChains256; ++j)
    s = _mm256_add_ps(s, acc[j]);
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0] + out[7];
}

__attribute__((target("avx512f,avx512bf16"))) float bf16_dot_avx512(long iters) {
  __m512 acc[kChains512];
  for (int j = 0; j < kChains512; ++j)
    acc[j] = _mm512_set1_ps(float(j));
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.5f), _mm512_set1_ps(0.25f));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(-1e-3f));
  for (long i = 0; i < iters; ++i)
#pragma GCC unroll 32
    for (int j = 0; j < kChains512; ++j)
      acc[j] = _mm512_dpbf16_ps(acc[j], a, b);
  __m512 s = acc[0];
  for (int j = 1; j < kChains512; ++j)
    s = _mm512_add_ps(s, acc[j]);
  return first_and_last(s);
}

// vpdpbusd: 64 u8 × s8 products per instruction, summed in fours into s32. Its 24 chains
// and the loop around them are one assembly block on fixed registers (zmm0-23, the operands
// in zmm30-31): written as a loop over an array of accumulators, GCC 12 spilled them at 16-24
// chains, and at 12 it copied each accumulator twice per step (22 moves among 12 products).
// On the 2-core AMD EPYC Zen 5 VM that loop read 811 GOP/s on one thread and 1,819 on two
// (more than twice one); this one 911-970 on one thread with a compiler running beside it.
#define LB_DPBUSD(n) "vpdpbusd %%zmm31, %%zmm30, %%zmm" #n "\n\t"
#define LB_DPBUSD4(a, b, c, d) LB_DPBUSD(a) LB_DPBUSD(b) LB_DPBUSD(c) LB_DPBUSD(d)
#define LB_COPY(n) "vmovdqa32 %%zmm0, %%zmm" #n "\n\t"
#define LB_COPY4(a, b, c, d) LB_COPY(a) LB_COPY(b) LB_COPY(c) LB_COPY(d)
#define LB_FOLD(n) "vpaddd %%zmm" #n ", %%zmm0, %%zmm0\n\t"
#define LB_FOLD4(a, b, c, d) LB_FOLD(a) LB_FOLD(b) LB_FOLD(c) LB_FOLD(d)
constexpr int kChainsI8 = 24;
__attribute__((target("avx512f,avx512vnni"))) float i8_dot_avx512(long iters) {
  if (iters < 1) return 0.0f;
  alignas(64) int32_t out[16];
  asm volatile(
      "vpbroadcastd %k[seed], %%zmm0\n\t"
      "vpbroadcastd %k[u8], %%zmm30\n\t"
      "vpbroadcastd %k[s8], %%zmm31\n\t" LB_COPY4(1, 2, 3, 4) LB_COPY4(5, 6, 7, 8) LB_COPY4(9, 10, 11, 12)
          LB_COPY4(13, 14, 15, 16) LB_COPY4(17, 18, 19, 20) LB_COPY(21) LB_COPY(22) LB_COPY(23)
      "1:\n\t" LB_DPBUSD4(0, 1, 2, 3) LB_DPBUSD4(4, 5, 6, 7) LB_DPBUSD4(8, 9, 10, 11) LB_DPBUSD4(12, 13, 14, 15)
          LB_DPBUSD4(16, 17, 18, 19) LB_DPBUSD4(20, 21, 22, 23)
      "dec %[n]\n\t"
      "jnz 1b\n\t" LB_FOLD4(1, 2, 3, 4) LB_FOLD4(5, 6, 7, 8) LB_FOLD4(9, 10, 11, 12) LB_FOLD4(13, 14, 15, 16)
          LB_FOLD4(17, 18, 19, 20) LB_FOLD(21) LB_FOLD(22) LB_FOLD(23)
      "vmovdqa32 %%zmm0, %[out]"
      : [n] "+r"(iters), [out] "=m"(out)
      : [seed] "r"(1), [u8] "r"(0x03030303), [s8] "r"(-1)
      : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
        "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22",
        "xmm23", "xmm30", "xmm31", "cc");
  return float(int64_t(out[0]) + out[15]);  // the lanes wrap (-12 per step): no int overflow here
}
#undef LB_DPBUSD
#undef LB_DPBUSD4
#undef LB_COPY
#undef LB_COPY4
#undef LB_FOLD
#undef LB_FOLD4

// AVX2 without VNNI: vpmaddubsw, 32 u8 × s8 products per instruction with pairs summed to
// s16. Every int8 GEMM on such a CPU issues at least one per 32 products (and a widening
// vpmaddwd and vpaddd per one or two of them, which share its pipes), so its rate bounds
// them. The 12 chains are one assembly block on named registers: written as a loop over an
// array of accumulators (as the other loops are), GCC 12 kept them in memory, a load and a
// store around every instruction, and the loop measured 180-183 GOP/s on the 2-core AMD
// EPYC Zen 3 VM where the instruction does 409 (2 per cycle); oneDNN's int8 convolutions
// read up to 110 % of that figure. In registers: 409 GOP/s, oneDNN's int8 GEMM and
// convolutions 40-48 % of it (their vpmaddubsw + vpmaddwd + vpaddd sequence runs at 196 GOP/s
// stand-alone there).
__attribute__((target("avx2"))) float i8_maddubs_avx2(long iters) {
  static_assert(kChains256 == 12, "the assembly below runs 12 chains");
  __m256i a0 = _mm256_set1_epi8(0), a1 = _mm256_set1_epi8(1), a2 = _mm256_set1_epi8(2),
          a3 = _mm256_set1_epi8(3), a4 = _mm256_set1_epi8(4), a5 = _mm256_set1_epi8(5),
          a6 = _mm256_set1_epi8(6), a7 = _mm256_set1_epi8(7), a8 = _mm256_set1_epi8(8),
          a9 = _mm256_set1_epi8(9), a10 = _mm256_set1_epi8(10), a11 = _mm256_set1_epi8(11);
  const __m256i b = _mm256_set1_epi8(1);
  for (long i = 0; i < iters; ++i)  // each result fed back as the u8 operand: one chain each
    asm("vpmaddubsw %[b], %[a0], %[a0]\n\t"
        "vpmaddubsw %[b], %[a1], %[a1]\n\t"
        "vpmaddubsw %[b], %[a2], %[a2]\n\t"
        "vpmaddubsw %[b], %[a3], %[a3]\n\t"
        "vpmaddubsw %[b], %[a4], %[a4]\n\t"
        "vpmaddubsw %[b], %[a5], %[a5]\n\t"
        "vpmaddubsw %[b], %[a6], %[a6]\n\t"
        "vpmaddubsw %[b], %[a7], %[a7]\n\t"
        "vpmaddubsw %[b], %[a8], %[a8]\n\t"
        "vpmaddubsw %[b], %[a9], %[a9]\n\t"
        "vpmaddubsw %[b], %[a10], %[a10]\n\t"
        "vpmaddubsw %[b], %[a11], %[a11]"
        : [a0] "+x"(a0), [a1] "+x"(a1), [a2] "+x"(a2), [a3] "+x"(a3), [a4] "+x"(a4), [a5] "+x"(a5),
          [a6] "+x"(a6), [a7] "+x"(a7), [a8] "+x"(a8), [a9] "+x"(a9), [a10] "+x"(a10), [a11] "+x"(a11)
        : [b] "x"(b));
  const __m256i s0 = _mm256_add_epi16(_mm256_add_epi16(a0, a1), _mm256_add_epi16(a2, a3));
  const __m256i s1 = _mm256_add_epi16(_mm256_add_epi16(a4, a5), _mm256_add_epi16(a6, a7));
  const __m256i s2 = _mm256_add_epi16(_mm256_add_epi16(a8, a9), _mm256_add_epi16(a10, a11));
  const __m256i s = _mm256_add_epi16(_mm256_add_epi16(s0, s1), s2);
  return float(_mm256_extract_epi16(s, 0) + _mm256_extract_epi16(s, 15));
}

// AVX-512 FP16: vfmadd231ph, 32 half lanes.
__attribute__((target("avx512f,avx512fp16"))) float f16_fma_avx512(long iters) {
  __m512h acc[kChains512];
  for (int j = 0; j < kChains512; ++j)
    acc[j] = _mm512_set1_ph(_Float16(j));
  const __m512h x = _mm512_set1_ph(_Float16(0.999f)), y = _mm512_set1_ph(_Float16(1e-3f));
  for (long i = 0; i < iters; ++i)
#pragma GCC unroll 32
    for (int j = 0; j < kChains512; ++j)
      acc[j] = _mm512_fmadd_ph(acc[j], x, y);
  __m512h s = acc[0];
  for (int j = 1; j < kChains512; ++j)
    s = _mm512_add_ph(s, acc[j]);
  return first_and_last(_mm512_castph_ps(s));
}

// AMX: four independent 16×16 accumulator tiles (tmm0-3), each step four products of the
// A tiles tmm4-5 and the B tiles tmm6-7 (loaded once from non-zero data), as the tile
// GEMM's 2×2 micro-kernel issues them. Written as assembly: it needs no compiler flags,
// and the probe runs only where CPUID and Linux allow the tiles (amx_permission()).
struct alignas(64) AmxConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};

template <bool Int8>
float amx_dot(long iters) {
  static const AmxConfig config;
  alignas(64) uint8_t data[16 * 64];
  for (size_t i = 0; i < sizeof data; ++i)
    data[i] =
        uint8_t(Int8 ? 1 + i % 7 : (i % 2 ? 0x3f : 0x80));  // small u8 and s8; bf16 pairs of 1.0 (0x3f80)
  asm volatile("ldtilecfg %0" ::"m"(config));
  asm volatile(
      "tileloadd (%0,%1,1), %%tmm4\n\t"
      "tileloadd (%0,%1,1), %%tmm5\n\t"
      "tileloadd (%0,%1,1), %%tmm6\n\t"
      "tileloadd (%0,%1,1), %%tmm7\n\t"
      "tilezero %%tmm0\n\ttilezero %%tmm1\n\ttilezero %%tmm2\n\ttilezero %%tmm3" ::"r"(data),
      "r"(int64_t(64))
      : "memory");
  for (long i = 0; i < iters; ++i) {
    if constexpr (Int8)
      asm volatile(
          "tdpbusd %tmm6, %tmm4, %tmm0\n\ttdpbusd %tmm7, %tmm4, %tmm1\n\t"
          "tdpbusd %tmm6, %tmm5, %tmm2\n\ttdpbusd %tmm7, %tmm5, %tmm3");
    else
      asm volatile(
          "tdpbf16ps %tmm6, %tmm4, %tmm0\n\ttdpbf16ps %tmm7, %tmm4, %tmm1\n\t"
          "tdpbf16ps %tmm6, %tmm5, %tmm2\n\ttdpbf16ps %tmm7, %tmm5, %tmm3");
  }
  alignas(64) float out[16 * 16];
  asm volatile("tilestored %%tmm3, (%0,%1,1)\n\ttilerelease" ::"r"(out), "r"(int64_t(64)) : "memory");
  return out[0] + out[255];
}

// Empty when this process may use AMX tiles for bf16 and int8 — the CPU has them and
// Linux granted the tile data (the cpu backend asks once per process: kernels/cpu/gemm.h)
// — else why not. The context says which.
std::string amx_permission() {
#ifdef LB_HAVE_CPU
  const std::string bf16 = cpu::amx_reason(cpu::Elem::bf16);
  return bf16.empty() ? cpu::amx_reason(cpu::Elem::u8s8) : bf16;
#else
  return "the cpu backend is not built (AMX permission is asked there)";
#endif
}

// Memory streams: each thread reads, writes or triads (a = b + s·c) its own buffer, with
// 8 independent vectors per step so that neither the add latency nor the loop bounds the
// loads. Stores are non-temporal (no read for ownership), so the write and triad figures
// are the most the memory system takes, an upper bound for any kernel's writes. `floats`
// is a multiple of 8 vectors; each returns a value that depends on what it touched.
#define LB_STREAMS(TARGET, V, ISA, LOAD, ADD, FMA, SET1, STREAM, ZERO, SOME_LANE)                  \
  TARGET float read_##ISA(const float* p, size_t floats, long passes) {                            \
    constexpr size_t kLanes = sizeof(V) / sizeof(float);                                           \
    V acc[8];                                                                                      \
    for (auto& a : acc)                                                                            \
      a = ZERO();                                                                                  \
    for (long pass = 0; pass < passes; ++pass)                                                     \
      for (size_t i = 0; i < floats; i += 8 * kLanes)                                              \
        for (size_t j = 0; j < 8; ++j)                                                             \
          acc[j] = ADD(acc[j], LOAD(p + i + j * kLanes));                                          \
    for (int j = 1; j < 8; ++j)                                                                    \
      acc[0] = ADD(acc[0], acc[j]);                                                                \
    return SOME_LANE(acc[0]);                                                                      \
  }                                                                                                \
  TARGET float write_##ISA(float* p, size_t floats, long passes) {                                 \
    constexpr size_t kLanes = sizeof(V) / sizeof(float);                                           \
    for (long pass = 0; pass < passes; ++pass) {                                                   \
      const V v = SET1(float(pass));                                                               \
      for (size_t i = 0; i < floats; i += kLanes)                                                  \
        STREAM(p + i, v);                                                                          \
    }                                                                                              \
    _mm_sfence();                                                                                  \
    return p[floats - 1];                                                                          \
  }                                                                                                \
  TARGET float triad_##ISA(float* a, const float* b, const float* c, size_t floats, long passes) { \
    constexpr size_t kLanes = sizeof(V) / sizeof(float);                                           \
    const V s = SET1(0.5f);                                                                        \
    for (long pass = 0; pass < passes; ++pass)                                                     \
      for (size_t i = 0; i < floats; i += kLanes)                                                  \
        STREAM(a + i, FMA(s, LOAD(c + i), LOAD(b + i)));                                           \
    _mm_sfence();                                                                                  \
    return a[floats - 1];                                                                          \
  }

__attribute__((target("avx2,fma"))) inline float lane0(__m256 v) {
  return _mm256_cvtss_f32(v);
}
LB_STREAMS(__attribute__((target("avx512f"))), __m512, avx512, _mm512_load_ps, _mm512_add_ps, _mm512_fmadd_ps,
           _mm512_set1_ps, _mm512_stream_ps, _mm512_setzero_ps, first_and_last)
LB_STREAMS(__attribute__((target("avx2,fma"))), __m256, avx2, _mm256_load_ps, _mm256_add_ps, _mm256_fmadd_ps,
           _mm256_set1_ps, _mm256_stream_ps, _mm256_setzero_ps, lane0)
#undef LB_STREAMS

// Per-thread buffers for the stream probes, 2 MiB-aligned, each filled before it is timed.
// The three memory probes share one set (peaks_for measures every kind on one thread count
// before the next), and transparent huge pages are asked for: touching 1 GiB in 4 KiB page
// faults took 1-2 s a probe on the Zen 5 VM, whose faults go through the hypervisor (and 4 s
// in the sanitizer build, whose allocator ignores the run's malloc tunables).
class StreamBuffers {
 public:
  void allocate(int threads, size_t bytes_per_thread) {
    constexpr size_t kAlign = size_t(2) << 20, kUnit = 3 * 8 * 64;  // three arrays of whole steps
    const size_t bytes = std::max(bytes_per_thread / kUnit, size_t(1)) * kUnit;
    if (buffers_.size() == size_t(threads) && bytes_ == bytes) return;  // as the last probe left them
    release();
    bytes_ = bytes;
    const size_t rounded = (bytes_ + kAlign - 1) / kAlign * kAlign;
    for (int t = 0; t < threads; ++t) {
      void* p = std::aligned_alloc(kAlign, rounded);
      if (!p) throw std::bad_alloc();
      madvise(p, rounded, MADV_HUGEPAGE);  // a hint: where THP is off, 4 KiB pages as before
      std::memset(p, 0, bytes_);
      buffers_.push_back(static_cast<float*>(p));
    }
  }
  void release() {
    for (float* p : buffers_)
      std::free(p);
    buffers_.clear();
  }
  ~StreamBuffers() { release(); }
  float* at(int thread) const { return buffers_.at(size_t(thread)); }
  size_t floats() const { return bytes_ / sizeof(float); }
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_ = 0;
  std::vector<float*> buffers_;
};

// What one thread streams: for the memory ("dram") probes, a share of 8× the last-level
// cache (256 MiB to 1 GiB in all, at most a quarter of what can be allocated); for the L2
// probe, half of one core's L2.
// With short repetitions ($LAYERBENCH_PEAK_SECONDS below the default, as the tests set it),
// the range's smallest buffer: filling 1 GiB took 1.1-1.7 s of a 2-3 s measurement on the
// Zen 5 VM, whose first touch of memory goes through the hypervisor.
constexpr double kPeakRepetitionSeconds = 0.25;
double peak_repetition_seconds();
bool short_peak_repetitions() {
  return peak_repetition_seconds() < kPeakRepetitionSeconds;
}
size_t dram_bytes_per_thread(int threads) {
  const size_t llc = cache_sizes().last_level ? cache_sizes().last_level : size_t(64) << 20;
  const double lo = 256.0 * (1 << 20), hi = short_peak_repetitions() ? lo : 1024.0 * (1 << 20);
  double total = std::clamp(8.0 * double(llc), lo, hi);
  total = std::min(total, double(available_bytes()) / 4);
  return size_t(total / threads);
}
size_t l2_bytes_per_thread(int) {
  return std::max(cache_sizes().l2, size_t(64) << 10) / 2;
}

// A probe: what each of the threads runs for `iters` iterations, and what one iteration
// of one thread does — FLOPs (int8: operations), or bytes for a stream.
struct Loop {
  std::string kind;  // Peak::kind
  std::string how;
  // Before timing on this many threads (buffers); returns the operations per iteration.
  std::function<double(int threads)> set_up;
  std::function<float(int thread, long iters)> fn;
  std::function<void()> tear_down = [] {};
  double per_core_cycle_bound = 0;  // the most one core can do per cycle: plausible_bound()
  long first_iters = 1 << 16;       // where the calibration starts
  bool bytes = false;               // a bandwidth (B/s), not an operation rate
};

// The most a core does per cycle, at a clock no CPU reaches (6 GHz): two vector
// instructions of a kind (no x86 core issues more FMA or dot products), and three 64-byte
// loads or two stores, for streams.
constexpr double kVectorPipes = 2, kMaxClockHz = 6e9, kStreamBytesPerCycle = 3 * 64;
constexpr int64_t kMaxAgeSeconds = 3600;  // a cached CPU peak older than this is measured again

Loop compute_loop(const char* kind, const char* how, float (*fn)(long), double ops_per_instruction,
                  int chains) {
  Loop loop;
  loop.kind = kind;
  loop.how = std::string(how) + ", " + std::to_string(chains) + " independent chains";
  loop.set_up = [ops = chains * ops_per_instruction](int) { return ops; };
  loop.fn = [fn](int, long iters) { return fn(iters); };
  loop.per_core_cycle_bound = kVectorPipes * ops_per_instruction;
  return loop;
}

enum class Stream { read, write, triad };

Loop stream_loop(const char* kind, Stream stream, bool avx512, size_t (*bytes_per_thread)(int),
                 const std::string& where, std::shared_ptr<StreamBuffers> buffers) {
  Loop loop;
  loop.kind = kind;
  loop.how = std::string(avx512 ? "AVX-512" : "AVX2") +
             (stream == Stream::read    ? " loads"
              : stream == Stream::write ? " non-temporal stores"
                                        : " triad a = b + s*c, non-temporal stores") +
             ", " + where;
  loop.set_up = [buffers, bytes_per_thread](int threads) {
    buffers->allocate(threads, bytes_per_thread(threads));
    return double(buffers->bytes());
  };
  loop.fn = [buffers, stream, avx512](int thread, long passes) {
    float* p = buffers->at(thread);
    const size_t n = buffers->floats(), third = n / 3;
    switch (stream) {
      case Stream::read:
        return avx512 ? read_avx512(p, n, passes) : read_avx2(p, n, passes);
      case Stream::write:
        return avx512 ? write_avx512(p, n, passes) : write_avx2(p, n, passes);
      case Stream::triad:
        return avx512 ? triad_avx512(p, p + third, p + 2 * third, third, passes)
                      : triad_avx2(p, p + third, p + 2 * third, third, passes);
    }
    return 0.0f;
  };
  // Kept for the next probe on as many threads; freed with the last loop that holds them.
  loop.per_core_cycle_bound = kStreamBytesPerCycle;
  loop.first_iters = 1;
  loop.bytes = true;
  return loop;
}

// The best loop this CPU runs for each kind: its compute engines, then memory streams.
std::vector<Loop> loops() {
  std::vector<Loop> out;
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f");
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx512)
    out.push_back(compute_loop("f32_fma", "AVX-512 vfmadd231ps zmm", f32_fma_avx512, 16.0 * 2, kChains512));
  else if (avx2)
    out.push_back(compute_loop("f32_fma", "AVX2 vfmadd231ps ymm", f32_fma_avx2, 8.0 * 2, kChains256));
  if (__builtin_cpu_supports("avx512bf16"))
    out.push_back(compute_loop("bf16_dot", "AVX-512 vdpbf16ps zmm", bf16_dot_avx512, 32.0 * 2, kChains512));
  if (__builtin_cpu_supports("avx512vnni"))
    out.push_back(
        compute_loop("i8_dot", "AVX-512 vpdpbusd zmm in registers", i8_dot_avx512, 64.0 * 2, kChainsI8));
  else if (avx2)
    out.push_back(compute_loop("i8_maddubs",
                               "AVX2 vpmaddubsw ymm in registers (products only: GEMMs widen them as well)",
                               i8_maddubs_avx2, 32.0 * 2, kChains256));
  if (__builtin_cpu_supports("avx512fp16"))
    out.push_back(
        compute_loop("f16_fma", "AVX-512 FP16 vfmadd231ph zmm", f16_fma_avx512, 32.0 * 2, kChains512));
  if (__builtin_cpu_supports("amx-tile")) {
    const std::string why = amx_permission();
    note_context("layerbench_amx",
                 why.empty() ? "tiles granted (arch_prctl ARCH_REQ_XCOMP_PERM, XTILEDATA)" : why);
    if (why.empty()) {
      // Per instruction 16×16 results, 32 bf16 / 64 int8 products each (×2 operations); a
      // core finishes one every 16 cycles (Sapphire Rapids), the bound allows one per 8.
      struct Tiles {
        const char *kind, *how;
        float (*fn)(long);
        double ops;
      };
      for (const auto& [kind, how, fn, ops] :
           {Tiles{"bf16_amx", "AMX tdpbf16ps", amx_dot<false>, 16 * 16 * 32 * 2.0},
            Tiles{"i8_amx", "AMX tdpbusd", amx_dot<true>, 16 * 16 * 64 * 2.0}}) {
        Loop loop = compute_loop(kind, how, fn, ops, 4);
        loop.how = std::string(how) + ", 4 independent 16x16 accumulator tiles";
        loop.set_up = [ops](int) { return 4 * ops; };
        loop.per_core_cycle_bound = ops / 8;
        loop.first_iters = 1 << 10;
        out.push_back(std::move(loop));
      }
    }
  }
  if (avx512 || avx2) {
    const std::string dram =
        std::to_string(dram_bytes_per_thread(1) >> 20) +
        (short_peak_repetitions() ? " MiB in all (short repetitions: the smallest buffer)"
                                  : " MiB in all (8x the last-level cache, 256 MiB-1 GiB)") +
        ", split over the threads";
    const std::string l2 =
        "each thread " + std::to_string(l2_bytes_per_thread(1) >> 10) + " KiB (half its L2), repeated";
    const auto memory = std::make_shared<StreamBuffers>();
    out.push_back(stream_loop("bw_dram_read", Stream::read, avx512, dram_bytes_per_thread, dram, memory));
    out.push_back(stream_loop("bw_dram_write", Stream::write, avx512, dram_bytes_per_thread, dram, memory));
    out.push_back(stream_loop("bw_dram_triad", Stream::triad, avx512, dram_bytes_per_thread, dram, memory));
    out.push_back(stream_loop("bw_l2_read", Stream::read, avx512, l2_bytes_per_thread, l2,
                              std::make_shared<StreamBuffers>()));
  }
  return out;
}

// The most a loop can reach on `threads` threads: per_core_cycle_bound on at most as
// many cores as there are, at 6 GHz. A cached peak above it — or zero, negative or not a
// number — is no measurement: a hand-edited or corrupt cache gave "inf %", "-2377 %" or
// "11304185308 % of peak".
double plausible_bound(const Loop& loop, int threads) {
  return loop.per_core_cycle_bound * kMaxClockHz * std::min(threads, cpu_cores());
}

// Empty when a cached peak is plausible, else why not.
std::string implausible(const Peak& p, const std::vector<Loop>& loops) {
  if (!std::isfinite(p.ops_per_second) || p.ops_per_second <= 0) return "not a positive rate";
  if (p.kind.rfind("gpu_", 0) == 0) return {};
  for (const Loop& loop : loops)
    if (loop.kind == p.kind) {
      if (p.threads < 1) return "threads " + std::to_string(p.threads);
      const double bound = plausible_bound(loop, p.threads);
      if (p.ops_per_second > bound) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.4g", bound);
        return "above " + std::string(buf) + ", the most " + loop.how + " can do on this CPU";
      }
      return {};
    }
  return "not a peak this CPU measures";
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

// Iterations of fn that take about `seconds` on one thread, from `first` up by 4x until
// one try takes a quarter of that.
// Seconds since 1970, for the peaks' age.
int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

long calibrate(const std::function<float(long)>& fn, double seconds, long first = 1 << 10) {
  long iters = first;
  for (;;) {
    const double t0 = wall_seconds();
    volatile float sink = fn(iters);
    (void)sink;
    const double t = wall_seconds() - t0;
    if (t > seconds / 4 || iters > (1L << 34))
      return std::max(1L, long(double(iters) * seconds / std::max(t, 1e-9)));
    iters *= 4;
  }
}

// Seconds a compute peak's repetition takes (a bandwidth's: 0.4 of that): 0.25 unless
// $LAYERBENCH_PEAK_SECONDS says otherwise. Shorter is quicker and noisier (and the memory
// probes stream 256 MiB, not up to 1 GiB): the tests that exercise the peaks cache
// (bench/tests/limits_test.sh) measure with 0.02. A value that is not a number of seconds
// in (0, 10] is said once and the default used.
double peak_repetition_seconds() {
  static const double seconds = [] {
    constexpr double kDefault = kPeakRepetitionSeconds;
    const char* env = std::getenv("LAYERBENCH_PEAK_SECONDS");
    if (!env || !*env) return kDefault;
    char* end = nullptr;
    const double v = std::strtod(env, &end);
    if (*end || !(v > 0 && v <= 10)) {
      std::fprintf(stderr,
                   "layerbench: warning: LAYERBENCH_PEAK_SECONDS=%s is not a number of seconds in (0, 10]; "
                   "using %.2f\n",
                   env, kDefault);
      return kDefault;
    }
    return v;
  }();
  return seconds;
}

// A repetition counts only if every thread had its core to itself (its CPU time at
// least 90 % of the wall time): a peak measured beside other work is no peak. If no
// repetition is clean, the best is returned marked as contended — and cached so, rather
// than measured again before every run (--remeasure-peaks measures it again). More
// threads than cores cannot run faster than the cores: the loop runs on the cores
// alone, and the peak is theirs. One line on stderr says what is being measured.
Peak measure(const Loop& loop, int threads) {
  const int cores = cpu_cores();
  const int running = std::min(threads, cores);
  std::fprintf(stderr, "layerbench: measuring the %s peak on %d thread%s (%s)", loop.kind.c_str(), running,
               running == 1 ? "" : "s", loop.how.c_str());
  if (running < threads) std::fprintf(stderr, " for --threads %d", threads);
  std::fputs("...", stderr);
  std::fflush(stderr);
  const double ops_per_iteration = loop.set_up(running);
  // ~0.25 s per repetition (streams ~0.1 s: plenty for a bandwidth)
  const double rep_seconds = peak_repetition_seconds();
  const long iters = calibrate([&](long n) { return loop.fn(0, n); },
                               loop.bytes ? 0.4 * rep_seconds : rep_seconds, loop.first_iters);
  double best_clean = 0, best_any = 0, worst_share = 1;
  for (int rep = 0; rep < 5; ++rep) {
    std::vector<std::thread> pool;
    std::vector<double> cpu(running);
    const double t0 = wall_seconds();
    for (int t = 0; t < running; ++t)
      pool.emplace_back([&, t] {
        const double c0 = thread_cpu_seconds();
        volatile float sink = loop.fn(t, iters);
        (void)sink;
        cpu[t] = thread_cpu_seconds() - c0;
      });
    for (auto& th : pool)
      th.join();
    const double seconds = wall_seconds() - t0;
    const double rate = double(iters) * ops_per_iteration * running / seconds;
    const double share = *std::min_element(cpu.begin(), cpu.end()) / seconds;
    best_any = std::max(best_any, rate);
    if (share >= 0.9) best_clean = std::max(best_clean, rate);
    worst_share = std::min(worst_share, share);
  }
  loop.tear_down();
  std::string how = loop.how + ", ";
  if (running < threads)
    how += "on " + std::to_string(running) + " threads (" + std::to_string(threads) + " oversubscribe the " +
           std::to_string(cores) + " cores), ";
  char reps[96] = "";
  if (rep_seconds != 0.25)
    std::snprintf(reps, sizeof reps, " of %.3g s (LAYERBENCH_PEAK_SECONDS)",
                  loop.bytes ? 0.4 * rep_seconds : rep_seconds);
  Peak p{loop.kind, threads, best_clean, how + "best of 5 uncontended" + reps};
  if (best_clean == 0) {
    p = {loop.kind, threads, best_any,
         how + "CONTENDED (a thread had " + std::to_string(int(100 * worst_share)) + "% of a core)"};
    p.contended = true;
  }
  p.cores = cores;
  p.measured_unix = unix_now();
  std::fprintf(stderr, " %.1f %s%s\n", p.ops_per_second / 1e9, loop.bytes ? "GB/s" : "GFLOP/s",
               p.contended ? ", contended" : "");
  return p;
}

// A dependent chain of scalar multiply-adds: each waits for the last, so the time is the
// FMA latency times the count — the clock, whatever else shares the core's ports.
__attribute__((noinline)) float clock_chain(long iters) {
  float x = 1.0f;
  for (long i = 0; i < iters; ++i) {
    x = x * 0.99999994f + 1e-8f;
    asm volatile("" : "+x"(x));  // one multiply-add per step, not folded
  }
  return x;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// 1.4826 x the median absolute deviation of log(t): a standard deviation that a few
// outlying windows do not move, as a fraction.
double robust_log_sd(const std::vector<double>& times) {
  std::vector<double> logs;
  for (double t : times)
    logs.push_back(std::log(t));
  const double m = median(logs);
  for (double& x : logs)
    x = std::abs(x - m);
  return 1.4826 * median(logs);
}

namespace fs = std::filesystem;

// Where the cache goes when peaks_cache_path() cannot be written: the temporary
// directory ($TMPDIR, else /tmp), per host and user; empty when there is none.
std::string fallback_cache_path() {
  std::error_code ec;
  const fs::path tmp = fs::temp_directory_path(ec);
  if (ec) return {};
  return (tmp / ("layerbench-peaks-" + hostname() + "-" + std::to_string(getuid()) + ".json")).string();
}

// Whether `path` can be written (its directory made if need be); else the reason.
std::string unwritable(const std::string& path) {
  if (path.empty()) return "no temporary directory";
  const fs::path dir = fs::path(path).parent_path();
  std::error_code ec;
  if (!dir.empty()) fs::create_directories(dir, ec);
  if (ec) return ec.message();
  const bool exists = fs::exists(path, ec);
  if (access(exists ? path.c_str() : (dir.empty() ? "." : dir.c_str()), W_OK) != 0)
    return std::strerror(errno);
  return {};
}

// The cache file's peaks for this CPU (none when it is absent, another CPU's or unreadable).
std::vector<Peak> load(const std::string& path, const std::string& cpu) {
  std::vector<Peak> out;
  try {
    std::ifstream in(path);
    if (!in) return out;
    const auto j = parse_json(in);
    if (j.at("cpu") != cpu) return out;
    for (const auto& e : j.at("peaks")) {
      Peak p{e.at("kind"), e.at("threads"), e.at("ops_per_second"), e.at("how")};
      p.contended = e.value("contended", false);
      p.cores = e.value("cores", 0);
      p.measured_unix = e.value("measured_unix", int64_t(0));
      out.push_back(p);
    }
  } catch (const std::exception&) {
    out.clear();  // an unreadable cache is measured again
  }
  return out;
}

// Writes the cache atomically (a temporary file renamed); empty on success, else why not.
std::string save(const std::string& path, const std::string& cpu, const std::vector<Peak>& peaks) {
  if (std::string why = unwritable(path); !why.empty()) return why;
  nlohmann::json j{{"cpu", cpu}, {"peaks", nlohmann::json::array()}};
  for (const Peak& e : peaks)
    j["peaks"].push_back({{"kind", e.kind},
                          {"threads", e.threads},
                          {"ops_per_second", e.ops_per_second},
                          {"how", e.how},
                          {"contended", e.contended},
                          {"cores", e.cores},
                          {"measured_unix", e.measured_unix}});
  const std::string tmp = path + "." + std::to_string(getpid());
  {
    std::ofstream out(tmp);
    out << json_text(j, 2) << "\n";
    if (!out.flush()) {
      const std::string why = std::strerror(errno);
      std::remove(tmp.c_str());
      return why;
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) std::remove(tmp.c_str());
  return ec ? ec.message() : std::string();
}

// Whether the machine is quiet now: a 1-minute load average below half a core per core.
bool quiet_now() {
  double load = 0;
  std::ifstream in("/proc/loadavg");
  return in >> load && load < 0.5 * cpu_cores();
}

bool have(const std::vector<Peak>& peaks, const std::string& kind, int threads) {
  return std::any_of(peaks.begin(), peaks.end(),
                     [&](const Peak& e) { return e.kind == kind && (threads < 0 || e.threads == threads); });
}

// A peak is the most the machine does, so fewer threads do no less each than more threads
// do: more share the caches' and memory's bandwidth, and a lone core runs at the highest
// clock. A peak that reads otherwise was measured in a neighbour's moment (best of 5 within
// half a second): on the 2-core AMD EPYC Zen 3 VM the L2 read on 1 thread once read 38.8
// GB/s beside 164.5 on 2 (83–92 when measured again), and a depthwise layer at 110 % of it.
// Where one of a pair was measured by this run, the one on fewer threads below 85 % of its
// share of the other is measured again, and the higher of the two kept (both are lower
// bounds of the machine's rate). Thread counts above the cores ran on the cores: not
// compared.
// Conversely, a compute loop's chains live in one core's registers, so threads on cores of
// their own each do what one does alone, but for a lone core's higher clock (1-2 % on the
// Zen 5 VM). A compute peak on more threads below kLeastScaling of that is measured again,
// the higher kept, and where it still reads so, kept as contended (the truth test does not
// hold cases to it; a quiet run measures it again). On that VM, the int8 peak on 2 threads
// once read 944 GOP/s beside 932 on 1 (2,080 in a quiet hour), with each thread's CPU time
// the whole wall time: the VM's two vCPUs shared one physical core for a while, which the
// guest cannot see. Cases read 123-179 % of it. Returns whether any was measured again.
// A compute peak on fewer threads below its share of an uncontended one on more threads (the
// rate per thread times its threads) is raised to that share, and its method says so: a
// lone core runs no slower than each of several (its chains are in its own registers, and it
// has the highest clock), so the share is a rate the machine was seen to do. Within 85 % of
// it remeasure_inconsistent() lets it be; on the 2-core AMD EPYC Zen 5 VM the 1-thread f32 and
// bf16 peaks of one sweep read 240.1 and 466.6 GFLOP/s beside 256.6 and 516.1 per thread on 2
// (measured 5 minutes later), and 49 of its 1-thread cases read 101-108 % of them. Returns
// whether any was raised.
bool raise_to_share(std::vector<Peak>& peaks, const std::vector<Loop>& loops) {
  const int cores = cpu_cores();
  bool raised = false;
  for (const Loop& loop : loops) {
    if (loop.bytes) continue;
    for (Peak& few : peaks) {
      if (few.kind != loop.kind || few.threads > cores) continue;
      const Peak* best = nullptr;
      for (const Peak& many : peaks)
        if (many.kind == few.kind && many.threads > few.threads && many.threads <= cores && !many.contended &&
            (!best || many.ops_per_second / many.threads > best->ops_per_second / best->threads))
          best = &many;
      if (!best) continue;
      const double share = best->ops_per_second / best->threads * few.threads;
      if (share <= few.ops_per_second) continue;
      std::fprintf(
          stderr,
          "layerbench: the %s peak on %d thread%s (%.1f GFLOP/s) is below its share of the one on %d "
          "threads (%.1f): a lone core runs no slower; raised to that\n",
          few.kind.c_str(), few.threads, few.threads == 1 ? "" : "s", few.ops_per_second / 1e9, best->threads,
          share / 1e9);
      few.ops_per_second = share;
      const std::string note =
          ", raised to its share of the " + std::to_string(best->threads) + "-thread peak";
      if (few.how.find(note) == std::string::npos) few.how += note;
      few.contended = false;
      raised = true;
    }
  }
  return raised;
}

bool remeasure_inconsistent(std::vector<Peak>& peaks, const std::vector<Loop>& loops,
                            const std::vector<std::pair<std::string, int>>& fresh,
                            const std::function<bool()>& stopping) {
  constexpr double kLeastShare = 0.85, kLeastScaling = 0.7;
  const int cores = cpu_cores();
  auto is_fresh = [&](const Peak& e) {
    return std::find(fresh.begin(), fresh.end(), std::pair{e.kind, e.threads}) != fresh.end();
  };
  // The peak on more threads (cores enough) whose share `few` falls below, either of them
  // measured by this run; null when none.
  auto contradicted_by = [&](const Peak& few) -> const Peak* {
    for (const Peak& many : peaks)
      if (many.kind == few.kind && many.threads > few.threads && many.threads <= cores &&
          (is_fresh(few) || is_fresh(many)) &&
          few.ops_per_second < kLeastShare * many.ops_per_second / many.threads * few.threads)
        return &many;
    return nullptr;
  };
  // What `many` (a compute peak, cores enough) would be at kLeastScaling of the per-thread
  // rate of one on fewer threads, either measured by this run (a contended one is a lower
  // bound too); 0 when it is not below that.
  auto scaled_from_fewer = [&](const Peak& many, const Loop& loop) {
    double most = 0;
    if (loop.bytes || many.threads > cores) return most;
    for (const Peak& few : peaks)
      if (few.kind == many.kind && few.threads < many.threads && (is_fresh(few) || is_fresh(many)))
        most = std::max(most, kLeastScaling * few.ops_per_second / few.threads * many.threads);
    return many.ops_per_second < most ? most : 0;
  };
  bool again = false;
  for (const Loop& loop : loops)
    for (Peak& many : peaks) {
      if (many.kind != loop.kind || stopping()) continue;
      const double least = scaled_from_fewer(many, loop);
      if (least == 0) continue;
      std::fprintf(stderr,
                   "layerbench: the %s peak on %d threads (%.1f GFLOP/s) is below %.0f %% of %d times the "
                   "rate per thread on fewer (%.1f); measuring it again\n",
                   loop.kind.c_str(), many.threads, many.ops_per_second / 1e9, 100 * kLeastScaling,
                   many.threads, least / kLeastScaling / 1e9);
      Peak remeasured = measure(loop, many.threads);
      if (remeasured.ops_per_second > many.ops_per_second) many = std::move(remeasured);
      if (many.ops_per_second < least && !many.contended) {
        many.contended = true;
        many.how = loop.how + ", CONTENDED (" +
                   std::to_string(int(100 * kLeastScaling * many.ops_per_second / least)) + " % of " +
                   std::to_string(many.threads) + " times the rate per thread on fewer: cores shared)";
      }
      again = true;
    }
  for (const Loop& loop : loops)
    for (Peak& few : peaks) {
      if (few.kind != loop.kind || few.threads > cores || stopping()) continue;
      const Peak* many = contradicted_by(few);
      if (!many) continue;
      std::fprintf(
          stderr,
          "layerbench: the %s peak on %d thread%s (%.1f %s) is below %.0f %% of its share of the one "
          "on %d threads (%.1f); measuring it again\n",
          loop.kind.c_str(), few.threads, few.threads == 1 ? "" : "s", few.ops_per_second / 1e9,
          loop.bytes ? "GB/s" : "GFLOP/s", 100 * kLeastShare, many->threads,
          many->ops_per_second / many->threads * few.threads / 1e9);
      Peak remeasured = measure(loop, few.threads);
      if (remeasured.ops_per_second > few.ops_per_second) few = std::move(remeasured);
      again = true;
    }
  return again;
}

}  // namespace

std::string peaks_cache_path() {
  if (const char* p = std::getenv("LAYERBENCH_PEAKS"); p && *p) return p;
  std::string base;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    base = x;
  else if (const char* h = std::getenv("HOME"); h && *h)
    base = std::string(h) + "/.cache";
  else
    base = "/tmp";
  return base + "/layerbench/peaks-" + hostname() + ".json";
}

Peaks Peaks::for_threads(const std::vector<int>& threads, bool gpu, bool remeasure, bool resuming,
                         const std::function<bool()>& stop) {
  auto stopping = [&] { return stop && stop(); };
  check_oversubscription(threads);
  Peaks p;
  // The cache is this CPU's: its model name and signature (a VM's disk, cache included,
  // moves between hosts whose CPUs read alike: "AMD EPYC" is Zen 3, 4 or 5).
  const std::string signature = cpu_signature();
  const std::string cpu = cpu_model() + (signature.empty() ? "" : " (" + signature + ")");
  const std::string primary = peaks_cache_path(), fallback = fallback_cache_path();
  const std::string why_not_primary = unwritable(primary);
  // The cache read: the configured one, and where that cannot be written, the fallback a
  // run before this one wrote instead — so that it is not measured again every run.
  std::string source;
  if (!remeasure) {
    p.peaks_ = load(primary, cpu);
    if (!p.peaks_.empty()) source = primary;
    if (!why_not_primary.empty() && !fallback.empty())
      for (const Peak& e : load(fallback, cpu))
        if (!have(p.peaks_, e.kind, e.kind.rfind("gpu_", 0) == 0 ? -1 : e.threads)) {
          p.peaks_.push_back(e);
          if (source.empty()) source = fallback;
        }
  }
  const std::vector<Loop> cpu_loops = loops();
  // A CPU peak is the machine's for the cores it was measured on: one measured under a
  // narrower affinity (taskset, a cgroup's cpuset) is not this run's, nor this run's the
  // next one's.
  std::erase_if(p.peaks_, [cores = cpu_cores()](const Peak& e) {
    return e.kind.rfind("gpu_", 0) != 0 && e.cores != cores;
  });
  // A CPU peak measured over kMaxAgeSeconds ago is measured again (not when resuming, as
  // below): a VM's clock moves from hour to hour, and a peak from a slower hour puts cases
  // above 100 % of it. On the 2-core AMD EPYC Zen 5 VM the f32 FMA peak on 1 thread read
  // 236.3 GFLOP/s at 09:00 and 256.8 at 19:20 the same day; oneDNN's blocked bf16 pointwise
  // read 102 % of the morning's bf16 peak in the evening. Measuring every peak takes ~10 s.
  if (!resuming) {
    const int64_t now = unix_now();
    double oldest = 0;
    std::erase_if(p.peaks_, [&](const Peak& e) {
      if (e.kind.rfind("gpu_", 0) == 0 || now - e.measured_unix <= kMaxAgeSeconds) return false;
      oldest = std::max(oldest, double(now - e.measured_unix));
      return true;
    });
    if (oldest > 1e9)
      std::fputs(
          "layerbench: the cached peaks have no time of measurement (an older cache); measuring them again\n",
          stderr);
    else if (oldest > 0)
      std::fprintf(
          stderr,
          "layerbench: the cached peaks are %.1f h old, over an hour: a VM's clock moves from hour to hour; "
          "measuring them again\n",
          oldest / 3600);
  }
  // A contended peak stays cached while the machine is busy (measuring it before every
  // run would find it busy again), but is measured again in a quiet moment: it is lower
  // than the machine's, and a case could read as above 100 % of it. Not when resuming: a
  // resumed run keeps the peaks its first cases were divided by.
  if (!resuming && quiet_now())
    std::erase_if(p.peaks_, [&](const Peak& e) {
      if (!e.contended || e.kind.rfind("gpu_", 0) == 0) return false;
      std::fprintf(
          stderr, "layerbench: the cached %s peak on %d threads was measured contended; measuring it again\n",
          e.kind.c_str(), e.threads);
      return true;
    });
  // A peak measured another way than this build measures its kind (say with fewer chains:
  // the cache outlives builds) is measured again; not when resuming, as above.
  if (!resuming)
    std::erase_if(p.peaks_, [&](const Peak& e) {
      for (const Loop& loop : cpu_loops)
        if (loop.kind == e.kind && e.how.rfind(loop.how, 0) != 0) {
          std::fprintf(
              stderr,
              "layerbench: the cached %s peak on %d threads was measured another way (%s); measuring "
              "it again\n",
              e.kind.c_str(), e.threads, e.how.c_str());
          return true;
        }
      return false;
    });
  std::erase_if(p.peaks_, [&](const Peak& e) {
    const std::string why = implausible(e, cpu_loops);
    if (!why.empty())
      std::fprintf(
          stderr,
          "layerbench: the cached %s peak on %d threads (%g) is implausible (%s); measuring it again\n",
          e.kind.c_str(), e.threads, e.ops_per_second, why.c_str());
    return !why.empty();
  });
  bool measured = false;
  std::vector<std::pair<std::string, int>> fresh;  // (kind, threads) measured by this run
  // Every kind on one thread count before the next: the memory probes share their buffers.
  for (int t : threads)
    for (const Loop& loop : cpu_loops) {
      if (have(p.peaks_, loop.kind, t) || stopping()) continue;
      p.peaks_.push_back(measure(loop, t));
      fresh.emplace_back(loop.kind, t);
      measured = true;
    }
  measured |= remeasure_inconsistent(p.peaks_, cpu_loops, fresh, stopping);
  measured |= raise_to_share(p.peaks_, cpu_loops);
  // The GPU's ceilings come from its runtime (cuBLASLt GEMMs and a copy: kernels/device.h).
  const DeviceRuntime& device = device_runtime(Device::gpu);
  if (gpu && device.why_unavailable().empty() && !stopping()) {
    bool have_gpu = false;
    for (const Peak& e : p.peaks_)
      have_gpu |= e.kind.rfind("gpu_", 0) == 0;
    if (!have_gpu) {
      std::fprintf(stderr, "layerbench: measuring the GPU's peaks...\n");
      for (const DevicePeak& e : device.measure_peaks())
        p.peaks_.push_back({e.kind, 0, e.ops_per_second, e.how});
      measured = true;
    }
  }
  p.path_ = source;
  if (measured) {
    // Saved where it can be: the configured cache, else the fallback (one warning line),
    // else nowhere — and the context names the file actually used.
    std::string why = why_not_primary.empty() ? save(primary, cpu, p.peaks_) : why_not_primary;
    if (why.empty()) {
      p.path_ = primary;
    } else if (save(fallback, cpu, p.peaks_).empty()) {
      p.path_ = fallback;
      std::fprintf(stderr, "layerbench: warning: cannot write the peaks cache %s (%s); using %s\n",
                   primary.c_str(), why.c_str(), fallback.c_str());
    } else {
      p.path_.clear();
      std::fprintf(stderr,
                   "layerbench: warning: cannot write the peaks cache %s (%s), nor one in $TMPDIR; peaks are "
                   "not cached\n",
                   primary.c_str(), why.c_str());
    }
  }
  if (p.path_.empty()) p.path_ = "none";
  return p;
}

SteadinessProbe::SteadinessProbe() {
  std::vector<Loop> all = loops();
  const auto fma = std::find_if(all.begin(), all.end(), [](const Loop& l) { return l.kind == "f32_fma"; });
  if (fma == all.end()) return;
  throughput_ = [fn = fma->fn](long n) { return fn(0, n); };
  fma_how_ = fma->how;
  clock_probe_ = clock_chain;
  fma_iters_ = calibrate(throughput_, kWindowSeconds);
  clock_iters_ = calibrate(clock_probe_, kWindowSeconds);
}

void SteadinessProbe::window() {
  if (!throughput_) return;
  for (auto [fn, iters, out] :
       {std::tuple{&throughput_, fma_iters_, &fma_}, std::tuple{&clock_probe_, clock_iters_, &clock_}}) {
    const double t0 = wall_seconds();
    volatile float sink = (*fn)(iters);
    (void)sink;
    out->push_back(wall_seconds() - t0);
  }
}

void SteadinessProbe::probe(double seconds, const std::function<bool()>& stop) {
  const int windows = std::max(8, int(seconds / (2 * kWindowSeconds)));
  for (int w = 0; w < windows && !(stop && stop()); ++w)
    window();
  start_windows_ = int(fma_.size());
}

Steadiness SteadinessProbe::summary() const {
  Steadiness st;
  st.windows = int(fma_.size());
  if (!throughput_) {
    st.how = "not measured: no FMA loop on this CPU";
    return st;
  }
  if (st.windows == 0) {
    st.how = "not measured: interrupted";
    return st;
  }
  const double middle = median(fma_);
  const auto [fastest, slowest] = std::minmax_element(fma_.begin(), fma_.end());
  st.window_seconds = middle;
  st.fma_spread = robust_log_sd(fma_);
  st.fma_slowest = *slowest / middle;
  st.fma_fastest = *fastest / middle;
  st.clock_spread = robust_log_sd(clock_);
  st.how = std::to_string(start_windows_) + " windows before the cases and " +
           std::to_string(st.windows - start_windows_) + " between them (one before each case), each " +
           fma_how_ + " on one thread then a dependent chain of scalar multiply-adds, ~" +
           std::to_string(int(1000 * kWindowSeconds)) +
           " ms apiece; spreads are robust SDs (1.4826 x MAD) of log(window time)";
  return st;
}

namespace {

// The CPU peaks that bound a dtype's arithmetic: its engines (AVX-512 FMA or dot products,
// AMX tiles), the fastest of which is the ceiling.
bool bounds(const std::string& kind, DType dt) {
  const std::string prefix = std::string(name(dt)) + "_";
  return kind.rfind(prefix, 0) == 0;
}

const Peak* fastest(const std::vector<Peak>& peaks, const std::function<bool(const Peak&)>& which) {
  const Peak* best = nullptr;
  for (const Peak& e : peaks)
    if (which(e) && (!best || e.ops_per_second > best->ops_per_second)) best = &e;
  return best;
}

}  // namespace

const Peak* Peaks::find(DType dt, int threads, bool gpu) const {
  if (gpu) {
    const std::string kind = "gpu_" + std::string(name(dt)) + "_gemm";
    return fastest(peaks_, [&](const Peak& e) { return e.kind == kind; });
  }
  return fastest(peaks_, [&](const Peak& e) {
    return e.threads == threads && !is_bandwidth(e.kind) && e.kind.rfind("gpu_", 0) != 0 &&
           bounds(e.kind, dt);
  });
}

const Peak* Peaks::bandwidth(MemoryLevel level, int threads, bool gpu) const {
  if (gpu) return fastest(peaks_, [](const Peak& e) { return e.kind == "gpu_d2d_copy"; });
  const std::string prefix = level == MemoryLevel::l2 ? "bw_l2_" : "bw_dram_";
  return fastest(peaks_, [&](const Peak& e) { return e.threads == threads && e.kind.rfind(prefix, 0) == 0; });
}

bool is_bandwidth(const std::string& kind) {
  return kind.rfind("bw_", 0) == 0 || kind == "gpu_d2d_copy";
}

}  // namespace lb::bench
