#include "kernels/verify.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>
#include <vector>

#include "kernels/case_session.h"
#include "kernels/common.h"
#include "kernels/model.h"
#include "kernels/ops/traits.h"

namespace lb {

std::string_view name(Status s) {
  switch (s) {
    case Status::passed:
      return "passed";
    case Status::failed:
      return "failed";
    case Status::mistrusted:
      return "mistrusted";
    case Status::unsupported:
      return "unsupported";
    case Status::out_of_memory:
      return "out_of_memory";
    case Status::not_run:
      return "not_run";
  }
  return "?";
}

int64_t accumulation_length(const Problem& p) {
  return traits(p.op()).accumulation_length(p);
}

double tolerance(const Problem& p) {
  // Three sources of error, each as a relative rounding unit:
  //  - inputs rounded once more inside the kernel (tf32 reads f32 with 10 mantissa bits;
  //    x and w both, hence twice);
  //  - accumulation: f32 sums (Hopper's fp8 tensor cores keep about 13 bits), growing
  //    like a random walk, sqrt(K); integer sums are exact but their f32 scaling is not;
  //  - the output's own rounding to its storage.
  // Inputs stored in a narrow format are exact values for the reference too, so their
  // storage adds nothing. The factor 10 covers the tail over many elements.
  const double u_in = p.dt == DType::tf32 ? 0x1p-11 : 0.0;
  const double u_acc = p.dt == DType::f8 ? 0x1p-13 : 0x1p-24;
  const double u_out = unit_roundoff(storage_of(p.dt, Arg::dst));
  const double k = double(accumulation_length(p));
  return 10.0 * (2.0 * u_in + u_acc * std::sqrt(k) + u_out);
}

std::string repro_line(const KernelEntry& k, const Problem& p, uint64_t seed) {
  return "layerbench check --kernel " + k.info.id + " --problem \"" + print(p) + "\" --seed " +
         std::to_string(seed);
}

const KernelEntry& oracle(Op op) {
  for (const auto& k : reference_registry().kernels())
    if (k.op_name() == name(op)) return k;
  throw Error("no reference kernel for " + std::string(name(op)));
}

namespace {

// Every element written (no poison left) and finite; "" if so.
std::string scan_outputs(std::string_view what, const Tensor& got) {
  const OutputScan s = scan_output(got);
  if (s.first_non_finite >= 0 && (s.first_unwritten < 0 || s.first_non_finite < s.first_unwritten)) {
    std::ostringstream os;
    os << what << "[" << s.first_non_finite << "] = " << got.load(s.first_non_finite);
    return os.str();
  }
  if (s.unwritten)
    return std::string(what) + ": " + std::to_string(s.unwritten) + " of " + std::to_string(got.elements()) +
           " elements never written (first at index " + std::to_string(s.first_unwritten) + ")";
  return {};
}

}  // namespace

Verdict compare(const Problem& p, std::string_view what, const Tensor& got, const Tensor& expect) {
  Verdict v;
  v.tolerance = tolerance(p);
  const int64_t n = expect.elements();
  if (got.elements() != n) {
    v.status = Status::failed;
    v.reason = std::string(what) + ": " + std::to_string(got.elements()) + " elements, expected " +
               std::to_string(n);
    return v;
  }
  if (std::string why = scan_outputs(what, got); !why.empty()) {
    v.status = Status::failed;
    v.reason = why;
    return v;
  }
  // Both passes go through blocks of values converted once (outputs reach gigabytes).
  constexpr int64_t kBlock = 4096;
  std::vector<double> g(kBlock), e(kBlock);
  int64_t zeros = 0;
  double sum_sq = 0.0;
  for (int64_t first = 0; first < n; first += kBlock) {
    const int64_t count = std::min(kBlock, n - first);
    expect.load_range(first, count, e.data());
    for (int64_t i = 0; i < count; ++i) {
      sum_sq += e[i] * e[i];
      zeros += e[i] == 0.0;
    }
  }
  const double rms = n ? std::sqrt(sum_sq / double(n)) : 0.0;
  const double floor = rms > 0.0 ? rms : 1.0;
  int64_t worst = 0;
  for (int64_t first = 0; first < n; first += kBlock) {
    const int64_t count = std::min(kBlock, n - first);
    got.load_range(first, count, g.data());
    expect.load_range(first, count, e.data());
    for (int64_t i = 0; i < count; ++i) {
      const double err = std::fabs(g[i] - e[i]) / (std::fabs(e[i]) + floor);
      if (err > v.max_error) {
        v.max_error = err;
        worst = first + i;
      }
    }
  }
  std::ostringstream os;
  os.precision(3);
  if (v.max_error > v.tolerance) {
    v.status = Status::failed;
    os << what << "[" << worst << "] = " << got.load(worst) << ", expected " << expect.load(worst)
       << ": error " << v.max_error << " > tolerance " << v.tolerance;
  } else if (n > 0 && double(zeros) / double(n) > kMistrustZeroFraction) {
    v.status = Status::mistrusted;
    os << what << ": " << zeros << " of " << n << " reference values are zero; error " << v.max_error
       << " proves little";
  } else {
    os << what << ": max error " << v.max_error << " <= tolerance " << v.tolerance;
  }
  v.reason = os.str();
  return v;
}

namespace {

// The axis of an argument that indexes the batch, or -1 for weights and biases.
int batch_axis(Op op, Arg a) {
  const OpTraits& t = traits(op);
  if (a == Arg::dst || a == Arg::relu_dst) return t.output.batch_axis;
  for (const ArgSpec& spec : t.inputs)
    if (spec.arg == a) return spec.batch_axis;
  return -1;
}

// The chosen batch samples of t (all of t for weights), as a tensor of the same storage.
Tensor take_samples(const Tensor& t, int axis, const std::vector<int64_t>& samples) {
  if (axis < 0) return t.clone();
  std::vector<int64_t> dims = t.dims();
  const int64_t n = dims[axis];
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i)
    outer *= dims[i];
  for (size_t i = axis + 1; i < dims.size(); ++i)
    inner *= dims[i];
  dims[axis] = int64_t(samples.size());
  Tensor out(t.storage(), dims, t.scale());
  const size_t row = size_t(inner) * size_of(t.storage());
  auto* dst = static_cast<char*>(out.data());
  const auto* src = static_cast<const char*>(t.data());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t s : samples) {
      std::memcpy(dst, src + (o * n + s) * row, row);
      dst += row;
    }
  return out;
}

// The reference's outputs for `p` on the given batch samples of got's inputs. A sweep
// checks the same problem, dtype and inputs under many kernels, thread counts and ReLU
// modes, so the reference's pre-ReLU output is kept for the last few of them and the
// mode applied to it: max(y, 0) of the stored y is exactly what the reference writes
// (rounding is monotonic and keeps 0), so the result is the same as computing afresh.
TensorSet reference_outputs(const Problem& p, const TensorSet& got, const InputDigests& digests,
                            const std::vector<int64_t>& samples) {
  struct Entry {
    std::string key;
    Tensor pre_relu;
  };
  static std::vector<Entry> cache;  // most recent last
  constexpr size_t kEntries = 4;

  Problem base = p;
  base.relu = Relu::none;
  std::string key = print(base);
  for (int64_t s : samples) {
    key += ' ';
    key += std::to_string(s);
  }
  for (uint64_t d : digests) {
    key += ' ';
    key += std::to_string(d);
  }
  auto it = std::find_if(cache.begin(), cache.end(), [&key](const Entry& e) { return e.key == key; });
  if (it == cache.end()) {
    const Problem sub = with_batch(base, int64_t(samples.size()));
    TensorSet ts;
    for (Arg a : input_args(p.op()))
      ts.set(a, take_samples(got.at(a), batch_axis(p.op(), a), samples));
    CaseSession ref(oracle(p.op()), sub);
    ref.adopt_inputs(std::move(ts));
    ref.prepare();
    ref.run();
    ref.finish();
    ref.release();
    if (cache.size() == kEntries) cache.erase(cache.begin());
    cache.push_back({key, std::move(ref.tensors().at(Arg::dst))});
    it = cache.end() - 1;
  }
  const Tensor& pre = it->pre_relu;
  auto clipped = [&pre] {
    Tensor t(pre.storage(), pre.dims(), pre.scale());
    for (int64_t i = 0; i < pre.elements(); ++i)
      t.store(i, std::max(pre.load(i), 0.0));
    return t;
  };
  TensorSet out;
  out.set(Arg::dst, p.relu == Relu::fused || p.relu == Relu::inplace ? clipped() : pre.clone());
  if (p.relu == Relu::separate) out.set(Arg::relu_dst, clipped());
  return out;
}

auto rank(Status s) {
  return s == Status::failed ? 2 : s == Status::mistrusted ? 1 : 0;
}

}  // namespace

std::vector<int64_t> verification_samples(const Problem& p, int64_t max_reference_macs) {
  const int64_t n = p.batch();
  const double per_sample = double(model(p).macs) / double(n);
  int64_t k = n;
  if (max_reference_macs > 0 && per_sample * double(n) > double(max_reference_macs))
    k = std::clamp(int64_t(double(max_reference_macs) / per_sample), int64_t(1), n);
  std::vector<int64_t> samples;
  for (int64_t i = 0; i < k; ++i)
    samples.push_back(k == 1 ? 0 : i * (n - 1) / (k - 1));
  return samples;
}

Verdict verify_outputs(const Problem& p, const TensorSet& got, const InputDigests& before,
                       int64_t max_reference_macs) {
  Verdict v;
  v.tolerance = tolerance(p);
  // The inputs must come back untouched: a kernel that scribbles on them is wrong even
  // when its output happens to match. Being untouched, they are the reference's inputs.
  for (Arg a : input_args(p.op()))
    if (digest(got.at(a)) != before[int(a)]) {
      v.status = Status::failed;
      v.reason = std::string(name(a)) + ": the kernel modified an input";
      return v;
    }
  for (Arg a : output_args(p))
    if (std::string why = scan_outputs(name(a), got.at(a)); !why.empty()) {
      v.status = Status::failed;
      v.reason = why;
      return v;
    }

  // The reference on the sampled part of the batch.
  const std::vector<int64_t> samples = verification_samples(p, max_reference_macs);
  const TensorSet expect = reference_outputs(p, got, before, samples);

  bool first = true;
  for (Arg a : output_args(p)) {
    const Tensor mine = take_samples(got.at(a), batch_axis(p.op(), a), samples);
    Verdict one = compare(p, name(a), mine, expect.at(a));
    // Failed beats mistrusted beats passed; among equals keep the larger error.
    if (first || rank(one.status) > rank(v.status) ||
        (rank(one.status) == rank(v.status) && one.max_error > v.max_error))
      v = one;
    first = false;
  }
  if (int64_t(samples.size()) < p.batch())
    v.reason +=
        " (" + std::to_string(samples.size()) + " of " + std::to_string(p.batch()) + " batch samples)";
  return v;
}

}  // namespace lb
