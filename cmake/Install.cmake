# Installation: shared and static library, headers, pkg-config file, CMake package config.
install(TARGETS tenlane tenlane_static EXPORT tenlaneTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/tenlane DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
