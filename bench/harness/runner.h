// Runs one case as a Google Benchmark function. Google Benchmark calls the function several
// times per case (to find the iteration count, then once per repetition), so the expensive
// part — the CaseSession's allocate, prepare and one verified run — happens on the first call
// and is kept until the next case starts (with --benchmark_enable_random_interleaving,
// whenever one of the case's repetitions comes round after another case's; verified the first
// time only). Every call then times run() with the device's Timer (manual time), samples CPU
// utilisation, tracks the resident high-water mark and sets the counters:
//
//   lb_flop_per_s     model FLOPs (on the input) / mean time per run()   lb_bytes_per_s  minimum bytes / time
//   lb_pct_peak       lb_flop_per_s / measured peak (dtype, threads), when one applies
//   lb_cpu_util_avg   process CPU time / wall time over the timed loop (100 = one core)
//   lb_cpu_util_peak  highest 10 ms sample of the same
//   lb_cpu_sched_run_pct, lb_cpu_sched_wait_pct  the scheduler's accounting of the same loop:
//                     time on a CPU, and time runnable but waiting for one (100 = one thread)
//   lb_host_peak_bytes  resident high-water mark above the pre-case baseline (also written as
//                     Google Benchmark's max_bytes_used; no separate memory-manager run is made)
//   lb_tensor_bytes   bytes of our tensors (the pass's: a backward pass's gradients too);
//                     lb_scratch_bytes  what the kernel holds beyond them, lb_saved_bytes  of
//                     that, what a training forward keeps for the backward (Kernel::saved_bytes)
//   lb_pred_param_bytes, lb_pred_act_bytes, lb_pred_macs, lb_pred_macs_on_input  the analytic
//                     model (MACs of the pass); a pass other than fwd adds lb_pred_saved_bytes and
//                     lb_pred_train_bytes (kernels/model.h)
//   lb_mistrusted     the verification verdict;  lb_rse_pct  the repetitions' relative standard error
//   GPU cases add what the device's probe reports (kernels/device.h) and lb_host_wall_per_run_s.
//
// Adaptive repetitions (nvbench's idea on Google Benchmark's repetitions): a case stops
// repeating once the relative standard error of its mean time is at most the target, or
// its time cap is reached (at least min_repetitions either way); the notes record which
// ("rse" or "cap"). Google Benchmark still calls the remaining repetitions; they do no
// work and the reporter drops them and recomputes the aggregates from the kept ones.
//
// A case that does not fit (the model's bytes exceed available memory), throws, or fails
// verification becomes an error entry ("out of memory: ...", "failed: ... repro: ...")
// and is never timed.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <span>
#include <string>

#include "bench/harness/peaks.h"
#include "bench/harness/sweep.h"

namespace lb::bench {

// How long each case is timed.
struct Repetitions {
  double rse_target = 0.01;  // stop once the mean's relative standard error is at most this
  int min = 3, max = 20;     // repetitions kept, whatever the noise
  double cap_seconds = 2.0;  // stop once this much timed work is done (and min reached)
  bool fixed = false;        // --benchmark_repetitions given: exactly that many, as asked
  // Google Benchmark's --benchmark_min_time: a call of a case's first repetition shorter
  // than this (and under its 10^9 iteration cap) is a probe for the iteration count, not
  // reported, so no repetition.
  double min_time_s = 0.1;
};

struct RunOptions {
  uint64_t seed = 1;
  int64_t max_reference_macs = 0;
  const Peaks* peaks = nullptr;
  Repetitions repetitions;
  // --budget: no case starts once this many seconds have passed since `started` (0: no
  // limit); those left are written as not_run, kBudgetReason, and --resume runs them.
  double budget_seconds = 0;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  // --steadiness: one window of the probe before each case starts (null: not probed).
  SteadinessProbe* steadiness = nullptr;
};
inline constexpr const char* kBudgetReason = "not run: time budget";
// After a case on a device fails, the harness asks the device whether it still works
// (DeviceRuntime::why_broken()); if not, that device's later cases are not started but
// written as not_run, kBrokenReason + which kernel broke it, and --resume (a new
// process, a new context) runs them.
inline constexpr const char* kBrokenReason = "not run: device context broken";

// Registers every case with Google Benchmark (manual time, microseconds). The cases
// must outlive the run: each carries its notes.
void register_cases(std::span<Case> cases, const RunOptions& options);
// The case's full name in Google Benchmark, as register_cases() registers it (the case's
// name and the time types it sets): what --benchmark_filter is matched against.
std::string benchmark_name(const Case& c);

// Runs each distinct (kernel, dtype, threads) of the sweep once (its first case, or that
// case at batch 1 when large), untimed and
// unrecorded, so that one-time start-up (thread pools, JIT code, library state) is not
// counted in the first case's host peak. A failure is printed and left to the case.
void warm_up(const std::vector<Case>& cases);

// SIGINT and SIGTERM stop the sweep: the repetition being timed and every later one end
// at once as "interrupted"; the reporter drops every object of a case with such a
// repetition (none is written, --resume runs it again), finished cases stay on disk. A
// second signal kills the process the usual way.
void install_interrupt_handlers();
int interrupted_by();  // the signal, or 0
inline constexpr const char* kInterrupted = "interrupted";

// How cold cases are made cold, for the results context.
std::string cold_cache_method();

// Releases the last case's kernel and tensors (call after the run).
void release_active_case();

}  // namespace lb::bench
