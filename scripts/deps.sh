#!/bin/sh
# Installs the Debian 12 packages atomwatch needs, only those missing (so a second run is
# quick). Usage: scripts/deps.sh [build|test]   (default: build; test adds what the tests use:
# PostgreSQL, Chromium, Node.js and npm when no `node` exists, the aarch64 cross toolchain with
# qemu, Google Benchmark, clang, debhelper and lintian, QEMU system emulators and busybox for
# the kernel tests, ...).
set -eu

group=${1:-build}
build_pkgs="build-essential cmake pkg-config git ca-certificates
	libjansson-dev libyaml-dev libssl-dev libcurl4-openssl-dev libmicrohttpd-dev
	libsqlite3-dev libpq-dev libcmocka-dev liburcu-dev gnuplot-nox curl"
test_pkgs="$build_pkgs g++ python3 python3-jsonschema python3-yaml postgresql chromium chromium-driver
	gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user libbenchmark-dev openssl
	clang clang-format podman runc debootstrap debhelper lintian man-db
	qemu-system-x86 qemu-system-arm busybox-static rt-tests linux-perf"
# The runner's cross build links these; the arm64 packages' binaries (tests/package) run under
# qemu-aarch64 with the runtime libraries. The packages themselves are cross-built in a
# container (tests/package/Containerfile.cross): libpq-dev is not Multi-Arch: same in Debian 12,
# so libpq-dev:arm64 cannot be installed beside the native build's libpq-dev.
arm64_pkgs="libjansson-dev:arm64 libyaml-dev:arm64 libssl-dev:arm64 libcmocka-dev:arm64
	liburcu-dev:arm64 libcurl4:arm64 libmicrohttpd12:arm64 libsqlite3-0:arm64 libpq5:arm64
	libcurl4-openssl-dev:arm64"

case "$group" in
build) want="$build_pkgs" ;;
test) want="$test_pkgs" ;;
*) echo "usage: $0 [build|test]" >&2; exit 2 ;;
esac

if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: run as root (it installs Debian packages)" >&2
	exit 2
fi

missing() {
	for p in "$@"; do
		dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
			echo "$p"
	done
}

export DEBIAN_FRONTEND=noninteractive
updated=0
need=$(missing $want)
if [ "$group" = test ]; then
	if ! dpkg --print-foreign-architectures | grep -qx arm64; then
		dpkg --add-architecture arm64
		apt-get update -q
		updated=1
	fi
	need="$need $(missing $arm64_pkgs)"
	# the browser tests run playwright-core under Node >= 18; a Node already installed (e.g.
	# from nodesource, with its own npm) is kept
	command -v node >/dev/null 2>&1 || need="$need $(missing nodejs npm)"
fi
need=$(echo $need)
if [ -n "$need" ]; then
	echo "deps.sh: installing $need"
	[ $updated = 1 ] || apt-get update -q
	# shellcheck disable=SC2086
	apt-get install -y -q --no-install-recommends $need
fi
