// Verification: run a kernel and the reference on the same seeded inputs and compare.
//
// Outputs are poisoned (a NaN pattern) before each run; an element still holding the
// poison was never written, and any NaN or Inf is a failure. The error of element i
// is |got - ref| / (|ref| + rms(ref)): relative where the output is large, absolute on
// the output's own scale where it is near zero (where ReLU clips, say). It must not
// exceed tolerance(p). A reference output that is mostly zeros proves little: the
// verdict is then "mistrusted" rather than "passed".
//
// Big problems are checked on a sample of the batch: the reference runs on a few batch
// samples (first, last and evenly spread between; every sample is independent in all
// three ops) so that it costs at most max_reference_macs, and those samples of the
// kernel's output are compared. The poison and NaN scan always covers every element.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/registry.h"

namespace lb {

// What became of a case, one vocabulary for check, run and the results files:
// passed · failed (wrong output, or the kernel threw) · mistrusted (passed on an output
// too sparse to prove much) · unsupported (the kernel declines the problem, with the
// reason) · out_of_memory · not_run (e.g. over check's --max-macs).
enum class Status { passed, failed, mistrusted, unsupported, out_of_memory, not_run };
inline constexpr Status kAllStatuses[] = {Status::passed,      Status::failed,        Status::mistrusted,
                                          Status::unsupported, Status::out_of_memory, Status::not_run};
std::string_view name(Status s);  // "passed", ..., "out_of_memory", "not_run"

struct Verdict {
  Status status = Status::passed;
  std::string reason;  // one line: why it failed / is unsupported / is mistrusted; the error if passed
  double max_error = 0.0;
  double tolerance = 0.0;
  std::string repro;  // a command that reproduces the check, for every verdict but unsupported
};

// The number of products summed into one output value, the length over which rounding
// errors accumulate (LSTM: per gate, times steps and layers, which carry the error on).
int64_t accumulation_length(const Problem& p);

// The largest error allowed for p: a function of op, dtype and accumulation length.
double tolerance(const Problem& p);

// More than this share of exact zeros in the reference output makes a pass "mistrusted".
inline constexpr double kMistrustZeroFraction = 0.8;

// Compares one output tensor against the reference's (same shape).
Verdict compare(const Problem& p, std::string_view what, const Tensor& got, const Tensor& expect);

// About a second of the reference's double-precision loops on one core.
inline constexpr int64_t kDefaultReferenceMacs = int64_t(1) << 29;

// Checks the outputs a kernel wrote into `got`: inputs untouched (their digests equal
// `before`, taken right after filling), every output written and finite, values within
// tolerance of the reference (on a sample of the batch, see above; 0 = the whole batch).
Verdict verify_outputs(const Problem& p, const TensorSet& got, const InputDigests& before,
                       int64_t max_reference_macs = kDefaultReferenceMacs);

// check_kernel(), the full check of one kernel on one problem: kernels/case_session.h.

// The batch samples verify_outputs compares: all of 0..batch-1 when the reference for
// the whole batch fits the budget, else a few spread over it.
std::vector<int64_t> verification_samples(const Problem& p, int64_t max_reference_macs);

// The reference kernel (backend "ref") for an op.
const KernelEntry& oracle(Op op);

std::string repro_line(const KernelEntry& k, const Problem& p, uint64_t seed);

}  // namespace lb
