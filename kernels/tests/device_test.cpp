// Host memory as a case may use it: MemAvailable, and the memory cgroup's limit where
// that leaves less (v2 and v1), read from a fake /proc and /sys tree.
#include "kernels/device.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "kernels/problem.h"

namespace lb {
namespace {

namespace fs = std::filesystem;

constexpr size_t kGiB = size_t(1) << 30;

// A fake root: files written under a fresh temporary directory.
class FakeRoot {
 public:
  explicit FakeRoot(const std::string& name) : root_(fs::path(::testing::TempDir()) / name) {
    fs::remove_all(root_);
  }
  ~FakeRoot() { fs::remove_all(root_); }
  void write(const std::string& path, const std::string& text) const {
    fs::create_directories((root_ / path).parent_path());
    std::ofstream(root_ / path) << text;
  }
  std::string path() const { return root_.string(); }

 private:
  fs::path root_;
};

std::string meminfo_kib(size_t bytes) {
  return "MemTotal:       99999999 kB\nMemFree:        1 kB\nMemAvailable:   " +
         std::to_string(bytes / 1024) + " kB\n";
}

TEST(HostMemory, MemAvailableWithoutACgroupLimit) {
  FakeRoot r("lb_mem_plain");
  r.write("proc/meminfo", meminfo_kib(8 * kGiB));
  r.write("proc/self/cgroup", "0::/\n");
  EXPECT_EQ(host_available_bytes(r.path()), 8 * kGiB);
  // "max" is no limit either.
  r.write("sys/fs/cgroup/memory.max", "max\n");
  r.write("sys/fs/cgroup/memory.current", std::to_string(kGiB) + "\n");
  EXPECT_EQ(host_available_bytes(r.path()), 8 * kGiB);
}

TEST(HostMemory, CgroupV2LimitBelowMemAvailable) {
  FakeRoot r("lb_mem_v2");
  r.write("proc/meminfo", meminfo_kib(64 * kGiB));
  r.write("proc/self/cgroup", "0::/job/step\n");
  // The job's cgroup allows 4 GiB, of which 3 are used, 0.5 of it reclaimable file cache;
  // its own step allows more. The tighter level wins: 4 - (3 - 0.5) = 1.5 GiB.
  r.write("sys/fs/cgroup/job/memory.max", std::to_string(4 * kGiB) + "\n");
  r.write("sys/fs/cgroup/job/memory.current", std::to_string(3 * kGiB) + "\n");
  r.write("sys/fs/cgroup/job/memory.stat",
          "anon 1\nfile 2\ninactive_file " + std::to_string(kGiB / 2) + "\n");
  r.write("sys/fs/cgroup/job/step/memory.max", std::to_string(16 * kGiB) + "\n");
  r.write("sys/fs/cgroup/job/step/memory.current", std::to_string(3 * kGiB) + "\n");
  EXPECT_EQ(host_available_bytes(r.path()), 3 * kGiB / 2);
  // Usage at the limit leaves nothing (not a negative number).
  r.write("sys/fs/cgroup/job/memory.stat", "");
  r.write("sys/fs/cgroup/job/memory.current", std::to_string(5 * kGiB) + "\n");
  EXPECT_EQ(host_available_bytes(r.path()), 0u);
}

TEST(HostMemory, CgroupV1LimitAndAContainerMountedAtItsOwnCgroup) {
  FakeRoot r("lb_mem_v1");
  r.write("proc/meminfo", meminfo_kib(64 * kGiB));
  // The path of /proc/self/cgroup does not exist under a container's mount, whose root
  // is the container's own cgroup: the limit is read there.
  r.write("proc/self/cgroup", "5:devices:/\n4:cpuacct,memory:/docker/abc\n0::/\n");
  r.write("sys/fs/cgroup/memory/memory.limit_in_bytes", std::to_string(2 * kGiB) + "\n");
  r.write("sys/fs/cgroup/memory/memory.usage_in_bytes", std::to_string(kGiB) + "\n");
  r.write("sys/fs/cgroup/memory/memory.stat",
          "cache 5\ntotal_inactive_file " + std::to_string(kGiB / 4) + "\n");
  EXPECT_EQ(host_available_bytes(r.path()), 5 * kGiB / 4);
  // v1's "unlimited" is a huge number: MemAvailable is then the smaller.
  r.write("sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
  EXPECT_EQ(host_available_bytes(r.path()), 64 * kGiB);
}

TEST(HostMemory, NothingKnownIsZero) {
  FakeRoot r("lb_mem_none");
  r.write("proc/self/cgroup", "garbage\n");
  EXPECT_EQ(host_available_bytes(r.path()), 0u);
}

// The live machine: a number, and a case far larger than any machine is out of memory
// before anything is allocated.
TEST(HostMemory, CheckHostMemoryDeclinesWhatCannotFit) {
  EXPECT_GT(host_available_bytes(), 0u);
  EXPECT_EQ(check_host_memory(parse_problem("dense mb=2 ic=8 oc=8")), "");
  const std::string why = check_host_memory(parse_problem("dense mb=16777216 ic=16777216 oc=1"));
  EXPECT_EQ(why.rfind("out of memory: needs 2097152.", 0), 0u) << why;  // 2^48 floats twice
}

}  // namespace
}  // namespace lb
