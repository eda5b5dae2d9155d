# The numerical providers, all single-threaded so that every numerical thread is a pool
# worker or the caller: Debian's serial BLIS (large GEMM, and the BLAS under LAPACK),
# LAPACKE over reference LAPACK (factorizations), libxsmm (small GEMM).
# BLIS, reference LAPACK and LAPACKE are all linked from their (PIC) archives, so that
# LAPACK's own BLAS calls bind, inside libtenlane, to the same BLIS whose context tenlane
# chooses (src/kernels/provider.c), whatever the system's BLAS/LAPACK alternatives say;
# their symbols stay hidden (--exclude-libs in CMakeLists.txt).
set(TL_BLIS_SERIAL_DIR /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/blis-serial)
set(TL_BLIS_INCLUDE_DIR /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/blis-serial)
# The static archive: BLIS 0.9 does not recognise every current CPU (Zen 5 runs its generic
# kernels), and the call that selects a context by architecture (bli_gks_lookup_id) is only
# reachable in the archive, not exported by the shared library. The archive is PIC, so it
# links into libtenlane.so as well.
find_library(TL_BLIS_ARCHIVE NAMES libblis.a PATHS ${TL_BLIS_SERIAL_DIR} NO_DEFAULT_PATH REQUIRED)
find_library(TL_LAPACKE_LIB NAMES liblapacke.a REQUIRED)
# Debian's liblapack-dev ships the reference LAPACK as a PIC archive under this name.
find_library(TL_LAPACK_LIB NAMES liblapack_pic.a REQUIRED)
# Reference LAPACK is Fortran: its runtime (libgfortran-12-dev gives the link name).
find_library(TL_GFORTRAN_LIB NAMES gfortran libgfortran.so.5
  PATHS /usr/lib/gcc/${CMAKE_LIBRARY_ARCHITECTURE}/12 REQUIRED)
find_library(TL_XSMM_MAIN_LIB NAMES xsmm PATHS /usr/lib REQUIRED)
find_path(TL_XSMM_INCLUDE_DIR libxsmm.h REQUIRED)

add_library(tl_providers INTERFACE)
target_include_directories(tl_providers INTERFACE ${TL_BLIS_INCLUDE_DIR} ${TL_XSMM_INCLUDE_DIR})
# libxsmmnoblas is not linked: it defines stub BLAS routines (dgemm_, sgemv_, ...) for programs
# without a BLAS, and a stub linked into a program takes the place of BLIS's routine for
# LAPACK too, which then computes garbage. BLIS comes after LAPACK so that the archive
# members LAPACK's BLAS calls need are pulled from BLIS.
set(TL_PROVIDER_LINK_FLAGS ${TL_LAPACKE_LIB} ${TL_LAPACK_LIB} ${TL_XSMM_MAIN_LIB} ${TL_BLIS_ARCHIVE}
  ${TL_GFORTRAN_LIB} m dl rt)
target_link_libraries(tl_providers INTERFACE ${TL_PROVIDER_LINK_FLAGS})
