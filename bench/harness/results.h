// Results on disk. Each finished case is appended to <out>.jsonl as it finishes (one
// Google Benchmark run object per line, plus lb_case, lb_status, lb_details, lb_reason
// and lb_noisy; the run's context on a line of its own), so an interrupted or crashed
// run keeps every finished case. At the end <out> is written (write, then rename) as
// Google Benchmark JSON: {"context": ..., "benchmarks": [...]}, including the cases a
// --resume found already done.
#pragma once

#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bench/harness/sweep.h"

namespace lb::bench {

using Json = nlohmann::json;

struct PreviousRuns {
  std::vector<Json> runs;       // run objects already in <out>.jsonl
  std::set<std::string> cases;  // their lb_case names
};
// Reads <out>.jsonl if it exists; a torn last line (a crash mid-write) is ignored.
PreviousRuns read_previous(const std::string& out);

// Receives every run from Google Benchmark: writes the results files and prints one
// compact line per case ([k/N], time, throughput, % of peak, CPU utilisation, host peak,
// status, ETA) — or, when --benchmark_format was given, hands the runs to Google
// Benchmark's reporter for that format instead.
class Reporter : public benchmark::BenchmarkReporter {
 public:
  // `cases` (with their notes, filled as they run) must outlive the reporter.
  Reporter(std::string out, const std::vector<Case>& cases, PreviousRuns previous, double noisy_cv,
           std::unique_ptr<benchmark::BenchmarkReporter> display);
  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override;

  // Every run of this session and the previous ones, as JSON objects.
  const std::vector<Json>& runs() const { return runs_; }
  bool any_failed() const { return failed_; }
  size_t cases_done() const { return done_; }

 private:
  void append_line(const Json& j);
  void print_case(const std::vector<Run>& runs, const std::string& status, bool noisy);

  std::string out_;
  size_t total_, done_ = 0;
  double noisy_cv_;
  double start_ = 0;
  bool failed_ = false;
  std::vector<Json> runs_;
  std::map<std::string, double> cv_;  // per case, from its repetitions (aggregates come in a later call)
  std::map<std::string, const Case*> cases_;  // by benchmark name
  std::vector<Run> kept_;                     // the last case's kept repetitions
  Json context_;
  std::unique_ptr<benchmark::BenchmarkReporter> display_;
  benchmark::JSONReporter json_;  // Google Benchmark's own serialisation of each run
  std::ostringstream json_text_;
  size_t consumed_ = 0;
};

// lb_kernel, lb_backend, lb_device, lb_op, lb_type, lb_dtype, lb_relu, lb_problem, lb_layer,
// lb_threads, lb_cache: what a case is, on every run object it writes.
Json case_identity(const Case& c);

// Writes j to path atomically (a temporary file in the same folder, then rename).
void write_json_atomically(const std::string& path, const Json& j);

// layerbench merge: shards (or interrupted runs) into one file; .json and .jsonl inputs.
void merge_results(const std::string& out, const std::vector<std::string>& inputs);

// The compact table printed at the end of a run: per problem and dtype, the fastest CPU
// and GPU kernel and the GPU's speed-up.
std::string cpu_gpu_table(const std::vector<Json>& runs);

}  // namespace lb::bench
