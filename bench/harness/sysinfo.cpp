#include "bench/harness/sysinfo.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "bench/harness/git_info.h"

namespace lb::bench {

std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string cpuinfo_field(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t key_end = line.find_last_not_of(" \t", colon == 0 ? 0 : colon - 1);
    if (key_end == std::string::npos || line.compare(0, key_end + 1, key) != 0 || key_end + 1 != key.size())
      continue;
    const size_t value = line.find_first_not_of(" \t", colon + 1);
    return value == std::string::npos ? "" : line.substr(value);
  }
  return {};
}

std::string cpu_model() {
  const std::string name = cpuinfo_field("model name");
  return name.empty() ? "unknown" : name;
}

std::string cpu_signature() {
  const std::string vendor = cpuinfo_field("vendor_id"), family = cpuinfo_field("cpu family"),
                    model = cpuinfo_field("model"), stepping = cpuinfo_field("stepping");
  if (family.empty() || model.empty()) return {};
  return (vendor.empty() ? std::string("cpu") : vendor) + " family " + family + " model " + model +
         (stepping.empty() ? "" : " stepping " + stepping);
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

// One cache's size from sysfs ("32K", "1024K", "32M"), 0 when absent.
size_t sysfs_cache_bytes(int index, int* level, std::string* type) {
  const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
  std::ifstream l(dir + "level"), t(dir + "type"), s(dir + "size");
  std::string size;
  if (!(l >> *level) || !(t >> *type) || !(s >> size) || size.empty()) return 0;
  size_t n = 0;
  try {
    n = std::stoull(size);
  } catch (const std::exception&) {
    return 0;
  }
  switch (size.back()) {
    case 'K':
      return n << 10;
    case 'M':
      return n << 20;
    case 'G':
      return n << 30;
    default:
      return n;
  }
}

CacheSizes read_cache_sizes() {
  CacheSizes c;
  for (int i = 0; i < 8; ++i) {
    int level = 0;
    std::string type;
    const size_t bytes = sysfs_cache_bytes(i, &level, &type);
    if (bytes == 0 || type == "Instruction") continue;
    if (level == 1) c.l1d = bytes;
    if (level == 2) c.l2 = bytes;
    if (level >= 2) c.last_level = bytes;  // indices go up by level
  }
  auto conf = [](int name) { return std::max(0L, sysconf(name)); };
  if (c.l1d == 0) c.l1d = size_t(conf(_SC_LEVEL1_DCACHE_SIZE));
  if (c.l2 == 0) c.l2 = size_t(conf(_SC_LEVEL2_CACHE_SIZE));
  if (c.last_level == 0) c.last_level = std::max(size_t(conf(_SC_LEVEL3_CACHE_SIZE)), c.l2);
  return c;
}

std::vector<std::pair<std::string, std::string>>& noted() {
  static std::vector<std::pair<std::string, std::string>> facts;
  return facts;
}

}  // namespace

const CacheSizes& cache_sizes() {
  static const CacheSizes sizes = read_cache_sizes();
  return sizes;
}

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
      {"layerbench_cpu_caches", "L1d " + std::to_string(cache_sizes().l1d >> 10) + " KiB, L2 " +
                                    std::to_string(cache_sizes().l2 >> 10) + " KiB, last level " +
                                    std::to_string(cache_sizes().last_level >> 10) +
                                    " KiB (per CPU 0's sysfs)"},
      {"layerbench_compiler", std::string("gcc ") + __VERSION__},
      {"layerbench_build", kBuildDescription},
      {"layerbench_git_commit", kGitCommit},
  };
  c.insert(c.end(), noted().begin(), noted().end());
  return c;
}

}  // namespace lb::bench
