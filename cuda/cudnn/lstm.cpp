// lstm.cudnn.default — stacked unidirectional LSTMs on cuDNN 9's RNN API
// (cudnnRNNForward, inference mode), the vendor yardstick.
//
// cuDNN keeps all weights in one opaque weight space; prepare() copies ours into it,
// matrix by matrix, on the device. For layer l, cuDNN's linear layers 0..3 are the input
// weights of gates i, f, g, o (H×I_l, row-major, as our wei stores them gate after gate)
// and 4..7 the recurrent weights (H×H); CUDNN_RNN_SINGLE_INP_BIAS gives one bias per gate,
// exactly ours. The sequence is SEQ_MAJOR_PACKED (T×N×I), h0/c0 are L×N×H: our layouts.
// cuDNN keeps the cell state and the bias in the data type, so for f16/bf16 c0 and b are
// converted once in prepare(), exactly: the problem's values are on that grid (value_grid,
// kernels/tensor.h). relu=inplace/separate run our element-wise kernel on the output; cuDNN has
// no fused ReLU on an RNN's output, so relu=fused is not offered.
//
// dtypes and math types (cudnn_math()): f32 as true fp32 (CUDNN_FMA_MATH), tf32 through
// CUDNN_DEFAULT_MATH, f16 and bf16 (CUDNN_TENSOR_OP_MATH) with f32 math precision — bf16
// only where this cuDNN's RNN descriptor accepts bf16 data with f32 math (asked once, on
// the host, in supports(): cuDNN 9.19 does, and refuses bf16 math precision).
//
// Training passes (dir=fwd_train, bwd, train; f32 and tf32): the forward in
// CUDNN_FWD_MODE_TRAINING fills a reserve space (saved_bytes()); the backward is
// cudnnRNNBackwardData_v8 (dx, dh0, dc0; it writes the reserve space too), then
// cudnnRNNBackwardWeights_v8 with CUDNN_WGRAD_MODE_SET into a gradient weight space, whose
// matrices and biases are copied into our dW, dW_h and db (timed, as oneDNN's reorders).
// bwd's training forward runs at the end of prepare() and again in rearm() (untimed),
// since the backward uses its reserve space up; train's y stays in a buffer of its own
// under relu=inplace, the backward reading the forward's y. f16 and bf16 are declined in
// those passes: cuDNN keeps c and the bias, and so their gradients, in the data type, and
// ours are f32. Never run on a GPU yet: written and compiled without one (2026-12-07).
#include <memory>
#include <vector>

#include "cuda/cudnn/common.h"
#include "cuda/cudnn/kernels.h"
#include "cuda/elementwise.h"
#include "cuda/gpu_kernel.h"
#include "cuda/runtime.h"

namespace lb::cuda {
namespace {

void set_rnn(cudnnRNNDescriptor_t rnn, cudnnDataType_t type, cudnnMathType_t math, int I, int H, int L,
             cudnnDropoutDescriptor_t dropout, cudnnStatus_t* status = nullptr) {
  const cudnnStatus_t s = cudnnSetRNNDescriptor_v8(
      rnn, CUDNN_RNN_ALGO_STANDARD, CUDNN_LSTM, CUDNN_RNN_SINGLE_INP_BIAS, CUDNN_UNIDIRECTIONAL,
      CUDNN_LINEAR_INPUT, type, CUDNN_DATA_FLOAT, math, I, H, H, L, dropout, CUDNN_RNN_PADDED_IO_DISABLED);
  if (status)
    *status = s;
  else
    LB_CUDNN_CHECK(s);
}

// Empty when this cuDNN's RNN descriptor takes bf16 data with f32 math, else why not.
// The descriptor is host state: no GPU is needed to ask.
const std::string& bf16_rnn_reason() {
  static const std::string why = [] {
    cudnnRNNDescriptor_t rnn = nullptr;
    cudnnDropoutDescriptor_t dropout = nullptr;
    cudnnStatus_t s = cudnnCreateRNNDescriptor(&rnn);
    if (s == CUDNN_STATUS_SUCCESS) s = cudnnCreateDropoutDescriptor(&dropout);
    if (s == CUDNN_STATUS_SUCCESS)
      set_rnn(rnn, CUDNN_DATA_BFLOAT16, CUDNN_TENSOR_OP_MATH, 16, 16, 2, dropout, &s);
    if (rnn) cudnnDestroyRNNDescriptor(rnn);
    if (dropout) cudnnDestroyDropoutDescriptor(dropout);
    if (s == CUDNN_STATUS_SUCCESS) return std::string();
    return "cuDNN " + dotted_version(cudnnGetVersion()) +
           " has no bf16 LSTM (cudnnSetRNNDescriptor_v8: " + cudnnGetErrorString(s) + ")";
  }();
  return why;
}

class CudnnLstm final : public GpuKernel {
 public:
  std::string supports(const Problem& p) const override {
    if (std::string why = cudnn_dtype_reason(p); !why.empty()) return why;
    if (p.relu == Relu::fused) return "cuDNN's RNN API has no fused ReLU on its output";
    if (p.dt == DType::bf16 && !bf16_rnn_reason().empty()) return bf16_rnn_reason();
    if (p.pass != Pass::fwd && p.dt != DType::f32 && p.dt != DType::tf32)
      return "dt=" + std::string(name(p.dt)) + " in dir=" + std::string(name(p.pass)) +
             ": cuDNN keeps c, the bias and their gradients in the data type, ours are f32";
    return gpu_unusable();
  }

  void prepare(const Problem& p, TensorSet& ts, const Context&) override {
    release();
    upload(p, ts);
    const Lstm& s = p.lstm();
    const Storage data = storage_of(p.dt, Arg::dst);
    const cudnnDataType_t type = cudnn_type(data);
    const int T = int(s.t), N = int(s.mb), I = int(s.ic), H = int(s.hc), L = int(s.l);
    cudnnHandle_t h = cudnn_handle();

    size_t state_bytes = 0;
    LB_CUDNN_CHECK(cudnnCreateDropoutDescriptor(&dropout_));
    LB_CUDNN_CHECK(cudnnDropoutGetStatesSize(h, &state_bytes));
    dropout_states_ = DeviceBuffer(state_bytes);
    LB_CUDNN_CHECK(cudnnSetDropoutDescriptor(dropout_, h, 0.0f, dropout_states_.get(), state_bytes, 0));

    const cudnnMathType_t math = cudnn_math(p.dt);
    LB_CUDNN_CHECK(cudnnCreateRNNDescriptor(&rnn_));
    set_rnn(rnn_, type, math, I, H, L, dropout_);

    const std::vector<int> lengths(N, T);
    LB_CUDNN_CHECK(cudnnCreateRNNDataDescriptor(&x_));
    LB_CUDNN_CHECK(cudnnCreateRNNDataDescriptor(&y_));
    LB_CUDNN_CHECK(cudnnSetRNNDataDescriptor(x_, type, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, T, N, I,
                                             lengths.data(), nullptr));
    LB_CUDNN_CHECK(cudnnSetRNNDataDescriptor(y_, type, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, T, N, H,
                                             lengths.data(), nullptr));
    const int dims[3] = {L, N, H}, strides[3] = {N * H, H, 1};
    LB_CUDNN_CHECK(cudnnCreateTensorDescriptor(&state_));
    LB_CUDNN_CHECK(cudnnSetTensorNdDescriptor(state_, type, 3, dims, strides));
    seq_lengths_ = DeviceBuffer(sizeof(int32_t) * N);
    LB_CUDA_CHECK(
        cudaMemcpy(seq_lengths_.get(), lengths.data(), sizeof(int32_t) * N, cudaMemcpyHostToDevice));

    LB_CUDNN_CHECK(cudnnGetRNNWeightSpaceSize(h, rnn_, &weight_bytes_));
    weights_ = DeviceBuffer(weight_bytes_);
    fill_weights(p, ts);
    if (data != Storage::f32) cx_ = converted_copy(ts.at(Arg::src_iter_c), data);

    mode_ = p.pass == Pass::fwd ? CUDNN_FWD_MODE_INFERENCE : CUDNN_FWD_MODE_TRAINING;
    size_t work = 0, reserve = 0;
    LB_CUDNN_CHECK(cudnnGetRNNTempSpaceSizes(h, rnn_, mode_, x_, &work, &reserve));
    workspace_ = DeviceBuffer(work);
    reserve_ = DeviceBuffer(reserve);
    // The forward's y where dst does not hold it: bwd (dst, if given, is an input) and
    // train under relu=inplace (dst becomes max(y, 0)).
    if (p.pass == Pass::bwd || (p.pass == Pass::train && p.relu == Relu::inplace))
      y_own_ = DeviceBuffer(size_t(T) * N * H * size_of(data));
    if (runs_backward(p.pass)) {
      dweights_ = DeviceBuffer(weight_bytes_);
      plan_gradient_copies(p);
    }
    extra_bytes_ = weights_.bytes() + dropout_states_.bytes() + seq_lengths_.bytes() + cx_.bytes() +
                   reserve_.bytes() + y_own_.bytes() + dweights_.bytes();
    details_ = "cuDNN RNN (standard algo, " +
               std::string(mode_ == CUDNN_FWD_MODE_INFERENCE ? "inference" : "training") +
               "), weight space " + std::to_string(weight_bytes_) + " B, workspace " + std::to_string(work) +
               " B, reserve space " + std::to_string(reserve) + " B, " + cudnn_math_name(math);
    if (p.pass == Pass::bwd) forward();  // what the backward reads, untimed
  }

  void run(TensorSet&) override {
    if (runs_forward(problem_.pass)) {
      forward();
      if (y_own_.get())
        relu(y_own_.get(), dev(Arg::dst),
             int64_t(y_own_.bytes() / size_of(storage_of(problem_.dt, Arg::dst))),
             storage_of(problem_.dt, Arg::dst));
      else
        relu_pass();
    }
    if (runs_backward(problem_.pass)) backward();
  }

  // bwd: the backward used the forward's reserve space up; its forward again, untimed.
  // Waited for, so that neither the device's nor the host's clock of the timed run sees it.
  void rearm(TensorSet&) override {
    if (problem_.pass != Pass::bwd) return;
    forward();
    LB_CUDA_CHECK(cudaDeviceSynchronize());
  }

  size_t saved_bytes() const override { return reserve_.bytes(); }

  void release() override {
    if (x_) cudnnDestroyRNNDataDescriptor(x_);
    if (y_) cudnnDestroyRNNDataDescriptor(y_);
    if (state_) cudnnDestroyTensorDescriptor(state_);
    if (rnn_) cudnnDestroyRNNDescriptor(rnn_);
    if (dropout_) cudnnDestroyDropoutDescriptor(dropout_);
    x_ = y_ = nullptr;
    state_ = nullptr;
    rnn_ = nullptr;
    dropout_ = nullptr;
    for (DeviceBuffer* b : {&weights_, &dropout_states_, &seq_lengths_, &cx_, &reserve_, &y_own_, &dweights_})
      *b = DeviceBuffer();
    copies_.clear();
    GpuKernel::release();
  }

  ~CudnnLstm() override { release(); }
  std::string details() const override { return details_; }

 private:
  const void* cx() const { return cx_.get() ? cx_.get() : dev(Arg::src_iter_c); }
  void* y() const { return y_own_.get() ? y_own_.get() : dev(Arg::dst); }

  void forward() {
    LB_CUDNN_CHECK(cudnnRNNForward(cudnn_handle(), rnn_, mode_, seq_lengths_.as<int32_t>(), x_, dev(Arg::src),
                                   y_, y(), state_, dev(Arg::src_iter), nullptr, state_, cx(), nullptr,
                                   weight_bytes_, weights_.get(), workspace_.bytes(), workspace_.get(),
                                   reserve_.bytes(), reserve_.get()));
  }

  void backward() {
    relu_backward_pass();  // diff_dst then holds dz
    cudnnHandle_t h = cudnn_handle();
    LB_CUDNN_CHECK(cudnnRNNBackwardData_v8(
        h, rnn_, seq_lengths_.as<int32_t>(), y_, y(), dev(Arg::diff_dst), x_, dev(Arg::diff_src), state_,
        dev(Arg::src_iter), nullptr, dev(Arg::diff_src_iter), state_, cx(), nullptr,
        dev(Arg::diff_src_iter_c), weight_bytes_, weights_.get(), workspace_.bytes(), workspace_.get(),
        reserve_.bytes(), reserve_.get()));
    LB_CUDNN_CHECK(cudnnRNNBackwardWeights_v8(h, rnn_, CUDNN_WGRAD_MODE_SET, seq_lengths_.as<int32_t>(), x_,
                                              dev(Arg::src), state_, dev(Arg::src_iter), y_, y(),
                                              weight_bytes_, dweights_.get(), workspace_.bytes(),
                                              workspace_.get(), reserve_.bytes(), reserve_.get()));
    for (const Copy& c : copies_)
      LB_CUDA_CHECK(cudaMemcpyAsync(c.to, c.from, c.bytes, cudaMemcpyDeviceToDevice, 0));
  }

  // One linear layer of a weight space laid out as rnn_'s (weights_ or dweights_), and where
  // its matrix sits in ours: layer l's cuDNN linear layers 0..3 are the input weights of
  // gates i, f, g, o (H×I_l, in our stacked wei, gate after gate), 4..7 the recurrent ones
  // (H×H, in wei_iter); under SINGLE_INP_BIAS only the input ones carry a bias, gate g of
  // layer l at our bias's l·4H + g·H (cuDNN may hand the recurrent ones a bias to zero).
  struct LinearLayer {
    void* matrix;
    void* bias;
    bool input;            // W_x (our wei) rather than W_h (our wei_iter)
    int64_t at, elements;  // the matrix's first element in ours, and its elements
    int64_t bias_at;       // the bias's first element in ours (input layers)
  };

  std::vector<LinearLayer> linear_layers(const Problem& p, void* space) const {
    const Lstm& s = p.lstm();
    const int64_t H = s.hc, G = 4 * s.hc;
    cudnnTensorDescriptor_t m = nullptr, b = nullptr;
    LB_CUDNN_CHECK(cudnnCreateTensorDescriptor(&m));
    LB_CUDNN_CHECK(cudnnCreateTensorDescriptor(&b));
    std::vector<LinearLayer> out;
    int64_t wx_offset = 0;  // elements into our stacked input weights
    for (int64_t l = 0; l < s.l; ++l) {
      const int64_t width = l == 0 ? s.ic : s.hc;
      for (int id = 0; id < 8; ++id) {
        LinearLayer ll{};
        LB_CUDNN_CHECK(cudnnGetRNNWeightParams(cudnn_handle(), rnn_, int(l), weight_bytes_, space, id, m,
                                               &ll.matrix, b, &ll.bias));
        const int gate = id % 4;
        ll.input = id < 4;
        ll.elements = H * (ll.input ? width : H);
        ll.at = ll.input ? wx_offset + gate * H * width : l * G * H + gate * H * H;
        ll.bias_at = l * G + gate * H;
        check_elements(m, ll.elements, l, id);
        if (ll.bias && ll.input) check_elements(b, H, l, id);
        out.push_back(ll);
      }
      wx_offset += G * width;
    }
    cudnnDestroyTensorDescriptor(m);
    cudnnDestroyTensorDescriptor(b);
    return out;
  }

  // Where each matrix and bias of the gradient weight space goes in our dW, dW_h and db.
  void plan_gradient_copies(const Problem& p) {
    const size_t elem = size_of(storage_of(p.dt, Arg::diff_wei)), H = size_t(p.lstm().hc);
    copies_.clear();
    for (const LinearLayer& ll : linear_layers(p, dweights_.get())) {
      char* to = static_cast<char*>(dev(ll.input ? Arg::diff_wei : Arg::diff_wei_iter)) + ll.at * elem;
      copies_.push_back({ll.matrix, to, size_t(ll.elements) * elem});
      if (ll.bias && ll.input)  // our db is f32, as cuDNN's in the f32 and tf32 it trains here
        copies_.push_back({ll.bias, static_cast<char*>(dev(Arg::diff_bias)) + ll.bias_at * sizeof(float),
                           H * sizeof(float)});
    }
  }

  // Copies our weights and biases (already on the device) into cuDNN's weight space.
  void fill_weights(const Problem& p, const TensorSet& ts) {
    const Storage data = storage_of(p.dt, Arg::wei);
    const size_t elem = size_of(data), H = size_t(p.lstm().hc);
    // Our bias is f32; cuDNN's is of the data type.
    const DeviceBuffer bias = converted_copy(ts.at(Arg::bias), data);
    for (const LinearLayer& ll : linear_layers(p, weights_.get())) {
      const char* from = static_cast<const char*>(dev(ll.input ? Arg::wei : Arg::wei_iter)) + ll.at * elem;
      LB_CUDA_CHECK(cudaMemcpy(ll.matrix, from, size_t(ll.elements) * elem, cudaMemcpyDeviceToDevice));
      if (!ll.bias) continue;
      if (ll.input)
        LB_CUDA_CHECK(
            cudaMemcpy(ll.bias, bias.as<char>() + ll.bias_at * elem, H * elem, cudaMemcpyDeviceToDevice));
      else
        LB_CUDA_CHECK(cudaMemset(ll.bias, 0, H * elem));
    }
  }

  // cuDNN describes each matrix it hands out; it must hold what we are about to copy.
  static void check_elements(cudnnTensorDescriptor_t d, int64_t expected, int64_t layer, int id) {
    cudnnDataType_t type;
    int nb = 0, dims[8] = {}, strides[8] = {};
    LB_CUDNN_CHECK(cudnnGetTensorNdDescriptor(d, 8, &type, &nb, dims, strides));
    int64_t count = 1;
    for (int i = 0; i < nb; ++i)
      count *= dims[i];
    if (count != expected)
      throw Error("cudnn: layer " + std::to_string(layer) + " linear layer " + std::to_string(id) +
                  " holds " + std::to_string(count) + " values, expected " + std::to_string(expected));
  }

  struct Copy {
    const void* from;
    void* to;
    size_t bytes;
  };
  cudnnRNNDescriptor_t rnn_ = nullptr;
  cudnnForwardMode_t mode_ = CUDNN_FWD_MODE_INFERENCE;
  std::vector<Copy> copies_;  // the gradient weight space into dW, dW_h, db (backward passes)
  DeviceBuffer reserve_, y_own_, dweights_;
  cudnnDropoutDescriptor_t dropout_ = nullptr;
  cudnnRNNDataDescriptor_t x_ = nullptr, y_ = nullptr;
  cudnnTensorDescriptor_t state_ = nullptr;
  size_t weight_bytes_ = 0;
  DeviceBuffer weights_, dropout_states_, seq_lengths_, cx_;
  std::string details_;
};

}  // namespace

std::unique_ptr<Kernel> make_cudnn_lstm() {
  return std::make_unique<CudnnLstm>();
}

}  // namespace lb::cuda
