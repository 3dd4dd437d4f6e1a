// What every oneDNN kernel shares: the one error-check macro, the engine, data types per
// argument, and a Plan — the primitives of one problem with their arguments, built in
// prepare() and executed in run().
//
// Why a Plan: prepare() must do every untimed thing (primitive descriptors and primitives,
// weight reorders, buffers, the scratchpad) and run() nothing but execute. The Plan keeps
// each primitive with its argument list already in the C API's form, so run() calls
// dnnl_primitive_execute() directly (the C++ execute() builds a std::vector per call). User
// tensors are bound by pointer: run() only points the bound memory objects at the tensors
// it is given, which allocates nothing.
//
// Scratchpad: every primitive is created with scratchpad_mode::user; the Plan allocates
// one buffer, the largest any of its primitives asks for, in finalize() (the primitives
// run one after another, so they can share it), and counts it in held_bytes(). It and the
// activations a run reorders into oneDNN's layouts are temporaries: in a graph's session
// they come from the pool every layer's kernel shares (Plan::temporary).
//
// oneDNN's primitive cache is off (engine()): every prepare() creates, and every release()
// frees, its own primitives, so what a case holds does not depend on the cases before it.
//
// Threads: oneDNN here uses OpenMP (Debian's libdnnl is built with GNU OpenMP), whose
// thread count is a per-thread setting: set_threads() calls omp_set_num_threads() at the
// start of prepare(), before primitives are created (oneDNN sizes its work split for the
// thread count at creation), and run() must be called from the same thread.
#pragma once

#include <oneapi/dnnl/dnnl_debug.h>

#include <cstddef>
#include <memory>
#include <new>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/kernel.h"

namespace lb::onednn {

// Throws lb::Error "file:line: <call>: <oneDNN's message> (<status>)".
[[noreturn]] void fail(const char* call, const char* file, int line, const std::string& why);

// Runs f, turning a dnnl::error it throws or a dnnl_status_t it returns into lb::Error —
// or, for oneDNN's out_of_memory, into std::bad_alloc, which the harness reports as the
// case's out_of_memory status rather than a kernel failure.
template <class F>
decltype(auto) checked(F&& f, const char* call, const char* file, int line) {
  try {
    if constexpr (std::is_same_v<std::invoke_result_t<F&>, dnnl_status_t>) {
      const dnnl_status_t s = f();
      if (s == dnnl_out_of_memory) throw std::bad_alloc();
      if (s != dnnl_success) fail(call, file, line, dnnl_status2str(s));
    } else {
      return f();
    }
  } catch (const dnnl::error& e) {
    if (e.status == dnnl_out_of_memory) throw std::bad_alloc();
    fail(call, file, line, std::string(e.what()) + " (" + dnnl_status2str(e.status) + ")");
  }
}

// The one check for oneDNN calls, C++ (throws dnnl::error) or C (returns dnnl_status_t):
//   auto pd = LB_DNNL(dnnl::convolution_forward::primitive_desc(d, attr, engine()));
//   LB_DNNL(dnnl_primitive_execute(...));
#define LB_DNNL(...) \
  ::lb::onednn::checked([&]() -> decltype(auto) { return __VA_ARGS__; }, #__VA_ARGS__, __FILE__, __LINE__)

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using dims = dnnl::memory::dims;

const dnnl::engine& engine();

// omp_set_num_threads(n): see the header comment.
void set_threads(int n);

// The oneDNN data type of an argument of a problem (storage_of(), kernels/tensor.h).
dt dtype_of(DType d, Arg a);

// Empty when oneDNN 2.6 has the problem's dtype at all on CPU, else the reason
// (require_dtypes() and what oneDNN lacks).
std::string dtype_reason(const Problem& p);

// Empty when every argument of the problem has at most 2^31 - 1 elements, else the
// reason: oneDNN 2.6's CPU kernels count parts of their work in 32-bit ints, and `conv2d
// mb=2147483647 ic=16 ih=8 iw=8 oc=16 kh=3 kw=3 ph=1 dt=i8` (an x of 2^41 elements)
// stopped the process with SIGFPE while its primitive was created.
std::string size_reason(const Problem& p);

// Empty for a forward pass; for a backward one, why oneDNN 2.6 cannot compute it as the
// ReLU mode asks (fused: none of its backward primitives applies a ReLU's mask).
std::string backward_reason(const Problem& p);

// The attributes every primitive gets: user scratchpad, and for relu=fused a ReLU post-op
// (relu6: a clip to [0, 6]).
// For i8 also the output scale src.scale · wei.scale (oneDNN 2.x applies it to the s32 sum
// *including the bias*, which is why i8 kernels pre-divide their bias by it).
dnnl::primitive_attr attributes(Relu relu, float output_scale = 1.0f);

// The layout of a memory descriptor in oneDNN's letters: "acdb", "AB16b64a", "packed".
std::string layout(const dnnl::memory::desc& md);

class Plan {
 public:
  Plan();
  // A memory object that run() points at ts.at(a) + byte_offset.
  dnnl::memory bind(Arg a, const dnnl::memory::desc& md, size_t byte_offset = 0);
  // A memory object the Plan owns (counted in held_bytes(); `saved`: also in saved_bytes(),
  // what a training forward keeps for the backward, as oneDNN's RNN workspace).
  dnnl::memory owned(const dnnl::memory::desc& md, bool saved = false);
  // One that only run() uses (a reordered activation, the scratchpad): from the current
  // TemporaryPool where there is one (kernels/host_memory.h: a graph's kernels share it; not
  // in held_bytes()), else owned().
  dnnl::memory temporary(const dnnl::memory::desc& md);
  // Bytes held beyond buffers the Plan allocates itself (e.g. a rescaled bias kept by the kernel).
  void hold(size_t bytes) { extra_bytes_ += bytes; }

  // A user-layout tensor of prepare()'s TensorSet reordered now into memory of layout
  // `want` that the Plan owns; returned as is when the layouts agree. Weights, and the
  // input of a kernel that keeps activations in oneDNN's layout (conv2d.onednn.blocked).
  dnnl::memory reordered_now(const TensorSet& ts, Arg a, const dnnl::memory::desc& user, size_t byte_offset,
                             const dnnl::memory::desc& want);

  // The bias as a primitive reads it: bound to the tensor, or for i8 (output_scale != 1) a
  // copy divided by the output scale, which oneDNN 2.x multiplies the biased sum by.
  dnnl::memory bias(const TensorSet& ts, const dnnl::memory::desc& md, float output_scale);

  // When a primitive runs: in run() (timed); in finish() (untimed); once, at the end of
  // prepare() (prepared(): the training forward whose workspace a backward pass reads).
  enum class Stage { run, finish, once };
  // Appends a primitive to its stage, with its arguments (the scratchpad is added by finalize()).
  void add(const dnnl::primitive_desc_base& pd, const dnnl::primitive& prim,
           std::vector<std::pair<int, dnnl::memory>> args, const std::string& what, Stage stage = Stage::run);
  // Appends a reorder src -> dst (activations, timed).
  void add_reorder(const dnnl::memory& src, const dnnl::memory& dst, const std::string& what);
  // Appends a reorder src -> dst that finish() runs, untimed: an output handed back in our
  // layout by a kernel that keeps activations in oneDNN's.
  void add_finish_reorder(const dnnl::memory& src, const dnnl::memory& dst, const std::string& what);
  // Appends the ReLU pass of relu=inplace (dst := max(dst, 0)) or relu=separate
  // (relu_dst := max(dst, 0)); nothing for none/fused. dst is the user-layout output.
  void add_relu_pass(Relu relu, const dnnl::memory& dst);
  // Appends dst := max(src, 0) (src and dst may be the same memory).
  void add_relu(const dnnl::memory& src, const dnnl::memory& dst);
  // The ReLU's backward in front of a backward pass (kernels/ops/traits.h, pass_args), by
  // oneDNN's eltwise_relu_use_dst_for_bwd: under separate diff_dst := diff_relu_dst where
  // relu_dst > 0, else 0; under inplace the same over diff_dst from dst. `md` is dst's user
  // layout. Returns diff_dst bound (dz, what the layer's backward reads), for none as given.
  dnnl::memory add_relu_backward(Relu relu, const dnnl::memory::desc& md);

  // An activation or gradient a timed primitive reads in layout `want`: bound as given, or
  // reordered into memory the Plan owns, in run() (timed) — as conv2d.onednn.default does.
  dnnl::memory input(Arg a, const dnnl::memory::desc& user, const dnnl::memory::desc& want);
  // The same for memory already in the Plan (dz from the ReLU's backward).
  dnnl::memory input_of(const dnnl::memory& given, const dnnl::memory::desc& want, const std::string& what);
  // One a timed primitive writes in layout `have`: `written` is what to give it; `then()`
  // appends the timed reorder into the user's tensor where the layouts differ.
  struct Output {
    dnnl::memory written, user;
  };
  Output output(Arg a, const dnnl::memory::desc& user, const dnnl::memory::desc& have,
                size_t byte_offset = 0);
  void then(const Output& out, const std::string& what);
  // A gradient the primitive adds into rather than writes (oneDNN's RNN backward, dW and
  // db): rearm() sets it to zero, untimed, before every timed run but the first.
  void zero_in_rearm(const dnnl::memory& m);

  // Allocates the shared scratchpad and gives it to every primitive. Call once, last.
  void finalize();

  // Points the bound memories at ts and executes every timed primitive in order.
  void run(TensorSet& ts);
  // The same for the untimed ones (add_finish_reorder).
  void finish(TensorSet& ts);
  // The Stage::once primitives, then rearm(): the last call of a prepare() that has them.
  void prepared(TensorSet& ts);
  // Zeroes what zero_in_rearm() named (Kernel::rearm).
  void rearm(TensorSet& ts);

  size_t held_bytes() const;
  size_t saved_bytes() const { return saved_bytes_; }
  const std::string& details() const { return details_; }

 private:
  struct Step {
    Stage stage;
    dnnl::primitive prim;
    dnnl::memory::desc scratchpad;
    std::vector<dnnl::memory> keep;  // the memory objects args_ refers to, kept alive
    std::vector<dnnl_exec_arg_t> args;
  };
  struct Binding {
    Arg arg;
    dnnl::memory mem;
    size_t offset;
  };
  void point_at(TensorSet& ts);  // the bound memories at ts's tensors
  void execute(TensorSet& ts, Stage stage);

  dnnl::stream stream_;
  std::vector<Step> steps_;
  std::vector<Binding> bindings_;
  std::vector<Tensor> buffers_;  // what owned_ points into
  std::vector<dnnl::memory> owned_;
  std::vector<dnnl::memory> zeroed_;  // zero_in_rearm()
  size_t owned_bytes_ = 0, extra_bytes_ = 0, saved_bytes_ = 0;
  dnnl::memory scratchpad_;
  std::string details_;
};

// What the oneDNN kernels share once prepare() has built their Plan: running it,
// releasing it and reporting what it holds.
class PlanKernel : public Kernel {
 public:
  void run(TensorSet& ts) final { plan_->run(ts); }
  void finish(TensorSet& ts) final { plan_->finish(ts); }
  void rearm(TensorSet& ts) final { plan_->rearm(ts); }
  void release() final { plan_.reset(); }
  std::string details() const final { return plan_ ? plan_->details() : std::string(); }
  size_t scratch_bytes() const final { return plan_ ? plan_->held_bytes() : 0; }
  size_t saved_bytes() const final { return plan_ ? plan_->saved_bytes() : 0; }

 protected:
  std::unique_ptr<Plan> plan_;
};

}  // namespace lb::onednn
