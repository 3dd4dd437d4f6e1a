#include "bench/harness/machine.h"

#include <sys/utsname.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "bench/harness/sysinfo.h"
#include "kernels/common.h"

namespace lb::bench {
namespace {

// The first line of a small file, "" if it cannot be read.
std::string first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\n' || line.back() == ' '))
    line.pop_back();
  return line;
}

// FNV-1a, 64 bits: stable across builds and machines, which std::hash is not.
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string hex(uint64_t v, int digits) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return std::string(buf + 16 - digits);
}

}  // namespace

void check_machine_name(const std::string& name, const std::string& from) {
  if (name.empty() || name.size() > 64)
    throw Error(std::string(from) + ": a machine name of 1 to 64 characters");
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'))
      throw Error(from + " '" + name +
                  "': a machine name is letters, digits, '.', '_' and '-' (it names a history folder)");
}

namespace {

// Turbo / boost as the kernel exposes it: intel_pstate's no_turbo, else cpufreq's boost.
std::string turbo() {
  if (std::string v = first_line("/sys/devices/system/cpu/intel_pstate/no_turbo"); !v.empty())
    return v == "0" ? "on" : "off";
  if (std::string v = first_line("/sys/devices/system/cpu/cpufreq/boost"); !v.empty())
    return v == "1" ? "on" : "off";
  return {};
}

// The chosen word of a sysfs choice line ("always [madvise] never" -> "madvise").
std::string chosen(const std::string& line) {
  const size_t open = line.find('['), close = line.find(']');
  return open == std::string::npos || close < open ? line : line.substr(open + 1, close - open - 1);
}

// A sysfs flag ("1" / "0") as on / off; "" where it could not be read.
std::string on_off(const std::string& flag) {
  if (flag.empty()) return {};
  return flag == "1" ? "on" : "off";
}

}  // namespace

Machine identify_machine(const std::string& requested, const std::string& gpu_model) {
  Machine m;
  const std::string machine_id = first_line("/etc/machine-id");
  const std::string signature = cpu_signature();
  m.id = hex(fnv1a(machine_id + "|" + cpu_model() + "|" + signature + "|" + std::to_string(cpu_cores()) +
                   "|" + gpu_model),
             16);
  if (!requested.empty()) {
    check_machine_name(requested, "--machine");
    m.name = requested;
  } else if (const char* env = std::getenv("LB_MACHINE"); env && *env) {
    check_machine_name(env, "LB_MACHINE");
    m.name = env;
  } else {
    m.name = "host-" + m.id.substr(0, 8);
  }
  utsname u{};
  const std::string kernel = uname(&u) == 0 ? std::string(u.release) : "";
  const std::string smt = first_line("/sys/devices/system/cpu/smt/active");
  const std::pair<const char*, std::string> facts[] = {
      {"layerbench_machine", m.name},
      {"layerbench_machine_id", m.id},
      {"layerbench_cpu_signature", signature},
      {"layerbench_cpu_microcode", cpuinfo_field("microcode")},
      {"layerbench_kernel", kernel},
      {"layerbench_governor", first_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")},
      {"layerbench_turbo", turbo()},
      {"layerbench_smt", on_off(smt)},
      {"layerbench_transparent_hugepages", chosen(first_line("/sys/kernel/mm/transparent_hugepage/enabled"))},
      {"layerbench_format_version", kFormatVersion},
  };
  for (const auto& [key, value] : facts)
    if (!value.empty()) m.facts.emplace_back(key, value);
  return m;
}

}  // namespace lb::bench
