/* A program that links a static libtenlane.a and brings its own BLAS (own_blas.c, archived
 * after tenlane on the link line). It uses tenlane, then calls dgemm_: the call must reach
 * its own dgemm_, not one defined inside libtenlane.a (the archive exports tl_ names only).
 * Prints "own blas: dgemm_ called 1 time(s), C = 11" when it did. */
#include <stdio.h>

#include <tenlane/context.h>
#include <tenlane/status.h>

#include "own_blas.h"

int main(void) {
  tl_context_config config;
  tl_context_config_init(&config);
  config.threads = 1;
  tl_context *ctx = NULL;
  if (tl_context_create(&config, &ctx) != TL_OK) {
    fprintf(stderr, "own blas: tl_context_create failed: %s\n", tl_last_message());
    return 1;
  }
  const int one = 1, two = 2;
  const double alpha = 1.0, beta = 0.0, a[2] = {1.0, 2.0}, b[2] = {3.0, 4.0};
  double c = -1.0;
  dgemm_("N", "N", &one, &one, &two, &alpha, a, &one, b, &two, &beta, &c, &one);
  printf("own blas: dgemm_ called %d time(s), C = %g\n", own_dgemm_calls, c);
  if (tl_context_destroy(ctx) != TL_OK) return 1;
  return own_dgemm_calls == 1 && c == 11.0 ? 0 : 1;
}
