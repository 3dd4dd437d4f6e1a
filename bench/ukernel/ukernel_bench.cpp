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
// over kc_bytes, the bytes of depth a K slice spans (the label gives the GEMM's own K
// slice), and on AMX the software-prefetch distance (UkArgs). Tiles, layouts and kernels
// are gemm.cpp's own (lb::cpu::micro_kernel), so this times what the GEMM calls.
// Before its timing each case runs one call of its slice kind on random operands (one that
// leaves partial sums, followed by a last one) and checks the tile against a
// double-precision product of the same panels: a case whose check fails is skipped with
// the reason, never timed.
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

// A micro-kernel to time: gemm.cpp's description of it, the peak it is held against, and
// why it cannot run here (empty when it can).
struct Path {
  std::string name;  // "avx512_f32", "amx_bf16", ...
  Elem e;
  lb::cpu::MicroKernel k;
  std::string peak_kind;
  std::string unavailable;
};

std::vector<Path> paths(bool emulated) {
  using namespace lb::cpu;
  const bool avx512 = isa_supported(Isa::avx512);
  const std::string bf16 = avx512 && __builtin_cpu_supports("avx512bf16") ? "" : "no AVX512_BF16 on this CPU";
  const std::string vnni = avx512 && __builtin_cpu_supports("avx512vnni") ? "" : "no AVX512_VNNI on this CPU";
  std::vector<Path> p = {
      {"avx512_f32", Elem::f32, micro_kernel(Isa::avx512), "f32_fma", avx512 ? "" : "no AVX-512 on this CPU"},
      {"avx512_bf16", Elem::bf16, micro_kernel(Elem::bf16, LowpPath::avx512), "bf16_dot", bf16},
      {"avx512_int8", Elem::u8s8, micro_kernel(Elem::u8s8, LowpPath::avx512), "i8_dot", vnni},
      {"amx_bf16", Elem::bf16, micro_kernel(Elem::bf16, LowpPath::amx), "bf16_amx", amx_reason(Elem::bf16)},
      {"amx_int8", Elem::u8s8, micro_kernel(Elem::u8s8, LowpPath::amx), "i8_amx", amx_reason(Elem::u8s8)},
  };
  if (emulated) {
    p.push_back(
        {"amx_emulated_bf16", Elem::bf16, micro_kernel(Elem::bf16, LowpPath::amx_emulated), "bf16_amx", ""});
    p.push_back(
        {"amx_emulated_int8", Elem::u8s8, micro_kernel(Elem::u8s8, LowpPath::amx_emulated), "i8_amx", ""});
  }
  return p;
}

// Element (r, k) of an A micro-panel (MR rows, k-major in groups of ka) and (k, j) of a B
// micro-panel (NR columns, groups of kg): their indices in elements.
int64_t a_index(const lb::cpu::MicroKernel& k, int64_t r, int64_t d) {
  return (d / k.ka) * k.mr * k.ka + r * k.ka + d % k.ka;
}
int64_t b_index(const lb::cpu::MicroKernel& k, int64_t d, int64_t j) {
  return (d / k.kg) * k.nr * k.kg + j * k.kg + d % k.kg;
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

// Which K slice of a GEMM each timed call is: its partial sums loaded (load_c) or not, the
// epilogue run (last) or the sums stored for a later slice.
struct Slice {
  bool load_c = true, last = true;
};

// One call of the kind `slice` on zeroed partial sums against the double product of the
// panels — a slice that leaves partial sums followed by a last slice on the same panels,
// which adds the product again and writes the result (the partial sums' own format is the
// path's: f32 scaled on AVX-512, unscaled s32 on AMX) — empty when every element is within
// the element kind's rounding, else the first that is not.
std::string check_one_call(const Path& p, int64_t kc, Slice slice) {
  std::mt19937 rng(12345);
  AlignedBuffer<std::byte> a(size_t(p.k.mr) * kc * p.k.ea), b(size_t(p.k.nr) * kc * p.k.eb);
  fill(p.e, a.data(), size_t(p.k.mr) * kc, rng);
  fill(p.e, b.data(), size_t(p.k.nr) * kc, rng);
  AlignedBuffer<float> c(size_t(p.k.mr) * kLdc);
  AlignedBuffer<uint16_t> out(size_t(p.k.mr) * kLdc);
  UkArgs u;
  u.kc = kc;
  u.a = a.data();
  u.b = b.data();
  u.c = c.data();
  u.ldc = kLdc;
  u.m = p.k.mr;
  u.n = p.k.nr;
  u.load_c = slice.load_c;
  u.last = slice.last;
  u.scale = p.e == Elem::u8s8 ? 0.5f : 1.0f;
  if (p.e == Elem::bf16) {
    u.out_bf16 = out.data();
    u.ldo = kLdc;
  }
  if (p.k.begin) p.k.begin();
  p.k.ukr(u);
  const int times = slice.last ? 1 : 2;  // how often the product is in the result
  if (!slice.last) {
    u.load_c = u.last = true;
    p.k.ukr(u);
  }
  if (p.k.end) p.k.end();
  for (int r = 0; r < p.k.mr; ++r)
    for (int j = 0; j < p.k.nr; ++j) {
      double want = 0, magnitude = 0;
      for (int64_t k = 0; k < kc; ++k) {
        const double t =
            value(p.e, a.data(), a_index(p.k, r, k), true) * value(p.e, b.data(), b_index(p.k, k, j), false);
        want += t;
        magnitude += std::fabs(t);
      }
      want *= u.scale * times;
      magnitude *= u.scale * times;
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

void run_case(benchmark::State& state, const Path& p, bool l2, int64_t kc_bytes, int prefetch, double peak,
              Slice slice) {
  if (!p.unavailable.empty()) {
    state.SkipWithError(p.unavailable.c_str());
    return;
  }
  const int64_t kc = kc_bytes / int64_t(p.k.ea);
  if (const std::string wrong = check_one_call(p, kc, slice); !wrong.empty()) {
    state.SkipWithError(wrong.c_str());
    return;
  }
  const int64_t panels = l2 ? kBlockRows / p.k.mr : 1;  // AVX-512's 14 rows: 18 panels, 252 rows
  const int64_t a_panel = p.k.mr * kc * int64_t(p.k.ea), b_panel = p.k.nr * kc * int64_t(p.k.eb);
  std::mt19937 rng(7);
  AlignedBuffer<std::byte> a{size_t(panels * a_panel)}, b{size_t(b_panel)};
  fill(p.e, a.data(), size_t(panels * p.k.mr * kc), rng);
  fill(p.e, b.data(), size_t(p.k.nr * kc), rng);
  AlignedBuffer<float> c(size_t(panels * p.k.mr * kLdc));
  AlignedBuffer<uint16_t> out(size_t(panels * p.k.mr * kLdc));
  UkArgs u;
  u.kc = kc;
  u.b = b.data();
  u.ldc = kLdc;
  u.ldo = kLdc;
  u.m = p.k.mr;
  u.n = p.k.nr;
  u.load_c = slice.load_c;
  u.last = slice.last;
  u.scale = p.e == Elem::u8s8 ? 1e-6f : 1.0f;
  u.prefetch = prefetch;
  if (p.k.begin) p.k.begin();
  for (auto _ : state) {
    for (int64_t i = 0; i < panels; ++i) {
      u.a = a.data() + i * a_panel;
      u.c = c.data() + i * p.k.mr * kLdc;
      u.out_bf16 = p.e == Elem::bf16 ? out.data() + i * p.k.mr * kLdc : nullptr;
      p.k.ukr(u);
    }
    benchmark::ClobberMemory();
  }
  if (p.k.end) p.k.end();
  const double flops = 2.0 * p.k.mr * p.k.nr * kc * panels;
  state.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  if (peak > 0)
    state.counters["pct_peak"] =
        benchmark::Counter(flops * 100 / peak, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["s_per_call"] = benchmark::Counter(
      double(panels), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  char label[240];
  std::snprintf(label, sizeof label,
                "%dx%d tile, kc %lld (%lld B a row; the GEMM's kc %lld), A %lld KiB + B %lld KiB a call%s",
                p.k.mr, p.k.nr, static_cast<long long>(kc), static_cast<long long>(kc_bytes),
                static_cast<long long>(p.k.kc), static_cast<long long>(a_panel / 1024),
                static_cast<long long>(b_panel / 1024),
                l2 ? ", A from a 256-row block" : ", A and B the same each call");
  state.SetLabel(label);
}

}  // namespace

int main(int argc, char** argv) {
  bool emulated = false;
  Slice slice;
  std::string slice_name;  // empty: the default, last
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--emulated") {
      emulated = true;
    } else if (arg.rfind("--slice=", 0) == 0) {
      slice_name = arg.substr(8);
      if (slice_name == "first")
        slice = {false, false};
      else if (slice_name == "middle")
        slice = {true, false};
      else if (slice_name == "only")
        slice = {false, true};
      else if (slice_name != "last") {
        std::fprintf(stderr, "lb_ukernel_bench: %s: expected --slice=first, middle, last or only\n", argv[i]);
        return 2;
      }
    } else {
      args.push_back(argv[i]);
    }
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
    const bool amx = p.k.begin != nullptr;  // tiles to configure: an AMX kernel
    for (const bool l2 : {false, true})
      for (const int64_t kc_bytes : {256, 512, 1024, 2048, 4096})
        for (const int prefetch : amx ? std::vector<int>{0, 2} : std::vector<int>{0}) {
          std::string name = p.name + (l2 ? "/l2" : "/l1") + "/kc_bytes:" + std::to_string(kc_bytes);
          if (amx) name += "/prefetch:" + std::to_string(prefetch);
          if (!slice_name.empty()) name += "/slice:" + slice_name;
          benchmark::RegisterBenchmark(name.c_str(),
                                       [&p, l2, kc_bytes, prefetch, peak, slice](benchmark::State& s) {
                                         run_case(s, p, l2, kc_bytes, prefetch, peak, slice);
                                       });
        }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
