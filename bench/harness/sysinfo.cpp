#include "bench/harness/sysinfo.h"

#include <sched.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "bench/harness/git_info.h"

namespace lb::bench {

std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  return "unknown";
}

std::string cpu_isa() {
  __builtin_cpu_init();
  std::string out;
  auto add = [&out](bool have, const char* name) {
    if (!have) return;
    if (!out.empty()) out += ' ';
    out += name;
  };
  add(__builtin_cpu_supports("avx2"), "avx2");
  add(__builtin_cpu_supports("fma"), "fma");
  add(__builtin_cpu_supports("avx512f"), "avx512f");
  add(__builtin_cpu_supports("avx512bw"), "avx512bw");
  add(__builtin_cpu_supports("avx512vnni"), "avx512_vnni");
  add(__builtin_cpu_supports("avx512bf16"), "avx512_bf16");
  add(__builtin_cpu_supports("avx512fp16"), "avx512_fp16");
  add(__builtin_cpu_supports("amx-tile"), "amx");
  return out.empty() ? "none" : out;
}

int cpu_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  return int(sysconf(_SC_NPROCESSORS_ONLN));
}

namespace {

std::vector<std::pair<std::string, std::string>>& noted() {
  static std::vector<std::pair<std::string, std::string>> facts;
  return facts;
}

}  // namespace

void note_context(const std::string& key, const std::string& value) {
  for (auto& [k, v] : noted())
    if (k == key) return void(v = value);
  noted().emplace_back(key, value);
}

bool check_oversubscription(const std::vector<int>& threads) {
  const int cores = cpu_cores();
  std::string over;
  for (int t : threads)
    if (t > cores) over += (over.empty() ? "" : ", ") + std::to_string(t);
  if (over.empty()) return false;
  const std::string what = over + " threads on " + std::to_string(cores) + " cores";
  std::fprintf(
      stderr,
      "layerbench: warning: --threads %s: more than the %d cores this process may run on; those cases "
      "are oversubscribed (threads wait for a core) and their peaks are the cores'\n",
      over.c_str(), cores);
  note_context("layerbench_threads_oversubscribed", what);
  return true;
}

std::vector<std::pair<std::string, std::string>> build_context() {
  std::vector<std::pair<std::string, std::string>> c = {
      {"layerbench_host", hostname()},
      {"layerbench_cpu_model", cpu_model()},
      {"layerbench_cpu_isa", cpu_isa()},
      {"layerbench_cpu_cores", std::to_string(cpu_cores())},
      {"layerbench_compiler", std::string("gcc ") + __VERSION__},
      {"layerbench_build", kBuildDescription},
      {"layerbench_git_commit", kGitCommit},
  };
  c.insert(c.end(), noted().begin(), noted().end());
  return c;
}

}  // namespace lb::bench
