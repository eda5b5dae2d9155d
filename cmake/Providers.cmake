# The numerical providers, all single-threaded so that every numerical thread is a pool
# worker or the caller: by default Debian's serial BLIS (large GEMM, and the BLAS under
# LAPACK) and LAPACKE over reference LAPACK (factorizations); TL_PROVIDER (below) chooses
# another. libxsmm is not a provider of the library
# (no route calls it); benchmarks, the fan-out example and one test use it as an anchor
# (tl_xsmm, below), when it is installed.
# The providers are all linked from their (PIC) archives, so that LAPACK's own BLAS calls
# bind, inside libtenlane, to the same BLAS tenlane set up (for BLIS, the context it chose:
# src/kernels/provider_blis.c), whatever the system's BLAS/LAPACK alternatives say;
# their symbols stay hidden (--exclude-libs in CMakeLists.txt).
# The provider is chosen at configure time (TL_PROVIDER, or CMake's BLA_VENDOR; archives by
# path, Debian's folders, then find_package(BLAS) and pkg-config): this file is the one place that
# knows which one is linked. It picks the provider's boundary file (TL_PROVIDER_SOURCES:
# src/kernels/provider_blis.c or provider_blas.c; every other provider file is left out of
# the build, CMakeLists.txt), its archives and its compile definitions
# (for every target: tests and benchmarks build their direct BLIS calls only under
# TL_PROVIDER_BLIS):
#   TL_PROVIDER_BLIS=1         the BLIS boundary (typed API), with TL_BLIS_INTERNALS=1 when
#                              the header has the BLIS 0.9 internals provider_blis.c uses
#   TL_BLAS_OWN_ENTRIES=1      tenlane's BLAS replacements (src/linalg: gemv.c, gemm_blas.c,
#                              ger.c, trmm.c) take the Fortran names LAPACK calls. Only with
#                              BLIS: their fallback is BLIS's typed API. A Fortran BLAS
#                              provider keeps its own names (the fallback calls them).
#   TL_PROVIDER_NAME="..."     the Fortran BLAS provider's name, for tl_kernels_provider
set(TL_PROVIDER auto CACHE STRING "BLAS/LAPACK provider: auto, blis, reference or openblas")
set_property(CACHE TL_PROVIDER PROPERTY STRINGS auto blis reference openblas)
if(NOT TL_PROVIDER MATCHES "^(auto|blis|reference|openblas)$")
  message(FATAL_ERROR "TL_PROVIDER=${TL_PROVIDER}: expected auto, blis, reference or openblas")
endif()
set(tl_multiarch_lib /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE})
set(tl_multiarch_include /usr/include/${CMAKE_LIBRARY_ARCHITECTURE})

# A missing provider stops the configure with the package that brings it.
function(tl_require var what package)
  if(NOT ${var})
    message(FATAL_ERROR "tenlane needs ${what}, not found. On Debian/Ubuntu: "
      "`sudo make deps` (or `sudo apt-get install ${package}`); elsewhere set ${var} to its path.")
  endif()
endfunction()

# The standard ways to find a BLAS archive, after an explicit path and the distributions'
# folders: CMake's FindBLAS for `vendor` (its BLA_VENDOR name; static archives only,
# BLA_STATIC) and then pkg-config's modules `pc_modules` (the archive `archive` in the
# module's library folder). Sets the cache variable `var` to the archive and
# TL_FOUND_BY_<var> to how it was found; leaves a `var` already set as it is.
function(tl_find_standard var vendor pc_modules archive)
  if(${var})
    return()
  endif()
  set(BLA_VENDOR ${vendor})
  set(BLA_STATIC ON)
  # FindBLAS links a test program against the archive: a Fortran BLAS needs its runtime.
  set(CMAKE_REQUIRED_LIBRARIES gfortran m pthread)
  set(CMAKE_REQUIRED_QUIET ON)
  find_package(BLAS QUIET)
  foreach(lib IN LISTS BLAS_LIBRARIES)
    get_filename_component(name "${lib}" NAME)
    if(name STREQUAL archive)
      set(${var} "${lib}" CACHE FILEPATH "${archive}, found by find_package(BLAS)" FORCE)
      set(TL_FOUND_BY_${var} "find_package(BLAS), BLA_VENDOR=${vendor}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    foreach(module IN LISTS pc_modules)
      pkg_check_modules(TL_PC_${module} QUIET ${module})
      if(TL_PC_${module}_FOUND)
        find_library(${var} NAMES ${archive} NO_DEFAULT_PATH
          PATHS ${TL_PC_${module}_LIBDIR} ${TL_PC_${module}_LIBRARY_DIRS})
        if(${var})
          set(TL_FOUND_BY_${var} "pkg-config ${module}" PARENT_SCOPE)
          return()
        endif()
        unset(${var} CACHE)
      endif()
    endforeach()
  endif()
endfunction()

# BLA_VENDOR (CMake's name for a BLAS vendor) given to the configure picks the provider when
# TL_PROVIDER is auto, and its archive is then looked for the standard way first.
set(tl_bla_vendor_provider "")
if(DEFINED BLA_VENDOR AND NOT BLA_VENDOR STREQUAL "All")
  if(BLA_VENDOR STREQUAL "OpenBLAS")
    set(tl_bla_vendor_provider openblas)
  elseif(BLA_VENDOR STREQUAL "FLAME")
    set(tl_bla_vendor_provider blis)
  elseif(BLA_VENDOR STREQUAL "Generic")
    set(tl_bla_vendor_provider reference)
  else()
    message(FATAL_ERROR "BLA_VENDOR=${BLA_VENDOR}: tenlane links OpenBLAS, FLAME (BLIS) or "
      "Generic (reference BLAS); MKL, Accelerate and the others are not supported yet")
  endif()
  if(NOT TL_PROVIDER STREQUAL "auto" AND NOT TL_PROVIDER STREQUAL tl_bla_vendor_provider)
    message(FATAL_ERROR "BLA_VENDOR=${BLA_VENDOR} names ${tl_bla_vendor_provider}, "
      "TL_PROVIDER=${TL_PROVIDER} another provider: give one of them")
  endif()
  if(tl_bla_vendor_provider STREQUAL "openblas")
    tl_find_standard(TL_OPENBLAS_ARCHIVE OpenBLAS "openblas" libopenblas.a)
  elseif(tl_bla_vendor_provider STREQUAL "reference")
    tl_find_standard(TL_REFBLAS_ARCHIVE Generic "blas-netlib;blas" libblas.a)
  endif() # BLIS's header comes with its archive: Debian's folders or TL_BLIS_* below
endif()

# Each candidate is looked for by name with the distributions' folders as hints (Debian keeps
# the serial BLIS and OpenBLAS in their own multiarch subfolders); a cache variable set to a
# path takes precedence. Static archives only: LAPACK's internal BLAS calls must bind inside
# libtenlane to the provider tenlane set up, whatever the system's libblas.so.3 is.
# BLIS's serial static archive: BLIS 0.9 does not recognise every current CPU (Zen 5 runs
# its generic kernels); the call that selects a context by architecture (bli_gks_lookup_id)
# is reachable in the archive only. The archive is PIC, so it links into libtenlane.so too.
find_library(TL_BLIS_ARCHIVE NAMES libblis.a
  HINTS ${tl_multiarch_lib}/blis-serial PATH_SUFFIXES blis-serial)
find_path(TL_BLIS_INCLUDE_DIR blis.h
  HINTS ${tl_multiarch_include}/blis-serial PATH_SUFFIXES blis-serial blis)
# OpenBLAS, serial flavour (no threads of its own; Debian builds it with USE_LOCKING, so
# concurrent calls from lanes are safe: test_provider_lanes checks it). Its archive carries
# LAPACK (Debian builds it from the reference sources, with OpenBLAS's own getrf, potrf, ...).
find_library(TL_OPENBLAS_ARCHIVE NAMES libopenblas.a
  HINTS ${tl_multiarch_lib}/openblas-serial PATH_SUFFIXES openblas-serial)
# Reference BLAS (Netlib, Debian's libblas-dev).
find_library(TL_REFBLAS_ARCHIVE NAMES libblas.a HINTS ${tl_multiarch_lib}/blas PATH_SUFFIXES blas)
# Not in those folders: the standard ways (FindBLAS, pkg-config).
tl_find_standard(TL_OPENBLAS_ARCHIVE OpenBLAS "openblas" libopenblas.a)
tl_find_standard(TL_REFBLAS_ARCHIVE Generic "blas-netlib;blas" libblas.a)

set(TL_PROVIDER_USED ${TL_PROVIDER})
if(TL_PROVIDER STREQUAL "auto" AND tl_bla_vendor_provider)
  set(TL_PROVIDER_USED ${tl_bla_vendor_provider})
elseif(TL_PROVIDER STREQUAL "auto")
  if(TL_BLIS_ARCHIVE AND TL_BLIS_INCLUDE_DIR)
    set(TL_PROVIDER_USED blis)
  elseif(TL_OPENBLAS_ARCHIVE)
    set(TL_PROVIDER_USED openblas)
  else()
    set(TL_PROVIDER_USED reference)
  endif()
endif()
message(STATUS "tenlane: BLAS/LAPACK provider ${TL_PROVIDER_USED} (TL_PROVIDER=${TL_PROVIDER})")

find_library(TL_LAPACKE_LIB NAMES liblapacke.a)
tl_require(TL_LAPACKE_LIB "LAPACKE's static archive (liblapacke.a)" liblapacke-dev)
# Reference LAPACK and OpenBLAS's LAPACK are Fortran: its runtime (libgfortran-12-dev gives
# the link name).
find_library(TL_GFORTRAN_LIB NAMES gfortran libgfortran.so.5
  PATHS /usr/lib/gcc/${CMAKE_LIBRARY_ARCHITECTURE}/12)
tl_require(TL_GFORTRAN_LIB "the Fortran runtime (libgfortran)" libgfortran-12-dev)

add_library(tl_providers INTERFACE)
set(TL_PROVIDER_SOURCES "")
if(TL_PROVIDER_USED STREQUAL "blis")
  tl_require(TL_BLIS_ARCHIVE "BLIS's serial static archive (blis-serial/libblis.a)" libblis-serial-dev)
  tl_require(TL_BLIS_INCLUDE_DIR "BLIS's header (blis-serial/blis.h)" libblis-serial-dev)
  # Debian's liblapack-dev ships the reference LAPACK as a PIC archive under this name.
  find_library(TL_LAPACK_LIB NAMES liblapack_pic.a)
  tl_require(TL_LAPACK_LIB "reference LAPACK's PIC archive (liblapack_pic.a)" liblapack-dev)
  target_include_directories(tl_providers INTERFACE ${TL_BLIS_INCLUDE_DIR})
  # The internals provider_blis.c reaches (context slots, block sizes, the architecture
  # table) exist in BLIS 0.9's header; BLIS 1.x reorganised the context (stacks of blocks
  # and a mutex). Without them, BLIS runs its own detected context (provider_blis.c also
  # checks the library's version at run time).
  include(CheckCSourceCompiles)
  set(CMAKE_REQUIRED_INCLUDES ${TL_BLIS_INCLUDE_DIR})
  set(CMAKE_REQUIRED_QUIET ON)
  set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY) # compiled, not linked
  check_c_source_compiles("
#include <blis.h>
extern cntx_t **bli_gks_lookup_id(arch_t id);
int main(void) {
  cntx_t c;
  void *p = c.l1v_kers[BLIS_AXPYV_KER].ptr[BLIS_DCOMPLEX];
  blksz_t *kc = bli_cntx_get_blksz(BLIS_KC, &c);
  bli_blksz_set_def(512, BLIS_SCOMPLEX, kc);
  return p == (void *)bli_gks_lookup_id && c.l1f_kers[BLIS_AXPYF_KER].ptr[0] != 0;
}" TL_BLIS_HAS_INTERNALS)
  unset(CMAKE_REQUIRED_INCLUDES)
  unset(CMAKE_REQUIRED_QUIET)
  unset(CMAKE_TRY_COMPILE_TARGET_TYPE)
  add_compile_definitions(TL_PROVIDER_BLIS=1 TL_BLAS_OWN_ENTRIES=1)
  list(APPEND TL_PROVIDER_SOURCES src/kernels/provider_blis.c)
  if(TL_BLIS_HAS_INTERNALS)
    add_compile_definitions(TL_BLIS_INTERNALS=1)
    list(APPEND TL_PROVIDER_SOURCES src/kernels/blis_level1.c)
  else()
    message(STATUS "tenlane: BLIS's header lacks the 0.9 internals: BLIS's own context is used")
  endif()
  # BLIS comes after LAPACK so that the archive members LAPACK's BLAS calls need are pulled
  # from BLIS.
  set(TL_PROVIDER_ARCHIVES ${TL_LAPACKE_LIB} ${TL_LAPACK_LIB} ${TL_BLIS_ARCHIVE})
else()
  set(TL_BLIS_INCLUDE_DIR "") # BLIS's header is for BLIS builds only
endif()
if(TL_PROVIDER_USED STREQUAL "blis")
elseif(TL_PROVIDER_USED STREQUAL "openblas")
  tl_require(TL_OPENBLAS_ARCHIVE "OpenBLAS's serial static archive (openblas-serial/libopenblas.a)"
    libopenblas-serial-dev)
  # Every provider call must be single-threaded: a threaded flavour (an archive found the
  # standard way follows the system's libopenblas.a choice) would start threads of its own.
  get_filename_component(tl_openblas_real "${TL_OPENBLAS_ARCHIVE}" REALPATH)
  if(tl_openblas_real MATCHES "openblas-(pthread|openmp)")
    message(WARNING "${TL_OPENBLAS_ARCHIVE} is a threaded OpenBLAS (${tl_openblas_real}); "
      "tenlane expects the serial build (libopenblas-serial-dev): set TL_OPENBLAS_ARCHIVE")
  endif()
  add_compile_definitions(TL_PROVIDER_NAME="openblas" TL_PROVIDER_OPENBLAS=1)
  list(APPEND TL_PROVIDER_SOURCES src/kernels/provider_blas.c)
  set(TL_PROVIDER_ARCHIVES ${TL_LAPACKE_LIB} ${TL_OPENBLAS_ARCHIVE})
else()
  tl_require(TL_REFBLAS_ARCHIVE "reference BLAS's static archive (blas/libblas.a)" libblas-dev)
  find_library(TL_LAPACK_LIB NAMES liblapack_pic.a)
  tl_require(TL_LAPACK_LIB "reference LAPACK's PIC archive (liblapack_pic.a)" liblapack-dev)
  add_compile_definitions(TL_PROVIDER_NAME="reference")
  list(APPEND TL_PROVIDER_SOURCES src/kernels/provider_blas.c)
  # LAPACK's matrix products and matrix-vector products go through tenlane's entries
  # (src/linalg/gemm_blas.c, gemv.c, named tl__own_dgemm_, ... here), which see a cancelled
  # route and then hand back zeros, so that a Ctrl-C ends a long SVD or QR soon; otherwise
  # they call reference BLAS (tl__prov_gemm_blas). Reference LAPACK would call reference
  # BLAS's dgemm_ directly: it is linked from a copy of its archive whose references to
  # those eight names are renamed (objcopy --redefine-sym; the names it defines are not
  # touched). Nothing is exported: the tl__own_ names are hidden like every internal name.
  set(tl_lapack_hooked ${PROJECT_BINARY_DIR}/providers/liblapack_hooked.a)
  set(tl_redefine_args "")
  foreach(tl_name sgemm_ dgemm_ cgemm_ zgemm_ sgemv_ dgemv_ cgemv_ zgemv_)
    list(APPEND tl_redefine_args --redefine-sym ${tl_name}=tl__own_${tl_name})
  endforeach()
  if(NOT EXISTS ${tl_lapack_hooked} OR ${TL_LAPACK_LIB} IS_NEWER_THAN ${tl_lapack_hooked}
      OR NOT TL_LAPACK_HOOKED_FROM STREQUAL TL_LAPACK_LIB)
    file(MAKE_DIRECTORY ${PROJECT_BINARY_DIR}/providers)
    find_program(TL_PROVIDER_OBJCOPY NAMES ${CMAKE_OBJCOPY} objcopy REQUIRED)
    execute_process(COMMAND ${TL_PROVIDER_OBJCOPY} ${tl_redefine_args} ${TL_LAPACK_LIB}
      ${tl_lapack_hooked} RESULT_VARIABLE tl_objcopy_result ERROR_VARIABLE tl_objcopy_error)
    if(NOT tl_objcopy_result EQUAL 0)
      file(REMOVE ${tl_lapack_hooked})
      message(FATAL_ERROR "objcopy could not copy ${TL_LAPACK_LIB} with LAPACK's BLAS calls "
        "renamed: ${tl_objcopy_error}")
    endif()
    set(TL_LAPACK_HOOKED_FROM ${TL_LAPACK_LIB} CACHE INTERNAL "the archive liblapack_hooked.a copies")
  endif()
  set(TL_PROVIDER_ARCHIVES ${TL_LAPACKE_LIB} ${tl_lapack_hooked} ${TL_REFBLAS_ARCHIVE})
endif()
foreach(tl_var TL_OPENBLAS_ARCHIVE TL_REFBLAS_ARCHIVE)
  if(TL_FOUND_BY_${tl_var})
    message(STATUS "tenlane: ${tl_var} ${${tl_var}} (found by ${TL_FOUND_BY_${tl_var}})")
  endif()
endforeach()
# Every provider-specific source under src/; CMakeLists.txt compiles those of the provider
# in use (TL_PROVIDER_SOURCES) and leaves out the rest.
set(TL_PROVIDER_ALL_SOURCES src/kernels/provider_blis.c src/kernels/blis_level1.c
  src/kernels/provider_blas.c)
# TL_PROVIDER_ARCHIVES go into libtenlane (the shared library, and the installed static
# archive's partial link: cmake/StaticArchive.cmake); TL_PROVIDER_RUNTIME is what is left
# for a static consumer to link.
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
