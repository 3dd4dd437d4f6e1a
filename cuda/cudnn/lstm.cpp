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
#include <memory>
#include <vector>

#include "cuda/cudnn/common.h"
#include "cuda/cudnn/kernels.h"
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

    size_t work = 0, reserve = 0;
    LB_CUDNN_CHECK(cudnnGetRNNTempSpaceSizes(h, rnn_, CUDNN_FWD_MODE_INFERENCE, x_, &work, &reserve));
    workspace_ = DeviceBuffer(work);
    extra_bytes_ = weights_.bytes() + dropout_states_.bytes() + seq_lengths_.bytes() + cx_.bytes();
    details_ = "cuDNN RNN (standard algo), weight space " + std::to_string(weight_bytes_) + " B, workspace " +
               std::to_string(work) + " B, " + cudnn_math_name(math);
  }

  void run(TensorSet&) override {
    const void* cx = cx_.get() ? cx_.get() : dev(Arg::src_iter_c);
    LB_CUDNN_CHECK(cudnnRNNForward(cudnn_handle(), rnn_, CUDNN_FWD_MODE_INFERENCE, seq_lengths_.as<int32_t>(),
                                   x_, dev(Arg::src), y_, dev(Arg::dst), state_, dev(Arg::src_iter), nullptr,
                                   state_, cx, nullptr, weight_bytes_, weights_.get(), workspace_.bytes(),
                                   workspace_.get(), 0, nullptr));
    relu_pass();
  }

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
    for (DeviceBuffer* b : {&weights_, &dropout_states_, &seq_lengths_, &cx_})
      *b = DeviceBuffer();
    GpuKernel::release();
  }

  ~CudnnLstm() override { release(); }
  std::string details() const override { return details_; }

 private:
  // Copies our weights and biases (already on the device) into cuDNN's weight space.
  void fill_weights(const Problem& p, const TensorSet& ts) {
    const Lstm& s = p.lstm();
    const int64_t H = s.hc, G = 4 * s.hc;
    const Storage data = storage_of(p.dt, Arg::wei);
    const size_t elem = size_of(data);
    // Our bias is f32; cuDNN's is of the data type.
    const DeviceBuffer bias = converted_copy(ts.at(Arg::bias), data);
    cudnnTensorDescriptor_t m = nullptr, b = nullptr;
    LB_CUDNN_CHECK(cudnnCreateTensorDescriptor(&m));
    LB_CUDNN_CHECK(cudnnCreateTensorDescriptor(&b));
    int64_t wx_offset = 0;  // elements into our stacked input weights
    for (int64_t l = 0; l < s.l; ++l) {
      const int64_t width = l == 0 ? s.ic : s.hc;
      for (int id = 0; id < 8; ++id) {
        void* m_addr = nullptr;
        void* b_addr = nullptr;
        LB_CUDNN_CHECK(cudnnGetRNNWeightParams(cudnn_handle(), rnn_, int(l), weight_bytes_, weights_.get(),
                                               id, m, &m_addr, b, &b_addr));
        const int gate = id % 4;
        const bool input = id < 4;
        const int64_t count = H * (input ? width : H);
        check_elements(m, count, l, id);
        const char* src =
            input ? static_cast<const char*>(dev(Arg::wei)) + (wx_offset + gate * H * width) * elem
                  : static_cast<const char*>(dev(Arg::wei_iter)) + (l * G * H + gate * H * H) * elem;
        LB_CUDA_CHECK(cudaMemcpy(m_addr, src, count * elem, cudaMemcpyDeviceToDevice));
        if (b_addr) {  // only the input linear layers carry a bias in SINGLE_INP_BIAS mode
          if (input) {
            check_elements(b, H, l, id);
            LB_CUDA_CHECK(cudaMemcpy(b_addr, bias.as<char>() + (l * G + gate * H) * elem, H * elem,
                                     cudaMemcpyDeviceToDevice));
          } else {
            LB_CUDA_CHECK(cudaMemset(b_addr, 0, H * elem));
          }
        }
      }
      wx_offset += G * width;
    }
    cudnnDestroyTensorDescriptor(m);
    cudnnDestroyTensorDescriptor(b);
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

  cudnnRNNDescriptor_t rnn_ = nullptr;
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
