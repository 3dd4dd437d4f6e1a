// The analytic model: the arithmetic users otherwise do by hand, per problem.
//
// MACs count multiply-adds of the layer's products only (1 MAC = the seed notes'
// "flop"): bias adds, activations and the LSTM cell's element-wise work are not counted,
// as in the papers' tables — and like them, a convolution's MACs count every filter tap,
// those over the zero padding too. FLOPs are 2 × the MACs on the input, without those
// (as oneDNN's benchdnn counts): they are the arithmetic the layer needs, so that no kernel
// reads above 100 % of the peak for skipping products with zero (oneDNN's direct
// convolutions skip them; on the 2-core AMD EPYC Zen 5 VM its AlexNet conv3 and conv4,
// 13×13 with one pixel of padding, read 101-102 % of the f32 peak by every tap, 10 % of
// which are over the padding; MobileNet's 7×7 layers 18 %). Bytes use each argument's storage
// (storage_of). Parameters are an op's inputs without a batch axis, its input
// activations the batched ones (the arguments its OpTraits declare); the MACs are the
// op's own (kernels/ops/), times the products a backward pass computes per forward
// product (pass_macs: bwd 2×, train 3×). Memory:
//   inference = parameters + input + output (+ the second buffer of a separate ReLU);
//   training  = training_memory() of the parameters and what the forward keeps for the
//               backward pass: the input, the output (+ separate ReLU output; an in-place
//               ReLU needs none, since its backward pass can use the output: the gradient
//               is zero where it is), and what the op saves beyond them (saved_bytes: the
//               LSTM's gates and cell states of every step).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "kernels/problem.h"

namespace lb {

struct Model {
  int64_t params = 0;  // weights + biases
  double param_bytes = 0;
  double src_bytes = 0;       // the layer's input activations (LSTM: with h0 and c0)
  double dst_bytes = 0;       // the layer's output
  double relu_bytes = 0;      // the extra output buffer of relu=separate
  int64_t macs = 0;           // every product, as the papers count (a convolution's padding too)
  int64_t macs_on_input = 0;  // those whose input element is inside the input (OpTraits)
  double flops = 0;           // 2·macs_on_input: what rates, % of peak and intensity count
  double tensor_bytes = 0;    // the pass's tensors (pass_args: a backward pass's gradients too)
  double min_bytes = 0;       // every input read once, every output written once: tensor_bytes
  double intensity = 0;       // FLOPs per byte of min_bytes
  double saved_bytes = 0;     // what a training forward keeps beyond input and output (OpTraits)
  double inference_bytes = 0;
  double training_bytes = 0;  // training_memory(...) with plain SGD
};

Model model(const Problem& p);

// Optimizers by the state they keep per parameter, in f32 copies: sgd none, momentum one (the
// velocity), adam two (the first and second moments).
enum class Optimizer { sgd, momentum, adam };
inline constexpr Optimizer kAllOptimizers[] = {Optimizer::sgd, Optimizer::momentum, Optimizer::adam};
std::string_view name(Optimizer o);
Optimizer parse_optimizer(std::string_view token);  // lb::Error naming the token and the choices

// The memory of a training step: the one formula, for a layer (model()) and a network
// (liveness(), kernels/graph.h). Parameters and their gradients (in the parameters' storage),
// the optimizer's state (f32 copies), f32 master weights where the parameters are f16 or bf16
// (mixed-precision training updates an f32 copy and rounds it), and the activations the
// forward keeps for the backward pass (`kept`).
struct TrainingMemory {
  double parameters = 0, gradients = 0, optimizer_state = 0, master_weights = 0, kept = 0;
  double total() const { return parameters + gradients + optimizer_state + master_weights + kept; }
};
TrainingMemory training_memory(int64_t params, double param_bytes, double kept_bytes, DType dt,
                               Optimizer opt = Optimizer::sgd);
// A layer's: its parameters, and input + output (+ separate ReLU output) + saved bytes kept.
TrainingMemory training_memory(const Problem& p, Optimizer opt = Optimizer::sgd);

// The layer type used in tables (the op's traits): dense, conv, depthwise, pointwise
// (1×1, g=1) or lstm.
std::string layer_type(const Problem& p);

}  // namespace lb
