# The C++ SDK: `cmake --install` puts the store client, the tracking header and a CMake
# package in the prefix, so `find_package(ddprun)` gives ddprun::store_client and
# ddprun::tracking.
include(CMakePackageConfigHelpers)

install(TARGETS ddprun_net ddprun_store_client ddprun_tracking_client EXPORT ddprunTargets
        ARCHIVE DESTINATION lib)
install(FILES common/error.h DESTINATION include/ddprun/common)
install(FILES net/socket.h DESTINATION include/ddprun/net)
install(FILES store/store.h DESTINATION include/ddprun/store)
install(FILES store/tcpstore/tcp_store_client.h store/tcpstore/tcp_store_protocol.h
        DESTINATION include/ddprun/store/tcpstore)
# Programs written against 0.1's layout (#include "rendezvous/tcp_store_client.h",
# ddprun::rendezvous::TcpStoreClient) keep building.
install(FILES cmake/compat/rendezvous/tcp_store_client.h DESTINATION include/ddprun/rendezvous)
install(FILES tracking/ddprun_tracking.hpp DESTINATION include/ddprun/tracking)
install(EXPORT ddprunTargets NAMESPACE ddprun:: DESTINATION lib/cmake/ddprun)

configure_package_config_file(cmake/ddprunConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/ddprunConfig.cmake INSTALL_DESTINATION lib/cmake/ddprun)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/ddprunConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/ddprunConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/ddprunConfigVersion.cmake
              cmake/FindSodium.cmake
        DESTINATION lib/cmake/ddprun)
