#include "onednn.hpp"

#include <stdexcept>
#include <unordered_map>

#ifdef CONVJIT_BENCH_HAVE_DNNL
#include "onednn_md.hpp"
#endif

namespace convjit_bench {

#ifdef CONVJIT_BENCH_HAVE_DNNL

using namespace onednn_md;

bool have_onednn() { return true; }

struct OnednnConv::Impl {
  dnnl::stream strm{cpu_engine()};
  dnnl::convolution_forward prim;
  dnnl::convolution_forward::primitive_desc pd;
  memory user_y, src, wei, dst;
  bool blocked = false;
};

OnednnConv::OnednnConv(const ConvShape& s, DnnlConvKind kind, const float* x, const float* w, float* y)
    : impl_(std::make_unique<Impl>()) {
  auto& eng = cpu_engine();
  const bool nhwc = kind == DnnlConvKind::PlainNHWC || kind == DnnlConvKind::NhwcAnyWeights;
  const ConvDescs m(s, nhwc);
  const memory::desc &user_src = m.user_src, &user_wei = m.user_wei, &user_dst = m.user_dst;
  impl_->blocked = kind == DnnlConvKind::Blocked;
  const bool any_weights = impl_->blocked || kind == DnnlConvKind::NhwcAnyWeights;
  const memory::desc bias_none;
  try {
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                      impl_->blocked ? m.any_src : user_src, any_weights ? m.any_wei : user_wei,
                                      bias_none, impl_->blocked ? m.any_dst : user_dst, m.strides, m.dilates, m.pads,
                                      m.pads);
    impl_->pd = dnnl::convolution_forward::primitive_desc(d, eng);
  } catch (const dnnl::error& e) {
    throw std::runtime_error(std::string("oneDNN: no convolution implementation: ") + e.what());
  }
  impl_->prim = dnnl::convolution_forward(impl_->pd);

  memory u_src(user_src, eng, const_cast<float*>(x));
  memory u_wei(user_wei, eng, const_cast<float*>(w));
  impl_->user_y = memory(user_dst, eng, y);
  if (!impl_->blocked) {
    impl_->src = u_src;
    impl_->wei = u_wei;
    impl_->dst = impl_->user_y;
    if (any_weights) {
      impl_->wei = memory(impl_->pd.weights_desc(), eng);
      dnnl::reorder(u_wei, impl_->wei).execute(impl_->strm, u_wei, impl_->wei);
      impl_->strm.wait();
    }
  } else {
    impl_->src = memory(impl_->pd.src_desc(), eng);
    impl_->wei = memory(impl_->pd.weights_desc(), eng);
    impl_->dst = memory(impl_->pd.dst_desc(), eng);
    dnnl::reorder(u_src, impl_->src).execute(impl_->strm, u_src, impl_->src);
    dnnl::reorder(u_wei, impl_->wei).execute(impl_->strm, u_wei, impl_->wei);
    impl_->strm.wait();
  }
}

OnednnConv::~OnednnConv() = default;

void OnednnConv::run() {
  impl_->prim.execute(impl_->strm,
                      {{DNNL_ARG_SRC, impl_->src}, {DNNL_ARG_WEIGHTS, impl_->wei}, {DNNL_ARG_DST, impl_->dst}});
  impl_->strm.wait();
}

void OnednnConv::output_to_user() {
  if (!impl_->blocked) return;
  dnnl::reorder(impl_->dst, impl_->user_y).execute(impl_->strm, impl_->dst, impl_->user_y);
  impl_->strm.wait();
}

std::string OnednnConv::impl() const { return impl_->pd.impl_info_str(); }

struct OnednnPool::Impl {
  dnnl::stream strm{cpu_engine()};
  dnnl::pooling_forward prim;
  dnnl::pooling_forward::primitive_desc pd;
  memory src, dst;
};

OnednnPool::OnednnPool(const PoolShape& s, bool nhwc, const float* x, float* y) : impl_(std::make_unique<Impl>()) {
  auto& eng = cpu_engine();
  const memory::desc src_md(cat({s.n, s.c}, spatial(s.in, s.rank)), dt::f32, act_tag(s.rank, nhwc));
  const memory::desc dst_md(cat({s.n, s.c}, spatial(s.out(), s.rank)), dt::f32, act_tag(s.rank, nhwc));
  const auto alg = s.op == "max" ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_include_padding;
  try {
    dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_inference, alg, src_md, dst_md, spatial(s.stride, s.rank),
                                  spatial(s.window, s.rank), spatial(s.pad, s.rank), spatial(s.pad, s.rank));
    impl_->pd = dnnl::pooling_forward::primitive_desc(d, eng);
  } catch (const dnnl::error& e) {
    throw std::runtime_error(std::string("oneDNN: no pooling implementation: ") + e.what());
  }
  impl_->prim = dnnl::pooling_forward(impl_->pd);
  impl_->src = memory(src_md, eng, const_cast<float*>(x));
  impl_->dst = memory(dst_md, eng, y);
}

OnednnPool::~OnednnPool() = default;

void OnednnPool::run() {
  impl_->prim.execute(impl_->strm, {{DNNL_ARG_SRC, impl_->src}, {DNNL_ARG_DST, impl_->dst}});
  impl_->strm.wait();
}

std::string OnednnPool::impl() const { return impl_->pd.impl_info_str(); }

#else  // !CONVJIT_BENCH_HAVE_DNNL

bool have_onednn() { return false; }
struct OnednnConv::Impl {};
OnednnConv::OnednnConv(const ConvShape&, DnnlConvKind, const float*, const float*, float*) {
  throw std::runtime_error("built without oneDNN");
}
OnednnConv::~OnednnConv() = default;
void OnednnConv::run() {}
void OnednnConv::output_to_user() {}
std::string OnednnConv::impl() const { return {}; }
struct OnednnPool::Impl {};
OnednnPool::OnednnPool(const PoolShape&, bool, const float*, float*) { throw std::runtime_error("built without oneDNN"); }
OnednnPool::~OnednnPool() = default;
void OnednnPool::run() {}
std::string OnednnPool::impl() const { return {}; }

#endif

}  // namespace convjit_bench
