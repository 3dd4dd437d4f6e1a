#include "kernels/ops/traits.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace lb {

const OpTraits& traits(Op op) {
  switch (op) {
    case Op::dense:
      return dense_traits();
    case Op::conv2d:
      return conv2d_traits();
    case Op::lstm:
      return lstm_traits();
    case Op::pool2d:
      return pool2d_traits();
    case Op::add:
      return add_traits();
    case Op::softmax:
      return softmax_traits();
  }
  throw Error("op " + std::to_string(int(op)) + ": not an op");
}

Dims activation_dims(const Activations& a) {
  return {a.mb, a.ic, a.ih, a.iw};
}

DerivedKeys activation_keys(const Dims& in, int64_t batch) {
  if (in.size() == 3) return {{"mb", batch}, {"ic", in[0]}, {"ih", in[1]}, {"iw", in[2]}};
  return {{"mb", in.size() == 2 ? in[0] * batch : batch}, {"ic", in.back()}};
}

namespace {

ArgSpec as_arg(ArgSpec spec, Arg a) {
  spec.arg = a;
  return spec;
}

// A gradient: its primal's dims and batch axis, no fill amplitude (diffs are uniform).
ArgSpec diff_spec(const ArgSpec& primal) {
  return {diff_of(primal.arg), primal.batch_axis, primal.dims, nullptr};
}

bool contains(const std::vector<Arg>& v, Arg a) {
  return std::find(v.begin(), v.end(), a) != v.end();
}

}  // namespace

std::vector<PassArg> pass_args(const Problem& p) {
  const OpTraits& t = traits(p.op());
  const Pass pass = p.pass;
  std::vector<PassArg> args;
  auto read = [&args](const ArgSpec& s, bool relu_output = false) {
    args.push_back({.spec = s, .relu_output = relu_output});
  };
  auto write = [&args](const ArgSpec& s, bool reduces_batch = false) {
    args.push_back({.spec = s, .read = false, .written = true, .reduces_batch = reduces_batch});
  };
  const bool forward = runs_forward(pass), data_grads = computes_data_grads(pass),
             weight_grads = computes_weight_grads(pass);

  // Inputs, in the forward's fill order.
  for (const ArgSpec& in : t.inputs) {
    const bool batched = in.batch_axis >= 0;
    // bwd_d reads the parameters (dx = dz·W), bwd_w the batched inputs (dW = dzᵀ·x).
    const bool needed = forward || (!contains(t.not_in_backward, in.arg) &&
                                    (pass == Pass::bwd || (batched ? weight_grads : data_grads)));
    if (needed) read(in);
  }
  if (runs_backward(pass)) {
    // The gradient arriving at the layer's output, and what its ReLU's backward needs.
    switch (p.relu) {
      case Relu::none:
        read(diff_spec(t.output));
        break;
      case Relu::separate:
        if (pass != Pass::train) read(as_arg(t.output, Arg::relu_dst), true);
        read(as_arg(diff_spec(t.output), Arg::diff_relu_dst));
        break;
      case Relu::inplace:
      case Relu::fused:
      case Relu::relu6:  // not with a backward pass (problem.cpp): here for the switch's sake
        if (pass != Pass::train) read(as_arg(t.output, Arg::dst), true);
        read(diff_spec(t.output));
        if (p.relu == Relu::inplace) args.back().written = true;
        break;
    }
  }
  // Outputs.
  if (forward) {
    write(t.output);
    if (p.relu == Relu::separate) write(as_arg(t.output, Arg::relu_dst));
  }
  if (runs_backward(pass)) {
    if (p.relu == Relu::separate) write(diff_spec(t.output));  // dz = dr where r > 0
    for (const ArgSpec& in : t.inputs) {
      const bool batched = in.batch_axis >= 0;
      if (batched ? data_grads : weight_grads) write(diff_spec(in), !batched);
    }
  }
  return args;
}

int64_t pass_macs(const Problem& p) {
  const int64_t forward = traits(p.op()).macs(p);
  switch (p.pass) {
    case Pass::fwd:
    case Pass::fwd_train:
    case Pass::bwd_d:
    case Pass::bwd_w:
      return forward;
    case Pass::bwd:
      return 2 * forward;
    case Pass::train:
      return 3 * forward;
  }
  return forward;
}

int64_t accumulation_length(const Problem& p, Arg a) {
  const OpTraits& t = traits(p.op());
  if (a == Arg::dst || a == Arg::relu_dst) return t.accumulation_length(p);
  if (a == Arg::diff_dst) return 1;
  const Arg primal = primal_of(a);
  auto elements = [&p](const ArgSpec& s) {
    long double n = 1;
    for (int64_t d : s.dims(p))
      n *= d;
    return n;
  };
  for (const ArgSpec& in : t.inputs)
    if (in.arg == primal) {
      // The bias is added, not multiplied: db sums dz over the outputs that share it.
      const long double terms = primal == Arg::bias ? elements(t.output) : (long double)t.macs(p);
      return std::max<int64_t>(1, int64_t(std::ceil(terms / elements(in))));
    }
  throw Error(std::string(t.name) + ": " + std::string(name(a)) + " is not a gradient of an input");
}

LargestArg largest_arg(const Problem& p) {
  LargestArg largest{Arg::dst, 0};
  for (const PassArg& a : pass_args(p)) {
    long double elements = 1;
    for (int64_t d : a.spec.dims(p))
      elements *= d;
    if (elements > largest.elements) largest = {a.spec.arg, elements};
  }
  return largest;
}

std::string power_of_two(long double n) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "2^%.1Lf", std::log2(n));
  return buf;
}

}  // namespace lb
