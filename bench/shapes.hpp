// The benchmark shapes of shapes.json, and the dense buffers the comparisons run on.
#pragma once

#include <array>
#include <convjit/convjit.hpp>
#include <convjit/runtime.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace convjit_bench {

using Ext3 = std::array<int64_t, 3>;

// Spatial entries are outermost first, as in the JSON and in convjit::ConvDims: only the first
// `rank` entries are meaningful. The *3 helpers give a (D, H, W) view with the absent leading
// dims set to a neutral value (size 1, kernel 1, stride 1, pad 0, dilation 1), so one 3D loop
// serves ranks 1 to 3.
struct ConvShape {
  std::string name;
  int rank = 2;
  int64_t n = 1, ic = 1, oc = 1, groups = 1;
  Ext3 in{1, 1, 1}, k{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0}, dilation{1, 1, 1};

  convjit::ConvDims dims(convjit::Layout layout, convjit::Mode mode = convjit::Mode::CrossCorrelation) const;
  Ext3 out() const;  // first `rank` entries

  Ext3 in3() const { return lift(in, 1); }
  Ext3 k3() const { return lift(k, 1); }
  Ext3 stride3() const { return lift(stride, 1); }
  Ext3 pad3() const { return lift(pad, 0); }
  Ext3 dilation3() const { return lift(dilation, 1); }
  Ext3 out3() const { return lift(out(), 1); }

  int64_t in_spatial() const;
  int64_t out_spatial() const;
  int64_t k_spatial() const;
  int64_t x_elements() const { return n * ic * in_spatial(); }
  int64_t w_elements() const { return oc * (ic / groups) * k_spatial(); }
  int64_t y_elements() const { return n * oc * out_spatial(); }
  // 2 * n * oc * prod(out) * (ic / groups) * prod(k)
  double flops() const;

  Ext3 lift(const Ext3& a, int64_t fill) const;
};

struct PoolShape {
  std::string name;
  std::string op;  // "max" or "mean"
  int rank = 2;
  int64_t n = 1, c = 1;
  Ext3 in{1, 1, 1}, window{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0};

  convjit::PoolDims dims(convjit::Layout layout) const;
  Ext3 out() const;
  Ext3 lift(const Ext3& a, int64_t fill) const;
  int64_t in_spatial() const;
  int64_t out_spatial() const;
  int64_t x_elements() const { return n * c * in_spatial(); }
  int64_t y_elements() const { return n * c * out_spatial(); }
};

struct ShapeSet {
  std::vector<ConvShape> conv;
  std::vector<PoolShape> pool;
};

// The shapes of the file at `path`, or with an empty path those of bench/shapes.json as it was at
// build time (built into the program, so an installed tool needs no source tree). Throws
// std::runtime_error with the path and the reason.
ShapeSet load_shapes(const std::string& path);
// What load_shapes(path) reads, for messages: the path, or the built-in list's name.
std::string shapes_origin(const std::string& path);

// A 64-byte aligned float buffer (what a careful user allocates; std::vector only promises 16).
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(std::size_t count);
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  std::size_t size() const { return size_; }
  float& operator[](std::size_t i) { return data_[i]; }
  float operator[](std::size_t i) const { return data_[i]; }

 private:
  struct Free {
    void operator()(float* p) const;
  };
  std::unique_ptr<float[], Free> data_;
  std::size_t size_ = 0;
};

// Uniform in [-1, 1), deterministic in `seed`.
void fill_random(Buffer& b, uint64_t seed);
uint64_t seed_of(const std::string& text);
// Every field that makes a problem (entries beyond rank ignored).
bool same_dims(const convjit::ConvDims& a, const convjit::ConvDims& b);
// What the runtime ran pooling `dims` with, for a benchmark's label: the kernel's name, or the
// configuration's state ("declined", ...) when it runs generic, or "?".
std::string pool_runtime_label(convjit::Runtime& rt, convjit::Op op, const convjit::PoolDims& dims);

}  // namespace convjit_bench
