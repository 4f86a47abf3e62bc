#include "onednn_backward.hpp"

#include <stdexcept>
#include <unordered_map>
#include <vector>

#ifdef CONVJIT_BENCH_HAVE_DNNL
#include "onednn_md.hpp"
#endif

namespace convjit_bench {

#ifdef CONVJIT_BENCH_HAVE_DNNL

using namespace onednn_md;

struct OnednnConvBackward::Impl {
  dnnl::stream strm{cpu_engine()};
  dnnl::primitive prim;
  std::string impl;
  std::unordered_map<int, memory> args;
};

OnednnConvBackward::OnednnConvBackward(const ConvShape& s, ConvBackward which, bool nhwc, const float* a,
                                       const float* b, float* out)
    : impl_(std::make_unique<Impl>()) {
  auto& eng = cpu_engine();
  const ConvDescs m(s, nhwc);

  // The user's input in the layout the primitive chose, reordered once.
  auto input = [&](const memory::desc& user, const float* data, const memory::desc& chosen) {
    memory u(user, eng, const_cast<float*>(data));
    if (chosen == user) return u;
    memory m(chosen, eng);
    dnnl::reorder(u, m).execute(impl_->strm, u, m);
    impl_->strm.wait();
    return m;
  };
  auto output = [&](const memory::desc& user, float* data, const memory::desc& chosen) {
    return chosen == user ? memory(user, eng, data) : memory(chosen, eng);
  };
  try {
    const dnnl::convolution_forward::primitive_desc hint(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                                        m.any_src, m.any_wei, m.any_dst, m.strides, m.dilates, m.pads, m.pads),
        eng);
    if (which == ConvBackward::Data) {
      const dnnl::convolution_backward_data::primitive_desc pd(
          dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, m.any_src, m.any_wei, m.any_dst, m.strides,
                                                m.dilates, m.pads, m.pads),
          eng, hint);
      impl_->args[DNNL_ARG_DIFF_DST] = input(m.user_dst, a, pd.diff_dst_desc());
      impl_->args[DNNL_ARG_WEIGHTS] = input(m.user_wei, b, pd.weights_desc());
      impl_->args[DNNL_ARG_DIFF_SRC] = output(m.user_src, out, pd.diff_src_desc());
      impl_->prim = dnnl::convolution_backward_data(pd);
      impl_->impl = pd.impl_info_str();
    } else {
      const dnnl::convolution_backward_weights::primitive_desc pd(
          dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, m.any_src, m.any_wei, m.any_dst,
                                                   m.strides, m.dilates, m.pads, m.pads),
          eng, hint);
      impl_->args[DNNL_ARG_SRC] = input(m.user_src, a, pd.src_desc());
      impl_->args[DNNL_ARG_DIFF_DST] = input(m.user_dst, b, pd.diff_dst_desc());
      impl_->args[DNNL_ARG_DIFF_WEIGHTS] = output(m.user_wei, out, pd.diff_weights_desc());
      impl_->prim = dnnl::convolution_backward_weights(pd);
      impl_->impl = pd.impl_info_str();
    }
  } catch (const dnnl::error& e) {
    throw std::runtime_error(std::string("oneDNN: no backward convolution implementation: ") + e.what());
  }
}

OnednnConvBackward::~OnednnConvBackward() = default;

void OnednnConvBackward::run() {
  impl_->prim.execute(impl_->strm, impl_->args);
  impl_->strm.wait();
}

std::string OnednnConvBackward::impl() const { return impl_->impl; }

struct OnednnPoolBackward::Impl {
  dnnl::stream strm{cpu_engine()};
  dnnl::pooling_backward prim;
  std::string impl;
  std::unordered_map<int, memory> args;
};

OnednnPoolBackward::OnednnPoolBackward(const PoolShape& s, bool nhwc, const float* x, const float* dy, float* dx)
    : impl_(std::make_unique<Impl>()) {
  auto& eng = cpu_engine();
  const memory::desc src_md(cat({s.n, s.c}, spatial(s.in, s.rank)), dt::f32, act_tag(s.rank, nhwc));
  const memory::desc dst_md(cat({s.n, s.c}, spatial(s.out(), s.rank)), dt::f32, act_tag(s.rank, nhwc));
  const auto alg = s.op == "max" ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_include_padding;
  const memory::dims strides = spatial(s.stride, s.rank), window = spatial(s.window, s.rank),
                     pads = spatial(s.pad, s.rank);
  try {
    const dnnl::pooling_forward::primitive_desc forward(
        dnnl::pooling_forward::desc(dnnl::prop_kind::forward_training, alg, src_md, dst_md, strides, window, pads,
                                    pads),
        eng);
    const dnnl::pooling_backward::primitive_desc pd(
        dnnl::pooling_backward::desc(alg, src_md, dst_md, strides, window, pads, pads), eng, forward);
    impl_->prim = dnnl::pooling_backward(pd);
    impl_->impl = pd.impl_info_str();
    impl_->args[DNNL_ARG_DIFF_DST] = memory(dst_md, eng, const_cast<float*>(dy));
    impl_->args[DNNL_ARG_DIFF_SRC] = memory(src_md, eng, dx);
    if (s.op == "max") {  // the workspace (argmax) of one forward run, outside the timed loop
      memory workspace(forward.workspace_desc(), eng), y(dst_md, eng);
      dnnl::pooling_forward(forward).execute(
          impl_->strm, {{DNNL_ARG_SRC, memory(src_md, eng, const_cast<float*>(x))}, {DNNL_ARG_DST, y},
                        {DNNL_ARG_WORKSPACE, workspace}});
      impl_->strm.wait();
      impl_->args[DNNL_ARG_WORKSPACE] = workspace;
    }
  } catch (const dnnl::error& e) {
    throw std::runtime_error(std::string("oneDNN: no pooling backward implementation: ") + e.what());
  }
}

OnednnPoolBackward::~OnednnPoolBackward() = default;

void OnednnPoolBackward::run() {
  impl_->prim.execute(impl_->strm, impl_->args);
  impl_->strm.wait();
}

std::string OnednnPoolBackward::impl() const { return impl_->impl; }

#else  // !CONVJIT_BENCH_HAVE_DNNL

struct OnednnConvBackward::Impl {};
OnednnConvBackward::OnednnConvBackward(const ConvShape&, ConvBackward, bool, const float*, const float*, float*) {
  throw std::runtime_error("built without oneDNN");
}
OnednnConvBackward::~OnednnConvBackward() = default;
void OnednnConvBackward::run() {}
std::string OnednnConvBackward::impl() const { return {}; }
struct OnednnPoolBackward::Impl {};
OnednnPoolBackward::OnednnPoolBackward(const PoolShape&, bool, const float*, const float*, float*) {
  throw std::runtime_error("built without oneDNN");
}
OnednnPoolBackward::~OnednnPoolBackward() = default;
void OnednnPoolBackward::run() {}
std::string OnednnPoolBackward::impl() const { return {}; }

#endif

}  // namespace convjit_bench
