// Host tensors, the arguments every kernel receives, seeded fills and poison.
//
// Every backend sees the same host tensors in the same layouts (problem.h states
// them); a backend that wants another layout converts in prepare(). The storage of
// each argument follows from the problem's dtype through one function, storage_of().
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "kernels/problem.h"

namespace lb {

// The arguments of a layer, named as oneDNN names them. LSTM weights of all layers
// are stacked in one tensor each (layout in kernels/ref/lstm.cpp).
enum class Arg {
  src,         // x
  wei,         // W (LSTM: input weights W_x of every layer)
  bias,        // b (LSTM: one bias per gate per layer)
  wei_iter,    // LSTM recurrent weights W_h
  src_iter,    // LSTM h0
  src_iter_c,  // LSTM c0
  src_1,       // add: the second summand (oneDNN's DNNL_ARG_SRC_1); no gradient (add has no backward)
  dst,         // y, the layer output (after ReLU for relu=inplace/fused)
  relu_dst,    // r = max(y, 0), relu=separate only
  // The gradients of the backward passes (Pass, problem.h), each with its primal's dims:
  // diff_dst is dL/dy, given (under relu=separate the gradient of y that the ReLU's
  // backward writes from diff_relu_dst = dL/dr); the others are what the backward computes.
  diff_src,
  diff_wei,
  diff_bias,
  diff_wei_iter,
  diff_src_iter,
  diff_src_iter_c,
  diff_dst,
  diff_relu_dst,
};
inline constexpr int kNumArgs = 17;
std::string_view name(Arg a);
// The gradient of a primal argument (src -> diff_src), and back; a primal has no primal,
// a gradient no gradient (both throw lb::Error).
Arg diff_of(Arg primal);
Arg primal_of(Arg diff);
bool is_diff(Arg a);

Storage storage_of(DType dt, Arg a);
// The grid an input's values are drawn on (fill_inputs): its storage's, but for the f32
// bias and LSTM cell state of f16, bf16 and f8 problems, which vendor libraries take in a
// narrower type: cuBLASLt's bias and cuDNN's bias and cell state are of the output's type
// (cuBLASLt's fp8 with an f32 output: bf16). On that grid the conversion is exact, so those
// kernels compute with the same numbers as every other backend and the reference. (The
// first GPU check, results/h200/2026-12-04_gpu-check_first-light: 141 cuBLASLt / cuDNN
// checks in f16 / bf16 failed by errors of the bias's rounding.)
Storage value_grid(DType dt, Arg a);

class Tensor {
 public:
  Tensor() = default;
  // 64-byte aligned, uninitialised. `scale` maps stored integers to values
  // (value = scale * stored); it is 1 for floating storages.
  Tensor(Storage storage, std::vector<int64_t> dims, double scale = 1.0);
  // A tensor over memory it does not own (a slot of a graph's arena, kernels/graph_session.h):
  // kernels read and write it as any other; nothing is freed with it. `data` must be 64-byte
  // aligned and outlive the view.
  static Tensor view(Storage storage, std::vector<int64_t> dims, void* data, double scale = 1.0);
  bool is_view() const { return data_.get_deleter().mapped == kView; }

  Storage storage() const { return storage_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t elements() const { return elements_; }
  size_t bytes() const { return elements_ * size_of(storage_); }
  double scale() const { return scale_; }
  void* data() { return data_.get(); }
  const void* data() const { return data_.get(); }
  template <class T>
  T* as() {
    return static_cast<T*>(data());
  }
  template <class T>
  const T* as() const {
    return static_cast<const T*>(data());
  }

  // Element i as a value, and a value stored at i (rounded to nearest even,
  // saturated for the integer and e4m3 storages).
  double load(int64_t i) const;
  void store(int64_t i, double v);
  // load() of elements first .. first + count - 1 into out: one switch, not one per element.
  void load_range(int64_t first, int64_t count, double* out) const;

  Tensor clone() const;

 private:
  static constexpr size_t kView = ~size_t(0);
  struct Free {  // a mapping goes back through munmap (a resident block to its pool), the rest through free()
    size_t mapped;  // bytes of a mapping; 0 (as value-initialised): aligned_alloc'ed; kView: not ours
    void operator()(std::byte* p) const;
  };
  Storage storage_ = Storage::f32;
  std::vector<int64_t> dims_;
  int64_t elements_ = 0;
  double scale_ = 1.0;
  std::unique_ptr<std::byte[], Free> data_;
};

class TensorSet {
 public:
  bool has(Arg a) const { return slots_[int(a)].has_value(); }
  Tensor& at(Arg a);
  const Tensor& at(Arg a) const;
  void set(Arg a, Tensor t) { slots_[int(a)] = std::move(t); }
  size_t bytes() const;

 private:
  std::array<std::optional<Tensor>, kNumArgs> slots_;
};

// The inputs of a problem (what fill() writes) and its outputs (what a kernel must write
// and verification compares), for its op, pass and ReLU mode: pass_args() in
// kernels/ops/traits.h, from each op's arguments (its OpTraits). An argument both read and
// written in place (diff_dst under relu=inplace in a backward pass) is in both lists.
std::vector<Arg> input_args(const Problem& p);
std::vector<Arg> output_args(const Problem& p);

// Allocates every argument of `p`, uninitialised.
TensorSet make_tensors(const Problem& p);
// Allocates p's outputs into `ts`, which holds its inputs already, uninitialised; one
// already there (lent on, kernels/case_session.h) stays.
void add_output_tensors(const Problem& p, TensorSet& ts);

// Seeded, never-zero random inputs: floats uniform in [-1, 1) times the amplitude the
// op's traits give each input (LSTM weights: 1/sqrt(fan-in), so gates do not saturate),
// integers small enough that int32 accumulation is exact; a forward output read by a
// backward pass after a ReLU is max(u, 0), as a ReLU leaves it (about half exact zeros).
// The same seed gives the same values on every machine, and each argument's values
// depend on the seed and the argument alone (fill_input() makes one again).
void fill_inputs(TensorSet& ts, const Problem& p, uint64_t seed);
void fill_input(Tensor& t, const Problem& p, Arg a, uint64_t seed);

// A 64-bit digest of a tensor's bytes (fast: four lanes of 8 bytes), to tell later whether a
// kernel changed its inputs without keeping a copy of them.
uint64_t digest(const Tensor& t);
using InputDigests = std::array<uint64_t, kNumArgs>;  // indexed by Arg; 0 where absent
InputDigests input_digests(const TensorSet& ts, const Problem& p);

// Writes a NaN pattern no kernel produces (0xa5 bytes for integer storages) over t.
void poison(Tensor& t);
bool is_poison(const Tensor& t, int64_t i);

// One pass over an output, typed per storage (outputs reach gigabytes at large batches):
// how many elements still hold the poison, the first of them, and the first written
// element that is NaN or Inf (-1 where there is none).
struct OutputScan {
  int64_t unwritten = 0, first_unwritten = -1, first_non_finite = -1;
};
OutputScan scan_output(const Tensor& t);

}  // namespace lb
