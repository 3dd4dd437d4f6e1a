// Where a run's time goes, by phase: wall seconds, and the process's user and system CPU
// seconds (every thread, getrusage) spent in each. A phase is timed by a scope around it;
// nested scopes count in the innermost only, so the phases add up to at most the run's
// time and "other" (Google Benchmark's own work between calls, the listing, start-up) is
// the rest. The run's summary prints them and the results' context keeps them
// (layerbench_phases), so a slow sweep says whether its time went to the peaks, setting
// cases up and verifying them, the timed loops or writing results.
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <string>

namespace lb::bench {

// probes: what surrounds each timed loop (the CPU sampler's thread and the scheduler's
// per-thread times, the resident-memory high-water mark, the device probe, the counters).
enum class Phase { peaks, warm_up, set_up, verify, timed, probes, writing, count };
inline constexpr int kPhases = int(Phase::count);
const char* name(Phase p);

struct PhaseTime {
  double wall = 0, user = 0, sys = 0;  // seconds
};

// The run's totals so far: one per phase, then "other" and the whole run (since the first
// scope or reset_phases()).
struct PhaseTotals {
  std::array<PhaseTime, kPhases> phase;
  PhaseTime other, total;
};

void reset_phases();
PhaseTotals phase_totals();

// Times its phase from construction to destruction; the enclosing phase's clock stops
// meanwhile.
class PhaseScope {
 public:
  explicit PhaseScope(Phase p);
  ~PhaseScope();
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  int outer_;
};

// "warm-up 1.5 s (sys 0.7), set-up 5.6 s (sys 1.6), ..., other 0.6 s (sys 0.2); 15.2 s in all,
// user 13.9 s, sys 4.0 s": wall seconds per phase with their system CPU seconds; phases that
// took under 0.05 s are left out.
std::string phases_line(const PhaseTotals& t);
nlohmann::json phases_json(const PhaseTotals& t);

}  // namespace lb::bench
