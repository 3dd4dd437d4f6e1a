// Problems: one layer's shape + dtype + ReLU mode, written as one canonical line.
//
//   dense  mb=32 ic=4096 oc=4096 dt=f32 relu=none
//   conv2d mb=32 ic=64 ih=56 iw=56 oc=64 kh=3 kw=3 sh=1 ph=1 g=1 dt=f32 relu=fused
//   lstm   mb=64 t=50 ic=512 hc=512 l=2 dt=bf16 relu=none
//   pool2d mb=32 ic=64 ih=55 iw=55 k=3 s=2 p=0 alg=max dt=f32 relu=none
//   add    mb=32 ic=256 ih=56 iw=56 dt=f32 relu=fused
//   softmax mb=32 ic=1000 dt=f32 relu=none
//   dense  mb=64 ic=4096 oc=4096 dt=f32 relu=inplace dir=bwd_w
//
// Keys may come in any order; print() writes them in the order above. Optional keys
// and their defaults: dt=f32, relu=none, dir=fwd (printed only when another), name= (empty), and the op's
// own, which its key table declares with the rest of the op's facts in kernels/ops/<op>.cpp (OpTraits; e.g.
// conv2d sw defaults to sh and is printed only when it differs). parse(print(p)) == p
// for every valid p. Every error names the op and the token and says what was expected,
// e.g. "conv2d: kh=0: must be >= 1".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "kernels/dtype.h"
#include "kernels/ops/add.h"
#include "kernels/ops/conv2d.h"
#include "kernels/ops/dense.h"
#include "kernels/ops/lstm.h"
#include "kernels/ops/pool2d.h"
#include "kernels/ops/softmax.h"

namespace lb {

enum class Op { dense, conv2d, lstm, pool2d, add, softmax };
inline constexpr Op kAllOps[] = {Op::dense, Op::conv2d, Op::lstm, Op::pool2d, Op::add, Op::softmax};
std::string_view name(Op op);
Op parse_op(std::string_view token);

// none: y = layer(x). separate: a ReLU writes a second buffer r = max(y, 0).
// inplace: a ReLU pass overwrites y. fused: the kernel writes max(y, 0) directly.
// relu6: the kernel writes min(max(y, 0), 6) directly (MobileNet v2's ReLU6, fused); forward
// passes only, and only kernels that declare it (KernelInfo::relu6: the registry declines
// it for the others, with the reason). kAllRelus, the sweep's "all", are the four modes of
// max(y, 0); relu6 is asked for by name.
enum class Relu { none, separate, inplace, fused, relu6 };
inline constexpr Relu kAllRelus[] = {Relu::none, Relu::separate, Relu::inplace, Relu::fused};
// What the kernel's own store clips at: fused and relu6 (the ReLU is part of the kernel).
constexpr bool fused_relu(Relu r) {
  return r == Relu::fused || r == Relu::relu6;
}
std::string_view name(Relu r);
Relu parse_relu(std::string_view token);

// The pass a case runs, in benchdnn's words (its `dir`): the forward pass of inference
// (fwd); the forward of a training step, which keeps what the backward needs (fwd_train);
// the gradient with respect to the layer's input (bwd_d), to its weights and bias (bwd_w),
// or both (bwd); a whole training step, forward then backward (train). An op says which
// it has (OpTraits::passes: an LSTM's data and weight gradients come out of one pass
// through time, so it has no bwd_d or bwd_w). dir= is printed only when not fwd, so every
// forward problem line, case name and results file reads as before.
enum class Pass { fwd, fwd_train, bwd_d, bwd_w, bwd, train };
inline constexpr Pass kAllPasses[] = {Pass::fwd,   Pass::fwd_train, Pass::bwd_d,
                                      Pass::bwd_w, Pass::bwd,       Pass::train};
// --dir training: the passes of a training step measured one by one, and the whole step.
inline constexpr Pass kTrainingPasses[] = {Pass::fwd_train, Pass::bwd_d, Pass::bwd_w, Pass::train};
std::string_view name(Pass pass);
// What a pass computes: the forward (fwd, fwd_train, train), a backward (the others), the
// input's gradient (bwd_d, bwd, train), the weights' and bias's (bwd_w, bwd, train).
constexpr bool runs_forward(Pass p) {
  return p == Pass::fwd || p == Pass::fwd_train || p == Pass::train;
}
constexpr bool runs_backward(Pass p) {
  return p != Pass::fwd && p != Pass::fwd_train;
}
constexpr bool computes_data_grads(Pass p) {
  return p == Pass::bwd_d || p == Pass::bwd || p == Pass::train;
}
constexpr bool computes_weight_grads(Pass p) {
  return p == Pass::bwd_w || p == Pass::bwd || p == Pass::train;
}
// "fwd fwd_train bwd_d bwd_w bwd train": kAllPasses' names, for the errors that list them.
std::string pass_names();
Pass parse_pass(std::string_view token);

struct Problem {
  std::variant<Dense, Conv2d, Lstm, Pool2d, Add, Softmax> shape;
  DType dt = DType::f32;
  Relu relu = Relu::none;
  std::string name;  // optional label, [A-Za-z0-9_.-]+; e.g. the network layer it came from
  Pass pass = Pass::fwd;

  Op op() const { return Op(shape.index()); }
  const Dense& dense() const { return std::get<Dense>(shape); }
  const Conv2d& conv() const { return std::get<Conv2d>(shape); }
  const Lstm& lstm() const { return std::get<Lstm>(shape); }
  const Pool2d& pool() const { return std::get<Pool2d>(shape); }
  const Add& add() const { return std::get<Add>(shape); }
  const Softmax& softmax() const { return std::get<Softmax>(shape); }
  int64_t batch() const;
  bool operator==(const Problem&) const = default;
};

// Throws lb::Error with a one-line reason.
Problem parse_problem(std::string_view line);
// The same problem in another pass; throws lb::Error, as parse_problem would, where the
// op has no such pass.
Problem with_pass(Problem p, Pass pass);
std::string print(const Problem& p);

// The same problem with another batch, dtype or ReLU mode (sweep axes). Throws
// lb::Error, as parse_problem would, when mb is out of range or the problem too large.
Problem with_batch(Problem p, int64_t mb);

// Output dims in the layouts above: dense {MB, OC}; conv2d {MB, OC, OH, OW}; lstm {T, MB, HC}.
std::vector<int64_t> output_dims(const Problem& p);

// A short name for benchmark names and tables: the name= label if set, else the shape
// ("mb32ic64ih56iw56oc64kh3kw3sh1ph1g1").
std::string short_name(const Problem& p);

}  // namespace lb
