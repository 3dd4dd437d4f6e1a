#include "bench/harness/results.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>

#include "bench/cli/format.h"
#include "bench/harness/json_text.h"
#include "bench/harness/machine.h"
#include "bench/harness/phases.h"
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

// Which case a run object belongs to: lb_case, else (a foreign Google Benchmark file)
// its run_name or name.
std::string case_key(const Json& r) {
  if (r.contains("lb_case")) return r["lb_case"].get<std::string>();
  return r.value("run_name", r.value("name", ""));
}

// A case's objects are whole when none was cut short by a signal and, as lb_case_runs
// says (older files: one object per repetition), none is missing.
bool whole_case(const std::vector<Json>& runs) {
  for (const Json& r : runs)
    if (r.value("error_message", "") == kInterrupted) return false;
  if (runs[0].contains("lb_case_runs")) return runs.size() == runs[0]["lb_case_runs"].get<size_t>();
  if (runs[0].value("error_occurred", false)) return true;
  size_t repetitions = 0;
  for (const Json& r : runs)
    repetitions += r.value("run_type", "iteration") == "iteration";
  return repetitions >= size_t(runs[0].value("repetitions", 1));
}

// Splits runs into cases (consecutive objects of one case); whole ones go to `cases` (a
// later copy replaces an earlier one), the names of the others to `partial`.
void add_cases(const std::vector<Json>& runs, CaseRuns& cases, std::vector<std::string>* partial) {
  for (size_t i = 0; i < runs.size();) {
    const std::string key = case_key(runs[i]);
    size_t end = i;
    while (end < runs.size() && case_key(runs[end]) == key)
      ++end;
    std::vector<Json> block(runs.begin() + long(i), runs.begin() + long(end));
    if (whole_case(block)) {
      if (!cases.runs.count(key)) cases.order.push_back(key);
      cases.runs[key] = std::move(block);
    } else if (partial) {
      partial->push_back(key);
    }
    i = end;
  }
}

// The lines of a .jsonl: run objects (returned per session: a settings or context line
// starts the next, so a case cut short in one session and run again in the next are two
// copies), the last context and settings line. A last line that is cut short or not JSON
// is torn (the run died writing it): left out, and `whole_bytes` is where it starts. A bad
// line elsewhere is an error naming file:line.
std::vector<std::vector<Json>> parse_log(const std::string& text, const std::string& path, Json* context,
                                         Json* settings, size_t* whole_bytes) {
  std::vector<std::vector<Json>> sessions(1);
  *whole_bytes = text.size();
  int number = 0;
  for (size_t at = 0; at < text.size();) {
    ++number;
    const size_t nl = text.find('\n', at);
    const size_t end = nl == std::string::npos ? text.size() : nl;
    const bool last = end + 1 >= text.size();
    const std::string line = text.substr(at, end - at);
    const size_t start = at;
    at = end + 1;
    if (line.empty()) continue;
    Json j = Json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || nl == std::string::npos) {
      if (last) {
        *whole_bytes = start;
        break;
      }
      throw Error(path + ":" + std::to_string(number) + ": not a JSON object (the file is damaged)");
    }
    if (j.contains("layerbench_settings")) {
      if (settings) *settings = j["layerbench_settings"];
      sessions.emplace_back();
    } else if (j.contains("context")) {
      if (context) *context = j["context"];
      sessions.emplace_back();
    } else {
      sessions.back().push_back(std::move(j));
    }
  }
  return sessions;
}

std::string read_text(const std::string& path, const std::string& who) {
  if (std::filesystem::is_directory(path))
    throw Error(who + "'" + path + "' is a directory, not a results file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(who + "cannot read '" + path + "': " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Writes all of text to fd; false (errno set) on an error.
bool write_all(int fd, const std::string& text) {
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    done += size_t(n);
  }
  return true;
}

// The pid that holds an flock on fd's file, from /proc/locks; 0 when not found.
long lock_holder(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return 0;
  std::ifstream locks("/proc/locks");
  for (std::string line; std::getline(locks, line);) {
    // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; waiters have "->" after the number.
    std::istringstream f(line);
    std::string number, type, mode, access, dev_inode;
    long pid = 0;
    f >> number >> type >> mode >> access >> pid >> dev_inode;
    const size_t colon = dev_inode.rfind(':');
    if (type != "FLOCK" || colon == std::string::npos) continue;
    if (dev_inode.substr(colon + 1) == std::to_string(st.st_ino)) return pid;
  }
  return 0;
}

// The median repetition of a case, by its times: the index of the upper middle one of an
// even count (a repetition that ran, not the mean of two), as the progress line and the
// end table both give it.
size_t median_repetition(const std::vector<double>& times) {
  std::vector<size_t> order(times.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::nth_element(order.begin(), order.begin() + ptrdiff_t(order.size() / 2), order.end(),
                   [&times](size_t a, size_t b) { return times[a] < times[b]; });
  return order[order.size() / 2];
}

}  // namespace

const std::set<std::string> kSelectionSettings = [] {
  std::set<std::string> keys = {"suites",  "networks",           "problems", "backends",
                                "kernels", "separable_baseline", "shard",    "benchmark_filter"};
  for (const std::string& key : axis_settings())  // batches, dtypes, relus, dirs, cache, sync, threads
    keys.insert(key);
  return keys;
}();

std::string settings_difference(const Json& before, const Json& now, const std::set<std::string>& ignore) {
  if (!before.is_object()) return "no settings recorded";
  std::set<std::string> keys;
  for (const auto& [key, value] : before.items())
    keys.insert(key);
  for (const auto& [key, value] : now.items())
    keys.insert(key);
  for (const std::string& key : keys) {
    if (ignore.count(key)) continue;
    auto text = [&key](const Json& settings) {
      if (!settings.is_object() || !settings.contains(key)) return std::string("(none)");
      const Json& v = settings[key];
      return v.is_string() ? v.get<std::string>() : json_text(v);
    };
    const std::string was = text(before), is = text(now);
    if (was != is) return key + ": '" + was + "' before, '" + is + "' now";
  }
  return {};
}

std::vector<Json> CaseRuns::flat() const {
  std::vector<Json> all;
  for (const std::string& name : order)
    for (const Json& r : runs.at(name))
      all.push_back(r);
  return all;
}

RunLog::RunLog(const std::string& out, bool resume, bool overwrite) : out_(out), path_(out + "l") {
  for (const std::string& p : {out_, path_})
    if (std::filesystem::is_directory(p)) throw Error("--out " + out_ + ": '" + p + "' is a directory");
  fd_ = ::open(path_.c_str(), O_RDWR | O_APPEND | O_CLOEXEC);
  const bool existed = fd_ >= 0;
  if (!existed && errno != ENOENT) throw Error("cannot open '" + path_ + "': " + std::strerror(errno));
  if (!existed) {
    // The log is made only once nothing stands against the run; a refusal leaves no file.
    if (std::filesystem::exists(out_) && resume)
      throw Error(out_ + " has no log in " + path_ +
                  " to continue from (--resume continues the log; --overwrite starts again)");
    if (std::filesystem::exists(out_) && !overwrite)
      throw Error(out_ + " already holds results: --resume continues the run, --overwrite replaces it");
    const std::filesystem::path parent = std::filesystem::path(path_).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    fd_ = ::open(path_.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw Error("cannot create '" + path_ + "': " + std::strerror(errno));
  }
  try {
    lock_and_read(resume, overwrite);
  } catch (...) {
    ::close(fd_);  // the destructor does not run for a constructor that throws
    throw;
  }
}

void RunLog::lock_and_read(bool resume, bool overwrite) {
  if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) throw Error("cannot lock '" + path_ + "': " + std::strerror(errno));
    const long holder = lock_holder(fd_);
    throw Error(path_ + " is being written by another layerbench run (" +
                (holder ? "pid " + std::to_string(holder) : std::string("pid unknown")) +
                "); wait for it or choose another --out");
  }
  const std::string text = read_text(path_, "");
  const bool results = std::filesystem::exists(out_);
  if (!resume && !overwrite && (!text.empty() || results))
    throw Error(out_ + " already holds results: --resume continues the run, --overwrite replaces it");
  if (resume && text.empty() && results)
    throw Error(out_ + " has no log in " + path_ +
                " to continue from (--resume continues the log; --overwrite starts again)");
  if (!resume) return;
  size_t whole_bytes = 0;
  try {
    for (const std::vector<Json>& runs : parse_log(text, path_, nullptr, &previous_settings_, &whole_bytes))
      add_cases(runs, previous_, &partial_);
  } catch (const Json::exception& e) {
    throw Error(path_ + ": not a layerbench log (" + std::string(e.what()) + ")");
  }
  // A torn last line is cut off before the first write (so that the next line starts on a
  // line of its own), not now: a resume refused for its settings leaves the file as it was.
  torn_bytes_ = text.size() - whole_bytes;
  std::erase_if(partial_, [this](const std::string& name) { return previous_.runs.count(name) > 0; });
  has_lines_ = !previous_settings_.is_null() || !previous_.order.empty() || !partial_.empty();
}

RunLog::~RunLog() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

void RunLog::start(const Json& settings) {
  torn_bytes_ = 0;
  if (ftruncate(fd_, 0) != 0) throw Error("cannot empty '" + path_ + "': " + std::strerror(errno));
  if (std::filesystem::exists(out_) && std::remove(out_.c_str()) != 0)
    throw Error("cannot remove '" + out_ + "': " + std::strerror(errno));
  append_settings(settings);
}

void RunLog::append_settings(const Json& settings) {
  append({Json{{"layerbench_settings", settings}}});
}

void RunLog::append(const std::vector<Json>& lines) {
  const PhaseScope writing(Phase::writing);
  if (torn_bytes_) {
    const off_t size = lseek(fd_, 0, SEEK_END);
    if (size < off_t(torn_bytes_) || ftruncate(fd_, size - off_t(torn_bytes_)) != 0)
      throw Error("cannot cut the torn last line of '" + path_ + "': " + std::strerror(errno));
    std::fprintf(stderr,
                 "layerbench: %s: cut off a torn last line (%zu bytes; the run stopped while writing it)\n",
                 path_.c_str(), torn_bytes_);
    torn_bytes_ = 0;
  }
  std::string text;
  for (const Json& j : lines)
    text += json_text(j) + "\n";  // nlohmann writes NaN and infinities as null
  const off_t before = lseek(fd_, 0, SEEK_END);
  if (!write_all(fd_, text)) {
    const int error = errno;
    if (before >= 0 && ftruncate(fd_, before) != 0) {
      // The partial line stays; the next --resume cuts it off.
    }
    throw Error("cannot append to '" + path_ + "': " + std::strerror(error) +
                "; every case before it is kept: continue with --resume");
  }
}

CaseRuns RunLog::read(Json* context, Json* settings) const {
  size_t whole_bytes = 0;
  CaseRuns cases;
  for (const std::vector<Json>& runs :
       parse_log(read_text(path_, ""), path_, context, settings, &whole_bytes))
    add_cases(runs, cases, nullptr);
  return cases;
}

void RunLog::write_results(Json context) const {
  const PhaseScope writing(Phase::writing);
  Json logged_context, settings;
  const CaseRuns cases = read(&logged_context, &settings);
  if (context.is_null()) context = logged_context.is_null() ? Json::object() : logged_context;
  context["layerbench_settings"] = settings;
  write_json_atomically(out_, results_document(std::move(context), cases));
}

Json results_document(Json context, const CaseRuns& cases) {
  context["layerbench_format_version"] = kFormatVersion;
  Json measured = Json::array(), not_measured = Json::array();
  for (const std::string& name : cases.order) {
    const std::vector<Json>& runs = cases.runs.at(name);
    const bool error =
        std::any_of(runs.begin(), runs.end(), [](const Json& r) { return r.value("error_occurred", false); });
    for (const Json& r : runs) {
      if (!error) {
        measured.push_back(r);
        continue;
      }
      Json entry = r;  // the run object as it was (merge reads it back), and the short keys
      entry["status"] = r.value("lb_status", "failed");
      entry["reason"] = r.value("lb_reason", r.value("error_message", ""));
      entry["kernel"] = r.value("lb_kernel", "");
      entry["problem"] = r.value("lb_problem", "");
      if (r.contains("lb_repro")) entry["repro"] = r["lb_repro"];
      not_measured.push_back(std::move(entry));
    }
  }
  return {
      {"context", std::move(context)}, {"benchmarks", measured}, {"layerbench_not_measured", not_measured}};
}

void write_json_atomically(const std::string& path, const Json& j) {
  const std::filesystem::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), ec);
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error("cannot write '" + tmp + "': " + std::strerror(errno));
  const bool written = write_all(fd, json_text(j, 2) + "\n");
  const int error = errno;
  if (::close(fd) != 0 || !written) {
    std::remove(tmp.c_str());
    throw Error("cannot write '" + tmp + "': " + std::strerror(written ? errno : error));
  }
  std::filesystem::rename(tmp, target, ec);
  if (ec) throw Error("cannot rename '" + tmp + "' to '" + path + "': " + ec.message());
}

Reporter::Reporter(RunLog* log, const std::vector<Case>& cases, std::vector<Json> previous, double noisy_cv,
                   std::unique_ptr<benchmark::BenchmarkReporter> display, bool shuffled)
    : log_(log),
      total_(cases.size()),
      noisy_cv_(noisy_cv),
      shuffled_(shuffled),
      runs_(std::move(previous)),
      display_(std::move(display)) {
  json_.SetOutputStream(&json_text_);
  json_.SetErrorStream(&json_text_);
  for (const Case& c : cases)
    cases_[c.name] = &c;
}

bool Reporter::ReportContext(const Context& context) {
  if (!context_.is_null()) return true;  // a later group of the same run (run.cpp, run_cases)
  start_ = wall_seconds();
  if (display_) {
    display_->SetOutputStream(&GetOutputStream());
    display_->SetErrorStream(&GetErrorStream());
    display_->ReportContext(context);
  }
  json_.ReportContext(context);
  // Google Benchmark's JSON so far: {"context": {...}, "benchmarks": [   — close it to parse it.
  const std::string text = json_text_.str();
  json_text_.str({});  // drained: each ReportRuns reads only what came since
  context_ = Json::parse(json_numbers(text) + "]}")["context"];
  if (!display_) {
    GetOutputStream() << "layerbench run: " << total_ << " cases on "
                      << context_.value("layerbench_cpu_model", "?") << " ("
                      << context_.value("layerbench_cpu_isa", "") << ")"
                      << (shuffled_
                              ? "; repetitions shuffled: the cases finish together near the end (no ETA)"
                              : "")
                      << "\n";
    if (context_.value("library_build_type", "") == "debug")
      GetOutputStream()
          << "note: this Google Benchmark library was built without NDEBUG (as Debian ships it); "
             "layerbench's own timing does not depend on it\n";
  }
  if (log_) log_->append({Json{{"context", context_}}});
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
    // The median repetition: its time and its own rates, so that GFLOP/s and % of peak are
    // the time's (the last repetition's differ by its noise).
    std::vector<double> times;
    for (const Run& r : runs)
      times.push_back(r.GetAdjustedRealTime());
    const Run& mid = runs[median_repetition(times)];
    auto counter = [&mid](const char* key) {
      auto it = mid.counters.find(key);
      return it == mid.counters.end() ? -1.0 : double(it->second.value);
    };
    line << cli::fixed(mid.GetAdjustedRealTime(), 1) << " " << benchmark::GetTimeUnitString(mid.time_unit)
         << "  " << cli::fixed(counter("lb_flop_per_s") / 1e9, 1) << " GFLOP/s";
    if (counter("lb_pct_peak") >= 0) line << "  " << cli::fixed(counter("lb_pct_peak"), 0) << "% of peak";
    if (counter("lb_pct_bw") >= 0) line << "  " << cli::fixed(counter("lb_pct_bw"), 0) << "% of bandwidth";
    line << "  cpu " << cli::fixed(counter("lb_cpu_util_avg"), 0) << "%"
         << "  host +" << cli::fixed(counter("lb_host_peak_bytes") / 1e6, 1) << " MB  " << status
         << (noisy ? " (noisy)" : "");
  }
  line << "  [" << duration(elapsed) << (shuffled_ ? "" : ", ETA " + duration(eta)) << "]\n";
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
  Json j = {{"lb_kernel", k.info.id},           {"lb_backend", std::string(k.backend())},
            {"lb_device", name(k.info.device)}, {"lb_op", std::string(k.op_name())},
            {"lb_type", layer_type(c.problem)}, {"lb_problem", print(c.problem)},
            {"lb_layer", c.problem.name}};
  add_identity(j, c);  // lb_dtype, lb_relu, lb_dir, lb_cache, lb_threads (axes.h)
  return j;
}

void Reporter::flush_case() {
  if (pending_.empty()) return;
  for (Json& j : pending_)
    j["lb_case_runs"] = pending_.size();
  if (log_) log_->append(pending_);
  runs_.insert(runs_.end(), pending_.begin(), pending_.end());
  pending_.clear();
}

void Reporter::ReportRuns(const std::vector<Run>& reported) {
  if (reported.empty()) return;
  const PhaseScope phase(Phase::writing);
  const std::string case_name = reported[0].run_name.function_name;
  if (case_name != pending_case_) {
    flush_case();
    pending_case_ = case_name;
    pending_dropped_ = false;
  }
  // A case cut short by a signal is not a result, however many repetitions it finished:
  // none of its objects (nor its aggregates, which come next) are kept; --resume runs it.
  pending_dropped_ |= std::any_of(reported.begin(), reported.end(), [](const Run& r) {
    return r.error_occurred && r.error_message == kInterrupted;
  });
  if (pending_dropped_) {
    pending_.clear();
    return;
  }
  const Case& c = *cases_.at(case_name);
  const CaseNotes& notes = c.notes;
  // Google Benchmark reports a case's repetitions in one call and, when at least two of
  // them ran without error, their aggregates in the next.
  const bool repetitions = reported[0].run_type == Run::RT_Iteration;
  const bool aggregates_follow =
      repetitions &&
      std::count_if(reported.begin(), reported.end(), [](const Run& r) { return !r.error_occurred; }) >= 2;
  std::vector<Run> runs = repetitions ? kept_repetitions(reported, notes) : reported;
  if (repetitions)
    kept_ = runs;
  else if (kept_.size() < size_t(reported[0].repetitions))
    recompute_aggregates(runs, kept_);
  if (display_) display_->ReportRuns(runs);
  json_.ReportRuns(runs);
  // Drained every call: copying the whole run's text each time (str().substr()) grew with the
  // sweep. The default sweep on the Zen 5 VM: the time outside the phases 260 -> 26 s, the
  // run 704 -> 532 s, its system time 208 -> 103 s (page faults of those copies).
  std::string text = json_text_.str();
  json_text_.str({});
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
    pending_.push_back(std::move(j));
  }
  failed_ |= notes.status == Status::failed;
  if (repetitions && !display_) print_case(runs, std::string(name(notes.status)), noisy);
  if (!aggregates_follow) flush_case();  // the case is whole
}

void Reporter::Finalize() {
  flush_case();
  if (display_) display_->Finalize();
}

namespace {

// One merge input: its context, settings and whole cases, and the cases it has only in part.
struct MergeInput {
  std::string path;
  Json context, settings;
  CaseRuns cases;
  std::vector<std::string> partial;
};

MergeInput read_merge_input(const std::string& path);

// Any input read_merge_input cannot make sense of is one line naming it.
MergeInput read_merge_input_or_say(const std::string& path) {
  try {
    return read_merge_input(path);
  } catch (const Json::exception& e) {
    throw Error("merge: '" + path + "' is not a results file we can read (" + e.what() + ")");
  }
}

MergeInput read_merge_input(const std::string& path) {
  MergeInput in{path, Json::object(), Json(), {}, {}};
  const std::string text = read_text(path, "merge: ");
  std::vector<std::vector<Json>> sessions;
  if (path.ends_with(".jsonl")) {
    size_t whole_bytes = 0;
    sessions = parse_log(text, path, &in.context, &in.settings, &whole_bytes);
    if (whole_bytes < text.size())
      std::fprintf(stderr, "layerbench merge: %s: a torn last line is left out\n", path.c_str());
  } else {
    Json j = Json::parse(json_numbers(text), nullptr, false);
    if (j.is_discarded()) throw Error("merge: '" + path + "' is not JSON");
    if (!j.is_object() || !j.contains("benchmarks") || !j["benchmarks"].is_array())
      throw Error("merge: '" + path + "' is not a Google Benchmark JSON file (no \"benchmarks\" array)");
    if (j.contains("context")) {
      if (!j["context"].is_object()) throw Error("merge: '" + path + "': \"context\" is not an object");
      in.context = j["context"];
      if (in.context.contains("layerbench_settings")) in.settings = in.context["layerbench_settings"];
    }
    sessions = {j["benchmarks"].get<std::vector<Json>>()};
    if (j.contains("layerbench_not_measured")) {
      if (!j["layerbench_not_measured"].is_array())
        throw Error("merge: '" + path + "': \"layerbench_not_measured\" is not an array");
      for (const Json& r : j["layerbench_not_measured"])
        sessions[0].push_back(r);
    }
  }
  for (const std::vector<Json>& runs : sessions)
    for (size_t i = 0; i < runs.size(); ++i)
      if (!runs[i].is_object() || case_key(runs[i]).empty())
        throw Error("merge: '" + path + "': benchmark " + std::to_string(i) +
                    " is not a run object with a name");
  if (in.context.is_null()) in.context = Json::object();
  if (!in.settings.is_null() && !in.settings.is_object())
    throw Error("merge: '" + path + "': layerbench_settings is not an object");
  for (const std::vector<Json>& runs : sessions)
    add_cases(runs, in.cases, &in.partial);
  std::erase_if(in.partial, [&in](const std::string& name) { return in.cases.runs.count(name) > 0; });
  return in;
}

// The machine a file was measured on: its name (format 2), else layerbench's host and CPU,
// else Google Benchmark's host.
std::string machine(const Json& context) {
  if (context.contains("layerbench_machine")) return context.value("layerbench_machine", "");
  const std::string host = context.value("layerbench_host", context.value("host_name", ""));
  return host + ", " + context.value("layerbench_cpu_model", "CPU not recorded");
}

}  // namespace

void merge_results(const std::string& out, const std::vector<std::string>& inputs, bool force) {
  if (inputs.empty()) throw Error("merge: expected OUT.json and at least one input");
  std::vector<MergeInput> all;
  for (const std::string& path : inputs)
    all.push_back(read_merge_input_or_say(path));
  // An input with no case (a shard whose share of a small sweep was nothing) adds none and
  // is not compared; the first with cases is the one the others are compared with. Peaks
  // are measurements, not settings: re-measured between shards on one machine (an hour
  // old, or contended before), they differ, and each case keeps its % of peak as it was.
  auto empty = [](const MergeInput& in) { return in.cases.order.empty() && in.partial.empty(); };
  const auto with_cases =
      std::find_if(all.begin(), all.end(), [&](const MergeInput& in) { return !empty(in); });
  const MergeInput& first = with_cases == all.end() ? all[0] : *with_cases;
  std::set<std::string> ignored = kSelectionSettings;
  ignored.insert("peaks");
  for (const MergeInput& in : all) {
    if (empty(in)) {
      std::fprintf(stderr, "layerbench merge: %s: no cases, nothing taken from it\n", in.path.c_str());
      continue;
    }
    if (machine(in.context) != machine(first.context) && !force)
      throw Error("merge: '" + in.path + "' was measured on another machine (" + machine(in.context) +
                  ") than '" + first.path + "' (" + machine(first.context) + "); --force merges anyway");
    if (!in.settings.is_null() || !first.settings.is_null())
      if (const std::string diff = settings_difference(first.settings, in.settings, ignored);
          !diff.empty() && !force)
        throw Error("merge: '" + in.path + "' was measured with other settings than '" + first.path + "' (" +
                    diff + "); --force merges anyway");
  }
  CaseRuns merged;
  std::map<std::string, std::string> source;  // case -> the input its kept copy came from
  for (const MergeInput& in : all)
    for (const std::string& name : in.cases.order) {
      if (auto it = source.find(name); it != source.end())
        std::fprintf(stderr, "layerbench merge: %s: kept the later copy, from %s (not %s's)\n", name.c_str(),
                     in.path.c_str(), it->second.c_str());
      else
        merged.order.push_back(name);
      merged.runs[name] = in.cases.runs.at(name);
      source[name] = in.path;
    }
  for (const MergeInput& in : all)
    for (const std::string& name : in.partial) {
      if (auto it = source.find(name); it != source.end())
        std::fprintf(stderr, "layerbench merge: %s: kept the whole copy from %s (%s's was interrupted)\n",
                     name.c_str(), it->second.c_str(), in.path.c_str());
      else
        std::fprintf(stderr, "layerbench merge: %s: left out (interrupted in %s, whole in no input)\n",
                     name.c_str(), in.path.c_str());
    }
  std::string sources;
  for (const std::string& in : inputs)
    sources += (sources.empty() ? "" : " ") + in;
  Json context = first.context;
  context["layerbench_merged_from"] = sources;
  write_json_atomically(out, results_document(std::move(context), merged));
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
  std::map<std::string, std::vector<double>> times;  // key: lb_case; its repetitions' times
  std::vector<const Json*> first;                    // each case's first repetition
  for (const Json& r : runs) {
    if (r.value("error_occurred", false) || r.value("run_type", "") != "iteration") continue;
    auto& t = times[r.value("lb_case", "")];
    if (t.empty()) first.push_back(&r);
    t.push_back(r.value("real_time", 0.0));
  }
  for (const Json* r : first) {
    const std::string c = r->value("lb_case", "");
    const std::string id = c.substr(0, c.find('/'));
    const KernelEntry* k = registry().find(id);
    if (!k) continue;
    const std::string label = r->value("label", "");
    auto [it, inserted] = rows.try_emplace(label);
    if (inserted) {
      order.push_back(label);
      const size_t a = c.find('/'), b = c.find('/', a + 1), d = c.find('/', b + 1);
      it->second.dtype = c.substr(a + 1, b - a - 1);
      it->second.problem = c.substr(b + 1, d - b - 1);
    }
    // The case's median repetition, as its progress line gives it.
    const std::vector<double>& t = times[c];
    const double median = t[median_repetition(t)];
    Best& best = k->info.device == Device::gpu ? it->second.gpu : it->second.cpu;
    if (best.kernel.empty() || median < best.time) best = {median, id, r->value("time_unit", "")};
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
