# ddprun_logging: spdlog as the build wants it. Debian's compiled libspdlog and libfmt
# by default; header-only in a portable build (Debian ships no static archive of
# either), with fmt compiled into each object that formats.
add_library(ddprun_logging INTERFACE)
if(DDPRUN_PORTABLE)
  find_package(fmt REQUIRED)
  get_target_property(spdlog_include spdlog::spdlog_header_only INTERFACE_INCLUDE_DIRECTORIES)
  target_include_directories(ddprun_logging SYSTEM INTERFACE ${spdlog_include})
  target_compile_definitions(ddprun_logging INTERFACE SPDLOG_FMT_EXTERNAL)
  target_link_libraries(ddprun_logging INTERFACE fmt::fmt-header-only Threads::Threads)
else()
  target_link_libraries(ddprun_logging INTERFACE spdlog::spdlog)
endif()
