#include "bench/harness/axes.h"

#include <algorithm>
#include <iterator>

#include "bench/cli/args.h"
#include "bench/harness/sweep.h"
#include "kernels/common.h"
#include "kernels/ops/traits.h"

namespace lb::bench {
namespace {

// Each item of a --flag list through `canonical` (which throws on a bad one); `words`
// stand for several values ("all").
template <class F>
std::vector<std::string> each(
    const std::string& list, F canonical,
    const std::vector<std::pair<std::string, std::vector<std::string>>>& words = {}) {
  for (const auto& [word, values] : words)
    if (list == word) return values;
  std::vector<std::string> out;
  for (const std::string& item : cli::split_list(list))
    out.push_back(canonical(item));
  return out;
}

template <class T, size_t N>
std::vector<std::string> names(const T (&all)[N]) {
  std::vector<std::string> out;
  for (const T& x : all)
    out.emplace_back(name(x));
  return out;
}

// One of `choices`, or "--<flag> <s>: expected a or b".
std::string one_of(std::string_view flag, const std::string& s, const std::vector<std::string>& choices) {
  if (std::find(choices.begin(), choices.end(), s) != choices.end()) return s;
  std::string expected;
  for (size_t i = 0; i < choices.size(); ++i)
    expected += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
  throw Error("--" + std::string(flag) + " " + s + ": expected " + expected);
}

// The given values, or else `otherwise`.
std::vector<std::string> given_or(const std::vector<std::string>& given, std::vector<std::string> otherwise) {
  return given.empty() ? otherwise : given;
}

bool threaded(const KernelEntry& k) {
  return k.info.multithreaded && k.info.device != Device::gpu;
}

// In this order: a source's problems over batch, dtype, ReLU and pass, then each kernel's
// cases over the cache, the way of waiting and the threads; the case's name takes their
// parts in this order too (case_name()).
std::vector<Axis> all_axes() {
  return {
      {.flag = "batch",
       .in_check = true,
       .of_case = false,
       .parse =
           [](const std::string& list) {
             return each(list,
                         [](const std::string& s) { return std::to_string(cli::positive("batch", s)); });
           },
       // "": the problem's own mb. A network's layer has mb per sample (T rows for a
       // sequence's projection), which --batch multiplies.
       .values = [](const std::vector<std::string>& given, const Source&,
                    const KernelEntry*) { return given_or(given, {""}); },
       .set =
           [](Case& c, const std::string& v, const Source& s) {
             if (v.empty()) return;
             const int64_t mb = std::stoll(v);
             // Checked before it can overflow; with_batch() then applies a problem line's limits.
             if (s.per_sample && mb > (int64_t(1) << 31) / std::max<int64_t>(s.p.batch(), 1))
               throw Error("--batch " + v + ": layer " + s.p.name + " would have more than 2^31 rows");
             c.problem = with_batch(c.problem, s.per_sample ? s.p.batch() * mb : mb);
           },
       .name_part = nullptr,
       .setting = "batches",
       .setting_value = cli::join_list,
       .identity = {},  // the problem (lb_problem) has its mb
       .identity_value = nullptr},
      {.flag = "dtype",
       .in_check = true,
       .of_case = false,
       .parse =
           [](const std::string& list) {
             return each(list, [](const std::string& s) { return std::string(name(parse_dtype(s))); },
                         {{"all", names(kAllDTypes)}});
           },
       .values = [](const std::vector<std::string>& given, const Source& s,
                    const KernelEntry*) { return given_or(given, {std::string(name(s.p.dt))}); },
       .set = [](Case& c, const std::string& v, const Source&) { c.problem.dt = parse_dtype(v); },
       .name_part = nullptr,  // a folder of its own, right after the kernel's id (case_name())
       .setting = "dtypes",
       .setting_value = cli::join_list,
       .identity = "lb_dtype",
       .identity_value = [](const Case& c) -> nlohmann::json { return name(c.problem.dt); }},
      {.flag = "relu",
       .in_check = false,
       .of_case = false,
       .parse =
           [](const std::string& list) {
             return each(list, [](const std::string& s) { return std::string(name(parse_relu(s))); },
                         {{"all", names(kAllRelus)}});
           },
       .values =
           [](const std::vector<std::string>& given, const Source& s, const KernelEntry*) {
             if (s.baseline) return std::vector<std::string>{"none"};  // compared without its ReLUs
             return given_or(given, {std::string(name(s.p.relu))});
           },
       .set = [](Case& c, const std::string& v, const Source&) { c.problem.relu = parse_relu(v); },
       .name_part = [](const Case& c) -> std::string {
         return c.problem.relu == Relu::none ? "" : "-relu_" + std::string(name(c.problem.relu));
       },
       .setting = "relus",
       .setting_value = cli::join_list,
       .identity = "lb_relu",
       .identity_value = [](const Case& c) -> nlohmann::json { return name(c.problem.relu); }},
      {.flag = "dir",
       .in_check = true,
       .of_case = false,
       .parse =
           [](const std::string& list) {
             return each(list,
                         [](const std::string& s) {
                           try {
                             return std::string(name(parse_pass(s)));
                           } catch (const Error&) {
                             throw Error("--dir " + s + ": expected " + pass_names() + ", training or all");
                           }
                         },
                         {{"all", names(kAllPasses)}, {"training", names(kTrainingPasses)}});
           },
       // The passes the op has (a problem's own dir= was checked when it was parsed).
       .values =
           [](const std::vector<std::string>& given, const Source& s, const KernelEntry*) {
             if (given.empty()) return std::vector<std::string>{std::string(name(s.p.pass))};
             const std::vector<Pass>& has = traits(s.p.op()).passes;
             std::vector<std::string> out;
             for (const std::string& v : given)
               if (std::find(has.begin(), has.end(), parse_pass(v)) != has.end()) out.push_back(v);
             return out;
           },
       .set = [](Case& c, const std::string& v, const Source&) { c.problem.pass = parse_pass(v); },
       .name_part = [](const Case& c) -> std::string {
         return c.problem.pass == Pass::fwd ? "" : "-dir_" + std::string(name(c.problem.pass));
       },
       .setting = "dirs",
       .setting_value = nullptr,  // absent unless given: older logs resume as they were
       .identity = "lb_dir",
       .identity_value = [](const Case& c) -> nlohmann::json { return name(c.problem.pass); }},
      {.flag = "cache",
       .in_check = false,
       .of_case = true,
       .parse =
           [](const std::string& list) {
             return each(list, [](const std::string& s) { return one_of("cache", s, {"hot", "cold"}); });
           },
       .values = [](const std::vector<std::string>& given, const Source&,
                    const KernelEntry*) { return given_or(given, {"hot"}); },
       .set = [](Case& c, const std::string& v, const Source&) { c.cold = v == "cold"; },
       .name_part = [](const Case& c) -> std::string { return c.cold ? "-cold" : ""; },
       .setting = "cache",
       .setting_value =
           [](const std::vector<std::string>& given) { return cli::join_list(given_or(given, {"hot"})); },
       .identity = "lb_cache",
       .identity_value = [](const Case& c) -> nlohmann::json { return c.cold ? "cold" : "hot"; }},
      {.flag = "sync",
       .in_check = false,
       .of_case = true,
       .parse =
           [](const std::string& list) {
             return each(list, [](const std::string& s) { return one_of("sync", s, {"spin", "blocking"}); });
           },
       // A GPU axis: how the host waits for the device.
       .values =
           [](const std::vector<std::string>& given, const Source&, const KernelEntry* k) {
             return k->info.device == Device::gpu ? given_or(given, {"spin"})
                                                  : std::vector<std::string>{"spin"};
           },
       .set = [](Case& c, const std::string& v, const Source&) { c.blocking = v == "blocking"; },
       .name_part = [](const Case& c) -> std::string { return c.blocking ? "-sync_blocking" : ""; },
       .setting = "sync",
       .setting_value =
           [](const std::vector<std::string>& given) { return cli::join_list(given_or(given, {"spin"})); },
       .identity = {},
       .identity_value = nullptr},
      {.flag = "threads",
       .in_check = true,
       .of_case = true,
       .parse =
           [](const std::string& list) {
             return each(list,
                         [](const std::string& s) { return std::to_string(cli::positive("threads", s)); });
           },
       // An axis of multithreaded CPU kernels; the others run once, on one thread.
       .values =
           [](const std::vector<std::string>& given, const Source&, const KernelEntry* k) {
             return threaded(*k) ? given_or(given, {"1"}) : std::vector<std::string>{"1"};
           },
       .set = [](Case& c, const std::string& v, const Source&) { c.threads = int(std::stoll(v)); },
       .name_part = [](const Case& c) -> std::string { return "/threads:" + std::to_string(c.threads); },
       .setting = "threads",
       .setting_value =
           [](const std::vector<std::string>& given) { return cli::join_list(given_or(given, {"1"})); },
       .identity = "lb_threads",
       .identity_value = [](const Case& c) -> nlohmann::json { return c.threads; }},
  };
}

}  // namespace

const std::vector<Axis>& axes() {
  static const std::vector<Axis> all = all_axes();  // on first use: other files' statics read it
  return all;
}

std::string case_name(const Case& c) {
  const Problem& p = c.problem;
  std::string n = c.kernel->info.id + "/" + std::string(name(p.dt)) + "/" +
                  (p.name.empty() ? short_name(p) : p.name + "-mb" + std::to_string(p.batch()));
  for (const Axis& a : axes())
    if (a.name_part) n += a.name_part(c);
  return n;
}

void add_identity(nlohmann::json& j, const Case& c) {
  for (const Axis& a : axes())
    if (!a.identity.empty()) j[std::string(a.identity)] = a.identity_value(c);
}

void add_settings(nlohmann::json& j, const AxisValues& given) {
  for (const Axis& a : axes()) {
    const auto it = given.find(a.flag);
    const std::vector<std::string> none;
    const std::vector<std::string>& values = it == given.end() ? none : it->second;
    if (a.setting_value)
      j[std::string(a.setting)] = a.setting_value(values);
    else if (!values.empty())
      j[std::string(a.setting)] = cli::join_list(values);
  }
}

std::vector<std::string> axis_settings() {
  std::vector<std::string> out;
  for (const Axis& a : axes())
    out.emplace_back(a.setting);
  return out;
}

}  // namespace lb::bench
