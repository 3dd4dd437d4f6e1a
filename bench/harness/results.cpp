#include "bench/harness/results.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "bench/cli/format.h"
#include "bench/harness/probes.h"
#include "bench/harness/runner.h"
#include "kernels/common.h"
#include "kernels/model.h"
#include "kernels/registry.h"

namespace lb::bench {
namespace {

std::string duration(double s) {
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%.0fs", s);
  else
    std::snprintf(buf, sizeof buf, "%dm%02ds", int(s) / 60, int(s) % 60);
  return buf;
}

// Google Benchmark writes NaN and Infinity (e.g. the cv of a constant counter) as bare
// words, which JSON does not have; they become null.
std::string json_numbers(std::string text) {
  for (const char* word : {"-Infinity", "Infinity", "-NaN", "NaN"}) {
    const std::string from = std::string(": ") + word;
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at))
      text.replace(at, from.size(), ": null");
  }
  return text;
}

std::vector<Json> read_jsonl(const std::string& path, Json* context) {
  std::vector<Json> out;
  std::ifstream in(path);
  if (!in) throw Error("cannot read '" + path + "'");
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.empty()) continue;
    Json j = Json::parse(line, nullptr, false);
    if (j.is_discarded()) {
      if (in.peek() == EOF) break;  // a torn last line: the run died while writing it
      throw Error(path + ":" + std::to_string(number) + ": not a JSON object");
    }
    if (j.contains("context")) {
      if (context) *context = j["context"];
    } else {
      out.push_back(std::move(j));
    }
  }
  return out;
}

}  // namespace

PreviousRuns read_previous(const std::string& out) {
  PreviousRuns p;
  const std::string path = out + "l";
  if (out.empty() || !std::filesystem::exists(path)) return p;
  p.runs = read_jsonl(path, nullptr);
  for (const Json& r : p.runs)
    if (r.contains("lb_case")) p.cases.insert(r["lb_case"].get<std::string>());
  return p;
}

void write_json_atomically(const std::string& path, const Json& j) {
  const std::filesystem::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), ec);
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream o(tmp);
    o << j.dump(2) << "\n";
    if (!o) throw Error("cannot write '" + tmp + "'");
  }
  std::filesystem::rename(tmp, target, ec);
  if (ec) throw Error("cannot rename '" + tmp + "' to '" + path + "': " + ec.message());
}

Reporter::Reporter(std::string out, const std::vector<Case>& cases, PreviousRuns previous, double noisy_cv,
                   std::unique_ptr<benchmark::BenchmarkReporter> display)
    : out_(std::move(out)),
      total_(cases.size()),
      noisy_cv_(noisy_cv),
      runs_(std::move(previous.runs)),
      display_(std::move(display)) {
  json_.SetOutputStream(&json_text_);
  json_.SetErrorStream(&json_text_);
  for (const Case& c : cases)
    cases_[c.name] = &c;
}

void Reporter::append_line(const Json& j) {
  if (out_.empty()) return;
  std::ofstream o(out_ + "l", std::ios::app);
  o << j.dump() << "\n";
  o.flush();
  if (!o) throw Error("cannot append to '" + out_ + "l'");
}

bool Reporter::ReportContext(const Context& context) {
  start_ = wall_seconds();
  if (display_) {
    display_->SetOutputStream(&GetOutputStream());
    display_->SetErrorStream(&GetErrorStream());
    display_->ReportContext(context);
  }
  json_.ReportContext(context);
  // Google Benchmark's JSON so far: {"context": {...}, "benchmarks": [   — close it to parse it.
  const std::string text = json_text_.str();
  consumed_ = text.size();
  context_ = Json::parse(json_numbers(text) + "]}")["context"];
  if (!display_) {
    GetOutputStream() << "layerbench run: " << total_ << " cases on "
                      << context_.value("layerbench_cpu_model", "?") << " ("
                      << context_.value("layerbench_cpu_isa", "") << ")\n";
    if (context_.value("library_build_type", "") == "debug")
      GetOutputStream()
          << "note: this Google Benchmark library was built without NDEBUG (as Debian ships it); "
             "layerbench's own timing does not depend on it\n";
  }
  if (!out_.empty()) {
    std::error_code ec;
    const std::filesystem::path p(out_);
    if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  }
  append_line(Json{{"context", context_}});
  return true;
}

void Reporter::print_case(const std::vector<Run>& runs, const std::string& status, bool noisy) {
  ++done_;
  const double elapsed = wall_seconds() - start_;
  const double eta = done_ < total_ ? elapsed / double(done_) * double(total_ - done_) : 0;
  std::ostringstream line;
  line << "[" << done_ << "/" << total_ << "] " << runs[0].run_name.function_name << "  ";
  if (runs[0].error_occurred) {
    line << runs[0].error_message;
  } else {
    std::vector<double> times;
    for (const Run& r : runs)
      times.push_back(r.GetAdjustedRealTime());
    std::sort(times.begin(), times.end());
    const Run& last = runs.back();
    auto counter = [&last](const char* key) {
      auto it = last.counters.find(key);
      return it == last.counters.end() ? -1.0 : double(it->second.value);
    };
    line << cli::fixed(times[times.size() / 2], 1) << " " << benchmark::GetTimeUnitString(last.time_unit)
         << "  " << cli::fixed(counter("lb_flop_per_s") / 1e9, 1) << " GFLOP/s";
    if (counter("lb_pct_peak") >= 0) line << "  " << cli::fixed(counter("lb_pct_peak"), 0) << "% of peak";
    line << "  cpu " << cli::fixed(counter("lb_cpu_util_avg"), 0) << "%"
         << "  host +" << cli::fixed(counter("lb_host_peak_bytes") / 1e6, 1) << " MB  " << status
         << (noisy ? " (noisy)" : "");
  }
  line << "  [" << duration(elapsed) << ", ETA " << duration(eta) << "]\n";
  GetOutputStream() << line.str() << std::flush;
}

namespace {

// The repetitions that did work: an adaptive case's later repetitions are idle calls
// (runner.h), dropped here; with a fixed count (or no stop recorded) all are kept.
std::vector<benchmark::BenchmarkReporter::Run> kept_repetitions(
    const std::vector<benchmark::BenchmarkReporter::Run>& runs, const CaseNotes& notes) {
  if (runs[0].error_occurred) return {runs[0]};  // an error is the case's, not a repetition's: once
  if (notes.stop.empty() || notes.kept_repetitions <= 0 || size_t(notes.kept_repetitions) >= runs.size())
    return runs;
  std::vector<benchmark::BenchmarkReporter::Run> kept(runs.begin(), runs.begin() + notes.kept_repetitions);
  for (auto& r : kept)
    r.repetitions = int64_t(kept.size());
  return kept;
}

// Google Benchmark's aggregates (mean, median, stddev, cv, and any other statistic),
// recomputed with its own statistic functions over the kept repetitions only.
void recompute_aggregates(std::vector<benchmark::BenchmarkReporter::Run>& aggregates,
                          const std::vector<benchmark::BenchmarkReporter::Run>& kept) {
  if (kept.empty() || !aggregates[0].statistics) return;
  std::vector<double> real, cpu;
  std::map<std::string, std::vector<double>> counters;
  for (const auto& r : kept) {
    real.push_back(r.real_accumulated_time);
    cpu.push_back(r.cpu_accumulated_time);
    for (const auto& [key, c] : r.counters)
      counters[key].push_back(c.value);
  }
  const double n = double(kept.size()), iterations = double(kept[0].iterations);
  for (auto& a : aggregates)
    for (const auto& stat : *a.statistics) {
      if (stat.name_ != a.aggregate_name) continue;
      // Reported times are divided by `iterations`: n repetitions of `iterations` runs each.
      const double scale = stat.unit_ == benchmark::kTime ? n / iterations : 1.0;
      a.iterations = int64_t(n);
      a.repetitions = int64_t(n);
      a.real_accumulated_time = stat.compute_(real) * scale;
      a.cpu_accumulated_time = stat.compute_(cpu) * scale;
      for (auto& [key, c] : a.counters)
        if (counters.count(key)) c.value = stat.compute_(counters[key]);
    }
}

}  // namespace

Json case_identity(const Case& c) {
  const KernelEntry& k = *c.kernel;
  return {{"lb_kernel", k.info.id},
          {"lb_backend", std::string(k.backend())},
          {"lb_device", name(k.info.device)},
          {"lb_op", std::string(k.op_name())},
          {"lb_type", layer_type(c.problem)},
          {"lb_dtype", name(c.problem.dt)},
          {"lb_relu", name(c.problem.relu)},
          {"lb_problem", print(c.problem)},
          {"lb_layer", c.problem.name},
          {"lb_threads", c.threads},
          {"lb_cache", c.cold ? "cold" : "hot"}};
}

void Reporter::ReportRuns(const std::vector<Run>& reported) {
  // Cases cut short by a signal are not results: --resume runs them again.
  if (reported.empty() || (reported[0].error_occurred && reported[0].error_message == kInterrupted)) return;
  const std::string case_name = reported[0].run_name.function_name;
  const Case& c = *cases_.at(case_name);
  const CaseNotes& notes = c.notes;
  // Google Benchmark reports a case's repetitions in one call and their aggregates in
  // the next.
  const bool repetitions = reported[0].run_type == Run::RT_Iteration;
  std::vector<Run> runs = repetitions ? kept_repetitions(reported, notes) : reported;
  if (repetitions)
    kept_ = runs;
  else if (kept_.size() < size_t(reported[0].repetitions))
    recompute_aggregates(runs, kept_);
  if (display_) display_->ReportRuns(runs);
  json_.ReportRuns(runs);
  std::string text = json_text_.str().substr(consumed_);
  consumed_ = json_text_.str().size();
  // The new run objects, separated (and after the first call, preceded) by commas.
  text = json_numbers(std::move(text));
  text[0] = text[0] == ',' ? '[' : text[0];
  if (text[0] != '[') text.insert(text.begin(), '[');
  text += ']';
  Json batch = Json::parse(text);

  // The coefficient of variation of the repetitions' times marks noise.
  if (repetitions) {
    double sum = 0, sum_sq = 0;
    int n = 0;
    for (const Run& r : runs)
      if (!r.error_occurred) {
        const double t = r.GetAdjustedRealTime();
        sum += t;
        sum_sq += t * t;
        ++n;
      }
    const double mean = n ? sum / n : 0;
    if (n > 1 && mean > 0) cv_[case_name] = std::sqrt(std::max(0.0, sum_sq / n - mean * mean)) / mean;
  }
  const auto cv = cv_.find(case_name);
  const bool noisy = cv != cv_.end() && cv->second > noisy_cv_;
  const Json identity = case_identity(c);
  for (size_t i = 0; i < batch.size(); ++i) {
    Json& j = batch[i];
    j["lb_case"] = case_name;
    j.update(identity);
    j["lb_status"] = name(notes.status);
    j["lb_details"] = notes.details;
    j["lb_reason"] = notes.reason;
    if (!notes.repro.empty()) j["lb_repro"] = notes.repro;
    j["lb_noisy"] = noisy;
    if (notes.rse >= 0) j["lb_rse_pct"] = 100.0 * notes.rse;
    if (!notes.stop.empty()) j["lb_stop"] = notes.stop;
    // max_bytes_used, the field Google Benchmark's memory manager would fill: the case's
    // resident high-water mark above its baseline (runner.h).
    if (notes.max_bytes_used >= 0 && j.value("run_type", "") == "iteration")
      j["max_bytes_used"] = notes.max_bytes_used;
    if (cv != cv_.end()) j["lb_cv"] = cv->second;
    append_line(j);
    runs_.push_back(j);
  }
  failed_ |= notes.status == Status::failed;
  if (repetitions && !display_) print_case(runs, std::string(name(notes.status)), noisy);
}

void Reporter::Finalize() {
  if (display_) display_->Finalize();
  if (out_.empty()) return;
  write_json_atomically(out_, Json{{"context", context_}, {"benchmarks", runs_}});
}

void merge_results(const std::string& out, const std::vector<std::string>& inputs) {
  if (inputs.empty()) throw Error("merge: expected OUT.json and at least one input");
  Json context;
  std::vector<Json> all;
  std::set<std::string> seen;  // a case (with its repetition or aggregate) is kept once
  std::string sources;
  for (const std::string& in : inputs) {
    Json ctx;
    std::vector<Json> runs;
    if (in.ends_with(".jsonl")) {
      runs = read_jsonl(in, &ctx);
    } else {
      std::ifstream f(in);
      if (!f) throw Error("merge: cannot read '" + in + "'");
      Json j = Json::parse(f, nullptr, false);
      if (j.is_discarded() || !j.contains("benchmarks"))
        throw Error("merge: '" + in + "' is not a Google Benchmark JSON file");
      ctx = j.value("context", Json::object());
      runs = j["benchmarks"].get<std::vector<Json>>();
    }
    if (context.is_null()) context = ctx;
    sources += (sources.empty() ? "" : " ") + in;
    for (Json& r : runs) {
      const std::string key = r.value("name", "") + "|" + std::to_string(r.value("repetition_index", -1)) +
                              "|" + r.value("aggregate_name", "");
      if (seen.insert(key).second) all.push_back(std::move(r));
    }
  }
  if (context.is_null()) context = Json::object();
  context["layerbench_merged_from"] = sources;
  write_json_atomically(out, Json{{"context", context}, {"benchmarks", all}});
}

std::string cpu_gpu_table(const std::vector<Json>& runs) {
  struct Best {
    double time = 0;
    std::string kernel, unit;
  };
  struct Row {
    std::string problem, dtype;
    Best cpu, gpu;
  };
  std::map<std::string, Row> rows;  // key: label (the canonical problem line)
  std::vector<std::string> order;
  for (const Json& r : runs) {
    if (r.value("error_occurred", false) || r.value("run_type", "") != "iteration") continue;
    const std::string id = r.value("lb_case", "").substr(0, r.value("lb_case", "").find('/'));
    const KernelEntry* k = registry().find(id);
    if (!k) continue;
    const std::string label = r.value("label", "");
    auto [it, inserted] = rows.try_emplace(label);
    if (inserted) {
      order.push_back(label);
      const std::string c = r.value("lb_case", "");
      const size_t a = c.find('/'), b = c.find('/', a + 1), d = c.find('/', b + 1);
      it->second.dtype = c.substr(a + 1, b - a - 1);
      it->second.problem = c.substr(b + 1, d - b - 1);
    }
    Best& best = k->info.device == Device::gpu ? it->second.gpu : it->second.cpu;
    const double t = r.value("real_time", 0.0);
    if (best.kernel.empty() || t < best.time) best = {t, id, r.value("time_unit", "")};
  }
  cli::Table t({"problem", "dt", "fastest CPU kernel", "time", "fastest GPU kernel", "time", "GPU speed-up"},
               {true, true, true, false, true, false, false});
  for (const std::string& label : order) {
    const Row& row = rows[label];
    auto cell = [](const Best& b) {
      return b.kernel.empty() ? std::string("-") : cli::fixed(b.time, 1) + " " + b.unit;
    };
    const bool both = !row.cpu.kernel.empty() && !row.gpu.kernel.empty();
    t.add({row.problem, row.dtype, row.cpu.kernel.empty() ? "-" : row.cpu.kernel, cell(row.cpu),
           row.gpu.kernel.empty() ? "-" : row.gpu.kernel, cell(row.gpu),
           both ? cli::fixed(row.cpu.time / row.gpu.time, 1) + "x" : "-"});
  }
  return t.str();
}

}  // namespace lb::bench
