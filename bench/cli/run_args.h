// The arguments of `layerbench run` and `layerbench check`, parsed and validated in one
// place before anything runs: the problems and axes (a SweepSpec, which expand() turns
// into cases for both commands) and each command's own settings. Every error is one
// line naming the flag or token (lb::Error).
#pragma once

#include <string>
#include <vector>

#include "bench/harness/runner.h"
#include "bench/harness/sweep.h"

namespace lb::cli {

struct RunArgs {
  bench::SweepSpec spec;
  bench::RunOptions options;
  std::string out;      // results file (.json), empty: none
  std::string machine;  // --machine NAME; "" for $LB_MACHINE or the default (bench/harness/machine.h)
  bool resume = false, remeasure_peaks = false, list = false;
  bool resume_force = false;      // --resume-force: continue a log whose settings differ
  bool overwrite = false;         // replace an existing result
  bool gbench_format = false;     // --benchmark_format given: stdout is Google Benchmark's alone
  double noisy_cv = 0.05;         // repetitions' coefficient of variation that marks a case noisy
  double steadiness_seconds = 0;  // --steadiness: how long to probe the machine's steadiness (0: not)
  bool interleaved = false;       // --benchmark_enable_random_interleaving: repetitions shuffled across cases
  std::vector<std::string> gbench;  // Google Benchmark's flags: our defaults, then the user's (checked:
                                    // those that would break whole cases or the results file are refused)
};
RunArgs parse_run_args(const std::vector<std::string>& argv);
// The last value given to Google Benchmark's --FLAG= in `gbench` (ours first, then the
// user's), or "".
std::string gbench_value(const std::vector<std::string>& gbench, const std::string& flag);
extern const char* const kRunUsage;

struct CheckArgs {
  bench::SweepSpec spec;
  uint64_t seed = 1;
  int64_t max_macs = 0;        // problems with more MACs are not run (0: no limit)
  int64_t reference_macs = 0;  // verify on a sample of the batch within this (0: the whole batch)
};
CheckArgs parse_check_args(const std::vector<std::string>& argv);

}  // namespace lb::cli
