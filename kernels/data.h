// Problems and networks kept as data: suite files (bench/suites/NAME.txt, one canonical
// problem line each) and network files (bench/networks/NAME.txt, ordered layers).
// In both, '#' starts a comment and blank lines are ignored; every error cites
// file:line and the token.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/model.h"
#include "kernels/problem.h"

namespace lb {

// Where bench/suites and bench/networks live: $LAYERBENCH_DATA if set, else the source
// tree this binary was built from.
std::string data_dir();

// NAME -> <data_dir>/<kind>/NAME.txt; a NAME containing '/' or ending in .txt is a path.
// Throws "unknown suite 'x' (available: a b c)".
std::string find_data(std::string_view kind, std::string_view name);
std::vector<std::string> list_data(std::string_view kind);
std::string read_file(const std::string& path);

std::vector<Problem> parse_suite(std::string_view text, std::string_view file);
std::vector<Problem> load_suite(std::string_view name);

// One layer of a network, with its shapes resolved for a batch and dtype.
struct Layer {
  std::string name;
  std::string kind;                // dense conv2d lstm embedding relu maxpool avgpool flatten softmax add
  std::string type;                // table type: layer_type() for ops, else the kind
  std::optional<Problem> problem;  // for dense, conv2d and lstm layers
  std::vector<int64_t> out_shape;  // per sample
  int64_t params = 0;
  double param_bytes = 0;
  double in_bytes = 0;     // whole batch
  double out_bytes = 0;    // whole batch; 0 where the layer writes no new buffer
  bool new_buffer = true;  // false for in-place ReLU and flatten (a view)
  int64_t macs = 0;
};

struct Network {
  std::string name;
  int64_t batch = 1;
  DType dt = DType::f32;
  std::vector<int64_t> in_shape;  // per sample
  double in_bytes = 0;            // whole batch
  std::vector<Layer> layers;
};

// The network file grammar (see bench/networks/README.md):
//   input c=3 h=224 w=224 | input c=4096 | input t=35 (a sequence of token ids)
//   <name> <kind> key=value ...
// Op layers take the keys of a problem line without the ones the previous layer
// determines (mb and the input sizes, as the op's OpTraits derive them); given anyway,
// they must agree.
Network parse_network(std::string_view text, std::string_view file, int64_t batch, DType dt);
Network load_network(std::string_view name, int64_t batch, DType dt);

struct NetworkTotals {
  int64_t params = 0;
  double param_bytes = 0;
  double activation_bytes = 0;  // every new buffer, input included
  int64_t macs = 0;
  double inference_bytes = 0;  // parameters + the largest input+output pair alive at once
  double saved_bytes = 0;      // kept beyond the activations (the model's saved_bytes per layer)
  double training_bytes = 0;   // training_memory() (kernels/model.h): every activation and saved byte kept
};
NetworkTotals totals(const Network& n, Optimizer opt = Optimizer::sgd);

std::string shape_string(const std::vector<int64_t>& dims);  // {64, 55, 55} -> "64x55x55"

// The network's op layers as problems (for check and run).
std::vector<Problem> problems(const Network& n);

}  // namespace lb
