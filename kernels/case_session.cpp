#include "kernels/case_session.h"

#include <algorithm>
#include <new>
#include <utility>

#include "kernels/common.h"
#include "kernels/device.h"
#include "kernels/host_memory.h"

namespace lb {

namespace {

// The tensors the last session lent on (see the header), and whose they are.
struct KeptInputs {
  std::string key;
  TensorSet inputs;
  InputDigests digests{};
  size_t bytes = 0;
  TensorSet outputs;  // each lent with its own bytes: a ReLU mode may need fewer
};

KeptInputs& kept_inputs() {
  static KeptInputs k;
  return k;
}

// The outputs of p that are not also inputs (written in place), which are poisoned anew.
std::vector<Arg> outputs_only(const Problem& p) {
  const std::vector<Arg> inputs = input_args(p);
  std::vector<Arg> out;
  for (Arg a : output_args(p))
    if (std::find(inputs.begin(), inputs.end(), a) == inputs.end()) out.push_back(a);
  return out;
}

std::string inputs_key(const Problem& p, uint64_t seed) {
  Problem inputs_only = p;
  // A forward's inputs do not depend on its ReLU mode; a backward pass's do (pass_args).
  if (!runs_backward(p.pass)) inputs_only.relu = Relu::none;
  return print(inputs_only) + " seed=" + std::to_string(seed);
}

}  // namespace

void keep_inputs_only_for(const Problem& p, uint64_t seed) {
  KeptInputs& k = kept_inputs();
  if (k.key != inputs_key(p, seed)) {
    k = KeptInputs{};
    return;
  }
  const std::vector<Arg> wanted = outputs_only(p);
  for (int i = 0; i < kNumArgs; ++i)
    if (k.outputs.has(Arg(i)) && std::find(wanted.begin(), wanted.end(), Arg(i)) == wanted.end())
      k.outputs.set(Arg(i), Tensor());  // relu_dst after relu=separate: not this case's
}

CaseSession::CaseSession(const KernelEntry& kernel, Problem problem, Context ctx)
    : entry_(kernel), problem_(std::move(problem)), ctx_(ctx) {}

CaseSession::~CaseSession() {
  release();
  if (lend_key_.empty()) return;
  // Lent on only as they were filled: a kernel that wrote into its inputs (during the
  // timed runs, after verification looked) would otherwise fail the next, innocent case.
  if (input_digests(ts_, problem_) != digests_) return;
  KeptInputs k{lend_key_, {}, digests_, 0, {}};
  for (Arg a : input_args(problem_)) {
    k.bytes += ts_.at(a).bytes();
    k.inputs.set(a, std::move(ts_.at(a)));
  }
  for (Arg a : outputs_only(problem_))
    k.outputs.set(a, std::move(ts_.at(a)));
  kept_inputs() = std::move(k);
}

void CaseSession::allocate(uint64_t seed) {
  seed_ = seed;
  keep_inputs_only_for(problem_, seed);
  lend_key_ = inputs_key(problem_, seed);
  KeptInputs& k = kept_inputs();
  if (k.key == lend_key_) {
    ts_ = std::move(k.inputs);
    digests_ = k.digests;
    reused_bytes_ = k.bytes;
    // The same problem's outputs, of the same sizes: each lent one is poisoned below.
    for (Arg a : outputs_only(problem_))
      if (k.outputs.has(a) && k.outputs.at(a).elements() > 0) {
        reused_bytes_ += k.outputs.at(a).bytes();
        ts_.set(a, std::move(k.outputs.at(a)));
      }
    k = KeptInputs{};
    add_output_tensors(problem_, ts_);
  } else {
    ts_ = make_tensors(problem_);
    fill_inputs(ts_, problem_, seed);
    digests_ = input_digests(ts_, problem_);
  }
  poison_outputs();
}

void CaseSession::poison_outputs() {
  // An input written in place keeps its values: the kernel reads them first.
  const std::vector<Arg> inputs = input_args(problem_);
  for (Arg a : output_args(problem_))
    if (std::find(inputs.begin(), inputs.end(), a) == inputs.end()) poison(ts_.at(a));
}

void CaseSession::adopt_inputs(TensorSet inputs) {
  ts_ = std::move(inputs);
  add_output_tensors(problem_, ts_);
  digests_ = input_digests(ts_, problem_);
  poison_outputs();
}

void CaseSession::prepare() {
  prepare([](Kernel&) {});
}

void CaseSession::prepare(const std::function<void(Kernel&)>& configure) {
  kernel_ = entry_.make();
  configure(*kernel_);
  kernel_->prepare(problem_, ts_, ctx_);
  rounds_before_bias_ = kernel_->rounds_before_bias();
}

void CaseSession::run() {
  kernel_->run(ts_);
}

void CaseSession::rearm() {
  kernel_->rearm(ts_);
}

void CaseSession::finish() {
  kernel_->finish(ts_);
}

Verdict CaseSession::verify(int64_t max_reference_macs) const {
  // The reference's buffers are resident blocks the process keeps (host_memory.h): not
  // the case's memory, and new pages for each would cost a sweep a third of its system time.
  const ResidentScope resident;
  // An input the pass writes in place is made again, from the seed, for the reference.
  TensorSet originals;
  const std::vector<Arg> inputs = input_args(problem_);
  for (Arg a : output_args(problem_))
    if (std::find(inputs.begin(), inputs.end(), a) != inputs.end()) {
      if (!seed_) throw Error(std::string(name(a)) + " is written in place, and these inputs have no seed");
      Tensor t(ts_.at(a).storage(), ts_.at(a).dims(), ts_.at(a).scale());
      fill_input(t, problem_, a, *seed_);
      originals.set(a, std::move(t));
    }
  return verify_outputs(problem_, ts_, digests_, max_reference_macs, rounds_before_bias_, &originals);
}

void CaseSession::release() {
  if (kernel_) kernel_->release();
  kernel_.reset();
}

void CaseSession::make_input_copies(int copies) {
  copies_.clear();
  next_copy_ = 0;
  for (int i = 0; i < copies; ++i) {
    TensorSet set;
    for (Arg a : input_args(problem_))
      set.set(a, ts_.at(a).clone());
    copies_.push_back(std::move(set));
  }
}

void CaseSession::rotate_inputs() {
  if (copies_.empty()) return;
  // Swapping keeps every buffer's values (all copies are equal); the set swapped in is
  // the one that has waited longest since it was last read.
  TensorSet& next = copies_[next_copy_];
  for (Arg a : input_args(problem_))
    std::swap(ts_.at(a), next.at(a));
  next_copy_ = (next_copy_ + 1) % copies_.size();
}

Verdict check_kernel(const KernelEntry& k, const Problem& p, uint64_t seed, const Context& ctx,
                     int64_t max_reference_macs) {
  Verdict v;
  v.status = Status::unsupported;
  if (std::string why = k.supports(p); !why.empty()) {
    v.reason = why;
    return v;
  }
  if (std::string why = oracle(p.op()).supports(p); !why.empty()) {
    v.reason = "no reference to check against: " + why;
    return v;
  }
  const std::string repro = repro_line(k, p, seed);
  // A case that cannot fit is out of memory before it is allocated, as a timed case is,
  // rather than killed midway by the OOM killer (inside a memory-limited container).
  if (std::string why = check_host_memory(p); !why.empty()) {
    v.status = Status::out_of_memory;
    v.reason = why;
    v.repro = repro;
    return v;
  }
  try {
    CaseSession s(k, p, ctx);
    s.allocate(seed);
    s.prepare();
    s.run();
    s.finish();
    s.release();
    v = s.verify(max_reference_macs);
  } catch (const std::bad_alloc&) {
    v = Verdict{};
    v.status = Status::out_of_memory;
    v.reason = "out of memory: an allocation failed";
  } catch (const std::exception& e) {
    v = Verdict{};
    v.status = Status::failed;
    v.reason = std::string("threw: ") + e.what();
  }
  v.repro = repro;
  return v;
}

}  // namespace lb
