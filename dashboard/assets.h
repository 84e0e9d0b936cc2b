#pragma once

#include <string_view>

namespace ddprun::dashboard {

/// A file the pages load, built into ddprun (dashboard/web/*, and dygraphs from
/// Debian's libjs-dygraphs): its bytes, or empty when there is no such asset.
std::string_view asset(std::string_view name);

/// The Content-Type for an asset's name.
std::string_view content_type(std::string_view name);

}  // namespace ddprun::dashboard
