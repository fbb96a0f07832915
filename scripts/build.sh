#!/bin/sh
# Configures and builds one configuration of atomwatch into build/<name>, warnings as errors.
# Usage: scripts/build.sh [native|asan|aarch64|clang] (default native).
#   native   GCC, RelWithDebInfo
#   asan     GCC, Debug, ASan/UBSan (asserts on)
#   aarch64  the runner cross-built with gcc-aarch64-linux-gnu (tests under qemu-aarch64)
#   clang    clang, Release (-O3, asserts compiled out)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
conf=${1:-native}
case "$conf" in
native) set -- -DCMAKE_BUILD_TYPE=RelWithDebInfo ;;
asan) set -- -DCMAKE_BUILD_TYPE=Debug -DAW_SANITIZE=ON -DAW_BUILD_BENCH=OFF ;;
aarch64) set -- -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_TOOLCHAIN_FILE="$top/cmake/toolchain-aarch64.cmake" ;;
clang) set -- -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ ;;
*) echo "usage: $0 [native|asan|aarch64|clang]" >&2; exit 2 ;;
esac
cmake -S "$top" -B "$top/build/$conf" -DAW_WERROR=ON "$@" >/dev/null
cmake --build "$top/build/$conf" -j "$(nproc)"
