#include "onednn.hpp"

#include <stdexcept>
#include <unordered_map>

#ifdef CONVJIT_BENCH_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>
#endif

namespace convjit_bench {

#ifdef CONVJIT_BENCH_HAVE_DNNL

namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

dnnl::engine& cpu_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

memory::dims spatial(const Ext3& e, int rank, int64_t minus = 0) {
  memory::dims d;
  for (int i = 0; i < rank; ++i) d.push_back(e[i] - minus);
  return d;
}

memory::dims cat(memory::dims a, const memory::dims& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

tag act_tag(int rank, bool nhwc) {
  if (rank == 1) return nhwc ? tag::nwc : tag::ncw;
  if (rank == 2) return nhwc ? tag::nhwc : tag::nchw;
  return nhwc ? tag::ndhwc : tag::ncdhw;
}

tag weight_tag(int rank, bool nhwc, bool grouped) {
  if (grouped) {
    if (rank == 1) return nhwc ? tag::gowi : tag::goiw;
    if (rank == 2) return nhwc ? tag::gohwi : tag::goihw;
    return nhwc ? tag::godhwi : tag::goidhw;
  }
  if (rank == 1) return nhwc ? tag::owi : tag::oiw;
  if (rank == 2) return nhwc ? tag::ohwi : tag::oihw;
  return nhwc ? tag::odhwi : tag::oidhw;
}

}  // namespace

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
  const bool grouped = s.groups > 1;
  const memory::dims src_dims = cat({s.n, s.ic}, spatial(s.in, s.rank));
  const memory::dims dst_dims = cat({s.n, s.oc}, spatial(s.out(), s.rank));
  const memory::dims wei_dims = grouped ? cat({s.groups, s.oc / s.groups, s.ic / s.groups}, spatial(s.k, s.rank))
                                        : cat({s.oc, s.ic}, spatial(s.k, s.rank));
  const memory::dims strides = spatial(s.stride, s.rank);
  const memory::dims dilates = spatial(s.dilation, s.rank, 1);  // oneDNN counts dilation from 0
  const memory::dims pads = spatial(s.pad, s.rank);

  const memory::desc user_src(src_dims, dt::f32, act_tag(s.rank, nhwc));
  const memory::desc user_wei(wei_dims, dt::f32, weight_tag(s.rank, nhwc, grouped));
  const memory::desc user_dst(dst_dims, dt::f32, act_tag(s.rank, nhwc));
  impl_->blocked = kind == DnnlConvKind::Blocked;
  const bool any_weights = impl_->blocked || kind == DnnlConvKind::NhwcAnyWeights;
  const memory::desc any_src(src_dims, dt::f32, tag::any), any_wei(wei_dims, dt::f32, tag::any),
      any_dst(dst_dims, dt::f32, tag::any);
  const memory::desc bias_none;
  try {
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                      impl_->blocked ? any_src : user_src, any_weights ? any_wei : user_wei,
                                      bias_none, impl_->blocked ? any_dst : user_dst, strides, dilates, pads, pads);
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
