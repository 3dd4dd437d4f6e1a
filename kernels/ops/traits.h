// OpTraits: what an op is, in one file per op (dense.cpp, conv2d.cpp, lstm.cpp, with the
// shape in dense.h ...): its problem-line keys, its arguments (dims, batch axis, fill),
// output dims, accumulation length, the op-specific part of the model, the probes `list`
// runs, its table type and how a network layer of it follows from the previous layer.
// Problems (problem.cpp), tensors (tensor.cpp), verification, the model, `list` and
// networks (data.cpp) loop over these, so adding a key or a fact to an op touches that
// op's files only.
#pragma once

#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/ops/keys.h"
#include "kernels/problem.h"
#include "kernels/tensor.h"

namespace lb {

using Dims = std::vector<int64_t>;

// One argument of an op: which, its dims for a problem, and the axis that indexes the
// batch (-1 for weights and biases, the same for every sample). Inputs also give the
// amplitude of their seeded float fill, uniform in [-amplitude, amplitude).
struct ArgSpec {
  Arg arg;
  int batch_axis;
  Dims (*dims)(const Problem& p);
  double (*amplitude)(const Problem& p) = nullptr;  // nullptr: 1
};

// `key=value` pairs of a problem line that a network computes rather than reads.
using DerivedKeys = std::vector<std::pair<std::string_view, int64_t>>;

// How a network layer of an op follows from the layer before it.
struct LayerDerivation {
  std::vector<size_t> ranks;  // the per-sample input ranks the op takes
  std::string_view input;     // what they are, for the error when the rank is another
  // The keys the previous layer's per-sample shape `in` and the batch determine (mb
  // included), for an `in` of one of `ranks`.
  DerivedKeys (*keys)(const Dims& in, int64_t batch);
  Dims (*out_shape)(const Problem& p, const Dims& in);  // the layer's per-sample output
  // How many layers it reads (in=<layer>,<layer>; add's from=): add's two, of one shape.
  size_t layer_inputs = 1;
};

struct OpTraits {
  Op op;
  std::string_view name;  // the op's token in problem lines, kernel ids and network files

  // The problem line. parse takes the op's keys out of kv (every key but dt, relu and
  // name), validates them and sets p.shape, or throws lb::Error naming the token;
  // print appends the keys in canonical order (" mb=32 ic=4096 oc=4096").
  void (*parse)(KeyValues& kv, Problem& p);
  void (*print)(const Problem& p, std::string& out);

  // The arguments: inputs in fill order, and the output, dst (relu_dst, which
  // relu=separate adds, is alike).
  std::vector<ArgSpec> inputs;
  ArgSpec output;

  // Products summed into one output value; verification's tolerance grows with it.
  int64_t (*accumulation_length)(const Problem& p);
  // The multiply-adds of the layer's products: the model's op-specific part (parameters
  // and bytes follow from the arguments).
  int64_t (*macs)(const Problem& p);
  // Those whose input element is inside the input (null: all of them): a convolution's taps
  // over its zero padding left out, as oneDNN's benchdnn counts. What the layer's arithmetic
  // needs, and what the model's FLOPs (rates, % of peak) count.
  int64_t (*macs_on_input)(const Problem& p) = nullptr;
  // The layer type in tables: the op's name, or a finer kind (conv2d: depthwise, pointwise).
  std::string_view (*layer_type)(const Problem& p);
  // Small problem lines, without dt, on which `list` probes the dtypes of a kernel: a
  // dtype counts when any probe is supported (a depthwise-only kernel declines the rest).
  std::vector<std::string_view> probes;

  LayerDerivation layer;

  // The passes the op has (problem.h), and why not the others: "an LSTM's ... use dir=bwd",
  // the error a problem line or --dir with another gets after "<op>: dir=<pass>: ".
  std::vector<Pass> passes = {std::begin(kAllPasses), std::end(kAllPasses)};
  std::string_view no_pass = {};
  // Inputs the backward passes do not read (dense, conv2d: the bias, which only shifts y).
  std::vector<Arg> not_in_backward = {};
  // The element of the bias that element i of dst adds (dense: its column; conv2d: its
  // channel; the batch is dst's outermost axis, so a sample of the batch has the same
  // index); null where the op adds no bias to its output as such (the LSTM's is inside
  // its gates). Verification's allowance for a sum rounded before the bias (verify.h).
  int64_t (*bias_index)(const Problem& p, int64_t i) = nullptr;
  // What a training forward keeps for the backward beyond the layer's input and output, in
  // f32 elements (null: nothing; the LSTM: every step's gates and cell state, and the lower
  // layers' h): the model's saved_bytes.
  int64_t (*saved_elements)(const Problem& p) = nullptr;
  // What a training forward keeps of the layer for its backward (liveness, kernels/graph.h):
  // its input (null: yes; a max pool's finds its taps there, an average's and an add's read
  // nothing of it) and its output (true for softmax, whose gradient is made of it; an op's
  // own ReLU keeps it too, as a mask).
  bool (*keeps_input)(const Problem& p) = nullptr;
  bool keeps_output = false;
};

const OpTraits& traits(Op op);

// One argument of a problem in its pass: its spec (a gradient has its primal's dims and
// batch axis, problem.h), whether the kernel reads it, writes it or both (in place), and
// what filling and verifying it need.
struct PassArg {
  ArgSpec spec;
  bool read = true;
  bool written = false;
  bool relu_output = false;    // a forward output after a ReLU, read by a backward pass: filled >= 0
  bool reduces_batch = false;  // an output summed over the batch (dW, db): no batch sampling
};

// The arguments of p's pass, derived once, here, from the op's forward arguments:
//   fwd, fwd_train  reads the inputs, writes dst (and relu_dst under relu=separate);
//   bwd_d           reads the parameters (inputs without a batch axis) and diff_dst, writes
//                   the gradients of the batched inputs (diff_src);
//   bwd_w           reads the batched inputs and diff_dst, writes the parameters' gradients;
//   bwd             both: reads every input and diff_dst, writes every input's gradient;
//   train           the forward, then bwd with the mask of its own dst.
// The backward passes leave out OpTraits::not_in_backward. A ReLU in front of diff_dst:
// under relu=separate the pass reads relu_dst and diff_relu_dst and writes diff_dst (dz =
// dr where r > 0, else 0); under inplace it reads dst and writes dz over diff_dst; under
// fused it reads dst and diff_dst and applies the mask as it goes (train writes that dst).
// Inputs come first, in fill order, then outputs; an argument read and written is once.
std::vector<PassArg> pass_args(const Problem& p);

// The multiply-adds of p's pass: the forward's (OpTraits::macs) once per product the pass
// computes: fwd and fwd_train 1×, bwd_d and bwd_w 1× (each product of the forward has one
// term in dx, one in dW), bwd 2×, train 3×.
int64_t pass_macs(const Problem& p);
// Products summed into one element of output `a`: the op's accumulation_length for dst;
// for a gradient, the forward's MACs over its primal's elements (each product of the
// forward is one term of one element of each gradient: dense dx sums OC, dW sums MB; a
// convolution's dx averages over its border), for db the outputs per bias; 1 for dz.
int64_t accumulation_length(const Problem& p, Arg a);

// The argument of a problem with the most elements (inputs and outputs), and how many,
// computed without overflow: what size limits (parse_problem's, a library's) compare.
struct LargestArg {
  Arg arg;
  long double elements;
};
LargestArg largest_arg(const Problem& p);

// "2^41.0": an element count as a power of two, for size errors and reasons.
std::string power_of_two(long double n);

// The ops on activations as they come (add, softmax; kernels/ops/activations.h): their
// keys (mb ic, and ih iw, 1 unless given), their dims, and the keys a network layer's input
// gives them: from a vector (c: ih = iw = 1), a sequence (t×c: its positions rows of the
// batch, mb = t·batch, as dense takes them) or an image (c×h×w).
template <class Shape>
constexpr Key<Shape> kActivationKeys[] = {
    {"mb", &Shape::mb},
    {"ic", &Shape::ic},
    {.key = "ih", .member = &Shape::ih, .required = false, .print_default = false},
    {.key = "iw", .member = &Shape::iw, .required = false, .print_default = false}};
Dims activation_dims(const Activations& a);
DerivedKeys activation_keys(const Dims& in, int64_t batch);

// One per op file; everything else asks traits(op).
const OpTraits& dense_traits();
const OpTraits& conv2d_traits();
const OpTraits& lstm_traits();
const OpTraits& pool2d_traits();
const OpTraits& add_traits();
const OpTraits& softmax_traits();

}  // namespace lb
