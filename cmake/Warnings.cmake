# Warning-free under gcc and clang: -Wall -Wextra plus a few that catch real bugs.
# TL_WERROR turns warnings into errors. It is off in a plain `cmake` build, so that a compiler
# newer (or older) than the ones CI runs cannot stop a user's build over a new diagnostic;
# the Makefile's developer targets and CI (.ci/run) turn it on.
option(TL_WERROR "Treat compiler warnings as errors (developer builds and CI)" OFF)
set(TL_WERROR_FLAG "")
if(TL_WERROR)
  set(TL_WERROR_FLAG -Werror)
endif()
function(tl_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra ${TL_WERROR_FLAG} -Wshadow
    -Wstrict-prototypes -Wmissing-prototypes -Wvla -Wformat=2)
endfunction()
# Tests, benches and examples: the same minus -Wmissing-prototypes (their helpers are static
# or local to one file).
function(tl_set_warnings_relaxed target)
  target_compile_options(${target} PRIVATE -Wall -Wextra ${TL_WERROR_FLAG} -Wshadow -Wvla)
endfunction()
