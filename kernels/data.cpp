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

int64_t product(const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    p *= d;
  return p;
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

std::string shape_string(const std::vector<int64_t>& dims) {
  std::string s;
  for (int64_t d : dims) {
    if (!s.empty()) s += 'x';
    s += std::to_string(d);
  }
  return s;
}

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

// A network file being read: the network so far and what later lines are checked against.
struct NetworkReader {
  Network net;
  double act = 0;       // bytes per activation value
  bool tokens = false;  // the input is a sequence of token ids (int32), not activations
  std::map<std::string, std::vector<int64_t>> shapes;  // layer name -> output shape
  int64_t sum_params = 0, sum_macs = 0;
};

// totals() sums parameters and MACs in int64: the sums are bounded as parse_problem
// bounds one problem's MACs, and a network that exceeds them is rejected.
constexpr int64_t kMaxSum = int64_t(1) << 62;

// Throws unless the previous layer's per-sample shape `in` has one of `ranks`.
void need(const std::string& kind, const std::vector<int64_t>& in, const std::vector<size_t>& ranks,
          std::string_view what) {
  if (std::find(ranks.begin(), ranks.end(), in.size()) == ranks.end())
    throw Error(kind + ": needs " + std::string(what) + " input, the previous layer gives " +
                shape_string(in));
}

void read_input(const std::string& first, std::istringstream& in, NetworkReader& r) {
  if (first != "input") throw Error("'" + first + "': the first line must be 'input ...'");
  Keys kv = split_keys(in, "input");
  const bool has_t = kv.count("t"), has_c = kv.count("c"), has_h = kv.count("h");
  std::vector<int64_t>& s = r.net.in_shape;
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
  r.net.in_bytes = double(r.net.batch) * product(s) * (r.tokens ? 4.0 : r.act);
}

// An op layer: its problem from the keys the file gives and those the previous layer
// determines, as the op's traits derive them.
void op_layer(Layer& layer, const OpTraits& op, const Keys& kv, const std::vector<int64_t>& in,
              const NetworkReader& r) {
  need(layer.kind, in, op.layer.ranks, op.layer.input);
  layer.problem = op_problem(layer.kind, kv, op.layer.keys(in, r.net.batch), r.net.dt, layer.name);
  layer.out_shape = op.layer.out_shape(*layer.problem, in);
}

// The other layer kinds: each sets the layer's per-sample output shape, and the
// parameters and buffers that differ from an op layer's.
using LayerReader = void (*)(Layer& layer, Keys& kv, const std::vector<int64_t>& in, const NetworkReader& r);

void embedding_layer(Layer& layer, Keys& kv, const std::vector<int64_t>& in, const NetworkReader& r) {
  const int64_t vocab = take_int(kv, layer.kind, "vocab", {}, 1),
                dim = take_int(kv, layer.kind, "dim", {}, 1);
  no_more_keys(kv, layer.kind, "vocab= dim=");
  layer.params = vocab * dim;
  layer.param_bytes = double(layer.params) * size_of(storage_of(r.net.dt, Arg::wei));
  layer.out_shape = {in[0], dim};
}

void pool_layer(Layer& layer, Keys& kv, const std::vector<int64_t>& in, const NetworkReader&) {
  const std::string& kind = layer.kind;
  need(kind, in, {3}, "an image (c×h×w)");
  const int64_t k = take_int(kv, kind, "k", {}, 1), s = take_int(kv, kind, "s", k, 1),
                p = take_int(kv, kind, "p", 0, 0);
  no_more_keys(kv, kind, "k= s= p=");
  if (k > in[1] + 2 * p || k > in[2] + 2 * p)
    throw Error(kind + ": k=" + std::to_string(k) + ": larger than the padded input " + shape_string(in));
  layer.out_shape = {in[0], (in[1] + 2 * p - k) / s + 1, (in[2] + 2 * p - k) / s + 1};
}

void relu_layer(Layer& layer, Keys& kv, const std::vector<int64_t>& in, const NetworkReader&) {
  const std::string mode = kv.count("mode") ? kv.at("mode") : "inplace";
  kv.erase("mode");
  no_more_keys(kv, layer.kind, "mode=inplace|separate");
  if (mode != "inplace" && mode != "separate")
    throw Error("relu: mode=" + mode + ": expected inplace or separate");
  layer.new_buffer = mode == "separate";
  layer.out_shape = in;
}

// flatten is a view of its input; softmax writes a new buffer of the same shape.
void shape_only_layer(Layer& layer, Keys& kv, const std::vector<int64_t>& in, const NetworkReader&) {
  no_more_keys(kv, layer.kind, "nothing");
  layer.new_buffer = layer.kind == "softmax";
  layer.out_shape = layer.kind == "flatten" ? std::vector<int64_t>{product(in)} : in;
}

void add_layer(Layer& layer, Keys& kv, const std::vector<int64_t>& in, const NetworkReader& r) {
  const std::string from = kv.count("from") ? kv.at("from") : "";
  kv.erase("from");
  no_more_keys(kv, layer.kind, "from=<layer>");
  auto it = r.shapes.find(from);
  if (it == r.shapes.end()) throw Error("add: from=" + from + ": no earlier layer of that name");
  if (it->second != in)
    throw Error("add: from=" + from + ": shape " + shape_string(it->second) + " differs from " +
                shape_string(in));
  layer.in_bytes *= 2;  // both operands
  layer.out_shape = in;
}

// In the order the unknown-kind error lists them, after the ops.
constexpr std::pair<std::string_view, LayerReader> kLayerKinds[] = {{"embedding", embedding_layer},
                                                                    {"relu", relu_layer},
                                                                    {"maxpool", pool_layer},
                                                                    {"avgpool", pool_layer},
                                                                    {"flatten", shape_only_layer},
                                                                    {"softmax", shape_only_layer},
                                                                    {"add", add_layer}};

void shape_layer(Layer& layer, Keys& kv, const std::vector<int64_t>& in, const NetworkReader& r) {
  for (Op op : kAllOps)
    if (layer.kind == name(op)) return op_layer(layer, traits(op), kv, in, r);
  for (const auto& [kind, read] : kLayerKinds)
    if (layer.kind == kind) return read(layer, kv, in, r);
  std::string expected;  // "dense conv2d lstm embedding ... add"
  for (Op op : kAllOps)
    expected += std::string(name(op)) + " ";
  for (const auto& kind : kLayerKinds)
    expected += std::string(kind.first) + " ";
  expected.pop_back();
  throw Error(layer.name + ": '" + layer.kind + "': unknown layer kind; expected " + expected);
}

// Adds a shaped layer to the network: its model, checks on its size and on the sums.
void add_to_network(Layer layer, NetworkReader& r) {
  if (layer.problem) {
    const Model m = model(*layer.problem);
    layer.params = m.params;
    layer.param_bytes = m.param_bytes;
    layer.macs = m.macs;
    layer.type = layer_type(*layer.problem);
  } else {
    layer.type = layer.kind;
  }
  check_values(layer.kind, layer.out_shape);
  if (layer.params > kMaxSum - r.sum_params || layer.macs > kMaxSum - r.sum_macs)
    throw Error(layer.name + ": the network's parameters or MACs add up to more than 2^62");
  r.sum_params += layer.params;
  r.sum_macs += layer.macs;
  layer.out_bytes = layer.new_buffer ? double(r.net.batch) * product(layer.out_shape) * r.act : 0.0;
  r.shapes[layer.name] = layer.out_shape;
  r.net.layers.push_back(std::move(layer));
}

void read_layer(const std::string& first, std::istringstream& in, NetworkReader& r) {
  if (first == "input") throw Error("input: given twice");
  Layer layer;
  layer.name = first;
  if (!(in >> layer.kind)) throw Error(first + ": expected '<name> <kind> key=value ...'");
  if (r.shapes.count(layer.name)) throw Error(layer.name + ": layer name used twice");
  const bool first_layer = r.net.layers.empty();
  const std::vector<int64_t> in_shape = first_layer ? r.net.in_shape : r.net.layers.back().out_shape;
  layer.in_bytes = first_layer ? r.net.in_bytes : double(r.net.batch) * product(in_shape) * r.act;
  const std::string& kind = layer.kind;
  Keys kv = split_keys(in, kind);
  if ((kind == "embedding") != (r.tokens && first_layer))
    throw Error(kind + (kind == "embedding" ? ": must be the first layer after 'input t='"
                                            : ": token ids need an embedding layer first"));
  shape_layer(layer, kv, in_shape, r);
  add_to_network(std::move(layer), r);
}

}  // namespace

Network parse_network(std::string_view text, std::string_view file, int64_t batch, DType dt) {
  // The batch becomes a problem line's mb (or T times it), which is at most 2^31 - 1;
  // checked here before T·batch is computed, which a larger batch overflowed.
  if (batch < 1 || batch > 2147483647)
    throw Error("--batch " + std::to_string(batch) + ": must be between 1 and 2147483647");
  NetworkReader r;
  r.net.batch = batch;
  r.net.dt = dt;
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
  if (r.net.layers.empty()) throw Error(std::string(file) + ": no layers after 'input'");
  return std::move(r.net);
}

Network load_network(std::string_view name, int64_t batch, DType dt) {
  const std::string path = find_data("networks", name);
  Network net = parse_network(read_file(path), path, batch, dt);
  net.name = fs::path(path).stem().string();
  return net;
}

NetworkTotals totals(const Network& n, Optimizer opt) {
  NetworkTotals t;
  t.activation_bytes = n.in_bytes;
  double widest = 0;
  for (const Layer& l : n.layers) {
    t.params += l.params;
    t.param_bytes += l.param_bytes;
    t.macs += l.macs;
    t.activation_bytes += l.out_bytes;
    widest = std::max(widest, l.in_bytes + l.out_bytes);
    if (l.problem) t.saved_bytes += model(*l.problem).saved_bytes;
  }
  t.inference_bytes = t.param_bytes + widest;
  t.training_bytes =
      training_memory(t.params, t.param_bytes, t.activation_bytes + t.saved_bytes, n.dt, opt).total();
  return t;
}

std::vector<Problem> problems(const Network& n) {
  std::vector<Problem> out;
  for (const Layer& l : n.layers)
    if (l.problem) out.push_back(*l.problem);
  return out;
}

}  // namespace lb
