// lb_ukernel_bench: the cpu backend's GEMM micro-kernels alone, on one thread, against the
// peak of the engine each runs on — to tell, for a GEMM far from its peak, whether the
// micro-kernel itself is slow or the driver around it (packing, blocking, memory).
//
// Each case calls one micro-kernel (kernels/cpu/ukernel.h, ukernel_amx.h) on panels packed
// in its layout, as gemm.cpp's driver does for a K slice that adds to partial sums and ends
// the GEMM (load_c and last: C's partial sums loaded, the epilogue run, bf16 written as
// bf16), full tiles only:
//   l1  the same A and B micro-panel every call: the tile loop with its operands as close
//       as they get (in L1 while (MR + NR) × kc_bytes fits);
//   l2  the driver's innermost loop: one B micro-panel, A from a block of 256 rows (the
//       AMX default MC), a panel per call in turn, C tiles down a column of a 1024-wide C.
// over kc_bytes, the bytes of depth a K slice spans (gemm.cpp's defaults: f32, bf16 and
// int8 on AVX-512 4096; AMX 1024), and on AMX the software-prefetch distance (UkArgs).
// Before its timing each case runs one call on random operands and checks the tile
// against a double-precision product of the same panels: a case whose check fails is
// skipped with the reason, never timed.
//
// Counters: FLOP/s (int8: multiply-add ops, 2 per product, as the peaks count them),
// pct_peak (of the one-thread peak of the case's engine: f32_fma, bf16_dot, i8_dot,
// bf16_amx, i8_amx; layerbench's peaks cache, measured where missing) and s_per_call.
// Paths the CPU lacks are skipped with the reason. --emulated adds the AMX kernels on
// emulated tiles (any host; their times measure the emulation, not a CPU: for tests).
//
// usage: lb_ukernel_bench [--emulated] [--benchmark_*...]
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/harness/peaks.h"
#include "kernels/buffer.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/ukernel.h"
#include "kernels/cpu/ukernel_amx.h"
#include "kernels/dtype.h"

namespace {

using lb::AlignedBuffer;
using lb::cpu::Elem;
using lb::cpu::UkArgs;

constexpr int64_t kLdc = 1024;       // C's row stride, as in a 1024-wide GEMM
constexpr int64_t kBlockRows = 256;  // rows of A in the l2 mode's block (AMX's default MC)

struct Path {
  std::string name;  // "avx512_f32", "amx_bf16", ...
  Elem e;
  int mr, nr;
  int kg;       // B's (and the AVX-512 A's) group: the dot product's depth
  int a_depth;  // A panel's depth group: kg, or AMX's tile step (32 bf16 / 64 u8)
  std::string peak_kind;
  void (*ukr)(const UkArgs&);
  void (*begin)() = nullptr;
  void (*end)() = nullptr;
  std::string unavailable;  // why not here; empty when it runs
};

size_t elem_bytes(Elem e) {
  return e == Elem::f32 ? 4 : e == Elem::bf16 ? 2 : 1;
}

std::vector<Path> paths(bool emulated) {
  using namespace lb::cpu;
  const bool avx512 = isa_supported(Isa::avx512);
  const std::string bf16 = avx512 && __builtin_cpu_supports("avx512bf16") ? "" : "no AVX512_BF16 on this CPU";
  const std::string vnni = avx512 && __builtin_cpu_supports("avx512vnni") ? "" : "no AVX512_VNNI on this CPU";
  std::vector<Path> p = {
      {"avx512_f32", Elem::f32, 14, 32, 1, 1, "f32_fma", ukr_f32_avx512, nullptr, nullptr,
       avx512 ? "" : "no AVX-512 on this CPU"},
      {"avx512_bf16", Elem::bf16, 14, 32, 2, 2, "bf16_dot", ukr_bf16_avx512, nullptr, nullptr, bf16},
      {"avx512_int8", Elem::u8s8, 14, 32, 4, 4, "i8_dot", ukr_u8s8_avx512, nullptr, nullptr, vnni},
      {"amx_bf16", Elem::bf16, 32, 32, 2, 32, "bf16_amx", ukr_bf16_amx, amx_configure, amx_release,
       amx_reason(Elem::bf16)},
      {"amx_int8", Elem::u8s8, 32, 32, 4, 64, "i8_amx", ukr_u8s8_amx, amx_configure, amx_release,
       amx_reason(Elem::u8s8)},
  };
  if (emulated) {
    p.push_back({"amx_emulated_bf16", Elem::bf16, 32, 32, 2, 32, "bf16_amx", ukr_bf16_amx_emulated,
                 amx_configure_emulated, amx_release_emulated, ""});
    p.push_back({"amx_emulated_int8", Elem::u8s8, 32, 32, 4, 64, "i8_amx", ukr_u8s8_amx_emulated,
                 amx_configure_emulated, amx_release_emulated, ""});
  }
  return p;
}

// Element (r, k) of an A micro-panel (MR rows, k-major in groups of a_depth) and (k, j) of
// a B micro-panel (NR columns, groups of kg): their indices in elements.
int64_t a_index(const Path& p, int64_t r, int64_t k) {
  return (k / p.a_depth) * p.mr * p.a_depth + r * p.a_depth + k % p.a_depth;
}
int64_t b_index(const Path& p, int64_t k, int64_t j) {
  return (k / p.kg) * p.nr * p.kg + j * p.kg + k % p.kg;
}

// Random operands in the element kind, and each element's value as a double.
void fill(Elem e, std::byte* dst, size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  std::uniform_int_distribution<int> byte(0, 255);
  for (size_t i = 0; i < n; ++i) {
    if (e == Elem::f32) {
      const float v = real(rng);
      std::memcpy(dst + 4 * i, &v, 4);
    } else if (e == Elem::bf16) {
      const uint16_t v = lb::f32_to_bf16(real(rng));
      std::memcpy(dst + 2 * i, &v, 2);
    } else {
      dst[i] = std::byte(byte(rng));  // A's u8, B's s8: any bits
    }
  }
}
double value(Elem e, const std::byte* src, int64_t i, bool is_a) {
  if (e == Elem::f32) {
    float v;
    std::memcpy(&v, src + 4 * i, 4);
    return v;
  }
  if (e == Elem::bf16) {
    uint16_t v;
    std::memcpy(&v, src + 2 * i, 2);
    return lb::bf16_to_f32(v);
  }
  const auto b = static_cast<uint8_t>(src[i]);
  return is_a ? double(b) : double(static_cast<int8_t>(b));
}

// One call on zeroed partial sums against the double product of the panels: empty when
// every element is within the element kind's rounding, else the first that is not.
std::string check_one_call(const Path& p, int64_t kc) {
  std::mt19937 rng(12345);
  const size_t eb = elem_bytes(p.e);
  AlignedBuffer<std::byte> a(size_t(p.mr) * kc * eb), b(size_t(p.nr) * kc * eb);
  fill(p.e, a.data(), size_t(p.mr) * kc, rng);
  fill(p.e, b.data(), size_t(p.nr) * kc, rng);
  AlignedBuffer<float> c(size_t(p.mr) * kLdc);
  AlignedBuffer<uint16_t> out(size_t(p.mr) * kLdc);
  UkArgs u;
  u.kc = kc;
  u.a = a.data();
  u.b = b.data();
  u.c = c.data();
  u.ldc = kLdc;
  u.m = p.mr;
  u.n = p.nr;
  u.load_c = true;
  u.last = true;
  u.scale = p.e == Elem::u8s8 ? 0.5f : 1.0f;
  if (p.e == Elem::bf16) {
    u.out_bf16 = out.data();
    u.ldo = kLdc;
  }
  if (p.begin) p.begin();
  p.ukr(u);
  if (p.end) p.end();
  for (int r = 0; r < p.mr; ++r)
    for (int j = 0; j < p.nr; ++j) {
      double want = 0, magnitude = 0;
      for (int64_t k = 0; k < kc; ++k) {
        const double t =
            value(p.e, a.data(), a_index(p, r, k), true) * value(p.e, b.data(), b_index(p, k, j), false);
        want += t;
        magnitude += std::fabs(t);
      }
      want *= u.scale;
      magnitude *= u.scale;
      const double got =
          p.e == Elem::bf16 ? lb::bf16_to_f32(out[size_t(r) * kLdc + j]) : c[size_t(r) * kLdc + j];
      // f32 sums: a few ulps of the magnitude per term; bf16 output: its 8-bit mantissa.
      const double tol = p.e == Elem::bf16 ? std::fabs(want) / 128 + magnitude * 1e-5 : magnitude * 1e-5;
      if (!(std::fabs(got - want) <= tol)) {
        char line[160];
        std::snprintf(line, sizeof line, "wrong tile: C(%d,%d) = %.6g, expected %.6g (kc %lld)", r, j, got,
                      want, static_cast<long long>(kc));
        return line;
      }
    }
  return {};
}

void run_case(benchmark::State& state, const Path& p, bool l2, int64_t kc_bytes, int prefetch, double peak) {
  if (!p.unavailable.empty()) {
    state.SkipWithError(p.unavailable.c_str());
    return;
  }
  const size_t eb = elem_bytes(p.e);
  const int64_t kc = kc_bytes / int64_t(eb);
  if (const std::string wrong = check_one_call(p, kc); !wrong.empty()) {
    state.SkipWithError(wrong.c_str());
    return;
  }
  const int64_t panels = l2 ? kBlockRows / p.mr : 1;  // AVX-512's 14 rows: 18 panels, 252 rows
  const int64_t a_panel = p.mr * kc * int64_t(eb), b_panel = p.nr * kc * int64_t(eb);
  std::mt19937 rng(7);
  AlignedBuffer<std::byte> a{size_t(panels * a_panel)}, b{size_t(b_panel)};
  fill(p.e, a.data(), size_t(panels * p.mr * kc), rng);
  fill(p.e, b.data(), size_t(p.nr * kc), rng);
  AlignedBuffer<float> c(size_t(panels * p.mr * kLdc));
  AlignedBuffer<uint16_t> out(size_t(panels * p.mr * kLdc));
  UkArgs u;
  u.kc = kc;
  u.b = b.data();
  u.ldc = kLdc;
  u.ldo = kLdc;
  u.m = p.mr;
  u.n = p.nr;
  u.load_c = true;
  u.last = true;
  u.scale = p.e == Elem::u8s8 ? 1e-6f : 1.0f;
  u.prefetch = prefetch;
  if (p.begin) p.begin();
  for (auto _ : state) {
    for (int64_t i = 0; i < panels; ++i) {
      u.a = a.data() + i * a_panel;
      u.c = c.data() + i * p.mr * kLdc;
      u.out_bf16 = p.e == Elem::bf16 ? out.data() + i * p.mr * kLdc : nullptr;
      p.ukr(u);
    }
    benchmark::ClobberMemory();
  }
  if (p.end) p.end();
  const double flops = 2.0 * p.mr * p.nr * kc * panels;
  state.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  if (peak > 0)
    state.counters["pct_peak"] =
        benchmark::Counter(flops * 100 / peak, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["s_per_call"] = benchmark::Counter(
      double(panels), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  char label[200];
  std::snprintf(label, sizeof label, "%dx%d tile, kc %lld (%lld B a row), A %lld KiB + B %lld KiB a call%s",
                p.mr, p.nr, static_cast<long long>(kc), static_cast<long long>(kc_bytes),
                static_cast<long long>(a_panel / 1024), static_cast<long long>(b_panel / 1024),
                l2 ? ", A from a 256-row block" : ", A and B the same each call");
  state.SetLabel(label);
}

}  // namespace

int main(int argc, char** argv) {
  bool emulated = false;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) == "--emulated")
      emulated = true;
    else
      args.push_back(argv[i]);
  }
  int n = int(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 2;

  // One-thread peaks from layerbench's cache (measured where missing or stale).
  const lb::bench::Peaks peaks = lb::bench::Peaks::for_threads({1}, false, false);
  benchmark::AddCustomContext("layerbench_peaks_cache", peaks.cache_path());
  static std::vector<Path> all = paths(emulated);
  for (const Path& p : all) {
    double peak = 0;
    for (const lb::bench::Peak& pk : peaks.all())
      if (pk.kind == p.peak_kind && pk.threads == 1) peak = pk.ops_per_second;
    const bool amx = p.begin != nullptr;
    for (const bool l2 : {false, true})
      for (const int64_t kc_bytes : {256, 512, 1024, 2048, 4096})
        for (const int prefetch : amx ? std::vector<int>{0, 2} : std::vector<int>{0}) {
          std::string name = p.name + (l2 ? "/l2" : "/l1") + "/kc_bytes:" + std::to_string(kc_bytes);
          if (amx) name += "/prefetch:" + std::to_string(prefetch);
          benchmark::RegisterBenchmark(name.c_str(), [&p, l2, kc_bytes, prefetch, peak](benchmark::State& s) {
            run_case(s, p, l2, kc_bytes, prefetch, peak);
          });
        }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
