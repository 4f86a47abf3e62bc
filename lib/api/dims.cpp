// The C++ dims types: conversions to the C structs (the one validated representation) and the
// size queries, which throw like the rest of the C++ API.
#include "convjit/dims.hpp"

#include <algorithm>

#include "convjit/error.hpp"
#include "geometry.hpp"

namespace convjit {
namespace {

void copy_extent(const Extent& from, int64_t to[3]) {
  std::copy(from.begin(), from.end(), to);
}
Extent to_extent(const int64_t from[3]) {
  return {from[0], from[1], from[2]};
}

// The spatial fields conv and pool dims share (all but the kernel or window), from the C struct.
template <typename Dims, typename Params>
void spatial_from_c(const Params& p, Dims* d) {
  d->in_size = to_extent(p.in_size);
  d->stride = to_extent(p.stride);
  d->dilation = to_extent(p.dilation);
  d->pad_begin = to_extent(p.pad_begin);
  d->pad_end = to_extent(p.pad_end);
}

detail::ConvGeometry conv_geometry_or_throw(const ConvDims& dims) {
  detail::ConvGeometry g;
  detail::Status status = detail::make_conv_geometry(dims.to_c(), &g);
  if (!status.ok()) throw Error(status.code, status.message);
  return g;
}

detail::PoolGeometry pool_geometry_or_throw(const PoolDims& dims) {
  detail::PoolGeometry g;
  detail::Status status = detail::make_pool_geometry(dims.to_c(), &g);
  if (!status.ok()) throw Error(status.code, status.message);
  return g;
}

// The normalized geometry keeps the outer (rank-missing) dims first; the public extent lists the
// `rank` real dims first, outermost first, as the inputs do.
Extent public_extent(int32_t rank, const int64_t normalized[3]) {
  Extent e{1, 1, 1};
  for (int d = 0; d < rank; ++d) e[d] = normalized[d + 3 - rank];
  return e;
}

}  // namespace

convjit_conv_params ConvDims::to_c() const {
  convjit_conv_params p{};
  p.rank = rank;
  p.layout = int32_t(layout);
  p.mode = int32_t(mode);
  p.batch = batch;
  p.in_channels = in_channels;
  p.out_channels = out_channels;
  p.groups = groups;
  copy_extent(in_size, p.in_size);
  copy_extent(kernel, p.kernel);
  copy_extent(stride, p.stride);
  copy_extent(dilation, p.dilation);
  copy_extent(pad_begin, p.pad_begin);
  copy_extent(pad_end, p.pad_end);
  return p;
}

ConvDims ConvDims::from_c(const convjit_conv_params& p) {
  ConvDims d;
  d.rank = p.rank;
  d.layout = Layout(p.layout);
  d.mode = Mode(p.mode);
  d.batch = p.batch;
  d.in_channels = p.in_channels;
  d.out_channels = p.out_channels;
  d.groups = p.groups;
  d.kernel = to_extent(p.kernel);
  spatial_from_c(p, &d);
  return d;
}

Extent ConvDims::output_size() const {
  return public_extent(rank, conv_geometry_or_throw(*this).out);
}

int64_t ConvDims::input_elements() const {
  auto g = conv_geometry_or_throw(*this);
  return g.batch * g.x.batch;
}
int64_t ConvDims::weight_elements() const {
  auto g = conv_geometry_or_throw(*this);
  return g.out_channels * g.reduction;
}
int64_t ConvDims::output_elements() const {
  auto g = conv_geometry_or_throw(*this);
  return g.batch * g.y.batch;
}

convjit_pool_params PoolDims::to_c() const {
  convjit_pool_params p{};
  p.rank = rank;
  p.layout = int32_t(layout);
  p.exclude_padding = exclude_padding ? 1 : 0;
  p.batch = batch;
  p.channels = channels;
  copy_extent(in_size, p.in_size);
  copy_extent(window, p.window);
  for (int d = 0; d < 3; ++d) p.stride[d] = stride[d] == 0 ? window[d] : stride[d];
  copy_extent(dilation, p.dilation);
  copy_extent(pad_begin, p.pad_begin);
  copy_extent(pad_end, p.pad_end);
  return p;
}

PoolDims PoolDims::from_c(const convjit_pool_params& p) {
  PoolDims d;
  d.rank = p.rank;
  d.layout = Layout(p.layout);
  d.exclude_padding = p.exclude_padding != 0;
  d.batch = p.batch;
  d.channels = p.channels;
  d.window = to_extent(p.window);
  spatial_from_c(p, &d);
  return d;
}

Extent PoolDims::output_size() const {
  return public_extent(rank, pool_geometry_or_throw(*this).out);
}

int64_t PoolDims::input_elements() const {
  auto g = pool_geometry_or_throw(*this);
  return g.batch * g.x.batch;
}
int64_t PoolDims::output_elements() const {
  auto g = pool_geometry_or_throw(*this);
  return g.batch * g.y.batch;
}

}  // namespace convjit
