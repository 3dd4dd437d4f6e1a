// The CLI's argument parser: `--flag value`, `--flag=value`, `--switch` and positionals.
// Unknown flags are errors naming the flag; each subcommand declares what it takes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace lb::cli {

struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> values;  // --flag value
  std::set<std::string> switches;             // --flag

  std::optional<std::string> get(const std::string& flag) const;
  bool on(const std::string& flag) const { return switches.count(flag) > 0; }
  // A positive integer flag, with a default; throws lb::Error naming the flag.
  int64_t integer(const std::string& flag, int64_t fallback, int64_t min = 1) const;
  // A finite number flag >= min (> 0 where positive_only), with a default; throws
  // "--flag v: expected a number such as <example>".
  double number(const std::string& flag, double fallback, double min, const char* example,
                bool positive_only = false) const;
};

// Throws lb::Error("<command>: unknown flag '--x'") and the like.
Args parse_args(const std::string& command, const std::vector<std::string>& argv,
                const std::set<std::string>& value_flags, const std::set<std::string>& switch_flags);

std::vector<std::string> split_list(const std::string& s);     // "a,b,c" -> {a, b, c}
std::string join_list(const std::vector<std::string>& items);  // {a, b, c} -> "a,b,c"
// An integer >= 1 of a --flag's list; throws "--flag s: expected integers >= 1".
int64_t positive(const std::string& flag, const std::string& s);

}  // namespace lb::cli
