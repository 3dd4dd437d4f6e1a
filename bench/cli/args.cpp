#include "bench/cli/args.h"

#include <charconv>
#include <cmath>

#include "kernels/common.h"

namespace lb::cli {

std::optional<std::string> Args::get(const std::string& flag) const {
  auto it = values.find(flag);
  if (it == values.end()) return std::nullopt;
  return it->second;
}

int64_t Args::integer(const std::string& flag, int64_t fallback, int64_t min) const {
  auto v = get(flag);
  if (!v) return fallback;
  int64_t out = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
  if (ec != std::errc() || end != v->data() + v->size() || out < min)
    throw Error("--" + flag + " " + *v + ": expected an integer >= " + std::to_string(min));
  return out;
}

double Args::number(const std::string& flag, double fallback, double min, const char* example,
                    bool positive_only) const {
  const auto v = get(flag);
  if (!v) return fallback;
  try {
    size_t used = 0;
    const double x = std::stod(*v, &used);
    if (used == v->size() && std::isfinite(x) && x >= min && (!positive_only || x > 0)) return x;
  } catch (const std::exception&) {
  }
  throw Error("--" + flag + " " + *v + ": expected a number such as " + example);
}

Args parse_args(const std::string& command, const std::vector<std::string>& argv,
                const std::set<std::string>& value_flags, const std::set<std::string>& switch_flags) {
  Args a;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      a.positional.push_back(arg);
      continue;
    }
    std::string flag = arg.substr(2), value;
    const size_t eq = flag.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = flag.substr(eq + 1);
      flag.erase(eq);
    }
    if (switch_flags.count(flag)) {
      if (inline_value) throw Error(command + ": --" + flag + " takes no value");
      a.switches.insert(flag);
    } else if (value_flags.count(flag)) {
      if (!inline_value) {
        if (i + 1 >= argv.size()) throw Error(command + ": --" + flag + " needs a value");
        value = argv[++i];
      }
      if (a.values.count(flag)) throw Error(command + ": --" + flag + " given twice");
      a.values[flag] = value;
    } else {
      std::string known;
      for (const auto& f : value_flags)
        known += " --" + f;
      for (const auto& f : switch_flags)
        known += " --" + f;
      throw Error(command + ": unknown flag '--" + flag + "' (accepted:" + known + ")");
    }
  }
  return a;
}

std::string join_list(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += ',';
    out += item;
  }
  return out;
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

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = s.find(',', start);
    std::string item = s.substr(start, comma - start);
    if (item.empty()) throw Error("'" + s + "': empty item in a comma-separated list");
    out.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace lb::cli
