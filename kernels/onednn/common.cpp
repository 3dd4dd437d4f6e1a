#include "kernels/onednn/common.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "kernels/common.h"
#include "kernels/host_memory.h"
#include "kernels/ops/traits.h"

namespace lb::onednn {

void fail(const char* call, const char* file, int line, const std::string& why) {
  throw Error(std::string(file) + ":" + std::to_string(line) + ": " + call + ": " + why);
}

const dnnl::engine& engine() {
  static const dnnl::engine e = [] {
    // Each case builds its primitives afresh. With oneDNN's primitive cache, a primitive
    // (and its JIT code) made for one case is reused by the next identical one, so host
    // memory and prepare() cost would depend on the order cases run in.
    LB_DNNL(dnnl::set_primitive_cache_capacity(0));
    return LB_DNNL(dnnl::engine(dnnl::engine::kind::cpu, 0));
  }();
  return e;
}

void set_threads(int n) {
  omp_set_num_threads(std::max(n, 1));
}

dt dtype_of(DType d, Arg a) {
  switch (storage_of(d, a)) {
    case Storage::f32:
      return dt::f32;
    case Storage::f16:
      return dt::f16;
    case Storage::bf16:
      return dt::bf16;
    case Storage::u8:
      return dt::u8;
    case Storage::s8:
      return dt::s8;
    case Storage::e4m3:
      return dt::undef;
  }
  return dt::undef;
}

std::string dtype_reason(const Problem& p) {
  std::string why = require_dtypes(p, {DType::f32, DType::f16, DType::bf16, DType::i8});
  if (p.dt == DType::tf32) why += ": oneDNN 2.6 on CPU has no tf32 arithmetic";
  if (p.dt == DType::f8) why += ": oneDNN 2.6 has no fp8 data type";
  return why;
}

std::string backward_reason(const Problem& p) {
  if (!runs_backward(p.pass) || p.relu != Relu::fused) return {};
  return "relu=fused in dir=" + std::string(name(p.pass)) +
         ": oneDNN 2.6's backward primitives apply no ReLU mask (relu=inplace or separate: an eltwise "
         "backward)";
}

std::string size_reason(const Problem& p) {
  const LargestArg largest = largest_arg(p);
  if (largest.elements <= 2147483647.0L) return {};
  return std::string(name(largest.arg)) + " has " + power_of_two(largest.elements) +
         " elements; oneDNN 2.6's CPU kernels count their work in 32-bit ints (at most 2^31 - 1)";
}

dnnl::primitive_attr attributes(Relu relu, float output_scale) {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (output_scale != 1.0f) a.set_output_scales(0, {output_scale});
  if (fused_relu(relu)) {  // ReLU6 as a clip to [0, 6]
    dnnl::post_ops po;
    if (relu == Relu::relu6)
      po.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, 0.0f, 6.0f);
    else
      po.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    a.set_post_ops(po);
  }
  return a;
}

std::string layout(const dnnl::memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.format_kind == dnnl_format_kind_rnn_packed) return "packed";
  if (d.format_kind != dnnl_blocked) return dnnl_fmt_kind2str(d.format_kind);
  const dnnl_blocking_desc_t& b = d.format_desc.blocking;
  // Outer dimensions from the largest stride to the smallest; a blocked one is upper case.
  std::vector<int> order(d.ndims);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return b.strides[x] > b.strides[y]; });
  std::string s;
  for (int i : order) {
    bool blocked = false;
    for (int k = 0; k < b.inner_nblks; ++k)
      blocked |= b.inner_idxs[k] == i;
    s += char((blocked ? 'A' : 'a') + i);
  }
  for (int k = 0; k < b.inner_nblks; ++k)
    s += std::to_string(b.inner_blks[k]) + char('a' + b.inner_idxs[k]);
  return s;
}

Plan::Plan() : stream_(LB_DNNL(dnnl::stream(engine()))) {}

dnnl::memory Plan::bind(Arg a, const dnnl::memory::desc& md, size_t byte_offset) {
  dnnl::memory m = LB_DNNL(dnnl::memory(md, engine(), DNNL_MEMORY_NONE));
  bindings_.push_back({a, m, byte_offset});
  return m;
}

dnnl::memory Plan::owned(const dnnl::memory::desc& md, bool saved) {
  // In a tensor's buffer rather than oneDNN's malloc: populated at once and, from 2 MiB,
  // on huge pages (kernels/host_memory.h). oneDNN's 4 KiB pages were first touched in the
  // first run, a fault each: in a sweep of AlexNet's and MobileNet's batch-32 layers on the
  // 2-core Zen 5 VM, first runs took 10.7 s of system time (9.3 s conv2d.onednn.default's
  // activation reorders) and preparation 5.5 s; now 2.5 s and 13.1 s. The memory is the
  // same, taken at prepare(); it is new to the VM either way (kernels/host_memory.h).
  buffers_.emplace_back(Storage::u8, std::vector<int64_t>{int64_t(md.get_size())});
  dnnl::memory m = LB_DNNL(dnnl::memory(md, engine(), buffers_.back().data()));
  owned_.push_back(m);
  owned_bytes_ += md.get_size();
  if (saved) saved_bytes_ += md.get_size();
  return m;
}

dnnl::memory Plan::temporary(const dnnl::memory::desc& md) {
  void* p = take_temporary(md.get_size());
  if (!p) return owned(md);
  dnnl::memory m = LB_DNNL(dnnl::memory(md, engine(), p));
  owned_.push_back(m);
  return m;
}

dnnl::memory Plan::reordered_now(const TensorSet& ts, Arg a, const dnnl::memory::desc& user,
                                 size_t byte_offset, const dnnl::memory::desc& want) {
  if (user == want) return bind(a, user, byte_offset);
  // oneDNN reads the source of a reorder only; the const_cast does not license a write.
  void* p = static_cast<char*>(const_cast<void*>(ts.at(a).data())) + byte_offset;
  dnnl::memory src = LB_DNNL(dnnl::memory(user, engine(), p));
  dnnl::memory dst = owned(want);
  dnnl::reorder r = LB_DNNL(dnnl::reorder(src, dst));
  LB_DNNL(r.execute(stream_, src, dst));
  LB_DNNL(stream_.wait());
  return dst;
}

dnnl::memory Plan::bias(const TensorSet& ts, const dnnl::memory::desc& md, float output_scale) {
  if (output_scale == 1.0f) return bind(Arg::bias, md);
  const Tensor& b = ts.at(Arg::bias);
  dnnl::memory m = owned(md);
  float* to = static_cast<float*>(m.get_data_handle());
  for (int64_t i = 0; i < b.elements(); ++i)
    to[i] = b.as<float>()[i] / output_scale;
  return m;
}

void Plan::add(const dnnl::primitive_desc_base& pd, const dnnl::primitive& prim,
               std::vector<std::pair<int, dnnl::memory>> args, const std::string& what, Stage stage) {
  Step s{stage, prim, LB_DNNL(pd.scratchpad_desc()), {}, {}};
  for (auto& [id, m] : args) {
    s.args.push_back({id, m.get()});
    s.keep.push_back(std::move(m));
  }
  steps_.push_back(std::move(s));
  if (!details_.empty()) details_ += "; ";
  details_ += what + " " + LB_DNNL(pd.impl_info_str());
}

void Plan::add_reorder(const dnnl::memory& src, const dnnl::memory& dst, const std::string& what) {
  const auto pd = LB_DNNL(dnnl::reorder::primitive_desc(engine(), src.get_desc(), engine(), dst.get_desc(),
                                                        attributes(Relu::none)));
  add(pd, LB_DNNL(dnnl::reorder(pd)), {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}},
      what + " " + layout(src.get_desc()) + "->" + layout(dst.get_desc()));
}

void Plan::add_finish_reorder(const dnnl::memory& src, const dnnl::memory& dst, const std::string& what) {
  add_reorder(src, dst, "untimed " + what);
  steps_.back().stage = Stage::finish;
}

void Plan::add_relu_pass(Relu relu, const dnnl::memory& dst) {
  if (relu != Relu::inplace && relu != Relu::separate) return;
  add_relu(dst, relu == Relu::inplace ? dst : bind(Arg::relu_dst, dst.get_desc()));
}

void Plan::add_relu(const dnnl::memory& src, const dnnl::memory& dst) {
  const dnnl::memory::desc md = src.get_desc();
  const auto d = LB_DNNL(dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference,
                                                     dnnl::algorithm::eltwise_relu, md, 0.0f));
  const auto pd = LB_DNNL(dnnl::eltwise_forward::primitive_desc(d, attributes(Relu::none), engine()));
  add(pd, LB_DNNL(dnnl::eltwise_forward(pd)), {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}},
      src.get() == dst.get() ? "relu inplace" : "relu separate");
}

dnnl::memory Plan::add_relu_backward(Relu relu, const dnnl::memory::desc& md) {
  const dnnl::memory dz = bind(Arg::diff_dst, md);
  if (relu != Relu::inplace && relu != Relu::separate) return dz;
  const bool separate = relu == Relu::separate;
  const dnnl::memory y = bind(separate ? Arg::relu_dst : Arg::dst, md);
  const dnnl::memory dy = separate ? bind(Arg::diff_relu_dst, md) : dz;
  const auto alg = dnnl::algorithm::eltwise_relu_use_dst_for_bwd;
  const auto hint = LB_DNNL(dnnl::eltwise_forward::primitive_desc(
      dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, alg, md, 0.0f), engine()));
  const auto pd = LB_DNNL(dnnl::eltwise_backward::primitive_desc(
      dnnl::eltwise_backward::desc(alg, md, md, 0.0f), attributes(Relu::none), engine(), hint));
  add(pd, LB_DNNL(dnnl::eltwise_backward(pd)),
      {{DNNL_ARG_DST, y}, {DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_DIFF_SRC, dz}},
      separate ? "relu backward separate" : "relu backward inplace");
  return dz;
}

dnnl::memory Plan::input(Arg a, const dnnl::memory::desc& user, const dnnl::memory::desc& want) {
  const dnnl::memory bound = bind(a, user);
  if (user == want) return bound;
  const dnnl::memory m = temporary(want);
  add_reorder(bound, m, std::string(name(a)) + " reorder");
  return m;
}

dnnl::memory Plan::input_of(const dnnl::memory& given, const dnnl::memory::desc& want,
                            const std::string& what) {
  if (given.get_desc() == want) return given;
  const dnnl::memory m = temporary(want);
  add_reorder(given, m, what + " reorder");
  return m;
}

Plan::Output Plan::output(Arg a, const dnnl::memory::desc& user, const dnnl::memory::desc& have,
                          size_t byte_offset) {
  const dnnl::memory bound = bind(a, user, byte_offset);
  return {user == have ? bound : temporary(have), bound};
}

void Plan::zero_in_rearm(const dnnl::memory& m) {
  zeroed_.push_back(m);
}

void Plan::then(const Output& out, const std::string& what) {
  if (out.written.get() != out.user.get()) add_reorder(out.written, out.user, what + " reorder");
}

void Plan::finalize() {
  size_t bytes = 0;
  for (const Step& s : steps_)
    bytes = std::max(bytes, s.scratchpad.get_size());
  if (bytes == 0) return;
  scratchpad_ = temporary(dnnl::memory::desc({dnnl::memory::dim(bytes)}, dt::u8, tag::x));
  for (Step& s : steps_) {
    if (s.scratchpad.get_size() == 0) continue;
    dnnl::memory m = LB_DNNL(dnnl::memory(s.scratchpad, engine(), scratchpad_.get_data_handle()));
    s.args.push_back({DNNL_ARG_SCRATCHPAD, m.get()});
    s.keep.push_back(std::move(m));
  }
}

void Plan::run(TensorSet& ts) {
  execute(ts, Stage::run);
}

void Plan::finish(TensorSet& ts) {
  execute(ts, Stage::finish);
}

void Plan::prepared(TensorSet& ts) {
  execute(ts, Stage::once);
  rearm(ts);
}

void Plan::rearm(TensorSet& ts) {
  if (zeroed_.empty()) return;
  point_at(ts);
  for (const dnnl::memory& m : zeroed_)
    std::memset(m.get_data_handle(), 0, m.get_desc().get_size());
}

void Plan::point_at(TensorSet& ts) {
  for (const Binding& b : bindings_)
    LB_DNNL(dnnl_memory_set_data_handle(b.mem.get(), static_cast<char*>(ts.at(b.arg).data()) + b.offset));
}

void Plan::execute(TensorSet& ts, Stage stage) {
  point_at(ts);
  for (const Step& s : steps_)
    if (s.stage == stage)
      LB_DNNL(dnnl_primitive_execute(s.prim.get(), stream_.get(), int(s.args.size()), s.args.data()));
  // A CPU stream executes synchronously; the wait is free and makes that explicit.
  LB_DNNL(dnnl_stream_wait(stream_.get()));
}

size_t Plan::held_bytes() const {
  return owned_bytes_ + extra_bytes_;
}

}  // namespace lb::onednn
