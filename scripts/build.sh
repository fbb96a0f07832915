#!/bin/sh
# Configures and builds one configuration of atomwatch into build/<name>, warnings as errors.
# Usage: scripts/build.sh [native|asan|aarch64|aarch64-agent|clang|fuzz] (default native).
#   native         GCC, RelWithDebInfo
#   asan           GCC, Debug, ASan/UBSan (asserts on)
#   aarch64        the runner cross-built with gcc-aarch64-linux-gnu (tests under qemu-aarch64)
#   aarch64-agent  the agent alone for arm64, which the kernel tests run in arm64 guests
#   clang          clang, Release (-O3, asserts compiled out), with the fuzz targets (replay only)
#   fuzz           clang, ASan/UBSan and libFuzzer coverage in every library: the fuzz targets
#                  for long runs (bench/fuzz/run.sh); only the fuzz targets are built
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
conf=${1:-native}
case "$conf" in
native) set -- -DCMAKE_BUILD_TYPE=RelWithDebInfo ;;
asan) set -- -DCMAKE_BUILD_TYPE=Debug -DAW_SANITIZE=ON -DAW_BUILD_BENCH=OFF ;;
aarch64) set -- -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_TOOLCHAIN_FILE="$top/cmake/toolchain-aarch64.cmake" ;;
clang) set -- -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DAW_FUZZ=ON ;;
fuzz) set -- -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
	-DAW_FUZZ=ON -DAW_SANITIZE=ON -DAW_BUILD_TESTS=OFF -DAW_BUILD_BENCH=OFF ;;
# the agent alone for arm64, which the kernel tests run in arm64 guests (tests/kernel/)
aarch64-agent) set -- -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_TOOLCHAIN_FILE="$top/cmake/toolchain-aarch64.cmake" \
	-DAW_CROSS_AGENT=ON -DAW_BUILD_TESTS=OFF -DAW_BUILD_BENCH=OFF ;;
*) echo "usage: $0 [native|asan|aarch64|aarch64-agent|clang|fuzz]" >&2; exit 2 ;;
esac
cmake -S "$top" -B "$top/build/$conf" -DAW_WERROR=ON "$@" >/dev/null
if [ "$conf" = fuzz ]; then
	cmake --build "$top/build/$conf" -j "$(nproc)" --target fuzz_all
else
	cmake --build "$top/build/$conf" -j "$(nproc)"
fi
