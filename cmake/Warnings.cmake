# Warning-free under gcc and clang: -Wall -Wextra -Werror plus a few that catch real bugs.
function(tl_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
    -Wmissing-prototypes -Wvla -Wformat=2)
endfunction()
# Tests, benches and examples: the same minus -Wmissing-prototypes (their helpers are static
# or local to one file).
function(tl_set_warnings_relaxed target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Werror -Wshadow -Wvla)
endfunction()
