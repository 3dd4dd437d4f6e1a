#include "bench/harness/runner.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <set>

#include "bench/harness/phases.h"
#include "bench/harness/probes.h"
#include "bench/harness/sysinfo.h"
#include "kernels/case_session.h"
#include "kernels/device.h"
#include "kernels/host_memory.h"
#include "kernels/model.h"

namespace lb::bench {
namespace {

// The last level cache's size, for cold runs (64 MiB where unknown).
size_t last_level_cache_bytes() {
  const size_t llc = cache_sizes().last_level;
  return llc ? llc : size_t(64) << 20;
}

// Cold host cases rotate copies of their inputs (CaseSession::make_input_copies): as
// many as make twice the last-level cache, so a run's inputs were last touched at least
// a cache's worth of data ago — but at most kColdCopyBytes in all and kMaxColdCopies
// sets, so a VM that reports a huge L3 does not make every case allocate a gigabyte.
constexpr double kColdCopyBytes = 256.0 * 1024 * 1024;
constexpr int kMaxColdCopies = 64;

// Warm-up runs a kernel's first case as it is up to this many MACs (a second or two at
// worst on one core), else at batch 1.
constexpr int64_t kWarmUpMacs = int64_t(5) << 30;

int cold_copies(const Model& m) {
  const double inputs = std::max(1.0, m.param_bytes + m.src_bytes);
  const double wanted = std::min(2.0 * double(last_level_cache_bytes()), kColdCopyBytes);
  return std::clamp(int(std::ceil(wanted / inputs)), 1, kMaxColdCopies);
}

// The case whose set-up is alive. Google Benchmark runs a case's calls one after another,
// or, with --benchmark_enable_random_interleaving, its repetitions shuffled among every
// other case's: then a case is set up again (without a second verification) each time
// one of its repetitions comes round.
struct Active {
  Case* c = nullptr;
  std::unique_ptr<CaseSession> session;
  std::unique_ptr<DeviceProbe> probe;
  std::unique_ptr<Timer> timer;
  const DeviceRuntime* device = nullptr;
  Model model;
  size_t baseline_rss = 0, setup_peak_rss = 0;
  size_t cold_copy_bytes = 0;  // the inputs' copies of a cold case: the method's, not the kernel's
  size_t verify_bytes = 0;     // what verification left resident (the reference's cache): not the case's
  size_t resident_lent = 0;    // the case's buffers in blocks resident before its baseline (host_memory.h)
};

Active& active() {
  static Active a;
  return a;
}

// What a case has done so far, over all its calls and set-ups.
struct Progress {
  bool started = false;                  // set up at least once
  bool verified = false;                 // its one verification is done (the verdict is in the notes)
  std::string error;                     // non-empty: every later call reports this error
  std::vector<double> repetition_means;  // seconds per run(), one per kept repetition
  int64_t repetition_iterations = 0;     // the iteration count they ran
  double timed_seconds = 0;              // all timed work so far
  bool repetitions_done = false;
  bool reported = false;  // a call Google Benchmark reports has run: its iteration probes are over
  bool looped = false;    // a call of this case has entered Google Benchmark's loop
};

Progress& progress(const Case& c) {
  static std::map<const Case*, Progress> all;
  return all[&c];
}

// Devices whose context a failed case left broken: what broke it, by device.
std::map<Device, std::string>& broken_devices() {
  static std::map<Device, std::string> broken;
  return broken;
}

// After kernel k failed: if its device no longer works, its later cases are not started.
void check_device_after_failure(const KernelEntry& k) {
  const Device d = k.info.device;
  if (broken_devices().count(d)) return;
  if (std::string why = device_runtime(d).why_broken(); !why.empty()) {
    broken_devices()[d] = k.info.id + " failed and left the context broken (" + why + ")";
    std::fprintf(stderr, "layerbench: %s: %s; the device's later cases are written as not run\n",
                 k.info.id.c_str(), why.c_str());
  }
}

// Ends the case with a status and a one-line reason; the kernel and tensors go. A
// failure carries the command that reproduces it.
void end_case(Active& a, Status status, const std::string& reason, uint64_t seed) {
  CaseNotes& notes = a.c->notes;
  notes.status = status;
  notes.reason = reason;
  std::string& error = progress(*a.c).error;
  error = reason;
  if (status == Status::failed) {
    notes.repro = repro_line(*a.c->kernel, a.c->problem, seed);
    error += " | repro: " + notes.repro;
  }
  a.session.reset();
  if (status == Status::failed) check_device_after_failure(*a.c->kernel);
}

// The memory a case needs before anything is allocated: device and host.
std::string check_memory(const Active& a) {
  if (std::string why = a.device->check_fits(a.model.tensor_bytes); !why.empty()) return why;
  // Our tensors, plus a pristine copy of the inputs for verification.
  const double needed = a.model.tensor_bytes + a.model.param_bytes + a.model.src_bytes;
  double available = double(available_bytes());
  // Verification's kept blocks (kernels/host_memory.h) make way for a case that needs them.
  if (available > 0 && needed > available && kept_resident_bytes() > 0) {
    drop_resident();
    available = double(available_bytes());
  }
  if (available > 0 && needed > available)
    return "out of memory: needs " + gib(needed) + " GiB, " + gib(available) + " GiB available";
  return {};
}

void set_up(Case& c, const RunOptions& o) {
  const PhaseScope phase(Phase::set_up);
  release_active_case();
  Active& a = active();
  a.c = &c;
  Progress& p = progress(c);
  p.started = true;
  a.device = &device_runtime(c.kernel->info.device);
  a.model = model(c.problem);
  if (std::string why = check_memory(a); !why.empty()) return end_case(a, Status::out_of_memory, why, o.seed);
  try {
    keep_inputs_only_for(c.problem, o.seed);  // what goes, goes before the baseline
    release_free_memory();
    begin_case_memory();
    reset_rss_peak();
    a.baseline_rss = rss_bytes();
    a.session = std::make_unique<CaseSession>(*c.kernel, c.problem, Context{c.threads});
    {
      const CaseMemoryScope case_memory;
      a.session->allocate(o.seed);
      a.probe = a.device->probe();
      a.probe->before_prepare();
      a.session->prepare();
      a.session->run();
      a.session->finish();
    }
    a.setup_peak_rss = rss_peak_bytes();
    a.resident_lent = case_resident_peak();
    a.probe->after_setup();
    c.notes.details = a.session->kernel().details();
    if (!p.verified) {  // the same seed's inputs every time: once is the whole answer
      const PhaseScope verifying(Phase::verify);
      const size_t before = rss_bytes();
      const Verdict v = a.session->verify(o.max_reference_macs);
      p.verified = true;
      c.notes.reason = v.reason;
      c.notes.status = v.status;
      if (v.status == Status::failed) return end_case(a, Status::failed, "failed: " + v.reason, o.seed);
      // The reference's buffers are blocks the process keeps (kernels/host_memory.h), and
      // it keeps its last few outputs (kernels/verify.cpp: three doubles per output element,
      // six times an f32 output) for the next kernels of the problem; smaller buffers,
      // freed, may stay in malloc's arenas: none is the case's memory, which the timed
      // runs' high-water mark would count. What is freed goes back; what stays (blocks the
      // pool had to add, here) raises the timed runs' baseline.
      release_free_memory();
      a.verify_bytes = rss_bytes() - std::min(before, rss_bytes());
    }
    if (c.cold && a.device->cold_by_copies()) {
      const size_t before = rss_bytes();
      a.session->make_input_copies(cold_copies(a.model));
      a.cold_copy_bytes = rss_bytes() - std::min(before, rss_bytes());
    }
    a.timer = a.device->timer(c.blocking);
  } catch (const std::bad_alloc&) {
    end_case(a, Status::out_of_memory,
             "out of memory: allocation failed (the model needs " + gib(a.model.tensor_bytes) + " GiB, " +
                 gib(double(available_bytes())) + " GiB available)",
             o.seed);
  } catch (const std::exception& e) {
    end_case(a, Status::failed, std::string("failed: threw: ") + e.what(), o.seed);
  }
}

volatile std::sig_atomic_t g_signal = 0;

void on_signal(int signo) {
  g_signal = signo;
}

// Ends this call of case c as an error. Google Benchmark (1.7's ComputeStats) checks that
// every repetition of a case reports the iteration count of the first, skipped ones
// included: a skip before the loop reports 0, a skip inside it the count the loop was
// given. So a case whose loop has run (an interrupt or an exception after some
// repetitions) skips inside the loop; one that never ran skips before it, every time.
void skip(benchmark::State& state, const Case& c, const char* why) {
  if (!progress(c).looped) return state.SkipWithError(why);
  for (auto _ : state) {
    state.SkipWithError(why);
    break;
  }
}

// A repetition past the stopping point: no work, its iterations counted in one batch
// (a million of them would cost milliseconds one by one); the reporter drops it.
void idle_call(benchmark::State& state, Progress& p) {
  p.looped = true;
  while (state.KeepRunningBatch(state.max_iterations))
    state.SetIterationTime(1e-9);
}

struct Timed {
  double device = 0, wall = 0;  // seconds over the loop: the Timer's, and the host's (loop included)
};

Timed timed_loop(benchmark::State& state, Active& a) {
  const PhaseScope phase(Phase::timed);
  Timed t;
  const Case& c = *a.c;
  const double start = wall_seconds();
  progress(c).looped = true;
  for (auto _ : state) {
    if (g_signal) {
      state.SkipWithError(kInterrupted);
      break;
    }
    // Outside the timed region: what the last run used up, and for a cold case the caches.
    a.session->rearm();
    if (c.cold) {
      a.device->flush_caches();
      a.session->rotate_inputs();
    }
    a.timer->start();
    a.session->run();
    const double dt = a.timer->stop();
    state.SetIterationTime(dt);
    t.device += dt;
  }
  t.wall = wall_seconds() - start;
  return t;
}

// Google Benchmark's first repetition probes for an iteration count with calls of
// growing length that are not reported: it reports the first call that lasted
// --benchmark_min_time or ran its cap of 10^9 iterations (1.7's ShouldReportIterationResults;
// warm-up calls, --benchmark_min_warmup_time, come before and are not reported either).
// Every later repetition runs that call's count. So the repetitions are the calls from
// the first reported one on, with the latest call's count; a stop is decided only there
// (with --repetitions 1,N a probe call taken for the one repetition left the reported
// call idle: 10^9 iterations at a picosecond).
void count_repetition(benchmark::State& state, Case& c, double seconds, const Repetitions& r) {
  constexpr int64_t kMaxIterations = 1000000000;  // Google Benchmark's, internal to it
  Progress& p = progress(c);
  p.timed_seconds += seconds;
  p.reported |= seconds >= r.min_time_s || int64_t(state.iterations()) >= kMaxIterations;
  if (!p.reported) return;
  if (int64_t(state.iterations()) != p.repetition_iterations) {
    p.repetition_iterations = int64_t(state.iterations());
    p.repetition_means.clear();
  }
  p.repetition_means.push_back(seconds / double(state.iterations()));
  const auto& m = p.repetition_means;
  const double n = double(m.size());
  double mean = 0, sq = 0;
  for (double x : m)
    mean += x / n;
  for (double x : m)
    sq += (x - mean) * (x - mean);
  const double rse = n > 1 && mean > 0 ? std::sqrt(sq / (n - 1)) / mean / std::sqrt(n) : -1;
  CaseNotes& notes = c.notes;
  notes.rse = rse;
  notes.kept_repetitions = int(m.size());
  if (r.fixed || int(m.size()) < r.min) return;
  if (rse >= 0 && rse <= r.rse_target)
    notes.stop = "rse";
  else if (p.timed_seconds >= r.cap_seconds || int(m.size()) >= r.max)
    notes.stop = "cap";
  p.repetitions_done = !notes.stop.empty();
}

// The case's resident high-water mark above its baseline: set-up, or the timed runs
// less the cold method's input copies and what verification left resident; plus what was
// resident before the baseline was taken: the inputs and outputs lent by the case before,
// and the kept blocks its buffers were made in (held from set-up to the end).
double host_peak(const Active& a) {
  const size_t timed = rss_peak_bytes(), setup = a.setup_peak_rss, base = a.baseline_rss;
  const size_t timed_base = base + a.cold_copy_bytes + a.verify_bytes;
  const size_t above = std::max(setup > base ? setup - base : 0, timed > timed_base ? timed - timed_base : 0);
  return double(above + a.session->reused_bytes() + a.resident_lent);
}

// The bandwidth ceiling of a case, in bytes per second (none: no bandwidth bounds it):
// - a GPU case: the device's copy; a cold host case (its inputs last touched twice the
//   last-level cache ago): DRAM;
// - one whose minimum traffic S fits in its threads' L1 caches: none;
// - one that fits in what the caches keep between its runs, C (the last level and its
//   threads' L2s): L2, whose bandwidth bounds every level between L1 and DRAM;
// - a larger one: at least S - C of its bytes come from DRAM in every run, so its rate is
//   at most DRAM x S / (S - C) (and at most L2's), which tends to DRAM's as S grows. Not
//   DRAM's alone: part of it still hits. On the Zen 5 VM (32 MiB L3), MobileNet's dw2 at
//   batch 32 (S = 3.1x the L3) read 122 % of the 1-thread DRAM peak (blocked depthwise
//   kernel), 82 % of this ceiling; with L2's ceiling, which applied up to 4x the last
//   level before, such cases read 5-23 %.
// DRAM is the fastest of read, write and triad at the thread count (Peaks::bandwidth).
std::optional<double> bandwidth_ceiling(const Case& c, const Model& m, const Peaks& peaks) {
  const bool gpu = c.kernel->info.device == Device::gpu;
  const Peak* dram = peaks.bandwidth(MemoryLevel::dram, c.threads, gpu);
  const std::optional<double> dram_bw = dram ? std::optional(dram->ops_per_second) : std::nullopt;
  if (gpu || c.cold) return dram_bw;
  const CacheSizes& caches = cache_sizes();
  if (m.min_bytes <= double(caches.l1d) * c.threads) return std::nullopt;
  const Peak* l2 = peaks.bandwidth(MemoryLevel::l2, c.threads);
  const double kept = double(last_level_cache_bytes()) + double(caches.l2) * c.threads;
  if (m.min_bytes <= kept) return l2 ? std::optional(l2->ops_per_second) : std::nullopt;
  if (!dram_bw) return std::nullopt;  // no DRAM peak: nothing bounds it from above that we know
  const double beyond = *dram_bw * m.min_bytes / (m.min_bytes - kept);
  return l2 ? std::min(beyond, l2->ops_per_second) : beyond;
}

// % of peak (compute), % of bandwidth (bandwidth_ceiling), and where the roofline puts the
// case: memory-bound when its arithmetic intensity is below the ridge point (compute peak
// / bandwidth), and its rate as a share of that roof, min(peak, AI x bandwidth).
void set_ceiling_counters(benchmark::State& state, const Case& c, const Model& m, double seconds,
                          const Peaks& peaks) {
  auto& k = state.counters;
  const bool gpu = c.kernel->info.device == Device::gpu;
  const Peak* compute = peaks.find(c.problem.dt, c.threads, gpu);
  if (compute) k["lb_pct_peak"] = 100.0 * m.flops / seconds / compute->ops_per_second;
  const std::optional<double> bw = bandwidth_ceiling(c, m, peaks);
  if (!bw || m.min_bytes <= 0) return;
  k["lb_pct_bw"] = 100.0 * m.min_bytes / seconds / *bw;
  k["lb_bw_peak_bytes_per_s"] = *bw;
  if (!compute) return;
  const double roof = std::min(compute->ops_per_second, m.intensity * *bw);
  k["lb_memory_bound"] = m.intensity * *bw < compute->ops_per_second ? 1 : 0;
  k["lb_pct_roof"] = 100.0 * m.flops / seconds / roof;
}

void set_counters(benchmark::State& state, const Active& a, const Timed& t, double peak_bytes,
                  const RunOptions& o) {
  const Case& c = *a.c;
  const double seconds = t.device / double(state.iterations());
  const Model& m = a.model;
  auto& k = state.counters;
  k["lb_flop_per_s"] = m.flops / seconds;
  k["lb_bytes_per_s"] = m.min_bytes / seconds;
  const bool gpu = c.kernel->info.device == Device::gpu;
  if (o.peaks) set_ceiling_counters(state, c, m, seconds, *o.peaks);
  k["lb_host_peak_bytes"] = peak_bytes;
  k["lb_tensor_bytes"] = double(a.session->tensors().bytes());
  k["lb_scratch_bytes"] = double(a.session->kernel().scratch_bytes());
  k["lb_saved_bytes"] = double(a.session->kernel().saved_bytes());
  k["lb_pred_param_bytes"] = m.param_bytes;
  k["lb_pred_act_bytes"] = m.src_bytes + m.dst_bytes + m.relu_bytes;
  k["lb_pred_macs"] = double(m.macs);
  k["lb_pred_macs_on_input"] = double(m.macs_on_input);
  if (c.problem.pass != Pass::fwd) {  // forward cases' records read as before
    k["lb_pred_saved_bytes"] = m.saved_bytes;
    k["lb_pred_train_bytes"] = m.training_bytes;
  }
  k["lb_mistrusted"] = c.notes.status == Status::mistrusted ? 1 : 0;
  k["lb_batch"] = double(c.problem.batch());
  if (gpu) {
    k["lb_host_wall_per_run_s"] = t.wall / double(state.iterations());
    k["lb_blocking_sync"] = c.blocking ? 1 : 0;
  }
}

void run_case(benchmark::State& state, Case& c, const RunOptions& o) {
  if (g_signal) return skip(state, c, kInterrupted);
  if (!c.unsupported.empty()) {
    c.notes.status = Status::unsupported;
    c.notes.reason = c.unsupported;
    return state.SkipWithError(("unsupported: " + c.unsupported).c_str());
  }
  Progress& p = progress(c);
  if (p.started) {  // a later call: its error, or nothing left to time, needs no set-up
    state.SetLabel(print(c.problem));
    if (!p.error.empty()) return skip(state, c, p.error.c_str());
    if (p.repetitions_done) return idle_call(state, p);
  } else if (o.budget_seconds > 0 &&
             std::chrono::duration<double>(std::chrono::steady_clock::now() - o.started).count() >
                 o.budget_seconds) {
    char spent[64];
    std::snprintf(spent, sizeof spent, " (--budget %g s spent)", o.budget_seconds);
    c.notes.status = Status::not_run;  // not started: the budget is spent
    c.notes.reason = std::string(kBudgetReason) + spent;
    return state.SkipWithError(c.notes.reason.c_str());
  } else if (const auto broken = broken_devices().find(c.kernel->info.device);
             broken != broken_devices().end()) {
    c.notes.status = Status::not_run;  // not started: its device no longer works
    c.notes.reason = std::string(kBrokenReason) + ": " + broken->second;
    return state.SkipWithError(c.notes.reason.c_str());
  }
  Active& a = active();
  if (a.c != &c) {
    if (o.steadiness && !p.started) o.steadiness->window();
    set_up(c, o);
  }
  state.SetLabel(print(c.problem));
  if (!p.error.empty()) return skip(state, c, p.error.c_str());

  std::optional<PhaseScope> probing(Phase::probes);
  CpuSampler sampler;
  reset_rss_peak();
  a.probe->begin_timed();
  sampler.start();
  Timed t;
  try {
    t = timed_loop(state, a);
  } catch (const std::exception& e) {
    sampler.stop();
    end_case(a, Status::failed, std::string("failed: threw while timed: ") + e.what(), o.seed);
    return state.SkipWithError(p.error.c_str());
  }
  sampler.stop();
  // A signal during the loop: this repetition is not a measurement (an error, so that the
  // reporter drops the whole case), however many iterations it finished.
  if (g_signal) return state.SkipWithError(kInterrupted);
  Counters device;
  a.probe->end_timed(t.device, t.wall, device);
  for (const auto& [key, value] : device)
    state.counters[key] = value;
  state.counters["lb_cpu_util_avg"] = sampler.average();
  state.counters["lb_cpu_util_peak"] = sampler.peak();
  if (sampler.sched_run() >= 0) {  // the scheduler's accounting of the same loop
    state.counters["lb_cpu_sched_run_pct"] = sampler.sched_run();
    state.counters["lb_cpu_sched_wait_pct"] = sampler.sched_wait();
  }
  const double peak = host_peak(a);
  set_counters(state, a, t, peak, o);
  c.notes.max_bytes_used =
      std::max(c.notes.max_bytes_used, peak);  // Google Benchmark's field, over every call
  count_repetition(state, c, t.device, o.repetitions);
  probing.reset();
}

}  // namespace

std::string cold_cache_method() {
  return "host: each case rotates copies of its inputs and weights between timed runs, as many as make twice "
         "the last-level cache (" +
         std::to_string(last_level_cache_bytes() >> 20) + " MiB reported), at most " +
         std::to_string(int(kColdCopyBytes) >> 20) + " MiB and " + std::to_string(kMaxColdCopies) +
         " copies (weights a kernel packed in prepare() stay warm); GPU: L2 flushed before each run";
}

void release_active_case() {
  active() = Active{};  // the session's destructor releases the kernel
}

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESETHAND;  // a second signal takes the default action
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int interrupted_by() {
  return g_signal;
}

void warm_up(const std::vector<Case>& cases) {
  const PhaseScope phase(Phase::warm_up);
  std::set<std::string> done;
  for (const Case& c : cases) {
    if (g_signal) return;  // every case will say "interrupted"
    if (!c.unsupported.empty()) continue;
    const std::string key =
        c.kernel->info.id + "|" + std::string(name(c.problem.dt)) + "|" + std::to_string(c.threads);
    if (!done.insert(key).second) continue;
    try {
      // The case's own problem where it is cheap: a library's lazily made buffers (oneDNN's
      // GEMM packing space for a batch's shape, 3 MB) are start-up too, and a batch-1
      // problem takes another path that does not make them.
      const bool cheap = model(c.problem).macs <= kWarmUpMacs;
      CaseSession s(*c.kernel, cheap ? c.problem : with_batch(c.problem, 1), Context{c.threads});
      s.allocate(0);
      s.prepare();
      s.run();
      s.finish();
    } catch (const std::exception& e) {
      // The case itself reports what went wrong; said here too, since a broken device
      // context would otherwise surface first in a later, innocent case — which is
      // why the device is asked whether it still works.
      std::fprintf(stderr, "layerbench: warm-up of %s failed: %s\n", key.c_str(), e.what());
      check_device_after_failure(*c.kernel);
    }
  }
}

void register_cases(std::span<Case> cases, const RunOptions& options) {
  for (Case& c : cases) {
    auto* b = benchmark::RegisterBenchmark(c.name.c_str(),
                                           [&c, options](benchmark::State& s) { run_case(s, c, options); });
    // real_time: the device timer's time per run(); cpu_time: the whole process's CPU time
    // over the loop (every thread a multithreaded kernel uses, not only the caller's).
    b->UseManualTime()->MeasureProcessCPUTime()->Unit(benchmark::kMicrosecond);
  }
}

std::string benchmark_name(const Case& c) {
  return c.name + "/process_time/manual_time";  // MeasureProcessCPUTime(), UseManualTime()
}

}  // namespace lb::bench
