// A whole network run by one backend: CaseSession's lifecycle (kernels/case_session.h) for a
// graph (kernels/graph.h) — allocate, prepare, run, verify, release — with the layers'
// activations in one arena, so that a layer's output is the next one's input.
//
//   GraphSession s(graph, registry(), "onednn", Context{threads});
//   if (!s.unsupported().empty()) ...  // a node no kernel of the backend takes, with the reason
//   s.allocate(seed);  // the arena (plan_arena()), every layer's parameters, the input (seeded)
//   s.prepare();       // every kernel's untimed set-up (weight packing)
//   s.run();           // the timed work: the whole forward, node by node
//   s.release();
//
// Each op node (dense, conv2d, lstm, pool2d, add, softmax) runs the first kernel of the backend that is not
// opt-in and supports its problem, or the one given for its op (--kernel); its tensors are views of the
// arena (Tensor::view) for its inputs (add's two) and output and its own for the parameters. A GPU
// backend's graph keeps a twin of the arena in device memory, bound to its kernels (Kernel::bind: no
// per-kernel copies of the activations); its element-wise nodes run on the host between a download of
// their inputs and an upload of their output (correct, and slow: GPU kernels for them are not written).
// Never run on a GPU yet. The other nodes are the graph's own element-wise code on the host, the same for
// every backend: relu, relu6 and batchnorm (where not folded into the layer before it) in place or into a
// buffer of their own, and concat (along the channels); flatten and a folded batchnorm are views. An
// in-place relu right after an op layer (through a folded batchnorm) that nothing else reads is fused into
// it, relu=fused (a relu6, relu=relu6), as a framework hands it to oneDNN as a post-op (`fuse_relu`; not
// where the backend's kernel does not take that mode): a ResNet block's add and its ReLU are one kernel.
// Graphs run in f32, tf32, f16 and bf16 (i8 and f8 would need requantising between layers: declined).
//
// Kernels prepared here take what they need only inside run() from one TemporaryPool
// (kernels/host_memory.h) — the layers run one after another, so oneDNN's reordered
// activations and scratchpads overlap and the graph holds the largest layer's, not the sum
// (ResNet-50 on oneDNN at batch 32, AMD EPYC Zen 5 VM: 3.50 -> 0.72 GB measured).
//
// Parameters are seeded per node and scaled as He et al. initialise them (uniform with
// variance 2 / fan-in), so that activations neither vanish nor overflow through 50 layers;
// biases are a tenth of that.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/device.h"
#include "kernels/graph.h"
#include "kernels/host_memory.h"
#include "kernels/registry.h"
#include "kernels/verify.h"

namespace lb {

// The kernel a backend runs problem p with: the one in `chosen` of p's op if any (it must
// support p), else the first kernel of `backend` that is not opt-in and supports p. nullptr
// where none does; `why` then says why (each candidate's reason, or that there is none).
const KernelEntry* pick_kernel(const Registry& r, const Problem& p, std::string_view backend,
                               const std::vector<const KernelEntry*>& chosen, std::string* why);

// A graph's verdict: its worst node's (each node checked as it runs, against the reference
// on the inputs it was given), then the whole network's output (compared_output()) against
// the reference graph run on the same parameters and input: its normwise relative
// difference, ‖y − y_ref‖ / ‖y_ref‖, within kNetworkTolerance times sqrt(Σ u_out² + K·u_sum²)
// over the op nodes: each node's relative error as a random walk — its output's rounding to
// the storage (u_out, the dtype's unit) and its sums' along K terms (u_sum: f32's, or tf32's
// for its rounded inputs) — compounding through the layers. A heuristic bound, not a proof:
// measured 50-300x under it at batch 2 (ResNet-50 f32 8e-7 of 2.2e-4, AlexNet bf16 0.004 of
// 0.21; 2-core Zen 5 VM). Each node passing on its own inputs cannot see a kernel that writes outside its
// output into another live buffer of the arena (a shortcut's); the whole output does.
// A node that passes on an output of mostly exact zeros (a softmax of the large logits that
// random weights give ResNet-50: 1987 of 2000 probabilities underflow) would be "mistrusted"
// on its own; in a graph it counts as passed and is named in sparse_nodes (the reason lists
// them): the network's verdict rests on every node and on its dense output (the logits).
struct GraphVerdict {
  Verdict verdict;                        // the network's
  int nodes_checked = 0;                  // op and element-wise nodes compared
  std::vector<std::string> sparse_nodes;  // passed on outputs too sparse to prove much alone
  std::string worst_node;
  double output_difference = 0;  // normwise, against the reference graph
  double output_tolerance = 0;
};
inline constexpr double kNetworkTolerance = 16.0;

class GraphSession {
 public:
  GraphSession(Graph g, const Registry& r, std::string backend, Context ctx = {},
               std::vector<const KernelEntry*> chosen = {}, bool fuse_relu = true);
  ~GraphSession();
  GraphSession(const GraphSession&) = delete;
  GraphSession& operator=(const GraphSession&) = delete;

  // "" when every node can run, else the first that cannot: "<node>: <reason>".
  const std::string& unsupported() const { return unsupported_; }
  void allocate(uint64_t seed);
  void prepare();
  void run();
  // run(), each node's time added to node_seconds() (steady clock; kernels synchronise
  // nothing here, so a GPU backend's would be launch times: host backends only).
  void run_per_node();
  // One run with each node verified right after it (its inputs still alive in the arena;
  // untimed): poisoned outputs, inputs untouched, values within the node's allowance of the
  // reference. Returns the worst node's verdict and how many were compared.
  GraphVerdict run_verified(int64_t max_reference_macs = kDefaultReferenceMacs);
  void release();

  const Graph& graph() const { return graph_; }
  const Tensor& output() const;  // the last node's output (after run)
  // What check_graph() compares with the reference graph's: the output, or where the last
  // node is a softmax its input, the logits (random weights make them large, and a
  // saturated softmax would hide their differences).
  const Tensor& compared_output() const;
  // The kernel each node runs with ("" for the graph's own element-wise nodes).
  std::vector<std::string> node_kernels() const;
  const std::vector<double>& node_seconds() const { return node_seconds_; }
  size_t arena_bytes() const { return plan_.arena_bytes; }
  size_t parameter_bytes() const;  // the nodes' own tensors: weights, biases, LSTM states
  size_t scratch_bytes() const;    // what the prepared kernels hold beyond them
  // Of the kernels' memory, what they need only while they run (oneDNN's reordered
  // activations and scratchpads), taken from one pool they share (TemporaryPool,
  // kernels/host_memory.h): the largest kernel's, not the sum.
  size_t temporary_bytes() const { return temporaries_.bytes(); }

 private:
  struct NodeState;
  Graph graph_;
  std::string backend_;
  Context ctx_;
  std::string unsupported_;
  ArenaPlan plan_;
  std::byte* arena_ = nullptr;
  size_t arena_mapped_ = 0;
  std::vector<NodeState> nodes_;
  TemporaryPool temporaries_;
  std::vector<double> node_seconds_;

  // A GPU graph (its kernels on the GPU): the arena's twin in device memory, where the
  // kernels read and write (Kernel::bind); the host arena holds what verification reads.
  const DeviceRuntime* gpu_ = nullptr;
  std::shared_ptr<std::byte> device_arena_;

  Tensor buffer_view(int buffer, std::vector<int64_t> dims) const;
  void run_node(size_t i);
  void run_elementwise(size_t i);  // on the host arena
  void* on_device(const Tensor& view) const;
  void download(const Tensor& view) const;  // a view of the arena, from its device twin
  void upload(const Tensor& view) const;
};

// check --graph: the network run by `backend` of `r` and verified (run_verified()), then its
// output against the reference graph's (r's ref backend). Never throws: unsupported, out_of_memory or failed
// with the reason.
GraphVerdict check_graph(const Graph& g, const Registry& r, std::string_view backend, uint64_t seed,
                         const Context& ctx = {}, const std::vector<const KernelEntry*>& chosen = {},
                         int64_t max_reference_macs = kDefaultReferenceMacs, bool fuse_relu = true);

}  // namespace lb
