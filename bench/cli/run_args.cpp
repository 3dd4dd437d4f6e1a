#include "bench/cli/run_args.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <iterator>
#include <optional>

#include "bench/cli/args.h"
#include "bench/harness/machine.h"
#include "kernels/common.h"
#include "kernels/registry.h"
#include "kernels/verify.h"

namespace lb::cli {

const char* const kRunUsage = R"(  run [--suite S,...] [--network N,...] [--problem "LINE"]...
      [--batch 1,16,64] [--dtype f32,bf16,...|all] [--relu none,separate,inplace,fused|all]
      [--dir fwd,fwd_train,bwd_d,bwd_w,bwd,train|training|all]
      [--threads 1,2] [--backend B,...] [--kernel ID,...] [--cache hot,cold] [--sync spin,blocking]
      [--shard i/n] [--out results/runs/NAME.json] [--resume | --resume-force | --overwrite]
      [--seed N] [--machine NAME] [--list] [--separable-baseline]
      [--verify-macs N] [--noisy-cv 0.05] [--remeasure-peaks] [--steadiness SECONDS]
      [--rse 1] [--repetitions 3,20] [--case-time 2] [--budget SECONDS] [--benchmark_*...]
                                     time every kernel that supports each case (Google Benchmark
                                     inside; every --benchmark_* flag works). A case repeats until
                                     the relative standard error of its mean time is at most --rse
                                     percent, within --repetitions MIN,MAX and --case-time seconds
                                     of timed work (--benchmark_repetitions=N: exactly N);
                                     --benchmark_enable_random_interleaving shuffles every case's
                                     repetitions among the others' (a case set up again each
                                     time, verified once), so that a minute of a busy machine
                                     does not land on a few cases; a case is written when its
                                     last repetition is done, and --budget is refused.
                                     --dir: the passes (problem lines' dir=; training is
                                     fwd_train,bwd_d,bwd_w,train; an op's missing ones are left
                                     out: an LSTM has no bwd_d or bwd_w, only bwd);
                                     --backend all includes ref, which is otherwise left out;
                                     --separable-baseline adds, after each depthwise conv and the
                                     pointwise 1x1 on its output, the standard conv they replace
                                     (same input, output and filter; g=1, relu none; named
                                     DW.PW_standard);
                                     --budget: no case starts once SECONDS have passed since the
                                     start (peaks and warm-up included); the rest are written as
                                     not_run "not run: time budget", and --resume runs them;
                                     --steadiness: probe the machine for SECONDS before the cases
                                     and briefly before each (a core's FMA throughput and clock
                                     in short windows; the results file's layerbench_steadiness
                                     says whether other work shared the core);
                                     --list only lists the cases. An existing result is continued
                                     (--resume: same settings; --resume-force: any) or replaced
                                     (--overwrite), never silently; one run writes an --out at a time
  merge [--force] OUT.json IN.json|IN.jsonl...
                                     merge shards or interrupted runs into one results file (whole
                                     cases; --force: across machines or settings)
)";

namespace {

template <class T, class F>
std::vector<T> list_of(const Args& a, const std::string& flag, F parse) {
  std::vector<T> out;
  if (auto v = a.get(flag))
    for (const std::string& item : split_list(*v))
      out.push_back(parse(item));
  return out;
}

std::string as_is(const std::string& s) {
  return s;
}

// The flags both commands share: the problems (sources), the axes and the filters; and
// the switch that adds problems (--separable-baseline).
// The flags of the sources, the filters and the axes a command takes (axes.h: run every
// axis, check those with in_check).
std::set<std::string> sweep_flags(bool check) {
  std::set<std::string> flags = {"suite", "network", "problem", "backend", "kernel"};
  for (const bench::Axis& axis : bench::axes())
    if (!check || axis.in_check) flags.emplace(axis.flag);
  return flags;
}
const std::set<std::string> kSweepSwitches = {"separable-baseline"};

bench::SweepSpec sweep_spec(const Args& a, bool check) {
  bench::SweepSpec spec;
  spec.suites = list_of<std::string>(a, "suite", as_is);
  spec.networks = list_of<std::string>(a, "network", as_is);
  if (auto p = a.get("problem")) spec.problems = {*p};
  for (const bench::Axis& axis : bench::axes())
    if (auto v = a.get(std::string(axis.flag)); v && (!check || axis.in_check))
      spec.axes[std::string(axis.flag)] = axis.parse(*v);
  spec.backends = list_of<std::string>(a, "backend", as_is);
  if (spec.backends == std::vector<std::string>{"all"}) spec.backends = registry().backends();
  spec.kernels = list_of<std::string>(a, "kernel", as_is);
  spec.separable_baseline = a.on("separable-baseline");
  return spec;
}

// i/n: two integers and nothing else, 0 <= i < n.
void parse_shard(const std::string& s, bench::SweepSpec& spec) {
  const size_t slash = s.find('/');
  auto whole = [](const std::string& t, int& out) {
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
    return !t.empty() && ec == std::errc() && end == t.data() + t.size();
  };
  if (slash == std::string::npos || !whole(s.substr(0, slash), spec.shard) ||
      !whole(s.substr(slash + 1), spec.shards) || spec.shards < 1 || spec.shard < 0 ||
      spec.shard >= spec.shards)
    throw Error("--shard " + s + ": expected i/n with 0 <= i < n, e.g. 0/4");
}

// A boolean flag's value as Google Benchmark reads it (true, yes, on, 1 ... / false, no,
// off, 0 ...); nullopt for anything else.
std::optional<bool> switch_value(std::string v) {
  for (char& ch : v)
    ch = char(std::tolower(static_cast<unsigned char>(ch)));
  if (v == "true" || v == "yes" || v == "on" || v == "1" || v == "t" || v == "y") return true;
  if (v == "false" || v == "no" || v == "off" || v == "0" || v == "f" || v == "n") return false;
  return std::nullopt;
}

// --benchmark_min_time's value as seconds, or nullopt where it is no number (Google
// Benchmark rejects such a flag, and says why, before anything runs).
std::optional<double> min_time_seconds(const std::string& value) {
  double s = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), s);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size()) return std::nullopt;
  return s;
}

// Google Benchmark's flags go through its own parser (run.cpp), which rejects unknown
// ones and malformed values. Checked here: values it would accept and then crash on or
// quietly ignore, and the flags that would break what a results file promises.
void check_gbench_flag(const std::string& flag) {
  const size_t eq = flag.find('=');
  const std::string key = flag.substr(0, eq), value = eq == std::string::npos ? "" : flag.substr(eq + 1);
  if (key == "--benchmark_format") {
    if (value != "console" && value != "json" && value != "csv")
      throw Error(flag + ": expected console, json or csv");
  } else if (key == "--benchmark_repetitions") {
    int n = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (value.empty() || ec != std::errc() || end != value.data() + value.size() || n < 1)
      throw Error(flag + ": expected an integer >= 1");
  } else if (key == "--benchmark_out" || key == "--benchmark_out_format") {
    throw Error(key + ": not supported; --out FILE.json writes the results (Google Benchmark JSON)");
  } else if (key == "--benchmark_list_tests") {
    throw Error(key + ": not supported; --list lists the cases");
  } else if (key == "--benchmark_report_aggregates_only" || key == "--benchmark_display_aggregates_only") {
    throw Error(key + ": not supported; a case's repetitions and aggregates are kept together");
  } else if (key == "--benchmark_enable_random_interleaving") {
    if (eq != std::string::npos && !switch_value(value)) throw Error(flag + ": expected true or false");
  }
}

// --rse, --repetitions MIN,MAX, --case-time, and what Google Benchmark's own flags imply.
bench::Repetitions parse_repetitions(const Args& a, const std::vector<std::string>& gbench) {
  bench::Repetitions r;
  r.rse_target = a.number("rse", 100 * r.rse_target, 0, "1 (percent)") / 100;
  r.cap_seconds = a.number("case-time", r.cap_seconds, 0, "2 (seconds)");
  if (auto v = a.get("repetitions")) {
    const std::vector<std::string> mm = split_list(*v);
    if (mm.size() != 2) throw Error("--repetitions " + *v + ": expected MIN,MAX, e.g. 3,20");
    r.min = int(positive("repetitions", mm[0]));
    r.max = int(positive("repetitions", mm[1]));
    if (r.min > r.max) throw Error("--repetitions " + *v + ": MIN is larger than MAX");
  }
  r.fixed = !gbench_value(gbench, "benchmark_repetitions").empty();
  r.min_time_s = min_time_seconds(gbench_value(gbench, "benchmark_min_time")).value_or(r.min_time_s);
  return r;
}

}  // namespace

std::string gbench_value(const std::vector<std::string>& gbench, const std::string& flag) {
  std::string value;
  for (const std::string& f : gbench)
    if (f.rfind("--" + flag + "=", 0) == 0) value = f.substr(flag.size() + 3);
  return value;
}

RunArgs parse_run_args(const std::vector<std::string>& argv) {
  RunArgs r;
  // --benchmark_* flags go to Google Benchmark, after our defaults so the user's win.
  std::vector<std::string> ours;
  r.gbench = {"--benchmark_min_time=0.1"};
  for (const std::string& arg : argv)
    if (arg.rfind("--benchmark_", 0) == 0) {
      check_gbench_flag(arg);
      r.gbench.push_back(arg);
      r.gbench_format |= arg.rfind("--benchmark_format=", 0) == 0;
      if (arg.rfind("--benchmark_enable_random_interleaving", 0) == 0) {  // the last one given wins
        const size_t eq = arg.find('=');
        r.interleaved = eq == std::string::npos || *switch_value(arg.substr(eq + 1));
      }
    } else {
      ours.push_back(arg);
    }
  std::set<std::string> values = sweep_flags(false);
  values.insert({"shard", "out", "seed", "verify-macs", "noisy-cv", "rse", "repetitions", "case-time",
                 "machine", "budget", "steadiness"});
  std::set<std::string> switches = kSweepSwitches;
  switches.insert({"resume", "resume-force", "overwrite", "remeasure-peaks", "list"});
  const Args a = parse_args("run", ours, values, switches);
  if (!a.positional.empty()) throw Error("run: unexpected argument '" + a.positional[0] + "'");

  r.spec = sweep_spec(a, false);
  if (auto s = a.get("shard")) parse_shard(*s, r.spec);

  r.options.seed = uint64_t(a.integer("seed", 1, 0));
  r.options.max_reference_macs = a.integer("verify-macs", kDefaultReferenceMacs, 0);
  r.options.repetitions = parse_repetitions(a, r.gbench);
  // Google Benchmark runs every case for MAX repetitions; those past the stopping point
  // do no work (runner.h). Given globally, not per case, so that names stay as they were.
  if (!r.options.repetitions.fixed)
    r.gbench.insert(r.gbench.begin() + 1,
                    "--benchmark_repetitions=" + std::to_string(r.options.repetitions.max));
  r.noisy_cv = a.number("noisy-cv", r.noisy_cv, 0, "0.05");
  r.options.budget_seconds = a.number("budget", 0, 0, "600 (seconds; 0: none)");
  if (r.interleaved && r.options.budget_seconds > 0)
    throw Error(
        "--budget: not with --benchmark_enable_random_interleaving (every case starts within the first "
        "repetitions, so a budget would stop none)");
  r.steadiness_seconds = a.number("steadiness", 0, 0, "2 (seconds; 0: not measured)");
  if (r.steadiness_seconds > 60) throw Error("--steadiness " + *a.get("steadiness") + ": at most 60 seconds");
  r.out = a.get("out").value_or("");
  if (a.get("out") && r.out.empty()) throw Error("--out '': expected a path ending in .json");
  r.resume_force = a.on("resume-force");
  r.resume = a.on("resume") || r.resume_force;
  r.overwrite = a.on("overwrite");
  if (r.resume && r.overwrite) throw Error("run: --resume and --overwrite exclude each other");
  r.machine = a.get("machine").value_or("");
  if (a.get("machine")) bench::check_machine_name(r.machine, "--machine");
  if (const char* env = std::getenv("LB_MACHINE"); env && *env) bench::check_machine_name(env, "LB_MACHINE");
  r.remeasure_peaks = a.on("remeasure-peaks");
  r.list = a.on("list");
  if (r.resume && r.out.empty()) throw Error("run: --resume needs --out");
  if (r.overwrite && r.out.empty()) throw Error("run: --overwrite needs --out");
  if (!r.out.empty() && !r.out.ends_with(".json"))
    throw Error("--out " + r.out + ": expected a path ending in .json");
  return r;
}

CheckArgs parse_check_args(const std::vector<std::string>& argv) {
  std::set<std::string> values = sweep_flags(true);
  values.insert({"seed", "max-macs"});
  std::set<std::string> switches = kSweepSwitches;
  switches.insert("full");
  const Args a = parse_args("check", argv, values, switches);
  if (!a.positional.empty()) throw Error("check: unexpected argument '" + a.positional[0] + "'");
  const int sources =
      int(a.get("suite").has_value()) + int(a.get("network").has_value()) + int(a.get("problem").has_value());
  if (sources > 1) throw Error("check: give one of --suite, --network, --problem");
  CheckArgs c;
  c.spec = sweep_spec(a, true);
  c.spec.every_kernel = true;  // ref and opt-in kernels are checked unless filtered out
  c.seed = uint64_t(a.integer("seed", 1, 0));
  c.max_macs = a.integer("max-macs", 0, 0);
  c.reference_macs = a.on("full") ? 0 : kDefaultReferenceMacs;
  return c;
}

}  // namespace lb::cli
