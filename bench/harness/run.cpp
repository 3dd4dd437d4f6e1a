#include "bench/harness/run.h"

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>

#include "bench/cli/args.h"
#include "bench/harness/peaks.h"
#include "bench/harness/probes.h"
#include "bench/harness/results.h"
#include "bench/harness/runner.h"
#include "bench/harness/sweep.h"
#include "bench/harness/sysinfo.h"

#ifdef LB_HAVE_CUDA
#include "cuda/runtime.h"
#endif
#include "kernels/common.h"
#include "kernels/registry.h"
#include "kernels/verify.h"

namespace lb::bench {

const char* const kRunUsage = R"(  run [--suite S,...] [--network N,...] [--problem "LINE"]...
      [--batch 1,16,64] [--dtype f32,bf16,...|all] [--relu none,separate,inplace,fused|all]
      [--threads 1,2] [--backend B,...] [--kernel ID,...] [--cache hot|cold] [--sync spin,blocking]
      [--shard i/n] [--out results/runs/NAME.json] [--resume] [--seed N] [--list]
      [--verify-macs N] [--noisy-cv 0.05] [--remeasure-peaks] [--benchmark_*...]
                                     time every kernel that supports each case (Google Benchmark
                                     inside; every --benchmark_* flag works). --backend all includes
                                     ref, which is otherwise left out; --list only lists the cases
  merge OUT.json IN.json|IN.jsonl... merge shards or interrupted runs into one results file
)";

namespace {

template <class T, class F>
std::vector<T> list_of(const cli::Args& a, const std::string& flag, F parse) {
  std::vector<T> out;
  if (auto v = a.get(flag))
    for (const std::string& item : cli::split_list(*v))
      out.push_back(parse(item));
  return out;
}

// Google Benchmark 1.7 deprecates its CSV reporter but still offers it; so do we.
std::unique_ptr<benchmark::BenchmarkReporter> csv_reporter() {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  return std::make_unique<benchmark::CSVReporter>();
#pragma GCC diagnostic pop
}

int64_t positive(const std::string& flag, const std::string& s) {
  try {
    size_t used = 0;
    const long long v = std::stoll(s, &used);
    if (used == s.size() && v >= 1) return v;
  } catch (const std::exception&) {
  }
  throw Error("--" + flag + " " + s + ": expected integers >= 1");
}

}  // namespace

int run_command(const std::vector<std::string>& argv) {
  // --benchmark_* flags go to Google Benchmark untouched; the rest are ours.
  std::vector<std::string> ours, gbench;
  for (const std::string& arg : argv)
    (arg.rfind("--benchmark_", 0) == 0 ? gbench : ours).push_back(arg);
  const cli::Args a =
      cli::parse_args("run", ours,
                      {"suite", "network", "problem", "batch", "dtype", "relu", "threads", "backend",
                       "kernel", "cache", "shard", "out", "seed", "verify-macs", "noisy-cv", "sync"},
                      {"resume", "remeasure-peaks", "list"});
  if (!a.positional.empty()) throw Error("run: unexpected argument '" + a.positional[0] + "'");

  SweepSpec spec;
  spec.suites = list_of<std::string>(a, "suite", [](const std::string& s) { return s; });
  spec.networks = list_of<std::string>(a, "network", [](const std::string& s) { return s; });
  if (auto p = a.get("problem")) spec.problems = {*p};
  spec.batches = list_of<int64_t>(a, "batch", [](const std::string& s) { return positive("batch", s); });
  if (a.get("dtype") == "all")
    spec.dtypes.assign(std::begin(kAllDTypes), std::end(kAllDTypes));
  else
    spec.dtypes = list_of<DType>(a, "dtype", parse_dtype);
  if (a.get("relu") == "all")
    spec.relus.assign(std::begin(kAllRelus), std::end(kAllRelus));
  else
    spec.relus = list_of<Relu>(a, "relu", parse_relu);
  if (a.get("threads"))
    spec.threads =
        list_of<int>(a, "threads", [](const std::string& s) { return int(positive("threads", s)); });
  spec.backends = list_of<std::string>(a, "backend", [](const std::string& s) { return s; });
  if (spec.backends == std::vector<std::string>{"all"}) spec.backends = registry().backends();
  spec.kernels = list_of<std::string>(a, "kernel", [](const std::string& s) { return s; });
  if (auto v = a.get("sync")) {
    spec.blocking_syncs.clear();
    for (const std::string& item : cli::split_list(*v)) {
      if (item != "spin" && item != "blocking") throw Error("--sync " + item + ": expected spin or blocking");
      spec.blocking_syncs.push_back(item == "blocking");
    }
  }
  const std::string cache = a.get("cache").value_or("hot");
  if (cache != "hot" && cache != "cold") throw Error("--cache " + cache + ": expected hot or cold");
  spec.cold = cache == "cold";
  if (auto s = a.get("shard")) {
    const size_t slash = s->find('/');
    if (slash == std::string::npos) throw Error("--shard " + *s + ": expected i/n, e.g. 0/4");
    try {
      spec.shard = std::stoi(s->substr(0, slash));
      spec.shards = std::stoi(s->substr(slash + 1));
    } catch (const std::exception&) {
      throw Error("--shard " + *s + ": expected i/n, e.g. 0/4");
    }
  }
  RunOptions options;
  options.seed = uint64_t(a.integer("seed", 1, 0));
  options.max_reference_macs = a.integer("verify-macs", kDefaultReferenceMacs, 0);
  double noisy_cv = 0.05;
  if (auto v = a.get("noisy-cv")) {
    try {
      noisy_cv = std::stod(*v);
    } catch (const std::exception&) {
      throw Error("--noisy-cv " + *v + ": expected a number such as 0.05");
    }
  }
  const std::string out = a.get("out").value_or("");
  if (a.on("resume") && out.empty()) throw Error("run: --resume needs --out");
  if (!out.empty() && !out.ends_with(".json"))
    throw Error("--out " + out + ": expected a path ending in .json");

  std::vector<Case> all = expand(spec);
  if (a.on("list")) {  // a dry run: the cases this run would register, in order
    for (const Case& c : all)
      std::cout << c.name << (c.unsupported.empty() ? "" : "  unsupported: " + c.unsupported) << "\n";
    return 0;
  }
  PreviousRuns previous;
  if (a.on("resume"))
    previous = read_previous(out);
  else if (!out.empty())
    std::remove((out + "l").c_str());  // a new run starts a new log
  std::vector<Case> cases;
  for (Case& c : all)
    if (!previous.cases.count(c.name)) cases.push_back(std::move(c));
  if (a.on("resume"))
    std::fprintf(stderr, "resume: %zu cases already in %sl, %zu to run\n", previous.cases.size(), out.c_str(),
                 cases.size());

  std::vector<int> cpu_threads;
  bool any_gpu = false;
  for (const Case& c : cases) {
    if (!c.unsupported.empty()) continue;
    if (c.kernel->info.device == Device::gpu)
      any_gpu = true;
    else if (std::find(cpu_threads.begin(), cpu_threads.end(), c.threads) == cpu_threads.end())
      cpu_threads.push_back(c.threads);
  }
  const Peaks peaks = Peaks::for_threads(cpu_threads, any_gpu, a.on("remeasure-peaks"));
  options.peaks = &peaks;

  for (const auto& [key, value] : build_context())
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
  benchmark::AddCustomContext("layerbench_peaks_cache", peaks.cache_path());
  benchmark::AddCustomContext("layerbench_verify_reference_macs", std::to_string(options.max_reference_macs));
  benchmark::AddCustomContext("layerbench_seed", std::to_string(options.seed));
  benchmark::AddCustomContext("layerbench_shard",
                              std::to_string(spec.shard) + "/" + std::to_string(spec.shards));
  benchmark::AddCustomContext("layerbench_cache", cache);
  if (const char* spin = std::getenv("GOMP_SPINCOUNT"))
    benchmark::AddCustomContext("layerbench_gomp_spincount", spin);

  // Google Benchmark's own flags, after our defaults so the user's win.
  std::vector<std::string> gb_args = {"layerbench", "--benchmark_repetitions=3", "--benchmark_min_time=0.1"};
  gb_args.insert(gb_args.end(), gbench.begin(), gbench.end());
  std::vector<char*> gb_argv;
  for (std::string& s : gb_args)
    gb_argv.push_back(s.data());
  int gb_argc = int(gb_argv.size());
  benchmark::Initialize(&gb_argc, gb_argv.data());
  if (benchmark::ReportUnrecognizedArguments(gb_argc, gb_argv.data())) return 2;

  use_honest_allocator();
  install_interrupt_handlers();
  warm_up(cases);
  PeakMemoryManager memory;
  benchmark::RegisterMemoryManager(&memory);
  register_cases(cases, options);
  // --benchmark_format picks Google Benchmark's own display; else our compact lines.
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
  Reporter reporter(out, cases.size(), std::move(previous), noisy_cv, std::move(display));
  benchmark::RunSpecifiedBenchmarks(&reporter);
  release_active_case();
  benchmark::RegisterMemoryManager(nullptr);
  benchmark::Shutdown();

  std::cout << "\n" << cpu_gpu_table(reporter.runs());
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

int merge_command(const std::vector<std::string>& argv) {
  const cli::Args a = cli::parse_args("merge", argv, {}, {});
  if (a.positional.size() < 2) throw Error("merge: expected OUT.json IN... (at least one input)");
  merge_results(a.positional[0], {a.positional.begin() + 1, a.positional.end()});
  std::cout << "merged " << a.positional.size() - 1 << " files into " << a.positional[0] << "\n";
  return 0;
}

}  // namespace lb::bench
