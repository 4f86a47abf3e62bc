// oneDNN memory descriptors of convjit_bench's shapes: engine, dims and format tags (built with
// oneDNN only).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include "shapes.hpp"

namespace convjit_bench::onednn_md {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

inline dnnl::engine& cpu_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

inline memory::dims spatial(const Ext3& e, int rank, int64_t minus = 0) {
  memory::dims d;
  for (int i = 0; i < rank; ++i) d.push_back(e[i] - minus);
  return d;
}

inline memory::dims cat(memory::dims a, const memory::dims& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

inline tag act_tag(int rank, bool nhwc) {
  if (rank == 1) return nhwc ? tag::nwc : tag::ncw;
  if (rank == 2) return nhwc ? tag::nhwc : tag::nchw;
  return nhwc ? tag::ndhwc : tag::ncdhw;
}

inline tag weight_tag(int rank, bool nhwc, bool grouped) {
  if (grouped) {
    if (rank == 1) return nhwc ? tag::gowi : tag::goiw;
    if (rank == 2) return nhwc ? tag::gohwi : tag::goihw;
    return nhwc ? tag::godhwi : tag::goidhw;
  }
  if (rank == 1) return nhwc ? tag::owi : tag::oiw;
  if (rank == 2) return nhwc ? tag::ohwi : tag::oihw;
  return nhwc ? tag::odhwi : tag::oidhw;
}


// A convolution's descriptors: in the user's layout (nchw/oihw or nhwc/ohwi, grouped goihw/gohwi)
// and with format_tag::any.
struct ConvDescs {
  memory::dims strides, dilates, pads;
  memory::desc user_src, user_wei, user_dst, any_src, any_wei, any_dst;

  ConvDescs(const ConvShape& s, bool nhwc) {
    const bool grouped = s.groups > 1;
    const memory::dims src = cat({s.n, s.ic}, spatial(s.in, s.rank));
    const memory::dims dst = cat({s.n, s.oc}, spatial(s.out(), s.rank));
    const memory::dims wei = grouped ? cat({s.groups, s.oc / s.groups, s.ic / s.groups}, spatial(s.k, s.rank))
                                     : cat({s.oc, s.ic}, spatial(s.k, s.rank));
    strides = spatial(s.stride, s.rank);
    dilates = spatial(s.dilation, s.rank, 1);  // oneDNN counts dilation from 0
    pads = spatial(s.pad, s.rank);
    user_src = memory::desc(src, dt::f32, act_tag(s.rank, nhwc));
    user_wei = memory::desc(wei, dt::f32, weight_tag(s.rank, nhwc, grouped));
    user_dst = memory::desc(dst, dt::f32, act_tag(s.rank, nhwc));
    any_src = memory::desc(src, dt::f32, tag::any);
    any_wei = memory::desc(wei, dt::f32, tag::any);
    any_dst = memory::desc(dst, dt::f32, tag::any);
  }
};

}  // namespace convjit_bench::onednn_md
