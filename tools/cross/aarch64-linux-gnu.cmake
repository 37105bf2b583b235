# CMake toolchain file: Sluice's runtime core for aarch64 (arm64) Linux, built
# with Debian's cross compiler (g++-aarch64-linux-gnu) and run under
# qemu-user (qemu-aarch64). tools/cross-test.sh uses it:
#
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=tools/cross/aarch64-linux-gnu.cmake \
#         -DSLUICE_CORE_ONLY=ON -DSLUICE_RUNTIME_ONLY=ON -DSLUICE_BUILD_CUDA=OFF
#
# Where the dependencies come from:
# - glibc, libstdc++ and the kernel headers for arm64: Debian's cross packages,
#   installed under /usr/aarch64-linux-gnu (the find root below).
# - The header-only ones (concurrentqueue, dlpack, Catch2 v2, xxhash.h): the
#   amd64 packages' headers in /usr/include serve any architecture, and Debian's
#   cross g++ already searches /usr/include last, after the arm64 sysroot's
#   include directory, so the arm64 libc headers always win. Catch2's CMake
#   config is found through Catch2_DIR below.
# - xxHash: the runtime falls back to its header-only mode (XXH_INLINE_ALL,
#   runtime/CMakeLists.txt) since pkg-config finds no arm64 libxxhash. This
#   avoids multiarch (dpkg --add-architecture arm64), which would make every
#   later `apt-get update` on the machine fetch arm64 package lists too.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# Libraries, headers and CMake packages come from the arm64 sysroot only;
# programs (protoc, pkg-config, ...) from the host.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# Catch2 v2 is header-only: the amd64 package's CMake config (imported target,
# Catch.cmake) is architecture-independent. Its include directory, /usr/include,
# is one the cross g++ searches anyway, so CMake adds no -I for it.
set(Catch2_DIR /usr/lib/cmake/Catch2 CACHE PATH "Catch2 v2's CMake config (header-only, any architecture)")

# pkg-config must never hand an amd64 library to the arm64 link: look only
# where Debian's multiarch puts arm64 .pc files (empty unless someone installs
# :arm64 -dev packages).
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")

# ctest (and Catch2's catch_discover_tests, which lists the tests by running
# the binary at build time) runs aarch64 binaries through qemu-user; -L points
# its dynamic loader at the arm64 libc and libstdc++.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
