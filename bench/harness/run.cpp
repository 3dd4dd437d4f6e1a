#include "bench/harness/run.h"

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "bench/cli/args.h"
#include "bench/cli/format.h"
#include "bench/cli/run_args.h"
#include "bench/harness/peaks.h"
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

// The cases still to run: a --resume skips those in <out>.jsonl; a new run starts a new log.
std::vector<Case> cases_to_run(std::vector<Case> all, const cli::RunArgs& args, PreviousRuns& previous) {
  if (args.resume)
    previous = read_previous(args.out);
  else if (!args.out.empty())
    std::remove((args.out + "l").c_str());
  std::vector<Case> cases;
  for (Case& c : all)
    if (!previous.cases.count(c.name)) cases.push_back(std::move(c));
  if (args.resume)
    std::fprintf(stderr, "resume: %zu cases already in %sl, %zu to run\n", previous.cases.size(),
                 args.out.c_str(), cases.size());
  return cases;
}

bool any_gpu_case(const std::vector<Case>& cases) {
  return std::any_of(cases.begin(), cases.end(), [](const Case& c) {
    return c.unsupported.empty() && c.kernel->info.device == Device::gpu;
  });
}

Peaks peaks_for(const std::vector<Case>& cases, bool remeasure) {
  std::vector<int> cpu_threads;
  for (const Case& c : cases)
    if (c.unsupported.empty() && c.kernel->info.device == Device::cpu &&
        std::find(cpu_threads.begin(), cpu_threads.end(), c.threads) == cpu_threads.end())
      cpu_threads.push_back(c.threads);
  return Peaks::for_threads(cpu_threads, any_gpu_case(cases), remeasure);
}

// The results file's context: machine, build, libraries (the GPU's when a GPU case
// runs), peaks and the run's settings.
void add_context(const cli::RunArgs& args, const Peaks& peaks, const std::vector<Case>& cases) {
  for (const auto& [key, value] : build_context())
    benchmark::AddCustomContext(key, value);
  for (const auto& [key, value] : registry().context())  // library versions, their ISA
    benchmark::AddCustomContext(key, value);
  if (any_gpu_case(cases))
    for (const auto& [key, value] : device_runtime(Device::gpu).context())
      benchmark::AddCustomContext(key, value);
  for (const Peak& p : peaks.all()) {
    char buf[512];
    const bool copy = p.kind == "gpu_d2d_copy";
    std::snprintf(buf, sizeof buf, "%.1f %s (%s)", p.ops_per_second / 1e9, copy ? "GB/s" : "GFLOP/s",
                  p.how.c_str());
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
  benchmark::AddCustomContext("layerbench_cache", args.cache);
  if (args.spec.cold) benchmark::AddCustomContext("layerbench_cold_cache_method", cold_cache_method());
  benchmark::AddCustomContext(
      "layerbench_repetitions",
      r.fixed ? "fixed (--benchmark_repetitions)"
              : "adaptive: until the mean's relative standard error <= " + cli::fixed(100 * r.rse_target, 2) +
                    " %, " + std::to_string(r.min) + " to " + std::to_string(r.max) +
                    " repetitions, at most " + cli::fixed(r.cap_seconds, 2) + " s of timed work");
  benchmark::AddCustomContext("layerbench_rse_target", cli::fixed(100 * r.rse_target, 2));
  if (const char* spin = std::getenv("GOMP_SPINCOUNT"))
    benchmark::AddCustomContext("layerbench_gomp_spincount", spin);
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

// Initialises Google Benchmark with its flags; false (after its message) on one it rejects.
bool init_google_benchmark(const std::vector<std::string>& flags) {
  // Google Benchmark keeps argv[0] (the context's "executable"): the strings must live on.
  static std::vector<std::string> kept;
  kept = {"layerbench"};
  kept.insert(kept.end(), flags.begin(), flags.end());
  std::vector<char*> argv;
  for (std::string& s : kept)
    argv.push_back(s.data());
  int argc = int(argv.size());
  benchmark::Initialize(&argc, argv.data());
  return !benchmark::ReportUnrecognizedArguments(argc, argv.data());
}

int run_cases(std::vector<Case>& cases, const cli::RunArgs& args, PreviousRuns previous) {
  use_honest_allocator();
  install_interrupt_handlers();
  warm_up(cases);
  register_cases(cases, args.options);
  Reporter reporter(args.out, cases, std::move(previous), args.noisy_cv, display_reporter(args.gbench));
  benchmark::RunSpecifiedBenchmarks(&reporter);
  release_active_case();
  benchmark::Shutdown();

  std::cout << "\n" << cpu_gpu_table(reporter.runs());
  const std::string& out = args.out;
  if (!out.empty()) std::cout << "\nresults: " << out << " (cases as they finished: " << out << "l)\n";
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
  cli::RunArgs args = cli::parse_run_args(argv);
  std::vector<Case> all = expand(args.spec);
  if (args.list) return list_cases(all);
  PreviousRuns previous;
  std::vector<Case> cases = cases_to_run(std::move(all), args, previous);
  const Peaks peaks = peaks_for(cases, args.remeasure_peaks);
  args.options.peaks = &peaks;
  add_context(args, peaks, cases);
  if (!init_google_benchmark(args.gbench)) return 2;
  return run_cases(cases, args, std::move(previous));
}

int merge_command(const std::vector<std::string>& argv) {
  const cli::Args a = cli::parse_args("merge", argv, {}, {});
  if (a.positional.size() < 2) throw Error("merge: expected OUT.json IN... (at least one input)");
  merge_results(a.positional[0], {a.positional.begin() + 1, a.positional.end()});
  std::cout << "merged " << a.positional.size() - 1 << " files into " << a.positional[0] << "\n";
  return 0;
}

}  // namespace lb::bench
