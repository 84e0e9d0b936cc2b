#include "dashboard/assets.h"

namespace ddprun::dashboard {

std::string_view content_type(std::string_view name) {
  auto ends = [&](std::string_view suffix) {
    return name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix;
  };
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".html")) return "text/html; charset=utf-8";
  return "application/octet-stream";
}

}  // namespace ddprun::dashboard
