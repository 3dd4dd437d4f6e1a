#include "kernels/model.h"

#include "kernels/common.h"
#include "kernels/ops/traits.h"
#include "kernels/tensor.h"

namespace lb {

Model model(const Problem& p) {
  const OpTraits& op = traits(p.op());
  Model m;
  auto bytes = [&p](Arg a, double elements) { return elements * double(size_of(storage_of(p.dt, a))); };
  auto elements = [](const Dims& dims) {
    int64_t n = 1;
    for (int64_t d : dims)
      n *= d;
    return n;
  };
  // Parameters are the inputs without a batch axis (weights, biases); the input
  // activations are the others (LSTM: x with h0 and c0).
  for (const ArgSpec& a : op.inputs) {
    const int64_t n = elements(a.dims(p));
    if (a.batch_axis < 0) {
      m.params += n;
      m.param_bytes += bytes(a.arg, double(n));
    } else {
      m.src_bytes += bytes(a.arg, double(n));
    }
  }
  // A backward pass computes each product of the forward once per gradient (pass_macs).
  m.macs = pass_macs(p);
  const int64_t forward_macs = op.macs(p);
  m.macs_on_input = forward_macs == 0
                        ? 0  // no products (a pool): no FLOPs either
                        : (op.macs_on_input ? op.macs_on_input(p) : forward_macs) * (m.macs / forward_macs);
  const double out = double(elements(output_dims(p)));
  m.dst_bytes = bytes(Arg::dst, out);
  m.relu_bytes = p.relu == Relu::separate ? bytes(Arg::relu_dst, out) : 0.0;
  m.flops = 2.0 * double(m.macs_on_input);
  for (const PassArg& a : pass_args(p))
    m.tensor_bytes += bytes(a.spec.arg, double(elements(a.spec.dims(p))));
  m.min_bytes = m.tensor_bytes;
  m.intensity = m.flops / m.min_bytes;
  m.saved_bytes = op.saved_elements ? 4.0 * double(op.saved_elements(p)) : 0.0;
  m.inference_bytes = m.param_bytes + m.src_bytes + m.dst_bytes + m.relu_bytes;
  m.training_bytes =
      training_memory(m.params, m.param_bytes, m.src_bytes + m.dst_bytes + m.relu_bytes + m.saved_bytes, p.dt)
          .total();
  return m;
}

std::string_view name(Optimizer o) {
  switch (o) {
    case Optimizer::sgd:
      return "sgd";
    case Optimizer::momentum:
      return "momentum";
    case Optimizer::adam:
      return "adam";
  }
  return "?";
}

Optimizer parse_optimizer(std::string_view token) {
  for (Optimizer o : kAllOptimizers)
    if (name(o) == token) return o;
  throw Error("optimizer '" + std::string(token) + "': expected sgd, momentum or adam");
}

TrainingMemory training_memory(int64_t params, double param_bytes, double kept_bytes, DType dt,
                               Optimizer opt) {
  TrainingMemory t;
  t.parameters = param_bytes;
  t.gradients = param_bytes;
  const double copies = opt == Optimizer::sgd ? 0 : opt == Optimizer::momentum ? 1 : 2;
  t.optimizer_state = copies * 4.0 * double(params);
  t.master_weights = dt == DType::f16 || dt == DType::bf16 ? 4.0 * double(params) : 0.0;
  t.kept = kept_bytes;
  return t;
}

TrainingMemory training_memory(const Problem& p, Optimizer opt) {
  const Model m = model(p);
  return training_memory(m.params, m.param_bytes, m.src_bytes + m.dst_bytes + m.relu_bytes + m.saved_bytes,
                         p.dt, opt);
}

std::string layer_type(const Problem& p) {
  return std::string(traits(p.op()).layer_type(p));
}

}  // namespace lb
