# Compiler flags of STYLE.md, applied per target so that third-party code is never affected.

set(CMAKE_C_STANDARD 11)
set(CMAKE_C_STANDARD_REQUIRED ON)
set(CMAKE_C_EXTENSIONS OFF)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)

set(AW_WARNINGS
	-Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2
	-Wvla -Wwrite-strings -Wimplicit-fallthrough -Werror)

set(AW_HARDENING -fstack-protector-strong)
if(NOT CMAKE_BUILD_TYPE STREQUAL "Debug" AND NOT AW_SANITIZE)
	list(APPEND AW_HARDENING -D_FORTIFY_SOURCE=2)
endif()

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
		target_compile_options(${target} PRIVATE ${AW_SANITIZE_FLAGS})
		target_link_options(${target} PUBLIC -fsanitize=address,undefined)
	endif()
endfunction()

# aw_no_sanitize(<source>...): timed kernels are never instrumented, even in the sanitizer
# configuration, so that their loops measure the instructions they are meant to measure.
function(aw_no_sanitize)
	set_source_files_properties(${ARGN} PROPERTIES COMPILE_OPTIONS "-fno-sanitize=all")
endfunction()
