// conv2d.cpu.default's backward passes (bwd_d, bwd_w, bwd; train after its forward), as
// GEMMs over the image's columns (im2col) on the forward's driver (gemm.h), per image and
// group g (Cg = C/G input and Kg = K/G output channels, R×S taps, P×Q output pixels):
//
//   bwd_w   dW_g (Kg × Cg·R·S) += dz_g (Kg × P·Q) · col(x)ᵀ (P·Q × Cg·R·S): A = dz rows
//           as given; B, where Cg is a multiple of the micro-kernel's NR, packed straight
//           from x transposed per image to H·W×Cg (a panel is NR channels of one tap: NR
//           contiguous floats per pixel), dW then in (k, r, s, c) order and permuted at the
//           end; else from a block of x's columns built per tap and packed by the driver;
//           db[k] = Σ dz over pixels and images, beside it;
//   bwd_d   at unit stride: our forward convolution (conv2d.cpp) of dz, padded by
//           (R − 1)·DH − PH, with W transposed per group and flipped (what a transposed
//           convolution is), dz copied into its input and its output into dx (two passes
//           over activations, a few per cent of the time); else
//           dcol (Cg·R·S × P·Q) = W_gᵀ (Cg·R·S × Kg) · dz_g (Kg × P·Q), W_gᵀ packed once in
//           prepare(), then dcol scattered into dx (col2im: dx[c][h][w] += dcol[c,r,s][p,q]
//           over the taps inside the image), a block of output pixels at a time so that dcol
//           stays in L2 (its rows × kPixelBlock floats).
// Threads take whole images (each its own dW partial, added up at the end; dx is per image
// anyway): at batch 1, one thread works. dz as dense_backward.cpp: as given, after the
// ReLU's backward pass (separate, inplace), or for relu=fused masked in the packers. f32
// only.
//
// Prediction (f32, 3×3, C = K = 64, 56×56, batch 32, the 2-core AMD EPYC Zen 5 VM, one
// thread): bwd_d through the forward runs at the forward's rate plus two copies (~3 %);
// bwd_w's GEMM (M = Kg = 64, N = Cg·R·S = 576, K = a block of 256 pixels) near its forward
// rate, plus building B's panels (a copy of NR floats per tap and pixel from x in H·W×C,
// itself one transposing pass over x per image): ~0.85× the forward.
// Measured there (one run of `layerbench run --dir fwd,bwd_d,bwd_w --threads 1`, 2026-12-07):
// forward 37.8 ms (92 % of peak), bwd_d 40.6 ms (85 %), bwd_w 53.0 ms (66 %); oneDNN 2.6's
// 44.2, 39.3 and 44.3 ms: ours 0.97× its speed in bwd_d and 0.84× in bwd_w. Before: bwd_w
// over a column matrix in pixel rows, packed by the driver's transpose, 66.2 ms (0.64×;
// perf: that copy and transpose a third of the time); bwd_d by im2col + col2im, 59.4 ms.
#include <algorithm>
#include <vector>

#include "kernels/cpu/common.h"
#include "kernels/cpu/kernels.h"

namespace lb::cpu {
namespace {

constexpr int64_t kPixelBlock = 256;  // output pixels per block of columns (x's for bwd_w, dcol for bwd_d)

class Conv2dBackward final : public Kernel {
 public:
  std::string supports(const Problem& p) const override {
    if (std::string why = require_dtypes(p, {DType::f32}); !why.empty())
      return why + ": the backward passes are f32 only for now";
    // As the forward leaves them to conv2d.cpu.depthwise: a GEMM one channel deep ran them
    // at 1-2 GFLOP/s (MobileNet v1's, the Zen 5 VM), a hundredth of oneDNN's.
    if (p.conv().depthwise())
      return "depthwise convolutions are conv2d.cpu.depthwise's (forward only so far)";
    return {};
  }

  void prepare(const Problem& p, TensorSet& ts, const Context& ctx) override {
    c_ = p.conv();
    relu_ = p.relu;
    pass_ = p.pass;
    isa_ = best_isa();
    threads_ = ctx.threads;
    pool_ = std::make_unique<Pool>(ctx.threads);
    const int64_t G = c_.g, Kg = c_.oc / G, crs = c_.ic / G * c_.kh * c_.kw;
    if (computes_data_grads(pass_)) {
      const float* w = ts.at(Arg::wei).as<float>();
      packed_wt_.clear();
      for (int64_t g = 0; g < G; ++g)  // A(row crs, depth k) = W[g·Kg + k][crs]
        packed_wt_.emplace_back(isa_, true, crs, Kg, Strided{w + g * Kg * crs, 1, crs});
    }
    col_ = AlignedBuffer<float>(size_t(threads_ * crs * kPixelBlock));
    forward_.reset();
    if (computes_data_grads(pass_)) prepare_forward(ts, ctx);
    channels_last_ = computes_weight_grads(pass_) && (c_.ic / G) % f32_tile(isa_).nr == 0;
    if (channels_last_) {  // every thread's dW in (k, r, s, c) order, and its image's x as H·W×Cg
      partial_dw_ = AlignedBuffer<float>(size_t(threads_ * c_.oc * crs));
      xt_ = AlignedBuffer<float>(size_t(threads_ * c_.ih * c_.iw * (c_.ic / G)));
      pixel_at_ = std::vector<int64_t>(size_t(threads_ * 2 * kPixelBlock));
    } else if (computes_weight_grads(pass_) && threads_ > 1) {
      partial_dw_ = AlignedBuffer<float>(size_t((threads_ - 1) * c_.oc * crs));
    }
    ws_ = Workspace(isa_, threads_, true, true);
  }

  void run(TensorSet& ts) override {
    dy_ = ts.at(Arg::diff_dst).as<float>();
    y_ = relu_ == Relu::fused ? ts.at(Arg::dst).as<float>() : nullptr;
    const float* dz = gradient_at_output(relu_, ts, *pool_);
    const int64_t N = c_.mb;
    pool_->run([&](int tid, int n_threads) {
      const int64_t n0 = N * tid / n_threads, n1 = N * (tid + 1) / n_threads;
      if (channels_last_) {
        float* dw = partial_dw_.data() + tid * dw_elements();
        if (n0 == n1) std::fill(dw, dw + dw_elements(), 0.0f);
        for (int64_t n = n0; n < n1; ++n)
          weights_of_image_hwc(ts, dz, n, dw, n > n0, tid);
      } else if (computes_weight_grads(pass_)) {
        float* dw =
            tid == 0 ? ts.at(Arg::diff_wei).as<float>() : partial_dw_.data() + (tid - 1) * dw_elements();
        if (n0 == n1) std::fill(dw, dw + dw_elements(), 0.0f);
        for (int64_t n = n0; n < n1; ++n)
          weights_of_image(ts, dz, n, dw, n > n0, tid);
      }
      if (computes_data_grads(pass_) && !forward_)
        for (int64_t n = n0; n < n1; ++n)
          data_of_image(ts, dz, n, tid);
    });
    if (computes_data_grads(pass_) && forward_) data_by_forward(ts, dz);
    if (channels_last_) {
      // The threads' dW, summed, from (k, r, s, c) into ours, (k, c, r, s).
      float* dw = ts.at(Arg::diff_wei).as<float>();
      const int64_t Cg = c_.ic / c_.g, RS = c_.kh * c_.kw;
      for (int64_t k = 0; k < c_.oc; ++k)
        for (int64_t rs = 0; rs < RS; ++rs)
          for (int64_t ci = 0; ci < Cg; ++ci) {
            float sum = 0.0f;
            for (int t = 0; t < threads_; ++t)
              sum += partial_dw_.data()[t * dw_elements() + (k * RS + rs) * Cg + ci];
            dw[(k * Cg + ci) * RS + rs] = sum;
          }
      bias_gradient(ts, dz);
    } else if (computes_weight_grads(pass_)) {
      float* dw = ts.at(Arg::diff_wei).as<float>();
      for (int t = 1; t < threads_; ++t) {
        const float* part = partial_dw_.data() + (t - 1) * dw_elements();
        for (int64_t i = 0; i < dw_elements(); ++i)
          dw[i] += part[i];
      }
      bias_gradient(ts, dz);
    }
  }

  void release() override {
    if (forward_) forward_->release();
    forward_.reset();
    forward_ts_ = {};
    packed_wt_.clear();
    col_ = {};
    xt_ = {};
    pixel_at_.clear();
    partial_dw_ = {};
    ws_ = {};
    pool_.reset();
  }

  std::string details() const override {
    const Tile t = f32_tile(isa_);
    return "isa=" + std::string(name(isa_)) + " tile=" + std::to_string(t.mr) + "x" + std::to_string(t.nr) +
           (forward_ ? " dx by the forward (" + forward_->details() + ")," : "") + " im2col per image" +
           (relu_ == Relu::fused ? ", mask in the packers" : "");
  }
  size_t scratch_bytes() const override {
    size_t bytes =
        ws_.bytes() + col_.bytes() + partial_dw_.bytes() + xt_.bytes() + pixel_at_.size() * sizeof(int64_t);
    for (const Packed& p : packed_wt_)
      bytes += p.bytes();
    if (forward_) bytes += forward_ts_.bytes() + forward_->scratch_bytes();
    return bytes;
  }

 private:
  int64_t dw_elements() const { return c_.oc * (c_.ic / c_.g) * c_.kh * c_.kw; }

  // Element `at` of dz: gradient_at_output()'s (cpu/common.h), or for relu=fused (dz null)
  // diff_dst masked by dst as it is read.
  float dz_at(const float* dz, int64_t at) const { return dz ? dz[at] : (y_[at] > 0.0f ? dy_[at] : 0.0f); }

  // A packer of micro-panels (gemm.h's PackFn) from element (i, k) at base + i·rs + k·cs of
  // dz, masked by the forward's y for relu=fused.
  auto dz_packer(const float* dz, int64_t base, int64_t rs, int64_t cs) const {
    return [this, dz, base, rs, cs](int64_t i0, int64_t count, int64_t k0, int64_t kc, int r, float* dst) {
      for (int64_t p = 0; p * r < count; ++p)
        for (int64_t k = 0; k < kc; ++k)
          for (int rr = 0; rr < r; ++rr) {
            const int64_t row = p * r + rr;
            dst[(p * kc + k) * r + rr] =
                row < count ? dz_at(dz, base + (i0 + row) * rs + (k0 + k) * cs) : 0.0f;
          }
    };
  }

  // bwd_d at unit stride (header): the forward convolution of dz, padded by (R − 1)·DH − PH,
  // with W transposed per group and flipped, which gives dx's size back; where our forward
  // takes that problem (not depthwise: conv2d.cpu.depthwise's; padding past the filter's
  // reach: none here), else the im2col path.
  void prepare_forward(const TensorSet& ts, const Context& ctx) {
    const Conv2d& c = c_;
    if (c.sh != 1 || c.sw != 1) return;
    const Conv2d d{.mb = c.mb,
                   .ic = c.oc,
                   .ih = c.oh(),
                   .iw = c.ow(),
                   .oc = c.ic,
                   .kh = c.kh,
                   .kw = c.kw,
                   .ph = c.dh * (c.kh - 1) - c.ph,
                   .pw = c.dw * (c.kw - 1) - c.pw,
                   .dh = c.dh,
                   .dw = c.dw,
                   .g = c.g};
    if (d.ph < 0 || d.pw < 0 || d.oh() != c.ih || d.ow() != c.iw) return;
    Problem q;
    q.shape = d;
    std::unique_ptr<Kernel> k = make_conv2d();
    if (!k->supports(q).empty()) return;
    forward_ts_ = make_tensors(q);
    // W'[g·Cg + ci][kk][r][s] = W[g·Kg + kk][ci][R − 1 − r][S − 1 − s].
    const int64_t G = c.g, Cg = c.ic / G, Kg = c.oc / G, R = c.kh, S = c.kw;
    const float* w = ts.at(Arg::wei).as<float>();
    float* wt = forward_ts_.at(Arg::wei).as<float>();
    for (int64_t g = 0; g < G; ++g)
      for (int64_t ci = 0; ci < Cg; ++ci)
        for (int64_t kk = 0; kk < Kg; ++kk)
          for (int64_t r = 0; r < R; ++r)
            for (int64_t s = 0; s < S; ++s)
              wt[(((g * Cg + ci) * Kg + kk) * R + r) * S + s] =
                  w[(((g * Kg + kk) * Cg + ci) * R + (R - 1 - r)) * S + (S - 1 - s)];
    Tensor& b = forward_ts_.at(Arg::bias);
    std::fill(b.as<float>(), b.as<float>() + b.elements(), 0.0f);
    k->prepare(q, forward_ts_, ctx);
    forward_ = std::move(k);
  }

  // dz into the forward's input (masked for relu=fused), the forward, its output into dx.
  void data_by_forward(TensorSet& ts, const float* dz) {
    float* in = forward_ts_.at(Arg::src).as<float>();
    const int64_t n_in = forward_ts_.at(Arg::src).elements();
    pool_->run([&](int tid, int n_threads) {
      for (int64_t i = n_in * tid / n_threads; i < n_in * (tid + 1) / n_threads; ++i)
        in[i] = dz_at(dz, i);
    });
    forward_->run(forward_ts_);
    const Tensor& out = forward_ts_.at(Arg::dst);
    std::copy(out.as<float>(), out.as<float>() + out.elements(), ts.at(Arg::diff_src).as<float>());
  }

  // Calls run(i, count, at) for the runs of output pixels [b0, b0 + nb) of one plane whose tap
  // (r, s) lands inside the image: i the run's first pixel in the block, `count` pixels, `at`
  // the input element h·W + w the first reads; the next read at + SW each. Pixels whose tap
  // is outside (padding) are in no run.
  template <class Run>
  void for_each_run(int64_t r, int64_t s, int64_t b0, int64_t nb, Run run) const {
    const Conv2d& c = c_;
    const int64_t Q = c.ow(), H = c.ih, W = c.iw, off = s * c.dw - c.pw;
    // w = q·SW + off is inside for q in [q_lo, q_hi).
    const int64_t q_lo = off >= 0 ? 0 : (-off + c.sw - 1) / c.sw;
    const int64_t q_hi = W - 1 - off < 0 ? 0 : (W - 1 - off) / c.sw + 1;
    for (int64_t pq = b0, end = b0 + nb; pq < end;) {
      const int64_t p = pq / Q, q0 = pq % Q, q1 = std::min(Q, q0 + (end - pq));
      const int64_t h = p * c.sh - c.ph + r * c.dh;
      const int64_t qa = std::max(q0, q_lo), qb = std::min(q1, q_hi);
      if (h >= 0 && h < H && qa < qb) run(pq - b0 + (qa - q0), qb - qa, h * W + qa * c.sw + off);
      pq += q1 - q0;
    }
  }

  // dW_g (Kg × Cg·R·S, at dw_g) (+)= dz_g's pixels [b0, b0 + nb) of image n (A: as given, rows
  // P·Q apart, or masked as packed for relu=fused) times b, the block's columns of x.
  void weights_of_block(const float* dz, int64_t n, int64_t g, int64_t b0, int64_t nb, const Operand& b,
                        float* dw_g, bool accumulate, int tid) const {
    const int64_t Kg = c_.oc / c_.g, PQ = c_.oh() * c_.ow(), crs = c_.ic / c_.g * c_.kh * c_.kw;
    const int64_t base = (n * c_.oc + g * Kg) * PQ + b0;  // dz_g's first pixel of the block
    const auto pack_a = dz_packer(dz, base, PQ, 1);
    const PackFn pack_a_ref(pack_a);
    Operand a;
    if (dz)
      a.strided = Strided{dz + base, PQ, 1};
    else
      a.pack = &pack_a_ref;
    Epilogue ep;
    ep.accumulate = accumulate;
    gemm_f32_serial(isa_, Kg, crs, nb, a, b, dw_g, crs, ep, ws_, tid);
  }

  // The same for Cg a multiple of the micro-kernel's NR (channels_last_), with dW in (k, r, s,
  // c) order: x_n's group transposed once into H·W×Cg (xt_), so that a panel of NR columns (one
  // tap, NR channels) at a pixel is NR contiguous floats of it — B's panels are copies, not
  // the transposing pack of a column matrix.
  void weights_of_image_hwc(const TensorSet& ts, const float* dz, int64_t n, float* dw, bool accumulate,
                            int tid) {
    const Conv2d& c = c_;
    const int64_t G = c.g, Cg = c.ic / G, Kg = c.oc / G, S = c.kw, Q = c.ow(), PQ = c.oh() * Q;
    const int64_t H = c.ih, W = c.iw, HW = H * W, crs = Cg * c.kh * S;
    const float* x = ts.at(Arg::src).as<float>();
    float* xt = xt_.data() + tid * HW * Cg;
    int64_t* at = pixel_at_.data() + tid * 2 * kPixelBlock;  // per pixel of a block: its window's h, w
    for (int64_t g = 0; g < G; ++g) {
      const float* xg = x + (n * c.ic + g * Cg) * HW;
      for (int64_t c0 = 0; c0 < Cg; c0 += 16)  // 16×16 blocks: both sides stay in cache lines
        for (int64_t i0 = 0; i0 < HW; i0 += 16)
          for (int64_t ci = c0; ci < std::min(c0 + 16, Cg); ++ci)
            for (int64_t i = i0; i < std::min(i0 + 16, HW); ++i)
              xt[i * Cg + ci] = xg[ci * HW + i];
      for (int64_t b0 = 0; b0 < PQ; b0 += kPixelBlock) {
        const int64_t nb = std::min(kPixelBlock, PQ - b0);
        for (int64_t i = 0; i < nb; ++i) {
          at[2 * i] = (b0 + i) / Q * c.sh - c.ph;
          at[2 * i + 1] = (b0 + i) % Q * c.sw - c.pw;
        }
        // B(column j = (r, s, ci), depth i) = xt[(h + r·DH)·W + w + s·DW][ci], 0 outside.
        auto pack_b = [&](int64_t j0, int64_t count, int64_t k0, int64_t kc, int nr, float* dst) {
          for (int64_t panel = 0; panel * nr < count; ++panel) {
            const int64_t j = j0 + panel * nr, tap = j / Cg, c_first = j % Cg;
            const int64_t dh = tap / S * c.dh, ds = tap % S * c.dw;
            float* out = dst + panel * kc * nr;
            const bool whole = count - panel * nr >= nr && c_first + nr <= Cg;
            for (int64_t k = 0; k < kc; ++k) {
              float* row = out + k * nr;
              const int64_t h0 = at[2 * (k0 + k)], w0 = at[2 * (k0 + k) + 1];
              if (whole) {  // one tap, nr channels: a copy, or zeros over the padding
                const int64_t h = h0 + dh, w = w0 + ds;
                if (h < 0 || h >= H || w < 0 || w >= W)
                  std::fill(row, row + nr, 0.0f);
                else
                  std::copy(xt + (h * W + w) * Cg + c_first, xt + (h * W + w) * Cg + c_first + nr, row);
                continue;
              }
              for (int jj = 0; jj < nr; ++jj) {  // the last panel: column by column
                const int64_t jc = j + jj, t2 = jc / Cg;
                const int64_t h = h0 + t2 / S * c.dh, w = w0 + t2 % S * c.dw;
                const bool in = panel * nr + jj < count && h >= 0 && h < H && w >= 0 && w < W;
                row[jj] = in ? xt[(h * W + w) * Cg + jc % Cg] : 0.0f;
              }
            }
          }
        };
        const PackFn pack_b_ref(pack_b);
        Operand b;
        b.pack = &pack_b_ref;
        weights_of_block(dz, n, g, b0, nb, b, dw + g * Kg * crs, accumulate || b0 > 0, tid);
      }
    }
  }

  // dW (+)= Σ_g dz_g · col(x_n)ᵀ for image n, into dw (accumulate: add to it from the start),
  // a block of output pixels at a time: the block's columns of x (Cg·R·S rows of nb) built
  // in col_, then one GEMM as deep as the block.
  void weights_of_image(const TensorSet& ts, const float* dz, int64_t n, float* dw, bool accumulate,
                        int tid) {
    const Conv2d& c = c_;
    const int64_t G = c.g, Cg = c.ic / G, Kg = c.oc / G, R = c.kh, S = c.kw, PQ = c.oh() * c.ow();
    const int64_t HW = c.ih * c.iw, crs = Cg * R * S, SW = c.sw;
    const float* x = ts.at(Arg::src).as<float>();
    float* col = col_.data() + tid * crs * kPixelBlock;
    for (int64_t g = 0; g < G; ++g)
      for (int64_t b0 = 0; b0 < PQ; b0 += kPixelBlock) {
        const int64_t nb = std::min(kPixelBlock, PQ - b0);
        for (int64_t j = 0; j < crs; ++j) {
          const int64_t ci = j / (R * S), r = j / S % R, s = j % S;
          const float* plane = x + (n * c.ic + g * Cg + ci) * HW;
          float* row = col + j * nb;
          std::fill(row, row + nb, 0.0f);
          for_each_run(r, s, b0, nb, [&](int64_t i, int64_t count, int64_t at) {
            if (SW == 1)
              std::copy(plane + at, plane + at + count, row + i);
            else
              for (int64_t t = 0; t < count; ++t)
                row[i + t] = plane[at + t * SW];
          });
        }
        Operand b;
        b.strided = Strided{col, nb, 1};  // B(column j, depth i) = col[j][i]
        weights_of_block(dz, n, g, b0, nb, b, dw + g * Kg * crs, accumulate || b0 > 0, tid);
      }
  }

  // dx_n = col2im(Σ_g W_gᵀ · dz_g), a block of output pixels at a time.
  void data_of_image(TensorSet& ts, const float* dz, int64_t n, int tid) {
    const Conv2d& c = c_;
    const int64_t G = c.g, Cg = c.ic / G, Kg = c.oc / G, R = c.kh, S = c.kw, PQ = c.oh() * c.ow();
    const int64_t HW = c.ih * c.iw, crs = Cg * R * S, SW = c.sw;
    float* dx = ts.at(Arg::diff_src).as<float>() + n * c.ic * HW;
    std::fill(dx, dx + c.ic * HW, 0.0f);
    float* dcol = col_.data() + tid * crs * kPixelBlock;
    for (int64_t g = 0; g < G; ++g)
      for (int64_t b0 = 0; b0 < PQ; b0 += kPixelBlock) {
        const int64_t nb = std::min(kPixelBlock, PQ - b0);
        const int64_t base = (n * c.oc + g * Kg) * PQ + b0;  // dz_g's first pixel of the block
        const auto pack_b = dz_packer(dz, base, 1, PQ);      // B(column pq, depth k) = dz[k][pq]
        const PackFn pack_b_ref(pack_b);
        Operand a, b;
        a.packed = &packed_wt_[size_t(g)];
        if (dz)
          b.strided = Strided{dz + base, 1, PQ};
        else
          b.pack = &pack_b_ref;
        gemm_f32_serial(isa_, crs, nb, Kg, a, b, dcol, nb, Epilogue{}, ws_, tid);
        // col2im of the block: row (ci, r, s) of dcol adds into plane ci where the tap lands.
        for (int64_t j = 0; j < crs; ++j) {
          const int64_t ci = j / (R * S), r = j / S % R, s = j % S;
          float* plane = dx + (g * Cg + ci) * HW;
          const float* row = dcol + j * nb;
          for_each_run(r, s, b0, nb, [&](int64_t i, int64_t count, int64_t at) {
            if (SW == 1)
              for (int64_t t = 0; t < count; ++t)
                plane[at + t] += row[i + t];
            else
              for (int64_t t = 0; t < count; ++t)
                plane[at + t * SW] += row[i + t];
          });
        }
      }
  }

  void bias_gradient(TensorSet& ts, const float* dz) {
    float* db = ts.at(Arg::diff_bias).as<float>();
    const int64_t K = c_.oc, PQ = c_.oh() * c_.ow(), N = c_.mb;
    pool_->run([&](int tid, int n_threads) {
      for (int64_t k = K * tid / n_threads; k < K * (tid + 1) / n_threads; ++k) {
        // Sixteen partial sums, so that the compiler vectorises the loop (one sum may not be
        // reordered); added up at the end.
        float sums[16] = {};
        for (int64_t n = 0; n < N; ++n) {
          const int64_t base = (n * K + k) * PQ;
          int64_t i = 0;
          if (dz)
            for (; i + 16 <= PQ; i += 16)
              for (int l = 0; l < 16; ++l)
                sums[l] += dz[base + i + l];
          for (; i < PQ; ++i)
            sums[i % 16] += dz_at(dz, base + i);
        }
        float sum = 0.0f;
        for (float v : sums)
          sum += v;
        db[k] = sum;
      }
    });
  }

  Conv2d c_;
  Relu relu_ = Relu::none;
  Pass pass_ = Pass::bwd;
  Isa isa_ = Isa::scalar;
  int threads_ = 1;
  std::unique_ptr<Pool> pool_;
  std::vector<Packed> packed_wt_;    // W_gᵀ per group (bwd_d)
  AlignedBuffer<float> col_;         // per thread: crs × kPixelBlock, x's columns (bwd_w) or dcol (bwd_d)
  AlignedBuffer<float> partial_dw_;  // threads 1.. : their own dW (bwd_w)
  Workspace ws_;
  bool channels_last_ = false;       // bwd_w by weights_of_image_hwc
  AlignedBuffer<float> xt_;          // per thread: an image's group of x as H·W×Cg (channels_last_)
  std::vector<int64_t> pixel_at_;    // per thread: a pixel block's window corners (channels_last_)
  std::unique_ptr<Kernel> forward_;  // bwd_d by our forward convolution, and its tensors
  TensorSet forward_ts_;
  const float* dy_ = nullptr;  // relu=fused: the arriving gradient and the forward's y
  const float* y_ = nullptr;
};

}  // namespace

std::unique_ptr<Kernel> make_conv2d_backward() {
  return std::make_unique<Conv2dBackward>();
}

}  // namespace lb::cpu
