#!/bin/sh
# Runs every test of atomwatch on a fresh Debian 12 machine (as root): installs what the tests
# need, then the native build's suite (with the style checks and the Debian packages), the same
# suite under ASan/UBSan (less the PostgreSQL twins of tests that run on SQLite too), the
# aarch64 build's suite under qemu-aarch64 with LSE (-cpu max) and without (-cpu cortex-a57),
# and the unit and fuzz-replay tests of a clang Release build.
# Every configuration builds with warnings as errors (scripts/build.sh).
# The native suite holds the kernel tests (label kernel: real Debian kernels booted under
# QEMU); `kernel` runs only those, on the native build.
# Usage: scripts/test.sh [native|asan|aarch64|clang|kernel ...]   (default: native asan aarch64 clang)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sh scripts/deps.sh test

confs=${*:-native asan aarch64 clang}
failed=""
jobs=$(nproc)
# why each failed test failed, printed again at the end (a CI log may keep only its tail)
summary=$(mktemp)
trap 'rm -f "$summary"' EXIT
why() { python3 scripts/ctest-failures.py "$@" >>"$summary" || true; }
for conf in $confs; do
	echo "=== $conf: build"
	build=$conf
	[ "$conf" != kernel ] || build=native
	if ! sh scripts/build.sh "$build"; then
		failed="$failed $conf(build)"
		continue
	fi
	case "$conf" in
	aarch64)
		for cpu in max cortex-a57; do
			lse=1
			[ "$cpu" = max ] || lse=0
			echo "=== aarch64 under qemu -cpu $cpu (LSE expected: $lse)"
			QEMU_CPU=$cpu AW_EXPECT_LSE=$lse ctest --test-dir build/aarch64 -j "$jobs" \
				--output-on-failure || { failed="$failed aarch64-$cpu"; why build/aarch64 "$cpu"; }
		done
		;;
	asan)
		# the PostgreSQL twins of tests that also run on SQLite (label twin) are left out:
		# the same C code but the store's, whose PostgreSQL side the unit tests' .postgres
		# runs and the PostgreSQL-only tests cover under ASan
		echo "=== asan: tests"
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
			ctest --test-dir build/asan -j "$jobs" --output-on-failure \
				-LE 'perf|container|package|style|install|kernel|twin' ||
				{ failed="$failed asan"; why build/asan asan; }
		;;
	clang)
		# the other configurations run the rest; this one proves the clang build works
		echo "=== clang: unit and fuzz-replay tests"
		ctest --test-dir build/clang -j "$jobs" --output-on-failure -L 'unit|fuzz' ||
			{ failed="$failed clang"; why build/clang clang; }
		;;
	kernel)
		echo "=== kernel: tests (QEMU; the first run fetches and builds, then it is cached)"
		ctest --test-dir build/native -j "$jobs" --output-on-failure -L kernel ||
			{ failed="$failed kernel"; why build/native kernel; }
		;;
	*)
		echo "=== $conf: tests"
		ctest --test-dir "build/$conf" -j "$jobs" --output-on-failure ||
			{ failed="$failed $conf"; why "build/$conf" "$conf"; }
		;;
	esac
done
if [ -n "$failed" ]; then
	echo "=== why each failed test failed"
	cat "$summary"
	echo "FAILED:$failed"
	exit 1
fi
echo "all tests passed ($confs)"
