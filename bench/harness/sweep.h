// A sweep: the cases of one run, expanded from problem sources × axes × kernels, in a
// deterministic order (so --shard and --resume agree between machines and runs).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bench/harness/axes.h"
#include "kernels/registry.h"
#include "kernels/verify.h"

namespace lb::bench {

struct SweepSpec {
  std::vector<std::string> suites, networks, problems;  // sources; none given: the smoke suite
  // The axes' values as given (axes.h: batch, dtype, relu, dir, cache, sync, threads); an
  // axis not given takes each problem's own value, or its default.
  AxisValues axes;
  std::vector<std::string> backends, kernels;  // filters; no backend filter: all but ref
  // Add, after each depthwise conv followed in its source by the pointwise 1x1 on its
  // output, the standard convolution that pair replaces (separable_standard()).
  bool separable_baseline = false;
  bool every_kernel = false;  // no filter means every kernel, ref and opt-in ones too (check)
  int shard = 0, shards = 1;  // run cases with index % shards == shard
};

// What became of a case beyond its counters, for the results file; filled as it runs.
struct CaseNotes {
  Status status = Status::passed;
  std::string details;         // the kernel's details() (oneDNN's implementation, ...)
  std::string reason;          // verdict or error, one line
  std::string repro;           // a command that reproduces a failure
  double max_bytes_used = -1;  // resident high-water mark above the baseline; -1 if never timed
  double rse = -1;             // relative standard error of the mean time, over the kept repetitions
  int kept_repetitions = 0;    // the repetitions that did work (the rest are dropped)
  std::string stop;            // why repetitions stopped: "rse" (target reached) or "cap"
};

struct Case {
  const KernelEntry* kernel = nullptr;
  Problem problem;
  int threads = 1;
  bool cold = false;        // flush caches between timed iterations
  bool blocking = false;    // GPU: wait for the device by sleeping, not spinning
  std::string name;         // case_name() (axes.h)
  std::string unsupported;  // non-empty: the kernel's reason; the case is an error entry
  CaseNotes notes;
};

// The standard convolution a depthwise -> pointwise pair replaces, when `pw` is a 1x1,
// g = 1, stride 1, unpadded conv on `dw`'s output (same mb and dtype) and `dw` is
// depthwise: the depthwise's input, kernel, stride, padding and dilation, the
// pointwise's oc, g = 1, relu none (the separable pair is compared without its ReLUs),
// named "<dw name>.<pw name>_standard" (unnamed if either is). nullopt otherwise.
std::optional<Problem> separable_standard(const Problem& dw, const Problem& pw);

// Throws lb::Error (one line) on an unknown suite, network, backend, kernel or a bad value.
std::vector<Case> expand(const SweepSpec& spec);

}  // namespace lb::bench
