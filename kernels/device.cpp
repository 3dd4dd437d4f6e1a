#include "kernels/device.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string_view>

#include "kernels/model.h"

namespace lb {
namespace {
namespace fs = std::filesystem;

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The host's work is done when run() returns: the steady clock around the call.
class HostTimer final : public Timer {
 public:
  void start() override { start_ = now_seconds(); }
  double stop() override { return now_seconds() - start_; }

 private:
  double start_ = 0;
};

class HostRuntime final : public DeviceRuntime {
 public:
  std::string why_unavailable() const override { return {}; }
  std::unique_ptr<Timer> timer(bool) const override { return std::make_unique<HostTimer>(); }
};

// Where cuda/ is not built, GPU kernels are not registered either; this answers for
// code that asks anyway.
class NoGpuRuntime final : public DeviceRuntime {
 public:
  std::string why_unavailable() const override { return "built without CUDA"; }
  std::unique_ptr<Timer> timer(bool) const override { return std::make_unique<HostTimer>(); }
};

// The first whitespace-separated number of a file ("max" and unreadable: none).
std::optional<double> read_number(const fs::path& file) {
  std::ifstream in(file);
  double value = 0;
  if (!(in >> value)) return std::nullopt;
  return value;
}

// A "key value" line of a file such as memory.stat or /proc/meminfo ("MemAvailable:
// 123 kB" too: the colon is part of the key given), scaled; none when absent.
std::optional<double> read_key(const fs::path& file, std::string_view key, double scale = 1) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with(key) || line.size() == key.size() || !std::isspace((unsigned char)line[key.size()]))
      continue;
    try {
      return std::stod(line.substr(key.size())) * scale;
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

// What a memory cgroup hierarchy leaves this process: the least, over the process's own
// cgroup and those above it up to the mount point, of limit − (usage − inactive file
// cache). `relative` is the process's path in the hierarchy (/proc/self/cgroup); the
// walk starts where that exists under the mount (a container may mount its own cgroup
// as the root).
struct CgroupFiles {
  std::string_view limit, usage, inactive_file;
};
std::optional<double> cgroup_left(const fs::path& mount, const std::string& relative, const CgroupFiles& f) {
  const fs::path below = fs::path(relative).relative_path();
  fs::path dir = below.empty() ? mount : mount / below;
  std::error_code ec;
  while (!fs::is_directory(dir, ec) && dir != mount)
    dir = dir.parent_path();
  std::optional<double> least;
  for (;;) {
    const std::optional<double> limit = read_number(dir / f.limit);
    const std::optional<double> usage = read_number(dir / f.usage);
    if (limit && usage) {
      const double reclaimable = read_key(dir / "memory.stat", f.inactive_file).value_or(0);
      const double left = std::max(0.0, *limit - std::max(0.0, *usage - reclaimable));
      least = least ? std::min(*least, left) : left;
    }
    if (dir == mount || !dir.has_relative_path()) break;
    dir = dir.parent_path();
  }
  return least;
}

}  // namespace

size_t host_available_bytes(const std::string& root) {
  const fs::path base = root.empty() ? fs::path("/") : fs::path(root);
  std::optional<double> available = read_key(base / "proc/meminfo", "MemAvailable:", 1024.0);
  // /proc/self/cgroup: "0::/path" (v2), "7:memory:/path" or "4:cpuacct,memory:/path" (v1).
  std::ifstream in(base / "proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string controllers = ",";  // ",cpuacct,memory,": each name between commas
    controllers.append(line, a + 1, b - a - 1).push_back(',');
    const std::string relative = line.substr(b + 1);
    std::optional<double> left;
    if (controllers == ",,")
      left = cgroup_left(base / "sys/fs/cgroup", relative, {"memory.max", "memory.current", "inactive_file"});
    else if (controllers.find(",memory,") != std::string::npos)
      left = cgroup_left(base / "sys/fs/cgroup/memory", relative,
                         {"memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"});
    if (left) available = available ? std::min(*available, *left) : *left;
  }
  return available ? size_t(*available) : 0;
}

std::string check_host_memory(const Problem& p) {
  const Model m = model(p);
  const double needed = m.tensor_bytes + m.param_bytes + m.src_bytes;
  const double available = double(host_available_bytes());
  if (available > 0 && needed > available)
    return "out of memory: needs " + gib(needed) + " GiB, " + gib(available) + " GiB available";
  return {};
}

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", bytes / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

const DeviceRuntime& host_runtime() {
  static const HostRuntime r;
  return r;
}

const DeviceRuntime& no_gpu_runtime() {
  static const NoGpuRuntime r;
  return r;
}

}  // namespace lb
