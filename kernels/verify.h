// Verification: run a kernel and the reference on the same seeded inputs and compare.
//
// Outputs are poisoned (a NaN pattern) before each run; an element still holding the
// poison was never written, and any NaN or Inf is a failure. Each element must then be
// within its own allowed error of the reference's exact (double) value:
//   allowed_i = per_magnitude · magnitude_i + per_stored · stored_i + absolute
// where magnitude_i and stored_i are what the reference computes alongside the value
// (kernels/ref/kernels.h): for a dot product, Σ|xᵢ·wᵢ| + |b|, the size of the terms
// whose rounding errors a kernel makes however much they cancel, and |y|, which the
// output's rounding to its storage scales with. The units come from the dtype, the
// accumulation and the output's storage (allowance(), derived in verify.cpp). A
// reference output that is mostly zeros proves little: the verdict is then "mistrusted"
// rather than "passed".
//
// Big problems are checked on a sample of the batch: the reference runs on a few batch
// samples (first, last and evenly spread between; every sample is independent in all
// three ops) so that it costs at most max_reference_macs, and those samples of the
// kernel's output are compared. The poison and NaN scan always covers every element.
//
// Every output of a pass is compared against its own Expected, with its own accumulation
// length. A backward pass is checked by the reference's backward on the same inputs:
// diff_src on a sample of the batch, as above; dW and db, which sum over the whole batch,
// on a sample of their output channels instead, each over the whole batch; a train case's
// forward outputs as a forward's, and its backward with the ReLU mask of its own dst.
#pragma once

#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "kernels/host_memory.h"
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

// How many verdicts of each status: check's last line, "3 passed, 0 failed, ..., 1 not_run".
struct StatusCounts {
  int of[std::size(kAllStatuses)] = {};
  void add(Status s) { ++of[int(s)]; }
  std::string summary() const;
};

struct Verdict {
  Status status = Status::passed;
  std::string reason;  // one line: why it failed / is unsupported / is mistrusted; the error if passed
  // The compared element with the largest error/allowed: its error |got - ref| and its
  // allowed error. Passed (or mistrusted) when max_error <= tolerance; both 0 if nothing
  // was compared.
  double max_error = 0.0;
  double tolerance = 0.0;
  std::string repro;  // a command that reproduces the check, for every verdict but unsupported
};

// The units of one output element's allowed error, for p written to a tensor like `out`:
//   allowed = per_magnitude · magnitude + per_stored · stored + per_sum · |y - b| + absolute
// per_magnitude: the rounding of inputs inside the kernel and of the accumulation, a
// function of dtype and accumulation length; per_stored and absolute: the rounding to
// out's storage; per_sum: for a kernel that rounds the sum before it adds the bias
// (Kernel::rounds_before_bias), one unit of out's storage times that sum, y - b — not
// times the magnitude Σ|x·w|, which at K = 2048 in bf16 allowed twice the bias itself
// (a kernel that dropped it passed).
struct Allowance {
  double per_magnitude = 0.0, per_stored = 0.0, per_sum = 0.0, absolute = 0.0;
  double of(double magnitude, double stored, double sum = 0.0) const;
};
// `arg`: which output of p's pass `out` is (its accumulation length: ops/traits.h).
Allowance allowance(const Problem& p, const Tensor& out, bool rounds_before_bias = false, Arg arg = Arg::dst);

// More than this share of exact zeros in the reference output makes a pass "mistrusted".
inline constexpr double kMistrustZeroFraction = 0.8;

// What the reference says of one output tensor, per element in its layout: the exact
// value (ReLU applied as the output's mode asks), its magnitude and stored (see above).
struct Expected {
  Doubles value, magnitude, stored;
};

// Compares one output tensor against the reference's (same number of elements).
Verdict compare(const Problem& p, std::string_view what, const Tensor& got, const Expected& expect);

// About a second of the reference's double-precision loops on one core.
inline constexpr int64_t kDefaultReferenceMacs = int64_t(1) << 29;

// Checks the outputs a kernel wrote into `got`: inputs untouched (their digests equal
// `before`, taken right after filling), every output written and finite, values within
// their allowed error of the reference (on a sample of the batch, see above; 0 = the whole
// batch). An input the pass writes in place (diff_dst under relu=inplace) is an output
// here, and the reference reads its original value from `originals`.
Verdict verify_outputs(const Problem& p, const TensorSet& got, const InputDigests& before,
                       int64_t max_reference_macs = kDefaultReferenceMacs, bool rounds_before_bias = false,
                       const TensorSet* originals = nullptr);

// check_kernel(), the full check of one kernel on one problem: kernels/case_session.h.

// The batch samples verify_outputs compares: all of 0..batch-1 when the reference for
// the whole batch fits the budget, else a few spread over it.
std::vector<int64_t> verification_samples(const Problem& p, int64_t max_reference_macs);
// The same for the outputs of a backward pass that sum over the batch (dW, db): of their
// `rows` output channels, each computed over the whole batch, as many as the budget buys.
std::vector<int64_t> verification_rows(const Problem& p, int64_t rows, int64_t max_reference_macs);

// The reference kernel (backend "ref") for an op.
const KernelEntry& oracle(Op op);

std::string repro_line(const KernelEntry& k, const Problem& p, uint64_t seed);

}  // namespace lb
