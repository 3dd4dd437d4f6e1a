#include "bench/harness/run.h"

#include <benchmark/benchmark.h>
#include <regex.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "bench/cli/args.h"
#include "bench/cli/format.h"
#include "bench/cli/run_args.h"
#include "bench/harness/json_text.h"
#include "bench/harness/machine.h"
#include "bench/harness/peaks.h"
#include "bench/harness/phases.h"
#include "bench/harness/probes.h"
#include "bench/harness/results.h"
#include "bench/harness/runner.h"
#include "bench/harness/sweep.h"
#include "bench/harness/sysinfo.h"
#include "kernels/common.h"
#include "kernels/device.h"
#include "kernels/registry.h"

namespace lb::bench {
namespace {

int list_cases(const std::vector<Case>& cases) {  // a dry run: the cases, in order
  for (const Case& c : cases)
    std::cout << c.name << (c.unsupported.empty() ? "" : "  unsupported: " + c.unsupported) << "\n";
  return 0;
}

// The cases a --resume still has to run: those without a whole copy in the log.
std::vector<Case> cases_to_run(std::vector<Case> all, const RunLog* log, const std::string& out) {
  if (!log) return all;
  for (const std::string& name : log->partial())
    std::fprintf(stderr, "resume: %s is not whole in %sl (the run stopped within it); it runs again\n",
                 name.c_str(), out.c_str());
  if (log->previous().order.empty()) return all;
  // A case the run never started (written as not_run: the budget was spent, or its
  // device's context was broken by an earlier case) runs now; its copy in the log is
  // replaced by the new one.
  auto not_started = [](const std::vector<Json>& runs) {
    return std::all_of(runs.begin(), runs.end(),
                       [](const Json& r) { return r.value("lb_status", "") == "not_run"; });
  };
  std::vector<Case> cases;
  size_t done = 0;
  for (Case& c : all) {
    const auto logged = log->previous().runs.find(c.name);
    if (logged == log->previous().runs.end() || not_started(logged->second))
      cases.push_back(std::move(c));
    else
      ++done;
  }
  std::fprintf(stderr, "resume: %zu cases already in %sl, %zu to run\n", done, out.c_str(), cases.size());
  return cases;
}

// Whether a case runs a GPU kernel (only those the kernel supports, or any).
bool any_gpu_case(const std::vector<Case>& cases, bool supported_only = true) {
  return std::any_of(cases.begin(), cases.end(), [&](const Case& c) {
    return (!supported_only || c.unsupported.empty()) && c.kernel->info.device == Device::gpu;
  });
}

// The thread counts of a sweep's supported CPU cases.
std::vector<int> cpu_threads_of(const std::vector<Case>& cases) {
  std::vector<int> cpu_threads;
  for (const Case& c : cases)
    if (c.unsupported.empty() && c.kernel->info.device == Device::cpu &&
        std::find(cpu_threads.begin(), cpu_threads.end(), c.threads) == cpu_threads.end())
      cpu_threads.push_back(c.threads);
  return cpu_threads;
}

Peaks peaks_for(const std::vector<Case>& cases, bool remeasure, bool resuming) {
  return Peaks::for_threads(cpu_threads_of(cases), any_gpu_case(cases), remeasure, resuming,
                            [] { return interrupted_by() != 0; });
}

// The GPU's model for the machine's identity; "" without one (the runtime then says
// why, and the reason must not change the machine's name).
std::string gpu_model(const std::vector<std::pair<std::string, std::string>>& gpu_context) {
  for (const auto& [key, value] : gpu_context)
    if (key == "layerbench_gpu_model" && value.rfind("none", 0) != 0) return value;
  return {};
}

Machine this_machine(const cli::RunArgs& args) {
  return identify_machine(args.machine, gpu_model(device_runtime(Device::gpu).context()));
}

// The peaks as numbers, for scripts: [{"kind", "dtype", "engine", "device", "threads",
// "ops_per_second", "unit", "method", "measured_unix"}] ("f32_fma" is dtype f32 on engine
// fma; bandwidths — "bw_dram_triad", "bw_l2_read", a GPU's "d2d_copy" — have no dtype and
// are in bytes per second; measured_unix: when, seconds since 1970, 0 where not recorded).
Json peaks_as_json(const Peaks& peaks) {
  Json all = Json::array();
  for (const Peak& p : peaks.all()) {
    const bool gpu = p.kind.rfind("gpu_", 0) == 0, bytes = is_bandwidth(p.kind);
    std::string kind = gpu ? p.kind.substr(4) : p.kind;
    if (kind.rfind("bw_", 0) == 0) kind = kind.substr(3);
    const size_t cut = bytes ? 0 : kind.find('_');
    all.push_back({{"kind", p.kind},
                   {"dtype", bytes ? "" : kind.substr(0, cut)},
                   {"engine", bytes                      ? kind
                              : cut == std::string::npos ? ""
                                                         : kind.substr(cut + 1)},
                   {"device", gpu ? "gpu" : "cpu"},
                   {"threads", p.threads},
                   {"ops_per_second", p.ops_per_second},
                   {"unit", bytes ? "B/s" : "FLOP/s"},
                   {"method", p.how},
                   {"measured_unix", p.measured_unix}});
  }
  return all;
}

// The steadiness probe in one line, for stderr.
std::string steadiness_line(const Steadiness& st) {
  if (st.windows == 0) return st.how;
  char buf[256];
  std::snprintf(
      buf, sizeof buf,
      "one core's FMA throughput varied %.1f %% (slowest window %.2fx the median), its clock %.1f %% "
      "(%d windows)",
      100 * st.fma_spread, st.fma_slowest, 100 * st.clock_spread, st.windows);
  return buf;
}

// The results file's context: machine, build, libraries (the GPU's and CUDA's when the
// run holds a GPU kernel), peaks and the run's settings.
void add_context(const cli::RunArgs& args, const Peaks& peaks, const std::vector<Case>& cases) {
  for (const auto& [key, value] : build_context())
    benchmark::AddCustomContext(key, value);
  for (const auto& [key, value] : registry().context())  // library versions, their ISA
    benchmark::AddCustomContext(key, value);
  // Whenever the run holds a GPU kernel, measured or not: a GPU case that could not run
  // says why in its entry, and the context says which GPU, driver and libraries it met.
  if (any_gpu_case(cases, false))
    for (const auto& [key, value] : device_runtime(Device::gpu).context())
      benchmark::AddCustomContext(key, value);
  for (const auto& [key, value] : this_machine(args).facts)
    benchmark::AddCustomContext(key, value);
  benchmark::AddCustomContext("layerbench_peaks", json_text(peaks_as_json(peaks)));
  for (const Peak& p : peaks.all()) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.1f %s (%s)", p.ops_per_second / 1e9,
                  is_bandwidth(p.kind) ? "GB/s" : "GFLOP/s", p.how.c_str());
    const bool gpu = p.kind.rfind("gpu_", 0) == 0;
    benchmark::AddCustomContext(
        "layerbench_peak_" + p.kind + (gpu ? "" : "_threads" + std::to_string(p.threads)), buf);
  }
  const RunOptions& o = args.options;
  const Repetitions& r = o.repetitions;
  benchmark::AddCustomContext("layerbench_peaks_cache", peaks.cache_path());
  benchmark::AddCustomContext("layerbench_verify_reference_macs", std::to_string(o.max_reference_macs));
  benchmark::AddCustomContext("layerbench_seed", std::to_string(o.seed));
  benchmark::AddCustomContext("layerbench_shard",
                              std::to_string(args.spec.shard) + "/" + std::to_string(args.spec.shards));
  Json axes_settings;
  add_settings(axes_settings, args.spec.axes);
  const std::string cache = axes_settings["cache"];  // "hot", "cold" or both
  benchmark::AddCustomContext("layerbench_cache", cache);
  if (cache.find("cold") != std::string::npos)
    benchmark::AddCustomContext("layerbench_cold_cache_method", cold_cache_method());
  const std::string shuffled =
      args.interleaved ? "; shuffled among every case's (--benchmark_enable_random_interleaving)" : "";
  // The same as a value the scripts read (results.py Run.shuffled), not parsed from the prose above.
  benchmark::AddCustomContext("layerbench_repetitions_shuffled", args.interleaved ? "true" : "false");
  benchmark::AddCustomContext(
      "layerbench_repetitions",
      (r.fixed
           ? "fixed (--benchmark_repetitions)"
           : "adaptive: until the mean's relative standard error <= " + cli::fixed(100 * r.rse_target, 2) +
                 " %, " + std::to_string(r.min) + " to " + std::to_string(r.max) + " repetitions, at most " +
                 cli::fixed(r.cap_seconds, 2) + " s of timed work") +
          shuffled);
  benchmark::AddCustomContext("layerbench_rse_target", cli::fixed(100 * r.rse_target, 2));
  if (const char* spin = std::getenv("GOMP_SPINCOUNT"))
    benchmark::AddCustomContext("layerbench_gomp_spincount", spin);
  if (const char* tunables = std::getenv("GLIBC_TUNABLES"))
    benchmark::AddCustomContext("layerbench_glibc_tunables", tunables);
}

// --benchmark_filter applied to the case list itself, as Google Benchmark applies it to
// what it runs (an extended regular expression searched for in the full name, a leading
// "-" negating it; "" and "all" match every case), so that --list, the peaks, the warm-up
// and the progress lines' total and ETA are those of the cases that run. A filter that is
// no regular expression, or matches no case, is bad input (Google Benchmark says so and
// runs nothing, exit 0).
std::vector<Case> filtered(std::vector<Case> all, const std::string& filter) {
  if (filter.empty() || filter == "all") return all;
  const bool negative = filter[0] == '-';
  // POSIX's extended expressions, as std::regex::extended reads them (Google Benchmark's
  // choice): the C library's matcher compiles in no time, std::regex took 18 s to compile
  // under the sanitizers.
  regex_t re;
  if (const int err =
          regcomp(&re, (negative ? filter.substr(1) : filter).c_str(), REG_EXTENDED | REG_NOSUB)) {
    char why[256];
    regerror(err, &re, why, sizeof why);
    throw Error("--benchmark_filter=" + filter + ": not a regular expression (" + why + ")");
  }
  const std::unique_ptr<regex_t, void (*)(regex_t*)> compiled(&re, regfree);
  const size_t n = all.size();
  std::erase_if(all, [&](const Case& c) {
    return (regexec(&re, benchmark_name(c).c_str(), 0, nullptr, 0) == 0) == negative;
  });
  if (all.empty() && n > 0)
    throw Error("--benchmark_filter=" + filter + ": matches none of the sweep's " + std::to_string(n) +
                " cases (run --list without it lists them)");
  return all;
}

// The run's settings: everything that decides which cases exist (kSelectionSettings) and
// what a case measures. Written as the log's first line and compared by --resume; every
// value is a string. The peaks are added once measured (peaks_setting).
Json run_settings(const cli::RunArgs& args) {
  const SweepSpec& s = args.spec;
  const RunOptions& o = args.options;
  const Repetitions& r = o.repetitions;
  Json j = {{"suites", cli::join_list(s.suites)},
            {"networks", cli::join_list(s.networks)},
            {"problems", cli::join_list(s.problems)},
            {"backends", cli::join_list(s.backends)},
            {"kernels", cli::join_list(s.kernels)},
            {"separable_baseline", s.separable_baseline ? "on" : "off"},
            {"shard", std::to_string(s.shard) + "/" + std::to_string(s.shards)},
            {"benchmark_filter", cli::gbench_value(args.gbench, "benchmark_filter")},
            {"seed", std::to_string(o.seed)},
            {"verify_macs", std::to_string(o.max_reference_macs)},
            {"repetitions", r.fixed ? "fixed " + cli::gbench_value(args.gbench, "benchmark_repetitions")
                                    : "adaptive " + std::to_string(r.min) + "," + std::to_string(r.max)},
            {"rse_pct", cli::fixed(100 * r.rse_target, 3)},
            {"case_time_s", cli::fixed(r.cap_seconds, 3)},
            {"benchmark_min_time", cli::gbench_value(args.gbench, "benchmark_min_time")},
            {"benchmark_min_warmup_time", cli::gbench_value(args.gbench, "benchmark_min_warmup_time")},
            {"noisy_cv", cli::fixed(args.noisy_cv, 4)},
            {"machine", this_machine(args).name}};
  for (const auto& [key, value] : build_context())  // the build, not the machine
    if (key == "layerbench_compiler" || key == "layerbench_build" || key == "layerbench_git_commit")
      j[key.substr(std::strlen("layerbench_"))] = value;
  for (const auto& [key, value] : registry().context())  // library versions and the ISA they use
    j[key.rfind("layerbench_", 0) == 0 ? key.substr(std::strlen("layerbench_")) : key] = value;
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  j["gomp_spincount"] = spin ? spin : "";
  add_settings(j, s.axes);  // batches, dtypes, relus, dirs, cache, sync, threads (axes.h)
  if (args.interleaved) j["interleaved"] = "on";  // absent when off: older logs resume as they were
  return j;
}

// The peaks a run's % of peak figures divide by (cached per machine, contended ones too):
// those of its CPU thread counts and the GPU's, sorted — not the rest of the cache, which
// other runs change (a peak over an hour old is measured again only by a run that uses it).
std::string peaks_setting(const Peaks& peaks, const std::vector<Case>& cases) {
  const std::vector<int> threads = cpu_threads_of(cases);
  std::vector<std::string> used;
  for (const Peak& p : peaks.all()) {
    const bool gpu = p.kind.rfind("gpu_", 0) == 0;
    if (!gpu && std::find(threads.begin(), threads.end(), p.threads) == threads.end()) continue;
    char buf[128];
    std::snprintf(buf, sizeof buf, "%s threads%d %.6g", p.kind.c_str(), p.threads, p.ops_per_second);
    used.push_back(buf);
  }
  std::sort(used.begin(), used.end());
  std::string out;
  for (const std::string& u : used)
    out += (out.empty() ? "" : "; ") + u;
  return out;
}

// A resume continues one run: its settings must be those in the log (`ignore` left out
// while the peaks are not yet measured), unless --resume-force; then the difference is said,
// recorded in the context, and the log gets the new settings line.
bool settings_agree(const RunLog& log, const Json& settings, const cli::RunArgs& args,
                    const std::set<std::string>& ignore) {
  const std::string diff = settings_difference(log.previous_settings(), settings, ignore);
  if (diff.empty()) return true;
  if (!args.resume_force)
    throw Error("--resume: " + args.out + "l was started with other settings (" + diff +
                "); --resume-force continues anyway");
  std::fprintf(stderr, "layerbench: --resume-force: continuing %sl with other settings (%s)\n",
               args.out.c_str(), diff.c_str());
  benchmark::AddCustomContext("layerbench_resume_forced", diff);
  return false;
}

// Google Benchmark 1.7 deprecates its CSV reporter but still offers it; so do we.
std::unique_ptr<benchmark::BenchmarkReporter> csv_reporter() {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  return std::make_unique<benchmark::CSVReporter>();
#pragma GCC diagnostic pop
}

// --benchmark_format picks Google Benchmark's own display; else our compact lines.
std::unique_ptr<benchmark::BenchmarkReporter> display_reporter(const std::vector<std::string>& gbench) {
  std::unique_ptr<benchmark::BenchmarkReporter> display;
  for (const std::string& f : gbench)
    if (f.rfind("--benchmark_format=", 0) == 0) {
      const std::string format = f.substr(f.find('=') + 1);
      if (format == "json")
        display = std::make_unique<benchmark::JSONReporter>();
      else if (format == "csv")
        display = csv_reporter();
      else
        display = std::make_unique<benchmark::ConsoleReporter>(isatty(STDOUT_FILENO)
                                                                   ? benchmark::ConsoleReporter::OO_Defaults
                                                                   : benchmark::ConsoleReporter::OO_Tabular);
    }
  return display;
}

// Initialises Google Benchmark with its flags, through its own parser; a flag it does not
// take is one line (lb::Error) naming it, with the parser's reason when it gave one.
void init_google_benchmark(const std::vector<std::string>& flags) {
  // Google Benchmark keeps argv[0] (the context's "executable"): the strings must live on.
  static std::vector<std::string> kept;
  kept = {"layerbench"};
  kept.insert(kept.end(), flags.begin(), flags.end());
  std::vector<char*> argv;
  for (std::string& s : kept)
    argv.push_back(s.data());
  int argc = int(argv.size());
  std::ostringstream said;  // its parser explains a bad value on std::cerr
  std::streambuf* const cerr = std::cerr.rdbuf(said.rdbuf());
  benchmark::Initialize(&argc, argv.data());
  std::cerr.rdbuf(cerr);
  if (argc <= 1) return;
  std::string reason = said.str();
  reason = reason.substr(0, reason.find('\n'));
  throw Error(
      std::string(argv[1]) + ": " +
      (reason.empty() ? "unrecognized Google Benchmark flag" : "rejected by Google Benchmark: " + reason));
}

// Cases registered with Google Benchmark at a time (run_cases).
constexpr size_t kCasesPerCall = 500;

int run_cases(std::vector<Case>& cases, const cli::RunArgs& args, RunLog* log) {
  std::vector<Json> previous;
  if (log) previous = log->previous().flat();
  Reporter reporter(log, cases, std::move(previous), args.noisy_cv, display_reporter(args.gbench),
                    args.interleaved);
  if (!cases.empty()) {
    use_honest_allocator();
    warm_up(cases);
    // Google Benchmark 1.7 takes time and memory quadratic in the benchmarks registered
    // before it runs the first: 6,171 cases, the default sweep, spent 9 s of system time
    // and 20 s in all there on the Zen 5 VM (1,000 empty benchmarks: 0.16 s; 3,000: 1.9 s;
    // 6,000: 6.8 s). So it gets the cases in groups — unless it shuffles their repetitions
    // among all of them, or writes its own format, whose every call is a whole document.
    const size_t group = args.interleaved || args.gbench_format ? cases.size() : kCasesPerCall;
    for (size_t first = 0; first < cases.size(); first += group) {
      benchmark::ClearRegisteredBenchmarks();
      register_cases(std::span(cases).subspan(first, std::min(group, cases.size() - first)), args.options);
      benchmark::RunSpecifiedBenchmarks(&reporter);
    }
    release_active_case();
  }
  benchmark::Shutdown();

  // With --benchmark_format, stdout carries Google Benchmark's output alone.
  std::ostream& summary = args.gbench_format ? std::cerr : std::cout;
  summary << "\n" << cpu_gpu_table(reporter.runs());
  const std::string& out = args.out;
  Json context = reporter.context();
  if (const SteadinessProbe* probe = args.options.steadiness) {
    const Steadiness st = probe->summary();
    std::fprintf(stderr, "layerbench: steadiness over the run: %s\n", steadiness_line(st).c_str());
    if (context.is_object())
      context["layerbench_steadiness"] = json_text(Json{{"windows", st.windows},
                                                        {"window_s", st.window_seconds},
                                                        {"fma_spread", st.fma_spread},
                                                        {"fma_slowest", st.fma_slowest},
                                                        {"fma_fastest", st.fma_fastest},
                                                        {"clock_spread", st.clock_spread},
                                                        {"method", st.how}});
  }
  // Where the time went (the final write below is the only part not in it).
  const PhaseTotals phases = phase_totals();
  summary << "\ntime by phase: " << phases_line(phases) << "\n";
  if (context.is_object()) context["layerbench_phases"] = json_text(phases_json(phases));
  if (log) {
    log->write_results(context);  // from the log: whole cases only, this run's and before
    summary << "\nresults: " << out << " (cases as they finished: " << out << "l)\n";
  }
  if (const int signo = interrupted_by()) {
    std::fprintf(stderr, "layerbench: interrupted by %s after %zu of %zu cases; finished cases are in %s%s\n",
                 strsignal(signo), reporter.cases_done(), cases.size(),
                 out.empty() ? "(no --out file)" : out.c_str(),
                 out.empty() ? "" : "; continue with the same command and --resume");
    return 128 + signo;
  }
  return reporter.any_failed() ? 1 : 0;
}

}  // namespace

int run_command(const std::vector<std::string>& argv) {
  // Every flag, ours and Google Benchmark's (through its own parser), is checked before
  // any file is touched.
  cli::RunArgs args = cli::parse_run_args(argv);
  init_google_benchmark(args.gbench);
  std::vector<Case> all = filtered(expand(args.spec), cli::gbench_value(args.gbench, "benchmark_filter"));
  if (all.empty() && args.spec.shards == 1)  // a shard of a small sweep may be empty
    throw Error("run: no cases: the kernels selected (--backend, --kernel) take none of the problems' ops");
  if (args.list) return list_cases(all);
  reset_phases();
  std::unique_ptr<RunLog> log;
  if (!args.out.empty()) log = std::make_unique<RunLog>(args.out, args.resume, args.overwrite);
  // From here on a SIGINT or SIGTERM ends the run with a results file, whatever it is
  // doing (the peaks, the warm-up or a case).
  install_interrupt_handlers();
  const bool continuing = log && args.resume && log->has_lines();
  Json settings = run_settings(args);
  bool agree = !continuing || settings_agree(*log, settings, args, {"peaks"});
  // The peaks of the whole sweep, not only of the cases left: a resume records the same ones.
  const Peaks peaks = [&] {
    const PhaseScope phase(Phase::peaks);
    return peaks_for(all, args.remeasure_peaks, continuing);
  }();
  settings["peaks"] = peaks_setting(peaks, all);
  if (continuing && agree) agree = settings_agree(*log, settings, args, {});
  std::vector<Case> cases = cases_to_run(std::move(all), continuing ? log.get() : nullptr, args.out);
  if (log && !continuing)
    log->start(settings);
  else if (continuing && !agree)
    log->append_settings(settings);
  args.options.peaks = &peaks;
  // The machine's steadiness: probed after the peaks (which may take the cores for a
  // while) and before the cases, then once before each case; summed up at the end.
  std::optional<SteadinessProbe> steadiness;
  if (args.steadiness_seconds > 0 && interrupted_by() == 0) {
    steadiness.emplace();
    steadiness->probe(args.steadiness_seconds, [] { return interrupted_by() != 0; });
    std::fprintf(stderr, "layerbench: steadiness before the cases: %s\n",
                 steadiness_line(steadiness->summary()).c_str());
    args.options.steadiness = &*steadiness;
  }
  add_context(args, peaks, cases);
  return run_cases(cases, args, log.get());
}

int merge_command(const std::vector<std::string>& argv) {
  const cli::Args a = cli::parse_args("merge", argv, {}, {"force"});
  if (a.positional.size() < 2) throw Error("merge: expected OUT.json IN... (at least one input)");
  if (!a.positional[0].ends_with(".json")) throw Error("merge: " + a.positional[0] + ": expected OUT.json");
  merge_results(a.positional[0], {a.positional.begin() + 1, a.positional.end()}, a.on("force"));
  std::cout << "merged " << a.positional.size() - 1 << " files into " << a.positional[0] << "\n";
  return 0;
}

}  // namespace lb::bench
