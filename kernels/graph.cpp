#include "kernels/graph.h"

#include <algorithm>

#include "kernels/common.h"
#include "kernels/ops/traits.h"
#include "kernels/tensor.h"

namespace lb {

int64_t product(const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    p *= d;
  return p;
}

std::string shape_string(const std::vector<int64_t>& dims) {
  std::string s;
  for (int64_t d : dims) {
    if (!s.empty()) s += 'x';
    s += std::to_string(d);
  }
  return s;
}

std::vector<Problem> problems(const Graph& g) {
  std::vector<Problem> out;
  for (const Node& n : g.nodes)
    if (n.problem) out.push_back(*n.problem);
  return out;
}

namespace {

// What a node's backward reads of its forward (liveness's header comment).
struct Keeps {
  bool input = false, output = false;
  double saved = 0;  // bytes the op saves beyond its input (the LSTM's states)
};

Keeps keeps(const Node& n) {
  // An op: what its traits say, and its output where a ReLU of its own masks the gradient.
  if (n.problem) {
    const OpTraits& t = traits(n.problem->op());
    return {!t.keeps_input || t.keeps_input(*n.problem), t.keeps_output || n.problem->relu != Relu::none,
            model(*n.problem).saved_bytes};
  }
  if (n.kind == "relu" || n.kind == "relu6") return {false, true, 0};
  if (n.kind == "batchnorm") return {true, false, 0};
  return {};
}

// The graph's buffers: 0 is the graph's input, i + 1 node i's own; in-place nodes write
// into their first input's. In a training step batchnorm writes a buffer of its own (at
// inference it is folded into the layer before it).
struct Buffers {
  std::vector<int> of_node;    // the buffer each node's output lives in
  std::vector<double> bytes;   // per buffer
  std::vector<int> written;    // per buffer: the node that writes it first (-1: the input)
  std::vector<int> last_read;  // per buffer: the last node that reads it in the forward
};

Buffers buffers(const Graph& g, bool training) {
  const int n = int(g.nodes.size());
  Buffers b;
  b.of_node.resize(n);
  b.bytes.assign(n + 1, 0.0);
  b.written.assign(n + 1, -1);
  b.last_read.assign(n + 1, -1);
  b.bytes[0] = g.in_bytes;
  const double act = double(size_of(storage_of(g.dt, Arg::src)));
  auto buffer_of = [&b](int input) { return input == kGraphInput ? 0 : b.of_node[input]; };
  for (int i = 0; i < n; ++i) {
    const Node& node = g.nodes[i];
    const bool own = node.new_buffer || (training && node.kind == "batchnorm");
    b.of_node[i] = own ? i + 1 : buffer_of(node.inputs.at(0));
    if (own) {
      b.written[i + 1] = i;
      b.bytes[i + 1] = double(g.batch) * double(product(node.out_shape)) * act;
    }
    for (int input : node.inputs)
      b.last_read[buffer_of(input)] = i;
  }
  b.last_read[b.of_node[n - 1]] = n;  // the graph's output outlives its last node
  return b;
}

}  // namespace

Liveness liveness(const Graph& g, Pass pass, Optimizer opt) {
  if (pass != Pass::fwd && pass != Pass::train)
    throw Error("liveness: dir=" + std::string(name(pass)) + ": a graph's memory is of fwd or train");
  const bool training = pass == Pass::train;
  const int n = int(g.nodes.size());
  const Buffers b = buffers(g, training);
  int64_t params = 0;
  double param_bytes = 0;
  for (const Node& node : g.nodes) {
    params += node.params;
    param_bytes += node.param_bytes;
  }
  // kept_until[b]: the node whose backward reads buffer b last (backward runs from the
  // last node down, so the lowest index), or n when none does.
  std::vector<int> kept_until(b.bytes.size(), n);
  std::vector<double> saved(n, 0.0);
  if (training)
    for (int i = 0; i < n; ++i) {
      const Node& node = g.nodes[i];
      const Keeps k = keeps(node);
      auto keep = [&](int buffer) { kept_until[buffer] = std::min(kept_until[buffer], i); };
      if (k.input)
        for (int input : node.inputs)
          keep(input == kGraphInput ? 0 : b.of_node[input]);
      if (k.output) keep(b.of_node[i]);
      saved[i] = k.saved;
    }
  Liveness out;
  auto consider = [&out](double live, const std::string& at) {
    if (live > out.activations) {
      out.activations = live;
      out.at = at;
    }
  };
  // The forward: a buffer lives from its writer to its last reader, or, kept, on into the
  // backward; an op's saved states from it on.
  double saved_so_far = 0;
  for (int i = 0; i < n; ++i) {
    saved_so_far += saved[i];
    double live = saved_so_far;
    for (size_t buf = 0; buf < b.bytes.size(); ++buf)
      if (b.written[buf] <= i && (b.last_read[buf] >= i || kept_until[buf] < n)) live += b.bytes[buf];
    consider(live, g.nodes[i].name);
    if (i == n - 1) out.kept = live;
  }
  if (training) {
    // The backward, last node first. grad[buf]: the gradient of buffer buf is allocated.
    std::vector<bool> grad(b.bytes.size(), false);
    grad[b.of_node[n - 1]] = true;  // the loss's gradient of the output
    for (int i = n - 1; i >= 0; --i) {
      const Node& node = g.nodes[i];
      for (int input : node.inputs)
        if (input != kGraphInput) grad[b.of_node[input]] = true;  // written by this backward
      double live = 0;
      for (int j = 0; j <= i; ++j)
        live += saved[j];
      for (size_t buf = 0; buf < b.bytes.size(); ++buf) {
        if (kept_until[buf] <= i) live += b.bytes[buf];
        if (grad[buf]) live += b.bytes[buf];
      }
      consider(live, node.name + " backward");
      // Freed after it: the gradient of the buffer this node wrote (an in-place node's is
      // its input's, still needed).
      if (b.written[b.of_node[i]] == i) grad[b.of_node[i]] = false;
    }
  }
  if (training) {
    out.memory = training_memory(params, param_bytes, out.activations, g.dt, opt);
  } else {
    out.memory.parameters = param_bytes;
    out.memory.kept = out.activations;
  }
  return out;
}

ArenaPlan plan_arena(const Graph& g) {
  const Buffers b = buffers(g, false);
  const size_t count = b.bytes.size();
  ArenaPlan plan;
  plan.of_node = b.of_node;
  plan.bytes.assign(count, 0);
  plan.offset.assign(count, 0);
  for (size_t buf = 0; buf < count; ++buf)
    if (buf == 0 || b.written[buf] >= 0) plan.bytes[buf] = size_t(round_up(int64_t(b.bytes[buf]), 64));
  std::vector<size_t> order(count);
  for (size_t i = 0; i < count; ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&plan](size_t x, size_t y) { return plan.bytes[x] > plan.bytes[y]; });
  auto overlap_in_time = [&b](size_t x, size_t y) {
    return b.written[x] <= b.last_read[y] && b.written[y] <= b.last_read[x];
  };
  std::vector<size_t> placed;
  for (size_t buf : order) {
    if (!plan.bytes[buf]) continue;
    // The lowest offset clear of every placed buffer alive at the same time: try 0 and the
    // end of each of those, in increasing order.
    std::vector<std::pair<size_t, size_t>> taken;  // [begin, end) of the buffers alive with it
    for (size_t other : placed)
      if (overlap_in_time(buf, other))
        taken.emplace_back(plan.offset[other], plan.offset[other] + plan.bytes[other]);
    std::sort(taken.begin(), taken.end());
    size_t at = 0;
    for (const auto& [begin, end] : taken) {
      if (at + plan.bytes[buf] <= begin) break;
      at = std::max(at, end);
    }
    plan.offset[buf] = at;
    plan.arena_bytes = std::max(plan.arena_bytes, at + plan.bytes[buf]);
    placed.push_back(buf);
  }
  return plan;
}

GraphTotals totals(const Graph& g, Optimizer opt) {
  GraphTotals t;
  t.activation_bytes = g.in_bytes;
  for (const Node& n : g.nodes) {
    t.params += n.params;
    t.param_bytes += n.param_bytes;
    t.macs += n.macs;
    t.activation_bytes += n.out_bytes;
  }
  t.inference_bytes = liveness(g, Pass::fwd).total();
  t.training_bytes = liveness(g, Pass::train, opt).total();
  return t;
}

}  // namespace lb
