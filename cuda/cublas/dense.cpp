// dense.cublas.lt — fully connected layers on cuBLASLt, the vendor yardstick.
//
// y = x·Wᵀ + b with x M×K, W N×K, y M×N row-major (M = mb, N = oc, K = ic). cuBLASLt is
// column-major, so it computes yᵀ (N×M, ld N) = W (read as K×N, transposed) · xᵀ (K×M):
// the "TN" layout, which the fp8 tensor cores require as well. The bias is added, and
// for relu=fused clipped, in cuBLASLt's epilogue (CUBLASLT_EPILOGUE_BIAS / RELU_BIAS);
// relu=inplace and =separate run our own element-wise kernel after the product.
//
// dtypes: f32 (CUBLAS_COMPUTE_32F: true fp32), tf32 (CUBLAS_COMPUTE_32F_FAST_TF32),
// f16 and bf16 (f32 accumulation), f8 e4m3 with an f32 output (sm_89+; ic and oc in
// multiples of 16, see f8_layout_reason()). i8 is not
// offered: cuBLASLt multiplies s8 by s8, our int8 problems are u8 activations × s8.
// The algorithm is cuBLASLt's heuristic first choice with a 32 MiB workspace limit;
// details() records it. fwd_train is the forward (a dense layer keeps nothing more).
//
// Backward passes (CublasLtDenseBackward; dense.cublas.lt's bwd_d, bwd_w and bwd through
// split_by_pass; train is not offered: the two kernels would each hold their own device
// copies, and the backward would not see the forward's dst). In the same column-major
// reading, with dz M×N (ld N):
//   bwd_d  dxᵀ (K×M, ld K) = W (K×N, ld K) · dzᵀ (N×M, ld N)             "NN"
//   bwd_w  dWᵀ (K×N, ld K) = xᵀ (K×M, ld K) · dz (N×M, ld N, transposed)  "NT", with
//          CUBLASLT_EPILOGUE_BGRADB: db, the sum of B over the product's k (= M) per column
//          of D, written to diff_bias (f32) by the same call.
// The ReLU in front is our own element-wise kernel (GpuKernel::relu_backward_pass);
// relu=fused is declined: cuBLASLt's DRELU epilogues take the forward's ReLU bit-mask
// (RELU_AUX), which a backward pass on its own does not have. f32, tf32, f16 and bf16,
// where cuBLASLt's heuristic finds an algorithm for the epilogue and db's f32 (supports()
// asks it on a usable GPU and declines with its answer). Never run on a GPU yet: written
// and compiled without one (2026-12-07).
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "cuda/check.h"
#include "cuda/cublas/kernels.h"
#include "cuda/cublas/library.h"
#include "cuda/gpu_kernel.h"

namespace lb::cuda {
namespace {

constexpr size_t kMaxWorkspace = size_t(32) << 20;

cublasLtHandle_t lt_handle() {
  static cublasLtHandle_t h = [] {
    cublasLtHandle_t handle = nullptr;
    LB_CUBLAS_CHECK(cublaslt().cublasLtCreate(&handle));
    return handle;
  }();
  return h;
}

cudaDataType_t cuda_type(Storage s) {
  switch (s) {
    case Storage::f32:
      return CUDA_R_32F;
    case Storage::f16:
      return CUDA_R_16F;
    case Storage::bf16:
      return CUDA_R_16BF;
    case Storage::e4m3:
      return CUDA_R_8F_E4M3;
    default:
      throw Error("cublas: no CUDA data type for storage " + std::string(name(s)));
  }
}

// cuBLASLt's fp8 GEMMs take 16-byte-aligned matrices only: for e4m3 (1 byte) K, the
// leading dimension of A and B, in multiples of 16, and N, the output's leading
// dimension, as well (the f32 output alone would need 4; 16 is what cuBLASLt's
// heuristics return algorithms for). Asked here, before any GPU is touched, so that
// an awkward shape is declined with its reason instead of failing in prepare() with
// "found no algorithm".
std::string f8_layout_reason(const Problem& p) {
  if (p.dt != DType::f8) return {};
  const Dense& d = p.dense();
  if (d.ic % 16 == 0 && d.oc % 16 == 0) return {};
  return "cuBLASLt's fp8 GEMM needs ic (K) and oc (N) in multiples of 16 (16-byte-aligned e4m3 rows); "
         "this problem has ic=" +
         std::to_string(d.ic) + " oc=" + std::to_string(d.oc);
}

class CublasLtDense final : public GpuKernel {
 public:
  std::string supports(const Problem& p) const override {
    if (std::string why = require_dtypes(p, {DType::f32, DType::tf32, DType::f16, DType::bf16, DType::f8});
        !why.empty())
      return why + ": cuBLASLt multiplies s8 x s8; int8 problems are u8 activations x s8 weights";
    if (std::string why = f8_layout_reason(p); !why.empty()) return why;
    if (std::string why = gpu_unusable(p.dt == DType::f8 ? 89 : 0); !why.empty()) return why;
    return why_no_cublaslt();
  }

  void prepare(const Problem& p, TensorSet& ts, const Context&) override {
    release();
    upload(p, ts);
    const Dense& d = p.dense();
    const cudaDataType_t in = cuda_type(storage_of(p.dt, Arg::wei)),
                         out = cuda_type(storage_of(p.dt, Arg::dst));
    const cublasComputeType_t compute =
        p.dt == DType::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    LB_CUBLAS_CHECK(cublaslt().cublasLtMatmulDescCreate(&desc_, compute, CUDA_R_32F));
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    LB_CUBLAS_CHECK(
        cublaslt().cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LB_CUBLAS_CHECK(
        cublaslt().cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    const cublasLtEpilogue_t epilogue =
        p.relu == Relu::fused ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS;
    LB_CUBLAS_CHECK(cublaslt().cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                                              sizeof epilogue));
    // A = W as K×N (ld K), B = x as K×M (ld K), C = D = y as N×M (ld N), all column-major.
    LB_CUBLAS_CHECK(cublaslt().cublasLtMatrixLayoutCreate(&a_, in, d.ic, d.oc, d.ic));
    LB_CUBLAS_CHECK(cublaslt().cublasLtMatrixLayoutCreate(&b_, in, d.ic, d.mb, d.ic));
    LB_CUBLAS_CHECK(cublaslt().cublasLtMatrixLayoutCreate(&c_, out, d.oc, d.mb, d.oc));
    cublasLtMatmulPreference_t pref = nullptr;
    LB_CUBLAS_CHECK(cublaslt().cublasLtMatmulPreferenceCreate(&pref));
    LB_CUBLAS_CHECK(cublaslt().cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kMaxWorkspace, sizeof kMaxWorkspace));

    // The bias must be of the output's type, except for fp8 with an f32 output, where
    // cuBLASLt documents bf16 (f16 and f32 are tried after it). Our bias is f32 on the
    // host; a converted device copy is made when another type is needed, exact for f16,
    // bf16 and (in bf16) f8, whose problems' bias values are on that grid (value_grid,
    // kernels/tensor.h).
    std::vector<Storage> bias_types = {storage_of(p.dt, Arg::dst)};
    if (p.dt == DType::f8) bias_types = {Storage::bf16, Storage::f16, Storage::f32};
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    for (Storage bias : bias_types) {
      const cudaDataType_t bias_type = cuda_type(bias);
      LB_CUBLAS_CHECK(cublaslt().cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                                &bias_type, sizeof bias_type));
      if (cublaslt().cublasLtMatmulAlgoGetHeuristic(lt_handle(), desc_, a_, b_, c_, c_, pref, 1, &result,
                                                    &found) == CUBLAS_STATUS_SUCCESS &&
          found > 0) {
        bias_storage_ = bias;
        break;
      }
    }
    cublaslt().cublasLtMatmulPreferenceDestroy(pref);
    if (found == 0)
      throw Error("cublas: cuBLASLt found no algorithm for " + print(p) +
                  " (tried bias types for this dtype)");
    algo_ = result.algo;
    workspace_ = DeviceBuffer(result.workspaceSize);

    const Tensor& host_bias = ts.at(Arg::bias);
    const void* bias_ptr = dev(Arg::bias);
    if (bias_storage_ != Storage::f32) {
      Tensor converted(bias_storage_, host_bias.dims());
      for (int64_t i = 0; i < host_bias.elements(); ++i)
        converted.store(i, host_bias.load(i));
      bias_ = DeviceBuffer(converted.bytes());
      extra_bytes_ = bias_.bytes();
      LB_CUDA_CHECK(cudaMemcpy(bias_.get(), converted.data(), converted.bytes(), cudaMemcpyHostToDevice));
      bias_ptr = bias_.get();
    }
    LB_CUBLAS_CHECK(cublaslt().cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                              &bias_ptr, sizeof bias_ptr));

    int id = -1, tile = -1, stages = -1;
    size_t written = 0;
    cublaslt().cublasLtMatmulAlgoConfigGetAttribute(&algo_, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id,
                                                    &written);
    cublaslt().cublasLtMatmulAlgoConfigGetAttribute(&algo_, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile,
                                                    &written);
    cublaslt().cublasLtMatmulAlgoConfigGetAttribute(&algo_, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages,
                                                    sizeof stages, &written);
    details_ = "cuBLASLt heuristic #1: algo " + std::to_string(id) + ", tile " + std::to_string(tile) +
               ", stages " + std::to_string(stages) + ", workspace " + std::to_string(result.workspaceSize) +
               " B, bias " + std::string(name(bias_storage_));
  }

  void run(TensorSet&) override {
    const float alpha = 1.0f, beta = 0.0f;
    LB_CUBLAS_CHECK(cublaslt().cublasLtMatmul(lt_handle(), desc_, &alpha, dev(Arg::wei), a_, dev(Arg::src),
                                              b_, &beta, dev(Arg::dst), c_, dev(Arg::dst), c_, &algo_,
                                              workspace_.get(), workspace_.bytes(), 0));
    relu_pass();
  }

  void release() override {
    if (desc_) cublaslt().cublasLtMatmulDescDestroy(desc_);
    for (auto* layout : {&a_, &b_, &c_})
      if (*layout) cublaslt().cublasLtMatrixLayoutDestroy(*layout);
    desc_ = nullptr;
    a_ = b_ = c_ = nullptr;
    bias_ = DeviceBuffer();
    GpuKernel::release();
  }

  ~CublasLtDense() override { release(); }
  std::string details() const override { return details_; }

 private:
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  Storage bias_storage_ = Storage::f32;
  DeviceBuffer bias_;
  std::string details_;
};

// One cuBLASLt matmul of a backward pass: its descriptors and the algorithm chosen.
struct Matmul {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;

  Matmul() = default;
  Matmul(const Matmul&) = delete;
  Matmul& operator=(const Matmul&) = delete;
  ~Matmul() {
    if (desc) cublaslt().cublasLtMatmulDescDestroy(desc);
    for (auto* layout : {&a, &b, &c})
      if (*layout) cublaslt().cublasLtMatrixLayoutDestroy(*layout);
  }
};

// The matmul of `pass` (bwd_d or bwd_w) for p, its algorithm from the heuristic; empty
// where it found none, and `why` says so.
std::unique_ptr<Matmul> backward_matmul(const Problem& p, Pass pass, std::string& why) {
  const Dense& d = p.dense();
  auto m = std::make_unique<Matmul>();
  const cudaDataType_t in = cuda_type(storage_of(p.dt, Arg::wei));
  const cublasComputeType_t compute = p.dt == DType::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  LB_CUBLAS_CHECK(cublaslt().cublasLtMatmulDescCreate(&m->desc, compute, CUDA_R_32F));
  const bool data = pass == Pass::bwd_d;
  const cublasOperation_t ta = CUBLAS_OP_N, tb = data ? CUBLAS_OP_N : CUBLAS_OP_T;
  LB_CUBLAS_CHECK(
      cublaslt().cublasLtMatmulDescSetAttribute(m->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  LB_CUBLAS_CHECK(
      cublaslt().cublasLtMatmulDescSetAttribute(m->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  if (data) {  // A = W as K×N, B = dz as N×M, C = dx as K×M
    LB_CUBLAS_CHECK(cublaslt().cublasLtMatrixLayoutCreate(&m->a, in, d.ic, d.oc, d.ic));
    LB_CUBLAS_CHECK(cublaslt().cublasLtMatrixLayoutCreate(&m->b, in, d.oc, d.mb, d.oc));
    LB_CUBLAS_CHECK(cublaslt().cublasLtMatrixLayoutCreate(&m->c, cuda_type(storage_of(p.dt, Arg::diff_src)),
                                                          d.ic, d.mb, d.ic));
  } else {  // A = x as K×M, B = dz as N×M (transposed: M×N), C = dW as K×N; db by the epilogue
    LB_CUBLAS_CHECK(cublaslt().cublasLtMatrixLayoutCreate(&m->a, in, d.ic, d.mb, d.ic));
    LB_CUBLAS_CHECK(cublaslt().cublasLtMatrixLayoutCreate(&m->b, in, d.oc, d.mb, d.oc));
    LB_CUBLAS_CHECK(cublaslt().cublasLtMatrixLayoutCreate(&m->c, cuda_type(storage_of(p.dt, Arg::diff_wei)),
                                                          d.ic, d.oc, d.ic));
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BGRADB;
    LB_CUBLAS_CHECK(cublaslt().cublasLtMatmulDescSetAttribute(m->desc, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                              &epilogue, sizeof epilogue));
    const cudaDataType_t bias = cuda_type(storage_of(p.dt, Arg::diff_bias));
    LB_CUBLAS_CHECK(cublaslt().cublasLtMatmulDescSetAttribute(m->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                              &bias, sizeof bias));
  }
  cublasLtMatmulPreference_t pref = nullptr;
  LB_CUBLAS_CHECK(cublaslt().cublasLtMatmulPreferenceCreate(&pref));
  LB_CUBLAS_CHECK(cublaslt().cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kMaxWorkspace, sizeof kMaxWorkspace));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t status = cublaslt().cublasLtMatmulAlgoGetHeuristic(
      lt_handle(), m->desc, m->a, m->b, m->c, m->c, pref, 1, &result, &found);
  cublaslt().cublasLtMatmulPreferenceDestroy(pref);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0) {
    why =
        std::string("cuBLASLt's heuristic found no ") +
        (data ? "backward-data (NN) algorithm" : "backward-weights (NT, BGRADB epilogue, f32 db) algorithm") +
        " for dt=" + std::string(name(p.dt)) + " (status " + std::to_string(int(status)) + ")";
    return nullptr;
  }
  m->algo = result.algo;
  m->workspace = result.workspaceSize;
  return m;
}

class CublasLtDenseBackward final : public GpuKernel {
 public:
  std::string supports(const Problem& p) const override {
    if (std::string why = require_dtypes(p, {DType::f32, DType::tf32, DType::f16, DType::bf16}); !why.empty())
      return why + ": no gradients in integer or f8 arithmetic are defined";
    if (p.relu == Relu::fused)
      return "relu=fused in dir=" + std::string(name(p.pass)) +
             ": cuBLASLt's DRELU epilogues take the forward's ReLU bit-mask (RELU_AUX), which a backward "
             "pass alone "
             "does not have (relu=inplace or separate: our element-wise kernel)";
    if (std::string why = gpu_unusable(); !why.empty()) return why;
    if (std::string why = why_no_cublaslt(); !why.empty()) return why;
    std::string why;
    for (Pass part : {Pass::bwd_d, Pass::bwd_w})
      if ((part == Pass::bwd_d ? computes_data_grads(p.pass) : computes_weight_grads(p.pass)) &&
          !backward_matmul(p, part, why))
        return why;
    return {};
  }

  void prepare(const Problem& p, TensorSet& ts, const Context&) override {
    release();
    upload(p, ts);
    std::string why;
    size_t workspace = 0;
    if (computes_data_grads(p.pass)) {
      data_ = backward_matmul(p, Pass::bwd_d, why);
      if (!data_) throw Error("cublas: " + why);
      workspace = std::max(workspace, data_->workspace);
    }
    if (computes_weight_grads(p.pass)) {
      weights_ = backward_matmul(p, Pass::bwd_w, why);
      if (!weights_) throw Error("cublas: " + why);
      const void* db = dev(Arg::diff_bias);
      LB_CUBLAS_CHECK(cublaslt().cublasLtMatmulDescSetAttribute(
          weights_->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &db, sizeof db));
      workspace = std::max(workspace, weights_->workspace);
    }
    workspace_ = DeviceBuffer(workspace);  // the two run one after the other
    details_ = std::string(data_ ? "NN" : "") + (data_ && weights_ ? " + " : "") +
               (weights_ ? "NT + BGRADB" : "") + ", cuBLASLt heuristic #1, workspace " +
               std::to_string(workspace) + " B";
  }

  void run(TensorSet&) override {
    relu_backward_pass();
    const float alpha = 1.0f, beta = 0.0f;
    if (data_)
      LB_CUBLAS_CHECK(cublaslt().cublasLtMatmul(lt_handle(), data_->desc, &alpha, dev(Arg::wei), data_->a,
                                                dev(Arg::diff_dst), data_->b, &beta, dev(Arg::diff_src),
                                                data_->c, dev(Arg::diff_src), data_->c, &data_->algo,
                                                workspace_.get(), workspace_.bytes(), 0));
    if (weights_)
      LB_CUBLAS_CHECK(cublaslt().cublasLtMatmul(
          lt_handle(), weights_->desc, &alpha, dev(Arg::src), weights_->a, dev(Arg::diff_dst), weights_->b,
          &beta, dev(Arg::diff_wei), weights_->c, dev(Arg::diff_wei), weights_->c, &weights_->algo,
          workspace_.get(), workspace_.bytes(), 0));
  }

  void release() override {
    data_.reset();
    weights_.reset();
    GpuKernel::release();
  }

  ~CublasLtDenseBackward() override { release(); }
  std::string details() const override { return details_; }

 private:
  std::unique_ptr<Matmul> data_, weights_;
  std::string details_;
};

}  // namespace

std::unique_ptr<Kernel> make_cublas_dense() {
  return split_by_pass(std::make_unique<CublasLtDense>(), std::make_unique<CublasLtDenseBackward>());
}

}  // namespace lb::cuda
