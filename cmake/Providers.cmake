# The numerical providers, all single-threaded so that every numerical thread is a pool
# worker or the caller: Debian's serial BLIS (large GEMM, and the BLAS under LAPACK),
# LAPACKE over reference LAPACK (factorizations). libxsmm is not a provider of the library
# (no route calls it); benchmarks, the fan-out example and one test use it as an anchor
# (tl_xsmm, below), when it is installed.
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
# A missing provider stops the configure with the package that brings it.
function(tl_require var what package)
  if(NOT ${var})
    message(FATAL_ERROR "tenlane needs ${what}, not found. On Debian/Ubuntu: "
      "`sudo make deps` (or `sudo apt-get install ${package}`); elsewhere set ${var} to its path.")
  endif()
endfunction()
find_library(TL_BLIS_ARCHIVE NAMES libblis.a PATHS ${TL_BLIS_SERIAL_DIR} NO_DEFAULT_PATH)
tl_require(TL_BLIS_ARCHIVE "BLIS's serial static archive (blis-serial/libblis.a)" libblis-serial-dev)
find_library(TL_LAPACKE_LIB NAMES liblapacke.a)
tl_require(TL_LAPACKE_LIB "LAPACKE's static archive (liblapacke.a)" liblapacke-dev)
# Debian's liblapack-dev ships the reference LAPACK as a PIC archive under this name.
find_library(TL_LAPACK_LIB NAMES liblapack_pic.a)
tl_require(TL_LAPACK_LIB "reference LAPACK's PIC archive (liblapack_pic.a)" liblapack-dev)
# Reference LAPACK is Fortran: its runtime (libgfortran-12-dev gives the link name).
find_library(TL_GFORTRAN_LIB NAMES gfortran libgfortran.so.5
  PATHS /usr/lib/gcc/${CMAKE_LIBRARY_ARCHITECTURE}/12)
tl_require(TL_GFORTRAN_LIB "the Fortran runtime (libgfortran)" libgfortran-12-dev)

add_library(tl_providers INTERFACE)
target_include_directories(tl_providers INTERFACE ${TL_BLIS_INCLUDE_DIR})
# BLIS comes after LAPACK so that the archive members LAPACK's BLAS calls need are pulled
# from BLIS. TL_PROVIDER_ARCHIVES go into libtenlane (the shared library, and the installed
# static archive's partial link: cmake/StaticArchive.cmake); TL_PROVIDER_RUNTIME is what
# is left for a static consumer to link.
set(TL_PROVIDER_ARCHIVES ${TL_LAPACKE_LIB} ${TL_LAPACK_LIB} ${TL_BLIS_ARCHIVE})
set(TL_PROVIDER_RUNTIME ${TL_GFORTRAN_LIB} m dl rt)
set(TL_PROVIDER_LINK_FLAGS ${TL_PROVIDER_ARCHIVES} ${TL_PROVIDER_RUNTIME})
target_link_libraries(tl_providers INTERFACE ${TL_PROVIDER_LINK_FLAGS})

# libxsmm, for the anchors of benchmarks and examples and one test (never the library).
# libxsmmnoblas is not linked: it defines stub BLAS routines (dgemm_, sgemv_, ...) for
# programs without a BLAS, which would take the place of BLIS's for LAPACK too.
# Debian packages it for x86-64 only: the benchmarks and examples need it; the tests go
# without it (test_small_gemm then leaves out its libxsmm check; TL_HAVE_XSMM), so an
# aarch64 build configures with -DTL_BUILD_BENCHES=OFF -DTL_BUILD_EXAMPLES=OFF.
set(TL_HAVE_XSMM OFF)
add_library(tl_xsmm INTERFACE)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$"
    AND (TL_BUILD_TESTS OR TL_BUILD_BENCHES OR TL_BUILD_EXAMPLES))
  find_library(TL_XSMM_MAIN_LIB NAMES xsmm PATHS /usr/lib)
  find_path(TL_XSMM_INCLUDE_DIR libxsmm.h)
  if(TL_XSMM_MAIN_LIB AND TL_XSMM_INCLUDE_DIR)
    set(TL_HAVE_XSMM ON)
    target_include_directories(tl_xsmm SYSTEM INTERFACE ${TL_XSMM_INCLUDE_DIR})
    target_compile_definitions(tl_xsmm INTERFACE TL_HAVE_XSMM=1)
    # libxsmm calls BLAS (its fallbacks): BLIS after it.
    target_link_libraries(tl_xsmm INTERFACE ${TL_XSMM_MAIN_LIB} ${TL_PROVIDER_LINK_FLAGS})
  endif()
endif()
if(NOT TL_HAVE_XSMM AND (TL_BUILD_BENCHES OR TL_BUILD_EXAMPLES))
  message(FATAL_ERROR "the benchmarks and examples need libxsmm (their anchor), not found. "
    "On Debian/Ubuntu x86-64: `sudo make deps` (or `sudo apt-get install libxsmm-dev`); "
    "elsewhere configure with -DTL_BUILD_BENCHES=OFF -DTL_BUILD_EXAMPLES=OFF.")
endif()
