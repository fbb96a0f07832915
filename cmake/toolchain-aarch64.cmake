# Cross build for aarch64 with Debian's gcc-aarch64-linux-gnu; the arm64 -dev packages come from
# Debian multiarch (dpkg --add-architecture arm64). Tests run under qemu-aarch64; pick the CPU
# with QEMU_CPU (max: LSE present; cortex-a57: no LSE).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")
# No -L /usr/aarch64-linux-gnu: with libc6:arm64 installed (the multiarch -dev packages pull it
# in), that prefix gives the cross package's ld.so but the multiarch libc.so.6, a mismatched pair
# that hangs in pthread_create. Without it both come from multiarch. qemu reads QEMU_CPU itself.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
set(AW_RUNNER_ONLY ON CACHE BOOL "cross builds hold the runner only" FORCE)
