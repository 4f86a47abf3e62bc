/* The C ABI from a C99 translation unit linked against the shared library: the header compiles
 * as C, and a conv, a pool and an error behave as the contract says. Expected values are worked
 * out by hand in the comments. Exits non-zero on the first failure. */
#include <convjit/convjit.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond)                                                    \
  do {                                                                 \
    if (!(cond)) {                                                     \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                      \
    }                                                                  \
  } while (0)

static int close_to(float got, double want) { return fabs((double)got - want) <= 1e-5 * (1.0 + fabs(want)); }

static void conv_1d(void) {
  /* x = [1 2 3 4], w = [1 2], cross-correlation: y[i] = x[i] + 2 x[i+1] = [5 8 11];
   * bias -6 and relu: [-1 2 5] -> [0 2 5]. Convolution flips w: y[i] = 2 x[i] + x[i+1] = [4 7 10]. */
  convjit_conv_params p;
  const float x[4] = {1, 2, 3, 4}, w[2] = {1, 2}, bias[1] = {-6};
  float y[3] = {NAN, NAN, NAN};
  int64_t size[3] = {0, 0, 0};
  int i;
  memset(&p, 0, sizeof p);
  p.rank = 1;
  p.layout = CONVJIT_NCHW;
  p.mode = CONVJIT_CROSS_CORRELATION;
  p.batch = p.in_channels = p.out_channels = p.groups = 1;
  p.in_size[0] = 4;
  p.kernel[0] = 2;
  p.stride[0] = 1;
  p.dilation[0] = 1;

  CHECK(convjit_conv_output_size(&p, size) == CONVJIT_OK);
  CHECK(size[0] == 3);
  CHECK(convjit_conv_forward(&p, x, w, NULL, CONVJIT_ACT_IDENTITY, y) == CONVJIT_OK);
  CHECK(close_to(y[0], 5) && close_to(y[1], 8) && close_to(y[2], 11));
  CHECK(convjit_conv_forward(&p, x, w, bias, CONVJIT_ACT_RELU, y) == CONVJIT_OK);
  CHECK(close_to(y[0], 0) && close_to(y[1], 2) && close_to(y[2], 5));
  p.mode = CONVJIT_CONVOLUTION;
  CHECK(convjit_conv_forward(&p, x, w, NULL, CONVJIT_ACT_IDENTITY, y) == CONVJIT_OK);
  CHECK(close_to(y[0], 4) && close_to(y[1], 7) && close_to(y[2], 10));

  /* Backward, cross-correlation, dy = [1 10 100]:
   * dx = [1*1, 1*2 + 10*1, 10*2 + 100*1, 100*2] = [1 12 120 200]
   * dw0 = 1*1 + 10*2 + 100*3 = 321,  dw1 = 1*2 + 10*3 + 100*4 = 432 */
  {
    const float dy[3] = {1, 10, 100};
    float dx[4], dw[2];
    for (i = 0; i < 4; ++i) dx[i] = NAN;
    dw[0] = dw[1] = NAN;
    p.mode = CONVJIT_CROSS_CORRELATION;
    CHECK(convjit_conv_backward_data(&p, dy, w, dx) == CONVJIT_OK);
    CHECK(close_to(dx[0], 1) && close_to(dx[1], 12) && close_to(dx[2], 120) && close_to(dx[3], 200));
    CHECK(convjit_conv_backward_filter(&p, x, dy, dw) == CONVJIT_OK);
    CHECK(close_to(dw[0], 321) && close_to(dw[1], 432));
  }
}

static void pool_2d(void) {
  /* 2x2 max pooling, stride 2, of
   *   [ 1  2  5  3]
   *   [ 4  0  1  1]   -> y = [4 5 -1 9]
   *   [-1 -2  7  8]
   *   [-3 -4  6  9]
   * mean (window 4): [(1+2+4+0)/4, (5+3+1+1)/4, (-1-2-3-4)/4, (7+8+6+9)/4] = [1.75 2.5 -2.5 7.5] */
  convjit_pool_params p;
  const float x[16] = {1, 2, 5, 3, 4, 0, 1, 1, -1, -2, 7, 8, -3, -4, 6, 9};
  float y[4] = {NAN, NAN, NAN, NAN};
  int64_t size[3] = {0, 0, 0};
  memset(&p, 0, sizeof p);
  p.rank = 2;
  p.layout = CONVJIT_NCHW;
  p.batch = p.channels = 1;
  p.in_size[0] = p.in_size[1] = 4;
  p.window[0] = p.window[1] = 2;
  p.stride[0] = p.stride[1] = 2;
  p.dilation[0] = p.dilation[1] = 1;
  CHECK(convjit_pool_output_size(&p, size) == CONVJIT_OK);
  CHECK(size[0] == 2 && size[1] == 2);
  CHECK(convjit_maxpool_forward(&p, x, y) == CONVJIT_OK);
  CHECK(y[0] == 4 && y[1] == 5 && y[2] == -1 && y[3] == 9);
  CHECK(convjit_meanpool_forward(&p, x, y) == CONVJIT_OK);
  CHECK(close_to(y[0], 1.75) && close_to(y[1], 2.5) && close_to(y[2], -2.5) && close_to(y[3], 7.5));
  {
    /* max backward: dy = [1 2 3 4] lands on the maxima at flat 4, 2, 8, 15 */
    const float ymax[4] = {4, 5, -1, 9}, dy[4] = {1, 2, 3, 4};
    float dx[16];
    int i;
    for (i = 0; i < 16; ++i) dx[i] = NAN;
    CHECK(convjit_maxpool_backward(&p, x, ymax, dy, dx) == CONVJIT_OK);
    for (i = 0; i < 16; ++i) {
      const float want = i == 4 ? 1.0f : i == 2 ? 2.0f : i == 8 ? 3.0f : i == 15 ? 4.0f : 0.0f;
      CHECK(dx[i] == want);
    }
  }
  /* A window of padding only yields -FLT_MAX: pad_begin 2 on H gives windows at rows -2..-1. */
  p.pad_begin[0] = 2;
  CHECK(convjit_pool_output_size(&p, size) == CONVJIT_OK);
  CHECK(size[0] == 3 && size[1] == 2);
  {
    float y6[6];
    CHECK(convjit_maxpool_forward(&p, x, y6) == CONVJIT_OK);
    CHECK(y6[0] == -FLT_MAX && y6[1] == -FLT_MAX && y6[2] == 4 && y6[5] == 9);
  }
}

static void errors(void) {
  /* stride 0 is invalid in the C ABI; nothing is written and the message names the field. */
  convjit_conv_params p;
  const float x[4] = {1, 2, 3, 4}, w[2] = {1, 2};
  float y[3] = {42, 42, 42};
  convjit_status status;
  const char* message;
  memset(&p, 0, sizeof p);
  p.rank = 1;
  p.batch = p.in_channels = p.out_channels = p.groups = 1;
  p.in_size[0] = 4;
  p.kernel[0] = 2;
  p.stride[0] = 0;
  p.dilation[0] = 1;
  status = convjit_conv_forward(&p, x, w, NULL, CONVJIT_ACT_IDENTITY, y);
  CHECK(status == CONVJIT_EINVAL);
  message = convjit_last_error();
  CHECK(message != NULL && strstr(message, "stride") != NULL);
  CHECK(y[0] == 42 && y[1] == 42 && y[2] == 42);
  if (message != NULL) printf("expected error: %s\n", message);

  p.stride[0] = 1;
  p.groups = 2; /* 1 channel is not divisible by 2 groups */
  CHECK(convjit_conv_forward(&p, x, w, NULL, CONVJIT_ACT_IDENTITY, y) == CONVJIT_EINVAL);
  message = convjit_last_error();
  CHECK(message != NULL && strstr(message, "groups") != NULL);

  p.groups = 1;
  CHECK(convjit_conv_forward(&p, NULL, w, NULL, CONVJIT_ACT_IDENTITY, y) == CONVJIT_EINVAL);
  CHECK(convjit_conv_forward(&p, x, w, NULL, 9, y) == CONVJIT_EINVAL);
  CHECK(y[0] == 42 && y[1] == 42 && y[2] == 42);
  CHECK(convjit_set_num_threads(-1) == CONVJIT_EINVAL);
  CHECK(convjit_get_num_threads() >= 1);
}

int main(void) {
  conv_1d();
  pool_2d();
  errors();
  if (failures != 0) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("c_api_test: all checks passed\n");
  return 0;
}
