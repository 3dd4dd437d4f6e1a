#include "bench/harness/runner.h"

#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <set>

#include "bench/harness/probes.h"
#include "kernels/model.h"
#include "kernels/verify.h"

#ifdef LB_HAVE_CUDA
#include <cuda_runtime.h>

#include "cuda/memory.h"
#include "cuda/runtime.h"
#endif

namespace lb::bench {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", bytes / kGiB);
  return buf;
}

// The last level cache's size, for cold runs: touching twice as much evicts it.
size_t last_level_cache_bytes() {
  for (int name : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE})
    if (long v = sysconf(name); v > 0) return size_t(v);
  return size_t(64) << 20;
}

// The case whose set-up is alive; Google Benchmark runs cases one after another.
struct Active {
  const Case* c = nullptr;
  std::string error;  // non-empty: every call reports this error
  TensorSet ts;
  std::unique_ptr<Kernel> kernel;
  Model model;
  size_t baseline_rss = 0, setup_peak_rss = 0;
  std::vector<char> flush;
  bool gpu = false;
  size_t device_base = 0, device_setup_peak = 0, driver_base = 0, driver_setup = 0;
};

// Device memory around a GPU case: our tracking allocator (buffers and workspaces) and
// the driver's view (which also holds contexts and library handles).
void gpu_baseline(Active& a) {
  if (!a.gpu) return;
#ifdef LB_HAVE_CUDA
  cuda::synchronize();
  a.device_base = cuda::device_bytes_in_use();
  cuda::reset_device_peak();
  a.driver_base = cuda::driver_used_bytes();
#endif
}

void gpu_after_setup(Active& a) {
  if (!a.gpu) return;
#ifdef LB_HAVE_CUDA
  a.device_setup_peak = cuda::device_bytes_peak();
  a.driver_setup = cuda::driver_used_bytes();
#endif
}

Active& active() {
  static Active a;
  return a;
}

}  // namespace

void release_active_case() {
  Active& a = active();
  if (a.kernel) a.kernel->release();
  a = Active{};
}

namespace {

void set_up(const Case& c, const RunOptions& o) {
  release_active_case();
  Active& a = active();
  a.c = &c;
  a.gpu = c.kernel->info.device == Device::gpu;
  CaseNotes& notes = case_notes()[c.name];
  a.model = model(c.problem);
#ifdef LB_HAVE_CUDA
  if (a.gpu) {  // the device holds a copy of every tensor, plus workspaces we cannot know yet
    size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) == cudaSuccess && a.model.inference_bytes > double(free)) {
      a.error = "out of memory: needs " + gib(a.model.inference_bytes) + " GiB of device memory, " +
                gib(double(free)) + " GiB free";
      notes.status = "out_of_memory";
      notes.reason = a.error;
      return;
    }
  }
#endif
  // Our tensors, plus a pristine copy of the inputs for verification.
  const double needed = a.model.inference_bytes + a.model.param_bytes + a.model.src_bytes;
  const double available = double(available_bytes());
  if (available > 0 && needed > available) {
    a.error = "out of memory: needs " + gib(needed) + " GiB, " + gib(available) + " GiB available";
    notes.status = "out_of_memory";
    notes.reason = a.error;
    return;
  }
  if (c.cold) a.flush.assign(2 * last_level_cache_bytes(), 1);
  try {
    release_free_memory();
    reset_rss_peak();
    a.baseline_rss = rss_bytes();
    a.ts = make_tensors(c.problem);
    fill_inputs(a.ts, c.problem, o.seed);
    const InputDigests inputs = input_digests(a.ts, c.problem.op());
    // Poisoned before prepare(): a GPU kernel uploads its outputs there, poison included.
    for (Arg arg : output_args(c.problem))
      poison(a.ts.at(arg));
    a.kernel = c.kernel->make();
    gpu_baseline(a);
    a.kernel->prepare(c.problem, a.ts, Context{c.threads});
    a.kernel->run(a.ts);
    a.kernel->finish(a.ts);
    a.setup_peak_rss = rss_peak_bytes();
    gpu_after_setup(a);
    notes.details = a.kernel->details();
    const Verdict v = verify_outputs(c.problem, a.ts, inputs, o.max_reference_macs);
    notes.reason = v.reason;
    if (v.status == Status::failed) {
      a.error = "failed: " + v.reason + " | repro: " + repro_line(*c.kernel, c.problem, o.seed);
      notes.status = "failed";
      return;
    }
    notes.status = std::string(name(v.status));
  } catch (const std::bad_alloc&) {
    a.error = "out of memory: allocation failed (the model needs " + gib(needed) + " GiB, " +
              gib(double(available_bytes())) + " GiB available)";
    notes.status = "out_of_memory";
    notes.reason = a.error;
  } catch (const std::exception& e) {
    a.error =
        std::string("failed: threw: ") + e.what() + " | repro: " + repro_line(*c.kernel, c.problem, o.seed);
    notes.status = "failed";
    notes.reason = a.error;
  }
  if (!a.error.empty()) {
    if (a.kernel) a.kernel->release();
    a.kernel.reset();
    a.ts = TensorSet{};
  }
}

volatile std::sig_atomic_t g_signal = 0;

void on_signal(int signo) {
  g_signal = signo;
}

void run_case(benchmark::State& state, const Case& c, const RunOptions& o) {
  if (g_signal) {
    state.SkipWithError(kInterrupted);
    return;
  }
  if (!c.unsupported.empty()) {
    case_notes()[c.name].status = "unsupported";
    case_notes()[c.name].reason = c.unsupported;
    state.SkipWithError(("unsupported: " + c.unsupported).c_str());
    return;
  }
  Active& a = active();
  if (a.c != &c) set_up(c, o);
  state.SetLabel(print(c.problem));
  if (!a.error.empty()) {
    state.SkipWithError(a.error.c_str());
    return;
  }
  const CaseNotes& notes = case_notes()[c.name];

  CpuSampler sampler;
  reset_rss_peak();
  double total = 0, wall_total = 0;
#ifdef LB_HAVE_CUDA
  std::optional<cuda::EventTimer> timer;
  cuda::GpuUtilSampler gpu_util;
  if (a.gpu) {
    timer.emplace(c.blocking);
    cuda::reset_device_peak();
    gpu_util.start();
  }
#endif
  sampler.start();
  try {
    for (auto _ : state) {
      if (g_signal) {
        sampler.stop();
        state.SkipWithError(kInterrupted);
        break;
      }
      double dt = 0;
      const double t0 = wall_seconds();
      if (a.gpu) {
#ifdef LB_HAVE_CUDA
        if (c.cold) cuda::flush_l2();  // queued before the start event: not timed
        timer->start();
        a.kernel->run(a.ts);
        dt = timer->stop();  // waits, spinning or blocking as the case says
#endif
      } else {
        if (c.cold) {  // evict the caches outside the timed region
          for (size_t i = 0; i < a.flush.size(); i += 64) a.flush[i] = char(a.flush[i] + 1);
        }
        const double start = wall_seconds();
        a.kernel->run(a.ts);
        dt = wall_seconds() - start;
      }
      wall_total += wall_seconds() - t0;
      state.SetIterationTime(dt);
      total += dt;
    }
  } catch (const std::exception& e) {
    sampler.stop();
    a.error = std::string("failed: threw while timed: ") + e.what();
    case_notes()[c.name].status = "failed";
    case_notes()[c.name].reason = a.error;
    state.SkipWithError(a.error.c_str());
    return;
  }
  if (g_signal) return;
  sampler.stop();
  const size_t peak_rss = std::max(a.setup_peak_rss, rss_peak_bytes());

  const double seconds = total / double(state.iterations());
  const Model& m = a.model;
  auto& k = state.counters;
  k["lb_flop_per_s"] = m.flops / seconds;
  k["lb_bytes_per_s"] = m.min_bytes / seconds;
  if (o.peaks)
    if (const Peak* peak = o.peaks->find(c.problem.dt, c.threads, a.gpu))
      k["lb_pct_peak"] = 100.0 * m.flops / seconds / peak->ops_per_second;
  k["lb_cpu_util_avg"] = sampler.average();
  k["lb_cpu_util_peak"] = sampler.peak();
  k["lb_host_peak_bytes"] = double(peak_rss > a.baseline_rss ? peak_rss - a.baseline_rss : 0);
  k["lb_tensor_bytes"] = double(a.ts.bytes());
  k["lb_scratch_bytes"] = double(a.kernel->scratch_bytes());
  k["lb_pred_param_bytes"] = m.param_bytes;
  k["lb_pred_act_bytes"] = m.src_bytes + m.dst_bytes + m.relu_bytes;
  k["lb_pred_macs"] = double(m.macs);
  k["lb_mistrusted"] = notes.status == "mistrusted" ? 1 : 0;
  k["lb_batch"] = double(c.problem.batch());
#ifdef LB_HAVE_CUDA
  if (a.gpu) {
    gpu_util.stop();
    const size_t device_peak = std::max(a.device_setup_peak, cuda::device_bytes_peak());
    const size_t driver_now = std::max(a.driver_setup, cuda::driver_used_bytes());
    k["lb_device_peak_bytes"] = double(device_peak > a.device_base ? device_peak - a.device_base : 0);
    k["lb_device_driver_bytes"] = double(driver_now > a.driver_base ? driver_now - a.driver_base : 0);
    if (gpu_util.average() >= 0) {
      k["lb_gpu_util_avg"] = gpu_util.average();
      k["lb_gpu_util_peak"] = gpu_util.peak();
    }
    k["lb_gpu_busy_pct"] = wall_total > 0 ? 100.0 * total / wall_total : 0;
    k["lb_host_wall_per_run_s"] = wall_total / double(state.iterations());
    k["lb_blocking_sync"] = c.blocking ? 1 : 0;
  }
#endif
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESETHAND;  // a second signal takes the default action
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int interrupted_by() {
  return g_signal;
}

void warm_up(const std::vector<Case>& cases) {
  std::set<std::string> done;
  for (const Case& c : cases) {
    if (!c.unsupported.empty()) continue;
    const std::string key =
        c.kernel->info.id + "|" + std::string(name(c.problem.dt)) + "|" + std::to_string(c.threads);
    if (!done.insert(key).second) continue;
    try {
      const Problem small = with_batch(c.problem, 1);
      TensorSet ts = make_tensors(small);
      fill_inputs(ts, small, 0);
      auto kernel = c.kernel->make();
      kernel->prepare(small, ts, Context{c.threads});
      kernel->run(ts);
      kernel->finish(ts);
      kernel->release();
    } catch (const std::exception&) {
      // The case itself will report what went wrong.
    }
  }
}

std::map<std::string, CaseNotes>& case_notes() {
  static std::map<std::string, CaseNotes> notes;
  return notes;
}

void register_cases(const std::vector<Case>& cases, const RunOptions& options) {
  for (const Case& c : cases) {
    const KernelEntry& k = *c.kernel;
    case_notes()[c.name].identity = {{"lb_kernel", k.info.id},
                                     {"lb_backend", std::string(k.backend())},
                                     {"lb_device", name(k.info.device)},
                                     {"lb_op", std::string(k.op_name())},
                                     {"lb_type", layer_type(c.problem)},
                                     {"lb_dtype", name(c.problem.dt)},
                                     {"lb_relu", name(c.problem.relu)},
                                     {"lb_problem", print(c.problem)},
                                     {"lb_layer", c.problem.name},
                                     {"lb_threads", c.threads},
                                     {"lb_cache", c.cold ? "cold" : "hot"}};
  }
  for (const Case& c : cases)
    benchmark::RegisterBenchmark(c.name.c_str(),
                                 [&c, options](benchmark::State& s) { run_case(s, c, options); })
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
}

void PeakMemoryManager::Start() {
  reset_rss_peak();
}

void PeakMemoryManager::Stop(Result& result) {
  const Active& a = active();
  const size_t peak = std::max(a.setup_peak_rss, rss_peak_bytes());
  result.max_bytes_used = int64_t(peak > a.baseline_rss ? peak - a.baseline_rss : 0);
  if (a.c) case_notes()[a.c->name].max_bytes_used = double(result.max_bytes_used);
}

}  // namespace lb::bench
