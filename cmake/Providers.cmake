# The numerical providers, all single-threaded so that every numerical thread is a pool
# worker or the caller: Debian's serial BLIS (large GEMM, and the BLAS under LAPACK),
# LAPACKE over reference LAPACK (factorizations), libxsmm (small GEMM).
set(TL_BLIS_SERIAL_DIR /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/blis-serial)
set(TL_BLIS_INCLUDE_DIR /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/blis-serial)
# The static archive: BLIS 0.9 does not recognise every current CPU (Zen 5 runs its generic
# kernels), and the call that selects a context by architecture (bli_gks_lookup_id) is only
# reachable in the archive, not exported by the shared library. The archive is PIC, so it
# links into libtenlane.so as well.
find_library(TL_BLIS_ARCHIVE NAMES libblis.a PATHS ${TL_BLIS_SERIAL_DIR} NO_DEFAULT_PATH REQUIRED)
find_library(TL_LAPACKE_LIB NAMES lapacke REQUIRED)
find_library(TL_LAPACK_LIB NAMES lapack REQUIRED)
find_library(TL_XSMM_MAIN_LIB NAMES xsmm PATHS /usr/lib REQUIRED)
find_path(TL_XSMM_INCLUDE_DIR libxsmm.h REQUIRED)

add_library(tl_providers INTERFACE)
target_include_directories(tl_providers INTERFACE ${TL_BLIS_INCLUDE_DIR} ${TL_XSMM_INCLUDE_DIR})
# libxsmmnoblas is not linked: it defines stub BLAS routines (dgemm_, sgemv_, ...) for programs
# without a BLAS, and a stub linked into a program takes the place of BLIS's routine for
# LAPACK too, which then computes garbage. BLIS comes right after LAPACK so that, in the
# dynamic linker's search order, BLIS's BLAS symbols come before any libblas.so.3 that
# LAPACK itself names.
set(TL_PROVIDER_LINK_FLAGS ${TL_LAPACKE_LIB} ${TL_LAPACK_LIB} ${TL_XSMM_MAIN_LIB} ${TL_BLIS_ARCHIVE}
  m dl rt)
target_link_libraries(tl_providers INTERFACE ${TL_PROVIDER_LINK_FLAGS})
