#include "support/bad_inputs.hpp"

#include <cctype>
#include <cstring>
#include <functional>

namespace convjit::testing {
namespace {

constexpr unsigned char kSentinelByte = 0xA7;  // as float: a large negative normal number, not NaN

template <typename Dims, typename Case>
Case mutated(const Dims& base, std::string name, std::vector<std::string> words, const std::function<void(Dims&)>& f) {
  Dims d = base;
  f(d);
  return Case{std::move(name), d, std::move(words)};
}

void copy3(const Extent& from, int64_t to[3]) {
  for (int i = 0; i < 3; ++i) to[i] = from[i];
}

constexpr int64_t kHuge = int64_t(1) << 62;

}  // namespace

ConvDims valid_conv_dims() {
  ConvDims d;
  d.rank = 2;
  d.layout = Layout::NCHW;
  d.mode = Mode::CrossCorrelation;
  d.batch = 2;
  d.in_channels = 4;
  d.out_channels = 6;
  d.groups = 2;
  d.in_size = {6, 7, 1};
  d.kernel = {3, 2, 1};
  d.stride = {1, 2, 1};
  d.dilation = {1, 2, 1};
  d.pad_begin = {1, 0, 0};
  d.pad_end = {0, 1, 0};
  return d;
}

PoolDims valid_pool_dims() {
  PoolDims d;
  d.rank = 2;
  d.layout = Layout::NCHW;
  d.batch = 2;
  d.channels = 3;
  d.in_size = {6, 7, 1};
  d.window = {3, 2, 1};
  d.stride = {2, 1, 1};
  d.dilation = {1, 2, 1};
  d.pad_begin = {1, 0, 0};
  d.pad_end = {1, 1, 0};
  return d;
}

std::vector<BadConvCase> bad_conv_cases() {
  const ConvDims base = valid_conv_dims();
  std::vector<BadConvCase> cases;
  auto add = [&](std::string name, std::vector<std::string> words, std::function<void(ConvDims&)> f) {
    cases.push_back(mutated<ConvDims, BadConvCase>(base, std::move(name), std::move(words), f));
  };
  add("rank_0", {"rank"}, [](ConvDims& d) { d.rank = 0; });
  add("rank_4", {"rank"}, [](ConvDims& d) { d.rank = 4; });
  add("rank_negative", {"rank"}, [](ConvDims& d) { d.rank = -1; });
  add("layout_unknown", {"layout"}, [](ConvDims& d) { d.layout = Layout(2); });
  add("layout_negative", {"layout"}, [](ConvDims& d) { d.layout = Layout(-1); });
  add("mode_unknown", {"mode"}, [](ConvDims& d) { d.mode = Mode(2); });
  add("batch_0", {"batch"}, [](ConvDims& d) { d.batch = 0; });
  add("batch_negative", {"batch"}, [](ConvDims& d) { d.batch = -2; });
  add("in_channels_0", {"in_channels"}, [](ConvDims& d) { d.in_channels = 0; });
  add("in_channels_negative", {"in_channels"}, [](ConvDims& d) { d.in_channels = -4; });
  add("out_channels_0", {"out_channels"}, [](ConvDims& d) { d.out_channels = 0; });
  add("groups_0", {"groups"}, [](ConvDims& d) { d.groups = 0; });
  add("groups_negative", {"groups"}, [](ConvDims& d) { d.groups = -2; });
  add("in_channels_not_divisible_by_groups", {"in_channels", "groups"}, [](ConvDims& d) { d.in_channels = 5; });
  add("out_channels_not_divisible_by_groups", {"out_channels", "groups"}, [](ConvDims& d) { d.out_channels = 7; });
  add("groups_above_channels", {"groups"}, [](ConvDims& d) { d.groups = 8; });
  add("in_size_0", {"in_size[1]"}, [](ConvDims& d) { d.in_size[1] = 0; });
  add("in_size_negative", {"in_size[0]"}, [](ConvDims& d) { d.in_size[0] = -6; });
  add("kernel_0", {"kernel[1]"}, [](ConvDims& d) { d.kernel[1] = 0; });
  add("kernel_negative", {"kernel[0]"}, [](ConvDims& d) { d.kernel[0] = -3; });
  add("stride_0", {"stride[1]"}, [](ConvDims& d) { d.stride[1] = 0; });
  add("stride_negative", {"stride[0]"}, [](ConvDims& d) { d.stride[0] = -1; });
  add("dilation_0", {"dilation[0]"}, [](ConvDims& d) { d.dilation[0] = 0; });
  add("dilation_negative", {"dilation[1]"}, [](ConvDims& d) { d.dilation[1] = -2; });
  add("pad_begin_negative", {"pad_begin[0]"}, [](ConvDims& d) { d.pad_begin[0] = -1; });
  add("pad_end_negative", {"pad_end[1]"}, [](ConvDims& d) { d.pad_end[1] = -1; });
  // H: 1 + 1 + 0 = 2 < 3 = kernel.
  add("output_size_below_1", {"output size", "kernel"}, [](ConvDims& d) { d.in_size[0] = 1; });
  // W: padded 7 + 0 + 1 = 8 < 9 = the kernel of 2 dilated by 8.
  add("output_size_below_1_dilated", {"output size", "kernel"}, [](ConvDims& d) { d.dilation[1] = 8; });
  // The third entries are ignored at rank 2 but count at rank 3: in_size[2] = 1 < kernel[2] = 4.
  add("output_size_below_1_rank3", {"output size", "kernel"}, [](ConvDims& d) {
    d.rank = 3;
    d.kernel[2] = 4;
  });
  add("x_elements_overflow", {"overflow"}, [](ConvDims& d) { d.batch = kHuge; });
  add("w_elements_overflow", {"overflow"}, [](ConvDims& d) {
    d.out_channels = kHuge;
    d.groups = 1;
  });
  add("in_size_elements_overflow", {"overflow"}, [](ConvDims& d) { d.in_size[0] = kHuge; });
  add("padding_overflow", {"overflow"}, [](ConvDims& d) { d.pad_end[0] = INT64_MAX; });
  return cases;
}

std::vector<BadPoolCase> bad_pool_cases() {
  const PoolDims base = valid_pool_dims();
  std::vector<BadPoolCase> cases;
  auto add = [&](std::string name, std::vector<std::string> words, std::function<void(PoolDims&)> f) {
    cases.push_back(mutated<PoolDims, BadPoolCase>(base, std::move(name), std::move(words), f));
  };
  add("rank_0", {"rank"}, [](PoolDims& d) { d.rank = 0; });
  add("rank_4", {"rank"}, [](PoolDims& d) { d.rank = 4; });
  add("layout_unknown", {"layout"}, [](PoolDims& d) { d.layout = Layout(5); });
  add("batch_0", {"batch"}, [](PoolDims& d) { d.batch = 0; });
  add("channels_0", {"channels"}, [](PoolDims& d) { d.channels = 0; });
  add("channels_negative", {"channels"}, [](PoolDims& d) { d.channels = -3; });
  add("in_size_0", {"in_size[0]"}, [](PoolDims& d) { d.in_size[0] = 0; });
  add("window_0", {"window[1]"}, [](PoolDims& d) { d.window[1] = 0; });
  add("window_negative", {"window[0]"}, [](PoolDims& d) { d.window[0] = -2; });
  add("stride_negative", {"stride[1]"}, [](PoolDims& d) { d.stride[1] = -1; });
  add("dilation_0", {"dilation[1]"}, [](PoolDims& d) { d.dilation[1] = 0; });
  add("pad_begin_negative", {"pad_begin[1]"}, [](PoolDims& d) { d.pad_begin[1] = -2; });
  add("pad_end_negative", {"pad_end[0]"}, [](PoolDims& d) { d.pad_end[0] = -1; });
  // W: padded 2 + 0 + 1 = 3 < 5 = the window of 3 dilated by 2.
  add("output_size_below_1", {"output size", "window"}, [](PoolDims& d) {
    d.in_size[1] = 2;
    d.window[1] = 3;
  });
  add("x_elements_overflow", {"overflow"}, [](PoolDims& d) { d.channels = kHuge; });
  add("padding_overflow", {"overflow"}, [](PoolDims& d) { d.pad_begin[1] = INT64_MAX; });
  return cases;
}

convjit_conv_params c_params(const ConvDims& d) {
  convjit_conv_params p;
  std::memset(&p, 0, sizeof p);
  p.rank = d.rank;
  p.layout = int32_t(d.layout);
  p.mode = int32_t(d.mode);
  p.batch = d.batch;
  p.in_channels = d.in_channels;
  p.out_channels = d.out_channels;
  p.groups = d.groups;
  copy3(d.in_size, p.in_size);
  copy3(d.kernel, p.kernel);
  copy3(d.stride, p.stride);
  copy3(d.dilation, p.dilation);
  copy3(d.pad_begin, p.pad_begin);
  copy3(d.pad_end, p.pad_end);
  return p;
}

convjit_pool_params c_params(const PoolDims& d) {
  convjit_pool_params p;
  std::memset(&p, 0, sizeof p);
  p.rank = d.rank;
  p.layout = int32_t(d.layout);
  p.exclude_padding = d.exclude_padding ? 1 : 0;
  p.batch = d.batch;
  p.channels = d.channels;
  copy3(d.in_size, p.in_size);
  copy3(d.window, p.window);
  copy3(d.stride, p.stride);
  copy3(d.dilation, p.dilation);
  copy3(d.pad_begin, p.pad_begin);
  copy3(d.pad_end, p.pad_end);
  return p;
}

bool contains_word(const std::string& text, const std::string& word) {
  auto is_ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t pos = text.find(word); pos != std::string::npos; pos = text.find(word, pos + 1)) {
    const bool starts = pos == 0 || !is_ident(text[pos - 1]) || !is_ident(word.front());
    const size_t end = pos + word.size();
    const bool ends = end == text.size() || !is_ident(text[end]) || !is_ident(word.back());
    if (starts && ends) return true;
  }
  return false;
}

std::vector<float> sentinel_buffer(size_t n) {
  std::vector<float> v(n);
  std::memset(v.data(), kSentinelByte, n * sizeof(float));
  return v;
}

bool holds_sentinel(const std::vector<float>& buffer) {
  const unsigned char* bytes = reinterpret_cast<const unsigned char*>(buffer.data());
  for (size_t i = 0; i < buffer.size() * sizeof(float); ++i) {
    if (bytes[i] != kSentinelByte) return false;
  }
  return true;
}

}  // namespace convjit::testing
