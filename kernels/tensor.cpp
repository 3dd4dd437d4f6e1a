#include "kernels/tensor.h"

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "kernels/common.h"
#include "kernels/host_memory.h"
#include "kernels/ops/traits.h"

namespace lb {
namespace {

constexpr uint32_t kPoisonF32 = 0x7fc0deadu;  // a quiet NaN with a payload no arithmetic makes
constexpr uint16_t kPoisonF16 = 0x7e5au;
constexpr uint16_t kPoisonBf16 = 0x7fdau;
constexpr uint8_t kPoisonByte = 0xa5u;

// Tensors this large get a mapping of their own (host_memory.h).
constexpr size_t kMappedBytes = size_t(1) << 20;

// splitmix64: tiny, fast and identical everywhere (std distributions are not).
// splitmix64 is counter-based: draw i is a function of the seed and i alone, so a fill
// is a loop without a carried dependency that the compiler vectorises.
struct Rng {
  uint64_t seed;
  uint64_t at(int64_t i) const {
    uint64_t z = seed + uint64_t(i + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform(int64_t i) const { return double(at(i) >> 11) * 0x1p-52 - 1.0; }  // [-1, 1)
  int64_t integer(int64_t i, int64_t lo, int64_t hi) const {
    return lo + int64_t(at(i) % uint64_t(hi - lo + 1));
  }
};

// Integer fills: u8 in [0, 31], s8 in [-31, 31], both scaled by 1/32, so an int32 sum of
// up to 2 million products is exact.
constexpr double kIntScale = 1.0 / 32.0;

}  // namespace

std::string_view name(Arg a) {
  switch (a) {
    case Arg::src:
      return "src";
    case Arg::wei:
      return "wei";
    case Arg::bias:
      return "bias";
    case Arg::wei_iter:
      return "wei_iter";
    case Arg::src_iter:
      return "src_iter";
    case Arg::src_iter_c:
      return "src_iter_c";
    case Arg::src_1:
      return "src_1";
    case Arg::dst:
      return "dst";
    case Arg::relu_dst:
      return "relu_dst";
    case Arg::diff_src:
      return "diff_src";
    case Arg::diff_wei:
      return "diff_wei";
    case Arg::diff_bias:
      return "diff_bias";
    case Arg::diff_wei_iter:
      return "diff_wei_iter";
    case Arg::diff_src_iter:
      return "diff_src_iter";
    case Arg::diff_src_iter_c:
      return "diff_src_iter_c";
    case Arg::diff_dst:
      return "diff_dst";
    case Arg::diff_relu_dst:
      return "diff_relu_dst";
  }
  return "?";
}

namespace {

// Each primal argument and its gradient.
constexpr std::pair<Arg, Arg> kDiffs[] = {
    {Arg::src, Arg::diff_src},           {Arg::wei, Arg::diff_wei},
    {Arg::bias, Arg::diff_bias},         {Arg::wei_iter, Arg::diff_wei_iter},
    {Arg::src_iter, Arg::diff_src_iter}, {Arg::src_iter_c, Arg::diff_src_iter_c},
    {Arg::dst, Arg::diff_dst},           {Arg::relu_dst, Arg::diff_relu_dst},
};

}  // namespace

Arg diff_of(Arg primal) {
  for (auto [p, d] : kDiffs)
    if (p == primal) return d;
  throw Error(std::string(name(primal)) +
              (is_diff(primal) ? " is a gradient; it has none" : " has no gradient"));
}

Arg primal_of(Arg diff) {
  for (auto [p, d] : kDiffs)
    if (d == diff) return p;
  throw Error(std::string(name(diff)) + " is not a gradient");
}

bool is_diff(Arg a) {
  return int(a) >= int(Arg::diff_src);
}

Storage storage_of(DType dt, Arg a) {
  // A gradient is stored as its primal; integer and f8 problems have no training passes,
  // and their gradients (should a kernel be asked) would be f32.
  if (is_diff(a)) {
    if (dt == DType::i8 || dt == DType::f8) return Storage::f32;
    return storage_of(dt, primal_of(a));
  }
  // Bias and the LSTM cell state stay f32 in every dtype, as oneDNN keeps them (cuBLASLt and
  // cuDNN take them in a narrower type: value_grid()).
  if (a == Arg::bias || a == Arg::src_iter_c) return Storage::f32;
  switch (dt) {
    case DType::f32:
    case DType::tf32:
      return Storage::f32;  // tf32 is f32 storage read with 10 mantissa bits
    case DType::f16:
      return Storage::f16;
    case DType::bf16:
      return Storage::bf16;
    case DType::i8:
      // u8 activations x s8 weights, int32 accumulation, dequantised f32 output.
      if (a == Arg::src || a == Arg::src_1 || a == Arg::src_iter) return Storage::u8;
      if (a == Arg::wei || a == Arg::wei_iter) return Storage::s8;
      return Storage::f32;
    case DType::f8:
      // e4m3 inputs, f32 output.
      if (a == Arg::dst || a == Arg::relu_dst) return Storage::f32;
      return Storage::e4m3;
  }
  return Storage::f32;
}

Storage value_grid(DType dt, Arg a) {
  if (a != Arg::bias && a != Arg::src_iter_c) return storage_of(dt, a);
  switch (dt) {
    case DType::f16:
      return Storage::f16;
    case DType::bf16:
    case DType::f8:
      return Storage::bf16;
    default:
      return Storage::f32;
  }
}

Tensor::Tensor(Storage storage, std::vector<int64_t> dims, double scale)
    : storage_(storage), dims_(std::move(dims)), elements_(1), scale_(scale) {
  for (int64_t d : dims_)
    elements_ *= d;
  const size_t padded = size_t(round_up(int64_t(bytes()), 64));
  if (void* block = take_resident(padded)) {  // under a ResidentScope (host_memory.h)
    data_ = std::unique_ptr<std::byte[], Free>(static_cast<std::byte*>(block), Free{padded});
    return;
  }
  if (padded >= kMappedBytes) {
    const Mapping m = map_populated(padded);
    data_ = std::unique_ptr<std::byte[], Free>(m.data, Free{m.bytes});
    return;
  }
  auto* p = static_cast<std::byte*>(std::aligned_alloc(64, padded ? padded : 64));
  if (!p) throw std::bad_alloc();
  data_.reset(p);
}

Tensor Tensor::view(Storage storage, std::vector<int64_t> dims, void* data, double scale) {
  if (reinterpret_cast<uintptr_t>(data) % 64) throw Error("Tensor::view: data not 64-byte aligned");
  Tensor t;
  t.storage_ = storage;
  t.dims_ = std::move(dims);
  t.elements_ = 1;
  for (int64_t d : t.dims_)
    t.elements_ *= d;
  t.scale_ = scale;
  t.data_ = std::unique_ptr<std::byte[], Free>(static_cast<std::byte*>(data), Free{kView});
  return t;
}

void Tensor::Free::operator()(std::byte* p) const {
  if (mapped == kView) return;
  if (!mapped)
    std::free(p);
  else if (!give_back_resident(p))
    munmap(p, mapped);
}

double Tensor::load(int64_t i) const {
  switch (storage_) {
    case Storage::f32:
      return as<float>()[i];
    case Storage::f16:
      return f16_to_f32(as<uint16_t>()[i]);
    case Storage::bf16:
      return bf16_to_f32(as<uint16_t>()[i]);
    case Storage::u8:
      return scale_ * as<uint8_t>()[i];
    case Storage::s8:
      return scale_ * as<int8_t>()[i];
    case Storage::e4m3:
      return e4m3_to_f32(as<uint8_t>()[i]);
  }
  return 0.0;
}

void Tensor::load_range(int64_t first, int64_t count, double* out) const {
  auto convert = [&](const auto* in, auto to_double) {
    for (int64_t i = 0; i < count; ++i)
      out[i] = to_double(in[first + i]);
  };
  switch (storage_) {
    case Storage::f32:
      return convert(as<float>(), [](float x) { return double(x); });
    case Storage::f16:
      return convert(as<uint16_t>(), [](uint16_t x) { return double(f16_to_f32(x)); });
    case Storage::bf16:
      return convert(as<uint16_t>(), [](uint16_t x) { return double(bf16_to_f32(x)); });
    case Storage::u8:
      return convert(as<uint8_t>(), [this](uint8_t x) { return scale_ * x; });
    case Storage::s8:
      return convert(as<int8_t>(), [this](int8_t x) { return scale_ * x; });
    case Storage::e4m3:
      return convert(as<uint8_t>(), [](uint8_t x) { return double(e4m3_to_f32(x)); });
  }
}

void Tensor::store(int64_t i, double v) {
  switch (storage_) {
    case Storage::f32:
      as<float>()[i] = float(v);
      return;
    case Storage::f16:
      as<uint16_t>()[i] = f32_to_f16(float(v));
      return;
    case Storage::bf16:
      as<uint16_t>()[i] = f32_to_bf16(float(v));
      return;
    case Storage::u8:
      as<uint8_t>()[i] = uint8_t(std::clamp(std::nearbyint(v / scale_), 0.0, 255.0));
      return;
    case Storage::s8:
      as<int8_t>()[i] = int8_t(std::clamp(std::nearbyint(v / scale_), -128.0, 127.0));
      return;
    case Storage::e4m3:
      as<uint8_t>()[i] = f32_to_e4m3(float(v));
      return;
  }
}

Tensor Tensor::clone() const {
  Tensor t(storage_, dims_, scale_);
  std::memcpy(t.data(), data(), bytes());
  return t;
}

Tensor& TensorSet::at(Arg a) {
  if (!has(a)) throw Error("tensor '" + std::string(name(a)) + "' is not part of this problem");
  return *slots_[int(a)];
}

const Tensor& TensorSet::at(Arg a) const {
  return const_cast<TensorSet*>(this)->at(a);
}

size_t TensorSet::bytes() const {
  size_t total = 0;
  for (const auto& s : slots_)
    if (s) total += s->bytes();
  return total;
}

std::vector<Arg> input_args(const Problem& p) {
  std::vector<Arg> args;
  for (const PassArg& a : pass_args(p))
    if (a.read) args.push_back(a.spec.arg);
  return args;
}

std::vector<Arg> output_args(const Problem& p) {
  std::vector<Arg> args;
  for (const PassArg& a : pass_args(p))
    if (a.written) args.push_back(a.spec.arg);
  return args;
}

namespace {

void add_tensor(const Problem& p, Arg arg, std::vector<int64_t> dims, TensorSet& ts) {
  const Storage s = storage_of(p.dt, arg);
  const double scale = (s == Storage::u8 || s == Storage::s8) ? kIntScale : 1.0;
  ts.set(arg, Tensor(s, std::move(dims), scale));
}

}  // namespace

TensorSet make_tensors(const Problem& p) {
  TensorSet ts;
  for (const PassArg& a : pass_args(p))
    add_tensor(p, a.spec.arg, a.spec.dims(p), ts);
  return ts;
}

void add_output_tensors(const Problem& p, TensorSet& ts) {
  for (const PassArg& a : pass_args(p))
    if (!a.read && !ts.has(a.spec.arg)) add_tensor(p, a.spec.arg, a.spec.dims(p), ts);
}

namespace {

void fill(Tensor& t, const Problem& p, const PassArg& a, uint64_t seed) {
  const ArgSpec& spec = a.spec;
  Rng rng{seed * 0x100000001b3ull + uint64_t(spec.arg) * 0x9e3779b97f4a7c15ull};
  const double amplitude = spec.amplitude ? spec.amplitude(p) : 1.0;
  switch (t.storage()) {
    case Storage::u8:
      for (int64_t i = 0; i < t.elements(); ++i)
        t.as<uint8_t>()[i] = uint8_t(rng.integer(i, 0, 31));
      break;
    case Storage::s8:
      for (int64_t i = 0; i < t.elements(); ++i)
        t.as<int8_t>()[i] = int8_t(rng.integer(i, -31, 31));
      break;
    case Storage::f32: {  // as store() would, without its switch per element
      float* out = t.as<float>();
      for (int64_t i = 0; i < t.elements(); ++i)
        out[i] = float(amplitude * rng.uniform(i));
      if (const Storage grid = value_grid(p.dt, spec.arg); grid != Storage::f32)
        for (int64_t i = 0; i < t.elements(); ++i)
          out[i] = round_to(grid, out[i]);
      break;
    }
    default:
      for (int64_t i = 0; i < t.elements(); ++i)
        t.store(i, amplitude * rng.uniform(i));
  }
  if (a.relu_output)  // what a ReLU leaves: exact zeros where its input was negative
    for (int64_t i = 0; i < t.elements(); ++i)
      if (t.load(i) < 0) t.store(i, 0.0);
}

}  // namespace

void fill_inputs(TensorSet& ts, const Problem& p, uint64_t seed) {
  for (const PassArg& a : pass_args(p))
    if (a.read) fill(ts.at(a.spec.arg), p, a, seed);
}

void fill_input(Tensor& t, const Problem& p, Arg arg, uint64_t seed) {
  for (const PassArg& a : pass_args(p))
    if (a.read && a.spec.arg == arg) return fill(t, p, a, seed);
  throw Error(std::string(name(arg)) + " is not an input of " + print(p));
}

uint64_t digest(const Tensor& t) {
  const auto* bytes = static_cast<const unsigned char*>(t.data());
  const size_t n = t.bytes();
  // Four independent lanes of 8 bytes, so the multiplies overlap (one lane is bound by
  // the multiply's latency), folded together at the end.
  uint64_t lane[4] = {0x9e3779b97f4a7c15ull ^ n, 0xbf58476d1ce4e5b9ull, 0x94d049bb133111ebull,
                      0x100000001b3ull};
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; ++k) {
      uint64_t w;
      std::memcpy(&w, bytes + i + 8 * k, 8);
      lane[k] = (lane[k] ^ w) * 0xbf58476d1ce4e5b9ull;
      lane[k] ^= lane[k] >> 29;
    }
  uint64_t h = lane[0];
  for (int k = 1; k < 4; ++k)
    h = (h ^ lane[k]) * 0x94d049bb133111ebull;
  for (; i < n; ++i)
    h = (h ^ bytes[i]) * 0x100000001b3ull;
  return h;
}

InputDigests input_digests(const TensorSet& ts, const Problem& p) {
  InputDigests d{};
  for (Arg a : input_args(p))
    d[int(a)] = digest(ts.at(a));
  return d;
}

void poison(Tensor& t) {
  switch (t.storage()) {
    case Storage::f32:
      std::fill_n(t.as<uint32_t>(), t.elements(), kPoisonF32);
      return;
    case Storage::f16:
      std::fill_n(t.as<uint16_t>(), t.elements(), kPoisonF16);
      return;
    case Storage::bf16:
      std::fill_n(t.as<uint16_t>(), t.elements(), kPoisonBf16);
      return;
    case Storage::u8:
    case Storage::s8:
    case Storage::e4m3:
      std::memset(t.data(), kPoisonByte, t.bytes());
      return;
  }
}

bool is_poison(const Tensor& t, int64_t i) {
  switch (t.storage()) {
    case Storage::f32:
      return t.as<uint32_t>()[i] == kPoisonF32;
    case Storage::f16:
      return t.as<uint16_t>()[i] == kPoisonF16;
    case Storage::bf16:
      return t.as<uint16_t>()[i] == kPoisonBf16;
    case Storage::u8:
    case Storage::s8:
    case Storage::e4m3:
      return t.as<uint8_t>()[i] == kPoisonByte;
  }
  return false;
}

namespace {

// The scan for one storage: `Bits` the stored word, `poison` its poison value,
// `non_finite(bits)` true for NaN and Inf.
template <class Bits, class NonFinite>
OutputScan scan_words(const Tensor& t, Bits poison_value, NonFinite non_finite) {
  OutputScan s;
  const Bits* w = t.as<Bits>();
  for (int64_t i = 0; i < t.elements(); ++i) {
    if (w[i] == poison_value) {
      if (s.unwritten++ == 0) s.first_unwritten = i;
    } else if (s.first_non_finite < 0 && non_finite(w[i])) {
      s.first_non_finite = i;
    }
  }
  return s;
}

}  // namespace

OutputScan scan_output(const Tensor& t) {
  switch (t.storage()) {
    case Storage::f32:
      return scan_words<uint32_t>(t, kPoisonF32, [](uint32_t b) { return (b & 0x7f800000u) == 0x7f800000u; });
    case Storage::f16:
      return scan_words<uint16_t>(t, kPoisonF16, [](uint16_t b) { return (b & 0x7c00u) == 0x7c00u; });
    case Storage::bf16:
      return scan_words<uint16_t>(t, kPoisonBf16, [](uint16_t b) { return (b & 0x7f80u) == 0x7f80u; });
    case Storage::e4m3:  // e4m3 has no Inf; NaN is S.1111.111
      return scan_words<uint8_t>(t, kPoisonByte, [](uint8_t b) { return (b & 0x7fu) == 0x7fu; });
    case Storage::u8:
    case Storage::s8:
      return scan_words<uint8_t>(t, kPoisonByte, [](uint8_t) { return false; });
  }
  return {};
}

}  // namespace lb
