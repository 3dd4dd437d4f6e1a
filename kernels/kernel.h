// The one interface every backend implements, CPU or GPU (../shared/DESIGN.md).
//
// Life of a kernel in a case:  supports() -> prepare() -> run(), then rearm() -> run() ...
// -> finish() -> release(). The harness poisons the outputs before prepare(). Everything that is not the
// layer's arithmetic — handles, descriptors, algorithm choice, workspace, weight packing, device copies —
// belongs in prepare(), so that run() is exactly what gets timed. The harness, not the kernel, decides how to
// time and when to synchronise; finish() is where a GPU kernel waits and copies its outputs back into the
// host tensors (untimed), so verification reads them.
#pragma once

#include <initializer_list>
#include <memory>
#include <string>

#include "kernels/problem.h"
#include "kernels/tensor.h"

namespace lb {

enum class Device { cpu, gpu };
std::string_view name(Device d);

// What a case asks of a kernel beyond the problem.
struct Context {
  int threads = 1;  // CPU threads the kernel may use
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  // Empty when the problem is supported, else one line saying why not
  // ("f8 needs Hopper tensor cores"). Never throws for a valid problem. The reason is bare:
  // KernelEntry::supports() (registry.h) puts the backend's name in front of it.
  virtual std::string supports(const Problem& p) const = 0;
  // Untimed set-up. May read the inputs (e.g. pack weights); must not write outputs.
  virtual void prepare(const Problem& p, TensorSet& ts, const Context& ctx) = 0;
  // The timed work: computes the outputs of the problem given to prepare().
  virtual void run(TensorSet& ts) = 0;
  // Untimed: wait for completion and make outputs visible in `ts` (GPU backends).
  virtual void finish(TensorSet& ts) { (void)ts; }
  // Untimed, before every timed run() but the first after prepare(): puts back what run()
  // used up, for a kernel whose run() does not simply repeat — oneDNN's LSTM backward adds
  // its weight gradients into dW and db, so rearm() zeroes them (a training step's zero_grad,
  // outside the time). Nothing by default. prepare() leaves the kernel armed.
  virtual void rearm(TensorSet& ts) { (void)ts; }
  // Frees what prepare() acquired; the kernel may be prepared again afterwards.
  virtual void release() {}
  // Before prepare(): argument `a` lives at `device_data` on the kernel's device, shared with
  // other kernels (a graph's arena, kernels/graph_session.h), and the kernel uses it instead of
  // a copy of its own: prepare() neither allocates nor uploads it, finish() leaves it there.
  // True where the kernel takes it (a GPU kernel, until release()); a CPU kernel's tensors are
  // the host's already: false.
  virtual bool bind(Arg a, void* device_data) {
    (void)a, (void)device_data;
    return false;
  }

  // After prepare(): what the library chose (implementation, algorithm), for the
  // results; empty when there is no choice to report.
  virtual std::string details() const { return {}; }
  // After prepare(): bytes the kernel itself holds beyond the tensors it was given —
  // scratchpad or workspace, packed or reordered copies — on its own device.
  virtual size_t scratch_bytes() const { return 0; }
  // After prepare(): of those, the bytes a training forward keeps for its backward (oneDNN's
  // RNN workspace, cuDNN's reserve space, a gate cache): what the model's saved_bytes
  // predicts. 0 where the backward needs only the pass's tensors (dense, conv2d).
  virtual size_t saved_bytes() const { return 0; }
  // After prepare(): true where the kernel rounds its sums to the output's storage before
  // it adds the bias (cuDNN's unfused path in f16 / bf16: the convolution writes y, then
  // cudnnAddTensor adds b to it), one rounding more than the reference assumes, which
  // verification then allows for (allowance(), kernels/verify.h). False: one rounding, of
  // the final value.
  virtual bool rounds_before_bias() const { return false; }
};

// Empty when p's dtype is one of `allowed`, else the reason, one line naming the dtype and
// the list ("dt=bf16 not supported (f32, i8 only)"). The dtype check of every supports();
// a backend adds its own sentence where it knows more (Eigen's bf16 accumulates in bf16).
std::string require_dtypes(const Problem& p, std::initializer_list<DType> allowed);

// One kernel id whose passes are two kernels (kernels/ops/traits.h, pass_args): `forward`
// computes fwd and fwd_train (dense and conv2d keep nothing more), `backward` bwd_d, bwd_w
// and bwd; train runs both, the forward's dst then giving the backward its ReLU mask. Each
// call goes to what prepare() chose; supports() asks the one (or both) the pass needs.
std::unique_ptr<Kernel> split_by_pass(std::unique_ptr<Kernel> forward, std::unique_ptr<Kernel> backward);

// A kernel's identity and description, given once at registration (a backend's
// register.cpp) with designated initialisers, naming every field that differs from its
// default here:
//   r.add({.id = "dense.cuda.01_naive", .device = Device::gpu, .idea = "...", .accumulation = "f32",
//          .opt_in = true}, [] { return make_sgemm_dense(sgemm_01_naive); });
struct KernelInfo {
  std::string id;  // <op>.<backend>.<variant>, e.g. "dense.ref.loops"
  Device device = Device::cpu;
  std::string idea;            // one line on how it computes
  std::string accumulation;    // e.g. "f64", "f32", "s32"
  bool multithreaded = false;  // CPU: honours Context::threads > 1
  // Swept only when its backend or its id is asked for, not in a default sweep of every
  // backend: the steps of a teaching progression (naive → … → the real kernel) and
  // variants that answer a narrower question (oneDNN on NCHW as given).
  bool opt_in = false;
  // The passes it computes (problem.h's Pass). The registry checks them once against the
  // op's; a problem of another pass is declined there, before the kernel is asked.
  std::vector<Pass> passes = {Pass::fwd};
  // Whether its store takes relu=relu6 (min(max(y, 0), 6)); the registry declines relu6
  // for the others, before the kernel is asked.
  bool relu6 = false;
};

}  // namespace lb
