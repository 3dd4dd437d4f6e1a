#include "kernels/verify.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "kernels/common.h"

namespace lb {

std::string_view name(Status s) {
  switch (s) {
    case Status::passed:
      return "passed";
    case Status::failed:
      return "failed";
    case Status::skipped:
      return "skipped";
    case Status::mistrusted:
      return "mistrusted";
  }
  return "?";
}

int64_t accumulation_length(const Problem& p) {
  switch (p.op()) {
    case Op::dense:
      return p.dense().ic;
    case Op::conv2d: {
      const Conv2d& c = p.conv();
      return c.ic / c.g * c.kh * c.kw;
    }
    case Op::lstm: {
      const Lstm& s = p.lstm();
      return (std::max(s.ic, s.hc) + s.hc) * s.t * s.l;
    }
  }
  return 1;
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
  for (const auto& k : registry().kernels())
    if (k.backend() == "ref" && k.op_name() == name(op)) return k;
  throw Error("no reference kernel for " + std::string(name(op)));
}

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
  int64_t unwritten = 0, first_unwritten = -1, zeros = 0;
  double sum_sq = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double e = expect.load(i);
    sum_sq += e * e;
    zeros += e == 0.0;
    if (is_poison(got, i) && unwritten++ == 0) first_unwritten = i;
  }
  if (unwritten) {
    v.status = Status::failed;
    v.reason = std::string(what) + ": " + std::to_string(unwritten) + " of " + std::to_string(n) +
               " elements never written (first at index " + std::to_string(first_unwritten) + ")";
    return v;
  }
  const double rms = n ? std::sqrt(sum_sq / double(n)) : 0.0;
  const double floor = rms > 0.0 ? rms : 1.0;
  int64_t worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double g = got.load(i), e = expect.load(i);
    if (!std::isfinite(g)) {
      v.status = Status::failed;
      std::ostringstream os;
      os << what << "[" << i << "] = " << g << " (expected " << e << ")";
      v.reason = os.str();
      return v;
    }
    const double err = std::fabs(g - e) / (std::fabs(e) + floor);
    if (err > v.max_error) {
      v.max_error = err;
      worst = i;
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

// Runs one kernel as the harness would: prepare, poison outputs, run, finish, release.
void run_once(const KernelEntry& k, const Problem& p, TensorSet& ts, const Context& ctx) {
  auto kernel = k.make();
  kernel->prepare(p, ts, ctx);
  for (Arg a : output_args(p))
    poison(ts.at(a));
  kernel->run(ts);
  kernel->finish(ts);
  kernel->release();
}

}  // namespace

Verdict check_kernel(const KernelEntry& k, const Problem& p, uint64_t seed, const Context& ctx) {
  Verdict v;
  if (std::string why = k.supports(p); !why.empty()) {
    v.status = Status::skipped;
    v.reason = why;
    return v;
  }
  v.repro = repro_line(k, p, seed);
  const KernelEntry& ref = oracle(p.op());
  if (std::string why = ref.supports(p); !why.empty()) {
    v.status = Status::skipped;
    v.reason = "no reference to check against: " + why;
    return v;
  }
  try {
    TensorSet got = make_tensors(p);
    fill_inputs(got, p, seed);
    TensorSet expect = make_tensors(p);
    for (Arg a : input_args(p.op()))
      expect.set(a, got.at(a).clone());
    run_once(k, p, got, ctx);
    run_once(ref, p, expect, Context{});
    // The inputs must come back untouched: a kernel that scribbles on them is wrong even
    // when its output happens to match.
    TensorSet pristine = make_tensors(p);
    fill_inputs(pristine, p, seed);
    for (Arg a : input_args(p.op())) {
      const Tensor& t = got.at(a);
      if (std::memcmp(t.data(), pristine.at(a).data(), t.bytes()) != 0) {
        v.status = Status::failed;
        v.reason = std::string(name(a)) + ": the kernel modified an input";
        return v;
      }
    }
    Verdict worst;
    bool first = true;
    for (Arg a : output_args(p)) {
      Verdict one = compare(p, name(a), got.at(a), expect.at(a));
      // Failed beats mistrusted beats passed; among equals keep the larger error.
      auto rank = [](Status s) { return s == Status::failed ? 2 : s == Status::mistrusted ? 1 : 0; };
      if (first || rank(one.status) > rank(worst.status) ||
          (rank(one.status) == rank(worst.status) && one.max_error > worst.max_error))
        worst = one;
      first = false;
    }
    worst.repro = v.repro;
    return worst;
  } catch (const std::exception& e) {
    v.status = Status::failed;
    v.reason = std::string("threw: ") + e.what();
    return v;
  }
}

}  // namespace lb
