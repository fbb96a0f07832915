# Install rules (cmake --install, GNUInstallDirs): the programs, their manual pages, the systemd
# units, the example configurations, the default matrix, the CI definitions, and the subject
# ABI header with its pkg-config file. The Debian packages (debian/) split this tree; they put
# the example configurations in /etc/atomwatch.

set(AW_SYSTEMD_UNITDIR "${CMAKE_INSTALL_PREFIX}/lib/systemd/system" CACHE PATH
	"where the systemd units go (Debian 12: /lib/systemd/system)")

foreach(prog atomwatch-run atomwatch-agent atomwatch-collector atomwatch-ci)
	if(TARGET ${prog})
		install(TARGETS ${prog} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
	endif()
endforeach()

set(man ${PROJECT_SOURCE_DIR}/man)
install(FILES ${man}/atomwatch-run.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
if(TARGET atomwatch-agent)
	install(FILES ${man}/atomwatch-agent.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
	# the atomwatch kernel module's sources: the agent builds them against the running kernel
	install(FILES ${PROJECT_SOURCE_DIR}/runner/kmod/atomwatch.c ${PROJECT_SOURCE_DIR}/runner/kmod/Kbuild
		${PROJECT_SOURCE_DIR}/runner/kmod/Makefile
		DESTINATION ${CMAKE_INSTALL_DATADIR}/atomwatch/kmod)
endif()
if(TARGET atomwatch-ci)
	install(FILES ${man}/atomwatch-ci.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
	install(DIRECTORY ${PROJECT_SOURCE_DIR}/ci/github ${PROJECT_SOURCE_DIR}/ci/gitlab
		DESTINATION ${CMAKE_INSTALL_DATADIR}/atomwatch/ci)
endif()
if(TARGET atomwatch-collector)
	install(FILES ${man}/atomwatch-collector.8 DESTINATION ${CMAKE_INSTALL_MANDIR}/man8)
endif()

# The units name the installed programs (the sources say /usr/bin, the packages' path).
foreach(prog atomwatch-agent atomwatch-collector)
	if(NOT TARGET ${prog})
		continue()
	endif()
	set(src ${PROJECT_SOURCE_DIR}/configs/systemd/${prog}.service)
	set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${src})
	file(READ ${src} unit)
	string(REGEX REPLACE "ExecStart=[^ \n]*/${prog} " "ExecStart=${CMAKE_INSTALL_FULL_BINDIR}/${prog} "
		unit "${unit}")
	file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/systemd/${prog}.service CONTENT "${unit}" @ONLY)
	install(FILES ${PROJECT_BINARY_DIR}/systemd/${prog}.service DESTINATION ${AW_SYSTEMD_UNITDIR})
endforeach()

install(FILES ${PROJECT_SOURCE_DIR}/configs/matrix.yaml DESTINATION ${CMAKE_INSTALL_DATADIR}/atomwatch)
set(examples)
if(TARGET atomwatch-agent)
	list(APPEND examples ${PROJECT_SOURCE_DIR}/configs/agent.yaml)
endif()
if(TARGET atomwatch-collector)
	list(APPEND examples ${PROJECT_SOURCE_DIR}/configs/collector.yaml
		${PROJECT_SOURCE_DIR}/configs/thresholds.yaml)
endif()
install(FILES ${examples} DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/LICENSE
	${PROJECT_SOURCE_DIR}/docs/api.md ${PROJECT_SOURCE_DIR}/docs/detection.md
	${PROJECT_SOURCE_DIR}/docs/result-schema.md ${PROJECT_SOURCE_DIR}/docs/result-schema.json
	DESTINATION ${CMAKE_INSTALL_DOCDIR})

# The subject ABI: one header without dependencies, and a pkg-config file for
# `pkg-config --cflags atomwatch-subject`. Header only, hence share/pkgconfig.
install(FILES ${PROJECT_SOURCE_DIR}/runner/include/atomwatch/subject.h
	DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/atomwatch)
configure_file(${CMAKE_CURRENT_LIST_DIR}/atomwatch-subject.pc.in
	${PROJECT_BINARY_DIR}/atomwatch-subject.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/atomwatch-subject.pc
	DESTINATION ${CMAKE_INSTALL_DATADIR}/pkgconfig)
