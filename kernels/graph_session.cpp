#include "kernels/graph_session.h"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>

#include "kernels/common.h"
#include "kernels/host_memory.h"
#include "kernels/ops/traits.h"

namespace lb {

const KernelEntry* pick_kernel(const Registry& r, const Problem& p, std::string_view backend,
                               const std::vector<const KernelEntry*>& chosen, std::string* why) {
  for (const KernelEntry* k : chosen)
    if (k->op_name() == name(p.op())) {
      if (std::string reason = k->supports(p); !reason.empty()) {
        if (why) *why = reason;
        return nullptr;
      }
      return k;
    }
  std::string reasons;
  for (const KernelEntry& k : r.kernels()) {
    if (k.backend() != backend || k.op_name() != name(p.op()) || k.info.opt_in) continue;
    std::string reason = k.supports(p);
    if (reason.empty()) return &k;
    if (reasons.find(reason) == std::string::npos) reasons += (reasons.empty() ? "" : "; ") + reason;
  }
  if (why)
    *why = reasons.empty() ? std::string(backend) + ": no " + std::string(name(p.op())) + " kernel" : reasons;
  return nullptr;
}

namespace {

// The element-wise nodes' arithmetic, per storage: values are read into float and stored
// back rounded to nearest even.
template <Storage S>
struct Store;
template <>
struct Store<Storage::f32> {
  using T = float;
  static float get(T v) { return v; }
  static T put(float v) { return v; }
};
template <>
struct Store<Storage::bf16> {
  using T = uint16_t;
  static float get(T v) { return bf16_to_f32(v); }
  static T put(float v) { return f32_to_bf16(v); }
};
template <>
struct Store<Storage::f16> {
  using T = uint16_t;
  static float get(T v) { return f16_to_f32(v); }
  static T put(float v) { return f32_to_f16(v); }
};

template <class F>
void with_storage(Storage s, F&& f) {
  switch (s) {
    case Storage::f32:
      return f(Store<Storage::f32>{});
    case Storage::bf16:
      return f(Store<Storage::bf16>{});
    case Storage::f16:
      return f(Store<Storage::f16>{});
    default:
      throw Error("graph: activations stored as " + std::string(name(s)) + " are not supported");
  }
}

enum class Step { kernel, view, relu, relu6, batchnorm, concat };

Step step_of(const Graph& g, size_t i) {
  const Node& n = g.nodes[i];
  if (n.problem) return Step::kernel;
  if (n.kind == "relu") return Step::relu;
  if (n.kind == "relu6") return Step::relu6;
  if (n.kind == "concat") return Step::concat;
  if (n.kind == "flatten") return Step::view;
  if (n.kind == "batchnorm") {  // folded into a conv2d or dense layer before it (data.cpp): nothing to do
    const int in = n.inputs.at(0);
    const bool folded = in != kGraphInput && g.nodes[in].problem &&
                        (g.nodes[in].problem->op() == Op::conv2d || g.nodes[in].problem->op() == Op::dense);
    return folded ? Step::view : Step::batchnorm;
  }
  throw Error(n.name + ": a graph with '" + n.kind + "' layers cannot run yet");
}

// The fan-in of a layer's weights, for their scale; 0 where they keep the op's own (LSTM).
int64_t fan_in(const Problem& p) {
  switch (p.op()) {
    case Op::dense:
      return p.dense().ic;
    case Op::conv2d:
      return p.conv().ic / p.conv().g * p.conv().kh * p.conv().kw;
    default:
      return 0;
  }
}

void scale_values(Tensor& t, double factor) {
  if (t.storage() == Storage::f32) {
    float* v = t.as<float>();
    for (int64_t i = 0; i < t.elements(); ++i)
      v[i] = float(v[i] * factor);
    return;
  }
  for (int64_t i = 0; i < t.elements(); ++i)
    t.store(i, t.load(i) * factor);
}

// A dense layer whose input is n values: what the graph's input and a batchnorm's values
// are filled as (seeded, uniform in [-1, 1)).
Problem as_vector(int64_t n, DType dt) {
  Problem p;
  p.shape = Dense{.mb = 1, .ic = n, .oc = 1};
  p.dt = dt;
  return p;
}

uint64_t node_seed(uint64_t seed, size_t node) {
  return seed * 0x9e3779b97f4a7c15ull + (node + 1) * 0xbf58476d1ce4e5b9ull;
}

}  // namespace

struct GraphSession::NodeState {
  Step step = Step::view;
  const KernelEntry* entry = nullptr;
  std::unique_ptr<Kernel> kernel;
  TensorSet ts;                // a kernel's: views of its input and output, its own parameters
  std::vector<Tensor> inputs;  // an element-wise node's: views of its inputs
  std::optional<Tensor> out;   // an element-wise node's output (a view)
  std::vector<float> bn;       // batchnorm: the channels' scales, then their shifts
  size_t own_bytes = 0;        // parameters and other tensors of its own
};

GraphSession::GraphSession(Graph g, const Registry& r, std::string backend, Context ctx,
                           std::vector<const KernelEntry*> chosen, bool fuse_relu)
    : graph_(std::move(g)), backend_(std::move(backend)), ctx_(ctx) {
  const size_t n = graph_.nodes.size();
  nodes_.resize(n);
  if (graph_.dt == DType::i8 || graph_.dt == DType::f8) {
    unsupported_ =
        "graph: dt=" + std::string(name(graph_.dt)) +
        ": graphs run in f32, tf32, f16 and bf16 (integer and f8 layers would need requantising between "
        "them)";
    return;
  }
  for (size_t i = 0; i < n && unsupported_.empty(); ++i)
    try {
      nodes_[i].step = step_of(graph_, i);
    } catch (const Error& e) {
      unsupported_ = e.what();
    }
  if (!unsupported_.empty()) return;
  // ReLU fused into the layer before it, as frameworks hand it to oneDNN (a post-op): an
  // in-place relu (or relu6) whose input is an op layer's output (through views: a folded
  // batchnorm) that nothing else reads. The op's problem takes relu=fused (relu=relu6) and the
  // relu node becomes a view; where the backend's kernel does not take it, they stay apart.
  std::vector<int> readers(n, 0);
  for (const Node& node : graph_.nodes)
    for (int input : node.inputs)
      if (input != kGraphInput) ++readers[input];
  std::vector<int> fused_relu(n, -1);  // op node -> the relu (or relu6) node fused into it
  std::vector<Step> apart(n);          // the relu node's own step, should fusing fail
  for (size_t i = 0; fuse_relu && i < n; ++i) {
    if ((nodes_[i].step != Step::relu && nodes_[i].step != Step::relu6) || graph_.nodes[i].new_buffer)
      continue;
    int j = graph_.nodes[i].inputs.at(0);
    while (j != kGraphInput && nodes_[j].step == Step::view && readers[j] == 1)
      j = graph_.nodes[j].inputs.at(0);
    if (j == kGraphInput || readers[j] != 1 || nodes_[j].step != Step::kernel ||
        graph_.nodes[j].problem->relu != Relu::none)
      continue;
    graph_.nodes[j].problem->relu = nodes_[i].step == Step::relu6 ? Relu::relu6 : Relu::fused;
    apart[i] = nodes_[i].step;
    nodes_[i].step = Step::view;
    fused_relu[j] = int(i);
  }
  for (size_t i = 0; i < n && unsupported_.empty(); ++i) {
    Node& node = graph_.nodes[i];
    if (!node.problem) continue;
    std::string why;
    nodes_[i].entry = pick_kernel(r, *node.problem, backend_, chosen, &why);
    if (!nodes_[i].entry && fused_relu[i] >= 0) {  // apart, then
      node.problem->relu = Relu::none;
      nodes_[fused_relu[i]].step = apart[fused_relu[i]];
      nodes_[i].entry = pick_kernel(r, *node.problem, backend_, chosen, &why);
    }
    if (!nodes_[i].entry) unsupported_ = node.name + ": " + why;
  }
  // One device per graph: all its kernels on the host, or all on the GPU.
  const KernelEntry* first = nullptr;
  for (size_t i = 0; i < n && unsupported_.empty(); ++i) {
    const KernelEntry* e = nodes_[i].entry;
    if (!e) continue;
    if (!first) first = e;
    if (e->info.device != first->info.device)
      unsupported_ = graph_.nodes[i].name + ": " + e->info.id + " runs on the " +
                     std::string(name(e->info.device)) + ", " + first->info.id + " on the " +
                     std::string(name(first->info.device)) + ": a graph runs on one device";
  }
  if (unsupported_.empty() && first && first->info.device == Device::gpu) gpu_ = &device_runtime(Device::gpu);
  plan_ = plan_arena(graph_);
}

GraphSession::~GraphSession() {
  release();
  nodes_.clear();  // the views go before the arena they point into
  if (arena_) munmap(arena_, arena_mapped_);
}

Tensor GraphSession::buffer_view(int buffer, std::vector<int64_t> dims) const {
  Tensor view =
      Tensor::view(storage_of(graph_.dt, Arg::dst), std::move(dims), arena_ + plan_.offset.at(buffer));
  if (view.bytes() > plan_.bytes.at(buffer))
    throw Error("graph " + graph_.name + ": a tensor of " + std::to_string(view.bytes()) +
                " bytes in buffer " + std::to_string(buffer) + " of " +
                std::to_string(plan_.bytes.at(buffer)));
  return view;
}

void GraphSession::allocate(uint64_t seed) {
  if (!unsupported_.empty()) throw Error(unsupported_);
  const Mapping m = map_populated(std::max<size_t>(plan_.arena_bytes, 64));
  arena_ = m.data;
  arena_mapped_ = m.bytes;
  if (gpu_) device_arena_ = gpu_->device_memory(std::max<size_t>(plan_.arena_bytes, 64));
  auto batch_dims = [this](const std::vector<int64_t>& shape) {
    std::vector<int64_t> dims{graph_.batch};
    dims.insert(dims.end(), shape.begin(), shape.end());
    return dims;
  };
  auto buffer_of = [this](int input) { return input == kGraphInput ? 0 : plan_.of_node[input]; };
  {  // the graph's input: seeded values in [-1, 1), as a dense layer's input is filled
    Tensor in = buffer_view(0, batch_dims(graph_.in_shape));
    fill_input(in, as_vector(in.elements(), graph_.dt), Arg::src, seed);
    if (gpu_) upload(in);
  }
  for (size_t i = 0; i < graph_.nodes.size(); ++i) {
    const Node& n = graph_.nodes[i];
    NodeState& s = nodes_[i];
    const int out_buffer = plan_.of_node[i];
    if (s.step != Step::kernel) {
      for (int input : n.inputs) {
        const std::vector<int64_t>& shape =
            input == kGraphInput ? graph_.in_shape : graph_.nodes[input].out_shape;
        s.inputs.push_back(buffer_view(buffer_of(input), batch_dims(shape)));
      }
      s.out = buffer_view(out_buffer, batch_dims(n.out_shape));
      if (s.step == Step::batchnorm) {  // scales in [0.5, 1.5), shifts in [-0.1, 0.1)
        const int64_t c = n.out_shape.at(0);
        Tensor values(Storage::f32, {2 * c});
        fill_input(values, as_vector(2 * c, DType::f32), Arg::src, node_seed(seed, i));
        for (int64_t k = 0; k < c; ++k)
          s.bn.push_back(1.0f + 0.5f * values.as<float>()[k]);
        for (int64_t k = 0; k < c; ++k)
          s.bn.push_back(0.1f * values.as<float>()[c + k]);
      }
      continue;
    }
    const Problem& p = *n.problem;
    for (const PassArg& a : pass_args(p)) {
      const Arg arg = a.spec.arg;
      std::vector<int64_t> dims = a.spec.dims(p);
      if (arg == Arg::src || arg == Arg::src_1) {  // add's second input: the node's second
        s.ts.set(arg, buffer_view(buffer_of(n.inputs.at(arg == Arg::src ? 0 : 1)), std::move(dims)));
      } else if ((arg == Arg::dst && p.relu != Relu::separate) || arg == Arg::relu_dst) {
        s.ts.set(arg, buffer_view(out_buffer, std::move(dims)));
      } else {
        Tensor t(storage_of(p.dt, arg), std::move(dims));
        if (a.read) {
          fill_input(t, p, arg, node_seed(seed, i));
          const int64_t fan = fan_in(p);
          if (fan && arg == Arg::wei) scale_values(t, std::sqrt(6.0 / double(fan)));
          if (fan && arg == Arg::bias) scale_values(t, 0.1);
        }
        s.own_bytes += t.bytes();
        s.ts.set(arg, std::move(t));
      }
    }
  }
}

void GraphSession::prepare() {
  const TemporaryScope scope(temporaries_);  // the layers run one after another: they share temporaries
  for (size_t i = 0; i < nodes_.size(); ++i) {
    NodeState& s = nodes_[i];
    if (s.step != Step::kernel) continue;
    temporaries_.next_kernel();
    s.kernel = s.entry->make();
    if (gpu_)  // the activations stay in the device arena; the parameters are the kernel's to copy
      for (Arg a : {Arg::src, Arg::src_1, Arg::dst, Arg::relu_dst})
        if (s.ts.has(a) && s.ts.at(a).is_view() && !s.kernel->bind(a, on_device(s.ts.at(a))))
          throw Error(s.entry->info.id +
                      ": a GPU kernel that does not take shared device memory (Kernel::bind)");
    s.kernel->prepare(*graph_.nodes[i].problem, s.ts, ctx_);
  }
}

void GraphSession::run_node(size_t i) {
  NodeState& s = nodes_[i];
  if (s.step == Step::kernel) {
    s.kernel->run(s.ts);
    return;
  }
  if (s.step == Step::view) return;
  if (gpu_) {  // on the host, between the device's copies
    gpu_->synchronize();
    for (const Tensor& in : s.inputs)
      download(in);
  }
  run_elementwise(i);
  if (gpu_) upload(*s.out);
}

void GraphSession::run_elementwise(size_t i) {
  NodeState& s = nodes_[i];
  const Node& n = graph_.nodes[i];
  Tensor& out = *s.out;
  const int64_t count = out.elements();
  with_storage(out.storage(), [&](auto store) {
    using S = decltype(store);
    using T = typename S::T;
    T* y = out.as<T>();
    const T* x = s.inputs.at(0).template as<T>();
    switch (s.step) {
      case Step::relu:
        for (int64_t e = 0; e < count; ++e)
          y[e] = S::put(std::max(S::get(x[e]), 0.0f));
        break;
      case Step::relu6:
        for (int64_t e = 0; e < count; ++e)
          y[e] = S::put(std::min(std::max(S::get(x[e]), 0.0f), 6.0f));
        break;
      case Step::batchnorm: {
        const int64_t c = n.out_shape[0], inner = product(n.out_shape) / c;
        for (int64_t e = 0; e < count; ++e) {
          const int64_t ch = e / inner % c;
          y[e] = S::put(S::get(x[e]) * s.bn[ch] + s.bn[c + ch]);
        }
        break;
      }
      case Step::concat: {
        const int64_t per_sample = product(n.out_shape);
        for (int64_t b = 0; b < graph_.batch; ++b) {
          T* to = y + b * per_sample;
          for (const Tensor& in : s.inputs) {
            const int64_t part = in.elements() / graph_.batch;
            std::memcpy(to, in.template as<T>() + b * part, size_t(part) * sizeof(T));
            to += part;
          }
        }
        break;
      }
      default:
        break;
    }
  });
}

void GraphSession::run() {
  for (size_t i = 0; i < nodes_.size(); ++i)
    run_node(i);
  if (gpu_) gpu_->synchronize();  // run() returns with the work done
}

void GraphSession::run_per_node() {
  node_seconds_.resize(nodes_.size(), 0.0);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const auto start = std::chrono::steady_clock::now();
    run_node(i);
    if (gpu_) gpu_->synchronize();
    node_seconds_[i] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
}

namespace {

std::string figure(double x) {  // three significant digits
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", x);
  return text;
}

// The batch samples an element-wise node is compared on: all of them up to 4M elements,
// else the first, the last and four between (each sample is independent in every kind).
std::vector<int64_t> elementwise_samples(int64_t batch, int64_t elements) {
  if (elements <= (int64_t(1) << 22) || batch <= 6) {
    std::vector<int64_t> all(batch);
    for (int64_t b = 0; b < batch; ++b)
      all[b] = b;
    return all;
  }
  std::vector<int64_t> some;
  for (int k = 0; k < 6; ++k)
    some.push_back(k * (batch - 1) / 5);
  return some;
}

// The values of an element-wise node's input k in batch sample b (its per-sample slice).
using SliceReader = std::function<void(size_t k, int64_t b, double* to)>;

// An element-wise node's output against its value in double from the same inputs, on
// `samples` of the batch, a sample at a time: each element within one rounding to the
// storage of its exact value, plus the float arithmetic's own (batchnorm's multiply-add),
// twice over.
Verdict compare_elementwise(const Node& n, Step step, size_t input_count, const SliceReader& input,
                            const std::vector<int64_t>& input_sizes, const Tensor& out,
                            const std::vector<float>& bn, int64_t batch,
                            const std::vector<int64_t>& samples) {
  const int64_t count = out.elements() / batch;  // per sample
  const double store = unit_roundoff(out.storage()), f32 = std::ldexp(1.0, -24);
  std::vector<double> x(count), expect(count), bound(count), got(count);
  Verdict v;
  for (int64_t b : samples) {
    if (step != Step::concat) input(0, b, x.data());  // the others' inputs have the output's shape
    switch (step) {
      case Step::relu:
      case Step::relu6:
        for (int64_t e = 0; e < count; ++e) {
          expect[e] = step == Step::relu ? std::max(x[e], 0.0) : std::min(std::max(x[e], 0.0), 6.0);
          bound[e] = 0;
        }
        break;
      case Step::batchnorm: {
        const int64_t c = n.out_shape[0], inner = count / c;
        for (int64_t e = 0; e < count; ++e) {
          const int64_t ch = e / inner;
          expect[e] = x[e] * bn[ch] + bn[c + ch];
          bound[e] = 2 * f32 * (std::abs(x[e] * bn[ch]) + std::abs(bn[c + ch]));
        }
        break;
      }
      case Step::concat: {
        int64_t offset = 0;
        for (size_t k = 0; k < input_count; ++k) {
          input(k, b, expect.data() + offset);
          offset += input_sizes[k];
        }
        std::fill(bound.begin(), bound.end(), 0.0);
        break;
      }
      default:
        break;
    }
    out.load_range(b * count, count, got.data());
    for (int64_t e = 0; e < count; ++e) {
      const double allowed = bound[e] + store * std::abs(expect[e]) + 1e-30;
      const double error = std::abs(got[e] - expect[e]);
      if (!(error <= allowed)) {
        v.status = Status::failed;
        v.reason = n.kind + ": element " + std::to_string(b * count + e) + " is " + figure(got[e]) +
                   ", expected " + figure(expect[e]) + " (allowed error " + figure(allowed) + ")";
        v.max_error = error;
        v.tolerance = allowed;
        return v;
      }
      if (allowed > 0 && error / allowed > (v.tolerance > 0 ? v.max_error / v.tolerance : 0)) {
        v.max_error = error;
        v.tolerance = allowed;
      }
    }
  }
  v.reason = n.kind + ": error at most " + figure(v.tolerance > 0 ? v.max_error / v.tolerance : 0) +
             " of allowed" +
             (int64_t(samples.size()) < batch
                  ? " (" + std::to_string(samples.size()) + " of " + std::to_string(batch) + " batch samples)"
                  : "");
  return v;
}

bool worse(const Verdict& a, const Verdict& b) {  // a worse than b
  auto rank = [](Status s) {
    switch (s) {
      case Status::failed:
        return 3;
      case Status::mistrusted:
        return 1;
      case Status::passed:
        return 0;
      default:
        return 2;
    }
  };
  if (rank(a.status) != rank(b.status)) return rank(a.status) > rank(b.status);
  const double ra = a.tolerance > 0 ? a.max_error / a.tolerance : 0,
               rb = b.tolerance > 0 ? b.max_error / b.tolerance : 0;
  return ra > rb;
}

}  // namespace

GraphVerdict GraphSession::run_verified(int64_t max_reference_macs) {
  GraphVerdict out;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    NodeState& s = nodes_[i];
    const Node& n = graph_.nodes[i];
    Verdict v;
    if (s.step == Step::view) {
      run_node(i);
      continue;
    }
    if (s.step == Step::kernel) {
      const Problem& p = *n.problem;
      auto arena_views = [&](const std::vector<Arg>& args) {
        std::vector<const Tensor*> out;
        for (Arg a : args)
          if (s.ts.at(a).is_view()) out.push_back(&s.ts.at(a));
        return out;
      };
      if (gpu_)
        for (const Tensor* t : arena_views(input_args(p)))
          download(*t);
      const InputDigests before = input_digests(s.ts, p);
      for (Arg a : output_args(p)) {
        poison(s.ts.at(a));
        if (gpu_ && s.ts.at(a).is_view()) upload(s.ts.at(a));
      }
      run_node(i);
      s.kernel->finish(s.ts);  // a GPU kernel waits, and downloads what is not bound
      if (gpu_) {
        for (const Tensor* t : arena_views(output_args(p)))
          download(*t);
        for (const Tensor* t : arena_views(input_args(p)))
          download(*t);
      }
      v = verify_outputs(p, s.ts, before, max_reference_macs, s.kernel->rounds_before_bias());
    } else {
      // An in-place node overwrites its input: the compared samples' inputs are kept first.
      const bool in_place = !n.new_buffer;
      if (gpu_) {
        gpu_->synchronize();
        for (const Tensor& in : s.inputs)
          download(in);
      }
      const std::vector<int64_t> samples = elementwise_samples(graph_.batch, s.out->elements());
      std::vector<int64_t> sizes;  // each input's elements per sample
      for (const Tensor& in : s.inputs)
        sizes.push_back(in.elements() / graph_.batch);
      std::vector<std::vector<double>> kept;  // in place: [input][sample index] slices
      if (in_place)
        for (size_t k = 0; k < s.inputs.size(); ++k)
          for (int64_t b : samples) {
            kept.emplace_back(sizes[k]);
            s.inputs[k].load_range(b * sizes[k], sizes[k], kept.back().data());
          }
      const SliceReader input = [&](size_t k, int64_t b, double* to) {
        if (!in_place) return s.inputs[k].load_range(b * sizes[k], sizes[k], to);
        const size_t at = size_t(std::find(samples.begin(), samples.end(), b) - samples.begin());
        const std::vector<double>& slice = kept[k * samples.size() + at];
        std::copy(slice.begin(), slice.end(), to);
      };
      if (!in_place) poison(*s.out);
      run_node(i);
      const OutputScan scan = scan_output(*s.out);
      if (scan.unwritten || scan.first_non_finite >= 0) {
        v.status = Status::failed;
        v.reason =
            n.kind + ": " + std::to_string(scan.unwritten) + " elements unwritten" +
            (scan.first_non_finite >= 0 ? ", element " + std::to_string(scan.first_non_finite) + " not finite"
                                        : "");
      } else {
        v = compare_elementwise(n, s.step, s.inputs.size(), input, sizes, *s.out, s.bn, graph_.batch,
                                samples);
      }
    }
    ++out.nodes_checked;
    if (v.status == Status::mistrusted) {  // GraphVerdict says why this passes
      out.sparse_nodes.push_back(n.name);
      v.status = Status::passed;
    }
    if (out.worst_node.empty() || worse(v, out.verdict)) {
      out.verdict = v;
      out.worst_node = n.name + (s.entry ? " (" + s.entry->info.id + ")" : " (" + n.kind + ")");
    }
    if (v.status == Status::failed) break;  // later nodes read what it wrote
  }
  return out;
}

void* GraphSession::on_device(const Tensor& view) const {
  return device_arena_.get() + (static_cast<const std::byte*>(view.data()) - arena_);
}

void GraphSession::download(const Tensor& view) const {
  gpu_->to_host(const_cast<void*>(view.data()), on_device(view), view.bytes());
}

void GraphSession::upload(const Tensor& view) const {
  gpu_->to_device(on_device(view), view.data(), view.bytes());
}

const Tensor& GraphSession::output() const {
  const NodeState& last = nodes_.back();
  if (last.step == Step::kernel) {
    const Problem& p = *graph_.nodes.back().problem;
    return last.ts.at(p.relu == Relu::separate ? Arg::relu_dst : Arg::dst);
  }
  return *last.out;
}

const Tensor& GraphSession::compared_output() const {
  const Node& last = graph_.nodes.back();
  if (!last.problem || last.problem->op() != Op::softmax) return output();
  return nodes_.back().ts.at(Arg::src);
}

std::vector<std::string> GraphSession::node_kernels() const {
  std::vector<std::string> out;
  for (const NodeState& s : nodes_)
    out.push_back(s.entry ? s.entry->info.id : "");
  return out;
}

size_t GraphSession::parameter_bytes() const {
  size_t total = 0;
  for (const NodeState& s : nodes_)
    total += s.own_bytes + s.bn.size() * sizeof(float);
  return total;
}

size_t GraphSession::scratch_bytes() const {
  size_t total = 0;
  for (const NodeState& s : nodes_)
    if (s.kernel) total += s.kernel->scratch_bytes();
  return total;
}

void GraphSession::release() {
  for (NodeState& s : nodes_)
    if (s.kernel) {
      s.kernel->release();
      s.kernel.reset();
    }
}

GraphVerdict check_graph(const Graph& g, const Registry& r, std::string_view backend, uint64_t seed,
                         const Context& ctx, const std::vector<const KernelEntry*>& chosen,
                         int64_t max_reference_macs, bool fuse_relu) {
  GraphVerdict out;
  try {
    GraphSession s(g, r, std::string(backend), ctx, chosen, fuse_relu);
    if (!s.unsupported().empty()) {
      out.verdict.status = Status::unsupported;
      out.verdict.reason = s.unsupported();
      return out;
    }
    s.allocate(seed);
    s.prepare();
    out = s.run_verified(max_reference_macs);
    if (out.verdict.status == Status::failed) {
      out.verdict.reason = out.worst_node + ": " + out.verdict.reason;
      return out;
    }
    // The whole network against the reference graph on the same parameters and input.
    GraphSession ref(g, r, "ref", Context{1});
    if (!ref.unsupported().empty()) throw Error("the reference graph: " + ref.unsupported());
    ref.allocate(seed);
    ref.prepare();
    ref.run();
    const Tensor &y = s.compared_output(), &y_ref = ref.compared_output();
    std::vector<double> a(y.elements()), b(y.elements());
    y.load_range(0, y.elements(), a.data());
    y_ref.load_range(0, y.elements(), b.data());
    double diff = 0, norm = 0;
    for (size_t e = 0; e < a.size(); ++e) {
      diff += (a[e] - b[e]) * (a[e] - b[e]);
      norm += b[e] * b[e];
    }
    // Each op node's relative error, as a random walk: the rounding of its output to the
    // storage, and of the sums along its accumulation (products in f32, tf32's inputs rounded).
    const double out_unit = unit_roundoff(storage_of(g.dt, Arg::dst));
    const double product_unit = g.dt == DType::tf32 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -24);
    double variance = 0;
    // (A last softmax, whose input is what is compared, adds nothing.)
    for (const Node& n : g.nodes)
      if (n.problem && (&n != &g.nodes.back() || &y != &s.output()))
        variance +=
            out_unit * out_unit + double(std::max<int64_t>(1, accumulation_length(*n.problem, Arg::dst))) *
                                      product_unit * product_unit;
    out.output_difference = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
    out.output_tolerance = kNetworkTolerance * std::sqrt(variance);
    const std::string figures = "the network's output " + figure(out.output_difference) +
                                " from the reference graph's (normwise; allowed " +
                                figure(out.output_tolerance) + ")";
    if (!(out.output_difference <= out.output_tolerance)) {
      out.verdict.status = Status::failed;
      out.verdict.reason = figures + ", though every node passed on its own inputs";
      return out;
    }
    std::string sparse;
    for (const std::string& node : out.sparse_nodes)
      sparse += (sparse.empty() ? "; passed on outputs mostly zero, proving little alone: " : ", ") + node;
    out.verdict.reason = std::to_string(out.nodes_checked) + " nodes checked, worst " + out.worst_node +
                         ": " + (out.verdict.reason.empty() ? "" : out.verdict.reason + "; ") + figures +
                         sparse;
  } catch (const std::bad_alloc&) {
    out.verdict.status = Status::out_of_memory;
    out.verdict.reason = "out of memory allocating the graph";
  } catch (const std::exception& e) {
    out.verdict.status = Status::failed;
    out.verdict.reason = e.what();
  }
  return out;
}

}  // namespace lb
