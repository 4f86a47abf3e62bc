#include "onednn_seed_ops.hpp"

#include <map>
#include <stdexcept>
#include <utility>

#ifdef CONVJIT_BENCH_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace convjit_bench {

#ifdef CONVJIT_BENCH_HAVE_DNNL

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

// One layer at one batch size: the three primitives and memory objects whose handles each call
// points at the caller's buffers.
struct LayerPrimitives {
  dnnl::convolution_forward forward;
  dnnl::convolution_backward_weights backward_weights;
  dnnl::convolution_backward_data backward_data;
  memory src, weights, bias, dst;  // dst doubles as diff_dst, src as diff_src, weights as diff_weights
};

class OnednnSeedOps final : public seednet::ConvOps {
 public:
  void forward_relu(int layer, const convjit::ConvDims& d, const float* x, const float* w, const float* b,
                    float* y) override {
    LayerPrimitives& p = primitives(layer, d);
    p.src.set_data_handle(const_cast<float*>(x));
    p.weights.set_data_handle(const_cast<float*>(w));
    p.bias.set_data_handle(const_cast<float*>(b));
    p.dst.set_data_handle(y);
    p.forward.execute(
        stream_,
        {{DNNL_ARG_SRC, p.src}, {DNNL_ARG_WEIGHTS, p.weights}, {DNNL_ARG_BIAS, p.bias}, {DNNL_ARG_DST, p.dst}});
    stream_.wait();
  }

  void backward_filter(int layer, const convjit::ConvDims& d, const float* x, const float* dy, float* dw) override {
    LayerPrimitives& p = primitives(layer, d);
    p.src.set_data_handle(const_cast<float*>(x));
    p.dst.set_data_handle(const_cast<float*>(dy));
    p.weights.set_data_handle(dw);
    p.backward_weights.execute(stream_,
                               {{DNNL_ARG_SRC, p.src}, {DNNL_ARG_DIFF_DST, p.dst}, {DNNL_ARG_DIFF_WEIGHTS, p.weights}});
    stream_.wait();
  }

  void backward_data(int layer, const convjit::ConvDims& d, const float* dy, const float* w, float* dx) override {
    LayerPrimitives& p = primitives(layer, d);
    p.dst.set_data_handle(const_cast<float*>(dy));
    p.weights.set_data_handle(const_cast<float*>(w));
    p.src.set_data_handle(dx);
    p.backward_data.execute(stream_,
                            {{DNNL_ARG_DIFF_DST, p.dst}, {DNNL_ARG_WEIGHTS, p.weights}, {DNNL_ARG_DIFF_SRC, p.src}});
    stream_.wait();
  }

 private:
  LayerPrimitives& primitives(int layer, const convjit::ConvDims& d) {
    auto found = layers_.find({layer, d.batch});
    if (found != layers_.end()) return found->second;
    if (d.rank != 2 || d.layout != convjit::Layout::NCHW || d.mode != convjit::Mode::CrossCorrelation ||
        d.groups != 1) {
      throw std::invalid_argument("onednn seed ops: 2D NCHW cross-correlation without groups only");
    }
    const convjit::Extent out = d.output_size();
    const memory::desc src_md({d.batch, d.in_channels, d.in_size[0], d.in_size[1]}, dt::f32, tag::nchw);
    const memory::desc wei_md({d.out_channels, d.in_channels, d.kernel[0], d.kernel[1]}, dt::f32, tag::oihw);
    const memory::desc bias_md({d.out_channels}, dt::f32, tag::x);
    const memory::desc dst_md({d.batch, d.out_channels, out[0], out[1]}, dt::f32, tag::nchw);
    const memory::dims strides{d.stride[0], d.stride[1]}, dilates{d.dilation[0] - 1, d.dilation[1] - 1},
        pad_l{d.pad_begin[0], d.pad_begin[1]}, pad_r{d.pad_end[0], d.pad_end[1]};
    const auto alg = dnnl::algorithm::convolution_direct;

    dnnl::post_ops relu;
    relu.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(relu);
    const dnnl::convolution_forward::primitive_desc forward_pd(
        {dnnl::prop_kind::forward_training, alg, src_md, wei_md, bias_md, dst_md, strides, dilates, pad_l, pad_r}, attr,
        engine_);
    const dnnl::convolution_backward_weights::primitive_desc weights_pd(
        {alg, src_md, wei_md, dst_md, strides, dilates, pad_l, pad_r}, engine_, forward_pd);
    const dnnl::convolution_backward_data::primitive_desc data_pd(
        {alg, src_md, wei_md, dst_md, strides, dilates, pad_l, pad_r}, engine_, forward_pd);

    LayerPrimitives p{dnnl::convolution_forward(forward_pd),    dnnl::convolution_backward_weights(weights_pd),
                      dnnl::convolution_backward_data(data_pd), memory(src_md, engine_, nullptr),
                      memory(wei_md, engine_, nullptr),         memory(bias_md, engine_, nullptr),
                      memory(dst_md, engine_, nullptr)};
    return layers_.emplace(std::make_pair(layer, d.batch), std::move(p)).first->second;
  }

  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
  std::map<std::pair<int, int64_t>, LayerPrimitives> layers_;
};

}  // namespace

std::unique_ptr<seednet::ConvOps> make_onednn_seed_ops() {
  // oneDNN keeps made primitives in a process-wide cache; off, each instance makes its own, as the
  // first network of a process does (the steady state makes them once either way).
  dnnl::set_primitive_cache_capacity(0);
  return std::make_unique<OnednnSeedOps>();
}

#else  // !CONVJIT_BENCH_HAVE_DNNL

std::unique_ptr<seednet::ConvOps> make_onednn_seed_ops() {
  return nullptr;
}

#endif

}  // namespace convjit_bench
