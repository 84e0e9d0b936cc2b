# The Debian package (`cpack -G DEB`, run by scripts/package.sh): what `cmake --install`
# puts in the prefix (the binary, the workers' Python files, the C++ SDK), the README
# and the examples as documentation. Made from a portable build, it needs nothing but
# glibc; from a dynamically linked one, the Debian libraries it was linked with.
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION share/doc/ddprun)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION share/doc/ddprun/docs)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/ DESTINATION share/doc/ddprun/examples)

set(CPACK_PACKAGE_NAME ddprun)
set(CPACK_PACKAGE_VENDOR "ddprun")
set(CPACK_PACKAGE_CONTACT "ddprun developers <ddprun@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "native drop-in replacement for PyTorch's torchrun and its elastic agent")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # ddprun_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3")
if(DDPRUN_PORTABLE)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.36)")
else()
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # dpkg-shlibdeps names the libraries
endif()
set(CPACK_OUTPUT_FILE_PREFIX ${PROJECT_SOURCE_DIR}/dist)
include(CPack)
