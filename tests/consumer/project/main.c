/* A program that uses tenlane the way an outside project would: only the installed public
 * headers and the installed library. It creates a context, prints the name of one status
 * and destroys the context; check.sh builds it against an installed copy every supported
 * way and compares its output with "consumer: TL_E_BUSY". */
#include <stdio.h>

#include <tenlane/context.h>
#include <tenlane/status.h>

int main(void) {
  tl_context_config config;
  tl_context_config_init(&config);
  config.threads = 2;
  tl_context *ctx = NULL;
  tl_status status = tl_context_create(&config, &ctx);
  if (status != TL_OK) {
    fprintf(stderr, "consumer: tl_context_create failed: %s (%s)\n", tl_status_name(status),
            tl_last_message());
    return 1;
  }
  printf("consumer: %s\n", tl_status_name(TL_E_BUSY));
  status = tl_context_destroy(ctx);
  if (status != TL_OK) {
    fprintf(stderr, "consumer: tl_context_destroy failed: %s (%s)\n", tl_status_name(status),
            tl_last_message());
    return 1;
  }
  return 0;
}
