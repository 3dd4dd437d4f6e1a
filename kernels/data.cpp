#include "kernels/data.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "kernels/common.h"
#include "kernels/ops/traits.h"
#include "kernels/tensor.h"

#ifndef LB_DATA_DIR
#define LB_DATA_DIR "bench"
#endif

namespace lb {
namespace fs = std::filesystem;
namespace {

struct Line {
  int number;
  std::string text;  // comment stripped, trimmed, non-empty
};

std::vector<Line> content_lines(std::string_view text) {
  // A UTF-8 byte-order mark, which some Windows editors put first, is no part of line 1
  // (as CRLF line ends are no part of a line).
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  if (text.starts_with(kBom)) text.remove_prefix(kBom.size());
  std::vector<Line> out;
  int number = 0;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (size_t hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    const size_t a = line.find_first_not_of(" \t\r");
    if (a == std::string::npos) continue;
    const size_t b = line.find_last_not_of(" \t\r");
    out.push_back({number, line.substr(a, b - a + 1)});
  }
  return out;
}

std::string where(std::string_view file, int line) {
  return std::string(file) + ":" + std::to_string(line) + ": ";
}

// A layer's input or output holds at most 2^40 values per sample (4 TB of f32), so that
// product() of its shape cannot overflow int64 — a pool with a huge padding made
// billions of rows and columns — and neither can that times the batch (at most 2^31 - 1).
void check_values(std::string_view kind, const std::vector<int64_t>& dims) {
  long double values = 1;
  for (int64_t d : dims)
    values *= d;
  if (values > 0x1p40L)
    throw Error(std::string(kind) + ": more than 2^40 values per sample (" + shape_string(dims) + ")");
}

// key=value tokens of one network line; throws on a malformed or repeated token.
using Keys = KeyValues;

Keys split_keys(std::istringstream& in, std::string_view kind) {
  Keys kv;
  for (std::string tok; in >> tok;) {
    const size_t eq = tok.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == tok.size())
      throw Error(std::string(kind) + ": '" + tok + "': expected key=value");
    if (!kv.emplace(tok.substr(0, eq), tok.substr(eq + 1)).second)
      throw Error(std::string(kind) + ": " + tok + ": " + tok.substr(0, eq) + " given twice");
  }
  return kv;
}

int64_t take_int(Keys& kv, std::string_view kind, const std::string& key, std::optional<int64_t> fallback,
                 int64_t min) {
  auto it = kv.find(key);
  if (it == kv.end()) {
    if (!fallback) throw Error(std::string(kind) + ": missing " + key + "=");
    return *fallback;
  }
  const std::string tok = key + "=" + it->second;
  int64_t v = 0;
  size_t used = 0;
  try {
    v = std::stoll(it->second, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != it->second.size())
    throw Error(std::string(kind) + ": " + tok + ": expected an integer");
  if (v < min || v > 2147483647)
    throw Error(std::string(kind) + ": " + tok + ": must be between " + std::to_string(min) +
                " and 2147483647");
  kv.erase(it);
  return v;
}

void no_more_keys(const Keys& kv, std::string_view kind, std::string_view expected) {
  if (kv.empty()) return;
  const auto& [k, v] = *kv.begin();
  throw Error(std::string(kind) + ": '" + k + "=" + v + "': unknown key; expected " + std::string(expected));
}

// Builds an op layer's problem line from the keys the file gives and the sizes the
// previous layer determines; a given size must agree.
Problem op_problem(std::string_view kind, Keys kv, const DerivedKeys& derived, DType dt,
                   const std::string& layer_name) {
  for (const char* forbidden : {"mb", "dt", "name"})
    if (kv.count(forbidden))
      throw Error(std::string(kind) + ": " + forbidden + "=" + kv.at(forbidden) +
                  ": set by the network (--batch, --dtype, the layer name), not the layer");
  std::string line(kind);
  for (const auto& [key, value] : derived) {
    if (auto it = kv.find(key); it != kv.end()) {
      if (it->second != std::to_string(value))
        throw Error(std::string(kind) + ": " + std::string(key) + "=" + it->second +
                    ": the previous layer gives " + std::to_string(value));
      kv.erase(it);
    }
    line += ' ';
    line += key;
    line += '=';
    line += std::to_string(value);
  }
  for (const auto& [key, value] : kv)
    line += " " + key + "=" + value;
  line += " dt=" + std::string(name(dt)) + " name=" + layer_name;
  return parse_problem(line);
}

}  // namespace

std::string data_dir() {
  if (const char* env = std::getenv("LAYERBENCH_DATA"); env && *env) return env;
  return LB_DATA_DIR;
}

std::vector<std::string> list_data(std::string_view kind) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(data_dir()) / kind, ec))
    if (e.path().extension() == ".txt") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string find_data(std::string_view kind, std::string_view name) {
  const std::string singular(kind.substr(0, kind.size() - 1));  // "suites" -> "suite"
  if (name.find('/') != std::string_view::npos || name.ends_with(".txt")) {
    if (fs::is_directory(fs::path(name)))
      throw Error(singular + " file '" + std::string(name) + "' is a directory; expected a " + singular +
                  " file");
    if (!fs::is_regular_file(fs::path(name)))
      throw Error(singular + " file '" + std::string(name) + "' not found");
    return std::string(name);
  }
  const fs::path p = fs::path(data_dir()) / kind / (std::string(name) + ".txt");
  if (fs::is_regular_file(p)) return p.string();
  if (fs::is_directory(p))
    throw Error(singular + " '" + std::string(name) + "': " + p.string() + " is a directory; expected a " +
                singular + " file");
  std::string available;
  for (const auto& n : list_data(kind))
    available += (available.empty() ? "" : " ") + n;
  throw Error("unknown " + singular + " '" + std::string(name) +
              "' (available: " + (available.empty() ? "none in " + data_dir() : available) + ")");
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read '" + path + "'");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<Problem> parse_suite(std::string_view text, std::string_view file) {
  std::vector<Problem> out;
  for (const Line& l : content_lines(text)) {
    try {
      out.push_back(parse_problem(l.text));
    } catch (const Error& e) {
      throw Error(where(file, l.number) + e.what());
    }
  }
  if (out.empty()) throw Error(std::string(file) + ": no problems");
  return out;
}

std::vector<Problem> load_suite(std::string_view name) {
  const std::string path = find_data("suites", name);
  return parse_suite(read_file(path), path);
}

namespace {

// A network file being read: the graph so far and what later lines are checked against.
struct GraphReader {
  Graph g;
  double act = 0;       // bytes per activation value
  bool tokens = false;  // the input is a sequence of token ids (int32), not activations
  std::map<std::string, int, std::less<>> index;  // node name -> index ("input": the graph's input)
  int64_t sum_params = 0, sum_macs = 0;

  const std::vector<int64_t>& shape(int node) const {
    return node == kGraphInput ? g.in_shape : g.nodes[node].out_shape;
  }
  double bytes(int node) const {
    return node == kGraphInput ? g.in_bytes : double(g.batch) * double(product(shape(node))) * act;
  }
};

// totals() sums parameters and MACs in int64: the sums are bounded as parse_problem
// bounds one problem's MACs, and a network that exceeds them is rejected.
constexpr int64_t kMaxSum = int64_t(1) << 62;

// Throws unless the input's per-sample shape `in` has one of `ranks`.
void need(const std::string& kind, const std::vector<int64_t>& in, const std::vector<size_t>& ranks,
          std::string_view what) {
  if (std::find(ranks.begin(), ranks.end(), in.size()) == ranks.end())
    throw Error(kind + ": needs " + std::string(what) + " input, the previous layer gives " +
                shape_string(in));
}

void read_input(const std::string& first, std::istringstream& in, GraphReader& r) {
  if (first != "input") throw Error("'" + first + "': the first line must be 'input ...'");
  Keys kv = split_keys(in, "input");
  const bool has_t = kv.count("t"), has_c = kv.count("c"), has_h = kv.count("h");
  std::vector<int64_t>& s = r.g.in_shape;
  if (has_t) s.push_back(take_int(kv, "input", "t", {}, 1));
  if (has_c) s.push_back(take_int(kv, "input", "c", {}, 1));
  if (has_h) {
    s.push_back(take_int(kv, "input", "h", {}, 1));
    s.push_back(take_int(kv, "input", "w", {}, 1));
  }
  no_more_keys(kv, "input", "c=, h= w= (an image), t= (a sequence)");
  if (s.empty() || (has_t && has_h) || (has_h && !has_c))
    throw Error("input: expected c= h= w=, c=, t= or t= c=");
  check_values("input", s);
  r.tokens = has_t && !has_c;
  r.g.in_bytes = double(r.g.batch) * product(s) * (r.tokens ? 4.0 : r.act);
  r.index["input"] = kGraphInput;
}

// The shapes of a node's inputs, in order.
using Shapes = std::vector<std::vector<int64_t>>;

// An op layer: its problem from the keys the file gives and those its input determines,
// as the op's traits derive them.
void op_layer(Node& node, const OpTraits& op, const Keys& kv, const Shapes& in, const GraphReader& r) {
  need(node.kind, in[0], op.layer.ranks, op.layer.input);
  if (in.size() != op.layer.layer_inputs)
    throw Error(node.kind + ": takes " + std::to_string(op.layer.layer_inputs) + " input" +
                (op.layer.layer_inputs == 1 ? "" : "s") + ", in= names " + std::to_string(in.size()));
  for (size_t i = 1; i < in.size(); ++i)  // add's: of one shape
    if (in[i] != in[0]) {
      const int other = node.inputs[i];
      throw Error(node.kind + ": " + (other == kGraphInput ? std::string("input") : r.g.nodes[other].name) +
                  ": shape " + shape_string(in[i]) + " differs from " + shape_string(in[0]));
    }
  node.problem = op_problem(op.name, kv, op.layer.keys(in[0], r.g.batch), r.g.dt, node.name);
  node.out_shape = op.layer.out_shape(*node.problem, in[0]);
}

// The other layer kinds: each sets the node's per-sample output shape, and the
// parameters and buffers that differ from an op layer's.
using LayerReader = void (*)(Node& node, Keys& kv, const Shapes& in, const GraphReader& r);

void embedding_layer(Node& node, Keys& kv, const Shapes& in, const GraphReader& r) {
  const int64_t vocab = take_int(kv, node.kind, "vocab", {}, 1), dim = take_int(kv, node.kind, "dim", {}, 1);
  no_more_keys(kv, node.kind, "vocab= dim=");
  node.params = vocab * dim;
  node.param_bytes = double(node.params) * size_of(storage_of(r.g.dt, Arg::wei));
  node.out_shape = {in[0][0], dim};
}

// The network kinds that are an op with some of its keys set: the pools, pool2d with its
// alg=, and the global one with its window the whole plane (PyTorch's AdaptiveAvgPool2d(1)
// on a square plane).
struct OpKind {
  std::string_view kind;
  Op op;
  std::string_view alg;
  bool global = false;
};
constexpr OpKind kOpKinds[] = {{"maxpool", Op::pool2d, "max"},
                               {"avgpool", Op::pool2d, "avg"},
                               {"global_avgpool", Op::pool2d, "avg", true}};

void op_kind_layer(Node& node, const OpKind& kind, Keys kv, const Shapes& in, const GraphReader& r) {
  const OpTraits& op = traits(kind.op);
  need(node.kind, in[0], op.layer.ranks, op.layer.input);
  for (const char* given : {"alg", "k", "s", "p"})
    if (kv.count(given) && (std::string_view(given) == "alg" || kind.global))
      throw Error(node.kind + ": " + given + "=" + kv.at(given) +
                  ": set by the kind (use pool2d to give it)");
  kv["alg"] = std::string(kind.alg);
  if (kind.global) {
    if (in[0][1] != in[0][2])
      throw Error(node.kind + ": needs a square plane, the previous layer gives " + shape_string(in[0]));
    kv["k"] = std::to_string(in[0][1]);
  }
  op_layer(node, op, kv, in, r);
}

// relu and relu6 (min(max(x, 0), 6), MobileNet v2's).
void relu_layer(Node& node, Keys& kv, const Shapes& in, const GraphReader&) {
  const std::string mode = kv.count("mode") ? kv.at("mode") : "inplace";
  kv.erase("mode");
  no_more_keys(kv, node.kind, "mode=inplace|separate");
  if (mode != "inplace" && mode != "separate")
    throw Error(node.kind + ": mode=" + mode + ": expected inplace or separate");
  node.new_buffer = mode == "separate";
  node.out_shape = in[0];
}

// Batch normalisation of the channels (the first axis) by a scale and a shift per channel.
// At inference it folds into the layer before it: a conv2d or dense layer's weights take
// the scale and its bias is the shift, so the node counts the scale only (the trained
// model's 2·C: the papers' parameter counts, whose convolutions have no bias of their own)
// and writes nothing; after any other layer it counts both.
void batchnorm_layer(Node& node, Keys& kv, const Shapes& in, const GraphReader& r) {
  no_more_keys(kv, node.kind, "nothing");
  const int input = node.inputs[0];
  const bool folds =
      input != kGraphInput && r.g.nodes[input].problem &&
      (r.g.nodes[input].problem->op() == Op::conv2d || r.g.nodes[input].problem->op() == Op::dense);
  node.params = (folds ? 1 : 2) * in[0][0];
  node.param_bytes = double(node.params) * size_of(storage_of(r.g.dt, Arg::bias));
  node.new_buffer = false;
  node.out_shape = in[0];
}

// flatten: a view of its input, one axis.
void flatten_layer(Node& node, Keys& kv, const Shapes& in, const GraphReader&) {
  no_more_keys(kv, node.kind, "nothing");
  node.new_buffer = false;
  node.out_shape = std::vector<int64_t>{product(in[0])};
}

// Its inputs side by side along the channels (the first axis; GoogLeNet's inception), the
// other axes equal.
void concat_layer(Node& node, Keys& kv, const Shapes& in, const GraphReader&) {
  no_more_keys(kv, node.kind, "in=<layer>,<layer>,...");
  node.out_shape = in[0];
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i].size() != in[0].size() || !std::equal(in[i].begin() + 1, in[i].end(), in[0].begin() + 1))
      throw Error("concat: shapes " + shape_string(in[0]) + " and " + shape_string(in[i]) +
                  " differ beyond the channels");
    node.out_shape[0] += in[i][0];
  }
}

// In the order the unknown-kind error lists them, after the ops; with how many inputs each takes.
struct LayerKind {
  std::string_view name;
  LayerReader read;
  bool many_inputs = false;
};
constexpr LayerKind kLayerKinds[] = {{"embedding", embedding_layer}, {"relu", relu_layer},
                                     {"relu6", relu_layer},          {"batchnorm", batchnorm_layer},
                                     {"flatten", flatten_layer},     {"concat", concat_layer, true}};

void shape_layer(Node& node, Keys& kv, const Shapes& in, const GraphReader& r) {
  for (Op op : kAllOps)
    if (node.kind == name(op)) return op_layer(node, traits(op), kv, in, r);
  for (const OpKind& kind : kOpKinds)
    if (node.kind == kind.kind) return op_kind_layer(node, kind, kv, in, r);
  for (const LayerKind& kind : kLayerKinds)
    if (node.kind == kind.name) return kind.read(node, kv, in, r);
  std::string expected;  // "dense conv2d lstm embedding ... concat"
  for (Op op : kAllOps)
    expected += std::string(name(op)) + " ";
  for (const OpKind& kind : kOpKinds)
    expected += std::string(kind.kind) + " ";
  for (const LayerKind& kind : kLayerKinds)
    expected += std::string(kind.name) + " ";
  expected.pop_back();
  throw Error(node.name + ": '" + node.kind + "': unknown layer kind; expected " + expected);
}

bool takes_many_inputs(const std::string& kind) {
  for (Op op : kAllOps)
    if (name(op) == kind) return traits(op).layer.layer_inputs > 1;
  for (const LayerKind& k : kLayerKinds)
    if (k.name == kind) return k.many_inputs;
  return false;
}

// The node's inputs: in=<layer>[,<layer>...] (a name of an earlier line, or "input"), by
// default the previous line; add's from=<layer> is the previous line and that one.
std::vector<int> read_inputs(const std::string& kind, Keys& kv, const GraphReader& r) {
  const int previous = r.g.nodes.empty() ? kGraphInput : int(r.g.nodes.size()) - 1;
  auto find = [&r, &kind](const std::string& key, const std::string& layer) {
    auto it = r.index.find(layer);
    if (it == r.index.end()) throw Error(kind + ": " + key + "=" + layer + ": no earlier layer of that name");
    return it->second;
  };
  std::vector<int> inputs;
  if (auto it = kv.find("in"); it != kv.end()) {
    std::string list = it->second;
    kv.erase(it);
    for (size_t at = 0; at <= list.size();) {
      const size_t comma = std::min(list.find(',', at), list.size());
      inputs.push_back(find("in", list.substr(at, comma - at)));
      at = comma + 1;
    }
  }
  if (auto it = kv.find("from"); it != kv.end() && kind == "add") {
    if (!inputs.empty()) throw Error("add: in= and from= given; in=<layer>,<layer> names both");
    inputs = {previous, find("from", it->second)};
    kv.erase(it);
  }
  if (inputs.empty()) inputs = {previous};
  const bool many = takes_many_inputs(kind);
  if (many && inputs.size() < 2)
    throw Error(kind + ": needs two inputs or more: in=<layer>,<layer>" +
                (kind == "add" ? std::string(" (or from=<layer>: it and the previous line)") : ""));
  if (!many && inputs.size() > 1)
    throw Error(kind + ": takes one input, in= names " + std::to_string(inputs.size()));
  return inputs;
}

// Adds a shaped node to the graph: its model, checks on its size and on the sums.
void add_to_graph(Node node, GraphReader& r) {
  if (node.problem) {
    const Model m = model(*node.problem);
    node.params = m.params;
    node.param_bytes = m.param_bytes;
    node.macs = m.macs;
    node.type = layer_type(*node.problem);
  } else {
    node.type = node.kind;
  }
  check_values(node.kind, node.out_shape);
  if (node.params > kMaxSum - r.sum_params || node.macs > kMaxSum - r.sum_macs)
    throw Error(node.name + ": the network's parameters or MACs add up to more than 2^62");
  r.sum_params += node.params;
  r.sum_macs += node.macs;
  node.out_bytes = node.new_buffer ? double(r.g.batch) * product(node.out_shape) * r.act : 0.0;
  r.index[node.name] = int(r.g.nodes.size());
  r.g.nodes.push_back(std::move(node));
}

void read_layer(const std::string& first, std::istringstream& in, GraphReader& r) {
  if (first == "input") throw Error("input: given twice");
  Node node;
  node.name = first;
  if (!(in >> node.kind)) throw Error(first + ": expected '<name> <kind> key=value ...'");
  if (r.index.count(node.name)) throw Error(node.name + ": layer name used twice");
  const std::string& kind = node.kind;
  Keys kv = split_keys(in, kind);
  node.inputs = read_inputs(kind, kv, r);
  Shapes shapes;
  for (int input : node.inputs) {
    shapes.push_back(r.shape(input));
    node.in_bytes += r.bytes(input);
  }
  const bool reads_tokens =
      r.tokens && std::find(node.inputs.begin(), node.inputs.end(), kGraphInput) != node.inputs.end();
  if ((kind == "embedding") != reads_tokens)
    throw Error(kind + (kind == "embedding" ? ": must be the first layer after 'input t='"
                                            : ": token ids need an embedding layer first"));
  shape_layer(node, kv, shapes, r);
  add_to_graph(std::move(node), r);
}

}  // namespace

Graph parse_network(std::string_view text, std::string_view file, int64_t batch, DType dt) {
  // The batch becomes a problem line's mb (or T times it), which is at most 2^31 - 1;
  // checked here before T·batch is computed, which a larger batch overflowed.
  if (batch < 1 || batch > 2147483647)
    throw Error("--batch " + std::to_string(batch) + ": must be between 1 and 2147483647");
  GraphReader r;
  r.g.batch = batch;
  r.g.dt = dt;
  r.act = double(size_of(storage_of(dt, Arg::src)));
  const std::vector<Line> lines = content_lines(text);
  if (lines.empty()) throw Error(std::string(file) + ": no layers");
  for (size_t i = 0; i < lines.size(); ++i) {
    try {
      std::istringstream in(lines[i].text);
      std::string first;
      in >> first;
      if (i == 0)
        read_input(first, in, r);
      else
        read_layer(first, in, r);
    } catch (const Error& e) {
      throw Error(where(file, lines[i].number) + e.what());
    }
  }
  if (r.g.nodes.empty()) throw Error(std::string(file) + ": no layers after 'input'");
  return std::move(r.g);
}

Graph load_network(std::string_view name, int64_t batch, DType dt) {
  const std::string path = find_data("networks", name);
  Graph g = parse_network(read_file(path), path, batch, dt);
  g.name = fs::path(path).stem().string();
  return g;
}

}  // namespace lb
