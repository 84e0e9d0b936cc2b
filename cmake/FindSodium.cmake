# Finds libsodium (Debian: libsodium-dev), which ships no CMake package of its own.
# Defines Sodium_FOUND and the imported target Sodium::Sodium. Sodium_USE_STATIC_LIBS
# asks for libsodium.a (the portable build links everything but glibc in).
find_path(Sodium_INCLUDE_DIR sodium.h)
if(Sodium_USE_STATIC_LIBS)
  find_library(Sodium_LIBRARY NAMES libsodium.a)
else()
  find_library(Sodium_LIBRARY NAMES sodium)
endif()
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Sodium REQUIRED_VARS Sodium_LIBRARY Sodium_INCLUDE_DIR)
if(Sodium_FOUND AND NOT TARGET Sodium::Sodium)
  add_library(Sodium::Sodium UNKNOWN IMPORTED)
  set_target_properties(Sodium::Sodium PROPERTIES IMPORTED_LOCATION "${Sodium_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${Sodium_INCLUDE_DIR}")
endif()
mark_as_advanced(Sodium_INCLUDE_DIR Sodium_LIBRARY)
