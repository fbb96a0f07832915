# Compiler flags of docs/style.md, applied per target so that third-party code is never affected.

set(CMAKE_C_STANDARD 11)
set(CMAKE_C_STANDARD_REQUIRED ON)
set(CMAKE_C_EXTENSIONS OFF)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)

set(AW_WARNINGS
	-Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2
	-Wvla -Wwrite-strings -Wimplicit-fallthrough)

# Warnings are errors for the developers (scripts/build.sh, the test suite) but not by default:
# a distribution builds with its own flags and compilers, and a warning that a newer compiler
# adds must not break a user's build.
option(AW_WERROR "treat compiler warnings as errors (scripts/build.sh turns it on)" OFF)
if(AW_WERROR)
	list(APPEND AW_WARNINGS -Werror)
endif()

set(AW_HARDENING -fstack-protector-strong)
if(NOT CMAKE_BUILD_TYPE STREQUAL "Debug" AND NOT AW_SANITIZE)
	list(APPEND AW_HARDENING -D_FORTIFY_SOURCE=2)
endif()

# The compiler flags a result reports (runner: the fingerprint's "cflags"), without the
# -ffile-prefix-map=<build path>=. that distribution builds add: the binary must not name the
# directory it was built in (reproducible builds).
string(TOUPPER "${CMAKE_BUILD_TYPE}" aw_build_type)
string(STRIP "${CMAKE_C_FLAGS} ${CMAKE_C_FLAGS_${aw_build_type}}" AW_CFLAGS_REPORTED)
string(REGEX REPLACE "-f(file|debug|macro)-prefix-map=[^ ]*" "" AW_CFLAGS_REPORTED
	"${AW_CFLAGS_REPORTED}")
string(REGEX REPLACE "  +" " " AW_CFLAGS_REPORTED "${AW_CFLAGS_REPORTED}")

set(AW_SANITIZE_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)

# aw_target(<target>): warnings, hardening, _GNU_SOURCE and, in the sanitizer configuration,
# ASan/UBSan for the target and everything that links it.
function(aw_target target)
	target_compile_options(${target} PRIVATE ${AW_WARNINGS} ${AW_HARDENING})
	target_compile_definitions(${target} PRIVATE _GNU_SOURCE)
	get_target_property(type ${target} TYPE)
	if(type STREQUAL "EXECUTABLE")
		set_target_properties(${target} PROPERTIES LINK_OPTIONS "-pie")
	endif()
	if(AW_SANITIZE)
		# the contracts (assert) are checked in the sanitizer configuration whatever its
		# build type
		target_compile_options(${target} PRIVATE ${AW_SANITIZE_FLAGS} -UNDEBUG)
		target_link_options(${target} PUBLIC -fsanitize=address,undefined)
		if(AW_FUZZ)
			# libFuzzer's coverage feedback from the libraries' code, not the harness's
			target_compile_options(${target} PRIVATE -fsanitize=fuzzer-no-link)
		endif()
	endif()
endfunction()

# aw_no_sanitize(<source>...): timed kernels are never instrumented, even in the sanitizer
# configuration, so that their loops measure the instructions they are meant to measure.
function(aw_no_sanitize)
	set_source_files_properties(${ARGN} PROPERTIES COMPILE_OPTIONS "-fno-sanitize=all")
endfunction()
