#pragma once

#include <string_view>

namespace ddprun::tracking {

/// The bytes of a built-in file: "empty_run.db", the database of a run with no records
/// yet (tracking/run_schema.h's schema and version, in WAL mode), made at build time by
/// tracking/make_run_image.cc. Empty for any other name.
std::string_view run_image(std::string_view name);

}  // namespace ddprun::tracking
