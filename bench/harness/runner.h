// Runs one case as a Google Benchmark function. Google Benchmark calls the function
// several times per case (to find the iteration count, per repetition, and once more
// for the memory manager), so the expensive part — allocate and fill (seeded),
// prepare(), one verified run — happens on the first call and is kept until the next
// case starts. Every call then times run() (manual time, steady clock), samples CPU
// utilisation and tracks the resident high-water mark, and sets the counters:
//
//   lb_flop_per_s     model FLOPs / mean time per run()     lb_bytes_per_s  minimum bytes / time
//   lb_pct_peak       lb_flop_per_s / measured peak (dtype, threads), when one applies
//   lb_cpu_util_avg   process CPU time / wall time over the timed loop (100 = one core)
//   lb_cpu_util_peak  highest 10 ms sample of the same
//   lb_host_peak_bytes  resident high-water mark above the pre-case baseline
//   lb_tensor_bytes   bytes of our tensors;  lb_scratch_bytes  what the kernel holds beyond them
//   lb_pred_param_bytes, lb_pred_act_bytes, lb_pred_macs  the analytic model
//   lb_max_error, lb_tolerance, lb_mistrusted  the verification verdict
//
// A case that does not fit (the model's bytes exceed MemAvailable), throws, or fails
// verification becomes an error entry ("out of memory: ...", "failed: ... repro: ...")
// and is never timed.
#pragma once

#include <benchmark/benchmark.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/harness/peaks.h"
#include "bench/harness/sweep.h"

namespace lb::bench {

using Json = nlohmann::json;

struct RunOptions {
  uint64_t seed = 1;
  int64_t max_reference_macs = 0;
  const Peaks* peaks = nullptr;
};

// What a case learnt beyond its counters, for the results file.
struct CaseNotes {
  Json identity;       // lb_kernel, lb_backend, lb_device, lb_op, lb_type, lb_dtype, lb_relu, lb_problem, ...
  std::string status;  // passed, mistrusted, failed, unsupported, out_of_memory
  std::string details;         // the kernel's details() (oneDNN's implementation, ...)
  std::string reason;          // verdict or error, one line
  double max_bytes_used = -1;  // from the memory manager's run; -1 if it did not run
};
// Keyed by benchmark name; written by the runner, read by the reporter.
std::map<std::string, CaseNotes>& case_notes();

// Registers every case with Google Benchmark (manual time, microseconds).
void register_cases(const std::vector<Case>& cases, const RunOptions& options);

// Runs each distinct (kernel, dtype, threads) of the sweep once at batch 1, untimed and
// unrecorded, so that one-time start-up (thread pools, JIT code, library state) is not
// counted in the first case's host peak.
void warm_up(const std::vector<Case>& cases);

// SIGINT and SIGTERM stop the sweep: the case being timed and every later one end at
// once as "interrupted" (never written), finished cases stay on disk. A second signal
// kills the process the usual way.
void install_interrupt_handlers();
int interrupted_by();  // the signal, or 0
inline constexpr const char* kInterrupted = "interrupted";

// Releases the last case's kernel and tensors (call after the run).
void release_active_case();

// Google Benchmark's memory manager: max_bytes_used is the resident high-water mark
// above the current case's baseline during the extra memory run. (Google Benchmark
// 1.7.1 serialises its copy of the result through a dangling pointer, so the reporter
// writes the value kept in CaseNotes instead.)
class PeakMemoryManager : public benchmark::MemoryManager {
 public:
  void Start() override;
  void Stop(Result& result) override;
  void Stop(Result* result) override { Stop(*result); }
};

}  // namespace lb::bench
