# Cross build for 64-bit ARM Linux with Debian's cross compiler (gcc-aarch64-linux-gnu) and
# the arm64 provider packages installed through multiarch (scripts/install-deps
# --cross-aarch64 installs both). The providers are then under /usr/lib/aarch64-linux-gnu,
# which CMake searches through CMAKE_LIBRARY_ARCHITECTURE like a native build's, so no
# separate sysroot is set. Tests run under qemu-user: ctest puts CMAKE_CROSSCOMPILING_EMULATOR
# in front of every test executable (`make test-aarch64`, scripts/cross-aarch64).
#
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(TL_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${TL_CROSS_TRIPLE}-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE ${TL_CROSS_TRIPLE})
# Programs (python3, the scripts' interpreters) are the build machine's; libraries and
# headers come from the multiarch folders (searched first through CMAKE_LIBRARY_ARCHITECTURE).
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# The arm64 loader and libraries of multiarch are at their usual paths (/lib/ld-linux-
# aarch64.so.1, /usr/lib/aarch64-linux-gnu), so qemu needs no -L prefix.
find_program(TL_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static)
if(TL_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${TL_QEMU_AARCH64})
endif()
