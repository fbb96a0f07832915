# `npm ci` of tests/browser/package-lock.json into DEST (a build directory), skipped when DEST
# already holds exactly that lock file's install. Any npm failure (no registry) fails the test.
file(MAKE_DIRECTORY ${DEST})
set(stamp ${DEST}/node_modules/.package-lock.json)
if(EXISTS ${stamp} AND EXISTS ${DEST}/package-lock.json)
	file(SHA256 ${SRC}/package-lock.json want)
	file(SHA256 ${DEST}/package-lock.json have)
	if(want STREQUAL have)
		message(STATUS "node modules already installed from this lock file")
		return()
	endif()
endif()
configure_file(${SRC}/package.json ${DEST}/package.json COPYONLY)
configure_file(${SRC}/package-lock.json ${DEST}/package-lock.json COPYONLY)
execute_process(COMMAND ${NPM} ci --no-audit --no-fund --ignore-scripts
	WORKING_DIRECTORY ${DEST} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
	message(FATAL_ERROR "npm ci failed (${rc}): the browser tests need playwright-core from the "
		"npm registry")
endif()
