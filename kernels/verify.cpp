#include "kernels/verify.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "kernels/case_session.h"
#include "kernels/common.h"
#include "kernels/model.h"
#include "kernels/ops/traits.h"
#include "kernels/ref/kernels.h"

namespace lb {

std::string StatusCounts::summary() const {
  std::string out;
  for (Status s : kAllStatuses)
    out += (out.empty() ? "" : ", ") + std::to_string(of[int(s)]) + " " + std::string(name(s));
  return out;
}

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

Allowance allowance(const Problem& p, const Tensor& out, bool rounds_before_bias, Arg arg) {
  // Per unit of magnitude, as relative rounding units:
  //  - inputs rounded once more inside the kernel (tf32 reads f32 with 10 mantissa bits;
  //    x and w both, hence twice); inputs stored in a narrow format are exact values for
  //    the reference too, so their storage adds nothing;
  //  - accumulation: f32 sums (Hopper's fp8 tensor cores keep about 13 bits), each step's
  //    error at most u times a partial sum, itself at most the magnitude, adding up like a
  //    random walk, sqrt(K); integer sums are exact, and their f32 scaling costs a unit or
  //    two.
  // The factor 10 covers the tail over many elements and orders of summation.
  const double u_in = p.dt == DType::tf32 ? 0x1p-11 : 0.0;
  const double u_acc = p.dt == DType::f8 ? 0x1p-13 : 0x1p-24;
  //  - an LSTM's backward in f16 or bf16 multiplies the gradients it computes (the gates',
  //    through the steps) as operands of that dtype in its GEMMs (oneDNN's does): each
  //    rounded once more, a unit of the dtype per unit of the reference's bound, which
  //    carries each value's own rounding through the steps as it carries the arithmetic's.
  //    Each term's own rounding, summed without the random walk's √: a bound already, so
  //    not multiplied by the tail's factor below.
  const bool narrow_lstm_gradient =
      p.op() == Op::lstm && is_diff(arg) && (p.dt == DType::bf16 || p.dt == DType::f16);
  const double u_operand = narrow_lstm_gradient ? unit_roundoff(storage_of(p.dt, Arg::src)) : 0.0;
  // The LSTM's length counts its steps and layers, which carry errors on; its reference
  // carries them itself (kernels/ref/lstm.cpp), so here it is one gate's dot product.
  const int64_t length = accumulation_length(p, arg);
  const bool lstm_output = p.op() == Op::lstm && (arg == Arg::dst || arg == Arg::relu_dst);
  const double k = lstm_output ? double(length / (p.lstm().t * p.lstm().l)) : double(length);
  Allowance a;
  a.per_magnitude = 10.0 * (2.0 * u_in + u_acc * std::sqrt(k)) + u_operand;
  // A sum rounded to the output's storage before the bias is added: |fl(s) - s| <= u·|s|,
  // s = y - b (compare_values() gets |s| per element).
  if (rounds_before_bias) a.per_sum = unit_roundoff(out.storage());
  // The rounding to the output's storage: a kernel rounds its slightly wrong value to the
  // storage's grid (twice the unit: it may round through an intermediate format, f32
  // then bf16), absolutely below the normal range; integer storages round to half their
  // scale's step.
  a.per_stored = 2.0 * unit_roundoff(out.storage());
  a.absolute = out.storage() == Storage::u8 || out.storage() == Storage::s8
                   ? out.scale() / 2
                   : subnormal_half_spacing(out.storage());
  // softmax: an exponential below f32's normal range (e^-87) may be that bound's or 0 (ours
  // clamps there, as the LSTM's cell does; libraries flush), an error under 2^-125 of an
  // output whose largest value is at least 1/C.
  // And its exponentials may be stored in the output's format before they are scaled (oneDNN's
  // bf16 softmax writes them to dst and scales them there): rounded twice, a unit more.
  if (p.op() == Op::softmax) {
    a.absolute = std::max(a.absolute, std::ldexp(1.0, -125));
    a.per_stored += unit_roundoff(out.storage());
  }
  return a;
}

double Allowance::of(double magnitude, double stored, double sum) const {
  return per_magnitude * magnitude + per_stored * stored + per_sum * sum + absolute;
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

namespace {

// What the output holds of the reference's pre-ReLU values: them, max(value, 0), or
// min(max(value, 0), 6) — exactly what the reference writes: rounding is monotonic and
// keeps 0 and 6.
enum class Clip { none, relu, relu6 };

// compare() once the output is known written and finite, the reference's values clipped.
// `bias`: where the allowance has a per_sum, the bias each element adds (y - b is the sum).
Verdict compare_values(std::string_view what, const Tensor& got, const Expected& expect, Clip clip,
                       const Allowance& allowed, const std::function<double(int64_t)>& bias = {}) {
  Verdict v;
  const int64_t n = int64_t(expect.value.size());
  auto expected = [&expect, clip](int64_t i) {
    const double y = expect.value[i];
    return clip == Clip::none ? y : clip == Clip::relu ? std::max(y, 0.0) : std::min(std::max(y, 0.0), 6.0);
  };
  // One pass through blocks of values converted once (outputs reach gigabytes).
  constexpr int64_t kBlock = 4096;
  std::vector<double> g(kBlock);
  int64_t zeros = 0, worst = -1;
  double worst_ratio = 0.0;
  for (int64_t first = 0; first < n; first += kBlock) {
    const int64_t count = std::min(kBlock, n - first);
    got.load_range(first, count, g.data());
    for (int64_t i = 0; i < count; ++i) {
      const double ref = expected(first + i);
      zeros += ref == 0.0;
      const double sum = bias ? std::fabs(expect.value[first + i] - bias(first + i)) : 0.0;
      const double err = std::fabs(g[i] - ref),
                   limit = allowed.of(expect.magnitude[first + i], expect.stored[first + i], sum);
      const double ratio = err / limit;
      if (worst < 0 || ratio > worst_ratio) {
        worst_ratio = ratio;
        worst = first + i;
        v.max_error = err;
        v.tolerance = limit;
      }
    }
  }
  std::ostringstream os;
  os.precision(9);  // enough to see the difference between two close f32 values
  if (worst >= 0 && v.max_error > v.tolerance) {
    v.status = Status::failed;
    os << what << "[" << worst << "] = " << got.load(worst) << ", expected " << expected(worst)
       << " (magnitude " << expect.magnitude[worst] << "): error " << v.max_error << " > allowed "
       << v.tolerance;
  } else if (n > 0 && double(zeros) / double(n) > kMistrustZeroFraction) {
    v.status = Status::mistrusted;
    os << what << ": " << zeros << " of " << n << " reference values are zero; error " << v.max_error
       << " <= allowed " << v.tolerance << " proves little";
  } else {
    os.precision(3);
    os << what << ": error at most " << worst_ratio << " of allowed";
    if (worst >= 0)
      os << " (" << what << "[" << worst << "]: " << v.max_error << " <= " << v.tolerance << ")";
  }
  v.reason = os.str();
  return v;
}

}  // namespace

Verdict compare(const Problem& p, std::string_view what, const Tensor& got, const Expected& expect) {
  Verdict v;
  const int64_t n = int64_t(expect.value.size());
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
  return compare_values(what, got, expect, Clip::none, allowance(p, got));
}

namespace {

// The axis of an argument of p that indexes the batch, or -1 for weights and biases.
int batch_axis(const Problem& p, Arg a) {
  for (const PassArg& spec : pass_args(p))
    if (spec.spec.arg == a) return spec.spec.batch_axis;
  throw Error(std::string(name(a)) + " is not an argument of " + print(p));
}

// Calls copy(first, count) for the runs of elements of a tensor of `dims` that hold the
// chosen indices of `axis`, in order (all of it for axis < 0).
template <class Copy>
void for_each_chosen(const std::vector<int64_t>& dims, int axis, const std::vector<int64_t>& chosen,
                     Copy copy) {
  int64_t all = 1;
  for (int64_t d : dims)
    all *= d;
  if (axis < 0) return copy(0, all);
  const int64_t n = dims[axis];
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i)
    outer *= dims[i];
  for (size_t i = axis + 1; i < dims.size(); ++i)
    inner *= dims[i];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t s : chosen)
      copy((o * n + s) * inner, inner);
}

// The chosen indices of `axis` of t (all of t for axis < 0), as a tensor of the same storage.
Tensor take_samples(const Tensor& t, int axis, const std::vector<int64_t>& samples) {
  if (axis < 0) return t.clone();
  std::vector<int64_t> dims = t.dims();
  dims[axis] = int64_t(samples.size());
  Tensor out(t.storage(), dims, t.scale());
  const size_t unit = size_of(t.storage());
  auto* dst = static_cast<char*>(out.data());
  const auto* src = static_cast<const char*>(t.data());
  for_each_chosen(t.dims(), axis, samples, [&](int64_t first, int64_t count) {
    std::memcpy(dst, src + first * unit, size_t(count) * unit);
    dst += count * unit;
  });
  return out;
}

// The same of what the reference expects of a tensor of `dims`.
Expected take_samples(const Expected& e, const std::vector<int64_t>& dims, int axis,
                      const std::vector<int64_t>& samples) {
  Expected out;
  for_each_chosen(dims, axis, samples, [&](int64_t first, int64_t count) {
    out.value.insert(out.value.end(), e.value.begin() + first, e.value.begin() + first + count);
    out.magnitude.insert(out.magnitude.end(), e.magnitude.begin() + first,
                         e.magnitude.begin() + first + count);
    out.stored.insert(out.stored.end(), e.stored.begin() + first, e.stored.begin() + first + count);
  });
  return out;
}

// The reference's outputs for `p` on the given batch samples of got's inputs. A sweep
// checks the same problem, dtype and inputs under many kernels, thread counts and ReLU
// modes, so the reference's exact pre-ReLU output and its bounds are kept for the last
// few of them (the reference returned stays valid until the next call), and the mode is
// applied as they are compared: max(y, 0) of the kept y is exactly what the reference
// computes, and ReLU, being 1-Lipschitz, allows the error y's bounds allow.
const Expected& reference_outputs(const Problem& p, const TensorSet& got, const InputDigests& digests,
                                  const std::vector<int64_t>& samples) {
  struct Entry {
    std::string key;
    Expected pre_relu;
  };
  static std::vector<Entry> cache;  // most recent last
  constexpr size_t kEntries = 4;

  Problem base = p;
  base.relu = Relu::none;
  base.pass = Pass::fwd;
  std::string key = print(base);
  for (int64_t s : samples) {
    key += ' ';
    key += std::to_string(s);
  }
  for (Arg a : input_args(base)) {
    key += ' ';
    key += std::to_string(digests[int(a)]);
  }
  auto it = std::find_if(cache.begin(), cache.end(), [&key](const Entry& e) { return e.key == key; });
  if (it == cache.end()) {
    const Problem sub = with_batch(base, int64_t(samples.size()));
    TensorSet ts;
    for (Arg a : input_args(base))
      ts.set(a, take_samples(got.at(a), batch_axis(base, a), samples));
    CaseSession ref(oracle(p.op()), sub);
    ref.adopt_inputs(std::move(ts));
    ref.prepare();
    ref.run();
    ref.finish();
    const auto* o = dynamic_cast<const ref::Oracle*>(&ref.kernel());
    if (!o) throw Error(oracle(p.op()).info.id + " gives no magnitudes (not a ref::Oracle)");
    Expected pre{o->exact(), o->magnitude(), o->stored()};
    ref.release();
    if (cache.size() == kEntries) cache.erase(cache.begin());
    cache.push_back({key, std::move(pre)});
    it = cache.end() - 1;
  }
  return it->pre_relu;
}

// The reference's backward pass `pb` (bwd_d or bwd_w; the LSTM's bwd) on `inputs`, computing the outputs
// that sum over the batch only at `rows` (all if empty): what it expects of each output.
std::array<Expected, kNumArgs> reference_backward(const Problem& pb, TensorSet inputs,
                                                  std::vector<int64_t> rows) {
  CaseSession ref(oracle(pb.op()), pb);
  ref.adopt_inputs(std::move(inputs));
  ref::Oracle* o = nullptr;
  ref.prepare([&](Kernel& k) {
    o = dynamic_cast<ref::Oracle*>(&k);
    if (!o) throw Error(oracle(pb.op()).info.id + " gives no magnitudes (not a ref::Oracle)");
    o->only_rows(std::move(rows));
  });
  ref.run();
  ref.finish();
  std::array<Expected, kNumArgs> out;
  for (Arg a : output_args(pb))
    out[int(a)] = o->expected(a);
  ref.release();
  return out;
}

auto rank(Status s) {
  return s == Status::failed ? 2 : s == Status::mistrusted ? 1 : 0;
}

// Keeps the worse of two verdicts: failed beats mistrusted beats passed; among equals the
// larger error/allowed.
void keep_worse(Verdict& v, Verdict one, bool& first) {
  if (first || rank(one.status) > rank(v.status) ||
      (rank(one.status) == rank(v.status) && one.max_error * v.tolerance > v.max_error * one.tolerance))
    v = std::move(one);
  first = false;
}

// Spread picks of k out of 0..n-1: first, last and evenly between.
std::vector<int64_t> spread(int64_t k, int64_t n) {
  std::vector<int64_t> picks;
  for (int64_t i = 0; i < k; ++i)
    picks.push_back(k == 1 ? 0 : i * (n - 1) / (k - 1));
  return picks;
}

// Of n items that share a reference's `macs` evenly (batch samples; output channels of a
// weight gradient), as many as the budget pays for (all when it is 0 or they fit), at least
// one, spread over 0..n-1.
std::vector<int64_t> spread_within_budget(int64_t n, double macs, int64_t max_reference_macs) {
  int64_t k = n;
  if (max_reference_macs > 0 && macs > double(max_reference_macs))
    k = std::clamp(int64_t(double(max_reference_macs) / (macs / double(n))), int64_t(1), n);
  return spread(k, n);
}

}  // namespace

namespace {

// The reference's work, what the budget bounds: its MACs (at least one per element of its
// tensors), or for an op without any (a pool) 16 per element, which it reads, writes and
// keeps in double three times over (value, magnitude, stored; copied once more into the
// cache): a max pool of 134 M outputs, a graph's at batch 4096, was checked whole: 24 GB.
double reference_cost(const Problem& p) {
  double elements = 0;
  for (const PassArg& a : pass_args(p)) {
    double n = 1;
    for (int64_t d : a.spec.dims(p))
      n *= double(d);
    elements += n;
  }
  const double macs = double(traits(p.op()).macs(p));
  return macs > 0 ? std::max(macs, elements) : 16 * elements;
}

}  // namespace

std::vector<int64_t> verification_samples(const Problem& p, int64_t max_reference_macs) {
  return spread_within_budget(p.batch(), reference_cost(p), max_reference_macs);
}

std::vector<int64_t> verification_rows(const Problem& p, int64_t rows, int64_t max_reference_macs) {
  return spread_within_budget(rows, reference_cost(p), max_reference_macs);
}

Verdict verify_outputs(const Problem& p, const TensorSet& got, const InputDigests& before,
                       int64_t max_reference_macs, bool rounds_before_bias, const TensorSet* originals) {
  Verdict v;
  const std::vector<Arg> outputs = output_args(p);
  auto written = [&outputs](Arg a) { return std::find(outputs.begin(), outputs.end(), a) != outputs.end(); };
  // The inputs must come back untouched: a kernel that scribbles on them is wrong even
  // when its output happens to match. Being untouched, they are the reference's inputs.
  // (One written in place is checked as an output, against its original: `originals`.)
  for (Arg a : input_args(p))
    if (!written(a) && digest(got.at(a)) != before[int(a)]) {
      v.status = Status::failed;
      v.reason = std::string(name(a)) + ": the kernel modified an input";
      return v;
    }
  for (Arg a : outputs)
    if (std::string why = scan_outputs(name(a), got.at(a)); !why.empty()) {
      v.status = Status::failed;
      v.reason = why;
      return v;
    }

  bool first = true;
  std::vector<std::string> notes;  // what was compared on a sample
  // The forward's outputs, on a sample of the batch.
  if (runs_forward(p.pass)) {
    const std::vector<int64_t> samples = verification_samples(p, max_reference_macs);
    const bool whole_batch = int64_t(samples.size()) == p.batch();
    const Expected& pre_relu = reference_outputs(p, got, before, samples);
    for (Arg a : {Arg::dst, Arg::relu_dst}) {
      if (!written(a)) continue;
      // The whole batch is compared in place: a copy would clear and write as many pages.
      std::optional<Tensor> sampled;
      if (!whole_batch) sampled = take_samples(got.at(a), batch_axis(p, a), samples);
      const Clip clip = p.relu == Relu::relu6                                                    ? Clip::relu6
                        : a == Arg::relu_dst || p.relu == Relu::fused || p.relu == Relu::inplace ? Clip::relu
                                                                                                 : Clip::none;
      const Tensor& out = sampled ? *sampled : got.at(a);
      const Allowance allowed = allowance(p, out, rounds_before_bias, a);
      std::function<double(int64_t)> bias;
      if (allowed.per_sum > 0) {
        const auto index = traits(p.op()).bias_index;
        if (!index) throw Error(std::string(name(p.op())) + " adds no bias: a kernel cannot round before it");
        const Tensor& b = got.at(Arg::bias);
        bias = [&b, &p, index](int64_t i) { return b.load(index(p, i)); };
      }
      keep_worse(v, compare_values(name(a), out, pre_relu, clip, allowed, bias), first);
    }
    if (!whole_batch)
      notes.push_back(std::to_string(samples.size()) + " of " + std::to_string(p.batch()) + " batch samples");
  }
  // The backward's, through the reference's backward on the same inputs; in train, the
  // ReLU's mask is the one the kernel's own dst gives (a value the forward's rounding
  // put on the other side of zero is not the backward's error).
  if (runs_backward(p.pass)) {
    const bool data = written(Arg::diff_src), weights = written(Arg::diff_wei);
    auto input = [&](Arg a) -> const Tensor& {
      if (!written(a) || a == Arg::dst || a == Arg::relu_dst) return got.at(a);
      if (!originals || !originals->has(a))
        throw Error(std::string(name(a)) + " is written in place and its original was not kept");
      return originals->at(a);
    };
    // Compares the outputs of `part` against `expect`: those with a batch axis on the
    // batch samples `samples`, those summed over the batch on the output channels `rows`
    // (empty: all of each). dz, under a separate or in-place ReLU, from the first part.
    bool dz_done = !written(Arg::diff_dst);
    auto compare_part = [&](const Problem& part, const std::array<Expected, kNumArgs>& expect,
                            const std::vector<int64_t>& samples, const std::vector<int64_t>& rows) {
      for (Arg a : output_args(part)) {
        if (a == Arg::diff_dst && std::exchange(dz_done, true)) continue;
        const int axis = batch_axis(p, a);
        const std::vector<int64_t>& chosen = axis >= 0 ? samples : rows;
        const Tensor& all = got.at(a);
        std::optional<Tensor> some;
        if (!chosen.empty()) some = take_samples(all, axis >= 0 ? axis : 0, chosen);
        // The reference ran on the batch samples already; it computed dW and db in their
        // full shape, on the chosen rows only.
        const Expected& e = expect[int(a)];
        std::optional<Expected> rows_of_e;
        if (some && axis < 0) rows_of_e = take_samples(e, all.dims(), 0, chosen);
        const Tensor& out = some ? *some : all;
        keep_worse(
            v,
            compare_values(name(a), out, rows_of_e ? *rows_of_e : e, Clip::none, allowance(p, out, false, a)),
            first);
      }
    };
    const std::vector<Pass>& passes = traits(p.op()).passes;
    const bool data_and_weights_apart = std::find(passes.begin(), passes.end(), Pass::bwd_d) != passes.end();
    if (!data_and_weights_apart) {
      // The LSTM: every gradient comes out of one pass back through time, which the
      // reference runs on the whole batch.
      const Problem pb = with_pass(p, Pass::bwd);
      TensorSet ts;
      for (Arg a : input_args(pb))
        ts.set(a, input(a).clone());
      compare_part(pb, reference_backward(pb, std::move(ts), {}), {}, {});
    } else if (data) {  // diff_src on a sample of the batch
      const Problem pd = with_pass(p, Pass::bwd_d);
      const std::vector<int64_t> samples = verification_samples(pd, max_reference_macs);
      const bool all = int64_t(samples.size()) == p.batch();
      TensorSet ts;
      for (Arg a : input_args(pd))
        ts.set(a, take_samples(input(a), batch_axis(pd, a), samples));
      const Problem sub = with_batch(pd, int64_t(samples.size()));
      compare_part(pd, reference_backward(sub, std::move(ts), {}), all ? std::vector<int64_t>{} : samples,
                   {});
      if (!all)
        notes.push_back("diff_src on " + std::to_string(samples.size()) + " of " + std::to_string(p.batch()) +
                        " batch samples");
    }
    if (weights &&
        data_and_weights_apart) {  // diff_wei and diff_bias over the whole batch, on some output channels
      const Problem pw = with_pass(p, Pass::bwd_w);
      const int64_t channels = got.at(Arg::diff_wei).dims()[0];
      const std::vector<int64_t> rows = verification_rows(pw, channels, max_reference_macs);
      const bool all = int64_t(rows.size()) == channels;
      TensorSet ts;
      for (Arg a : input_args(pw))
        ts.set(a, input(a).clone());
      const std::vector<int64_t> chosen = all ? std::vector<int64_t>{} : rows;
      compare_part(pw, reference_backward(pw, std::move(ts), chosen), {}, chosen);
      if (!all)
        notes.push_back("diff_wei, diff_bias on " + std::to_string(rows.size()) + " of " +
                        std::to_string(channels) + " output channels");
    }
  }
  if (!notes.empty()) {
    v.reason += " (";
    for (size_t i = 0; i < notes.size(); ++i)
      v.reason += (i ? "; " : "") + notes[i];
    v.reason += ")";
  }
  return v;
}

}  // namespace lb
