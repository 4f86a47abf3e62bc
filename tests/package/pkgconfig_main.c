/* Built with only `pkg-config --cflags --libs convjit`: the installed header compiles as C and
 * the installed library links and runs. x = [1 2 3], w = [1 -1]: y = [1-2, 2-3] = [-1 -1]. */
#include <convjit/convjit.h>

#include <stdio.h>
#include <string.h>

int main(void) {
  convjit_conv_params p;
  const float x[3] = {1, 2, 3}, w[2] = {1, -1};
  float y[2] = {0, 0};
  memset(&p, 0, sizeof p);
  p.rank = 1;
  p.batch = p.in_channels = p.out_channels = p.groups = 1;
  p.in_size[0] = 3;
  p.kernel[0] = 2;
  p.stride[0] = 1;
  p.dilation[0] = 1;
  if (convjit_conv_forward(&p, x, w, NULL, CONVJIT_ACT_IDENTITY, y) != CONVJIT_OK) {
    fprintf(stderr, "conv failed: %s\n", convjit_last_error());
    return 1;
  }
  if (y[0] != -1.0f || y[1] != -1.0f) {
    fprintf(stderr, "wrong result: %g %g\n", y[0], y[1]);
    return 1;
  }
  printf("pkg-config consumer: ok\n");
  return 0;
}
