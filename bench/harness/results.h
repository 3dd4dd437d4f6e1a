// Results on disk. A run owns <out>.jsonl for its whole length (an exclusive flock; a
// second writer is refused naming the holder's pid). Its first line is the run's
// settings ({"layerbench_settings": {...}}: everything that decides which cases run and
// what they measure), compared on --resume; then a {"context": ...} line per session and
// the run objects of each finished case (Google Benchmark's run objects plus lb_case,
// lb_status, lb_details, lb_reason, lb_noisy, ... and lb_case_runs, the number of
// objects the case wrote). A case's objects are appended in one write() once the case is
// whole, so an interrupted or killed run keeps only whole cases; a failed write is cut
// back and names the errno. At the end <out> is written (write, then rename) from the
// .jsonl as Google Benchmark JSON: {"context": ..., "benchmarks": [...]}.
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

// The settings that only choose which cases exist (sources, axes, filters, shard): merge
// combines files that differ in them; every other setting must agree.
extern const std::set<std::string> kSelectionSettings;

// The first setting that differs between two settings objects, as "seed: '1' before, '2'
// now", leaving out `ignore`; empty when they agree.
std::string settings_difference(const Json& before, const Json& now, const std::set<std::string>& ignore);

// The whole cases of a results file, in order; a case found twice keeps its later copy.
struct CaseRuns {
  std::vector<std::string> order;                 // lb_case names, first seen first
  std::map<std::string, std::vector<Json>> runs;  // by lb_case
  std::vector<Json> flat() const;                 // every case's objects, in order
};

// <out>.jsonl, opened and locked for one run.
class RunLog {
 public:
  // Takes the lock and checks the files: refuses (lb::Error, one line) when another process
  // holds <out>.jsonl, or when <out> or <out>.jsonl holds results and neither `resume` nor
  // `overwrite` is given. Creates an absent log; changes nothing else. A resume reads the
  // log; a torn last line is left out, and cut off (with a message) before the first write.
  RunLog(const std::string& out, bool resume, bool overwrite);
  ~RunLog();
  RunLog(const RunLog&) = delete;
  RunLog& operator=(const RunLog&) = delete;

  // The settings line found by a resume (null: none, or a new run), and its whole cases.
  const Json& previous_settings() const { return previous_settings_; }
  const CaseRuns& previous() const { return previous_; }
  // A resume found something to continue: a settings line or a case (a log that holds
  // only a torn line is started again).
  bool has_lines() const { return has_lines_; }
  // The cases a resume found only in part (the run stopped within them): they run again.
  const std::vector<std::string>& partial() const { return partial_; }

  // A new run (or --overwrite): empties the log and <out>, then writes the settings line.
  // A forced resume appends its settings line, so the log says what changed.
  void start(const Json& settings);
  void append_settings(const Json& settings);
  // Appends lines in one write(); on failure cuts the file back and throws naming errno.
  void append(const std::vector<Json>& lines);
  // The log as it is now: the last context and settings, and the whole cases.
  CaseRuns read(Json* context, Json* settings) const;
  // Writes <out> from the log; `context` replaces the log's when not null.
  void write_results(Json context) const;

 private:
  void lock_and_read(bool resume, bool overwrite);

  std::string out_, path_;
  int fd_ = -1;
  Json previous_settings_;
  CaseRuns previous_;
  bool has_lines_ = false;
  std::vector<std::string> partial_;
  size_t torn_bytes_ = 0;  // a torn last line found by a resume, cut off before the first write
};

// Receives every run from Google Benchmark: writes the results files and prints one
// compact line per case ([k/N], time, throughput, % of peak, CPU utilisation, host peak,
// status, ETA) — or, when --benchmark_format was given, hands the runs to Google
// Benchmark's reporter for that format instead.
class Reporter : public benchmark::BenchmarkReporter {
 public:
  // `cases` (with their notes, filled as they run) and `log` (null: no --out) must outlive
  // the reporter. `previous` are the runs a resume found, for the summary table.
  // `shuffled`: the repetitions are shuffled among the cases, which then finish together
  // near the end, so the progress lines give no ETA (it would extrapolate from the first).
  Reporter(RunLog* log, const std::vector<Case>& cases, std::vector<Json> previous, double noisy_cv,
           std::unique_ptr<benchmark::BenchmarkReporter> display, bool shuffled);
  bool ReportContext(const Context& context) override;
  void ReportRuns(const std::vector<Run>& runs) override;
  void Finalize() override;

  // Every run of this session and the previous ones, as JSON objects.
  const std::vector<Json>& runs() const { return runs_; }
  // This session's context (null until Google Benchmark reported it).
  const Json& context() const { return context_; }
  bool any_failed() const { return failed_; }
  size_t cases_done() const { return done_; }

 private:
  void flush_case();
  void print_case(const std::vector<Run>& runs, const std::string& status, bool noisy);

  RunLog* log_;
  size_t total_, done_ = 0;
  double noisy_cv_;
  double start_ = 0;
  bool shuffled_;
  bool failed_ = false;
  std::vector<Json> runs_;
  std::map<std::string, double> cv_;  // per case, from its repetitions (aggregates come in a later call)
  std::map<std::string, const Case*> cases_;  // by benchmark name
  std::vector<Run> kept_;                     // the last case's kept repetitions
  std::vector<Json> pending_;                 // the current case's objects, written once it is whole
  std::string pending_case_;
  bool pending_dropped_ = false;  // the current case was cut short by a signal
  Json context_;
  std::unique_ptr<benchmark::BenchmarkReporter> display_;
  benchmark::JSONReporter json_;  // Google Benchmark's own serialisation of each run
  std::ostringstream json_text_;  // what json_ wrote since the last call read it
};

// lb_kernel, lb_backend, lb_device, lb_op, lb_type, lb_dtype, lb_relu, lb_problem, lb_layer,
// lb_threads, lb_cache: what a case is, on every run object it writes.
Json case_identity(const Case& c);

// The results file from whole cases, in Google Benchmark's layout: "benchmarks" holds
// the measured cases only (every entry a timing, so that Google Benchmark's compare.py and
// github-action-benchmark read it unchanged), "layerbench_not_measured" the others
// (unsupported, out of memory, failed, not run): each its run object with the short keys
// status, reason, kernel, problem and repro (a failure's). The context gets
// layerbench_format_version.
Json results_document(Json context, const CaseRuns& cases);

// Writes j to path atomically (a temporary file in the same folder, then rename); an
// error names the errno.
void write_json_atomically(const std::string& path, const Json& j);

// layerbench merge: shards (or interrupted runs) into one file; .json and .jsonl inputs.
// Keeps whole cases only (a complete copy over an interrupted one, the later input's over
// the earlier's, saying which on stderr); refuses inputs from another machine or with other
// measurement settings unless `force`; an unreadable input is one line (lb::Error).
void merge_results(const std::string& out, const std::vector<std::string>& inputs, bool force);

// The compact table printed at the end of a run: per problem and dtype, the fastest CPU
// and GPU kernel by their median repetition (as the progress lines give it) and the GPU's
// speed-up.
std::string cpu_gpu_table(const std::vector<Json>& runs);

}  // namespace lb::bench
