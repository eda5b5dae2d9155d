# Installation: the shared and the static library, the public headers, a pkg-config file
# (tenlane.pc) and a CMake package (tenlaneConfig.cmake, tenlaneConfigVersion.cmake and the
# exported targets tenlane::tenlane and tenlane::tenlane_static), all in the install
# component "tenlane" (`cmake --install BUILD --component tenlane` installs the library alone,
# without the examples).
#
# Invariant: an installed tree is usable from any prefix it is copied or installed to
# (`cmake --install BUILD --prefix P` included). Neither the .pc file nor the package config
# bakes in the configure-time prefix: the .pc file finds its prefix through ${pcfiledir}, the
# package config through PACKAGE_PREFIX_DIR. The provider libraries (cmake/Providers.cmake)
# are system packages and are referenced where they were found.
include(CMakePackageConfigHelpers)

set(TL_CMAKE_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tenlane)
set(TL_PKGCONFIG_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

install(TARGETS tenlane EXPORT tenlaneTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT tenlane
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT tenlane
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tenlane)
# The static library is the partially linked archive (cmake/StaticArchive.cmake), whose
# CMake target tenlaneConfig.cmake declares (tenlane::tenlane_static).
install(FILES ${TL_ARCHIVE} DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT tenlane)
install(DIRECTORY include/tenlane DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  COMPONENT tenlane FILES_MATCHING PATTERN "*.h")

# --- pkg-config -------------------------------------------------------------------------
# The provider link flags become -L/-l pairs: an absolute library path gives -l<name>, plus
# -L<dir> when <dir> is not one the linker searches anyway (blis-serial is such a folder).
function(tl_pkgconfig_libs out)
  set(flags "")
  foreach(item ${ARGN})
    if(IS_ABSOLUTE "${item}")
      get_filename_component(dir "${item}" DIRECTORY)
      get_filename_component(file "${item}" NAME)
      string(REGEX REPLACE "^lib" "" name "${file}")
      string(REGEX REPLACE "\\.(so|a)(\\.[0-9.]+)?$" "" name "${name}")
      list(FIND CMAKE_C_IMPLICIT_LINK_DIRECTORIES "${dir}" implicit)
      if(implicit EQUAL -1)
        list(APPEND flags "-L${dir}")
      endif()
      if(file MATCHES "\\.a$")
        # An archive by its file name (GNU ld), so a shared library of the same name in the
        # same folder is not picked instead (BLIS: only its archive exports what tenlane needs).
        list(APPEND flags "-l:${file}")
      else()
        list(APPEND flags "-l${name}")
      endif()
    elseif(item MATCHES "^-")
      list(APPEND flags "${item}")
    else()
      list(APPEND flags "-l${item}")
    endif()
  endforeach()
  list(JOIN flags " " joined)
  set(${out} "${joined}" PARENT_SCOPE)
endfunction()

tl_pkgconfig_libs(TL_PC_LIBS_PRIVATE ${TL_PROVIDER_RUNTIME})
set(TL_PC_LIBS_PRIVATE "-pthread ${TL_PC_LIBS_PRIVATE}")
# The path from the .pc file's folder back to the prefix, e.g. "../.." for lib/pkgconfig.
file(RELATIVE_PATH TL_PC_TO_PREFIX "/prefix/${TL_PKGCONFIG_DIR}" "/prefix")
string(REGEX REPLACE "/$" "" TL_PC_TO_PREFIX "${TL_PC_TO_PREFIX}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/tenlane.pc.in ${PROJECT_BINARY_DIR}/tenlane.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/tenlane.pc DESTINATION ${TL_PKGCONFIG_DIR} COMPONENT tenlane)

# --- CMake package ----------------------------------------------------------------------
install(EXPORT tenlaneTargets NAMESPACE tenlane:: FILE tenlaneTargets.cmake
  DESTINATION ${TL_CMAKE_PACKAGE_DIR} COMPONENT tenlane)
# The config checks that the provider libraries the static target names still exist, so a
# consumer gets a clear "not found" instead of a link error.
set(TL_PROVIDER_FILES "")
set(TL_PROVIDER_RUNTIME_LIBS "")
foreach(item ${TL_PROVIDER_RUNTIME})
  if(IS_ABSOLUTE "${item}")
    list(APPEND TL_PROVIDER_FILES "${item}")
  endif()
  list(APPEND TL_PROVIDER_RUNTIME_LIBS "${item}")
endforeach()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tenlaneConfig.cmake.in
  ${PROJECT_BINARY_DIR}/tenlaneConfig.cmake INSTALL_DESTINATION ${TL_CMAKE_PACKAGE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tenlaneConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tenlaneConfig.cmake
  ${PROJECT_BINARY_DIR}/tenlaneConfigVersion.cmake DESTINATION ${TL_CMAKE_PACKAGE_DIR}
  COMPONENT tenlane)
