# The hot kernel files are compiled at -O3 whatever the build type (Debug, RelWithDebInfo
# and Release alike), with gcc only: these are the inner loops of GEMM, permute, reduce,
# elementwise and the small linear-algebra kernels, where gcc's -O3 vectorizer and loop
# unrolling pay; clang is left at the build type's level, as it was. The flag comes after
# the build type's own -O on the command line, so it is the one that counts. (Until
# 2026-12-04 each of these files said `#pragma GCC optimize("O3")` instead; GCC documents
# the optimize pragma and attribute as a debugging aid, not for production code.)
set(TL_HOT_SOURCES
  src/kernels/blis_level1.c
  src/kernels/contract_vertical.c
  src/kernels/convert.c
  src/kernels/elementwise_core.c
  src/kernels/gemm_batch_small.c
  src/kernels/gemm_packed_complex.c
  src/kernels/gemm_small_complex.c
  src/kernels/gemm_tiny_nk.c
  src/kernels/gemm_thin_core.c
  src/kernels/gemm_thin_short.c
  src/kernels/permute_core.c
  src/kernels/permute_group.c
  src/kernels/reduce_core.c
  src/kernels/reduce_sums.c
  src/kernels/small_gemm_core.c
  src/linalg/gemm_narrow.c
  src/linalg/gemv.c
  src/linalg/ger.c
  src/linalg/getrf.c
  src/linalg/matrix.c) # the finiteness scan of every input (all_finite) vectorizes at -O3
# small_gemm_core.c: no second copy of every k loop for B's rows at unit stride (it runs
# no faster).
set(TL_HOT_SOURCES_NO_VERSIONING src/kernels/small_gemm_core.c)
if(CMAKE_C_COMPILER_ID STREQUAL "GNU")
  list(TRANSFORM TL_HOT_SOURCES PREPEND ${PROJECT_SOURCE_DIR}/)
  list(TRANSFORM TL_HOT_SOURCES_NO_VERSIONING PREPEND ${PROJECT_SOURCE_DIR}/)
  set_source_files_properties(${TL_HOT_SOURCES} TARGET_DIRECTORY tenlane_objects
    PROPERTIES COMPILE_OPTIONS -O3)
  set_property(SOURCE ${TL_HOT_SOURCES_NO_VERSIONING} TARGET_DIRECTORY tenlane_objects
    APPEND PROPERTY COMPILE_OPTIONS -fno-version-loops-for-strides)
endif()
