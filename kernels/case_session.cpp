#include "kernels/case_session.h"

#include <new>
#include <utility>

#include "kernels/common.h"

namespace lb {

CaseSession::CaseSession(const KernelEntry& kernel, Problem problem, Context ctx)
    : entry_(kernel), problem_(std::move(problem)), ctx_(ctx) {}

CaseSession::~CaseSession() {
  release();
}

void CaseSession::allocate(uint64_t seed) {
  ts_ = make_tensors(problem_);
  fill_inputs(ts_, problem_, seed);
  digests_ = input_digests(ts_, problem_.op());
  for (Arg a : output_args(problem_))
    poison(ts_.at(a));
}

void CaseSession::adopt_inputs(TensorSet inputs) {
  ts_ = make_tensors(problem_);
  for (Arg a : input_args(problem_.op()))
    ts_.set(a, std::move(inputs.at(a)));
  digests_ = input_digests(ts_, problem_.op());
  for (Arg a : output_args(problem_))
    poison(ts_.at(a));
}

void CaseSession::prepare() {
  kernel_ = entry_.make();
  kernel_->prepare(problem_, ts_, ctx_);
}

void CaseSession::run() {
  kernel_->run(ts_);
}

void CaseSession::finish() {
  kernel_->finish(ts_);
}

Verdict CaseSession::verify(int64_t max_reference_macs) const {
  return verify_outputs(problem_, ts_, digests_, max_reference_macs);
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
    for (Arg a : input_args(problem_.op()))
      set.set(a, ts_.at(a).clone());
    copies_.push_back(std::move(set));
  }
}

void CaseSession::rotate_inputs() {
  if (copies_.empty()) return;
  // Swapping keeps every buffer's values (all copies are equal); the set swapped in is
  // the one that has waited longest since it was last read.
  TensorSet& next = copies_[next_copy_];
  for (Arg a : input_args(problem_.op()))
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
