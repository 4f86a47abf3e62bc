#include "support/hand_cases.hpp"

#include <cfloat>
#include <limits>

namespace convjit::testing {
namespace {

ConvDims conv1d(int64_t in, int64_t k, Layout layout = Layout::NCHW, Mode mode = Mode::CrossCorrelation) {
  ConvDims d;
  d.rank = 1;
  d.layout = layout;
  d.mode = mode;
  d.in_size = {in, 1, 1};
  d.kernel = {k, 1, 1};
  return d;
}

PoolDims pool1d(int64_t in, int64_t window, int64_t stride) {
  PoolDims d;
  d.rank = 1;
  d.in_size = {in, 1, 1};
  d.window = {window, 1, 1};
  d.stride = {stride, 0, 0};
  return d;
}

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

}  // namespace

std::vector<ConvForwardCase> conv_forward_hand_cases() {
  std::vector<ConvForwardCase> cases;

  // x = [1 2 3 4], w = [1 2]; cross-correlation: y[i] = x[i]*1 + x[i+1]*2
  //   y = [1+4, 2+6, 3+8] = [5 8 11]
  cases.push_back({"1d_k2_xcorr", conv1d(4, 2), {1, 2, 3, 4}, {1, 2}, {}, Activation::Identity, {5, 8, 11}});

  // Same data, convolution: the kernel is read flipped, y[i] = x[i]*2 + x[i+1]*1
  //   y = [2+2, 4+3, 6+4] = [4 7 10]
  cases.push_back({"1d_k2_convolution_flips",
                   conv1d(4, 2, Layout::NCHW, Mode::Convolution),
                   {1, 2, 3, 4},
                   {1, 2},
                   {},
                   Activation::Identity,
                   {4, 7, 10}});

  // Stride 2, padding 1 on both sides: padded x = [0 1 2 3 4 0], out = (4+2-1-1)/2+1 = 3
  //   y0 = 0*1 + 1*2 = 2, y1 = 2*1 + 3*2 = 8, y2 = 4*1 + 0*2 = 4
  {
    ConvDims d = conv1d(4, 2);
    d.stride = {2, 1, 1};
    d.pad_begin = {1, 0, 0};
    d.pad_end = {1, 0, 0};
    cases.push_back({"1d_stride2_pad1", d, {1, 2, 3, 4}, {1, 2}, {}, Activation::Identity, {2, 8, 4}});
  }

  // Bias -6 then relu: [5 8 11] - 6 = [-1 2 5] -> [0 2 5]
  cases.push_back({"1d_bias_relu", conv1d(4, 2), {1, 2, 3, 4}, {1, 2}, {-6}, Activation::Relu, {0, 2, 5}});

  // Dilation 2, w = [1 1]: y[i] = x[i] + x[i+2] over x = [1 2 3 4 5]; out = 5 - 2 = 3
  //   y = [1+3, 2+4, 3+5] = [4 6 8]
  {
    ConvDims d = conv1d(5, 2);
    d.dilation = {2, 1, 1};
    cases.push_back({"1d_dilation2", d, {1, 2, 3, 4, 5}, {1, 1}, {}, Activation::Identity, {4, 6, 8}});
  }

  // Input 1, kernel 1, padding 1/1: out = 3, the outer two see only padding.
  //   y = [0 + 0.5, 1*2 + 0.5, 0 + 0.5]
  {
    ConvDims d = conv1d(1, 1);
    d.pad_begin = {1, 0, 0};
    d.pad_end = {1, 0, 0};
    cases.push_back({"1d_padding_only_outputs", d, {1}, {2}, {0.5f}, Activation::Identity, {0.5, 2.5, 0.5}});
  }

  // 2D, x = [[1 2 3] [4 5 6] [7 8 9]], w = [[1 2] [3 4]], cross-correlation:
  //   y00 = 1*1 + 2*2 + 4*3 + 5*4 = 37    y01 = 2*1 + 3*2 + 5*3 + 6*4 = 47
  //   y10 = 4*1 + 5*2 + 7*3 + 8*4 = 67    y11 = 5*1 + 6*2 + 8*3 + 9*4 = 77
  ConvDims d2;
  d2.rank = 2;
  d2.in_size = {3, 3, 1};
  d2.kernel = {2, 2, 1};
  cases.push_back({"2d_3x3_by_2x2_xcorr", d2, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 2, 3, 4}, {}, Activation::Identity,
                   {37, 47, 67, 77}});

  // Convolution flips both dims: effective kernel [[4 3] [2 1]]
  //   y00 = 1*4 + 2*3 + 4*2 + 5*1 = 23    y01 = 2*4 + 3*3 + 5*2 + 6*1 = 33
  //   y10 = 4*4 + 5*3 + 7*2 + 8*1 = 53    y11 = 5*4 + 6*3 + 8*2 + 9*1 = 63
  d2.mode = Mode::Convolution;
  cases.push_back({"2d_3x3_by_2x2_convolution_flips_both_dims", d2, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 2, 3, 4}, {},
                   Activation::Identity, {23, 33, 53, 63}});

  // 2 -> 1 channels, kernel 2, one output: y = sum over (tap k, channel i) of w(k,i) * x(k,i)
  // with x(k,i) = {1,2;3,4} (rows k) and w(k,i) = {1,10;100,1000}: 1 + 20 + 300 + 4000 = 4321.
  // NWC stores x as [x(0,0) x(0,1) x(1,0) x(1,1)] and OWI stores w as [w(0,0) w(0,1) w(1,0) w(1,1)];
  // NCW stores x as [x(0,0) x(1,0) x(0,1) x(1,1)] and OIW stores w as [w(0,0) w(1,0) w(0,1) w(1,1)].
  {
    ConvDims d = conv1d(2, 2, Layout::NHWC);
    d.in_channels = 2;
    cases.push_back({"1d_nhwc_ohwi_order", d, {1, 2, 3, 4}, {1, 10, 100, 1000}, {}, Activation::Identity, {4321}});
    d.layout = Layout::NCHW;
    cases.push_back({"1d_nchw_oihw_order", d, {1, 3, 2, 4}, {1, 100, 10, 1000}, {}, Activation::Identity, {4321}});
  }

  // Groups 2, NWC, kernel 1: channel 0 = [1 2] scaled by 3, channel 1 = [5 7] scaled by -1.
  //   x (NWC) = [1 5 2 7]  ->  y (NWC) = [3 -5 6 -7]
  {
    ConvDims d = conv1d(2, 1, Layout::NHWC);
    d.in_channels = d.out_channels = d.groups = 2;
    cases.push_back({"1d_groups2_nhwc", d, {1, 5, 2, 7}, {3, -1}, {}, Activation::Identity, {3, -5, 6, -7}});
  }

  // Depthwise with multiplier 2: channels 2 -> 4, groups 2, kernel 1, w = [1 2 3 4].
  // Outputs 0,1 read channel 0 = [1 1]; outputs 2,3 read channel 1 = [10 10].
  //   y (NCW) = [1 1 | 2 2 | 30 30 | 40 40]
  {
    ConvDims d = conv1d(2, 1);
    d.in_channels = 2;
    d.groups = 2;
    d.out_channels = 4;
    cases.push_back({"1d_depthwise_multiplier2", d, {1, 1, 10, 10}, {1, 2, 3, 4}, {}, Activation::Identity,
                     {1, 1, 2, 2, 30, 30, 40, 40}});
  }

  // 3D, x = 1..8 over a 2x2x2 cube, kernel 2x2x2 with w(0,0,0) = 1, w(1,1,1) = 2, else 0:
  //   cross-correlation: 1*x(0,0,0) + 2*x(1,1,1) = 1 + 16 = 17
  //   convolution reads w(1-k): 2*x(0,0,0) + 1*x(1,1,1) = 2 + 8 = 10
  {
    ConvDims d;
    d.rank = 3;
    d.in_size = {2, 2, 2};
    d.kernel = {2, 2, 2};
    const std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
    const std::vector<float> w = {1, 0, 0, 0, 0, 0, 0, 2};
    cases.push_back({"3d_xcorr", d, x, w, {}, Activation::Identity, {17}});
    d.mode = Mode::Convolution;
    cases.push_back({"3d_convolution_flips_all_dims", d, x, w, {}, Activation::Identity, {10}});
  }
  return cases;
}

std::vector<ConvBackwardCase> conv_backward_hand_cases() {
  std::vector<ConvBackwardCase> cases;

  // y[i] = w0*x[i] + w1*x[i+1], x = [1 2 3], w = [1 2], dy = [1 10]
  //   dx = [dy0*w0, dy0*w1 + dy1*w0, dy1*w1] = [1, 2+10, 20] = [1 12 20]
  //   dw0 = dy0*x0 + dy1*x1 = 1 + 20 = 21,  dw1 = dy0*x1 + dy1*x2 = 2 + 30 = 32
  cases.push_back({"1d_k2_xcorr", conv1d(3, 2), {1, 2, 3}, {1, 2}, {1, 10}, {1, 12, 20}, {21, 32}});

  // Convolution: y[i] = w1*x[i] + w0*x[i+1]
  //   dx = [dy0*w1, dy0*w0 + dy1*w1, dy1*w0] = [2, 1+20, 10] = [2 21 10]
  //   dw0 = dy0*x1 + dy1*x2 = 2 + 30 = 32,  dw1 = dy0*x0 + dy1*x1 = 1 + 20 = 21
  cases.push_back({"1d_k2_convolution", conv1d(3, 2, Layout::NCHW, Mode::Convolution), {1, 2, 3}, {1, 2}, {1, 10},
                   {2, 21, 10}, {32, 21}});

  // Stride 2, padding 1/1, x = [1 2 3 4], w = [1 2], out 3:
  //   y0 = w0*pad + w1*x0, y1 = w0*x1 + w1*x2, y2 = w0*x3 + w1*pad;  dy = [1 2 3]
  //   dx = [dy0*w1, dy1*w0, dy1*w1, dy2*w0] = [2 2 4 3]
  //   dw0 = dy1*x1 + dy2*x3 = 4 + 12 = 16,  dw1 = dy0*x0 + dy1*x2 = 1 + 6 = 7
  {
    ConvDims d = conv1d(4, 2);
    d.stride = {2, 1, 1};
    d.pad_begin = {1, 0, 0};
    d.pad_end = {1, 0, 0};
    cases.push_back({"1d_stride2_pad1", d, {1, 2, 3, 4}, {1, 2}, {1, 2, 3}, {2, 2, 4, 3}, {16, 7}});
  }

  // The 2 -> 1 channel NWC case of the forward: y = sum w(k,i) x(k,i), dy = [2]
  //   dx(k,i) = 2*w(k,i) = [2 20 200 2000],  dw(k,i) = 2*x(k,i) = [2 4 6 8]  (both in NWC/OWI order)
  {
    ConvDims d = conv1d(2, 2, Layout::NHWC);
    d.in_channels = 2;
    cases.push_back(
        {"1d_nhwc_two_channels", d, {1, 2, 3, 4}, {1, 10, 100, 1000}, {2}, {2, 20, 200, 2000}, {2, 4, 6, 8}});
  }

  // Depthwise multiplier 2 (channels 2 -> 4, kernel 1), x = [1 2 | 3 4] (NCW), w = [1 2 3 4],
  // dy = [1 1 | 1 0 | 0 1 | 2 2]:
  //   dx(c0) = w0*dy(o0) + w1*dy(o1) = [1+2, 1+0] = [3 1]
  //   dx(c1) = w2*dy(o2) + w3*dy(o3) = [0+8, 3+8] = [8 11]
  //   dw(o) = sum_w x(c(o)) dy(o): o0 = 1+2 = 3, o1 = 1, o2 = 4, o3 = 6+8 = 14
  {
    ConvDims d = conv1d(2, 1);
    d.in_channels = 2;
    d.groups = 2;
    d.out_channels = 4;
    cases.push_back({"1d_depthwise_multiplier2", d, {1, 2, 3, 4}, {1, 2, 3, 4}, {1, 1, 1, 0, 0, 1, 2, 2},
                     {3, 1, 8, 11}, {3, 1, 4, 14}});
  }
  return cases;
}

std::vector<PoolCase> pool_hand_cases() {
  std::vector<PoolCase> cases;

  // 2x2 max pooling of a 4x4 image (stride defaults to the window):
  //   [ 1  2 |  5  3]
  //   [ 4  0 |  1  1]    y = [[4 5] [-1 9]]
  //   [-1 -2 |  7  8]    dy = [1 2 3 4] goes to the maxima at flat indices 4, 2, 8, 15
  //   [-3 -4 |  6  9]
  {
    PoolDims d;
    d.in_size = {4, 4, 1};
    d.window = {2, 2, 1};
    cases.push_back({"2d_max_2x2",
                     PoolOp::Max,
                     d,
                     0,
                     {1, 2, 5, 3, 4, 0, 1, 1, -1, -2, 7, 8, -3, -4, 6, 9},
                     {4, 5, -1, 9},
                     {1, 2, 3, 4},
                     {0, 0, 2, 0, 1, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 4}});
  }

  // Ties: the gradient goes to the first equal tap in row-major scan order.
  //   [[3 3] [3 1]] -> y = 3, dx = [5 0 0 0];   [[1 3] [3 0]] -> y = 3, dx = [0 5 0 0]
  {
    PoolDims d;
    d.in_size = {2, 2, 1};
    d.window = {2, 2, 1};
    cases.push_back({"2d_max_tie_first_tap", PoolOp::Max, d, 0, {3, 3, 3, 1}, {3}, {5}, {5, 0, 0, 0}});
    cases.push_back({"2d_max_tie_row_major", PoolOp::Max, d, 0, {1, 3, 3, 0}, {3}, {5}, {0, 5, 0, 0}});
  }

  // Overlapping windows accumulate: x = [1 5 2], window 2, stride 1: y = [5 5];
  // dy = [1 2] both go to x1: dx = [0 3 0]
  cases.push_back({"1d_max_overlap_accumulates", PoolOp::Max, pool1d(3, 2, 1), 0, {1, 5, 2}, {5, 5}, {1, 2},
                   {0, 3, 0}});

  // A window of padding only: x = [1], window 1, pad_begin 1: out = 2, y = [-FLT_MAX 1];
  // the padding window routes nothing: dy = [7 1] -> dx = [1]
  {
    PoolDims d = pool1d(1, 1, 1);
    d.pad_begin = {1, 0, 0};
    cases.push_back({"1d_max_padding_only_window", PoolOp::Max, d, 0, {1}, {-double(FLT_MAX), 1}, {7, 1}, {1}});
  }

  // NaN is ignored unless every tap is NaN: x = [NaN 2 | NaN NaN], window 2 -> y = [2 NaN]
  cases.push_back({"1d_max_nan_rules", PoolOp::Max, pool1d(4, 2, 2), 0, {kNaN, 2, kNaN, kNaN},
                   {2, std::numeric_limits<double>::quiet_NaN()}, {}, {}});

  // Dilation 2 on 3x3, window 2x2: one window with taps (0,0) (0,2) (2,0) (2,2) = {1 2 3 4};
  // the 9s between them are skipped. y = 4; dy = [1] -> dx at flat index 8.
  {
    PoolDims d;
    d.in_size = {3, 3, 1};
    d.window = {2, 2, 1};
    d.dilation = {2, 2, 1};
    cases.push_back(
        {"2d_max_dilation2", PoolOp::Max, d, 0, {1, 9, 2, 9, 9, 9, 3, 9, 4}, {4}, {1}, {0, 0, 0, 0, 0, 0, 0, 0, 1}});
  }

  // Channels-last, 2 channels: x (NWC) = [1 -5 3 -2], window 2 -> y (NWC) = [max(1,3) max(-5,-2)] = [3 -2];
  // dy = [1 2] -> dx = [0 0 1 2]
  {
    PoolDims d = pool1d(2, 2, 2);
    d.layout = Layout::NHWC;
    d.channels = 2;
    cases.push_back({"1d_max_nhwc", PoolOp::Max, d, 0, {1, -5, 3, -2}, {3, -2}, {1, 2}, {0, 0, 1, 2}});
  }

  // Mean, window 2, stride 2, padding 1/1 over x = [1 2 3 4]: windows [pad 1] [2 3] [4 pad]
  //   padding counted as zeros: y = [1/2, 5/2, 4/2] = [0.5 2.5 2];  dy = [1 1 1] -> dx = [0.5 0.5 0.5 0.5]
  //   exclude_padding:          y = [1/1, 5/2, 4/1] = [1 2.5 4];    dy = [1 1 1] -> dx = [1 0.5 0.5 1]
  {
    PoolDims d = pool1d(4, 2, 2);
    d.pad_begin = {1, 0, 0};
    d.pad_end = {1, 0, 0};
    cases.push_back({"1d_mean_padding_counts", PoolOp::Mean, d, 0, {1, 2, 3, 4}, {0.5, 2.5, 2}, {1, 1, 1},
                     {0.5, 0.5, 0.5, 0.5}});
    d.exclude_padding = true;
    cases.push_back({"1d_mean_exclude_padding", PoolOp::Mean, d, 0, {1, 2, 3, 4}, {1, 2.5, 4}, {1, 1, 1},
                     {1, 0.5, 0.5, 1}});
  }

  // 3D mean over a 2x2x2 cube of 1..8: y = 36/8 = 4.5; dy = [8] -> dx = 8/8 = 1 everywhere
  {
    PoolDims d;
    d.rank = 3;
    d.in_size = {2, 2, 2};
    d.window = {2, 2, 2};
    cases.push_back({"3d_mean", PoolOp::Mean, d, 0, {1, 2, 3, 4, 5, 6, 7, 8}, {4.5}, {8},
                     {1, 1, 1, 1, 1, 1, 1, 1}});
  }

  // L2: x = [3 -4] -> y = sqrt(9 + 16) = 5; dy = [1]: dx = x * |x|^0 ... = x / y = [0.6 -0.8]
  cases.push_back({"1d_lp2", PoolOp::LpNorm, pool1d(2, 2, 2), 2.0f, {3, -4}, {5}, {1}, {0.6, -0.8}});

  // L1: x = [3 -4 | 0 2] -> y = [7 2]; dy = [1 1]: dx = sign(x) = [1 -1 0 1]
  cases.push_back({"1d_lp1", PoolOp::LpNorm, pool1d(4, 2, 2), 1.0f, {3, -4, 0, 2}, {7, 2}, {1, 1}, {1, -1, 0, 1}});

  // L3 with padding: x = [2], window 2, pad_end 1: y = (|2|^3)^(1/3) = 2;
  // dy = [3]: dx = 3 * |2|^2 * 1 / 2^2 = 3
  {
    PoolDims d = pool1d(1, 2, 1);
    d.pad_end = {1, 0, 0};
    cases.push_back({"1d_lp3_padded", PoolOp::LpNorm, d, 3.0f, {2}, {2}, {3}, {3}});
  }
  return cases;
}

}  // namespace convjit::testing
