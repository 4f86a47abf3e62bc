#include "spec_key.hpp"

#include <algorithm>
#include <climits>

namespace convjit::jit {

uint64_t SpecKey::hash() const {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the key's bytes
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(this);
  for (size_t i = 0; i < sizeof *this; ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  return h;
}

std::string SpecKey::name() const {
  const int first = 3 - rank;
  auto dims = [&](const int64_t v[3]) {
    std::string s;
    for (int d = first; d < 3; ++d) {
      if (d > first) s += 'x';
      s += std::to_string(v[d]);
    }
    return s;
  };
  auto all_one = [&](const int64_t v[3]) { return v[0] == 1 && v[1] == 1 && v[2] == 1; };
  auto uniform = [&](const int64_t v[3]) {
    for (int d = first + 1; d < 3; ++d)
      if (v[d] != v[first]) return false;
    return true;
  };
  const bool max = op == CONVJIT_OP_MAXPOOL_FORWARD || op == CONVJIT_OP_MAXPOOL_BACKWARD;
  const bool mean = op == CONVJIT_OP_MEANPOOL_FORWARD || op == CONVJIT_OP_MEANPOOL_BACKWARD;
  const bool backward = op == CONVJIT_OP_MAXPOOL_BACKWARD || op == CONVJIT_OP_MEANPOOL_BACKWARD;
  const char* family = max ? "maxpool" : mean ? "meanpool" : "conv";
  const char* direction = op == CONVJIT_OP_CONV_BACKWARD_FILTER ? "d_bwd_filter_f32_k"
                          : backward                            ? "d_bwd_f32_k"
                                                                : "d_fwd_f32_k";
  std::string n = family + std::to_string(rank) + direction + dims(kernel);
  n += "_s" + (uniform(stride) ? std::to_string(stride[first]) : dims(stride));
  if (!all_one(dilation)) n += "_d" + (uniform(dilation) ? std::to_string(dilation[first]) : dims(dilation));
  if (layout == CONVJIT_NHWC) n += "_nhwc";
  if (flip) n += "_flip";
  if (layout == CONVJIT_NCHW && oc_class < 4) n += "_oc" + std::to_string(oc_class);
  if (layout == CONVJIT_NHWC && oc_class == kNhwcWideClass) n += "_oc32up";
  if (depthwise_groups) {
    n += "_dw" + std::to_string(depthwise_groups);
  } else if (ic_per_group) {
    n += "_c" + std::to_string(ic_per_group) + "to" + std::to_string(oc_per_group);
  }
  if (in[2]) n += "_i" + dims(in);
  if (relu) n += "_relu";
  return n + "__" + isa_name(isa);
}

SpecKey make_spec_key(const convjit_conv_problem& p, int32_t rank, bool relu, Isa isa, bool specialize_sizes) {
  SpecKey k{};
  k.op = CONVJIT_OP_CONV_FORWARD;
  k.rank = rank;
  k.layout = p.layout;
  k.flip = p.flip;
  k.relu = relu ? 1 : 0;
  k.isa = isa;
  if (p.layout == CONVJIT_NCHW)
    k.oc_class = int32_t(std::min<int64_t>(p.oc_per_group, 4));
  else
    k.oc_class = p.oc_per_group >= kNhwcWideClass ? kNhwcWideClass : kNhwcNarrowClass;
  for (int d = 0; d < 3; ++d) {
    k.kernel[d] = p.kernel[d];
    k.stride[d] = p.stride[d];
    k.dilation[d] = p.dilation[d];
  }
  if (specialize_sizes) {
    k.ic_per_group = p.ic_per_group;
    k.oc_per_group = p.oc_per_group;
    for (int d = 0; d < 3; ++d) k.in[d] = p.in[d];
  }
  return k;
}

SpecKey make_pool_spec_key(const convjit_pool_problem& p, int32_t op, int32_t rank, Isa isa) {
  SpecKey k{};
  k.op = op;
  k.rank = rank;
  k.layout = CONVJIT_NHWC;
  k.isa = isa;
  for (int d = 0; d < 3; ++d) {
    k.kernel[d] = p.window[d];
    k.stride[d] = p.stride[d];
    k.dilation[d] = p.dilation[d];
  }
  return k;
}

SpecKey make_filter_spec_key(const convjit_conv_problem& p, int32_t rank, Isa isa) {
  SpecKey k{};
  k.op = CONVJIT_OP_CONV_BACKWARD_FILTER;
  k.rank = rank;
  k.layout = p.layout;
  k.flip = p.flip;
  k.isa = isa;
  for (int d = 0; d < 3; ++d) {
    k.kernel[d] = p.kernel[d];
    k.stride[d] = p.stride[d];
    k.dilation[d] = p.dilation[d];
  }
  k.ic_per_group = p.ic_per_group;
  k.oc_per_group = p.oc_per_group;
  if (p.ic_per_group == 1 && p.oc_per_group == 1) {
    k.depthwise_groups = int32_t(std::min<int64_t>(p.groups, INT32_MAX));
  }
  return k;
}

SpecKey make_depthwise_spec_key(const convjit_conv_problem& p, int32_t rank, bool relu, Isa isa) {
  SpecKey k = make_spec_key(p, rank, relu, isa, false);
  k.oc_class = 0;
  k.depthwise_groups = int32_t(std::min<int64_t>(p.groups, INT32_MAX));
  return k;
}

}  // namespace convjit::jit
