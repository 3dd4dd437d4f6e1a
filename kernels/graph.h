// A network as a graph: nodes in the order of their file (each reads only earlier nodes'
// outputs, so that order is a topological one), their per-sample shapes, the analytic
// model of each and of the whole, and the memory a pass needs by liveness. Parsing is
// kernels/data.h's (the grammar: bench/networks/README.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/model.h"
#include "kernels/problem.h"

namespace lb {

// A node's input that is the graph's input, not another node's output.
inline constexpr int kGraphInput = -1;

// One layer of a network, with its shapes resolved for a batch and dtype.
struct Node {
  std::string name;
  std::string kind;  // an op (dense conv2d ... softmax), a kind of one or data.cpp's kLayerKinds
  std::string type;  // table type: layer_type() for ops, else the kind
  std::optional<Problem> problem;  // for op nodes (an op, or a kind of one: maxpool)
  std::vector<int> inputs;         // earlier nodes' indices, or kGraphInput
  std::vector<int64_t> out_shape;  // per sample
  int64_t params = 0;
  double param_bytes = 0;
  double in_bytes = 0;     // every input, whole batch
  double out_bytes = 0;    // whole batch; 0 where the node writes no new buffer
  bool new_buffer = true;  // false for an in-place ReLU, flatten (a view) and, at inference,
                           // batchnorm (folded into the layer before it)
  int64_t macs = 0;
};

struct Graph {
  std::string name;
  int64_t batch = 1;
  DType dt = DType::f32;
  std::vector<int64_t> in_shape;  // per sample
  double in_bytes = 0;            // whole batch
  std::vector<Node> nodes;
};

// The memory a pass of a graph needs by liveness: every buffer counted from the node that
// writes it to the last that reads it (in place nodes share their input's), at the worst
// moment of the pass.
//   fwd (inference): the nodes' outputs, each freed after its last reader.
//   train (a training step): the forward keeps what each node's backward reads — an op's
//     input and what it saves beyond it (the LSTM's states), a ReLU's output (its mask;
//     an op's own relu= too), batchnorm's and maxpool's input, softmax's output — until
//     that backward has run;
//     the backward, last node first, holds the gradient of each buffer from its last
//     reader's backward to its writer's (an in-place ReLU's backward writes over it; the
//     graph's input gets none); parameters, their gradients and the optimizer's state
//     come from training_memory() (kernels/model.h).
struct Liveness {
  double activations = 0;  // the live buffers at the worst moment (gradients included)
  std::string at;          // that moment: "conv3" or "conv3 backward"
  double kept = 0;         // train: what the forward keeps for the backward, at its end
  TrainingMemory memory;   // parameters (+ gradients, state, master weights) + activations
  double total() const { return memory.total(); }
};
Liveness liveness(const Graph& g, Pass pass, Optimizer opt = Optimizer::sgd);

// Where an inference forward keeps its activations when it runs (kernels/graph_session.h):
// buffer 0 is the graph's input, buffer i + 1 node i's own (in-place nodes and views write
// into their first input's), each at an offset of one arena, placed so that buffers alive at
// once — from the node that writes one to the last that reads it — never overlap: the
// largest first, each at the lowest offset free throughout its life. The arena is at least
// liveness(fwd)'s activations (the live buffers at the worst moment); the rest is
// fragmentation.
struct ArenaPlan {
  std::vector<int> of_node;    // the buffer each node's output lives in
  std::vector<size_t> bytes;   // per buffer; 0 where a node writes into another's
  std::vector<size_t> offset;  // per buffer, 64-byte aligned
  size_t arena_bytes = 0;
};
ArenaPlan plan_arena(const Graph& g);

struct GraphTotals {
  int64_t params = 0;
  double param_bytes = 0;
  double activation_bytes = 0;  // every new buffer, input included
  int64_t macs = 0;
  double inference_bytes = 0;  // liveness(fwd)
  double training_bytes = 0;   // liveness(train)
};
GraphTotals totals(const Graph& g, Optimizer opt = Optimizer::sgd);

std::string shape_string(const std::vector<int64_t>& dims);  // {64, 55, 55} -> "64x55x55"
int64_t product(const std::vector<int64_t>& dims);           // the values of a shape

// The graph's op nodes as problems (for check and run).
std::vector<Problem> problems(const Graph& g);

}  // namespace lb
