# Install rules: the library, the public headers, a CMake package
# (find_package(tops) -> tops::tops) and a pkg-config file.
include(CMakePackageConfigHelpers)

install(TARGETS tops EXPORT topsTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/tops DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT topsTargets NAMESPACE tops:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tops)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/topsConfig.cmake.in
  ${PROJECT_BINARY_DIR}/topsConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tops)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/topsConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/topsConfig.cmake ${PROJECT_BINARY_DIR}/topsConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tops)

# The prefix is found relative to the .pc file, so `cmake --install --prefix`
# to any directory (and copies of the install) give correct flags.
file(RELATIVE_PATH TOPS_PC_PREFIX_FROM_PCFILEDIR
     ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" TOPS_PC_PREFIX_FROM_PCFILEDIR "${TOPS_PC_PREFIX_FROM_PCFILEDIR}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/tops.pc.in ${PROJECT_BINARY_DIR}/tops.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/tops.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
